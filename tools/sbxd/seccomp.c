/* SPDX-License-Identifier: MIT */
/*
 * seccomp: the system-call filter every sandbox command (and the git
 * fetcher) runs under, compiled once at start with libseccomp into a BPF
 * program that sbxd-init installs in each command's process before exec.
 * A deny list in the spirit of Docker's default profile: what a build or
 * test never needs and what every recent container escape used — the mount
 * APIs, new namespaces (so no nested user namespace to regain privileges
 * in), kernel keyrings, BPF, perf, io_uring, userfaultfd, module and kexec
 * loading, handles to host files, terminal injection — and every system
 * call ABI but the native one (int 0x80, x32).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Namespace flags of unshare(); clone() takes the same but CLONE_NEWTIME,
 * whose bit is part of clone's exit-signal byte. */
#define NS_FLAGS                                                                                   \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |  \
     CLONE_NEWNET | CLONE_NEWTIME)

static const char *const denied[] = {
    /* mounts, old and new API */
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr",
    /* namespaces (unshare and clone are filtered by flags below) */
    "setns",
    /* kernel keyrings: shared with the host, not namespaced */
    "keyctl", "add_key", "request_key",
    /* large kernel attack surfaces builds do not use */
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register",
    /* the kernel itself */
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm",
    "lookup_dcookie", "vhangup", "uselib", "nfsservctl",
    /* host files by handle, bypassing the mount namespace */
    "open_by_handle_at", "name_to_handle_at",
};

static int deny(scmp_filter_ctx ctx, const char *name, int err, unsigned n, const struct scmp_arg_cmp *cmp)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
        /* Too old a libseccomp to know it: the kernel may not have it either. */
        sbxd_log(LOG_DEBUG, "seccomp: %s is unknown to libseccomp", name);
        return 0;
    }
    return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((uint32_t)err), nr, n, cmp);
}

static int build(scmp_filter_ctx ctx)
{
    int r = 0;
    /* Other ABIs of this CPU (x86-64's int 0x80 and x32) never match the
     * native rules: refused whole. */
    r |= seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
        r |= deny(ctx, denied[i], EPERM, 0, NULL);
    /* unshare() and clone() only without namespace flags: one rule per flag
     * bit, so any of them set refuses the call. */
    for (int bit = 0; bit < 32; bit++) {
        uint64_t f = 1ull << bit;
        if (NS_FLAGS & f) {
            struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);
            r |= deny(ctx, "unshare", EPERM, 1, &c);
            if (f != CLONE_NEWTIME)
                r |= deny(ctx, "clone", EPERM, 1, &c);
        }
    }
    /* glibc falls back to clone() on ENOSYS, whose flags the filter can read
     * (clone3's are behind a pointer). */
    r |= deny(ctx, "clone3", ENOSYS, 0, NULL);
    /* Typing into the controlling terminal. The kernel reads the request as
     * an int: compare the low 32 bits only, or 0x1_0000_5412 would pass. */
    {
        struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCSTI);
        struct scmp_arg_cmp lnx = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCLINUX);
        r |= deny(ctx, "ioctl", EPERM, 1, &sti);
        r |= deny(ctx, "ioctl", EPERM, 1, &lnx);
    }
    return r;
}

void seccomp_probe(void)
{
    scmp_filter_ctx ctx;
    int fd = -1;
    struct stat st;
    void *prog = NULL;

    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
        layer_set(LAYER_SECCOMP, false, "this kernel has no seccomp (CONFIG_SECCOMP_FILTER)");
        return;
    }
    if (!(ctx = seccomp_init(SCMP_ACT_ALLOW))) {
        layer_set(LAYER_SECCOMP, false, "libseccomp could not start a filter");
        return;
    }
    if (build(ctx) != 0) {
        layer_set(LAYER_SECCOMP, false, "libseccomp %u.%u.%u could not build the filter",
                  seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro);
        goto out;
    }
    /* libseccomp 2.5 exports to a file descriptor only. */
    if ((fd = memfd_create("sbxd-seccomp", MFD_CLOEXEC)) < 0 || seccomp_export_bpf(ctx, fd) != 0 ||
        fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % 8 != 0 ||
        !(prog = sbx__malloc((size_t)st.st_size)) ||
        pread(fd, prog, (size_t)st.st_size, 0) != st.st_size) {
        layer_set(LAYER_SECCOMP, false, "cannot export the seccomp program: %s", strerror(errno));
        sbx__free(prog);
        goto out;
    }
    g.filter = prog;
    g.filter_len = (size_t)st.st_size;
    layer_set(LAYER_SECCOMP, true, "%zu system calls refused (mount APIs, setns, keyrings, bpf, perf, "
                                   "io_uring, userfaultfd, kexec, modules, file handles...), unshare "
                                   "and clone with namespace flags, clone3, TIOCSTI/TIOCLINUX, and other "
                                   "ABIs; %zu BPF instructions",
              sizeof denied / sizeof denied[0], g.filter_len / 8);
out:
    if (fd >= 0)
        close(fd);
    seccomp_release(ctx);
}

int seccomp_memfd(void)
{
    int fd;
    if (!g.filter)
        return -1;
    fd = memfd_create("sbxd-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, g.filter, g.filter_len) != (ssize_t)g.filter_len || lseek(fd, 0, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}
