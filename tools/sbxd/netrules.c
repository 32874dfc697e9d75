/* SPDX-License-Identifier: MIT */
/*
 * netrules: the address rules of sbxd-net's restricted mode (netrules.h).
 *
 * A name is allowed by the policy's domains; the addresses a sandbox may
 * then connect to are those the resolver gave for an allowed name (learnt
 * from the answers sbxd-net hands back, never from anything the sandbox
 * sends), those --add-host gives an allowed name, and the allowed CIDRs;
 * denied CIDRs win. The sandbox's own DNS questions are let through only
 * for allowed names, so DNS carries nothing out either.
 */
#include "netrules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DNS_HEADER 12
#define DNS_NAME_MAX 255
#define DNS_TYPE_A 1
#define DNS_CLASS_IN 1
#define DNS_TYPE_OPT 41

void netrules_free(struct netrules *r)
{
    for (size_t i = 0; i < r->ndomains; i++)
        free(r->domains[i]);
    free(r->domains);
    free(r->allow);
    free(r->deny);
    free(r->learned);
    memset(r, 0, sizeof *r);
}

static bool parse_ipv4(const char *s, size_t n, uint32_t *out)
{
    uint32_t a = 0;
    int parts = 0;
    size_t i = 0;
    while (parts < 4) {
        unsigned v = 0;
        size_t digits = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 3) {
            v = v * 10 + (unsigned)(s[i++] - '0');
            digits++;
        }
        if (!digits || v > 255)
            return false;
        a = a << 8 | v;
        if (++parts < 4 && (i >= n || s[i++] != '.'))
            return false;
    }
    if (i != n)
        return false;
    *out = a;
    return true;
}

static bool parse_cidr(const char *s, size_t n, struct netrules_cidr *out)
{
    const char *slash = memchr(s, '/', n);
    unsigned prefix = 0;
    if (!slash || !parse_ipv4(s, (size_t)(slash - s), &out->addr))
        return false;
    for (const char *c = slash + 1; c < s + n; c++) {
        if (*c < '0' || *c > '9' || prefix > 32)
            return false;
        prefix = prefix * 10 + (unsigned)(*c - '0');
    }
    if (slash + 1 == s + n || prefix > 32)
        return false;
    out->mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
    out->addr &= out->mask;
    return true;
}

static bool push_cidr(struct netrules_cidr **v, size_t *n, struct netrules_cidr c)
{
    struct netrules_cidr *g;
    if (*n >= NETRULES_MAX + NETRULES_MAX || !(g = realloc(*v, (*n + 1) * sizeof *g)))
        return false;
    g[(*n)++] = c;
    *v = g;
    return true;
}

bool netrules_parse(const char *text, size_t len, struct netrules *out, char *err, size_t errlen)
{
    struct netrules r;
    struct {
        const char *name;
        size_t n;
        uint32_t addr;
    } *hosts = NULL;
    size_t nhosts = 0;
    const char *why = NULL;
    size_t lineno = 0;

    memset(&r, 0, sizeof r);
    if (len > NETRULES_TEXT_MAX)
        why = "the rules are too long";
    for (size_t at = 0; at < len && !why;) {
        const char *l = text + at, *nl = memchr(l, '\n', len - at), *sp, *v;
        size_t n = nl ? (size_t)(nl - l) : len - at, vn;
        at += n + 1;
        lineno++;
        if (n == 0)
            continue;
        if (!(sp = memchr(l, ' ', n))) {
            why = "a line without a value";
            break;
        }
        v = sp + 1;
        vn = n - (size_t)(v - l);
        bool allow = (size_t)(sp - l) == 5 && memcmp(l, "allow", 5) == 0;
        if (allow || ((size_t)(sp - l) == 4 && memcmp(l, "deny", 4) == 0)) {
            struct netrules_cidr c, **list = allow ? &r.allow : &r.deny;
            size_t *count = allow ? &r.nallow : &r.ndeny;
            if (!parse_cidr(v, vn, &c))
                why = "not an IPv4 CIDR";
            else if (*count >= NETRULES_MAX || !push_cidr(list, count, c))
                why = allow ? "too many allowed CIDRs" : "too many denied CIDRs";
        } else if ((size_t)(sp - l) == 6 && memcmp(l, "domain", 6) == 0) {
            char **g, *d;
            if (vn == 0 || vn > DNS_NAME_MAX || memchr(v, ' ', vn) || memchr(v, '\0', vn))
                why = "not a domain pattern";
            else if (r.ndomains >= NETRULES_MAX || !(g = realloc(r.domains, (r.ndomains + 1) * sizeof *g)))
                why = "too many domains";
            else if (r.domains = g, !(d = malloc(vn + 1)))
                why = "out of memory";
            else {
                for (size_t i = 0; i < vn; i++)
                    d[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] - 'A' + 'a' : v[i]);
                d[vn] = '\0';
                r.domains[r.ndomains++] = d;
            }
        } else if ((size_t)(sp - l) == 4 && memcmp(l, "host", 4) == 0) {
            const char *sp2 = memchr(v, ' ', vn);
            void *g;
            if (!sp2 || sp2 == v || (size_t)(sp2 - v) > DNS_NAME_MAX)
                why = "not 'host NAME ADDRESS'";
            else if (nhosts >= NETRULES_MAX || !(g = realloc(hosts, (nhosts + 1) * sizeof *hosts)))
                why = "too many host entries";
            else {
                hosts = g;
                hosts[nhosts].name = v;
                hosts[nhosts].n = (size_t)(sp2 - v);
                if (!parse_ipv4(sp2 + 1, vn - (size_t)(sp2 + 1 - v), &hosts[nhosts].addr))
                    why = "not an IPv4 address";
                else
                    nhosts++;
            }
        } else {
            why = "an unknown rule";
        }
    }
    /* --add-host names resolve without DNS: an allowed one's address is
     * allowed as if learnt. */
    for (size_t i = 0; i < nhosts && !why; i++) {
        char name[DNS_NAME_MAX + 1];
        memcpy(name, hosts[i].name, hosts[i].n);
        name[hosts[i].n] = '\0';
        if (netrules_name_allowed(&r, name) &&
            !push_cidr(&r.allow, &r.nallow, (struct netrules_cidr){hosts[i].addr, 0xffffffffu}))
            why = "out of memory";
    }
    free(hosts);
    if (!why && !(r.learned = calloc(NETRULES_LEARNED, sizeof *r.learned)))
        why = "out of memory";
    if (why) {
        snprintf(err, errlen, "network rules, line %zu: %s", lineno, why);
        netrules_free(&r);
        return false;
    }
    *out = r;
    return true;
}

bool netrules_domain_match(const char *d, const char *host)
{
    size_t hl = strlen(host);
    if (strcmp(d, "*") == 0)
        return true;
    if (d[0] == '*') {
        size_t sl = strlen(d) - 1; /* ".b.org" */
        return hl > sl && strcasecmp(host + hl - sl, d + 1) == 0;
    }
    return strcasecmp(host, d) == 0;
}

bool netrules_name_allowed(const struct netrules *r, const char *host)
{
    for (size_t i = 0; i < r->ndomains; i++)
        if (netrules_domain_match(r->domains[i], host))
            return true;
    return false;
}

int netrules_addr_verdict(const struct netrules *r, uint32_t addr)
{
    for (size_t i = 0; i < r->ndeny; i++)
        if ((addr & r->deny[i].mask) == r->deny[i].addr)
            return -1;
    for (size_t i = 0; i < r->nallow; i++)
        if ((addr & r->allow[i].mask) == r->allow[i].addr)
            return 1;
    for (size_t i = 0; i < r->nlearned; i++)
        if (r->learned[i] == addr)
            return 1;
    return 0;
}

/* The uncompressed name at dns[*at] (a question's) as dotted lowercase text;
 * false if malformed or compressed. */
static bool read_name(const uint8_t *dns, size_t len, size_t *at, char out[DNS_NAME_MAX + 1])
{
    size_t o = 0, p = *at;
    for (;;) {
        size_t l;
        if (p >= len)
            return false;
        l = dns[p++];
        if (l == 0)
            break;
        if (l > 63 || p + l > len || o + l + 1 > DNS_NAME_MAX)
            return false; /* a pointer (0xc0) or a label too long */
        if (o)
            out[o++] = '.';
        for (size_t i = 0; i < l; i++) {
            uint8_t c = dns[p + i];
            if (c == 0 || c == '.')
                return false; /* would read as another name */
            out[o++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        }
        p += l;
    }
    out[o] = '\0';
    *at = p;
    return o > 0;
}

/* Skip a name that may end in a compression pointer. */
static bool skip_name(const uint8_t *dns, size_t len, size_t *at)
{
    size_t p = *at;
    for (;;) {
        size_t l;
        if (p >= len)
            return false;
        l = dns[p];
        if (l == 0) {
            *at = p + 1;
            return true;
        }
        if ((l & 0xc0) == 0xc0) {
            if (p + 2 > len)
                return false;
            *at = p + 2;
            return true;
        }
        if (l > 63 || p + 1 + l > len)
            return false;
        p += 1 + l;
    }
}

/* The one question of a message: its name, and where the rest starts. */
static bool question(const uint8_t *dns, size_t len, char name[DNS_NAME_MAX + 1], size_t *after)
{
    size_t at = DNS_HEADER;
    if (len < DNS_HEADER || netrules_be16(dns + 4) != 1)
        return false;
    if (!read_name(dns, len, &at, name) || at + 4 > len)
        return false;
    *after = at + 4;
    return true;
}

bool netrules_query_allowed(const struct netrules *r, const uint8_t *dns, size_t len)
{
    char name[DNS_NAME_MAX + 1];
    size_t after, extra;
    /* A query (QR 0, opcode 0) with one question and nothing else but, at
     * most, an EDNS OPT record (root name, type 41: resolvers add one; its
     * options are for the host's resolver, which does not pass them on). */
    if (len < DNS_HEADER || (dns[2] & 0xf8) != 0 || netrules_be16(dns + 6) || netrules_be16(dns + 8) || netrules_be16(dns + 10) > 1)
        return false;
    if (!question(dns, len, name, &after) || !netrules_name_allowed(r, name))
        return false;
    extra = len - after;
    if (!netrules_be16(dns + 10))
        return extra == 0;
    return extra >= 11 && dns[after] == 0 && netrules_be16(dns + after + 1) == DNS_TYPE_OPT &&
           extra == 11 + (size_t)netrules_be16(dns + after + 9);
}

bool netflows_udp(struct netflows *f, uint64_t now_ms, uint16_t port, bool dns)
{
    uint32_t now = (uint32_t)(now_ms / 1000), other = dns ? f->udp_seen[port] : f->dns_seen[port];
    if (other && now < other - 1 + NETFLOWS_HOLD_S)
        return false;
    netflows_seen(f, now_ms, port, dns);
    return true;
}

void netflows_seen(struct netflows *f, uint64_t now_ms, uint16_t port, bool dns)
{
    (dns ? f->dns_seen : f->udp_seen)[port] = (uint32_t)(now_ms / 1000) + 1;
}

void netflows_asked(struct netflows *f, uint64_t now_ms, uint16_t port, uint16_t id)
{
    size_t slot = 0;
    for (size_t i = 0; i < NETFLOWS_PENDING; i++) {
        if (f->pending[i].until_ms > now_ms && f->pending[i].port == port && f->pending[i].id == id) {
            slot = i; /* asked again: one answer still */
            break;
        }
        if (f->pending[i].until_ms < f->pending[slot].until_ms)
            slot = i; /* a free or the oldest slot */
    }
    f->pending[slot].port = port;
    f->pending[slot].id = id;
    f->pending[slot].until_ms = now_ms + NETFLOWS_ANSWER_MS;
}

bool netflows_answered(struct netflows *f, uint64_t now_ms, uint16_t port, uint16_t id)
{
    for (size_t i = 0; i < NETFLOWS_PENDING; i++)
        if (f->pending[i].until_ms > now_ms && f->pending[i].port == port && f->pending[i].id == id) {
            f->pending[i].until_ms = 0;
            return true;
        }
    return false;
}

size_t netrules_learn(struct netrules *r, const uint8_t *dns, size_t len)
{
    char name[DNS_NAME_MAX + 1];
    size_t at, answers, learnt = 0;
    if (!r->learned || len < DNS_HEADER || !(dns[2] & 0x80) || (dns[3] & 0x0f) != 0)
        return 0; /* not an answer, or an error */
    if (!question(dns, len, name, &at) || !netrules_name_allowed(r, name))
        return 0;
    answers = netrules_be16(dns + 6);
    for (size_t i = 0; i < answers; i++) {
        uint16_t type, class, rdlen;
        if (!skip_name(dns, len, &at) || at + 10 > len)
            break;
        type = netrules_be16(dns + at);
        class = netrules_be16(dns + at + 2);
        rdlen = netrules_be16(dns + at + 8);
        at += 10;
        if (at + rdlen > len)
            break;
        if (type == DNS_TYPE_A && class == DNS_CLASS_IN && rdlen == 4) {
            uint32_t a = netrules_be32(dns + at);
            if (netrules_addr_verdict(r, a) == 0) {
                r->learned[r->next_learned] = a;
                r->next_learned = (r->next_learned + 1) % NETRULES_LEARNED;
                if (r->nlearned < NETRULES_LEARNED)
                    r->nlearned++;
                learnt++;
            }
        }
        at += rdlen;
    }
    return learnt;
}
