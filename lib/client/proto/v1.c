/* SPDX-License-Identifier: MIT */
/*
 * api, v1: the 1.x protocol (vercel-sandbox-protocol.md): every operation
 * under /v1/sandboxes, a sandbox addressed by its id.
 */
#include "util/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client/proto/common.h"
#include "util/str.h"

/* ---- requests --------------------------------------------------------------------------- */

/* Every endpoint is under /v1/sandboxes (snapshots and commands too). */
#define ROOT "/v1/sandboxes"

/* ROOT, then "/SID" (sid), mid, the escaped cid, tail: each when not NULL. */
static sbx_status put_path(sbx__buf *p, const char *sid, const char *mid, const char *cid, const char *tail)
{
    if (sbx__buf_puts(p, ROOT) != SBX_OK ||
        (sid && (sbx__buf_putc(p, '/') != SBX_OK || sbx__api_escape(p, sid) != SBX_OK)) ||
        (mid && sbx__buf_puts(p, mid) != SBX_OK) || (cid && sbx__api_escape(p, cid) != SBX_OK) ||
        (tail && sbx__buf_puts(p, tail) != SBX_OK))
        return SBX_E_NOMEM;
    return SBX_OK;
}

static char *path_of(const char *sid, const char *mid, const char *cid, const char *tail)
{
    sbx__buf p = SBX__BUF_INIT;
    if (put_path(&p, sid, mid, cid, tail) != SBX_OK) {
        sbx__buf_free(&p);
        return NULL;
    }
    return sbx__buf_detach(&p, NULL);
}

static sbx_status v1_create_sandbox(struct sbx__api_req *r, const struct sbx__create_spec *s)
{
    return sbx__pr_make(r, "POST", path_of(NULL, NULL, NULL, NULL), sbx__pr_dump(sbx__pr_create_object(s)), true);
}

static sbx_status v1_get_sandbox(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "GET", path_of(id, NULL, NULL, NULL), NULL, false);
}

static sbx_status v1_stop_sandbox(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "POST", path_of(id, NULL, NULL, "/stop"), NULL, false);
}

static sbx_status v1_extend_timeout(struct sbx__api_req *r, const char *id, int64_t ms)
{
    return sbx__pr_make(r, "POST", path_of(id, NULL, NULL, "/extend-timeout"), sbx__pr_int_body("duration", ms), true);
}

static sbx_status v1_update_network_policy(struct sbx__api_req *r, const char *id, const char *policy_json)
{
    /* The body is the policy object itself. */
    return sbx__pr_make(r, "POST", path_of(id, NULL, NULL, "/network-policy"), sbx__strdup(policy_json), true);
}

/* A list: ROOT (+ mid) and the query parameters that are set. */
static sbx_status list(struct sbx__api_req *r, const char *mid, const char *project, size_t limit,
                       int64_t since, int64_t until)
{
    sbx__buf p = SBX__BUF_INIT;
    char sep = '?';
    sbx_status st = put_path(&p, NULL, mid, NULL, NULL);

    if (project && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%cproject=", sep);
        sep = '&';
        if (st == SBX_OK)
            st = sbx__api_escape(&p, project);
    }
    if (limit && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%climit=%zu", sep, limit);
        sep = '&';
    }
    if (since >= 0 && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%csince=%lld", sep, (long long)since);
        sep = '&';
    }
    if (until >= 0 && st == SBX_OK)
        st = sbx__buf_printf(&p, "%cuntil=%lld", sep, (long long)until);
    if (st != SBX_OK) {
        sbx__buf_free(&p);
        memset(r, 0, sizeof *r);
        return SBX_E_NOMEM;
    }
    return sbx__pr_make(r, "GET", sbx__buf_detach(&p, NULL), NULL, false);
}

static sbx_status v1_list_sandboxes(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                   int64_t until, const char *cursor)
{
    (void)cursor;
    return list(r, NULL, project, limit, since, until);
}

static sbx_status v1_list_snapshots(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                   int64_t until, const char *cursor)
{
    (void)cursor;
    return list(r, "/snapshots", project, limit, since, until);
}

static sbx_status v1_create_snapshot(struct sbx__api_req *r, const char *sandbox_id, int64_t expiration_ms)
{
    /* Always a body: a request that must not run twice is sent through a
     * reader libcurl cannot replay (engine.c). */
    char *body = expiration_ms >= 0 ? sbx__pr_int_body("expiration", expiration_ms) : sbx__strdup("{}");
    return sbx__pr_make(r, "POST", path_of(sandbox_id, NULL, NULL, "/snapshot"), body, true);
}

static sbx_status v1_get_snapshot(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "GET", path_of(NULL, "/snapshots/", id, NULL), NULL, false);
}

static sbx_status v1_delete_snapshot(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "DELETE", path_of(NULL, "/snapshots/", id, NULL), NULL, false);
}

static sbx_status v1_mkdir(struct sbx__api_req *r, const char *sandbox_id, const char *path)
{
    return sbx__pr_make(r, "POST", path_of(sandbox_id, NULL, NULL, "/fs/mkdir"), sbx__pr_path_body(path), true);
}

static sbx_status v1_write_files(struct sbx__api_req *r, const char *sandbox_id)
{
    sbx_status st = sbx__pr_make(r, "POST", path_of(sandbox_id, NULL, NULL, "/fs/write"), NULL, false);
    if (st == SBX_OK) {
        /* The archive's names are relative to the root. */
        r->content_type = "application/gzip";
        r->header = "x-cwd: /";
    }
    return st;
}

static sbx_status v1_read_file(struct sbx__api_req *r, const char *sandbox_id, const char *path)
{
    return sbx__pr_make(r, "POST", path_of(sandbox_id, NULL, NULL, "/fs/read"), sbx__pr_path_body(path), true);
}

static sbx_status v1_run_command(struct sbx__api_req *r, const char *sandbox_id, const sbx__strlist *argv,
                               const char *cwd, const sbx__strlist *env, bool sudo, bool wait, int64_t timeout_ms)
{
    /* The 1.x protocol has no command timeout: the client's own deadline
     * bounds the command there (command.c kills it when it passes). */
    (void)timeout_ms;
    return sbx__pr_make(r, "POST", path_of(sandbox_id, NULL, NULL, "/cmd"), sbx__pr_dump(sbx__pr_run_object(argv, cwd, env, sudo, wait, 0)), true);
}

static sbx_status v1_get_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", path_of(sandbox_id, "/cmd/", cmd_id, NULL), NULL, false);
}

static sbx_status v1_wait_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", path_of(sandbox_id, "/cmd/", cmd_id, "?wait=true"), NULL, false);
}

static sbx_status v1_command_logs(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", path_of(sandbox_id, "/cmd/", cmd_id, "/logs"), NULL, false);
}

static sbx_status v1_kill_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id, int signal)
{
    /* The 1.x path has no cmd/ segment (protocol 4.7). */
    return sbx__pr_make(r, "POST", path_of(sandbox_id, "/", cmd_id, "/kill"), sbx__pr_int_body("signal", signal), true);
}

/* ---- answers ---- */

static sbx_status v1_parse_sandbox(const char *body, size_t len, struct sbx__sandbox_info *out, sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st;
    if (!j)
        return err->code;
    st = sbx__pr_fill_sandbox(json_object_get(j, "sandbox"), "sandbox", json_object_get(j, "routes"), out, err);
    if (st == SBX_OK && !(out->json = sbx__strndup(body, len)))
        st = sbx__err_nomem(err);
    json_decref(j);
    return st;
}

static sbx_status v1_parse_snapshot(const char *body, size_t len, struct sbx__snapshot_info *sn,
                                    struct sbx__sandbox_info *sbx, sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st;
    if (!j)
        return err->code;
    st = sbx__pr_fill_snapshot(json_object_get(j, "snapshot"), "sourceSandboxId", sn, err);
    if (st == SBX_OK && !(sn->json = sbx__strndup(body, len)))
        st = sbx__err_nomem(err);
    if (st == SBX_OK && sbx && json_object_get(j, "sandbox"))
        st = sbx__pr_fill_sandbox(json_object_get(j, "sandbox"), "sandbox", NULL, sbx, err);
    json_decref(j);
    return st;
}

const struct sbx__proto sbx__proto_v1 = {
    .name = "v1",
    .max_ports = 4,
    .check_policy = sbx__api_check_policy,
    .create_sandbox = v1_create_sandbox,
    .get_sandbox = v1_get_sandbox,
    .stop_sandbox = v1_stop_sandbox,
    .extend_timeout = v1_extend_timeout,
    .update_network_policy = v1_update_network_policy,
    .list_sandboxes = v1_list_sandboxes,
    .list_snapshots = v1_list_snapshots,
    .create_snapshot = v1_create_snapshot,
    .get_snapshot = v1_get_snapshot,
    .delete_snapshot = v1_delete_snapshot,
    .mkdir = v1_mkdir,
    .write_files = v1_write_files,
    .read_file = v1_read_file,
    .run_command = v1_run_command,
    .get_command = v1_get_command,
    .wait_command = v1_wait_command,
    .command_logs = v1_command_logs,
    .kill_command = v1_kill_command,
    .get_named = NULL, /* no named sandboxes in v1 */
    .delete_named = NULL,
    .rebase = NULL, /* no sessions to resume in v1 */
    .update_named = NULL,
    .parse_named = NULL,
    .parse_sandbox = v1_parse_sandbox,
    .parse_snapshot = v1_parse_snapshot,
};
