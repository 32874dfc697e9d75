/* SPDX-License-Identifier: MIT */
/*
 * client_job_types: each job type carried out through the public API
 * (sbx_job) against sbxd and the test internet (testnet.md): repo.clone
 * from git.test over git://, dumb and smart HTTP (refs, tags, commit ids,
 * depth, dir), a private repository whose token is brokered by header
 * injection and never enters the sandbox; deps.install of tests/fixtures/ts-project
 * from registry.test and the verify.* scripts after it; db.migrate against
 * db.test; and the network preset of each job in force for that job only
 * (verify.* reach nothing). Every test has its own fixture and sbxd.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_it.h"
#include "testnet.h"

#ifndef TESTNET_FIXTURES_DIR
#define TESTNET_FIXTURES_DIR ""
#endif

#define ok_j(call, j) expect_st(call, SBX_OK, sbx_job_last_error, j)
#define WS "/vercel/sandbox"
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct env {
    struct testnet *net;
    struct sbxd *d;
    sbx_client *c;
    sbx_sandbox *s;
    sbx_policy *sh; /* the default policy, and sh for every type */
};

static struct env setup(unsigned flags)
{
    struct env e;
    e.net = testnet_start(flags);
    e.d = sbxd_start(testnet_sbxd_args(e.net), NULL);
    e.c = it_client(e.d);
    e.s = it_sandbox(e.c);
    e.sh = sbx_policy_new();
    ck_assert_ptr_nonnull(e.sh);
    ck_assert_int_eq(sbx_policy_allow_program(e.sh, NULL, "sh"), SBX_OK);
    return e;
}

static void teardown(struct env *e)
{
    sbx_policy_free(e->sh);
    sbx_sandbox_free(e->s);
    sbx_client_free(e->c);
    sbxd_stop(e->d);
    testnet_stop(e->net);
}

static json_t *result(sbx_job *j)
{
    char *s = NULL;
    json_t *r;
    ok_j(sbx_job_result_to_json(j, &s), j);
    r = json_loads(s, 0, NULL);
    ck_assert_msg(r != NULL, "result is not JSON: %s", s);
    sbx_free(s);
    return r;
}

static char *result_text(sbx_job *j)
{
    char *s = NULL;
    ok_j(sbx_job_result_to_json(j, &s), j);
    return s;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    ck_assert_msg(v != NULL, "no string '%s'", k);
    return v;
}

/* Run j in e's sandbox and check its verdict, printing the result if not. */
static void run_expect(struct env *e, sbx_job *j, sbx_verdict want)
{
    ok_j(sbx_job_run(j, e->s), j);
    if (sbx_job_verdict(j) != want) {
        char *s = result_text(j);
        ck_abort_msg("verdict %s, expected %s; result: %s", sbx_job_verdict_name(sbx_job_verdict(j)),
                     sbx_job_verdict_name(want), s);
    }
}

/* A repo.clone job (NULL inputs not set), run, expecting want. A git://
 * URL is cloned with the job's network preset off, in the sandbox's own
 * open network (the sandbox is opened again first, as a job before may have
 * closed it); under the preset it works too
 * (test_client_job_types_clone_git_protocol_under_preset). Over dumb HTTP
 * (the fixture's) git cannot make a shallow clone; over smart HTTP
 * (http://git.test/smart/...) it can. */
static sbx_job *run_clone(struct env *e, const char *url, const char *ref, const char *depth, const char *dir,
                          sbx_verdict want)
{
    sbx_job *j = sbx_job_new(e->c);
    ck_assert_ptr_nonnull(j);
    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    if (strncmp(url, "git://", 6) == 0) {
        ok_s(sbx_sandbox_update_network_policy(e->s, "{\"mode\":\"allow-all\"}"), e->s);
        ok_j(sbx_job_set_option(j, "network_policy", "off"), j);
    }
    ok_j(sbx_job_set_input(j, "url", url), j);
    if (ref)
        ok_j(sbx_job_set_input(j, "ref", ref), j);
    if (depth)
        ok_j(sbx_job_set_input(j, "depth", depth), j);
    if (dir)
        ok_j(sbx_job_set_input(j, "dir", dir), j);
    run_expect(e, j, want);
    return j;
}

/* The commit a passed clone resolved. */
static void expect_commit(sbx_job *j, const char *want)
{
    json_t *r = result(j);
    const char *got = json_string_value(json_object_get(json_object_get(r, "outputs"), "resolvedCommit"));
    ck_assert_msg(got && strcmp(got, want) == 0, "resolvedCommit %s, expected %s", got ? got : "(none)", want);
    json_decref(r);
}

/* A job of type (verify.* or db.migrate) running `sh -c script` with e's
 * policy (the default one, and sh). */
static sbx_job *sh_job(struct env *e, const char *type, const char *script)
{
    const char *argv[] = {"sh", "-c", script};
    sbx_job *j = sbx_job_new(e->c);
    ck_assert_ptr_nonnull(j);
    ok_j(sbx_job_set_type(j, type), j);
    ok_j(sbx_job_set_argv(j, 3, argv), j);
    ok_j(sbx_job_set_policy(j, e->sh), j);
    return j;
}

/* Run `sh -c script` as a job of type, which must pass or fail (not be
 * denied or an error); returns its stdout tail (malloc'd) and its exit code
 * in *code. */
static char *sh_run(struct env *e, const char *type, const char *script, int *code)
{
    sbx_job *j = sh_job(e, type, script);
    json_t *r;
    char *out;
    ok_j(sbx_job_run(j, e->s), j);
    ck_assert_msg(sbx_job_verdict(j) == SBX_VERDICT_PASSED || sbx_job_verdict(j) == SBX_VERDICT_FAILED,
                  "`%s`: verdict %s: %s", script, sbx_job_verdict_name(sbx_job_verdict(j)), sbx_job_last_error(j));
    *code = sbx_job_exit_code(j);
    r = result(j);
    out = strdup(jstr(r, "stdoutTail"));
    json_decref(r);
    sbx_job_free(j);
    return out;
}

/* `sh -c script` must pass and print want (a substring) on stdout. */
static void sh_expect(struct env *e, const char *type, const char *script, const char *want)
{
    int code;
    char *out = sh_run(e, type, script, &code);
    ck_assert_msg(code == 0 && strstr(out, want), "`%s`: exit %d, stdout %s (wanted '%s')", script, code, out,
                  want);
    free(out);
}

/* A probe that tells whether a host answers: prints REACHED or BLOCKED. */
/* Through the sandbox's proxy settings, as an HTTP client is: a name the
 * policy does not allow is refused by name (the fixture's names share one
 * address, which an allowed name opens to raw TCP). */
#define CURL_PROBE(url) \
    "if curl -fsS -o /dev/null --connect-timeout 5 --max-time 10 " url "; then echo REACHED; " \
    "else echo BLOCKED; fi"
#define GIT_PROBE(url)                                                                               \
    "if timeout 15 git ls-remote " url " >/dev/null; then echo REACHED; else echo BLOCKED; fi"

/* ---- repo.clone -------------------------------------------------------------------------- */

/* The default branch over git:// and dumb HTTP; a shallow clone of one
 * commit by default; a directory of one's own. */
START_TEST(test_client_job_types_clone_default_branch)
{
    struct env e = setup(0);
    sbx_job *j;
    json_t *r;

    /* git:// first: the sandbox's network is still open (run_clone). */
    j = run_clone(&e, "git://git.test/demo.git", NULL, NULL, NULL, SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    r = result(j);
    ck_assert_str_eq(jstr(json_object_get(r, "outputs"), "workspace"), WS "/repo");
    json_decref(r);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "git -C " WS "/repo rev-list --count HEAD && cat " WS "/repo/README.md",
              "1\n# demo");

    /* depth 0: the whole history (3 commits on main). */
    j = run_clone(&e, "git://git.test/demo.git", NULL, "0", WS "/full", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "git -C " WS "/full rev-list --count HEAD", "3\n");

    /* Dumb HTTP under the clone's preset: the default shallow clone is
     * git's refusal, reported; the whole history works. */
    j = run_clone(&e, "http://git.test/demo.git", NULL, NULL, WS "/shallow-http", SBX_VERDICT_FAILED);
    r = result(j);
    ck_assert_ptr_nonnull(strstr(jstr(r, "stderrTail"), "does not support shallow"));
    json_decref(r);
    sbx_job_free(j);
    j = run_clone(&e, "http://git.test/demo.git", NULL, "0", WS "/over-http", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    r = result(j);
    ck_assert_str_eq(jstr(json_object_get(r, "outputs"), "workspace"), WS "/over-http");
    json_decref(r);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "git -C " WS "/over-http rev-list --count HEAD && ls " WS "/over-http",
              "3\nCHANGELOG.md");
    teardown(&e);
}
END_TEST

/* git's own protocol under the clone's preset: not through sbxd's HTTP
 * proxy, but over the restricted user-mode network, which reaches the git
 * host's address and nothing else. Under another host's preset it fails at
 * once. */
START_TEST(test_client_job_types_clone_git_protocol_under_preset)
{
    struct env e = setup(0);
    sbx_job *j = sbx_job_new(e.c);
    json_t *r;

    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    ok_j(sbx_job_set_input(j, "url", "git://git.test/demo.git"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    sbx_job_free(j);

    j = sh_job(&e, "db.migrate", GIT_PROBE("git://git.test/demo.git"));
    ok_j(sbx_job_set_input(j, "host", "db.example"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_str_eq(jstr(r, "stdoutTail"), "BLOCKED\n");
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* A branch, a tag and a commit id, over both transports. */
START_TEST(test_client_job_types_clone_refs)
{
    /* git:// first, while the sandbox's network is open (run_clone); dumb
     * HTTP clones the whole history. */
    static const char *const urls[] = {"git://git.test/demo.git", "http://git.test/demo.git"};
    static const char *const depth[] = {NULL, "0"};
    struct env e = setup(0);
    char dir[128], script[512];

    for (size_t u = 0; u < 2; u++) {
        sbx_job *j;
        snprintf(dir, sizeof dir, WS "/feature%zu", u);
        j = run_clone(&e, urls[u], "feature", depth[u], dir, SBX_VERDICT_PASSED);
        expect_commit(j, e.net->git_feature);
        sbx_job_free(j);
        snprintf(script, sizeof script, "cat %s/feature.txt", dir);
        sh_expect(&e, "verify.test", script, "work in progress");

        snprintf(dir, sizeof dir, WS "/tag%zu", u);
        j = run_clone(&e, urls[u], "v1.0", depth[u], dir, SBX_VERDICT_PASSED);
        expect_commit(j, e.net->git_tag);
        sbx_job_free(j);
        snprintf(script, sizeof script, "test ! -e %s/CHANGELOG.md && ls %s", dir, dir);
        sh_expect(&e, "verify.test", script, "hello.sh");

        /* The commit of v1.0 is no branch's head: it is fetched by id. */
        snprintf(dir, sizeof dir, WS "/sha%zu", u);
        j = run_clone(&e, urls[u], e.net->git_tag, depth[u], dir, SBX_VERDICT_PASSED);
        expect_commit(j, e.net->git_tag);
        sbx_job_free(j);
        snprintf(script, sizeof script, "git -C %s rev-parse HEAD", dir);
        sh_expect(&e, "verify.test", script, e.net->git_tag);
    }

    /* A ref the repository does not have fails the job (not the call). */
    {
        sbx_job *j = run_clone(&e, "http://git.test/demo.git", "no-such-branch", "0", WS "/none",
                               SBX_VERDICT_FAILED);
        ck_assert_int_ne(sbx_job_exit_code(j), 0);
        sbx_job_free(j);
    }
    teardown(&e);
}
END_TEST

/* Smart HTTP (git http-backend): the default shallow clone of one commit,
 * a branch, a tag and a commit id that is no branch's head (fetched by id,
 * as sbxrun verify --repo asks), each resolved to the fixture's commit. */
START_TEST(test_client_job_types_clone_smart_http)
{
    static const char url[] = "http://git.test/smart/demo.git";
    struct env e = setup(0);
    sbx_job *j;
    json_t *r;
    char script[512];

    j = run_clone(&e, url, NULL, NULL, WS "/smart", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "git -C " WS "/smart rev-list --count HEAD && cat " WS "/smart/CHANGELOG.md",
              "1\n## 1.1");

    j = run_clone(&e, url, "feature", NULL, WS "/smart-feature", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_feature);
    sbx_job_free(j);
    sh_expect(&e, "verify.test",
              "git -C " WS "/smart-feature rev-list --count HEAD && cat " WS "/smart-feature/feature.txt",
              "1\nwork in progress");

    j = run_clone(&e, url, "v1.0", NULL, WS "/smart-tag", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_tag);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "test ! -e " WS "/smart-tag/CHANGELOG.md && ls " WS "/smart-tag", "hello.sh");

    j = run_clone(&e, url, e.net->git_tag, NULL, WS "/smart-sha", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_tag);
    r = result(j);
    ck_assert_str_eq(jstr(json_object_get(r, "outputs"), "workspace"), WS "/smart-sha");
    json_decref(r);
    sbx_job_free(j);
    snprintf(script, sizeof script, "git -C %s/smart-sha rev-parse HEAD && git -C %s/smart-sha rev-list --count HEAD",
             WS, WS);
    {
        char want[64];
        snprintf(want, sizeof want, "%s\n1\n", e.net->git_tag);
        sh_expect(&e, "verify.test", script, want);
    }

    /* The same fetch of a commit the repository does not have fails the job. */
    j = run_clone(&e, url, "0123456789abcdef0123456789abcdef01234567", NULL, WS "/smart-none", SBX_VERDICT_FAILED);
    ck_assert_int_ne(sbx_job_exit_code(j), 0);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* The clone's network preset admits the git host only: with the sandbox
 * left under it (network_policy off for the probe), git.test answers and
 * www.test does not; a verify job (deny-all) reaches neither. */
START_TEST(test_client_job_types_clone_preset_host_only)
{
    struct env e = setup(0);
    sbx_job *j;
    int code;
    char *out;

    j = run_clone(&e, "http://git.test/demo.git", NULL, "0", NULL, SBX_VERDICT_PASSED);
    sbx_job_free(j);

    /* Under the clone's preset: its host only. */
    j = sh_job(&e, "verify.test", GIT_PROBE("http://git.test/demo.git") "; " CURL_PROBE("http://www.test/hello.txt"));
    ok_j(sbx_job_set_option(j, "network_policy", "off"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    {
        json_t *r = result(j);
        ck_assert_str_eq(jstr(r, "stdoutTail"), "REACHED\nBLOCKED\n");
        json_decref(r);
    }
    sbx_job_free(j);

    /* A verify job's own preset: nothing. */
    out = sh_run(&e, "verify.test", CURL_PROBE("http://www.test/hello.txt"), &code);
    ck_assert_str_eq(out, "BLOCKED\n");
    free(out);
    teardown(&e);
}
END_TEST

/* The network policy follows the job: after a clone (git host preset), a
 * verify job cannot reach git.test, and the next clone can again. */
START_TEST(test_client_job_types_policy_follows_job)
{
    struct env e = setup(0);
    sbx_job *j;
    int code;
    char *out;

    j = run_clone(&e, "http://git.test/demo.git", NULL, "0", WS "/a", SBX_VERDICT_PASSED);
    sbx_job_free(j);
    out = sh_run(&e, "verify.test", GIT_PROBE("git://git.test/demo.git") "; " GIT_PROBE("http://git.test/demo.git"),
                 &code);
    ck_assert_str_eq(out, "BLOCKED\nBLOCKED\n");
    free(out);
    j = run_clone(&e, "http://git.test/demo.git", NULL, "0", WS "/b", SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    sbx_job_free(j);
    out = sh_run(&e, "verify.lint", GIT_PROBE("git://git.test/demo.git"), &code);
    ck_assert_str_eq(out, "BLOCKED\n");
    free(out);
    teardown(&e);
}
END_TEST

/* ---- a private repository ------------------------------------------------------------------ */

/* The token never enters the sandbox: the egress proxy adds the
 * Authorization header for the git host. Without it: 401, the job fails.
 * The token (and its basic-auth form) are in no result, no transcript
 * and nowhere in the sandbox: environments, git's configuration, the
 * repository's files. */
START_TEST(test_client_job_types_private_clone_token)
{
    /* The check runs with redaction off, and prints markers only: the
     * token is assembled in the shell, never written whole in argv. */
    static const char check[] =
        "T=tn-private-; T=${T}7f3c9a1e5b2d4086; B=$(printf 'x-access-token:%s' \"$T\" | base64 -w0); "
        "for v in \"$T\" \"$B\"; do "
        "  for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; done | grep -qF \"$v\" && echo IN-ENV; "
        "  git -C " WS "/repo config -l --show-origin | grep -qF \"$v\" && echo IN-GIT-CONFIG; "
        "  git config -l 2>/dev/null | grep -qF \"$v\" && echo IN-GLOBAL-CONFIG; "
        "  grep -rqF \"$v\" " WS "/repo/.git && echo IN-REPO; "
        "  grep -rqF \"$v\" /etc /tmp $HOME 2>/dev/null && echo IN-FILES; "
        "done; git -C " WS "/repo config -l | grep -ci 'extraheader\\|authorization' ; "
        "cat " WS "/repo/README.md | head -1";
    struct env e = setup(0);
    sbx_transcript *t = sbx_transcript_new();
    sbx_job *j;
    char *s, *tj = NULL;
    const char *b64 = "eC1hY2Nlc3MtdG9rZW46dG4tcHJpdmF0ZS03ZjNjOWExZTViMmQ0MDg2"; /* x-access-token:TOKEN */

    /* Without the token: the server's 401, a failed job. */
    j = run_clone(&e, "http://git.test/private.git", NULL, "0", WS "/denied", SBX_VERDICT_FAILED);
    ck_assert_int_ne(sbx_job_exit_code(j), 0);
    sbx_job_free(j);

    /* With it. */
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    ok_j(sbx_job_set_input(j, "url", "http://git.test/private.git"), j);
    ok_j(sbx_job_set_input(j, "depth", "0"), j); /* dumb HTTP */
    ok_j(sbx_job_set_input(j, "token", TESTNET_PRIVATE_TOKEN), j);
    ok_j(sbx_job_set_transcript(j, t), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_head);
    s = result_text(j);
    ck_assert_msg(!strstr(s, TESTNET_PRIVATE_TOKEN) && !strstr(s, b64), "token in the result: %s", s);
    ck_assert_ptr_nonnull(strstr(s, "\"token\":\"[REDACTED:secret]\""));
    sbx_free(s);
    ck_assert_int_eq(sbx_transcript_finish(t, sbx_job_verdict(j)), SBX_OK);
    ck_assert_int_eq(sbx_transcript_job_to_json(t, &tj), SBX_OK);
    ck_assert_msg(!strstr(tj, TESTNET_PRIVATE_TOKEN) && !strstr(tj, b64), "token in the transcript: %s", tj);
    sbx_free(tj);
    for (size_t i = 1; i <= sbx_transcript_step_count(t); i++) {
        ck_assert_int_eq(sbx_transcript_step_to_json(t, i, &tj), SBX_OK);
        ck_assert_msg(!strstr(tj, TESTNET_PRIVATE_TOKEN) && !strstr(tj, b64), "token in step %zu: %s", i, tj);
        sbx_free(tj);
    }
    {
        uint8_t *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(sbx_transcript_save_data(t, &data, &len), SBX_OK);
        ck_assert_ptr_null(memmem(data, len, TESTNET_PRIVATE_TOKEN, strlen(TESTNET_PRIVATE_TOKEN)));
        ck_assert_ptr_null(memmem(data, len, b64, strlen(b64)));
        sbx_free(data);
    }
    sbx_transcript_free(t);
    sbx_job_free(j);

    /* The same over smart HTTP: a shallow clone of one commit, token brokered. */
    j = run_clone(&e, "http://git.test/smart/private.git", NULL, NULL, WS "/smart-denied", SBX_VERDICT_FAILED);
    ck_assert_int_ne(sbx_job_exit_code(j), 0);
    sbx_job_free(j);
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    ok_j(sbx_job_set_input(j, "url", "http://git.test/smart/private.git"), j);
    ok_j(sbx_job_set_input(j, "ref", "feature"), j);
    ok_j(sbx_job_set_input(j, "dir", WS "/smart-private"), j);
    ok_j(sbx_job_set_input(j, "token", TESTNET_PRIVATE_TOKEN), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    expect_commit(j, e.net->git_feature);
    s = result_text(j);
    ck_assert_msg(!strstr(s, TESTNET_PRIVATE_TOKEN) && !strstr(s, b64), "token in the result: %s", s);
    sbx_free(s);
    sbx_job_free(j);
    sh_expect(&e, "verify.test",
              "git -C " WS "/smart-private rev-list --count HEAD && "
              "git -C " WS "/smart-private config -l | grep -ci 'extraheader\\|authorization' || true",
              "1\n0\n");

    /* Nothing of it in the sandbox. */
    j = sh_job(&e, "verify.test", check);
    ok_j(sbx_job_set_option(j, "redact", "off"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    {
        json_t *r = result(j);
        ck_assert_str_eq(jstr(r, "stdoutTail"), "0\n# demo\n");
        json_decref(r);
    }
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* ---- deps.install and verify.* -------------------------------------------------------------- */

static const char *const ts_files[] = {
    "package.json", "package-lock.json", "tsconfig.json", "tsconfig.test.json", "scripts/lint.js",
    "src/index.ts", "src/version.ts", "test/node-test.d.ts", "test/probe.test.ts", "test/version.test.ts", NULL,
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
    buf = malloc((size_t)n + 1);
    ck_assert(buf != NULL);
    ck_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

#define TS WS "/ts"

static void upload_ts_project(struct env *e)
{
    for (size_t i = 0; ts_files[i]; i++) {
        char src[4096], dst[512];
        size_t len;
        char *data;
        snprintf(src, sizeof src, "%s/ts-project/%s", TESTNET_FIXTURES_DIR, ts_files[i]);
        snprintf(dst, sizeof dst, TS "/%s", ts_files[i]);
        data = slurp(src, &len);
        ok_s(sbx_sandbox_write_file(e->s, dst, (const uint8_t *)data, len, 0644), e->s);
        free(data);
    }
}

static void need_registry_dir(void)
{
    char tgz[4096];
    struct stat st;
    snprintf(tgz, sizeof tgz, "%s/typescript/-/typescript-5.4.5.tgz", testnet_npm_dir());
    ck_assert_msg(stat(tgz, &st) == 0, "%s: %s; fetch the registry's tarballs first: tests/fixtures/fetch-registry.sh",
                  tgz, strerror(errno));
}

static sbx_job *install_job(struct env *e, bool scripts)
{
    sbx_job *j = sbx_job_new(e->c);
    ok_j(sbx_job_set_type(j, "deps.install"), j);
    ok_j(sbx_job_set_input(j, "dir", TS), j);
    ok_j(sbx_job_set_input(j, "registry", "http://registry.test/npm/"), j);
    if (scripts)
        ok_j(sbx_job_set_option(j, "lifecycle_scripts", "on"), j);
    return j;
}

static sbx_job *script_job(struct env *e, const char *type)
{
    sbx_job *j = sbx_job_new(e->c);
    ok_j(sbx_job_set_type(j, type), j);
    ok_j(sbx_job_set_input(j, "dir", TS), j);
    ok_j(sbx_job_set_timeout_ms(j, 120000), j);
    return j;
}

START_TEST(test_client_job_types_install_and_verify)
{
    static const char *const verify[] = {"verify.lint", "verify.typecheck", "verify.build", "verify.test"};
    struct env e;
    sbx_job *j;
    json_t *r, *o;
    int code;
    char *out;

    need_registry_dir();
    e = setup(0);
    upload_ts_project(&e);

    /* npm from the lockfile, install scripts off. */
    j = install_job(&e, false);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    o = json_object_get(r, "outputs");
    ck_assert_str_eq(jstr(o, "packageManager"), "npm");
    ck_assert_str_eq(jstr(o, "lockfile"), "package-lock.json");
    {
        json_t *steps = json_object_get(r, "steps"), *argv;
        char *a;
        ck_assert_int_eq(json_array_size(steps), 2); /* detect, install */
        argv = json_object_get(json_array_get(steps, 1), "argv");
        a = json_dumps(argv, 0);
        ck_assert_msg(strstr(a, "\"ci\"") && strstr(a, "\"--ignore-scripts\""), "install argv %s", a);
        free(a);
    }
    json_decref(r);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "if test -e " TS "/lifecycle-ran; then echo MARKER; else echo NO-MARKER; fi; "
                                 "ls " TS "/node_modules",
              "NO-MARKER\nsbx-lifecycle-probe\ntypescript\n");

    /* Each verify script passes. */
    for (size_t i = 0; i < 4; i++) {
        j = script_job(&e, verify[i]);
        run_expect(&e, j, SBX_VERDICT_PASSED);
        ck_assert_int_eq(sbx_job_exit_code(j), 0);
        sbx_job_free(j);
    }
    sh_expect(&e, "verify.test", "ls " TS "/dist", "index.js");

    /* verify.* run with no network at all; the install could. */
    out = sh_run(&e, "verify.test", CURL_PROBE("http://registry.test/npm/sbx-demo"), &code);
    ck_assert_str_eq(out, "BLOCKED\n");
    free(out);

    /* Install scripts on: the dependency's postinstall leaves its marker. */
    j = install_job(&e, true);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    {
        char *a = json_dumps(json_object_get(json_array_get(json_object_get(r, "steps"), 1), "argv"), 0);
        ck_assert_msg(!strstr(a, "--ignore-scripts"), "install argv %s", a);
        free(a);
    }
    json_decref(r);
    sbx_job_free(j);
    sh_expect(&e, "verify.test", "cat " TS "/lifecycle-ran", "sbx-lifecycle-probe postinstall");

    /* A broken source: verify.test fails, and says which test. */
    {
        size_t len;
        char path[4096], *src, *p;
        static const char good[] = "${v.major}.${v.minor}.${v.patch}${pre}";
        snprintf(path, sizeof path, "%s/ts-project/src/version.ts", TESTNET_FIXTURES_DIR);
        src = slurp(path, &len);
        p = strstr(src, good);
        ck_assert_ptr_nonnull(p);
        memcpy(p, "${v.major}.${v.minor}.${v.major}${pre}", strlen(good));
        ok_s(sbx_sandbox_write_file(e.s, TS "/src/version.ts", (const uint8_t *)src, len, 0644), e.s);
        free(src);
    }
    j = script_job(&e, "verify.test");
    run_expect(&e, j, SBX_VERDICT_FAILED);
    ck_assert_int_ne(sbx_job_exit_code(j), 0);
    r = result(j);
    ck_assert_msg(strstr(jstr(r, "stdoutTail"), "formatVersion and latest") ||
                      strstr(jstr(r, "stderrTail"), "formatVersion and latest"),
                  "the failing test is not named: stdout %s\nstderr %s", jstr(r, "stdoutTail"), jstr(r, "stderrTail"));
    ck_assert_msg(strstr(jstr(r, "stdoutTail"), "not ok") || strstr(jstr(r, "stderrTail"), "not ok"), "stdout %s",
                  jstr(r, "stdoutTail"));
    ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "exited with code"));
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* ---- db.migrate ---------------------------------------------------------------------------- */

static sbx_job *migrate_job(struct env *e, const char *key, const char *value, size_t argc, const char *const *argv)
{
    sbx_policy *p = sbx_policy_new();
    sbx_job *j = sbx_job_new(e->c);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sbx_policy_allow_program(p, "db.migrate", "psql"), SBX_OK);
    ok_j(sbx_job_set_type(j, "db.migrate"), j);
    ok_j(sbx_job_set_input(j, key, value), j);
    ok_j(sbx_job_set_argv(j, argc, argv), j);
    ok_j(sbx_job_set_policy(j, p), j);
    sbx_policy_free(p);
    return j;
}

START_TEST(test_client_job_types_db_migrate)
{
    static const char *const create[] = {"psql", "-v", "ON_ERROR_STOP=1", "host=db.test user=app dbname=app", "-c",
                                         "create table t(x int)"};
    static const char *const insert[] = {"psql", "-v", "ON_ERROR_STOP=1", "postgres://app@db.test/app", "-At", "-c",
                                         "insert into t values (42); select count(*) from t"};
    struct env e = setup(TESTNET_DB);
    sbx_job *j;
    json_t *r;
    int code;
    char *out;

    /* Under db.migrate's own preset the database is allowed by name, and
     * psql's own protocol reaches it over plain TCP (sbxd's restricted
     * user-mode network: the preset's addresses only). */
    j = migrate_job(&e, "host", "db.test:5432", NELEM(create), create);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_msg(strstr(jstr(r, "stdoutTail"), "CREATE TABLE"), "%s%s", jstr(r, "stdoutTail"),
                  jstr(r, "stderrTail"));
    json_decref(r);
    sbx_job_free(j);

    j = migrate_job(&e, "url", "postgres://app@db.test/app", NELEM(insert), insert);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_str_eq(jstr(r, "stdoutTail"), "INSERT 0 1\n1\n");
    json_decref(r);
    sbx_job_free(j);

    /* A preset naming another database host: db.test is out of reach. */
    j = migrate_job(&e, "host", "db.example:5432", NELEM(insert), insert);
    run_expect(&e, j, SBX_VERDICT_FAILED);
    r = result(j);
    ck_assert_msg(strstr(jstr(r, "stderrTail"), "Connection refused"), "%s", jstr(r, "stderrTail"));
    json_decref(r);
    sbx_job_free(j);

    /* The preset off, in the sandbox's open network: the same. */
    ok_s(sbx_sandbox_update_network_policy(e.s, "{\"mode\":\"allow-all\"}"), e.s);
    j = migrate_job(&e, "url", "postgres://app@db.test/app", NELEM(insert), insert);
    ok_j(sbx_job_set_option(j, "network_policy", "off"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_str_eq(jstr(r, "stdoutTail"), "INSERT 0 1\n2\n");
    json_decref(r);
    sbx_job_free(j);

    /* psql is not allowed without the caller's policy. */
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "db.migrate"), j);
    ok_j(sbx_job_set_input(j, "host", "db.test"), j);
    ok_j(sbx_job_set_argv(j, NELEM(create), create), j);
    run_expect(&e, j, SBX_VERDICT_DENIED);
    sbx_job_free(j);

    /* The same database from a verify job (deny-all): unreachable. */
    out = sh_run(&e, "verify.test",
                 "if psql 'host=db.test user=app dbname=app connect_timeout=5' -At -c 'select 1' >/dev/null; then "
                 "echo REACHED; else echo BLOCKED; fi",
                 &code);
    ck_assert_str_eq(out, "BLOCKED\n");
    free(out);
    /* db.migrate's preset admits no web host. */
    j = sh_job(&e, "db.migrate", CURL_PROBE("http://www.test/hello.txt"));
    ok_j(sbx_job_set_input(j, "host", "db.test:5432"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_str_eq(jstr(r, "stdoutTail"), "BLOCKED\n");
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* ---- edges of the request ------------------------------------------------------------------- */

/* A relative "dir" is inside the workspace: the commands run there and the
 * artifacts are read from there. */
START_TEST(test_client_job_types_relative_dir)
{
    static const char pkg[] = "{\"name\":\"t\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"pwd > where.txt && "
                              "pwd\"}}";
    static const char lock[] = "{\"name\":\"t\",\"version\":\"1.0.0\",\"lockfileVersion\":3,\"requires\":true,"
                               "\"packages\":{\"\":{\"name\":\"t\",\"version\":\"1.0.0\"}}}";
    struct env e = setup(0);
    sbx_job *j = sbx_job_new(e.c);
    json_t *r, *a;

    ok_s(sbx_sandbox_write_file(e.s, WS "/sub/app/package.json", (const uint8_t *)pkg, strlen(pkg), 0644), e.s);
    ok_s(sbx_sandbox_write_file(e.s, WS "/sub/app/package-lock.json", (const uint8_t *)lock, strlen(lock), 0644),
         e.s);
    ok_j(sbx_job_set_type(j, "verify.test"), j);
    ok_j(sbx_job_set_input(j, "dir", "sub/app"), j);
    ok_j(sbx_job_add_artifact(j, "where.txt"), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    r = result(j);
    ck_assert_ptr_nonnull(strstr(jstr(r, "stdoutTail"), WS "/sub/app\n"));
    a = json_array_get(json_object_get(r, "artifacts"), 0);
    ck_assert_msg(json_is_true(json_object_get(a, "found")), "%s", json_dumps(r, 0));
    ck_assert_str_eq(jstr(a, "content"), WS "/sub/app\n");
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* A timeout as long as the API takes (any ms >= 0) is no timeout at once. */
START_TEST(test_client_job_types_huge_timeout)
{
    struct env e = setup(0);
    sbx_job *j = sh_job(&e, "verify.test", "echo still-here");
    ok_j(sbx_job_set_timeout_ms(j, INT64_MAX), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    sbx_job_free(j);
    j = sh_job(&e, "verify.test", "echo still-here");
    ok_j(sbx_job_set_timeout_ms(j, INT64_MAX - 1000), j);
    run_expect(&e, j, SBX_VERDICT_PASSED);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* Freeing a job whose op the caller still holds (job.h: "a job still
 * running is cancelled first"): the op ends cancelled, its output callback
 * is not called again, and the op frees cleanly, in either order, also
 * after the run ended. */
static int count_calls(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    (void)stream, (void)data, (void)len;
    ++*(int *)user;
    return 0;
}

START_TEST(test_client_job_types_free_while_running)
{
    struct env e = setup(0);
    sbx_job *j = sh_job(&e, "verify.test", "echo going; sleep 30; echo late");
    sbx_op *op = NULL;
    int calls = 0, seen;
    int64_t t0 = mono_ms();

    ok_j(sbx_job_set_output_cb(j, count_calls, &calls), j);
    ok_j(sbx_job_run_start(j, e.s, &op), j);
    while (!sbx_op_done(op) && calls == 0 && mono_ms() - t0 < 10000)
        sbx_client_run(e.c, 100);
    ck_assert(!sbx_op_done(op));
    ck_assert_int_gt(calls, 0);
    seen = calls;
    sbx_job_free(j);
    ck_assert_int_eq(sbx_op_wait(op, 20000), SBX_E_CANCELLED);
    ck_assert(mono_ms() - t0 < 15000);
    ck_assert_int_eq(calls, seen);
    sbx_op_free(op);

    /* Freed, then the op freed without waiting. */
    j = sh_job(&e, "verify.test", "sleep 30");
    ok_j(sbx_job_run_start(j, e.s, &op), j);
    sbx_client_run(e.c, 200);
    sbx_job_free(j);
    sbx_op_free(op);

    /* The run over, the job freed before its op. */
    j = sh_job(&e, "verify.test", "echo done");
    ok_j(sbx_job_run_start(j, e.s, &op), j);
    ck_assert_int_eq(sbx_op_wait(op, 20000), SBX_OK);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_PASSED);
    sbx_job_free(j);
    sbx_op_free(op);
    ck_assert(mono_ms() - t0 < 30000);
    teardown(&e);
}
END_TEST

/* sbxrun verify, the command, on a real TypeScript project with a lockfile,
 * devDependencies and lint/typecheck/test/build scripts, installing from
 * the test internet's registry: every step passes; a patch that breaks the
 * code fails the test step (exit 1). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    int rc;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static json_t *verify_json(struct env *e, const char *dir, const char *extra, int *rc)
{
    const char *sbxrun = getenv("SBXRUN");
    json_error_t je;
    char out[4200];
    json_t *j;
    ck_assert_msg(sbxrun != NULL, "SBXRUN names the sbxrun program (meson sets it)");
    snprintf(out, sizeof out, "%s/out.json", dir);
    *rc = sh("SBXRUN_ENDPOINT='unix:%s' SBXRUN_TOKEN='%s' '%s' verify '%s/p' --registry http://registry.test/npm/ "
             "--json %s >'%s' 2>'%s/err'",
             e->d->sock, e->d->token, sbxrun, dir, extra, out, dir);
    j = json_load_file(out, 0, &je);
    ck_assert_msg(j != NULL, "verify printed no JSON (exit %d): %s", *rc, je.text);
    return j;
}

START_TEST(test_client_job_types_cli_verify_ts_project)
{
    struct env e = setup(0);
    char dir[] = "/tmp/sbx-ts-verify-XXXXXX";
    json_t *r, *jobs;
    int rc;
    static const char *const want[] = {"deps.install", "verify.lint", "verify.typecheck", "verify.test",
                                       "verify.build"};

    need_registry_dir();
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(sh("cp -r '%s/ts-project' '%s/p' && cd '%s/p' && git init -q && git add -A && "
                        "git -c user.name=t -c user.email=t@t commit -qm base",
                        TESTNET_FIXTURES_DIR, dir, dir),
                     0);
    r = verify_json(&e, dir, "", &rc);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, json_dumps(r, 0));
    jobs = json_object_get(json_object_get(r, "result"), "jobs");
    ck_assert_int_eq(json_array_size(jobs), 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(jstr(json_array_get(jobs, i), "jobType"), want[i]);
        ck_assert_str_eq(jstr(json_array_get(jobs, i), "status"), "passed");
    }
    ck_assert_str_eq(jstr(json_object_get(json_array_get(jobs, 0), "outputs"), "lockfile"), "package-lock.json");
    json_decref(r);

    /* A patch that breaks parseVersion: checked here, fails the test step. */
    ck_assert_int_eq(sh("cd '%s/p' && sed -i 's/major: Number(m\\[1\\])/major: Number(m[2])/' src/version.ts && "
                        "git diff > ../break.patch && git checkout -q . && test -s ../break.patch",
                        dir),
                     0);
    {
        char extra[4200];
        snprintf(extra, sizeof extra, "--patch '%s/break.patch'", dir);
        r = verify_json(&e, dir, extra, &rc);
    }
    ck_assert_int_eq(rc, 1);
    jobs = json_object_get(json_object_get(r, "result"), "jobs");
    ck_assert_str_eq(jstr(json_array_get(jobs, 3), "status"), "failed");
    ck_assert_str_eq(jstr(json_array_get(jobs, 4), "status"), "skipped");
    json_decref(r);
    ck_assert_int_eq(sh("rm -rf '%s'", dir), 0);
    teardown(&e);
}
END_TEST

/* sbxrun verify --repo over smart HTTP: the repository is fetched on this
 * machine (libgit2) and cloned in the sandbox from the same URL, so the URL
 * names the fixture by its address (this machine cannot resolve git.test;
 * the clone's preset allows the address, which is no address of the host's,
 * through sbxd's egress proxy). --ref feature's commit is cloned by id, the
 * patch applied there, and the steps' output shows both. */
static const char readme_patch[] =
    "--- a/README.md\n"
    "+++ b/README.md\n"
    "@@ -1,3 +1,3 @@\n"
    " # demo\n"
    " \n"
    "-A tiny repository served by the sbx test internet (tests/integration/testnet.md).\n"
    "+Patched by sbxrun verify.\n";

/* CHANGELOG.md is on main only: this does not apply to feature. */
static const char changelog_patch[] =
    "--- a/CHANGELOG.md\n"
    "+++ b/CHANGELOG.md\n"
    "@@ -1,3 +1,3 @@\n"
    " ## 1.1\n"
    " \n"
    "-- hello.sh prints a greeting\n"
    "+- hello.sh prints a friendly greeting\n";

/* Run sbxrun verify ARGS --json in dir, through wrap (a command prefix) if
 * not NULL; the envelope it printed. */
static json_t *verify_repo_json(struct env *e, const char *dir, const char *wrap, const char *args, int *rc)
{
    const char *sbxrun = getenv("SBXRUN");
    json_error_t je;
    char out[4200];
    json_t *j;
    ck_assert_msg(sbxrun != NULL, "SBXRUN names the sbxrun program (meson sets it)");
    snprintf(out, sizeof out, "%s/out.json", dir);
    *rc = sh("cd '%s' && SBXRUN_ENDPOINT='unix:%s' SBXRUN_TOKEN='%s' %s '%s' verify %s --json >'%s' 2>'%s/err'", dir,
             e->d->sock, e->d->token, wrap ? wrap : "", sbxrun, args, out, dir);
    j = json_load_file(out, 0, &je);
    ck_assert_msg(j != NULL, "verify printed no JSON (exit %d): %s", *rc, je.text);
    return j;
}

static json_int_t sandbox_count(struct env *e)
{
    struct http_resp *r = http_get(e->d, "/v1/sandboxes");
    json_int_t n;
    ck_assert_int_eq(r->status, 200);
    n = (json_int_t)json_array_size(json_object_get(r->json, "sandboxes"));
    http_resp_free(r);
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert(fputs(text, f) >= 0);
    ck_assert(fclose(f) == 0);
}

START_TEST(test_client_job_types_cli_verify_repo_smart_http)
{
    static const char *const want_types[] = {"repo.clone", "repo.applyPatch", "verify.lint", "verify.test"};
    struct env e = setup(0);
    char dir[] = "/tmp/sbx-repo-verify-XXXXXX", args[8192], path[4200], want[128];
    json_t *r, *res, *jobs;
    json_int_t n0;
    int rc;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/readme.patch", dir);
    write_text(path, readme_patch);
    snprintf(path, sizeof path, "%s/changelog.patch", dir);
    write_text(path, changelog_patch);

    n0 = sandbox_count(&e);
    snprintf(args, sizeof args,
             "--repo http://%s/smart/demo.git --ref feature --patch readme.patch --lint 'git rev-parse HEAD' "
             "--test 'cat README.md'",
             e.net->addr);
    r = verify_repo_json(&e, dir, NULL, args, &rc);
    {
        char *js = json_dumps(r, 0);
        ck_assert_msg(rc == 0, "exit %d: %s", rc, js);
        free(js);
    }
    ck_assert_str_eq(jstr(r, "sbxrun"), "verify");
    ck_assert(json_is_true(json_object_get(r, "ok")));
    ck_assert_int_eq(json_integer_value(json_object_get(r, "exitCode")), 0);
    res = json_object_get(r, "result");
    ck_assert_str_eq(jstr(res, "baseCommit"), e.net->git_feature);
    ck_assert_int_eq(json_array_size(json_object_get(res, "patches")), 1);
    jobs = json_object_get(res, "jobs");
    ck_assert_int_eq(json_array_size(jobs), 4);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_str_eq(jstr(json_array_get(jobs, i), "jobType"), want_types[i]);
        ck_assert_str_eq(jstr(json_array_get(jobs, i), "status"), "passed");
    }
    /* The clone resolved the feature's commit, which the checks ran on... */
    ck_assert_str_eq(jstr(json_object_get(json_array_get(jobs, 0), "outputs"), "resolvedCommit"), e.net->git_feature);
    snprintf(want, sizeof want, "%s\n", e.net->git_feature);
    ck_assert_str_eq(jstr(json_array_get(jobs, 2), "stdoutTail"), want);
    /* ...with the patch applied. */
    ck_assert_str_eq(jstr(json_array_get(jobs, 3), "stdoutTail"), "# demo\n\nPatched by sbxrun verify.\n");
    json_decref(r);
    ck_assert_int_eq(sandbox_count(&e), n0 + 1); /* the run's sandbox, stopped, is listed */

    /* The URL by name: sbxrun run where git.test resolves for libgit2 too,
     * in a mount namespace of its own whose /etc/hosts (a bind mount over
     * it, never the host's file edited) adds the name; sbxd resolves it for
     * the sandbox (--add-host). A tag this time. */
    {
        FILE *in = fopen("/etc/hosts", "r"), *out;
        char line[1024];
        snprintf(path, sizeof path, "%s/hosts", dir);
        ck_assert_ptr_nonnull(out = fopen(path, "w"));
        while (in && fgets(line, sizeof line, in))
            fputs(line, out);
        if (in)
            fclose(in);
        fprintf(out, "\n%s git.test\n", e.net->addr);
        ck_assert(fclose(out) == 0);
        snprintf(path, sizeof path, "%s/with-hosts.sh", dir);
        write_text(path, "mount --bind \"$1\" /etc/hosts && shift && exec \"$@\"\n");
        snprintf(path, sizeof path, "unshare -m --propagation private sh '%s/with-hosts.sh' '%s/hosts'", dir, dir);
    }
    r = verify_repo_json(&e, dir, path,
                         "--repo http://git.test/smart/demo.git --ref v1.0 --patch readme.patch "
                         "--lint 'git rev-parse HEAD' --test 'cat README.md'",
                         &rc);
    {
        char *js = json_dumps(r, 0);
        ck_assert_msg(rc == 0, "exit %d: %s", rc, js);
        free(js);
    }
    res = json_object_get(r, "result");
    ck_assert_str_eq(jstr(res, "baseCommit"), e.net->git_tag);
    jobs = json_object_get(res, "jobs");
    ck_assert_int_eq(json_array_size(jobs), 4);
    ck_assert_str_eq(jstr(json_object_get(json_array_get(jobs, 0), "outputs"), "resolvedCommit"), e.net->git_tag);
    snprintf(want, sizeof want, "%s\n", e.net->git_tag);
    ck_assert_str_eq(jstr(json_array_get(jobs, 2), "stdoutTail"), want);
    ck_assert_str_eq(jstr(json_array_get(jobs, 3), "stdoutTail"), "# demo\n\nPatched by sbxrun verify.\n");
    json_decref(r);

    /* A private repository, its token given with --token-env: the fetch
     * here and the clone in the sandbox (whose proxy adds it) both use it,
     * and it is nowhere in what verify printed. Without it: the fetch is
     * refused. By name, as above: a header is injected for a domain, not
     * an address. */
    {
        const char *b64 = "eC1hY2Nlc3MtdG9rZW46dG4tcHJpdmF0ZS03ZjNjOWExZTViMmQ0MDg2"; /* x-access-token:TOKEN */
        char *js, wrap[8192];
        r = verify_repo_json(&e, dir, path,
                             "--repo http://git.test/smart/private.git --ref feature --test 'cat README.md'", &rc);
        ck_assert_int_eq(rc, 125);
        json_decref(r);
        snprintf(wrap, sizeof wrap, "SBX_TEST_REPO_TOKEN=" TESTNET_PRIVATE_TOKEN " %s", path);
        r = verify_repo_json(&e, dir, wrap,
                             "--repo http://git.test/smart/private.git --ref feature --token-env SBX_TEST_REPO_TOKEN "
                             "--test 'cat README.md'",
                             &rc);
        js = json_dumps(r, 0);
        ck_assert_msg(rc == 0, "exit %d: %s", rc, js);
        ck_assert_msg(!strstr(js, TESTNET_PRIVATE_TOKEN) && !strstr(js, b64), "the token in the output: %s", js);
        free(js);
        res = json_object_get(r, "result");
        ck_assert_str_eq(jstr(res, "baseCommit"), e.net->git_feature);
        jobs = json_object_get(res, "jobs");
        ck_assert_str_eq(jstr(json_object_get(json_array_get(jobs, 0), "inputs"), "token"), "[REDACTED:secret]");
        ck_assert_ptr_nonnull(strstr(jstr(json_array_get(jobs, 1), "stdoutTail"), "# demo"));
        json_decref(r);
        ck_assert_int_eq(sh("! grep -qF -e '" TESTNET_PRIVATE_TOKEN "' -e '%s' '%s/err'", b64, dir), 0);
    }

    /* A patch that does not apply to --ref: exit 4, checked here, no sandbox. */
    n0 = sandbox_count(&e);
    snprintf(args, sizeof args,
             "--repo http://%s/smart/demo.git --ref feature --patch changelog.patch --test 'cat README.md'",
             e.net->addr);
    r = verify_repo_json(&e, dir, NULL, args, &rc);
    ck_assert_int_eq(rc, 4);
    ck_assert_str_eq(jstr(r, "sbxrun"), "verify");
    ck_assert(json_is_false(json_object_get(r, "ok")));
    ck_assert_int_eq(json_integer_value(json_object_get(r, "exitCode")), 4);
    ck_assert_ptr_null(json_object_get(r, "result"));
    ck_assert_ptr_nonnull(json_object_get(r, "error"));
    ck_assert_int_eq(sandbox_count(&e), n0);
    json_decref(r);
    ck_assert_int_eq(sh("rm -rf '%s'", dir), 0);
    teardown(&e);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_job_types");
    TCase *tc = sbx_tcase("clone", 180);
    tcase_add_test(tc, test_client_job_types_clone_default_branch);
    tcase_add_test(tc, test_client_job_types_clone_git_protocol_under_preset);
    tcase_add_test(tc, test_client_job_types_clone_refs);
    tcase_add_test(tc, test_client_job_types_clone_smart_http);
    tcase_add_test(tc, test_client_job_types_clone_preset_host_only);
    tcase_add_test(tc, test_client_job_types_policy_follows_job);
    tcase_add_test(tc, test_client_job_types_private_clone_token);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("install", 300);
    tcase_add_test(tc, test_client_job_types_install_and_verify);
    tcase_add_test(tc, test_client_job_types_cli_verify_ts_project);
    tcase_add_test(tc, test_client_job_types_cli_verify_repo_smart_http);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("edges", 60);
    tcase_add_test(tc, test_client_job_types_relative_dir);
    tcase_add_test(tc, test_client_job_types_huge_timeout);
    tcase_add_test(tc, test_client_job_types_free_while_running);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("migrate", 120);
    tcase_add_test(tc, test_client_job_types_db_migrate);
    suite_add_tcase(s, tc);
    return s;
}
