/* SPDX-License-Identifier: MIT */
/*
 * http: libmicrohttpd in epoll mode with a small pool of I/O threads, so
 * connections cost memory, not threads. The I/O threads only read requests
 * and write responses; each complete request is suspended and handed to a
 * worker thread (a pool that grows on demand), which may block on the work
 * itself (starting a sandbox, a file operation) but never waits for an
 * event: a long poll parks its request on a wait queue, and a stream that
 * has nothing to send suspends its connection, until the event arrives.
 * Authentication and the body-size limit are checked on the first call for
 * a request, before any body is accepted. Connections that have not yet
 * sent a valid token are capped, the oldest closed first; past the
 * connection limit requests get a 503 with Retry-After.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/ioctl.h>

#include "util/alloc.h"
#include "sbxd.h"

#define STREAM_BLOCK (8 * 1024)
/* libmicrohttpd's pool per connection (headers, then the I/O buffer): 16 KiB
 * is ample for this API's requests, and 10,000 open connections cost half
 * of what the default 32 KiB does. */
#define CONN_MEMORY (16 * 1024)

static struct MHD_Daemon *daemon_;
static int listen_fd = -1;
/* Set when sbxd stops: new connections are refused (accept_policy). */
static atomic_bool refusing;
static char *unix_path;

static enum MHD_Result queue(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
    enum MHD_Result ret = MHD_YES;
    if (!resp)
        return MHD_NO;
    if (r->deferred) {
        /* On a worker: the I/O thread queues it when the request resumes. */
        if (r->resp)
            MHD_destroy_response(r->resp);
        r->resp = resp;
        r->resp_status = status;
    } else {
        ret = MHD_queue_response(r->conn, status, resp);
        MHD_destroy_response(resp);
    }
    if (status >= 500)
        sbxd_log(LOG_WARN, "%s %s -> %u", r->method, r->path, status);
    else
        sbxd_log(LOG_DEBUG, "%s %s -> %u (%lld ms)", r->method, r->path, status,
                 (long long)(mono_ms() - r->t0));
    return ret;
}

/* Queue a JSON text (malloc'd, taken) with an optional extra header. */
static enum MHD_Result reply_text(struct http_req *r, unsigned status, char *text,
                                  const char *hname, const char *hvalue)
{
    struct MHD_Response *resp;
    if (!text)
        return MHD_NO;
    resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (hname)
        MHD_add_response_header(resp, hname, hvalue);
    return queue(r, status, resp);
}

static char *error_text(const char *code, const char *msg)
{
    json_t *body = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

enum MHD_Result reply_json(struct http_req *r, unsigned status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return reply_text(r, status, text, NULL, NULL);
}

static enum MHD_Result reply_errorv(struct http_req *r, unsigned status, const char *code,
                                    const char *hname, const char *hvalue, const char *fmt,
                                    va_list ap) __attribute__((format(printf, 6, 0)));

static enum MHD_Result reply_errorv(struct http_req *r, unsigned status, const char *code,
                                    const char *hname, const char *hvalue, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (status >= 400 && status < 500)
        sbxd_log(LOG_DEBUG, "%s %s: %s", r->method, r->path, msg);
    if (status == 401 && !hname) {
        hname = "WWW-Authenticate";
        hvalue = "Bearer";
    }
    return reply_text(r, status, error_text(code, msg), hname, hvalue);
}

enum MHD_Result reply_error(struct http_req *r, unsigned status, const char *code,
                            const char *fmt, ...)
{
    va_list ap;
    enum MHD_Result ret;
    va_start(ap, fmt);
    ret = reply_errorv(r, status, code, NULL, NULL, fmt, ap);
    va_end(ap);
    return ret;
}

enum MHD_Result reply_error_retry(struct http_req *r, unsigned status, const char *code,
                                  const char *retry_after, const char *fmt, ...)
{
    va_list ap;
    enum MHD_Result ret;
    va_start(ap, fmt);
    ret = reply_errorv(r, status, code, "Retry-After", retry_after, fmt, ap);
    va_end(ap);
    return ret;
}

enum MHD_Result reply_stream(struct http_req *r, const char *content_type,
                             MHD_ContentReaderCallback cb, void *cls,
                             MHD_ContentReaderFreeCallback free_cb)
{
    /* The block is allocated with each response: 8 KiB keeps 10,000 open
     * log streams at 80 MB, where 64 KiB cost 640 MB. */
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, cb,
                                                                  cls, free_cb);
    if (!resp) {
        free_cb(cls);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    return queue(r, 200, resp);
}

enum MHD_Result reply_fd(struct http_req *r, int fd, uint64_t size, const char *content_type)
{
    struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    return queue(r, 200, resp);
}

struct fd_stream {
    int fd;
};

static ssize_t fd_stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fd_stream *fs = cls;
    ssize_t n;
    (void)pos;
    do {
        n = read(fs->fd, buf, max);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void fd_stream_free(void *cls)
{
    struct fd_stream *fs = cls;
    close(fs->fd);
    sbx__free(fs);
}

enum MHD_Result reply_fd_stream(struct http_req *r, int fd, const char *content_type)
{
    struct fd_stream *fs = sbx__malloc(sizeof *fs);
    if (!fs) {
        close(fd);
        return MHD_NO;
    }
    fs->fd = fd;
    return reply_stream(r, content_type, fd_stream_cb, fs, fd_stream_free);
}

const char *req_query(struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *req_header(struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

json_t *req_json(struct http_req *r, enum MHD_Result *ret)
{
    json_error_t je;
    json_t *j;
    if (r->body_len == 0)
        return json_object();
    j = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        *ret = reply_error(r, 400, "bad_request", "the body is not valid JSON: %s (at byte %d)",
                           je.text, je.position);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        *ret = reply_error(r, 400, "bad_request", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

/* An anonymous file for an upload: O_TMPFILE where the file system has it,
 * else a named temp file unlinked at once. */
static int open_spool(void)
{
    char *tmpl;
    int fd = open(g.cfg.state_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    tmpl = path_join(g.cfg.state_dir, "upload.XXXXXX");
    if (!tmpl)
        return -1;
    fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tmpl);
    sbx__free(tmpl);
    return fd;
}

bool http_client_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct pollfd p;
    if (!ci)
        return false;
    p.fd = ci->connect_fd;
    p.events = POLLRDHUP;
    p.revents = 0;
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cond, lock, &ts);
}

/* A refused request is answered after its body has been read (up to
 * DRAIN_MAX): answering first and closing the connection makes many
 * clients see a reset instead of the answer, and the SDK retries a network
 * error. A client that asked for 100-continue gets the answer at once. */
#define DRAIN_MAX (64u << 20)

static enum MHD_Result reject_retry(struct http_req *r, unsigned status, const char *code,
                                    const char *retry_after, const char *msg)
{
    const char *expect = req_header(r, "Expect");
    r->rejected = true;
    r->reject_retry = retry_after;
    if (expect && strcasecmp(expect, "100-continue") == 0)
        return retry_after ? reply_error_retry(r, status, code, retry_after, "%s", msg)
                           : reply_error(r, status, code, "%s", msg);
    r->reject_json = error_text(code, msg);
    r->reject_status = status;
    return r->reject_json ? MHD_YES : MHD_NO;
}

static enum MHD_Result reject(struct http_req *r, unsigned status, const char *code,
                              const char *msg)
{
    return reject_retry(r, status, code, NULL, msg);
}

static enum MHD_Result send_rejection(struct http_req *r)
{
    char *text = r->reject_json;
    r->reject_json = NULL;
    if (r->reject_retry)
        return reply_text(r, r->reject_status, text, "Retry-After", r->reject_retry);
    return reply_text(r, r->reject_status, text, r->reject_status == 401 ? "WWW-Authenticate" : NULL,
                      "Bearer");
}

static bool token_ok(const char *auth)
{
    size_t n;
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    auth += 7;
    while (*auth == ' ')
        auth++;
    n = strlen(auth);
    return n == strlen(g.token) && CRYPTO_memcmp(auth, g.token, n) == 0;
}

static void split_path(struct http_req *r)
{
    char *p = r->split;
    r->nseg = 0;
    while (*p && r->nseg <= HTTP_MAX_SEGS) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        if (r->nseg == HTTP_MAX_SEGS) {
            r->nseg++; /* too deep: no route matches */
            break;
        }
        r->segs[r->nseg++] = p;
        while (*p && *p != '/')
            p++;
        if (*p)
            *p++ = '\0';
    }
}

/* ---- connections: who has authenticated, and the limits ------------------ */

/* One per connection (MHD's socket context). Connections that have not yet
 * sent a valid token are on a list, oldest first: past the cap the oldest
 * silent one is shut down. Loopback and unix-socket clients all share one
 * address, so the age, not a per-address count, picks whom to close. */
struct conn_node {
    struct conn_node *prev, *next;
    int fd;
    int64_t since;  /* mono_ms() at accept */
    bool listed;
};

/* A connection is not closed for lack of a token before it has had this
 * long to send its request, nor while bytes it sent wait to be read: a
 * client that opens ten thousand connections at once may take seconds to
 * write its requests, and sbxd more to read them. Only when connections
 * reach the limit are idle ones closed sooner. Each pass passes over a
 * bounded number of busy ones, so a flood costs O(1) per new connection. */
#define UNAUTH_GRACE_MS 10000
#define UNAUTH_SCAN 64

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn_node *unauth_head, *unauth_tail;
static unsigned n_unauth, n_conns;
static unsigned long n_evicted, n_refused; /* since the last warning */
static int64_t warned_at;

/* A warning at most every 10 s, with what happened since the last one. */
static void warn_limits_locked(void)
{
    int64_t now = mono_ms();
    if (now - warned_at < 10000)
        return;
    warned_at = now;
    if (n_evicted)
        sbxd_log(LOG_WARN, "http: %lu connections closed that had not authenticated (cap %u, "
                 "--max-unauthenticated)", n_evicted, g.cfg.max_unauth);
    if (n_refused)
        sbxd_log(LOG_WARN, "http: %lu requests refused with 503: %u connections open (limit %u, "
                 "--max-connections)", n_refused, n_conns, g.cfg.max_conns);
    n_evicted = n_refused = 0;
}

static void unauth_unlink_locked(struct conn_node *n)
{
    if (!n->listed)
        return;
    if (n->prev)
        n->prev->next = n->next;
    else
        unauth_head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        unauth_tail = n->prev;
    n->prev = n->next = NULL;
    n->listed = false;
    n_unauth--;
}

/* Past the cap, close the oldest connections that have had their grace.
 * MHD sees the end of the stream and closes them; their CLOSED
 * notifications come later and find them off the list. */
static void evict_locked(int64_t now)
{
    struct conn_node *n = unauth_head, *next;
    for (int skipped = 0; n && n_unauth > g.cfg.max_unauth && skipped < UNAUTH_SCAN; n = next) {
        int pending = 0;
        next = n->next;
        if (now - n->since < UNAUTH_GRACE_MS && n_conns < g.cfg.max_conns)
            break; /* the rest are younger still */
        if (n->fd >= 0 && ioctl(n->fd, FIONREAD, &pending) == 0 && pending > 0) {
            skipped++; /* it has spoken; sbxd has not listened yet */
            continue;
        }
        unauth_unlink_locked(n);
        if (n->fd >= 0)
            shutdown(n->fd, SHUT_RDWR);
        n_evicted++;
    }
    if (n_evicted)
        warn_limits_locked();
}

static void notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    struct conn_node *n = *socket_context;
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        n = sbx__calloc(1, sizeof *n);
        if (!n) {
            if (ci)
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        n->fd = ci ? ci->connect_fd : -1;
        n->since = mono_ms();
        pthread_mutex_lock(&conn_lock);
        n_conns++;
        n->listed = true;
        n->prev = unauth_tail;
        if (unauth_tail)
            unauth_tail->next = n;
        else
            unauth_head = n;
        unauth_tail = n;
        n_unauth++;
        evict_locked(n->since);
        pthread_mutex_unlock(&conn_lock);
        *socket_context = n;
        return;
    }
    if (!n)
        return;
    pthread_mutex_lock(&conn_lock);
    unauth_unlink_locked(n);
    n_conns--;
    pthread_mutex_unlock(&conn_lock);
    sbx__free(n);
    *socket_context = NULL;
}

/* A request came with the right token: its connection is off the list. */
static void conn_authenticated(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_node *n = ci ? ci->socket_context : NULL;
    if (!n || !n->listed)
        return;
    pthread_mutex_lock(&conn_lock);
    unauth_unlink_locked(n);
    pthread_mutex_unlock(&conn_lock);
}

/* Past the connection limit (authenticated ones; the rest are capped on
 * their own): counted for the warning. */
static bool over_limit(void)
{
    bool over;
    pthread_mutex_lock(&conn_lock);
    over = n_conns - n_unauth > g.cfg.max_conns;
    if (over) {
        n_refused++;
        warn_limits_locked();
    }
    pthread_mutex_unlock(&conn_lock);
    return over;
}

/* ---- workers ------------------------------------------------------------------ */

#define WORKER_IDLE_MS 30000
#define WORKER_STACK (512 * 1024)

static pthread_mutex_t wq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wq_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t wq_gone = PTHREAD_COND_INITIALIZER;
static struct http_req *wq_head, *wq_tail;
static unsigned wq_len, n_workers, n_idle;
/* Requests handed to the workers and not yet answered, parked ones among
 * them: sbxd stops only after the last (their connections are suspended,
 * and libmicrohttpd aborts the process if it is stopped with one). */
static unsigned n_inflight;
static bool wq_stop; /* sbxd is stopping: no new work, nothing parks */

/* Whether sbxd is stopping. The parking paths ask with g.lock held, which
 * http_stop() takes after setting wq_stop: a waiter parked before it is
 * then woken, and none parks after. */
static bool stopping(void)
{
    bool v;
    pthread_mutex_lock(&wq_lock);
    v = wq_stop;
    pthread_mutex_unlock(&wq_lock);
    return v;
}

/* A request whose answer is ready (or that is to be closed): the I/O
 * thread takes it from here. r may be gone once this returns. */
static void answer_ready(struct http_req *r)
{
    MHD_resume_connection(r->conn);
    pthread_mutex_lock(&wq_lock);
    if (--n_inflight == 0)
        pthread_cond_broadcast(&wq_gone);
    pthread_mutex_unlock(&wq_lock);
}

static void run_request(struct http_req *r)
{
    enum MHD_Result ret;
    r->deferred = true;
    ret = api_dispatch(r);
    if (ret == HTTP_PARKED)
        return; /* on a wait queue, and perhaps already running elsewhere */
    if (!r->resp)
        r->close = true; /* MHD_NO, or a handler that answered nothing */
    answer_ready(r);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wq_lock);
    for (;;) {
        struct http_req *r;
        while (!wq_head && !wq_stop) {
            int rc;
            n_idle++;
            rc = cond_wait_ms(&wq_cond, &wq_lock, WORKER_IDLE_MS);
            n_idle--;
            if (rc == ETIMEDOUT && !wq_head)
                goto out; /* the pool shrinks after a burst */
        }
        if (!wq_head)
            break;
        r = wq_head;
        wq_head = r->wq_next;
        if (!wq_head)
            wq_tail = NULL;
        r->wq_next = NULL;
        wq_len--;
        pthread_mutex_unlock(&wq_lock);
        run_request(r);
        pthread_mutex_lock(&wq_lock);
    }
out:
    n_workers--;
    pthread_cond_broadcast(&wq_gone);
    pthread_mutex_unlock(&wq_lock);
    thread_stack_release();
    return NULL;
}

/* Queue a request for a worker, starting one if every worker is busy and
 * the pool is below its size. */
static void work_push(struct http_req *r)
{
    pthread_mutex_lock(&wq_lock);
    r->wq_next = NULL;
    if (wq_tail)
        wq_tail->wq_next = r;
    else
        wq_head = r;
    wq_tail = r;
    wq_len++;
    if (wq_len > n_idle && n_workers < g.cfg.max_workers) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, WORKER_STACK);
        if (pthread_create(&t, &a, worker_main, NULL) == 0)
            n_workers++;
        else if (n_workers == 0)
            sbxd_log(LOG_ERROR, "http: cannot start a worker thread: %s", strerror(errno));
        pthread_attr_destroy(&a);
    }
    pthread_cond_signal(&wq_cond);
    pthread_mutex_unlock(&wq_lock);
}

/* ---- waiting without a thread ------------------------------------------------ */

static struct waiter *parked_head; /* every parked waiter, for the sweep (g.lock) */

static void park_locked(struct waitq *q, struct waiter *w)
{
    w->q = q;
    w->prev = NULL;
    w->next = q->head;
    if (q->head)
        q->head->prev = w;
    q->head = w;
    w->all_prev = NULL;
    w->all_next = parked_head;
    if (parked_head)
        parked_head->all_prev = w;
    parked_head = w;
}

void http_unpark(struct waiter *w)
{
    if (!w->q)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        w->q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    if (w->all_prev)
        w->all_prev->all_next = w->all_next;
    else
        parked_head = w->all_next;
    if (w->all_next)
        w->all_next->all_prev = w->all_prev;
    w->prev = w->next = w->all_prev = w->all_next = NULL;
    w->q = NULL;
}

static void wake_one_locked(struct waiter *w)
{
    http_unpark(w);
    if (!w->req) {
        MHD_resume_connection(w->conn);
        return;
    }
    if (w->gone) {
        w->req->close = true;
        answer_ready(w->req);
        return;
    }
    work_push(w->req);
}

enum MHD_Result http_park_request(struct http_req *r, struct waitq *q)
{
    r->w.req = r;
    r->w.conn = r->conn;
    r->w.gone = false;
    if (stopping()) {
        /* sbxd is stopping: closed now, as the stop closes the parked ones */
        r->close = true;
        answer_ready(r);
        return HTTP_PARKED;
    }
    park_locked(q, &r->w);
    return HTTP_PARKED;
}

void http_park_stream(struct waiter *w, struct waitq *q, struct MHD_Connection *conn)
{
    w->req = NULL;
    w->conn = conn;
    if (stopping()) {
        /* sbxd is stopping: the reader, called again, ends the stream */
        w->gone = true;
        return;
    }
    MHD_suspend_connection(conn);
    park_locked(q, w);
}

void http_wake(struct waitq *q)
{
    while (q->head)
        wake_one_locked(q->head);
}

void http_sweep(void)
{
    struct waiter *w = parked_head, *next;
    /* The cap holds also when no new connection comes to enforce it. */
    pthread_mutex_lock(&conn_lock);
    evict_locked(mono_ms());
    if (n_refused)
        warn_limits_locked(); /* what the last 10 s refused, if nothing came since */
    pthread_mutex_unlock(&conn_lock);
    for (; w; w = next) {
        next = w->all_next;
        if (!http_client_gone(w->conn))
            continue;
        w->gone = true;
        wake_one_locked(w);
    }
}

/* Every parked waiter, told its client is gone: MHD must not be stopped
 * with a connection suspended. */
static void wake_all_gone(void)
{
    pthread_mutex_lock(&g.lock);
    while (parked_head) {
        parked_head->gone = true;
        wake_one_locked(parked_head);
    }
    pthread_mutex_unlock(&g.lock);
}

/* ---- the access handler ---------------------------------------------------------- */

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    struct http_req *r = *con_cls;
    (void)cls;
    (void)version;

    if (!r) {
        const char *cl;
        r = sbx__calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->conn = conn;
        r->method = method;
        r->path = sbx__strdup(url);
        r->split = sbx__strdup(url);
        r->spool_fd = -1;
        r->t0 = mono_ms();
        *con_cls = r;
        if (!r->path || !r->split)
            return MHD_NO;
        if (!token_ok(req_header(r, "Authorization")))
            return reject(r, 401, "unauthorized",
                          "missing or wrong bearer token (Authorization: Bearer TOKEN)");
        conn_authenticated(conn);
        if (over_limit())
            return reject_retry(r, 503, "unavailable", "1",
                                "sbxd has too many connections open; retry shortly");
        if (api_wants_spool(method, url)) {
            r->limit = g.cfg.max_upload;
            r->spool_fd = open_spool();
            if (r->spool_fd < 0) {
                r->rejected = true;
                return reply_error(r, 500, "internal", "cannot store the upload: %s",
                                   strerror(errno));
            }
        } else {
            r->limit = g.cfg.max_json_body;
        }
        cl = req_header(r, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > r->limit) {
            char msg[160];
            snprintf(msg, sizeof msg, "the body is %.30s bytes; the limit for this endpoint is %zu",
                     cl, r->limit);
            return reject(r, 413, "payload_too_large", msg);
        }
        return MHD_YES;
    }
    if (r->rejected) {
        /* Discard what the client still sends, then answer. */
        r->drained += *upload_data_size;
        if (*upload_data_size && r->drained <= DRAIN_MAX) {
            *upload_data_size = 0;
            return MHD_YES;
        }
        *upload_data_size = 0;
        return r->reject_json ? send_rejection(r) : MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_large || r->body_len + n > r->limit) {
            r->too_large = true;
            return MHD_YES;
        }
        if (r->spool_fd >= 0) {
            for (size_t off = 0; off < n;) {
                ssize_t w = write(r->spool_fd, upload_data + off, n - off);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w < 0)
                    return MHD_NO;
                off += (size_t)w;
            }
        } else if (sbx__buf_append(&r->body, upload_data, n) != SBX_OK) {
            return MHD_NO;
        }
        r->body_len += n;
        return MHD_YES;
    }
    if (r->too_large)
        return reply_error(r, 413, "payload_too_large",
                           "the body is larger than this endpoint's limit of %zu bytes", r->limit);
    if (r->dispatched) {
        /* Back from a worker (resumed): its answer, or a close. */
        struct MHD_Response *resp = r->resp;
        enum MHD_Result ret;
        if (!resp) {
            /* A close; or asked again after MHD_queue_response() took
             * nothing: libmicrohttpd does that once MHD_stop_daemon() has
             * begun (it returns MHD_YES and drops the response), and the
             * connection is closed then anyway. Never suspended here: the
             * stop would find it so and abort the process. */
            return MHD_NO;
        }
        r->resp = NULL;
        ret = MHD_queue_response(conn, r->resp_status, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    pthread_mutex_lock(&wq_lock);
    if (wq_stop) {
        /* On a connection opened before the stop: no worker takes it. */
        pthread_mutex_unlock(&wq_lock);
        return reply_error(r, 503, "unavailable", "sbxd is stopping");
    }
    n_inflight++;
    pthread_mutex_unlock(&wq_lock);
    split_path(r);
    r->dispatched = true;
    MHD_suspend_connection(conn);
    work_push(r);
    return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct http_req *r = *con_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    if (r->resp)
        MHD_destroy_response(r->resp);
    sbx__buf_free(&r->body);
    free(r->reject_json);
    if (r->spool_fd >= 0)
        close(r->spool_fd);
    sbx__free(r->path);
    sbx__free(r->split);
    sbx__free(r);
    *con_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[1024];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    /* A connection refused at accept (out of descriptors, MHD's own limit)
     * is closed without an answer: never only at debug level. The rest
     * (clients that reset, malformed requests) is routine. */
    sbxd_log(strstr(msg, "accept") || strstr(msg, "limit") ? LOG_WARN : LOG_DEBUG, "http: %s", msg);
}

/* Create the listening socket: loopback TCP or a unix socket, nothing else. */
static int open_listener(const char *spec, char *err, size_t errlen)
{
    int fd = -1, one = 1;
    if (strncmp(spec, "unix:", 5) == 0) {
        struct sockaddr_un a;
        const char *path = spec + 5;
        mode_t old;
        if (!*path || strlen(path) >= sizeof a.sun_path) {
            snprintf(err, errlen, "--listen %s: the socket path is empty or too long", spec);
            return -1;
        }
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        strcpy(a.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            goto fail;
        unlink(path); /* a stale socket from an earlier run */
        old = umask(0177);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            umask(old);
            goto fail;
        }
        umask(old);
        chmod(path, 0600);
        unix_path = sbx__strdup(path);
        if (listen(fd, 1024) < 0)
            goto fail;
        g.url = sbx__strdup(spec);
        return fd;
    }
    {
        char host[128];
        const char *colon = strrchr(spec, ':');
        char *end;
        long port;
        struct sockaddr_storage ss;
        socklen_t slen;
        int family;
        if (!colon || (size_t)(colon - spec) >= sizeof host) {
            snprintf(err, errlen, "--listen %s: expected HOST:PORT (loopback only) or unix:PATH", spec);
            return -1;
        }
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        port = strtol(colon + 1, &end, 10);
        if (*end || port < 0 || port > 65535 || colon[1] == '\0') {
            snprintf(err, errlen, "--listen %s: bad port", spec);
            return -1;
        }
        memset(&ss, 0, sizeof ss);
        if (strcmp(host, "localhost") == 0)
            strcpy(host, "127.0.0.1");
        if (host[0] == '[' && host[strlen(host) - 1] == ']') {
            memmove(host, host + 1, strlen(host));
            host[strlen(host) - 1] = '\0';
        }
        if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            family = AF_INET;
            a->sin_family = AF_INET;
            a->sin_port = htons((uint16_t)port);
            slen = sizeof *a;
            if ((ntohl(a->sin_addr.s_addr) >> 24) != 127) {
                snprintf(err, errlen, "--listen %s: sbxd listens on loopback only (127.0.0.0/8, ::1) "
                                      "or a unix socket", spec);
                return -1;
            }
        } else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            family = AF_INET6;
            a->sin6_family = AF_INET6;
            a->sin6_port = htons((uint16_t)port);
            slen = sizeof *a;
            if (!IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) {
                snprintf(err, errlen, "--listen %s: sbxd listens on loopback only (127.0.0.0/8, ::1) "
                                      "or a unix socket", spec);
                return -1;
            }
        } else {
            snprintf(err, errlen, "--listen %s: '%s' is not a loopback address", spec, host);
            return -1;
        }
        fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            goto fail;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&ss, slen) < 0 || listen(fd, 1024) < 0 ||
            getsockname(fd, (struct sockaddr *)&ss, &slen) < 0)
            goto fail;
        {
            char url[256], addr[INET6_ADDRSTRLEN];
            if (family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)&ss;
                inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
                snprintf(url, sizeof url, "http://%s:%d", addr, ntohs(a->sin_port));
            } else {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
                inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
                snprintf(url, sizeof url, "http://[%s]:%d", addr, ntohs(a->sin6_port));
            }
            g.url = sbx__strdup(url);
        }
        return fd;
    }
fail:
    snprintf(err, errlen, "--listen %s: %s", spec, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

unsigned http_default_max_conns(void)
{
    struct rlimit rl;
    rlim_t n = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        n = rl.rlim_cur;
    /* A connection is one descriptor (command output costs none: init
     * forwards it). The rest is kept for sandboxes (control sockets,
     * pidfds, locks: about a dozen each at most) and files, and never less
     * than half. */
    rlim_t reserve = 256 + 12 * (rlim_t)(g.cfg.max_sandboxes > 0 ? g.cfg.max_sandboxes : 256);
    if (reserve > n / 2)
        reserve = n / 2;
    n = n - reserve > 64 ? n - reserve : 64;
    return n > 1000000 ? 1000000 : (unsigned)n;
}

/* MHD asks for each new connection. Shutting down, none is taken: that is
 * how sbxd stops new work, rather than MHD_quiesce_daemon(), which on an
 * epoll daemon with its own threads races MHD's event loop for the listen
 * socket's removal from the epoll set and aborts the process when it loses
 * (ENOENT, an unguarded MHD_PANIC in libmicrohttpd). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)cls;
    (void)addr;
    (void)len;
    return atomic_load(&refusing) ? MHD_NO : MHD_YES;
}

int http_start(void)
{
    char err[512];
    unsigned hard;
    listen_fd = open_listener(g.cfg.listen, err, sizeof err);
    if (listen_fd < 0) {
        sbxd_log(LOG_ERROR, "%s", err);
        return -1;
    }
    /* MHD's own limit closes new connections silently: set above ours, so
     * a client past the limit gets a 503 instead. */
    hard = g.cfg.max_conns + g.cfg.max_unauth + 64;
    daemon_ = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, accept_policy, NULL,
        handler, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, notify_conn, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)g.cfg.read_timeout_s, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)g.cfg.io_threads, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096,
        MHD_OPTION_CONNECTION_LIMIT, hard, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
        MHD_OPTION_END);
    if (!daemon_) {
        sbxd_log(LOG_ERROR, "cannot start the HTTP server (libmicrohttpd)");
        return -1;
    }
    sbxd_log(LOG_DEBUG, "http: %u I/O threads, up to %u workers, %u connections (%u unauthenticated), "
             "%u s read timeout", g.cfg.io_threads, g.cfg.max_workers, g.cfg.max_conns,
             g.cfg.max_unauth, g.cfg.read_timeout_s);
    return 0;
}

void http_stop(void)
{
    if (daemon_) {
        /* No new work: new connections refused, requests on open ones
         * answered 503 instead of handed to a worker, nothing parked any
         * more. Then the parked requests and streams are closed and every
         * request handed out is answered, and the workers finish: MHD must
         * not stop with a connection suspended or a worker still holding
         * one. */
        atomic_store(&refusing, true);
        pthread_mutex_lock(&wq_lock);
        wq_stop = true;
        pthread_cond_broadcast(&wq_cond);
        pthread_mutex_unlock(&wq_lock);
        wake_all_gone();
        pthread_mutex_lock(&wq_lock);
        while (n_inflight > 0 || n_workers > 0) {
            if (cond_wait_ms(&wq_gone, &wq_lock, 5000) == ETIMEDOUT)
                sbxd_log(LOG_INFO, "http: waiting for %u requests to finish", n_inflight);
        }
        pthread_mutex_unlock(&wq_lock);
        /* It closes the listen socket it was given (not quiesced). */
        MHD_stop_daemon(daemon_);
        listen_fd = -1;
    }
    daemon_ = NULL;
    if (listen_fd >= 0)
        close(listen_fd);
    if (unix_path)
        unlink(unix_path);
}
