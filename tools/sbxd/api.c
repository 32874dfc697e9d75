/* SPDX-License-Identifier: MIT */
/*
 * api: the v1 endpoints of vercel-sandbox-protocol.md. Every request is
 * validated before anything happens; once something has happened (a sandbox
 * exists, a command started) the answer is never a 5xx, because the official
 * SDK retries 5xx responses, POSTs included.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "tarx.h"
#include "http.h"
#include "parse.h"
#include "sbxd.h"
#include "api.h"

static const char *const runtimes[] = {"node24", "node22", "node26", "python3.13", NULL};

bool seg_is(struct http_req *r, int i, const char *s)
{
    return i < r->nseg && strcmp(r->segs[i], s) == 0;
}

bool method_is(struct http_req *r, const char *m)
{
    return strcmp(r->method, m) == 0;
}

bool api_wants_spool(const char *method, const char *url)
{
    size_t n = strlen(url);
    return strcmp(method, "POST") == 0 && n > 9 && strcmp(url + n - 9, "/fs/write") == 0;
}

__attribute__((format(printf, 4, 5))) void set_err(struct api_err *e, unsigned status, const char *code,
                                                   const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    e->code = code;
    e->retry_after = NULL;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* ---- lookups: each returns a referenced object or queues the error ---- */

struct sandbox *api_get_session(struct http_req *r, const char *id, enum MHD_Result *ret)
{
    struct sandbox *s;
    pthread_mutex_lock(&g.lock);
    s = id_is_safe(id) ? sandbox_find(id) : NULL;
    if (s)
        sandbox_ref(s);
    pthread_mutex_unlock(&g.lock);
    if (!s)
        *ret = reply_error(r, 404, "not_found", "%s %s not found", r->proto == 1 ? "sandbox" : "session", id);
    return s;
}

void api_put_session(struct sandbox *s)
{
    pthread_mutex_lock(&g.lock);
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
}

enum MHD_Result api_not_running(struct http_req *r, struct sandbox *s)
{
    enum sandbox_status st;
    const char *what = r->proto == 1 ? "sandbox" : "session";
    pthread_mutex_lock(&g.lock);
    st = s->status;
    pthread_mutex_unlock(&g.lock);
    if (r->proto != 1 && (st == SBXD_STOPPING || st == SBXD_SNAPSHOTTING))
        return reply_error(r, 422, st == SBXD_STOPPING ? "sandbox_stopping" : "sandbox_snapshotting",
                           "session %s is %s", s->id, sandbox_status_name(st));
    return reply_error(r, 410, "gone", "%s %s is %s", what, s->id, sandbox_status_name(st));
}

json_t *api_session_json(int proto, struct sandbox *s)
{
    json_t *o = sandbox_json(s);
    if (o && proto != 1)
        json_object_del(o, "projectId"); /* not a session field */
    return o;
}

json_t *api_command_json(int proto, struct command *c)
{
    json_t *o = command_json(c);
    if (o && proto != 1) {
        json_object_set_new(o, "sessionId", json_string(c->sbx ? c->sbx->id : ""));
        json_object_del(o, "sandboxId");
        if (c->exited && c->finished_at >= c->started_at)
            json_object_set_new(o, "durationMs", json_integer(c->finished_at - c->started_at));
    }
    return o;
}

json_t *api_snapshot_json(int proto, struct snapshot *sn)
{
    json_t *o = snapshot_json(sn);
    if (o && proto != 1) {
        json_object_set_new(o, "sourceSessionId", json_string(sn->source_sandbox_id));
        json_object_del(o, "sourceSandboxId");
        json_object_set_new(o, "regions", json_pack("[s]", SBXD_REGION));
        if (sn->parent_id)
            json_object_set_new(o, "parentId", json_string(sn->parent_id));
        if (sn->method)
            json_object_set_new(o, "creationMethod", json_string(sn->method));
        if (sn->last_used_at > 0)
            json_object_set_new(o, "lastUsedAt", json_integer(sn->last_used_at));
    }
    return o;
}

/* {"sandbox": s} (v1) or {"session": s} (2.x), and its routes. */
static json_t *wrap_sandbox(struct http_req *r, struct sandbox *s, bool routes)
{
    json_t *o;
    pthread_mutex_lock(&g.lock);
    o = json_pack("{s:o}", r->proto == 1 ? "sandbox" : "session", api_session_json(r->proto, s));
    if (o && routes)
        json_object_set_new(o, "routes", sandbox_routes_json(s));
    pthread_mutex_unlock(&g.lock);
    return o;
}

/* ---- parsing helpers ---------------------------------------------------- */

static int parse_limit(struct http_req *r, int *limit, int64_t *since, int64_t *until,
                       char *err, size_t errlen)
{
    const char *l = req_query(r, "limit"), *s = req_query(r, "since"), *u = req_query(r, "until");
    char *end;
    *limit = 50;
    *since = *until = -1;
    if (l) {
        long v = strtol(l, &end, 10);
        if (*end || v < 1 || v > 100) {
            snprintf(err, errlen, "limit must be an integer from 1 to 100");
            return -1;
        }
        *limit = (int)v;
    }
    if (s) {
        *since = strtoll(s, &end, 10);
        if (*end || *since < 0) {
            snprintf(err, errlen, "since must be a timestamp in milliseconds");
            return -1;
        }
    }
    if (u) {
        *until = strtoll(u, &end, 10);
        if (*end || *until < 0) {
            snprintf(err, errlen, "until must be a timestamp in milliseconds");
            return -1;
        }
    }
    return 0;
}

/* Injection rules need the egress CA; without it they are refused rather
 * than accepted and not applied. */
bool injection_ok(const struct netpolicy *p, char *err, size_t errlen)
{
    if (p->ninject == 0 || g.can_inject)
        return true;
    snprintf(err, errlen, "networkPolicy.injectionRules cannot be applied: sbxd has no egress CA "
                          "(see its log)");
    return false;
}

/* ---- lists ------------------------------------------------------------------ */

/* One candidate of a list, newest first; g.lock held while the page is built. */
struct list_item {
    int64_t created_at;
    const char *project;
    json_t *(*to_json)(void *);
    void *obj;
};

/* The protocol's pagination over items (newest first): project filter,
 * since/until exclusive on createdAt, limit; next = createdAt of the last
 * item when older ones remain, prev = createdAt of the first when newer ones
 * exist. */
static enum MHD_Result reply_page(struct http_req *r, const char *key, struct list_item *items,
                                  size_t n)
{
    const char *project = req_query(r, "project");
    int limit, count = 0;
    int64_t since, until;
    char err[256];
    json_t *arr, *out;
    size_t first = SIZE_MAX, last = 0;
    bool more = false, newer = false;

    if (parse_limit(r, &limit, &since, &until, err, sizeof err) < 0)
        return reply_error(r, 400, "bad_request", "%s", err);
    arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct list_item *it = &items[i];
        if (project && (!it->project || strcmp(project, it->project) != 0))
            continue;
        if (first == SIZE_MAX && ((until >= 0 && it->created_at >= until)))
            newer = true;
        if ((until >= 0 && it->created_at >= until) || (since >= 0 && it->created_at <= since))
            continue;
        if (count == limit) {
            more = true;
            break;
        }
        if (first == SIZE_MAX)
            first = i;
        last = i;
        json_array_append_new(arr, it->to_json(it->obj));
        count++;
    }
    out = json_pack("{s:o,s:{s:i,s:o,s:o}}", key, arr, "pagination", "count", count, "next",
                    more ? json_integer(items[last].created_at) : json_null(), "prev",
                    newer && count ? json_integer(items[first].created_at) : json_null());
    return reply_json(r, 200, out);
}

static json_t *sandbox_item_json(void *obj)
{
    return sandbox_json(obj);
}

static json_t *snapshot_item_json(void *obj)
{
    return snapshot_json(obj);
}

/* ---- sandboxes ------------------------------------------------------------- */

static void discard_sandbox(struct sandbox *s)
{
    pthread_mutex_lock(&g.lock);
    for (struct sandbox **pp = &g.sandboxes; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    g.running--;
    pthread_mutex_unlock(&g.lock);
    sandbox_release(s);
    sandbox_remove_state(s);
    pthread_mutex_lock(&g.lock);
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
}

static const char *status_code(int st);

/* A new session (a v1 sandbox) from a create body; *out gets a reference.
 * Every field is checked before anything happens. 0, or -1 with e set
 * (nothing of the session is left then, so even a 5xx is safe to retry). */
int session_create(json_t *body, const struct session_opts *opt, struct sandbox **out, struct api_err *e)
{
    json_t *jv, *src;
    struct sandbox *s = NULL;
    struct netpolicy *policy = NULL;
    struct snapshot *from = NULL;
    char *err = e->msg;
    int64_t timeout = g.cfg.default_timeout_ms, vcpus = g.cfg.default_vcpus;
    const char *runtime = NULL, *requested_runtime = NULL, *project = NULL, *src_type = NULL;
    int ports[SBXD_MAX_PORTS], nports = 0, st = 400;
    sbx__strlist env = SBX__STRLIST_INIT;
    int64_t requested_at = now_ms();

    *out = NULL;
    e->status = 400;
    e->code = "bad_request";
    e->retry_after = NULL;
    e->msg[0] = '\0';
    /* --- validate everything before anything happens --- */
    if ((jv = json_object_get(body, "projectId")) && !json_is_null(jv)) {
        if (!json_is_string(jv)) {
            snprintf(err, sizeof e->msg, "projectId must be a string");
            goto bad;
        }
        project = json_string_value(jv);
    }
    if ((jv = json_object_get(body, "runtime")) && !json_is_null(jv)) {
        bool known = false;
        runtime = json_string_value(jv);
        for (int i = 0; runtime && runtimes[i]; i++)
            known |= strcmp(runtime, runtimes[i]) == 0;
        /* and the names sbxd itself answers ("node20"), so they round-trip */
        known |= runtime_is_provided_name(runtime);
        /* one it answered before an upgrade, kept by a named sandbox */
        if (!known && runtime && opt && opt->stored && runtime_family_name(runtime)) {
            known = true;
            sbxd_log(LOG_WARN, "sandbox %s: its runtime %s is no longer provided; it resumes on %s", opt->name,
                     runtime, runtime_provided(runtime));
        }
        if (!known) {
            snprintf(err, sizeof e->msg, "runtime must be one of node24, node22, node26, python3.13");
            goto bad;
        }
        requested_runtime = runtime;
    }
    if ((jv = json_object_get(body, "timeout")) && !json_is_null(jv)) {
        if (json_get_int64(body, "timeout", &timeout) != 1 || timeout < 1000 ||
            timeout > g.cfg.max_timeout_ms) {
            snprintf(err, sizeof e->msg, "timeout must be milliseconds from 1000 to %lld",
                     (long long)g.cfg.max_timeout_ms);
            goto bad;
        }
    }
    if ((jv = json_object_get(body, "resources")) && !json_is_null(jv)) {
        if (!json_is_object(jv) || json_get_int64(jv, "vcpus", &vcpus) < 0 ||
            (json_object_get(jv, "vcpus") && (vcpus < 1 || vcpus > g.cfg.max_vcpus))) {
            snprintf(err, sizeof e->msg, "resources.vcpus must be an integer from 1 to %d",
                     g.cfg.max_vcpus);
            goto bad;
        }
    }
    if ((jv = json_object_get(body, "ports")) && !json_is_null(jv)) {
        size_t i;
        json_t *p;
        /* opt: a 2.x session; without it, a v1 create. */
        int max = opt ? SBXD_MAX_PORTS : SBXD_MAX_PORTS_V1;
        if (!json_is_array(jv)) {
            snprintf(err, sizeof e->msg, "ports must be an array of at most %d port numbers", max);
            goto bad;
        }
        if (json_array_size(jv) > (size_t)max) {
            snprintf(err, sizeof e->msg, "ports: at most %d port numbers in the %s API, %zu given", max,
                     opt ? "v2" : "v1", json_array_size(jv));
            goto bad;
        }
        json_array_foreach(jv, i, p) {
            int64_t v;
            if (!json_is_integer(p) || (v = json_integer_value(p)) < 1 || v > 65535) {
                snprintf(err, sizeof e->msg, "ports[%zu] must be a port number from 1 to 65535", i);
                goto bad;
            }
            for (int k = 0; k < nports; k++)
                if (ports[k] == v) {
                    snprintf(err, sizeof e->msg, "port %lld is listed twice", (long long)v);
                    goto bad;
                }
            ports[nports++] = (int)v;
        }
    }
    if (parse_env(json_object_get(body, "env"), "env", &env, err, sizeof e->msg) < 0)
        goto bad;
    if ((jv = json_object_get(body, "networkPolicy")) && !json_is_null(jv)) {
        policy = netpolicy_parse(jv, err, sizeof e->msg);
        if (!policy || !injection_ok(policy, err, sizeof e->msg))
            goto bad;
    } else if (!(policy = netpolicy_allow_all())) {
        goto oom;
    }
    src = json_object_get(body, "source");
    if (src && !json_is_null(src)) {
        src_type = json_string_value(json_object_get(src, "type"));
        if (!json_is_object(src) || !src_type ||
            (strcmp(src_type, "git") && strcmp(src_type, "tarball") && strcmp(src_type, "snapshot"))) {
            snprintf(err, sizeof e->msg, "source.type must be git, tarball or snapshot");
            goto bad;
        }
        if (strcmp(src_type, "snapshot") == 0) {
            const char *sid = json_string_value(json_object_get(src, "snapshotId"));
            if (!sid) {
                snprintf(err, sizeof e->msg, "source.snapshotId is required for a snapshot source");
                goto bad;
            }
            pthread_mutex_lock(&g.lock);
            from = id_is_safe(sid) ? snapshot_find(sid) : NULL;
            if (from && strcmp(from->status, "created") != 0) {
                set_err(e, 410, "gone", "snapshot %s is %s", from->id, from->status);
                pthread_mutex_unlock(&g.lock);
                goto done;
            }
            if (from && !runtime && from->runtime)
                runtime = from->runtime; /* stable: snapshots are never freed */
            if (from)
                from->last_used_at = requested_at;
            pthread_mutex_unlock(&g.lock);
            if (!from) {
                set_err(e, 404, "not_found", "snapshot %s not found", sid);
                goto done;
            }
        }
    } else {
        src = NULL;
    }

    /* --- create --- */
    s = sandbox_alloc(); /* its reference becomes the list's */
    if (!s)
        goto oom;
    make_id(s->id, sizeof s->id, "sbx_");
    s->project_id = project ? sbx__strdup(project) : NULL;
    /* Sandboxes run the host's node and python3, whatever the name asks
     * for: the answer names what they get (runtime.c). */
    s->runtime = sbx__strdup(runtime_provided(runtime));
    s->requested_runtime = requested_runtime ? sbx__strdup(requested_runtime) : NULL;
    s->vcpus = limits_effective_vcpus((int)vcpus);
    s->memory_mb = 2048 * s->vcpus;
    s->timeout_ms = timeout;
    s->status = SBXD_PENDING;
    s->requested_at = requested_at;
    s->policy = policy;
    policy = NULL;
    s->netmode = usernet_mode(s->policy->mode);
    s->env = env;
    env = (sbx__strlist)SBX__STRLIST_INIT;
    memcpy(s->ports, ports, sizeof ports);
    s->nports = nports;
    if (from)
        s->source_snapshot_id = sbx__strdup(from->id);
    if (opt && opt->name)
        s->name = sbx__strdup(opt->name);
    s->persistent = opt && opt->persistent;
    s->snap_ttl_ms = opt ? opt->snap_ttl_ms : -1;
    {
        char rel[96];
        snprintf(rel, sizeof rel, "sandboxes/%s/root", s->id);
        s->root = path_join(g.cfg.state_dir, rel);
    }
    if (!s->runtime || !s->root || (from && !s->source_snapshot_id) || (opt && opt->name && !s->name) ||
        (requested_runtime && !s->requested_runtime)) {
        pthread_mutex_lock(&g.lock);
        sandbox_unref(s);
        pthread_mutex_unlock(&g.lock);
        s = NULL;
        goto oom;
    }
    pthread_mutex_lock(&g.lock);
    if (g.running >= g.cfg.max_sandboxes) {
        /* Nothing happened: a short Retry-After makes the SDK try again. */
        set_err(e, 429, "rate_limited", "%d sandboxes are running (--max-sandboxes); retry shortly",
                g.cfg.max_sandboxes);
        e->retry_after = "1";
        sandbox_unref(s);
        pthread_mutex_unlock(&g.lock);
        return -1;
    }
    g.running++;
    s->created_at = s->updated_at = next_timestamp();
    s->next = g.sandboxes;
    g.sandboxes = s;
    pthread_mutex_unlock(&g.lock);
    if (ids_acquire(&s->ids) < 0) {
        /* Every id of the range belongs to a live sandbox (of any sbxd). */
        sbxd_log(LOG_WARN, "no free host id in %u-%u for sandbox %s", (unsigned)g.ids.first_uid,
                 (unsigned)(g.ids.first_uid + g.ids.count - 1), s->id);
        discard_sandbox(s);
        set_err(e, 429, "rate_limited", "every host id of sbxd's range is in use (--id-range); retry shortly");
        e->retry_after = "1";
        return -1;
    }

    if (sandbox_prepare_root(s, err, sizeof e->msg) < 0) {
        st = 500;
        goto failed;
    }
    if (from && snapshot_restore(from, s, &st, err, sizeof e->msg) < 0)
        goto failed;
    if (src_type && strcmp(src_type, "git") == 0 && source_git(s, src, &st, err, sizeof e->msg) < 0)
        goto failed;
    if (src_type && strcmp(src_type, "tarball") == 0 &&
        source_tarball(s, src, &st, err, sizeof e->msg) < 0)
        goto failed;
    if (sandbox_boot(s, err, sizeof e->msg) < 0) {
        st = 500;
        goto failed_booted;
    }
    for (int i = 0; i < s->nports; i++) {
        s->routes[i] = route_start(s, s->ports[i], err, sizeof e->msg);
        if (!s->routes[i]) {
            st = 500;
            goto failed_booted;
        }
        snprintf(s->route_urls[i], sizeof s->route_urls[i], "%s", route_url(s->routes[i]));
    }
    pthread_mutex_lock(&g.lock);
    s->status = SBXD_RUNNING;
    s->started_at = s->updated_at = now_ms();
    s->deadline_mono = mono_ms() + s->timeout_ms;
    sandbox_persist_locked(s);
    sandbox_ref(s); /* the caller's */
    pthread_mutex_unlock(&g.lock);
    io_wake(); /* a new deadline */
    if (requested_runtime && runtime_missing(requested_runtime))
        sbxd_log(LOG_WARN, "sandbox %s: runtime %s was asked for, but sandboxes have no %s (they run the "
                           "host's /usr)", s->id, requested_runtime, runtime_missing(requested_runtime));
    else if (requested_runtime && strcmp(requested_runtime, s->runtime) != 0)
        sbxd_log(LOG_WARN, "sandbox %s: runtime %s requested, %s provided (sandboxes run the host's %s: %s)",
                 s->id, requested_runtime, s->runtime, strncmp(s->runtime, "python", 6) == 0 ? "python3" : "node",
                 strncmp(s->runtime, "python", 6) == 0 ? g.runtime.python_version : g.runtime.node_version);
    sbxd_log(LOG_INFO, "sandbox %s running (%s, %d vcpus, %s network%s%s; isolation ms: file system %.1f, "
                       "/proc %.1f, network %.1f, seccomp %.1f)",
             s->id, s->runtime, s->vcpus, s->netmode == NET_OPEN ? "open" : "isolated",
             from ? ", from snapshot " : "", from ? from->id : "", (double)s->setup_us[0] / 1000,
             (double)s->setup_us[1] / 1000, (double)s->setup_us[2] / 1000, (double)s->setup_us[3] / 1000);
    *out = s;
    return 0;

failed_booted:
    /* Tear the half-started sandbox down completely; nothing of it remains,
     * so the error (even a 5xx) is safe for the SDK to retry. */
    pthread_mutex_lock(&g.lock);
    if (s->ctx[s->primary].up) {
        s->status = SBXD_RUNNING;
        sandbox_stop_locked(s, false);
    }
    pthread_mutex_unlock(&g.lock);
    for (int i = 0; i < s->nports; i++) {
        route_stop(s->routes[i]);
        s->routes[i] = NULL;
    }
    egress_detach(s);
    pthread_mutex_lock(&g.lock);
    if (s->status == SBXD_STOPPED || s->status == SBXD_FAILED)
        g.running++; /* the finalizer released the slot that discard releases */
    pthread_mutex_unlock(&g.lock);
failed:
    sbxd_log(st >= 500 ? LOG_ERROR : LOG_INFO, "sandbox %s not created: %s", s->id, err);
    discard_sandbox(s);
    e->status = (unsigned)st;
    e->code = status_code(st);
    return -1;
bad:
    e->status = 400;
    e->code = "bad_request";
    goto done;
oom:
    set_err(e, 500, "internal", "out of memory");
done:
    netpolicy_free(policy);
    sbx__strlist_wipe(&env);
    return -1;
}

enum MHD_Result reply_api_err(struct http_req *r, const struct api_err *e)
{
    if (e->retry_after)
        return reply_error_retry(r, e->status, e->code, e->retry_after, "%s", e->msg);
    return reply_error(r, e->status, e->code, "%s", e->msg);
}

static enum MHD_Result create_sandbox(struct http_req *r)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret);
    struct api_err e = {0};
    struct sandbox *s;
    if (!body)
        return ret;
    if (session_create(body, NULL, &s, &e) < 0) {
        json_decref(body);
        return reply_api_err(r, &e);
    }
    json_decref(body);
    ret = reply_json(r, 200, wrap_sandbox(r, s, true));
    api_put_session(s);
    return ret;
}


static enum MHD_Result list_sandboxes(struct http_req *r)
{
    struct list_item *items;
    size_t n = 0;
    enum MHD_Result ret;

    pthread_mutex_lock(&g.lock);
    for (struct sandbox *s = g.sandboxes; s; s = s->next)
        n++;
    items = sbx__calloc(n + 1, sizeof *items);
    if (!items) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 500, "internal", "out of memory");
    }
    n = 0;
    for (struct sandbox *s = g.sandboxes; s; s = s->next)
        items[n++] = (struct list_item){s->created_at, s->project_id, sandbox_item_json, s};
    ret = reply_page(r, "sandboxes", items, n);
    pthread_mutex_unlock(&g.lock);
    sbx__free(items);
    return ret;
}

static enum MHD_Result stop_sandbox(struct http_req *r, struct sandbox *s)
{
    json_t *o;
    if (r->proto == 1) {
        pthread_mutex_lock(&g.lock);
        sandbox_stop_locked(s, false);
        pthread_mutex_unlock(&g.lock);
        return reply_json(r, 200, wrap_sandbox(r, s, false));
    }
    /* 2.x: {session, sandbox?, snapshot?}, the snapshot a persistent
     * sandbox's stop took. */
    pthread_mutex_lock(&g.lock);
    sandbox_stop_locked(s, false);
    o = json_pack("{s:o}", "session", api_session_json(r->proto, s));
    if (o && s->name) {
        struct named *n = named_find(s->project_id, s->name);
        if (n)
            json_object_set_new(o, "sandbox", named_json(n));
    }
    if (o && s->auto_snap)
        json_object_set_new(o, "snapshot", api_snapshot_json(r->proto, s->auto_snap));
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, o);
}

static enum MHD_Result extend_timeout(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret);
    int64_t d = 0;

    if (!body)
        return ret;
    if (json_get_int64(body, "duration", &d) != 1 || d <= 0) {
        json_decref(body);
        return reply_error(r, 400, "bad_request", "duration must be a positive number of milliseconds");
    }
    json_decref(body);
    pthread_mutex_lock(&g.lock);
    if (s->status != SBXD_RUNNING) {
        pthread_mutex_unlock(&g.lock);
        return api_not_running(r, s);
    }
    if (s->timeout_ms + d > g.cfg.max_timeout_ms) {
        int64_t max = g.cfg.max_timeout_ms, cur = s->timeout_ms;
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 400, "bad_request",
                           "the timeout would become %lld ms; the maximum is %lld ms",
                           (long long)(cur + d), (long long)max);
    }
    s->timeout_ms += d;
    s->deadline_mono += d;
    s->updated_at = now_ms();
    sandbox_persist_locked(s);
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, wrap_sandbox(r, s, false));
}

static enum MHD_Result network_policy(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret);
    struct netpolicy *p;
    char err[1024];

    if (!body)
        return ret;
    p = netpolicy_parse(body, err, sizeof err);
    json_decref(body);
    if (!p || !injection_ok(p, err, sizeof err)) {
        netpolicy_free(p);
        return reply_error(r, 400, "bad_request", "%s", err);
    }
    if (sandbox_set_network(s, p, err, sizeof err) < 0) {
        bool running;
        pthread_mutex_lock(&g.lock);
        running = s->status == SBXD_RUNNING;
        pthread_mutex_unlock(&g.lock);
        /* The policy is recorded either way; a context that cannot start
         * leaves the sandbox without the network it asked for (fail closed). */
        return running ? reply_error(r, 409, "conflict", "%s", err) : api_not_running(r, s);
    }
    return reply_json(r, 200, wrap_sandbox(r, s, false));
}

static enum MHD_Result create_snapshot(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret), *out;
    struct snapshot *sn;
    int64_t ttl = g.cfg.snapshot_ttl_ms;
    int has;

    if (!body)
        return ret;
    has = json_get_int64(body, "expiration", &ttl);
    json_decref(body);
    if (has < 0 || ttl < 0)
        return reply_error(r, 400, "bad_request", "expiration must be milliseconds >= 0 (0 = never)");
    pthread_mutex_lock(&g.lock);
    if (s->status != SBXD_RUNNING || s->snap_pending) {
        pthread_mutex_unlock(&g.lock);
        return s->snap_pending ? reply_error(r, 409, "conflict", "sandbox %s is being snapshotted", s->id)
                               : api_not_running(r, s);
    }
    sn = snapshot_begin_locked(s, ttl, "snapshot");
    if (!sn) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 500, "internal", "out of memory");
    }
    /* Stopping quiesces the tree; the finalizer archives it before removal
     * and lists it. From here on something happened: no 5xx (a failed
     * capture is reported as status "failed"). */
    sandbox_stop_locked(s, false);
    out = json_pack("{s:o,s:o}", "snapshot", api_snapshot_json(r->proto, sn), r->proto == 1 ? "sandbox" : "session",
                    api_session_json(r->proto, s));
    pthread_mutex_unlock(&g.lock);
    sbxd_log(LOG_INFO, "snapshot %s of %s: %s, %lld bytes", sn->id, s->id, sn->status,
             (long long)sn->size_bytes);
    return reply_json(r, 200, out);
}

/* ---- commands --------------------------------------------------------------- */

struct wait_stream {
    struct MHD_Connection *conn;
    struct command *c;
    int proto;
    bool logs;       /* the output goes between the two lines (2.x "logs": true) */
    bool error_sent; /* with logs: the error line of a command the stop killed */
    size_t log_chunk, log_off; /* with logs: the next output to send */
    int phase;       /* 0: send started line, 1: wait and send finished line, 2: done */
    char *line;      /* a line not sent whole yet: it may be larger than MHD's block */
    size_t len, off;
    struct waiter w; /* parked on the command until it exits */
};

/* Copy as much of the pending line as fits; free it once it is all sent. */
static ssize_t emit_pending(struct wait_stream *ws, char *buf, size_t max)
{
    size_t n = ws->len - ws->off < max ? ws->len - ws->off : max;
    memcpy(buf, ws->line + ws->off, n);
    ws->off += n;
    if (ws->off == ws->len) {
        free(ws->line);
        ws->line = NULL;
    }
    return (ssize_t)n;
}

/* A JSON line (o taken) to send: whole lines of any size, across calls. */
static ssize_t emit_json_line(struct wait_stream *ws, json_t *o, char *buf, size_t max)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    size_t n;
    json_decref(o);
    if (!text)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    n = strlen(text);
    ws->line = text;
    ws->line[n] = '\n'; /* over the NUL: the length is kept apart */
    ws->len = n + 1;
    ws->off = 0;
    return emit_pending(ws, buf, max);
}

static char *log_line(const struct log_chunk *ch, size_t off, size_t len)
{
    json_t *o = json_pack("{s:s,s:s%}", "stream", ch->stream == 1 ? "stdout" : "stderr", "data",
                          ch->data + off, len);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* Whole NDJSON log lines of c's output from chunk *chunk, byte *off into
 * buf: the bytes used (0 when nothing is left). A chunk whose line does not
 * fit is sent as several lines, cut on character boundaries (the reader
 * keeps its own offset, the stored chunk is never changed). g.lock held. */
static size_t emit_log_lines(struct command *c, size_t *chunk, size_t *off, char *buf, size_t max)
{
    size_t used = 0;
    while (*chunk < c->nchunks) {
        const struct log_chunk *ch = &c->chunks[*chunk];
        size_t take = ch->len - *off;
        char *text = NULL;
        size_t len = 0;
        if (take == 0) {
            /* The last chunk may still grow (command.c): stay at its end
             * until the command has exited. */
            if (*chunk + 1 == c->nchunks && !c->exited)
                break;
            (*chunk)++;
            *off = 0;
            continue;
        }
        for (;;) {
            text = log_line(ch, *off, take);
            if (!text)
                break;
            len = strlen(text);
            if (used + len + 1 <= max || used > 0 || take <= 1)
                break;
            free(text);
            text = NULL;
            take = sbx__utf8_floor(ch->data + *off, take / 2);
            if (take == 0)
                take = 1;
        }
        if (!text || used + len + 1 > max) {
            free(text);
            break;
        }
        memcpy(buf + used, text, len);
        buf[used + len] = '\n';
        used += len + 1;
        free(text);
        *off += take;
    }
    return used;
}

/* Has a reader at (chunk, off) sent all of c's output so far? */
static bool caught_up(const struct command *c, size_t chunk, size_t off)
{
    return chunk >= c->nchunks || (chunk + 1 == c->nchunks && off == c->chunks[chunk].len);
}

static ssize_t wait_stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct wait_stream *ws = cls;
    json_t *o;
    (void)pos;
    if (ws->line)
        return emit_pending(ws, buf, max);
    pthread_mutex_lock(&g.lock);
    if (ws->phase == 0) {
        /* Line 1 as it was at start: exitCode null, even if it is done now. */
        o = json_pack("{s:o}", "command", api_command_json(ws->proto, ws->c));
        json_object_set_new(json_object_get(o, "command"), "exitCode", json_null());
        json_object_del(json_object_get(o, "command"), "durationMs");
        ws->phase = 1;
    } else if (ws->phase == 1) {
        if (ws->w.gone) {
            pthread_mutex_unlock(&g.lock);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (ws->logs) {
            /* The output so far, before the finished line. */
            size_t used = emit_log_lines(ws->c, &ws->log_chunk, &ws->log_off, buf, max);
            if (used) {
                pthread_mutex_unlock(&g.lock);
                return (ssize_t)used;
            }
            if (!caught_up(ws->c, ws->log_chunk, ws->log_off)) {
                pthread_mutex_unlock(&g.lock);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        if (!ws->c->exited) {
            http_park_stream(&ws->w, &ws->c->waitq, ws->conn);
            pthread_mutex_unlock(&g.lock);
            return 0;
        }
        if (ws->logs && ws->c->killed_by_stop && !ws->error_sent) {
            /* As /logs ends: the output stopped because the sandbox did. */
            ws->error_sent = true;
            pthread_mutex_unlock(&g.lock);
            return emit_json_line(ws, json_pack("{s:s,s:{s:s,s:s}}", "stream", "error", "data", "code",
                                                "sandbox_stopped", "message",
                                                "the sandbox was stopped while the command ran"),
                                  buf, max);
        }
        o = json_pack("{s:o}", "command", api_command_json(ws->proto, ws->c));
        ws->phase = 2;
    } else {
        pthread_mutex_unlock(&g.lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    pthread_mutex_unlock(&g.lock);
    return emit_json_line(ws, o, buf, max);
}

static void wait_stream_free(void *cls)
{
    struct wait_stream *ws = cls;
    pthread_mutex_lock(&g.lock);
    http_unpark(&ws->w);
    command_unref(ws->c);
    pthread_mutex_unlock(&g.lock);
    free(ws->line);
    sbx__free(ws);
}

/* What execve takes, checked before anything runs: a command line past
 * these limits could only fail inside the sandbox (E2BIG), after the
 * command was reported started. The budget counts each string with its NUL
 * and its pointer, as the kernel does against a quarter of the stack limit
 * (8 MiB by default); the environment sbxd adds has room left over. */
#define ARG_STR_MAX (128u << 10)    /* MAX_ARG_STRLEN */
#define ARGS_MAX 131072u
#define CMDLINE_MAX (1536u << 10)

static int command_line_check(const char *name, const sbx__strlist *args, const sbx__strlist *env,
                              char *err, size_t errlen)
{
    size_t total = strlen(name) + 1 + sizeof(char *);
    if (args->n >= ARGS_MAX) {
        snprintf(err, errlen, "args has %zu entries; at most %u are allowed", args->n, ARGS_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < args->n + env->n; i++) {
        const char *v = i < args->n ? args->v[i] : env->v[i - args->n];
        size_t n = strlen(v) + 1;
        if (n > ARG_STR_MAX) {
            snprintf(err, errlen, "%s[%zu] is %zu bytes; one argument or variable may have at most %u",
                     i < args->n ? "args" : "env", i < args->n ? i : i - args->n, n - 1,
                     ARG_STR_MAX - 1);
            return -1;
        }
        total += n + sizeof(char *);
    }
    if (total > CMDLINE_MAX) {
        snprintf(err, errlen, "the command line (command, args and env) takes %zu bytes; at most %u "
                 "are allowed", total, CMDLINE_MAX);
        return -1;
    }
    return 0;
}

static enum MHD_Result run_command(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret), *jv;
    sbx__strlist args = SBX__STRLIST_INIT, env = SBX__STRLIST_INIT;
    const char *name, *cwd = NULL;
    bool sudo = false, wait = false, logs = false;
    char err[1024];
    struct command *c;
    int status;
    int64_t timeout = 0;

    if (!body)
        return ret;
    name = json_string_value(json_object_get(body, "command"));
    if (!name || !*name || strlen(name) != json_string_length(json_object_get(body, "command"))) {
        snprintf(err, sizeof err, "command must be a non-empty string (a program, not a shell line)");
        goto bad;
    }
    if (parse_strings(json_object_get(body, "args"), "args", &args, err, sizeof err) < 0 ||
        parse_env(json_object_get(body, "env"), "env", &env, err, sizeof err) < 0)
        goto bad;
    if ((jv = json_object_get(body, "cwd")) && !json_is_null(jv)) {
        if (!json_is_string(jv) || !*json_string_value(jv)) {
            snprintf(err, sizeof err, "cwd must be a non-empty string");
            goto bad;
        }
        cwd = json_string_value(jv);
    }
    if ((jv = json_object_get(body, "sudo")) && !json_is_null(jv)) {
        if (!json_is_boolean(jv)) {
            snprintf(err, sizeof err, "sudo must be true or false");
            goto bad;
        }
        sudo = json_is_true(jv);
    }
    if ((jv = json_object_get(body, "wait")) && !json_is_null(jv)) {
        if (!json_is_boolean(jv)) {
            snprintf(err, sizeof err, "wait must be true or false");
            goto bad;
        }
        wait = json_is_true(jv);
    }
    if ((jv = json_object_get(body, "logs")) && !json_is_null(jv)) {
        if (!json_is_boolean(jv)) {
            snprintf(err, sizeof err, "logs must be true or false");
            goto bad;
        }
        logs = json_is_true(jv);
    }
    /* The command's own limit: SIGKILL when it runs out (exit code 137),
     * waited for or not. */
    if ((jv = json_object_get(body, "timeout")) && !json_is_null(jv) &&
        (json_get_int64(body, "timeout", &timeout) != 1 || timeout < 1 || timeout > g.cfg.max_timeout_ms)) {
        snprintf(err, sizeof err, "timeout must be milliseconds from 1 to %lld",
                 (long long)g.cfg.max_timeout_ms);
        goto bad;
    }
    if (command_line_check(name, &args, &env, err, sizeof err) < 0)
        goto bad;
    if (sudo && !g.can_sudo) {
        snprintf(err, sizeof err, "sudo is not available from this sbxd: the host does not allow "
                                  "nested user namespaces");
        goto bad;
    }
    c = command_start(s, name, &args, cwd, &env, sudo, timeout, &status, err, sizeof err);
    json_decref(body);
    sbx__strlist_clear(&args);
    sbx__strlist_wipe(&env);
    if (!c && status == 410)
        return api_not_running(r, s);
    if (!c)
        return reply_error(r, (unsigned)status,
                           status == 410 ? "gone" : status == 413 ? "payload_too_large"
                                                  : status >= 500 ? "internal" : "bad_request",
                           "%s", err);
    sbxd_log(LOG_DEBUG, "sandbox %s: %s started %s", s->id, c->id, c->name);
    if (wait) {
        struct wait_stream *ws = sbx__calloc(1, sizeof *ws);
        if (!ws) {
            /* It runs; answer with the detached form rather than a 5xx. */
            json_t *o;
            pthread_mutex_lock(&g.lock);
            o = json_pack("{s:o}", "command", api_command_json(r->proto, c));
            command_unref(c);
            pthread_mutex_unlock(&g.lock);
            return reply_json(r, 200, o);
        }
        ws->c = c;
        ws->conn = r->conn;
        ws->proto = r->proto;
        ws->logs = logs;
        return reply_stream(r, "application/x-ndjson", wait_stream_cb, ws, wait_stream_free);
    }
    {
        json_t *o;
        pthread_mutex_lock(&g.lock);
        o = json_pack("{s:o}", "command", api_command_json(r->proto, c));
        command_unref(c);
        pthread_mutex_unlock(&g.lock);
        return reply_json(r, 200, o);
    }
bad:
    json_decref(body);
    sbx__strlist_clear(&args);
    sbx__strlist_wipe(&env);
    return reply_error(r, 400, "bad_request", "%s", err);
}

/* A command of a stopped sandbox may be in the command store only: a copy
 * is loaded, without g.lock (it reads a file), and kept with the sandbox
 * until idle for --spill-after. With a reference, or NULL and errno. */
static struct command *load_command(struct sandbox *s, const char *id)
{
    struct command *c, *loaded = cmdstore_load(s->id, id);
    int e = errno;
    pthread_mutex_lock(&g.lock);
    if (!loaded || !s->cmds_stored) {
        /* not there, or released meanwhile (--retain-output) */
        if (loaded)
            command_unref(loaded);
        c = command_find(s, id);
        if (c)
            command_ref(c);
        pthread_mutex_unlock(&g.lock);
        errno = loaded ? ENOENT : e;
        return c;
    }
    c = command_find(s, id); /* another read loaded it first */
    if (c) {
        command_unref(loaded);
    } else {
        c = loaded;
        c->sbx = s;
        c->next = s->commands;
        s->commands = c;
    }
    command_ref(c);
    s->cmds_used_at = now_ms();
    pthread_mutex_unlock(&g.lock);
    return c;
}

static struct command *get_command(struct http_req *r, struct sandbox *s, const char *id,
                                   enum MHD_Result *ret)
{
    struct command *c;
    bool released, stored;
    pthread_mutex_lock(&g.lock);
    c = command_find(s, id);
    if (c)
        command_ref(c);
    stored = !c && s->cmds_stored;
    pthread_mutex_unlock(&g.lock);
    if (stored && !(c = load_command(s, id)) && errno != ENOENT) {
        sbxd_log(LOG_WARN, "cannot read command %s of sandbox %s from the state directory: %s", id, s->id,
                 strerror(errno));
        *ret = reply_error(r, 500, "internal", "cannot read command %s of stopped sandbox %s", id, s->id);
        return NULL;
    }
    pthread_mutex_lock(&g.lock);
    released = !c && s->status == SBXD_STOPPED && s->ncommands == 0 &&
               now_ms() - s->stopped_at >= g.cfg.retain_stopped_ms;
    pthread_mutex_unlock(&g.lock);
    if (!c)
        *ret = released ? reply_error(r, 410, "gone", "command %s of stopped sandbox %s is no longer kept",
                                      id, s->id)
                        : reply_error(r, 404, "not_found", "command %s not found in sandbox %s", id, s->id);
    return c;
}

static enum MHD_Result command_get(struct http_req *r, struct sandbox *s, const char *id)
{
    enum MHD_Result ret = MHD_NO;
    struct command *c = get_command(r, s, id, &ret);
    const char *w = req_query(r, "wait");
    json_t *o;
    if (!c)
        return ret;
    pthread_mutex_lock(&g.lock);
    if (w && strcmp(w, "true") == 0 && !c->exited) {
        /* Dispatched again from the start when it exits (or freed). */
        ret = http_park_request(r, &c->waitq);
        command_unref(c);
        pthread_mutex_unlock(&g.lock);
        return ret;
    }
    o = json_pack("{s:o}", "command", api_command_json(r->proto, c));
    command_unref(c);
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, o);
}

struct log_stream {
    struct MHD_Connection *conn;
    struct command *c;
    size_t chunk;    /* next chunk to send */
    size_t off;      /* bytes of it already sent */
    bool done;
    struct wait_stream end; /* the closing error line, sent like a wait line */
    struct waiter w; /* parked on the command until output or exit */
};

/* Replay every chunk from the start, then follow until the command ends. */
static ssize_t log_stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct log_stream *ls = cls;
    size_t used = 0;
    (void)pos;

    if (ls->end.line)
        return emit_pending(&ls->end, buf, max);
    if (ls->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&g.lock);
    if (ls->w.gone) {
        pthread_mutex_unlock(&g.lock);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (caught_up(ls->c, ls->chunk, ls->off) && !ls->c->exited) {
        http_park_stream(&ls->w, &ls->c->waitq, ls->conn);
        pthread_mutex_unlock(&g.lock);
        return 0;
    }
    used = emit_log_lines(ls->c, &ls->chunk, &ls->off, buf, max);
    if (used == 0 && ls->chunk == ls->c->nchunks && ls->c->exited) {
        ls->done = true;
        if (ls->c->killed_by_stop) {
            json_t *o = json_pack("{s:s,s:{s:s,s:s}}", "stream", "error", "data", "code",
                                  "sandbox_stopped", "message",
                                  "the sandbox was stopped while the command ran");
            pthread_mutex_unlock(&g.lock);
            return emit_json_line(&ls->end, o, buf, max);
        }
        pthread_mutex_unlock(&g.lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    pthread_mutex_unlock(&g.lock);
    return used ? (ssize_t)used : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void log_stream_free(void *cls)
{
    struct log_stream *ls = cls;
    pthread_mutex_lock(&g.lock);
    http_unpark(&ls->w);
    command_unref(ls->c);
    pthread_mutex_unlock(&g.lock);
    free(ls->end.line);
    sbx__free(ls);
}

static enum MHD_Result command_logs(struct http_req *r, struct sandbox *s, const char *id)
{
    enum MHD_Result ret = MHD_NO;
    struct command *c = get_command(r, s, id, &ret);
    struct log_stream *ls;
    if (!c)
        return ret;
    ls = sbx__calloc(1, sizeof *ls);
    if (!ls) {
        pthread_mutex_lock(&g.lock);
        command_unref(c);
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 500, "internal", "out of memory");
    }
    ls->c = c;
    ls->conn = r->conn;
    return reply_stream(r, "application/x-ndjson", log_stream_cb, ls, log_stream_free);
}

static enum MHD_Result command_kill_ep(struct http_req *r, struct sandbox *s, const char *id)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret), *o;
    struct command *c;
    int64_t sig = SIGTERM;
    int rc;

    if (!body)
        return ret;
    if (json_get_int64(body, "signal", &sig) < 0 || sig < 1 || sig > 64) {
        json_decref(body);
        return reply_error(r, 400, "bad_request", "signal must be a signal number from 1 to 64");
    }
    json_decref(body);
    c = get_command(r, s, id, &ret);
    if (!c)
        return ret;
    pthread_mutex_lock(&g.lock);
    rc = c->exited ? 0 : -1;
    pthread_mutex_unlock(&g.lock);
    if (rc < 0) {
        rc = command_kill(c, (int)sig);
        /* ESRCH: it exited meanwhile; EPIPE: the sandbox stopped. Both are
         * the "already finished" case. */
        if (rc != 0 && rc != ESRCH && rc != EPIPE) {
            pthread_mutex_lock(&g.lock);
            command_unref(c);
            pthread_mutex_unlock(&g.lock);
            return reply_error(r, 400, "bad_request", "cannot signal %s: %s", id, strerror(rc));
        }
    }
    pthread_mutex_lock(&g.lock);
    o = json_pack("{s:o}", "command", api_command_json(r->proto, c));
    command_unref(c);
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, o);
}

/* ---- files -------------------------------------------------------------------- */

static int errno_status(int e)
{
    switch (e) {
    case ENOENT: return 404;
    case EEXIST: return 409;
    case EACCES:
    case EPERM:
    case EROFS: return 403;
    case EPIPE: return 410;
    case ENOSPC:
    case EDQUOT: return 413;
    default: return 400;
    }
}

static const char *status_code(int st)
{
    switch (st) {
    case 404: return "not_found";
    case 409: return "conflict";
    case 403: return "forbidden";
    case 410: return "gone";
    case 413: return "disk_limit";
    case 429: return "rate_limited";
    default: return st >= 500 ? "internal" : "bad_request";
    }
}

/* A path operation in the sandbox: {"path", "cwd"?}. */
static int path_op(struct sandbox *s, uint32_t type, const char *path, const char *cwd, long long mode,
                   int *fd, char *err, size_t errlen)
{
    struct ctl_msg m;
    int ctx = sandbox_active_ctx(s, err, errlen), rc;
    if (ctx < 0)
        return EPIPE;
    ctl_msg_init(&m, type, 0);
    if (ctl_put_str(&m, path) < 0 || ctl_put_str(&m, cwd ? cwd : SBXD_CWD) < 0 ||
        (type == CTL_OPEN_WRITE && ctl_put_int(&m, mode) < 0)) {
        ctl_msg_free(&m);
        return ENOMEM;
    }
    rc = sandbox_ctl(s, ctx, &m, fd, NULL);
    ctl_msg_free(&m);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, strerror(rc));
    return rc;
}

static int body_path(struct http_req *r, json_t *body, const char **path, const char **cwd,
                     enum MHD_Result *ret)
{
    json_t *p = json_object_get(body, "path"), *c = json_object_get(body, "cwd");
    if (!json_is_string(p) || !*json_string_value(p) ||
        strlen(json_string_value(p)) != json_string_length(p)) {
        *ret = reply_error(r, 400, "bad_request", "path must be a non-empty string");
        return -1;
    }
    if (c && !json_is_null(c) && (!json_is_string(c) || json_string_value(c)[0] != '/')) {
        *ret = reply_error(r, 400, "bad_request", "cwd must be an absolute path");
        return -1;
    }
    *path = json_string_value(p);
    *cwd = c && json_is_string(c) ? json_string_value(c) : NULL;
    return 0;
}

static enum MHD_Result fs_mkdir(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret);
    const char *path, *cwd;
    char err[1024];
    int rc;
    if (!body)
        return ret;
    if (body_path(r, body, &path, &cwd, &ret) < 0) {
        json_decref(body);
        return ret;
    }
    rc = path_op(s, CTL_MKDIR, path, cwd, 0, NULL, err, sizeof err);
    json_decref(body);
    if (rc == EPIPE)
        return api_not_running(r, s);
    if (rc)
        return reply_error(r, (unsigned)errno_status(rc), status_code(errno_status(rc)), "mkdir %s", err);
    return reply_json(r, 200, json_object());
}

static enum MHD_Result fs_read(struct http_req *r, struct sandbox *s)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret);
    const char *path, *cwd;
    char err[1024];
    struct stat st;
    int rc, fd = -1;
    if (!body)
        return ret;
    if (body_path(r, body, &path, &cwd, &ret) < 0) {
        json_decref(body);
        return ret;
    }
    rc = path_op(s, CTL_OPEN_READ, path, cwd, 0, &fd, err, sizeof err);
    json_decref(body);
    /* 404 is the only failure the SDK understands here, a stopped sandbox
     * included: the body of any other status is taken for the file's
     * contents. */
    if (rc || fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        if (rc == EPIPE && r->proto != 1)
            return api_not_running(r, s); /* 2.x reports errors (and resumes on 410) */
        if (rc == EPIPE)
            return reply_error(r, 404, "not_found", "sandbox %s is stopped", s->id);
        return reply_error(r, 404, "not_found", "%s", rc ? err : "cannot read the file");
    }
    /* Files that report size 0 may still have contents (/proc): stream
     * them to the end instead of trusting the size. */
    if (st.st_size == 0)
        return reply_fd_stream(r, fd, "application/octet-stream");
    return reply_fd(r, fd, (uint64_t)st.st_size, "application/octet-stream");
}

/* fs/write: a gzip tar whose regular files land under x-cwd. The whole
 * archive is checked first, so a bad entry writes nothing. */
static int tar_pass(struct http_req *r, struct sandbox *s, const char *base, bool write_files,
                    int *status, char *err, size_t errlen)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    int rc = -1, files = 0;
    int64_t want_bytes = 0, free_files = 0;
    int64_t free_bytes = write_files ? -1 : disk_free_bytes(s->root, &free_files);

    tarx_read_support(a);
    lseek(r->spool_fd, 0, SEEK_SET);
    if (archive_read_open_fd(a, r->spool_fd, 65536) != ARCHIVE_OK) {
        snprintf(err, errlen, "the body is not a tar archive: %s", archive_error_string(a));
        goto out;
    }
    for (;;) {
        int ar = archive_read_next_header(a, &e);
        char *name, *full;
        mode_t type;
        if (ar == ARCHIVE_EOF)
            break;
        if (ar < ARCHIVE_WARN) {
            snprintf(err, errlen, "malformed tar: %s", archive_error_string(a));
            goto out;
        }
        type = archive_entry_filetype(e);
        name = archive_clean_name(archive_entry_pathname(e));
        if (!name) {
            snprintf(err, errlen, "tar entry '%s' is absolute or leaves x-cwd",
                     archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
            goto out;
        }
        if (type != AE_IFREG && type != AE_IFDIR) {
            snprintf(err, errlen, "tar entry '%s' is not a regular file (links and devices are refused)",
                     name);
            sbx__free(name);
            goto out;
        }
        if (!write_files) {
            sbx__free(name);
            files++;
            /* Sizes as the headers declare them: a bomb is stopped at its
             * first oversized entry, before anything is written or even
             * decompressed much further. */
            want_bytes += archive_entry_size(e) > 0 ? archive_entry_size(e) : 0;
            if (free_bytes >= 0 && (want_bytes > free_bytes || files > free_files)) {
                snprintf(err, errlen, "the archive holds more than the sandbox's free space (%lld bytes, "
                                      "%lld files left of its disk limit)",
                         (long long)free_bytes, (long long)free_files);
                *status = 413;
                goto out;
            }
            continue;
        }
        full = path_join(strcmp(base, "/") == 0 ? "" : base, name);
        sbx__free(name);
        if (!full) {
            snprintf(err, errlen, "out of memory");
            *status = 500;
            goto out;
        }
        if (type == AE_IFDIR) {
            int prc = path_op(s, CTL_MKDIR, full, "/", 0, NULL, err, errlen);
            if (prc && prc != EEXIST) {
                *status = errno_status(prc);
                sbx__free(full);
                goto out;
            }
        } else {
            int fd = -1;
            int prc = path_op(s, CTL_OPEN_WRITE, full, "/", (long long)(archive_entry_perm(e) & 07777),
                              &fd, err, errlen);
            if (prc || fd < 0) {
                *status = errno_status(prc);
                sbx__free(full);
                goto out;
            }
            for (;;) {
                char buf[65536];
                la_ssize_t n = archive_read_data(a, buf, sizeof buf);
                if (n < 0) {
                    snprintf(err, errlen, "malformed tar data for %s: %s", full, archive_error_string(a));
                    close(fd);
                    sbx__free(full);
                    goto out;
                }
                if (n == 0)
                    break;
                for (la_ssize_t off = 0; off < n;) {
                    ssize_t w = write(fd, buf + off, (size_t)(n - off));
                    if (w < 0 && errno == EINTR)
                        continue;
                    if (w < 0) {
                        snprintf(err, errlen, "writing %s: %s", full, strerror(errno));
                        *status = errno == ENOSPC || errno == EDQUOT ? 413 : 400;
                        close(fd);
                        sbx__free(full);
                        goto out;
                    }
                    off += w;
                }
            }
            close(fd);
        }
        sbx__free(full);
        files++;
    }
    rc = files;
out:
    archive_read_free(a);
    return rc;
}

static enum MHD_Result fs_write(struct http_req *r, struct sandbox *s)
{
    const char *xcwd = req_header(r, "x-cwd");
    char err[1024] = "", *base;
    int status = 400, n;

    if (!xcwd || !*xcwd)
        xcwd = SBXD_CWD;
    if (xcwd[0] != '/')
        base = path_join(SBXD_CWD, xcwd);
    else
        base = sbx__strdup(xcwd);
    if (!base)
        return reply_error(r, 500, "internal", "out of memory");
    if (r->body_len == 0) {
        sbx__free(base);
        return reply_json(r, 200, json_object()); /* nothing to write */
    }
    status = 400;
    n = tarx_check_untrusted(r->spool_fd, err, sizeof err);
    if (n >= 0)
        n = tar_pass(r, s, base, false, &status, err, sizeof err);
    if (n >= 0)
        n = tar_pass(r, s, base, true, &status, err, sizeof err);
    sbx__free(base);
    if (n < 0) {
        if (status == 410)
            return api_not_running(r, s);
        return reply_error(r, (unsigned)status, status_code(status), "%s", err);
    }
    return reply_json(r, 200, json_object());
}

/* ---- snapshots ------------------------------------------------------------------ */

static enum MHD_Result list_snapshots(struct http_req *r)
{
    struct list_item *items;
    size_t n = 0;
    enum MHD_Result ret;

    pthread_mutex_lock(&g.lock);
    snapshot_expire();
    for (struct snapshot *sn = g.snapshots; sn; sn = sn->next)
        n++;
    items = sbx__calloc(n + 1, sizeof *items);
    if (!items) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 500, "internal", "out of memory");
    }
    n = 0;
    for (struct snapshot *sn = g.snapshots; sn; sn = sn->next)
        if (strcmp(sn->status, "deleted") != 0) /* deleted ones are left out */
            items[n++] = (struct list_item){sn->created_at, sn->project_id, snapshot_item_json, sn};
    ret = reply_page(r, "snapshots", items, n);
    pthread_mutex_unlock(&g.lock);
    sbx__free(items);
    return ret;
}

enum MHD_Result api_snapshot_ep(struct http_req *r, const char *id, bool del)
{
    struct snapshot *sn;
    json_t *o;
    pthread_mutex_lock(&g.lock);
    sn = id_is_safe(id) ? snapshot_find(id) : NULL;
    if (!sn) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 404, "not_found", "snapshot %s not found", id);
    }
    if (del)
        snapshot_delete_locked(sn);
    o = json_pack("{s:o}", "snapshot", api_snapshot_json(r->proto, sn));
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, o);
}

/* ---- routing ---------------------------------------------------------------------- */

enum MHD_Result not_allowed(struct http_req *r)
{
    return reply_error(r, 405, "method_not_allowed", "%s is not allowed on %s", r->method, r->path);
}

enum MHD_Result session_sub(struct http_req *r, struct sandbox *s, int base)
{
    /* segs[base] is the sub-resource: /v1/sandboxes/{id}/... (base 3),
     * /v2/sandboxes/sessions/{id}/... (base 4). */
    bool post = method_is(r, "POST");
    int n = r->nseg - base;
    if (n == 0) {
        if (!method_is(r, "GET"))
            return not_allowed(r);
        return reply_json(r, 200, wrap_sandbox(r, s, true));
    }
    if (n == 1) {
        if (seg_is(r, base, "cmd"))
            return post ? run_command(r, s) : not_allowed(r);
        if (seg_is(r, base, "stop"))
            return post ? stop_sandbox(r, s) : not_allowed(r);
        if (seg_is(r, base, "network-policy"))
            return post ? network_policy(r, s) : not_allowed(r);
        if (seg_is(r, base, "extend-timeout"))
            return post ? extend_timeout(r, s) : not_allowed(r);
        if (seg_is(r, base, "snapshot"))
            return post ? create_snapshot(r, s) : not_allowed(r);
        if (seg_is(r, base, "interactive") && r->proto != 1)
            return reply_error(r, 400, "not_supported",
                               "interactive shells (openInteractive) are not supported by sbxd: run commands");
    }
    if (n == 2 && seg_is(r, base, "fs")) {
        if (!post)
            return not_allowed(r);
        if (seg_is(r, base + 1, "mkdir"))
            return fs_mkdir(r, s);
        if (seg_is(r, base + 1, "write"))
            return fs_write(r, s);
        if (seg_is(r, base + 1, "read"))
            return fs_read(r, s);
    }
    if (n == 2 && seg_is(r, base, "cmd"))
        return method_is(r, "GET") ? command_get(r, s, r->segs[base + 1]) : not_allowed(r);
    /* 1.x kills at /{id}/{cmdId}/kill; later majors at /{id}/cmd/{cmdId}/kill. */
    if (n == 2 && seg_is(r, base + 1, "kill") && r->proto == 1)
        return post ? command_kill_ep(r, s, r->segs[base]) : not_allowed(r);
    if (n == 3 && seg_is(r, base, "cmd") && seg_is(r, base + 2, "logs"))
        return method_is(r, "GET") ? command_logs(r, s, r->segs[base + 1]) : not_allowed(r);
    if (n == 3 && seg_is(r, base, "cmd") && seg_is(r, base + 2, "kill"))
        return post ? command_kill_ep(r, s, r->segs[base + 1]) : not_allowed(r);
    return reply_error(r, 404, "not_found", "no endpoint %s %s", r->method, r->path);
}

enum MHD_Result api_dispatch(struct http_req *r)
{
    enum MHD_Result ret = MHD_NO;
    struct sandbox *s;

    r->proto = seg_is(r, 0, "v1") ? 1 : 2;
    if (r->nseg >= 2 && (seg_is(r, 0, "v2") || seg_is(r, 0, "v3")) && seg_is(r, 1, "sandboxes"))
        return api2_dispatch(r);
    if (r->nseg < 2 || !seg_is(r, 0, "v1") || !seg_is(r, 1, "sandboxes"))
        return reply_error(r, 404, "not_found", "no endpoint %s %s (sbxd speaks /v1/sandboxes, /v2/sandboxes "
                           "and /v3/sandboxes)", r->method, r->path);
    if (r->nseg == 2) {
        if (method_is(r, "POST"))
            return create_sandbox(r);
        if (method_is(r, "GET"))
            return list_sandboxes(r);
        return not_allowed(r);
    }
    /* The literal "snapshots" comes before sandbox ids. */
    if (seg_is(r, 2, "snapshots")) {
        if (r->nseg == 3)
            return method_is(r, "GET") ? list_snapshots(r) : not_allowed(r);
        if (r->nseg == 4) {
            if (method_is(r, "GET"))
                return api_snapshot_ep(r, r->segs[3], false);
            if (method_is(r, "DELETE"))
                return api_snapshot_ep(r, r->segs[3], true);
            return not_allowed(r);
        }
        return reply_error(r, 404, "not_found", "no endpoint %s %s", r->method, r->path);
    }
    s = api_get_session(r, r->segs[2], &ret);
    if (!s)
        return ret;
    ret = session_sub(r, s, 3);
    api_put_session(s);
    return ret;
}
