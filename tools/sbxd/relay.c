/* SPDX-License-Identifier: MIT */
/* relay: the byte pump shared by port routes and the egress proxy. */
#include "relay.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

/* Idle connections are kept: a long poll or a websocket may be quiet for a
 * while. Both ends closing, or an error, ends the relay. */
void relay(int a, int b, uint64_t *ab, uint64_t *ba)
{
    char buf[65536];
    bool a_open = true, b_open = true;

    while (a_open || b_open) {
        /* A finished direction's fd is left out (-1): a hung-up socket would
         * otherwise keep poll returning at once. */
        struct pollfd p[2] = {{a_open ? a : -1, POLLIN, 0}, {b_open ? b : -1, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            int from = i == 0 ? a : b, to = i == 0 ? b : a;
            bool *open = i == 0 ? &a_open : &b_open;
            uint64_t *count = i == 0 ? ab : ba;
            ssize_t r;
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = read(from, buf, sizeof buf);
            if (r < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (r <= 0) {
                /* Half-close: pass the end of this direction on. */
                *open = false;
                shutdown(to, SHUT_WR);
                if (r < 0)
                    return;
                continue;
            }
            for (ssize_t off = 0; off < r;) {
                ssize_t w = send(to, buf + off, (size_t)(r - off), MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno == EINTR)
                        continue;
                    return;
                }
                off += w;
            }
            if (count)
                *count += (uint64_t)r;
        }
    }
}

struct spawned {
    void *(*fn)(void *);
    void *arg;
};

static void *spawned_main(void *p)
{
    struct spawned sp = *(struct spawned *)p;
    sbx__free(p);
    sp.fn(sp.arg);
    thread_stack_release();
    return NULL;
}

int spawn_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    pthread_attr_t attr;
    sigset_t all, old;
    struct spawned *sp = sbx__malloc(sizeof *sp);
    int r;

    if (!sp)
        return -1;
    sp->fn = fn;
    sp->arg = arg;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&t, &attr, spawned_main, sp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r != 0)
        sbx__free(sp);
    return r == 0 ? 0 : -1;
}

struct served {
    struct sandbox *s;
    int fd;
    void (*serve)(struct sandbox *s, int fd, void *arg);
    void *arg;
};

static void *served_main(void *p)
{
    struct served *c = p;
    c->serve(c->s, c->fd, c->arg);
    close(c->fd);
    pthread_mutex_lock(&g.lock);
    c->s->relay_conns--;
    sandbox_unref(c->s);
    pthread_mutex_unlock(&g.lock);
    sbx__free(c);
    return NULL;
}

void serve_connections(int listen_fd, struct sandbox *s,
                       void (*serve)(struct sandbox *s, int fd, void *arg), void *arg)
{
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        struct served *c;
        bool over, say = false;
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: the pending connection stays queued
                 * and accept would fail again at once; wait, do not spin. */
                poll(NULL, 0, 100);
                continue;
            }
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* shut down */
        }
        pthread_mutex_lock(&g.lock);
        over = s->relay_conns >= RELAY_CONNS_MAX;
        if (over && mono_ms() - s->relay_refused_at >= 10000) {
            s->relay_refused_at = mono_ms();
            say = true;
        }
        if (!over) {
            s->relay_conns++;
            sandbox_ref(s);
        }
        pthread_mutex_unlock(&g.lock);
        if (over) {
            if (say)
                sbxd_log(LOG_WARN, "sandbox %s: %d proxy and route connections at once, the most it may hold: "
                                   "new ones are closed",
                         s->id, RELAY_CONNS_MAX);
            close(fd);
            continue;
        }
        c = sbx__malloc(sizeof *c);
        if (c) {
            c->s = s;
            c->fd = fd;
            c->serve = serve;
            c->arg = arg;
        }
        if (!c || spawn_detached(served_main, c) < 0) {
            close(fd);
            pthread_mutex_lock(&g.lock);
            s->relay_conns--;
            sandbox_unref(s);
            pthread_mutex_unlock(&g.lock);
            sbx__free(c);
        }
    }
}
