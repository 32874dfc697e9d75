/* SPDX-License-Identifier: MIT */
/*
 * netpolicy: a sandbox's network policy (protocol §4.9), its validation, the
 * presets per job type and its JSON. Everything that enters is checked and
 * normalised here (lowercase names, canonical CIDRs), so what leaves as JSON
 * is what the caller meant or nothing. Header values are secrets: stored
 * apart, wiped when replaced or freed, never quoted in a message; URLs are
 * quoted with their user-info and query hidden.
 */
#include "util/internal.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/jobtype.h"
#include "policy/netpolicy_sdk.h"
#include "util/str.h"

/* Bounds on what one policy may hold: far above any real policy, low
 * enough that a hostile JSON document cannot make us hold much. */
#define NP_MAX_LIST 4096       /* entries of each list */
#define NP_MAX_RULES 256       /* injection rules */
#define NP_MAX_HEADERS 64      /* headers per rule */
#define NP_MAX_NAME 256        /* header name bytes */
#define NP_MAX_VALUE 8192      /* header value bytes */
#define NP_MAX_JSON (1u << 20) /* load_json input bytes */
#define NP_MAX_INPUT 4096      /* preset input value bytes */
#define NP_MAX_REGISTRIES 16   /* "registry" inputs of deps.install */

#define DOMAIN_MAX 253
#define DOMAIN_BUF (DOMAIN_MAX + 1)
#define CIDR_BUF (INET6_ADDRSTRLEN + 16) /* address, "/", any int */
#define SHOW_BUF 200

/* What a domain may be: D_WILD allows a leading "*." label, D_STAR "*". */
enum { D_WILD = 1u, D_STAR = 2u };

struct rule {
    char *domain;
    sbx__strlist names;  /* lowercase */
    sbx__strlist values; /* secrets, parallel to names */
};

/* The content of a policy, apart from the handle, so that a preset or a
 * JSON load is built aside and swapped in only when it is complete. */
struct body {
    int mode;
    sbx__strlist domains, allow, deny;
    struct rule *rules;
    size_t nrules, caprules;
};

struct sbx_netpolicy {
    struct body b;
    sbx__err err;
};

/* ---- messages --------------------------------------------------------------------- */

/* A printable, bounded rendering of [s, s+n) to quote in a message: bytes
 * outside printable ASCII become \xNN, and a long value is cut with "...". */
static const char *show(char *buf, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o + 8 > cap) { /* room for "..." and its NUL is left */
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

/* Record an SBX_E_INVALID_ARG as "what: message" (just the message when what is NULL). */
static sbx_status SBX__PRINTF(3, 4) bad(sbx__err *e, const char *what, const char *fmt, ...)
{
    char msg[SBX__ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sbx__err_set(e, SBX_E_INVALID_ARG, "%s%s%s", what ? what : "", what ? ": " : "", msg);
}

/* Index of the first byte that is a control character (NUL and DEL too), or -1. */
static long find_ctl(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return (long)i;
    }
    return -1;
}

static bool is_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Append s to the string in buf (of cap bytes, *o used), cutting it if full. */
static void append(char *buf, size_t cap, size_t *o, const char *s)
{
    size_t l = strlen(s);
    if (*o + l >= cap)
        l = cap - *o - 1;
    memcpy(buf + *o, s, l);
    *o += l;
    buf[*o] = '\0';
}

/* ---- domain names ----------------------------------------------------------------- */

/* [s, s+n) as an address, if it is one (brackets around IPv6 allowed), with
 * the CIDR that covers it alone; false if it is not an address. */
static bool ip_literal(const char *s, size_t n, char cidr[CIDR_BUF])
{
    char a[INET6_ADDRSTRLEN + 3];
    unsigned char bin[16];
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof a - 1)
        return false;
    memcpy(a, s, n);
    a[n] = '\0';
    if (inet_pton(AF_INET, a, bin) == 1)
        return inet_ntop(AF_INET, bin, a, sizeof a) && snprintf(cidr, CIDR_BUF, "%s/32", a) > 0;
    if (inet_pton(AF_INET6, a, bin) == 1)
        return inet_ntop(AF_INET6, bin, a, sizeof a) && snprintf(cidr, CIDR_BUF, "%s/128", a) > 0;
    return false;
}

bool sbx__netpolicy_is_address(const char *h, size_t n)
{
    char cidr[CIDR_BUF];
    if (n > 1 && h[n - 1] == '.' && h[n - 2] != '.')
        n--;
    return ip_literal(h, n, cidr);
}

/* Why the dotted labels [s, s+n) are not a host name, or NULL; *nlabels
 * gets their count. */
static const char *labels_why(const char *s, size_t n, size_t *nlabels, char *why, size_t cap)
{
    size_t start = 0, count = 0;
    bool all_digits = true;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!is_alnum(s[i]) && s[i] != '-') {
                snprintf(why, cap, "the character '%c' is not allowed (letters, digits, '-' and '.' only)", s[i]);
                return why;
            }
            all_digits = all_digits && s[i] >= '0' && s[i] <= '9';
            continue;
        }
        if (i == start)
            return "it has an empty label (a leading '.' or '..')";
        if (i - start > 63)
            return "a label is longer than 63 characters";
        if (s[start] == '-' || s[i - 1] == '-') {
            snprintf(why, cap, "the label '%.*s' starts or ends with '-'", (int)(i - start), s + start);
            return why;
        }
        count++;
        if (i < n)
            all_digits = true;
        start = i + 1;
    }
    *nlabels = count;
    return all_digits ? "the last label is all digits, which no domain name has" : NULL;
}

/* Why [s, s+*n) is not an acceptable name under flags, or NULL. Drops a
 * trailing dot from *n. */
static const char *domain_why(const char *s, size_t *n, unsigned flags, char *why, size_t cap)
{
    char cidr[CIDR_BUF];
    size_t off = 0, nlabels = 0;
    const char *w;

    if (*n == 0)
        return "it is empty";
    if (memchr(s, '\0', *n))
        return "it has a NUL byte";
    if (find_ctl(s, *n) >= 0)
        return "it has a control character";
    if (!is_ascii(s, *n))
        return "it has a non-ASCII character (write internationalised names in their xn-- form)";
    /* One trailing dot (the absolute form) is dropped; "*." stays invalid. */
    if (*n > 1 && s[*n - 1] == '.' && s[*n - 2] != '.' && !(*n == 2 && s[0] == '*'))
        (*n)--;
    if (ip_literal(s, *n, cidr)) {
        snprintf(why, cap, "it is an IP address: allow it as a CIDR (%s)", cidr);
        return why;
    }
    if (*n == 1 && s[0] == '*')
        return flags & D_STAR ? NULL : "'*' (every domain) is not allowed here";
    if (*n >= 2 && s[0] == '*' && s[1] == '.') {
        if (!(flags & D_WILD))
            return "wildcards are not allowed here";
        off = 2;
    }
    if (memchr(s + off, '*', *n - off))
        return "'*' is only allowed as the whole first label, as in *.example.org";
    if (*n > DOMAIN_MAX)
        return "it is longer than 253 characters";
    if ((w = labels_why(s + off, *n - off, &nlabels, why, cap)) != NULL)
        return w;
    if (nlabels < 2)
        return off ? "a wildcard over a top-level domain is too broad"
                   : "it is a single-label name: give the fully qualified name (such as db.example.com)";
    return NULL;
}

/* Validate and normalise a domain name into out (lowercase, no trailing dot). */
static sbx_status domain_norm(sbx__err *e, const char *what, const char *s, size_t n, unsigned flags,
                              char out[DOMAIN_BUF])
{
    char sh[SHOW_BUF], why[160];
    size_t len = n;
    const char *w = domain_why(s, &len, flags, why, sizeof why);
    if (w)
        return bad(e, what, "'%s' is not a domain name: %s", show(sh, sizeof sh, s, n), w);
    for (size_t i = 0; i < len; i++)
        out[i] = lower(s[i]);
    out[len] = '\0';
    return SBX_OK;
}

/* ---- CIDRs ------------------------------------------------------------------------ */

/* The prefix length in [s, s+n): decimal, no sign or leading zero, <= max; -1 if not. */
static int parse_prefix(const char *s, size_t n, unsigned max)
{
    unsigned v = 0;
    if (n == 0 || n > 3 || (n > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v <= max ? (int)v : -1;
}

/* Clear the host bits of bin beyond prefix; whether any was set. */
static bool clear_host_bits(unsigned char *bin, unsigned bytes, unsigned prefix)
{
    bool set = false;
    for (unsigned i = 0; i < bytes; i++) {
        unsigned keep = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
        unsigned char mask = (unsigned char)(0xffu << (8 - keep));
        if (keep == 0)
            mask = 0;
        set = set || (bin[i] & (unsigned char)~mask);
        bin[i] &= mask;
    }
    return set;
}

/* Validate and normalise a CIDR (or a bare address) into out. */
static sbx_status cidr_norm(sbx__err *e, const char *what, const char *s, size_t n, char out[CIDR_BUF])
{
    char sh[SHOW_BUF], a[INET6_ADDRSTRLEN + 1];
    unsigned char bin[16];
    const char *slash = memchr(s, '/', n);
    size_t alen = slash ? (size_t)(slash - s) : n;
    int af, prefix;
    unsigned max;

    show(sh, sizeof sh, s, n);
    if (n == 0)
        return bad(e, what, "'' is not a CIDR: it is empty");
    if (memchr(s, '\0', n) || find_ctl(s, n) >= 0 || !is_ascii(s, n))
        return bad(e, what, "'%s' is not a CIDR: it has a control or non-ASCII character", sh);
    if (alen == 0 || alen >= sizeof a)
        return bad(e, what, "'%s' is not a CIDR: no IPv4 or IPv6 address before the '/'", sh);
    memcpy(a, s, alen);
    a[alen] = '\0';
    af = memchr(a, ':', alen) ? AF_INET6 : AF_INET;
    max = af == AF_INET ? 32 : 128;
    if (inet_pton(af, a, bin) != 1)
        return bad(e, what, "'%s' is not a CIDR: '%s' is not an IPv4 or IPv6 address", sh, show(a, sizeof a, s, alen));
    prefix = slash ? parse_prefix(slash + 1, n - alen - 1, max) : (int)max;
    if (prefix < 0)
        return bad(e, what, "'%s' is not a CIDR: the prefix length must be a number from 0 to %u", sh, max);
    if (clear_host_bits(bin, max / 8, (unsigned)prefix)) {
        inet_ntop(af, bin, a, sizeof a);
        return bad(e, what, "'%s' has host bits set: the network is %s/%d", sh, a, prefix);
    }
    inet_ntop(af, bin, a, sizeof a);
    snprintf(out, CIDR_BUF, "%s/%d", a, prefix);
    return SBX_OK;
}

/* ---- headers ---------------------------------------------------------------------- */

static bool is_tchar(char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Headers that route or frame the request: setting them would break it or
 * smuggle another one, so the proxy's own values must stand. */
static const char *const framing_headers[] = {
    "connection", "content-length", "host", "keep-alive", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade",
};

/* Validate a header name (RFC 7230 token) and lowercase it into out. */
static sbx_status name_norm(sbx__err *e, const char *what, const char *s, size_t n, char out[NP_MAX_NAME + 1])
{
    char sh[SHOW_BUF];
    show(sh, sizeof sh, s, n);
    if (n == 0)
        return bad(e, what, "the header name is empty");
    if (n > NP_MAX_NAME)
        return bad(e, what, "the header name '%s' is longer than %d bytes", sh, NP_MAX_NAME);
    for (size_t i = 0; i < n; i++) {
        if (!is_tchar(s[i]))
            return bad(e, what, "'%s' is not a header name: byte %zu is not a token character", sh, i);
        out[i] = lower(s[i]);
    }
    out[n] = '\0';
    for (size_t i = 0; i < SBX__ARRAY_LEN(framing_headers); i++)
        if (strcmp(out, framing_headers[i]) == 0)
            return bad(e, what, "the header '%s' cannot be injected: it routes or frames the request", out);
    return SBX_OK;
}

/* Validate a header value; the value itself is never quoted. */
static sbx_status value_check(sbx__err *e, const char *what, const char *name, const char *v, size_t n)
{
    if (n > NP_MAX_VALUE)
        return bad(e, what, "the value of header '%s' is longer than %d bytes", name, NP_MAX_VALUE);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '\0')
            return bad(e, what, "the value of header '%s' has a NUL byte", name);
        if (c == '\r' || c == '\n')
            return bad(e, what, "the value of header '%s' has a CR or LF", name);
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return bad(e, what, "the value of header '%s' has a control character", name);
    }
    if (!sbx__utf8_valid(v, n))
        return bad(e, what, "the value of header '%s' is not valid UTF-8", name);
    return SBX_OK;
}

/* ---- the body --------------------------------------------------------------------- */

static void rule_free(struct rule *r)
{
    sbx__free(r->domain);
    sbx__strlist_clear(&r->names);
    sbx__strlist_wipe(&r->values);
}

/* Drop every rule, wiping header values; the mode stays. */
static void body_clear(struct body *b)
{
    sbx__strlist_clear(&b->domains);
    sbx__strlist_clear(&b->allow);
    sbx__strlist_clear(&b->deny);
    for (size_t i = 0; i < b->nrules; i++)
        rule_free(&b->rules[i]);
    sbx__free(b->rules);
    b->rules = NULL;
    b->nrules = b->caprules = 0;
}

static long list_find(const sbx__strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return (long)i;
    return -1;
}

/* Add s (already normalised) to l unless it is there. */
static sbx_status list_add(sbx__err *e, const char *what, sbx__strlist *l, const char *s, const char *kind)
{
    if (list_find(l, s) >= 0)
        return SBX_OK;
    if (l->n >= NP_MAX_LIST)
        return bad(e, what, "too many %s (at most %d)", kind, NP_MAX_LIST);
    return sbx__strlist_push(l, s) == SBX_OK ? SBX_OK : sbx__err_nomem(e);
}

static sbx_status body_domain(struct body *b, sbx__err *e, const char *what, const char *s, size_t n,
                              unsigned flags)
{
    char d[DOMAIN_BUF];
    sbx_status st = domain_norm(e, what, s, n, flags, d);
    if (st == SBX_OK && (st = list_add(e, what, &b->domains, d, "allowed domains")) == SBX_OK)
        b->mode = SBX_NETPOLICY_CUSTOM;
    return st;
}

static sbx_status body_cidr(struct body *b, sbx__err *e, const char *what, const char *s, size_t n, bool deny)
{
    char c[CIDR_BUF];
    sbx_status st = cidr_norm(e, what, s, n, c);
    if (st == SBX_OK && (st = list_add(e, what, deny ? &b->deny : &b->allow, c,
                                       deny ? "denied CIDRs" : "allowed CIDRs")) == SBX_OK)
        b->mode = SBX_NETPOLICY_CUSTOM;
    return st;
}

/* Set name: value in rule r (name lowercase, value checked), replacing and
 * wiping an earlier value of the same name. */
static sbx_status rule_set(struct rule *r, sbx__err *e, const char *what, const char *name, const char *v,
                           size_t vn)
{
    long at = list_find(&r->names, name);
    char *copy;
    if (at < 0 && r->names.n >= NP_MAX_HEADERS)
        return bad(e, what, "too many headers for '%s' (at most %d)", r->domain, NP_MAX_HEADERS);
    if (!(copy = sbx__strndup(v, vn)))
        return sbx__err_nomem(e);
    if (at >= 0) {
        sbx__free_secret(r->values.v[at]);
        r->values.v[at] = copy;
        return SBX_OK;
    }
    if (sbx__strlist_push(&r->names, name) != SBX_OK) {
        sbx__free_secret(copy);
        return sbx__err_nomem(e);
    }
    if (sbx__strlist_push_take(&r->values, copy) != SBX_OK) {
        sbx__free(r->names.v[--r->names.n]);
        r->names.v[r->names.n] = NULL;
        return sbx__err_nomem(e);
    }
    return SBX_OK;
}

/* A new rule for domain d at the end of b (room already made), holding one header. */
static sbx_status rule_new(struct body *b, sbx__err *e, const char *what, const char *d, const char *name,
                           const char *v, size_t vn)
{
    struct rule r = {NULL, SBX__STRLIST_INIT, SBX__STRLIST_INIT};
    sbx_status st;
    if (!(r.domain = sbx__strdup(d)))
        return sbx__err_nomem(e);
    if ((st = rule_set(&r, e, what, name, v, vn)) != SBX_OK) {
        rule_free(&r);
        return st;
    }
    b->rules[b->nrules++] = r;
    return SBX_OK;
}

static sbx_status rules_reserve(struct body *b, sbx__err *e, const char *what)
{
    struct rule *r;
    size_t cap;
    if (b->nrules < b->caprules)
        return SBX_OK;
    if (b->nrules >= NP_MAX_RULES)
        return bad(e, what, "too many injection rules (at most %d)", NP_MAX_RULES);
    cap = b->caprules ? b->caprules * 2 : 4;
    if (!(r = sbx__realloc(b->rules, cap * sizeof *r)))
        return sbx__err_nomem(e);
    b->rules = r;
    b->caprules = cap;
    return SBX_OK;
}

/* Inject name: value on requests to domain (which gets allowed too). On
 * failure b is as it was. */
static sbx_status body_inject(struct body *b, sbx__err *e, const char *what, const char *dom, size_t dn,
                              const char *name, size_t nn, const char *v, size_t vn)
{
    char d[DOMAIN_BUF], nm[NP_MAX_NAME + 1];
    sbx_status st;
    size_t i;
    bool made;

    if (dn == 1 && dom[0] == '*')
        return bad(e, what, "a header for '*' would go to every domain: name the domain it is for");
    if ((st = domain_norm(e, what, dom, dn, D_WILD, d)) || (st = name_norm(e, what, name, nn, nm)) ||
        (st = value_check(e, what, nm, v, vn)))
        return st;
    for (i = 0; i < b->nrules && strcmp(b->rules[i].domain, d) != 0; i++)
        ;
    made = i == b->nrules;
    if (!made)
        st = rule_set(&b->rules[i], e, what, nm, v, vn);
    else if ((st = rules_reserve(b, e, what)) == SBX_OK)
        st = rule_new(b, e, what, d, nm, v, vn);
    if (st != SBX_OK)
        return st;
    /* A rule's domain is always allowed already; a new rule's may not be. */
    if ((st = list_add(e, what, &b->domains, d, "allowed domains")) != SBX_OK) {
        if (made)
            rule_free(&b->rules[--b->nrules]);
        return st;
    }
    b->mode = SBX_NETPOLICY_CUSTOM;
    return SBX_OK;
}

/* ---- writing JSON ----------------------------------------------------------------- */

/* Output goes through a sink that only counts when p is NULL: the text is
 * measured first and written into one exact allocation, so no realloc
 * leaves a stray copy of a header value behind. */
struct sink {
    char *p;
    size_t n;
};

static void put(struct sink *k, const char *s)
{
    size_t l = strlen(s);
    if (k->p)
        memcpy(k->p + k->n, s, l);
    k->n += l;
}

static void put_str(struct sink *k, const char *s)
{
    put(k, "\"");
    for (; *s; s++) {
        char esc[8];
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c < 0x20)
            snprintf(esc, sizeof esc, "\\u%04x", c);
        else
            esc[0] = (char)c, esc[1] = '\0';
        put(k, esc);
    }
    put(k, "\"");
}

static void put_list(struct sink *k, const char *key, const sbx__strlist *l)
{
    if (l->n == 0)
        return;
    put(k, ",\"");
    put(k, key);
    put(k, "\":[");
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            put(k, ",");
        put_str(k, l->v[i]);
    }
    put(k, "]");
}

static void put_rules(struct sink *k, const struct body *b)
{
    if (b->nrules == 0)
        return;
    put(k, ",\"injectionRules\":[");
    for (size_t i = 0; i < b->nrules; i++) {
        const struct rule *r = &b->rules[i];
        put(k, i ? ",{\"domain\":" : "{\"domain\":");
        put_str(k, r->domain);
        put(k, ",\"headers\":{");
        for (size_t h = 0; h < r->names.n; h++) {
            if (h)
                put(k, ",");
            put_str(k, r->names.v[h]);
            put(k, ":");
            put_str(k, r->values.v[h]);
        }
        put(k, "}}");
    }
    put(k, "]");
}

static void put_body(struct sink *k, const struct body *b)
{
    if (b->mode != SBX_NETPOLICY_CUSTOM) {
        put(k, b->mode == SBX_NETPOLICY_ALLOW_ALL ? "{\"mode\":\"allow-all\"}" : "{\"mode\":\"deny-all\"}");
        return;
    }
    put(k, "{\"mode\":\"custom\"");
    put_list(k, "allowedDomains", &b->domains);
    put_list(k, "allowedCIDRs", &b->allow);
    put_list(k, "deniedCIDRs", &b->deny);
    put_rules(k, b);
    put(k, "}");
}

/* ---- reading JSON ----------------------------------------------------------------- */

static const char *const mode_names[] = {"allow-all", "deny-all", "custom"};

/* The top-level fields, in the order they are applied: rule domains are
 * appended after the listed domains whatever the order in the text. */
static const char *const top_fields[] = {"mode", "allowedDomains", "allowedCIDRs", "deniedCIDRs",
                                         "injectionRules"};

/* The string v, with its length; "what: not a string" if it is not one. */
static sbx_status get_str(sbx__err *e, const char *what, const json_t *v, const char **s, size_t *n)
{
    *s = "";
    *n = 0;
    if (!json_is_string(v))
        return bad(e, what, "not a string");
    *s = json_string_value(v);
    *n = json_string_length(v);
    return SBX_OK;
}

/* Every key of object o is one of fields[0..n); the first that is not is named. */
static sbx_status known_keys(sbx__err *e, const char *what, json_t *o, const char *const *fields, size_t n)
{
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach(o, key, klen, v)
    {
        char sh[SHOW_BUF];
        size_t i;
        for (i = 0; i < n && !(strlen(fields[i]) == klen && memcmp(fields[i], key, klen) == 0); i++)
            ;
        if (i == n) {
            char list[160] = "";
            size_t used = 0;
            for (i = 0; i < n; i++) {
                append(list, sizeof list, &used, i ? ", " : "");
                append(list, sizeof list, &used, fields[i]);
            }
            return bad(e, what, "unknown field '%s' (%s)", show(sh, sizeof sh, key, klen), list);
        }
    }
    return SBX_OK;
}

static sbx_status load_mode(struct body *b, sbx__err *e, json_t *root)
{
    json_t *m = json_object_get(root, "mode");
    char sh[SHOW_BUF];
    const char *s = "";
    size_t n = 0;
    sbx_status st;

    if (!m)
        return bad(e, "mode", "missing: a policy names its mode, and one without is not taken as allow-all");
    if ((st = get_str(e, "mode", m, &s, &n)) != SBX_OK)
        return st;
    for (int i = 0; i < (int)SBX__ARRAY_LEN(mode_names); i++) {
        if (strlen(mode_names[i]) == n && memcmp(mode_names[i], s, n) == 0) {
            b->mode = i;
            return SBX_OK;
        }
    }
    return bad(e, "mode", "unknown mode '%s' (allow-all, deny-all or custom)", show(sh, sizeof sh, s, n));
}

/* allowedDomains, allowedCIDRs or deniedCIDRs (field 1, 2 or 3). */
static sbx_status load_list(struct body *b, sbx__err *e, json_t *root, int field)
{
    json_t *a = json_object_get(root, top_fields[field]), *v;
    char what[64];
    sbx_status st = SBX_OK;
    size_t i;

    if (!a)
        return SBX_OK;
    if (!json_is_array(a))
        return bad(e, top_fields[field], "not an array");
    json_array_foreach(a, i, v) {
        const char *s = "";
        size_t n = 0;
        snprintf(what, sizeof what, "%s[%zu]", top_fields[field], i);
        if ((st = get_str(e, what, v, &s, &n)) != SBX_OK)
            return st;
        st = field == 1 ? body_domain(b, e, what, s, n, D_WILD | D_STAR) : body_cidr(b, e, what, s, n, field == 3);
        if (st != SBX_OK)
            return st;
    }
    return SBX_OK;
}

/* One element of injectionRules. */
static sbx_status load_rule(struct body *b, sbx__err *e, const char *what, json_t *r)
{
    static const char *const fields[] = {"domain", "headers"};
    json_t *h, *v;
    const char *dom = "", *key;
    char hwhat[SHOW_BUF + 96], sh[SHOW_BUF];
    size_t dn = 0, klen;
    sbx_status st;

    if (!json_is_object(r))
        return bad(e, what, "not an object");
    if (json_object_get(r, "headerNames") && !json_object_get(r, "headers"))
        return bad(e, what, "'headerNames' without 'headers' is a server's redacted echo; "
                            "load the policy as sent, with the header values");
    if ((st = known_keys(e, what, r, fields, SBX__ARRAY_LEN(fields))) != SBX_OK)
        return st;
    snprintf(hwhat, sizeof hwhat, "%s.domain", what);
    if (!json_object_get(r, "domain"))
        return bad(e, hwhat, "missing");
    if ((st = get_str(e, hwhat, json_object_get(r, "domain"), &dom, &dn)) != SBX_OK)
        return st;
    snprintf(hwhat, sizeof hwhat, "%s.headers", what);
    h = json_object_get(r, "headers");
    if (!json_is_object(h) || json_object_size(h) == 0)
        return bad(e, hwhat, h ? "not a non-empty object" : "missing");
    json_object_keylen_foreach(h, key, klen, v)
    {
        const char *s = "";
        size_t n = 0;
        snprintf(hwhat, sizeof hwhat, "%s.headers.%s", what, show(sh, sizeof sh, key, klen));
        if ((st = get_str(e, hwhat, v, &s, &n)) != SBX_OK ||
            (st = body_inject(b, e, hwhat, dom, dn, key, klen, s, n)) != SBX_OK)
            return st;
    }
    return SBX_OK;
}

static sbx_status load_rules(struct body *b, sbx__err *e, json_t *root)
{
    json_t *a = json_object_get(root, "injectionRules"), *r;
    char what[64];
    sbx_status st;
    size_t i;

    if (!a)
        return SBX_OK;
    if (!json_is_array(a))
        return bad(e, "injectionRules", "not an array");
    json_array_foreach(a, i, r) {
        snprintf(what, sizeof what, "injectionRules[%zu]", i);
        if ((st = load_rule(b, e, what, r)) != SBX_OK)
            return st;
    }
    return SBX_OK;
}

static sbx_status load_body(struct body *b, sbx__err *e, json_t *root)
{
    sbx_status st;
    if (!json_is_object(root))
        return bad(e, NULL, "not a network policy: the JSON is not an object");
    if ((st = known_keys(e, NULL, root, top_fields, SBX__ARRAY_LEN(top_fields))) != SBX_OK ||
        (st = load_mode(b, e, root)) != SBX_OK)
        return st;
    if (b->mode != SBX_NETPOLICY_CUSTOM) {
        for (size_t i = 1; i < SBX__ARRAY_LEN(top_fields); i++)
            if (json_object_get(root, top_fields[i]))
                return bad(e, top_fields[i], "only a custom policy has lists, and the mode is '%s'",
                           mode_names[b->mode]);
        return SBX_OK;
    }
    for (int f = 1; f <= 3; f++)
        if ((st = load_list(b, e, root, f)) != SBX_OK)
            return st;
    return load_rules(b, e, root);
}

/* ---- hosts and URLs --------------------------------------------------------------- */

/* Allow a host as written in a URL or an input: an address becomes its /32
 * or /128 CIDR (in brackets only IPv6), anything else must be a host name. */
static sbx_status body_host(struct body *b, sbx__err *e, const char *what, const char *h, size_t n)
{
    char cidr[CIDR_BUF], sh[SHOW_BUF];
    sbx_status st;
    bool bracketed = n > 0 && h[0] == '[';

    if (bracketed && (n < 2 || h[n - 1] != ']' || !memchr(h, ':', n) || !ip_literal(h, n, cidr)))
        return bad(e, what, "'%s' is not an IPv6 address in brackets", show(sh, sizeof sh, h, n));
    if (!bracketed && !ip_literal(h, n, cidr))
        return body_domain(b, e, what, h, n, 0);
    if ((st = list_add(e, what, &b->allow, cidr, "allowed CIDRs")) == SBX_OK)
        b->mode = SBX_NETPOLICY_CUSTOM;
    return st;
}

/* Length of the scheme at the start of u ([A-Za-z][A-Za-z0-9+.-]*), 0 if none. */
static size_t scheme_len(const char *u)
{
    size_t i = 0;
    if (!((u[0] >= 'a' && u[0] <= 'z') || (u[0] >= 'A' && u[0] <= 'Z')))
        return 0;
    while (is_alnum(u[i]) || u[i] == '+' || u[i] == '.' || u[i] == '-')
        i++;
    return i;
}

/* u fit to quote in a message: the user-info (everything before the last
 * '@') shown as "***", the query and fragment (which may carry a password)
 * as "?...", the rest escaped. */
static const char *show_url(char *buf, size_t cap, const char *u)
{
    char part[SHOW_BUF];
    size_t sl = scheme_len(u), o = 0, n;
    const char *rest = u, *at;

    buf[0] = '\0';
    if (sl && strncmp(u + sl, "://", 3) == 0) {
        rest = u + sl + 3;
        append(buf, cap, &o, show(part, sizeof part, u, sl + 3));
    }
    if ((at = strrchr(rest, '@')) != NULL) {
        append(buf, cap, &o, "***@");
        rest = at + 1;
    }
    n = strcspn(rest, "?#");
    append(buf, cap, &o, show(part, sizeof part, rest, n));
    if (rest[n])
        append(buf, cap, &o, "?...");
    return buf;
}

struct url {
    const char *scheme, *auth; /* the authority after any user-info */
    size_t sn, an;
};

/* Split scheme://[user-info@]authority[/path...]. The user-info ends at the
 * last '@', so a password with a raw '/', '?' or '#' still stays out of the
 * host; the authority ends at the first '/', '?' or '#' after it. */
static bool split_url(const char *u, struct url *x)
{
    size_t sl = scheme_len(u);
    const char *rest, *at;
    if (!sl || strncmp(u + sl, "://", 3) != 0)
        return false;
    x->scheme = u;
    x->sn = sl;
    rest = u + sl + 3;
    if ((at = strrchr(rest, '@')) != NULL)
        rest = at + 1;
    x->auth = rest;
    x->an = strcspn(rest, "/?#");
    return true;
}

static bool scheme_is(const struct url *x, const char *s)
{
    return strlen(s) == x->sn && strncasecmp(x->scheme, s, x->sn) == 0;
}

/* Whether [p, p+n) is a port number: 1 to 65535, decimal digits only. */
static bool port_ok(const char *p, size_t n)
{
    unsigned long v = 0;
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (unsigned long)(p[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

/* Split one "host[:port]" or "[v6][:port]" of an authority into *h, *hn;
 * with bare_v6, "2001:db8::1" (two or more ':') is a host without a port.
 * Returns why not, or NULL. */
static const char *split_hostport(const char *s, size_t n, bool bare_v6, const char **h, size_t *hn, char *why,
                                  size_t cap)
{
    const char *c, *close = n && s[0] == '[' ? memchr(s, ']', n) : NULL;
    size_t pn;

    if (n && s[0] == '[' && !close)
        return "a '[' without its ']'";
    c = close ? close + 1 : memchr(s, ':', n);
    if (close && c < s + n && *c != ':')
        return "something other than ':port' follows the ']'";
    if (!close && c && bare_v6 && memchr(c + 1, ':', n - (size_t)(c + 1 - s)))
        c = NULL;
    *h = s;
    *hn = c && c < s + n ? (size_t)(c - s) : n;
    if (*hn == 0)
        return "no host";
    if (*hn == n)
        return NULL;
    pn = n - *hn - 1;
    if (!port_ok(c + 1, pn)) {
        char sh[SHOW_BUF];
        snprintf(why, cap, "the port '%s' is not a number from 1 to 65535", show(sh, sizeof sh, c + 1, pn));
        return why;
    }
    return NULL;
}

/* Allow the host (or, with multi, each comma-separated host) of an authority. */
static sbx_status auth_hosts(struct body *b, sbx__err *e, const char *what, const char *shown, const char *a,
                             size_t an, bool multi)
{
    char why[SHOW_BUF + 64];
    sbx_status st;
    if (an == 0)
        return bad(e, what, "'%s' has no host", shown);
    while (an > 0) {
        const char *comma = multi ? memchr(a, ',', an) : NULL, *h, *w;
        size_t len = comma ? (size_t)(comma - a) : an, hn;
        if ((w = split_hostport(a, len, false, &h, &hn, why, sizeof why)) != NULL)
            return bad(e, what, "'%s': %s", shown, w);
        if ((st = body_host(b, e, what, h, hn)) != SBX_OK)
            return st;
        if (!comma)
            break;
        an -= len + 1;
        a = comma + 1;
        if (an == 0)
            return bad(e, what, "'%s': a ',' with no host after it", shown);
    }
    return SBX_OK;
}

/* The git URL forms git itself takes to a network host. */
static const char *const git_schemes[] = {"https", "http", "ssh", "git", "git+ssh", "ssh+git"};

/* Whether u is git's "<transport>::<address>" form, which runs a remote helper. */
static bool helper_form(const char *u)
{
    size_t sl = scheme_len(u);
    return sl && u[sl] == ':' && u[sl + 1] == ':';
}

/* The scp-like form [user@]host:path. */
static sbx_status scp_like(struct body *b, sbx__err *e, const char *what, const char *shown, const char *u)
{
    const char *colon = NULL, *h = u, *at;
    bool bracket = false;

    for (const char *p = u; *p && !colon; p++) {
        if (*p == '[' || *p == ']')
            bracket = *p == '[';
        else if (!bracket && *p == '/')
            break;
        else if (!bracket && *p == ':')
            colon = p;
    }
    if (!colon || strchr("/.~\\", u[0]) ||
        (colon == u + 1 && (colon[1] == '/' || colon[1] == '\\'))) /* C:/repo */
        return bad(e, what, "'%s' is a local path, not a URL: give https://, ssh://, git:// or user@host:path", shown);
    for (at = u; at < colon; at++)
        if (*at == '@')
            h = at + 1;
    if (h == colon)
        return bad(e, what, "'%s' has no host", shown);
    if (colon[1] == '\0')
        return bad(e, what, "'%s' has no repository path after the ':'", shown);
    return body_host(b, e, what, h, (size_t)(colon - h));
}

/* repo.clone's "url": the git host it names. */
static sbx_status git_url(struct body *b, sbx__err *e, const char *what, const char *u)
{
    char sh[SHOW_BUF];
    struct url x;

    show_url(sh, sizeof sh, u);
    if (find_ctl(u, strlen(u)) >= 0)
        return bad(e, what, "'%s' has a control character", sh);
    if (helper_form(u))
        return bad(e, what, "'%s': the <transport>::<address> form runs a remote helper and is not allowed", sh);
    if (strncasecmp(u, "file:", 5) == 0)
        return bad(e, what, "'%s' is a local file: URL; a clone from it needs no network", sh);
    if (!split_url(u, &x))
        return scp_like(b, e, what, sh, u);
    for (size_t i = 0; i < SBX__ARRAY_LEN(git_schemes); i++)
        if (scheme_is(&x, git_schemes[i]))
            return auth_hosts(b, e, what, sh, x.auth, x.an, false);
    return bad(e, what, "'%s': the scheme '%.*s' is not one git clones over (https, http, ssh, git, or user@host:path)",
               sh, (int)x.sn, x.scheme);
}

/* deps.install's "registry": an http(s) URL. */
static sbx_status registry_url(struct body *b, sbx__err *e, const char *what, const char *u)
{
    char sh[SHOW_BUF];
    struct url x;

    show_url(sh, sizeof sh, u);
    if (find_ctl(u, strlen(u)) >= 0)
        return bad(e, what, "'%s' has a control character", sh);
    if (!split_url(u, &x) || !(scheme_is(&x, "https") || scheme_is(&x, "http")))
        return bad(e, what, "'%s' is not an http:// or https:// URL", sh);
    return auth_hosts(b, e, what, sh, x.auth, x.an, false);
}

/* The database URL schemes db.migrate understands; "<scheme>+<driver>"
 * (SQLAlchemy's postgresql+psycopg2://) counts as its scheme for the SQL ones. */
static const char *const db_schemes[] = {"postgres", "postgresql", "mysql", "mariadb", "mongodb",
                                         "mongodb+srv", "redis", "rediss"};

static bool db_scheme_ok(const struct url *x)
{
    struct url base = *x;
    const char *plus = memchr(x->scheme, '+', x->sn);
    for (size_t i = 0; i < SBX__ARRAY_LEN(db_schemes); i++)
        if (scheme_is(x, db_schemes[i]))
            return true;
    if (!plus)
        return false;
    base.sn = (size_t)(plus - x->scheme);
    return scheme_is(&base, "postgres") || scheme_is(&base, "postgresql") || scheme_is(&base, "mysql") ||
           scheme_is(&base, "mariadb");
}

/* mongodb+srv://host: the driver looks up SRV records of host, whose targets
 * must lie under host's parent domain (under host itself when it has only
 * two labels), so allow host and that wildcard. */
static sbx_status mongo_srv(struct body *b, sbx__err *e, const char *what, const char *shown, const char *a,
                            size_t an)
{
    char d[DOMAIN_BUF], wild[DOMAIN_BUF + 2];
    const char *dot;
    sbx_status st;

    if (an == 0)
        return bad(e, what, "'%s' has no host", shown);
    if (memchr(a, ':', an) || memchr(a, ',', an) || memchr(a, '[', an))
        return bad(e, what, "'%s': a mongodb+srv URL names one host name, without a port", shown);
    if ((st = domain_norm(e, what, a, an, 0, d)) != SBX_OK || (st = body_domain(b, e, what, d, strlen(d), 0)))
        return st;
    dot = strchr(d, '.');
    snprintf(wild, sizeof wild, "*.%s", strchr(dot + 1, '.') ? dot + 1 : d);
    return body_domain(b, e, what, wild, strlen(wild), D_WILD);
}

/* db.migrate's "url": the database host(s) it names. */
static sbx_status db_url(struct body *b, sbx__err *e, const char *what, const char *u)
{
    char sh[SHOW_BUF];
    struct url x;

    show_url(sh, sizeof sh, u);
    if (find_ctl(u, strlen(u)) >= 0)
        return bad(e, what, "'%s' has a control character", sh);
    if (strncasecmp(u, "sqlite", 6) == 0 || strncasecmp(u, "file:", 5) == 0)
        return bad(e, what, "'%s' is a local database file: it needs no network", sh);
    if (!split_url(u, &x))
        return bad(e, what, "'%s' is not a database URL (scheme://[user[:password]@]host[:port]/...)", sh);
    if (!db_scheme_ok(&x))
        return bad(e, what, "'%s': unknown database scheme '%.*s' (postgres, postgresql, mysql, mariadb, "
                            "mongodb, mongodb+srv, redis, rediss)",
                   sh, (int)x.sn, x.scheme);
    if (scheme_is(&x, "mongodb+srv"))
        return mongo_srv(b, e, what, sh, x.auth, x.an);
    return auth_hosts(b, e, what, sh, x.auth, x.an, true);
}

/* db.migrate's "host": a name or address with an optional :port. */
static sbx_status db_host(struct body *b, sbx__err *e, const char *what, const char *v)
{
    char sh[SHOW_BUF], why[SHOW_BUF + 64];
    const char *h, *w;
    size_t hn;

    /* Checked before anything is quoted: a URL here may carry a password. */
    if (strpbrk(v, "@/?#"))
        return bad(e, what, "give the host alone, with an optional :port (a URL goes in input 'url')");
    show(sh, sizeof sh, v, strlen(v));
    if (find_ctl(v, strlen(v)) >= 0)
        return bad(e, what, "'%s' has a control character", sh);
    if ((w = split_hostport(v, strlen(v), true, &h, &hn, why, sizeof why)) != NULL)
        return bad(e, what, "'%s': %s", sh, w);
    return body_host(b, e, what, h, hn);
}

/* ---- presets ---------------------------------------------------------------------- */

/* What deps.install allows: npm's registry (npm, pnpm, bun and corepack fetch
 * packages and package managers there), Yarn's mirror of it, and the
 * host Yarn 2+ and corepack download Yarn itself from. */
static const char *const install_domains[] = {"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com"};

struct inputs {
    const char *job;
    const char *const *keys, *const *values;
    size_t n;
};

/* The value of input key, or NULL. */
static const char *input(const struct inputs *in, const char *key)
{
    for (size_t i = 0; i < in->n; i++)
        if (strcmp(in->keys[i], key) == 0)
            return in->values[i];
    return NULL;
}

/* Every input is one the preset takes (keys, NULL-terminated; described
 * as takes in messages), given once unless it is repeatable, not empty, not
 * huge. */
static sbx_status check_inputs(sbx__err *e, const struct inputs *in, const char *const *keys, const char *takes,
                               const char *repeatable)
{
    char sh[SHOW_BUF];
    for (size_t i = 0; i < in->n; i++) {
        const char *k = in->keys[i], *v = in->values[i];
        size_t a;
        if (!k || !v)
            return bad(e, in->job, "input %zu: the %s is NULL", i, k ? "value" : "key");
        show(sh, sizeof sh, k, strlen(k));
        for (a = 0; keys[a] && strcmp(keys[a], k) != 0; a++)
            ;
        if (!keys[a])
            return bad(e, in->job, "unknown input '%s' (%s takes %s)", sh, in->job, takes);
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->keys[j], k) == 0 && !(repeatable && strcmp(k, repeatable) == 0))
                return bad(e, in->job, "input '%s' is given twice", sh);
        if (!*v)
            return bad(e, in->job, "input '%s' is empty", sh);
        if (strlen(v) > NP_MAX_INPUT)
            return bad(e, in->job, "input '%s' is longer than %d bytes", sh, NP_MAX_INPUT);
    }
    return SBX_OK;
}

static sbx_status preset_deny(struct body *b, sbx__err *e, const struct inputs *in)
{
    static const char *const keys[] = {NULL};
    b->mode = SBX_NETPOLICY_DENY_ALL;
    return check_inputs(e, in, keys, "no inputs", NULL);
}

static sbx_status preset_clone(struct body *b, sbx__err *e, const struct inputs *in)
{
    static const char *const keys[] = {"url", NULL};
    sbx_status st = check_inputs(e, in, keys, "only 'url'", NULL);
    const char *u;
    if (st != SBX_OK)
        return st;
    if (!(u = input(in, "url")))
        return bad(e, in->job, "input 'url' (the repository to clone) is missing");
    return git_url(b, e, "repo.clone: input 'url'", u);
}

static sbx_status preset_install(struct body *b, sbx__err *e, const struct inputs *in)
{
    static const char *const keys[] = {"registry", NULL};
    sbx_status st = check_inputs(e, in, keys, "only 'registry'", "registry");
    if (st != SBX_OK)
        return st;
    if (in->n > NP_MAX_REGISTRIES)
        return bad(e, in->job, "more than %d 'registry' inputs", NP_MAX_REGISTRIES);
    for (size_t i = 0; st == SBX_OK && i < SBX__ARRAY_LEN(install_domains); i++)
        st = body_domain(b, e, in->job, install_domains[i], strlen(install_domains[i]), 0);
    for (size_t i = 0; st == SBX_OK && i < in->n; i++)
        st = registry_url(b, e, "deps.install: input 'registry'", in->values[i]);
    return st;
}

static sbx_status preset_migrate(struct body *b, sbx__err *e, const struct inputs *in)
{
    static const char *const keys[] = {"url", "host", NULL};
    sbx_status st = check_inputs(e, in, keys, "'url' or 'host'", NULL);
    const char *u, *h;
    if (st != SBX_OK)
        return st;
    u = input(in, "url");
    h = input(in, "host");
    if (u && h)
        return bad(e, in->job, "give input 'url' or 'host', not both");
    if (u)
        return db_url(b, e, "db.migrate: input 'url'", u);
    if (h)
        return db_host(b, e, "db.migrate: input 'host'", h);
    return bad(e, in->job, "input 'url' or 'host' (the database server) is missing");
}

/* One preset per job type, in the order of util/jobtype.c's table. */
static sbx_status (*const presets[])(struct body *b, sbx__err *e, const struct inputs *in) = {
    preset_clone,     /* repo.clone */
    preset_deny,      /* repo.applyPatch */
    preset_install,   /* deps.install */
    preset_deny,      /* verify.lint */
    preset_deny,      /* verify.typecheck */
    preset_deny,      /* verify.test */
    preset_deny,      /* verify.build */
    preset_migrate,   /* db.migrate */
};
_Static_assert(SBX__ARRAY_LEN(presets) == SBX__NJOB_TYPES, "one network preset per job type");

/* The index of a preset's job type; "install" is deps.install's name from
 * before 1.0, still accepted. */
static int preset_index(const char *job_type)
{
    if (strcmp(job_type, "install") == 0)
        return sbx__job_type_index("deps.install");
    return sbx__job_type_index(job_type);
}

/* ---- the API ---------------------------------------------------------------------- */

sbx_netpolicy *sbx_netpolicy_new(void)
{
    sbx_netpolicy *n = sbx__calloc(1, sizeof *n);
    if (n)
        n->b.mode = SBX_NETPOLICY_DENY_ALL;
    return n;
}

void sbx_netpolicy_free(sbx_netpolicy *n)
{
    if (!n)
        return;
    body_clear(&n->b);
    sbx__err_free(&n->err);
    sbx__free(n);
}

const char *sbx_netpolicy_last_error(const sbx_netpolicy *n)
{
    return SBX__LAST_ERROR(n);
}

sbx_status sbx_netpolicy_set_mode(sbx_netpolicy *n, sbx_network_mode mode)
{
    SBX__ENTER(n, false);
    SBX__ARG(n, mode == SBX_NETPOLICY_ALLOW_ALL || mode == SBX_NETPOLICY_DENY_ALL || mode == SBX_NETPOLICY_CUSTOM,
             "unknown network policy mode %d", (int)mode);
    if (mode != SBX_NETPOLICY_CUSTOM)
        body_clear(&n->b);
    n->b.mode = (int)mode;
    return SBX_OK;
}

sbx_network_mode sbx_netpolicy_mode(const sbx_netpolicy *n)
{
    return n ? (sbx_network_mode)n->b.mode : SBX_NETPOLICY_DENY_ALL;
}

sbx_status sbx_netpolicy_allow_domain(sbx_netpolicy *n, const char *domain)
{
    SBX__ENTER(n, false);
    SBX__ARG(n, domain, "the domain is NULL");
    return body_domain(&n->b, &n->err, NULL, domain, strlen(domain), D_WILD | D_STAR);
}

sbx_status sbx_netpolicy_allow_cidr(sbx_netpolicy *n, const char *cidr)
{
    SBX__ENTER(n, false);
    SBX__ARG(n, cidr, "the CIDR is NULL");
    return body_cidr(&n->b, &n->err, NULL, cidr, strlen(cidr), false);
}

sbx_status sbx_netpolicy_deny_cidr(sbx_netpolicy *n, const char *cidr)
{
    SBX__ENTER(n, false);
    SBX__ARG(n, cidr, "the CIDR is NULL");
    return body_cidr(&n->b, &n->err, NULL, cidr, strlen(cidr), true);
}

sbx_status sbx_netpolicy_inject_header(sbx_netpolicy *n, const char *domain, const char *name, const char *value)
{
    SBX__ENTER(n, false);
    SBX__ARG(n, domain, "the domain is NULL");
    SBX__ARG(n, name, "the header name is NULL");
    SBX__ARG(n, value, "the header value is NULL");
    return body_inject(&n->b, &n->err, NULL, domain, strlen(domain), name, strlen(name), value,
                               strlen(value));
}

sbx_status sbx_netpolicy_load_preset(sbx_netpolicy *n, const char *job_type, size_t ninputs,
                                const char *const *keys, const char *const *values)
{
    struct inputs in = {job_type, keys, values, ninputs};
    struct body b = {SBX_NETPOLICY_DENY_ALL, SBX__STRLIST_INIT, SBX__STRLIST_INIT, SBX__STRLIST_INIT, NULL, 0, 0};
    char sh[SHOW_BUF];
    sbx_status st;
    int i;

    SBX__ENTER(n, false);
    SBX__ARG(n, job_type, "the job type is NULL");
    SBX__ARG(n, ninputs == 0 || (keys && values), "keys or values is NULL while ninputs > 0");
    i = preset_index(job_type);
    SBX__ARG(n, i >= 0, "unknown job type '%s' (known: " SBX__JOB_TYPES_LIST ")",
             show(sh, sizeof sh, job_type, strlen(job_type)));
    in.job = sbx__job_type_name((size_t)i); /* messages use the current name, alias or not */
    if ((st = presets[i](&b, &n->err, &in)) != SBX_OK) {
        body_clear(&b);
        return st;
    }
    body_clear(&n->b);
    n->b = b;
    return SBX_OK;
}

/* jansson's message without its " near '...'" quote of the text, which
 * could be part of a header value. */
static sbx_status parse_error(sbx__err *e, const json_error_t *je)
{
    char text[JSON_ERROR_TEXT_LENGTH];
    char *near;
    if (json_error_code(je) == json_error_out_of_memory)
        return sbx__err_nomem(e);
    snprintf(text, sizeof text, "%s", je->text);
    if ((near = strstr(text, " near ")) != NULL)
        *near = '\0';
    return sbx__err_set(e, SBX_E_PARSE, "not valid JSON: line %d, column %d: %s", je->line, je->column, text);
}

/* Overwrite jansson's copies of the header values before the tree is freed
 * (its allocator does not wipe); the caller's text is the caller's to wipe. */
sbx_status sbx_netpolicy_load_json(sbx_netpolicy *n, const char *json)
{
    struct body b = {SBX_NETPOLICY_DENY_ALL, SBX__STRLIST_INIT, SBX__STRLIST_INIT, SBX__STRLIST_INIT, NULL, 0, 0};
    size_t len;
    json_error_t je;
    json_t *root, *sdk = NULL;
    sbx_status st;

    SBX__ENTER(n, false);
    SBX__ARG(n, json, "the JSON text is NULL");
    len = strlen(json);
    SBX__ARG(n, len <= NP_MAX_JSON, "the policy is longer than %u bytes", NP_MAX_JSON);
    /* JSON_ALLOW_NUL lets a "\u0000" through so the field holding it can be
     * named (every string is checked for NUL bytes by its length);
     * JSON_DECODE_ANY so that "allow-all" alone gets a message of its own. */
    if (!(root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je)))
        return parse_error(&n->err, &je);
    if (sbx__netpolicy_is_sdk(root)) {
        /* The SDKs' own shape ({"allow": [...], "subnets": {...}}): read
         * as the API form it stands for. Both trees are wiped after the
         * load (they share the header values; one may hold values the
         * other dropped, a header set twice). */
        json_t *api = NULL;
        char why[512];
        sbx_status sst = sbx__netpolicy_from_sdk(root, &api, why, sizeof why);
        if (sst != SBX_OK) {
            sbx__netpolicy_wipe(root);
            json_decref(root);
            return sst == SBX_E_NOMEM ? sbx__err_nomem(&n->err) : sbx__err_set(&n->err, sst, "%s", why);
        }
        sdk = root;
        root = api;
    }
    st = load_body(&b, &n->err, root);
    sbx__netpolicy_wipe(root);
    json_decref(root);
    if (sdk) {
        sbx__netpolicy_wipe(sdk);
        json_decref(sdk);
    }
    if (st != SBX_OK) {
        body_clear(&b);
        return st;
    }
    body_clear(&n->b);
    n->b = b;
    return SBX_OK;
}

sbx_status sbx_netpolicy_to_json(const sbx_netpolicy *n, char **out)
{
    struct sink k = {NULL, 0};
    if (out)
        *out = NULL;
    if (!n || !out)
        return SBX_E_INVALID_ARG;
    put_body(&k, &n->b);
    if (!(k.p = sbx__malloc(k.n + 1)))
        return SBX_E_NOMEM;
    k.n = 0;
    put_body(&k, &n->b);
    k.p[k.n] = '\0';
    *out = k.p;
    return SBX_OK;
}
