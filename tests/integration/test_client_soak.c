/* SPDX-License-Identifier: MIT */
/*
 * client_soak: 64 sandboxes x 16 commands, all in flight at once from one
 * thread through one client, against one sbxd. Every command's output and
 * exit code must come back exactly, and nothing may be left pending.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "client_it.h"

enum { SANDBOXES = 64, PER = 16 };

static void raise_nofile(void)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    /* Two descriptors per command at most (its stream, and a start). */
    ck_assert_msg(rl.rlim_cur >= 2 * SANDBOXES * PER + 256,
                  "the soak needs %d descriptors, the hard limit is %llu (ulimit -Hn)",
                  2 * SANDBOXES * PER + 256, (unsigned long long)rl.rlim_max);
}

START_TEST(test_client_soak_64x16)
{
    const char *args[] = {"--max-sandboxes", "100", NULL};
    struct sbxd *d;
    sbx_client *c;
    sbx_sandbox *s[SANDBOXES];
    sbx_command *k[SANDBOXES][PER];
    sbx_op *op[SANDBOXES][PER], *cop[SANDBOXES], *done;
    static struct it_out out[SANDBOXES][PER];
    char script[160], want[96];
    int finished = 0;
    int64_t t0;

    raise_nofile();
    d = sbxd_start(args, NULL);
    c = it_client(d);

    t0 = mono_ms();
    for (int i = 0; i < SANDBOXES; i++) {
        s[i] = sbx_sandbox_new(c);
        ok_s(sbx_sandbox_create_start(s[i], &cop[i]), s[i]);
    }
    ok_c(sbx_client_run(c, 240000), c);
    for (int i = 0; i < SANDBOXES; i++) {
        ck_assert_msg(sbx_op_status(cop[i]) == SBX_OK, "create %d: %s", i, sbx_op_last_error(cop[i]));
    }
    /* Every create was queued as done, once. */
    for (int i = 0; i < SANDBOXES; i++)
        ck_assert_ptr_nonnull(sbx_client_next_done(c));
    ck_assert_ptr_null(sbx_client_next_done(c));
    for (int i = 0; i < SANDBOXES; i++)
        sbx_op_free(cop[i]);
    fprintf(stderr, "# soak: %d sandboxes created in %lld ms\n", SANDBOXES, (long long)(mono_ms() - t0));

    t0 = mono_ms();
    memset(out, 0, sizeof out);
    for (int i = 0; i < SANDBOXES; i++)
        for (int j = 0; j < PER; j++) {
            snprintf(script, sizeof script, "echo sandbox-%d-command-%d; echo e%d >&2; exit %d", i, j, j,
                     (i + j) % 11);
            k[i][j] = it_sh_cmd(s[i], script, &out[i][j]);
            ok_cmd(sbx_command_run_start(k[i][j], &op[i][j]), k[i][j]);
        }
    /* Pull completions as a binding would, counting them. */
    while (finished < SANDBOXES * PER) {
        ck_assert_msg(mono_ms() - t0 < 300000, "only %d of %d commands finished", finished, SANDBOXES * PER);
        sbx_client_wait(c, 1000);
        ok_c(sbx_client_process(c, NULL), c);
        while ((done = sbx_client_next_done(c)) != NULL)
            finished++;
    }
    fprintf(stderr, "# soak: %d commands in %lld ms\n", SANDBOXES * PER, (long long)(mono_ms() - t0));
    for (int i = 0; i < SANDBOXES; i++)
        for (int j = 0; j < PER; j++) {
            ck_assert_msg(sbx_op_status(op[i][j]) == SBX_OK, "%d/%d: %s", i, j, sbx_op_last_error(op[i][j]));
            ck_assert_int_eq(sbx_command_exit_code(k[i][j]), (i + j) % 11);
            snprintf(want, sizeof want, "sandbox-%d-command-%d\n", i, j);
            ck_assert_str_eq(it_str(&out[i][j], 0), want);
            snprintf(want, sizeof want, "e%d\n", j);
            ck_assert_str_eq(it_str(&out[i][j], 1), want);
            sbx_op_free(op[i][j]);
            sbx_command_free(k[i][j]);
            it_out_free(&out[i][j]);
        }
    for (int i = 0; i < SANDBOXES; i++)
        sbx_sandbox_free(s[i]);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_soak");
    TCase *tc = sbx_tcase("soak", 600);
    tcase_add_test(tc, test_client_soak_64x16);
    suite_add_tcase(s, tc);
    return s;
}
