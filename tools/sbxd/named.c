/* SPDX-License-Identifier: MIT */
/*
 * named: the 2.x protocol's named sandboxes. A named sandbox is a name in a
 * project, the settings its sessions start with, and its current session;
 * each session is an ordinary sbxd sandbox (struct sandbox) that carries the
 * name. A persistent one's stop takes a snapshot its next session restores.
 *
 * Records live in STATE/named/ID.json. The network policy's header values
 * (credentials to inject) are never written to disk: a sandbox loaded from
 * its record after a restart remembers that it had them, and refuses to
 * start a session without them until its policy is set again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

#define NAME_MAX_LEN 64

struct named *named_alloc(void)
{
    struct named *n = sbx__calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->refs = 1;
    pthread_cond_init(&n->cond, NULL);
    return n;
}

void named_ref(struct named *n)
{
    n->refs++;
}

void named_unref(struct named *n)
{
    if (!n || --n->refs > 0)
        return;
    sbx__free(n->name);
    sbx__free(n->project_id);
    sbx__free(n->snapshot_id);
    json_decref(n->config);
    json_decref(n->extra);
    pthread_cond_destroy(&n->cond);
    sbx__free(n);
}

static bool same_project(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

struct named *named_find(const char *project, const char *name)
{
    for (struct named *n = g.named; n; n = n->next)
        if (strcmp(n->name, name) == 0 && same_project(n->project_id, project))
            return n;
    return NULL;
}

bool named_name_ok(const char *name, char *err, size_t errlen)
{
    static const char *const reserved[] = {"sessions", "snapshots", "drives"};
    size_t len = strlen(name);
    if (len == 0 || len > NAME_MAX_LEN) {
        snprintf(err, errlen, "name must have 1 to %d characters", NAME_MAX_LEN);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '-' && c != '_' && c != '.'))) {
            snprintf(err, errlen, "name '%s' must start with a letter or digit and hold only letters, digits, "
                     "'-', '_' and '.'", name);
            return false;
        }
    }
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(name, reserved[i]) == 0) {
            snprintf(err, errlen, "'%s' is reserved by the API's routes and cannot name a sandbox", name);
            return false;
        }
    return true;
}

json_t *named_json(struct named *n)
{
    struct sandbox *s = n->session_id[0] ? sandbox_find(n->session_id) : NULL;
    json_t *o = json_object(), *pol = json_object_get(n->config, "networkPolicy");
    int64_t vcpus = 0, total_ms = 0, total_cpu = 0;
    const char *runtime = json_string_value(json_object_get(n->config, "runtime"));
    if (!o)
        return NULL;
    json_object_set_new(o, "name", json_string(n->name));
    json_object_set_new(o, "persistent", json_boolean(n->persistent));
    json_object_set_new(o, "createdAt", json_integer(n->created_at));
    json_object_set_new(o, "updatedAt", json_integer(n->updated_at));
    json_object_set_new(o, "currentSessionId", json_string(n->session_id));
    /* a session whose record was pruned has long stopped */
    json_object_set_new(o, "status", json_string(s ? sandbox_status_name(s->status) : "stopped"));
    if (s)
        json_object_set_new(o, "statusUpdatedAt", json_integer(s->updated_at));
    json_object_set_new(o, "region", json_string(SBXD_REGION));
    json_object_set_new(o, "cwd", json_string(SBXD_CWD));
    json_get_int64(json_object_get(n->config, "resources"), "vcpus", &vcpus);
    if (vcpus <= 0)
        vcpus = g.cfg.default_vcpus;
    vcpus = limits_effective_vcpus((int)vcpus);
    json_object_set_new(o, "vcpus", json_integer(vcpus));
    json_object_set_new(o, "memory", json_integer(2048 * vcpus));
    json_copy_key(o, n->config, "timeout");
    if (!json_object_get(o, "timeout"))
        json_object_set_new(o, "timeout", json_integer(g.cfg.default_timeout_ms));
    if (runtime) {
        /* what its sessions really run (runtime.c), and what was asked for */
        json_object_set_new(o, "runtime", json_string(runtime_provided(runtime)));
        json_object_set_new(o, "requestedRuntime", json_string(runtime));
    }
    if (pol) {
        /* the legacy form with "mode", header names only */
        char err[256];
        struct netpolicy *p = netpolicy_parse(pol, err, sizeof err);
        if (p)
            json_object_set_new(o, "networkPolicy", netpolicy_json(p));
        netpolicy_free(p);
    }
    if (n->snapshot_id)
        json_object_set_new(o, "currentSnapshotId", json_string(n->snapshot_id));
    json_copy_key(o, n->extra, "image");
    json_copy_key(o, n->extra, "tags");
    json_copy_key(o, n->extra, "failoverRegions");
    json_copy_key(o, n->extra, "snapshotExpiration");
    json_copy_key(o, n->extra, "keepLastSnapshots");
    for (struct sandbox *x = g.sandboxes; x; x = x->next) {
        if (!x->name || strcmp(x->name, n->name) != 0 || !same_project(x->project_id, n->project_id))
            continue;
        if (x->stopped_at > 0 && x->started_at > 0)
            total_ms += x->stopped_at - x->started_at;
        if (x->active_cpu_ms > 0)
            total_cpu += x->active_cpu_ms;
    }
    json_object_set_new(o, "totalDurationMs", json_integer(total_ms));
    json_object_set_new(o, "totalActiveCpuDurationMs", json_integer(total_cpu));
    return o;
}

static char *record_path(const struct named *n)
{
    char rel[96];
    snprintf(rel, sizeof rel, "named/%s.json", n->id);
    return path_join(g.cfg.state_dir, rel);
}

/* The config as written to disk: injection rules keep their header names. */
static json_t *config_for_disk(json_t *config)
{
    json_t *c = json_deep_copy(config), *rules, *rule;
    size_t i;
    if (!c)
        return NULL;
    rules = json_object_get(json_object_get(c, "networkPolicy"), "injectionRules");
    json_array_foreach(rules, i, rule) {
        json_t *names = json_array(), *v;
        const char *k;
        json_object_foreach(json_object_get(rule, "headers"), k, v)
            json_array_append_new(names, json_string(k));
        json_object_del(rule, "headers");
        json_object_set_new(rule, "headerNames", names);
    }
    return c;
}

void named_persist_locked(struct named *n)
{
    json_t *o;
    char *path, *text = NULL;
    if (n->deleted)
        return;
    o = json_pack("{s:s,s:s,s:b,s:I,s:I,s:s,s:o,s:O}", "id", n->id, "name", n->name, "persistent",
                  n->persistent, "createdAt", (json_int_t)n->created_at, "updatedAt",
                  (json_int_t)n->updated_at, "currentSessionId", n->session_id, "config",
                  config_for_disk(n->config), "extra", n->extra ? n->extra : json_null());
    if (o && n->project_id)
        json_object_set_new(o, "projectId", json_string(n->project_id));
    if (o && n->snapshot_id)
        json_object_set_new(o, "currentSnapshotId", json_string(n->snapshot_id));
    if (o && n->lost_headers)
        json_object_set_new(o, "lostHeaders", json_true());
    path = record_path(n);
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!text || !path || write_file_atomic(path, text, strlen(text), 0600, false) < 0)
        sbxd_log(LOG_WARN, "cannot save the record of sandbox %s: %s", n->name, text ? strerror(errno) : "no memory");
    free(text);
    sbx__free(path);
    json_decref(o);
}

void named_remove_state(struct named *n)
{
    char *path = record_path(n);
    if (path && unlink(path) < 0 && errno != ENOENT)
        sbxd_log(LOG_WARN, "cannot remove %s: %s", path, strerror(errno));
    sbx__free(path);
}

static struct named *named_from_json(const char *id, json_t *j)
{
    struct named *n = named_alloc();
    const char *v;
    json_t *rules;
    if (!n)
        return NULL;
    snprintf(n->id, sizeof n->id, "%s", id);
    n->name = sbx__strdup(json_string_value(json_object_get(j, "name")) ?: "");
    if ((v = json_string_value(json_object_get(j, "projectId"))))
        n->project_id = sbx__strdup(v);
    if ((v = json_string_value(json_object_get(j, "currentSnapshotId"))))
        n->snapshot_id = sbx__strdup(v);
    snprintf(n->session_id, sizeof n->session_id, "%s",
             json_string_value(json_object_get(j, "currentSessionId")) ?: "");
    n->persistent = json_is_true(json_object_get(j, "persistent"));
    json_get_int64(j, "createdAt", &n->created_at);
    json_get_int64(j, "updatedAt", &n->updated_at);
    n->config = json_incref(json_object_get(j, "config"));
    if (json_is_object(json_object_get(j, "extra")))
        n->extra = json_incref(json_object_get(j, "extra"));
    rules = json_object_get(json_object_get(n->config, "networkPolicy"), "injectionRules");
    n->lost_headers = json_is_true(json_object_get(j, "lostHeaders")) || json_array_size(rules) > 0;
    if (!n->name || !n->name[0] || !json_is_object(n->config)) {
        named_unref(n);
        return NULL;
    }
    return n;
}

static int take_named(const char *id, json_t *j, void *arg)
{
    struct named *n = named_from_json(id, j), **tail;
    (void)arg;
    if (!n)
        return -1;
    for (tail = &g.named; *tail && (*tail)->created_at > n->created_at; tail = &(*tail)->next)
        ;
    n->next = *tail;
    *tail = n;
    if (n->created_at > g.last_ts)
        g.last_ts = n->created_at;
    return 0;
}

int named_load_all(void)
{
    return records_each("named", "nsb_", take_named, NULL);
}

void named_snapshot_taken(struct sandbox *s, struct snapshot *sn)
{
    struct named *n = named_find(s->project_id, s->name);
    json_t *keep;
    int64_t count = 1;
    bool evict;
    int seen = 0;
    char *id;
    if (!n || strcmp(n->session_id, s->id) != 0)
        return;
    if (!(id = sbx__strdup(sn->id)))
        return; /* the sandbox keeps its earlier snapshot */
    sbx__free(n->snapshot_id);
    n->snapshot_id = id;
    n->updated_at = now_ms();
    named_persist_locked(n);
    /* Retention: keepLastSnapshots {count, deleteEvicted} over all of the
     * sandbox's snapshots; without it, only the newest snapshot its stops
     * took is kept (each holds the whole file system). */
    keep = json_object_get(n->extra, "keepLastSnapshots");
    evict = !json_is_object(keep) || json_is_true(json_object_get(keep, "deleteEvicted"));
    if (json_is_object(keep))
        json_get_int64(keep, "count", &count);
    if (!evict)
        return;
    for (struct snapshot *x = g.snapshots; x; x = x->next) { /* newest first */
        bool in_use = false;
        if (!x->sandbox_name || strcmp(x->sandbox_name, n->name) != 0 || !same_project(x->project_id, n->project_id) ||
            strcmp(x->status, "created") != 0 || (!json_is_object(keep) && (!x->method || strcmp(x->method, "stop"))))
            continue;
        if (++seen <= count)
            continue;
        for (struct named *o = g.named; o; o = o->next)
            in_use |= o->snapshot_id && strcmp(o->snapshot_id, x->id) == 0;
        if (!in_use) {
            sbxd_log(LOG_INFO, "snapshot %s of sandbox %s evicted (retention)", x->id, n->name);
            snapshot_delete_locked(x);
        }
    }
}

int named_prune_locked(void)
{
    int64_t now = now_ms();
    int n = 0;
    if (g.cfg.retain_records_ms <= 0)
        return 0;
    for (struct named **pp = &g.named; *pp;) {
        struct named *x = *pp;
        struct snapshot *sn = x->snapshot_id ? snapshot_find(x->snapshot_id) : NULL;
        bool keeps_files = x->persistent && sn && strcmp(sn->status, "created") == 0;
        /* Forgotten once its last session's record is and nothing of it
         * remains to resume from. */
        if (x->resuming || sandbox_find(x->session_id) || keeps_files || now - x->updated_at < g.cfg.retain_records_ms) {
            pp = &x->next;
            continue;
        }
        *pp = x->next;
        x->deleted = true;
        named_remove_state(x);
        named_unref(x);
        n++;
    }
    return n;
}
