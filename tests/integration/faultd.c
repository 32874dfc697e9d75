/* SPDX-License-Identifier: MIT */
/*
 * faultd: a fault-injecting HTTP/1.1 proxy in front of sbxd (see faultd.h).
 *
 * One thread accepts on 127.0.0.1; each client connection gets a thread that
 * reads its requests one after the other (keep-alive), logs each, picks the
 * rule that applies, and either answers itself or forwards the request to
 * sbxd over a fresh unix-socket connection and relays the answer, parsing
 * its framing (Content-Length, chunked, or until close) so that it can cut,
 * slow or replace it at a precise byte. Everything written to the client
 * goes through out_write(), which applies the write-side faults.
 */
#include "faultd.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define HEAD_MAX (1u << 20)
#define BODY_MAX (256u << 20)

struct rule {
    char *method, *pat;
    int nth, seen;
    enum fault kind;
    long arg;
    struct rule *next;
};

struct logent {
    char *method, *target;
    enum fault kind;
    bool forwarded;
};

struct conn {
    struct faultd *f;
    int dn, up;             /* client side, sbxd side; -1 when closed */
    pthread_t th;
    struct conn *next;
};

struct faultd {
    char sock[300];
    int lfd, port;
    char url[64];
    pthread_t accept_th;
    pthread_mutex_t mu;
    bool stopping;
    struct rule *rules, *rules_tail;
    struct logent *log;
    size_t nlog, caplog;
    struct conn *conns;
    int nconns;
    int held;               /* last chunks held back (FAULT_LATE_TERMINATOR) */
};

static const char *const fault_names[] = {
    [FAULT_NONE] = "none",
    [FAULT_STATUS] = "status",
    [FAULT_STOPPING] = "stopping",
    [FAULT_429] = "429",
    [FAULT_RESET] = "reset",
    [FAULT_STALL] = "stall",
    [FAULT_STATUS_AFTER] = "status_after",
    [FAULT_RESET_AFTER] = "reset_after",
    [FAULT_RESET_MID] = "reset_mid",
    [FAULT_TRUNCATE] = "truncate",
    [FAULT_ONE_BYTE] = "one_byte",
    [FAULT_DRIP] = "drip",
    [FAULT_BAD_JSON] = "bad_json",
    [FAULT_BAD_NDJSON] = "bad_ndjson",
    [FAULT_HUGE_HEADERS] = "huge_headers",
    [FAULT_STALL_AFTER] = "stall_after",
    [FAULT_DELAY] = "delay",
    [FAULT_CLOSE_AFTER] = "close_after",
    [FAULT_NO_TERMINATOR] = "no_terminator",
    [FAULT_LATE_TERMINATOR] = "late_terminator",
    [FAULT_CUT_HEAD] = "cut_head",
    [FAULT_CUT_CHUNK_SIZE] = "cut_chunk_size",
    [FAULT_STALL_MID] = "stall_mid",
    [FAULT_503] = "503",
    [FAULT_NO_FRAMING] = "no_framing",
    [FAULT_429_MS] = "429_ms",
    [FAULT_HTML_200] = "html_200",
    [FAULT_EMPTY_200] = "empty_200",
};

const char *fault_name(enum fault kind)
{
    if ((size_t)kind < sizeof fault_names / sizeof fault_names[0] && fault_names[kind])
        return fault_names[kind];
    return "?";
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    ck_assert_msg(p != NULL, "faultd: out of memory");
    return p;
}

static char *xstrdup0(const char *s)
{
    char *p;
    if (!s)
        return NULL;
    p = strdup(s);
    ck_assert_msg(p != NULL, "faultd: out of memory");
    return p;
}

/* ---- buffered reading ---------------------------------------------------------- */

struct rd {
    int fd;
    char *b;
    size_t len, off, cap;
};

static void rd_compact(struct rd *r)
{
    if (r->off) {
        memmove(r->b, r->b + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
}

/* Read more bytes: >0 read, 0 end of stream, -1 error. */
static ssize_t rd_fill(struct rd *r)
{
    ssize_t n;
    rd_compact(r);
    if (r->cap - r->len < 16384) {
        size_t cap = r->cap ? r->cap * 2 : 65536;
        char *b = realloc(r->b, cap);
        if (!b)
            return -1;
        r->b = b;
        r->cap = cap;
    }
    do
        n = recv(r->fd, r->b + r->len, r->cap - r->len, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        r->len += (size_t)n;
    return n;
}

static size_t rd_avail(const struct rd *r)
{
    return r->len - r->off;
}

/* A line ending in \n (included), at most max bytes: a pointer into the
 * buffer, valid until the next call. NULL at end of stream or error. */
static const char *rd_line(struct rd *r, size_t *len, size_t max)
{
    for (;;) {
        char *nl = rd_avail(r) ? memchr(r->b + r->off, '\n', rd_avail(r)) : NULL;
        if (nl) {
            const char *p = r->b + r->off;
            *len = (size_t)(nl - p) + 1;
            r->off += *len;
            return p;
        }
        if (rd_avail(r) > max)
            return NULL;
        if (rd_fill(r) <= 0)
            return NULL;
    }
}

/* The head of a message, up to and including the empty line (malloc'd,
 * NUL-terminated). NULL at end of stream (*clean set when no byte came) or
 * on error. */
static char *rd_head(struct rd *r, size_t *len, bool *clean)
{
    *clean = false;
    for (;;) {
        size_t avail = rd_avail(r);
        char *p = r->b ? r->b + r->off : NULL;
        char *end = avail >= 4 ? memmem(p, avail, "\r\n\r\n", 4) : NULL;
        if (end) {
            size_t n = (size_t)(end - p) + 4;
            char *h = malloc(n + 1);
            if (!h)
                return NULL;
            memcpy(h, p, n);
            h[n] = '\0';
            r->off += n;
            *len = n;
            return h;
        }
        if (avail > HEAD_MAX)
            return NULL;
        ssize_t got = rd_fill(r);
        if (got <= 0) {
            *clean = got == 0 && rd_avail(r) == 0;
            return NULL;
        }
    }
}

/* Exactly n bytes into out (malloc'd). */
static int rd_exact(struct rd *r, size_t n, char **out)
{
    char *b = malloc(n + 1);
    size_t have = 0;
    if (!b)
        return -1;
    while (have < n) {
        size_t k = rd_avail(r);
        if (k == 0) {
            if (rd_fill(r) <= 0) {
                free(b);
                return -1;
            }
            continue;
        }
        if (k > n - have)
            k = n - have;
        memcpy(b + have, r->b + r->off, k);
        r->off += k;
        have += k;
    }
    b[n] = '\0';
    *out = b;
    return 0;
}

static void rd_free(struct rd *r)
{
    free(r->b);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

/* ---- headers ------------------------------------------------------------------------ */

/* The value of header `name` in a head (first occurrence), copied to out. */
static bool head_get(const char *head, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = strstr(head, "\r\n");
    while (p && p[2] != '\r') {
        const char *line = p + 2, *eol = strstr(line, "\r\n");
        if (!eol)
            break;
        if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            size_t vl;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            vl = (size_t)(eol - v);
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return true;
        }
        p = eol;
    }
    return false;
}

static bool head_has_token(const char *head, const char *name, const char *token)
{
    char v[512];
    if (!head_get(head, name, v, sizeof v))
        return false;
    for (char *t = strtok(v, ", \t"); t; t = strtok(NULL, ", \t"))
        if (strcasecmp(t, token) == 0)
            return true;
    return false;
}

/* ---- the proxy's state ------------------------------------------------------------------ */

static bool pat_match(const char *pat, const char *target)
{
    size_t pl;
    if (!pat || !*pat)
        return true;
    pl = strlen(pat);
    if (pat[pl - 1] == '$') {
        const char *q = strchr(target, '?');
        size_t tl = q ? (size_t)(q - target) : strlen(target);
        pl--;
        return tl >= pl && memcmp(target + tl - pl, pat, pl) == 0;
    }
    return strstr(target, pat) != NULL;
}

static bool method_match(const char *want, const char *method)
{
    return !want || strcmp(want, "*") == 0 || strcasecmp(want, method) == 0;
}

/* Log the request and choose its fault. Returns the log index. */
static size_t classify(struct faultd *f, const char *method, const char *target, enum fault *kind, long *arg)
{
    size_t idx;
    bool chosen = false;
    *kind = FAULT_NONE;
    *arg = 0;
    pthread_mutex_lock(&f->mu);
    for (struct rule *r = f->rules; r; r = r->next) {
        if (!method_match(r->method, method) || !pat_match(r->pat, target))
            continue;
        r->seen++;
        if (!chosen && (r->nth == 0 || r->nth == r->seen)) {
            chosen = true;
            *kind = r->kind;
            *arg = r->arg;
        }
    }
    if (f->nlog == f->caplog) {
        size_t cap = f->caplog ? f->caplog * 2 : 64;
        struct logent *l = realloc(f->log, cap * sizeof *l);
        ck_assert_msg(l != NULL, "faultd: out of memory");
        f->log = l;
        f->caplog = cap;
    }
    idx = f->nlog++;
    f->log[idx].method = xstrdup0(method);
    f->log[idx].target = xstrdup0(target);
    f->log[idx].kind = *kind;
    f->log[idx].forwarded = false;
    pthread_mutex_unlock(&f->mu);
    return idx;
}

static void mark_forwarded(struct faultd *f, size_t idx)
{
    pthread_mutex_lock(&f->mu);
    f->log[idx].forwarded = true;
    pthread_mutex_unlock(&f->mu);
}

/* ---- the connection's sockets ----------------------------------------------------------------- */

static void close_dn(struct conn *c, bool reset)
{
    pthread_mutex_lock(&c->f->mu);
    if (c->dn >= 0) {
        if (reset) {
            struct linger l = {1, 0};
            setsockopt(c->dn, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        } else {
            shutdown(c->dn, SHUT_WR);
        }
        close(c->dn);
        c->dn = -1;
    }
    pthread_mutex_unlock(&c->f->mu);
}

static void close_up(struct conn *c)
{
    pthread_mutex_lock(&c->f->mu);
    if (c->up >= 0) {
        close(c->up);
        c->up = -1;
    }
    pthread_mutex_unlock(&c->f->mu);
}

static int open_up(struct conn *c)
{
    struct sockaddr_un a;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(c->f->sock) >= sizeof a.sun_path) {
        close(fd);
        return -1;
    }
    memcpy(a.sun_path, c->f->sock, strlen(c->f->sock) + 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    pthread_mutex_lock(&c->f->mu);
    if (c->f->stopping) {
        pthread_mutex_unlock(&c->f->mu);
        close(fd);
        return -1;
    }
    c->up = fd;
    pthread_mutex_unlock(&c->f->mu);
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- writing to the client, with the write-side faults ---------------------------------------------- */

struct out {
    struct conn *c;
    enum fault kind;
    long arg;
    uint64_t body_sent;     /* raw bytes after the head */
    bool discard;           /* reading sbxd's answer only to drop it */
    bool closed;            /* the connection was ended by the fault */
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int out_write(struct out *o, const void *p, size_t n, bool body)
{
    const char *s = p;
    if (o->discard)
        return 0;
    if (o->closed || o->c->dn < 0)
        return -1;
    switch (o->kind) {
    case FAULT_ONE_BYTE:
    case FAULT_DRIP:
        for (size_t i = 0; i < n; i++) {
            if (send_all(o->c->dn, s + i, 1) != 0)
                return -1;
            if (o->kind == FAULT_DRIP && o->arg > 0)
                sleep_ms(o->arg);
        }
        break;
    case FAULT_RESET_MID:
        if (body && o->body_sent + n > (uint64_t)o->arg) {
            size_t k = (size_t)((uint64_t)o->arg - o->body_sent);
            if (k && send_all(o->c->dn, s, k) != 0)
                return -1;
            o->body_sent += k;
            /* Let the bytes leave before the reset overtakes them. */
            sleep_ms(30);
            close_dn(o->c, true);
            o->closed = true;
            return -1;
        }
        if (send_all(o->c->dn, s, n) != 0)
            return -1;
        break;
    default:
        if (send_all(o->c->dn, s, n) != 0)
            return -1;
        break;
    }
    if (body)
        o->body_sent += n;
    return 0;
}

static int out_printf(struct out *o, bool body, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int out_printf(struct out *o, bool body, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return out_write(o, buf, (size_t)n, body);
}

static const char *reason(long status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

/* A complete response of faultd's own, keep-alive. */
static int answer(struct conn *c, long status, const char *extra_headers, const char *ctype, const char *body)
{
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %ld %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nX-Faultd: injected\r\n%s\r\n",
                     status, reason(status), ctype, strlen(body), extra_headers ? extra_headers : "");
    if (c->dn < 0 || send_all(c->dn, head, (size_t)n) != 0 || send_all(c->dn, body, strlen(body)) != 0)
        return -1;
    return 0;
}

static int answer_coded(struct conn *c, long status, const char *code, const char *extra_headers, const char *what)
{
    char body[512];
    snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"faultd: injected HTTP %ld (%s)\"}}",
             code, status, what);
    return answer(c, status, extra_headers, "application/json", body);
}

static int answer_error(struct conn *c, long status, const char *extra_headers, const char *what)
{
    return answer_coded(c, status, status == 429 ? "rate_limited" : "faultd_injected", extra_headers, what);
}

/* Hold the connection: nothing is sent. Ends when the client closes it,
 * faultd stops, or ms pass (0: no limit). */
static void stall(struct conn *c, long ms)
{
    int64_t until = ms > 0 ? mono_ms() + ms : -1;
    for (;;) {
        struct pollfd p = {c->dn, POLLIN, 0};
        int t = until < 0 ? 200 : (int)(until - mono_ms());
        char b[4096];
        if (c->dn < 0 || __atomic_load_n(&c->f->stopping, __ATOMIC_SEQ_CST))
            return;
        if (until >= 0 && t <= 0)
            return;
        if (t > 200)
            t = 200;
        if (poll(&p, 1, t) < 0 && errno != EINTR)
            return;
        if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
            return;
        if (p.revents & POLLIN) {
            ssize_t n = recv(c->dn, b, sizeof b, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return;
        }
    }
}

/* ---- relaying sbxd's answer ------------------------------------------------------------------------ */

/* Cut k bytes into a chunk's data so the cut is inside a line. */
static size_t mid_line_cut(const char *data, size_t size, size_t want)
{
    size_t k = want;
    if (size < 2)
        return 0;
    if (k < 1)
        k = 1;
    if (k > size - 1)
        k = size - 1;
    while (k < size - 1 && data[k - 1] == '\n')
        k++;
    while (k > 1 && data[k - 1] == '\n')
        k--;
    return k;
}

/* A chunked body, relayed chunk by chunk as it arrives. 0 done, -1 the
 * connection is over (error, or a fault ended it). */
static int relay_chunked(struct rd *up, struct out *o)
{
    uint64_t data_sent = 0;
    for (;;) {
        size_t len;
        const char *line = rd_line(up, &len, 4096);
        char sizebuf[64], *data = NULL, *crlf = NULL;
        unsigned long long size;
        if (!line)
            return -1;
        snprintf(sizebuf, sizeof sizebuf, "%.*s", (int)(len < 63 ? len : 63), line);
        size = strtoull(sizebuf, NULL, 16);
        if (o->kind == FAULT_CUT_CHUNK_SIZE && !o->discard && data_sent >= (uint64_t)o->arg) {
            out_write(o, size ? "1" : "0", 1, true); /* a size line never finished */
            sleep_ms(20);
            close_dn(o->c, false);
            o->closed = true;
            return -1;
        }
        if (size == 0) {
            if (o->kind == FAULT_NO_TERMINATOR && !o->discard) {
                sleep_ms(20);
                close_dn(o->c, o->arg != 0);
                o->closed = true;
                return -1;
            }
            if (o->kind == FAULT_LATE_TERMINATOR && !o->discard) {
                struct faultd *f = o->c->f;
                int64_t until = mono_ms() + o->arg;
                __atomic_add_fetch(&f->held, 1, __ATOMIC_SEQ_CST);
                while (mono_ms() < until && !__atomic_load_n(&f->stopping, __ATOMIC_SEQ_CST))
                    sleep_ms(10);
                __atomic_sub_fetch(&f->held, 1, __ATOMIC_SEQ_CST);
            }
            if (out_write(o, sizebuf, len, true) != 0)
                return -1;
            /* Trailers, then the empty line. */
            for (;;) {
                line = rd_line(up, &len, 65536);
                if (!line)
                    return -1;
                if (out_write(o, line, len, true) != 0)
                    return -1;
                if (len <= 2)
                    return 0;
            }
        }
        if (size > BODY_MAX || rd_exact(up, (size_t)size, &data) != 0 || rd_exact(up, 2, &crlf) != 0) {
            free(data);
            return -1;
        }
        free(crlf);
        if (o->kind == FAULT_TRUNCATE && !o->discard && data_sent + size > (uint64_t)o->arg) {
            size_t k = mid_line_cut(data, (size_t)size, (size_t)((uint64_t)o->arg - data_sent));
            if (k && out_printf(o, true, "%zx\r\n", k) == 0 && out_write(o, data, k, true) == 0)
                out_write(o, "\r\n", 2, true);
            free(data);
            sleep_ms(20);
            close_dn(o->c, false); /* a FIN, with no terminating chunk */
            o->closed = true;
            return -1;
        }
        if (out_write(o, sizebuf, len, true) != 0 || out_write(o, data, (size_t)size, true) != 0 ||
            out_write(o, "\r\n", 2, true) != 0) {
            free(data);
            return -1;
        }
        data_sent += size;
        free(data);
    }
}

/* A body of n bytes (n < 0: until sbxd closes), relayed as it arrives. */
static int relay_len(struct rd *up, struct out *o, long long n)
{
    long long left = n;
    while (n < 0 || left > 0) {
        size_t k = rd_avail(up);
        if (k == 0) {
            ssize_t got = rd_fill(up);
            if (got == 0 && n < 0)
                return 0;
            if (got <= 0)
                return -1;
            continue;
        }
        if (n >= 0 && (long long)k > left)
            k = (size_t)left;
        if (o->kind == FAULT_TRUNCATE && !o->discard && o->body_sent + k > (uint64_t)o->arg) {
            size_t cut = (size_t)((uint64_t)o->arg - o->body_sent);
            out_write(o, up->b + up->off, cut, true);
            sleep_ms(20);
            close_dn(o->c, false);
            o->closed = true;
            return -1;
        }
        if (out_write(o, up->b + up->off, k, true) != 0)
            return -1;
        up->off += k;
        left -= (long long)k;
    }
    return 0;
}

/* sbxd's whole body, its framing taken off (malloc'd). 0 or -1. */
static int read_body(struct rd *up, bool chunked, long long clen, char **out, size_t *outlen)
{
    char *b = NULL, *data;
    size_t n = 0;
    if (!chunked) {
        if (clen < 0 || clen > BODY_MAX || rd_exact(up, (size_t)clen, &b) != 0)
            return -1;
        *out = b;
        *outlen = (size_t)clen;
        return 0;
    }
    for (;;) {
        size_t len;
        const char *line = rd_line(up, &len, 4096);
        unsigned long long size;
        char *crlf = NULL, *nb;
        if (!line) {
            free(b);
            return -1;
        }
        size = strtoull(line, NULL, 16);
        if (size == 0) {
            do /* trailers, then the empty line */
                line = rd_line(up, &len, 65536);
            while (line && len > 2);
            if (!line) {
                free(b);
                return -1;
            }
            *out = b ? b : calloc(1, 1);
            *outlen = n;
            return 0;
        }
        if (size > BODY_MAX || rd_exact(up, (size_t)size, &data) != 0 || rd_exact(up, 2, &crlf) != 0) {
            free(b);
            return -1;
        }
        free(crlf);
        nb = realloc(b, n + (size_t)size + 1);
        ck_assert_msg(nb != NULL, "faultd: out of memory");
        b = nb;
        memcpy(b + n, data, (size_t)size);
        n += (size_t)size;
        free(data);
    }
}

/* The head without its framing headers, and "Connection: close". */
static int write_unframed_head(struct out *o, const char *head)
{
    const char *p = head;
    for (;;) {
        const char *eol = strstr(p, "\r\n");
        size_t l = (size_t)(eol - p) + 2;
        if (l == 2)
            break;
        if (strncasecmp(p, "Content-Length:", 15) != 0 && strncasecmp(p, "Transfer-Encoding:", 18) != 0 &&
            strncasecmp(p, "Connection:", 11) != 0 && out_write(o, p, l, false) != 0)
            return -1;
        p += l;
    }
    return out_write(o, "Connection: close\r\n\r\n", 21, false);
}

/* The head with `extra` bytes of filler header lines before its end. */
static int write_huge_head(struct out *o, const char *head, size_t hlen, long extra)
{
    char line[1100];
    long done = 0;
    int i = 0;
    if (out_write(o, head, hlen - 2, false) != 0)
        return -1;
    while (done < extra) {
        int n = snprintf(line, sizeof line, "X-Faultd-Filler-%d: ", i++);
        memset(line + n, 'f', 1000);
        memcpy(line + n + 1000, "\r\n", 2);
        if (out_write(o, line, (size_t)n + 1002, false) != 0)
            return -1;
        done += n + 1002;
    }
    return out_write(o, "\r\n", 2, false);
}

/* ---- one request ------------------------------------------------------------------------------------ */

/* Forward the request and relay (or drop, or spoil) the answer. Returns 0
 * when the client connection may carry another request. */
static int forward(struct conn *c, size_t idx, const char *method, const char *reqhead, const char *body,
                   size_t blen, enum fault kind, long arg)
{
    struct rd up = {.fd = -1};
    struct out o = {.c = c, .kind = kind, .arg = arg};
    char *head = NULL, v[128];
    size_t hlen;
    bool clean, chunked, close_after;
    long status;
    long long clen = -1;
    int rc = -1;
    const char *p;

    if (open_up(c) < 0) {
        answer_error(c, 502, NULL, "sbxd unreachable");
        return -1;
    }
    up.fd = c->up;
    /* The request as it came, without Expect (faultd answered it). */
    for (p = reqhead; *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t l = eol ? (size_t)(eol - p) + 2 : strlen(p);
        if (!(strncasecmp(p, "Expect:", 7) == 0) && send_all(c->up, p, l) != 0)
            goto out;
        p += l;
    }
    if (blen && send_all(c->up, body, blen) != 0)
        goto out;
    mark_forwarded(c->f, idx);

    /* sbxd's answer: skip interim 1xx heads. */
    for (;;) {
        free(head);
        head = rd_head(&up, &hlen, &clean);
        if (!head)
            goto out;
        status = strtol(head + 9, NULL, 10);
        if (status >= 200 || status < 100)
            break;
    }
    chunked = head_has_token(head, "Transfer-Encoding", "chunked");
    if (head_get(head, "Content-Length", v, sizeof v))
        clen = strtoll(v, NULL, 10);
    close_after = head_has_token(head, "Connection", "close");
    if (strcmp(method, "HEAD") == 0 || status == 204 || status == 304)
        clen = 0, chunked = false;
    else if (!chunked && clen < 0)
        close_after = true; /* delimited by the end of the connection */

    switch (kind) {
    case FAULT_RESET_AFTER:
        close_dn(c, true);
        goto out;
    case FAULT_STATUS_AFTER:
    case FAULT_BAD_JSON:
    case FAULT_STALL_AFTER:
        o.discard = true;
        if ((chunked ? relay_chunked(&up, &o) : relay_len(&up, &o, clen)) != 0)
            goto out;
        close_up(c);
        if (kind == FAULT_STALL_AFTER) {
            stall(c, arg);
            goto out;
        }
        if (kind == FAULT_BAD_JSON) {
            if (answer(c, 200, NULL, "application/json", "{\"sandbox\": {\"id\": \"sbx_faultd\", tru") != 0)
                goto out;
        } else if (answer_error(c, arg, NULL, "after forwarding") != 0) {
            goto out;
        }
        rc = 0;
        goto out;
    case FAULT_HUGE_HEADERS:
        if (write_huge_head(&o, head, hlen, arg) != 0)
            goto out;
        break;
    case FAULT_CUT_HEAD:
        out_write(&o, head, arg > 0 && (size_t)arg < hlen - 2 ? (size_t)arg : hlen - 2, false);
        sleep_ms(20);
        close_dn(c, false);
        goto out;
    case FAULT_NO_FRAMING: {
        char *b = NULL;
        size_t blen2 = 0;
        if (read_body(&up, chunked, clen, &b, &blen2) == 0 && write_unframed_head(&o, head) == 0)
            out_write(&o, b, blen2, true);
        free(b);
        sleep_ms(20);
        close_dn(c, false);
        goto out;
    }
    case FAULT_DELAY:
        sleep_ms((int)arg);
        if (out_write(&o, head, hlen, false) != 0)
            goto out;
        break;
    case FAULT_STALL_MID:
        if (out_write(&o, head, hlen, false) != 0)
            goto out;
        stall(c, arg);
        if (c->dn < 0)
            goto out;
        break;
    default:
        if (out_write(&o, head, hlen, false) != 0)
            goto out;
        break;
    }
    if (kind == FAULT_BAD_NDJSON && chunked) {
        static const char bad[] = "this line is not JSON\n";
        if (out_printf(&o, true, "%zx\r\n", sizeof bad - 1) != 0 || out_write(&o, bad, sizeof bad - 1, true) != 0 ||
            out_write(&o, "\r\n", 2, true) != 0)
            goto out;
    }
    if ((chunked ? relay_chunked(&up, &o) : relay_len(&up, &o, clen)) != 0)
        goto out;
    rc = close_after || kind == FAULT_CLOSE_AFTER ? -1 : 0;
out:
    free(head);
    rd_free(&up);
    close_up(c);
    return rc;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct faultd *f = c->f;
    struct rd dn = {.fd = c->dn};
    int one = 1;

    setsockopt(c->dn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (;;) {
        char method[32], target[4096], v[64], *head, *body = NULL;
        size_t hlen, blen = 0;
        bool clean;
        enum fault kind;
        long farg;
        size_t idx;
        int rc;

        head = rd_head(&dn, &hlen, &clean);
        if (!head)
            break;
        if (sscanf(head, "%31s %4095s", method, target) != 2) {
            free(head);
            answer_error(c, 400, NULL, "malformed request");
            break;
        }
        if (head_has_token(head, "Transfer-Encoding", "chunked")) {
            free(head);
            answer_error(c, 501, NULL, "chunked request bodies are not supported by faultd");
            break;
        }
        if (head_get(head, "Content-Length", v, sizeof v))
            blen = (size_t)strtoull(v, NULL, 10);
        if (head_has_token(head, "Expect", "100-continue") && blen &&
            send_all(c->dn, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0) {
            free(head);
            break;
        }
        if (blen > BODY_MAX || (blen && rd_exact(&dn, blen, &body) != 0)) {
            free(head);
            break;
        }
        idx = classify(f, method, target, &kind, &farg);
        switch (kind) {
        case FAULT_STATUS:
            rc = answer_error(c, farg, NULL, "not forwarded");
            break;
        case FAULT_STOPPING:
            rc = answer_coded(c, 422, farg ? "sandbox_snapshotting" : "sandbox_stopping", NULL, "not forwarded");
            break;
        case FAULT_HTML_200:
            rc = answer(c, 200, NULL, "text/html; charset=utf-8", "<html><body>faultd: not the server</body></html>");
            break;
        case FAULT_EMPTY_200: {
            static const char h[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Faultd: injected\r\n\r\n";
            rc = c->dn >= 0 && send_all(c->dn, h, sizeof h - 1) == 0 ? 0 : -1;
            break;
        }
        case FAULT_429:
        case FAULT_429_MS:
        case FAULT_503: {
            char h[64] = "";
            if (kind == FAULT_429_MS)
                snprintf(h, sizeof h, "Retry-After: %ld.%03ld\r\n", farg / 1000, farg % 1000);
            else if (farg >= 0)
                snprintf(h, sizeof h, "Retry-After: %ld\r\n", farg);
            rc = answer_error(c, kind == FAULT_503 ? 503 : 429, h, "not forwarded");
            break;
        }
        case FAULT_RESET:
            close_dn(c, true);
            rc = -1;
            break;
        case FAULT_STALL:
            stall(c, farg);
            rc = -1;
            break;
        default:
            rc = forward(c, idx, method, head, body, blen, kind, farg);
            break;
        }
        free(head);
        free(body);
        if (rc != 0)
            break;
    }
    rd_free(&dn);
    close_dn(c, false);
    close_up(c);
    return NULL;
}

/* ---- the listener and the API ---------------------------------------------------------------------- */

static void *accept_main(void *arg)
{
    struct faultd *f = arg;
    for (;;) {
        int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        struct conn *c;
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        pthread_mutex_lock(&f->mu);
        if (f->stopping) {
            pthread_mutex_unlock(&f->mu);
            close(fd);
            return NULL;
        }
        c = xcalloc(1, sizeof *c);
        c->f = f;
        c->dn = fd;
        c->up = -1;
        c->next = f->conns;
        f->conns = c;
        f->nconns++;
        if (pthread_create(&c->th, NULL, conn_main, c) != 0) {
            f->conns = c->next;
            f->nconns--;
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&f->mu);
    }
}

struct faultd *faultd_start(struct sbxd *d)
{
    struct faultd *f = xcalloc(1, sizeof *f);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int one = 1;

    snprintf(f->sock, sizeof f->sock, "%s", d->sock);
    pthread_mutex_init(&f->mu, NULL);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_msg(f->lfd >= 0, "faultd: socket: %s", strerror(errno));
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_msg(bind(f->lfd, (struct sockaddr *)&a, sizeof a) == 0, "faultd: bind: %s", strerror(errno));
    ck_assert_msg(listen(f->lfd, 64) == 0, "faultd: listen: %s", strerror(errno));
    ck_assert(getsockname(f->lfd, (struct sockaddr *)&a, &alen) == 0);
    f->port = ntohs(a.sin_port);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
    ck_assert_msg(pthread_create(&f->accept_th, NULL, accept_main, f) == 0, "faultd: pthread_create");
    return f;
}

const char *faultd_url(const struct faultd *f)
{
    return f->url;
}

int faultd_port(const struct faultd *f)
{
    return f->port;
}

static void free_rules(struct faultd *f)
{
    while (f->rules) {
        struct rule *r = f->rules;
        f->rules = r->next;
        free(r->method);
        free(r->pat);
        free(r);
    }
    f->rules_tail = NULL;
}

void faultd_stop(struct faultd *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    __atomic_store_n(&f->stopping, true, __ATOMIC_SEQ_CST);
    shutdown(f->lfd, SHUT_RDWR);
    for (struct conn *c = f->conns; c; c = c->next) {
        if (c->dn >= 0)
            shutdown(c->dn, SHUT_RDWR);
        if (c->up >= 0)
            shutdown(c->up, SHUT_RDWR);
    }
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->accept_th, NULL);
    /* No connection is added now; wake any that a late accept started. */
    pthread_mutex_lock(&f->mu);
    for (struct conn *c = f->conns; c; c = c->next) {
        if (c->dn >= 0)
            shutdown(c->dn, SHUT_RDWR);
        if (c->up >= 0)
            shutdown(c->up, SHUT_RDWR);
    }
    pthread_mutex_unlock(&f->mu);
    while (f->conns) {
        struct conn *c = f->conns;
        pthread_join(c->th, NULL);
        f->conns = c->next;
        free(c);
    }
    close(f->lfd);
    free_rules(f);
    for (size_t i = 0; i < f->nlog; i++) {
        free(f->log[i].method);
        free(f->log[i].target);
    }
    free(f->log);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void faultd_rule(struct faultd *f, const char *method, const char *path_substring, int nth, enum fault kind,
                 long arg)
{
    struct rule *r = xcalloc(1, sizeof *r);
    r->method = method && strcmp(method, "*") != 0 ? xstrdup0(method) : NULL;
    r->pat = xstrdup0(path_substring ? path_substring : "");
    r->nth = nth;
    r->kind = kind;
    r->arg = arg;
    pthread_mutex_lock(&f->mu);
    if (f->rules_tail)
        f->rules_tail->next = r;
    else
        f->rules = r;
    f->rules_tail = r;
    pthread_mutex_unlock(&f->mu);
}

void faultd_rule_first(struct faultd *f, const char *method, const char *path_substring, int n, enum fault kind,
                       long arg)
{
    for (int i = 1; i <= n; i++)
        faultd_rule(f, method, path_substring, i, kind, arg);
}

void faultd_clear(struct faultd *f)
{
    pthread_mutex_lock(&f->mu);
    free_rules(f);
    pthread_mutex_unlock(&f->mu);
}

static int count_where(struct faultd *f, const char *method, const char *pat, int what)
{
    int n = 0;
    if (method && strcmp(method, "*") == 0)
        method = NULL;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nlog; i++) {
        const struct logent *e = &f->log[i];
        if (what == 2) {
            n += e->kind != FAULT_NONE;
            continue;
        }
        if (method_match(method, e->method) && pat_match(pat, e->target) && (what == 0 || e->forwarded))
            n++;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

int faultd_count(struct faultd *f, const char *method, const char *path_substring)
{
    return count_where(f, method, path_substring, 0);
}

int faultd_forwarded(struct faultd *f, const char *method, const char *path_substring)
{
    return count_where(f, method, path_substring, 1);
}

int faultd_faulted(struct faultd *f)
{
    return count_where(f, NULL, NULL, 2);
}

int faultd_connections(struct faultd *f)
{
    int n;
    pthread_mutex_lock(&f->mu);
    n = f->nconns;
    pthread_mutex_unlock(&f->mu);
    return n;
}

int faultd_held(struct faultd *f)
{
    return __atomic_load_n(&f->held, __ATOMIC_SEQ_CST);
}

void faultd_dump(struct faultd *f)
{
    pthread_mutex_lock(&f->mu);
    fprintf(stderr, "faultd %s: %zu requests on %d connections\n", f->url, f->nlog, f->nconns);
    for (size_t i = 0; i < f->nlog; i++)
        fprintf(stderr, "  %3zu %-6s %s  [%s%s]\n", i + 1, f->log[i].method, f->log[i].target,
                fault_name(f->log[i].kind), f->log[i].forwarded ? ", forwarded" : "");
    pthread_mutex_unlock(&f->mu);
}
