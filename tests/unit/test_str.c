/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/util/str.c: string lists, UTF-8 checks, wiping. */
#include "harness.h"

#include <string.h>

#include "util/duration.h"
#include "util/str.h"

START_TEST(test_str_list_push_keeps_null_terminated_copies)
{
    sbx__strlist l = SBX__STRLIST_INIT;
    char word[] = "git";
    ck_assert_int_eq(sbx__strlist_push(&l, word), SBX_OK);
    word[0] = 'X'; /* the list holds a copy */
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(sbx__strlist_push(&l, "arg"), SBX_OK);
    ck_assert_int_eq(sbx__strlist_pushn(&l, "status-extra", 6), SBX_OK);
    ck_assert_uint_eq(l.n, 22);
    ck_assert_str_eq(l.v[0], "git");
    ck_assert_str_eq(l.v[21], "status");
    ck_assert_ptr_null(l.v[22]);
    sbx__strlist_clear(&l);
    ck_assert_ptr_null(l.v);
    ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_str_list_set_and_copy)
{
    const char *argv[] = {"bun", "run", "test"};
    sbx__strlist a = SBX__STRLIST_INIT, b = SBX__STRLIST_INIT;
    ck_assert_int_eq(sbx__strlist_push(&b, "old"), SBX_OK);
    ck_assert_int_eq(sbx__strlist_set(&a, argv, 3), SBX_OK);
    ck_assert_int_eq(sbx__strlist_copy(&b, &a), SBX_OK);
    ck_assert_uint_eq(b.n, 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_eq(b.v[i], argv[i]);
        ck_assert_ptr_ne(b.v[i], a.v[i]);
    }
    ck_assert_int_eq(sbx__strlist_copy(&a, &a), SBX_OK);
    ck_assert_uint_eq(a.n, 3);
    ck_assert_int_eq(sbx__strlist_set(&a, NULL, 0), SBX_OK);
    ck_assert_uint_eq(a.n, 0);
    sbx__strlist_clear(&a);
    sbx__strlist_wipe(&b);
    ck_assert_ptr_null(b.v);
}
END_TEST

static sbx_status set_argv(void *ctx)
{
    const char *argv[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    sbx__strlist *l = ctx;
    sbx__strlist before = SBX__STRLIST_INIT;

    /* A failed set leaves the previous list intact. */
    sbx__fault_fail_nth(0);
    ck_assert_int_eq(sbx__strlist_set(&before, argv, 2), SBX_OK);
    ck_assert_int_eq(sbx__strlist_copy(l, &before), SBX_OK);
    sbx__strlist_clear(&before);
    return SBX_OK;
}

static sbx_status set_under_oom(void *ctx)
{
    const char *argv[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    sbx__strlist *l = ctx;
    sbx_status st = sbx__strlist_set(l, argv, SBX__ARRAY_LEN(argv));
    if (st != SBX_OK) {
        ck_assert_uint_eq(l->n, 2);
        ck_assert_str_eq(l->v[1], "b");
    } else {
        ck_assert_uint_eq(l->n, 10);
        /* restore the 2-item list for the next round of the loop */
        sbx__fault_fail_nth(0);
        set_argv(ctx);
    }
    return st;
}

START_TEST(test_str_list_failed_set_keeps_old_list)
{
    sbx__strlist l = SBX__STRLIST_INIT;
    set_argv(&l);
    sbx_test_oom_loop(set_under_oom, &l);
    sbx__strlist_clear(&l);
}
END_TEST

START_TEST(test_str_list_push_take_frees_on_failure)
{
    sbx__strlist l = SBX__STRLIST_INIT;
    char *s = sbx__strdup("owned");
    sbx__fault_fail_nth(1);
    /* The list must grow for its first item: that allocation fails. */
    ck_assert_int_eq(sbx__strlist_push_take(&l, s), SBX_E_NOMEM);
    sbx__fault_fail_nth(0);
    ck_assert_uint_eq(l.n, 0);
    sbx__strlist_clear(&l);
}
END_TEST

START_TEST(test_str_utf8_accepts_valid)
{
    const char *ok[] = {
        "", "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf",
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(ok); i++)
        ck_assert_msg(sbx__utf8_valid(ok[i], strlen(ok[i])), "rejected case %zu", i);
    ck_assert(sbx__utf8_valid("a\0b", 3)); /* NUL is a valid character */
}
END_TEST

START_TEST(test_str_utf8_rejects_malformed)
{
    const char *bad[] = {
        "\xc0\x80",         /* overlong NUL */
        "\xc1\xbf",         /* overlong */
        "\xe0\x80\x80",     /* overlong 3-byte */
        "\xf0\x80\x80\x80", /* overlong 4-byte */
        "\xed\xa0\x80",     /* surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\xf5\x80\x80\x80", "\xff", "\x80", "caf\xc3", "\xe2\x82", "\xc3\x28",
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++)
        ck_assert_msg(!sbx__utf8_valid(bad[i], strlen(bad[i])), "accepted case %zu", i);
}
END_TEST

START_TEST(test_str_utf8_floor_never_splits)
{
    const char *s = "a\xe2\x82\xac" "b"; /* a € b */
    ck_assert_uint_eq(sbx__utf8_floor(s, 0), 0);
    ck_assert_uint_eq(sbx__utf8_floor(s, 1), 1);
    ck_assert_uint_eq(sbx__utf8_floor(s, 2), 1);
    ck_assert_uint_eq(sbx__utf8_floor(s, 3), 1);
    ck_assert_uint_eq(sbx__utf8_floor(s, 4), 4);
    ck_assert_uint_eq(sbx__utf8_floor(s, 5), 5);
    /* Continuation bytes with no lead: cut where asked. */
    ck_assert_uint_eq(sbx__utf8_floor("\x80\x80\x80\x80\x80", 4), 4);
}
END_TEST

START_TEST(test_str_wipe_clears_bytes)
{
    char secret[] = "hunter2-hunter2";
    sbx__wipe(secret, sizeof secret - 1);
    for (size_t i = 0; i < sizeof secret - 1; i++)
        ck_assert_int_eq(secret[i], 0);
    sbx__wipe(NULL, 5);
    sbx__free_secret(NULL);
    sbx__free_secret(sbx__strdup("token-value"));
}
END_TEST

START_TEST(test_str_starts)
{
    ck_assert(sbx__str_starts("ghp_abc", "ghp_"));
    ck_assert(sbx__str_starts("x", ""));
    ck_assert(!sbx__str_starts("gh", "ghp_"));
}
END_TEST

START_TEST(test_str_url_userinfo_split)
{
    static const struct {
        const char *in, *url, *userpwd;
    } cases[] = {
        {"http://alice:pw@127.0.0.1:7878", "http://127.0.0.1:7878", "alice:pw"},
        {"https://a%40b:p%3Aw%25@host/api?x=y@z", "https://host/api?x=y@z", "a@b:p:w%"},
        {"http://u:p@ss@host/", "http://host/", "u:p@ss"},
        {"http://host/path@x", "http://host/path@x", NULL},
        {"https://vercel.com/api", "https://vercel.com/api", NULL},
        {"unix:/run/sbxd.sock", "unix:/run/sbxd.sock", NULL},
        {"ftp://x:y@h", "ftp://h", "x:y"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        char *url = (char *)"x", *up = (char *)"x";
        ck_assert_int_eq(sbx__url_split_userinfo(cases[i].in, &url, &up), SBX_OK);
        ck_assert_str_eq(url, cases[i].url);
        if (cases[i].userpwd)
            ck_assert_str_eq(up, cases[i].userpwd);
        else
            ck_assert_ptr_null(up);
        sbx__free(url);
        sbx__free_secret(up);
    }
    /* Out of memory at each allocation: an error, nothing leaked or half set. */
    for (int n = 1; n <= 2; n++) {
        char *url = (char *)"x", *up = (char *)"x";
        sbx__fault_fail_nth(n);
        ck_assert_int_eq(sbx__url_split_userinfo("http://u:p@h", &url, &up), SBX_E_NOMEM);
        sbx__fault_fail_nth(0);
        ck_assert_ptr_null(url);
        ck_assert_ptr_null(up);
    }
}
END_TEST

/* A duration in a message reads as the user would have written it. */
START_TEST(test_str_duration_text)
{
    static const struct {
        int64_t ms;
        const char *text;
    } cases[] = {
        {-5, "0s"}, {0, "0s"}, {250, "250ms"}, {999, "999ms"}, {1000, "1s"}, {1500, "1.5s"},
        {1234, "1.234s"}, {10000, "10s"}, {59999, "59.999s"}, {60000, "1m"}, {90000, "1m 30s"},
        {90500, "1m 30.5s"}, {300123, "5m 123ms"}, {3600000, "1h"}, {5400000, "1h 30m"},
        {86400000 + 6 * 3600000, "1d 6h"}, {INT64_MAX, "106751991167d 7h 12m 55.807s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[SBX__DURATION_TEXT_MAX];
        ck_assert_str_eq(sbx__duration_text(cases[i].ms, buf), cases[i].text);
    }
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("str");
    TCase *tc = tcase_create("core");
    SBX_TEST_ADD(tc, test_str_list_push_keeps_null_terminated_copies);
    SBX_TEST_ADD(tc, test_str_duration_text);
    SBX_TEST_ADD(tc, test_str_list_set_and_copy);
    SBX_TEST_ADD(tc, test_str_list_failed_set_keeps_old_list);
    SBX_TEST_ADD(tc, test_str_list_push_take_frees_on_failure);
    SBX_TEST_ADD(tc, test_str_utf8_accepts_valid);
    SBX_TEST_ADD(tc, test_str_utf8_rejects_malformed);
    SBX_TEST_ADD(tc, test_str_utf8_floor_never_splits);
    SBX_TEST_ADD(tc, test_str_wipe_clears_bytes);
    SBX_TEST_ADD(tc, test_str_starts);
    SBX_TEST_ADD(tc, test_str_url_userinfo_split);
    suite_add_tcase(s, tc);
    return s;
}
