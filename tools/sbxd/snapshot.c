/* SPDX-License-Identifier: MIT */
/*
 * snapshot: a sandbox's filesystem (what it wrote: workspace, home, /tmp,
 * /etc changes; not the host's read-only /usr) as a tar.gz in the state
 * directory, with a JSON record beside it. Records outlive restarts; expired
 * or deleted snapshots keep their record (status "deleted") and lose the
 * archive.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "tarx.h"
#include "sbxd.h"

/* Top-level names that are the host's or bwrap's, not the sandbox's. */
static const char *const capture_skip[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32",
                                           "proc", "dev", "sys", ".sbxd", NULL};

static bool expired(const struct snapshot *sn, int64_t now)
{
    return sn->expires_at > 0 && sn->expires_at <= now && strcmp(sn->status, "created") == 0;
}

struct snapshot *snapshot_find(const char *id)
{
    for (struct snapshot *sn = g.snapshots; sn; sn = sn->next) {
        if (strcmp(sn->id, id) != 0)
            continue;
        /* Expiry takes effect at once, not at the janitor's next round. */
        if (expired(sn, now_ms()))
            snapshot_delete_locked(sn);
        return sn;
    }
    return NULL;
}

char *snapshot_archive_path(const char *id)
{
    char rel[96];
    snprintf(rel, sizeof rel, "snapshots/%s.tar.gz", id);
    return path_join(g.cfg.state_dir, rel);
}

json_t *snapshot_json(struct snapshot *sn)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "id", json_string(sn->id));
    json_object_set_new(o, "sourceSandboxId", json_string(sn->source_sandbox_id));
    json_object_set_new(o, "region", json_string(SBXD_REGION));
    json_object_set_new(o, "status", json_string(sn->status));
    json_object_set_new(o, "sizeBytes", json_integer(sn->size_bytes));
    json_object_set_new(o, "createdAt", json_integer(sn->created_at));
    json_object_set_new(o, "updatedAt", json_integer(sn->updated_at));
    if (sn->expires_at > 0)
        json_object_set_new(o, "expiresAt", json_integer(sn->expires_at));
    if (sn->project_id)
        json_object_set_new(o, "projectId", json_string(sn->project_id));
    if (sn->runtime)
        json_object_set_new(o, "runtime", json_string(sn->runtime));
    return o;
}

void snapshot_persist_locked(struct snapshot *sn)
{
    char rel[96], *path, *text;
    json_t *o = snapshot_json(sn);
    /* what the 2.x shapes add, kept in the record */
    if (o && sn->sandbox_name)
        json_object_set_new(o, "sandboxName", json_string(sn->sandbox_name));
    if (o && sn->parent_id)
        json_object_set_new(o, "parentId", json_string(sn->parent_id));
    if (o && sn->method)
        json_object_set_new(o, "creationMethod", json_string(sn->method));
    if (o && sn->last_used_at > 0)
        json_object_set_new(o, "lastUsedAt", json_integer(sn->last_used_at));
    snprintf(rel, sizeof rel, "snapshots/%s.json", sn->id);
    path = path_join(g.cfg.state_dir, rel);
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (path && text && write_file_atomic(path, text, strlen(text), 0600, false) < 0)
        sbxd_log(LOG_WARN, "cannot save %s: %s", path, strerror(errno));
    free(text);
    sbx__free(path);
    json_decref(o);
}

int snapshot_capture(struct sandbox *s, struct snapshot *sn, char *err, size_t errlen)
{
    char *path = snapshot_archive_path(sn->id);
    int64_t size = 0;
    int r;

    if (!path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r = archive_dir(s->root, capture_skip, path, &size, err, errlen);
    sbx__free(path);
    pthread_mutex_lock(&g.lock);
    sbx__free(sn->status);
    sn->status = sbx__strdup(r == 0 ? "created" : "failed");
    sn->size_bytes = size;
    sn->updated_at = now_ms();
    pthread_mutex_unlock(&g.lock);
    return r;
}

int snapshot_restore(struct snapshot *sn, struct sandbox *s, int *status, char *err, size_t errlen)
{
    char *path = snapshot_archive_path(sn->id);
    int r;
    *status = 500;
    if (!path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r = archive_extract(path, s->root, err, errlen);
    sbx__free(path);
    if (r < 0 && (errno == ENOSPC || errno == EDQUOT)) {
        /* The snapshot counts against the new sandbox's disk limit. */
        *status = 413;
        snprintf(err, errlen, "snapshot %s does not fit in the sandbox's disk limit (%lld MiB)", sn->id,
                 (long long)(g.cfg.disk_limit >> 20));
    }
    if (r == 0 && ids_chown_tree(s->root, &s->ids) < 0) {
        snprintf(err, errlen, "cannot give the restored files to the sandbox: %s", strerror(errno));
        r = -1;
    }
    return r;
}

static struct snapshot *snapshot_from_json(const char *id, json_t *j)
{
    struct snapshot *sn = sbx__calloc(1, sizeof *sn);
    const char *v;
    if (!sn)
        return NULL;
    snprintf(sn->id, sizeof sn->id, "%s", id);
    v = json_string_value(json_object_get(j, "sourceSandboxId"));
    sn->source_sandbox_id = sbx__strdup(v ? v : "");
    v = json_string_value(json_object_get(j, "status"));
    sn->status = sbx__strdup(v ? v : "failed");
    if ((v = json_string_value(json_object_get(j, "projectId"))))
        sn->project_id = sbx__strdup(v);
    if ((v = json_string_value(json_object_get(j, "runtime"))))
        sn->runtime = sbx__strdup(v);
    json_get_int64(j, "sizeBytes", &sn->size_bytes);
    json_get_int64(j, "createdAt", &sn->created_at);
    json_get_int64(j, "updatedAt", &sn->updated_at);
    json_get_int64(j, "expiresAt", &sn->expires_at);
    json_get_int64(j, "lastUsedAt", &sn->last_used_at);
    if ((v = json_string_value(json_object_get(j, "sandboxName"))))
        sn->sandbox_name = sbx__strdup(v);
    if ((v = json_string_value(json_object_get(j, "parentId"))))
        sn->parent_id = sbx__strdup(v);
    if ((v = json_string_value(json_object_get(j, "creationMethod"))))
        sn->method = sbx__strdup(v);
    sn->listed = true;
    if (!sn->source_sandbox_id || !sn->status) {
        snapshot_free(sn);
        return NULL;
    }
    return sn;
}

void snapshot_free(struct snapshot *sn)
{
    if (!sn)
        return;
    sbx__free(sn->source_sandbox_id);
    sbx__free(sn->project_id);
    sbx__free(sn->runtime);
    sbx__free(sn->status);
    sbx__free(sn->sandbox_name);
    sbx__free(sn->parent_id);
    sbx__free(sn->method);
    sbx__free(sn);
}

struct snapshot *snapshot_begin_locked(struct sandbox *s, int64_t ttl, const char *method)
{
    struct snapshot *sn = sbx__calloc(1, sizeof *sn);
    if (!sn)
        return NULL;
    make_id(sn->id, sizeof sn->id, "snap_");
    sn->status = sbx__strdup("failed"); /* until the capture succeeds */
    sn->source_sandbox_id = sbx__strdup(s->id);
    sn->project_id = s->project_id ? sbx__strdup(s->project_id) : NULL;
    sn->runtime = sbx__strdup(s->runtime);
    sn->sandbox_name = s->name ? sbx__strdup(s->name) : NULL;
    sn->parent_id = s->source_snapshot_id ? sbx__strdup(s->source_snapshot_id) : NULL;
    sn->method = sbx__strdup(method);
    if (!sn->status || !sn->source_sandbox_id || !sn->runtime || !sn->method ||
        (s->project_id && !sn->project_id) || (s->name && !sn->sandbox_name) ||
        (s->source_snapshot_id && !sn->parent_id)) {
        snapshot_free(sn);
        return NULL;
    }
    sn->created_at = sn->updated_at = next_timestamp();
    sn->expires_at = ttl > 0 ? sn->created_at + ttl : 0;
    s->snap_pending = sn;
    return sn;
}

void snapshot_list_locked(struct snapshot *sn)
{
    if (sn->listed)
        return;
    sn->listed = true;
    sn->next = g.snapshots;
    g.snapshots = sn;
    snapshot_persist_locked(sn);
}

static int take_snapshot(const char *id, json_t *j, void *arg)
{
    struct snapshot *sn = snapshot_from_json(id, j), **tail;
    (void)arg;
    if (!sn)
        return -1;
    for (tail = &g.snapshots; *tail && (*tail)->created_at > sn->created_at; tail = &(*tail)->next)
        ;
    sn->next = *tail;
    *tail = sn;
    if (sn->created_at > g.last_ts)
        g.last_ts = sn->created_at;
    return 0;
}

int snapshot_load_all(void)
{
    return records_each("snapshots", "snap_", take_snapshot, NULL);
}

/* Mark a snapshot deleted and drop its archive; g.lock held. */
void snapshot_delete_locked(struct snapshot *sn)
{
    char *path;
    if (strcmp(sn->status, "deleted") == 0)
        return;
    path = snapshot_archive_path(sn->id);
    if (path)
        unlink(path);
    sbx__free(path);
    sbx__free(sn->status);
    sn->status = sbx__strdup("deleted");
    sn->updated_at = now_ms();
    snapshot_persist_locked(sn);
}

void snapshot_expire(void)
{
    int64_t now = now_ms();
    for (struct snapshot *sn = g.snapshots; sn; sn = sn->next)
        if (expired(sn, now)) {
            sbxd_log(LOG_INFO, "snapshot %s expired", sn->id);
            snapshot_delete_locked(sn);
        }
}
