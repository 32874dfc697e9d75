/* SPDX-License-Identifier: MIT */
/*
 * safety: the rules a patch's paths must pass, checked on the raw header
 * lines of its text (a second reader, beside libgit2's parser, which
 * normalises some paths: "a//etc/x" reads as "etc/x").
 */
#include "util/internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "patch/patch_int.h"

#define PATH_MAX_BYTES 4096

/* Whether a path component names the git directory, as any file system
 * could read it: ".git" in any case, with trailing dots or spaces (Windows
 * drops them), or its 8.3 short name. */
static bool is_git_component(const char *c, size_t n)
{
    while (n && (c[n - 1] == '.' || c[n - 1] == ' '))
        n--;
    return (n == 4 && strncasecmp(c, ".git", 4) == 0) || (n == 5 && strncasecmp(c, "git~1", 5) == 0);
}

sbx_patch_rule sbx__patch_path_rule(const char *path, size_t len)
{
    size_t start = 0;
    if (len == 0 || len > PATH_MAX_BYTES)
        return SBX_PATCH_RULE_BAD_PATH;
    if (path[0] == '/')
        return SBX_PATCH_RULE_ABSOLUTE;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
            return SBX_PATCH_RULE_BAD_PATH;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && path[i] != '/')
            continue;
        {
            const char *c = path + start;
            size_t n = i - start;
            if (n == 2 && c[0] == '.' && c[1] == '.')
                return SBX_PATCH_RULE_DOTDOT;
            if (is_git_component(c, n))
                return SBX_PATCH_RULE_GIT_DIR;
            if (n == 0 || (n == 1 && c[0] == '.'))
                return SBX_PATCH_RULE_BAD_PATH;
        }
        start = i + 1;
    }
    return SBX_PATCH_RULE_NONE;
}

const char *sbx__patch_rule_text(sbx_patch_rule r)
{
    switch (r) {
    case SBX_PATCH_RULE_ABSOLUTE: return "an absolute path";
    case SBX_PATCH_RULE_DOTDOT: return "a '..' component leaves the tree";
    case SBX_PATCH_RULE_GIT_DIR: return "a path inside .git (hooks and config run later)";
    case SBX_PATCH_RULE_SYMLINK: return "a symbolic link created, changed or written through";
    case SBX_PATCH_RULE_GITLINK: return "a gitlink (submodule) added or changed";
    case SBX_PATCH_RULE_BAD_PATH: return "an empty path, an empty or '.' component, or a control character";
    case SBX_PATCH_RULE_NONE: break;
    }
    return "no rule";
}

/* Refuse the patch: verdict, rule and a message naming the path (shown
 * escaped: it is attacker text). */

/* A finding: the rule and the path, or why the text cannot be read. */
static sbx_status found(struct sbx__patch_finding *f, sbx_patch_rule r, const char *path, size_t len)
{
    f->rule = r;
    sbx__buf_clear(&f->path);
    return sbx__buf_append(&f->path, path, len) == SBX_OK ? SBX_E_PATCH : SBX_E_NOMEM;
}

sbx_status sbx__patch_show(sbx__buf *out, const char *s, size_t n, size_t max)
{
    sbx_status st = SBX_OK;
    for (size_t i = 0; i < n && i < max && st == SBX_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        st = c < 0x20 || c == 0x7f || c == '\\' ? sbx__buf_printf(out, "\\x%02x", c) : sbx__buf_putc(out, (char)c);
    }
    return st;
}

static sbx_status unreadable(struct sbx__patch_finding *f, const char *what, const char *line, size_t n)
{
    sbx__buf shown = SBX__BUF_INIT;
    sbx_status st = sbx__patch_show(&shown, line, n, 80);
    f->rule = SBX_PATCH_RULE_NONE;
    snprintf(f->why, sizeof f->why, "%s in '%s'", what, shown.data ? shown.data : "");
    sbx__buf_free(&shown);
    return st == SBX_OK ? SBX_E_PARSE : st;
}

sbx_patch_rule sbx__patch_mode_rule(unsigned mode)
{
    switch (mode & 0170000) {
    case 0120000: return SBX_PATCH_RULE_SYMLINK;
    case 0160000: return SBX_PATCH_RULE_GITLINK;
    default: return SBX_PATCH_RULE_NONE;
    }
}

/* A mode line of the current file ("new file mode 120000", "new mode",
 * "old mode", the mode after an "index" line's names): a symbolic link or
 * a gitlink is refused however libgit2 reads it. */
static sbx_status check_mode(const char *v, size_t n, const sbx__buf *file, struct sbx__patch_finding *f)
{
    unsigned mode = 0;
    size_t i = 0;
    sbx_patch_rule r;
    while (i < n && v[i] >= '0' && v[i] <= '7' && mode < 01000000)
        mode = mode * 8 + (unsigned)(v[i++] - '0');
    if (i == 0 || (r = sbx__patch_mode_rule(mode)) == SBX_PATCH_RULE_NONE)
        return SBX_OK;
    return found(f, r, file->data ? file->data : "", file->len);
}

/* Check one header path (v, n as written after the line's keyword). */
static sbx_status check_path(const char *v, size_t n, bool strip, sbx__buf *tmp, struct sbx__patch_finding *f)
{
    sbx_patch_rule r;
    sbx_status st;
    size_t raw = 0;
    size_t name;
    while (raw < n && v[raw] != '\t')
        raw++;
    for (name = raw; name && v[name - 1] == ' '; name--)
        ;
    if (strip && name == 9 && memcmp(v, "/dev/null", 9) == 0)
        return SBX_OK; /* git reads "/dev/null " as /dev/null too */
    /* "+++ /etc/x": git strips a component, patch -p0 would not. */
    if (strip && raw && v[0] == '/')
        return found(f, SBX_PATCH_RULE_ABSOLUTE, v, raw);
    /* git takes "a/x " as a name ending in a space, libgit2 drops the space:
     * they would patch different files. */
    if (strip && name < raw && v[0] != '"')
        return unreadable(f, "a space after the name", v, raw);
    if ((st = sbx__patch_header_path(v, n, strip, tmp)) != SBX_OK)
        return st == SBX_E_PARSE ? unreadable(f, "a broken quoted path", v, n) : st;
    if (tmp->len && (r = sbx__patch_path_rule(tmp->data, tmp->len)) != SBX_PATCH_RULE_NONE)
        return found(f, r, tmp->data, tmp->len);
    return SBX_OK;
}

/* The "diff --git a/X b/Y" line alone names the paths of a file created or
 * deleted empty, or of a mode change. Its two names cannot be told apart
 * when they hold spaces, so every space-separated word (quoted ones whole)
 * is checked as a path: a name with a space before ".." or ".git" is
 * refused too, which is safe. */
static sbx_status check_git_line(const char *v, size_t n, sbx__buf *tmp, struct sbx__patch_finding *f)
{
    for (size_t i = 0; i < n;) {
        size_t end;
        sbx_status st;
        if (v[i] == ' ') {
            i++;
            continue;
        }
        if (v[i] == '"') {
            for (end = i + 1; end < n && !(v[end] == '"' && v[end - 1] != '\\'); end++)
                ;
            end = end < n ? end + 1 : n;
        } else {
            for (end = i; end < n && v[end] != ' '; end++)
                ;
        }
        if ((st = check_path(v + i, end - i, true, tmp, f)) != SBX_OK)
            return st;
        i = end;
    }
    return SBX_OK;
}

/* A hunk header's counts, for skipping its lines: they are content,
 * whatever they start with. A missing count is 1. */
static void hunk_size(const char *line, size_t n, long *old_left, long *new_left)
{
    if (!sbx__patch_hunk_counts(line, n, old_left, new_left))
        *old_left = *new_left = 1; /* libgit2 refuses the header: the patch is malformed anyway */
}

sbx_status sbx__patch_scan_headers(const char *t, size_t len, struct sbx__patch_finding *f)
{
    static const struct {
        const char *prefix;
        bool strip;
    } heads[] = {{"--- ", true}, {"+++ ", true}, {"rename from ", false}, {"rename to ", false},
                 {"copy from ", false}, {"copy to ", false}};
    sbx__buf tmp = SBX__BUF_INIT, file = SBX__BUF_INIT;
    long old_left = 0, new_left = 0;
    bool after_hunk = false;
    sbx_status st = SBX_OK;

    f->rule = SBX_PATCH_RULE_NONE;
    f->why[0] = '\0';
    for (size_t at = 0; at < len && st == SBX_OK;) {
        const char *line = t + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        if (old_left > 0 || new_left > 0) {
            if (n == 0 || line[0] == ' ')
                old_left--, new_left--;
            else if (line[0] == '-')
                old_left--;
            else if (line[0] == '+')
                new_left--;
            after_hunk = old_left <= 0 && new_left <= 0;
            continue;
        }
        /* A hunk line past the counts of its header: git calls the patch
         * corrupt, libgit2 ignores the line (an email's "-- " signature is
         * not a hunk line). */
        if (after_hunk && n && (line[0] == ' ' || line[0] == '+' || (line[0] == '-' && !(n == 3 && line[1] == '-' && line[2] == ' ') &&
                                                                     !sbx__patch_starts(line, n, "--- "))))
            { st = unreadable(f, "a hunk line past its header's counts", line, n); break; }
        if (n && line[0] != '\\')
            after_hunk = false;
        if (sbx__patch_starts(line, n, "@@ -")) {
            hunk_size(line, n, &old_left, &new_left);
            continue;
        }
        if (sbx__patch_starts(line, n, "diff --git ")) {
            const char *v = line + 11;
            size_t vn = n - 11, name = vn >= 5 ? (vn - 5) / 2 : 0;
            st = check_git_line(v, vn, &tmp, f);
            sbx__buf_clear(&file);
            /* The file the mode lines below are about, for the message: X
             * of "a/X b/X" (a file created, deleted or changed in place),
             * else the line as written. */
            if (name && vn == 2 * name + 5 && memcmp(v, "a/", 2) == 0 && memcmp(v + 2 + name, " b/", 3) == 0 &&
                memcmp(v + 2, v + 5 + name, name) == 0) {
                v += 2;
                vn = name;
            }
            if (st == SBX_OK && sbx__buf_append(&file, v, vn) != SBX_OK)
                st = SBX_E_NOMEM;
            continue;
        }
        if (sbx__patch_starts(line, n, "new file mode ") || sbx__patch_starts(line, n, "new mode ") ||
            sbx__patch_starts(line, n, "old mode ")) {
            size_t k = line[4] == 'f' ? 14 : 9;
            st = check_mode(line + k, n - k, &file, f);
            continue;
        }
        if (sbx__patch_starts(line, n, "index ")) {
            const char *sp = memchr(line + 6, ' ', n - 6);
            if (sp)
                st = check_mode(sp + 1, n - (size_t)(sp + 1 - line), &file, f);
            continue;
        }
        for (size_t h = 0; h < SBX__ARRAY_LEN(heads); h++) {
            size_t k = strlen(heads[h].prefix);
            if (!sbx__patch_starts(line, n, heads[h].prefix))
                continue;
            st = check_path(line + k, n - k, heads[h].strip, &tmp, f);
            break;
        }
    }
    sbx__buf_free(&tmp);
    sbx__buf_free(&file);
    return st;
}
