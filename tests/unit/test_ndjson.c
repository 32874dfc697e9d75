/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/util/ndjson.c: incremental, bounded line splitting. */
#include "harness.h"

#include <stdio.h>
#include <string.h>

#include "util/ndjson.h"

/* ---- a callback that records what it gets -------------------------------- */

#define MAX_LINES 256
#define LINE_CAP 256

struct lines {
    char text[MAX_LINES][LINE_CAP];
    size_t len[MAX_LINES];
    size_t n;
    size_t stop_at; /* return non-zero for line number stop_at (1-based); 0 never */
};

static int collect(const char *line, size_t len, void *user)
{
    struct lines *l = user;
    ck_assert_msg(len > 0, "an empty line was delivered");
    ck_assert_uint_lt(l->n, MAX_LINES);
    ck_assert_uint_lt(len, LINE_CAP);
    /* The delivered line never ends in the separator or its '\r'. */
    ck_assert_int_ne(line[len - 1], '\n');
    ck_assert_int_ne(line[len - 1], '\r');
    memcpy(l->text[l->n], line, len);
    l->text[l->n][len] = '\0';
    l->len[l->n] = len;
    l->n++;
    return l->stop_at != 0 && l->n == l->stop_at;
}

static void lines_eq(const struct lines *l, const char *const *want, size_t nwant, const char *where)
{
    ck_assert_msg(l->n == nwant, "%s: %zu lines delivered, %zu expected", where, l->n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        ck_assert_msg(l->len[i] == strlen(want[i]) && memcmp(l->text[i], want[i], l->len[i]) == 0,
                      "%s: line %zu is '%s', expected '%s'", where, i, l->text[i], want[i]);
    }
}

/* A stream with CRLF, empty lines (bare and CRLF), a '\r' inside a line, a
 * line of exactly max_line bytes, and a last line without '\n'. */
#define MAXL 24
static const char stream[] = "first\n"
                             "{\"a\":1}\r\n"
                             "\n"
                             "\r\n"
                             "in\rside\n"
                             "\n\n"
                             "abcdefghijklmnopqrstuvwx\n" /* 24 bytes: exactly MAXL */
                             "x\r\n"
                             "tail-no-newline";
static const char *const stream_lines[] = {"first", "{\"a\":1}", "in\rside", "abcdefghijklmnopqrstuvwx", "x"};
static const char *const stream_last = "tail-no-newline";

static void check_bounded(const sbx__ndjson *s)
{
    ck_assert_uint_le(sbx__ndjson_pending(s), s->max_line);
    /* The memory held for a partial line is bounded by the limit too. */
    ck_assert_uint_le(s->pending.cap, s->max_line + 1);
}

static void finish_and_check(sbx__ndjson *s, struct lines *l, const char *where)
{
    const char *all[SBX__ARRAY_LEN(stream_lines) + 1];
    size_t n = SBX__ARRAY_LEN(stream_lines);

    /* Before finish: everything but the unterminated last line. */
    lines_eq(l, stream_lines, n, where);
    ck_assert_uint_eq(sbx__ndjson_pending(s), strlen(stream_last));
    ck_assert_int_eq(sbx__ndjson_finish(s, collect, l), SBX_OK);
    memcpy(all, stream_lines, sizeof stream_lines);
    all[n] = stream_last;
    lines_eq(l, all, n + 1, where);
    ck_assert_uint_eq(sbx__ndjson_pending(s), 0);
    /* A second finish has nothing more to give. */
    ck_assert_int_eq(sbx__ndjson_finish(s, collect, l), SBX_OK);
    ck_assert_uint_eq(l->n, n + 1);
}

START_TEST(test_ndjson_whole_stream_in_one_chunk)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, MAXL);
    ck_assert_int_eq(sbx__ndjson_feed(&s, stream, sizeof stream - 1, collect, &l), SBX_OK);
    check_bounded(&s);
    finish_and_check(&s, &l, "one chunk");
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_byte_by_byte)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, MAXL);
    for (size_t i = 0; i < sizeof stream - 1; i++) {
        ck_assert_int_eq(sbx__ndjson_feed(&s, stream + i, 1, collect, &l), SBX_OK);
        check_bounded(&s);
    }
    finish_and_check(&s, &l, "byte by byte");
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_every_cut_point)
{
    const size_t len = sizeof stream - 1;
    char where[64];
    /* Two pieces at every position, empty pieces included. */
    for (size_t i = 0; i <= len; i++) {
        sbx__ndjson s;
        struct lines l = {0};
        snprintf(where, sizeof where, "cut at %zu", i);
        sbx__ndjson_init(&s, MAXL);
        ck_assert_int_eq(sbx__ndjson_feed(&s, stream, i, collect, &l), SBX_OK);
        check_bounded(&s);
        ck_assert_int_eq(sbx__ndjson_feed(&s, stream + i, len - i, collect, &l), SBX_OK);
        check_bounded(&s);
        finish_and_check(&s, &l, where);
        sbx__ndjson_free(&s);
    }
}
END_TEST

START_TEST(test_ndjson_every_pair_of_cut_points)
{
    const size_t len = sizeof stream - 1;
    char where[64];
    /* Three pieces: a line can start in one chunk, span a whole one, end in a third. */
    for (size_t i = 0; i <= len; i++) {
        for (size_t j = i; j <= len; j++) {
            sbx__ndjson s;
            struct lines l = {0};
            snprintf(where, sizeof where, "cuts at %zu and %zu", i, j);
            sbx__ndjson_init(&s, MAXL);
            ck_assert_int_eq(sbx__ndjson_feed(&s, stream, i, collect, &l), SBX_OK);
            ck_assert_int_eq(sbx__ndjson_feed(&s, stream + i, j - i, collect, &l), SBX_OK);
            ck_assert_int_eq(sbx__ndjson_feed(&s, stream + j, len - j, collect, &l), SBX_OK);
            check_bounded(&s);
            finish_and_check(&s, &l, where);
            sbx__ndjson_free(&s);
        }
    }
}
END_TEST

START_TEST(test_ndjson_last_line_only_by_finish)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 64);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "{\"x\":", 5, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "2}\r", 3, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 0);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 8);
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.text[0], "{\"x\":2}"); /* the '\r' is stripped here too */
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);

    /* A stream that ends with '\n' gives nothing more at finish. */
    ck_assert_int_eq(sbx__ndjson_feed(&s, "a\n", 2, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 2);

    /* An unterminated line that is only "\r" is empty: skipped at finish. */
    ck_assert_int_eq(sbx__ndjson_feed(&s, "\r", 1, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 2);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_only_one_cr_is_stripped)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 64);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "\rlead\n", 6, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_uint_eq(l.len[0], 5);
    ck_assert_mem_eq(l.text[0], "\rlead", 5);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_empty_lines_skipped)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 8);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "\n\r\n\n\r\n", 6, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 0);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 0);
    sbx__ndjson_free(&s);
}
END_TEST

static void check_stays_broken(sbx__ndjson *s, struct lines *l)
{
    size_t n = l->n;
    ck_assert_int_eq(sbx__ndjson_feed(s, "ok\n", 3, collect, l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__ndjson_feed(s, "\n", 1, collect, l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__ndjson_feed(s, "x", 1, collect, l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__ndjson_finish(s, collect, l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(l->n, n); /* nothing more was delivered */
    ck_assert_uint_le(sbx__ndjson_pending(s), s->max_line);
}

START_TEST(test_ndjson_line_at_limit_passes_one_more_fails_in_chunk)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 8);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "12345678\n", 9, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 1);
    /* Too long inside one chunk; the line before it is still delivered. */
    ck_assert_int_eq(sbx__ndjson_feed(&s, "ab\n123456789\nlater\n", 19, collect, &l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(l.text[1], "ab");
    check_stays_broken(&s, &l);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_too_long_without_newline_in_one_chunk)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 8);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "123456789", 9, collect, &l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    check_stays_broken(&s, &l);
    ck_assert_uint_eq(l.n, 0);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_too_long_across_pending_chunks)
{
    /* The line is only known to be too long from the second or third piece,
     * with or without its '\n' in the failing piece. */
    static const char *const second[] = {"6789", "6789\n", "678", "678\n"};
    for (size_t k = 0; k < SBX__ARRAY_LEN(second); k++) {
        sbx__ndjson s;
        struct lines l = {0};
        sbx_status st;
        sbx__ndjson_init(&s, 8);
        ck_assert_int_eq(sbx__ndjson_feed(&s, "12345", 5, collect, &l), SBX_OK);
        ck_assert_uint_eq(sbx__ndjson_pending(&s), 5);
        st = sbx__ndjson_feed(&s, second[k], strlen(second[k]), collect, &l);
        if (k < 2) {
            ck_assert_msg(st == SBX_E_BUDGET_EXCEEDED, "case %zu: %s", k, sbx_status_name(st));
        } else {
            /* 8 bytes: still allowed; one more byte breaks it. */
            ck_assert_int_eq(st, SBX_OK);
            if (l.n == 1) {
                ck_assert_str_eq(l.text[0], "12345678");
                ck_assert_int_eq(sbx__ndjson_feed(&s, "123456789", 9, collect, &l), SBX_E_BUDGET_EXCEEDED);
            } else {
                ck_assert_int_eq(sbx__ndjson_feed(&s, "9", 1, collect, &l), SBX_E_BUDGET_EXCEEDED);
            }
        }
        ck_assert_uint_le(sbx__ndjson_pending(&s), 8);
        check_stays_broken(&s, &l);
        sbx__ndjson_free(&s);
    }
}
END_TEST

START_TEST(test_ndjson_cr_counts_towards_the_limit_consistently)
{
    /* "12345678\r\n" holds 9 bytes before its '\n': whether it comes in one
     * chunk or split before the '\r', the verdict is the same. */
    sbx__ndjson a, b;
    struct lines la = {0}, lb = {0};
    sbx_status sa, sb;
    sbx__ndjson_init(&a, 8);
    sbx__ndjson_init(&b, 8);
    sa = sbx__ndjson_feed(&a, "12345678\r\n", 10, collect, &la);
    sb = sbx__ndjson_feed(&b, "12345678", 8, collect, &lb);
    ck_assert_int_eq(sb, SBX_OK);
    sb = sbx__ndjson_feed(&b, "\r\n", 2, collect, &lb);
    ck_assert_int_eq(sa, sb);
    ck_assert_uint_eq(la.n, lb.n);
    sbx__ndjson_free(&a);
    sbx__ndjson_free(&b);
}
END_TEST

START_TEST(test_ndjson_callback_cancels)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 64);
    l.stop_at = 2;
    ck_assert_int_eq(sbx__ndjson_feed(&s, "one\ntwo\nthree\n", 14, collect, &l), SBX_E_CANCELLED);
    ck_assert_uint_eq(l.n, 2); /* "three" was not delivered */
    ck_assert_str_eq(l.text[1], "two");
    sbx__ndjson_free(&s);

    /* Cancelled on a line completed from pending bytes. */
    memset(&l, 0, sizeof l);
    l.stop_at = 1;
    sbx__ndjson_init(&s, 64);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "par", 3, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "tial\nnext\n", 10, collect, &l), SBX_E_CANCELLED);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.text[0], "partial");
    sbx__ndjson_free(&s);

    /* Cancelled on the last line, at finish. */
    memset(&l, 0, sizeof l);
    l.stop_at = 1;
    sbx__ndjson_init(&s, 64);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "end", 3, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_E_CANCELLED);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.text[0], "end");
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_reset_after_broken)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 8);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "1234", 4, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "56789", 5, collect, &l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "a\n", 2, collect, &l), SBX_E_BUDGET_EXCEEDED);
    sbx__ndjson_reset(&s);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "a\nbc", 4, collect, &l), SBX_OK);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "d\n", 2, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(l.text[0], "a");
    ck_assert_str_eq(l.text[1], "bcd");
    /* The limit still holds after the reset. */
    ck_assert_int_eq(sbx__ndjson_feed(&s, "123456789\n", 10, collect, &l), SBX_E_BUDGET_EXCEEDED);
    ck_assert_uint_eq(l.n, 2);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_reset_drops_a_partial_line)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 16);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "stale", 5, collect, &l), SBX_OK);
    sbx__ndjson_reset(&s);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "fresh\n", 6, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.text[0], "fresh");
    ck_assert_int_eq(sbx__ndjson_finish(&s, collect, &l), SBX_OK);
    ck_assert_uint_eq(l.n, 1);
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_pending_counts_held_bytes)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 32);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "ab", 2, collect, &l), SBX_OK);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 2);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "cd", 2, collect, &l), SBX_OK);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 4);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "\n", 1, collect, &l), SBX_OK);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "x\nyz\r", 5, collect, &l), SBX_OK);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 3);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(l.text[0], "abcd");
    ck_assert_str_eq(l.text[1], "x");
    sbx__ndjson_free(&s);
}
END_TEST

START_TEST(test_ndjson_memory_bounded_over_a_long_stream)
{
    /* 2000 lines of 1..100 bytes fed in chunks of 1..300 bytes: pending and its
     * memory stay within the limit, and every line arrives intact. */
    enum { NLINES = 2000, MAXLEN = 100 };
    sbx__buf in = SBX__BUF_INIT;
    sbx__ndjson s;
    unsigned seed = 12345;
    size_t off = 0, got = 0;
    struct {
        size_t n;
        unsigned long sum;
    } acc = {0, 0};

    for (int i = 0; i < NLINES; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 16) % MAXLEN;
        for (size_t k = 0; k < len; k++)
            ck_assert_int_eq(sbx__buf_putc(&in, (char)('a' + (i + (int)k) % 26)), SBX_OK);
        ck_assert_int_eq(sbx__buf_putc(&in, '\n'), SBX_OK);
        acc.sum += len;
    }
    sbx__ndjson_init(&s, MAXLEN);
    while (off < in.len) {
        struct lines l = {0};
        size_t n;
        seed = seed * 1103515245u + 12345u;
        n = 1 + (seed >> 16) % 300;
        if (n > in.len - off)
            n = in.len - off;
        ck_assert_int_eq(sbx__ndjson_feed(&s, in.data + off, n, collect, &l), SBX_OK);
        check_bounded(&s);
        for (size_t i = 0; i < l.n; i++) {
            ck_assert_uint_le(l.len[i], MAXLEN);
            got += l.len[i];
        }
        acc.n += l.n;
        off += n;
    }
    ck_assert_uint_eq(acc.n, NLINES);
    ck_assert_uint_eq(got, acc.sum);
    ck_assert_uint_eq(sbx__ndjson_pending(&s), 0);
    sbx__ndjson_free(&s);
    sbx__buf_free(&in);
}
END_TEST

START_TEST(test_ndjson_free_releases_and_is_idempotent)
{
    sbx__ndjson s;
    struct lines l = {0};
    sbx__ndjson_init(&s, 32);
    ck_assert_int_eq(sbx__ndjson_feed(&s, "held", 4, collect, &l), SBX_OK);
    sbx__ndjson_free(&s);
    ck_assert_ptr_null(s.pending.data);
    sbx__ndjson_free(&s);
}
END_TEST

/* ---- out of memory ---------------------------------------------------------- */

static sbx_status feed_in_pieces(void *ctx)
{
    static const size_t cuts[] = {3, 1, 9, 2, 14, 5, 30};
    const size_t len = sizeof stream - 1;
    struct lines l = {0};
    sbx__ndjson s;
    sbx_status st = SBX_OK;
    size_t off = 0;
    (void)ctx;

    sbx__ndjson_init(&s, MAXL);
    for (size_t i = 0; st == SBX_OK && off < len; i++) {
        size_t n = cuts[i % SBX__ARRAY_LEN(cuts)];
        if (n > len - off)
            n = len - off;
        st = sbx__ndjson_feed(&s, stream + off, n, collect, &l);
        off += n;
        check_bounded(&s);
    }
    if (st == SBX_OK)
        st = sbx__ndjson_finish(&s, collect, &l);
    if (st == SBX_OK) {
        const char *all[SBX__ARRAY_LEN(stream_lines) + 1];
        memcpy(all, stream_lines, sizeof stream_lines);
        all[SBX__ARRAY_LEN(stream_lines)] = stream_last;
        lines_eq(&l, all, SBX__ARRAY_LEN(all), "oom run");
    } else {
        ck_assert_msg(st == SBX_E_NOMEM, "a failed allocation gave %s", sbx_status_name(st));
        /* Nothing delivered twice or out of order before the failure. */
        for (size_t i = 0; i < l.n && i < SBX__ARRAY_LEN(stream_lines); i++)
            ck_assert_str_eq(l.text[i], stream_lines[i]);
    }
    sbx__ndjson_free(&s);
    return st;
}

START_TEST(test_ndjson_out_of_memory_is_clean)
{
    /* The pieces leave partial lines pending, so the loop has allocations to fail. */
    ck_assert_int_gt(sbx_test_oom_loop(feed_in_pieces, NULL), 0);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("ndjson");
    TCase *tc = tcase_create("core");
    SBX_TEST_ADD(tc, test_ndjson_whole_stream_in_one_chunk);
    SBX_TEST_ADD(tc, test_ndjson_byte_by_byte);
    SBX_TEST_ADD(tc, test_ndjson_every_cut_point);
    SBX_TEST_ADD(tc, test_ndjson_every_pair_of_cut_points);
    SBX_TEST_ADD(tc, test_ndjson_last_line_only_by_finish);
    SBX_TEST_ADD(tc, test_ndjson_only_one_cr_is_stripped);
    SBX_TEST_ADD(tc, test_ndjson_empty_lines_skipped);
    SBX_TEST_ADD(tc, test_ndjson_line_at_limit_passes_one_more_fails_in_chunk);
    SBX_TEST_ADD(tc, test_ndjson_too_long_without_newline_in_one_chunk);
    SBX_TEST_ADD(tc, test_ndjson_too_long_across_pending_chunks);
    SBX_TEST_ADD(tc, test_ndjson_cr_counts_towards_the_limit_consistently);
    SBX_TEST_ADD(tc, test_ndjson_callback_cancels);
    SBX_TEST_ADD(tc, test_ndjson_reset_after_broken);
    SBX_TEST_ADD(tc, test_ndjson_reset_drops_a_partial_line);
    SBX_TEST_ADD(tc, test_ndjson_pending_counts_held_bytes);
    SBX_TEST_ADD(tc, test_ndjson_memory_bounded_over_a_long_stream);
    SBX_TEST_ADD(tc, test_ndjson_free_releases_and_is_idempotent);
    SBX_TEST_ADD(tc, test_ndjson_out_of_memory_is_clean);
    suite_add_tcase(s, tc);
    return s;
}
