/* SPDX-License-Identifier: MIT */
/*
 * verify: lint and test a local Node project in a sandbox, the safe way: a
 * run of two jobs under their types' command policy and network preset,
 * output redacted, recorded in a transcript that is then verified.
 *
 *   cc verify.c -o verify $(pkg-config --cflags --libs libsbxrun)
 *   SBXRUN_ENDPOINT=unix:/tmp/sbxd/sock ./verify examples/demo-project run.jsonl
 *
 * Exit status: 0 passed, 1 not passed, 2 could not be carried out.
 * Valid C11 and C++17.
 */
#include <stdio.h>

#include <sbxrun/sbxrun.h>

int main(int argc, char **argv)
{
    sbx_client *c = NULL;
    sbx_run *run = NULL;
    sbx_transcript *t = NULL, *check = NULL;
    sbx_job *lint, *test;
    char *result = NULL;
    size_t broken = 0;
    int rc = 2;

    if (argc != 3) {
        fprintf(stderr, "usage: verify PROJECT_DIR TRANSCRIPT\n");
        return 2;
    }
    if (sbx_global_init() != SBX_OK)
        return 2;
    c = sbx_client_new();
    run = c ? sbx_run_new(c) : NULL;
    t = sbx_transcript_new();
    if (!run || !t) {
        fprintf(stderr, "verify: out of memory\n");
        goto out;
    }
    /* The jobs run in the library's order (lint before test) in a sandbox
     * the run creates and stops; the project is uploaded first. */
    if (sbx_run_add_job(run, "verify.lint", &lint) != SBX_OK || sbx_run_add_job(run, "verify.test", &test) != SBX_OK ||
        sbx_job_set_input(lint, "script", "lint") != SBX_OK ||
        sbx_job_set_input(test, "script", "test") != SBX_OK ||
        sbx_run_add_upload(run, argv[1], "/vercel/sandbox") != SBX_OK ||
        sbx_run_set_budget(run, 600000, 0, 0) != SBX_OK || sbx_transcript_set_file(t, argv[2]) != SBX_OK ||
        sbx_run_set_transcript(run, t) != SBX_OK) {
        fprintf(stderr, "verify: %s%s\n", sbx_run_last_error(run), sbx_transcript_last_error(t));
        goto out;
    }
    if (sbx_run_execute(run) != SBX_OK) {
        fprintf(stderr, "verify: %s\n", sbx_run_last_error(run));
        goto out;
    }
    if (sbx_run_result_to_json(run, &result) == SBX_OK)
        printf("%s\n", result);
    printf("verify: %s (lint %s, test %s)\n", sbx_job_verdict_name(sbx_run_verdict(run)),
           sbx_job_verdict_name(sbx_job_verdict(lint)), sbx_job_verdict_name(sbx_job_verdict(test)));
    rc = sbx_run_verdict(run) == SBX_VERDICT_PASSED ? 0 : 1;

    /* Read the transcript back and check its hash chain. */
    check = sbx_transcript_new();
    if (!check || sbx_transcript_load_file(check, argv[2]) != SBX_OK ||
        sbx_transcript_verify(check, &broken) != SBX_OK) {
        fprintf(stderr, "verify: the transcript: %s\n", check ? sbx_transcript_last_error(check) : "out of memory");
        rc = 2;
    } else {
        printf("verify: transcript %s holds (%zu steps)\n", argv[2], sbx_transcript_step_count(check));
    }
out:
    sbx_free(result);
    sbx_transcript_free(check);
    sbx_run_free(run);
    sbx_transcript_free(t);
    sbx_client_free(c);
    sbx_global_cleanup();
    return rc;
}
