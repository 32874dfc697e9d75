/* SPDX-License-Identifier: MIT */
/*
 * transcript: the bounded, hash-chained, crash-safe record of a job.
 *
 * Entries are JSON objects written canonically (jansson's compact form,
 * keys sorted, ASCII only), one per line (doc/transcript.md):
 *
 *   {"type":"job", ...}   the header: format, version, the job, the limits
 *   {"type":"meta", ...}  a job field set after the header (the sandbox id)
 *   {"type":"step", ...}  a step, made when it ends
 *   {"type":"end", ...}   the verdict
 *
 * Each carries "seq" (its position), "prev" (the previous entry's hash, 64
 * zeros for the first) and "hash": the SHA-256 of the entry's canonical JSON
 * without "hash". A change to any byte of any entry breaks its own hash or
 * its canonical form, and a removed or reordered entry breaks a link.
 *
 * The transcript keeps each entry's line (bounded by the total limit), so
 * export, save and verify work the same on a transcript being written and
 * on one loaded from a file. A step being recorded keeps its output as a
 * head window and a tail ring per stream, each of a fixed size.
 */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sbxrun/command.h>
#include <sbxrun/transcript.h>

#include "util/buf.h"
#include "util/clock.h"
#include "redact/redact_int.h"
#include "util/str.h"

#define FORMAT "sbxrun-transcript"
#define VERSION 1
#define HEAD_DEFAULT (16u << 10)
#define TAIL_DEFAULT (16u << 10)
#define TOTAL_DEFAULT (16u << 20)
#define WINDOW_MAX (1ull << 30)
#define TOTAL_MIN (4u << 10)
#define TOTAL_MAX (4ull << 30)
#define END_RESERVE 2048 /* room always kept for the end entry */
#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"
#define DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

/* One output stream of a step: the head window, then a ring holding the
 * last bytes; what falls between is only counted. */
struct win {
    sbx_redact_stream *rs;
    sbx__buf head;
    char *ring;
    size_t ring_cap, ring_len, ring_pos; /* ring_pos: where the next byte goes */
    uint64_t total, raw;
};

struct step {
    size_t num;
    char *name, *cwd, *command_id;
    json_t *argv, *env, *counts; /* counts: kind -> redactions outside the output */
    struct win out[2];
    char started_at[32];
    int64_t started_mono;
    struct step *next;
};

/* A line of the transcript as it is (written or loaded), and its parse. */
struct entry {
    char *line;
    size_t len;
    json_t *obj; /* NULL when the line is not JSON */
};

struct sbx_transcript {
    atomic_uint refs;
    sbx__err err;
    sbx__redact_rules *rules;
    uint64_t head_limit, tail_limit, total_limit;
    /* the job, until the header is made */
    char *job_type, *endpoint, *sandbox_id;
    json_t *inputs, *policy, *netpolicy;
    char started_at[32];
    int64_t started_mono;
    bool header_made, finished, loaded;
    size_t next_step;
    struct step *steps; /* open steps */
    json_t *totals;     /* kind -> redactions in all steps */
    /* entries */
    struct entry *entries;
    size_t nentries, cap;
    uint64_t bytes;     /* of all lines, newlines included */
    char head_hash[65];
    size_t torn;
    /* the journal */
    char *path;
    int fd;
    bool journal_broken;
};

/* ---- small helpers ------------------------------------------------------------------------ */

static void now_iso(char out[32])
{
    struct timespec ts;
    struct tm tm;
    char date[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%.20s.%03uZ", date, (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

static void sha256_hex(const char *data, size_t len, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int n = 0;
    if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        memset(md, 0, sizeof md); /* cannot fail with OpenSSL's own SHA-256; a zero hash would not verify */
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

/* Redact a string whole with the transcript's rules, counting into counts
 * (kind -> n) when counts is not NULL. NULL on out of memory. */
static char *redact_str(sbx_transcript *t, const char *s, json_t *counts)
{
    sbx_redact_stream *rs = sbx__redact_stream_with(t->rules);
    sbx__buf b = SBX__BUF_INIT;
    const char *o;
    size_t n;
    char *res = NULL;
    if (!rs)
        return NULL;
    if (sbx__redact_feed(rs, s, strlen(s), &o, &n) != SBX_OK || sbx__buf_append(&b, o, n) != SBX_OK ||
        sbx__redact_finish(rs, &o, &n) != SBX_OK || sbx__buf_append(&b, o, n) != SBX_OK)
        goto out;
    if (counts)
        for (size_t k = 0; k < sbx__redact_stream_nkinds(rs); k++) {
            uint64_t c;
            const char *kind = sbx__redact_stream_kind(rs, k, &c);
            json_int_t old = json_integer_value(json_object_get(counts, kind));
            if (c && json_object_set_new(counts, kind, json_integer(old + (json_int_t)c)) != 0)
                goto out;
        }
    res = sbx__buf_detach(&b, NULL);
out:
    sbx__buf_wipe_free(&b);
    sbx_redact_stream_free(rs);
    return res;
}

/* A JSON string of a redacted copy of s; NULL on out of memory. */
static json_t *redacted_json(sbx_transcript *t, const char *s, json_t *counts)
{
    char *r = redact_str(t, s, counts);
    json_t *j = r ? json_string(r) : NULL;
    if (r)
        sbx__free_secret(r);
    return j;
}

/* Redact every string in a JSON value, in place. */
static sbx_status redact_tree(sbx_transcript *t, json_t *v)
{
    if (json_is_string(v)) {
        char *r = redact_str(t, json_string_value(v), NULL);
        int rc = r ? json_string_set(v, r) : -1;
        if (r)
            sbx__free_secret(r);
        return rc == 0 ? SBX_OK : SBX_E_NOMEM;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
            if (redact_tree(t, x) != SBX_OK)
                return SBX_E_NOMEM;
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            if (redact_tree(t, x) != SBX_OK)
                return SBX_E_NOMEM;
    }
    return SBX_OK;
}

static bool text_ok(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    return s && n <= max && sbx__utf8_valid(s, n);
}

/* ---- the handle ---------------------------------------------------------------------------- */

sbx_transcript *sbx_transcript_new(void)
{
    sbx_transcript *t = sbx__calloc(1, sizeof *t);
    sbx_redactor *r;
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    t->fd = -1;
    t->head_limit = HEAD_DEFAULT;
    t->tail_limit = TAIL_DEFAULT;
    t->total_limit = TOTAL_DEFAULT;
    t->next_step = 1;
    now_iso(t->started_at);
    t->started_mono = sbx__mono_ms();
    if (!(r = sbx_redactor_new()) || !(t->inputs = json_object()) || !(t->totals = json_object())) {
        sbx_redactor_free(r);
        json_decref(t->inputs);
        json_decref(t->totals);
        sbx__free(t);
        return NULL;
    }
    t->rules = sbx__redactor_rules(r);
    sbx_redactor_free(r);
    if (!t->rules) {
        sbx_transcript_free(t);
        return NULL;
    }
    return t;
}

sbx_transcript *sbx_transcript_ref(sbx_transcript *t)
{
    if (t)
        atomic_fetch_add(&t->refs, 1);
    return t;
}

static void win_free(struct win *w)
{
    sbx_redact_stream_free(w->rs);
    sbx__buf_wipe_free(&w->head);
    if (w->ring) {
        sbx__wipe(w->ring, w->ring_cap);
        sbx__free(w->ring);
    }
}

static void step_free(struct step *s)
{
    if (!s)
        return;
    sbx__free(s->name);
    sbx__free_secret(s->cwd);
    sbx__free(s->command_id);
    json_decref(s->argv);
    json_decref(s->env);
    json_decref(s->counts);
    win_free(&s->out[0]);
    win_free(&s->out[1]);
    sbx__free(s);
}

void sbx_transcript_free(sbx_transcript *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    while (t->steps) {
        struct step *s = t->steps;
        t->steps = s->next;
        step_free(s);
    }
    for (size_t i = 0; i < t->nentries; i++) {
        sbx__free(t->entries[i].line);
        json_decref(t->entries[i].obj);
    }
    sbx__free(t->entries);
    if (t->fd >= 0)
        close(t->fd);
    sbx__free(t->path);
    sbx__free(t->job_type);
    sbx__free(t->endpoint);
    sbx__free(t->sandbox_id);
    json_decref(t->inputs);
    json_decref(t->policy);
    json_decref(t->netpolicy);
    json_decref(t->totals);
    sbx__redact_rules_unref(t->rules);
    sbx__err_free(&t->err);
    sbx__free(t);
}

const char *sbx_transcript_last_error(const sbx_transcript *t)
{
    return SBX__LAST_ERROR(t);
}

/* Whether the transcript can still take entries; sets the error if not. */
static sbx_status writable(sbx_transcript *t)
{
    if (t->loaded)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "a loaded transcript is read-only");
    if (t->finished)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "the transcript is finished");
    return SBX_OK;
}

/* The job fields: only before the header is made. */
static sbx_status job_open(sbx_transcript *t, const char *what)
{
    sbx_status st = writable(t);
    if (st != SBX_OK)
        return st;
    if (t->header_made)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "%s: the job's header is already written (set it before the "
                            "first step)", what);
    return SBX_OK;
}

sbx_status sbx_transcript_set_redactor(sbx_transcript *t, const sbx_redactor *r)
{
    sbx__redact_rules *rules;
    SBX__ENTER(t, false);
    SBX__ARG(t, r, "invalid argument: the redactor is NULL");
    if (!(rules = sbx__redactor_rules(r)))
        return sbx__err_nomem(&t->err);
    sbx__redact_rules_unref(t->rules);
    t->rules = rules;
    return SBX_OK;
}

sbx_status sbx_transcript_set_limits(sbx_transcript *t, size_t head, size_t tail, size_t total)
{
    SBX__ENTER(t, false);
    SBX__ARG(t, head <= WINDOW_MAX && tail <= WINDOW_MAX, "a window of more than 1 GiB (head %llu, tail %llu)",
             (unsigned long long)head, (unsigned long long)tail);
    SBX__ARG(t, total >= TOTAL_MIN && total <= TOTAL_MAX, "the total limit must be 4 KiB to 4 GiB (%llu given)",
             (unsigned long long)total);
    if (t->nentries || t->steps || t->loaded)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "limits are set before the first step");
    t->head_limit = head;
    t->tail_limit = tail;
    t->total_limit = total;
    return SBX_OK;
}

sbx_status sbx_transcript_set_job_type(sbx_transcript *t, const char *type)
{
    char *copy;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = job_open(t, "the job type")) != SBX_OK)
        return st;
    SBX__ARG(t,
             type && *type && strlen(type) <= 64 &&
                 strspn(type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == strlen(type),
             "invalid job type: 1 to 64 letters, digits, '.', '-' or '_' expected");
    if (!(copy = sbx__strdup(type)))
        return sbx__err_nomem(&t->err);
    sbx__free(t->job_type);
    t->job_type = copy;
    return SBX_OK;
}

sbx_status sbx_transcript_set_input(sbx_transcript *t, const char *key, const char *value)
{
    json_t *v;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = job_open(t, "an input")) != SBX_OK)
        return st;
    SBX__ARG(t, key && *key && text_ok(key, 128), "invalid input key: 1 to 128 bytes of UTF-8 expected");
    SBX__ARG(t, value && text_ok(value, SIZE_MAX), "invalid value for input \"%s\": UTF-8 expected", key);
    if (!(v = redacted_json(t, value, NULL)) || json_object_set_new(t->inputs, key, v) != 0)
        return sbx__err_nomem(&t->err);
    return SBX_OK;
}

static sbx_status set_json(sbx_transcript *t, json_t **slot, const char *json, const char *what)
{
    json_error_t e;
    json_t *v;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = job_open(t, what)) != SBX_OK)
        return st;
    SBX__ARG(t, json, "invalid argument: %s is NULL", what);
    if (!(v = json_loads(json, JSON_REJECT_DUPLICATES, &e)) || !json_is_object(v)) {
        json_decref(v);
        return sbx__err_set(&t->err, SBX_E_PARSE, "%s is not a JSON object (%s)", what, e.text[0] ? e.text : "not an object");
    }
    if (redact_tree(t, v) != SBX_OK) {
        json_decref(v);
        return sbx__err_nomem(&t->err);
    }
    json_decref(*slot);
    *slot = v;
    return SBX_OK;
}

sbx_status sbx_transcript_set_policy_json(sbx_transcript *t, const char *json)
{
    return t ? set_json(t, &t->policy, json, "the policy summary") : SBX_E_INVALID_ARG;
}

sbx_status sbx_transcript_set_netpolicy_json(sbx_transcript *t, const char *json)
{
    return t ? set_json(t, &t->netpolicy, json, "the network policy") : SBX_E_INVALID_ARG;
}

sbx_status sbx_transcript_set_endpoint(sbx_transcript *t, const char *endpoint)
{
    char *r;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = job_open(t, "the endpoint")) != SBX_OK)
        return st;
    SBX__ARG(t, endpoint && *endpoint && text_ok(endpoint, 4096),
             "invalid endpoint: 1 to 4096 bytes of UTF-8 expected");
    {
        /* A URL's userinfo is a credential: never recorded. */
        char *bare = NULL, *userpwd = NULL;
        if (sbx__url_split_userinfo(endpoint, &bare, &userpwd) != SBX_OK)
            return sbx__err_nomem(&t->err);
        sbx__free_secret(userpwd);
        r = redact_str(t, bare, NULL);
        sbx__free(bare);
        if (!r)
            return sbx__err_nomem(&t->err);
    }
    sbx__free(t->endpoint);
    t->endpoint = r;
    return SBX_OK;
}

/* ---- entries ----------------------------------------------------------------------------- */

/* Write all of [p, p+n) to fd, or an error. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Append a line (and its newline) to the journal and sync it. */
static sbx_status journal(sbx_transcript *t, const char *line, size_t len)
{
    if (t->fd < 0 || t->journal_broken)
        return SBX_OK;
    /* One write for the line and its newline: a crash leaves whole lines or
     * one torn last line, which the loader reports. */
    char *buf = sbx__malloc(len + 1);
    int rc;
    if (!buf)
        return sbx__err_nomem(&t->err);
    memcpy(buf, line, len);
    buf[len] = '\n';
    rc = write_all(t->fd, buf, len + 1);
    sbx__free(buf);
    if (rc != 0 || fdatasync(t->fd) != 0) {
        int e = errno;
        t->journal_broken = true;
        return sbx__err_set(&t->err, SBX_E_IO, "cannot append to the transcript file %s: %s", t->path, strerror(e));
    }
    return SBX_OK;
}

/* The canonical line of obj, with its seq, prev and hash set. NULL on out
 * of memory. */
static char *seal(sbx_transcript *t, json_t *obj, size_t *len, char hash[65])
{
    char *body, *line;
    json_object_del(obj, "hash");
    if (json_object_set_new(obj, "seq", json_integer((json_int_t)t->nentries)) != 0 ||
        json_object_set_new(obj, "prev", json_string(t->nentries ? t->head_hash : ZERO_HASH)) != 0 ||
        !(body = json_dumps(obj, DUMP_FLAGS)))
        return NULL;
    sha256_hex(body, strlen(body), hash);
    free(body); /* jansson's allocation */
    if (json_object_set_new(obj, "hash", json_string(hash)) != 0 || !(line = json_dumps(obj, DUMP_FLAGS)))
        return NULL;
    *len = strlen(line);
    return line;
}

static sbx_status reserve_entries(sbx_transcript *t)
{
    if (t->nentries == t->cap) {
        size_t n = t->cap ? 2 * t->cap : 16;
        struct entry *e = sbx__realloc(t->entries, n * sizeof *e);
        if (!e)
            return SBX_E_NOMEM;
        t->entries = e;
        t->cap = n;
    }
    return SBX_OK;
}

/* Bytes left for entries other than the end entry. */
static uint64_t room(const sbx_transcript *t, bool is_end)
{
    uint64_t limit = t->total_limit - (is_end ? 0 : END_RESERVE);
    return t->bytes >= limit ? 0 : limit - t->bytes;
}

/* Make obj the next entry (taking it), unless it would pass the total limit
 * (SBX_E_BUDGET_EXCEEDED, obj kept by the caller... freed here either way). */
static sbx_status add_entry(sbx_transcript *t, json_t *obj, bool is_end)
{
    char hash[65], *jline, *line;
    size_t len;
    sbx_status st;
    if (reserve_entries(t) != SBX_OK || !(jline = seal(t, obj, &len, hash))) {
        json_decref(obj);
        return sbx__err_nomem(&t->err);
    }
    if (len + 1 > room(t, is_end)) {
        free(jline);
        json_decref(obj);
        return sbx__err_set(&t->err, SBX_E_BUDGET_EXCEEDED,
                            "the entry (%zu bytes) does not fit in the transcript's %llu-byte limit (%llu used)",
                            len + 1, (unsigned long long)t->total_limit, (unsigned long long)t->bytes);
    }
    line = sbx__malloc(len + 1);
    if (!line) {
        free(jline);
        json_decref(obj);
        return sbx__err_nomem(&t->err);
    }
    memcpy(line, jline, len + 1);
    free(jline);
    t->entries[t->nentries++] = (struct entry){line, len, obj};
    t->bytes += len + 1;
    memcpy(t->head_hash, hash, sizeof hash);
    st = journal(t, line, len);
    return st;
}

/* The header, made with the first step (or the end, or a late field). */
static sbx_status make_header(sbx_transcript *t)
{
    json_t *h, *job, *lim;
    sbx_status st;
    if (t->header_made)
        return SBX_OK;
    h = json_object();
    job = json_object();
    lim = json_object();
    if (!h || !job || !lim || json_object_set_new(h, "type", json_string("job")) ||
        json_object_set_new(h, "format", json_string(FORMAT)) || json_object_set_new(h, "version", json_integer(VERSION)) ||
        json_object_set_new(job, "type", t->job_type ? json_string(t->job_type) : json_null()) ||
        json_object_set(job, "inputs", t->inputs) ||
        json_object_set(job, "policy", t->policy ? t->policy : json_null()) ||
        json_object_set(job, "netpolicy", t->netpolicy ? t->netpolicy : json_null()) ||
        json_object_set_new(job, "endpoint", t->endpoint ? json_string(t->endpoint) : json_null()) ||
        json_object_set_new(job, "sandbox_id", t->sandbox_id ? json_string(t->sandbox_id) : json_null()) ||
        json_object_set_new(job, "started_at", json_string(t->started_at)) ||
        json_object_set_new(lim, "head", json_integer((json_int_t)t->head_limit)) ||
        json_object_set_new(lim, "tail", json_integer((json_int_t)t->tail_limit)) ||
        json_object_set_new(lim, "total", json_integer((json_int_t)t->total_limit)) ||
        json_object_set_new(h, "job", job) || json_object_set_new(h, "limits", lim)) {
        json_decref(h);
        json_decref(job);
        json_decref(lim);
        return sbx__err_nomem(&t->err);
    }
    /* Made only once it is in: a header that failed is tried again with
     * the next entry, never skipped (the chain starts with it). */
    if ((st = add_entry(t, h, false)) == SBX_OK)
        t->header_made = true;
    return st;
}

sbx_status sbx_transcript_set_sandbox_id(sbx_transcript *t, const char *id)
{
    char *r;
    json_t *m;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = writable(t)) != SBX_OK)
        return st;
    SBX__ARG(t, id && *id && text_ok(id, 256), "invalid sandbox id: 1 to 256 bytes of UTF-8 expected");
    if (!(r = redact_str(t, id, NULL)))
        return sbx__err_nomem(&t->err);
    sbx__free(t->sandbox_id);
    t->sandbox_id = r;
    if (!t->header_made)
        return SBX_OK;
    /* After the header: an entry of its own. */
    if (!(m = json_object()) || json_object_set_new(m, "type", json_string("meta")) ||
        json_object_set_new(m, "sandbox_id", json_string(r))) {
        json_decref(m);
        return sbx__err_nomem(&t->err);
    }
    return add_entry(t, m, false);
}

sbx_status sbx_transcript_set_file(sbx_transcript *t, const char *path)
{
    sbx_status st;
    char *copy;
    int fd;
    SBX__ENTER(t, false);
    SBX__ARG(t, path && *path, "invalid argument: no path");
    if (t->loaded || t->fd >= 0 || t->path)
        return sbx__err_set(&t->err, SBX_E_MISUSE, t->loaded ? "a loaded transcript is read-only"
                                                             : "the transcript already has a file");
    if (t->finished)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "the transcript is finished (save it instead)");
    if (!(copy = sbx__strdup(path)))
        return sbx__err_nomem(&t->err);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        sbx__free(copy);
        return sbx__err_set(&t->err, SBX_E_IO, "cannot create the transcript file %s: %s", path, strerror(e));
    }
    t->fd = fd;
    t->path = copy;
    /* The entries made so far, then every later one as it is made. */
    for (size_t i = 0; i < t->nentries; i++)
        if ((st = journal(t, t->entries[i].line, t->entries[i].len)) != SBX_OK)
            return st;
    return SBX_OK;
}

/* ---- steps ------------------------------------------------------------------------------- */

static struct step *find_step(sbx_transcript *t, size_t num)
{
    for (struct step *s = t->steps; s; s = s->next)
        if (s->num == num)
            return s;
    return NULL;
}

#define STEP(t, num, s)                                                                              \
    do {                                                                                              \
        SBX__ENTER(t, false);                                                                         \
        if (!((s) = find_step((t), (num))))                                                           \
            return sbx__err_set(&(t)->err, SBX_E_NOT_FOUND, "no open step %zu", (size_t)(num));         \
    } while (0)

sbx_status sbx_transcript_step_begin(sbx_transcript *t, const char *name, size_t *step)
{
    struct step *s;
    sbx_status st;
    SBX__ENTER(t, false);
    SBX__ARG(t, step, "invalid argument: step is NULL");
    *step = 0;
    if ((st = writable(t)) != SBX_OK)
        return st;
    SBX__ARG(t, !name || (text_ok(name, 128) && *name), "invalid step name: 1 to 128 bytes of UTF-8 expected");
    if ((st = make_header(t)) != SBX_OK)
        return st;
    if (!(s = sbx__calloc(1, sizeof *s)) || (name && !(s->name = sbx__strdup(name))) || !(s->env = json_array()) ||
        !(s->counts = json_object()) || !(s->out[0].rs = sbx__redact_stream_with(t->rules)) ||
        !(s->out[1].rs = sbx__redact_stream_with(t->rules))) {
        step_free(s);
        return sbx__err_nomem(&t->err);
    }
    s->num = t->next_step++;
    now_iso(s->started_at);
    s->started_mono = sbx__mono_ms();
    s->next = t->steps;
    t->steps = s;
    *step = s->num;
    return SBX_OK;
}

sbx_status sbx_transcript_step_set_argv(sbx_transcript *t, size_t step, size_t argc, const char *const *argv)
{
    struct step *s;
    json_t *a;
    STEP(t, step, s);
    SBX__ARG(t, argc && argv, "invalid argument: an empty argv");
    for (size_t i = 0; i < argc; i++)
        SBX__ARG(t, text_ok(argv[i], SIZE_MAX), "invalid argument: argv[%u] is %s", (unsigned)i,
                 argv[i] ? "not UTF-8" : "NULL");
    if (!(a = json_array()))
        return sbx__err_nomem(&t->err);
    for (size_t i = 0; i < argc; i++) {
        json_t *v = redacted_json(t, argv[i], s->counts);
        if (!v || json_array_append_new(a, v) != 0) {
            json_decref(a);
            return sbx__err_nomem(&t->err);
        }
    }
    json_decref(s->argv);
    s->argv = a;
    return SBX_OK;
}

sbx_status sbx_transcript_step_set_cwd(sbx_transcript *t, size_t step, const char *cwd)
{
    struct step *s;
    char *r;
    STEP(t, step, s);
    SBX__ARG(t, cwd && *cwd && text_ok(cwd, 4096), "invalid cwd: 1 to 4096 bytes of UTF-8 expected");
    if (!(r = redact_str(t, cwd, s->counts)))
        return sbx__err_nomem(&t->err);
    sbx__free_secret(s->cwd);
    s->cwd = r;
    return SBX_OK;
}

sbx_status sbx_transcript_step_add_env(sbx_transcript *t, size_t step, const char *name)
{
    struct step *s;
    const char *eq;
    size_t n, i;
    json_t *v;
    STEP(t, step, s);
    SBX__ARG(t, name, "invalid argument: the variable is NULL");
    eq = strchr(name, '=');
    n = eq ? (size_t)(eq - name) : strlen(name);
    /* A name never holds the value: only [A-Za-z0-9_], not starting with a digit. */
    if (!n || n > 256 || (name[0] >= '0' && name[0] <= '9'))
        goto bad;
    for (size_t k = 0; k < n; k++)
        if (!((name[k] >= 'A' && name[k] <= 'Z') || (name[k] >= 'a' && name[k] <= 'z') ||
              (name[k] >= '0' && name[k] <= '9') || name[k] == '_'))
            goto bad;
    json_array_foreach(s->env, i, v)
        if (json_string_length(v) == n && memcmp(json_string_value(v), name, n) == 0)
            return SBX_OK;
    if (!(v = json_stringn(name, n)) || json_array_append_new(s->env, v) != 0)
        return sbx__err_nomem(&t->err);
    return SBX_OK;
bad:
    /* Never echo it: it may be NAME=secret. */
    return sbx__err_set(&t->err, SBX_E_INVALID_ARG,
                        "invalid environment variable name (letters, digits and '_', not starting with a digit)");
}

sbx_status sbx_transcript_step_set_command_id(sbx_transcript *t, size_t step, const char *id)
{
    struct step *s;
    char *r;
    STEP(t, step, s);
    SBX__ARG(t, id && *id && text_ok(id, 256), "invalid command id: 1 to 256 bytes of UTF-8 expected");
    if (!(r = redact_str(t, id, NULL)))
        return sbx__err_nomem(&t->err);
    sbx__free(s->command_id);
    s->command_id = r;
    return SBX_OK;
}

/* Keep redacted output bytes: the head window first, then the ring. */
static sbx_status win_keep(sbx_transcript *t, struct win *w, const char *p, size_t n)
{
    size_t h = 0;
    w->total += n;
    if (w->head.len < t->head_limit) {
        h = (size_t)(t->head_limit - w->head.len) < n ? (size_t)(t->head_limit - w->head.len) : n;
        if (sbx__buf_append(&w->head, p, h) != SBX_OK)
            return SBX_E_NOMEM;
        p += h;
        n -= h;
    }
    if (!n || !t->tail_limit)
        return SBX_OK;
    if (!w->ring) {
        if (!(w->ring = sbx__malloc((size_t)t->tail_limit)))
            return SBX_E_NOMEM;
        w->ring_cap = (size_t)t->tail_limit;
    }
    if (n >= w->ring_cap) { /* only the last ring_cap bytes matter */
        memcpy(w->ring, p + n - w->ring_cap, w->ring_cap);
        w->ring_pos = 0;
        w->ring_len = w->ring_cap;
        return SBX_OK;
    }
    for (size_t done = 0; done < n;) {
        size_t k = w->ring_cap - w->ring_pos < n - done ? w->ring_cap - w->ring_pos : n - done;
        memcpy(w->ring + w->ring_pos, p + done, k);
        w->ring_pos = (w->ring_pos + k) % w->ring_cap;
        done += k;
    }
    w->ring_len = w->ring_len + n > w->ring_cap ? w->ring_cap : w->ring_len + n;
    return SBX_OK;
}

sbx_status sbx_transcript_step_add_output(sbx_transcript *t, size_t step, sbx_stream stream, const uint8_t *data,
                                      size_t len)
{
    struct step *s;
    struct win *w;
    const char *o;
    size_t n;
    STEP(t, step, s);
    SBX__ARG(t, stream == SBX_STREAM_STDOUT || stream == SBX_STREAM_STDERR,
             "invalid stream %d (SBX_STREAM_STDOUT or _STDERR)", (int)stream);
    SBX__ARG(t, data || !len, "invalid argument: data is NULL");
    w = &s->out[stream == SBX_STREAM_STDERR];
    if (sbx__redact_feed(w->rs, data ? (const char *)data : "", len, &o, &n) != SBX_OK || win_keep(t, w, o, n) != SBX_OK)
        return sbx__err_nomem(&t->err);
    w->raw += len;
    return SBX_OK;
}

/* A window as JSON text, or base64 when it is not UTF-8. */
static int set_text(json_t *o, const char *key, const char *p, size_t n)
{
    char k64[32];
    if (sbx__utf8_valid(p, n))
        return json_object_set_new(o, key, json_stringn(p, n));
    {
        size_t cap = 4 * ((n + 2) / 3) + 1;
        unsigned char *b = sbx__malloc(cap);
        int rc;
        if (!b)
            return -1;
        EVP_EncodeBlock(b, (const unsigned char *)p, (int)n);
        snprintf(k64, sizeof k64, "%s_b64", key);
        rc = json_object_set_new(o, k64, json_string((char *)b));
        sbx__free(b);
        return rc;
    }
}

/* The longest prefix of s[0..n) that does not end inside a UTF-8
 * sequence (n when s is not UTF-8 there). */
static size_t utf8_whole(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = n, need;
    while (i > 0 && n - i < 4 && (p[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0 || n - i >= 4)
        return n;
    need = p[i - 1] >= 0xF0 ? 4 : p[i - 1] >= 0xE0 ? 3 : p[i - 1] >= 0xC0 ? 2 : 1;
    return n - (i - 1) < need ? i - 1 : n;
}

/* The output object of a stream, keeping at most head and tail bytes of
 * the windows (less than the limits when the total limit asks). */
static json_t *win_json(struct win *w, size_t head_max, size_t tail_max)
{
    json_t *o = json_object();
    char *tail = NULL;
    size_t h, tl, tstart = 0;
    size_t ring_len = w->ring_len, hl = w->head.len;
    size_t full_tail = ring_len;
    uint64_t dropped;
    if (!o)
        return NULL;
    /* The tail: the ring in order. */
    if (full_tail && !(tail = sbx__malloc(full_tail))) {
        json_decref(o);
        return NULL;
    }
    if (ring_len) {
        size_t first = ring_len < w->ring_cap ? 0 : w->ring_pos;
        size_t k = w->ring_cap - first < ring_len ? w->ring_cap - first : ring_len;
        memcpy(tail, w->ring + first, k);
        memcpy(tail + k, w->ring, ring_len - k);
    }
    /* Cut at character boundaries: the head's end backs off over a split
     * UTF-8 sequence, the tail's start skips continuation bytes. */
    const char *hd = w->head.data ? w->head.data : "";
    h = hl < head_max ? hl : head_max;
    {
        /* Text, cut at a character: binary output stays byte for byte. */
        size_t f = utf8_whole(hd, h);
        if (sbx__utf8_valid(hd, f))
            h = f;
    }
    tl = full_tail < tail_max ? full_tail : tail_max;
    tstart = full_tail - tl;
    {
        size_t k = 0;
        while (k < 3 && k < tl && ((unsigned char)tail[tstart + k] & 0xC0) == 0x80)
            k++;
        if (k && sbx__utf8_valid(tail + tstart + k, tl - k)) {
            tstart += k;
            tl -= k;
        }
    }
    dropped = w->total - h - tl;
    if (json_object_set_new(o, "bytes", json_integer((json_int_t)w->total)) ||
        json_object_set_new(o, "raw_bytes", json_integer((json_int_t)w->raw)) ||
        set_text(o, "head", hd, h) || set_text(o, "tail", tail ? tail + tstart : "", tl) ||
        json_object_set_new(o, "dropped", json_integer((json_int_t)dropped))) {
        json_decref(o);
        o = NULL;
    }
    if (tail) {
        sbx__wipe(tail, full_tail);
        sbx__free(tail);
    }
    return o;
}

static const char *outcome_name(sbx_step_outcome o)
{
    switch (o) {
    case SBX_STEP_EXITED: return "exited";
    case SBX_STEP_TIMEOUT: return "timeout";
    case SBX_STEP_KILLED: return "killed";
    case SBX_STEP_POLICY_DENIED: return "policy-denied";
    case SBX_STEP_TRANSPORT_ERROR: return "transport-error";
    case SBX_STEP_CANCELLED: return "cancelled";
    case SBX_STEP_SKIPPED: return "skipped";
    }
    return NULL;
}

/* Add a stream's counts into a kind -> n object. */
static int add_counts(json_t *into, const sbx_redact_stream *rs)
{
    for (size_t k = 0; k < sbx__redact_stream_nkinds(rs); k++) {
        uint64_t c;
        const char *kind = sbx__redact_stream_kind(rs, k, &c);
        if (c && json_object_set_new(into, kind, json_integer(json_integer_value(json_object_get(into, kind)) +
                                                                  (json_int_t)c)))
            return -1;
    }
    return 0;
}

static int merge_counts(json_t *into, json_t *from)
{
    const char *k;
    json_t *v;
    json_object_foreach(from, k, v)
        if (json_object_set_new(into, k, json_integer(json_integer_value(json_object_get(into, k)) +
                                                          json_integer_value(v))))
            return -1;
    return 0;
}

/* The step's entry with windows of at most head and tail bytes. */
static json_t *step_json(struct step *s, sbx_step_outcome outcome, int exit_code, int retryable, json_t *detail,
                         const char *ended_at, int64_t duration, size_t head, size_t tail, bool truncated)
{
    json_t *e = json_object(), *out = json_object(), *o0 = win_json(&s->out[0], head, tail),
           *o1 = win_json(&s->out[1], head, tail);
    int bad;
    if (!e || !out || !o0 || !o1) {
        json_decref(e);
        json_decref(out);
        json_decref(o0);
        json_decref(o1);
        return NULL;
    }
    /* json_object_set_new() takes the value even when it fails, so each is
     * attached or freed, and e frees the rest. */
    bad = json_object_set_new(out, "stdout", o0);
    bad |= json_object_set_new(out, "stderr", o1);
    bad |= json_object_set_new(e, "output", out);
    if (bad) {
        json_decref(e);
        return NULL;
    }
    if (json_object_set_new(e, "type", json_string("step")) || json_object_set_new(e, "step", json_integer((json_int_t)s->num)) ||
        json_object_set_new(e, "name", s->name ? json_string(s->name) : json_null()) ||
        json_object_set(e, "argv", s->argv ? s->argv : json_null()) ||
        json_object_set_new(e, "cwd", s->cwd ? json_string(s->cwd) : json_null()) ||
        json_object_set(e, "env_keys", s->env) || json_object_set_new(e, "started_at", json_string(s->started_at)) ||
        json_object_set_new(e, "ended_at", json_string(ended_at)) ||
        json_object_set_new(e, "duration_ms", json_integer(duration)) ||
        json_object_set_new(e, "reason", json_string(outcome_name(outcome))) ||
        json_object_set_new(e, "exit_code", exit_code >= 0 ? json_integer(exit_code) : json_null()) ||
        json_object_set_new(e, "command_id", s->command_id ? json_string(s->command_id) : json_null()) ||
        json_object_set_new(e, "retryable", json_boolean(retryable)) ||
        json_object_set(e, "detail", detail ? detail : json_null()) || json_object_set(e, "redactions", s->counts) ||
        (truncated && json_object_set_new(e, "truncated", json_true()))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static void unlink_step(sbx_transcript *t, struct step *s)
{
    for (struct step **pp = &t->steps; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            return;
        }
}

static sbx_status end_step(sbx_transcript *t, struct step *s, sbx_step_outcome outcome, int exit_code, int retryable,
                           const char *detail)
{
    char ended_at[32];
    const char *rest[2];
    size_t nrest[2], head = (size_t)t->head_limit, tail = (size_t)t->tail_limit;
    json_t *d = NULL, *e;
    sbx_status st;
    bool truncated = false;

    now_iso(ended_at);
    if (detail && !(d = redacted_json(t, detail, s->counts)))
        return sbx__err_nomem(&t->err);
    for (int k = 0; k < 2; k++)
        if (sbx__redact_finish(s->out[k].rs, &rest[k], &nrest[k]) != SBX_OK) {
            json_decref(d);
            return sbx__err_nomem(&t->err);
        }
    for (int k = 0; k < 2; k++) /* the held bytes, released at the end, are output too */
        if (win_keep(t, &s->out[k], rest[k], nrest[k]) != SBX_OK) {
            json_decref(d);
            return sbx__err_nomem(&t->err);
        }
    if (add_counts(s->counts, s->out[0].rs) || add_counts(s->counts, s->out[1].rs) ||
        merge_counts(t->totals, s->counts)) {
        json_decref(d);
        return sbx__err_nomem(&t->err);
    }
    /* Within the total limit: smaller windows until it fits, then none. */
    for (;;) {
        if (!(e = step_json(s, outcome, exit_code, retryable, d, ended_at, sbx__mono_ms() - s->started_mono, head,
                            tail, truncated))) {
            json_decref(d);
            return sbx__err_nomem(&t->err);
        }
        {
            char *probe = json_dumps(e, DUMP_FLAGS);
            size_t n = probe ? strlen(probe) + 200 : 0; /* seq, prev, hash */
            free(probe);
            if (!n) {
                json_decref(e);
                json_decref(d);
                return sbx__err_nomem(&t->err);
            }
            if (n <= room(t, false) || (head == 0 && tail == 0))
                break;
        }
        json_decref(e);
        truncated = true;
        head /= 2;
        tail /= 2;
        if (head < 64 && tail < 64)
            head = tail = 0;
    }
    json_decref(d);
    unlink_step(t, s);
    step_free(s);
    st = add_entry(t, e, false);
    return st;
}

sbx_status sbx_transcript_step_end(sbx_transcript *t, size_t step, sbx_step_outcome outcome, int exit_code,
                                   int retryable, const char *detail)
{
    struct step *s;
    STEP(t, step, s);
    SBX__ARG(t, outcome_name(outcome), "invalid outcome %d", (int)outcome);
    SBX__ARG(t, exit_code >= -1 && exit_code <= 255, "invalid exit code %d (0..255, or -1 for none)", exit_code);
    SBX__ARG(t, !detail || text_ok(detail, 65536), "invalid detail: up to 64 KiB of UTF-8 expected");
    return end_step(t, s, outcome, exit_code, retryable, detail);
}

/* ---- the end, saving ------------------------------------------------------------------------ */

/* Write the whole transcript to fd. */
static int write_lines(sbx_transcript *t, int fd)
{
    for (size_t i = 0; i < t->nentries; i++)
        if (write_all(fd, t->entries[i].line, t->entries[i].len) != 0 || write_all(fd, "\n", 1) != 0)
            return -1;
    return 0;
}

sbx_status sbx_transcript_save_file(sbx_transcript *t, const char *path)
{
    char *tmp, *dir, *dcopy;
    int fd, e;
    SBX__ENTER(t, false);
    SBX__ARG(t, path && *path, "invalid argument: no path");
    if (!(tmp = sbx__malloc(strlen(path) + 16)) || !(dcopy = sbx__strdup(path))) {
        sbx__free(tmp);
        return sbx__err_nomem(&t->err);
    }
    /* A temporary file beside the target (same filesystem: rename is atomic). */
    sprintf(tmp, "%s.tmp-XXXXXX", path);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        sbx__free(tmp);
        sbx__free(dcopy);
        return sbx__err_set(&t->err, SBX_E_IO, "cannot create a temporary file beside %s: %s", path, strerror(e));
    }
    if (fchmod(fd, 0600) != 0 || write_lines(t, fd) != 0 || fsync(fd) != 0) {
        e = errno;
        close(fd);
        unlink(tmp);
        sbx__free(tmp);
        sbx__free(dcopy);
        return sbx__err_set(&t->err, SBX_E_IO, "cannot write the transcript to %s: %s", path, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        sbx__free(tmp);
        sbx__free(dcopy);
        return sbx__err_set(&t->err, SBX_E_IO, "cannot rename the transcript into %s: %s", path, strerror(e));
    }
    /* The rename itself is durable once the directory is synced. */
    dir = dirname(dcopy);
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    sbx__free(tmp);
    sbx__free(dcopy);
    return SBX_OK;
}

sbx_status sbx_transcript_finish(sbx_transcript *t, sbx_verdict verdict)
{
    /* Indexed by sbx_verdict: the text the file format keeps. */
    static const char *const verdicts[] = {"passed", "failed", "timed-out", "denied", "cancelled", "error", "unavailable"};
    char ended_at[32];
    json_t *e;
    sbx_status st;
    SBX__ENTER(t, false);
    if ((st = writable(t)) != SBX_OK)
        return st;
    SBX__ARG(t, (int)verdict >= 0 && (size_t)verdict < SBX__ARRAY_LEN(verdicts),
             "invalid verdict %d: SBX_VERDICT_PASSED to SBX_VERDICT_UNAVAILABLE expected", (int)verdict);
    if ((st = make_header(t)) != SBX_OK)
        return st;
    while (t->steps) { /* still open: cancelled */
        struct step *s = t->steps;
        while (s->next)
            s = s->next; /* the oldest first */
        if ((st = end_step(t, s, SBX_STEP_CANCELLED, -1, 0, "the job ended while the step was running")) != SBX_OK &&
            st != SBX_E_IO)
            return st;
    }
    now_iso(ended_at);
    if (!(e = json_object()) || json_object_set_new(e, "type", json_string("end")) ||
        json_object_set_new(e, "verdict", json_string(verdicts[verdict])) ||
        json_object_set_new(e, "ended_at", json_string(ended_at)) ||
        json_object_set_new(e, "duration_ms", json_integer(sbx__mono_ms() - t->started_mono)) ||
        json_object_set_new(e, "steps", json_integer((json_int_t)(t->next_step - 1))) || json_object_set(e, "redactions", t->totals)) {
        json_decref(e);
        return sbx__err_nomem(&t->err);
    }
    st = add_entry(t, e, true);
    if (st != SBX_OK && st != SBX_E_IO)
        return st;
    t->finished = true;
    if (t->path) {
        /* The journal has every entry; the complete file replaces it
         * atomically, so a reader never sees a half-written end. */
        sbx_status sv = sbx_transcript_save_file(t, t->path);
        if (t->fd >= 0) {
            close(t->fd);
            t->fd = -1;
        }
        if (sv != SBX_OK)
            return sv;
    }
    return st;
}

/* ---- loading and verifying ---------------------------------------------------------------------- */

static sbx_status parse_lines(sbx_transcript *t, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_error_t e;
        json_t *obj;
        char *line;
        if (!nl) {
            /* A last line without its newline: whole if it parses, else torn. */
            obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);
            if (!obj) {
                t->torn = n;
                break;
            }
        } else {
            obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);
        }
        if (reserve_entries(t) != SBX_OK || !(line = sbx__malloc(n + 1))) {
            json_decref(obj);
            return sbx__err_nomem(&t->err);
        }
        memcpy(line, p, n);
        line[n] = '\0';
        t->entries[t->nentries++] = (struct entry){line, n, obj};
        t->bytes += n + 1;
        p += n + (nl ? 1 : 0);
    }
    return SBX_OK;
}

sbx_status sbx_transcript_load_data(sbx_transcript *t, const uint8_t *bytes, size_t len)
{
    json_t *h;
    const char *fmt;
    sbx_status st;
    const char *data = (const char *)bytes;
    SBX__ENTER(t, false);
    SBX__ARG(t, data || !len, "invalid argument: data is NULL");
    if (t->loaded || t->nentries || t->steps || t->fd >= 0)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "load into a new transcript");
    if ((st = parse_lines(t, data ? data : "", len)) != SBX_OK)
        return st;
    t->loaded = true;
    h = t->nentries ? t->entries[0].obj : NULL;
    fmt = json_string_value(json_object_get(h, "format"));
    if (!h || !fmt || strcmp(fmt, FORMAT) != 0 || strcmp(json_string_value(json_object_get(h, "type")) ?: "", "job") != 0)
        return sbx__err_set(&t->err, SBX_E_PARSE, "not an sbxrun transcript: its first line is not a \"job\" header");
    if (!json_is_integer(json_object_get(h, "version")) || json_integer_value(json_object_get(h, "version")) < 1)
        return sbx__err_set(&t->err, SBX_E_PARSE, "the transcript's header has no valid version");
    if (json_integer_value(json_object_get(h, "version")) > VERSION)
        return sbx__err_set(&t->err, SBX_E_UNSUPPORTED, "transcript format version %lld is newer than this library's (%d)",
                            (long long)json_integer_value(json_object_get(h, "version")), VERSION);
    t->header_made = true;
    {
        const char *last = json_string_value(json_object_get(t->entries[t->nentries - 1].obj, "hash"));
        snprintf(t->head_hash, sizeof t->head_hash, "%s", last && strlen(last) == 64 ? last : "");
    }
    return SBX_OK;
}

sbx_status sbx_transcript_load_file(sbx_transcript *t, const char *path)
{
    FILE *f;
    sbx__buf b = SBX__BUF_INIT;
    char chunk[65536];
    size_t n;
    sbx_status st;
    SBX__ENTER(t, false);
    SBX__ARG(t, path && *path, "invalid argument: no path");
    if (t->loaded || t->nentries || t->steps || t->fd >= 0)
        return sbx__err_set(&t->err, SBX_E_MISUSE, "load into a new transcript");
    if (!(f = fopen(path, "rbe")))
        return sbx__err_set(&t->err, SBX_E_IO, "cannot open %s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (sbx__buf_append(&b, chunk, n) != SBX_OK) {
            fclose(f);
            sbx__buf_free(&b);
            return sbx__err_nomem(&t->err);
        }
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        sbx__buf_free(&b);
        return sbx__err_set(&t->err, SBX_E_IO, "cannot read %s: %s", path, strerror(e));
    }
    fclose(f);
    st = sbx_transcript_load_data(t, (const uint8_t *)(b.data ? b.data : ""), b.len);
    sbx__buf_free(&b);
    return st;
}

/* What is wrong with entry i, or NULL. */
static const char *entry_fault(sbx_transcript *t, size_t i, char hash[65])
{
    struct entry *e = &t->entries[i];
    json_t *copy;
    char *body, *canon;
    const char *h, *prev;
    json_t *seq;
    bool ok;
    hash[0] = '\0';
    if (!e->obj || !json_is_object(e->obj))
        return "it is not a JSON object";
    seq = json_object_get(e->obj, "seq");
    if (!json_is_integer(seq) || json_integer_value(seq) != (json_int_t)i)
        return "its sequence number is wrong (an entry was removed, added or moved)";
    if (!(canon = json_dumps(e->obj, DUMP_FLAGS)))
        return SBX__NOMEM_TEXT;
    ok = strlen(canon) == e->len && memcmp(canon, e->line, e->len) == 0;
    free(canon);
    if (!ok)
        return "it is not written canonically (it was edited)";
    h = json_string_value(json_object_get(e->obj, "hash"));
    prev = json_string_value(json_object_get(e->obj, "prev"));
    if (!h || strlen(h) != 64 || !prev)
        return "it has no hash or no link";
    if (!(copy = json_deep_copy(e->obj)))
        return SBX__NOMEM_TEXT;
    json_object_del(copy, "hash");
    body = json_dumps(copy, DUMP_FLAGS);
    json_decref(copy);
    if (!body)
        return SBX__NOMEM_TEXT;
    sha256_hex(body, strlen(body), hash);
    free(body);
    if (strcmp(hash, h) != 0)
        return "its content does not match its hash (it was changed)";
    if (strcmp(prev, i ? json_string_value(json_object_get(t->entries[i - 1].obj, "hash")) ?: "" : ZERO_HASH) != 0)
        return "its link does not match the entry before it";
    if (i == 0 ? strcmp(json_string_value(json_object_get(e->obj, "type")) ?: "", "job") != 0
               : strcmp(json_string_value(json_object_get(e->obj, "type")) ?: "", "job") == 0)
        return "a header out of place";
    if (i + 1 < t->nentries && strcmp(json_string_value(json_object_get(e->obj, "type")) ?: "", "end") == 0)
        return "entries follow the end entry";
    return NULL;
}

sbx_status sbx_transcript_verify(sbx_transcript *t, size_t *broken)
{
    char hash[65];
    SBX__ENTER(t, false);
    for (size_t i = 0; i < t->nentries; i++) {
        const char *why = entry_fault(t, i, hash);
        if (why) {
            if (broken)
                *broken = i;
            return sbx__err_set(&t->err, SBX_E_INTEGRITY, "entry %zu is broken: %s", i, why);
        }
    }
    if (t->torn) {
        if (broken)
            *broken = t->nentries;
        return sbx__err_set(&t->err, SBX_E_INTEGRITY,
                            "entry %zu is torn: %llu bytes without their end (a writer stopped while writing it)",
                            t->nentries, (unsigned long long)t->torn);
    }
    return SBX_OK;
}

/* ---- reading ------------------------------------------------------------------------------- */

static bool is_type(const struct entry *e, const char *type)
{
    return strcmp(json_string_value(json_object_get(e->obj, "type")) ?: "", type) == 0;
}

size_t sbx_transcript_step_count(const sbx_transcript *t)
{
    size_t n = 0;
    for (size_t i = 0; t && i < t->nentries; i++)
        n += is_type(&t->entries[i], "step");
    return n;
}

int sbx_transcript_complete(const sbx_transcript *t)
{
    return t && t->nentries && is_type(&t->entries[t->nentries - 1], "end");
}

size_t sbx_transcript_torn_bytes(const sbx_transcript *t)
{
    return t ? t->torn : 0;
}

const char *sbx_transcript_head_hash(const sbx_transcript *t)
{
    return t ? t->head_hash : "";
}

static sbx_status dup_out(sbx_transcript *t, const char *s, size_t n, char **out)
{
    if (!(*out = sbx__malloc(n + 1)))
        return sbx__err_nomem(&t->err);
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    return SBX_OK;
}

sbx_status sbx_transcript_job_to_json(sbx_transcript *t, char **out)
{
    SBX__ENTER(t, false);
    SBX__ARG(t, out, "invalid argument: out is NULL");
    *out = NULL;
    if (!t->nentries)
        return sbx__err_set(&t->err, SBX_E_NOT_FOUND, "no header yet (it is written with the first step)");
    return dup_out(t, t->entries[0].line, t->entries[0].len, out);
}

sbx_status sbx_transcript_step_to_json(sbx_transcript *t, size_t n, char **out)
{
    size_t k = 0;
    SBX__ENTER(t, false);
    SBX__ARG(t, out, "invalid argument: out is NULL");
    *out = NULL;
    for (size_t i = 0; i < t->nentries; i++) {
        if (!t->entries[i].obj)
            continue;
        if (is_type(&t->entries[i], "step") && ++k == n)
            return dup_out(t, t->entries[i].line, t->entries[i].len, out);
    }
    return sbx__err_set(&t->err, SBX_E_NOT_FOUND, "no step %zu (the transcript has %zu)", n, k);
}

sbx_status sbx_transcript_save_data(sbx_transcript *t, uint8_t **out, size_t *len)
{
    sbx__buf b = SBX__BUF_INIT;
    SBX__ENTER(t, false);
    SBX__ARG(t, out, "invalid argument: out is NULL");
    *out = NULL;
    for (size_t i = 0; i < t->nentries; i++)
        if (sbx__buf_append(&b, t->entries[i].line, t->entries[i].len) != SBX_OK || sbx__buf_putc(&b, '\n') != SBX_OK) {
            sbx__buf_free(&b);
            return sbx__err_nomem(&t->err);
        }
    if (!(*out = (uint8_t *)sbx__buf_detach(&b, len)))
        return sbx__err_nomem(&t->err);
    return SBX_OK;
}
