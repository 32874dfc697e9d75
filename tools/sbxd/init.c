/* SPDX-License-Identifier: MIT */
/*
 * sbxd-init: PID 1 inside a sandbox. It starts the sandbox's commands, reaps
 * every process, and performs file and socket operations on sbxd's behalf
 * *inside* the sandbox's namespaces, handing the resulting fds back over the
 * control socket (fd 3). Because paths are resolved here, in the sandbox's
 * own mount namespace, a symlink a command plants can never make sbxd touch a
 * host file. When the control socket closes, init exits and the kernel kills
 * everything in the sandbox's PID namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "ctl.h"
#include "procmask.h"

#define CTL_FD 3
#define SANDBOX_UID 1000
#define SANDBOX_GID 1000

extern char **environ;

/* A command: its output pipes' read ends stay here, and what arrives is
 * forwarded to sbxd as CTL_OUTPUT, so sbxd holds no descriptor per command
 * (it serves many thousands at once). */
struct child {
    pid_t pid;
    uint64_t id;
    int fd[2]; /* stdout, stderr; -1 once at their end */
};

#define OUTPUT_CHUNK 65536
#define DRAIN_ROUNDS 256

static struct child *children;
static size_t nchildren, capchildren;

/* The seccomp program commands run under (CTL_FILTER); none until sbxd has
 * sent one, and until then no command runs. */
static struct sock_filter *filter;
static size_t filter_len; /* instructions */
static bool have_filter;

/* Without cgroups, sbxd's limits are rlimits set on every command
 * (--rlimit-data, --rlimit-nproc); 0 = none. */
static long long rlimit_data, rlimit_nproc;

/* Parse init's options; 0, or -1 on anything unknown. */
static int parse_limits(int argc, char **argv)
{
    for (int i = 0; i < argc; i += 2) {
        long long *v = strcmp(argv[i], "--rlimit-data") == 0    ? &rlimit_data
                       : strcmp(argv[i], "--rlimit-nproc") == 0 ? &rlimit_nproc
                                                                : NULL;
        char *end;
        if (!v || i + 1 >= argc)
            return -1;
        *v = strtoll(argv[i + 1], &end, 10);
        if (*end || *v <= 0)
            return -1;
    }
    return 0;
}

static void die(const char *what)
{
    /* stderr is bwrap's, which sbxd logs. */
    fprintf(stderr, "sbxd-init: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static int track(pid_t pid, uint64_t id, const int fd[2])
{
    if (nchildren == capchildren) {
        size_t cap = capchildren ? capchildren * 2 : 64;
        struct child *c = sbx__realloc(children, cap * sizeof *c);
        if (!c)
            return -1;
        children = c;
        capchildren = cap;
    }
    children[nchildren].pid = pid;
    children[nchildren].id = id;
    children[nchildren].fd[0] = fd[0];
    children[nchildren].fd[1] = fd[1];
    nchildren++;
    return 0;
}

/* Forward one read of stream s (0 stdout, 1 stderr) of c. Returns 1 if
 * bytes went, 0 if none were ready, -1 at the stream's end (closed). */
static int forward(struct child *c, int s)
{
    static char buf[OUTPUT_CHUNK];
    struct ctl_msg m;
    ssize_t n;
    if (c->fd[s] < 0)
        return -1;
    do {
        n = read(c->fd[s], buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0) {
        close(c->fd[s]);
        c->fd[s] = -1;
        return -1;
    }
    ctl_msg_init(&m, CTL_OUTPUT, c->id);
    if (ctl_put_int(&m, s + 1) < 0 || ctl_put(&m, buf, (size_t)n) < 0)
        die("out of memory");
    if (ctl_send(CTL_FD, &m) < 0)
        die("send output");
    ctl_msg_free(&m);
    return 1;
}

static struct child *find_by_id(uint64_t id)
{
    for (size_t i = 0; i < nchildren; i++)
        if (children[i].id == id)
            return &children[i];
    return NULL;
}

static void reply(uint64_t id, int err, int fd, const char *detail)
{
    struct ctl_msg m;
    ctl_msg_init(&m, CTL_REPLY, id);
    if (ctl_put_int(&m, err) < 0 || (detail && ctl_put_str(&m, detail) < 0))
        die("out of memory");
    if (fd >= 0)
        ctl_put_fd(&m, fd);
    if (ctl_send(CTL_FD, &m) < 0)
        die("send");
    if (fd >= 0)
        close(fd);
    m.nfds = 0; /* the fd is closed above */
    ctl_msg_free(&m);
}

/* path resolved against cwd, as the sandbox sees it. */
static char *resolve(const char *path, const char *cwd)
{
    size_t n;
    char *out;
    if (path[0] == '/')
        return sbx__strdup(path);
    n = strlen(cwd) + strlen(path) + 2;
    out = sbx__malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", cwd, path);
    return out;
}

static int mkdir_parents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    return 0;
}

static void exec_child(char **argv, char **envp, const char *cwd, int sudo, int out, int err)
{
    sigset_t none;
    int devnull;
    const char *prog = argv[0];

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    setsid();
    devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(126);
    close_range(3, ~0U, 0);
    /* The child stays as init is, not dumpable, until its filter is in: a
     * sandbox process of the same uid could otherwise ptrace it and skip the
     * filter. "root" for sudo commands: a nested user namespace in which the
     * sandbox user is uid 0, with capabilities only over what the sandbox
     * user already owns; made first, since the filter refuses namespaces. */
    if (sudo && unshare(CLONE_NEWUSER) < 0) {
        dprintf(2, "sbxd: sudo: cannot create a user namespace: %s\n", strerror(errno));
        _exit(126);
    }
    if (rlimit_data > 0) {
        struct rlimit rl = {(rlim_t)rlimit_data, (rlim_t)rlimit_data};
        setrlimit(RLIMIT_DATA, &rl);
    }
    if (rlimit_nproc > 0) {
        struct rlimit rl = {(rlim_t)rlimit_nproc, (rlim_t)rlimit_nproc};
        setrlimit(RLIMIT_NPROC, &rl);
    }
    if (filter_len) {
        struct sock_fprog fprog = {(unsigned short)filter_len, filter};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0) {
            dprintf(2, "sbxd: cannot install the system-call filter: %s\n", strerror(errno));
            _exit(126);
        }
    }
    if (sudo) {
        /* Not dumpable, /proc/self/ is root's: the maps must be ours to
         * write. Whoever attaches now finds the filter already in place. */
        char map[64];
        int fd;
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        if ((fd = open("/proc/self/setgroups", O_WRONLY)) >= 0) {
            (void)!write(fd, "deny", 4);
            close(fd);
        }
        snprintf(map, sizeof map, "0 %d 1", SANDBOX_UID);
        if ((fd = open("/proc/self/uid_map", O_WRONLY)) < 0 || write(fd, map, strlen(map)) < 0) {
            dprintf(2, "sbxd: sudo: cannot map root: %s\n", strerror(errno));
            _exit(126);
        }
        close(fd);
        snprintf(map, sizeof map, "0 %d 1", SANDBOX_GID);
        if ((fd = open("/proc/self/gid_map", O_WRONLY)) < 0 || write(fd, map, strlen(map)) < 0) {
            dprintf(2, "sbxd: sudo: cannot map root group: %s\n", strerror(errno));
            _exit(126);
        }
        close(fd);
    }
    if (chdir(cwd) < 0) {
        dprintf(2, "sbxd: cannot change to %s: %s\n", cwd, strerror(errno));
        _exit(126);
    }
    environ = envp;
    execvp(prog, argv);
    /* The shell's conventions, so a wait keeps its two-line shape. */
    if (errno == ENOENT) {
        dprintf(2, "sbxd: %s: command not found\n", prog);
        _exit(127);
    }
    dprintf(2, "sbxd: %s: %s\n", prog, strerror(errno));
    _exit(126);
}

static void do_run(struct ctl_msg *m)
{
    struct ctl_reader r;
    long long sudo, argc;
    char *cwd = NULL, **argv = NULL, **envp = NULL;
    size_t nenv = 0;
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    struct stat st;
    pid_t pid = -1;
    int e = 0;

    ctl_reader_init(&r, m);
    if (!have_filter) {
        e = EPERM;
        goto done;
    }
    if (ctl_get_int(&r, &sudo) < 0 || ctl_get_str(&r, &cwd) < 0 ||
        ctl_get_int(&r, &argc) < 0 || argc < 1 || argc > CTL_MAX_FIELDS) {
        e = EPROTO;
        goto done;
    }
    argv = sbx__calloc((size_t)argc + 1, sizeof *argv);
    envp = sbx__calloc((size_t)(r.left / 4) + 1, sizeof *envp);
    if (!argv || !envp) {
        e = ENOMEM;
        goto done;
    }
    for (long long i = 0; i < argc; i++)
        if (ctl_get_str(&r, &argv[i]) < 0) {
            e = EPROTO;
            goto done;
        }
    while (r.left > 0)
        if (ctl_get_str(&r, &envp[nenv++]) < 0) {
            e = EPROTO;
            goto done;
        }
    if (stat(cwd, &st) < 0) {
        e = errno;
        goto done;
    }
    if (!S_ISDIR(st.st_mode)) {
        e = ENOTDIR;
        goto done;
    }
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        e = errno;
        goto done;
    }
    pid = fork();
    if (pid < 0) {
        e = errno;
        goto done;
    }
    if (pid == 0)
        exec_child(argv, envp, cwd, (int)sudo, out[1], err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (track(pid, m->id, (int[2]){out[0], err[0]}) < 0) {
        /* Cannot report its exit: do not leave it running untracked. */
        kill(pid, SIGKILL);
        e = ENOMEM;
    } else {
        out[0] = err[0] = -1; /* the child entry's now */
    }
done:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    if (e == 0) {
        char detail[32];
        snprintf(detail, sizeof detail, "%d", (int)pid);
        reply(m->id, 0, -1, detail);
    } else {
        reply(m->id, e, -1, NULL);
    }
    for (size_t i = 0; argv && argv[i]; i++)
        sbx__free(argv[i]);
    for (size_t i = 0; envp && i < nenv; i++)
        sbx__free(envp[i]);
    sbx__free(argv);
    sbx__free(envp);
    sbx__free(cwd);
}

static void do_kill(struct ctl_msg *m)
{
    struct ctl_reader r;
    long long target, sig;
    struct child *c;
    int e = 0;

    ctl_reader_init(&r, m);
    if (ctl_get_int(&r, &target) < 0 || ctl_get_int(&r, &sig) < 0 || sig < 0 || sig >= NSIG) {
        reply(m->id, EINVAL, -1, NULL);
        return;
    }
    c = find_by_id((uint64_t)target);
    if (!c) {
        reply(m->id, ESRCH, -1, NULL);
        return;
    }
    /* The whole process group (the command called setsid), then the leader
     * in case it left its group. */
    if (kill(-c->pid, (int)sig) < 0 && kill(c->pid, (int)sig) < 0)
        e = errno;
    reply(m->id, e, -1, NULL);
}

/* OPEN_READ, OPEN_WRITE and MKDIR: path operations in the sandbox's view. */
static void do_path(struct ctl_msg *m)
{
    struct ctl_reader r;
    char *path = NULL, *cwd = NULL, *full = NULL;
    long long mode = 0644;
    int fd = -1, e = 0;
    struct stat st;

    ctl_reader_init(&r, m);
    if (ctl_get_str(&r, &path) < 0 || ctl_get_str(&r, &cwd) < 0 ||
        (m->type == CTL_OPEN_WRITE && ctl_get_int(&r, &mode) < 0) || path[0] == '\0') {
        e = EINVAL;
        goto done;
    }
    full = resolve(path, cwd);
    if (!full) {
        e = ENOMEM;
        goto done;
    }
    switch (m->type) {
    case CTL_OPEN_READ:
        /* O_NONBLOCK so a FIFO cannot hang us; only regular files are read. */
        fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            e = errno;
        } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        } else {
            fcntl(fd, F_SETFL, 0);
        }
        break;
    case CTL_OPEN_WRITE:
        if (mkdir_parents(full) < 0) {
            e = errno;
            break;
        }
        fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  (mode_t)(mode & 07777));
        if (fd < 0) {
            e = errno;
        } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            e = EINVAL;
        } else {
            fchmod(fd, (mode_t)(mode & 07777));
            fcntl(fd, F_SETFL, 0);
        }
        break;
    case CTL_MKDIR:
        if (mkdir(full, 0755) < 0)
            e = errno;
        break;
    }
done:
    if (e && fd >= 0) {
        close(fd);
        fd = -1;
    }
    reply(m->id, e, fd, NULL);
    sbx__free(path);
    sbx__free(cwd);
    sbx__free(full);
}

/* CONNECT and LISTEN: sockets in the sandbox's network namespace, which
 * sbxd then uses from its own (routes to exposed ports, the egress proxy). */
static void do_socket(struct ctl_msg *m)
{
    struct ctl_reader r;
    long long port;
    struct sockaddr_in a;
    int fd, e = 0, one = 1;

    ctl_reader_init(&r, m);
    if (ctl_get_int(&r, &port) < 0 || port < 0 || port > 65535) {
        reply(m->id, EINVAL, -1, NULL);
        return;
    }
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        reply(m->id, errno, -1, NULL);
        return;
    }
    if (m->type == CTL_CONNECT) {
        /* Bounded: a listener that never accepts must not stall init (and
         * with it every request to this sandbox) for a kernel SYN timeout. */
        fcntl(fd, F_SETFL, O_NONBLOCK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
            if (errno != EINPROGRESS) {
                e = errno;
            } else {
                struct pollfd p = {fd, POLLOUT, 0};
                socklen_t len = sizeof e;
                if (poll(&p, 1, 5000) <= 0)
                    e = ETIMEDOUT;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                    e = errno;
            }
        }
        fcntl(fd, F_SETFL, 0);
    } else {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 256) < 0)
            e = errno;
    }
    if (e) {
        close(fd);
        fd = -1;
    }
    reply(m->id, e, fd, NULL);
}

static void do_filter(struct ctl_msg *m)
{
    struct ctl_reader r;
    const char *p;
    size_t n;
    int e = 0;

    ctl_reader_init(&r, m);
    if (have_filter || ctl_get(&r, &p, &n) < 0 || n % sizeof *filter != 0 ||
        n / sizeof *filter > BPF_MAXINSNS) {
        e = EINVAL; /* set once: a later message cannot loosen it */
    } else if (n && !(filter = sbx__malloc(n))) {
        e = ENOMEM;
    } else {
        if (n)
            memcpy(filter, p, n);
        filter_len = n / sizeof *filter;
        have_filter = true;
    }
    reply(m->id, e, -1, NULL);
}

static void reap(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        for (size_t i = 0; i < nchildren; i++) {
            if (children[i].pid != pid)
                continue;
            struct ctl_msg m;
            /* Everything it wrote before it exited is in the pipes now; a
             * background child still holding them cannot extend its log. */
            for (int st = 0; st < 2; st++) {
                for (int k = 0; k < DRAIN_ROUNDS && forward(&children[i], st) > 0; k++)
                    ;
                if (children[i].fd[st] >= 0)
                    close(children[i].fd[st]);
                children[i].fd[st] = -1;
            }
            ctl_msg_init(&m, CTL_EXIT, children[i].id);
            if (ctl_put_int(&m, status) < 0 || ctl_send(CTL_FD, &m) < 0)
                die("report exit");
            ctl_msg_free(&m);
            children[i] = children[--nchildren];
            break;
        }
    }
}

/* ---- --join: a second context of a running sandbox --------------------- */

/* fds given by sbxd (launcher keeps them at these numbers). */
enum { J_CTL = 3, J_INFO = 4, J_OUTER_USER = 5, J_PID = 6, J_INNER_USER = 7, J_MNT = 8, J_UTS = 9,
       J_IPC = 10, J_INIT = 11 };

static void join_die(const char *what)
{
    fprintf(stderr, "sbxd-init --join: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void loopback_up(void)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        join_die("socket");
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        join_die("get lo flags");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        join_die("bring lo up");
    close(fd);
}

static void drop_all_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    for (int c = 0; c < 64; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            join_die("drop the bounding set");
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0)
        join_die("capset");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        join_die("no_new_privs");
}

/*
 * Start another init in the namespaces of a running sandbox, by file
 * descriptor only: the sandbox's files are never looked at from the host
 * (bwrap would bind its root again and create mount points through whatever
 * symlinks the sandbox planted there). Order matters: enter the outer user
 * namespace (which owns the mount and PID namespaces, so we hold
 * capabilities over them), the mount, UTS and IPC namespaces, make a
 * network namespace, the PID namespace (for the child), then the
 * inner user namespace (uid 1000), drop every capability and exec init from
 * the descriptor sbxd gave (fd 11).
 */
static int join_main(char **limits)
{
    pid_t pid;
    int status;
    char info[64];

    /* Die with the thread that started us, like bwrap --die-with-parent. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (setns(J_OUTER_USER, CLONE_NEWUSER) < 0)
        join_die("enter the outer user namespace");
    if (setns(J_MNT, CLONE_NEWNS) < 0)
        join_die("enter the mount namespace");
    if (chdir("/") < 0)
        join_die("chdir /");
    if (setns(J_UTS, CLONE_NEWUTS) < 0 || setns(J_IPC, CLONE_NEWIPC) < 0)
        join_die("enter the UTS/IPC namespaces");
    /* A network of its own: sbxd gives it user-mode networking or the
     * egress proxy, as the policy says. */
    if (unshare(CLONE_NEWNET) < 0)
        join_die("create a network namespace");
    loopback_up();
    if (setns(J_PID, CLONE_NEWPID) < 0)
        join_die("enter the PID namespace");
    if (setns(J_INNER_USER, CLONE_NEWUSER) < 0)
        join_die("enter the sandbox user namespace");
    drop_all_caps();
    for (int fd = J_OUTER_USER; fd <= J_IPC; fd++)
        close(fd);

    pid = fork();
    if (pid < 0)
        join_die("fork");
    if (pid == 0) {
        char prog[] = "/.sbxd/init";
        char path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        char *argv[6] = {prog, NULL};
        /* The limit options, passed on to the new init. */
        for (int i = 0; limits[i] && i < 4; i++)
            argv[i + 1] = limits[i];
        char *envp[] = {path, NULL};
        close(J_INFO);
        setsid();
        /* The program sbxd opened, never a path: the sandbox owns its tree
         * and could put another /.sbxd/init there. */
        syscall(SYS_execveat, J_INIT, "", argv, envp, AT_EMPTY_PATH);
        join_die("exec sbxd-init");
    }
    /* What bwrap's --info-fd says, so sbxd reads both the same way. */
    snprintf(info, sizeof info, "{\"child-pid\": %d}\n", (int)pid);
    if (write(J_INFO, info, strlen(info)) < 0)
        join_die("report the pid");
    close(J_INFO);
    close(J_CTL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* ---- --harden: /proc as an OCI runtime leaves it ------------------------ */

static void harden_die(const char *what, const char *path)
{
    fprintf(stderr, "sbxd-init --harden: %s %s: %s\n", what, path, strerror(errno));
    _exit(1);
}

/* Bind path onto itself (or src onto it) and make that mount read-only.
 * A mask (/dev/null) keeps its device: reading it gives nothing, as under
 * an OCI runtime. */
static void ro_mount(const char *src, const char *path)
{
    unsigned long nodev = src ? 0 : MS_NODEV;
    if (mount(src ? src : path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
        harden_die("bind", path);
    if (mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | nodev | MS_NOEXEC, NULL) < 0)
        harden_die("make read-only", path);
}

/*
 * fd 3: the user namespace that owns the sandbox's mount namespace (fd 4).
 * Entering it gives every capability over the sandbox's mounts, which the
 * sandbox's processes (in a user namespace below) never have: they cannot
 * undo these mounts, and seccomp denies them the mount calls anyway. No
 * reliance on bwrap's own heuristic, which skips /proc/sys when it looks
 * unwritable to bwrap.
 */
static int harden_main(void)
{
    struct stat st;

    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (setns(3, CLONE_NEWUSER) < 0)
        harden_die("enter", "the sandbox's user namespace");
    if (setns(4, CLONE_NEWNS) < 0 || chdir("/") < 0)
        harden_die("enter", "the sandbox's mount namespace");
    /* /proc must be the sandbox's own proc mount, not something planted. */
    if (lstat("/proc/self", &st) < 0 || !S_ISLNK(st.st_mode))
        harden_die("find", "/proc");
    for (size_t i = 0; i < sizeof procmask_read_only / sizeof procmask_read_only[0]; i++)
        if (lstat(procmask_read_only[i], &st) == 0)
            ro_mount(NULL, procmask_read_only[i]);
    for (size_t i = 0; i < sizeof procmask_files / sizeof procmask_files[0]; i++)
        if (lstat(procmask_files[i], &st) == 0 && !S_ISDIR(st.st_mode))
            ro_mount("/dev/null", procmask_files[i]);
    for (size_t i = 0; i < sizeof procmask_dirs / sizeof procmask_dirs[0]; i++)
        if (lstat(procmask_dirs[i], &st) == 0 && S_ISDIR(st.st_mode) &&
            mount("tmpfs", procmask_dirs[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,mode=0555") < 0)
            harden_die("mask", procmask_dirs[i]);
    /* No exit handlers: this process sees the sandbox's /proc, where it has
     * no /proc/self (a leak checker's exit handler would fail on it). */
    _exit(0);
}

/* ---- --oneshot: pid 1 of the git fetcher ---------------------------------- */

/*
 * fd 3 is a socket to sbxd. Say 'R' once bwrap has set everything up (we
 * run), wait for 'G' (sbxd hardened /proc and attached the network), then
 * exec the command after "--". bwrap has installed the seccomp filter.
 */
static int oneshot_main(char **argv)
{
    char c = 'R';
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (write(CTL_FD, &c, 1) != 1 || read(CTL_FD, &c, 1) != 1 || c != 'G') {
        fprintf(stderr, "sbxd-init --oneshot: sbxd did not say go\n");
        return 126;
    }
    close(CTL_FD);
    execvp(argv[0], argv);
    fprintf(stderr, "sbxd-init --oneshot: %s: %s\n", argv[0], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
    sigset_t set;
    int sfd;
    struct ctl_msg ready;
    struct stat st;
    struct pollfd *p = NULL;
    size_t capp = 0;

    if (argc >= 2 && strcmp(argv[1], "--join") == 0) {
        if (parse_limits(argc - 2, argv + 2) < 0) {
            fprintf(stderr, "sbxd-init --join: bad options\n");
            return 2;
        }
        return join_main(argv + 2);
    }
    if (argc == 2 && strcmp(argv[1], "--harden") == 0)
        return harden_main();
    if (argc > 3 && strcmp(argv[1], "--oneshot") == 0 && strcmp(argv[2], "--") == 0)
        return oneshot_main(argv + 3);
    if (parse_limits(argc - 1, argv + 1) < 0) {
        fprintf(stderr, "sbxd-init: unknown options (sbxd passes --rlimit-data N, --rlimit-nproc N)\n");
        return 2;
    }
    if (fstat(CTL_FD, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "sbxd-init: run by sbxd only (fd 3 must be its control socket)\n");
        return 2;
    }
    /* Not dumpable: processes of the same uid in the sandbox cannot ptrace
     * init or open /proc/1/fd/3 and speak the control protocol. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* Only the control socket is ours to keep. */
    close_range(CTL_FD + 1, ~0U, 0);
    fcntl(CTL_FD, F_SETFD, FD_CLOEXEC);
    umask(022);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        die("signalfd");

    ctl_msg_init(&ready, CTL_READY, 0);
    if (ctl_send(CTL_FD, &ready) < 0)
        die("send ready");
    ctl_msg_free(&ready);

    /* Commands' pipes: as many descriptors as the hard limit allows. */
    {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    for (;;) {
        size_t np = 2, need = 2 + 2 * nchildren;
        if (need > capp) {
            struct pollfd *v = sbx__realloc(p, need * 2 * sizeof *v);
            if (!v)
                die("out of memory");
            p = v;
            capp = need * 2;
        }
        p[0] = (struct pollfd){CTL_FD, POLLIN, 0};
        p[1] = (struct pollfd){sfd, POLLIN, 0};
        for (size_t i = 0; i < nchildren; i++)
            for (int k = 0; k < 2; k++)
                p[np++] = (struct pollfd){children[i].fd[k], POLLIN, 0}; /* -1 is skipped */
        if (poll(p, np, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        /* Output before exits: reap() sends a command's last output first. */
        for (size_t i = 0, k = 2; i < nchildren; i++)
            for (int sn = 0; sn < 2; sn++, k++)
                if (p[k].revents)
                    forward(&children[i], sn);
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si)
                ;
            reap();
        }
        if (p[0].revents) {
            struct ctl_msg m;
            int r = ctl_recv(CTL_FD, &m);
            if (r == 0)
                return 0; /* sbxd closed the sandbox */
            if (r < 0)
                die("receive");
            switch (m.type) {
            case CTL_RUN: do_run(&m); break;
            case CTL_KILL: do_kill(&m); break;
            case CTL_OPEN_READ:
            case CTL_OPEN_WRITE:
            case CTL_MKDIR: do_path(&m); break;
            case CTL_CONNECT:
            case CTL_LISTEN: do_socket(&m); break;
            case CTL_PING: reply(m.id, 0, -1, NULL); break;
            case CTL_FILTER: do_filter(&m); break;
            default: reply(m.id, ENOSYS, -1, NULL); break;
            }
            ctl_msg_free(&m);
        }
    }
}
