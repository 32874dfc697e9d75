/* SPDX-License-Identifier: MIT */
/*
 * attack: run inside a sandbox by the isolation tests. Each probe tries
 * something a sandbox must not be able to do and prints one line,
 * "NAME ok" when the kernel let it happen or "NAME errno=N (text)" when it
 * was refused. Every probe is chosen so that, without sbxd's layers, the
 * call would succeed or fail with an errno other than the one the layer
 * gives: the tests compare, so a missing layer shows.
 *
 *   attack syscalls     every system-call family the seccomp filter refuses
 *   attack open FILE    open FILE for writing (never writes)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

static void report(const char *name, long r)
{
    if (r >= 0)
        printf("%s ok\n", name);
    else
        printf("%s errno=%d (%s)\n", name, errno, strerror(errno));
    fflush(stdout);
}

/* A child of clone/clone3 exits at once; the parent reaps it. */
static long reaped(long pid)
{
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    return pid;
}

static long int80_getpid(void)
{
#if defined(__x86_64__)
    long r;
    /* The 32-bit ABI from a 64-bit process: getpid is 20 there. */
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
#else
    errno = ENOSYS;
    return -1;
#endif
}

static long x32_getpid(void)
{
#if defined(__x86_64__)
    /* x32 numbers have bit 30 set; getpid is 39 in both tables. */
    return syscall(0x40000000L | 39);
#else
    errno = ENOSYS;
    return -1;
#endif
}

static int syscalls(void)
{
    struct {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    } ca;
    char handle[128];
    int mnt_id;

    /* Namespaces: each of these works for an unprivileged process. */
    report("unshare-user", unshare(CLONE_NEWUSER));
    report("unshare-mount", unshare(CLONE_NEWNS));
    report("clone-newuser", reaped(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
    memset(&ca, 0, sizeof ca);
    ca.exit_signal = SIGCHLD;
    memset(handle, 0, sizeof handle); /* handle_bytes 0: EOVERFLOW without the filter */
    report("clone3", reaped(syscall(SYS_clone3, &ca, sizeof ca)));
    report("setns", syscall(SYS_setns, -1, 0));                 /* EBADF without the filter */
    /* Mounts: the target does not exist, so ENOENT without the filter. */
    report("mount", mount("none", "/nonexistent-sbxd", "tmpfs", 0, NULL));
    report("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/", 0)); /* an O_PATH fd otherwise */
    report("fsconfig", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0)); /* EBADF otherwise */
    report("mount_setattr", syscall(SYS_mount_setattr, -1, "", 0, NULL, 0)); /* EINVAL otherwise */
    /* Keyrings: the session keyring is any process's to read. */
    report("keyctl", syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0));
    report("add_key", syscall(SYS_add_key, "user", "sbxd-attack", "x", 1, -2 /* process */));
    report("request_key", syscall(SYS_request_key, "user", "sbxd-none", NULL, 0)); /* ENOKEY */
    report("bpf", syscall(SYS_bpf, -1, NULL, 0));                     /* EINVAL otherwise */
    report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)); /* EFAULT */
    report("userfaultfd", syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */ | O_CLOEXEC));
    report("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL)); /* EFAULT otherwise */
    report("name_to_handle_at",
           syscall(SYS_name_to_handle_at, AT_FDCWD, "/", (void *)handle, &mnt_id, 0)); /* EOVERFLOW/EFAULT */
    /* The rest of the mount API. As sudo (capabilities in its namespace)
     * each gets past the permission check and fails on its bad argument
     * (ENOENT, EINVAL, EBADF) without the filter. */
    report("umount2", syscall(SYS_umount2, "/nonexistent-sbxd", 0));
    report("pivot_root", syscall(SYS_pivot_root, "/nonexistent-sbxd", "/nonexistent-sbxd"));
    report("fsopen", syscall(SYS_fsopen, "nonexistent-fs", 0));
    report("fsmount", syscall(SYS_fsmount, -1, 0, 0));
    report("fspick", syscall(SYS_fspick, AT_FDCWD, "/nonexistent-sbxd", 0));
    report("move_mount", syscall(SYS_move_mount, -1, "", -1, "", 0));
    report("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));       /* EBADF */
    report("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));      /* EBADF */
    /* The kernel itself. Arguments chosen to fail harmlessly if a call
     * were let through: a bad reboot magic (EINVAL), no module image, a
     * path that does not exist. */
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
    report("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
    report("init_module", syscall(SYS_init_module, NULL, 0, ""));
    report("finit_module", syscall(SYS_finit_module, -1, "", 0));
    report("delete_module", syscall(SYS_delete_module, "nonexistent_sbxd", 0));
    report("reboot", syscall(SYS_reboot, 0, 0, 0, NULL));
    report("swapon", syscall(SYS_swapon, "/nonexistent-sbxd", 0));
    report("swapoff", syscall(SYS_swapoff, "/nonexistent-sbxd"));
    report("acct", syscall(SYS_acct, "/nonexistent-sbxd/acct"));
    report("quotactl", syscall(SYS_quotactl, 0x800004 /* QCMD(Q_GETFMT, USRQUOTA) */, "/nonexistent-sbxd", 0,
                               NULL));                                                 /* ENOENT */
    report("quotactl_fd", syscall(SYS_quotactl_fd, -1, 0x800004, 0, NULL));            /* EBADF */
    report("syslog", syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0)); /* a size, often */
#if defined(__x86_64__)
    report("iopl", syscall(SYS_iopl, 0));              /* level 0 is anyone's */
    report("ioperm", syscall(SYS_ioperm, 0, 0, 0));    /* a zero range: nothing to grant */
#endif
    report("vhangup", syscall(SYS_vhangup));
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
    /* Terminal injection, plain and with high bits the kernel ignores. */
    report("tiocsti", ioctl(1, TIOCSTI, "x"));                    /* ENOTTY on a pipe */
    report("tiocsti-high", syscall(SYS_ioctl, 1, 0x100000000UL | TIOCSTI, "x"));
    report("tioclinux", ioctl(1, 0x541C /* TIOCLINUX */, "\x0b")); /* ENOTTY on a pipe */
    /* Other system-call ABIs. */
    report("int80", int80_getpid());
    report("x32", x32_getpid());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "syscalls") == 0)
        return syscalls();
    if (argc == 3 && strcmp(argv[1], "open") == 0) {
        int fd = open(argv[2], O_WRONLY | O_CLOEXEC);
        report("open", fd);
        if (fd >= 0)
            close(fd);
        return 0;
    }
    fprintf(stderr, "usage: attack syscalls | open FILE\n");
    return 2;
}
