/* SPDX-License-Identifier: MIT */
/* api: the helpers the protocol versions (v1.c, v2.c) build on (common.c). */
#ifndef SBX_PROTO_COMMON_H
#define SBX_PROTO_COMMON_H

#include <jansson.h>

#include "client/proto/proto.h"

/* JSON text of o (consumed), in sbx__malloc'd memory; NULL when out of memory. */
char *sbx__pr_dump(json_t *o);
/* o[k] = v when v is not NULL: 0, or -1 when out of memory. */
int sbx__pr_set_str(json_t *o, const char *k, const char *v);
/* KEY=VALUE entries as an object. */
json_t *sbx__pr_env_object(const sbx__strlist *env);
/* The create body both versions send (projectId, ports, runtime unless
 * from a snapshot, timeout, resources, env, networkPolicy as given, source). */
json_t *sbx__pr_create_object(const struct sbx__create_spec *s);
/* The run-command body: command, args, env, sudo, cwd, wait when set,
 * timeout (ms) when above 0. */
json_t *sbx__pr_run_object(const sbx__strlist *argv, const char *cwd, const sbx__strlist *env, bool sudo, bool wait,
                           int64_t timeout_ms);
char *sbx__pr_path_body(const char *path);
char *sbx__pr_int_body(const char *key, int64_t value);
/* Fill r, taking path and body over; a NULL path, or a NULL body when one
 * is needed, is the failure of the call that made it (SBX_E_NOMEM). */
sbx_status sbx__pr_make(struct sbx__api_req *r, const char *method, char *path, char *body, bool has_body);

/* An answer's JSON object (an empty body is {}), or NULL with err set. */
json_t *sbx__pr_load(const char *body, size_t len, sbx__err *err);
sbx_status sbx__pr_need_str(json_t *o, const char *what, const char *key, char **out, sbx__err *err);
sbx_status sbx__pr_opt_str(json_t *o, const char *key, char **out, sbx__err *err);
sbx_status sbx__pr_need_num(json_t *o, const char *what, const char *key, int64_t *out, sbx__err *err);
/* A sandbox object (what "sandbox", v1) or a session (what "session", 2.x:
 * runtime optional) and its routes into out. */
sbx_status sbx__pr_fill_sandbox(json_t *s, const char *what, json_t *routes, struct sbx__sandbox_info *out,
                                sbx__err *err);
/* A snapshot object; source_key names its source's id ("sourceSandboxId",
 * "sourceSessionId"). */
/* A "routes" array (when one is there) into out's routes. */
sbx_status sbx__pr_fill_routes(json_t *routes, struct sbx__sandbox_info *out, sbx__err *err);
sbx_status sbx__pr_fill_snapshot(json_t *o, const char *source_key, struct sbx__snapshot_info *sn, sbx__err *err);

#endif /* SBX_PROTO_COMMON_H */
