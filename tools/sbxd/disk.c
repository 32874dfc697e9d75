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
 *
 * mke2fs runs once, at start, into a template; each sandbox's image is a
 * sparse copy of it (a few hundred KiB of metadata), which costs less than
 * starting mke2fs every time.
 */
#include <errno.h>
#include <pthread.h>
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

#include "util/alloc.h"
#include "sbxd.h"

struct disk {
    char *image;        /* STATE/sandboxes/ID/disk.img */
    char *mnt;          /* the sandbox's root, where it is mounted */
    bool mounted;
};

static char *template_path; /* STATE/sandboxes/.template.img */

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
 * initialised lazily, no blocks reserved for root. */
static int make_fs(const char *image, char *err, size_t errlen)
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
    snprintf(ext, sizeof ext, "lazy_itable_init=1,nodiscard,root_owner=0:0");
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
    req.stdout_fd = req.stderr_fd = -1;
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
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;

static int attach_loop_locked(int fd, char *dev, size_t devlen);

static int attach_loop(int fd, char *dev, size_t devlen)
{
    /* One at a time within sbxd: a hundred creates at once all got the
     * same free device from LOOP_CTL_GET_FREE and raced for it. */
    int r;
    pthread_mutex_lock(&loop_lock);
    r = attach_loop_locked(fd, dev, devlen);
    pthread_mutex_unlock(&loop_lock);
    return r;
}

static int attach_loop_locked(int fd, char *dev, size_t devlen)
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return -1;
    /* Other processes may race too, and a device being released (a stopped
     * sandbox's, cleared on its last close) reports busy for a moment:
     * retry with a growing pause, for about 4 s in all. */
    for (int tries = 0; tries < 200; tries++) {
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
        usleep((useconds_t)(tries < 20 ? 1000 * tries : 20000));
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

/* A sparse copy: only the template's data extents are read and written. */
static int copy_sparse(int src, int dst, off_t size)
{
    off_t off = 0;
    if (ftruncate(dst, size) < 0)
        return -1;
    for (;;) {
        off_t data = lseek(src, off, SEEK_DATA), hole;
        if (data < 0)
            return errno == ENXIO ? 0 : -1; /* ENXIO: no data past off */
        if ((hole = lseek(src, data, SEEK_HOLE)) < 0)
            return -1;
        for (off_t in = data, out = data; in < hole;) {
            ssize_t n = copy_file_range(src, &in, dst, &out, (size_t)(hole - in), 0);
            if (n <= 0)
                return -1;
        }
        off = hole;
    }
}

/* Mount the image at path on mnt (a directory made here). */
static int mount_image(struct disk *d, int fd, char *err, size_t errlen)
{
    char dev[64];
    int lfd = attach_loop(fd, dev, sizeof dev);
    if (lfd < 0) {
        snprintf(err, errlen, "cannot attach %s to a loop device: %s", d->image, strerror(errno));
        return -1;
    }
    if ((mkdir(d->mnt, 0700) < 0 && errno != EEXIST) ||
        mount(dev, d->mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") < 0) {
        snprintf(err, errlen, "cannot mount the sandbox's file system (%s) on %s: %s", dev, d->mnt,
                 strerror(errno));
        close(lfd); /* never mounted: autoclear detaches it now */
        return -1;
    }
    d->mounted = true;
    close(lfd); /* the mount holds the device now */
    return 0;
}

static struct disk *disk_create_at(const char *dir, const char *mnt, const struct sandbox_ids *ids, char *err,
                                   size_t errlen)
{
    struct disk *d = sbx__calloc(1, sizeof *d);
    int fd = -1, tfd = -1;

    if (!d || !(d->image = path_join(dir, "disk.img")) || !(d->mnt = sbx__strdup(mnt))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    fd = open(d->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    tfd = open(template_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || tfd < 0 || copy_sparse(tfd, fd, (off_t)g.cfg.disk_limit) < 0) {
        snprintf(err, errlen, "cannot make %s from %s: %s", d->image, template_path, strerror(errno));
        goto fail;
    }
    if (mount_image(d, fd, err, errlen) < 0)
        goto fail;
    if (chown(mnt, ids->uid, ids->gid) < 0 || chmod(mnt, 0700) < 0) {
        snprintf(err, errlen, "cannot give %s to the sandbox: %s", mnt, strerror(errno));
        goto fail;
    }
    close(tfd);
    close(fd);
    return d;
fail:
    if (tfd >= 0)
        close(tfd);
    if (fd >= 0)
        close(fd);
    if (d && d->mounted) {
        umount2(d->mnt, MNT_DETACH);
        d->mounted = false;
    }
    if (d && d->image)
        unlink(d->image);
    disk_free(d);
    return NULL;
}

struct disk *disk_create(struct sandbox *s, char *err, size_t errlen)
{
    char *dir = sbx__strdup(s->root);
    struct disk *d;

    if (!dir) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *strrchr(dir, '/') = '\0';
    d = disk_create_at(dir, s->root, &s->ids, err, errlen);
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

/* The template every sandbox's image is copied from: made, mounted once to
 * prove that this host can (and to drop mke2fs's lost+found, which only
 * fsck uses), unmounted. */
static int make_template(char *err, size_t errlen)
{
    struct disk t = {0};
    char *lf = NULL;
    int fd = -1, r = -1;

    t.image = template_path;
    t.mnt = path_join(g.cfg.state_dir, "sandboxes/.template");
    fd = open(template_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (!t.mnt || fd < 0 || ftruncate(fd, (off_t)g.cfg.disk_limit) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", template_path, strerror(errno));
        goto out;
    }
    if (make_fs(template_path, err, errlen) < 0 || mount_image(&t, fd, err, errlen) < 0)
        goto out;
    if ((lf = path_join(t.mnt, "lost+found")))
        rmdir(lf);
    r = 0;
out:
    if (t.mounted && umount2(t.mnt, 0) < 0 && r == 0) {
        snprintf(err, errlen, "cannot unmount %s: %s", t.mnt, strerror(errno));
        r = -1;
    }
    if (t.mnt)
        rmdir(t.mnt);
    if (fd >= 0)
        close(fd);
    sbx__free(lf);
    sbx__free(t.mnt);
    return r;
}

void disk_probe(bool own_mounts)
{
    char err[512] = "";
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
    template_path = path_join(g.cfg.state_dir, "sandboxes/.template.img");
    if (!template_path || make_template(err, sizeof err) < 0) {
        layer_set(LAYER_DISK, false, "%s", template_path ? err : "out of memory");
        return;
    }
    layer_set(LAYER_DISK, true, "an ext4 file system of %lld MiB and %lld files per sandbox (sparse image "
                                "on a loop device, nosuid,nodev): writes past it fail with ENOSPC",
              (long long)(g.cfg.disk_limit >> 20), (long long)inode_count());
}

void disk_shutdown(void)
{
    if (template_path)
        unlink(template_path);
    sbx__free(template_path);
    template_path = NULL;
}
