/* SPDX-License-Identifier: MIT */
/*
 * api: the whole protocol surface. What each operation sends (method, path
 * with its query, body, any header) and how each answer reads, behind
 * prototypes that name no protocol detail: lib/client/ above this header
 * knows no path, field or parameter name. Each version is a sibling file
 * filling one struct sbx__proto (v1.c: the /v1 routes of the 1.x SDKs;
 * v2.c: the sessions and named sandboxes of the 2.x/3.x SDKs); what does not
 * differ between them is here, in common.c. A client picks one at run time.
 */
#ifndef SBX_API_H
#define SBX_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

/* The most ports any version lets a sandbox publish (the 2.x docs' 15);
 * each version's own limit is its max_ports. */
#define SBX__MAX_PORTS 15

struct sbx__route {
    uint32_t port;
    char *url;
};

struct sbx__sandbox_info {
    char *id, *status, *runtime, *region, *source_snapshot_id, *cwd;
    char *name;             /* 2.x: the named sandbox the session belongs to, when the answer says */
    int persistent;         /* 2.x: its stop keeps the files (1), not (0), not said (-1) */
    int64_t timeout_ms, created_at;
    uint32_t vcpus, memory_mb;
    char *network_policy_json;
    struct sbx__route routes[SBX__MAX_PORTS];
    size_t nroutes;
    char *json;             /* the response as received */
};

struct sbx__command_info {
    char *id;
    int64_t started_at;
    int exit_code;          /* -1: null (running) */
};

struct sbx__snapshot_info {
    char *id, *status, *source_sandbox_id;
    int64_t size_bytes, created_at, expires_at; /* expires_at 0: never */
    char *json;
};

enum sbx__source { SBX__SRC_NONE, SBX__SRC_GIT, SBX__SRC_TARBALL, SBX__SRC_SNAPSHOT };

struct sbx__create_spec {
    const char *project, *runtime, *policy_json;
    int64_t timeout_ms;
    uint32_t vcpus;
    const uint32_t *ports;
    size_t nports;
    const sbx__strlist *env;    /* KEY=VALUE */
    enum sbx__source source;
    const char *url, *revision, *username, *password, *snapshot_id;
    uint32_t depth;
    /* 2.x: the sandbox's name (NULL: the server makes one up) and whether
     * its stop keeps the files (the library's sandboxes do not unless asked). */
    const char *name;
    bool persistent;
};

/* What an update of a named sandbox also changes in its running session
 * (sbx_sandbox_update): filled by update_named. */
struct sbx__update_info {
    int64_t timeout_ms;   /* the new default lifetime, 0 when not given */
    char *policy_json;    /* the new network policy (API form), NULL when not given; the caller frees */
};

/* One request of an operation: what the engine sends. Builders fill it
 * and return SBX_OK, or SBX_E_NOMEM with r left empty. A string that is not
 * UTF-8 fails too: the public setters refuse those first, so callers may
 * report any failure as out of memory. Ids are percent-escaped here. */
struct sbx__api_req {
    const char *method;         /* static */
    char *path;                 /* from the API root, with its query string */
    char *body;                 /* JSON, or NULL for none; wiped when freed (env values, credentials) */
    const char *content_type;   /* of body, or of the body the caller streams (write files); NULL: none */
    const char *header;         /* one more header line the operation needs ("Name: value"), or NULL */
};
void sbx__api_req_free(struct sbx__api_req *r);

/* One protocol version: the builders of its requests and the readers of
 * the answers whose shape differs. */
enum sbx__api_list { SBX__API_SANDBOXES, SBX__API_SNAPSHOTS, SBX__API_SESSIONS };
struct sbx__proto {
    const char *name; /* "v1", "v2" */
    size_t max_ports; /* a sandbox's published ports: v1 4, v2 15 (the SDKs' docs) */
    /* A waited command's stream carries its output too, between its two
     * command lines (run_command asks for it), as lines sbx__api_parse_log
     * reads: the 3.x SDKs read nothing else. v1: only the two lines. */
    bool inline_logs;
    /* A network policy given by a caller (the API form, with "mode") that
     * this version can send: SBX_OK, or SBX_E_PARSE with err set. */
    sbx_status (*check_policy)(const char *json, sbx__err *err);
    /* Sandboxes (v2: sessions, named sandboxes on create). */
    sbx_status (*create_sandbox)(struct sbx__api_req *r, const struct sbx__create_spec *s);
    sbx_status (*get_sandbox)(struct sbx__api_req *r, const char *id);
    sbx_status (*stop_sandbox)(struct sbx__api_req *r, const char *id);
    sbx_status (*extend_timeout)(struct sbx__api_req *r, const char *id, int64_t ms);
    /* policy_json: checked by sbx__api_check_policy. */
    sbx_status (*update_network_policy)(struct sbx__api_req *r, const char *id, const char *policy_json);
    /* Lists: project NULL for all, limit 0 / since -1 / until -1 / cursor
     * NULL for the server's default (v1 pages by since/until, 2.x by
     * cursor: each ignores the other's). Answers are checked by
     * sbx__api_check_list. */
    sbx_status (*list_sandboxes)(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                 int64_t until, const char *cursor);
    sbx_status (*list_snapshots)(struct sbx__api_req *r, const char *project, size_t limit, int64_t since,
                                 int64_t until, const char *cursor);
    /* The sessions of the named sandbox name (NULL: of all), by cursor;
     * NULL in a version without sessions (v1). */
    sbx_status (*list_sessions)(struct sbx__api_req *r, const char *project, const char *name, size_t limit,
                                const char *cursor);
    /* Snapshots. expiration_ms: 0 never, -1 the server's default. */
    sbx_status (*create_snapshot)(struct sbx__api_req *r, const char *sandbox_id, int64_t expiration_ms);
    sbx_status (*get_snapshot)(struct sbx__api_req *r, const char *id);
    sbx_status (*delete_snapshot)(struct sbx__api_req *r, const char *id);
    /* Files. write files: no body here; the caller streams a gzipped tar
     * whose names are relative to the root (content_type and header say so). */
    sbx_status (*mkdir)(struct sbx__api_req *r, const char *sandbox_id, const char *path);
    sbx_status (*write_files)(struct sbx__api_req *r, const char *sandbox_id);
    sbx_status (*read_file)(struct sbx__api_req *r, const char *sandbox_id, const char *path);
    /* A 2xx answer to read_file, by its Content-Type (NULL or "": none):
     * SBX_OK when its body is the file, else SBX_E_PROTOCOL with err
     * naming what came. NULL: any 2xx body is the file (v1). */
    sbx_status (*check_file_type)(const char *content_type, long http, sbx__err *err);
    /* Commands. run: argv[0] is the program (argv->n > 0); wait: the answer
     * streams the command as started, (inline_logs: its output,) then as
     * finished (NDJSON). logs: NDJSON lines read by sbx__api_parse_log. */
    sbx_status (*run_command)(struct sbx__api_req *r, const char *sandbox_id, const sbx__strlist *argv,
                              const char *cwd, const sbx__strlist *env, bool sudo, bool wait, int64_t timeout_ms);
    sbx_status (*get_command)(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id);
    /* The same answer as get, once the command has exited. */
    sbx_status (*wait_command)(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id);
    sbx_status (*command_logs)(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id);
    sbx_status (*kill_command)(struct sbx__api_req *r, const char *sandbox_id, const char *cmd_id, int signal);
    /* 2.x only (NULL in v1): a named sandbox in project (NULL: none), and
     * with resume a running session of it, started when needed. Answered
     * like a create. */
    sbx_status (*get_named)(struct sbx__api_req *r, const char *project, const char *name, bool resume);
    /* 2.x only: delete a named sandbox (its running session stops).
     * Answered with {"sandbox"}: sbx__api_check_deleted. */
    sbx_status (*delete_named)(struct sbx__api_req *r, const char *project, const char *name);
    /* 2.x only: change a named sandbox's settings (PATCH). settings: a
     * JSON object in the library's names (sbx_sandbox_update()), checked
     * here: SBX_E_INVALID_ARG or SBX_E_PARSE with err naming the key,
     * SBX_E_NOMEM. u gets what the session must be told too. Answered
     * with {"sandbox", "routes"?}: parse_named. */
    sbx_status (*update_named)(struct sbx__api_req *r, const char *project, const char *name, const char *settings,
                               struct sbx__update_info *u, sbx__err *err);
    /* The answer of update_named: out->persistent (1, 0, -1 when not said)
     * and out->routes, *has_routes telling whether they came. */
    sbx_status (*parse_named)(const char *body, size_t len, struct sbx__sandbox_info *out, bool *has_routes,
                              sbx__err *err);
    /* 2.x only: url, a request about session old_id, sent to new_id
     * instead (automatic resume repeats it there); *out is the caller's.
     * SBX_E_INVALID_ARG when url is not about old_id, SBX_E_NOMEM. */
    sbx_status (*rebase)(const char *url, const char *old_id, const char *new_id, char **out);
    /* Answers: a sandbox (or session), a snapshot (and its sandbox when
     * one comes with it). Each checks the required fields and types. */
    sbx_status (*parse_sandbox)(const char *body, size_t len, struct sbx__sandbox_info *out, sbx__err *err);
    sbx_status (*parse_snapshot)(const char *body, size_t len, struct sbx__snapshot_info *sn,
                                 struct sbx__sandbox_info *sbx, sbx__err *err);
};
extern const struct sbx__proto sbx__proto_v1, sbx__proto_v2;

/* Scope every request to a team: appends its query parameter to url (a
 * base URL plus a path from a builder). */
sbx_status sbx__api_add_team(sbx__buf *url, const char *team);

/* A network policy given by a caller: a JSON object with a string "mode". */
sbx_status sbx__api_check_policy(const char *json, sbx__err *err);
/* A policy in the SDKs' request shape ({"allow", "subnets"}) in the API
 * form, in *api (sbx__free_secret it); *api NULL when json is not in that
 * shape. SBX_E_INVALID_ARG naming what cannot be read, SBX_E_NOMEM. */
sbx_status sbx__api_policy_from_sdk(const char *json, char **api, sbx__err *err);

/* Answers both versions share. Each checks the required fields and types. */
sbx_status sbx__api_parse_command(const char *body, size_t len, struct sbx__command_info *out,
                                  sbx__err *err);
sbx_status sbx__api_check_list(const char *body, size_t len, enum sbx__api_list what, sbx__err *err);
sbx_status sbx__api_check_deleted(const char *body, size_t len, sbx__err *err);

enum { SBX__LOG_STDOUT = 1, SBX__LOG_STDERR = 2, SBX__LOG_ERROR = 3, SBX__LOG_COMMAND = 4 };
/* One NDJSON log line into its stream and data (appended to data, which is
 * cleared first); an error line's "code: message" goes to data too. A line
 * with a command (a wait stream's command line, read by
 * sbx__api_parse_command) is SBX__LOG_COMMAND, data left empty. */
sbx_status sbx__api_parse_log(const char *line, size_t len, int *stream, sbx__buf *data, sbx__err *err);

/* "code: message" of an error body {"error":{...}}, or its first bytes. */
void sbx__api_error_text(const char *body, size_t len, char *out, size_t cap);
/* Its error.code alone: true with it in out, false when there is none. */
bool sbx__api_error_code(const char *body, size_t len, char *out, size_t cap);
/* The library status for an HTTP error status. */
sbx_status sbx__api_status_for(long http);

void sbx__sandbox_info_free(struct sbx__sandbox_info *i);
void sbx__command_info_free(struct sbx__command_info *i);
void sbx__snapshot_info_free(struct sbx__snapshot_info *i);

/* Percent-encode a path segment or query value (ids are safe, but never
 * trust them into a URL). Appends to b. */
sbx_status sbx__api_escape(sbx__buf *b, const char *s);

#endif /* SBX_API_H */
