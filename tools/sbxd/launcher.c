/* SPDX-License-Identifier: MIT */
/*
 * launcher: every fork+exec of sbxd happens on this one long-lived thread.
 * bwrap --die-with-parent relies on PR_SET_PDEATHSIG, which fires when the
 * *thread* that forked the process exits; forking from a libmicrohttpd
 * connection thread would kill the sandbox when that connection closed.
 *
 * The child shares sbxd's memory until it execs (clone with CLONE_VM |
 * CLONE_VFORK, what posix_spawn does): copying the page tables of a process
 * with hundreds of threads is the expensive part of fork, and it would be
 * paid for every sandbox. So the child calls only async-signal-safe
 * functions, writes only its own stack, and execs an absolute path.
 *
 * The child makes every system call raw: glibc's setresuid() would,
 * sharing sbxd's memory, broadcast the change to every thread of sbxd, and
 * its other wrappers (and a sanitiser's interceptors) keep state there.
 */
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sbxd.h"

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static const struct spawn_req *pending;
static pid_t result;
static int result_errno;
static bool done, stop;
static pthread_t thread;
/* One caller at a time: the slot holds a single request. */
static pthread_mutex_t callers = PTHREAD_MUTEX_INITIALIZER;
/* The descriptor limit sbxd started with: what sandboxes get. */
static struct rlimit nofile_orig;
static bool nofile_raised;

void launcher_raise_nofile(void)
{
    /* A connection costs sbxd a descriptor (and a thread): serve as many
     * as the hard limit allows. Children get the limit back (child()). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &nofile_orig) != 0 || nofile_orig.rlim_cur >= nofile_orig.rlim_max)
        return;
    rl = nofile_orig;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        nofile_raised = true;
}

/* The child's system calls are made raw: it runs on sbxd's memory, so it
 * touches no libc state (errno aside, which the launcher sets again), and
 * a sanitiser's interceptors never see it. */
static int dup_to(int from, int to)
{
    return from == to ? to : (int)syscall(SYS_dup3, from, to, 0);
}

static _Noreturn void leave(int code)
{
    for (;;)
        syscall(SYS_exit_group, code);
}

static int child(void *arg)
{
    const struct spawn_req *r = arg;
    /* The kernel's sigaction and sigset: all zero is SIG_DFL, no flags, an
     * empty mask, on every architecture. */
    static const uint64_t zero_action[4] = {0, 0, 0, 0};
    const uint64_t no_signals = 0;
    int high[SPAWN_MAX_FDS];
    int null_fd, exec_fd;

    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, NULL, sizeof no_signals);
    for (int s = 1; s < NSIG; s++)
        syscall(SYS_rt_sigaction, s, zero_action, NULL, sizeof no_signals); /* SIGKILL, SIGSTOP: EINVAL */
    syscall(SYS_setpgid, 0, 0);
    for (int i = 0; i < r->ncgroups; i++) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, r->cgroup_procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || syscall(SYS_write, fd, "0", 1) != 1)
            leave(125);
        syscall(SYS_close, fd);
    }
    if (nofile_raised)
        syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &nofile_orig, NULL);

    /* Move the kept fds out of the way before placing them at 3, 4, ... */
    for (int i = 0; i < r->nkeep; i++)
        if ((high[i] = (int)syscall(SYS_fcntl, r->keep_fds[i], F_DUPFD, 64)) < 0)
            leave(125);
    null_fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
    if (null_fd < 0 || dup_to(null_fd, 0) < 0)
        leave(125);
    if (dup_to(r->stdout_fd >= 0 ? r->stdout_fd : null_fd, 1) < 0 ||
        dup_to(r->stderr_fd >= 0 ? r->stderr_fd : null_fd, 2) < 0)
        leave(125);
    for (int i = 0; i < r->nkeep; i++)
        if (dup_to(high[i], 3 + i) < 0)
            leave(125);
    syscall(SYS_close_range, (unsigned)(3 + r->nkeep), ~0U, 0);
    /* The program is opened while still privileged, so the sandbox's id
     * needs no search permission on the path to it. */
    exec_fd = (int)syscall(SYS_openat, AT_FDCWD, r->argv[0], O_PATH | O_CLOEXEC);
    if (exec_fd < 0)
        leave(127);
    if (r->set_ids && (syscall(SYS_setgroups, 0, NULL) < 0 ||
                       syscall(SYS_setresgid, r->gid, r->gid, r->gid) < 0 ||
                       syscall(SYS_setresuid, r->uid, r->uid, r->uid) < 0))
        leave(125);
    syscall(SYS_execveat, exec_fd, "", r->argv, environ, AT_EMPTY_PATH);
    leave(127);
}

#define CHILD_STACK (64 * 1024)

static void *launcher_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lk);
    for (;;) {
        while (!pending && !stop)
            pthread_cond_wait(&cv, &lk);
        if (stop)
            break;
        const struct spawn_req *r = pending;
        pid_t pid = -1;
        if (r->argv[0][0] != '/') {
            errno = EINVAL; /* only absolute paths: no PATH search in the child */
        } else {
            char *stack = malloc(CHILD_STACK);
            if (stack) {
                /* The launcher thread is suspended until the child execs. */
                void *req;
                memcpy(&req, &r, sizeof req); /* clone's argument is not const */
                pid = clone(child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, req);
                free(stack);
            } else {
                errno = ENOMEM;
            }
        }
        result = pid;
        result_errno = pid < 0 ? errno : 0;
        pending = NULL;
        done = true;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&lk);
    return NULL;
}

int launcher_start(void)
{
    sigset_t all, old;
    int r;
    /* The thread blocks every signal; the main thread handles them. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&thread, NULL, launcher_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r == 0 ? 0 : -1;
}

void launcher_stop(void)
{
    pthread_mutex_lock(&lk);
    stop = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lk);
    pthread_join(thread, NULL);
}

pid_t launcher_spawn(const struct spawn_req *req)
{
    pid_t pid;
    int e;

    pthread_mutex_lock(&callers);
    pthread_mutex_lock(&lk);
    pending = req;
    done = false;
    pthread_cond_broadcast(&cv);
    while (!done)
        pthread_cond_wait(&cv, &lk);
    pid = result;
    e = result_errno;
    pthread_mutex_unlock(&lk);
    pthread_mutex_unlock(&callers);
    if (pid < 0)
        errno = e;
    return pid;
}
