/* SPDX-License-Identifier: MIT */
/*
 * sandbox: the life of one sandbox. Its filesystem is a host directory
 * (root/) that bwrap binds as "/", with the host's /usr and a few /etc files
 * read-only on top; its processes live in one user and PID namespace whose
 * first process is sbxd-init. Stopping kills that init, which makes the
 * kernel kill everything else in the namespace; a finalizer thread then
 * archives (for a snapshot) and removes the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "mitm.h"
#include "sbxd.h"

#define BOOT_TIMEOUT_MS 60000 /* a saturated host can take long; failing is worse */

const char *sandbox_status_name(enum sandbox_status st)
{
    switch (st) {
    case SBXD_PENDING: return "pending";
    case SBXD_RUNNING: return "running";
    case SBXD_STOPPING: return "stopping";
    case SBXD_STOPPED: return "stopped";
    case SBXD_FAILED: return "failed";
    case SBXD_ABORTED: return "aborted";
    case SBXD_SNAPSHOTTING: return "snapshotting";
    }
    return "failed";
}

static enum sandbox_status status_from_name(const char *s)
{
    static const enum sandbox_status all[] = {SBXD_PENDING, SBXD_RUNNING, SBXD_STOPPING, SBXD_STOPPED,
                                              SBXD_FAILED, SBXD_ABORTED, SBXD_SNAPSHOTTING};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, sandbox_status_name(all[i])) == 0)
            return all[i];
    return SBXD_STOPPED;
}

struct sandbox *sandbox_alloc(void)
{
    struct sandbox *s = sbx__calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->refs = 1;
    s->active_cpu_ms = -1;
    pthread_cond_init(&s->cond, NULL);
    for (int k = 0; k < 2; k++) {
        pthread_mutex_init(&s->ctx[k].send_lock, NULL);
        pthread_mutex_init(&s->ctx[k].net_lock, NULL);
        s->ctx[k].ctl_fd = -1;
        s->ctx[k].net_fd = -1;
        s->ctx[k].init_pidfd = -1;
    }
    s->ids.lock_fd = -1;
    s->policy_gen = 1;
    return s;
}

void sandbox_remove_state(struct sandbox *s)
{
    char rel[96], *dir;
    snprintf(rel, sizeof rel, "sandboxes/%s", s->id);
    dir = path_join(g.cfg.state_dir, rel);
    if (dir)
        rm_rf(dir);
    sbx__free(dir);
}

struct sandbox *sandbox_find(const char *id)
{
    for (struct sandbox *s = g.sandboxes; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

void sandbox_ref(struct sandbox *s)
{
    s->refs++;
}

static void sandbox_free(struct sandbox *s)
{
    struct command *c = s->commands;
    while (c) {
        struct command *next = c->next;
        c->sbx = NULL;
        command_unref(c);
        c = next;
    }
    sbx__free(s->project_id);
    sbx__free(s->name);
    sbx__free(s->runtime);
    sbx__free(s->requested_runtime);
    sbx__free(s->source_snapshot_id);
    netpolicy_free(s->policy);
    sbx__strlist_wipe(&s->env);
    sbx__free(s->root);
    sbx__free(s->stop_reason);
    ids_release(&s->ids);
    for (int i = 0; i < 2; i++) {
        pthread_mutex_destroy(&s->ctx[i].send_lock);
        pthread_mutex_destroy(&s->ctx[i].net_lock);
    }
    pthread_cond_destroy(&s->cond);
    sbx__free(s);
}

void sandbox_unref(struct sandbox *s)
{
    if (--s->refs == 0)
        sandbox_free(s);
}

/* ---- the root filesystem ---------------------------------------------- */

/* Host directories mounted read-only, and the top-level names that are
 * symlinks into /usr on merged-/usr systems (recreated, not bound). */
static const char *const sys_top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
static const char *const etc_binds[] = {"ssl", "ca-certificates", "alternatives",
                                        "ld.so.conf.d", "ld.so.cache"};
static const char *const etc_copies[] = {"nsswitch.conf", "host.conf", "gai.conf",
                                         "protocols", "services", "ld.so.conf", "localtime",
                                         "os-release", "mime.types", "bash.bashrc", "profile",
                                         "inputrc", "debian_version"};

static int put_file(const char *root, const char *rel, const char *data, mode_t mode)
{
    char *p = path_join(root, rel);
    int r;
    if (!p)
        return -1;
    r = write_file(p, data, strlen(data), mode);
    sbx__free(p);
    return r;
}

static int copy_host_file(const char *root, const char *name)
{
    char src[256];
    size_t len;
    char *data, *dst;
    int r;

    snprintf(src, sizeof src, "/etc/%s", name);
    data = read_file(src, 1 << 20, &len);
    if (!data)
        return 0; /* absent on this host: fine */
    snprintf(src, sizeof src, "etc/%s", name);
    dst = path_join(root, src);
    r = dst ? write_file(dst, data, len, 0644) : -1;
    sbx__free(dst);
    sbx__free(data);
    return r;
}

/* /etc/hosts: the sandbox's own names, then --add-host entries. */
static int write_hosts(struct sandbox *s, const char *hostname)
{
    sbx__buf b = SBX__BUF_INIT;
    int r;
    if (sbx__buf_printf(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                            "127.0.1.1\t%s\n", hostname) != SBX_OK)
        return -1;
    for (size_t i = 0; i < g.cfg.add_hosts.n; i++) {
        const char *e = g.cfg.add_hosts.v[i], *eq = strchr(e, '=');
        if (sbx__buf_printf(&b, "%s\t%.*s\n", eq + 1, (int)(eq - e), e) != SBX_OK) {
            sbx__buf_free(&b);
            return -1;
        }
    }
    r = put_file(s->root, "etc/hosts", b.data, 0644);
    sbx__buf_free(&b);
    return r;
}

int sandbox_prepare_root(struct sandbox *s, char *err, size_t errlen)
{
    static const struct { const char *path; mode_t mode; } dirs[] = {
        {"usr", 0755}, {"etc", 0755}, {"home", 0755}, {"home/" SBXD_USER, 0755},
        {"vercel", 0755}, {"vercel/sandbox", 0755}, {"tmp", 01777}, {"var", 0755},
        {"var/tmp", 01777}, {"run", 0755}, {"opt", 0755}, {"root", 0700}, {".sbxd", 0755},
        {".sbxd/shm", 01777}, {"proc", 0755}, {"dev", 0755},
    };
    char hostname[64], line[96];
    char *p, *dir = NULL;

    /* STATE/sandboxes/ID holds records only sbxd reads; its root/ is the
     * sandbox's, reachable by the sandbox's id alone. */
    if (!(dir = sbx__strdup(s->root)))
        goto fail;
    *strrchr(dir, '/') = '\0';
    if (mkdir_p(dir, 0711) < 0 || chmod(dir, 0711) < 0)
        goto fail;
    if (g.layers[LAYER_DISK].on) {
        int64_t t0 = mono_us();
        if (!(s->disk = disk_create(s, err, errlen))) {
            sbx__free(dir);
            return -1;
        }
        s->setup_us[0] = mono_us() - t0;
    } else if (mkdir(s->root, 0700) < 0 && errno != EEXIST) {
        goto fail;
    }
    if (chmod(s->root, 0700) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof sys_top / sizeof sys_top[0]; i++) {
        char host[64], target[256];
        struct stat st;
        ssize_t n;
        snprintf(host, sizeof host, "/%s", sys_top[i]);
        if (lstat(host, &st) < 0)
            continue;
        p = path_join(s->root, sys_top[i]);
        if (!p)
            goto fail;
        if (S_ISLNK(st.st_mode) && (n = readlink(host, target, sizeof target - 1)) > 0) {
            target[n] = '\0';
            if (symlink(target, p) < 0 && errno != EEXIST) {
                sbx__free(p);
                goto fail;
            }
        } else if (S_ISDIR(st.st_mode) && mkdir(p, 0755) < 0 && errno != EEXIST) {
            sbx__free(p);
            goto fail;
        }
        sbx__free(p);
    }
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        p = path_join(s->root, dirs[i].path);
        if (!p || (mkdir(p, dirs[i].mode) < 0 && errno != EEXIST)) {
            sbx__free(p);
            goto fail;
        }
        chmod(p, dirs[i].mode); /* mkdir applies the umask */
        sbx__free(p);
    }
    snprintf(hostname, sizeof hostname, "%.20s", s->id);
    if (put_file(s->root, "etc/passwd",
                 "root:x:0:0:root:/root:/bin/bash\n" SBXD_USER ":x:1000:1000::" SBXD_HOME
                 ":/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                 0644) < 0 ||
        put_file(s->root, "etc/group", "root:x:0:\n" SBXD_USER ":x:1000:\nnogroup:x:65534:\n",
                 0644) < 0 ||
        write_hosts(s, hostname) < 0)
        goto fail;
    snprintf(line, sizeof line, "%s\n", hostname);
    if (put_file(s->root, "etc/hostname", line, 0644) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof etc_copies / sizeof etc_copies[0]; i++)
        if (copy_host_file(s->root, etc_copies[i]) < 0)
            goto fail;
    /* Open networking: slirp's resolver. Isolated contexts have no route to
     * it and fail fast; they reach names through the egress proxy. */
    if (put_file(s->root, "etc/resolv.conf", "nameserver " USERNET_DNS "\n", 0644) < 0)
        goto fail;
    if (ids_chown_tree(s->root, &s->ids) < 0)
        goto fail;
    sbx__free(dir);
    return 0;
fail:
    snprintf(err, errlen, "cannot lay out the sandbox's filesystem under %s: %s", s->root,
             strerror(errno));
    sbx__free(dir);
    return -1;
}

/* ---- starting a context ------------------------------------------------- */

static int add(sbx__strlist *a, const char *s)
{
    return sbx__strlist_push(a, s) == SBX_OK ? 0 : -1;
}

static int add3(sbx__strlist *a, const char *x, const char *y, const char *z)
{
    return add(a, x) || add(a, y) || (z && add(a, z)) ? -1 : 0;
}

/* The first context of a sandbox: bwrap makes every namespace, its network
 * namespace included (sbxd-net gives it the outside when it is open). /dev
 * is read-only but for /dev/shm, which lives in the sandbox's tree and so
 * counts against its disk limit. */
static int bwrap_args(struct sandbox *s, sbx__strlist *a)
{
    char path[512];
    struct stat st;

    if (add(a, g.cfg.bwrap) || add(a, "--unshare-user") || add3(a, "--uid", "1000", NULL) ||
        add3(a, "--gid", "1000", NULL) || add(a, "--unshare-pid") || add(a, "--as-pid-1"))
        return -1;
    if (add(a, "--unshare-ipc") || add(a, "--unshare-uts") ||
        add3(a, "--hostname", s->id, NULL) || add(a, "--unshare-cgroup-try") ||
        add(a, "--unshare-net") || add(a, "--die-with-parent") ||
        add(a, "--new-session") || add3(a, "--cap-drop", "ALL", NULL) ||
        add3(a, "--info-fd", "4", NULL) || add3(a, "--bind", s->root, "/") ||
        add3(a, "--ro-bind", "/usr", "/usr"))
        return -1;
    for (size_t i = 0; i < sizeof sys_top / sizeof sys_top[0]; i++) {
        snprintf(path, sizeof path, "/%s", sys_top[i]);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && add3(a, "--ro-bind", path, path))
            return -1;
    }
    for (size_t i = 0; i < sizeof etc_binds / sizeof etc_binds[0]; i++) {
        snprintf(path, sizeof path, "/etc/%s", etc_binds[i]);
        if (stat(path, &st) == 0 && add3(a, "--ro-bind", path, path))
            return -1;
    }
    /* The egress CA (header injection intercepts TLS): the bundle every
     * OpenSSL/GnuTLS tool reads, and the CA alone for NODE_EXTRA_CA_CERTS. */
    if (mitm_bundle_path() && stat(MITM_SANDBOX_BUNDLE, &st) == 0 &&
        add3(a, "--ro-bind", mitm_bundle_path(), MITM_SANDBOX_BUNDLE))
        return -1;
    if (mitm_ca_path() && add3(a, "--ro-bind", mitm_ca_path(), MITM_SANDBOX_CA))
        return -1;
    snprintf(path, sizeof path, "%s/.sbxd/shm", s->root);
    if (add3(a, "--ro-bind", g.init_copy, "/.sbxd/init") || add3(a, "--proc", "/proc", NULL) ||
        add3(a, "--dev", "/dev", NULL) || add3(a, "--bind", path, "/dev/shm") ||
        add3(a, "--remount-ro", "/dev", NULL) || add3(a, "--chdir", "/", NULL) || add(a, "--clearenv") ||
        add3(a, "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") ||
        add(a, "/.sbxd/init") || limits_init_args(s->limits, a) < 0)
        return -1;
    return 0;
}

/* Read bwrap's --info-fd JSON for the host pid of the sandbox's init. */
pid_t sandbox_read_child_pid(int fd, int64_t deadline)
{
    char buf[512];
    size_t len = 0;
    json_t *j;
    pid_t pid = -1;

    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = deadline - mono_ms();
        ssize_t r;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf - 1)
            break;
    }
    buf[len] = '\0';
    j = json_loadb(buf, len, 0, NULL);
    if (j && json_is_integer(json_object_get(j, "child-pid")))
        pid = (pid_t)json_integer_value(json_object_get(j, "child-pid"));
    json_decref(j);
    return pid;
}

static void describe_boot_failure(struct sandbox *s, const char *logpath, char *err, size_t errlen)
{
    size_t len = 0;
    char *log = read_file(logpath, 4096, &len);
    while (log && len && (log[len - 1] == '\n' || log[len - 1] == ' '))
        log[--len] = '\0';
    snprintf(err, errlen, "could not start sandbox %s with %s%s%s", s->id, g.cfg.bwrap,
             log && *log ? ": " : "", log ? log : "");
    sbx__free(log);
}

/* A second context joins the first one's namespaces by fd (sbxd-init
 * --join): bwrap would bind the root again and create its mount points
 * through whatever symlinks the sandbox has planted in its own tree. bwrap
 * --dev made the first context with two user namespaces, the outer (uid 0,
 * owner of the mount and PID namespaces) and the inner (uid 1000); the fds
 * are, from 5: outer user, PID, inner user, mount, UTS, IPC, then (11) the
 * sbxd-init program to run, never a path in the sandbox's tree. */
static int join_args(struct sandbox *s, sbx__strlist *a)
{
    return add(a, g.init_copy) || add(a, "--join") || limits_init_args(s->limits, a) < 0 ? -1 : 0;
}

static int open_ns_fds(pid_t pid, int *fds)
{
    static const char *const names[] = {NULL, "pid", "user", "mnt", "uts", "ipc"};
    char path[64];
    for (int i = 1; i < 6; i++) {
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, names[i]);
        if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            return -1;
    }
    /* The outer user namespace is the one that owns the PID namespace. */
    fds[0] = ioctl(fds[1], NS_GET_USERNS);
    if (fds[0] < 0)
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    return 0;
}

int sandbox_ensure_limits(struct sandbox *s, char *err, size_t errlen)
{
    /* Made before the first process: a git source's fetcher, or boot. No
     * sandbox runs without them: a failure here fails the start. */
    if (!s->limits)
        s->limits = limits_create(s->id, s->vcpus, s->memory_mb, g.cfg.pids_max);
    if (s->limits)
        return 0;
    snprintf(err, errlen, "cannot set up the resource limits of sandbox %s (%s): see sbxd's log", s->id,
             limits_backend());
    return -1;
}

/* As root, the sandbox's helpers run under its host ids: bwrap then makes
 * namespaces owned by that id, never by root. */
void sandbox_spawn_ids(const struct sandbox *s, struct spawn_req *req)
{
    if (!g.ids.per_sandbox)
        return;
    req->set_ids = true;
    req->uid = s->ids.uid;
    req->gid = s->ids.gid;
}

/* Kill what a failed boot started; the bwrap (or join) process is reaped. */
static void boot_kill(pid_t launched, pid_t init)
{
    if (init > 0)
        kill(init, SIGKILL);
    if (launched > 0) {
        kill(launched, SIGKILL);
        waitpid(launched, NULL, 0);
    }
}

/* Wait for init's READY on its control socket. */
static int wait_ready(int fd, int64_t deadline)
{
    struct pollfd p = {fd, POLLIN, 0};
    struct ctl_msg ready;
    int64_t left = deadline - mono_ms();
    int r = left > 0 ? poll(&p, 1, (int)left) : 0;
    if (r > 0)
        r = ctl_recv(fd, &ready);
    if (r <= 0)
        return -1;
    r = ready.type == CTL_READY ? 0 : -1;
    ctl_msg_free(&ready);
    return r;
}

/* Give a new init its seccomp program (empty when the layer is off, which
 * --allow-degraded accepted); it runs no command before. */
static int send_filter(int fd, int64_t deadline)
{
    struct ctl_msg m, reply;
    struct pollfd p = {fd, POLLIN, 0};
    int64_t left;
    int r;

    ctl_msg_init(&m, CTL_FILTER, 1);
    r = ctl_put(&m, g.filter ? g.filter : "", g.filter ? g.filter_len : 0) < 0 || ctl_send(fd, &m) < 0 ? -1 : 0;
    ctl_msg_free(&m);
    left = deadline - mono_ms();
    if (r < 0 || left <= 0 || poll(&p, 1, (int)left) <= 0 || ctl_recv(fd, &reply) <= 0)
        return -1;
    {
        struct ctl_reader rd;
        long long e = -1;
        ctl_reader_init(&rd, &reply);
        r = reply.type == CTL_REPLY && ctl_get_int(&rd, &e) == 0 && e == 0 ? 0 : -1;
    }
    ctl_msg_free(&reply);
    return r;
}

/* Mask and make read-only what an OCI runtime does in the sandbox's /proc,
 * before any command runs: sbxd-init --harden enters the mount namespace
 * through the user namespace that owns it, which the sandbox's own
 * processes (in a user namespace below) have no power over. */
int sandbox_harden(struct sandbox *s, pid_t init, int logfd, char *err, size_t errlen)
{
    sbx__strlist argv = SBX__STRLIST_INIT;
    struct spawn_req req;
    int nsfd[6] = {-1, -1, -1, -1, -1, -1}, status = -1, r = -1;
    pid_t pid = -1;

    memset(&req, 0, sizeof req);
    if (add(&argv, g.init_copy) || add(&argv, "--harden") || open_ns_fds(init, nsfd) < 0) {
        snprintf(err, errlen, "cannot harden sandbox %s: %s", s->id, strerror(errno));
        goto out;
    }
    req.argv = argv.v;
    req.keep_fds[req.nkeep++] = nsfd[0]; /* 3: the outer user namespace */
    req.keep_fds[req.nkeep++] = nsfd[3]; /* 4: the mount namespace */
    req.stdout_fd = req.stderr_fd = logfd;
    sandbox_spawn_ids(s, &req);
    pid = launcher_spawn(&req);
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, errlen, "could not mask /proc in sandbox %s (see its log)", s->id);
    else
        r = 0;
out:
    for (int i = 0; i < 6; i++)
        if (nsfd[i] >= 0)
            close(nsfd[i]);
    sbx__strlist_clear(&argv);
    return r;
}

/* Start context `ctx` (its network per the index). Called without g.lock. */
static int ctx_boot(struct sandbox *s, int ctx, char *err, size_t errlen)
{
    bool primary = ctx == s->primary;
    sbx__strlist argv = SBX__STRLIST_INIT;
    struct spawn_req req;
    int sv[2] = {-1, -1}, info[2] = {-1, -1}, logfd = -1, nsfd[6] = {-1, -1, -1, -1, -1, -1};
    char logpath[4096];
    int64_t deadline = mono_ms() + BOOT_TIMEOUT_MS;
    pid_t pid = -1, child = -1;
    int64_t t_start = mono_us(), t_ready, t_hardened, t_net;
    int r, pidfd = -1, initfd = -1;

    memset(&req, 0, sizeof req);
    snprintf(logpath, sizeof logpath, "%s/../sandbox.log", s->root);
    if ((primary ? bwrap_args(s, &argv) : join_args(s, &argv)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
        pipe2(info, O_CLOEXEC) < 0 ||
        (logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
        snprintf(err, errlen, "cannot set up sandbox %s: %s", s->id, strerror(errno));
        goto fail;
    }
    if (!primary && (open_ns_fds(s->ctx[s->primary].init_pid, nsfd) < 0 ||
                     (initfd = open(g.init_copy, O_PATH | O_CLOEXEC)) < 0)) {
        snprintf(err, errlen, "cannot join sandbox %s's namespaces: %s", s->id, strerror(errno));
        goto fail;
    }
    req.argv = argv.v;
    req.keep_fds[req.nkeep++] = sv[1];
    req.keep_fds[req.nkeep++] = info[1];
    if (nsfd[0] >= 0) {
        for (int i = 0; i < 6; i++)
            req.keep_fds[req.nkeep++] = nsfd[i];
        req.keep_fds[req.nkeep++] = initfd; /* 11: the init to exec */
    }
    req.stdout_fd = logfd;
    req.stderr_fd = logfd;
    sandbox_spawn_ids(s, &req);
    /* Both contexts in the sandbox's cgroup: the limits cover all of it. */
    if (s->limits)
        limits_spawn_setup(s->limits, &req);
    pid = launcher_spawn(&req);
    close(sv[1]);
    close(info[1]);
    sv[1] = info[1] = -1;
    if (pid < 0) {
        snprintf(err, errlen, "cannot run %s: %s", g.cfg.bwrap, strerror(errno));
        goto fail;
    }
    /* Then init's READY; a failure before either is described in the log. */
    if ((child = sandbox_read_child_pid(info[0], deadline)) <= 0 || wait_ready(sv[0], deadline) < 0) {
        boot_kill(pid, child);
        pid = -1;
        describe_boot_failure(s, logpath, err, errlen);
        goto fail;
    }
    /* Nothing runs in the context before it is hardened, filtered and
     * networked. */
    t_ready = mono_us();
    pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    if (primary && sandbox_harden(s, child, logfd, err, errlen) < 0) {
        boot_kill(pid, child);
        pid = -1;
        goto fail;
    }
    t_hardened = mono_us();
    if (ctx == NET_OPEN && usernet_attach(s, ctx, child, logfd, err, errlen) < 0) {
        boot_kill(pid, child);
        pid = -1;
        goto fail;
    }
    t_net = mono_us();
    if (send_filter(sv[0], deadline) < 0) {
        boot_kill(pid, child);
        pid = -1;
        snprintf(err, errlen, "sandbox %s: init did not take the seccomp program", s->id);
        goto fail;
    }
    if (primary) {
        s->setup_us[1] = t_hardened - t_ready;
        s->setup_us[2] = t_net - t_hardened;
        s->setup_us[3] = mono_us() - t_net;
    }
    if (g.cfg.log_level >= LOG_DEBUG)
        sbxd_log(LOG_DEBUG, "sandbox %s: context %d up in %.1f ms, init ready after %.1f (bwrap %d, init %d, "
                            "%s network)",
                 s->id, ctx, (double)(mono_us() - t_start) / 1000, (double)(t_ready - t_start) / 1000, (int)pid,
                 (int)child, ctx == NET_OPEN ? "open" : "isolated");
    /* Keep the sandbox's own OOM kills away from init where we may. */
    {
        char path[64];
        int fd;
        snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)child);
        if ((fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0) {
            (void)!write(fd, "-1000", 5);
            close(fd);
        }
    }
    pthread_mutex_lock(&g.lock);
    if (!primary && (s->status != SBXD_RUNNING || !s->ctx[s->primary].up)) {
        /* The sandbox stopped while this context was starting. */
        pthread_mutex_unlock(&g.lock);
        boot_kill(pid, child);
        pid = -1;
        snprintf(err, errlen, "sandbox %s stopped", s->id);
        goto fail;
    }
    s->ctx[ctx].bwrap_pid = pid;
    s->ctx[ctx].init_pid = child;
    s->ctx[ctx].init_pidfd = pidfd;
    pidfd = -1;
    s->ctx[ctx].ctl_fd = sv[0];
    s->ctx[ctx].up = true;
    r = io_watch_ctl(s, ctx);
    pthread_mutex_unlock(&g.lock);
    sbx__strlist_clear(&argv);
    for (int i = 0; i < 6; i++)
        if (nsfd[i] >= 0)
            close(nsfd[i]);
    if (initfd >= 0)
        close(initfd);
    close(info[0]);
    close(logfd);
    if (r < 0) {
        snprintf(err, errlen, "cannot watch sandbox %s: %s", s->id, strerror(errno));
        kill(child, SIGKILL);
        return -1; /* the I/O thread never saw it; the caller tears down */
    }
    return 0;
fail:
    sbx__strlist_clear(&argv);
    for (int i = 0; i < 6; i++) {
        if (i < 2 && sv[i] >= 0)
            close(sv[i]);
        if (i < 2 && info[i] >= 0)
            close(info[i]);
        if (nsfd[i] >= 0)
            close(nsfd[i]);
    }
    if (logfd >= 0)
        close(logfd);
    if (pidfd >= 0)
        close(pidfd);
    if (initfd >= 0)
        close(initfd);
    usernet_detach(s, ctx);
    return -1;
}

/* Make rel (and every directory above it) inside the tree at rootfd a real
 * directory (want_dir) or leave room for a regular file, never a symlink or
 * anything else bwrap would follow while creating its mount point. */
static int ensure_mount_point(int rootfd, const char *rel, bool want_dir)
{
    char path[256], *comp, *save = NULL, *next;
    int dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0), r = -1;

    snprintf(path, sizeof path, "%s", rel);
    comp = strtok_r(path, "/", &save);
    while (comp && dfd >= 0) {
        struct stat st;
        bool last;
        next = strtok_r(NULL, "/", &save);
        last = next == NULL;
        if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            bool ok = (!last || want_dir) ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
            if (!ok && rm_rf_at(dfd, comp) < 0)
                goto out;
            if (!ok && !(!last || want_dir))
                goto done; /* a file mount point: bwrap creates it */
        } else if (errno != ENOENT) {
            goto out;
        }
        if (!last || want_dir) {
            int nfd;
            if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST)
                goto out;
            nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(dfd);
            dfd = nfd;
        }
        comp = next;
    }
done:
    r = dfd >= 0 ? 0 : -1;
out:
    if (dfd >= 0)
        close(dfd);
    return r;
}

/* Before a first boot (the tree may come from a snapshot, which holds
 * whatever the sandbox put there): every path bwrap mounts on is the
 * sandbox's own directory or file, so bwrap, which runs with the host's
 * root at hand while it sets up, never creates anything through a link. */
static int sanitize_root(struct sandbox *s, char *err, size_t errlen)
{
    char host[64], rel[64];
    struct stat st;
    int rootfd = open(s->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r = 0;

    if (rootfd < 0)
        goto fail;
    r |= ensure_mount_point(rootfd, "usr", true);
    r |= ensure_mount_point(rootfd, "proc", true);
    r |= ensure_mount_point(rootfd, "dev", true);
    r |= ensure_mount_point(rootfd, ".sbxd/init", false);
    r |= ensure_mount_point(rootfd, ".sbxd/ca.crt", false);
    r |= ensure_mount_point(rootfd, ".sbxd/shm", true);
    for (size_t i = 0; i < sizeof sys_top / sizeof sys_top[0]; i++) {
        snprintf(host, sizeof host, "/%s", sys_top[i]);
        if (lstat(host, &st) == 0 && S_ISDIR(st.st_mode))
            r |= ensure_mount_point(rootfd, sys_top[i], true);
    }
    for (size_t i = 0; i < sizeof etc_binds / sizeof etc_binds[0]; i++) {
        snprintf(host, sizeof host, "/etc/%s", etc_binds[i]);
        snprintf(rel, sizeof rel, "etc/%s", etc_binds[i]);
        if (stat(host, &st) == 0)
            r |= ensure_mount_point(rootfd, rel, S_ISDIR(st.st_mode));
    }
    close(rootfd);
    if (r == 0)
        return 0;
fail:
    snprintf(err, errlen, "cannot prepare the mount points of sandbox %s: %s", s->id, strerror(errno));
    return -1;
}

int sandbox_boot(struct sandbox *s, char *err, size_t errlen)
{
    bool isolated = s->netmode == NET_ISOLATED;
    s->primary = isolated ? NET_ISOLATED : NET_OPEN;
    if (sanitize_root(s, err, errlen) < 0)
        return -1;
    if (sandbox_ensure_limits(s, err, errlen) < 0)
        return -1;
    if (ctx_boot(s, s->primary, err, errlen) < 0)
        return -1;
    if (isolated && egress_attach(s, s->primary, err, errlen) < 0)
        return -1;
    if (isolated && usernet_sync_isolated(s, err, errlen) < 0)
        return -1;
    return 0;
}

int sandbox_active_ctx(struct sandbox *s, char *err, size_t errlen)
{
    int want, r;

    pthread_mutex_lock(&g.lock);
    for (;;) {
        if (s->status != SBXD_RUNNING) {
            pthread_mutex_unlock(&g.lock);
            snprintf(err, errlen, "sandbox %s is %s", s->id, sandbox_status_name(s->status));
            return -1;
        }
        want = s->netmode == NET_ISOLATED ? NET_ISOLATED : NET_OPEN;
        if (s->ctx[want].up) {
            pthread_mutex_unlock(&g.lock);
            if (want == NET_ISOLATED && usernet_sync_isolated(s, err, errlen) < 0)
                return -1;
            return want;
        }
        if (!s->ctx[want].watch)
            break;
        /* Another request is starting it. */
        pthread_cond_wait(&s->cond, &g.lock);
    }
    s->ctx[want].watch = (void *)1; /* booting marker */
    pthread_mutex_unlock(&g.lock);
    r = ctx_boot(s, want, err, errlen);
    if (r == 0 && want == NET_ISOLATED)
        r = egress_attach(s, want, err, errlen);
    if (r == 0 && want == NET_ISOLATED)
        r = usernet_sync_isolated(s, err, errlen);
    pthread_mutex_lock(&g.lock);
    if (r < 0 && !s->ctx[want].up)
        s->ctx[want].watch = NULL;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&g.lock);
    return r < 0 ? -1 : want;
}

/* ---- control requests --------------------------------------------------- */

int sandbox_ctl(struct sandbox *s, int ctx, struct ctl_msg *m, int *fd, char **detail)
{
    struct ctl_wait w, **pp;
    int rc;

    memset(&w, 0, sizeof w);
    w.fd = -1;
    w.ctx = ctx;
    pthread_mutex_lock(&g.lock);
    if (!s->ctx[ctx].up) {
        pthread_mutex_unlock(&g.lock);
        return EPIPE;
    }
    if (m->id == 0)
        m->id = ++s->next_ctl_id;
    w.id = m->id;
    w.next = s->waits;
    s->waits = &w;
    pthread_mutex_unlock(&g.lock);

    pthread_mutex_lock(&s->ctx[ctx].send_lock);
    rc = s->ctx[ctx].ctl_fd >= 0 ? ctl_send(s->ctx[ctx].ctl_fd, m) : (errno = EPIPE, -1);
    pthread_mutex_unlock(&s->ctx[ctx].send_lock);

    pthread_mutex_lock(&g.lock);
    if (rc < 0) {
        w.done = true;
        w.err = EPIPE;
    }
    while (!w.done)
        pthread_cond_wait(&s->cond, &g.lock);
    for (pp = &s->waits; *pp; pp = &(*pp)->next)
        if (*pp == &w) {
            *pp = w.next;
            break;
        }
    pthread_mutex_unlock(&g.lock);
    if (fd)
        *fd = w.fd;
    else if (w.fd >= 0)
        close(w.fd);
    if (detail)
        *detail = w.detail;
    else
        sbx__free(w.detail);
    return w.err;
}

/* ---- stopping ------------------------------------------------------------ */

void sandbox_release(struct sandbox *s)
{
    for (int i = 0; i < 2; i++)
        usernet_detach(s, i);
    limits_destroy(s->limits);
    s->limits = NULL;
    if (s->disk) {
        disk_destroy(s->disk);
        s->disk = NULL;
    } else if (rm_rf(s->root) < 0 && errno != ENOENT) {
        sbxd_log(LOG_WARN, "could not remove %s completely: %s", s->root, strerror(errno));
    }
    /* Nothing of the sandbox's is left on the host: its ids are free. */
    ids_release(&s->ids);
}

static void *finalize_main(void *arg)
{
    struct sandbox *s = arg;
    struct snapshot *sn;
    char err[512] = "";

    pthread_mutex_lock(&g.lock);
    sn = s->snap_pending;
    pthread_mutex_unlock(&g.lock);
    /* init's control socket closes before the kernel has killed the rest of
     * the PID namespace: the sandbox's processes may still run. The init of
     * a PID namespace exits only after every other process in it is gone,
     * which its pidfd reports. */
    for (int i = 0; i < 2; i++) {
        if (s->ctx[i].init_pidfd >= 0) {
            struct pollfd p = {s->ctx[i].init_pidfd, POLLIN, 0};
            while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
            close(s->ctx[i].init_pidfd);
            s->ctx[i].init_pidfd = -1;
        }
        if (s->ctx[i].bwrap_pid > 0)
            waitpid(s->ctx[i].bwrap_pid, NULL, 0);
        pthread_mutex_lock(&s->ctx[i].send_lock);
        if (s->ctx[i].ctl_fd >= 0)
            close(s->ctx[i].ctl_fd);
        s->ctx[i].ctl_fd = -1;
        pthread_mutex_unlock(&s->ctx[i].send_lock);
    }
    /* Now the tree is quiet: archive it, then remove it. */
    if (sn && snapshot_capture(s, sn, err, sizeof err) < 0)
        sbxd_log(LOG_ERROR, "snapshot %s of %s failed: %s", sn->id, s->id, err);
    if (sn) {
        pthread_mutex_lock(&g.lock);
        snapshot_list_locked(sn);
        if (s->name && strcmp(sn->status, "created") == 0)
            named_snapshot_taken(s, sn);
        pthread_mutex_unlock(&g.lock);
    }
    for (int i = 0; i < s->nports; i++)
        route_stop(s->routes[i]);
    egress_detach(s);
    sandbox_release(s);

    pthread_mutex_lock(&g.lock);
    for (int i = 0; i < s->nports; i++)
        s->routes[i] = NULL;
    if (s->active_cpu_ms < 0)
        s->active_cpu_ms = 0;
    s->status = (s->stop_reason && strcmp(s->stop_reason, "failed") == 0) ? SBXD_FAILED : SBXD_STOPPED;
    s->stopped_at = s->updated_at = now_ms();
    if (sn) {
        s->snapshotted_at = s->stopped_at;
        s->snap_pending = NULL;
    }
    g.running--;
    s->finalizing = false;
    sandbox_persist_locked(s);
    pthread_cond_broadcast(&s->cond);
    sbxd_log(LOG_INFO, "sandbox %s stopped (%s)", s->id, s->stop_reason ? s->stop_reason : "stop");
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

/* Called with g.lock when the last context of a sandbox died. */
static void start_finalizer(struct sandbox *s)
{
    pthread_t t;
    pthread_attr_t attr;
    if (s->finalizing)
        return;
    s->finalizing = true;
    if (s->status == SBXD_RUNNING || s->status == SBXD_PENDING) {
        /* Nobody asked: init died (killed by an OOM in its cgroup, say). */
        s->status = SBXD_STOPPING;
        if (!s->stop_reason)
            s->stop_reason = sbx__strdup("failed");
        s->aborted_at = now_ms();
    }
    s->active_cpu_ms = limits_cpu_ms(s->limits);
    sandbox_ref(s);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, finalize_main, s) != 0) {
        pthread_mutex_unlock(&g.lock);
        finalize_main(s); /* no thread: do it here */
        pthread_mutex_lock(&g.lock);
    }
    pthread_attr_destroy(&attr);
}

void sandbox_ctx_dead(struct sandbox *s, int ctx)
{
    bool by_stop = s->status != SBXD_RUNNING;
    bool primary = ctx == s->primary;

    s->ctx[ctx].up = false;
    s->ctx[ctx].watch = NULL;
    for (struct command *c = s->commands; c; c = c->next) {
        if (c->exited || (!primary && c->ctx != ctx))
            continue;
        command_finish(c, 128 + SIGKILL, by_stop);
    }
    for (struct ctl_wait *w = s->waits; w; w = w->next)
        if (!w->done && (primary || w->ctx == ctx)) {
            w->done = true;
            w->err = EPIPE;
        }
    if (primary) {
        /* The PID namespace is gone, so is every other context. */
        for (int i = 0; i < 2; i++)
            s->ctx[i].up = false;
        start_finalizer(s);
    }
    pthread_cond_broadcast(&s->cond);
}

void sandbox_stop_locked(struct sandbox *s, bool by_timeout)
{
    if (s->status == SBXD_RUNNING && s->persistent && !s->snap_pending) {
        /* A persistent sandbox keeps its file system: the stop takes a
         * snapshot its next session starts from. Out of memory, it stops
         * without one (the sandbox then resumes from the one before). */
        s->auto_snap = snapshot_begin_locked(s, s->snap_ttl_ms >= 0 ? s->snap_ttl_ms : g.cfg.snapshot_ttl_ms,
                                             "stop");
        if (!s->auto_snap)
            sbxd_log(LOG_ERROR, "sandbox %s: no memory for the snapshot of its stop", s->id);
    }
    if (s->status == SBXD_RUNNING) {
        s->status = s->snap_pending ? SBXD_SNAPSHOTTING : SBXD_STOPPING;
        s->requested_stop_at = s->updated_at = now_ms();
        sbx__free(s->stop_reason);
        s->stop_reason = sbx__strdup(by_timeout ? "timeout" : s->snap_pending ? "snapshot" : "stop");
        /* Killing the PID namespace's init kills everything in it. */
        if (s->ctx[s->primary].init_pid > 0)
            kill(s->ctx[s->primary].init_pid, SIGKILL);
        for (int i = 0; i < 2; i++)
            if (s->ctx[i].bwrap_pid > 0)
                kill(s->ctx[i].bwrap_pid, SIGKILL);
        sbxd_log(LOG_INFO, "sandbox %s stopping (%s)", s->id, s->stop_reason ? s->stop_reason : "stop");
    }
    if (by_timeout)
        return; /* the I/O thread must not wait for itself */
    while (s->status == SBXD_STOPPING || s->status == SBXD_SNAPSHOTTING)
        pthread_cond_wait(&s->cond, &g.lock);
}

int64_t sandbox_next_deadline(void)
{
    int64_t best = -1;
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        if (s->status != SBXD_RUNNING)
            continue;
        if (best < 0 || s->deadline_mono < best)
            best = s->deadline_mono;
        for (struct command *c = g.cmd_deadlines > 0 ? s->commands : NULL; c; c = c->next)
            if (c->deadline_mono > 0 && !c->exited && !c->timeout_fired && c->deadline_mono < best)
                best = c->deadline_mono;
    }
    return best;
}

/* ---- network policy ------------------------------------------------------ */

int sandbox_set_network(struct sandbox *s, struct netpolicy *p, char *err, size_t errlen)
{
    struct netpolicy *old;
    pthread_mutex_lock(&g.lock);
    if (s->status != SBXD_RUNNING) {
        pthread_mutex_unlock(&g.lock);
        snprintf(err, errlen, "sandbox %s is %s", s->id, sandbox_status_name(s->status));
        netpolicy_free(p);
        return -1;
    }
    old = s->policy;
    s->policy = p;
    s->policy_gen++;
    s->netmode = usernet_mode(p->mode);
    s->updated_at = now_ms();
    sandbox_persist_locked(s);
    pthread_mutex_unlock(&g.lock);
    netpolicy_free(old);
    /* Start the matching context now, so the change is in force (and any
     * failure reported) before the call returns. */
    if (sandbox_active_ctx(s, err, errlen) < 0)
        return -1;
    return 0;
}

/* ---- JSON and persistence -------------------------------------------------- */

static void set_opt_ts(json_t *o, const char *key, int64_t v)
{
    if (v > 0)
        json_object_set_new(o, key, json_integer(v));
}

json_t *sandbox_json(struct sandbox *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "id", json_string(s->id));
    json_object_set_new(o, "memory", json_integer(s->memory_mb));
    json_object_set_new(o, "vcpus", json_integer(s->vcpus));
    json_object_set_new(o, "region", json_string(SBXD_REGION));
    /* what the sandbox really runs (runtime.c); what was asked for beside it */
    json_object_set_new(o, "runtime", json_string(s->runtime));
    if (s->requested_runtime)
        json_object_set_new(o, "requestedRuntime", json_string(s->requested_runtime));
    json_object_set_new(o, "timeout", json_integer(s->timeout_ms));
    json_object_set_new(o, "status", json_string(sandbox_status_name(s->status)));
    json_object_set_new(o, "requestedAt", json_integer(s->requested_at));
    json_object_set_new(o, "createdAt", json_integer(s->created_at));
    json_object_set_new(o, "updatedAt", json_integer(s->updated_at));
    json_object_set_new(o, "cwd", json_string(SBXD_CWD));
    set_opt_ts(o, "startedAt", s->started_at);
    set_opt_ts(o, "requestedStopAt", s->requested_stop_at);
    set_opt_ts(o, "stoppedAt", s->stopped_at);
    set_opt_ts(o, "abortedAt", s->aborted_at);
    set_opt_ts(o, "snapshottedAt", s->snapshotted_at);
    if (s->stopped_at > 0 && s->started_at > 0)
        json_object_set_new(o, "duration", json_integer(s->stopped_at - s->started_at));
    if (s->source_snapshot_id)
        json_object_set_new(o, "sourceSnapshotId", json_string(s->source_snapshot_id));
    if (s->policy)
        json_object_set_new(o, "networkPolicy", netpolicy_json(s->policy));
    if (s->status == SBXD_STOPPED && s->active_cpu_ms >= 0 && s->stopped_at > 0)
        json_object_set_new(o, "activeCpuDurationMs", json_integer(s->active_cpu_ms));
    if (s->project_id)
        json_object_set_new(o, "projectId", json_string(s->project_id));
    return o;
}

json_t *sandbox_routes_json(struct sandbox *s)
{
    json_t *a = json_array();
    for (int i = 0; a && i < s->nports; i++) {
        char sub[96];
        snprintf(sub, sizeof sub, "%s-%d", s->id, s->ports[i]);
        for (char *p = sub; *p; p++)
            if (*p == '_')
                *p = '-';
        json_array_append_new(a, json_pack("{s:s,s:s,s:i}", "url", s->route_urls[i],
                                           "subdomain", sub, "port", s->ports[i]));
    }
    return a;
}

void sandbox_persist_locked(struct sandbox *s)
{
    json_t *o = json_object(), *ports = json_array(), *urls = json_array();
    char *text, *path;
    char rel[128];

    if (!o || !ports)
        goto out;
    json_object_set_new(o, "sandbox", sandbox_json(s));
    for (int i = 0; i < s->nports; i++) {
        json_array_append_new(ports, json_integer(s->ports[i]));
        json_array_append_new(urls, json_string(s->route_urls[i]));
    }
    json_object_set(o, "ports", ports);
    json_object_set(o, "routeUrls", urls);
    if (s->name) {
        json_object_set_new(o, "name", json_string(s->name));
        json_object_set_new(o, "persistent", json_boolean(s->persistent));
        json_object_set_new(o, "snapshotTtl", json_integer(s->snap_ttl_ms));
    }
    text = json_dumps(o, JSON_COMPACT);
    snprintf(rel, sizeof rel, "sandboxes/%s/meta.json", s->id);
    path = path_join(g.cfg.state_dir, rel);
    /* No fsync: this runs under g.lock, and a record lost to a power cut
     * only loses a stopped sandbox from the listing. */
    if (text && path && write_file_atomic(path, text, strlen(text), 0600, false) < 0)
        sbxd_log(LOG_WARN, "cannot save %s: %s", path, strerror(errno));
    sbx__free(path);
    free(text);
out:
    json_decref(urls);
    json_decref(ports);
    json_decref(o);
}

static struct sandbox *sandbox_from_meta(const char *id, json_t *meta)
{
    json_t *j = json_object_get(meta, "sandbox"), *ports = json_object_get(meta, "ports");
    struct sandbox *s = sandbox_alloc();
    json_t *pol;
    char err[256];
    size_t i;
    json_t *e;

    if (!s || !json_is_object(j))
        goto fail;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->runtime = sbx__strdup(json_string_value(json_object_get(j, "runtime")) ?: SBXD_DEFAULT_RUNTIME);
    if (json_string_value(json_object_get(j, "requestedRuntime")) &&
        !(s->requested_runtime = sbx__strdup(json_string_value(json_object_get(j, "requestedRuntime")))))
        goto fail;
    if (json_string_value(json_object_get(j, "projectId")))
        s->project_id = sbx__strdup(json_string_value(json_object_get(j, "projectId")));
    if (json_string_value(json_object_get(j, "sourceSnapshotId")))
        s->source_snapshot_id = sbx__strdup(json_string_value(json_object_get(j, "sourceSnapshotId")));
    s->memory_mb = (int)json_integer_value(json_object_get(j, "memory"));
    s->vcpus = (int)json_integer_value(json_object_get(j, "vcpus"));
    s->timeout_ms = json_integer_value(json_object_get(j, "timeout"));
    if (json_string_value(json_object_get(meta, "name"))) {
        s->name = sbx__strdup(json_string_value(json_object_get(meta, "name")));
        s->persistent = json_is_true(json_object_get(meta, "persistent"));
        s->snap_ttl_ms = -1;
        json_get_int64(meta, "snapshotTtl", &s->snap_ttl_ms);
        if (!s->name)
            goto fail;
    }
    s->status = status_from_name(json_string_value(json_object_get(j, "status")));
    json_get_int64(j, "requestedAt", &s->requested_at);
    json_get_int64(j, "createdAt", &s->created_at);
    json_get_int64(j, "updatedAt", &s->updated_at);
    json_get_int64(j, "startedAt", &s->started_at);
    json_get_int64(j, "requestedStopAt", &s->requested_stop_at);
    json_get_int64(j, "stoppedAt", &s->stopped_at);
    json_get_int64(j, "abortedAt", &s->aborted_at);
    json_get_int64(j, "snapshottedAt", &s->snapshotted_at);
    json_get_int64(j, "activeCpuDurationMs", &s->active_cpu_ms);
    pol = json_object_get(j, "networkPolicy");
    s->policy = pol ? netpolicy_parse(pol, err, sizeof err) : NULL;
    if (!s->policy)
        s->policy = netpolicy_allow_all();
    json_array_foreach(ports, i, e) {
        if (s->nports < SBXD_MAX_PORTS && json_is_integer(e)) {
            const char *url = json_string_value(json_array_get(json_object_get(meta, "routeUrls"), i));
            snprintf(s->route_urls[s->nports], sizeof s->route_urls[0], "%s", url ? url : "");
            s->ports[s->nports++] = (int)json_integer_value(e);
        }
    }
    if (!s->runtime || !s->policy)
        goto fail;
    return s;
fail:
    if (s)
        sandbox_free(s);
    return NULL;
}

/* Load what a previous sbxd left: every sandbox is listed as stopped now
 * (its processes died with that sbxd) and its filesystem is removed. */
int sandbox_load_all(void)
{
    char *dir = path_join(g.cfg.state_dir, "sandboxes");
    DIR *d;
    struct dirent *e;
    struct sandbox **tail;
    int n = 0;

    if (!dir)
        return -1;
    d = opendir(dir);
    if (!d) {
        sbx__free(dir);
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        char rel[256], *path;
        json_t *meta;
        struct sandbox *s;
        if (!id_is_safe(e->d_name) || strncmp(e->d_name, "sbx_", 4) != 0)
            continue;
        snprintf(rel, sizeof rel, "%s/meta.json", e->d_name);
        path = path_join(dir, rel);
        meta = path ? load_json_file(path) : NULL;
        s = meta ? sandbox_from_meta(e->d_name, meta) : NULL;
        json_decref(meta);
        sbx__free(path);
        if (!s) {
            sbxd_log(LOG_WARN, "ignoring unreadable sandbox record %s", e->d_name);
            continue;
        }
        snprintf(rel, sizeof rel, "%s/root", e->d_name);
        s->root = path_join(dir, rel);
        if (s->root) {
            /* Mounted still only if sbxd could not keep its mounts private. */
            if (umount2(s->root, MNT_DETACH) == 0)
                g.orphan_mounts++;
            rm_rf(s->root);
        }
        /* Its file system died with the sbxd that mounted it. */
        {
            char img[4096];
            snprintf(img, sizeof img, "%s/%s/disk.img", dir, e->d_name);
            unlink(img);
        }
        if (s->status != SBXD_STOPPED && s->status != SBXD_FAILED && s->status != SBXD_ABORTED) {
            g.orphans_found++;
            s->status = SBXD_STOPPED;
            s->stopped_at = s->updated_at = now_ms();
            s->stop_reason = sbx__strdup("sbxd restarted");
            sandbox_persist_locked(s);
        }
        /* The commands an earlier sbxd moved to the command store are
         * still readable for the rest of --retain-output. */
        {
            long ncmd = cmdstore_count(s->id);
            if (ncmd >= 0) {
                s->cmds_stored = true;
                s->ncommands = (size_t)ncmd;
            }
            snprintf(rel, sizeof rel, "%s/commands.tmp", e->d_name);
            if ((path = path_join(dir, rel)) != NULL)
                unlink(path); /* a write cut short */
            sbx__free(path);
        }
        /* Keep the list newest first. */
        for (tail = &g.sandboxes; *tail && (*tail)->created_at > s->created_at; tail = &(*tail)->next)
            ;
        s->next = *tail;
        *tail = s;
        if (s->created_at > g.last_ts)
            g.last_ts = s->created_at;
        n++;
    }
    closedir(d);
    sbx__free(dir);
    return n;
}

/* Records of sandboxes that ended more than --retain-records ago leave the
 * list and the disk. With g.lock held; returns how many went. */
int sandbox_prune_records(void)
{
    int64_t now = now_ms();
    int n = 0;
    if (g.cfg.retain_records_ms <= 0)
        return 0;
    for (struct sandbox **pp = &g.sandboxes; *pp;) {
        struct sandbox *s = *pp;
        int64_t ended = s->stopped_at ? s->stopped_at : s->updated_at;
        bool done = s->status == SBXD_STOPPED || s->status == SBXD_FAILED || s->status == SBXD_ABORTED;
        /* refs == 1: only the list holds it (no request, no finalizer). */
        if (!done || s->refs != 1 || s->snap_pending || now - ended < g.cfg.retain_records_ms) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        sandbox_remove_state(s);
        sandbox_unref(s);
        n++;
    }
    return n;
}

/* Nothing runs or reads them: every command exited, none held but by the
 * list (no stream, no request). With g.lock held. */
static bool commands_idle(struct sandbox *s)
{
    for (struct command *c = s->commands; c; c = c->next)
        if (!c->exited || c->refs > 1)
            return false;
    return true;
}

/* Frees the commands only the list holds; those being read stay. */
static void drop_commands(struct sandbox *s)
{
    struct command **pp = &s->commands;
    while (*pp) {
        struct command *c = *pp;
        if (c->refs > 1) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        c->sbx = NULL;
        command_unref(c);
    }
}

#define SPILLS_PER_ROUND 64

/* Moves the commands of the stopped sandboxes in v (each referenced) to
 * the command store. Entered and left with g.lock held; the files are
 * written without it: a stopped sandbox's records no longer change, and
 * only this thread frees them. */
static void spill_commands(struct sandbox **v, int n)
{
    for (int i = 0; i < n; i++) {
        struct sandbox *s = v[i];
        struct command *list = s->commands;
        int r, e;
        pthread_mutex_unlock(&g.lock);
        r = cmdstore_write(s->id, list);
        e = errno;
        pthread_mutex_lock(&g.lock);
        if (r < 0) {
            static bool warned;
            s->cmds_store_failed = true;
            sbxd_log(warned ? LOG_DEBUG : LOG_WARN, "cannot write the commands of stopped sandbox %s to the state directory "
                     "(%s): their output stays in memory for --retain-output", s->id, strerror(e));
            warned = true;
        } else {
            s->cmds_stored = true;
            if (commands_idle(s))
                drop_commands(s);
        }
        sandbox_unref(s);
    }
}

/* Periodic housekeeping on the I/O thread: timeouts are handled there
 * directly; here, the commands of stopped sandboxes move to the command
 * store once idle (--spill-after) and go for good after --retain-output. */
void sandbox_janitor(void)
{
    struct sandbox *spill[SPILLS_PER_ROUND];
    int64_t now = now_ms();
    int n, nspill = 0;
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        int64_t used = s->stopped_at > s->cmds_used_at ? s->stopped_at : s->cmds_used_at;
        if (s->status != SBXD_STOPPED && s->status != SBXD_FAILED)
            continue;
        if (now - s->stopped_at >= g.cfg.retain_stopped_ms) {
            if (s->cmds_stored)
                cmdstore_remove(s->id);
            s->cmds_stored = false;
            drop_commands(s);
            s->ncommands = 0;
            for (struct command *c = s->commands; c; c = c->next)
                s->ncommands++;
            continue;
        }
        if (!s->commands || now - used < g.cfg.spill_after_ms || !commands_idle(s))
            continue;
        if (s->cmds_stored)
            drop_commands(s); /* copies that reads loaded */
        else if (!s->cmds_store_failed && nspill < SPILLS_PER_ROUND) {
            sandbox_ref(s);
            spill[nspill++] = s;
        }
    }
    spill_commands(spill, nspill);
    snapshot_expire();
    n = sandbox_prune_records();
    if (n)
        sbxd_log(LOG_INFO, "removed the records of %d sandboxes stopped more than %lld ms ago "
                 "(--retain-records)", n, (long long)g.cfg.retain_records_ms);
    n = named_prune_locked();
    if (n)
        sbxd_log(LOG_INFO, "forgot %d named sandboxes whose sessions were all removed (--retain-records)", n);
    http_sweep();
    /* What a burst of connections freed (libmicrohttpd's per-connection
     * pools, 32 KiB each) stays in the allocator's arenas, and first
     * becomes resident when it is freed: give it back to the kernel. */
    malloc_trim(0);
}
