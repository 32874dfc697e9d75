/* SPDX-License-Identifier: MIT */
/*
 * sbx_patch: a patch checked locally, before anything is uploaded. Included
 * by <sbxrun/sbxrun.h>.
 *
 * A patch is untrusted input (agents and bots write them). sbx_patch reads a
 * unified diff as git and `diff -u` write it, or builds one from a list of
 * file operations, and answers three questions without running git and
 * without touching a work tree or an index:
 *
 * - Is it safe? Refused whatever git would say: a path that is absolute or
 *   has a ".." component; a path entering ".git" at any depth; a symbolic
 *   link (mode 120000) created or changed; a gitlink (160000) added or
 *   changed; a rename or copy whose source or target breaks those rules.
 * - Does it apply? Against a tree of a local repository (a commit, HEAD by
 *   default), with the verdict `git apply --check` gives on that tree.
 * - What does it do? The files it touches (added, modified, deleted,
 *   renamed, copied; modes), a diffstat, and its patch id (as
 *   `git patch-id --stable` computes it).
 *
 * The tree with the patch applied can be written out as a gzip tar or a
 * directory for upload. Sizes are bounded (sbx_patch_set_limits()).
 */
#ifndef SBXRUN_PATCH_H
#define SBXRUN_PATCH_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_patch sbx_patch;

/**
 * What is known about a patch.
 * @since 1.0
 */
typedef enum sbx_patch_verdict {
    SBX_PATCH_UNCHECKED = 0,      /**< nothing loaded, or not checked yet */
    SBX_PATCH_SAFE = 1,           /**< parsed and safe; not checked against a tree */
    SBX_PATCH_APPLIES = 2,        /**< safe, and applies to the base tree */
    SBX_PATCH_DOES_NOT_APPLY = 3, /**< safe, but does not apply to the base tree */
    SBX_PATCH_UNSAFE = 4,         /**< refused: sbx_patch_broken_rule() says why */
    SBX_PATCH_MALFORMED = 5,      /**< not a patch that can be read */
    SBX_PATCH_TOO_LARGE = 6       /**< over a limit of sbx_patch_set_limits() */
} sbx_patch_verdict;

/**
 * The rule an unsafe patch breaks.
 * @since 1.0
 */
typedef enum sbx_patch_rule {
    SBX_PATCH_RULE_NONE = 0,         /**< no rule broken */
    SBX_PATCH_RULE_ABSOLUTE = 1,     /**< an absolute path */
    SBX_PATCH_RULE_DOTDOT = 2,       /**< a ".." path component */
    SBX_PATCH_RULE_GIT_DIR = 3,      /**< a path entering .git */
    SBX_PATCH_RULE_SYMLINK = 4,      /**< a symbolic link created or changed */
    SBX_PATCH_RULE_GITLINK = 5,      /**< a gitlink (submodule) added or changed */
    SBX_PATCH_RULE_BAD_PATH = 6      /**< an empty path, or one with a NUL or control byte */
} sbx_patch_rule;

/**
 * How a patch changes one file.
 * @since 1.0
 */
typedef enum sbx_patch_change {
    SBX_PATCH_CHANGE_NONE = 0, /**< no such file (sbx_patch_file_change() out of range) */
    SBX_PATCH_ADDED = 1,       /**< the file is created */
    SBX_PATCH_MODIFIED = 2,    /**< its content or mode changes */
    SBX_PATCH_DELETED = 3,     /**< it is removed */
    SBX_PATCH_RENAMED = 4,     /**< it moves (and may change) */
    SBX_PATCH_COPIED = 5       /**< a copy of another file is created */
} sbx_patch_change;

/**
 * A new, empty patch with the default limits.
 *
 * @return the handle, or NULL when out of memory. Free with sbx_patch_free().
 * @since 1.0
 */
SBX_API sbx_patch *sbx_patch_new(void);

/**
 * Free a patch and the repository it opened. NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_patch_free(sbx_patch *p);

/**
 * What went wrong in the most recent failing call on the patch: "" when the
 * last call on it that can fail succeeded (each such call clears it first).
 * Getters and sbx_patch_last_error() itself never change it. For a patch
 * refused or not applying, the message names the file, the rule or the
 * hunk. Owned by the handle, valid until the next call on it that can fail.
 * Never NULL; for a NULL handle, "invalid argument: the handle is NULL".
 *
 * @since 1.0
 */
SBX_API const char *sbx_patch_last_error(const sbx_patch *p);

/**
 * Set the limits, before a patch is loaded: the patch's size in bytes (a
 * diff's text, or the sum of the file operations' contents), the number of
 * files it touches, and one file's size (in the patch, or in the tree once
 * applied). 0 keeps a limit's default: 16 MiB, 10,000 files, 8 MiB.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (a patch is loaded).
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_set_limits(sbx_patch *p, size_t max_bytes, size_t max_files, size_t max_file_bytes);

/**
 * How many threads sbx_patch_check() may use to read the base's files: a
 * check that touches thousands of files spends most of its time reading
 * them, and the reads are independent. 0 (the default) uses one thread per
 * online CPU, and one per 128 files at most, so a small patch uses only
 * the caller's; 1 never starts a thread; at most 8. The threads are joined
 * before sbx_patch_check() returns, and the verdict never depends on them.
 * sbx_patch_load_data() and sbx_patch_load_file() also make the patch id
 * on a second thread while the text is parsed, when more than one thread
 * is asked for, or by default for a text of 256 KiB or more on a machine
 * of several CPUs; that thread is joined before the load returns.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (more than 8).
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_set_threads(sbx_patch *p, size_t threads);

/**
 * The base to check against: the local repository at repo_dir (a work tree
 * or a bare repository; only its objects are read) and a revision in it
 * (any form git accepts: "HEAD", a branch, a commit id); NULL means "HEAD".
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND (no repository there,
 *         or no such revision: the message says which), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_set_base(sbx_patch *p, const char *repo_dir, const char *rev);

/**
 * The base to check against is the tree prev leaves: prev's base with prev
 * applied, for a series of patches each checked against what the ones
 * before it leave. prev must have been checked against a base and apply
 * (SBX_PATCH_APPLIES). What is needed of it is copied, so either handle may
 * be freed first; its repository is only read, as with sbx_patch_set_base().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (prev NULL or p itself), SBX_E_MISUSE
 *         (prev was not checked against a base or does not apply; p was
 *         checked against a base already), SBX_E_NOT_FOUND (prev's
 *         repository or base is gone), SBX_E_INTERNAL (prev's tree cannot be
 *         made: the message says why), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_set_base_patch(sbx_patch *p, const sbx_patch *prev);

/**
 * Load a unified diff from memory and check that it is safe. The diff is
 * copied. Git's format (with "diff --git" headers, renames, copies, modes,
 * binary patches) and plain `diff -u` / `diff -ru` output are read.
 *
 * @return SBX_OK (safe: sbx_patch_get_verdict() is SBX_PATCH_SAFE),
 *         SBX_E_PATCH (unsafe: SBX_PATCH_UNSAFE, sbx_patch_broken_rule() and
 *         last_error name the rule and the path), SBX_E_PARSE (malformed:
 *         last_error says where), SBX_E_BUDGET_EXCEEDED (over a limit),
 *         SBX_E_INVALID_ARG, SBX_E_MISUSE (already loaded), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_load_data(sbx_patch *p, const uint8_t *data, size_t len);

/**
 * Load a unified diff from a file, as sbx_patch_load_data() does.
 *
 * @return as sbx_patch_load_data(); SBX_E_IO when the file cannot be read.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_load_file(sbx_patch *p, const char *path);

/**
 * Add one file operation instead of a diff: SBX_PATCH_ADDED or
 * SBX_PATCH_MODIFIED with the file's whole new content (mode 0644, or 0755
 * for an executable; 0 means 0644), or SBX_PATCH_DELETED (data NULL, len 0).
 * The operations become a diff against the base at sbx_patch_check(), so
 * sbx_patch_set_base() must be called first.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (another change, a bad mode, data for a
 *         deletion), SBX_E_PATCH (the path is unsafe), SBX_E_BUDGET_EXCEEDED,
 *         SBX_E_MISUSE (a diff is loaded, or already checked), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_add_file(sbx_patch *p, sbx_patch_change change, const char *path,
                                      const uint8_t *data, size_t len, uint32_t mode);

/**
 * Check the patch against the base: it must be safe and apply to the base
 * tree as `git apply --check` would have it apply. Without a base set, only
 * safety is checked.
 *
 * @return SBX_OK (SBX_PATCH_APPLIES, or SBX_PATCH_SAFE without a base),
 *         SBX_E_PATCH (does not apply, or unsafe: last_error names the file
 *         and the hunk, or the rule and the path), SBX_E_PARSE,
 *         SBX_E_BUDGET_EXCEEDED (a file of the result over the limit),
 *         SBX_E_MISUSE (nothing loaded), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_check(sbx_patch *p);

/**
 * What is known about the patch: its verdict so far; SBX_PATCH_UNCHECKED
 * for a NULL handle. A local read that cannot fail, as sbx_job_verdict()
 * and sbx_run_verdict() are; named with get_ because sbx_patch_verdict is
 * the name of the enum.
 * @since 1.0
 */
SBX_API sbx_patch_verdict sbx_patch_get_verdict(const sbx_patch *p);

/**
 * The rule an unsafe patch breaks, SBX_PATCH_RULE_NONE otherwise.
 * @since 1.0
 */
SBX_API sbx_patch_rule sbx_patch_broken_rule(const sbx_patch *p);

/**
 * The stable name of a verdict ("applies", "does-not-apply", ...) or of a
 * rule ("absolute", "dotdot", "git-dir", ...), as the JSON output uses them.
 *
 * @return a static string; "unknown" for a value this version does not know.
 * @since 1.0
 */
SBX_API const char *sbx_patch_verdict_name(sbx_patch_verdict verdict);

/**
 * See sbx_patch_verdict_name().
 * @since 1.0
 */
SBX_API const char *sbx_patch_rule_name(sbx_patch_rule rule);

/**
 * The number of files the patch touches (0 before a load).
 * @since 1.0
 */
SBX_API size_t sbx_patch_file_count(const sbx_patch *p);

/**
 * The path of file i after the patch (its old path for a deletion), or NULL
 * when i is out of range. Borrowed from the handle.
 * @since 1.0
 */
SBX_API const char *sbx_patch_file_path(const sbx_patch *p, size_t i);

/**
 * The path file i had before the patch when the patch renames or copies it
 * (the source); NULL for every other change, or i out of range. Borrowed
 * from the handle.
 * @since 1.0
 */
SBX_API const char *sbx_patch_file_old_path(const sbx_patch *p, size_t i);

/**
 * How the patch changes file i; SBX_PATCH_CHANGE_NONE when i is out of
 * range (or p is NULL).
 * @since 1.0
 */
SBX_API sbx_patch_change sbx_patch_file_change(const sbx_patch *p, size_t i);

/**
 * File i's mode before and after the patch (0100644, 0100755, ...; 0 where
 * the file does not exist, or i is out of range).
 * @since 1.0
 */
SBX_API uint32_t sbx_patch_file_old_mode(const sbx_patch *p, size_t i);

/**
 * See sbx_patch_file_old_mode().
 * @since 1.0
 */
SBX_API uint32_t sbx_patch_file_new_mode(const sbx_patch *p, size_t i);

/**
 * Lines added and removed in file i (0 for a binary file, or i out of range).
 * @since 1.0
 */
SBX_API size_t sbx_patch_file_additions(const sbx_patch *p, size_t i);

/**
 * See sbx_patch_file_additions().
 * @since 1.0
 */
SBX_API size_t sbx_patch_file_deletions(const sbx_patch *p, size_t i);

/**
 * Whether file i is changed by a binary patch (1) or a text one (0).
 * @since 1.0
 */
SBX_API int sbx_patch_file_binary(const sbx_patch *p, size_t i);

/**
 * The patch id, 40 hexadecimal digits, equal to `git patch-id --stable` of
 * the same text (for plain `diff -u` output, which git patch-id does not
 * read, the id of its git form); "" before a load, and where git would print
 * no id. Borrowed from the handle.
 * @since 1.0
 */
SBX_API const char *sbx_patch_id(const sbx_patch *p);

/**
 * The patch as git's unified diff: the diff loaded, or the one built from
 * the file operations at sbx_patch_check().
 *
 * @param out  receives the bytes, with a NUL after them; free with sbx_free().
 * @param len  receives their length; may be NULL.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (nothing loaded or built),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_save_data(sbx_patch *p, uint8_t **out, size_t *len);

/**
 * A JSON object describing the patch: {"verdict", "rule", "message",
 * "patchId", "files": [{"path", "oldPath", "change", "oldMode",
 * "newMode", "additions", "deletions", "binary"}], "diffstat": {"files",
 * "additions", "deletions"}}.
 *
 * @param out  receives the JSON; free with sbx_free().
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_to_json(sbx_patch *p, char **out);

/**
 * Write the base tree with the patch applied as a gzip tar at path (replaced
 * atomically: a temporary file beside it, then renamed), for upload to a
 * sandbox. The repository's work tree and index are not touched. The patch
 * must have been checked and apply; with a base set and nothing loaded, the
 * base tree itself is written. Regular files only: symbolic links and
 * submodules of the base are left out (a sandbox's file API writes regular
 * files).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (not SBX_PATCH_APPLIES, nor
 *         a base alone),
 *         SBX_E_BUDGET_EXCEEDED (a file over the limit), SBX_E_IO,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_save_tree_file(sbx_patch *p, const char *path);

/**
 * Write the same tree as sbx_patch_save_tree_file() as files under the
 * directory dir, ready for sbx_sandbox_upload() or sbx_run_add_upload().
 * dir must not exist, or be an empty directory; its parent must exist.
 * The files are written into a new directory beside dir and renamed into
 * place at the end, so dir never holds part of a tree and, on failure,
 * nothing is left behind. Files are created 0644 (0755 when executable)
 * and directories 0755, less the umask; dir itself is 0700.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (not SBX_PATCH_APPLIES, nor
 *         a base alone), SBX_E_BUDGET_EXCEEDED (a file over the limit),
 *         SBX_E_IO (dir has files in it, or cannot be written),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_patch_save_tree_dir(sbx_patch *p, const char *dir);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_PATCH_H */
