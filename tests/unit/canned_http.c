/* SPDX-License-Identifier: MIT */
/* canned_http: a one-thread HTTP/1.1 server with canned answers, for unit tests. */
#include "canned_http.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CONNS_MAX 32
#define REQUEST_MAX (8u << 20)

struct conn {
    int fd;
    char *in;
    size_t len, cap;
    bool continued; /* "100 Continue" sent for the request being read */
};

struct canned_http {
    canned_http_fn fn;
    void *user;
    char dir[64], path[128], endpoint[140];
    int lfd, wake[2];
    pthread_t th;
    atomic_uint requests;
    struct conn conns[CONNS_MAX];
    size_t nconns;
};

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the client went away: its next read says so */
        p += w;
        n -= (size_t)w;
    }
}

static const char *find(const char *p, size_t n, const char *what)
{
    return memmem(p, n, what, strlen(what));
}

/* The value of a header in the head [p, p+n), or NULL; *vlen its length. */
static const char *header(const char *p, size_t n, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *line = find(p, n, "\r\n"), *end = p + n;
    while (line && line + 2 < end) {
        const char *s = line + 2, *e = find(s, (size_t)(end - s), "\r\n");
        if (!e)
            e = end;
        if ((size_t)(e - s) > nl && strncasecmp(s, name, nl) == 0 && s[nl] == ':') {
            const char *v = s + nl + 1;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            *vlen = (size_t)(e - v);
            return v;
        }
        line = e;
    }
    return NULL;
}

/* A chunked body from p: 1 and the decoded body when it is all there, 0 when
 * more is needed, -1 when malformed. *used is the bytes it took. */
static int dechunk(const char *p, size_t n, char **body, size_t *blen, size_t *used)
{
    size_t off = 0, out = 0;
    char *b = malloc(n + 1);
    ck_assert_ptr_nonnull(b);
    for (;;) {
        const char *eol = find(p + off, n - off, "\r\n");
        unsigned long sz;
        char *end;
        if (!eol)
            break;
        sz = strtoul(p + off, &end, 16);
        if (end == p + off) {
            free(b);
            return -1;
        }
        off = (size_t)(eol - p) + 2;
        if (sz == 0) {
            /* No trailers: the empty line ends the body. */
            if (n - off < 2)
                break;
            *body = b;
            *blen = out;
            *used = off + 2;
            return 1;
        }
        if (n - off < sz + 2)
            break;
        memcpy(b + out, p + off, sz);
        out += sz;
        off += sz + 2;
    }
    free(b);
    return 0;
}

/* Answer every whole request in c's buffer. false: close the connection. */
static bool serve(struct canned_http *h, struct conn *c)
{
    for (;;) {
        const char *he = find(c->in, c->len, "\r\n\r\n"), *v, *sp1, *sp2;
        size_t head, vlen, used, blen = 0;
        char method[16], target[1024], *body = NULL;
        const char *reply;
        bool chunked;

        if (!he)
            return c->len < REQUEST_MAX;
        head = (size_t)(he - c->in) + 4;
        sp1 = memchr(c->in, ' ', head);
        sp2 = sp1 ? memchr(sp1 + 1, ' ', head - (size_t)(sp1 + 1 - c->in)) : NULL;
        if (!sp1 || !sp2 || (size_t)(sp1 - c->in) >= sizeof method || (size_t)(sp2 - sp1 - 1) >= sizeof target)
            return false;
        memcpy(method, c->in, (size_t)(sp1 - c->in));
        method[sp1 - c->in] = '\0';
        memcpy(target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
        target[sp2 - sp1 - 1] = '\0';

        v = header(c->in, head, "transfer-encoding", &vlen);
        chunked = v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0;
        if (chunked) {
            int r = dechunk(c->in + head, c->len - head, &body, &blen, &used);
            if (r < 0)
                return false;
            if (r == 0)
                goto more;
            used += head;
        } else {
            unsigned long cl = 0;
            if ((v = header(c->in, head, "content-length", &vlen)) != NULL)
                cl = strtoul(v, NULL, 10);
            if (c->len - head < cl)
                goto more;
            body = malloc(cl + 1);
            ck_assert_ptr_nonnull(body);
            memcpy(body, c->in + head, cl);
            blen = cl;
            used = head + cl;
        }
        body[blen] = '\0';
        atomic_fetch_add(&h->requests, 1);
        reply = h->fn(method, target, body, blen, h->user);
        free(body);
        if (!reply)
            return false;
        send_all(c->fd, reply, strlen(reply));
        memmove(c->in, c->in + used, c->len - used);
        c->len -= used;
        c->continued = false;
        continue;
    more:
        v = header(c->in, head, "expect", &vlen);
        if (v && !c->continued && vlen >= 12 && strncasecmp(v, "100-continue", 12) == 0) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            send_all(c->fd, cont, sizeof cont - 1);
            c->continued = true;
        }
        return c->len < REQUEST_MAX;
    }
}

static void drop(struct canned_http *h, size_t i)
{
    close(h->conns[i].fd);
    free(h->conns[i].in);
    h->conns[i] = h->conns[--h->nconns];
}

static void *loop(void *arg)
{
    struct canned_http *h = arg;
    struct pollfd pf[CONNS_MAX + 2];

    for (;;) {
        size_t n = 0;
        pf[n++] = (struct pollfd){.fd = h->wake[0], .events = POLLIN};
        pf[n++] = (struct pollfd){.fd = h->lfd, .events = h->nconns < CONNS_MAX ? POLLIN : 0};
        for (size_t i = 0; i < h->nconns; i++)
            pf[n++] = (struct pollfd){.fd = h->conns[i].fd, .events = POLLIN};
        if (poll(pf, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents)
            break;
        /* Connections first, from the end, as drop() moves the last one. */
        for (size_t i = h->nconns; i-- > 0;) {
            struct conn *c = &h->conns[i];
            ssize_t r;
            if (!pf[2 + i].revents)
                continue;
            if (c->cap - c->len < 4096) {
                c->cap = c->cap ? c->cap * 2 : 16384;
                c->in = realloc(c->in, c->cap);
                ck_assert_ptr_nonnull(c->in);
            }
            r = recv(c->fd, c->in + c->len, c->cap - c->len, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                drop(h, i);
                continue;
            }
            c->len += (size_t)r;
            if (!serve(h, c))
                drop(h, i);
        }
        if (pf[1].revents & POLLIN) {
            int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                h->conns[h->nconns++] = (struct conn){.fd = fd};
        }
    }
    while (h->nconns)
        drop(h, h->nconns - 1);
    return NULL;
}

struct canned_http *canned_http_start(canned_http_fn fn, void *user)
{
    struct canned_http *h = calloc(1, sizeof *h);
    struct sockaddr_un a = {.sun_family = AF_UNIX};

    ck_assert_ptr_nonnull(h);
    h->fn = fn;
    h->user = user;
    snprintf(h->dir, sizeof h->dir, "/tmp/sbx-canned-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(h->dir));
    snprintf(h->path, sizeof h->path, "%s/sock", h->dir);
    snprintf(h->endpoint, sizeof h->endpoint, "unix:%s", h->path);
    ck_assert_uint_lt(strlen(h->path), sizeof a.sun_path);
    memcpy(a.sun_path, h->path, strlen(h->path) + 1);
    h->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ck_assert_int_ge(h->lfd, 0);
    ck_assert_int_eq(bind(h->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(h->lfd, 64), 0);
    ck_assert_int_eq(pipe2(h->wake, O_CLOEXEC), 0);
    ck_assert_int_eq(pthread_create(&h->th, NULL, loop, h), 0);
    return h;
}

const char *canned_http_endpoint(const struct canned_http *h)
{
    return h->endpoint;
}

unsigned canned_http_requests(struct canned_http *h)
{
    return atomic_load(&h->requests);
}

void canned_http_stop(struct canned_http *h)
{
    if (!h)
        return;
    ck_assert_int_eq(write(h->wake[1], "x", 1), 1);
    pthread_join(h->th, NULL);
    close(h->wake[0]);
    close(h->wake[1]);
    close(h->lfd);
    unlink(h->path);
    rmdir(h->dir);
    free(h);
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    default: return "Status";
    }
}

char *canned_http_reply(int status, const char *content_type, const char *body, size_t body_len)
{
    size_t cap = 256 + body_len;
    char *r = malloc(cap + 1);
    int n;
    ck_assert_ptr_nonnull(r);
    n = snprintf(r, cap, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", status,
                 reason(status), content_type, body_len);
    ck_assert(n > 0 && (size_t)n < cap - body_len);
    memcpy(r + n, body, body_len);
    r[(size_t)n + body_len] = '\0';
    return r;
}

char *canned_http_chunked(int status, const char *content_type, const char *const *chunks)
{
    size_t cap = 256, off;
    char *r;
    int n;
    for (size_t i = 0; chunks[i]; i++)
        cap += strlen(chunks[i]) + 32;
    r = malloc(cap);
    ck_assert_ptr_nonnull(r);
    n = snprintf(r, cap, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", status,
                 reason(status), content_type);
    off = (size_t)n;
    for (size_t i = 0; chunks[i]; i++)
        off += (size_t)snprintf(r + off, cap - off, "%zx\r\n%s\r\n", strlen(chunks[i]), chunks[i]);
    snprintf(r + off, cap - off, "0\r\n\r\n");
    return r;
}
