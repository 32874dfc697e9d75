/* SPDX-License-Identifier: MIT */
/*
 * The redactor's three-byte prefilter: which of 64 positions could start
 * a candidate, from the byte there and the two after it, in a handful of
 * AVX-512 VBMI instructions (a table lookup of 64 bytes at once); where
 * the CPU lacks VBMI but has AVX2, the AVX2 prefilter below; elsewhere the
 * scalar pair filter alone.
 *
 * Each candidate is described by a few alternatives, a set of bytes for
 * each of its first three positions (a literal raw, or beginning with an
 * escape). Alternatives are put into 32 buckets; a byte's table entry says
 * which buckets do not allow it at that position, and a position passes
 * when one bucket is in none of its three bytes' entries. The tables have
 * 128 entries (one vpermi2b each): a byte of 128 or more is looked up as
 * 0 at positions 1 and 2 (a zeroing lookup: every bucket allows it), and
 * at position 0 as every bucket but those whose set holds one (hi0v). The
 * lookups are most of the filter's cost: a third of the time on build
 * logs, so each one saved counts. A bucket allows the product of its
 * sets, more than its alternatives, so the filter lets through a superset:
 * the scalar checks behind it decide. The buckets are chosen greedily to
 * keep those products small for the bytes that are common in logs.
 *
 * Token shapes with a quick reject (`ghp_` needs alphanumerics from byte
 * 4) get the first 8 buckets, one per need_from while they last (then
 * sharing one, with the overlap of their needs). Those buckets are looked
 * up by a token's bytes 0, 1 and 3: the fourth is often its separator
 * (`npm_`, `api_org_`), which keeps `npm WARN` and `/api/` away from the
 * class test. A position that only such buckets let through goes on only
 * where the bytes its bucket needs have that class, tested from the
 * classes of the 128 bytes at hand: a near miss (`ghp_short`) then never
 * leaves the block, which is what keeps input dense with near misses
 * within 3x of clean text.
 *
 * Where the CPU has AVX2 but not VBMI, a second prefilter splits the work
 * by what it looks for (sbx__tri_build_avx2):
 * - the shapes' triggers, by their first four bytes in 16 buckets of
 *   nibble tables (Teddy: `vpshufb` on the low and the high nibble); a
 *   trigger without a quick reject is kept out of the buckets whose
 *   members all have one while it can be;
 * - the registered values and their forms, raw: a literal of seven bytes
 *   or more holds, in its first seven, the four bytes at some position
 *   that is a multiple of four; those four bytes, at each of its offsets
 *   0 to 3, are hashed into a set of 32,768 nibbles (the bit of the
 *   offset), tested at every fourth position with one gather for eight
 *   of them, which marks the one position the literal would start at;
 * - a literal whose first seven bytes hold an escape (`%`, `\`, ESC, `+`,
 *   a quote): the positions up to six bytes before an escape byte that
 *   the next byte goes on (a hex digit after `%`, `[` after ESC: "42%]"
 *   holds none), from which every byte up to it is one the literals
 *   have there (a nibble test of their bytes at offsets 0 to 5), not
 *   every byte before a quote in a log;
 * - a base64 form wrapped by a line break in its first seven bytes: the
 *   four bytes after a line break, at each of the form's offsets 1 to 6,
 *   hashed into a set of their own; only a break they follow marks the
 *   positions before it (not every line end of a log).
 * Nibble tables alone could not keep the random-looking values apart (the
 * pieces can), and marking the bytes before every line break was the cost
 * that sank an eight-byte shift-or.
 *
 * Building with -DSBX_NO_SIMD leaves the prefilters out (as on other CPUs).
 */
#include <stdatomic.h>
#include <string.h>

#include "util/internal.h"
#include "redact/redact_int.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(SBX_NO_SIMD)
#define TRI_X86 1
#include <immintrin.h>
#endif

/* The AVX2 filter's piece set: a 15-bit hash of four bytes (the high
 * half folded in before the multiply: build-log pieces differ in few
 * bits, and the bare product's top bits collided on them). */
#define GSLOTS 32768u
static inline uint32_t ghash(uint32_t w)
{
    w ^= w >> 15;
    return (w * SBX__PIECE_MUL) >> 17;
}
#define NB 4 /* bytes of buckets per table entry: 32 buckets */

/* The AVX2 filter (no VBMI): see sbx__tri_build_avx2. Its trigger
 * buckets: AVX2_SETS tables of 8. */
#define AVX2_SETS 2
struct avx2 {
    /* the shapes' triggers, Teddy style: for each of the first three
     * positions, the buckets a low and a high nibble allow (16 entries,
     * repeated for both 128-bit lanes) */
    uint8_t lo[AVX2_SETS][SBX__AVX2_BYTES][32], hi[AVX2_SETS][SBX__AVX2_BYTES][32];
    /* the escape bytes: ilo[l] has bit h when byte h << 4 | l is one
     * (h < 8), ibit[h] is 1 << h (0 for h >= 8) */
    uint8_t ilo[32], ibit[32];
    /* what may follow each escape byte b in an escape: the bytes of
     * fol[fid[b]] (row 0: every byte) */
    uint8_t fid[128];
    uint64_t fol[8][4];
    /* the bytes at the literals' offsets 0 to 5 (as ilo); lit_all: one of
     * them is 128 or more (then any byte is) */
    uint8_t llo[32];
    bool lit_all;
    /* the literals' four-byte pieces at their offsets 0 to 3: a nibble per
     * hash (ghash), bit 3 - j for a piece at offset j, so that a hit marks
     * the one position a literal can start at rather than four */
    uint32_t grams[GSLOTS / 8];
    /* base64 forms wrapped in their first seven bytes: the four bytes
     * after the line break, at each offset the break can follow */
    uint32_t wraps[2048];
    bool wrap_any; /* a form too short for that: every line break may be one */
    bool esc[256]; /* every byte an escape or a line break can start with */
    /* Buckets whose triggers all have a quick reject: each of them needs
     * the bytes [from, to) after the position in the class need (what
     * every member's own reject implies: the overlap of their ranges,
     * the union of their classes). checked: which buckets (bit 8q + k). */
    uint16_t checked;
    uint8_t from[8 * AVX2_SETS], to[8 * AVX2_SETS], need[8 * AVX2_SETS];
};

/* The piece sets: bit h of 65,536. */
static inline void bits_add(uint32_t *set, uint32_t h)
{
    set[h >> 5] |= (uint32_t)1 << (h & 31);
}
static inline bool bits_has(const uint32_t *set, uint32_t h)
{
    return (set[h >> 5] >> (h & 31)) & 1;
}

struct sbx__tri {
    int kind; /* SBX__PF_TRI or SBX__PF_AVX2 */
    struct avx2 *x;
    /* positions 0, 1 and 2: ASCII; a byte of 128 or more passes at
     * position 0 the buckets that allow one of them there (hi0v), at
     * positions 1 and 2 every bucket */
    uint8_t t0[NB][128];
    uint8_t t12[2][NB][128];
    /* as the block reads them, in each of 64 bytes (loads, where a
     * broadcast from a register would take the shuffle port): at
     * position 0, for a byte of 128 or more, the buckets whose set holds
     * none; and the quick-reject buckets (needs) */
    _Alignas(64) uint8_t hi0v[NB][64];
    _Alignas(64) uint8_t needsv[64];
    /* Buckets of token shapes with a quick reject, one per need_from:
     * the union of their classes and the least of their need_n, which
     * each member's own reject implies. A position they alone let through
     * goes on only where its bytes pass that. */
    uint32_t needs; /* which buckets */
    uint8_t need_from[NB * 8], need_n[NB * 8], need[NB * 8];
    /* The first 8 buckets hold the tokens with a quick reject, by their
     * bytes 0, 1 and 3 (sbx__tri_alt): their third lookup reads the
     * block from its fourth byte on. */
    bool shift;
    void *mem; /* the allocation this is aligned within */
};

/* How often a byte is met in build logs, roughly: what a bucket's sets
 * cost when the filter lets them through. */
static double byte_weight(unsigned b)
{
    if (b == ' ')
        return 8;
    if (b >= 'a' && b <= 'z')
        return 3;
    if (b >= '0' && b <= '9')
        return 2;
    if (b >= 'A' && b <= 'Z')
        return 1.5;
    if ((b > ' ' && b < 127) || b == '\n')
        return 1;
    return 0.05;
}

static bool has(const uint64_t *set, unsigned b)
{
    return (set[b >> 6] >> (b & 63)) & 1;
}

static bool full(const uint64_t *set)
{
    return (set[0] & set[1] & set[2] & set[3]) == ~(uint64_t)0;
}

/* The weight a bucket's set gains by taking set a. */
static double gain(const uint64_t *bucket, const uint64_t *a, const double *w, double wall, double wb)
{
    double g = 0;
    if (full(a))
        return wall - wb;
    for (unsigned k = 0; k < 4; k++)
        for (uint64_t bits = a[k] & ~bucket[k]; bits; bits &= bits - 1)
            g += w[k * 64 + (unsigned)__builtin_ctzll(bits)];
    return g;
}

bool sbx__tri_supported(void)
{
#ifdef TRI_X86
    /* libgcc's constructor has read the CPU before any call can come here
     * (calling __builtin_cpu_init again from threads would race) */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi");
#else
    return false;
#endif
}

/* The alternatives' indices, widest first (a counting sort on their
 * sizes, 0..768 bytes): the narrow ones then fill in around the wide. */
static size_t *widest_first(const sbx__tri_alt *alts, size_t n)
{
    enum { MAXSZ = 3 * 256 };
    size_t *count = sbx__calloc(MAXSZ + 2, sizeof *count), *key = sbx__calloc(n, sizeof *key),
           *order = sbx__calloc(n, sizeof *order);
    if (count && key && order) {
        for (size_t i = 0; i < n; i++) {
            size_t sz = 0;
            for (unsigned j = 0; j < 3; j++)
                for (unsigned k = 0; k < 4; k++)
                    sz += (size_t)__builtin_popcountll(alts[i].b[j][k]);
            key[i] = MAXSZ - sz;
            count[key[i] + 1]++;
        }
        for (size_t k = 1; k < MAXSZ + 2; k++)
            count[k] += count[k - 1];
        for (size_t i = 0; i < n; i++)
            order[count[key[i]]++] = i;
    } else {
        sbx__free(order);
        order = NULL;
    }
    sbx__free(count);
    sbx__free(key);
    return order;
}

sbx_status sbx__tri_build(const sbx__tri_alt *alts, size_t n, sbx__tri **out)
{
    enum { NBUCKETS = NB * 8 };
    uint64_t set[NBUCKETS][3][4];
    uint8_t bfrom[NBUCKETS], bn[NBUCKETS], bneed[NBUCKETS], hi0[NB] = {0};
    double w[256], wall = 0, wsum[NBUCKETS][3], rate = 0;
    size_t *order;
    bool shifted = false;
    sbx__tri *t;
    *out = NULL;
    if (!n || !sbx__tri_supported())
        return SBX_OK;
    for (unsigned b = 0; b < 256; b++)
        wall += w[b] = byte_weight(b);
    memset(set, 0, sizeof set);
    memset(wsum, 0, sizeof wsum);
    if (!(order = widest_first(alts, n)))
        return SBX_E_NOMEM;
    /* Two passes: the shapes with a quick reject first, into the first 8
     * buckets (one per need_from while there are buckets left), then the
     * rest into the others. */
    memset(bfrom, 0, sizeof bfrom);
    memset(bn, 0, sizeof bn);
    memset(bneed, 0, sizeof bneed);
    for (size_t i = 0; i < n; i++)
        shifted |= alts[i].need != 0;
    for (size_t o = 0; o < 2 * n; o++) {
        const sbx__tri_alt *a = &alts[order[o % n]];
        double best = 0;
        int bk = -1;
        bool keyed = false; /* its quick reject has a bucket already */
        /* the tokens' alternatives describe other bytes: the first 8
         * buckets are theirs alone (all 32 are the others' when there
         * are none) */
        unsigned lo = a->need ? 0 : shifted ? 8 : 0, hi = a->need ? 8 : NBUCKETS;
        if ((o < n) != (a->need != 0))
            continue;
        for (unsigned q = lo; a->need && q < hi; q++)
            keyed |= bn[q] && bfrom[q] == a->need_from;
        for (int merge = 0; merge < 2 && bk < 0; merge++)
            for (unsigned k = lo; k < hi; k++) {
                double g[3], before = 1, after = 1;
                bool empty = wsum[k][0] == 0;
                /* a token goes with the tokens of its need_from, else to
                 * a bucket of its own; when none is left, into the
                 * cheapest, whose reject then covers what both need */
                if (a->need && !merge && (empty ? keyed : !(bn[k] && bfrom[k] == a->need_from)))
                    continue;
                for (unsigned j = 0; j < 3; j++) {
                    g[j] = gain(set[k][j], a->b[j], w, wall, wsum[k][j]);
                    before *= wsum[k][j];
                    after *= wsum[k][j] + g[j];
                }
                if (bk < 0 || after - before < best) {
                    best = after - before;
                    bk = (int)k;
                }
            }
        if (a->need) {
            bool first = wsum[bk][0] == 0;
            unsigned from = a->need_from, to = (unsigned)a->need_from + a->need_n;
            if (!first) { /* the overlap of both ranges */
                unsigned bto = (unsigned)bfrom[bk] + bn[bk];
                from = from > bfrom[bk] ? from : bfrom[bk];
                to = to < bto ? to : bto;
            }
            bneed[bk] |= a->need; /* any of the classes: implied by each */
            bfrom[bk] = (uint8_t)from;
            bn[bk] = (uint8_t)(to > from ? to - from : 0);
        }
        for (unsigned j = 0; j < 3; j++) {
            wsum[bk][j] += gain(set[bk][j], a->b[j], w, wall, wsum[bk][j]);
            for (unsigned k = 0; k < 4; k++)
                set[bk][j][k] |= a->b[j][k];
        }
    }
    sbx__free(order);
    /* Not worth it when the buckets would let most positions through. */
    for (unsigned k = 0; k < NBUCKETS; k++)
        rate += wsum[k][0] / wall * wsum[k][1] / wall * wsum[k][2] / wall;
    if (rate > 0.25)
        return SBX_OK;
    {
        /* at a 64-byte boundary, so that no table row a block loads
         * straddles two cache lines (clean text ran 13% slower so) */
        void *mem = sbx__calloc(1, sizeof *t + 63);
        if (!mem)
            return SBX_E_NOMEM;
        t = (sbx__tri *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
        t->mem = mem;
        t->kind = SBX__PF_TRI;
        t->shift = shifted;
    }
    for (unsigned k = 0; k < NBUCKETS; k++) {
        uint8_t bit = (uint8_t)(1u << (k & 7));
        if (bneed[k] && bn[k]) {
            t->needs |= (uint32_t)1 << k;
            t->need_from[k] = bfrom[k];
            t->need_n[k] = bn[k];
            t->need[k] = bneed[k];
        }
        for (unsigned b = 0; b < 256; b++) {
            if (has(set[k][0], b)) {
                if (b < 128)
                    t->t0[k >> 3][b] |= bit;
                else
                    hi0[k >> 3] |= bit;
            }
            for (unsigned j = 1; j < 3; j++)
                if (b < 128 && has(set[k][j], b))
                    t->t12[j - 1][k >> 3][b] |= bit;
        }
    }
    /* the tables say which buckets do not allow a byte: a byte of 128 or
     * more then reads 0 at positions 1 and 2 (a zeroing lookup) */
    for (unsigned q = 0; q < NB; q++)
        for (unsigned b = 0; b < 128; b++) {
            t->t0[q][b] = (uint8_t)~t->t0[q][b];
            t->t12[0][q][b] = (uint8_t)~t->t12[0][q][b];
            t->t12[1][q][b] = (uint8_t)~t->t12[1][q][b];
        }
    for (unsigned q = 0; q < NB; q++)
        memset(t->hi0v[q], (uint8_t)~hi0[q], sizeof t->hi0v[q]);
    memset(t->needsv, (uint8_t)t->needs, sizeof t->needsv);
    *out = t;
    return SBX_OK;
}

void sbx__tri_free(sbx__tri *t)
{
    if (t)
        sbx__free(t->mem);
}

bool sbx__tri_avx2_supported(void)
{
#ifdef TRI_X86
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

/* The nibbles of the bytes in set: which low ones, which high ones. */
static void nibble_masks(const uint64_t *set, uint16_t *lo, uint16_t *hi)
{
    *lo = *hi = 0;
    for (unsigned b = 0; b < 256; b++)
        if (has(set, b)) {
            *lo |= (uint16_t)(1u << (b & 15));
            *hi |= (uint16_t)(1u << (b >> 4));
        }
}

/* Weights of nibble products, by rows: rows[h][0][m] is the weight of
 * the bytes h << 4 | l for the low nibbles l in the byte mask m (l < 8),
 * rows[h][1][m] for l >= 8, so that a product costs two loads a row. */
typedef double nibble_rows[16][2][256];

static void nibble_rows_fill(nibble_rows *rows, const double *w)
{
    for (unsigned h = 0; h < 16; h++)
        for (unsigned half = 0; half < 2; half++)
            for (unsigned m = 0; m < 256; m++) {
                double sum = 0;
                for (unsigned l = 0; l < 8; l++)
                    if (m >> l & 1)
                        sum += w[h << 4 | (8 * half + l)];
                (*rows)[h][half][m] = sum;
            }
}

/* The weight of the bytes a nibble product lets through. */
static double nibble_weight(uint16_t lo, uint16_t hi, const nibble_rows *rows)
{
    double sum = 0;
    for (unsigned h = 0; h < 16; h++)
        if (hi >> h & 1)
            sum += (*rows)[h][0][lo & 0xff] + (*rows)[h][1][lo >> 8];
    return sum;
}

/* How many bytes a trigger's sets allow, all positions together. */
static size_t trig_width(const sbx__trig_sets *t)
{
    size_t w = 0;
    for (unsigned j = 0; j < SBX__AVX2_BYTES; j++)
        for (unsigned k = 0; k < 4; k++)
            w += (size_t)__builtin_popcountll(t->b[j][k]);
    return w;
}

/* The triggers' indices in order, widest sets first (the narrow fill in
 * around them), by insertion: a hundred or so, once per rule set. */
static void widest_triggers(const sbx__trig_sets *alts, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++) {
        size_t w = trig_width(&alts[i]), k = i;
        while (k > 0 && trig_width(&alts[order[k - 1]]) < w) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

sbx_status sbx__tri_build_avx2(const sbx__avx2_input *in, sbx__tri **out)
{
    const sbx__trig_sets *alts = in->alts;
    const bool *intro = in->intro;
    size_t n = in->n;
    enum { NBUCKETS = 8 * AVX2_SETS, NJ = SBX__AVX2_BYTES };
    uint16_t lo[NBUCKETS][NJ], hi[NBUCKETS][NJ];
    double w[256], cur[NBUCKETS][NJ];
    unsigned cfrom[NBUCKETS] = {0}, cto[NBUCKETS] = {0}, members = 0, nocheck = 0;
    uint8_t cneed[NBUCKETS] = {0};
    size_t *order = NULL;
    nibble_rows *rows = NULL;
    sbx__tri *t;
    struct avx2 *x;
    void *mem;
    *out = NULL;
    if (!sbx__tri_avx2_supported())
        return SBX_OK;
    for (unsigned b = 0; b < 256; b++)
        w[b] = byte_weight(b);
    memset(lo, 0, sizeof lo);
    memset(hi, 0, sizeof hi);
    memset(cur, 0, sizeof cur);
    if (n) {
        if (!(order = sbx__calloc(n, sizeof *order)) || !(rows = sbx__malloc(sizeof *rows))) {
            sbx__free(order);
            return SBX_E_NOMEM;
        }
        nibble_rows_fill(rows, w);
        widest_triggers(alts, n, order);
    }
    /* Each trigger into the bucket whose nibble products grow least. */
    for (size_t o = 0; o < n; o++) {
        const sbx__trig_sets *a = &alts[order[o]];
        uint16_t al[NJ], ah[NJ];
        double best = 0;
        unsigned bk = 0;
        for (unsigned j = 0; j < NJ; j++)
            nibble_masks(a->b[j], &al[j], &ah[j]);
        bool found = false;
        for (int pass = 0; pass < 2 && !found; pass++)
            for (unsigned k = 0; k < NBUCKETS; k++) {
                double before = 1, after = 1;
                /* a trigger without a quick reject joins a bucket whose
                 * members all have one only if it must: it would take
                 * the check from all of them (near misses such as
                 * "AKIAshort" would then leave the block) */
                if (pass == 0 && (members >> k & 1) && !a->need_n && !(nocheck >> k & 1))
                    continue;
                for (unsigned j = 0; j < NJ; j++) {
                    before *= cur[k][j];
                    after *= nibble_weight(lo[k][j] | al[j], hi[k][j] | ah[j], rows);
                }
                if (!found || after - before < best) {
                    best = after - before;
                    bk = k;
                    found = true;
                }
            }
        for (unsigned j = 0; j < NJ; j++) {
            lo[bk][j] |= al[j];
            hi[bk][j] |= ah[j];
            cur[bk][j] = nibble_weight(lo[bk][j], hi[bk][j], rows);
        }
        /* the bucket's quick reject: every member needs one */
        if (!a->need_n) {
            nocheck |= 1u << bk;
        } else if (!(members & 1u << bk)) {
            cfrom[bk] = a->need_from;
            cto[bk] = (unsigned)a->need_from + a->need_n;
            cneed[bk] = a->need;
        } else {
            cfrom[bk] = cfrom[bk] > a->need_from ? cfrom[bk] : a->need_from;
            cto[bk] = cto[bk] < (unsigned)a->need_from + a->need_n ? cto[bk] : (unsigned)a->need_from + a->need_n;
            cneed[bk] |= a->need;
        }
        members |= 1u << bk;
    }
    sbx__free(order);
    sbx__free(rows);
    if (!(mem = sbx__calloc(1, sizeof *t + sizeof *x + 127)))
        return SBX_E_NOMEM;
    /* both at 64-byte boundaries, for the aligned loads of the tables */
    t = (sbx__tri *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    x = (struct avx2 *)(((uintptr_t)(t + 1) + 63) & ~(uintptr_t)63);
    t->mem = mem;
    t->kind = SBX__PF_AVX2;
    t->x = x;
    for (unsigned k = 0; k < NBUCKETS; k++)
        for (unsigned j = 0; j < NJ; j++)
            for (unsigned nb = 0; nb < 16; nb++) {
                if (lo[k][j] >> nb & 1)
                    x->lo[k / 8][j][nb] = x->lo[k / 8][j][nb + 16] = (uint8_t)(x->lo[k / 8][j][nb] | 1u << (k % 8));
                if (hi[k][j] >> nb & 1)
                    x->hi[k / 8][j][nb] = x->hi[k / 8][j][nb + 16] = (uint8_t)(x->hi[k / 8][j][nb] | 1u << (k % 8));
            }
    for (unsigned b = 0; b < 256; b++)
        x->esc[b] = intro[b];
    for (unsigned b = 0; b < 256; b++)
        if (intro[b] && b != '\n' && b != '\r') { /* line breaks: wraps */
            if (b >= 128) { /* not an escape byte any decoding has: give up rather than miss one */
                sbx__free(mem);
                return SBX_OK;
            }
            x->ilo[b & 15] = x->ilo[(b & 15) + 16] = (uint8_t)(x->ilo[b & 15] | 1u << (b >> 4));
        }
    for (unsigned h = 0; h < 8; h++)
        x->ibit[h] = x->ibit[h + 16] = (uint8_t)(1u << h);
    memset(x->fol[0], 0xff, sizeof x->fol[0]);
    for (unsigned b = 0, id = 1; b < 128; b++)
        if (intro[b] && b != '\n' && b != '\r' && id < 8) {
            x->fid[b] = (uint8_t)id;
            memcpy(x->fol[id++], in->follow[b], sizeof x->fol[0]);
        }
    for (size_t i = 0; i < in->ngrams; i++) {
        uint32_t h = ghash(in->gram[i]);
        x->grams[h >> 3] |= (uint32_t)(8u >> (i % 4)) << (4 * (h & 7));
    }
    for (size_t i = 0; i < in->nwraps; i++)
        bits_add(x->wraps, sbx__piece_hash(in->wrap[i]));
    x->wrap_any = in->wrap_any;
    for (unsigned b = 0; b < 256; b++)
        if (in->litbyte[b]) {
            if (b >= 128)
                x->lit_all = true;
            else
                x->llo[b & 15] = x->llo[(b & 15) + 16] = (uint8_t)(x->llo[b & 15] | 1u << (b >> 4));
        }
    for (unsigned k = 0; k < NBUCKETS; k++)
        if ((members & ~nocheck) >> k & 1 && cfrom[k] < cto[k]) {
            x->checked |= (uint16_t)(1u << k);
            x->from[k] = (uint8_t)cfrom[k];
            x->to[k] = (uint8_t)cto[k];
            x->need[k] = cneed[k];
        }
    *out = t;
    return SBX_OK;
}

#ifdef TRI_X86
static __attribute__((target("avx512f,avx512bw,avx512vbmi"))) uint64_t block_vbmi(const sbx__tri *t,
                                                                                   const unsigned char *p, size_t avail)
{
    __m512i v0 = _mm512_loadu_si512((const void *)p), v1 = _mm512_loadu_si512((const void *)(p + 1)),
            v2 = _mm512_loadu_si512((const void *)(p + 2)), v3 = _mm512_loadu_si512((const void *)(p + 3)),
            any, needs, acc[NB];
    __mmask64 h0 = _mm512_movepi8_mask(v0), h1 = _mm512_movepi8_mask(v1), h2 = _mm512_movepi8_mask(v2),
              h3 = _mm512_movepi8_mask(v3);
    uint64_t pass, todo;
    /* unrolled: the lookups of the four tables of buckets interleave and
     * the accumulators stay in registers */
#pragma GCC unroll 4
    for (unsigned k = 0; k < NB; k++) {
        const uint8_t *a0 = t->t0[k], *a1 = t->t12[0][k], *a2 = t->t12[1][k];
        /* the tokens' buckets look at byte 3 where the others look at
         * byte 2 */
        bool s = k == 0 && t->shift;
        /* vpermi2b looks up 128 entries by the low 7 bits of each byte;
         * a byte of 128 or more passes by hi0v at position 0, and every
         * bucket at positions 1 and 2 */
        __m512i a = _mm512_permutex2var_epi8(_mm512_loadu_si512(a0), v0, _mm512_loadu_si512(a0 + 64));
        __m512i b = _mm512_maskz_permutex2var_epi8(~h1, _mm512_loadu_si512(a1), v1, _mm512_loadu_si512(a1 + 64));
        __m512i c = _mm512_maskz_permutex2var_epi8(s ? ~h3 : ~h2, _mm512_loadu_si512(a2), s ? v3 : v2,
                                                   _mm512_loadu_si512(a2 + 64));
        a = _mm512_mask_loadu_epi8(a, h0, t->hi0v[k]);
        acc[k] = _mm512_ternarylogic_epi32(a, b, c, 0x01); /* ~(a | b | c) */
    }
    {
        /* the buckets with a quick reject are all among the first 8
         * (sbx__tri_build) */
        __m512i nb = _mm512_load_si512((const void *)t->needsv);
        any = _mm512_ternarylogic_epi32(acc[1], acc[2], acc[3], 0xFE);       /* acc1 | acc2 | acc3 */
        any = _mm512_ternarylogic_epi32(any, acc[0], nb, 0xF4);              /* any | (acc0 & ~nb) */
        needs = _mm512_and_si512(acc[0], nb);
    }
    pass = (uint64_t)_mm512_test_epi8_mask(any, any);
    todo = (uint64_t)_mm512_test_epi8_mask(needs, needs) & ~pass;
    if (!todo)
        return pass;
    if (avail < SBX__TRI_NEED)
        return pass | todo; /* the needed bytes may not all be here */
    {
        /* Positions only quick-reject buckets let through: each goes on if
         * the bytes one of its buckets needs are in that bucket's class. */
        __m512i k0 = _mm512_loadu_si512(sbx__kclass), k1 = _mm512_loadu_si512(sbx__kclass + 64);
        __m512i w1 = _mm512_loadu_si512((const void *)(p + 64));
        __m512i c0 = _mm512_maskz_permutex2var_epi8(~h0, k0, v0, k1);
        __m512i c1 = _mm512_maskz_permutex2var_epi8(~_mm512_movepi8_mask(w1), k0, w1, k1);
        for (uint32_t bs = t->needs; bs && todo; bs &= bs - 1) {
            unsigned q = (unsigned)__builtin_ctz(bs);
            uint64_t here = todo & (uint64_t)_mm512_test_epi8_mask(acc[0], _mm512_set1_epi8((char)(1u << q)));
            __m512i cls = _mm512_set1_epi8((char)t->need[q]);
            unsigned __int128 bad;
            uint64_t want = ((uint64_t)1 << t->need_n[q]) - 1;
            if (!here)
                continue;
            /* bit i: p[i] is not in the class (none of 128 and over is) */
            bad = ~((unsigned __int128)(uint64_t)_mm512_test_epi8_mask(c1, cls) << 64 |
                    (uint64_t)_mm512_test_epi8_mask(c0, cls));
            for (; here; here &= here - 1) {
                unsigned k = (unsigned)__builtin_ctzll(here);
                if (!((uint64_t)(bad >> (k + t->need_from[q])) & want)) {
                    pass |= (uint64_t)1 << k;
                    todo &= ~((uint64_t)1 << k);
                }
            }
        }
    }
    return pass;
}

/* The positions of 32 bytes whose byte is in the set of tables lo, hi
 * (nibble form: a byte passes when lo[its low nibble] and hi[its high
 * nibble] share a bit). */
static inline __attribute__((target("avx2"), always_inline)) __m256i nibbles(__m256i v, const uint8_t *lo,
                                                                             const uint8_t *hi)
{
    __m256i f = _mm256_set1_epi8(0x0f);
    __m256i l = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)lo), _mm256_and_si256(v, f));
    __m256i h = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)hi), _mm256_and_si256(_mm256_srli_epi16(v, 4), f));
    return _mm256_and_si256(l, h);
}

/* Bit k: byte k of v is not 0. */
static inline __attribute__((target("avx2"), always_inline)) uint64_t nonzero(__m256i v)
{
    return (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_setzero_si256()));
}

/* Bits 4k to 4k + 3: the four bytes at 4k (the eight words of v) are a
 * literal's at its offset 3 to 0 (their nibble, ghash). */
static inline __attribute__((target("avx2"), always_inline)) uint64_t grams(const struct avx2 *x, __m256i v)
{
    v = _mm256_xor_si256(v, _mm256_srli_epi32(v, 15));
    __m256i h = _mm256_srli_epi32(_mm256_mullo_epi32(v, _mm256_set1_epi32((int)SBX__PIECE_MUL)), 17);
    __m256i w = _mm256_i32gather_epi32((const int *)x->grams, _mm256_srli_epi32(h, 3), 4);
    __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(7)), 2)),
                                   _mm256_set1_epi32(15));
    /* bit t of the nibble to the top bit of byte t */
    return (uint32_t)_mm256_movemask_epi8(_mm256_mullo_epi32(nib, _mm256_set1_epi32(0x10204080)));
}

/* The trigger buckets that allow the bytes at k to k + 3, for the 32
 * positions k at p: a position at a time, both tables of buckets, so that
 * few registers are live. */
static inline __attribute__((target("avx2"), always_inline)) void teddy(const struct avx2 *x, const unsigned char *p,
                                                                        __m256i r[AVX2_SETS])
{
    __m256i f = _mm256_set1_epi8(0x0f);
    for (unsigned q = 0; q < AVX2_SETS; q++)
        r[q] = _mm256_set1_epi8(-1);
#pragma GCC unroll 4
    for (unsigned j = 0; j < SBX__AVX2_BYTES; j++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + j));
        __m256i lo = _mm256_and_si256(v, f), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), f);
        for (unsigned q = 0; q < AVX2_SETS; q++)
            r[q] = _mm256_and_si256(r[q], _mm256_and_si256(
                                              _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)x->lo[q][j]), lo),
                                              _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)x->hi[q][j]), hi)));
    }
}

/* Whether a trigger hit at p[k] whose buckets are b (bit 8q + j) can go
 * on: some bucket without a quick reject, or one whose needed bytes are
 * there and in its class (bytes past avail may be anything). */
static inline bool hit_ok(const struct avx2 *x, const unsigned char *p, size_t k, size_t avail, unsigned b)
{
    if (b & ~(unsigned)x->checked)
        return true;
    for (; b; b &= b - 1) {
        unsigned q = (unsigned)__builtin_ctz(b);
        size_t j = k + x->from[q], end = k + x->to[q];
        if (end > avail)
            return true;
        while (j < end && p[j] < 128 && (sbx__kclass[p[j]] & x->need[q]))
            j++;
        if (j == end)
            return true;
    }
    return false;
}

static __attribute__((target("avx2"))) uint64_t block_avx2(const sbx__tri *t, const unsigned char *p, size_t avail)
{
    const struct avx2 *x = t->x;
    __m256i a0 = _mm256_loadu_si256((const __m256i *)p), b0 = _mm256_loadu_si256((const __m256i *)(p + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(p + 38));
    uint64_t shapes, g, e;
    unsigned __int128 in, sm;
    uint32_t w;
    /* the literals as they are: the four bytes at every fourth position
     * (one lands in any literal's first seven bytes), for the four
     * positions that may start one there (first: the lookups take
     * longest, and the rest does not wait for them) */
    w = ghash(sbx__piece(p + 64));
    sm = (unsigned __int128)(grams(x, a0) | grams(x, b0) << 32) |
         (unsigned __int128)(x->grams[w >> 3] >> (4 * (w & 7)) & 15) << 64;
    g = (uint64_t)(sm >> 3);
    /* the triggers: one bucket allows the bytes at k to k + 3; where only
     * buckets with a quick reject do, their needed bytes decide */
    {
        __m256i ra[AVX2_SETS], rb[AVX2_SETS], ua, ub;
        teddy(x, p, ra);
        teddy(x, p + 32, rb);
        ua = ra[0];
        ub = rb[0];
        for (unsigned q = 1; q < AVX2_SETS; q++) {
            ua = _mm256_or_si256(ua, ra[q]);
            ub = _mm256_or_si256(ub, rb[q]);
        }
        shapes = nonzero(ua) | nonzero(ub) << 32;
        if (shapes && x->checked) {
            uint8_t bk[AVX2_SETS][64];
            for (unsigned q = 0; q < AVX2_SETS; q++) {
                _mm256_storeu_si256((__m256i *)bk[q], ra[q]);
                _mm256_storeu_si256((__m256i *)(bk[q] + 32), rb[q]);
            }
            for (uint64_t m = shapes; m; m &= m - 1) {
                unsigned k = (unsigned)__builtin_ctzll(m), b = 0;
                for (unsigned q = 0; q < AVX2_SETS; q++)
                    b |= (unsigned)bk[q][k] << (8 * q);
                if (!hit_ok(x, p, k, avail, b))
                    shapes &= ~((uint64_t)1 << k);
            }
        }
    }
    /* a literal with an escape in its first seven bytes: every position
     * up to six bytes before an escape byte */
    in = (unsigned __int128)(nonzero(nibbles(a0, x->ilo, x->ibit)) | nonzero(nibbles(b0, x->ilo, x->ibit)) << 32) |
         (unsigned __int128)nonzero(nibbles(c, x->ilo, x->ibit)) << 38;
    /* only where the next byte goes on an escape ("42%]" holds none) */
    for (unsigned __int128 m = in; m; m &= m - 1) {
        unsigned k = (uint64_t)m ? (unsigned)__builtin_ctzll((uint64_t)m) : 64 + (unsigned)__builtin_ctzll((uint64_t)(m >> 64));
        unsigned char nx;
        if (k + 1 >= avail)
            continue;
        nx = p[k + 1];
        if (!(x->fol[x->fid[p[k]]][nx >> 6] >> (nx & 63) & 1))
            in &= ~((unsigned __int128)1 << k);
    }
    /* a base64 form wrapped there: a line break whose next four bytes
     * are a piece of one (after its first one to six characters) */
    {
        __m256i nl = _mm256_set1_epi8('\n');
        unsigned __int128 br = (unsigned __int128)((uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a0, nl)) |
                                                   (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b0, nl)) << 32) |
                               (unsigned __int128)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, nl)) << 38;
        if (x->wrap_any) {
            in |= br;
        } else {
            for (uint64_t lo = (uint64_t)br, hi = (uint64_t)(br >> 64); lo | hi;) {
                unsigned k = lo ? (unsigned)__builtin_ctzll(lo) : 64 + (unsigned)__builtin_ctzll(hi);
                if (lo)
                    lo &= lo - 1;
                else
                    hi &= hi - 1;
                /* a \r\n break starts a byte before its \n: marked from there,
                 * or a form with "\r\n" at its offset 6 is missed */
                unsigned __int128 at = (unsigned __int128)(k && p[k - 1] == '\r' ? 3 : 1)
                                       << (k && p[k - 1] == '\r' ? k - 1 : k);
                if (k + 5 > avail) {
                    in |= at;
                    continue;
                }
                if (x->esc[p[k + 1]] || x->esc[p[k + 2]] || x->esc[p[k + 3]] || x->esc[p[k + 4]]) {
                    in |= at; /* escaped after the break, or broken again */
                    continue;
                }
                if (bits_has(x->wraps, sbx__piece_hash(sbx__piece(p + k + 1))))
                    in |= at;
            }
        }
    }
    if (!in) {
        e = 0;
    } else if (x->lit_all) {
        in |= in >> 1;
        in |= in >> 2;
        in |= in >> 3;
        e = (uint64_t)in;
    } else {
        /* back from each by up to six, while the bytes passed over are
         * bytes a literal has there: a literal starting at k with its
         * first escape at k + d has its own d bytes before it */
        unsigned __int128 lit = (unsigned __int128)(nonzero(nibbles(a0, x->llo, x->ibit)) |
                                                    nonzero(nibbles(b0, x->llo, x->ibit)) << 32) |
                                (unsigned __int128)nonzero(nibbles(c, x->llo, x->ibit)) << 38;
        unsigned __int128 run = in;
        for (unsigned d = 0; d < 6; d++) {
            run = (run >> 1) & lit;
            in |= run;
        }
        e = (uint64_t)in;
    }
    return shapes | g | e;
}

uint64_t sbx__tri_block(const sbx__tri *t, const unsigned char *p, size_t avail)
{
    if (t->kind == SBX__PF_AVX2)
        return block_avx2(t, p, avail);
    return block_vbmi(t, p, avail);
}
#else
uint64_t sbx__tri_block(const sbx__tri *t, const unsigned char *p, size_t avail)
{
    (void)t;
    (void)p;
    (void)avail;
    return ~(uint64_t)0; /* never called: the builders give no filter here */
}

#endif

int sbx__tri_kind(const sbx__tri *t)
{
    return t ? t->kind : SBX__PF_NONE;
}
