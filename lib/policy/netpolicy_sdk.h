/* SPDX-License-Identifier: MIT */
/* The network policy in the request shape of the 2.x/3.x SDKs, turned into
 * the API form ("mode", "allowedDomains", ...): shared by the library's
 * sbx_netpolicy_load_json() and sbxd, which both take either. */
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

#endif /* SBX_NETPOLICY_SDK_H */
