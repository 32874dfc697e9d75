/* SPDX-License-Identifier: MIT */
/*
 * sandbox: the sbx_sandbox and sbx_snapshot handles — configuration, the
 * lifecycle endpoints, files, snapshots. Every endpoint call is an op (see
 * client.c); the blocking form drives that op to its end.
 *
 * Which requests may be repeated (doc/client.md): reads, stop, network
 * policy, file writes and deletes are idempotent and retried; create,
 * extend-timeout (it adds), mkdir (a repeat fails "exists") and snapshot
 * (it stops the sandbox) are sent once.
 */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/core.h"
#include "client/sandbox_int.h"
#include "util/str.h"
#include "client/tarball.h"

/* A download hands its file to write-back every this many bytes. */
#define WRITEBACK_EVERY (8u << 20)

#define DEFAULT_CWD "/vercel/sandbox"
#define READ_MAX_DEFAULT (64u << 20)
#define TAR_KEEP_MAX (8u << 20) /* a tar body up to this size is kept in memory */
#define ID_MAX 256

static void sandbox_destroy(struct sbx__target *t)
{
    sbx_sandbox *s = (sbx_sandbox *)t;
    struct sbx__core *c = s->core;
    sbx__err_free(&s->err);
    sbx__free(s->runtime);
    sbx__free(s->name);
    sbx__free_secret(s->policy_json); /* injection rules hold credentials */
    sbx__strlist_wipe(&s->env);
    sbx__free(s->src_url);
    sbx__free(s->src_rev);
    sbx__free_secret(s->src_user);
    sbx__free_secret(s->src_pass);
    sbx__free(s->src_snapshot);
    sbx__sandbox_info_free(&s->info);
    sbx__free(s);
    sbx__core_unref(c);
}

sbx_sandbox *sbx_sandbox_new(sbx_client *cl)
{
    sbx_sandbox *s;
    if (!cl || sbx__core_in_callback(cl->core))
        return NULL;
    s = sbx__calloc(1, sizeof *s);
    if (!s)
        return NULL;
    sbx__target_init(&s->t, sandbox_destroy);
    s->core = cl->core;
    sbx__core_ref(s->core);
    return s;
}

void sbx_sandbox_free(sbx_sandbox *s)
{
    if (!s)
        return;
    if (s->resume_op && !sbx__core_in_callback(s->core) && !sbx__engine_in_process(s->core->engine)) {
        /* An automatic resume is the handle's own op, which no caller
         * drives: cancelled with the others, then run to its end here, so
         * that nothing is left pending that nobody will free. */
        struct sbx__core *c = s->core;
        sbx__target_ref(&s->t);
        sbx__target_release(&s->t);
        while (s->resume_op) {
            sbx__core_process(c);
            if (s->resume_op)
                sbx__engine_wait(c->engine, 100);
        }
        sbx__target_unref(&s->t);
        return;
    }
    sbx__target_release(&s->t);
}

const char *sbx_sandbox_last_error(const sbx_sandbox *s)
{
    return SBX__LAST_ERROR(s);
}

const char *sbx_sandbox_last_error_code(const sbx_sandbox *s)
{
    return s ? sbx__err_api_code(&s->err) : NULL;
}

/* ---- checks shared by the calls ---------------------------------------------------- */

/* Configuration is only possible before the sandbox exists. */
static sbx_status configurable(sbx_sandbox *s)
{
    if (s->info.id || s->busy)
        return sbx__err_set(&s->err, SBX_E_MISUSE,
                            "the sandbox is already created or attached; options apply at creation");
    return SBX_OK;
}

static sbx_status need_sandbox(sbx_sandbox *s)
{
    if (!s->info.id)
        return sbx__err_set(&s->err, SBX_E_MISUSE,
                            "the handle has no sandbox: call sbx_sandbox_create() or sbx_sandbox_fetch() first");
    return SBX_OK;
}

bool sbx__text_ok(const char *v, bool allow_empty)
{
    if (!v || (!allow_empty && !*v))
        return false;
    for (const char *c = v; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return false;
    return sbx__utf8_valid(v, strlen(v)); /* it travels in JSON */
}

static bool id_ok(const char *id)
{
    return sbx__text_ok(id, false) && strlen(id) <= ID_MAX;
}

/* The process's umask, read without changing it: umask() can only set it,
 * and setting it, even for an instant, changes the mode of files other
 * threads create meanwhile. Linux has it in /proc/self/status; 022 if not. */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[128];
    unsigned v = 022;
    if (!f)
        return 022;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &v) == 1)
            break;
    fclose(f);
    return (mode_t)(v & 0777);
}

static sbx_status replace_str(sbx__err *err, char **dst, const char *v, bool secret)
{
    char *p = v ? sbx__strdup(v) : NULL;
    if (v && !p)
        return sbx__err_nomem(err);
    if (secret)
        sbx__free_secret(*dst);
    else
        sbx__free(*dst);
    *dst = p;
    return SBX_OK;
}

/* ---- configuration -------------------------------------------------------------------- */

sbx_status sbx_sandbox_set_runtime(sbx_sandbox *s, const char *runtime)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, !runtime || sbx__text_ok(runtime, false), "runtime: a name such as \"node24\" or NULL");
    return replace_str(&s->err, &s->runtime, runtime, false);
}

#define NAME_MAX_LEN 64

sbx_status sbx_sandbox_set_name(sbx_sandbox *s, const char *name)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, !name || (sbx__text_ok(name, false) && strlen(name) <= NAME_MAX_LEN && !strchr(name, '/')),
             "name: 1 to %d bytes of text without '/', or NULL", NAME_MAX_LEN);
    return replace_str(&s->err, &s->name, name, false);
}

sbx_status sbx_sandbox_set_persistent(sbx_sandbox *s, int persistent)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    s->persistent = persistent != 0;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_timeout_ms(sbx_sandbox *s, int64_t ms)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, ms >= 0, "timeout: milliseconds >= 0 (0: the server's default)");
    s->timeout_ms = ms;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_vcpus(sbx_sandbox *s, size_t vcpus)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, vcpus <= 64, "vcpus: at most 64 (0: the server's default)");
    s->vcpus = (uint32_t)vcpus;
    return SBX_OK;
}

sbx_status sbx_sandbox_add_port(sbx_sandbox *s, uint32_t port)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, port != 0 && port <= 65535, "port %u: must be 1 to 65535", port);
    for (size_t i = 0; i < s->nports; i++)
        SBX__ARG(s, s->ports[i] != port, "port %u: given twice", port);
    /* The version spoken now; create checks again, as the protocol may
     * still change before the first request. */
    SBX__ARG(s, s->nports < s->core->proto->max_ports, "port %u: at most %zu ports in the %s protocol", port,
             s->core->proto->max_ports, s->core->proto->name);
    s->ports[s->nports++] = port;
    return SBX_OK;
}

/* NAME=VALUE lists of secrets: replace or remove one name. */
sbx_status sbx__env_set(sbx__strlist *l, const char *name, const char *value, sbx__err *err)
{
    size_t nlen;
    char *kv;
    if (!sbx__text_ok(name, false) || strchr(name, '='))
        return sbx__err_set(err, SBX_E_INVALID_ARG,
                            "environment variable name: non-empty, without '=' or control characters");
    nlen = strlen(name);
    if (value && !sbx__utf8_valid(value, strlen(value)))
        return sbx__err_set(err, SBX_E_INVALID_ARG, "environment variable %s: the value is not valid UTF-8",
                            name);
    if (value) {
        size_t vlen = strlen(value);
        kv = sbx__malloc(nlen + vlen + 2);
        if (!kv)
            return sbx__err_nomem(err);
        memcpy(kv, name, nlen);
        kv[nlen] = '=';
        memcpy(kv + nlen + 1, value, vlen + 1);
    } else {
        kv = NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (strncmp(l->v[i], name, nlen) != 0 || l->v[i][nlen] != '=')
            continue;
        sbx__free_secret(l->v[i]);
        if (kv) {
            l->v[i] = kv;
        } else {
            memmove(&l->v[i], &l->v[i + 1], (l->n - i) * sizeof *l->v); /* with the NULL */
            l->n--;
        }
        return SBX_OK;
    }
    if (!kv)
        return SBX_OK;
    if (sbx__strlist_push_take(l, kv) != SBX_OK) /* it wipes kv on failure */
        return sbx__err_nomem(err);
    return SBX_OK;
}

sbx_status sbx_sandbox_set_env(sbx_sandbox *s, const char *name, const char *value)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    return sbx__env_set(&s->env, name, value, &s->err);
}

sbx_status sbx_sandbox_set_network_policy_json(sbx_sandbox *s, const char *json)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    char *api = NULL;
    sbx_status st;
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    /* The SDKs' own shape is kept as the API form it stands for. */
    if (json && (st = sbx__api_policy_from_sdk(json, &api, &s->err)) != SBX_OK)
        return st;
    if (api)
        json = api;
    if (json && s->core->proto->check_policy(json, &s->err) != SBX_OK) {
        sbx__free_secret(api);
        return s->err.code;
    }
    st = replace_str(&s->err, &s->policy_json, json, true);
    sbx__free_secret(api);
    return st;
}

static void clear_source(sbx_sandbox *s)
{
    sbx__free(s->src_url);
    sbx__free(s->src_rev);
    sbx__free(s->src_snapshot);
    s->src_url = s->src_rev = s->src_snapshot = NULL;
    s->depth = 0;
    s->source = SBX__SRC_NONE;
}

sbx_status sbx_sandbox_set_source_git(sbx_sandbox *s, const char *url, const char *revision, size_t depth)
{
    char *u, *r = NULL;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, sbx__text_ok(url, false) && (!revision || sbx__text_ok(revision, false)),
             "git source: a URL, and a revision that is NULL or non-empty, without control characters");
    SBX__ARG(s, depth <= 1000000, "git source: depth %zu is too large", depth);
    u = sbx__strdup(url);
    if (revision)
        r = sbx__strdup(revision);
    if (!u || (revision && !r)) {
        sbx__free(u);
        sbx__free(r);
        return sbx__err_nomem(&s->err);
    }
    clear_source(s);
    s->source = SBX__SRC_GIT;
    s->src_url = u;
    s->src_rev = r;
    s->depth = (uint32_t)depth;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_source_git_auth(sbx_sandbox *s, const char *username, const char *password)
{
    char *u = NULL, *p = NULL;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s,
             !username == !password && (!username || (sbx__text_ok(username, false) && sbx__text_ok(password, false))),
             "git credentials: a username and a password, or neither");
    if (username && (!(u = sbx__strdup(username)) || !(p = sbx__strdup(password)))) {
        sbx__free_secret(u);
        return sbx__err_nomem(&s->err);
    }
    sbx__free_secret(s->src_user);
    sbx__free_secret(s->src_pass);
    s->src_user = u;
    s->src_pass = p;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_source_tarball(sbx_sandbox *s, const char *url)
{
    char *u;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, sbx__text_ok(url, false), "tarball source: a URL");
    if (!(u = sbx__strdup(url)))
        return sbx__err_nomem(&s->err);
    clear_source(s);
    s->source = SBX__SRC_TARBALL;
    s->src_url = u;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_source_snapshot(sbx_sandbox *s, const char *snapshot_id)
{
    char *id;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    SBX__ARG(s, id_ok(snapshot_id), "snapshot source: a snapshot id");
    if (!(id = sbx__strdup(snapshot_id)))
        return sbx__err_nomem(&s->err);
    clear_source(s);
    s->source = SBX__SRC_SNAPSHOT;
    s->src_snapshot = id;
    return SBX_OK;
}

static sbx_status parse_u32(sbx_sandbox *s, const char *key, const char *v, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long long x;
    SBX__ARG(s, *v && *v != '-' && *v != '+' && *v != ' ', "%s: '%s' is not a number", key, v);
    errno = 0;
    x = strtoull(v, &end, 10);
    SBX__ARG(s, !*end && !errno && x <= max, "%s: '%s' is not a number up to %u", key, v, max);
    *out = (uint32_t)x;
    return SBX_OK;
}

sbx_status sbx_sandbox_set_option(sbx_sandbox *s, const char *key, const char *value)
{
    uint32_t n = 0;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, key && value, "key and value must not be NULL");
    if (strcmp(key, "runtime") == 0)
        return sbx_sandbox_set_runtime(s, value);
    if (strcmp(key, "timeout_ms") == 0) {
        char *end;
        long long ms;
        errno = 0;
        ms = strtoll(value, &end, 10);
        SBX__ARG(s, *value && !*end && !errno && ms >= 0, "timeout_ms: '%s' is not milliseconds", value);
        return sbx_sandbox_set_timeout_ms(s, ms);
    }
    if (strcmp(key, "vcpus") == 0)
        return parse_u32(s, key, value, 64, &n) ? s->err.code : sbx_sandbox_set_vcpus(s, n);
    if (strcmp(key, "port") == 0)
        return parse_u32(s, key, value, 65535, &n) ? s->err.code : sbx_sandbox_add_port(s, n);
    if (strncmp(key, "env.", 4) == 0)
        return sbx_sandbox_set_env(s, key + 4, value);
    if (strcmp(key, "network_policy") == 0)
        return sbx_sandbox_set_network_policy_json(s, value);
    if (strcmp(key, "source.git") == 0)
        return sbx_sandbox_set_source_git(s, value, NULL, 0);
    if (strcmp(key, "source.revision") == 0 || strcmp(key, "source.depth") == 0) {
        if (s->source != SBX__SRC_GIT)
            return sbx__err_set(&s->err, SBX_E_MISUSE, "%s: set source.git first", key);
        if (key[7] == 'd') {
            if (parse_u32(s, key, value, 1000000, &n))
                return s->err.code;
            return configurable(s) ? SBX_E_MISUSE : (s->depth = n, SBX_OK);
        }
        if (configurable(s) != SBX_OK)
            return SBX_E_MISUSE;
        SBX__ARG(s, sbx__text_ok(value, false), "source.revision: a branch, tag or commit");
        return replace_str(&s->err, &s->src_rev, value, false);
    }
    if (strcmp(key, "auto_resume") == 0) {
        static const char *const names[] = {"persistent", "always", "never"};
        for (size_t i = 0; i < SBX__ARRAY_LEN(names); i++)
            if (strcmp(value, names[i]) == 0) {
                s->auto_resume = (enum sbx__auto_resume)i;
                return SBX_OK;
            }
        return sbx__err_set(&s->err, SBX_E_INVALID_ARG, "auto_resume: '%s' is not persistent, always or never",
                            value);
    }
    if (strcmp(key, "source.tarball") == 0)
        return sbx_sandbox_set_source_tarball(s, value);
    if (strcmp(key, "source.snapshot") == 0)
        return sbx_sandbox_set_source_snapshot(s, value);
    return sbx__err_set(&s->err, SBX_E_UNKNOWN_OPTION, "unknown sandbox option '%s'", key);
}

/* ---- replies ------------------------------------------------------------------------------ */

/* A new sandbox object from the server replaces the handle's view; routes
 * come only with create/get, so an answer without them keeps the old ones. */
static void adopt(sbx_sandbox *s, struct sbx__sandbox_info *in, bool has_routes)
{
    if (!has_routes) {
        for (size_t i = 0; i < in->nroutes; i++)
            sbx__free(in->routes[i].url);
        memcpy(in->routes, s->info.routes, sizeof in->routes);
        in->nroutes = s->info.nroutes;
        s->info.nroutes = 0;
    }
    /* Session routes answer without the named sandbox: it stays known. */
    if (!in->name) {
        in->name = s->info.name;
        s->info.name = NULL;
    }
    if (in->persistent < 0 && s->info.id)
        in->persistent = s->info.persistent;
    sbx__sandbox_info_free(&s->info);
    s->info = *in;
    memset(in, 0, sizeof *in);
}

struct sbx_reply_arg {
    sbx_sandbox *s;
    bool has_routes;
    bool rebind;       /* resume, fetch by name: the answer may be another session */
    char *expect_id;   /* get: the id asked for */
    sbx__req *req;     /* create: its request, read when it failed */
    sbx__req *probe;   /* create with a source: the check of a silent server in flight */
};

static void reply_arg_free(void *p)
{
    struct sbx_reply_arg *a = p;
    sbx__req_free(a->probe);
    sbx__free(a->expect_id);
    sbx__free(a);
}

/* A create with a source is answered once the server has cloned, downloaded
 * or restored it, minutes without a byte on the wire: its silence proves
 * nothing, as a command's does not. After probe_after_ms of it the client
 * asks the server something small (a list of one sandbox, bounded by
 * probe_timeout_ms, at most one at a time); no answer means the server is
 * stuck, and the create fails (create_end: "a sandbox may exist"). */
static void create_probe_done(sbx__req *r, void *user)
{
    struct sbx_reply_arg *a = user;
    struct sbx__engine_limits l;
    char msg[400];
    sbx_status st = sbx__req_status(r);
    a->probe = NULL;
    if (st != SBX_OK && st != SBX_E_CANCELLED) {
        sbx__engine_get_limits(a->s->core->engine, &l);
        snprintf(msg, sizeof msg,
                 "the server stopped answering: the create brought nothing for %lld ms and a check of the "
                 "server got no answer within %lld ms (%s)",
                 (long long)l.probe_after_ms, (long long)l.probe_timeout_ms, sbx__req_error(r));
        sbx__req_abort(a->req, SBX_E_TRANSPORT, msg);
    }
    /* Any answer, an HTTP error too, shows a live server. */
    sbx__req_free(r);
}

static void create_silent(sbx__req *r, void *user)
{
    struct sbx_reply_arg *a = user;
    struct sbx__engine_limits l;
    struct sbx__api_req req;
    sbx__err tmp = {0};
    (void)r;
    if (a->probe)
        return;
    sbx__engine_get_limits(a->s->core->engine, &l);
    a->probe = a->s->core->proto->list_sandboxes(&req, NULL, 1, -1, -1, NULL) == SBX_OK
                   ? sbx__core_request(a->s->core, &req, true, &tmp)
                   : NULL;
    sbx__api_req_free(&req);
    sbx__err_free(&tmp);
    if (!a->probe)
        return; /* out of memory: asked again after the next silent period */
    /* Not rationed: a queue full of requests must not delay it; nor
     * waiting for the create's own connection (engine.h). */
    sbx__req_set_follow(a->probe, true);
    sbx__req_set_probe(a->probe);
    sbx__req_set_deadline(a->probe, sbx__mono_ms() + l.probe_timeout_ms);
    sbx__req_on_done(a->probe, create_probe_done, a);
    if (sbx__req_submit(a->probe) != SBX_OK) {
        sbx__req_free(a->probe);
        a->probe = NULL;
    }
}

static sbx_status sandbox_reply(sbx_op *op, sbx__req *r, void *arg)
{
    struct sbx_reply_arg *a = arg;
    struct sbx__sandbox_info in = {0};
    size_t len;
    const char *body = sbx__req_body(r, &len);
    sbx_status st = a->s->core->proto->parse_sandbox(body, len, &in, &op->err);
    if (st == SBX_OK && a->expect_id && strcmp(in.id, a->expect_id) != 0)
        st = sbx__err_set(&op->err, SBX_E_PROTOCOL, "asked for sandbox %s, the server answered with %s",
                          a->expect_id, in.id);
    if (st == SBX_OK && !a->rebind && a->s->info.id && strcmp(in.id, a->s->info.id) != 0)
        st = sbx__err_set(&op->err, SBX_E_PROTOCOL, "the server answered with another sandbox (%s)", in.id);
    if (st == SBX_OK)
        adopt(a->s, &in, a->has_routes);
    sbx__sandbox_info_free(&in);
    return st;
}

static void not_busy(sbx_op *op, sbx_status st, void *arg)
{
    struct sbx_reply_arg *a = arg;
    (void)op;
    (void)st;
    a->s->busy = false;
}

static void stop_end(sbx_op *op, sbx_status st, void *arg)
{
    struct sbx_reply_arg *a = arg;
    (void)op;
    (void)st;
    a->s->stops--;
}

/* Whether a create that failed with st may still have made a sandbox: the
 * request may have reached the server and no answer said it did nothing
 * (a 4xx does; a 5xx, a lost connection or a deadline after sending, an
 * unreadable 2xx do not). */
static bool create_may_exist(sbx__req *r, sbx_status st)
{
    long http = sbx__req_http_status(r);
    if (st == SBX_OK || st == SBX_E_NOMEM)
        return false;
    /* The engine does not judge a cancelled request's bytes: any attempt
     * begun may have sent them. */
    if (sbx__req_status(r) != SBX_OK)
        return sbx__req_maybe_sent(r) || (sbx__req_status(r) == SBX_E_CANCELLED && sbx__req_attempts(r) > 0);
    return http >= 500 || (http >= 200 && http <= 299);
}

/* A create whose outcome is unknown is one failure, whatever caused it
 * (SBX_E_TRANSPORT, or SBX_E_CANCELLED when the caller cancelled it), with
 * a message that says what the caller must do about it: a sandbox the
 * handle does not know may be running, and only a list finds it. */
static void create_end(sbx_op *op, sbx_status st, void *arg)
{
    struct sbx_reply_arg *a = arg;
    not_busy(op, st, arg);
    if (!create_may_exist(a->req, st))
        return;
    sbx__err_set(&op->err, st == SBX_E_CANCELLED ? SBX_E_CANCELLED : SBX_E_TRANSPORT, "a sandbox may exist: %s",
                 op->err.code != SBX_OK ? sbx__err_msg(&op->err) : sbx_strerror(st));
}

/* Start one request about this sandbox whose answer is a sandbox object.
 * built: the status of the api builder that filled req, which is freed
 * here either way. create: the request makes the sandbox (a failure may
 * leave one). */
enum {
    SC_IDEMPOTENT = 1 << 0, /* may be sent again */
    SC_ROUTES = 1 << 1,     /* the answer has the routes */
    SC_BUSY = 1 << 2,       /* binds the handle: no other create, fetch or resume meanwhile */
    SC_CREATE = 1 << 3,     /* makes the sandbox (a failure may leave one) */
    SC_REBIND = 1 << 4,     /* the answer may be another session (resume, fetch by name) */
    SC_RESUME = 1 << 5,     /* about the session: resumes it when it has stopped (resume.h) */
    SC_STOP = 1 << 6        /* the caller's stop: no automatic resume until it ends; after one under way */
};

static sbx_status sandbox_call(sbx_sandbox *s, const char *what, sbx_status built, struct sbx__api_req *req,
                               unsigned flags, const char *expect_id, sbx_op **op)
{
    bool idempotent = flags & SC_IDEMPOTENT, busy = flags & SC_BUSY, create = flags & SC_CREATE;
    struct sbx_reply_arg *a;
    struct sbx__simple *sm;
    sbx_status st;

    a = built == SBX_OK ? sbx__calloc(1, sizeof *a) : NULL;
    if (!a || (expect_id && !(a->expect_id = sbx__strdup(expect_id)))) {
        sbx__free(a);
        sbx__api_req_free(req);
        return sbx__err_nomem(&s->err);
    }
    a->s = s;
    a->has_routes = flags & SC_ROUTES;
    a->rebind = flags & SC_REBIND;
    sm = sbx__simple_new(s->core, what, req, idempotent, sandbox_reply, a, reply_arg_free, &s->err);
    sbx__api_req_free(req);
    if (!sm)
        return s->err.code;
    if (busy)
        sm->on_end = not_busy;
    if (flags & SC_RESUME)
        sm->resume_sbx = s;
    if (flags & SC_STOP) {
        /* A stop while an automatic resume is under way goes to the
         * session it brings (resume.h), not to the one already gone. */
        sm->on_end = stop_end;
        sm->resume_sbx = s;
        sm->after_resume = true;
    }
    if (create) {
        a->req = sm->req;
        sm->on_end = create_end;
        /* The server answers once the sandbox runs: after cloning the
         * repository, downloading the tarball or restoring the snapshot,
         * which may take minutes without a byte on the wire. */
        if (s->source != SBX__SRC_NONE) {
            struct sbx__engine_limits l;
            sbx__engine_get_limits(s->core->engine, &l);
            if (l.probe_after_ms > 0)
                sbx__req_set_idle(sm->req, l.probe_after_ms, create_silent, a);
            else
                sbx__req_no_idle(sm->req);
        }
    }
    st = sbx__simple_submit(s->core, &s->t, sm, op, &s->err);
    if (st == SBX_OK && busy)
        s->busy = true;
    if (st == SBX_OK && (flags & SC_STOP))
        s->stops++;
    return st;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

sbx_status sbx_sandbox_create_start(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__create_spec spec;
    struct sbx__api_req req;
    sbx_status st;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (configurable(s) != SBX_OK)
        return SBX_E_MISUSE;
    if (s->nports > s->core->proto->max_ports)
        return sbx__err_set(&s->err, SBX_E_INVALID_ARG,
                            "%zu ports: at most %zu in the %s protocol (v2 allows %d)", s->nports,
                            s->core->proto->max_ports, s->core->proto->name, SBX__MAX_PORTS);
    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        return st;
    if ((s->name || s->persistent) && !s->core->proto->get_named)
        return sbx__err_set(&s->err, SBX_E_UNSUPPORTED,
                            "named and persistent sandboxes are in the 2.x protocol: set the client option "
                            "protocol=v2");
    if (s->policy_json && (st = s->core->proto->check_policy(s->policy_json, &s->err)) != SBX_OK)
        return st;
    memset(&spec, 0, sizeof spec);
    spec.name = s->name;
    spec.persistent = s->persistent;
    spec.project = s->core->auth.project;
    spec.runtime = s->runtime;
    spec.policy_json = s->policy_json;
    spec.timeout_ms = s->timeout_ms;
    spec.vcpus = s->vcpus;
    spec.ports = s->ports;
    spec.nports = s->nports;
    spec.env = &s->env;
    spec.source = s->source;
    spec.url = s->src_url;
    spec.revision = s->src_rev;
    spec.depth = s->depth;
    spec.snapshot_id = s->src_snapshot;
    if (s->source == SBX__SRC_GIT) {
        spec.username = s->src_user;
        spec.password = s->src_pass;
    }
    /* The body may hold git credentials and env secrets: freed wiped. */
    st = s->core->proto->create_sandbox(&req, &spec);
    return sandbox_call(s, "create sandbox", st, &req, SC_ROUTES | SC_BUSY | SC_CREATE, NULL, op);
}

sbx_status sbx_sandbox_create(sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_create_start(s, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_fetch_start(sbx_sandbox *s, const char *id, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, id_ok(id), "sandbox id: non-empty, printable, at most %d bytes", ID_MAX);
    if (s->busy || (s->info.id && strcmp(s->info.id, id) != 0))
        return sbx__err_set(&s->err, SBX_E_MISUSE,
                            "the handle is already bound to sandbox %s; use a new handle",
                            s->info.id ? s->info.id : "(being created)");
    return sandbox_call(s, "get sandbox", s->core->proto->get_sandbox(&req, id), &req, SC_IDEMPOTENT | SC_ROUTES | SC_BUSY,
                        id, op);
}

sbx_status sbx_sandbox_fetch(sbx_sandbox *s, const char *id)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_fetch_start(s, id, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_refresh_start(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    return sandbox_call(s, "get sandbox", s->core->proto->get_sandbox(&req, s->info.id), &req,
                        SC_IDEMPOTENT | SC_ROUTES, NULL, op);
}

sbx_status sbx_sandbox_fetch_named_start(sbx_sandbox *s, const char *name, sbx_op **op)
{
    struct sbx__api_req req;
    sbx_status st;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, name && sbx__text_ok(name, false) && strlen(name) <= NAME_MAX_LEN, "name: 1 to %d bytes of text",
             NAME_MAX_LEN);
    if (!s->core->proto->get_named)
        return sbx__err_set(&s->err, SBX_E_UNSUPPORTED,
                            "named sandboxes are in the 2.x protocol: set the client option protocol=v2");
    if (s->busy || (s->info.id && (!s->info.name || strcmp(s->info.name, name) != 0)))
        return sbx__err_set(&s->err, SBX_E_MISUSE, "the handle is already bound to another sandbox; use a new handle");
    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        return st;
    return sandbox_call(s, "get sandbox", s->core->proto->get_named(&req, s->core->auth.project, name, false), &req,
                        SC_IDEMPOTENT | SC_ROUTES | SC_BUSY | SC_REBIND, NULL, op);
}

sbx_status sbx_sandbox_fetch_named(sbx_sandbox *s, const char *name)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_fetch_named_start(s, name, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_resume_start(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    if (s->busy)
        return sbx__err_set(&s->err, SBX_E_MISUSE, "the sandbox's create, fetch or resume is pending");
    if (!s->core->proto->get_named || !s->info.name)
        return sbx__err_set(&s->err, SBX_E_UNSUPPORTED,
                            "resume: only a named sandbox (the 2.x protocol) resumes; this one has no name");
    /* Beside an automatic resume under way: both get the same session. */
    return sandbox_call(s, "resume sandbox", s->core->proto->get_named(&req, s->core->auth.project, s->info.name, true),
                        &req, SC_IDEMPOTENT | SC_ROUTES | SC_BUSY | SC_REBIND, NULL, op);
}

sbx_status sbx__sandbox_resume_begin(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__api_req req;
    /* Idempotent: a second resume answers the session the first started. */
    return sandbox_call(s, "resume sandbox", s->core->proto->get_named(&req, s->core->auth.project, s->info.name, true),
                        &req, SC_IDEMPOTENT | SC_ROUTES | SC_REBIND, NULL, op);
}

sbx_status sbx_sandbox_resume(sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_resume_start(s, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

static sbx_status delete_reply(sbx_op *op, sbx__req *r, void *arg)
{
    sbx_sandbox *s = arg;
    size_t len;
    const char *body = sbx__req_body(r, &len);
    sbx_status st = sbx__api_check_deleted(body, len, &op->err);
    char *stopped;
    if (st != SBX_OK)
        return st;
    /* its session stopped with it; the handle keeps what it knew */
    if (!(stopped = sbx__strdup("stopped")))
        return sbx__err_nomem(&op->err);
    sbx__free(s->info.status);
    s->info.status = stopped;
    return SBX_OK;
}

sbx_status sbx_sandbox_delete_start(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__api_req req;
    struct sbx__simple *sm;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    if (!s->core->proto->delete_named || !s->info.name)
        return sbx__err_set(&s->err, SBX_E_UNSUPPORTED,
                            "delete: only a named sandbox (the 2.x protocol) is deleted; stop this one");
    if (s->core->proto->delete_named(&req, s->core->auth.project, s->info.name) != SBX_OK)
        return sbx__err_nomem(&s->err);
    /* Idempotent as far as retries go: a second delete finds nothing (404). */
    sm = sbx__simple_new(s->core, "delete sandbox", &req, true, delete_reply, s, NULL, &s->err);
    sbx__api_req_free(&req);
    if (!sm)
        return s->err.code;
    return sbx__simple_submit(s->core, &s->t, sm, op, &s->err);
}

sbx_status sbx_sandbox_delete(sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_delete_start(s, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_refresh(sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_refresh_start(s, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_stop_start(sbx_sandbox *s, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    return sandbox_call(s, "stop sandbox", s->core->proto->stop_sandbox(&req, s->info.id), &req, SC_IDEMPOTENT | SC_STOP,
                        NULL, op);
}

sbx_status sbx_sandbox_stop(sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_stop_start(s, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_extend_timeout_start(sbx_sandbox *s, int64_t ms, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, ms > 0, "extend timeout: milliseconds > 0");
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    return sandbox_call(s, "extend timeout", s->core->proto->extend_timeout(&req, s->info.id, ms), &req, SC_RESUME,
                        NULL, op);
}

sbx_status sbx_sandbox_extend_timeout(sbx_sandbox *s, int64_t ms)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_extend_timeout_start(s, ms, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_update_network_policy_start(sbx_sandbox *s, const char *json, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    char *api = NULL;
    sbx_status st;
    SBX__ARG(s, json, "network policy: JSON must not be NULL");
    if ((st = sbx__api_policy_from_sdk(json, &api, &s->err)) != SBX_OK)
        return st;
    if (api)
        json = api;
    if (s->core->proto->check_policy(json, &s->err) != SBX_OK || need_sandbox(s) != SBX_OK) {
        sbx__free_secret(api);
        return s->err.code;
    }
    st = sandbox_call(s, "update network policy", s->core->proto->update_network_policy(&req, s->info.id, json), &req,
                      SC_IDEMPOTENT | SC_RESUME, NULL, op);
    sbx__free_secret(api);
    return st;
}

sbx_status sbx_sandbox_update_network_policy(sbx_sandbox *s, const char *json)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_update_network_policy_start(s, json, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

/* ---- update (2.x) ------------------------------------------------------------------------------- */

/* The PATCH of a named sandbox, then what the SDK also tells its running
 * session: a longer lifetime (the difference, when the new default is
 * longer than the session's), the new network policy. */
struct upd_state {
    sbx_sandbox *s;
    sbx__req *req;
    int stage;                  /* 0 the PATCH, 1 extend the session, 2 its policy */
    struct sbx__update_info u;
};

static void upd_cancel(sbx_op *op)
{
    struct upd_state *u = op->state;
    if (u->req)
        sbx__req_cancel(u->req);
}

static void upd_release(sbx_op *op)
{
    struct upd_state *u = op->state;
    sbx__req_free(u->req);
    sbx__free_secret(u->u.policy_json); /* injection rules hold credentials */
    sbx__free(u);
}

static const struct sbx__op_ops upd_ops = {upd_cancel, upd_release};

static void upd_done(sbx__req *r, void *user);

/* The next request of the update, or its end. */
static void upd_next(sbx_op *op)
{
    struct upd_state *u = op->state;
    sbx_sandbox *s = u->s;
    const struct sbx__proto *pr = s->core->proto;
    bool running = s->info.status && strcmp(s->info.status, "running") == 0;
    struct sbx__api_req req;
    sbx_status built;
    bool idempotent = true;

    for (;;) {
        u->stage++;
        if (u->stage == 1 && running && u->u.timeout_ms > s->info.timeout_ms && s->info.timeout_ms >= 0) {
            built = pr->extend_timeout(&req, s->info.id, u->u.timeout_ms - s->info.timeout_ms);
            idempotent = false; /* it adds */
            break;
        }
        /* Sent whatever the status said: a session that stopped answers
         * 410, which is skipped. */
        if (u->stage == 2 && u->u.policy_json) {
            built = pr->update_network_policy(&req, s->info.id, u->u.policy_json);
            break;
        }
        if (u->stage > 2) {
            sbx__op_finish(op, SBX_OK, NULL);
            return;
        }
    }
    sbx__err_clear(&op->err);
    u->req = built == SBX_OK ? sbx__core_request(s->core, &req, idempotent, &op->err) : NULL;
    sbx__api_req_free(&req);
    if (u->req) {
        sbx__req_on_done(u->req, upd_done, op);
        if (sbx__req_submit(u->req) == SBX_OK)
            return;
    }
    /* core_request names its own failure (expired credentials, say) */
    if (op->err.code != SBX_OK && op->err.code != SBX_E_NOMEM)
        sbx__op_finish(op, op->err.code, NULL);
    else
        sbx__op_finish(op, SBX_E_NOMEM, SBX__NOMEM_TEXT);
}

static void upd_done(sbx__req *r, void *user)
{
    static const char *const what[] = {"update sandbox", "update sandbox: extend its session",
                                       "update sandbox: its session's network policy"};
    sbx_op *op = user;
    struct upd_state *u = op->state;
    sbx_sandbox *s = u->s;
    size_t len;
    const char *body;
    sbx_status st = SBX_OK;

    /* A session that stopped meanwhile needs telling nothing (the SDK
     * ignores these answers too): its next one starts with the settings. */
    if (u->stage == 0 || !sbx__resume_session_gone(r)) {
        st = sbx__op_check_response(op, r, what[u->stage]);
        body = sbx__req_body(r, &len);
        if (st == SBX_OK && u->stage == 0) {
            struct sbx__sandbox_info in = {0};
            bool has_routes = false;
            if ((st = s->core->proto->parse_named(body, len, &in, &has_routes, &op->err)) == SBX_OK) {
                if (in.persistent >= 0)
                    s->info.persistent = in.persistent;
                if (has_routes) { /* new ports: their routes */
                    for (size_t i = 0; i < s->info.nroutes; i++)
                        sbx__free(s->info.routes[i].url);
                    memcpy(s->info.routes, in.routes, sizeof in.routes);
                    s->info.nroutes = in.nroutes;
                    in.nroutes = 0;
                }
            }
            sbx__sandbox_info_free(&in);
        } else if (st == SBX_OK) {
            struct sbx__sandbox_info in = {0};
            st = s->core->proto->parse_sandbox(body, len, &in, &op->err);
            if (st == SBX_OK && s->info.id && strcmp(in.id, s->info.id) == 0)
                adopt(s, &in, false);
            sbx__sandbox_info_free(&in);
        }
    }
    sbx__req_free(u->req);
    u->req = NULL;
    if (st != SBX_OK)
        sbx__op_finish(op, st, NULL);
    else
        upd_next(op);
}

sbx_status sbx_sandbox_update_start(sbx_sandbox *s, const char *settings_json, sbx_op **op)
{
    struct sbx__api_req req;
    struct upd_state *u;
    sbx_status st;
    sbx_op *o;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, settings_json, "settings: JSON must not be NULL");
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    if (!s->core->proto->update_named || !s->info.name)
        return sbx__err_set(&s->err, SBX_E_UNSUPPORTED,
                            "update: only a named sandbox (the 2.x protocol) has settings of its own");
    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        return st;
    if (!(u = sbx__calloc(1, sizeof *u)))
        return sbx__err_nomem(&s->err);
    u->s = s;
    st = s->core->proto->update_named(&req, s->core->auth.project, s->info.name, settings_json, &u->u, &s->err);
    if (st != SBX_OK) {
        upd_release(&(sbx_op){.state = u});
        return st;
    }
    /* The same settings again give the same sandbox: idempotent. */
    u->req = sbx__core_request(s->core, &req, true, &s->err);
    sbx__api_req_free(&req);
    if (!u->req) {
        upd_release(&(sbx_op){.state = u});
        return s->err.code;
    }
    if (!(o = sbx__op_new(s->core, &s->t, &upd_ops, u))) {
        upd_release(&(sbx_op){.state = u});
        return sbx__err_nomem(&s->err);
    }
    sbx__req_on_done(u->req, upd_done, o);
    if (sbx__req_submit(u->req) != SBX_OK) {
        sbx__op_destroy(o);
        return sbx__err_nomem(&s->err);
    }
    *op = o;
    return SBX_OK;
}

sbx_status sbx_sandbox_update(sbx_sandbox *s, const char *settings_json)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_update_start(s, settings_json, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

/* ---- getters -------------------------------------------------------------------------------- */

const char *sbx_sandbox_id(const sbx_sandbox *s)
{
    return s ? s->info.id : NULL;
}

const char *sbx_sandbox_status(const sbx_sandbox *s)
{
    return s ? s->info.status : NULL;
}

const char *sbx_sandbox_name(const sbx_sandbox *s)
{
    return s ? s->info.name : NULL;
}

int sbx_sandbox_persistent(const sbx_sandbox *s)
{
    return s && s->info.id ? s->info.persistent : -1;
}

const char *sbx_sandbox_runtime(const sbx_sandbox *s)
{
    return s ? s->info.runtime : NULL;
}

const char *sbx_sandbox_region(const sbx_sandbox *s)
{
    return s ? s->info.region : NULL;
}

int64_t sbx_sandbox_timeout_ms(const sbx_sandbox *s)
{
    return s && s->info.id ? s->info.timeout_ms : -1;
}

size_t sbx_sandbox_vcpus(const sbx_sandbox *s)
{
    return s ? s->info.vcpus : 0;
}

int64_t sbx_sandbox_memory_mb(const sbx_sandbox *s)
{
    return s && s->info.memory_mb ? (int64_t)s->info.memory_mb : -1;
}

int64_t sbx_sandbox_created_at(const sbx_sandbox *s)
{
    return s && s->info.id ? s->info.created_at : -1;
}

const char *sbx_sandbox_route_url(const sbx_sandbox *s, uint32_t port)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->info.nroutes; i++)
        if (s->info.routes[i].port == port)
            return s->info.routes[i].url;
    return NULL;
}

const char *sbx_sandbox_network_policy_json(const sbx_sandbox *s)
{
    return s ? s->info.network_policy_json : NULL;
}

const char *sbx_sandbox_json(const sbx_sandbox *s)
{
    return s ? s->info.json : NULL;
}

const char *sbx__sandbox_cwd(const sbx_sandbox *s)
{
    return s->info.cwd ? s->info.cwd : DEFAULT_CWD;
}

/* ---- files ---------------------------------------------------------------------------------- */

static sbx_status check_path(sbx_sandbox *s, const char *path)
{
    SBX__ARG(s, path && *path, "path: a non-empty path in the sandbox");
    SBX__ARG(s, sbx__utf8_valid(path, strlen(path)), "path: not valid UTF-8");
    return SBX_OK;
}

/* The path of a file in the sandbox, made absolute (against cwd) and
 * normalised lexically, without its leading '/': a tar entry name for an
 * upload extracted at "/". ".." at the root stays at the root, as the SDK
 * does. *name is NULL if nothing is left (the root itself); out of memory
 * is told apart, so that it is not reported as a bad path. */
sbx_status sbx__sandbox_tar_name(const char *cwd, const char *path, char **name)
{
    sbx__buf in = SBX__BUF_INIT, out = SBX__BUF_INIT;
    char *p, *save = NULL;
    sbx_status st = SBX_E_NOMEM;

    *name = NULL;
    if ((path[0] != '/' && (sbx__buf_puts(&in, cwd) != SBX_OK || sbx__buf_putc(&in, '/') != SBX_OK)) ||
        sbx__buf_puts(&in, path) != SBX_OK)
        goto out;
    for (p = strtok_r(in.data, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
        if (strcmp(p, ".") == 0)
            continue;
        if (strcmp(p, "..") == 0) {
            char *slash = out.len ? memrchr(out.data, '/', out.len) : NULL;
            sbx__buf_truncate(&out, slash ? (size_t)(slash - out.data) : 0);
            continue;
        }
        if ((out.len && sbx__buf_putc(&out, '/') != SBX_OK) || sbx__buf_puts(&out, p) != SBX_OK)
            goto out;
    }
    st = SBX_OK;
    if (out.len && !(*name = sbx__buf_detach(&out, NULL)))
        st = SBX_E_NOMEM;
out:
    sbx__buf_free(&in);
    sbx__buf_free(&out);
    return st;
}

/* built: the status of the api builder that filled req (freed here). */
static sbx_status file_call(sbx_sandbox *s, const char *what, sbx_status built, struct sbx__api_req *req,
                            bool idempotent, sbx_op **op)
{
    struct sbx__simple *sm;
    if (built != SBX_OK)
        return sbx__err_nomem(&s->err);
    sm = sbx__simple_new(s->core, what, req, idempotent, NULL, NULL, NULL, &s->err);
    sbx__api_req_free(req);
    if (!sm)
        return s->err.code;
    sm->resume_sbx = s;
    return sbx__simple_submit(s->core, &s->t, sm, op, &s->err);
}

sbx_status sbx_sandbox_mkdir_start(sbx_sandbox *s, const char *path, sbx_op **op)
{
    struct sbx__api_req req;
    sbx_status st;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        return st;
    return file_call(s, "mkdir", s->core->proto->mkdir(&req, s->info.id, path), &req, false, op);
}

sbx_status sbx_sandbox_mkdir(sbx_sandbox *s, const char *path)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_mkdir_start(s, path, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

/* An fs/write of the entries of tar (taken over, freed with the op). */
static size_t tar_read_fn(char *buf, size_t n, void *user)
{
    return sbx__tar_read(user, buf, n);
}

static int tar_rewind_fn(void *user)
{
    return sbx__tar_rewind(user);
}

static void tar_free_fn(void *p)
{
    sbx__tar_free(p);
}

static sbx_status tar_reply(sbx_op *op, sbx__req *r, void *arg)
{
    (void)op;
    (void)r;
    (void)arg;
    return SBX_OK;
}

static void tar_end(sbx_op *op, sbx_status st, void *arg)
{
    /* A failure of the body's generator shows as an aborted upload: say
     * what really failed. */
    const char *e = sbx__tar_error(arg);
    if (st != SBX_OK && e[0])
        sbx__err_set(&op->err, sbx__tar_status(arg), "write files: %s", e);
}

static sbx_status write_tar(sbx_sandbox *s, sbx__tar *tar, sbx_op **op)
{
    struct sbx__api_req req;
    struct sbx__simple *sm;
    uint64_t size = 0;
    sbx_status st;

    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK || (st = sbx__tar_prepare(tar, TAR_KEEP_MAX, &size, &s->err)) != SBX_OK) {
        sbx__tar_free(tar);
        return st;
    }
    if (s->core->proto->write_files(&req, s->info.id) != SBX_OK) {
        sbx__tar_free(tar);
        return sbx__err_nomem(&s->err);
    }
    /* Writing the same files again gives the same result: idempotent. */
    sm = sbx__simple_new(s->core, "write files", &req, true, tar_reply, tar, tar_free_fn, &s->err);
    if (!sm) {
        sbx__api_req_free(&req);
        return s->err.code;
    }
    sm->on_end = tar_end;
    sm->resume_sbx = s;
    st = sbx__req_set_body_stream(sm->req, tar_read_fn, tar_rewind_fn, tar, size, req.content_type);
    sbx__api_req_free(&req);
    if (st != SBX_OK) {
        sbx__simple_discard(sm);
        return sbx__err_nomem(&s->err);
    }
    return sbx__simple_submit(s->core, &s->t, sm, op, &s->err);
}

sbx_status sbx_sandbox_write_file_start(sbx_sandbox *s, const char *path, const uint8_t *data, size_t len,
                                        uint32_t mode, sbx_op **op)
{
    sbx__tar *tar;
    char *name;
    sbx_status st;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    SBX__ARG(s, data || !len, "data is NULL but len is %zu", len);
    SBX__ARG(s, mode <= 07777, "mode %o: permission bits only (at most 07777)", mode);
    if (sbx__sandbox_tar_name(sbx__sandbox_cwd(s), path, &name) != SBX_OK)
        return sbx__err_nomem(&s->err);
    SBX__ARG(s, name, "path '%s' names the root directory, not a file", path);
    tar = sbx__tar_new();
    if (!tar) {
        sbx__free(name);
        return sbx__err_nomem(&s->err);
    }
    st = sbx__tar_add_memory(tar, name, data, len, mode ? mode : 0644, &s->err);
    sbx__free(name);
    if (st != SBX_OK) {
        sbx__tar_free(tar);
        return st;
    }
    return write_tar(s, tar, op);
}

sbx_status sbx_sandbox_write_file(sbx_sandbox *s, const char *path, const uint8_t *data, size_t len,
                                  uint32_t mode)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_write_file_start(s, path, data, len, mode, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_upload_start(sbx_sandbox *s, const char *local, const char *path, sbx_op **op)
{
    sbx__tar *tar;
    char *name;
    sbx_status st;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, local && *local, "local: a file or directory to upload");
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    if (sbx__sandbox_tar_name(sbx__sandbox_cwd(s), path, &name) != SBX_OK)
        return sbx__err_nomem(&s->err);
    SBX__ARG(s, name, "path '%s' names the root directory", path);
    tar = sbx__tar_new();
    if (!tar) {
        sbx__free(name);
        return sbx__err_nomem(&s->err);
    }
    st = sbx__tar_add_path(tar, local, name, &s->err);
    sbx__free(name);
    if (st != SBX_OK) {
        sbx__tar_free(tar);
        return st;
    }
    return write_tar(s, tar, op);
}

sbx_status sbx_sandbox_upload(sbx_sandbox *s, const char *local, const char *path)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_upload_start(s, local, path, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

/* ---- reading files: to memory, a callback or a local file ---------------------------------- */

enum sink { SINK_MEM, SINK_CB, SINK_FILE };

struct read_state {
    sbx__req *req;
    enum sink sink;
    sbx__buf mem;
    size_t max;
    sbx_data_cb cb;
    void *cb_user;
    int fd;
    char *tmp, *final;
    uint64_t written, flushed; /* SINK_FILE: bytes written, and handed to write-back */
    bool too_big, cb_stopped, nomem;
    int typed;                  /* the answer's Content-Type: 0 not checked, 1 fits, -1 does not
                                 * (then no byte of it is the file's) */
    int io_errno;
    struct sbx__resume_wait rw; /* sent again on a new session (resume.h) */
};

static void read_cancel(sbx_op *op)
{
    struct read_state *rs = op->state;
    if (sbx__resume_cancel(&rs->rw))
        return;
    if (rs->req)
        sbx__req_cancel(rs->req);
}

static void drop_tmp(struct read_state *rs)
{
    if (rs->fd >= 0)
        close(rs->fd);
    rs->fd = -1;
    if (rs->tmp)
        unlink(rs->tmp);
}

static void read_release(sbx_op *op)
{
    struct read_state *rs = op->state;
    sbx__resume_disarm(&rs->rw);
    sbx__req_free(rs->req);
    drop_tmp(rs);
    sbx__free(rs->tmp);
    sbx__free(rs->final);
    sbx__buf_free(&rs->mem);
    sbx__free(rs);
}

/* Whether a 2xx answer is the file's bytes (the protocol's rule on its
 * Content-Type), checked before its first byte goes anywhere. The reason
 * is told once the request is done (its HTTP status known then). */
static bool read_typed(sbx_op *op, struct read_state *rs, sbx__req *r)
{
    const struct sbx__proto *pr = op->core->proto;
    sbx__err tmp = {0};
    if (rs->typed == 0)
        rs->typed = !pr->check_file_type || pr->check_file_type(sbx__req_content_type(r), 200, &tmp) == SBX_OK
                        ? 1
                        : -1;
    sbx__err_free(&tmp);
    return rs->typed > 0;
}

static sbx_status read_untyped(sbx_op *op, sbx__req *r)
{
    return op->core->proto->check_file_type(sbx__req_content_type(r), sbx__req_http_status(r), &op->err);
}

static const struct sbx__op_ops read_ops = {read_cancel, read_release};

static int read_data(sbx__req *r, const char *data, size_t len, void *user)
{
    sbx_op *op = user;
    struct read_state *rs = op->state;
    sbx_status st;
    if (!read_typed(op, rs, r))
        return SBX__DATA_ABORT;
    switch (rs->sink) {
    case SINK_MEM:
        st = sbx__buf_append(&rs->mem, data, len);
        if (st == SBX_E_BUDGET_EXCEEDED)
            rs->too_big = true;
        else if (st != SBX_OK)
            rs->nomem = true;
        return st == SBX_OK ? SBX__DATA_OK : SBX__DATA_ABORT;
    case SINK_CB: {
        int stop;
        op->core->in_callback++;
        stop = rs->cb((const uint8_t *)data, len, rs->cb_user);
        op->core->in_callback--;
        if (stop) {
            rs->cb_stopped = true;
            return SBX__DATA_ABORT;
        }
        return SBX__DATA_OK;
    }
    case SINK_FILE:
        while (len) {
            ssize_t w = write(rs->fd, data, len);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rs->io_errno = w < 0 ? errno : EIO;
                return SBX__DATA_ABORT;
            }
            data += w;
            len -= (size_t)w;
            rs->written += (uint64_t)w;
        }
        /* Start writing back as it comes (without waiting for it), so
         * that the fsync before the rename has little left to do. */
        if (rs->written - rs->flushed >= WRITEBACK_EVERY) {
            (void)sync_file_range(rs->fd, (off_t)rs->flushed, (off_t)(rs->written - rs->flushed),
                                  SYNC_FILE_RANGE_WRITE);
            rs->flushed = rs->written;
        }
        return SBX__DATA_OK;
    }
    return SBX__DATA_ABORT;
}

static void read_done(sbx__req *r, void *user)
{
    sbx_op *op = user;
    struct read_state *rs = op->state;
    sbx_status st;

    if (sbx__resume_try(&rs->rw, r))
        return; /* sent again on the sandbox's new session */
    if (rs->typed < 0)
        st = read_untyped(op, r);
    else if (rs->too_big)
        st = sbx__err_set(&op->err, SBX_E_BUDGET_EXCEEDED, "read file: larger than the %zu bytes allowed",
                          rs->max);
    else if (rs->nomem)
        st = sbx__err_nomem(&op->err);
    else if (rs->cb_stopped)
        st = sbx__err_set(&op->err, SBX_E_CANCELLED, "read file: the callback stopped it");
    else if (rs->io_errno)
        st = sbx__err_set(&op->err, SBX_E_IO, "download: %s: %s", rs->tmp, strerror(rs->io_errno));
    else if ((st = sbx__op_check_response(op, r, "read file")) == SBX_E_NOT_FOUND)
        sbx__err_set(&op->err, st, "read file: no such file (or not a regular file) in the sandbox");
    else if (st == SBX_OK && !read_typed(op, rs, r)) /* an empty body: no byte came to check */
        st = read_untyped(op, r);
    if (st == SBX_OK && rs->sink == SINK_FILE) {
        int fd = rs->fd, e = 0;
        rs->fd = -1;
        /* closed once whatever happens: a second close could hit a
         * descriptor another thread has just been given */
        if (fsync(fd) != 0)
            e = errno;
        if (close(fd) != 0 && !e)
            e = errno;
        if (e) {
            st = sbx__err_set(&op->err, SBX_E_IO, "download: %s: %s", rs->tmp, strerror(e));
        } else if (rename(rs->tmp, rs->final) != 0) {
            st = sbx__err_set(&op->err, SBX_E_IO, "download: cannot move it to %s: %s", rs->final,
                              strerror(errno));
        } else {
            sbx__free(rs->tmp);
            rs->tmp = NULL; /* in place: nothing to remove */
        }
    }
    if (st != SBX_OK && rs->sink == SINK_FILE)
        drop_tmp(rs);
    /* Kept by the op, so that a _start caller reads them from it
     * (sbx_op_result_data()) and the blocking form takes them. */
    if (st == SBX_OK && rs->sink == SINK_MEM &&
        !(op->result_data = (uint8_t *)sbx__buf_detach(&rs->mem, &op->result_len)))
        st = sbx__err_nomem(&op->err);
    sbx__op_finish(op, st, NULL);
}

/* The read could not be repeated on a new session (resume.h). */
static void read_fail(struct sbx__resume_wait *w, sbx_status st)
{
    struct read_state *rs = w->op->state;
    if (rs->sink == SINK_FILE)
        drop_tmp(rs);
    sbx__op_finish(w->op, st, NULL);
}

static sbx_status read_start(sbx_sandbox *s, const char *path, struct read_state *rs, sbx_op **out)
{
    struct sbx__api_req req = {0};
    sbx_op *op;
    sbx_status st;

    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        goto fail;
    if (s->core->proto->read_file(&req, s->info.id, path) != SBX_OK) {
        st = sbx__err_nomem(&s->err);
        goto fail;
    }
    /* A read has no effect: idempotent, retried until bytes arrive. */
    rs->req = sbx__core_request(s->core, &req, true, &s->err);
    if (!rs->req) {
        st = s->err.code;
        goto fail;
    }
    op = sbx__op_new(s->core, &s->t, &read_ops, rs);
    if (!op) {
        st = sbx__err_nomem(&s->err);
        goto fail;
    }
    sbx__api_req_free(&req);
    sbx__req_set_stream(rs->req, read_data, op);
    sbx__req_on_done(rs->req, read_done, op);
    sbx__req_set_progress(rs->req, &op->prog);
    if (sbx__resume_arm(&rs->rw, s, op, &rs->req, read_fail) != SBX_OK || sbx__req_submit(rs->req) != SBX_OK) {
        sbx__op_destroy(op);
        return sbx__err_nomem(&s->err);
    }
    *out = op;
    return SBX_OK;
fail:
    sbx__api_req_free(&req);
    read_release(&(sbx_op){.state = rs});
    return st;
}

static struct read_state *read_state_new(sbx_sandbox *s, enum sink sink)
{
    struct read_state *rs = sbx__calloc(1, sizeof *rs);
    if (!rs) {
        sbx__err_nomem(&s->err);
        return NULL;
    }
    rs->sink = sink;
    rs->fd = -1;
    return rs;
}

/* The common part of sbx_sandbox_read_file() and its _start form, after
 * their own argument checks. */
static sbx_status read_file_begin(sbx_sandbox *s, const char *path, size_t max, sbx_op **op)
{
    struct read_state *rs;
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    if (!(rs = read_state_new(s, SINK_MEM)))
        return SBX_E_NOMEM;
    rs->max = max ? max : READ_MAX_DEFAULT;
    sbx__buf_init(&rs->mem, rs->max);
    return read_start(s, path, rs, op);
}

sbx_status sbx_sandbox_read_file_start(sbx_sandbox *s, const char *path, size_t max, sbx_op **op)
{
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    return read_file_begin(s, path, max, op);
}

sbx_status sbx_sandbox_read_file(sbx_sandbox *s, const char *path, size_t max, uint8_t **data, size_t *len)
{
    sbx_op *op;
    sbx_status st;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, data && len, "data and len must not be NULL");
    *data = NULL;
    *len = 0;
    if ((st = read_file_begin(s, path, max, &op)) != SBX_OK)
        return st;
    st = sbx__op_drive(op);
    if (st == SBX_OK) {
        /* taken from the op, not copied */
        *data = op->result_data;
        *len = op->result_len;
        op->result_data = NULL;
        op->result_len = 0;
        sbx__err_clear(&s->err);
    } else {
        sbx__op_err_to(&s->err, op);
    }
    sbx__op_destroy(op);
    return st;
}

sbx_status sbx_sandbox_read_stream_start(sbx_sandbox *s, const char *path, sbx_data_cb cb, void *user,
                                         sbx_op **op)
{
    struct read_state *rs;
    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, cb, "cb must not be NULL");
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    if (!(rs = read_state_new(s, SINK_CB)))
        return SBX_E_NOMEM;
    rs->cb = cb;
    rs->cb_user = user;
    return read_start(s, path, rs, op);
}

sbx_status sbx_sandbox_read_stream(sbx_sandbox *s, const char *path, sbx_data_cb cb, void *user)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_read_stream_start(s, path, cb, user, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_sandbox_download_start(sbx_sandbox *s, const char *path, const char *local, sbx_op **op)
{
    struct read_state *rs;
    sbx__buf tmp = SBX__BUF_INIT;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, local && *local, "local: the file to write");
    if (check_path(s, path) != SBX_OK || need_sandbox(s) != SBX_OK)
        return s->err.code;
    if (!(rs = read_state_new(s, SINK_FILE)))
        return SBX_E_NOMEM;
    if (sbx__buf_printf(&tmp, "%s.sbxrun-XXXXXX", local) != SBX_OK || !(rs->final = sbx__strdup(local))) {
        sbx__buf_free(&tmp);
        read_release(&(sbx_op){.state = rs});
        return sbx__err_nomem(&s->err);
    }
    rs->tmp = sbx__buf_detach(&tmp, NULL);
    if (!rs->tmp) {
        read_release(&(sbx_op){.state = rs});
        return sbx__err_nomem(&s->err);
    }
    rs->fd = mkostemp(rs->tmp, O_CLOEXEC);
    if (rs->fd < 0) {
        int e = errno;
        sbx__free(rs->tmp);
        rs->tmp = NULL;
        read_release(&(sbx_op){.state = rs});
        return sbx__err_set(&s->err, SBX_E_IO, "download: cannot create a file beside %s: %s", local,
                            strerror(e));
    }
    /* mkostemp makes it 0600; a downloaded file gets the usual mode. */
    (void)fchmod(rs->fd, 0666 & ~current_umask());
    return read_start(s, path, rs, op);
}

sbx_status sbx_sandbox_download(sbx_sandbox *s, const char *path, const char *local)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_download_start(s, path, local, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

/* ---- snapshots ------------------------------------------------------------------------------ */

static void snapshot_destroy(struct sbx__target *t)
{
    sbx_snapshot *sn = (sbx_snapshot *)t;
    struct sbx__core *c = sn->core;
    sbx__err_free(&sn->err);
    sbx__snapshot_info_free(&sn->info);
    sbx__free(sn);
    sbx__core_unref(c);
}

sbx_snapshot *sbx_snapshot_new(sbx_client *cl)
{
    sbx_snapshot *sn;
    if (!cl || sbx__core_in_callback(cl->core))
        return NULL;
    sn = sbx__calloc(1, sizeof *sn);
    if (!sn)
        return NULL;
    sbx__target_init(&sn->t, snapshot_destroy);
    sn->core = cl->core;
    sbx__core_ref(sn->core);
    return sn;
}

void sbx_snapshot_free(sbx_snapshot *sn)
{
    if (sn)
        sbx__target_release(&sn->t);
}

const char *sbx_snapshot_last_error(const sbx_snapshot *sn)
{
    return SBX__LAST_ERROR(sn);
}

const char *sbx_snapshot_last_error_code(const sbx_snapshot *sn)
{
    return sn ? sbx__err_api_code(&sn->err) : NULL;
}

struct snap_arg {
    sbx_snapshot *sn;
    sbx_sandbox *s;      /* when taking a snapshot of it */
    char *expect_id;
};

static void snap_arg_free(void *p)
{
    struct snap_arg *a = p;
    if (a->s)
        sbx__target_unref(&a->sn->t);
    sbx__free(a->expect_id);
    sbx__free(a);
}

static sbx_status snap_reply(sbx_op *op, sbx__req *r, void *arg)
{
    struct snap_arg *a = arg;
    struct sbx__snapshot_info in = {0};
    struct sbx__sandbox_info sbi = {0};
    size_t len;
    const char *body = sbx__req_body(r, &len);
    sbx_status st = a->sn->core->proto->parse_snapshot(body, len, &in, a->s ? &sbi : NULL, &op->err);
    if (st == SBX_OK && a->expect_id && strcmp(in.id, a->expect_id) != 0)
        st = sbx__err_set(&op->err, SBX_E_PROTOCOL, "asked for snapshot %s, the server answered with %s",
                          a->expect_id, in.id);
    if (st == SBX_OK) {
        sbx__snapshot_info_free(&a->sn->info);
        a->sn->info = in;
        memset(&in, 0, sizeof in);
        if (a->s && sbi.id && a->s->info.id && strcmp(sbi.id, a->s->info.id) == 0)
            adopt(a->s, &sbi, false);
    }
    sbx__snapshot_info_free(&in);
    sbx__sandbox_info_free(&sbi);
    return st;
}

/* built: the status of the api builder that filled req (freed here). */
static sbx_status snap_call(sbx_snapshot *sn, sbx_sandbox *s, sbx__err *err, const char *what, sbx_status built,
                            struct sbx__api_req *req, bool idempotent, const char *expect_id, sbx_op **op)
{
    struct snap_arg *a = built == SBX_OK ? sbx__calloc(1, sizeof *a) : NULL;
    struct sbx__simple *sm;
    if (!a || (expect_id && !(a->expect_id = sbx__strdup(expect_id)))) {
        sbx__free(a);
        sbx__api_req_free(req);
        return sbx__err_nomem(err);
    }
    a->sn = sn;
    if (s) {
        /* The op belongs to the sandbox (and keeps it); it keeps the
         * snapshot handle too. */
        a->s = s;
        sbx__target_ref(&sn->t);
    }
    sm = sbx__simple_new(sn->core, what, req, idempotent, snap_reply, a, snap_arg_free, err);
    sbx__api_req_free(req);
    if (!sm)
        return err->code;
    sm->resume_sbx = s; /* a snapshot of the sandbox's session */
    return sbx__simple_submit(sn->core, s ? &s->t : &sn->t, sm, op, err);
}

sbx_status sbx_sandbox_snapshot_start(sbx_sandbox *s, int64_t expiration_ms, sbx_snapshot *sn, sbx_op **op)
{
    struct sbx__api_req req;
    sbx_status st;

    SBX__ENTER(s, sbx__core_in_callback(s->core));
    SBX__ARG(s, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(s, sn && sn->core == s->core, "sn: a snapshot handle of the same client");
    SBX__ARG(s, expiration_ms >= -1, "expiration: milliseconds, 0 for never, -1 for the server's default");
    if (need_sandbox(s) != SBX_OK)
        return SBX_E_MISUSE;
    if ((st = sbx__core_ready(s->core, &s->err)) != SBX_OK)
        return st;
    st = s->core->proto->create_snapshot(&req, s->info.id, expiration_ms);
    return snap_call(sn, s, &s->err, "snapshot sandbox", st, &req, false, NULL, op);
}

sbx_status sbx_sandbox_snapshot(sbx_sandbox *s, int64_t expiration_ms, sbx_snapshot *sn)
{
    sbx_op *op;
    sbx_status st = sbx_sandbox_snapshot_start(s, expiration_ms, sn, &op);
    return st == SBX_OK ? sbx__op_block(op, &s->err) : st;
}

sbx_status sbx_snapshot_fetch_start(sbx_snapshot *sn, const char *id, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(sn, sbx__core_in_callback(sn->core));
    SBX__ARG(sn, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(sn, id_ok(id), "snapshot id: non-empty, printable, at most %d bytes", ID_MAX);
    return snap_call(sn, NULL, &sn->err, "get snapshot", sn->core->proto->get_snapshot(&req, id), &req, true, id, op);
}

sbx_status sbx_snapshot_fetch(sbx_snapshot *sn, const char *id)
{
    sbx_op *op;
    sbx_status st = sbx_snapshot_fetch_start(sn, id, &op);
    return st == SBX_OK ? sbx__op_block(op, &sn->err) : st;
}

sbx_status sbx_snapshot_delete_start(sbx_snapshot *sn, sbx_op **op)
{
    struct sbx__api_req req;
    SBX__ENTER(sn, sbx__core_in_callback(sn->core));
    SBX__ARG(sn, op, "op must not be NULL");
    *op = NULL;
    if (!sn->info.id)
        return sbx__err_set(&sn->err, SBX_E_MISUSE, "the handle has no snapshot: sbx_snapshot_fetch() first");
    return snap_call(sn, NULL, &sn->err, "delete snapshot", sn->core->proto->delete_snapshot(&req, sn->info.id), &req, true,
                     sn->info.id, op);
}

sbx_status sbx_snapshot_delete(sbx_snapshot *sn)
{
    sbx_op *op;
    sbx_status st = sbx_snapshot_delete_start(sn, &op);
    return st == SBX_OK ? sbx__op_block(op, &sn->err) : st;
}

const char *sbx_snapshot_id(const sbx_snapshot *sn)
{
    return sn ? sn->info.id : NULL;
}

const char *sbx_snapshot_status(const sbx_snapshot *sn)
{
    return sn ? sn->info.status : NULL;
}

const char *sbx_snapshot_source_sandbox_id(const sbx_snapshot *sn)
{
    return sn ? sn->info.source_sandbox_id : NULL;
}

int64_t sbx_snapshot_size_bytes(const sbx_snapshot *sn)
{
    return sn && sn->info.id ? sn->info.size_bytes : -1;
}

int64_t sbx_snapshot_expires_at(const sbx_snapshot *sn)
{
    return sn && sn->info.id ? sn->info.expires_at : -1;
}

const char *sbx_snapshot_json(const sbx_snapshot *sn)
{
    return sn ? sn->info.json : NULL;
}
