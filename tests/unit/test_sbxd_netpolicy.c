/* SPDX-License-Identifier: MIT */
/* Unit tests for tools/sbxd/netpolicy.c: the policy's two request shapes,
 * and which requests a rule's match lets header injection reach. */
#include "harness.h"

#include <string.h>
#include <strings.h>

#include "netpolicy.h"

static struct netpolicy *parse(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    struct netpolicy *p;
    ck_assert_msg(j, "bad test JSON: %s", text);
    p = netpolicy_parse(j, err, errlen);
    json_decref(j);
    return p;
}

static struct netpolicy *parse_ok(const char *text)
{
    char err[512] = "";
    struct netpolicy *p = parse(text, err, sizeof err);
    ck_assert_msg(p, "%s: %s", text, err);
    return p;
}

/* The value injected for header name into the request (NULL: none). */
static char got[256];
static const char *injected(const struct netpolicy *p, const char *host, const char *method, const char *target,
                            const char *headers, const char *name)
{
    struct np_req req = {method, target, headers, strlen(headers)};
    char **names, **values;
    size_t n = netpolicy_inject_for(p, host, &req, &names, &values);
    const char *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!strcasecmp(names[i], name)) {
            snprintf(got, sizeof got, "%s", values[i]);
            found = got;
        }
        free(names[i]);
        free(values[i]);
    }
    free(names);
    free(values);
    return found;
}

START_TEST(test_v2_shape_translates)
{
    struct netpolicy *p = parse_ok("{\"allow\":{\"api.example.com\":[{\"transform\":[{\"headers\":{\"Authorization\":"
                                   "\"Bearer k\"}}]}],\"*.cdn.org\":[]},\"subnets\":{\"allow\":[\"10.1.0.0/16\"],"
                                   "\"deny\":[\"10.0.0.0/8\"]}}");
    json_t *echo = netpolicy_json(p);
    ck_assert_int_eq(p->mode, NP_CUSTOM);
    ck_assert_uint_eq(p->ndomains, 2);
    ck_assert(netpolicy_domain_allowed(p, "a.cdn.org"));
    ck_assert(!netpolicy_domain_allowed(p, "other.org"));
    ck_assert_uint_eq(p->nallow, 1);
    ck_assert_uint_eq(p->ndeny, 1);
    ck_assert_str_eq(json_string_value(json_object_get(echo, "mode")), "custom");
    /* the echo names headers, never their values */
    {
        char *text = json_dumps(echo, 0);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(!strstr(text, "Bearer k"), "the echo holds a header value: %s", text);
        free(text);
    }
    ck_assert_str_eq(injected(p, "api.example.com", "GET", "/", "", "authorization"), "Bearer k");
    ck_assert_ptr_null(injected(p, "a.cdn.org", "GET", "/", "", "authorization"));
    json_decref(echo);
    netpolicy_free(p);

    p = parse_ok("{\"allow\":[\"a.com\",\"*\"]}");
    ck_assert(netpolicy_domain_allowed(p, "anything.net"));
    netpolicy_free(p);
    p = parse_ok("{\"mode\":\"deny-all\"}");
    ck_assert_int_eq(p->mode, NP_DENY_ALL);
    netpolicy_free(p);
}
END_TEST

START_TEST(test_refusals_name_the_rule)
{
    static const char *const bad[][2] = {
        {"{\"allow\":{\"a.com\":[{\"forwardURL\":\"https://p.example/\"}]}}", "forwardURL"},
        {"{\"allow\":{\"a.com\":[{\"response\":{\"statusCode\":403}}]}}", "response"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[],\"forwardURL\":\"https://p/\"}]}}", "exactly one"},
        {"{\"allow\":{\"a.com\":[{\"match\":{\"path\":{\"exact\":\"/\"}}}]}}", "exactly one"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[{\"headers\":{\"x\":\"y\"}}],\"extra\":1}]}}", "exactly one"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[{\"headers\":{\"x\":\"y\"}}],\"match\":{\"path\":{\"regex\":\"(\"}}}]}}",
         "match.path.regex"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[],\"match\":{\"path\":{\"exact\":\"/\",\"regex\":\"x\"}}}]}}",
         "match.path"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[],\"match\":{\"verb\":[\"GET\"]}}]}}", "verb"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[],\"match\":{\"method\":[]}}]}}", "method"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[],\"match\":{\"headers\":[{}]}}]}}", "headers[0]"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[{\"headers\":{\"bad name\":\"v\"}}]}]}}", "bad name"},
        {"{\"allow\":{\"a.com\":[{\"transform\":[{\"headers\":{\"x\":\"a\\r\\nInjected: 1\"}}]}]}}", "line breaks"},
        {"{\"allow\":\"a.com\"}", "allow"},
        {"{\"allow\":[\"a.com\"],\"subnets\":{\"allow\":[\"nope\"]}}", "nope"},
        {"{\"allow\":[\"a.com\"],\"subnets\":{\"other\":[]}}", "subnets"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        struct netpolicy *p = parse(bad[i][0], err, sizeof err);
        ck_assert_msg(!p, "accepted: %s", bad[i][0]);
        ck_assert_msg(strstr(err, bad[i][1]), "%s: message '%s' does not name '%s'", bad[i][0], err, bad[i][1]);
    }
}
END_TEST

/* A policy injecting X-Key on a.com requests that pass MATCH. */
static struct netpolicy *with_match(const char *match)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"allow\":{\"a.com\":[{\"match\":%s,\"transform\":[{\"headers\":{\"X-Key\":\"secret\"}}]}]}}", match);
    return parse_ok(text);
}

START_TEST(test_match_path)
{
    struct netpolicy *p = with_match("{\"path\":{\"startsWith\":\"/v1/models\"}}");
    ck_assert(netpolicy_intercepts(p, "a.com"));
    ck_assert_str_eq(injected(p, "a.com", "GET", "/v1/models", "", "x-key"), "secret");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/v1/models/gpt?x=1", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/other", "", "x-key"));
    ck_assert_ptr_null(injected(p, "b.com", "GET", "/v1/models", "", "x-key"));
    /* paths an upstream may resolve elsewhere: never */
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models/../admin", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models/./x", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models/%2e%2e/admin", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models%2F..%2Fadmin", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models\\..\\admin", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/v1/models/%zz", "", "x-key"));
    /* other escapes are decoded before the test */
    ck_assert_str_eq(injected(p, "a.com", "GET", "/v1/%6dodels", "", "x-key"), "secret");
    /* no request known (the CONNECT): a rule with a match does not apply */
    {
        char **n, **v;
        ck_assert_uint_eq(netpolicy_inject_for(p, "a.com", NULL, &n, &v), 0);
        free(n);
        free(v);
    }
    netpolicy_free(p);

    p = with_match("{\"path\":{\"exact\":\"/health\"}}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/health", "", "x-key"), "secret");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/health?verbose", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/healthz", "", "x-key"));
    netpolicy_free(p);

    p = with_match("{\"path\":{\"regex\":\"^/repos/[^/]+/(issues|pulls)$\"}}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/repos/x/pulls", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/repos/x/y/pulls", "", "x-key"));
    netpolicy_free(p);
    /* RE2 syntax PCRE2 reads: \d, non-capturing groups, lazy repeats */
    p = with_match("{\"path\":{\"regex\":\"^/v(?:\\\\d+)/.*?x$\"}}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/v12/abx", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/vx/abx", "", "x-key"));
    netpolicy_free(p);
    /* a pattern that backtracks without end fails to match, quickly */
    p = with_match("{\"path\":{\"regex\":\"^/(a+)+$\"}}");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
                                "", "x-key"));
    netpolicy_free(p);
}
END_TEST

START_TEST(test_match_method_query_headers)
{
    struct netpolicy *p = with_match("{\"method\":[\"POST\",\"PUT\"]}");
    ck_assert_str_eq(injected(p, "a.com", "POST", "/", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "post", "/", "", "x-key"));
    netpolicy_free(p);

    p = with_match("{\"queryString\":[{\"key\":{\"exact\":\"scope\"},\"value\":{\"startsWith\":\"read\"}},"
                   "{\"key\":{\"exact\":\"v\"}}]}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/x?v=2&scope=read%3Aall", "", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/x?scope=read", "", "x-key"));        /* v missing */
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/x?v&scope=write", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/x", "", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/x?v=1&scope=read%G0", "", "x-key")); /* bad escape */
    netpolicy_free(p);

    p = with_match("{\"headers\":[{\"key\":{\"exact\":\"x-tenant\"},\"value\":{\"regex\":\"^t-[0-9]+$\"}}]}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/", "Host: a.com\r\nX-Tenant:  t-42 \r\n", "x-key"), "secret");
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/", "Host: a.com\r\nX-Tenant: t-x\r\n", "x-key"));
    ck_assert_ptr_null(injected(p, "a.com", "GET", "/", "Host: a.com\r\n", "x-key"));
    netpolicy_free(p);

    /* every dimension given must pass; rules apply in order, later ones
     * overwriting earlier ones' headers */
    p = parse_ok("{\"allow\":{\"a.com\":[{\"transform\":[{\"headers\":{\"X-Key\":\"base\"}}]},"
                 "{\"match\":{\"method\":[\"GET\"],\"path\":{\"startsWith\":\"/admin\"}},"
                 "\"transform\":[{\"headers\":{\"X-Key\":\"admin\"}}]}]}}");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/admin/x", "", "x-key"), "admin");
    ck_assert_str_eq(injected(p, "a.com", "POST", "/admin/x", "", "x-key"), "base");
    ck_assert_str_eq(injected(p, "a.com", "GET", "/", "", "x-key"), "base");
    {
        json_t *echo = netpolicy_json(p);
        json_t *rules = json_object_get(echo, "injectionRules");
        ck_assert_uint_eq(json_array_size(rules), 2);
        ck_assert_ptr_nonnull(json_object_get(json_array_get(rules, 1), "match"));
        ck_assert_ptr_null(json_object_get(json_array_get(rules, 1), "headers"));
        json_decref(echo);
    }
    netpolicy_free(p);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_netpolicy");
    TCase *tc = tcase_create("netpolicy");
    tcase_add_test(tc, test_v2_shape_translates);
    tcase_add_test(tc, test_refusals_name_the_rule);
    tcase_add_test(tc, test_match_path);
    tcase_add_test(tc, test_match_method_query_headers);
    suite_add_tcase(s, tc);
    return s;
}
