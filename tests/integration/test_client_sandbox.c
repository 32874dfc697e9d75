/* SPDX-License-Identifier: MIT */
/* client_sandbox: sbx_sandbox configuration and lifecycle, and sbx_snapshot, against sbxd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_it.h"

static json_t *parse_ok(const char *text)
{
    json_error_t e;
    json_t *j;
    ck_assert_ptr_nonnull(text);
    j = json_loads(text, 0, &e);
    ck_assert_msg(j != NULL, "not JSON: %s: %s", e.text, text);
    return j;
}

START_TEST(test_client_sandbox_create_with_options)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c), *g;
    int port = free_port();
    json_t *j;

    /* Before creation the getters say "unknown". */
    ck_assert_ptr_null(sbx_sandbox_id(s));
    ck_assert_ptr_null(sbx_sandbox_status(s));
    ck_assert_ptr_null(sbx_sandbox_json(s));
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), -1);
    ck_assert_int_eq(sbx_sandbox_created_at(s), -1);
    ck_assert_int_eq(sbx_sandbox_vcpus(s), 0);

    ok_s(sbx_sandbox_set_runtime(s, "python3.13"), s);
    ok_s(sbx_sandbox_set_timeout_ms(s, 600000), s);
    ok_s(sbx_sandbox_set_vcpus(s, 1), s);
    ok_s(sbx_sandbox_add_port(s, (uint32_t)port), s);
    /* as many ports as the protocol allows: 15 in v2, 4 in v1 */
    for (uint32_t p = 4001; p < (it_v2() ? 4015u : 4004u); p++)
        ok_s(sbx_sandbox_add_port(s, p), s);
    ok_s(sbx_sandbox_set_env(s, "GREETING", "hello from env"), s);
    ok_s(sbx_sandbox_set_env(s, "DROPPED", "x"), s);
    ok_s(sbx_sandbox_set_env(s, "DROPPED", NULL), s);
    ok_s(sbx_sandbox_set_network_policy_json(s, "{\"mode\":\"deny-all\"}"), s);
    ok_s(sbx_sandbox_create(s), s);

    /* The runtime sbxd answered: the python3 the sandbox really runs (the
     * host's), whatever was asked for. */
    {
        char *real = it_sh_out(s, "python3 -c 'import sys; print(\"python%d.%d\" % sys.version_info[:2], end=\"\")'");
        ck_assert_str_eq(sbx_sandbox_runtime(s), real);
        free(real);
    }
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 600000);
    ck_assert_int_eq(sbx_sandbox_vcpus(s), 1);
    ck_assert_int_eq(sbx_sandbox_memory_mb(s), 2048);
    ck_assert_str_eq(sbx_sandbox_region(s), "local");
    ck_assert(sbx_sandbox_created_at(s) > 1700000000000LL);
    ck_assert(strcmp(sbx_sandbox_status(s), "running") == 0 || strcmp(sbx_sandbox_status(s), "pending") == 0);
    ck_assert_ptr_nonnull(sbx_sandbox_route_url(s, (uint32_t)port));
    for (uint32_t p = 4001; p < (it_v2() ? 4015u : 4004u); p++)
        ck_assert_msg(sbx_sandbox_route_url(s, p) != NULL, "no route for port %u", p);
    ck_assert_ptr_null(sbx_sandbox_route_url(s, 1));
    j = parse_ok(sbx_sandbox_network_policy_json(s));
    ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "deny-all");
    json_decref(j);
    j = parse_ok(sbx_sandbox_json(s));
    /* the answer as received: v1 {sandbox}, 2.x {sandbox (the named one), session} */
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, it_v2() ? "session" : "sandbox"), "id")),
                     sbx_sandbox_id(s));
    json_decref(j);
    expect_sh_out(s, "echo \"$GREETING|${DROPPED-unset}\"", "hello from env|unset\n");

    /* Configuration is for creation only. */
    expect_st(sbx_sandbox_set_runtime(s, "node22"), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_add_port(s, 9), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_create(s), SBX_E_MISUSE, sbx_sandbox_last_error, s);

    /* Another handle attaches by id and sees the same. */
    g = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_fetch(g, sbx_sandbox_id(s)), g);
    ck_assert_str_eq(sbx_sandbox_id(g), sbx_sandbox_id(s));
    ck_assert_str_eq(sbx_sandbox_runtime(g), sbx_sandbox_runtime(s));
    ck_assert_ptr_nonnull(sbx_sandbox_route_url(g, (uint32_t)port));
    /* Bound: another id is refused; the same id refreshes. */
    expect_st(sbx_sandbox_fetch(g, "sbx_other"), SBX_E_MISUSE, sbx_sandbox_last_error, g);
    ok_s(sbx_sandbox_fetch(g, sbx_sandbox_id(s)), g);
    sbx_sandbox_free(g);

    ok_s(sbx_sandbox_stop(s), s);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_sandbox_bad_configuration)
{
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s = sbx_sandbox_new(c);
    ck_assert_ptr_null(sbx_sandbox_new(NULL));
    expect_st(sbx_sandbox_set_timeout_ms(s, -1), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_vcpus(s, 65), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_add_port(s, 0), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_add_port(s, 70000), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    /* 15 ports in v2; 4 in v1 */
    ok_c(sbx_client_set_option(c, "protocol", "v2"), c);
    for (uint32_t p = 3000; p < 3015; p++)
        ok_s(sbx_sandbox_add_port(s, p), s);
    expect_st(sbx_sandbox_add_port(s, 3000), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "twice"));
    expect_st(sbx_sandbox_add_port(s, 4000), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "at most 15"));
    /* Too many for v1 once the client speaks it: refused at create, before
     * anything is sent (the endpoint is never reached). */
    ok_c(sbx_client_set_option(c, "protocol", "v1"), c);
    expect_st(sbx_sandbox_create(s), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "at most 4 in the v1 protocol"));
    {
        sbx_sandbox *s1 = sbx_sandbox_new(c);
        for (uint32_t p = 3000; p < 3004; p++)
            ok_s(sbx_sandbox_add_port(s1, p), s1);
        expect_st(sbx_sandbox_add_port(s1, 3004), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s1);
        ck_assert(contains(sbx_sandbox_last_error(s1), "at most 4 ports in the v1 protocol"));
        sbx_sandbox_free(s1);
    }
    ok_c(sbx_client_set_option(c, "protocol", it_v2() ? "v2" : "v1"), c);
    expect_st(sbx_sandbox_set_env(s, "", "v"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_env(s, "A=B", "v"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_env(s, "A\nB", "v"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_env(s, NULL, "v"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_env(s, "K", "\xff"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_runtime(s, "node\xe9"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_network_policy_json(s, "{"), SBX_E_PARSE, sbx_sandbox_last_error, s);
    /* the SDKs' shape is read as what it stands for; a policy with neither shape is refused */
    expect_st(sbx_sandbox_set_network_policy_json(s, "{\"allowed\":[]}"), SBX_E_PARSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_network_policy_json(s, "{\"allow\":[\"x.com\"],\"deny\":[]}"), SBX_E_INVALID_ARG,
              sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_network_policy_json(s, "{\"allow\":{\"x.com\":[{\"response\":{}}]}}"),
              SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert_ptr_nonnull(strstr(sbx_sandbox_last_error(s), "response rule"));
    expect_st(sbx_sandbox_set_network_policy_json(s, "[]"), SBX_E_PARSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_source_git(s, "", NULL, 0), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_source_git(s, "https://x", "", 0), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_source_git_auth(s, "user", NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_source_tarball(s, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_source_snapshot(s, ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_runtime(s, ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);

    /* By name. */
    ok_s(sbx_sandbox_set_option(s, "runtime", "node22"), s);
    ok_s(sbx_sandbox_set_option(s, "timeout_ms", "120000"), s);
    ok_s(sbx_sandbox_set_option(s, "vcpus", "2"), s);
    ok_s(sbx_sandbox_set_option(s, "env.NAME", "value"), s);
    ok_s(sbx_sandbox_set_option(s, "network_policy", "{\"mode\":\"allow-all\"}"), s);
    expect_st(sbx_sandbox_set_option(s, "source.revision", "main"), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    ok_s(sbx_sandbox_set_option(s, "source.git", "https://example.com/r.git"), s);
    ok_s(sbx_sandbox_set_option(s, "source.revision", "main"), s);
    ok_s(sbx_sandbox_set_option(s, "source.depth", "1"), s);
    ok_s(sbx_sandbox_set_option(s, "source.tarball", "https://example.com/t.tgz"), s);
    ok_s(sbx_sandbox_set_option(s, "source.snapshot", "snap_x"), s);
    expect_st(sbx_sandbox_set_option(s, "vcpus", "-1"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_option(s, "vcpus", "2x"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_option(s, "timeout_ms", "soon"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_option(s, "port", "99999"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_set_option(s, "colour", "red"), SBX_E_UNKNOWN_OPTION, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "colour"));
    expect_st(sbx_sandbox_set_option(s, NULL, "x"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);

    /* Calls that need a sandbox. */
    expect_st(sbx_sandbox_refresh(s), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_stop(s), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_extend_timeout(s, 1000), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update_network_policy(s, "{\"mode\":\"deny-all\"}"), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_mkdir(s, "x"), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_fetch(s, ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_fetch(s, "bad\nid"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_create_start(s, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert_int_eq(sbx_sandbox_create(NULL), SBX_E_INVALID_ARG);
    ck_assert_str_eq(sbx_sandbox_last_error(NULL), "invalid argument: the handle is NULL");
    sbx_sandbox_free(NULL);
    sbx_sandbox_free(s);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_client_sandbox_get_unknown)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c);
    sbx_op *op;
    expect_st(sbx_sandbox_fetch(s, "sbx_nope"), SBX_E_NOT_FOUND, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "404"));
    ck_assert_ptr_null(sbx_sandbox_id(s));
    /* The server's code, kept apart for a blocking call as for an op; a
     * failure before any answer has none; a success clears it. */
    ck_assert_str_eq(sbx_sandbox_last_error_code(s), "not_found");
    expect_st(sbx_sandbox_fetch(s, ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert_ptr_null(sbx_sandbox_last_error_code(s));
    ck_assert_ptr_null(sbx_sandbox_last_error_code(NULL));
    ck_assert_ptr_null(sbx_client_last_error_code(NULL));
    ck_assert_ptr_null(sbx_command_last_error_code(NULL));
    ck_assert_ptr_null(sbx_snapshot_last_error_code(NULL));
    /* Reusable after a failed get; the op form reports the same. */
    ok_s(sbx_sandbox_fetch_start(s, "sbx_nope2", &op), s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_NOT_FOUND);
    ck_assert_int_eq(sbx_op_http_status(op), 404);
    ck_assert(contains(sbx_op_last_error(op), "not_found"));
    sbx_op_free(op);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_sandbox_stop_extend_policy)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    int64_t before = sbx_sandbox_timeout_ms(s);
    sbx_op *op;
    json_t *j;

    ok_s(sbx_sandbox_extend_timeout(s, 60000), s);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), before + 60000);
    ok_s(sbx_sandbox_extend_timeout_start(s, 1000, &op), s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), before + 61000);
    expect_st(sbx_sandbox_extend_timeout(s, 0), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_extend_timeout(s, 1000LL * 3600 * 24 * 365), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);

    /* Live network policy. */
    ok_s(sbx_sandbox_update_network_policy(s, "{\"mode\":\"custom\",\"allowedDomains\":[\"example.com\"]}"), s);
    j = parse_ok(sbx_sandbox_network_policy_json(s));
    ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "custom");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "allowedDomains"), 0)), "example.com");
    json_decref(j);
    ok_s(sbx_sandbox_update_network_policy_start(s, "{\"mode\":\"deny-all\"}", &op), s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert(contains(sbx_sandbox_network_policy_json(s), "deny-all"));
    expect_st(sbx_sandbox_update_network_policy(s, "nope"), SBX_E_PARSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update_network_policy(s, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    /* The server refuses a policy it cannot enforce. */
    expect_st(sbx_sandbox_update_network_policy(s, "{\"mode\":\"sideways\"}"), SBX_E_INVALID_ARG,
              sbx_sandbox_last_error, s);

    /* Refresh, stop, stop again. */
    ok_s(sbx_sandbox_refresh(s), s);
    ck_assert_str_eq(sbx_sandbox_status(s), "running");
    ok_s(sbx_sandbox_refresh_start(s, &op), s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ok_s(sbx_sandbox_stop(s), s);
    ck_assert(strcmp(sbx_sandbox_status(s), "stopped") == 0 || strcmp(sbx_sandbox_status(s), "stopping") == 0);
    ok_s(sbx_sandbox_stop_start(s, &op), s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);

    /* A stopped sandbox refuses work with a conflict. */
    {
        sbx_command *k = it_sh_cmd(s, "true", NULL);
        expect_st(sbx_command_run(k), SBX_E_CONFLICT, sbx_command_last_error, k);
        sbx_command_free(k);
    }
    expect_st(sbx_sandbox_extend_timeout(s, 1000), SBX_E_CONFLICT, sbx_sandbox_last_error, s);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_sandbox_git_source)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s;
    char dir[] = "/var/tmp/sbx-client-git-XXXXXX", url[400];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    sbxd_cleanup_path(d, dir);
    ck_assert_int_eq(host_sh("set -e; cd '%s'; git init -q -b main repo; cd repo; echo one > f.txt; git add -A;"
                             "git -c user.name=t -c user.email=t@e commit -qm 1; git checkout -q -b side;"
                             "echo two > f.txt; git -c user.name=t -c user.email=t@e commit -qam 2; git checkout -q main",
                             dir),
                     0);
    snprintf(url, sizeof url, "file://%s/repo", dir);
    s = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_set_source_git(s, url, "side", 1), s);
    ok_s(sbx_sandbox_create(s), s);
    expect_sh_out(s, "cat /vercel/sandbox/f.txt", "two\n");
    sbx_sandbox_free(s);

    /* A repository that does not exist: the server says why. */
    s = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_set_source_git(s, "file:///nonexistent/repo", NULL, 0), s);
    expect_st(sbx_sandbox_create(s), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "400"));
    ck_assert_ptr_null(sbx_sandbox_id(s));
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_sandbox_tarball_source)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s;
    struct tar_ent e[] = {{"hello.txt", "from a tarball\n", 15, 0644, 'f', NULL}};
    size_t len;
    void *t = tar_gz(e, 1, TAR_PAX, &len);
    char path[400], url[420];
    FILE *f;

    snprintf(path, sizeof path, "%s/src.tgz", d->dir);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(t, 1, len, f), len);
    fclose(f);
    free(t);
    snprintf(url, sizeof url, "file://%s", path);
    s = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_set_source_tarball(s, url), s);
    ok_s(sbx_sandbox_create(s), s);
    expect_sh_out(s, "cat /vercel/sandbox/hello.txt", "from a tarball\n");
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_snapshot_round_trip)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c), *r;
    sbx_snapshot *sn = sbx_snapshot_new(c), *g;
    sbx_op *op;
    char *json;
    json_t *j;

    ck_assert_ptr_null(sbx_snapshot_id(sn));
    ck_assert_int_eq(sbx_snapshot_size_bytes(sn), -1);
    ck_assert_int_eq(sbx_snapshot_expires_at(sn), -1);
    expect_st(sbx_snapshot_delete(sn), SBX_E_MISUSE, sbx_snapshot_last_error, sn);
    ok_s(sbx_sandbox_write_file(s, "kept.txt", (const uint8_t *)"state\n", 6, 0644), s);
    ok_s(sbx_sandbox_snapshot(s, 0, sn), s);
    ck_assert_ptr_nonnull(sbx_snapshot_id(sn));
    ck_assert_str_eq(sbx_snapshot_status(sn), "created");
    ck_assert_str_eq(sbx_snapshot_source_sandbox_id(sn), sbx_sandbox_id(s));
    ck_assert(sbx_snapshot_size_bytes(sn) > 0);
    ck_assert_int_eq(sbx_snapshot_expires_at(sn), 0); /* never */
    ck_assert(contains(sbx_snapshot_json(sn), sbx_snapshot_id(sn)));
    /* Snapshotting stops the sandbox; the handle knows. */
    ck_assert(strcmp(sbx_sandbox_status(s), "stopped") == 0 || strcmp(sbx_sandbox_status(s), "snapshotting") == 0);
    /* A stopped sandbox cannot be snapshotted again. */
    {
        sbx_snapshot *again = sbx_snapshot_new(c);
        expect_st(sbx_sandbox_snapshot(s, -1, again), SBX_E_CONFLICT, sbx_sandbox_last_error, s);
        sbx_snapshot_free(again);
    }

    /* A new sandbox from it has the file. */
    r = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_set_source_snapshot(r, sbx_snapshot_id(sn)), r);
    ok_s(sbx_sandbox_create(r), r);
    expect_sh_out(r, "cat /vercel/sandbox/kept.txt", "state\n");
    sbx_sandbox_free(r);

    /* Get by id, list, delete. */
    g = sbx_snapshot_new(c);
    ok_sn(sbx_snapshot_fetch(g, sbx_snapshot_id(sn)), g);
    ck_assert_str_eq(sbx_snapshot_id(g), sbx_snapshot_id(sn));
    ck_assert_int_eq(sbx_snapshot_size_bytes(g), sbx_snapshot_size_bytes(sn));
    ok_c(sbx_client_list_snapshots(c, NULL, 0, -1, -1, &json), c);
    j = json_loads(json, 0, NULL);
    ck_assert_int_eq(json_array_size(json_object_get(j, "snapshots")), 1);
    json_decref(j);
    sbx_free(json);
    ok_sn(sbx_snapshot_delete_start(g, &op), g);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert_str_eq(sbx_snapshot_status(g), "deleted");
    sbx_snapshot_free(g);

    /* A snapshot with an expiry, through the op form. */
    {
        sbx_sandbox *s2 = it_sandbox(c);
        sbx_snapshot *sn2 = sbx_snapshot_new(c);
        int64_t now_ms = sbx_sandbox_created_at(s2);
        ok_s(sbx_sandbox_snapshot_start(s2, 3600000, sn2, &op), s2);
        ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
        sbx_op_free(op);
        ck_assert(sbx_snapshot_expires_at(sn2) >= now_ms + 3600000);
        ok_sn(sbx_snapshot_delete(sn2), sn2);
        sbx_snapshot_free(sn2);
        sbx_sandbox_free(s2);
    }

    /* Unknown, bad arguments. */
    g = sbx_snapshot_new(c);
    expect_st(sbx_snapshot_fetch(g, "snap_nope"), SBX_E_NOT_FOUND, sbx_snapshot_last_error, g);
    ck_assert_ptr_nonnull(sbx_snapshot_last_error_code(g));
    ck_assert_msg(strstr(sbx_snapshot_last_error_code(g), "not_found"), "%s", sbx_snapshot_last_error_code(g));
    expect_st(sbx_snapshot_fetch(g, ""), SBX_E_INVALID_ARG, sbx_snapshot_last_error, g);
    ck_assert_ptr_null(sbx_snapshot_last_error_code(g));
    expect_st(sbx_snapshot_fetch_start(g, "snap_x", NULL), SBX_E_INVALID_ARG, sbx_snapshot_last_error, g);
    expect_st(sbx_sandbox_snapshot(s, -2, g), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_snapshot(s, 0, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    sbx_snapshot_free(g);
    ck_assert_ptr_null(sbx_snapshot_new(NULL));
    ck_assert_str_eq(sbx_snapshot_last_error(NULL), "invalid argument: the handle is NULL");

    /* Creating from a deleted snapshot fails. */
    r = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_set_source_snapshot(r, sbx_snapshot_id(sn)), r);
    ck_assert_int_ne(sbx_sandbox_create(r), SBX_OK);
    sbx_sandbox_free(r);

    sbx_snapshot_free(sn);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* Many creates in flight from one thread, queued under a small limit. */
START_TEST(test_client_sandbox_concurrent_creates_limited)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s[12];
    sbx_op *op[12];
    char *json;
    json_t *j;

    ok_c(sbx_client_set_option(c, "limit.global", "3"), c);
    ok_c(sbx_client_set_option(c, "limit.project", "2"), c);
    for (int i = 0; i < 12; i++) {
        s[i] = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_create_start(s[i], &op[i]), s[i]);
    }
    ok_c(sbx_client_run(c, 60000), c);
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(sbx_op_status(op[i]) == SBX_OK, "create %d: %s", i, sbx_op_last_error(op[i]));
        ck_assert_ptr_nonnull(sbx_sandbox_id(s[i]));
        sbx_op_free(op[i]);
    }
    ok_c(sbx_client_list_sandboxes(c, NULL, 100, -1, -1, &json), c);
    j = json_loads(json, 0, NULL);
    ck_assert_int_eq(json_array_size(json_object_get(j, "sandboxes")), 12);
    json_decref(j);
    sbx_free(json);
    for (int i = 0; i < 12; i++)
        sbx_sandbox_free(s[i]);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* Names, persistence and resume: the 2.x protocol's; v1 refuses them. */
/* What the client's log said about automatic resumes. */
struct resume_log {
    int resuming, repeating;
    sbx_op *cancel_on_resume; /* cancelled when the resume starts */
};

static void resume_log_cb(sbx_log_level level, const char *msg, void *user)
{
    struct resume_log *l = user;
    (void)level;
    if (getenv("IT_VERBOSE"))
        fprintf(stderr, "# log: %s\n", msg);
    if (strstr(msg, "is no longer running; resuming")) {
        l->resuming++;
        if (l->cancel_on_resume)
            ck_assert_int_eq(sbx_op_cancel(l->cancel_on_resume), SBX_OK);
    }
    if (strstr(msg, ": repeating on session"))
        l->repeating++;
}

static int collect_data(const uint8_t *data, size_t len, void *user)
{
    struct it_out *o = user;
    return it_collect(SBX_STREAM_STDOUT, data, len, o);
}

/* A named persistent sandbox whose session stopped resumes by itself when
 * an operation meets the stopped session (HTTP 410), as the 2.x SDKs do:
 * once for every op waiting on it, each op sent again on the new session.
 * One that is not persistent does not unless asked (its files are gone). */
START_TEST(test_client_sandbox_auto_resume)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c), *t;
    struct resume_log log = {0};
    struct it_out out = {0}, rd = {0};
    sbx_command *k;
    sbx_snapshot *sn;
    sbx_op *op[4];
    char name[40], first[64], second[64];

    ok_c(sbx_client_set_log_cb(c, SBX_LOG_INFO, resume_log_cb, &log), c);
    expect_st(sbx_sandbox_set_option(s, "auto_resume", "sometimes"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "persistent, always or never"));
    if (!it_v2()) {
        /* v1 has no sessions to resume: the 410 is the answer */
        sbx_sandbox_free(s);
        s = it_sandbox(c);
        ok_s(sbx_sandbox_set_option(s, "auto_resume", "always"), s);
        ok_s(sbx_sandbox_stop(s), s);
        expect_st(sbx_sandbox_mkdir(s, "/vercel/sandbox/d"), SBX_E_CONFLICT, sbx_sandbox_last_error, s);
        ck_assert_int_eq(log.resuming, 0);
        goto out;
    }
    snprintf(name, sizeof name, "ar-%s", rand_hex(8));
    ok_s(sbx_sandbox_set_name(s, name), s);
    ok_s(sbx_sandbox_set_persistent(s, 1), s);
    ok_s(sbx_sandbox_create(s), s);
    snprintf(first, sizeof first, "%s", sbx_sandbox_id(s));
    ok_s(sbx_sandbox_write_file(s, "kept.txt", (const uint8_t *)"across sessions\n", 16, 0644), s);
    ok_s(sbx_sandbox_stop(s), s);

    /* Four ops meet the stopped session together: one resume serves all. */
    k = it_sh_cmd(s, "cat /vercel/sandbox/kept.txt", &out);
    ok_cmd(sbx_command_run_start(k, &op[0]), k);
    ok_s(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/made", &op[1]), s);
    ok_s(sbx_sandbox_read_stream_start(s, "/vercel/sandbox/kept.txt", collect_data, &rd, &op[2]), s);
    ok_s(sbx_sandbox_write_file_start(s, "/vercel/sandbox/new.txt", (const uint8_t *)"new\n", 4, 0644, &op[3]), s);
    ok_c(sbx_client_run(c, 120000), c);
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(sbx_op_status(op[i]) == SBX_OK, "op %d: %s", i, sbx_op_last_error(op[i]));
        sbx_op_free(op[i]);
    }
    ck_assert_int_eq(log.resuming, 1);
    ck_assert_int_eq(log.repeating, 4);
    ck_assert_str_ne(sbx_sandbox_id(s), first);
    ck_assert_str_eq(sbx_sandbox_status(s), "running");
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_str_eq(it_str(&out, 0), "across sessions\n");
    ck_assert_str_eq(it_str(&rd, 0), "across sessions\n");
    sbx_command_free(k);
    expect_sh_out(s, "test -d /vercel/sandbox/made && cat /vercel/sandbox/new.txt", "new\n");
    snprintf(second, sizeof second, "%s", sbx_sandbox_id(s));

    /* A command started before its session stopped keeps that session:
     * attaching to it asks there (kept, or 410), not the new one (404). */
    {
        sbx_status ast;
        k = it_sh_cmd(s, "echo detached", &out);
        ok_cmd(sbx_command_set_detached(k, 1), k);
        ok_cmd(sbx_command_run(k), k);
        ok_s(sbx_sandbox_stop(s), s);
        ok_s(sbx_sandbox_mkdir(s, "/vercel/sandbox/after"), s);
        ck_assert_str_ne(sbx_sandbox_id(s), second);
        it_out_free(&out);
        ast = sbx_command_attach(k, sbx_command_id(k));
        ck_assert_msg(ast == SBX_OK || ast == SBX_E_CONFLICT, "attach: %s: %s", sbx_status_name(ast),
                      sbx_command_last_error(k));
        sbx_command_free(k);
        snprintf(second, sizeof second, "%s", sbx_sandbox_id(s));
        log.resuming--; /* the count below is of the next three */
    }

    /* The other resumable operations: extend, network policy, snapshot. */
    ok_s(sbx_sandbox_stop(s), s);
    ok_s(sbx_sandbox_extend_timeout(s, 60000), s);
    ck_assert_str_ne(sbx_sandbox_id(s), second);
    snprintf(second, sizeof second, "%s", sbx_sandbox_id(s));
    ok_s(sbx_sandbox_stop(s), s);
    ok_s(sbx_sandbox_update_network_policy(s, "{\"mode\":\"deny-all\"}"), s);
    ck_assert_str_ne(sbx_sandbox_id(s), second);
    snprintf(second, sizeof second, "%s", sbx_sandbox_id(s));
    ok_s(sbx_sandbox_stop(s), s);
    sn = sbx_snapshot_new(c);
    ok_s(sbx_sandbox_snapshot(s, -1, sn), s);
    ck_assert_str_ne(sbx_sandbox_id(s), second);
    sbx_snapshot_free(sn);
    ck_assert_int_eq(log.resuming, 4);

    /* Stop is never resumed; an op cancelled while the resume is under
     * way ends cancelled, and the resume still completes: the handle
     * knows the session the server started. */
    ok_s(sbx_sandbox_stop(s), s);
    ok_s(sbx_sandbox_stop(s), s);
    snprintf(second, sizeof second, "%s", sbx_sandbox_id(s));
    ok_s(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/x", &op[0]), s);
    log.cancel_on_resume = op[0];
    ck_assert_int_eq(sbx_op_wait(op[0], -1), SBX_E_CANCELLED);
    ck_assert(contains(sbx_op_last_error(op[0]), "cancelled while sandbox"));
    sbx_op_free(op[0]);
    log.cancel_on_resume = NULL;
    ok_c(sbx_client_run(c, 60000), c);
    ck_assert_str_ne(sbx_sandbox_id(s), second);
    ck_assert_str_eq(sbx_sandbox_status(s), "running");

    /* A session gone with the sandbox deleted: the resume's own failure. */
    ok_s(sbx_sandbox_stop(s), s);
    t = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_fetch_named(t, name), t);
    ok_s(sbx_sandbox_delete(t), t);
    sbx_sandbox_free(t);
    expect_st(sbx_sandbox_mkdir(s, "/vercel/sandbox/y"), SBX_E_NOT_FOUND, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "resuming it failed"));

    /* Not persistent: no resume by default (a new session starts without
     * the files); with auto_resume=always it starts clean. */
    sbx_sandbox_free(s);
    s = sbx_sandbox_new(c);
    snprintf(name, sizeof name, "ar-%s", rand_hex(8));
    ok_s(sbx_sandbox_set_name(s, name), s);
    ok_s(sbx_sandbox_create(s), s);
    ck_assert_int_eq(sbx_sandbox_persistent(s), 0);
    ok_s(sbx_sandbox_write_file(s, "lost.txt", (const uint8_t *)"x", 1, 0644), s);
    ok_s(sbx_sandbox_stop(s), s);
    snprintf(first, sizeof first, "%s", sbx_sandbox_id(s));
    k = it_sh_cmd(s, "true", NULL);
    expect_st(sbx_command_run(k), SBX_E_CONFLICT, sbx_command_last_error, k);
    sbx_command_free(k);
    ck_assert_str_eq(sbx_sandbox_id(s), first);
    ok_s(sbx_sandbox_set_option(s, "auto_resume", "always"), s);
    expect_sh_out(s, "test -e /vercel/sandbox/lost.txt && echo kept || echo clean", "clean\n");
    ck_assert_str_ne(sbx_sandbox_id(s), first);
    ok_s(sbx_sandbox_delete(s), s);
out:
    it_out_free(&out);
    it_out_free(&rd);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* Handles freed while an automatic resume is under way: the sandbox's free
 * runs the resume to its end (nothing is left pending, which the ASan run's
 * leak check would report), and a command waiting on it ends cancelled. */
START_TEST(test_client_sandbox_auto_resume_freed)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c);
    struct resume_log log = {0};
    sbx_command *k;
    sbx_op *op;
    char name[40];

    if (!it_v2()) {
        sbx_sandbox_free(s);
        goto out;
    }
    ok_c(sbx_client_set_log_cb(c, SBX_LOG_INFO, resume_log_cb, &log), c);
    snprintf(name, sizeof name, "fr-%s", rand_hex(8));
    ok_s(sbx_sandbox_set_name(s, name), s);
    ok_s(sbx_sandbox_set_persistent(s, 1), s);
    ok_s(sbx_sandbox_create(s), s);
    ok_s(sbx_sandbox_stop(s), s);
    k = it_sh_cmd(s, "true", NULL);
    ok_cmd(sbx_command_run_start(k, &op), k);
    for (int i = 0; i < 1000 && log.resuming == 0; i++)
        sbx_client_run(c, 5);
    ck_assert_int_eq(log.resuming, 1);
    sbx_sandbox_free(s); /* the command keeps its reference */
    {
        /* cancelled with the resume, unless its answer was already in */
        sbx_status st = sbx_op_wait(op, 30000);
        ck_assert_msg(st == SBX_E_CANCELLED || st == SBX_OK, "%s", sbx_op_last_error(op));
    }
    sbx_op_free(op);
    sbx_command_free(k);
out:
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* sbx_sandbox_update: a named sandbox's settings, and the running
 * session's lifetime and policy with them, as the SDK's update(). */
START_TEST(test_client_sandbox_update)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c), *t;
    char name[40];
    json_t *j;

    expect_st(sbx_sandbox_update(s, "{\"persistent\":true}"), SBX_E_MISUSE, sbx_sandbox_last_error, s);
    if (!it_v2()) {
        sbx_sandbox_free(s);
        s = it_sandbox(c);
        expect_st(sbx_sandbox_update(s, "{\"persistent\":true}"), SBX_E_UNSUPPORTED, sbx_sandbox_last_error, s);
        goto out;
    }
    snprintf(name, sizeof name, "up-%s", rand_hex(8));
    ok_s(sbx_sandbox_set_name(s, name), s);
    ok_s(sbx_sandbox_set_timeout_ms(s, 60000), s);
    ok_s(sbx_sandbox_create(s), s);
    ck_assert_int_eq(sbx_sandbox_persistent(s), 0);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 60000);

    /* settings checked before anything is sent */
    expect_st(sbx_sandbox_update(s, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update(s, "{}"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update(s, "[1]"), SBX_E_PARSE, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update(s, "{\"vcpus\":0}"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "vcpus"));
    expect_st(sbx_sandbox_update(s, "{\"persistent\":1}"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update(s, "{\"nope\":1}"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "unknown key 'nope'"));
    expect_st(sbx_sandbox_update(s, "{\"network_policy\":{\"allowedDomains\":[]}}"), SBX_E_PARSE,
              sbx_sandbox_last_error, s);
    expect_st(sbx_sandbox_update(s, "{\"ports\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}"), SBX_E_INVALID_ARG,
              sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "at most 15"));

    /* persistent from now on; the session lives longer and is denied the network */
    ok_s(sbx_sandbox_update(s, "{\"persistent\":true,\"timeout_ms\":120000,\"network_policy\":{\"mode\":"
                               "\"deny-all\"},\"tags\":{\"team\":\"a\"},\"snapshot_expiration_ms\":0}"),
         s);
    ck_assert_int_eq(sbx_sandbox_persistent(s), 1);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 120000);
    ck_assert_ptr_nonnull(sbx_sandbox_network_policy_json(s));
    j = json_loads(sbx_sandbox_network_policy_json(s), 0, NULL);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "mode")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "deny-all");
    json_decref(j);
    ok_s(sbx_sandbox_refresh(s), s);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 120000);
    {
        /* another handle reads the settings from the server */
        t = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_fetch_named(t, name), t);
        ck_assert_int_eq(sbx_sandbox_persistent(t), 1);
        j = json_loads(sbx_sandbox_json(t), 0, NULL);
        ck_assert_msg(json_string_value(json_object_get(json_object_get(json_object_get(j, "sandbox"), "tags"),
                                                        "team")), "%s", sbx_sandbox_json(t));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(j, "sandbox"), "tags"),
                                                           "team")),
                         "a");
        json_decref(j);
        sbx_sandbox_free(t);
    }
    /* a shorter timeout than the session's: the session keeps its own */
    ok_s(sbx_sandbox_update(s, "{\"timeout_ms\":30000}"), s);
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 120000);
    /* now persistent: a stop keeps the files, and an op resumes it */
    ok_s(sbx_sandbox_write_file(s, "kept.txt", (const uint8_t *)"kept\n", 5, 0644), s);
    ok_s(sbx_sandbox_stop(s), s);
    /* on a stopped session: the settings alone */
    ok_s(sbx_sandbox_update(s, "{\"timeout_ms\":90000,\"network_policy\":{\"mode\":\"allow-all\"}}"), s);
    ck_assert_str_eq(sbx_sandbox_status(s), "stopped");
    expect_sh_out(s, "cat /vercel/sandbox/kept.txt", "kept\n");
    ck_assert_int_eq(sbx_sandbox_timeout_ms(s), 90000);
    ok_s(sbx_sandbox_delete(s), s);
    expect_st(sbx_sandbox_update(s, "{\"persistent\":false}"), SBX_E_NOT_FOUND, sbx_sandbox_last_error, s);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_sandbox_named_resume)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = sbx_sandbox_new(c), *other;
    char first[64];
    char name[40];

    snprintf(name, sizeof name, "it-%s", rand_hex(8));
    ok_s(sbx_sandbox_set_name(s, name), s);
    ok_s(sbx_sandbox_set_persistent(s, 1), s);
    expect_st(sbx_sandbox_set_name(s, "a/b"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    if (!it_v2()) {
        expect_st(sbx_sandbox_create(s), SBX_E_UNSUPPORTED, sbx_sandbox_last_error, s);
        ck_assert(contains(sbx_sandbox_last_error(s), "protocol=v2"));
        other = sbx_sandbox_new(c);
        expect_st(sbx_sandbox_fetch_named(other, name), SBX_E_UNSUPPORTED, sbx_sandbox_last_error, other);
        sbx_sandbox_free(other);
        other = it_sandbox(c);
        ck_assert_ptr_null(sbx_sandbox_name(other));
        ck_assert_int_eq(sbx_sandbox_persistent(other), -1);
        expect_st(sbx_sandbox_resume(other), SBX_E_UNSUPPORTED, sbx_sandbox_last_error, other);
        expect_st(sbx_sandbox_delete(other), SBX_E_UNSUPPORTED, sbx_sandbox_last_error, other);
        sbx_sandbox_free(other);
        {
            char *json = NULL;
            expect_st(sbx_client_list_sessions_from(c, NULL, name, 0, NULL, &json), SBX_E_UNSUPPORTED,
                      sbx_client_last_error, c);
            ck_assert_ptr_null(json);
        }
        goto out;
    }
    ok_s(sbx_sandbox_create(s), s);
    ck_assert_str_eq(sbx_sandbox_name(s), name);
    ck_assert_int_eq(sbx_sandbox_persistent(s), 1);
    snprintf(first, sizeof first, "%s", sbx_sandbox_id(s));
    ok_s(sbx_sandbox_write_file(s, "kept.txt", (const uint8_t *)"across sessions\n", 16, 0644), s);
    /* resume on a running session: the same one */
    ok_s(sbx_sandbox_resume(s), s);
    ck_assert_str_eq(sbx_sandbox_id(s), first);
    /* the session's own routes keep the name known */
    ok_s(sbx_sandbox_stop(s), s);
    ck_assert_str_eq(sbx_sandbox_name(s), name);
    ck_assert_str_eq(sbx_sandbox_status(s), "stopped");
    /* an operation on the stopped session, with automatic resume off: 410,
     * its code kept apart */
    ok_s(sbx_sandbox_set_option(s, "auto_resume", "never"), s);
    {
        sbx_op *op;
        ok_s(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/d", &op), s);
        ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_CONFLICT);
        ck_assert_int_eq(sbx_op_http_status(op), 410);
        ck_assert_str_eq(sbx_op_error_code(op), "gone");
        ck_assert(contains(sbx_op_last_error(op), "gone"));
        sbx_op_free(op);
    }
    /* another handle finds it by name, stopped: fetching starts nothing */
    other = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_fetch_named(other, name), other);
    ck_assert_str_eq(sbx_sandbox_id(other), first);
    ck_assert_str_eq(sbx_sandbox_status(other), "stopped");
    /* resume: a new session with the files of the last one */
    ok_s(sbx_sandbox_resume(other), other);
    ck_assert_str_ne(sbx_sandbox_id(other), first);
    ck_assert_str_eq(sbx_sandbox_status(other), "running");
    expect_sh_out(other, "cat /vercel/sandbox/kept.txt", "across sessions\n");
    /* Its sessions: the first and the resumed one, newest first, a page of
     * one at a time by cursor; another name's are not among them. */
    {
        char *json = NULL, *next = NULL;
        json_t *page;
        sbx_op *op;
        ok_c(sbx_client_list_sessions_from(c, NULL, name, 1, NULL, &json), c);
        page = json_loads(json, 0, NULL);
        ck_assert_int_eq(json_array_size(json_object_get(page, "sessions")), 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(page, "sessions"), 0), "id")),
                         sbx_sandbox_id(other));
        ck_assert_ptr_nonnull(json_string_value(json_object_get(json_object_get(page, "pagination"), "next")));
        next = strdup(json_string_value(json_object_get(json_object_get(page, "pagination"), "next")));
        json_decref(page);
        sbx_free(json);
        ok_c(sbx_client_list_sessions_from_start(c, NULL, name, 1, next, &op), c);
        ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
        page = json_loads(sbx_op_result_json(op), 0, NULL);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(page, "sessions"), 0), "id")),
                         first);
        ck_assert(json_is_null(json_object_get(json_object_get(page, "pagination"), "next")));
        json_decref(page);
        sbx_op_free(op);
        free(next);
        ok_c(sbx_client_list_sessions_from(c, NULL, "no-such-name", 0, NULL, &json), c);
        page = json_loads(json, 0, NULL);
        ck_assert_int_eq(json_array_size(json_object_get(page, "sessions")), 0);
        json_decref(page);
        sbx_free(json);
        expect_st(sbx_client_list_sessions_from(c, NULL, "", 0, NULL, &json), SBX_E_INVALID_ARG,
                  sbx_client_last_error, c);
    }
    /* the name is taken */
    {
        sbx_sandbox *dup = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_set_name(dup, name), dup);
        expect_st(sbx_sandbox_create(dup), SBX_E_CONFLICT, sbx_sandbox_last_error, dup);
        sbx_sandbox_free(dup);
    }
    /* unknown names */
    {
        sbx_sandbox *none = sbx_sandbox_new(c);
        sbx_op *op;
        expect_st(sbx_sandbox_fetch_named(none, "no-such-name"), SBX_E_NOT_FOUND, sbx_sandbox_last_error, none);
        sbx_sandbox_free(none);
        none = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_fetch_named_start(none, "no-such-name", &op), none);
        ck_assert_ptr_null(sbx_op_error_code(op)); /* not done yet */
        ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_NOT_FOUND);
        ck_assert_str_eq(sbx_op_error_code(op), "not_found");
        sbx_op_free(op);
        sbx_sandbox_free(none);
    }
    /* delete: the session stops, the name is gone */
    ok_s(sbx_sandbox_delete(other), other);
    ck_assert_ptr_null(sbx_sandbox_last_error_code(other));
    ck_assert_str_eq(sbx_sandbox_status(other), "stopped");
    expect_st(sbx_sandbox_delete(other), SBX_E_NOT_FOUND, sbx_sandbox_last_error, other);
    ck_assert_str_eq(sbx_sandbox_last_error_code(other), "not_found");
    {
        sbx_sandbox *gone = sbx_sandbox_new(c);
        expect_st(sbx_sandbox_fetch_named(gone, name), SBX_E_NOT_FOUND, sbx_sandbox_last_error, gone);
        sbx_sandbox_free(gone);
    }
    sbx_sandbox_free(other);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* A command's timeout ends it (in 2.x the server is told it too and kills the command itself: test_sbxd_v2). */
START_TEST(test_client_command_timeout_ends_it)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    sbx_command *k = sbx_command_new(s);
    int64_t t0 = mono_ms();
    ok_cmd(sbx_command_set_argv(k, 2, (const char *[]){"sleep", "60"}), k);
    ok_cmd(sbx_command_set_timeout_ms(k, 700), k);
    expect_st(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    ck_assert_msg(mono_ms() - t0 < 30000, "took %lld ms", (long long)(mono_ms() - t0));
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_sandbox");
    TCase *tc = sbx_tcase("sandbox", 120);
    tcase_add_test(tc, test_client_sandbox_create_with_options);
    tcase_add_test(tc, test_client_sandbox_bad_configuration);
    tcase_add_test(tc, test_client_sandbox_get_unknown);
    tcase_add_test(tc, test_client_sandbox_stop_extend_policy);
    tcase_add_test(tc, test_client_sandbox_git_source);
    tcase_add_test(tc, test_client_sandbox_tarball_source);
    tcase_add_test(tc, test_client_snapshot_round_trip);
    tcase_add_test(tc, test_client_sandbox_concurrent_creates_limited);
    tcase_add_test(tc, test_client_sandbox_named_resume);
    tcase_add_test(tc, test_client_sandbox_auto_resume);
    tcase_add_test(tc, test_client_sandbox_update);
    tcase_add_test(tc, test_client_sandbox_auto_resume_freed);
    tcase_add_test(tc, test_client_command_timeout_ends_it);
    suite_add_tcase(s, tc);
    return s;
}
