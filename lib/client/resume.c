/* SPDX-License-Identifier: MIT */
/* resume: the 2.x automatic resume (resume.h). */
#include "util/internal.h"

#include <string.h>

#include "client/core.h"
#include "client/resume.h"
#include "client/sandbox_int.h"
#include "util/str.h"

sbx_status sbx__resume_arm(struct sbx__resume_wait *w, sbx_sandbox *s, sbx_op *op, sbx__req **req,
                           void (*fail)(struct sbx__resume_wait *w, sbx_status st))
{
    memset(w, 0, sizeof *w);
    if (!s->core->proto->rebase || !s->info.name || !s->info.id)
        return SBX_OK;
    if (!(w->sid = sbx__strdup(s->info.id)))
        return SBX_E_NOMEM;
    sbx__target_ref(&s->t);
    w->s = s;
    w->op = op;
    w->req = req;
    w->fail = fail;
    return SBX_OK;
}

/* Whether the sandbox resumes by itself now (its setting, and what the
 * server said about its persistence, else what was asked). */
static bool wanted(const sbx_sandbox *s)
{
    switch (s->auto_resume) {
    case SBX__RESUME_ALWAYS:
        return true;
    case SBX__RESUME_NEVER:
        return false;
    case SBX__RESUME_PERSISTENT:
        break;
    }
    return s->info.persistent > 0 || (s->info.persistent < 0 && s->persistent);
}

bool sbx__resume_session_gone(sbx__req *r)
{
    long http = sbx__req_http_status(r);
    char code[64];
    size_t len;
    const char *body;
    if (sbx__req_status(r) != SBX_OK)
        return false;
    if (http == 410)
        return true;
    if (http != 422)
        return false;
    body = sbx__req_body(r, &len);
    return sbx__api_error_code(body, len, code, sizeof code) &&
           (strcmp(code, "sandbox_stopping") == 0 || strcmp(code, "sandbox_snapshotting") == 0);
}

static void leave(struct sbx__resume_wait *w)
{
    if (!w->waiting)
        return;
    for (struct sbx__resume_wait **pp = &w->s->waiters; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    w->next = NULL;
    w->waiting = false;
}

/* Into the sandbox's waiters, in the order they came, which is the order
 * they are sent again. */
static void enqueue(struct sbx__resume_wait *w)
{
    struct sbx__resume_wait **pp = &w->s->waiters;
    w->waiting = true;
    w->next = NULL;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
}

/* Send the op's request again, to the sandbox's current session. */
static void repeat(struct sbx__resume_wait *w)
{
    sbx_sandbox *s = w->s;
    sbx__req *old = *w->req, *n = NULL;
    char *url = NULL, *sid = NULL;
    int64_t deadline = sbx__req_deadline(old);
    sbx_status st;

    /* Its time ran out while the sandbox resumed: it is not sent again
     * (and was not run: the answer that sent it here says so). */
    if (deadline > 0 && sbx__mono_ms() >= deadline) {
        sbx__err_set(&w->op->err, SBX_E_TIMEOUT,
                     "the deadline passed while sandbox %s resumed; the operation was not sent again (it did not run)",
                     s->info.name);
        w->fail(w, SBX_E_TIMEOUT);
        return;
    }
    /* Credentials may have run out meanwhile: the caller's status. */
    if ((st = sbx__core_ready(s->core, &w->op->err)) != SBX_OK) {
        w->fail(w, st);
        return;
    }
    st = s->core->proto->rebase(sbx__req_url(old), w->sid, s->info.id, &url);
    if (st == SBX_OK)
        st = sbx__req_again(old, url, &n);
    sbx__free(url);
    if (st == SBX_OK && (sbx__core_authorize(s->core, n) != SBX_OK ||
                         (w->moved && w->moved(w, s->info.id) != SBX_OK) || !(sid = sbx__strdup(s->info.id)))) {
        sbx__req_free(n);
        st = SBX_E_NOMEM;
    }
    if (st != SBX_OK) {
        sbx__err_set(&w->op->err, st == SBX_E_NOMEM || st == SBX_E_IO ? st : SBX_E_INTERNAL,
                     "sandbox %s resumed as session %s, but the operation could not be repeated there: %s",
                     s->info.name, s->info.id,
                     st == SBX_E_NOMEM ? SBX__NOMEM_TEXT
                     : st == SBX_E_IO  ? "its streamed body could not be replayed"
                                       : "its request could not be copied");
        w->fail(w, w->op->err.code);
        return;
    }
    sbx__engine_log(s->core->engine, SBX_LOG_INFO,
                    "sandbox %s: repeating on session %s (session %s was no longer running)", s->info.name,
                    s->info.id, w->sid);
    sbx__free(w->sid);
    w->sid = sid;
    *w->req = n;
    sbx__req_free(old);
    if (sbx__req_submit(n) != SBX_OK) {
        sbx__err_nomem(&w->op->err);
        w->fail(w, SBX_E_NOMEM);
    }
}

/* The resume request ended: every op waiting on it goes on, or fails. */
static void resumed(sbx_op *rop, void *arg)
{
    sbx_sandbox *s = arg;
    struct sbx__resume_wait *w;
    s->resuming = false;
    s->resume_op = NULL;
    /* One at a time off the list: an op ending here runs the caller's
     * callback, which may cancel one still waiting (it leaves the list). */
    while ((w = s->waiters)) {
        s->waiters = w->next;
        w->next = NULL;
        w->waiting = false;
        if (rop->status == SBX_OK) {
            repeat(w);
            continue;
        }
        if (w->after) {
            /* never sent: it goes as built (a stop of a session that is
             * not running anyway answers so) */
            if (sbx__req_submit(*w->req) != SBX_OK) {
                sbx__err_nomem(&w->op->err);
                w->fail(w, SBX_E_NOMEM);
            }
            continue;
        }
        w->op->http_status = rop->http_status;
        if (rop->error_code) {
            sbx__free(w->op->error_code);
            w->op->error_code = sbx__strdup(rop->error_code);
        }
        sbx__err_set(&w->op->err, rop->status,
                     "session %s of sandbox %s is no longer running, and resuming it failed: %s", w->sid,
                     s->info.name, sbx__err_msg(&rop->err));
        w->fail(w, rop->status);
    }
    sbx__op_destroy(rop);
}

bool sbx__resume_try(struct sbx__resume_wait *w, sbx__req *r)
{
    sbx_sandbox *s = w->s;
    sbx_op *rop;
    /* Not while the caller's own stop of it is under way: its answer
     * (422 sandbox_stopping) is the stop the caller asked for. */
    if (!s || w->tried || s->stops > 0 || !sbx__resume_session_gone(r) || !wanted(s))
        return false;
    w->tried = true;
    if (strcmp(s->info.id, w->sid) != 0) {
        /* Another op resumed it meanwhile: straight to the new session. */
        repeat(w);
        return true;
    }
    if (!s->resuming) {
        sbx_status st = sbx__sandbox_resume_begin(s, &rop);
        if (st != SBX_OK) {
            sbx__err_set(&w->op->err, st, "session %s of sandbox %s is no longer running, and its resume could "
                         "not start: %s", w->sid, s->info.name, sbx_strerror(st));
            w->fail(w, st);
            return true;
        }
        s->resuming = true;
        s->resume_op = rop;
        sbx__engine_log(s->core->engine, SBX_LOG_INFO, "sandbox %s: session %s is no longer running; resuming",
                        s->info.name, w->sid);
        /* may end at once: then the waiters list is still empty, and the
         * session changed, so this op repeats below */
        sbx__op_adopt(rop, resumed, s);
        if (!s->resuming) {
            if (strcmp(s->info.id, w->sid) != 0) {
                repeat(w);
                return true;
            }
            w->tried = false;
            return false;
        }
    }
    enqueue(w);
    return true;
}

static void cancelled(sbx__timer *t, void *user)
{
    struct sbx__resume_wait *w = user;
    (void)t;
    sbx__err_set(&w->op->err, SBX_E_CANCELLED, "cancelled while sandbox %s resumed", w->s->info.name);
    w->fail(w, SBX_E_CANCELLED);
}

bool sbx__resume_after(struct sbx__resume_wait *w)
{
    sbx_sandbox *s = w->s;
    if (!s)
        return false;
    w->tried = true; /* never a resume of its own */
    if (!s->resuming)
        return false;
    w->after = true;
    enqueue(w);
    return true;
}

bool sbx__resume_cancel(struct sbx__resume_wait *w)
{
    if (!w->s || !w->waiting)
        return false;
    leave(w);
    sbx__engine_timer_set(w->s->core->engine, &w->timer, 0, cancelled, w);
    return true;
}

void sbx__resume_disarm(struct sbx__resume_wait *w)
{
    if (!w->s)
        return;
    leave(w);
    sbx__engine_timer_cancel(w->s->core->engine, &w->timer);
    sbx__free(w->sid);
    sbx__target_unref(&w->s->t);
    w->s = NULL;
}
