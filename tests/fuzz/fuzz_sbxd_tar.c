/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the tar-name checks of sbxd (tools/sbxd/tarx.c). The
 * input is read as an archive, with every filter and format libarchive
 * knows, as sbxd's extraction reads snapshots and tarball sources; each
 * entry's name and hard-link target go through archive_clean_name, as they
 * do before anything is written. Nothing is written to disk. The input's
 * first line is also cleaned as a name of its own. A clean name is
 * relative, has no empty, "." or ".." component, and cleans to itself; a
 * name is refused only when it is absolute, climbs with "..", or has no
 * component left. Built with libFuzzer by -Dfuzz=true (clang); built
 * without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "tarx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the cleaner must decide, read plainly: refused iff absolute, a ".."
 * component, or nothing but "." and empty components. */
static bool must_refuse(const char *name)
{
    bool any = false;
    if (name[0] == '/')
        return true;
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        if (n && !(n == 1 && p[0] == '.'))
            any = true;
        p += n + (p[n] == '/');
    }
    return !any;
}

static void check_clean(const char *name)
{
    char *c, *c2;
    if (!name) {
        if (archive_clean_name(NULL))
            abort();
        return;
    }
    c = archive_clean_name(name);
    if (!c != must_refuse(name))
        abort();
    if (!c)
        return;
    if (!c[0] || c[0] == '/' || c[strlen(c) - 1] == '/' || strstr(c, "//"))
        abort();
    for (const char *p = c; *p;) {
        size_t n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            abort();
        p += n + (p[n] == '/');
    }
    c2 = archive_clean_name(c);
    if (!c2 || strcmp(c, c2) != 0)
        abort(); /* cleaning is idempotent */
    sbx__free(c2);
    sbx__free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    const uint8_t *nl = memchr(data, '\n', size < 4096 ? size : 4096);
    size_t n = nl ? (size_t)(nl - data) : (size < 4096 ? size : 4096);
    char *first = malloc(n + 1);

    if (!a || !first)
        abort();
    memcpy(first, data, n);
    first[n] = '\0';
    check_clean(first);
    free(first);

    archive_read_support_filter_all(a);
    archive_read_support_format_all(a);
    if (archive_read_open_memory(a, data, size) == ARCHIVE_OK) {
        for (int i = 0; i < 4096; i++) {
            int r = archive_read_next_header(a, &e);
            if (r == ARCHIVE_EOF || r < ARCHIVE_WARN)
                break;
            check_clean(archive_entry_pathname(e));
            if (archive_entry_hardlink(e))
                check_clean(archive_entry_hardlink(e));
        }
    }
    archive_read_free(a);
    return 0;
}
