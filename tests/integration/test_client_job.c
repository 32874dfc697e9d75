/* SPDX-License-Identifier: MIT */
/* client_job: sbx_job against sbxd — verdicts, policy before anything is
 * sent, redaction of envKeys values in every output path, soft timeouts
 * with partial output, patches, artifacts, package-manager detection,
 * cancellation, the transcript. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_it.h"
#include "faultd.h"

#define ok_j(call, j) expect_st(call, SBX_OK, sbx_job_last_error, j)

struct env {
    struct sbxd *d;
    sbx_client *c;
    sbx_sandbox *s;
    sbx_policy *sh; /* the default policy, and sh */
};

static struct env setup(void)
{
    struct env e;
    e.d = sbxd_start(NULL, NULL);
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
}

/* A client of d through the fault proxy f (which counts what reaches d). */
static sbx_client *proxied(struct sbxd *d, struct faultd *f)
{
    sbx_client *c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    ok_c(sbx_client_set_endpoint(c, faultd_url(f)), c);
    ok_c(sbx_client_set_credentials(c, d->token, NULL, NULL), c);
    return c;
}

/* A verify.test job running `sh -c script` under e's policy. */
static sbx_job *sh_job(struct env *e, const char *script)
{
    const char *argv[] = {"sh", "-c", script};
    sbx_job *j = sbx_job_new(e->c);
    ck_assert_ptr_nonnull(j);
    ok_j(sbx_job_set_type(j, "verify.test"), j);
    ok_j(sbx_job_set_argv(j, 3, argv), j);
    ok_j(sbx_job_set_policy(j, e->sh), j);
    return j;
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

static const char *jstr(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    ck_assert_msg(v != NULL, "no string '%s'", k);
    return v;
}

START_TEST(test_client_job_passed_and_failed)
{
    struct env e = setup();
    sbx_job *j = sh_job(&e, "echo out-line; echo err-line >&2; exit 0");
    json_t *r;

    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_PASSED);
    ck_assert_int_eq(sbx_job_exit_code(j), 0);
    ck_assert_int_eq(sbx_job_retryable(j), 0);
    r = result(j);
    ck_assert_str_eq(jstr(r, "schema"), "sbxrun.job.result/1");
    ck_assert_str_eq(jstr(r, "status"), "passed");
    ck_assert_str_eq(jstr(r, "jobType"), "verify.test");
    ck_assert_str_eq(jstr(r, "stdoutTail"), "out-line\n");
    ck_assert_str_eq(jstr(r, "stderrTail"), "err-line\n");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "stdoutBytes")), 9);
    ck_assert_int_eq(json_array_size(json_object_get(r, "steps")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "steps"), 0), "outcome"), "exited");
    json_decref(r);
    /* A job runs once. */
    expect_st(sbx_job_run(j, e.s), SBX_E_MISUSE, sbx_job_last_error, j);
    expect_st(sbx_job_set_timeout_ms(j, 5), SBX_E_MISUSE, sbx_job_last_error, j);
    sbx_job_free(j);

    j = sh_job(&e, "echo before; exit 3");
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_FAILED);
    ck_assert_int_eq(sbx_job_exit_code(j), 3);
    r = result(j);
    ck_assert_str_eq(jstr(r, "status"), "failed");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "exitCode")), 3);
    ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "exited with code 3"));
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* A refused command never reaches the server: no command request at all,
 * counted at a proxy in front of sbxd. */
START_TEST(test_client_job_denied_before_sending)
{
    struct env e = setup();
    struct faultd *f = faultd_start(e.d);
    sbx_client *c = proxied(e.d, f);
    sbx_sandbox *s;
    sbx_job *j;
    const char *argv[] = {"sh", "-c", "echo should-not-run"};
    json_t *r;

    s = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_fetch(s, sbx_sandbox_id(e.s)), s);
    j = sbx_job_new(c);
    ok_j(sbx_job_set_type(j, "verify.test"), j);
    ok_j(sbx_job_set_argv(j, 3, argv), j); /* sh: not in the default policy */
    ok_j(sbx_job_run(j, s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_DENIED);
    ck_assert_int_eq(faultd_count(f, "POST", "/cmd"), 0);
    ck_assert_int_eq(faultd_count(f, "POST", "/network-policy"), 0);
    r = result(j);
    ck_assert_str_eq(jstr(r, "status"), "denied");
    ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "program_not_allowed"));
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "steps"), 0), "outcome"), "policy-denied");
    json_decref(r);
    sbx_job_free(j);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    faultd_stop(f);
    teardown(&e);
}
END_TEST

struct seen {
    char buf[8192];
    size_t len;
};

static int collect(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct seen *s = user;
    (void)stream;
    if (s->len + len < sizeof s->buf) {
        memcpy(s->buf + s->len, data, len);
        s->len += len;
        s->buf[s->len] = '\0';
    }
    return 0;
}

/* The value of an environment key comes back redacted everywhere: the
 * callback, the tails, the transcript; in pieces too (a line at a time). */
START_TEST(test_client_job_env_values_redacted)
{
    static const char secret[] = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
    static const char quiet[] = "s3cr3t-value-not-a-shape";
    struct env e = setup();
    sbx_job *j = sh_job(&e, "echo \"token=$GH\"; printf '%s' \"$QUIET\" | cut -c1-10; printf '%s\\n' \"$QUIET\" >&2; "
                            "echo \"not forwarded: [$HOME_SECRET]\"");
    struct seen cb = {{0}, 0};
    sbx_transcript *t = sbx_transcript_new();
    char *tj = NULL;
    json_t *r;
    char *rs;

    ok_j(sbx_job_set_env(j, "GH", secret), j);
    ok_j(sbx_job_set_env(j, "QUIET", quiet), j);
    ok_j(sbx_job_set_output_cb(j, collect, &cb), j);
    ok_j(sbx_job_set_transcript(j, t), j);
    setenv("HOME_SECRET", "leaked-from-the-host", 1);
    ok_j(sbx_job_run(j, e.s), j);
    unsetenv("HOME_SECRET");
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_PASSED);
    ck_assert_ptr_null(strstr(cb.buf, secret));
    ck_assert_ptr_null(strstr(cb.buf, quiet));
    ck_assert_ptr_nonnull(strstr(cb.buf, "token=[REDACTED"));
    ck_assert_ptr_nonnull(strstr(cb.buf, "not forwarded: []"));
    r = result(j);
    rs = json_dumps(r, 0);
    ck_assert_ptr_null(strstr(rs, secret));
    ck_assert_ptr_null(strstr(rs, quiet));
    free(rs);
    json_decref(r);
    ck_assert_int_eq(sbx_transcript_finish(t, sbx_job_verdict(j)), SBX_OK);
    ck_assert_int_eq(sbx_transcript_step_to_json(t, 1, &tj), SBX_OK);
    ck_assert_ptr_null(strstr(tj, secret));
    ck_assert_ptr_null(strstr(tj, quiet));
    ck_assert_ptr_nonnull(strstr(tj, "\"GH\""));
    sbx_free(tj);
    /* The header has the policies the job ran under: its command policy
     * for its type (sh allowed), and verify.test's preset. */
    ck_assert_int_eq(sbx_transcript_job_to_json(t, &tj), SBX_OK);
    {
        json_t *h = json_loads(tj, 0, NULL), *job = json_object_get(h, "job");
        json_t *progs = json_object_get(json_object_get(json_object_get(job, "policy"), "allow"), "programs");
        int sh = 0;
        size_t i;
        json_t *v;
        json_array_foreach(progs, i, v)
            sh = sh || strcmp(json_string_value(v), "sh") == 0;
        ck_assert_msg(sh, "the policy summary allows sh: %s", tj);
        ck_assert_str_eq(jstr(json_object_get(job, "netpolicy"), "mode"), "deny-all");
        json_decref(h);
    }
    sbx_free(tj);
    ck_assert_int_eq(sbx_transcript_verify(t, NULL), SBX_OK);
    sbx_transcript_free(t);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* Past the soft timeout the command gets SIGTERM (it may say goodbye),
 * the output so far is kept, and the result is retryable. */
START_TEST(test_client_job_soft_timeout_keeps_output)
{
    struct env e = setup();
    sbx_job *j = sh_job(&e, "trap 'echo got-term; exit 143' TERM; echo started; sleep 30 & wait");
    sbx_transcript *t = sbx_transcript_new();
    char *tj = NULL;
    json_t *r;
    int64_t t0 = mono_ms();

    ok_j(sbx_job_set_timeout_ms(j, 1500), j);
    ok_j(sbx_job_set_transcript(j, t), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_TIMED_OUT);
    ck_assert_int_eq(sbx_job_retryable(j), 1);
    ck_assert(mono_ms() - t0 < 15000);
    r = result(j);
    ck_assert_str_eq(jstr(r, "status"), "timed-out");
    ck_assert_ptr_nonnull(strstr(jstr(r, "stdoutTail"), "started"));
    ck_assert_ptr_nonnull(strstr(jstr(r, "stdoutTail"), "got-term"));
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "steps"), 0), "outcome"), "timeout");
    json_decref(r);
    /* The transcript keeps that output too, before and after SIGTERM. */
    ck_assert_int_eq(sbx_transcript_finish(t, sbx_job_verdict(j)), SBX_OK);
    ck_assert_int_eq(sbx_transcript_step_to_json(t, 1, &tj), SBX_OK);
    r = json_loads(tj, 0, NULL);
    ck_assert_str_eq(jstr(r, "reason"), "timeout");
    ck_assert_str_eq(jstr(json_object_get(json_object_get(r, "output"), "stdout"), "head"), "started\ngot-term\n");
    json_decref(r);
    sbx_free(tj);
    ck_assert_int_eq(sbx_transcript_verify(t, NULL), SBX_OK);
    sbx_transcript_free(t);
    sbx_job_free(j);

    /* A program that ignores SIGTERM gets SIGKILL after the grace. */
    j = sh_job(&e, "trap '' TERM; echo stubborn; sleep 30");
    ok_j(sbx_job_set_timeout_ms(j, 1000), j);
    ok_j(sbx_job_set_option(j, "kill_grace_ms", "500"), j);
    t0 = mono_ms();
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_TIMED_OUT);
    ck_assert(mono_ms() - t0 < 15000);
    r = result(j);
    ck_assert_ptr_nonnull(strstr(jstr(r, "stdoutTail"), "stubborn"));
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

START_TEST(test_client_job_cancel)
{
    struct env e = setup();
    sbx_job *j = sh_job(&e, "echo going; sleep 60");
    sbx_op *op = NULL;
    int64_t t0 = mono_ms();

    ok_j(sbx_job_run_start(j, e.s, &op), j);
    /* Let it start, then cancel. */
    while (!sbx_op_done(op) && mono_ms() - t0 < 1500)
        sbx_client_run(e.c, 100);
    ck_assert(!sbx_op_done(op));
    ck_assert_int_eq(sbx_op_cancel(op), SBX_OK);
    ck_assert_int_eq(sbx_op_wait(op, 20000), SBX_E_CANCELLED);
    ck_assert_int_eq(sbx_op_status(op), SBX_E_CANCELLED);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_CANCELLED);
    sbx_op_free(op);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* repo.applyPatch: checked here, uploaded, applied with git apply; an
 * unsafe patch is denied and never uploaded. */
START_TEST(test_client_job_apply_patch)
{
    static const char patch[] = "diff --git a/hello.txt b/hello.txt\n"
                                "--- a/hello.txt\n"
                                "+++ b/hello.txt\n"
                                "@@ -1 +1 @@\n"
                                "-hello\n"
                                "+hello, patched\n";
    static const char unsafe[] = "diff --git a/../escape.txt b/../escape.txt\n"
                                 "new file mode 100644\n"
                                 "--- /dev/null\n"
                                 "+++ b/../escape.txt\n"
                                 "@@ -0,0 +1 @@\n"
                                 "+x\n";
    struct env e = setup();
    sbx_job *j = sbx_job_new(e.c);
    uint8_t *data = NULL;
    size_t len = 0;
    json_t *r, *p;

    ok_s(sbx_sandbox_write_file(e.s, "/vercel/sandbox/hello.txt", (const uint8_t *)"hello\n", 6, 0644), e.s);
    ok_j(sbx_job_set_type(j, "repo.applyPatch"), j);
    ok_j(sbx_job_set_input(j, "patch", patch), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_msg(sbx_job_verdict(j) == SBX_VERDICT_PASSED, "verdict %d", sbx_job_verdict(j));
    ok_s(sbx_sandbox_read_file(e.s, "/vercel/sandbox/hello.txt", 100, &data, &len), e.s);
    ck_assert_int_eq(len, 15);
    ck_assert(memcmp(data, "hello, patched\n", 15) == 0);
    sbx_free(data);
    r = result(j);
    p = json_object_get(json_object_get(r, "outputs"), "patch");
    ck_assert_ptr_nonnull(p);
    json_decref(r);
    sbx_job_free(j);

    /* Through a proxy that counts: the unsafe patch is refused here, and
     * nothing of the job (policy, upload, command) reaches the server. */
    {
        struct faultd *f = faultd_start(e.d);
        sbx_client *c = proxied(e.d, f);
        sbx_sandbox *s;
        s = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_fetch(s, sbx_sandbox_id(e.s)), s);
        j = sbx_job_new(c);
        ok_j(sbx_job_set_type(j, "repo.applyPatch"), j);
        ok_j(sbx_job_set_input(j, "patch", unsafe), j);
        ok_j(sbx_job_run(j, s), j);
        ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_DENIED);
        ck_assert_int_eq(faultd_count(f, "POST", "/cmd"), 0);
        ck_assert_int_eq(faultd_count(f, "POST", "/fs/write"), 0);
        ck_assert_int_eq(faultd_count(f, "POST", "/network-policy"), 0);
        r = result(j);
        ck_assert_msg(strstr(jstr(r, "message"), "unsafe patch: '../escape.txt'") &&
                          strstr(jstr(r, "message"), "(rule dotdot)"),
                      "the message names the path and the rule: %s", jstr(r, "message"));
        json_decref(r);
        sbx_job_free(j);
        sbx_sandbox_free(s);
        sbx_client_free(c);
        faultd_stop(f);
    }
    teardown(&e);
}
END_TEST

/* repo.applyPatch that cannot be applied: a patch whose context is not in
 * the file fails, its message naming the file and the hunk; a malformed
 * one fails before anything is sent. A patch that applies has its id and
 * diffstat in the result. */
START_TEST(test_client_job_apply_patch_failures)
{
    static const char patch[] = "diff --git a/notes.txt b/notes.txt\n"
                                "--- a/notes.txt\n"
                                "+++ b/notes.txt\n"
                                "@@ -1,2 +1,2 @@\n"
                                " first\n"
                                "-second\n"
                                "+second, patched\n";
    static const char stale[] = "diff --git a/notes.txt b/notes.txt\n"
                                "--- a/notes.txt\n"
                                "+++ b/notes.txt\n"
                                "@@ -1,2 +1,2 @@\n"
                                " first\n"
                                "-no such line\n"
                                "+x\n";
    static const char malformed[] = "diff --git a/notes.txt b/notes.txt\n"
                                    "--- a/notes.txt\n"
                                    "+++ b/notes.txt\n"
                                    "@@ -1,5 +1,5 @@\n"
                                    " first\n";
    struct env e = setup();
    sbx_job *j;
    json_t *r, *p;
    const char *msg;

    ok_s(sbx_sandbox_write_file(e.s, "/vercel/sandbox/notes.txt", (const uint8_t *)"first\nsecond\n", 13, 0644), e.s);
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.applyPatch"), j);
    ok_j(sbx_job_set_input(j, "patch", stale), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_FAILED);
    r = result(j);
    msg = jstr(r, "message");
    ck_assert_msg(strstr(msg, "notes.txt") && strstr(msg, "hunk @@ -1,2 +1,2 @@"),
                  "the message names the file and the hunk: %s", msg);
    json_decref(r);
    sbx_job_free(j);

    /* Malformed (the hunk is cut short): failed, and no command ran. */
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.applyPatch"), j);
    ok_j(sbx_job_set_input(j, "patch", malformed), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_FAILED);
    r = result(j);
    ck_assert_int_eq(json_array_size(json_object_get(r, "steps")), 0);
    ck_assert_msg(strstr(jstr(r, "message"), "malformed patch: invalid patch hunk"), "the message says why: %s",
                  jstr(r, "message"));
    ck_assert_ptr_null(json_object_get(json_object_get(r, "outputs"), "patch"));
    json_decref(r);
    sbx_job_free(j);

    /* Applied: the patch's id (git patch-id --stable) and diffstat. */
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.applyPatch"), j);
    ok_j(sbx_job_set_input(j, "patch", patch), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_PASSED);
    r = result(j);
    p = json_object_get(json_object_get(r, "outputs"), "patch");
    ck_assert_str_eq(jstr(p, "patchId"), "86c09d257901e02c9eb160dc7cf7b765250719aa");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(p, "diffstat"), "files")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(p, "diffstat"), "additions")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(p, "diffstat"), "deletions")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(p, "files"), 0), "path"), "notes.txt");
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* A script job learns the package manager from the lockfile; artifacts
 * are read back, redacted and capped. */
START_TEST(test_client_job_script_and_artifacts)
{
    static const char pkg[] = "{\"name\":\"t\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"node -e \\\""
                              "require('fs').writeFileSync('report.xml', '<ok token=' + process.env.TOK + '/>');"
                              "console.log('ran-test')\\\"\"}}";
    static const char lock[] = "{\"name\":\"t\",\"version\":\"1.0.0\",\"lockfileVersion\":3,\"requires\":true,"
                               "\"packages\":{\"\":{\"name\":\"t\",\"version\":\"1.0.0\"}}}";
    struct env e = setup();
    sbx_job *j = sbx_job_new(e.c);
    json_t *r, *a, *o;

    ok_s(sbx_sandbox_write_file(e.s, "/vercel/sandbox/package.json", (const uint8_t *)pkg, strlen(pkg), 0644), e.s);
    ok_s(sbx_sandbox_write_file(e.s, "/vercel/sandbox/package-lock.json", (const uint8_t *)lock, strlen(lock), 0644),
         e.s);
    ok_j(sbx_job_set_type(j, "verify.test"), j);
    ok_j(sbx_job_set_env(j, "TOK", "artifact-secret-1234"), j);
    ok_j(sbx_job_add_artifact(j, "report.xml"), j);
    ok_j(sbx_job_add_artifact(j, "missing.xml"), j);
    ok_j(sbx_job_run(j, e.s), j);
    r = result(j);
    ck_assert_msg(sbx_job_verdict(j) == SBX_VERDICT_PASSED, "%s", json_dumps(r, 0));
    o = json_object_get(r, "outputs");
    ck_assert_str_eq(jstr(o, "packageManager"), "npm");
    ck_assert_str_eq(jstr(o, "lockfile"), "package-lock.json");
    ck_assert_ptr_nonnull(strstr(jstr(r, "stdoutTail"), "ran-test"));
    a = json_object_get(r, "artifacts");
    ck_assert_int_eq(json_array_size(a), 2);
    ck_assert(json_is_true(json_object_get(json_array_get(a, 0), "found")));
    ck_assert_ptr_nonnull(strstr(jstr(json_array_get(a, 0), "content"), "<ok token=[REDACTED"));
    ck_assert(json_is_false(json_object_get(json_array_get(a, 1), "found")));
    /* detect (ls) and the script */
    ck_assert_int_eq(json_array_size(json_object_get(r, "steps")), 2);
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* An artifact longer than artifact_max_bytes is cut there and marked
 * truncated (its read is stopped, even across many chunks); one of
 * exactly that size is whole. */
START_TEST(test_client_job_artifact_truncated)
{
    struct env e = setup();
    sbx_job *j = sh_job(&e, "head -c 300000 /dev/zero | tr '\\0' a > big.txt; printf 0123456789abcdef > exact.txt; "
                            "printf short > small.txt");
    json_t *r, *a;
    static const char *const names[] = {"big.txt", "exact.txt", "small.txt"};
    static const char *const content[] = {"aaaaaaaaaaaaaaaa", "0123456789abcdef", "short"};
    static const int truncated[] = {1, 0, 0};

    ok_j(sbx_job_set_option(j, "artifact_max_bytes", "16"), j);
    for (size_t i = 0; i < 3; i++)
        ok_j(sbx_job_add_artifact(j, names[i]), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_PASSED);
    r = result(j);
    a = json_object_get(r, "artifacts");
    ck_assert_int_eq(json_array_size(a), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(a, i);
        ck_assert(json_is_true(json_object_get(f, "found")));
        ck_assert_str_eq(jstr(f, "content"), content[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(f, "size")), (json_int_t)strlen(content[i]));
        ck_assert_msg(json_is_true(json_object_get(f, "truncated")) == truncated[i], "%s: truncated should be %d",
                      names[i], truncated[i]);
    }
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST

/* The JSON request: every field, and errors that name the field. */
START_TEST(test_client_job_json_request)
{
    struct env e = setup();
    sbx_job *j = sbx_job_new(e.c);
    json_t *r;

    expect_st(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"inputs\":{\"depth\":\"x\"}}"), SBX_E_INVALID_ARG,
              sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "inputs.depth"));
    expect_st(sbx_job_load_json(j, "{\"jobType\":\"verify.fly\"}"), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "jobType"));
    expect_st(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"extra\":1}"), SBX_E_INVALID_ARG,
              sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "extra"));
    expect_st(sbx_job_load_json(j, "{"), SBX_E_PARSE, sbx_job_last_error, j);
    ok_j(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"timeoutSeconds\":30,\"envKeys\":[\"NEEDED\"],"
                              "\"command\":[\"ls\",\"-A\"],\"inputs\":{\"dir\":\"/vercel/sandbox\"}}"),
         j);
    /* envKeys without a value: the run names it, before anything is sent. */
    expect_st(sbx_job_run(j, e.s), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "NEEDED"));
    sbx_job_free(j);

    j = sbx_job_new(e.c);
    ok_j(sbx_job_load_json(j, "{\"jobType\":\"verify.lint\",\"command\":[\"ls\",\"-A\"]}"), j);
    ok_j(sbx_job_run(j, e.s), j);
    r = result(j);
    ck_assert_str_eq(jstr(r, "status"), "passed");
    ck_assert_str_eq(jstr(r, "jobType"), "verify.lint");
    json_decref(r);
    sbx_job_free(j);
    teardown(&e);
}
END_TEST


struct events {
    char log[512];
};

static void on_progress(sbx_run *run, sbx_run_event ev, size_t i, void *user)
{
    struct events *e = user;
    static const char *const names[] = {"create", "upload", "start", "end", "skip", "stop"};
    size_t n = strlen(e->log);
    (void)run;
    snprintf(e->log + n, sizeof e->log - n, "%s%s:%zu", n ? " " : "", names[ev], i);
}

/* A run: its own sandbox (made, uploaded to, stopped), jobs in run order
 * whatever the order they were added in, a failing job ending it with the
 * rest skipped, a transcript of everything that verifies. */
START_TEST(test_client_job_run_order_and_sandbox)
{
    static const char patch[] = "diff --git a/app/v.txt b/app/v.txt\n"
                                "--- a/app/v.txt\n"
                                "+++ b/app/v.txt\n"
                                "@@ -1 +1 @@\n"
                                "-one\n"
                                "+two\n";
    struct env e = setup();
    char dir[] = "/tmp/sbx-run-XXXXXX", path[64];
    const char *cat[] = {"cat", "/vercel/sandbox/app/v.txt"};
    const char *fail[] = {"sh", "-c", "echo failing-check >&2; exit 9"};
    sbx_run *run = sbx_run_new(e.c);
    sbx_transcript *t = sbx_transcript_new();
    struct events ev = {{0}};
    sbx_job *check, *apply, *lint, *build;
    char *out = NULL;
    json_t *r, *jobs;
    size_t broken = 0;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/v.txt", dir);
    f = fopen(path, "w");
    fputs("one\n", f);
    fclose(f);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &check), SBX_OK);
    ok_j(sbx_job_set_argv(check, 2, cat), check);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.lint", &lint), SBX_OK);
    ok_j(sbx_job_set_argv(lint, 3, fail), lint);
    ok_j(sbx_job_set_policy(lint, e.sh), lint);
    ck_assert_int_eq(sbx_run_add_job(run, "repo.applyPatch", &apply), SBX_OK);
    ok_j(sbx_job_set_input(apply, "patch", patch), apply);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.build", &build), SBX_OK);
    ok_j(sbx_job_set_argv(build, 2, cat), build);
    {
        sbx_job *none = apply;
        ck_assert_int_eq(sbx_run_add_job(run, "verify.nothing", &none), SBX_E_INVALID_ARG);
        ck_assert_ptr_null(none);
        ck_assert_ptr_nonnull(strstr(sbx_run_last_error(run), "unknown job type"));
        ck_assert_int_eq(sbx_run_add_job(NULL, "verify.test", &none), SBX_E_INVALID_ARG);
        ck_assert_ptr_null(none);
    }
    /* run order: apply, lint, test, build */
    ck_assert_ptr_eq(sbx_run_job(run, 0), apply);
    ck_assert_ptr_eq(sbx_run_job(run, 1), lint);
    ck_assert_ptr_eq(sbx_run_job(run, 2), check);
    ck_assert_ptr_eq(sbx_run_job(run, 3), build);
    ok_c(sbx_run_add_upload(run, dir, "/vercel/sandbox/app"), e.c);
    ok_c(sbx_run_set_transcript(run, t), e.c);
    ok_c(sbx_run_set_progress_cb(run, on_progress, &ev), e.c);
    ck_assert_int_eq(sbx_run_execute(run), SBX_OK);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_FAILED);
    ck_assert_str_eq(ev.log, "create:0 upload:0 start:0 end:0 start:1 end:1 skip:2 skip:3 stop:0");
    {
        sbx_job *late = lint;
        ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &late), SBX_E_MISUSE);
        ck_assert_ptr_null(late);
        ck_assert_ptr_nonnull(strstr(sbx_run_last_error(run), "jobs are added before"));
        ck_assert_uint_eq(sbx_run_job_count(run), 4);
    }
    ck_assert_int_eq(sbx_job_verdict(apply), SBX_VERDICT_PASSED);
    ck_assert_int_eq(sbx_job_verdict(lint), SBX_VERDICT_FAILED);
    ck_assert_int_eq(sbx_run_result_to_json(run, &out), SBX_OK);
    r = json_loads(out, 0, NULL);
    sbx_free(out);
    ck_assert_str_eq(jstr(r, "status"), "failed");
    jobs = json_object_get(r, "jobs");
    ck_assert_int_eq(json_array_size(jobs), 4);
    ck_assert_str_eq(jstr(json_array_get(jobs, 1), "stderrTail"), "failing-check\n");
    ck_assert_str_eq(jstr(json_array_get(jobs, 2), "status"), "skipped");
    /* The sandbox it made is stopped; in 2.x the named sandbox is deleted. */
    ck_assert_ptr_nonnull(sbx_run_sandbox(run));
    ck_assert(sbx_wait_status(e.d, jstr(r, "sandboxId"), "stopped", 10000));
    if (it_v2()) {
        struct http_resp *hr = http_get(e.d, "/v2/sandboxes/%s", sbx_sandbox_name(sbx_run_sandbox(run)));
        ck_assert_ptr_nonnull(sbx_sandbox_name(sbx_run_sandbox(run)));
        expect_error(hr, 404, "not_found");
        http_resp_free(hr);
    }
    json_decref(r);
    ck_assert_int_eq(sbx_transcript_verify(t, &broken), SBX_OK);
    ck_assert_int_eq(sbx_transcript_complete(t), 1);
    ck_assert_int_eq(sbx_transcript_step_count(t), 2);
    /* The header: each job's policies, in run order; only the lint job's
     * own policy allows sh. */
    ck_assert_int_eq(sbx_transcript_job_to_json(t, &out), SBX_OK);
    {
        json_t *h = json_loads(out, 0, NULL), *job = json_object_get(h, "job");
        json_t *pols = json_object_get(json_object_get(job, "policy"), "jobs");
        json_t *nps = json_object_get(json_object_get(job, "netpolicy"), "jobs");
        ck_assert_int_eq(json_array_size(pols), 4);
        ck_assert_int_eq(json_array_size(nps), 4);
        char *lint_pol = json_dumps(json_array_get(pols, 1), JSON_COMPACT);
        char *test_pol = json_dumps(json_array_get(pols, 2), JSON_COMPACT);
        ck_assert_ptr_nonnull(strstr(lint_pol, "\"sh\""));
        ck_assert_ptr_null(strstr(test_pol, "\"sh\""));
        free(lint_pol);
        free(test_pol);
        for (size_t i = 0; i < 4; i++)
            ck_assert_str_eq(jstr(json_array_get(nps, i), "mode"), "deny-all");
        json_decref(h);
    }
    sbx_free(out);
    sbx_transcript_free(t);
    sbx_run_free(run);
    unlink(path);
    rmdir(dir);

    /* keep_going: every check runs; the verdict is the first failure's. */
    run = sbx_run_new(e.c);
    ok_c(sbx_run_set_sandbox(run, e.s), e.c);
    ok_c(sbx_run_set_option(run, "keep_going", "on"), e.c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.lint", &lint), SBX_OK);
    ok_j(sbx_job_set_argv(lint, 3, fail), lint);
    ok_j(sbx_job_set_policy(lint, e.sh), lint);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &check), SBX_OK);
    ok_j(sbx_job_set_argv(check, 1, (const char *[]){"ls"}), check);
    ck_assert_int_eq(sbx_run_execute(run), SBX_OK);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_FAILED);
    ck_assert_int_eq(sbx_job_verdict(check), SBX_VERDICT_PASSED);
    sbx_run_free(run);
    /* A given sandbox is not stopped. */
    ok_s(sbx_sandbox_refresh(e.s), e.s);
    ck_assert_str_eq(sbx_sandbox_status(e.s), "running");
    teardown(&e);
}
END_TEST

/* Budgets: the number of jobs is refused before anything is made; the
 * output budget stops the job that passes it (and kills its command). */
START_TEST(test_client_job_run_budgets)
{
    struct env e = setup();
    sbx_run *run = sbx_run_new(e.c);
    const char *ls[] = {"ls"};
    sbx_job *j;
    int64_t t0;
    json_t *r;

    ok_c(sbx_run_set_sandbox(run, e.s), e.c);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
        ok_j(sbx_job_set_argv(j, 1, ls), j);
    }
    ok_c(sbx_run_set_budget(run, 0, 0, 2), e.c);
    ck_assert_int_eq(sbx_run_execute(run), SBX_E_BUDGET_EXCEEDED);
    ck_assert_ptr_nonnull(strstr(sbx_run_last_error(run), "budget"));
    sbx_run_free(run);

    run = sbx_run_new(e.c);
    ok_c(sbx_run_set_sandbox(run, e.s), e.c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 3, (const char *[]){"sh", "-c", "while :; do echo 0123456789abcdef; done"}), j);
    ok_j(sbx_job_set_policy(j, e.sh), j);
    ok_c(sbx_run_set_budget(run, 60000, 100000, 0), e.c);
    t0 = mono_ms();
    ck_assert_int_eq(sbx_run_execute(run), SBX_OK);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_FAILED);
    ck_assert(mono_ms() - t0 < 20000);
    {
        char *out = NULL;
        json_t *r;
        ck_assert_int_eq(sbx_run_result_to_json(run, &out), SBX_OK);
        r = json_loads(out, 0, NULL);
        sbx_free(out);
        ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "output budget of 100000 bytes"));
        ck_assert(json_integer_value(json_object_get(r, "outputBytes")) > 100000);
        json_decref(r);
    }
    sbx_run_free(run);

    /* wall budget: the job's timeout is cut to it */
    run = sbx_run_new(e.c);
    ok_c(sbx_run_set_sandbox(run, e.s), e.c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 3, (const char *[]){"sh", "-c", "sleep 30"}), j);
    ok_j(sbx_job_set_policy(j, e.sh), j);
    ok_j(sbx_job_set_option(j, "kill_grace_ms", "200"), j);
    ok_c(sbx_run_set_budget(run, 1500, 0, 0), e.c);
    t0 = mono_ms();
    ck_assert_int_eq(sbx_run_execute(run), SBX_OK);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_TIMED_OUT);
    ck_assert(mono_ms() - t0 < 15000);
    /* The message names the run's budget, not the job's cut timeout. */
    r = result(j);
    ck_assert_msg(strstr(jstr(r, "message"), "the run's wall-time budget of 1.5s ran out"), "%s",
                  jstr(r, "message"));
    json_decref(r);
    sbx_run_free(run);
    teardown(&e);
}
END_TEST

/* A failing step's reports are still read back; a request's envKeys are
 * the only variables a job takes; a denied step of a run ends it before
 * any sandbox is made. */
START_TEST(test_client_job_failure_artifacts_envkeys_precheck)
{
    struct env e = setup();
    sbx_job *j = sh_job(&e, "echo '<testsuite failures=\"1\"/>' > junit.xml; exit 1");
    struct faultd *f;
    sbx_client *c;
    sbx_run *run;
    json_t *r;

    ok_j(sbx_job_add_artifact(j, "junit.xml"), j);
    ok_j(sbx_job_run(j, e.s), j);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_FAILED);
    r = result(j);
    ck_assert_ptr_nonnull(strstr(jstr(json_array_get(json_object_get(r, "artifacts"), 0), "content"), "failures"));
    ck_assert_ptr_nonnull(strstr(jstr(r, "message"), "exited with code 1"));
    json_decref(r);
    /* Every job keeps a transcript of its own when given none. */
    ck_assert_ptr_nonnull(sbx_job_transcript(j));
    ck_assert_int_eq(sbx_transcript_complete(sbx_job_transcript(j)), 1);
    ck_assert_int_eq(sbx_transcript_verify(sbx_job_transcript(j), NULL), SBX_OK);
    sbx_job_free(j);

    j = sbx_job_new(e.c);
    ok_j(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"command\":[\"ls\"],\"envKeys\":[\"A\"]}"), j);
    ok_j(sbx_job_set_env(j, "A", "value-a"), j);
    ok_j(sbx_job_set_env(j, "B", "value-b"), j);
    expect_st(sbx_job_run(j, e.s), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "B has a value but is not in the request's envKeys"));
    sbx_job_free(j);

    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    ok_j(sbx_job_set_input(j, "url", "git://git.test/demo.git"), j);
    ok_j(sbx_job_set_input(j, "token", "tok-123456"), j);
    expect_st(sbx_job_run(j, e.s), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    ck_assert_ptr_nonnull(strstr(sbx_job_last_error(j), "http"));
    expect_st(sbx_job_add_secret(j, (const uint8_t *)"ab", 2), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    sbx_job_free(j);

    /* The policy injects the token's header for a domain name: a URL
     * whose host is an address is refused before the run, not failed in
     * it. */
    {
        static const char *const urls[] = {"http://10.213.0.2/demo.git", "https://u@x@10.0.0.1:8443/r.git",
                                           "http://[::1]:8080/demo.git", "https://[fd00::5]/demo.git",
                                           "http://10.0.0.1./demo.git"};
        for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
            j = sbx_job_new(e.c);
            ok_j(sbx_job_set_type(j, "repo.clone"), j);
            ok_j(sbx_job_set_input(j, "url", urls[i]), j);
            ok_j(sbx_job_set_input(j, "token", "tok-123456"), j);
            expect_st(sbx_job_run(j, e.s), SBX_E_INVALID_ARG, sbx_job_last_error, j);
            ck_assert_msg(strstr(sbx_job_last_error(j), "whose host is a domain name"), "%s: %s", urls[i],
                          sbx_job_last_error(j));
            ck_assert_msg(!strstr(sbx_job_last_error(j), "tok-123456"), "%s", sbx_job_last_error(j));
            sbx_job_free(j);
        }
    }

    /* A token too short to redact would go out unredacted in the
     * clone's output: the job refuses to run with it. */
    j = sbx_job_new(e.c);
    ok_j(sbx_job_set_type(j, "repo.clone"), j);
    ok_j(sbx_job_set_input(j, "url", "https://git.test/demo.git"), j);
    ok_j(sbx_job_set_input(j, "token", "tok-1"), j);
    expect_st(sbx_job_run(j, e.s), SBX_E_INVALID_ARG, sbx_job_last_error, j);
    ck_assert_msg(strstr(sbx_job_last_error(j), "the token input cannot be redacted"), "%s", sbx_job_last_error(j));
    sbx_job_free(j);

    f = faultd_start(e.d);
    c = proxied(e.d, f);
    run = sbx_run_new(c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.lint", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 1, (const char *[]){"ls"}), j);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 3, (const char *[]){"sh", "-c", "echo no"}), j);
    ok_c(sbx_run_execute(run), c);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_DENIED);
    ck_assert_int_eq(faultd_count(f, "POST", "/sandboxes"), 0);
    ck_assert_int_eq(faultd_count(f, "POST", "/cmd"), 0);
    sbx_run_free(run);
    /* A host the job's network preset refuses (curl would read this one
     * as 10.0.0.1) ends the run before a sandbox is made for it. */
    run = sbx_run_new(c);
    ck_assert_int_eq(sbx_run_add_job(run, "repo.clone", &j), SBX_OK);
    ok_j(sbx_job_set_input(j, "url", "http://167772161/demo.git"), j);
    (void)sbx_run_execute(run);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_ERROR);
    {
        char *out = NULL;
        ck_assert_int_eq(sbx_run_result_to_json(run, &out), SBX_OK);
        r = json_loads(out, 0, NULL);
        sbx_free(out);
        ck_assert_msg(strstr(jstr(r, "message"), "repo.clone: the network preset: ") &&
                          strstr(jstr(r, "message"), "all digits"),
                      "%s", jstr(r, "message"));
        json_decref(r);
    }
    ck_assert_int_eq(faultd_count(f, "POST", "/sandboxes"), 0);
    sbx_run_free(run);
    sbx_client_free(c);
    faultd_stop(f);
    teardown(&e);
}
END_TEST

/* Retries are the engine's one policy: what cannot have reached the server
 * (a 429) is sent again; a command start that may have reached it never
 * is, and the job says it is not safe to run again; no sandbox at all is
 * "unavailable", retryable. Counted at a proxy. */
START_TEST(test_client_job_retries)
{
    struct env e = setup();
    struct faultd *f = faultd_start(e.d);
    sbx_client *c = proxied(e.d, f);
    sbx_run *run;
    sbx_job *j;
    char *out = NULL;
    json_t *r;

    /* 429 on the create and on the command's start: both sent again. */
    faultd_rule_first(f, "POST", IT_CREATE_RE, 2, FAULT_429, 0);
    faultd_rule_first(f, "POST", "/cmd$", 1, FAULT_429, 0);
    run = sbx_run_new(c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 1, (const char *[]){"ls"}), j);
    ok_c(sbx_run_execute(run), c);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_PASSED);
    ck_assert_int_eq(faultd_count(f, "POST", IT_CREATE_RE), 3);
    ck_assert_int_eq(faultd_forwarded(f, "POST", "/cmd$"), 1);
    sbx_run_free(run);
    faultd_clear(f);

    /* A reset after the start was sent: never sent again, not retryable. */
    faultd_rule_first(f, "POST", "/cmd$", 1, FAULT_RESET, 0);
    j = sbx_job_new(c);
    {
        sbx_sandbox *s = sbx_sandbox_new(c);
        int before = faultd_count(f, "POST", "/cmd$");
        ok_s(sbx_sandbox_fetch(s, sbx_sandbox_id(e.s)), s);
        ok_j(sbx_job_set_type(j, "verify.test"), j);
        ok_j(sbx_job_set_argv(j, 1, (const char *[]){"ls"}), j);
        ck_assert_int_ne(sbx_job_run(j, s), SBX_OK);
        ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_ERROR);
        ck_assert_int_eq(sbx_job_retryable(j), 0);
        ck_assert_int_eq(faultd_count(f, "POST", "/cmd$") - before, 1);
        sbx_sandbox_free(s);
    }
    sbx_job_free(j);
    faultd_clear(f);

    /* No sandbox: unavailable, retryable, nothing run. */
    faultd_rule(f, "POST", IT_CREATE_RE, 0, FAULT_STATUS, 503);
    run = sbx_run_new(c);
    ck_assert_int_eq(sbx_run_add_job(run, "verify.test", &j), SBX_OK);
    ok_j(sbx_job_set_argv(j, 1, (const char *[]){"ls"}), j);
    ck_assert_int_ne(sbx_run_execute(run), SBX_OK);
    ck_assert_int_eq(sbx_run_verdict(run), SBX_VERDICT_UNAVAILABLE);
    ck_assert_int_eq(sbx_run_result_to_json(run, &out), SBX_OK);
    r = json_loads(out, 0, NULL);
    sbx_free(out);
    ck_assert_str_eq(jstr(r, "status"), "unavailable");
    ck_assert(json_is_true(json_object_get(r, "retryable")));
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r, "jobs"), 0), "status"), "skipped");
    json_decref(r);
    sbx_run_free(run);
    sbx_client_free(c);
    faultd_stop(f);
    teardown(&e);
}
END_TEST

/* Concurrency: with jobs.max_running K, never more than K jobs of the
 * client run at once (counted inside the sandbox); with a per-project
 * limit of 1 a project's jobs run one at a time, in the order they were
 * started, while another project's run beside them. */
START_TEST(test_client_job_concurrency_limits)
{
    enum { N = 6 };
    struct env e = setup();
    sbx_job *jobs[N];
    sbx_op *ops[N];
    int max_seen = 0;
    char script[512];

    ok_c(sbx_client_set_option(e.c, "jobs.max_running", "2"), e.c);
    for (int i = 0; i < N; i++) {
        snprintf(script, sizeof script,
                 "touch /tmp/run.%d; n=$(ls /tmp/run.* | wc -l); echo running=$n; sleep 0.4; rm /tmp/run.%d", i, i);
        jobs[i] = sh_job(&e, script);
        ok_j(sbx_job_run_start(jobs[i], e.s, &ops[i]), jobs[i]);
    }
    for (int i = 0; i < N; i++) {
        json_t *r;
        int n = 0;
        ck_assert_int_eq(sbx_op_wait(ops[i], 60000), SBX_OK);
        ck_assert_int_eq(sbx_job_verdict(jobs[i]), SBX_VERDICT_PASSED);
        r = result(jobs[i]);
        ck_assert_int_eq(sscanf(jstr(r, "stdoutTail"), "running=%d", &n), 1);
        ck_assert_msg(n >= 1 && n <= 2, "job %d saw %d running", i, n);
        max_seen = n > max_seen ? n : max_seen;
        json_decref(r);
        sbx_op_free(ops[i]);
        sbx_job_free(jobs[i]);
    }
    ck_assert_int_eq(max_seen, 2);

    /* Per project, limit 1: a's jobs one at a time and in order; b beside. */
    ok_c(sbx_client_set_option(e.c, "jobs.max_running", "0"), e.c);
    ok_c(sbx_client_set_option(e.c, "jobs.max_running_per_project", "1"), e.c);
    for (int i = 0; i < N; i++) {
        const char *proj = i % 3 == 2 ? "b" : "a";
        snprintf(script, sizeof script,
                 "touch /tmp/%s.%d; n=$(ls /tmp/%s.* | wc -l); all=$(ls /tmp/a.* /tmp/b.* 2>/dev/null | wc -l); "
                 "echo $n $all; echo %d >> /tmp/order.%s; sleep 0.3; rm /tmp/%s.%d",
                 proj, i, proj, i, proj, proj, i);
        jobs[i] = sh_job(&e, script);
        ok_j(sbx_job_set_option(jobs[i], "project", proj), jobs[i]);
        ok_j(sbx_job_run_start(jobs[i], e.s, &ops[i]), jobs[i]);
    }
    max_seen = 0;
    for (int i = 0; i < N; i++) {
        json_t *r;
        int n = 0, all = 0;
        ck_assert_int_eq(sbx_op_wait(ops[i], 60000), SBX_OK);
        r = result(jobs[i]);
        ck_assert_int_eq(sscanf(jstr(r, "stdoutTail"), "%d %d", &n, &all), 2);
        ck_assert_msg(n == 1, "job %d: %d of its project ran at once", i, n);
        max_seen = all > max_seen ? all : max_seen;
        json_decref(r);
        sbx_op_free(ops[i]);
        sbx_job_free(jobs[i]);
    }
    ck_assert_int_eq(max_seen, 2); /* a and b together */
    {
        uint8_t *data = NULL;
        size_t len = 0;
        ok_s(sbx_sandbox_read_file(e.s, "/tmp/order.a", 100, &data, &len), e.s);
        ck_assert_int_eq(len, 8);
        ck_assert(memcmp(data, "0\n1\n3\n4\n", 8) == 0);
        sbx_free(data);
    }

    /* Cancelled while waiting: it ends without running. */
    ok_c(sbx_client_set_option(e.c, "jobs.max_running", "1"), e.c);
    jobs[0] = sh_job(&e, "sleep 1");
    jobs[1] = sh_job(&e, "echo never > /tmp/never");
    ok_j(sbx_job_run_start(jobs[0], e.s, &ops[0]), jobs[0]);
    ok_j(sbx_job_run_start(jobs[1], e.s, &ops[1]), jobs[1]);
    ck_assert_int_eq(sbx_op_cancel(ops[1]), SBX_OK);
    ck_assert_int_eq(sbx_op_wait(ops[1], 10000), SBX_E_CANCELLED);
    ck_assert_int_eq(sbx_job_verdict(jobs[1]), SBX_VERDICT_CANCELLED);
    ck_assert_int_eq(sbx_op_wait(ops[0], 10000), SBX_OK);
    for (int i = 0; i < 2; i++) {
        sbx_op_free(ops[i]);
        sbx_job_free(jobs[i]);
    }
    {
        uint8_t *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(sbx_sandbox_read_file(e.s, "/tmp/never", 100, &data, &len), SBX_E_NOT_FOUND);
    }
    teardown(&e);
}
END_TEST

/* Safety for plain commands: a client's policy refuses before any request
 * (sbx_command_check() too, with no sandbox yet); its redactor redacts
 * output before callbacks and buffers, a secret cut across writes too. */
START_TEST(test_client_job_client_safety)
{
    static const char secret[] = "plain-command-secret-0123456789";
    struct env e = setup();
    struct faultd *f = faultd_start(e.d);
    sbx_client *c = proxied(e.d, f);
    sbx_redactor *red = sbx_redactor_new();
    sbx_sandbox *s, *unmade;
    sbx_command *k;
    struct seen cb = {{0}, 0};
    const char *deny[] = {"sh", "-c", "echo no"};
    char script[256], buf[256];
    size_t n = 0;
    s = sbx_sandbox_new(c);
    ok_s(sbx_sandbox_fetch(s, sbx_sandbox_id(e.s)), s);
    ok_c(sbx_client_set_policy(c, e.sh, NULL), c);
    expect_st(sbx_client_set_policy(c, e.sh, "verify.nothing"), SBX_E_INVALID_ARG, sbx_client_last_error, c);

    /* Allowed by e.sh; then the default policy refuses sh. */
    unmade = sbx_sandbox_new(c);
    k = sbx_command_new(unmade);
    ok_cmd(sbx_command_set_argv(k, 3, deny), k);
    ok_cmd(sbx_command_check(k), k);
    sbx_command_free(k);
    {
        sbx_policy *def = sbx_policy_new();
        ok_c(sbx_client_set_policy(c, def, NULL), c);
        sbx_policy_free(def);
    }
    k = sbx_command_new(unmade);
    ok_cmd(sbx_command_set_argv(k, 3, deny), k);
    expect_st(sbx_command_check(k), SBX_E_POLICY_DENIED, sbx_command_last_error, k);
    ck_assert_ptr_nonnull(strstr(sbx_command_last_error(k), "program_not_allowed"));
    sbx_command_free(k);
    sbx_sandbox_free(unmade);
    k = sbx_command_new(s);
    ok_cmd(sbx_command_set_argv(k, 3, deny), k);
    expect_st(sbx_command_run(k), SBX_E_POLICY_DENIED, sbx_command_last_error, k);
    ck_assert_int_eq(faultd_count(f, "POST", "/cmd$"), 0);
    sbx_command_free(k);

    /* The redactor: the secret printed in two writes, a pause between. */
    ok_c(sbx_client_set_policy(c, e.sh, NULL), c);
    ck_assert_int_eq(sbx_redactor_add_secret(red, (const uint8_t *)secret, strlen(secret)), SBX_OK);
    ok_c(sbx_client_set_redactor(c, red), c);
    sbx_redactor_free(red); /* the client keeps the rules */
    snprintf(script, sizeof script, "printf 'a %.10s'; sleep 0.3; printf '%s b\\n'; echo x >&2", secret, secret + 10);
    k = sbx_command_new(s);
    ok_cmd(sbx_command_set_argv(k, 3, (const char *[]){"sh", "-c", script}), k);
    ok_cmd(sbx_command_set_output_cb(k, collect, &cb), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_ptr_null(strstr(cb.buf, "plain-comm"));
    ck_assert_ptr_nonnull(strstr(cb.buf, "a [REDACTED:secret] b"));
    /* The counts are of the output as printed. */
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDOUT), 2 + strlen(secret) + 3);
    sbx_command_free(k);
    k = sbx_command_new(s);
    ok_cmd(sbx_command_set_argv(k, 3, (const char *[]){"sh", "-c", script}), k);
    ok_cmd(sbx_command_run(k), k);
    ok_cmd(sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)buf, sizeof buf - 1, &n), k);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "a [REDACTED:secret] b\n");
    sbx_command_free(k);
    /* Removed: commands started later are not redacted. */
    ok_c(sbx_client_set_redactor(c, NULL), c);
    k = sbx_command_new(s);
    ok_cmd(sbx_command_set_argv(k, 3, (const char *[]){"sh", "-c", script}), k);
    ok_cmd(sbx_command_run(k), k);
    ok_cmd(sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)buf, sizeof buf - 1, &n), k);
    buf[n] = '\0';
    ck_assert_ptr_nonnull(strstr(buf, secret));
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    faultd_stop(f);
    teardown(&e);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_job");
    TCase *tc = tcase_create("job");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_client_job_passed_and_failed);
    tcase_add_test(tc, test_client_job_denied_before_sending);
    tcase_add_test(tc, test_client_job_env_values_redacted);
    tcase_add_test(tc, test_client_job_soft_timeout_keeps_output);
    tcase_add_test(tc, test_client_job_cancel);
    tcase_add_test(tc, test_client_job_apply_patch);
    tcase_add_test(tc, test_client_job_apply_patch_failures);
    tcase_add_test(tc, test_client_job_script_and_artifacts);
    tcase_add_test(tc, test_client_job_artifact_truncated);
    tcase_add_test(tc, test_client_job_json_request);
    tcase_add_test(tc, test_client_job_run_order_and_sandbox);
    tcase_add_test(tc, test_client_job_run_budgets);
    tcase_add_test(tc, test_client_job_failure_artifacts_envkeys_precheck);
    tcase_add_test(tc, test_client_job_retries);
    tcase_add_test(tc, test_client_job_concurrency_limits);
    tcase_add_test(tc, test_client_job_client_safety);
    suite_add_tcase(s, tc);
    return s;
}
