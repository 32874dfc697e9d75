/* SPDX-License-Identifier: MIT */
/* mitm: TLS interception for header injection (credential brokering). */
#ifndef SBXD_MITM_H
#define SBXD_MITM_H

#include <stddef.h>

/* Load (or create, once) sbxd's interception CA in the state directory, and
 * write the CA bundle sandboxes trust: the host's bundle plus that CA.
 * 0, or -1 with a message (sbxd then refuses injection rules). */
int mitm_init(char *err, size_t errlen);
/* Host paths of the CA certificate and of the combined bundle; NULL when
 * mitm_init failed or the host has no CA bundle to extend. */
const char *mitm_ca_path(void);
const char *mitm_bundle_path(void);
/* Where sandboxes see them. */
#define MITM_SANDBOX_CA "/.sbxd/ca.crt"
#define MITM_SANDBOX_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* Serve one CONNECT whose requests get headers set: `client` is the
 * sandbox's connection (the CONNECT head already consumed), `upstream` a TCP
 * connection to host:port. Verifies the upstream certificate for host, then
 * answers the CONNECT, terminates the client's TLS with a certificate for
 * host signed by the CA, and relays, setting names[i]: values[i] on each
 * request head. Returns when the exchange is over; closes neither fd. */
struct np_req;
/* The headers to set on one request (names, values: malloc'd arrays the
 * caller frees); how many. */
typedef size_t (*mitm_inject_fn)(void *arg, const struct np_req *req, char ***names, char ***values);
void mitm_serve(int client, int upstream, const char *host, mitm_inject_fn inject, void *arg);

#endif /* SBXD_MITM_H */
