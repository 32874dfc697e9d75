/* SPDX-License-Identifier: MIT */
/*
 * core: what a client's handles share. sbx_client is the caller's handle on a
 * refcounted core; sandboxes, commands, snapshots and ops each hold a
 * reference, so handles may be freed in any order (sqlite's close_v2 rule):
 * the core, its engine and its credentials live until the last one goes.
 */
#ifndef SBX_CORE_H
#define SBX_CORE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <sbxrun/sbxrun.h>

#include "client/proto/proto.h"
#include "client/auth.h"
#include "util/buf.h"
#include "client/engine.h"
#include "client/resume.h"
#include "util/error.h"

struct sbx__core {
    int refs;
    sbx__engine *engine;
    char *endpoint;         /* as given, less any userinfo (for messages) */
    char *base;             /* URL prefix of every request */
    bool vercel;
    bool used;              /* a request was made: the endpoint is fixed */
    const struct sbx__proto *proto; /* the protocol version spoken (client option "protocol") */
    bool retry_max_set;     /* the caller chose retry.max: the protocol no longer does */
    struct sbx__auth auth;
    bool auth_explicit, auth_resolved;
    sbx__err endpoint_err;  /* a malformed SBXRUN_ENDPOINT, until replaced */
    struct sbx_op *ops;     /* pending */
    unsigned nops;          /* how many (sbx_client_process reports it) */
    struct sbx_op *done_head, *done_tail;
    sbx_op_done_cb done_cb;
    void *done_user;
    int in_callback;
    atomic_uint cancels;    /* sbx_op_cancel() calls not yet applied */
    /* How a followed command is started: false, POST with "wait": true
     * (two long-lived requests); true, a plain POST and only the log
     * stream open (command.follow=logs). */
    bool follow_logs_only;
    /* The caller's log callback (sbx_client_set_log_cb), run behind
     * in_callback like the done callback. */
    sbx_log_cb log_cb;
    void *log_user;
    /* Safety for plain commands (sbx_client_set_policy/_set_redactor):
     * a private copy of the policy and the job type it is checked as, and
     * the redactor's rules as they were when set. */
    sbx_policy *policy;
    char *policy_job;
    struct rules *redact_rules; /* sbx__redact_rules */
    /* Jobs (lib/job): the limits on how many run at once (client options
     * jobs.max_running, jobs.max_running_per_project; 0 = none) and the
     * job layer's own state (its queue), which it frees; jobs_changed is
     * told when a limit changes. */
    unsigned jobs_max, jobs_max_project;
    void *jobs;
    void (*jobs_free)(void *jobs);
    void (*jobs_changed)(struct sbx__core *c);
};

struct sbx_client {
    struct sbx__core *core;
    sbx__err err;
};

/* What an op does when it is cancelled or released, per kind. */
struct sbx__op_ops {
    void (*cancel)(struct sbx_op *op);     /* abort its requests */
    void (*release)(struct sbx_op *op);    /* free its state */
};

/* A handle an op works for (sandbox, command, snapshot): refcounted, with
 * the list of its pending ops so freeing the handle cancels them. */
struct sbx__target {
    int refs;
    struct sbx_op *ops;
    void (*destroy)(struct sbx__target *t);
};

struct sbx_op {
    struct sbx__core *core;
    sbx_status status;
    sbx__err err;
    int http_status;
    char *error_code;                      /* the server's error.code of the answer that failed it */
    char *result_json;
    uint8_t *result_data;                  /* a file read into memory (sbx_op_result_data) */
    size_t result_len;
    void *user;
    bool done, internal, handed_out, owner_freed;
    atomic_bool cancel;                    /* asked (any thread) */
    bool cancel_applied;                   /* ops->cancel ran (driving thread) */
    const struct sbx__op_ops *ops;
    void *state;
    struct sbx__target *target;
    struct sbx_op *tnext;                  /* in target->ops */
    struct sbx_op *prev, *next;            /* in core->ops (pending) */
    struct sbx_op *done_next;              /* in the done queue */
    /* An op another op is made of (sbx__op_adopt): told here when it ends,
     * instead of the done queue. */
    void (*parent_cb)(struct sbx_op *op, void *arg);
    void *parent_arg;
    struct sbx__progress prog;             /* its data request's transfer (sbx_op_get_progress) */
};

/* ---- core ---- */
void sbx__core_ref(struct sbx__core *c);
void sbx__core_unref(struct sbx__core *c);
/* Credentials resolved, a request can be made; err on the caller's handle. */
sbx_status sbx__core_ready(struct sbx__core *c, sbx__err *err);
/* The request an api builder described (proto.h): base + its path (the
 * team is added), its method, body and header. Authorization set;
 * idempotent as given. */
sbx__req *sbx__core_request(struct sbx__core *c, const struct sbx__api_req *req, bool idempotent, sbx__err *err);
/* Add the current credentials (Authorization) to a request made without
 * them (a copy by sbx__req_again). SBX_E_NOMEM. */
sbx_status sbx__core_authorize(struct sbx__core *c, sbx__req *r);
/* One round of work: apply cancellations, then the engine. */
void sbx__core_process(struct sbx__core *c);
/* Whether the caller is inside a callback (then only getters are allowed). */
bool sbx__core_in_callback(const struct sbx__core *c);

/* ---- ops ---- */
sbx_op *sbx__op_new(struct sbx__core *c, struct sbx__target *t, const struct sbx__op_ops *ops,
                    void *state);
/* Finish an op: record the outcome, hand it to the done queue / callback. */
void sbx__op_finish(sbx_op *op, sbx_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The common end of a request: status, HTTP status, error text with the
 * server's message. Returns SBX_OK for a 2xx, else the failure (recorded). */
sbx_status sbx__op_check_response(sbx_op *op, sbx__req *r, const char *what);
/* Give the op to a blocking caller: drive until it is done, copy the
 * outcome to err, release it. */
sbx_status sbx__op_block(sbx_op *op, sbx__err *err);
/* A failed op's failure into a handle's err: status, message and the
 * server's error.code (sbx_op_error_code()). Returns the status. */
sbx_status sbx__op_err_to(sbx__err *err, const sbx_op *op);
/* Drive until the op is done (marking it internal: never handed out);
 * the caller reads what it needs, then sbx__op_destroy()s it. */
sbx_status sbx__op_drive(sbx_op *op);
void sbx__op_destroy(sbx_op *op);
/* Cancel on the driving thread, at once. */
void sbx__op_cancel_now(sbx_op *op);
/* Make op (just returned by a _start function) part of a bigger op: it is
 * never handed out, and cb(op, arg) runs when it ends (at once if it has
 * already ended). cb owns op from then on: it frees it with
 * sbx__op_destroy(). */
void sbx__op_adopt(sbx_op *op, void (*cb)(sbx_op *op, void *arg), void *arg);
/* The owner of op's state (a job, a run) goes away while the caller keeps
 * the op: cancel it and drive it to its end, release its state now, and
 * leave the caller an ended op to free. */
void sbx__op_orphan(sbx_op *op);

/* ---- a one-request op ---- */
/* Parses a 2xx answer into the target; returns the op's status. */
typedef sbx_status (*sbx__reply_fn)(sbx_op *op, sbx__req *r, void *arg);
struct sbx__simple {
    sbx__req *req;
    sbx__reply_fn reply;
    void *arg;
    const char *what;
    void (*arg_free)(void *arg);
    /* Runs after the op's outcome is known (success or not), before it is
     * handed out: undo a "busy" mark, say. */
    void (*on_end)(sbx_op *op, sbx_status st, void *arg);
    /* Set before submit for a request about this sandbox's session: it is
     * repeated on a new one when the session has stopped (resume.h). */
    sbx_sandbox *resume_sbx;
    /* With resume_sbx: the op never resumes the sandbox itself, but one
     * under way when it is submitted sends it after (a stop). */
    bool after_resume;
    struct sbx__resume_wait rw;
};
/* The two halves of sbx__simple_start, for requests that need more set up
 * (a streamed body, headers) before they go: new makes the request (on
 * failure arg is freed), submit queues it as an op (on failure s is freed). */
struct sbx__simple *sbx__simple_new(struct sbx__core *c, const char *what, const struct sbx__api_req *req,
                                    bool idempotent, sbx__reply_fn reply, void *arg, void (*arg_free)(void *),
                                    sbx__err *err);
sbx_status sbx__simple_submit(struct sbx__core *c, struct sbx__target *t, struct sbx__simple *s, sbx_op **out,
                              sbx__err *err);
void sbx__simple_discard(struct sbx__simple *s);
/* Start req as one op on target t. */
sbx_status sbx__simple_start(struct sbx__core *c, struct sbx__target *t, const char *what,
                             const struct sbx__api_req *req, bool idempotent, sbx__reply_fn reply, void *arg,
                             void (*arg_free)(void *), sbx_op **out, sbx__err *err);

/* ---- targets ---- */
void sbx__target_init(struct sbx__target *t, void (*destroy)(struct sbx__target *t));
void sbx__target_ref(struct sbx__target *t);
void sbx__target_unref(struct sbx__target *t);
/* The caller let go of the handle: cancel its pending ops, drop its ref. */
void sbx__target_release(struct sbx__target *t);

#endif /* SBX_CORE_H */
