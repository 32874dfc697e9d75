/* SPDX-License-Identifier: MIT */
/*
 * sbx_netpolicy: a sandbox's network policy, built in code or from a preset
 * per job type, validated, and written as the protocol's `networkPolicy`
 * JSON (for sbx_sandbox_set_network_policy_json() and
 * sbx_sandbox_update_network_policy()). Included by <sbxrun/sbxrun.h>.
 *
 * Modes: allow-all, deny-all, and custom (allowed domains with `*.`
 * wildcards, allowed and denied CIDRs, and header-injection rules that give a
 * credential to requests to one domain so it never enters the sandbox).
 * Header values are secrets: wiped on free, never in last_error.
 */
#ifndef SBXRUN_NETPOLICY_H
#define SBXRUN_NETPOLICY_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_netpolicy sbx_netpolicy;

/**
 * Network policy modes.
 * @since 1.0
 */
typedef enum sbx_network_mode {
    /** Every destination is reachable. */
    SBX_NETPOLICY_ALLOW_ALL = 0,
    /** No destination is reachable. */
    SBX_NETPOLICY_DENY_ALL = 1,
    /** Only the allowed domains and networks, minus the denied networks. */
    SBX_NETPOLICY_CUSTOM = 2
} sbx_network_mode;

/**
 * A new network policy in deny-all mode.
 *
 * @return the policy, or NULL when out of memory. Free with
 *         sbx_netpolicy_free().
 * @since 1.0
 */
SBX_API sbx_netpolicy *sbx_netpolicy_new(void);

/**
 * Free a network policy, wiping its header values. NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_netpolicy_free(sbx_netpolicy *n);

/**
 * What went wrong in the most recent failing call on the policy: "" when the
 * last call on it that can fail succeeded (each such call clears it first).
 * Getters and sbx_netpolicy_last_error() itself never change it. Owned by
 * the handle, valid until the next call on it that can fail. Never NULL; for
 * a NULL handle, "invalid argument: the handle is NULL". Never contains a
 * secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_netpolicy_last_error(const sbx_netpolicy *n);

/**
 * Set the mode. Switching to allow-all or deny-all drops the custom rules;
 * switching to custom keeps them (none: nothing is allowed).
 *
 * @param mode  SBX_NETPOLICY_ALLOW_ALL, SBX_NETPOLICY_DENY_ALL or
 *              SBX_NETPOLICY_CUSTOM.
 * @return SBX_OK, SBX_E_INVALID_ARG.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_set_mode(sbx_netpolicy *n, sbx_network_mode mode);

/**
 * The current mode; SBX_NETPOLICY_DENY_ALL when n is NULL (what a missing
 * policy must mean).
 * @since 1.0
 */
SBX_API sbx_network_mode sbx_netpolicy_mode(const sbx_netpolicy *n);

/**
 * Allow a domain (custom mode; the policy switches to it). `*.example.org`
 * matches every name below example.org but not example.org itself; `*` alone
 * matches every domain (to inject headers for some while allowing all).
 * Names are compared lowercase; a duplicate is not added twice.
 *
 * A name has at least two labels of 1 to 63 letters, digits and '-' (not
 * first or last), at most 253 bytes; one trailing dot is dropped. Single-label
 * names ("localhost"), IP addresses (use sbx_netpolicy_allow_cidr()), `*`
 * anywhere but as a whole first label, `*.<one label>`, non-ASCII and control
 * bytes are refused. See doc/netpolicy.md.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (not a domain name: message says why),
 *         SBX_E_NOMEM. On failure n is unchanged.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_allow_domain(sbx_netpolicy *n, const char *domain);

/**
 * Allow an IPv4 or IPv6 network (`10.0.0.0/8`, `2001:db8::/32`; a bare
 * address is a /32 or /128) in custom mode; it bypasses the domain allowlist.
 * Stored in canonical form (`2001:DB8::/32` as `2001:db8::/32`); a duplicate
 * is not added twice. `0.0.0.0/0` and `::/0` are accepted and open every
 * address of their family.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (not a CIDR, or host bits set: the
 *         message names the network), SBX_E_NOMEM. On failure n is unchanged.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_allow_cidr(sbx_netpolicy *n, const char *cidr);

/**
 * Deny a network in custom mode; denied CIDRs win over allowed domains and
 * CIDRs.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_deny_cidr(sbx_netpolicy *n, const char *cidr);

/**
 * Set a request header on outgoing requests to one domain (custom mode; the
 * domain is allowed too). The value is a secret: copied, wiped on free and
 * on replacement, never shown in messages. Headers for the same domain make
 * one rule; setting a name again (compared case-insensitively, stored
 * lowercase) replaces its value.
 *
 * @param domain  a domain name as for sbx_netpolicy_allow_domain(), but not
 *                `*` (the header would go to every domain).
 * @param name    an HTTP header name (token characters), not one that routes
 *                or frames the request (host, content-length, ...).
 * @param value   the value: UTF-8, at most 8192 bytes, no CR, LF, NUL or
 *                other control character but tab.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM. On failure n is unchanged.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_inject_header(sbx_netpolicy *n, const char *domain, const char *name,
                                               const char *value);

/**
 * Replace n with the preset of a job type: verify.* deny-all; repo.clone the
 * git host of input "url" only; repo.applyPatch deny-all; deps.install the
 * package registries (plus the host of input "registry" if given);
 * db.migrate the database host of input "url" (or "host") only. See
 * doc/netpolicy.md for the exact lists. A preset that needs an input fails
 * without it; it never falls back to allow-all. On failure n is unchanged.
 *
 * @param job_type  the job type: repo.clone, repo.applyPatch, deps.install,
 *                  verify.lint, verify.typecheck, verify.test, verify.build
 *                  or db.migrate. "install" is accepted as another name of
 *                  deps.install (its name before 1.0); messages say
 *                  deps.install.
 * @param ninputs   how many inputs follow (0: keys and values may be NULL).
 * @param keys      ninputs input names.
 * @param values    ninputs input values.
 * @return SBX_OK, SBX_E_INVALID_ARG (unknown job type or input, missing or
 *         bad input: named in last_error), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_load_preset(sbx_netpolicy *n, const char *job_type, size_t ninputs,
                                        const char *const *keys, const char *const *values);

/**
 * Replace n with a policy in the protocol's JSON form (as sent to the API),
 * validating every field. On failure n is unchanged.
 *
 * The 2.x/3.x SDKs' shape, {"allow": [domains] | {domain: [rules]},
 * "subnets": {"allow": [...], "deny": [...]}} with no "mode", is read as
 * the custom policy it stands for (transform headers become injection
 * rules; forwardURL and response rules are refused by name). Otherwise
 * "mode" is required (an object without it is not taken as allow-all);
 * lists are allowed only in custom mode; unknown fields, duplicate keys and
 * NUL bytes are refused; each entry is checked as by the setters, and the
 * message names it (`allowedDomains[2]: ...`) without quoting header values.
 *
 * @return SBX_OK, SBX_E_PARSE (not JSON), SBX_E_INVALID_ARG (a bad field,
 *         named in last_error), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_load_json(sbx_netpolicy *n, const char *json);

/**
 * Write n as the protocol's `networkPolicy` JSON, header values included (it
 * is the request body). Arrays that are empty are left out; entries keep the
 * order they were added in. n and its last_error are not changed.
 *
 * @param out  receives a NUL-terminated string; free it with sbx_free()
 *             (overwrite it first if it holds header values). Set to NULL
 *             on failure.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_netpolicy_to_json(const sbx_netpolicy *n, char **out);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_NETPOLICY_H */
