/* SPDX-License-Identifier: MIT */
/* A job's plan: the inputs each type takes and the commands it runs. The
 * commands are built here and checked by the policy of the type like any
 * other (job.c): the library grants itself nothing. */
#include "util/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job_int.h"
#include "policy/netpolicy_sdk.h"
#include "util/jobtype.h"

/* The job layer numbers the types as the shared table does. */
_Static_assert(J_NTYPES == SBX__NJOB_TYPES, "job types: one table");

/* The inputs of each type, NULL-terminated. */
static const char *const clone_keys[] = {"url", "ref", "depth", "dir", "token", NULL};
static const char *const apply_keys[] = {"patch", "dir", NULL};
static const char *const install_keys[] = {"packageManager", "registry", "dir", NULL};
static const char *const verify_keys[] = {"script", "packageManager", "dir", NULL};
static const char *const migrate_keys[] = {"script", "packageManager", "url", "host", "dir", NULL};

static const char *const *const type_keys[J_NTYPES] = {
    clone_keys, apply_keys, install_keys, verify_keys, verify_keys, verify_keys, verify_keys, migrate_keys,
};

/* The package.json script a verify.* or db.migrate job runs by default. */
static const char *const default_script[J_NTYPES] = {
    NULL, NULL, NULL, "lint", "typecheck", "test", "build", "db:migrate",
};

/* Lockfiles, most specific first, and the package manager each means. */
static const struct {
    const char *file, *pm;
} lockfiles[] = {
    {"bun.lock", "bun"},          {"bun.lockb", "bun"},        {"pnpm-lock.yaml", "pnpm"},
    {"yarn.lock", "yarn"},        {"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"},
};

static const char *const package_managers[] = {"npm", "pnpm", "yarn", "bun", NULL};

enum sbx__jtype sbx__job_type_find(const char *name)
{
    return (enum sbx__jtype)sbx__job_type_index(name);
}

const char *sbx__job_type_str(enum sbx__jtype t)
{
    return t >= 0 && t < J_NTYPES ? sbx__job_type_name((size_t)t) : "(none)";
}

const char *sbx__job_input(const sbx_job *job, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < job->inputs.n; i++)
        if (strncmp(job->inputs.v[i], key, n) == 0 && job->inputs.v[i][n] == '=')
            return job->inputs.v[i] + n + 1;
    return NULL;
}

const char *sbx__job_dir(const sbx_job *job)
{
    const char *d = sbx__job_input(job, "dir");
    if (d)
        return d;
    return job->type == J_CLONE ? SBX__JOB_WORKSPACE "/repo" : SBX__JOB_WORKSPACE;
}

static bool in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (strcmp(*l, s) == 0)
            return true;
    return false;
}

static bool is_sha(const char *s)
{
    size_t n = strlen(s);
    if (n != 40 && n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

/* The host of a URL (scheme://[user@]host[:port]/...), into buf: an IPv6
 * address with its brackets. The user-info ends at the last '@' before the
 * path, as curl reads it. */
bool sbx__job_url_host(const char *url, char *buf, size_t cap)
{
    const char *p = strstr(url, "://"), *e, *at;
    size_t n;
    if (!p)
        return false;
    p += 3;
    e = p + strcspn(p, "/?#");
    at = memrchr(p, '@', (size_t)(e - p));
    if (at)
        p = at + 1;
    if (*p == '[') {
        const char *close = memchr(p, ']', (size_t)(e - p));
        n = close ? (size_t)(close - p) + 1 : 0;
    } else {
        n = strcspn(p, ":/?#");
    }
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return true;
}

sbx_status sbx__job_plan_validate(sbx_job *job)
{
    const char *const *keys;
    const char *v;
    if (job->type == J_NONE)
        return sbx__err_set(&job->err, SBX_E_MISUSE, "the job has no type: call sbx_job_set_type() first");
    keys = type_keys[job->type];
    for (size_t i = 0; i < job->inputs.n; i++) {
        const char *kv = job->inputs.v[i], *eq = strchr(kv, '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        SBX__ARG(job, in_list(keys, key), "%s takes no input '%s'", sbx__job_type_str(job->type), key);
    }
    switch (job->type) {
    case J_CLONE:
        SBX__ARG(job, sbx__job_input(job, "url"), "repo.clone: input 'url' (the repository) is missing");
        break;
    case J_APPLY:
        SBX__ARG(job, job->patch_data, "repo.applyPatch: input 'patch' (the diff) is missing");
        break;
    case J_MIGRATE:
        SBX__ARG(job, !sbx__job_input(job, "url") || !sbx__job_input(job, "host"),
                 "db.migrate: give input 'url' or 'host', not both");
        break;
    default: break;
    }
    SBX__ARG(job, !job->argv.n || (job->type != J_CLONE && job->type != J_APPLY),
             "%s runs its own commands: a program is for deps.install, "
             "verify.* and db.migrate",
             sbx__job_type_str(job->type));
    SBX__ARG(job, !job->argv.n || job->type != J_INSTALL || !job->opt_lifecycle,
             "option lifecycle_scripts is for the install the job plans: a program runs as given (its "
             "own flags say whether scripts run)");
    SBX__ARG(job, !job->argv.n || !sbx__job_input(job, "script"), "give a program or input 'script', not both");
    SBX__ARG(job, !job->argv.n || !sbx__job_input(job, "packageManager"),
             "input 'packageManager' is for a package.json script; this job runs a program");
    SBX__ARG(job,
             job->type != J_MIGRATE || !job->opt_netpolicy || sbx__job_input(job, "url") || sbx__job_input(job, "host"),
             "db.migrate: input 'url' or 'host' (the database server its network preset allows) is "
             "missing");
    if ((v = sbx__job_input(job, "token"))) {
        const char *url = sbx__job_input(job, "url");
        SBX__ARG(job, job->opt_netpolicy,
                 "input 'token' is added to the git host's requests by the network policy, which the "
                 "option network_policy=off turns off");
        SBX__ARG(job, !url || strncasecmp(url, "https://", 8) == 0 || strncasecmp(url, "http://", 7) == 0,
                 "input 'token' needs an http:// or https:// 'url' (it is sent as an HTTP header)");
        if (url) {
            /* The header goes to a domain name: the policy's injection
             * rules name domains (as the Vercel API's do), not addresses. */
            char host[256];
            SBX__ARG(job, sbx__job_url_host(url, host, sizeof host), "input 'url' names no host the token could go to");
            SBX__ARG(job, !sbx__netpolicy_is_address(host, strlen(host)),
                     "input 'token' needs a 'url' whose host is a domain name: the network policy adds the "
                     "header for a domain, and '%s' is an IP address",
                     host);
        }
    }
    v = sbx__job_input(job, "packageManager");
    SBX__ARG(job, !v || in_list(package_managers, v), "input 'packageManager': npm, pnpm, yarn or bun, not '%s'", v);
    for (size_t i = 0; i < job->env_keys.n; i++) {
        size_t n = strlen(job->env_keys.v[i]);
        bool have = false;
        for (size_t k = 0; k < job->env.n && !have; k++)
            have = strncmp(job->env.v[k], job->env_keys.v[i], n) == 0 && job->env.v[k][n] == '=';
        SBX__ARG(job, have, "envKeys names %s but no value was given for it (sbx_job_set_env())", job->env_keys.v[i]);
    }
    if (job->env_keys.n) {
        /* A request that names its envKeys gets those and nothing else. */
        for (size_t k = 0; k < job->env.n; k++) {
            const char *eq = strchr(job->env.v[k], '=');
            bool named = false;
            for (size_t i = 0; i < job->env_keys.n && !named; i++)
                named = strlen(job->env_keys.v[i]) == (size_t)(eq - job->env.v[k]) &&
                        strncmp(job->env_keys.v[i], job->env.v[k], (size_t)(eq - job->env.v[k])) == 0;
            SBX__ARG(job, named, "%.*s has a value but is not in the request's envKeys", (int)(eq - job->env.v[k]),
                     job->env.v[k]);
        }
    }
    return SBX_OK;
}

sbx_status sbx__job_add_step(sbx_job *job, const char *name, enum sbx__jstep_kind kind, const char *cwd,
                             size_t argc, const char *const *argv)
{
    struct sbx__jstep *s;
    if (job->nsteps == job->capsteps) {
        size_t cap = job->capsteps ? job->capsteps * 2 : 4;
        struct sbx__jstep *n = sbx__realloc(job->steps, cap * sizeof *n);
        if (!n)
            return sbx__err_nomem(&job->err);
        job->steps = n;
        job->capsteps = cap;
    }
    s = &job->steps[job->nsteps];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->exit_code = -1;
    s->outcome = SBX_STEP_SKIPPED;
    if (!(s->name = sbx__strdup(name)) || !(s->cwd = sbx__strdup(cwd)) ||
        sbx__strlist_set(&s->argv, argv, argc) != SBX_OK) {
        sbx__free(s->name);
        sbx__free(s->cwd);
        sbx__strlist_clear(&s->argv);
        return sbx__err_nomem(&job->err);
    }
    job->nsteps++;
    return SBX_OK;
}

static sbx_status plan_clone(sbx_job *job)
{
    const char *url = sbx__job_input(job, "url"), *ref = sbx__job_input(job, "ref");
    const char *depth = sbx__job_input(job, "depth"), *dir = sbx__job_dir(job);
    const char *argv[10];
    size_t n = 0;
    char d[32];
    sbx_status st;
    bool shallow = !depth || strcmp(depth, "0") != 0;
    snprintf(d, sizeof d, "--depth=%s", depth ? depth : "1");
    argv[n++] = "git";
    argv[n++] = "clone";
    if (shallow)
        argv[n++] = d;
    if (ref && !is_sha(ref)) {
        argv[n++] = "--branch";
        argv[n++] = ref;
    }
    argv[n++] = "--";
    argv[n++] = url;
    argv[n++] = dir;
    if ((st = sbx__job_add_step(job, "clone", JS_RUN, SBX__JOB_WORKSPACE, n, argv)) != SBX_OK)
        return st;
    if (ref && is_sha(ref)) {
        /* A commit is fetched by its id (servers allow it for reachable
         * commits), then checked out detached. */
        const char *fetch[] = {"git", "-C", dir, "fetch", d, "origin", ref};
        const char *co[] = {"git", "-C", dir, "checkout", "--detach", ref};
        size_t nf = SBX__ARRAY_LEN(fetch);
        if (!shallow) {
            fetch[4] = "origin";
            fetch[5] = ref;
            nf--;
        }
        if ((st = sbx__job_add_step(job, "fetch", JS_RUN, SBX__JOB_WORKSPACE, nf, fetch)) != SBX_OK ||
            (st = sbx__job_add_step(job, "checkout", JS_RUN, SBX__JOB_WORKSPACE, SBX__ARRAY_LEN(co), co)) != SBX_OK)
            return st;
    }
    {
        const char *rp[] = {"git", "-C", dir, "rev-parse", "HEAD"};
        return sbx__job_add_step(job, "resolve", JS_REVPARSE, SBX__JOB_WORKSPACE, SBX__ARRAY_LEN(rp), rp);
    }
}

static sbx_status plan_apply(sbx_job *job)
{
    const char *argv[] = {"git", "apply", "--whitespace=nowarn", SBX__JOB_PRIVATE_DIR "/patch.diff"};
    return sbx__job_add_step(job, "apply", JS_RUN, sbx__job_dir(job), SBX__ARRAY_LEN(argv), argv);
}

static sbx_status plan_install(sbx_job *job)
{
    const char *argv[12], *reg = sbx__job_input(job, "registry");
    size_t n = 0;
    char regopt[2048];
    argv[n++] = job->pm;
    if (job->yarn_berry) {
        /* Yarn 2+: --immutable, and scripts off by --mode; its registry is
         * configuration (.yarnrc.yml), not a flag. */
        argv[n++] = "install";
        argv[n++] = "--immutable";
        if (!job->opt_lifecycle)
            argv[n++] = "--mode=skip-build";
        return sbx__job_add_step(job, "install", JS_RUN, sbx__job_dir(job), n, (const char *const *)argv);
    }
    if (strcmp(job->pm, "npm") == 0) {
        argv[n++] = "ci";
        argv[n++] = "--no-audit";
        argv[n++] = "--no-fund";
    } else {
        argv[n++] = "install";
        argv[n++] = "--frozen-lockfile";
    }
    if (!job->opt_lifecycle)
        argv[n++] = "--ignore-scripts";
    if (reg) {
        snprintf(regopt, sizeof regopt, "--registry=%s", reg);
        argv[n++] = regopt;
    }
    return sbx__job_add_step(job, "install", JS_RUN, sbx__job_dir(job), n, (const char *const *)argv);
}

static sbx_status plan_script(sbx_job *job)
{
    const char *script = sbx__job_input(job, "script");
    const char *argv[] = {job->pm, "run", script ? script : default_script[job->type]};
    return sbx__job_add_step(job, sbx__job_type_str(job->type), JS_RUN, sbx__job_dir(job), 3, argv);
}

sbx_status sbx__job_plan(sbx_job *job)
{
    bool needs_pm = (job->type == J_INSTALL || job->type >= J_LINT) && !job->argv.n;
    if (job->type == J_CLONE)
        return plan_clone(job);
    if (job->type == J_APPLY)
        return plan_apply(job);
    if (!needs_pm)
        return sbx__job_add_step(job, job->type == J_INSTALL ? "install" : sbx__job_type_str(job->type), JS_RUN,
                                 sbx__job_dir(job), job->argv.n, (const char *const *)job->argv.v);
    if (!job->pm && sbx__job_input(job, "packageManager") && job->type != J_INSTALL &&
        !(job->pm = sbx__strdup(sbx__job_input(job, "packageManager"))))
        return sbx__err_nomem(&job->err);
    if (!job->pm) {
        /* Which lockfile is there says which package manager the project
         * uses: one listing, with a program every policy allows. */
        const char *argv[] = {"ls", "-A", sbx__job_dir(job)};
        return sbx__job_add_step(job, "detect", JS_DETECT, SBX__JOB_WORKSPACE, 3, argv);
    }
    return job->type == J_INSTALL ? plan_install(job) : plan_script(job);
}

sbx_status sbx__job_plan_detected(sbx_job *job, const char *listing, size_t len)
{
    const char *given = sbx__job_input(job, "packageManager");
    for (size_t i = 0; i < SBX__ARRAY_LEN(lockfiles) && !job->lockfile; i++) {
        size_t n = strlen(lockfiles[i].file);
        for (const char *p = listing, *end = listing + len; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t l = (size_t)((nl ? nl : end) - p);
            if (l == n && memcmp(p, lockfiles[i].file, n) == 0) {
                if (!(job->lockfile = sbx__strdup(lockfiles[i].file)) ||
                    !(job->pm = sbx__strdup(given ? given : lockfiles[i].pm)))
                    return sbx__err_nomem(&job->err);
                job->pm_locked = lockfiles[i].pm;
                break;
            }
            p += l + 1;
        }
    }
    {
        static const char berry[] = ".yarnrc.yml";
        for (const char *p = listing, *end = listing + len; p < end;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t l = (size_t)((nl ? nl : end) - p);
            if (l == sizeof berry - 1 && memcmp(p, berry, l) == 0)
                job->yarn_berry = true;
            p += l + 1;
        }
        job->yarn_berry = job->yarn_berry && job->pm && strcmp(job->pm, "yarn") == 0;
    }
    SBX__ARG(job, !given || !job->lockfile || strcmp(given, job->pm_locked) == 0,
             "input 'packageManager' is %s but the lockfile %s is %s's: install with the tool the "
             "lockfile belongs to",
             given, job->lockfile, job->pm_locked);
    if (job->type == J_INSTALL && !job->lockfile)
        return sbx__err_set(&job->err, SBX_E_NOT_FOUND,
                            "no lockfile in %s (bun.lock, bun.lockb, pnpm-lock.yaml, yarn.lock, "
                            "package-lock.json, npm-shrinkwrap.json): installs follow a lockfile",
                            sbx__job_dir(job));
    if (!job->pm && !(job->pm = sbx__strdup(given ? given : "npm")))
        return sbx__err_nomem(&job->err);
    return SBX_OK;
}
