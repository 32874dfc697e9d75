/* SPDX-License-Identifier: MIT */
/*
 * sbxrun exec: run one program in a sandbox, its output streamed to ours,
 * its exit code ours. Without --sandbox a new sandbox is made for it and
 * stopped afterwards (on the local sbxd, a private one when none runs).
 * That sandbox gets a short timeout (the lease), extended while the
 * program runs: an sbxrun killed with SIGKILL cannot stop it, and without
 * the lease it would run (and be billed) for the server's default timeout
 * or longer.
 */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "remote.h"

/* sbxrun's own failure, distinct from the program's exit codes (as env(1),
 * docker run). */
#define EXIT_EXEC_FAILED SBXRUN_EXIT_CANNOT_RUN

/* The lease of a new sandbox: its timeout at creation, renewed every third
 * of it, so a failed renewal or two is survived. The server's minimum
 * timeout is a second. */
#define LEASE_DEFAULT_MS 180000
#define LEASE_MIN_MS 1000

/* --json keeps the last MiB of each stream. */
#define TAIL_MAX (1u << 20)

static const char usage_text[] =
    "usage: sbxrun exec [--sandbox ID] [--cwd DIR] [--env NAME=VALUE]... [--sudo]\n"
    "                   [--timeout D] [--detach] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM (no shell) in a sandbox: its stdout and stderr are streamed to\n"
    "sbxrun's as they arrive, and sbxrun exits with its exit code (128+N when a\n"
    "signal N ended it). Without --sandbox a sandbox is created for the run and\n"
    "stopped after it; its timeout is a short lease that sbxrun extends while\n"
    "PROGRAM runs, so a killed sbxrun leaves nothing running for long.\n"
    "\n"
    "  --sandbox ID        run in this existing sandbox: its id, or the name of a\n"
    "                      named sandbox (started when it is stopped)\n"
    "  --cwd DIR           working directory [/vercel/sandbox]\n"
    "  --env NAME=VALUE    environment variable (repeatable)\n"
    "  --sudo              run as root of the sandbox\n"
    "  --timeout D         kill the program (SIGKILL) after D (300 or 300s, 5m,\n"
    "                      1h, 500ms; a bare number is seconds) and exit 124\n"
    "  --detach            start PROGRAM in the --sandbox and print its command\n"
    "                      id; it keeps running (follow it with the API, or stop\n"
    "                      the sandbox)\n"
    "  --no-stdin          do not refuse a standard input that holds data\n"
    "  --lease D           a new sandbox's timeout, extended while the program\n"
    "                      runs: if sbxrun is killed, the sandbox stops at most\n"
    "                      D later [3m]\n"
    "  --runtime NAME      the runtime of a new sandbox [node24]\n"
    "  --network-policy P  allow-all, deny-all, or JSON (the API's {\"mode\": ...}\n"
    "                      or the SDK's {\"allow\": [DOMAIN...]}), for a new sandbox\n"
    "  --policy FILE       check PROGRAM ARGS against this command policy\n"
    "                      (doc/policy.md) instead of the default one\n"
    "  --allow PROGRAM     also allow this program (repeatable); `--allow sh`\n"
    "                      lets a shell run anything: the policy cannot read it\n"
    "  --no-policy         do not check the command at all\n"
    "  --secret VALUE      also redact this value from the output (repeatable)\n"
    "  --no-redact         print the output as it comes, secrets included\n"
    "  --transcript FILE   record the run in a transcript (doc/transcript.md):\n"
    "                      written as it goes, verified by `sbxrun transcript\n"
    "                      verify`; always redacted, even with --no-redact;\n"
    "                      a run whose transcript cannot be written (a full\n"
    "                      disk) exits 125, whatever the program did\n" REMOTE_OPTS_HELP
    "\n"
    "Before anything is created the command is checked against the command\n"
    "policy (by default: git, bun, node, ls, cat, sed, rg, paths inside\n"
    "/vercel/sandbox); a denied command exits 3 with the reason on stderr.\n"
    "The output is redacted as by `sbxrun redact` (credential shapes, the values\n"
    "of secret-looking variables of sbxrun and of --env, --secret values).\n"
    "\n"
    "Commands run without a terminal and without standard input (the protocol\n"
    "has none): when sbxrun's standard input holds data (a pipe or a file with\n"
    "bytes ready) it refuses to run, rather than drop them; copy input in with\n"
    "`sbxrun cp`, or give --no-stdin (as in a `while read` loop, whose input\n"
    "sbxrun would otherwise see). Ctrl-C (or SIGTERM) kills the program in\n"
    "the sandbox and exits 130.\n"
    "\n"
    "With --json nothing is streamed: sbxrun's JSON envelope (sbxrun(1), JSON\n"
    "OUTPUT) is printed at the end, its result sandboxId, commandId, exitCode,\n"
    "stdout, stderr (their last MiB), the byte counts and durationMs; when the\n"
    "program was cut short (timeout, Ctrl-C, a lost connection) the result holds\n"
    "what it printed so far, exitCode null (137 once its kill was seen), beside\n"
    "the error object. Exit\n"
    "status: the program's; 124 when --timeout ended it; 130 on Ctrl-C; 2 usage;\n"
    "3 denied by the policy; 125 when sbxrun could not run it or could not\n"
    "write its transcript (the reason on stderr).\n";

enum {
    O_SANDBOX = 1, O_CWD, O_ENV, O_SUDO, O_TIMEOUT, O_RUNTIME, O_NETPOLICY, O_POLICY, O_ALLOW, O_NO_POLICY,
    O_SECRET, O_NO_REDACT, O_TRANSCRIPT, O_LEASE, O_DETACH, O_NO_STDIN, O_HELP
};

/* Bytes are waiting on standard input: a pipe or file with data ready now
 * (a zero-timeout poll, then the count; an open, empty pipe, as CI jobs
 * leave, is not refused, nor /dev/null or a terminal). */
static bool stdin_has_data(void)
{
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    int n = 0;
    if (isatty(STDIN_FILENO) || poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
        return false;
    return ioctl(STDIN_FILENO, FIONREAD, &n) == 0 && n > 0;
}

#define MAX_ALLOW 64

/* The command policy of the run, from --policy and --allow: 0, or sbxrun's
 * exit status after saying why. */
static int build_policy(const char *file, const char *const *allow, int nallow, sbx_policy **out)
{
    sbx_policy *p = sbx_policy_new();
    int rc;
    *out = NULL;
    if (!p)
        return cli_fail("exec", EXIT_EXEC_FAILED, SBX_E_NOMEM, "out of memory");
    if (file && sbx_policy_load_file(p, file) != SBX_OK) {
        rc = cli_usage_error("exec", "--policy: %s", sbx_policy_last_error(p));
        sbx_policy_free(p);
        return rc;
    }
    for (int i = 0; i < nallow; i++) {
        if (sbx_policy_allow_program(p, NULL, allow[i]) != SBX_OK) {
            rc = cli_usage_error("exec", "--allow: %s", sbx_policy_last_error(p));
            sbx_policy_free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

/* The library's verdict on the command before anything is created (no
 * endpoint is contacted: the check is local): 0 to go on, else sbxrun's
 * exit status; a denial (3) is said in denied, for --json. */
static int precheck(const sbx_policy *p, const char *cwd, int argc, char **argv, char *denied, size_t deniedlen)
{
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s = c ? sbx_sandbox_new(c) : NULL;
    sbx_command *k = s ? sbx_command_new(s) : NULL;
    sbx_status st;
    int rc = 0;
    if (!k) {
        rc = cli_fail("exec", EXIT_EXEC_FAILED, SBX_E_NOMEM, "out of memory");
    } else if (sbx_client_set_policy(c, p, NULL) != SBX_OK) {
        rc = cli_fail("exec", EXIT_EXEC_FAILED, SBX_E_NOMEM, "%s", sbx_client_last_error(c));
    } else if (sbx_command_set_argv(k, (size_t)argc, (const char *const *)argv) != SBX_OK ||
               (cwd && sbx_command_set_cwd(k, cwd) != SBX_OK)) {
        rc = cli_usage_error("exec", "%s", sbx_command_last_error(k));
    } else if ((st = sbx_command_check(k)) == SBX_E_POLICY_DENIED) {
        snprintf(denied, deniedlen, "%s", sbx_command_last_error(k));
        fprintf(stderr, "sbxrun exec: %s\n", denied);
        rc = SBXRUN_EXIT_DENIED;
    } else if (st != SBX_OK) {
        rc = cli_usage_error("exec", "%s", sbx_command_last_error(k));
    }
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return rc;
}

/* The end of one output stream, for --json. */
struct tail {
    char *buf; /* 2 * TAIL_MAX once used */
    size_t len;
};

/* Output arrives redacted by the library (the client's redactor; as
 * printed with --no-redact) and goes to our stdout/stderr and into the
 * transcript's step (tr NULL: no --transcript), which redacts on its own.
 * tr_err: the first failure that cost the transcript an entry or its file
 * ("" if none). */
struct sink {
    sbx_transcript *tr;
    size_t step;
    char tr_err[512];
    bool json;            /* keep tails instead of printing */
    struct tail tails[2]; /* stdout, stderr */
};

/* Keep the last TAIL_MAX bytes: appended into twice that room, the last
 * TAIL_MAX moved to the front when it fills (each byte moves at most once
 * per TAIL_MAX bytes appended). Out of memory drops the output. */
static void tail_add(struct tail *t, const char *p, size_t n)
{
    if (!t->buf && !(t->buf = malloc(2 * TAIL_MAX)))
        return;
    if (n >= TAIL_MAX) {
        p += n - TAIL_MAX;
        n = TAIL_MAX;
        t->len = 0;
    } else if (t->len + n > 2 * TAIL_MAX) {
        size_t keep = TAIL_MAX - n;
        memmove(t->buf, t->buf + t->len - keep, keep);
        t->len = keep;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
}

/* Note a failed transcript call. An SBX_E_IO of the journal alone loses
 * nothing yet: the entries stay in memory and sbx_transcript_finish()
 * writes them all, so only its outcome decides for I/O. */
static void tr_failed(struct sink *k, sbx_status st)
{
    if (st == SBX_OK || st == SBX_E_IO || k->tr_err[0])
        return;
    snprintf(k->tr_err, sizeof k->tr_err, "%s", sbx_transcript_last_error(k->tr));
}

static void put(FILE *f, const char *data, size_t len)
{
    fwrite(data, 1, len, f);
    fflush(f);
}

static int stream_out(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct sink *k = user;
    if (k->tr)
        tr_failed(k, sbx_transcript_step_add_output(k->tr, k->step, stream, data, len));
    if (k->json)
        tail_add(&k->tails[stream == SBX_STREAM_STDERR], (const char *)data, len);
    else if (stream == SBX_STREAM_STDERR)
        put(stderr, (const char *)data, len);
    else
        put(stdout, (const char *)data, len);
    return 0;
}

/* The redactor for a run: the shapes, sbxrun's own secret-looking
 * environment (as sbxrun redact), --secret values, and the values of --env
 * variables whose names look secret. */
static sbx_redactor *exec_redactor(const char *const *secrets, int nsecrets, const char *const *envs, int nenv)
{
    sbx_redactor *r = sbx_redactor_new();
    if (!r || cli_add_env_secrets(r) != 0)
        goto fail;
    for (int i = 0; i < nsecrets; i++) {
        if (sbx_redactor_add_secret(r, (const uint8_t *)secrets[i], strlen(secrets[i])) != SBX_OK) {
            cli_usage_error("exec", "--secret: %s", sbx_redactor_last_error(r));
            goto fail;
        }
    }
    for (int i = 0; i < nenv; i++) {
        const char *eq = strchr(envs[i], '=');
        size_t vlen = strlen(eq + 1);
        if (cli_secret_name(envs[i], (size_t)(eq - envs[i])) && vlen >= 8 && vlen <= 4096 &&
            sbx_redactor_add_secret(r, (const uint8_t *)(eq + 1), vlen) == SBX_E_NOMEM)
            goto fail;
    }
    return r;
fail:
    sbx_redactor_free(r);
    return NULL;
}

/* --transcript: the job header and the file, before anything runs (a
 * crash leaves what was recorded). NULL after printing why; *st says why. */
static sbx_transcript *open_transcript(const char *path, const sbx_redactor *red, const char *endpoint,
                                       const char *sandbox_id, int argc, char **argv, const char *cwd,
                                       const char *const *envs, int nenv, size_t *step, sbx_status *why)
{
    sbx_transcript *t = sbx_transcript_new();
    sbx_redactor *plain = NULL;
    sbx_status st = SBX_E_NOMEM;
    if (!t)
        goto fail;
    /* Always redacted: --no-redact is about the terminal, not the record. */
    if (!red && !(red = plain = sbx_redactor_new()))
        goto fail;
    if ((st = sbx_transcript_set_redactor(t, red)) != SBX_OK || (st = sbx_transcript_set_job_type(t, "exec")) != SBX_OK ||
        (endpoint && (st = sbx_transcript_set_endpoint(t, endpoint)) != SBX_OK) ||
        (sandbox_id && (st = sbx_transcript_set_sandbox_id(t, sandbox_id)) != SBX_OK) ||
        (st = sbx_transcript_set_file(t, path)) != SBX_OK ||
        (st = sbx_transcript_step_begin(t, "exec", step)) != SBX_OK ||
        (st = sbx_transcript_step_set_argv(t, *step, (size_t)argc, (const char *const *)argv)) != SBX_OK ||
        (st = sbx_transcript_step_set_cwd(t, *step, cwd ? cwd : "/vercel/sandbox")) != SBX_OK)
        goto fail;
    for (int i = 0; i < nenv; i++)
        if ((st = sbx_transcript_step_add_env(t, *step, envs[i])) != SBX_OK)
            goto fail;
    sbx_redactor_free(plain);
    return t;
fail:
    cli_fail("exec", 0, st, "--transcript: %s", t ? sbx_transcript_last_error(t) : "out of memory");
    sbx_redactor_free(plain);
    sbx_transcript_free(t);
    *why = st;
    return NULL;
}

/* End the step and the transcript (how it went, the verdict), then free
 * it. 0, or after saying on stderr that the record is missing or partial,
 * EXIT_EXEC_FAILED: a run whose record was asked for and not kept did not
 * do what was asked, whatever the program's exit code. */
static int close_transcript(struct sink *k, const char *path, sbx_step_outcome how, int code, const char *detail,
                            sbx_verdict verdict)
{
    sbx_status st;
    if (!k->tr)
        return 0;
    tr_failed(k, sbx_transcript_step_end(k->tr, k->step, how, code,
                                         how == SBX_STEP_POLICY_DENIED ? 0 : how != SBX_STEP_EXITED, detail));
    if ((st = sbx_transcript_finish(k->tr, verdict)) != SBX_OK && !k->tr_err[0])
        snprintf(k->tr_err, sizeof k->tr_err, "%s", sbx_transcript_last_error(k->tr));
    sbx_transcript_free(k->tr);
    k->tr = NULL;
    if (!k->tr_err[0])
        return 0;
    return cli_fail("exec", EXIT_EXEC_FAILED, SBX_E_IO, "the transcript %s could not be written (%s); failing the run",
                    path, k->tr_err);
}


/* A stream's last MiB for --json: already redacted by the library (or,
 * with --no-redact, as printed). */
static json_t *tail_json(struct tail *t)
{
    size_t len = t->len < TAIL_MAX ? t->len : TAIL_MAX;
    const char *all = t->buf ? t->buf + t->len - len : NULL;
    return json_stringn_nocheck(all ? all : "", len);
}

/* Drive the client until op ends. lease_ms > 0: on the way, extend the
 * sandbox's timeout by the time passed since the last extension, every
 * third of the lease, so it always has about a lease left. A failed
 * extension is said once; the next one makes up for it (unless the
 * server refused: past the maximum, the sandbox ends at its timeout). */
/* --json's result: what the program printed (the last MiB of each
 * stream), its ids, and its exit code (null when it did not end). */
static json_t *run_result(struct sink *sink, sbx_sandbox *s, sbx_command *k, const struct timespec *t0)
{
    struct timespec t1;
    int code = sbx_command_exit_code(k);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return json_pack("{s:s?,s:s?,s:o,s:o,s:o,s:I,s:I,s:I}", "sandboxId", sbx_sandbox_id(s), "commandId",
                     sbx_command_id(k), "exitCode", code >= 0 ? json_integer(code) : json_null(), "stdout",
                     tail_json(&sink->tails[0]), "stderr", tail_json(&sink->tails[1]), "stdoutBytes",
                     (json_int_t)sbx_command_output_bytes(k, SBX_STREAM_STDOUT), "stderrBytes",
                     (json_int_t)sbx_command_output_bytes(k, SBX_STREAM_STDERR), "durationMs",
                     (json_int_t)((t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000));
}

static sbx_status drive_leased(sbx_client *c, sbx_sandbox *s, sbx_op *op, int64_t lease_ms)
{
    int64_t every = lease_ms / 3, last = cli_mono_ms(), next = last + every, from = 0;
    sbx_op *ext = NULL;
    bool said = false, refused = false;
    while (!sbx_op_done(op)) {
        int64_t cap = -1, now;
        if (lease_ms && !refused && !ext) { /* wake for the next extension */
            cap = next - cli_mono_ms();
            cap = cap < 0 ? 0 : cap;
        }
        if (!cli_pump(c, cap))
            break;
        now = cli_mono_ms();
        if (ext && sbx_op_done(ext)) {
            sbx_status st = sbx_op_status(ext);
            if (st == SBX_OK) {
                last = from;
            } else {
                refused = st != SBX_E_TRANSPORT && st != SBX_E_TIMEOUT && st != SBX_E_RATE_LIMITED;
                if (!said)
                    fprintf(stderr, "sbxrun exec: could not extend the sandbox's timeout: %s%s\n",
                            sbx_op_last_error(ext), refused ? "" : " (will try again)");
                said = true;
            }
            sbx_op_free(ext);
            ext = NULL;
            next = now + every;
        }
        if (lease_ms && !refused && !ext && now >= next) {
            from = now;
            if (sbx_sandbox_extend_timeout_start(s, now - last, &ext) != SBX_OK) {
                ext = NULL;
                next = now + every;
            }
        }
    }
    sbx_op_free(ext);
    return sbx_op_status(op);
}

int cmd_exec(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sandbox", required_argument, NULL, O_SANDBOX}, {"cwd", required_argument, NULL, O_CWD},
        {"env", required_argument, NULL, O_ENV},         {"sudo", no_argument, NULL, O_SUDO},
        {"timeout", required_argument, NULL, O_TIMEOUT}, {"runtime", required_argument, NULL, O_RUNTIME},
        {"network-policy", required_argument, NULL, O_NETPOLICY}, {"help", no_argument, NULL, O_HELP},
        {"policy", required_argument, NULL, O_POLICY},   {"allow", required_argument, NULL, O_ALLOW},
        {"no-policy", no_argument, NULL, O_NO_POLICY},   {"secret", required_argument, NULL, O_SECRET},
        {"no-redact", no_argument, NULL, O_NO_REDACT},   {"transcript", required_argument, NULL, O_TRANSCRIPT},
        {"lease", required_argument, NULL, O_LEASE},     {"detach", no_argument, NULL, O_DETACH},
        {"no-stdin", no_argument, NULL, O_NO_STDIN},     REMOTE_LONGOPTS,
        {NULL, 0, NULL, 0}};
    struct remote_opts o = remote_defaults;
    struct remote r;
    const char *sandbox_id = NULL, *cwd = NULL, *runtime = NULL, *policy = NULL, *cmd_policy = NULL;
    const char *transcript = NULL;
    const char *envs[256], *allow[MAX_ALLOW], *secrets[MAX_ALLOW];
    int nenv = 0, nallow = 0, nsecrets = 0, sudo = 0, c, rc = EXIT_EXEC_FAILED;
    bool no_policy = false, no_redact = false, detach = false, no_stdin = false;
    sbx_redactor *red = NULL;
    sbx_policy *cmdpol = NULL;
    struct sink sink = {NULL, 0, "", false, {{NULL, 0}, {NULL, 0}}};
    sbx_step_outcome how = SBX_STEP_TRANSPORT_ERROR;
    sbx_verdict verdict = SBX_VERDICT_ERROR;
    char detail[1024] = "";
    int64_t timeout = 0, lease = 0;
    char err[1024];
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL;
    sbx_op *op = NULL;
    sbx_status st;
    bool own_sandbox = false; /* read at "out" even when we leave early */
    json_t *result = NULL;    /* --json: printed at the end */
    const char *failed = NULL; /* --json: what failed, failed_st why, detail the message */
    sbx_status failed_st = SBX_OK;
    char denied[1200] = "";
    struct timespec t0, t1;

    optind = 1;
    /* "+": stop at the first non-option, so PROGRAM's options are its own. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        switch (c) {
        case O_SANDBOX: sandbox_id = optarg; break;
        case O_CWD: cwd = optarg; break;
        case O_ENV:
            if (nenv == 256 || !strchr(optarg, '=') || optarg[0] == '=')
                return cli_usage_error("exec", "--env wants NAME=VALUE (at most 256), not '%s'", optarg);
            envs[nenv++] = optarg;
            break;
        case O_SUDO: sudo = 1; break;
        case O_TIMEOUT:
            if (cli_duration("exec", "--timeout", optarg, 1, &timeout))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_LEASE:
            if (cli_duration("exec", "--lease", optarg, LEASE_MIN_MS, &lease))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_DETACH: detach = true; break;
        case O_NO_STDIN: no_stdin = true; break;
        case O_RUNTIME: runtime = optarg; break;
        case O_POLICY: cmd_policy = optarg; break;
        case O_NO_REDACT: no_redact = true; break;
        case O_TRANSCRIPT: transcript = optarg; break;
        case O_SECRET:
            if (nsecrets == MAX_ALLOW)
                return cli_usage_error("exec", "at most %d --secret", MAX_ALLOW);
            secrets[nsecrets++] = optarg;
            break;
        case O_NO_POLICY: no_policy = true; break;
        case O_ALLOW:
            if (nallow == MAX_ALLOW)
                return cli_usage_error("exec", "at most %d --allow", MAX_ALLOW);
            allow[nallow++] = optarg;
            break;
        case O_NETPOLICY:
            if (!(policy = cli_network_policy("exec", optarg)))
                return SBXRUN_EXIT_USAGE;
            break;
        case 'h':
        case O_HELP: fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        default: return cli_bad_option("exec", argc, argv, longopts);
        }
    }
    if (optind >= argc)
        return cli_usage_error("exec", "no PROGRAM (usage: sbxrun exec [options] -- PROGRAM [ARGS...])");
    if (sandbox_id && (runtime || policy || lease))
        return cli_usage_error("exec", "--runtime, --network-policy and --lease are for a new sandbox, not --sandbox");
    if (detach && !sandbox_id)
        return cli_usage_error("exec", "--detach needs --sandbox ID (a sandbox made for one command is stopped "
                                       "when sbxrun exits)");
    if (detach && (timeout || transcript))
        return cli_usage_error("exec", "--detach does not go with --timeout or --transcript (sbxrun does not "
                                       "follow a detached command)");
    if (!no_stdin && stdin_has_data())
        return cli_usage_error("exec", "standard input holds data, but commands run without standard input (the "
                                       "protocol has none): copy it in with 'sbxrun cp', or give --no-stdin");
    if (!lease)
        lease = LEASE_DEFAULT_MS;
    if (no_policy && (cmd_policy || nallow))
        return cli_usage_error("exec", "--no-policy does not go with --policy or --allow");
    if (!no_redact || transcript) {
        if (!(red = exec_redactor(secrets, nsecrets, envs, nenv)))
            return SBXRUN_EXIT_USAGE;
    }
    /* The library checks the command (here, before anything is created;
     * again when it starts) and redacts its output: the client carries the
     * policy and the redactor. */
    if (!no_policy && ((rc = build_policy(cmd_policy, allow, nallow, &cmdpol)) != 0 ||
                       (rc = precheck(cmdpol, cwd, argc - optind, argv + optind, denied, sizeof denied)) != 0)) {
        /* Refused before anything was made: the record says so. */
        if (rc == SBXRUN_EXIT_DENIED && transcript) {
            if (!(sink.tr = open_transcript(transcript, red, o.endpoint, sandbox_id, argc - optind, argv + optind,
                                            cwd, envs, nenv, &sink.step, &st)))
                rc = EXIT_EXEC_FAILED;
            else if (close_transcript(&sink, transcript, SBX_STEP_POLICY_DENIED, -1, "denied by the command policy",
                                      SBX_VERDICT_DENIED))
                rc = EXIT_EXEC_FAILED;
        }
        if (o.json && rc == SBXRUN_EXIT_DENIED)
            cli_json_error("exec", rc, "policy", SBX_E_POLICY_DENIED, denied);
        sbx_policy_free(cmdpol);
        sbx_redactor_free(red);
        return rc;
    }
    rc = EXIT_EXEC_FAILED;
    own_sandbox = sandbox_id == NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((st = remote_open(&r, &o, own_sandbox, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "exec", remote_open_exit(st), "connect", st, err);
        remote_close(&r);
        sbx_policy_free(cmdpol);
        sbx_redactor_free(red);
        return rc;
    }
    if ((cmdpol && sbx_client_set_policy(r.client, cmdpol, NULL) != SBX_OK) ||
        (!no_redact && sbx_client_set_redactor(r.client, red) != SBX_OK)) {
        rc = cli_fail("exec", EXIT_EXEC_FAILED, SBX_E_NOMEM, "%s", sbx_client_last_error(r.client));
        goto out;
    }
    if (transcript && !(sink.tr = open_transcript(transcript, red, r.endpoint, sandbox_id, argc - optind,
                                                  argv + optind, cwd, envs, nenv, &sink.step, &st))) {
        /* A file that cannot be written (a full disk) is not a usage error. */
        rc = st == SBX_E_IO || st == SBX_E_NOMEM ? EXIT_EXEC_FAILED : SBXRUN_EXIT_USAGE;
        goto out;
    }
    s = sbx_sandbox_new(r.client);
    if (!s)
        goto oom;
    if (own_sandbox) {
        if ((runtime && (st = sbx_sandbox_set_runtime(s, runtime)) != SBX_OK) ||
            (policy && (st = sbx_sandbox_set_network_policy_json(s, policy)) != SBX_OK) ||
            (st = sbx_sandbox_set_timeout_ms(s, lease)) != SBX_OK) {
            rc = cli_usage_error("exec", "%s", sbx_sandbox_last_error(s));
            goto out;
        }
        st = sbx_sandbox_create(s);
        if (st != SBX_OK)
            snprintf(err, sizeof err, "%s", sbx_sandbox_last_error(s));
    } else {
        st = remote_fetch(s, sandbox_id, true, err, sizeof err);
    }
    if (st != SBX_OK) {
        failed = own_sandbox ? "create a sandbox" : "find the sandbox";
        failed_st = st;
        fail_msg(false, "exec", rc, failed, st, err);
        snprintf(detail, sizeof detail, "%s", err);
        how = SBX_STEP_SKIPPED;
        goto out;
    }
    if (own_sandbox)
        cli_runtime_warning("exec", runtime, s);
    if (sink.tr && own_sandbox)
        tr_failed(&sink, sbx_transcript_set_sandbox_id(sink.tr, sbx_sandbox_id(s)));
    k = sbx_command_new(s);
    if (!k)
        goto oom;
    if ((st = sbx_command_set_argv(k, (uint32_t)(argc - optind), (const char *const *)argv + optind)) != SBX_OK ||
        (cwd && (st = sbx_command_set_cwd(k, cwd)) != SBX_OK) || (st = sbx_command_set_sudo(k, sudo)) != SBX_OK ||
        (timeout && (st = sbx_command_set_timeout_ms(k, timeout)) != SBX_OK)) {
        rc = cli_usage_error("exec", "%s", sbx_command_last_error(k));
        goto out;
    }
    for (int i = 0; i < nenv; i++) {
        char name[256];
        const char *eq = strchr(envs[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - envs[i]), envs[i]);
        if ((st = sbx_command_set_env(k, name, eq + 1)) != SBX_OK) {
            rc = cli_usage_error("exec", "%s", sbx_command_last_error(k));
            goto out;
        }
    }
    if (detach) {
        /* Started and left running: its id is the result. */
        if ((st = sbx_command_set_detached(k, 1)) != SBX_OK || (st = sbx_command_run(k)) != SBX_OK) {
            failed = "exec";
            failed_st = st;
            snprintf(detail, sizeof detail, "%s", sbx_command_last_error(k));
            fail_msg(false, "exec", rc, failed, st, detail);
            goto out;
        }
        if (o.json)
            result = json_pack("{s:s,s:s,s:b}", "sandboxId", sbx_sandbox_id(s), "commandId", sbx_command_id(k),
                               "detached", 1);
        else
            printf("%s\n", sbx_command_id(k));
        rc = SBXRUN_EXIT_OK;
        goto out;
    }
    /* Output is printed as it comes, or with --json kept (its tail) for
     * the object at the end; the transcript gets all of it either way. */
    sink.json = o.json;
    sbx_command_set_output_cb(k, stream_out, &sink);

    /* Ctrl-C cancels the wait; the program is then killed, not left behind. */
    st = sbx_command_run_start(k, &op);
    if (st == SBX_OK) {
        cli_cancel_on_signal(op);
        st = drive_leased(r.client, s, op, own_sandbox ? lease : 0);
        cli_cancel_on_signal(NULL);
        if (st != SBX_OK)
            snprintf(err, sizeof err, "%s", sbx_op_last_error(op));
        sbx_op_free(op);
    } else {
        snprintf(err, sizeof err, "%s", sbx_command_last_error(k));
    }
    {
        /* Ctrl-C: the program goes too, not only sbxrun's wait for it. */
        bool interrupted = st == SBX_E_CANCELLED && cli_interrupted();
        sbx_status kst = SBX_OK;
        if (interrupted && sbx_command_id(k) && sbx_command_exit_code(k) < 0) {
            sbx_client_set_option(r.client, "timeout_ms", "10000"); /* bounded: the user asked to stop */
            kst = sbx_command_kill(k, 9);
        }
        if (interrupted) {
            if (!sbx_command_id(k))
                snprintf(err, sizeof err, "interrupted before the command started");
            else if (kst == SBX_OK)
                snprintf(err, sizeof err, "interrupted: the command was killed in the sandbox");
            else
                snprintf(err, sizeof err, "interrupted, but the command could not be killed: %s",
                         sbx_command_last_error(k));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (sink.tr && sbx_command_id(k))
        tr_failed(&sink, sbx_transcript_step_set_command_id(sink.tr, sink.step, sbx_command_id(k)));
    if (st != SBX_OK && !(st == SBX_E_CONFLICT && sbx_command_exit_code(k) >= 0)) {
        /* Past its --timeout: as timeout(1); Ctrl-C: 128 + SIGINT, as a shell. */
        rc = st == SBX_E_TIMEOUT && timeout                 ? SBXRUN_EXIT_TIMED_OUT
             : st == SBX_E_CANCELLED && cli_interrupted() ? SBXRUN_EXIT_INTERRUPTED
                                                          : EXIT_EXEC_FAILED;
        failed = "exec";
        failed_st = st;
        fail_msg(false, "exec", rc, failed, st, err);
        snprintf(detail, sizeof detail, "%s", err);
        how = st == SBX_E_TIMEOUT ? SBX_STEP_TIMEOUT : st == SBX_E_CANCELLED ? SBX_STEP_CANCELLED : SBX_STEP_TRANSPORT_ERROR;
        verdict = st == SBX_E_TIMEOUT     ? SBX_VERDICT_TIMED_OUT
                  : st == SBX_E_CANCELLED ? SBX_VERDICT_CANCELLED
                                          : SBX_VERDICT_ERROR;
        /* --json: what it printed before it was cut short, beside the error */
        if (o.json && sbx_command_id(k))
            result = run_result(&sink, s, k, &t0);
        goto out;
    }
    how = st == SBX_E_CONFLICT ? SBX_STEP_KILLED : SBX_STEP_EXITED;
    verdict = sbx_command_exit_code(k) == 0 ? SBX_VERDICT_PASSED : SBX_VERDICT_FAILED;
    rc = sbx_command_exit_code(k);
    if (rc < 0 || rc > 255)
        rc = EXIT_EXEC_FAILED;
    if (o.json)
        result = run_result(&sink, s, k, &t0);
    goto out;
oom:
    failed = "exec";
    failed_st = SBX_E_NOMEM;
    snprintf(detail, sizeof detail, "out of memory");
    fail_msg(false, "exec", rc, failed, failed_st, detail);
out:
    if (sink.tr) {
        int code = k && sbx_command_exit_code(k) >= 0 && sbx_command_exit_code(k) <= 255 ? sbx_command_exit_code(k) : -1;
        if (close_transcript(&sink, transcript, how, how == SBX_STEP_EXITED || how == SBX_STEP_KILLED ? code : -1,
                             detail[0] ? detail : NULL, verdict)) {
            rc = EXIT_EXEC_FAILED;
            /* The result stands, with the failure beside it: one JSON object. */
            if (!failed) {
                failed = "transcript";
                failed_st = SBX_E_IO;
                snprintf(detail, sizeof detail, "%s", sink.tr_err);
            }
        }
    }
    /* --json: the run's result (its exit code the program's), what there
     * is of it beside why it failed, or why there is none; other failures
     * are said by cli_json_end(). */
    if (result && failed)
        cli_json_partial("exec", rc, result, failed, failed_st, detail);
    else if (result)
        cli_json_result("exec", rc, result);
    else if (o.json && failed)
        cli_json_error("exec", rc, failed, failed_st, detail);
    sbx_policy_free(cmdpol);
    free(sink.tails[0].buf);
    free(sink.tails[1].buf);
    sbx_redactor_free(red);
    sbx_command_free(k);
    if (own_sandbox && s && sbx_sandbox_id(s)) {
        /* Bounded: after a command's deadline the run must end soon (the
         * kill had 5 s, this as much; sbxrun(1) says so); a sandbox left
         * running still stops at its own timeout. */
        sbx_client_set_option(r.client, "timeout_ms", "5000");
        /* v2: a named sandbox made for one command is deleted, not left listed */
        if (sbx_sandbox_name(s))
            sbx_sandbox_delete(s);
        else
            sbx_sandbox_stop(s);
    }
    sbx_sandbox_free(s);
    remote_close(&r);
    return rc;
}
