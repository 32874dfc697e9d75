/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/client/proto/v1.c: requests (methods, paths, bodies), response parsing, error texts,
 * escaping. */
#include "harness.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/proto/proto.h"

/* ---- helpers ------------------------------------------------------------------- */

/* Parse a body the library built; it must be a JSON object. */
static json_t *parse_obj(const char *body)
{
    json_error_t je;
    json_t *j;
    ck_assert_ptr_nonnull(body);
    j = json_loads(body, 0, &je);
    ck_assert_msg(j != NULL, "not JSON (%s): %s", je.text, body);
    ck_assert_msg(json_is_object(j), "not an object: %s", body);
    return j;
}

/* The object has exactly these keys (NULL-terminated list), no others. */
static void assert_keys(json_t *o, const char *what, const char *const *keys)
{
    size_t n = 0;
    for (; keys[n]; n++)
        ck_assert_msg(json_object_get(o, keys[n]) != NULL, "%s: no \"%s\"", what, keys[n]);
    ck_assert_msg(json_object_size(o) == n, "%s: %zu keys, expected %zu", what, json_object_size(o), n);
}

static const char *str_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_string(v), "\"%s\" is not a string", key);
    return json_string_value(v);
}

static json_int_t int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "\"%s\" is not an integer", key);
    return json_integer_value(v);
}

static void strlist(sbx__strlist *l, const char *const *v, size_t n)
{
    *l = (sbx__strlist)SBX__STRLIST_INIT;
    ck_assert_int_eq(sbx__strlist_set(l, v, n), SBX_OK);
}

static char *dumps(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void assert_msg_has(const sbx__err *err, const char *word)
{
    ck_assert_msg(strstr(sbx__err_msg(err), word) != NULL, "message '%s' does not name %s", sbx__err_msg(err),
                  word);
}

/* The body of a built request (the rest freed), or NULL when building failed. */
static char *take_body(sbx_status st, struct sbx__api_req *r)
{
    char *body;
    if (st != SBX_OK) {
        ck_assert_ptr_null(r->path);
        return NULL;
    }
    body = r->body;
    r->body = NULL;
    sbx__api_req_free(r);
    return body;
}

static char *create_body(const struct sbx__create_spec *s)
{
    struct sbx__api_req r;
    return take_body(sbx__proto_v1.create_sandbox(&r, s), &r);
}

static char *run_body(const sbx__strlist *argv, const char *cwd, const sbx__strlist *env, bool sudo, bool wait)
{
    struct sbx__api_req r;
    return take_body(sbx__proto_v1.run_command(&r, "sb", argv, cwd, env, sudo, wait, 0), &r);
}

/* ---- create body ----------------------------------------------------------------- */

START_TEST(test_api_create_body_minimal)
{
    struct sbx__create_spec s = {0};
    char *body = create_body(&s);
    json_t *o = parse_obj(body);
    static const char *const keys[] = {"ports", NULL};
    assert_keys(o, "minimal create", keys);
    ck_assert(json_is_array(json_object_get(o, "ports")));
    ck_assert_uint_eq(json_array_size(json_object_get(o, "ports")), 0);
    json_decref(o);
    sbx__free(body);

    /* A project is always sent when known; an empty env list sends no env. */
    {
        sbx__strlist env = SBX__STRLIST_INIT;
        static const char *const keys2[] = {"projectId", "ports", NULL};
        s.project = "prj_1";
        s.env = &env;
        body = create_body(&s);
        o = parse_obj(body);
        assert_keys(o, "create with project", keys2);
        ck_assert_str_eq(str_of(o, "projectId"), "prj_1");
        json_decref(o);
        sbx__free(body);
    }
}
END_TEST

START_TEST(test_api_create_body_full_git)
{
    static const uint32_t ports[] = {3000, 8080, 65535};
    static const char *const envv[] = {"A=1", "B=x=y", "NOEQ", "EMPTY=", "U=caf\xc3\xa9"};
    static const char *const keys[] = {"projectId", "ports", "runtime", "timeout", "resources",
                                       "env", "networkPolicy", "source", NULL};
    static const char *const srckeys[] = {"type", "url", "revision", "username", "password", "depth", NULL};
    static const char *const envkeys[] = {"A", "B", "EMPTY", "U", NULL};
    static const char *const reskeys[] = {"vcpus", NULL};
    const char *policy = "{\"mode\":\"custom\",\"allow\":[\"example.com\",\"*.npmjs.org\"]}";
    sbx__strlist env;
    struct sbx__create_spec s = {0};
    json_t *o, *src, *e, *p, *want;
    char *body;

    strlist(&env, envv, SBX__ARRAY_LEN(envv));
    s.project = "prj_1";
    s.runtime = "node22";
    s.policy_json = policy;
    s.timeout_ms = 300000;
    s.vcpus = 4;
    s.ports = ports;
    s.nports = SBX__ARRAY_LEN(ports);
    s.env = &env;
    s.source = SBX__SRC_GIT;
    s.url = "https://github.com/o/r.git";
    s.revision = "0123abcd";
    s.username = "x-access-token";
    s.password = "p\"ss\\word";
    s.depth = 1;
    body = create_body(&s);
    o = parse_obj(body);
    assert_keys(o, "create", keys);
    ck_assert_str_eq(str_of(o, "projectId"), "prj_1");
    ck_assert_str_eq(str_of(o, "runtime"), "node22");
    ck_assert_int_eq(int_of(o, "timeout"), 300000);
    assert_keys(json_object_get(o, "resources"), "resources", reskeys);
    ck_assert_int_eq(int_of(json_object_get(o, "resources"), "vcpus"), 4);
    p = json_object_get(o, "ports");
    ck_assert_uint_eq(json_array_size(p), 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert(json_is_integer(json_array_get(p, i)));
        ck_assert_int_eq(json_integer_value(json_array_get(p, i)), ports[i]);
    }
    e = json_object_get(o, "env");
    assert_keys(e, "env", envkeys);
    ck_assert_str_eq(str_of(e, "A"), "1");
    ck_assert_str_eq(str_of(e, "B"), "x=y");
    ck_assert_str_eq(str_of(e, "EMPTY"), "");
    ck_assert_str_eq(str_of(e, "U"), "caf\xc3\xa9");
    /* The policy is embedded as JSON, not as a string. */
    want = json_loads(policy, 0, NULL);
    ck_assert(json_equal(json_object_get(o, "networkPolicy"), want));
    json_decref(want);
    src = json_object_get(o, "source");
    assert_keys(src, "git source", srckeys);
    ck_assert_str_eq(str_of(src, "type"), "git");
    ck_assert_str_eq(str_of(src, "url"), "https://github.com/o/r.git");
    ck_assert_str_eq(str_of(src, "revision"), "0123abcd");
    ck_assert_str_eq(str_of(src, "username"), "x-access-token");
    ck_assert_str_eq(str_of(src, "password"), "p\"ss\\word");
    ck_assert_int_eq(int_of(src, "depth"), 1);
    json_decref(o);
    sbx__free(body);
    sbx__strlist_clear(&env);
}
END_TEST

START_TEST(test_api_create_body_git_without_options)
{
    static const char *const srckeys[] = {"type", "url", NULL};
    struct sbx__create_spec s = {0};
    json_t *o;
    char *body;
    s.source = SBX__SRC_GIT;
    s.url = "https://example.com/r.git";
    body = create_body(&s);
    o = parse_obj(body);
    assert_keys(json_object_get(o, "source"), "bare git source", srckeys);
    ck_assert_ptr_null(json_object_get(o, "runtime"));
    ck_assert_ptr_null(json_object_get(o, "timeout"));
    ck_assert_ptr_null(json_object_get(o, "resources"));
    json_decref(o);
    sbx__free(body);
}
END_TEST

START_TEST(test_api_create_body_tarball_source)
{
    static const char *const keys[] = {"ports", "runtime", "source", NULL};
    static const char *const srckeys[] = {"type", "url", NULL};
    struct sbx__create_spec s = {0};
    json_t *o, *src;
    char *body;
    s.runtime = "python3.13";
    s.source = SBX__SRC_TARBALL;
    s.url = "https://example.com/app.tar.gz";
    /* Git-only fields are not sent for a tarball. */
    s.revision = "main";
    s.depth = 3;
    body = create_body(&s);
    o = parse_obj(body);
    assert_keys(o, "tarball create", keys);
    ck_assert_str_eq(str_of(o, "runtime"), "python3.13");
    src = json_object_get(o, "source");
    assert_keys(src, "tarball source", srckeys);
    ck_assert_str_eq(str_of(src, "type"), "tarball");
    ck_assert_str_eq(str_of(src, "url"), "https://example.com/app.tar.gz");
    json_decref(o);
    sbx__free(body);
}
END_TEST

START_TEST(test_api_create_body_snapshot_source_omits_runtime)
{
    static const char *const keys[] = {"projectId", "ports", "timeout", "source", NULL};
    static const char *const srckeys[] = {"type", "snapshotId", NULL};
    struct sbx__create_spec s = {0};
    json_t *o, *src;
    char *body;
    s.project = "prj_9";
    s.runtime = "node22"; /* given, but a snapshot fixes the runtime */
    s.timeout_ms = 60000;
    s.source = SBX__SRC_SNAPSHOT;
    s.snapshot_id = "snap_abc";
    body = create_body(&s);
    o = parse_obj(body);
    assert_keys(o, "snapshot create", keys);
    src = json_object_get(o, "source");
    assert_keys(src, "snapshot source", srckeys);
    ck_assert_str_eq(str_of(src, "type"), "snapshot");
    ck_assert_str_eq(str_of(src, "snapshotId"), "snap_abc");
    json_decref(o);
    sbx__free(body);
}
END_TEST

/* The bodies carry UTF-8 text through jansson; the public setters refuse
 * what is not UTF-8 (so a NULL body can be reported as out of memory). The
 * builders keep multibyte text intact and give NULL, never a mangled body,
 * for a string that slipped through. */
START_TEST(test_api_body_utf8)
{
    static const char *const good[] = {"printf", "%s", "caf\xc3\xa9 \xf0\x9f\x9a\x80"};
    static const char *const bad[] = {"printf", "%s", "caf\xe9"}; /* Latin-1 */
    static const char *const envv[] = {"LANG=C", "NAME=\xff\xfe"};
    sbx__strlist a, e, none = SBX__STRLIST_INIT;
    struct sbx__create_spec s = {0};
    json_t *o;
    char *body;

    strlist(&a, good, 3);
    body = run_body(&a, NULL, &none, false, false);
    o = parse_obj(body);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "args"), 1)),
                     "caf\xc3\xa9 \xf0\x9f\x9a\x80");
    json_decref(o);
    sbx__free(body);
    sbx__strlist_clear(&a);

    strlist(&a, bad, 3);
    ck_assert_ptr_null(run_body(&a, NULL, &none, false, false));
    strlist(&e, envv, 2);
    s.env = &e;
    ck_assert_ptr_null(create_body(&s));
    sbx__strlist_clear(&a);
    sbx__strlist_clear(&e);
}
END_TEST

/* Every KEY=VALUE given is sent: a long name is not silently left out. */
START_TEST(test_api_env_long_names_not_dropped)
{
    static const char *const one[] = {"env"};
    char kv[400];
    const char *envv[2];
    sbx__strlist e, a;
    struct sbx__create_spec s = {0};
    json_t *o;
    char *body;

    memset(kv, 'K', 300);
    memcpy(kv + 300, "=long", 6);
    envv[0] = "SHORT=1";
    envv[1] = kv;
    strlist(&e, envv, 2);
    strlist(&a, one, 1);
    kv[300] = '\0'; /* kv is now the name alone */

    s.env = &e;
    body = create_body(&s);
    o = parse_obj(body);
    ck_assert_uint_eq(json_object_size(json_object_get(o, "env")), 2);
    ck_assert_msg(json_object_get(json_object_get(o, "env"), kv) != NULL, "create: the 300-byte name was dropped");
    json_decref(o);
    sbx__free(body);

    body = run_body(&a, NULL, &e, false, false);
    o = parse_obj(body);
    ck_assert_msg(json_object_get(json_object_get(o, "env"), kv) != NULL, "run: the 300-byte name was dropped");
    ck_assert_str_eq(str_of(json_object_get(o, "env"), kv), "long");
    json_decref(o);
    sbx__free(body);
    sbx__strlist_clear(&e);
    sbx__strlist_clear(&a);
}
END_TEST

/* ---- run, path, int bodies -------------------------------------------------------- */

START_TEST(test_api_run_body_fields)
{
    static const char *const argv[] = {"ls", "-la", "/tmp dir", "\"q\""};
    static const char *const one[] = {"true"};
    static const char *const envv[] = {"K=V", "PATH=/bin:/usr/bin"};
    static const char *const keys[] = {"command", "args", "env", "sudo", NULL};
    static const char *const keys_all[] = {"command", "args", "env", "sudo", "cwd", "wait", NULL};
    sbx__strlist a, a1, e, none = SBX__STRLIST_INIT;
    json_t *o, *args;
    char *body;

    strlist(&a, argv, 4);
    strlist(&a1, one, 1);
    strlist(&e, envv, 2);

    body = run_body(&a, NULL, &none, false, false);
    o = parse_obj(body);
    assert_keys(o, "run", keys);
    ck_assert_str_eq(str_of(o, "command"), "ls");
    args = json_object_get(o, "args");
    ck_assert_uint_eq(json_array_size(args), 3);
    ck_assert_str_eq(json_string_value(json_array_get(args, 0)), "-la");
    ck_assert_str_eq(json_string_value(json_array_get(args, 1)), "/tmp dir");
    ck_assert_str_eq(json_string_value(json_array_get(args, 2)), "\"q\"");
    ck_assert(json_is_object(json_object_get(o, "env")));
    ck_assert_uint_eq(json_object_size(json_object_get(o, "env")), 0);
    ck_assert(json_is_false(json_object_get(o, "sudo")));
    json_decref(o);
    sbx__free(body);

    /* No env list at all: still an env object. */
    body = run_body(&a1, NULL, NULL, false, false);
    o = parse_obj(body);
    assert_keys(o, "run without env", keys);
    ck_assert(json_is_array(json_object_get(o, "args")));
    ck_assert_uint_eq(json_array_size(json_object_get(o, "args")), 0);
    ck_assert_uint_eq(json_object_size(json_object_get(o, "env")), 0);
    json_decref(o);
    sbx__free(body);

    body = run_body(&a1, "/vercel/sandbox/app", &e, true, true);
    o = parse_obj(body);
    assert_keys(o, "run with everything", keys_all);
    ck_assert_str_eq(str_of(o, "command"), "true");
    ck_assert_str_eq(str_of(o, "cwd"), "/vercel/sandbox/app");
    ck_assert(json_is_true(json_object_get(o, "sudo")));
    ck_assert(json_is_true(json_object_get(o, "wait")));
    ck_assert_str_eq(str_of(json_object_get(o, "env"), "K"), "V");
    ck_assert_str_eq(str_of(json_object_get(o, "env"), "PATH"), "/bin:/usr/bin");
    ck_assert_uint_eq(json_object_size(json_object_get(o, "env")), 2);
    json_decref(o);
    sbx__free(body);

    /* wait=false is omitted, not sent as false. */
    body = run_body(&a1, "/w", NULL, false, false);
    o = parse_obj(body);
    ck_assert_ptr_null(json_object_get(o, "wait"));
    ck_assert_str_eq(str_of(o, "cwd"), "/w");
    json_decref(o);
    sbx__free(body);

    /* No program: no body. */
    ck_assert_ptr_null(run_body(&none, NULL, NULL, false, false));

    sbx__strlist_clear(&a);
    sbx__strlist_clear(&a1);
    sbx__strlist_clear(&e);
}
END_TEST

START_TEST(test_api_path_and_int_bodies)
{
    static const char *const k1[] = {"path", NULL};
    static const char *const k3[] = {"duration", NULL};
    struct sbx__api_req r;
    char *body = take_body(sbx__proto_v1.mkdir(&r, "sb", "a/b c.txt"), &r);
    json_t *o = parse_obj(body);
    assert_keys(o, "mkdir", k1);
    ck_assert_str_eq(str_of(o, "path"), "a/b c.txt");
    json_decref(o);
    sbx__free(body);
    body = take_body(sbx__proto_v1.read_file(&r, "sb", "/x"), &r);
    o = parse_obj(body);
    assert_keys(o, "read", k1);
    ck_assert_str_eq(str_of(o, "path"), "/x");
    json_decref(o);
    sbx__free(body);
    /* Past 2^53: an integer on the wire, not a double. */
    body = take_body(sbx__proto_v1.extend_timeout(&r, "sb", 9007199254740993LL), &r);
    o = parse_obj(body);
    assert_keys(o, "extend", k3);
    ck_assert_int_eq(int_of(o, "duration"), 9007199254740993LL);
    json_decref(o);
    sbx__free(body);
}
END_TEST

/* ---- methods and paths ------------------------------------------------------------- */

/* An id that needs escaping, and its escaped form. */
#define ODD_ID "sb x/\xc3\xa9?&"
#define ODD_ESC "sb%20x%2F%C3%A9%3F%26"

/* r was built (st) with this method and path; its body, if any, is JSON
 * (then returned parsed, else NULL). r is freed. */
static json_t *check_req(sbx_status st, struct sbx__api_req *r, const char *method, const char *path)
{
    json_t *o = NULL;
    ck_assert_int_eq(st, SBX_OK);
    ck_assert_str_eq(r->method, method);
    ck_assert_str_eq(r->path, path);
    ck_assert_ptr_null(r->header);
    if (r->body) {
        ck_assert_str_eq(r->content_type, "application/json");
        o = parse_obj(r->body);
    } else {
        ck_assert_ptr_null(r->content_type);
    }
    sbx__api_req_free(r);
    ck_assert_ptr_null(r->path);
    ck_assert_ptr_null(r->body);
    return o;
}

static void check_bodyless(sbx_status st, struct sbx__api_req *r, const char *method, const char *path)
{
    json_t *o = check_req(st, r, method, path);
    ck_assert_ptr_null(o);
}

START_TEST(test_api_req_sandboxes)
{
    struct sbx__api_req r;
    struct sbx__create_spec s = {0};
    json_t *o;

    o = check_req(sbx__proto_v1.create_sandbox(&r, &s), &r, "POST", "/v1/sandboxes");
    ck_assert_ptr_nonnull(o);
    json_decref(o);
    check_bodyless(sbx__proto_v1.get_sandbox(&r, ODD_ID), &r, "GET", "/v1/sandboxes/" ODD_ESC);
    check_bodyless(sbx__proto_v1.stop_sandbox(&r, ODD_ID), &r, "POST", "/v1/sandboxes/" ODD_ESC "/stop");
    o = check_req(sbx__proto_v1.extend_timeout(&r, ODD_ID, 60000), &r, "POST", "/v1/sandboxes/" ODD_ESC "/extend-timeout");
    ck_assert_int_eq(int_of(o, "duration"), 60000);
    json_decref(o);
    o = check_req(sbx__proto_v1.update_network_policy(&r, ODD_ID, "{\"mode\":\"deny-all\"}"), &r, "POST",
                  "/v1/sandboxes/" ODD_ESC "/network-policy");
    ck_assert_str_eq(str_of(o, "mode"), "deny-all");
    ck_assert_uint_eq(json_object_size(o), 1);
    json_decref(o);
}
END_TEST

START_TEST(test_api_req_snapshots)
{
    static const char *const none[] = {NULL};
    static const char *const exp[] = {"expiration", NULL};
    struct sbx__api_req r;
    json_t *o;

    /* -1: the server's default, yet a body all the same ({}). */
    o = check_req(sbx__proto_v1.create_snapshot(&r, ODD_ID, -1), &r, "POST", "/v1/sandboxes/" ODD_ESC "/snapshot");
    assert_keys(o, "default expiration", none);
    json_decref(o);
    o = check_req(sbx__proto_v1.create_snapshot(&r, "sb", 0), &r, "POST", "/v1/sandboxes/sb/snapshot");
    assert_keys(o, "never", exp);
    ck_assert_int_eq(int_of(o, "expiration"), 0);
    json_decref(o);
    o = check_req(sbx__proto_v1.create_snapshot(&r, "sb", 86400000), &r, "POST", "/v1/sandboxes/sb/snapshot");
    ck_assert_int_eq(int_of(o, "expiration"), 86400000);
    json_decref(o);
    check_bodyless(sbx__proto_v1.get_snapshot(&r, ODD_ID), &r, "GET", "/v1/sandboxes/snapshots/" ODD_ESC);
    check_bodyless(sbx__proto_v1.delete_snapshot(&r, ODD_ID), &r, "DELETE", "/v1/sandboxes/snapshots/" ODD_ESC);
}
END_TEST

START_TEST(test_api_req_files)
{
    struct sbx__api_req r;
    json_t *o;

    o = check_req(sbx__proto_v1.mkdir(&r, ODD_ID, "/d"), &r, "POST", "/v1/sandboxes/" ODD_ESC "/fs/mkdir");
    ck_assert_str_eq(str_of(o, "path"), "/d");
    json_decref(o);
    o = check_req(sbx__proto_v1.read_file(&r, ODD_ID, "/f"), &r, "POST", "/v1/sandboxes/" ODD_ESC "/fs/read");
    ck_assert_str_eq(str_of(o, "path"), "/f");
    json_decref(o);
    /* The body is the caller's stream: only its type and the header here. */
    ck_assert_int_eq(sbx__proto_v1.write_files(&r, ODD_ID), SBX_OK);
    ck_assert_str_eq(r.method, "POST");
    ck_assert_str_eq(r.path, "/v1/sandboxes/" ODD_ESC "/fs/write");
    ck_assert_ptr_null(r.body);
    ck_assert_str_eq(r.content_type, "application/gzip");
    ck_assert_str_eq(r.header, "x-cwd: /");
    sbx__api_req_free(&r);
}
END_TEST

START_TEST(test_api_req_commands)
{
    static const char *const argv[] = {"ls", "-l"};
    sbx__strlist a;
    struct sbx__api_req r;
    json_t *o;

    strlist(&a, argv, 2);
    o = check_req(sbx__proto_v1.run_command(&r, ODD_ID, &a, NULL, NULL, false, true, 0), &r, "POST",
                  "/v1/sandboxes/" ODD_ESC "/cmd");
    ck_assert_str_eq(str_of(o, "command"), "ls");
    ck_assert(json_is_true(json_object_get(o, "wait")));
    json_decref(o);
    sbx__strlist_clear(&a);
    check_bodyless(sbx__proto_v1.get_command(&r, ODD_ID, "c/1"), &r, "GET", "/v1/sandboxes/" ODD_ESC "/cmd/c%2F1");
    check_bodyless(sbx__proto_v1.wait_command(&r, ODD_ID, "c/1"), &r, "GET",
                   "/v1/sandboxes/" ODD_ESC "/cmd/c%2F1?wait=true");
    check_bodyless(sbx__proto_v1.command_logs(&r, ODD_ID, "c/1"), &r, "GET", "/v1/sandboxes/" ODD_ESC "/cmd/c%2F1/logs");
    /* The 1.x kill path has no cmd/ segment. */
    o = check_req(sbx__proto_v1.kill_command(&r, ODD_ID, "c/1", 15), &r, "POST", "/v1/sandboxes/" ODD_ESC "/c%2F1/kill");
    ck_assert_int_eq(int_of(o, "signal"), 15);
    json_decref(o);
}
END_TEST

START_TEST(test_api_req_lists)
{
    static const struct {
        const char *project;
        uint32_t limit;
        int64_t since, until;
        const char *query;
    } cases[] = {
        {NULL, 0, -1, -1, ""},
        {"p q&r", 0, -1, -1, "?project=p%20q%26r"},
        {NULL, 1000, -1, -1, "?limit=1000"},
        {NULL, 0, 0, -1, "?since=0"},
        {NULL, 0, -1, 1700000000000, "?until=1700000000000"},
        {NULL, 5, 10, -1, "?limit=5&since=10"},
        {"prj", 20, 1, 2, "?project=prj&limit=20&since=1&until=2"},
    };
    struct sbx__api_req r;
    char want[256];

    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        snprintf(want, sizeof want, "/v1/sandboxes%s", cases[i].query);
        check_bodyless(sbx__proto_v1.list_sandboxes(&r, cases[i].project, cases[i].limit, cases[i].since, cases[i].until, NULL),
                       &r, "GET", want);
        snprintf(want, sizeof want, "/v1/sandboxes/snapshots%s", cases[i].query);
        check_bodyless(sbx__proto_v1.list_snapshots(&r, cases[i].project, cases[i].limit, cases[i].since, cases[i].until, NULL),
                       &r, "GET", want);
    }
}
END_TEST

START_TEST(test_api_add_team)
{
    sbx__buf url = SBX__BUF_INIT;
    ck_assert_int_eq(sbx__buf_puts(&url, "http://h/v1/sandboxes/a"), SBX_OK);
    ck_assert_int_eq(sbx__api_add_team(&url, "team/1"), SBX_OK);
    ck_assert_str_eq(url.data, "http://h/v1/sandboxes/a?teamId=team%2F1");
    sbx__buf_clear(&url);
    ck_assert_int_eq(sbx__buf_puts(&url, "http://h/v1/sandboxes?limit=1"), SBX_OK);
    ck_assert_int_eq(sbx__api_add_team(&url, "t"), SBX_OK);
    ck_assert_str_eq(url.data, "http://h/v1/sandboxes?limit=1&teamId=t");
    sbx__buf_free(&url);
}
END_TEST

START_TEST(test_api_check_policy)
{
    static const char *const good[] = {"{\"mode\":\"allow-all\"}", "{\"mode\":\"deny-all\"}",
                                       "{\"mode\":\"custom\",\"allow\":[\"a.com\"]}"};
    static const char *const bad[] = {"[]", "{}", "{\"mode\":1}", "{\"mode\":null}", "{\"Mode\":\"custom\"}"};
    static const char *const not_objects[] = {"\"allow-all\"", "7", "null", "{mode: allow}", "", "{\"mode\":"};
    sbx__err err = {0};
    for (size_t i = 0; i < SBX__ARRAY_LEN(good); i++)
        ck_assert_int_eq(sbx__api_check_policy(good[i], &err), SBX_OK);
    ck_assert_int_eq(err.code, SBX_OK);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx__err_clear(&err);
        ck_assert_msg(sbx__api_check_policy(bad[i], &err) == SBX_E_PARSE, "%s", bad[i]);
        ck_assert_int_eq(err.code, SBX_E_PARSE);
        assert_msg_has(&err, "mode");
    }
    for (size_t i = 0; i < SBX__ARRAY_LEN(not_objects); i++) {
        sbx__err_clear(&err);
        ck_assert_msg(sbx__api_check_policy(not_objects[i], &err) == SBX_E_PARSE, "%s", not_objects[i]);
        assert_msg_has(&err, "network policy");
    }
    sbx__err_clear(&err);
    ck_assert_int_eq(sbx__api_check_policy("{mode: allow}", &err), SBX_E_PARSE);
    assert_msg_has(&err, "not JSON");
    sbx__err_free(&err);
}
END_TEST

/* ---- sandbox responses ------------------------------------------------------------ */

static const char sandbox_full[] =
    "{\"sandbox\":{\"id\":\"sbx_1\",\"status\":\"running\",\"runtime\":\"node22\",\"region\":\"iad1\","
    "\"timeout\":300000,\"createdAt\":1700000000123,\"vcpus\":2,\"memory\":4096,"
    "\"sourceSnapshotId\":\"snap_9\",\"cwd\":\"/vercel/sandbox\",\"networkPolicy\":{\"mode\":\"deny-all\"},"
    "\"extra\":true},"
    "\"routes\":[{\"port\":3000,\"url\":\"https://a.example\",\"subdomain\":\"a\"},"
    "{\"port\":8080,\"url\":\"https://b.example\"}]}";

START_TEST(test_api_parse_sandbox_full)
{
    struct sbx__sandbox_info in = {0};
    sbx__err err = {0};
    json_t *np;
    /* The length is honoured: what follows the body is not read. */
    char buf[sizeof sandbox_full + 8];
    memcpy(buf, sandbox_full, sizeof sandbox_full - 1);
    memcpy(buf + sizeof sandbox_full - 1, "garbage", 8);
    ck_assert_int_eq(sbx__proto_v1.parse_sandbox(buf, sizeof sandbox_full - 1, &in, &err), SBX_OK);
    ck_assert_str_eq(in.id, "sbx_1");
    ck_assert_str_eq(in.status, "running");
    ck_assert_str_eq(in.runtime, "node22");
    ck_assert_str_eq(in.region, "iad1");
    ck_assert_int_eq(in.timeout_ms, 300000);
    ck_assert_int_eq(in.created_at, 1700000000123LL);
    ck_assert_uint_eq(in.vcpus, 2);
    ck_assert_uint_eq(in.memory_mb, 4096);
    ck_assert_str_eq(in.source_snapshot_id, "snap_9");
    ck_assert_str_eq(in.cwd, "/vercel/sandbox");
    ck_assert_ptr_nonnull(in.network_policy_json);
    np = json_loads(in.network_policy_json, 0, NULL);
    ck_assert_ptr_nonnull(np);
    ck_assert_str_eq(str_of(np, "mode"), "deny-all");
    json_decref(np);
    ck_assert_uint_eq(in.nroutes, 2);
    ck_assert_uint_eq(in.routes[0].port, 3000);
    ck_assert_str_eq(in.routes[0].url, "https://a.example");
    ck_assert_uint_eq(in.routes[1].port, 8080);
    ck_assert_str_eq(in.routes[1].url, "https://b.example");
    ck_assert_str_eq(in.json, sandbox_full);
    sbx__sandbox_info_free(&in);
    ck_assert_ptr_null(in.id);
    ck_assert_uint_eq(in.nroutes, 0);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_sandbox_optional_fields)
{
    static const char body[] = "{\"sandbox\":{\"id\":\"s\",\"status\":\"pending\",\"runtime\":\"r\",\"region\":\"g\","
                               "\"timeout\":1.5e3,\"createdAt\":2,\"vcpus\":1,\"memory\":2048}}";
    struct sbx__sandbox_info in = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__proto_v1.parse_sandbox(body, strlen(body), &in, &err), SBX_OK);
    ck_assert_ptr_null(in.cwd);
    ck_assert_ptr_null(in.source_snapshot_id);
    ck_assert_ptr_null(in.network_policy_json);
    ck_assert_uint_eq(in.nroutes, 0);
    ck_assert_int_eq(in.timeout_ms, 1500); /* a number with a fraction or exponent is still a number */
    sbx__sandbox_info_free(&in);
    sbx__err_free(&err);
}
END_TEST

/* Remove or retype one field of a template, parse, expect SBX_E_PROTOCOL naming it. */
typedef sbx_status (*parse_fn)(const char *body, size_t len, sbx__err *err);

static sbx_status parse_sandbox_only(const char *body, size_t len, sbx__err *err)
{
    struct sbx__sandbox_info in = {0};
    sbx_status st = sbx__proto_v1.parse_sandbox(body, len, &in, err);
    sbx__sandbox_info_free(&in);
    return st;
}

static void expect_field_errors(const char *tmpl, const char *objkey, const char *const *fields, size_t nfields,
                                json_t *(*wrong)(const char *field), parse_fn fn)
{
    for (size_t i = 0; i < nfields; i++) {
        for (int mode = 0; mode < 2; mode++) {
            json_t *j = json_loads(tmpl, 0, NULL), *o;
            sbx__err err = {0};
            char *body, name[64];
            sbx_status st;
            ck_assert_ptr_nonnull(j);
            o = json_object_get(j, objkey);
            ck_assert_ptr_nonnull(json_object_get(o, fields[i]));
            if (mode == 0)
                json_object_del(o, fields[i]);
            else
                json_object_set_new(o, fields[i], wrong(fields[i]));
            body = dumps(j);
            st = fn(body, strlen(body), &err);
            ck_assert_msg(st == SBX_E_PROTOCOL, "%s %s: %s", mode ? "retyped" : "missing", fields[i],
                          sbx_status_name(st));
            ck_assert_int_eq(err.code, SBX_E_PROTOCOL);
            snprintf(name, sizeof name, "%s.%s", objkey, fields[i]);
            assert_msg_has(&err, name);
            free(body);
            json_decref(j);
            sbx__err_free(&err);
        }
    }
}

static json_t *wrong_sandbox(const char *field)
{
    static const char *const nums[] = {"timeout", "createdAt", "vcpus", "memory"};
    for (size_t i = 0; i < SBX__ARRAY_LEN(nums); i++)
        if (strcmp(field, nums[i]) == 0)
            return json_string("5");
    return json_integer(5);
}

START_TEST(test_api_parse_sandbox_required_fields)
{
    static const char *const fields[] = {"id", "status", "runtime", "region", "timeout", "createdAt", "vcpus",
                                         "memory"};
    expect_field_errors(sandbox_full, "sandbox", fields, SBX__ARRAY_LEN(fields), wrong_sandbox,
                        parse_sandbox_only);
}
END_TEST

START_TEST(test_api_parse_sandbox_bad_shapes)
{
    static const char *const bodies[] = {"{}", "{\"sandbox\":null}", "{\"sandbox\":\"sbx_1\"}",
                                         "{\"sandbox\":[]}"};
    sbx__err err = {0};
    for (size_t i = 0; i < SBX__ARRAY_LEN(bodies); i++) {
        sbx__err_clear(&err);
        ck_assert_int_eq(parse_sandbox_only(bodies[i], strlen(bodies[i]), &err), SBX_E_PROTOCOL);
        assert_msg_has(&err, "sandbox");
    }
    /* An empty body is {} (protocol 1.1): not a JSON error, a missing object. */
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_sandbox_only("", 0, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "sandbox");
    ck_assert_ptr_null(strstr(sbx__err_msg(&err), "not JSON"));
    /* Not JSON, and JSON that is not an object. */
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_sandbox_only("<html>502</html>", 16, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "not JSON");
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_sandbox_only("[{\"sandbox\":{}}]", 16, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "not a JSON object");
    sbx__err_clear(&err);
    /* Cut short by the length. */
    ck_assert_int_eq(parse_sandbox_only(sandbox_full, 40, &err), SBX_E_PROTOCOL);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_sandbox_routes)
{
    static const char head[] = "{\"sandbox\":{\"id\":\"s\",\"status\":\"running\",\"runtime\":\"r\",\"region\":\"g\","
                               "\"timeout\":1,\"createdAt\":2,\"vcpus\":1,\"memory\":2048},\"routes\":";
    static const char *const bad[] = {
        "[{\"port\":3000}]",
        "[{\"url\":\"https://a\"}]",
        "[{\"port\":3000,\"url\":\"https://a\"},{\"port\":\"80\",\"url\":\"https://b\"}]",
        "[{\"port\":3000,\"url\":7}]",
        "[\"https://a\"]",
    };
    char body[1024];
    struct sbx__sandbox_info in = {0};
    sbx__err err = {0};

    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        snprintf(body, sizeof body, "%s%s}", head, bad[i]);
        sbx__err_clear(&err);
        ck_assert_msg(sbx__proto_v1.parse_sandbox(body, strlen(body), &in, &err) == SBX_E_PROTOCOL, "%s", bad[i]);
        assert_msg_has(&err, i == 2 ? "routes[1]" : "routes[0]");
        sbx__sandbox_info_free(&in);
    }
    /* More routes than ports a sandbox can have: the first ones are kept. */
    {
        size_t n = (size_t)snprintf(body, sizeof body, "%s[", head);
        for (int p = 1; p <= SBX__MAX_PORTS + 2; p++)
            n += (size_t)snprintf(body + n, sizeof body - n, "%s{\"port\":%d,\"url\":\"u%d\"}", p > 1 ? "," : "",
                                  p, p);
        snprintf(body + n, sizeof body - n, "]}");
    }
    ck_assert_int_eq(sbx__proto_v1.parse_sandbox(body, strlen(body), &in, &err), SBX_OK);
    ck_assert_uint_eq(in.nroutes, SBX__MAX_PORTS);
    for (size_t i = 0; i < SBX__MAX_PORTS; i++) {
        char want[8];
        snprintf(want, sizeof want, "u%zu", i + 1);
        ck_assert_uint_eq(in.routes[i].port, i + 1);
        ck_assert_str_eq(in.routes[i].url, want);
    }
    sbx__sandbox_info_free(&in);
    /* routes that are not an array: none. */
    snprintf(body, sizeof body, "%s{}}", head);
    ck_assert_int_eq(sbx__proto_v1.parse_sandbox(body, strlen(body), &in, &err), SBX_OK);
    ck_assert_uint_eq(in.nroutes, 0);
    sbx__sandbox_info_free(&in);
    sbx__err_free(&err);
}
END_TEST

/* ---- command responses ------------------------------------------------------------ */

static const char command_full[] =
    "{\"command\":{\"id\":\"cmd_1\",\"name\":\"ls\",\"args\":[],\"cwd\":\"/\",\"sandboxId\":\"sbx_1\","
    "\"exitCode\":3,\"startedAt\":1700000000456}}";

static sbx_status parse_command_only(const char *body, size_t len, sbx__err *err)
{
    struct sbx__command_info in = {0};
    sbx_status st = sbx__api_parse_command(body, len, &in, err);
    sbx__command_info_free(&in);
    return st;
}

static json_t *wrong_command(const char *field)
{
    if (strcmp(field, "id") == 0)
        return json_true();
    return json_string("1");
}

START_TEST(test_api_parse_command)
{
    static const char running[] = "{\"command\":{\"id\":\"cmd_2\",\"startedAt\":5,\"exitCode\":null}}";
    struct sbx__command_info in = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__api_parse_command(command_full, strlen(command_full), &in, &err), SBX_OK);
    ck_assert_str_eq(in.id, "cmd_1");
    ck_assert_int_eq(in.started_at, 1700000000456LL);
    ck_assert_int_eq(in.exit_code, 3);
    /* Parsing again into the same struct replaces the id (no leak: valgrind). */
    ck_assert_int_eq(sbx__api_parse_command(running, strlen(running), &in, &err), SBX_OK);
    ck_assert_str_eq(in.id, "cmd_2");
    ck_assert_int_eq(in.exit_code, -1);
    ck_assert_int_eq(in.started_at, 5);
    sbx__command_info_free(&in);
    ck_assert_ptr_null(in.id);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_command_required_fields)
{
    static const char *const fields[] = {"id", "startedAt", "exitCode"};
    static const char *const bodies[] = {"", "{}", "{\"command\":null}", "{\"command\":[]}"};
    sbx__err err = {0};
    expect_field_errors(command_full, "command", fields, SBX__ARRAY_LEN(fields), wrong_command,
                        parse_command_only);
    /* An exit code with a fraction is not an exit code. */
    {
        static const char frac[] = "{\"command\":{\"id\":\"c\",\"startedAt\":1,\"exitCode\":1.5}}";
        ck_assert_int_eq(parse_command_only(frac, sizeof frac - 1, &err), SBX_E_PROTOCOL);
    }
    assert_msg_has(&err, "command.exitCode");
    for (size_t i = 0; i < SBX__ARRAY_LEN(bodies); i++) {
        sbx__err_clear(&err);
        ck_assert_int_eq(parse_command_only(bodies[i], strlen(bodies[i]), &err), SBX_E_PROTOCOL);
        assert_msg_has(&err, "command");
    }
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_command_only("not json", 8, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "not JSON");
    sbx__err_free(&err);
}
END_TEST

/* ---- snapshot responses ----------------------------------------------------------- */

static const char snapshot_full[] =
    "{\"snapshot\":{\"id\":\"snap_1\",\"status\":\"created\",\"sourceSandboxId\":\"sbx_1\",\"sizeBytes\":123456789,"
    "\"createdAt\":1700000000000,\"expiresAt\":1800000000000,\"region\":\"iad1\"},"
    "\"sandbox\":{\"id\":\"sbx_1\",\"status\":\"stopped\",\"runtime\":\"node22\",\"region\":\"iad1\","
    "\"timeout\":300000,\"createdAt\":1600000000000,\"vcpus\":2,\"memory\":4096}}";

static sbx_status parse_snapshot_only(const char *body, size_t len, sbx__err *err)
{
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx_status st = sbx__proto_v1.parse_snapshot(body, len, &sn, &sb, err);
    sbx__snapshot_info_free(&sn);
    sbx__sandbox_info_free(&sb);
    return st;
}

static json_t *wrong_snapshot(const char *field)
{
    if (strcmp(field, "sizeBytes") == 0 || strcmp(field, "createdAt") == 0)
        return json_null();
    return json_integer(1);
}

START_TEST(test_api_parse_snapshot)
{
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__proto_v1.parse_snapshot(snapshot_full, strlen(snapshot_full), &sn, &sb, &err), SBX_OK);
    ck_assert_str_eq(sn.id, "snap_1");
    ck_assert_str_eq(sn.status, "created");
    ck_assert_str_eq(sn.source_sandbox_id, "sbx_1");
    ck_assert_int_eq(sn.size_bytes, 123456789);
    ck_assert_int_eq(sn.created_at, 1700000000000LL);
    ck_assert_int_eq(sn.expires_at, 1800000000000LL);
    ck_assert_str_eq(sn.json, snapshot_full);
    ck_assert_str_eq(sb.id, "sbx_1");
    ck_assert_str_eq(sb.status, "stopped");
    ck_assert_uint_eq(sb.memory_mb, 4096);
    sbx__snapshot_info_free(&sn);
    sbx__sandbox_info_free(&sb);

    /* The sandbox part is optional, and ignored when not asked for. */
    ck_assert_int_eq(sbx__proto_v1.parse_snapshot(snapshot_full, strlen(snapshot_full), &sn, NULL, &err), SBX_OK);
    ck_assert_str_eq(sn.id, "snap_1");
    sbx__snapshot_info_free(&sn);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_snapshot_expiry_optional)
{
    static const char never[] = "{\"snapshot\":{\"id\":\"s\",\"status\":\"created\",\"sourceSandboxId\":\"b\","
                                "\"sizeBytes\":0,\"createdAt\":1}}";
    static const char null_exp[] = "{\"snapshot\":{\"id\":\"s\",\"status\":\"created\",\"sourceSandboxId\":\"b\","
                                   "\"sizeBytes\":0,\"createdAt\":1,\"expiresAt\":null}}";
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx__err err = {0};
    sn.expires_at = 99;
    ck_assert_int_eq(sbx__proto_v1.parse_snapshot(never, strlen(never), &sn, &sb, &err), SBX_OK);
    ck_assert_int_eq(sn.expires_at, 0);
    ck_assert_ptr_null(sb.id); /* no sandbox in the answer: nothing filled */
    sbx__snapshot_info_free(&sn);
    ck_assert_int_eq(sbx__proto_v1.parse_snapshot(null_exp, strlen(null_exp), &sn, &sb, &err), SBX_OK);
    ck_assert_int_eq(sn.expires_at, 0);
    sbx__snapshot_info_free(&sn);
    sbx__err_free(&err);
}
END_TEST

/* Reals past int64_t are refused (casting them is undefined), a
 * non-number expiresAt leaves no error behind a success, and a raw NUL
 * (which jansson skips after a number) makes the answer not JSON. */
START_TEST(test_api_parse_odd_numbers_and_nul)
{
    static const char huge[] = "{\"sandbox\":{\"id\":\"s\",\"status\":\"running\",\"runtime\":\"node22\","
                               "\"region\":\"r\",\"timeout\":1e300,\"createdAt\":1,\"vcpus\":1,\"memory\":1}}";
    static const char bad_exp[] = "{\"snapshot\":{\"id\":\"s\",\"status\":\"created\",\"sourceSandboxId\":\"b\","
                                  "\"sizeBytes\":0,\"createdAt\":1,\"expiresAt\":\"never\"}}";
    static const char nul[] = "{\"command\":{\"id\":\"c\",\"startedAt\":1\0,\"exitCode\":null}}";
    struct sbx__sandbox_info sb = {0};
    struct sbx__snapshot_info sn = {0};
    struct sbx__command_info cmd = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__proto_v1.parse_sandbox(huge, strlen(huge), &sb, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "sandbox.timeout");
    sbx__sandbox_info_free(&sb);
    sbx__err_clear(&err);
    sn.expires_at = 99;
    ck_assert_int_eq(sbx__proto_v1.parse_snapshot(bad_exp, strlen(bad_exp), &sn, NULL, &err), SBX_OK);
    ck_assert_int_eq(sn.expires_at, 0);
    ck_assert_int_eq(err.code, SBX_OK);
    sbx__snapshot_info_free(&sn);
    ck_assert_int_eq(sbx__api_parse_command(nul, sizeof nul - 1, &cmd, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "NUL");
    sbx__command_info_free(&cmd);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_snapshot_required_fields)
{
    static const char *const fields[] = {"id", "status", "sourceSandboxId", "sizeBytes", "createdAt"};
    static const char *const sbx_fields[] = {"id", "status", "runtime", "region", "timeout", "createdAt",
                                             "vcpus", "memory"};
    sbx__err err = {0};
    expect_field_errors(snapshot_full, "snapshot", fields, SBX__ARRAY_LEN(fields), wrong_snapshot,
                        parse_snapshot_only);
    /* A sandbox that comes with it is checked as well. */
    expect_field_errors(snapshot_full, "sandbox", sbx_fields, SBX__ARRAY_LEN(sbx_fields), wrong_sandbox,
                        parse_snapshot_only);
    ck_assert_int_eq(parse_snapshot_only("", 0, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "snapshot");
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_snapshot_only("{\"snapshot\":true}", 17, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "snapshot");
    sbx__err_clear(&err);
    ck_assert_int_eq(parse_snapshot_only("{\"snapshot\"", 11, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "not JSON");
    sbx__err_free(&err);
}
END_TEST

/* ---- lists ------------------------------------------------------------------------- */

START_TEST(test_api_check_list)
{
    static const char *const bad[] = {
        "{\"sandboxes\":[]}",
        "{\"pagination\":{}}",
        "{\"sandboxes\":{},\"pagination\":{}}",
        "{\"sandboxes\":[],\"pagination\":null}",
        "{\"snapshots\":[],\"pagination\":{}}",
    };
    const char *ok = "{\"sandboxes\":[{\"id\":\"a\"}],\"pagination\":{\"count\":1,\"next\":null}}";
    sbx__err err = {0};
    ck_assert_int_eq(sbx__api_check_list(ok, strlen(ok), SBX__API_SANDBOXES, &err), SBX_OK);
    ck_assert_int_eq(err.code, SBX_OK);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx__err_clear(&err);
        ck_assert_msg(sbx__api_check_list(bad[i], strlen(bad[i]), SBX__API_SANDBOXES, &err) == SBX_E_PROTOCOL, "%s",
                      bad[i]);
        assert_msg_has(&err, "\"sandboxes\"");
    }
    sbx__err_clear(&err);
    ck_assert_int_eq(sbx__api_check_list("", 0, SBX__API_SNAPSHOTS, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "\"snapshots\"");
    sbx__err_clear(&err);
    ck_assert_int_eq(sbx__api_check_list("nope", 4, SBX__API_SNAPSHOTS, &err), SBX_E_PROTOCOL);
    assert_msg_has(&err, "not JSON");
    sbx__err_free(&err);
}
END_TEST

/* ---- log lines --------------------------------------------------------------------- */

static sbx_status log_line(const char *line, int *stream, sbx__buf *data, sbx__err *err)
{
    return sbx__api_parse_log(line, strlen(line), stream, data, err);
}

START_TEST(test_api_parse_log_streams)
{
    sbx__buf data = SBX__BUF_INIT;
    sbx__err err = {0};
    int stream = 0;
    ck_assert_int_eq(sbx__buf_puts(&data, "stale"), SBX_OK);
    ck_assert_int_eq(log_line("{\"stream\":\"stdout\",\"data\":\"hello\\n\"}", &stream, &data, &err), SBX_OK);
    ck_assert_int_eq(stream, SBX__LOG_STDOUT);
    ck_assert_str_eq(data.data, "hello\n"); /* cleared first, then filled */
    ck_assert_uint_eq(data.len, 6);
    ck_assert_int_eq(log_line("{\"data\":\"caf\\u00e9 \\\"x\\\"\",\"stream\":\"stderr\",\"timestamp\":1}", &stream,
                              &data, &err),
                     SBX_OK);
    ck_assert_int_eq(stream, SBX__LOG_STDERR);
    ck_assert_str_eq(data.data, "caf\xc3\xa9 \"x\"");
    ck_assert_int_eq(log_line("{\"stream\":\"stdout\",\"data\":\"\"}", &stream, &data, &err), SBX_OK);
    ck_assert_uint_eq(data.len, 0);
    ck_assert_int_eq(
        log_line("{\"stream\":\"error\",\"data\":{\"code\":\"sandbox_stopped\",\"message\":\"gone\"}}", &stream,
                 &data, &err),
        SBX_OK);
    ck_assert_int_eq(stream, SBX__LOG_ERROR);
    ck_assert_str_eq(data.data, "sandbox_stopped: gone");
    ck_assert_int_eq(log_line("{\"stream\":\"error\",\"data\":{\"message\":\"gone\"}}", &stream, &data, &err), SBX_OK);
    ck_assert_str_eq(data.data, "error: gone");
    ck_assert_int_eq(log_line("{\"stream\":\"error\",\"data\":{\"code\":\"x\"}}", &stream, &data, &err), SBX_OK);
    ck_assert_str_eq(data.data, "x: ");
    /* a wait stream's command lines: told apart, read elsewhere */
    ck_assert_int_eq(log_line("{\"command\":{\"id\":\"cmd_1\",\"exitCode\":0}}", &stream, &data, &err), SBX_OK);
    ck_assert_int_eq(stream, SBX__LOG_COMMAND);
    ck_assert_uint_eq(data.len, 0);
    ck_assert_int_eq(log_line("{\"command\":null,\"stream\":\"stdout\",\"data\":\"x\"}", &stream, &data, &err),
                     SBX_OK);
    ck_assert_int_eq(stream, SBX__LOG_STDOUT);
    ck_assert_int_eq(err.code, SBX_OK);
    sbx__buf_free(&data);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_log_invalid)
{
    static const char *const bad[] = {
        "{\"stream\":\"stdin\",\"data\":\"x\"}",
        "{\"stream\":\"STDOUT\",\"data\":\"x\"}",
        "{\"stream\":\"stdout\"}",
        "{\"stream\":\"stdout\",\"data\":5}",
        "{\"stream\":\"stderr\",\"data\":null}",
        "{\"stream\":\"error\",\"data\":\"boom\"}",
        "{\"stream\":1,\"data\":\"x\"}",
        "{\"data\":\"x\"}",
        "{}",
    };
    static const char *const not_objects[] = {"not json", "{\"stream\":\"stdout\",", "[1]", "\"stdout\"", ""};
    sbx__buf data = SBX__BUF_INIT;
    sbx__err err = {0};
    int stream = 0;
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx__err_clear(&err);
        ck_assert_int_eq(sbx__buf_puts(&data, "stale"), SBX_OK);
        ck_assert_msg(log_line(bad[i], &stream, &data, &err) == SBX_E_PROTOCOL, "%s", bad[i]);
        ck_assert_int_eq(err.code, SBX_E_PROTOCOL);
        assert_msg_has(&err, "stream");
        ck_assert_uint_eq(data.len, 0);
    }
    for (size_t i = 0; i < SBX__ARRAY_LEN(not_objects); i++) {
        sbx__err_clear(&err);
        ck_assert_int_eq(sbx__buf_puts(&data, "stale"), SBX_OK);
        ck_assert_msg(log_line(not_objects[i], &stream, &data, &err) == SBX_E_PROTOCOL, "%s", not_objects[i]);
        assert_msg_has(&err, "not a JSON object");
        ck_assert_uint_eq(data.len, 0);
    }
    sbx__buf_free(&data);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_api_parse_log_data_keeps_nul_bytes)
{
    /* A command's output may hold NUL bytes (binary output); the server
     * escapes them as \u0000, and the data keeps its length. */
    static const char line[] = "{\"stream\":\"stdout\",\"data\":\"a\\u0000b\"}";
    sbx__buf data = SBX__BUF_INIT;
    sbx__err err = {0};
    int stream = 0;
    sbx_status st = sbx__api_parse_log(line, sizeof line - 1, &stream, &data, &err);
    ck_assert_msg(st == SBX_OK, "%s: %s", sbx_status_name(st), sbx__err_msg(&err));
    ck_assert_int_eq(stream, SBX__LOG_STDOUT);
    ck_assert_uint_eq(data.len, 3);
    ck_assert_mem_eq(data.data, "a\0b", 3);
    sbx__buf_free(&data);
    sbx__err_free(&err);
}
END_TEST

/* ---- error texts and statuses ------------------------------------------------------ */

static void error_text(const char *body, size_t len, size_t cap, const char *want)
{
    char out[1024];
    ck_assert_uint_le(cap, sizeof out);
    memset(out, 'Z', sizeof out);
    sbx__api_error_text(body, len, out, cap);
    ck_assert_msg(strcmp(out, want) == 0, "'%.*s' gave '%s', expected '%s'", (int)len, body, out, want);
    /* Nothing written past cap. */
    for (size_t i = cap; i < sizeof out; i++)
        ck_assert_int_eq(out[i], 'Z');
}

START_TEST(test_api_error_text_json)
{
    const char *b1 = "{\"error\":{\"code\":\"not_found\",\"message\":\"no such sandbox\"}}";
    const char *b2 = "{\"error\":{\"code\":\"bad_request\"}}";
    const char *b3 = "{\"error\":{\"message\":\"try later\",\"code\":7}}";
    error_text(b1, strlen(b1), 512, "not_found: no such sandbox");
    error_text(b2, strlen(b2), 512, "bad_request");
    error_text(b3, strlen(b3), 512, "try later");
    /* Cut to the room given, terminated. */
    error_text(b1, strlen(b1), 12, "not_found: ");
    error_text(b1, strlen(b1), 1, "");
}
END_TEST

START_TEST(test_api_error_text_other_bodies)
{
    char longbody[1000], want200[201], want15[16];
    const char *other = "{\"message\":\"x\"}";
    const char *errstr = "{\"error\":\"plain\"}";
    memset(longbody, 'x', sizeof longbody);
    memset(want200, 'x', 200);
    want200[200] = '\0';
    memset(want15, 'x', 15);
    want15[15] = '\0';

    error_text("", 0, 512, "");
    error_text("Bad Gateway\nsecond line", 23, 512, "Bad Gateway");
    error_text("a\x01" "b\x7f" "c\td\x1b", 8, 512, "a?b?c?d?");
    error_text("caf\xc3\xa9", 5, 512, "caf\xc3\xa9"); /* UTF-8 text is printable */
    error_text(longbody, sizeof longbody, 512, want200);
    error_text(longbody, sizeof longbody, 16, want15);
    /* JSON that is not the error shape is shown as it came. */
    error_text(other, strlen(other), 512, other);
    error_text(errstr, strlen(errstr), 512, errstr);
    /* Only len bytes are read. */
    error_text("short-and-more", 5, 512, "short");
    /* A body that starts with a newline has an empty first line. */
    error_text("\nhidden", 7, 512, "");
}
END_TEST

START_TEST(test_api_status_for)
{
    static const struct {
        long http;
        sbx_status st;
    } map[] = {
        {400, SBX_E_INVALID_ARG}, {401, SBX_E_AUTH}, {403, SBX_E_AUTH}, {404, SBX_E_NOT_FOUND},
        {409, SBX_E_CONFLICT}, {410, SBX_E_CONFLICT}, {413, SBX_E_BUDGET_EXCEEDED},
        {429, SBX_E_RATE_LIMITED}, {402, SBX_E_HTTP}, {405, SBX_E_HTTP}, {418, SBX_E_HTTP},
        {500, SBX_E_HTTP}, {502, SBX_E_HTTP}, {503, SBX_E_HTTP}, {0, SBX_E_HTTP}, {-1, SBX_E_HTTP},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(map); i++)
        ck_assert_msg(sbx__api_status_for(map[i].http) == map[i].st, "HTTP %ld gave %s", map[i].http,
                      sbx_status_name(sbx__api_status_for(map[i].http)));
}
END_TEST

/* ---- escaping ---------------------------------------------------------------------- */

START_TEST(test_api_escape_known_strings)
{
    sbx__buf b = SBX__BUF_INIT;
    ck_assert_int_eq(sbx__buf_puts(&b, "/v1/sandboxes/"), SBX_OK);
    ck_assert_int_eq(sbx__api_escape(&b, "AZaz09-_.~"), SBX_OK);
    ck_assert_str_eq(b.data, "/v1/sandboxes/AZaz09-_.~"); /* appended, unreserved kept */
    sbx__buf_clear(&b);
    ck_assert_int_eq(sbx__api_escape(&b, " /?#&=+%"), SBX_OK);
    ck_assert_str_eq(b.data, "%20%2F%3F%23%26%3D%2B%25");
    sbx__buf_clear(&b);
    ck_assert_int_eq(sbx__api_escape(&b, "caf\xc3\xa9/\xf0\x9f\x98\x80"), SBX_OK);
    ck_assert_str_eq(b.data, "caf%C3%A9%2F%F0%9F%98%80");
    sbx__buf_clear(&b);
    ck_assert_int_eq(sbx__api_escape(&b, "../x"), SBX_OK);
    ck_assert_str_eq(b.data, "..%2Fx");
    sbx__buf_clear(&b);
    ck_assert_int_eq(sbx__api_escape(&b, ""), SBX_OK);
    ck_assert_uint_eq(b.len, 0);
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_api_escape_every_byte)
{
    sbx__buf b = SBX__BUF_INIT;
    for (int c = 1; c < 256; c++) {
        char in[2] = {(char)c, '\0'}, want[4];
        int unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                         c == '-' || c == '_' || c == '.' || c == '~';
        if (unreserved)
            snprintf(want, sizeof want, "%c", c);
        else
            snprintf(want, sizeof want, "%%%02X", (unsigned)c);
        sbx__buf_clear(&b);
        ck_assert_int_eq(sbx__api_escape(&b, in), SBX_OK);
        ck_assert_msg(strcmp(b.data, want) == 0, "byte 0x%02x gave '%s', expected '%s'", (unsigned)c, b.data, want);
    }
    sbx__buf_free(&b);
}
END_TEST

/* ---- out of memory ----------------------------------------------------------------- */

struct oom_create {
    sbx__strlist env;
    sbx__strlist argv;
};

static sbx_status oom_bodies(void *ctx)
{
    static const uint32_t ports[] = {3000, 4000};
    struct oom_create *c = ctx;
    struct sbx__create_spec s = {0};
    char *body;
    json_t *o;

    s.project = "prj";
    s.runtime = "node22";
    s.policy_json = "{\"mode\":\"deny-all\"}";
    s.timeout_ms = 1000;
    s.vcpus = 2;
    s.ports = ports;
    s.nports = 2;
    s.env = &c->env;
    s.source = SBX__SRC_GIT;
    s.url = "https://x/y.git";
    s.password = "pw";
    s.depth = 2;
    body = create_body(&s);
    if (!body)
        return SBX_E_NOMEM;
    o = parse_obj(body);
    ck_assert_str_eq(str_of(json_object_get(o, "source"), "password"), "pw");
    ck_assert_uint_eq(json_object_size(json_object_get(o, "env")), 3);
    json_decref(o);
    sbx__free(body);

    body = run_body(&c->argv, "/tmp", &c->env, true, true);
    if (!body)
        return SBX_E_NOMEM;
    o = parse_obj(body);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "args")), 2);
    json_decref(o);
    sbx__free(body);

    return SBX_OK;
}

/* Each builder once: a failure is SBX_E_NOMEM with r left empty. */
static sbx_status oom_builders(void *ctx)
{
    struct oom_create *c = ctx;
    struct sbx__create_spec s = {0};
    struct sbx__api_req r;
    sbx__buf url = SBX__BUF_INIT;
    sbx_status st = SBX_OK;
    int step;

    s.project = "prj";
    s.env = &c->env;
    for (step = 0; step < 18 && st == SBX_OK; step++) {
        switch (step) {
        case 0: st = sbx__proto_v1.create_sandbox(&r, &s); break;
        case 1: st = sbx__proto_v1.get_sandbox(&r, ODD_ID); break;
        case 2: st = sbx__proto_v1.stop_sandbox(&r, ODD_ID); break;
        case 3: st = sbx__proto_v1.extend_timeout(&r, ODD_ID, 5); break;
        case 4: st = sbx__proto_v1.update_network_policy(&r, ODD_ID, "{\"mode\":\"allow-all\"}"); break;
        case 5: st = sbx__proto_v1.list_sandboxes(&r, "a project", 10, 1, 2, NULL); break;
        case 6: st = sbx__proto_v1.list_snapshots(&r, "a project", 10, 1, 2, NULL); break;
        case 7: st = sbx__proto_v1.create_snapshot(&r, ODD_ID, -1); break;
        case 8: st = sbx__proto_v1.create_snapshot(&r, ODD_ID, 1000); break;
        case 9: st = sbx__proto_v1.get_snapshot(&r, ODD_ID); break;
        case 10: st = sbx__proto_v1.delete_snapshot(&r, ODD_ID); break;
        case 11: st = sbx__proto_v1.mkdir(&r, ODD_ID, "/d"); break;
        case 12: st = sbx__proto_v1.write_files(&r, ODD_ID); break;
        case 13: st = sbx__proto_v1.read_file(&r, ODD_ID, "/f"); break;
        case 14: st = sbx__proto_v1.run_command(&r, ODD_ID, &c->argv, "/tmp", &c->env, true, true, 0); break;
        case 15: st = sbx__proto_v1.get_command(&r, ODD_ID, "c1"); break;
        case 16: st = sbx__proto_v1.wait_command(&r, ODD_ID, "c1"); break;
        default: st = sbx__proto_v1.command_logs(&r, ODD_ID, "c1"); break;
        }
        if (st != SBX_OK) {
            ck_assert_int_eq(st, SBX_E_NOMEM);
            ck_assert_ptr_null(r.path);
            ck_assert_ptr_null(r.body);
        } else {
            ck_assert_ptr_nonnull(r.path);
            sbx__api_req_free(&r);
        }
    }
    if (st == SBX_OK && (st = sbx__proto_v1.kill_command(&r, ODD_ID, "c1", 9)) == SBX_OK)
        sbx__api_req_free(&r);
    if (st == SBX_OK && (st = sbx__buf_puts(&url, "http://h/x")) == SBX_OK)
        st = sbx__api_add_team(&url, "a team");
    sbx__buf_free(&url);
    return st;
}

START_TEST(test_api_builders_out_of_memory)
{
    static const char *const envv[] = {"A=1", "B=2"};
    static const char *const argv[] = {"echo", "a"};
    struct oom_create c;
    strlist(&c.env, envv, 2);
    strlist(&c.argv, argv, 2);
    ck_assert_int_gt(sbx_test_oom_loop(oom_builders, &c), 18);
    sbx__strlist_clear(&c.env);
    sbx__strlist_clear(&c.argv);
}
END_TEST

START_TEST(test_api_bodies_out_of_memory)
{
    static const char *const envv[] = {"A=1", "B=2", "C=3"};
    static const char *const argv[] = {"echo", "a", "b"};
    struct oom_create c;
    strlist(&c.env, envv, 3);
    strlist(&c.argv, argv, 3);
    ck_assert_int_gt(sbx_test_oom_loop(oom_bodies, &c), 3);
    sbx__strlist_clear(&c.env);
    sbx__strlist_clear(&c.argv);
}
END_TEST

static sbx_status oom_parsers(void *ctx)
{
    struct sbx__sandbox_info in = {0};
    struct sbx__command_info ci = {0};
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx__err err = {0};
    sbx_status st;
    (void)ctx;

    st = sbx__proto_v1.parse_sandbox(sandbox_full, strlen(sandbox_full), &in, &err);
    if (st == SBX_OK) {
        ck_assert_str_eq(in.cwd, "/vercel/sandbox");
        ck_assert_uint_eq(in.nroutes, 2);
        ck_assert_str_eq(in.routes[1].url, "https://b.example");
        ck_assert_ptr_nonnull(in.json);
        ck_assert_ptr_nonnull(in.network_policy_json);
        st = sbx__api_parse_command(command_full, strlen(command_full), &ci, &err);
    }
    if (st == SBX_OK) {
        ck_assert_str_eq(ci.id, "cmd_1");
        st = sbx__proto_v1.parse_snapshot(snapshot_full, strlen(snapshot_full), &sn, &sb, &err);
    }
    if (st == SBX_OK) {
        ck_assert_str_eq(sn.source_sandbox_id, "sbx_1");
        ck_assert_str_eq(sb.region, "iad1");
        ck_assert_ptr_nonnull(sn.json);
    }
    if (st != SBX_OK)
        ck_assert_int_eq(err.code, st);
    sbx__sandbox_info_free(&in);
    sbx__command_info_free(&ci);
    sbx__snapshot_info_free(&sn);
    sbx__sandbox_info_free(&sb);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_api_parsers_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_parsers, NULL), 10);
}
END_TEST

static sbx_status oom_log_and_escape(void *ctx)
{
    sbx__buf data = SBX__BUF_INIT, url = SBX__BUF_INIT;
    sbx__err err = {0};
    int stream = 0;
    sbx_status st;
    (void)ctx;
    st = log_line("{\"stream\":\"stderr\",\"data\":\"some output that needs a buffer\"}", &stream, &data, &err);
    if (st == SBX_OK) {
        ck_assert_str_eq(data.data, "some output that needs a buffer");
        sbx__buf_free(&data); /* so the next line must allocate again */
        st = log_line("{\"stream\":\"error\",\"data\":{\"code\":\"c\",\"message\":\"m\"}}", &stream, &data, &err);
    }
    if (st == SBX_OK) {
        ck_assert_str_eq(data.data, "c: m");
        st = sbx__api_escape(&url, "a b/c\xc3\xa9 and a longer tail to make the buffer grow more than once "
                                   "0123456789012345678901234567890123456789");
    }
    if (st == SBX_OK)
        ck_assert(strncmp(url.data, "a%20b%2Fc%C3%A9%20and", 21) == 0);
    else if (err.code != SBX_OK)
        ck_assert_int_eq(err.code, st);
    sbx__buf_free(&data);
    sbx__buf_free(&url);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_api_log_and_escape_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_log_and_escape, NULL), 2);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("api");
    TCase *req = tcase_create("requests");
    TCase *resp = tcase_create("responses");
    TCase *misc = tcase_create("errors");
    TCase *oom = tcase_create("oom");

    SBX_TEST_ADD(req, test_api_create_body_minimal);
    SBX_TEST_ADD(req, test_api_create_body_full_git);
    SBX_TEST_ADD(req, test_api_create_body_git_without_options);
    SBX_TEST_ADD(req, test_api_create_body_tarball_source);
    SBX_TEST_ADD(req, test_api_create_body_snapshot_source_omits_runtime);
    SBX_TEST_ADD(req, test_api_body_utf8);
    SBX_TEST_ADD(req, test_api_env_long_names_not_dropped);
    SBX_TEST_ADD(req, test_api_run_body_fields);
    SBX_TEST_ADD(req, test_api_path_and_int_bodies);
    SBX_TEST_ADD(req, test_api_check_policy);
    SBX_TEST_ADD(req, test_api_req_sandboxes);
    SBX_TEST_ADD(req, test_api_req_snapshots);
    SBX_TEST_ADD(req, test_api_req_files);
    SBX_TEST_ADD(req, test_api_req_commands);
    SBX_TEST_ADD(req, test_api_req_lists);
    SBX_TEST_ADD(req, test_api_add_team);
    suite_add_tcase(s, req);

    SBX_TEST_ADD(resp, test_api_parse_sandbox_full);
    SBX_TEST_ADD(resp, test_api_parse_sandbox_optional_fields);
    SBX_TEST_ADD(resp, test_api_parse_sandbox_required_fields);
    SBX_TEST_ADD(resp, test_api_parse_sandbox_bad_shapes);
    SBX_TEST_ADD(resp, test_api_parse_sandbox_routes);
    SBX_TEST_ADD(resp, test_api_parse_command);
    SBX_TEST_ADD(resp, test_api_parse_command_required_fields);
    SBX_TEST_ADD(resp, test_api_parse_snapshot);
    SBX_TEST_ADD(resp, test_api_parse_snapshot_expiry_optional);
    SBX_TEST_ADD(resp, test_api_parse_snapshot_required_fields);
    SBX_TEST_ADD(resp, test_api_parse_odd_numbers_and_nul);
    SBX_TEST_ADD(resp, test_api_check_list);
    SBX_TEST_ADD(resp, test_api_parse_log_streams);
    SBX_TEST_ADD(resp, test_api_parse_log_invalid);
    SBX_TEST_ADD(resp, test_api_parse_log_data_keeps_nul_bytes);
    suite_add_tcase(s, resp);

    SBX_TEST_ADD(misc, test_api_error_text_json);
    SBX_TEST_ADD(misc, test_api_error_text_other_bodies);
    SBX_TEST_ADD(misc, test_api_status_for);
    SBX_TEST_ADD(misc, test_api_escape_known_strings);
    SBX_TEST_ADD(misc, test_api_escape_every_byte);
    suite_add_tcase(s, misc);

    SBX_TEST_ADD(oom, test_api_bodies_out_of_memory);
    SBX_TEST_ADD(oom, test_api_builders_out_of_memory);
    SBX_TEST_ADD(oom, test_api_parsers_out_of_memory);
    SBX_TEST_ADD(oom, test_api_log_and_escape_out_of_memory);
    suite_add_tcase(s, oom);
    return s;
}
