/* SPDX-License-Identifier: MIT */
/*
 * client: the client handle and its core (endpoint, credentials, engine),
 * operations and how they finish, and the list endpoints. The op is the one
 * asynchronous unit: blocking calls are an op driven to its end.
 */
#include "util/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/core.h"
#include "client/global.h"
#include "policy/policy_share.h"
#include "redact/redact_int.h"
#include "util/str.h"

#define VERCEL_API "https://vercel.com/api"

/* ---- core ----------------------------------------------------------------------- */

void sbx__core_ref(struct sbx__core *c)
{
    c->refs++;
}

void sbx__core_unref(struct sbx__core *c)
{
    if (!c || --c->refs > 0)
        return;
    if (c->jobs_free)
        c->jobs_free(c->jobs);
    sbx__engine_free(c->engine);
    sbx_policy_free(c->policy);
    sbx__free(c->policy_job);
    sbx__redact_rules_unref(c->redact_rules);
    sbx__auth_clear(&c->auth);
    sbx__err_free(&c->endpoint_err);
    sbx__free(c->endpoint);
    sbx__free(c->base);
    sbx__free(c);
    sbx_global_cleanup();
}

bool sbx__core_in_callback(const struct sbx__core *c)
{
    return c->in_callback > 0;
}

static sbx_status set_endpoint(struct sbx__core *c, const char *ep, sbx__err *err)
{
    char *endpoint = NULL, *base = NULL, *userpwd = NULL;
    const char *unix_path = NULL;
    size_t n;

    if (sbx__url_split_userinfo(ep, &endpoint, &userpwd) != SBX_OK)
        return sbx__err_nomem(err);
    n = strlen(endpoint);
    if (strncmp(endpoint, "unix:", 5) == 0 && endpoint[5] == '/' && !userpwd) {
        unix_path = endpoint + 5;
        base = sbx__strdup("http://localhost");
    } else if ((strncmp(endpoint, "http://", 7) == 0 && n > 7) || (strncmp(endpoint, "https://", 8) == 0 && n > 8)) {
        base = sbx__strndup(endpoint, endpoint[n - 1] == '/' ? n - 1 : n);
    } else {
        sbx__err_set(err, SBX_E_INVALID_ARG, "endpoint '%s': expected https://..., http://HOST:PORT or unix:/PATH",
                     endpoint);
        sbx__free(endpoint);
        sbx__free_secret(userpwd);
        return SBX_E_INVALID_ARG;
    }
    if (!base || sbx__engine_set_unix_socket(c->engine, unix_path) != SBX_OK ||
        sbx__engine_set_userpwd(c->engine, userpwd) != SBX_OK) {
        sbx__free(endpoint);
        sbx__free(base);
        sbx__free_secret(userpwd);
        return sbx__err_nomem(err);
    }
    sbx__free_secret(userpwd); /* the engine has its copy */
    sbx__free(c->endpoint);
    sbx__free(c->base);
    c->endpoint = endpoint;
    c->base = base;
    c->vercel = strcmp(base, VERCEL_API) == 0;
    return SBX_OK;
}

/* The socket of a unix: endpoint (its token file lies beside it), or NULL. */
static const char *unix_socket(const struct sbx__core *c)
{
    return strncmp(c->endpoint, "unix:", 5) == 0 ? c->endpoint + 5 : NULL;
}

sbx_status sbx__core_ready(struct sbx__core *c, sbx__err *err)
{
    sbx_status st;
    if (c->endpoint_err.code != SBX_OK)
        return sbx__err_copy(err, &c->endpoint_err);
    if (!c->auth_resolved) {
        st = c->auth_explicit ? SBX_OK : sbx__auth_resolve(&c->auth, c->vercel, unix_socket(c), err);
        if (st != SBX_OK)
            return st;
        c->auth_resolved = true;
    }
    if (c->vercel && !c->auth.project)
        return sbx__err_set(err, SBX_E_AUTH,
                            "no project for the Vercel API: give it to sbx_client_set_credentials(), or set "
                            "VERCEL_PROJECT_ID");
    if (sbx__auth_expired(&c->auth, (int64_t)time(NULL)))
        return sbx__err_set(err, SBX_E_AUTH,
                            "the OIDC token (%s) has expired; get a fresh one (`vercel env pull`)",
                            c->auth.source ? c->auth.source : "explicit");
    c->used = true;
    return SBX_OK;
}

sbx__req *sbx__core_request(struct sbx__core *c, const struct sbx__api_req *req, bool idempotent, sbx__err *err)
{
    sbx__buf url = SBX__BUF_INIT;
    sbx__req *r = NULL;

    if (sbx__core_ready(c, err) != SBX_OK)
        return NULL;
    if (sbx__buf_puts(&url, c->base) != SBX_OK || sbx__buf_puts(&url, req->path) != SBX_OK)
        goto oom;
    if (c->auth.team && sbx__api_add_team(&url, c->auth.team) != SBX_OK)
        goto oom;
    r = sbx__req_new(c->engine, req->method, url.data);
    if (!r)
        goto oom;
    if (sbx__core_authorize(c, r) != SBX_OK || sbx__req_add_header(r, "Accept: application/json") != SBX_OK ||
        sbx__req_set_project(r, c->auth.project) != SBX_OK ||
        (req->body && sbx__req_set_body(r, req->body, strlen(req->body), req->content_type) != SBX_OK) ||
        (req->header && sbx__req_add_header(r, req->header) != SBX_OK))
        goto oom;
    sbx__req_set_idempotent(r, idempotent);
    sbx__buf_free(&url);
    return r;
oom:
    sbx__req_free(r);
    sbx__buf_free(&url);
    sbx__err_nomem(err);
    return NULL;
}

sbx_status sbx__core_authorize(struct sbx__core *c, sbx__req *r)
{
    sbx__buf auth = SBX__BUF_INIT;
    sbx_status st;
    /* Reserve first: the token is never left in a reallocated block. */
    st = sbx__buf_reserve(&auth, strlen(c->auth.token) + 32);
    if (st == SBX_OK)
        st = sbx__buf_printf(&auth, "Authorization: Bearer %s", c->auth.token);
    if (st == SBX_OK)
        st = sbx__req_add_secret_header(r, auth.data);
    sbx__buf_wipe_free(&auth);
    return st == SBX_OK ? SBX_OK : SBX_E_NOMEM;
}

/* ---- targets ------------------------------------------------------------------------ */

void sbx__target_init(struct sbx__target *t, void (*destroy)(struct sbx__target *t))
{
    t->refs = 1;
    t->ops = NULL;
    t->destroy = destroy;
}

void sbx__target_ref(struct sbx__target *t)
{
    t->refs++;
}

void sbx__target_unref(struct sbx__target *t)
{
    if (t && --t->refs == 0)
        t->destroy(t);
}

void sbx__target_release(struct sbx__target *t)
{
    for (sbx_op *op = t->ops; op; op = op->tnext)
        sbx__op_cancel_now(op);
    sbx__target_unref(t);
}

/* ---- ops ---------------------------------------------------------------------------- */

sbx_op *sbx__op_new(struct sbx__core *c, struct sbx__target *t, const struct sbx__op_ops *ops, void *state)
{
    sbx_op *op = sbx__calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->core = c;
    sbx__core_ref(c);
    op->status = SBX_E_AGAIN;
    op->ops = ops;
    op->state = state;
    atomic_init(&op->cancel, false);
    atomic_init(&op->prog.sent, 0);
    atomic_init(&op->prog.received, 0);
    atomic_init(&op->prog.send_total, -1);
    atomic_init(&op->prog.receive_total, -1);
    op->next = c->ops;
    if (c->ops)
        c->ops->prev = op;
    c->ops = op;
    c->nops++;
    if (t) {
        op->target = t;
        sbx__target_ref(t);
        op->tnext = t->ops;
        t->ops = op;
    }
    return op;
}

static void detach_target(sbx_op *op)
{
    struct sbx__target *t = op->target;
    if (!t)
        return;
    for (sbx_op **pp = &t->ops; *pp; pp = &(*pp)->tnext)
        if (*pp == op) {
            *pp = op->tnext;
            break;
        }
    op->target = NULL;
    sbx__target_unref(t);
}

static void unlink_pending(sbx_op *op)
{
    struct sbx__core *c = op->core;
    if (op->prev || c->ops == op)
        c->nops--;
    if (op->prev)
        op->prev->next = op->next;
    else if (c->ops == op)
        c->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

void sbx__op_destroy(sbx_op *op)
{
    if (!op->done)
        unlink_pending(op);
    if (op->ops && op->ops->release)
        op->ops->release(op);
    detach_target(op);
    sbx__err_free(&op->err);
    sbx__free(op->result_json);
    sbx__free(op->result_data);
    sbx__free(op->error_code);
    sbx__core_unref(op->core);
    sbx__free(op);
}

void sbx__op_finish(sbx_op *op, sbx_status st, const char *fmt, ...)
{
    struct sbx__core *c = op->core;
    if (op->done)
        return;
    if (st != SBX_OK && fmt) {
        va_list ap;
        va_start(ap, fmt);
        sbx__err_setv(&op->err, st, fmt, ap);
        va_end(ap);
    } else if (st != SBX_OK && op->err.code != st) {
        sbx__err_set(&op->err, st, "%s", sbx_strerror(st));
    }
    op->status = st;
    unlink_pending(op);
    op->done = true;
    if (op->owner_freed) {
        sbx__op_destroy(op);
        return;
    }
    if (op->parent_cb) {
        op->parent_cb(op, op->parent_arg);
        return;
    }
    if (op->internal)
        return;
    if (c->done_tail)
        c->done_tail->done_next = op;
    else
        c->done_head = op;
    c->done_tail = op;
    if (c->done_cb) {
        c->in_callback++;
        c->done_cb(op, c->done_user);
        c->in_callback--;
    }
}

sbx_status sbx__op_check_response(sbx_op *op, sbx__req *r, const char *what)
{
    sbx_status st = sbx__req_status(r);
    long http = sbx__req_http_status(r);
    op->http_status = (int)http;
    if (st != SBX_OK) {
        /* Say so when a request that is never repeated may have run. */
        const char *note = st != SBX_E_CANCELLED && !sbx__req_idempotent(r) && sbx__req_maybe_sent(r)
                               ? " (it may have reached the server, so it was not sent again)"
                               : "";
        return sbx__err_set(&op->err, st, "%s: %s%s", what, sbx__req_error(r), note);
    }
    if (http < 200 || http > 299) {
        char text[512], code[128];
        size_t len;
        const char *body = sbx__req_body(r, &len);
        sbx__api_error_text(body, len, text, sizeof text);
        /* kept apart too, for callers that branch on it (2.x: it drives
         * resume and get-or-create) */
        if (sbx__api_error_code(body, len, code, sizeof code)) {
            sbx__free(op->error_code);
            op->error_code = sbx__strdup(code);
        }
        return sbx__err_set(&op->err, sbx__api_status_for(http), "%s: HTTP %ld%s%s", what, http,
                            text[0] ? ": " : "", text);
    }
    return SBX_OK;
}

/* Cancellations asked from other threads take effect here, on the thread
 * that drives the client. */
static void propagate_cancels(struct sbx__core *c)
{
    sbx_op *op, *next;
    if (atomic_exchange(&c->cancels, 0) == 0)
        return;
    for (op = c->ops; op; op = next) {
        next = op->next;
        if (atomic_load(&op->cancel) && !op->cancel_applied) {
            op->cancel_applied = true;
            if (op->ops && op->ops->cancel)
                op->ops->cancel(op);
        }
    }
}

void sbx__core_process(struct sbx__core *c)
{
    sbx__engine_take_poke(c->engine); /* before the flags are read */
    propagate_cancels(c);
    sbx__engine_process(c->engine);
}

static sbx_status drive(struct sbx__core *c, sbx_op *op, int64_t timeout_ms)
{
    int64_t until = timeout_ms >= 0 ? sbx__mono_ms() + timeout_ms : -1;
    for (;;) {
        sbx__core_process(c);
        if (op ? op->done : c->ops == NULL)
            return SBX_OK;
        if (until >= 0 && sbx__mono_ms() >= until)
            return SBX_E_AGAIN;
        sbx__engine_wait(c->engine, until >= 0 ? until - sbx__mono_ms() : -1);
    }
}

/* Take a finished op out of the done queue (it was never handed out). */
static void unqueue_done(sbx_op *op)
{
    struct sbx__core *c = op->core;
    sbx_op *prev = NULL;
    for (sbx_op *o = c->done_head; o; prev = o, o = o->done_next) {
        if (o != op)
            continue;
        if (prev)
            prev->done_next = o->done_next;
        else
            c->done_head = o->done_next;
        if (c->done_tail == o)
            c->done_tail = prev;
        o->done_next = NULL;
        return;
    }
}

void sbx__op_adopt(sbx_op *op, void (*cb)(sbx_op *op, void *arg), void *arg)
{
    op->internal = true;
    op->parent_cb = cb;
    op->parent_arg = arg;
    if (op->done) {
        unqueue_done(op);
        cb(op, arg);
    }
}

void sbx__op_orphan(sbx_op *op)
{
    if (!op->done) {
        sbx__op_cancel_now(op);
        drive(op->core, op, -1);
    }
    if (op->ops && op->ops->release)
        op->ops->release(op);
    op->ops = NULL;
    op->state = NULL;
}

sbx_status sbx__op_drive(sbx_op *op)
{
    if (op->done && !op->internal)
        unqueue_done(op); /* it ended inside its _start */
    op->internal = true;
    drive(op->core, op, -1);
    return op->status;
}

sbx_status sbx__op_err_to(sbx__err *err, const sbx_op *op)
{
    sbx__err_copy(err, &op->err);
    sbx__err_set_api_code(err, sbx_op_error_code(op));
    return err->code;
}

sbx_status sbx__op_block(sbx_op *op, sbx__err *err)
{
    sbx_status st = sbx__op_drive(op);
    if (st == SBX_OK)
        sbx__err_clear(err);
    else
        sbx__op_err_to(err, op);
    sbx__op_destroy(op);
    return st;
}

/* ---- one-request ops ------------------------------------------------------------------ */

static void simple_cancel(sbx_op *op)
{
    struct sbx__simple *s = op->state;
    if (sbx__resume_cancel(&s->rw))
        return;
    if (s->req)
        sbx__req_cancel(s->req);
}

static void simple_release(sbx_op *op)
{
    struct sbx__simple *s = op->state;
    sbx__resume_disarm(&s->rw);
    sbx__req_free(s->req);
    if (s->arg_free)
        s->arg_free(s->arg);
    sbx__free(s);
}

static const struct sbx__op_ops simple_ops = {simple_cancel, simple_release};

static void simple_done(sbx__req *r, void *user)
{
    sbx_op *op = user;
    struct sbx__simple *s = op->state;
    sbx_status st;
    if (sbx__resume_try(&s->rw, r))
        return; /* sent again on a new session */
    st = sbx__op_check_response(op, r, s->what);
    if (st == SBX_OK && s->reply)
        st = s->reply(op, r, s->arg);
    if (st == SBX_OK && !op->result_json && s->reply) {
        /* The object answered (a get, a stop...), for bindings that want
         * the JSON itself. */
        size_t len;
        const char *body = sbx__req_body(r, &len);
        if (len && !(op->result_json = sbx__strndup(body, len)))
            st = sbx__err_nomem(&op->err);
    }
    if (s->on_end)
        s->on_end(op, st, s->arg);
    /* on_end may have named the real cause of a failure (an upload whose
     * body generator failed): its code and message stand. */
    if (st != SBX_OK && op->err.code != SBX_OK)
        st = op->err.code;
    sbx__op_finish(op, st, NULL);
}

/* The op could not be repeated on a new session (resume.h). */
static void simple_fail(struct sbx__resume_wait *w, sbx_status st)
{
    sbx_op *op = w->op;
    struct sbx__simple *s = op->state;
    if (s->on_end)
        s->on_end(op, st, s->arg);
    sbx__op_finish(op, op->err.code != SBX_OK ? op->err.code : st, NULL);
}

struct sbx__simple *sbx__simple_new(struct sbx__core *c, const char *what, const struct sbx__api_req *req,
                                    bool idempotent, sbx__reply_fn reply, void *arg, void (*arg_free)(void *),
                                    sbx__err *err)
{
    struct sbx__simple *s = sbx__calloc(1, sizeof *s);
    if (!s) {
        if (arg_free)
            arg_free(arg);
        sbx__err_nomem(err);
        return NULL;
    }
    s->reply = reply;
    s->arg = arg;
    s->arg_free = arg_free;
    s->what = what;
    s->req = sbx__core_request(c, req, idempotent, err);
    if (!s->req) {
        simple_release(&(sbx_op){.state = s});
        return NULL;
    }
    return s;
}

void sbx__simple_discard(struct sbx__simple *s)
{
    if (s)
        simple_release(&(sbx_op){.state = s});
}

sbx_status sbx__simple_submit(struct sbx__core *c, struct sbx__target *t, struct sbx__simple *s, sbx_op **out,
                              sbx__err *err)
{
    sbx_op *op = sbx__op_new(c, t, &simple_ops, s);
    if (!op) {
        simple_release(&(sbx_op){.state = s});
        return sbx__err_nomem(err);
    }
    sbx__req_on_done(s->req, simple_done, op);
    sbx__req_set_progress(s->req, &op->prog);
    if (s->resume_sbx && sbx__resume_arm(&s->rw, s->resume_sbx, op, &s->req, simple_fail) != SBX_OK) {
        sbx__op_destroy(op);
        return sbx__err_nomem(err);
    }
    if (s->after_resume && sbx__resume_after(&s->rw)) {
        *out = op; /* sent when the resume ends */
        return SBX_OK;
    }
    if (sbx__req_submit(s->req) != SBX_OK) {
        sbx__op_destroy(op);
        return sbx__err_nomem(err);
    }
    *out = op;
    return SBX_OK;
}

sbx_status sbx__simple_start(struct sbx__core *c, struct sbx__target *t, const char *what,
                             const struct sbx__api_req *req, bool idempotent, sbx__reply_fn reply, void *arg,
                             void (*arg_free)(void *), sbx_op **out, sbx__err *err)
{
    struct sbx__simple *s = sbx__simple_new(c, what, req, idempotent, reply, arg, arg_free, err);
    if (!s)
        return err->code;
    return sbx__simple_submit(c, t, s, out, err);
}

/* ---- the client handle ----------------------------------------------------------------- */

sbx_client *sbx_client_new(void)
{
    sbx_client *cl;
    struct sbx__core *c;
    const char *ep = getenv("SBXRUN_ENDPOINT");
    sbx__err tmp = {0};

    if (sbx_global_init() != SBX_OK)
        return NULL;
    cl = sbx__calloc(1, sizeof *cl);
    c = sbx__calloc(1, sizeof *c);
    if (!cl || !c || !(c->engine = sbx__engine_new()) ||
        sbx__engine_set_user_agent(c->engine, "libsbxrun/" SBX_VERSION_STRING) != SBX_OK) {
        if (c && c->engine)
            sbx__engine_free(c->engine);
        sbx__free(c);
        sbx__free(cl);
        sbx_global_cleanup();
        return NULL;
    }
    c->refs = 1;
    /* The current protocol (the 2.x/3.x SDKs'); protocol=v1 for older
     * deployments. Its SDKs give up past 20 s of Retry-After. */
    c->proto = &sbx__proto_v2;
    {
        struct sbx__engine_limits lim;
        sbx__engine_get_limits(c->engine, &lim);
        lim.retry_after_max_ms = SBX__RETRY_AFTER_MAX_MS_V2;
        lim.retry_max = SBX__RETRY_MAX_V2;
        lim.backoff_base_ms = SBX__BACKOFF_BASE_MS_V2;
        sbx__engine_set_limits(c->engine, &lim);
    }
    atomic_init(&c->cancels, 0);
    cl->core = c;
    /* SBXRUN_ENDPOINT picks the default. A bad one must not quietly become
     * Vercel (a token meant for sbxd would go there): it is kept as an
     * error that every request reports until a good endpoint is set. */
    if (set_endpoint(c, ep && *ep ? ep : VERCEL_API, &tmp) != SBX_OK) {
        if (tmp.code == SBX_E_NOMEM || set_endpoint(c, VERCEL_API, &cl->err) != SBX_OK) {
            sbx__err_free(&tmp);
            sbx_client_free(cl);
            return NULL;
        }
        sbx__err_set(&c->endpoint_err, SBX_E_INVALID_ARG, "SBXRUN_ENDPOINT: %s", sbx__err_msg(&tmp));
        sbx__err_copy(&cl->err, &c->endpoint_err);
    }
    sbx__err_free(&tmp);
    return cl;
}

/* The caller's user pointer may die with its client handle; the core may
 * live on (sandboxes), logging nothing. */
static void clear_log_cb(struct sbx__core *c)
{
    c->log_cb = NULL;
    c->log_user = NULL;
    sbx__engine_set_log(c->engine, NULL, NULL, SBX_LOG_DEBUG);
}

void sbx_client_free(sbx_client *cl)
{
    struct sbx__core *c;
    if (!cl)
        return;
    c = cl->core;
    /* Pending ops are cancelled; finished ones not handed out are let go. */
    for (sbx_op *op = c->ops; op; op = op->next)
        sbx__op_cancel_now(op);
    while (c->done_head) {
        sbx_op *op = c->done_head;
        c->done_head = op->done_next;
        if (!op->handed_out)
            op->owner_freed = true;
    }
    c->done_tail = NULL;
    c->done_cb = NULL;
    clear_log_cb(c);
    sbx__err_free(&cl->err);
    sbx__free(cl);
    sbx__core_unref(c);
}

const char *sbx_client_last_error(const sbx_client *cl)
{
    return SBX__LAST_ERROR(cl);
}

const char *sbx_client_last_error_code(const sbx_client *cl)
{
    return cl ? sbx__err_api_code(&cl->err) : NULL;
}

sbx_status sbx_client_set_endpoint(sbx_client *cl, const char *endpoint)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    SBX__ARG(cl, endpoint, "endpoint is NULL");
    if (cl->core->used)
        return sbx__err_set(&cl->err, SBX_E_MISUSE, "the endpoint cannot change after requests were made");
    if (set_endpoint(cl->core, endpoint, &cl->err) != SBX_OK)
        return cl->err.code;
    sbx__err_clear(&cl->core->endpoint_err);
    return SBX_OK;
}

sbx_status sbx_client_set_credentials(sbx_client *cl, const char *token, const char *team,
                                      const char *project)
{
    sbx_status st;
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    SBX__ARG(cl, token, "token is NULL");
    st = sbx__auth_set(&cl->core->auth, token, team, project, &cl->err);
    if (st == SBX_OK) {
        cl->core->auth_explicit = true;
        cl->core->auth_resolved = true;
    }
    return st;
}

sbx_status sbx_client_resolve_credentials(sbx_client *cl)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    return sbx__core_ready(cl->core, &cl->err);
}

const char *sbx_client_endpoint(const sbx_client *cl)
{
    return cl ? cl->core->endpoint : NULL;
}

const char *sbx_client_project(const sbx_client *cl)
{
    return cl && cl->core->auth_resolved ? cl->core->auth.project : NULL;
}

const char *sbx_client_team(const sbx_client *cl)
{
    return cl && cl->core->auth_resolved ? cl->core->auth.team : NULL;
}

static sbx_status parse_uint(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long x;
    if (!v || !*v || *v == '-')
        return SBX_E_INVALID_ARG;
    x = strtoull(v, &end, 10);
    if (*end || x > max)
        return SBX_E_INVALID_ARG;
    *out = x;
    return SBX_OK;
}

sbx_status sbx_client_set_option(sbx_client *cl, const char *key, const char *value)
{
    struct sbx__engine_limits l;
    uint64_t v = 0;
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    SBX__ARG(cl, key && value, "key and value must not be NULL");
    if (strcmp(key, "endpoint") == 0)
        return sbx_client_set_endpoint(cl, value);
    if (strcmp(key, "user_agent") == 0)
        return sbx__engine_set_user_agent(cl->core->engine, value) == SBX_OK
                   ? SBX_OK
                   : sbx__err_nomem(&cl->err);
    if (strcmp(key, "protocol") == 0) {
        /* Which generation of the API: v1 (the 1.x SDKs' routes) or v2
         * (the 2.x/3.x SDKs': named sandboxes and sessions). Fixed once a
         * request went out: handles made since speak it. */
        const struct sbx__proto *p = strcmp(value, "v1") == 0   ? &sbx__proto_v1
                                     : strcmp(value, "v2") == 0 ? &sbx__proto_v2
                                                                : NULL;
        SBX__ARG(cl, p, "protocol: 'v1' or 'v2', not '%s'", value);
        if (cl->core->used && cl->core->proto != p)
            return sbx__err_set(&cl->err, SBX_E_MISUSE,
                                "protocol: requests were made in %s already; set it before the first one",
                                cl->core->proto->name);
        cl->core->proto = p;
        {
            /* Each generation's SDKs retry differently (doc/client.md):
             * v2 as 3.x, 3 attempts and 20 s of Retry-After at most; v1
             * as 1.x. A retry.max the caller chose stays. */
            struct sbx__engine_limits lim;
            bool v2 = p == &sbx__proto_v2;
            sbx__engine_get_limits(cl->core->engine, &lim);
            lim.retry_after_max_ms = v2 ? SBX__RETRY_AFTER_MAX_MS_V2 : SBX__RETRY_AFTER_MAX_MS_DEFAULT;
            lim.backoff_base_ms = v2 ? SBX__BACKOFF_BASE_MS_V2 : SBX__BACKOFF_BASE_MS_V1;
            if (!cl->core->retry_max_set)
                lim.retry_max = v2 ? SBX__RETRY_MAX_V2 : SBX__RETRY_MAX_V1;
            sbx__engine_set_limits(cl->core->engine, &lim);
        }
        return SBX_OK;
    }
    if (strcmp(key, "command.follow") == 0) {
        SBX__ARG(cl, strcmp(value, "wait") == 0 || strcmp(value, "logs") == 0,
                 "command.follow: 'wait' (a start stream and a log stream per command) or "
                 "'logs' (the log stream only), not '%s'",
                 value);
        cl->core->follow_logs_only = value[0] == 'l';
        return SBX_OK;
    }
    if (strcmp(key, "jobs.max_running") == 0 || strcmp(key, "jobs.max_running_per_project") == 0) {
        /* The job layer's: how many jobs of this client run at once (the
         * rest wait, in order); read by lib/job when a job is started. */
        SBX__ARG(cl, parse_uint(value, 1000000, &v) == SBX_OK, "%s: a number of jobs (0 = no limit)", key);
        if (key[16] == '\0')
            cl->core->jobs_max = (unsigned)v;
        else
            cl->core->jobs_max_project = (unsigned)v;
        if (cl->core->jobs_changed)
            cl->core->jobs_changed(cl->core);
        return SBX_OK;
    }
    sbx__engine_get_limits(cl->core->engine, &l);
    if (strcmp(key, "limit.global") == 0 || strcmp(key, "limit.project") == 0) {
        SBX__ARG(cl, parse_uint(value, 1000000, &v) == SBX_OK, "%s: a number of requests (0 = no limit)", key);
        if (key[6] == 'g')
            l.global = (unsigned)v;
        else
            l.per_project = (unsigned)v;
    } else if (strcmp(key, "retry.max") == 0) {
        SBX__ARG(cl, parse_uint(value, 100, &v) == SBX_OK, "retry.max: 0 to 100");
        l.retry_max = (unsigned)v;
        cl->core->retry_max_set = true;
    } else if (strcmp(key, "timeout_ms") == 0) {
        SBX__ARG(cl, parse_uint(value, INT64_MAX / 2, &v) == SBX_OK, "timeout_ms: milliseconds, 0 for none");
        l.timeout_ms = (int64_t)v;
    } else if (strcmp(key, "idle_timeout_ms") == 0 || strcmp(key, "probe_after_ms") == 0) {
        SBX__ARG(cl, parse_uint(value, INT64_MAX / 2, &v) == SBX_OK && (v == 0 || v >= 100),
                 "%s: milliseconds, at least 100, 0 for none", key);
        if (key[0] == 'i')
            l.idle_ms = (int64_t)v;
        else
            l.probe_after_ms = (int64_t)v;
    } else if (strcmp(key, "probe_timeout_ms") == 0) {
        SBX__ARG(cl, parse_uint(value, INT64_MAX / 2, &v) == SBX_OK && v >= 100,
                 "probe_timeout_ms: milliseconds, at least 100");
        l.probe_timeout_ms = (int64_t)v;
    } else if (strcmp(key, "log.slow_request_ms") == 0) {
        SBX__ARG(cl, parse_uint(value, INT64_MAX / 2, &v) == SBX_OK, "log.slow_request_ms: milliseconds, 0 for never");
        l.slow_ms = (int64_t)v;
    } else if (strcmp(key, "max_response_bytes") == 0) {
        SBX__ARG(cl, parse_uint(value, SIZE_MAX / 2, &v) == SBX_OK && v >= 1024, "max_response_bytes: at least 1024");
        l.max_response = (size_t)v;
    } else {
        return sbx__err_set(&cl->err, SBX_E_UNKNOWN_OPTION, "unknown client option '%s'", key);
    }
    sbx__engine_set_limits(cl->core->engine, &l);
    return SBX_OK;
}

/* ---- driving -------------------------------------------------------------------------- */

sbx_status sbx_client_get_fd(sbx_client *cl, int *fd)
{
    if (!cl || !fd)
        return SBX_E_INVALID_ARG;
    *fd = sbx__engine_fd(cl->core->engine);
    return SBX_OK;
}

sbx_status sbx_client_get_timeout(sbx_client *cl, int64_t *ms)
{
    if (!cl || !ms)
        return SBX_E_INVALID_ARG;
    /* Finished ops not handed out yet: the host should look now. */
    *ms = cl->core->done_head ? 0 : sbx__engine_timeout(cl->core->engine);
    return SBX_OK;
}

sbx_status sbx_client_process(sbx_client *cl, size_t *running)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    sbx__core_process(cl->core);
    if (running)
        *running = cl->core->nops;
    return SBX_OK;
}

sbx_status sbx_client_wait(sbx_client *cl, int64_t timeout_ms)
{
    if (!cl)
        return SBX_E_INVALID_ARG;
    return sbx__engine_wait(cl->core->engine, timeout_ms);
}

sbx_status sbx_client_wakeup(sbx_client *cl)
{
    if (!cl)
        return SBX_E_INVALID_ARG;
    sbx__engine_wakeup(cl->core->engine);
    return SBX_OK;
}

sbx_op *sbx_client_next_done(sbx_client *cl)
{
    struct sbx__core *c;
    sbx_op *op;
    if (!cl)
        return NULL;
    c = cl->core;
    op = c->done_head;
    if (!op)
        return NULL;
    c->done_head = op->done_next;
    if (!c->done_head)
        c->done_tail = NULL;
    op->done_next = NULL;
    op->handed_out = true;
    return op;
}

sbx_status sbx_client_run(sbx_client *cl, int64_t timeout_ms)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    return drive(cl->core, NULL, timeout_ms);
}

sbx_status sbx_client_set_done_cb(sbx_client *cl, sbx_op_done_cb cb, void *user)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    cl->core->done_cb = cb;
    cl->core->done_user = cb ? user : NULL;
    return SBX_OK;
}

/* ---- op accessors ------------------------------------------------------------------------ */

int sbx_op_done(const sbx_op *op)
{
    return op && op->done;
}

sbx_status sbx_op_status(const sbx_op *op)
{
    return op ? op->status : SBX_E_INVALID_ARG;
}

const char *sbx_op_error_code(const sbx_op *op)
{
    return op && op->done && op->status != SBX_OK ? op->error_code : NULL;
}

const char *sbx_op_last_error(const sbx_op *op)
{
    if (!op)
        return SBX__NULL_HANDLE_TEXT;
    return op->done && op->status != SBX_OK ? sbx__err_msg(&op->err) : "";
}

sbx_status sbx_op_get_progress(const sbx_op *op, uint64_t *sent, int64_t *send_total, uint64_t *received,
                               int64_t *receive_total)
{
    if (!op)
        return SBX_E_INVALID_ARG; /* no handle to keep a message in */
    if (sent)
        *sent = atomic_load(&op->prog.sent);
    if (send_total)
        *send_total = atomic_load(&op->prog.send_total);
    if (received)
        *received = atomic_load(&op->prog.received);
    if (receive_total)
        *receive_total = atomic_load(&op->prog.receive_total);
    return SBX_OK;
}

int sbx_op_http_status(const sbx_op *op)
{
    return op ? op->http_status : 0;
}

const char *sbx_op_result_json(const sbx_op *op)
{
    return op && op->done ? op->result_json : NULL;
}

const uint8_t *sbx_op_result_data(const sbx_op *op, size_t *len)
{
    const uint8_t *d = op && op->done ? op->result_data : NULL;
    if (len)
        *len = d ? op->result_len : 0;
    return d;
}

sbx_status sbx_op_cancel(sbx_op *op)
{
    if (!op)
        return SBX_E_INVALID_ARG;
    /* Only flags: this may run on any thread; the driving thread applies
     * it (propagate_cancels). */
    if (!atomic_exchange(&op->cancel, true)) {
        atomic_fetch_add(&op->core->cancels, 1);
        sbx__engine_notify(op->core->engine);
    }
    return SBX_OK;
}

void sbx__op_cancel_now(sbx_op *op)
{
    if (op->done || op->cancel_applied)
        return;
    atomic_store(&op->cancel, true);
    op->cancel_applied = true;
    if (op->ops && op->ops->cancel)
        op->ops->cancel(op);
}

sbx_status sbx_op_wait(sbx_op *op, int64_t timeout_ms)
{
    if (!op)
        return SBX_E_INVALID_ARG;
    if (sbx__core_in_callback(op->core))
        return SBX_E_MISUSE;
    drive(op->core, op, timeout_ms);
    return op->done ? op->status : SBX_E_AGAIN;
}

void sbx_op_set_user(sbx_op *op, void *user)
{
    if (op)
        op->user = user;
}

void *sbx_op_user(const sbx_op *op)
{
    return op ? op->user : NULL;
}

void sbx_op_free(sbx_op *op)
{
    struct sbx__core *c;
    if (!op)
        return;
    c = op->core;
    if (!op->done) {
        sbx__op_cancel_now(op);
        if (sbx__core_in_callback(c)) {
            op->owner_freed = true; /* destroyed when it finishes */
            return;
        }
        /* Cancelled requests end at the next round: finish it here, so
         * nothing is left waiting for a driver that may never come. */
        op->internal = true;
        drive(c, op, -1);
        sbx__op_destroy(op);
        return;
    }
    if (!op->handed_out)
        unqueue_done(op); /* still in the done queue */
    sbx__op_destroy(op);
}

/* ---- lists ------------------------------------------------------------------------------- */

struct list_arg {
    enum sbx__api_list what;
};

static sbx_status list_reply(sbx_op *op, sbx__req *r, void *arg)
{
    struct list_arg *la = arg;
    size_t len;
    const char *body = sbx__req_body(r, &len);
    /* simple_done keeps the body as the op's result_json. */
    return sbx__api_check_list(body, len, la->what, &op->err);
}

static sbx_status list_start(sbx_client *cl, const char *what, enum sbx__api_list key, const char *project,
                             const char *name, size_t limit, int64_t since, int64_t until, const char *cursor,
                             sbx_op **op)
{
    static struct list_arg args[] = {{SBX__API_SANDBOXES}, {SBX__API_SNAPSHOTS}, {SBX__API_SESSIONS}};
    struct sbx__api_req req;
    sbx_status st;

    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    if (op)
        *op = NULL;
    SBX__ARG(cl, op && since >= -1 && until >= -1 && limit <= 1000,
             "list: op must not be NULL, limit at most 1000, since/until -1 or a time");
    if ((st = sbx__core_ready(cl->core, &cl->err)) != SBX_OK)
        return st;
    if (!project)
        project = cl->core->auth.project;
    SBX__ARG(cl, cl->core->proto != &sbx__proto_v2 || (since < 0 && until < 0),
             "list: since and until are not part of the 2.x protocol (its lists page by cursor: "
             "the _from functions); pass -1, or set the client option protocol=v1");
    if (cursor && cl->core->proto != &sbx__proto_v2)
        return sbx__err_set(&cl->err, SBX_E_UNSUPPORTED,
                            "list: cursors are the 2.x protocol's (set the client option protocol=v2); v1 pages "
                            "by since/until");
    SBX__ARG(cl, !cursor || (*cursor && sbx__utf8_valid(cursor, strlen(cursor))),
             "list: cursor: the pagination.next of a page, or NULL");
    if (key == SBX__API_SESSIONS && !cl->core->proto->list_sessions)
        return sbx__err_set(&cl->err, SBX_E_UNSUPPORTED,
                            "list sessions: sessions are the 2.x protocol's (set the client option protocol=v2)");
    SBX__ARG(cl, !name || (*name && sbx__utf8_valid(name, strlen(name))),
             "list sessions: name: a sandbox's name, or NULL for all");
    st = key == SBX__API_SANDBOXES   ? cl->core->proto->list_sandboxes(&req, project, limit, since, until, cursor)
         : key == SBX__API_SNAPSHOTS ? cl->core->proto->list_snapshots(&req, project, limit, since, until, cursor)
                                     : cl->core->proto->list_sessions(&req, project, name, limit, cursor);
    if (st != SBX_OK)
        return sbx__err_nomem(&cl->err);
    st = sbx__simple_start(cl->core, NULL, what, &req, true, list_reply, &args[key], NULL, op, &cl->err);
    sbx__api_req_free(&req);
    return st;
}

static sbx_status list_block(sbx_client *cl, sbx_op *op, char **json)
{
    sbx_status st;
    op->internal = true;
    drive(op->core, op, -1);
    st = op->status;
    if (st == SBX_OK) {
        *json = op->result_json;
        op->result_json = NULL;
        sbx__err_clear(&cl->err);
    } else {
        sbx__op_err_to(&cl->err, op);
    }
    sbx__op_destroy(op);
    return st;
}

sbx_status sbx_client_list_sandboxes_start(sbx_client *cl, const char *project, size_t limit,
                                           int64_t since, int64_t until, sbx_op **op)
{
    return list_start(cl, "list sandboxes", SBX__API_SANDBOXES, project, NULL, limit, since, until, NULL, op);
}

/* The blocking form of a list: start it, drive it, hand out its JSON. */
static sbx_status list_blocking(sbx_client *cl, const char *what, enum sbx__api_list key, const char *project,
                                const char *name, size_t limit, int64_t since, int64_t until, const char *cursor,
                                char **json)
{
    sbx_op *op;
    sbx_status st;
    SBX__ENTER(cl, false);
    SBX__ARG(cl, json, "json must not be NULL");
    *json = NULL;
    st = list_start(cl, what, key, project, name, limit, since, until, cursor, &op);
    return st == SBX_OK ? list_block(cl, op, json) : st;
}

sbx_status sbx_client_list_sandboxes(sbx_client *cl, const char *project, size_t limit, int64_t since,
                                     int64_t until, char **json)
{
    return list_blocking(cl, "list sandboxes", SBX__API_SANDBOXES, project, NULL, limit, since, until, NULL, json);
}

sbx_status sbx_client_list_snapshots_start(sbx_client *cl, const char *project, size_t limit,
                                           int64_t since, int64_t until, sbx_op **op)
{
    return list_start(cl, "list snapshots", SBX__API_SNAPSHOTS, project, NULL, limit, since, until, NULL, op);
}

sbx_status sbx_client_list_snapshots(sbx_client *cl, const char *project, size_t limit, int64_t since,
                                     int64_t until, char **json)
{
    return list_blocking(cl, "list snapshots", SBX__API_SNAPSHOTS, project, NULL, limit, since, until, NULL, json);
}

sbx_status sbx_client_list_sandboxes_from_start(sbx_client *cl, const char *project, size_t limit, const char *cursor,
                                                sbx_op **op)
{
    return list_start(cl, "list sandboxes", SBX__API_SANDBOXES, project, NULL, limit, -1, -1, cursor, op);
}

sbx_status sbx_client_list_sandboxes_from(sbx_client *cl, const char *project, size_t limit, const char *cursor,
                                          char **json)
{
    return list_blocking(cl, "list sandboxes", SBX__API_SANDBOXES, project, NULL, limit, -1, -1, cursor, json);
}

sbx_status sbx_client_list_snapshots_from_start(sbx_client *cl, const char *project, size_t limit, const char *cursor,
                                                sbx_op **op)
{
    return list_start(cl, "list snapshots", SBX__API_SNAPSHOTS, project, NULL, limit, -1, -1, cursor, op);
}

sbx_status sbx_client_list_snapshots_from(sbx_client *cl, const char *project, size_t limit, const char *cursor,
                                          char **json)
{
    return list_blocking(cl, "list snapshots", SBX__API_SNAPSHOTS, project, NULL, limit, -1, -1, cursor, json);
}

sbx_status sbx_client_list_sessions_from_start(sbx_client *cl, const char *project, const char *name, size_t limit,
                                               const char *cursor, sbx_op **op)
{
    return list_start(cl, "list sessions", SBX__API_SESSIONS, project, name, limit, -1, -1, cursor, op);
}

sbx_status sbx_client_list_sessions_from(sbx_client *cl, const char *project, const char *name, size_t limit,
                                         const char *cursor, char **json)
{
    return list_blocking(cl, "list sessions", SBX__API_SESSIONS, project, name, limit, -1, -1, cursor, json);
}

/* ---- logging ------------------------------------------------------------------------------ */

/* The engine's hook: the caller's callback, with the token scrubbed (as a
 * last line: no message is made with it) and mutating calls refused
 * (SBX_E_MISUSE) while it runs, as inside every callback. */
static void core_log(int level, const char *msg, void *user)
{
    struct sbx__core *c = user;
    char line[1024];
    size_t n = strlen(msg);
    if (!c->log_cb)
        return;
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, msg, n);
    line[n] = '\0';
    sbx__str_scrub(line, c->auth.token);
    c->in_callback++;
    c->log_cb((sbx_log_level)level, line, c->log_user);
    c->in_callback--;
}

sbx_status sbx_client_set_log_cb(sbx_client *cl, sbx_log_level min_level, sbx_log_cb cb, void *user)
{
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    SBX__ARG(cl, (int)min_level >= SBX_LOG_DEBUG && (int)min_level <= SBX_LOG_ERROR,
             "log level %d: SBX_LOG_DEBUG (0) to SBX_LOG_ERROR (3)", (int)min_level);
    if (!cb) {
        clear_log_cb(cl->core);
        return SBX_OK;
    }
    cl->core->log_cb = cb;
    cl->core->log_user = user;
    sbx__engine_set_log(cl->core->engine, core_log, cl->core, (int)min_level);
    return SBX_OK;
}

/* ---- safety for plain commands --------------------------------------------------------- */

sbx_status sbx_client_set_policy(sbx_client *cl, const sbx_policy *p, const char *job_type)
{
    sbx_policy *copy = NULL;
    char *job = NULL;
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    if (job_type) {
        /* The policy names the job types it knows: ask it, with a harmless
         * command, rather than keep a second list here. */
        static const char *const probe[] = {"ls"};
        sbx_policy_reason why;
        char msg[256];
        sbx_policy *any = p ? NULL : sbx_policy_new();
        sbx_status st = sbx_policy_check(p ? p : any, job_type, 1, probe, NULL, &why, msg, sizeof msg);
        sbx_policy_free(any);
        if (st != SBX_OK && st != SBX_E_POLICY_DENIED)
            return sbx__err_set(&cl->err, st == SBX_E_NOMEM ? st : SBX_E_INVALID_ARG, "job type: %s", msg);
    }
    if ((p && !(copy = sbx__policy_copy(p))) || (job_type && !(job = sbx__strdup(job_type)))) {
        sbx_policy_free(copy);
        return sbx__err_nomem(&cl->err);
    }
    sbx_policy_free(cl->core->policy);
    sbx__free(cl->core->policy_job);
    cl->core->policy = copy;
    cl->core->policy_job = job;
    return SBX_OK;
}

sbx_status sbx_client_set_redactor(sbx_client *cl, const sbx_redactor *r)
{
    sbx__redact_rules *rules = NULL;
    SBX__ENTER(cl, sbx__core_in_callback(cl->core));
    /* On failure the redactor set before stays: never none in its place. */
    if (r && !(rules = sbx__redactor_rules(r)))
        return sbx__err_nomem(&cl->err);
    sbx__redact_rules_unref(cl->core->redact_rules);
    cl->core->redact_rules = rules;
    return SBX_OK;
}
