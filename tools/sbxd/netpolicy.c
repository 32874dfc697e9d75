/* SPDX-License-Identifier: MIT */
/*
 * netpolicy: validation and matching of the API network policy (protocol
 * section 4.9). Anything sbxd cannot enforce is refused with a message rather
 * than accepted and ignored: a policy is never silently widened.
 */
#include "netpolicy.h"
#include "netrules.h"
#include "policy/netpolicy_sdk.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/alloc.h"
#include "util/str.h"

#define MAX_RULES 1024

static struct netpolicy *parse_api(json_t *j, char *err, size_t errlen);

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen,
                                                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void matcher_free(struct np_matcher *m)
{
    if (!m)
        return;
    sbx__free(m->s);
    if (m->re)
        pcre2_code_free(m->re);
    sbx__free(m);
}

static void kv_free(struct np_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        matcher_free(kv[i].key);
        matcher_free(kv[i].value);
    }
    sbx__free(kv);
}

static void match_free(struct np_match *m)
{
    if (!m)
        return;
    matcher_free(m->path);
    for (size_t i = 0; i < m->nmethods; i++)
        sbx__free(m->methods[i]);
    sbx__free(m->methods);
    kv_free(m->query, m->nquery);
    kv_free(m->headers, m->nheaders);
    sbx__free(m);
}

static void inject_free(struct np_inject *r)
{
    match_free(r->match);
    for (size_t i = 0; i < r->n; i++) {
        sbx__free(r->names[i]);
        sbx__free_secret(r->values[i]);
    }
    sbx__free(r->names);
    sbx__free(r->values);
    sbx__free(r->domain);
}

void netpolicy_free(struct netpolicy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->ninject; i++)
        inject_free(&p->inject[i]);
    sbx__free(p->inject);
    for (size_t i = 0; i < p->ndomains; i++)
        sbx__free(p->domains[i]);
    sbx__free(p->domains);
    sbx__free(p->allow);
    sbx__free(p->deny);
    json_decref(p->echo);
    sbx__free(p);
}

struct netpolicy *netpolicy_allow_all(void)
{
    struct netpolicy *p = sbx__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->mode = NP_ALLOW_ALL;
    p->echo = json_pack("{s:s}", "mode", "allow-all");
    if (!p->echo) {
        sbx__free(p);
        return NULL;
    }
    return p;
}

/* A host name, "*" or "*.name": labels of [a-z0-9-], 1..63 bytes, not
 * starting or ending with '-', 253 bytes in all. Output is lowercased. */
static char *normalize_domain(const char *s)
{
    size_t n = strlen(s), label = 0;
    const char *body = s;
    char *out;

    if (strcmp(s, "*") == 0)
        return sbx__strdup("*");
    if (n > 2 && s[0] == '*' && s[1] == '.')
        body = s + 2;
    n = strlen(body);
    if (n && body[n - 1] == '.')
        n--; /* a fully qualified name's trailing dot */
    if (n == 0 || n > 253)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)body[i];
        if (c == '.') {
            if (label == 0 || body[i - 1] == '-')
                return NULL;
            label = 0;
            continue;
        }
        if (!(isalnum(c) || c == '-') || (c == '-' && label == 0) || ++label > 63)
            return NULL;
    }
    if (body[n - 1] == '-')
        return NULL;
    out = sbx__malloc(n + 3);
    if (!out)
        return NULL;
    snprintf(out, n + 3, "%s%.*s", body == s ? "" : "*.", (int)n, body);
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return out;
}

bool netpolicy_parse_cidr(const char *s, struct cidr *out)
{
    char addr[64];
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    int max;

    if (alen == 0 || alen >= sizeof addr)
        return false;
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, addr, out->addr) == 1) {
        out->family = AF_INET;
        max = 32;
    } else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
        out->family = AF_INET6;
        max = 128;
    } else {
        return false;
    }
    out->prefix = max;
    if (slash) {
        char *end;
        long v;
        if (!isdigit((unsigned char)slash[1]))
            return false;
        v = strtol(slash + 1, &end, 10);
        if (*end || v < 0 || v > max)
            return false;
        out->prefix = (int)v;
    }
    return true;
}

static bool cidr_match(const struct cidr *c, int family, const unsigned char *a)
{
    int bits = c->prefix, i = 0;
    if (c->family != family)
        return false;
    for (; bits >= 8; bits -= 8, i++)
        if (a[i] != c->addr[i])
            return false;
    if (bits) {
        unsigned char mask = (unsigned char)(0xFF << (8 - bits));
        if ((a[i] & mask) != (c->addr[i] & mask))
            return false;
    }
    return true;
}

static int string_array(json_t *j, const char *key, json_t **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(j, key);
    size_t i;
    json_t *e;
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v)) {
        set_err(err, errlen, "networkPolicy.%s must be an array of strings", key);
        return -1;
    }
    if (json_array_size(v) > MAX_RULES) {
        set_err(err, errlen, "networkPolicy.%s has too many entries", key);
        return -1;
    }
    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            set_err(err, errlen, "networkPolicy.%s must be an array of strings", key);
            return -1;
        }
    }
    *out = v;
    return 0;
}

static int parse_cidrs(json_t *arr, const char *key, struct cidr **out, size_t *n, char *err,
                       size_t errlen)
{
    size_t i;
    json_t *e;
    if (!arr)
        return 0;
    *out = sbx__calloc(json_array_size(arr) + 1, sizeof **out);
    if (!*out) {
        set_err(err, errlen, "%s", "out of memory");
        return -1;
    }
    json_array_foreach(arr, i, e) {
        if (!netpolicy_parse_cidr(json_string_value(e), &(*out)[*n])) {
            snprintf(err, errlen, "networkPolicy.%s: '%s' is not an IPv4 or IPv6 address range "
                                  "(like 10.0.0.0/8)", key, json_string_value(e));
            return -1;
        }
        (*n)++;
    }
    return 0;
}

static bool header_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
            return false;
    return true;
}

static bool header_value_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
            return false;
    return true;
}


/* ---- matchers ---------------------------------------------------------------- */

#define MATCH_MAX 64        /* entries of a method, queryString or headers list */
#define PATTERN_MAX 1024    /* bytes of a matcher's string */

/* {"exact": s} | {"startsWith": s} | {"regex": s}, exactly one. */
static struct np_matcher *parse_matcher(json_t *j, const char *what, char *err, size_t errlen)
{
    static const char *const keys[] = {"exact", "startsWith", "regex"};
    struct np_matcher *m;
    json_t *v = NULL;
    int kind = -1;
    for (int k = 0; k < 3; k++)
        if (json_object_get(j, keys[k])) {
            kind = k;
            v = json_object_get(j, keys[k]);
        }
    if (!json_is_object(j) || json_object_size(j) != 1 || kind < 0 || !json_is_string(v) ||
        json_string_length(v) > PATTERN_MAX || strlen(json_string_value(v)) != json_string_length(v)) {
        set_err(err, errlen, "%s must be one of {\"exact\"}, {\"startsWith\"}, {\"regex\"} with a string of at "
                             "most %d bytes", what, PATTERN_MAX);
        return NULL;
    }
    if (!(m = sbx__calloc(1, sizeof *m)) || !(m->s = sbx__strdup(json_string_value(v)))) {
        sbx__free(m);
        set_err(err, errlen, "%s", "out of memory");
        return NULL;
    }
    m->kind = (enum np_mkind)kind;
    if (m->kind == NP_REGEX) {
        int code;
        PCRE2_SIZE off;
        m->re = pcre2_compile((PCRE2_SPTR)m->s, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C, &code,
                              &off, NULL);
        if (!m->re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            set_err(err, errlen, "%s.regex: %s at offset %zu", what, (const char *)msg, (size_t)off);
            matcher_free(m);
            return NULL;
        }
    }
    return m;
}

static int parse_kvs(json_t *arr, const char *what, struct np_kv **out, size_t *n, char *err, size_t errlen)
{
    size_t i;
    json_t *e;
    char w[96];
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > MATCH_MAX) {
        set_err(err, errlen, "%s must be a list of at most %d {key?, value?}", what, MATCH_MAX);
        return -1;
    }
    if (!(*out = sbx__calloc(json_array_size(arr) + 1, sizeof **out))) {
        set_err(err, errlen, "%s", "out of memory");
        return -1;
    }
    json_array_foreach(arr, i, e) {
        json_t *k = json_object_get(e, "key"), *v = json_object_get(e, "value");
        struct np_kv *kv = &(*out)[(*n)++];
        if (!json_is_object(e) || (!k && !v) || json_object_size(e) != (k ? 1u : 0u) + (v ? 1u : 0u)) {
            set_err(err, errlen, "%s[%zu] must be {\"key\"?: matcher, \"value\"?: matcher}", what, i);
            return -1;
        }
        snprintf(w, sizeof w, "%s[%zu].key", what, i);
        if (k && !(kv->key = parse_matcher(k, w, err, errlen)))
            return -1;
        snprintf(w, sizeof w, "%s[%zu].value", what, i);
        if (v && !(kv->value = parse_matcher(v, w, err, errlen)))
            return -1;
    }
    return 0;
}

/* A rule's "match": {path?, method?, queryString?, headers?}. */
static struct np_match *parse_match(json_t *j, const char *what, char *err, size_t errlen)
{
    struct np_match *m = sbx__calloc(1, sizeof *m);
    json_t *path = json_object_get(j, "path"), *meth = json_object_get(j, "method");
    const char *key;
    json_t *v;
    char w[96];
    if (!m) {
        set_err(err, errlen, "%s", "out of memory");
        return NULL;
    }
    if (!json_is_object(j)) {
        set_err(err, errlen, "%s must be an object", what);
        goto fail;
    }
    json_object_foreach(j, key, v)
        if (strcmp(key, "path") && strcmp(key, "method") && strcmp(key, "queryString") && strcmp(key, "headers")) {
            set_err(err, errlen, "%s.%s is not a match field (path, method, queryString, headers)", what, key);
            goto fail;
        }
    snprintf(w, sizeof w, "%s.path", what);
    if (path && !(m->path = parse_matcher(path, w, err, errlen)))
        goto fail;
    if (meth) {
        size_t i;
        json_t *e;
        if (!json_is_array(meth) || !json_array_size(meth) || json_array_size(meth) > MATCH_MAX ||
            !(m->methods = sbx__calloc(json_array_size(meth), sizeof *m->methods))) {
            set_err(err, errlen, "%s.method must be a non-empty list of method names", what);
            goto fail;
        }
        json_array_foreach(meth, i, e) {
            const char *s = json_string_value(e);
            if (!s || !*s || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-") != strlen(s)) {
                set_err(err, errlen, "%s.method[%zu] must be a method name", what, i);
                goto fail;
            }
            if (!(m->methods[m->nmethods] = sbx__strdup(s))) {
                set_err(err, errlen, "%s", "out of memory");
                goto fail;
            }
            m->nmethods++;
        }
    }
    snprintf(w, sizeof w, "%s.queryString", what);
    if (parse_kvs(json_object_get(j, "queryString"), w, &m->query, &m->nquery, err, errlen) < 0)
        goto fail;
    snprintf(w, sizeof w, "%s.headers", what);
    if (parse_kvs(json_object_get(j, "headers"), w, &m->headers, &m->nheaders, err, errlen) < 0)
        goto fail;
    return m;
fail:
    match_free(m);
    return NULL;
}

static bool matcher_test(const struct np_matcher *m, const char *s, size_t n)
{
    size_t len = strlen(m->s);
    switch (m->kind) {
    case NP_EXACT:
        return n == len && memcmp(s, m->s, n) == 0;
    case NP_PREFIX:
        return n >= len && memcmp(s, m->s, len) == 0;
    case NP_REGEX: {
        /* Bounded: a pattern that backtracks without end fails to match
         * (no injection) rather than hold the proxy. RE2 matches anywhere
         * unless anchored, as here. */
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(m->re, NULL);
        pcre2_match_context *mc = pcre2_match_context_create(NULL);
        int rc = -1;
        if (md && mc) {
            pcre2_set_match_limit(mc, 100000);
            pcre2_set_depth_limit(mc, 1000);
            rc = pcre2_match(m->re, (PCRE2_SPTR)s, n, 0, 0, md, mc);
        }
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return rc >= 0;
    }
    }
    return false;
}

static int hexv(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode s[0..n) into out (n + 1 bytes); -1 on a bad escape. */
static ssize_t pct_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        if (i + 2 >= n || hexv((unsigned char)s[i + 1]) < 0 || hexv((unsigned char)s[i + 2]) < 0)
            return -1;
        out[o++] = (char)(hexv((unsigned char)s[i + 1]) * 16 + hexv((unsigned char)s[i + 2]));
        i += 2;
    }
    out[o] = '\0';
    return (ssize_t)o;
}

/* One kv entry passes when some (key, value) pair passes both its tests. */
static bool kv_any(const struct np_kv *kv, const char *const *keys, const size_t *klen, const char *const *vals,
                   const size_t *vlen, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((!kv->key || matcher_test(kv->key, keys[i], klen[i])) &&
            (!kv->value || matcher_test(kv->value, vals[i], vlen[i])))
            return true;
    return false;
}

/* Dot segments and encoded separators: an upstream may resolve these into
 * another path than the one tested. */
static bool path_ambiguous(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\')
            return true;
        if (p[i] == '%' && i + 2 < n && p[i + 2] &&
            ((p[i + 1] == '2' && strchr("eEfF", p[i + 2])) || (p[i + 1] == '5' && strchr("cC", p[i + 2]))))
            return true;
        if (p[i] == '.' && (i == 0 || p[i - 1] == '/')) {
            size_t j = i + 1;
            if (j < n && p[j] == '.')
                j++;
            if (j == n || p[j] == '/')
                return true;
        }
    }
    return false;
}

#define REQ_PARTS 128 /* query parameters and headers a match looks at */

bool netpolicy_match_request(const struct np_match *m, const struct np_req *req)
{
    const char *q = strchr(req->target, '?'), *keys[REQ_PARTS], *vals[REQ_PARTS];
    size_t plen = q ? (size_t)(q - req->target) : strlen(req->target), klen[REQ_PARTS], vlen[REQ_PARTS], n = 0;
    char *dec = NULL;
    bool ok = false;

    if (m->nmethods) {
        bool any = false;
        for (size_t i = 0; i < m->nmethods; i++)
            any |= strcmp(m->methods[i], req->method) == 0;
        if (!any)
            return false;
    }
    if (m->path) {
        char *path;
        ssize_t dn;
        if (path_ambiguous(req->target, plen) || !(path = sbx__malloc(plen + 1)))
            return false;
        dn = pct_decode(req->target, plen, path);
        ok = dn >= 0 && matcher_test(m->path, path, (size_t)dn);
        sbx__free(path);
        if (!ok)
            return false;
    }
    ok = false;
    if (m->nquery) {
        /* decoded key=value pairs, in one buffer */
        const char *s = q ? q + 1 : "";
        size_t len = strlen(s), o = 0;
        if (!(dec = sbx__malloc(2 * len + 2)))
            return false;
        while (*s && n < REQ_PARTS) {
            size_t pl = strcspn(s, "&");
            const char *eq = memchr(s, '=', pl);
            size_t kl = eq ? (size_t)(eq - s) : pl;
            ssize_t a = pct_decode(s, kl, dec + o), b;
            if (a < 0)
                goto out;
            keys[n] = dec + o;
            klen[n] = (size_t)a;
            o += (size_t)a + 1;
            b = eq ? pct_decode(eq + 1, pl - kl - 1, dec + o) : (dec[o] = '\0', 0);
            if (b < 0)
                goto out;
            vals[n] = dec + o;
            vlen[n] = (size_t)b;
            o += (size_t)b + 1;
            n++;
            s += pl;
            if (*s == '&')
                s++;
        }
        for (size_t i = 0; i < m->nquery; i++)
            if (!kv_any(&m->query[i], keys, klen, vals, vlen, n))
                goto out;
    }
    if (m->nheaders) {
        /* names lowercased (they are case-blind), values trimmed */
        const char *line = req->headers, *end = req->headers + req->hlen;
        char *names = sbx__malloc(req->hlen + 1);
        size_t hn = 0;
        bool pass = true;
        if (!names)
            goto out;
        while (line < end && hn < REQ_PARTS) {
            const char *eol = memchr(line, '\n', (size_t)(end - line)), *colon;
            size_t ll = eol ? (size_t)(eol - line) : (size_t)(end - line);
            if (ll && line[ll - 1] == '\r')
                ll--;
            if (!ll)
                break;
            if ((colon = memchr(line, ':', ll))) {
                const char *v = colon + 1, *ve = line + ll;
                size_t nl = (size_t)(colon - line);
                char *lname = names + (line - req->headers);
                for (size_t k = 0; k < nl; k++)
                    lname[k] = (char)((line[k] >= 'A' && line[k] <= 'Z') ? line[k] + 32 : line[k]);
                while (v < ve && (*v == ' ' || *v == '\t'))
                    v++;
                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                    ve--;
                keys[hn] = lname;
                klen[hn] = nl;
                vals[hn] = v;
                vlen[hn] = (size_t)(ve - v);
                hn++;
            }
            line = eol ? eol + 1 : end;
        }
        for (size_t i = 0; pass && i < m->nheaders; i++)
            pass = kv_any(&m->headers[i], keys, klen, vals, vlen, hn);
        sbx__free(names);
        if (!pass)
            goto out;
    }
    ok = true;
out:
    sbx__free(dec);
    return ok;
}

/* injectionRules: [{"domain": d, "headers": {name: value}, "match"?}]. The echo keeps
 * only the names ("headerNames"), as the protocol asks. */
static int parse_inject(struct netpolicy *p, json_t *rules, json_t *echo_rules, char *err, size_t errlen)
{
    size_t i;
    json_t *rule;
    if (json_array_size(rules) > MAX_RULES) {
        set_err(err, errlen, "networkPolicy.injectionRules has too many entries");
        return -1;
    }
    p->inject = sbx__calloc(json_array_size(rules) + 1, sizeof *p->inject);
    if (!p->inject)
        goto oom;
    json_array_foreach(rules, i, rule) {
        json_t *dom = json_object_get(rule, "domain"), *hdrs = json_object_get(rule, "headers");
        json_t *names, *v;
        struct np_inject *r = &p->inject[p->ninject];
        const char *k;
        if (!json_is_object(rule) || !json_is_string(dom) ||
            !(r->domain = normalize_domain(json_string_value(dom)))) {
            set_err(err, errlen, "networkPolicy.injectionRules[%zu].domain must be a domain name, '*' "
                                 "or '*.domain'", i);
            return -1;
        }
        p->ninject++;
        if (json_object_get(rule, "match")) {
            char w[64];
            snprintf(w, sizeof w, "networkPolicy.injectionRules[%zu].match", i);
            if (!(r->match = parse_match(json_object_get(rule, "match"), w, err, errlen)))
                return -1;
        }
        if (hdrs && !json_is_object(hdrs)) {
            set_err(err, errlen, "networkPolicy.injectionRules[%zu].headers must be an object of "
                                 "strings", i);
            return -1;
        }
        r->names = sbx__calloc(json_object_size(hdrs) + 1, sizeof *r->names);
        r->values = sbx__calloc(json_object_size(hdrs) + 1, sizeof *r->values);
        names = json_array();
        if (!r->names || !r->values || !names) {
            json_decref(names);
            goto oom;
        }
        json_object_foreach(hdrs, k, v) {
            if (!header_name_ok(k) || !json_is_string(v) ||
                !header_value_ok(json_string_value(v), json_string_length(v))) {
                json_decref(names);
                set_err(err, errlen, "networkPolicy.injectionRules[%zu].headers: '%s' must be a header "
                                     "name with a string value without line breaks", i, k);
                return -1;
            }
            r->names[r->n] = sbx__strdup(k);
            r->values[r->n] = sbx__strdup(json_string_value(v));
            if (!r->names[r->n] || !r->values[r->n]) {
                sbx__free(r->names[r->n]);
                sbx__free_secret(r->values[r->n]);
                json_decref(names);
                goto oom;
            }
            r->n++;
            json_array_append_new(names, json_string(k));
        }
        json_array_append_new(echo_rules, json_pack("{s:s,s:o}", "domain", json_string_value(dom),
                                                    "headerNames", names));
        if (r->match)
            json_object_set(json_array_get(echo_rules, json_array_size(echo_rules) - 1), "match",
                            json_object_get(rule, "match"));
    }
    return 0;
oom:
    set_err(err, errlen, "out of memory");
    return -1;
}

json_t *netpolicy_api_form(json_t *j, char *err, size_t errlen)
{
    json_t *out;
    if (sbx__netpolicy_is_sdk(j))
        return sbx__netpolicy_from_sdk(j, &out, err, errlen) != SBX_OK ? NULL : out;
    return json_incref(j);
}

struct netpolicy *netpolicy_parse(json_t *j, char *err, size_t errlen)
{
    struct netpolicy *p;
    json_t *v2 = NULL;
    if (sbx__netpolicy_is_sdk(j)) {
        if (sbx__netpolicy_from_sdk(j, &v2, err, errlen) != SBX_OK)
            return NULL;
        j = v2;
    }
    p = parse_api(j, err, errlen);
    json_decref(v2);
    return p;
}

static struct netpolicy *parse_api(json_t *j, char *err, size_t errlen)
{
    struct netpolicy *p;
    json_t *mode, *domains, *allowed, *denied, *inj;
    const char *m;

    if (!json_is_object(j)) {
        set_err(err, errlen, "%s", "networkPolicy must be an object with a \"mode\" (or \"allow\" and "
                                   "\"subnets\")");
        return NULL;
    }
    mode = json_object_get(j, "mode");
    m = json_string_value(mode);
    if (!m) {
        set_err(err, errlen, "%s", "networkPolicy.mode is required (allow-all, deny-all or custom), or "
                                   "the form {\"allow\": ..., \"subnets\": ...}");
        return NULL;
    }
    p = sbx__calloc(1, sizeof *p);
    if (!p) {
        set_err(err, errlen, "%s", "out of memory");
        return NULL;
    }
    if (strcmp(m, "allow-all") == 0) {
        p->mode = NP_ALLOW_ALL;
    } else if (strcmp(m, "deny-all") == 0) {
        p->mode = NP_DENY_ALL;
    } else if (strcmp(m, "custom") == 0) {
        p->mode = NP_CUSTOM;
    } else {
        set_err(err, errlen, "networkPolicy.mode '%s' is not one of allow-all, deny-all, custom", m);
        goto fail;
    }
    if (p->mode == NP_CUSTOM) {
        size_t i;
        json_t *e;
        if (string_array(j, "allowedDomains", &domains, err, errlen) < 0 ||
            string_array(j, "allowedCIDRs", &allowed, err, errlen) < 0 ||
            string_array(j, "deniedCIDRs", &denied, err, errlen) < 0)
            goto fail;
        inj = json_object_get(j, "injectionRules");
        if (inj && !json_is_null(inj) && !json_is_array(inj)) {
            set_err(err, errlen, "%s", "networkPolicy.injectionRules must be an array");
            goto fail;
        }
        if (domains) {
            p->domains = sbx__calloc(json_array_size(domains) + 1, sizeof *p->domains);
            if (!p->domains)
                goto oom;
            json_array_foreach(domains, i, e) {
                char *d = normalize_domain(json_string_value(e));
                if (!d) {
                    set_err(err, errlen,
                            "networkPolicy.allowedDomains: '%s' is not a domain name, '*' or "
                            "'*.domain'", json_string_value(e));
                    goto fail;
                }
                p->domains[p->ndomains++] = d;
            }
        }
        if (parse_cidrs(allowed, "allowedCIDRs", &p->allow, &p->nallow, err, errlen) < 0 ||
            parse_cidrs(denied, "deniedCIDRs", &p->deny, &p->ndeny, err, errlen) < 0)
            goto fail;
    }
    /* Echo what was given (extra fields are kept, as the protocol says),
     * with injection rules reduced to their header names. */
    p->echo = json_deep_copy(j);
    if (!p->echo)
        goto oom;
    json_object_del(p->echo, "injectionRules");
    if (p->mode == NP_CUSTOM && json_array_size(inj) > 0) {
        json_t *echo_rules = json_array();
        if (!echo_rules)
            goto oom;
        json_object_set_new(p->echo, "injectionRules", echo_rules);
        if (parse_inject(p, inj, echo_rules, err, errlen) < 0)
            goto fail;
    }
    return p;
oom:
    set_err(err, errlen, "%s", "out of memory");
fail:
    netpolicy_free(p);
    return NULL;
}

json_t *netpolicy_json(const struct netpolicy *p)
{
    return json_incref(p->echo);
}

bool netpolicy_domain_match(const char *d, const char *host)
{
    return netrules_domain_match(d, host); /* one matcher for the proxy and sbxd-net */
}

bool netpolicy_domain_allowed(const struct netpolicy *p, const char *host)
{
    if (p->mode == NP_ALLOW_ALL)
        return true;
    if (p->mode == NP_DENY_ALL)
        return false;
    for (size_t i = 0; i < p->ndomains; i++)
        if (netpolicy_domain_match(p->domains[i], host))
            return true;
    return false;
}

bool netpolicy_intercepts(const struct netpolicy *p, const char *host)
{
    for (size_t i = 0; i < p->ninject; i++)
        if (p->inject[i].n && netpolicy_domain_match(p->inject[i].domain, host))
            return true;
    return false;
}

size_t netpolicy_inject_for(const struct netpolicy *p, const char *host, const struct np_req *req, char ***names,
                            char ***values)
{
    size_t n = 0, cap = 0;
    char **nv = NULL, **vv = NULL;
    for (size_t i = 0; i < p->ninject; i++) {
        const struct np_inject *r = &p->inject[i];
        if (!netpolicy_domain_match(r->domain, host))
            continue;
        if (r->match && (!req || !netpolicy_match_request(r->match, req)))
            continue;
        for (size_t k = 0; k < r->n; k++) {
            size_t at = n;
            /* A later rule overwrites the same header (names are case-blind). */
            for (size_t x = 0; x < n; x++)
                if (strcasecmp(nv[x], r->names[k]) == 0)
                    at = x;
            if (at == n) {
                if (n == cap) {
                    size_t c2 = cap ? cap * 2 : 4;
                    char **a = sbx__realloc(nv, c2 * sizeof *a), **b;
                    if (!a)
                        break;
                    nv = a;
                    b = sbx__realloc(vv, c2 * sizeof *b);
                    if (!b)
                        break;
                    vv = b;
                    cap = c2;
                }
                nv[n] = sbx__strdup(r->names[k]);
                vv[n] = NULL;
                n++;
            }
            sbx__free_secret(vv[at]);
            vv[at] = sbx__strdup(r->values[k]);
        }
    }
    *names = nv;
    *values = vv;
    return n;
}

int netpolicy_addr_verdict(const struct netpolicy *p, int family, const void *addr)
{
    return netpolicy_addr_verdict_within(p, family, addr, 0);
}

int netpolicy_addr_verdict_within(const struct netpolicy *p, int family, const void *addr, int min_prefix)
{
    const unsigned char *a = addr;
    for (size_t i = 0; i < p->ndeny; i++)
        if (cidr_match(&p->deny[i], family, a))
            return -1;
    for (size_t i = 0; i < p->nallow; i++)
        if (p->allow[i].prefix >= min_prefix && cidr_match(&p->allow[i], family, a))
            return 1;
    return 0;
}
