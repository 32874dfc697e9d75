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

/* Headers set (overwritten) on requests to a domain: credential brokering.
 * Values are secrets: never echoed, logged or written to disk. */
struct np_inject {
    char *domain;          /* as allowedDomains: "*", "*.x.y" or "x.y" */
    char **names, **values;
    size_t n;
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
bool netpolicy_parse_cidr(const char *s, struct cidr *out);
/* Whether a domain pattern ("*", "*.b.org", "a.b.org") matches host. */
bool netpolicy_domain_match(const char *pattern, const char *host);
/* The headers to inject for host, later rules overwriting earlier ones, as
 * "Name: value" lines in out (cleared first); returns how many. */
size_t netpolicy_inject_for(const struct netpolicy *p, const char *host, char ***names, char ***values);

#endif /* SBXD_NETPOLICY_H */
