/* SPDX-License-Identifier: MIT */
/*
 * tarball: the gzip tar that fs/write takes, generated while it is sent.
 *
 * libarchive writes the tar (push); the HTTP engine reads (pull).
 * sbx__tar_read() bridges them: when the caller wants bytes and none are
 * ready, it advances the writer by one step (an entry header, or one chunk
 * of one file) and hands out what came out of the compressor. So one chunk
 * of input, one unit of tar and its compressed form are in memory (under
 * 2 MiB with zlib's state), whatever the size of the files.
 *
 * The gzip stream is made here with zlib, not with libarchive's gzip
 * filter, for speed: the body is generated twice (once to learn its
 * Content-Length, once while it is sent), and libarchive's filter runs
 * zlib's level 6, which compresses text at about 10 MB/s and random bytes
 * at about 50 MB/s, on each pass. Here the tar is compressed at level 1
 * (text at ~100 MB/s, to about 1.2 times the size level 6 gives), in units
 * of UNIT bytes; after a unit that level 1 did not shrink by 3% (data
 * compressed already, or random) the units are stored (level 0: a copy),
 * and level 1 is tried again every PROBE_EVERY stored units and after the
 * start of each file. The decisions depend only on the bytes, and every
 * deflate() call gets the same input and output space on each pass, so a
 * body generated again is the same bytes, as its Content-Length requires.
 * The stream stays one gzip member: libdeflate, faster still, compresses
 * whole buffers only, and a stream of members, valid gzip, is read only up
 * to its first member by some decoders.
 *
 * Entries follow the protocol: regular files only (the server makes the
 * parent directories), names relative and normalised, ustar with a PAX
 * header when a name is long or not ASCII (libarchive's pax_restricted).
 * A file's size is taken when it is opened; if it then shrinks, the body
 * fails instead of padding a lie. A file named directly whose size cannot
 * be trusted (st_size 0, as /proc and /sys give; a pipe; a character
 * device) is read to its end when it is added, up to SLURP_MAX bytes.
 */
#include "util/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "client/archive_dl.h"
#include "util/buf.h"
#include "client/tarball.h"

#define CHUNK (256 * 1024)  /* a file is read this much at a time */
#define UNIT (256 * 1024)   /* tar bytes compressed at a time, and judged */
#define ZOUT (64 * 1024)    /* the output space of every deflate() call */
#define WIRE_LEVEL 1        /* zlib's level for units worth compressing */
#define PROBE_EVERY 32      /* stored units before level 1 is tried again */
#define MAX_DEPTH 128
#define SLURP_MAX ((size_t)64 << 20) /* what a file of unknown size may hold */

struct entry {
    char *name;          /* in the archive */
    char *local;         /* file to read, or NULL for data */
    char *data;
    size_t len;
    uint32_t mode;
    bool sized;          /* a file's size, as the first pass found it */
    int64_t size;
};

struct sbx__tar {
    struct entry *v;
    size_t n, cap;
    size_t skipped;
    time_t mtime;
    /* generation */
    const struct sbx__archive_api *ar; /* libarchive, loaded on first use */
    struct archive *a;
    sbx__buf out;        /* produced; read from out_off on */
    size_t out_off;
    z_stream zs;         /* the gzip stream, open when z_open */
    bool z_open;
    unsigned char *stage; /* tar bytes not yet compressed: up to UNIT */
    size_t staged;
    int level;           /* of the next unit: WIRE_LEVEL or 0 */
    unsigned stored_units; /* since level 1 was last tried */
    size_t next;         /* next entry to start */
    struct entry *cur;   /* entry being written */
    int fd;
    uint64_t remaining;  /* bytes of cur still to write */
    size_t data_off;
    bool closed, failed;
    bool no_archive;     /* libarchive could not be loaded */
    char *chunk;
    char error[512];
    /* a body small enough to keep: rendered once, replayed from memory */
    sbx__buf whole;
    size_t whole_off;
    bool use_whole;
    uint64_t expected, emitted; /* size announced by prepare, bytes read */
};

sbx__tar *sbx__tar_new(void)
{
    sbx__tar *t = sbx__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->fd = -1;
    t->mtime = time(NULL);
    t->expected = UINT64_MAX;
    return t;
}

static sbx_status push(sbx__tar *t, const char *name, const char *local, const void *data, size_t len,
                       uint32_t mode, sbx__err *err)
{
    struct entry *e;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct entry *v = sbx__realloc(t->v, cap * sizeof *v);
        if (!v)
            return sbx__err_nomem(err);
        t->v = v;
        t->cap = cap;
    }
    e = &t->v[t->n];
    memset(e, 0, sizeof *e);
    e->mode = mode & 07777;
    e->len = len;
    e->name = sbx__strdup(name);
    e->local = local ? sbx__strdup(local) : NULL;
    e->data = local ? NULL : sbx__memdup(data ? data : "", len);
    if (!e->name || (local && !e->local) || (!local && !e->data)) {
        sbx__free(e->name);
        sbx__free(e->local);
        sbx__free(e->data);
        return sbx__err_nomem(err);
    }
    t->n++;
    return SBX_OK;
}

static bool name_ok(const char *name)
{
    /* Relative, normalised: no empty, "." or ".." component. */
    const char *p = name;
    if (!*name || *name == '/')
        return false;
    while (*p) {
        const char *s = strchr(p, '/');
        size_t n = s ? (size_t)(s - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n;
        if (*p == '/')
            p++;
        if (s && !*p)
            return false; /* trailing slash */
    }
    return true;
}

sbx_status sbx__tar_add_memory(sbx__tar *t, const char *name, const void *data, size_t len, uint32_t mode,
                               sbx__err *err)
{
    if (!name_ok(name))
        return sbx__err_set(err, SBX_E_INVALID_ARG, "tar entry name '%s' is not a normalised relative path",
                            name);
    if (t->a)
        return sbx__err_set(err, SBX_E_MISUSE, "entries cannot be added once the tar is being read");
    return push(t, name, NULL, data, len, mode, err);
}

/* Whether path lies inside root (both canonical). */
static bool inside(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (strcmp(root, "/") == 0)
        return true;
    return strncmp(root, path, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static sbx_status walk(sbx__tar *t, const char *root, sbx__buf *local, sbx__buf *name, int depth,
                       sbx__err *err)
{
    DIR *d;
    struct dirent *de;
    sbx_status st = SBX_OK;
    size_t llen = local->len, nlen = name->len;

    if (depth > MAX_DEPTH)
        return sbx__err_set(err, SBX_E_IO, "%s: directories nested deeper than %d", local->data, MAX_DEPTH);
    d = opendir(local->data);
    if (!d)
        return sbx__err_set(err, SBX_E_IO, "%s: %s", local->data, strerror(errno));
    while (st == SBX_OK && (errno = 0, de = readdir(d)) != NULL) {
        struct stat sb;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (sbx__buf_printf(local, "/%s", de->d_name) != SBX_OK ||
            sbx__buf_printf(name, "/%s", de->d_name) != SBX_OK) {
            st = sbx__err_nomem(err);
            break;
        }
        if (lstat(local->data, &sb) != 0) {
            st = sbx__err_set(err, SBX_E_IO, "%s: %s", local->data, strerror(errno));
        } else if (S_ISDIR(sb.st_mode)) {
            st = walk(t, root, local, name, depth + 1, err);
        } else if (S_ISREG(sb.st_mode)) {
            st = push(t, name->data, local->data, NULL, 0, (uint32_t)sb.st_mode, err);
        } else if (S_ISLNK(sb.st_mode)) {
            /* Followed only to a regular file inside the tree. */
            char *real = realpath(local->data, NULL);
            struct stat tb;
            if (real && inside(root, real) && stat(real, &tb) == 0 && S_ISREG(tb.st_mode))
                st = push(t, name->data, real, NULL, 0, (uint32_t)tb.st_mode, err);
            else
                t->skipped++;
            free(real);
        } else {
            t->skipped++; /* sockets, fifos, devices */
        }
        sbx__buf_truncate(local, llen);
        sbx__buf_truncate(name, nlen);
    }
    if (st == SBX_OK && errno != 0)
        st = sbx__err_set(err, SBX_E_IO, "%s: %s", local->data, strerror(errno));
    closedir(d);
    return st;
}

/* Add local, read to its end now, as an entry held in memory. */
static sbx_status add_slurped(sbx__tar *t, const char *local, const char *name, uint32_t mode, sbx__err *err)
{
    sbx__buf b;
    sbx_status st = SBX_OK;
    int fd = open(local, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return sbx__err_set(err, SBX_E_IO, "%s: %s", local, strerror(errno));
    sbx__buf_init(&b, SLURP_MAX);
    for (;;) {
        size_t want = SLURP_MAX - b.len < CHUNK ? SLURP_MAX - b.len : CHUNK;
        char one;
        ssize_t got;
        if (want == 0) { /* full: one byte more is one too many */
            while ((got = read(fd, &one, 1)) < 0 && errno == EINTR)
                ;
            if (got > 0)
                st = SBX_E_BUDGET_EXCEEDED;
            break;
        }
        if ((st = sbx__buf_reserve(&b, want)) != SBX_OK)
            break;
        got = read(fd, b.data + b.len, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = sbx__err_set(err, SBX_E_IO, "%s: %s", local, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        b.len += (size_t)got;
    }
    close(fd);
    if (st == SBX_E_BUDGET_EXCEEDED)
        st = sbx__err_set(err, st, "%s: its size is unknown (%s) and it holds more than %zu bytes", local,
                          "not a regular file, or one that says 0 bytes", SLURP_MAX);
    else if (st == SBX_E_NOMEM)
        st = sbx__err_set(err, st, SBX__NOMEM_TEXT);
    if (st == SBX_OK)
        st = push(t, name, NULL, b.data ? b.data : "", b.len, mode, err);
    sbx__buf_free(&b);
    return st;
}

sbx_status sbx__tar_add_path(sbx__tar *t, const char *local, const char *name, sbx__err *err)
{
    struct stat sb;
    sbx_status st;
    size_t before = t->n;

    if (!name_ok(name))
        return sbx__err_set(err, SBX_E_INVALID_ARG, "tar entry name '%s' is not a normalised relative path",
                            name);
    if (t->a)
        return sbx__err_set(err, SBX_E_MISUSE, "entries cannot be added once the tar is being read");
    if (stat(local, &sb) != 0)
        return sbx__err_set(err, SBX_E_IO, "%s: %s", local, strerror(errno));
    if (S_ISREG(sb.st_mode) && sb.st_size > 0)
        return push(t, name, local, NULL, 0, (uint32_t)sb.st_mode, err);
    /* /proc/self/status says 0 bytes and holds a page; a pipe says nothing. */
    if (S_ISREG(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode))
        return add_slurped(t, local, name, (uint32_t)sb.st_mode, err);
    if (!S_ISDIR(sb.st_mode))
        return sbx__err_set(err, SBX_E_IO, "%s: not a file, a pipe or a directory", local);
    {
        char *root = realpath(local, NULL);
        sbx__buf lb = SBX__BUF_INIT, nb = SBX__BUF_INIT;
        if (!root)
            return sbx__err_set(err, SBX_E_IO, "%s: %s", local, strerror(errno));
        if (sbx__buf_puts(&lb, root) != SBX_OK || sbx__buf_puts(&nb, name) != SBX_OK)
            st = sbx__err_nomem(err);
        else
            st = walk(t, root, &lb, &nb, 0, err);
        free(root);
        sbx__buf_free(&lb);
        sbx__buf_free(&nb);
    }
    if (st != SBX_OK) {
        /* All or nothing: drop what this call added. */
        while (t->n > before) {
            struct entry *e = &t->v[--t->n];
            sbx__free(e->name);
            sbx__free(e->local);
            sbx__free(e->data);
        }
    }
    return st;
}

/* ---- generation ----------------------------------------------------------------- */

static void fail(sbx__tar *t, const char *fmt, ...) SBX__PRINTF(2, 3);
static void fail(sbx__tar *t, const char *fmt, ...)
{
    if (!t->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->error, sizeof t->error, fmt, ap);
        va_end(ap);
    }
    t->failed = true;
}

/* zlib's memory through the library's allocator (fault injection sees it). */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return sbx__calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    sbx__free(p);
}

static bool z_start(sbx__tar *t)
{
    int r;
    memset(&t->zs, 0, sizeof t->zs);
    t->zs.zalloc = z_alloc;
    t->zs.zfree = z_free;
    /* 15 + 16: a gzip wrapper. Its header has no time and no name, so a
     * regenerated body is the same bytes. */
    r = deflateInit2(&t->zs, WIRE_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (r != Z_OK) {
        fail(t, "%s", r == Z_MEM_ERROR ? SBX__NOMEM_TEXT : "cannot start gzip");
        return false;
    }
    t->z_open = true;
    t->level = WIRE_LEVEL;
    t->stored_units = 0;
    return true;
}

/* Output space for one deflate() call: always ZOUT bytes, so that both
 * passes make the same calls. */
static bool z_room(sbx__tar *t)
{
    if (sbx__buf_reserve(&t->out, ZOUT) != SBX_OK) {
        fail(t, SBX__NOMEM_TEXT);
        return false;
    }
    t->zs.next_out = (Bytef *)t->out.data + t->out.len;
    t->zs.avail_out = ZOUT;
    return true;
}

static void z_took(sbx__tar *t)
{
    t->out.len += ZOUT - t->zs.avail_out;
    t->out.data[t->out.len] = '\0'; /* the buffer's promise */
}

/* Compress the staged bytes (flush Z_NO_FLUSH or Z_FINISH) into out. */
static bool z_deflate(sbx__tar *t, int flush)
{
    int r;
    t->zs.next_in = t->stage;
    t->zs.avail_in = (uInt)t->staged;
    do {
        if (!z_room(t))
            return false;
        r = deflate(&t->zs, flush);
        z_took(t);
        if (r == Z_STREAM_ERROR) {
            fail(t, "gzip: %s", t->zs.msg ? t->zs.msg : "deflate failed");
            return false;
        }
    } while (flush == Z_FINISH ? r != Z_STREAM_END : t->zs.avail_in > 0 || t->zs.avail_out == 0);
    t->staged = 0;
    return true;
}

/* The level of the units that follow; the units before are flushed at
 * theirs (deflateParams ends their block, needing room for it). */
static bool z_level(sbx__tar *t, int level)
{
    int r, tries = 0;
    do {
        if (!z_room(t))
            return false;
        r = deflateParams(&t->zs, level, Z_DEFAULT_STRATEGY);
        z_took(t);
    } while (r == Z_BUF_ERROR && ++tries < 64);
    if (r != Z_OK) {
        fail(t, "gzip: cannot change the level (%d)", r);
        return false;
    }
    t->level = level;
    t->stored_units = 0;
    return true;
}

/* One UNIT staged: compress it, then choose the next unit's level. */
static bool z_unit(sbx__tar *t)
{
    uLong in = t->zs.total_in, out = t->zs.total_out;
    if (!z_deflate(t, Z_NO_FLUSH))
        return false;
    in = t->zs.total_in - in;
    out = t->zs.total_out - out;
    if (t->level != 0)
        /* Less than 3% saved: compressed already, or random. Send the
         * next ones as they are; compressing them only costs time. */
        return out + in / 32 >= in ? z_level(t, 0) : true;
    if (++t->stored_units >= PROBE_EVERY)
        return z_level(t, WIRE_LEVEL); /* the data may have changed */
    return true;
}

static la_ssize_t out_cb(struct archive *a, void *user, const void *buf, size_t n)
{
    sbx__tar *t = user;
    const char *p = buf;
    size_t left = n;
    while (left) {
        size_t k = UNIT - t->staged < left ? UNIT - t->staged : left;
        memcpy(t->stage + t->staged, p, k);
        t->staged += k;
        p += k;
        left -= k;
        if (t->staged == UNIT && !z_unit(t)) {
            t->ar->set_error(a, strstr(t->error, SBX__NOMEM_TEXT) ? ENOMEM : EIO, "%s", t->error);
            return -1;
        }
    }
    return (la_ssize_t)n;
}

static void close_cur(sbx__tar *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    t->cur = NULL;
}

static bool open_archive(sbx__tar *t)
{
    const char *why = NULL;
    if (!t->ar && !(t->ar = sbx__archive_api(&why))) {
        fail(t, "%s", why ? why : "libarchive could not be loaded");
        t->no_archive = true;
        return false;
    }
    if ((!t->chunk && !(t->chunk = sbx__malloc(CHUNK))) || (!t->stage && !(t->stage = sbx__malloc(UNIT)))) {
        fail(t, SBX__NOMEM_TEXT);
        return false;
    }
    if (!z_start(t))
        return false;
    t->a = t->ar->write_new();
    if (!t->a) {
        fail(t, SBX__NOMEM_TEXT);
        return false;
    }
    /* A plain tar, compressed by out_cb; no blocking (bytes_per_block 0):
     * each write reaches out_cb as it is, and the end of the archive is its
     * two zero blocks, without padding to 10 KiB. */
    if (t->ar->write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
        t->ar->write_set_format_option(t->a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
        t->ar->write_set_bytes_per_block(t->a, 0) != ARCHIVE_OK ||
        t->ar->write_open(t->a, t, NULL, out_cb, NULL) != ARCHIVE_OK) {
        fail(t, "cannot start the tar: %s", t->ar->error_string(t->a));
        return false;
    }
    return true;
}

static bool start_entry(sbx__tar *t, struct entry *e)
{
    struct archive_entry *ae = t->ar->entry_new();
    struct stat sb;
    int64_t size = (int64_t)e->len;
    int r;

    if (!ae) {
        fail(t, SBX__NOMEM_TEXT);
        return false;
    }
    /* Another file may compress where the last did not: the unit after
     * this one is tried at level 1. */
    if (t->level == 0)
        t->stored_units = PROBE_EVERY - 1;
    if (e->local) {
        t->fd = open(e->local, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (t->fd < 0 || fstat(t->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            t->ar->entry_free(ae);
            if (t->fd >= 0)
                close(t->fd);
            t->fd = -1;
            fail(t, "%s: cannot read it as a regular file", e->local);
            return false;
        }
        size = (int64_t)sb.st_size;
        if (e->sized && e->size != size) {
            t->ar->entry_free(ae);
            close(t->fd);
            t->fd = -1;
            fail(t, "%s: its size changed from %lld to %lld bytes while it was being uploaded", e->local,
                 (long long)e->size, (long long)size);
            return false;
        }
        e->sized = true;
        e->size = size;
    }
    /* Names are UTF-8 bytes already: stored as they are (hdrcharset
     * BINARY), so no conversion through the process's locale can fail. */
    t->ar->entry_copy_pathname(ae, e->name);
    t->ar->entry_set_filetype(ae, AE_IFREG);
    t->ar->entry_set_perm(ae, e->mode ? e->mode & 07777 : 0644);
    t->ar->entry_set_size(ae, size);
    t->ar->entry_set_mtime(ae, t->mtime, 0);
    t->ar->entry_set_uid(ae, 0);
    t->ar->entry_set_gid(ae, 0);
    r = t->ar->write_header(t->a, ae);
    t->ar->entry_free(ae);
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
        fail(t, "tar header: %s", t->ar->error_string(t->a));
        return false;
    }
    t->cur = e;
    t->remaining = (uint64_t)size;
    t->data_off = 0;
    return true;
}

/* One step of the writer; false when it failed. */
static bool step(sbx__tar *t)
{
    if (!t->a && !open_archive(t))
        return false;
    if (!t->cur) {
        if (t->next == t->n) {
            if (t->ar->write_close(t->a) != ARCHIVE_OK) {
                fail(t, "closing the tar: %s", t->ar->error_string(t->a));
                return false;
            }
            /* The last, partial unit, and the gzip trailer. */
            if (!z_deflate(t, Z_FINISH))
                return false;
            t->closed = true;
            return true;
        }
        return start_entry(t, &t->v[t->next++]);
    }
    if (t->remaining == 0) {
        if (t->ar->write_finish_entry(t->a) != ARCHIVE_OK) {
            fail(t, "tar entry: %s", t->ar->error_string(t->a));
            return false;
        }
        close_cur(t);
        return true;
    }
    {
        size_t want = t->remaining < CHUNK ? (size_t)t->remaining : CHUNK;
        const char *p;
        ssize_t got;
        if (t->fd >= 0) {
            do
                got = read(t->fd, t->chunk, want);
            while (got < 0 && errno == EINTR);
            if (got < 0) {
                fail(t, "%s: read failed: %s", t->cur->local, strerror(errno));
                return false;
            }
            if (got == 0) {
                fail(t, "%s: the file shrank while it was being sent", t->cur->local);
                return false;
            }
            p = t->chunk;
        } else {
            p = t->cur->data + t->data_off;
            got = (ssize_t)want;
            t->data_off += want;
        }
        if (t->ar->write_data(t->a, p, (size_t)got) != got) {
            fail(t, "tar data: %s", t->ar->error_string(t->a));
            return false;
        }
        t->remaining -= (uint64_t)got;
    }
    return true;
}

size_t sbx__tar_read(sbx__tar *t, char *buf, size_t n)
{
    size_t k;
    if (t->use_whole) {
        k = t->whole.len - t->whole_off < n ? t->whole.len - t->whole_off : n;
        memcpy(buf, t->whole.data + t->whole_off, k);
        t->whole_off += k;
        return k;
    }
    if (t->failed)
        return SIZE_MAX;
    while (t->out_off == t->out.len && !t->closed) {
        /* All handed out: the space is used again (a unit's worth). */
        sbx__buf_clear(&t->out);
        t->out_off = 0;
        if (!step(t))
            return SIZE_MAX;
    }
    k = t->out.len - t->out_off < n ? t->out.len - t->out_off : n;
    if (t->expected != UINT64_MAX &&
        (t->emitted + k > t->expected || (k == 0 && t->emitted != t->expected))) {
        /* A file changed between sizing and sending: the Content-Length
         * announced would be a lie. */
        fail(t, "%s", "the files changed while they were being uploaded");
        return SIZE_MAX;
    }
    memcpy(buf, t->out.data ? t->out.data + t->out_off : "", k);
    t->out_off += k;
    t->emitted += k;
    return k;
}

static void reset(sbx__tar *t)
{
    close_cur(t);
    if (t->a)
        t->ar->write_free(t->a);
    t->a = NULL;
    if (t->z_open)
        deflateEnd(&t->zs);
    t->z_open = false;
    t->staged = 0;
    sbx__buf_free(&t->out);
    t->out_off = 0;
    t->next = 0;
    t->emitted = 0;
    t->closed = t->failed = false;
    t->error[0] = '\0';
}

int sbx__tar_rewind(sbx__tar *t)
{
    t->whole_off = 0;
    reset(t);
    return 0;
}

sbx_status sbx__tar_prepare(sbx__tar *t, size_t mem_limit, uint64_t *size, sbx__err *err)
{
    uint64_t total = 0;
    bool keep = true;

    reset(t);
    sbx__buf_free(&t->whole);
    t->use_whole = false;
    t->expected = UINT64_MAX;
    for (size_t i = 0; i < t->n; i++) /* sizes are taken afresh */
        t->v[i].sized = false;
    while (!t->closed) {
        if (!step(t))
            break;
        total += t->out.len;
        if (keep && total <= mem_limit) {
            if (sbx__buf_append(&t->whole, t->out.data ? t->out.data : "", t->out.len) != SBX_OK)
                keep = false;
        } else {
            keep = false;
        }
        sbx__buf_clear(&t->out);
    }
    if (t->failed) {
        sbx_status st = sbx__err_set(err, sbx__tar_status(t), "%s", t->error);
        reset(t);
        sbx__buf_free(&t->whole);
        return st;
    }
    reset(t);
    if (keep) {
        t->use_whole = true;
        t->whole_off = 0;
    } else {
        sbx__buf_free(&t->whole);
    }
    t->expected = total;
    *size = total;
    return SBX_OK;
}

sbx_status sbx__tar_status(const sbx__tar *t)
{
    return t->no_archive ? SBX_E_UNSUPPORTED : strstr(t->error, SBX__NOMEM_TEXT) ? SBX_E_NOMEM : SBX_E_IO;
}

const char *sbx__tar_error(const sbx__tar *t)
{
    return t->error;
}

size_t sbx__tar_entries(const sbx__tar *t)
{
    return t->n;
}

size_t sbx__tar_skipped(const sbx__tar *t)
{
    return t->skipped;
}

void sbx__tar_free(sbx__tar *t)
{
    if (!t)
        return;
    reset(t);
    sbx__buf_free(&t->whole);
    for (size_t i = 0; i < t->n; i++) {
        sbx__free(t->v[i].name);
        sbx__free(t->v[i].local);
        sbx__free(t->v[i].data);
    }
    sbx__free(t->v);
    sbx__free(t->chunk);
    sbx__free(t->stage);
    sbx__free(t);
}
