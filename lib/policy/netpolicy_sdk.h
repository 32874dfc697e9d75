/* SPDX-License-Identifier: MIT */
/* What the network policy shares inside the library and with sbxd: the
 * request shape of the 2.x/3.x SDKs turned into the API form ("mode",
 * "allowedDomains", ...), which sbx_netpolicy_load_json() and sbxd both
 * take, and the policy's reading of a host. */
#ifndef SBX_NETPOLICY_SDK_H
#define SBX_NETPOLICY_SDK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <sbxrun/common.h>

/* Whether j is in the SDK's shape: an object with "allow" or "subnets"
 * and no "mode". */
bool sbx__netpolicy_is_sdk(const json_t *j);

/* j (the SDK's shape) in the API form, a new reference in *out: SBX_OK,
 * SBX_E_INVALID_ARG with err saying what is wrong, or SBX_E_NOMEM. */
sbx_status sbx__netpolicy_from_sdk(json_t *j, json_t **out, char *err, size_t errlen);

/* Wipe the header values (secrets) of a policy tree in either shape,
 * before it is freed. */
void sbx__netpolicy_wipe(json_t *root);

/* Whether the host [h, h+n), as a URL writes it, is an IP address to the
 * policy: dotted IPv4 or IPv6, in brackets or not, with or without one
 * trailing dot. A header is injected per domain name, never per address. */
bool sbx__netpolicy_is_address(const char *h, size_t n);

#endif /* SBX_NETPOLICY_SDK_H */
