/* SPDX-License-Identifier: MIT */
/* netfilter: the verdict on each frame a sandbox sends to sbxd-net's user-mode stack. */
#ifndef SBXD_NETFILTER_H
#define SBXD_NETFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sandbox's virtual network, as libslirp is configured (host order). */
#define NETFILTER_VNET 0x0a000200u    /* 10.0.2.0/24 */
#define NETFILTER_VMASK 0xffffff00u
#define NETFILTER_GATEWAY 0x0a000202u /* 10.0.2.2: libslirp's name for the host's loopback */
#define NETFILTER_DNS 0x0a000203u     /* 10.0.2.3: port 53 goes to the host's resolver */
#define NETFILTER_GUEST 0x0a000264u   /* 10.0.2.100: tap0 inside the sandbox */

enum netfilter_verdict {
    NETFILTER_PASS,   /* hand the frame to the stack */
    NETFILTER_DROP,   /* discard it */
    NETFILTER_REJECT, /* discard it and write the reply frame back to the sandbox */
};

/* A reply is Ethernet + IPv4 + ICMP + the offending IPv4 header (options
 * included) + 8 bytes, or a shorter TCP RST. */
#define NETFILTER_REPLY_MAX (14 + 20 + 8 + 60 + 8)

struct netrules;

struct netfilter_policy {
    const uint32_t *host; /* the host's own IPv4 addresses, network order */
    size_t nhost;
    bool allow_host;      /* the sandbox may reach the host itself */
    /* Restricted mode (custom and deny-all policies) when not NULL: only the
     * addresses these rules allow, and DNS questions about allowed names. */
    struct netrules *rules;
    /* Restricted mode's memory of the sandbox's UDP (netrules.h), kept
     * across rule changes; without it no UDP passes in restricted mode.
     * now_ms: a monotonic clock, set before each frame. */
    struct netflows *flows;
    uint64_t now_ms;
};

/* Judge one Ethernet frame from the sandbox. On NETFILTER_REJECT the reply
 * frame is in reply[0..*reply_len); otherwise *reply_len is 0. */
enum netfilter_verdict netfilter_judge(const struct netfilter_policy *p, const uint8_t *frame,
                                       size_t len, uint8_t reply[static NETFILTER_REPLY_MAX],
                                       size_t *reply_len);

/* A frame the stack sends to the sandbox: in restricted mode, the first
 * answer of the stack's resolver to a question that passed teaches the
 * rules the addresses of an allowed name. */
void netfilter_observe(struct netfilter_policy *p, const uint8_t *frame, size_t len);

#endif /* SBXD_NETFILTER_H */
