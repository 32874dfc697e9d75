/* SPDX-License-Identifier: MIT */
/*
 * resume: the 2.x protocol's automatic resume. An operation sent to a
 * session that has stopped is answered 410 (or 422 sandbox_stopping /
 * sandbox_snapshotting while it stops); the official SDK then resumes the
 * named sandbox (GET /v2/sandboxes/{name}?resume=true) and repeats the
 * operation once on the new session. Here the same, for the operations the
 * SDK does it for, when the sandbox's setting allows it (auto_resume,
 * doc/client.md): a request that failed so is copied for the new session
 * and sent again, its handlers unchanged. Ops that meet a stopped session
 * together wait for one resume request.
 */
#ifndef SBX_RESUME_H
#define SBX_RESUME_H

#include <stdbool.h>

#include <sbxrun/sbxrun.h>

#include "client/engine.h"

/* When a sandbox resumes by itself (sandbox option auto_resume). */
enum sbx__auto_resume {
    SBX__RESUME_PERSISTENT = 0, /* when its stop kept its files (the default) */
    SBX__RESUME_ALWAYS,         /* as the SDK: a sandbox that is not persistent starts clean */
    SBX__RESUME_NEVER
};

/* One op's part in it, embedded in the op's state. Zeroed: not armed. */
struct sbx__resume_wait {
    sbx_sandbox *s;             /* holds a reference; NULL: the op never resumes */
    sbx_op *op;
    sbx__req **req;             /* the op's request: replaced by the copy sent again */
    char *sid;                  /* the session the request was built for */
    bool tried, waiting;
    bool after;                 /* joined by sbx__resume_after: its request was never sent */
    sbx__timer timer;           /* a cancel while waiting ends the op from process */
    /* The op cannot go on (the resume failed, the copy could not be made,
     * the op was cancelled while waiting): op->err says why; finish it. */
    void (*fail)(struct sbx__resume_wait *w, sbx_status st);
    /* Optional: told the new session before the copy goes (SBX_E_NOMEM
     * stops it). */
    sbx_status (*moved)(struct sbx__resume_wait *w, const char *sid);
    struct sbx__resume_wait *next; /* in the sandbox's waiters */
};

/* Arm w for op, whose request *req is about s's current session (a 2.x
 * named sandbox; otherwise w stays unarmed and SBX_OK). SBX_E_NOMEM. */
sbx_status sbx__resume_arm(struct sbx__resume_wait *w, sbx_sandbox *s, sbx_op *op, sbx__req **req,
                           void (*fail)(struct sbx__resume_wait *w, sbx_status st));
/* First thing in the request's done callback: true when r's answer says
 * the session is gone and the op goes on after a resume (the callback then
 * returns at once, and runs again for the copy); false: handle r as usual. */
bool sbx__resume_try(struct sbx__resume_wait *w, sbx__req *r);
/* Whether r's answer says the session is no longer running (410, or 422
 * sandbox_stopping / sandbox_snapshotting). */
bool sbx__resume_session_gone(sbx__req *r);
/* For an armed op that must follow a resume under way rather than race it
 * (a stop: it must reach the session the resume brings): true when one is
 * under way, and the op's request, not submitted, is sent when it ends (to
 * the new session; as built when the resume failed). False: submit it now.
 * Such an op never starts a resume itself. */
bool sbx__resume_after(struct sbx__resume_wait *w);
/* From the op's cancel: true when it was waiting for a resume (it ends,
 * cancelled, in the next process round). */
bool sbx__resume_cancel(struct sbx__resume_wait *w);
/* From the op's release. */
void sbx__resume_disarm(struct sbx__resume_wait *w);

#endif /* SBX_RESUME_H */
