/* SPDX-License-Identifier: MIT */
/*
 * Differential fuzz target for the NDJSON splitter (lib/util/ndjson.c). The
 * first input byte picks the line limit (below 0x80: 4096 bytes; else
 * 1..128), the rest is the stream. The stream is fed whole, byte by byte,
 * and cut at points a generator seeded by the input picks; every way must
 * give the lines (and the final status) a plain reading of the bytes
 * gives: lines end at '\n', one '\r' before it is dropped, empty lines are
 * skipped, a last line without '\n' comes at the end, and a line longer
 * than the limit stops everything. A callback that stops at line k stops
 * the feed there. Built with libFuzzer by -Dfuzz=true (clang); built
 * without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines as received: each as its length (size_t) then its bytes. */
struct lines {
    char *p;
    size_t len, cap;
    size_t count;
    size_t stop_at; /* return non-zero on this line (1-based); 0: never */
};

static void put(struct lines *l, const void *p, size_t n)
{
    if (l->len + n > l->cap) {
        l->cap = (l->len + n) * 2 + 64;
        if (!(l->p = realloc(l->p, l->cap)))
            abort();
    }
    memcpy(l->p + l->len, p, n);
    l->len += n;
}

static int on_line(const char *line, size_t len, void *user)
{
    struct lines *l = user;
    if (len == 0)
        abort(); /* empty lines are never delivered */
    put(l, &len, sizeof len);
    put(l, line, len);
    return ++l->count == l->stop_at;
}

/* What the splitter must produce, read in the plainest way. */
static sbx_status reference(const char *s, size_t n, size_t max, struct lines *l)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (s + i)) : n - i, d = k;
        if (k > max)
            return SBX_E_BUDGET_EXCEEDED;
        if (d && s[i + d - 1] == '\r')
            d--;
        if (d && on_line(s + i, d, l))
            return SBX_E_CANCELLED;
        i += k + (nl ? 1 : 0);
    }
    return SBX_OK;
}

/* Feed s in pieces: cut[] lists the piece lengths, repeated cyclically. */
static sbx_status split(const char *s, size_t n, size_t max, const size_t *cut, size_t ncut, struct lines *l)
{
    sbx__ndjson nd;
    sbx_status st = SBX_OK;
    size_t i = 0, c = 0;
    sbx__ndjson_init(&nd, max);
    while (i < n && st == SBX_OK) {
        size_t k = cut[c++ % ncut];
        if (k > n - i)
            k = n - i;
        st = sbx__ndjson_feed(&nd, s + i, k, on_line, l);
        i += k;
        if (st == SBX_OK && sbx__ndjson_pending(&nd) > max)
            abort(); /* held back more than a line may be */
    }
    if (st == SBX_OK)
        st = sbx__ndjson_finish(&nd, on_line, l);
    if (st == SBX_E_BUDGET_EXCEEDED && sbx__ndjson_feed(&nd, "x\n", 2, on_line, l) != SBX_E_BUDGET_EXCEEDED)
        abort(); /* a broken stream stays broken */
    sbx__ndjson_free(&nd);
    return st;
}

static void same(sbx_status want, const struct lines *ref, sbx_status got, struct lines *l)
{
    if (want != got || ref->count != l->count || ref->len != l->len || (l->len && memcmp(ref->p, l->p, l->len) != 0))
        abort();
    free(l->p);
    memset(l, 0, sizeof *l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lines ref = {0}, got = {0};
    const char *s = (const char *)data + 1;
    size_t n, max, cut[16], whole;
    sbx_status want, st;
    uint64_t h = 1469598103934665603u;

    if (size == 0)
        return 0;
    n = size - 1;
    max = data[0] < 0x80 ? 4096 : (size_t)(data[0] & 0x7f) + 1;
    want = reference(s, n, max, &ref);

    whole = n ? n : 1;
    same(want, &ref, split(s, n, max, &whole, 1, &got), &got);
    if (n <= 4096) {
        size_t one = 1;
        same(want, &ref, split(s, n, max, &one, 1, &got), &got);
    }
    /* Cut points from the input's own hash: the same input, the same cuts. */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211u;
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < 16; i++) {
            h = h * 6364136223846793005u + 1442695040888963407u;
            cut[i] = (size_t)(h >> 33) % (round < 2 ? 8 : max + 2) + (round & 1);
        }
        same(want, &ref, split(s, n, max, cut, 16, &got), &got);
    }
    /* A callback that stops at line k: exactly k lines, and the feed says so. */
    if (ref.count > 0) {
        struct lines ref2 = {0};
        size_t k = 1 + (size_t)(h % ref.count);
        ref2.stop_at = got.stop_at = k;
        st = reference(s, n, max, &ref2);
        if (st != SBX_E_CANCELLED || ref2.count != k)
            abort();
        cut[0] = 3;
        same(st, &ref2, split(s, n, max, cut, 1, &got), &got);
        free(ref2.p);
    }
    free(ref.p);
    return 0;
}
