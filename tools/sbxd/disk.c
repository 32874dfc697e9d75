/* SPDX-License-Identifier: MIT */
/*
 * disk: a file system of fixed size for each sandbox, so that what it
 * writes (workspace, home, /tmp, /dev/shm, a restored snapshot) is bounded
 * in bytes and in files: a sparse ext4 image in the sandbox's state
 * directory, attached to a loop device and mounted (nosuid, nodev) where the
 * sandbox's root lives, in sbxd's private mount namespace. Past the limit,
 * writes fail with ENOSPC; the host loses at most the image's size.
 *
 * Why this mechanism: project quotas need the host file system mounted with
 * them; a tmpfs limit would be charged to memory; a per-sandbox file system
 * is enforced by the kernel whatever the host's file system is, and removing
 * a sandbox is an unmount and one unlink. It needs root and loop devices.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "sbxd.h"

struct disk {
    char *image;        /* STATE/sandboxes/ID/disk.img */
    char *mnt;          /* the sandbox's root, where it is mounted */
    bool mounted;
};

static const char *mke2fs_path(void)
{
    static const char *const cands[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return NULL;
}

static int64_t inode_count(void)
{
    /* ext4's default ratio, one inode per 16 KiB. */
    return g.cfg.inode_limit > 0 ? g.cfg.inode_limit : g.cfg.disk_limit / 16384;
}

/* mke2fs: no journal (the tree dies with the sandbox), inode tables
 * initialised lazily, no blocks reserved for root, the root directory
 * owned by the sandbox's ids. The output goes to the sandbox's log. */
static int make_fs(const char *image, const struct sandbox_ids *ids, int logfd, char *err, size_t errlen)
{
    static const char *const fixed[] = {"-q", "-F", "-t", "ext4", "-O", "^has_journal,^resize_inode",
                                        "-m", "0", "-b", "4096", "-E"};
    sbx__strlist argv = SBX__STRLIST_INIT;
    char ext[128], inodes[32];
    struct spawn_req req;
    pid_t pid = -1;
    int status = -1, r = -1;

    if (!mke2fs_path()) {
        snprintf(err, errlen, "mke2fs was not found (apt-get install -y e2fsprogs)");
        return -1;
    }
    snprintf(ext, sizeof ext, "lazy_itable_init=1,nodiscard,root_owner=%u:%u", (unsigned)ids->uid,
             (unsigned)ids->gid);
    snprintf(inodes, sizeof inodes, "%lld", (long long)inode_count());
    if (sbx__strlist_push(&argv, mke2fs_path()) != SBX_OK)
        goto out;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (sbx__strlist_push(&argv, fixed[i]) != SBX_OK)
            goto out;
    if (sbx__strlist_push(&argv, ext) != SBX_OK || sbx__strlist_push(&argv, "-N") != SBX_OK ||
        sbx__strlist_push(&argv, inodes) != SBX_OK || sbx__strlist_push(&argv, image) != SBX_OK)
        goto out;
    memset(&req, 0, sizeof req);
    req.argv = argv.v;
    req.stdout_fd = req.stderr_fd = logfd;
    pid = launcher_spawn(&req);
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        r = 0;
out:
    sbx__strlist_clear(&argv);
    if (r < 0)
        snprintf(err, errlen, "mke2fs could not make the sandbox's file system in %s", image);
    return r;
}

/* A free loop device backed by fd, detached by the kernel once unmounted
 * (LO_FLAGS_AUTOCLEAR), so nothing outlives sbxd. Returns its fd. */
static int attach_loop(int fd, char *dev, size_t devlen)
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return -1;
    for (int tries = 0; tries < 64; tries++) {
        struct loop_config cfg;
        int n = ioctl(ctl, LOOP_CTL_GET_FREE), lfd;
        if (n < 0)
            break;
        snprintf(dev, devlen, "/dev/loop%d", n);
        if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0)
            break;
        memset(&cfg, 0, sizeof cfg);
        cfg.fd = (uint32_t)fd;
        /* Direct I/O: the image's pages are not cached twice. */
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
        if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
            close(ctl);
            return lfd;
        }
        if (errno == EINVAL) {
            cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
            if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
                close(ctl);
                return lfd;
            }
        }
        close(lfd);
        if (errno != EBUSY)
            break; /* EBUSY: another process took it first */
    }
    close(ctl);
    return -1;
}

static void disk_free(struct disk *d)
{
    if (!d)
        return;
    sbx__free(d->image);
    sbx__free(d->mnt);
    sbx__free(d);
}

static struct disk *disk_create_at(const char *dir, const char *mnt, const struct sandbox_ids *ids, int logfd,
                            char *err, size_t errlen)
{
    struct disk *d = sbx__calloc(1, sizeof *d);
    char dev[64], *lf;
    int fd = -1, lfd = -1;

    if (!d || !(d->image = path_join(dir, "disk.img")) || !(d->mnt = sbx__strdup(mnt))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    fd = open(d->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)g.cfg.disk_limit) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", d->image, strerror(errno));
        goto fail;
    }
    if (make_fs(d->image, ids, logfd, err, errlen) < 0)
        goto fail;
    if ((lfd = attach_loop(fd, dev, sizeof dev)) < 0) {
        snprintf(err, errlen, "cannot attach %s to a loop device: %s", d->image, strerror(errno));
        goto fail;
    }
    if ((mkdir(mnt, 0700) < 0 && errno != EEXIST) ||
        mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") < 0) {
        snprintf(err, errlen, "cannot mount the sandbox's file system (%s) on %s: %s", dev, mnt,
                 strerror(errno));
        goto fail;
    }
    d->mounted = true;
    close(lfd); /* the mount holds the device now */
    close(fd);
    /* mke2fs's lost+found is only for fsck, which never runs here. */
    if ((lf = path_join(mnt, "lost+found")) != NULL)
        rmdir(lf);
    sbx__free(lf);
    return d;
fail:
    if (lfd >= 0)
        close(lfd); /* never mounted: autoclear detaches it now */
    if (fd >= 0)
        close(fd);
    if (d && d->image)
        unlink(d->image);
    disk_free(d);
    return NULL;
}

struct disk *disk_create(struct sandbox *s, char *err, size_t errlen)
{
    char *dir = sbx__strdup(s->root), logpath[4096];
    struct disk *d;
    int logfd;

    if (!dir) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *strrchr(dir, '/') = '\0';
    snprintf(logpath, sizeof logpath, "%s/sandbox.log", dir);
    logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    d = disk_create_at(dir, s->root, &s->ids, logfd, err, errlen);
    if (logfd >= 0)
        close(logfd);
    sbx__free(dir);
    return d;
}

void disk_destroy(struct disk *d)
{
    if (!d)
        return;
    /* Lazily: a copy of the mount may live a moment longer in the mount
     * namespace of a sandbox process the kernel is still tearing down. */
    if (d->mounted && umount2(d->mnt, MNT_DETACH) < 0)
        sbxd_log(LOG_WARN, "cannot unmount %s: %s", d->mnt, strerror(errno));
    rmdir(d->mnt);
    if (unlink(d->image) < 0 && errno != ENOENT)
        sbxd_log(LOG_WARN, "cannot remove %s: %s", d->image, strerror(errno));
    disk_free(d);
}

int64_t disk_free_bytes(const char *root, int64_t *inodes)
{
    struct statvfs st;
    if (statvfs(root, &st) < 0)
        return -1;
    if (inodes)
        *inodes = (int64_t)st.f_favail;
    return (int64_t)st.f_bavail * (int64_t)st.f_frsize;
}

void disk_probe(bool own_mounts)
{
    char err[512] = "", dir[4096], mnt[4200];
    struct sandbox_ids ids = {getuid(), getgid(), -1};
    struct disk *d;
    int fd;

    if (geteuid() != 0) {
        layer_set(LAYER_DISK, false, "sbxd is not root: a file system per sandbox needs root and loop "
                                     "devices, so sandboxes may fill the file system of the state "
                                     "directory; run sbxd as root");
        return;
    }
    if (!own_mounts) {
        layer_set(LAYER_DISK, false, "sbxd could not make a mount namespace of its own (see the log)");
        return;
    }
    if (!mke2fs_path()) {
        layer_set(LAYER_DISK, false, "mke2fs was not found: apt-get install -y e2fsprogs");
        return;
    }
    if ((fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0) {
        layer_set(LAYER_DISK, false, "no loop devices (/dev/loop-control: %s): modprobe loop, or give "
                                     "the container /dev/loop-control and /dev/loop*", strerror(errno));
        return;
    }
    close(fd);
    /* The real thing, small: make, attach, mount, remove. */
    snprintf(dir, sizeof dir, "%s/sandboxes", g.cfg.state_dir);
    snprintf(mnt, sizeof mnt, "%s/.disk-probe", dir);
    {
        int64_t saved = g.cfg.disk_limit, saved_inodes = g.cfg.inode_limit;
        g.cfg.disk_limit = 16 << 20;
        g.cfg.inode_limit = 1024;
        d = disk_create_at(dir, mnt, &ids, -1, err, sizeof err);
        g.cfg.disk_limit = saved;
        g.cfg.inode_limit = saved_inodes;
    }
    if (!d) {
        layer_set(LAYER_DISK, false, "%s", err);
        return;
    }
    disk_destroy(d);
    layer_set(LAYER_DISK, true, "an ext4 file system of %lld MiB and %lld files per sandbox (sparse image "
                                "on a loop device, nosuid,nodev): writes past it fail with ENOSPC",
              (long long)(g.cfg.disk_limit >> 20), (long long)inode_count());
}
