/* SPDX-License-Identifier: MIT */
/* text: a diff's text in the forms the readers need (git's headers for
 * plain diff -u, what libgit2 parses), and the paths of its header lines. */
#include "util/internal.h"

#include <string.h>

#include "patch/patch_int.h"

/* A C-quoted path as git writes it ("a/sp\\303\\251c") into out:
 * SBX_E_PARSE if the quoting is broken, SBX_E_NOMEM. */
static sbx_status unquote(const char *s, size_t n, sbx__buf *out)
{
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (c == '"')
            return i == n - 1 || s[i + 1] == '\t' || s[i + 1] == ' ' ? SBX_OK : SBX_E_PARSE;
        if (c != '\\') {
            if (sbx__buf_putc(out, c) != SBX_OK)
                return SBX_E_NOMEM;
            continue;
        }
        if (++i >= n)
            return SBX_E_PARSE;
        c = s[i];
        if (c >= '0' && c <= '7') {
            unsigned v = 0;
            for (int k = 0; k < 3 && i < n && s[i] >= '0' && s[i] <= '7'; k++, i++)
                v = v * 8 + (unsigned)(s[i] - '0');
            i--;
            c = (char)(v & 0xff);
        } else {
            const char *from = "abtnvfr\"\\", *to = "\a\b\t\n\v\f\r\"\\";
            const char *f = strchr(from, c);
            if (!f || !c)
                return SBX_E_PARSE;
            c = to[f - from];
        }
        if (sbx__buf_putc(out, c) != SBX_OK)
            return SBX_E_NOMEM;
    }
    return SBX_E_PARSE;
}

/* The path of a header line's value: quoted or up to a tab (diff -u adds
 * a timestamp after one); strip_prefix drops the first component, as
 * `git apply -p1` does. Empty for /dev/null. */
sbx_status sbx__patch_header_path(const char *v, size_t n, bool strip_prefix, sbx__buf *out)
{
    sbx__buf_clear(out);
    if (n && v[0] == '"') {
        sbx_status st = unquote(v, n, out);
        if (st != SBX_OK)
            return st;
    } else {
        size_t k = 0;
        while (k < n && v[k] != '\t')
            k++;
        while (k && v[k - 1] == ' ' && strip_prefix) /* git adds no trailing space; diff -u may */
            k--;
        if (k == 9 && memcmp(v, "/dev/null", 9) == 0)
            return SBX_OK;
        if (sbx__buf_append(out, v, k) != SBX_OK)
            return SBX_E_NOMEM;
    }
    if (strip_prefix && out->len) {
        char *slash = memchr(out->data, '/', out->len);
        if (slash)
            sbx__buf_consume(out, (size_t)(slash - out->data) + 1);
    }
    return SBX_OK;
}


/* libgit2 reads only git's format: a file section of plain `diff -u`
 * output (a "--- " line followed by "+++ " and a hunk, with no "diff --git"
 * header) gets one. Returns the text to parse: t itself, or *conv. */
sbx_status sbx__patch_git_form(const char *t, size_t len, sbx__buf *conv, bool *converted)
{
    sbx__buf oldp = SBX__BUF_INIT, newp = SBX__BUF_INIT;
    bool git_header = false, last_minus = false;
    sbx_status st = SBX_OK;
    *converted = false;
    for (size_t at = 0; at < len && st == SBX_OK;) {
        const char *line = t + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) + 1 : len - at;
        const char *next = line + n;
        size_t rest = len - at - n;
        at += n;
        if (n >= 11 && memcmp(line, "diff --git ", 11) == 0)
            git_header = true;
        else if (n >= 3 && memcmp(line, "@@ ", 3) == 0)
            git_header = false; /* the next "--- " starts a new file */
        if (!git_header && n >= 4 && memcmp(line, "--- ", 4) == 0 && rest >= 4 && memcmp(next, "+++ ", 4) == 0) {
            const char *nl2 = memchr(next, '\n', rest);
            size_t n2 = nl2 ? (size_t)(nl2 - next) : rest;
            /* A broken quoted path, or two /dev/null: SBX_E_PARSE. */
            if ((st = sbx__patch_header_path(line + 4, n - 4 - (line[n - 1] == '\n'), true, &oldp)) != SBX_OK ||
                (st = sbx__patch_header_path(next + 4, n2 - 4, true, &newp)) != SBX_OK)
                break;
            if (!oldp.len && !newp.len) {
                st = SBX_E_PARSE;
                break;
            }
            {
                const sbx__buf *name = newp.len ? &newp : &oldp;
                st = sbx__buf_printf(conv, "diff --git a/%.*s b/%.*s\n%s", (int)name->len, name->data,
                                     (int)name->len, name->data,
                                     !oldp.len ? "new file mode 100644\n" : !newp.len ? "deleted file mode 100644\n" : "");
                /* `diff -u x.orig x` names two files; like patch(1), the
                 * file patched is one name, the new one. */
                if (st == SBX_OK)
                    st = sbx__buf_printf(conv, "--- %s%.*s\n+++ %s%.*s\n", oldp.len ? "a/" : "/dev/null",
                                         oldp.len ? (int)name->len : 0, name->data, newp.len ? "b/" : "/dev/null",
                                         newp.len ? (int)name->len : 0, name->data);
            }
            at += n2 + (nl2 ? 1 : 0);
            *converted = true;
            last_minus = false;
            continue;
        }
        /* `diff -r` writes "diff -ru a/x b/x" and "Only in" lines: not for
         * git. Never dropped between a "--- " line and a "+++ " one, which
         * would make a pair of them and the text read differently when
         * loaded again. */
        if (((sbx__patch_starts(line, n, "diff ") && !sbx__patch_starts(line, n, "diff --git ")) ||
             sbx__patch_starts(line, n, "Only in ")) &&
            !(last_minus && sbx__patch_starts(next, rest, "+++ ")))
            continue;
        last_minus = sbx__patch_starts(line, n, "--- ");
        st = sbx__buf_append(conv, line, n);
    }
    sbx__buf_free(&oldp);
    sbx__buf_free(&newp);
    return st;
}

/* The second name of a "diff --git" line, as written (quoted or not). */
static void second_name(const char *v, size_t n, const char **name, size_t *len)
{
    if (n && v[0] == '"') {
        size_t i = 1;
        while (i < n && !(v[i] == '"' && v[i - 1] != '\\'))
            i++;
        i += 2; /* the quote and the space */
        *name = i < n ? v + i : v + n;
        *len = i < n ? n - i : 0;
        return;
    }
    /* "a/P b/P": a file created or deleted has the same P twice. */
    *len = n > 5 ? (n - 5) / 2 + 2 : 0;
    *name = v + n - *len;
}

/* libgit2 (1.5) cannot parse a section that creates or deletes an empty
 * file (a header, no "---"/"+++" lines, no hunk), which git writes; the
 * text libgit2 parses gets those two lines added. */
sbx_status sbx__patch_libgit2_form(const char *t, size_t len, sbx__buf *out, bool *changed)
{
    const char *name = NULL;
    size_t name_len = 0;
    int kind = 0; /* 1 new file, 2 deleted file, 0 other */
    bool has_body = false;
    *changed = false;
    for (size_t at = 0; at <= len; ) {
        const char *l = t + at, *nl = at < len ? memchr(l, '\n', len - at) : NULL;
        size_t n = at < len ? (nl ? (size_t)(nl - l) + 1 : len - at) : 0;
        bool next_file = at == len || sbx__patch_starts(l, n, "diff --git ");
        if (next_file && kind && !has_body) {
            sbx_status st;
            *changed = true;
            if (!out) /* only asked whether a change is needed */
                return SBX_OK;
            st = kind == 1 ? sbx__buf_printf(out, "--- /dev/null\n+++ %.*s\n", (int)name_len, name)
                                      : sbx__buf_printf(out, "--- a/%.*s\n+++ /dev/null\n", (int)(name_len - 2),
                                                        name + 2);
            if (st != SBX_OK)
                return st;
        }
        if (at == len)
            break;
        if (next_file) {
            second_name(l + 11, n - 11 - (l[n - 1] == '\n'), &name, &name_len);
            kind = 0;
            has_body = false;
        } else if (name && sbx__patch_starts(l, n, "new file mode ")) {
            kind = 1; /* only inside a "diff --git" section, whose name is known */
        } else if (name && name_len >= 2 && sbx__patch_starts(l, n, "deleted file mode ")) {
            kind = 2;
        } else if (sbx__patch_starts(l, n, "--- ") || sbx__patch_starts(l, n, "GIT binary patch") || sbx__patch_starts(l, n, "Binary files") ||
                   sbx__patch_starts(l, n, "@@ ")) {
            has_body = true;
        }
        if (out && sbx__buf_append(out, l, n) != SBX_OK)
            return SBX_E_NOMEM;
        at += n;
    }
    return SBX_OK;
}

/* The digits at q (before end): their count, and their value in *v (capped:
 * a count that large fails the hunk anyway). The text is not NUL-ended, so
 * no strtol. */
static size_t digits(const char *q, const char *end, long *v)
{
    size_t k = 0;
    long x = 0;
    for (; q + k < end && q[k] >= '0' && q[k] <= '9'; k++)
        if (x < 100000000)
            x = x * 10 + (q[k] - '0');
    if (v)
        *v = x;
    return k;
}

bool sbx__patch_hunk_counts(const char *l, size_t n, long *before, long *after)
{
    const char *q = l + 4, *end = l + n;
    size_t k = digits(q, end, NULL);
    *before = 1;
    if (q + k < end && q[k] == ',') {
        q += k + 1;
        k = digits(q, end, before);
    }
    if (k == 0 || q + k + 1 >= end || q[k] != ' ' || q[k + 1] != '+')
        return false;
    q += k + 2;
    k = digits(q, end, NULL);
    *after = 1;
    if (q + k < end && q[k] == ',') {
        q += k + 1;
        k = digits(q, end, after);
    }
    return k > 0;
}
