/* SPDX-License-Identifier: MIT */
/*
 * archive_dl: libarchive, loaded the first time a tarball is made.
 *
 * Debian's libarchive brings libxml2, ICU and libstdc++ with it: about
 * 2.2 MB of resident pages in every process that links it, for a feature
 * (uploading files) many clients never use. So the library does not link
 * it: tarball.c calls it through this table, filled by dlopen() on first
 * use and kept for the life of the process.
 */
#ifndef SBX_ARCHIVE_DL_H
#define SBX_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

/* The soname the headers were built against; the build sets it. */
#ifndef SBX_LIBARCHIVE_SONAME
#define SBX_LIBARCHIVE_SONAME "libarchive.so.13"
#endif

/* Each member has the type of the libarchive function it names, so a
 * mismatch with the headers fails to compile. */
struct sbx__archive_api {
    __typeof__(archive_write_new) *write_new;
    __typeof__(archive_write_free) *write_free;
    __typeof__(archive_write_add_filter_gzip) *write_add_filter_gzip;
    __typeof__(archive_write_set_filter_option) *write_set_filter_option;
    __typeof__(archive_write_set_format_pax_restricted) *write_set_format_pax_restricted;
    __typeof__(archive_write_set_format_option) *write_set_format_option;
    __typeof__(archive_write_set_bytes_per_block) *write_set_bytes_per_block;
    __typeof__(archive_write_open) *write_open;
    __typeof__(archive_write_header) *write_header;
    __typeof__(archive_write_data) *write_data;
    __typeof__(archive_write_finish_entry) *write_finish_entry;
    __typeof__(archive_write_close) *write_close;
    __typeof__(archive_error_string) *error_string;
    __typeof__(archive_set_error) *set_error;
    __typeof__(archive_entry_new) *entry_new;
    __typeof__(archive_entry_free) *entry_free;
    __typeof__(archive_entry_copy_pathname) *entry_copy_pathname;
    __typeof__(archive_entry_set_filetype) *entry_set_filetype;
    __typeof__(archive_entry_set_perm) *entry_set_perm;
    __typeof__(archive_entry_set_size) *entry_set_size;
    __typeof__(archive_entry_set_mtime) *entry_set_mtime;
    __typeof__(archive_entry_set_uid) *entry_set_uid;
    __typeof__(archive_entry_set_gid) *entry_set_gid;
};

/* The functions, loading libarchive on the first call (thread-safe). NULL
 * when it cannot be loaded; then *why (if given) says what failed and how
 * to fix it, in static storage. */
const struct sbx__archive_api *sbx__archive_api(const char **why);

/* For tests: load from these sonames (NULL-terminated, tried in order) into
 * api, without touching the process-wide table. 0, or -1 with why set
 * (into buf). */
int sbx__archive_load(const char *const *sonames, struct sbx__archive_api *api, char *buf, size_t cap,
                      const char **why);

#endif /* SBX_ARCHIVE_DL_H */
