/* SPDX-License-Identifier: MIT */
/*
 * engine: libcurl multi behind one epoll descriptor. libcurl tells us which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when it wants a timeout
 * (CURLMOPT_TIMERFUNCTION); the epoll fd also holds a timerfd, armed for the
 * earliest of libcurl's timeout, a retry or a deadline, and an eventfd for
 * wakeups from other threads. A host loop watches that one fd.
 *
 * Above libcurl sits a FIFO queue with a global and a per-project limit on
 * short requests, and the retry policy (doc/client.md, "Retries"):
 *  - a request marked idempotent is retried after a network error (an
 *    incomplete response and a stall included), a 429 or a 5xx, with
 *    jittered exponential backoff; Retry-After is honoured on 429 and 503;
 *  - any other request (creating a sandbox, starting a command) is retried
 *    only when it cannot have reached the server: the connection was never
 *    made, or libcurl reports that no byte of the request was sent, or the
 *    server answered 429 (it did not take it). So it never runs twice.
 *  - a streamed response is not retried once bytes of it were delivered:
 *    the caller resumes it knowing what it already has;
 *  - a stall is retried once at most (a server that stalls twice is stuck),
 *    and no wait goes past the request's deadline.
 *
 * A response counts only when it is complete (response_cut()): libcurl
 * 7.88 reports success for a connection closed inside the head.
 */
#include "util/internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "client/engine.h"
#include "util/str.h"

#define BACKOFF_MAX_MS 10000
/* libcurl keeps a connection for reuse at most this long: under the 60 s
 * after which sbxd (and many proxies) close idle ones, so a request is not
 * sent on a connection the server is closing. */
#define CONN_MAX_AGE_S 50
#define ERROR_BODY_MAX 65536

sbx_status sbx__engine_global_init(void)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc == CURLE_OUT_OF_MEMORY)
        return SBX_E_NOMEM;
    return rc == CURLE_OK ? SBX_OK : SBX_E_INTERNAL;
}

void sbx__engine_global_cleanup(void)
{
    curl_global_cleanup();
}

enum req_state { R_NEW, R_QUEUED, R_ACTIVE, R_RETRY_WAIT, R_DONE };

#define EASY_SPARE_MAX 64

struct sbx__req {
    sbx__engine *e;
    enum req_state state;
    CURL *easy;
    char *method, *url, *project;
    struct curl_slist *headers;
    sbx__strlist secret_headers;  /* wiped on free */
    sbx__buf body_in;             /* a request body in memory */
    bool has_body;
    char *content_type_in;
    sbx__read_fn read_fn;
    sbx__rewind_fn rewind_fn;
    void *read_user;
    uint64_t body_size;           /* of a streamed body */
    curl_off_t ul_seen;           /* upload progress last seen (xferinfo_cb) */
    struct sbx__progress *prog;   /* where the transfer is reported, or NULL */
    size_t body_off;              /* read_cb's position in body_in */
    bool idempotent, follow, counted;
    bool orphan;                  /* released by its owner while reading: the engine frees it */
    bool probe;                   /* never waits for another transfer's connection (sbx__req_set_probe) */
    bool early;                   /* its handler said DATA_DONE: in the engine's early list */
    struct sbx__req *early_next;
    int64_t deadline;
    sbx__data_fn data_fn;
    void *data_user;
    sbx__done_fn done_fn;
    void *done_user;
    bool paused, resume_pending;
    bool too_large;               /* the buffered body passed max_response */
    bool nomem;                   /* no memory to buffer the body */
    atomic_bool cancel;
    /* results */
    sbx__buf body;                /* buffered body, or the error body of a stream */
    long http_status;
    char content_type[128];
    char retry_after[64];
    sbx_status status;
    char *error;
    bool maybe_sent;
    unsigned sends;               /* prereq_cb calls in this attempt */
    bool resend_stopped;          /* prereq_cb stopped libcurl's resend */
    unsigned attempts;
    uint64_t streamed;
    int64_t retry_due;
    /* The response's head as header_cb saw it: whether it ended, and how
     * its body is framed (response_cut() reads it). */
    struct {
        long status;
        bool done, http1, chunked, encoded;
        long long clen;           /* -1: no Content-Length */
    } head;
    /* Silence: last_io is the last byte either way; idle_at when the
     * timer next looks (lazily moved, not on every byte). */
    int64_t last_io, idle_at, idle_ms;
    bool idle_none;               /* a short request allowed to be silent (sbx__req_no_idle) */
    sbx__idle_fn idle_fn;
    void *idle_user;
    bool stalled;                 /* an attempt stalled: no second retry for that */
    /* For the log: when it was submitted and its attempt started; when the
     * attempt counts as slow (0: not, or already said); whether libcurl
     * sent it again on a new connection because a reused one had died. */
    int64_t t_submit, t_attempt, slow_at;
    bool resent, guarded;
    sbx_status abort_st;          /* sbx__req_abort's, applied in housekeeping */
    char *abort_msg;
    char errbuf[CURL_ERROR_SIZE];
    struct sbx__req *prev, *next; /* in the engine's list of all requests */
    /* Timers: position in the engine's heap (NO_HEAP when not in it) and
     * the key there, the earliest of the deadline and a retry's due time. */
    size_t hidx;
    int64_t hkey;
    /* In the start queue (submitted or waiting for a retry, not started). */
    struct sbx__req *qprev, *qnext;
    bool queued;
    struct project_count *slot;   /* its project's count, found at submit */
};

#define NO_HEAP SIZE_MAX

struct project_count {
    char *project;
    unsigned n;
    struct project_count *next;
};

struct sbx__engine {
    CURLM *multi;
    int epfd, tfd, efd;
    int64_t curl_due;          /* -1: none */
    atomic_llong next_due;     /* for sbx__engine_timeout() from other threads */
    struct sbx__req *reqs;     /* every request not freed */
    /* Deadlines and retries in a binary min-heap, and the start queue in
     * FIFO order, so a process call costs O(what changed), not O(requests):
     * at 1,000 in flight the scans doubled the cost of each request. */
    struct sbx__req **heap;
    size_t nheap, hcap;
    struct sbx__req *qhead, *qtail;
    atomic_bool flagged;       /* a cancel or a resume waits to be applied */
    unsigned active, pending;
    unsigned orphans;          /* released requests draining (in pending too) */
    struct sbx__req *early;    /* to report done before their response ends */
    struct project_count *projects;
    struct sbx__engine_limits limits;
    char *unix_path;
    char *user_agent;
    char *userpwd;             /* wiped on free */
    sbx__log_fn log_fn;        /* the client's log hook, or NULL */
    void *log_user;
    int log_min;
    bool in_process;           /* inside sbx__engine_process (the driving thread) */
    bool kick;                 /* a request was submitted inside process */
    atomic_bool woken;         /* the eventfd was written and not yet read */
    /* Work became due outside process (a submit, a cancel): the next wait
     * must not sleep. The eventfd is written for it only when someone may
     * be asleep on the epoll fd: a thread inside sbx__engine_wait, or a
     * host loop that took the fd. A caller that submits and then waits on
     * the same thread costs no eventfd write and read. */
    atomic_bool poke;
    atomic_uint waiters;       /* threads inside sbx__engine_wait */
    atomic_bool exported;      /* the fd was handed to a host loop */
    int64_t armed;             /* when the timerfd fires; -1: disarmed */
    sbx__timer *timers;        /* set timers, soonest first (few: a list) */
    /* Finished easy handles, reset, for the next requests: curl_easy_init
     * and cleanup per request cost more than the request's own parsing. */
    CURL *spare[EASY_SPARE_MAX];
    unsigned nspare;
    uint8_t *fds;              /* per socket: FD_* (what epoll has registered) */
    size_t nfds;
    /* Events sbx__engine_wait already took from epoll, for the next
     * process call (which may run on another thread, after a handoff). */
    pthread_mutex_t ready_lock;
    struct epoll_event ready[64];
    int nready;
};

/* A socket's registration: FD_IN/FD_OUT as registered with epoll, FD_REG
 * once it is in the epoll set at all, FD_IDLE while libcurl has stopped
 * watching it (a connection parked in the cache between requests). An
 * idle socket stays registered, so reusing it costs no epoll_ctl; it is
 * removed when it reports an event nobody wants, or when it is closed. */
enum { FD_IN = 1, FD_OUT = 2, FD_REG = 4, FD_IDLE = 8 };

/* ---- epoll plumbing ---------------------------------------------------------- */

static uint8_t *fd_slot(sbx__engine *e, curl_socket_t s)
{
    if (s < 0)
        return NULL;
    if ((size_t)s >= e->nfds) {
        size_t n = e->nfds ? e->nfds : 64;
        uint8_t *p;
        while (n <= (size_t)s)
            n *= 2;
        if (!(p = sbx__realloc(e->fds, n)))
            return NULL;
        memset(p + e->nfds, 0, n - e->nfds);
        e->fds = p;
        e->nfds = n;
    }
    return &e->fds[s];
}

static int sock_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    sbx__engine *e = userp;
    struct epoll_event ev;
    uint8_t *st = fd_slot(e, s), want;
    (void)easy;
    (void)socketp;
    if (!st) {
        /* No memory to record it: watch it unrecorded all the same (a
         * later call finds it by EEXIST). Returning -1 does not fail the
         * transfer (libcurl 7.88): it waited, forever, for an event on a
         * socket nobody watched. */
        memset(&ev, 0, sizeof ev);
        ev.data.fd = s;
        ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
        if (what == CURL_POLL_REMOVE)
            epoll_ctl(e->epfd, EPOLL_CTL_DEL, s, NULL);
        else if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
            epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev);
        return 0;
    }
    if (what == CURL_POLL_REMOVE) {
        if (*st & FD_REG)
            *st |= FD_IDLE;
        return 0;
    }
    want = (uint8_t)((what & CURL_POLL_IN ? FD_IN : 0) | (what & CURL_POLL_OUT ? FD_OUT : 0));
    if ((*st & FD_REG) && (*st & (FD_IN | FD_OUT)) == want) {
        *st = (uint8_t)(FD_REG | want);
        return 0;
    }
    memset(&ev, 0, sizeof ev);
    ev.data.fd = s;
    ev.events = (want & FD_IN ? EPOLLIN : 0) | (want & FD_OUT ? EPOLLOUT : 0);
    if (*st & FD_REG) {
        if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
            epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev);
    } else if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST) {
        epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev);
    }
    *st = (uint8_t)(FD_REG | want);
    return 0;
}

/* libcurl closes a connection: forget its registration (the fd number
 * will be reused). */
static int close_cb(void *user, curl_socket_t s)
{
    sbx__engine *e = user;
    if (s >= 0 && (size_t)s < e->nfds && (e->fds[s] & FD_REG)) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, s, NULL);
        e->fds[s] = 0;
    }
    return close(s);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    sbx__engine *e = userp;
    (void)multi;
    e->curl_due = timeout_ms < 0 ? -1 : sbx__mono_ms() + timeout_ms;
    return 0;
}

sbx__engine *sbx__engine_new(void)
{
    sbx__engine *e = sbx__calloc(1, sizeof *e);
    struct epoll_event ev;
    if (!e)
        return NULL;
    e->epfd = e->tfd = e->efd = -1;
    e->curl_due = -1;
    e->armed = -1;
    pthread_mutex_init(&e->ready_lock, NULL);
    atomic_store(&e->next_due, -1);
    e->limits.global = 64;
    e->limits.per_project = 32;
    e->limits.retry_max = SBX__RETRY_MAX_V1;
    e->limits.backoff_base_ms = SBX__BACKOFF_BASE_MS_V1;
    e->limits.retry_after_max_ms = SBX__RETRY_AFTER_MAX_MS_DEFAULT;
    e->limits.max_response = 16u << 20;
    e->limits.idle_ms = SBX__IDLE_MS_DEFAULT;
    e->limits.probe_after_ms = SBX__PROBE_AFTER_MS_DEFAULT;
    e->limits.probe_timeout_ms = SBX__PROBE_TIMEOUT_MS_DEFAULT;
    e->limits.slow_ms = SBX__SLOW_MS_DEFAULT;
    e->multi = curl_multi_init();
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!e->multi || e->epfd < 0 || e->tfd < 0 || e->efd < 0)
        goto fail;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.fd = e->tfd;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->tfd, &ev) < 0)
        goto fail;
    ev.data.fd = e->efd;
    if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->efd, &ev) < 0)
        goto fail;
    curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
    curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
    curl_multi_setopt(e->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    return e;
fail:
    sbx__engine_free(e);
    return NULL;
}

static void finish(sbx__req *r, sbx_status st, const char *msg);
static void detach_easy(sbx__req *r);
static const char *shown_url(const sbx__req *r, char *buf, size_t cap);

void sbx__engine_free(sbx__engine *e)
{
    if (!e)
        return;
    /* Requests still owned by callers lose their engine: they are aborted
     * without callbacks; freeing them later stays safe. */
    for (sbx__req *r = e->reqs, *next; r; r = next) {
        next = r->next;
        detach_easy(r);
        r->state = R_DONE;
        r->e = NULL;
        r->prev = r->next = NULL;
        r->hidx = NO_HEAP;
        r->queued = false;
        r->qprev = r->qnext = NULL;
        if (r->orphan) /* nobody else will */
            sbx__req_free(r);
    }
    e->reqs = NULL;
    sbx__free(e->heap);
    e->heap = NULL;
    e->nheap = e->hcap = 0;
    e->qhead = e->qtail = NULL;
    while (e->projects) {
        struct project_count *p = e->projects;
        e->projects = p->next;
        sbx__free(p->project);
        sbx__free(p);
    }
    while (e->nspare)
        curl_easy_cleanup(e->spare[--e->nspare]);
    if (e->multi)
        curl_multi_cleanup(e->multi);
    if (e->epfd >= 0)
        close(e->epfd);
    if (e->tfd >= 0)
        close(e->tfd);
    if (e->efd >= 0)
        close(e->efd);
    sbx__free(e->unix_path);
    sbx__free(e->user_agent);
    sbx__free_secret(e->userpwd);
    sbx__free(e->fds);
    pthread_mutex_destroy(&e->ready_lock);
    sbx__free(e);
}

/* Replace a string setting with a copy of v (NULL clears it); the old one
 * is wiped when it was a secret. On failure the setting is unchanged. */
static sbx_status replace_str(char **slot, const char *v, bool secret)
{
    char *p = v ? sbx__strdup(v) : NULL;
    if (v && !p)
        return SBX_E_NOMEM;
    if (secret)
        sbx__free_secret(*slot);
    else
        sbx__free(*slot);
    *slot = p;
    return SBX_OK;
}

sbx_status sbx__engine_set_unix_socket(sbx__engine *e, const char *path)
{
    return replace_str(&e->unix_path, path, false);
}

sbx_status sbx__engine_set_user_agent(sbx__engine *e, const char *ua)
{
    return replace_str(&e->user_agent, ua, false);
}

sbx_status sbx__engine_set_userpwd(sbx__engine *e, const char *userpwd)
{
    return replace_str(&e->userpwd, userpwd, true);
}

void sbx__engine_set_limits(sbx__engine *e, const struct sbx__engine_limits *l)
{
    e->limits = *l;
}

void sbx__engine_get_limits(const sbx__engine *e, struct sbx__engine_limits *l)
{
    *l = e->limits;
}

void sbx__engine_set_log(sbx__engine *e, sbx__log_fn fn, void *user, int min_level)
{
    e->log_fn = fn;
    e->log_user = fn ? user : NULL;
    e->log_min = min_level;
}

bool sbx__engine_logs(const sbx__engine *e, int level)
{
    return e && e->log_fn && level >= e->log_min && e->in_process;
}

void sbx__engine_log(sbx__engine *e, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!sbx__engine_logs(e, level))
        return;
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    if (e->userpwd) {
        const char *colon = strchr(e->userpwd, ':');
        sbx__str_scrub(msg, e->userpwd);
        if (colon)
            sbx__str_scrub(msg, colon + 1);
    }
    e->log_fn(level, msg, e->log_user);
}

/* The request's path as the log shows it: no scheme, host or query string
 * (a query may carry values a log must not keep). */
static const char *log_path(const sbx__req *r, char *buf, size_t cap)
{
    const char *p = strstr(r->url, "://");
    size_t n;
    p = p ? strchr(p + 3, '/') : NULL;
    if (!p)
        p = "/";
    n = strcspn(p, "?#");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

void sbx__req_log(sbx__req *r, int level, const char *fmt, ...)
{
    char what[768], path[256];
    va_list ap;
    if (!sbx__engine_logs(r->e, level))
        return;
    va_start(ap, fmt);
    if (vsnprintf(what, sizeof what, fmt, ap) < 0)
        what[0] = '\0';
    va_end(ap);
    sbx__engine_log(r->e, level, "%s %s: %s", r->method, log_path(r, path, sizeof path), what);
}

int sbx__engine_fd(sbx__engine *e)
{
    atomic_store(&e->exported, true);
    return e->epfd;
}

unsigned sbx__engine_pending(const sbx__engine *e)
{
    return e->pending - e->orphans;
}

/* Work is due now (see poke). seq_cst on both sides: either the waiter,
 * having counted itself, sees poke and does not sleep, or the notifier
 * sees the waiter and writes the eventfd. */
void sbx__engine_notify(sbx__engine *e)
{
    atomic_store(&e->poke, true);
    if (atomic_load(&e->exported) || atomic_load(&e->waiters) > 0)
        sbx__engine_wakeup(e);
}

/* Work is due now. Inside process (a completion submitting the next
 * request, a data handler freeing a slot) another round there does it, with
 * no wakeup; outside, the next wait must not sleep. Driving thread only:
 * other threads use sbx__engine_notify. */
static void due_now(sbx__engine *e)
{
    if (e->in_process)
        e->kick = true;
    else
        sbx__engine_notify(e);
}

void sbx__engine_take_poke(sbx__engine *e)
{
    atomic_store(&e->poke, false);
}

void sbx__engine_wakeup(sbx__engine *e)
{
    uint64_t one = 1;
    /* One write until the driving thread reads it: any number of wakeups
     * between two process calls cost one syscall. */
    if (!atomic_exchange(&e->woken, true))
        (void)!write(e->efd, &one, sizeof one);
}

/* ---- timers and the start queue -------------------------------------------- */

static void heap_place(sbx__engine *e, size_t i, sbx__req *r)
{
    e->heap[i] = r;
    r->hidx = i;
}

static void sift_up(sbx__engine *e, size_t i)
{
    sbx__req *r = e->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (e->heap[parent]->hkey <= r->hkey)
            break;
        heap_place(e, i, e->heap[parent]);
        i = parent;
    }
    heap_place(e, i, r);
}

static void sift_down(sbx__engine *e, size_t i)
{
    sbx__req *r = e->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= e->nheap)
            break;
        if (c + 1 < e->nheap && e->heap[c + 1]->hkey < e->heap[c]->hkey)
            c++;
        if (r->hkey <= e->heap[c]->hkey)
            break;
        heap_place(e, i, e->heap[c]);
        i = c;
    }
    heap_place(e, i, r);
}

static void heap_remove(sbx__req *r)
{
    sbx__engine *e = r->e;
    size_t i = r->hidx;
    sbx__req *last;
    if (!e || i == NO_HEAP)
        return;
    r->hidx = NO_HEAP;
    last = e->heap[--e->nheap];
    if (last == r)
        return;
    heap_place(e, i, last);
    sift_up(e, i);
    sift_down(e, last->hidx);
}

/* Put r in the heap with this key, or move it there. Space is reserved at
 * submission (hcap >= requests pending), so this cannot fail. */
static void heap_set(sbx__req *r, int64_t key)
{
    sbx__engine *e = r->e;
    if (r->hidx == NO_HEAP) {
        r->hkey = key;
        heap_place(e, e->nheap++, r);
        sift_up(e, r->hidx);
    } else if (key < r->hkey) {
        r->hkey = key;
        sift_up(e, r->hidx);
    } else {
        r->hkey = key;
        sift_down(e, r->hidx);
    }
}

/* After a change of state, deadline or retry time: when r next needs
 * looking at. */
static void timer_update(sbx__req *r)
{
    int64_t k = -1;
    if (!r->e)
        return;
    if (r->state == R_QUEUED || r->state == R_ACTIVE || r->state == R_RETRY_WAIT) {
        if (r->state == R_RETRY_WAIT)
            k = r->retry_due;
        if (r->state == R_ACTIVE && r->idle_at > 0 && (k < 0 || r->idle_at < k))
            k = r->idle_at;
        if (r->state == R_ACTIVE && r->slow_at > 0 && (k < 0 || r->slow_at < k))
            k = r->slow_at;
        if (r->deadline && (k < 0 || r->deadline < k))
            k = r->deadline;
    }
    if (k < 0)
        heap_remove(r);
    else
        heap_set(r, k);
}

/* How long r may go without a byte: the client's idle timeout for a short
 * request; for a followed one, the period its owner asked to be told
 * after (its silence may be the command's). 0: no limit. */
static int64_t idle_period(const sbx__req *r)
{
    if (r->orphan || r->early)
        return 0; /* draining under its own short deadline */
    if (r->idle_fn) /* its owner judges its silence */
        return r->idle_ms;
    if (r->follow)
        return 0;
    if (r->idle_none)
        return 0;
    return r->e ? r->e->limits.idle_ms : 0;
}

/* (Re)start the silence timer of an active request from its last byte. */
static void idle_arm(sbx__req *r)
{
    int64_t p = idle_period(r);
    r->idle_at = r->state == R_ACTIVE && p > 0 ? r->last_io + p : 0;
    timer_update(r);
}

static sbx_status heap_reserve(sbx__engine *e, size_t n)
{
    sbx__req **h;
    size_t cap;
    if (e->hcap >= n)
        return SBX_OK;
    cap = e->hcap ? e->hcap * 2 : 16;
    while (cap < n)
        cap *= 2;
    if (!(h = sbx__realloc(e->heap, cap * sizeof *h)))
        return SBX_E_NOMEM;
    e->heap = h;
    e->hcap = cap;
    return SBX_OK;
}

static void q_push(sbx__req *r)
{
    sbx__engine *e = r->e;
    if (r->queued)
        return;
    r->queued = true;
    r->qnext = NULL;
    r->qprev = e->qtail;
    if (e->qtail)
        e->qtail->qnext = r;
    else
        e->qhead = r;
    e->qtail = r;
}

static void q_remove(sbx__req *r)
{
    sbx__engine *e = r->e;
    if (!e || !r->queued)
        return;
    if (r->qprev)
        r->qprev->qnext = r->qnext;
    else
        e->qhead = r->qnext;
    if (r->qnext)
        r->qnext->qprev = r->qprev;
    else
        e->qtail = r->qprev;
    r->qprev = r->qnext = NULL;
    r->queued = false;
}

/* ---- limits --------------------------------------------------------------- */

/* The count of a project's requests, made on first use. */
static struct project_count *project_slot(sbx__engine *e, const char *project)
{
    struct project_count *p;
    for (p = e->projects; p; p = p->next)
        if (strcmp(p->project, project) == 0)
            return p;
    p = sbx__calloc(1, sizeof *p);
    if (!p || !(p->project = sbx__strdup(project))) {
        sbx__free(p);
        return NULL;
    }
    p->next = e->projects;
    e->projects = p;
    return p;
}

static bool may_start(sbx__engine *e, sbx__req *r)
{
    if (r->follow)
        return true; /* long-lived listeners are not rationed */
    if (e->limits.global && e->active >= e->limits.global)
        return false;
    if (r->slot && e->limits.per_project && r->slot->n >= e->limits.per_project)
        return false;
    return true;
}

static void count(sbx__req *r, int delta)
{
    sbx__engine *e = r->e;
    if (r->follow)
        return;
    if (delta > 0) {
        e->active++;
        r->counted = true;
        if (r->slot)
            r->slot->n++;
    } else if (r->counted) {
        e->active--;
        r->counted = false;
        if (r->slot && r->slot->n)
            r->slot->n--;
    }
}

/* ---- one attempt ----------------------------------------------------------- */

/* A header's value (after "name:"), trimmed, as a length-bounded span. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *v;
    if (len <= nl || strncasecmp(line, name, nl) != 0)
        return NULL;
    v = line + nl;
    len -= nl;
    while (len && (*v == ' ' || *v == '\t')) {
        v++;
        len--;
    }
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    *vlen = len;
    return v;
}

/* The framing of the response's body, from its head. */
static void note_framing(sbx__req *r, const char *line, size_t len)
{
    const char *v;
    size_t vlen;
    if ((v = header_value(line, len, "content-length:", &vlen)) != NULL) {
        char num[32];
        char *end;
        long long n;
        if (vlen == 0 || vlen >= sizeof num)
            return;
        memcpy(num, v, vlen);
        num[vlen] = '\0';
        n = strtoll(num, &end, 10);
        if (*end == '\0' && n >= 0)
            r->head.clen = n;
    } else if ((v = header_value(line, len, "transfer-encoding:", &vlen)) != NULL) {
        /* chunked is the last coding when present (RFC 9112 6.1). */
        r->head.chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
    } else if ((v = header_value(line, len, "content-encoding:", &vlen)) != NULL) {
        r->head.encoded = vlen > 0 && !(vlen == 8 && strncasecmp(v, "identity", 8) == 0);
    }
}

static size_t header_cb(char *line, size_t size, size_t n, void *user)
{
    sbx__req *r = user;
    size_t len = size * n;
    const char *names[] = {"content-type:", "retry-after:"};
    char *dest[] = {r->content_type, r->retry_after};
    size_t caps[] = {sizeof r->content_type, sizeof r->retry_after};

    r->last_io = sbx__mono_ms();
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue, a proxy's CONNECT, or a
         * redirect): forget the previous one's headers. */
        const char *sp = memchr(line, ' ', len);
        r->content_type[0] = r->retry_after[0] = '\0';
        r->head.done = r->head.chunked = r->head.encoded = false;
        r->head.clen = -1;
        r->head.http1 = len > 6 && line[5] == '1';
        r->head.status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return len;
    }
    if (line[0] == '\r' || line[0] == '\n') {
        /* The empty line: the head is whole (an interim 1xx's does not
         * count; the real one follows). */
        if (r->head.status >= 200) {
            r->head.done = true;
            /* the body's length as the caller gets it: not for an
             * encoded body (counted decoded), nor an error's */
            if (r->prog && r->head.status < 300)
                atomic_store(&r->prog->receive_total,
                             r->head.clen >= 0 && !r->head.encoded ? (int64_t)r->head.clen : (int64_t)-1);
        }
        return len;
    }
    note_framing(r, line, len);
    for (size_t i = 0; i < 2; i++) {
        size_t nl = strlen(names[i]), vlen;
        const char *v;
        if (len <= nl || strncasecmp(line, names[i], nl) != 0)
            continue;
        v = line + nl;
        vlen = len - nl;
        while (vlen && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= caps[i])
            vlen = caps[i] - 1;
        memcpy(dest[i], v, vlen);
        dest[i][vlen] = '\0';
    }
    return len;
}

static size_t write_cb(char *data, size_t size, size_t n, void *user)
{
    sbx__req *r = user;
    size_t len = size * n;
    long code = 0;

    r->last_io = sbx__mono_ms();
    if (r->orphan || r->early) /* the rest of a response its owner no longer wants */
        return len;
    /* Only a stream needs the status, per chunk (its error body is buffered). */
    if (r->data_fn)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (r->data_fn && code >= 200 && code < 300) {
        int a = r->data_fn(r, data, len, r->data_user);
        if (a == SBX__DATA_PAUSE) {
            r->paused = true;
            return CURL_WRITEFUNC_PAUSE; /* the same bytes come again on resume */
        }
        if (a == SBX__DATA_ABORT)
            return 0;
        if (a == SBX__DATA_DONE && r->e) {
            /* Reported from process, outside libcurl's callbacks. */
            r->early = true;
            r->early_next = r->e->early;
            r->e->early = r;
        }
        r->streamed += len;
        if (r->prog)
            atomic_fetch_add(&r->prog->received, (uint64_t)len);
        return len;
    }
    /* Buffered bodies, and error bodies of streams (kept small). */
    sbx_status st = sbx__buf_append(&r->body, data, len);
    if (st != SBX_OK) {
        if (r->data_fn)
            return len; /* an oversized error body is cut, not fatal */
        if (st == SBX_E_NOMEM)
            r->nomem = true; /* the request fails with NOMEM */
        else
            r->too_large = true; /* ... with BUDGET_EXCEEDED */
        return 0;
    }
    if (r->prog && !r->data_fn)
        atomic_fetch_add(&r->prog->received, (uint64_t)len);
    return len;
}

static size_t read_cb(char *buf, size_t size, size_t n, void *user)
{
    sbx__req *r = user;
    size_t want = size * n, got;
    if (!r->read_fn) {
        /* An in-memory body that must not be replayed by libcurl. */
        got = r->body_in.len - r->body_off < want ? r->body_in.len - r->body_off : want;
        memcpy(buf, r->body_in.data + r->body_off, got);
        r->body_off += got;
        return got;
    }
    got = r->read_fn(buf, want, r->read_user);
    return got == SIZE_MAX ? CURL_READFUNC_ABORT : got;
}

/* Upload progress is activity too: a large body going out slowly is not a
 * stall (bodies given whole to libcurl reach no read_cb). */
static int xferinfo_cb(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    sbx__req *r = user;
    (void)dltotal, (void)dlnow, (void)ultotal;
    if (ulnow != r->ul_seen) {
        r->ul_seen = ulnow;
        r->last_io = sbx__mono_ms();
        if (r->prog && ulnow > 0)
            atomic_store(&r->prog->sent, (uint64_t)ulnow);
    }
    return 0;
}

/* libcurl wants the body again (a resend on a fresh connection). */
static int seek_cb(void *user, curl_off_t offset, int origin)
{
    sbx__req *r = user;
    if (offset != 0 || origin != SEEK_SET)
        return CURL_SEEKFUNC_CANTSEEK;
    if (!r->idempotent)
        return CURL_SEEKFUNC_FAIL; /* the body must not be sent twice */
    if (!r->read_fn) {
        r->body_off = 0;
        return CURL_SEEKFUNC_OK;
    }
    return r->rewind_fn && r->rewind_fn(r->read_user) == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

/* libcurl resends, on a fresh connection, a request whose reused
 * connection died before any answer. For a request that must not run twice
 * the second send is stopped here, before it leaves: the first may have
 * reached the server. (Called before every send of the request.) */
static int prereq_cb(void *user, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port)
{
    sbx__req *r = user;
    (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
    if (r->sends++ == 0)
        return CURL_PREREQFUNC_OK;
    /* A second send in one attempt: the reused connection had died. Noted
     * for the log (said from process, outside libcurl's callbacks). */
    r->resent = true;
    if (r->idempotent || !r->guarded)
        return CURL_PREREQFUNC_OK; /* an unguarded body fails to rewind instead */
    r->resend_stopped = true;
    return CURL_PREREQFUNC_ABORT;
}

/* A new easy handle with the options every request shares; handles go back
 * to the spare pool without curl_easy_reset, so attach_easy sets every
 * option that differs between requests, each time. */
static CURL *new_easy(sbx__engine *e)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, close_cb);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, e);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    /* HTTP/2 where TLS negotiates it; sbxd (plain, or a unix socket) speaks 1.1. */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(h, CURLOPT_MAXAGE_CONN, (long)CONN_MAX_AGE_S);
    curl_easy_setopt(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
    if (e->unix_path)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->unix_path);
    if (e->user_agent)
        curl_easy_setopt(h, CURLOPT_USERAGENT, e->user_agent);
    return h;
}

#ifdef SBX_FAULT_INJECTION
bool sbx__engine_no_prereq; /* tests: take the path of a libcurl < 7.80 */
#define NO_PREREQ sbx__engine_no_prereq
#else
#define NO_PREREQ false
#endif

static sbx_status attach_easy(sbx__req *r)
{
    sbx__engine *e = r->e;
    CURL *h = e->nspare ? e->spare[--e->nspare] : new_easy(e);
    /* A small body that must not run twice goes with the headers in one
     * write when prereq_cb can stop libcurl's resend (libcurl >= 7.80);
     * otherwise through read_cb, which cannot rewind, so the resend fails.
     * prereq_cb also sees every resend, for the log. */
    bool guarded = false, prereq = false;
    int64_t now = sbx__mono_ms();
    if (!h)
        return SBX_E_NOMEM;
    r->easy = h;
    r->errbuf[0] = '\0';
    r->content_type[0] = r->retry_after[0] = '\0';
    r->http_status = 0;
    r->paused = false;
    r->too_large = r->nomem = false;
    r->sends = 0;
    r->resend_stopped = false;
    r->resent = false;
    r->body_off = 0;
    r->ul_seen = 0;
    if (r->prog) { /* each attempt from the start */
        atomic_store(&r->prog->sent, 0);
        atomic_store(&r->prog->received, 0);
        atomic_store(&r->prog->send_total, (int64_t)(r->read_fn ? r->body_size : r->body_in.len));
        atomic_store(&r->prog->receive_total, -1);
    }
    memset(&r->head, 0, sizeof r->head);
    r->head.clen = -1;
    r->last_io = r->t_attempt = now;
    /* Long-lived streams are in flight as long as their command runs. */
    r->slow_at = !r->follow && !r->orphan && e->limits.slow_ms > 0 ? now + e->limits.slow_ms : 0;
    sbx__buf_free(&r->body);
    sbx__buf_init(&r->body, r->data_fn ? ERROR_BODY_MAX : e->limits.max_response);
    curl_easy_setopt(h, CURLOPT_URL, r->url);
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, r->probe ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_PRIVATE, r);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_READDATA, r);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
    curl_easy_setopt(h, CURLOPT_USERPWD, e->userpwd); /* NULL: none */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->headers);
    if (!NO_PREREQ)
        prereq = curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, prereq_cb) == CURLE_OK &&
                 curl_easy_setopt(h, CURLOPT_PREREQDATA, r) == CURLE_OK;
    else
        curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, NULL);
    guarded = r->guarded = prereq && r->has_body && !r->read_fn && !r->idempotent;
    if (r->read_fn || (r->has_body && !r->idempotent && !guarded)) {
        /* Streamed bodies, and unguarded ones that must not run twice (the
         * seek_cb refuses to rewind those). */
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(r->read_fn ? r->body_size : r->body_in.len));
    } else if (r->has_body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body_in.data ? r->body_in.data : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_in.len);
    } else if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "DELETE") != 0) {
        /* A body-less POST still sends Content-Length: 0. */
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    } else {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    /* After the body options: they reset the method libcurl would use. */
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
    if (curl_multi_add_handle(e->multi, h) != CURLM_OK) {
        curl_easy_cleanup(h);
        r->easy = NULL;
        return SBX_E_INTERNAL;
    }
    r->attempts++;
    r->state = R_ACTIVE;
    q_remove(r);
    idle_arm(r); /* and a retry's due time no longer counts */
    if (r->attempts == 1)
        sbx__req_log(r, SBX_LOG_DEBUG, "started");
    else
        sbx__req_log(r, SBX_LOG_DEBUG, "attempt %u started", r->attempts);
    return SBX_OK;
}

static void detach_easy(sbx__req *r)
{
    sbx__engine *e = r->e;
    if (!r->easy)
        return;
    if (e)
        curl_multi_remove_handle(e->multi, r->easy);
    if (e && e->nspare < EASY_SPARE_MAX) {
        /* Kept as they are: attach_easy sets again every option that
         * differs between requests (ours point into r). Connections stay
         * with the multi handle, not with the easy one. */
        curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, NULL); /* r goes away */
        e->spare[e->nspare++] = r->easy;
    } else {
        curl_easy_cleanup(r->easy);
    }
    r->easy = NULL;
}

/* ---- outcomes ------------------------------------------------------------------- */

static void unlink_req(sbx__req *r)
{
    sbx__engine *e = r->e;
    if (!e)
        return;
    if (r->prev)
        r->prev->next = r->next;
    else if (e->reqs == r)
        e->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

/* Out of everything the engine keeps for a live request: libcurl, the
 * limits, the timers, the queue, the pending count. */
static void retire(sbx__req *r)
{
    if (r->early && r->e) {
        sbx__req **pp = &r->e->early;
        while (*pp && *pp != r)
            pp = &(*pp)->early_next;
        if (*pp)
            *pp = r->early_next;
        r->early_next = NULL;
    }
    detach_easy(r);
    count(r, -1);
    heap_remove(r);
    q_remove(r);
    if (r->e && r->state != R_DONE && r->state != R_NEW)
        r->e->pending--;
    if (r->e && r->orphan) {
        r->orphan = false;
        r->e->orphans--;
    }
}

/* msg without the "METHOD URL: " the engine's messages start with: the
 * URL's query string stays out of the log. */
static const char *log_reason(const sbx__req *r, const char *msg)
{
    char ub[600];
    const char *u = shown_url(r, ub, sizeof ub);
    size_t m = strlen(r->method), n = strlen(u);
    if (strncmp(msg, r->method, m) == 0 && msg[m] == ' ' && strncmp(msg + m + 1, u, n) == 0 &&
        strncmp(msg + m + 1 + n, ": ", 2) == 0)
        return msg + m + 3 + n;
    return msg;
}

/* The end of a request, for the log: DEBUG always, ERROR when it failed
 * for good (a failure of the transport, or an answer the retry policy
 * counts as one). Said before the done callback, which may free r. */
static void log_end(sbx__req *r, sbx_status st, const char *msg)
{
    int64_t ms = sbx__mono_ms() - (r->t_submit ? r->t_submit : r->t_attempt);
    unsigned n = r->attempts;
    if (st == SBX_OK && (r->http_status == 429 || r->http_status >= 500))
        sbx__req_log(r, SBX_LOG_ERROR, "failed: HTTP %ld after %u attempt%s in %lld ms", r->http_status, n,
                     n == 1 ? "" : "s", (long long)ms);
    else if (st != SBX_OK && st != SBX_E_CANCELLED)
        sbx__req_log(r, SBX_LOG_ERROR, "failed (%s): %s; after %u attempt%s in %lld ms", sbx_status_name(st),
                     msg ? log_reason(r, msg) : sbx_strerror(st), n, n == 1 ? "" : "s", (long long)ms);
    if (st == SBX_OK)
        sbx__req_log(r, SBX_LOG_DEBUG, "done: HTTP %ld in %lld ms (%u attempt%s)", r->http_status, (long long)ms, n,
                     n == 1 ? "" : "s");
    else
        sbx__req_log(r, SBX_LOG_DEBUG, "ended: %s in %lld ms (%u attempt%s)", sbx_status_name(st), (long long)ms, n,
                     n == 1 ? "" : "s");
}

static void finish(sbx__req *r, sbx_status st, const char *msg)
{
    if (r->orphan) {
        sbx__req_free(r); /* its connection is back in the pool, or closed */
        return;
    }
    log_end(r, st, msg);
    retire(r);
    r->state = R_DONE;
    r->status = st;
    sbx__free(r->error);
    r->error = msg ? sbx__strdup(msg) : NULL;
    if (r->done_fn)
        r->done_fn(r, r->done_user); /* may free r */
}

/* Milliseconds from a Retry-After value: seconds (decimals too, as the
 * 2.x SDKs read it: "1.5") or an HTTP date. -1 if none. */
static int64_t retry_after_ms(const char *v)
{
    char *end;
    double s;
    time_t t;
    if (!v[0])
        return -1;
    if (v[0] >= '0' && v[0] <= '9') {
        s = strtod(v, &end);
        if (*end == '\0')
            return s > 1e9 ? (int64_t)1e12 : (int64_t)(s * 1000.0);
    }
    t = curl_getdate(v, NULL);
    if (t < 0)
        return -1;
    t -= time(NULL);
    return t < 0 ? 0 : (int64_t)t * 1000;
}

static int64_t backoff_ms(const sbx__engine *e, unsigned attempt)
{
    uint32_t rnd = 0;
    int64_t base = e->limits.backoff_base_ms > 0 ? e->limits.backoff_base_ms : 1;
    for (unsigned i = 1; i < attempt && base < BACKOFF_MAX_MS; i++)
        base *= 2;
    if (base > BACKOFF_MAX_MS)
        base = BACKOFF_MAX_MS;
    (void)!getrandom(&rnd, sizeof rnd, GRND_NONBLOCK);
    /* Jitter: 50% to 150% of the base. */
    return base / 2 + (int64_t)(rnd % (uint32_t)(base + 1));
}

static bool not_sent(CURLcode code, CURL *h)
{
    curl_off_t sent = 0;
    if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
        code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_SSL_CONNECT_ERROR ||
        code == CURLE_PEER_FAILED_VERIFICATION)
        return true;
    /* No byte of the request went out on this attempt. */
    return curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK && sent == 0;
}

static void schedule_retry(sbx__req *r, int64_t delay_ms)
{
    detach_easy(r);
    count(r, -1);
    r->state = R_RETRY_WAIT;
    r->retry_due = sbx__mono_ms() + delay_ms;
    timer_update(r);
    q_push(r);
    if (r->rewind_fn && r->rewind_fn(r->read_user) != 0)
        finish(r, SBX_E_IO, "the request body could not be replayed for a retry");
}

/* The request's URL as messages show it: a unix socket endpoint's as
 * "unix:/path" and the path, not libcurl's placeholder host. (URLs carry no
 * credentials: the client keeps userinfo out of them.) */
static const char *shown_url(const sbx__req *r, char *buf, size_t cap)
{
    const char *u = r->url;
    if (r->e && r->e->unix_path && strncmp(u, "http://localhost", 16) == 0) {
        snprintf(buf, cap, "unix:%s %s", r->e->unix_path, u + 16);
        return buf;
    }
    return u;
}

/* Why a response libcurl accepted (CURLE_OK) is not whole, or NULL. libcurl
 * 7.88 returns CURLE_OK with the status line and no body when the
 * connection closes inside the head, and for a body delimited only by the
 * connection's end, which a cut looks the same as. It does fail a chunked
 * body without its last chunk and a short Content-Length body
 * (CURLE_PARTIAL_FILE); the length is checked again here where the count
 * is of the bytes that were framed (no Content-Encoding). */
static const char *response_cut(sbx__req *r)
{
    curl_off_t got = 0;
    if (!r->head.done)
        return "the connection closed inside the response's head";
    if (!r->head.http1) /* HTTP/2 frames each response's end itself */
        return NULL;
    if (r->head.status == 204 || r->head.status == 304 || strcmp(r->method, "HEAD") == 0)
        return NULL;
    if (r->head.chunked)
        return NULL; /* libcurl saw the last chunk: it fails the transfer otherwise */
    if (r->head.clen >= 0) {
        if (r->head.encoded || curl_easy_getinfo(r->easy, CURLINFO_SIZE_DOWNLOAD_T, &got) != CURLE_OK ||
            got == r->head.clen)
            return NULL;
        return "the body is shorter than its Content-Length";
    }
    return "the body had no length and no chunked framing, so its end could have been a cut";
}

/* An attempt failed without a whole answer: retry it if that is safe and
 * allowed, else report. unsent: no byte of it can have reached the server;
 * stalled: it failed because nothing moved for the idle period. why: msg
 * without the URL, for the log. */
static void attempt_failed(sbx__req *r, const char *msg, const char *why, bool unsent, bool stalled)
{
    int64_t now = sbx__mono_ms();
    r->maybe_sent = !unsent;
    if (r->deadline && now >= r->deadline) {
        finish(r, SBX_E_TIMEOUT, msg);
        return;
    }
    /* A stream that delivered bytes is resumed by its owner, who knows
     * how much it has; anything else retries if it is safe. */
    if (r->attempts <= r->e->limits.retry_max && r->streamed == 0 && (r->idempotent || unsent) &&
        !(stalled && r->stalled)) {
        int64_t delay = backoff_ms(r->e, r->attempts);
        r->stalled = r->stalled || stalled;
        sbx__req_log(r, SBX_LOG_WARN, "attempt %u failed (%s); retry %u of %u in %lld ms", r->attempts, why,
                     r->attempts, r->e->limits.retry_max, (long long)delay);
        schedule_retry(r, delay);
        return;
    }
    finish(r, SBX_E_TRANSPORT, msg);
}

/* Nothing moved on an active short request for its idle period. */
static void stall(sbx__req *r, int64_t period)
{
    char msg[CURL_ERROR_SIZE + 300], ub[600];
    /* A long URL is cut, not the point (the result tested: -O3 warns). */
    if (snprintf(msg, sizeof msg, "%s %s: stalled: nothing came from the server for %lld ms", r->method,
                 shown_url(r, ub, sizeof ub), (long long)period) < 0)
        msg[0] = '\0';
    sbx__req_log(r, SBX_LOG_WARN, "the connection stalled (nothing moved for %lld ms) and is cut", (long long)period);
    attempt_failed(r, msg, "stalled", !r->resend_stopped && not_sent(CURLE_OPERATION_TIMEDOUT, r->easy), true);
}

/* libcurl's words for a failed connect to a unix socket name "localhost
 * port 80"; say which socket, and why. */
static void connect_error(sbx__req *r, CURLcode code, char *buf, size_t cap)
{
    long os = 0;
    curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os);
    if (os > 0)
        snprintf(buf, cap, "cannot connect to the unix socket %s: %s", r->e->unix_path, strerror((int)os));
    else
        snprintf(buf, cap, "cannot connect to the unix socket %s (%s)", r->e->unix_path, curl_easy_strerror(code));
}

/* A 429, or a 5xx of a request that may be repeated: when to try again (ms),
 * or -1 to report the answer as it is. Retry-After (429 and 503) is
 * honoured up to limits.retry_after_max_ms; no wait goes past the deadline. */
static int64_t answer_retry_delay(sbx__req *r, int64_t now)
{
    long http = r->http_status;
    int64_t delay, ra;
    if (r->attempts > r->e->limits.retry_max || r->streamed > 0)
        return -1;
    /* A 429 says the server did not take the request: safe for any. */
    if (http != 429 && !(http >= 500 && http <= 599 && r->idempotent))
        return -1;
    ra = http == 429 || http == 503 ? retry_after_ms(r->retry_after) : -1;
    if (ra > r->e->limits.retry_after_max_ms)
        return -1; /* a long wait is reported, not slept */
    delay = ra >= 0 ? ra : backoff_ms(r->e, r->attempts);
    if (r->deadline && now + delay >= r->deadline)
        return -1;
    return delay;
}

/* A retry for an answer (429, 5xx): the status, the server's Retry-After
 * as honoured, and the wait. */
static void log_answer_retry(sbx__req *r, int64_t delay)
{
    int64_t ra = r->http_status == 429 || r->http_status == 503 ? retry_after_ms(r->retry_after) : -1;
    if (ra >= 0)
        sbx__req_log(r, SBX_LOG_WARN, "attempt %u answered HTTP %ld with Retry-After %g s; retry %u of %u in %lld ms",
                     r->attempts, r->http_status, (double)ra / 1000.0, r->attempts, r->e->limits.retry_max,
                     (long long)delay);
    else
        sbx__req_log(r, SBX_LOG_WARN, "attempt %u answered HTTP %ld; retry %u of %u in %lld ms", r->attempts,
                     r->http_status, r->attempts, r->e->limits.retry_max, (long long)delay);
}

/* An attempt ended (libcurl says so). Retry, or report. */
static void attempt_done(sbx__req *r, CURLcode code)
{
    char msg[CURL_ERROR_SIZE + 600], ub[600], why[CURL_ERROR_SIZE + 300];
    const char *cut;
    int64_t delay;

    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
    if (r->orphan) {
        finish(r, SBX_OK, NULL);
        return;
    }
    if (atomic_load(&r->cancel)) {
        finish(r, SBX_E_CANCELLED, "cancelled");
        return;
    }
    if (r->resent)
        sbx__req_log(r, SBX_LOG_INFO, "the reused connection had closed; attempt %u went on a new one%s", r->attempts,
                     r->resend_stopped ? " and was stopped before it was sent again" : "");
    if (code == CURLE_WRITE_ERROR && r->nomem) {
        r->maybe_sent = true;
        finish(r, SBX_E_NOMEM, SBX__NOMEM_TEXT);
        return;
    }
    if (code != CURLE_OK) {
        bool unsent = !r->resend_stopped && not_sent(code, r->easy);
        if (code == CURLE_WRITE_ERROR && r->too_large) {
            r->maybe_sent = true;
            snprintf(msg, sizeof msg, "the response is larger than %zu bytes", r->body.limit);
            finish(r, SBX_E_BUDGET_EXCEEDED, msg);
            return;
        }
        if (code == CURLE_WRITE_ERROR && r->data_fn) {
            r->maybe_sent = true;
            finish(r, SBX_E_CANCELLED, "the receiver stopped the stream");
            return;
        }
        if (r->resend_stopped)
            snprintf(why, sizeof why, "the connection closed before any answer");
        else if (code == CURLE_COULDNT_CONNECT && r->e->unix_path)
            connect_error(r, code, why, sizeof why);
        else
            snprintf(why, sizeof why, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(code));
        if (snprintf(msg, sizeof msg, "%s %s: %s", r->method, shown_url(r, ub, sizeof ub), why) < 0)
            msg[0] = '\0';
        attempt_failed(r, msg, why, unsent, false);
        return;
    }
    if ((cut = response_cut(r)) != NULL) {
        /* Bytes came back: the request was sent. */
        snprintf(msg, sizeof msg, "%s %s: the response ended before it was complete (%s; HTTP %ld)", r->method,
                 shown_url(r, ub, sizeof ub), cut, r->http_status);
        attempt_failed(r, msg, "the response ended before it was complete", false, false);
        return;
    }
    r->maybe_sent = true;
    if ((delay = answer_retry_delay(r, sbx__mono_ms())) >= 0) {
        log_answer_retry(r, delay);
        schedule_retry(r, delay);
        return;
    }
    finish(r, SBX_OK, NULL);
}

static void check_messages(sbx__engine *e)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
        sbx__req *r = NULL;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r)
            attempt_done(r, m->data.result);
    }
}

/* Cancellations and resumes (when flagged), deadlines and due retries
 * (from the heap), and the queue. */
static void housekeeping(sbx__engine *e)
{
    int64_t now = sbx__mono_ms();
    sbx__req *r, *next;

    if (atomic_exchange(&e->flagged, false)) {
        /* Set from any thread, rarely: a scan is fine. A done callback
         * may free other requests, so the scan restarts after one (the
         * finished request is skipped the next time). */
        for (r = e->reqs; r; r = next) {
            next = r->next;
            if (r->state == R_DONE || r->state == R_NEW)
                continue;
            if (atomic_load(&r->cancel)) {
                finish(r, SBX_E_CANCELLED, "cancelled");
                next = e->reqs;
                continue;
            }
            if (r->abort_st != SBX_OK) {
                sbx_status st = r->abort_st;
                char *m = r->abort_msg;
                r->abort_st = SBX_OK;
                r->abort_msg = NULL;
                r->maybe_sent = r->state == R_ACTIVE || r->attempts > 0;
                finish(r, st, m ? m : sbx_strerror(st));
                sbx__free(m);
                next = e->reqs;
                continue;
            }
            if (r->resume_pending && r->easy) {
                r->resume_pending = false;
                r->paused = false;
                /* Resuming re-delivers the held bytes: the handler may
                 * pause again at once, which is fine. */
                curl_easy_pause(r->easy, CURLPAUSE_CONT);
            }
        }
    }
    while (e->nheap && e->heap[0]->hkey <= now) {
        r = e->heap[0];
        if (r->deadline && now >= r->deadline) {
            char msg[700], ub[600];
            snprintf(msg, sizeof msg, "%s %s: no complete answer in %.1f s, the request's deadline", r->method,
                     shown_url(r, ub, sizeof ub), (double)(now - (r->t_submit ? r->t_submit : now)) / 1000.0);
            r->maybe_sent = r->state == R_ACTIVE || r->attempts > 0;
            finish(r, SBX_E_TIMEOUT, msg); /* out of the heap */
            continue;
        }
        if (r->state == R_ACTIVE && r->slow_at > 0 && now >= r->slow_at) {
            r->slow_at = 0; /* once per attempt */
            timer_update(r);
            if (!r->orphan && !r->early) /* its owner has what it wanted */
                sbx__req_log(r, SBX_LOG_WARN, "slow: attempt %u has been in flight for %lld ms (%s %lld)",
                             r->attempts, (long long)(now - r->t_attempt), "log.slow_request_ms",
                             (long long)r->e->limits.slow_ms);
            continue;
        }
        if (r->state == R_ACTIVE && r->idle_at > 0 && now >= r->idle_at) {
            int64_t p = idle_period(r);
            if (r->paused) /* silent because its owner is not reading */
                r->last_io = now;
            if (p > 0 && now - r->last_io >= p) {
                if (r->idle_fn) {
                    /* Told again after another period of silence. */
                    r->idle_at = now + p;
                    timer_update(r);
                    r->idle_fn(r, r->idle_user); /* may free r */
                } else {
                    stall(r, p);
                }
                continue;
            }
            idle_arm(r); /* bytes came since: look again a period after the last */
            continue;
        }
        /* A retry came due: from now on only its deadline counts (the
         * queue below starts it when the limits allow). */
        heap_remove(r);
        if (r->deadline)
            heap_set(r, r->deadline);
    }
    /* FIFO: requests start in the order they were queued, retries when due. */
    for (r = e->qhead; r; r = next) {
        next = r->qnext;
        if ((r->state == R_QUEUED || (r->state == R_RETRY_WAIT && r->retry_due <= now)) &&
            may_start(e, r)) {
            sbx_status st;
            count(r, +1);
            st = attach_easy(r); /* leaves the queue */
            if (st != SBX_OK) {
                finish(r, st, "cannot start the request");
                next = e->qhead; /* its callback may have changed the queue */
            }
        }
    }
}

static void rearm(sbx__engine *e)
{
    int64_t due = e->curl_due, now = sbx__mono_ms();
    struct itimerspec its;

    if (e->nheap && (due < 0 || e->heap[0]->hkey < due))
        due = e->heap[0]->hkey;
    if (e->timers && (due < 0 || e->timers->due < due))
        due = e->timers->due;
    if (atomic_load(&e->flagged))
        due = now;
    atomic_store(&e->next_due, due);
    /* The timerfd only has to fire no later than due: it is reprogrammed
     * when due is earlier than what is armed (or nothing is). One that
     * fires early costs a process call that finds nothing to do; one that
     * stays armed with nothing due costs the same, once. Most calls move a
     * deadline later and so cost no syscall. */
    if (e->armed >= 0 && e->armed <= now)
        e->armed = -1; /* it has fired */
    if (due < 0 || (e->armed >= 0 && e->armed <= due))
        return;
    memset(&its, 0, sizeof its);
    {
        int64_t d = due - now;
        if (d < 1)
            d = 1; /* 0 would disarm the timer */
        its.it_value.tv_sec = d / 1000;
        its.it_value.tv_nsec = (d % 1000) * 1000000;
        e->armed = now + d;
    }
    timerfd_settime(e->tfd, 0, &its, NULL);
}

/* Requests whose handler has what it needs (SBX__DATA_DONE): reported done
 * now, while libcurl still reads the rest of the response. */
static void report_early(sbx__engine *e)
{
    while (e->early) {
        sbx__req *r = e->early;
        sbx__done_fn fn = r->done_fn;
        e->early = r->early_next;
        r->early_next = NULL;
        r->status = SBX_OK;
        r->maybe_sent = true;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
        r->done_fn = NULL; /* once: the owner frees or releases it there */
        log_end(r, SBX_OK, NULL);
        if (fn)
            fn(r, r->done_user); /* may free r */
    }
}

void sbx__engine_timer_cancel(sbx__engine *e, sbx__timer *t)
{
    if (!t->set)
        return;
    for (sbx__timer **pp = &e->timers; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    t->set = false;
    t->next = NULL;
}

void sbx__engine_timer_set(sbx__engine *e, sbx__timer *t, int64_t due, void (*fn)(sbx__timer *, void *),
                           void *user)
{
    sbx__timer **pp = &e->timers;
    sbx__engine_timer_cancel(e, t);
    t->due = due;
    t->fn = fn;
    t->user = user;
    while (*pp && (*pp)->due <= due)
        pp = &(*pp)->next;
    t->next = *pp;
    *pp = t;
    t->set = true;
    if (!e->in_process)
        rearm(e);
}

/* Timers that are due, each once; one may set or cancel others. */
static void fire_timers(sbx__engine *e)
{
    int64_t now = sbx__mono_ms();
    while (e->timers && e->timers->due <= now) {
        sbx__timer *t = e->timers;
        e->timers = t->next;
        t->next = NULL;
        t->set = false;
        t->fn(t, t->user);
    }
}

sbx_status sbx__engine_process(sbx__engine *e)
{
    struct epoll_event ev[64];
    int n, running;

    e->in_process = true;
    pthread_mutex_lock(&e->ready_lock);
    n = e->nready;
    memcpy(ev, e->ready, (size_t)n * sizeof *ev);
    e->nready = 0;
    pthread_mutex_unlock(&e->ready_lock);
    /* Events handed over by wait may be stale by now; that is harmless
     * (libcurl meets EAGAIN, the eventfd and timerfd are non-blocking). */
    if (n == 0)
        n = epoll_wait(e->epfd, ev, 64, 0);
    for (int i = 0; i < n; i++) {
        int fd = ev[i].data.fd;
        if (fd == e->tfd || fd == e->efd) {
            uint64_t v;
            (void)!read(fd, &v, sizeof v);
            if (fd == e->efd)
                atomic_store(&e->woken, false); /* after the read: no wakeup is lost */
            else
                e->armed = -1;
            continue;
        }
        if (fd >= 0 && (size_t)fd < e->nfds && (e->fds[fd] & FD_IDLE)) {
            /* A parked connection has news (the server closed it): stop
             * listening; libcurl sees it is dead when it next tries it. */
            epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
            e->fds[fd] = 0;
            continue;
        }
        curl_multi_socket_action(e->multi, fd,
                                 (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                                     (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                                     (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0),
                                 &running);
    }
    /* Completions submit follow-up requests (a command's logs after its
     * start); housekeeping hands them to libcurl, whose timer then says
     * "now": a few more rounds here send them in this call instead of a
     * wakeup and another call. Bounded, so a storm cannot starve the
     * caller's loop. */
    for (int round = 0; round < 4; round++) {
        if (e->curl_due >= 0 && sbx__mono_ms() >= e->curl_due) {
            e->curl_due = -1;
            curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_messages(e);
        e->kick = false;
        housekeeping(e);
        /* Starting requests may have completed some at once (a refused connect). */
        check_messages(e);
        if (!e->kick && (e->curl_due < 0 || e->curl_due > sbx__mono_ms()))
            break;
    }
    report_early(e);
    fire_timers(e);
    e->in_process = false;
    rearm(e);
    if (e->kick) { /* submitted in the last round: the next call starts it */
        e->kick = false;
        sbx__engine_notify(e);
    }
    return SBX_OK;
}

bool sbx__engine_in_process(const sbx__engine *e)
{
    return e->in_process;
}

int64_t sbx__engine_timeout(const sbx__engine *e)
{
    int64_t due = atomic_load(&e->next_due), now;
    if (atomic_load(&e->poke))
        return 0;
    if (due < 0)
        return -1;
    now = sbx__mono_ms();
    return due <= now ? 0 : due - now;
}

sbx_status sbx__engine_wait(sbx__engine *e, int64_t timeout_ms)
{
    int64_t t;
    int r;
    atomic_fetch_add(&e->waiters, 1); /* before poke is read (notify) */
    t = sbx__engine_timeout(e);
    if (t < 0 || (timeout_ms >= 0 && timeout_ms < t))
        t = timeout_ms;
    if (t > INT32_MAX)
        t = INT32_MAX;
    /* epoll_wait rather than a poll of the epoll fd: the events it returns
     * are kept for the process call that follows, which then needs no
     * syscall of its own to learn them. */
    do {
        struct epoll_event ev[64];
        r = epoll_wait(e->epfd, ev, 64, (int)t);
        if (r > 0) {
            pthread_mutex_lock(&e->ready_lock);
            if (e->nready == 0) { /* else process has not run: these come back */
                memcpy(e->ready, ev, (size_t)r * sizeof *ev);
                e->nready = r;
            }
            pthread_mutex_unlock(&e->ready_lock);
        }
    } while (r < 0 && errno == EINTR);
    atomic_fetch_sub(&e->waiters, 1);
    if (r < 0)
        return SBX_E_IO;
    return r > 0 || sbx__engine_timeout(e) == 0 ? SBX_OK : SBX_E_AGAIN;
}

/* ---- requests ------------------------------------------------------------------------ */

void sbx__req_set_progress(sbx__req *r, struct sbx__progress *p)
{
    r->prog = p;
}

sbx__req *sbx__req_new(sbx__engine *e, const char *method, const char *url)
{
    sbx__req *r = sbx__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->e = e;
    r->method = sbx__strdup(method);
    r->url = sbx__strdup(url);
    atomic_init(&r->cancel, false);
    r->hidx = NO_HEAP;
    if (!r->method || !r->url) {
        sbx__req_free(r);
        return NULL;
    }
    /* Order does not matter here (the start queue has its own). */
    r->next = e->reqs;
    if (e->reqs)
        e->reqs->prev = r;
    e->reqs = r;
    return r;
}

static sbx_status add_header(sbx__req *r, const char *line)
{
    struct curl_slist *l = curl_slist_append(r->headers, line);
    if (!l)
        return SBX_E_NOMEM;
    r->headers = l;
    return SBX_OK;
}

sbx_status sbx__req_add_header(sbx__req *r, const char *line)
{
    return add_header(r, line);
}

sbx_status sbx__req_add_secret_header(sbx__req *r, const char *line)
{
    /* libcurl copies the line; we keep our copy to wipe both on free. */
    if (sbx__strlist_push(&r->secret_headers, line) != SBX_OK)
        return SBX_E_NOMEM;
    return add_header(r, line);
}

static sbx_status set_content_type(sbx__req *r, const char *content_type)
{
    char *ct = content_type ? sbx__strdup(content_type) : NULL;
    if (content_type && !ct)
        return SBX_E_NOMEM;
    sbx__free(r->content_type_in);
    r->content_type_in = ct;
    return SBX_OK;
}

sbx_status sbx__req_set_body(sbx__req *r, const void *p, size_t n, const char *content_type)
{
    sbx__buf_clear(&r->body_in);
    if (sbx__buf_append(&r->body_in, p, n) != SBX_OK)
        return SBX_E_NOMEM;
    r->has_body = true;
    return set_content_type(r, content_type);
}

sbx_status sbx__req_set_body_stream(sbx__req *r, sbx__read_fn read, sbx__rewind_fn rewind, void *user,
                                    uint64_t size, const char *content_type)
{
    r->read_fn = read;
    r->rewind_fn = rewind;
    r->read_user = user;
    r->body_size = size;
    return set_content_type(r, content_type);
}

void sbx__req_set_idempotent(sbx__req *r, bool yes)
{
    r->idempotent = yes;
}

void sbx__req_set_follow(sbx__req *r, bool yes)
{
    r->follow = yes;
}

void sbx__req_become_follow(sbx__req *r, int64_t mono_ms)
{
    count(r, -1); /* before follow is set: count ignores followers */
    r->follow = true;
    r->slow_at = 0; /* a running command's stream, no longer a slow request */
    r->deadline = mono_ms;
    idle_arm(r); /* a follower's silence is its owner's to judge */
    /* A slot is free: the queue may move. */
    if (r->e)
        due_now(r->e);
}

void sbx__req_set_probe(sbx__req *r)
{
    r->probe = true;
}

void sbx__req_no_idle(sbx__req *r)
{
    r->idle_none = true;
}

void sbx__req_set_idle(sbx__req *r, int64_t ms, sbx__idle_fn fn, void *user)
{
    r->idle_ms = fn ? ms : 0;
    r->idle_fn = fn;
    r->idle_user = user;
    if (r->e)
        idle_arm(r);
}

void sbx__req_abort(sbx__req *r, sbx_status st, const char *msg)
{
    if (!r->e || r->state == R_DONE || r->state == R_NEW || st == SBX_OK)
        return;
    sbx__free(r->abort_msg);
    r->abort_msg = msg ? sbx__strdup(msg) : NULL; /* NULL on no memory: the code's text */
    r->abort_st = st;
    atomic_store(&r->e->flagged, true);
    due_now(r->e);
}

void sbx__req_set_deadline(sbx__req *r, int64_t mono_ms)
{
    r->deadline = mono_ms;
    timer_update(r);
}

sbx_status sbx__req_set_project(sbx__req *r, const char *project)
{
    char *p = project ? sbx__strdup(project) : NULL;
    if (project && !p)
        return SBX_E_NOMEM;
    sbx__free(r->project);
    r->project = p;
    return SBX_OK;
}

void sbx__req_set_stream(sbx__req *r, sbx__data_fn fn, void *user)
{
    r->data_fn = fn;
    r->data_user = user;
}

void sbx__req_on_done(sbx__req *r, sbx__done_fn fn, void *user)
{
    r->done_fn = fn;
    r->done_user = user;
}

sbx_status sbx__req_again(const sbx__req *r, const char *url, sbx__req **out)
{
    sbx__req *n;
    *out = NULL;
    if (!r->e || (r->state != R_DONE && r->state != R_NEW))
        return SBX_E_MISUSE;
    if (r->read_fn && (!r->rewind_fn || r->rewind_fn(r->read_user) != 0))
        return SBX_E_IO;
    if (!(n = sbx__req_new(r->e, r->method, url)))
        return SBX_E_NOMEM;
    /* The lines as given, less Content-Type (the copy's submit adds it)
     * and the secret ones (credentials may have changed since). */
    for (const struct curl_slist *l = r->headers; l; l = l->next) {
        bool secret = false;
        if (strncmp(l->data, "Content-Type: ", 14) == 0)
            continue;
        for (size_t i = 0; i < r->secret_headers.n; i++)
            secret = secret || strcmp(r->secret_headers.v[i], l->data) == 0;
        if (!secret && add_header(n, l->data) != SBX_OK)
            goto fail;
    }
    if (r->has_body && sbx__req_set_body(n, r->body_in.data, r->body_in.len, r->content_type_in) != SBX_OK)
        goto fail;
    if (r->read_fn && sbx__req_set_body_stream(n, r->read_fn, r->rewind_fn, r->read_user, r->body_size,
                                               r->content_type_in) != SBX_OK)
        goto fail;
    if (!r->has_body && !r->read_fn && set_content_type(n, r->content_type_in) != SBX_OK)
        goto fail;
    if (sbx__req_set_project(n, r->project) != SBX_OK)
        goto fail;
    n->idempotent = r->idempotent;
    n->prog = r->prog;
    n->follow = r->follow;
    n->idle_none = r->idle_none;
    n->idle_ms = r->idle_ms;
    n->idle_fn = r->idle_fn;
    n->idle_user = r->idle_user;
    n->data_fn = r->data_fn;
    n->data_user = r->data_user;
    n->done_fn = r->done_fn;
    n->done_user = r->done_user;
    /* A deadline the caller set (or the default one submit gave) stands:
     * the repeat does not buy more time. */
    n->deadline = r->deadline;
    *out = n;
    return SBX_OK;
fail:
    sbx__req_free(n);
    return SBX_E_NOMEM;
}

int64_t sbx__req_deadline(const sbx__req *r)
{
    return r->deadline;
}

sbx_status sbx__req_submit(sbx__req *r)
{
    char line[200];
    if (!r->e || r->state != R_NEW)
        return SBX_E_MISUSE;
    /* Every request says application/json unless its body is something
     * else, as the protocol's clients do. */
    snprintf(line, sizeof line, "Content-Type: %s",
             r->content_type_in ? r->content_type_in : "application/json");
    /* The project's count is found (or made) once, here, where running out
     * of memory can still be reported, rather than on every start. */
    if (r->project && !(r->slot = project_slot(r->e, r->project)))
        return SBX_E_NOMEM;
    if (heap_reserve(r->e, (size_t)r->e->pending + 1) != SBX_OK || add_header(r, line) != SBX_OK)
        return SBX_E_NOMEM;
    /* Long-lived streams end when their command does, not on a default. */
    if (!r->deadline && r->e->limits.timeout_ms > 0 && !r->follow)
        r->deadline = sbx__mono_ms() + r->e->limits.timeout_ms;
    r->state = R_QUEUED;
    r->t_submit = sbx__mono_ms();
    r->e->pending++;
    q_push(r);
    timer_update(r);
    if (atomic_load(&r->cancel)) /* cancelled before it was submitted: never sent */
        atomic_store(&r->e->flagged, true);
    due_now(r->e);
    return SBX_OK;
}

void sbx__req_cancel(sbx__req *r)
{
    atomic_store(&r->cancel, true);
    /* On the driving thread inside process, another round there applies
     * it; a request that is over needs nobody woken. */
    if (!r->e || r->state == R_DONE || r->state == R_NEW)
        return;
    atomic_store(&r->e->flagged, true);
    due_now(r->e);
}

void sbx__req_resume(sbx__req *r)
{
    if (r->paused) {
        r->resume_pending = true;
        if (r->e) {
            atomic_store(&r->e->flagged, true);
            due_now(r->e);
        }
    }
}

void sbx__req_free(sbx__req *r)
{
    if (!r)
        return;
    if (r->e) {
        retire(r);
        unlink_req(r);
    }
    /* libcurl's copies of the header lines hold the token too. */
    for (struct curl_slist *l = r->headers; l; l = l->next)
        sbx__wipe(l->data, strlen(l->data));
    curl_slist_free_all(r->headers);
    sbx__strlist_wipe(&r->secret_headers);
    sbx__buf_wipe_free(&r->body_in);
    sbx__buf_free(&r->body);
    sbx__free(r->content_type_in);
    sbx__free(r->method);
    sbx__free(r->url);
    sbx__free(r->project);
    sbx__free(r->error);
    sbx__free(r->abort_msg);
    sbx__free(r);
}

void sbx__req_release(sbx__req *r, int64_t grace_ms)
{
    int64_t due;
    if (!r)
        return;
    /* Only a request reading its response on this thread's engine can be
     * left to finish; a paused or cancelled one would never drain. */
    if (!r->e || r->state != R_ACTIVE || !r->easy || r->paused || atomic_load(&r->cancel) || grace_ms <= 0) {
        sbx__req_free(r);
        return;
    }
    r->orphan = true;
    r->e->orphans++; /* not pending for anyone: sbx__engine_pending() skips it */
    r->data_fn = NULL;
    r->done_fn = NULL;
    r->idle_fn = NULL; /* its owner may be gone: no more calls */
    r->prog = NULL;    /* nor reports into it */
    due = sbx__mono_ms() + grace_ms;
    if (!r->deadline || due < r->deadline) {
        r->deadline = due;
        timer_update(r);
    }
}

sbx_status sbx__req_status(const sbx__req *r)
{
    return r->status;
}

const char *sbx__req_error(const sbx__req *r)
{
    return r->error ? r->error : "";
}

long sbx__req_http_status(const sbx__req *r)
{
    return r->http_status;
}

const char *sbx__req_body(const sbx__req *r, size_t *len)
{
    if (len)
        *len = r->body.len;
    return r->body.data ? r->body.data : "";
}

const char *sbx__req_content_type(const sbx__req *r)
{
    return r->content_type;
}

bool sbx__req_maybe_sent(const sbx__req *r)
{
    return r->maybe_sent;
}

unsigned sbx__req_attempts(const sbx__req *r)
{
    return r->attempts;
}

uint64_t sbx__req_streamed(const sbx__req *r)
{
    return r->streamed;
}

int64_t sbx__req_silent_ms(const sbx__req *r)
{
    return r->state == R_ACTIVE && !r->paused ? sbx__mono_ms() - r->last_io : 0;
}

const char *sbx__req_url(const sbx__req *r)
{
    return r->url;
}

bool sbx__req_idempotent(const sbx__req *r)
{
    return r->idempotent;
}
