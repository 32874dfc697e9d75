/* SPDX-License-Identifier: MIT */
/*
 * sbxd-net: user-mode networking for one allow-all sandbox. A short-lived
 * child makes tap0 inside the sandbox's network namespace; this process
 * stays in the host's and runs libslirp on the tap, so the sandbox's
 * connections leave as ordinary sockets of this process. Every frame from
 * the sandbox goes through netfilter first, which refuses the host's own
 * addresses. Before the first frame the process confines itself: the
 * --user ids, a user namespace of its own whose root is empty but for
 * resolv.conf and hosts, and a seccomp filter.
 *
 *   sbxd-net [--allow-host] [--restricted] [--user UID:GID] [--mtu N]
 *   fd 3: control socket to sbxd: 'R' once ready; EOF or HUP ends the process.
 *         sbxd may send network rules (netrules.h) as a 4-byte big-endian
 *         length and the text; each is answered 'A' once in force, or 'E'
 *         when refused (then nothing passes until rules are taken).
 *
 * --restricted (custom and deny-all policies): only what the rules allow,
 * nothing until the first rules arrive.
 *   fd 4: the sandbox's user namespace, fd 5: its network namespace
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <slirp/libslirp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "netfilter.h"
#include "netrules.h"

#define CTL_FD 3
#define USERNS_FD 4
#define NETNS_FD 5
#define TAP_NAME "tap0"
#define DEFAULT_MTU 65520
#define MTU_MIN 68    /* libslirp's IF_MTU_MIN */
#define MTU_MAX 65521 /* and IF_MTU_MAX */
#define ETH_HLEN 14
#define HOSTS_TTL_MS 5000
/* Frames taken from the tap per turn of the loop, so that a flood from the
 * sandbox still leaves libslirp's sockets their turn. */
#define TAP_BATCH 64
/* Where the empty root is built, before it becomes "/". */
#define NEW_ROOT "/tmp"

/* A libslirp timer (timer_new_opaque). */
struct timer {
    struct timer *next;
    SlirpTimerId id;
    void *cb_opaque;
    int64_t expire_ms; /* -1 while disarmed */
};

struct net {
    Slirp *slirp;
    int tap;
    int nl_events; /* rtnetlink address notifications */
    int nl_dump;   /* rtnetlink requests, so a refresh needs no new fd */
    uint32_t nl_seq;
    struct netfilter_policy policy;
    uint32_t *host, *spare; /* policy.host and the list being read */
    size_t caphost, capspare;
    struct pollfd *pfd;
    size_t npfd, cappfd;
    struct timer *timers;
    struct netrules rules;     /* in force when policy.rules points here */
    uint8_t *ctl;              /* a rules message being read */
    size_t ctl_len, ctl_cap;
};

enum { PFD_CTL, PFD_TAP, PFD_NETLINK, PFD_FIXED };

/* Every exit skips exit handlers: once confined there is no /proc and
 * ptrace is refused, so a leak checker's handler (sanitizer builds) could
 * only fail. Nothing is buffered (stderr is unbuffered). */
static void die(const char *what)
{
    /* stderr is sbxd's, which logs it. */
    fprintf(stderr, "sbxd-net: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void usage(void)
{
    fprintf(stderr, "sbxd-net: usage: sbxd-net [--allow-host] [--restricted] [--user UID:GID] [--mtu N]\n");
    _exit(2);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ms(void)
{
    return now_ns() / 1000000;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        errno = ENOMEM;
        die("out of memory");
    }
    return p;
}

/* ---- tap0, made inside the sandbox --------------------------------------- */

/* What the child answers: err 0 and the tap fd, or the step that failed. */
struct tap_answer {
    int err;
    char what[40];
};

static int set_ifaddr(int s, unsigned long req, const char *dev, uint32_t addr)
{
    struct ifreq ifr;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(addr)};

    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", dev);
    memcpy(&ifr.ifr_addr, &sin, sizeof sin);
    return ioctl(s, req, &ifr);
}

static int bring_up(int s, const char *dev)
{
    struct ifreq ifr;

    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", dev);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        return -1;
    ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP);
    return ioctl(s, SIOCSIFFLAGS, &ifr);
}

/* In the child: enter the sandbox's namespaces and make tap0 there. */
static int tap_setup(unsigned mtu, const char **what)
{
    struct ifreq ifr;
    struct rtentry rt;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    int tap, s;

    *what = "setns user namespace";
    if (setns(USERNS_FD, CLONE_NEWUSER) < 0)
        return -1;
    *what = "setns network namespace";
    if (setns(NETNS_FD, CLONE_NEWNET) < 0)
        return -1;
    /* Only now: a tun device is made in the namespace of whoever opens
     * /dev/net/tun. In root mode this is still kernel uid 0, which the
     * device's 0600 asks for. */
    *what = "open /dev/net/tun";
    if ((tap = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) < 0)
        return -1;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", TAP_NAME);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    *what = "create " TAP_NAME;
    if (ioctl(tap, TUNSETIFF, &ifr) < 0)
        return -1;
    *what = "socket";
    if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    ifr.ifr_mtu = (int)mtu;
    *what = "set " TAP_NAME "'s mtu";
    if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
        return -1;
    *what = "set " TAP_NAME "'s address";
    if (set_ifaddr(s, SIOCSIFADDR, TAP_NAME, NETFILTER_GUEST) < 0 ||
        set_ifaddr(s, SIOCSIFNETMASK, TAP_NAME, NETFILTER_VMASK) < 0)
        return -1;
    *what = "bring " TAP_NAME " up";
    if (bring_up(s, TAP_NAME) < 0)
        return -1;
    *what = "bring lo up";
    if (bring_up(s, "lo") < 0)
        return -1;
    memset(&rt, 0, sizeof rt);
    memcpy(&rt.rt_dst, &sin, sizeof sin);
    memcpy(&rt.rt_genmask, &sin, sizeof sin);
    sin.sin_addr.s_addr = htonl(NETFILTER_GATEWAY);
    memcpy(&rt.rt_gateway, &sin, sizeof sin);
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    *what = "add the default route";
    if (ioctl(s, SIOCADDRT, &rt) < 0)
        return -1;
    close(s);
    return tap;
}

static void tap_child(int sock, unsigned mtu)
{
    struct tap_answer a = {0};
    struct iovec iov = {&a, sizeof a};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    const char *what = "";
    int tap = tap_setup(mtu, &what);

    if (tap < 0) {
        a.err = errno;
        snprintf(a.what, sizeof a.what, "%s", what);
    } else {
        struct cmsghdr *cm;
        memset(&c, 0, sizeof c);
        msg.msg_control = c.buf;
        msg.msg_controllen = sizeof c.buf;
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &tap, sizeof tap);
    }
    _exit(sendmsg(sock, &msg, 0) == (ssize_t)sizeof a ? 0 : 1);
}

/* tap0 in the sandbox's network namespace, made by a child that enters it,
 * so that this process stays in the host's, where the stack's sockets go. */
static int make_tap(unsigned mtu)
{
    struct tap_answer a;
    struct iovec iov = {&a, sizeof a};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                         .msg_controllen = sizeof c.buf};
    struct cmsghdr *cm;
    int sv[2], tap = -1, status;
    ssize_t n;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair");
    if ((pid = fork()) < 0)
        die("fork");
    if (pid == 0) {
        close(sv[0]);
        tap_child(sv[1], mtu);
    }
    close(sv[1]);
    do
        n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof a) {
        if (n >= 0)
            errno = EPIPE;
        die("make " TAP_NAME ": no answer from the child");
    }
    if (a.err) {
        errno = a.err;
        a.what[sizeof a.what - 1] = '\0';
        die(a.what);
    }
    cm = CMSG_FIRSTHDR(&msg);
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
        memcpy(&tap, CMSG_DATA(cm), sizeof tap);
    if (tap < 0) {
        errno = EPROTO;
        die("make " TAP_NAME ": no descriptor from the child");
    }
    close(sv[0]);
    return tap;
}

/* ---- confinement ---------------------------------------------------------- */

static void write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        die(path);
    close(fd);
}

/* A user namespace of our own, with our uid and gid mapped to themselves:
 * in it we may build a mount namespace, and we hold no capability over the
 * host's namespaces, whatever uid we are. */
static void own_userns(void)
{
    char map[64];
    uid_t uid = geteuid();
    gid_t gid = getegid();

    /* A uid change made us non-dumpable, which makes /proc/self root's and
     * the maps below unwritable; undone right after. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        die("PR_SET_DUMPABLE");
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        die("cannot make a user namespace to confine itself (are unprivileged user "
            "namespaces disabled?)");
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    write_file("/proc/self/gid_map", map);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        die("PR_SET_DUMPABLE");
}

static void mkdir_parents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            die(path);
        *p = '/';
    }
}

/* A host file libslirp reads, found before the empty root hides it. */
struct exposed {
    const char *path;
    char real[PATH_MAX];
    int fd; /* O_PATH, or -1 when the host has no such file */
};

static void find_exposed(struct exposed *e)
{
    struct stat st;

    e->fd = -1;
    if (!realpath(e->path, e->real))
        return;
    e->fd = open(e->real, O_PATH | O_CLOEXEC);
    if (e->fd >= 0 && (fstat(e->fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(e->fd);
        e->fd = -1;
    }
}

/* Bind the file read-only at its real path in the new root, and point the
 * usual path at it when that is a symlink on the host (systemd-resolved's
 * stub-resolv.conf). */
static void expose(const struct exposed *e)
{
    char dst[PATH_MAX + sizeof NEW_ROOT], src[64];
    int fd;

    if (e->fd < 0)
        return;
    snprintf(dst, sizeof dst, "%s%s", NEW_ROOT, e->real);
    mkdir_parents(dst);
    if ((fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0444)) < 0)
        die(dst);
    close(fd);
    snprintf(src, sizeof src, "/proc/self/fd/%d", e->fd);
    if (mount(src, dst, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              NULL) < 0)
        die(e->path);
    if (strcmp(e->real, e->path) != 0) {
        snprintf(dst, sizeof dst, "%s%s", NEW_ROOT, e->path);
        mkdir_parents(dst);
        if (symlink(e->real, dst) < 0)
            die(dst);
    }
}

/* An empty, read-only root holding only resolv.conf (which libslirp reads
 * to forward DNS) and hosts: nothing else of the host's file system. */
static void empty_root(void)
{
    struct exposed files[] = {{.path = "/etc/resolv.conf"}, {.path = "/etc/hosts"}};
    size_t n = sizeof files / sizeof files[0];

    for (size_t i = 0; i < n; i++)
        find_exposed(&files[i]);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die("make / private");
    if (mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") <
        0)
        die("mount tmpfs");
    for (size_t i = 0; i < n; i++)
        expose(&files[i]);
    if (mount(NULL, NEW_ROOT, NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        die("remount the new root read-only");
    if (chdir(NEW_ROOT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
        die("pivot_root");
    /* The old root is stacked under the new one: detach it. */
    if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
        die("detach the old root");
    for (size_t i = 0; i < n; i++)
        if (files[i].fd >= 0)
            close(files[i].fd);
}

/* What the stack may not do even if a frame from the sandbox takes it
 * over. Default allow: libslirp and glib need an open-ended set of
 * ordinary calls, and what is dangerous here is a short list. */
static void install_seccomp(void)
{
    static const int deny[] = {
        /* Running another program. */
        SCMP_SYS(execve), SCMP_SYS(execveat),
        /* Reaching into other processes of the same uid. */
        SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
        SCMP_SYS(pidfd_getfd), SCMP_SYS(process_madvise), SCMP_SYS(kcmp),
        /* Changing the file system view: the empty root is the point. */
        SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
        SCMP_SYS(fsopen), SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick),
        SCMP_SYS(move_mount), SCMP_SYS(open_tree), SCMP_SYS(mount_setattr),
        SCMP_SYS(open_by_handle_at),
        /* Leaving our namespaces, or making new ones to hold capabilities in. */
        SCMP_SYS(unshare), SCMP_SYS(setns),
        /* Kernel interfaces a network stack has no use for, each a
         * frequent home of privilege escalations. */
        SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(bpf),
        SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(io_uring_setup),
        SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register), SCMP_SYS(kexec_load),
        SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
        SCMP_SYS(delete_module),
    };
    /* clone() making any namespace. */
    static const uint64_t ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET};
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? 0 : -ENOMEM;

    for (size_t i = 0; rc == 0 && i < sizeof deny / sizeof deny[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), deny[i], 0);
    for (size_t i = 0; rc == 0 && i < sizeof ns_flags / sizeof ns_flags[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
    /* clone3 keeps its flags in memory, out of a filter's sight: ENOSYS
     * sends glibc back to clone. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    /* New sockets: IP only, for the stack. No unix sockets, abstract or
     * path, to talk to the host's services with; no netlink either (the
     * two rtnetlink sockets are open already), where sock_diag would list
     * every socket on the host. libseccomp takes one comparison per
     * argument and rule, hence ranges around AF_INET and AF_INET6; an
     * argument with high bits set falls in the last one. */
    for (int f = 0; rc == 0 && f < AF_INET6; f++)
        if (f != AF_INET)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                  SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)f, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_GT, AF_INET6, 0));
    /* Typing into sbxd's terminal, should stderr be one. The kernel reads
     * the request as 32 bits: compare only those. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0) {
        errno = -rc;
        die("seccomp");
    }
}

static void confine(bool drop, uid_t uid, gid_t gid, pid_t parent)
{
    if (drop && (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
                 setresuid(uid, uid, uid) < 0))
        die("--user");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die("PR_SET_NO_NEW_PRIVS");
    /* Only now: a uid change clears it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        die("PR_SET_PDEATHSIG");
    if (getppid() != parent) {
        errno = ESRCH;
        die("sbxd exited");
    }
    own_userns();
    empty_root();
    install_seccomp();
}

/* ---- the host's addresses ------------------------------------------------- */

/* One dump of the host's IPv4 addresses into n->spare, made the list in
 * force once complete. EAGAIN: addresses changed during the dump. */
static int dump_hosts(struct net *n)
{
    static uint8_t buf[65536];
    struct {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
    } req = {
        .nh = {.nlmsg_len = sizeof req, .nlmsg_type = RTM_GETADDR,
               .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = ++n->nl_seq},
        .ifa = {.ifa_family = AF_INET},
    };
    size_t count = 0;
    bool intr = false;

    if (send(n->nl_dump, &req, sizeof req, 0) < 0)
        return -1;
    for (;;) {
        ssize_t r = recv(n->nl_dump, buf, sizeof buf, 0);
        size_t len;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        len = (size_t)r;
        for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len);
             nh = NLMSG_NEXT(nh, len)) {
            struct ifaddrmsg *ifa = NLMSG_DATA(nh);
            const uint8_t *local = NULL, *addr = NULL;
            size_t alen;

            if (nh->nlmsg_seq != n->nl_seq)
                continue;
            intr |= (nh->nlmsg_flags & NLM_F_DUMP_INTR) != 0;
            if (nh->nlmsg_type == NLMSG_DONE) {
                uint32_t *t = n->host;
                if (intr) {
                    errno = EAGAIN;
                    return -1;
                }
                size_t c = n->caphost;
                n->host = n->spare;
                n->caphost = n->capspare;
                n->spare = t;
                n->capspare = c;
                n->policy.host = n->host;
                n->policy.nhost = count;
                return 0;
            }
            if (nh->nlmsg_type == NLMSG_ERROR) {
                errno = EPROTO;
                return -1;
            }
            if (nh->nlmsg_type != RTM_NEWADDR || nh->nlmsg_len < NLMSG_LENGTH(sizeof *ifa) ||
                ifa->ifa_family != AF_INET)
                continue;
            alen = IFA_PAYLOAD(nh);
            for (struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
                if (RTA_PAYLOAD(a) != 4)
                    continue;
                if (a->rta_type == IFA_LOCAL)
                    local = RTA_DATA(a);
                else if (a->rta_type == IFA_ADDRESS)
                    addr = RTA_DATA(a);
            }
            /* On a point-to-point link IFA_ADDRESS is the peer's. */
            if (local)
                addr = local;
            if (!addr)
                continue;
            if (count == n->capspare) {
                n->capspare = n->capspare ? n->capspare * 2 : 16;
                n->spare = xrealloc(n->spare, n->capspare * sizeof *n->spare);
            }
            memcpy(&n->spare[count++], addr, 4);
        }
    }
}

/* Re-read the host's addresses; on failure the old list stays in force. */
static int refresh_hosts(struct net *n)
{
    int rc = -1;
    /* A dump that overlapped a change may lack an address: again. */
    for (int i = 0; i < 3; i++) {
        rc = dump_hosts(n);
        if (rc == 0 || errno != EAGAIN)
            break;
    }
    return rc;
}

static void open_netlink(struct net *n)
{
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
                             .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};

    n->nl_events = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (n->nl_events < 0 || bind(n->nl_events, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("rtnetlink");
    n->nl_dump = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (n->nl_dump < 0)
        die("rtnetlink");
}

/* True when an address notification came (or some were lost). */
static bool drain_netlink(int fd)
{
    char buf[8192];
    bool any = false;
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0 || (r < 0 && errno == ENOBUFS))
            any = true;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            return any;
    }
}

/* ---- libslirp's callbacks ------------------------------------------------- */

static ssize_t send_packet(const void *buf, size_t len, void *opaque)
{
    struct net *n = opaque;
    n->policy.now_ms = (uint64_t)now_ms();
    netfilter_observe(&n->policy, buf, len); /* the resolver's answers, in restricted mode */
    /* A full tap queue drops the frame, as a busy link would; TCP resends. */
    if (write(n->tap, buf, len) < 0 && errno != EAGAIN && errno != EINTR)
        return -1;
    return (ssize_t)len;
}

static void guest_error(const char *msg, void *opaque)
{
    /* The sandbox's own doing: not worth a line in sbxd's log each time. */
    (void)msg;
    (void)opaque;
}

static int64_t clock_get_ns(void *opaque)
{
    (void)opaque;
    return now_ns();
}

/* libslirp 4.7.0 has one timer, IPv6 router advertisements, which is off;
 * these keep the contract should a later version arm one for IPv4. */
static void *timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
    struct net *n = opaque;
    struct timer *t = xrealloc(NULL, sizeof *t);
    *t = (struct timer){n->timers, id, cb_opaque, -1};
    n->timers = t;
    return t;
}

static void timer_free(void *timer, void *opaque)
{
    struct net *n = opaque;
    for (struct timer **p = &n->timers; *p; p = &(*p)->next)
        if (*p == timer) {
            *p = (*p)->next;
            free(timer);
            return;
        }
}

static void timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
    (void)opaque;
    ((struct timer *)timer)->expire_ms = expire_ms;
}

static void run_timers(struct net *n)
{
    int64_t now = now_ms();
    /* From the top after each: a handler may free or add timers. */
    for (struct timer *t = n->timers; t;) {
        if (t->expire_ms >= 0 && t->expire_ms <= now) {
            t->expire_ms = -1;
            slirp_handle_timer(n->slirp, t->id, t->cb_opaque);
            t = n->timers;
        } else {
            t = t->next;
        }
    }
}

static void poll_fd_noop(int fd, void *opaque)
{
    /* The poll set is rebuilt from slirp_pollfds_fill on every turn. */
    (void)fd;
    (void)opaque;
}

static void notify(void *opaque)
{
    /* Nothing to wake: libslirp runs on this thread, between polls. */
    (void)opaque;
}

static int add_poll(int fd, int events, void *opaque)
{
    struct net *n = opaque;
    short ev = 0;

    if (n->npfd == n->cappfd) {
        n->cappfd *= 2;
        n->pfd = xrealloc(n->pfd, n->cappfd * sizeof *n->pfd);
    }
    if (events & SLIRP_POLL_IN)
        ev |= POLLIN;
    if (events & SLIRP_POLL_OUT)
        ev |= POLLOUT;
    if (events & SLIRP_POLL_PRI)
        ev |= POLLPRI;
    n->pfd[n->npfd] = (struct pollfd){fd, ev, 0};
    return (int)n->npfd++;
}

static int get_revents(int idx, void *opaque)
{
    const struct net *n = opaque;
    short r = n->pfd[idx].revents;
    return (r & POLLIN ? SLIRP_POLL_IN : 0) | (r & POLLOUT ? SLIRP_POLL_OUT : 0) |
           (r & POLLPRI ? SLIRP_POLL_PRI : 0) | (r & (POLLERR | POLLNVAL) ? SLIRP_POLL_ERR : 0) |
           (r & POLLHUP ? SLIRP_POLL_HUP : 0);
}

static const SlirpCb callbacks = {
    .send_packet = send_packet,
    .guest_error = guest_error,
    .clock_get_ns = clock_get_ns,
    .timer_free = timer_free,
    .timer_mod = timer_mod,
    .register_poll_fd = poll_fd_noop,
    .unregister_poll_fd = poll_fd_noop,
    .notify = notify,
    .timer_new_opaque = timer_new_opaque,
};

static Slirp *start_slirp(struct net *n, unsigned mtu, bool allow_host)
{
    SlirpConfig cfg;

    memset(&cfg, 0, sizeof cfg);
    cfg.version = 4;
    cfg.in_enabled = true;
    cfg.vnetwork.s_addr = htonl(NETFILTER_VNET);
    cfg.vnetmask.s_addr = htonl(NETFILTER_VMASK);
    cfg.vhost.s_addr = htonl(NETFILTER_GATEWAY);
    cfg.vnameserver.s_addr = htonl(NETFILTER_DNS);
    cfg.if_mtu = cfg.if_mru = mtu;
    /* netfilter refuses 10.0.2.2 first; this is the second lock. */
    cfg.disable_host_loopback = !allow_host;
    cfg.disable_dhcp = true;
    return slirp_new(&cfg, &callbacks, n);
}

/* ---- the loop --------------------------------------------------------------- */

/* A complete rules message: in force at once (the learnt addresses go with
 * the old rules; what was seen of UDP stays), and answered. */
static void take_rules(struct net *n, const uint8_t *text, size_t len)
{
    struct netrules r;
    char err[160];
    char reply = 'A';
    if (!netrules_parse((const char *)text, len, &r, err, sizeof err)) {
        /* Never the rules before, which may allow what the new ones do
         * not: nothing at all, and sbxd hears of it. */
        fprintf(stderr, "sbxd-net: %s\n", err);
        reply = 'E';
        if (!netrules_parse("", 0, &r, err, sizeof err))
            die("the empty network rules");
    }
    netrules_free(&n->rules);
    n->rules = r;
    n->policy.rules = &n->rules;
    (void)!write(CTL_FD, &reply, 1);
}

/* False once sbxd has closed the control socket or died, or sent what is
 * not a rules message. */
static bool ctl_alive(struct net *n, short revents)
{
    if (revents & POLLIN) {
        ssize_t r;
        size_t want;
        if (n->ctl_len == n->ctl_cap) {
            n->ctl_cap = n->ctl_cap ? n->ctl_cap * 2 : 4096;
            n->ctl = xrealloc(n->ctl, n->ctl_cap);
        }
        r = read(CTL_FD, n->ctl + n->ctl_len, n->ctl_cap - n->ctl_len);
        if (r < 0)
            return errno == EINTR || errno == EAGAIN;
        if (r == 0)
            return false;
        n->ctl_len += (size_t)r;
        while (n->ctl_len >= 4) {
            want = (size_t)n->ctl[0] << 24 | (size_t)n->ctl[1] << 16 | (size_t)n->ctl[2] << 8 | n->ctl[3];
            if (want > NETRULES_TEXT_MAX)
                return false;
            if (n->ctl_len < 4 + want)
                break;
            take_rules(n, n->ctl + 4, want);
            memmove(n->ctl, n->ctl + 4 + want, n->ctl_len - 4 - want);
            n->ctl_len -= 4 + want;
        }
        return true;
    }
    return !(revents & (POLLHUP | POLLERR | POLLNVAL));
}

static void read_tap(struct net *n)
{
    static uint8_t frame[ETH_HLEN + MTU_MAX];
    uint8_t reply[NETFILTER_REPLY_MAX];
    size_t rlen;

    for (int i = 0; i < TAP_BATCH; i++) {
        ssize_t r = read(n->tap, frame, sizeof frame);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (r < 0)
            die("read " TAP_NAME);
        n->policy.now_ms = (uint64_t)now_ms();
        switch (netfilter_judge(&n->policy, frame, (size_t)r, reply, &rlen)) {
        case NETFILTER_PASS:
            slirp_input(n->slirp, frame, (int)r);
            break;
        case NETFILTER_REJECT:
            (void)!write(n->tap, reply, rlen);
            break;
        case NETFILTER_DROP:
            break;
        }
    }
}

static void run(struct net *n)
{
    int64_t next_refresh = now_ms() + HOSTS_TTL_MS;

    for (;;) {
        int64_t now = now_ms(), deadline = next_refresh;
        uint32_t timeout;
        int r;

        for (const struct timer *t = n->timers; t; t = t->next)
            if (t->expire_ms >= 0 && t->expire_ms < deadline)
                deadline = t->expire_ms;
        timeout = deadline > now ? (uint32_t)(deadline - now) : 0;
        n->pfd[PFD_CTL] = (struct pollfd){CTL_FD, POLLIN, 0};
        n->pfd[PFD_TAP] = (struct pollfd){n->tap, POLLIN, 0};
        n->pfd[PFD_NETLINK] = (struct pollfd){n->nl_events, POLLIN, 0};
        n->npfd = PFD_FIXED;
        slirp_pollfds_fill(n->slirp, &timeout, add_poll, n);
        r = poll(n->pfd, n->npfd, (int)timeout);
        if (r < 0 && errno != EINTR)
            die("poll");
        if (n->pfd[PFD_CTL].revents && !ctl_alive(n, n->pfd[PFD_CTL].revents))
            return;
        /* Addresses first, so frames read below meet the new list. */
        if (n->pfd[PFD_NETLINK].revents && drain_netlink(n->nl_events))
            next_refresh = 0;
        /* The re-read every few seconds is the backstop for lost
         * notifications; a failed one is tried again soon. */
        if (now_ms() >= next_refresh)
            next_refresh = now_ms() + (refresh_hosts(n) == 0 ? HOSTS_TTL_MS : 100);
        slirp_pollfds_poll(n->slirp, r < 0, get_revents, n);
        if (n->pfd[PFD_TAP].revents)
            read_tap(n);
        run_timers(n);
    }
}

static bool parse_uint(const char *s, char end, unsigned long max, unsigned long *out,
                       const char **rest)
{
    char *e;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    *out = strtoul(s, &e, 10);
    if (errno || *e != end || *out > max)
        return false;
    if (rest)
        *rest = e + 1;
    return true;
}

int main(int argc, char **argv)
{
    struct net n;
    bool allow_host = false, drop = false, restricted = false;
    unsigned long uid = 0, gid = 0, mtu = DEFAULT_MTU;
    pid_t parent = getppid();

    for (int i = 1; i < argc; i++) {
        const char *rest;
        if (strcmp(argv[i], "--allow-host") == 0)
            allow_host = true;
        else if (strcmp(argv[i], "--restricted") == 0)
            restricted = true;
        else if (strcmp(argv[i], "--user") == 0 && i + 1 < argc &&
                 parse_uint(argv[i + 1], ':', UINT32_MAX - 1, &uid, &rest) &&
                 parse_uint(rest, '\0', UINT32_MAX - 1, &gid, NULL)) {
            drop = true;
            i++;
        } else if (strcmp(argv[i], "--mtu") == 0 && i + 1 < argc &&
                 parse_uint(argv[i + 1], '\0', MTU_MAX, &mtu, NULL) && mtu >= MTU_MIN) {
            i++;
        } else {
            usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);
    for (int fd = CTL_FD; fd <= NETNS_FD; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            char what[16];
            snprintf(what, sizeof what, "fd %d", fd);
            die(what);
        }
    /* Nothing else sbxd might have let through reaches the stack. */
    close_range(NETNS_FD + 1, ~0U, 0);

    memset(&n, 0, sizeof n);
    n.policy.allow_host = allow_host;
    if (restricted) { /* nothing at all until sbxd sends the rules */
        char err[160];
        if (!netrules_parse("", 0, &n.rules, err, sizeof err))
            die("the empty network rules");
        n.policy.rules = &n.rules;
        if (!(n.policy.flows = calloc(1, sizeof *n.policy.flows)))
            die("out of memory");
    }
    n.tap = make_tap((unsigned)mtu);
    close(USERNS_FD);
    close(NETNS_FD);
    if (fcntl(n.tap, F_SETFL, O_NONBLOCK) < 0)
        die(TAP_NAME);
    open_netlink(&n);
    confine(drop, (uid_t)uid, (gid_t)gid, parent);
    if (refresh_hosts(&n) < 0)
        die("read the host's addresses");
    n.slirp = start_slirp(&n, (unsigned)mtu, allow_host);
    if (!n.slirp) {
        errno = EINVAL;
        die("slirp_new");
    }
    n.cappfd = 64;
    n.pfd = xrealloc(NULL, n.cappfd * sizeof *n.pfd);
    if (write(CTL_FD, "R", 1) != 1)
        die("write to the control socket");
    run(&n);

    slirp_cleanup(n.slirp);
    while (n.timers)
        timer_free(n.timers, &n);
    free(n.pfd);
    free(n.ctl);
    netrules_free(&n.rules);
    free(n.policy.flows);
    free(n.host);
    free(n.spare);
    _exit(0);
}
