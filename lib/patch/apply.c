/* SPDX-License-Identifier: MIT */
/*
 * apply: a text patch's hunks applied to a file's bytes the way
 * `git apply` places them, so the verdict is git's.
 *
 * libgit2's apply looks for a hunk at its stated line only; git searches:
 * from the line the hunk names (in the new numbering, earlier hunks being
 * applied already), outwards, one line down then one line up, alternately,
 * for the whole preimage (context and removed lines, byte for byte, no
 * fuzz), never over lines an earlier hunk wrote. A hunk starting at line 0
 * or 1 must match at the beginning; one without trailing context, at the
 * end. This file does that; libgit2 parses.
 */
#include "util/internal.h"

#include <git2.h>
#include <stdio.h>
#include <string.h>

#include "patch/apply.h"
#include "util/buf.h"

struct line {
    const char *p;
    size_t n;
    bool patched;
};

struct image {
    struct line *l;
    size_t n, cap;
};

static bool image_push(struct image *im, const char *p, size_t n, bool patched)
{
    if (im->n == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 64;
        struct line *l = sbx__realloc(im->l, cap * sizeof *l);
        if (!l)
            return false;
        im->l = l;
        im->cap = cap;
    }
    im->l[im->n].p = p;
    im->l[im->n].n = n;
    im->l[im->n++].patched = patched;
    return true;
}

/* Lines of buf, each with its newline (the last may have none), in one
 * allocation. */
static bool image_split(struct image *im, const char *buf, size_t len)
{
    size_t lines = 1;
    for (const char *c = buf, *end = buf + len; (c = memchr(c, '\n', (size_t)(end - c))) != NULL; c++)
        lines++;
    if (!(im->l = sbx__malloc(lines * sizeof *im->l)))
        return false;
    im->cap = lines;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) + 1 : len - at;
        if (!image_push(im, buf + at, n, false))
            return false;
        at += n;
    }
    return true;
}

/* Whether pre matches the image at line k, as git's match_fragment does
 * without white-space options. */
static bool matches(const struct image *im, const struct image *pre, size_t k, bool at_end)
{
    if (k + pre->n > im->n || (at_end && k + pre->n != im->n))
        return false;
    for (size_t i = 0; i < pre->n; i++) {
        const struct line *a = &im->l[k + i], *b = &pre->l[i];
        if (a->patched || a->n != b->n || memcmp(a->p, b->p, a->n) != 0)
            return false;
    }
    return true;
}

/* git's find_pos: from line, down one, up one, down two... */
static long find_pos(const struct image *im, const struct image *pre, size_t line, bool at_start, bool at_end)
{
    size_t back, fwd;
    if (at_start)
        line = 0;
    else if (at_end)
        line = im->n >= pre->n ? im->n - pre->n : im->n;
    if (line > im->n)
        line = im->n;
    back = fwd = line;
    if (at_start && line != 0)
        return -1;
    for (size_t i = 0;; i++) {
        size_t try = i == 0 ? line : (i & 1) ? fwd : back;
        if (i > 0) {
            if (back == 0 && fwd == im->n)
                return -1;
            if (i & 1) {
                if (fwd == im->n)
                    continue;
                try = ++fwd;
            } else {
                if (back == 0)
                    continue;
                try = --back;
            }
        }
        if (matches(im, pre, try, at_end) && !(at_start && try != 0))
            return (long)try;
    }
}

/* One hunk's preimage and postimage lines, and its leading and trailing
 * context counts. Lines point into libgit2's patch. */
static sbx_status hunk_images(git_patch *gp, size_t h, size_t nlines, struct image *pre, struct image *post,
                              size_t *leading, size_t *trailing)
{
    bool seen_change = false;
    *leading = *trailing = 0;
    for (size_t i = 0; i < nlines; i++) {
        const git_diff_line *l;
        if (git_patch_get_line_in_hunk(&l, gp, h, i) < 0)
            return SBX_E_INTERNAL;
        switch (l->origin) {
        case GIT_DIFF_LINE_CONTEXT:
            if (!image_push(pre, l->content, l->content_len, false) ||
                !image_push(post, l->content, l->content_len, true))
                return SBX_E_NOMEM;
            if (!seen_change)
                (*leading)++;
            (*trailing)++;
            break;
        case GIT_DIFF_LINE_DELETION:
            if (!image_push(pre, l->content, l->content_len, false))
                return SBX_E_NOMEM;
            seen_change = true;
            *trailing = 0;
            break;
        case GIT_DIFF_LINE_ADDITION:
            if (!image_push(post, l->content, l->content_len, true))
                return SBX_E_NOMEM;
            seen_change = true;
            *trailing = 0;
            break;
        case GIT_DIFF_LINE_CONTEXT_EOFNL: /* "\ No newline at end of file": the line before has none */
        case GIT_DIFF_LINE_DEL_EOFNL:
        case GIT_DIFF_LINE_ADD_EOFNL:
            if (l->origin != GIT_DIFF_LINE_ADD_EOFNL && pre->n && pre->l[pre->n - 1].n &&
                pre->l[pre->n - 1].p[pre->l[pre->n - 1].n - 1] == '\n')
                pre->l[pre->n - 1].n--;
            if (l->origin != GIT_DIFF_LINE_DEL_EOFNL && post->n && post->l[post->n - 1].n &&
                post->l[post->n - 1].p[post->l[post->n - 1].n - 1] == '\n')
                post->l[post->n - 1].n--;
            break;
        default:
            break;
        }
    }
    return SBX_OK;
}

/* Replace im's lines [k, k + pre_n) with post's. */
static bool image_replace(struct image *im, size_t k, size_t pre_n, const struct image *post)
{
    struct image out = {NULL, 0, 0};
    for (size_t i = 0; i < k; i++)
        if (!image_push(&out, im->l[i].p, im->l[i].n, im->l[i].patched))
            goto fail;
    for (size_t i = 0; i < post->n; i++)
        if (!image_push(&out, post->l[i].p, post->l[i].n, true))
            goto fail;
    for (size_t i = k + pre_n; i < im->n; i++)
        if (!image_push(&out, im->l[i].p, im->l[i].n, im->l[i].patched))
            goto fail;
    sbx__free(im->l);
    *im = out;
    return true;
fail:
    sbx__free(out.l);
    return false;
}

sbx_status sbx__apply_text(const char *pre_buf, size_t pre_len, git_patch *gp, char **out, size_t *out_len,
                           char *why, size_t why_cap)
{
    struct image im = {NULL, 0, 0};
    sbx_status st = SBX_OK;
    size_t nh = git_patch_num_hunks(gp);

    *out = NULL;
    *out_len = 0;
    why[0] = '\0';
    if (!image_split(&im, pre_buf, pre_len))
        return SBX_E_NOMEM;
    for (size_t h = 0; h < nh && st == SBX_OK; h++) {
        const git_diff_hunk *hk;
        size_t nlines, leading, trailing;
        struct image pre = {NULL, 0, 0}, post = {NULL, 0, 0};
        long at;
        if (git_patch_get_hunk(&hk, &nlines, gp, h) < 0) {
            st = SBX_E_INTERNAL;
            break;
        }
        st = hunk_images(gp, h, nlines, &pre, &post, &leading, &trailing);
        if (st == SBX_OK) {
            bool at_start = hk->old_start <= 1, at_end = trailing == 0;
            size_t line = hk->new_start > 0 ? (size_t)hk->new_start - 1 : 0;
            (void)leading;
            at = find_pos(&im, &pre, line, at_start, at_end);
            if (at < 0) {
                size_t n = hk->header_len;
                while (n && (hk->header[n - 1] == '\n' || hk->header[n - 1] == '\r'))
                    n--;
                snprintf(why, why_cap, "hunk %.*s: its context and removed lines are not in the file%s",
                         (int)(n < 100 ? n : 100), hk->header,
                         at_start ? " at its start" : at_end ? " at its end" : "");
                st = SBX_E_PATCH;
            } else if (!image_replace(&im, (size_t)at, pre.n, &post)) {
                st = SBX_E_NOMEM;
            }
        }
        sbx__free(pre.l);
        sbx__free(post.l);
    }
    if (st == SBX_OK) { /* the result in one allocation */
        size_t total = 0, at = 0;
        for (size_t i = 0; i < im.n; i++)
            total += im.l[i].n;
        if (!(*out = sbx__malloc(total + 1))) {
            st = SBX_E_NOMEM;
        } else {
            for (size_t i = 0; i < im.n; i++) {
                memcpy(*out + at, im.l[i].p, im.l[i].n);
                at += im.l[i].n;
            }
            (*out)[total] = '\0';
            *out_len = total;
        }
    }
    sbx__free(im.l);
    return st;
}
