/* SPDX-License-Identifier: MIT */
/*
 * job: the job handle: its type, inputs, environment, options and the
 * JSON request (jobrun.c carries it out, plan.c says what it runs,
 * result.c reports).
 */
#include "util/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "client/sandbox_int.h"
#include "job/job_int.h"
#include "policy/policy_share.h"
#include "redact/redact_int.h"
#include "util/jobtype.h"

#define TIMEOUT_DEFAULT_MS 600000
#define KILL_GRACE_DEFAULT_MS 5000
#define TAIL_DEFAULT (64u << 10)
#define ARTIFACT_MAX_DEFAULT (1u << 20)
static const char *const verdict_names[] = {"passed", "failed", "timed-out", "denied", "cancelled", "error",
                                            "unavailable"};

const char *sbx_job_verdict_name(sbx_verdict v)
{
    return (int)v >= 0 && (size_t)v < SBX__ARRAY_LEN(verdict_names) ? verdict_names[v] : NULL;
}

/* ---- the handle ------------------------------------------------------------------------ */

sbx_job *sbx_job_new(sbx_client *c)
{
    sbx_job *job;
    if (!c)
        return NULL;
    if (!(job = sbx__calloc(1, sizeof *job)))
        return NULL;
    job->core = c->core;
    sbx__core_ref(job->core);
    job->type = J_NONE;
    job->timeout_ms = TIMEOUT_DEFAULT_MS;
    job->opt_policy = job->opt_redact = job->opt_netpolicy = true;
    job->kill_grace_ms = KILL_GRACE_DEFAULT_MS;
    job->tail_bytes = TAIL_DEFAULT;
    job->artifact_max = ARTIFACT_MAX_DEFAULT;
    job->verdict = SBX_VERDICT_ERROR;
    job->exit_code = -1;
    return job;
}

static void steps_free(sbx_job *job)
{
    for (size_t i = 0; i < job->nsteps; i++) {
        sbx__free(job->steps[i].name);
        sbx__free(job->steps[i].cwd);
        sbx__free(job->steps[i].command_id);
        sbx__strlist_clear(&job->steps[i].argv);
    }
    sbx__free(job->steps);
    for (size_t i = 0; i < job->nartifacts; i++) {
        sbx__free(job->artifacts[i].path);
        sbx__free(job->artifacts[i].error);
        sbx__buf_free(&job->artifacts[i].data);
    }
    sbx__free(job->artifacts);
}

void sbx_job_free(sbx_job *job)
{
    if (!job)
        return;
    if (job->run_op) {
        /* The run's op (the caller's) still lives and uses the job: cancel
         * the run, say nothing more to the caller, and leave the freeing to
         * the op's release (jobrun.c). */
        job->cb = NULL;
        job->cb_user = NULL;
        job->free_pending = true;
        (void)sbx_op_cancel(job->run_op);
        return;
    }
    sbx__job_destroy(job);
}

void sbx__job_destroy(sbx_job *job)
{
    sbx__strlist_wipe(&job->inputs);
    sbx__strlist_clear(&job->argv);
    sbx__strlist_wipe(&job->env);
    sbx__strlist_clear(&job->env_keys);
    sbx__strlist_wipe(&job->secrets);
    sbx__strlist_clear(&job->artifact_paths);
    sbx_policy_free(job->policy);
    sbx_transcript_free(job->tr);
    steps_free(job);
    sbx__free(job->pm);
    sbx__free(job->lockfile);
    sbx__buf_free(&job->capture);
    sbx__buf_free(&job->tails[0]);
    sbx__buf_free(&job->tails[1]);
    sbx__free(job->resolved_commit);
    sbx__free(job->patch_json);
    if (job->patch_data)
        sbx__wipe(job->patch_data, job->patch_len);
    sbx__free(job->patch_data);
    sbx__free(job->message);
    sbx__free(job->project);
    sbx__redact_rules_unref(job->rules);
    sbx_transcript_free(job->own_tr);
    sbx__err_free(&job->err);
    sbx__core_unref(job->core);
    sbx__free(job);
}

const char *sbx_job_last_error(const sbx_job *job)
{
    return SBX__LAST_ERROR(job);
}

#define JOB_ENTER(job)                                                                                       \
    do {                                                                                                     \
        SBX__ENTER(job, sbx__core_in_callback((job)->core));                                                 \
        if ((job)->started)                                                                                  \
            return sbx__err_set(&(job)->err, SBX_E_MISUSE, "the job has run: settings apply before; use a new " \
                                "job");                                                                      \
    } while (0)

sbx_status sbx_job_set_type(sbx_job *job, const char *type)
{
    enum sbx__jtype t;
    JOB_ENTER(job);
    SBX__ARG(job, type, "the job type is NULL");
    t = sbx__job_type_find(type);
    SBX__ARG(job, t != J_NONE,
             "unknown job type '%.64s' (known: " SBX__JOB_TYPES_LIST ")", type);
    job->type = t;
    return SBX_OK;
}

static bool safe_text(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* A directory for input "dir": absolute (or relative to the workspace),
 * inside it, without "." or ".." components. */
static bool good_dir(const char *d)
{
    const char *p;
    if (d[0] == '/' && strncmp(d, SBX__JOB_WORKSPACE, strlen(SBX__JOB_WORKSPACE)) != 0)
        return false;
    if (d[0] == '/' && d[strlen(SBX__JOB_WORKSPACE)] != '\0' && d[strlen(SBX__JOB_WORKSPACE)] != '/')
        return false;
    for (p = d; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        p += n + (e ? 1 : 0);
    }
    return true;
}

static sbx_status set_input(sbx_job *job, const char *key, const char *value)
{
    static const char *const known[] = {"url", "ref", "depth", "dir", "token", "patch", "packageManager",
                                        "registry", "script", "host"};
    bool ok = false;
    for (size_t i = 0; i < SBX__ARRAY_LEN(known); i++)
        ok = ok || strcmp(known[i], key) == 0;
    SBX__ARG(job, ok,
             "unknown input '%.64s' (known: url, ref, depth, dir, token, patch, packageManager, registry, script, "
             "host)",
             key);
    if (strcmp(key, "patch") == 0) {
        /* Kept as bytes (it may be large, and is not text to check here). */
        uint8_t *d = NULL;
        size_t n = value ? strlen(value) : 0;
        if (value && !(d = sbx__memdup(value, n + 1)))
            return sbx__err_nomem(&job->err);
        sbx__free(job->patch_data);
        job->patch_data = d;
        job->patch_len = n;
        return SBX_OK;
    }
    if (value) {
        SBX__ARG(job, *value && safe_text(value), "input '%s': empty, or a control character", key);
        SBX__ARG(job, sbx__utf8_valid(value, strlen(value)), "input '%s': not valid UTF-8", key);
        if (strcmp(key, "depth") == 0) {
            char *end;
            long long d = strtoll(value, &end, 10);
            SBX__ARG(job, value[0] >= '0' && value[0] <= '9' && !*end && d >= 0 && d <= 1000000,
                     "input 'depth': a number of commits 0..1000000 (0: the whole history), not '%.32s'", value);
        }
        if (strcmp(key, "dir") == 0)
            SBX__ARG(job, good_dir(value), "input 'dir': a directory inside %s without '.' or '..', not '%.256s'",
                     SBX__JOB_WORKSPACE, value);
        if (strcmp(key, "ref") == 0)
            SBX__ARG(job, value[0] != '-', "input 'ref': must not start with '-'");
        if (strcmp(key, "url") == 0)
            SBX__ARG(job, value[0] != '-', "input 'url': must not start with '-'");
        if (strcmp(key, "script") == 0)
            SBX__ARG(job, value[0] != '-', "input 'script': must not start with '-'");
    }
    if (value && strcmp(key, "dir") == 0 && value[0] != '/') {
        /* Relative to the workspace: kept absolute, as the commands' working
         * directory and the artifacts' paths must be. */
        size_t n = strlen(SBX__JOB_WORKSPACE) + 1 + strlen(value);
        char *abs = sbx__malloc(n + 1);
        sbx_status st;
        if (!abs)
            return sbx__err_nomem(&job->err);
        snprintf(abs, n + 1, "%s/%s", SBX__JOB_WORKSPACE, value);
        st = sbx__env_set(&job->inputs, key, abs, &job->err);
        sbx__free(abs);
        return st;
    }
    /* A KEY=VALUE list, as the environment's (its values wiped on free). */
    return sbx__env_set(&job->inputs, key, value, &job->err);
}

sbx_status sbx_job_set_input(sbx_job *job, const char *key, const char *value)
{
    JOB_ENTER(job);
    SBX__ARG(job, key, "the input's name is NULL");
    return set_input(job, key, value);
}

sbx_status sbx_job_set_argv(sbx_job *job, size_t argc, const char *const *argv)
{
    sbx__strlist l = SBX__STRLIST_INIT;
    JOB_ENTER(job);
    SBX__ARG(job, argc == 0 || (argv && argv[0] && argv[0][0]), "argv: a non-empty program name first");
    for (size_t i = 0; i < argc; i++)
        SBX__ARG(job, argv[i] && sbx__utf8_valid(argv[i], strlen(argv[i])), "argv[%zu]: NULL or not valid UTF-8",
                 i);
    if (argc && sbx__strlist_set(&l, argv, argc) != SBX_OK)
        return sbx__err_nomem(&job->err);
    sbx__strlist_clear(&job->argv);
    job->argv = l;
    return SBX_OK;
}

sbx_status sbx_job_set_timeout_ms(sbx_job *job, int64_t ms)
{
    JOB_ENTER(job);
    SBX__ARG(job, ms >= 0, "timeout: milliseconds >= 0 (0: none)");
    job->timeout_ms = ms;
    return SBX_OK;
}

static bool env_name_ok(const char *n)
{
    if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || *n == '_'))
        return false;
    for (n++; *n; n++)
        if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '_'))
            return false;
    return true;
}

sbx_status sbx_job_set_env(sbx_job *job, const char *name, const char *value)
{
    JOB_ENTER(job);
    SBX__ARG(job, name && env_name_ok(name) && strlen(name) <= 255,
             "environment variable name: [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes");
    SBX__ARG(job, !value || sbx__utf8_valid(value, strlen(value)), "the value of %s is not valid UTF-8", name);
    /* Every value long enough to be a secret is redacted: one too long
     * for the redactor would not be, so it is refused. */
    SBX__ARG(job, !value || strlen(value) <= SBX__SECRET_MAX,
             "the value of %s is refused: %zu bytes, more than the %d a secret may have", name, strlen(value),
             SBX__SECRET_MAX);
    return sbx__env_set(&job->env, name, value, &job->err);
}

sbx_status sbx_job_add_secret(sbx_job *job, const uint8_t *value, size_t len)
{
    char *s;
    JOB_ENTER(job);
    SBX__ARG(job, value && len, "the secret is empty");
    SBX__ARG(job, len >= SBX__SECRET_MIN && len <= SBX__SECRET_MAX,
             "a secret of %zu bytes is refused: %d to %d bytes (shorter ones would redact ordinary text)", len,
             SBX__SECRET_MIN, SBX__SECRET_MAX);
    /* Kept as text (and so in no result): a NUL would cut it short. */
    SBX__ARG(job, !memchr(value, '\0', len), "the secret contains a NUL byte");
    if (!(s = sbx__malloc(len + 1)))
        return sbx__err_nomem(&job->err);
    memcpy(s, value, len);
    s[len] = '\0';
    if (sbx__strlist_push_take(&job->secrets, s) != SBX_OK) /* it wipes and frees s on failure */
        return sbx__err_nomem(&job->err);
    return SBX_OK;
}

sbx_status sbx_job_add_artifact(sbx_job *job, const char *path)
{
    JOB_ENTER(job);
    SBX__ARG(job, path && *path && safe_text(path) && good_dir(path),
             "artifact: a file inside %s without '.' or '..' components", SBX__JOB_WORKSPACE);
    SBX__ARG(job, job->artifact_paths.n < 64, "artifact: at most 64");
    if (sbx__strlist_push(&job->artifact_paths, path) != SBX_OK)
        return sbx__err_nomem(&job->err);
    return SBX_OK;
}

sbx_status sbx_job_set_policy(sbx_job *job, const sbx_policy *p)
{
    sbx_policy *copy;
    JOB_ENTER(job);
    SBX__ARG(job, p, "the policy is NULL (to run unchecked, set the option \"policy\" to \"off\")");
    if (!(copy = sbx__policy_copy(p)))
        return sbx__err_nomem(&job->err);
    sbx_policy_free(job->policy);
    job->policy = copy;
    return SBX_OK;
}

sbx_status sbx_job_set_transcript(sbx_job *job, sbx_transcript *t)
{
    JOB_ENTER(job);
    SBX__ARG(job, t, "the transcript is NULL");
    sbx_transcript_free(job->tr);
    job->tr = sbx_transcript_ref(t);
    return SBX_OK;
}

sbx_status sbx_job_set_output_cb(sbx_job *job, sbx_output_cb cb, void *user)
{
    JOB_ENTER(job);
    job->cb = cb;
    job->cb_user = cb ? user : NULL;
    return SBX_OK;
}

static int on_off(const char *v)
{
    if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return 0;
    return -1;
}

sbx_status sbx_job_set_option(sbx_job *job, const char *key, const char *value)
{
    static const char *const flags[] = {"policy", "redact", "network_policy", "lifecycle_scripts"};
    JOB_ENTER(job);
    SBX__ARG(job, key && value, "option name and value must not be NULL");
    for (size_t i = 0; i < SBX__ARRAY_LEN(flags); i++) {
        /* Taken after JOB_ENTER: job may be NULL before. */
        bool *const fields[] = {&job->opt_policy, &job->opt_redact, &job->opt_netpolicy, &job->opt_lifecycle};
        if (strcmp(key, flags[i]) != 0)
            continue;
        SBX__ARG(job, on_off(value) >= 0, "option %s: \"on\" or \"off\", not '%.32s'", key, value);
        *fields[i] = on_off(value) == 1;
        return SBX_OK;
    }
    if (!strcmp(key, "project")) {
        char *v;
        SBX__ARG(job, *value && safe_text(value), "option project: a name");
        if (!(v = sbx__strdup(value)))
            return sbx__err_nomem(&job->err);
        sbx__free(job->project);
        job->project = v;
        return SBX_OK;
    }
    if (!strcmp(key, "kill_grace_ms") || !strcmp(key, "tail_bytes") || !strcmp(key, "artifact_max_bytes")) {
        char *end;
        long long n = strtoll(value, &end, 10);
        SBX__ARG(job, value[0] >= '0' && value[0] <= '9' && !*end && n >= 0 && n <= (1LL << 30),
                 "option %s: a number 0..1073741824, not '%.32s'", key, value);
        if (key[0] == 'k')
            job->kill_grace_ms = n;
        else if (key[0] == 't')
            job->tail_bytes = (size_t)n;
        else
            job->artifact_max = (size_t)n;
        return SBX_OK;
    }
    return sbx__err_set(&job->err, SBX_E_UNKNOWN_OPTION,
                        "unknown job option '%.64s' (policy, redact, network_policy, lifecycle_scripts, "
                        "kill_grace_ms, tail_bytes, artifact_max_bytes, project)",
                        key);
}

/* ---- JSON request ------------------------------------------------------------------------ */

static sbx_status load_request(sbx_job *job, json_t *j, sbx_job *into)
{
    const char *k;
    json_t *v;
    SBX__ARG(job, json_is_object(j), "the request is not a JSON object");
    json_object_foreach(j, k, v) {
        if (!strcmp(k, "jobType")) {
            SBX__ARG(job, json_is_string(v) && sbx_job_set_type(into, json_string_value(v)) == SBX_OK, "jobType: %s",
                     json_is_string(v) ? sbx_job_last_error(into) : "a string expected");
        } else if (!strcmp(k, "timeoutSeconds")) {
            double secs = json_number_value(v);
            /* An integer, as JSON Schema counts them (1.0 is one). */
            SBX__ARG(job, json_is_number(v) && secs >= 0 && secs <= 7 * 86400 && secs == (double)(int64_t)secs,
                     "timeoutSeconds: an integer 0..604800");
            into->timeout_ms = (int64_t)secs * 1000;
        } else if (!strcmp(k, "inputs")) {
            const char *ik;
            json_t *iv;
            SBX__ARG(job, json_is_object(v), "inputs: an object expected");
            json_object_foreach(v, ik, iv) {
                char num[32];
                const char *s = json_string_value(iv);
                if (json_is_integer(iv) && strcmp(ik, "depth") == 0) {
                    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(iv));
                    s = num;
                }
                SBX__ARG(job, s, "inputs.%.64s: a string expected", ik);
                if (set_input(into, ik, s) != SBX_OK)
                    return sbx__err_set(&job->err, into->err.code, "inputs.%.64s: %s", ik, sbx_job_last_error(into));
            }
        } else if (!strcmp(k, "envKeys") || !strcmp(k, "command") || !strcmp(k, "artifacts")) {
            size_t i;
            json_t *e;
            SBX__ARG(job, json_is_array(v), "%s: an array of strings expected", k);
            json_array_foreach(v, i, e) {
                const char *s = json_string_value(e);
                sbx_status st = SBX_OK;
                SBX__ARG(job, s, "%s[%zu]: a string expected", k, i);
                if (k[0] == 'e') {
                    SBX__ARG(job, env_name_ok(s), "envKeys[%zu]: a variable name [A-Za-z_][A-Za-z0-9_]* expected", i);
                    st = sbx__strlist_push(&into->env_keys, s) == SBX_OK ? SBX_OK : sbx__err_nomem(&job->err);
                } else if (k[0] == 'c') {
                    SBX__ARG(job, *s || i != 0, "command[0]: an empty program name");
                    st = sbx__strlist_push(&into->argv, s) == SBX_OK ? SBX_OK : sbx__err_nomem(&job->err);
                } else if (sbx_job_add_artifact(into, s) != SBX_OK) {
                    return sbx__err_set(&job->err, into->err.code, "artifacts[%zu]: %s", i,
                                        sbx_job_last_error(into));
                }
                if (st != SBX_OK)
                    return st;
            }
        } else if (!strcmp(k, "schema")) {
            SBX__ARG(job, json_is_string(v) && strcmp(json_string_value(v), "sbxrun.job.request/1") == 0,
                     "schema: \"sbxrun.job.request/1\" expected");
        } else {
            return sbx__err_set(&job->err, SBX_E_INVALID_ARG,
                                "unknown field '%.64s' (schema, jobType, inputs, timeoutSeconds, envKeys, command, "
                                "artifacts)",
                                k);
        }
    }
    SBX__ARG(job, into->type != J_NONE, "jobType is missing");
    return SBX_OK;
}

sbx_status sbx_job_load_json(sbx_job *job, const char *text)
{
    json_error_t jerr;
    json_t *j;
    sbx_job *into;
    sbx_status st;
    JOB_ENTER(job);
    SBX__ARG(job, text, "the JSON text is NULL");
    j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        return sbx__err_set(&job->err, SBX_E_PARSE, "the request is not JSON: %s (line %d)", jerr.text, jerr.line);
    /* Built aside, then swapped in: a failure leaves the job as it was. */
    if (!(into = sbx__calloc(1, sizeof *into))) {
        json_decref(j);
        return sbx__err_nomem(&job->err);
    }
    into->core = job->core;
    sbx__core_ref(into->core);
    into->type = J_NONE;
    into->timeout_ms = job->timeout_ms;
    st = load_request(job, j, into);
    json_decref(j);
    if (st == SBX_OK) {
        sbx__strlist t;
        job->type = into->type;
        job->timeout_ms = into->timeout_ms;
        t = job->inputs, job->inputs = into->inputs, into->inputs = t;
        t = job->env_keys, job->env_keys = into->env_keys, into->env_keys = t;
        t = job->argv, job->argv = into->argv, into->argv = t;
        t = job->artifact_paths, job->artifact_paths = into->artifact_paths, into->artifact_paths = t;
        {
            uint8_t *pd = job->patch_data;
            size_t pl = job->patch_len;
            job->patch_data = into->patch_data, job->patch_len = into->patch_len;
            into->patch_data = pd, into->patch_len = pl;
        }
    }
    sbx_job_free(into);
    return st;
}

/* ---- getters --------------------------------------------------------------------------- */

sbx_verdict sbx_job_verdict(const sbx_job *job)
{
    return job && job->finished ? job->verdict : SBX_VERDICT_ERROR;
}

int sbx_job_exit_code(const sbx_job *job)
{
    return job ? job->exit_code : -1;
}

sbx_transcript *sbx_job_transcript(const sbx_job *job)
{
    if (!job)
        return NULL;
    return job->tr ? job->tr : job->own_tr;
}

int sbx_job_retryable(const sbx_job *job)
{
    return job && job->finished && job->retryable;
}
