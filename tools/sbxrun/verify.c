/* SPDX-License-Identifier: MIT */
/*
 * sbxrun verify: the main job. A project's tracked files at a revision,
 * with patches applied (checked on the host by sbx_patch first: nothing
 * of the project runs here), sent to a sandbox where its install, lint,
 * typecheck, test and build steps run as jobs of the library, each under
 * the command policy and network preset of its type, with output
 * redacted. The verdict is the exit status.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "remote.h"
#include "workspace.h"

#define MAX_PATCHES 64
/* A step's output shown when it fails (its tail), in lines. */
#define FAIL_TAIL_LINES 40
#define SPIN_MS 100

static const char usage_text[] =
    "usage: sbxrun verify [DIR] [--patch FILE]... [--base REV]\n"
    "                     [--repo URL [--ref REF] [--token-env NAME]]\n"
    "                     [--install CMD | --no-install] [--lint CMD] [--typecheck CMD]\n"
    "                     [--test CMD] [--build CMD] [--timeout DURATION]\n"
    "                     [--transcript FILE] [--json] [--verbose] [options]\n"
    "\n"
    "Verify a project in a sandbox: DIR's files tracked at HEAD (or --base REV),\n"
    "with each --patch applied, are checked and patched on this machine (nothing\n"
    "of the project runs here), sent to a new sandbox, and its steps run there:\n"
    "the dependencies' install, then lint, typecheck, test and build. By default\n"
    "the steps are the package.json scripts of those names that exist, with the\n"
    "package manager its lockfile names, and an install when it has\n"
    "dependencies; each --STEP CMD replaces or adds one (CMD runs without a\n"
    "shell). Every step is checked by the command policy of its job type and\n"
    "runs under its network preset (the install reaches the package registries,\n"
    "the checks nothing); output is redacted.\n"
    "\n"
    "  --patch FILE        a patch to apply (repeatable; '-' reads stdin)\n"
    "  --base REV          the revision of DIR's repository [HEAD]\n"
    "  --repo URL          verify this repository instead, fetched here with\n"
    "                      libgit2 and cloned in the sandbox; DIR is then a\n"
    "                      directory inside it\n"
    "  --ref REF           the branch, tag or commit of --repo [its HEAD]\n"
    "  --token-env NAME    the git host's token for --repo, read from the\n"
    "                      environment variable NAME: the fetch here and the\n"
    "                      sandbox's clone use it (never a URL's user:password@)\n"
    "  --install CMD       the install step's command, run as given instead\n"
    "                      of the lockfile's install (pass it --ignore-scripts)\n"
    "  --no-install        no install step\n"
    "  --allow-scripts     let the install run the dependencies' lifecycle\n"
    "                      scripts (off by default: --ignore-scripts)\n"
    "  --registry URL      the package registry the install uses (and may\n"
    "                      reach), besides the public ones\n"
    "  --env NAME[=VALUE]  give every step this variable (VALUE, or sbxrun's\n"
    "                      own); its value is redacted from all output\n"
    "                      (repeatable; nothing else of the environment is\n"
    "                      passed)\n"
    "  --lint CMD, --typecheck CMD, --test CMD, --build CMD\n"
    "                      the command of that step\n"
    "  --timeout DURATION  the whole run's budget: 90 or 90s, 10m, 1h, 1500ms [30m]\n"
    "  --keep-going        run every check even after one fails\n"
    "  --transcript FILE   record the run in a transcript (doc/transcript.md)\n"
    "  --verbose           show every step's output as it comes\n"
    "  --runtime NAME      the sandbox's runtime\n" REMOTE_OPTS_HELP
    "\n"
    "With --json only the result is printed on stdout, in sbxrun's envelope.\n"
    "Exit status: 0 every step passed, 1 a step failed, 2 usage, 3 denied (a\n"
    "policy, an unsafe patch), 4 a patch does not apply, 124 timed out, 125\n"
    "sbxrun could not run it (no sandbox, transport), 130 interrupted.\n";

enum {
    O_PATCH = 1, O_BASE, O_REPO, O_REF, O_INSTALL, O_NO_INSTALL, O_LINT, O_TYPECHECK, O_TEST, O_BUILD, O_TIMEOUT,
    O_TRANSCRIPT, O_VERBOSE, O_HELP, O_ALLOW_SCRIPTS, O_KEEP_GOING, O_RUNTIME, O_REGISTRY, O_ENV, O_TOKEN_ENV
};

#define MAX_ENV 64

/* The checks, in run order, with their job type and script name. */
static const struct {
    const char *name, *type;
} checks[] = {
    {"lint", "verify.lint"}, {"typecheck", "verify.typecheck"}, {"test", "verify.test"}, {"build", "verify.build"},
};

struct view {
    bool tty, color, verbose, json;
    int64_t t0, step_t0;
    size_t current;           /* the job running, SIZE_MAX when none */
    unsigned spin;
    bool line_open;           /* a status line is on screen, unterminated */
    const char *const *names; /* per job, for messages */
};

static void clear_line(struct view *v)
{
    if (v->line_open) {
        fputs("\r\033[K", stderr);
        v->line_open = false;
    }
}

static void draw(struct view *v, sbx_run *run)
{
    static const char spinner[] = "|/-\\";
    int64_t now = cli_mono_ms();
    if (!v->tty || v->json || v->verbose || v->current == SIZE_MAX)
        return;
    (void)run;
    fprintf(stderr, "\r\033[K  %c %-10s %5.1fs", spinner[v->spin++ % 4], v->names[v->current],
            (double)(now - v->step_t0) / 1000.0);
    fflush(stderr);
    v->line_open = true;
}

/* The tail of a failed step: its last lines of stderr, then stdout. */
/* Write untrusted output to a terminal: control characters other than
 * tab, newline and carriage return become '?', so the project's output
 * cannot send escape sequences to the terminal (titles, the clipboard,
 * hidden text). Not a terminal: as it is. */
static void put_safe(FILE *f, const char *p, size_t n)
{
    if (!isatty(fileno(f))) {
        fwrite(p, 1, n, f);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        putc((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f ? '?' : ch, f);
    }
}

static void show_tail(const char *label, const char *text)
{
    const char *p;
    int lines = 0;
    size_t n;
    if (!text || !*text)
        return;
    n = strlen(text);
    for (p = text + n; p > text; p--)
        if (p[-1] == '\n' && p != text + n && ++lines >= FAIL_TAIL_LINES)
            break;
    fprintf(stderr, "    ---- %s%s ----\n", label, p > text ? " (last lines)" : "");
    for (const char *l = p; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        fputs("    ", stderr);
        put_safe(stderr, l, len);
        putc('\n', stderr);
        l += len + (nl ? 1 : 0);
    }
}

static void job_line(struct view *v, sbx_run *run, size_t i)
{
    sbx_job *job = sbx_run_job(run, i);
    sbx_verdict verdict = sbx_job_verdict(job);
    char *js = NULL;
    json_t *r = NULL;
    const char *msg = NULL;
    if (v->json)
        return;
    if (sbx_job_result_to_json(job, &js) == SBX_OK)
        r = json_loads(js, 0, NULL);
    sbx_free(js);
    msg = json_string_value(json_object_get(r, "message"));
    clear_line(v);
    if (v->tty)
        fprintf(stderr, "  %s %-10s %5.1fs%s%s\n",
                verdict == SBX_VERDICT_PASSED ? (v->color ? "\033[32m✓\033[0m" : "✓")
                                              : (v->color ? "\033[31m✗\033[0m" : "✗"),
                v->names[i], (double)(cli_mono_ms() - v->step_t0) / 1000.0,
                verdict == SBX_VERDICT_PASSED ? "" : "  ", verdict == SBX_VERDICT_PASSED ? "" : (msg ? msg : ""));
    else
        fprintf(stderr, "sbxrun verify: %s: %s (%lld ms)%s%s\n", v->names[i], sbx_job_verdict_name(verdict),
                (long long)(cli_mono_ms() - v->step_t0), msg ? ": " : "", msg ? msg : "");
    if (verdict != SBX_VERDICT_PASSED && !v->verbose) {
        show_tail("stderr", json_string_value(json_object_get(r, "stderrTail")));
        show_tail("stdout", json_string_value(json_object_get(r, "stdoutTail")));
    }
    json_decref(r);
}

static void on_progress(sbx_run *run, sbx_run_event ev, size_t i, void *user)
{
    struct view *v = user;
    switch (ev) {
    case SBX_RUN_SANDBOX_CREATING:
        if (!v->json && !v->tty)
            fprintf(stderr, "sbxrun verify: creating a sandbox\n");
        break;
    case SBX_RUN_UPLOADING:
        if (!v->json && !v->tty)
            fprintf(stderr, "sbxrun verify: sending the workspace\n");
        break;
    case SBX_RUN_JOB_STARTED:
        v->current = i;
        v->step_t0 = cli_mono_ms();
        if (!v->json && (!v->tty || v->verbose))
            fprintf(stderr, "sbxrun verify: %s\n", v->names[i]);
        draw(v, run);
        break;
    case SBX_RUN_JOB_ENDED:
        job_line(v, run, i);
        v->current = SIZE_MAX;
        break;
    case SBX_RUN_JOB_SKIPPED:
        if (!v->json)
            fprintf(stderr, v->tty ? "  - %-10s skipped\n" : "sbxrun verify: %s: skipped\n", v->names[i]);
        break;
    case SBX_RUN_STOPPING: break;
    }
}

static int on_output(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    (void)user;
    put_safe(stream == SBX_STREAM_STDERR ? stderr : stdout, (const char *)data, len);
    return 0;
}

static int exit_for(sbx_verdict v)
{
    switch (v) {
    case SBX_VERDICT_PASSED: return SBXRUN_EXIT_OK;
    case SBX_VERDICT_FAILED: return SBXRUN_EXIT_FAIL;
    case SBX_VERDICT_DENIED: return SBXRUN_EXIT_DENIED;
    case SBX_VERDICT_TIMED_OUT: return SBXRUN_EXIT_TIMED_OUT;
    case SBX_VERDICT_CANCELLED: return SBXRUN_EXIT_INTERRUPTED;
    default: return SBXRUN_EXIT_CANNOT_RUN;
    }
}

struct steps {
    const char *install_cmd, *cmd[4], *registry;
    bool no_install, allow_scripts;
};

/* Add job `type`, running argv from cmd (split) or else script `script`. */
static sbx_job *add_step(sbx_run *run, const char *type, const char *cmd, const char *script,
                         const struct workspace *w, const char *dir, char *err, size_t errlen)
{
    sbx_job *job = NULL;
    char **argv = NULL;
    int n;
    if (sbx_run_add_job(run, type, &job) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_run_last_error(run));
        return NULL;
    }
    if (cmd) {
        if ((n = ws_split(cmd, &argv, err, errlen)) < 0)
            return NULL;
        if (sbx_job_set_argv(job, (size_t)n, (const char *const *)argv) != SBX_OK) {
            snprintf(err, errlen, "%s", sbx_job_last_error(job));
            ws_argv_free(argv);
            return NULL;
        }
        ws_argv_free(argv);
    } else if (script && (sbx_job_set_input(job, "script", script) != SBX_OK ||
                          (w->pm && sbx_job_set_input(job, "packageManager", w->pm) != SBX_OK))) {
        snprintf(err, errlen, "%s", sbx_job_last_error(job));
        return NULL;
    }
    if (dir && sbx_job_set_input(job, "dir", dir) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_job_last_error(job));
        return NULL;
    }
    return job;
}

/* The run's jobs from the workspace and the options; their names in
 * run order into names. Returns 0 or an exit code (err says why). */
static int plan(sbx_run *run, const struct workspace *w, const struct steps *st, const char *repo_url,
                const char *token, const char *dir, const char **names, char *err, size_t errlen)
{
    sbx_job *job;
    size_t n = 0;
    if (repo_url) {
        if (sbx_run_add_job(run, "repo.clone", &job) != SBX_OK || sbx_job_set_input(job, "url", repo_url) != SBX_OK ||
            sbx_job_set_input(job, "ref", w->commit) != SBX_OK ||
            sbx_job_set_input(job, "dir", "/vercel/sandbox/repo") != SBX_OK ||
            (token && sbx_job_set_input(job, "token", token) != SBX_OK)) {
            snprintf(err, errlen, "%s", job ? sbx_job_last_error(job) : sbx_run_last_error(run));
            return SBXRUN_EXIT_USAGE;
        }
        /* A commit is fetched by id, the whole history not needed. */
        names[n++] = "clone";
        /* The patches, applied in the sandbox in order (checked here). */
        for (size_t i = 0; i < w->npatches; i++) {
            if (sbx_run_add_job(run, "repo.applyPatch", &job) != SBX_OK ||
                sbx_job_set_input(job, "patch", w->patches[i]) != SBX_OK ||
                sbx_job_set_input(job, "dir", "/vercel/sandbox/repo") != SBX_OK) {
                snprintf(err, errlen, "%s", job ? sbx_job_last_error(job) : sbx_run_last_error(run));
                return SBXRUN_EXIT_CANNOT_RUN;
            }
            names[n++] = "apply";
        }
    }
    if (!st->no_install && (st->install_cmd || ws_has_dependencies(w))) {
        if (!(job = add_step(run, "deps.install", st->install_cmd, NULL, w, dir, err, errlen)))
            return SBXRUN_EXIT_USAGE;
        if (st->allow_scripts)
            sbx_job_set_option(job, "lifecycle_scripts", "on");
        if (st->registry && sbx_job_set_input(job, "registry", st->registry) != SBX_OK) {
            snprintf(err, errlen, "--registry: %s", sbx_job_last_error(job));
            return SBXRUN_EXIT_USAGE;
        }
        names[n++] = "install";
    }
    for (size_t i = 0; i < 4; i++) {
        if (!st->cmd[i] && !ws_has_script(w, checks[i].name))
            continue;
        if (!add_step(run, checks[i].type, st->cmd[i], checks[i].name, w, dir, err, errlen))
            return SBXRUN_EXIT_USAGE;
        names[n++] = checks[i].name;
    }
    return 0;
}

/* One --env: its name into name, its value (given, or sbxrun's own) into
 * *value. 0 or an exit code. */
static int env_arg(const char *arg, char *name, size_t namelen, const char **value, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    snprintf(name, namelen, "%.*s", (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
    *value = eq ? eq + 1 : getenv(name);
    if (!*value) {
        snprintf(err, errlen, "--env %s: no such variable in sbxrun's environment (give NAME=VALUE)", name);
        return SBXRUN_EXIT_USAGE;
    }
    return 0;
}

/* The usage errors plan() and set_envs() would meet, found before any
 * endpoint is opened: opening one may start a private sbxd and its
 * self-test sandbox, too much to learn that a command line is wrong.
 * 0 or an exit code (err says why). */
static int check_usage(const struct workspace *w, const struct steps *st, const char *const *envs, size_t nenv,
                       char *err, size_t errlen)
{
    const char *cmds[5] = {st->no_install ? NULL : st->install_cmd, st->cmd[0], st->cmd[1], st->cmd[2], st->cmd[3]};
    bool any = !st->no_install && (st->install_cmd || ws_has_dependencies(w));
    sbx_client *c;
    sbx_job *job;
    int rc = 0;
    for (size_t i = 0; i < 5; i++) {
        char **argv = NULL;
        if (cmds[i] && ws_split(cmds[i], &argv, err, errlen) < 0)
            return SBXRUN_EXIT_USAGE;
        ws_argv_free(argv);
    }
    for (size_t i = 0; i < 4; i++)
        any = any || st->cmd[i] || ws_has_script(w, checks[i].name);
    if (!any) {
        snprintf(err, errlen, "nothing to verify: %s has no lint, typecheck, test or build script, and no --lint, "
                 "--typecheck, --test or --build was given", w->package ? "package.json" : "the project (no package.json)");
        return SBXRUN_EXIT_USAGE;
    }
    if (!nenv)
        return 0;
    /* The library's own rules for a variable, on a job of a client that
     * connects to nothing. */
    if (!(c = sbx_client_new()) || !(job = sbx_job_new(c))) {
        sbx_client_free(c);
        snprintf(err, errlen, "out of memory");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    for (size_t e = 0; e < nenv && !rc; e++) {
        char name[256];
        const char *value;
        if ((rc = env_arg(envs[e], name, sizeof name, &value, err, errlen)) == 0 &&
            sbx_job_set_env(job, name, value) != SBX_OK) {
            snprintf(err, errlen, "--env %s: %s", name, sbx_job_last_error(job));
            rc = SBXRUN_EXIT_USAGE;
        }
    }
    sbx_job_free(job);
    sbx_client_free(c);
    return rc;
}

/* The tree's symbolic links and submodules, which the upload leaves out:
 * said at run time, since a project whose tests need one fails in the
 * sandbox with nothing pointing at the cause. */
static void warn_left_out(const struct workspace *w)
{
    size_t n = w->nsymlinks + w->nsubmodules;
    if (!n)
        return;
    fprintf(stderr, "sbxrun verify: warning: ");
    if (w->nsymlinks)
        fprintf(stderr, "%zu symbolic link%s", w->nsymlinks, w->nsymlinks == 1 ? "" : "s");
    if (w->nsymlinks && w->nsubmodules)
        fputs(" and ", stderr);
    if (w->nsubmodules)
        fprintf(stderr, "%zu submodule%s", w->nsubmodules, w->nsubmodules == 1 ? "" : "s");
    fprintf(stderr, " of the tree %s not sent (a sandbox's file upload takes regular files only): ",
            n == 1 ? "is" : "are");
    for (size_t i = 0; i < w->nleft_out; i++) {
        fputs(i ? ", " : "", stderr);
        put_safe(stderr, w->left_out[i], strlen(w->left_out[i]));
    }
    fputs(n > w->nleft_out ? ", ...\n" : "\n", stderr);
}

/* The same, for the --json result. */
static json_t *left_out_json(const struct workspace *w)
{
    json_t *ex = json_array();
    for (size_t i = 0; ex && i < w->nleft_out; i++)
        json_array_append_new(ex, json_string(w->left_out[i]));
    return json_pack("{s:I,s:I,s:o}", "symlinks", (json_int_t)w->nsymlinks, "submodules", (json_int_t)w->nsubmodules,
                     "examples", ex);
}

/* What was verified, in the transcript's header beside the run's own
 * inputs: the repository (--repo), the base commit and, in the order
 * applied, each patch's id (comma-separated; "" for a patch git gives no
 * id). */
static sbx_status record_inputs(sbx_transcript *t, const struct workspace *w, const char *repo)
{
    char *ids = NULL;
    size_t len = 0;
    FILE *f;
    sbx_status st;
    if (repo && (st = sbx_transcript_set_input(t, "repo", repo)) != SBX_OK)
        return st;
    if ((st = sbx_transcript_set_input(t, "baseCommit", w->commit)) != SBX_OK || !w->npatches)
        return st;
    if (!(f = open_memstream(&ids, &len)))
        return SBX_E_NOMEM;
    for (size_t i = 0; i < w->npatches; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(w->patch_info, i), "patchId"));
        fprintf(f, "%s%s", i ? "," : "", id ? id : "");
    }
    if (fclose(f) != 0) {
        free(ids);
        return SBX_E_NOMEM;
    }
    st = sbx_transcript_set_input(t, "patchIds", ids);
    free(ids);
    return st;
}

/* --env NAME=VALUE or NAME (sbxrun's own value) for every job: 0 or an
 * exit code. The library registers each value as a secret. */
static int set_envs(sbx_run *run, const char *const *envs, size_t n, char *err, size_t errlen)
{
    for (size_t e = 0; e < n; e++) {
        char name[256];
        const char *value;
        int rc = env_arg(envs[e], name, sizeof name, &value, err, errlen);
        if (rc)
            return rc;
        for (size_t i = 0; i < sbx_run_job_count(run); i++) {
            sbx_job *job = sbx_run_job(run, i);
            if (sbx_job_set_env(job, name, value) != SBX_OK) {
                snprintf(err, errlen, "--env %s: %s", name, sbx_job_last_error(job));
                return SBXRUN_EXIT_USAGE;
            }
        }
    }
    return 0;
}

int cmd_verify(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"patch", required_argument, NULL, O_PATCH},       {"base", required_argument, NULL, O_BASE},
        {"repo", required_argument, NULL, O_REPO},         {"ref", required_argument, NULL, O_REF},
        {"install", required_argument, NULL, O_INSTALL},   {"no-install", no_argument, NULL, O_NO_INSTALL},
        {"lint", required_argument, NULL, O_LINT},         {"typecheck", required_argument, NULL, O_TYPECHECK},
        {"test", required_argument, NULL, O_TEST},         {"build", required_argument, NULL, O_BUILD},
        {"timeout", required_argument, NULL, O_TIMEOUT},   {"transcript", required_argument, NULL, O_TRANSCRIPT},
        {"verbose", no_argument, NULL, O_VERBOSE},         {"help", no_argument, NULL, O_HELP},
        {"allow-scripts", no_argument, NULL, O_ALLOW_SCRIPTS}, {"keep-going", no_argument, NULL, O_KEEP_GOING},
        {"runtime", required_argument, NULL, O_RUNTIME},   {"registry", required_argument, NULL, O_REGISTRY},
        {"env", required_argument, NULL, O_ENV},           {"token-env", required_argument, NULL, O_TOKEN_ENV},
        REMOTE_LONGOPTS,
        {NULL, 0, NULL, 0}};
    struct remote_opts o = remote_defaults;
    struct remote r = {0};
    struct steps st = {0};
    struct workspace w = {0};
    struct view v = {0};
    const char *patches[MAX_PATCHES], *base = NULL, *repo = NULL, *ref = NULL, *transcript = NULL, *dir = ".";
    const char *runtime = NULL, *names[MAX_PATCHES + 8], *envs[MAX_ENV], *token_env = NULL, *token = NULL;
    size_t nenv = 0;
    size_t npatches = 0;
    int64_t timeout = 30 * 60000;
    bool keep_going = false, remote_ready = false;
    char err[2048] = "", sandbox_dir[4200];
    sbx_run *run = NULL;
    sbx_transcript *t = NULL;
    sbx_op *op = NULL;
    sbx_status s;
    int c, rc = SBXRUN_EXIT_CANNOT_RUN;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        switch (c) {
        case O_PATCH:
            if (npatches == MAX_PATCHES)
                return cli_usage_error("verify", "at most %d --patch", MAX_PATCHES);
            patches[npatches++] = optarg;
            break;
        case O_BASE: base = optarg; break;
        case O_REPO: repo = optarg; break;
        case O_REF: ref = optarg; break;
        case O_TOKEN_ENV: token_env = optarg; break;
        case O_INSTALL: st.install_cmd = optarg; break;
        case O_NO_INSTALL: st.no_install = true; break;
        case O_LINT: st.cmd[0] = optarg; break;
        case O_TYPECHECK: st.cmd[1] = optarg; break;
        case O_TEST: st.cmd[2] = optarg; break;
        case O_BUILD: st.cmd[3] = optarg; break;
        case O_ALLOW_SCRIPTS: st.allow_scripts = true; break;
        case O_KEEP_GOING: keep_going = true; break;
        case O_RUNTIME: runtime = optarg; break;
        case O_REGISTRY: st.registry = optarg; break;
        case O_ENV:
            if (nenv == MAX_ENV)
                return cli_usage_error("verify", "at most %d --env", MAX_ENV);
            envs[nenv++] = optarg;
            break;
        case O_TIMEOUT:
            if (cli_duration("verify", "--timeout", optarg, 1, &timeout))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_TRANSCRIPT: transcript = optarg; break;
        case O_VERBOSE: v.verbose = true; break;
        case 'h':
        case O_HELP: fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        default: return cli_bad_option("verify", argc, argv, longopts);
        }
    }
    if (optind < argc)
        dir = argv[optind++];
    if (optind < argc)
        return cli_usage_error("verify", "one DIR at most ('%s' is extra)", argv[optind]);
    if (st.install_cmd && st.no_install)
        return cli_usage_error("verify", "--install and --no-install do not go together");
    if (st.install_cmd && st.allow_scripts)
        return cli_usage_error("verify", "--allow-scripts is for the lockfile's install: --install CMD runs as given");
    if (ref && !repo)
        return cli_usage_error("verify", "--ref is for --repo (for DIR's repository, use --base)");
    if (base && repo)
        return cli_usage_error("verify", "--base is for DIR's repository (for --repo, use --ref)");
    if (token_env && !repo)
        return cli_usage_error("verify", "--token-env is for --repo (the git host's token)");
    /* A URL's credentials would be kept and shown wherever the URL is (the
     * transcript, the result, the clone's argv in the sandbox). */
    if (repo && ws_url_has_credentials(repo))
        return cli_usage_error("verify", "--repo: a URL with credentials in it (user:password@ or TOKEN@) is refused; "
                               "give the URL without them and the token in an environment variable, named with "
                               "--token-env NAME");
    if (token_env && (!(token = getenv(token_env)) || !*token))
        return cli_usage_error("verify", "--token-env %s: no such variable in sbxrun's environment, or it is empty",
                               token_env);
    /* The clone job sends the token as an HTTP header: said before the
     * fetch, as the library would say it after. */
    if (token && strncasecmp(repo, "http://", 7) != 0 && strncasecmp(repo, "https://", 8) != 0)
        return cli_usage_error("verify", "--token-env: the token is sent as an HTTP header: --repo must be an "
                               "http:// or https:// URL");
    v.json = o.json;
    v.tty = cli_live_view(2) && !o.json;
    v.color = cli_color();
    v.current = SIZE_MAX;
    v.names = names;
    v.t0 = cli_mono_ms();

    /* 1. The workspace, on this machine: nothing of it runs here. */
    if ((rc = ws_prepare(&w, repo && !strcmp(dir, ".") ? NULL : dir, base, repo, ref, token, patches, npatches,
                         err, sizeof err)) != 0)
        goto report;
    if (!o.json)
        fprintf(stderr, "sbxrun verify: %s%s%s at %.12s%s%s\n", repo ? repo : w.root, w.subdir[0] ? "/" : "",
                w.subdir, w.commit, npatches ? ", patched" : "", w.pm && w.lockfile ? "" : "");

    if (!repo)
        warn_left_out(&w);
    if ((rc = check_usage(&w, &st, envs, nenv, err, sizeof err)) != 0)
        goto report;

    /* 2. The run: its jobs, from package.json and the options. */
    if ((s = remote_open(&r, &o, true, err, sizeof err)) != SBX_OK) {
        rc = remote_open_exit(s);
        goto report;
    }
    remote_ready = true;
    if (!(run = sbx_run_new(r.client))) {
        snprintf(err, sizeof err, "out of memory");
        rc = SBXRUN_EXIT_CANNOT_RUN;
        goto report;
    }
    if (repo && w.subdir[0])
        snprintf(sandbox_dir, sizeof sandbox_dir, "/vercel/sandbox/repo/%s", w.subdir);
    else
        snprintf(sandbox_dir, sizeof sandbox_dir, "%s", repo ? "/vercel/sandbox/repo" : "/vercel/sandbox");
    if ((rc = plan(run, &w, &st, repo, token, sandbox_dir, names, err, sizeof err)) != 0)
        goto report;
    if (!repo && (s = sbx_run_add_upload(run, w.tree, "/vercel/sandbox")) != SBX_OK) {
        snprintf(err, sizeof err, "%s", sbx_run_last_error(run));
        rc = SBXRUN_EXIT_CANNOT_RUN;
        goto report;
    }
    sbx_run_set_budget(run, timeout, 0, 0);
    if (keep_going)
        sbx_run_set_option(run, "keep_going", "on");
    if (runtime && sbx_run_set_option(run, "runtime", runtime) != SBX_OK) {
        snprintf(err, sizeof err, "%s", sbx_run_last_error(run));
        rc = SBXRUN_EXIT_USAGE;
        goto report;
    }
    if (v.verbose && !o.json)
        for (size_t i = 0; i < sbx_run_job_count(run); i++)
            sbx_job_set_output_cb(sbx_run_job(run, i), on_output, NULL);
    if ((rc = set_envs(run, envs, nenv, err, sizeof err)) != 0)
        goto report;
    if (transcript) {
        if (!(t = sbx_transcript_new()) || sbx_transcript_set_file(t, transcript) != SBX_OK ||
            record_inputs(t, &w, repo) != SBX_OK || sbx_run_set_transcript(run, t) != SBX_OK) {
            snprintf(err, sizeof err, "--transcript %s: %s", transcript, t ? sbx_transcript_last_error(t) : "out of memory");
            rc = SBXRUN_EXIT_CANNOT_RUN;
            goto report;
        }
    }
    sbx_run_set_progress_cb(run, on_progress, &v);

    /* 3. Carry it out, drawing the live view between events. */
    if ((s = sbx_run_execute_start(run, &op)) != SBX_OK) {
        snprintf(err, sizeof err, "%s", sbx_run_last_error(run));
        rc = s == SBX_E_INVALID_ARG ? SBXRUN_EXIT_USAGE : SBXRUN_EXIT_CANNOT_RUN;
        goto report;
    }
    cli_cancel_on_signal(op);
    while (!sbx_op_done(op)) {
        if (!cli_pump(r.client, v.tty ? SPIN_MS : -1)) /* a terminal's spinner turns */
            break;
        draw(&v, run);
    }
    cli_cancel_on_signal(NULL);
    clear_line(&v);
    rc = exit_for(sbx_run_verdict(run));
    if (cli_interrupted())
        rc = SBXRUN_EXIT_INTERRUPTED;
    if (sbx_op_status(op) != SBX_OK && sbx_op_status(op) != SBX_E_CANCELLED && !sbx_run_job_count(run))
        rc = SBXRUN_EXIT_CANNOT_RUN;

report:
    if (run && op && sbx_op_done(op)) { /* carried out (whatever the verdict): its result */
        char *js = NULL;
        json_t *res = NULL;
        if (sbx_run_result_to_json(run, &js) == SBX_OK)
            res = json_loads(js, 0, NULL);
        sbx_free(js);
        if (res && w.patch_info)
            json_object_set(res, "patches", w.patch_info);
        if (res && w.commit)
            json_object_set_new(res, "baseCommit", json_string(w.commit));
        if (res && !repo && w.nsymlinks + w.nsubmodules)
            json_object_set_new(res, "notUploaded", left_out_json(&w));
        if (o.json)
            cli_json_result("verify", rc, res);
        else
            json_decref(res);
        if (!o.json) {
            const char *msg = NULL;
            json_t *rr = NULL;
            if (sbx_run_result_to_json(run, &js) == SBX_OK)
                rr = json_loads(js, 0, NULL);
            sbx_free(js);
            msg = json_string_value(json_object_get(rr, "message"));
            fprintf(stderr, "sbxrun verify: %s in %.1fs%s%s\n", sbx_job_verdict_name(sbx_run_verdict(run)),
                    (double)(cli_mono_ms() - v.t0) / 1000.0, rc && msg ? ": " : "", rc && msg ? msg : "");
            json_decref(rr);
        }
    } else if (rc) {
        sbx_status why = rc == SBXRUN_EXIT_DENIED        ? SBX_E_PATCH
                         : rc == SBXRUN_EXIT_DOES_NOT_APPLY ? SBX_E_PATCH
                         : rc == SBXRUN_EXIT_USAGE          ? SBX_E_INVALID_ARG
                         : run && op                        ? sbx_op_status(op)
                                                            : SBX_E_IO;
        if (o.json)
            cli_json_error("verify", rc, "verify", why, err);
        fprintf(stderr, "sbxrun verify: %s\n", err[0] ? err : sbx_strerror(why));
    }
    if (op)
        sbx_op_free(op);
    if (run && sbx_run_sandbox(run))
        cli_runtime_warning("verify", runtime, sbx_run_sandbox(run));
    sbx_run_free(run);
    sbx_transcript_free(t);
    ws_free(&w);
    if (remote_ready)
        remote_close(&r);
    return rc;
}
