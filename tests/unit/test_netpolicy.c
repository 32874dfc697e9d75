/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/policy/netpolicy.c: validation, merge rules, presets, JSON both ways, secrets. */
#include "harness.h"
#include "util/jobtype.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------------------- */

static char *json_of(const sbx_netpolicy *n)
{
    char *out = (char *)"unset";
    ck_assert_int_eq(sbx_netpolicy_to_json(n, &out), SBX_OK);
    ck_assert_ptr_nonnull(out);
    return out;
}

#define ASSERT_JSON(n, want)                                                                       \
    do {                                                                                           \
        char *j_ = json_of(n);                                                                     \
        ck_assert_str_eq(j_, (want));                                                              \
        sbx_free(j_);                                                                              \
    } while (0)

/* The message of n's last failure contains want (and not secret, if given). */
static void expect_msg(const sbx_netpolicy *n, const char *want, const char *secret)
{
    const char *m = sbx_netpolicy_last_error(n);
    ck_assert_msg(strstr(m, want) != NULL, "message '%s' lacks '%s'", m, want);
    if (secret)
        ck_assert_msg(strstr(m, secret) == NULL, "message '%s' shows the secret '%s'", m, secret);
}

static sbx_netpolicy *np_new(void)
{
    sbx_netpolicy *n = sbx_netpolicy_new();
    ck_assert_ptr_nonnull(n);
    return n;
}

/* A preset with one input (k NULL: none). */
static sbx_status preset1(sbx_netpolicy *n, const char *job, const char *k, const char *v)
{
    const char *keys[1] = {k}, *values[1] = {v};
    return sbx_netpolicy_load_preset(n, job, k ? 1 : 0, keys, values);
}

static void expect_preset(const char *job, const char *k, const char *v, const char *want)
{
    sbx_netpolicy *n = np_new();
    sbx_status st = preset1(n, job, k, v);
    ck_assert_msg(st == SBX_OK, "%s %s=%s: %s", job, k ? k : "", v ? v : "", sbx_netpolicy_last_error(n));
    ck_assert_str_eq(sbx_netpolicy_last_error(n), "");
    ASSERT_JSON(n, want);
    sbx_netpolicy_free(n);
}

/* The preset fails with SBX_E_INVALID_ARG, a message holding want and not
 * secret, and leaves the policy as it was. */
static void expect_preset_error(const char *job, const char *k, const char *v, const char *want, const char *secret)
{
    sbx_netpolicy *n = np_new();
    sbx_status st;
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "before.example.com"), SBX_OK);
    st = preset1(n, job, k, v);
    ck_assert_msg(st == SBX_E_INVALID_ARG, "%s %s=%s gave %s", job, k ? k : "", v ? v : "", sbx_status_name(st));
    expect_msg(n, want, secret);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"before.example.com\"]}");
    sbx_netpolicy_free(n);
}

static void expect_load(const char *json, const char *want)
{
    sbx_netpolicy *n = np_new();
    sbx_status st = sbx_netpolicy_load_json(n, json);
    ck_assert_msg(st == SBX_OK, "%s: %s", json, sbx_netpolicy_last_error(n));
    ASSERT_JSON(n, want);
    sbx_netpolicy_free(n);
}

/* load_json fails with code and a message holding want (not secret); the
 * policy keeps what it held. */
static void expect_load_error(const char *json, sbx_status code, const char *want, const char *secret)
{
    sbx_netpolicy *n = np_new();
    sbx_status st;
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_ALLOW_ALL), SBX_OK);
    st = sbx_netpolicy_load_json(n, json);
    ck_assert_msg(st == code, "%s gave %s, not %s (%s)", json, sbx_status_name(st), sbx_status_name(code),
                  sbx_netpolicy_last_error(n));
    expect_msg(n, want, secret);
    ASSERT_JSON(n, "{\"mode\":\"allow-all\"}");
    sbx_netpolicy_free(n);
}

/* ---- handle basics ---------------------------------------------------------------- */

START_TEST(test_netpolicy_new_is_deny_all)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_DENY_ALL);
    ck_assert_str_eq(sbx_netpolicy_last_error(n), "");
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
    sbx_netpolicy_free(n);
    sbx_netpolicy_free(NULL);
}
END_TEST

START_TEST(test_netpolicy_null_arguments_are_errors)
{
    sbx_netpolicy *n = np_new();
    char *out = (char *)"unset";
    const char *k[1] = {"url"};

    ck_assert_int_eq(sbx_netpolicy_mode(NULL), SBX_NETPOLICY_DENY_ALL);
    ck_assert_str_eq(sbx_netpolicy_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_netpolicy_set_mode(NULL, SBX_NETPOLICY_ALLOW_ALL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(NULL, "a.example"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(NULL, "10.0.0.0/8"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(NULL, "10.0.0.0/8"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_inject_header(NULL, "a.example", "x", "y"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_load_preset(NULL, "verify.test", 0, NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_load_json(NULL, "{}"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_to_json(NULL, &out), SBX_E_INVALID_ARG);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(sbx_netpolicy_to_json(n, NULL), SBX_E_INVALID_ARG);

    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "domain is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "CIDR is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(n, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "CIDR is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, NULL, "x", "y"), SBX_E_INVALID_ARG);
    expect_msg(n, "domain is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", NULL, "y"), SBX_E_INVALID_ARG);
    expect_msg(n, "header name is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x", NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "header value is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, NULL, 0, NULL, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "job type is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "repo.clone", 1, k, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "NULL while ninputs > 0", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_json(n, NULL), SBX_E_INVALID_ARG);
    expect_msg(n, "JSON text is NULL", NULL);
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_success_clears_last_error)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "bad domain"), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_netpolicy_last_error(n), "");
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "good.example.com"), SBX_OK);
    ck_assert_str_eq(sbx_netpolicy_last_error(n), "");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_set_mode)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_ALLOW_ALL), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_ALLOW_ALL);
    ASSERT_JSON(n, "{\"mode\":\"allow-all\"}");
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_CUSTOM), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_CUSTOM);
    /* An empty custom policy allows nothing; it is not turned into allow-all. */
    ASSERT_JSON(n, "{\"mode\":\"custom\"}");
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_DENY_ALL), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");

    ck_assert_int_eq(sbx_netpolicy_set_mode(n, 3), SBX_E_INVALID_ARG);
    expect_msg(n, "unknown network policy mode 3", NULL);
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, -1), SBX_E_INVALID_ARG);
    expect_msg(n, "mode -1", NULL);
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_DENY_ALL);
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_mode_switch_drops_or_keeps_rules)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "a.example.com"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.0.0.0/8"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "api.example.com", "x-key", "k1"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_CUSTOM), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"a.example.com\",\"api.example.com\"],"
                   "\"allowedCIDRs\":[\"10.0.0.0/8\"],"
                   "\"injectionRules\":[{\"domain\":\"api.example.com\",\"headers\":{\"x-key\":\"k1\"}}]}");
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_ALLOW_ALL), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"allow-all\"}");
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_CUSTOM), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\"}");
    /* Adding to an allow-all policy makes it custom: only what is listed. */
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_ALLOW_ALL), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(n, "192.168.0.0/16"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_CUSTOM);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"deniedCIDRs\":[\"192.168.0.0/16\"]}");
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- domains ---------------------------------------------------------------------- */

START_TEST(test_netpolicy_domain_accepted_and_normalised)
{
    static const char *const cases[][2] = {
        {"example.org", "example.org"},
        {"Example.ORG", "example.org"},
        {"example.org.", "example.org"},
        {"*.pkgs.example.org", "*.pkgs.example.org"},
        {"*.Example.org.", "*.example.org"},
        {"*", "*"},
        {"a-b.c-d.example", "a-b.c-d.example"},
        {"xn--bcher-kva.example", "xn--bcher-kva.example"},
        {"123.example.com", "123.example.com"},
        {"a.b.c.d.e.f.example.com", "a.b.c.d.e.f.example.com"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        sbx_netpolicy *n = np_new();
        char want[512];
        ck_assert_msg(sbx_netpolicy_allow_domain(n, cases[i][0]) == SBX_OK, "%s: %s", cases[i][0],
                      sbx_netpolicy_last_error(n));
        ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_CUSTOM);
        snprintf(want, sizeof want, "{\"mode\":\"custom\",\"allowedDomains\":[\"%s\"]}", cases[i][1]);
        ASSERT_JSON(n, want);
        sbx_netpolicy_free(n);
    }
}
END_TEST

START_TEST(test_netpolicy_domain_length_limits)
{
    char label63[64], label64[65], name[300];
    sbx_netpolicy *n = np_new();
    memset(label63, 'a', 63);
    label63[63] = '\0';
    memset(label64, 'a', 64);
    label64[64] = '\0';
    snprintf(name, sizeof name, "%s.example.com", label63);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, name), SBX_OK);
    snprintf(name, sizeof name, "%s.example.com", label64);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, name), SBX_E_INVALID_ARG);
    expect_msg(n, "longer than 63", NULL);
    /* 4 x 63 + 3 dots = 255 > 253; 3 x 63 + 61 + 3 dots = 253 is fine. */
    snprintf(name, sizeof name, "%s.%s.%s.%s", label63, label63, label63, label63);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, name), SBX_E_INVALID_ARG);
    expect_msg(n, "longer than 253", NULL);
    snprintf(name, sizeof name, "%s.%s.%s.%.61s", label63, label63, label63, label63);
    ck_assert_int_eq(strlen(name), 253);
    ck_assert_msg(sbx_netpolicy_allow_domain(n, name) == SBX_OK, "%s", sbx_netpolicy_last_error(n));
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_domain_rejected)
{
    static const char *const cases[][2] = {
        {"", "it is empty"},
        {".", "empty label"},
        {"a..example.com", "empty label"},
        {".example.com", "empty label"},
        {"example.com..", "empty label"},
        {"localhost", "single-label name"},
        {"db", "single-label name"},
        {"-a.example.com", "label '-a' starts or ends with '-'"},
        {"a-.example.com", "label 'a-' starts or ends with '-'"},
        {"a_b.example.com", "character '_' is not allowed"},
        {"exa mple.com", "character ' ' is not allowed"},
        {"example.com:443", "character ':' is not allowed"},
        {"https://example.com", "character ':' is not allowed"},
        {"example.com/path", "character '/' is not allowed"},
        {"10.0.0.1", "IP address: allow it as a CIDR (10.0.0.1/32)"},
        {"10.0.0.1.", "IP address: allow it as a CIDR (10.0.0.1/32)"},
        {"::1", "IP address: allow it as a CIDR (::1/128)"},
        {"[2001:DB8::1]", "IP address: allow it as a CIDR (2001:db8::1/128)"},
        {"1.2.3", "last label is all digits"},
        {"example.123", "last label is all digits"},
        {"ex*ample.com", "'*' is only allowed as the whole first label"},
        {"a.*.example.com", "'*' is only allowed as the whole first label"},
        {"**.example.com", "'*' is only allowed as the whole first label"},
        {"*example.com", "'*' is only allowed as the whole first label"},
        {"*.*.example.com", "'*' is only allowed as the whole first label"},
        {"*.", "empty label"},
        {"*.com", "wildcard over a top-level domain is too broad"},
        {"b\xc3\xbc" "cher.example", "non-ASCII"},
        {"a\tb.example.com", "control character"},
        {"a\x7f.example.com", "control character"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        sbx_netpolicy *n = np_new();
        ck_assert_msg(sbx_netpolicy_allow_domain(n, cases[i][0]) == SBX_E_INVALID_ARG, "'%s' was accepted",
                      cases[i][0]);
        expect_msg(n, cases[i][1], NULL);
        expect_msg(n, "is not a domain name", NULL);
        ASSERT_JSON(n, "{\"mode\":\"deny-all\"}"); /* nothing changed, mode included */
        sbx_netpolicy_free(n);
    }
}
END_TEST

START_TEST(test_netpolicy_domain_message_names_value_escaped)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "bad_name.example.com"), SBX_E_INVALID_ARG);
    expect_msg(n, "'bad_name.example.com' is not a domain name", NULL);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "a\nb.example.com"), SBX_E_INVALID_ARG);
    expect_msg(n, "'a\\x0ab.example.com'", NULL);
    ck_assert_ptr_null(strchr(sbx_netpolicy_last_error(n), '\n'));
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_domain_duplicates_added_once)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "b.example.com"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "a.example.com"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "B.Example.COM."), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "a.example.com"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "*.a.example.com"), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"b.example.com\",\"a.example.com\","
                   "\"*.a.example.com\"]}");
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- CIDRs ------------------------------------------------------------------------ */

START_TEST(test_netpolicy_cidr_accepted_and_canonical)
{
    static const char *const cases[][2] = {
        {"10.0.0.0/8", "10.0.0.0/8"},
        {"10.0.0.1", "10.0.0.1/32"},
        {"10.0.0.1/32", "10.0.0.1/32"},
        {"192.168.4.0/22", "192.168.4.0/22"},
        {"0.0.0.0/0", "0.0.0.0/0"},
        {"2001:DB8::/32", "2001:db8::/32"},
        {"2001:0db8:0000::/48", "2001:db8::/48"},
        {"2001:db8::1", "2001:db8::1/128"},
        {"::/0", "::/0"},
        {"fe80::/10", "fe80::/10"},
        {"::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        sbx_netpolicy *n = np_new();
        char want[256];
        ck_assert_msg(sbx_netpolicy_allow_cidr(n, cases[i][0]) == SBX_OK, "%s: %s", cases[i][0],
                      sbx_netpolicy_last_error(n));
        ck_assert_msg(sbx_netpolicy_deny_cidr(n, cases[i][0]) == SBX_OK, "%s: %s", cases[i][0],
                      sbx_netpolicy_last_error(n));
        snprintf(want, sizeof want, "{\"mode\":\"custom\",\"allowedCIDRs\":[\"%s\"],\"deniedCIDRs\":[\"%s\"]}",
                 cases[i][1], cases[i][1]);
        ASSERT_JSON(n, want);
        sbx_netpolicy_free(n);
    }
}
END_TEST

START_TEST(test_netpolicy_cidr_rejected)
{
    static const char *const cases[][2] = {
        {"", "it is empty"},
        {"10.0.0.1/8", "'10.0.0.1/8' has host bits set: the network is 10.0.0.0/8"},
        {"192.168.1.77/24", "the network is 192.168.1.0/24"},
        {"2001:db8::1/32", "the network is 2001:db8::/32"},
        {"10.0.0.0/33", "prefix length must be a number from 0 to 32"},
        {"::/129", "from 0 to 128"},
        {"10.0.0.0/08", "prefix length"},
        {"10.0.0.0/+8", "prefix length"},
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/8/8", "prefix length"},
        {"10.0.0.0/-1", "prefix length"},
        {"/8", "no IPv4 or IPv6 address"},
        {"300.0.0.0/8", "'300.0.0.0' is not an IPv4 or IPv6 address"},
        {"010.0.0.0/8", "is not an IPv4 or IPv6 address"},
        {"10.0.0/24", "is not an IPv4 or IPv6 address"},
        {"example.com", "is not an IPv4 or IPv6 address"},
        {"[::1]/128", "is not an IPv4 or IPv6 address"},
        {"fe80::1%eth0", "is not an IPv4 or IPv6 address"},
        {"10.0.0.0 /8", "is not an IPv4 or IPv6 address"},
        {"10.0.0.0/8\n", "control or non-ASCII character"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        sbx_netpolicy *n = np_new();
        ck_assert_msg(sbx_netpolicy_allow_cidr(n, cases[i][0]) == SBX_E_INVALID_ARG, "'%s' was accepted",
                      cases[i][0]);
        expect_msg(n, cases[i][1], NULL);
        ck_assert_msg(sbx_netpolicy_deny_cidr(n, cases[i][0]) == SBX_E_INVALID_ARG, "'%s' was accepted",
                      cases[i][0]);
        expect_msg(n, cases[i][1], NULL);
        ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
        sbx_netpolicy_free(n);
    }
}
END_TEST

START_TEST(test_netpolicy_cidr_duplicates_and_lists_apart)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.0.0.0/8"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "2001:DB8::/32"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "2001:db8::/32"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.0.0.0/8"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.1.2.3"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.1.2.3/32"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(n, "10.1.0.0/16"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(n, "10.1.0.0/16"), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedCIDRs\":[\"10.0.0.0/8\",\"2001:db8::/32\",\"10.1.2.3/32\"],"
                   "\"deniedCIDRs\":[\"10.1.0.0/16\"]}");
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- header injection ------------------------------------------------------------- */

START_TEST(test_netpolicy_inject_header_allows_domain)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "AI-Gateway.Vercel.sh", "Authorization", "Bearer t0k"),
                     SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_CUSTOM);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"ai-gateway.vercel.sh\"],\"injectionRules\":"
                   "[{\"domain\":\"ai-gateway.vercel.sh\",\"headers\":{\"authorization\":\"Bearer t0k\"}}]}");
    /* A wildcard family may get a header; the domain is not listed twice. */
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "*.api.example.com"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "*.api.example.com", "x-api-key", "k"), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"ai-gateway.vercel.sh\",\"*.api.example.com\"],"
                   "\"injectionRules\":[{\"domain\":\"ai-gateway.vercel.sh\",\"headers\":{\"authorization\":"
                   "\"Bearer t0k\"}},{\"domain\":\"*.api.example.com\",\"headers\":{\"x-api-key\":\"k\"}}]}");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_inject_header_merge_later_wins)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "Authorization", "old-secret"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "b.example.com", "x-one", "1"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "A.example.com.", "X-Team", "t"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "AUTHORIZATION", "new-secret"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x-empty", ""), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"a.example.com\",\"b.example.com\"],"
                   "\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{\"authorization\":\"new-secret\","
                   "\"x-team\":\"t\",\"x-empty\":\"\"}},{\"domain\":\"b.example.com\",\"headers\":{\"x-one\":\"1\"}}]}");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_inject_header_names)
{
    static const char *const good[] = {"x-api-key", "Authorization", "X_Custom", "a!#$%&'*+-.^_`|~z", "0"};
    static const char *const bad_names[][2] = {
        {"", "header name is empty"},
        {"x api", "'x api' is not a header name"},
        {"x:y", "'x:y' is not a header name"},
        {"x\r\ny", "'x\\x0d\\x0ay' is not a header name"},
        {"caf\xc3\xa9", "is not a header name"},
        {"Host", "header 'host' cannot be injected"},
        {"content-length", "header 'content-length' cannot be injected"},
        {"Transfer-Encoding", "cannot be injected"},
        {"connection", "cannot be injected"},
        {"upgrade", "cannot be injected"},
    };
    char longname[300];
    sbx_netpolicy *n = np_new();
    for (size_t i = 0; i < SBX__ARRAY_LEN(good); i++)
        ck_assert_msg(sbx_netpolicy_inject_header(n, "a.example.com", good[i], "v") == SBX_OK, "%s: %s", good[i],
                      sbx_netpolicy_last_error(n));
    sbx_netpolicy_free(n);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad_names); i++) {
        n = np_new();
        ck_assert_msg(sbx_netpolicy_inject_header(n, "a.example.com", bad_names[i][0], "v") == SBX_E_INVALID_ARG,
                      "'%s' was accepted", bad_names[i][0]);
        expect_msg(n, bad_names[i][1], NULL);
        ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
        sbx_netpolicy_free(n);
    }
    n = np_new();
    memset(longname, 'h', 257);
    longname[257] = '\0';
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", longname, "v"), SBX_E_INVALID_ARG);
    expect_msg(n, "longer than 256 bytes", NULL);
    longname[256] = '\0';
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", longname, "v"), SBX_OK);
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_inject_header_values_never_shown)
{
    static const char *const bad_values[][2] = {
        {"Bearer SECRET\r\nx-evil: 1", "has a CR or LF"},
        {"SECRET\n", "has a CR or LF"},
        {"SECRET\rtail", "has a CR or LF"},
        {"SECRET\x01", "has a control character"},
        {"SECRET\x7f", "has a control character"},
        {"SECRET\xc3(", "not valid UTF-8"},
        {"SECRET\xed\xa0\x80", "not valid UTF-8"},
    };
    char *big = malloc(8194);
    sbx_netpolicy *n = np_new();
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad_values); i++) {
        ck_assert_msg(sbx_netpolicy_inject_header(n, "a.example.com", "authorization", bad_values[i][0]) ==
                          SBX_E_INVALID_ARG,
                      "value %zu was accepted", i);
        expect_msg(n, bad_values[i][1], "SECRET");
        expect_msg(n, "header 'authorization'", NULL);
    }
    /* Tabs and UTF-8 are fine. */
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x-v", "a\tb \xc3\xa9"), SBX_OK);
    memset(big, 'S', 8193);
    big[8193] = '\0';
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x-big", big), SBX_E_INVALID_ARG);
    expect_msg(n, "longer than 8192 bytes", "SSSS");
    big[8192] = '\0';
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x-big", big), SBX_OK);
    free(big);
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_inject_header_domain_rules)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "*", "authorization", "SECRET"), SBX_E_INVALID_ARG);
    expect_msg(n, "would go to every domain", "SECRET");
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "localhost", "authorization", "SECRET"), SBX_E_INVALID_ARG);
    expect_msg(n, "'localhost' is not a domain name", "SECRET");
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "10.0.0.1", "authorization", "SECRET"), SBX_E_INVALID_ARG);
    expect_msg(n, "IP address", "SECRET");
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "*.com", "authorization", "SECRET"), SBX_E_INVALID_ARG);
    expect_msg(n, "too broad", "SECRET");
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_to_json_escapes_values)
{
    sbx_netpolicy *n = np_new();
    json_t *j, *h;
    char *out;
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "x-q", "say \"hi\" \\ \t \xc3\xa9 </"),
                     SBX_OK);
    out = json_of(n);
    ck_assert_str_eq(out, "{\"mode\":\"custom\",\"allowedDomains\":[\"a.example.com\"],\"injectionRules\":[{"
                          "\"domain\":\"a.example.com\",\"headers\":{\"x-q\":\"say \\\"hi\\\" \\\\ \\u0009 "
                          "\xc3\xa9 </\"}}]}");
    j = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    h = json_object_get(json_object_get(json_array_get(json_object_get(j, "injectionRules"), 0), "headers"),
                        "x-q");
    ck_assert_str_eq(json_string_value(h), "say \"hi\" \\ \t \xc3\xa9 </");
    json_decref(j);
    sbx_free(out);
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- presets ---------------------------------------------------------------------- */

START_TEST(test_netpolicy_preset_deny_all_jobs)
{
    static const char *const jobs[] = {"verify.lint", "verify.typecheck", "verify.test", "verify.build",
                                       "repo.applyPatch"};
    for (size_t i = 0; i < SBX__ARRAY_LEN(jobs); i++) {
        sbx_netpolicy *n = np_new();
        ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "left.example.com"), SBX_OK);
        ck_assert_int_eq(sbx_netpolicy_load_preset(n, jobs[i], 0, NULL, NULL), SBX_OK);
        ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_DENY_ALL);
        ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
        sbx_netpolicy_free(n);
        expect_preset_error(jobs[i], "url", "https://github.com/o/r", "unknown input 'url'", NULL);
        expect_preset_error(jobs[i], "url", "https://github.com/o/r", "takes no inputs", NULL);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_unknown_job_type)
{
    expect_preset_error("verify.nope", NULL, NULL, "unknown job type 'verify.nope'", NULL);
    expect_preset_error("Verify.Test", NULL, NULL, "unknown job type 'Verify.Test'", NULL);
    expect_preset_error("", NULL, NULL, "unknown job type ''", NULL);
    expect_preset_error("repo.clone\n", NULL, NULL, "unknown job type 'repo.clone\\x0a'", NULL);
    /* The message lists the job types from the one table the command policy
     * uses too (util/jobtype.h). */
    expect_preset_error("x", NULL, NULL, "(known: " SBX__JOB_TYPES_LIST ")", NULL);
    expect_preset_error("x", NULL, NULL,
                        "(known: repo.clone, repo.applyPatch, deps.install, verify.lint, verify.typecheck, "
                        "verify.test, verify.build, db.migrate)",
                        NULL);
    /* Only "install" is an alias: no other spelling of deps.install. */
    expect_preset_error("Install", NULL, NULL, "unknown job type 'Install'", NULL);
    expect_preset_error("deps", NULL, NULL, "unknown job type 'deps'", NULL);
    expect_preset_error("install ", NULL, NULL, "unknown job type 'install '", NULL);
}
END_TEST

/* Every job type of the shared table has a preset; the ones that need an
 * input say so instead of "unknown job type". */
START_TEST(test_netpolicy_preset_every_job_type)
{
    for (size_t i = 0; i < SBX__NJOB_TYPES; i++) {
        const char *job = sbx__job_type_name(i);
        sbx_netpolicy *n = np_new();
        sbx_status st = sbx_netpolicy_load_preset(n, job, 0, NULL, NULL);
        ck_assert_msg(!strstr(sbx_netpolicy_last_error(n), "unknown job type"), "%s: %s", job,
                      sbx_netpolicy_last_error(n));
        ck_assert_msg(st == SBX_OK || strstr(sbx_netpolicy_last_error(n), "missing"), "%s: %s", job,
                      sbx_netpolicy_last_error(n));
        sbx_netpolicy_free(n);
    }
    ck_assert_ptr_null(sbx__job_type_name(SBX__NJOB_TYPES));
}
END_TEST

/* "install", deps.install's name before 1.0, gives the same policy, and
 * its messages use the current name. */
START_TEST(test_netpolicy_preset_install_alias)
{
    const char *keys[1] = {"registry"};
    const char *values[1] = {"https://npm.example.com/"};
    sbx_netpolicy *a = np_new(), *b = np_new();
    char *ja, *jb;
    ck_assert_int_eq(sbx_netpolicy_load_preset(a, "install", 1, keys, values), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_load_preset(b, "deps.install", 1, keys, values), SBX_OK);
    ja = json_of(a);
    jb = json_of(b);
    ck_assert_str_eq(ja, jb);
    ck_assert_str_eq(ja, "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                         "\"repo.yarnpkg.com\",\"npm.example.com\"]}");
    sbx_free(ja);
    sbx_free(jb);
    sbx_netpolicy_free(a);
    sbx_netpolicy_free(b);
    expect_preset("install", NULL, NULL,
                  "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                  "\"repo.yarnpkg.com\"]}");
    expect_preset_error("install", "url", "https://npm.example.com/",
                        "deps.install: unknown input 'url' (deps.install takes only 'registry')", NULL);
    expect_preset_error("install", "registry", "ftp://npm.example.com/", "deps.install: input 'registry'", NULL);
}
END_TEST

START_TEST(test_netpolicy_preset_repo_clone_urls)
{
    static const char *const cases[][2] = {
        {"https://github.com/o/r.git", "\"allowedDomains\":[\"github.com\"]"},
        {"HTTPS://GitHub.com/o/r", "\"allowedDomains\":[\"github.com\"]"},
        {"http://git.example.com/r.git", "\"allowedDomains\":[\"git.example.com\"]"},
        {"https://x-access-token:ghp_SECRET@github.com/o/r.git", "\"allowedDomains\":[\"github.com\"]"},
        {"https://git.example.com:8443/r.git", "\"allowedDomains\":[\"git.example.com\"]"},
        {"ssh://git@gitlab.example.com:2222/o/r.git", "\"allowedDomains\":[\"gitlab.example.com\"]"},
        {"ssh://gitlab.example.com/o/r.git", "\"allowedDomains\":[\"gitlab.example.com\"]"},
        {"git+ssh://git@gitlab.example.com/o/r.git", "\"allowedDomains\":[\"gitlab.example.com\"]"},
        {"git://git.kernel.org/pub/scm/git/git.git", "\"allowedDomains\":[\"git.kernel.org\"]"},
        {"git@github.com:o/r.git", "\"allowedDomains\":[\"github.com\"]"},
        {"github.com:o/r.git", "\"allowedDomains\":[\"github.com\"]"},
        {"deploy@git.example.com:team/r.git", "\"allowedDomains\":[\"git.example.com\"]"},
        {"https://10.1.2.3/r.git", "\"allowedCIDRs\":[\"10.1.2.3/32\"]"},
        {"https://[2001:DB8::1]:8443/r.git", "\"allowedCIDRs\":[\"2001:db8::1/128\"]"},
        {"ssh://git@[2001:db8::2]/r.git", "\"allowedCIDRs\":[\"2001:db8::2/128\"]"},
        {"git@[2001:db8::5]:r.git", "\"allowedCIDRs\":[\"2001:db8::5/128\"]"},
        {"git@10.0.0.7:r.git", "\"allowedCIDRs\":[\"10.0.0.7/32\"]"},
        {"https://u:p/a?s#s@github.com/o/r.git", "\"allowedDomains\":[\"github.com\"]"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        char want[256];
        snprintf(want, sizeof want, "{\"mode\":\"custom\",%s}", cases[i][1]);
        expect_preset("repo.clone", "url", cases[i][0], want);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_repo_clone_rejects)
{
    static const char *const cases[][3] = {
        {"file:///srv/r.git", "local file: URL", NULL},
        {"FILE:///srv/r.git", "local file: URL", NULL},
        {"file:r.git", "local file: URL", NULL},
        {"ext::sh -c touch% /tmp/pwned", "remote helper", NULL},
        {"fd::3", "remote helper", NULL},
        {"https::github.com/o/r", "remote helper", NULL},
        {"/srv/r.git", "'/srv/r.git' is a local path", NULL},
        {"./r", "is a local path", NULL},
        {"../r", "is a local path", NULL},
        {"~/r", "is a local path", NULL},
        {"r.git", "'r.git' is a local path", NULL},
        {"dir/with:colon", "is a local path", NULL},
        {"C:/repo", "is a local path", NULL},
        {"https:///o/r.git", "'https:///o/r.git' has no host", NULL},
        {"https://u:SECRETPW@/o/r.git", "'https://***@/o/r.git' has no host", "SECRETPW"},
        {"git@:o/r.git", "has no host", NULL},
        {"git@github.com:", "no repository path", NULL},
        {"https://u:SECRETPW@github.com:0/o/r", "the port '0' is not a number from 1 to 65535", "SECRETPW"},
        {"https://u:SECRETPW@github.com:99999/o/r", "'https://***@github.com:99999/o/r': the port", "SECRETPW"},
        {"https://u:SECRETPW@github.com:/o/r", "the port '' is not", "SECRETPW"},
        {"ftp://u:SECRETPW@github.com/o/r", "the scheme 'ftp' is not one git clones over", "SECRETPW"},
        {"svn://u:SECRETPW@host.example.com/r", "the scheme 'svn'", "SECRETPW"},
        {"https://u:SECRETPW@github.com/o/r\n.git", "has a control character", "SECRETPW"},
        {"https://github.com\x01/o/r", "'https://github.com\\x01/o/r' has a control character", NULL},
        {"https://u:SECRETPW@localhost/o/r", "'localhost' is not a domain name", "SECRETPW"},
        {"https://u:SECRETPW@git_host.example.com/o/r", "'git_host.example.com' is not a domain name", "SECRETPW"},
        {"https://u:SECRETPW@*.github.com/o/r", "wildcards are not allowed here", "SECRETPW"},
        {"https://u:SECRETPW@[2001:db8::1/o/r", "a '[' without its ']'", "SECRETPW"},
        {"https://[10.0.0.1]/o/r", "'[10.0.0.1]' is not an IPv6 address in brackets", NULL},
        {"https://[fe80::1%25eth0]/o/r", "is not an IPv6 address", NULL},
        {"https://host.example.com:bad?token=SECRETPW", "'https://host.example.com:bad?...': the port 'bad'",
         "SECRETPW"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        expect_preset_error("repo.clone", "url", cases[i][0], cases[i][1], cases[i][2]);
        expect_preset_error("repo.clone", "url", cases[i][0], "repo.clone: input 'url': ", cases[i][2]);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_inputs_checked)
{
    const char *keys[2] = {"url", "url"}, *values[2] = {"https://a.example.com/r", "https://b.example.com/r"};
    const char *nk[1] = {NULL}, *nv[1] = {NULL}, *k1[1] = {"url"};
    sbx_netpolicy *n = np_new();

    expect_preset_error("repo.clone", NULL, NULL, "repo.clone: input 'url' (the repository to clone) is missing",
                        NULL);
    expect_preset_error("repo.clone", "uri", "https://github.com/o/r", "unknown input 'uri' (repo.clone takes only 'url')",
                        NULL);
    expect_preset_error("repo.clone", "url\x1b[31m", "x", "unknown input 'url\\x1b[31m'", NULL);
    expect_preset_error("repo.clone", "url", "", "input 'url' is empty", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "repo.clone", 2, keys, values), SBX_E_INVALID_ARG);
    expect_msg(n, "input 'url' is given twice", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "repo.clone", 1, nk, values), SBX_E_INVALID_ARG);
    expect_msg(n, "input 0: the key is NULL", NULL);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "repo.clone", 1, k1, nv), SBX_E_INVALID_ARG);
    expect_msg(n, "input 0: the value is NULL", NULL);
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_preset_input_length_limit)
{
    char *v = malloc(5000);
    ck_assert_ptr_nonnull(v);
    memset(v, 'a', 4999);
    v[4999] = '\0';
    memcpy(v, "https://a.example.com/", 22);
    expect_preset_error("repo.clone", "url", v, "input 'url' is longer than 4096 bytes", "aaaa");
    free(v);
}
END_TEST

START_TEST(test_netpolicy_preset_install)
{
    const char *keys[3] = {"registry", "registry", "registry"};
    const char *values[3] = {"https://npm.example.com:4873/", "http://10.0.0.9:8080/npm/",
                             "https://u:SECRET@npm.example.com/"};
    sbx_netpolicy *n = np_new();
    char *out;

    expect_preset("deps.install", NULL, NULL,
                  "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                  "\"repo.yarnpkg.com\"]}");
    expect_preset("deps.install", "registry", "https://NPM.pkg.example.com/",
                  "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                  "\"repo.yarnpkg.com\",\"npm.pkg.example.com\"]}");
    expect_preset("deps.install", "registry", "https://registry.npmjs.org/",
                  "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                  "\"repo.yarnpkg.com\"]}");
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "deps.install", 3, keys, values), SBX_OK);
    out = json_of(n);
    ck_assert_str_eq(out, "{\"mode\":\"custom\",\"allowedDomains\":[\"registry.npmjs.org\",\"registry.yarnpkg.com\","
                          "\"repo.yarnpkg.com\",\"npm.example.com\"],\"allowedCIDRs\":[\"10.0.0.9/32\"]}");
    ck_assert_ptr_null(strstr(out, "SECRET"));
    sbx_free(out);
    sbx_netpolicy_free(n);

    expect_preset_error("deps.install", "registry", "ftp://npm.example.com/", "is not an http:// or https:// URL", NULL);
    expect_preset_error("deps.install", "registry", "npm.example.com", "'npm.example.com' is not an http", NULL);
    expect_preset_error("deps.install", "registry", "https://u:SECRET@npm_x.example.com/", "'npm_x.example.com' is not",
                        "SECRET");
    expect_preset_error("deps.install", "registry", "https://u:SECRET@/", "'https://***@/' has no host", "SECRET");
    expect_preset_error("deps.install", "url", "https://npm.example.com/", "unknown input 'url' (deps.install takes only "
                                                                       "'registry')",
                        NULL);
}
END_TEST

START_TEST(test_netpolicy_preset_install_registry_limit)
{
    const char *keys[17], *values[17];
    char hosts[17][64];
    sbx_netpolicy *n = np_new();
    for (int i = 0; i < 17; i++) {
        snprintf(hosts[i], sizeof hosts[i], "https://r%d.example.com/", i);
        keys[i] = "registry";
        values[i] = hosts[i];
    }
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "deps.install", 16, keys, values), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "deps.install", 17, keys, values), SBX_E_INVALID_ARG);
    expect_msg(n, "more than 16 'registry' inputs", NULL);
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_preset_db_migrate_url)
{
    static const char *const cases[][2] = {
        {"postgres://admin:S3CRET@db.example.com:5432/app?sslmode=require", "\"allowedDomains\":[\"db.example.com\"]"},
        {"postgresql://db.example.com/app", "\"allowedDomains\":[\"db.example.com\"]"},
        {"postgresql://u:pa/ss?w#rd@db.example.com/app", "\"allowedDomains\":[\"db.example.com\"]"},
        {"postgresql://h1.example.com:5432,h2.example.com:5433/app",
         "\"allowedDomains\":[\"h1.example.com\",\"h2.example.com\"]"},
        {"postgresql+psycopg2://u:S3CRET@db.example.com/app", "\"allowedDomains\":[\"db.example.com\"]"},
        {"mysql://root:S3CRET@mysql.example.com:3306/app", "\"allowedDomains\":[\"mysql.example.com\"]"},
        {"mysql+pymysql://u@mysql.example.com/app", "\"allowedDomains\":[\"mysql.example.com\"]"},
        {"mariadb://u:S3CRET@maria.example.com/app", "\"allowedDomains\":[\"maria.example.com\"]"},
        {"mongodb://u:S3CRET@m1.example.com:27017,m2.example.com,10.0.0.3:27017/db?replicaSet=rs0",
         "\"allowedDomains\":[\"m1.example.com\",\"m2.example.com\"],\"allowedCIDRs\":[\"10.0.0.3/32\"]"},
        {"mongodb+srv://u:S3CRET@cluster0.ab12c.mongodb.net/?retryWrites=true",
         "\"allowedDomains\":[\"cluster0.ab12c.mongodb.net\",\"*.ab12c.mongodb.net\"]"},
        {"mongodb+srv://u:S3CRET@mongo.example/db", "\"allowedDomains\":[\"mongo.example\",\"*.mongo.example\"]"},
        {"redis://:S3CRET@10.0.0.5:6379/0", "\"allowedCIDRs\":[\"10.0.0.5/32\"]"},
        {"rediss://default:S3CRET@cache.example.com:6380", "\"allowedDomains\":[\"cache.example.com\"]"},
        {"postgres://u:S3CRET@[2001:db8::10]:5432/app", "\"allowedCIDRs\":[\"2001:db8::10/128\"]"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        char want[256];
        snprintf(want, sizeof want, "{\"mode\":\"custom\",%s}", cases[i][1]);
        expect_preset("db.migrate", "url", cases[i][0], want);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_db_migrate_url_rejects)
{
    static const char *const cases[][3] = {
        {"oracle://u:S3CRET@db.example.com/app", "'oracle://***@db.example.com/app': unknown database scheme 'oracle'",
         "S3CRET"},
        {"sqlite:///var/app.db", "local database file", NULL},
        {"file:app.db", "local database file", NULL},
        {"db.example.com:5432", "is not a database URL", NULL},
        {"u:S3CRET@db.example.com", "'***@db.example.com' is not a database URL", "S3CRET"},
        {"postgres://u:S3CRET@/app?host=/var/run/postgresql", "'postgres://***@/app?...' has no host", "S3CRET"},
        {"postgres://u:S3CRET@db.example.com:port/app", "the port 'port' is not a number", "S3CRET"},
        {"postgres://u:S3CRET@db.example.com:70000/app", "the port '70000'", "S3CRET"},
        {"postgres://u:S3CRET@h1.example.com,/app", "a ',' with no host after it", "S3CRET"},
        {"postgres://u:S3CRET@db/app", "'db' is not a domain name: it is a single-label name", "S3CRET"},
        {"postgres://u:S3CRET@localhost/app", "'localhost' is not a domain name", "S3CRET"},
        {"mongodb+srv://u:S3CRET@cluster0.example.net:27017/", "one host name, without a port", "S3CRET"},
        {"mongodb+srv://u:S3CRET@a.example.net,b.example.net/", "one host name", "S3CRET"},
        {"mongodb+srv://u:S3CRET@10.0.0.1/", "IP address", "S3CRET"},
        {"postgres://u:S3CRET@db.example.com/app\r\n", "has a control character", "S3CRET"},
        {"postgres://db.example.com/app?password=S3CRET&x=\x01", "has a control character", "S3CRET"},
        {"postgres://db_1.example.com/app?password=S3CRET", "'db_1.example.com' is not a domain name", "S3CRET"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        expect_preset_error("db.migrate", "url", cases[i][0], cases[i][1], cases[i][2]);
        expect_preset_error("db.migrate", "url", cases[i][0], "db.migrate: input 'url': ", cases[i][2]);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_db_migrate_host)
{
    static const char *const cases[][2] = {
        {"db.example.com", "\"allowedDomains\":[\"db.example.com\"]"},
        {"DB.Example.com:5432", "\"allowedDomains\":[\"db.example.com\"]"},
        {"10.0.0.5", "\"allowedCIDRs\":[\"10.0.0.5/32\"]"},
        {"10.0.0.5:5432", "\"allowedCIDRs\":[\"10.0.0.5/32\"]"},
        {"2001:db8::7", "\"allowedCIDRs\":[\"2001:db8::7/128\"]"},
        {"[2001:db8::7]", "\"allowedCIDRs\":[\"2001:db8::7/128\"]"},
        {"[2001:db8::7]:5432", "\"allowedCIDRs\":[\"2001:db8::7/128\"]"},
    };
    static const char *const bad_hosts[][3] = {
        {"u:S3CRET@db.example.com", "give the host alone", "S3CRET"},
        {"postgres://u:S3CRET@db.example.com/app", "a URL goes in input 'url'", "S3CRET"},
        {"db.example.com/app", "give the host alone", NULL},
        {"db", "'db' is not a domain name", NULL},
        {"db.example.com:0", "'db.example.com:0': the port '0'", NULL},
        {"db.example.com:abc", "the port 'abc'", NULL},
        {":5432", "no host", NULL},
        {"[2001:db8::7]x", "something other than ':port' follows the ']'", NULL},
        {"db.example.com\n", "'db.example.com\\x0a' has a control character", NULL},
        {"*.example.com", "wildcards are not allowed here", NULL},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        char want[256];
        snprintf(want, sizeof want, "{\"mode\":\"custom\",%s}", cases[i][1]);
        expect_preset("db.migrate", "host", cases[i][0], want);
    }
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad_hosts); i++) {
        expect_preset_error("db.migrate", "host", bad_hosts[i][0], bad_hosts[i][1], bad_hosts[i][2]);
        expect_preset_error("db.migrate", "host", bad_hosts[i][0], "db.migrate: input 'host': ", bad_hosts[i][2]);
    }
}
END_TEST

START_TEST(test_netpolicy_preset_db_migrate_inputs)
{
    const char *keys[2] = {"url", "host"}, *values[2] = {"postgres://db.example.com/app", "db.example.com"};
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_load_preset(n, "db.migrate", 2, keys, values), SBX_E_INVALID_ARG);
    expect_msg(n, "give input 'url' or 'host', not both", NULL);
    sbx_netpolicy_free(n);
    expect_preset_error("db.migrate", NULL, NULL, "input 'url' or 'host' (the database server) is missing", NULL);
    expect_preset_error("db.migrate", "database", "app", "unknown input 'database' (db.migrate takes 'url' or 'host')",
                        NULL);
}
END_TEST

START_TEST(test_netpolicy_preset_replaces_previous_policy)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "a.example.com", "authorization", "SECRET"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(n, "10.0.0.0/8"), SBX_OK);
    ck_assert_int_eq(preset1(n, "repo.clone", "url", "https://github.com/o/r"), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"github.com\"]}");
    ck_assert_int_eq(preset1(n, "verify.build", NULL, NULL), SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"deny-all\"}");
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- load_json -------------------------------------------------------------------- */

#define EXAMPLE_POLICY                                                                             \
    "{\"mode\":\"custom\",\"allowedDomains\":[\"*.pkgs.example.org\",\"github.com\"],"             \
    "\"allowedCIDRs\":[\"10.0.0.0/8\"],\"deniedCIDRs\":[\"10.1.0.0/16\"],"                         \
    "\"injectionRules\":[{\"domain\":\"ai-gateway.vercel.sh\",\"headers\":{\"authorization\":\"Bearer tok\"}}]}"

START_TEST(test_netpolicy_load_json_modes)
{
    expect_load("{\"mode\":\"allow-all\"}", "{\"mode\":\"allow-all\"}");
    expect_load("{ \"mode\" : \"deny-all\" }", "{\"mode\":\"deny-all\"}");
    expect_load("{\"mode\":\"custom\"}", "{\"mode\":\"custom\"}");
    expect_load("{\"mode\":\"custom\",\"allowedDomains\":[],\"allowedCIDRs\":[],\"deniedCIDRs\":[],"
                "\"injectionRules\":[]}",
                "{\"mode\":\"custom\"}");
}
END_TEST

START_TEST(test_netpolicy_load_json_protocol_example)
{
    /* §4.9's example, plus its rule domain appended to allowedDomains. */
    expect_load(EXAMPLE_POLICY,
                "{\"mode\":\"custom\",\"allowedDomains\":[\"*.pkgs.example.org\",\"github.com\","
                "\"ai-gateway.vercel.sh\"],\"allowedCIDRs\":[\"10.0.0.0/8\"],\"deniedCIDRs\":[\"10.1.0.0/16\"],"
                "\"injectionRules\":[{\"domain\":\"ai-gateway.vercel.sh\",\"headers\":{\"authorization\":"
                "\"Bearer tok\"}}]}");
    /* Field order in the text does not matter; normalisation and merging apply. */
    expect_load("{\"injectionRules\":[{\"headers\":{\"X-A\":\"1\",\"X-B\":\"2\"},\"domain\":\"API.example.com\"},"
                "{\"domain\":\"api.example.com\",\"headers\":{\"x-a\":\"3\"}}],"
                "\"deniedCIDRs\":[\"2001:DB8::/32\"],\"allowedDomains\":[\"Example.com.\",\"example.com\",\"*\"],"
                "\"mode\":\"custom\"}",
                "{\"mode\":\"custom\",\"allowedDomains\":[\"example.com\",\"*\",\"api.example.com\"],"
                "\"deniedCIDRs\":[\"2001:db8::/32\"],\"injectionRules\":[{\"domain\":\"api.example.com\","
                "\"headers\":{\"x-a\":\"3\",\"x-b\":\"2\"}}]}");
}
END_TEST

/* The shape the 2.x/3.x SDKs send ({"allow", "subnets"}) is read as the
 * API form it stands for. */
START_TEST(test_netpolicy_load_json_sdk_shape)
{
    sbx_netpolicy *n = np_new();
    expect_load("{\"allow\":[\"google.com\",\"ai-gateway.vercel.sh\"]}",
                "{\"mode\":\"custom\",\"allowedDomains\":[\"google.com\",\"ai-gateway.vercel.sh\"]}");
    expect_load("{\"allow\":[\"github.com\"],\"subnets\":{\"allow\":[\"10.0.0.0/8\"],\"deny\":[\"10.1.0.0/16\"]}}",
                "{\"mode\":\"custom\",\"allowedDomains\":[\"github.com\"],\"allowedCIDRs\":[\"10.0.0.0/8\"],"
                "\"deniedCIDRs\":[\"10.1.0.0/16\"]}");
    expect_load("{\"allow\":{\"api.example.com\":[{\"transform\":[{\"headers\":{\"x-api-key\":\"k\"}}]}]}}",
                "{\"mode\":\"custom\",\"allowedDomains\":[\"api.example.com\"],\"injectionRules\":"
                "[{\"domain\":\"api.example.com\",\"headers\":{\"x-api-key\":\"k\"}}]}");
    /* Refused by name: what it cannot represent, and what is not a policy. */
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"allow\":{\"x.com\":[{\"forwardURL\":\"https://p\"}]}}"),
                     SBX_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sbx_netpolicy_last_error(n), "forwardURL"));
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"allow\":[\"x.com\"],\"deny\":[]}"), SBX_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sbx_netpolicy_last_error(n), "networkPolicy.deny"));
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"allow\":[\"*.com\"]}"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"allow\":[1]}"), SBX_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sbx_netpolicy_last_error(n), "allow[0]"));
    /* A policy that failed left the previous one. */
    ck_assert_int_eq(sbx_netpolicy_mode(n), SBX_NETPOLICY_DENY_ALL);
    sbx_netpolicy_free(n);
}
END_TEST

START_TEST(test_netpolicy_load_json_round_trip)
{
    sbx_netpolicy *a = np_new(), *b = np_new();
    char *ja, *jb;
    ck_assert_int_eq(sbx_netpolicy_allow_domain(a, "*"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_domain(a, "*.Pkgs.example.org"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(a, "192.168.0.0/16"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_allow_cidr(a, "2001:db8::/48"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_deny_cidr(a, "192.168.1.0/24"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(a, "api.example.com", "Authorization", "Bearer \"q\" \\ \t x"),
                     SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(a, "api.example.com", "x-team", "t\xc3\xa9"), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_inject_header(a, "*.other.example.com", "x-key", "k"), SBX_OK);
    ja = json_of(a);
    ck_assert_int_eq(sbx_netpolicy_load_json(b, ja), SBX_OK);
    jb = json_of(b);
    ck_assert_str_eq(ja, jb);
    sbx_free(ja);
    sbx_free(jb);
    /* Each mode round-trips too. */
    for (int m = SBX_NETPOLICY_ALLOW_ALL; m <= SBX_NETPOLICY_CUSTOM; m++) {
        ck_assert_int_eq(sbx_netpolicy_set_mode(a, m), SBX_OK);
        ja = json_of(a);
        ck_assert_int_eq(sbx_netpolicy_load_json(b, ja), SBX_OK);
        ck_assert_int_eq(sbx_netpolicy_mode(b), m);
        jb = json_of(b);
        ck_assert_str_eq(ja, jb);
        sbx_free(ja);
        sbx_free(jb);
    }
    sbx_netpolicy_free(a);
    sbx_netpolicy_free(b);
}
END_TEST

START_TEST(test_netpolicy_load_json_field_errors)
{
    static const char *const cases[][2] = {
        {"{}", "mode: missing"},
        {"{\"allowedDomains\":[\"a.example.com\"]}", "mode: missing"},
        {"{\"mode\":null}", "mode: not a string"},
        {"{\"mode\":2}", "mode: not a string"},
        {"{\"mode\":\"allow\"}", "mode: unknown mode 'allow' (allow-all, deny-all or custom)"},
        {"{\"mode\":\"Custom\"}", "unknown mode 'Custom'"},
        {"{\"mode\":\"deny-all\",\"allowedDomains\":[]}", "allowedDomains: only a custom policy has lists, "
                                                          "and the mode is 'deny-all'"},
        {"{\"mode\":\"allow-all\",\"injectionRules\":[]}", "injectionRules: only a custom policy"},
        {"{\"mode\":\"custom\",\"extra\":1}", "unknown field 'extra' (mode, allowedDomains"},
        {"{\"mode\":\"custom\",\"allowedDomains\":\"a.example.com\"}", "allowedDomains: not an array"},
        {"{\"mode\":\"custom\",\"allowedCIDRs\":{}}", "allowedCIDRs: not an array"},
        {"{\"mode\":\"custom\",\"deniedCIDRs\":null}", "deniedCIDRs: not an array"},
        {"{\"mode\":\"custom\",\"injectionRules\":{}}", "injectionRules: not an array"},
        {"{\"mode\":\"custom\",\"allowedDomains\":[\"a.example.com\",\"b.example.com\",7]}",
         "allowedDomains[2]: not a string"},
        {"{\"mode\":\"custom\",\"allowedDomains\":[\"a.example.com\",\"localhost\"]}",
         "allowedDomains[1]: 'localhost' is not a domain name"},
        {"{\"mode\":\"custom\",\"allowedDomains\":[\"b\\u0000.example.com\"]}",
         "allowedDomains[0]: 'b\\x00.example.com' is not a domain name: it has a NUL byte"},
        {"{\"mode\":\"custom\",\"allowedCIDRs\":[\"10.0.0.0/8\",\"10.0.0.1/8\"]}",
         "allowedCIDRs[1]: '10.0.0.1/8' has host bits set: the network is 10.0.0.0/8"},
        {"{\"mode\":\"custom\",\"deniedCIDRs\":[\"10.0.0.0/8\\u0000\"]}", "deniedCIDRs[0]: '10.0.0.0/8\\x00' is not"},
        {"{\"mode\":\"custom\",\"injectionRules\":[7]}", "injectionRules[0]: not an object"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"headers\":{\"a\":\"b\"}}]}", "injectionRules[0].domain: missing"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":5,\"headers\":{\"a\":\"b\"}}]}",
         "injectionRules[0].domain: not a string"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\"}]}", "injectionRules[0].headers: missing"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{}}]}",
         "injectionRules[0].headers: not a non-empty object"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":[]}]}",
         "injectionRules[0].headers: not a non-empty object"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{\"x\":\"1\"}},"
         "{\"domain\":\"b.example.com\",\"headers\":{\"x-n\":5}}]}",
         "injectionRules[1].headers.x-n: not a string"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{\"bad name\":\"v\"}}]}",
         "injectionRules[0].headers.bad name: 'bad name' is not a header name"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"*\",\"headers\":{\"x\":\"v\"}}]}",
         "injectionRules[0].headers.x: a header for '*' would go to every domain"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{\"x\":\"v\"},"
         "\"extra\":true}]}",
         "injectionRules[0]: unknown field 'extra' (domain, headers)"},
        {"{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headerNames\":[\"authorization\"]}]}",
         "injectionRules[0]: 'headerNames' without 'headers' is a server's redacted echo"},
        {"[\"mode\",\"custom\"]", "not a network policy: the JSON is not an object"},
        {"\"allow-all\"", "not a network policy"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++)
        expect_load_error(cases[i][0], SBX_E_INVALID_ARG, cases[i][1], NULL);
}
END_TEST

START_TEST(test_netpolicy_load_json_header_values_never_shown)
{
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":"
                      "{\"authorization\":\"Bearer SECRET\\u0000x\"}}]}",
                      SBX_E_INVALID_ARG, "injectionRules[0].headers.authorization: the value of header "
                                         "'authorization' has a NUL byte",
                      "SECRET");
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":"
                      "{\"authorization\":\"Bearer SECRET\\r\\nx: y\"}}]}",
                      SBX_E_INVALID_ARG, "has a CR or LF", "SECRET");
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"bad domain\",\"headers\":"
                      "{\"authorization\":\"Bearer SECRET\"}}]}",
                      SBX_E_INVALID_ARG, "'bad domain' is not a domain name", "SECRET");
    /* jansson quotes the text near a syntax error: that part is cut. */
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":"
                      "{\"authorization\": Bearer SECRET}}]}",
                      SBX_E_PARSE, "not valid JSON: line 1, column", "SECRET");
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":"
                      "{\"authorization\":\"Bearer SECRET",
                      SBX_E_PARSE, "not valid JSON", "SECRET");
}
END_TEST

START_TEST(test_netpolicy_load_json_parse_errors)
{
    char *big;
    expect_load_error("", SBX_E_PARSE, "not valid JSON", NULL);
    expect_load_error("{\"mode\":", SBX_E_PARSE, "not valid JSON", NULL);
    expect_load_error("{\"mode\":\"custom\"} trailing", SBX_E_PARSE, "not valid JSON", NULL);
    expect_load_error("{\"mode\":\"custom\",\"mode\":\"allow-all\"}", SBX_E_PARSE, "duplicate object key", NULL);
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":{\"x\":\"1\","
                      "\"x\":\"2\"}}]}",
                      SBX_E_PARSE, "duplicate object key", NULL);
    /* jansson refuses a NUL in a key itself (one in a value is named by path). */
    expect_load_error("{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.example.com\",\"headers\":"
                      "{\"x\\u0000y\":\"v\"}}]}",
                      SBX_E_PARSE, "NUL byte in object key", NULL);
    big = malloc((1u << 20) + 64);
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', (1u << 20) + 10);
    memcpy(big, "{\"mode\":\"deny-all\"}", 19);
    big[(1u << 20) + 10] = '\0';
    expect_load_error(big, SBX_E_INVALID_ARG, "longer than 1048576 bytes", NULL);
    big[1u << 20] = '\0';
    expect_load(big, "{\"mode\":\"deny-all\"}");
    free(big);
}
END_TEST

START_TEST(test_netpolicy_load_json_replaces_and_failure_keeps)
{
    sbx_netpolicy *n = np_new();
    ck_assert_int_eq(sbx_netpolicy_load_json(n, EXAMPLE_POLICY), SBX_OK);
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"x.example.com\"]}"),
                     SBX_OK);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"x.example.com\"]}");
    /* The error is in the last entry: nothing of the earlier ones is kept. */
    ck_assert_int_eq(sbx_netpolicy_load_json(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"y.example.com\"],"
                                                "\"injectionRules\":[{\"domain\":\"y.example.com\",\"headers\":"
                                                "{\"host\":\"z\"}}]}"),
                     SBX_E_INVALID_ARG);
    expect_msg(n, "injectionRules[0].headers.host: the header 'host' cannot be injected", NULL);
    ASSERT_JSON(n, "{\"mode\":\"custom\",\"allowedDomains\":[\"x.example.com\"]}");
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- limits ----------------------------------------------------------------------- */

START_TEST(test_netpolicy_limits)
{
    sbx_netpolicy *n = np_new();
    char name[64];
    for (int i = 0; i < 4096; i++) {
        snprintf(name, sizeof name, "h%d.example.com", i);
        ck_assert_int_eq(sbx_netpolicy_allow_domain(n, name), SBX_OK);
    }
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "h0.example.com"), SBX_OK); /* duplicate: no growth */
    ck_assert_int_eq(sbx_netpolicy_allow_domain(n, "one-more.example.com"), SBX_E_INVALID_ARG);
    expect_msg(n, "too many allowed domains (at most 4096)", NULL);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "new.example.com", "x", "v"), SBX_E_INVALID_ARG);
    expect_msg(n, "too many allowed domains", NULL);
    ck_assert_int_eq(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_DENY_ALL), SBX_OK);
    for (int i = 0; i < 256; i++) {
        snprintf(name, sizeof name, "r%d.example.com", i);
        ck_assert_int_eq(sbx_netpolicy_inject_header(n, name, "x", "v"), SBX_OK);
    }
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "r256.example.com", "x", "v"), SBX_E_INVALID_ARG);
    expect_msg(n, "too many injection rules (at most 256)", NULL);
    for (int i = 1; i < 64; i++) {
        snprintf(name, sizeof name, "x-%d", i);
        ck_assert_int_eq(sbx_netpolicy_inject_header(n, "r0.example.com", name, "v"), SBX_OK);
    }
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "r0.example.com", "x-64", "v"), SBX_E_INVALID_ARG);
    expect_msg(n, "too many headers for 'r0.example.com' (at most 64)", NULL);
    ck_assert_int_eq(sbx_netpolicy_inject_header(n, "r0.example.com", "X-1", "replaced"), SBX_OK);
    sbx_netpolicy_free(n);
}
END_TEST

/* ---- allocation failures ---------------------------------------------------------- */

/* One mutating step under fault injection: if it fails for lack of memory,
 * the policy must read exactly as before it. */
#define STEP(call)                                                                                 \
    do {                                                                                           \
        char *before_ = NULL, *after_ = NULL;                                                      \
        sbx_status st_ = sbx_netpolicy_to_json(n, &before_);                                       \
        if (st_ == SBX_OK) {                                                                       \
            st_ = (call);                                                                          \
            if (st_ == SBX_E_NOMEM) {                                                              \
                ck_assert_int_eq(sbx_netpolicy_to_json(n, &after_), SBX_OK);                       \
                ck_assert_str_eq(before_, after_);                                                 \
                ck_assert_str_ne(sbx_netpolicy_last_error(n), "");                                 \
            }                                                                                      \
        }                                                                                          \
        sbx_free(before_);                                                                         \
        sbx_free(after_);                                                                          \
        if (st_ != SBX_OK) {                                                                       \
            sbx_netpolicy_free(n);                                                                 \
            return st_;                                                                            \
        }                                                                                          \
    } while (0)

static sbx_status build_and_write(void *ctx)
{
    const char *keys[2] = {"registry", "registry"};
    const char *values[2] = {"https://npm.example.com/", "https://10.0.0.4/"};
    sbx_netpolicy *n = sbx_netpolicy_new();
    char *out = NULL;
    sbx_status st;
    (void)ctx;
    if (!n)
        return SBX_E_NOMEM;
    STEP(sbx_netpolicy_load_preset(n, "deps.install", 2, keys, values));
    STEP(sbx_netpolicy_allow_domain(n, "*.pkgs.example.org"));
    STEP(sbx_netpolicy_allow_cidr(n, "10.0.0.0/8"));
    STEP(sbx_netpolicy_deny_cidr(n, "10.1.0.0/16"));
    STEP(sbx_netpolicy_inject_header(n, "api.example.com", "Authorization", "Bearer one"));
    STEP(sbx_netpolicy_inject_header(n, "api.example.com", "x-team", "t"));
    STEP(sbx_netpolicy_inject_header(n, "api.example.com", "authorization", "Bearer two"));
    STEP(sbx_netpolicy_inject_header(n, "b.example.com", "x-k", "k"));
    for (int i = 0; i < 12; i++) { /* past the first growth of each list */
        char d[32];
        snprintf(d, sizeof d, "d%d.example.com", i);
        STEP(sbx_netpolicy_allow_domain(n, d));
        STEP(sbx_netpolicy_inject_header(n, d, "x-i", d));
    }
    STEP(sbx_netpolicy_load_json(n, EXAMPLE_POLICY));
    STEP(preset1(n, "db.migrate", "url", "mongodb+srv://u:p@cluster0.ab12c.mongodb.net/db"));
    STEP(preset1(n, "repo.clone", "url", "git@github.com:o/r.git"));
    STEP(sbx_netpolicy_set_mode(n, SBX_NETPOLICY_ALLOW_ALL));
    STEP(sbx_netpolicy_load_json(n, EXAMPLE_POLICY));
    st = sbx_netpolicy_to_json(n, &out);
    if (st == SBX_OK) {
        ck_assert(strstr(out, "\"Bearer tok\"") != NULL);
        sbx_free(out);
    }
    sbx_netpolicy_free(n);
    return st;
}

START_TEST(test_netpolicy_out_of_memory_is_clean)
{
    ck_assert_int_gt(sbx_test_oom_loop(build_and_write, NULL), 0);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("netpolicy");
    TCase *tc = tcase_create("netpolicy");
    tcase_set_timeout(tc, 60);
    SBX_TEST_ADD(tc, test_netpolicy_new_is_deny_all);
    SBX_TEST_ADD(tc, test_netpolicy_null_arguments_are_errors);
    SBX_TEST_ADD(tc, test_netpolicy_success_clears_last_error);
    SBX_TEST_ADD(tc, test_netpolicy_set_mode);
    SBX_TEST_ADD(tc, test_netpolicy_mode_switch_drops_or_keeps_rules);
    SBX_TEST_ADD(tc, test_netpolicy_domain_accepted_and_normalised);
    SBX_TEST_ADD(tc, test_netpolicy_domain_length_limits);
    SBX_TEST_ADD(tc, test_netpolicy_domain_rejected);
    SBX_TEST_ADD(tc, test_netpolicy_domain_message_names_value_escaped);
    SBX_TEST_ADD(tc, test_netpolicy_domain_duplicates_added_once);
    SBX_TEST_ADD(tc, test_netpolicy_cidr_accepted_and_canonical);
    SBX_TEST_ADD(tc, test_netpolicy_cidr_rejected);
    SBX_TEST_ADD(tc, test_netpolicy_cidr_duplicates_and_lists_apart);
    SBX_TEST_ADD(tc, test_netpolicy_inject_header_allows_domain);
    SBX_TEST_ADD(tc, test_netpolicy_inject_header_merge_later_wins);
    SBX_TEST_ADD(tc, test_netpolicy_inject_header_names);
    SBX_TEST_ADD(tc, test_netpolicy_inject_header_values_never_shown);
    SBX_TEST_ADD(tc, test_netpolicy_inject_header_domain_rules);
    SBX_TEST_ADD(tc, test_netpolicy_to_json_escapes_values);
    SBX_TEST_ADD(tc, test_netpolicy_preset_deny_all_jobs);
    SBX_TEST_ADD(tc, test_netpolicy_preset_unknown_job_type);
    SBX_TEST_ADD(tc, test_netpolicy_preset_repo_clone_urls);
    SBX_TEST_ADD(tc, test_netpolicy_preset_repo_clone_rejects);
    SBX_TEST_ADD(tc, test_netpolicy_preset_inputs_checked);
    SBX_TEST_ADD(tc, test_netpolicy_preset_input_length_limit);
    SBX_TEST_ADD(tc, test_netpolicy_preset_install);
    SBX_TEST_ADD(tc, test_netpolicy_preset_install_alias);
    SBX_TEST_ADD(tc, test_netpolicy_preset_every_job_type);
    SBX_TEST_ADD(tc, test_netpolicy_preset_install_registry_limit);
    SBX_TEST_ADD(tc, test_netpolicy_preset_db_migrate_url);
    SBX_TEST_ADD(tc, test_netpolicy_preset_db_migrate_url_rejects);
    SBX_TEST_ADD(tc, test_netpolicy_preset_db_migrate_host);
    SBX_TEST_ADD(tc, test_netpolicy_preset_db_migrate_inputs);
    SBX_TEST_ADD(tc, test_netpolicy_preset_replaces_previous_policy);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_modes);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_protocol_example);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_sdk_shape);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_round_trip);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_field_errors);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_header_values_never_shown);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_parse_errors);
    SBX_TEST_ADD(tc, test_netpolicy_load_json_replaces_and_failure_keeps);
    SBX_TEST_ADD(tc, test_netpolicy_limits);
    SBX_TEST_ADD(tc, test_netpolicy_out_of_memory_is_clean);
    suite_add_tcase(s, tc);
    return s;
}
