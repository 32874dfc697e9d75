/* SPDX-License-Identifier: MIT */
/* sandbox_int: the sandbox and snapshot handles, shared with command.c. */
#ifndef SBX_SANDBOX_INT_H
#define SBX_SANDBOX_INT_H

#include "client/core.h"
#include "client/resume.h"
#include "util/str.h"

struct sbx_sandbox {
    struct sbx__target t;       /* first: ops refer to the handle through it */
    struct sbx__core *core;
    sbx__err err;
    /* configuration, sent at creation */
    char *runtime, *policy_json;
    int64_t timeout_ms;
    uint32_t vcpus, ports[SBX__MAX_PORTS];
    size_t nports;
    sbx__strlist env;           /* NAME=VALUE; values are secrets */
    enum sbx__source source;
    char *src_url, *src_rev, *src_user, *src_pass, *src_snapshot;
    uint32_t depth;
    char *name;                 /* 2.x: the sandbox's name (NULL: the server picks one) */
    bool persistent;            /* 2.x: its stop keeps the files */
    enum sbx__auto_resume auto_resume; /* 2.x: when an op on a stopped session resumes it */
    /* what the server said */
    bool busy;                  /* a create or get is pending */
    struct sbx__sandbox_info info;
    bool resuming;              /* an automatic resume is pending */
    sbx_op *resume_op;          /* it (internal: ends in resume.c) */
    unsigned stops;             /* the caller's stops in flight (no automatic resume meanwhile) */
    struct sbx__resume_wait *waiters; /* the ops waiting for it */
};

struct sbx_snapshot {
    struct sbx__target t;
    struct sbx__core *core;
    sbx__err err;
    struct sbx__snapshot_info info;
};

/* A string that may travel in JSON and URLs as given: no control
 * characters, valid UTF-8, and non-empty unless allow_empty. */
bool sbx__text_ok(const char *v, bool allow_empty);
/* Set (value) or remove (NULL) NAME in a NAME=VALUE list of secrets. */
sbx_status sbx__env_set(sbx__strlist *l, const char *name, const char *value, sbx__err *err);
/* Start the resume of a named sandbox for the ops waiting on it (resume.c):
 * an op of the sandbox's own, never handed out. Another resume (the
 * caller's) may run beside it: the server answers both with one session. */
sbx_status sbx__sandbox_resume_begin(sbx_sandbox *s, sbx_op **op);
/* The sandbox's working directory (as the server reported it). */
const char *sbx__sandbox_cwd(const sbx_sandbox *s);
/* A sandbox path as a tar entry name for an upload extracted at "/":
 * SBX_OK (*name NULL when the path is the root itself) or SBX_E_NOMEM. */
sbx_status sbx__sandbox_tar_name(const char *cwd, const char *path, char **name);

#endif /* SBX_SANDBOX_INT_H */
