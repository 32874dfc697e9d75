/* SPDX-License-Identifier: MIT */
/*
 * command: one program run in a sandbox. Its stdout and stderr are pipes
 * whose read ends the I/O thread drains into a list of chunks, each valid
 * UTF-8 (split only at character boundaries, invalid bytes replaced by
 * U+FFFD, as the protocol's text logs need), up to a per-command and a
 * per-sandbox cap. Readers replay the chunks from the start and then follow.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "mitm.h"
#include "sbxd.h"

static const char REPLACEMENT[] = "\xEF\xBF\xBD";

struct command *command_find(struct sandbox *s, const char *id)
{
    for (struct command *c = s->commands; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

void command_ref(struct command *c)
{
    c->refs++;
}

void command_unref(struct command *c)
{
    if (--c->refs > 0)
        return;
    http_wake(&c->waitq); /* parked long polls look it up again: not found */
    for (size_t i = 0; i < c->nchunks; i++)
        sbx__free(c->chunks[i].data);
    sbx__free(c->chunks);
    sbx__free(c->name);
    sbx__strlist_clear(&c->args);
    sbx__free(c->cwd);
    pthread_cond_destroy(&c->cond);
    sbx__free(c);
}

json_t *command_json(struct command *c)
{
    json_t *o = json_object(), *args = json_array();
    if (!o || !args) {
        json_decref(o);
        json_decref(args);
        return NULL;
    }
    for (size_t i = 0; i < c->args.n; i++)
        json_array_append_new(args, json_string(c->args.v[i]));
    json_object_set_new(o, "id", json_string(c->id));
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "args", args);
    json_object_set_new(o, "cwd", json_string(c->cwd));
    json_object_set_new(o, "sandboxId", json_string(c->sbx ? c->sbx->id : ""));
    json_object_set_new(o, "exitCode", c->exited ? json_integer(c->exit_code) : json_null());
    json_object_set_new(o, "startedAt", json_integer(c->started_at));
    return o;
}

/* Output arrives in pieces as small as one byte (a program writing a
 * character at a time, slowly): stored one allocation each, a byte would
 * cost sbxd some 48 bytes of memory that the caps do not see. So a piece
 * is appended to the last chunk of its stream while that chunk is small
 * (its room doubling), and each new chunk is charged its bookkeeping
 * (CHUNK_COST) against the caps as if it were output: the caps bound the
 * memory, whatever the writer does (alternating stdout and stderr byte by
 * byte included). */
#define MERGE_BELOW 4096
#define CHUNK_COST (2 * sizeof(struct log_chunk) + 32) /* its slot (the array doubles) and malloc's header */

static size_t chunk_room(size_t len)
{
    size_t room = 16;
    while (room < len)
        room *= 2;
    return room;
}

static void charge(struct command *c, size_t n)
{
    c->log_bytes += n;
    if (c->sbx)
        c->sbx->log_bytes += n;
}

static int append_chunk(struct command *c, int stream, const char *p, size_t n)
{
    struct log_chunk *ch = c->nchunks ? &c->chunks[c->nchunks - 1] : NULL;
    if (n == 0)
        return 0;
    /* Readers stop at the end of the last chunk until the command exits
     * (api.c), so growing it loses nothing they follow. */
    if (ch && ch->stream == stream && ch->len < MERGE_BELOW && n < MERGE_BELOW && !c->exited) {
        size_t need = ch->len + n;
        if (need > chunk_room(ch->len)) {
            char *d = sbx__realloc(ch->data, chunk_room(need));
            if (!d)
                return -1;
            ch->data = d;
        }
        memcpy(ch->data + ch->len, p, n);
        ch->len = (uint32_t)need;
        charge(c, n);
        return 0;
    }
    if (c->nchunks == c->capchunks) {
        size_t cap = c->capchunks ? c->capchunks * 2 : 16;
        struct log_chunk *v = sbx__realloc(c->chunks, cap * sizeof *v);
        if (!v)
            return -1;
        c->chunks = v;
        c->capchunks = cap;
    }
    ch = &c->chunks[c->nchunks];
    ch->data = sbx__malloc(n < MERGE_BELOW ? chunk_room(n) : n);
    if (!ch->data)
        return -1;
    memcpy(ch->data, p, n);
    ch->stream = (uint8_t)stream;
    ch->len = (uint32_t)n;
    c->nchunks++;
    charge(c, n + CHUNK_COST);
    return 0;
}

/* Bytes a UTF-8 sequence starting with lead byte b needs; 0 if b cannot lead. */
static size_t seq_len(unsigned char b)
{
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF)
        return 3;
    if (b >= 0xF0 && b <= 0xF4)
        return 4;
    return 0;
}

/* Valid complete sequence of length k at p (k = seq_len(p[0])). */
static bool seq_ok(const unsigned char *p, size_t k)
{
    return sbx__utf8_valid((const char *)p, k);
}

/* Could p[0..n) (n < seq_len) still become a valid sequence? */
static bool seq_prefix_ok(const unsigned char *p, size_t n)
{
    unsigned char full[4];
    size_t k = seq_len(p[0]);
    if (k == 0 || n >= k)
        return false;
    memcpy(full, p, n);
    /* Complete it with the smallest continuation that keeps it valid for the
     * lead byte's range, then validate (catches E0 80.., ED A0.., F4 90..). */
    for (size_t i = n; i < k; i++)
        full[i] = 0x80;
    if (p[0] == 0xE0 && n == 1)
        full[1] = 0xA0;
    if (p[0] == 0xF0 && n == 1)
        full[1] = 0x90;
    return seq_ok(full, k);
}

/* Convert raw bytes to valid UTF-8 in out; returns how many input bytes were
 * consumed. At the end, an incomplete but valid prefix is left unconsumed
 * (unless final), so a character split across reads survives. */
static size_t sanitize(const unsigned char *in, size_t n, sbx__buf *out, bool final)
{
    size_t i = 0;
    while (i < n) {
        size_t k = seq_len(in[i]);
        if (k == 1) {
            size_t j = i;
            while (j < n && in[j] < 0x80)
                j++;
            sbx__buf_append(out, in + i, j - i);
            i = j;
            continue;
        }
        if (k && i + k <= n && seq_ok(in + i, k)) {
            sbx__buf_append(out, in + i, k);
            i += k;
            continue;
        }
        if (k && i + k > n && !final && seq_prefix_ok(in + i, n - i))
            break; /* wait for the rest */
        sbx__buf_append(out, REPLACEMENT, 3);
        /* Skip the maximal invalid prefix as one replacement, like decoders do. */
        {
            size_t j = i + 1;
            size_t want = k ? k : 1;
            while (j < n && j < i + want && (in[j] & 0xC0) == 0x80 && seq_prefix_ok(in + i, j - i + 1))
                j++;
            i = j;
        }
    }
    return i;
}

void command_output(struct command *c, int stream, const char *p, size_t n)
{
    int s = stream - 1;
    unsigned char tmp[4 + 65536];
    const unsigned char *in;
    size_t len, used;
    sbx__buf out = SBX__BUF_INIT;
    size_t room_cmd, room_sbx;

    if (c->log_truncated)
        return;
    /* Prepend the carried partial character. */
    if (c->carry_len[s] && n <= sizeof tmp - 4) {
        memcpy(tmp, c->carry[s], c->carry_len[s]);
        memcpy(tmp + c->carry_len[s], p, n);
        in = tmp;
        len = c->carry_len[s] + n;
    } else {
        in = (const unsigned char *)p;
        len = n;
    }
    used = sanitize(in, len, &out, false);
    c->carry_len[s] = len - used;
    memcpy(c->carry[s], in + used, c->carry_len[s]);

    room_cmd = g.cfg.max_cmd_log > c->log_bytes ? g.cfg.max_cmd_log - c->log_bytes : 0;
    room_sbx = c->sbx && g.cfg.max_sandbox_log > c->sbx->log_bytes
                   ? g.cfg.max_sandbox_log - c->sbx->log_bytes
                   : (c->sbx ? 0 : room_cmd);
    if (out.len > room_cmd || out.len > room_sbx) {
        char note[160];
        size_t room = room_cmd < room_sbx ? room_cmd : room_sbx;
        /* Keep what fits (on a character boundary), then say what happened. */
        append_chunk(c, stream, out.data, sbx__utf8_floor(out.data, room));
        snprintf(note, sizeof note,
                 "\n[sbxd: output limit reached (%zu bytes per command, %zu per sandbox); "
                 "further output is discarded]\n",
                 g.cfg.max_cmd_log, g.cfg.max_sandbox_log);
        append_chunk(c, 2, note, strlen(note));
        c->log_truncated = true;
    } else {
        append_chunk(c, stream, out.data, out.len);
    }
    sbx__buf_free(&out);
    pthread_cond_broadcast(&c->cond);
    http_wake(&c->waitq);
}

void command_finish(struct command *c, int exit_code, bool by_stop)
{
    if (c->exited)
        return;
    for (int s = 0; s < 2; s++) {
        /* A character cut off by the end of the stream. */
        if (c->carry_len[s] && !c->log_truncated)
            append_chunk(c, s + 1, REPLACEMENT, 3);
        c->carry_len[s] = 0;
    }
    if (c->deadline_mono && !c->timeout_fired)
        g.cmd_deadlines--;
    c->exited = true;
    c->exit_code = exit_code;
    c->finished_at = now_ms();
    c->killed_by_stop = by_stop;
    pthread_cond_broadcast(&c->cond);
    http_wake(&c->waitq);
}

/* KEY=VALUE lists: later entries replace earlier ones with the same key. */
static int env_set(sbx__strlist *env, const char *kv)
{
    size_t klen = strcspn(kv, "=");
    for (size_t i = 0; i < env->n; i++) {
        if (strncmp(env->v[i], kv, klen) == 0 && env->v[i][klen] == '=') {
            char *d = sbx__strdup(kv);
            if (!d)
                return -1;
            sbx__free_secret(env->v[i]);
            env->v[i] = d;
            return 0;
        }
    }
    return sbx__strlist_push(env, kv) == SBX_OK ? 0 : -1;
}

static int build_env(struct sandbox *s, int ctx, sbx__strlist *cmd_env, sbx__strlist *out)
{
    static const char *const base[] = {
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=" SBXD_HOME, "USER=" SBXD_USER, "LOGNAME=" SBXD_USER, "SHELL=/bin/bash",
        "LANG=C.UTF-8",
    };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        if (env_set(out, base[i]) < 0)
            return -1;
    if (ctx == NET_ISOLATED) {
        /* The egress proxy is the only way out of an isolated sandbox. */
        static const char *const names[] = {"http_proxy", "https_proxy", "HTTP_PROXY",
                                            "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
        char kv[96];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            snprintf(kv, sizeof kv, "%s=http://127.0.0.1:%d", names[i], EGRESS_PORT);
            if (env_set(out, kv) < 0)
                return -1;
        }
        if (env_set(out, "no_proxy=localhost,127.0.0.1,::1") < 0 ||
            env_set(out, "NO_PROXY=localhost,127.0.0.1,::1") < 0)
            return -1;
        /* Runtimes that do not read the system store, for domains whose
         * requests get headers injected (and so intercepted). */
        if (mitm_ca_path() && env_set(out, "NODE_EXTRA_CA_CERTS=" MITM_SANDBOX_CA) < 0)
            return -1;
        if (mitm_bundle_path() && env_set(out, "REQUESTS_CA_BUNDLE=" MITM_SANDBOX_BUNDLE) < 0)
            return -1;
    }
    for (size_t i = 0; i < s->env.n; i++)
        if (env_set(out, s->env.v[i]) < 0)
            return -1;
    for (size_t i = 0; i < cmd_env->n; i++)
        if (env_set(out, cmd_env->v[i]) < 0)
            return -1;
    return 0;
}

static void unlink_command(struct sandbox *s, struct command *c)
{
    for (struct command **pp = &s->commands; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            s->ncommands--;
            break;
        }
}

struct command *command_start(struct sandbox *s, const char *name, sbx__strlist *args,
                              const char *cwd, sbx__strlist *env, bool sudo, int64_t timeout_ms,
                              int *http_status, char *err, size_t errlen)
{
    struct command *c;
    sbx__strlist full_env = SBX__STRLIST_INIT;
    struct ctl_msg m;
    int ctx, rc;

    *http_status = 500;
    ctx = sandbox_active_ctx(s, err, errlen);
    if (ctx < 0) {
        *http_status = 410;
        return NULL;
    }
    c = sbx__calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->refs = 2; /* the sandbox's list and the caller */
    pthread_cond_init(&c->cond, NULL);
    make_id(c->id, sizeof c->id, "cmd_");
    c->ctx = ctx;
    c->name = sbx__strdup(name);
    if (cwd && cwd[0] == '/')
        c->cwd = sbx__strdup(cwd);
    else if (cwd && cwd[0])
        c->cwd = path_join(SBXD_CWD, cwd);
    else
        c->cwd = sbx__strdup(SBXD_CWD);
    if (!c->name || !c->cwd || sbx__strlist_copy(&c->args, args) != SBX_OK ||
        build_env(s, ctx, env, &full_env) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    ctl_msg_init(&m, CTL_RUN, 0);
    if (ctl_put_int(&m, sudo) < 0 || ctl_put_str(&m, c->cwd) < 0 ||
        ctl_put_int(&m, (long long)args->n + 1) < 0 || ctl_put_str(&m, name) < 0) {
        ctl_msg_free(&m);
        snprintf(err, errlen, "command too large");
        *http_status = 413;
        goto fail;
    }
    for (size_t i = 0; i < args->n; i++)
        if (ctl_put_str(&m, args->v[i]) < 0)
            goto too_big;
    for (size_t i = 0; i < full_env.n; i++)
        if (ctl_put_str(&m, full_env.v[i]) < 0)
            goto too_big;

    pthread_mutex_lock(&g.lock);
    c->sbx = s;
    c->ctl_id = m.id = ++s->next_ctl_id;
    c->started_at = now_ms();
    c->deadline_mono = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
    if (c->deadline_mono)
        g.cmd_deadlines++; /* the I/O thread looks for them only while some are pending */
    c->next = s->commands;
    s->commands = c;
    s->ncommands++;
    pthread_mutex_unlock(&g.lock);

    rc = sandbox_ctl(s, ctx, &m, NULL, NULL);
    ctl_msg_free(&m);
    sbx__strlist_wipe(&full_env);

    pthread_mutex_lock(&g.lock);
    if (rc != 0) {
        if (c->deadline_mono)
            g.cmd_deadlines--; /* it never ran */
        unlink_command(s, c);
        c->refs--; /* the list's reference */
        pthread_mutex_unlock(&g.lock);
        if (rc == ENOENT || rc == ENOTDIR) {
            *http_status = 400;
            snprintf(err, errlen, "cwd %s does not exist in the sandbox or is not a directory", c->cwd);
        } else if (rc == EPIPE) {
            *http_status = 410;
            snprintf(err, errlen, "sandbox %s stopped", s->id);
        } else {
            /* Nothing ran: a 5xx is safe to retry. */
            snprintf(err, errlen, "could not start the command: %s", strerror(rc));
        }
        command_unref(c);
        return NULL;
    }
    pthread_mutex_unlock(&g.lock);
    return c;

too_big:
    ctl_msg_free(&m);
    snprintf(err, errlen, "command, arguments and environment are too large");
    *http_status = 413;
fail:
    sbx__strlist_wipe(&full_env);
    c->refs = 1;
    command_unref(c);
    return NULL;
}

static void *timeout_kill_main(void *arg)
{
    struct command *c = arg;
    int rc = command_kill(c, SIGKILL);
    if (rc && rc != ESRCH && rc != EPIPE)
        sbxd_log(LOG_WARN, "command %s: cannot kill it at its timeout: %s", c->id, strerror(rc));
    pthread_mutex_lock(&g.lock);
    command_unref(c);
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

void command_fire_timeouts(int64_t now)
{
    if (g.cmd_deadlines <= 0)
        return;
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        if (s->status != SBXD_RUNNING)
            continue;
        for (struct command *c = s->commands; c; c = c->next) {
            pthread_t t;
            pthread_attr_t attr;
            if (!c->deadline_mono || c->exited || c->timeout_fired || c->deadline_mono > now)
                continue;
            /* The kill waits for init's reply, which this (I/O) thread
             * reads: it runs on a thread of its own. */
            c->timeout_fired = true;
            g.cmd_deadlines--;
            command_ref(c);
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, timeout_kill_main, c) != 0) {
                c->timeout_fired = false; /* tried again at the next round */
                g.cmd_deadlines++;
                command_unref(c);
            }
            pthread_attr_destroy(&attr);
        }
    }
}

int command_kill(struct command *c, int sig)
{
    struct ctl_msg m;
    struct sandbox *s = c->sbx;
    int rc;

    if (!s)
        return ESRCH;
    ctl_msg_init(&m, CTL_KILL, 0);
    if (ctl_put_int(&m, (long long)c->ctl_id) < 0 || ctl_put_int(&m, sig) < 0) {
        ctl_msg_free(&m);
        return ENOMEM;
    }
    rc = sandbox_ctl(s, c->ctx, &m, NULL, NULL);
    ctl_msg_free(&m);
    return rc;
}
