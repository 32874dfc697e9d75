/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for sbxd-net's frame filter (tools/sbxd/netfilter.c) and its
 * restricted mode's rules (tools/sbxd/netrules.c): every frame a sandbox
 * sends is judged there, and the DNS answers handed back to a sandbox are
 * read there. The input is used five ways:
 *  - as rules text (it must parse or be refused, never crash);
 *  - as a frame judged in open mode and in restricted mode, where a frame
 *    that passes must be ARP, for an allowed address, or a DNS question;
 *    a reply must fit NETFILTER_REPLY_MAX;
 *  - as a frame from the stack (a DNS answer), observed in restricted mode;
 *  - as a bare DNS message, asked about and learnt from.
 * Built with libFuzzer by -Dfuzz=true (clang); built without it (with
 * standalone.c) it runs over the files named on its command line, which
 * `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netfilter.h"
#include "netrules.h"

static const char rules_text[] = "allow 203.0.113.0/24\ndeny 203.0.113.7/32\ndomain *.example.com\ndomain db.test\n"
                                 "host db.test 198.51.100.5\n";

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct netrules r, parsed;
    uint32_t host[1] = {0x0200000a}; /* 10.0.0.2, network order */
    static struct netflows flows; /* what earlier inputs left: state across frames is fuzzed too */
    struct netfilter_policy open_p = {.host = host, .nhost = 1},
                            p = {.host = host, .nhost = 1, .rules = &r, .flows = &flows, .now_ms = 5000000};
    uint8_t reply[NETFILTER_REPLY_MAX];
    size_t rlen = 0;
    char err[160];
    enum netfilter_verdict v;

    if (netrules_parse((const char *)data, size, &parsed, err, sizeof err))
        netrules_free(&parsed);
    check(netrules_parse(rules_text, strlen(rules_text), &r, err, sizeof err));

    v = netfilter_judge(&open_p, data, size, reply, &rlen);
    check(v == NETFILTER_REJECT ? rlen > 0 && rlen <= NETFILTER_REPLY_MAX : rlen == 0);
    v = netfilter_judge(&p, data, size, reply, &rlen);
    check(v == NETFILTER_REJECT ? rlen > 0 && rlen <= NETFILTER_REPLY_MAX : rlen == 0);
    if (v == NETFILTER_PASS && size >= 14 + 20 && data[12] == 0x08 && data[13] == 0x00) {
        uint32_t dst = (uint32_t)data[30] << 24 | (uint32_t)data[31] << 16 | (uint32_t)data[32] << 8 | data[33];
        check(dst == NETFILTER_DNS || netrules_addr_verdict(&r, dst) == 1);
    }

    netfilter_observe(&p, data, size);
    if (size >= 4) { /* the flows' answers: only to what was asked */
        uint16_t port = (uint16_t)(data[0] << 8 | data[1]), id = (uint16_t)(data[2] << 8 | data[3]);
        if (data[0] & 1)
            netflows_asked(&flows, p.now_ms, port, id);
        if (netflows_answered(&flows, p.now_ms, port, id))
            check(!netflows_answered(&flows, p.now_ms, port, id));
    }
    check(r.nlearned <= NETRULES_LEARNED);
    (void)netrules_query_allowed(&r, data, size);
    (void)netrules_learn(&r, data, size);
    check(r.nlearned <= NETRULES_LEARNED && r.next_learned < NETRULES_LEARNED);
    for (size_t i = 0; i < r.nlearned; i++)
        check(r.learned[i] != 0xcb007107u); /* 203.0.113.7: denied, never learnt */
    netrules_free(&r);
    return 0;
}
