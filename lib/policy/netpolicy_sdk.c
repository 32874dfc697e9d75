/* SPDX-License-Identifier: MIT */
/* The SDK's network-policy request shape in the API form (netpolicy_sdk.h). */
#include "util/internal.h"

#include "policy/netpolicy_sdk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "util/str.h"

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void wipe_headers(json_t *h)
{
    const char *k;
    json_t *v;
    if (!json_is_object(h))
        return;
    json_object_foreach(h, k, v)
        if (json_is_string(v)) /* jansson's own buffer, about to be freed */
            sbx__wipe((void *)(uintptr_t)json_string_value(v), json_string_length(v));
}

void sbx__netpolicy_wipe(json_t *root)
{
    json_t *rules = json_object_get(root, "injectionRules"), *allow = json_object_get(root, "allow"), *r, *dr, *t;
    const char *dom;
    size_t i, j, k;
    if (json_is_array(rules))
        json_array_foreach(rules, i, r)
            wipe_headers(json_object_get(r, "headers"));
    if (json_is_object(allow))
        json_object_foreach(allow, dom, dr)
            if (json_is_array(dr))
                json_array_foreach(dr, j, r)
                    if (json_is_array(json_object_get(r, "transform")))
                        json_array_foreach(json_object_get(r, "transform"), k, t)
                            wipe_headers(json_object_get(t, "headers"));
}

bool sbx__netpolicy_is_sdk(const json_t *j)
{
    return json_is_object(j) && !json_object_get(j, "mode") &&
           (json_object_get(j, "allow") || json_object_get(j, "subnets"));
}

/* The policy as the 2.x/3.x SDKs send it, {"allow": [domains] | {domain:
 * [rules]}, "subnets": {"allow": [...], "deny": [...]}}, turned into the API
 * form (a new reference in *out). A rule is {"match"?, and exactly one
 * of "transform", "forwardURL", "response"}; transform headers become
 * injection rules. What cannot be enforced is refused by name. */
sbx_status sbx__netpolicy_from_sdk(json_t *j, json_t **out, char *err, size_t errlen)
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
            if (json_array_append(domains, v) < 0)
                goto oom;
        }
    } else if (json_is_object(allow)) {
        json_object_foreach(allow, key, v) {
            size_t i;
            json_t *rule;
            /* every failure counts: a policy missing a part is another policy */
            if (json_array_append_new(domains, json_string(key)) < 0)
                goto oom;
            if (!json_is_array(v)) {
                set_err(err, errlen, "networkPolicy.allow[\"%s\"] must be a list of rules", key);
                goto fail;
            }
            /* one injection rule per transform rule, in order (a later
             * one overwrites an earlier one's header where both apply) */
            json_array_foreach(v, i, rule) {
                json_t *tf = json_object_get(rule, "transform"), *t, *hdrs, *ir, *m = json_object_get(rule, "match");
                int actions = !!tf + !!json_object_get(rule, "forwardURL") + !!json_object_get(rule, "response");
                size_t k;
                const char *what = NULL;
                if (!json_is_object(rule) || actions != 1 ||
                    json_object_size(rule) != 1u + (m ? 1u : 0u))
                    what = "must be an object with exactly one of transform, forwardURL, response (and a match)";
                else if (json_object_get(rule, "forwardURL"))
                    what = "is a forwardURL rule, which is not supported here (forwarding needs the Vercel "
                           "OIDC token the receiving proxy requires)";
                else if (json_object_get(rule, "response"))
                    what = "is a response rule, which is not supported here (the egress proxy does not "
                           "answer requests itself)";
                else if (!json_is_array(tf))
                    what = "has a transform that is not a list of {headers}";
                if (what) {
                    set_err(err, errlen, "networkPolicy.allow[\"%s\"][%zu] %s", key, i, what);
                    goto fail;
                }
                if (!(hdrs = json_object()))
                    goto oom;
                json_array_foreach(tf, k, t) {
                    json_t *h = json_object_get(t, "headers");
                    if (!json_is_object(t) || (h && !json_is_object(h)) ||
                        json_object_size(t) != (h ? 1u : 0u)) {
                        json_decref(hdrs);
                        set_err(err, errlen, "networkPolicy.allow[\"%s\"][%zu].transform[%zu] must be "
                                             "{\"headers\": {name: value}}", key, i, k);
                        goto fail;
                    }
                    if (h && json_object_update(hdrs, h) < 0) {
                        json_decref(hdrs);
                        goto oom;
                    }
                }
                ir = json_pack("{s:s,s:o}", "domain", key, "headers", hdrs);
                if (!ir)
                    goto oom;
                if (m && json_object_set(ir, "match", m) < 0) {
                    json_decref(ir);
                    goto oom;
                }
                if (json_array_append_new(inj, ir) < 0)
                    goto oom; /* it took ir, even though it failed */
            }
        }
    }
    if (subnets && !json_is_null(subnets)) {
        json_t *a = json_object_get(subnets, "allow"), *d = json_object_get(subnets, "deny");
        if (!json_is_object(subnets) || json_object_size(subnets) != (a ? 1u : 0u) + (d ? 1u : 0u)) {
            set_err(err, errlen, "%s", "networkPolicy.subnets must be {\"allow\": [CIDR...], \"deny\": [CIDR...]}");
            goto fail;
        }
        if ((a && json_object_set(o, "allowedCIDRs", a) < 0) || (d && json_object_set(o, "deniedCIDRs", d) < 0))
            goto oom;
    }
    if (json_object_set(o, "allowedDomains", domains) < 0 ||
        (json_array_size(inj) && json_object_set(o, "injectionRules", inj) < 0))
        goto oom;
    json_decref(domains);
    json_decref(inj);
    *out = o;
    return SBX_OK;
oom:
    set_err(err, errlen, "%s", SBX__NOMEM_TEXT);
    json_decref(o);
    json_decref(domains);
    json_decref(inj);
    return SBX_E_NOMEM;
fail:
    json_decref(o);
    json_decref(domains);
    json_decref(inj);
    return SBX_E_INVALID_ARG;
}
