/* SPDX-License-Identifier: MIT */
/*
 * usernet: the outside world for allow-all sandboxes, which never share the
 * host's network namespace (and, restricted to what the policy allows, for
 * custom ones: a database's own protocol does not go through the egress
 * proxy). Each open context (and each git fetch) gets an
 * sbxd-net process: a user-mode TCP/IP stack (libslirp) on a TAP device in
 * the sandbox's network namespace, whose connections leave from the host,
 * but never to the host itself: its loopback, its interfaces' addresses,
 * link-local and the stack's own gateway are refused unless sbxd runs with
 * --unsafe-host-network.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "netpolicy.h"
#include "sbxd.h"

#define READY_TIMEOUT_MS 20000

static char *net_path; /* the sbxd-net program */

int usernet_start(struct sandbox *s, pid_t target, int logfd, bool restricted, pid_t *pid_out, int *fd_out,
                  char *err, size_t errlen)
{
    const struct sandbox_ids *ids = &s->ids;
    char path[64], user[48], allow[] = "--allow-host", user_opt[] = "--user", restrict_opt[] = "--restricted";
    char *argv[7];
    int argc = 0, sv[2] = {-1, -1}, nsfd = -1, userfd = -1, r = -1;
    struct spawn_req req;
    pid_t pid = -1;
    char c = 0;

    *pid_out = 0;
    *fd_out = -1;
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)target);
    if ((nsfd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (userfd = ioctl(nsfd, NS_GET_USERNS)) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "cannot reach the network namespace of %d: %s", (int)target, strerror(errno));
        goto out;
    }
    fcntl(userfd, F_SETFD, FD_CLOEXEC);
    argv[argc++] = net_path;
    if (g.cfg.unsafe_host_net)
        argv[argc++] = allow;
    if (restricted)
        argv[argc++] = restrict_opt;
    if (g.ids.per_sandbox) {
        /* Started as root to open /dev/net/tun, it drops to the sandbox's id. */
        snprintf(user, sizeof user, "%u:%u", (unsigned)ids->uid, (unsigned)ids->gid);
        argv[argc++] = user_opt;
        argv[argc++] = user;
    }
    argv[argc] = NULL;
    memset(&req, 0, sizeof req);
    req.argv = argv;
    req.keep_fds[req.nkeep++] = sv[1];  /* 3 */
    req.keep_fds[req.nkeep++] = userfd; /* 4 */
    req.keep_fds[req.nkeep++] = nsfd;   /* 5 */
    req.stdout_fd = req.stderr_fd = logfd;
    /* The stack works for the sandbox: what it costs is the sandbox's. */
    if (s->limits)
        limits_spawn_setup(s->limits, &req);
    pid = launcher_spawn(&req);
    close(sv[1]);
    sv[1] = -1;
    if (pid < 0) {
        snprintf(err, errlen, "cannot run %s: %s", net_path, strerror(errno));
        goto out;
    }
    {
        struct pollfd p = {sv[0], POLLIN, 0};
        if (poll(&p, 1, READY_TIMEOUT_MS) <= 0 || read(sv[0], &c, 1) != 1 || c != 'R') {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            snprintf(err, errlen, "sbxd-net could not give the sandbox a network (see its log)");
            goto out;
        }
    }
    *pid_out = pid;
    *fd_out = sv[0];
    sv[0] = -1;
    r = 0;
out:
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    if (nsfd >= 0)
        close(nsfd);
    if (userfd >= 0)
        close(userfd);
    return r;
}

void usernet_stop(pid_t pid, int fd)
{
    /* Closing the socket is its signal to go; SIGKILL if it lingers. */
    if (fd >= 0)
        close(fd);
    if (pid > 0) {
        for (int i = 0; i < 100; i++) {
            if (waitpid(pid, NULL, WNOHANG) == pid)
                return;
            usleep(1000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

int usernet_attach(struct sandbox *s, int ctx, pid_t init_pid, int logfd, char *err, size_t errlen)
{
    int r;
    pthread_mutex_lock(&s->ctx[ctx].net_lock);
    r = usernet_start(s, init_pid, logfd, false, &s->ctx[ctx].net_pid, &s->ctx[ctx].net_fd, err, errlen);
    pthread_mutex_unlock(&s->ctx[ctx].net_lock);
    return r;
}

void usernet_detach(struct sandbox *s, int ctx)
{
    pthread_mutex_lock(&s->ctx[ctx].net_lock);
    usernet_stop(s->ctx[ctx].net_pid, s->ctx[ctx].net_fd);
    s->ctx[ctx].net_pid = 0;
    s->ctx[ctx].net_fd = -1;
    s->ctx[ctx].rules_gen = 0;
    pthread_mutex_unlock(&s->ctx[ctx].net_lock);
}

/* The rules of policy p for sbxd-net (netrules.h); whether they allow any
 * address at all. g.lock held (p is the sandbox's). */
static bool rules_text(const struct netpolicy *p, sbx__buf *out, bool *oom)
{
    bool any = false;
    char a[INET_ADDRSTRLEN];
    *oom = false;
    if (p->mode != NP_CUSTOM)
        return false; /* deny-all: nothing (allow-all never runs here) */
    for (size_t i = 0; i < p->nallow; i++)
        if (p->allow[i].family == AF_INET && inet_ntop(AF_INET, p->allow[i].addr, a, sizeof a)) {
            *oom |= sbx__buf_printf(out, "allow %s/%d\n", a, p->allow[i].prefix) != SBX_OK;
            any = true;
        }
    for (size_t i = 0; i < p->ndeny; i++)
        if (p->deny[i].family == AF_INET && inet_ntop(AF_INET, p->deny[i].addr, a, sizeof a))
            *oom |= sbx__buf_printf(out, "deny %s/%d\n", a, p->deny[i].prefix) != SBX_OK;
    for (size_t i = 0; i < p->ndomains; i++) {
        *oom |= sbx__buf_printf(out, "domain %s\n", p->domains[i]) != SBX_OK;
        any = true;
    }
    /* --add-host names resolve without DNS in the sandbox (/etc/hosts). */
    for (size_t i = 0; i < g.cfg.add_hosts.n; i++) {
        const char *e = g.cfg.add_hosts.v[i], *eq = strchr(e, '=');
        struct in_addr v4;
        if (eq && inet_pton(AF_INET, eq + 1, &v4) == 1)
            *oom |= sbx__buf_printf(out, "host %.*s %s\n", (int)(eq - e), e, eq + 1) != SBX_OK;
    }
    return any;
}

/* Send the rules and wait for sbxd-net to have them in force. */
static int send_rules(int fd, const sbx__buf *text, char *err, size_t errlen)
{
    uint8_t head[4] = {(uint8_t)(text->len >> 24), (uint8_t)(text->len >> 16), (uint8_t)(text->len >> 8),
                       (uint8_t)text->len};
    struct pollfd p = {fd, POLLIN, 0};
    char c = 0;
    if (write_all(fd, head, sizeof head) < 0 || (text->len && write_all(fd, text->data, text->len) < 0) ||
        poll(&p, 1, READY_TIMEOUT_MS) <= 0 || read(fd, &c, 1) != 1 || c != 'A') {
        snprintf(err, errlen, "sbxd-net did not take the sandbox's network rules%s",
                 c == 'E' ? " (see sbxd's log)" : "");
        return -1;
    }
    return 0;
}

int usernet_sync_isolated(struct sandbox *s, char *err, size_t errlen)
{
    struct sbx_ctx *c = &s->ctx[NET_ISOLATED];
    sbx__buf text = SBX__BUF_INIT;
    bool needed, oom = false;
    uint64_t gen;
    pid_t init_pid;
    int r = 0;

    if (!net_path || (!g.layers[LAYER_NET].on && !g.layers[LAYER_NET].waived))
        return 0; /* no sbxd-net: the egress proxy is the only way out */
    pthread_mutex_lock(&c->net_lock);
    pthread_mutex_lock(&g.lock);
    gen = s->policy_gen;
    init_pid = c->init_pid;
    if (!c->up || c->rules_gen == gen) {
        pthread_mutex_unlock(&g.lock);
        pthread_mutex_unlock(&c->net_lock);
        return 0;
    }
    needed = rules_text(s->policy, &text, &oom);
    pthread_mutex_unlock(&g.lock);
    if (oom) {
        snprintf(err, errlen, "out of memory");
        r = -1;
    } else if (!needed && c->net_pid == 0) {
        c->rules_gen = gen; /* nothing to allow, and nothing running to close */
    } else if (c->net_pid == 0 &&
               usernet_start(s, init_pid, STDERR_FILENO, true, &c->net_pid, &c->net_fd, err, errlen) < 0) {
        r = -1;
    } else if (send_rules(c->net_fd, &text, err, errlen) < 0) {
        /* Its rules are unknown now (the old ones, none, or the new ones
         * with the answer lost): it goes, and the next sync starts another.
         * Until then the sandbox has no network but the egress proxy. */
        usernet_stop(c->net_pid, c->net_fd);
        c->net_pid = 0;
        c->net_fd = -1;
        r = -1;
    } else {
        c->rules_gen = gen;
    }
    pthread_mutex_unlock(&c->net_lock);
    sbx__buf_free(&text);
    return r;
}

enum netmode usernet_mode(enum np_mode policy_mode)
{
    /* Without the layer, allow-all goes through the egress proxy, which
     * allows every destination but the host: never the host's namespace. */
    return policy_mode == NP_ALLOW_ALL && (g.layers[LAYER_NET].on || g.layers[LAYER_NET].waived)
               ? NET_OPEN
               : NET_ISOLATED;
}

void usernet_probe(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    int fd;

    if (n > 0) {
        char *slash;
        self[n] = '\0';
        if ((slash = strrchr(self, '/'))) {
            *slash = '\0';
            net_path = path_join(self, "sbxd-net");
            if (net_path && access(net_path, X_OK) != 0) {
                sbx__free(net_path);
                net_path = NULL;
            }
        }
    }
    if (!net_path)
        net_path = path_join(SBXD_LIBEXECDIR, "sbxd-net");
    if (!net_path || access(net_path, X_OK) != 0) {
        layer_set(LAYER_NET, false, "sbxd-net was not found next to sbxd or in %s: allow-all sandboxes "
                                    "reach the outside through the egress proxy only", SBXD_LIBEXECDIR);
        return;
    }
    /* The TAP device: root opens it whatever its mode; another user needs
     * the usual 0666. */
    if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) < 0) {
        layer_set(LAYER_NET, false, "cannot open /dev/net/tun (%s): %s; allow-all sandboxes reach the "
                                    "outside through the egress proxy only", strerror(errno),
                  errno == EACCES ? "chmod 0666 /dev/net/tun (its usual mode)" : "modprobe tun");
        return;
    }
    close(fd);
    if (g.cfg.unsafe_host_net) {
        layer_set(LAYER_NET, false, "--unsafe-host-network: every sandbox has a network namespace of its "
                                    "own, but allow-all sandboxes reach this host's loopback and "
                                    "interface addresses, its services and sbxd among them");
        g.layers[LAYER_NET].waived = true;
        return;
    }
    layer_set(LAYER_NET, true, "every sandbox has a network namespace of its own; allow-all gets "
                               "user-mode networking (libslirp) that refuses this host's loopback and "
                               "interface addresses, link-local addresses and sbxd");
}

void usernet_shutdown(void)
{
    sbx__free(net_path);
    net_path = NULL;
}
