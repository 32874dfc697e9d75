/* SPDX-License-Identifier: MIT */
/*
 * testnet: the test internet's host side (see testnet.h, testnet.md). It owns
 * the holder's birth (a clone into new namespaces, tied to this process), the
 * choice and creation of the veth pair, the wait for the services, and the
 * ways a test runs commands in or against the fixture. What runs inside the
 * fixture is testnet_services.py's.
 */
#include "testnet.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define START_TIMEOUT_MS 60000  /* generous: valgrind, a loaded machine, initdb */
#define SUBNETS 16384           /* /30s in 10.213.0.0/16 */
#define IF_PREFIX "sbxtn"       /* sbxtn<index>h on the host, sbxtn<index>n inside */

#ifndef TESTNET_SERVICES_PY
#define TESTNET_SERVICES_PY ""
#endif
#ifndef TESTNET_NPM_DIR
#define TESTNET_NPM_DIR ""
#endif

const char *const testnet_names[] = {"www.test", "git.test", "registry.test", "db.test", NULL};

/* ---- small utilities ------------------------------------------------------------ */

static char *vfmt(const char *f, va_list ap)
{
    char *s = NULL;
    ck_assert_msg(vasprintf(&s, f, ap) >= 0, "out of memory");
    return s;
}

/* Read fd to EOF. */
static void buf_read_all(struct membuf *b, int fd)
{
    char chunk[8192];
    ssize_t n;
    membuf_add(b, "", 0);
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        membuf_add(b, chunk, (size_t)n);
    }
}

static int exit_status(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run argv (PATH searched), output (stdout and stderr) into *out if not NULL. */
static int run_argv(const char *const *argv, char **out)
{
    int p[2], st = 0;
    struct membuf b = {0};
    pid_t pid;

    ck_assert(pipe2(p, O_CLOEXEC) == 0);
    fflush(NULL);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    buf_read_all(&b, p[0]);
    close(p[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (out)
        *out = b.p;
    else
        free(b.p);
    return exit_status(st);
}

/* iproute2's ip, also when PATH lacks the sbin directories. */
static const char *ip_exe(void)
{
    static const char *const where[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};
    for (size_t i = 0; i < sizeof where / sizeof *where; i++)
        if (access(where[i], X_OK) == 0)
            return where[i];
    return "ip";
}

static const char *services_script(void)
{
    static char path[4096];
    const char *env = getenv("TESTNET_SERVICES");
    const char *slash;
    if (env && *env)
        return env;
    if (TESTNET_SERVICES_PY[0])
        return TESTNET_SERVICES_PY;
    /* Built by hand: beside this source file. */
    slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*stestnet_services.py", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
    return path;
}

const char *testnet_npm_dir(void)
{
    const char *env = getenv("TESTNET_NPM_DIR");
    return env && *env ? env : TESTNET_NPM_DIR;
}

static const char *python(void)
{
    static char path[4096];
    const char *env = getenv("TESTNET_PYTHON"), *p = getenv("PATH");
    if (env && *env)
        return env;
    /* The system's: a version manager's shim only adds start-up time. */
    if (access("/usr/bin/python3", X_OK) == 0)
        return "/usr/bin/python3";
    while (p && *p) {
        size_t n = strcspn(p, ":");
        snprintf(path, sizeof path, "%.*s/python3", (int)n, p);
        if (n && access(path, X_OK) == 0)
            return path;
        p += n + (p[n] == ':');
    }
    return "/usr/bin/python3";
}

/* ---- choosing the subnet ----------------------------------------------------------------- */

/* Whether any host interface has an IPv4 address in net/prefix. */
static bool host_has_addr_in(uint32_t net, int prefix)
{
    struct ifaddrs *ifa, *i;
    uint32_t mask = prefix ? htonl(~0u << (32 - prefix)) : 0;
    bool found = false;
    ck_assert_msg(getifaddrs(&ifa) == 0, "getifaddrs: %s", strerror(errno));
    for (i = ifa; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
            found = (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr & mask) == (htonl(net) & mask);
    freeifaddrs(ifa);
    return found;
}

static void ip4(char *out, size_t cap, uint32_t a)
{
    struct in_addr in = {htonl(a)};
    ck_assert(inet_ntop(AF_INET, &in, out, (socklen_t)cap) != NULL);
}

/* SIGKILL the holder and reap it: PID 1's death kills every process of the
 * namespace, and the wait returns once they are all gone. Through a pidfd
 * where there is one (valgrind 3.19 has none): a pid is reaped only here, so
 * the plain kill never hits a reused pid either. */
static void kill_holder(struct testnet *t)
{
    siginfo_t si;
    if (t->holder <= 0 || t->holder_reaped)
        return;
    if (t->holder_fd >= 0) {
        syscall(SYS_pidfd_send_signal, t->holder_fd, SIGKILL, NULL, 0);
        while (waitid(P_PIDFD, (id_t)t->holder_fd, &si, WEXITED) < 0 && errno == EINTR)
            ;
        close(t->holder_fd);
        t->holder_fd = -1;
    } else {
        kill(t->holder, SIGKILL);
        while (waitpid(t->holder, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    t->holder_reaped = true;
}

/* The fixture's own error: stop what exists, then fail the test with why. */
static void give_up(struct testnet *t, const char *f, ...) __attribute__((format(printf, 2, 3), noreturn));
static void give_up(struct testnet *t, const char *f, ...)
{
    va_list ap;
    char *msg;
    va_start(ap, f);
    msg = vfmt(f, ap);
    va_end(ap);
    if (t->host_if[0]) {
        const char *del[] = {ip_exe(), "link", "del", t->host_if, NULL};
        run_argv(del, NULL);
    }
    kill_holder(t);
    ck_abort_msg("testnet: %s", msg);
    /* ck_abort_msg does not return (it exits or longjmps). */
    abort();
}

/* Claim a /30 by creating its veth pair: a link name is unique on the host, so
 * two fixtures (in this process or another) can never take the same index.
 * The namespace end is born in the holder's namespace: no moment exists where
 * the pair would outlive the holder. */
static void make_veth(struct testnet *t)
{
    static unsigned counter; /* a second fixture in this process starts elsewhere */
    unsigned base = ((unsigned)getpid() * 8u + counter++ * 97u) % SUBNETS;
    char pid[16], *err = NULL;
    snprintf(pid, sizeof pid, "%d", (int)t->holder);
    for (unsigned k = 0; k < 256; k++) {
        unsigned idx = (base + k) % SUBNETS;
        uint32_t net = (10u << 24) | (213u << 16) | (idx << 2);
        char host_if[16], ns_if[16];
        const char *add[] = {ip_exe(), "link", "add", host_if, "type", "veth", "peer", "name", ns_if,
                             "netns", pid, NULL};
        if (host_has_addr_in(net, 30))
            continue;
        snprintf(host_if, sizeof host_if, IF_PREFIX "%uh", idx);
        snprintf(ns_if, sizeof ns_if, IF_PREFIX "%un", idx);
        free(err);
        err = NULL;
        if (run_argv(add, &err) == 0) {
            snprintf(t->host_if, sizeof t->host_if, "%s", host_if);
            snprintf(t->ns_if, sizeof t->ns_if, "%s", ns_if);
            ip4(t->host_addr, sizeof t->host_addr, net + 1);
            ip4(t->addr, sizeof t->addr, net + 2);
            ip4(t->subnet, sizeof t->subnet, net);
            strcat(t->subnet, "/30");
            free(err);
            return;
        }
        if (!contains(err, "File exists"))
            break;
    }
    {
        int st;
        if (waitpid(t->holder, &st, WNOHANG) == t->holder) {
            t->holder_reaped = true;
            give_up(t, "the holder (%s %s) ended at once, status %d", python(), services_script(), exit_status(st));
        }
    }
    give_up(t, "cannot create a veth pair into the holder's namespace: %s", err ? err : "every name taken");
}

/* ---- the holder ------------------------------------------------------------------------------- */

/* Clone the holder as PID 1 of new namespaces. Between clone and exec the
 * child only makes system calls (no malloc, no stdio): the test process may
 * have threads, and a raw clone runs no fork handlers. */
static void start_holder(struct testnet *t)
{
    int in[2], out[2];
    int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
    const char *argv[] = {python(), "-I", services_script(), NULL};
    sigset_t all;
    long pid;

    ck_assert_msg(access(argv[2], R_OK) == 0, "testnet: no %s (set TESTNET_SERVICES)", argv[2]);
    ck_assert_msg(access(argv[0], X_OK) == 0, "testnet: cannot run %s (set TESTNET_PYTHON)", argv[0]);
    /* stdin a socket: a write to a holder that died gets EPIPE, not SIGPIPE. */
    ck_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) == 0 && pipe2(out, O_CLOEXEC) == 0);
    sigfillset(&all);
    fflush(NULL);
    pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, NULL, NULL,
                  NULL, NULL);
    ck_assert_msg(pid >= 0, "testnet: clone into new namespaces: %s (root needed)", strerror(errno));
    if (pid == 0) {
        struct pollfd p[2] = {{self, POLLIN, 0}, {in[0], POLLRDHUP, 0}};
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The test may have died before the line above: then its pidfd is
         * readable, or (without pidfds) its end of our stdin is closed. Not
         * POLLIN on stdin: the test may have written its line already. */
        close(in[1]);
        poll(self >= 0 ? p : p + 1, self >= 0 ? 2 : 1, 0);
        if ((p[0].revents & POLLIN) || (p[1].revents & (POLLRDHUP | POLLHUP)))
            _exit(1);
        dup2(in[0], 0);
        dup2(out[1], 1);
        syscall(SYS_close_range, 3, ~0u, 0);
        sigprocmask(SIG_UNBLOCK, &all, NULL);
        if (chdir("/") != 0)
            _exit(1);
        execve(argv[0], (char *const *)argv, environ);
        _exit(127);
    }
    if (self >= 0)
        close(self);
    close(in[0]);
    close(out[1]);
    t->holder = (pid_t)pid;
    t->holder_fd = (int)syscall(SYS_pidfd_open, t->holder, 0);
    t->ctl_fd = in[1];
    t->out_fd = out[0];
    snprintf(t->netns, sizeof t->netns, "/proc/%d/ns/net", t->holder);
}

/* Wait for the holder's one line: "READY {json}" or "FAIL why". */
static void wait_ready(struct testnet *t, int64_t deadline)
{
    char line[8192];
    size_t have = 0;
    json_error_t je;
    json_t *j;

    for (;;) {
        struct pollfd p = {t->out_fd, POLLIN, 0};
        int64_t left = deadline - mono_ms();
        ssize_t n;
        if (memchr(line, '\n', have))
            break;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            give_up(t, "the services were not ready within %d ms", START_TIMEOUT_MS);
        n = read(t->out_fd, line + have, sizeof line - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* Its stdout closes as it exits: its status says more. */
            int st = 0;
            for (int i = 0; i < 500 && !t->holder_reaped; i++) {
                if (waitpid(t->holder, &st, WNOHANG) == t->holder)
                    t->holder_reaped = true;
                else
                    usleep(10000);
            }
            give_up(t, "the holder (%s) ended before it was ready, %s %d (its stderr is the test's)",
                    services_script(), t->holder_reaped ? "status" : "still running, pid",
                    t->holder_reaped ? exit_status(st) : t->holder);
        }
        have += (size_t)n;
        line[have] = '\0';
    }
    *strchr(line, '\n') = '\0';
    if (strncmp(line, "READY ", 6) != 0)
        give_up(t, "the fixture could not start: %s", strncmp(line, "FAIL ", 5) == 0 ? line + 5 : line);
    j = json_loads(line + 6, 0, &je);
    if (!j)
        give_up(t, "bad READY line: %s", line);
#define STR(field) snprintf(t->field, sizeof t->field, "%s", json_string_value(json_object_get(j, #field)) ?: "")
    STR(root);
    STR(www);
    STR(scratch);
    STR(git_head);
    STR(git_feature);
    STR(git_tag);
#undef STR
    t->http_port = (int)json_integer_value(json_object_get(j, "http_port"));
    t->git_port = (int)json_integer_value(json_object_get(j, "git_port"));
    t->db_port = (int)json_integer_value(json_object_get(j, "db_port"));
    json_decref(j);
    snprintf(t->host_root, sizeof t->host_root, "/proc/%d/root%s", t->holder, t->root);
    snprintf(t->host_www, sizeof t->host_www, "/proc/%d/root%s", t->holder, t->www);
}

/* A TCP connection from the host, as any client would make it. */
static bool tcp_answers(const char *addr, int port, int timeout_ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
    socklen_t len = sizeof err;
    struct pollfd p;
    bool ok = false;
    ck_assert(fd >= 0);
    inet_pton(AF_INET, addr, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
        ok = true;
    } else if (errno == EINPROGRESS) {
        p = (struct pollfd){fd, POLLOUT, 0};
        ok = poll(&p, 1, timeout_ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    close(fd);
    return ok;
}

struct testnet *testnet_start(unsigned flags)
{
    struct testnet *t = calloc(1, sizeof *t);
    int64_t t0 = mono_ms(), deadline = t0 + START_TIMEOUT_MS;
    char go[8192], *npm_dir;
    const char *up[] = {ip_exe(), "link", "set", NULL, "up", NULL};
    char *err = NULL;
    struct http_resp *r;
    int n;

    ck_assert(t != NULL);
    t->flags = flags;
    t->ctl_fd = t->out_fd = t->holder_fd = -1;
    start_holder(t);
    make_veth(t);
    {
        char cidr[24];
        const char *addr[] = {ip_exe(), "addr", "add", cidr, "dev", t->host_if, NULL};
        snprintf(cidr, sizeof cidr, "%s/30", t->host_addr);
        if (run_argv(addr, &err) != 0)
            give_up(t, "ip addr add %s dev %s: %s", cidr, t->host_if, err);
        free(err);
        up[3] = t->host_if;
        if (run_argv(up, &err) != 0)
            give_up(t, "ip link set %s up: %s", t->host_if, err);
        free(err);
    }
    {
        json_t *dir = json_string(testnet_npm_dir());
        npm_dir = dir ? json_dumps(dir, JSON_ENCODE_ANY) : NULL;
        json_decref(dir);
    }
    n = snprintf(go, sizeof go,
                 "{\"if\": \"%s\", \"addr\": \"%s\", \"prefix\": 30, \"host_addr\": \"%s\", \"subnet\": \"%s\", "
                 "\"db\": %s, \"npm_dir\": %s}\n",
                 t->ns_if, t->addr, t->host_addr, t->subnet, (flags & TESTNET_DB) ? "true" : "false",
                 npm_dir ? npm_dir : "null");
    free(npm_dir);
    if (n < 0 || (size_t)n >= sizeof go)
        give_up(t, "the holder's configuration is too long (TESTNET_NPM_DIR?)");
    if (send(t->ctl_fd, go, (size_t)n, MSG_NOSIGNAL) != n)
        give_up(t, "cannot talk to the holder: %s", strerror(errno));
    wait_ready(t, deadline);

    /* The services answered inside; now from the host, through the veth. */
    while (!tcp_answers(t->addr, t->git_port, 1000) || (t->db_port && !tcp_answers(t->addr, t->db_port, 1000)))
        if (mono_ms() > deadline)
            give_up(t, "git daemon or PostgreSQL at %s does not answer from the host", t->addr);
    r = testnet_http_get(t, "http://www.test/echo", 10000);
    if (r->status != 200)
        give_up(t, "GET http://www.test/echo (%s) from the host: HTTP %ld: %s", t->addr, r->status, r->body);
    http_resp_free(r);

    for (size_t i = 0; testnet_names[i]; i++) {
        snprintf(t->args_buf[i], sizeof t->args_buf[i], "%s=%s", testnet_names[i], t->addr);
        t->args[2 * i] = "--add-host";
        t->args[2 * i + 1] = t->args_buf[i];
    }
    t->t_ready_ms = mono_ms() - t0;
    if (getenv("SBXD_IT_TIMING"))
        fprintf(stderr, "# testnet %s%s: ready in %lld ms\n", t->addr, (flags & TESTNET_DB) ? " (db)" : "",
                (long long)t->t_ready_ms);
    return t;
}

void testnet_stop(struct testnet *t)
{
    int64_t t0 = mono_ms();
    if (!t)
        return;
    /* Deleting one end deletes both, at once; the namespace's own teardown
     * (after the holder's death) would do it too, but asynchronously. */
    if (t->host_if[0]) {
        const char *del[] = {ip_exe(), "link", "del", t->host_if, NULL};
        run_argv(del, NULL);
    }
    kill_holder(t);
    if (getenv("SBXD_IT_TIMING"))
        fprintf(stderr, "# testnet %s: stopped in %lld ms\n", t->addr, (long long)(mono_ms() - t0));
    if (t->ctl_fd >= 0)
        close(t->ctl_fd);
    if (t->out_fd >= 0)
        close(t->out_fd);
    free(t);
}

void testnet_kill(struct testnet *t)
{
    kill_holder(t);
}

const char *const *testnet_sbxd_args(const struct testnet *t)
{
    return t->args;
}

/* ---- host-side HTTP -------------------------------------------------------------------------------- */

struct curl_slist *testnet_curl_resolve(const struct testnet *t)
{
    struct curl_slist *l = NULL;
    for (size_t i = 0; testnet_names[i]; i++) {
        char e[128];
        snprintf(e, sizeof e, "%s:%d:%s", testnet_names[i], t->http_port, t->addr);
        l = curl_slist_append(l, e);
        ck_assert(l != NULL);
    }
    return l;
}

struct http_resp *testnet_http_get(const struct testnet *t, const char *url, long timeout_ms)
{
    struct curl_slist *resolve = testnet_curl_resolve(t);
    struct http_resp *r = http_get_url_resolve(url, timeout_ms, resolve);
    curl_slist_free_all(resolve);
    return r;
}

/* ---- commands in and against the fixture ------------------------------------------------------------ */

/* sh -c cmd in the holder's mount and PID namespaces and, with in_net, its
 * network, through nsenter: it forks into the PID namespace, so whatever the
 * command leaves running dies with the fixture (a process that only joined the
 * network namespace would keep it, and the veth, alive). */
static int fixture_sh(const struct testnet *t, bool in_net, char **out, const char *cmd)
{
    int p[2] = {-1, -1}, st = 0;
    char net[80], mnt[64], pidns[64];
    const char *argv[] = {"nsenter", mnt, pidns, "--", "/bin/sh", "-c", cmd, NULL, NULL};
    struct membuf b = {0};
    pid_t pid;

    ck_assert_msg(t->holder > 0 && !t->holder_reaped, "testnet: the fixture is not running");
    snprintf(mnt, sizeof mnt, "--mount=/proc/%d/ns/mnt", t->holder);
    snprintf(pidns, sizeof pidns, "--pid=/proc/%d/ns/pid", t->holder);
    if (in_net) {
        snprintf(net, sizeof net, "--net=%s", t->netns);
        memmove(argv + 2, argv + 1, 7 * sizeof *argv);
        argv[1] = net;
    }
    if (out)
        ck_assert(pipe2(p, O_CLOEXEC) == 0);
    fflush(NULL);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (out) {
            dup2(p[1], 1);
            dup2(p[1], 2);
        }
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "testnet: cannot run nsenter: %s\n", strerror(errno));
        _exit(127);
    }
    if (out) {
        close(p[1]);
        buf_read_all(&b, p[0]);
        close(p[0]);
        *out = b.p;
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return exit_status(st);
}

int testnet_sh(const struct testnet *t, const char *f, ...)
{
    va_list ap;
    char *cmd;
    int st;
    va_start(ap, f);
    cmd = vfmt(f, ap);
    va_end(ap);
    st = fixture_sh(t, true, NULL, cmd);
    free(cmd);
    return st;
}

int testnet_host_sh(const struct testnet *t, const char *f, ...)
{
    va_list ap;
    char *cmd;
    int st;
    va_start(ap, f);
    cmd = vfmt(f, ap);
    va_end(ap);
    st = fixture_sh(t, false, NULL, cmd);
    free(cmd);
    return st;
}

char *testnet_sh_out(const struct testnet *t, int *status, const char *f, ...)
{
    va_list ap;
    char *cmd, *out = NULL;
    va_start(ap, f);
    cmd = vfmt(f, ap);
    va_end(ap);
    *status = fixture_sh(t, true, &out, cmd);
    free(cmd);
    return out;
}

char *testnet_host_sh_out(const struct testnet *t, int *status, const char *f, ...)
{
    va_list ap;
    char *cmd, *out = NULL;
    va_start(ap, f);
    cmd = vfmt(f, ap);
    va_end(ap);
    *status = fixture_sh(t, false, &out, cmd);
    free(cmd);
    return out;
}
