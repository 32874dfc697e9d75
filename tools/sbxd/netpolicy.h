/* SPDX-License-Identifier: MIT */
/* netpolicy: the API network policy of a sandbox, parsed, validated and matched. */
#ifndef SBXD_NETPOLICY_H
#define SBXD_NETPOLICY_H

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

enum np_mode { NP_ALLOW_ALL, NP_DENY_ALL, NP_CUSTOM };

struct cidr {
    int family;            /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int prefix;
};

/* A string test of a rule's match: {"exact"}, {"startsWith"} or {"regex"}
 * (RE2 syntax, run by PCRE2 with match limits). */
enum np_mkind { NP_EXACT, NP_PREFIX, NP_REGEX };
struct np_matcher {
    enum np_mkind kind;
    char *s;
    void *re;              /* pcre2_code, for NP_REGEX */
};
/* One entry of a match's queryString or headers list: a parameter (header)
 * whose key and value pass the tests given. */
struct np_kv {
    struct np_matcher *key, *value; /* NULL: any */
};
/* Which requests a rule applies to: every dimension given must match. */
struct np_match {
    struct np_matcher *path;
    char **methods;        /* any of them */
    size_t nmethods;
    struct np_kv *query, *headers; /* all of them */
    size_t nquery, nheaders;
};

/* Headers set (overwritten) on requests to a domain: credential brokering.
 * Values are secrets: never echoed, logged or written to disk. */
struct np_inject {
    char *domain;          /* as allowedDomains: "*", "*.x.y" or "x.y" */
    char **names, **values;
    size_t n;
    struct np_match *match; /* NULL: every request to the domain */
};

/* One request, as the egress proxy read its head. */
struct np_req {
    const char *method;
    const char *target;    /* origin form: /path?query */
    const char *headers;   /* the header lines, "Name: value\r\n"... */
    size_t hlen;
};

struct netpolicy {
    enum np_mode mode;
    struct np_inject *inject;
    size_t ninject;
    char **domains;        /* lowercase; "*", "*.x.y" or "x.y" */
    size_t ndomains;
    struct cidr *allow, *deny;
    size_t nallow, ndeny;
    json_t *echo;          /* what GET returns: the policy as given */
};

/* Parse an API policy object; NULL with a message in err when it is invalid
 * or asks for something sbxd cannot enforce. */
struct netpolicy *netpolicy_parse(json_t *j, char *err, size_t errlen);
struct netpolicy *netpolicy_allow_all(void);
/* The API form ({"mode", allowedDomains, injectionRules...}) of a policy
 * given in either form (the 2.x SDKs send {"allow", "subnets"}): a new
 * reference, or NULL with a message. Not validated further. */
json_t *netpolicy_api_form(json_t *j, char *err, size_t errlen);
json_t *netpolicy_json(const struct netpolicy *p); /* new reference */
void netpolicy_free(struct netpolicy *p);

/* Whether a host name (lowercase, no trailing dot) is allowed by the domain
 * rules. "*.b.org" matches "a.b.org" but not "b.org". */
bool netpolicy_domain_allowed(const struct netpolicy *p, const char *host);
/* For one resolved address: -1 denied by deniedCIDRs (which win over
 * everything), 1 allowed by allowedCIDRs, 0 neither. */
int netpolicy_addr_verdict(const struct netpolicy *p, int family, const void *addr);
/* The same, counting only allowedCIDRs entries of at least min_prefix bits:
 * those that name addr's block and not a wider range around it. */
int netpolicy_addr_verdict_within(const struct netpolicy *p, int family, const void *addr, int min_prefix);
bool netpolicy_parse_cidr(const char *s, struct cidr *out);
/* Whether a domain pattern ("*", "*.b.org", "a.b.org") matches host. */
bool netpolicy_domain_match(const char *pattern, const char *host);
/* The headers to inject into req to host, later rules overwriting earlier
 * ones: names and values (malloc'd arrays); returns how many. A rule with a
 * match applies only when req is given and matches it. */
size_t netpolicy_inject_for(const struct netpolicy *p, const char *host, const struct np_req *req, char ***names,
                            char ***values);
/* Whether some rule may inject into requests to host (the proxy then reads
 * its requests: TLS is intercepted). */
bool netpolicy_intercepts(const struct netpolicy *p, const char *host);
/* Whether req passes m. A path with dot segments or encoded separators
 * (%2e, %2f, %5c, a backslash) never does: an upstream may read it
 * differently, and a rule restricted to some paths fails closed. */
bool netpolicy_match_request(const struct np_match *m, const struct np_req *req);

#endif /* SBXD_NETPOLICY_H */
