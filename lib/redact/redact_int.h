/* SPDX-License-Identifier: MIT */
/* The redactor's shape rules (redact_shapes.c), used by its streaming
 * engine (redact.c): credentials recognised by their form rather than by a
 * registered value. */
#ifndef SBX_REDACT_INT_H
#define SBX_REDACT_INT_H

/* The lengths of a registered secret (sbx_redactor_add_secret()): shorter
 * ones would redact ordinary text; the job layer refuses what the
 * redactor would, so no secret is ever accepted and then not redacted. */
#define SBX__SECRET_MIN 8
#define SBX__SECRET_MAX 4096

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a shape's matcher says about the text at a trigger. */
enum sbx__shape_result {
    SBX__SHAPE_NO = 0,   /* not a credential here */
    SBX__SHAPE_YES = 1,  /* a credential: redact [*start, *end) */
    SBX__SHAPE_MORE = 2, /* cannot tell yet: needs bytes past len (only when more is true) */
    SBX__SHAPE_CUT = 3,  /* YES, and the credential goes on past *end, where the window cut it:
                          * the stream swallows the rest (the shape's cont) */
};

/* What a match cut by its window goes on to swallow in the stream: the
 * rest of a JWT, of a PEM body (through its END line), of a header line. */
enum sbx__cont { SBX__CONT_NONE = 0, SBX__CONT_JWT, SBX__CONT_PEM, SBX__CONT_LINE };

/* The prev a matcher gets for an escaped quote (\" in JSON) before the
 * trigger: not a byte (above 255), so word classes see no word byte. */
#define SBX__PREV_ESCAPED_QUOTE 0x122

/*
 * A shape rule. The engine finds `trigger` (a literal, compared ASCII
 * case-insensitively when icase) and calls match() with:
 *   buf, len  the text from the first byte of the trigger on (len >=
 *             strlen(trigger)); never more than `window` bytes;
 *   prev      the byte just before the trigger, or -1 at the start of the
 *             stream (for word boundaries);
 *   more      whether more input may follow buf (false at the end of the
 *             stream or when len == window).
 * It returns SBX__SHAPE_YES with the span to replace, relative to buf
 * (start may be past the trigger: `Authorization: Bearer ` keeps its name
 * and scheme, a URL keeps its scheme and host), SBX__SHAPE_NO, or
 * SBX__SHAPE_MORE when the answer depends on bytes not yet seen. The answer
 * must depend only on the bytes, never on where a chunk ended: given more
 * bytes a matcher must not change a YES or NO it could already give.
 */
/* A token shape as data: its trigger, then min..max bytes of the class
 * body, as a maximal run of the class run on both sides (a run byte just
 * before the trigger or right after the body means an identifier going
 * on, not a token). With sep, the body is two parts: min1..max1 bytes of
 * body, the byte sep, then min..max bytes of body (SendGrid's "SG.a.b"). */
typedef struct sbx__token {
    uint16_t min, max;   /* 0, 0: not a token row (match() decides) */
    uint8_t body, run;   /* sbx__kclass bits */
    char sep;
    uint8_t min1, max1;
} sbx__token;

typedef struct sbx__shape {
    const char *kind;    /* short lowercase label: "github", "aws", "jwt"... */
    const char *trigger; /* literal that starts a candidate */
    size_t tlen;         /* its length */
    bool icase;
    size_t window;       /* the most bytes match() ever needs, trigger included */
    enum sbx__shape_result (*match)(const char *buf, size_t len, int prev, bool more, size_t *start, size_t *end);
    enum sbx__cont cont; /* when a YES ends at the window's end (len == window) */
    /* A quick reject, so that a near miss costs no call: the bytes
     * [need_from, need_from + need_n) that are there must all be in the
     * classes need (sbx__kclass bits), or match() would say NO. */
    uint8_t need_from, need_n;
    uint8_t need;
    sbx__token token;    /* a token row: match is NULL, the row's data decides */
} sbx__shape;

/* A shape's answer at buf (its row's token rule, or its match()). */
enum sbx__shape_result sbx__shape_match(const sbx__shape *sh, const char *buf, size_t len, int prev, bool more,
                                        size_t *start, size_t *end);

/* Character classes of ASCII bytes (bit masks, SBX__K_*). */
extern const uint8_t sbx__kclass[128];

/* The stream's continuation through a PEM body cut by the window, from
 * buf[0], the start of a line: whole lines of base64 are taken, then the END
 * line. *used receives the bytes taken. Returns 0: the body ended there;
 * 1: everything given was taken and the body may go on; 2: the answer needs
 * more bytes (hold from *used). */
int sbx__pem_cont(const char *buf, size_t len, bool more, size_t *used);

/* The built-in shapes, and how many. */
extern const sbx__shape sbx__shapes[];
extern const size_t sbx__nshapes;

/* ---- the three-byte prefilter (redact_simd.c) ---- */

#include <stdatomic.h>

#include <sbxrun/common.h>

/* One way a candidate can begin: the bytes each of its first three
 * positions can hold (256-bit sets); for a token shape with a quick
 * reject (need not 0), its positions 0, 1 and 3. */
typedef struct sbx__tri_alt {
    uint64_t b[3][4];
    /* A token shape's quick reject, when need is not 0: the bytes
     * [need_from, need_from + need_n) must all have a class of need
     * (sbx__kclass), or the shape cannot match there. */
    uint8_t need_from, need_n, need;
} sbx__tri_alt;
typedef struct sbx__tri sbx__tri;
/* The bytes sbx__tri_block reads: 64 positions and the three after the last;
 * given SBX__TRI_NEED or more (the needed bytes of a token starting at any
 * of the 64), it also applies the shapes' quick rejects. */
#define SBX__TRI_SPAN 70
#define SBX__TRI_NEED 128
/* Whether this CPU runs the prefilter (x86-64 with AVX-512 VBMI). */
bool sbx__tri_supported(void);
/* The prefilter for these alternatives in *out, or NULL in *out when this
 * CPU lacks it or it would pass most positions. */
sbx_status sbx__tri_build(const sbx__tri_alt *alts, size_t n, sbx__tri **out);
void sbx__tri_free(sbx__tri *t);
/* Whether this CPU runs the AVX2 prefilter (x86-64 with AVX2). */
bool sbx__tri_avx2_supported(void);
/* The bytes the AVX2 prefilter checks of a trigger, and the sets of
 * bytes each of them can be (either case of an icase letter; every byte
 * past a short trigger's end). */
#define SBX__AVX2_BYTES 4
typedef struct sbx__trig_sets {
    uint64_t b[SBX__AVX2_BYTES][4];
    /* the shape's quick reject (need_n 0: none), as in sbx__tri_alt */
    uint8_t need_from, need_n, need;
} sbx__trig_sets;
/* The literals' four-byte pieces, as both filters see them: the bytes at p
 * as a little-endian word, and its 16-bit hash (multiplicative, so that the
 * AVX2 filter hashes eight at once with the same constant). */
#define SBX__PIECE_MUL 0x9E3779B1u
static inline uint32_t sbx__piece(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint32_t sbx__piece_hash(uint32_t w)
{
    return (w * SBX__PIECE_MUL) >> 16;
}
/* What the AVX2 prefilter looks for: alts, the shapes' triggers (n of
 * them); intro, the bytes an escape or a line break in a literal can start
 * with (256 entries); gram, the pieces (sbx__piece) of every literal at its
 * offsets 0 to 3 (each literal seven bytes or more); wrap, those of every
 * form a line break may split (base64) at its offsets 1 to 6, or wrap_any
 * when a form is too short for them. */
typedef struct sbx__avx2_input {
    const sbx__trig_sets *alts;
    size_t n;
    const bool *intro;
    const uint32_t *gram;
    size_t ngrams;
    const uint32_t *wrap;
    size_t nwraps;
    bool wrap_any;
    /* the bytes at the literals' offsets 0 to 5 (256 entries) */
    const bool *litbyte;
    /* follow[b]: the bytes that may come next after the intro byte b in
     * an escape (bit n of follow[b][n >> 6]; 256 rows) */
    const uint64_t (*follow)[4];
} sbx__avx2_input;
/* The AVX2 prefilter for in, in *out (NULL where the CPU lacks AVX2). */
sbx_status sbx__tri_build_avx2(const sbx__avx2_input *in, sbx__tri **out);
/* Which prefilter t is: SBX__PF_TRI, SBX__PF_AVX2 (SBX__PF_NONE for NULL). */
int sbx__tri_kind(const sbx__tri *t);
/* Bit k: something may start at p[k] (p[0 .. avail) readable, avail at
 * least SBX__TRI_SPAN). */
uint64_t sbx__tri_block(const sbx__tri *t, const unsigned char *p, size_t avail);

/* Which scan rules built from now on use (for tests and benchmarks):
 * SBX__PF_AUTO the best this CPU has (the three-byte prefilter, else the
 * AVX2 one), SBX__PF_NONE the pair filter alone, SBX__PF_TRI the
 * three-byte prefilter in front of it, SBX__PF_AVX2 the AVX2 one (none
 * where the CPU lacks it). */
enum { SBX__PF_AUTO = 0, SBX__PF_NONE, SBX__PF_TRI, SBX__PF_AVX2 };
extern atomic_int sbx__prefilter;
/* How many rule sets have been built, for the tests: values added one by
 * one are built once, at first use. */
extern atomic_ulong sbx__redact_builds;

/* ---- for other modules (the transcript) ---- */

#include <stdint.h>

#include <sbxrun/redact.h>

/* A redactor's compiled rules, reference counted: a holder keeps them after
 * the redactor is freed. */
typedef struct rules sbx__redact_rules;
/* A new reference to r's current rules, built first if r changed since
 * they were; NULL when that build ran out of memory. */
sbx__redact_rules *sbx__redactor_rules(const sbx_redactor *r);
void sbx__redact_rules_unref(sbx__redact_rules *rules);
/* Another reference to rules. */
void sbx__redact_rules_ref(sbx__redact_rules *rules);
/* A stream on these rules (NULL: out of memory). */
sbx_redact_stream *sbx__redact_stream_with(sbx__redact_rules *rules);
/* Which prefilter r's rules scan behind: SBX__PF_NONE, SBX__PF_TRI or
 * SBX__PF_AVX2. */
int sbx__redact_prefilter(const sbx_redactor *r);
/* A stream's counts, by kind: how many kinds there are, and each. */
size_t sbx__redact_stream_nkinds(const sbx_redact_stream *s);
const char *sbx__redact_stream_kind(const sbx_redact_stream *s, size_t k, uint64_t *count);

/* sbx_redact_stream_feed() and _finish() on char buffers, for the modules
 * that keep text in sbx__buf (the transcript). */
sbx_status sbx__redact_feed(sbx_redact_stream *s, const char *data, size_t len, const char **out, size_t *out_len);
sbx_status sbx__redact_finish(sbx_redact_stream *s, const char **out, size_t *out_len);

#endif /* SBX_REDACT_INT_H */
