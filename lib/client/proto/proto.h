/* SPDX-License-Identifier: MIT */
/* api: the v1 endpoints' JSON, built and parsed (the only module that knows it). */
#ifndef SBX_API_H
#define SBX_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#define SBX__MAX_PORTS 4

struct sbx__route {
    uint32_t port;
    char *url;
};

struct sbx__sandbox_info {
    char *id, *status, *runtime, *region, *source_snapshot_id, *cwd;
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
};

/* Request bodies. NULL on out of memory, or if a string is not UTF-8: the
 * public setters refuse those first, so callers may report NULL as
 * out of memory. */
char *sbx__api_create_body(const struct sbx__create_spec *s);
char *sbx__api_run_body(const sbx__strlist *argv, const char *cwd, const sbx__strlist *env, bool sudo,
                        bool wait);
char *sbx__api_path_body(const char *path, const char *cwd);
char *sbx__api_int_body(const char *key, int64_t value);
/* A network policy given by a caller: a JSON object with a string "mode". */
sbx_status sbx__api_check_policy(const char *json, sbx__err *err);

/* Responses. Each checks the protocol's required fields and types. */
sbx_status sbx__api_parse_sandbox(const char *body, size_t len, struct sbx__sandbox_info *out,
                                  sbx__err *err);
sbx_status sbx__api_parse_command(const char *body, size_t len, struct sbx__command_info *out,
                                  sbx__err *err);
sbx_status sbx__api_parse_snapshot(const char *body, size_t len, struct sbx__snapshot_info *sn,
                                   struct sbx__sandbox_info *sbx, sbx__err *err);
sbx_status sbx__api_check_list(const char *body, size_t len, const char *key, sbx__err *err);

enum { SBX__LOG_STDOUT = 1, SBX__LOG_STDERR = 2, SBX__LOG_ERROR = 3 };
/* One NDJSON log line into its stream and data (appended to data, which is
 * cleared first); an error line's "code: message" goes to data too. */
sbx_status sbx__api_parse_log(const char *line, size_t len, int *stream, sbx__buf *data, sbx__err *err);

/* "code: message" of an error body {"error":{...}}, or its first bytes. */
void sbx__api_error_text(const char *body, size_t len, char *out, size_t cap);
/* The library status for an HTTP error status. */
sbx_status sbx__api_status_for(long http);

void sbx__sandbox_info_free(struct sbx__sandbox_info *i);
void sbx__command_info_free(struct sbx__command_info *i);
void sbx__snapshot_info_free(struct sbx__snapshot_info *i);

/* Percent-encode a path segment or query value (ids are safe, but never
 * trust them into a URL). Appends to b. */
sbx_status sbx__api_escape(sbx__buf *b, const char *s);

#endif /* SBX_API_H */
