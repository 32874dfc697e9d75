/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/util/error.c: code names and texts, per-handle messages. */
#include "harness.h"

#include <limits.h>
#include <string.h>

#include "util/str.h"

/* The highest code this version defines; bump when appending a code. */
#define LAST_CODE SBX_E_AGAIN

START_TEST(test_error_every_code_has_name_and_text)
{
    for (int c = SBX_OK; c <= LAST_CODE; c++) {
        const char *name = sbx_status_name((sbx_status)c);
        const char *text = sbx_strerror((sbx_status)c);
        ck_assert_msg(name != NULL, "code %d has no name", c);
        ck_assert_msg(text != NULL && text[0] != '\0', "code %d has no text", c);
        ck_assert_str_ne(text, "unknown status code");
        if (c == SBX_OK)
            ck_assert_str_eq(name, "SBX_OK");
        else
            ck_assert_msg(strncmp(name, "SBX_E_", 6) == 0, "bad name %s", name);
        for (int d = SBX_OK; d < c; d++)
            ck_assert_str_ne(name, sbx_status_name((sbx_status)d));
    }
}
END_TEST

START_TEST(test_error_codes_keep_their_values)
{
    /* Append-only: these numbers are ABI and must never move. */
    ck_assert_int_eq(SBX_OK, 0);
    ck_assert_int_eq(SBX_E_INVALID_ARG, 1);
    ck_assert_int_eq(SBX_E_NOMEM, 3);
    ck_assert_int_eq(SBX_E_CANCELLED, 13);
    ck_assert_int_eq(SBX_E_INTERNAL, 21);
    ck_assert_int_eq(SBX_E_AGAIN, 22);
    ck_assert_str_eq(sbx_status_name(SBX_E_BUDGET_EXCEEDED), "SBX_E_BUDGET_EXCEEDED");
    ck_assert_str_eq(sbx_status_name(SBX_E_POLICY_DENIED), "SBX_E_POLICY_DENIED");
}
END_TEST

START_TEST(test_error_unknown_codes_are_safe)
{
    const int unknown[] = {-1, LAST_CODE + 1, 1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < SBX__ARRAY_LEN(unknown); i++) {
        ck_assert_ptr_null(sbx_status_name((sbx_status)unknown[i]));
        ck_assert_str_eq(sbx_strerror((sbx_status)unknown[i]), "unknown status code");
    }
}
END_TEST

START_TEST(test_error_set_formats_and_returns_code)
{
    sbx__err e = {0};
    ck_assert_str_eq(sbx__err_msg(&e), "");
    ck_assert_int_eq(sbx__err_set(&e, SBX_E_INVALID_ARG, "bad %s: %d", "timeout_ms", -5),
                     SBX_E_INVALID_ARG);
    ck_assert_int_eq(e.code, SBX_E_INVALID_ARG);
    ck_assert_str_eq(sbx__err_msg(&e), "bad timeout_ms: -5");
    sbx__err_clear(&e);
    ck_assert_int_eq(e.code, SBX_OK);
    ck_assert_str_eq(sbx__err_msg(&e), "");
    sbx__err_free(&e);
}
END_TEST

START_TEST(test_error_set_may_quote_its_own_message)
{
    sbx__err e = {0};
    sbx__err_set(&e, SBX_E_IO, "open failed");
    sbx__err_set(&e, SBX_E_IO, "while loading: %s", sbx__err_msg(&e));
    ck_assert_str_eq(sbx__err_msg(&e), "while loading: open failed");
    sbx__err_free(&e);
}
END_TEST

START_TEST(test_error_message_falls_back_without_memory)
{
    sbx__err e = {0};
    sbx__err_set(&e, SBX_E_IO, "first");
    sbx__fault_fail_nth(1);
    ck_assert_int_eq(sbx__err_set(&e, SBX_E_TIMEOUT, "second"), SBX_E_TIMEOUT);
    ck_assert_int_eq(sbx__fault_triggered(), 1);
    sbx__fault_fail_nth(0);
    /* The code is right and the message is the code's text, not stale "first". */
    ck_assert_int_eq(e.code, SBX_E_TIMEOUT);
    ck_assert_str_eq(sbx__err_msg(&e), sbx_strerror(SBX_E_TIMEOUT));
    sbx__err_free(&e);
}
END_TEST

START_TEST(test_error_long_message_is_cut_on_a_character)
{
    sbx__err e = {0};
    char big[3 * SBX__ERR_MAX];
    size_t len;
    /* "é" is two bytes; an odd cut point would split one without the floor. */
    for (size_t i = 0; i + 1 < sizeof big; i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    big[sizeof big - 1] = '\0';
    sbx__err_set(&e, SBX_E_PROTOCOL, "x%s", big);
    len = strlen(sbx__err_msg(&e));
    ck_assert_uint_le(len, SBX__ERR_MAX);
    ck_assert_uint_ge(len, SBX__ERR_MAX - 6);
    ck_assert_str_eq(sbx__err_msg(&e) + len - 3, "...");
    ck_assert(sbx__utf8_valid(sbx__err_msg(&e), len));
    sbx__err_free(&e);
}
END_TEST

START_TEST(test_error_copy_takes_code_and_message)
{
    sbx__err a = {0}, b = {0};
    sbx__err_set(&a, SBX_E_AUTH, "token expired");
    ck_assert_int_eq(sbx__err_copy(&b, &a), SBX_E_AUTH);
    ck_assert_str_eq(sbx__err_msg(&b), "token expired");
    ck_assert_ptr_ne(a.msg, b.msg);
    ck_assert_int_eq(sbx__err_copy(&a, &a), SBX_E_AUTH);
    ck_assert_str_eq(sbx__err_msg(&a), "token expired");
    sbx__err_free(&a);
    sbx__err_free(&b);
}
END_TEST

/* The server's code behind a failure: kept with it, copied with it, gone
 * with the next failure set and with a clear. */
START_TEST(test_error_api_code_follows_its_failure)
{
    sbx__err a = {0}, b = {0};
    sbx__err_set(&a, SBX_E_NOT_FOUND, "get sandbox: HTTP 404");
    ck_assert_ptr_null(sbx__err_api_code(&a));
    sbx__err_set_api_code(&a, "not_found");
    ck_assert_str_eq(sbx__err_api_code(&a), "not_found");
    sbx__err_copy(&b, &a);
    ck_assert_str_eq(sbx__err_api_code(&b), "not_found");
    ck_assert_int_eq(b.code, SBX_E_NOT_FOUND);
    sbx__err_set(&b, SBX_E_INVALID_ARG, "another failure");
    ck_assert_ptr_null(sbx__err_api_code(&b));
    sbx__err_copy(&b, &a);
    sbx__err_clear(&b);
    ck_assert_ptr_null(sbx__err_api_code(&b));
    sbx__err_set_api_code(&a, NULL);
    ck_assert_ptr_null(sbx__err_api_code(&a));
    sbx__err_set_api_code(&a, "gone");
    sbx__err_free(&a);
    sbx__err_free(&b);
}
END_TEST

START_TEST(test_error_code_without_message_reads_as_text)
{
    sbx__err e = {SBX_E_CANCELLED, NULL, NULL};
    ck_assert_str_eq(sbx__err_msg(&e), "cancelled");
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("core");
    SBX_TEST_ADD(tc, test_error_every_code_has_name_and_text);
    SBX_TEST_ADD(tc, test_error_codes_keep_their_values);
    SBX_TEST_ADD(tc, test_error_unknown_codes_are_safe);
    SBX_TEST_ADD(tc, test_error_set_formats_and_returns_code);
    SBX_TEST_ADD(tc, test_error_set_may_quote_its_own_message);
    SBX_TEST_ADD(tc, test_error_message_falls_back_without_memory);
    SBX_TEST_ADD(tc, test_error_long_message_is_cut_on_a_character);
    SBX_TEST_ADD(tc, test_error_copy_takes_code_and_message);
    SBX_TEST_ADD(tc, test_error_api_code_follows_its_failure);
    SBX_TEST_ADD(tc, test_error_code_without_message_reads_as_text);
    suite_add_tcase(s, tc);
    return s;
}
