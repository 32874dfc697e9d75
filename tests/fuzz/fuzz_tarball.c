/* SPDX-License-Identifier: MIT */
/*
 * Round-trip fuzz target for the tar bodies of fs/write (lib/client/tarball.c),
 * which the library writes and sandboxes' servers read. The input is a list
 * of entries: a name up to '\n', two bytes of mode, a length byte and that
 * many bytes of data. A name is taken only if it is relative and
 * normalised (no empty, "." or ".." component); the tar of the entries
 * taken must read back, through libarchive, as exactly those entries
 * (names, bytes, permissions), and the body kept in memory must equal the
 * body generated again while sent. Built with libFuzzer by -Dfuzz=true
 * (clang); built without it (with standalone.c) it runs over the files
 * named on its command line, which `meson test` does on the seeds.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/tarball.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENTRIES 16

struct want {
    char *name;
    const uint8_t *data;
    size_t len;
    uint32_t mode;
};

static bool normalised(const char *name)
{
    if (!name[0] || name[0] == '/')
        return false;
    for (const char *p = name;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

/* The whole body, read in pieces of `piece` bytes. */
static char *body(sbx__tar *t, size_t piece, size_t *len)
{
    size_t cap = 4096, n = 0, k;
    char *out = malloc(cap);
    if (!out)
        abort();
    for (;;) {
        if (n + piece > cap && !(out = realloc(out, cap = (n + piece) * 2)))
            abort();
        k = sbx__tar_read(t, out + n, piece);
        if (k == SIZE_MAX)
            abort();
        if (k == 0)
            break;
        n += k;
    }
    *len = n;
    return out;
}

static void read_back(const char *tar, size_t len, const struct want *w, size_t nw)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    size_t i = 0;
    if (!a)
        abort();
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    if (archive_read_open_memory(a, tar, len) != ARCHIVE_OK)
        abort();
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        char buf[256];
        la_ssize_t n;
        if (i == nw || strcmp(archive_entry_pathname(e), w[i].name) != 0 ||
            archive_entry_filetype(e) != AE_IFREG || (size_t)archive_entry_size(e) != w[i].len ||
            archive_entry_perm(e) != (w[i].mode ? w[i].mode : 0644))
            abort();
        n = archive_read_data(a, buf, sizeof buf);
        if (n < 0 || (size_t)n != w[i].len || memcmp(buf, w[i].data, w[i].len) != 0)
            abort();
        i++;
    }
    if (i != nw)
        abort();
    archive_read_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct want w[MAX_ENTRIES];
    size_t nw = 0, at = 0, len1, len2;
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    uint64_t sz1, sz2;
    char *b1, *b2;

    if (!t)
        abort();
    while (at < size && nw < MAX_ENTRIES) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t n = nl ? (size_t)(nl - (data + at)) : size - at;
        char *name = malloc(n + 1);
        if (!name)
            abort();
        memcpy(name, data + at, n);
        name[n] = '\0';
        at += n + 1;
        w[nw].name = name;
        w[nw].mode = at + 1 < size ? (uint32_t)(data[at] << 8 | data[at + 1]) & 07777 : 0;
        at += 2;
        w[nw].len = at < size ? data[at] : 0;
        at++;
        w[nw].data = data + (at < size ? at : size);
        if (at + w[nw].len > size)
            w[nw].len = at < size ? size - at : 0;
        at += w[nw].len;
        if ((sbx__tar_add_memory(t, name, w[nw].data, w[nw].len, w[nw].mode, &err) == SBX_OK) != normalised(name))
            abort();
        if (!normalised(name)) {
            if (err.code != SBX_E_INVALID_ARG)
                abort();
            sbx__err_free(&err);
            free(name);
            continue;
        }
        nw++;
    }
    /* Kept in memory, then generated again as it is sent: the size
     * announced, and the same bytes either way. */
    if (sbx__tar_prepare(t, SIZE_MAX, &sz1, &err) != SBX_OK)
        abort();
    b1 = body(t, 4096, &len1);
    if (sbx__tar_prepare(t, 0, &sz2, &err) != SBX_OK)
        abort();
    b2 = body(t, 7, &len2);
    if (len1 != sz1 || len2 != sz2 || len1 != len2 || memcmp(b1, b2, len1) != 0)
        abort();
    read_back(b1, len1, w, nw);
    /* A retry sends the same body again. */
    free(b2);
    if (sbx__tar_rewind(t) != 0)
        abort();
    b2 = body(t, 1000, &len2);
    if (len2 != len1 || memcmp(b1, b2, len1) != 0)
        abort();
    free(b1);
    free(b2);
    for (size_t i = 0; i < nw; i++)
        free(w[i].name);
    sbx__tar_free(t);
    return 0;
}
