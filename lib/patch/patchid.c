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
    EVP_MD *md;         /* fetched once per patch: an implicit fetch per file costs more than the hashing */
    unsigned char sum[20];
    size_t hashed;
    size_t k;           /* bytes waiting in buf: one digest update per 4 KiB, not per line */
    char buf[4096];
};

static bool pid_drain(struct pid *d)
{
    bool ok = d->k == 0 || EVP_DigestUpdate(d->ctx, d->buf, d->k) == 1;
    d->k = 0;
    return ok;
}

static bool pid_flush(struct pid *d)
{
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int hl = 0;
    unsigned carry = 0;
    if (!pid_drain(d) || EVP_DigestFinal_ex(d->ctx, h, &hl) != 1 || hl != 20 || EVP_DigestInit_ex(d->ctx, d->md, NULL) != 1)
        return false;
    for (size_t i = 0; i < 20; i++) {
        carry += (unsigned)d->sum[i] + h[i];
        d->sum[i] = (unsigned char)carry;
        carry >>= 8;
    }
    return true;
}

/* Hash a line without its white space (space, \t \n \v \f \r). */
static bool pid_line(struct pid *d, const char *l, size_t n)
{
    static const unsigned char space[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1};
    while (n) {
        size_t take, k0;
        if (d->k == sizeof d->buf && !pid_drain(d))
            return false;
        take = sizeof d->buf - d->k < n ? sizeof d->buf - d->k : n;
        k0 = d->k;
        for (size_t i = 0; i < take; i++) { /* branch-free: store, then keep it or not */
            unsigned char c = (unsigned char)l[i];
            d->buf[d->k] = (char)c;
            d->k += 1u - space[c];
        }
        d->hashed += d->k - k0;
        l += take;
        n -= take;
    }
    return true;
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
    struct pid d = {0};
    long before = -1, after = -1;
    bool binary = false, ok = true;
    char pre[65] = "", post[65] = "";

    out[0] = '\0';
    if (!(d.md = EVP_MD_fetch(NULL, "SHA1", NULL)) || !(d.ctx = EVP_MD_CTX_new()) ||
        EVP_DigestInit_ex(d.ctx, d.md, NULL) != 1) {
        EVP_MD_CTX_free(d.ctx);
        EVP_MD_free(d.md);
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
                ok = pid_line(&d, pre, strlen(pre)) && pid_line(&d, post, strlen(post)) && pid_flush(&d);
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
                sbx__patch_hunk_counts(l, n, &before, &after);
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
    EVP_MD_free(d.md);
    if (!ok)
        return false;
    if (d.hashed) /* git prints nothing for a patch with nothing to hash */
        for (size_t i = 0; i < 20; i++)
            snprintf(out + 2 * i, 3, "%02x", d.sum[i]);
    return true;
}
