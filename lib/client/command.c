/* SPDX-License-Identifier: MIT */
/*
 * command: running a program in a sandbox and following it.
 *
 * A followed command costs two requests, both open while it runs:
 *
 *   1. POST .../cmd in wait mode. An NDJSON stream of two lines: the
 *      command as started (its id), then the command as finished (its exit
 *      code). Not idempotent: never sent twice once it may have reached the
 *      server. Once the first line is in, the request is long-lived and
 *      leaves the client's limits (sbx__req_become_follow).
 *   2. GET .../cmd/ID/logs, sent when the first line names the command: the
 *      output, NDJSON, replayed from the start and ending when the command
 *      exits. When it breaks, it is requested again and the bytes already
 *      delivered (counted per stream) are skipped.
 *
 * The op ends when the output has ended and the exit code is known (the
 * start stream's last bytes are then read by the engine alone, so that its
 * connection is reused rather than closed). If the
 * start stream breaks after its first line, the exit code is asked for
 * with GET .../cmd/ID?wait=true (idempotent, retried) once the output has
 * ended; the command is never started again. Only a code the server sent is
 * ever reported. Detached starts are the plain POST (no wait); attaching to
 * a command by id is requests 2 and then the GET. With command.follow=logs
 * a followed command is the plain POST, then requests 2 and the GET: one
 * long-lived request instead of two.
 *
 * In the 2.x protocol the output comes inline instead, as the 3.x SDKs
 * read it: the wait-mode stream carries the log lines between its two
 * command lines, and request 2 is not made. Should that stream break
 * before its last line, request 2 takes over (the bytes delivered are
 * skipped, as on any reconnect), then the GET for the exit code: output
 * that /logs would keep is never lost to a cut stream.
 *
 * The command's deadline is put on each request; when it passes, the
 * command is killed (SIGKILL) and the op ends with SBX_E_TIMEOUT, at most
 * KILL_GRACE_MS later.
 *
 * The followed streams may be silent for as long as the command is; a
 * server that stopped answering looks the same. So when one of them has
 * brought nothing for the client's probe_after_ms, the command is asked
 * about with a plain GET (its own probe_timeout_ms deadline): no answer
 * means the server is stuck and the op fails (SBX_E_TRANSPORT); an answer
 * that says the command exited means a silent stream is stuck (it should
 * have ended): the exit code is taken from the answer and a silent log
 * stream is asked for again.
 */
#include "util/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "client/core.h"
#include "util/ndjson.h"
#include "client/command_int.h"
#include "util/clock.h"
#include "util/duration.h"
#include "client/sandbox_int.h"
#include "redact/redact_int.h"
#include "util/str.h"

#define OUTPUT_LIMIT_DEFAULT (1u << 20)
#define LOG_LINE_MAX (4u << 20)
#define RECONNECTS_MAX 5   /* in a row without new output */
/* How long the kill sent at a command's deadline may take: the op ends
 * by deadline + this, killed or not (doc/client.md). */
#define KILL_GRACE_MS 5000
/* The start stream's end (its chunk terminator) usually follows the exit
 * line at once; reading it lets the connection be reused. */
#define START_DRAIN_MS 2000

struct sbx_command {
    struct sbx__target t;
    struct sbx__core *core;
    sbx_sandbox *sbx;
    sbx__err err;
    /* what to run */
    sbx__strlist argv, env;
    char *cwd;
    bool sudo, detached;
    int64_t timeout_ms;
    sbx_output_cb cb;
    void *cb_user;
    size_t limit;
    /* state */
    bool started;             /* a start or attach was made */
    char *sid;                /* the session it runs in (2.x: the sandbox may move on to another) */
    bool output_ended;        /* every byte of output has arrived */
    bool blocking;            /* sbx_command_run: keep the tail, never pause */
    struct sbx__command_info info;
    sbx__buf out[2];
    uint64_t delivered[2];
    struct cmd_run *run;      /* the pending follow op's state; NULL when none */
    /* safety: own (the job layer) or else the client's, taken at start */
    bool own_safety;
    bool start_unsure;        /* the start may have run though no id came back */
    sbx__redact_rules *own_rules;
    sbx_redact_stream *rs[2]; /* the output's redaction, per stream */
};

struct cmd_run {
    sbx_command *cmd;
    sbx_op *op;
    sbx__req *start, *logs, *wait, *kill, *probe;
    sbx__ndjson nd;           /* the log stream */
    sbx__ndjson snd;          /* the start stream (wait mode) */
    unsigned start_lines;     /* lines of the start stream taken */
    bool exit_known;          /* cmd->info.exit_code came from the server */
    sbx_status start_fail;    /* why our handler stopped the start stream */
    sbx__buf data;            /* one decoded log line */
    uint64_t seen[2];         /* bytes of this logs connection */
    uint64_t progress_mark;
    unsigned reconnects;
    int64_t deadline;         /* absolute (monotonic), 0 none */
    bool detached, paused, timed_out;
    bool logs_only;           /* followed with a plain start (command.follow=logs) */
    bool inline_out;          /* the output comes in the start stream (2.x wait mode); cleared
                               * when that stream broke and /logs took over */
    sbx_status stream_fail;   /* why our data handler stopped the logs */
    char *server_error;       /* an error line of the log stream */
    struct sbx__resume_wait rw; /* the start, repeated on a new session (resume.h) */
};

static int idx(int stream)
{
    return stream == SBX_STREAM_STDERR ? 1 : 0;
}

/* ---- the handle ------------------------------------------------------------------------ */

static void command_destroy(struct sbx__target *t)
{
    sbx_command *cmd = (sbx_command *)t;
    struct sbx__core *c = cmd->core;
    sbx__err_free(&cmd->err);
    sbx__strlist_clear(&cmd->argv);
    sbx__strlist_wipe(&cmd->env);
    sbx__free(cmd->cwd);
    sbx__free(cmd->sid);
    sbx__command_info_free(&cmd->info);
    sbx__buf_free(&cmd->out[0]);
    sbx__buf_free(&cmd->out[1]);
    sbx_redact_stream_free(cmd->rs[0]);
    sbx_redact_stream_free(cmd->rs[1]);
    sbx__redact_rules_unref(cmd->own_rules);
    sbx__target_unref(&cmd->sbx->t);
    sbx__free(cmd);
    sbx__core_unref(c);
}

sbx_command *sbx_command_new(sbx_sandbox *s)
{
    sbx_command *cmd;
    if (!s || sbx__core_in_callback(s->core))
        return NULL;
    cmd = sbx__calloc(1, sizeof *cmd);
    if (!cmd)
        return NULL;
    sbx__target_init(&cmd->t, command_destroy);
    cmd->core = s->core;
    sbx__core_ref(cmd->core);
    cmd->sbx = s;
    sbx__target_ref(&s->t);
    cmd->limit = OUTPUT_LIMIT_DEFAULT;
    cmd->info.exit_code = -1;
    cmd->info.started_at = -1;
    return cmd;
}

void sbx_command_free(sbx_command *cmd)
{
    if (cmd)
        sbx__target_release(&cmd->t);
}

const char *sbx_command_last_error(const sbx_command *cmd)
{
    return SBX__LAST_ERROR(cmd);
}

const char *sbx_command_last_error_code(const sbx_command *cmd)
{
    return cmd ? sbx__err_api_code(&cmd->err) : NULL;
}

static sbx_status not_started(sbx_command *cmd)
{
    if (cmd->started)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command has started; settings apply before");
    return SBX_OK;
}

sbx_status sbx_command_set_argv(sbx_command *cmd, size_t argc, const char *const *argv)
{
    sbx__strlist l = SBX__STRLIST_INIT;
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    SBX__ARG(cmd, argc != 0 && argv && argv[0] && argv[0][0], "argv: at least a non-empty program name");
    for (size_t i = 0; i < argc; i++) {
        SBX__ARG(cmd, argv[i], "argv[%zu] is NULL", i);
        /* it travels in JSON */
        SBX__ARG(cmd, sbx__utf8_valid(argv[i], strlen(argv[i])), "argv[%zu] is not valid UTF-8", i);
    }
    if (sbx__strlist_set(&l, argv, argc) != SBX_OK)
        return sbx__err_nomem(&cmd->err);
    sbx__strlist_clear(&cmd->argv);
    cmd->argv = l;
    return SBX_OK;
}

sbx_status sbx_command_set_cwd(sbx_command *cmd, const char *cwd)
{
    char *p = NULL;
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    SBX__ARG(cmd, !cwd || *cwd, "cwd: a directory, or NULL for the sandbox's");
    SBX__ARG(cmd, !cwd || sbx__utf8_valid(cwd, strlen(cwd)), "cwd: not valid UTF-8");
    if (cwd && !(p = sbx__strdup(cwd)))
        return sbx__err_nomem(&cmd->err);
    sbx__free(cmd->cwd);
    cmd->cwd = p;
    return SBX_OK;
}

sbx_status sbx_command_set_env(sbx_command *cmd, const char *name, const char *value)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    return sbx__env_set(&cmd->env, name, value, &cmd->err);
}

sbx_status sbx_command_set_sudo(sbx_command *cmd, int sudo)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    cmd->sudo = sudo != 0;
    return SBX_OK;
}

sbx_status sbx_command_set_detached(sbx_command *cmd, int detached)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    cmd->detached = detached != 0;
    return SBX_OK;
}

sbx_status sbx_command_set_timeout_ms(sbx_command *cmd, int64_t ms)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    SBX__ARG(cmd, ms >= 0, "timeout: milliseconds >= 0 (0: none)");
    cmd->timeout_ms = ms;
    return SBX_OK;
}

sbx_status sbx_command_set_output_cb(sbx_command *cmd, sbx_output_cb cb, void *user)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    cmd->cb = cb;
    cmd->cb_user = cb ? user : NULL;
    return SBX_OK;
}

sbx_status sbx_command_set_output_limit(sbx_command *cmd, size_t bytes)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (not_started(cmd))
        return SBX_E_MISUSE;
    SBX__ARG(cmd, bytes != 0, "output limit: at least 1 byte");
    cmd->limit = bytes;
    return SBX_OK;
}

/* ---- output ----------------------------------------------------------------------------- */

/* Output as the caller sees it (redacted when the command is). */
static bool deliver(struct cmd_run *run, int stream, const char *data, size_t n)
{
    sbx_command *cmd = run->cmd;
    int i = idx(stream);
    if (n == 0)
        return true;
    if (cmd->cb) {
        int stop;
        cmd->core->in_callback++;
        stop = cmd->cb((sbx_stream)stream, (const uint8_t *)data, n, cmd->cb_user);
        cmd->core->in_callback--;
        if (stop) {
            sbx__err_set(&run->op->err, SBX_E_CANCELLED, "the output callback stopped the command's operation");
            return false;
        }
        return true;
    }
    if (sbx__buf_append(&cmd->out[i], data, n) != SBX_OK) {
        sbx__err_nomem(&run->op->err);
        return false;
    }
    if (cmd->blocking)
        sbx__buf_keep_tail(&cmd->out[i], cmd->limit, cmd->limit);
    return true;
}

/* Output as the program wrote it: counted, then redacted and delivered. */
static bool give(struct cmd_run *run, int stream, const char *data, size_t n)
{
    sbx_command *cmd = run->cmd;
    int i = idx(stream);
    const uint8_t *o;
    size_t on;
    cmd->delivered[i] += n;
    if (!cmd->rs[i])
        return deliver(run, stream, data, n);
    if (sbx_redact_stream_feed(cmd->rs[i], (const uint8_t *)data, n, &o, &on) != SBX_OK) {
        sbx__err_nomem(&run->op->err); /* never deliver unredacted */
        return false;
    }
    return deliver(run, stream, (const char *)o, on);
}

/* The output has ended: what the redactors held back, then no more. */
static void end_output(struct cmd_run *run)
{
    sbx_command *cmd = run->cmd;
    cmd->output_ended = true;
    for (int i = 0; i < 2; i++) {
        const uint8_t *o;
        size_t on;
        if (!cmd->rs[i])
            continue;
        if (sbx_redact_stream_finish(cmd->rs[i], &o, &on) == SBX_OK)
            deliver(run, i ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT, (const char *)o, on);
        sbx_redact_stream_free(cmd->rs[i]);
        cmd->rs[i] = NULL;
    }
}

/* A log chunk of this connection: skip what an earlier connection already
 * delivered (the endpoint replays from the start). */
static bool take_chunk(struct cmd_run *run, int stream, const char *data, size_t len)
{
    int i = idx(stream);
    uint64_t start = run->seen[i], have = run->cmd->delivered[i];
    run->seen[i] += len;
    if (run->seen[i] <= have)
        return true;
    if (have > start) {
        size_t off = (size_t)(have - start);
        data += off;
        len -= off;
    }
    return give(run, stream, data, len);
}

/* ---- the follow op ------------------------------------------------------------------------ */

static void run_finish(struct cmd_run *run, sbx_status st, const char *fmt, ...) SBX__PRINTF(3, 4);

/* The session a started command's requests go to: the one it started in,
 * not the sandbox's current one should that have moved on. */
static const char *session_of(const sbx_command *cmd)
{
    return cmd->sid ? cmd->sid : cmd->sbx->info.id;
}

static void cancel_reqs(struct cmd_run *run)
{
    sbx__req *v[] = {run->start, run->logs, run->wait, run->kill, run->probe};
    for (size_t k = 0; k < SBX__ARRAY_LEN(v); k++)
        if (v[k])
            sbx__req_cancel(v[k]);
}

static void run_finish(struct cmd_run *run, sbx_status st, const char *fmt, ...)
{
    sbx_command *cmd = run->cmd;
    sbx_op *op = run->op;
    if (op->done)
        return;
    if (st != SBX_OK && fmt) {
        va_list ap;
        va_start(ap, fmt);
        sbx__err_setv(&op->err, st, fmt, ap);
        va_end(ap);
    }
    cancel_reqs(run);
    if (cmd->run == run) {
        end_output(run);
        cmd->run = NULL;
        if (cmd->blocking) {
            sbx__buf_keep_tail(&cmd->out[0], cmd->limit, 0);
            sbx__buf_keep_tail(&cmd->out[1], cmd->limit, 0);
        }
    }
    sbx__op_finish(op, st, NULL);
}

static void run_cancel(sbx_op *op)
{
    struct cmd_run *run = op->state;
    if (sbx__resume_cancel(&run->rw))
        return;
    cancel_reqs(run);
}

static void run_release(sbx_op *op)
{
    struct cmd_run *run = op->state;
    sbx__resume_disarm(&run->rw);
    sbx__req_free(run->start);
    sbx__req_free(run->logs);
    sbx__req_free(run->wait);
    sbx__req_free(run->kill);
    sbx__req_free(run->probe);
    sbx__ndjson_free(&run->nd);
    sbx__ndjson_free(&run->snd);
    sbx__buf_free(&run->data);
    sbx__free(run->server_error);
    if (run->cmd->run == run)
        run->cmd->run = NULL;
    sbx__free(run);
}

static const struct sbx__op_ops run_ops = {run_cancel, run_release};

/* built: the status of the api builder that filled req (freed here). */
static sbx__req *new_req(struct cmd_run *run, sbx_status built, struct sbx__api_req *req, bool idempotent)
{
    sbx__req *r = built == SBX_OK ? sbx__core_request(run->cmd->core, req, idempotent, &run->op->err) : NULL;
    sbx__api_req_free(req);
    if (r && run->deadline)
        sbx__req_set_deadline(r, run->deadline);
    return r;
}

static void start_logs(struct cmd_run *run);
static void start_wait(struct cmd_run *run);
static void on_timeout(struct cmd_run *run);
static void stream_silent(sbx__req *r, void *user);

/* Watch a followed stream's silence (the probe above). */
static void watch(struct cmd_run *run, sbx__req *r)
{
    struct sbx__engine_limits l;
    uint32_t rnd = 0;
    int64_t ms;
    sbx__engine_get_limits(run->cmd->core->engine, &l);
    /* Up to half again, at random: thousands of commands started together
     * and silent together would otherwise check all at once, a burst of
     * thousands of new connections that a busy server may refuse. */
    ms = l.probe_after_ms;
    if (ms > 0) {
        (void)!getrandom(&rnd, sizeof rnd, GRND_NONBLOCK);
        ms += (int64_t)(rnd % (uint32_t)(ms / 2 + 1));
    }
    sbx__req_set_idle(r, ms, stream_silent, run);
}

/* Common outcome handling of this op's requests. Returns true when the
 * request succeeded (2xx); otherwise the op is finished or being finished. */
static bool req_ok(struct cmd_run *run, sbx__req *r, const char *what)
{
    sbx_status st;
    if (run->op->done)
        return false;
    st = sbx__op_check_response(run->op, r, what);
    if (st == SBX_OK)
        return true;
    if (st == SBX_E_TIMEOUT) {
        on_timeout(run);
        return false;
    }
    if (st == SBX_E_CANCELLED && atomic_load(&run->op->cancel))
        sbx__err_set(&run->op->err, st, "%s",
                     run->cmd->info.id ? "cancelled (the command keeps running in the sandbox)"
                                       : "cancelled before the server confirmed that the command started");
    run_finish(run, st, NULL);
    return false;
}

/* The output has ended and the exit code is known: report. */
static void finish_exited(struct cmd_run *run)
{
    char dur[SBX__DURATION_TEXT_MAX];
    /* The exit line is in but the stream's end may not be: let the engine
     * read it, rather than close a connection that is about to be free. */
    if (run->start) {
        sbx__req_release(run->start, START_DRAIN_MS);
        run->start = NULL;
    }
    if (run->server_error)
        run_finish(run, SBX_E_CONFLICT, "the command's output ended with an error: %s (exit code %d)",
                   run->server_error, run->cmd->info.exit_code);
    else if (run->deadline && run->cmd->info.exit_code == 137 && sbx__mono_ms() >= run->deadline)
        /* The server enforces the timeout too (SIGKILL, so 137): its kill
         * may come in before this side's timer has fired. A timeout. */
        run_finish(run, SBX_E_TIMEOUT, "the command ran past its %s deadline and was killed (SIGKILL)",
                   sbx__duration_text(run->cmd->timeout_ms, dur));
    else
        run_finish(run, SBX_OK, NULL);
}

/* One step closer to the end: the output ended, or the exit code arrived,
 * or the start stream closed. */
static void advance(struct cmd_run *run)
{
    if (run->op->done || run->timed_out || !run->cmd->output_ended)
        return;
    if (run->exit_known)
        finish_exited(run);
    else if (!run->start && !run->wait) /* no stream left to bring the code */
        start_wait(run);
    /* else the start stream or the GET brings the code */
}

/* Fallback for the exit code (and the only way when attached) */
static void wait_done(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    sbx_command *cmd = run->cmd;
    struct sbx__command_info in = {0};
    size_t len;
    const char *body;
    sbx_status st;

    if (run->timed_out || !req_ok(run, r, "wait for the command"))
        return;
    body = sbx__req_body(r, &len);
    in.exit_code = -1;
    st = sbx__api_parse_command(body, len, &in, &run->op->err);
    if (st == SBX_OK && in.exit_code < 0)
        st = sbx__err_set(&run->op->err, SBX_E_PROTOCOL, "the server's wait ended without an exit code");
    if (st != SBX_OK) {
        sbx__command_info_free(&in);
        run_finish(run, st, NULL);
        return;
    }
    cmd->info.exit_code = in.exit_code;
    if (cmd->info.started_at < 0)
        cmd->info.started_at = in.started_at;
    sbx__command_info_free(&in);
    run->exit_known = true;
    finish_exited(run);
}

static void start_wait(struct cmd_run *run)
{
    struct sbx__api_req req;
    sbx__req *r = new_req(run, run->cmd->core->proto->wait_command(&req, session_of(run->cmd), run->cmd->info.id), &req, true);
    if (!r) {
        run_finish(run, SBX_E_NOMEM, SBX__NOMEM_TEXT);
        return;
    }
    sbx__req_set_follow(r, true); /* a long poll: not rationed */
    watch(run, r);
    sbx__req_on_done(r, wait_done, run);
    run->wait = r;
    if (sbx__req_submit(r) != SBX_OK)
        run_finish(run, SBX_E_NOMEM, SBX__NOMEM_TEXT);
}

/* 2. the output */

/* A parsed log line (run->data) of stream: 0 to go on, 1 to stop. */
static int take_log(struct cmd_run *run, int stream)
{
    if (stream == SBX__LOG_ERROR) {
        /* The last line: the server says why the output ended. */
        char *e = sbx__strndup(run->data.data ? run->data.data : "", run->data.len);
        if (!e) {
            sbx__err_nomem(&run->op->err);
            return 1;
        }
        sbx__free(run->server_error);
        run->server_error = e;
        return 0;
    }
    if (run->data.len == 0)
        return 0;
    return take_chunk(run, stream == SBX__LOG_STDERR ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT,
                      run->data.data, run->data.len)
               ? 0
               : 1;
}

static int log_line(const char *line, size_t len, void *user)
{
    struct cmd_run *run = user;
    int stream;
    sbx_status st = sbx__api_parse_log(line, len, &stream, &run->data, &run->op->err);
    if (st != SBX_OK)
        return 1;
    if (stream == SBX__LOG_COMMAND) {
        sbx__err_set(&run->op->err, SBX_E_PROTOCOL, "a log line has no valid stream/data");
        return 1;
    }
    return take_log(run, stream);
}

/* A full buffer nobody drains stops the reading of the output's stream
 * (the bytes wait in the kernel and at the server). */
static bool must_pause(struct cmd_run *run)
{
    sbx_command *cmd = run->cmd;
    return !cmd->cb && !cmd->blocking && (cmd->out[0].len >= cmd->limit || cmd->out[1].len >= cmd->limit);
}

/* Bytes of one of the op's NDJSON streams into its line handler. On failure
 * the reason is in the op's error (the handler's own, or the splitter's)
 * and its code in *fail; the stream is to be stopped. */
static int feed(struct cmd_run *run, sbx__ndjson *nd, const char *data, size_t len, sbx__line_cb cb,
                const char *what, sbx_status *fail)
{
    sbx_status st = sbx__ndjson_feed(nd, data, len, cb, run);
    if (st == SBX_OK)
        return SBX__DATA_OK;
    if (st == SBX_E_BUDGET_EXCEEDED)
        sbx__err_set(&run->op->err, st, "%s is longer than %u bytes", what, LOG_LINE_MAX);
    else if (st == SBX_E_NOMEM)
        sbx__err_set(&run->op->err, st, SBX__NOMEM_TEXT);
    *fail = run->op->err.code ? run->op->err.code : SBX_E_PROTOCOL;
    return SBX__DATA_ABORT;
}

static int logs_data(sbx__req *r, const char *data, size_t len, void *user)
{
    struct cmd_run *run = user;
    (void)r;
    if (run->op->done)
        return SBX__DATA_ABORT;
    if (must_pause(run)) {
        run->paused = true;
        return SBX__DATA_PAUSE;
    }
    return feed(run, &run->nd, data, len, log_line, "a log line", &run->stream_fail);
}

/* The log stream broke (why): ask for it again; what was delivered is
 * skipped. Give up only after reconnects that bring nothing new. */
static void logs_again(struct cmd_run *run, const char *why)
{
    uint64_t now = run->cmd->delivered[0] + run->cmd->delivered[1];
    if (now > run->progress_mark) {
        run->progress_mark = now;
        run->reconnects = 0;
    }
    if (++run->reconnects > RECONNECTS_MAX) {
        if (run->exit_known)
            run_finish(run, SBX_E_TRANSPORT,
                       "the command's output stream broke %u times in a row without new output (%s); the "
                       "command %s exited with code %d, its output is incomplete",
                       RECONNECTS_MAX, why, run->cmd->info.id, run->cmd->info.exit_code);
        else
            run_finish(run, SBX_E_TRANSPORT,
                       "the command's output stream broke %u times in a row without new output (%s); the "
                       "command %s may still be running",
                       RECONNECTS_MAX, why, run->cmd->info.id);
        return;
    }
    if (run->logs) /* a reconnect: worth knowing when output seems to stutter */
        sbx__req_log(run->logs, SBX_LOG_INFO, "the output stream of command %s is asked for again (%s; %u of %u)",
                     run->cmd->info.id ? run->cmd->info.id : "?", why, run->reconnects, RECONNECTS_MAX);
    sbx__req_free(run->logs);
    run->logs = NULL;
    start_logs(run);
}

static void logs_done(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    sbx_op *op = run->op;
    sbx_status st;

    if (op->done || run->timed_out)
        return;
    if (run->stream_fail != SBX_OK) {
        /* Our data handler stopped the stream: its reason stands. */
        run_finish(run, run->stream_fail, NULL);
        return;
    }
    st = sbx__req_status(r);
    if (st == SBX_OK && sbx__req_http_status(r) >= 200 && sbx__req_http_status(r) < 300) {
        /* A clean end: the command has exited. */
        st = sbx__ndjson_finish(&run->nd, log_line, run);
        if (st != SBX_OK) {
            run_finish(run, op->err.code ? op->err.code : SBX_E_PROTOCOL, NULL);
            return;
        }
        end_output(run);
        sbx__req_free(run->logs);
        run->logs = NULL;
        advance(run);
        return;
    }
    if (st == SBX_E_TRANSPORT && sbx__req_streamed(r) > 0) {
        /* The stream broke after output arrived: ask again, skip what we
         * have. */
        logs_again(run, sbx__req_error(r));
        return;
    }
    req_ok(run, r, "read the command's output");
}

/* Open the log stream: SBX_E_NOMEM when it cannot be (the run is left to
 * its caller to finish: see start_line). */
static sbx_status open_logs(struct cmd_run *run)
{
    struct sbx__api_req req;
    sbx__req *r = new_req(run, run->cmd->core->proto->command_logs(&req, session_of(run->cmd), run->cmd->info.id), &req, true);
    if (!r)
        return SBX_E_NOMEM;
    sbx__ndjson_reset(&run->nd);
    run->seen[0] = run->seen[1] = 0;
    run->paused = false;
    sbx__req_set_follow(r, true);
    watch(run, r);
    sbx__req_set_stream(r, logs_data, run);
    sbx__req_on_done(r, logs_done, run);
    run->logs = r;
    return sbx__req_submit(r) == SBX_OK ? SBX_OK : SBX_E_NOMEM;
}

static void start_logs(struct cmd_run *run)
{
    if (open_logs(run) != SBX_OK)
        run_finish(run, SBX_E_NOMEM, SBX__NOMEM_TEXT);
}

/* Liveness: a followed stream was silent for probe_after_ms. */

/* A GET of the command (no wait), bounded by probe_timeout_ms: NULL when
 * out of memory. */
static sbx__req *probe_new(sbx_command *cmd, sbx__done_fn fn, void *user, sbx__err *err)
{
    struct sbx__engine_limits l;
    struct sbx__api_req req;
    sbx__req *r = cmd->core->proto->get_command(&req, session_of(cmd), cmd->info.id) == SBX_OK
                      ? sbx__core_request(cmd->core, &req, true, err)
                      : NULL;
    sbx__api_req_free(&req);
    if (!r)
        return NULL;
    sbx__engine_get_limits(cmd->core->engine, &l);
    /* A long poll of its own would prove nothing: short, and not rationed
     * (a queue full of short requests must not delay it). */
    sbx__req_set_follow(r, true);
    sbx__req_set_probe(r);
    sbx__req_set_deadline(r, sbx__mono_ms() + l.probe_timeout_ms);
    sbx__req_on_done(r, fn, user);
    if (sbx__req_submit(r) != SBX_OK) {
        sbx__req_free(r);
        return NULL;
    }
    return r;
}

/* A silent stream of the follow: was it silent for probe_after_ms? */
static bool stuck(struct cmd_run *run, sbx__req *r)
{
    struct sbx__engine_limits l;
    sbx__engine_get_limits(run->cmd->core->engine, &l);
    return r && sbx__req_silent_ms(r) >= l.probe_after_ms;
}

/* The exit code a probe's answer reports: -1 while the command runs, or
 * for an answer that is an HTTP error, unreadable, or (id given) about
 * another command. */
static int probe_exit_code(sbx__req *r, const char *id)
{
    struct sbx__command_info in = {0};
    sbx__err tmp = {0};
    size_t len;
    const char *body = sbx__req_body(r, &len);
    long http = sbx__req_http_status(r);
    int code = -1;
    in.exit_code = -1;
    if (sbx__req_status(r) == SBX_OK && http >= 200 && http <= 299 &&
        sbx__api_parse_command(body, len, &in, &tmp) == SBX_OK && (!id || (in.id && strcmp(in.id, id) == 0)))
        code = in.exit_code;
    sbx__command_info_free(&in);
    sbx__err_free(&tmp);
    return code;
}

static void probe_done(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    sbx_command *cmd = run->cmd;
    struct sbx__engine_limits l;
    sbx_status st = sbx__req_status(r);
    int code;

    run->probe = NULL;
    if (run->op->done || run->timed_out || st == SBX_E_CANCELLED) {
        sbx__req_free(r);
        return;
    }
    sbx__engine_get_limits(cmd->core->engine, &l);
    if (st != SBX_OK) {
        run_finish(run, SBX_E_TRANSPORT,
                   "the server stopped answering: the command's streams brought nothing for %lld ms and a check "
                   "of the command got no answer within %lld ms (%s); the command %s may still be running",
                   (long long)l.probe_after_ms, (long long)l.probe_timeout_ms, sbx__req_error(r), cmd->info.id);
        sbx__req_free(r);
        return;
    }
    /* An HTTP error is still an answer: the server is alive. */
    code = probe_exit_code(r, cmd->info.id);
    sbx__req_free(r);
    if (code < 0)
        return;
    /* It exited, so its streams should end; a silent one is stuck. The
     * code is one the server sent. */
    if (!run->exit_known) {
        cmd->info.exit_code = code;
        run->exit_known = true;
    }
    if (stuck(run, run->start)) {
        sbx__req_free(run->start);
        run->start = NULL;
        if (run->inline_out && !cmd->output_ended) {
            /* The rest of its output is in /logs. */
            run->inline_out = false;
            logs_again(run, "the start stream was silent after the command exited");
            return;
        }
    }
    if (stuck(run, run->wait)) {
        sbx__req_free(run->wait);
        run->wait = NULL;
    }
    if (stuck(run, run->logs)) {
        logs_again(run, "it was silent after the command exited");
        return;
    }
    advance(run);
}

static void stream_silent(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    sbx__req *v[] = {run->start, run->logs, run->wait};
    if (run->probe || run->op->done || run->timed_out || !run->cmd->info.id)
        return;
    /* Another of its streams brings bytes: the server is alive, and this
     * one's silence is the command's (the start stream while output flows). */
    for (size_t i = 0; i < SBX__ARRAY_LEN(v); i++)
        if (v[i] && v[i] != r && !stuck(run, v[i]))
            return;
    run->probe = probe_new(run->cmd, probe_done, run, &run->op->err);
    if (!run->probe)
        run_finish(run, SBX_E_NOMEM, SBX__NOMEM_TEXT);
}

/* 1. the start */

/* Take a command object from the start request's answer: the detached
 * reply, or a line of the wait-mode stream. */
static sbx_status take_command(struct cmd_run *run, const char *body, size_t len)
{
    sbx_command *cmd = run->cmd;
    struct sbx__command_info in = {0};
    sbx_status st;

    in.exit_code = -1;
    st = sbx__api_parse_command(body, len, &in, &run->op->err);
    if (st != SBX_OK) {
        sbx__command_info_free(&in);
        return st;
    }
    if (cmd->info.id) {
        /* The finished line: the same command, now with its exit code. */
        bool same = in.id && strcmp(in.id, cmd->info.id) == 0;
        int code = in.exit_code;
        sbx__command_info_free(&in);
        if (!same)
            return sbx__err_set(&run->op->err, SBX_E_PROTOCOL,
                                "the start stream's second line is about another command");
        if (code < 0)
            return sbx__err_set(&run->op->err, SBX_E_PROTOCOL,
                                "the start stream's second line has no exit code");
        cmd->info.exit_code = code;
        run->exit_known = true;
        return SBX_OK;
    }
    cmd->info = in;
    return SBX_OK;
}

static int start_line(const char *line, size_t len, void *user)
{
    struct cmd_run *run = user;
    if (run->inline_out && run->start_lines == 1) {
        /* Between the command lines: the output. */
        int stream;
        if (sbx__api_parse_log(line, len, &stream, &run->data, &run->op->err) != SBX_OK)
            return 1;
        if (stream != SBX__LOG_COMMAND)
            return take_log(run, stream);
    }
    if (++run->start_lines > 2) {
        sbx__err_set(&run->op->err, SBX_E_PROTOCOL, "the start stream has more than two command lines");
        return 1;
    }
    if (take_command(run, line, len) != SBX_OK)
        return 1;
    if (run->start_lines == 2 && run->inline_out) {
        /* The finished line: all of the output came before it. */
        end_output(run);
        return 0;
    }
    if (run->start_lines == 1) {
        /* It runs: follow its output, and stop counting this request
         * against the limits (it lasts as long as the command). */
        sbx__req_become_follow(run->start, run->deadline);
        watch(run, run->start);
        if (run->inline_out)
            return 0;
        /* Never finish the run from here: inside the start stream's data
         * or done handler, a finished op can be freed at once (a job's
         * step) while they still use it. Failing the line stops the
         * stream; start_done then finishes with this reason. */
        if (open_logs(run) != SBX_OK) {
            sbx__err_nomem(&run->op->err);
            return 1;
        }
    }
    return 0;
}

static int start_data(sbx__req *r, const char *data, size_t len, void *user)
{
    struct cmd_run *run = user;
    (void)r;
    int a;
    if (run->op->done)
        return SBX__DATA_ABORT;
    if (run->inline_out && run->start_lines == 1 && must_pause(run)) {
        run->paused = true;
        return SBX__DATA_PAUSE;
    }
    a = feed(run, &run->snd, data, len, start_line, "a line of the start stream", &run->start_fail);
    /* The exit line after the end of the output: report now, not when the
     * stream's last chunk comes (start_done runs at once). */
    if (a == SBX__DATA_OK && run->exit_known && run->cmd->output_ended)
        return SBX__DATA_DONE;
    return a;
}

static void start_done(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    sbx_op *op = run->op;
    sbx_status st;
    long http;

    /* Whether the start may have taken effect: sent, and not refused by a
     * 4xx (which the server answers without running anything). */
    http = sbx__req_http_status(r);
    run->cmd->start_unsure = sbx__req_maybe_sent(r) && !(http >= 400 && http < 500);
    if (op->done || run->timed_out)
        return;
    if (sbx__resume_try(&run->rw, r))
        return; /* sent again on the sandbox's new session */
    if (run->detached || run->logs_only) {
        size_t len;
        const char *body;
        if (!req_ok(run, r, "start the command"))
            return;
        body = sbx__req_body(r, &len);
        st = take_command(run, body, len);
        if (st != SBX_OK || run->detached) {
            run_finish(run, st, NULL);
            return;
        }
        /* It runs: its output, then (the log stream ends with the
         * command) a GET of its exit code. */
        sbx__req_free(run->start);
        run->start = NULL;
        start_logs(run);
        return;
    }
    if (run->start_fail != SBX_OK) {
        /* Our handler stopped the stream: its reason stands. Before the
         * first line, nothing says whether the command runs. */
        if (!run->cmd->info.id) {
            /* err_set formats before it frees the old message. */
            const char *why = sbx__err_msg(&op->err);
            sbx__err_set(&op->err, run->start_fail, "start the command: %s; it may have started",
                         why[0] ? why : sbx_strerror(run->start_fail));
        }
        run_finish(run, run->start_fail, NULL);
        return;
    }
    st = sbx__req_status(r);
    http = sbx__req_http_status(r);
    if (st == SBX_OK && http >= 200 && http < 300 && !run->exit_known) {
        /* A clean end; a last line may lack its newline. */
        if (sbx__ndjson_finish(&run->snd, start_line, run) != SBX_OK) {
            run_finish(run, op->err.code ? op->err.code : SBX_E_PROTOCOL, NULL);
            return;
        }
    }
    if (run->start_lines == 0 || st == SBX_E_TIMEOUT || st == SBX_E_CANCELLED) {
        if (!req_ok(run, r, "start the command"))
            return;
        /* 2xx, yet not a line: nothing says whether it runs. */
        run_finish(run, SBX_E_PROTOCOL,
                   "start the command: the server's stream ended before the command was confirmed; "
                   "it may have started");
        return;
    }
    /* It started. The stream is over (or has all it will bring), with the
     * exit code or without it (broken: the GET fallback asks for it once
     * the output has ended). A stream not at its end yet is left to end,
     * so its connection is reused. */
    if (run->inline_out && !run->cmd->output_ended) {
        /* Broken before its last line: the rest of the output is in
         * /logs, from the bytes already delivered on. */
        char why[300];
        snprintf(why, sizeof why, "the start stream broke: %s",
                 st != SBX_OK ? sbx__req_error(r) : "it ended before the command's last line");
        run->inline_out = false;
        sbx__req_log(r, SBX_LOG_INFO, "command %s: %s; its output is read from /logs from byte %llu on",
                     run->cmd->info.id, why,
                     (unsigned long long)(run->cmd->delivered[0] + run->cmd->delivered[1]));
        sbx__req_release(run->start, START_DRAIN_MS);
        run->start = NULL;
        logs_again(run, why);
        return;
    }
    sbx__req_release(run->start, START_DRAIN_MS);
    run->start = NULL;
    advance(run);
}

/* The deadline passed: kill it (if it has an id), then report. */
static void kill_after_timeout_done(sbx__req *r, void *user)
{
    struct cmd_run *run = user;
    struct sbx__command_info in = {0};
    char dur[SBX__DURATION_TEXT_MAX];
    size_t len;
    const char *body = sbx__req_body(r, &len);
    sbx__err tmp = {0};
    long http = sbx__req_http_status(r);
    in.exit_code = -1;
    if (sbx__req_status(r) == SBX_OK && http >= 200 && http < 300 &&
        sbx__api_parse_command(body, len, &in, &tmp) == SBX_OK && in.exit_code >= 0)
        run->cmd->info.exit_code = in.exit_code;
    sbx__command_info_free(&in);
    sbx__err_free(&tmp);
    if (sbx__req_status(r) == SBX_OK && http >= 200 && http < 300)
        run_finish(run, SBX_E_TIMEOUT, "the command ran past its %s deadline and was killed (SIGKILL)",
                   sbx__duration_text(run->cmd->timeout_ms, dur));
    else if (sbx__req_error(r)[0])
        run_finish(run, SBX_E_TIMEOUT, "the command ran past its %s deadline; killing it failed (%s), it may still run",
                   sbx__duration_text(run->cmd->timeout_ms, dur), sbx__req_error(r));
    else
        run_finish(run, SBX_E_TIMEOUT,
                   "the command ran past its %s deadline; killing it failed (HTTP %ld), it may still run",
                   sbx__duration_text(run->cmd->timeout_ms, dur), http);
}

static void on_timeout(struct cmd_run *run)
{
    sbx_command *cmd = run->cmd;
    struct sbx__api_req req;
    sbx__req *r;

    if (run->timed_out)
        return;
    run->timed_out = true;
    /* Stop listening (there is no kill request yet); keep the requests
     * until the op ends. */
    cancel_reqs(run);
    if (!cmd->info.id) {
        run_finish(run, SBX_E_TIMEOUT,
                   "the server did not confirm the command's start before the deadline; it may have started");
        return;
    }
    r = cmd->core->proto->kill_command(&req, session_of(cmd), cmd->info.id, 9) == SBX_OK
            ? sbx__core_request(cmd->core, &req, true, &run->op->err)
            : NULL;
    sbx__api_req_free(&req);
    if (!r) {
        run_finish(run, SBX_E_TIMEOUT, "the command ran past its deadline; out of memory to kill it");
        return;
    }
    /* Killing with SIGKILL twice is harmless: idempotent. */
    sbx__req_set_deadline(r, sbx__mono_ms() + KILL_GRACE_MS);
    sbx__req_on_done(r, kill_after_timeout_done, run);
    run->kill = r;
    if (sbx__req_submit(r) != SBX_OK)
        run_finish(run, SBX_E_TIMEOUT, "the command ran past its deadline; out of memory to kill it");
}

/* The client's command policy, before anything is sent. */
static sbx_status check_policy(sbx_command *cmd)
{
    const sbx_policy *p = cmd->core->policy;
    char msg[768], dir[4096];
    const char *cwd = cmd->cwd;
    sbx_policy_reason why = SBX_POLICY_ALLOW;
    sbx_status st;
    if (cmd->own_safety || !p)
        return SBX_OK;
    if (cwd && cwd[0] != '/') { /* the server takes it under the workspace */
        snprintf(dir, sizeof dir, "/vercel/sandbox/%s", cwd);
        cwd = dir;
    }
    st = sbx_policy_check(p, cmd->core->policy_job, cmd->argv.n, (const char *const *)cmd->argv.v, cwd, &why, msg,
                          sizeof msg);
    if (st == SBX_E_POLICY_DENIED)
        return sbx__err_set(&cmd->err, st, "denied by the command policy (%s): %s", sbx_policy_reason_name(why), msg);
    if (st != SBX_OK)
        return sbx__err_set(&cmd->err, st, "the command policy could not decide: %s", msg);
    return SBX_OK;
}

/* The output's redaction streams, from the job's rules or the client's. */
static sbx_status open_redaction(sbx_command *cmd)
{
    sbx__redact_rules *rules = cmd->own_safety ? cmd->own_rules : cmd->core->redact_rules;
    if (!rules || cmd->rs[0])
        return SBX_OK;
    cmd->rs[0] = sbx__redact_stream_with(rules);
    cmd->rs[1] = sbx__redact_stream_with(rules);
    if (!cmd->rs[0] || !cmd->rs[1]) {
        sbx_redact_stream_free(cmd->rs[0]);
        sbx_redact_stream_free(cmd->rs[1]);
        cmd->rs[0] = cmd->rs[1] = NULL;
        return sbx__err_nomem(&cmd->err);
    }
    return SBX_OK;
}

bool sbx__command_may_have_started(const sbx_command *cmd)
{
    return cmd->info.id != NULL || cmd->start_unsure;
}

void sbx__command_own_safety(sbx_command *cmd, sbx__redact_rules *rules)
{
    cmd->own_safety = true;
    sbx__redact_rules_unref(cmd->own_rules);
    cmd->own_rules = rules;
}

/* The start could not be repeated on a new session (resume.h). */
static void run_fail(struct sbx__resume_wait *w, sbx_status st)
{
    run_finish(w->op->state, st, NULL);
}

static sbx_status set_session(sbx_command *cmd, const char *sid)
{
    char *copy = sbx__strdup(sid);
    if (!copy)
        return SBX_E_NOMEM;
    sbx__free(cmd->sid);
    cmd->sid = copy;
    return SBX_OK;
}

/* The start goes to the sandbox's new session: so do the command's
 * requests after it. */
static sbx_status moved(struct sbx__resume_wait *w, const char *sid)
{
    struct cmd_run *run = w->op->state;
    return set_session(run->cmd, sid);
}

static sbx_status begin(sbx_command *cmd, const char *attach_id, sbx_op **out)
{
    struct cmd_run *run;
    sbx_op *op;
    sbx_status st;

    if (!cmd->sbx->info.id)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the sandbox is not created or attached yet");
    if (cmd->started)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command handle was already started; use a new one");
    if (!attach_id && cmd->argv.n == 0)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "no program: call sbx_command_set_argv() first");
    if (!attach_id && (st = check_policy(cmd)) != SBX_OK)
        return st;
    if ((st = sbx__core_ready(cmd->core, &cmd->err)) != SBX_OK)
        return st;
    if ((st = open_redaction(cmd)) != SBX_OK)
        return st;
    run = sbx__calloc(1, sizeof *run);
    if (!run)
        return sbx__err_nomem(&cmd->err);
    run->cmd = cmd;
    run->detached = cmd->detached && !attach_id;
    run->logs_only = !run->detached && !attach_id && cmd->core->follow_logs_only;
    run->inline_out = !run->detached && !run->logs_only && !attach_id && cmd->core->proto->inline_logs;
    sbx__ndjson_init(&run->nd, LOG_LINE_MAX);
    sbx__ndjson_init(&run->snd, LOG_LINE_MAX);
    op = sbx__op_new(cmd->core, &cmd->t, &run_ops, run);
    if (!op) {
        sbx__ndjson_free(&run->nd);
        sbx__ndjson_free(&run->snd);
        sbx__free(run);
        return sbx__err_nomem(&cmd->err);
    }
    run->op = op;
    if (cmd->timeout_ms > 0)
        run->deadline = sbx__mono_ms() + cmd->timeout_ms;
    /* A new command runs in the sandbox's current session; an attach to
     * one the handle started (detached) keeps the session it ran in. */
    if ((!attach_id || !cmd->sid) && set_session(cmd, cmd->sbx->info.id) != SBX_OK) {
        sbx__op_destroy(op);
        return sbx__err_nomem(&cmd->err);
    }
    if (attach_id) {
        /* Copied first: attach_id may be cmd->info.id itself. */
        char *id = sbx__strdup(attach_id);
        if (!id) {
            sbx__op_destroy(op);
            return sbx__err_nomem(&cmd->err);
        }
        sbx__command_info_free(&cmd->info);
        cmd->info.exit_code = -1;
        cmd->info.started_at = -1;
        cmd->info.id = id;
    } else {
        /* The body holds the environment: the request is freed wiped. */
        struct sbx__api_req req;
        sbx_status built = cmd->core->proto->run_command(&req, cmd->sbx->info.id, &cmd->argv, cmd->cwd, &cmd->env,
                                                cmd->sudo, !run->detached && !run->logs_only, cmd->timeout_ms);
        sbx__req *r = new_req(run, built, &req, false);
        if (!r) {
            sbx__op_destroy(op);
            return sbx__err_nomem(&cmd->err);
        }
        if (!run->detached && !run->logs_only)
            sbx__req_set_stream(r, start_data, run);
        sbx__req_on_done(r, start_done, run);
        run->start = r;
        st = sbx__resume_arm(&run->rw, cmd->sbx, op, &run->start, run_fail);
        run->rw.moved = moved;
        if (st != SBX_OK || sbx__req_submit(r) != SBX_OK) {
            sbx__op_destroy(op);
            return sbx__err_nomem(&cmd->err);
        }
    }
    cmd->started = true;
    cmd->output_ended = false; /* a detached start before an attach ended "its" output */
    cmd->run = run;
    if (attach_id)
        start_logs(run); /* may finish the op at once (out of memory) */
    *out = op;
    return SBX_OK;
}

sbx_status sbx_command_check(sbx_command *cmd)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (cmd->argv.n == 0)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "no program: call sbx_command_set_argv() first");
    return check_policy(cmd);
}

sbx_status sbx_command_run_start(sbx_command *cmd, sbx_op **op)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    SBX__ARG(cmd, op, "op must not be NULL");
    *op = NULL;
    return begin(cmd, NULL, op);
}

sbx_status sbx_command_run(sbx_command *cmd)
{
    sbx_op *op;
    sbx_status st;
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    if (cmd->started)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command handle was already started; use a new one");
    cmd->blocking = !cmd->detached;
    st = begin(cmd, NULL, &op);
    if (st != SBX_OK) {
        cmd->blocking = false;
        return st;
    }
    return sbx__op_block(op, &cmd->err);
}

static sbx_status check_id(sbx_command *cmd, const char *id)
{
    SBX__ARG(cmd, id && *id && strlen(id) <= 256, "command id: non-empty, at most 256 bytes");
    SBX__ARG(cmd, sbx__text_ok(id, false), "command id: control characters or invalid UTF-8");
    return SBX_OK;
}

sbx_status sbx_command_attach_start(sbx_command *cmd, const char *id, sbx_op **op)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    SBX__ARG(cmd, op, "op must not be NULL");
    *op = NULL;
    if (check_id(cmd, id) != SBX_OK)
        return SBX_E_INVALID_ARG;
    if (cmd->info.id && strcmp(cmd->info.id, id) != 0)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the handle is bound to command %s", cmd->info.id);
    if (cmd->run)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command is already being followed");
    /* A detached start, or a get, may come before: following is still one.
     * If the attach fails, the handle stays as it was. */
    {
        bool was = cmd->started;
        sbx_status st;
        cmd->started = false;
        st = begin(cmd, id, op);
        if (st != SBX_OK)
            cmd->started = was;
        return st;
    }
}

sbx_status sbx_command_attach(sbx_command *cmd, const char *id)
{
    sbx_op *op;
    sbx_status st;
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    cmd->blocking = true;
    st = sbx_command_attach_start(cmd, id, &op);
    if (st != SBX_OK) {
        cmd->blocking = false;
        return st;
    }
    return sbx__op_block(op, &cmd->err);
}

/* ---- one-request calls: get, wait for exit, kill ------------------------------------------ */

struct info_arg {
    sbx_command *cmd;
    bool need_exit;
    char *id;     /* get: the id to bind */
    sbx__req *req, *probe; /* a wait's long poll, and its liveness check */
};

static void info_arg_free(void *p)
{
    struct info_arg *a = p;
    sbx__req_free(a->probe);
    sbx__free(a->id);
    sbx__free(a);
}

/* The long poll of sbx_command_wait_exit() was silent for probe_after_ms
 * and the command was checked: no answer, or an answer saying it exited
 * (the poll should have ended), ends the wait. */
static void wait_probe_done(sbx__req *r, void *user)
{
    struct info_arg *a = user;
    struct sbx__engine_limits l;
    char msg[1024];
    int code;

    a->probe = NULL;
    sbx__engine_get_limits(a->cmd->core->engine, &l);
    msg[0] = '\0';
    if (sbx__req_status(r) != SBX_OK && sbx__req_status(r) != SBX_E_CANCELLED)
        snprintf(msg, sizeof msg,
                 "the server stopped answering: the wait brought nothing for %lld ms and a check of the command "
                 "got no answer within %lld ms (%s)",
                 (long long)l.probe_after_ms, (long long)l.probe_timeout_ms, sbx__req_error(r));
    else if ((code = probe_exit_code(r, NULL)) >= 0)
        snprintf(msg, sizeof msg, "the wait stalled: the command exited (code %d) but the answer did not come",
                 code);
    sbx__req_free(r);
    if (msg[0])
        sbx__req_abort(a->req, SBX_E_TRANSPORT, msg);
}

static void wait_silent(sbx__req *r, void *user)
{
    struct info_arg *a = user;
    sbx__err tmp = {0};
    (void)r;
    if (!a->probe)
        a->probe = probe_new(a->cmd, wait_probe_done, a, &tmp);
    sbx__err_free(&tmp); /* out of memory: tried again after the next period */
}

static sbx_status info_reply(sbx_op *op, sbx__req *r, void *arg)
{
    struct info_arg *a = arg;
    sbx_command *cmd = a->cmd;
    struct sbx__command_info in = {0};
    size_t len;
    const char *body = sbx__req_body(r, &len);
    sbx_status st;
    in.exit_code = -1;
    st = sbx__api_parse_command(body, len, &in, &op->err);
    if (st == SBX_OK && a->need_exit && in.exit_code < 0)
        st = sbx__err_set(&op->err, SBX_E_PROTOCOL, "the server's wait ended without an exit code");
    if (st == SBX_OK && cmd->info.id && strcmp(cmd->info.id, in.id) != 0)
        st = sbx__err_set(&op->err, SBX_E_PROTOCOL, "the server answered about another command (%s)", in.id);
    if (st == SBX_OK) {
        if (!cmd->info.id) {
            cmd->info.id = in.id;
            in.id = NULL;
        }
        cmd->info.started_at = in.started_at;
        if (in.exit_code >= 0)
            cmd->info.exit_code = in.exit_code;
    }
    sbx__command_info_free(&in);
    return st;
}

/* build: the api builder of the request, given the sandbox's and the
 * command's ids; NULL: the kill, with signal. */
static sbx_status info_call(sbx_command *cmd, const char *what,
                            sbx_status (*build)(struct sbx__api_req *, const char *, const char *), int signal,
                            bool idempotent, bool need_exit, bool follow, sbx_op **op)
{
    struct info_arg *a;
    struct sbx__simple *sm;
    struct sbx__api_req req;
    sbx_status st;

    if (!cmd->sbx->info.id)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the sandbox is not created or attached yet");
    if (!cmd->info.id)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command has no id yet (not started, or its start is pending)");
    if (!(a = sbx__calloc(1, sizeof *a)))
        return sbx__err_nomem(&cmd->err);
    a->cmd = cmd;
    a->need_exit = need_exit;
    st = build ? build(&req, session_of(cmd), cmd->info.id)
               : cmd->core->proto->kill_command(&req, session_of(cmd), cmd->info.id, signal);
    if (st != SBX_OK) {
        info_arg_free(a);
        return sbx__err_nomem(&cmd->err);
    }
    sm = sbx__simple_new(cmd->core, what, &req, idempotent, info_reply, a, info_arg_free, &cmd->err);
    sbx__api_req_free(&req);
    if (!sm)
        return cmd->err.code;
    sbx__req_set_follow(sm->req, follow);
    if (follow) {
        struct sbx__engine_limits l;
        sbx__engine_get_limits(cmd->core->engine, &l);
        a->req = sm->req;
        sbx__req_set_idle(sm->req, l.probe_after_ms, wait_silent, a);
    }
    if (follow && cmd->timeout_ms > 0)
        sbx__req_set_deadline(sm->req, sbx__mono_ms() + cmd->timeout_ms);
    return sbx__simple_submit(cmd->core, &cmd->t, sm, op, &cmd->err);
}

sbx_status sbx_command_fetch_start(sbx_command *cmd, const char *id, sbx_op **op)
{
    sbx_status st;
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    SBX__ARG(cmd, op, "op must not be NULL");
    *op = NULL;
    if (check_id(cmd, id) != SBX_OK)
        return SBX_E_INVALID_ARG;
    if (cmd->info.id && strcmp(cmd->info.id, id) != 0)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the handle is bound to command %s", cmd->info.id);
    if (!cmd->info.id) {
        if (cmd->run)
            return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command's start is pending");
        if (!(cmd->info.id = sbx__strdup(id)))
            return sbx__err_nomem(&cmd->err);
        cmd->started = true; /* it exists: the handle cannot start another */
    }
    st = info_call(cmd, "get command", cmd->core->proto->get_command, 0, true, false, false, op);
    return st;
}

sbx_status sbx_command_fetch(sbx_command *cmd, const char *id)
{
    sbx_op *op;
    sbx_status st = sbx_command_fetch_start(cmd, id, &op);
    return st == SBX_OK ? sbx__op_block(op, &cmd->err) : st;
}

sbx_status sbx_command_wait_exit_start(sbx_command *cmd, sbx_op **op)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    SBX__ARG(cmd, op, "op must not be NULL");
    *op = NULL;
    return info_call(cmd, "wait for the command", cmd->core->proto->wait_command, 0, true, true, true, op);
}

sbx_status sbx_command_wait_exit(sbx_command *cmd)
{
    sbx_op *op;
    sbx_status st = sbx_command_wait_exit_start(cmd, &op);
    return st == SBX_OK ? sbx__op_block(op, &cmd->err) : st;
}

sbx_status sbx_command_kill_start(sbx_command *cmd, int signal, sbx_op **op)
{
    SBX__ENTER(cmd, sbx__core_in_callback(cmd->core));
    SBX__ARG(cmd, op, "op must not be NULL");
    *op = NULL;
    SBX__ARG(cmd, signal >= 1 && signal <= 64, "signal %d: a Linux signal number, 1 to 64", signal);
    return info_call(cmd, "kill command", NULL, signal, false, false, false, op);
}

sbx_status sbx_command_kill(sbx_command *cmd, int signal)
{
    sbx_op *op;
    sbx_status st = sbx_command_kill_start(cmd, signal, &op);
    return st == SBX_OK ? sbx__op_block(op, &cmd->err) : st;
}

/* ---- reading output and state ---------------------------------------------------------------- */

sbx_status sbx_command_read_output(sbx_command *cmd, sbx_stream stream, uint8_t *buf, size_t cap, size_t *n)
{
    sbx__buf *b;
    size_t k;
    SBX__ENTER(cmd, false);
    SBX__ARG(cmd, n, "n must not be NULL");
    *n = 0;
    SBX__ARG(cmd, (stream == SBX_STREAM_STDOUT || stream == SBX_STREAM_STDERR) && buf && cap != 0,
             "stream must be SBX_STREAM_STDOUT or SBX_STREAM_STDERR, buf non-NULL, cap > 0");
    if (cmd->cb)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the output goes to a callback");
    b = &cmd->out[idx((int)stream)];
    if (!cmd->started)
        return sbx__err_set(&cmd->err, SBX_E_MISUSE, "the command has not been started");
    if (b->len == 0)
        return cmd->output_ended || (!cmd->run && cmd->started) ? SBX_E_NOT_FOUND : SBX_E_AGAIN;
    k = b->len < cap ? b->len : cap;
    memcpy(buf, b->data, k);
    sbx__buf_consume(b, k);
    *n = k;
    /* Drained below the limit: let the stream flow again. */
    if (cmd->run && cmd->run->paused && cmd->out[0].len < cmd->limit && cmd->out[1].len < cmd->limit) {
        /* The stream the output comes on: the logs, or the start (inline) */
        sbx__req *from = cmd->run->logs ? cmd->run->logs : cmd->run->inline_out ? cmd->run->start : NULL;
        if (from) {
            cmd->run->paused = false;
            sbx__req_resume(from);
        }
    }
    return SBX_OK;
}

const char *sbx_command_id(const sbx_command *cmd)
{
    return cmd ? cmd->info.id : NULL;
}

int sbx_command_exit_code(const sbx_command *cmd)
{
    return cmd ? cmd->info.exit_code : -1;
}

int64_t sbx_command_started_at(const sbx_command *cmd)
{
    return cmd && cmd->info.id ? cmd->info.started_at : -1;
}

uint64_t sbx_command_output_bytes(const sbx_command *cmd, sbx_stream stream)
{
    if (!cmd || (stream != SBX_STREAM_STDOUT && stream != SBX_STREAM_STDERR))
        return 0;
    return cmd->delivered[idx((int)stream)];
}
