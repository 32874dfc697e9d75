/* SPDX-License-Identifier: MIT */
/* The redactor: known values and their forms, every shape (the table in
 * redact_shapes_cases.h), chunk independence at every chunk size, hold-back,
 * counts, streams keeping their rules, and allocation failures. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"
#include "redact/redact_int.h"
#include "redact_shapes_cases.h"

#ifndef SBX_REDACT_CORPUS
#error "SBX_REDACT_CORPUS: the corpus file's path, set by tests/unit/meson.build"
#endif

/* Redact text whole with r; the caller frees. */
static char *whole(const sbx_redactor *r, const char *text)
{
    char *out = NULL;
    size_t n = 0;
    ck_assert_int_eq(t_redact(r, text, strlen(text), &out, &n), SBX_OK);
    ck_assert_uint_eq(strlen(out), n);
    return out;
}

/* Redact text fed in chunks of `chunk` bytes; the caller frees. */
static char *chunked(const sbx_redactor *r, const char *text, size_t len, size_t chunk)
{
    sbx_redact_stream *s = sbx_redact_stream_new(r);
    char *all = malloc(len * 3 + 64 + 1);
    size_t o = 0, n;
    const char *out;
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < len; i += chunk) {
        size_t k = len - i < chunk ? len - i : chunk;
        ck_assert_int_eq(t_feed(s, text + i, k, &out, &n), SBX_OK);
        all = realloc(all, o + n + len * 3 + 64 + 1);
        memcpy(all + o, out, n);
        o += n;
    }
    ck_assert_int_eq(t_finish(s, &out, &n), SBX_OK);
    all = realloc(all, o + n + 1);
    memcpy(all + o, out, n);
    o += n;
    all[o] = '\0';
    sbx_redact_stream_free(s);
    return all;
}

static void expect_redacted(const sbx_redactor *r, const char *text, const char *want)
{
    char *got = whole(r, text);
    ck_assert_msg(strcmp(got, want) == 0, "in:   %s\nwant: %s\ngot:  %s", text, want, got);
    sbx_free(got);
    for (size_t c = 1; c <= 7; c += 3) {
        char *g = chunked(r, text, strlen(text), c);
        ck_assert_msg(strcmp(g, want) == 0, "chunk %zu\nin:   %s\nwant: %s\ngot:  %s", c, text, want, g);
        free(g);
    }
}

#define SECRET "hunter2-correct-horse"

START_TEST(test_redact_known_value_forms)
{
    sbx_redactor *r = sbx_redactor_new();
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"s3cr3t/p@ss w0rd\"x", 18), SBX_OK);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)), SBX_OK);
    /* raw, at any place */
    expect_redacted(r, "pw=" SECRET ";", "pw=[REDACTED:secret];");
    expect_redacted(r, SECRET SECRET, "[REDACTED:secret][REDACTED:secret]");
    /* percent-encoded, both hex cases */
    expect_redacted(r, "u=s3cr3t%2Fp%40ss%20w0rd%22x&", "u=[REDACTED:secret]&");
    expect_redacted(r, "u=s3cr3t%2fp%40ss%20w0rd%22x&", "u=[REDACTED:secret]&");
    /* JSON-escaped, with and without \/ */
    expect_redacted(r, "{\"p\":\"s3cr3t/p@ss w0rd\\\"x\"}", "{\"p\":\"[REDACTED:secret]\"}");
    expect_redacted(r, "{\"p\":\"s3cr3t\\/p@ss w0rd\\\"x\"}", "{\"p\":\"[REDACTED:secret]\"}");
    /* base64 of "user:" SECRET (alignment 2), of SECRET alone (0), of "x" SECRET (1) */
    expect_redacted(r, "aHVudGVyMi1jb3JyZWN0LWhvcnNl", "[REDACTED:secret]");
    {
        char *g = whole(r, "Basic dXNlcjpodW50ZXIyLWNvcnJlY3QtaG9yc2U=");
        ck_assert_msg(!strstr(g, "aHVudGVy") && strstr(g, "[REDACTED:secret]"), "%s", g);
        sbx_free(g);
        g = whole(r, "eGh1bnRlcjItY29ycmVjdC1ob3JzZQ==");
        ck_assert_msg(strstr(g, "[REDACTED:secret]"), "%s", g);
        sbx_free(g);
    }
    /* words around it survive byte for byte */
    expect_redacted(r, "no secret here, just hunter2 and correct-horse", "no secret here, just hunter2 and correct-horse");
    sbx_redactor_free(r);
}
END_TEST

/* Percent and JSON encodings as real encoders produce them, decoded while
 * matching: any hex case, '+' for a space, encodeURIComponent's kept
 * characters, \uXXXX for any character (Python's ensure_ascii, Go's
 * HTML-safe < > &), surrogate pairs, and mixtures. */
START_TEST(test_redact_value_encodings)
{
    sbx_redactor *r = sbx_redactor_new();
    /* "p@ss/wörd x😀<&" */
    static const char v[] = "p@ss/w\xc3\xb6rd x\xf0\x9f\x98\x80<&";
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)v, strlen(v)), SBX_OK);
    expect_redacted(r, "a=" "p%40ss%2Fw%C3%B6rd%20x%F0%9F%98%80%3C%26" "&b", "a=[REDACTED:secret]&b");
    expect_redacted(r, "a=" "p%40ss/w%c3%b6rd+x%f0%9f%98%80%3c%26" "&b", "a=[REDACTED:secret]&b");
    expect_redacted(r, "a=" "p%40ss%2fw%C3%b6rd%20x%F0%9f%98%80%3C%26", "a=[REDACTED:secret]");
    expect_redacted(r, "{\"a\":\"p@ss\\/w\\u00f6rd x\\ud83d\\ude00\\u003c\\u0026\"}", "{\"a\":\"[REDACTED:secret]\"}");
    expect_redacted(r, "{\"a\":\"p@ss/w\\u00F6rd x\\uD83D\\uDE00<&\"}", "{\"a\":\"[REDACTED:secret]\"}");
    expect_redacted(r, "{\"a\":\"p\\u0040ss/w\xc3\xb6rd x\xf0\x9f\x98\x80\\u003C&\"}", "{\"a\":\"[REDACTED:secret]\"}");
    /* A broken escape is not the value. */
    expect_redacted(r, "p%40ss%2Gw", "p%40ss%2Gw");
    expect_redacted(r, "p@ss/w\\ud800rd", "p@ss/w\\ud800rd");
    sbx_redactor_free(r);
    /* A value holding escape characters itself: its raw bytes win, and its
     * encoded form is found too. */
    r = sbx_redactor_new();
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"100%25-sure\\n!", 14), SBX_OK);
    expect_redacted(r, "x 100%25-sure\\n! y", "x [REDACTED:secret] y");
    expect_redacted(r, "x 100%2525-sure%5Cn%21 y", "x [REDACTED:secret] y");
    expect_redacted(r, "{\"x\":\"100%25-sure\\\\n!\"}", "{\"x\":\"[REDACTED:secret]\"}");
    sbx_redactor_free(r);
}
END_TEST

/* A value made of escape characters cannot make matching exponential:
 * the raw readings tried aside share one budget (a 33-byte value of
 * backslashes against 4 KiB of backslashes took minutes before). */
START_TEST(test_redact_escape_heavy_value_linear)
{
    sbx_redactor *r = sbx_redactor_new();
    char value[34], text[4097];
    char *got;
    memset(value, '\\', 32);
    value[32] = 'X';
    value[33] = '\0';
    memset(text, '\\', 4096);
    text[4096] = '\0';
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)value, 33), SBX_OK);
    got = whole(r, text);
    ck_assert_str_eq(got, text);
    sbx_free(got);
    /* and the value is still found, raw and JSON-escaped */
    memcpy(text, value, 33);
    text[33] = '\0';
    expect_redacted(r, text, "[REDACTED:secret]");
    memset(text, '\\', 64);
    memcpy(text + 64, "X!", 3);
    expect_redacted(r, text, "[REDACTED:secret]!");
    sbx_redactor_free(r);
}
END_TEST

/* Base64 as programs print it: wrapped at any width, with CRLF, or with
 * JSON-escaped line breaks and slashes; percent-encoded. */
START_TEST(test_redact_value_base64_wrapped)
{
    sbx_redactor *r = sbx_redactor_new();
    /* 60 bytes: its base64 is 80 characters, wrapped by `base64` at 76. */
    static const char v[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX";
    static const char b64[] = "MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJDREVGR0hJSktMTU5PUFFSU1RV\nVldY";
    char buf[512];
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)v, strlen(v)), SBX_OK);
    expect_redacted(r, b64, "[REDACTED:secret]");
    snprintf(buf, sizeof buf, "data:\r\n%.40s\r\n%s\r\n", b64, b64 + 40);
    expect_redacted(r, buf, "data:\r\n[REDACTED:secret]\r\n");
    snprintf(buf, sizeof buf, "{\"d\":\"%.30s\\n%.46s\\nVldY\"}", b64, b64 + 30);
    expect_redacted(r, buf, "{\"d\":\"[REDACTED:secret]\"}");
    /* Two line breaks in a row are not a wrap. */
    snprintf(buf, sizeof buf, "%.40s\n\n%s", b64, b64 + 40);
    {
        char *g = whole(r, buf);
        ck_assert_msg(!strstr(g, "[REDACTED"), "%s", g);
        sbx_free(g);
    }
    sbx_redactor_free(r);
}
END_TEST

/* Two secrets overlapping in the text: nothing of either remains. */
START_TEST(test_redact_overlapping_values)
{
    sbx_redactor *r = sbx_redactor_new();
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"AAAABBBBCCCC", 12), SBX_OK);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"CCCCDDDDEEEE", 12), SBX_OK);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"BBBBCCCCDDDDEEEEFF", 18), SBX_OK);
    expect_redacted(r, "x AAAABBBBCCCCDDDDEEEE y", "x [REDACTED:secret] y");
    expect_redacted(r, "x AAAABBBBCCCCDDDDEEEEFF y", "x [REDACTED:secret] y");
    expect_redacted(r, "x AAAABBBBCCCC CCCCDDDDEEEE y", "x [REDACTED:secret] [REDACTED:secret] y");
    /* A value that is the scheme word of an Authorization header. */
    expect_redacted(r, "Authorization: AAAABBBBCCCC tok", "Authorization: [REDACTED:authorization]");
    sbx_redactor_free(r);
    /* A value that starts where a longer match with a later start does
     * (the header name before an Authorization value): both go, as one
     * span (libFuzzer found it kept). */
    r = sbx_redactor_new();
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"authoriza", 9), SBX_OK);
    expect_redacted(r, "x authorization: Bearer abcdefgh12345678\n", "x [REDACTED:authorization]\n");
    expect_redacted(r, "x authorization    authorization :v4lue-9x8y\n",
                    "x [REDACTED:secret]tion    [REDACTED:authorization]\n");
    sbx_redactor_free(r);
}
END_TEST

/* Shapes cut by their window go on being redacted to their real end. */
START_TEST(test_redact_past_the_window)
{
    sbx_redactor *r = sbx_redactor_new();
    size_t n = 200000, o = 0;
    char *text = malloc(n + 256), *got;
    uint64_t st = 7;
    ck_assert_ptr_nonnull(text);
    /* A JWT with a 20 KB payload. */
    o += (size_t)sprintf(text + o, "t=eyJhbGciOiJIUzI1NiJ9.eyJ");
    for (int k = 0; k < 20000; k++)
        text[o++] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"[(st = st * 6364136223846793005ULL + 1) >> 58];
    o += (size_t)sprintf(text + o, "ZZTAILJWT.sig end\n");
    /* A PEM body of 100 KB, JSON-escaped. */
    o += (size_t)sprintf(text + o, "{\"k\":\"-----BEGIN RSA PRIVATE KEY-----\\n");
    for (int line = 0; line < 1560; line++) {
        for (int k = 0; k < 64; k++)
            text[o++] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(st = st * 6364136223846793005ULL + 1) >> 58];
        o += (size_t)sprintf(text + o, "\\n");
    }
    o += (size_t)sprintf(text + o, "ZZTAILPEM\\n-----END RSA PRIVATE KEY-----\\n\"}\n");
    /* An Authorization value of 20 KB. */
    o += (size_t)sprintf(text + o, "> Authorization: Bearer ");
    for (int k = 0; k < 20000; k++)
        text[o++] = 'q';
    o += (size_t)sprintf(text + o, "ZZTAILAUTH\r\n> Accept: */*\r\n");
    text[o] = '\0';
    got = whole(r, text);
    ck_assert_msg(!strstr(got, "ZZTAIL"), "leaked: %.200s", strstr(got, "ZZTAIL") ? strstr(got, "ZZTAIL") - 60 : "");
    ck_assert_msg(strstr(got, "t=[REDACTED:jwt] end\n{\"k\":\"[REDACTED:private_key]\\n\"}\n> Authorization: Bearer "
                               "[REDACTED:authorization]\r\n> Accept: */*\r\n"),
                  "%.300s", got);
    for (size_t c = 13; c < 70000; c = c * 315 + 4) { /* 13, 4099: cut inside the windows and past them */
        char *g = chunked(r, text, o, c);
        ck_assert_msg(strcmp(g, got) == 0, "chunk size %zu differs", c);
        free(g);
    }
    sbx_free(got);
    free(text);
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_multiline_value)
{
    sbx_redactor *r = sbx_redactor_new();
    static const char v[] = "first-line-secret\nsecond-line-secret\r\nshort\n";
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)v, strlen(v)), SBX_OK);
    expect_redacted(r, "a second-line-secret b", "a [REDACTED:secret] b");
    expect_redacted(r, "x first-line-secret y", "x [REDACTED:secret] y");
    expect_redacted(r, "short stays", "short stays");
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_value_rules)
{
    sbx_redactor *r = sbx_redactor_new();
    char big[5000];
    memset(big, 'x', sizeof big);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"1234567", 7), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_redactor_last_error(r), "7 bytes"), "%s", sbx_redactor_last_error(r));
    ck_assert_ptr_null(strstr(sbx_redactor_last_error(r), "1234567"));
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)big, sizeof big), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_redactor_add_secret(r, NULL, 9), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_redactor_add_secret(NULL, (const uint8_t *)"12345678", 8), SBX_E_INVALID_ARG);
    ck_assert_str_eq(sbx_redactor_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"12345678", 8), SBX_OK);
    ck_assert_str_eq(sbx_redactor_last_error(r), "");
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"12345678", 8), SBX_OK); /* twice: once */
    setenv("SBX_TEST_REDACT_TOKEN", "env-value-0123456789", 1);
    setenv("SBX_TEST_REDACT_SHORT", "abc", 1);
    unsetenv("SBX_TEST_REDACT_UNSET");
    ck_assert_int_eq(sbx_redactor_add_secret_env(r, "SBX_TEST_REDACT_TOKEN"), SBX_OK);
    ck_assert_int_eq(sbx_redactor_add_secret_env(r, "SBX_TEST_REDACT_UNSET"), SBX_E_NOT_FOUND);
    ck_assert_int_eq(sbx_redactor_add_secret_env(r, "SBX_TEST_REDACT_SHORT"), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_redactor_last_error(r), "SBX_TEST_REDACT_SHORT") &&
                      !strstr(sbx_redactor_last_error(r), "abc"),
                  "%s", sbx_redactor_last_error(r));
    expect_redacted(r, "tok env-value-0123456789 and 12345678", "tok [REDACTED:secret] and [REDACTED:secret]");
    ck_assert_int_eq(sbx_redactor_set_shapes(NULL, 1), SBX_E_INVALID_ARG);
    sbx_redactor_free(r);
    sbx_redactor_free(NULL);
}
END_TEST

START_TEST(test_redact_shapes_table)
{
    sbx_redactor *r = sbx_redactor_new();
    for (size_t i = 0; i < SBX__ARRAY_LEN(redact_shape_cases); i++)
        expect_redacted(r, redact_shape_cases[i].text, redact_shape_cases[i].want);
    ck_assert_int_eq(sbx_redactor_set_shapes(r, 0), SBX_OK);
    for (size_t i = 0; i < SBX__ARRAY_LEN(redact_shape_cases); i++)
        expect_redacted(r, redact_shape_cases[i].text, redact_shape_cases[i].text);
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_boundaries_after_escapes)
{
    sbx_redactor *r = sbx_redactor_new();
#define GH "gh" "p_A1b2C3d4A1b2C3d4A1b2C3d4A1b2C3d4E5f6"
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"abcdefghij", 10), SBX_OK);
    /* JSON escapes and percent escapes end a word; so does a redaction. */
    expect_redacted(r, "{\"o\":\"x:\\n" GH "\\tAKIAIOSFODNN7EXAMPLE\"}",
                    "{\"o\":\"x:\\n[REDACTED:github]\\t[REDACTED:aws]\"}");
    expect_redacted(r, "next=%2Fapi%3Ftoken%3D" GH "&", "next=%2Fapi%3Ftoken%3D[REDACTED:github]&");
    expect_redacted(r, "abcdefghij" GH " x", "[REDACTED:secret][REDACTED:github] x");
    /* An escaped backslash before a letter is not an escape of the letter. */
    expect_redacted(r, "a\\\\n" GH, "a\\\\n" GH);
    /* A word going on is still not a token start. */
    expect_redacted(r, "xx" GH, "xx" GH);
#undef GH
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_long_hold_fed_byte_by_byte)
{
    /* A PEM block (64 KiB window) fed one byte at a time: the same output
     * as whole (the held bytes are decided again once they double). */
    sbx_redactor *r = sbx_redactor_new();
    size_t n = 20000;
    char *text = malloc(n + 200), *a, *b;
    size_t o = (size_t)sprintf(text, "x -----BEGIN RSA PRIVATE KEY-----\n");
    while (o < n) {
        memcpy(text + o, "MIIEpAIBAAKCAQEA0123456789abcdef\n", 33);
        o += 33;
    }
    o += (size_t)sprintf(text + o, "-----END RSA PRIVATE KEY-----\nafter\n");
    a = chunked(r, text, o, 1);
    b = chunked(r, text, o, o);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, "x [REDACTED:private_key]\nafter\n");
    free(a);
    free(b);
    free(text);
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_self_overlapping_prefix)
{
    sbx_redactor *r = sbx_redactor_new();
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"aaaaaaab", 8), SBX_OK);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"abababac", 8), SBX_OK);
    /* "aa...ab" arrives as "aaaaaaaa" then "ab": the match starts one byte in. */
    expect_redacted(r, "aaaaaaaaab", "aa[REDACTED:secret]");
    expect_redacted(r, "abababababac!", "abab[REDACTED:secret]!");
    {
        sbx_redact_stream *s = sbx_redact_stream_new(r);
        const char *out;
        size_t n;
        ck_assert_int_eq(t_feed(s, "aaaaaaaa", 8, &out, &n), SBX_OK);
        ck_assert_uint_eq(n, 1); /* only the byte that can no longer start it */
        /* "aaaaaaab" is there, but "ab" at its end could start
         * "abababac", which would widen the redaction: held. */
        ck_assert_int_eq(t_feed(s, "ab", 2, &out, &n), SBX_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_mem_eq(out, "a", 1);
        ck_assert_int_eq(t_feed(s, "!", 1, &out, &n), SBX_OK);
        ck_assert_str_eq(out, "[REDACTED:secret]!");
        ck_assert_int_eq(t_finish(s, &out, &n), SBX_OK);
        ck_assert_uint_eq(n, 0);
        sbx_redact_stream_free(s);
    }
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_holds_back_little)
{
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *s;
    const char *out;
    size_t n;
    char text[4096];
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)), SBX_OK);
    s = sbx_redact_stream_new(r);
    /* Text that starts nothing is passed on at once, whole. */
    memset(text, 'z', sizeof text);
    ck_assert_int_eq(t_feed(s, text, sizeof text, &out, &n), SBX_OK);
    ck_assert_uint_eq(n, sizeof text);
    /* A possible start is held back, and only from there. */
    ck_assert_int_eq(t_feed(s, "log: hunter2-corr", 17, &out, &n), SBX_OK);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(t_feed(s, "ect-horse done!", 15, &out, &n), SBX_OK);
    ck_assert_str_eq(out, "[REDACTED:secret] done!");
    /* At the end, a held prefix that did not become a match is given back. */
    ck_assert_int_eq(t_feed(s, " hunter2-co", 11, &out, &n), SBX_OK);
    ck_assert_int_eq(t_finish(s, &out, &n), SBX_OK);
    ck_assert_str_eq(out, "hunter2-co");
    ck_assert_int_eq(t_feed(s, "x", 1, &out, &n), SBX_E_MISUSE);
    ck_assert_int_eq(t_finish(s, &out, &n), SBX_E_MISUSE);
    ck_assert_int_eq(t_feed(NULL, "x", 1, &out, &n), SBX_E_INVALID_ARG);
    sbx_redact_stream_free(s);
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_counts)
{
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *s;
    const char *out;
    size_t n;
    char *json;
    static const char text[] = SECRET " and " SECRET " and ghp_0123456789abcdefghijABCDEFGHIJ012345 .";
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)), SBX_OK);
    s = sbx_redact_stream_new(r);
    ck_assert_int_eq(t_feed(s, text, strlen(text), &out, &n), SBX_OK);
    ck_assert_int_eq(t_finish(s, &out, &n), SBX_OK);
    ck_assert_uint_eq(sbx_redact_stream_count(s, "secret"), 2);
    ck_assert_uint_eq(sbx_redact_stream_count(s, "github"), 1);
    ck_assert_uint_eq(sbx_redact_stream_count(s, NULL), 3);
    ck_assert_uint_eq(sbx_redact_stream_count(s, "aws"), 0);
    ck_assert_uint_eq(sbx_redact_stream_count(NULL, NULL), 0);
    ck_assert_int_eq(sbx_redact_stream_counts_to_json(s, &json), SBX_OK);
    ck_assert_str_eq(json, "{\"secret\": 2, \"github\": 1}");
    sbx_free(json);
    sbx_redact_stream_free(s);
    sbx_redactor_free(r);
}
END_TEST

START_TEST(test_redact_stream_keeps_its_rules)
{
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *old = sbx_redact_stream_new(r), *cur;
    const char *out;
    size_t n;
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)), SBX_OK);
    cur = sbx_redact_stream_new(r);
    sbx_redactor_free(r); /* streams outlive it */
    ck_assert_int_eq(t_feed(old, SECRET, strlen(SECRET), &out, &n), SBX_OK);
    ck_assert_int_eq(t_finish(old, &out, &n), SBX_OK);
    ck_assert_int_eq(t_feed(cur, SECRET "!", strlen(SECRET) + 1, &out, &n), SBX_OK);
    ck_assert_str_eq(out, "[REDACTED:secret]!");
    ck_assert_int_eq(t_finish(cur, &out, &n), SBX_OK);
    ck_assert_uint_eq(sbx_redact_stream_count(old, NULL), 0);
    sbx_redact_stream_free(old);
    sbx_redact_stream_free(cur);
}
END_TEST

/* Runs of one byte (separator lines) are passed over where no candidate can
 * start: what can start in one still does, at every chunking. */
START_TEST(test_redact_runs_of_one_byte)
{
    static const char body[] = "MIIEowIBAAKCAQEAzQ8kA1b2c3d4e5f6g7h8i9j0kLmNoPqRsTuVwXyZ\n";
    sbx_redactor *r = sbx_redactor_new();
    char text[512], want[512];
    /* A BEGIN line after a longer run of dashes: the key starts at the
     * last five (six dashes, a separator glued to it, or a short run). */
    for (int extra = 0; extra <= 40; extra += (extra < 3 ? 1 : 37)) {
        snprintf(text, sizeof text, "x %.*s-----BEGIN RSA PRIVATE KEY-----\n%s-----END RSA PRIVATE KEY-----\ny", extra,
                 "----------------------------------------", body);
        snprintf(want, sizeof want, "x %.*s[REDACTED:private_key]\ny", extra, "----------------------------------------");
        expect_redacted(r, text, want);
    }
    expect_redacted(r, "----BEGIN RSA PRIVATE KEY-----\n", "----BEGIN RSA PRIVATE KEY-----\n");
    expect_redacted(r, "-------------------------------------------------------------\n",
                    "-------------------------------------------------------------\n");
    /* A value that starts with a run: found after a longer run too, and
     * escaped after its raw dashes. */
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"--tok-4f9a1c2e", 14), SBX_OK);
    expect_redacted(r, "a ------tok-4f9a1c2e b", "a ----[REDACTED:secret] b");
    expect_redacted(r, "a -%2Dtok-4f9a1c2e b", "a [REDACTED:secret] b");
    expect_redacted(r, "a ---%2Dtok-4f9a1c2e b", "a --[REDACTED:secret] b");
    expect_redacted(r, "a --------------- b", "a --------------- b");
    /* ... and where its text has fewer raw dashes than it (one escaped),
     * inside a longer run (alone: no other rule starts with two dashes) */
    {
        sbx_redactor *r2 = sbx_redactor_new();
        ck_assert_int_eq(sbx_redactor_add_secret(r2, (const uint8_t *)"----tok-77b1e0d3", 16), SBX_OK);
        expect_redacted(r2, "a ------%2Dtok-77b1e0d3 b", "a ---[REDACTED:secret] b");
        sbx_redactor_free(r2);
    }
    /* An all-dash value turns the skipping off for dashes. */
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"----------", 10), SBX_OK);
    expect_redacted(r, "a ------------ b", "a [REDACTED:secret] b");
    sbx_redactor_free(r);
}
END_TEST

/* ---- the prefilter: the same output with it and without ---- */

/* The generated texts' random numbers (a 64-bit LCG). */
static uint64_t rng;
static uint32_t next_rand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33);
}

static size_t pf_put(char *buf, size_t o, const char *s, size_t n)
{
    memcpy(buf + o, s, n);
    return o + n;
}

/* v as some encoder would write it: raw, percent-encoded (any hex case,
 * '+' for a space) in whole or part, JSON-escaped (short escapes, \u00XX in
 * any case), or base64 at an alignment, wrapped by line breaks of any form;
 * or a near miss (cut short, one byte changed). */
static size_t pf_encode(char *buf, size_t o, const char *v, size_t n)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char *const breaks[] = {"\n", "\r\n", "\\n", "\\r\\n"};
    uint32_t mode = next_rand() % 7, dense = 1 + next_rand() % 3;
    char hex[] = "0123456789ABCDEF";
    if (next_rand() % 2)
        memcpy(hex, "0123456789abcdef", 16);
    switch (mode) {
    case 0:
        return pf_put(buf, o, v, n);
    case 1: /* percent */
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)v[k];
            if (c == ' ' && next_rand() % 2)
                buf[o++] = '+';
            else if (next_rand() % dense == 0 || c == '%' || c == '+') {
                buf[o++] = '%';
                buf[o++] = hex[c >> 4];
                buf[o++] = hex[c & 15];
            } else
                buf[o++] = (char)c;
        }
        return o;
    case 2: /* JSON */
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)v[k];
            const char *sh = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '/' && next_rand() % 2 ? "\\/" : NULL;
            if (sh)
                o = pf_put(buf, o, sh, strlen(sh));
            else if (c < 0x80 && (c < 0x20 || next_rand() % (dense + 1) == 0))
                o += (size_t)sprintf(buf + o, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            else
                buf[o++] = (char)c;
        }
        return o;
    case 3: { /* base64 after 0, 1 or 2 other bytes, wrapped */
        unsigned char in[160];
        size_t m = 0, col = 0, width = 4 + next_rand() % 40;
        const char *br = breaks[next_rand() % 4];
        for (uint32_t k = next_rand() % 3; k > 0; k--)
            in[m++] = (unsigned char)next_rand();
        memcpy(in + m, v, n);
        m += n;
        in[m++] = (unsigned char)next_rand();
        for (size_t k = 0; k + 3 <= m; k += 3) {
            uint32_t w = (uint32_t)in[k] << 16 | (uint32_t)in[k + 1] << 8 | in[k + 2];
            for (int q = 3; q >= 0; q--) {
                buf[o++] = b64[(w >> (6 * q)) & 63];
                if (++col == width && next_rand() % 2) {
                    o = pf_put(buf, o, br, strlen(br));
                    col = 0;
                }
            }
        }
        return o;
    }
    case 4: /* cut short */
        return pf_put(buf, o, v, n - 1 - next_rand() % 3);
    case 5: { /* a hex dump: contiguous or spaced, wrapped between bytes
               * (od's "\n " before a byte; a break instead of the space) */
        bool spaced = next_rand() % 2;
        const char *br = breaks[next_rand() % 4];
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)v[k];
            if (k && next_rand() % 5 == 0) {
                o = pf_put(buf, o, br, strlen(br));
                if (spaced && next_rand() % 2)
                    buf[o++] = ' ';
            } else if (k && spaced)
                buf[o++] = ' ';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
        return o;
    }
    default: /* one byte changed */
        o = pf_put(buf, o, v, n);
        buf[o - 1 - next_rand() % n] ^= 0x01;
        return o;
    }
}

static size_t pf_text(char *buf, size_t cap, const char *const *vals, size_t nvals)
{
    static const char *const filler[] = {
        "build ", "src/index.ts:12:4 ", "3f2a9c1e7b4d5a6f8e9d0c1b2a3f4e5d6c7b8a90 ", "\n", "  ", "--------", "\"\": ",
        "%20", "\\\\", "\\u00", "+++ b/x ", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac ", "\xff\xfe\x80", "sha512-Zm9vYmFy== ",
        "ghp_short ", "sk-ant- ", "AKIA ", "eyJhbGc.eyJ ", "://x@ ", "authorization ", "-----BEGIN PUBLIC KEY-----\n",
        "xoxb-1 ", "npm_ ", "AIza ",
        /* a JWT whose segments are as short as they may be (its quick
         * reject needs fewer bytes than the others that start at byte 3) */
        "eyJ" "hbGciOiJ" "." "eyJ" "zdWIiOiJ" "." "c2lnbmF0 "};
    size_t o = 0;
    while (o + 2048 < cap) {
        uint32_t k = next_rand() % 10;
        if (k < 5) {
            const char *w = filler[next_rand() % SBX__ARRAY_LEN(filler)];
            o = pf_put(buf, o, w, strlen(w));
        } else if (k < 8) {
            const char *v = vals[next_rand() % nvals];
            o = pf_encode(buf, o, v, strlen(v));
        } else {
            const char *w = redact_shape_cases[next_rand() % SBX__ARRAY_LEN(redact_shape_cases)].text;
            size_t n = strlen(w);
            if (next_rand() % 3 == 0 && n > 4) /* a token cut short */
                n -= 1 + next_rand() % 4;
            o = pf_put(buf, o, w, n);
        }
        if (next_rand() % 4 == 0)
            buf[o++] = next_rand() % 2 ? ' ' : '\n';
    }
    return o;
}

/* Values that start with an escape byte, a space, a line break, UTF-8... */
static const char *const pf_vals[] = {
    "s3cr3t-v4lue-0001", " leading-space-val", "%percent-first-1", "\\backslash-first", "/slash-first-val",
    "\"quote-first-val", "\xc3\xa9t\xc3\xa9-secret-v4l", "line one!!\nline two!!", "aaaaaaaaab", "pass word 99!",
    "+plus-first-value", "\nnewline-first-val", "ab%2Fcd-literal-pct", "ZZZZZZZZZZZZZZZZ", "Zm9vYmFyYmF6cXV4",
    "<html-safe-escaped", "\tTAB-first-value"};

/* A redactor built under prefilter mode pf. */
static sbx_redactor *pf_redactor(int pf, bool shapes, const char *const *vals, size_t nvals)
{
    sbx_redactor *r;
    atomic_store(&sbx__prefilter, pf);
    r = sbx_redactor_new();
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(sbx_redactor_set_shapes(r, shapes), SBX_OK);
    for (size_t i = 0; i < nvals; i++)
        ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)vals[i], strlen(vals[i])), SBX_OK);
    (void)sbx__redact_prefilter(r); /* the rules are built at first use: now, under pf */
    atomic_store(&sbx__prefilter, SBX__PF_AUTO);
    return r;
}

/* Text redacted by a redactor behind prefilter pf (the three-byte one or
 * the AVX2 one) and by one with the pair filter alone: the same output at
 * a few chunkings. */
static void pf_compare_with(int pf, bool supported, bool shapes, const char *const *vals, size_t nvals, const char *text,
                            size_t len)
{
    sbx_redactor *none = pf_redactor(SBX__PF_NONE, shapes, vals, nvals), *r = pf_redactor(pf, shapes, vals, nvals);
    ck_assert_int_eq(sbx__redact_prefilter(none), SBX__PF_NONE);
    ck_assert_int_eq(sbx__redact_prefilter(r), supported ? pf : SBX__PF_NONE);
    /* Both run the scalar scan here, or valgrind runs them (its leak and
     * memory checks need less text; the other runs compare it all): a
     * smaller check. */
    if ((!supported || getenv("SBX_TEST_UNDER_VALGRIND")) && len > 16384)
        len = 16384;
    for (size_t chunk = len; chunk >= 100; chunk = chunk / 7) {
        char *with = chunked(r, text, len, chunk), *without = chunked(none, text, len, chunk);
        size_t n = 0;
        while (with[n] && with[n] == without[n])
            n++;
        ck_assert_msg(with[n] == without[n], "prefilter %d, chunks of %zu: differ at output byte %zu: \"%.40s\" vs \"%.40s\"",
                      pf, chunk, n, with + (n > 20 ? n - 20 : 0), without + (n > 20 ? n - 20 : 0));
        ck_assert_ptr_nonnull(strstr(with, "[REDACTED:secret]"));
        free(with);
        free(without);
    }
    sbx_redactor_free(r);
    sbx_redactor_free(none);
}

static void pf_compare(bool shapes, const char *const *vals, size_t nvals, const char *text, size_t len)
{
    pf_compare_with(SBX__PF_TRI, sbx__tri_supported(), shapes, vals, nvals, text, len);
    pf_compare_with(SBX__PF_AVX2, sbx__tri_avx2_supported(), shapes, vals, nvals, text, len);
}

/* Where the CPU runs the three-byte prefilter, a stream with it and one
 * without give the same bytes, whatever the values start with and however
 * they are encoded (elsewhere both run the scalar scan). All the values
 * and the shapes at once: they share the buckets. */
START_TEST(test_redact_prefilter_agrees)
{
    static char text[1 << 18];
    size_t len;
    rng = 7 + (uint64_t)_i;
    len = pf_text(text, sizeof text, pf_vals, SBX__ARRAY_LEN(pf_vals));
    pf_compare(true, pf_vals, SBX__ARRAY_LEN(pf_vals), text, len);
}
END_TEST

/* One value alone, no shapes: each of its few alternatives has a bucket of
 * its own, so the filter is as narrow as they are, and one that missed an
 * encoding would show. */
START_TEST(test_redact_prefilter_one_value)
{
    static char text[1 << 16];
    rng = 99;
    for (size_t i = 0; i < SBX__ARRAY_LEN(pf_vals); i++) {
        size_t len = pf_text(text, sizeof text, pf_vals + i, 1);
        pf_compare(false, pf_vals + i, 1, text, len);
    }
}
END_TEST
/* Every alignment, or under valgrind (whose leak and memory checks need
 * fewer; the other runs take them all) every seventh. */
static size_t pad_step(void)
{
    return getenv("SBX_TEST_UNDER_VALGRIND") ? 7 : 1;
}

/* In text: pad bytes of words ending in a space (so that a shape starts a
 * word), w, a space and tail bytes of words. Its length. */
static size_t pf_place(char *text, size_t pad, const char *w, size_t n, size_t tail)
{
    size_t len = 0;
    for (size_t k = 0; k < pad; k++)
        text[len++] = k + 1 == pad || k % 8 == 7 ? ' ' : "logline"[k % 7];
    memcpy(text + len, w, n);
    len += n;
    text[len++] = ' ';
    for (size_t k = 0; k < tail; k++)
        text[len++] = k % 5 == 4 ? ' ' : 'z';
    text[len] = '\0';
    return len;
}

/* text through r and through none (the pair filter alone): the same
 * output, with a value redacted in it (where names the case). The
 * output, for more checks (the caller frees it). */
static char *pf_same_redacted(const sbx_redactor *r, const sbx_redactor *none, const char *text, size_t len,
                              const char *where)
{
    char *with = chunked(r, text, len, len), *without = chunked(none, text, len, len);
    ck_assert_msg(strcmp(with, without) == 0, "prefilter %d, %s: \"%s\" vs \"%s\"", sbx__redact_prefilter(r), where,
                  with, without);
    ck_assert_msg(strstr(with, "[REDACTED:secret]"), "prefilter %d, %s: nothing redacted: \"%s\"",
                  sbx__redact_prefilter(r), where, with);
    free(without);
    return with;
}

/* Free the redactors r[0..nr) and none. */
static void pf_free(sbx_redactor **r, size_t nr, sbx_redactor *none)
{
    for (size_t f = 0; f < nr; f++)
        sbx_redactor_free(r[f]);
    sbx_redactor_free(none);
}

/* piece after each number of pad bytes (pf_place), through each of r[0..nr)
 * and none: pf_same_redacted's checks (label names the case). */
static void pf_every_pad(sbx_redactor *const *r, size_t nr, const sbx_redactor *none, const char *piece, size_t n,
                         const char *label)
{
    char text[512], where[96];
    for (size_t pad = 0; pad < 72; pad += pad_step()) {
        size_t len = pf_place(text, pad, piece, n, 100);
        snprintf(where, sizeof where, "%s, pad %zu", label, pad);
        for (size_t f = 0; f < nr; f++)
            free(pf_same_redacted(r[f], none, text, len, where));
    }
}

/* A value with a line break, an escape or a colour code at each of its
 * first characters, at each alignment to the prefilters' 64-byte blocks
 * (the AVX2 one samples four bytes at every fourth position and looks up
 * to six bytes back from an escape or a wrapped line): the same output as
 * the pair filter alone, and the value redacted. */
START_TEST(test_redact_prefilter_alignments)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char *const breaks[] = {"\n", "\r\n", "\\n", "\\r\\n"};
    const char *vals[] = {"Kx9mQ2vLp8RtW4zN"}, *in = "Kx9mQ2vLp8RtW4zN!?"; /* 18 bytes: 24 characters */
    char form[64], piece[96], where[64];
    size_t flen = 0;
    sbx_redactor *none = pf_redactor(SBX__PF_NONE, false, vals, 1),
                 *r[] = {pf_redactor(SBX__PF_TRI, false, vals, 1), pf_redactor(SBX__PF_AVX2, false, vals, 1)};
    for (size_t k = 0; k < 18; k += 3) {
        uint32_t w = (uint32_t)(unsigned char)in[k] << 16 | (uint32_t)(unsigned char)in[k + 1] << 8 |
                     (unsigned char)in[k + 2];
        for (int q = 3; q >= 0; q--)
            form[flen++] = b64[(w >> (6 * q)) & 63];
    }
    for (int kind = 0; kind < 15; kind++)
        for (size_t at = 0; at < 9; at++) {
            size_t n = 0;
            if (kind < 4) { /* the base64 form, broken after at + 1 characters */
                n = (size_t)sprintf(piece, "%.*s%s%.*s", (int)(at + 1), form, breaks[kind], (int)(flen - at - 1),
                                    form + at + 1);
            } else if (kind >= 7 && kind <= 9) {
                /* hex, contiguous (7) or spaced (8, 9), broken after at + 1
                 * characters; 9: the break takes the place of a space */
                char hx[64];
                size_t hn = 0, cut = at + 1;
                for (size_t k = 0; k < 16; k++)
                    hn += (size_t)sprintf(hx + hn, kind == 7 || !k ? "%02x" : " %02x", (unsigned char)vals[0][k]);
                if (kind == 9)
                    while (hx[cut] != ' ')
                        cut++;
                n = (size_t)sprintf(piece, "%.*s%s%s", (int)cut, hx, breaks[at % 4], hx + cut + (kind == 9));
            } else {
                const char *v = vals[0];
                n = (size_t)sprintf(piece, "%.*s", (int)at, v);
                if (kind == 4)
                    n += (size_t)sprintf(piece + n, "%%%02X", (unsigned char)v[at]);
                else if (kind == 5)
                    n += (size_t)sprintf(piece + n, "\\u%04x", (unsigned char)v[at]);
                else if (kind == 14) /* JSON inside a JSON string */
                    n += (size_t)sprintf(piece + n, "\\\\u%04x", (unsigned char)v[at]);
                else /* a colour code, raw or written out, before it */
                    n += (size_t)sprintf(piece + n, "%s%c",
                                         !at ? ""
                                         : kind == 6 ? "\x1b[31m"
                                         : kind == 10 ? "\\x1b[31m"
                                         : kind == 11 ? "\\u001b[1m"
                                         : kind == 12 ? "\\033[0m"
                                                      : "\\e[32m",
                                         v[at]);
                n += (size_t)sprintf(piece + n, "%s", v + at + 1);
            }
            snprintf(where, sizeof where, "form %d at %zu", kind, at);
            pf_every_pad(r, SBX__ARRAY_LEN(r), none, piece, n, where);
        }
    pf_free(r, SBX__ARRAY_LEN(r), none);
}
END_TEST

/* A value with a quote at each of its first characters, in each of the
 * shell's forms of that quote ('"'"' and '\'' inside '...', \', \047, \47
 * and \x27 inside $'...'), at each alignment: the same output as the pair
 * filter alone, and the value redacted. */
START_TEST(test_redact_prefilter_shell_quotes)
{
    static const char *const forms[] = {"'\"'\"'", "'\\''", "\\'", "\\047", "\\47", "\\x27"};
    char val[32], piece[96];
    for (size_t at = 1; at < 8; at++) {
        const char *vals[] = {val};
        sbx_redactor *none, *r[2];
        snprintf(val, sizeof val, "Kx9mQyvLp8RtWkzN"); /* no octal digit after \47 */
        val[at] = '\'';
        none = pf_redactor(SBX__PF_NONE, false, vals, 1);
        r[0] = pf_redactor(SBX__PF_TRI, false, vals, 1);
        r[1] = pf_redactor(SBX__PF_AVX2, false, vals, 1);
        for (size_t f = 0; f < SBX__ARRAY_LEN(forms); f++) {
            size_t n = (size_t)sprintf(piece, "%.*s%s%s", (int)at, val, forms[f], val + at + 1);
            char where[64];
            snprintf(where, sizeof where, "quote at %zu, form %zu", at, f);
            pf_every_pad(r, SBX__ARRAY_LEN(r), none, piece, n, where);
        }
        pf_free(r, SBX__ARRAY_LEN(r), none);
    }
}
END_TEST

/* Values with a byte of 128 or more (UTF-8) as their first, second or
 * third byte, at each alignment to the prefilters' blocks, among words
 * that hold such bytes too: the three-byte filter looks those bytes up
 * apart from the ASCII ones (hi0v at the first position, a zeroing lookup
 * at the others). The same output as the pair filter alone, each value
 * redacted. */
START_TEST(test_redact_prefilter_high_bytes)
{
    const char *vals[] = {"\xc3\xa9t\xc3\xa9-secret-v4lue", "k\xc3\xb8ln-secret-v4lue", "ab\xe2\x82\xac-secret-v4lue"};
    char piece[128], text[512];
    sbx_redactor *none = pf_redactor(SBX__PF_NONE, false, vals, SBX__ARRAY_LEN(vals)),
                 *r[] = {pf_redactor(SBX__PF_TRI, false, vals, SBX__ARRAY_LEN(vals)),
                         pf_redactor(SBX__PF_AVX2, false, vals, SBX__ARRAY_LEN(vals))};
    ck_assert_int_eq(sbx__redact_prefilter(r[0]), sbx__tri_supported() ? SBX__PF_TRI : SBX__PF_NONE);
    ck_assert_int_eq(sbx__redact_prefilter(r[1]), sbx__tri_avx2_supported() ? SBX__PF_AVX2 : SBX__PF_NONE);
    for (size_t v = 0; v < SBX__ARRAY_LEN(vals); v++) {
        /* UTF-8 words around it: high bytes at every position near it */
        size_t n = (size_t)snprintf(piece, sizeof piece, "\xc3\xa9\xc3\xa9 %s \xe2\x82\xac\xc3\xb8", vals[v]);
        for (size_t pad = 0; pad < 72; pad += pad_step()) {
            size_t len = pf_place(text, pad, piece, n, 80);
            char where[64];
            snprintf(where, sizeof where, "value %zu at %zu", v, pad);
            for (size_t f = 0; f < SBX__ARRAY_LEN(r); f++) {
                char *with = pf_same_redacted(r[f], none, text, len, where);
                ck_assert_msg(!strstr(with, "-secret-v4lue"), "%s: value left: \"%s\"", where, with);
                free(with);
            }
        }
    }
    pf_free(r, SBX__ARRAY_LEN(r), none);
}
END_TEST

/* Every shape case (tokens at their shortest, near misses, prose) at each
 * alignment to the prefilters' blocks, followed by a space or the end:
 * the same output behind each prefilter as with the pair filter alone (the
 * AVX2 one rejects a trigger's near misses inside its block by the bytes
 * its bucket needs). */
START_TEST(test_redact_prefilter_shape_alignments)
{
    static const int pfs[] = {SBX__PF_TRI, SBX__PF_AVX2};
    sbx_redactor *none = pf_redactor(SBX__PF_NONE, true, NULL, 0);
    char text[1024];
    for (size_t f = 0; f < SBX__ARRAY_LEN(pfs); f++) {
        sbx_redactor *r = pf_redactor(pfs[f], true, NULL, 0);
        for (size_t i = 0; i < SBX__ARRAY_LEN(redact_shape_cases); i++) {
            const char *w = redact_shape_cases[i].text;
            size_t n = strlen(w);
            if (n > 600)
                continue;
            for (size_t pad = 0; pad < 64; pad += pad_step()) {
                size_t len = pf_place(text, pad, w, n, 80);
                for (size_t cut = 0; cut < 2; cut++) {
                    /* with bytes after it, and ending the text */
                    size_t m = cut ? pad + n : len;
                    char *with = chunked(r, text, m, m), *without = chunked(none, text, m, m);
                    ck_assert_msg(strcmp(with, without) == 0, "prefilter %d, case %zu at %zu: \"%s\" vs \"%s\"", pfs[f], i,
                                  pad, with, without);
                    free(with);
                    free(without);
                }
            }
        }
        sbx_redactor_free(r);
    }
    sbx_redactor_free(none);
}
END_TEST

/* ---- the property: any chunking gives the same output and leaks nothing ---- */

static const char *const values[] = {"s3cr3t-v4lue-0001", "another/secret:value", "aaaaaaaaab", "pass word 99!"};

/* Text: words, paths, hashes, and now and then a secret in some form or a
 * shape from the table. */
static size_t generate(char *buf, size_t cap)
{
    static const char *const words[] = {"build", "ok", "src/index.ts", "2f1c0e", " ", "\n", "--flag", "aaaa",
                                        "sk-", "ghp_", "://", "Authorization: ", "eyJ", "%2F", "\\\"", "------",
                                        "-----BEGIN "};
    size_t o = 0;
    while (o + 300 < cap) {
        uint32_t k = next_rand() % 20;
        const char *w;
        if (k < 14)
            w = words[next_rand() % SBX__ARRAY_LEN(words)];
        else if (k < 17)
            w = values[next_rand() % SBX__ARRAY_LEN(values)];
        else
            w = redact_shape_cases[next_rand() % SBX__ARRAY_LEN(redact_shape_cases)].text;
        size_t n = strlen(w);
        if (o + n + 1 >= cap)
            break;
        memcpy(buf + o, w, n);
        o += n;
        buf[o++] = next_rand() % 3 ? ' ' : '\n';
    }
    buf[o] = '\0';
    return o;
}

/* A shape's quick reject (need_from, need_n, need: the scan skips the call
 * when a byte there is out of the class) must agree with its matcher: for
 * generated text after each trigger, near misses and real tokens alike,
 * whenever a byte in the range that is there fails the class, match() says
 * NO, with more bytes to come or not. (Tokens at their minimum length are
 * in the shapes table.) */
START_TEST(test_redact_quick_reject_agrees)
{
    /* bytes in every class, and bytes in none (a quick reject's misses) */
    static const char pool[] = "abcXYZ0123456789_-.:/ !\"@+=~";
    static const int prevs[] = {-1, ' ', '"', '\n'};
    char buf[512];
    size_t checked = 0, rejected = 0;
    rng = 42;
    for (size_t i = 0; i < sbx__nshapes; i++) {
        const sbx__shape *sh = &sbx__shapes[i];
        size_t tlen = strlen(sh->trigger);
        ck_assert_uint_eq(sh->tlen, tlen); /* the table's lengths, as the matchers read them */
        if (!sh->need_n)
            continue;
        char cls[128];
        size_t ncls = 0;
        ck_assert_uint_ge(sh->need_from, tlen);
        for (int c = 1; c < 128; c++)
            if (sbx__kclass[c] & sh->need)
                cls[ncls++] = (char)c;
        for (int round = 0; round < 3000; round++) {
            /* mostly the class's bytes, so that the first miss falls anywhere
             * in the range, the end of a real token included */
            size_t len = tlen + next_rand() % (sh->need_n + 24), bad = SIZE_MAX;
            uint32_t odds = 1 + next_rand() % 128;
            memcpy(buf, sh->trigger, tlen);
            for (size_t k = tlen; k < len; k++)
                buf[k] = next_rand() % odds ? cls[next_rand() % ncls] : pool[next_rand() % (sizeof pool - 1)];
            for (size_t k = sh->need_from; k < len && k < (size_t)sh->need_from + sh->need_n; k++)
                if (!((unsigned char)buf[k] < 128 && (sbx__kclass[(unsigned char)buf[k]] & sh->need))) {
                    bad = k;
                    break;
                }
            for (size_t m = 0; m < 2; m++) {
                size_t a = 0, b = 0;
                enum sbx__shape_result res =
                    sbx__shape_match(sh, buf, len < sh->window ? len : sh->window, prevs[next_rand() % 4], m == 1, &a,
                                     &b);
                checked++;
                if (bad != SIZE_MAX) {
                    rejected++;
                    ck_assert_msg(res == SBX__SHAPE_NO, "%s: \"%.*s\" (byte %zu out of class) gave %d, not NO",
                                  sh->trigger, (int)len, buf, bad, (int)res);
                }
            }
        }
    }
    ck_assert_uint_gt(rejected, checked / 8); /* both sides were exercised */
    ck_assert_uint_lt(rejected, checked);
}
END_TEST

START_TEST(test_redact_any_chunking_same_output)
{
    sbx_redactor *r = sbx_redactor_new();
    static char text[20000];
    size_t len;
    char *ref;
    rng = 42 + (uint64_t)_i;
    for (size_t i = 0; i < SBX__ARRAY_LEN(values); i++)
        ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)values[i], strlen(values[i])), SBX_OK);
    len = generate(text, sizeof text);
    ref = chunked(r, text, len, len);
    /* Zero leaks: no registered value survives. */
    for (size_t i = 0; i < SBX__ARRAY_LEN(values); i++) {
        ck_assert_msg(strstr(ref, values[i]) == NULL, "value %zu leaked", i);
    }
    for (size_t c = 1; c <= 64; c++) {
        char *got = chunked(r, text, len, c);
        ck_assert_msg(strcmp(got, ref) == 0, "chunk size %zu differs", c);
        free(got);
    }
    for (size_t c = 997; c < len; c *= 3) {
        char *got = chunked(r, text, len, c);
        ck_assert_msg(strcmp(got, ref) == 0, "chunk size %zu differs", c);
        free(got);
    }
    free(ref);
    sbx_redactor_free(r);
}
END_TEST

/* ---- the corpus: tests/unit/redact_corpus.jsonl ---- */

/* One case: {"name", "input", "secrets"?, "shapes"?, "expect"?, "absent"?,
 * "present"?}. Checked whole and at several chunk sizes; the reason for a
 * failure goes to why. */
static bool corpus_case(json_t *c, char *why, size_t cap)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    json_t *in = json_object_get(c, "input"), *secrets = json_object_get(c, "secrets");
    json_t *shapes = json_object_get(c, "shapes"), *expect = json_object_get(c, "expect");
    json_t *absent = json_object_get(c, "absent"), *present = json_object_get(c, "present"), *v;
    sbx_redactor *r = sbx_redactor_new();
    const char *text = json_string_value(in);
    size_t len = json_string_length(in), i;
    char *ref = NULL;
    bool ok = false;

    ck_assert_ptr_nonnull(r);
    if (!name || !text) {
        snprintf(why, cap, "a case without a name or an input");
        goto out;
    }
    json_array_foreach(secrets, i, v) {
        if (sbx_redactor_add_secret(r, (const uint8_t *)json_string_value(v), json_string_length(v)) != SBX_OK) {
            snprintf(why, cap, "%s: secret %zu refused: %s", name, i, sbx_redactor_last_error(r));
            goto out;
        }
    }
    if (json_is_false(shapes))
        ck_assert_int_eq(sbx_redactor_set_shapes(r, 0), SBX_OK);
    ref = chunked(r, text, len, len ? len : 1);
    if (json_is_string(expect) && strcmp(ref, json_string_value(expect)) != 0) {
        snprintf(why, cap, "%s: expected\n  %.400s\ngot\n  %.400s", name, json_string_value(expect), ref);
        goto out;
    }
    json_array_foreach(absent, i, v) {
        if (strstr(ref, json_string_value(v))) {
            snprintf(why, cap, "%s: leaks \"%.80s\" in\n  %.400s", name, json_string_value(v), ref);
            goto out;
        }
    }
    json_array_foreach(present, i, v) {
        if (!strstr(ref, json_string_value(v))) {
            snprintf(why, cap, "%s: lost \"%.80s\" in\n  %.400s", name, json_string_value(v), ref);
            goto out;
        }
    }
    /* The same output behind every prefilter this CPU has (and the pair
     * filter alone), whole: the corpus holds every encoding and context
     * in the text around it, which the filters must all let through.
     * Not under valgrind (the other runs compare; its leak and memory
     * checks gain nothing from three more rule sets a case). */
    for (size_t f = 0; f < 3 && !getenv("SBX_TEST_UNDER_VALGRIND"); f++) {
        static const int pfs[] = {SBX__PF_NONE, SBX__PF_TRI, SBX__PF_AVX2};
        sbx_redactor *pr;
        char *got;
        bool same;
        atomic_store(&sbx__prefilter, pfs[f]);
        pr = sbx_redactor_new();
        ck_assert_ptr_nonnull(pr);
        json_array_foreach(secrets, i, v)
            ck_assert_int_eq(sbx_redactor_add_secret(pr, (const uint8_t *)json_string_value(v), json_string_length(v)),
                             SBX_OK);
        if (json_is_false(shapes))
            ck_assert_int_eq(sbx_redactor_set_shapes(pr, 0), SBX_OK);
        (void)sbx__redact_prefilter(pr); /* the rules are built at first use: now, under pfs[f] */
        atomic_store(&sbx__prefilter, SBX__PF_AUTO);
        got = chunked(pr, text, len, len ? len : 1);
        same = strcmp(got, ref) == 0;
        free(got);
        sbx_redactor_free(pr);
        if (!same) {
            snprintf(why, cap, "%s: prefilter %d gives another output", name, pfs[f]);
            goto out;
        }
    }
    /* Every small chunking for small inputs; for the large ones (64 KiB
     * PEM blocks...), chunkings from 64 bytes up: one byte at a time is
     * covered by the property test and costs minutes under ASan at -O0. */
    for (size_t k = len > 4096 ? 64 : 1; k < len; k = k < 4 ? k + 1 : k * 5) {
        char *got = chunked(r, text, len, k);
        bool same = strcmp(got, ref) == 0;
        free(got);
        if (!same) {
            snprintf(why, cap, "%s: chunks of %zu bytes give another output", name, k);
            goto out;
        }
    }
    ok = true;
out:
    free(ref);
    sbx_redactor_free(r);
    return ok;
}

START_TEST(test_redact_corpus)
{
    FILE *f = fopen(SBX_REDACT_CORPUS, "r");
    char line[1 << 20], why[2048];
    int n = 0, failed = 0, lineno = 0;
    ck_assert_msg(f != NULL, "cannot open %s", SBX_REDACT_CORPUS);
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *c;
        lineno++;
        ck_assert_msg(strchr(line, '\n') || feof(f), "line %d is longer than the buffer", lineno);
        c = json_loads(line, 0, &err);
        ck_assert_msg(c != NULL, "line %d: %s", lineno, err.text);
        n++;
        if (!corpus_case(c, why, sizeof why)) {
            fprintf(stderr, "corpus line %d: %s\n", lineno, why);
            failed++;
        }
        json_decref(c);
    }
    fclose(f);
    ck_assert_int_gt(n, 100);
    ck_assert_msg(failed == 0, "%d of %d corpus cases failed (listed on stderr)", failed, n);
}
END_TEST

/* ---- threads, allocation failures ---- */

static void *thread_main(void *arg)
{
    const sbx_redactor *r = arg;
    char *out = whole(r, "token " SECRET " ghp_0123456789abcdefghijABCDEFGHIJ012345");
    bool ok = strcmp(out, "token [REDACTED:secret] [REDACTED:github]") == 0;
    sbx_free(out);
    return ok ? arg : NULL;
}

START_TEST(test_redact_shared_between_threads)
{
    sbx_redactor *r = sbx_redactor_new();
    pthread_t t[4];
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)), SBX_OK);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, r);
    for (int i = 0; i < 4; i++) {
        void *res;
        pthread_join(t[i], &res);
        ck_assert_ptr_eq(res, r);
    }
    sbx_redactor_free(r);
}
END_TEST

/* Values added one by one cost one build of the rules, at first use; a
 * change after that costs one more, and every use sees every value. */
START_TEST(test_redact_values_built_once)
{
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *before;
    unsigned long builds;
    char value[32], *out;
    ck_assert_ptr_nonnull(before = sbx_redact_stream_new(r));
    builds = atomic_load(&sbx__redact_builds);
    for (int i = 0; i < 300; i++) {
        snprintf(value, sizeof value, "v4lue-%04d-xq7Lp2ZrT9", i);
        ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)value, strlen(value)), SBX_OK);
    }
    ck_assert_uint_eq(atomic_load(&sbx__redact_builds), builds);
    out = whole(r, "a v4lue-0000-xq7Lp2ZrT9 b v4lue-0299-xq7Lp2ZrT9 c");
    ck_assert_str_eq(out, "a [REDACTED:secret] b [REDACTED:secret] c");
    sbx_free(out);
    ck_assert_uint_eq(atomic_load(&sbx__redact_builds), builds + 1);
    out = whole(r, "again v4lue-0150-xq7Lp2ZrT9");
    ck_assert_str_eq(out, "again [REDACTED:secret]");
    sbx_free(out);
    ck_assert_uint_eq(atomic_load(&sbx__redact_builds), builds + 1);
    ck_assert_int_eq(sbx_redactor_add_secret(r, (const uint8_t *)"one-more-s3cr3t-val", 19), SBX_OK);
    ck_assert_int_eq(sbx_redactor_set_shapes(r, 1), SBX_OK); /* no change: no build */
    out = whole(r, "x one-more-s3cr3t-val v4lue-0001-xq7Lp2ZrT9");
    ck_assert_str_eq(out, "x [REDACTED:secret] [REDACTED:secret]");
    sbx_free(out);
    ck_assert_uint_eq(atomic_load(&sbx__redact_builds), builds + 2);
    /* A stream made before the values keeps the rules it was made with. */
    {
        const char *o;
        size_t n;
        char got[64];
        size_t len = 0;
        ck_assert_int_eq(t_feed(before, "v4lue-0000-xq7Lp2ZrT9", 21, &o, &n), SBX_OK);
        memcpy(got, o, n);
        len = n;
        ck_assert_int_eq(t_finish(before, &o, &n), SBX_OK);
        ck_assert_uint_le(len + n, sizeof got);
        memcpy(got + len, o, n);
        len += n;
        ck_assert_uint_eq(len, 21);
        ck_assert_int_eq(memcmp(got, "v4lue-0000-xq7Lp2ZrT9", 21), 0);
    }
    sbx_redact_stream_free(before);
    sbx_redactor_free(r);
}
END_TEST

static sbx_status oom_once(void *ctx)
{
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *s = NULL;
    const char *out;
    size_t n;
    sbx_status st;
    char *json = NULL;
    (void)ctx;
    if (!r)
        return SBX_E_NOMEM;
    st = sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET));
    if (st == SBX_OK && !(s = sbx_redact_stream_new(r)))
        st = SBX_E_NOMEM;
    if (st == SBX_OK)
        st = t_feed(s, "a " SECRET " ghp_0123456789abcdefghijABCDEF",
                                    strlen("a " SECRET " ghp_0123456789abcdefghijABCDEF"), &out, &n);
    if (st == SBX_OK)
        st = t_feed(s, "GHIJ012345 end", strlen("GHIJ012345 end"), &out, &n);
    if (st == SBX_OK)
        st = t_finish(s, &out, &n);
    if (st == SBX_OK)
        st = sbx_redact_stream_counts_to_json(s, &json);
    if (st == SBX_OK && strcmp(json, "{\"secret\": 1, \"github\": 1}") != 0)
        st = SBX_E_INTERNAL;
    sbx_free(json);
    sbx_redact_stream_free(s);
    sbx_redactor_free(r);
    return st;
}

START_TEST(test_redact_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_once, NULL), 5);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *tc = tcase_create("redact");
    tcase_set_timeout(tc, 400); /* each test; ASan at -O0 is slow on the corpus */
    tcase_add_test(tc, test_redact_known_value_forms);
    tcase_add_test(tc, test_redact_values_built_once);
    tcase_add_test(tc, test_redact_multiline_value);
    tcase_add_test(tc, test_redact_value_rules);
    tcase_add_test(tc, test_redact_shapes_table);
    tcase_add_test(tc, test_redact_quick_reject_agrees);
    tcase_add_test(tc, test_redact_runs_of_one_byte);
    tcase_add_loop_test(tc, test_redact_prefilter_agrees, 0, 4);
    tcase_add_test(tc, test_redact_prefilter_one_value);
    tcase_add_test(tc, test_redact_boundaries_after_escapes);
    tcase_add_test(tc, test_redact_long_hold_fed_byte_by_byte);
    tcase_add_test(tc, test_redact_self_overlapping_prefix);
    tcase_add_test(tc, test_redact_value_encodings);
    tcase_add_test(tc, test_redact_value_base64_wrapped);
    tcase_add_test(tc, test_redact_escape_heavy_value_linear);
    tcase_add_test(tc, test_redact_overlapping_values);
    tcase_add_test(tc, test_redact_past_the_window);
    tcase_add_test(tc, test_redact_corpus);
    tcase_add_test(tc, test_redact_holds_back_little);
    tcase_add_test(tc, test_redact_counts);
    tcase_add_test(tc, test_redact_prefilter_alignments);
    tcase_add_test(tc, test_redact_prefilter_shell_quotes);
    tcase_add_test(tc, test_redact_prefilter_shape_alignments);
    tcase_add_test(tc, test_redact_prefilter_high_bytes);
    tcase_add_test(tc, test_redact_stream_keeps_its_rules);
    tcase_add_loop_test(tc, test_redact_any_chunking_same_output, 0, 4);
    tcase_add_test(tc, test_redact_shared_between_threads);
    tcase_add_test(tc, test_redact_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}
