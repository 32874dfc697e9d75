/* SPDX-License-Identifier: MIT */
/* client_files: mkdir, write, upload, read, read_stream, download, against sbxd. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_it.h"

struct env {
    struct sbxd *d;
    sbx_client *c;
    sbx_sandbox *s;
    char local[300];   /* a host scratch directory */
};

static struct env setup(void)
{
    struct env e;
    e.d = sbxd_start(NULL, NULL);
    e.c = it_client(e.d);
    e.s = it_sandbox(e.c);
    snprintf(e.local, sizeof e.local, "%s/local", e.d->dir);
    ck_assert_int_eq(mkdir(e.local, 0755), 0);
    return e;
}

static void teardown(struct env *e)
{
    sbx_sandbox_free(e->s);
    sbx_client_free(e->c);
    sbxd_stop(e->d);
}

static void write_host(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_msg(fd >= 0, "%s", path);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    chmod(path, mode);
}

static char *read_host(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Deterministic bytes no compressor can shrink much. */
static unsigned char *noise(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (unsigned char)x;
    }
    return b;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

START_TEST(test_client_files_mkdir)
{
    struct env e = setup();
    sbx_op *op;
    ok_s(sbx_sandbox_mkdir(e.s, "a"), e.s);
    ok_s(sbx_sandbox_mkdir(e.s, "/vercel/sandbox/a/b"), e.s);
    ok_s(sbx_sandbox_mkdir_start(e.s, "a/b/c", &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    expect_sh_out(e.s, "cd /vercel/sandbox && find a -type d | sort", "a\na/b\na/b/c\n");
    expect_st(sbx_sandbox_mkdir(e.s, "d\xff"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_mkdir(e.s, "a"), SBX_E_CONFLICT, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_mkdir(e.s, "x/y/z"), SBX_E_NOT_FOUND, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_mkdir(e.s, ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_mkdir(e.s, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_mkdir_start(e.s, "q", NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    teardown(&e);
}
END_TEST

START_TEST(test_client_files_write_and_read)
{
    struct env e = setup();
    char *data = NULL;
    size_t len = 0;
    sbx_op *op;
    static const char bin[] = {'a', 0, 'b', '\n', (char)0xff};

    ok_s(sbx_sandbox_write_file(e.s, "notes/hello.txt", (const uint8_t *)"hello\n", 6, 0), e.s);
    ok_s(sbx_sandbox_write_file(e.s, "/tmp/run.sh", (const uint8_t *)"#!/bin/sh\necho ran\n", 19, 0755), e.s);
    ok_s(sbx_sandbox_write_file(e.s, "bin.dat", (const uint8_t *)bin, sizeof bin, 0600), e.s);
    ok_s(sbx_sandbox_write_file(e.s, "empty", (const uint8_t *)NULL, 0, 0644), e.s);
    /* .. at the root stays at the root, like the SDK. */
    ok_s(sbx_sandbox_write_file(e.s, "../../../../tmp/up.txt", (const uint8_t *)"up\n", 3, 0644), e.s);
    ok_s(sbx_sandbox_write_file_start(e.s, "notes/hello.txt", (const uint8_t *)"replaced\n", 9, 0644, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    expect_sh_out(e.s,
                  "cd /vercel/sandbox; cat notes/hello.txt; /tmp/run.sh; stat -c '%a %s' /tmp/run.sh bin.dat empty "
                  "notes/hello.txt; cat /tmp/up.txt",
                  "replaced\nran\n755 19\n600 5\n644 0\n644 9\nup\n");

    ok_s(sbx_sandbox_read_file(e.s, "bin.dat", 0, (uint8_t **)&data, &len), e.s);
    ck_assert_int_eq(len, sizeof bin);
    ck_assert(memcmp(data, bin, len) == 0);
    ck_assert_int_eq(data[len], '\0');
    sbx_free(data);
    ok_s(sbx_sandbox_read_file(e.s, "/vercel/sandbox/empty", 0, (uint8_t **)&data, &len), e.s);
    ck_assert_int_eq(len, 0);
    ck_assert_str_eq(data, "");
    sbx_free(data);

    expect_st(sbx_sandbox_read_file(e.s, "missing", 0, (uint8_t **)&data, &len), SBX_E_NOT_FOUND, sbx_sandbox_last_error, e.s);
    ck_assert_ptr_null(data);
    expect_st(sbx_sandbox_read_file(e.s, "notes", 0, (uint8_t **)&data, &len), SBX_E_NOT_FOUND, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_read_file(e.s, "notes/hello.txt", 4, (uint8_t **)&data, &len), SBX_E_BUDGET_EXCEEDED,
              sbx_sandbox_last_error, e.s);
    ck_assert_ptr_null(data);
    expect_st(sbx_sandbox_read_file(e.s, "x", 0, NULL, &len), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_write_file(e.s, "/", (const uint8_t *)"x", 1, 0644), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_write_file(e.s, "f", (const uint8_t *)NULL, 3, 0644), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_write_file(e.s, "f", (const uint8_t *)"x", 1, 010000), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    teardown(&e);
}
END_TEST

/* The _start form of sbx_sandbox_read_file() on a host loop: the bytes are
 * the op's (sbx_op_result_data()), failures the op's, and the arguments are
 * checked before anything is sent. */
START_TEST(test_client_files_read_file_start)
{
    struct env e = setup();
    static const char bin[] = {'a', 0, 'b', '\n', (char)0xff};
    const uint8_t *data;
    size_t len = 99, running = 1;
    sbx_sandbox *unbound;
    sbx_op *op;

    ok_s(sbx_sandbox_write_file(e.s, "bin.dat", (const uint8_t *)bin, sizeof bin, 0600), e.s);
    ok_s(sbx_sandbox_write_file(e.s, "empty", (const uint8_t *)NULL, 0, 0644), e.s);

    ok_s(sbx_sandbox_read_file_start(e.s, "bin.dat", 0, &op), e.s);
    ck_assert_ptr_nonnull(op);
    ck_assert_ptr_null(sbx_op_result_data(op, &len)); /* not finished */
    ck_assert_uint_eq(len, 0);
    while (!sbx_op_done(op)) {
        sbx_status st = sbx_client_wait(e.c, 1000);
        ck_assert_msg(st == SBX_OK || st == SBX_E_AGAIN, "wait: %s", sbx_status_name(st));
        ck_assert_int_eq(sbx_client_process(e.c, &running), SBX_OK);
    }
    ck_assert_msg(sbx_op_status(op) == SBX_OK, "%s", sbx_op_last_error(op));
    ck_assert_ptr_eq(sbx_client_next_done(e.c), op);
    data = sbx_op_result_data(op, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, sizeof bin);
    ck_assert(memcmp(data, bin, len) == 0);
    ck_assert_int_eq(data[len], '\0');
    ck_assert_ptr_eq(sbx_op_result_data(op, NULL), data);
    ck_assert_ptr_null(sbx_op_result_json(op));
    sbx_op_free(op);

    /* An empty file: "" and 0, not NULL. */
    ok_s(sbx_sandbox_read_file_start(e.s, "empty", 0, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    data = sbx_op_result_data(op, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(data[0], '\0');
    sbx_op_free(op);

    /* Failures are the op's, with no bytes; the handle's start succeeded. */
    ok_s(sbx_sandbox_read_file_start(e.s, "missing", 0, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_NOT_FOUND);
    ck_assert_str_ne(sbx_op_last_error(op), "");
    ck_assert_str_eq(sbx_sandbox_last_error(e.s), "");
    len = 99;
    ck_assert_ptr_null(sbx_op_result_data(op, &len));
    ck_assert_uint_eq(len, 0);
    sbx_op_free(op);
    ok_s(sbx_sandbox_read_file_start(e.s, "bin.dat", 4, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_BUDGET_EXCEEDED);
    ck_assert_ptr_null(sbx_op_result_data(op, NULL));
    sbx_op_free(op);

    /* Other operations have no bytes, nor has no operation. */
    ok_s(sbx_sandbox_mkdir_start(e.s, "d", &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    ck_assert_ptr_null(sbx_op_result_data(op, &len));
    sbx_op_free(op);
    len = 99;
    ck_assert_ptr_null(sbx_op_result_data(NULL, &len));
    ck_assert_uint_eq(len, 0);

    /* Bad arguments start nothing, set *op to NULL and name the argument. */
    expect_st(sbx_sandbox_read_file_start(e.s, "bin.dat", 0, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    ck_assert_msg(strstr(sbx_sandbox_last_error(e.s), "op"), "%s", sbx_sandbox_last_error(e.s));
    op = (sbx_op *)&op;
    expect_st(sbx_sandbox_read_file_start(e.s, NULL, 0, &op), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    ck_assert_ptr_null(op);
    ck_assert_msg(strstr(sbx_sandbox_last_error(e.s), "path"), "%s", sbx_sandbox_last_error(e.s));
    op = (sbx_op *)&op;
    expect_st(sbx_sandbox_read_file_start(e.s, "", 0, &op), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    ck_assert_ptr_null(op);
    op = (sbx_op *)&op;
    expect_st(sbx_sandbox_read_file_start(e.s, "bad\xff", 0, &op), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    ck_assert_ptr_null(op);
    ck_assert_msg(strstr(sbx_sandbox_last_error(e.s), "UTF-8"), "%s", sbx_sandbox_last_error(e.s));
    expect_st(sbx_sandbox_read_file_start(NULL, "bin.dat", 0, &op), SBX_E_INVALID_ARG, sbx_sandbox_last_error,
              (sbx_sandbox *)NULL);
    unbound = sbx_sandbox_new(e.c);
    op = (sbx_op *)&op;
    expect_st(sbx_sandbox_read_file_start(unbound, "bin.dat", 0, &op), SBX_E_MISUSE, sbx_sandbox_last_error, unbound);
    ck_assert_ptr_null(op);
    sbx_sandbox_free(unbound);
    teardown(&e);
}
END_TEST

struct chunks {
    size_t total, calls, cap;
    unsigned char *data;
    size_t stop_at;
};

static int on_chunk(const uint8_t *data, size_t len, void *user)
{
    struct chunks *c = user;
    if (c->total + len > c->cap) {
        /* Geometric growth: a realloc per chunk copies the whole buffer
         * each time (ASan's realloc always does), minutes for 24 MiB. */
        while (c->total + len > c->cap)
            c->cap = c->cap ? c->cap * 2 : 65536;
        c->data = realloc(c->data, c->cap);
        ck_assert_ptr_nonnull(c->data);
    }
    memcpy(c->data + c->total, data, len);
    c->total += len;
    c->calls++;
    return c->stop_at && c->total >= c->stop_at;
}

/* A 24 MiB file: upload from disk, read back streamed, download to a file. */
START_TEST(test_client_files_large_round_trip)
{
    struct env e = setup();
    size_t n = 24u << 20, got;
    unsigned char *want = noise(n, 1);
    char path[400], back[400], *b;
    struct chunks ch = {0};
    sbx_op *op;

    snprintf(path, sizeof path, "%s/big.bin", e.local);
    write_host(path, want, n, 0644);
    ok_s(sbx_sandbox_upload(e.s, path, "big.bin"), e.s);
    expect_sh_out(e.s, "stat -c %s /vercel/sandbox/big.bin", "25165824\n");

    ok_s(sbx_sandbox_read_stream(e.s, "big.bin", on_chunk, &ch), e.s);
    ck_assert_int_eq(ch.total, n);
    ck_assert(ch.calls > 1);
    ck_assert(memcmp(ch.data, want, n) == 0);
    free(ch.data);

    snprintf(back, sizeof back, "%s/back.bin", e.local);
    ok_s(sbx_sandbox_download_start(e.s, "big.bin", back, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    b = read_host(back, &got);
    ck_assert_int_eq(got, n);
    ck_assert(memcmp(b, want, n) == 0);
    free(b);
    {
        /* The download gets the mode a new file gets here (umask). */
        struct stat st;
        mode_t um = umask(022);
        umask(um);
        ck_assert_int_eq(stat(back, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0666 & ~um);
    }
    /* Only the two files: no temporary left behind. */
    ck_assert_int_eq(count_entries(e.local), 2);

    /* Too big to keep (> 8 MiB), so generated again while sent: a file cut
     * short after it was measured fails the upload with the real reason,
     * not the aborted transfer's. */
    ok_s(sbx_sandbox_upload_start(e.s, path, "big2.bin", &op), e.s);
    ck_assert_int_eq(truncate(path, 1000), 0);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_IO);
    ck_assert_msg(strstr(sbx_op_last_error(op), "write files:") &&
                      strstr(sbx_op_last_error(op), "big.bin"),
                  "message: %s", sbx_op_last_error(op));
    sbx_op_free(op);
    free(want);
    teardown(&e);
}
END_TEST

/* sbx_op_get_progress() read while the op runs: from a second thread while
 * the first blocks in sbx_op_wait(), as a progress bar beside a blocking
 * wait does (for its safety: no assertion on what it happens to see, which
 * depends on scheduling); and between the rounds of a host loop on the
 * client, where what it sees is certain: a round moves at most what the
 * socket buffers hold (a few MiB), so a 24 MiB body takes several. */
struct sampler {
    sbx_op *op;
    atomic_bool stop;
    pthread_t th;
    size_t samples, partial_sent, partial_received;
    bool backwards, bad_total;
    uint64_t last_sent, last_received;
};

static void sample_once(struct sampler *sm)
{
    uint64_t sent, received;
    int64_t stot, rtot;
    ck_assert_int_eq(sbx_op_get_progress(sm->op, &sent, &stot, &received, &rtot), SBX_OK);
    sm->samples++;
    sm->backwards |= sent < sm->last_sent || received < sm->last_received;
    sm->bad_total |= (stot >= 0 && sent > (uint64_t)stot) || (rtot >= 0 && received > (uint64_t)rtot);
    if (stot > 0 && sent > 0 && sent < (uint64_t)stot)
        sm->partial_sent++;
    if (rtot > 0 && received > 0 && received < (uint64_t)rtot)
        sm->partial_received++;
    sm->last_sent = sent;
    sm->last_received = received;
}

static void *sample_main(void *arg)
{
    struct sampler *sm = arg;
    while (!atomic_load(&sm->stop)) {
        sample_once(sm);
        usleep(200);
    }
    return NULL;
}

static void sample_start(struct sampler *sm, sbx_op *op)
{
    memset(sm, 0, sizeof *sm);
    sm->op = op;
    atomic_init(&sm->stop, false);
    ck_assert_int_eq(pthread_create(&sm->th, NULL, sample_main, sm), 0);
}

static void sample_stop(struct sampler *sm)
{
    atomic_store(&sm->stop, true);
    pthread_join(sm->th, NULL);
    ck_assert_msg(!sm->backwards, "progress went backwards");
    ck_assert_msg(!sm->bad_total, "progress passed its total");
}

/* Run op to its end on a host loop, sampling after every round. */
static void drive_sampling(sbx_client *c, sbx_op *op, struct sampler *sm)
{
    size_t running = 1;
    memset(sm, 0, sizeof *sm);
    sm->op = op;
    while (!sbx_op_done(op)) {
        sbx_status st = sbx_client_wait(c, 1000);
        ck_assert_msg(st == SBX_OK || st == SBX_E_AGAIN, "wait: %s", sbx_status_name(st));
        ck_assert_int_eq(sbx_client_process(c, &running), SBX_OK);
        sample_once(sm);
    }
    ck_assert_msg(!sm->backwards, "progress went backwards");
    ck_assert_msg(!sm->bad_total, "progress passed its total");
}

START_TEST(test_client_files_progress)
{
    struct env e = setup();
    size_t n = 24u << 20;
    unsigned char *want = noise(n, 7);
    char path[400], back[400];
    uint64_t sent, received;
    int64_t stot, rtot;
    struct sampler sm;
    sbx_op *op;

    ck_assert_int_eq(sbx_op_get_progress(NULL, &sent, &stot, &received, &rtot), SBX_E_INVALID_ARG);
    snprintf(path, sizeof path, "%s/big.bin", e.local);
    write_host(path, want, n, 0644);

    /* Up: the gzip tar is a little more than the file (stored: noise). */
    ok_s(sbx_sandbox_upload_start(e.s, path, "big.bin", &op), e.s);
    ck_assert_int_eq(sbx_op_get_progress(op, &sent, &stot, &received, &rtot), SBX_OK);
    ck_assert_msg(sent == 0 && stot == -1 && received == 0 && rtot == -1, "before it starts: %llu/%lld %llu/%lld",
                  (unsigned long long)sent, (long long)stot, (unsigned long long)received, (long long)rtot);
    sample_start(&sm, op);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sample_stop(&sm);
    ck_assert_int_eq(sbx_op_get_progress(op, &sent, &stot, NULL, NULL), SBX_OK);
    ck_assert_msg(stot > (int64_t)n && stot < (int64_t)(n + n / 50), "the body: %lld bytes for %zu", (long long)stot, n);
    ck_assert_int_eq(sent, (uint64_t)stot);
    sbx_op_free(op);
    /* Again on a host loop: rounds that saw it part sent. */
    ok_s(sbx_sandbox_upload_start(e.s, path, "big.bin", &op), e.s);
    drive_sampling(e.c, op, &sm);
    ck_assert_int_eq(sbx_op_status(op), SBX_OK);
    ck_assert_msg(sm.partial_sent > 0, "no round saw the body part sent (%zu rounds)", sm.samples);
    sbx_op_free(op);

    /* Down, to a file: the file's bytes, of its Content-Length. */
    snprintf(back, sizeof back, "%s/back.bin", e.local);
    ok_s(sbx_sandbox_download_start(e.s, "big.bin", back, &op), e.s);
    sample_start(&sm, op);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sample_stop(&sm);
    ck_assert_int_eq(sbx_op_get_progress(op, &sent, &stot, &received, &rtot), SBX_OK);
    ck_assert_msg(stot >= 0 && stot < 1024 && sent == (uint64_t)stot, "the request: %llu of %lld",
                  (unsigned long long)sent, (long long)stot); /* none, or the path in JSON */
    ck_assert_int_eq(received, n);
    ck_assert_int_eq(rtot, (int64_t)n);
    sbx_op_free(op);
    ok_s(sbx_sandbox_download_start(e.s, "big.bin", back, &op), e.s);
    drive_sampling(e.c, op, &sm);
    ck_assert_int_eq(sbx_op_status(op), SBX_OK);
    ck_assert_msg(sm.partial_received > 0, "no round saw the file part received (%zu rounds)", sm.samples);
    sbx_op_free(op);

    /* A file that is not there: an error answer has no total. */
    ok_s(sbx_sandbox_download_start(e.s, "missing.bin", back, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_NOT_FOUND);
    ck_assert_int_eq(sbx_op_get_progress(op, NULL, NULL, NULL, &rtot), SBX_OK);
    ck_assert_int_eq(rtot, -1);
    sbx_op_free(op);
    free(want);
    teardown(&e);
}
END_TEST

START_TEST(test_client_files_stream_stop_and_download_failures)
{
    struct env e = setup();
    struct chunks ch = {.stop_at = 1};
    char back[400], bad[400];
    size_t n = 3u << 20;
    unsigned char *data = noise(n, 2);
    sbx_op *op;

    ok_s(sbx_sandbox_write_file(e.s, "data.bin", (const uint8_t *)data, n, 0644), e.s);
    expect_st(sbx_sandbox_read_stream(e.s, "data.bin", on_chunk, &ch), SBX_E_CANCELLED, sbx_sandbox_last_error, e.s);
    ck_assert_int_eq(ch.calls, 1);
    free(ch.data);
    memset(&ch, 0, sizeof ch);
    ok_s(sbx_sandbox_read_stream_start(e.s, "data.bin", on_chunk, &ch, &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    ck_assert_int_eq(ch.total, n);
    ck_assert(memcmp(ch.data, data, n) == 0);
    free(ch.data);
    expect_st(sbx_sandbox_read_stream(e.s, "data.bin", NULL, NULL), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);

    /* A missing file: nothing is created locally. */
    snprintf(back, sizeof back, "%s/out.bin", e.local);
    expect_st(sbx_sandbox_download(e.s, "missing.bin", back), SBX_E_NOT_FOUND, sbx_sandbox_last_error, e.s);
    ck_assert_int_eq(count_entries(e.local), 0);
    /* An existing local file is replaced only on success. */
    write_host(back, "old", 3, 0644);
    expect_st(sbx_sandbox_download(e.s, "missing.bin", back), SBX_E_NOT_FOUND, sbx_sandbox_last_error, e.s);
    {
        size_t l;
        char *b = read_host(back, &l);
        ck_assert_str_eq(b, "old");
        free(b);
    }
    ck_assert_int_eq(count_entries(e.local), 1);
    ok_s(sbx_sandbox_download(e.s, "data.bin", back), e.s);
    {
        size_t l;
        char *b = read_host(back, &l);
        ck_assert_int_eq(l, n);
        free(b);
    }
    /* A local directory that does not exist. */
    snprintf(bad, sizeof bad, "%s/no/such/dir/out.bin", e.local);
    expect_st(sbx_sandbox_download(e.s, "data.bin", bad), SBX_E_IO, sbx_sandbox_last_error, e.s);
    ck_assert(contains(sbx_sandbox_last_error(e.s), "no/such/dir"));
    expect_st(sbx_sandbox_download(e.s, "data.bin", ""), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    free(data);
    teardown(&e);
}
END_TEST

/* A directory tree: nested files, modes, a symlink inside the tree (copied
 * as the file), one leaving it and a dangling one (skipped). */
START_TEST(test_client_files_upload_tree)
{
    struct env e = setup();
    char p[600], outside[400];
    sbx_op *op;

    snprintf(p, sizeof p, "%s/proj/src/deep", e.local);
    ck_assert_int_eq(host_sh("mkdir -p '%s'", p), 0);
    snprintf(p, sizeof p, "%s/proj/README", e.local);
    write_host(p, "readme\n", 7, 0644);
    snprintf(p, sizeof p, "%s/proj/src/main.sh", e.local);
    write_host(p, "echo main\n", 10, 0755);
    snprintf(p, sizeof p, "%s/proj/src/deep/a file with spaces é.txt", e.local);
    write_host(p, "spaced\n", 7, 0644);
    snprintf(outside, sizeof outside, "%s/secret.txt", e.d->dir);
    write_host(outside, "secret\n", 7, 0600);
    ck_assert_int_eq(host_sh("cd '%s/proj' && ln -s README link-in && ln -s '%s' link-out && ln -s nowhere dangling",
                             e.local, outside),
                     0);

    snprintf(p, sizeof p, "%s/proj", e.local);
    ok_s(sbx_sandbox_upload_start(e.s, p, "/vercel/sandbox/dest", &op), e.s);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    sbx_op_free(op);
    expect_sh_out(e.s, "cd /vercel/sandbox/dest && find . -type f | sort && cat link-in && stat -c %a src/main.sh",
                  "./README\n./link-in\n./src/deep/a file with spaces é.txt\n./src/main.sh\nreadme\n755\n");

    /* Upload of a single file to a relative path; errors. */
    snprintf(p, sizeof p, "%s/proj/README", e.local);
    ok_s(sbx_sandbox_upload(e.s, p, "one/README.copy"), e.s);
    expect_sh_out(e.s, "cat /vercel/sandbox/one/README.copy", "readme\n");
    expect_st(sbx_sandbox_upload(e.s, "/nonexistent/x", "y"), SBX_E_IO, sbx_sandbox_last_error, e.s);
    ck_assert(contains(sbx_sandbox_last_error(e.s), "/nonexistent/x"));
    /* Files whose size cannot be trusted are read to their end: a device,
     * a /proc file that says 0 bytes. */
    ok_s(sbx_sandbox_upload(e.s, "/dev/null", "null.copy"), e.s);
    expect_sh_out(e.s, "wc -c < /vercel/sandbox/null.copy", "0\n");
    ok_s(sbx_sandbox_upload(e.s, "/proc/self/status", "status.copy"), e.s);
    expect_sh_out(e.s, "head -c 5 /vercel/sandbox/status.copy", "Name:");
    expect_st(sbx_sandbox_upload(e.s, p, "/"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    expect_st(sbx_sandbox_upload(e.s, "", "y"), SBX_E_INVALID_ARG, sbx_sandbox_last_error, e.s);
    teardown(&e);
}
END_TEST

/* The server's size limit is reported as a budget error. */
START_TEST(test_client_files_too_large_for_server)
{
    const char *args[] = {"--max-upload", "1048576", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    size_t n = 3u << 20;
    unsigned char *data = noise(n, 3);
    expect_st(sbx_sandbox_write_file(s, "big", (const uint8_t *)data, n, 0644), SBX_E_BUDGET_EXCEEDED, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "413"));
    free(data);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_files");
    TCase *tc = sbx_tcase("files", 180);
    tcase_add_test(tc, test_client_files_mkdir);
    tcase_add_test(tc, test_client_files_write_and_read);
    tcase_add_test(tc, test_client_files_read_file_start);
    tcase_add_test(tc, test_client_files_large_round_trip);
    tcase_add_test(tc, test_client_files_progress);
    tcase_add_test(tc, test_client_files_stream_stop_and_download_failures);
    tcase_add_test(tc, test_client_files_upload_tree);
    tcase_add_test(tc, test_client_files_too_large_for_server);
    suite_add_tcase(s, tc);
    return s;
}
