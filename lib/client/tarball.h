/* SPDX-License-Identifier: MIT */
/* tarball: gzip tar bodies for fs/write, produced as they are sent. */
#ifndef SBX_TARBALL_H
#define SBX_TARBALL_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#include "util/error.h"

typedef struct sbx__tar sbx__tar;

sbx__tar *sbx__tar_new(void);
/* An entry from memory (copied). name is relative (no leading '/'). */
sbx_status sbx__tar_add_memory(sbx__tar *t, const char *name, const void *data, size_t len, uint32_t mode,
                               sbx__err *err);
/* A local file, or a directory and all below it, under name. Only the list
 * of files is made now; their bytes are read while the body is sent. */
sbx_status sbx__tar_add_path(sbx__tar *t, const char *local, const char *name, sbx__err *err);
/* Render the body once to learn its size (it is sent with Content-Length,
 * as the protocol's servers expect). A body of at most mem_limit bytes is
 * kept and replayed from memory; a larger one is generated again, from the
 * files, while it is sent (the same bytes: the output is deterministic). */
sbx_status sbx__tar_prepare(sbx__tar *t, size_t mem_limit, uint64_t *size, sbx__err *err);
/* The next bytes of the gzip tar: the count, 0 at the end, SIZE_MAX on
 * failure (sbx__tar_error says why). */
size_t sbx__tar_read(sbx__tar *t, char *buf, size_t n);
/* Start over (for a retry). 0 or -1. */
int sbx__tar_rewind(sbx__tar *t);
const char *sbx__tar_error(const sbx__tar *t);
/* The status of that failure: SBX_E_NOMEM, SBX_E_UNSUPPORTED (no
 * libarchive) or SBX_E_IO. */
sbx_status sbx__tar_status(const sbx__tar *t);
/* Entries, and symbolic links skipped because they leave the tree. */
size_t sbx__tar_entries(const sbx__tar *t);
size_t sbx__tar_skipped(const sbx__tar *t);
void sbx__tar_free(sbx__tar *t);

#endif /* SBX_TARBALL_H */
