/* SPDX-License-Identifier: MIT */
/* client_command: sbx_command against sbxd — run, output, timeouts, detached, attach, kill. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_it.h"

struct env {
    struct sbxd *d;
    sbx_client *c;
    sbx_sandbox *s;
};

static struct env setup(void)
{
    struct env e;
    e.d = sbxd_start(NULL, NULL);
    e.c = it_client(e.d);
    e.s = it_sandbox(e.c);
    return e;
}

static void teardown(struct env *e)
{
    sbx_sandbox_free(e->s);
    sbx_client_free(e->c);
    sbxd_stop(e->d);
}

/* Everything buffered on one stream, read in small pieces. */
static char *drain(sbx_command *k, int stream, size_t *total)
{
    char buf[7], *all = NULL;
    size_t n = 0, got;
    sbx_status st;
    while ((st = sbx_command_read_output(k, stream, (uint8_t *)buf, sizeof buf, &got)) == SBX_OK) {
        all = realloc(all, n + got + 1);
        memcpy(all + n, buf, got);
        n += got;
    }
    ck_assert_int_eq(st, SBX_E_NOT_FOUND);
    if (!all)
        all = calloc(1, 1);
    all[n] = '\0';
    if (total)
        *total = n;
    return all;
}

START_TEST(test_client_command_run_buffers)
{
    struct env e = setup();
    const char *argv[] = {"sh", "-c", "printf 'out-1\\n'; printf 'err-1\\n' >&2; printf 'out-2'; exit 7"};
    sbx_command *k = sbx_command_new(e.s);
    char *out, *err;
    char buf[8];
    size_t n;

    /* Before it starts. */
    ck_assert_ptr_null(sbx_command_id(k));
    ck_assert_int_eq(sbx_command_exit_code(k), -1);
    ck_assert_int_eq(sbx_command_started_at(k), -1);
    expect_st(sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)buf, sizeof buf, &n), SBX_E_MISUSE,
              sbx_command_last_error, k);
    expect_st(sbx_command_run(k), SBX_E_MISUSE, sbx_command_last_error, k); /* no argv */

    ok_cmd(sbx_command_set_argv(k, 3, argv), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 7);
    ck_assert_ptr_nonnull(sbx_command_id(k));
    ck_assert(sbx_command_started_at(k) > 1700000000000LL);
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDOUT), 11);
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDERR), 6);
    out = drain(k, SBX_STREAM_STDOUT, NULL);
    err = drain(k, SBX_STREAM_STDERR, NULL);
    ck_assert_str_eq(out, "out-1\nout-2");
    ck_assert_str_eq(err, "err-1\n");
    free(out);
    free(err);
    expect_st(sbx_command_read_output(k, 3, (uint8_t *)buf, sizeof buf, &n), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)NULL, 4, &n), SBX_E_INVALID_ARG,
              sbx_command_last_error, k);
    /* Single use. */
    expect_st(sbx_command_run(k), SBX_E_MISUSE, sbx_command_last_error, k);
    expect_st(sbx_command_set_cwd(k, "/tmp"), SBX_E_MISUSE, sbx_command_last_error, k);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_settings)
{
    struct env e = setup();
    sbx_command *k;
    struct it_out o = {0};
    const char *argv[] = {"sh", "-c", "pwd; echo \"$A|$B\"; id -u"};

    ok_s(sbx_sandbox_mkdir(e.s, "work"), e.s);
    k = sbx_command_new(e.s);
    ok_cmd(sbx_command_set_argv(k, 3, argv), k);
    ok_cmd(sbx_command_set_cwd(k, "/vercel/sandbox/work"), k);
    ok_cmd(sbx_command_set_env(k, "A", "alpha"), k);
    ok_cmd(sbx_command_set_env(k, "B", "beta"), k);
    ok_cmd(sbx_command_set_env(k, "B", NULL), k);
    ok_cmd(sbx_command_set_output_cb(k, it_collect, &o), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_msg(strncmp(it_str(&o, 0), "/vercel/sandbox/work\nalpha|\n", 28) == 0, "%s", it_str(&o, 0));
    ck_assert_str_ne(it_str(&o, 0) + 28, "0\n"); /* not root */
    it_out_free(&o);
    sbx_command_free(k);

    /* sudo: root of the sandbox. */
    k = it_sh_cmd(e.s, "id -u", &o);
    ok_cmd(sbx_command_set_sudo(k, 1), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_str_eq(it_str(&o, 0), "0\n");
    it_out_free(&o);
    sbx_command_free(k);

    /* Arguments go verbatim, no shell. */
    {
        const char *av[] = {"printf", "%s|", "a b", "$HOME", "'q'", ""};
        k = sbx_command_new(e.s);
        ok_cmd(sbx_command_set_argv(k, 6, av), k);
        ok_cmd(sbx_command_set_output_cb(k, it_collect, &o), k);
        ok_cmd(sbx_command_run(k), k);
        ck_assert_str_eq(it_str(&o, 0), "a b|$HOME|'q'||");
        it_out_free(&o);
        sbx_command_free(k);
    }

    /* Bad settings. */
    k = sbx_command_new(e.s);
    expect_st(sbx_command_set_argv(k, 0, argv), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    {
        const char *empty[] = {""};
        const char *holes[] = {"sh", NULL};
        expect_st(sbx_command_set_argv(k, 1, empty), SBX_E_INVALID_ARG, sbx_command_last_error, k);
        expect_st(sbx_command_set_argv(k, 2, holes), SBX_E_INVALID_ARG, sbx_command_last_error, k);
        /* The protocol is JSON: text that is not UTF-8 is refused by name,
         * not reported later as something else. */
        const char *latin1[] = {"printf", "caf\xe9"};
        expect_st(sbx_command_set_argv(k, 2, latin1), SBX_E_INVALID_ARG, sbx_command_last_error, k);
        ck_assert_ptr_nonnull(strstr(sbx_command_last_error(k), "argv[1]"));
        expect_st(sbx_command_set_cwd(k, "/tmp/\xff"), SBX_E_INVALID_ARG, sbx_command_last_error, k);
        expect_st(sbx_command_set_env(k, "NAME", "\xc3("), SBX_E_INVALID_ARG, sbx_command_last_error, k);
        ck_assert_ptr_nonnull(strstr(sbx_command_last_error(k), "NAME"));
    }
    expect_st(sbx_command_set_cwd(k, ""), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_set_env(k, "A=B", "x"), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_set_timeout_ms(k, -5), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_set_output_limit(k, 0), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_run_start(k, NULL), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    ck_assert_ptr_null(sbx_command_new(NULL));
    ck_assert_str_eq(sbx_command_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_command_run(NULL), SBX_E_INVALID_ARG);
    sbx_command_free(k);
    sbx_command_free(NULL);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_not_found_exit_127)
{
    struct env e = setup();
    const char *argv[] = {"no-such-program-xyz"};
    sbx_command *k = sbx_command_new(e.s);
    struct it_out o = {0};
    ok_cmd(sbx_command_set_argv(k, 1, argv), k);
    ok_cmd(sbx_command_set_output_cb(k, it_collect, &o), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 127);
    ck_assert(o.len[1] > 0);
    it_out_free(&o);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* The unsandboxed sandbox handle: a command needs a created sandbox. */
START_TEST(test_client_command_needs_sandbox)
{
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s = sbx_sandbox_new(c);
    sbx_command *k = it_sh_cmd(s, "true", NULL);
    sbx_op *op;
    expect_st(sbx_command_run(k), SBX_E_MISUSE, sbx_command_last_error, k);
    expect_st(sbx_command_run_start(k, &op), SBX_E_MISUSE, sbx_command_last_error, k);
    expect_st(sbx_command_kill(k, 9), SBX_E_MISUSE, sbx_command_last_error, k);
    expect_st(sbx_command_wait_exit(k), SBX_E_MISUSE, sbx_command_last_error, k);
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
}
END_TEST

/* Big output through a callback: every byte, in order. */
START_TEST(test_client_command_large_output_exact)
{
    struct env e = setup();
    struct it_out o = {0};
    char *want;
    size_t n = 0;
    FILE *f = open_memstream(&want, &n);
    for (int i = 1; i <= 200000; i++)
        fprintf(f, "%d\n", i);
    fclose(f);
    ck_assert_int_eq(it_sh(e.s, "seq 1 200000", &o), 0);
    ck_assert_int_eq(o.len[0], n);
    ck_assert(memcmp(o.data[0], want, n) == 0);
    free(want);
    it_out_free(&o);
    teardown(&e);
}
END_TEST

/* A blocking run without a callback keeps the tail of each stream. */
START_TEST(test_client_command_blocking_keeps_tail)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "seq 1 100000; echo last-err >&2", NULL);
    char *out;
    size_t n;
    ok_cmd(sbx_command_set_output_limit(k, 1000), k);
    ok_cmd(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDOUT), 588895);
    out = drain(k, SBX_STREAM_STDOUT, &n);
    ck_assert_int_le(n, 1000);
    ck_assert(n > 900);
    ck_assert_str_eq(out + n - 13, "99999\n100000\n");
    free(out);
    out = drain(k, SBX_STREAM_STDERR, NULL);
    ck_assert_str_eq(out, "last-err\n");
    free(out);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* Through an op, a full buffer pauses the stream: nothing is lost, memory
 * stays near the limit, and reading lets it flow again. */
START_TEST(test_client_command_backpressure)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "seq 1 300000", NULL);
    sbx_op *op;
    char buf[4096], *all = malloc(4 << 20);
    size_t n = 0, got, peak = 0;
    sbx_status st;
    int64_t until = mono_ms() + 1500;

    ok_cmd(sbx_command_set_output_limit(k, 32768), k);
    ok_cmd(sbx_command_run_start(k, &op), k);
    /* Nobody reads for a while: the op cannot finish. */
    while (mono_ms() < until) {
        sbx_client_wait(e.c, 100);
        sbx_client_process(e.c, NULL);
    }
    ck_assert_int_eq(sbx_op_done(op), 0);
    ck_assert_uint_le(sbx_command_output_bytes(k, SBX_STREAM_STDOUT), 32768 + 65536);
    /* Now drain while driving. */
    for (;;) {
        sbx_client_process(e.c, NULL);
        while ((st = sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)buf, sizeof buf, &got)) == SBX_OK) {
            memcpy(all + n, buf, got);
            n += got;
        }
        if (st == SBX_E_NOT_FOUND)
            break;
        ck_assert_int_eq(st, SBX_E_AGAIN);
        if (sbx_command_output_bytes(k, SBX_STREAM_STDOUT) - n > peak)
            peak = sbx_command_output_bytes(k, SBX_STREAM_STDOUT) - n;
        sbx_client_wait(e.c, 1000);
    }
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    ck_assert_int_eq(n, 1988895);
    ck_assert(memcmp(all + n - 14, "299999\n300000\n", 14) == 0);
    ck_assert_uint_le(peak, 32768 + 65536);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    free(all);
    sbx_op_free(op);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_callback_stops)
{
    struct env e = setup();
    struct it_out o = {.stop_after = 2};
    sbx_command *k = it_sh_cmd(e.s, "for i in 1 2 3 4 5; do echo $i; sleep 0.1; done; sleep 20", &o);
    expect_st(sbx_command_run(k), SBX_E_CANCELLED, sbx_command_last_error, k);
    ck_assert(contains(sbx_command_last_error(k), "callback"));
    ck_assert_int_eq(o.calls, 2);
    /* It keeps running there until killed. */
    ok_cmd(sbx_command_kill(k, 15), k);
    ok_cmd(sbx_command_wait_exit(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 143);
    it_out_free(&o);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_timeout_kills)
{
    struct env e = setup();
    struct it_out o = {0};
    sbx_command *k = it_sh_cmd(e.s, "echo started; sleep 30", &o), *g;
    int64_t t0 = mono_ms();
    ok_cmd(sbx_command_set_timeout_ms(k, 800), k);
    expect_st(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    ck_assert(mono_ms() - t0 < 10000);
    ck_assert(contains(sbx_command_last_error(k), "killed"));
    ck_assert_str_eq(it_str(&o, 0), "started\n");
    /* The server reports what really happened. */
    g = sbx_command_new(e.s);
    ok_cmd(sbx_command_fetch(g, sbx_command_id(k)), g);
    ok_cmd(sbx_command_wait_exit(g), g);
    ck_assert_int_eq(sbx_command_exit_code(g), 137);
    sbx_command_free(g);
    it_out_free(&o);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_detached_attach_kill)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "echo one; sleep 0.3; echo two >&2; sleep 30", NULL), *a, *g;
    struct it_out o = {0};
    sbx_op *op;

    ok_cmd(sbx_command_set_detached(k, 1), k);
    ok_cmd(sbx_command_run_start(k, &op), k);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert_ptr_nonnull(sbx_command_id(k));
    ck_assert_int_eq(sbx_command_exit_code(k), -1);

    /* Another handle follows it from the beginning. */
    a = sbx_command_new(e.s);
    ok_cmd(sbx_command_set_output_cb(a, it_collect, &o), a);
    ok_cmd(sbx_command_attach_start(a, sbx_command_id(k), &op), a);
    while (o.len[1] == 0) {
        sbx_client_wait(e.c, 1000);
        sbx_client_process(e.c, NULL);
    }
    ck_assert_str_eq(it_str(&o, 0), "one\n");
    ck_assert_str_eq(it_str(&o, 1), "two\n");
    {
        sbx_op *again = (sbx_op *)&o;
        expect_st(sbx_command_attach_start(a, sbx_command_id(k), &again), SBX_E_MISUSE, sbx_command_last_error, a);
        ck_assert_ptr_null(again);
    }
    ck_assert_int_eq(sbx_op_done(op), 0);

    /* Kill: the follower sees the exit. */
    {
        sbx_op *kop;
        ok_cmd(sbx_command_kill_start(k, 15, &kop), k);
        ck_assert_int_eq(sbx_op_wait(kop, -1), SBX_OK);
        sbx_op_free(kop);
    }
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    ck_assert_int_eq(sbx_command_exit_code(a), 143);
    sbx_op_free(op);
    ok_cmd(sbx_command_wait_exit(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 143);
    /* Killing a finished command succeeds. */
    ok_cmd(sbx_command_kill(k, 9), k);
    expect_st(sbx_command_kill(k, 0), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    expect_st(sbx_command_kill(k, 65), SBX_E_INVALID_ARG, sbx_command_last_error, k);

    /* The handle that started it detached follows it itself, by its own id
     * (the string the handle owns), into its buffers. */
    {
        sbx_command *d = it_sh_cmd(e.s, "sleep 0.3; echo late", NULL);
        sbx_op *dop;
        char *out;
        ok_cmd(sbx_command_set_detached(d, 1), d);
        ok_cmd(sbx_command_run(d), d);
        ok_cmd(sbx_command_attach_start(d, sbx_command_id(d), &dop), d);
        ck_assert_int_eq(sbx_op_wait(dop, -1), SBX_OK);
        sbx_op_free(dop);
        ck_assert_int_eq(sbx_command_exit_code(d), 0);
        out = drain(d, SBX_STREAM_STDOUT, NULL);
        ck_assert_str_eq(out, "late\n");
        free(out);
        /* While it streams, an empty buffer says "later", not "no more". */
        sbx_command_free(d);
        d = it_sh_cmd(e.s, "sleep 1; echo later", NULL);
        ok_cmd(sbx_command_set_detached(d, 1), d);
        ok_cmd(sbx_command_run(d), d);
        ok_cmd(sbx_command_attach_start(d, sbx_command_id(d), &dop), d);
        {
            char b[8];
            size_t n;
            ck_assert_int_eq(sbx_command_read_output(d, SBX_STREAM_STDOUT, (uint8_t *)b, sizeof b, &n), SBX_E_AGAIN);
        }
        ck_assert_int_eq(sbx_op_wait(dop, -1), SBX_OK);
        sbx_op_free(dop);
        sbx_command_free(d);
        /* A failed attach leaves the handle as it was: still started. */
        d = it_sh_cmd(e.s, "true", NULL);
        ok_cmd(sbx_command_set_detached(d, 1), d);
        ok_cmd(sbx_command_run(d), d);
        expect_st(sbx_command_attach_start(d, "cmd_\xff", &dop), SBX_E_INVALID_ARG, sbx_command_last_error, d);
        expect_st(sbx_command_run(d), SBX_E_MISUSE, sbx_command_last_error, d);
        sbx_command_free(d);
    }

    /* Attach to a finished command: the whole output, then its exit. */
    it_out_free(&o);
    g = sbx_command_new(e.s);
    ok_cmd(sbx_command_set_output_cb(g, it_collect, &o), g);
    ok_cmd(sbx_command_attach(g, sbx_command_id(k)), g);
    ck_assert_str_eq(it_str(&o, 0), "one\n");
    ck_assert_str_eq(it_str(&o, 1), "two\n");
    ck_assert_int_eq(sbx_command_exit_code(g), 143);
    sbx_command_free(g);

    /* get on a new handle; get/attach of an unknown id. */
    g = sbx_command_new(e.s);
    ok_cmd(sbx_command_fetch(g, sbx_command_id(k)), g);
    ck_assert_int_eq(sbx_command_exit_code(g), 143);
    ck_assert(sbx_command_started_at(g) > 0);
    expect_st(sbx_command_fetch(g, "cmd_other"), SBX_E_MISUSE, sbx_command_last_error, g);
    sbx_command_free(g);
    g = sbx_command_new(e.s);
    expect_st(sbx_command_fetch(g, "cmd_nope"), SBX_E_NOT_FOUND, sbx_command_last_error, g);
    ck_assert_msg(sbx_command_last_error_code(g) && strstr(sbx_command_last_error_code(g), "not_found"),
                  "the server's code of a blocking call: %s", sbx_command_last_error_code(g));
    sbx_command_free(g);
    g = sbx_command_new(e.s);
    expect_st(sbx_command_attach(g, "cmd_nope"), SBX_E_NOT_FOUND, sbx_command_last_error, g);
    expect_st(sbx_command_attach(g, ""), SBX_E_INVALID_ARG, sbx_command_last_error, g);
    /* Ids go into URLs: control characters and broken UTF-8 are refused
     * before anything is sent. */
    expect_st(sbx_command_attach(g, "cmd_a\nb"), SBX_E_INVALID_ARG, sbx_command_last_error, g);
    ck_assert(strstr(sbx_command_last_error(g), "control characters") != NULL);
    expect_st(sbx_command_fetch(g, "cmd_\xff"), SBX_E_INVALID_ARG, sbx_command_last_error, g);
    ck_assert(strstr(sbx_command_last_error(g), "invalid UTF-8") != NULL);
    sbx_command_free(g);

    it_out_free(&o);
    sbx_command_free(a);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* A server started by one command is reachable from a later one. */
/* The op forms of get and wait-for-exit, on a handle that did not start the
 * command: get sees it running, wait_exit_start completes with its code. */
START_TEST(test_client_command_get_and_wait_ops)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "sleep 0.5; exit 7", NULL), *g;
    sbx_op *op, *w;

    ok_cmd(sbx_command_set_detached(k, 1), k);
    ok_cmd(sbx_command_run(k), k);
    g = sbx_command_new(e.s);
    /* wait_exit needs a command to wait for. */
    w = (sbx_op *)g;
    expect_st(sbx_command_wait_exit_start(g, &w), SBX_E_MISUSE, sbx_command_last_error, g);
    ck_assert_ptr_null(w);
    ok_cmd(sbx_command_fetch_start(g, sbx_command_id(k), &op), g);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert_str_eq(sbx_command_id(g), sbx_command_id(k));
    ck_assert_int_eq(sbx_command_exit_code(g), -1); /* still running */
    ok_cmd(sbx_command_wait_exit_start(g, &w), g);
    ck_assert_int_eq(sbx_op_done(w), 0);
    ck_assert_int_eq(sbx_op_wait(w, -1), SBX_OK);
    ck_assert_int_eq(sbx_command_exit_code(g), 7);
    sbx_op_free(w);
    expect_st(sbx_command_fetch_start(g, "cmd_other", &op), SBX_E_MISUSE, sbx_command_last_error, g);
    ck_assert_ptr_null(op);
    sbx_command_free(g);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* A wait with a timeout returns SBX_E_AGAIN and leaves the op running, so a
 * binding can wait in slices and look for signals between them. */
START_TEST(test_client_command_op_wait_in_slices)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "sleep 1; echo done", NULL);
    sbx_op *op;
    sbx_status st;
    int slices = 0;

    ok_cmd(sbx_command_run_start(k, &op), k);
    while ((st = sbx_op_wait(op, 50)) == SBX_E_AGAIN) {
        ck_assert_int_eq(sbx_op_done(op), 0);
        slices++;
    }
    ck_assert_int_eq(st, SBX_OK);
    ck_assert_int_ge(slices, 5); /* a second in 50 ms slices */
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    /* A finished op answers at once, whatever the timeout. */
    ck_assert_int_eq(sbx_op_wait(op, 0), SBX_OK);
    ck_assert_int_eq(sbx_op_wait(NULL, 10), SBX_E_INVALID_ARG);
    sbx_op_free(op);
    /* The client-wide forms say the same. */
    k = (sbx_command_free(k), it_sh_cmd(e.s, "sleep 1", NULL));
    ok_cmd(sbx_command_run_start(k, &op), k);
    ck_assert_int_eq(sbx_client_run(e.c, 50), SBX_E_AGAIN);
    ck_assert_int_eq(sbx_op_done(op), 0);
    ck_assert_int_eq(sbx_client_run(e.c, -1), SBX_OK);
    ck_assert_int_eq(sbx_op_status(op), SBX_OK);
    sbx_op_free(op);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* last_error describes the most recent failing call: the next call that can
 * fail and succeeds clears it; getters leave it. */
START_TEST(test_client_command_error_contract)
{
    struct env e = setup();
    sbx_command *k = sbx_command_new(e.s);
    const char *argv[] = {"true"};
    expect_st(sbx_command_set_timeout_ms(k, -1), SBX_E_INVALID_ARG, sbx_command_last_error, k);
    ck_assert_str_ne(sbx_command_last_error(k), "");
    (void)sbx_command_id(k);
    (void)sbx_command_exit_code(k);
    ck_assert_str_ne(sbx_command_last_error(k), ""); /* getters leave it */
    ok_cmd(sbx_command_set_argv(k, 1, argv), k);
    ck_assert_str_eq(sbx_command_last_error(k), ""); /* a success clears it */
    expect_st(sbx_sandbox_set_vcpus(e.s, 1000), SBX_E_MISUSE, sbx_sandbox_last_error, e.s);
    ok_c(sbx_sandbox_refresh(e.s), e.c);
    ck_assert_str_eq(sbx_sandbox_last_error(e.s), "");
    expect_st(sbx_client_set_option(e.c, "no.such", "1"), SBX_E_UNKNOWN_OPTION, sbx_client_last_error, e.c);
    ck_assert_int_eq(sbx_client_wait(e.c, 0), SBX_E_AGAIN);
    ck_assert_str_ne(sbx_client_last_error(e.c), ""); /* wait never touches it */
    ok_c(sbx_client_set_option(e.c, "retry.max", "3"), e.c);
    ck_assert_str_eq(sbx_client_last_error(e.c), "");
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

START_TEST(test_client_command_detached_server)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "echo served > /tmp/index.html; cd /tmp && exec python3 -m http.server 8123", NULL);
    sbx_op *op;
    ok_cmd(sbx_command_set_detached(k, 1), k);
    ok_cmd(sbx_command_run_start(k, &op), k);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    expect_sh_out(e.s,
                  "for i in $(seq 50); do python3 -c \"import urllib.request as u; "
                  "print(u.urlopen('http://127.0.0.1:8123/index.html').read().decode(), end='')\" 2>/dev/null && "
                  "exit 0; sleep 0.1; done; exit 1",
                  "served\n");
    ok_cmd(sbx_command_kill(k, 9), k);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* Stopping the sandbox under a running command: an honest conflict with the
 * server's exit code, never a made-up one. */
START_TEST(test_client_command_sandbox_stopped)
{
    struct env e = setup();
    sbx_command *k = it_sh_cmd(e.s, "echo before; sleep 60", NULL);
    sbx_op *op;
    ok_cmd(sbx_command_run_start(k, &op), k);
    while (sbx_command_output_bytes(k, SBX_STREAM_STDOUT) == 0) {
        sbx_client_wait(e.c, 1000);
        sbx_client_process(e.c, NULL);
    }
    ok_s(sbx_sandbox_stop(e.s), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_CONFLICT);
    ck_assert(contains(sbx_op_last_error(op), "stop"));
    ck_assert_int_eq(sbx_command_exit_code(k), 137);
    sbx_op_free(op);
    sbx_command_free(k);
    teardown(&e);
}
END_TEST

/* Many commands in flight from one thread, each with its own output. */
START_TEST(test_client_command_many_in_flight)
{
    struct env e = setup();
    enum { N = 48 };
    sbx_command *k[N];
    sbx_op *op[N];
    struct it_out o[N];
    char script[128], want[64];

    memset(o, 0, sizeof o);
    for (int i = 0; i < N; i++) {
        snprintf(script, sizeof script, "sleep 0.$((%d %% 5)); echo cmd-%d; echo err-%d >&2; exit %d", i, i, i, i % 7);
        k[i] = it_sh_cmd(e.s, script, &o[i]);
        ok_cmd(sbx_command_run_start(k[i], &op[i]), k[i]);
    }
    ok_c(sbx_client_run(e.c, 60000), e.c);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(sbx_op_status(op[i]) == SBX_OK, "%d: %s", i, sbx_op_last_error(op[i]));
        ck_assert_int_eq(sbx_command_exit_code(k[i]), i % 7);
        snprintf(want, sizeof want, "cmd-%d\n", i);
        ck_assert_str_eq(it_str(&o[i], 0), want);
        snprintf(want, sizeof want, "err-%d\n", i);
        ck_assert_str_eq(it_str(&o[i], 1), want);
        sbx_op_free(op[i]);
        sbx_command_free(k[i]);
        it_out_free(&o[i]);
    }
    teardown(&e);
}
END_TEST

/* A running command holds no slot of the client's limits: with room for
 * one request at a time, commands that can only finish together (each
 * waits for the others' marker files) all run, and a short request still
 * gets through while they do. */
START_TEST(test_client_command_running_holds_no_slot)
{
    struct env e = setup();
    enum { N = 3 };
    sbx_command *k[N];
    sbx_op *op[N], *get;
    struct it_out o[N];
    char script[256];

    ok_c(sbx_client_set_option(e.c, "limit.global", "1"), e.c);
    ok_c(sbx_client_set_option(e.c, "limit.project", "1"), e.c);
    memset(o, 0, sizeof o);
    for (int i = 0; i < N; i++) {
        snprintf(script, sizeof script,
                 "touch m%d; while [ ! -e m0 ] || [ ! -e m1 ] || [ ! -e m2 ]; do "
                 "sleep 0.05; done; echo met-%d",
                 i, i);
        k[i] = it_sh_cmd(e.s, script, &o[i]);
        /* A deadlock (a slot held) ends in this timeout, not a hang. */
        ok_cmd(sbx_command_set_timeout_ms(k[i], 20000), k[i]);
        ok_cmd(sbx_command_run_start(k[i], &op[i]), k[i]);
    }
    ok_s(sbx_sandbox_refresh_start(e.s, &get), e.s);
    ok_c(sbx_client_run(e.c, 60000), e.c);
    ck_assert_msg(sbx_op_status(get) == SBX_OK, "get: %s", sbx_op_last_error(get));
    sbx_op_free(get);
    for (int i = 0; i < N; i++) {
        char want[16];
        ck_assert_msg(sbx_op_status(op[i]) == SBX_OK, "%d: %s", i, sbx_op_last_error(op[i]));
        ck_assert_int_eq(sbx_command_exit_code(k[i]), 0);
        snprintf(want, sizeof want, "met-%d\n", i);
        ck_assert_str_eq(it_str(&o[i], 0), want);
        sbx_op_free(op[i]);
        sbx_command_free(k[i]);
        it_out_free(&o[i]);
    }
    teardown(&e);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_command");
    TCase *tc = sbx_tcase("command", 120);
    tcase_add_test(tc, test_client_command_run_buffers);
    tcase_add_test(tc, test_client_command_settings);
    tcase_add_test(tc, test_client_command_not_found_exit_127);
    tcase_add_test(tc, test_client_command_needs_sandbox);
    tcase_add_test(tc, test_client_command_large_output_exact);
    tcase_add_test(tc, test_client_command_blocking_keeps_tail);
    tcase_add_test(tc, test_client_command_backpressure);
    tcase_add_test(tc, test_client_command_callback_stops);
    tcase_add_test(tc, test_client_command_timeout_kills);
    tcase_add_test(tc, test_client_command_detached_attach_kill);
    tcase_add_test(tc, test_client_command_get_and_wait_ops);
    tcase_add_test(tc, test_client_command_op_wait_in_slices);
    tcase_add_test(tc, test_client_command_error_contract);
    tcase_add_test(tc, test_client_command_detached_server);
    tcase_add_test(tc, test_client_command_sandbox_stopped);
    tcase_add_test(tc, test_client_command_many_in_flight);
    tcase_add_test(tc, test_client_command_running_holds_no_slot);
    suite_add_tcase(s, tc);
    return s;
}
