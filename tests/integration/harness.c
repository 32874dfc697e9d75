/* SPDX-License-Identifier: MIT */
/* harness: runs one integration suite and gives its tests a real sbxd (see harness.h). */
#include "harness.h"

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEAM_ID "team_sbxdit"
#define USER_AGENT "vercel/sandbox/1.10.2 (Node.js/v20.20.2; linux/x64)"
#define START_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS 60000
#define REQUEST_TIMEOUT_MS 120000

/* ---- small utilities ------------------------------------------------------------ */

int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    ck_assert_msg(p != NULL, "out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    ck_assert_msg(p != NULL, "out of memory");
    return p;
}

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    ck_assert_msg(vasprintf(&s, fmt, ap) >= 0, "out of memory");
    return s;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    char *s;
    va_start(ap, f);
    s = vfmt(f, ap);
    va_end(ap);
    return s;
}

static char **strv_dup(const char *const *v)
{
    size_t n = 0;
    char **out;
    while (v && v[n])
        n++;
    out = xmalloc((n + 1) * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    out[n] = NULL;
    return out;
}

void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

bool contains(const char *s, const char *needle)
{
    return s && needle && strstr(s, needle) != NULL;
}

json_t *jpack(const char *f, ...)
{
    json_error_t je;
    va_list ap;
    json_t *j;
    va_start(ap, f);
    j = json_vpack_ex(&je, 0, f, ap);
    va_end(ap);
    ck_assert_msg(j != NULL, "json_pack(%s): %s", f, je.text);
    return j;
}

const char *rand_hex(size_t n)
{
    static char out[64];
    unsigned char b[32];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ck_assert(n < sizeof out && fd >= 0);
    ck_assert(read(fd, b, sizeof b) == (ssize_t)sizeof b);
    close(fd);
    for (size_t i = 0; i < n; i++)
        out[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[n] = '\0';
    return out;
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    nftw(path, rm_cb, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

int host_sh(const char *f, ...)
{
    va_list ap;
    char *cmd;
    int st;
    va_start(ap, f);
    cmd = vfmt(f, ap);
    va_end(ap);
    st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st), "cannot run host command: %s", cmd);
    free(cmd);
    return WEXITSTATUS(st);
}

int free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(fd >= 0);
    ck_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    ck_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

bool host_process_exists(const char *const *argv)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool found = false;
    size_t want_len = 0;
    char want[4096];

    for (size_t i = 0; argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        ck_assert(want_len + n <= sizeof want);
        memcpy(want + want_len, argv[i], n);
        want_len += n;
    }
    ck_assert(d != NULL);
    while (!found && (e = readdir(d)) != NULL) {
        char path[300], buf[4096];
        ssize_t n;
        int fd;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        n = read(fd, buf, sizeof buf);
        close(fd);
        found = n == (ssize_t)want_len && memcmp(buf, want, want_len) == 0;
    }
    closedir(d);
    return found;
}

/* ---- the guard process ------------------------------------------------------------- */

static void print_log_tail(const char *log, size_t bytes, FILE *out)
{
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char buf[8192];
    ssize_t n;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(out, "(no log at %s)\n", log);
        if (fd >= 0)
            close(fd);
        return;
    }
    if ((size_t)st.st_size > bytes)
        lseek(fd, st.st_size - (off_t)bytes, SEEK_SET);
    fprintf(out, "---- last %zu bytes of %s ----\n", bytes, log);
    while ((n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, out);
    fprintf(out, "---- end of sbxd log ----\n");
    fflush(out);
    close(fd);
}

void sbxd_dump_log(const struct sbxd *d, size_t bytes)
{
    print_log_tail(d->log, bytes, stderr);
}

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void pidfd_signal(int pidfd, int sig)
{
    syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static bool pidfd_wait(int pidfd, int ms)
{
    struct pollfd p = {pidfd, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

/* Watches the test through a pipe: "P pid" (sbxd started), "X" (it exited),
 * "R path" (also remove this), "D" (the test stopped its server). EOF before
 * "D" means the test died: explain, stop sbxd, clean up. */
static void guard_main(int fd, const char *dir, const char *log)
{
    char buf[8192], line[4096];
    size_t have = 0;
    int pidfd = -1;
    bool done = false;
    char **paths = NULL;
    size_t npaths = 0;

    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        char *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        have += (size_t)n;
        while ((nl = memchr(buf, '\n', have)) != NULL) {
            size_t len = (size_t)(nl - buf);
            if (len >= sizeof line)
                len = sizeof line - 1;
            memcpy(line, buf, len);
            line[len] = '\0';
            memmove(buf, nl + 1, have - (size_t)(nl + 1 - buf));
            have -= (size_t)(nl + 1 - buf);
            if (line[0] == 'P') {
                if (pidfd >= 0)
                    close(pidfd);
                pidfd = pidfd_open_((pid_t)atoi(line + 2));
            } else if (line[0] == 'X') {
                if (pidfd >= 0)
                    close(pidfd);
                pidfd = -1;
            } else if (line[0] == 'R') {
                char **v = realloc(paths, (npaths + 1) * sizeof *v);
                if (v) {
                    paths = v;
                    paths[npaths++] = strdup(line + 2);
                }
            } else if (line[0] == 'D') {
                done = true;
            }
        }
    }
    if (done) {
        for (size_t i = 0; i < npaths; i++)
            if (paths[i])
                rm_rf(paths[i]);
        _exit(0);
    }
    fprintf(stderr, "\n# sbxd-it guard: the test ended without stopping sbxd (failure or timeout)\n");
    print_log_tail(log, 6000, stderr);
    if (pidfd >= 0) {
        pidfd_signal(pidfd, SIGTERM);
        if (!pidfd_wait(pidfd, 30000)) {
            fprintf(stderr, "# sbxd-it guard: sbxd did not stop on SIGTERM; killing it\n");
            pidfd_signal(pidfd, SIGKILL);
            pidfd_wait(pidfd, 10000);
        }
    }
    for (size_t i = 0; i < npaths; i++)
        if (paths[i])
            rm_rf(paths[i]);
    rm_rf(dir);
    _exit(0);
}

static void guard_say(struct sbxd *d, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void guard_say(struct sbxd *d, const char *f, ...)
{
    va_list ap;
    char *msg;
    size_t len;
    va_start(ap, f);
    msg = vfmt(f, ap);
    va_end(ap);
    len = strlen(msg);
    ck_assert_msg(write(d->guard_fd, msg, len) == (ssize_t)len, "cannot talk to the guard");
    free(msg);
}

static void start_guard(struct sbxd *d)
{
    int p[2];
    pid_t pid;
    ck_assert(pipe2(p, O_CLOEXEC) == 0);
    fflush(NULL);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        setsid(); /* out of the test's process group, which a Check timeout kills */
        signal(SIGPIPE, SIG_IGN);
        guard_main(p[0], d->dir, d->log);
    }
    close(p[0]);
    d->guard_fd = p[1];
    d->guard_pid = pid;
}

void sbxd_cleanup_path(struct sbxd *d, const char *path)
{
    guard_say(d, "R %s\n", path);
}

/* ---- starting and stopping sbxd ------------------------------------------------------ */

static const char *sbxd_exe(void)
{
    const char *p = getenv("SBXD");
    ck_assert_msg(p && *p, "SBXD (the sbxd program to test) is not set in the environment");
    return p;
}

uid_t sbxd_it_uid(void)
{
    const char *u = getenv("SBXD_IT_UID");
    return u && *u && geteuid() == 0 ? (uid_t)strtoul(u, NULL, 10) : 0;
}

void sbxd_it_become_user(void)
{
    uid_t u = sbxd_it_uid();
    if (u && (setgroups(0, NULL) < 0 || setresgid(u, u, u) < 0 || setresuid(u, u, u) < 0))
        _exit(126);
}

/* Unprivileged runs: sbxd and its helpers are copied into the test's
 * directory (owned by that uid), which the build tree may not be. */
static void copy_program(const char *src, const char *dst, uid_t uid)
{
    char buf[65536];
    ssize_t n;
    int in = open(src, O_RDONLY | O_CLOEXEC), out;
    if (in < 0)
        return; /* an optional helper that was not built */
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    ck_assert_msg(out >= 0, "cannot create %s: %s", dst, strerror(errno));
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert(write(out, buf, (size_t)n) == n);
    close(in);
    close(out);
    ck_assert(chown(dst, uid, uid) == 0);
}

static void prepare_unprivileged(struct sbxd *d, uid_t uid)
{
    static const char *const progs[] = {"sbxd", "sbxd-init", "sbxd-net"};
    char src[PATH_MAX], dst[400], *slash;
    snprintf(src, sizeof src, "%s", sbxd_exe());
    slash = strrchr(src, '/');
    ck_assert(slash != NULL);
    snprintf(dst, sizeof dst, "%s/bin", d->dir);
    ck_assert(mkdir(dst, 0755) == 0 && chown(dst, uid, uid) == 0);
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        snprintf(slash + 1, sizeof src - (size_t)(slash + 1 - src), "%s", progs[i]);
        snprintf(dst, sizeof dst, "%s/bin/%s", d->dir, progs[i]);
        copy_program(src, dst, uid);
    }
    ck_assert(chown(d->dir, uid, uid) == 0);
    snprintf(d->exe, sizeof d->exe, "%s/bin/sbxd", d->dir);
}

static void launch(struct sbxd *d)
{
    int out[2], logfd;
    char listen_arg[320];
    char line[1024];
    size_t have = 0;
    size_t nargs = 0;
    const char **argv;
    pid_t parent = getpid(), pid;
    int64_t deadline;

    while (d->args[nargs])
        nargs++;
    argv = xmalloc((nargs + 9) * sizeof *argv);
    snprintf(listen_arg, sizeof listen_arg, "unix:%s", d->sock);
    argv[0] = d->exe[0] ? d->exe : sbxd_exe();
    argv[1] = "--listen";
    argv[2] = listen_arg;
    argv[3] = "--state-dir";
    argv[4] = d->state;
    argv[5] = "--log-level";
    argv[6] = "debug";
    for (size_t i = 0; i < nargs; i++)
        argv[7 + i] = d->args[i];
    /* An unprivileged sbxd has fewer isolation layers: the tests run
     * against what it can do (the layers tests check the refusal). */
    if (sbxd_it_uid())
        argv[7 + nargs++] = "--allow-degraded";
    argv[7 + nargs] = NULL;

    ck_assert(pipe2(out, O_CLOEXEC) == 0);
    logfd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ck_assert_msg(logfd >= 0, "cannot open %s: %s", d->log, strerror(errno));
    fflush(NULL);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        /* If the test dies, sbxd gets SIGTERM and stops its sandboxes. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(logfd, 2);
        for (size_t i = 0; d->env[i]; i++)
            putenv(d->env[i]);
        if (sbxd_it_uid())
            setenv("HOME", d->dir, 1);
        sbxd_it_become_user();
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(argv);
    close(out[1]);
    close(logfd);
    d->pid = pid;
    d->out_fd = out[0];
    guard_say(d, "P %d\n", (int)pid);

    /* Exactly one line on stdout: "sbxd listening on URL". */
    deadline = mono_ms() + START_TIMEOUT_MS;
    for (;;) {
        struct pollfd p = {d->out_fd, POLLIN, 0};
        int64_t left = deadline - mono_ms();
        ssize_t n;
        if (memchr(line, '\n', have))
            break;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            sbxd_dump_log(d, 4000);
            ck_abort_msg("sbxd did not print its listening line within %d ms", START_TIMEOUT_MS);
        }
        n = read(d->out_fd, line + have, sizeof line - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int st = 0;
            waitpid(d->pid, &st, 0);
            guard_say(d, "X\n");
            d->pid = 0;
            sbxd_dump_log(d, 4000);
            ck_abort_msg("sbxd exited before listening (status %d)", st);
        }
        have += (size_t)n;
        line[have] = '\0';
    }
    line[have] = '\0';
    ck_assert_msg(strncmp(line, "sbxd listening on ", 18) == 0, "unexpected first line: %s", line);
    ck_assert_msg(strchr(line, '\n') == line + have - 1, "more than one line on stdout: %s", line);
    line[have - 1] = '\0';
    snprintf(d->url, sizeof d->url, "%.300s", line + 18);
    ck_assert_msg(strcmp(d->url, listen_arg) == 0, "sbxd listens on %s, not %s", d->url, listen_arg);

    {
        char path[400];
        int fd;
        ssize_t n;
        snprintf(path, sizeof path, "%s/token", d->state);
        for (size_t i = 0; d->args[i] && d->args[i + 1]; i++)
            if (strcmp(d->args[i], "--token-file") == 0)
                snprintf(path, sizeof path, "%s", d->args[i + 1]);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "no token at %s", path);
        n = read(fd, d->token, sizeof d->token - 1);
        close(fd);
        ck_assert(n > 0);
        d->token[n] = '\0';
        d->token[strcspn(d->token, " \r\n")] = '\0';
    }
}

struct sbxd *sbxd_start(const char *const *args, const char *const *env)
{
    struct sbxd *d = calloc(1, sizeof *d);
    ck_assert(d != NULL);
    snprintf(d->dir, sizeof d->dir, "/tmp/sbxd-it-XXXXXX");
    ck_assert_msg(mkdtemp(d->dir) != NULL, "mkdtemp: %s", strerror(errno));
    chmod(d->dir, 0755);
    if (sbxd_it_uid())
        prepare_unprivileged(d, sbxd_it_uid());
    snprintf(d->sock, sizeof d->sock, "%s/sock", d->dir);
    snprintf(d->state, sizeof d->state, "%s/state", d->dir);
    snprintf(d->log, sizeof d->log, "%s/sbxd.log", d->dir);
    d->args = strv_dup(args);
    d->env = strv_dup(env);
    d->out_fd = -1;
    d->t_start = mono_ms();
    start_guard(d);
    launch(d);
    return d;
}

void sbxd_set_args(struct sbxd *d, const char *const *args)
{
    ck_assert_msg(d->pid == 0, "sbxd_set_args: the server is still running");
    strv_free(d->args);
    d->args = strv_dup(args);
}

void sbxd_restart(struct sbxd *d)
{
    ck_assert_msg(d->pid == 0, "sbxd_restart: the server is still running");
    launch(d);
}

void sbxd_terminate(struct sbxd *d)
{
    int st = 0;
    int64_t deadline = mono_ms() + STOP_TIMEOUT_MS;
    pid_t r;

    if (d->pid == 0)
        return;
    ck_assert(kill(d->pid, SIGTERM) == 0);
    while ((r = waitpid(d->pid, &st, WNOHANG)) == 0 && mono_ms() < deadline)
        usleep(10000);
    if (r == 0) {
        sbxd_dump_log(d, 4000);
        ck_abort_msg("sbxd did not exit within %d ms of SIGTERM", STOP_TIMEOUT_MS);
    }
    guard_say(d, "X\n");
    d->pid = 0;
    if (d->out_fd >= 0)
        close(d->out_fd);
    d->out_fd = -1;
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        sbxd_dump_log(d, 4000);
        ck_abort_msg("sbxd did not exit cleanly on SIGTERM: %s %d",
                     WIFEXITED(st) ? "exit status" : "signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
}

void sbxd_kill(struct sbxd *d)
{
    int st = 0;
    ck_assert_msg(d->pid > 0, "sbxd_kill: the server is not running");
    ck_assert(kill(d->pid, SIGKILL) == 0);
    ck_assert(waitpid(d->pid, &st, 0) == d->pid);
    guard_say(d, "X\n");
    d->pid = 0;
    if (d->out_fd >= 0)
        close(d->out_fd);
    d->out_fd = -1;
}

pid_t sbxd_kill_unreaped(struct sbxd *d)
{
    pid_t pid = d->pid;
    char path[64], stat[512] = "";
    bool zombie = false;
    ck_assert_msg(pid > 0, "sbxd_kill_unreaped: the server is not running");
    ck_assert(kill(pid, SIGKILL) == 0);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 500 && !zombie; i++) {
        FILE *f = fopen(path, "re");
        char *end;
        if (f && fgets(stat, sizeof stat, f) && (end = strrchr(stat, ')')) && end[1] == ' ')
            zombie = end[2] == 'Z';
        if (f)
            fclose(f);
        if (!zombie)
            usleep(10000);
    }
    ck_assert_msg(zombie, "sbxd %d did not become a zombie: %s", (int)pid, stat);
    guard_say(d, "X\n");
    d->pid = 0;
    if (d->out_fd >= 0)
        close(d->out_fd);
    d->out_fd = -1;
    return pid;
}

void sbxd_stop(struct sbxd *d)
{
    if (!d)
        return;
    if (getenv("SBXD_IT_TIMING"))
        fprintf(stderr, "# %s: %lld ms\n", tcase_name() ? tcase_name() : "?",
                (long long)(mono_ms() - d->t_start));
    int64_t t0 = mono_ms();
    sbxd_terminate(d);
    int64_t t1 = mono_ms();
    rm_rf(d->dir);
    /* The guard removes what tests registered. */
    guard_say(d, "D\n");
    close(d->guard_fd);
    waitpid(d->guard_pid, NULL, 0);
    if (getenv("SBXD_IT_TIMING"))
        fprintf(stderr, "#   stop: terminate %lld ms, cleanup %lld ms\n", (long long)(t1 - t0), (long long)(mono_ms() - t1));
    strv_free(d->args);
    strv_free(d->env);
    free(d);
}

/* ---- HTTP ------------------------------------------------------------------------------- */

void membuf_add(struct membuf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        ck_assert_msg(b->p != NULL, "out of memory");
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static size_t body_cb(char *p, size_t size, size_t n, void *user)
{
    membuf_add(user, p, size * n);
    return size * n;
}

static void copy_header(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
        const char *v = line + nl + 1;
        size_t vl = len - nl - 1;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl >= cap)
            vl = cap - 1;
        memcpy(out, v, vl);
        out[vl] = '\0';
    }
}

static size_t header_cb(char *p, size_t size, size_t n, void *user)
{
    struct http_resp *r = user;
    size_t len = size * n;
    if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue): forget earlier headers. */
        r->ctype[0] = '\0';
        r->retry_after[0] = '\0';
    }
    copy_header(p, len, "Content-Type", r->ctype, sizeof r->ctype);
    copy_header(p, len, "Retry-After", r->retry_after, sizeof r->retry_after);
    return len;
}

struct upload {
    const char *p;
    size_t len, off;
};

static size_t read_cb(char *out, size_t size, size_t n, void *user)
{
    struct upload *u = user;
    size_t want = size * n, left = u->len - u->off;
    if (want > left)
        want = left;
    if (want > 65536)
        want = 65536;
    memcpy(out, u->p + u->off, want);
    u->off += want;
    return want;
}

static bool has_header(const char *const *headers, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; headers && headers[i]; i++)
        if (strncasecmp(headers[i], name, n) == 0 && headers[i][n] == ':')
            return true;
    return false;
}

static CURL *shared_handle; /* REQ_REUSE: keeps its connection between requests */

struct req_setup {
    bool shared;
    CURL *h;
    struct curl_slist *hdrs;
    struct upload up;
    char *url;
};

static void setup_request(struct req_setup *s, struct sbxd *d, const char *method, const char *path,
                          const void *body, size_t len, const char *const *headers, unsigned flags,
                          struct http_resp *r)
{
    char auth[300];
    memset(s, 0, sizeof *s);
    if (flags & REQ_REUSE) {
        if (!shared_handle)
            shared_handle = curl_easy_init();
        else
            curl_easy_reset(shared_handle); /* keeps the live connection */
        s->h = shared_handle;
        s->shared = true;
    } else {
        s->h = curl_easy_init();
    }
    ck_assert(s->h != NULL);
    if (flags & REQ_NO_TEAM)
        s->url = fmt("http://sbxd%s", path);
    else
        s->url = fmt("http://sbxd%s%cteamId=" TEAM_ID, path, strchr(path, '?') ? '&' : '?');
    snprintf(r->what, sizeof r->what, "%s %s", method, path);
    curl_easy_setopt(s->h, CURLOPT_URL, s->url);
    curl_easy_setopt(s->h, CURLOPT_UNIX_SOCKET_PATH, d->sock);
    curl_easy_setopt(s->h, CURLOPT_PROXY, "");
    curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
    curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(s->h, CURLOPT_HEADERDATA, r);
    if (!(flags & REQ_NO_AUTH) && !has_header(headers, "Authorization")) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", d->token);
        s->hdrs = curl_slist_append(s->hdrs, auth);
    }
    if (!(flags & REQ_NO_CTYPE) && !has_header(headers, "Content-Type"))
        s->hdrs = curl_slist_append(s->hdrs, "Content-Type: application/json");
    if (!has_header(headers, "User-Agent"))
        s->hdrs = curl_slist_append(s->hdrs, "User-Agent: " USER_AGENT);
    if (!has_header(headers, "Expect"))
        s->hdrs = curl_slist_append(s->hdrs, "Expect:"); /* node's fetch never waits for 100 */
    if (flags & REQ_CHUNKED)
        s->hdrs = curl_slist_append(s->hdrs, "Transfer-Encoding: chunked");
    for (size_t i = 0; headers && headers[i]; i++)
        s->hdrs = curl_slist_append(s->hdrs, headers[i]);
    curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);

    if (strcmp(method, "GET") == 0 && !body) {
        curl_easy_setopt(s->h, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "POST") == 0 || body) {
        s->up.p = body ? body : "";
        s->up.len = body ? len : 0;
        curl_easy_setopt(s->h, CURLOPT_POST, 1L);
        if (flags & REQ_CHUNKED) {
            curl_easy_setopt(s->h, CURLOPT_READFUNCTION, read_cb);
            curl_easy_setopt(s->h, CURLOPT_READDATA, &s->up);
        } else {
            curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->up.p);
            curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->up.len);
        }
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, method);
    } else {
        curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "HEAD") == 0)
            curl_easy_setopt(s->h, CURLOPT_NOBODY, 1L);
    }
}

static void cleanup_request(struct req_setup *s)
{
    curl_slist_free_all(s->hdrs);
    if (!s->shared)
        curl_easy_cleanup(s->h);
    free(s->url);
}

static void finish_resp(struct http_resp *r, struct membuf *b)
{
    r->body = b->p ? b->p : xstrdup("");
    r->len = b->p ? b->len : 0;
    r->json = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
}

struct http_resp *http_request(struct sbxd *d, const char *method, const char *path,
                               const void *body, size_t len, const char *const *headers,
                               unsigned flags)
{
    struct http_resp *r = calloc(1, sizeof *r);
    struct req_setup s;
    struct membuf b = {0};
    CURLcode rc;

    ck_assert(r != NULL);
    setup_request(&s, d, method, path, body, len, headers, flags, r);
    curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &b);
    rc = curl_easy_perform(s.h);
    curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(s.h, CURLINFO_NUM_CONNECTS, &r->new_conns);
    if (rc != CURLE_OK && r->status == 0) {
        const char *e = curl_easy_strerror(rc);
        free(b.p);
        b = (struct membuf){0};
        membuf_add(&b, e, strlen(e));
    }
    cleanup_request(&s);
    finish_resp(r, &b);
    return r;
}

void http_resp_free(struct http_resp *r)
{
    if (!r)
        return;
    free(r->body);
    json_decref(r->json);
    free(r);
}

struct http_resp *http_get(struct sbxd *d, const char *f, ...)
{
    va_list ap;
    char *path;
    struct http_resp *r;
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    r = http_request(d, "GET", path, NULL, 0, NULL, 0);
    free(path);
    return r;
}

struct http_resp *http_delete(struct sbxd *d, const char *f, ...)
{
    va_list ap;
    char *path;
    struct http_resp *r;
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    r = http_request(d, "DELETE", path, NULL, 0, NULL, 0);
    free(path);
    return r;
}

struct http_resp *http_post(struct sbxd *d, json_t *body, const char *f, ...)
{
    va_list ap;
    char *path, *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct http_resp *r;
    json_decref(body);
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    r = http_request(d, "POST", path, text, text ? strlen(text) : 0, NULL, 0);
    free(path);
    free(text);
    return r;
}

struct http_resp *http_post_text(struct sbxd *d, const char *text, const char *f, ...)
{
    va_list ap;
    char *path;
    struct http_resp *r;
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    r = http_request(d, "POST", path, text, text ? strlen(text) : 0, NULL, 0);
    free(path);
    return r;
}

struct http_resp *http_json(struct sbxd *d, const char *method, json_t *body, const char *const *headers,
                            const char *f, ...)
{
    va_list ap;
    char *path, *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct http_resp *r;
    json_decref(body);
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    r = http_request(d, method, path, text, text ? strlen(text) : 0, headers, 0);
    free(path);
    free(text);
    return r;
}

struct http_resp *http_get_url(const char *url, long timeout_ms)
{
    return http_get_url_resolve(url, timeout_ms, NULL);
}

struct http_resp *http_get_url_resolve(const char *url, long timeout_ms, struct curl_slist *resolve)
{
    struct http_resp *r = calloc(1, sizeof *r);
    struct membuf b = {0};
    CURL *h = curl_easy_init();
    CURLcode rc;

    ck_assert(r != NULL && h != NULL);
    snprintf(r->what, sizeof r->what, "GET %s", url);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (resolve)
        curl_easy_setopt(h, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    if (rc != CURLE_OK) {
        const char *e = curl_easy_strerror(rc);
        r->status = 0;
        free(b.p);
        b = (struct membuf){0};
        membuf_add(&b, e, strlen(e));
    }
    curl_easy_cleanup(h);
    finish_resp(r, &b);
    return r;
}

void expect_error(const struct http_resp *r, long status, const char *code)
{
    json_t *e, *c, *m;
    ck_assert_msg(r->status == status, "%s: expected HTTP %ld, got %ld: %s", r->what, status,
                  r->status, r->body);
    ck_assert_msg(strncmp(r->ctype, "application/json", 16) == 0,
                  "%s: error Content-Type is '%s', not application/json", r->what, r->ctype);
    ck_assert_msg(r->json != NULL, "%s: error body is not JSON: %s", r->what, r->body);
    e = json_object_get(r->json, "error");
    c = json_object_get(e, "code");
    m = json_object_get(e, "message");
    ck_assert_msg(json_is_object(e) && json_is_string(c) && json_is_string(m),
                  "%s: error body is not {\"error\":{\"code\",\"message\"}}: %s", r->what, r->body);
    ck_assert_msg(json_string_length(m) > 0, "%s: empty error message", r->what);
    if (code)
        ck_assert_msg(strcmp(json_string_value(c), code) == 0, "%s: error code '%s', expected '%s'",
                      r->what, json_string_value(c), code);
}

/* ---- NDJSON streams ----------------------------------------------------------------------- */

struct stream_ctx {
    CURL *h;
    line_cb cb;
    void *user;
    struct membuf partial;
    struct membuf error_body;
    bool aborted;
};

static size_t stream_cb(char *p, size_t size, size_t n, void *user)
{
    struct stream_ctx *c = user;
    size_t len = size * n;
    long status = 0;
    int64_t t = mono_ms();

    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        membuf_add(&c->error_body, p, len);
        return len;
    }
    membuf_add(&c->partial, p, len);
    for (;;) {
        char *nl = memchr(c->partial.p, '\n', c->partial.len);
        size_t ll;
        if (!nl)
            break;
        ll = (size_t)(nl - c->partial.p);
        *nl = '\0';
        if (ll > 0 && c->cb(c->partial.p, ll, t, c->user) != 0) {
            c->aborted = true;
            return 0;
        }
        memmove(c->partial.p, nl + 1, c->partial.len - ll - 1);
        c->partial.len -= ll + 1;
        c->partial.p[c->partial.len] = '\0';
    }
    return len;
}

struct http_resp *http_stream(struct sbxd *d, const char *method, json_t *body, line_cb cb,
                              void *user, const char *f, ...)
{
    struct http_resp *r = calloc(1, sizeof *r);
    struct stream_ctx c;
    struct req_setup s;
    char *path, *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    va_list ap;
    CURLcode rc;

    ck_assert(r != NULL);
    json_decref(body);
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    memset(&c, 0, sizeof c);
    c.cb = cb;
    c.user = user;
    setup_request(&s, d, method, path, text, text ? strlen(text) : 0, NULL, 0, r);
    c.h = s.h;
    curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, stream_cb);
    curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &c);
    rc = curl_easy_perform(s.h);
    curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &r->status);
    /* A last line without a newline still counts (the SDK parses it). */
    if (rc == CURLE_OK && r->status == 200 && c.partial.len > 0)
        cb(c.partial.p, c.partial.len, mono_ms(), user);
    if (rc != CURLE_OK && !c.aborted) {
        const char *e = curl_easy_strerror(rc);
        ck_abort_msg("%s: transfer failed: %s (HTTP %ld)", r->what, e, r->status);
    }
    cleanup_request(&s);
    free(c.partial.p);
    finish_resp(r, &c.error_body);
    free(path);
    free(text);
    return r;
}

static int collect_line(const char *line, size_t len, int64_t t, void *user)
{
    struct ndjson *nd = user;
    json_error_t je;
    json_t *j = json_loadb(line, len, 0, &je);
    ck_assert_msg(j != NULL, "NDJSON line %zu is not JSON (%s): %.*s", nd->n, je.text,
                  (int)(len > 300 ? 300 : len), line);
    nd->lines = realloc(nd->lines, (nd->n + 1) * sizeof *nd->lines);
    nd->t = realloc(nd->t, (nd->n + 1) * sizeof *nd->t);
    ck_assert(nd->lines && nd->t);
    nd->lines[nd->n] = j;
    nd->t[nd->n] = t;
    nd->n++;
    return 0;
}

struct ndjson *ndjson_request(struct sbxd *d, const char *method, json_t *body, const char *f, ...)
{
    struct ndjson *nd = calloc(1, sizeof *nd);
    struct http_resp *r;
    va_list ap;
    char *path;

    ck_assert(nd != NULL);
    va_start(ap, f);
    path = vfmt(f, ap);
    va_end(ap);
    nd->t_start = mono_ms();
    r = http_stream(d, method, body, collect_line, nd, "%s", path);
    nd->t_end = mono_ms();
    nd->status = r->status;
    snprintf(nd->ctype, sizeof nd->ctype, "%s", r->ctype);
    if (r->status != 200)
        nd->error_body = xstrdup(r->body);
    http_resp_free(r);
    free(path);
    return nd;
}

void ndjson_free(struct ndjson *nd)
{
    if (!nd)
        return;
    for (size_t i = 0; i < nd->n; i++)
        json_decref(nd->lines[i]);
    free(nd->lines);
    free(nd->t);
    free(nd->error_body);
    free(nd);
}

/* ---- sandboxes and commands ------------------------------------------------------------------ */

struct http_resp *sbx_create_resp(struct sbxd *d, json_t *body)
{
    struct http_resp *r = http_post(d, body ? body : json_object(), "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_msg(json_is_string(json_object_get(json_object_get(r->json, "sandbox"), "id")),
                  "create: no sandbox.id in %s", r->body);
    return r;
}

char *sbx_create(struct sbxd *d, json_t *body)
{
    struct http_resp *r = sbx_create_resp(d, body);
    char *id = xstrdup(json_string_value(json_object_get(json_object_get(r->json, "sandbox"), "id")));
    http_resp_free(r);
    return id;
}

json_t *sbx_get_sandbox(struct sbxd *d, const char *sid)
{
    struct http_resp *r = http_get(d, "/v1/sandboxes/%s", sid);
    json_t *s;
    expect_status(r, 200);
    s = json_object_get(r->json, "sandbox");
    ck_assert_msg(json_is_object(s), "GET sandbox: no sandbox object: %s", r->body);
    json_incref(s);
    http_resp_free(r);
    return s;
}

const char *sbx_status_str(struct sbxd *d, const char *sid)
{
    static char st[64];
    json_t *s = sbx_get_sandbox(d, sid);
    const char *v = json_string_value(json_object_get(s, "status"));
    snprintf(st, sizeof st, "%s", v ? v : "(none)");
    json_decref(s);
    return st;
}

bool sbx_wait_status(struct sbxd *d, const char *sid, const char *status, int64_t timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    for (;;) {
        if (strcmp(sbx_status_str(d, sid), status) == 0)
            return true;
        if (mono_ms() >= deadline)
            return false;
        usleep(50000);
    }
}

void cmd_result_free(struct cmd_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    ndjson_free(r->logs);
    free(r);
}

static void check_command(json_t *c, const char *what)
{
    static const char *const strs[] = {"id", "name", "cwd", "sandboxId"};
    char *text = json_dumps(c, JSON_COMPACT);
    ck_assert_msg(json_is_object(c), "%s: no command object", what);
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        ck_assert_msg(json_is_string(json_object_get(c, strs[i])), "%s: command.%s is not a string: %s",
                      what, strs[i], text);
    ck_assert_msg(json_is_array(json_object_get(c, "args")), "%s: command.args: %s", what, text);
    ck_assert_msg(json_is_integer(json_object_get(c, "startedAt")), "%s: command.startedAt: %s", what,
                  text);
    ck_assert_msg(json_object_get(c, "exitCode") != NULL, "%s: command.exitCode key missing: %s",
                  what, text);
    free(text);
}

struct cmd_result *sbx_logs(struct sbxd *d, const char *sid, const char *cid)
{
    struct cmd_result *res = calloc(1, sizeof *res);
    struct membuf out = {0}, err = {0};
    struct ndjson *nd;

    ck_assert(res != NULL);
    snprintf(res->id, sizeof res->id, "%s", cid);
    res->exit_code = -1;
    nd = ndjson_request(d, "GET", NULL, "/v1/sandboxes/%s/cmd/%s/logs", sid, cid);
    ck_assert_msg(nd->status == 200, "logs of %s: HTTP %ld: %s", cid, nd->status,
                  nd->error_body ? nd->error_body : "");
    ck_assert_msg(strcmp(nd->ctype, "application/x-ndjson") == 0,
                  "logs Content-Type is '%s', not exactly application/x-ndjson", nd->ctype);
    for (size_t i = 0; i < nd->n; i++) {
        const char *stream = json_string_value(json_object_get(nd->lines[i], "stream"));
        json_t *data = json_object_get(nd->lines[i], "data");
        ck_assert_msg(stream != NULL, "log line without stream");
        ck_assert_msg(!res->error_line, "a log line follows the error line");
        if (strcmp(stream, "error") == 0) {
            ck_assert_msg(json_is_string(json_object_get(data, "code")) &&
                              json_is_string(json_object_get(data, "message")),
                          "error log line without data.code/message");
            res->error_line = true;
            continue;
        }
        ck_assert_msg(strcmp(stream, "stdout") == 0 || strcmp(stream, "stderr") == 0,
                      "log line stream '%s'", stream);
        ck_assert_msg(json_is_string(data), "log line data is not a string");
        membuf_add(strcmp(stream, "stdout") == 0 ? &out : &err, json_string_value(data),
                   json_string_length(data));
    }
    res->out = out.p ? out.p : xstrdup("");
    res->out_len = out.len;
    res->err = err.p ? err.p : xstrdup("");
    res->err_len = err.len;
    res->logs = nd;
    return res;
}

struct cmd_result *sbxd_run(struct sbxd *d, const char *sid, json_t *cmd)
{
    struct ndjson *nd;
    struct cmd_result *res;
    json_t *c0, *c1;
    const char *id0, *id1;
    char id[64];
    int code;

    json_object_set_new(cmd, "wait", json_true());
    nd = ndjson_request(d, "POST", cmd, "/v1/sandboxes/%s/cmd", sid);
    ck_assert_msg(nd->status == 200, "run (wait) in %s: HTTP %ld: %s", sid, nd->status,
                  nd->error_body ? nd->error_body : "");
    ck_assert_msg(strcmp(nd->ctype, "application/x-ndjson") == 0,
                  "wait-mode Content-Type is '%s', not exactly application/x-ndjson", nd->ctype);
    ck_assert_msg(nd->n == 2, "wait mode sent %zu lines, not 2", nd->n);
    c0 = json_object_get(nd->lines[0], "command");
    c1 = json_object_get(nd->lines[1], "command");
    check_command(c0, "wait line 1");
    check_command(c1, "wait line 2");
    ck_assert_msg(json_is_null(json_object_get(c0, "exitCode")), "wait line 1: exitCode is not null");
    ck_assert_msg(json_is_integer(json_object_get(c1, "exitCode")), "wait line 2: exitCode is not a number");
    id0 = json_string_value(json_object_get(c0, "id"));
    id1 = json_string_value(json_object_get(c1, "id"));
    ck_assert_str_eq(id0, id1);
    snprintf(id, sizeof id, "%s", id0);
    code = (int)json_integer_value(json_object_get(c1, "exitCode"));
    ndjson_free(nd);
    res = sbx_logs(d, sid, id);
    res->exit_code = code;
    return res;
}

static struct cmd_result *sh_v(struct sbxd *d, const char *sid, bool sudo, const char *f, va_list ap)
{
    char *script = vfmt(f, ap);
    json_t *cmd = jpack("{s:s,s:[s,s],s:b}", "command", "sh", "args", "-c", script, "sudo", sudo);
    free(script);
    return sbxd_run(d, sid, cmd);
}

struct cmd_result *sbx_sh(struct sbxd *d, const char *sid, const char *f, ...)
{
    va_list ap;
    struct cmd_result *r;
    va_start(ap, f);
    r = sh_v(d, sid, false, f, ap);
    va_end(ap);
    return r;
}

struct cmd_result *sbx_sh_sudo(struct sbxd *d, const char *sid, const char *f, ...)
{
    va_list ap;
    struct cmd_result *r;
    va_start(ap, f);
    r = sh_v(d, sid, true, f, ap);
    va_end(ap);
    return r;
}

char *sbx_detach(struct sbxd *d, const char *sid, json_t *cmd)
{
    struct http_resp *r = http_post(d, cmd, "/v1/sandboxes/%s/cmd", sid);
    json_t *c;
    char *id;
    expect_status(r, 200);
    ck_assert_msg(strncmp(r->ctype, "application/json", 16) == 0, "detached run Content-Type %s",
                  r->ctype);
    c = json_object_get(r->json, "command");
    check_command(c, "detached run");
    id = xstrdup(json_string_value(json_object_get(c, "id")));
    http_resp_free(r);
    return id;
}

char *sbx_detach_sh(struct sbxd *d, const char *sid, const char *f, ...)
{
    va_list ap;
    char *script, *id;
    va_start(ap, f);
    script = vfmt(f, ap);
    va_end(ap);
    id = sbx_detach(d, sid, jpack("{s:s,s:[s,s]}", "command", "sh", "args", "-c", script));
    free(script);
    return id;
}

int sbx_cmd_wait(struct sbxd *d, const char *sid, const char *cid)
{
    struct http_resp *r = http_get(d, "/v1/sandboxes/%s/cmd/%s?wait=true", sid, cid);
    json_t *c;
    int code;
    expect_status(r, 200);
    c = json_object_get(r->json, "command");
    check_command(c, "wait=true");
    ck_assert_msg(json_is_integer(json_object_get(c, "exitCode")),
                  "GET ?wait=true returned without a numeric exitCode: %s", r->body);
    code = (int)json_integer_value(json_object_get(c, "exitCode"));
    http_resp_free(r);
    return code;
}

/* ---- files -------------------------------------------------------------------------------------- */

static la_ssize_t tar_write_cb(struct archive *a, void *user, const void *p, size_t n)
{
    (void)a;
    membuf_add(user, p, n);
    return (la_ssize_t)n;
}

void *tar_gz_bomb(const char *name, int64_t size, size_t *len)
{
    static const char zeros[65536];
    struct archive *a = archive_write_new();
    struct archive_entry *ae = archive_entry_new();
    struct membuf b = {0};

    ck_assert(a != NULL && ae != NULL);
    ck_assert(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
    ck_assert(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
    ck_assert(archive_write_set_filter_option(a, "gzip", "compression-level", "9") == ARCHIVE_OK);
    archive_write_set_bytes_in_last_block(a, 1);
    ck_assert(archive_write_open(a, &b, NULL, tar_write_cb, NULL) == ARCHIVE_OK);
    archive_entry_set_pathname(ae, name);
    archive_entry_set_filetype(ae, AE_IFREG);
    archive_entry_set_perm(ae, 0644);
    archive_entry_set_size(ae, (la_int64_t)size);
    ck_assert(archive_write_header(a, ae) == ARCHIVE_OK);
    for (int64_t left = size; left > 0;) {
        size_t n = left < (int64_t)sizeof zeros ? (size_t)left : sizeof zeros;
        ck_assert(archive_write_data(a, zeros, n) == (la_ssize_t)n);
        left -= (int64_t)n;
    }
    archive_entry_free(ae);
    ck_assert(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
    *len = b.len;
    return b.p;
}

void *tar_gz(const struct tar_ent *e, size_t n, int format, size_t *len)
{
    struct archive *a = archive_write_new();
    struct membuf b = {0};
    time_t now = time(NULL);

    ck_assert(a != NULL);
    ck_assert(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
    if (format == TAR_USTAR)
        ck_assert(archive_write_set_format_ustar(a) == ARCHIVE_OK);
    else
        ck_assert(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
    archive_write_set_bytes_in_last_block(a, 1);
    ck_assert(archive_write_open(a, &b, NULL, tar_write_cb, NULL) == ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *ae = archive_entry_new();
        char type = e[i].type ? e[i].type : 'f';
        archive_entry_set_pathname(ae, e[i].name);
        archive_entry_set_uid(ae, 0);
        archive_entry_set_gid(ae, 0);
        archive_entry_set_mtime(ae, now, 0);
        archive_entry_set_perm(ae, (mode_t)(e[i].mode ? e[i].mode : (type == 'd' ? 0755 : 0644)));
        switch (type) {
        case 'd':
            archive_entry_set_filetype(ae, AE_IFDIR);
            archive_entry_set_size(ae, 0);
            break;
        case 'l':
            archive_entry_set_filetype(ae, AE_IFLNK);
            archive_entry_set_symlink(ae, e[i].link);
            archive_entry_set_size(ae, 0);
            break;
        case 'h':
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_hardlink(ae, e[i].link);
            archive_entry_set_size(ae, 0);
            break;
        default:
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_size(ae, (la_int64_t)e[i].len);
        }
        ck_assert_msg(archive_write_header(a, ae) >= ARCHIVE_WARN, "tar header %s: %s", e[i].name,
                      archive_error_string(a));
        if (type == 'f' && e[i].len)
            ck_assert(archive_write_data(a, e[i].data, e[i].len) == (la_ssize_t)e[i].len);
        archive_entry_free(ae);
    }
    ck_assert(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
    *len = b.len;
    return b.p;
}

char **tar_gz_names(const void *data, size_t len)
{
    struct archive *a = archive_read_new();
    struct archive_entry *ae;
    char **v = xmalloc(sizeof *v);
    size_t n = 0;

    v[0] = NULL;
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    ck_assert(archive_read_open_memory(a, data, len) == ARCHIVE_OK);
    while (archive_read_next_header(a, &ae) == ARCHIVE_OK) {
        v = realloc(v, (n + 2) * sizeof *v);
        ck_assert(v != NULL);
        v[n++] = xstrdup(archive_entry_pathname(ae));
        v[n] = NULL;
    }
    archive_read_free(a);
    return v;
}

struct http_resp *sbx_fs_write(struct sbxd *d, const char *sid, const void *tgz, size_t len,
                               const char *xcwd)
{
    char hx[512], *path = fmt("/v1/sandboxes/%s/fs/write", sid);
    const char *headers[3] = {"Content-Type: application/gzip", NULL, NULL};
    struct http_resp *r;
    if (xcwd) {
        snprintf(hx, sizeof hx, "x-cwd: %s", xcwd);
        headers[1] = hx;
    }
    r = http_request(d, "POST", path, tgz, len, headers, 0);
    free(path);
    return r;
}

void sbx_write_file(struct sbxd *d, const char *sid, const char *abs_path, const void *data,
                    size_t len, int mode)
{
    struct tar_ent e = {abs_path + (abs_path[0] == '/'), data, len, mode, 'f', NULL};
    size_t tlen;
    void *t = tar_gz(&e, 1, TAR_PAX, &tlen);
    struct http_resp *r = sbx_fs_write(d, sid, t, tlen, "/");
    expect_status(r, 200);
    http_resp_free(r);
    free(t);
}

struct http_resp *sbx_fs_read(struct sbxd *d, const char *sid, const char *path, const char *cwd)
{
    json_t *b = cwd ? jpack("{s:s,s:s}", "path", path, "cwd", cwd) : jpack("{s:s}", "path", path);
    return http_post(d, b, "/v1/sandboxes/%s/fs/read", sid);
}

/* ---- the host's loopback HTTP server ------------------------------------------------------------- */

static void *host_server_main(void *arg)
{
    struct host_server *s = arg;
    for (;;) {
        char buf[8192], reply[1024];
        size_t got = 0;
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC), n;
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        /* Read the request head (5 s at most), then answer. */
        while (got < sizeof buf - 1) {
            struct pollfd p = {c, POLLIN, 0};
            ssize_t r;
            if (poll(&p, 1, 5000) <= 0)
                break;
            r = read(c, buf + got, sizeof buf - 1 - got);
            if (r <= 0)
                break;
            got += (size_t)r;
            buf[got] = '\0';
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
        memcpy(s->last_head, buf, got + 1);
        __atomic_add_fetch(&s->hits, 1, __ATOMIC_SEQ_CST);
        n = snprintf(reply, sizeof reply,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     strlen(s->body), s->body);
        (void)!send(c, reply, (size_t)n, MSG_NOSIGNAL);
        close(c);
    }
}

struct host_server *host_server_start(const char *body)
{
    struct host_server *s = calloc(1, sizeof *s);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int one = 1;

    ck_assert(s != NULL);
    snprintf(s->body, sizeof s->body, "%s", body);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert(s->fd >= 0);
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(bind(s->fd, (struct sockaddr *)&a, sizeof a) == 0);
    ck_assert(listen(s->fd, 64) == 0);
    ck_assert(getsockname(s->fd, (struct sockaddr *)&a, &len) == 0);
    s->port = ntohs(a.sin_port);
    ck_assert(pthread_create(&s->thread, NULL, host_server_main, s) == 0);
    return s;
}

void host_server_stop(struct host_server *s)
{
    if (!s)
        return;
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->fd);
    free(s);
}

/* ---- main ---------------------------------------------------------------------------------------- */

TCase *sbx_tcase(const char *name, double timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s);
    return tc;
}

int main(void)
{
    SRunner *sr;
    int failed;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    sr = srunner_create(sbx_test_suite());
    /* Every test runs in its own process (and starts its own sbxd). */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
