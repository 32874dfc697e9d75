/* SPDX-License-Identifier: MIT */
/* stream: live NDJSON output, UTF-8 at chunk boundaries, large output, several readers. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Seven lines, 300 ms apart: about 2 s in all. */
#define TICKER "for i in 1 2 3 4 5 6 7; do echo tick$i; sleep 0.3; done"

START_TEST(test_sbxd_stream_logs_arrive_live)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid = sbx_detach_sh(d, sid, TICKER);
    struct ndjson *nd = ndjson_request(d, "GET", NULL, "/v1/sandboxes/%s/cmd/%s/logs", sid, cid);
    char all[256] = "";

    ck_assert_int_eq(nd->status, 200);
    ck_assert_str_eq(nd->ctype, "application/x-ndjson");
    ck_assert_int_ge(nd->n, 2);
    for (size_t i = 0; i < nd->n; i++)
        strncat(all, json_string_value(json_object_get(nd->lines[i], "data")), sizeof all - strlen(all) - 1);
    ck_assert_str_eq(all, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\n");
    /* The first line came while the command still ran: well before the
     * stream (which ends with the command) was over. */
    ck_assert_msg(nd->t_end - nd->t[0] >= 1000,
                  "first log line arrived %lld ms before the end of a ~2 s command: not streamed live",
                  (long long)(nd->t_end - nd->t[0]));
    ck_assert_msg(nd->t[nd->n - 1] - nd->t[0] >= 1000, "lines arrived together (%lld ms apart)",
                  (long long)(nd->t[nd->n - 1] - nd->t[0]));
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 0);
    ndjson_free(nd);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_stream_wait_first_line_early)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct ndjson *nd = ndjson_request(d, "POST", jpack("{s:s,s:[s,s],s:b}", "command", "sh", "args", "-c", TICKER,
                                                        "wait", 1),
                                       "/v1/sandboxes/%s/cmd", sid);

    ck_assert_int_eq(nd->status, 200);
    ck_assert_str_eq(nd->ctype, "application/x-ndjson");
    ck_assert_int_eq(nd->n, 2);
    ck_assert(json_is_null(json_object_get(json_object_get(nd->lines[0], "command"), "exitCode")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(nd->lines[1], "command"), "exitCode")), 0);
    /* Line 1 is flushed at start (the SDK reads logs in parallel with it). */
    ck_assert_msg(nd->t[1] - nd->t[0] >= 1000, "line 1 came only %lld ms before line 2 of a ~2 s command",
                  (long long)(nd->t[1] - nd->t[0]));
    ck_assert_msg(nd->t[0] - nd->t_start < nd->t[1] - nd->t_start - 1000, "line 1 was late");
    ndjson_free(nd);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_stream_utf8_split_across_chunks)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    /* The euro sign's three bytes come in two writes 200 ms apart, on stdout
     * and on stderr. */
    struct cmd_result *c = sbx_sh(d, sid, "printf '\\342\\202'; sleep 0.2; printf '\\254\\n'; "
                                          "printf 'x\\360\\237' >&2; sleep 0.2; printf '\\230\\200y\\n' >&2");

    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_str_eq(c->out, "\xe2\x82\xac\n");
    ck_assert_str_eq(c->err, "x\xf0\x9f\x98\x80y\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_stream_invalid_bytes_become_fffd)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    /* A stray byte, an impossible lead byte, an overlong form, a surrogate. */
    c = sbx_sh(d, sid, "printf 'a\\377b\\300c\\340\\200\\200d\\355\\240\\200e\\n'");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_msg(strncmp(c->out, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c", 9) == 0, "got %s", c->out);
    ck_assert_msg(contains(c->out, "d") && contains(c->out, "e\n"), "got %s", c->out);
    ck_assert_msg(!contains(c->out, "\xed\xa0\x80"), "a surrogate passed through");
    cmd_result_free(c);
    /* Output that ends inside a character. */
    c = sbx_sh(d, sid, "printf 'x\\342\\202'");
    ck_assert_str_eq(c->out, "x\xef\xbf\xbd");
    cmd_result_free(c);
    /* Valid multi-byte text is untouched. */
    c = sbx_sh(d, sid, "printf 'gr\\303\\274\\303\\237e \\344\\270\\226\\347\\225\\214\\n'");
    ck_assert_str_eq(c->out, "gr\xc3\xbc\xc3\x9f" "e \xe4\xb8\x96\xe7\x95\x8c\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

#define BIG_LINES 524288 /* "%09d\n" each: 5 MiB */

static void check_big(const char *out, size_t len)
{
    char want[16];
    ck_assert_msg(len == (size_t)BIG_LINES * 10, "got %zu bytes of %d", len, BIG_LINES * 10);
    for (int i = 0; i < BIG_LINES; i++) {
        snprintf(want, sizeof want, "%09d\n", i);
        if (memcmp(out + (size_t)i * 10, want, 10) != 0)
            ck_abort_msg("line %d is wrong: %.10s", i, out + (size_t)i * 10);
    }
}

START_TEST(test_sbxd_stream_large_output_complete)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    const char *py = "import sys\n"
                     "w = sys.stdout.write\n"
                     "for i in range(%d): w('%%09d\\n' %% i)\n";
    char prog[256];
    struct cmd_result *c;

    snprintf(prog, sizeof prog, py, BIG_LINES);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c", prog));
    ck_assert_int_eq(c->exit_code, 0);
    check_big(c->out, c->out_len);
    ck_assert_int_eq(c->err_len, 0);
    cmd_result_free(c);
    /* Followed live rather than replayed: start reading while it writes. */
    cid = sbx_detach(d, sid, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c", prog));
    c = sbx_logs(d, sid, cid);
    check_big(c->out, c->out_len);
    cmd_result_free(c);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

struct reader {
    struct sbxd *d;
    const char *sid, *cid;
    struct cmd_result *res;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    r->res = sbx_logs(r->d, r->sid, r->cid);
    return NULL;
}

START_TEST(test_sbxd_stream_concurrent_readers)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid = sbx_detach_sh(d, sid, TICKER "; echo done >&2");
    struct reader r[3];
    pthread_t t[3];

    for (int i = 0; i < 3; i++) {
        r[i] = (struct reader){d, sid, cid, NULL};
        ck_assert(pthread_create(&t[i], NULL, reader_main, &r[i]) == 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        ck_assert_str_eq(r[i].res->out, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\n");
        ck_assert_str_eq(r[i].res->err, "done\n");
        cmd_result_free(r[i].res);
    }
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_stream_output_limit)
{
    /* Past --max-log-bytes the log is cut on a character boundary and says so. */
    const char *args[] = {"--max-log-bytes", "65536", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c = sbxd_run(d, sid, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c",
                                                 "import sys\nsys.stdout.write('\\u20ac' * 100000)\nprint('END')"));

    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_int_le(c->out_len, 65536);
    ck_assert_int_ge(c->out_len, 65536 - 3 - 8 * 64); /* each stored chunk also costs its bookkeeping */
    ck_assert_int_eq(c->out_len % 3, 0); /* whole euro signs only */
    ck_assert_msg(!contains(c->out, "END"), "output past the limit was kept");
    ck_assert_msg(contains(c->err, "limit"), "no note about the limit on stderr: %s", c->err);
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* Output written a byte at a time: stored without a chunk per byte (the
 * pieces of one stream are merged), and where they cannot be merged (the
 * streams alternate) each piece's bookkeeping counts against the cap, so a
 * slow writer cannot make sbxd hold many times the cap in memory. */
START_TEST(test_sbxd_stream_small_writes_bounded)
{
    const char *args[] = {"--max-log-bytes", "4096", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    c = sbx_sh(d, sid, "for i in $(seq 1000); do printf a; sleep 0.001; done; echo END");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_msg(contains(c->out, "END") && c->out_len == 1004, "one stream byte by byte: %zu bytes kept, %s",
                  c->out_len, c->err);
    ck_assert_msg(!contains(c->err, "limit"), "1004 bytes of one stream reached a 4096-byte cap: %s", c->err);
    cmd_result_free(c);

    c = sbx_sh(d, sid, "for i in $(seq 300); do printf a; printf b >&2; sleep 0.001; done; echo END");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_msg(!contains(c->out, "END") && contains(c->err, "limit"),
                  "600 bytes alternating between the streams were stored whole (%zu + %zu bytes) under a "
                  "4096-byte cap: their pieces' bookkeeping is not counted", c->out_len, c->err_len);
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_stream_escape_heavy_output)
{
    /* Bytes that JSON escapes (control characters: 6 bytes each) make log
     * lines much longer than their data; big chunks of them must still
     * arrive whole, split into several lines if need be. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c = sbxd_run(d, sid, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c",
                                                 "import sys\n"
                                                 "b = bytes(range(1, 32)) + b'\"\\\\'\n"
                                                 "sys.stdout.buffer.write(b * 20000)\n"
                                                 "sys.stdout.flush()\n"));
    size_t unit = 33, n = 20000;

    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_int_eq(c->out_len, unit * n);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < unit; k++) {
            unsigned char want = k < 31 ? (unsigned char)(k + 1) : (k == 31 ? '"' : '\\');
            if ((unsigned char)c->out[i * unit + k] != want)
                ck_abort_msg("byte %zu differs", i * unit + k);
        }
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_stream");
    TCase *tc = sbx_tcase("stream", 120);
    tcase_add_test(tc, test_sbxd_stream_logs_arrive_live);
    tcase_add_test(tc, test_sbxd_stream_wait_first_line_early);
    tcase_add_test(tc, test_sbxd_stream_utf8_split_across_chunks);
    tcase_add_test(tc, test_sbxd_stream_invalid_bytes_become_fffd);
    tcase_add_test(tc, test_sbxd_stream_large_output_complete);
    tcase_add_test(tc, test_sbxd_stream_concurrent_readers);
    tcase_add_test(tc, test_sbxd_stream_escape_heavy_output);
    tcase_add_test(tc, test_sbxd_stream_output_limit);
    tcase_add_test(tc, test_sbxd_stream_small_writes_bounded);
    suite_add_tcase(s, tc);
    return s;
}
