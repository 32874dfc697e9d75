/* SPDX-License-Identifier: MIT */
/*
 * Run one verify.test job in a new sandbox and print its result as JSON
 * (doc/job.md). The endpoint and credentials come from the environment
 * (SBXRUN_ENDPOINT, and the token sbx_client_new(3) describes).
 *
 *   job REPO_URL [REF]
 *
 * The job is started with sbx_job_run_start() and the client is driven in
 * a loop, as a program with its own event loop would do; sbx_job_run()
 * does the same in one blocking call.
 */
#include <stdio.h>
#include <stdlib.h>

#include <sbxrun/sbxrun.h>

/* Output as it comes, already redacted. Returning non-zero cancels. */
static int on_output(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    (void)user;
    fwrite(data, 1, len, stream == SBX_STREAM_STDERR ? stderr : stdout);
    return 0;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "job: %s: %s\n", what, why);
    return 2;
}

/* One job, run to its end in sandbox s; 0 when it passed. */
static int run_job(sbx_client *c, sbx_sandbox *s, sbx_job *job, const char *json)
{
    sbx_op *op = NULL;
    char *result = NULL;
    sbx_status st;

    if (sbx_job_load_json(job, json) != SBX_OK)
        return fail("request", sbx_job_last_error(job));
    if (sbx_job_set_output_cb(job, on_output, NULL) != SBX_OK ||
        sbx_job_run_start(job, s, &op) != SBX_OK)
        return fail("start", sbx_job_last_error(job));
    /* The job moves on only while the client is driven. */
    while ((st = sbx_client_run(c, 200)) == SBX_E_AGAIN)
        ; /* a real loop would do its other work here */
    if (st != SBX_OK || !sbx_op_done(op)) {
        sbx_op_free(op);
        return fail("run", sbx_client_last_error(c));
    }
    if (sbx_op_status(op) != SBX_OK)
        fprintf(stderr, "job: %s\n", sbx_op_last_error(op));
    sbx_op_free(op);

    if (sbx_job_result_to_json(job, &result) == SBX_OK) {
        printf("%s\n", result);
        sbx_free(result);
    }
    fprintf(stderr, "job: %s%s\n", sbx_job_verdict_name(sbx_job_verdict(job)),
            sbx_job_retryable(job) ? " (retryable)" : "");
    return sbx_job_verdict(job) == SBX_VERDICT_PASSED ? 0 : 1;
}

int main(int argc, char **argv)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_job *clone = NULL, *test = NULL;
    char request[4096];
    int rc = 2;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: job REPO_URL [REF]\n");
        return 2;
    }
    if (sbx_global_init() != SBX_OK)
        return fail("init", "sbx_global_init failed");
    if (!(c = sbx_client_new()) || !(s = sbx_sandbox_new(c))) {
        rc = fail("client", "out of memory");
        goto out;
    }
    if (sbx_sandbox_create(s) != SBX_OK) {
        rc = fail("sandbox", sbx_sandbox_last_error(s));
        goto out;
    }

    /* 1. Clone the repository into /vercel/sandbox/repo. The URL is put
     *    into JSON as it is: quote it properly in real code. */
    snprintf(request, sizeof request,
             "{\"schema\": \"sbxrun.job.request/1\", \"jobType\": \"repo.clone\","
             " \"inputs\": {\"url\": \"%s\"%s%s%s}, \"timeoutSeconds\": 300}",
             argv[1], argc == 3 ? ", \"ref\": \"" : "", argc == 3 ? argv[2] : "", argc == 3 ? "\"" : "");
    if (!(clone = sbx_job_new(c))) {
        rc = fail("job", "out of memory");
        goto out;
    }
    if ((rc = run_job(c, s, clone, request)) != 0)
        goto out;

    /* 2. Its tests, with one variable in their environment (its value is
     *    redacted from everything the job reports) and a report to read
     *    back. deps.install would come first in a project with
     *    dependencies. */
    if (!(test = sbx_job_new(c))) {
        rc = fail("job", "out of memory");
        goto out;
    }
    if (sbx_job_set_env(test, "NODE_ENV", "test") != SBX_OK)
        rc = fail("env", sbx_job_last_error(test));
    else
        rc = run_job(c, s, test,
                     "{\"jobType\": \"verify.test\","
                     " \"inputs\": {\"dir\": \"/vercel/sandbox/repo\"},"
                     " \"timeoutSeconds\": 600, \"envKeys\": [\"NODE_ENV\"],"
                     " \"artifacts\": [\"junit.xml\"]}");

out:
    sbx_job_free(test);
    sbx_job_free(clone);
    if (s && sbx_sandbox_id(s))
        sbx_sandbox_stop(s);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbx_global_cleanup();
    return rc;
}
