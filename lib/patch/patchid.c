/* SPDX-License-Identifier: MIT */
/* patchid: a patch's id as `git patch-id --stable` computes it. */
#include "util/internal.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "patch/patch_int.h"

/*
 * `git patch-id --stable` as git 2.39 computes it, written from its
 * definition: per file, the SHA-1 of the diff's lines with all white space
 * removed ("index" lines and "\ No newline" markers left out, a binary
 * file counted by the object names of its "index" line), the files' hashes
 * summed bytewise with carry. libgit2's git_diff_patchid() differs on
 * renames and binary files, so it is not used.
 */
struct pid {
    EVP_MD_CTX *ctx;
    unsigned char sum[20];
    size_t hashed;
};

static bool pid_flush(struct pid *d)
{
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int hl = 0;
    unsigned carry = 0;
    if (EVP_DigestFinal_ex(d->ctx, h, &hl) != 1 || hl != 20 || EVP_DigestInit_ex(d->ctx, EVP_sha1(), NULL) != 1)
        return false;
    for (size_t i = 0; i < 20; i++) {
        carry += (unsigned)d->sum[i] + h[i];
        d->sum[i] = (unsigned char)carry;
        carry >>= 8;
    }
    return true;
}

/* Hash a line without its white space. */
static bool pid_line(struct pid *d, const char *l, size_t n)
{
    char buf[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)l[i];
        if (c == ' ' || (c >= '\t' && c <= '\r'))
            continue;
        buf[k++] = (char)c;
        if (k == sizeof buf) {
            if (EVP_DigestUpdate(d->ctx, buf, k) != 1)
                return false;
            d->hashed += k;
            k = 0;
        }
    }
    d->hashed += k;
    return EVP_DigestUpdate(d->ctx, buf, k) == 1;
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

/* A hunk header's line counts (a missing count is 1); false if malformed. */
static bool hunk_counts(const char *l, size_t n, long *before, long *after)
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

/* The pre- and post-image names of an "index A..B [mode]" line. */
static void index_names(const char *l, size_t n, char pre[65], char post[65])
{
    const char *v = l + 6, *dots = NULL, *end = l + n;
    for (const char *c = v; c + 1 < end; c++)
        if (c[0] == '.' && c[1] == '.') {
            dots = c;
            break;
        }
    if (!dots)
        return;
    {
        const char *e2 = memchr(dots, ' ', (size_t)(end - dots));
        size_t a = (size_t)(dots - v), b;
        if (!e2)
            e2 = end - (n && l[n - 1] == '\n' ? 1 : 0);
        b = (size_t)(e2 - (dots + 2));
        snprintf(pre, 65, "%.*s", (int)(a < 64 ? a : 64), v);
        snprintf(post, 65, "%.*s", (int)(b < 64 ? b : 64), dots + 2);
    }
}

static bool hex40(const char *l, size_t n)
{
    if (n < 40)
        return false;
    for (size_t i = 0; i < 40; i++)
        if (!((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f') || (l[i] >= 'A' && l[i] <= 'F')))
            return false;
    return true;
}

bool sbx__patch_id(const char *t, size_t len, char out[41])
{
    struct pid d = {NULL, {0}, 0};
    long before = -1, after = -1;
    bool binary = false, ok = true;
    char pre[65] = "", post[65] = "";

    out[0] = '\0';
    if (!(d.ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(d.ctx, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(d.ctx);
        return false;
    }
    for (size_t at = 0; at < len && ok;) {
        const char *l = t + at, *nl = memchr(l, '\n', len - at);
        size_t n = nl ? (size_t)(nl - l) + 1 : len - at;
        at += n;
        if (sbx__patch_starts(l, n, "\\ ") && n > 12)
            continue;
        if (hex40(sbx__patch_starts(l, n, "commit ") ? l + 7 : sbx__patch_starts(l, n, "From ") ? l + 5 : l,
                  n - (sbx__patch_starts(l, n, "commit ") ? 7 : sbx__patch_starts(l, n, "From ") ? 5 : 0)))
            break;
        if (!d.hashed && !sbx__patch_starts(l, n, "diff "))
            continue;
        if (before == -1) {
            if (sbx__patch_starts(l, n, "GIT binary patch") || sbx__patch_starts(l, n, "Binary files")) {
                binary = true;
                before = 0;
                ok = EVP_DigestUpdate(d.ctx, pre, strlen(pre)) == 1 && EVP_DigestUpdate(d.ctx, post, strlen(post)) == 1 &&
                     pid_flush(&d);
                continue;
            }
            if (sbx__patch_starts(l, n, "index ")) {
                index_names(l, n, pre, post);
                continue;
            }
            if (sbx__patch_starts(l, n, "--- "))
                before = after = 1;
            else if (!((l[0] >= 'a' && l[0] <= 'z') || (l[0] >= 'A' && l[0] <= 'Z')))
                break;
        }
        if (binary) {
            if (sbx__patch_starts(l, n, "diff ")) {
                binary = false;
                before = -1;
            }
            continue;
        }
        if (before == 0 && after == 0) {
            if (sbx__patch_starts(l, n, "@@ -")) {
                hunk_counts(l, n, &before, &after);
                continue;
            }
            if (!sbx__patch_starts(l, n, "diff "))
                break;
            ok = pid_flush(&d);
            before = after = -1;
        }
        if (l[0] == '-' || l[0] == ' ')
            before--;
        if (l[0] == '+' || l[0] == ' ')
            after--;
        ok = ok && pid_line(&d, l, n);
    }
    ok = ok && pid_flush(&d);
    EVP_MD_CTX_free(d.ctx);
    if (!ok)
        return false;
    if (d.hashed) /* git prints nothing for a patch with nothing to hash */
        for (size_t i = 0; i < 20; i++)
            snprintf(out + 2 * i, 3, "%02x", d.sum[i]);
    return true;
}
