/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/client/global.c: version and reference-counted global init. */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "client/global.h"

START_TEST(test_global_version_matches_headers)
{
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", SBX_VERSION_MAJOR, SBX_VERSION_MINOR,
             SBX_VERSION_PATCH);
    ck_assert_str_eq(sbx_version(), SBX_VERSION_STRING);
    ck_assert_str_eq(sbx_version(), expect);
    ck_assert_uint_eq(sbx_version_num(), SBX_VERSION_NUM);
    ck_assert_uint_eq(sbx_version_num(), ((uint32_t)SBX_VERSION_MAJOR << 16) |
                                             ((uint32_t)SBX_VERSION_MINOR << 8) |
                                             (uint32_t)SBX_VERSION_PATCH);
}
END_TEST

START_TEST(test_global_init_is_refcounted)
{
    ck_assert_uint_eq(sbx__global_refs(), 0);
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    ck_assert_uint_eq(sbx__global_refs(), 2);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
    ck_assert_uint_eq(sbx__global_refs(), 1);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
    ck_assert_uint_eq(sbx__global_refs(), 0);
}
END_TEST

START_TEST(test_global_cleanup_without_init_is_misuse)
{
    ck_assert_int_eq(sbx_global_cleanup(), SBX_E_MISUSE);
    ck_assert_uint_eq(sbx__global_refs(), 0);
    /* The failed cleanup did not break a later init. */
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_E_MISUSE);
}
END_TEST

START_TEST(test_global_init_sets_up_libcurl)
{
    CURL *h;
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    h = curl_easy_init();
    ck_assert_ptr_nonnull(h);
    curl_easy_cleanup(h);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
}
END_TEST

static void *init_cleanup_many(void *arg)
{
    long fails = 0;
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        if (sbx_global_init() != SBX_OK)
            fails++;
        else if (sbx_global_cleanup() != SBX_OK)
            fails++;
    }
    return (void *)fails;
}

START_TEST(test_global_init_is_thread_safe)
{
    pthread_t t[8];
    /* Hold one reference so threads also exercise the non-zero path. */
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, init_cleanup_many, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *fails;
        pthread_join(t[i], &fails);
        ck_assert_ptr_null(fails);
    }
    ck_assert_uint_eq(sbx__global_refs(), 1);
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
    ck_assert_uint_eq(sbx__global_refs(), 0);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("global");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    SBX_TEST_ADD(tc, test_global_version_matches_headers);
    SBX_TEST_ADD(tc, test_global_init_is_refcounted);
    SBX_TEST_ADD(tc, test_global_cleanup_without_init_is_misuse);
    SBX_TEST_ADD(tc, test_global_init_sets_up_libcurl);
    SBX_TEST_ADD(tc, test_global_init_is_thread_safe);
    suite_add_tcase(s, tc);
    return s;
}
