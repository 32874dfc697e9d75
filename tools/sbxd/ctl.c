/* SPDX-License-Identifier: MIT */
/* ctl: framing of the sbxd <-> sbxd-init control protocol, with fd passing. */
#include "ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/alloc.h"

#define HDR_LEN 16u /* u32 len, u32 type, u64 id */

void ctl_msg_init(struct ctl_msg *m, uint32_t type, uint64_t id)
{
    m->type = type;
    m->id = id;
    sbx__buf_init(&m->data, CTL_MAX_FRAME - HDR_LEN);
    m->nfds = 0;
    for (int i = 0; i < CTL_MAX_FDS; i++)
        m->fds[i] = -1;
}

int ctl_put(struct ctl_msg *m, const void *p, size_t n)
{
    uint32_t len;
    if (n > CTL_MAX_FRAME)
        return -1;
    len = (uint32_t)n;
    if (sbx__buf_reserve(&m->data, sizeof len + n) != SBX_OK)
        return -1;
    sbx__buf_append(&m->data, &len, sizeof len);
    sbx__buf_append(&m->data, p, n);
    return 0;
}

int ctl_put_str(struct ctl_msg *m, const char *s)
{
    return ctl_put(m, s, strlen(s));
}

int ctl_put_int(struct ctl_msg *m, long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", v);
    return ctl_put(m, tmp, (size_t)n);
}

int ctl_put_fd(struct ctl_msg *m, int fd)
{
    if (m->nfds >= CTL_MAX_FDS || fd < 0)
        return -1;
    m->fds[m->nfds++] = fd;
    return 0;
}

void ctl_msg_free(struct ctl_msg *m)
{
    sbx__buf_free(&m->data);
    for (int i = 0; i < m->nfds; i++)
        if (m->fds[i] >= 0)
            close(m->fds[i]);
    m->nfds = 0;
}

int ctl_send(int sock, const struct ctl_msg *m)
{
    unsigned char hdr[HDR_LEN];
    uint32_t len = (uint32_t)(HDR_LEN - 4 + m->data.len);
    union {
        char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
        struct cmsghdr align;
    } ctrl;
    struct iovec iov[2];
    struct msghdr mh;
    size_t total = HDR_LEN + m->data.len, sent = 0;

    memcpy(hdr, &len, 4);
    memcpy(hdr + 4, &m->type, 4);
    memcpy(hdr + 8, &m->id, 8);
    while (sent < total) {
        ssize_t w;
        int niov = 0;
        memset(&mh, 0, sizeof mh);
        if (sent < HDR_LEN) {
            iov[niov].iov_base = hdr + sent;
            iov[niov++].iov_len = HDR_LEN - sent;
            if (m->data.len) {
                iov[niov].iov_base = m->data.data;
                iov[niov++].iov_len = m->data.len;
            }
        } else {
            iov[niov].iov_base = m->data.data + (sent - HDR_LEN);
            iov[niov++].iov_len = total - sent;
        }
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)niov;
        /* The fds ride on the first byte only. */
        if (sent == 0 && m->nfds > 0) {
            struct cmsghdr *c;
            memset(&ctrl, 0, sizeof ctrl);
            mh.msg_control = ctrl.buf;
            mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)m->nfds);
            c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)m->nfds);
            memcpy(CMSG_DATA(c), m->fds, sizeof(int) * (size_t)m->nfds);
        }
        w = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        sent += (size_t)w;
    }
    return 0;
}

/* Read exactly n bytes; the first read may collect fds. */
static int read_full(int sock, void *p, size_t n, struct ctl_msg *m, int want_fds)
{
    size_t got = 0;
    while (got < n) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
            struct cmsghdr align;
        } ctrl;
        struct iovec iov = {(char *)p + got, n - got};
        struct msghdr mh;
        ssize_t r;

        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (want_fds && got == 0) {
            mh.msg_control = ctrl.buf;
            mh.msg_controllen = sizeof ctrl.buf;
        }
        r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return got == 0 && want_fds ? 0 : (errno = EPROTO, -1);
        if (mh.msg_controllen) {
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                    continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                int fds[CTL_MAX_FDS];
                if (k > CTL_MAX_FDS)
                    k = CTL_MAX_FDS;
                memcpy(fds, CMSG_DATA(c), k * sizeof(int));
                for (size_t i = 0; i < k; i++) {
                    if (m->nfds < CTL_MAX_FDS)
                        m->fds[m->nfds++] = fds[i];
                    else
                        close(fds[i]);
                }
            }
            if (mh.msg_flags & MSG_CTRUNC) {
                errno = EPROTO;
                return -1;
            }
        }
        got += (size_t)r;
    }
    return 1;
}

int ctl_recv(int sock, struct ctl_msg *m)
{
    unsigned char hdr[HDR_LEN];
    uint32_t len;
    int r;

    ctl_msg_init(m, 0, 0);
    r = read_full(sock, hdr, HDR_LEN, m, 1);
    if (r <= 0)
        goto fail;
    memcpy(&len, hdr, 4);
    memcpy(&m->type, hdr + 4, 4);
    memcpy(&m->id, hdr + 8, 8);
    if (len < HDR_LEN - 4 || len > CTL_MAX_FRAME) {
        errno = EPROTO;
        r = -1;
        goto fail;
    }
    len -= HDR_LEN - 4;
    if (len) {
        if (sbx__buf_reserve(&m->data, len) != SBX_OK) {
            errno = ENOMEM;
            r = -1;
            goto fail;
        }
        r = read_full(sock, m->data.data, len, m, 0);
        if (r <= 0) {
            if (r == 0)
                errno = EPROTO;
            r = -1;
            goto fail;
        }
        m->data.len = len;
        m->data.data[len] = '\0';
    }
    return 1;
fail:
    ctl_msg_free(m);
    return r;
}

void ctl_reader_init(struct ctl_reader *r, const struct ctl_msg *m)
{
    r->p = (const unsigned char *)m->data.data;
    r->left = m->data.len;
}

int ctl_get(struct ctl_reader *r, const char **p, size_t *n)
{
    uint32_t len;
    if (r->left < sizeof len)
        return -1;
    memcpy(&len, r->p, sizeof len);
    if (len > r->left - sizeof len)
        return -1;
    *p = (const char *)r->p + sizeof len;
    *n = len;
    r->p += sizeof len + len;
    r->left -= sizeof len + len;
    return 0;
}

int ctl_get_str(struct ctl_reader *r, char **out)
{
    const char *p;
    size_t n;
    if (ctl_get(r, &p, &n) < 0 || memchr(p, '\0', n))
        return -1;
    *out = sbx__strndup(p, n);
    return *out ? 0 : -1;
}

int ctl_get_int(struct ctl_reader *r, long long *out)
{
    const char *p;
    size_t n;
    char tmp[32], *end;
    if (ctl_get(r, &p, &n) < 0 || n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    errno = 0;
    *out = strtoll(tmp, &end, 10);
    return (*end || errno) ? -1 : 0;
}

int ctl_take_fd(struct ctl_msg *m, int i)
{
    int fd;
    if (i < 0 || i >= m->nfds)
        return -1;
    fd = m->fds[i];
    m->fds[i] = -1;
    return fd;
}
