/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/client/tarball.c: gzip tar bodies generated while they are read. */
#include "harness.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/archive_dl.h"
#include "client/tarball.h"

/* ---- byte strings and files owned by the test (plain malloc: never fault-injected) ---- */

struct bytes {
    unsigned char *p;
    size_t n, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        ck_assert_ptr_nonnull(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void bytes_free(struct bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Pseudo-random bytes (xorshift), so gzip cannot shrink them. */
static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char *p = path_join(dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_msg(fd >= 0, "%s: %s", p, strerror(errno));
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
    free(p);
}

static void make_dir(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    ck_assert_msg(mkdir(p, 0755) == 0, "%s: %s", p, strerror(errno));
    free(p);
}

static char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *t;
    size_t n;
    if (!base || !*base)
        base = "/tmp";
    n = strlen(base) + 32;
    t = malloc(n);
    ck_assert_ptr_nonnull(t);
    snprintf(t, n, "%s/sbx-tar-XXXXXX", base);
    ck_assert_msg(mkdtemp(t) != NULL, "mkdtemp: %s", strerror(errno));
    return t;
}

static void rm_rf(const char *path)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- reading a body ------------------------------------------------------------ */

/* All of the body, in reads of at most bufsize bytes. False (error in *why) when
 * a read failed. */
static bool read_body(sbx__tar *t, size_t bufsize, struct bytes *out)
{
    char *buf = malloc(bufsize);
    bool ok = true;
    ck_assert_ptr_nonnull(buf);
    for (;;) {
        size_t k = sbx__tar_read(t, buf, bufsize);
        if (k == SIZE_MAX) {
            ok = false;
            break;
        }
        ck_assert_uint_le(k, bufsize);
        if (k == 0)
            break;
        bytes_add(out, buf, k);
    }
    free(buf);
    return ok;
}

struct entry_out {
    char name[1024];
    unsigned type;
    unsigned perm;
    int64_t size;
    struct bytes data;
};

struct listing {
    struct entry_out *v;
    size_t n;
};

static void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        bytes_free(&l->v[i].data);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Decode a body with libarchive: gzip, tar, every entry with its data. */
static void list_body(const struct bytes *body, struct listing *l)
{
    struct archive *a = archive_read_new();
    struct archive_entry *ae;
    int r;

    memset(l, 0, sizeof *l);
    ck_assert_uint_ge(body->n, 2);
    ck_assert_int_eq(body->p[0], 0x1f); /* gzip magic */
    ck_assert_int_eq(body->p[1], 0x8b);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(archive_read_support_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_read_support_format_tar(a), ARCHIVE_OK);
    ck_assert_msg(archive_read_open_memory(a, body->p, body->n) == ARCHIVE_OK, "open: %s", archive_error_string(a));
    while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        struct entry_out *e;
        /* The names are stored as their bytes (hdrcharset BINARY): compare bytes. */
        const char *name = archive_entry_pathname(ae);
        char buf[8192];
        la_ssize_t got;
        l->v = realloc(l->v, (l->n + 1) * sizeof *l->v);
        ck_assert_ptr_nonnull(l->v);
        e = &l->v[l->n++];
        memset(e, 0, sizeof *e);
        ck_assert_ptr_nonnull(name);
        ck_assert_uint_lt(strlen(name), sizeof e->name);
        strcpy(e->name, name);
        e->type = archive_entry_filetype(ae);
        e->perm = archive_entry_perm(ae);
        e->size = archive_entry_size(ae);
        while ((got = archive_read_data(a, buf, sizeof buf)) > 0)
            bytes_add(&e->data, buf, (size_t)got);
        ck_assert_msg(got == 0, "%s: reading data: %s", e->name, archive_error_string(a));
    }
    ck_assert_msg(r == ARCHIVE_EOF, "tar: %s", archive_error_string(a));
    ck_assert_int_eq(archive_filter_code(a, 0), ARCHIVE_FILTER_GZIP);
    archive_read_free(a);
}

static const struct entry_out *find(const struct listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return &l->v[i];
    return NULL;
}

/* The entry is there once, a regular file with this mode and content. */
static void expect_entry(const struct listing *l, const char *name, unsigned perm, const void *data, size_t len)
{
    const struct entry_out *e = find(l, name);
    size_t count = 0;
    ck_assert_msg(e != NULL, "no entry '%s'", name);
    for (size_t i = 0; i < l->n; i++)
        count += strcmp(l->v[i].name, name) == 0;
    ck_assert_msg(count == 1, "'%s' is there %zu times", name, count);
    ck_assert_msg(e->type == AE_IFREG, "'%s' has type 0%o", name, e->type);
    ck_assert_msg(e->perm == perm, "'%s' has mode 0%o, expected 0%o", name, e->perm, perm);
    ck_assert_msg(e->size == (int64_t)len, "'%s' has size %lld, expected %zu", name, (long long)e->size, len);
    ck_assert_uint_eq(e->data.n, len);
    if (len)
        ck_assert_msg(memcmp(e->data.p, data, len) == 0, "'%s': content differs", name);
}

static void expect_only_regular(const struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck_assert_msg(l->v[i].type == AE_IFREG, "'%s' is not a regular file (0%o)", l->v[i].name, l->v[i].type);
}

/* Two reads of a body are the same bytes. The gzip header's MTIME (bytes 4-7)
 * is left out here: it is the subject of test_tarball_rewind_identical_*,
 * and reads that straddle a second must not make every test fail. */
static void same_body(const struct bytes *a, const struct bytes *b, size_t bufsize)
{
    ck_assert_uint_eq(a->n, b->n);
    ck_assert_uint_ge(a->n, 10);
    ck_assert_msg(memcmp(a->p, b->p, 4) == 0 && memcmp(a->p + 8, b->p + 8, a->n - 8) == 0,
                  "buffer %zu: other bytes than the first read", bufsize);
}

/* prepare, then read the body at each buffer size (rewinding in between):
 * every read gives the announced size and the same bytes. */
static void prepare_and_read(sbx__tar *t, size_t mem_limit, const size_t *sizes, size_t nsizes,
                             struct bytes *body)
{
    sbx__err err = {0};
    uint64_t size = 0;
    ck_assert_msg(sbx__tar_prepare(t, mem_limit, &size, &err) == SBX_OK, "prepare: %s", sbx__err_msg(&err));
    ck_assert_uint_gt(size, 0);
    memset(body, 0, sizeof *body);
    for (size_t i = 0; i < nsizes; i++) {
        struct bytes b = {0};
        if (i)
            ck_assert_int_eq(sbx__tar_rewind(t), 0);
        ck_assert_msg(read_body(t, sizes[i], &b), "read (buffer %zu): %s", sizes[i], sbx__tar_error(t));
        ck_assert_msg(b.n == size, "buffer %zu: read %zu bytes, prepare said %llu", sizes[i], b.n,
                      (unsigned long long)size);
        if (i == 0) {
            *body = b;
        } else {
            same_body(body, &b, sizes[i]);
            bytes_free(&b);
        }
    }
    sbx__err_free(&err);
}

/* ---- entries from memory ------------------------------------------------------------ */

static const size_t odd_sizes[] = {1, 7, 4096};

static void add_mem(sbx__tar *t, const char *name, const void *data, size_t len, uint32_t mode)
{
    sbx__err err = {0};
    ck_assert_msg(sbx__tar_add_memory(t, name, data, len, mode, &err) == SBX_OK, "%s: %s", name, sbx__err_msg(&err));
    sbx__err_free(&err);
}

static void memory_entries(size_t mem_limit)
{
    static const char script[] = "#!/bin/sh\necho hi\n";
    unsigned char *blob = malloc(150000);
    sbx__tar *t = sbx__tar_new();
    struct bytes body;
    struct listing l;

    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(blob);
    fill_random(blob, 150000, 7);
    add_mem(t, "hello.txt", "hi\n", 3, 0644);
    add_mem(t, "bin/run.sh", script, sizeof script - 1, 0755);
    add_mem(t, "empty", NULL, 0, 0600);
    add_mem(t, "default-mode", "x", 1, 0);
    add_mem(t, "type-bits-dropped", "y", 1, 0100640);
    add_mem(t, "a/b/c/blob.bin", blob, 150000, 0644); /* more than one 64 KiB chunk */
    ck_assert_uint_eq(sbx__tar_entries(t), 6);
    ck_assert_uint_eq(sbx__tar_skipped(t), 0);
    prepare_and_read(t, mem_limit, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 6);
    expect_only_regular(&l);
    expect_entry(&l, "hello.txt", 0644, "hi\n", 3);
    expect_entry(&l, "bin/run.sh", 0755, script, sizeof script - 1);
    expect_entry(&l, "empty", 0600, "", 0);
    expect_entry(&l, "default-mode", 0644, "x", 1);
    expect_entry(&l, "type-bits-dropped", 0640, "y", 1);
    expect_entry(&l, "a/b/c/blob.bin", 0644, blob, 150000);
    /* In the order they were added. */
    ck_assert_str_eq(l.v[0].name, "hello.txt");
    ck_assert_str_eq(l.v[5].name, "a/b/c/blob.bin");
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    free(blob);
}

START_TEST(test_tarball_memory_entries_kept_body)
{
    memory_entries(8u << 20);
}
END_TEST

START_TEST(test_tarball_memory_entries_streamed_body)
{
    memory_entries(0); /* never kept: generated again for each read */
}
END_TEST

START_TEST(test_tarball_memory_data_is_copied)
{
    char data[] = "original";
    sbx__tar *t = sbx__tar_new();
    struct bytes body;
    struct listing l;
    add_mem(t, "f", data, 8, 0644);
    memcpy(data, "CHANGED!", 8);
    prepare_and_read(t, 1 << 20, odd_sizes + 2, 1, &body);
    list_body(&body, &l);
    expect_entry(&l, "f", 0644, "original", 8);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
}
END_TEST

START_TEST(test_tarball_empty_tar)
{
    sbx__tar *t = sbx__tar_new();
    struct bytes body;
    struct listing l;
    prepare_and_read(t, 1 << 20, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 0);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
}
END_TEST

START_TEST(test_tarball_read_without_prepare)
{
    sbx__tar *t = sbx__tar_new();
    struct bytes body = {0};
    struct listing l;
    add_mem(t, "x.txt", "xyz", 3, 0644);
    ck_assert(read_body(t, 7, &body));
    list_body(&body, &l);
    expect_entry(&l, "x.txt", 0644, "xyz", 3);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
}
END_TEST

/* ---- names ----------------------------------------------------------------------- */

START_TEST(test_tarball_long_and_non_ascii_names)
{
    char over100[160], over255[400], comp200[210];
    const char *utf8 = "dossier/caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80.txt";
    const char *names[4];
    sbx__tar *t = sbx__tar_new();
    struct bytes body;
    struct listing l;
    size_t n = 0;

    /* > 100 bytes, in short components. */
    for (n = 0; n < 120; n += 4)
        memcpy(over100 + n, "dir/", 4);
    memcpy(over100 + n, "f.txt", 6);
    /* > 255 bytes, in components of at most 50. */
    n = 0;
    for (int i = 0; i < 6; i++) {
        memset(over255 + n, 'a' + i, 50);
        n += 50;
        over255[n++] = '/';
    }
    memcpy(over255 + n, "leaf", 5);
    /* One component longer than ustar's name field. */
    memset(comp200, 'q', 200);
    comp200[200] = '\0';
    names[0] = over100;
    names[1] = over255;
    names[2] = comp200;
    names[3] = utf8;
    ck_assert_uint_gt(strlen(over100), 100);
    ck_assert_uint_gt(strlen(over255), 255);
    for (size_t i = 0; i < 4; i++)
        add_mem(t, names[i], names[i], strlen(names[i]), 0644);
    prepare_and_read(t, 1 << 20, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 4);
    expect_only_regular(&l);
    for (size_t i = 0; i < 4; i++)
        expect_entry(&l, names[i], 0644, names[i], strlen(names[i]));
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
}
END_TEST

START_TEST(test_tarball_invalid_names_rejected)
{
    static const char *const bad[] = {"/abs", "a/../b", "a//b", "", "a/", "..", ".", "./a", "a/.", "a/..", "/",
                                      "//a", "a/./b"};
    static const char *const good[] = {"a", "a/b", "..a", "a..", ".hidden", "a/.b", "x/...", "sp ace"};
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx__err_clear(&err);
        ck_assert_msg(sbx__tar_add_memory(t, bad[i], "x", 1, 0644, &err) == SBX_E_INVALID_ARG, "accepted '%s'",
                      bad[i]);
        ck_assert_int_eq(err.code, SBX_E_INVALID_ARG);
        ck_assert_msg(sbx__tar_add_path(t, "/dev/null", bad[i], &err) == SBX_E_INVALID_ARG,
                      "add_path accepted '%s'", bad[i]);
    }
    ck_assert_uint_eq(sbx__tar_entries(t), 0);
    for (size_t i = 0; i < SBX__ARRAY_LEN(good); i++)
        ck_assert_msg(sbx__tar_add_memory(t, good[i], "x", 1, 0644, &err) == SBX_OK, "refused '%s'", good[i]);
    ck_assert_uint_eq(sbx__tar_entries(t), SBX__ARRAY_LEN(good));
    sbx__tar_free(t);
    sbx__err_free(&err);
}
END_TEST

/* ---- entries from a directory tree ------------------------------------------------- */

struct tree {
    char *root;    /* the tree added */
    char *outside; /* a sibling directory, outside it */
};

static const char alpha[] = "alpha\n";
static const char script[] = "#!/bin/sh\nexit 0\n";

static void make_tree(struct tree *tr, bool with_fifo)
{
    char *p;
    tr->outside = make_tmpdir();
    tr->root = make_tmpdir();
    write_file(tr->outside, "secret.txt", "outside!", 8, 0644);

    write_file(tr->root, "a.txt", alpha, sizeof alpha - 1, 0644);
    write_file(tr->root, "empty", "", 0, 0640);
    write_file(tr->root, "run.sh", script, sizeof script - 1, 0755);
    make_dir(tr->root, "sub");
    write_file(tr->root, "sub/b.txt", "bravo", 5, 0600);
    make_dir(tr->root, "sub/deeper");
    write_file(tr->root, "sub/deeper/c.txt", "charlie", 7, 0644);
    make_dir(tr->root, "emptydir");
    /* A link to a file in the tree, relative and absolute. */
    p = path_join(tr->root, "link-in");
    ck_assert_int_eq(symlink("sub/b.txt", p), 0);
    free(p);
    {
        char *target = path_join(tr->root, "run.sh");
        p = path_join(tr->root, "sub/abs-link");
        ck_assert_int_eq(symlink(target, p), 0);
        free(p);
        free(target);
    }
    /* A link out of the tree, and a dangling one. */
    {
        char *target = path_join(tr->outside, "secret.txt");
        p = path_join(tr->root, "link-out");
        ck_assert_int_eq(symlink(target, p), 0);
        free(p);
        free(target);
    }
    p = path_join(tr->root, "dangling");
    ck_assert_int_eq(symlink("no-such-file", p), 0);
    free(p);
    if (with_fifo) {
        p = path_join(tr->root, "sub/fifo");
        ck_assert_int_eq(mkfifo(p, 0644), 0);
        free(p);
    }
}

static void free_tree(struct tree *tr)
{
    rm_rf(tr->root);
    rm_rf(tr->outside);
    free(tr->root);
    free(tr->outside);
}

static void check_tree_listing(const struct listing *l, const char *prefix)
{
    char name[256];
    ck_assert_uint_eq(l->n, 7);
    expect_only_regular(l);
#define E(rel, perm, data, len)                                          \
    do {                                                                 \
        snprintf(name, sizeof name, "%s/%s", prefix, rel);               \
        expect_entry(l, name, perm, data, len);                          \
    } while (0)
    E("a.txt", 0644, alpha, sizeof alpha - 1);
    E("empty", 0640, "", 0);
    E("run.sh", 0755, script, sizeof script - 1);
    E("sub/b.txt", 0600, "bravo", 5);
    E("sub/deeper/c.txt", 0644, "charlie", 7);
    /* Links inside the tree become regular files with the target's bytes and mode. */
    E("link-in", 0600, "bravo", 5);
    E("sub/abs-link", 0755, script, sizeof script - 1);
#undef E
    for (size_t i = 0; i < l->n; i++) {
        ck_assert_ptr_null(strstr(l->v[i].name, "link-out"));
        ck_assert_ptr_null(strstr(l->v[i].name, "dangling"));
        ck_assert_ptr_null(strstr(l->v[i].name, "fifo"));
        ck_assert_ptr_null(strstr(l->v[i].name, "emptydir"));
        ck_assert(l->v[i].data.n != 8 || memcmp(l->v[i].data.p, "outside!", 8) != 0);
    }
}

static void tree_case(size_t mem_limit)
{
    struct tree tr;
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;

    make_tree(&tr, false);
    ck_assert_msg(sbx__tar_add_path(t, tr.root, "proj/app", &err) == SBX_OK, "%s", sbx__err_msg(&err));
    ck_assert_uint_eq(sbx__tar_entries(t), 7);
    ck_assert_uint_eq(sbx__tar_skipped(t), 2); /* link-out and dangling */
    prepare_and_read(t, mem_limit, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    check_tree_listing(&l, "proj/app");
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    free_tree(&tr);
}

START_TEST(test_tarball_tree_kept_body)
{
    tree_case(8u << 20);
}
END_TEST

START_TEST(test_tarball_tree_streamed_body)
{
    tree_case(0);
}
END_TEST

START_TEST(test_tarball_tree_skips_fifo)
{
    struct tree tr;
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;

    make_tree(&tr, true);
    ck_assert_msg(sbx__tar_add_path(t, tr.root, "app", &err) == SBX_OK, "%s", sbx__err_msg(&err));
    ck_assert_uint_eq(sbx__tar_entries(t), 7);
    /* Everything left out is counted: the two links and the fifo. */
    ck_assert_uint_eq(sbx__tar_skipped(t), 3);
    /* Opening the fifo would block: the read finishing proves it was not. */
    prepare_and_read(t, 0, odd_sizes + 1, 2, &body);
    list_body(&body, &l);
    check_tree_listing(&l, "app");
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    free_tree(&tr);
}
END_TEST

START_TEST(test_tarball_add_single_file_and_mixed)
{
    struct tree tr;
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;
    char *p;

    make_tree(&tr, false);
    p = path_join(tr.root, "run.sh");
    add_mem(t, "first.txt", "1", 1, 0644);
    ck_assert_int_eq(sbx__tar_add_path(t, p, "bin/tool", &err), SBX_OK);
    free(p);
    /* A link given directly is followed, wherever it points. */
    p = path_join(tr.root, "link-out");
    ck_assert_int_eq(sbx__tar_add_path(t, p, "given-link", &err), SBX_OK);
    free(p);
    add_mem(t, "last.txt", "2", 1, 0644);
    ck_assert_uint_eq(sbx__tar_entries(t), 4);
    prepare_and_read(t, 1 << 20, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 4);
    expect_entry(&l, "first.txt", 0644, "1", 1);
    expect_entry(&l, "bin/tool", 0755, script, sizeof script - 1);
    expect_entry(&l, "given-link", 0644, "outside!", 8);
    expect_entry(&l, "last.txt", 0644, "2", 1);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    free_tree(&tr);
}
END_TEST

START_TEST(test_tarball_add_path_missing)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    char *dir = make_tmpdir(), *missing = path_join(dir, "no-such-dir");
    add_mem(t, "keep", "k", 1, 0644);
    ck_assert_int_eq(sbx__tar_add_path(t, missing, "x", &err), SBX_E_IO);
    ck_assert_int_eq(err.code, SBX_E_IO);
    ck_assert_msg(strstr(sbx__err_msg(&err), missing) != NULL, "'%s' does not name %s", sbx__err_msg(&err), missing);
    ck_assert_uint_eq(sbx__tar_entries(t), 1);
    /* Something that is neither a file, a pipe nor a directory. */
    sbx__err_clear(&err);
    {
        char *sock = path_join(dir, "sock");
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_uint_lt(strlen(sock), sizeof a.sun_path);
        strcpy(a.sun_path, sock);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
        ck_assert_int_eq(sbx__tar_add_path(t, sock, "x", &err), SBX_E_IO);
        ck_assert_ptr_nonnull(strstr(sbx__err_msg(&err), sock));
        close(fd);
        free(sock);
    }
    ck_assert_uint_eq(sbx__tar_entries(t), 1);
    sbx__tar_free(t);
    sbx__err_free(&err);
    rm_rf(dir);
    free(dir);
    free(missing);
}
END_TEST

/* Files that say 0 bytes but hold more (/proc, /sys) and pipes: read to
 * their end when added, not trusted to be empty. */
START_TEST(test_tarball_add_path_unknown_size)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;
    const struct entry_out *e;
    char *dir = make_tmpdir(), *fifo = path_join(dir, "pipe"), *empty = path_join(dir, "empty");
    static const char piped[] = "through a pipe\n";
    pid_t pid;
    int fd;

    ck_assert_int_eq(sbx__tar_add_path(t, "/proc/self/status", "status", &err), SBX_OK);
    /* A truly empty file stays empty. */
    fd = open(empty, O_WRONLY | O_CREAT | O_EXCL, 0640);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(sbx__tar_add_path(t, empty, "empty", &err), SBX_OK);
    /* A pipe, fed by a child. */
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int w;
        alarm(10); /* never left blocked if the reader fails */
        w = open(fifo, O_WRONLY);
        _exit(w >= 0 && write(w, piped, sizeof piped - 1) == (ssize_t)(sizeof piped - 1) ? 0 : 1);
    }
    ck_assert_int_eq(sbx__tar_add_path(t, fifo, "piped", &err), SBX_OK);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);

    prepare_and_read(t, 1 << 20, odd_sizes, SBX__ARRAY_LEN(odd_sizes), &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 3);
    e = find(&l, "status");
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(e->size > 0 && e->data.n == (size_t)e->size, "status: %lld bytes", (long long)e->size);
    ck_assert_msg(memcmp(e->data.p, "Name:", 5) == 0, "status does not start with Name:");
    ck_assert_uint_eq(e->perm, 0444);
    expect_entry(&l, "empty", 0640, "", 0);
    expect_entry(&l, "piped", 0600, piped, sizeof piped - 1);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    rm_rf(dir);
    free(dir);
    free(fifo);
    free(empty);
}
END_TEST

/* A file of unknown size is read into memory: not past the limit. */
START_TEST(test_tarball_add_path_unknown_size_limited)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    ck_assert_int_eq(sbx__tar_add_path(t, "/dev/zero", "zero", &err), SBX_E_BUDGET_EXCEEDED);
    ck_assert_msg(strstr(sbx__err_msg(&err), "/dev/zero") != NULL, "%s", sbx__err_msg(&err));
    ck_assert_uint_eq(sbx__tar_entries(t), 0);
    sbx__tar_free(t);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_tarball_failed_add_path_adds_nothing)
{
    /* 140 nested directories, each with files: the walk fails past its depth
     * limit after many files were listed, and all of them are dropped. */
    char *root = make_tmpdir();
    char *cur = strdup(root);
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;

    for (int i = 0; i < 140; i++) {
        char *next;
        make_dir(cur, "d");
        write_file(cur, "f1", "x", 1, 0644);
        write_file(cur, "f2", "y", 1, 0644);
        next = path_join(cur, "d");
        free(cur);
        cur = next;
    }
    add_mem(t, "before", "b", 1, 0644);
    ck_assert_int_eq(sbx__tar_add_path(t, root, "deep", &err), SBX_E_IO);
    ck_assert_ptr_nonnull(strstr(sbx__err_msg(&err), "deeper"));
    ck_assert_uint_eq(sbx__tar_entries(t), 1);
    /* The tar still works, with just the earlier entry. */
    prepare_and_read(t, 1 << 20, odd_sizes + 2, 1, &body);
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 1);
    expect_entry(&l, "before", 0644, "b", 1);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    rm_rf(root);
    free(root);
    free(cur);
}
END_TEST

/* ---- size, replay, rewind ---------------------------------------------------------- */

#define BIG (12u << 20)
#define KEEP (8u << 20)

START_TEST(test_tarball_big_file_not_kept)
{
    char *dir = make_tmpdir(), *p;
    unsigned char *data = malloc(BIG);
    static const size_t sizes[] = {4096, 65537};
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body;
    struct listing l;

    ck_assert_ptr_nonnull(data);
    fill_random(data, BIG, 42);
    write_file(dir, "big.bin", data, BIG, 0644);
    p = path_join(dir, "big.bin");
    ck_assert_int_eq(sbx__tar_add_path(t, p, "big.bin", &err), SBX_OK);
    add_mem(t, "small.txt", "small", 5, 0644);
    prepare_and_read(t, KEEP, sizes, SBX__ARRAY_LEN(sizes), &body);
    ck_assert_uint_gt(body.n, KEEP); /* too big to be kept: generated while read */
    list_body(&body, &l);
    ck_assert_uint_eq(l.n, 2);
    expect_entry(&l, "big.bin", 0644, data, BIG);
    expect_entry(&l, "small.txt", 0644, "small", 5);
    listing_free(&l);
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    free(p);
    free(data);
    rm_rf(dir);
    free(dir);
}
END_TEST

/* The level follows the data: random bytes are stored (the body is their
 * size plus the framing), text is compressed, also when it follows random
 * bytes in the next file; the body is the same bytes however it is read
 * and after a rewind. */
START_TEST(test_tarball_level_follows_the_data)
{
    enum { RND = 10u << 20, TXT = 3u << 20 };
    size_t n = 0;
    unsigned char *text = malloc(TXT), *rnd = malloc(RND);
    char *dir = make_tmpdir(), *p;
    static const size_t sizes[] = {65536, 1000003};
    sbx__tar *t = sbx__tar_new(), *r = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body, rbody;
    struct listing l;

    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(rnd);
    /* text: numbered lines, which deflate shrinks several times */
    while (n < TXT) {
        char line[64];
        int k = snprintf(line, sizeof line, "line %zu: the quick brown fox\n", n);
        size_t m = TXT - n < (size_t)k ? TXT - n : (size_t)k;
        memcpy(text + n, line, m);
        n += m;
    }
    fill_random(rnd, RND, 11);
    make_dir(dir, "mixed");
    write_file(dir, "mixed/1.txt", text, TXT, 0644);
    write_file(dir, "mixed/2.bin", rnd, RND, 0644);
    write_file(dir, "mixed/3.txt", text, TXT, 0644);
    p = path_join(dir, "mixed");
    ck_assert_int_eq(sbx__tar_add_path(t, p, "mixed", &err), SBX_OK);
    prepare_and_read(t, 0, sizes, SBX__ARRAY_LEN(sizes), &body);
    list_body(&body, &l);
    expect_entry(&l, "mixed/1.txt", 0644, text, TXT);
    expect_entry(&l, "mixed/2.bin", 0644, rnd, RND);
    expect_entry(&l, "mixed/3.txt", 0644, text, TXT);
    /* The random file costs about its size (stored, and one unit in 32
     * tried at level 1); each text file less than a fifth of its own. */
    ck_assert_msg(body.n < RND + RND / 50 + 2 * (TXT / 5), "body %zu bytes for %zu random and %zu text", body.n,
                  (size_t)RND, (size_t)(2 * TXT));
    listing_free(&l);
    /* Random alone: stored, so hardly larger than the bytes. */
    free(p);
    p = path_join(dir, "mixed/2.bin");
    ck_assert_int_eq(sbx__tar_add_path(r, p, "random.bin", &err), SBX_OK);
    prepare_and_read(r, 0, sizes, 1, &rbody);
    ck_assert_msg(rbody.n < (size_t)RND + RND / 100, "random: body %zu bytes for %zu", rbody.n, (size_t)RND);
    bytes_free(&body);
    bytes_free(&rbody);
    sbx__tar_free(t);
    sbx__tar_free(r);
    sbx__err_free(&err);
    free(p);
    free(text);
    free(rnd);
    rm_rf(dir);
    free(dir);
}
END_TEST

START_TEST(test_tarball_prepare_twice_same_size)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    uint64_t s1 = 0, s2 = 0;
    struct bytes b = {0};
    add_mem(t, "a", "abc", 3, 0644);
    ck_assert_int_eq(sbx__tar_prepare(t, 1 << 20, &s1, &err), SBX_OK);
    ck_assert_int_eq(sbx__tar_prepare(t, 0, &s2, &err), SBX_OK);
    ck_assert_uint_eq(s1, s2);
    ck_assert(read_body(t, 4096, &b));
    ck_assert_uint_eq(b.n, s2);
    bytes_free(&b);
    sbx__tar_free(t);
    sbx__err_free(&err);
}
END_TEST

static void wait_next_second(void)
{
    time_t now = time(NULL);
    while (time(NULL) == now)
        usleep(20000);
}

/* The body is generated again for a retry: it must be the same bytes, as the
 * header promises, even a second later. */
static void rewind_identical(size_t mem_limit)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    uint64_t size = 0;
    struct bytes a = {0}, b = {0}, half = {0};
    char buf[100];
    size_t k;

    add_mem(t, "one.txt", "one\n", 4, 0644);
    add_mem(t, "two/three.txt", "three\n", 6, 0755);
    ck_assert_int_eq(sbx__tar_prepare(t, mem_limit, &size, &err), SBX_OK);
    ck_assert(read_body(t, 4096, &a));
    ck_assert_uint_eq(a.n, size);
    /* A rewind in the middle of a read, and one after the end. */
    ck_assert_int_eq(sbx__tar_rewind(t), 0);
    k = sbx__tar_read(t, buf, sizeof buf);
    ck_assert_uint_gt(k, 0);
    ck_assert_uint_ne(k, SIZE_MAX);
    bytes_add(&half, buf, k);
    wait_next_second();
    ck_assert_int_eq(sbx__tar_rewind(t), 0);
    ck_assert_msg(read_body(t, 7, &b), "%s", sbx__tar_error(t));
    ck_assert_uint_eq(b.n, a.n);
    ck_assert_msg(memcmp(a.p, b.p, a.n) == 0, "the body read after a rewind is not the same bytes");
    ck_assert(memcmp(half.p, a.p, half.n) == 0);
    bytes_free(&a);
    bytes_free(&b);
    bytes_free(&half);
    sbx__tar_free(t);
    sbx__err_free(&err);
}

START_TEST(test_tarball_rewind_identical_kept)
{
    rewind_identical(1 << 20);
}
END_TEST

START_TEST(test_tarball_rewind_identical_streamed)
{
    rewind_identical(0);
}
END_TEST

/* ---- files that change between prepare and read ------------------------------------- */

struct changing {
    char *dir, *path;
    sbx__tar *t;
    sbx__err err;
};

static void changing_setup(struct changing *c, size_t len)
{
    unsigned char *data = malloc(len);
    ck_assert_ptr_nonnull(data);
    fill_random(data, len, 99);
    c->dir = make_tmpdir();
    write_file(c->dir, "changing.bin", data, len, 0644);
    free(data);
    c->path = path_join(c->dir, "changing.bin");
    c->t = sbx__tar_new();
    memset(&c->err, 0, sizeof c->err);
    add_mem(c->t, "before.txt", "b", 1, 0644);
    ck_assert_int_eq(sbx__tar_add_path(c->t, c->path, "changing.bin", &c->err), SBX_OK);
}

static void changing_free(struct changing *c)
{
    sbx__tar_free(c->t);
    sbx__err_free(&c->err);
    rm_rf(c->dir);
    free(c->dir);
    free(c->path);
}

START_TEST(test_tarball_file_shrinks_after_prepare)
{
    struct changing c;
    uint64_t size = 0;
    struct bytes b = {0};
    changing_setup(&c, 256 * 1024);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 0, &size, &c.err), SBX_OK);
    ck_assert_int_eq(truncate(c.path, 100 * 1024), 0);
    ck_assert_msg(!read_body(c.t, 4096, &b), "the body was read whole although a file shrank");
    ck_assert_uint_le(b.n, size);
    ck_assert_msg(strstr(sbx__tar_error(c.t), c.path) != NULL, "the error '%s' does not name %s",
                  sbx__tar_error(c.t), c.path);
    /* Failed for good, until a rewind. */
    ck_assert_uint_eq(sbx__tar_read(c.t, (char[16]){0}, 16), SIZE_MAX);
    bytes_free(&b);
    changing_free(&c);
}
END_TEST

START_TEST(test_tarball_file_shrinks_while_read)
{
    struct changing c;
    uint64_t size = 0;
    struct bytes b = {0};
    char buf[4096];
    size_t k;
    changing_setup(&c, 2 * 1024 * 1024);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 0, &size, &c.err), SBX_OK);
    /* The first bytes out: the file is open and partly read. */
    k = sbx__tar_read(c.t, buf, sizeof buf);
    ck_assert_uint_gt(k, 0);
    ck_assert_uint_ne(k, SIZE_MAX);
    ck_assert_int_eq(truncate(c.path, 0), 0);
    ck_assert(!read_body(c.t, 4096, &b));
    ck_assert_msg(strstr(sbx__tar_error(c.t), c.path) != NULL, "the error '%s' does not name %s",
                  sbx__tar_error(c.t), c.path);
    ck_assert_ptr_nonnull(strstr(sbx__tar_error(c.t), "shrank"));
    bytes_free(&b);
    changing_free(&c);
}
END_TEST

START_TEST(test_tarball_file_grows_after_prepare)
{
    struct changing c;
    uint64_t size = 0;
    struct bytes b = {0};
    unsigned char more[64 * 1024];
    int fd;
    changing_setup(&c, 256 * 1024);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 0, &size, &c.err), SBX_OK);
    fill_random(more, sizeof more, 5);
    fd = open(c.path, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, more, sizeof more), (ssize_t)sizeof more);
    close(fd);
    /* More bytes than announced would make the Content-Length a lie. */
    ck_assert_msg(!read_body(c.t, 4096, &b), "the body was read whole although a file grew");
    ck_assert_uint_le(b.n, size);
    ck_assert_str_ne(sbx__tar_error(c.t), "");
    /* A rewind and a new prepare take the new size. */
    bytes_free(&b);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 0, &size, &c.err), SBX_OK);
    ck_assert(read_body(c.t, 4096, &b));
    ck_assert_uint_eq(b.n, size);
    bytes_free(&b);
    changing_free(&c);
}
END_TEST

START_TEST(test_tarball_kept_body_replays_prepared_bytes)
{
    /* A kept body is what prepare saw, whatever happens to the files later. */
    struct changing c;
    uint64_t size = 0;
    struct bytes b = {0};
    struct listing l;
    unsigned char *orig = malloc(64 * 1024);
    changing_setup(&c, 64 * 1024);
    ck_assert_ptr_nonnull(orig);
    fill_random(orig, 64 * 1024, 99);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 1 << 20, &size, &c.err), SBX_OK);
    ck_assert_int_eq(truncate(c.path, 10), 0);
    ck_assert(read_body(c.t, 4096, &b));
    ck_assert_uint_eq(b.n, size);
    list_body(&b, &l);
    expect_entry(&l, "changing.bin", 0644, orig, 64 * 1024);
    listing_free(&l);
    bytes_free(&b);
    free(orig);
    changing_free(&c);
}
END_TEST

START_TEST(test_tarball_file_removed_after_listing)
{
    struct changing c;
    uint64_t size = 0;
    changing_setup(&c, 1000);
    ck_assert_int_eq(unlink(c.path), 0);
    ck_assert_int_eq(sbx__tar_prepare(c.t, 1 << 20, &size, &c.err), SBX_E_IO);
    ck_assert_ptr_nonnull(strstr(sbx__err_msg(&c.err), c.path));
    changing_free(&c);
}
END_TEST

/* ---- out of memory ----------------------------------------------------------------- */

struct oom_tar {
    size_t mem_limit;
    size_t bufsize;
    const char *tree; /* add this directory too, when set */
};

static sbx_status oom_build_and_read(void *ctx)
{
    struct oom_tar *o = ctx;
    unsigned char blob[3000];
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body = {0};
    struct listing l;
    uint64_t size = 0;
    sbx_status st = SBX_OK;
    size_t before;

    if (!t)
        return SBX_E_NOMEM;
    fill_random(blob, sizeof blob, 3);
    st = sbx__tar_add_memory(t, "a.txt", "alpha", 5, 0644, &err);
    if (st == SBX_OK)
        st = sbx__tar_add_memory(t, "dir/blob", blob, sizeof blob, 0600, &err);
    for (int i = 0; st == SBX_OK && i < 20; i++) { /* enough to grow the entry array */
        char name[32];
        snprintf(name, sizeof name, "many/%02d", i);
        st = sbx__tar_add_memory(t, name, name, strlen(name), 0644, &err);
    }
    before = sbx__tar_entries(t);
    if (st == SBX_OK && o->tree) {
        st = sbx__tar_add_path(t, o->tree, "tree", &err);
        if (st != SBX_OK)
            ck_assert_uint_eq(sbx__tar_entries(t), before); /* all or nothing */
    }
    if (st == SBX_OK)
        st = sbx__tar_prepare(t, o->mem_limit, &size, &err);
    if (st == SBX_OK && !read_body(t, o->bufsize, &body)) {
        ck_assert_msg(strstr(sbx__tar_error(t), "out of memory") != NULL, "read failed: %s", sbx__tar_error(t));
        st = SBX_E_NOMEM;
    }
    if (st == SBX_OK) {
        ck_assert_uint_eq(body.n, size);
        list_body(&body, &l);
        ck_assert_uint_eq(l.n, o->tree ? 29 : 22);
        expect_entry(&l, "dir/blob", 0600, blob, sizeof blob);
        listing_free(&l);
    } else {
        ck_assert_int_eq(err.code == SBX_OK ? SBX_E_NOMEM : err.code, st);
    }
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    return st;
}

/* A file of unknown size read into memory, under every allocation failure. */
static sbx_status oom_unknown_size(void *ctx)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct bytes body = {0};
    struct listing l;
    uint64_t size = 0;
    sbx_status st;
    (void)ctx;
    if (!t)
        return SBX_E_NOMEM;
    st = sbx__tar_add_path(t, "/proc/self/status", "status", &err);
    if (st == SBX_OK)
        st = sbx__tar_prepare(t, 1 << 20, &size, &err);
    if (st == SBX_OK && !read_body(t, 4096, &body)) {
        ck_assert_msg(strstr(sbx__tar_error(t), "out of memory") != NULL, "read failed: %s", sbx__tar_error(t));
        st = SBX_E_NOMEM;
    }
    if (st == SBX_OK) {
        const struct entry_out *e;
        list_body(&body, &l);
        e = find(&l, "status");
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(e->size > 0, "status arrived empty");
        listing_free(&l);
    } else {
        ck_assert_int_eq(err.code == SBX_OK ? SBX_E_NOMEM : err.code, st);
    }
    bytes_free(&body);
    sbx__tar_free(t);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_tarball_out_of_memory_unknown_size)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_unknown_size, NULL), 2);
}
END_TEST

START_TEST(test_tarball_out_of_memory_kept)
{
    struct oom_tar o = {1 << 20, 7, NULL};
    ck_assert_int_gt(sbx_test_oom_loop(oom_build_and_read, &o), 20);
}
END_TEST

START_TEST(test_tarball_out_of_memory_streamed)
{
    struct oom_tar o = {0, 4096, NULL};
    ck_assert_int_gt(sbx_test_oom_loop(oom_build_and_read, &o), 20);
}
END_TEST

START_TEST(test_tarball_out_of_memory_with_tree)
{
    struct tree tr;
    struct oom_tar o = {0, 4096, NULL};
    make_tree(&tr, false);
    o.tree = tr.root;
    ck_assert_int_gt(sbx_test_oom_loop(oom_build_and_read, &o), 30);
    free_tree(&tr);
}
END_TEST

/* libarchive is loaded when first needed: the table is complete, and a
 * library that is missing or is not libarchive gives a message that says
 * what to install, never a crash. */
START_TEST(test_tarball_archive_loader)
{
    static const char *const real[] = {"libarchive-none.so.99", SBX_LIBARCHIVE_SONAME, NULL};
    static const char *const missing[] = {"libarchive-none.so.99", NULL};
    static const char *const other[] = {"libz.so.1", NULL};
    struct sbx__archive_api api;
    char buf[512];
    const char *why = NULL;
    const struct sbx__archive_api *shared;

    memset(&api, 0, sizeof api);
    ck_assert_int_eq(sbx__archive_load(real, &api, buf, sizeof buf, &why), 0);
    /* Every member filled: the struct is all function pointers. */
    for (size_t i = 0; i < sizeof api / sizeof(void (*)(void)); i++) {
        void (*f)(void);
        memcpy(&f, (char *)&api + i * sizeof f, sizeof f);
        ck_assert_msg(f != NULL, "member %zu of the table is NULL", i);
    }
    ck_assert_ptr_eq(api.write_new, archive_write_new); /* the same library this test links */

    ck_assert_int_eq(sbx__archive_load(missing, &api, buf, sizeof buf, &why), -1);
    ck_assert_msg(strstr(why, "libarchive-none.so.99") && strstr(why, "apt-get install -y libarchive13"),
                  "message: %s", why);
    ck_assert_int_eq(sbx__archive_load(other, &api, buf, sizeof buf, &why), -1);
    ck_assert_msg(strstr(why, "libz.so.1") && strstr(why, "lacks archive_write_new"), "message: %s", why);

    shared = sbx__archive_api(&why);
    ck_assert_ptr_nonnull(shared);
    ck_assert_ptr_eq(sbx__archive_api(NULL), shared);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("tarball");
    TCase *mem = tcase_create("memory");
    TCase *tree = tcase_create("tree");
    TCase *size = tcase_create("size");
    TCase *change = tcase_create("change");
    TCase *oom = tcase_create("oom");

    SBX_TEST_ADD(mem, test_tarball_memory_entries_kept_body);
    SBX_TEST_ADD(mem, test_tarball_memory_entries_streamed_body);
    SBX_TEST_ADD(mem, test_tarball_memory_data_is_copied);
    SBX_TEST_ADD(mem, test_tarball_empty_tar);
    SBX_TEST_ADD(mem, test_tarball_read_without_prepare);
    SBX_TEST_ADD(mem, test_tarball_long_and_non_ascii_names);
    SBX_TEST_ADD(mem, test_tarball_invalid_names_rejected);
    SBX_TEST_ADD(mem, test_tarball_archive_loader);
    tcase_set_timeout(mem, 60);
    suite_add_tcase(s, mem);

    SBX_TEST_ADD(tree, test_tarball_tree_kept_body);
    SBX_TEST_ADD(tree, test_tarball_tree_streamed_body);
    SBX_TEST_ADD(tree, test_tarball_tree_skips_fifo);
    SBX_TEST_ADD(tree, test_tarball_add_single_file_and_mixed);
    SBX_TEST_ADD(tree, test_tarball_add_path_missing);
    SBX_TEST_ADD(tree, test_tarball_add_path_unknown_size);
    SBX_TEST_ADD(tree, test_tarball_add_path_unknown_size_limited);
    SBX_TEST_ADD(tree, test_tarball_failed_add_path_adds_nothing);
    tcase_set_timeout(tree, 60);
    suite_add_tcase(s, tree);

    SBX_TEST_ADD(size, test_tarball_big_file_not_kept);
    SBX_TEST_ADD(size, test_tarball_level_follows_the_data);
    SBX_TEST_ADD(size, test_tarball_prepare_twice_same_size);
    SBX_TEST_ADD(size, test_tarball_rewind_identical_kept);
    SBX_TEST_ADD(size, test_tarball_rewind_identical_streamed);
    tcase_set_timeout(size, 600);
    suite_add_tcase(s, size);

    SBX_TEST_ADD(change, test_tarball_file_shrinks_after_prepare);
    SBX_TEST_ADD(change, test_tarball_file_shrinks_while_read);
    SBX_TEST_ADD(change, test_tarball_file_grows_after_prepare);
    SBX_TEST_ADD(change, test_tarball_kept_body_replays_prepared_bytes);
    SBX_TEST_ADD(change, test_tarball_file_removed_after_listing);
    tcase_set_timeout(change, 60);
    suite_add_tcase(s, change);

    SBX_TEST_ADD(oom, test_tarball_out_of_memory_kept);
    SBX_TEST_ADD(oom, test_tarball_out_of_memory_streamed);
    SBX_TEST_ADD(oom, test_tarball_out_of_memory_with_tree);
    SBX_TEST_ADD(oom, test_tarball_out_of_memory_unknown_size);
    tcase_set_timeout(oom, 600);
    suite_add_tcase(s, oom);
    return s;
}
