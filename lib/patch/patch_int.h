/* SPDX-License-Identifier: MIT */
/* The parts of sbx_patch that read diff text: forms, safety rules, patch id. */
#ifndef SBX_PATCH_INT_H
#define SBX_PATCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sbxrun/patch.h>

#include "util/buf.h"

/* ---- text.c: the forms of a diff's text ---- */

/* Inline: every line of a patch is tested against several prefixes, all
 * literals, whose strlen and memcmp the compiler then folds. */
static inline bool sbx__patch_starts(const char *l, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(l, prefix, k) == 0;
}
/* A header line's path (quoted or up to a tab); strip_prefix drops the
 * first component as `git apply -p1` does; empty for /dev/null.
 * SBX_E_PARSE when a quoted path is broken, SBX_E_NOMEM (out->len says
 * nothing then). */
sbx_status sbx__patch_header_path(const char *v, size_t n, bool strip_prefix, sbx__buf *out);
/* A hunk header's ("@@ -a,b +c,d") line counts, a missing count being 1;
 * false if malformed. */
bool sbx__patch_hunk_counts(const char *l, size_t n, long *before, long *after);
/* Plain `diff -u` sections get git headers; *converted says whether any did
 * (conv holds the whole text then). SBX_E_PARSE for a ---/+++ pair without
 * paths, SBX_E_NOMEM. */
sbx_status sbx__patch_git_form(const char *t, size_t len, sbx__buf *conv, bool *converted);
/* The text libgit2 1.5 can parse: sections creating or deleting an empty
 * file get ---/+++ lines. With out NULL, only *changed is set (whether
 * such a section exists), and nothing is copied. */
sbx_status sbx__patch_libgit2_form(const char *t, size_t len, sbx__buf *out, bool *changed);

/* ---- safety.c: the path rules ---- */

/* What a scan of the headers found wrong: a rule and its path, or, with
 * SBX_PATCH_RULE_NONE, why the text cannot be read. */
struct sbx__patch_finding {
    sbx_patch_rule rule;
    sbx__buf path;
    char why[200];
};

sbx_patch_rule sbx__patch_path_rule(const char *path, size_t len);
/* Append at most max bytes of attacker text to out for a message: control
 * bytes and backslashes as \xNN, so none reaches a terminal or a log. */
sbx_status sbx__patch_show(sbx__buf *out, const char *s, size_t n, size_t max);
/* The rule a file mode breaks by its type bits (symbolic link, gitlink). */
sbx_patch_rule sbx__patch_mode_rule(unsigned mode);
const char *sbx__patch_rule_text(sbx_patch_rule r);
/* Every path the header lines name (diff --git, ---/+++, rename and copy
 * from/to) against the rules: SBX_OK, SBX_E_PATCH (f->rule, f->path),
 * SBX_E_PARSE (f->why), SBX_E_NOMEM. The caller frees f->path. */
sbx_status sbx__patch_scan_headers(const char *t, size_t len, struct sbx__patch_finding *f);

/* ---- patchid.c ---- */

/* `git patch-id --stable` of the text into out (40 hex digits, "" when
 * nothing would be hashed). False when libcrypto fails. */
bool sbx__patch_id(const char *t, size_t len, char out[41]);

/* ---- overlay.c: the changed files over the base tree ---- */

struct sbx__ov;
struct sbx__ov_entry {
    char *path;
    bool deleted;
    uint32_t mode;
    char *data; /* the new contents (owned), NULL when empty */
    size_t len;
};
struct sbx__ov *sbx__ov_new(void);
void sbx__ov_free(struct sbx__ov *o);
/* The entry for path, or NULL when the patch did not touch it. */
const struct sbx__ov_entry *sbx__ov_get(const struct sbx__ov *o, const char *path);
/* Set path's state; takes data (freed on failure too). */
sbx_status sbx__ov_put(struct sbx__ov *o, const char *path, bool deleted, uint32_t mode, char *data, size_t len);
size_t sbx__ov_count(const struct sbx__ov *o);
const struct sbx__ov_entry *sbx__ov_at(const struct sbx__ov *o, size_t i);
/* Put a copy of every entry of src into dst (src's win). */
sbx_status sbx__ov_put_all(struct sbx__ov *dst, const struct sbx__ov *src);

/* ---- repos.c: repositories kept for the next patch ---- */

struct git_repository;
struct git_odb_backend;
struct sbx__repo {
    char *key;                      /* its real path */
    struct git_repository *repo;
    struct git_odb_backend *mempack; /* the in-memory object database over it */
    struct git_odb *odb;             /* its object database (borrowed from repo) */
    unsigned long long dev, ino;     /* of its git directory, to notice it replaced */
    struct sbx__repo *next;
};
/* A repository for dir, for this caller alone: SBX_OK, SBX_E_NOT_FOUND
 * (why says why), SBX_E_NOMEM. */
sbx_status sbx__repo_take(const char *dir, struct sbx__repo **out, char *why, size_t why_cap);
/* Back to the pool, its in-memory objects dropped. Free every object read
 * from it first. NULL is fine. */
void sbx__repo_give(struct sbx__repo *r);

/* A blob's bytes as git reads them: from the object database's backends,
 * without hashing them again. libgit2's git_odb_read() and
 * git_blob_lookup() hash every object they read (with a collision-detecting
 * SHA-1: a third of the check of a patch of thousands of files); git checks
 * an object's id when it receives it (index-pack, fsck), not each time it
 * reads it. 0, or libgit2's error with its message (an object that is not
 * a blob is one). */
struct git_odb;
struct git_odb_object;
struct git_oid;
struct sbx__blob {
    void *data;                    /* read only */
    size_t len;
    struct git_odb_backend *from;  /* the backend that allocated data, or */
    struct git_odb_object *obj;    /* the object read by git_odb_read() */
};
int sbx__blob_read(struct sbx__blob *b, struct git_odb *odb, const struct git_oid *id);
/* Frees what b holds; b may be zeroed or freed already. */
void sbx__blob_free(struct sbx__blob *b);

/* ---- prefetch.c: the base's blobs, read on several threads ---- */

struct sbx__prefetch;
struct git_oid;
/* How many threads read a patch's n files: asked (0: as many as cores,
 * but one per 128 files at most), capped at 8. 1: none but the caller's. */
unsigned sbx__prefetch_threads(unsigned asked, size_t files);
/* Slots for n files; NULL when memory runs out. */
struct sbx__prefetch *sbx__prefetch_new(size_t n);
struct git_patch;
/* Slot i is to hold the blob id, and, with gp, gp's hunks applied to it
 * (sbx__apply_text). */
void sbx__prefetch_want(struct sbx__prefetch *pf, size_t i, const struct git_oid *id, struct git_patch *gp);
/* Read the wanted blobs (and apply) on threads (the caller's and threads - 1 more, each
 * with a repository of repo_key from the pool) and return when all are
 * done. What could not be read (or would pass 256 MiB held) is left out. */
void sbx__prefetch_run(struct sbx__prefetch *pf, const char *repo_key, struct git_repository *repo, unsigned threads);
/* Slot i's applied bytes, if it holds them for the blob id: true, and they
 * are the caller's. */
bool sbx__prefetch_take(struct sbx__prefetch *pf, size_t i, const struct git_oid *id, char **post, size_t *len);
/* Slot i's bytes if it holds the blob id, else NULL (read it yourself). */
const char *sbx__prefetch_get(const struct sbx__prefetch *pf, size_t i, const struct git_oid *id, size_t *len);
void sbx__prefetch_free(struct sbx__prefetch *pf);

#endif /* SBX_PATCH_INT_H */
