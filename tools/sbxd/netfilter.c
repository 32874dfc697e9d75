/* SPDX-License-Identifier: MIT */
/*
 * netfilter: decides, frame by frame, what a sandbox may send into
 * sbxd-net's user-mode stack. The stack's sockets live in the host's network
 * namespace, so a frame addressed to the host (its loopback, any of its
 * interface addresses, or 10.0.2.2, which libslirp maps to 127.0.0.1) would
 * reach services that listen only for the host. Such frames are refused
 * with a TCP RST or an ICMP "administratively prohibited", so the sandbox's
 * connection fails at once instead of timing out. No I/O; in restricted
 * mode it keeps what it saw in the policy's rules and flows (netrules.h).
 */
#include "netfilter.h"
#include "netrules.h"

#include <string.h>

#define ETH_HLEN 14
#define ETHERTYPE_IP 0x0800
#define ETHERTYPE_ARP 0x0806
#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define IP_DF 0x4000
#define IP_OFFMASK 0x1fff
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define ICMP_UNREACH 3
#define ICMP_UNREACH_ADMIN 13

enum rule { RULE_PASS, RULE_DROP, RULE_REJECT };

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

/* The Internet checksum (RFC 1071) of n bytes, added to sum, not folded. */
static uint32_t sum_bytes(uint32_t sum, const uint8_t *p, size_t n)
{
    for (; n > 1; p += 2, n -= 2)
        sum += netrules_be16(p);
    if (n)
        sum += (uint32_t)p[0] << 8;
    return sum;
}

static uint16_t sum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static bool is_host(const struct netfilter_policy *p, const uint8_t *addr)
{
    uint32_t a;
    memcpy(&a, addr, 4);
    for (size_t i = 0; i < p->nhost; i++)
        if (p->host[i] == a)
            return true;
    return false;
}

/* Multicast, reserved, the limited broadcast (which libslirp maps to
 * 127.0.0.1), the virtual network's network and broadcast addresses: no
 * single peer to reach, none to answer as. */
static bool no_peer(uint32_t dst)
{
    return dst >= 0xe0000000u || dst == NETFILTER_VNET || dst == (NETFILTER_VNET | ~NETFILTER_VMASK);
}

/* The host itself: the gateway (libslirp's name for its loopback), what
 * connect() in the host's namespace takes as the host (0/8, 127/8),
 * link-local (where cloud metadata services answer), the rest of the
 * virtual network (nothing of the sandbox's is there, and what libslirp
 * does with it depends on its version and options), and the host's own
 * addresses. */
static bool to_host(const struct netfilter_policy *p, const uint8_t *ip, uint32_t dst)
{
    return dst == NETFILTER_GATEWAY || dst >> 24 == 0 || dst >> 24 == 127 || dst >> 16 == 0xa9fe ||
           (dst & NETFILTER_VMASK) == NETFILTER_VNET || is_host(p, ip + 16);
}

/* A datagram to the stack's resolver. */
static enum rule dns_rule(const struct netfilter_policy *p, const uint8_t *ip, const uint8_t *l4, size_t l4len)
{
    size_t udp_len;
    if (!p->rules) {
        /* Only DNS, which libslirp forwards to the host's resolver. A later
         * fragment shows no port; its first fragment was judged, and
         * without that one it is never reassembled. */
        if (!l4)
            return RULE_PASS;
        if ((ip[9] == PROTO_UDP || ip[9] == PROTO_TCP) && l4len >= 4 && netrules_be16(l4 + 2) == 53)
            return RULE_PASS;
        return RULE_REJECT;
    }
    /* Restricted: a question about an allowed name, over UDP, whole:
     * anything else could carry data out through the host's resolver. */
    if (!l4 || ip[9] != PROTO_UDP || l4len < 8 || netrules_be16(l4 + 2) != 53 || (netrules_be16(ip + 6) & 0x2000))
        return l4 ? RULE_REJECT : RULE_DROP;
    udp_len = netrules_be16(l4 + 4);
    if (udp_len < 8 || udp_len > l4len)
        return RULE_DROP;
    if (!p->flows || !netrules_query_allowed(p->rules, l4 + 8, udp_len - 8) ||
        !netflows_udp(p->flows, p->now_ms, netrules_be16(l4), true))
        return RULE_REJECT;
    netflows_asked(p->flows, p->now_ms, netrules_be16(l4), netrules_be16(l4 + 8));
    return RULE_PASS;
}

/* The rule for a datagram to ip's destination. l4 is NULL in a later
 * fragment, which carries no transport header. In restricted mode (rules)
 * only what the rules allow passes, and the host only where a rule allows
 * it and sbxd runs with --unsafe-host-network. */
static enum rule rule_for(const struct netfilter_policy *p, const uint8_t *ip, const uint8_t *l4,
                          size_t l4len)
{
    uint32_t dst = netrules_be32(ip + 16);

    if (dst == NETFILTER_DNS)
        return dns_rule(p, ip, l4, l4len);
    if (no_peer(dst))
        return RULE_DROP;
    if ((to_host(p, ip, dst) && !p->allow_host) || (p->rules && netrules_addr_verdict(p->rules, dst) <= 0))
        return RULE_REJECT;
    /* Restricted UDP: a port that spoke DNS does not speak to others (see
     * struct netflows). A later fragment was judged with its first. */
    if (p->rules && ip[9] == PROTO_UDP && l4 &&
        (!p->flows || l4len < 2 || !netflows_udp(p->flows, p->now_ms, netrules_be16(l4), false)))
        return RULE_REJECT;
    return RULE_PASS;
}

/* Ethernet and IPv4 headers for a reply from the blocked address back to
 * the sender; returns where the payload goes. */
static uint8_t *reply_head(const uint8_t *frame, const uint8_t *ip, uint8_t proto, size_t payload,
                           uint8_t *out)
{
    uint8_t *rip = out + ETH_HLEN;

    memcpy(out, frame + 6, 6);
    memcpy(out + 6, frame, 6);
    put16(out + 12, ETHERTYPE_IP);
    memset(rip, 0, 20);
    rip[0] = 0x45;
    put16(rip + 2, (uint16_t)(20 + payload));
    put16(rip + 6, IP_DF);
    rip[8] = 64;
    rip[9] = proto;
    memcpy(rip + 12, ip + 16, 4);
    memcpy(rip + 16, ip + 12, 4);
    put16(rip + 10, sum_fold(sum_bytes(0, rip, 20)));
    return rip + 20;
}

/* RFC 9293 reset for a segment that reached no listener; 0 when none is due. */
static size_t tcp_reset(const uint8_t *frame, const uint8_t *ip, const uint8_t *tcp, size_t len,
                        uint8_t *out)
{
    size_t doff;
    uint8_t flags;
    uint8_t *t;
    uint32_t sum;

    if (len < 20)
        return 0;
    doff = (size_t)(tcp[12] >> 4) * 4;
    flags = tcp[13];
    /* Never answer a reset: two filters would ping-pong. */
    if (doff < 20 || doff > len || (flags & TCP_RST))
        return 0;
    t = reply_head(frame, ip, PROTO_TCP, 20, out);
    memset(t, 0, 20);
    memcpy(t, tcp + 2, 2);
    memcpy(t + 2, tcp, 2);
    if (flags & TCP_ACK) {
        memcpy(t + 4, tcp + 8, 4);
        t[13] = TCP_RST;
    } else {
        uint32_t ack = netrules_be32(tcp + 4) + (uint32_t)(len - doff) + (flags & TCP_SYN ? 1u : 0u) +
                       (flags & TCP_FIN ? 1u : 0u);
        put32(t + 8, ack);
        t[13] = TCP_RST | TCP_ACK;
    }
    t[12] = 5 << 4;
    /* Pseudo-header: both addresses, protocol, TCP length. */
    sum = sum_bytes(PROTO_TCP + 20, t - 8, 8);
    put16(t + 16, sum_fold(sum_bytes(sum, t, 20)));
    return ETH_HLEN + 20 + 20;
}

/* ICMP "communication administratively prohibited" quoting the datagram's
 * IP header and first 8 bytes, so the sender's kernel can find the socket. */
static size_t icmp_prohibited(const uint8_t *frame, const uint8_t *ip, size_t ihl, size_t l4len,
                              uint8_t *out)
{
    size_t quote = ihl + 8;
    uint8_t *icmp;

    if (l4len < 8)
        return 0;
    icmp = reply_head(frame, ip, PROTO_ICMP, 8 + quote, out);
    memset(icmp, 0, 8);
    icmp[0] = ICMP_UNREACH;
    icmp[1] = ICMP_UNREACH_ADMIN;
    memcpy(icmp + 8, ip, quote);
    put16(icmp + 2, sum_fold(sum_bytes(0, icmp, 8 + quote)));
    return ETH_HLEN + 20 + 8 + quote;
}

enum netfilter_verdict netfilter_judge(const struct netfilter_policy *p, const uint8_t *frame,
                                       size_t len, uint8_t reply[static NETFILTER_REPLY_MAX],
                                       size_t *reply_len)
{
    const uint8_t *ip, *l4;
    size_t avail, ihl, total;

    *reply_len = 0;
    if (len < ETH_HLEN)
        return NETFILTER_DROP;
    switch (netrules_be16(frame + 12)) {
    case ETHERTYPE_ARP:
        return NETFILTER_PASS;
    case ETHERTYPE_IP:
        break;
    default:
        /* IPv6 is off in the stack, and nothing else belongs here. */
        return NETFILTER_DROP;
    }
    ip = frame + ETH_HLEN;
    avail = len - ETH_HLEN;
    if (avail < 20 || ip[0] >> 4 != 4)
        return NETFILTER_DROP;
    ihl = (size_t)(ip[0] & 0x0f) * 4;
    total = netrules_be16(ip + 2);
    /* Ethernet may pad a frame, so total may be less than avail, never
     * more; ihl <= total <= avail keeps the header inside the frame. */
    if (ihl < 20 || total < ihl || total > avail || sum_fold(sum_bytes(0, ip, ihl)) != 0)
        return NETFILTER_DROP;
    l4 = netrules_be16(ip + 6) & IP_OFFMASK ? NULL : ip + ihl;
    switch (rule_for(p, ip, l4, total - ihl)) {
    case RULE_PASS:
        return NETFILTER_PASS;
    case RULE_DROP:
        return NETFILTER_DROP;
    case RULE_REJECT:
        break;
    }
    if (!l4)
        return NETFILTER_DROP;
    if (ip[9] == PROTO_TCP)
        *reply_len = tcp_reset(frame, ip, l4, total - ihl, reply);
    else if (ip[9] == PROTO_UDP)
        *reply_len = icmp_prohibited(frame, ip, ihl, total - ihl, reply);
    return *reply_len ? NETFILTER_REJECT : NETFILTER_DROP;
}

void netfilter_observe(struct netfilter_policy *p, const uint8_t *frame, size_t len)
{
    const uint8_t *ip, *udp;
    size_t ihl, total, udp_len;
    bool from_dns;

    if (!p->rules || !p->flows || len < ETH_HLEN + 20 || netrules_be16(frame + 12) != ETHERTYPE_IP)
        return;
    ip = frame + ETH_HLEN;
    ihl = (size_t)(ip[0] & 0x0f) * 4;
    total = netrules_be16(ip + 2);
    if (ip[0] >> 4 != 4 || ihl < 20 || total < ihl + 8 || total > len - ETH_HLEN || ip[9] != PROTO_UDP ||
        (netrules_be16(ip + 6) & IP_OFFMASK))
        return;
    udp = ip + ihl;
    /* Whatever reaches a port keeps libslirp's socket for it, and so the
     * port's way (DNS or other peers), alive: a peer sending now and then
     * must not outlast the hold and then answer in the resolver's name. */
    from_dns = netrules_be32(ip + 12) == NETFILTER_DNS && netrules_be16(udp) == 53;
    netflows_seen(p->flows, p->now_ms, netrules_be16(udp + 2), from_dns);
    udp_len = netrules_be16(udp + 4);
    if (!from_dns || (netrules_be16(ip + 6) & 0x2000) || udp_len < 8 + 2 || udp_len > total - ihl ||
        !netflows_answered(p->flows, p->now_ms, netrules_be16(udp + 2), netrules_be16(udp + 8)))
        return;
    netrules_learn(p->rules, udp + 8, udp_len - 8);
}
