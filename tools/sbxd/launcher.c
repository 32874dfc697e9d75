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
 * Changing ids uses the raw system calls: glibc's setresuid() would, sharing
 * sbxd's memory, broadcast the change to every thread of sbxd.
 */
#include <errno.h>
#include <grp.h>
#include <sched.h>
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

static int child(void *arg)
{
    const struct spawn_req *r = arg;
    sigset_t none;
    int high[SPAWN_MAX_FDS];
    int null_fd, exec_fd;

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    setpgid(0, 0);
    for (int i = 0; i < r->ncgroups; i++) {
        int fd = open(r->cgroup_procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(125);
        close(fd);
    }
    if (nofile_raised)
        setrlimit(RLIMIT_NOFILE, &nofile_orig);

    /* Move the kept fds out of the way before placing them at 3, 4, ... */
    for (int i = 0; i < r->nkeep; i++)
        if ((high[i] = fcntl(r->keep_fds[i], F_DUPFD, 64)) < 0)
            _exit(125);
    null_fd = open("/dev/null", O_RDWR);
    if (null_fd < 0 || dup2(null_fd, 0) < 0)
        _exit(125);
    if (dup2(r->stdout_fd >= 0 ? r->stdout_fd : null_fd, 1) < 0 ||
        dup2(r->stderr_fd >= 0 ? r->stderr_fd : null_fd, 2) < 0)
        _exit(125);
    for (int i = 0; i < r->nkeep; i++)
        if (dup2(high[i], 3 + i) < 0)
            _exit(125);
    close_range((unsigned)(3 + r->nkeep), ~0U, 0);
    /* The program is opened while still privileged, so the sandbox's id
     * needs no search permission on the path to it. */
    exec_fd = open(r->argv[0], O_PATH | O_CLOEXEC);
    if (exec_fd < 0)
        _exit(127);
    if (r->set_ids && (syscall(SYS_setgroups, 0, NULL) < 0 ||
                       syscall(SYS_setresgid, r->gid, r->gid, r->gid) < 0 ||
                       syscall(SYS_setresuid, r->uid, r->uid, r->uid) < 0))
        _exit(125);
    syscall(SYS_execveat, exec_fd, "", r->argv, environ, AT_EMPTY_PATH);
    _exit(127);
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
