/* SPDX-License-Identifier: MIT */
/* The parts of sbx_patch that read diff text: forms, safety rules, patch id. */
#ifndef SBX_PATCH_INT_H
#define SBX_PATCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbxrun/patch.h>

#include "util/buf.h"

/* ---- text.c: the forms of a diff's text ---- */

bool sbx__patch_starts(const char *l, size_t n, const char *prefix);
/* A header line's path (quoted or up to a tab); strip_prefix drops the
 * first component as `git apply -p1` does; empty for /dev/null. False when
 * a quoted path is broken or memory runs out (out->len says nothing then). */
bool sbx__patch_header_path(const char *v, size_t n, bool strip_prefix, sbx__buf *out);
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

/* ---- repos.c: repositories kept for the next patch ---- */

struct git_repository;
struct git_odb_backend;
struct sbx__repo {
    char *key;                      /* its real path */
    struct git_repository *repo;
    struct git_odb_backend *mempack; /* the in-memory object database over it */
    unsigned long long dev, ino;     /* of its git directory, to notice it replaced */
    struct sbx__repo *next;
};
/* A repository for dir, for this caller alone: SBX_OK, SBX_E_NOT_FOUND
 * (why says why), SBX_E_NOMEM. */
sbx_status sbx__repo_take(const char *dir, struct sbx__repo **out, char *why, size_t why_cap);
/* Back to the pool, its in-memory objects dropped. Free every object read
 * from it first. NULL is fine. */
void sbx__repo_give(struct sbx__repo *r);

#endif /* SBX_PATCH_INT_H */
