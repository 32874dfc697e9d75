/* SPDX-License-Identifier: MIT */
/*
 * faultd: a fault-injecting HTTP/1.1 proxy in front of sbxd, for the client
 * suites. It runs in the test process (an accept thread and one thread per
 * connection), listens on 127.0.0.1 (a free port) and forwards every request
 * to sbxd's unix socket, one upstream connection per client connection, so
 * keep-alive, chunked (NDJSON) responses and Content-Length request bodies
 * pass through byte for byte. The client side is plain sockets: faultd
 * controls every byte it writes back (resets with SO_LINGER 0, partial
 * writes, stalls, cut streams).
 *
 * Faults are rules: a method and a substring of the request target choose
 * the requests; nth picks the nth of them (1 = the first), 0 every one.
 * Every request is logged, with whether it reached sbxd.
 */
#ifndef SBX_IT_FAULTD_H
#define SBX_IT_FAULTD_H

#include <stdbool.h>

struct sbxd;
struct faultd;

enum fault {
    FAULT_NONE = 0,     /* forward (a rule that only counts, or protects a request) */
    /* ---- answered by faultd, the request NOT forwarded (no side effect) ---- */
    FAULT_STATUS,       /* arg: the HTTP status (500, 502, 503...), JSON error body */
    FAULT_429,          /* 429 with Retry-After: arg seconds (arg < 0: no header) */
    FAULT_RESET,        /* the request is read, then RST: not one response byte */
    FAULT_STALL,        /* nothing is answered; the connection is held (arg ms,
                         * 0 = until the client closes it or faultd stops) */
    /* ---- forwarded (the side effect happened), then the response is spoiled ---- */
    FAULT_STATUS_AFTER, /* sbxd's whole response is discarded, status arg sent instead */
    FAULT_RESET_AFTER,  /* RST as soon as sbxd's response head has arrived */
    FAULT_RESET_MID,    /* the head and arg bytes of the (raw) body, then RST */
    FAULT_TRUNCATE,     /* a chunked body: about arg bytes of it, cut in the middle of a
                         * line (re-chunked cleanly), then FIN without the last chunk */
    FAULT_ONE_BYTE,     /* the whole response, one byte per write() */
    FAULT_DRIP,         /* the whole response, one byte every arg ms */
    FAULT_BAD_JSON,     /* sbxd's response discarded; 200 with a body that is not JSON */
    FAULT_BAD_NDJSON,   /* a chunked body gets an invalid JSON line first */
    FAULT_HUGE_HEADERS, /* sbxd's response with arg bytes of extra header lines */
    FAULT_STALL_AFTER,  /* forwarded, sbxd's answer read and held back; as FAULT_STALL */
    FAULT_CLOSE_AFTER,  /* sbxd's answer relayed intact, then the connection closed (FIN)
                         * although it was kept alive: a server's idle close */
    FAULT_NO_TERMINATOR, /* a chunked body relayed whole but its last (empty) chunk:
                         * the connection is closed instead (arg 0: FIN, 1: RST) */
    FAULT_LATE_TERMINATOR, /* a chunked body relayed whole, its last (empty) chunk
                         * held back arg ms, then sent: the connection stays usable */
    FAULT_CUT_HEAD,     /* forwarded; the first arg bytes of sbxd's response head (0: all
                         * of it but its final empty line), then FIN */
    FAULT_CUT_CHUNK_SIZE, /* forwarded; a chunked body relayed until arg bytes of data
                         * went, then half a chunk-size line ("1", no CRLF) and FIN */
    FAULT_STALL_MID,    /* forwarded; the head, then nothing for arg ms (0: until the
                         * client closes or faultd stops), then the body */
    FAULT_503,          /* 503 with Retry-After: arg seconds (arg < 0: no header), not
                         * forwarded */
    FAULT_NO_FRAMING,   /* forwarded; sbxd's body relayed whole but with neither
                         * Content-Length nor chunked framing, ended by a FIN */
    FAULT_429_MS,       /* 429 with Retry-After: arg milliseconds written as decimal
                         * seconds ("0.300"), as the 2.x SDKs read it */
    FAULT_STOPPING,     /* 422 with error.code sandbox_stopping (arg 0) or
                         * sandbox_snapshotting (arg 1), as sbxd answers for a session
                         * on its way out; not forwarded */
    FAULT_DELAY,        /* forwarded; sbxd's answer held back arg ms (nothing on the
                         * wire meanwhile), then relayed intact: a slow server */
    FAULT_HTML_200,     /* 200 text/html with an HTML page (a proxy's or portal's answer
                         * standing in for the server's), not forwarded */
    FAULT_EMPTY_200,    /* 200 with an empty body and no Content-Type, not forwarded */
};

/* Start a proxy to d's unix socket; asserts success. */
struct faultd *faultd_start(struct sbxd *d);
/* "http://127.0.0.1:PORT" (owned by f). */
const char *faultd_url(const struct faultd *f);
int faultd_port(const struct faultd *f);
/* Stop: close every connection, join the threads, free f. */
void faultd_stop(struct faultd *f);

/* Add a rule. method NULL or "*" is any method. path_substring is looked for
 * in the request target (path and query); a '$' at its end anchors it to the
 * end of the path (before '?'): "/logs$". nth: 1 = the first matching
 * request, 2 = the second... (counted from when the rule is added); 0 =
 * every matching request. The first rule
 * (in the order added) whose nth matches a request applies. */
void faultd_rule(struct faultd *f, const char *method, const char *path_substring, int nth,
                 enum fault kind, long arg);
/* The same fault on the first n matching requests (1..n). */
void faultd_rule_first(struct faultd *f, const char *method, const char *path_substring, int n,
                       enum fault kind, long arg);
/* Remove every rule (the log and counts stay). */
void faultd_clear(struct faultd *f);

/* Requests seen / forwarded to sbxd, matching as in faultd_rule (nth aside). */
int faultd_count(struct faultd *f, const char *method, const char *path_substring);
int faultd_forwarded(struct faultd *f, const char *method, const char *path_substring);
/* Requests matched by a rule that applied a fault (not FAULT_NONE). */
int faultd_faulted(struct faultd *f);
/* Connections accepted so far. */
int faultd_connections(struct faultd *f);
/* Last chunks FAULT_LATE_TERMINATOR is holding back right now. */
int faultd_held(struct faultd *f);
/* Print the request log (method, target, fault, forwarded) to stderr. */
void faultd_dump(struct faultd *f);
/* The name of a fault ("reset_mid"), for messages. */
const char *fault_name(enum fault kind);

#endif /* SBX_IT_FAULTD_H */
