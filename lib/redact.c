/* SPDX-License-Identifier: MIT */
/* The streaming redactor: registered values and their encoded forms, the
 * built-in shapes (redact_shapes.c), a two-byte prefilter in front of both,
 * and streams that hold back only the bytes that could still start a match. */
#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "internal.h"
#include "redact_int.h"
#include "str.h"

#define VALUE_MIN 8
#define VALUE_MAX 4096
#define KIND_SECRET 0
#define NO_SHAPE (-1)
#define RECHECK_MIN 512

/* A literal form of a registered value (kind "secret"). */
struct lit {
    char *s;
    size_t len;
};

/* Something that can start at a byte: a literal, or a shape's trigger. */
struct cand {
    const char *trig;
    size_t tlen;
    bool icase;
    int shape;    /* index into sbx__shapes, or NO_SHAPE */
    unsigned kind;
};

/* The compiled rules: immutable once built, shared by streams through a
 * reference count, so a redactor can change while streams keep theirs. */
struct rules {
    atomic_uint refs;
    struct lit *lits;
    size_t nlits;
    struct cand *cands;
    size_t ncands;
    uint32_t *by_byte;       /* candidate indexes grouped by first byte */
    uint32_t start[257];     /* by_byte[start[b] .. start[b + 1]) */
    uint64_t pair[1024];     /* bit b0 << 8 | b1: some candidate starts so */
    const char **kinds;      /* kinds[0] = "secret", then the shapes' kinds */
    size_t nkinds;
};

struct val {
    char *p;
    size_t n;
};

struct sbx_redactor {
    struct val *vals;
    size_t nvals;
    bool shapes;
    struct rules *rules;
    sbx__err err;
};

struct sbx_redact_stream {
    struct rules *r;
    sbx__buf pend; /* input not yet decided */
    sbx__buf out;  /* the output of the last call */
    unsigned char hist[3]; /* the last input bytes before pend, oldest first */
    size_t nhist;
    bool after_match;      /* pend starts right after a redaction */
    size_t recheck;        /* held bytes: scan again once pend is this long */
    bool finished;
    uint64_t *counts;
};

/* ---- rules ----------------------------------------------------------------------------------- */

static void rules_unref(struct rules *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (size_t i = 0; i < r->nlits; i++) {
        sbx__wipe(r->lits[i].s, r->lits[i].len);
        sbx__free(r->lits[i].s);
    }
    sbx__free(r->lits);
    sbx__free(r->cands);
    sbx__free(r->by_byte);
    sbx__free(r->kinds);
    sbx__free(r);
}

static sbx_status add_lit(struct rules *r, size_t *cap, const char *s, size_t len)
{
    char *copy;
    if (len < VALUE_MIN)
        return SBX_OK; /* a form too short to redact safely (a base64 core) */
    for (size_t i = 0; i < r->nlits; i++)
        if (r->lits[i].len == len && memcmp(r->lits[i].s, s, len) == 0)
            return SBX_OK;
    if (r->nlits == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct lit *l = sbx__realloc(r->lits, ncap * sizeof *l);
        if (!l)
            return SBX_E_NOMEM;
        r->lits = l;
        *cap = ncap;
    }
    if (!(copy = sbx__malloc(len)))
        return SBX_E_NOMEM;
    memcpy(copy, s, len);
    r->lits[r->nlits].s = copy;
    r->lits[r->nlits++].len = len;
    return SBX_OK;
}

static bool unreserved(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '.' || ch == '_' || ch == '~';
}

/* Percent-encoded forms (upper- and lowercase hex), when they differ. */
static sbx_status add_percent(struct rules *r, size_t *cap, const char *v, size_t n, char *tmp)
{
    for (int lower = 0; lower < 2; lower++) {
        const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
        size_t o = 0;
        bool changed = false;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)v[i];
            if (unreserved(ch)) {
                tmp[o++] = (char)ch;
            } else {
                tmp[o++] = '%';
                tmp[o++] = hex[ch >> 4];
                tmp[o++] = hex[ch & 15];
                changed = true;
            }
        }
        if (changed && add_lit(r, cap, tmp, o) != SBX_OK)
            return SBX_E_NOMEM;
    }
    return SBX_OK;
}

/* JSON-escaped forms (with and without `\/`), when they differ. */
static sbx_status add_json(struct rules *r, size_t *cap, const char *v, size_t n, char *tmp)
{
    static const char hex[] = "0123456789abcdef";
    for (int slash = 0; slash < 2; slash++) {
        size_t o = 0;
        bool changed = false;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)v[i];
            const char *esc = ch == '"' ? "\\\"" : ch == '\\' ? "\\\\" : ch == '\n' ? "\\n" : ch == '\r' ? "\\r"
                              : ch == '\t' ? "\\t" : ch == '\b' ? "\\b" : ch == '\f' ? "\\f"
                              : (slash && ch == '/') ? "\\/" : NULL;
            if (esc) {
                memcpy(tmp + o, esc, 2);
                o += 2;
                changed = true;
            } else if (ch < 0x20) {
                memcpy(tmp + o, "\\u00", 4);
                tmp[o + 4] = hex[ch >> 4];
                tmp[o + 5] = hex[ch & 15];
                o += 6;
                changed = true;
            } else {
                tmp[o++] = (char)ch;
            }
        }
        if (changed && add_lit(r, cap, tmp, o) != SBX_OK)
            return SBX_E_NOMEM;
    }
    return SBX_OK;
}

/* Base64 forms: v after k = 0, 1, 2 unknown bytes, in the standard and
 * URL-safe alphabets; only the characters made of v's bits alone, since the
 * neighbours are unknown. */
static sbx_status add_base64(struct rules *r, size_t *cap, const char *v, size_t n, char *tmp)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int alpha = 0; alpha < 2; alpha++) {
        const char *tab = alpha ? url : std;
        for (size_t k = 0; k < 3; k++) {
            size_t bits = 8 * (k + n), o = 0;
            for (size_t j = (8 * k + 5) / 6; 6 * j + 6 <= bits; j++) {
                unsigned val = 0;
                for (size_t b = 6 * j; b < 6 * j + 6; b++) {
                    size_t byte = b / 8 - k;
                    val = val << 1 | (((unsigned char)v[byte] >> (7 - b % 8)) & 1u);
                }
                tmp[o++] = tab[val];
            }
            if (add_lit(r, cap, tmp, o) != SBX_OK)
                return SBX_E_NOMEM;
        }
    }
    return SBX_OK;
}

static sbx_status add_forms(struct rules *r, size_t *cap, const char *v, size_t n)
{
    char *tmp = sbx__malloc(6 * n + 8);
    sbx_status st;
    if (!tmp)
        return SBX_E_NOMEM;
    st = add_lit(r, cap, v, n);
    if (st == SBX_OK)
        st = add_percent(r, cap, v, n, tmp);
    if (st == SBX_OK)
        st = add_json(r, cap, v, n, tmp);
    if (st == SBX_OK)
        st = add_base64(r, cap, v, n, tmp);
    sbx__wipe(tmp, 6 * n + 8);
    sbx__free(tmp);
    return st;
}

/* A value, and each of its lines of VALUE_MIN bytes or more. */
static sbx_status add_value(struct rules *r, size_t *cap, const char *v, size_t n)
{
    const char *nl = memchr(v, '\n', n), *line = v;
    if (add_forms(r, cap, v, n) != SBX_OK)
        return SBX_E_NOMEM;
    while (nl) {
        size_t len = (size_t)(nl - line);
        if (len && line[len - 1] == '\r')
            len--;
        if (len >= VALUE_MIN && add_forms(r, cap, line, len) != SBX_OK)
            return SBX_E_NOMEM;
        line = nl + 1;
        nl = memchr(line, '\n', (size_t)(v + n - line));
        if (!nl && v + n - line >= VALUE_MIN && add_forms(r, cap, line, (size_t)(v + n - line)) != SBX_OK)
            return SBX_E_NOMEM;
    }
    return SBX_OK;
}

static unsigned char lower(unsigned char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (unsigned char)(ch + 32) : ch;
}

static unsigned char upper(unsigned char ch)
{
    return ch >= 'a' && ch <= 'z' ? (unsigned char)(ch - 32) : ch;
}

static void mark_pair(struct rules *r, unsigned char a, unsigned char b)
{
    unsigned x = (unsigned)a << 8 | b;
    r->pair[x >> 6] |= (uint64_t)1 << (x & 63);
}

/* Candidates, the first-byte index and the pair filter. */
static sbx_status index_cands(struct rules *r, bool shapes)
{
    size_t n = r->nlits + (shapes ? sbx__nshapes : 0);
    uint32_t fill[256] = {0};
    if (!(r->cands = sbx__calloc(n ? n : 1, sizeof *r->cands)) || !(r->by_byte = sbx__calloc(2 * n + 1, sizeof(uint32_t))))
        return SBX_E_NOMEM;
    for (size_t i = 0; i < r->nlits; i++)
        r->cands[r->ncands++] = (struct cand){r->lits[i].s, r->lits[i].len, false, NO_SHAPE, KIND_SECRET};
    for (size_t i = 0; shapes && i < sbx__nshapes; i++) {
        unsigned kind = 0;
        for (size_t k = 1; k < r->nkinds; k++)
            if (strcmp(r->kinds[k], sbx__shapes[i].kind) == 0)
                kind = (unsigned)k;
        r->cands[r->ncands++] =
            (struct cand){sbx__shapes[i].trigger, strlen(sbx__shapes[i].trigger), sbx__shapes[i].icase, (int)i, kind};
    }
    /* Count per first byte (both cases for icase), then place. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < r->ncands; i++) {
            const struct cand *c = &r->cands[i];
            unsigned char f[2] = {(unsigned char)c->trig[0], (unsigned char)c->trig[0]};
            if (c->icase) {
                f[0] = lower(f[0]);
                f[1] = upper(f[1]);
            }
            for (int k = 0; k < (f[0] == f[1] ? 1 : 2); k++) {
                if (pass == 0)
                    r->start[f[k] + 1]++;
                else
                    r->by_byte[r->start[f[k]] + fill[f[k]]++] = (uint32_t)i;
                if (pass == 0) {
                    unsigned char s0 = (unsigned char)c->trig[1];
                    mark_pair(r, f[k], c->icase ? lower(s0) : s0);
                    mark_pair(r, f[k], c->icase ? upper(s0) : s0);
                }
            }
        }
        if (pass == 0)
            for (size_t b = 0; b < 256; b++)
                r->start[b + 1] += r->start[b];
    }
    return SBX_OK;
}

static struct rules *rules_build(const sbx_redactor *rd)
{
    struct rules *r = sbx__calloc(1, sizeof *r);
    size_t cap = 0;
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    if (!(r->kinds = sbx__calloc(sbx__nshapes + 1, sizeof *r->kinds)))
        goto fail;
    r->kinds[r->nkinds++] = "secret";
    for (size_t i = 0; i < sbx__nshapes; i++) {
        size_t k = 1;
        while (k < r->nkinds && strcmp(r->kinds[k], sbx__shapes[i].kind) != 0)
            k++;
        if (k == r->nkinds)
            r->kinds[r->nkinds++] = sbx__shapes[i].kind;
    }
    for (size_t i = 0; i < rd->nvals; i++)
        if (add_value(r, &cap, rd->vals[i].p, rd->vals[i].n) != SBX_OK)
            goto fail;
    if (index_cands(r, rd->shapes) != SBX_OK)
        goto fail;
    return r;
fail:
    rules_unref(r);
    return NULL;
}

/* ---- the redactor ---------------------------------------------------------------------------- */

sbx_redactor *sbx_redactor_new(void)
{
    sbx_redactor *r = sbx__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->shapes = true;
    if (!(r->rules = rules_build(r))) {
        sbx__free(r);
        return NULL;
    }
    return r;
}

void sbx_redactor_free(sbx_redactor *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nvals; i++) {
        sbx__wipe(r->vals[i].p, r->vals[i].n);
        sbx__free(r->vals[i].p);
    }
    sbx__free(r->vals);
    rules_unref(r->rules);
    sbx__err_free(&r->err);
    sbx__free(r);
}

const char *sbx_redactor_last_error(const sbx_redactor *r)
{
    return r ? sbx__err_msg(&r->err) : "invalid argument: the redactor is NULL";
}

/* Rebuild the rules after a change; on failure the change is undone by
 * the caller and the old rules stay. */
static sbx_status rebuild(sbx_redactor *r)
{
    struct rules *nr = rules_build(r);
    if (!nr)
        return sbx__err_set(&r->err, SBX_E_NOMEM, "out of memory");
    rules_unref(r->rules);
    r->rules = nr;
    sbx__err_clear(&r->err);
    return SBX_OK;
}

sbx_status sbx_redactor_add_secret(sbx_redactor *r, const uint8_t *value, size_t len)
{
    struct val *v;
    char *copy;
    if (!r)
        return SBX_E_INVALID_ARG;
    if (!value)
        return sbx__err_set(&r->err, SBX_E_INVALID_ARG, "invalid argument: the secret is NULL");
    if (len < VALUE_MIN)
        return sbx__err_set(&r->err, SBX_E_INVALID_ARG,
                            "a secret of %zu bytes is refused: values shorter than %d bytes would redact "
                            "ordinary text",
                            len, VALUE_MIN);
    if (len > VALUE_MAX)
        return sbx__err_set(&r->err, SBX_E_INVALID_ARG, "a secret of %zu bytes is refused (at most %d)", len,
                            VALUE_MAX);
    for (size_t i = 0; i < r->nvals; i++)
        if (r->vals[i].n == len && memcmp(r->vals[i].p, value, len) == 0) {
            sbx__err_clear(&r->err);
            return SBX_OK;
        }
    if (!(v = sbx__realloc(r->vals, (r->nvals + 1) * sizeof *v)))
        return sbx__err_set(&r->err, SBX_E_NOMEM, "out of memory");
    r->vals = v;
    if (!(copy = sbx__malloc(len)))
        return sbx__err_set(&r->err, SBX_E_NOMEM, "out of memory");
    memcpy(copy, value, len);
    r->vals[r->nvals].p = copy;
    r->vals[r->nvals++].n = len;
    if (rebuild(r) != SBX_OK) {
        r->nvals--;
        sbx__wipe(copy, len);
        sbx__free(copy);
        return SBX_E_NOMEM;
    }
    return SBX_OK;
}

sbx_status sbx_redactor_add_secret_env(sbx_redactor *r, const char *name)
{
    const char *v;
    sbx_status st;
    if (!r)
        return SBX_E_INVALID_ARG;
    if (!name || !*name)
        return sbx__err_set(&r->err, SBX_E_INVALID_ARG, "invalid argument: no variable name");
    if (!(v = getenv(name)))
        return sbx__err_set(&r->err, SBX_E_NOT_FOUND, "the environment variable %.128s is not set", name);
    st = sbx_redactor_add_secret(r, (const uint8_t *)v, strlen(v));
    if (st == SBX_E_INVALID_ARG)
        sbx__err_set(&r->err, st, "the value of %.128s is refused: %zu bytes (a secret needs %d to %d)", name,
                     strlen(v), VALUE_MIN, VALUE_MAX);
    return st;
}

sbx_status sbx_redactor_set_shapes(sbx_redactor *r, int enabled)
{
    bool old;
    if (!r)
        return SBX_E_INVALID_ARG;
    old = r->shapes;
    r->shapes = enabled != 0;
    if (rebuild(r) != SBX_OK) {
        r->shapes = old;
        return SBX_E_NOMEM;
    }
    return SBX_OK;
}

/* ---- streams --------------------------------------------------------------------------------- */

sbx_redact_stream *sbx_redact_stream_new(const sbx_redactor *r)
{
    sbx_redact_stream *s;
    if (!r || !(s = sbx__calloc(1, sizeof *s)))
        return NULL;
    if (!(s->counts = sbx__calloc(r->rules->nkinds, sizeof *s->counts))) {
        sbx__free(s);
        return NULL;
    }
    s->r = r->rules;
    atomic_fetch_add(&s->r->refs, 1);
    s->nhist = 0;
    return s;
}

void sbx_redact_stream_free(sbx_redact_stream *s)
{
    if (!s)
        return;
    rules_unref(s->r);
    sbx__buf_wipe_free(&s->pend);
    sbx__buf_wipe_free(&s->out);
    sbx__free(s->counts);
    sbx__free(s);
}

static bool prefix_eq(const struct cand *c, const unsigned char *p, size_t n)
{
    if (!c->icase)
        return memcmp(c->trig, p, n) == 0;
    for (size_t k = 0; k < n; k++)
        if (lower((unsigned char)c->trig[k]) != lower(p[k]))
            return false;
    return true;
}

enum at_result { AT_NONE, AT_MATCH, AT_WAIT };

/* What starts at p[0] (avail bytes known, more may follow): the match
 * reaching farthest, or a wait when any candidate cannot tell yet. */
static inline enum at_result at(const struct rules *r, const unsigned char *p, size_t avail, int prev, bool more,
                         size_t *ms, size_t *me, unsigned *kind)
{
    bool wait = false, found = false;
    for (uint32_t k = r->start[p[0]]; k < r->start[p[0] + 1]; k++) {
        const struct cand *c = &r->cands[r->by_byte[k]];
        size_t a, b;
        /* Most candidates of a byte differ at the next one: no memcmp. */
        if (avail >= 2 && (unsigned char)c->trig[1] != p[1] &&
            (!c->icase || lower((unsigned char)c->trig[1]) != lower(p[1])))
            continue;
        if (avail < c->tlen) {
            if (more && prefix_eq(c, p, avail))
                wait = true;
            continue;
        }
        if (!prefix_eq(c, p, c->tlen))
            continue;
        if (c->shape == NO_SHAPE) {
            a = 0;
            b = c->tlen;
        } else {
            const sbx__shape *sh = &sbx__shapes[c->shape];
            size_t len = avail < sh->window ? avail : sh->window;
            enum sbx__shape_result res = sh->match((const char *)p, len, prev, more && avail < sh->window, &a, &b);
            if (res == SBX__SHAPE_MORE) {
                wait = true;
                continue;
            }
            if (res != SBX__SHAPE_YES || b <= a || b > len)
                continue;
        }
        if (!found || b > *me || (b == *me && a < *ms)) {
            found = true;
            *ms = a;
            *me = b;
            *kind = c->kind;
        }
    }
    return wait ? AT_WAIT : found ? AT_MATCH : AT_NONE;
}

static sbx_status emit_marker(sbx_redact_stream *s, unsigned kind)
{
    s->counts[kind]++;
    if (sbx__buf_puts(&s->out, "[REDACTED:") != SBX_OK || sbx__buf_puts(&s->out, s->r->kinds[kind]) != SBX_OK ||
        sbx__buf_putc(&s->out, ']') != SBX_OK)
        return SBX_E_NOMEM;
    return SBX_OK;
}

/* The input byte k places before p[i] (k = 1..3), from p or the history;
 * -1 before the start of the stream. */
static int back(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t k)
{
    if (i >= k)
        return p[i - k];
    k -= i;
    return k <= s->nhist ? s->hist[s->nhist - k] : -1;
}

/* The byte before a candidate, as the shapes' word boundaries should see
 * it: none (-1) right after a redaction, after a JSON escape (`\n`, `\t`,
 * `\r`, `\b`, `\f`, `\/`: the letter is not part of a word) or after a
 * percent escape (`%3D`). */
static int boundary(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t last_match_end)
{
    int b1 = back(s, p, i, 1), b2 = back(s, p, i, 2), b3 = back(s, p, i, 3);
    if ((i == last_match_end && (i > 0 || s->after_match)) || b1 < 0)
        return -1;
    if (b2 == '\\' && b3 != '\\' && strchr("ntrbf/", b1))
        return -1;
    if (b3 == '%' && b2 >= 0 && isxdigit(b2) && isxdigit(b1))
        return -1;
    return b1;
}

/* Decide what can be decided in p[0..n) (the held bytes, or a chunk fed
 * while nothing was held): the output goes to s->out, *decided receives how
 * many bytes were decided; the rest must be held. */
static sbx_status scan(sbx_redact_stream *s, const unsigned char *p, size_t n, bool more, size_t *decided)
{
    const struct rules *r = s->r;
    size_t i = 0, emit = 0, last_end = 0;
    sbx__buf_clear(&s->out);
    while (i < n) {
        size_t ms = 0, me = 0;
        unsigned kind = 0;
        enum at_result res;
        /* The hot loop: one pair test per byte until something could
         * start (a plain loop: the compiler does better with it than with
         * hand unrolling). */
        while (i + 1 < n) {
            unsigned x = (unsigned)p[i] << 8 | p[i + 1];
            if ((r->pair[x >> 6] >> (x & 63)) & 1)
                break;
            i++;
        }
        /* Here p[i], p[i + 1] is a pair some candidate starts with, or i
         * is the last byte: held if it could start one and more may come. */
        if (i + 1 >= n && (!more || r->start[p[i]] == r->start[p[i] + 1])) {
            i++;
            continue;
        }
        res = at(r, p + i, n - i, boundary(s, p, i, last_end), more, &ms, &me, &kind);
        if (res == AT_WAIT)
            break;
        if (res == AT_NONE) {
            i++;
            continue;
        }
        if (sbx__buf_append(&s->out, p + emit, i + ms - emit) != SBX_OK || emit_marker(s, kind) != SBX_OK)
            return SBX_E_NOMEM;
        i = emit = last_end = i + me;
    }
    if (sbx__buf_append(&s->out, p + emit, i - emit) != SBX_OK)
        return SBX_E_NOMEM;
    if (i > 0) {
        /* Remember the last bytes decided, for the next boundaries. */
        unsigned char h[6];
        size_t nh = 0;
        for (size_t k = 0; k < s->nhist; k++)
            h[nh++] = s->hist[k];
        for (size_t k = i > 3 ? i - 3 : 0; k < i; k++)
            h[nh++] = p[k];
        s->nhist = nh < 3 ? nh : 3;
        memcpy(s->hist, h + nh - s->nhist, s->nhist);
        s->after_match = last_end == i;
    }
    *decided = i;
    return SBX_OK;
}

sbx_status sbx_redact_stream_feed(sbx_redact_stream *s, const char *data, size_t len, const char **out,
                                  size_t *out_len)
{
    size_t done;
    unsigned char hist[3];
    size_t nhist;
    bool after;
    if (!s || (!data && len) || !out || !out_len)
        return SBX_E_INVALID_ARG;
    *out = "";
    *out_len = 0;
    if (s->finished)
        return SBX_E_MISUSE;
    memcpy(hist, s->hist, sizeof hist);
    nhist = s->nhist;
    after = s->after_match;
    if (s->pend.len == 0) {
        /* Nothing held: scan the chunk where it is, hold only its tail.
         * Room for the tail first, so nothing can fail after the scan. */
        if (sbx__buf_reserve(&s->pend, len) != SBX_OK)
            return SBX_E_NOMEM;
        if (scan(s, (const unsigned char *)data, len, true, &done) != SBX_OK)
            goto oom;
        sbx__buf_append(&s->pend, data + done, len - done); /* reserved: cannot fail */
    } else {
        if (sbx__buf_append(&s->pend, data, len) != SBX_OK)
            return SBX_E_NOMEM;
        /* Held bytes wait for a candidate that needs more input: deciding
         * again only once many held bytes have doubled keeps a stream fed
         * one byte at a time linear (the answer depends on the bytes, not
         * on when it is given). */
        if (s->pend.len < s->recheck) {
            sbx__buf_clear(&s->out);
            return SBX_OK;
        }
        if (scan(s, (const unsigned char *)s->pend.data, s->pend.len, true, &done) != SBX_OK) {
            sbx__buf_truncate(&s->pend, s->pend.len - len);
            goto oom;
        }
        sbx__wipe(s->pend.data, done);
        sbx__buf_consume(&s->pend, done);
    }
    /* Up to RECHECK_MIN held bytes are decided again at every feed; past
     * that, once they have doubled (a PEM block fed byte by byte). */
    s->recheck = s->pend.len > RECHECK_MIN ? 2 * s->pend.len : 0;
    *out = s->out.data ? s->out.data : "";
    *out_len = s->out.len;
    return SBX_OK;
oom:
    memcpy(s->hist, hist, sizeof hist);
    s->nhist = nhist;
    s->after_match = after;
    return SBX_E_NOMEM;
}

sbx_status sbx_redact_stream_finish(sbx_redact_stream *s, const char **out, size_t *out_len)
{
    sbx_status st;
    size_t done;
    if (!s || !out || !out_len)
        return SBX_E_INVALID_ARG;
    *out = "";
    *out_len = 0;
    if (s->finished)
        return SBX_E_MISUSE;
    if ((st = scan(s, (const unsigned char *)s->pend.data, s->pend.len, false, &done)) != SBX_OK)
        return st;
    sbx__wipe(s->pend.data, s->pend.len);
    sbx__buf_clear(&s->pend);
    s->finished = true;
    *out = s->out.data ? s->out.data : "";
    *out_len = s->out.len;
    return SBX_OK;
}

uint64_t sbx_redact_stream_count(const sbx_redact_stream *s, const char *kind)
{
    uint64_t n = 0;
    if (!s)
        return 0;
    for (size_t k = 0; k < s->r->nkinds; k++)
        if (!kind || strcmp(kind, s->r->kinds[k]) == 0)
            n += s->counts[k];
    return n;
}

sbx_status sbx_redact_stream_counts_json(const sbx_redact_stream *s, char **out)
{
    sbx__buf b = SBX__BUF_INIT;
    bool first = true;
    if (!s || !out)
        return SBX_E_INVALID_ARG;
    *out = NULL;
    if (sbx__buf_putc(&b, '{') != SBX_OK)
        goto oom;
    for (size_t k = 0; k < s->r->nkinds; k++) {
        if (!s->counts[k])
            continue;
        if (sbx__buf_printf(&b, "%s\"%s\": %llu", first ? "" : ", ", s->r->kinds[k],
                            (unsigned long long)s->counts[k]) != SBX_OK)
            goto oom;
        first = false;
    }
    if (sbx__buf_putc(&b, '}') != SBX_OK || !(*out = sbx__buf_detach(&b, NULL)))
        goto oom;
    return SBX_OK;
oom:
    sbx__buf_free(&b);
    return SBX_E_NOMEM;
}

sbx_status sbx_redactor_redact(const sbx_redactor *r, const char *data, size_t len, char **out, size_t *out_len)
{
    sbx_redact_stream *s;
    sbx__buf b = SBX__BUF_INIT;
    const char *o;
    size_t n;
    sbx_status st;
    if (out)
        *out = NULL;
    if (!r || (!data && len) || !out)
        return SBX_E_INVALID_ARG;
    if (!(s = sbx_redact_stream_new(r)))
        return SBX_E_NOMEM;
    st = sbx_redact_stream_feed(s, data ? data : "", len, &o, &n);
    if (st == SBX_OK)
        st = sbx__buf_append(&b, o, n);
    if (st == SBX_OK)
        st = sbx_redact_stream_finish(s, &o, &n);
    if (st == SBX_OK)
        st = sbx__buf_append(&b, o, n);
    sbx_redact_stream_free(s);
    if (st == SBX_OK && !(*out = sbx__buf_detach(&b, out_len)))
        st = SBX_E_NOMEM;
    if (st != SBX_OK)
        sbx__buf_wipe_free(&b);
    return st; /* the buffer has no limit: only SBX_E_NOMEM can fail */
}
