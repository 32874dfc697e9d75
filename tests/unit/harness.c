/* SPDX-License-Identifier: MIT */
/* harness: runs one module's Check suite with TAP output for meson test. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>

long sbx_test_oom_loop(sbx_test_oom_fn fn, void *ctx)
{
    return sbx_test_oom_loop_every(fn, ctx, 1);
}

long sbx_test_oom_loop_every(sbx_test_oom_fn fn, void *ctx, long every)
{
    /* Far above any single operation's allocation count, so hitting it means
     * the loop cannot end, not that the operation is big. */
    const long max_attempts = 200000;

    for (long n = 1; n <= max_attempts; n += every) {
        sbx_status st;
        long made;
        int hit;

        sbx__fault_fail_nth(n);
        st = fn(ctx);
        hit = sbx__fault_triggered();
        made = sbx__fault_count();
        sbx__fault_fail_nth(0);
        if (!hit) {
            ck_assert_msg(st == SBX_OK, "run without injected failure returned %s",
                          sbx_status_name(st));
            return made;
        }
        ck_assert_msg(st == SBX_OK || st == SBX_E_NOMEM,
                      "allocation %ld failed and the operation returned %s, not SBX_E_NOMEM", n,
                      sbx_status_name(st) ? sbx_status_name(st) : "an unknown code");
    }
    ck_abort_msg("operation still allocating after %ld injected failures", max_attempts);
    return -1;
}

int main(void)
{
    SRunner *sr = srunner_create(sbx_test_suite());
    int failed;

    /* TAP on stdout lets meson report every test; details go to stderr. */
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
