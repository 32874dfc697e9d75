/* SPDX-License-Identifier: MIT */
/* redact_shapes: the credential shapes the redactor recognises by their form alone. */
#include "redact_int.h"

#include <stdint.h>
#include <string.h>

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
#define GH_CLASSIC_WINDOW (4u + 36u + 1u)
#define GH_FINE_WINDOW (11u + 82u + 1u)
#define GITLAB_PAYLOAD_MAX 300u
#define GITLAB_WINDOW (6u + GITLAB_PAYLOAD_MAX + 1u + 3u + 9u + 1u)
#define SLACK_MAX 250u
#define SLACK_WINDOW (5u + SLACK_MAX + 1u)
#define STRIPE_WINDOW (8u + 247u + 1u)
#define AWS_WINDOW (4u + 16u + 1u)
#define GOOGLE_WINDOW (4u + 35u + 1u)
#define NPM_WINDOW (4u + 36u + 1u)
#define OPENAI_WINDOW (11u + 200u + 1u) /* sk-svcacct- is the longest prefix */
#define ANTHROPIC_WINDOW (7u + 200u + 1u)
/* Windows of the unbounded shapes: a cap on what the engine must hold. */
#define JWT_WINDOW 8192u
#define PEM_WINDOW 65536u
#define URL_WINDOW 16384u
#define AUTH_WINDOW 16384u

typedef enum sbx__shape_result shape_result;

/* ASCII classes by hand (<ctype.h> would follow the locale), as bit masks
 * over one table so the matchers' loops need no calls. */
enum {
    K_DIGIT = 1, K_LOWER = 2, K_UPPER = 4, K_UNDER = 8, K_DASH = 16,
    K_B32 = 32, /* A-Z 2-7 */
    K_L36 = 64, /* 0-9 a-z */
};
#define K_ALPHA (K_LOWER | K_UPPER)
#define K_ALNUM (K_DIGIT | K_ALPHA)
#define K_WORD (K_ALNUM | K_UNDER)
#define K_B64URL (K_WORD | K_DASH)
#define K_SLACK (K_ALNUM | K_DASH)
static const uint8_t kclass[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0,
    65, 65, 97, 97, 97, 97, 97, 97, 65, 65, 0, 0, 0, 0, 0, 0,
    0, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36,
    36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 36, 0, 0, 0, 0, 8,
    0, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66,
    66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 0, 0, 0, 0, 0,
};

static inline bool in(int c, unsigned mask)
{
    return c >= 0 && c < 128 && (kclass[c] & mask);
}
static bool is_digit(int c) { return in(c, K_DIGIT); }
static bool is_alpha(int c) { return in(c, K_ALPHA); }
static bool is_alnum(int c) { return in(c, K_ALNUM); }
static bool is_blank(int c) { return c == ' ' || c == '\t'; }

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
    size_t from = *i;

    for (;; (*i)++) {
        *c = peek(buf, len, *i, more);
        if (*c == BYTE_NEED)
            return false;
        if (*c == BYTE_END || !in(*c, cls))
            return true;
        if (*i - from == max) {
            (*i)++;
            return true;
        }
    }
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

static shape_result yes(size_t s, size_t e, size_t *start, size_t *end)
{
    *start = s;
    *end = e;
    return SBX__SHAPE_YES;
}

/* A fixed literal, then min..max bytes of body, as a maximal run of run. */
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

/* GitHub classic tokens (ghp_, gho_, ghu_, ghs_, ghr_): 36 alphanumerics. */
static shape_result match_github_classic(const char *buf, size_t len, int prev, bool more,
                                         size_t *start, size_t *end)
{
    const struct token_rule r = {4, 36, 36, K_ALNUM, K_WORD};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* GitHub fine-grained PATs: 82 of [A-Za-z0-9_], which includes the
 * 22 + '_' + 59 form GitHub issues. */
static shape_result match_github_fine(const char *buf, size_t len, int prev, bool more,
                                      size_t *start, size_t *end)
{
    const struct token_rule r = {11, 82, 82, K_WORD, K_WORD};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Stripe live secret and restricted keys. */
static shape_result match_stripe(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const struct token_rule r = {8, 24, 247, K_ALNUM, K_WORD};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* AWS access key ids: the prefix, then 16 base32 upper-case bytes. */
static shape_result match_aws(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    const struct token_rule r = {4, 16, 16, K_B32, K_WORD};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Google API keys. */
static shape_result match_google(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const struct token_rule r = {4, 35, 35, K_B64URL, K_B64URL};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* npm access tokens; npm_config_* and npm_package_* names fail on '_'. */
static shape_result match_npm(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    const struct token_rule r = {4, 36, 36, K_ALNUM, K_WORD};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Anthropic keys: sk-ant- then the kind and version (api03-, admin01-...)
 * and the secret, counted together. */
static shape_result match_anthropic(const char *buf, size_t len, int prev, bool more,
                                    size_t *start, size_t *end)
{
    const struct token_rule r = {7, 80, 200, K_B64URL, K_B64URL};
    return match_token(&r, buf, len, prev, more, start, end);
}

/*
 * OpenAI keys: sk-proj-, sk-svcacct-, sk-admin- then 20..200 base64url
 * bytes, or the legacy sk- then 48 alphanumerics. sk-ant- is Anthropic's:
 * NO here lets that shape's YES stand alone at the position.
 */
static shape_result match_openai(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const char *const named[] = {"sk-proj-", "sk-svcacct-", "sk-admin-"};
    const struct token_rule legacy = {3, 48, 48, K_ALNUM, K_B64URL};
    enum prefix_state p = has_prefix(buf, len, 0, "sk-ant-");
    bool partial = p == PFX_PARTIAL;

    if (p == PFX_YES || !prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        p = has_prefix(buf, len, 0, named[k]);
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
 * GitLab PATs: the legacy glpat- + 20 base64url bytes, or the routable form
 * glpat- + 27..300 base64url payload + '.' + [0-9a-z]{9} (2-byte length and
 * 7-byte CRC), optionally with a 2-byte version group: '.' [0-9a-z]{2} '.'
 * [0-9a-z]{9}. A '.' after either form is only punctuation.
 */
static shape_result match_gitlab(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    size_t i = 6, n, j, k;
    int c;

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, K_B64URL, GITLAB_PAYLOAD_MAX, &c))
        return SBX__SHAPE_MORE;
    n = i - 6;
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
 * Slack tokens: xox[abposre]- then 10..250 bytes of [A-Za-z0-9-] in
 * '-'-separated groups: at least two groups, none empty, the first numeric
 * (the team or app id every Slack token starts with), and a letter
 * somewhere. The numeric first group and the letter keep "xoxo-gossip-girl"
 * and "xoxo-2024-05-17" out.
 */
static shape_result match_slack(const char *buf, size_t len, int prev, bool more,
                                size_t *start, size_t *end)
{
    size_t i, n = 0, dashes = 0;
    bool letter = false;
    int c, last = '-';

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
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

    if (!prev_ok(prev, K_B64URL))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (c != '.' || i < 3 + 8)
        return SBX__SHAPE_NO;
    payload = ++i;
    switch (has_prefix(buf, len, payload, "eyJ")) {
    case PFX_NO:
        return SBX__SHAPE_NO;
    case PFX_PARTIAL:
        return more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
    case PFX_YES:
        break;
    }
    i += 3;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (i < payload + 3 + 8)
        return SBX__SHAPE_NO;
    if (c == BYTE_END && len >= JWT_WINDOW)
        return yes(0, len, start, end);
    if (c != '.')
        return SBX__SHAPE_NO;
    i++;
    if (!skip_class(buf, len, &i, more, K_B64URL, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    return yes(0, i, start, end);
}

/* A PEM label at buf[at] ("RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"...)
 * and its closing "-----": *n is the length of both. Only private-key
 * labels: certificates and public keys are not secrets. */
static shape_result pem_label(const char *buf, size_t len, size_t at, bool more, size_t *n)
{
    size_t i = at;
    int c;
    for (;; i++) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || i - at > 64)
            return SBX__SHAPE_NO;
        if (!(is_digit(c) || (c >= 'A' && c <= 'Z') || c == ' '))
            break;
    }
    switch (has_prefix(buf, len, i, "-----")) {
    case PFX_NO:
        return SBX__SHAPE_NO;
    case PFX_PARTIAL:
        return more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
    case PFX_YES:
        break;
    }
    if (!memmem(buf + at, i - at, "PRIVATE KEY", 11))
        return SBX__SHAPE_NO;
    *n = i + 5 - at;
    return SBX__SHAPE_YES;
}

static bool is_b64(int c)
{
    return is_alnum(c) || c == '+' || c == '/' || c == '=';
}

bool sbx__pem_body_byte(int c)
{
    /* base64, line breaks and spaces (a key flattened into one line), and
     * the punctuation of header lines (Proc-Type: 4,ENCRYPTED, DEK-Info). */
    return is_b64(c) || c == '\n' || c == '\r' || c == ' ' || c == '\t' || c == ':' || c == ',' || c == '-';
}

/*
 * PEM private keys: "-----BEGIN <label>-----", a body, and the first
 * "-----END <label>-----" (any private-key label on either: a mismatched
 * pair is still a key). Lines may be real or JSON-escaped ("\n"). The
 * body may hold only base64, line breaks, spaces and header punctuation:
 * anything else (a '.', a quote) means the key ended without its END line
 * (cut, truncated, or a BEGIN line quoted in a document). Then the
 * redaction ends after the last line of pure base64, provided there was
 * real key material (a run of 16 or more base64 characters); otherwise it
 * is no key. A body longer than the window is redacted to the window's
 * end, and the stream goes on swallowing it (SBX__CONT_PEM).
 */
static shape_result match_pem(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t n = 0, i, run = 0, maxrun = 0, line_pure_end = 0, line_start;
    bool pure = true; /* the current line is base64 only so far */
    shape_result r;
    int c;

    (void)prev;
    r = pem_label(buf, len, 11, more, &n);
    if (r != SBX__SHAPE_YES)
        return r;
    line_start = i = 11 + n;
    for (;;) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END)
            break;
        if (c == '-') {
            switch (has_prefix(buf, len, i, "-----END ")) {
            case PFX_YES:
                r = pem_label(buf, len, i + 9, more, &n);
                if (r == SBX__SHAPE_YES)
                    return yes(0, i + 9 + n, start, end);
                if (r == SBX__SHAPE_MORE)
                    return r;
                break;
            case PFX_PARTIAL:
                if (more)
                    return SBX__SHAPE_MORE;
                break;
            case PFX_NO:
                break;
            }
        }
        if (c == '\\') { /* an escaped line break, or the end of the body */
            int d = peek(buf, len, i + 1, more);
            if (d == BYTE_NEED)
                return SBX__SHAPE_MORE;
            if (d != 'n' && d != 'r')
                break;
            c = '\n';
            i++;
        } else if (!sbx__pem_body_byte(c)) {
            break;
        }
        if (is_b64(c)) {
            if (++run > maxrun)
                maxrun = run;
            i++;
            continue;
        }
        run = 0;
        if (c == '\n' || c == '\r') {
            if (pure && i > line_start)
                line_pure_end = i;
            pure = true;
            line_start = i + 1;
        } else {
            pure = false;
        }
        i++;
    }
    if (c == BYTE_END && len >= PEM_WINDOW)
        return yes(0, len, start, end); /* the rest is swallowed by the stream */
    if (pure && i > line_start)
        line_pure_end = i;
    if (maxrun < 16 || !line_pure_end)
        return SBX__SHAPE_NO;
    return yes(0, line_pure_end, start, end);
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

/* Whether buf[i..] starts "%XY" for the two hex digits of enc (any case);
 * BYTE_NEED when it cannot tell yet. */
static int pct_is(const char *buf, size_t len, size_t i, bool more, const char *enc)
{
    for (size_t k = 0; k < 3; k++) {
        int c = peek(buf, len, i + k, more);
        if (c == BYTE_NEED)
            return BYTE_NEED;
        if (c == BYTE_END || (c | (k ? 0x20 : 0)) != (enc[k] | (k ? 0x20 : 0)))
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
    size_t i, from, at = 0, colon = 0;
    bool pct = buf[0] == '%';
    int c;

    (void)prev;
    from = pct ? 9 : buf[1] == '\\' ? 5 : 3;
    for (i = from;; i++) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || url_stop(c) || (pct && c == '&'))
            break;
        /* Before the password's ':', a list separator or a quote ends the
         * URL (CSV, SQL): a user name does not hold one. */
        if (!colon && (c == ',' || c == ';' || c == '\''))
            break;
        if (pct && c == '%') {
            int a = pct_is(buf, len, i, more, "%40"), k = pct_is(buf, len, i, more, "%3A"),
                sl = pct_is(buf, len, i, more, "%2F"), q = pct_is(buf, len, i, more, "%3F"),
                h = pct_is(buf, len, i, more, "%23");
            if (a == BYTE_NEED)
                return SBX__SHAPE_MORE;
            if (sl == 1 || q == 1 || h == 1)
                break;
            if (a == 1)
                at = i;
            else if (k == 1 && !colon)
                colon = i;
            continue;
        }
        if (!pct && c == '@')
            at = i;
        else if (!pct && c == ':' && !colon)
            colon = i;
    }
    if (!at || !colon || colon > at || at == colon + (pct ? 3 : 1))
        return SBX__SHAPE_NO;
    return yes(from, at, start, end);
}

/* Where a header name may start: a line, a prompt ("> " from curl -v), a
 * quote (JSON, a Python dict, -H '...'), a list or object separator, a
 * query string (?authorization=), an environment name (HTTP_AUTHORIZATION),
 * an assignment (git config's http.extraheader=AUTHORIZATION: ...).
 * A letter, digit or '-' before it means another word (X-Authorization:,
 * preauthorization:) and is NO. */
static bool auth_prev_ok(int prev)
{
    return prev < 0 || (prev != 0 && strchr("\n\r \t<>\"',{[(;?&_=", prev));
}

static bool is_scheme(int c)
{
    return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '+';
}

/*
 * Authorization: and Proxy-Authorization: values, in the forms programs
 * print them: a header line (curl -v, HTTP dumps, YAML), a quoted header
 * line (-H 'Authorization: ...'), a JSON key or a Python dict key
 * ("Authorization": "..."), an environment or query assignment
 * (HTTP_AUTHORIZATION=..., ?authorization=...). The value ends at a line
 * break (also an escaped one: "\n" inside a JSON string), at its closing
 * quote, or at the end of the text or window.
 *
 * Only what holds the credentials is redacted, so that prose mentioning the
 * header survives: a single word is redacted whole; "scheme credentials"
 * (Bearer, Basic, token, Negotiate...: any scheme word) has its
 * credentials redacted when they are one word (token68) or a list of
 * auth-params (Digest username="...", AWS4-HMAC-SHA256 Credential=...);
 * anything else ("the Authorization: header is required") is not a value.
 */
static shape_result match_auth(const char *buf, size_t len, int prev, bool more,
                               size_t *start, size_t *end)
{
    size_t i = (buf[0] == 'p' || buf[0] == 'P') ? 19 : 13, e, v, w, s, t, k;
    int keyq = BYTE_END, endq = BYTE_END, c;

    if (!auth_prev_ok(prev))
        return SBX__SHAPE_NO;
    /* The name is a word of its own. */
    c = peek(buf, len, i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if ((c == '"' || c == '\'') && c == prev) { /* a quoted key */
        keyq = c;
        c = peek(buf, len, ++i, more);
    }
    while (is_blank(c))
        c = peek(buf, len, ++i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c != ':' && c != '=')
        return SBX__SHAPE_NO;
    c = peek(buf, len, ++i, more);
    while (is_blank(c))
        c = peek(buf, len, ++i, more);
    if (c == BYTE_NEED)
        return SBX__SHAPE_MORE;
    if (c == '"' || c == '\'' || c == '[') { /* a quoted value; Go prints a header map's values in [] */
        endq = c == '[' ? ']' : c;
        i++;
    } else if (keyq == BYTE_END && (prev == '"' || prev == '\'')) {
        endq = prev; /* the whole header line is quoted */
    }
    for (e = i;; e++) {
        c = peek(buf, len, e, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || c == '\n' || c == '\r' || c == endq)
            break;
        if (c == '\\') {
            int d = peek(buf, len, e + 1, more);
            if (d == BYTE_NEED)
                return SBX__SHAPE_MORE;
            if (d == 'n' || d == 'r' || d == BYTE_END)
                break; /* an escaped line break ends a header inside a string */
            e++;       /* an escaped character belongs to the value */
        }
    }
    for (v = i; v < e && is_blank((unsigned char)buf[v]); v++)
        ;
    for (t = e; t > v && is_blank((unsigned char)buf[t - 1]); t--)
        ;
    if (t == v)
        return SBX__SHAPE_NO;
    for (w = v; w < t && !is_blank((unsigned char)buf[w]); w++)
        ;
    if (w == t) /* one word: the credentials, unless a blank follows it (a scheme without them) */
        return t < e ? SBX__SHAPE_NO : yes(v, t, start, end);
    for (k = v; k < w && is_scheme((unsigned char)buf[k]); k++)
        ;
    if (k < w)
        return SBX__SHAPE_NO; /* not a scheme word: prose */
    for (s = w; s < t && is_blank((unsigned char)buf[s]); s++)
        ;
    for (k = s; k < t && !is_blank((unsigned char)buf[k]) && buf[k] != '='; k++)
        ;
    if (k == t || buf[k] == '=')
        return yes(s, t, start, end); /* token68, or auth-params */
    return SBX__SHAPE_NO;
}

const sbx__shape sbx__shapes[] = {
    {"github", "ghp_", false, GH_CLASSIC_WINDOW, match_github_classic, SBX__CONT_NONE},
    {"github", "gho_", false, GH_CLASSIC_WINDOW, match_github_classic, SBX__CONT_NONE},
    {"github", "ghu_", false, GH_CLASSIC_WINDOW, match_github_classic, SBX__CONT_NONE},
    {"github", "ghs_", false, GH_CLASSIC_WINDOW, match_github_classic, SBX__CONT_NONE},
    {"github", "ghr_", false, GH_CLASSIC_WINDOW, match_github_classic, SBX__CONT_NONE},
    {"github", "github_pat_", false, GH_FINE_WINDOW, match_github_fine, SBX__CONT_NONE},
    {"gitlab", "glpat-", false, GITLAB_WINDOW, match_gitlab, SBX__CONT_NONE},
    {"slack", "xox", false, SLACK_WINDOW, match_slack, SBX__CONT_NONE},
    {"stripe", "sk_live_", false, STRIPE_WINDOW, match_stripe, SBX__CONT_NONE},
    {"stripe", "rk_live_", false, STRIPE_WINDOW, match_stripe, SBX__CONT_NONE},
    {"aws", "AKIA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "ASIA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "AGPA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "AIDA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "AROA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "ANPA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "ANVA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"aws", "AIPA", false, AWS_WINDOW, match_aws, SBX__CONT_NONE},
    {"google", "AIza", false, GOOGLE_WINDOW, match_google, SBX__CONT_NONE},
    {"npm", "npm_", false, NPM_WINDOW, match_npm, SBX__CONT_NONE},
    {"openai", "sk-", false, OPENAI_WINDOW, match_openai, SBX__CONT_NONE},
    {"anthropic", "sk-ant-", false, ANTHROPIC_WINDOW, match_anthropic, SBX__CONT_NONE},
    {"jwt", "eyJ", false, JWT_WINDOW, match_jwt, SBX__CONT_JWT},
    {"private_key", "-----BEGIN ", false, PEM_WINDOW, match_pem, SBX__CONT_PEM},
    {"url_credentials", "://", false, URL_WINDOW, match_url, SBX__CONT_NONE},
    {"url_credentials", ":\\/\\/", false, URL_WINDOW, match_url, SBX__CONT_NONE},
    {"url_credentials", "%3a%2f%2f", true, URL_WINDOW, match_url, SBX__CONT_NONE},
    {"authorization", "authorization", true, AUTH_WINDOW, match_auth, SBX__CONT_LINE},
    {"authorization", "proxy-authorization", true, AUTH_WINDOW, match_auth, SBX__CONT_LINE},
};

const size_t sbx__nshapes = sizeof sbx__shapes / sizeof sbx__shapes[0];
