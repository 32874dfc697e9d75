/* SPDX-License-Identifier: MIT */
/* Unit tests for tools/common/duration.c: how sbxrun and sbxd read a time. */
#include "harness.h"

#include "duration.h"

START_TEST(test_duration_units)
{
    static const struct {
        const char *v;
        int64_t bare_unit, ms;
        int bare;
    } ok[] = {
        {"0", 1000, 0, 1},          {"30", 1000, 30000, 1},     {"30", 1, 30, 1},
        {"1.5", 1000, 1500, 1},     {"250ms", 1000, 250, 0},    {"30s", 1, 30000, 0},
        {"10m", 1, 600000, 0},      {"1.5h", 1, 5400000, 0},    {"7d", 1, 604800000, 0},
        {"0.0004s", 1, 1, 0},       {"0.0005s", 1, 1, 0},       {"0.4ms", 1000, 1, 0},
        {"0.0", 1000, 0, 1},        {"0.0001", 1000, 1, 1},       {"007s", 1, 7000, 0},
        {"90000000000000", 1, 90000000000000LL, 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -7;
        int bare = -7;
        ck_assert_msg(parse_duration(ok[i].v, ok[i].bare_unit, &ms, &bare) == DURATION_OK, "%s", ok[i].v);
        ck_assert_msg(ms == ok[i].ms, "%s: %lld, want %lld", ok[i].v, (long long)ms, (long long)ok[i].ms);
        ck_assert_int_eq(bare, ok[i].bare);
    }
}
END_TEST

START_TEST(test_duration_refused)
{
    /* What strtod would take, and what is no time at all. */
    static const char *const syntax[] = {
        "", "s", ".5", "5.", "1.2.3", "-1", "+1", " 5", "5 ", "0x10", "1e3", "inf", "nan",
        "5min", "5S", "5sec", "5 s", "5ms5", "1,5", "5d1h",
    };
    for (size_t i = 0; i < sizeof syntax / sizeof syntax[0]; i++) {
        int64_t ms = -7;
        int bare = -7;
        ck_assert_msg(parse_duration(syntax[i], 1000, &ms, &bare) == DURATION_SYNTAX, "'%s'", syntax[i]);
        ck_assert_msg(ms == -7 && bare == -7, "'%s' changed the outputs", syntax[i]);
    }
    ck_assert_int_eq(parse_duration(NULL, 1000, NULL, NULL), DURATION_SYNTAX);

    int64_t ms = -7;
    ck_assert_int_eq(parse_duration("1000000000d", 1, &ms, NULL), DURATION_RANGE);
    ck_assert_int_eq(parse_duration("99999999999999999999", 1000, &ms, NULL), DURATION_RANGE);
    ck_assert_int_eq(ms, -7);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("duration");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_duration_units);
    tcase_add_test(tc, test_duration_refused);
    suite_add_tcase(s, tc);
    return s;
}
