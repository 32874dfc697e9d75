/* SPDX-License-Identifier: MIT */
/* redact_shapes: the credential shapes the redactor recognises by their form alone. */
#include "redact_int.h"

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
#define URL_WINDOW 4096u
#define AUTH_WINDOW 16384u

typedef enum sbx__shape_result shape_result;

/* ASCII classes by hand: <ctype.h> would follow the locale. */
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(int c) { return is_digit(c) || is_alpha(c); }
static bool is_word(int c) { return is_alnum(c) || c == '_'; }
static bool is_b64url(int c) { return is_word(c) || c == '-'; }
static bool is_b32upper(int c) { return (c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7'); }
static bool is_lower36(int c) { return is_digit(c) || (c >= 'a' && c <= 'z'); }
static bool is_blank(int c) { return c == ' ' || c == '\t'; }

static int peek(const char *buf, size_t len, size_t i, bool more)
{
    if (i < len)
        return (unsigned char)buf[i];
    return more ? BYTE_NEED : BYTE_END;
}

/* Whether prev may sit before a token whose run set is run. */
static bool prev_ok(int prev, bool (*run)(int))
{
    return prev < 0 || !run(prev);
}

/*
 * Advance *i over at most max + 1 bytes of cls, leaving in *c the byte that
 * stopped it (BYTE_END at the end of the text). Stopping after max + 1 lets a
 * caller say NO to an overlong run without waiting for its end. False when
 * the next byte is still to come.
 */
static bool skip_class(const char *buf, size_t len, size_t *i, bool more, bool (*cls)(int),
                       size_t max, int *c)
{
    size_t from = *i;

    for (;; (*i)++) {
        *c = peek(buf, len, *i, more);
        if (*c == BYTE_NEED)
            return false;
        if (*c == BYTE_END || !cls(*c))
            return true;
        if (*i - from == max) {
            (*i)++;
            return true;
        }
    }
}

static bool all_class(const char *buf, size_t from, size_t to, bool (*cls)(int))
{
    for (size_t i = from; i < to; i++)
        if (!cls((unsigned char)buf[i]))
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
    bool (*body)(int);
    bool (*run)(int);
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
    if (i - r->prefix > r->max || i - r->prefix < r->min || (c >= 0 && r->run(c)))
        return SBX__SHAPE_NO;
    return yes(0, i, start, end);
}

/* GitHub classic tokens (ghp_, gho_, ghu_, ghs_, ghr_): 36 alphanumerics. */
static shape_result match_github_classic(const char *buf, size_t len, int prev, bool more,
                                         size_t *start, size_t *end)
{
    const struct token_rule r = {4, 36, 36, is_alnum, is_word};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* GitHub fine-grained PATs: 82 of [A-Za-z0-9_], which includes the
 * 22 + '_' + 59 form GitHub issues. */
static shape_result match_github_fine(const char *buf, size_t len, int prev, bool more,
                                      size_t *start, size_t *end)
{
    const struct token_rule r = {11, 82, 82, is_word, is_word};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Stripe live secret and restricted keys. */
static shape_result match_stripe(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const struct token_rule r = {8, 24, 247, is_alnum, is_word};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* AWS access key ids: the prefix, then 16 base32 upper-case bytes. */
static shape_result match_aws(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    const struct token_rule r = {4, 16, 16, is_b32upper, is_word};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Google API keys. */
static shape_result match_google(const char *buf, size_t len, int prev, bool more,
                                 size_t *start, size_t *end)
{
    const struct token_rule r = {4, 35, 35, is_b64url, is_b64url};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* npm access tokens; npm_config_* and npm_package_* names fail on '_'. */
static shape_result match_npm(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    const struct token_rule r = {4, 36, 36, is_alnum, is_word};
    return match_token(&r, buf, len, prev, more, start, end);
}

/* Anthropic keys: sk-ant- then the kind and version (api03-, admin01-...)
 * and the secret, counted together. */
static shape_result match_anthropic(const char *buf, size_t len, int prev, bool more,
                                    size_t *start, size_t *end)
{
    const struct token_rule r = {7, 80, 200, is_b64url, is_b64url};
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
    const struct token_rule legacy = {3, 48, 48, is_alnum, is_b64url};
    enum prefix_state p = has_prefix(buf, len, 0, "sk-ant-");
    bool partial = p == PFX_PARTIAL;

    if (p == PFX_YES || !prev_ok(prev, is_b64url))
        return SBX__SHAPE_NO;
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        p = has_prefix(buf, len, 0, named[k]);
        if (p == PFX_YES) {
            const struct token_rule r = {strlen(named[k]), 20, 200, is_b64url, is_b64url};
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

    if (!prev_ok(prev, is_b64url))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, is_b64url, GITLAB_PAYLOAD_MAX, &c))
        return SBX__SHAPE_MORE;
    n = i - 6;
    if (n == 20)
        return yes(0, i, start, end);
    if (n < 27 || n > GITLAB_PAYLOAD_MAX || c != '.')
        return SBX__SHAPE_NO;
    j = k = i + 1;
    if (!skip_class(buf, len, &k, more, is_b64url, 9, &c))
        return SBX__SHAPE_MORE;
    if (k - j == 9 && all_class(buf, j, k, is_lower36))
        return yes(0, k, start, end);
    if (k - j != 2 || c != '.' || !all_class(buf, j, k, is_lower36))
        return SBX__SHAPE_NO;
    j = k = k + 1;
    if (!skip_class(buf, len, &k, more, is_b64url, 9, &c))
        return SBX__SHAPE_MORE;
    if (k - j == 9 && all_class(buf, j, k, is_lower36))
        return yes(0, k, start, end);
    return SBX__SHAPE_NO;
}

static bool is_slack(int c) { return is_alnum(c) || c == '-'; }

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

    if (!prev_ok(prev, is_b64url))
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
        if (c == BYTE_END || !is_slack(c))
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

    if (!prev_ok(prev, is_b64url))
        return SBX__SHAPE_NO;
    if (!skip_class(buf, len, &i, more, is_b64url, JWT_WINDOW, &c))
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
    if (!skip_class(buf, len, &i, more, is_b64url, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    if (i < payload + 3 + 8)
        return SBX__SHAPE_NO;
    if (c == BYTE_END && len >= JWT_WINDOW)
        return yes(0, len, start, end);
    if (c != '.')
        return SBX__SHAPE_NO;
    i++;
    if (!skip_class(buf, len, &i, more, is_b64url, JWT_WINDOW, &c))
        return SBX__SHAPE_MORE;
    return yes(0, i, start, end);
}

/* The PEM label at buf[at] ("RSA PRIVATE KEY-----"...), its length in *n. */
static shape_result pem_label(const char *buf, size_t len, size_t at, bool more, size_t *n)
{
    const char *const labels[] = {
        "PRIVATE KEY-----",     "RSA PRIVATE KEY-----",     "EC PRIVATE KEY-----",
        "DSA PRIVATE KEY-----", "OPENSSH PRIVATE KEY-----", "ENCRYPTED PRIVATE KEY-----",
    };
    bool partial = false;

    for (size_t k = 0; k < sizeof labels / sizeof labels[0]; k++) {
        enum prefix_state p = has_prefix(buf, len, at, labels[k]);
        if (p == PFX_YES) {
            *n = strlen(labels[k]);
            return SBX__SHAPE_YES;
        }
        partial = partial || p == PFX_PARTIAL;
    }
    return partial && more ? SBX__SHAPE_MORE : SBX__SHAPE_NO;
}

/*
 * PEM private keys: "-----BEGIN <label>" to the end of the first
 * "-----END <label>" after it, any private-key label on either (a
 * mismatched pair is still a key). Lines may be real or escaped ("\n" in
 * JSON), so the END marker is searched for as bytes. Any prev: the marker
 * is distinctive and often follows a quote or an escape. Without an END
 * within the window or before the stream ends, everything from BEGIN to
 * there is redacted: a cut or truncated key is still a key.
 */
static shape_result match_pem(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t n = 0, i;
    shape_result r;

    (void)prev;
    r = pem_label(buf, len, 11, more, &n);
    if (r != SBX__SHAPE_YES)
        return r;
    for (i = 11 + n; i < len; i++) {
        const char *dash = memchr(buf + i, '-', len - i);
        if (!dash)
            break;
        i = (size_t)(dash - buf);
        if (has_prefix(buf, len, i, "-----END ") != PFX_YES)
            continue;
        r = pem_label(buf, len, i + 9, more, &n);
        if (r == SBX__SHAPE_YES)
            return yes(0, i + 9 + n, start, end);
        if (r == SBX__SHAPE_MORE)
            return r;
    }
    if (more)
        return SBX__SHAPE_MORE;
    return yes(0, len, start, end);
}

/* Bytes that end a URL's authority, plus those never in a userinfo, so
 * JSON, HTML, Markdown and ${VAR} templates around a URL stay outside. */
static bool url_stop(int c)
{
    return c <= ' ' || c == 0x7f || (c != 0 && strchr("/?#\"<>`\\{}|", c));
}

/*
 * URL credentials: after "://", the userinfo is everything up to the last
 * '@' before the authority ends (as WHATWG parses a raw '@' in a password),
 * and it must hold a ':' followed by a non-empty password. Only the
 * userinfo is redacted; the scheme is not visible (prev only), any is taken.
 */
static shape_result match_url(const char *buf, size_t len, int prev, bool more,
                              size_t *start, size_t *end)
{
    size_t i, at = 0, colon = 0;
    int c;

    (void)prev;
    for (i = 3;; i++) {
        c = peek(buf, len, i, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || url_stop(c))
            break;
        if (c == '@')
            at = i;
        else if (c == ':' && !colon)
            colon = i;
    }
    if (!at || !colon || colon > at || at == colon + 1)
        return SBX__SHAPE_NO;
    return yes(3, at, start, end);
}

/* Header names start a line or follow a prompt ("> " from curl -v), a quote
 * or a list separator; a letter, digit, '_' or '-' before the name means
 * another word (X-Authorization:, preauthorization:) and is NO. */
static bool auth_prev_ok(int prev)
{
    return prev < 0 || (prev != 0 && strchr("\n\r \t<>\"',", prev));
}

/*
 * Authorization: and Proxy-Authorization: values: after the colon and
 * blanks, an optional scheme word ([A-Za-z-]+ then a blank) is kept, and
 * the rest of the line is redacted, trailing blanks excluded. The line ends
 * at CR, LF, the end of the text or window, or, when the header follows a
 * quote, at the same quote (curl -H 'Authorization: ...'). A lone word is a
 * value, not a scheme: it may be a letters-only token.
 */
static shape_result match_auth(const char *buf, size_t len, int prev, bool more,
                               size_t *start, size_t *end)
{
    const char *colon = memchr(buf, ':', len);
    int quote = prev == '"' || prev == '\'' ? prev : BYTE_END;
    size_t i, e, v, w, s, t;
    int c;

    if (!auth_prev_ok(prev) || !colon)
        return SBX__SHAPE_NO;
    i = (size_t)(colon - buf) + 1;
    for (e = i;; e++) {
        c = peek(buf, len, e, more);
        if (c == BYTE_NEED)
            return SBX__SHAPE_MORE;
        if (c == BYTE_END || c == '\n' || c == '\r' || c == quote)
            break;
    }
    for (v = i; v < e && is_blank((unsigned char)buf[v]); v++)
        ;
    for (w = v; w < e && (is_alpha((unsigned char)buf[w]) || buf[w] == '-'); w++)
        ;
    s = v;
    if (w > v && w < e && is_blank((unsigned char)buf[w]))
        for (s = w; s < e && is_blank((unsigned char)buf[s]); s++)
            ;
    for (t = e; t > s && is_blank((unsigned char)buf[t - 1]); t--)
        ;
    if (t == s)
        return SBX__SHAPE_NO;
    return yes(s, t, start, end);
}

const sbx__shape sbx__shapes[] = {
    {"github", "ghp_", false, GH_CLASSIC_WINDOW, match_github_classic},
    {"github", "gho_", false, GH_CLASSIC_WINDOW, match_github_classic},
    {"github", "ghu_", false, GH_CLASSIC_WINDOW, match_github_classic},
    {"github", "ghs_", false, GH_CLASSIC_WINDOW, match_github_classic},
    {"github", "ghr_", false, GH_CLASSIC_WINDOW, match_github_classic},
    {"github", "github_pat_", false, GH_FINE_WINDOW, match_github_fine},
    {"gitlab", "glpat-", false, GITLAB_WINDOW, match_gitlab},
    {"slack", "xox", false, SLACK_WINDOW, match_slack},
    {"stripe", "sk_live_", false, STRIPE_WINDOW, match_stripe},
    {"stripe", "rk_live_", false, STRIPE_WINDOW, match_stripe},
    {"aws", "AKIA", false, AWS_WINDOW, match_aws},
    {"aws", "ASIA", false, AWS_WINDOW, match_aws},
    {"aws", "AGPA", false, AWS_WINDOW, match_aws},
    {"aws", "AIDA", false, AWS_WINDOW, match_aws},
    {"aws", "AROA", false, AWS_WINDOW, match_aws},
    {"aws", "ANPA", false, AWS_WINDOW, match_aws},
    {"aws", "ANVA", false, AWS_WINDOW, match_aws},
    {"aws", "AIPA", false, AWS_WINDOW, match_aws},
    {"google", "AIza", false, GOOGLE_WINDOW, match_google},
    {"npm", "npm_", false, NPM_WINDOW, match_npm},
    {"openai", "sk-", false, OPENAI_WINDOW, match_openai},
    {"anthropic", "sk-ant-", false, ANTHROPIC_WINDOW, match_anthropic},
    {"jwt", "eyJ", false, JWT_WINDOW, match_jwt},
    {"private_key", "-----BEGIN ", false, PEM_WINDOW, match_pem},
    {"url_credentials", "://", false, URL_WINDOW, match_url},
    {"authorization", "authorization:", true, AUTH_WINDOW, match_auth},
    {"authorization", "proxy-authorization:", true, AUTH_WINDOW, match_auth},
};

const size_t sbx__nshapes = sizeof sbx__shapes / sizeof sbx__shapes[0];
