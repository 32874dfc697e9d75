/* SPDX-License-Identifier: MIT */
/* http: the libmicrohttpd side of sbxd, and the helpers handlers answer with. */
#ifndef SBXD_HTTP_H
#define SBXD_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>

#include "util/buf.h"

#define HTTP_MAX_SEGS 8

struct http_req;

/* Something a request or a stream waits for (a command's exit, its next
 * output): the waiters on it, under g.lock. */
struct waitq {
    struct waiter *head;
};

struct waiter {
    struct waiter *prev, *next;         /* in q */
    struct waiter *all_prev, *all_next; /* every parked waiter, for the sweep */
    struct waitq *q;                    /* NULL when not parked */
    struct MHD_Connection *conn;
    struct http_req *req;               /* a parked request, or NULL: a stream */
    bool gone;                          /* woken because its client left or sbxd stops */
};

/* What a handler returns after http_park_request: the request is no longer
 * its own (it may already run again on another worker). */
#define HTTP_PARKED ((enum MHD_Result)2)

struct http_req {
    struct MHD_Connection *conn;
    const char *method;
    char *path;             /* as requested, for messages */
    char *split;            /* a copy cut into segs */
    char *segs[HTTP_MAX_SEGS];
    int nseg;
    int proto;              /* 1: /v1 routes; 2: /v2 and /v3 (the 2.x/3.x SDKs) */
    sbx__buf body;          /* JSON bodies, in memory */
    int spool_fd;           /* fs/write bodies, in an unlinked file; -1 otherwise */
    size_t body_len;
    size_t limit;
    bool too_large;
    bool rejected;          /* refused before the body (401, 413) */
    unsigned reject_status; /* answered once the body is drained */
    char *reject_json;
    size_t drained;
    const char *reject_retry; /* Retry-After of the rejection */
    int64_t t0;
    /* Set by a worker, taken by the I/O thread when the request resumes. */
    bool deferred;          /* handled on a worker: replies are kept here */
    bool dispatched;
    bool close;             /* answer nothing: close the connection */
    struct MHD_Response *resp;
    unsigned resp_status;
    struct http_req *wq_next;
    struct waiter w;        /* a long poll's place on a wait queue */
};

enum MHD_Result reply_json(struct http_req *r, unsigned status, json_t *body);
enum MHD_Result reply_error(struct http_req *r, unsigned status, const char *code,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An error with a Retry-After header (429 and the like). */
enum MHD_Result reply_error_retry(struct http_req *r, unsigned status, const char *code,
                                  const char *retry_after, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A streamed body of unknown length (chunked). */
enum MHD_Result reply_stream(struct http_req *r, const char *content_type,
                             MHD_ContentReaderCallback cb, void *cls,
                             MHD_ContentReaderFreeCallback free_cb);
enum MHD_Result reply_fd(struct http_req *r, int fd, uint64_t size, const char *content_type);
/* The fd's contents to its end, length unknown (chunked); the fd is closed. */
enum MHD_Result reply_fd_stream(struct http_req *r, int fd, const char *content_type);
const char *req_query(struct http_req *r, const char *key);
const char *req_header(struct http_req *r, const char *key);
/* Parse the body as a JSON object (an empty body is {}). On failure the
 * 400 has been queued and NULL is returned with *ret set. */
json_t *req_json(struct http_req *r, enum MHD_Result *ret);

/* Whether the client of this connection has gone away (closed or reset):
 * long waits give up for a client nobody is listening for. */
bool http_client_gone(struct MHD_Connection *conn);
/* Wait on cond (with g.lock held) for at most ms; returns like
 * pthread_cond_timedwait. */
int cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int ms);

/* With g.lock held. A long poll: park r on q and return what this returns
 * (HTTP_PARKED) at once; http_wake dispatches r again from the start (or
 * closes it if its client left). */
enum MHD_Result http_park_request(struct http_req *r, struct waitq *q);
/* A stream's content reader with nothing to send: suspend its connection
 * until http_wake, then return 0. It must check w->gone when called again. */
void http_park_stream(struct waiter *w, struct waitq *q, struct MHD_Connection *conn);
/* Wake everyone on q. */
void http_wake(struct waitq *q);
/* Take w off its queue (a stream freed while parked). */
void http_unpark(struct waiter *w);
/* Wake the waiters whose clients have gone (the janitor, every few s). */
void http_sweep(void);
/* The default --max-connections, from RLIMIT_NOFILE (raised to its hard
 * limit first). */
unsigned http_default_max_conns(void);

/* api.c: route a complete request. */
enum MHD_Result api_dispatch(struct http_req *r);
/* Whether this request's body is spooled to a file (fs/write). */
bool api_wants_spool(const char *method, const char *url);

#endif /* SBXD_HTTP_H */
