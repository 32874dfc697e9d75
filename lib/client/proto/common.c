/* SPDX-License-Identifier: MIT */
/*
 * api, common: what both protocol versions share: bodies built as
 * JSON.stringify would build them (absent fields omitted, never null),
 * answers checked for the fields and types the protocol makes required (a
 * server that breaks it gives SBX_E_PROTOCOL with the field named, not a
 * crash or a silent zero), log lines, error bodies, escaping.
 */
#include "util/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client/proto/common.h"
#include "policy/netpolicy_sdk.h"
#include "util/str.h"

char *sbx__pr_dump(json_t *o)
{
    char *text, *out;
    if (!o)
        return NULL;
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return NULL;
    /* Callers free with sbx__free: copy out of jansson's allocator. */
    out = sbx__strdup(text);
    sbx__wipe(text, strlen(text)); /* bodies hold env values and git credentials */
    free(text);
    return out;
}

int sbx__pr_set_str(json_t *o, const char *k, const char *v)
{
    return v ? json_object_set_new(o, k, json_string(v)) : 0;
}

json_t *sbx__pr_env_object(const sbx__strlist *env)
{
    json_t *o = json_object();
    for (size_t i = 0; o && env && i < env->n; i++) {
        const char *kv = env->v[i], *eq = strchr(kv, '=');
        if (!eq) /* sbx__env_set never stores one */
            continue;
        if (json_object_setn_new(o, kv, (size_t)(eq - kv), json_string(eq + 1)) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

json_t *sbx__pr_create_object(const struct sbx__create_spec *s)
{
    json_t *o = json_object(), *ports = json_array();
    bool ok = o && ports;

    for (size_t i = 0; ok && i < s->nports; i++)
        ok = json_array_append_new(ports, json_integer(s->ports[i])) == 0;
    /* The SDK always sends projectId (when known) and ports. */
    ok = ok && sbx__pr_set_str(o, "projectId", s->project) == 0 && json_object_set(o, "ports", ports) == 0;
    json_decref(ports);
    if (ok && s->runtime && s->source != SBX__SRC_SNAPSHOT)
        ok = sbx__pr_set_str(o, "runtime", s->runtime) == 0;
    if (ok && s->timeout_ms > 0)
        ok = json_object_set_new(o, "timeout", json_integer(s->timeout_ms)) == 0;
    if (ok && s->vcpus > 0)
        ok = json_object_set_new(o, "resources", json_pack("{s:I}", "vcpus", (json_int_t)s->vcpus)) == 0;
    if (ok && s->env && s->env->n) {
        json_t *env = sbx__pr_env_object(s->env);
        ok = env && json_object_set_new(o, "env", env) == 0;
    }
    if (ok && s->policy_json) {
        json_t *p = json_loads(s->policy_json, 0, NULL);
        ok = p && json_object_set_new(o, "networkPolicy", p) == 0;
    }
    if (ok && s->source != SBX__SRC_NONE) {
        json_t *src = json_object();
        ok = src != NULL;
        if (ok && s->source == SBX__SRC_GIT) {
            ok = sbx__pr_set_str(src, "type", "git") == 0 && sbx__pr_set_str(src, "url", s->url) == 0 &&
                 sbx__pr_set_str(src, "revision", s->revision) == 0 && sbx__pr_set_str(src, "username", s->username) == 0 &&
                 sbx__pr_set_str(src, "password", s->password) == 0 &&
                 (s->depth == 0 || json_object_set_new(src, "depth", json_integer(s->depth)) == 0);
        } else if (ok && s->source == SBX__SRC_TARBALL) {
            ok = sbx__pr_set_str(src, "type", "tarball") == 0 && sbx__pr_set_str(src, "url", s->url) == 0;
        } else if (ok) {
            ok = sbx__pr_set_str(src, "type", "snapshot") == 0 && sbx__pr_set_str(src, "snapshotId", s->snapshot_id) == 0;
        }
        ok = ok && json_object_set_new(o, "source", src) == 0;
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sbx__pr_run_object(const sbx__strlist *argv, const char *cwd, const sbx__strlist *env, bool sudo, bool wait,
                           int64_t timeout_ms)
{
    json_t *o = json_object(), *args = json_array(), *envo = sbx__pr_env_object(env);
    bool ok = o && args && envo && argv->n > 0;

    for (size_t i = 1; ok && i < argv->n; i++)
        ok = json_array_append_new(args, json_string(argv->v[i])) == 0;
    ok = ok && sbx__pr_set_str(o, "command", argv->v[0]) == 0 && json_object_set(o, "args", args) == 0 &&
         json_object_set(o, "env", envo) == 0 && json_object_set_new(o, "sudo", json_boolean(sudo)) == 0 &&
         sbx__pr_set_str(o, "cwd", cwd) == 0 && (!wait || json_object_set_new(o, "wait", json_true()) == 0) &&
         (timeout_ms <= 0 || json_object_set_new(o, "timeout", json_integer(timeout_ms)) == 0);
    json_decref(args);
    json_decref(envo);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *sbx__pr_path_body(const char *path)
{
    json_t *o = json_object();
    if (!o || sbx__pr_set_str(o, "path", path) < 0) {
        json_decref(o);
        return NULL;
    }
    return sbx__pr_dump(o);
}

char *sbx__pr_int_body(const char *key, int64_t value)
{
    return sbx__pr_dump(json_pack("{s:I}", key, (json_int_t)value));
}

sbx_status sbx__api_policy_from_sdk(const char *json, char **api, sbx__err *err)
{
    json_t *j = json_loads(json, JSON_REJECT_DUPLICATES, NULL), *out = NULL;
    char why[512];
    sbx_status st;
    *api = NULL;
    if (!j || !sbx__netpolicy_is_sdk(j)) {
        json_decref(j);
        return SBX_OK; /* the API form (or not JSON: the check says so) */
    }
    if ((st = sbx__netpolicy_from_sdk(j, &out, why, sizeof why)) != SBX_OK) {
        sbx__netpolicy_wipe(j);
        json_decref(j);
        return st == SBX_E_NOMEM ? sbx__err_nomem(err) : sbx__err_set(err, st, "network policy: %s", why);
    }
    /* The header values are secrets: the text is made, then both trees
     * (which share them) and jansson's copy of the text are wiped. */
    {
        char *text = json_dumps(out, JSON_COMPACT);
        *api = text ? sbx__strdup(text) : NULL;
        if (text) {
            sbx__wipe(text, strlen(text));
            free(text);
        }
    }
    sbx__netpolicy_wipe(out);
    sbx__netpolicy_wipe(j);
    json_decref(out);
    json_decref(j);
    return *api ? SBX_OK : sbx__err_nomem(err);
}

sbx_status sbx__api_check_policy(const char *json, sbx__err *err)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    sbx_status st = SBX_OK;
    if (!j)
        return sbx__err_set(err, SBX_E_PARSE, "network policy: not JSON: %s", je.text);
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "mode")))
        st = sbx__err_set(err, SBX_E_PARSE,
                          "network policy: a JSON object with \"mode\" (allow-all, deny-all, custom)");
    json_decref(j);
    return st;
}


/* ---- requests ---- */

/* Fill r, taking path and body over; a NULL path, or a NULL body when one
 * is needed, is the failure of the call that made it. */
sbx_status sbx__pr_make(struct sbx__api_req *r, const char *method, char *path, char *body, bool has_body)
{
    memset(r, 0, sizeof *r);
    if (!path || (has_body && !body)) {
        sbx__free(path);
        sbx__free_secret(body);
        return SBX_E_NOMEM;
    }
    r->method = method;
    r->path = path;
    r->body = body;
    r->content_type = body ? "application/json" : NULL;
    return SBX_OK;
}

void sbx__api_req_free(struct sbx__api_req *r)
{
    sbx__free(r->path);
    sbx__free_secret(r->body);
    memset(r, 0, sizeof *r);
}

sbx_status sbx__api_add_team(sbx__buf *url, const char *team)
{
    if (sbx__buf_puts(url, url->data && strchr(url->data, '?') ? "&teamId=" : "?teamId=") != SBX_OK)
        return SBX_E_NOMEM;
    return sbx__api_escape(url, team);
}


/* ---- responses ------------------------------------------------------------- */

json_t *sbx__pr_load(const char *body, size_t len, sbx__err *err)
{
    json_error_t je;
    json_t *j;
    if (len == 0)
        return json_object(); /* an empty body is {} (protocol 1.1) */
    /* jansson skips a raw NUL after a number, yet the body is kept as a C
     * string (sbx_sandbox_json): it would be cut there. JSON has none. */
    if (memchr(body, '\0', len)) {
        sbx__err_set(err, SBX_E_PROTOCOL, "the server's answer is not JSON: it holds a NUL byte");
        return NULL;
    }
    j = json_loadb(body, len, 0, &je);
    if (!j)
        sbx__err_set(err, SBX_E_PROTOCOL, "the server's answer is not JSON: %s", je.text);
    else if (!json_is_object(j)) {
        json_decref(j);
        j = NULL;
        sbx__err_set(err, SBX_E_PROTOCOL, "the server's answer is not a JSON object");
    }
    return j;
}

sbx_status sbx__pr_need_str(json_t *o, const char *what, const char *key, char **out, sbx__err *err)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v)
        return sbx__err_set(err, SBX_E_PROTOCOL, "%s.%s: missing or not a string", what, key);
    /* Ids go into later paths as segments: "." and ".." would be read as
     * dot segments (the URL escaping leaves dots alone). */
    if (strcmp(key, "id") == 0 && (!*v || strcmp(v, ".") == 0 || strcmp(v, "..") == 0))
        return sbx__err_set(err, SBX_E_PROTOCOL, "%s.id: '%s' is not an id", what, v);
    *out = sbx__strdup(v);
    return *out ? SBX_OK : sbx__err_nomem(err);
}

sbx_status sbx__pr_opt_str(json_t *o, const char *key, char **out, sbx__err *err)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v)
        return SBX_OK;
    *out = sbx__strdup(v);
    return *out ? SBX_OK : sbx__err_nomem(err);
}

sbx_status sbx__pr_need_num(json_t *o, const char *what, const char *key, int64_t *out, sbx__err *err)
{
    json_t *v = json_object_get(o, key);
    double d;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return SBX_OK;
    }
    if (!json_is_real(v))
        return sbx__err_set(err, SBX_E_PROTOCOL, "%s.%s: missing or not a number", what, key);
    /* Converting a double outside int64_t's range is undefined behaviour:
     * a server's 1e300 must be refused, not cast. */
    d = json_real_value(v);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return sbx__err_set(err, SBX_E_PROTOCOL, "%s.%s: %g is out of range", what, key, d);
    *out = (int64_t)d;
    return SBX_OK;
}

sbx_status sbx__pr_fill_sandbox(json_t *s, const char *what, json_t *routes, struct sbx__sandbox_info *out, sbx__err *err)
{
    int64_t v = 0; /* sbx__pr_need_num() sets it; gcc -O3 does not see that */
    json_t *np = json_object_get(s, "networkPolicy");
    sbx_status st;

    out->persistent = -1;
    if (!json_is_object(s))
        return sbx__err_set(err, SBX_E_PROTOCOL, "%s: missing or not an object", what);
    /* A 2.x session's runtime is optional (image-based sessions). */
    if ((st = sbx__pr_need_str(s, what, "id", &out->id, err)) || (st = sbx__pr_need_str(s, what, "status", &out->status, err)) ||
        (st = strcmp(what, "session") ? sbx__pr_need_str(s, what, "runtime", &out->runtime, err)
                                      : sbx__pr_opt_str(s, "runtime", &out->runtime, err)) ||
        (st = sbx__pr_need_str(s, what, "region", &out->region, err)) ||
        (st = sbx__pr_need_num(s, what, "timeout", &out->timeout_ms, err)) ||
        (st = sbx__pr_need_num(s, what, "createdAt", &out->created_at, err)) ||
        (st = sbx__pr_opt_str(s, "sourceSnapshotId", &out->source_snapshot_id, err)) ||
        (st = sbx__pr_opt_str(s, "cwd", &out->cwd, err)))
        return st;
    if ((st = sbx__pr_need_num(s, what, "vcpus", &v, err)))
        return st;
    out->vcpus = v > 0 && v < 65536 ? (uint32_t)v : 0;
    if ((st = sbx__pr_need_num(s, what, "memory", &v, err)))
        return st;
    out->memory_mb = v > 0 && v < (1 << 30) ? (uint32_t)v : 0;
    if (json_is_object(np)) {
        char *t = json_dumps(np, JSON_COMPACT);
        out->network_policy_json = t ? sbx__strdup(t) : NULL;
        free(t);
        if (!out->network_policy_json)
            return sbx__err_nomem(err);
    }
    return sbx__pr_fill_routes(routes, out, err);
}

sbx_status sbx__pr_fill_routes(json_t *routes, struct sbx__sandbox_info *out, sbx__err *err)
{
    size_t i;
    json_t *e;
    json_array_foreach(routes, i, e) {
        int64_t port = 0;
        const char *url = json_string_value(json_object_get(e, "url"));
        if (out->nroutes == SBX__MAX_PORTS)
            break;
        if (!url || sbx__pr_need_num(e, "route", "port", &port, err) != SBX_OK)
            return sbx__err_set(err, SBX_E_PROTOCOL, "routes[%zu]: needs url and port", i);
        out->routes[out->nroutes].port = (uint32_t)port;
        out->routes[out->nroutes].url = sbx__strdup(url);
        if (!out->routes[out->nroutes++].url)
            return sbx__err_nomem(err);
    }
    return SBX_OK;
}

sbx_status sbx__pr_fill_snapshot(json_t *o, const char *source_key, struct sbx__snapshot_info *sn, sbx__err *err)
{
    sbx_status st;
    if (!json_is_object(o))
        return sbx__err_set(err, SBX_E_PROTOCOL, "snapshot: missing or not an object");
    sn->expires_at = 0;
    if ((st = sbx__pr_need_str(o, "snapshot", "id", &sn->id, err)) ||
        (st = sbx__pr_need_str(o, "snapshot", "status", &sn->status, err)) ||
        (st = sbx__pr_need_str(o, "snapshot", source_key, &sn->source_sandbox_id, err)) ||
        (st = sbx__pr_need_num(o, "snapshot", "sizeBytes", &sn->size_bytes, err)) ||
        (st = sbx__pr_need_num(o, "snapshot", "createdAt", &sn->created_at, err)))
        return st;
    /* Optional: absent, null or not a usable number means never. Checked
     * on a scratch error: a success must not leave one recorded. */
    if (json_object_get(o, "expiresAt")) {
        sbx__err ignored = {0};
        if (sbx__pr_need_num(o, "snapshot", "expiresAt", &sn->expires_at, &ignored) != SBX_OK)
            sn->expires_at = 0;
        sbx__err_free(&ignored);
    }
    return SBX_OK;
}

sbx_status sbx__api_parse_command(const char *body, size_t len, struct sbx__command_info *out,
                                  sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err), *c, *ec;
    sbx_status st;
    if (!j)
        return err->code;
    c = json_object_get(j, "command");
    if (!json_is_object(c)) {
        json_decref(j);
        return sbx__err_set(err, SBX_E_PROTOCOL, "command: missing or not an object");
    }
    sbx__free(out->id);
    out->id = NULL;
    st = sbx__pr_need_str(c, "command", "id", &out->id, err);
    if (st == SBX_OK)
        st = sbx__pr_need_num(c, "command", "startedAt", &out->started_at, err);
    ec = json_object_get(c, "exitCode");
    if (st == SBX_OK) {
        if (json_is_integer(ec))
            out->exit_code = (int)json_integer_value(ec);
        else if (json_is_null(ec))
            out->exit_code = -1;
        else
            st = sbx__err_set(err, SBX_E_PROTOCOL, "command.exitCode: missing, or neither a number nor null");
    }
    json_decref(j);
    return st;
}

sbx_status sbx__api_check_list(const char *body, size_t len, enum sbx__api_list what, sbx__err *err)
{
    const char *key = what == SBX__API_SANDBOXES ? "sandboxes" : what == SBX__API_SNAPSHOTS ? "snapshots" : "sessions";
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st = SBX_OK;
    if (!j)
        return err->code;
    if (!json_is_array(json_object_get(j, key)) || !json_is_object(json_object_get(j, "pagination")))
        st = sbx__err_set(err, SBX_E_PROTOCOL, "list: needs \"%s\" (an array) and \"pagination\"", key);
    json_decref(j);
    return st;
}

sbx_status sbx__api_check_deleted(const char *body, size_t len, sbx__err *err)
{
    json_t *j = sbx__pr_load(body, len, err);
    sbx_status st = SBX_OK;
    if (!j)
        return err->code;
    if (!json_is_string(json_object_get(json_object_get(j, "sandbox"), "name")))
        st = sbx__err_set(err, SBX_E_PROTOCOL, "delete: needs \"sandbox\" with its \"name\"");
    json_decref(j);
    return st;
}

sbx_status sbx__api_parse_log(const char *line, size_t len, int *stream, sbx__buf *data, sbx__err *err)
{
    json_error_t je;
    json_t *j = json_loadb(line, len, JSON_ALLOW_NUL, &je), *d;
    const char *s;
    sbx_status st = SBX_OK;

    sbx__buf_clear(data);
    if (!json_is_object(j)) {
        json_decref(j);
        return sbx__err_set(err, SBX_E_PROTOCOL, "a log line is not a JSON object");
    }
    /* A command line, as the SDKs tell one: its "command" is set. */
    d = json_object_get(j, "command");
    if (d && !json_is_null(d) && !json_is_false(d)) {
        json_decref(j);
        *stream = SBX__LOG_COMMAND;
        return SBX_OK;
    }
    s = json_string_value(json_object_get(j, "stream"));
    d = json_object_get(j, "data");
    if (s && (strcmp(s, "stdout") == 0 || strcmp(s, "stderr") == 0) && json_is_string(d)) {
        *stream = s[3] == 'o' ? SBX__LOG_STDOUT : SBX__LOG_STDERR;
        if (sbx__buf_append(data, json_string_value(d), json_string_length(d)) != SBX_OK)
            st = sbx__err_nomem(err);
    } else if (s && strcmp(s, "error") == 0 && json_is_object(d)) {
        const char *code = json_string_value(json_object_get(d, "code"));
        const char *msg = json_string_value(json_object_get(d, "message"));
        *stream = SBX__LOG_ERROR;
        if (sbx__buf_printf(data, "%s: %s", code ? code : "error", msg ? msg : "") != SBX_OK)
            st = sbx__err_nomem(err);
    } else {
        st = sbx__err_set(err, SBX_E_PROTOCOL, "a log line has no valid stream/data");
    }
    json_decref(j);
    return st;
}

void sbx__api_error_text(const char *body, size_t len, char *out, size_t cap)
{
    json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL, *e = json_object_get(j, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code || msg) {
        snprintf(out, cap, "%s%s%s", code ? code : "", code && msg ? ": " : "", msg ? msg : "");
    } else {
        /* Not the usual shape: the first line of what came, printable only. */
        size_t n = 0;
        for (size_t i = 0; i < len && n + 1 < cap && n < 200; i++) {
            unsigned char c = (unsigned char)body[i];
            if (c == '\n')
                break;
            out[n++] = c >= 0x20 && c != 0x7f ? (char)c : '?';
        }
        out[n] = '\0';
    }
    json_decref(j);
}

bool sbx__api_error_code(const char *body, size_t len, char *out, size_t cap)
{
    json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
    bool ok = code && *code && strlen(code) < cap && sbx__utf8_valid(code, strlen(code));
    if (ok)
        memcpy(out, code, strlen(code) + 1);
    json_decref(j);
    return ok;
}

sbx_status sbx__api_status_for(long http)
{
    switch (http) {
    case 400: return SBX_E_INVALID_ARG;
    case 401:
    case 403: return SBX_E_AUTH;
    case 404: return SBX_E_NOT_FOUND;
    case 409:
    case 410: return SBX_E_CONFLICT;
    case 413: return SBX_E_BUDGET_EXCEEDED;
    case 429: return SBX_E_RATE_LIMITED;
    default: return SBX_E_HTTP;
    }
}

void sbx__sandbox_info_free(struct sbx__sandbox_info *i)
{
    sbx__free(i->id);
    sbx__free(i->status);
    sbx__free(i->runtime);
    sbx__free(i->region);
    sbx__free(i->source_snapshot_id);
    sbx__free(i->cwd);
    sbx__free(i->network_policy_json);
    sbx__free(i->json);
    sbx__free(i->name);
    for (size_t k = 0; k < i->nroutes; k++)
        sbx__free(i->routes[k].url);
    memset(i, 0, sizeof *i);
}

void sbx__command_info_free(struct sbx__command_info *i)
{
    sbx__free(i->id);
    memset(i, 0, sizeof *i);
}

void sbx__snapshot_info_free(struct sbx__snapshot_info *i)
{
    sbx__free(i->id);
    sbx__free(i->status);
    sbx__free(i->source_sandbox_id);
    sbx__free(i->json);
    memset(i, 0, sizeof *i);
}

sbx_status sbx__api_escape(sbx__buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~') {
            if (sbx__buf_putc(b, (char)c) != SBX_OK)
                return SBX_E_NOMEM;
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            if (sbx__buf_append(b, e, 3) != SBX_OK)
                return SBX_E_NOMEM;
        }
    }
    return SBX_OK;
}
