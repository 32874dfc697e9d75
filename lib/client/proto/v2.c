/* SPDX-License-Identifier: MIT */
/*
 * api, v2: the protocol of the 2.x/3.x SDKs (vercel-sandbox-protocol-v2.md):
 * a sandbox is created as a named sandbox (/v3/sandboxes, or /v2/sandboxes
 * with a runtime) and everything after addresses its session
 * (/v2/sandboxes/sessions/{id}/...). The network policy is sent in the new
 * request shape; answers carry "session" where v1 said "sandbox", commands
 * "sessionId", snapshots "sourceSessionId", lists cursors.
 */
#include "util/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client/proto/common.h"
#include "util/str.h"

#define SESSIONS "/v2/sandboxes/sessions/"
#define SNAPSHOTS "/v2/sandboxes/snapshots"

/* SESSIONS + the escaped session id + mid + the escaped cid + tail. */
static char *session_path(const char *sid, const char *mid, const char *cid, const char *tail)
{
    sbx__buf p = SBX__BUF_INIT;
    if (sbx__buf_puts(&p, SESSIONS) != SBX_OK || sbx__api_escape(&p, sid) != SBX_OK ||
        (mid && sbx__buf_puts(&p, mid) != SBX_OK) || (cid && sbx__api_escape(&p, cid) != SBX_OK) ||
        (tail && sbx__buf_puts(&p, tail) != SBX_OK)) {
        sbx__buf_free(&p);
        return NULL;
    }
    return sbx__buf_detach(&p, NULL);
}

static char *snapshot_path(const char *id)
{
    sbx__buf p = SBX__BUF_INIT;
    if (sbx__buf_puts(&p, SNAPSHOTS "/") != SBX_OK || sbx__api_escape(&p, id) != SBX_OK) {
        sbx__buf_free(&p);
        return NULL;
    }
    return sbx__buf_detach(&p, NULL);
}

/* The library's policy (the API form, with "mode") in the request shape the
 * 2.x SDKs send: {"mode"} for allow-all and deny-all, else {"allow",
 * "subnets"}, each injection rule a transform rule of its domain. In the new
 * shape a domain with rules is allowed, so a rule for a domain the policy
 * does not allow cannot be sent: NULL (the caller's check refuses those
 * first, see v2_check_policy). */
static json_t *policy_v2(const char *api_json)
{
    json_t *in = json_loads(api_json, 0, NULL), *out = NULL, *allow, *rules, *rule, *sub = NULL;
    const char *mode = json_string_value(json_object_get(in, "mode"));
    json_t *domains = json_object_get(in, "allowedDomains"), *d;
    size_t i;
    bool ok = true;

    if (!mode || strcmp(mode, "custom") != 0) {
        out = mode ? json_pack("{s:s}", "mode", mode) : NULL;
        json_decref(in);
        return out;
    }
    rules = json_object_get(in, "injectionRules");
    allow = json_array_size(rules) ? json_object() : json_array();
    ok = allow != NULL;
    json_array_foreach(domains, i, d) {
        if (!ok)
            break;
        ok = json_is_array(allow) ? json_array_append(allow, d) == 0
                                  : json_object_set_new(allow, json_string_value(d), json_array()) == 0;
    }
    json_array_foreach(rules, i, rule) {
        const char *dom = json_string_value(json_object_get(rule, "domain"));
        json_t *list = dom ? json_object_get(allow, dom) : NULL, *r2;
        if (!ok)
            break;
        if (!json_is_array(list)) {
            ok = false; /* a rule for a domain the policy does not allow */
            break;
        }
        r2 = json_pack("{s:[{s:O}]}", "transform", "headers", json_object_get(rule, "headers"));
        if (r2 && json_object_get(rule, "match"))
            json_object_set(r2, "match", json_object_get(rule, "match"));
        ok = r2 && json_array_append_new(list, r2) == 0;
    }
    if (ok && (json_object_get(in, "allowedCIDRs") || json_object_get(in, "deniedCIDRs"))) {
        sub = json_object();
        ok = sub && (!json_object_get(in, "allowedCIDRs") ||
                     json_object_set(sub, "allow", json_object_get(in, "allowedCIDRs")) == 0) &&
             (!json_object_get(in, "deniedCIDRs") || json_object_set(sub, "deny", json_object_get(in, "deniedCIDRs")) == 0);
    }
    if (ok)
        out = json_object();
    if (out && (json_object_set_new(out, "allow", allow) < 0 || (sub && json_object_set_new(out, "subnets", sub) < 0))) {
        json_decref(out);
        out = NULL;
    } else if (!out) {
        json_decref(allow);
        json_decref(sub);
    }
    json_decref(in);
    return out;
}

static sbx_status v2_check_policy(const char *json, sbx__err *err)
{
    sbx_status st = sbx__api_check_policy(json, err);
    json_t *p;
    if (st != SBX_OK)
        return st;
    if ((p = policy_v2(json)) != NULL) {
        json_decref(p);
        return SBX_OK;
    }
    return sbx__err_set(err, SBX_E_PARSE,
                        "network policy: an injection rule's domain must be in allowedDomains (the 2.x protocol "
                        "allows every domain it has rules for)");
}

static sbx_status v2_create_sandbox(struct sbx__api_req *r, const struct sbx__create_spec *s)
{
    json_t *o = sbx__pr_create_object(s);
    bool ok = o != NULL, runtime = o && json_object_get(o, "runtime");
    if (ok && s->policy_json) {
        json_t *p = policy_v2(s->policy_json);
        ok = p && json_object_set_new(o, "networkPolicy", p) == 0;
    }
    ok = ok && sbx__pr_set_str(o, "name", s->name) == 0 &&
         json_object_set_new(o, "persistent", json_boolean(s->persistent)) == 0;
    if (!ok) {
        json_decref(o);
        memset(r, 0, sizeof *r);
        return SBX_E_NOMEM;
    }
    /* A runtime goes to /v2; without one (the default image, or a
     * snapshot source) to /v3, as the SDK chooses. */
    return sbx__pr_make(r, "POST", sbx__strdup(runtime ? "/v2/sandboxes" : "/v3/sandboxes"), sbx__pr_dump(o), true);
}

static sbx_status v2_get_sandbox(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "GET", session_path(id, NULL, NULL, NULL), NULL, false);
}

static sbx_status v2_stop_sandbox(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "POST", session_path(id, NULL, NULL, "/stop"), NULL, false);
}

static sbx_status v2_extend_timeout(struct sbx__api_req *r, const char *id, int64_t ms)
{
    return sbx__pr_make(r, "POST", session_path(id, NULL, NULL, "/extend-timeout"), sbx__pr_int_body("duration", ms),
                        true);
}

static sbx_status v2_update_network_policy(struct sbx__api_req *r, const char *id, const char *policy_json)
{
    return sbx__pr_make(r, "POST", session_path(id, NULL, NULL, "/network-policy"),
                        sbx__pr_dump(policy_v2(policy_json)), true);
}

/* A cursor list: project, limit and cursor (since and until are not in
 * this protocol; the caller refuses them first). */
static sbx_status list_named(struct sbx__api_req *r, const char *root, const char *project, const char *name,
                             size_t limit, const char *cursor)
{
    sbx__buf p = SBX__BUF_INIT;
    sbx_status st = sbx__buf_puts(&p, root);
    char sep = '?';
    if (project && st == SBX_OK) {
        st = sbx__buf_puts(&p, "?project=");
        sep = '&';
        if (st == SBX_OK)
            st = sbx__api_escape(&p, project);
    }
    if (name && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%cname=", sep);
        sep = '&';
        if (st == SBX_OK)
            st = sbx__api_escape(&p, name);
    }
    if (limit && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%climit=%zu", sep, limit);
        sep = '&';
    }
    if (cursor && st == SBX_OK) {
        st = sbx__buf_printf(&p, "%ccursor=", sep);
        if (st == SBX_OK)
            st = sbx__api_escape(&p, cursor);
    }
    if (st != SBX_OK) {
        sbx__buf_free(&p);
        memset(r, 0, sizeof *r);
        return SBX_E_NOMEM;
    }
    return sbx__pr_make(r, "GET", sbx__buf_detach(&p, NULL), NULL, false);
}

static sbx_status list(struct sbx__api_req *r, const char *root, const char *project, size_t limit,
                       const char *cursor)
{
    return list_named(r, root, project, NULL, limit, cursor);
}

static sbx_status v2_list_sessions(struct sbx__api_req *r, const char *project, const char *name, size_t limit,
                                   const char *cursor)
{
    return list_named(r, "/v2/sandboxes/sessions", project, name, limit, cursor);
}

static sbx_status v2_list_sandboxes(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                    int64_t until, const char *cursor)
{
    (void)since;
    (void)until;
    return list(r, "/v2/sandboxes", project, limit, cursor);
}

static sbx_status v2_list_snapshots(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                    int64_t until, const char *cursor)
{
    (void)since;
    (void)until;
    return list(r, SNAPSHOTS, project, limit, cursor);
}

static sbx_status v2_create_snapshot(struct sbx__api_req *r, const char *sandbox_id, int64_t expiration_ms)
{
    /* Always a body: a request that must not run twice is sent through a
     * reader libcurl cannot replay (engine.c). */
    char *body = expiration_ms >= 0 ? sbx__pr_int_body("expiration", expiration_ms) : sbx__strdup("{}");
    return sbx__pr_make(r, "POST", session_path(sandbox_id, NULL, NULL, "/snapshot"), body, true);
}

static sbx_status v2_get_snapshot(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "GET", snapshot_path(id), NULL, false);
}

static sbx_status v2_delete_snapshot(struct sbx__api_req *r, const char *id)
{
    return sbx__pr_make(r, "DELETE", snapshot_path(id), NULL, false);
}

static sbx_status v2_mkdir(struct sbx__api_req *r, const char *sandbox_id, const char *path)
{
    return sbx__pr_make(r, "POST", session_path(sandbox_id, NULL, NULL, "/fs/mkdir"), sbx__pr_path_body(path), true);
}

static sbx_status v2_write_files(struct sbx__api_req *r, const char *sandbox_id)
{
    sbx_status st = sbx__pr_make(r, "POST", session_path(sandbox_id, NULL, NULL, "/fs/write"), NULL, false);
    if (st == SBX_OK) {
        r->content_type = "application/gzip";
        r->header = "x-cwd: /";
    }
    return st;
}

static sbx_status v2_read_file(struct sbx__api_req *r, const char *sandbox_id, const char *path)
{
    return sbx__pr_make(r, "POST", session_path(sandbox_id, NULL, NULL, "/fs/read"), sbx__pr_path_body(path), true);
}

/* 3.x takes only application/octet-stream as file data (parameters
 * allowed): an HTML error page or a JSON body from a proxy that answers
 * 200 is not the file. Media types are case-insensitive. */
static sbx_status v2_check_file_type(const char *content_type, long http, sbx__err *err)
{
    const char *t = content_type ? content_type + strspn(content_type, " \t") : NULL;
    if (t && strncasecmp(t, "application/octet-stream", 24) == 0 && strchr(";  \t", t[24]))
        return SBX_OK; /* that type exactly, then its parameters if any (strchr finds the NUL too) */
    if (!content_type || !content_type[0])
        return sbx__err_set(err, SBX_E_PROTOCOL,
                            "read file: the server answered HTTP %ld without a Content-Type, not "
                            "application/octet-stream: not the file's bytes",
                            http);
    return sbx__err_set(err, SBX_E_PROTOCOL,
                        "read file: the server answered HTTP %ld with Content-Type '%.100s', not "
                        "application/octet-stream: not the file's bytes",
                        http, content_type);
}

static sbx_status v2_run_command(struct sbx__api_req *r, const char *sandbox_id, const sbx__strlist *argv,
                               const char *cwd, const sbx__strlist *env, bool sudo, bool wait, int64_t timeout_ms)
{
    /* Waited: "logs" puts the output in the stream, between the command
     * lines, as the 3.x SDKs ask (they never read /logs for it). */
    json_t *o = sbx__pr_run_object(argv, cwd, env, sudo, wait, timeout_ms);
    if (o && wait && json_object_set_new(o, "logs", json_true()) != 0) {
        json_decref(o);
        o = NULL;
    }
    return sbx__pr_make(r, "POST", session_path(sandbox_id, "/cmd", NULL, NULL), sbx__pr_dump(o), true);
}

static sbx_status v2_get_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", session_path(sandbox_id, "/cmd/", cmd_id, NULL), NULL, false);
}

static sbx_status v2_wait_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", session_path(sandbox_id, "/cmd/", cmd_id, "?wait=true"), NULL, false);
}

static sbx_status v2_command_logs(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id)
{
    return sbx__pr_make(r, "GET", session_path(sandbox_id, "/cmd/", cmd_id, "/logs"), NULL, false);
}

static sbx_status v2_kill_command(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id, int signal)
{
    return sbx__pr_make(r, "POST", session_path(sandbox_id, "/cmd/", cmd_id, "/kill"),
                        sbx__pr_int_body("signal", signal), true);
}

/* /v2/sandboxes/NAME?projectId=P[&resume=true] */
static char *named_path(const char *project, const char *name, bool resume)
{
    sbx__buf p = SBX__BUF_INIT;
    if (sbx__buf_puts(&p, "/v2/sandboxes/") != SBX_OK || sbx__api_escape(&p, name) != SBX_OK ||
        (project && (sbx__buf_puts(&p, "?projectId=") != SBX_OK || sbx__api_escape(&p, project) != SBX_OK)) ||
        (resume && sbx__buf_puts(&p, project ? "&resume=true" : "?resume=true") != SBX_OK)) {
        sbx__buf_free(&p);
        return NULL;
    }
    return sbx__buf_detach(&p, NULL);
}

static sbx_status v2_get_named(struct sbx__api_req *r, const char *project, const char *name, bool resume)
{
    return sbx__pr_make(r, "GET", named_path(project, name, resume), NULL, false);
}

static sbx_status v2_delete_named(struct sbx__api_req *r, const char *project, const char *name)
{
    return sbx__pr_make(r, "DELETE", named_path(project, name, false), NULL, false);
}

/* The settings of sbx_sandbox_update() in the PATCH body the 2.x SDKs
 * send (update): persistent, timeout_ms -> timeout, vcpus -> resources
 * (memory 2048 MB each, as the SDK computes it), ports, network_policy (API
 * form) -> networkPolicy (the 2.x shape), snapshot_expiration_ms ->
 * snapshotExpiration, tags. */
static sbx_status update_body(json_t *in, json_t *out, struct sbx__update_info *u, sbx__err *err)
{
    const char *k;
    json_t *v;
    /* k drives the iteration (jansson finds the next key from it): the
     * key sent is `key`. */
    json_object_foreach(in, k, v) {
        const char *key = k;
        json_t *set = NULL;
        if (strcmp(k, "persistent") == 0) {
            if (!json_is_boolean(v))
                return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: persistent must be true or false");
            set = json_incref(v);
        } else if (strcmp(k, "timeout_ms") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) <= 0)
                return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: timeout_ms must be milliseconds > 0");
            u->timeout_ms = json_integer_value(v);
            set = json_integer(u->timeout_ms);
            key = "timeout";
        } else if (strcmp(k, "vcpus") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 64)
                return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: vcpus must be from 1 to 64");
            set = json_pack("{s:I,s:I}", "vcpus", json_integer_value(v), "memory", json_integer_value(v) * 2048);
            key = "resources";
        } else if (strcmp(k, "ports") == 0) {
            size_t i;
            json_t *p;
            if (!json_is_array(v) || json_array_size(v) > SBX__MAX_PORTS)
                return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: ports must be a list of at most %d ports",
                                    SBX__MAX_PORTS);
            json_array_foreach(v, i, p) {
                if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 65535)
                    return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: ports[%zu] must be from 1 to 65535", i);
                for (size_t k2 = 0; k2 < i; k2++)
                    if (json_integer_value(json_array_get(v, k2)) == json_integer_value(p))
                        return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: ports[%zu] repeats port %lld", i,
                                            (long long)json_integer_value(p));
            }
            set = json_incref(v);
        } else if (strcmp(k, "network_policy") == 0) {
            sbx_status st;
            if (!json_is_object(v))
                return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: network_policy must be a policy object");
            if (!(u->policy_json = json_dumps(v, JSON_COMPACT)))
                return sbx__err_nomem(err);
            if ((st = v2_check_policy(u->policy_json, err)) != SBX_OK)
                return st;
            set = policy_v2(u->policy_json);
            key = "networkPolicy";
        } else if (strcmp(k, "snapshot_expiration_ms") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 0)
                return sbx__err_set(err, SBX_E_INVALID_ARG,
                                    "settings: snapshot_expiration_ms must be milliseconds (0: never)");
            set = json_incref(v);
            key = "snapshotExpiration";
        } else if (strcmp(k, "tags") == 0) {
            const char *t;
            json_t *tv;
            if (!json_is_object(v) || json_object_size(v) > 5)
                return sbx__err_set(err, SBX_E_INVALID_ARG,
                                    "settings: tags must be an object of at most 5 strings ({} removes them)");
            json_object_foreach(v, t, tv)
                if (!json_is_string(tv))
                    return sbx__err_set(err, SBX_E_INVALID_ARG, "settings: tags.%s must be a string", t);
            set = json_incref(v);
        } else {
            return sbx__err_set(err, SBX_E_INVALID_ARG,
                                "settings: unknown key '%s' (persistent, timeout_ms, vcpus, ports, network_policy, "
                                "snapshot_expiration_ms, tags)", k);
        }
        if (!set || json_object_set_new(out, key, set) != 0)
            return sbx__err_nomem(err);
    }
    return SBX_OK;
}

static sbx_status v2_update_named(struct sbx__api_req *r, const char *project, const char *name, const char *settings,
                                  struct sbx__update_info *u, sbx__err *err)
{
    json_error_t je;
    json_t *in = json_loads(settings, JSON_REJECT_DUPLICATES, &je), *out = json_object();
    sbx_status st;

    memset(r, 0, sizeof *r);
    memset(u, 0, sizeof *u);
    if (!out)
        st = sbx__err_nomem(err);
    else if (!json_is_object(in))
        st = sbx__err_set(err, SBX_E_PARSE, "settings: not a JSON object%s%s", in ? "" : ": ", in ? "" : je.text);
    else if (json_object_size(in) == 0)
        st = sbx__err_set(err, SBX_E_INVALID_ARG, "settings: nothing to change");
    else
        st = update_body(in, out, u, err);
    if (st == SBX_OK) {
        char *body = sbx__pr_dump(out); /* takes out */
        out = NULL;
        if ((st = sbx__pr_make(r, "PATCH", named_path(project, name, false), body, true)) != SBX_OK)
            sbx__err_nomem(err);
    }
    if (st != SBX_OK && u->policy_json) {
        /* jansson's; injection rules hold credentials */
        sbx__wipe(u->policy_json, strlen(u->policy_json));
        free(u->policy_json);
        u->policy_json = NULL;
    } else if (u->policy_json) {
        /* handed to the caller, who frees it with sbx__free_secret */
        char *copy = sbx__strdup(u->policy_json);
        sbx__wipe(u->policy_json, strlen(u->policy_json));
        free(u->policy_json);
        if (!(u->policy_json = copy)) {
            sbx__api_req_free(r);
            st = sbx__err_nomem(err);
        }
    }
    json_decref(in);
    json_decref(out);
    return st;
}

/* ---- answers ---- */

static sbx_status v2_parse_named(const char *body, size_t len, struct sbx__sandbox_info *out, bool *has_routes,
                                 sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err), *sb, *p, *routes;
    sbx_status st;
    if (!j)
        return err->code;
    sb = json_object_get(j, "sandbox");
    p = json_object_get(sb, "persistent");
    routes = json_object_get(j, "routes");
    out->persistent = json_is_boolean(p) ? json_is_true(p) : -1;
    *has_routes = json_is_array(routes);
    st = json_is_object(sb) ? sbx__pr_fill_routes(routes, out, err)
                            : sbx__err_set(err, SBX_E_PROTOCOL, "sandbox: missing or not an object");
    json_decref(j);
    return st;
}

static sbx_status v2_parse_sandbox(const char *body, size_t len, struct sbx__sandbox_info *out, sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st;
    if (!j)
        return err->code;
    st = sbx__pr_fill_sandbox(json_object_get(j, "session"), "session", json_object_get(j, "routes"), out, err);
    if (st == SBX_OK)
        st = sbx__pr_opt_str(json_object_get(j, "sandbox"), "name", &out->name, err);
    /* The name goes into later paths (resume, update, delete). */
    if (st == SBX_OK && out->name && (!*out->name || strcmp(out->name, ".") == 0 || strcmp(out->name, "..") == 0))
        st = sbx__err_set(err, SBX_E_PROTOCOL, "sandbox.name: '%s' is not a name", out->name);
    if (st == SBX_OK && json_is_boolean(json_object_get(json_object_get(j, "sandbox"), "persistent")))
        out->persistent = json_is_true(json_object_get(json_object_get(j, "sandbox"), "persistent"));
    if (st == SBX_OK && !(out->json = sbx__strndup(body, len)))
        st = sbx__err_nomem(err);
    json_decref(j);
    return st;
}

static sbx_status v2_parse_snapshot(const char *body, size_t len, struct sbx__snapshot_info *sn,
                                    struct sbx__sandbox_info *sbx, sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st;
    if (!j)
        return err->code;
    st = sbx__pr_fill_snapshot(json_object_get(j, "snapshot"), "sourceSessionId", sn, err);
    if (st == SBX_OK && !(sn->json = sbx__strndup(body, len)))
        st = sbx__err_nomem(err);
    if (st == SBX_OK && sbx && json_object_get(j, "session"))
        st = sbx__pr_fill_sandbox(json_object_get(j, "session"), "session", NULL, sbx, err);
    json_decref(j);
    return st;
}

/* The same request for another session: its path's session segment
 * replaced (automatic resume repeats an operation on the new session). */
static sbx_status v2_rebase(const char *url, const char *old_id, const char *new_id, char **out)
{
    sbx__buf needle = SBX__BUF_INIT, o = SBX__BUF_INIT;
    const char *at = NULL, *p;
    sbx_status st = SBX_E_NOMEM;

    *out = NULL;
    if (sbx__buf_puts(&needle, SESSIONS) != SBX_OK || sbx__api_escape(&needle, old_id) != SBX_OK)
        goto done;
    for (p = strstr(url, needle.data); p; p = strstr(p + 1, needle.data)) {
        char c = p[needle.len];
        if (c == '/' || c == '?' || c == '\0')
            at = p;
    }
    if (!at) {
        st = SBX_E_INVALID_ARG;
        goto done;
    }
    if (sbx__buf_append(&o, url, (size_t)(at - url)) != SBX_OK || sbx__buf_puts(&o, SESSIONS) != SBX_OK ||
        sbx__api_escape(&o, new_id) != SBX_OK || sbx__buf_puts(&o, at + needle.len) != SBX_OK)
        goto done;
    *out = sbx__buf_detach(&o, NULL);
    st = *out ? SBX_OK : SBX_E_NOMEM;
done:
    sbx__buf_free(&needle);
    sbx__buf_free(&o);
    return st;
}

const struct sbx__proto sbx__proto_v2 = {
    .name = "v2",
    .max_ports = SBX__MAX_PORTS,
    .inline_logs = true,
    .check_policy = v2_check_policy,
    .create_sandbox = v2_create_sandbox,
    .get_sandbox = v2_get_sandbox,
    .stop_sandbox = v2_stop_sandbox,
    .extend_timeout = v2_extend_timeout,
    .update_network_policy = v2_update_network_policy,
    .list_sandboxes = v2_list_sandboxes,
    .list_snapshots = v2_list_snapshots,
    .list_sessions = v2_list_sessions,
    .create_snapshot = v2_create_snapshot,
    .get_snapshot = v2_get_snapshot,
    .delete_snapshot = v2_delete_snapshot,
    .mkdir = v2_mkdir,
    .write_files = v2_write_files,
    .read_file = v2_read_file,
    .check_file_type = v2_check_file_type,
    .run_command = v2_run_command,
    .get_command = v2_get_command,
    .wait_command = v2_wait_command,
    .command_logs = v2_command_logs,
    .kill_command = v2_kill_command,
    .get_named = v2_get_named,
    .delete_named = v2_delete_named,
    .rebase = v2_rebase,
    .update_named = v2_update_named,
    .parse_named = v2_parse_named,
    .parse_sandbox = v2_parse_sandbox,
    .parse_snapshot = v2_parse_snapshot,
};
