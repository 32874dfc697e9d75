/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/util/buf.c: the growable, limited byte buffer. */
#include "harness.h"

#include <string.h>

#include "util/buf.h"

START_TEST(test_buf_append_keeps_bytes_and_terminator)
{
    sbx__buf b = SBX__BUF_INIT;
    ck_assert_int_eq(sbx__buf_append(&b, "ab\0cd", 5), SBX_OK);
    ck_assert_uint_eq(b.len, 5);
    ck_assert_mem_eq(b.data, "ab\0cd", 5);
    ck_assert_int_eq(b.data[5], '\0');
    ck_assert_int_eq(sbx__buf_puts(&b, "ef"), SBX_OK);
    ck_assert_int_eq(sbx__buf_putc(&b, 'g'), SBX_OK);
    ck_assert_uint_eq(b.len, 8);
    ck_assert_mem_eq(b.data, "ab\0cdefg", 9);
    sbx__buf_free(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(test_buf_grows_past_initial_capacity)
{
    sbx__buf b = SBX__BUF_INIT;
    for (int i = 0; i < 10000; i++)
        ck_assert_int_eq(sbx__buf_putc(&b, (char)('a' + i % 26)), SBX_OK);
    ck_assert_uint_eq(b.len, 10000);
    ck_assert_uint_gt(b.cap, b.len);
    for (int i = 0; i < 10000; i++)
        ck_assert_int_eq(b.data[i], 'a' + i % 26);
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_buf_printf_appends_formatted)
{
    sbx__buf b = SBX__BUF_INIT;
    char longs[300];
    memset(longs, 'z', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    ck_assert_int_eq(sbx__buf_printf(&b, "%s=%d;", "n", 42), SBX_OK);
    ck_assert_int_eq(sbx__buf_printf(&b, "%s", longs), SBX_OK);
    ck_assert_uint_eq(b.len, 5 + 299);
    ck_assert(strncmp(b.data, "n=42;zzz", 8) == 0);
    ck_assert_uint_eq(strlen(b.data), b.len);
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_buf_limit_is_exact_and_failure_changes_nothing)
{
    sbx__buf b;
    sbx__buf_init(&b, 10);
    ck_assert_int_eq(sbx__buf_append(&b, "0123456789", 10), SBX_OK);
    ck_assert_int_eq(sbx__buf_putc(&b, 'x'), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__buf_printf(&b, "%d", 7), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_str_eq(b.data, "0123456789");
    ck_assert_uint_le(b.cap, 11);
    sbx__buf_consume(&b, 4);
    ck_assert_int_eq(sbx__buf_append(&b, "abcd", 4), SBX_OK);
    ck_assert_str_eq(b.data, "456789abcd");
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_buf_reserve_overflow_is_refused)
{
    sbx__buf b = SBX__BUF_INIT;
    ck_assert_int_eq(sbx__buf_putc(&b, 'a'), SBX_OK);
    ck_assert_int_eq(sbx__buf_reserve(&b, SIZE_MAX), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__buf_reserve(&b, SIZE_MAX - 1), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(b.len, 1);
    ck_assert_str_eq(b.data, "a");
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_buf_consume_and_truncate)
{
    sbx__buf b = SBX__BUF_INIT;
    sbx__buf_puts(&b, "line1\nline2\n");
    sbx__buf_consume(&b, 6);
    ck_assert_str_eq(b.data, "line2\n");
    sbx__buf_truncate(&b, 5);
    ck_assert_str_eq(b.data, "line2");
    sbx__buf_truncate(&b, 50);
    ck_assert_str_eq(b.data, "line2");
    sbx__buf_consume(&b, 99);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_str_eq(b.data, "");
    sbx__buf_clear(&b);
    ck_assert_uint_eq(b.len, 0);
    sbx__buf_free(&b);
}
END_TEST

START_TEST(test_buf_detach_hands_over_and_resets)
{
    sbx__buf b = SBX__BUF_INIT;
    size_t len = 99;
    char *s = sbx__buf_detach(&b, &len);
    ck_assert_str_eq(s, "");
    ck_assert_uint_eq(len, 0);
    sbx_free(s);
    sbx__buf_puts(&b, "kept");
    s = sbx__buf_detach(&b, &len);
    ck_assert_str_eq(s, "kept");
    ck_assert_uint_eq(len, 4);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    sbx_free(s);
}
END_TEST

START_TEST(test_buf_wipe_free_releases)
{
    sbx__buf b = SBX__BUF_INIT;
    sbx__buf_puts(&b, "secret-value-123");
    sbx__buf_wipe_free(&b);
    ck_assert_ptr_null(b.data);
    sbx__buf_wipe_free(&b); /* twice is fine */
}
END_TEST

static sbx_status build_text(void *ctx)
{
    sbx__buf b = SBX__BUF_INIT;
    char *out;
    sbx_status st = SBX_OK;
    (void)ctx;
    for (int i = 0; i < 200 && st == SBX_OK; i++)
        st = sbx__buf_printf(&b, "step %d;", i);
    if (st != SBX_OK) {
        sbx__buf_free(&b);
        return st;
    }
    out = sbx__buf_detach(&b, NULL);
    if (!out) {
        sbx__buf_free(&b);
        return SBX_E_NOMEM;
    }
    ck_assert(strncmp(out, "step 0;step 1;", 14) == 0);
    sbx__free(out);
    return SBX_OK;
}

START_TEST(test_buf_out_of_memory_is_clean)
{
    ck_assert_int_gt(sbx_test_oom_loop(build_text, NULL), 0);
}
END_TEST

static sbx_status append_keeps_old(void *ctx)
{
    sbx__buf b = SBX__BUF_INIT;
    sbx_status st;
    (void)ctx;
    sbx__fault_fail_nth(0);
    st = sbx__buf_puts(&b, "keep");
    ck_assert_int_eq(st, SBX_OK);
    sbx__fault_fail_nth(1);
    st = sbx__buf_append(&b, "0123456789012345678901234567890123456789012345678901234567890123", 64);
    if (st != SBX_OK) {
        ck_assert_int_eq(st, SBX_E_NOMEM);
        ck_assert_str_eq(b.data, "keep");
        ck_assert_uint_eq(b.len, 4);
    }
    sbx__buf_free(&b);
    return st;
}

START_TEST(test_buf_failed_growth_keeps_contents)
{
    ck_assert_int_eq(append_keeps_old(NULL), SBX_E_NOMEM);
    sbx__fault_fail_nth(0);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = tcase_create("core");
    SBX_TEST_ADD(tc, test_buf_append_keeps_bytes_and_terminator);
    SBX_TEST_ADD(tc, test_buf_grows_past_initial_capacity);
    SBX_TEST_ADD(tc, test_buf_printf_appends_formatted);
    SBX_TEST_ADD(tc, test_buf_limit_is_exact_and_failure_changes_nothing);
    SBX_TEST_ADD(tc, test_buf_reserve_overflow_is_refused);
    SBX_TEST_ADD(tc, test_buf_consume_and_truncate);
    SBX_TEST_ADD(tc, test_buf_detach_hands_over_and_resets);
    SBX_TEST_ADD(tc, test_buf_wipe_free_releases);
    SBX_TEST_ADD(tc, test_buf_out_of_memory_is_clean);
    SBX_TEST_ADD(tc, test_buf_failed_growth_keeps_contents);
    suite_add_tcase(s, tc);
    return s;
}
