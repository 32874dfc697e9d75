/* SPDX-License-Identifier: MIT */
/*
 * ids: the host uid and gid each sandbox runs as. Run as root, sbxd gives
 * every sandbox an id of its own from a range no host user has (subordinate
 * ids, as Podman and systemd-nspawn use): the sandbox's user maps to it, so
 * nothing in a sandbox is ever host root, and two sandboxes never share an
 * owner. Two sbxd processes may draw from the same range: an id is taken by
 * holding a lock file in /run/sbxd/ids for as long as the sandbox exists.
 * Run as another user, sbxd can only map sandboxes to that user.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

/* The last 64 Ki ids of the range systemd reserves for containers
 * (0x00080000-0x6FFFFFFF, docs/UIDS-GIDS.md): never a regular user's. */
#define DEFAULT_FIRST 0x6FFF0000u
#define DEFAULT_COUNT 65536u
#define LOCK_DIR "/run/sbxd/ids"

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t cursor; /* where the next search starts: ids are not reused at once */

static int parse_u32(const char *s, char **end, uint32_t *out)
{
    unsigned long long v;
    errno = 0;
    v = strtoull(s, end, 10);
    if (errno || *end == s || v > 0xFFFFFFFFull)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* The "sbxd:FIRST:COUNT" line of /etc/subuid or /etc/subgid, if any. */
static int subid_range(const char *file, uint32_t *first, uint32_t *count)
{
    FILE *f = fopen(file, "re");
    char line[256];
    int found = 0;
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *end;
        if (strncmp(line, "sbxd:", 5) != 0)
            continue;
        if (parse_u32(line + 5, &end, first) == 0 && *end == ':' &&
            parse_u32(end + 1, &end, count) == 0 && *count > 0)
            found = 1;
    }
    fclose(f);
    return found;
}

int ids_setup(const char *opt, char *err, size_t errlen)
{
    struct ids *c = &g.ids;
    uint32_t gfirst, gcount;

    if (geteuid() != 0) {
        c->per_sandbox = false;
        c->first_uid = getuid();
        c->first_gid = getgid();
        c->count = 1;
        snprintf(c->source, sizeof c->source, "sbxd's own uid %u", (unsigned)c->first_uid);
        return 0;
    }
    c->per_sandbox = true;
    if (opt) {
        char *end;
        if (parse_u32(opt, &end, &c->first_uid) < 0 || *end != ':' ||
            parse_u32(end + 1, &end, &c->count) < 0 || *end || c->count < 1) {
            snprintf(err, errlen, "--id-range wants FIRST:COUNT, not '%s'", opt);
            return -1;
        }
        c->first_gid = c->first_uid;
        snprintf(c->source, sizeof c->source, "--id-range");
    } else if (subid_range("/etc/subuid", &c->first_uid, &c->count)) {
        /* The gids come from /etc/subgid's line when there is one. */
        if (subid_range("/etc/subgid", &gfirst, &gcount)) {
            c->first_gid = gfirst;
            if (gcount < c->count)
                c->count = gcount;
        } else {
            c->first_gid = c->first_uid;
        }
        snprintf(c->source, sizeof c->source, "/etc/subuid (user sbxd)");
    } else {
        c->first_uid = c->first_gid = DEFAULT_FIRST;
        c->count = DEFAULT_COUNT;
        snprintf(c->source, sizeof c->source, "built-in default");
    }
    /* 0 is root and 65534 the overflow id every unmapped owner shows as; the
     * range must hold neither, nor wrap. */
    if ((uint64_t)c->first_uid + c->count > 0xFFFFFFFFull || (uint64_t)c->first_gid + c->count > 0xFFFFFFFFull ||
        c->first_uid == 0 || c->first_gid == 0 ||
        (c->first_uid <= 65534 && c->first_uid + c->count > 65534) ||
        (c->first_gid <= 65534 && c->first_gid + c->count > 65534)) {
        snprintf(err, errlen, "the id range %u:%u (%s) must not hold 0 or 65534", (unsigned)c->first_uid,
                 (unsigned)c->count, c->source);
        return -1;
    }
    if (mkdir_p(LOCK_DIR, 0700) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", LOCK_DIR, strerror(errno));
        return -1;
    }
    {
        uint32_t r = 0;
        random_bytes(&r, sizeof r);
        cursor = r % c->count;
    }
    return 0;
}

int ids_acquire(struct sandbox_ids *out)
{
    struct ids *c = &g.ids;

    out->lock_fd = -1;
    if (!c->per_sandbox) {
        out->uid = c->first_uid;
        out->gid = c->first_gid;
        return 0;
    }
    pthread_mutex_lock(&ids_lock);
    for (uint32_t n = 0; n < c->count; n++) {
        uint32_t k = (cursor + n) % c->count;
        char path[64];
        int fd;
        snprintf(path, sizeof path, LOCK_DIR "/%u", (unsigned)(c->first_uid + k));
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd);
            continue;
        }
        cursor = (k + 1) % c->count;
        pthread_mutex_unlock(&ids_lock);
        out->uid = c->first_uid + k;
        out->gid = c->first_gid + k;
        out->lock_fd = fd;
        return 0;
    }
    pthread_mutex_unlock(&ids_lock);
    errno = EAGAIN;
    return -1;
}

void ids_release(struct sandbox_ids *ids)
{
    if (ids->lock_fd >= 0)
        close(ids->lock_fd); /* the file stays; its lock is what counts */
    ids->lock_fd = -1;
}

/* nftw has no user pointer. */
static __thread uid_t walk_uid;
static __thread gid_t walk_gid;

static int chown_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    if ((st->st_uid != walk_uid || st->st_gid != walk_gid) && lchown(path, walk_uid, walk_gid) < 0)
        return -1;
    return 0;
}

int ids_chown_tree(const char *root, const struct sandbox_ids *ids)
{
    if (!g.ids.per_sandbox)
        return 0;
    walk_uid = ids->uid;
    walk_gid = ids->gid;
    /* FTW_PHYS: links are changed themselves, never followed; FTW_MOUNT: a
     * tree that is a file system of its own is not left. */
    return nftw(root, chown_one, 32, FTW_PHYS | FTW_MOUNT);
}
