/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for sbxd's archive extraction (tools/sbxd/tarx.c), which
 * unpacks snapshots and tarball sources that come from sandboxes or the
 * network. Three passes over the input:
 *  - its first line is cleaned as an entry name: a clean name is
 *    relative, has no empty, "." or ".." component, and cleans to itself;
 *    a name is refused only when it is absolute, climbs with "..", or has
 *    no component left;
 *  - it is read as an archive, with every filter and format libarchive
 *    knows, and each entry's name and hard-link target is cleaned the same
 *    way;
 *  - it is extracted with archive_extract() by a worker process confined
 *    (chroot) to a scratch directory holding the archive and the
 *    destination, started once and fed one archive at a time. Afterwards nothing may exist beside the destination, and
 *    the archive file must be unchanged, with no hard link to it: an entry
 *    that wrote outside the destination, or linked to a file outside it,
 *    fails the check. The chroot keeps an escape inside the scratch directory; where
 *    it cannot be had (not root, no user namespaces) the pass is skipped.
 * Built with libFuzzer by -Dfuzz=true (clang); built without it (with
 * standalone.c) it runs over the files named on its command line, which
 * `meson test` does on the seeds.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "tarx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the cleaner must decide, read plainly: refused iff absolute, a ".."
 * component, or nothing but "." and empty components. */
static bool must_refuse(const char *name)
{
    bool any = false;
    if (name[0] == '/')
        return true;
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        if (n && !(n == 1 && p[0] == '.'))
            any = true;
        p += n + (p[n] == '/');
    }
    return !any;
}

static void check_clean(const char *name)
{
    char *c, *c2;
    if (!name) {
        if (archive_clean_name(NULL))
            abort();
        return;
    }
    c = archive_clean_name(name);
    if (!c != must_refuse(name))
        abort();
    if (!c)
        return;
    if (!c[0] || c[0] == '/' || c[strlen(c) - 1] == '/' || strstr(c, "//"))
        abort();
    for (const char *p = c; *p;) {
        size_t n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            abort();
        p += n + (p[n] == '/');
    }
    c2 = archive_clean_name(c);
    if (!c2 || strcmp(c, c2) != 0)
        abort(); /* cleaning is idempotent */
    sbx__free(c2);
    sbx__free(c);
}


/* ---- extraction, confined ---------------------------------------------- */

/* LeakSanitizer's entry point, there when it is linked in. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static char scratch[4096]; /* holds "in" (the archive), "dest" and "proc" */
static int scratch_fd = -1;
static pid_t worker = -1;  /* extracts /in into /dest on each byte sent */
static int to_worker = -1, from_worker = -1;
static bool no_worker;     /* it cannot be confined here */

/* Remove at/name without following a symlink, making each directory
 * searchable first (an archive may leave mode 000 behind). */
static void rm_tree(int at, const char *name)
{
    struct stat sb;
    DIR *d;
    struct dirent *de;
    int fd;
    if (fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (!S_ISDIR(sb.st_mode)) {
        unlinkat(at, name, 0);
        return;
    }
    fchmodat(at, name, 0700, 0);
    if ((fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
        (d = fdopendir(fd)) != NULL) {
        while ((de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                rm_tree(dirfd(d), de->d_name);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(at, name, AT_REMOVEDIR);
}

static void finish(void)
{
    if (worker > 0) {
        close(to_worker); /* end of input: it exits */
        close(from_worker);
        waitpid(worker, NULL, 0);
        worker = -1;
    }
    if (scratch_fd >= 0) {
        rm_tree(AT_FDCWD, scratch);
        close(scratch_fd);
        scratch_fd = -1;
    }
}

/* The worker: confined to the scratch directory, it extracts /in into
 * /dest for each byte it reads, answers with a byte, and exits 3 when it
 * cannot be confined. As root it gets a mount namespace with a read-only
 * /proc inside the scratch directory, which LeakSanitizer needs; elsewhere
 * leaks go unchecked here. A leak ends it with status 4. */
static void work(int in, int out)
{
    char err[512], proc[4200], c;
    bool leaks = false;
    snprintf(proc, sizeof proc, "%s/proc", scratch);
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
        mount("proc", proc, "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
        leaks = true;
    if (chroot(scratch) != 0) {
        /* Not root: a user namespace of our own grants chroot. */
        if (unshare(CLONE_NEWUSER) != 0 || chroot(scratch) != 0)
            _exit(3);
    }
    if (chdir("/") != 0)
        _exit(3);
    while (read(in, &c, 1) == 1) {
        /* As sbxd takes an archive from outside: its headers checked first
         * (tarx_check_untrusted), then extracted when they pass. */
        int fd = open("/in", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && tarx_check_untrusted(fd, err, sizeof err) == 0)
            archive_extract("/in", "/dest", err, sizeof err);
        if (fd >= 0)
            close(fd);
        if (leaks && __lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check())
            _exit(4);
        if (write(out, &c, 1) != 1)
            break;
    }
    _exit(0);
}

static bool start_worker(void)
{
    const char *tmp = getenv("TMPDIR");
    int down[2], up[2];
    if (worker > 0 || no_worker)
        return !no_worker;
    snprintf(scratch, sizeof scratch, "%s/fuzz_sbxd_tar.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch) || (scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        mkdirat(scratch_fd, "proc", 0555) != 0 || pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0)
        abort();
    atexit(finish);
    signal(SIGPIPE, SIG_IGN); /* a worker that died is seen by its pipe */
    fflush(NULL);
    if ((worker = fork()) < 0)
        abort();
    if (worker == 0) {
        close(down[1]);
        close(up[0]);
        work(down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    to_worker = down[1];
    from_worker = up[0];
    return true;
}

/* Call again while interrupted by a signal. */
#define retry_eintr(call)                                                                                   \
    ({                                                                                                      \
        __typeof__(call) r_;                                                                                \
        while ((r_ = (call)) < 0 && errno == EINTR)                                                         \
            ;                                                                                               \
        r_;                                                                                                 \
    })

static void extract(const uint8_t *data, size_t size)
{
    int fd, status;
    struct stat sb;
    DIR *d;
    struct dirent *de;
    char c = 'x';

    if (!start_worker())
        return;
    rm_tree(scratch_fd, "dest");
    rm_tree(scratch_fd, "in");
    if ((fd = openat(scratch_fd, "in", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
        write(fd, data, size) != (ssize_t)size || close(fd) != 0 || mkdirat(scratch_fd, "dest", 0700) != 0)
        abort();
    /* libFuzzer's -timeout ticks with SIGALRM: a wait it interrupts goes on. */
    if (retry_eintr(write(to_worker, &c, 1)) != 1 || retry_eintr(read(from_worker, &c, 1)) != 1) {
        if (retry_eintr(waitpid(worker, &status, 0)) != worker)
            abort();
        worker = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
            no_worker = true; /* cannot be confined here: nothing was extracted */
            return;
        }
        /* The extraction crashed or leaked (its report is above). */
        fprintf(stderr, "fuzz_sbxd_tar: the extraction worker ended: %s %d\n",
                WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        abort();
    }
    /* Nothing beside the destination, which is still a directory. */
    if ((fd = dup(scratch_fd)) < 0 || !(d = fdopendir(fd)))
        abort();
    rewinddir(d);
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "in") &&
            strcmp(de->d_name, "dest") && strcmp(de->d_name, "proc"))
            abort(); /* an entry was written outside the destination */
    closedir(d);
    if (fstatat(scratch_fd, "dest", &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
        abort(); /* the destination itself was replaced */
    if (fstatat(scratch_fd, "proc", &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode) || sb.st_nlink != 2)
        abort(); /* the mount point of the worker's /proc was written to */
    if (fstatat(scratch_fd, "in", &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
        (size_t)sb.st_size != size)
        abort(); /* a hard link to a file outside the destination, or a write to it */
    if (size) {
        uint8_t *back = malloc(size);
        if (!back || (fd = openat(scratch_fd, "in", O_RDONLY | O_CLOEXEC)) < 0 ||
            read(fd, back, size) != (ssize_t)size || memcmp(back, data, size) != 0)
            abort();
        close(fd);
        free(back);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    const uint8_t *nl = memchr(data, '\n', size < 4096 ? size : 4096);
    size_t n = nl ? (size_t)(nl - data) : (size < 4096 ? size : 4096);
    char *first = malloc(n + 1);

    if (!a || !first)
        abort();
    memcpy(first, data, n);
    first[n] = '\0';
    check_clean(first);
    free(first);

    archive_read_support_filter_all(a);
    archive_read_support_format_all(a);
    if (archive_read_open_memory(a, data, size) == ARCHIVE_OK) {
        for (int i = 0; i < 4096; i++) {
            int r = archive_read_next_header(a, &e);
            if (r == ARCHIVE_EOF || r < ARCHIVE_WARN)
                break;
            check_clean(archive_entry_pathname(e));
            if (archive_entry_hardlink(e))
                check_clean(archive_entry_hardlink(e));
        }
    }
    archive_read_free(a);
    extract(data, size);
    return 0;
}
