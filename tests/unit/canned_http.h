/* SPDX-License-Identifier: MIT */
/*
 * canned_http: a tiny HTTP/1.1 server inside a unit test, answering each
 * request with canned bytes. It listens on a unix socket in a temporary
 * directory (the client's "unix:/path" endpoint) and serves every connection
 * from one thread with poll(): keep-alive, request bodies by Content-Length
 * or chunked, "Expect: 100-continue". It allocates with plain malloc, never
 * through lib/'s wrapper, so the fault-injection counts are the client's
 * alone.
 */
#ifndef SBX_TEST_CANNED_HTTP_H
#define SBX_TEST_CANNED_HTTP_H

#include <stddef.h>

struct canned_http;

/* The whole response (status line, headers, body) to a request, or NULL to
 * close the connection. Called on the server's thread; the bytes are owned by
 * the caller and must stay valid until the server stops. */
typedef const char *(*canned_http_fn)(const char *method, const char *target, const char *body,
                                      size_t body_len, void *user);

/* Start a server; asserts success. */
struct canned_http *canned_http_start(canned_http_fn fn, void *user);
/* "unix:/tmp/.../sock" (owned by the server). */
const char *canned_http_endpoint(const struct canned_http *h);
/* Requests answered so far. */
unsigned canned_http_requests(struct canned_http *h);
/* Close every connection, join the thread, remove the socket, free h. */
void canned_http_stop(struct canned_http *h);

/* Build a response with Content-Length (malloc'd, free() it). */
char *canned_http_reply(int status, const char *content_type, const char *body, size_t body_len);
/* Build a chunked response, one chunk per line of the NULL-terminated list
 * (malloc'd, free() it). */
char *canned_http_chunked(int status, const char *content_type, const char *const *chunks);

#endif /* SBX_TEST_CANNED_HTTP_H */
