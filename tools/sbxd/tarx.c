/* SPDX-License-Identifier: MIT */
/*
 * tarx: the host-side tar work of sbxd. Capture reads a stopped sandbox's
 * tree without following its symlinks; extraction validates every name and
 * uses libarchive's secure-extraction flags, because the archives come from
 * sandboxes or from the network.
 */
#include "tarx.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"

char *archive_clean_name(const char *name)
{
    sbx__buf b = SBX__BUF_INIT;
    const char *p = name;

    if (!name || name[0] == '/')
        return NULL;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            sbx__buf_free(&b);
            return NULL;
        }
        if (n && !(n == 1 && p[0] == '.') &&
            ((b.len && sbx__buf_putc(&b, '/') != SBX_OK) || sbx__buf_append(&b, p, n) != SBX_OK)) {
            /* Out of memory: a name cut short would name another file. */
            sbx__buf_free(&b);
            return NULL;
        }
        p += n + (slash ? 1 : 0);
    }
    if (!b.len) {
        sbx__buf_free(&b);
        return NULL;
    }
    return sbx__buf_detach(&b, NULL);
}

static bool skipped(const char *rel, const char *const *skip)
{
    size_t n = strcspn(rel, "/");
    for (size_t i = 0; skip && skip[i]; i++)
        if (strlen(skip[i]) == n && strncmp(rel, skip[i], n) == 0)
            return true;
    return false;
}

/* A regular file's bytes into the archive. With a sparse map (the disk
 * reader finds the holes) the pax writer takes the whole logical stream
 * and drops what falls in a hole: holes are fed from a block of zeros
 * instead of being read, so a file of terabytes of holes costs a few
 * million calls, not a read of every byte. */
static void copy_data(struct archive *w, struct archive_entry *e, int fd, char *buf, size_t cap)
{
    static const char zeros[1 << 20];
    la_int64_t off, len, at = 0, size = archive_entry_size(e);
    ssize_t n;
    if (archive_entry_sparse_reset(e) == 0) {
        while ((n = read(fd, buf, cap)) > 0)
            if (archive_write_data(w, buf, (size_t)n) < 0)
                return;
        return;
    }
    for (;;) {
        bool more = archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK;
        if (!more) { /* the hole after the last region, up to the size */
            off = size;
            len = 0;
        }
        while (at < off) {
            size_t k = off - at < (la_int64_t)sizeof zeros ? (size_t)(off - at) : sizeof zeros;
            if (archive_write_data(w, zeros, k) < 0)
                return;
            at += (la_int64_t)k;
        }
        for (; len > 0; at += n, len -= n) {
            n = pread(fd, buf, len < (la_int64_t)cap ? (size_t)len : cap, at);
            if (n <= 0 || archive_write_data(w, buf, (size_t)n) < 0)
                return;
        }
        if (!more)
            return;
    }
}

int archive_dir(const char *dir, const char *const *skip, const char *out, int64_t *size,
                char *err, size_t errlen)
{
    struct archive *disk = archive_read_disk_new(), *w = archive_write_new();
    struct archive_entry *e;
    size_t dirlen = strlen(dir);
    char tmp[4096];
    int rc = -1, fd;
    struct stat st;
    char buf[65536];

    snprintf(tmp, sizeof tmp, "%s.partial", out);
    if (!disk || !w) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* Links are stored, never followed, and the walk stays on the tree's own
     * file system. The tree must be quiet (no process of the sandbox left):
     * paths are opened by name. */
    archive_read_disk_set_symlink_physical(disk);
    archive_read_disk_set_behavior(disk, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS | ARCHIVE_READDISK_NO_XATTR |
                                             ARCHIVE_READDISK_NO_ACL | ARCHIVE_READDISK_NO_FFLAGS);
    archive_read_disk_set_standard_lookup(disk);
    /* pax, not pax_restricted: only pax records a sparse file's map
     * (GNU.sparse 1.0), so that its holes are neither read nor compressed
     * (a sandbox can make a 16 TiB file on its small disk). */
    archive_write_set_format_pax(w);
    archive_write_add_filter_gzip(w);
    if (archive_write_open_filename(w, tmp) != ARCHIVE_OK ||
        archive_read_disk_open(disk, dir) != ARCHIVE_OK) {
        snprintf(err, errlen, "cannot archive %s: %s", dir,
                 archive_error_string(w) ? archive_error_string(w) : archive_error_string(disk));
        goto out;
    }
    for (;;) {
        const char *path;
        int r;
        e = archive_entry_new();
        r = archive_read_next_header2(disk, e);
        if (r == ARCHIVE_EOF) {
            archive_entry_free(e);
            break;
        }
        if (r < ARCHIVE_WARN) {
            snprintf(err, errlen, "cannot read %s: %s", dir, archive_error_string(disk));
            archive_entry_free(e);
            goto out;
        }
        path = archive_entry_pathname(e);
        /* Names relative to the tree; the root itself is not stored. */
        if (strncmp(path, dir, dirlen) != 0 || (path[dirlen] != '/' && path[dirlen] != '\0')) {
            archive_entry_free(e);
            continue;
        }
        if (path[dirlen] == '\0') {
            archive_read_disk_descend(disk);
            archive_entry_free(e);
            continue;
        }
        const char *rel = path + dirlen + 1;
        if (skipped(rel, skip)) {
            archive_entry_free(e);
            continue;
        }
        mode_t type = archive_entry_filetype(e);
        if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
            archive_entry_free(e); /* sockets, fifos, devices are not kept */
            continue;
        }
        archive_read_disk_descend(disk);
        {
            char *name = sbx__strdup(rel);
            archive_entry_set_pathname(e, name);
            sbx__free(name);
        }
        if (archive_write_header(w, e) < ARCHIVE_WARN) {
            snprintf(err, errlen, "cannot archive %s: %s", rel, archive_error_string(w));
            archive_entry_free(e);
            goto out;
        }
        if (type == AE_IFREG && archive_entry_size(e) > 0) {
            fd = open(archive_entry_sourcepath(e), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                copy_data(w, e, fd, buf, sizeof buf);
                close(fd);
            }
        }
        archive_entry_free(e);
    }
    if (archive_write_close(w) != ARCHIVE_OK) {
        snprintf(err, errlen, "cannot finish the archive: %s", archive_error_string(w));
        goto out;
    }
    if (rename(tmp, out) < 0 || stat(out, &st) < 0) {
        snprintf(err, errlen, "cannot store the archive at %s: %s", out, strerror(errno));
        goto out;
    }
    *size = (int64_t)st.st_size;
    rc = 0;
out:
    if (rc < 0)
        unlink(tmp);
    archive_read_free(disk);
    archive_write_free(w);
    return rc;
}

/* The decompressors tarx_read_support() allows, on a. Each returns
 * ARCHIVE_WARN when it would fall back to an external program; such a
 * filter is disabled again by not keeping it: a fresh archive cannot drop
 * one, so the check comes first, on a probe. */
static void read_filters(struct archive *a)
{
    struct archive *probe = archive_read_new();
    int (*filters[])(struct archive *) = {archive_read_support_filter_gzip, archive_read_support_filter_bzip2,
                                          archive_read_support_filter_xz, archive_read_support_filter_zstd};
    archive_read_support_filter_none(a);
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (probe && filters[i](probe) == ARCHIVE_OK)
            filters[i](a);
    archive_read_free(probe);
}

/* ---- archives from outside: what libarchive would pay for ------------------------------------------ */

/* Extended headers and long names are read into memory whole by
 * libarchive; a real one is a few hundred bytes. */
#define EXT_HEADER_MAX (1u << 20)

/* A tar header's size field: octal digits, or base-256 when its first byte
 * has the high bit (GNU). -1 when unreadable or past 2^62. */
static int64_t header_size(const unsigned char *h)
{
    int64_t v = 0;
    if (h[124] & 0x80) {
        for (int i = 125; i < 136; i++) {
            if (v >> 54)
                return -1;
            v = v << 8 | h[i];
        }
        return (h[124] & 0x7f) ? -1 : v;
    }
    for (int i = 124; i < 136 && h[i] != '\0' && h[i] != ' '; i++) {
        if (h[i] < '0' || h[i] > '7' || v >> 58)
            return -1;
        v = v * 8 + (h[i] - '0');
    }
    return v;
}

int tarx_check_untrusted(int fd, char *err, size_t errlen)
{
    struct archive *a = archive_read_new();
    unsigned char hdr[512], *ext = NULL;
    size_t have = 0, ext_len = 0, ext_want = 0;
    int64_t skip = 0;
    int rc = -1, zeros = 0;
    bool in_ext = false;

    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* The decompressed bytes themselves (format raw): the tar headers are
     * read here, before libarchive's tar reader sees any of them. */
    read_filters(a);
    archive_read_support_format_raw(a);
    if (lseek(fd, 0, SEEK_SET) < 0 || archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
        snprintf(err, errlen, "the body is not a tar archive: %s", archive_error_string(a));
        goto out;
    }
    {
        struct archive_entry *e;
        if (archive_read_next_header(a, &e) != ARCHIVE_OK) {
            snprintf(err, errlen, "the body is not a tar archive: %s", archive_error_string(a));
            goto out;
        }
    }
    for (;;) {
        const void *blk;
        size_t n;
        la_int64_t off;
        int r = archive_read_data_block(a, &blk, &n, &off);
        const unsigned char *p = blk;
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            snprintf(err, errlen, "the archive cannot be read: %s", archive_error_string(a));
            goto out;
        }
        while (n > 0 && zeros < 2) {
            size_t k;
            if (skip > 0) { /* an entry's data, or an extended header's */
                k = (uint64_t)skip < n ? (size_t)skip : n;
                if (in_ext) {
                    size_t take = ext_len + k <= ext_want ? k : ext_want - ext_len;
                    memcpy(ext + ext_len, p, take);
                    ext_len += take;
                }
                skip -= (int64_t)k;
                p += k;
                n -= k;
                if (skip == 0 && in_ext) {
                    in_ext = false;
                    if (memmem(ext, ext_len, "GNU.sparse", 10)) {
                        snprintf(err, errlen, "the archive holds a sparse file (a GNU.sparse pax record): sbxd "
                                              "takes sparse files from its own snapshots only");
                        goto out;
                    }
                }
                continue;
            }
            k = sizeof hdr - have < n ? sizeof hdr - have : n;
            memcpy(hdr + have, p, k);
            have += k;
            p += k;
            n -= k;
            if (have < sizeof hdr)
                continue;
            have = 0;
            {
                static const unsigned char zero[512];
                int64_t size;
                char type = (char)hdr[156];
                if (memcmp(hdr, zero, sizeof hdr) == 0) {
                    zeros++;
                    continue;
                }
                zeros = 0;
                if (type == 'S') {
                    snprintf(err, errlen, "the archive holds a sparse file (a GNU 'S' entry): sbxd takes sparse "
                                          "files from its own snapshots only");
                    goto out;
                }
                if ((size = header_size(hdr)) < 0) {
                    snprintf(err, errlen, "the archive has a header whose size cannot be read");
                    goto out;
                }
                if (type == 'x' || type == 'g' || type == 'X' || type == 'L' || type == 'K') {
                    if ((uint64_t)size > EXT_HEADER_MAX) {
                        snprintf(err, errlen, "the archive has an extended header or long name of %lld bytes "
                                              "(at most %u)", (long long)size, EXT_HEADER_MAX);
                        goto out;
                    }
                    if (!ext && !(ext = sbx__malloc(EXT_HEADER_MAX))) {
                        snprintf(err, errlen, "out of memory");
                        goto out;
                    }
                    in_ext = type != 'L' && type != 'K';
                    ext_len = 0;
                    ext_want = (size_t)size;
                }
                /* The data, padded to whole blocks. */
                skip = (size + 511) / 512 * 512;
                if (skip == 0 && in_ext)
                    in_ext = false;
            }
        }
    }
    rc = 0;
out:
    sbx__free(ext);
    archive_read_free(a);
    return rc;
}

void tarx_read_support(struct archive *a)
{
    read_filters(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
}

int archive_extract(const char *archive_path, const char *dest, char *err, size_t errlen)
{
    struct archive *a = archive_read_new(), *w = archive_write_disk_new();
    struct archive_entry *e;
    int rc = -1, eno = 0;
    size_t dlen = strlen(dest);

    if (!a || !w) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    tarx_read_support(a);
    /* Names are made absolute under dest below, so NOABSOLUTEPATHS cannot be
     * used; archive_clean_name refuses absolute names and ".." instead. */
    archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                          ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_UNLINK);
    if (archive_read_open_filename(a, archive_path, 65536) != ARCHIVE_OK) {
        snprintf(err, errlen, "cannot read the archive: %s", archive_error_string(a));
        goto out;
    }
    for (;;) {
        int r = archive_read_next_header(a, &e);
        char *name, *full;
        mode_t type;
        const char *link;
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            snprintf(err, errlen, "malformed archive: %s", archive_error_string(a));
            goto out;
        }
        type = archive_entry_filetype(e);
        if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
            snprintf(err, errlen, "archive entry %s is not a file, directory or symlink",
                     archive_entry_pathname(e));
            goto out;
        }
        name = archive_clean_name(archive_entry_pathname(e));
        if (!name) {
            snprintf(err, errlen, "archive entry name '%s' is absolute or leaves the directory",
                     archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
            goto out;
        }
        full = sbx__malloc(dlen + strlen(name) + 2);
        if (!full) {
            sbx__free(name);
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        sprintf(full, "%s/%s", dest, name);
        archive_entry_set_pathname(e, full);
        /* A hard link must point inside the tree too. */
        if ((link = archive_entry_hardlink(e)) != NULL) {
            char *lname = archive_clean_name(link), *lfull;
            if (!lname || !(lfull = sbx__malloc(dlen + strlen(lname) + 2))) {
                snprintf(err, errlen, "archive hard link %s points outside", name);
                sbx__free(lname);
                sbx__free(name);
                sbx__free(full);
                goto out;
            }
            sprintf(lfull, "%s/%s", dest, lname);
            archive_entry_set_hardlink(e, lfull);
            sbx__free(lfull);
            sbx__free(lname);
        }
        archive_entry_set_uid(e, getuid());
        archive_entry_set_gid(e, getgid());
        r = archive_write_header(w, e);
        if (r == ARCHIVE_OK && archive_entry_size(e) > 0) {
            const void *blk;
            size_t sz;
            la_int64_t off;
            while ((r = archive_read_data_block(a, &blk, &sz, &off)) == ARCHIVE_OK)
                if (archive_write_data_block(w, blk, sz, off) < ARCHIVE_OK) {
                    r = ARCHIVE_FATAL; /* ENOSPC, typically: archive_errno(w) says */
                    break;
                }
            if (r == ARCHIVE_EOF)
                r = ARCHIVE_OK;
        }
        if (r < ARCHIVE_WARN) {
            snprintf(err, errlen, "cannot extract %s: %s", name,
                     archive_error_string(w) ? archive_error_string(w) : archive_error_string(a));
            eno = archive_errno(w) ? archive_errno(w) : archive_errno(a);
            sbx__free(name);
            sbx__free(full);
            goto out;
        }
        sbx__free(name);
        sbx__free(full);
    }
    if (archive_write_finish_entry(w) < ARCHIVE_WARN) {
        snprintf(err, errlen, "cannot extract: %s", archive_error_string(w));
        eno = archive_errno(w);
        goto out;
    }
    rc = 0;
out:
    archive_read_free(a);
    archive_write_free(w);
    if (rc < 0)
        errno = eno; /* ENOSPC tells the caller the limit was reached */
    return rc;
}
