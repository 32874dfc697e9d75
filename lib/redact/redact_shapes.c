/* SPDX-License-Identifier: MIT */
/* redact_shapes: the credential shapes the redactor recognises by their form alone. */
#include "redact/redact_int.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/*
 * Every matcher reads its bytes in order through peek(), which answers
 * BYTE_NEED when a byte is not there yet but may come: the matcher then returns
 * MORE. A matcher therefore decides only on bytes it has read, so feeding
 * the same text in any chunking gives the same answer. When more is false
 * the text ends at len (the stream ended or the engine's window is full)
 * and peek() answers BYTE_END there, which the matchers treat as a boundary.
 *
 * The token shapes require the token to be a maximal run of its "run" set
 * (its body charset plus the word bytes [A-Za-z0-9_]) on both sides: a
 * byte of that set just before the trigger or just after the body means the
 * bytes are part of a longer identifier or of encoded data, not a token.
 * So a 37-character ghp_ run is NO rather than a partial redaction.
 */

#define BYTE_END (-1)  /* the text ends here */
#define BYTE_NEED (-2) /* the byte may exist but is not in buf yet */

/* Windows: trigger, longest body and the one byte that ends it. */
#define GITLAB_PAYLOAD_MAX 300u
#define GITLAB_WINDOW (6u + GITLAB_PAYLOAD_MAX + 1u + 3u + 9u + 1u)
#define SLACK_MAX 250u
#define SLACK_WINDOW (5u + SLACK_MAX + 1u)
#define SLACK_HOOK_WINDOW (16u + 10u + 5u * 65u + 1u)
#define OPENAI_WINDOW (11u + 200u + 1u) /* sk-svcacct- is the longest prefix */
/* Windows of the unbounded shapes: a cap on what the engine must hold. */
#define JWT_WINDOW 8192u
#define PEM_WINDOW 65536u
#define URL_WINDOW 16384u
#define AUTH_WINDOW 16384u
#define AWS_PAIR_WINDOW (4u + 16u + 1u + 40u + 1u)
#define CLI_WINDOW 4096u
#define ASSIGN_WINDOW (21u + 8u + 1024u + 2u) /* the longest key, separators, the value and its end */

typedef enum sbx__shape_result shape_result;

/* ASCII classes by hand (<ctype.h> would follow the locale), as bit masks
 * over one table so the matchers' loops need no calls. */
enum { /* the classes of sbx__kclass */
    K_DIGIT = 1, K_LOWER = 2, K_UPPER = 4, K_UNDER = 8, K_DASH = 16,
    K_B32 = 32, /* A-Z 2-7 */
    K_L36 = 64, /* 0-9 a-z */
    K_HEX = 128, /* 0-9 a-f A-F */
};
#define K_ALPHA (K_LOWER | K_UPPER)
#define K_ALNUM (K_DIGIT | K_ALPHA)
#define K_WORD (K_ALNUM | K_UNDER)
#define K_B64URL (K_WORD | K_DASH)
#define K_SLACK (K_ALNUM | K_DASH)
const uint8_t sbx__kclass[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0,
    193, 193, 225, 225, 225, 225, 225, 225, 193, 193, 0, 0, 0, 0, 0, 0,
    0, 164, 164, 164, 164, 164, 164, 36, 36, 36, 36, 36, 36, 36, 36, 36,
    36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 0, 0, 0, 0, 8,
    0, 194, 194, 194, 194, 194, 194, 66, 66, 66, 66, 66, 66, 66, 66, 66,
    66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 0, 0, 0, 0, 0,
};

static inline bool in(int c, unsigned mask)
{
    return c >= 0 && c < 128 && (sbx__kclass[c] & mask);
}
static bool is_digit(int c) { return in(c, K_DIGIT); }
static bool is_alpha(int c) { return in(c, K_ALPHA); }
static bool is_alnum(int c) { return in(c, K_ALNUM); }
static bool is_blank(int c) { return c == ' ' || c == '\t'; }

/* An ASCII letter in lower case, any other byte as it is. */
static unsigned char fold(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) : c; }

static int peek(const char *buf, size_t len, size_t i, bool more)
{
    if (i < len)
        return (unsigned char)buf[i];
    return more ? BYTE_NEED : BYTE_END;
}

/* Whether prev may sit before a token whose run set is run. */
static bool prev_ok(int prev, unsigned run)
{
    return prev < 0 || !in(prev, run);
}

/*
 * Advance *i over at most max + 1 bytes of cls, leaving in *c the byte that
 * stopped it (BYTE_END at the end of the text). Stopping after max + 1 lets a
 * caller say NO to an overlong run without waiting for its end. False when
 * the next byte is still to come.
 */
static inline bool skip_class(const char *buf, size_t len, size_t *i, bool more, unsigned cls, size_t max,
                              int *c)
{
    size_t stop = *i + max + 1, lim = stop < len ? stop : len, j = *i;

    while (j < lim && (unsigned char)buf[j] < 128 && (sbx__kclass[(unsigned char)buf[j]] & cls))
        j++;
    *i = j;
    if (j == stop) { /* overlong: the last byte taken is in the class */
        *c = (unsigned char)buf[j - 1];
        return true;
    }
    if (j < len) {
        *c = (unsigned char)buf[j];
        return true;
    }
    *c = more ? BYTE_NEED : BYTE_END;
    return !more;
}

static bool all_class(const char *buf, size_t from, size_t to, unsigned cls)
{
    for (size_t i = from; i < to; i++)
        if (!in((unsigned char)buf[i], cls))
            return false;
    return true;
}

enum prefix_state { PFX_NO, PFX_PARTIAL, PFX_YES };

/* Whether lit is at buf[at]; PARTIAL when buf ends inside a match. */
static enum prefix_state has_prefix(const char *buf, size_t len, size_t at, const char *lit)
{
    for (size_t k = 0; lit[k]; k++) {
        if (at + k >= len)
            return PFX_PARTIAL;
        if (buf[at + k] != lit[k])
            return PFX_NO;
    }
    return PFX_YES;
}

/* has_prefix() as a shape's answer: YES, NO, or MORE when the bytes that
 * would tell are still to come. */
static shape_result expect_prefix(const char *buf, size_t len, size_t at, const char *lit, bool more)
{
    enum prefix_state st = has_prefix(buf, len, at, lit);
    return st == PFX_YES ? SBX__SHAPE_YES : st == PFX_PARTIAL && more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
}

static shape_result yes(size_t s, size_t e, size_t *start, size_t *end)
{
    *start = s;
    *end = e;
    return SBX__SHAPE_YES;
}

/* YES for [s, e), which the window cut: the stream takes the rest. */
static shape_result cut(size_t s, size_t e, size_t *start, size_t *end)
{
    yes(s, e, start, end);
    return SBX__SHAPE_CUT;
}

/* A trigger of prefix bytes, then min..max bytes of body, as a maximal run of run. */
struct token_rule {
    size_t prefix;
    size_t min, max;
    unsigned body, run; /* K_* masks */
};

static shape_result match_token(const struct token_rule *r, const char *buf, size_t len, int prev,
                                bool more, size_t *start, size_t *end)
{
    size_t i = r->prefix;
    int c;

    if (!prev_ok(prev, r->run))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, r->body, r->max, &c))
        return SBX__SHAPE_MORE;
    /* An overlong body, or a run byte outside the body charset right after
     * it (an identifier going on), means this is not the token. */
    if (i - r->prefix > r->max || i - r->prefix < r->min || in(c, r->run))
        return SBX__SHAPE_NO;
    return yes(0, i, start, end);
}

/* A token row (sbx__token): one part, or two around its separator. */
static shape_result match_token_row(const sbx__shape *sh, const char *buf, size_t len, int prev, bool more,
                                    size_t *start, size_t *end)
{
    const sbx__token *t = &sh->token;
    size_t prefix = sh->need_from, i = prefix; /* a row's need starts after its trigger */
    int c;

    if (t->sep) {
        if (!prev_ok(prev, t->run))
            return SBX__SHAPE_NO;
        if (!skip_class(buf, len, &i, more, t->body, t->max1, &c))
            return SBX__SHAPE_MORE;
        if (i - prefix < t->min1 || i - prefix > t->max1 || c != t->sep)
            return SBX__SHAPE_NO;
        prefix = i + 1;
        prev = -1; /* the separator: the second part's boundary is the first's */
    }
    {
        const struct token_rule r = {prefix, t->min, t->max, t->body, t->run};
        return match_token(&r, buf, len, prev, more, start, end);
    }
}

/*
 * OpenAI keys: sk-proj-, sk-svcacct-, sk-admin- then 20..200 base64url
 * bytes, or the legacy sk- then 48 alphanumerics. sk-ant- is Anthropic's:
 * NO here lets that shape's YES stand alone at the position.
 */
static shape_result match_openai(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    static const char *const named[] = {"sk-proj-", "sk-svcacct-", "sk-admin-"};
    const struct token_rule legacy = {3, 48, 48, K_ALNUM, K_B64URL};
    bool partial = false;

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    /* Only the byte after "sk-" can start a named form ('a' also
     * Anthropic's sk-ant-, which is not this shape). */
    if (len > 3 && !memchr("psa", buf[3], 3))
        return match_token(&legacy, buf, len, prev, more, start, end);
    switch (has_prefix(buf, len, 0, "sk-ant-")) {
    case PFX_YES:
        return SBX__SHAPE_NO;
    case PFX_PARTIAL:
        partial = true;
        break;
    case PFX_NO:
        break;
    }
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        enum prefix_state p = has_prefix(buf, len, 0, named[k]);
        if (p == PFX_YES) {
            const struct token_rule r = {strlen(named[k]), 20, 200, K_B64URL, K_B64URL};
            return match_token(&r, buf, len, prev, more, start, end);
        }
        partial = partial || p == PFX_PARTIAL;
    }
    /* Which form this is depends on bytes still to come. */
    if (partial && more)
        return SBX__SHAPE_MORE;
    return match_token(&legacy, buf, len, prev, more, start, end);
}

/*
 * GitLab tokens with a routable form (glpat-, glrt-, glrtr-, glwt-): the
 * legacy prefix + 20 base64url bytes, or prefix + 27..300 base64url payload
 * + '.' + [0-9a-z]{9} (2-byte length and 7-byte CRC), optionally with a
 * 2-byte version group: '.' [0-9a-z]{2} '.' [0-9a-z]{9}. A '.' after either
 * form is only punctuation. The prefix is the trigger, through its '-'.
 */
static shape_result match_gitlab(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const char *dash = memchr(buf, '-', len < 8 ? len : 8);
    size_t p = dash ? (size_t)(dash - buf) + 1 : 6, i = p, n, j, k;
    int c;

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, K_B64URL, GITLAB_PAYLOAD_MAX, &c))
        return SBX__SHAPE_MORE;
    n = i - p;
    if (n == 20)
        return yes(0, i, start, end);
    if (n < 27 || n > GITLAB_PAYLOAD_MAX || c != '.')
        return SBX__SHAPE_NO;
    j = k = i + 1;
    if (!skip_class(buf, len, &k, more, K_B64URL, 9, &c))
        return SBX__SHAPE_MORE;
    if (k - j == 9 && all_class(buf, j, k, K_L36))
        return yes(0, k, start, end);
    if (k - j != 2 || c != '.' || !all_class(buf, j, k, K_L36))
        return SBX__SHAPE_NO;
    j = k = k + 1;
    if (!skip_class(buf, len, &k, more, K_B64URL, 9, &c))
        return SBX__SHAPE_MORE;
    if (k - j == 9 && all_class(buf, j, k, K_L36))
        return yes(0, k, start, end);
    return SBX__SHAPE_NO;
}


/*
 * Slack tokens: xox[abposre]- (or the app-level xapp-) then 10..250 bytes
 * of [A-Za-z0-9-] in '-'-separated groups: at least two groups, none empty,
 * the first numeric (the team or app id every Slack token starts with, the
 * version of an app-level one), and a letter somewhere. The numeric first
 * group and the letter keep "xoxo-gossip-girl" and "xoxo-2024-05-17" out.
 */
static shape_result match_slack(const char *buf, size_t len, int prev, bool more,
                                size_t *start, size_t *end)
{
    size_t i, n = 0, dashes = 0;
    bool letter = false;
    int c, last = '-';

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    if (buf[1] == 'a') /* xapp-: the trigger is the whole prefix */
        goto body;
    c = peek(buf, len, 3, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c == BYTE_END || !memchr("abposre", c, 7))
        return SBX__SHAPE_NO;
    c = peek(buf, len, 4, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != '-')
        return SBX__SHAPE_NO;
body:
    for (i = 5;; i++) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || !in(c, K_SLACK))
            break;
        if (++n > SLACK_MAX || (c == '-' && last == '-') || (is_alpha(c) && dashes == 0))
            return SBX__SHAPE_NO;
        dashes += c == '-';
        letter = letter || is_alpha(c);
        last = c;
    }
    if (c == '_' || n < 10 || dashes == 0 || last == '-' || !letter)
        return SBX__SHAPE_NO;
    return yes(0, i, start, end);
}

/*
 * Slack webhook URLs: hooks.slack.com/services/T.../B.../<secret> (also
 * workflows/ and triggers/, with more groups). The host and the kind are
 * public; the groups after them are the credential: 3..5 alphanumeric
 * groups separated by '/', the first starting with 'T' (the team), the last
 * of 16 or more bytes (the secret).
 */
static shape_result match_slack_webhook(const char *buf, size_t len, int prev, bool more,
                                        size_t *start, size_t *end)
{
    static const char *const kinds[] = {"services/", "workflows/", "triggers/"};
    size_t at = 16, from = 0, i, groups = 0, last = 0; /* after "hooks.slack.com/" */
    bool partial = false;
    int c = 0;

    (void)prev;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !from; k++) {
        enum prefix_state st = has_prefix(buf, len, at, kinds[k]);
        if (st == PFX_YES)
            from = at + strlen(kinds[k]);
        partial = partial || st == PFX_PARTIAL;
    }
    if (!from)
        return partial && more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
    c = peek(buf, len, from, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != 'T')
        return SBX__SHAPE_NO;
    for (i = from;;) {
        size_t g = i;
        if (!skip_class(buf, len, &i, more, K_ALNUM, 64, &c))
            return SBX__SHAPE_MORE;
        if (i == g || i - g > 64)
            return SBX__SHAPE_NO;
        groups++;
        last = i - g;
        if (c != '/' || groups == 5)
            break;
        i++;
    }
    if (groups < 3 || last < 16 || c == '_' || c == '-')
        return SBX__SHAPE_NO;
    return yes(from, i, start, end);
}

/*
 * JWTs: eyJ (base64 of '{"') + 8 or more base64url, '.', the same for the
 * payload, '.', and a signature of zero or more base64url (unsigned tokens
 * end in the dot). A payload or signature cut by the window is still
 * redacted, to the window's end: the header and payload were seen.
 */
static shape_result match_jwt(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t i = 3, payload;
    int c;
    shape_result r;

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (c != '.' || i < 3 + 8)
        return SBX__SHAPE_NO;
    payload = ++i;
    if ((r = expect_prefix(buf, len, payload, "eyJ", more)) != SBX__SHAPE_YES)
        return r;
    i += 3;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (i < payload + 3 + 8)
        return SBX__SHAPE_NO;
    if (c == BYTE_END && len >= JWT_WINDOW)
        return cut(0, len, start, end);
    if (c != '.')
        return SBX__SHAPE_NO;
    i++;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (c == BYTE_END && len >= JWT_WINDOW)
        return cut(0, len, start, end);
    return yes(0, i, start, end);
}

/* A PEM label at buf[at] ("RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"...)
 * and its closing "-----": *n is the length of both. Only private-key
 * labels: certificates and public keys are not secrets. */
static shape_result pem_label(const char *buf, size_t len, size_t at, bool more, size_t *n)
{
    size_t i = at;
    shape_result r;
    while (i < len && i - at <= 64 && (in((unsigned char)buf[i], K_DIGIT | K_UPPER) || buf[i] == ' '))
        i++;
    if (i >= len)
        return more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
    if (i - at > 64)
        return SBX__SHAPE_NO;
    if ((r = expect_prefix(buf, len, i, "-----", more)) != SBX__SHAPE_YES)
        return r;
    /* "... PRIVATE KEY" or "... PRIVATE KEY BLOCK" (PGP) */
    if (!((i - at >= 11 && memcmp(buf + i - 11, "PRIVATE KEY", 11) == 0) ||
          (i - at >= 17 && memcmp(buf + i - 17, "PRIVATE KEY BLOCK", 17) == 0)))
        return SBX__SHAPE_NO;
    *n = i + 5 - at;
    return SBX__SHAPE_YES;
}

static bool is_b64(int c)
{
    return is_alnum(c) || c == '+' || c == '/' || c == '=';
}

/* A line break at buf[i]: "\n" or "\r\n", raw or escaped by any number
 * of backslashes (JSON, JSON inside JSON). Its length, 0 when there is
 * none, -1 when more bytes are needed to tell. */
static int pem_break(const char *buf, size_t len, size_t i, bool more)
{
    size_t j = i;
    int c = peek(buf, len, j, more);
    if (c == '\n')
        return 1;
    if (c == '\r') {
        c = peek(buf, len, j + 1, more);
        return c == BYTE_NEED ? -1 : c == '\n' ? 2 : 1;
    }
    while (c == '\\')
        c = peek(buf, len, ++j, more);
    if (j == i)
        return 0;
    if (c == BYTE_NEED)
        return -1;
    if (c == 'n')
        return (int)(j + 1 - i);
    if (c == 'r') { /* an escaped CR, maybe with its escaped LF */
        int k = pem_break(buf, len, j + 1, more);
        return k < 0 ? -1 : (int)(j + 1 - i) + (k > 1 ? k : 0);
    }
    return 0;
}

/* An END line at buf[i]: *n its length through the closing dashes. */
static shape_result pem_end(const char *buf, size_t len, size_t i, bool more, size_t *n)
{
    size_t k;
    shape_result r;
    if ((r = expect_prefix(buf, len, i, "-----END ", more)) != SBX__SHAPE_YES ||
        (r = pem_label(buf, len, i + 9, more, &k)) != SBX__SHAPE_YES)
        return r;
    *n = 9 + k;
    return SBX__SHAPE_YES;
}

int sbx__pem_cont(const char *buf, size_t len, bool more, size_t *used)
{
    size_t i = 0;
    for (;;) {
        size_t j = i, n;
        int brk;
        shape_result r = pem_end(buf, len, i, more, &n);
        if (r == SBX__SHAPE_YES) {
            *used = i + n;
            return 0;
        }
        if (r == SBX__SHAPE_MORE) {
            *used = i;
            return 2;
        }
        while (j < len && is_b64((unsigned char)buf[j]))
            j++;
        if (j == len) {
            if (!more) { /* the stream ends inside the body */
                *used = j;
                return 0;
            }
            if (j - i > 4096) { /* a long run: take it, the body goes on */
                *used = j;
                return 1;
            }
            *used = i;
            return j == i ? 1 : 2;
        }
        brk = pem_break(buf, len, j, more);
        if (brk < 0) {
            *used = i;
            return 2;
        }
        if (brk == 0 || j == i) { /* a line that is not base64, or an empty one */
            *used = i;
            return 0;
        }
        i = j + (size_t)brk;
    }
}

/*
 * PEM private keys: "-----BEGIN <label>-----", a body, and the first
 * "-----END <label>-----" (any private-key label on either: a mismatched
 * pair is still a key). Lines may be real or escaped ("\n" in JSON, "\\n"
 * in JSON inside JSON). Header lines ("Proc-Type: 4,ENCRYPTED", an armor's
 * "Version: GnuPG v1 (GNU/Linux)") may come first, then the body: lines
 * of base64. A key flattened into one line (spaces for line breaks) is a
 * block whose END is on the BEGIN line.
 *
 * There must be key material (a run of 16 base64 characters): a BEGIN and
 * an END line quoted in prose are not a key. Without an END line the key
 * was cut or truncated: the redaction ends after the last line of base64
 * (the line breaking off, when it is base64 up to where it stops), and a
 * line that is not base64 (prose, a log line) ends the key there. A body
 * longer than the window is redacted to the start of the window's last
 * line, and the stream goes on through the rest (sbx__pem_cont).
 */
static shape_result match_pem(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t n = 0, i, run = 0, maxrun = 0, keep = 0, line_start, first;
    bool headers = true, pure = true, empty = true, colon = false, spaced_ok = true;
    shape_result r;
    int c;

    (void)prev;
    r = pem_label(buf, len, 11, more, &n);
    if (r != SBX__SHAPE_YES)
        return r;
    first = line_start = i = 11 + n;
    for (;;) {
        int brk;
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END)
            break;
        if (c == '-') {
            r = pem_end(buf, len, i, more, &n);
            if (r == SBX__SHAPE_MORE)
                return r;
            if (r == SBX__SHAPE_YES) {
                if (maxrun < 16) /* BEGIN and END lines quoted in prose */
                    return SBX__SHAPE_NO;
                return yes(0, i + n, start, end);
            }
        }
        brk = pem_break(buf, len, i, more);
        if (brk < 0)
            return SBX__SHAPE_MORE;
        if (brk > 0) {
            if (!empty) {
                if (headers && colon && !pure)
                    ; /* a header line */
                else if (pure)
                    headers = false, keep = i;
                else if (line_start == first && spaced_ok && maxrun >= 16)
                    headers = false, keep = i; /* the BEGIN line holding a flattened body */
                else
                    goto cut;
            } else if (!headers || keep) {
                goto cut; /* a blank line after the body */
            } else if (line_start != first) {
                headers = false; /* the blank line closing the headers */
            }
            i += (size_t)brk;
            line_start = i;
            pure = empty = true;
            colon = false;
            run = 0;
            continue;
        }
        if (empty && is_blank(c) && line_start != first) {
            i++; /* indentation (a key in a YAML block) */
            continue;
        }
        empty = false;
        if (is_b64(c)) {
            if (++run > maxrun)
                maxrun = run;
            i++;
            continue;
        }
        run = 0;
        pure = false;
        if (c == ':')
            colon = true;
        if (line_start == first && c != ' ')
            spaced_ok = false;
        /* Header lines may hold any printable character; body lines only
         * base64 (and the BEGIN line, spaces). */
        if (c == ' ' || c == '\t' || (headers && c >= 0x20 && c < 0x7f && c != '"' && c != '\'')) {
            i++;
            continue;
        }
        break;
    }
    if (c == BYTE_END && len >= PEM_WINDOW) {
        /* Cut by the window: redact to the start of its last line, the
         * stream takes the rest line by line (an END line cut in two is
         * seen whole there). */
        return cut(0, line_start > first ? line_start : len, start, end);
    }
cut:
    if (pure && !empty && (!headers || keep))
        keep = i; /* the line breaking off is base64 up to here */
    if (maxrun < 16 || !keep)
        return SBX__SHAPE_NO;
    return yes(0, keep, start, end);
}

/* Bytes that end a URL's authority, plus those never in a userinfo, so
 * JSON, HTML, Markdown and ${VAR} templates around a URL stay outside. */
static bool url_stop(int c)
{
    /* A bit per byte below 128 (the characters above, controls, space). */
    static const uint64_t stop[2] = {
        0xffffffffull | 1ull << ' ' | 1ull << '"' | 1ull << '#' | 1ull << '/' | 1ull << '<' | 1ull << '>' | 1ull << '?',
        1ull << ('\\' - 64) | 1ull << ('`' - 64) | 1ull << ('{' - 64) | 1ull << ('|' - 64) | 1ull << ('}' - 64) |
            1ull << (0x7f - 64),
    };
    return c < 128 && ((stop[c >> 6] >> (c & 63)) & 1);
}

/* The bytes match_url's loop looks at: url_stop's, and , ; ' @ : */
static bool url_mark(unsigned char c)
{
    static const uint64_t mark[2] = {
        0xffffffffull | 1ull << ' ' | 1ull << '"' | 1ull << '#' | 1ull << '/' | 1ull << '<' | 1ull << '>' | 1ull << '?' |
            1ull << ',' | 1ull << ';' | 1ull << '\'' | 1ull << ':',
        1ull << ('@' - 64) | 1ull << ('\\' - 64) | 1ull << ('`' - 64) | 1ull << ('{' - 64) | 1ull << ('|' - 64) |
            1ull << ('}' - 64) | 1ull << (0x7f - 64),
    };
    return c < 128 && ((mark[c >> 6] >> (c & 63)) & 1);
}

/* Whether buf[i..] starts "%XY" for the two hex digits of enc (any case),
 * or, percent-encoded twice, "%25XY"; BYTE_NEED when it cannot tell yet. */
static int pct_is(const char *buf, size_t len, size_t i, bool more, const char *enc, bool twice)
{
    char e[6];
    size_t n = 3;
    if (twice) {
        e[0] = '%', e[1] = '2', e[2] = '5', e[3] = enc[1], e[4] = enc[2];
        n = 5;
    } else {
        memcpy(e, enc, 3);
    }
    for (size_t k = 0; k < n; k++) {
        int c = peek(buf, len, i + k, more);
        if (c == BYTE_NEED)
            return BYTE_NEED;
        if (c == BYTE_END || (c | (k ? 0x20 : 0)) != (e[k] | (k ? 0x20 : 0)))
            return 0;
    }
    return 1;
}

/*
 * URL credentials: after "://" (or ":\/\/" in JSON), the userinfo is
 * everything up to the last '@' before the authority ends (as WHATWG
 * parses a raw '@' in a password), and it must hold a ':' followed by a
 * non-empty password. Only the userinfo is redacted; the scheme is not
 * visible (prev only), any is taken. A URL percent-encoded whole (inside
 * another URL's query: "https%3A%2F%2Fuser%3Apass%40host") is read the
 * same way with %3A, %40 and %2F.
 */
static shape_result match_url(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t i, from, at = 0, colon = 0, atlen = 1, clen = 1, plen, odd_user = 0, odd_pass = 0;
    bool pct = buf[0] == '%', twice = pct && buf[1] == '2' && buf[2] == '5';
    int c;

    (void)prev;
    /* "://", ":\/\/", "%3A%2F%2F", Python quote()'s "%3A//", or encoded
     * twice (a URL in a query inside another query): "%253A%252F%252F" */
    from = twice ? 15 : pct ? (buf[3] == '/' ? 5 : 9) : buf[1] == '\\' ? 5 : 3;
    plen = twice ? 5 : 3;
    if (!pct) {
        /* The rules of the encoded form's loop below, without its escapes,
         * in a tight loop: most URLs have no userinfo, and this runs at each. */
        for (i = from; i < len; i++) {
            unsigned char b = (unsigned char)buf[i];
            if (!url_mark(b))
                continue;
            if (url_stop(b))
                break;
            if (b == ',' || b == ';' || b == '\'') {
                if (!colon && !odd_user)
                    odd_user = i;
                else if (colon)
                    odd_pass = i;
            }
            if (b == '@')
                at = i;
            else if (b == ':' && !colon)
                colon = i;
        }
        if (i >= len && more)
            return SBX__SHAPE_MORE;
    } else {
        for (i = from;; i++) {
            c = peek(buf, len, i, more);
            if (c == BYTE_NEED)
                return SBX__SHAPE_MORE;
            if (c == BYTE_END || url_stop(c) || c == '&')
                break;
            if (c == ',' || c == ';' || c == '\'') {
                if (!colon && !odd_user)
                    odd_user = i;
                else if (colon)
                    odd_pass = i;
            }
            if (c == '%') {
                int a = pct_is(buf, len, i, more, "%40", twice), k = pct_is(buf, len, i, more, "%3A", twice),
                    sl = pct_is(buf, len, i, more, "%2F", twice), q = pct_is(buf, len, i, more, "%3F", twice),
                    h = pct_is(buf, len, i, more, "%23", twice), amp = twice ? pct_is(buf, len, i, more, "%26", false) : 0;
                if (a == BYTE_NEED || k == BYTE_NEED || sl == BYTE_NEED || q == BYTE_NEED || h == BYTE_NEED ||
                    amp == BYTE_NEED)
                    return SBX__SHAPE_MORE;
                if (sl == 1 || q == 1 || h == 1 || amp == 1)
                    break;
                if (a == 1)
                    at = i, atlen = plen;
                else if (k == 1 && !colon)
                    colon = i, clen = plen;
                continue;
            }
            /* Raw ':' and '@' count in an encoded URL too (half-encoded). */
            if (c == '@')
                at = i, atlen = 1;
            else if (c == ':' && !colon)
                colon = i, clen = 1;
        }
    }
    if (!at || !colon || colon > at || at == colon + clen)
        return SBX__SHAPE_NO;
    /* A ',', ';' or '\'' in the user name ("a,b;c'd:pw@host") is taken; but
     * a CSV or SQL line of fields ("https://host,10:00,bob@x", "'https://
     * host','10:00','bob@x'") has one after the ':' too, or a host (a '.')
     * before it. */
    if (odd_user && ((odd_pass && odd_pass < at) || memchr(buf + from, '.', odd_user - from)))
        return SBX__SHAPE_NO;
    /* image@sha256:digest is a container image reference, not a login. */
    for (size_t k = 0; k < 3; k++) {
        static const char *const digests[] = {"sha256:", "sha512:", "sha384:"};
        if (has_prefix(buf, len, at + atlen, digests[k]) == PFX_YES)
            return SBX__SHAPE_NO;
    }
    return yes(from, at, start, end);
}

/* Where a header name may start: a line, a prompt ("> " from curl -v), a
 * quote (JSON, a Python dict, -H '...', also an escaped \" in JSON), a
 * bracket, a list or object separator, a query string (?authorization=), an
 * environment name (HTTP_AUTHORIZATION), an assignment (git config's
 * http.extraheader=AUTHORIZATION: ...). A letter, digit or '-' before it
 * means another word (X-Authorization:, preauthorization:) and is NO. */
static bool auth_prev_ok(int prev)
{
    return prev < 0 || prev == SBX__PREV_ESCAPED_QUOTE || (prev != 0 && prev < 128 && strchr("\n\r \t<>\"',{[(;?&_=", prev));
}

static bool is_scheme(int c)
{
    return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '+';
}

/* The HTTP authentication schemes programs use (IANA's registry and the
 * common private ones): a lone one is a scheme without credentials, and
 * after one, the next word is the credential whatever it looks like. */
static bool known_scheme(const char *w, size_t n)
{
    static const char *const schemes[] = {
        "basic", "bearer", "digest", "token", "negotiate", "ntlm", "bot", "oauth", "hoba", "mutual",
        "vapid", "hawk", "apikey", "api-key", "key", "jwt", "dpop", "aws4-hmac-sha256", "scram-sha-1",
        "scram-sha-256", "googlelogin", "privatetoken", "concealed", "gnap", "sso", "otp",
    };
    for (size_t k = 0; k < sizeof schemes / sizeof schemes[0]; k++) {
        size_t m, j = 0;
        if (!n || (w[0] | 0x20) != schemes[k][0])
            continue;
        m = strlen(schemes[k]);
        while (j < n && j < m && (w[j] | 0x20) == schemes[k][j])
            j++;
        if (j == n && j == m)
            return true;
    }
    return false;
}

/* A word that could be a credential on its own: 8 bytes or more with a
 * digit, a token68 symbol or both letter cases ("required" and "none" are
 * prose). */
static bool credentialish(const char *w, size_t n)
{
    bool digit = false, upper = false, lower = false, sym = false;
    if (n < 8)
        return false;
    for (size_t k = 0; k < n; k++) {
        int c = (unsigned char)w[k];
        digit = digit || is_digit(c);
        upper = upper || (c >= 'A' && c <= 'Z');
        lower = lower || (c >= 'a' && c <= 'z');
        sym = sym || (c != 0 && strchr("+/=_-.~", c));
    }
    return digit || sym || (upper && lower);
}

/* A reference to a secret, not one: $VAR, ${VAR}, $(cmd), <token>, {{x}},
 * %VAR%, or masked (***, xxxx). */
static bool placeholder(const char *w, size_t n)
{
    size_t k = 0;
    if (n && (w[0] == '$' || w[0] == '<' || w[0] == '%' || (n > 1 && w[0] == '{' && w[1] == '{')))
        return true;
    while (k < n && (w[k] == '*' || w[k] == 'x' || w[k] == 'X' || w[k] == '.'))
        k++;
    return k == n;
}

/* Skip an ANSI colour code (ESC [ params letter) at buf[*i]. False when
 * the answer needs more bytes. */
static bool skip_ansi(const char *buf, size_t len, size_t *i, bool more)
{
    size_t j = *i;
    int c = peek(buf, len, j, more);
    if (c != 0x1b)
        return c != BYTE_NEED;
    c = peek(buf, len, ++j, more);
    if (c == BYTE_NEED)
        return false;
    if (c != '[')
        return true;
    do
        c = peek(buf, len, ++j, more);
    while (is_digit(c) || c == ';');
    if (c == BYTE_NEED)
        return false;
    if (c >= 0x40 && c <= 0x7e)
        *i = j + 1;
    return true;
}

/* Skip blanks and colour codes; the byte there in *c. False: need more. */
static bool skip_space(const char *buf, size_t len, size_t *i, bool more, int *c)
{
    for (;;) {
        size_t j = *i;
        if (!skip_ansi(buf, len, i, more))
            return false;
        *c = peek(buf, len, *i, more);
        if (*c == BYTE_NEED)
            return false;
        if (is_blank(*c))
            (*i)++;
        else if (*i == j)
            return true;
    }
}

/* A quote at buf[i]: '"', '\'', or an escaped \" (SBX__PREV_ESCAPED_QUOTE);
 * BYTE_END for none, BYTE_NEED to tell later. *n its length. */
static int quote_at(const char *buf, size_t len, size_t i, bool more, size_t *n)
{
    int c = peek(buf, len, i, more);
    *n = 1;
    if (c == '"' || c == '\'')
        return c;
    if (c == '\\') {
        c = peek(buf, len, i + 1, more);
        if (c == BYTE_NEED)
            return BYTE_NEED;
        *n = 2;
        return c == '"' ? SBX__PREV_ESCAPED_QUOTE : BYTE_END;
    }
    return c == BYTE_NEED ? BYTE_NEED : BYTE_END;
}

/* Whether the value ends at buf[i] (1), does not (0), or cannot tell yet
 * (-1): a line break (also escaped), a colour code, its closing quote or
 * bracket (an escaped \" when it was opened by one), the end of the text. */
static int auth_end(const char *buf, size_t len, size_t i, bool more, int endq)
{
    int c = peek(buf, len, i, more), d;
    if (c == BYTE_NEED)
        return -1;
    if (c == BYTE_END || c == '\n' || c == '\r' || c == 0x1b || c == endq)
        return 1;
    if (c != '\\')
        return 0;
    d = peek(buf, len, i + 1, more);
    if (d == BYTE_NEED)
        return -1;
    return d == 'n' || d == 'r' || d == BYTE_END || (d == '"' && endq == SBX__PREV_ESCAPED_QUOTE);
}

/* Advance *i over a word of the value (to a blank, or with eq to an '=' too,
 * or to the value's end: *ended). An escaped character is part of it. */
static int auth_word(const char *buf, size_t len, size_t *i, bool more, int endq, bool eq, bool *ended)
{
    /* Bytes that can end a word or the value, or start an escape; the
     * others are passed over in a run (most of a credential). */
    static const bool stop[256] = {[' '] = true, ['\t'] = true, ['\\'] = true, ['\n'] = true,
                                   ['\r'] = true, [0x1b] = true, ['='] = true};
    for (;;) {
        int e;
        while (*i < len && !stop[(unsigned char)buf[*i]] && (unsigned char)buf[*i] != endq)
            (*i)++;
        e = auth_end(buf, len, *i, more, endq);
        if (e < 0)
            return -1;
        *ended = e == 1;
        if (*ended || is_blank((unsigned char)buf[*i]) || (eq && buf[*i] == '='))
            return 0;
        *i += buf[*i] == '\\' ? 2 : 1;
    }
}

static int auth_blanks(const char *buf, size_t len, size_t *i, bool more, int endq, bool *ended)
{
    for (;;) {
        int e = auth_end(buf, len, *i, more, endq);
        if (e < 0)
            return -1;
        *ended = e == 1;
        if (*ended || !is_blank((unsigned char)buf[*i]))
            return 0;
        (*i)++;
    }
}

/* YES for the credential [s, t); CUT when it runs to the window's end. */
static shape_result auth_yes(const char *buf, size_t len, size_t s, size_t t, size_t *start, size_t *end)
{
    (void)buf;
    if (t == len && len >= AUTH_WINDOW)
        return cut(s, t, start, end);
    return yes(s, t, start, end);
}

/*
 * Authorization: and Proxy-Authorization: values, in the forms programs
 * print them: a header line (curl -v, HTTP dumps, YAML; also coloured), a
 * quoted header line (-H 'Authorization: ...', also inside a JSON string),
 * a key with its value: JSON, a Python dict or bytes dict, a Python tuple
 * ('authorization', '...'), a Ruby hash ('...' => '...'), a Go header map
 * (Authorization:[...], "Authorization":["..."], []string{"..."}), an
 * assignment (HTTP_AUTHORIZATION=..., ?authorization=...). The value ends
 * at a line break (also an escaped one), its closing quote or bracket, or
 * a colour code.
 *
 * Only the credentials are redacted, so that prose mentioning the header
 * survives. After a known scheme word (Bearer, Basic, token, Negotiate...),
 * the next word; or after any scheme word, a list of auth-params
 * (Digest username="...", AWS4-HMAC-SHA256 Credential=...) to the end.
 * After an unknown word, or alone, a word: where a header surely is (the
 * start of a line, a quote, a key), any word; after a space (prose, or
 * curl's "> "), only one that looks like a credential (8 bytes or more
 * with a digit, a symbol or both cases). Placeholders ($TOKEN, ${TOKEN},
 * <token>) are not credentials.
 */
static shape_result match_auth(const char *buf, size_t len, int prev, bool more,
                               size_t *start, size_t *end)
{
    size_t i = (buf[0] == 'p' || buf[0] == 'P') ? 19 : 13, v, w, s, t, k, qn;
    int keyq, endq = BYTE_END, c, r;
    bool bracket = false, ended;
    /* Where a header surely is (a line's start, a quote, a key), any value
     * is a credential; after a space it may be prose, which is tested. */
    bool header = prev != ' ';

    if (!auth_prev_ok(prev))
        return SBX__SHAPE_NO;
    /* The common miss first: the name in prose or in an identifier, a word
     * after it (a separator, a quote or a colour code would come first). */
    for (k = i; k < len && is_blank((unsigned char)buf[k]); k++)
        ;
    if (k < len && is_alnum((unsigned char)buf[k]))
        return SBX__SHAPE_NO;
    if (!skip_ansi(buf, len, &i, more))
        return SBX__SHAPE_MORE;
    /* A quoted key: the quote that opened it closes it. */
    keyq = quote_at(buf, len, i, more, &qn);
    if (keyq == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (keyq != BYTE_END && keyq == prev)
        i += qn;
    else
        keyq = BYTE_END;
    if (!skip_space(buf, len, &i, more, &c))
        return SBX__SHAPE_MORE;
    if (c == '=' && keyq != BYTE_END && peek(buf, len, i + 1, more) == '>')
        i++; /* Ruby's => */
    else if (peek(buf, len, i + 1, more) == BYTE_NEED && c == '=' && keyq != BYTE_END)
        return SBX__SHAPE_MORE;
    if (c != ':' && c != '=' && !(c == ',' && keyq != BYTE_END))
        return SBX__SHAPE_NO;
    i++;
    if (!skip_space(buf, len, &i, more, &c))
        return SBX__SHAPE_MORE;
    if (buf[i - 1] == ',' || (i >= 2 && is_blank((unsigned char)buf[i - 1]))) {
        /* A name/value pair (HAR, a header list): "name": "Authorization",
         * "value": "...": the value is the pair's value. */
        const char *vk = keyq == '"' ? "\"value\"" : keyq == '\'' ? "'value'" : "\\\"value\\\"";
        enum prefix_state ps = keyq != BYTE_END ? has_prefix(buf, len, i, vk) : PFX_NO;
        if (ps == PFX_PARTIAL)
            return more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
        if (ps == PFX_YES) {
            i += strlen(vk);
            if (!skip_space(buf, len, &i, more, &c))
                return SBX__SHAPE_MORE;
            if (c != ':')
                return SBX__SHAPE_NO;
            i++;
            if (!skip_space(buf, len, &i, more, &c))
                return SBX__SHAPE_MORE;
        }
    }
    /* The value's opening: Go's []string{, a bracket, Python's b'', a quote. */
    if (c == '[' && has_prefix(buf, len, i, "[]string{") != PFX_NO) {
        if (has_prefix(buf, len, i, "[]string{") == PFX_PARTIAL)
            return more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
        i += 9;
    } else if (c == '[' || c == '(') {
        bracket = true;
        endq = c == '[' ? ']' : ')';
        i++;
    }
    c = peek(buf, len, i, more);
    if (c == 'b') {
        int d = peek(buf, len, i + 1, more);
        if (d == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (d == '\'' || d == '"')
            i++;
    }
    k = quote_at(buf, len, i, more, &qn) == BYTE_NEED ? 0 : 1;
    if (!k)
        return SBX__SHAPE_MORE;
    c = quote_at(buf, len, i, more, &qn);
    if (c != BYTE_END) {
        endq = c;
        i += qn;
    } else if (!bracket && keyq == BYTE_END) {
        /* A whole header line in quotes, or in brackets. */
        endq = prev == '"' || prev == '\'' || prev == SBX__PREV_ESCAPED_QUOTE ? prev
               : prev == '(' ? ')' : prev == '[' ? ']' : prev == '{' ? '}' : BYTE_END;
    }
    /* The value is read word by word, and only as far as needed: prose is
     * told from a credential by its first words, so a long line of text is
     * not read to its end at every "authorization" in it. */
    v = i;
    r = auth_blanks(buf, len, &v, more, endq, &ended);
    if (r < 0)
        return SBX__SHAPE_MORE;
    if (ended)
        return SBX__SHAPE_NO;
    w = v;
    if (auth_word(buf, len, &w, more, endq, false, &ended) < 0)
        return SBX__SHAPE_MORE;
    s = w;
    if (!ended && auth_blanks(buf, len, &s, more, endq, &ended) < 0)
        return SBX__SHAPE_MORE;
    if (ended) { /* one word */
        if (placeholder(buf + v, w - v) || known_scheme(buf + v, w - v) ||
            (!header && !credentialish(buf + v, w - v)))
            return SBX__SHAPE_NO;
        return auth_yes(buf, len, v, w, start, end);
    }
    for (k = v; k < w && is_scheme((unsigned char)buf[k]); k++)
        ;
    if (k < w)
        return SBX__SHAPE_NO; /* not a scheme word: prose */
    k = s;
    if (auth_word(buf, len, &k, more, endq, true, &ended) < 0)
        return SBX__SHAPE_MORE;
    if (placeholder(buf + s, k - s))
        return SBX__SHAPE_NO;
    if (!ended && k > s && buf[k] == '=') {
        /* auth-params (Digest username="...", Credential=...): to the end */
        for (t = k;;) {
            size_t b = t;
            if (auth_word(buf, len, &t, more, endq, false, &ended) < 0 ||
                (!ended && auth_blanks(buf, len, &t, more, endq, &ended) < 0))
                return SBX__SHAPE_MORE;
            if (ended)
                break;
            if (t == b)
                t++; /* cannot happen: a word or blanks moved on */
        }
        while (t > s && is_blank((unsigned char)buf[t - 1]))
            t--;
        return auth_yes(buf, len, s, t, start, end);
    }
    if (known_scheme(buf + v, w - v))
        return auth_yes(buf, len, s, k, start, end); /* one word; words after it stay */
    /* An unknown scheme: its credential must be the last word. */
    t = k;
    if (!ended && auth_blanks(buf, len, &t, more, endq, &ended) < 0)
        return SBX__SHAPE_MORE;
    if (!ended || (!header && !credentialish(buf + s, k - s)))
        return SBX__SHAPE_NO;
    return auth_yes(buf, len, s, k, start, end);
}

/* ---- command lines ------------------------------------------------------------------------ */

/* The end of the command-line word at buf[i] (quoted words whole) in
 * *wend, and the word without its quotes in [*ws, *we) (they are not part
 * of the password); BYTE_NEED when its end is still to come. */
static int cli_word(const char *buf, size_t len, size_t i, bool more, size_t *wend, size_t *ws, size_t *we)
{
    int c = peek(buf, len, i, more), q;
    if (c == BYTE_NEED)
        return BYTE_NEED;
    q = c == '"' || c == '\'' ? c : 0;
    *ws = q ? i + 1 : i;
    for (size_t j = *ws;; j++) {
        /* the bytes that cannot end the word, in a run */
        static const bool bare[256] = {['\n'] = true, ['\r'] = true, [' '] = true, ['\t'] = true,
                                       [';'] = true, ['|'] = true, ['&'] = true, [0x1b] = true};
        if (q) {
            while (j < len && buf[j] != q && buf[j] != '\n')
                j++;
        } else {
            while (j < len && !bare[(unsigned char)buf[j]])
                j++;
        }
        c = peek(buf, len, j, more);
        if (c == BYTE_NEED)
            return BYTE_NEED;
        if (q ? (c == q || c == BYTE_END || c == '\n') : (c == BYTE_END || c == '\n' || c == '\r' || is_blank(c) ||
                                                           c == ';' || c == '|' || c == '&' || c == 0x1b)) {
            *we = j;
            *wend = q && c == q ? j + 1 : j;
            return 0;
        }
    }
}

/*
 * Passwords given on a command line, as shells (set -x), CI logs and
 * process listings print them: curl -u/--user USER:PASSWORD (the part after
 * the first ':'), docker login -p/--password PASSWORD, mysql (and
 * mysqldump, mysqladmin) -pPASSWORD glued to the option, sshpass -p
 * PASSWORD (or glued). The trigger is the program's name at a word's
 * start; its options are read to the end of the line.
 */
static shape_result match_cli(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    enum { CURL, DOCKER, MYSQL, SSHPASS } prog;
    size_t i;
    if (prev >= 0 && prev != SBX__PREV_ESCAPED_QUOTE && (is_alnum(prev) || prev == '_' || prev == '-' || prev == '.'))
        return SBX__SHAPE_NO;
    prog = buf[0] == 'c' ? CURL : buf[0] == 'd' ? DOCKER : buf[0] == 'm' ? MYSQL : SSHPASS;
    i = prog == CURL ? 4 : prog == DOCKER ? 12 : prog == MYSQL ? 5 : 7;
    {
        /* Every answer but NO needs an option holding "-u" (curl: -u,
         * -uUSER:PASS, --user) or "-p" (the others) before the line's end,
         * past which the options below are never read: without one on a
         * line already whole, the answer is NO (a command line without a
         * password costs a search, not a parse). */
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - buf) : len;
        const char *d = buf + i, *stop = buf + e;
        char want = prog == CURL ? 'u' : 'p';
        while ((d = memchr(d, '-', (size_t)(stop - d))) && d + 1 < stop && d[1] != want)
            d++;
        if ((nl || !more) && !(d && d + 1 < stop))
            return SBX__SHAPE_NO;
    }
    if (prog == MYSQL) /* mysqldump, mysqladmin, mysqlsh... */
        while (i < len && is_alpha((unsigned char)buf[i]))
            i++;
    for (;;) {
        size_t ws, we, wend, os;
        int c;
        /* the next option */
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && is_blank(c))
            i++;
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || c == '\n' || c == '\r' || c == ';' || c == '|' || c == '&' || i >= len)
            return SBX__SHAPE_NO;
        os = i;
        if (cli_word(buf, len, i, more, &wend, &ws, &we) == BYTE_NEED)
            return SBX__SHAPE_MORE;
        /* an empty word (an ESC, which ends words) is passed over a byte
         * at a time: taking no byte here looped for ever */
        i = wend > os ? wend : os + 1;
        if (buf[os] != '-')
            continue;
        {
            const char *o = buf + os;
            size_t on = we - os;
            bool glued_p = on > 2 && o[1] == 'p' && prog != CURL && prog != DOCKER;
            bool takes = (prog == CURL && ((on == 2 && o[1] == 'u') || (on == 6 && memcmp(o, "--user", 6) == 0))) ||
                         (prog == DOCKER && ((on == 2 && o[1] == 'p') || (on == 10 && memcmp(o, "--password", 10) == 0))) ||
                         (prog == SSHPASS && on == 2 && o[1] == 'p');
            if (prog == CURL && on > 2 && o[1] == 'u' && o[2] != '-') { /* -uUSER:PASS */
                const char *colon = memchr(o + 2, ':', on - 2);
                if (colon && (size_t)(o + on - colon) > 1)
                    return yes((size_t)(colon + 1 - buf), we, start, end);
                continue;
            }
            if (glued_p && (prog == MYSQL || prog == SSHPASS) && o[2] != '-') {
                size_t a = os + 2, b = we; /* -p'...': the quotes stay */
                if ((o[2] == '\'' || o[2] == '"') && b - a >= 2 && buf[b - 1] == o[2]) {
                    a++;
                    b--;
                }
                return b > a ? yes(a, b, start, end) : SBX__SHAPE_NO;
            }
            if (!takes)
                continue;
        }
        /* the option's argument */
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && is_blank(c))
            i++;
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || c == '\n' || c == '\r')
            return SBX__SHAPE_NO;
        if (cli_word(buf, len, i, more, &wend, &ws, &we) == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (prog == CURL) {
            const char *colon = memchr(buf + ws, ':', we - ws);
            if (!colon || (size_t)(buf + we - colon) <= 1)
                return SBX__SHAPE_NO; /* no password: curl asks for it */
            ws = (size_t)(colon + 1 - buf);
        }
        if (we == ws || placeholder(buf + ws, we - ws))
            return SBX__SHAPE_NO;
        return yes(ws, we, start, end);
    }
}

/* ---- more key formats ------------------------------------------------------------------------ */

/*
 * AWS access key ids (the prefix, then 16 base32 upper-case bytes); with
 * the secret access key right after it (40 bytes of [A-Za-z0-9/+] after a
 * ',' or a tab, as the console's CSV and tab-separated dumps write the
 * pair), both.
 */
static shape_result match_aws(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    const struct token_rule r = {4, 16, 16, K_B32, K_WORD};
    shape_result res = match_token(&r, buf, len, prev, more, start, end);
    size_t i = *end, j;
    int c;
    if (res != SBX__SHAPE_YES)
        return res;
    c = peek(buf, len, i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != ',' && c != '\t')
        return res;
    for (j = i + 1; j <= i + 41; j++) {
        c = peek(buf, len, j, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (!(is_alnum(c) || c == '/' || c == '+'))
            break;
    }
    if (j - i - 1 == 40 && !(c == '=' || c == '_' || c == '-'))
        *end = j;
    return res;
}

/* The base64 of a PEM private key (a Kubernetes secret's tls.key, an
 * environment variable): "-----BEGIN " encoded, a label holding PRIVATE
 * KEY, and the whole base64 run after, across wrapped lines. */
static int b64val(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
}

static shape_result match_pem_b64(const char *buf, size_t len, int prev, bool more,
                                  size_t *start, size_t *end)
{
    char head[64];
    size_t n = 0, i, lastend;
    unsigned acc = 0;
    int bits = 0, c;
    if (!prev_ok(prev, K_ALNUM) || prev == '+' || prev == '/')
        return SBX__SHAPE_NO;
    /* decode the first 84 characters (the BEGIN line's 63 bytes), across
     * the line breaks of a wrapped form */
    for (i = 0; n < sizeof head && i < 200; i++) {
        int v;
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if ((v = pem_break(buf, len, i, more)) < 0)
            return SBX__SHAPE_MORE;
        if (v > 0) {
            i += (size_t)v - 1;
            continue;
        }
        if ((v = b64val(c)) < 0)
            break;
        acc = acc << 6 | (unsigned)v;
        if ((bits += 6) >= 8) {
            bits -= 8;
            head[n++] = (char)(acc >> bits & 0xff);
        }
    }
    {
        size_t k = 11;
        while (k + 5 <= n && memcmp(head + k, "-----", 5) != 0)
            k++;
        if (k + 5 > n || !((k - 11 >= 11 && memcmp(head + k - 11, "PRIVATE KEY", 11) == 0) ||
                           (k - 11 >= 17 && memcmp(head + k - 17, "PRIVATE KEY BLOCK", 17) == 0)))
            return SBX__SHAPE_NO; /* a certificate, a public key, or not PEM */
    }
    /* the base64 run, and the next lines while they are base64 alone and
     * the line before was a wrapped one (40 characters or more) */
    for (i = 0, lastend = 0;;) {
        size_t ls = i, j, k;
        int d;
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && (b64val(c) >= 0 || c == '='))
            i++;
        if (c == BYTE_NEED)
            return len >= PEM_WINDOW ? cut(0, len, start, end) : SBX__SHAPE_MORE;
        lastend = i;
        if (i - ls < 40)
            break;
        /* a line break, raw or escaped */
        if ((d = pem_break(buf, len, i, more)) < 0)
            return SBX__SHAPE_MORE;
        if (d == 0)
            break;
        j = i + (size_t)d;
        /* the next line: base64 to its end? */
        for (k = j; (d = peek(buf, len, k, more)) != BYTE_NEED && (b64val(d) >= 0 || d == '='); k++)
            ;
        if (d == BYTE_NEED)
            return len >= PEM_WINDOW ? cut(0, len, start, end) : SBX__SHAPE_MORE;
        if (k == j || !(d == BYTE_END || d == '\n' || d == '\r' || d == '\\' || d == '"'))
            break;
        i = j;
    }
    if (lastend >= len && len >= PEM_WINDOW)
        return cut(0, lastend, start, end);
    return yes(0, lastend, start, end);
}

/*
 * PuTTY private key files: the lines after "Private-Lines: N" (N lines of
 * base64) and the Private-MAC value. SSH2 (RFC 4716 style) private keys:
 * "---- BEGIN SSH2 ... PRIVATE KEY ----" through "---- END SSH2 ...".
 */
static shape_result match_putty(const char *buf, size_t len, int prev, bool more,
                                size_t *start, size_t *end)
{
    size_t i = 15, lines = 0, from;
    int c;
    (void)prev;
    while ((c = peek(buf, len, i, more)) != BYTE_NEED && is_digit(c) && lines < 100000) {
        lines = lines * 10 + (size_t)(c - '0');
        i++;
    }
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (i == 15 || lines == 0)
        return SBX__SHAPE_NO;
    if (c == '\r')
        c = peek(buf, len, ++i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != '\n')
        return SBX__SHAPE_NO;
    from = ++i;
    for (size_t l = 0; l < lines; l++) {
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && (b64val(c) >= 0 || c == '='))
            i++;
        if (c == BYTE_NEED)
            return len >= PEM_WINDOW ? cut(from, len, start, end) : SBX__SHAPE_MORE;
        if (c == '\r')
            c = peek(buf, len, ++i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c != '\n')
            return l ? yes(from, i, start, end) : SBX__SHAPE_NO;
        i++;
    }
    /* and the MAC line, when it follows */
    switch (has_prefix(buf, len, i, "Private-MAC: ")) {
    case PFX_PARTIAL:
        if (more)
            return SBX__SHAPE_MORE;
        break;
    case PFX_YES:
        i += 13;
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && in(c, K_HEX))
            i++;
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        return yes(from, i, start, end);
    case PFX_NO:
        break;
    }
    return yes(from, i, start, end);
}

static shape_result match_ssh2(const char *buf, size_t len, int prev, bool more,
                               size_t *start, size_t *end)
{
    size_t i = 16, b64 = 0, last = 0;
    int c;
    (void)prev;
    /* The BEGIN line, alone on its line: a label of capitals, digits and
     * spaces holding PRIVATE KEY, then " ----". */
    while ((c = peek(buf, len, i, more)) != BYTE_NEED && (in(c, K_UPPER | K_DIGIT) || c == ' ') && i < 100)
        i++;
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != '-' || i < 16 + 16 || memcmp(buf + i - 5, " KEY ", 5) != 0 ||
        !memmem(buf + 16, i - 16, "PRIVATE KEY", 11))
        return SBX__SHAPE_NO;
    {
        shape_result r = expect_prefix(buf, len, i, "----", more);
        if (r != SBX__SHAPE_YES)
            return r;
    }
    i += 4;
    if ((c = peek(buf, len, i, more)) == '\r')
        c = peek(buf, len, ++i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != '\n')
        return SBX__SHAPE_NO;
    /* Header lines (Name: value) and base64 lines, to the END line. A line
     * of anything else ends the key: redacted through its last base64 line
     * when there was key material. */
    for (i++;;) {
        size_t ls = i, n;
        bool header = false, base64 = true;
        switch (has_prefix(buf, len, ls, "---- END SSH2 ")) {
        case PFX_YES:
            while ((c = peek(buf, len, i, more)) != BYTE_NEED && c != BYTE_END && c != '\n' && c != '\r')
                i++;
            if (c == BYTE_NEED)
                return SBX__SHAPE_MORE;
            return yes(0, i, start, end);
        case PFX_PARTIAL:
            if (more)
                return len >= PEM_WINDOW ? cut(0, len, start, end) : SBX__SHAPE_MORE;
            break;
        case PFX_NO:
            break;
        }
        while ((c = peek(buf, len, i, more)) != BYTE_NEED && c != BYTE_END && c != '\n') {
            if (c == ':' && i > ls)
                header = true;
            else if (!(b64val(c) >= 0 || c == '=' || c == '\r'))
                base64 = false;
            i++;
        }
        if (c == BYTE_NEED)
            return len >= PEM_WINDOW ? cut(0, len, start, end) : SBX__SHAPE_MORE;
        n = i - ls;
        if (base64 && !header && n) {
            b64 += n;
            last = i;
        } else if (!header || b64) {
            break; /* prose, or a header after the key material */
        }
        if (c == BYTE_END)
            break;
        i++;
    }
    if (b64 < 16)
        return SBX__SHAPE_NO;
    return yes(0, last, start, end);
}

/*
 * Credentials by the name they are assigned to: a key, a separator (':',
 * '=', '=>', also after the key's closing quote), then the value, quoted
 * (to its closing quote) or bare (to a blank, a line's end, a quote or one
 * of ; & , ) ] } < >, as in connection strings and query strings). The key
 * and the separator stay. Where the form is surely an assignment (a quoted
 * value, or '=' right after the key) any value of a byte or more is taken;
 * after ": " it may be prose ("password: required"), so only a value that
 * looks like a credential (credentialish, or 6 bytes or more with a digit).
 * References ($VAR, ${VAR}, <x>, %VAR%, ***) never. The keys
 * (KEY_* flags): passwords in DSNs, JDBC and ADO.NET connection strings,
 * git credential's output, kubeconfig and .pgpass-like files; npm's
 * _authToken; Azure storage's AccountKey; AWS's secret access key in the
 * environment and its credentials file; docker config.json's "auth"; a
 * kubeconfig's token.
 */
enum { KEY_WORDED = 1 /* '_' or '-' may come before: DB_PASSWORD, --password */,
       KEY_QUOTED = 2 /* only as a quoted key with a quoted value */,
       KEY_LONG = 4   /* a value of 20 bytes or more */ };
static const struct {
    const char *name;
    unsigned flags;
} assign_keys[] = {
    {"password", KEY_WORDED}, {"passwd", KEY_WORDED}, {"_authtoken", 0}, {"accountkey", 0},
    {"aws_secret_access_key", 0}, {"\"auth\"", KEY_QUOTED}, {"token", KEY_LONG},
};

static bool assign_prev_ok(int prev, unsigned flags)
{
    if (prev < 0 || prev == SBX__PREV_ESCAPED_QUOTE)
        return true;
    if (prev == '_' || prev == '-')
        return (flags & KEY_WORDED) != 0;
    return prev != 0 && prev < 128 && strchr("\n\r \t<>\"',{[(;?&=/:.", prev);
}

static bool value_stop(int c, int endq)
{
    if (c == 0x1b) /* a colour code ends it */
        return true;
    if (endq != BYTE_END)
        return c == endq || c == '\n' || c == '\r' || c == BYTE_END;
    return c == BYTE_END || c == '\n' || c == '\r' || is_blank(c) || (c >= 0 && strchr(";&,)]}<>\"'`", c));
}

static shape_result match_assign(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    size_t i = 0, k, v, qn;
    unsigned flags = 0;
    int endq = BYTE_END, c;
    bool spaced = false, sure;

    for (k = 0; k < sizeof assign_keys / sizeof assign_keys[0]; k++) {
        size_t n;
        if (fold((unsigned char)buf[0]) != (unsigned char)assign_keys[k].name[0])
            continue; /* the names are written in lower case */
        n = strlen(assign_keys[k].name);
        if (len >= n && strncasecmp(buf, assign_keys[k].name, n) == 0) {
            i = n;
            flags = assign_keys[k].flags;
            break;
        }
    }
    /* An environment name ending in the key (PGPASSWORD): upper case both */
    if (!i || !(assign_prev_ok(prev, flags) ||
                ((flags & KEY_WORDED) && prev >= 'A' && prev <= 'Z' && buf[0] >= 'A' && buf[0] <= 'Z' &&
                 buf[i - 1] >= 'A' && buf[i - 1] <= 'Z')))
        return SBX__SHAPE_NO;
    /* The word goes on (passwords, tokenizer): not this key. */
    c = peek(buf, len, i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (is_alnum(c) || (c == '_' && !(flags & KEY_QUOTED)))
        return SBX__SHAPE_NO;
    if (!(flags & KEY_QUOTED) && (prev == '"' || prev == '\'' || prev == SBX__PREV_ESCAPED_QUOTE)) {
        int keyq = quote_at(buf, len, i, more, &qn); /* the key's closing quote */
        if (keyq == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (keyq != BYTE_END && keyq != prev)
            return SBX__SHAPE_NO;
        if (keyq != BYTE_END)
            i += qn;
    }
    if (!skip_space(buf, len, &i, more, &c))
        return SBX__SHAPE_MORE;
    if (c != ':' && c != '=')
        return SBX__SHAPE_NO;
    sure = c == '=' && i > 0 && !is_blank((unsigned char)buf[i - 1]);
    if (c == '=' && peek(buf, len, i + 1, more) == '>')
        i++; /* Ruby's => */
    i++;
    k = i;
    for (;;) { /* blanks, also as JSON's \t */
        if (!skip_space(buf, len, &i, more, &c))
            return SBX__SHAPE_MORE;
        if (c != '\\')
            break;
        c = peek(buf, len, i + 1, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c != 't')
            break;
        i += 2;
    }
    spaced = i > k;
    if (spaced && c == '=' )
        return SBX__SHAPE_NO; /* "==": a comparison */
    endq = quote_at(buf, len, i, more, &qn);
    if (endq == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (endq != BYTE_END) {
        i += qn;
        sure = true;
    } else if (flags & KEY_QUOTED) {
        return SBX__SHAPE_NO;
    }
    v = i;
    for (;;) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (value_stop(c, endq) || i - v > 1024)
            break;
        if (c == '\\') { /* an escape: a line break (JSON's \n) ends the value */
            int d = peek(buf, len, i + 1, more);
            if (d == BYTE_NEED)
                return SBX__SHAPE_MORE;
            if (d == 'n' || d == 'r' || (d == '"' && endq == SBX__PREV_ESCAPED_QUOTE))
                break;
            i += endq != BYTE_END ? 2 : 1;
            continue;
        }
        i++;
    }
    if (i - v > 1024 || i == v || placeholder(buf + v, i - v))
        return SBX__SHAPE_NO;
    if (flags & KEY_LONG) { /* a token: one word, credential-like (not code: '<x token=' + y + '>') */
        if (i - v < 20 || !credentialish(buf + v, i - v))
            return SBX__SHAPE_NO;
        for (k = v; k < i; k++)
            if (is_blank((unsigned char)buf[k]))
                return SBX__SHAPE_NO;
    }
    if (!sure) {
        bool digit = false;
        for (k = v; k < i; k++)
            digit = digit || is_digit((unsigned char)buf[k]);
        if (!credentialish(buf + v, i - v) && !(i - v >= 6 && digit))
            return SBX__SHAPE_NO;
    }
    /* A token of a known kind is that kind's, as it would be alone. */
    for (k = 0; k < sbx__nshapes; k++) {
        const sbx__shape *sh = &sbx__shapes[k];
        size_t tl = sh->tlen, a, b;
        shape_result r;
        unsigned char f = i > v ? (unsigned char)buf[v] : 0;
        /* the first byte first (icase triggers are written in lower case) */
        if (!f || (sh->icase ? fold(f) : f) != (unsigned char)sh->trigger[0])
            continue;
        if (sh->match == match_assign || sh->match == match_auth || sh->match == match_url || i - v < tl ||
            (sh->icase ? strncasecmp(buf + v, sh->trigger, tl) : memcmp(buf + v, sh->trigger, tl)) != 0)
            continue;
        /* the value starts a word: after a separator, a blank, a quote, an
         * escape or a colour code */
        r = sbx__shape_match(sh, buf + v, len - v < sh->window ? len - v : sh->window, -1,
                             more && len - v < sh->window, &a, &b);
        if (r == SBX__SHAPE_MORE)
            return SBX__SHAPE_MORE;
        if ((r == SBX__SHAPE_YES || r == SBX__SHAPE_CUT) && a == 0 && v + b >= i)
            return SBX__SHAPE_NO;
    }
    return yes(v, i, start, end);
}

enum sbx__shape_result sbx__shape_match(const sbx__shape *sh, const char *buf, size_t len, int prev, bool more,
                                        size_t *start, size_t *end)
{
    if (sh->token.max)
        return match_token_row(sh, buf, len, prev, more, start, end);
    return sh->match(buf, len, prev, more, start, end);
}

/* A token row: the trigger, then min..max bytes of body (runs of run on
 * neither side); its window and quick reject follow from those. */
#define TOKEN(kind_, trig_, min_, max_, body_, run_)                                                         \
    {.kind = kind_, .trigger = trig_, .tlen = sizeof(trig_) - 1, .icase = false,                           \
     .window = sizeof(trig_) - 1 + (max_) + 1, .match = NULL,                                               \
     .cont = SBX__CONT_NONE, .need_from = sizeof(trig_) - 1, .need_n = (min_) < 255 ? (min_) : 255,             \
     .need = body_, .token = {.min = min_, .max = max_, .body = body_, .run = run_}}
/* Two parts: min1..max1 bytes of body, sep, min..max bytes of body. */
#define TOKEN2(kind_, trig_, min1_, max1_, sep_, min_, max_, body_, run_)                                   \
    {.kind = kind_, .trigger = trig_, .tlen = sizeof(trig_) - 1, .icase = false,                           \
     .window = sizeof(trig_) - 1 + (max1_) + 1 + (max_) + 1,                                                \
     .match = NULL, .cont = SBX__CONT_NONE, .need_from = sizeof(trig_) - 1, .need_n = min1_, .need = body_,   \
     .token = {.min = min_, .max = max_, .body = body_, .run = run_, .sep = sep_, .min1 = min1_, .max1 = max1_}}
/* A shape decided by a function. */
#define SHAPE(kind_, trig_, icase_, window_, match_, cont_, need_from_, need_n_, need_)                      \
    {.kind = kind_, .trigger = trig_, .tlen = sizeof(trig_) - 1, .icase = icase_, .window = window_,       \
     .match = match_, .cont = cont_,                                                                        \
     .need_from = need_from_, .need_n = need_n_, .need = need_, .token = {0}}

const sbx__shape sbx__shapes[] = {
    TOKEN("github", "ghp_", 36, 36, K_ALNUM, K_WORD),
    TOKEN("github", "gho_", 36, 36, K_ALNUM, K_WORD),
    TOKEN("github", "ghu_", 36, 36, K_ALNUM, K_WORD),
    TOKEN("github", "ghs_", 36, 36, K_ALNUM, K_WORD),
    TOKEN("github", "ghr_", 36, 36, K_ALNUM, K_WORD),
    /* fine-grained: 82 of [A-Za-z0-9_], which holds GitHub's 22 + '_' + 59 */
    TOKEN("github", "github_pat_", 82, 82, K_WORD, K_WORD),
    /* GitLab: the documented token prefixes; routable forms where GitLab issues them */
    SHAPE("gitlab", "glpat-", false, GITLAB_WINDOW, match_gitlab, SBX__CONT_NONE, 6, 20, K_B64URL),
    SHAPE("gitlab", "glrt-", false, GITLAB_WINDOW, match_gitlab, SBX__CONT_NONE, 5, 20, K_B64URL),
    SHAPE("gitlab", "glrtr-", false, GITLAB_WINDOW, match_gitlab, SBX__CONT_NONE, 6, 20, K_B64URL),
    SHAPE("gitlab", "glwt-", false, GITLAB_WINDOW, match_gitlab, SBX__CONT_NONE, 5, 20, K_B64URL),
    TOKEN("gitlab", "gloas-", 64, 64, K_B64URL, K_B64URL),  /* OAuth application secret */
    TOKEN("gitlab", "gldt-", 20, 20, K_B64URL, K_B64URL),   /* deploy token */
    TOKEN("gitlab", "glcbt-", 22, 26, K_B64URL, K_B64URL),  /* CI/CD job token: [0-9a-zA-Z]{1,5}_ + 20 */
    TOKEN("gitlab", "glptt-", 40, 40, K_HEX, K_B64URL),     /* pipeline trigger token */
    TOKEN("gitlab", "glft-", 20, 20, K_B64URL, K_B64URL),   /* feed token */
    TOKEN("gitlab", "glimt-", 25, 25, K_B64URL, K_B64URL),  /* incoming mail token */
    TOKEN("gitlab", "glagent-", 50, 50, K_B64URL, K_B64URL),
    TOKEN("gitlab", "glsoat-", 20, 20, K_B64URL, K_B64URL), /* SCIM token */
    TOKEN("gitlab", "glffct-", 20, 20, K_B64URL, K_B64URL), /* feature flags client token */
    TOKEN("gitlab", "GR1348941", 20, 20, K_B64URL, K_B64URL), /* legacy runner registration token */
    SHAPE("slack", "xoxa-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxb-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxp-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxo-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxs-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxr-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xoxe-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "xapp-", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE, 5, 10, K_SLACK),
    SHAPE("slack", "hooks.slack.com/", false, SLACK_HOOK_WINDOW, match_slack_webhook, SBX__CONT_NONE, 0, 0, 0),
    /* Stripe live secret and restricted keys */
    TOKEN("stripe", "sk_live_", 24, 247, K_ALNUM, K_WORD),
    TOKEN("stripe", "rk_live_", 24, 247, K_ALNUM, K_WORD),
    TOKEN("stripe", "sk_test_", 24, 247, K_ALNUM, K_WORD),
    TOKEN("stripe", "rk_test_", 24, 247, K_ALNUM, K_WORD),
    TOKEN("stripe", "whsec_", 32, 64, K_ALNUM, K_WORD), /* webhook signing secret */
    /* AWS access key ids: 16 base32 upper-case bytes */
    SHAPE("aws", "AKIA", false, AWS_PAIR_WINDOW, match_aws, SBX__CONT_NONE, 4, 16, K_B32),
    SHAPE("aws", "ASIA", false, AWS_PAIR_WINDOW, match_aws, SBX__CONT_NONE, 4, 16, K_B32),
    TOKEN("aws", "AGPA", 16, 16, K_B32, K_WORD),
    TOKEN("aws", "AIDA", 16, 16, K_B32, K_WORD),
    TOKEN("aws", "AROA", 16, 16, K_B32, K_WORD),
    TOKEN("aws", "ANPA", 16, 16, K_B32, K_WORD),
    TOKEN("aws", "ANVA", 16, 16, K_B32, K_WORD),
    TOKEN("aws", "AIPA", 16, 16, K_B32, K_WORD),
    /* Google API keys */
    TOKEN("google", "AIza", 35, 35, K_B64URL, K_B64URL),
    TOKEN("google", "GOCSPX-", 28, 28, K_B64URL, K_B64URL), /* OAuth client secret */
    TOKEN("google", "ya29.", 20, 2048, K_B64URL, K_B64URL),  /* OAuth access token */
    /* Hugging Face user access tokens and (deprecated) organization API tokens */
    TOKEN("huggingface", "hf_", 34, 34, K_ALNUM, K_WORD),
    TOKEN("huggingface", "api_org_", 34, 34, K_ALNUM, K_WORD),
    /* PyPI: pypi- and a macaroon whose location is pypi.org (or test.pypi.org) */
    TOKEN("pypi", "pypi-AgEIcHlwaS5vcmc", 70, 1000, K_B64URL, K_B64URL),
    TOKEN("pypi", "pypi-AgENdGVzdC5weXBpLm9yZw", 70, 1000, K_B64URL, K_B64URL),
    /* Docker Hub personal and organization access tokens */
    TOKEN("docker", "dckr_pat_", 27, 27, K_B64URL, K_B64URL),
    TOKEN("docker", "dckr_oat_", 32, 32, K_B64URL, K_B64URL),
    /* SendGrid: SG. + 22 + '.' + 43 base64url (69 bytes in all) */
    TOKEN2("sendgrid", "SG.", 22, 22, '.', 43, 43, K_B64URL, K_B64URL),
    /* Shopify access tokens and app secrets: 32 hex */
    TOKEN("shopify", "shpat_", 32, 32, K_HEX, K_WORD),
    TOKEN("shopify", "shpca_", 32, 32, K_HEX, K_WORD),
    TOKEN("shopify", "shppa_", 32, 32, K_HEX, K_WORD),
    TOKEN("shopify", "shpss_", 32, 32, K_HEX, K_WORD),
    TOKEN("shopify", "shpua_", 32, 32, K_HEX, K_WORD),
    /* DigitalOcean personal access, OAuth and OAuth refresh tokens: 64 hex */
    TOKEN("digitalocean", "dop_v1_", 64, 64, K_HEX, K_WORD),
    TOKEN("digitalocean", "doo_v1_", 64, 64, K_HEX, K_WORD),
    TOKEN("digitalocean", "dor_v1_", 64, 64, K_HEX, K_WORD),
    /* npm access tokens; npm_config_* and npm_package_* names fail on '_' */
    TOKEN("npm", "npm_", 36, 36, K_ALNUM, K_WORD),
    SHAPE("openai", "sk-", false, OPENAI_WINDOW, match_openai, SBX__CONT_NONE, 3, 20, K_B64URL),
    /* Anthropic: sk-ant- then the kind and version (api03-, admin01-...) and the secret, counted together */
    TOKEN("anthropic", "sk-ant-", 80, 200, K_B64URL, K_B64URL),
    SHAPE("jwt", "eyJ", false, JWT_WINDOW, match_jwt, SBX__CONT_JWT, 3, 8, K_B64URL),
    SHAPE("private_key", "-----BEGIN ", false, PEM_WINDOW, match_pem, SBX__CONT_PEM, 0, 0, 0),
    SHAPE("private_key", "LS0tLS1CRUdJTi", false, PEM_WINDOW, match_pem_b64, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("private_key", "Private-Lines: ", false, PEM_WINDOW, match_putty, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("private_key", "---- BEGIN SSH2 ", false, PEM_WINDOW, match_ssh2, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("url_credentials", "://", false, URL_WINDOW, match_url, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("url_credentials", ":\\/\\/", false, URL_WINDOW, match_url, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("url_credentials", "%3a%2f%2f", true, URL_WINDOW, match_url, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("url_credentials", "%3a//", true, URL_WINDOW, match_url, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("url_credentials", "%253a%252f%252f", true, URL_WINDOW, match_url, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("authorization", "authorization", true, AUTH_WINDOW, match_auth, SBX__CONT_LINE, 0, 0, 0),
    SHAPE("authorization", "proxy-authorization", true, AUTH_WINDOW, match_auth, SBX__CONT_LINE, 0, 0, 0),
    /* passwords on command lines */
    SHAPE("password", "curl ", false, CLI_WINDOW, match_cli, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("password", "docker login", false, CLI_WINDOW, match_cli, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("password", "mysql", false, CLI_WINDOW, match_cli, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("password", "sshpass", false, CLI_WINDOW, match_cli, SBX__CONT_NONE, 0, 0, 0),
    /* credentials by the key they are assigned to (match_assign) */
    SHAPE("password", "password", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("password", "passwd", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("npm", "_authtoken", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("azure", "accountkey", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("aws", "aws_secret_access_key", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("docker", "\"auth\"", false, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
    SHAPE("token", "token", true, ASSIGN_WINDOW, match_assign, SBX__CONT_NONE, 0, 0, 0),
};

const size_t sbx__nshapes = sizeof sbx__shapes / sizeof sbx__shapes[0];
