/* SPDX-License-Identifier: MIT */
/*
 * egress: custom network policies, enforced by sbxd's proxy at 127.0.0.1:3128
 * inside isolated sandboxes. The target is an HTTP server on the host's
 * 127.0.0.1; commands fetch it with python3's urllib, which uses the
 * http_proxy sbxd sets. sbxd also sets no_proxy=127.0.0.1 (the sandbox's own
 * loopback), so these commands clear no_proxy to send host-loopback requests
 * through the proxy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* CONNECT through the proxy, then a plain request in the tunnel. */
#define PY_TUNNEL                                                                              \
    "import sys, http.client\n"                                                               \
    "try:\n"                                                                                  \
    "    c = http.client.HTTPConnection('127.0.0.1', 3128, timeout=15)\n"                     \
    "    c.set_tunnel(sys.argv[1], int(sys.argv[2]))\n"                                       \
    "    c.request('GET', '/')\n"                                                             \
    "    r = c.getresponse()\n"                                                               \
    "    print('STATUS', r.status)\n"                                                         \
    "    print(r.read().decode())\n"                                                          \
    "except Exception as e:\n"                                                                \
    "    print('ERROR', type(e).__name__, e)\n"

static json_t *policy_sandbox_body(json_t *policy)
{
    return jpack("{s:o}", "networkPolicy", policy);
}

/* Fetch http://HOST:PORT/ from the sandbox through its proxy settings. */
static struct cmd_result *fetch(struct sbxd *d, const char *sid, const char *host, int port)
{
    char url[128];
    snprintf(url, sizeof url, "http://%s:%d/", host, port);
    return sbxd_run(d, sid, jpack("{s:s,s:[s,s,s],s:{s:s,s:s}}", "command", "python3", "args", "-c", PY_FETCH, url,
                                 "env", "no_proxy", "", "NO_PROXY", ""));
}

static void expect_reachable(struct sbxd *d, const char *sid, struct host_server *hs, const char *host)
{
    int before = hs->hits;
    struct cmd_result *c = fetch(d, sid, host, hs->port);
    ck_assert_msg(contains(c->out, "STATUS 200") && contains(c->out, hs->body), "%s:%d should be reachable: %s%s",
                  host, hs->port, c->out, c->err);
    ck_assert_int_gt(hs->hits, before);
    cmd_result_free(c);
}

static void expect_refused(struct sbxd *d, const char *sid, struct host_server *hs, const char *host)
{
    int before = hs->hits;
    struct cmd_result *c = fetch(d, sid, host, hs->port);
    ck_assert_msg(contains(c->out, "STATUS 403"), "%s:%d should be refused by the proxy with 403: %s%s", host,
                  hs->port, c->out, c->err);
    ck_assert_msg(!contains(c->out, hs->body), "the host server answered: %s", c->out);
    ck_assert_msg(hs->hits == before, "the host server saw the refused request");
    cmd_result_free(c);
}

START_TEST(test_sbxd_egress_allowed_cidr_reachable)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-ok");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs",
                                                        "127.0.0.1/32")));
    char port[16];
    struct cmd_result *c;

    expect_reachable(d, sid, hs, "127.0.0.1");
    /* CONNECT tunnels too. */
    snprintf(port, sizeof port, "%d", hs->port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_TUNNEL, "127.0.0.1", port));
    ck_assert_msg(contains(c->out, "STATUS 200") && contains(c->out, "egress-ok"), "CONNECT: %s%s", c->out, c->err);
    cmd_result_free(c);
    /* Still no direct route: only the proxy leads out. */
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_CONNECT, "127.0.0.1", port));
    ck_assert_msg(contains(c->out, "REFUSED"), "direct connection from an isolated sandbox: %s", c->out);
    cmd_result_free(c);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_localhost_domain_refused)
{
    /* An allowed name that resolves to loopback is not enough: loopback
     * needs an explicit CIDR. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-localhost");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s,s:[s]}", "mode", "custom", "allowedDomains",
                                                        "localhost")));
    char port[16];
    struct cmd_result *c;

    expect_refused(d, sid, hs, "localhost");
    expect_refused(d, sid, hs, "127.0.0.1");
    snprintf(port, sizeof port, "%d", hs->port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_TUNNEL, "localhost", port));
    ck_assert_msg(contains(c->out, "403") && !contains(c->out, "egress-localhost"), "CONNECT localhost: %s", c->out);
    cmd_result_free(c);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_deny_all_refused)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-deny");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s}", "mode", "deny-all")));
    char port[16];
    struct cmd_result *c;

    expect_refused(d, sid, hs, "127.0.0.1");
    expect_refused(d, sid, hs, "localhost");
    snprintf(port, sizeof port, "%d", hs->port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_TUNNEL, "127.0.0.1", port));
    ck_assert_msg(contains(c->out, "403") && !contains(c->out, "egress-deny"), "CONNECT: %s", c->out);
    cmd_result_free(c);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_denied_cidr_wins)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-denied");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s,s:[s],s:[s],s:[s]}", "mode", "custom", "allowedCIDRs",
                                                        "127.0.0.0/8", "deniedCIDRs", "127.0.0.1/32",
                                                        "allowedDomains", "localhost")));

    expect_refused(d, sid, hs, "127.0.0.1");
    expect_refused(d, sid, hs, "localhost");
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_policy_update_applies_live)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-live");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s}", "mode", "deny-all")));
    struct http_resp *r;

    expect_refused(d, sid, hs, "127.0.0.1");
    r = http_post(d, jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs", "127.0.0.1/32"),
                  "/v1/sandboxes/%s/network-policy", sid);
    expect_status(r, 200);
    http_resp_free(r);
    expect_reachable(d, sid, hs, "127.0.0.1");
    r = http_post(d, jpack("{s:s,s:[s],s:[s]}", "mode", "custom", "allowedCIDRs", "127.0.0.1/32", "deniedCIDRs",
                           "127.0.0.0/8"),
                  "/v1/sandboxes/%s/network-policy", sid);
    expect_status(r, 200);
    http_resp_free(r);
    expect_refused(d, sid, hs, "127.0.0.1");
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_proxy_env_only_when_isolated)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *iso = sbx_create(d, policy_sandbox_body(jpack("{s:s}", "mode", "deny-all")));
    char *host = sbx_create(d, NULL);
    struct cmd_result *c;

    c = sbx_sh(d, iso, "env");
    ck_assert_msg(contains(c->out, "http_proxy=http://127.0.0.1:3128\n") &&
                      contains(c->out, "https_proxy=http://127.0.0.1:3128\n") &&
                      contains(c->out, "HTTPS_PROXY=http://127.0.0.1:3128\n"),
                  "isolated sandbox env: %s", c->out);
    cmd_result_free(c);
    c = sbx_sh(d, host, "env");
    ck_assert_msg(!contains(c->out, "_proxy=") && !contains(c->out, "_PROXY="), "allow-all sandbox env: %s", c->out);
    cmd_result_free(c);
    free(iso);
    free(host);
    sbxd_stop(d);
}
END_TEST

static const char *const bad_policies[] = {
    "{\"mode\":\"custom\",\"allowedCIDRs\":[\"10.0.0.0/33\"]}",
    "{\"mode\":\"custom\",\"allowedCIDRs\":[\"not-a-cidr\"]}",
    "{\"mode\":\"custom\",\"deniedCIDRs\":[\"300.1.2.3/8\"]}",
    "{\"mode\":\"custom\",\"allowedCIDRs\":[\"10.0.0.0/\"]}",
    "{\"mode\":\"custom\",\"allowedDomains\":[\"exa mple.com\"]}",
    "{\"mode\":\"custom\",\"allowedDomains\":[\"*foo.com\"]}",
    "{\"mode\":\"custom\",\"allowedDomains\":[\"-bad-.com\"]}",
    "{\"mode\":\"custom\",\"allowedDomains\":[\"a..b\"]}",
    "{\"mode\":\"custom\",\"allowedDomains\":\"example.com\"}",
    "{\"mode\":\"custom\",\"allowedDomains\":[5]}",
    "{\"mode\":\"allow-some\"}",
    "{\"mode\":5}",
    "{}",
    /* Injection rules that could not be applied as given: a value that would
     * split the request head, a name that is not an HTTP token, no domain. */
    ("{\"mode\":\"custom\",\"allowedDomains\":[\"ai-gateway.vercel.sh\"],\"injectionRules\":"
    "[{\"domain\":\"ai-gateway.vercel.sh\",\"headers\":{\"authorization\":\"Bearer x\\r\\nX-Evil: 1\"}}]}"),
    "{\"mode\":\"custom\",\"injectionRules\":[{\"domain\":\"a.com\",\"headers\":{\"a b\":\"v\"}}]}",
    "{\"mode\":\"custom\",\"injectionRules\":[{\"headers\":{\"k\":\"v\"}}]}",
    "{\"mode\":\"custom\",\"injectionRules\":{\"domain\":\"a.com\"}}",
};

START_TEST(test_sbxd_egress_invalid_policy_at_create)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;

    for (size_t i = 0; i < sizeof bad_policies / sizeof bad_policies[0]; i++) {
        char body[1024];
        snprintf(body, sizeof body, "{\"projectId\":\"prj_bad\",\"networkPolicy\":%s}", bad_policies[i]);
        r = http_post_text(d, body, "/v1/sandboxes");
        ck_assert_msg(r->status == 400, "create with %s: expected 400, got %ld: %s", bad_policies[i], r->status,
                      r->body);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
    }
    r = http_get(d, "/v1/sandboxes?project=prj_bad");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 0);
    http_resp_free(r);
    /* Valid: empty injectionRules, IPv6 ranges, wildcard domains, "*". */
    r = http_post_text(d,
                       "{\"networkPolicy\":{\"mode\":\"custom\",\"allowedDomains\":[\"*.Example.org\",\"*\"],"
                       "\"allowedCIDRs\":[\"fd00::/8\",\"10.0.0.1\"],\"injectionRules\":[]}}",
                       "/v1/sandboxes");
    expect_status(r, 200);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_egress_invalid_policy_at_update)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    json_t *good = jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs", "10.0.0.0/8");
    char *sid = sbx_create(d, policy_sandbox_body(json_incref(good)));
    struct http_resp *r;
    json_t *s;

    for (size_t i = 0; i < sizeof bad_policies / sizeof bad_policies[0]; i++) {
        r = http_post_text(d, bad_policies[i], "/v1/sandboxes/%s/network-policy", sid);
        ck_assert_msg(r->status == 400, "update to %s: expected 400, got %ld: %s", bad_policies[i], r->status,
                      r->body);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
    }
    /* The policy in force did not change. */
    s = sbx_get_sandbox(d, sid);
    ck_assert_msg(json_equal(json_object_get(s, "networkPolicy"), good), "policy changed by refused updates");
    json_decref(s);
    json_decref(good);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* Each connection to the proxy costs sbxd a thread and a descriptor, which
 * the sandbox's limits do not count: a sandbox (deny-all, no sudo) that
 * opens hundreds and sends nothing has those past RELAY_CONNS_MAX (512)
 * closed at once, and sbxd keeps answering. */
START_TEST(test_sbxd_egress_proxy_connections_capped)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s}", "mode", "deny-all")));
    struct cmd_result *c;
    struct http_resp *r;
    int closed = -1;

    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c",
                               "import socket, select, time\n"
                               "socks = [socket.create_connection(('127.0.0.1', 3128), timeout=5) for _ in range(700)]\n"
                               "time.sleep(2)\n"
                               "closed = 0\n"
                               "for s in socks:\n"
                               "    if select.select([s], [], [], 0)[0] and s.recv(1) == b'':\n"
                               "        closed += 1\n"
                               "print('closed', closed)\n"));
    ck_assert_msg(sscanf(c->out, "closed %d", &closed) == 1, "%s%s", c->out, c->err);
    /* 700 - 512, less those a thread had already finished with */
    ck_assert_msg(closed >= 150, "only %d of 700 idle proxy connections were closed: %s", closed, c->out);
    cmd_result_free(c);
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* The Host line upstream is the URL's, which the policy judged, not one
 * the sandbox wrote (another site on the same address). */
START_TEST(test_sbxd_egress_host_line_is_the_urls)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct host_server *hs = host_server_start("egress-host");
    char *sid = sbx_create(d, policy_sandbox_body(jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs",
                                                        "127.0.0.1/32")));
    char port[16], want[64];
    struct cmd_result *c;

    snprintf(port, sizeof port, "%d", hs->port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s]}", "command", "python3", "args", "-c",
                               "import socket, sys\n"
                               "s = socket.create_connection(('127.0.0.1', 3128))\n"
                               "s.sendall(('GET http://127.0.0.1:%s/x HTTP/1.1\\r\\nHost: secret.test\\r\\n'\n"
                               "           'X-Probe: 1\\r\\n\\r\\n' % sys.argv[1]).encode())\n"
                               "print(s.recv(4096).decode(errors='replace').split('\\r\\n')[0])\n",
                               port));
    ck_assert_msg(contains(c->out, "200"), "%s%s", c->out, c->err);
    cmd_result_free(c);
    snprintf(want, sizeof want, "Host: 127.0.0.1:%d\r\n", hs->port);
    ck_assert_msg(contains(hs->last_head, want) && !contains(hs->last_head, "secret.test") &&
                      contains(hs->last_head, "X-Probe: 1"),
                  "the upstream got: %s", hs->last_head);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_egress");
    TCase *tc = sbx_tcase("egress", 120);
    tcase_add_test(tc, test_sbxd_egress_allowed_cidr_reachable);
    tcase_add_test(tc, test_sbxd_egress_localhost_domain_refused);
    tcase_add_test(tc, test_sbxd_egress_deny_all_refused);
    tcase_add_test(tc, test_sbxd_egress_denied_cidr_wins);
    tcase_add_test(tc, test_sbxd_egress_policy_update_applies_live);
    tcase_add_test(tc, test_sbxd_egress_proxy_env_only_when_isolated);
    tcase_add_test(tc, test_sbxd_egress_invalid_policy_at_create);
    tcase_add_test(tc, test_sbxd_egress_invalid_policy_at_update);
    tcase_add_test(tc, test_sbxd_egress_proxy_connections_capped);
    tcase_add_test(tc, test_sbxd_egress_host_line_is_the_urls);
    suite_add_tcase(s, tc);
    return s;
}
