/* SPDX-License-Identifier: MIT */
/*
 * engine: every HTTP request of a client, on one libcurl multi handle driven
 * through one epoll descriptor. The only module that includes libcurl.
 */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#include "util/clock.h"
#include "util/error.h"

/* Process-wide set-up and tear-down of libcurl, called by sbx_global_init()
 * and sbx_global_cleanup() under their lock. */
sbx_status sbx__engine_global_init(void);
void sbx__engine_global_cleanup(void);

typedef struct sbx__engine sbx__engine;
typedef struct sbx__req sbx__req;

/* Stream data handler's answers. DONE: the handler has all it needs from
 * this response; the request is reported done (SBX_OK, its HTTP status) at
 * the end of this process round while libcurl still reads the rest
 * (discarded), and its done callback, called once, must free or release it
 * (sbx__req_release lets the rest be read so the connection is reused). */
enum { SBX__DATA_OK = 0, SBX__DATA_ABORT = 1, SBX__DATA_PAUSE = 2, SBX__DATA_DONE = 3 };

/* Response bytes of a streamed 2xx response as they arrive. */
typedef int (*sbx__data_fn)(sbx__req *r, const char *data, size_t len, void *user);
/* The request is over (after any retries): success, HTTP error or failure.
 * The engine does not touch the request after calling it; it may be freed
 * inside. */
typedef void (*sbx__done_fn)(sbx__req *r, void *user);
/* A streamed request body: fill buf, return the count, 0 at the end, or
 * SIZE_MAX on failure. rewind restarts it for a retry (0 ok). */
typedef size_t (*sbx__read_fn)(char *buf, size_t n, void *user);
typedef int (*sbx__rewind_fn)(void *user);

/* A request brought nothing for its idle period (see sbx__req_set_idle);
 * called from process, may free or abort r. */
typedef void (*sbx__idle_fn)(sbx__req *r, void *user);

struct sbx__engine_limits {
    unsigned global;        /* short requests in flight */
    unsigned per_project;
    unsigned retry_max;     /* retries of one request */
    int64_t backoff_base_ms; /* the wait before the first retry (doubling, jittered) */
    size_t max_response;    /* largest buffered body */
    int64_t timeout_ms;     /* default deadline of a request, 0 none */
    int64_t idle_ms;        /* a short request silent this long has stalled, 0 never */
    int64_t probe_after_ms; /* a followed stream silent this long is checked, 0 never */
    int64_t probe_timeout_ms; /* how long that check may take */
    int64_t slow_ms;        /* a short request in flight this long is logged as slow, 0 never */
    int64_t retry_after_max_ms; /* a longer Retry-After is reported, not slept */
};

/* Defaults of the limits above (doc/client.md). */
#define SBX__IDLE_MS_DEFAULT 60000
#define SBX__PROBE_AFTER_MS_DEFAULT 30000
#define SBX__PROBE_TIMEOUT_MS_DEFAULT 10000
#define SBX__SLOW_MS_DEFAULT 10000
#define SBX__RETRY_AFTER_MAX_MS_DEFAULT 60000
/* The 2.x SDKs give up past 20 s of Retry-After (doc/client.md). */
#define SBX__RETRY_AFTER_MAX_MS_V2 20000
/* Retries and the first backoff: the 1.x SDKs' count (5), and the 3.x
 * SDKs' (2, after 400-800 ms then 800-1600 ms: a 600 ms base jittered to
 * 300-900 ms, then 600-1800 ms). */
#define SBX__RETRY_MAX_V1 5
#define SBX__BACKOFF_BASE_MS_V1 100
#define SBX__RETRY_MAX_V2 2
#define SBX__BACKOFF_BASE_MS_V2 600

sbx__engine *sbx__engine_new(void);
void sbx__engine_free(sbx__engine *e);
/* All requests go through this unix socket (sbxd), or TCP when NULL. */
sbx_status sbx__engine_set_unix_socket(sbx__engine *e, const char *path);
sbx_status sbx__engine_set_user_agent(sbx__engine *e, const char *ua);
/* "user:password" for every request (an endpoint URL's userinfo, kept out
 * of the URLs so no message can show it), or NULL. Wiped on free. */
sbx_status sbx__engine_set_userpwd(sbx__engine *e, const char *userpwd);
void sbx__engine_set_limits(sbx__engine *e, const struct sbx__engine_limits *l);
void sbx__engine_get_limits(const sbx__engine *e, struct sbx__engine_limits *l);

/* The epoll fd, for a host loop: from then on every notify writes the
 * eventfd, since the loop may be asleep on it. */
int sbx__engine_fd(sbx__engine *e);
/* ms until work is due (0 now, -1 none). Readable from any thread. */
int64_t sbx__engine_timeout(const sbx__engine *e);
/* Ready I/O, timers, retries, queue; done callbacks run here. */
sbx_status sbx__engine_process(sbx__engine *e);
/* Block until the fd is readable or something is due, at most timeout_ms
 * (-1: no limit). Returns SBX_OK, SBX_E_TIMEOUT, or SBX_E_IO (poll failed).
 * No callbacks. */
sbx_status sbx__engine_wait(sbx__engine *e, int64_t timeout_ms);
/* Make a sleeping sbx__engine_wait (or host loop) return: always writes the
 * eventfd (sbx_client_wakeup). */
void sbx__engine_wakeup(sbx__engine *e);
/* Work is due: the next wait returns at once; the eventfd is written only
 * if someone may be asleep on the fd. Any thread. */
void sbx__engine_notify(sbx__engine *e);
/* Called first by each process round of the owner, before it looks at any
 * flag a notifier sets: a notify after this is seen by the next wait. */
void sbx__engine_take_poke(sbx__engine *e);
/* Whether the calling thread is inside sbx__engine_process (a callback of
 * the library's own): driving the engine from there would re-enter it. */
bool sbx__engine_in_process(const sbx__engine *e);
/* Requests not done yet. */
unsigned sbx__engine_pending(const sbx__engine *e);

/* ---- timers ---- */

/* A callback at a time, run by sbx__engine_process on the driving thread
 * (the job layer's soft timeouts and grace periods). The owner embeds it
 * and keeps it alive while it is set. */
typedef struct sbx__timer sbx__timer;
struct sbx__timer {
    int64_t due;                       /* monotonic ms */
    void (*fn)(sbx__timer *t, void *user);
    void *user;
    sbx__timer *next;
    bool set;
};
/* (Re)arm t for due (monotonic ms); fn runs once, at or after due. */
void sbx__engine_timer_set(sbx__engine *e, sbx__timer *t, int64_t due, void (*fn)(sbx__timer *, void *),
                           void *user);
/* Disarm t (harmless when it is not set). */
void sbx__engine_timer_cancel(sbx__engine *e, sbx__timer *t);

/* ---- logging ---- */

/* The client's log hook; level is an sbx_log_level. */
typedef void (*sbx__log_fn)(int level, const char *msg, void *user);
/* Messages at min_level and above go to fn (NULL: nowhere). */
void sbx__engine_set_log(sbx__engine *e, sbx__log_fn fn, void *user, int min_level);
/* Whether a message at this level would go anywhere now: a hook is set,
 * the level passes, and we are inside sbx__engine_process, the one place
 * (on the driving thread) where callbacks may run. */
bool sbx__engine_logs(const sbx__engine *e, int level);
/* One line to the hook, when sbx__engine_logs; the endpoint's
 * user:password is scrubbed from it. */
void sbx__engine_log(sbx__engine *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, prefixed by the request's method and path (never its host or
 * query string). */
void sbx__req_log(sbx__req *r, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- requests ---- */

sbx__req *sbx__req_new(sbx__engine *e, const char *method, const char *url);
sbx_status sbx__req_add_header(sbx__req *r, const char *line);
/* Replace a secret header (Authorization): wiped on free. */
sbx_status sbx__req_add_secret_header(sbx__req *r, const char *line);
sbx_status sbx__req_set_body(sbx__req *r, const void *p, size_t n, const char *content_type);
/* A body produced by read as it is sent, size bytes long (sent with
 * Content-Length). */
sbx_status sbx__req_set_body_stream(sbx__req *r, sbx__read_fn read, sbx__rewind_fn rewind, void *user,
                                    uint64_t size, const char *content_type);
/* May be sent again after it could have reached the server. */
void sbx__req_set_idempotent(sbx__req *r, bool yes);
/* A long-lived response (command wait, logs): not counted in the limits. */
void sbx__req_set_follow(sbx__req *r, bool yes);
/* A check of a silent server: it goes out on a connection of its own at
 * once, never waiting to share the connection of the request it checks
 * (libcurl's PIPEWAIT holds a new transfer while a connection to the same
 * host has not answered yet and might turn out to multiplex). */
void sbx__req_set_probe(sbx__req *r);
/* A request in flight turned long-lived (a command started in wait mode,
 * once its start line is in): its slot in the limits goes to the queue and
 * its deadline becomes mono_ms (0 none), replacing a default one. */
void sbx__req_become_follow(sbx__req *r, int64_t mono_ms);
/* A request (followed, or short with a slow answer: a create that clones
 * a repository) whose response brings no byte for ms: fn is called (again
 * after every further ms of silence) instead of failing it, since its
 * silence may be legitimate; the owner checks the server. ms 0: never.
 * Time paused by the data handler is not silence. */
void sbx__req_set_idle(sbx__req *r, int64_t ms, sbx__idle_fn fn, void *user);
/* A short request whose answer may legitimately take long with nothing on
 * the wire, when no check of the server is possible: no idle timeout, only
 * its deadline. */
void sbx__req_no_idle(sbx__req *r);
/* End it at the next process with this status and message (its done
 * callback runs then), not retried. Driving thread only. */
void sbx__req_abort(sbx__req *r, sbx_status st, const char *msg);
/* Absolute deadline (sbx__mono_ms()), 0 for the engine's default. */
void sbx__req_set_deadline(sbx__req *r, int64_t mono_ms);
sbx_status sbx__req_set_project(sbx__req *r, const char *project);
/* Stream a 2xx response body to fn instead of buffering it. */
void sbx__req_set_stream(sbx__req *r, sbx__data_fn fn, void *user);
void sbx__req_on_done(sbx__req *r, sbx__done_fn fn, void *user);
/* How far a transfer has come, for sbx_op_get_progress(): written by the
 * driving thread, read from any. Each attempt starts again from 0 (a
 * retried body is sent again); a total is -1 while it is not known. */
struct sbx__progress {
    _Atomic uint64_t sent, received;
    _Atomic int64_t send_total, receive_total;
};
/* Report r's transfer in p (which outlives r; NULL: nowhere). Copies made
 * by sbx__req_again report there too. */
void sbx__req_set_progress(sbx__req *r, struct sbx__progress *p);
/* A copy of a request that is done (or not submitted yet), to be sent to url instead (a 2.x
 * operation repeated on a new session): method, headers other than the
 * secret ones (the caller adds current credentials), body (a streamed one
 * rewound), handlers and deadline as r had them; not submitted. SBX_OK,
 * SBX_E_IO (its body cannot be replayed), SBX_E_MISUSE (r is under way),
 * SBX_E_NOMEM. */
sbx_status sbx__req_again(const sbx__req *r, const char *url, sbx__req **out);
/* Its absolute deadline (sbx__mono_ms()), 0 when none. */
int64_t sbx__req_deadline(const sbx__req *r);
/* Queue it. Fails only on misuse (submitted twice) or memory. */
sbx_status sbx__req_submit(sbx__req *r);
/* Abort it: it finishes with SBX_E_CANCELLED at the next process. */
void sbx__req_cancel(sbx__req *r);
/* Resume a stream paused by its data handler. */
void sbx__req_resume(sbx__req *r);
/* Release it; a request not done is aborted without its callback. */
void sbx__req_free(sbx__req *r);
/* Release it, but let a request that is still reading its response read
 * the rest (discarded, no callbacks) for up to grace_ms, so its connection
 * returns to the pool instead of being closed; the engine frees it then.
 * A request in any other state is freed now. It no longer counts as
 * pending. Driving thread only. */
void sbx__req_release(sbx__req *r, int64_t grace_ms);

/* Results, valid once done. status: SBX_OK when an HTTP response arrived
 * (of any status; see http_status), else SBX_E_TRANSPORT, SBX_E_TIMEOUT,
 * SBX_E_CANCELLED, SBX_E_BUDGET_EXCEEDED (response larger than allowed),
 * SBX_E_NOMEM. */
sbx_status sbx__req_status(const sbx__req *r);
const char *sbx__req_error(const sbx__req *r);
long sbx__req_http_status(const sbx__req *r);
/* The buffered body (also the error body of a streamed request), NUL-terminated. */
const char *sbx__req_body(const sbx__req *r, size_t *len);
const char *sbx__req_content_type(const sbx__req *r);
/* Whether any byte of the request may have reached the server in the
 * attempt that ended the request. */
bool sbx__req_maybe_sent(const sbx__req *r);
unsigned sbx__req_attempts(const sbx__req *r);
bool sbx__req_idempotent(const sbx__req *r);
/* The URL it is sent to (no credentials: the client keeps them out). */
const char *sbx__req_url(const sbx__req *r);
/* Bytes handed to the stream handler. */
uint64_t sbx__req_streamed(const sbx__req *r);
/* ms since the request's current attempt last moved a byte (either way),
 * 0 when it is not in flight or paused by its handler. */
int64_t sbx__req_silent_ms(const sbx__req *r);

#endif /* SBX_ENGINE_H */
