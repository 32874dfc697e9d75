/* SPDX-License-Identifier: MIT */
/* job: the job handle without a server — argument checks of every public
 * sbx_job call, inputs and options, the JSON request (each error names its
 * field, a failed load changes nothing), misuse before a run, verdict
 * names, and allocation failures met cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "job/job_int.h"

#define has(msg, sub) ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' not in '%s'", (sub), (msg))

static sbx_client *client(void)
{
    sbx_client *c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    return c;
}

static sbx_job *new_job(sbx_client *c, const char *type)
{
    sbx_job *j = sbx_job_new(c);
    ck_assert_ptr_nonnull(j);
    if (type)
        ck_assert_int_eq(sbx_job_set_type(j, type), SBX_OK);
    return j;
}

/* Expect status want from call on job j, with sub (when not NULL) in its
 * message. */
static void expect_(sbx_job *j, const char *call, sbx_status got, sbx_status want, const char *sub)
{
    ck_assert_msg(got == want, "%s: %s, wanted %s (%s)", call, sbx_status_name(got), sbx_status_name(want),
                  sbx_job_last_error(j));
    if (sub)
        has(sbx_job_last_error(j), sub);
}
#define expect(j, call, want, sub) expect_((j), #call, (call), (want), (sub))

START_TEST(test_job_null_handles)
{
    const char *argv[] = {"ls"};
    sbx_op *op = (sbx_op *)&op;
    char *out = (char *)&out;
    ck_assert_ptr_null(sbx_job_new(NULL));
    sbx_job_free(NULL);
    ck_assert_str_eq(sbx_job_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_str_eq(sbx_run_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_job_set_type(NULL, "verify.test"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_input(NULL, "dir", "x"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_argv(NULL, 1, argv), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_timeout_ms(NULL, 1), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_env(NULL, "A", "b"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_add_secret(NULL, (const uint8_t *)"abcd", 4), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_add_artifact(NULL, "a.xml"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_policy(NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_transcript(NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_output_cb(NULL, NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_set_option(NULL, "policy", "on"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_load_json(NULL, "{}"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_run(NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_run_start(NULL, NULL, &op), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_result_to_json(NULL, &out), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_job_verdict(NULL), SBX_VERDICT_ERROR);
    ck_assert_int_eq(sbx_job_exit_code(NULL), -1);
    ck_assert_int_eq(sbx_job_retryable(NULL), 0);
}
END_TEST

START_TEST(test_job_null_args)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    sbx_sandbox *s = sbx_sandbox_new(c);
    sbx_op *op = (sbx_op *)&op;

    ck_assert_str_eq(sbx_job_last_error(j), "");
    expect(j, sbx_job_set_type(j, NULL), SBX_E_INVALID_ARG, "type");
    expect(j, sbx_job_set_input(j, NULL, "x"), SBX_E_INVALID_ARG, "input");
    expect(j, sbx_job_set_argv(j, 1, NULL), SBX_E_INVALID_ARG, "argv");
    {
        const char *bad[] = {"ls", NULL};
        const char *empty[] = {""};
        expect(j, sbx_job_set_argv(j, 2, bad), SBX_E_INVALID_ARG, "argv[1]");
        expect(j, sbx_job_set_argv(j, 1, empty), SBX_E_INVALID_ARG, "program");
    }
    ck_assert_int_eq(sbx_job_set_argv(j, 0, NULL), SBX_OK); /* clears */
    expect(j, sbx_job_set_env(j, NULL, "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_add_secret(j, NULL, 4), SBX_E_INVALID_ARG, "empty");
    expect(j, sbx_job_add_secret(j, (const uint8_t *)"abcd", 0), SBX_E_INVALID_ARG, "empty");
    expect(j, sbx_job_add_artifact(j, NULL), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_set_policy(j, NULL), SBX_E_INVALID_ARG, "policy");
    expect(j, sbx_job_set_transcript(j, NULL), SBX_E_INVALID_ARG, "transcript");
    ck_assert_int_eq(sbx_job_set_output_cb(j, NULL, NULL), SBX_OK);
    expect(j, sbx_job_set_option(j, NULL, "on"), SBX_E_INVALID_ARG, "NULL");
    expect(j, sbx_job_set_option(j, "policy", NULL), SBX_E_INVALID_ARG, "NULL");
    expect(j, sbx_job_load_json(j, NULL), SBX_E_INVALID_ARG, "NULL");
    expect(j, sbx_job_run(j, NULL), SBX_E_INVALID_ARG, "sandbox");
    expect(j, sbx_job_run_start(j, s, NULL), SBX_E_INVALID_ARG, "op");
    expect(j, sbx_job_run_start(j, NULL, &op), SBX_E_INVALID_ARG, "sandbox");
    ck_assert_ptr_null(op);
    expect(j, sbx_job_result_to_json(j, NULL), SBX_E_INVALID_ARG, "out");
    /* A success clears the last error. */
    ck_assert_int_eq(sbx_job_set_timeout_ms(j, 5), SBX_OK);
    ck_assert_str_eq(sbx_job_last_error(j), "");
    sbx_sandbox_free(s);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_types)
{
    static const char *const types[] = {"repo.clone",       "repo.applyPatch", "deps.install", "verify.lint",
                                        "verify.typecheck", "verify.test",     "verify.build", "db.migrate"};
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        expect(j, sbx_job_set_type(j, types[i]), SBX_OK, NULL);
    expect(j, sbx_job_set_type(j, "verify.fly"), SBX_E_INVALID_ARG, "verify.fly");
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        has(sbx_job_last_error(j), types[i]);
    expect(j, sbx_job_set_type(j, ""), SBX_E_INVALID_ARG, "unknown job type");
    expect(j, sbx_job_set_type(j, "Verify.Test"), SBX_E_INVALID_ARG, "unknown job type");
    expect(j, sbx_job_set_type(j, "install"), SBX_E_INVALID_ARG, "unknown job type");
    /* The last good type stays. */
    ck_assert_int_eq(j->type, sbx__job_type_find("db.migrate"));
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_inputs)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "repo.clone");

    expect(j, sbx_job_set_input(j, "colour", "red"), SBX_E_INVALID_ARG, "'colour'");
    has(sbx_job_last_error(j), "url, ref, depth");
    expect(j, sbx_job_set_input(j, "URL", "x"), SBX_E_INVALID_ARG, "'URL'");
    /* depth */
    expect(j, sbx_job_set_input(j, "depth", "1"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "depth", "0"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "depth", "1000000"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "depth", "1000001"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", "-1"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", "+1"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", "1x"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", " 1"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", "99999999999999999999999"), SBX_E_INVALID_ARG, "'depth'");
    expect(j, sbx_job_set_input(j, "depth", ""), SBX_E_INVALID_ARG, "'depth'");
    ck_assert_str_eq(sbx__job_input(j, "depth"), "1000000"); /* the last good value */
    /* dir */
    expect(j, sbx_job_set_input(j, "dir", "/vercel/sandbox/repo2"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "dir", "/vercel/sandbox"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "dir", "sub/dir"), SBX_OK, NULL);
    ck_assert_str_eq(sbx__job_input(j, "dir"), "/vercel/sandbox/sub/dir"); /* kept absolute */
    expect(j, sbx_job_set_input(j, "dir", "/etc"), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", "/vercel/sandboxes"), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", "/vercel/sandbox/../etc"), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", "../x"), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", "a/./b"), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", ".."), SBX_E_INVALID_ARG, "'dir'");
    expect(j, sbx_job_set_input(j, "dir", "a\nb"), SBX_E_INVALID_ARG, "'dir'");
    /* ref, url: no options smuggled in, no control characters, UTF-8 */
    expect(j, sbx_job_set_input(j, "ref", "feature/x"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "ref", "--upload-pack=evil"), SBX_E_INVALID_ARG, "'ref'");
    expect(j, sbx_job_set_input(j, "ref", "a\tb"), SBX_E_INVALID_ARG, "'ref'");
    expect(j, sbx_job_set_input(j, "ref", "\xff\xfe"), SBX_E_INVALID_ARG, "UTF-8");
    expect(j, sbx_job_set_input(j, "url", "https://git.example.com/r.git"), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "url", "-u"), SBX_E_INVALID_ARG, "'url'");
    expect(j, sbx_job_set_input(j, "url", "https://x/\x7f"), SBX_E_INVALID_ARG, "'url'");
    expect(j, sbx_job_set_input(j, "script", "--eval"), SBX_E_INVALID_ARG, "'script'");
    ck_assert_str_eq(sbx__job_input(j, "ref"), "feature/x");
    ck_assert_str_eq(sbx__job_input(j, "url"), "https://git.example.com/r.git");
    /* NULL removes; removing what is not there is fine. */
    expect(j, sbx_job_set_input(j, "ref", NULL), SBX_OK, NULL);
    ck_assert_ptr_null(sbx__job_input(j, "ref"));
    expect(j, sbx_job_set_input(j, "ref", NULL), SBX_OK, NULL);
    expect(j, sbx_job_set_input(j, "token", "ghp_secretsecretsecret"), SBX_OK, NULL);
    /* A patch is kept as bytes. */
    expect(j, sbx_job_set_input(j, "patch", "diff --git a/x b/x\n"), SBX_OK, NULL);
    ck_assert_uint_eq(j->patch_len, strlen("diff --git a/x b/x\n"));
    expect(j, sbx_job_set_input(j, "patch", NULL), SBX_OK, NULL);
    ck_assert_ptr_null(j->patch_data);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_timeout_env_secret)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "verify.test");

    ck_assert_int_eq(j->timeout_ms, 600000);
    expect(j, sbx_job_set_timeout_ms(j, -1), SBX_E_INVALID_ARG, "timeout");
    expect(j, sbx_job_set_timeout_ms(j, 0), SBX_OK, NULL);
    expect(j, sbx_job_set_timeout_ms(j, INT64_MAX), SBX_OK, NULL);

    expect(j, sbx_job_set_env(j, "A", "1"), SBX_OK, NULL);
    expect(j, sbx_job_set_env(j, "_x9", "v"), SBX_OK, NULL);
    expect(j, sbx_job_set_env(j, "NPM_TOKEN", ""), SBX_OK, NULL);
    expect(j, sbx_job_set_env(j, "", "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_set_env(j, "9A", "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_set_env(j, "A-B", "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_set_env(j, "A=B", "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_set_env(j, "A B", "v"), SBX_E_INVALID_ARG, "name");
    expect(j, sbx_job_set_env(j, "\xc3\xa9", "v"), SBX_E_INVALID_ARG, "name");
    {
        char longname[300];
        memset(longname, 'N', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        expect(j, sbx_job_set_env(j, longname, "v"), SBX_E_INVALID_ARG, "255");
        longname[255] = '\0';
        expect(j, sbx_job_set_env(j, longname, "v"), SBX_OK, NULL);
    }
    expect(j, sbx_job_set_env(j, "B", "\xff"), SBX_E_INVALID_ARG, "UTF-8");
    ck_assert_uint_eq(j->env.n, 4);
    expect(j, sbx_job_set_env(j, "A", "2"), SBX_OK, NULL); /* replaced */
    ck_assert_uint_eq(j->env.n, 4);
    expect(j, sbx_job_set_env(j, "A", NULL), SBX_OK, NULL); /* removed */
    ck_assert_uint_eq(j->env.n, 3);
    expect(j, sbx_job_set_env(j, "A", NULL), SBX_OK, NULL);
    ck_assert_uint_eq(j->env.n, 3);
    /* A name that is a prefix of another is its own variable. */
    expect(j, sbx_job_set_env(j, "NPM", "x"), SBX_OK, NULL);
    ck_assert_uint_eq(j->env.n, 4);

    expect(j, sbx_job_add_secret(j, (const uint8_t *)"s3cr3t-1", 8), SBX_OK, NULL);
    /* What the redactor refuses is refused here: never accepted and then not redacted. */
    expect(j, sbx_job_add_secret(j, (const uint8_t *)"s3cr3t7", 7), SBX_E_INVALID_ARG, "8 to 4096 bytes");
    {
        static char big[4098];
        memset(big, 'k', 4097);
        expect(j, sbx_job_add_secret(j, (const uint8_t *)big, 4097), SBX_E_INVALID_ARG, "4097 bytes");
        expect(j, sbx_job_set_env(j, "BIG", big), SBX_E_INVALID_ARG, "4097 bytes");
        big[4096] = '\0';
        expect(j, sbx_job_set_env(j, "BIG", big), SBX_OK, NULL);
        expect(j, sbx_job_set_env(j, "BIG", NULL), SBX_OK, NULL);
    }
    expect(j, sbx_job_add_secret(j, (const uint8_t *)"a\0bcdefgh", 9), SBX_E_INVALID_ARG, "NUL byte");
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_argv_and_artifacts)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "verify.test");
    const char *argv[] = {"npx", "jest", "--ci"};
    const char *badutf[] = {"node", "\xc0\x80"};

    expect(j, sbx_job_set_argv(j, 3, argv), SBX_OK, NULL);
    ck_assert_uint_eq(j->argv.n, 3);
    expect(j, sbx_job_set_argv(j, 2, badutf), SBX_E_INVALID_ARG, "argv[1]");
    ck_assert_uint_eq(j->argv.n, 3); /* unchanged */
    expect(j, sbx_job_set_argv(j, 0, NULL), SBX_OK, NULL);
    ck_assert_uint_eq(j->argv.n, 0);

    expect(j, sbx_job_add_artifact(j, "junit.xml"), SBX_OK, NULL);
    expect(j, sbx_job_add_artifact(j, "coverage/summary.json"), SBX_OK, NULL);
    expect(j, sbx_job_add_artifact(j, "/vercel/sandbox/out/report.xml"), SBX_OK, NULL);
    expect(j, sbx_job_add_artifact(j, ""), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "/etc/passwd"), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "/vercel/sandbox2/x"), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "../x"), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "a/../../x"), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "/vercel/sandbox/../../etc/shadow"), SBX_E_INVALID_ARG, "artifact");
    expect(j, sbx_job_add_artifact(j, "a\nb"), SBX_E_INVALID_ARG, "artifact");
    ck_assert_uint_eq(j->artifact_paths.n, 3);
    for (int i = 3; i < 64; i++)
        expect(j, sbx_job_add_artifact(j, "more.xml"), SBX_OK, NULL);
    expect(j, sbx_job_add_artifact(j, "one-too-many.xml"), SBX_E_INVALID_ARG, "64");
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_options)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "deps.install");

    ck_assert(j->opt_policy && j->opt_redact && j->opt_netpolicy && !j->opt_lifecycle);
    expect(j, sbx_job_set_option(j, "lifecycle_scripts", "on"), SBX_OK, NULL);
    ck_assert(j->opt_lifecycle);
    expect(j, sbx_job_set_option(j, "lifecycle_scripts", "false"), SBX_OK, NULL);
    ck_assert(!j->opt_lifecycle);
    expect(j, sbx_job_set_option(j, "policy", "off"), SBX_OK, NULL);
    expect(j, sbx_job_set_option(j, "redact", "0"), SBX_OK, NULL);
    expect(j, sbx_job_set_option(j, "network_policy", "1"), SBX_OK, NULL);
    ck_assert(!j->opt_policy && !j->opt_redact && j->opt_netpolicy);
    expect(j, sbx_job_set_option(j, "policy", "yes"), SBX_E_INVALID_ARG, "policy");
    expect(j, sbx_job_set_option(j, "redact", ""), SBX_E_INVALID_ARG, "redact");
    expect(j, sbx_job_set_option(j, "redact", "ON"), SBX_E_INVALID_ARG, "redact");
    ck_assert(!j->opt_redact);
    expect(j, sbx_job_set_option(j, "kill_grace_ms", "250"), SBX_OK, NULL);
    ck_assert_int_eq(j->kill_grace_ms, 250);
    expect(j, sbx_job_set_option(j, "tail_bytes", "0"), SBX_OK, NULL);
    expect(j, sbx_job_set_option(j, "artifact_max_bytes", "1073741824"), SBX_OK, NULL);
    ck_assert_uint_eq(j->tail_bytes, 0);
    ck_assert_uint_eq(j->artifact_max, 1073741824u);
    expect(j, sbx_job_set_option(j, "artifact_max_bytes", "1073741825"), SBX_E_INVALID_ARG, "artifact_max_bytes");
    expect(j, sbx_job_set_option(j, "kill_grace_ms", "-5"), SBX_E_INVALID_ARG, "kill_grace_ms");
    expect(j, sbx_job_set_option(j, "kill_grace_ms", "5s"), SBX_E_INVALID_ARG, "kill_grace_ms");
    expect(j, sbx_job_set_option(j, "tail_bytes", ""), SBX_E_INVALID_ARG, "tail_bytes");
    ck_assert_int_eq(j->kill_grace_ms, 250);
    expect(j, sbx_job_set_option(j, "colour", "on"), SBX_E_UNKNOWN_OPTION, "'colour'");
    expect(j, sbx_job_set_option(j, "Policy", "on"), SBX_E_UNKNOWN_OPTION, "'Policy'");
    expect(j, sbx_job_set_option(j, "", "on"), SBX_E_UNKNOWN_OPTION, "lifecycle_scripts");
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_policy_transcript_cb)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "verify.test");
    sbx_policy *p = sbx_policy_new();
    sbx_transcript *t = sbx_transcript_new();

    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, "sh"), SBX_OK);
    expect(j, sbx_job_set_policy(j, p), SBX_OK, NULL);
    sbx_policy_free(p); /* copied */
    expect(j, sbx_job_set_policy(j, j->policy), SBX_OK, NULL);
    expect(j, sbx_job_set_transcript(j, t), SBX_OK, NULL);
    expect(j, sbx_job_set_transcript(j, t), SBX_OK, NULL); /* again: one reference kept */
    sbx_transcript_free(t);
    expect(j, sbx_job_set_output_cb(j, NULL, (void *)j), SBX_OK, NULL);
    ck_assert_ptr_null(j->cb_user);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

/* ---- the JSON request ------------------------------------------------------------------- */

static const char full_request[] = "{\"schema\":\"sbxrun.job.request/1\",\"jobType\":\"repo.clone\","
                                   "\"inputs\":{\"url\":\"https://git.example.com/r.git\",\"ref\":\"main\","
                                   "\"depth\":5,\"dir\":\"/vercel/sandbox/r\",\"token\":\"tok-1234\"},"
                                   "\"timeoutSeconds\":30,\"envKeys\":[\"GH_TOKEN\",\"CI\"],"
                                   "\"command\":[],\"artifacts\":[\"out/a.xml\"]}";

START_TEST(test_job_json_all_fields)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    expect(j, sbx_job_load_json(j, full_request), SBX_OK, NULL);
    ck_assert_int_eq(j->type, sbx__job_type_find("repo.clone"));
    ck_assert_str_eq(sbx__job_input(j, "url"), "https://git.example.com/r.git");
    ck_assert_str_eq(sbx__job_input(j, "ref"), "main");
    ck_assert_str_eq(sbx__job_input(j, "depth"), "5");
    ck_assert_str_eq(sbx__job_input(j, "dir"), "/vercel/sandbox/r");
    ck_assert_str_eq(sbx__job_input(j, "token"), "tok-1234");
    ck_assert_int_eq(j->timeout_ms, 30000);
    ck_assert_uint_eq(j->env_keys.n, 2);
    ck_assert_str_eq(j->env_keys.v[0], "GH_TOKEN");
    ck_assert_uint_eq(j->argv.n, 0);
    ck_assert_uint_eq(j->artifact_paths.n, 1);
    ck_assert_str_eq(j->artifact_paths.v[0], "out/a.xml");
    sbx_job_free(j);

    j = new_job(c, NULL);
    expect(j, sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"command\":[\"npx\",\"jest\",\"\"],"
                                   "\"inputs\":{\"dir\":\"app\",\"packageManager\":\"pnpm\"}}"),
           SBX_OK, NULL);
    ck_assert_uint_eq(j->argv.n, 3);
    ck_assert_str_eq(j->argv.v[2], "");
    ck_assert_str_eq(sbx__job_input(j, "dir"), "/vercel/sandbox/app");
    ck_assert_int_eq(j->timeout_ms, 600000); /* not given: the job's own */
    /* A second load replaces the request. */
    expect(j, sbx_job_load_json(j, "{\"jobType\":\"verify.lint\"}"), SBX_OK, NULL);
    ck_assert_int_eq(j->type, sbx__job_type_find("verify.lint"));
    ck_assert_uint_eq(j->argv.n, 0);
    ck_assert_ptr_null(sbx__job_input(j, "dir"));
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

/* Each bad request: its status and the field its message names. */
static const struct {
    const char *json;
    sbx_status st;
    const char *names;
} bad_requests[] = {
    {"", SBX_E_PARSE, "not JSON"},
    {"{", SBX_E_PARSE, "not JSON"},
    {"{\"jobType\":\"verify.test\"} x", SBX_E_PARSE, "not JSON"},
    {"[]", SBX_E_INVALID_ARG, "object"},
    {"\"verify.test\"", SBX_E_PARSE, "not JSON"},
    {"{}", SBX_E_INVALID_ARG, "jobType"},
    {"{\"jobType\":null}", SBX_E_INVALID_ARG, "jobType"},
    {"{\"jobType\":7}", SBX_E_INVALID_ARG, "jobType"},
    {"{\"jobType\":\"verify.fly\"}", SBX_E_INVALID_ARG, "jobType"},
    {"{\"jobType\":\"verify.test\",\"jobtype\":\"x\"}", SBX_E_INVALID_ARG, "'jobtype'"},
    {"{\"jobType\":\"verify.test\",\"schema\":\"sbxrun.job.request/2\"}", SBX_E_INVALID_ARG, "schema"},
    {"{\"jobType\":\"verify.test\",\"schema\":1}", SBX_E_INVALID_ARG, "schema"},
    {"{\"jobType\":\"verify.test\",\"timeoutSeconds\":-1}", SBX_E_INVALID_ARG, "timeoutSeconds"},
    {"{\"jobType\":\"verify.test\",\"timeoutSeconds\":604801}", SBX_E_INVALID_ARG, "timeoutSeconds"},
    {"{\"jobType\":\"verify.test\",\"timeoutSeconds\":1.5}", SBX_E_INVALID_ARG, "timeoutSeconds"},
    {"{\"jobType\":\"verify.test\",\"timeoutSeconds\":\"30\"}", SBX_E_INVALID_ARG, "timeoutSeconds"},
    {"{\"jobType\":\"verify.test\",\"inputs\":[]}", SBX_E_INVALID_ARG, "inputs"},
    {"{\"jobType\":\"verify.test\",\"inputs\":{\"dir\":true}}", SBX_E_INVALID_ARG, "inputs.dir"},
    {"{\"jobType\":\"verify.test\",\"inputs\":{\"dir\":null}}", SBX_E_INVALID_ARG, "inputs.dir"},
    {"{\"jobType\":\"verify.test\",\"inputs\":{\"dir\":1.5}}", SBX_E_INVALID_ARG, "inputs.dir"},
    {"{\"jobType\":\"verify.test\",\"inputs\":{\"dir\":{}}}", SBX_E_INVALID_ARG, "inputs.dir"},
    {"{\"jobType\":\"verify.test\",\"inputs\":{\"dir\":\"/etc\"}}", SBX_E_INVALID_ARG, "inputs.dir"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"depth\":-3}}", SBX_E_INVALID_ARG, "inputs.depth"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"depth\":\"x\"}}", SBX_E_INVALID_ARG, "inputs.depth"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"ref\":\"-x\"}}", SBX_E_INVALID_ARG, "inputs.ref"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"url\":\"\"}}", SBX_E_INVALID_ARG, "inputs.url"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"nope\":\"x\"}}", SBX_E_INVALID_ARG, "inputs.nope"},
    {"{\"jobType\":\"verify.test\",\"envKeys\":\"A\"}", SBX_E_INVALID_ARG, "envKeys"},
    {"{\"jobType\":\"verify.test\",\"envKeys\":[1]}", SBX_E_INVALID_ARG, "envKeys[0]"},
    {"{\"jobType\":\"verify.test\",\"envKeys\":[\"A\",\"B-C\"]}", SBX_E_INVALID_ARG, "envKeys[1]"},
    {"{\"jobType\":\"verify.test\",\"command\":\"ls\"}", SBX_E_INVALID_ARG, "command"},
    {"{\"jobType\":\"verify.test\",\"command\":[\"\"]}", SBX_E_INVALID_ARG, "command[0]"},
    {"{\"jobType\":\"verify.test\",\"command\":[\"ls\",null]}", SBX_E_INVALID_ARG, "command[1]"},
    {"{\"jobType\":\"verify.test\",\"artifacts\":{}}", SBX_E_INVALID_ARG, "artifacts"},
    {"{\"jobType\":\"verify.test\",\"artifacts\":[\"ok.xml\",\"/etc/passwd\"]}", SBX_E_INVALID_ARG,
     "artifacts[1]"},
    {"{\"jobType\":\"verify.test\",\"artifacts\":[false]}", SBX_E_INVALID_ARG, "artifacts[0]"},
    /* duplicate keys, at the top and inside inputs */
    {"{\"jobType\":\"verify.test\",\"jobType\":\"verify.lint\"}", SBX_E_PARSE, "duplicate"},
    {"{\"jobType\":\"repo.clone\",\"inputs\":{\"url\":\"a\",\"url\":\"b\"}}", SBX_E_PARSE, "duplicate"},
};

START_TEST(test_job_json_errors_name_their_field)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    for (size_t i = 0; i < sizeof bad_requests / sizeof *bad_requests; i++) {
        sbx_status st = sbx_job_load_json(j, bad_requests[i].json);
        ck_assert_msg(st == bad_requests[i].st, "%s: %s, wanted %s (%s)", bad_requests[i].json, sbx_status_name(st),
                      sbx_status_name(bad_requests[i].st), sbx_job_last_error(j));
        ck_assert_msg(strstr(sbx_job_last_error(j), bad_requests[i].names), "%s: '%s' does not name %s",
                      bad_requests[i].json, sbx_job_last_error(j), bad_requests[i].names);
    }
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

/* A failed load leaves every setting as it was. */
START_TEST(test_job_json_failure_changes_nothing)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    const char *argv[] = {"ls", "-A"};
    expect(j, sbx_job_load_json(j, full_request), SBX_OK, NULL);
    ck_assert_int_eq(sbx_job_set_argv(j, 2, argv), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "patch", "diff"), SBX_OK);
    for (size_t i = 0; i < sizeof bad_requests / sizeof *bad_requests; i++) {
        ck_assert_int_ne(sbx_job_load_json(j, bad_requests[i].json), SBX_OK);
        ck_assert_int_eq(j->type, sbx__job_type_find("repo.clone"));
        ck_assert_str_eq(sbx__job_input(j, "url"), "https://git.example.com/r.git");
        ck_assert_str_eq(sbx__job_input(j, "depth"), "5");
        ck_assert_str_eq(sbx__job_input(j, "token"), "tok-1234");
        ck_assert_uint_eq(j->inputs.n, 5);
        ck_assert_int_eq(j->timeout_ms, 30000);
        ck_assert_uint_eq(j->env_keys.n, 2);
        ck_assert_uint_eq(j->argv.n, 2);
        ck_assert_uint_eq(j->artifact_paths.n, 1);
        ck_assert_uint_eq(j->patch_len, 4);
    }
    /* Late errors too: everything before the bad field was accepted. */
    ck_assert_int_ne(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"timeoutSeconds\":9,\"inputs\":{\"dir\":"
                                          "\"a\"},\"envKeys\":[\"X\"],\"command\":[\"x\"],\"artifacts\":[\"..\"]}"),
                     SBX_OK);
    ck_assert_int_eq(j->type, sbx__job_type_find("repo.clone"));
    ck_assert_int_eq(j->timeout_ms, 30000);
    ck_assert_uint_eq(j->inputs.n, 5);
    ck_assert_uint_eq(j->env_keys.n, 2);
    ck_assert_uint_eq(j->argv.n, 2);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

/* ---- misuse ------------------------------------------------------------------------------- */

START_TEST(test_job_misuse_before_run)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, "verify.test");
    sbx_sandbox *s = sbx_sandbox_new(c);
    sbx_client *c2 = client();
    sbx_sandbox *s2 = sbx_sandbox_new(c2);
    sbx_op *op = (sbx_op *)&op;
    char *out = (char *)&out;

    ck_assert_ptr_nonnull(s);
    expect(j, sbx_job_run_start(j, s, &op), SBX_E_MISUSE, "not created");
    ck_assert_ptr_null(op);
    expect(j, sbx_job_run(j, s), SBX_E_MISUSE, "not created");
    expect(j, sbx_job_run_start(j, s2, &op), SBX_E_INVALID_ARG, "another client");
    /* Nothing ran: the settings still apply, and there is no result. */
    expect(j, sbx_job_set_timeout_ms(j, 5), SBX_OK, NULL);
    expect(j, sbx_job_result_to_json(j, &out), SBX_E_MISUSE, "not run");
    ck_assert_ptr_null(out);
    ck_assert_int_eq(sbx_job_verdict(j), SBX_VERDICT_ERROR);
    ck_assert_int_eq(sbx_job_exit_code(j), -1);
    ck_assert_int_eq(sbx_job_retryable(j), 0);
    /* A job with no type cannot run either. */
    {
        sbx_job *k = new_job(c, NULL);
        expect(k, sbx_job_result_to_json(k, &out), SBX_E_MISUSE, NULL);
        sbx_job_free(k);
    }
    sbx_sandbox_free(s2);
    sbx_client_free(c2);
    sbx_sandbox_free(s);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_verdict_names)
{
    static const char *const names[] = {"passed", "failed", "timed-out", "denied", "cancelled", "error",
                                        "unavailable"};
    ck_assert_int_eq(SBX_VERDICT_PASSED, 0);
    ck_assert_int_eq(SBX_VERDICT_UNAVAILABLE, 6);
    for (int v = 0; v <= 6; v++)
        ck_assert_str_eq(sbx_job_verdict_name((sbx_verdict)v), names[v]);
    ck_assert_ptr_null(sbx_job_verdict_name((sbx_verdict)7));
    ck_assert_ptr_null(sbx_job_verdict_name((sbx_verdict)-1));
    ck_assert_ptr_null(sbx_job_verdict_name((sbx_verdict)1000000));
}
END_TEST

/* ---- what a job runs (the plan, checked at the run) ------------------------------------------ */

/* The steps' argv from step `from` on, one line each, words joined by
 * spaces. */
static char *steps_text(sbx_job *j, size_t from)
{
    sbx__buf b = SBX__BUF_INIT;
    for (size_t i = from; i < j->nsteps; i++) {
        ck_assert_int_eq(sbx__buf_printf(&b, "%s@%s:", j->steps[i].name, j->steps[i].cwd), SBX_OK);
        for (size_t k = 0; k < j->steps[i].argv.n; k++)
            ck_assert_int_eq(sbx__buf_printf(&b, " %s", j->steps[i].argv.v[k]), SBX_OK);
        ck_assert_int_eq(sbx__buf_printf(&b, "\n"), SBX_OK);
    }
    return sbx__buf_detach(&b, NULL);
}

/* The plan of a job that has not planned yet. */
static char *plan_text(sbx_job *j)
{
    ck_assert_int_eq(sbx__job_plan_validate(j), SBX_OK);
    ck_assert_int_eq(sbx__job_plan(j), SBX_OK);
    return steps_text(j, 0);
}

static void expect_plan(sbx_job *j, const char *want)
{
    char *got = plan_text(j);
    ck_assert_msg(strcmp(got, want) == 0, "plan:\n%s\nwanted:\n%s", got, want);
    sbx__free(got);
}

START_TEST(test_job_plan_clone)
{
    static const char sha[] = "0123456789abcdef0123456789abcdef01234567";
    sbx_client *c = client();
    sbx_job *j = new_job(c, "repo.clone");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://h/r.git"), SBX_OK);
    expect_plan(j, "clone@/vercel/sandbox: git clone --depth=1 -- https://h/r.git /vercel/sandbox/repo\n"
                   "resolve@/vercel/sandbox: git -C /vercel/sandbox/repo rev-parse HEAD\n");
    sbx_job_free(j);

    j = new_job(c, "repo.clone");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://h/r.git"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "ref", "v1.0"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "depth", "0"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "dir", "src"), SBX_OK);
    expect_plan(j, "clone@/vercel/sandbox: git clone --branch v1.0 -- https://h/r.git /vercel/sandbox/src\n"
                   "resolve@/vercel/sandbox: git -C /vercel/sandbox/src rev-parse HEAD\n");
    sbx_job_free(j);

    j = new_job(c, "repo.clone");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://h/r.git"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "ref", sha), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "depth", "3"), SBX_OK);
    expect_plan(j, "clone@/vercel/sandbox: git clone --depth=3 -- https://h/r.git /vercel/sandbox/repo\n"
                   "fetch@/vercel/sandbox: git -C /vercel/sandbox/repo fetch --depth=3 origin "
                   "0123456789abcdef0123456789abcdef01234567\n"
                   "checkout@/vercel/sandbox: git -C /vercel/sandbox/repo checkout --detach "
                   "0123456789abcdef0123456789abcdef01234567\n"
                   "resolve@/vercel/sandbox: git -C /vercel/sandbox/repo rev-parse HEAD\n");
    sbx_job_free(j);

    j = new_job(c, "repo.clone");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://h/r.git"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "ref", sha), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "depth", "0"), SBX_OK);
    expect_plan(j, "clone@/vercel/sandbox: git clone -- https://h/r.git /vercel/sandbox/repo\n"
                   "fetch@/vercel/sandbox: git -C /vercel/sandbox/repo fetch origin "
                   "0123456789abcdef0123456789abcdef01234567\n"
                   "checkout@/vercel/sandbox: git -C /vercel/sandbox/repo checkout --detach "
                   "0123456789abcdef0123456789abcdef01234567\n"
                   "resolve@/vercel/sandbox: git -C /vercel/sandbox/repo rev-parse HEAD\n");
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_job_plan_install_and_scripts)
{
    static const char listing[] = "package.json\nsrc\npackage-lock.json\n";
    sbx_client *c = client();
    sbx_job *j = new_job(c, "deps.install");

    ck_assert_int_eq(sbx_job_set_input(j, "dir", "/vercel/sandbox/ts"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "registry", "http://registry.test/npm/"), SBX_OK);
    expect_plan(j, "detect@/vercel/sandbox: ls -A /vercel/sandbox/ts\n");
    ck_assert_int_eq(sbx__job_plan_detected(j, listing, strlen(listing)), SBX_OK);
    ck_assert_str_eq(j->pm, "npm");
    ck_assert_str_eq(j->lockfile, "package-lock.json");
    ck_assert_int_eq(sbx__job_plan(j), SBX_OK);
    ck_assert_uint_eq(j->nsteps, 2);
    ck_assert_uint_eq(j->steps[1].argv.n, 6);
    ck_assert_str_eq(j->steps[1].argv.v[1], "ci");
    ck_assert_str_eq(j->steps[1].argv.v[4], "--ignore-scripts");
    ck_assert_str_eq(j->steps[1].argv.v[5], "--registry=http://registry.test/npm/");
    ck_assert_str_eq(j->steps[1].cwd, "/vercel/sandbox/ts");
    sbx_job_free(j);

    /* Scripts on; pnpm by its lockfile, whatever else is there. */
    j = new_job(c, "deps.install");
    ck_assert_int_eq(sbx_job_set_option(j, "lifecycle_scripts", "on"), SBX_OK);
    sbx__free(plan_text(j)); /* the detection step */
    {
        static const char both[] = "pnpm-lock.yaml\npackage-lock.json\n";
        ck_assert_int_eq(sbx__job_plan_detected(j, both, strlen(both)), SBX_OK);
        ck_assert_str_eq(j->pm, "pnpm");
        ck_assert_int_eq(sbx__job_plan(j), SBX_OK);
        ck_assert_uint_eq(j->steps[j->nsteps - 1].argv.n, 3);
        ck_assert_str_eq(j->steps[j->nsteps - 1].argv.v[2], "--frozen-lockfile");
    }
    sbx_job_free(j);

    /* bun, Yarn 1 and Yarn 2+ (a .yarnrc.yml beside yarn.lock): each its
     * own frozen install with scripts off; Yarn 2+ has no --registry flag
     * (its registry is configuration) and turns scripts off by --mode. */
    {
        static const struct {
            const char *listing, *scripts, *pm, *want;
        } cases[] = {
            {"package.json\nbun.lock\n", "off", "bun",
             "install@/vercel/sandbox: bun install --frozen-lockfile --ignore-scripts "
             "--registry=http://registry.test/npm/\n"},
            {"bun.lockb\npackage.json\n", "on", "bun",
             "install@/vercel/sandbox: bun install --frozen-lockfile --registry=http://registry.test/npm/\n"},
            {"package.json\nyarn.lock\n", "off", "yarn",
             "install@/vercel/sandbox: yarn install --frozen-lockfile --ignore-scripts "
             "--registry=http://registry.test/npm/\n"},
            {".yarnrc.yml\npackage.json\nyarn.lock\n", "off", "yarn",
             "install@/vercel/sandbox: yarn install --immutable --mode=skip-build\n"},
            {".yarnrc.yml\nyarn.lock\n", "on", "yarn", "install@/vercel/sandbox: yarn install --immutable\n"},
            /* .yarnrc.yml beside another tool's lockfile is not Yarn 2+. */
            {".yarnrc.yml\npnpm-lock.yaml\n", "off", "pnpm",
             "install@/vercel/sandbox: pnpm install --frozen-lockfile --ignore-scripts "
             "--registry=http://registry.test/npm/\n"},
        };
        for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
            j = new_job(c, "deps.install");
            ck_assert_int_eq(sbx_job_set_input(j, "registry", "http://registry.test/npm/"), SBX_OK);
            ck_assert_int_eq(sbx_job_set_option(j, "lifecycle_scripts", cases[i].scripts), SBX_OK);
            expect_plan(j, "detect@/vercel/sandbox: ls -A /vercel/sandbox\n");
            ck_assert_int_eq(sbx__job_plan_detected(j, cases[i].listing, strlen(cases[i].listing)), SBX_OK);
            ck_assert_str_eq(j->pm, cases[i].pm);
            {
                /* The install, planned after the detection step. */
                char *got;
                ck_assert_int_eq(sbx__job_plan(j), SBX_OK);
                got = steps_text(j, 1);
                ck_assert_msg(strcmp(got, cases[i].want) == 0, "case %zu: %s, wanted %s", i, got, cases[i].want);
                sbx__free(got);
            }
            sbx_job_free(j);
        }
    }

    /* No lockfile: an install refuses. */
    j = new_job(c, "deps.install");
    ck_assert_int_eq(sbx__job_plan_detected(j, "package.json\n", 13), SBX_E_NOT_FOUND);
    has(sbx_job_last_error(j), "no lockfile");
    sbx_job_free(j);

    /* A program instead of the planned install: its one step, no detection;
     * the registry only opens the network preset. Scripts on is refused:
     * the program runs as given. */
    {
        const char *pnpm[] = {"pnpm", "install", "--frozen-lockfile", "--ignore-scripts"};
        j = new_job(c, "deps.install");
        ck_assert_int_eq(sbx_job_set_argv(j, 4, pnpm), SBX_OK);
        ck_assert_int_eq(sbx_job_set_input(j, "registry", "http://registry.test/npm/"), SBX_OK);
        ck_assert_int_eq(sbx__job_plan_validate(j), SBX_OK);
        expect_plan(j, "install@/vercel/sandbox: pnpm install --frozen-lockfile --ignore-scripts\n");
        ck_assert_ptr_null(j->pm);
        sbx_job_free(j);
        j = new_job(c, "deps.install");
        ck_assert_int_eq(sbx_job_set_argv(j, 4, pnpm), SBX_OK);
        ck_assert_int_eq(sbx_job_set_option(j, "lifecycle_scripts", "on"), SBX_OK);
        expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "option lifecycle_scripts is for the install the job plans");
        sbx_job_free(j);
    }

    /* verify.*: the script of the type, or input script; a program instead. */
    {
        static const char *const types[] = {"verify.lint", "verify.typecheck", "verify.test", "verify.build",
                                            "db.migrate"};
        static const char *const scripts[] = {"lint", "typecheck", "test", "build", "db:migrate"};
        for (size_t i = 0; i < 5; i++) {
            char want[128];
            j = new_job(c, types[i]);
            ck_assert_int_eq(sbx_job_set_input(j, "packageManager", "yarn"), SBX_OK);
            if (i == 4) /* db.migrate: its preset needs the database */
                ck_assert_int_eq(sbx_job_set_input(j, "host", "db.example.com"), SBX_OK);
            snprintf(want, sizeof want, "%s@/vercel/sandbox: yarn run %s\n", types[i], scripts[i]);
            expect_plan(j, want);
            sbx_job_free(j);
        }
    }
    j = new_job(c, "verify.test");
    ck_assert_int_eq(sbx_job_set_input(j, "script", "test:unit"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "packageManager", "npm"), SBX_OK);
    expect_plan(j, "verify.test@/vercel/sandbox: npm run test:unit\n");
    sbx_job_free(j);
    {
        const char *argv[] = {"npx", "jest"};
        j = new_job(c, "verify.test");
        ck_assert_int_eq(sbx_job_set_argv(j, 2, argv), SBX_OK);
        ck_assert_int_eq(sbx_job_set_input(j, "dir", "app"), SBX_OK);
        expect_plan(j, "verify.test@/vercel/sandbox/app: npx jest\n");
        sbx_job_free(j);
    }
    sbx_client_free(c);
}
END_TEST

/* The policies a job's transcript records: what its command policy lets
 * its type run, and its network policy without header values. */
static char *summaries(sbx_job *j, char **np)
{
    json_t *p = NULL, *n = NULL;
    char *pt;
    ck_assert_int_eq(sbx__job_policy_summaries(j, &p, &n), SBX_OK);
    pt = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    *np = json_dumps(n, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(p);
    json_decref(n);
    return pt;
}

START_TEST(test_job_policy_summaries)
{
    static const char token[] = "ghs_0123456789abcdefghijklmnopqrstuvwxyz";
    sbx_client *c = client();
    sbx_job *j = new_job(c, "verify.test");
    sbx_policy *pol = sbx_policy_new();
    char *p, *n;

    p = summaries(j, &n);
    ck_assert_str_eq(p, "{\"allow\":{\"programs\":[\"git\",\"bun\",\"node\",\"ls\",\"cat\",\"sed\",\"rg\",\"npm\","
                        "\"pnpm\",\"yarn\"]},\"extends\":\"none\",\"version\":1}");
    ck_assert_str_eq(n, "{\"mode\":\"deny-all\"}");
    free(p);
    free(n);

    /* The caller's policy, as it applies to this type: the summary decides
     * as the policy does. */
    ck_assert_ptr_nonnull(pol);
    ck_assert_int_eq(sbx_policy_load_json(pol, "{\"version\":1,\"extends\":\"none\",\"allow\":{\"programs\":"
                                               "[\"node\"]},\"jobTypes\":{\"verify.test\":{\"allow\":{\"programs\":"
                                               "[\"npx\",\"node\"],\"packages\":[\"jest\"]},\"deny\":{\"programs\":"
                                               "[\"node\"]}},\"verify.lint\":{\"allow\":{\"programs\":[\"eslint\"]}}}}"),
                     SBX_OK);
    ck_assert_int_eq(sbx_job_set_policy(j, pol), SBX_OK);
    p = summaries(j, &n);
    ck_assert_str_eq(p, "{\"allow\":{\"packages\":[\"jest\"],\"programs\":[\"node\",\"npx\"]},\"deny\":{\"programs\":"
                        "[\"node\"]},\"extends\":\"none\",\"version\":1}");
    free(p);
    free(n);

    /* Options off: null, not a policy that was not applied. */
    ck_assert_int_eq(sbx_job_set_option(j, "policy", "off"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_option(j, "network_policy", "off"), SBX_OK);
    p = summaries(j, &n);
    ck_assert_str_eq(p, "null");
    ck_assert_str_eq(n, "null");
    free(p);
    free(n);
    sbx_job_free(j);

    /* repo.clone with a token: the git host only, and the header the
     * egress proxy adds is named without its value. */
    j = new_job(c, "repo.clone");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://git.example.com/acme/app.git"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "token", token), SBX_OK);
    p = summaries(j, &n);
    has(n, "\"mode\":\"custom\"");
    has(n, "git.example.com");
    has(n, "\"headerNames\":[\"authorization\"]");
    ck_assert_msg(!strstr(n, "\"headers\"") && !strstr(n, "Basic") && !strstr(n, token), "%s", n);
    free(p);
    free(n);
    sbx_job_free(j);
    sbx_policy_free(pol);
    sbx_client_free(c);
}
END_TEST

/* What the run refuses before anything is sent, naming the input. */
START_TEST(test_job_validate)
{
    sbx_client *c = client();
    const char *argv[] = {"ls"};
    sbx_job *j = new_job(c, NULL);

    expect(j, sbx__job_plan_validate(j), SBX_E_MISUSE, "no type");
    ck_assert_int_eq(sbx_job_set_type(j, "repo.clone"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "'url'");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "https://h/r.git"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "script", "x"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "repo.clone takes no input 'script'");
    ck_assert_int_eq(sbx_job_set_input(j, "script", NULL), SBX_OK);
    ck_assert_int_eq(sbx_job_set_argv(j, 1, argv), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "runs its own commands");
    /* The type set after the inputs: checked against the new one. */
    ck_assert_int_eq(sbx_job_set_type(j, "verify.test"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "verify.test takes no input 'url'");
    ck_assert_int_eq(sbx_job_set_input(j, "url", NULL), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_OK, NULL);
    ck_assert_int_eq(sbx_job_set_input(j, "script", "x"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "not both");
    ck_assert_int_eq(sbx_job_set_input(j, "script", NULL), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "packageManager", "deno"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "'packageManager'");
    sbx_job_free(j);

    j = new_job(c, "repo.applyPatch");
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "'patch'");
    sbx_job_free(j);

    j = new_job(c, "db.migrate");
    ck_assert_int_eq(sbx_job_set_input(j, "url", "postgres://db.example.com/app"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_input(j, "host", "db.example.com"), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "not both");
    sbx_job_free(j);

    j = new_job(c, NULL);
    ck_assert_int_eq(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"envKeys\":[\"A\",\"NPM_TOKEN\"]}"),
                     SBX_OK);
    ck_assert_int_eq(sbx_job_set_env(j, "A", "1"), SBX_OK);
    ck_assert_int_eq(sbx_job_set_env(j, "NPM", "1"), SBX_OK); /* a prefix is not the name */
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "NPM_TOKEN");
    ck_assert_int_eq(sbx_job_set_env(j, "NPM_TOKEN", "t"), SBX_OK);
    /* A request's envKeys are all the job may see. */
    expect(j, sbx__job_plan_validate(j), SBX_E_INVALID_ARG, "NPM has a value but is not in the request's envKeys");
    ck_assert_int_eq(sbx_job_set_env(j, "NPM", NULL), SBX_OK);
    expect(j, sbx__job_plan_validate(j), SBX_OK, NULL);
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

/* ---- allocation failures ------------------------------------------------------------------ */

#define STEP(call)                                                                                 \
    do {                                                                                           \
        sbx_status st_ = (call);                                                                   \
        if (st_ != SBX_OK) {                                                                       \
            ck_assert_msg(st_ == SBX_E_NOMEM, "%s: %s (%s)", #call, sbx_status_name(st_),          \
                          sbx_job_last_error(j));                                                  \
            ck_assert_msg(strlen(sbx_job_last_error(j)) > 0, "%s: no message", #call);             \
            sbx_job_free(j);                                                                       \
            return st_;                                                                            \
        }                                                                                          \
    } while (0)

static sbx_status build_job(void *ctx)
{
    sbx_client *c = ctx;
    const char *argv[] = {"npx", "jest", "--ci"};
    sbx_policy *p;
    sbx_transcript *t;
    sbx_job *j = sbx_job_new(c);
    sbx_status st;
    if (!j)
        return SBX_E_NOMEM;
    STEP(sbx_job_load_json(j, full_request));
    STEP(sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"timeoutSeconds\":60,\"envKeys\":[\"A\",\"B\",\"C\","
                              "\"D\",\"E\",\"F\"],\"command\":[\"npx\",\"jest\",\"--ci\",\"--runInBand\",\"x\"],"
                              "\"inputs\":{\"dir\":\"app\",\"packageManager\":\"npm\"},"
                              "\"artifacts\":[\"a.xml\",\"b.xml\",\"c.xml\",\"d.xml\",\"e.xml\"]}"));
    STEP(sbx_job_set_type(j, "verify.test"));
    STEP(sbx_job_set_input(j, "script", "test:ci"));
    STEP(sbx_job_set_input(j, "script", "test"));
    STEP(sbx_job_set_input(j, "patch", "diff --git a/x b/x\n"));
    STEP(sbx_job_set_input(j, "patch", NULL));
    STEP(sbx_job_set_argv(j, 3, argv));
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "V%d", i);
        STEP(sbx_job_set_env(j, name, "value-of-a-variable"));
    }
    STEP(sbx_job_set_env(j, "V0", "again"));
    STEP(sbx_job_set_env(j, "V1", NULL));
    STEP(sbx_job_add_secret(j, (const uint8_t *)"secret-1", 8));
    STEP(sbx_job_add_secret(j, (const uint8_t *)"secret-2", 8));
    STEP(sbx_job_add_artifact(j, "f.xml"));
    STEP(sbx_job_set_option(j, "lifecycle_scripts", "on"));
    STEP(sbx_job_set_timeout_ms(j, 1000));
    if (!(p = sbx_policy_new())) {
        sbx_job_free(j);
        return SBX_E_NOMEM;
    }
    st = sbx_job_set_policy(j, p);
    sbx_policy_free(p);
    STEP(st);
    if (!(t = sbx_transcript_new())) {
        sbx_job_free(j);
        return SBX_E_NOMEM;
    }
    st = sbx_job_set_transcript(j, t);
    sbx_transcript_free(t);
    STEP(st);
    /* The result is there: every setting landed. */
    ck_assert_int_eq(j->type, sbx__job_type_find("verify.test"));
    ck_assert_str_eq(sbx__job_input(j, "script"), "test");
    ck_assert_uint_eq(j->env.n, 5);
    ck_assert_uint_eq(j->artifact_paths.n, 6);
    sbx_job_free(j);
    return SBX_OK;
}

START_TEST(test_job_out_of_memory_is_clean)
{
    sbx_client *c = client();
    ck_assert_int_gt(sbx_test_oom_loop(build_job, c), 0);
    sbx_client_free(c);
}
END_TEST

/* Out of memory in the middle of a load: the job keeps what it had. */
START_TEST(test_job_json_out_of_memory_changes_nothing)
{
    sbx_client *c = client();
    sbx_job *j = new_job(c, NULL);
    int failures = 0;
    expect(j, sbx_job_load_json(j, full_request), SBX_OK, NULL);
    for (long n = 1; n < 200; n++) {
        sbx_status st;
        sbx__fault_fail_nth(n);
        st = sbx_job_load_json(j, "{\"jobType\":\"verify.test\",\"envKeys\":[\"A\",\"B\"],\"command\":[\"ls\"],"
                                  "\"inputs\":{\"dir\":\"app\"},\"artifacts\":[\"a.xml\",\"b.xml\"]}");
        sbx__fault_fail_nth(0);
        if (st == SBX_OK)
            break;
        failures++;
        ck_assert_msg(st == SBX_E_NOMEM, "failing allocation %ld: %s (%s)", n, sbx_status_name(st),
                      sbx_job_last_error(j));
        ck_assert_int_eq(j->type, sbx__job_type_find("repo.clone"));
        ck_assert_uint_eq(j->inputs.n, 5);
        ck_assert_uint_eq(j->env_keys.n, 2);
        ck_assert_uint_eq(j->artifact_paths.n, 1);
    }
    ck_assert_int_gt(failures, 3);
    ck_assert_int_eq(j->type, sbx__job_type_find("verify.test"));
    sbx_job_free(j);
    sbx_client_free(c);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = tcase_create("job");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_job_null_handles);
    tcase_add_test(tc, test_job_null_args);
    tcase_add_test(tc, test_job_types);
    tcase_add_test(tc, test_job_inputs);
    tcase_add_test(tc, test_job_timeout_env_secret);
    tcase_add_test(tc, test_job_argv_and_artifacts);
    tcase_add_test(tc, test_job_options);
    tcase_add_test(tc, test_job_policy_transcript_cb);
    tcase_add_test(tc, test_job_json_all_fields);
    tcase_add_test(tc, test_job_json_errors_name_their_field);
    tcase_add_test(tc, test_job_json_failure_changes_nothing);
    tcase_add_test(tc, test_job_misuse_before_run);
    tcase_add_test(tc, test_job_verdict_names);
    tcase_add_test(tc, test_job_plan_clone);
    tcase_add_test(tc, test_job_plan_install_and_scripts);
    tcase_add_test(tc, test_job_validate);
    tcase_add_test(tc, test_job_policy_summaries);
    tcase_add_test(tc, test_job_out_of_memory_is_clean);
    tcase_add_test(tc, test_job_json_out_of_memory_changes_nothing);
    suite_add_tcase(s, tc);
    return s;
}
