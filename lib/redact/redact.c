/* SPDX-License-Identifier: MIT */
/* The streaming redactor: registered values and their encoded forms, the
 * built-in shapes (redact_shapes.c), a two-byte prefilter in front of both,
 * and streams that hold back only the bytes that could still start a match. */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/internal.h"
#include "redact/redact_int.h"
#include "util/str.h"

#define VALUE_MIN SBX__SECRET_MIN
#define VALUE_MAX SBX__SECRET_MAX
#define KIND_SECRET 0
#define NO_SHAPE (-1)
#define RECHECK_MIN 512
#define BRIDGE 4096 /* bytes of a new chunk scanned behind held ones */
#define DEEP_RUN_MAX 64 /* longest run of backslashes read as one deeper escape of a value's (match_dec_from) */
#define HIST 40 /* input bytes kept for word boundaries: an ANSI colour code, \u001b[38;2;255;100;0m */

/* How a literal may appear encoded in the text, decoded as it is compared:
 * percent escapes (any hex case, '+' for a space), JSON escapes (`\n`,
 * `\/`, `\uXXXX` in any case, surrogate pairs), and line breaks (raw or
 * JSON-escaped) between the characters of a wrapped base64 or hex form. */
enum { DEC_PERCENT = 1, DEC_JSON = 2, DEC_SKIP_NL = 4, DEC_ANSI = 8, DEC_SHELL = 16, DEC_NL_SPACE = 32 };
/* DEC_ANSI: colour codes (ESC [ ... m, raw or escaped) between a value's
 * characters are passed over. DEC_SHELL, for a value holding a quote or a
 * control byte: the shell's quoted forms of a quote ('"'"' and '\'') and
 * $'...' escapes (\', \xHH, \NNN octal). DEC_NL_SPACE, with DEC_SKIP_NL: a
 * line break may also stand for one of the literal's spaces (a spaced hex
 * dump wrapped where the space was). */
#define DEC_VALUE (DEC_PERCENT | DEC_JSON | DEC_ANSI)
#define DEC_BASE64 (DEC_PERCENT | DEC_JSON | DEC_SKIP_NL)

/* A registered value, a line of one, or a base64 form (kind "secret"). */
struct lit {
    char *s;
    size_t len;
    unsigned dec;
    char *ext;      /* a value's shortest redacted prefix: the rest of the value, matched as far as */
    size_t ext_len; /* the text goes on agreeing (NULL for whole literals) */
};

/* Something that can start at a byte: a literal, or a shape's trigger. */
struct cand {
    const char *trig;
    size_t tlen;
    bool icase;
    int shape;    /* index into sbx__shapes, or NO_SHAPE */
    unsigned kind;
    unsigned dec; /* DEC_* of a literal */
    bool plain;   /* a literal with no byte an escape or a line break can start with */
    const char *ext; /* a prefix literal's extension (struct lit) */
    size_t ext_len;
    bool ext_plain;  /* no byte of ext starts an escape: equal bytes are its own */
};

/* A candidate under one of the pairs of bytes its text can start with
 * (its first two characters, or an escape's first two bytes), so that a
 * position only looks at the candidates its own two bytes start. A shape's
 * trigger is checked on its first eight bytes at once, as words:
 * (bytes | fold) & mask == want, fold turning the letters of an icase
 * trigger to lowercase; a literal's mask is 0 (its text may be escaped:
 * match_dec decides). */
struct slot {
    uint64_t want, mask, fold;
    uint32_t cand;
    /* a shape's quick reject (sbx__shape's need_*, need_n at most
     * NEED_PROBE), here so that a near miss stops at the slot */
    uint8_t need_from, need_n, need;
};
#define WORD 8
/* pair8[] values: bit 0 in every one (the hot loop's ctz finds the first
 * that is not 0), then which kinds of candidate start with the pair. */
#define PAIR_ANY 1
#define PAIR_SHAPE 2
#define PAIR_LIT 4
#define NEED_PROBE 16 /* how many of a shape's needed bytes at() tests itself */
#define TRI_ALTS 12    /* most prefilter alternatives a candidate has (tri_alts) */
#define RUN_SLOTS 8    /* bytes whose runs know what follows them (struct rules) */
#define RUN_NEXT 16    /* and the run lengths they know it for */

/* The compiled rules: immutable once built, shared by streams through a
 * reference count, so a redactor can change while streams keep theirs. */
struct rules {
    atomic_uint refs;
    struct lit *lits;
    size_t nlits;
    struct cand *cands;
    size_t ncands;
    struct slot *slots;      /* candidates grouped by their first pair, pairs in order */
    uint32_t *start;         /* pair g: slots[start[g] .. start[g + 1]) */
    bool first[256];         /* some candidate's text can start with this byte */
    uint8_t pair8[65536];    /* at b0 << 8 | b1: PAIR_* bits when some candidate
                              * starts so, 0 if none (the hot loop's table: a
                              * load and a test per byte) */
    uint16_t group[65536];   /* the pair's g, for a pair in pair8[] (65,536 fit) */
    uint64_t quad[1024];     /* bit sbx__piece_hash of each literal's first 4 bytes */
    bool intro[256];         /* bytes an escape or a line break may start with */
    /* Runs of one byte c (dashes of a separator line): a position where a
     * run of c of length k begins can start a candidate only if bit k
     * (bit 63: 63 or more) of run_ok[c] is set, when run_skip[c]. */
    uint64_t run_ok[256];
    bool run_skip[256];
    /* and, for a byte c with run_slot[c] (1 to RUN_SLOTS), the bytes that
     * may follow such a run of length k < RUN_NEXT (a shape's trigger
     * goes on with one of them): run_next[slot - 1][k]; run_any[c] when
     * some candidate's run cannot be told so (a literal's, a long one) */
    uint8_t run_slot[256];
    bool run_any[256];
    uint64_t run_next[RUN_SLOTS][RUN_NEXT][4];
    sbx__tri *tri;           /* the three-byte prefilter in front, or NULL (redact_simd.c) */
    const char **kinds;      /* kinds[0] = "secret", then the shapes' kinds */
    char **markers;          /* "[REDACTED:kind]" for each */
    size_t *marker_len;      /* and its length */
    size_t nkinds;
};

struct val {
    char *p;
    size_t n;
};

/* The rules of a redactor's values and switches, built at their first
 * use after a change: adding n values one by one then costs one build,
 * not n. Calls on a const redactor may run in parallel, so the cache sits
 * behind a pointer of its own, under a lock. */
struct rules_cache {
    pthread_mutex_t lock;
    struct rules *rules; /* NULL until built, or after a change */
};

struct sbx_redactor {
    struct val *vals;
    size_t nvals;
    bool shapes;
    struct rules_cache *cache;
    sbx__err err;
};

struct sbx_redact_stream {
    struct rules *r;
    sbx__buf pend; /* input not yet decided */
    sbx__buf out;  /* the output of the last call */
    unsigned char hist[HIST]; /* the last input bytes before pend, oldest first */
    size_t nhist;
    bool after_match;      /* pend starts right after a redaction */
    enum sbx__cont cont;   /* a match cut by its window goes on here */
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
        sbx__wipe(r->lits[i].ext, r->lits[i].ext_len);
        sbx__free(r->lits[i].ext);
    }
    sbx__free(r->lits);
    sbx__free(r->cands);
    sbx__free(r->slots);
    sbx__free(r->start);
    sbx__tri_free(r->tri);
    for (size_t k = 0; r->markers && k < r->nkinds; k++)
        sbx__free(r->markers[k]);
    sbx__free(r->markers);
    sbx__free(r->marker_len);
    sbx__free(r->kinds);
    sbx__free(r);
}

static sbx_status add_lit(struct rules *r, size_t *cap, const char *s, size_t len, unsigned dec)
{
    char *copy;
    if (len < VALUE_MIN)
        return SBX_OK; /* a form too short to redact safely (a base64 core) */
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
    r->lits[r->nlits].dec = dec;
    r->lits[r->nlits].ext = NULL;
    r->lits[r->nlits].ext_len = 0;
    r->lits[r->nlits++].len = len;
    return SBX_OK;
}

static int lit_cmp(const void *a, const void *b)
{
    const struct lit *x = a, *y = b;
    int c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    if ((c = memcmp(x->s, y->s, x->len)) != 0)
        return c;
    /* prefixes of different values stay apart: each extends as its own */
    if (x->ext_len != y->ext_len)
        return x->ext_len < y->ext_len ? -1 : 1;
    return x->ext_len ? memcmp(x->ext, y->ext, x->ext_len) : 0;
}

/* The same literal from two values (or a value equal to another's base64
 * form) once, with both decodings: sorted and merged, O(n log n) where a
 * lookup per addition made many values quadratic. */
static void dedup_lits(struct rules *r)
{
    size_t o = 0;
    if (r->nlits < 2)
        return;
    qsort(r->lits, r->nlits, sizeof *r->lits, lit_cmp);
    for (size_t i = 0; i < r->nlits; i++) {
        if (o && lit_cmp(&r->lits[o - 1], &r->lits[i]) == 0) {
            r->lits[o - 1].dec |= r->lits[i].dec;
            sbx__wipe(r->lits[i].s, r->lits[i].len);
            sbx__free(r->lits[i].s);
            sbx__wipe(r->lits[i].ext, r->lits[i].ext_len);
            sbx__free(r->lits[i].ext);
            continue;
        }
        r->lits[o++] = r->lits[i];
    }
    r->nlits = o;
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
            if (add_lit(r, cap, tmp, o, DEC_BASE64) != SBX_OK)
                return SBX_E_NOMEM;
        }
    }
    return SBX_OK;
}

/* Hex forms: every byte as two digits, lower case and upper case,
 * contiguous (xxd -p, Python's .hex(), a dumped buffer) and spaced,
 * one space between bytes (od -An -tx1, xxd -g1, a debugger's copy). Dumps
 * wrap their lines, so both may have a line break anywhere (DEC_SKIP_NL,
 * as wrapped base64): od's "\n " between two bytes is the break, then the
 * spaced form's own space; a break alone there stands for the space. */
#define DEC_HEX (DEC_VALUE | DEC_SKIP_NL)
static sbx_status add_hex(struct rules *r, size_t *cap, const char *v, size_t n, char *tmp)
{
    for (int up = 0; up < 2; up++) {
        const char *digits = up ? "0123456789ABCDEF" : "0123456789abcdef";
        for (int spaced = 0; spaced < 2; spaced++) {
            size_t step = spaced ? 3 : 2;
            for (size_t i = 0; i < n; i++) {
                tmp[step * i] = digits[(unsigned char)v[i] >> 4];
                tmp[step * i + 1] = digits[(unsigned char)v[i] & 15];
                if (spaced && i + 1 < n)
                    tmp[step * i + 2] = ' ';
            }
            if (add_lit(r, cap, tmp, step * n - (spaced ? 1 : 0), spaced ? DEC_HEX | DEC_NL_SPACE : DEC_HEX) !=
                SBX_OK)
                return SBX_E_NOMEM;
        }
    }
    return SBX_OK;
}

/* A value as it is (matched also percent-encoded and JSON-escaped, decoded
 * on the fly), its base64 forms and its hex forms. */
static sbx_status add_forms(struct rules *r, size_t *cap, const char *v, size_t n)
{
    char *tmp = sbx__malloc(3 * n + 8); /* the spaced hex form, the longest */
    sbx_status st;
    if (!tmp)
        return SBX_E_NOMEM;
    {
        unsigned dec = DEC_VALUE;
        for (size_t i = 0; i < n; i++)
            if (v[i] == '\'' || (unsigned char)v[i] < 0x20 || v[i] == 0x7f)
                dec |= DEC_SHELL;
        st = add_lit(r, cap, v, n, dec);
    }
    if (st == SBX_OK)
        st = add_base64(r, cap, v, n, tmp);
    if (st == SBX_OK)
        st = add_hex(r, cap, v, n, tmp);
    sbx__wipe(tmp, 3 * n + 8);
    sbx__free(tmp);
    return st;
}

/* Whether a line of a multi-line value is worth redacting on its own: not
 * blank (indentation would be redacted everywhere) and not a PEM armor
 * line (-----BEGIN/END ...-----, public boilerplate). */
static bool line_worth(const char *line, size_t len)
{
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t'))
        k++;
    if (len - k < VALUE_MIN)
        return false;
    return !(len - k >= 10 && memcmp(line + k, "-----", 5) == 0 && memcmp(line + len - 5, "-----", 5) == 0);
}

/* Where a value's secret begins: where a shape would start redacting it
 * when that redaction runs to the value's end (a Slack webhook URL's
 * groups, a URL's password), else after the later of its last '/', ':',
 * '=', '@', '?', '&' or '#' (a URL's path, a key=value's name) and its
 * leading words of letters each ending in '-' or '_' ("ghp_",
 * "acme-deploy-"), else 0. */
static size_t public_part(const char *v, size_t n)
{
    size_t pub = 0;
    bool shaped = false;
    for (size_t i = 0; i < sbx__nshapes; i++) {
        const sbx__shape *sh = &sbx__shapes[i];
        size_t tl = sh->tlen;
        for (size_t at = 0; at + tl <= n; at++) {
            size_t a = 0, b = 0, len = n - at < sh->window ? n - at : sh->window;
            enum sbx__shape_result res;
            if (sh->icase ? strncasecmp(v + at, sh->trigger, tl) != 0 : memcmp(v + at, sh->trigger, tl) != 0)
                continue;
            res = sbx__shape_match(sh, v + at, len, at ? (unsigned char)v[at - 1] : -1, false, &a, &b);
            if ((res == SBX__SHAPE_YES || res == SBX__SHAPE_CUT) && at + b == n && (!shaped || at + a < pub)) {
                pub = at + a;
                shaped = true;
            }
        }
    }
    if (shaped)
        return pub;
    for (size_t i = n; i-- > 0;)
        if (strchr("/:=@?&#", v[i])) {
            pub = i + 1;
            break;
        }
    for (size_t i = 0, word = 0; i < n; i++) {
        if ((v[i] | 0x20) >= 'a' && (v[i] | 0x20) <= 'z') {
            word++;
            continue;
        }
        if (!word || (v[i] != '-' && v[i] != '_'))
            break;
        if (i + 1 > pub)
            pub = i + 1;
        word = 0;
    }
    return pub;
}

/* A value of PREFIX_MIN bytes or more is also found cut short (a table
 * cell, a progress line redrawn with \r): its secret part (past the public
 * part) from its start, once PREFIX_PAST bytes of it show, redacted as far
 * as the text agrees with the value; the public part stays. */
#define PREFIX_MIN 24
#define PREFIX_PAST 12
static sbx_status add_prefix(struct rules *r, size_t *cap, const char *v, size_t n)
{
    size_t pub = n >= PREFIX_MIN ? public_part(v, n) : n, k = pub + PREFIX_PAST, distinct = 0;
    bool seen[256] = {false};
    struct lit *l;
    if (k >= n)
        return SBX_OK;
    /* Only a secret-looking part: not a run or a pattern of few bytes (a
     * value of backslashes or dashes would redact every run of them). */
    for (size_t i = pub; i < k; i++)
        if (!seen[(unsigned char)v[i]]) {
            seen[(unsigned char)v[i]] = true;
            distinct++;
        }
    if (distinct < PREFIX_PAST / 2)
        return SBX_OK;
    if (add_lit(r, cap, v + pub, PREFIX_PAST, DEC_VALUE) != SBX_OK)
        return SBX_E_NOMEM;
    l = &r->lits[r->nlits - 1];
    if (!(l->ext = sbx__malloc(n - k)))
        return SBX_E_NOMEM;
    memcpy(l->ext, v + k, n - k);
    l->ext_len = n - k;
    return SBX_OK;
}

/* A value, and each of its lines of VALUE_MIN bytes or more; the prefixes
 * of a one-line value or of each line (a prefix ends at a line's end). */
static sbx_status add_value(struct rules *r, size_t *cap, const char *v, size_t n)
{
    const char *line = v, *stop = v + n;
    if (add_forms(r, cap, v, n) != SBX_OK)
        return SBX_E_NOMEM;
    if (!memchr(v, '\n', n))
        return add_prefix(r, cap, v, n);
    while (line < stop) {
        const char *nl = memchr(line, '\n', (size_t)(stop - line));
        size_t len = (size_t)((nl ? nl : stop) - line);
        if (len && line[len - 1] == '\r')
            len--;
        if (line_worth(line, len) && (add_forms(r, cap, line, len) != SBX_OK || add_prefix(r, cap, line, len) != SBX_OK))
            return SBX_E_NOMEM;
        if (!nl)
            break;
        line = nl + 1;
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

/* The letter of a byte's short JSON escape (`\n`), or 0. */
static char json_short(unsigned char b)
{
    switch (b) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case '\b': return 'b';
    case '\f': return 'f';
    case '\n': return 'n';
    case '\r': return 'r';
    case '\t': return 't';
    default: return 0;
    }
}


/* Whether b may be where a literal with these decodings has its next
 * character: the start of an escape, or a line break inside base64. */
static inline bool dec_intro(unsigned char b, unsigned dec)
{
    return ((dec & DEC_PERCENT) && (b == '%' || b == '+')) ||
           ((dec & (DEC_JSON | DEC_SKIP_NL | DEC_SHELL)) && b == '\\') ||
           ((dec & DEC_SKIP_NL) && (b == '\n' || b == '\r')) || ((dec & DEC_ANSI) && b == 0x1b) ||
           ((dec & DEC_SHELL) && b == '\'');
}

static inline bool bit_set(const uint64_t *set, unsigned x)
{
    return (set[x >> 6] >> (x & 63)) & 1;
}

/* The bytes a candidate's text can start with, and for each the bytes that
 * can follow it (a 256-bit set), for the index and the pair filter. */
struct starts {
    unsigned n;
    unsigned char first[4];
    uint64_t second[4][4];
};

static void set_bit(uint64_t *set, unsigned char b)
{
    set[b >> 6] |= (uint64_t)1 << (b & 63);
}

/* What may follow a literal's first character: its second character, as
 * it is or as the start of an escape. */
static void lit_seconds(const struct cand *c, uint64_t *set)
{
    unsigned char t1 = (unsigned char)c->trig[1];
    set_bit(set, t1);
    if (c->dec & DEC_PERCENT) {
        set_bit(set, '%');
        if (t1 == ' ')
            set_bit(set, '+');
    }
    if (c->dec & (DEC_JSON | DEC_SKIP_NL))
        set_bit(set, '\\');
    if (c->dec & DEC_SKIP_NL) {
        set_bit(set, '\n');
        set_bit(set, '\r');
    }
    if (c->dec & DEC_ANSI)
        set_bit(set, 0x1b);
    if ((c->dec & DEC_SHELL) && c->trig[0] == '\'') { /* '"'"' or '\'' for the quote */
        set_bit(set, '"');
        set_bit(set, '\\');
    }
}

/* The slot of first byte f in st (added if new: a literal starting with
 * '%' has its raw and its escaped starts there). */
static uint64_t *first_slot(struct starts *st, unsigned char f)
{
    for (unsigned k = 0; k < st->n; k++)
        if (st->first[k] == f)
            return st->second[k];
    st->first[st->n] = f;
    return st->second[st->n++];
}

static void cand_starts(const struct cand *c, struct starts *st)
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char f = (unsigned char)c->trig[0], t1 = (unsigned char)c->trig[1];
    uint64_t *set;
    memset(st, 0, sizeof *st);
    if (c->icase) {
        set = first_slot(st, lower(f));
        set_bit(set, lower(t1));
        set_bit(set, upper(t1));
        set = first_slot(st, upper(f));
        set_bit(set, lower(t1));
        set_bit(set, upper(t1));
        return;
    }
    if (!c->dec) {
        set_bit(first_slot(st, f), t1);
        return;
    }
    lit_seconds(c, first_slot(st, f));
    if (c->dec & DEC_PERCENT) {
        set = first_slot(st, '%');
        set_bit(set, (unsigned char)hex[f >> 4]);
        set_bit(set, lower((unsigned char)hex[f >> 4]));
        if (f == ' ')
            lit_seconds(c, first_slot(st, '+'));
    }
    if (c->dec & DEC_JSON) {
        /* \uXXXX for any first character: an encoder may escape any (a
         * value's first letter as \u0073 hides it from a naive scan) */
        set = first_slot(st, '\\');
        set_bit(set, 'u');
        set_bit(set, '\\'); /* JSON inside JSON: \\u0073 */
        if (json_short(f))
            set_bit(set, (unsigned char)json_short(f));
    }
}

/* The part of shape candidate c's quick reject that is tested before its
 * validator: the first NEED_PROBE of its needed bytes (n 0: none). */
static void shape_probe(const struct cand *c, uint8_t *from, uint8_t *n, uint8_t *need)
{
    const sbx__shape *sh = &sbx__shapes[c->shape];
    *from = sh->need_from;
    *n = sh->need_n < NEED_PROBE ? sh->need_n : NEED_PROBE;
    *need = sh->need;
}

/* A slot for candidate i: a shape's trigger as words (see struct slot). */
static void slot_set(struct slot *sl, const struct cand *c, uint32_t i)
{
    unsigned char want[WORD] = {0}, mask[WORD] = {0}, fold[WORD] = {0};
    sl->cand = i;
    for (size_t k = 0; !c->dec && k < c->tlen && k < WORD; k++) {
        unsigned char t = (unsigned char)c->trig[k];
        bool letter = c->icase && lower(t) >= 'a' && lower(t) <= 'z';
        want[k] = letter ? lower(t) : t;
        fold[k] = letter ? 0x20 : 0;
        mask[k] = 0xff;
    }
    memcpy(&sl->want, want, WORD);
    memcpy(&sl->mask, mask, WORD);
    memcpy(&sl->fold, fold, WORD);
    if (c->shape != NO_SHAPE)
        shape_probe(c, &sl->need_from, &sl->need_n, &sl->need);
}

/*
 * Which run lengths of a byte c can start a candidate whose text starts
 * with cc. A shape's trigger of k c's then another byte matches only where
 * the text's run is k long: a longer run has c where the trigger does not,
 * a shorter one the reverse. A literal's text may go on escaped, which
 * begins with an escape byte, not c: a run of k c's or fewer. Letters (a
 * case-insensitive trigger), escape bytes, and a trigger that is all c
 * turn this off for c.
 */
static void index_runs(struct rules *r)
{
    unsigned slots = 0;
    for (unsigned c = 0; c < 256; c++)
        r->run_skip[c] = !r->intro[c] && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    for (size_t i = 0; i < r->ncands; i++) {
        const struct cand *cd = &r->cands[i];
        unsigned char c = (unsigned char)cd->trig[0];
        size_t k = 1;
        if (cd->tlen < 2 || (unsigned char)cd->trig[1] != c)
            continue;
        while (k < cd->tlen && (unsigned char)cd->trig[k] == c)
            k++;
        if (k == cd->tlen) {
            r->run_skip[c] = false;
        } else if (!cd->dec) {
            unsigned char next = (unsigned char)cd->trig[k];
            r->run_ok[c] |= (uint64_t)1 << (k < 63 ? k : 63);
            if (!r->run_slot[c] && slots < RUN_SLOTS)
                r->run_slot[c] = (uint8_t)++slots;
            if (!r->run_slot[c] || k >= RUN_NEXT) {
                r->run_any[c] = true;
                continue;
            }
            set_bit(r->run_next[r->run_slot[c] - 1][k], next);
            if (cd->icase) {
                set_bit(r->run_next[r->run_slot[c] - 1][k], lower(next));
                set_bit(r->run_next[r->run_slot[c] - 1][k], upper(next));
            }
        } else {
            r->run_ok[c] |= k < 63 ? (((uint64_t)1 << (k + 1)) - 1) : ~(uint64_t)0;
            r->run_any[c] = true;
        }
    }
}

/* The bytes that may stand where a literal with decodings dec has its
 * next character, besides that character: an escape's or a line break's
 * first byte (as match_dec_from reads them). */
static void tri_intros(uint64_t *set, unsigned dec)
{
    if (dec & DEC_PERCENT) {
        set_bit(set, '%');
        set_bit(set, '+');
    }
    if (dec & (DEC_JSON | DEC_SKIP_NL))
        set_bit(set, '\\');
    if (dec & DEC_SKIP_NL) {
        set_bit(set, '\n');
        set_bit(set, '\r');
    }
    if (dec & DEC_ANSI)
        set_bit(set, 0x1b);
    if (dec & DEC_SHELL) {
        set_bit(set, '"');
        set_bit(set, '\\');
    }
}

/* How candidate c can begin, as the prefilter's alternatives (up to
 * TRI_ALTS):
 * a shape's trigger (either case of its letters when icase); a literal's
 * first characters raw, raw then an escape or a line break, or an escape
 * first (percent, '+' for a space, JSON). Anything match_dec_from accepts
 * must be inside one of them; more is fine. */
static size_t tri_alts(const struct cand *c, sbx__tri_alt *a)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *t = (const unsigned char *)c->trig;
    unsigned char f = t[0];
    size_t n = 0;
    memset(a, 0, TRI_ALTS * sizeof *a);
    if (!c->dec) {
        /* A token with a quick reject is described by its bytes 0, 1
         * and 3 (sbx__tri_alt): a separator there ("npm_", "api_org_")
         * keeps "npm WARN" and "/api/" out; a byte past the trigger is
         * one of the body's class where the quick reject covers it. */
        shape_probe(c, &a[0].need_from, &a[0].need_n, &a[0].need);
        if (!a[0].need_n)
            a[0].need = 0; /* no quick reject: an ordinary alternative */
        for (size_t j = 0; j < 3; j++) {
            size_t at = a[0].need && j == 2 ? 3 : j;
            if (at >= c->tlen) {
                if (a[0].need && at >= a[0].need_from && at < (size_t)a[0].need_from + a[0].need_n) {
                    for (unsigned b = 0; b < 128; b++)
                        if (sbx__kclass[b] & a[0].need)
                            set_bit(a[0].b[j], (unsigned char)b);
                } else {
                    memset(a[0].b[j], 0xff, sizeof a->b[j]);
                }
                continue;
            }
            set_bit(a[0].b[j], t[at]);
            if (c->icase) {
                set_bit(a[0].b[j], lower(t[at]));
                set_bit(a[0].b[j], upper(t[at]));
            }
        }
        return 1;
    }
    /* raw, raw, raw or an escape */
    set_bit(a[n].b[0], f);
    set_bit(a[n].b[1], t[1]);
    if (c->tlen > 2)
        set_bit(a[n].b[2], t[2]);
    else
        memset(a[n].b[2], 0xff, sizeof a->b[2]);
    tri_intros(a[n++].b[2], c->dec);
    /* raw, then an escape or a line break of the second character: each
     * kind with the bytes its second byte can be (match_dec_from reads
     * nothing else), so that a line ending in a value's first letter is
     * not a candidate by itself */
    if (c->dec & DEC_PERCENT) {
        unsigned char t1 = t[1];
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], '%');
        set_bit(a[n].b[2], (unsigned char)hex[t1 >> 4]);
        set_bit(a[n++].b[2], lower((unsigned char)hex[t1 >> 4]));
        if (t1 == ' ') { /* '+' for the space, then anything */
            set_bit(a[n].b[0], f);
            set_bit(a[n].b[1], '+');
            memset(a[n++].b[2], 0xff, sizeof a->b[2]);
        }
    }
    if (c->dec & (DEC_JSON | DEC_SKIP_NL | DEC_SHELL | DEC_ANSI)) {
        /* \uXXXX, a short escape, JSON in JSON; \n and \r\n; a colour
         * code as \u001b, \x1b, \033 or \e; the shell's \', \xHH, \NNN */
        static const char after[] = "u\\\"/bfnrtxeE'01234567";
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], '\\');
        for (const char *q = after; *q; q++)
            set_bit(a[n].b[2], (unsigned char)*q);
        n++;
    }
    if (c->dec & DEC_SKIP_NL) {
        /* a raw line break: \r\n, or \n then the second character (or
         * an escape of it) */
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], '\r');
        set_bit(a[n++].b[2], '\n');
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], '\n');
        set_bit(a[n].b[2], t[1]);
        tri_intros(a[n++].b[2], c->dec);
    }
    if (c->dec & DEC_ANSI) {
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], 0x1b);
        set_bit(a[n++].b[2], '[');
    }
    if (c->dec & DEC_SHELL) {
        /* a quote's shell forms: '"'"' and '\'' */
        set_bit(a[n].b[0], f);
        set_bit(a[n].b[1], '\'');
        set_bit(a[n].b[2], '"');
        set_bit(a[n++].b[2], '\\');
    }
    if (c->dec & DEC_PERCENT) {
        set_bit(a[n].b[0], '%');
        set_bit(a[n].b[1], (unsigned char)hex[f >> 4]);
        set_bit(a[n].b[1], lower((unsigned char)hex[f >> 4]));
        set_bit(a[n].b[2], (unsigned char)hex[f & 15]);
        set_bit(a[n++].b[2], lower((unsigned char)hex[f & 15]));
        if (f == ' ') {
            set_bit(a[n].b[0], '+');
            set_bit(a[n].b[1], t[1]);
            tri_intros(a[n].b[1], c->dec);
            memset(a[n++].b[2], 0xff, sizeof a->b[2]);
        }
    }
    if (c->dec & DEC_JSON) {
        /* \uXXXX (below U+0080: \u00XX), or a short escape */
        set_bit(a[n].b[0], '\\');
        set_bit(a[n].b[1], 'u');
        if (f < 0x80 && !json_short(f)) {
            set_bit(a[n++].b[2], '0');
        } else {
            if (json_short(f))
                set_bit(a[n].b[1], (unsigned char)json_short(f));
            memset(a[n++].b[2], 0xff, sizeof a->b[2]);
        }
        /* JSON inside JSON: two or more backslashes, then anything */
        set_bit(a[n].b[0], '\\');
        set_bit(a[n].b[1], '\\');
        memset(a[n++].b[2], 0xff, sizeof a->b[2]);
    }
    return n;
}

/* The three-byte prefilter. */
static sbx_status index_tri(struct rules *r)
{
    sbx__tri_alt *alts;
    size_t n = 0;
    sbx_status st;
    if (!(alts = sbx__calloc(r->ncands * TRI_ALTS, sizeof *alts)))
        return SBX_E_NOMEM;
    for (size_t i = 0; i < r->ncands; i++)
        n += tri_alts(&r->cands[i], alts + n);
    st = sbx__tri_build(alts, n, &r->tri);
    sbx__wipe(alts, r->ncands * TRI_ALTS * sizeof *alts); /* the bytes of secret values */
    sbx__free(alts);
    return st;
}

atomic_int sbx__prefilter;
atomic_ulong sbx__redact_builds;

/* The bytes that may follow the byte b in an escape match_dec_from reads
 * (every decoding: more is fine, less would miss a value), into set:
 * percent's hex digit, JSON's and the shell's letters, digits and quotes
 * after a backslash, a colour code's '[', the shell's forms of a quote
 * ('"'"' and '\''), and anything after '+' (a space). */
static void esc_follow(uint64_t *set, unsigned char b)
{
    const char *s = "";
    switch (b) {
    case '%': s = "0123456789abcdefABCDEF"; break;
    case '\\': s = "\"\\/bfnrtu" /* JSON, and a run of them deeper */
                   "xeE0" /* colour codes: \x1b, \e, \E, \033 */
                   "'1234567"; /* the shell's \' and octal */
        break;
    case 0x1b: s = "["; break;
    case '\'': s = "\"\\"; break;
    default: memset(set, 0xff, 4 * sizeof *set); return;
    }
    for (; *s; s++)
        set_bit(set, (unsigned char)*s);
}

/* The AVX2 prefilter: the shapes' triggers by their first four bytes;
 * the literals by their first seven, raw (a four-byte piece at every
 * fourth position) or with an escape byte among them. */
static sbx_status index_avx2(struct rules *r)
{
    sbx__trig_sets *alts;
    uint32_t *grams;
    size_t n = 0, nwraps = 0;
    bool wrap_any = false, space = false, litbyte[256] = {false};
    uint64_t follow[256][4] = {{0}};
    sbx_status st = SBX_OK;
    for (size_t i = 0; i < r->nlits; i++)
        if (r->lits[i].len < 7)
            return SBX_OK; /* cannot happen (VALUE_MIN): the pair filter alone */
    alts = sbx__calloc(r->ncands + 1, sizeof *alts);
    grams = sbx__calloc(10 * r->nlits + 1, sizeof *grams);
    if (!alts || !grams) {
        st = SBX_E_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < r->ncands; i++) {
        const struct cand *c = &r->cands[i];
        if (c->dec)
            continue;
        for (size_t j = 0; j < SBX__AVX2_BYTES; j++) {
            unsigned char t = j < c->tlen ? (unsigned char)c->trig[j] : 0;
            if (j >= c->tlen) {
                memset(alts[n].b[j], 0xff, sizeof alts[n].b[j]);
                continue;
            }
            set_bit(alts[n].b[j], t);
            if (c->icase) {
                set_bit(alts[n].b[j], lower(t));
                set_bit(alts[n].b[j], upper(t));
            }
        }
        shape_probe(c, &alts[n].need_from, &alts[n].need_n, &alts[n].need);
        n++;
    }
    for (size_t i = 0; i < r->nlits; i++)
        for (size_t j = 0; j < 4; j++)
            grams[4 * i + j] = sbx__piece((const unsigned char *)r->lits[i].s + j);
    for (size_t i = 0; i < r->nlits; i++)
        for (size_t j = 0; j < 6; j++)
            litbyte[(unsigned char)r->lits[i].s[j]] = true;
    /* '+' stands for a space only: it opens an escape in a literal's
     * first seven bytes only where one has a space there (in patches and
     * C++ builds it is common) */
    for (size_t i = 0; i < r->nlits; i++)
        for (size_t j = 0; j < 7 && (r->lits[i].dec & DEC_PERCENT); j++)
            space |= r->lits[i].s[j] == ' ';
    for (unsigned b = 0; b < 256; b++)
        if (r->intro[b] && (b != '+' || space))
            esc_follow(follow[b], (unsigned char)b);
    /* a wrapped form's pieces after a line break at offsets 1 to 6 */
    for (size_t i = 0; i < r->nlits; i++) {
        if (!(r->lits[i].dec & DEC_SKIP_NL))
            continue;
        if (r->lits[i].len < 10) {
            wrap_any = true;
            continue;
        }
        for (size_t j = 1; j <= 6; j++)
            grams[4 * r->nlits + nwraps++] = sbx__piece((const unsigned char *)r->lits[i].s + j);
    }
    {
        sbx__avx2_input in = {.alts = alts,
                              .n = n,
                              .intro = r->intro,
                              .gram = grams,
                              .ngrams = 4 * r->nlits,
                              .wrap = grams + 4 * r->nlits,
                              .nwraps = nwraps,
                              .wrap_any = wrap_any,
                              .litbyte = litbyte,
                              .follow = (const uint64_t(*)[4])follow};
        st = sbx__tri_build_avx2(&in, &r->tri);
    }
done:
    if (grams)
        sbx__wipe(grams, (10 * r->nlits + 1) * sizeof *grams); /* pieces of secret values */
    sbx__free(grams);
    sbx__free(alts);
    return st;
}

static sbx_status index_pre(struct rules *r)
{
    int pf = atomic_load(&sbx__prefilter);
    sbx_status st;
    if (!r->ncands || pf == SBX__PF_NONE)
        return SBX_OK;
    if (pf != SBX__PF_AVX2 && (st = index_tri(r)) != SBX_OK)
        return st;
    if (r->tri || pf == SBX__PF_TRI)
        return SBX_OK;
    return index_avx2(r);
}

/* Candidates, the pair index and the pair filter. */
static sbx_status index_cands(struct rules *r, bool shapes)
{
    size_t n = r->nlits + (shapes ? sbx__nshapes : 0), nslots = 0;
    uint32_t *fill = NULL, npairs = 0;
    if (!(r->cands = sbx__calloc(n ? n : 1, sizeof *r->cands)))
        return SBX_E_NOMEM;
    for (size_t i = 0; i < r->nlits; i++) {
        struct cand *c = &r->cands[r->ncands++];
        *c = (struct cand){r->lits[i].s, r->lits[i].len, false, NO_SHAPE, KIND_SECRET, r->lits[i].dec, true,
                           r->lits[i].ext, r->lits[i].ext_len, false};
        for (size_t k = 0; k < c->tlen; k++)
            if (strchr("%+\\\n\r", c->trig[k]))
                c->plain = false;
        c->ext_plain = true;
        for (size_t k = 0; k < c->ext_len; k++)
            if (dec_intro((unsigned char)c->ext[k], c->dec))
                c->ext_plain = false;
        if (c->dec & DEC_SHELL)
            c->plain = false;
    }
    for (size_t i = 0; shapes && i < sbx__nshapes; i++) {
        unsigned kind = 0;
        for (size_t k = 1; k < r->nkinds; k++)
            if (strcmp(r->kinds[k], sbx__shapes[i].kind) == 0)
                kind = (unsigned)k;
        r->cands[r->ncands++] =
            (struct cand){sbx__shapes[i].trigger, sbx__shapes[i].tlen, sbx__shapes[i].icase, (int)i, kind, 0, false,
                          NULL, 0, false};
    }
    /* The pair filters. */
    for (size_t i = 0; i < r->ncands; i++) {
        struct starts st;
        cand_starts(&r->cands[i], &st);
        for (unsigned k = 0; k < st.n; k++) {
            unsigned char f = st.first[k];
            r->first[f] = true;
            for (unsigned w = 0; w < 4; w++)
                for (uint64_t bits = st.second[k][w]; bits; bits &= bits - 1)
                    r->pair8[(unsigned)f << 8 | (w * 64 + (unsigned)__builtin_ctzll(bits))] |=
                        PAIR_ANY | (r->cands[i].dec ? PAIR_LIT : PAIR_SHAPE);
        }
    }
    for (unsigned x = 0; x < 65536; x += 8) { /* most are 0: eight at a time */
        uint64_t eight;
        memcpy(&eight, r->pair8 + x, 8);
        for (unsigned k = 0; eight && k < 8; k++)
            if (r->pair8[x + k])
                r->group[x + k] = (uint16_t)npairs++;
    }
    /* The slots, counted per pair, then filled in. */
    if (!(r->start = sbx__calloc(npairs + 1, sizeof *r->start)))
        return SBX_E_NOMEM;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (uint32_t g = 0; g < npairs; g++)
                r->start[g + 1] += r->start[g];
            if (!(r->slots = sbx__calloc(nslots ? nslots : 1, sizeof *r->slots)) ||
                !(fill = sbx__calloc(npairs ? npairs : 1, sizeof *fill)))
                return SBX_E_NOMEM;
        }
        for (size_t i = 0; i < r->ncands; i++) {
            struct starts st;
            cand_starts(&r->cands[i], &st);
            for (unsigned k = 0; k < st.n; k++)
                for (unsigned w = 0; w < 4; w++)
                    for (uint64_t bits = st.second[k][w]; bits; bits &= bits - 1) {
                        unsigned x = (unsigned)st.first[k] << 8 | (w * 64 + (unsigned)__builtin_ctzll(bits));
                        uint32_t g = r->group[x];
                        if (pass == 0) {
                            r->start[g + 1]++;
                            nslots++;
                        } else {
                            slot_set(&r->slots[r->start[g] + fill[g]++], &r->cands[i], (uint32_t)i);
                        }
                    }
        }
    }
    sbx__free(fill);
    /* Literals are at least VALUE_MIN bytes: when none of the text's first
     * four bytes can begin an escape or a line break, those four bytes are
     * the literal's own. */
    for (size_t i = 0; i < r->nlits; i++) {
        unsigned x = sbx__piece_hash(sbx__piece((const unsigned char *)r->lits[i].s));
        r->quad[x >> 6] |= (uint64_t)1 << (x & 63);
    }
    for (size_t i = 0; i < r->nlits; i++)
        for (unsigned b = 0; b < 256; b++)
            r->intro[b] |= dec_intro((unsigned char)b, r->lits[i].dec);
    index_runs(r);
    return index_pre(r);
}

/* Whether something may start at p[i] (n bytes, more may follow): the pair
 * filter, and for a pair only literals start with, the four-byte filter
 * (a shape's pair goes to at(), whose word compare is as cheap as a hash).
 * The last byte may always start something when more may come. */
static inline bool worth_at(const struct rules *r, const unsigned char *p, size_t i, size_t n, bool more)
{
    unsigned x;
    if (i + 1 >= n)
        return more && r->first[p[i]];
    x = r->pair8[(unsigned)p[i] << 8 | p[i + 1]];
    if (x != (PAIR_ANY | PAIR_LIT)) /* none, or a shape's */
        return x != 0;
    if (i + 4 > n)
        return true;
    if (r->intro[p[i]] || r->intro[p[i + 1]] || r->intro[p[i + 2]] || r->intro[p[i + 3]])
        return true;
    return bit_set(r->quad, sbx__piece_hash(sbx__piece(p + i)));
}

static struct rules *rules_build(const sbx_redactor *rd)
{
    struct rules *r = sbx__calloc(1, sizeof *r);
    size_t cap = 0;
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    atomic_fetch_add(&sbx__redact_builds, 1);
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
    if (!(r->markers = sbx__calloc(r->nkinds, sizeof *r->markers)) ||
        !(r->marker_len = sbx__calloc(r->nkinds, sizeof *r->marker_len)))
        goto fail;
    for (size_t k = 0; k < r->nkinds; k++) {
        size_t n = strlen(r->kinds[k]) + 12;
        if (!(r->markers[k] = sbx__malloc(n)))
            goto fail;
        r->marker_len[k] = (size_t)snprintf(r->markers[k], n, "[REDACTED:%s]", r->kinds[k]);
    }
    for (size_t i = 0; i < rd->nvals; i++)
        if (add_value(r, &cap, rd->vals[i].p, rd->vals[i].n) != SBX_OK)
            goto fail;
    dedup_lits(r);
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
    if (!r || !(r->cache = sbx__calloc(1, sizeof *r->cache))) {
        sbx__free(r);
        return NULL;
    }
    r->shapes = true;
    pthread_mutex_init(&r->cache->lock, NULL);
    /* Built now: a new redactor used as it is never fails later for
     * want of memory. */
    if (!(r->cache->rules = rules_build(r))) {
        sbx_redactor_free(r);
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
    if (r->cache) {
        rules_unref(r->cache->rules);
        pthread_mutex_destroy(&r->cache->lock);
        sbx__free(r->cache);
    }
    sbx__err_free(&r->err);
    sbx__free(r);
}

const char *sbx_redactor_last_error(const sbx_redactor *r)
{
    return SBX__LAST_ERROR(r);
}

/* The values or switches changed: the rules are built again at next use. */
static void rules_stale(sbx_redactor *r)
{
    pthread_mutex_lock(&r->cache->lock);
    rules_unref(r->cache->rules);
    r->cache->rules = NULL;
    pthread_mutex_unlock(&r->cache->lock);
}

/* The current rules, with a reference for the caller; NULL when they
 * had to be built and memory ran out (the next call tries again). */
static struct rules *rules_get(const sbx_redactor *r)
{
    struct rules *rules;
    pthread_mutex_lock(&r->cache->lock);
    if (!r->cache->rules)
        r->cache->rules = rules_build(r);
    if ((rules = r->cache->rules) != NULL)
        atomic_fetch_add(&rules->refs, 1);
    pthread_mutex_unlock(&r->cache->lock);
    return rules;
}

sbx_status sbx_redactor_add_secret(sbx_redactor *r, const uint8_t *value, size_t len)
{
    struct val *v;
    char *copy;
    SBX__ENTER(r, false);
    SBX__ARG(r, value, "invalid argument: the secret is NULL");
    SBX__ARG(r, len >= VALUE_MIN,
             "a secret of %zu bytes is refused: values shorter than %d bytes would redact "
             "ordinary text",
             len, VALUE_MIN);
    SBX__ARG(r, len <= VALUE_MAX, "a secret of %zu bytes is refused (at most %d)", len, VALUE_MAX);
    for (size_t i = 0; i < r->nvals; i++)
        if (r->vals[i].n == len && memcmp(r->vals[i].p, value, len) == 0)
            return SBX_OK;
    if (!(v = sbx__realloc(r->vals, (r->nvals + 1) * sizeof *v)))
        return sbx__err_nomem(&r->err);
    r->vals = v;
    if (!(copy = sbx__malloc(len)))
        return sbx__err_nomem(&r->err);
    memcpy(copy, value, len);
    r->vals[r->nvals].p = copy;
    r->vals[r->nvals++].n = len;
    rules_stale(r);
    return SBX_OK;
}

sbx_status sbx_redactor_add_secret_env(sbx_redactor *r, const char *name)
{
    const char *v;
    sbx_status st;
    SBX__ENTER(r, false);
    SBX__ARG(r, name && *name, "invalid argument: no variable name");
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
    SBX__ENTER(r, false);
    if (r->shapes != (enabled != 0)) {
        r->shapes = enabled != 0;
        rules_stale(r);
    }
    return SBX_OK;
}

/* ---- streams --------------------------------------------------------------------------------- */

sbx_redact_stream *sbx__redact_stream_with(sbx__redact_rules *rules)
{
    sbx_redact_stream *s;
    if (!rules || !(s = sbx__calloc(1, sizeof *s)))
        return NULL;
    if (!(s->counts = sbx__calloc(rules->nkinds, sizeof *s->counts))) {
        sbx__free(s);
        return NULL;
    }
    s->r = rules;
    atomic_fetch_add(&s->r->refs, 1);
    return s;
}

sbx_redact_stream *sbx_redact_stream_new(const sbx_redactor *r)
{
    struct rules *rules = r ? rules_get(r) : NULL;
    sbx_redact_stream *s = sbx__redact_stream_with(rules);
    if (rules)
        rules_unref(rules);
    return s;
}

int sbx__redact_prefilter(const sbx_redactor *r)
{
    struct rules *rules = r ? rules_get(r) : NULL;
    int kind = rules ? sbx__tri_kind(rules->tri) : SBX__PF_NONE;
    if (rules)
        rules_unref(rules);
    return kind;
}

sbx__redact_rules *sbx__redactor_rules(const sbx_redactor *r)
{
    return rules_get(r);
}

void sbx__redact_rules_ref(sbx__redact_rules *rules)
{
    atomic_fetch_add(&rules->refs, 1);
}

void sbx__redact_rules_unref(sbx__redact_rules *rules)
{
    rules_unref(rules);
}

size_t sbx__redact_stream_nkinds(const sbx_redact_stream *s)
{
    return s->r->nkinds;
}

const char *sbx__redact_stream_kind(const sbx_redact_stream *s, size_t k, uint64_t *count)
{
    *count = s->counts[k];
    return s->r->kinds[k];
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

/* Whether p holds the first n bytes of a shape's trigger; its first
 * WORD were checked by the slot (or are all there is). */
static inline bool prefix_eq(const struct cand *c, const unsigned char *p, size_t n)
{
    size_t k = WORD;
    if (!c->icase) {
        for (; k < n; k++)
            if ((unsigned char)c->trig[k] != p[k])
                return false;
        return true;
    }
    for (; k < n; k++) /* icase triggers are written in lowercase */
        if ((unsigned char)c->trig[k] != lower(p[k]))
            return false;
    return true;
}

enum at_result { AT_NONE, AT_MATCH, AT_WAIT };

static int hexval(unsigned char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The 4 hex digits at p as a number, -1 when they are not. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int d = hexval(p[k]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* The escape at p (avail bytes, more may follow) under dec: its decoded
 * bytes in o (*olen, up to 4: a `\uXXXX` as UTF-8) and its length in
 * *elen. 1: an escape; 0: none here; -1: cannot tell yet. */
static int decode_esc(const unsigned char *p, size_t avail, bool more, unsigned dec, unsigned char *o, size_t *olen,
                      size_t *elen)
{
    if ((dec & DEC_PERCENT) && p[0] == '%') {
        for (size_t k = 1; k < 3; k++) {
            if (k >= avail)
                return more ? -1 : 0;
            if (hexval(p[k]) < 0)
                return 0;
        }
        o[0] = (unsigned char)(hexval(p[1]) << 4 | hexval(p[2]));
        *olen = 1;
        *elen = 3;
        return 1;
    }
    if ((dec & DEC_JSON) && p[0] == '\\') {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *q;
        long cp, lo;
        if (avail < 2)
            return more ? -1 : 0;
        if (p[1] != 'u') {
            if (!p[1] || !(q = strchr(from, p[1])))
                return 0;
            o[0] = (unsigned char)to[q - from];
            *olen = 1;
            *elen = 2;
            return 1;
        }
        for (size_t k = 2; k < 6; k++) {
            if (k >= avail)
                return more ? -1 : 0;
            if (hexval(p[k]) < 0)
                return 0;
        }
        cp = hex4(p + 2);
        *elen = 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return 0; /* a lone low surrogate */
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            static const char u[] = "\\u";
            for (size_t k = 6; k < 12; k++) {
                if (k >= avail)
                    return more ? -1 : 0;
                if (k < 8 ? p[k] != (unsigned char)u[k - 6] : hexval(p[k]) < 0)
                    return 0;
            }
            lo = hex4(p + 8);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            *elen = 12;
        }
        if (cp < 0x80) {
            o[0] = (unsigned char)cp;
            *olen = 1;
        } else if (cp < 0x800) {
            o[0] = (unsigned char)(0xC0 | cp >> 6);
            o[1] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 2;
        } else if (cp < 0x10000) {
            o[0] = (unsigned char)(0xE0 | cp >> 12);
            o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            o[2] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 3;
        } else {
            o[0] = (unsigned char)(0xF0 | cp >> 18);
            o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            o[3] = (unsigned char)(0x80 | (cp & 0x3F));
            *olen = 4;
        }
        return 1;
    }
    return 0;
}

/* Which of forms (none a prefix of another) is at p: its length, 0 for
 * none, -1 when one may still come (more bytes needed to tell). */
static int form_at(const unsigned char *p, size_t avail, bool more, const char *const *forms, size_t nforms)
{
    for (size_t f = 0; f < nforms; f++) {
        size_t k = 0;
        while (forms[f][k] && k < avail && p[k] == (unsigned char)forms[f][k])
            k++;
        if (!forms[f][k])
            return (int)k;
        if (k == avail && more)
            return -1;
    }
    return 0;
}

/* A line break between two characters of a wrapped base64 form: `\n`,
 * `\r\n` as bytes or as JSON escapes. Its length, 0 when none, -1 when
 * the answer needs more bytes. */
static int line_break(const unsigned char *p, size_t avail, bool more)
{
    static const char *const forms[] = {"\r\n", "\n", "\\r\\n", "\\n"};
    return form_at(p, avail, more, forms, 4);
}

/* A colour code at p (ESC [ digits and ; m), raw or written as \u001b,
 * \x1b, \033 or \e: its length, 0 when none, -1 when more bytes are
 * needed to tell. */
static int ansi_len(const unsigned char *p, size_t avail, bool more)
{
    static const char *const escs[] = {"\x1b", "\\u001b", "\\u001B", "\\x1b", "\\x1B", "\\033", "\\e", "\\E"};
    int f = form_at(p, avail, more, escs, sizeof escs / sizeof escs[0]);
    size_t k;
    if (f <= 0)
        return f;
    k = (size_t)f;
    if (k >= avail)
        return more ? -1 : 0;
    if (p[k++] != '[')
        return 0;
    for (; k < avail && k < 32; k++) {
        if (p[k] == 'm')
            return (int)k + 1;
        if (!((p[k] >= '0' && p[k] <= '9') || p[k] == ';'))
            return 0;
    }
    return k == avail && more ? -1 : 0;
}

/* The shell's quoted forms of a quote inside '...': '"'"' and '\''. Their
 * length at p, 0 when none, -1 when more bytes are needed. */
static int shell_quote(const unsigned char *p, size_t avail, bool more)
{
    static const char *const forms[] = {"'\"'\"'", "'\\''"};
    return form_at(p, avail, more, forms, 2);
}

/* A $'...' escape the JSON ones do not cover: \' , \xHH, \NNN (octal). */
static int decode_shell(const unsigned char *p, size_t avail, bool more, unsigned char *o, size_t *elen)
{
    size_t k;
    unsigned v = 0;
    if (avail < 2)
        return more ? -1 : 0;
    if (p[0] != '\\')
        return 0;
    if (p[1] == '\'') {
        *o = '\'';
        *elen = 2;
        return 1;
    }
    if (p[1] == 'x') {
        for (k = 2; k < 4 && k < avail && hexval(p[k]) >= 0; k++)
            v = v << 4 | (unsigned)hexval(p[k]);
        if (k < 4 && k == avail && more)
            return -1;
        if (k == 2)
            return 0;
        *o = (unsigned char)v;
        *elen = k;
        return 1;
    }
    for (k = 1; k < 4 && k < avail && p[k] >= '0' && p[k] <= '7'; k++)
        v = v << 3 | (unsigned)(p[k] - '0');
    if (k < 4 && k == avail && more)
        return -1;
    if (k == 1 || v > 255)
        return 0;
    *o = (unsigned char)v;
    *elen = k;
    return 1;
}

/* JSON inside a JSON string, any depth: a run of two or more backslashes,
 * then u and four hex digits or a short escape's letter, stands for that
 * one character (`\\u0073`, `\\n`, `\\\"`). 1 with the UTF-8 in o,
 * 0 when it is not one, -1 when the answer needs more bytes. */
static int decode_deep(const unsigned char *p, size_t avail, bool more, unsigned char *o, size_t *olen, size_t *elen)
{
    size_t r = 0;
    int d;
    while (r < avail && r < 16 && p[r] == '\\')
        r++;
    if (r == avail)
        return more && r < 16 ? -1 : 0;
    if (r < 2)
        return 0;
    /* the innermost escape is an ordinary one after the run's other backslashes */
    d = decode_esc(p + r - 1, avail - (r - 1), more, DEC_JSON, o, olen, elen);
    if (d > 0)
        *elen += r - 1;
    return d;
}

/*
 * A literal with decodings (a registered value or a base64 form of one) at
 * p, from text offset t and literal offset v: compared byte by byte, an
 * escape standing for the bytes it decodes to. Where the text's raw bytes
 * also match (a value holding "%25" itself), the raw reading is tried
 * aside first and the decoded one if it fails; the tries aside share a
 * budget of bytes, so the work stays linear in the value.
 * On a match *mlen is the length in the text.
 */
static enum at_result match_dec_from(const struct cand *c, const unsigned char *p, size_t avail, bool more, size_t t,
                                     size_t v, bool broke, long *budget, bool aside, size_t *mlen)
{
    const unsigned char *val = (const unsigned char *)c->trig;
    size_t vlen = c->tlen;
    while (v < vlen) {
        unsigned char ch, o[4];
        size_t olen, elen;
        int d;
        if (aside && --*budget < 0)
            return AT_NONE; /* a raw reading tried aside: out of budget */
        if (c->plain) {
            /* No byte of the literal starts an escape: equal bytes are
             * the literal's own, compared in a run. */
            size_t m = avail - t < vlen - v ? avail - t : vlen - v, k = 0;
            for (; k + WORD <= m; k += WORD) { /* eight bytes at a time to the first difference */
                uint64_t x, y;
                memcpy(&x, p + t + k, WORD);
                memcpy(&y, val + v + k, WORD);
                if (x != y)
                    break;
            }
            while (k < m && p[t + k] == val[v + k])
                k++;
            if (k) {
                t += k;
                v += k;
                broke = false;
                if (v == vlen)
                    break;
            }
        }
        if (t >= avail)
            return more ? AT_WAIT : AT_NONE;
        ch = p[t];
        if ((c->dec & DEC_ANSI) && v > 0 && val[v] != 0x1b && (ch == 0x1b || ch == '\\')) {
            /* a colour code between two of the value's characters */
            int a = ansi_len(p + t, avail - t, more);
            if (a < 0)
                return AT_WAIT;
            if (a > 0) {
                t += (size_t)a;
                continue;
            }
        }
        if ((c->dec & DEC_SHELL) && ch == '\'' && val[v] == '\'') {
            int q = shell_quote(p + t, avail - t, more);
            if (q < 0)
                return AT_WAIT;
            if (q > 0) {
                /* the shell's form of the quote, or the quote itself and
                 * then the value's own next bytes: the form first, aside */
                enum at_result res = *budget > 0 ? match_dec_from(c, p, avail, more, t + (size_t)q, v + 1, false,
                                                                  budget, true, mlen)
                                                 : AT_NONE;
                if (res != AT_NONE)
                    return res;
            }
            t++;
            v++;
            broke = false;
            continue;
        }
        if ((c->dec & DEC_SHELL) && ch == '\\') {
            unsigned char sc;
            size_t sl;
            int d2 = decode_shell(p + t, avail - t, more, &sc, &sl);
            if (d2 < 0)
                return AT_WAIT;
            if (d2 > 0 && sc == val[v] && sc != '\\') {
                t += sl;
                v++;
                continue;
            }
        }
        if (ch == val[v] && !dec_intro(ch, c->dec)) {
            t++;
            v++;
            broke = false;
            continue;
        }
        if ((c->dec & DEC_SKIP_NL) && v > 0 && !broke && (ch == '\n' || ch == '\r' || ch == '\\')) {
            int nl = line_break(p + t, avail - t, more);
            if (nl < 0)
                return AT_WAIT;
            if (nl > 0) {
                if ((c->dec & DEC_NL_SPACE) && val[v] == ' ') {
                    /* a break and then the space ("\n 4b"), or the break
                     * instead of it ("\n4b"): the next byte tells */
                    if (t + (size_t)nl >= avail)
                        return more ? AT_WAIT : AT_NONE;
                    if (p[t + (size_t)nl] != ' ')
                        v++;
                }
                t += (size_t)nl;
                broke = true;
                continue;
            }
        }
        broke = false;
        if ((c->dec & DEC_JSON) && ch == '\\' && val[v] == '\\' && (v == 0 || val[v - 1] != '\\') && *budget > 0) {
            /* The value's run of n backslashes deeper in JSON inside JSON:
             * n << d of them at depth d (decode_esc reads depth 1,
             * decode_deep only escapes that end in a letter or a quote).
             * Depths 2 to 4, tried aside once per run, as far as 64 bytes:
             * the text's run may also hold the next character's escape. */
            size_t n = 1, run = 0, cap;
            while (v + n < vlen && val[v + n] == '\\')
                n++;
            cap = n << 4 < DEEP_RUN_MAX ? n << 4 : DEEP_RUN_MAX;
            if (n << 2 <= DEEP_RUN_MAX) {
                while (t + run < avail && run < cap && p[t + run] == '\\')
                    run++;
                if (t + run == avail && run < cap && more)
                    return AT_WAIT;
                for (size_t k = n << 2; k <= run; k *= 2) {
                    enum at_result res = match_dec_from(c, p, avail, more, t + k, v + n, false, budget, true, mlen);
                    if (res != AT_NONE)
                        return res;
                }
            }
        }
        d = decode_esc(p + t, avail - t, more, c->dec, o, &olen, &elen);
        if (d < 0)
            return AT_WAIT;
        if (d > 0 && olen <= vlen - v && memcmp(o, val + v, olen) == 0) {
            if (ch == val[v] && *budget > 0) {
                /* Both readings fit here: raw first, then decoded. The raw
                 * tries share one budget of bytes, so a value of many
                 * backslashes stays linear (no exponential search). */
                enum at_result res = match_dec_from(c, p, avail, more, t + 1, v + 1, false, budget, true, mlen);
                if (res != AT_NONE)
                    return res;
            }
            t += elen;
            v += olen;
            continue;
        }
        if ((c->dec & DEC_PERCENT) && ch == '+' && val[v] == ' ') {
            t++;
            v++;
            continue;
        }
        if ((c->dec & DEC_JSON) && ch == '\\' && ch != val[v]) {
            d = decode_deep(p + t, avail - t, more, o, &olen, &elen);
            if (d < 0)
                return AT_WAIT;
            if (d > 0 && olen <= vlen - v && memcmp(o, val + v, olen) == 0) {
                t += elen;
                v += olen;
                continue;
            }
        }
        if (ch != val[v])
            return AT_NONE;
        t++;
        v++;
    }
    *mlen = t;
    return AT_MATCH;
}

/* A value's prefix matched to *mlen: on as far as the text goes on
 * agreeing with the rest of the value, raw or in decode_esc's escapes
 * (percent and JSON; not colour codes, shell forms or '+' for a space,
 * which end the extension there: the prefix itself is redacted). AT_WAIT
 * while it agrees up to the end of the bytes at hand. */
static enum at_result extend_prefix(const struct cand *c, const unsigned char *p, size_t avail, bool more,
                                    size_t *mlen)
{
    const unsigned char *val = (const unsigned char *)c->ext;
    size_t t = *mlen, v = 0;
    while (v < c->ext_len) {
        unsigned char o[4];
        size_t olen, elen;
        int d;
        if (c->ext_plain) {
            /* equal bytes in a run, eight at a time: none starts an escape */
            while (v + WORD <= c->ext_len && t + WORD <= avail) {
                uint64_t x, y;
                memcpy(&x, p + t, WORD);
                memcpy(&y, val + v, WORD);
                if (x != y)
                    break;
                t += WORD;
                v += WORD;
            }
            if (v == c->ext_len)
                break;
        }
        if (t >= avail) {
            if (more)
                return AT_WAIT;
            break;
        }
        if (p[t] == val[v] && !dec_intro(p[t], c->dec)) {
            t++;
            v++;
            continue;
        }
        d = decode_esc(p + t, avail - t, more, c->dec, o, &olen, &elen);
        if (d < 0)
            return AT_WAIT;
        if (d > 0 && olen <= c->ext_len - v && memcmp(o, val + v, olen) == 0) {
            t += elen;
            v += olen;
            continue;
        }
        if (p[t] != val[v])
            break;
        t++;
        v++;
    }
    *mlen = t;
    return AT_MATCH;
}

static enum at_result match_dec(const struct cand *c, const unsigned char *p, size_t avail, bool more, size_t *mlen)
{
    long budget = 8 * (long)c->tlen + 64;
    return match_dec_from(c, p, avail, more, 0, 0, false, &budget, false, mlen);
}

/* What starts at p[0] (avail bytes known, more may follow): the match
 * reaching farthest, or a wait when any candidate cannot tell yet. */
static inline int boundary(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t last_match_end);

static inline __attribute__((always_inline)) enum at_result
at(const sbx_redact_stream *s, const unsigned char *base, size_t i, size_t n, size_t last_end, bool more, size_t *ms,
   size_t *me, unsigned *kind, enum sbx__cont *cont, unsigned skip_kind)
{
    const struct rules *r = s->r;
    const unsigned char *p = base + i;
    size_t avail = n - i;
    int prev = INT_MIN; /* the byte before, as word boundaries see it: worked out if a shape gets that far */
    bool wait = false, found = false;
    unsigned x;
    uint64_t word, have = ~(uint64_t)0; /* the next WORD bytes, and which of them are there */
    uint32_t g, end;
    if (avail < 2) /* every candidate is 2 bytes or more */
        return more && r->first[p[0]] ? AT_WAIT : AT_NONE;
    x = (unsigned)p[0] << 8 | p[1]; /* in pair8[]: worth_at() said so */
    if (avail >= WORD) {
        memcpy(&word, p, WORD);
    } else {
        unsigned char w[WORD] = {0}, h[WORD] = {0};
        memcpy(w, p, avail);
        memset(h, 0xff, avail);
        memcpy(&word, w, WORD);
        memcpy(&have, h, WORD);
    }
    g = r->group[x];
    end = r->start[g + 1];
    for (uint32_t k = r->start[g]; k < end; k++) {
        const struct slot *sl = &r->slots[k];
        const struct cand *c;
        const sbx__shape *sh;
        enum sbx__shape_result res;
        enum sbx__cont cc = SBX__CONT_NONE;
        size_t a = 0, b, len;
        if (((word | sl->fold) & sl->mask & have) != (sl->want & have))
            continue;
        if (sl->need_n) {
            /* The quick reject (a near miss fails within a few bytes): the
             * first of the needed bytes, as far as they are here. A byte
             * out of class means NO whatever the rest of the trigger is. */
            size_t j = sl->need_from, lim = j + sl->need_n;
            if (lim > avail)
                lim = avail;
            while (j < lim && p[j] < 128 && (sbx__kclass[p[j]] & sl->need))
                j++;
            if (j < lim)
                continue;
        }
        c = &r->cands[sl->cand];
        if (c->dec) {
            /* A literal, maybe encoded. */
            enum at_result m = match_dec(c, p, avail, more, &b);
            if (m == AT_MATCH && c->ext)
                m = extend_prefix(c, p, avail, more, &b);
            if (m == AT_WAIT)
                wait = true;
            if (m != AT_MATCH)
                continue;
            goto take;
        }
        /* A shape inside a match of its own kind ends where that one does. */
        if (c->kind == skip_kind)
            continue;
        if (avail < c->tlen) {
            if (more && prefix_eq(c, p, avail))
                wait = true;
            continue;
        }
        if (!prefix_eq(c, p, c->tlen))
            continue;
        sh = &sbx__shapes[c->shape];
        len = avail < sh->window ? avail : sh->window;
        if (prev == INT_MIN)
            prev = boundary(s, base, i, last_end);
        res = sbx__shape_match(sh, (const char *)p, len, prev, more && avail < sh->window, &a, &b);
        if (res == SBX__SHAPE_MORE) {
            wait = true;
            continue;
        }
        if ((res != SBX__SHAPE_YES && res != SBX__SHAPE_CUT) || b <= a || b > len)
            continue;
        if (res == SBX__SHAPE_CUT)
            cc = sh->cont;
    take:
        /* The span covers every match here: the one reaching farthest gives
         * the kind (and its continuation), and one starting earlier (a
         * registered value that is also the header name before an
         * Authorization value) stretches the start back over it. */
        if (!found || b > *me || (b == *me && a < *ms)) {
            size_t from = found && *ms < a ? *ms : a;
            found = true;
            *ms = from;
            *me = b;
            *kind = c->kind;
            *cont = cc;
        } else if (a < *ms) {
            *ms = a;
        }
    }
    return wait ? AT_WAIT : found ? AT_MATCH : AT_NONE;
}

/* sbx__buf_append() to the output, with its common case (room already
 * there, no limit) inline: a match appends twice, text and marker. */
static inline sbx_status out_append(sbx_redact_stream *s, const void *p, size_t n)
{
    sbx__buf *b = &s->out;
    if (__builtin_expect(!b->limit && b->data && n < b->cap - b->len, 1)) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return SBX_OK;
    }
    return sbx__buf_append(b, p, n);
}

static sbx_status emit_marker(sbx_redact_stream *s, unsigned kind)
{
    s->counts[kind]++;
    return out_append(s, s->r->markers[kind], s->r->marker_len[kind]);
}

/* The input byte k places before p[i] (k = 1..HIST), from p or the
 * history; -1 before the start of the stream. */
static int back(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t k)
{
    if (i >= k)
        return p[i - k];
    k -= i;
    return k <= s->nhist ? s->hist[s->nhist - k] : -1;
}

static bool is_hex(int c)
{
    return c >= 0 && hexval((unsigned char)c) >= 0;
}

/* Whether the bytes ending k places before p[i] are ESC, raw or as a
 * JSON escape (\u001b, \u001B, \x1b is not JSON). */
static bool esc_before(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t k)
{
    if (back(s, p, i, k) == 0x1b)
        return true;
    return back(s, p, i, k) == 'b' || back(s, p, i, k) == 'B' ? back(s, p, i, k + 1) == '1' &&
                                                                      back(s, p, i, k + 2) == '0' &&
                                                                      back(s, p, i, k + 3) == '0' &&
                                                                      back(s, p, i, k + 4) == 'u' &&
                                                                      back(s, p, i, k + 5) == '\\'
                                                                : false;
}

/* The byte before a candidate, as the shapes' word boundaries should see
 * it: none (-1) right after a redaction, after a JSON escape (`\n`, `\t`,
 * `\r`, `\b`, `\f`, `\/`, `\u003d`: the letters are not part of a word),
 * after a percent escape (`%3D`) or after an ANSI colour code
 * (`ESC[32m`, also JSON-escaped). */
static int boundary_slow(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t last_match_end);

static inline int boundary(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t last_match_end)
{
    if (i > 0 && i != last_match_end) {
        int b1 = p[i - 1];
        if (!(b1 >= '0' && b1 <= '9') && b1 != '/' && b1 != '"' && !(b1 >= 0x40 && b1 <= 0x7e))
            return b1; /* the common case: a space or punctuation */
    }
    return boundary_slow(s, p, i, last_match_end);
}

static int boundary_slow(const sbx_redact_stream *s, const unsigned char *p, size_t i, size_t last_match_end)
{
    int b1 = back(s, p, i, 1), b2, b3;
    if ((i == last_match_end && (i > 0 || s->after_match)) || b1 < 0)
        return -1;
    /* Every special case below ends in a letter, a digit, '/' or '"': a
     * space or punctuation before the candidate is just itself. */
    if (!(b1 >= '0' && b1 <= '9') && b1 != '/' && b1 != '"' && !(b1 >= 0x40 && b1 <= 0x7e))
        return b1; /* (letters are in 0x40..0x7e) */
    b2 = back(s, p, i, 2);
    b3 = back(s, p, i, 3);
    if (b2 == '\\' && b3 != '\\' && strchr("ntrbf/", b1))
        return -1;
    if (b1 == '"' && b2 == '\\' && b3 != '\\')
        return SBX__PREV_ESCAPED_QUOTE;
    if (b3 == '%' && is_hex(b2) && is_hex(b1))
        return -1;
    if (is_hex(b1) && is_hex(b2) && is_hex(b3) && is_hex(back(s, p, i, 4)) && back(s, p, i, 5) == 'u' &&
        back(s, p, i, 6) == '\\' && back(s, p, i, 7) != '\\')
        return -1;
    if (b1 >= 0x40 && b1 <= 0x7e && b1 != '[') {
        /* CSI: ESC '[' parameters (digits, ';') final byte */
        size_t k = 2;
        while (k < HIST - 7 && (isdigit(back(s, p, i, k)) || back(s, p, i, k) == ';'))
            k++;
        if (back(s, p, i, k) == '[' && esc_before(s, p, i, k + 1))
            return -1;
    }
    return b1;
}

/* The first position from *i the prefilter lets through: true with *i
 * there; false with *i where too few bytes are left for a block (the
 * scalar loop takes the rest). The last block's mask is kept in *base and
 * *mask for the next call. */
static inline bool pre_next(const struct rules *r, const unsigned char *p, size_t n, size_t *i, size_t *base,
                            uint64_t *mask)
{
    size_t at = *i;
    for (;;) {
        if (at >= *base && at - *base < 64) {
            uint64_t m = *mask >> (at - *base);
            if (m) {
                *i = at + (size_t)__builtin_ctzll(m);
                return true;
            }
            at = *base + 64;
        }
        if (at + SBX__TRI_SPAN > n) {
            *i = at;
            return false;
        }
        *base = at;
        *mask = sbx__tri_block(r->tri, p + at, n - at);
    }
}

/* The hot loop: the first position in [i, lim) whose pair (p[i], p[i + 1])
 * some candidate starts with, or lim (lim < the bytes at p). One pair test
 * per byte, four positions per round (independent loads). */
static inline __attribute__((always_inline)) size_t pair_skip(const struct rules *r, const unsigned char *p, size_t i, size_t lim)
{
    while (i + 4 <= lim) {
        unsigned a = (unsigned)p[i] << 8 | p[i + 1], b = (unsigned)p[i + 1] << 8 | p[i + 2],
                 c = (unsigned)p[i + 2] << 8 | p[i + 3], d = (unsigned)p[i + 3] << 8 | p[i + 4];
        /* the first of the four, without a branch per position (bit 0 is
         * set in every value that is not 0) */
        unsigned m = (unsigned)r->pair8[a] | (unsigned)r->pair8[b] << 1 | (unsigned)r->pair8[c] << 2 |
                     (unsigned)r->pair8[d] << 3;
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 4;
    }
    while (i < lim && !r->pair8[(unsigned)p[i] << 8 | p[i + 1]])
        i++;
    return i;
}

/* A match [i + *ms, i + *me) of kind found at i: widen it to the union of
 * every match found at a later byte before its end, so that a second
 * secret starting inside the first leaves nothing behind (shapes of the
 * same kind are skipped: a JWT or an Authorization value inside one ends
 * where it does, and looking again at each would be quadratic). AT_WAIT
 * when a candidate inside cannot tell yet. The prefilter's last block
 * (*base, *mask) is the scan's, reused on both sides. */
static __attribute__((noinline)) enum at_result widen(const sbx_redact_stream *s, const unsigned char *p, size_t n, size_t i, bool more,
                            size_t last_end, unsigned kind, size_t *ms, size_t *me, enum sbx__cont *cont,
                            size_t *base, uint64_t *mask)
{
    const struct rules *r = s->r;
    size_t start = i + *ms, end = i + *me;
    for (size_t j = i + 1; j < end; j++) {
        size_t a = 0, b = 0;
        unsigned k;
        enum sbx__cont c = SBX__CONT_NONE;
        enum at_result res;
        if (r->tri && j + SBX__TRI_SPAN <= n) {
            /* to the prefilter's next hit, or to where the last bytes are
             * left to the pair test */
            pre_next(r, p, n, &j, base, mask);
        } else {
            /* to the next pair something starts with (the last byte, if
             * the span reaches it, is worth_at's) */
            j = pair_skip(r, p, j, end < n - 1 ? end : n - 1);
        }
        if (j >= end)
            break;
        if (!worth_at(r, p, j, n, more))
            continue;
        res = at(s, p, j, n, last_end, more, &a, &b, &k, &c, kind);
        if (res == AT_WAIT)
            return AT_WAIT;
        /* Anything that starts inside joins the span: a match overlapping
         * it or reaching past it, one between i and the span's start (a
         * value used as an Authorization scheme word), and one whose
         * trigger is inside though its redaction starts after (a value
         * ending in "https:/"). The farthest end brings its continuation. */
        if (res == AT_MATCH) {
            if (j + a < start)
                start = j + a;
            if (j + b > end) {
                end = j + b;
                *cont = c;
            }
        }
    }
    *ms = start - i;
    *me = end - i;
    return AT_MATCH;
}

enum { CONT_DONE, CONT_ALL, CONT_MORE };

/* Swallow the rest of a match cut by its window, from p[*i]: CONT_DONE
 * when it has ended (p[*i] is the first byte after it), CONT_ALL when
 * every byte was taken and it goes on, CONT_MORE when p[*i] cannot be
 * judged without the next byte (hold from there). Byte by byte, with its
 * state in the stream, so chunking changes nothing. */
static int cont_take(sbx_redact_stream *s, const unsigned char *p, size_t n, bool more, size_t *i)
{
    for (; *i < n; (*i)++) {
        unsigned char c = p[*i];
        switch (s->cont) {
        case SBX__CONT_JWT:
            if (!(isalnum(c) || c == '_' || c == '-' || c == '.'))
                goto done;
            break;
        case SBX__CONT_LINE:
            if (c == '\n' || c == '\r' || c == '"' || c == '\'')
                goto done;
            if (c == '\\') { /* an escaped line break ends it; another escape is in it */
                if (*i + 1 >= n)
                    return more ? CONT_MORE : (s->cont = SBX__CONT_NONE, CONT_DONE);
                if (p[*i + 1] == 'n' || p[*i + 1] == 'r')
                    goto done;
                (*i)++;
            }
            break;
        case SBX__CONT_PEM: {
            size_t used = 0;
            int res = sbx__pem_cont((const char *)p + *i, n - *i, more, &used);
            *i += used;
            if (res == 2)
                return CONT_MORE;
            if (res == 1)
                return CONT_ALL;
            goto done;
        }
        default:
            return CONT_DONE;
        }
    }
    return CONT_ALL;
done:
    s->cont = SBX__CONT_NONE;
    return CONT_DONE;
}

/* Whether a candidate can start a run of len bytes c followed by the
 * byte next (-1: none yet). */
static inline bool run_fits(const struct rules *r, unsigned char c, size_t len, int next)
{
    if (!((r->run_ok[c] >> (len < 63 ? len : 63)) & 1))
        return false;
    if (next < 0 || r->run_any[c] || !r->run_slot[c] || len >= RUN_NEXT)
        return true;
    return bit_set(r->run_next[r->run_slot[c] - 1][len], (unsigned)next);
}

/* Where to look next after nothing matched at p[i]: i + 1, or in a run of
 * one byte (a separator line) the first position whose run length some
 * candidate can start with (index_runs), when the run's end is known. */
static inline size_t after_miss(const struct rules *r, const unsigned char *p, size_t i, size_t n, bool more)
{
    unsigned char c;
    size_t e = i + 2, j = i + 1;
    if (__builtin_expect(i + 2 >= n || p[i + 1] != p[i] || !r->run_skip[p[i]], 1))
        return i + 1;
    c = p[i];
    while (e < n && p[e] == c)
        e++;
    if (e == n && more)
        return i + 1;
    while (j + 1 < e && !run_fits(r, c, e - j, e < n ? p[e] : -1))
        j++;
    return j;
}

/* Decide what can be decided in p[0..n) (the held bytes, or a chunk fed
 * while nothing was held): the output is appended to s->out, *decided
 * receives how many bytes were decided; the rest must be held. */
static sbx_status scan(sbx_redact_stream *s, const unsigned char *p, size_t n, bool more, size_t *decided)
{
    const struct rules *r = s->r;
    size_t i = 0, emit = 0, last_end = 0, pre_base = SIZE_MAX;
    uint64_t pre_mask = 0;
    if (!p) /* nothing held at the end: no arithmetic on a null pointer */
        p = (const unsigned char *)"";
    if (s->cont != SBX__CONT_NONE) {
        int cr = cont_take(s, p, n, more, &i);
        emit = last_end = i;
        if (cr == CONT_MORE)
            goto out;
    }
    while (i < n) {
        size_t ms = 0, me = 0;
        unsigned kind = 0;
        enum sbx__cont cont = SBX__CONT_NONE;
        enum at_result res;
        if (r->tri && i + SBX__TRI_SPAN <= n && pre_next(r, p, n, &i, &pre_base, &pre_mask))
            goto pair;
        i = pair_skip(r, p, i, n - 1);
    pair:
        /* Here p[i], p[i + 1] is a pair some candidate starts with, or i
         * is the last byte: held if it could start one and more may come. */
        if (!worth_at(r, p, i, n, more)) {
            i++;
            continue;
        }
        res = at(s, p, i, n, last_end, more, &ms, &me, &kind, &cont, UINT_MAX);
        if (res == AT_WAIT)
            break;
        if (res == AT_NONE) {
            i = after_miss(r, p, i, n, more);
            continue;
        }
        if (widen(s, p, n, i, more, last_end, kind, &ms, &me, &cont, &pre_base, &pre_mask) != AT_MATCH)
            break; /* something inside needs more bytes: hold from i */
        if (out_append(s, p + emit, i + ms - emit) != SBX_OK || emit_marker(s, kind) != SBX_OK)
            return SBX_E_NOMEM;
        i = emit = last_end = i + me;
        if (cont != SBX__CONT_NONE) {
            /* Cut by its window: the rest of it goes too. */
            int cr;
            s->cont = cont;
            cr = cont_take(s, p, n, more, &i);
            emit = last_end = i;
            if (cr == CONT_MORE)
                break;
        }
    }
out:
    if (out_append(s, p + emit, i - emit) != SBX_OK)
        return SBX_E_NOMEM;
    if (i > 0) {
        /* Remember the last bytes decided, for the next boundaries. */
        unsigned char h[2 * HIST];
        size_t nh = 0;
        for (size_t k = 0; k < s->nhist; k++)
            h[nh++] = s->hist[k];
        for (size_t k = i > HIST ? i - HIST : 0; k < i; k++)
            h[nh++] = p[k];
        s->nhist = nh < HIST ? nh : HIST;
        memcpy(s->hist, h + nh - s->nhist, s->nhist);
        s->after_match = last_end == i;
    }
    *decided = i;
    return SBX_OK;
}

/* The stream works on char (the buffers' type); the API speaks bytes. */
sbx_status sbx__redact_feed(sbx_redact_stream *s, const char *data, size_t len, const char **out, size_t *out_len)
{
    size_t done;
    unsigned char hist[HIST];
    size_t nhist;
    bool after;
    enum sbx__cont cont;
    if (!s || (!data && len) || !out || !out_len)
        return SBX_E_INVALID_ARG;
    *out = "";
    *out_len = 0;
    if (s->finished)
        return SBX_E_MISUSE;
    memcpy(hist, s->hist, sizeof hist);
    nhist = s->nhist;
    after = s->after_match;
    cont = s->cont;
    sbx__buf_clear(&s->out);
    if (s->pend.len == 0) {
        /* Nothing held: scan the chunk where it is, hold only its tail.
         * Room for the tail first, so nothing can fail after the scan. */
        if (sbx__buf_reserve(&s->pend, len) != SBX_OK)
            return SBX_E_NOMEM;
        if (scan(s, (const unsigned char *)data, len, true, &done) != SBX_OK)
            goto oom;
        sbx__buf_append(&s->pend, data + done, len - done); /* reserved: cannot fail */
    } else {
        size_t old = s->pend.len, bridge = len < BRIDGE ? len : BRIDGE, more_done = 0;
        /* Held bytes wait for a candidate that needs more input: deciding
         * again only once many held bytes have doubled keeps a stream fed
         * one byte at a time linear (the answer depends on the bytes, not
         * on when it is given). */
        if (old + len < s->recheck) {
            if (sbx__buf_append(&s->pend, data, len) != SBX_OK)
                return SBX_E_NOMEM;
            return SBX_OK;
        }
        /* Room for everything first: nothing can fail after a scan but
         * another scan, which undoes the call. */
        if (sbx__buf_reserve(&s->pend, old + len) != SBX_OK)
            return SBX_E_NOMEM;
        /* The held bytes and the chunk's start: usually enough to decide
         * what was held, and the rest of the chunk is then scanned where it
         * is instead of being copied behind them. */
        sbx__buf_append(&s->pend, data, bridge);
        if (scan(s, (const unsigned char *)s->pend.data, s->pend.len, true, &done) != SBX_OK)
            goto undo;
        if (done >= old && bridge < len) {
            size_t off = done - old;
            if (scan(s, (const unsigned char *)data + off, len - off, true, &more_done) != SBX_OK)
                goto undo;
            sbx__wipe(s->pend.data, s->pend.len);
            sbx__buf_clear(&s->pend);
            sbx__buf_append(&s->pend, data + off + more_done, len - off - more_done); /* reserved */
        } else {
            sbx__buf_append(&s->pend, data + bridge, len - bridge); /* reserved */
            if (bridge < len &&
                scan(s, (const unsigned char *)s->pend.data + done, s->pend.len - done, true, &more_done) != SBX_OK)
                goto undo;
            sbx__wipe(s->pend.data, done + more_done);
            sbx__buf_consume(&s->pend, done + more_done);
        }
        goto held;
    undo:
        sbx__wipe(s->pend.data + old, s->pend.len - old);
        sbx__buf_truncate(&s->pend, old);
        goto oom;
    }
held:
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
    s->cont = cont;
    return SBX_E_NOMEM;
}

sbx_status sbx_redact_stream_feed(sbx_redact_stream *s, const uint8_t *data, size_t len, const uint8_t **out,
                                  size_t *out_len)
{
    return sbx__redact_feed(s, (const char *)data, len, (const char **)out, out_len);
}

sbx_status sbx__redact_finish(sbx_redact_stream *s, const char **out, size_t *out_len)
{
    sbx_status st;
    size_t done;
    if (!s || !out || !out_len)
        return SBX_E_INVALID_ARG;
    *out = "";
    *out_len = 0;
    if (s->finished)
        return SBX_E_MISUSE;
    sbx__buf_clear(&s->out);
    if ((st = scan(s, (const unsigned char *)s->pend.data, s->pend.len, false, &done)) != SBX_OK)
        return st;
    sbx__wipe(s->pend.data, s->pend.len);
    sbx__buf_clear(&s->pend);
    s->finished = true;
    *out = s->out.data ? s->out.data : "";
    *out_len = s->out.len;
    return SBX_OK;
}

sbx_status sbx_redact_stream_finish(sbx_redact_stream *s, const uint8_t **out, size_t *out_len)
{
    return sbx__redact_finish(s, (const char **)out, out_len);
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

sbx_status sbx_redact_stream_counts_to_json(const sbx_redact_stream *s, char **out)
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

sbx_status sbx_redactor_redact(const sbx_redactor *r, const uint8_t *data, size_t len, uint8_t **out,
                               size_t *out_len)
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
    st = sbx__redact_feed(s, data ? (const char *)data : "", len, &o, &n);
    if (st == SBX_OK)
        st = sbx__buf_append(&b, o, n);
    if (st == SBX_OK)
        st = sbx__redact_finish(s, &o, &n);
    if (st == SBX_OK)
        st = sbx__buf_append(&b, o, n);
    sbx_redact_stream_free(s);
    if (st == SBX_OK && !(*out = (uint8_t *)sbx__buf_detach(&b, out_len)))
        st = SBX_E_NOMEM;
    if (st != SBX_OK)
        sbx__buf_wipe_free(&b);
    return st; /* the buffer has no limit: only SBX_E_NOMEM can fail */
}
