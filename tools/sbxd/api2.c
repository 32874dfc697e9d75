/* SPDX-License-Identifier: MIT */
/*
 * api2: the routes of the 2.x/3.x protocol (the current @vercel/sandbox
 * SDKs): named sandboxes under /v2/sandboxes/{name} and /v3/sandboxes,
 * sessions under /v2/sandboxes/sessions/{id}/..., snapshots under
 * /v2/sandboxes/snapshots, cursor-paginated lists. Session operations are
 * api.c's handlers (session_sub); this file adds the named layer.
 *
 * Refused with 400 "not_supported", by name: drives and mounts, fork, the
 * snapshot tree, interactive shells, Secure Compute networks, and images
 * other than the managed ones (sbxd runs the host's tools).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "api.h"
#include "http.h"
#include "parse.h"
#include "sbxd.h"

#define MAX_TAGS 5
#define LIST_DEFAULT 50
#define LIST_MAX 100

static enum MHD_Result not_supported(struct http_req *r, const char *what)
{
    return reply_error(r, 400, "not_supported", "%s %s not supported by sbxd", what,
                       strchr(what, ' ') ? "are" : "is");
}

/* ---- cursor lists ---------------------------------------------------------------- */

/* One list item: sorted on (key, tie); the cursor is "key:tie" of the last
 * item sent, and the next page starts after it. */
struct item {
    int64_t key;
    const char *tie;
    json_t *(*to_json)(int proto, void *);
    void *obj;
};

static int item_cmp(const struct item *a, int64_t key, const char *tie)
{
    if (a->key != key)
        return a->key < key ? -1 : 1;
    return strcmp(a->tie, tie);
}

static bool list_desc;

static int qsort_cmp(const void *x, const void *y)
{
    const struct item *a = x, *b = y;
    int c = item_cmp(a, b->key, b->tie);
    return list_desc ? -c : c;
}

/* Page over items (g.lock held): limit, cursor, sortOrder (desc by default). */
static enum MHD_Result reply_cursor_page(struct http_req *r, const char *listkey, struct item *items, size_t n)
{
    const char *l = req_query(r, "limit"), *cur = req_query(r, "cursor"), *order = req_query(r, "sortOrder");
    long limit = LIST_DEFAULT;
    int64_t ckey = 0;
    const char *ctie = NULL;
    size_t i = 0, sent = 0;
    json_t *arr, *out;
    char *end, next[160];

    if (l) {
        limit = strtol(l, &end, 10);
        if (*end || limit < 1 || limit > LIST_MAX)
            return reply_error(r, 400, "bad_request", "limit must be an integer from 1 to %d", LIST_MAX);
    }
    if (order && strcmp(order, "asc") && strcmp(order, "desc"))
        return reply_error(r, 400, "bad_request", "sortOrder must be asc or desc");
    if (cur) {
        ckey = strtoll(cur, &end, 10);
        if (*end != ':')
            return reply_error(r, 400, "bad_request", "cursor '%s' is not one this server gave", cur);
        ctie = end + 1;
    }
    /* qsort has no context argument: the order is set under g.lock, which
     * every caller holds. */
    list_desc = !order || strcmp(order, "desc") == 0;
    qsort(items, n, sizeof *items, qsort_cmp);
    if (ctie)
        while (i < n && (list_desc ? -item_cmp(&items[i], ckey, ctie) : item_cmp(&items[i], ckey, ctie)) <= 0)
            i++;
    arr = json_array();
    for (; i < n && sent < (size_t)limit; i++, sent++)
        json_array_append_new(arr, items[i].to_json(r->proto, items[i].obj));
    if (i < n)
        snprintf(next, sizeof next, "%lld:%s", (long long)items[i - 1].key, items[i - 1].tie);
    out = json_pack("{s:o,s:{s:I,s:o}}", listkey, arr, "pagination", "count", (json_int_t)sent, "next",
                    i < n ? json_string(next) : json_null());
    return reply_json(r, 200, out);
}

static json_t *named_item(int proto, void *obj)
{
    (void)proto;
    return named_json(obj);
}

static json_t *session_item(int proto, void *obj)
{
    return api_session_json(proto, obj);
}

static json_t *snapshot_item(int proto, void *obj)
{
    return api_snapshot_json(proto, obj);
}

static bool project_is(const char *want, const char *have)
{
    return !want || (have && strcmp(want, have) == 0);
}

/* A list's items (g.lock held): fill writes what passes the request's
 * filters into items, or only counts them when items is NULL. */
typedef size_t (*fill_fn)(struct http_req *r, struct item *items);

static enum MHD_Result page_of(struct http_req *r, const char *key, fill_fn fill)
{
    struct item *items;
    enum MHD_Result ret;
    pthread_mutex_lock(&g.lock);
    items = sbx__calloc(fill(r, NULL) + 1, sizeof *items);
    if (!items) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 500, "internal", "out of memory");
    }
    ret = reply_cursor_page(r, key, items, fill(r, items));
    pthread_mutex_unlock(&g.lock);
    sbx__free(items);
    return ret;
}

/* Whether x's tags hold tag ("key:value"). */
static bool has_tag(const struct named *x, const char *tag)
{
    const char *colon = strchr(tag, ':'), *k;
    json_t *v;
    json_object_foreach(json_object_get(x->extra, "tags"), k, v)
        if (strlen(k) == (size_t)(colon - tag) && !strncmp(k, tag, (size_t)(colon - tag)))
            return json_is_string(v) && !strcmp(json_string_value(v), colon + 1);
    return false;
}

static size_t fill_named(struct http_req *r, struct item *items)
{
    const char *project = req_query(r, "project"), *prefix = req_query(r, "namePrefix");
    const char *sort = req_query(r, "sortBy"), *tags = req_query(r, "tags");
    int by = !sort || !strcmp(sort, "createdAt") ? 0 : !strcmp(sort, "name") ? 1 : 2;
    size_t n = 0;
    for (struct named *x = g.named; x; x = x->next) {
        struct sandbox *s;
        if (!project_is(project, x->project_id) || (prefix && strncmp(x->name, prefix, strlen(prefix))) ||
            (tags && !has_tag(x, tags)))
            continue;
        if (items) {
            s = by == 2 ? sandbox_find(x->session_id) : NULL;
            items[n] = (struct item){by == 0 ? x->created_at : by == 2 ? (s ? s->updated_at : x->updated_at) : 0,
                                     x->name, named_item, x};
        }
        n++;
    }
    return n;
}

static enum MHD_Result list_named(struct http_req *r)
{
    const char *sort = req_query(r, "sortBy"), *tags = req_query(r, "tags");
    if (sort && strcmp(sort, "createdAt") && strcmp(sort, "name") && strcmp(sort, "statusUpdatedAt"))
        return reply_error(r, 400, "bad_request", "sortBy must be createdAt, name or statusUpdatedAt");
    if (tags && !strchr(tags, ':'))
        return reply_error(r, 400, "bad_request", "tags must be key:value");
    return page_of(r, "sandboxes", fill_named);
}

static size_t fill_sessions(struct http_req *r, struct item *items)
{
    const char *project = req_query(r, "project"), *name = req_query(r, "name");
    size_t n = 0;
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        if (!project_is(project, s->project_id) || (name && (!s->name || strcmp(name, s->name))))
            continue;
        if (items)
            items[n] = (struct item){s->created_at, s->id, session_item, s};
        n++;
    }
    return n;
}

static size_t fill_snapshots(struct http_req *r, struct item *items)
{
    const char *project = req_query(r, "project"), *name = req_query(r, "name");
    size_t n = 0;
    if (!items)
        snapshot_expire();
    for (struct snapshot *sn = g.snapshots; sn; sn = sn->next) {
        if (!strcmp(sn->status, "deleted") || !project_is(project, sn->project_id) ||
            (name && (!sn->sandbox_name || strcmp(name, sn->sandbox_name))))
            continue;
        if (items)
            items[n] = (struct item){sn->created_at, sn->id, snapshot_item, sn};
        n++;
    }
    return n;
}

/* ---- settings of a named sandbox ------------------------------------------------- */

/* The settings a create or an update may carry beyond a session's, checked. */
struct settings {
    int persistent;          /* -1 absent */
    json_t *tags;            /* borrowed; JSON null clears */
    json_t *keep;            /* keepLastSnapshots (null clears) */
    json_t *failover;
    int64_t snap_exp;        /* snapshotExpiration, -1 absent */
    bool snap_exp_null;
};

static bool is_present(json_t *v)
{
    return v && !json_is_null(v);
}

static int check_settings(json_t *body, struct settings *st, struct api_err *e)
{
    json_t *v;
    memset(st, 0, sizeof *st);
    st->persistent = -1;
    st->snap_exp = -1;
    if (is_present(v = json_object_get(body, "persistent"))) {
        if (!json_is_boolean(v))
            return set_err(e, 400, "bad_request", "persistent must be true or false"), -1;
        st->persistent = json_is_true(v);
    }
    if ((v = json_object_get(body, "tags"))) {
        const char *k;
        json_t *t;
        if (!json_is_null(v) && (!json_is_object(v) || json_object_size(v) > MAX_TAGS))
            return set_err(e, 400, "bad_request", "tags must be an object of at most %d string values", MAX_TAGS), -1;
        json_object_foreach(v, k, t)
            if (!json_is_string(t) || !*k)
                return set_err(e, 400, "bad_request", "tags.%s must be a string", k), -1;
        st->tags = v;
    }
    if ((v = json_object_get(body, "keepLastSnapshots"))) {
        int64_t count = 0;
        json_t *d = json_object_get(v, "deleteEvicted");
        if (!json_is_null(v) &&
            (!json_is_object(v) || json_get_int64(v, "count", &count) != 1 || count < 1 || count > 10 ||
             (d && !json_is_boolean(d))))
            return set_err(e, 400, "bad_request",
                           "keepLastSnapshots must be {\"count\": 1 to 10, \"expiration\"?, \"deleteEvicted\"?}"), -1;
        st->keep = v;
    }
    if ((v = json_object_get(body, "snapshotExpiration"))) {
        if (json_is_null(v))
            st->snap_exp_null = true;
        else if (json_get_int64(body, "snapshotExpiration", &st->snap_exp) != 1 || st->snap_exp < 0)
            return set_err(e, 400, "bad_request", "snapshotExpiration must be milliseconds >= 0 (0 = never)"), -1;
    }
    if (is_present(v = json_object_get(body, "failoverRegions"))) {
        size_t i;
        json_t *x;
        if (!json_is_array(v))
            return set_err(e, 400, "bad_request", "failoverRegions must be a list of region names"), -1;
        json_array_foreach(v, i, x)
            if (!json_is_string(x))
                return set_err(e, 400, "bad_request", "failoverRegions[%zu] must be a string", i), -1;
        st->failover = v;
    }
    if (is_present(v = json_object_get(body, "region")) && !json_is_string(v))
        return set_err(e, 400, "bad_request", "region must be a string"), -1;
    if (is_present(v = json_object_get(body, "mounts")) && (!json_is_object(v) || json_object_size(v) > 0))
        return set_err(e, 400, "not_supported", "mounts (drives) are not supported by sbxd"), -1;
    if (is_present(json_object_get(body, "networkId")))
        return set_err(e, 400, "not_supported", "networkId (Secure Compute networks) is not supported by sbxd"), -1;
    return 0;
}

static void set_extra(json_t **extra, const char *key, json_t *v)
{
    if (!*extra && !(*extra = json_object()))
        return;
    if (!v || json_is_null(v))
        json_object_del(*extra, key);
    else
        json_object_set(*extra, key, v);
}

static void apply_settings(struct named *n, const struct settings *st)
{
    if (st->persistent >= 0)
        n->persistent = st->persistent;
    if (st->tags)
        set_extra(&n->extra, "tags", json_object_size(st->tags) ? st->tags : NULL);
    if (st->keep)
        set_extra(&n->extra, "keepLastSnapshots", st->keep);
    if (st->failover)
        set_extra(&n->extra, "failoverRegions", json_array_size(st->failover) ? st->failover : NULL);
    if (st->snap_exp >= 0 || st->snap_exp_null) {
        json_t *v = st->snap_exp >= 0 ? json_integer(st->snap_exp) : NULL;
        set_extra(&n->extra, "snapshotExpiration", v);
        json_decref(v);
    }
}

static int64_t snap_ttl(const struct named *n)
{
    int64_t v = -1;
    json_get_int64(n->extra, "snapshotExpiration", &v);
    return v;
}

/* The keys of a create body a session takes, with the policy in API form. */
static json_t *session_config(json_t *body, struct api_err *e)
{
    static const char *const keys[] = {"projectId", "runtime", "ports", "timeout", "resources", "env"};
    json_t *c = json_object(), *pol = json_object_get(body, "networkPolicy");
    if (!c)
        return set_err(e, 500, "internal", "out of memory"), NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        json_copy_key(c, body, keys[i]);
    if (is_present(pol)) {
        json_t *api = netpolicy_api_form(pol, e->msg, sizeof e->msg);
        if (!api) {
            json_decref(c);
            e->status = 400;
            e->code = "bad_request";
            return NULL;
        }
        json_object_set_new(c, "networkPolicy", api);
    }
    return c;
}

/* ---- create, get, resume --------------------------------------------------------- */

static bool managed_image(const char *img)
{
    return strncmp(img, "vercel/sandbox/", 15) == 0;
}

/* {sandbox, session, routes, resumed?} (g.lock taken here). */
static enum MHD_Result reply_named(struct http_req *r, struct named *n, struct sandbox *s, int resumed)
{
    json_t *o;
    pthread_mutex_lock(&g.lock);
    o = json_pack("{s:o,s:o,s:o}", "sandbox", named_json(n), "session", api_session_json(r->proto, s), "routes",
                  sandbox_routes_json(s));
    if (o && resumed >= 0)
        json_object_set_new(o, "resumed", json_boolean(resumed));
    pthread_mutex_unlock(&g.lock);
    return reply_json(r, 200, o);
}

static void unlist(struct named *n)
{
    for (struct named **pp = &g.named; *pp; pp = &(*pp)->next)
        if (*pp == n) {
            *pp = n->next;
            break;
        }
    n->deleted = true;
}

static enum MHD_Result create_named(struct http_req *r, bool v3)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret), *cfg = NULL, *sbody = NULL, *v;
    struct settings st;
    struct api_err e = {0};
    struct named *n = NULL;
    struct sandbox *s = NULL;
    const char *name, *image = NULL, *project;
    char gen[40];

    if (!body)
        return ret;
    if (check_settings(body, &st, &e) < 0)
        goto fail;
    if (is_present(v = json_object_get(body, "image"))) {
        image = json_string_value(v);
        if (!image || !v3 || is_present(json_object_get(body, "runtime"))) {
            set_err(&e, 400, "bad_request", "image must be a string, sent to /v3/sandboxes without a runtime");
            goto fail;
        }
        if (!managed_image(image)) {
            set_err(&e, 400, "not_supported", "image %s: sbxd runs the host's tools, so it takes only the managed "
                    "images vercel/sandbox/... (all the same environment here), not other images", image);
            goto fail;
        }
    }
    name = json_string_value(json_object_get(body, "name"));
    if (is_present(json_object_get(body, "name")) && (!name || !named_name_ok(name, e.msg, sizeof e.msg))) {
        if (!name)
            snprintf(e.msg, sizeof e.msg, "name must be a string");
        e.status = 400;
        e.code = "bad_request";
        goto fail;
    }
    if (!name) {
        make_id(gen, sizeof gen, "sandbox-");
        name = gen;
    }
    if (!(cfg = session_config(body, &e)))
        goto fail;
    sbody = json_deep_copy(cfg);
    if (!sbody || (is_present(json_object_get(body, "source")) &&
                   json_object_set(sbody, "source", json_object_get(body, "source")) < 0)) {
        set_err(&e, 500, "internal", "out of memory");
        goto fail;
    }
    project = json_string_value(json_object_get(body, "projectId"));
    if (!(n = named_alloc()) || !(n->name = sbx__strdup(name)) ||
        (project && !(n->project_id = sbx__strdup(project)))) {
        set_err(&e, 500, "internal", "out of memory");
        goto fail;
    }
    make_id(n->id, sizeof n->id, "nsb_");
    n->config = cfg;
    cfg = NULL;
    n->persistent = true; /* the SDK's documented default: sessions resume with the files */
    apply_settings(n, &st);
    if (image)
        set_extra(&n->extra, "image", json_object_get(body, "image"));
    /* Reserve the name: a second create of it meanwhile is a conflict. */
    pthread_mutex_lock(&g.lock);
    if (named_find(project, name)) {
        pthread_mutex_unlock(&g.lock);
        set_err(&e, 409, "conflict", "a sandbox named %s exists already", name);
        goto fail;
    }
    n->resuming = true;
    n->created_at = n->updated_at = next_timestamp();
    n->next = g.named;
    g.named = n;
    named_ref(n); /* ours; the list has the first */
    pthread_mutex_unlock(&g.lock);

    {
        struct session_opts o = {n->name, n->persistent, snap_ttl(n), false};
        int rc = session_create(sbody, &o, &s, &e);
        pthread_mutex_lock(&g.lock);
        n->resuming = false;
        pthread_cond_broadcast(&n->cond);
        if (rc < 0) {
            if (!n->deleted) {
                unlist(n);
                named_unref(n); /* the list's */
            }
            named_unref(n);
            pthread_mutex_unlock(&g.lock);
            n = NULL;
            goto fail;
        }
        snprintf(n->session_id, sizeof n->session_id, "%s", s->id);
        named_persist_locked(n);
        pthread_mutex_unlock(&g.lock);
    }
    sbxd_log(LOG_INFO, "sandbox %s: session %s%s", n->name, s->id, n->persistent ? " (persistent)" : "");
    ret = reply_named(r, n, s, -1);
    pthread_mutex_lock(&g.lock);
    named_unref(n);
    pthread_mutex_unlock(&g.lock);
    api_put_session(s);
    json_decref(sbody);
    json_decref(body);
    return ret;
fail:
    if (n) {
        pthread_mutex_lock(&g.lock);
        named_unref(n);
        pthread_mutex_unlock(&g.lock);
    }
    json_decref(cfg);
    json_decref(sbody);
    json_decref(body);
    return reply_api_err(r, &e);
}

/* Whether the snapshot a persistent sandbox would restore is gone (g.lock). */
static bool snapshot_gone(const struct named *n)
{
    struct snapshot *sn;
    if (!n->persistent || !n->snapshot_id)
        return false;
    sn = snapshot_find(n->snapshot_id);
    return !sn || strcmp(sn->status, "created") != 0;
}

static bool session_live(const struct sandbox *s)
{
    return s && (s->status == SBXD_RUNNING || s->status == SBXD_PENDING);
}

/* The running session of n, starting a new one when its current one is not
 * running (resumed true then); *out gets a reference. Concurrent resumes of
 * one sandbox start one session. */
static int resume(struct named *n, struct sandbox **out, bool *resumed, struct api_err *e)
{
    struct sandbox *s;
    json_t *body = NULL;
    int rc;
    *out = NULL;
    *resumed = false;
    pthread_mutex_lock(&g.lock);
    while (n->resuming)
        pthread_cond_wait(&n->cond, &g.lock);
    s = sandbox_find(n->session_id);
    if (s && (s->status == SBXD_STOPPING || s->status == SBXD_SNAPSHOTTING))
        sandbox_stop_locked(s, false); /* waits for the stop (and its snapshot) */
    if (n->deleted) {
        pthread_mutex_unlock(&g.lock);
        return set_err(e, 404, "not_found", "sandbox %s was deleted", n->name), -1;
    }
    if (session_live(s)) {
        sandbox_ref(s);
        pthread_mutex_unlock(&g.lock);
        *out = s;
        return 0;
    }
    if (n->lost_headers) {
        pthread_mutex_unlock(&g.lock);
        return set_err(e, 409, "conflict", "sandbox %s's network policy injected headers whose values sbxd does not "
                       "keep across restarts: set its networkPolicy again (update) to resume it", n->name), -1;
    }
    if (snapshot_gone(n)) {
        pthread_mutex_unlock(&g.lock);
        return set_err(e, 410, "snapshot_not_found", "snapshot %s of sandbox %s is gone", n->snapshot_id, n->name),
               -1;
    }
    body = json_deep_copy(n->config);
    if (body && n->persistent && n->snapshot_id)
        json_object_set_new(body, "source", json_pack("{s:s,s:s}", "type", "snapshot", "snapshotId", n->snapshot_id));
    if (!body) {
        pthread_mutex_unlock(&g.lock);
        return set_err(e, 500, "internal", "out of memory"), -1;
    }
    n->resuming = true;
    named_ref(n);
    pthread_mutex_unlock(&g.lock);
    {
        struct session_opts o = {n->name, n->persistent, snap_ttl(n), true};
        rc = session_create(body, &o, &s, e);
    }
    json_decref(body);
    pthread_mutex_lock(&g.lock);
    n->resuming = false;
    pthread_cond_broadcast(&n->cond);
    if (rc == 0 && n->deleted) {
        /* deleted while it started: the new session goes too */
        s->persistent = false;
        sandbox_stop_locked(s, false);
        sandbox_unref(s);
        rc = -1;
        set_err(e, 404, "not_found", "sandbox %s was deleted", n->name);
    } else if (rc == 0) {
        snprintf(n->session_id, sizeof n->session_id, "%s", s->id);
        n->updated_at = now_ms();
        named_persist_locked(n);
        *out = s;
        *resumed = true;
    }
    named_unref(n);
    pthread_mutex_unlock(&g.lock);
    if (rc == 0)
        sbxd_log(LOG_INFO, "sandbox %s resumed: session %s", n->name, s->id);
    return rc;
}

/* The named sandbox of the URL (referenced), or NULL with the 404 answered. */
static struct named *get_named(struct http_req *r, const char *name, enum MHD_Result *ret)
{
    struct named *n;
    pthread_mutex_lock(&g.lock);
    n = named_find(req_query(r, "projectId"), name);
    if (n)
        named_ref(n);
    pthread_mutex_unlock(&g.lock);
    if (!n)
        *ret = reply_error(r, 404, "not_found", "sandbox %s not found", name);
    return n;
}

static void put_named(struct named *n)
{
    pthread_mutex_lock(&g.lock);
    named_unref(n);
    pthread_mutex_unlock(&g.lock);
}

static enum MHD_Result get_sandbox(struct http_req *r, struct named *n)
{
    const char *res = req_query(r, "resume");
    struct sandbox *s;
    struct api_err e = {0};
    bool resumed = false;
    enum MHD_Result ret;

    if (res && strcmp(res, "true") && strcmp(res, "false"))
        return reply_error(r, 400, "bad_request", "resume must be true or false");
    if (res && !strcmp(res, "true")) {
        if (resume(n, &s, &resumed, &e) < 0)
            return reply_api_err(r, &e);
    } else {
        pthread_mutex_lock(&g.lock);
        while (n->resuming)
            pthread_cond_wait(&n->cond, &g.lock);
        s = sandbox_find(n->session_id);
        if (!session_live(s) && snapshot_gone(n)) {
            pthread_mutex_unlock(&g.lock);
            return reply_error(r, 410, "snapshot_not_found", "snapshot %s of sandbox %s is gone", n->snapshot_id,
                               n->name);
        }
        if (s)
            sandbox_ref(s);
        pthread_mutex_unlock(&g.lock);
        if (!s)
            return reply_error(r, 410, "gone", "the last session of sandbox %s is no longer kept (--retain-records); "
                               "resume it for a new one", n->name);
    }
    ret = reply_named(r, n, s, res ? resumed : -1);
    api_put_session(s);
    return ret;
}

/* ---- update, delete ------------------------------------------------------------- */

static int check_ports(json_t *v, struct api_err *e)
{
    size_t i;
    json_t *p;
    if (!json_is_array(v))
        return set_err(e, 400, "bad_request", "ports must be a list of at most %d port numbers", SBXD_MAX_PORTS), -1;
    if (json_array_size(v) > SBXD_MAX_PORTS)
        return set_err(e, 400, "bad_request", "ports: at most %d port numbers in the v2 API, %zu given",
                       SBXD_MAX_PORTS, json_array_size(v)), -1;
    json_array_foreach(v, i, p)
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 65535)
            return set_err(e, 400, "bad_request", "ports[%zu] must be a port number from 1 to 65535", i), -1;
    return 0;
}

static enum MHD_Result update_sandbox(struct http_req *r, struct named *n)
{
    enum MHD_Result ret = MHD_NO;
    json_t *body = req_json(r, &ret), *v, *pol = NULL, *res = NULL;
    struct settings st;
    struct api_err e = {0};
    int64_t timeout = 0, vcpus = 0;
    const char *snap = NULL;
    struct sandbox *s;
    json_t *o;

    if (!body)
        return ret;
    if (check_settings(body, &st, &e) < 0)
        goto fail;
    if (is_present(v = json_object_get(body, "timeout")) &&
        (json_get_int64(body, "timeout", &timeout) != 1 || timeout < 1000 || timeout > g.cfg.max_timeout_ms)) {
        set_err(&e, 400, "bad_request", "timeout must be milliseconds from 1000 to %lld",
                (long long)g.cfg.max_timeout_ms);
        goto fail;
    }
    if (is_present(v = json_object_get(body, "resources")) &&
        (!json_is_object(v) || json_get_int64(v, "vcpus", &vcpus) != 1 || vcpus < 1 || vcpus > g.cfg.max_vcpus)) {
        set_err(&e, 400, "bad_request", "resources.vcpus must be an integer from 1 to %d", g.cfg.max_vcpus);
        goto fail;
    }
    if (is_present(v = json_object_get(body, "ports")) && check_ports(v, &e) < 0)
        goto fail;
    if (is_present(v = json_object_get(body, "networkPolicy"))) {
        struct netpolicy *p = NULL;
        bool ok = (pol = netpolicy_api_form(v, e.msg, sizeof e.msg)) && (p = netpolicy_parse(pol, e.msg, sizeof e.msg)) &&
                  injection_ok(p, e.msg, sizeof e.msg);
        netpolicy_free(p);
        if (!ok) {
            e.status = 400;
            e.code = "bad_request";
            goto fail;
        }
    }
    if (is_present(v = json_object_get(body, "currentSnapshotId")) && !(snap = json_string_value(v))) {
        set_err(&e, 400, "bad_request", "currentSnapshotId must be a snapshot id");
        goto fail;
    }
    if (vcpus && !(res = json_pack("{s:I}", "vcpus", (json_int_t)vcpus))) {
        set_err(&e, 500, "internal", "out of memory");
        goto fail;
    }

    pthread_mutex_lock(&g.lock);
    if (snap) {
        struct snapshot *sn = id_is_safe(snap) ? snapshot_find(snap) : NULL;
        char *copy;
        if (!sn || strcmp(sn->status, "created")) {
            pthread_mutex_unlock(&g.lock);
            set_err(&e, 404, "not_found", "snapshot %s not found", snap);
            goto fail;
        }
        if ((copy = sbx__strdup(snap))) {
            sbx__free(n->snapshot_id);
            n->snapshot_id = copy;
        }
    }
    apply_settings(n, &st);
    if (timeout)
        json_object_set_new(n->config, "timeout", json_integer(timeout));
    if (res)
        json_object_set(n->config, "resources", res);
    if (is_present(v = json_object_get(body, "ports")))
        json_object_set(n->config, "ports", v);
    if (pol) {
        json_object_set(n->config, "networkPolicy", pol);
        n->lost_headers = false;
    }
    s = sandbox_find(n->session_id);
    if (s && st.persistent >= 0)
        s->persistent = n->persistent; /* its stop keeps the files, or not */
    if (s && (st.snap_exp >= 0 || st.snap_exp_null))
        s->snap_ttl_ms = snap_ttl(n);
    n->updated_at = now_ms();
    named_persist_locked(n);
    o = json_pack("{s:o}", "sandbox", named_json(n));
    if (o && s)
        json_object_set_new(o, "routes", sandbox_routes_json(s));
    pthread_mutex_unlock(&g.lock);
    json_decref(pol);
    json_decref(res);
    json_decref(body);
    return reply_json(r, 200, o);
fail:
    json_decref(pol);
    json_decref(res);
    json_decref(body);
    return reply_api_err(r, &e);
}

static enum MHD_Result delete_sandbox(struct http_req *r, struct named *n)
{
    const char *orphans = req_query(r, "deleteOrphanSnapshots");
    struct sandbox *s;
    json_t *o;
    int deleted = 0;

    if (orphans && strcmp(orphans, "true") && strcmp(orphans, "false"))
        return reply_error(r, 400, "bad_request", "deleteOrphanSnapshots must be true or false");
    pthread_mutex_lock(&g.lock);
    while (n->resuming)
        pthread_cond_wait(&n->cond, &g.lock);
    if (n->deleted) {
        pthread_mutex_unlock(&g.lock);
        return reply_error(r, 404, "not_found", "sandbox %s not found", n->name);
    }
    unlist(n);
    s = sandbox_find(n->session_id);
    if (s) {
        s->persistent = false; /* nothing to keep for */
        sandbox_stop_locked(s, false);
    }
    if (orphans && !strcmp(orphans, "true")) {
        for (struct snapshot *sn = g.snapshots; sn; sn = sn->next) {
            bool used = false;
            if (!sn->sandbox_name || strcmp(sn->sandbox_name, n->name) || !project_is(n->project_id, sn->project_id) ||
                !strcmp(sn->status, "deleted"))
                continue;
            for (struct named *x = g.named; x; x = x->next)
                used |= x->snapshot_id && !strcmp(x->snapshot_id, sn->id);
            for (struct sandbox *x = g.sandboxes; x; x = x->next)
                used |= session_live(x) && x->source_snapshot_id && !strcmp(x->source_snapshot_id, sn->id);
            if (!used) {
                snapshot_delete_locked(sn);
                deleted++;
            }
        }
    }
    o = json_pack("{s:o}", "sandbox", named_json(n));
    named_remove_state(n);
    named_unref(n); /* the list's */
    pthread_mutex_unlock(&g.lock);
    sbxd_log(LOG_INFO, "sandbox %s deleted (%d snapshots with it)", n->name, deleted);
    return reply_json(r, 200, o);
}

/* ---- routing ---------------------------------------------------------------------- */

static enum MHD_Result named_routes(struct http_req *r)
{
    /* /v2/sandboxes/{name}[/fork] */
    enum MHD_Result ret = MHD_NO;
    struct named *n;
    if (r->nseg == 4 && seg_is(r, 3, "fork"))
        return method_is(r, "POST") ? not_supported(r, "fork") : not_allowed(r);
    if (r->nseg != 3)
        return reply_error(r, 404, "not_found", "no endpoint %s %s", r->method, r->path);
    if (!method_is(r, "GET") && !method_is(r, "PATCH") && !method_is(r, "DELETE"))
        return not_allowed(r);
    if (!(n = get_named(r, r->segs[2], &ret)))
        return ret;
    if (method_is(r, "GET"))
        ret = get_sandbox(r, n);
    else if (method_is(r, "PATCH"))
        ret = update_sandbox(r, n);
    else
        ret = delete_sandbox(r, n);
    put_named(n);
    return ret;
}

enum MHD_Result api2_dispatch(struct http_req *r)
{
    enum MHD_Result ret = MHD_NO;
    struct sandbox *s;
    if (seg_is(r, 0, "v3")) {
        /* only create is versioned 3 */
        if (r->nseg == 2)
            return method_is(r, "POST") ? create_named(r, true) : not_allowed(r);
        return reply_error(r, 404, "not_found", "no endpoint %s %s", r->method, r->path);
    }
    if (r->nseg == 2) {
        if (method_is(r, "POST"))
            return create_named(r, false);
        return method_is(r, "GET") ? list_named(r) : not_allowed(r);
    }
    if (seg_is(r, 2, "sessions")) {
        if (r->nseg == 3)
            return method_is(r, "GET") ? page_of(r, "sessions", fill_sessions) : not_allowed(r);
        if (!(s = api_get_session(r, r->segs[3], &ret)))
            return ret;
        ret = session_sub(r, s, 4);
        api_put_session(s);
        return ret;
    }
    if (seg_is(r, 2, "snapshots")) {
        if (r->nseg == 3)
            return method_is(r, "GET") ? page_of(r, "snapshots", fill_snapshots) : not_allowed(r);
        if (r->nseg == 4 && seg_is(r, 3, "tree"))
            return method_is(r, "GET") ? not_supported(r, "the snapshot tree") : not_allowed(r);
        if (r->nseg == 4) {
            if (method_is(r, "GET"))
                return api_snapshot_ep(r, r->segs[3], false);
            if (method_is(r, "DELETE"))
                return api_snapshot_ep(r, r->segs[3], true);
            return not_allowed(r);
        }
        return reply_error(r, 404, "not_found", "no endpoint %s %s", r->method, r->path);
    }
    if (seg_is(r, 2, "drives"))
        return not_supported(r, "drives");
    return named_routes(r);
}
