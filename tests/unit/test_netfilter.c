/* SPDX-License-Identifier: MIT */
/* Unit tests for tools/sbxd/netfilter.c: sbxd-net's verdict on each frame a sandbox sends. */
#include "harness.h"

#include <arpa/inet.h>
#include <string.h>

#include "netfilter.h"
#include "netrules.h"

/* ---- frames ------------------------------------------------------------------------ */

#define ADDR(a, b, c, d)                                                                           \
    ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define GUEST_PORT 40000

static const uint8_t guest_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x64};
static const uint8_t slirp_mac[6] = {0x52, 0x55, 0x0a, 0x00, 0x02, 0x02};

/* Host addresses, network order: eth0 and the host end of a veth. */
static uint32_t hosts[2];

static void setup(void)
{
    hosts[0] = htonl(ADDR(192, 0, 2, 2));
    hosts[1] = htonl(ADDR(10, 231, 0, 1));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

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

static uint32_t sum(uint32_t s, const uint8_t *p, size_t n)
{
    for (; n > 1; p += 2, n -= 2)
        s += get16(p);
    if (n)
        s += (uint32_t)p[0] << 8;
    return s;
}

static uint16_t fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* The TCP/UDP checksum of seg (checksum field included) with its pseudo-header. */
static uint16_t l4_sum(const uint8_t *ip, const uint8_t *seg, size_t len)
{
    uint32_t s = sum(0, ip + 12, 8) + ip[9] + (uint32_t)len;
    return fold(sum(s, seg, len));
}

/* An IPv4 frame from the guest: opt_words 32-bit words of NOP options, the
 * fragment field as given, l4 as the payload. Returns its length. */
static size_t ip_frame(uint8_t *f, uint32_t dst, uint8_t proto, const uint8_t *l4, size_t l4len,
                       size_t opt_words, uint16_t frag)
{
    uint8_t *ip = f + 14;
    size_t ihl = 20 + 4 * opt_words;

    memcpy(f, slirp_mac, 6);
    memcpy(f + 6, guest_mac, 6);
    put16(f + 12, 0x0800);
    memset(ip, 0, ihl);
    ip[0] = (uint8_t)(0x40 | ihl / 4);
    put16(ip + 2, (uint16_t)(ihl + l4len));
    put16(ip + 4, 0x1234);
    put16(ip + 6, frag);
    ip[8] = 64;
    ip[9] = proto;
    put32(ip + 12, NETFILTER_GUEST);
    put32(ip + 16, dst);
    memset(ip + 20, 1, ihl - 20);
    put16(ip + 10, fold(sum(0, ip, ihl)));
    memcpy(ip + ihl, l4, l4len);
    return 14 + ihl + l4len;
}

static size_t tcp_frame(uint8_t *f, uint32_t dst, uint16_t dport, uint8_t flags, uint32_t seq,
                        uint32_t ack, size_t payload)
{
    uint8_t seg[20 + 256];
    size_t len;

    ck_assert_uint_le(payload, 256);
    memset(seg, 0, sizeof seg);
    put16(seg, GUEST_PORT);
    put16(seg + 2, dport);
    put32(seg + 4, seq);
    put32(seg + 8, ack);
    seg[12] = 5 << 4;
    seg[13] = flags;
    put16(seg + 14, 64240);
    memset(seg + 20, 'x', payload);
    len = ip_frame(f, dst, 6, seg, 20 + payload, 0, 0);
    put16(f + 14 + 20 + 16, l4_sum(f + 14, f + 14 + 20, 20 + payload));
    return len;
}

static size_t udp_frame_opts(uint8_t *f, uint32_t dst, uint16_t dport, size_t payload,
                             size_t opt_words, uint16_t frag)
{
    uint8_t dgram[8 + 256];

    ck_assert_uint_le(payload, 256);
    put16(dgram, GUEST_PORT);
    put16(dgram + 2, dport);
    put16(dgram + 4, (uint16_t)(8 + payload));
    put16(dgram + 6, 0);
    memset(dgram + 8, 'q', payload);
    return ip_frame(f, dst, 17, dgram, 8 + payload, opt_words, frag);
}

static size_t udp_frame(uint8_t *f, uint32_t dst, uint16_t dport, size_t payload)
{
    return udp_frame_opts(f, dst, dport, payload, 0, 0);
}

static size_t icmp_echo_frame(uint8_t *f, uint32_t dst)
{
    uint8_t echo[16] = {8, 0, 0, 0, 0, 1, 0, 1};
    put16(echo + 2, fold(sum(0, echo, sizeof echo)));
    return ip_frame(f, dst, 1, echo, sizeof echo, 0, 0);
}

/* ---- judging ----------------------------------------------------------------------- */

struct result {
    enum netfilter_verdict v;
    uint8_t reply[NETFILTER_REPLY_MAX];
    size_t len;
};

static struct result judge_with(const uint32_t *host, size_t nhost, bool allow_host,
                                const uint8_t *f, size_t len)
{
    struct netfilter_policy p = {.host = host, .nhost = nhost, .allow_host = allow_host};
    struct result r;
    memset(&r, 0xee, sizeof r);
    r.v = netfilter_judge(&p, f, len, r.reply, &r.len);
    if (r.v != NETFILTER_REJECT)
        ck_assert_uint_eq(r.len, 0);
    return r;
}

static enum netfilter_verdict verdict(bool allow_host, const uint8_t *f, size_t len)
{
    return judge_with(hosts, 2, allow_host, f, len).v;
}

/* Checks the Ethernet and IPv4 headers of a reply from `from` to the guest;
 * returns the IP header. */
static const uint8_t *check_reply_ip(const struct result *r, uint8_t proto, uint32_t from)
{
    const uint8_t *ip = r->reply + 14;

    ck_assert_int_eq(r->v, NETFILTER_REJECT);
    ck_assert_uint_ge(r->len, 14 + 20);
    ck_assert_uint_le(r->len, NETFILTER_REPLY_MAX);
    ck_assert_mem_eq(r->reply, guest_mac, 6);
    ck_assert_mem_eq(r->reply + 6, slirp_mac, 6);
    ck_assert_uint_eq(get16(r->reply + 12), 0x0800);
    ck_assert_uint_eq(ip[0], 0x45);
    ck_assert_uint_eq(get16(ip + 2), r->len - 14);
    ck_assert_uint_eq(get16(ip + 6) & 0x3fff, 0); /* not a fragment */
    ck_assert_uint_gt(ip[8], 0);
    ck_assert_uint_eq(ip[9], proto);
    ck_assert_uint_eq(fold(sum(0, ip, 20)), 0);
    ck_assert_uint_eq(get32(ip + 12), from);
    ck_assert_uint_eq(get32(ip + 16), NETFILTER_GUEST);
    return ip;
}

/* Checks a TCP reset from from:port; returns the TCP header. */
static const uint8_t *check_rst(const struct result *r, uint32_t from, uint16_t port)
{
    const uint8_t *ip = check_reply_ip(r, 6, from);
    const uint8_t *tcp = ip + 20;

    ck_assert_uint_eq(r->len, 14 + 20 + 20);
    ck_assert_uint_eq(get16(tcp), port);
    ck_assert_uint_eq(get16(tcp + 2), GUEST_PORT);
    ck_assert_uint_eq(tcp[12] >> 4, 5);
    ck_assert(tcp[13] & 0x04);
    ck_assert_uint_eq(l4_sum(ip, tcp, 20), 0);
    return tcp;
}

/* Checks an ICMP "administratively prohibited" from `from` quoting the
 * frame's IP header and 8 bytes. */
static void check_icmp(const struct result *r, uint32_t from, const uint8_t *f)
{
    const uint8_t *ip = check_reply_ip(r, 1, from);
    const uint8_t *icmp = ip + 20;
    size_t ihl = (size_t)(f[14] & 0x0f) * 4;

    ck_assert_uint_eq(r->len, 14 + 20 + 8 + ihl + 8);
    ck_assert_uint_eq(icmp[0], 3);
    ck_assert_uint_eq(icmp[1], 13);
    ck_assert_uint_eq(get32(icmp + 4), 0);
    ck_assert_uint_eq(fold(sum(0, icmp, 8 + ihl + 8)), 0);
    ck_assert_mem_eq(icmp + 8, f + 14, ihl + 8);
}

/* ---- tests ------------------------------------------------------------------------- */

START_TEST(test_netfilter_arp_passes)
{
    uint8_t f[60] = {0};
    memset(f, 0xff, 6);
    memcpy(f + 6, guest_mac, 6);
    put16(f + 12, 0x0806);
    ck_assert_int_eq(verdict(false, f, sizeof f), NETFILTER_PASS);
    ck_assert_int_eq(verdict(false, f, 14), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_ipv6_and_other_ethertypes_drop)
{
    static const uint16_t types[] = {0x86dd, 0x8100, 0x88cc, 0x8863, 0x0000, 0xffff};
    uint8_t f[128];
    size_t len = tcp_frame(f, ADDR(93, 184, 216, 34), 80, 0x02, 1, 0, 0);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        put16(f + 12, types[i]);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_DROP);
    }
}
END_TEST

START_TEST(test_netfilter_outside_addresses_pass)
{
    uint8_t f[512];
    size_t len;

    len = tcp_frame(f, ADDR(93, 184, 216, 34), 443, 0x02, 7, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    len = udp_frame(f, ADDR(8, 8, 8, 8), 53, 30);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    len = icmp_echo_frame(f, ADDR(1, 1, 1, 1));
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    /* The outside server of the end-to-end test, next to the host's veth end. */
    len = tcp_frame(f, ADDR(10, 231, 0, 2), 8080, 0x02, 7, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    /* The rest of the virtual network is no outside address. */
    len = tcp_frame(f, ADDR(10, 0, 2, 50), 80, 0x02, 7, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_REJECT);
}
END_TEST

START_TEST(test_netfilter_dns_address_takes_only_port_53)
{
    uint8_t f[512];
    size_t len;
    struct result r;

    len = udp_frame(f, NETFILTER_DNS, 53, 30);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    len = tcp_frame(f, NETFILTER_DNS, 53, 0x02, 99, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);

    len = udp_frame(f, NETFILTER_DNS, 123, 48);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, NETFILTER_DNS, f);
    len = tcp_frame(f, NETFILTER_DNS, 80, 0x02, 99, 0, 0);
    r = judge_with(hosts, 2, false, f, len);
    check_rst(&r, NETFILTER_DNS, 80);
    /* allow_host does not widen it: it is not the host. */
    len = tcp_frame(f, NETFILTER_DNS, 22, 0x02, 99, 0, 0);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_REJECT);
    len = icmp_echo_frame(f, NETFILTER_DNS);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
}
END_TEST

START_TEST(test_netfilter_gateway_needs_allow_host)
{
    uint8_t f[512];
    size_t len = tcp_frame(f, NETFILTER_GATEWAY, 8080, 0x02, 5, 0, 0);
    struct result r = judge_with(hosts, 2, false, f, len);

    check_rst(&r, NETFILTER_GATEWAY, 8080);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
    len = udp_frame(f, NETFILTER_GATEWAY, 9999, 4);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, NETFILTER_GATEWAY, f);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_special_ranges_need_allow_host)
{
    static const uint32_t blocked[] = {
        ADDR(0, 0, 0, 0),       ADDR(0, 255, 255, 255), ADDR(127, 0, 0, 1),
        ADDR(127, 1, 2, 3),     ADDR(127, 255, 255, 254), ADDR(169, 254, 169, 254),
        ADDR(169, 254, 0, 1),   ADDR(169, 254, 255, 255),
    };
    static const uint32_t neighbours[] = {
        ADDR(1, 0, 0, 0),       ADDR(126, 255, 255, 255), ADDR(128, 0, 0, 1),
        ADDR(169, 253, 255, 255), ADDR(169, 255, 0, 0),   ADDR(223, 255, 255, 254),
    };
    uint8_t f[512];

    for (size_t i = 0; i < sizeof blocked / sizeof blocked[0]; i++) {
        size_t len = tcp_frame(f, blocked[i], 6379, 0x02, 1000, 0, 0);
        struct result r = judge_with(hosts, 2, false, f, len);
        check_rst(&r, blocked[i], 6379);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
        len = udp_frame(f, blocked[i], 161, 10);
        r = judge_with(hosts, 2, false, f, len);
        check_icmp(&r, blocked[i], f);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
    }
    for (size_t i = 0; i < sizeof neighbours / sizeof neighbours[0]; i++) {
        size_t len = tcp_frame(f, neighbours[i], 6379, 0x02, 1000, 0, 0);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    }
}
END_TEST

START_TEST(test_netfilter_multicast_broadcast_reserved_always_drop)
{
    static const uint32_t dropped[] = {
        ADDR(224, 0, 0, 1),     ADDR(239, 255, 255, 250), ADDR(240, 0, 0, 1),
        ADDR(254, 1, 2, 3),     ADDR(255, 255, 255, 255),
        NETFILTER_VNET,         NETFILTER_VNET | 0xff, /* the virtual network's own */
    };
    uint8_t f[512];

    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
        size_t len = udp_frame(f, dropped[i], 1900, 20);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_DROP);
        len = tcp_frame(f, dropped[i], 80, 0x02, 1, 0, 0);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_DROP);
    }
}
END_TEST

START_TEST(test_netfilter_host_addresses_need_allow_host)
{
    uint8_t f[512];
    size_t len;
    struct result r;

    len = tcp_frame(f, ADDR(192, 0, 2, 2), 22, 0x02, 1, 0, 0);
    r = judge_with(hosts, 2, false, f, len);
    check_rst(&r, ADDR(192, 0, 2, 2), 22);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);

    len = udp_frame(f, ADDR(10, 231, 0, 1), 5353, 12);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, ADDR(10, 231, 0, 1), f);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);

    /* Its neighbours on the same networks are not the host. */
    len = tcp_frame(f, ADDR(192, 0, 2, 3), 22, 0x02, 1, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    len = tcp_frame(f, ADDR(192, 0, 2, 1), 22, 0x02, 1, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_host_address_list_change)
{
    uint32_t before[] = {htonl(ADDR(192, 0, 2, 2))};
    uint32_t after[] = {htonl(ADDR(10, 231, 0, 1)), htonl(ADDR(198, 51, 100, 7))};
    uint8_t f[512];
    size_t len_new = tcp_frame(f, ADDR(198, 51, 100, 7), 443, 0x02, 1, 0, 0);
    uint8_t g[512];
    size_t len_old = tcp_frame(g, ADDR(192, 0, 2, 2), 443, 0x02, 1, 0, 0);
    struct result r;

    ck_assert_int_eq(judge_with(before, 1, false, f, len_new).v, NETFILTER_PASS);
    ck_assert_int_eq(judge_with(before, 1, false, g, len_old).v, NETFILTER_REJECT);
    /* An address the host gained is refused, one it lost is anyone's. */
    r = judge_with(after, 2, false, f, len_new);
    check_rst(&r, ADDR(198, 51, 100, 7), 443);
    ck_assert_int_eq(judge_with(after, 2, false, g, len_old).v, NETFILTER_PASS);
    /* No address known: only the fixed rules apply. */
    ck_assert_int_eq(judge_with(NULL, 0, false, f, len_new).v, NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_host_address_inside_virtual_network)
{
    /* A host that itself sits behind QEMU's or another slirp's 10.0.2.15,
     * and any other address of the virtual network: refused either way. */
    uint32_t host[] = {htonl(ADDR(10, 0, 2, 15))};
    uint8_t f[512];
    size_t len = tcp_frame(f, ADDR(10, 0, 2, 15), 22, 0x02, 1, 0, 0);

    ck_assert_int_eq(judge_with(host, 1, false, f, len).v, NETFILTER_REJECT);
    ck_assert_int_eq(judge_with(host, 1, true, f, len).v, NETFILTER_PASS);
    ck_assert_int_eq(judge_with(hosts, 2, false, f, len).v, NETFILTER_REJECT);
    len = tcp_frame(f, ADDR(10, 0, 2, 4), 80, 0x02, 1, 0, 0);
    ck_assert_int_eq(judge_with(NULL, 0, false, f, len).v, NETFILTER_REJECT);
    ck_assert_int_eq(judge_with(NULL, 0, true, f, len).v, NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_reset_for_syn_acknowledges_it)
{
    uint8_t f[512];
    size_t len = tcp_frame(f, ADDR(127, 0, 0, 1), 5432, 0x02, 0xfffffff0u, 0, 0);
    struct result r = judge_with(hosts, 2, false, f, len);
    const uint8_t *tcp = check_rst(&r, ADDR(127, 0, 0, 1), 5432);

    ck_assert_uint_eq(tcp[13], 0x14); /* RST|ACK */
    ck_assert_uint_eq(get32(tcp + 4), 0);
    ck_assert_uint_eq(get32(tcp + 8), 0xfffffff1u);
}
END_TEST

START_TEST(test_netfilter_reset_counts_payload_syn_and_fin)
{
    uint8_t f[512];
    size_t len = tcp_frame(f, ADDR(192, 0, 2, 2), 80, 0x03 /* SYN|FIN */, 0xfffffffeu, 0, 10);
    struct result r = judge_with(hosts, 2, false, f, len);
    const uint8_t *tcp = check_rst(&r, ADDR(192, 0, 2, 2), 80);

    ck_assert_uint_eq(tcp[13], 0x14);
    ck_assert_uint_eq(get32(tcp + 8), (uint32_t)(0xfffffffeu + 10 + 2)); /* wraps */
    len = tcp_frame(f, ADDR(192, 0, 2, 2), 80, 0x08 /* PSH, no ACK */, 500, 0, 7);
    r = judge_with(hosts, 2, false, f, len);
    tcp = check_rst(&r, ADDR(192, 0, 2, 2), 80);
    ck_assert_uint_eq(get32(tcp + 8), 507);
}
END_TEST

START_TEST(test_netfilter_reset_for_ack_segment_takes_its_ack)
{
    uint8_t f[512];
    size_t len =
        tcp_frame(f, ADDR(10, 231, 0, 1), 8080, 0x18 /* PSH|ACK */, 1111, 0xabcdef01u, 100);
    struct result r = judge_with(hosts, 2, false, f, len);
    const uint8_t *tcp = check_rst(&r, ADDR(10, 231, 0, 1), 8080);

    ck_assert_uint_eq(tcp[13], 0x04); /* RST alone */
    ck_assert_uint_eq(get32(tcp + 4), 0xabcdef01u);
    ck_assert_uint_eq(get32(tcp + 8), 0);
}
END_TEST

START_TEST(test_netfilter_resets_are_never_answered)
{
    uint8_t f[512];
    size_t len = tcp_frame(f, ADDR(192, 0, 2, 2), 80, 0x04, 1, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    len = tcp_frame(f, ADDR(192, 0, 2, 2), 80, 0x14, 1, 2, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_icmp_quotes_header_with_options)
{
    uint8_t f[512];
    size_t len = udp_frame_opts(f, ADDR(127, 0, 0, 53), 53, 40, 10, 0); /* IHL 15: 60 bytes */
    struct result r = judge_with(hosts, 2, false, f, len);

    check_icmp(&r, ADDR(127, 0, 0, 53), f);
    ck_assert_uint_eq(r.len, NETFILTER_REPLY_MAX);
    len = udp_frame_opts(f, ADDR(127, 0, 0, 53), 53, 0, 3, 0);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, ADDR(127, 0, 0, 53), f);
}
END_TEST

START_TEST(test_netfilter_other_protocols_dropped_when_blocked)
{
    uint8_t f[512];
    uint8_t gre[8] = {0};
    size_t len = icmp_echo_frame(f, ADDR(192, 0, 2, 2));

    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
    len = icmp_echo_frame(f, NETFILTER_GATEWAY);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    len = ip_frame(f, ADDR(127, 0, 0, 1), 47, gre, sizeof gre, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    len = ip_frame(f, ADDR(93, 184, 216, 34), 47, gre, sizeof gre, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_malformed_frames_drop)
{
    uint8_t f[512], g[512];
    size_t len = tcp_frame(f, ADDR(93, 184, 216, 34), 80, 0x02, 1, 0, 0);

    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    /* Short: no Ethernet header, no or half an IP header. */
    for (size_t n = 0; n < 14 + 20; n++)
        ck_assert_int_eq(verdict(true, f, n), NETFILTER_DROP);
    /* IHL below 5, and beyond the frame. */
    memcpy(g, f, len);
    g[14] = 0x44;
    put16(g + 14 + 10, 0);
    put16(g + 14 + 10, fold(sum(0, g + 14, 16)));
    ck_assert_int_eq(verdict(true, g, len), NETFILTER_DROP);
    memcpy(g, f, len);
    g[14] = 0x4f;
    ck_assert_int_eq(verdict(true, g, 14 + 40), NETFILTER_DROP);
    /* Not version 4 under the IPv4 ethertype. */
    memcpy(g, f, len);
    g[14] = 0x65;
    ck_assert_int_eq(verdict(true, g, len), NETFILTER_DROP);
    /* Total length beyond the frame, or shorter than the header. */
    memcpy(g, f, len);
    put16(g + 14 + 2, (uint16_t)(len - 14 + 1));
    put16(g + 14 + 10, 0);
    put16(g + 14 + 10, fold(sum(0, g + 14, 20)));
    ck_assert_int_eq(verdict(true, g, len), NETFILTER_DROP);
    memcpy(g, f, len);
    put16(g + 14 + 2, 19);
    put16(g + 14 + 10, 0);
    put16(g + 14 + 10, fold(sum(0, g + 14, 20)));
    ck_assert_int_eq(verdict(true, g, len), NETFILTER_DROP);
    /* A wrong header checksum. */
    memcpy(g, f, len);
    g[14 + 10] ^= 0x01;
    ck_assert_int_eq(verdict(true, g, len), NETFILTER_DROP);
    /* Malformed to a blocked address: dropped, never answered. */
    len = tcp_frame(g, ADDR(127, 0, 0, 1), 80, 0x02, 1, 0, 0);
    put16(g + 14 + 2, (uint16_t)(len - 14 + 4));
    put16(g + 14 + 10, 0);
    put16(g + 14 + 10, fold(sum(0, g + 14, 20)));
    ck_assert_int_eq(verdict(false, g, len), NETFILTER_DROP);
}
END_TEST

START_TEST(test_netfilter_ethernet_padding_is_not_malformed)
{
    uint8_t f[512];
    size_t len = udp_frame(f, ADDR(127, 0, 0, 1), 9, 0); /* 42 bytes, padded to 60 */
    struct result r;

    memset(f + len, 0, 60 - len);
    ck_assert_int_eq(verdict(true, f, 60), NETFILTER_PASS);
    r = judge_with(hosts, 2, false, f, 60);
    check_icmp(&r, ADDR(127, 0, 0, 1), f);
}
END_TEST

START_TEST(test_netfilter_truncated_transport_headers)
{
    uint8_t f[512];
    uint8_t part[12] = {0};
    size_t len;

    /* Too little TCP to answer with a reset: dropped. */
    put16(part + 2, 80);
    len = ip_frame(f, ADDR(192, 0, 2, 2), 6, part, 12, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
    /* Data offset below 5, or past the segment. */
    len = tcp_frame(f, ADDR(192, 0, 2, 2), 80, 0x02, 1, 0, 0);
    f[14 + 20 + 12] = 4 << 4;
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    f[14 + 20 + 12] = 6 << 4;
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    /* A UDP header cut short. */
    len = ip_frame(f, ADDR(192, 0, 2, 2), 17, part, 6, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
    /* To the DNS address without a whole port: no way to tell it is DNS,
     * even with the port's last byte in the padding after the datagram. */
    put16(part + 2, 53);
    len = ip_frame(f, NETFILTER_DNS, 17, part, 3, 0, 0);
    f[len] = 53;
    ck_assert_int_eq(verdict(false, f, len + 1), NETFILTER_DROP);
    len = ip_frame(f, NETFILTER_DNS, 17, part, 4, 0, 0);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
}
END_TEST

START_TEST(test_netfilter_fragments_judged_by_destination)
{
    uint8_t f[512];
    size_t len;
    struct result r;

    /* First fragment (MF, offset 0): judged and answered like a whole datagram. */
    len = udp_frame_opts(f, ADDR(10, 231, 0, 1), 4789, 64, 0, 0x2000);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, ADDR(10, 231, 0, 1), f);
    len = udp_frame_opts(f, NETFILTER_DNS, 53, 64, 0, 0x2000);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    len = udp_frame_opts(f, NETFILTER_DNS, 54, 64, 0, 0x2000);
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_REJECT);

    /* Later fragments (offset > 0, with or without MF): no transport
     * header, same destination rule, never an answer. */
    for (int mf = 0; mf < 2; mf++) {
        uint16_t frag = (uint16_t)((mf ? 0x2000 : 0) | 185);
        len = udp_frame_opts(f, ADDR(10, 231, 0, 1), 4789, 64, 0, frag);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_PASS);
        len = udp_frame_opts(f, NETFILTER_GATEWAY, 4789, 64, 0, frag);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        len = udp_frame_opts(f, ADDR(127, 0, 0, 1), 4789, 64, 0, frag);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_DROP);
        len = udp_frame_opts(f, ADDR(224, 0, 0, 251), 5353, 64, 0, frag);
        ck_assert_int_eq(verdict(true, f, len), NETFILTER_DROP);
        len = udp_frame_opts(f, ADDR(93, 184, 216, 34), 4789, 64, 0, frag);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
        /* Its port was checked in the first fragment. */
        len = udp_frame_opts(f, NETFILTER_DNS, 4789, 64, 0, frag);
        ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);
    }
    /* DF is not a fragment. */
    len = udp_frame_opts(f, ADDR(10, 231, 0, 1), 4789, 8, 0, 0x4000);
    r = judge_with(hosts, 2, false, f, len);
    check_icmp(&r, ADDR(10, 231, 0, 1), f);
}
END_TEST

/* ---- restricted mode (custom and deny-all policies) -------------------------------- */

/* Restricted mode's memory of UDP, and its clock (a fresh start per rules_of). */
static struct netflows flows;
static uint64_t clock_ms = 1000000;

static struct netrules rules_of(const char *text)
{
    struct netrules r;
    char err[160];
    memset(&flows, 0, sizeof flows);
    ck_assert_msg(netrules_parse(text, strlen(text), &r, err, sizeof err), "%s", err);
    return r;
}

static enum netfilter_verdict restricted(struct netrules *r, bool allow_host, const uint8_t *f, size_t len)
{
    struct netfilter_policy p = {hosts, 2, allow_host, r, &flows, clock_ms};
    uint8_t reply[NETFILTER_REPLY_MAX];
    size_t rlen;
    return netfilter_judge(&p, f, len, reply, &rlen);
}

/* A DNS message: header (flags, counts), the question (name, type A, class
 * IN), then extra bytes. */
static size_t dns_msg(uint8_t *m, uint16_t flags, uint16_t qd, uint16_t an, const char *name, const uint8_t *extra,
                      size_t nextra)
{
    size_t o = 12;
    memset(m, 0, 12);
    put16(m, 0x4242);
    put16(m + 2, flags);
    put16(m + 4, qd);
    put16(m + 6, an);
    for (const char *l = name; *l;) {
        const char *dot = strchr(l, '.');
        size_t n = dot ? (size_t)(dot - l) : strlen(l);
        m[o++] = (uint8_t)n;
        memcpy(m + o, l, n);
        o += n;
        l += n + (dot ? 1 : 0);
    }
    m[o++] = 0;
    put16(m + o, 1);
    put16(m + o + 2, 1);
    o += 4;
    if (nextra)
        memcpy(m + o, extra, nextra);
    return o + nextra;
}

static size_t dns_query_frame(uint8_t *f, const char *name)
{
    uint8_t d[8 + 300];
    size_t n = dns_msg(d + 8, 0x0100, 1, 0, name, NULL, 0);
    put16(d, GUEST_PORT);
    put16(d + 2, 53);
    put16(d + 4, (uint16_t)(8 + n));
    put16(d + 6, 0);
    return ip_frame(f, NETFILTER_DNS, 17, d, 8 + n, 0, 0);
}

/* An answer from the stack's resolver to the sandbox: a CNAME (its owner a
 * pointer to the question's name), then an A record per address. */
static size_t dns_answer_frame(uint8_t *f, const char *name, const uint32_t *addrs, size_t naddrs, uint16_t flags)
{
    static const uint8_t cname[] = {0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 15,
                                    1, 'x', 3, 'c', 'd', 'n', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0};
    static const uint8_t head[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};
    uint8_t d[8 + 600], rr[400];
    size_t nrr, n, len;
    uint8_t *ip = f + 14;

    memcpy(rr, cname, sizeof cname);
    nrr = sizeof cname;
    for (size_t i = 0; i < naddrs; i++) {
        memcpy(rr + nrr, head, sizeof head);
        put32(rr + nrr + sizeof head, addrs[i]);
        nrr += sizeof head + 4;
    }
    n = dns_msg(d + 8, flags, 1, (uint16_t)(1 + naddrs), name, rr, nrr);
    put16(d, 53);
    put16(d + 2, GUEST_PORT);
    put16(d + 4, (uint16_t)(8 + n));
    put16(d + 6, 0);
    len = ip_frame(f, NETFILTER_GUEST, 17, d, 8 + n, 0, 0);
    put32(ip + 12, NETFILTER_DNS);
    put16(ip + 10, 0);
    put16(ip + 10, fold(sum(0, ip, 20)));
    return len;
}

START_TEST(test_netrules_parse)
{
    static const char *const bad[] = {
        "allow 10.0.0.0/33\n", "allow 10.0.0/8\n", "allow 10.0.0.0\n", "allow ::1/128\n", "deny 300.0.0.0/8\n",
        "allowed 10.0.0.0/8\n", "allow\n", "domain a b\n", "host db.test\n", "host db.test 10.0.0.256\n",
    };
    struct netrules r;
    char err[160];

    r = rules_of("allow 10.1.2.3/8\ndeny 10.9.0.0/16\ndomain *.Example.COM\n\nhost db.test 192.0.2.7\n"
                 "host www.example.com 192.0.2.8\nhost other.test 192.0.2.9\n");
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(10, 200, 1, 1)), 1);
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(10, 9, 3, 3)), -1); /* denied wins */
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(11, 0, 0, 1)), 0);
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(192, 0, 2, 8)), 1); /* an allowed name's --add-host entry */
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(192, 0, 2, 7)), 0); /* not an allowed name */
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(192, 0, 2, 9)), 0);
    ck_assert(netrules_name_allowed(&r, "a.example.com"));
    ck_assert(netrules_name_allowed(&r, "A.EXAMPLE.com"));
    ck_assert(!netrules_name_allowed(&r, "example.com"));
    ck_assert(!netrules_name_allowed(&r, "aexample.com"));
    netrules_free(&r);
    r = rules_of(""); /* deny-all */
    ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(8, 8, 8, 8)), 0);
    ck_assert(!netrules_name_allowed(&r, "example.com"));
    netrules_free(&r);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!netrules_parse(bad[i], strlen(bad[i]), &r, err, sizeof err), "accepted: %s", bad[i]);
        ck_assert_msg(strstr(err, "line 1") != NULL, "%s", err);
    }
}
END_TEST

START_TEST(test_netfilter_restricted_addresses)
{
    uint8_t f[512];
    size_t len;
    struct netrules r = rules_of("allow 203.0.113.0/24\ndeny 203.0.113.7/32\nallow 192.0.2.2/32\nallow 127.0.0.0/8\n");
    struct netrules none = rules_of("");

    len = tcp_frame(f, ADDR(203, 0, 113, 5), 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    ck_assert_int_eq(restricted(&none, false, f, len), NETFILTER_REJECT); /* deny-all */
    ck_assert_int_eq(verdict(false, f, len), NETFILTER_PASS);             /* open mode: the control */
    len = tcp_frame(f, ADDR(203, 0, 113, 7), 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = tcp_frame(f, ADDR(198, 51, 100, 1), 443, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = udp_frame(f, ADDR(198, 51, 100, 1), 443, 20);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* The host, even when a CIDR names it: only with allow_host. */
    len = tcp_frame(f, ADDR(192, 0, 2, 2), 22, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    ck_assert_int_eq(restricted(&r, true, f, len), NETFILTER_PASS);
    ck_assert_int_eq(restricted(&none, true, f, len), NETFILTER_REJECT);
    len = tcp_frame(f, NETFILTER_GATEWAY, 22, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = tcp_frame(f, ADDR(127, 0, 0, 1), 22, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = tcp_frame(f, ADDR(169, 254, 169, 254), 80, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* Later fragments to an allowed address pass, to others not. */
    len = udp_frame_opts(f, ADDR(203, 0, 113, 5), 9, 20, 0, 0x0010);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    len = udp_frame_opts(f, ADDR(198, 51, 100, 1), 9, 20, 0, 0x0010);
    ck_assert_int_ne(restricted(&r, false, f, len), NETFILTER_PASS);
    len = icmp_echo_frame(f, ADDR(203, 0, 113, 5));
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    netrules_free(&r);
    netrules_free(&none);
}
END_TEST

START_TEST(test_netfilter_restricted_dns_questions)
{
    uint8_t f[512], *dns = f + 14 + 20 + 8;
    size_t len;
    struct netrules r = rules_of("domain *.example.com\ndomain db.test\n");

    len = dns_query_frame(f, "a.example.com");
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    len = dns_query_frame(f, "DB.test");
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    /* Names the policy does not allow would carry data out through the
     * host's resolver. */
    len = dns_query_frame(f, "c2VjcmV0.exfil.example.org");
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = dns_query_frame(f, "example.com");
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* Malformed: two questions, an answer flag, a compressed name, a dot
     * inside a label, a UDP length that cuts the name. */
    len = dns_query_frame(f, "a.example.com");
    put16(dns + 4, 2);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = dns_query_frame(f, "a.example.com");
    dns[2] |= 0x80;
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = dns_query_frame(f, "a.example.com");
    dns[12] = 0xc0;
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = dns_query_frame(f, "a.example.com");
    dns[13] = '.';
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = dns_query_frame(f, "a.example.com");
    put16(f + 14 + 20 + 4, 8 + 14);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* TCP and other ports to the resolver: refused; a fragment: dropped. */
    len = tcp_frame(f, NETFILTER_DNS, 53, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = udp_frame(f, NETFILTER_DNS, 5353, 20);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = udp_frame_opts(f, NETFILTER_DNS, 53, 20, 0, 0x0010);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_DROP);
    netrules_free(&r);
}
END_TEST

/* A question about name from GUEST_PORT, judged under the policy the test
 * observes with (so that its answer is awaited). */
#define ask(name)                                                                                                      \
    do {                                                                                                               \
        uint8_t q_[512], rep_[NETFILTER_REPLY_MAX];                                                                    \
        size_t ql_ = dns_query_frame(q_, name), rl_;                                                                   \
        netfilter_judge(&p, q_, ql_, rep_, &rl_);                                                                      \
    } while (0)

START_TEST(test_netfilter_restricted_learns_from_answers)
{
    uint8_t f[700];
    size_t len;
    struct netrules r = rules_of("domain *.example.com\ndeny 198.51.100.66/32\n");
    struct netfilter_policy p = {hosts, 2, false, &r, &flows, clock_ms};
    uint32_t ok[] = {ADDR(198, 51, 100, 9), ADDR(198, 51, 100, 10)}, denied[] = {ADDR(198, 51, 100, 66)},
             other[] = {ADDR(198, 51, 100, 20)};

    len = tcp_frame(f, ok[0], 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT); /* before any answer */
    ask("db.example.com");
    len = dns_answer_frame(f, "db.example.com", ok, 2, 0x8180);
    netfilter_observe(&p, f, len);
    for (size_t i = 0; i < 2; i++) {
        len = tcp_frame(f, ok[i], 5432, 0x02, 1, 0, 0);
        ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    }
    /* Not learnt: an answer about a name the policy does not allow, a
     * denied address, an error answer, an answer not from the resolver. */
    ask("db.example.org");
    len = dns_answer_frame(f, "db.example.org", other, 1, 0x8180);
    netfilter_observe(&p, f, len);
    ask("db.example.com");
    len = dns_answer_frame(f, "db.example.com", denied, 1, 0x8180);
    netfilter_observe(&p, f, len);
    ask("db.example.com");
    len = dns_answer_frame(f, "db.example.com", other, 1, 0x8183);
    netfilter_observe(&p, f, len);
    ask("db.example.com");
    len = dns_answer_frame(f, "db.example.com", other, 1, 0x8180);
    put32(f + 14 + 12, ADDR(198, 51, 100, 1));
    netfilter_observe(&p, f, len);
    flows = (struct netflows){0}; /* that datagram gave the port to another peer */
    len = tcp_frame(f, other[0], 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    len = tcp_frame(f, denied[0], 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* An answer cut short (the IP and UDP lengths say so) teaches nothing
     * past its end. */
    ask("db.example.com");
    len = dns_answer_frame(f, "db.example.com", other, 1, 0x8180);
    put16(f + 14 + 2, (uint16_t)(len - 14 - 3));
    put16(f + 14 + 10, 0);
    put16(f + 14 + 10, fold(sum(0, f + 14, 20)));
    put16(f + 14 + 20 + 4, (uint16_t)(len - 14 - 20 - 3));
    netfilter_observe(&p, f, len - 3);
    len = tcp_frame(f, other[0], 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* The ring keeps the newest addresses. */
    for (uint32_t i = 0; i < NETRULES_LEARNED + 2; i++) {
        uint32_t a = ADDR(100, 64, 0, 0) + i;
        ask("n.example.com");
        len = dns_answer_frame(f, "n.example.com", &a, 1, 0x8180);
        netfilter_observe(&p, f, len);
    }
    len = tcp_frame(f, ADDR(100, 64, 0, 0) + NETRULES_LEARNED + 1, 1, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    len = tcp_frame(f, ok[0], 5432, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT); /* the oldest went */
    netrules_free(&r);
}
END_TEST

/* libslirp hands a sandbox port's UDP, from any peer, back as coming from
 * the peer last written to. The attack: a port writes to an allowed server
 * it controls, then asks the resolver about an allowed name; the server
 * answers in the resolver's name with the addresses it likes, and the
 * sandbox may then reach them. Refused: a port speaks DNS or to others, not
 * both, until libslirp's socket for it is gone; and only the first answer
 * to a question that passed teaches anything. */
START_TEST(test_netfilter_restricted_udp_port_speaks_one_way)
{
    uint8_t f[700];
    size_t len;
    struct netrules r = rules_of("domain *.example.com\nallow 203.0.113.0/24\n");
    uint32_t evil = ADDR(198, 51, 100, 99);

    len = udp_frame(f, ADDR(203, 0, 113, 5), 9999, 20); /* to the allowed server, from GUEST_PORT */
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    len = dns_query_frame(f, "db.example.com"); /* then a question from the same port */
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    clock_ms += (NETFLOWS_HOLD_S - 1) * 1000ull;
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    clock_ms += 2000; /* libslirp's socket for the port is gone by now */
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    /* and the other way round */
    len = udp_frame(f, ADDR(203, 0, 113, 5), 9999, 20);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    /* A peer that keeps the port's socket alive keeps it from DNS: a
     * datagram to the port from the allowed server now and then. */
    flows = (struct netflows){0};
    len = udp_frame(f, ADDR(203, 0, 113, 5), 9999, 20);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    for (int k = 0; k < 3; k++) {
        struct netfilter_policy p = {hosts, 2, false, &r, &flows, clock_ms};
        len = dns_answer_frame(f, "db.example.com", &evil, 1, 0x8180); /* any datagram to GUEST_PORT */
        put32(f + 14 + 12, ADDR(203, 0, 113, 5));
        put16(f + 14 + 20, 9999);
        clock_ms += 200 * 1000ull;
        p.now_ms = clock_ms;
        netfilter_observe(&p, f, len);
    }
    clock_ms += (NETFLOWS_HOLD_S - 100) * 1000ull;
    len = dns_query_frame(f, "db.example.com");
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_REJECT);
    ck_assert_int_eq(netrules_addr_verdict(&r, evil), 0);
    /* TCP is not affected (libslirp keeps a socket per connection) */
    len = tcp_frame(f, ADDR(203, 0, 113, 5), 9999, 0x02, 1, 0, 0);
    ck_assert_int_eq(restricted(&r, false, f, len), NETFILTER_PASS);
    {
        /* Answers: none without a question, the first one only, none late. */
        struct netfilter_policy p = {hosts, 2, false, &r, &flows, clock_ms};
        flows = (struct netflows){0};
        len = dns_answer_frame(f, "db.example.com", &evil, 1, 0x8180);
        netfilter_observe(&p, f, len); /* nothing asked */
        ck_assert_int_eq(netrules_addr_verdict(&r, evil), 0);
        ask("db.example.com");
        len = dns_answer_frame(f, "db.example.com", &evil, 1, 0x8180);
        put16(f + 14 + 20 + 8, 0x4243); /* another ID */
        netfilter_observe(&p, f, len);
        ck_assert_int_eq(netrules_addr_verdict(&r, evil), 0);
        len = dns_answer_frame(f, "db.example.com", (uint32_t[]){ADDR(198, 51, 100, 9)}, 1, 0x8180);
        netfilter_observe(&p, f, len); /* the real answer */
        ck_assert_int_eq(netrules_addr_verdict(&r, ADDR(198, 51, 100, 9)), 1);
        len = dns_answer_frame(f, "db.example.com", &evil, 1, 0x8180);
        netfilter_observe(&p, f, len); /* a second answer */
        ck_assert_int_eq(netrules_addr_verdict(&r, evil), 0);
        ask("db.example.com");
        p.now_ms += NETFLOWS_ANSWER_MS + 1;
        netfilter_observe(&p, f, len); /* too late */
        ck_assert_int_eq(netrules_addr_verdict(&r, evil), 0);
    }
    netrules_free(&r);
}
END_TEST

/* A question carries nothing else out: no bytes after it, no additional
 * record but one EDNS OPT record. */
START_TEST(test_netfilter_restricted_dns_question_alone)
{
    static const uint8_t opt[] = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
    static const uint8_t txt[] = {0, 0, 16, 0, 1, 0, 0, 0, 0, 0, 4, 'd', 'a', 't', 'a'};
    uint8_t f[512], d[8 + 300];
    size_t n;
    struct netrules r = rules_of("domain db.example.com\n");
    struct {
        const uint8_t *extra;
        size_t nextra;
        uint16_t arcount;
        enum netfilter_verdict want;
    } cases[] = {
        {NULL, 0, 0, NETFILTER_PASS},
        {opt, sizeof opt, 1, NETFILTER_PASS},
        {(const uint8_t *)"c2VjcmV0", 8, 0, NETFILTER_REJECT},   /* trailing bytes */
        {opt, sizeof opt, 0, NETFILTER_REJECT},                  /* a record not counted */
        {txt, sizeof txt, 1, NETFILTER_REJECT},                  /* not an OPT record */
        {opt, sizeof opt - 1, 1, NETFILTER_REJECT},              /* cut short */
        {opt, sizeof opt, 2, NETFILTER_REJECT},                  /* two additional records */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        n = dns_msg(d + 8, 0x0100, 1, 0, "db.example.com", cases[i].extra, cases[i].nextra);
        put16(d + 8 + 10, cases[i].arcount);
        put16(d, GUEST_PORT);
        put16(d + 2, 53);
        put16(d + 4, (uint16_t)(8 + n));
        put16(d + 6, 0);
        len = ip_frame(f, NETFILTER_DNS, 17, d, 8 + n, 0, 0);
        ck_assert_msg(restricted(&r, false, f, len) == cases[i].want, "case %zu", i);
    }
    netrules_free(&r);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("netfilter");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, NULL);
    SBX_TEST_ADD(tc, test_netfilter_arp_passes);
    SBX_TEST_ADD(tc, test_netfilter_ipv6_and_other_ethertypes_drop);
    SBX_TEST_ADD(tc, test_netfilter_outside_addresses_pass);
    SBX_TEST_ADD(tc, test_netfilter_dns_address_takes_only_port_53);
    SBX_TEST_ADD(tc, test_netfilter_gateway_needs_allow_host);
    SBX_TEST_ADD(tc, test_netfilter_special_ranges_need_allow_host);
    SBX_TEST_ADD(tc, test_netfilter_multicast_broadcast_reserved_always_drop);
    SBX_TEST_ADD(tc, test_netfilter_host_addresses_need_allow_host);
    SBX_TEST_ADD(tc, test_netfilter_host_address_list_change);
    SBX_TEST_ADD(tc, test_netfilter_host_address_inside_virtual_network);
    SBX_TEST_ADD(tc, test_netfilter_reset_for_syn_acknowledges_it);
    SBX_TEST_ADD(tc, test_netfilter_reset_counts_payload_syn_and_fin);
    SBX_TEST_ADD(tc, test_netfilter_reset_for_ack_segment_takes_its_ack);
    SBX_TEST_ADD(tc, test_netfilter_resets_are_never_answered);
    SBX_TEST_ADD(tc, test_netfilter_icmp_quotes_header_with_options);
    SBX_TEST_ADD(tc, test_netfilter_other_protocols_dropped_when_blocked);
    SBX_TEST_ADD(tc, test_netfilter_malformed_frames_drop);
    SBX_TEST_ADD(tc, test_netfilter_ethernet_padding_is_not_malformed);
    SBX_TEST_ADD(tc, test_netfilter_truncated_transport_headers);
    SBX_TEST_ADD(tc, test_netfilter_fragments_judged_by_destination);
    SBX_TEST_ADD(tc, test_netrules_parse);
    SBX_TEST_ADD(tc, test_netfilter_restricted_addresses);
    SBX_TEST_ADD(tc, test_netfilter_restricted_dns_questions);
    SBX_TEST_ADD(tc, test_netfilter_restricted_learns_from_answers);
    SBX_TEST_ADD(tc, test_netfilter_restricted_udp_port_speaks_one_way);
    SBX_TEST_ADD(tc, test_netfilter_restricted_dns_question_alone);
    suite_add_tcase(s, tc);
    return s;
}
