/* SPDX-License-Identifier: MIT */
/*
 * api: what the protocol front-ends share. The v1 routes (api.c) and the
 * 2.x/3.x routes (api2.c) are thin layers over the same operations on one
 * model: a v1 sandbox is a session; a named sandbox (named.c) owns sessions.
 * r->proto says which shapes an answer takes.
 */
#ifndef SBXD_API_H
#define SBXD_API_H

#include "sbxd.h"

bool seg_is(struct http_req *r, int i, const char *s);
bool method_is(struct http_req *r, const char *m);
enum MHD_Result not_allowed(struct http_req *r); /* 405 */

/* Injection rules need the egress CA: false with a message without it. */
bool injection_ok(const struct netpolicy *p, char *err, size_t errlen);

/* An error to answer with. */
struct api_err {
    unsigned status;
    const char *code;        /* error.code */
    const char *retry_after; /* Retry-After, or NULL */
    char msg[2048];
};

void set_err(struct api_err *e, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum MHD_Result reply_api_err(struct http_req *r, const struct api_err *e);

/* What a named sandbox gives the session it starts. */
struct session_opts {
    const char *name;     /* the owner's name */
    bool persistent;
    int64_t snap_ttl_ms;  /* its automatic snapshots' expiration, -1: sbxd's default */
    /* The body is a named sandbox's stored config, resumed: a runtime name
     * sbxd no longer answers (a "node20" from before the host's Node was
     * upgraded) is taken as its family's, not refused. */
    bool stored;
};

/* A new session from a create body (v1 form: projectId, runtime, ports,
 * timeout, resources, env, networkPolicy, source); *out gets a reference.
 * 0, or -1 with e set and nothing of the session left. */
int session_create(json_t *body, const struct session_opts *opt, struct sandbox **out, struct api_err *e);

/* The session routes after the session's id: segs[base] is "cmd", "fs",
 * "stop"... (the same handlers for /v1/sandboxes/{id}/ and
 * /v2/sandboxes/sessions/{id}/). */
enum MHD_Result session_sub(struct http_req *r, struct sandbox *s, int base);

/* Lookups: a referenced object, or NULL with the error answered. */
struct sandbox *api_get_session(struct http_req *r, const char *id, enum MHD_Result *ret);
void api_put_session(struct sandbox *s);

/* Objects in the shape of r's protocol (need g.lock). */
json_t *api_session_json(int proto, struct sandbox *s);
json_t *api_snapshot_json(int proto, struct snapshot *sn);
json_t *api_command_json(int proto, struct command *c);

/* An operation on a session that is not running: v1 410; 2.x 410 when
 * stopped (the SDK resumes the sandbox), 422 sandbox_stopping or
 * sandbox_snapshotting while it stops. */
enum MHD_Result api_not_running(struct http_req *r, struct sandbox *s);

/* Answers to GET and DELETE of one snapshot, and the v1 and 2.x lists. */
enum MHD_Result api_snapshot_ep(struct http_req *r, const char *id, bool del);

/* api2.c */
enum MHD_Result api2_dispatch(struct http_req *r);

#endif /* SBXD_API_H */
