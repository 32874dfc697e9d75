/* SPDX-License-Identifier: MIT */
/*
 * netpolicy: validation and matching of the API network policy (protocol
 * section 4.9). Anything sbxd cannot enforce is refused with a message rather
 * than accepted and ignored: a policy is never silently widened.
 */
#include "netpolicy.h"
#include "netrules.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

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

static void inject_free(struct np_inject *r)
{
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

/* injectionRules: [{"domain": d, "headers": {name: value}}]. The echo keeps
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
    }
    return 0;
oom:
    set_err(err, errlen, "out of memory");
    return -1;
}

/* The policy as the 2.x/3.x SDKs send it, {"allow": [domains] | {domain:
 * [rules]}, "subnets": {"allow": [...], "deny": [...]}}, turned into the API
 * form above (a new reference in *out). A rule is {"match"?, and exactly one
 * of "transform", "forwardURL", "response"}; transform headers become
 * injection rules. What sbxd cannot enforce is refused by name. */
static int from_v2(json_t *j, json_t **out, char *err, size_t errlen)
{
    json_t *allow = json_object_get(j, "allow"), *subnets = json_object_get(j, "subnets");
    json_t *o = json_pack("{s:s}", "mode", "custom"), *domains = json_array(), *inj = json_array();
    const char *key;
    json_t *v;
    *out = NULL;
    if (!o || !domains || !inj)
        goto oom;
    json_object_foreach(j, key, v) {
        if (strcmp(key, "allow") && strcmp(key, "subnets")) {
            set_err(err, errlen, "networkPolicy.%s is not a policy field (allow, subnets; or mode)", key);
            goto fail;
        }
    }
    if (allow && !json_is_null(allow) && !json_is_array(allow) && !json_is_object(allow)) {
        set_err(err, errlen, "%s", "networkPolicy.allow must be a list of domains or an object of "
                                   "domain: [rules]");
        goto fail;
    }
    if (json_is_array(allow)) {
        size_t i;
        json_array_foreach(allow, i, v) {
            if (!json_is_string(v)) {
                set_err(err, errlen, "networkPolicy.allow[%zu] must be a domain string", i);
                goto fail;
            }
            json_array_append(domains, v);
        }
    } else if (json_is_object(allow)) {
        json_object_foreach(allow, key, v) {
            size_t i;
            json_t *rule, *hdrs = json_object();
            if (!hdrs)
                goto oom;
            json_array_append_new(domains, json_string(key));
            if (!json_is_array(v)) {
                json_decref(hdrs);
                set_err(err, errlen, "networkPolicy.allow[\"%s\"] must be a list of rules", key);
                goto fail;
            }
            json_array_foreach(v, i, rule) {
                json_t *tf = json_object_get(rule, "transform"), *t;
                int actions = !!tf + !!json_object_get(rule, "forwardURL") + !!json_object_get(rule, "response");
                size_t k;
                const char *what = NULL;
                if (!json_is_object(rule) || actions != 1)
                    what = "must be an object with exactly one of transform, forwardURL, response";
                else if (json_object_get(rule, "match"))
                    what = "has a match: sbxd applies rules to every request to the domain and cannot "
                           "honour a matcher, so the rule is refused rather than widened";
                else if (json_object_get(rule, "forwardURL"))
                    what = "is a forwardURL rule: sbxd cannot mint the Vercel OIDC token the receiving "
                           "proxy requires, so it does not forward";
                else if (json_object_get(rule, "response"))
                    what = "is a response rule: sbxd's egress proxy does not answer requests itself";
                else if (!json_is_array(tf))
                    what = "has a transform that is not a list of {headers}";
                if (what) {
                    json_decref(hdrs);
                    set_err(err, errlen, "networkPolicy.allow[\"%s\"][%zu] %s", key, i, what);
                    goto fail;
                }
                json_array_foreach(tf, k, t) {
                    json_t *h = json_object_get(t, "headers");
                    if (!json_is_object(t) || (h && !json_is_object(h)) ||
                        json_object_size(t) != (h ? 1u : 0u)) {
                        json_decref(hdrs);
                        set_err(err, errlen, "networkPolicy.allow[\"%s\"][%zu].transform[%zu] must be "
                                             "{\"headers\": {name: value}}", key, i, k);
                        goto fail;
                    }
                    if (h)
                        json_object_update(hdrs, h);
                }
            }
            if (json_object_size(hdrs))
                json_array_append_new(inj, json_pack("{s:s,s:o}", "domain", key, "headers", hdrs));
            else
                json_decref(hdrs);
        }
    }
    if (subnets && !json_is_null(subnets)) {
        json_t *a = json_object_get(subnets, "allow"), *d = json_object_get(subnets, "deny");
        if (!json_is_object(subnets) || json_object_size(subnets) != (a ? 1u : 0u) + (d ? 1u : 0u)) {
            set_err(err, errlen, "%s", "networkPolicy.subnets must be {\"allow\": [CIDR...], \"deny\": [CIDR...]}");
            goto fail;
        }
        if (a)
            json_object_set(o, "allowedCIDRs", a);
        if (d)
            json_object_set(o, "deniedCIDRs", d);
    }
    json_object_set(o, "allowedDomains", domains);
    if (json_array_size(inj))
        json_object_set(o, "injectionRules", inj);
    json_decref(domains);
    json_decref(inj);
    *out = o;
    return 0;
oom:
    set_err(err, errlen, "%s", "out of memory");
fail:
    json_decref(o);
    json_decref(domains);
    json_decref(inj);
    return -1;
}

json_t *netpolicy_api_form(json_t *j, char *err, size_t errlen)
{
    json_t *out;
    if (json_is_object(j) && !json_object_get(j, "mode") &&
        (json_object_get(j, "allow") || json_object_get(j, "subnets")))
        return from_v2(j, &out, err, errlen) < 0 ? NULL : out;
    return json_incref(j);
}

struct netpolicy *netpolicy_parse(json_t *j, char *err, size_t errlen)
{
    struct netpolicy *p;
    json_t *v2 = NULL;
    if (json_is_object(j) && !json_object_get(j, "mode") &&
        (json_object_get(j, "allow") || json_object_get(j, "subnets"))) {
        if (from_v2(j, &v2, err, errlen) < 0)
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

size_t netpolicy_inject_for(const struct netpolicy *p, const char *host, char ***names, char ***values)
{
    size_t n = 0, cap = 0;
    char **nv = NULL, **vv = NULL;
    for (size_t i = 0; i < p->ninject; i++) {
        const struct np_inject *r = &p->inject[i];
        if (!netpolicy_domain_match(r->domain, host))
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
    const unsigned char *a = addr;
    for (size_t i = 0; i < p->ndeny; i++)
        if (cidr_match(&p->deny[i], family, a))
            return -1;
    for (size_t i = 0; i < p->nallow; i++)
        if (cidr_match(&p->allow[i], family, a))
            return 1;
    return 0;
}
