/* SPDX-License-Identifier: MIT */
/* relay: copy bytes both ways between two connected sockets until both end. */
#ifndef SBXD_RELAY_H
#define SBXD_RELAY_H

#include <stdint.h>

/* Returns when both directions are done; closes neither fd. Counts bytes
 * a->b in *ab and b->a in *ba when given. */
void relay(int a, int b, uint64_t *ab, uint64_t *ba);
/* Run fn(arg) on a detached thread; 0 or -1. */
int spawn_detached(void *(*fn)(void *), void *arg);

struct sandbox;
/* A sandbox's egress-proxy and route connections served at once, together:
 * each costs sbxd a thread and a descriptor, which the sandbox's own limits
 * do not bound. Past it a new connection is closed at once. */
#define RELAY_CONNS_MAX 512

/* Accept connections on listen_fd until it is shut down. Each one is served
 * by serve(s, fd, arg) on a thread of its own that holds a reference to s;
 * the fd is closed afterwards. At most RELAY_CONNS_MAX per sandbox. */
void serve_connections(int listen_fd, struct sandbox *s,
                       void (*serve)(struct sandbox *s, int fd, void *arg), void *arg);

#endif /* SBXD_RELAY_H */
