/* SPDX-License-Identifier: MIT */
/* archive_dl: libarchive through dlopen() (see archive_dl.h for why). */
#include "util/internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "client/archive_dl.h"

static const struct {
    const char *name;
    size_t off;
} symbols[] = {
#define SYM(member) {"archive_" #member, offsetof(struct sbx__archive_api, member)}
    SYM(write_new),
    SYM(write_free),
    SYM(write_add_filter_gzip),
    SYM(write_set_filter_option),
    SYM(write_set_format_pax_restricted),
    SYM(write_set_format_option),
    SYM(write_set_bytes_per_block),
    SYM(write_open),
    SYM(write_header),
    SYM(write_data),
    SYM(write_finish_entry),
    SYM(write_close),
    SYM(error_string),
    SYM(set_error),
    SYM(entry_new),
    SYM(entry_free),
    SYM(entry_copy_pathname),
    SYM(entry_set_filetype),
    SYM(entry_set_perm),
    SYM(entry_set_size),
    SYM(entry_set_mtime),
    SYM(entry_set_uid),
    SYM(entry_set_gid),
#undef SYM
};

int sbx__archive_load(const char *const *sonames, struct sbx__archive_api *api, char *buf, size_t cap,
                      const char **why)
{
    void *h = NULL;
    const char *tried = sonames[0];

    for (size_t i = 0; sonames[i] && !h; i++) {
        tried = sonames[i];
        /* RTLD_LOCAL: its symbols (and its dependencies') stay out of the
         * process's global namespace. */
        h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        const char *e = dlerror();
        snprintf(buf, cap,
                 "uploading files needs libarchive, which could not be loaded (%s); on Debian/Ubuntu: "
                 "apt-get install -y libarchive13",
                 e ? e : tried);
        *why = buf;
        return -1;
    }
    for (size_t i = 0; i < SBX__ARRAY_LEN(symbols); i++) {
        void *f = dlsym(h, symbols[i].name);
        if (!f) {
            snprintf(buf, cap, "the libarchive found (%s) lacks %s: it is older than the one built against",
                     tried, symbols[i].name);
            *why = buf;
            dlclose(h);
            return -1;
        }
        /* POSIX guarantees a data pointer from dlsym converts to a function
         * pointer; copying the bytes says so without a cast warning. */
        memcpy((char *)api + symbols[i].off, &f, sizeof f);
    }
    /* Kept loaded for the life of the process: handles made from it may
     * live anywhere. */
    return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct sbx__archive_api table;
static bool loaded;
static char load_error[512];
static const char *load_why;

static void load(void)
{
    static const char *const names[] = {SBX_LIBARCHIVE_SONAME, "libarchive.so", NULL};
    loaded = sbx__archive_load(names, &table, load_error, sizeof load_error, &load_why) == 0;
}

const struct sbx__archive_api *sbx__archive_api(const char **why)
{
    pthread_once(&once, load);
    if (!loaded && why)
        *why = load_why;
    return loaded ? &table : NULL;
}
