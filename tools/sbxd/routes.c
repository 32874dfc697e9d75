/* SPDX-License-Identifier: MIT */
/*
 * routes: a port listed in a sandbox's `ports` is published as a loopback
 * listener on the host. Each connection asks the sandbox's init to connect to
 * 127.0.0.1:PORT inside the sandbox's network namespace and relays bytes, so
 * it works the same for isolated and host-network sandboxes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/alloc.h"
#include "relay.h"
#include "sbxd.h"

struct route {
    struct sandbox *s;
    int port;          /* inside the sandbox */
    int listen_fd;
    char url[64];
    pthread_t thread;
    bool thread_started;
};

static void serve_route(struct sandbox *s, int fd, void *arg)
{
    struct route *r = arg;
    struct ctl_msg m;
    int inner = -1, ctx;
    char err[256];

    ctx = sandbox_active_ctx(s, err, sizeof err);
    ctl_msg_init(&m, CTL_CONNECT, 0);
    if (ctx >= 0 && ctl_put_int(&m, r->port) == 0 && sandbox_ctl(s, ctx, &m, &inner, NULL) == 0 &&
        inner >= 0)
        relay(fd, inner, NULL, NULL);
    /* Nothing listens on the port (yet): the client sees the connection
     * close, as with any refused upstream behind a proxy. */
    ctl_msg_free(&m);
    if (inner >= 0)
        close(inner);
}

static void *accept_main(void *arg)
{
    struct route *r = arg;
    serve_connections(r->listen_fd, r->s, serve_route, r);
    return NULL;
}

struct route *route_start(struct sandbox *s, int port, char *err, size_t errlen)
{
    struct route *r = sbx__calloc(1, sizeof *r);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;

    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->s = s;
    r->port = port;
    r->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (r->listen_fd < 0 || bind(r->listen_fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(r->listen_fd, 128) < 0 ||
        getsockname(r->listen_fd, (struct sockaddr *)&a, &alen) < 0) {
        snprintf(err, errlen, "cannot publish port %d: %s", port, strerror(errno));
        goto fail;
    }
    snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    if (pthread_create(&r->thread, NULL, accept_main, r) != 0) {
        snprintf(err, errlen, "cannot publish port %d: no thread", port);
        goto fail;
    }
    r->thread_started = true;
    return r;
fail:
    if (r->listen_fd >= 0)
        close(r->listen_fd);
    sbx__free(r);
    return NULL;
}

const char *route_url(struct route *r)
{
    return r->url;
}

void route_stop(struct route *r)
{
    if (!r)
        return;
    shutdown(r->listen_fd, SHUT_RDWR);
    if (r->thread_started)
        pthread_join(r->thread, NULL);
    close(r->listen_fd);
    sbx__free(r);
}
