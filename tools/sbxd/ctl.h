/* SPDX-License-Identifier: MIT */
/*
 * The control protocol between sbxd and sbxd-init, the process that runs as
 * PID 1 inside each sandbox. Stream socket, one frame per message:
 *
 *   u32 length of the rest | u32 type | u64 id | fields...
 *
 * where each field is u32 length + bytes. File descriptors travel as
 * SCM_RIGHTS on the sendmsg() that carries the frame's first byte. All
 * integers are host order: both ends are the same machine.
 */
#ifndef SBXD_CTL_H
#define SBXD_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Frames are bounded: argv and env are capped well below this by the API's
 * body limit, and file contents never travel here (fds do). */
#define CTL_MAX_FRAME (4u << 20)
#define CTL_MAX_FDS 4
#define CTL_MAX_FIELDS 140000

enum ctl_type {
    /* sbxd -> init */
    CTL_RUN = 1,        /* fields: sudo, cwd, argc, argv..., env... ; reply detail: the pid */
    CTL_KILL = 2,       /* fields: target RUN id, signal */
    CTL_OPEN_READ = 3,  /* fields: path, cwd ; reply fd */
    CTL_OPEN_WRITE = 4, /* fields: path, cwd, mode ; reply fd (parents created) */
    CTL_MKDIR = 5,      /* fields: path, cwd */
    CTL_CONNECT = 6,    /* fields: port ; reply fd connected to 127.0.0.1:port */
    CTL_LISTEN = 7,     /* fields: port ; reply fd listening on 127.0.0.1:port */
    CTL_PING = 8,
    CTL_FILTER = 9,     /* fields: the seccomp program (struct sock_filter[]), empty = none;
                         * init runs no command before it has one */
    /* init -> sbxd */
    CTL_READY = 100,    /* fields: init pid as seen on the host is unknown: none */
    CTL_REPLY = 101,    /* fields: errno, [detail] ; fds as the request says */
    CTL_EXIT = 102,     /* id = the RUN id ; fields: wait status (after its last output) */
    CTL_OUTPUT = 103,   /* id = the RUN id ; fields: stream (1 stdout, 2 stderr), bytes */
};

/* A frame being built or one received. Fields point into `data`. */
struct ctl_msg {
    uint32_t type;
    uint64_t id;
    sbx__buf data;          /* encoded fields */
    int fds[CTL_MAX_FDS];
    int nfds;
};

void ctl_msg_init(struct ctl_msg *m, uint32_t type, uint64_t id);
/* Append a field; returns 0 or -1 (ENOMEM / frame too large). */
int ctl_put(struct ctl_msg *m, const void *p, size_t n);
int ctl_put_str(struct ctl_msg *m, const char *s);
int ctl_put_int(struct ctl_msg *m, long long v);
int ctl_put_fd(struct ctl_msg *m, int fd);
/* Release the buffer and close any fds still held. */
void ctl_msg_free(struct ctl_msg *m);

/* Send a whole frame (blocking; retries short writes and EINTR). The fds are
 * not closed. Returns 0 or -1 with errno. */
int ctl_send(int sock, const struct ctl_msg *m);

/* Read one frame (blocking). Returns 1 with a frame, 0 at orderly EOF, -1 with
 * errno on error or a malformed frame (EPROTO). Received fds are CLOEXEC and
 * owned by the message. */
int ctl_recv(int sock, struct ctl_msg *m);

/* Walking the fields of a received frame. */
struct ctl_reader {
    const unsigned char *p;
    size_t left;
};
void ctl_reader_init(struct ctl_reader *r, const struct ctl_msg *m);
/* Next field as bytes; returns 0, or -1 when there is none or it is malformed. */
int ctl_get(struct ctl_reader *r, const char **p, size_t *n);
/* Next field as a NUL-free string copied into a fresh allocation (sbx__free). */
int ctl_get_str(struct ctl_reader *r, char **out);
int ctl_get_int(struct ctl_reader *r, long long *out);
/* Take ownership of fd i of the message (-1 if absent). */
int ctl_take_fd(struct ctl_msg *m, int i);

#endif /* SBXD_CTL_H */
