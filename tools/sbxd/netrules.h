/* SPDX-License-Identifier: MIT */
/*
 * netrules: what a sandbox under a custom (or deny-all) network policy may
 * reach over sbxd-net's user-mode stack, beside the egress proxy: IPv4
 * addresses, by the policy's CIDRs and by the names it allows. Pure: no
 * I/O, no global state; sbxd writes the rules as text, sbxd-net reads them.
 */
#ifndef SBXD_NETRULES_H
#define SBXD_NETRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Big-endian reads, for packet headers and DNS messages. */
static inline uint16_t netrules_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t netrules_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#define NETRULES_MAX 1024       /* CIDRs, domains or host entries of one kind */
#define NETRULES_LEARNED 4096   /* addresses learnt from DNS answers, the oldest dropped */
#define NETRULES_TEXT_MAX (1024 * 1024) /* 1,024 domains of 255 bytes, the CIDRs and hosts */

struct netrules_cidr {
    uint32_t addr, mask; /* host order */
};

struct netrules {
    struct netrules_cidr *allow, *deny;
    size_t nallow, ndeny;
    char **domains; /* "*", "*.b.org" or "a.b.org", lowercase */
    size_t ndomains;
    uint32_t *learned; /* addresses of allowed names (host order), a ring */
    size_t nlearned, next_learned;
};

/*
 * The rules as text, one per line (sbxd writes it, sbxd-net parses it):
 *
 *   allow A.B.C.D/N     an allowed CIDR (IPv6 ones are not sent: the stack is IPv4)
 *   deny A.B.C.D/N      a denied CIDR: wins over everything
 *   domain PATTERN      an allowed name: "*", "*.b.org" or "a.b.org"
 *   host NAME A.B.C.D   NAME resolves to the address without DNS (/etc/hosts):
 *                       the address is allowed if NAME is
 *
 * No line at all is "nothing": deny-all. Returns false with a message.
 */
bool netrules_parse(const char *text, size_t len, struct netrules *out, char *err, size_t errlen);
void netrules_free(struct netrules *r);

/* Whether pattern ("*", "*.b.org", "a.b.org") matches host; case-blind. */
bool netrules_domain_match(const char *pattern, const char *host);
bool netrules_name_allowed(const struct netrules *r, const char *host);

/* For a destination (host order): -1 denied, 1 allowed, 0 neither (refused). */
int netrules_addr_verdict(const struct netrules *r, uint32_t addr);

/* A DNS query (a UDP payload to the stack's resolver): true when it asks
 * one question about an allowed name. */
bool netrules_query_allowed(const struct netrules *r, const uint8_t *dns, size_t len);

/* A DNS answer from the stack's resolver: its A records become allowed
 * addresses when the question's name is allowed (what the egress proxy
 * would connect to for that name). Returns how many were learnt. */
size_t netrules_learn(struct netrules *r, const uint8_t *dns, size_t len);

/*
 * What restricted mode remembers of the sandbox's UDP, across rule changes.
 * libslirp gives each of the sandbox's UDP ports one host socket, whatever
 * the peer, and passes whatever reaches that socket back as coming from
 * the peer last written to. So a port that has written to an allowed
 * server and then asks the resolver would let that server answer in the
 * resolver's name, with addresses of its choosing. A port therefore speaks
 * DNS or to other peers, not both, for longer than libslirp keeps its
 * socket (240 s after the last datagram either way); and an answer teaches addresses
 * only as the first answer to a question that passed, on its port and ID.
 */
#define NETFLOWS_HOLD_S 300
#define NETFLOWS_PENDING 64
#define NETFLOWS_ANSWER_MS 10000 /* how long a question waits for its answer */

struct netflows {
    uint32_t dns_seen[65536], udp_seen[65536]; /* per port: 1 + the second of its last datagram, 0 never */
    struct {
        uint16_t port, id;
        uint64_t until_ms; /* 0: a free slot */
    } pending[NETFLOWS_PENDING];
};

/* A datagram from the sandbox's UDP port: to the resolver (dns) or to
 * another peer. False when the port spoke the other way within
 * NETFLOWS_HOLD_S; otherwise it is noted. */
bool netflows_udp(struct netflows *f, uint64_t now_ms, uint16_t port, bool dns);
/* A datagram to the sandbox's port, from the resolver (dns) or another
 * peer: it keeps libslirp's socket for the port alive, so it keeps the
 * port's way as long. */
void netflows_seen(struct netflows *f, uint64_t now_ms, uint16_t port, bool dns);
/* A question that passed, from port with DNS ID id, waits for its answer. */
void netflows_asked(struct netflows *f, uint64_t now_ms, uint16_t port, uint16_t id);
/* Whether an answer to port with DNS ID id is the first to a waiting
 * question (which it then ends). */
bool netflows_answered(struct netflows *f, uint64_t now_ms, uint16_t port, uint16_t id);

#endif /* SBXD_NETRULES_H */
