/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/util/alloc.c: the wrapper and its fault injection. */
#include "harness.h"

#include <string.h>

START_TEST(test_alloc_zero_size_is_not_null)
{
    void *p = sbx__malloc(0);
    void *q = sbx__calloc(0, 16);
    void *r = sbx__realloc(NULL, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(q);
    ck_assert_ptr_nonnull(r);
    sbx__free(p);
    sbx__free(q);
    sbx__free(r);
    sbx__free(NULL);
    sbx_free(NULL);
}
END_TEST

START_TEST(test_alloc_calloc_zeroes)
{
    unsigned char *p = sbx__calloc(64, 4);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < 256; i++)
        ck_assert_uint_eq(p[i], 0);
    sbx__free(p);
}
END_TEST

START_TEST(test_alloc_calloc_overflow_fails)
{
    ck_assert_ptr_null(sbx__calloc(SIZE_MAX / 2, 4));
}
END_TEST

START_TEST(test_alloc_strndup_stops_at_nul_and_limit)
{
    char *a = sbx__strndup("hello", 3);
    char *b = sbx__strndup("hi\0there", 8);
    char *c = sbx__strdup("");
    ck_assert_str_eq(a, "hel");
    ck_assert_str_eq(b, "hi");
    ck_assert_str_eq(c, "");
    sbx__free(a);
    sbx__free(b);
    sbx__free(c);
}
END_TEST

START_TEST(test_alloc_memdup_copies_bytes)
{
    const unsigned char src[5] = {0, 1, 2, 0, 255};
    unsigned char *d = sbx__memdup(src, sizeof src);
    ck_assert_ptr_nonnull(d);
    ck_assert_mem_eq(d, src, sizeof src);
    sbx__free(d);
}
END_TEST

START_TEST(test_alloc_fault_fails_exactly_the_nth)
{
    void *p[5];
    sbx__fault_fail_nth(3);
    for (int i = 0; i < 5; i++)
        p[i] = sbx__malloc(8);
    ck_assert_int_eq(sbx__fault_triggered(), 1);
    ck_assert_int_eq(sbx__fault_count(), 5);
    ck_assert_ptr_nonnull(p[0]);
    ck_assert_ptr_nonnull(p[1]);
    ck_assert_ptr_null(p[2]);
    ck_assert_ptr_nonnull(p[3]);
    ck_assert_ptr_nonnull(p[4]);
    sbx__fault_fail_nth(0);
    ck_assert_int_eq(sbx__fault_triggered(), 0);
    for (int i = 0; i < 5; i++)
        sbx__free(p[i]);
}
END_TEST

START_TEST(test_alloc_fault_covers_every_allocator)
{
    void *keep = sbx__malloc(4);
    sbx__fault_fail_nth(1);
    ck_assert_ptr_null(sbx__calloc(1, 1));
    sbx__fault_fail_nth(1);
    ck_assert_ptr_null(sbx__realloc(keep, 64)); /* keep stays valid */
    sbx__fault_fail_nth(1);
    ck_assert_ptr_null(sbx__strdup("x"));
    sbx__fault_fail_nth(1);
    ck_assert_ptr_null(sbx__memdup("abc", 3));
    sbx__fault_fail_nth(0);
    sbx__free(keep);
}
END_TEST

static sbx_status three_allocs(void *ctx)
{
    int *calls = ctx;
    char *a, *b, *c;
    (*calls)++;
    a = sbx__strdup("a");
    if (!a)
        return SBX_E_NOMEM;
    b = sbx__strdup("b");
    if (!b) {
        sbx__free(a);
        return SBX_E_NOMEM;
    }
    c = sbx__strdup("c");
    sbx__free(a);
    sbx__free(b);
    if (!c)
        return SBX_E_NOMEM;
    sbx__free(c);
    return SBX_OK;
}

START_TEST(test_alloc_oom_loop_visits_every_allocation)
{
    int calls = 0;
    long n = sbx_test_oom_loop(three_allocs, &calls);
    /* Three failing runs, then one clean run. */
    ck_assert_int_eq(calls, 4);
    ck_assert_int_eq(n, 3);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("core");
    SBX_TEST_ADD(tc, test_alloc_zero_size_is_not_null);
    SBX_TEST_ADD(tc, test_alloc_calloc_zeroes);
    SBX_TEST_ADD(tc, test_alloc_calloc_overflow_fails);
    SBX_TEST_ADD(tc, test_alloc_strndup_stops_at_nul_and_limit);
    SBX_TEST_ADD(tc, test_alloc_memdup_copies_bytes);
    SBX_TEST_ADD(tc, test_alloc_fault_fails_exactly_the_nth);
    SBX_TEST_ADD(tc, test_alloc_fault_covers_every_allocator);
    SBX_TEST_ADD(tc, test_alloc_oom_loop_visits_every_allocation);
    suite_add_tcase(s, tc);
    return s;
}
