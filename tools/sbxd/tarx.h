/* SPDX-License-Identifier: MIT */
/* tarx: tar.gz capture and careful extraction on the host side (libarchive). */
#ifndef SBXD_TARX_H
#define SBXD_TARX_H

#include <stddef.h>
#include <stdint.h>

/* Archive the tree at dir into a gzip tar at out (written to a temp file,
 * then renamed). Symlinks are stored, never followed, other file systems
 * not entered; top-level names in skip[] are left out. Nothing may change
 * the tree meanwhile (names are opened by path). 0, or -1 with a message. */
int archive_dir(const char *dir, const char *const *skip, const char *out, int64_t *size,
                char *err, size_t errlen);

struct archive;

/* Let a reads tar archives (ustar, pax, GNU) uncompressed or compressed
 * with gzip, bzip2, xz or zstd, decoded inside libarchive only: the
 * archives come from sandboxes and the network, and a filter that
 * libarchive would run as an external program (or a parser of zip, rar,
 * iso9660...) is attack surface in sbxd for nothing the protocol needs. */
void tarx_read_support(struct archive *a);

/* Before libarchive's tar reader sees an archive from outside (fs/write,
 * a tarball source): the tar headers of the (decompressed) stream at fd
 * read here, and refused when libarchive would spend memory on them without
 * bound: a sparse file's map (GNU.sparse pax records, GNU 'S' entries; a
 * map of 80 KB gzipped took 954 MB), or an extended header or long name
 * over 1 MiB. Only sbxd's own snapshots hold sparse files. 0, or -1 with a
 * message (the archive is malformed or refused). Reads fd from its start. */
int tarx_check_untrusted(int fd, char *err, size_t errlen);

/* Extract a tar (see tarx_read_support) into dest, which must be
 * a directory path without symlinks. Refuses absolute names, "..", and any
 * entry that would land through a symlink; only regular files, directories,
 * symlinks and hard links inside the tree are created. On failure errno is
 * the cause when one is known (ENOSPC: the destination is full). */
int archive_extract(const char *archive_path, const char *dest, char *err, size_t errlen);

/* A relative tar entry name, normalised: no leading "/", no "." or ".."
 * components, no empty components. Returns a new string or NULL. */
char *archive_clean_name(const char *name);

#endif /* SBXD_TARX_H */
