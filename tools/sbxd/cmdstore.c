/* SPDX-License-Identifier: MIT */
/*
 * cmdstore: the commands of a stopped sandbox, kept --retain-output long so
 * that their output can still be read, move out of memory into
 * sandboxes/ID/commands once nothing reads them (--spill-after). Without
 * it a burst of 10,000 commands left sbxd some 45 MB larger for half an
 * hour (the records, and the heap pages they pinned), and the output of
 * stopped sandboxes, up to --max-sandbox-log-bytes each, stayed in memory.
 * A read of a command loads that one back, for --spill-after again.
 *
 * The file never leaves the machine, so its integers are the host's:
 * "SBXDCMD1", u32 count, then per command a u64 (the length of the rest
 * of its record, so that a lookup skips the others) and its fields.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

static const char MAGIC[8] = {'S', 'B', 'X', 'D', 'C', 'M', 'D', '1'};

#define F_TIMEOUT 1u
#define F_EXITED 2u
#define F_KILLED_BY_STOP 4u
#define F_TRUNCATED 8u

static char *store_path(const char *sandbox_id, const char *suffix)
{
    char rel[128];
    snprintf(rel, sizeof rel, "sandboxes/%s/commands%s", sandbox_id, suffix);
    return path_join(g.cfg.state_dir, rel);
}

static uint64_t str_size(const char *s)
{
    return 4 + (s ? strlen(s) : 0);
}

static void put(FILE *f, const void *p, size_t n)
{
    fwrite(p, 1, n, f); /* ferror() is checked once, at the end */
}

static void put_u32(FILE *f, uint32_t v)
{
    put(f, &v, sizeof v);
}

static void put_u64(FILE *f, uint64_t v)
{
    put(f, &v, sizeof v);
}

static void put_str(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u32(f, (uint32_t)n);
    put(f, s, n);
}

static uint64_t record_size(const struct command *c)
{
    uint64_t n = str_size(c->id) + 8 + 4 + str_size(c->name) + 4 + str_size(c->cwd) + 8 + 8 + 4 + 4 + 8 + 4;
    for (size_t i = 0; i < c->args.n; i++)
        n += str_size(c->args.v[i]);
    for (size_t i = 0; i < c->nchunks; i++)
        n += 1 + 4 + c->chunks[i].len;
    return n;
}

static void put_command(FILE *f, const struct command *c)
{
    uint32_t flags = (c->timeout_fired ? F_TIMEOUT : 0) | (c->exited ? F_EXITED : 0) |
                     (c->killed_by_stop ? F_KILLED_BY_STOP : 0) | (c->log_truncated ? F_TRUNCATED : 0);
    put_u64(f, record_size(c));
    put_str(f, c->id);
    put_u64(f, c->ctl_id);
    put_u32(f, (uint32_t)c->ctx);
    put_str(f, c->name);
    put_u32(f, (uint32_t)c->args.n);
    for (size_t i = 0; i < c->args.n; i++)
        put_str(f, c->args.v[i]);
    put_str(f, c->cwd);
    put_u64(f, (uint64_t)c->started_at);
    put_u64(f, (uint64_t)c->finished_at);
    put_u32(f, flags);
    put_u32(f, (uint32_t)c->exit_code);
    put_u64(f, c->log_bytes);
    put_u32(f, (uint32_t)c->nchunks);
    for (size_t i = 0; i < c->nchunks; i++) {
        put(f, &c->chunks[i].stream, 1);
        put_u32(f, c->chunks[i].len);
        put(f, c->chunks[i].data, c->chunks[i].len);
    }
}

int cmdstore_write(const char *sandbox_id, struct command *list)
{
    char *path = store_path(sandbox_id, ""), *tmp = store_path(sandbox_id, ".tmp");
    uint32_t n = 0;
    FILE *f = NULL;
    int fd = -1, r = -1;

    if (!path || !tmp)
        goto out;
    for (struct command *c = list; c; c = c->next)
        n++;
    /* Output may hold what the sandbox printed of its secrets: 0600. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* a write cut short */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        goto out;
    }
    put(f, MAGIC, sizeof MAGIC);
    put_u32(f, n);
    for (struct command *c = list; c; c = c->next)
        put_command(f, c);
    if (ferror(f) || fflush(f) != 0) {
        int e = errno ? errno : EIO;
        fclose(f);
        unlink(tmp);
        errno = e;
        goto out;
    }
    if (fclose(f) != 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        goto out;
    }
    r = 0;
out:
    if (r < 0 && !errno)
        errno = ENOMEM;
    sbx__free(path);
    sbx__free(tmp);
    return r;
}

/* A reader bounded by the record it is in: a damaged file is an error,
 * never a read past what the record declared. */
struct rd {
    FILE *f;
    uint64_t left;
    bool bad;
};

static bool get(struct rd *r, void *p, size_t n)
{
    if (r->bad || n > r->left || fread(p, 1, n, r->f) != n) {
        r->bad = true;
        if (n)
            memset(p, 0, n);
        return false;
    }
    r->left -= n;
    return true;
}

static uint32_t get_u32(struct rd *r)
{
    uint32_t v = 0;
    get(r, &v, sizeof v);
    return v;
}

static uint64_t get_u64(struct rd *r)
{
    uint64_t v = 0;
    get(r, &v, sizeof v);
    return v;
}

static char *get_str(struct rd *r)
{
    uint32_t n = get_u32(r);
    char *s;
    if (r->bad || n > r->left || !(s = sbx__malloc((size_t)n + 1))) {
        r->bad = true;
        return NULL;
    }
    if (!get(r, s, n)) {
        sbx__free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

static struct command *get_command_record(struct rd *r, char *id)
{
    struct command *c = sbx__calloc(1, sizeof *c);
    uint32_t flags, nargs, nchunks;
    if (!c) {
        sbx__free(id);
        return NULL;
    }
    c->refs = 1;
    pthread_cond_init(&c->cond, NULL);
    snprintf(c->id, sizeof c->id, "%s", id);
    sbx__free(id);
    c->ctl_id = get_u64(r);
    c->ctx = (int)get_u32(r);
    c->name = get_str(r);
    nargs = get_u32(r);
    for (uint32_t i = 0; i < nargs && !r->bad; i++) {
        char *a = get_str(r);
        if (a && sbx__strlist_push_take(&c->args, a) != SBX_OK) {
            sbx__free(a);
            r->bad = true;
        }
    }
    c->cwd = get_str(r);
    c->started_at = (int64_t)get_u64(r);
    c->finished_at = (int64_t)get_u64(r);
    flags = get_u32(r);
    c->timeout_fired = flags & F_TIMEOUT;
    c->exited = flags & F_EXITED;
    c->killed_by_stop = flags & F_KILLED_BY_STOP;
    c->log_truncated = flags & F_TRUNCATED;
    c->exit_code = (int)get_u32(r);
    c->log_bytes = get_u64(r);
    nchunks = get_u32(r);
    /* Each chunk takes at least five bytes of the record. */
    if (!r->bad && nchunks && (uint64_t)nchunks * 5 <= r->left) {
        c->chunks = sbx__calloc(nchunks, sizeof *c->chunks);
        if (c->chunks)
            c->capchunks = nchunks;
    }
    if (nchunks && !c->chunks)
        r->bad = true;
    for (uint32_t i = 0; i < nchunks && !r->bad; i++) {
        struct log_chunk *ch = &c->chunks[i];
        get(r, &ch->stream, 1);
        ch->len = get_u32(r);
        if (r->bad || ch->len > r->left || !(ch->data = sbx__malloc(ch->len ? ch->len : 1))) {
            r->bad = true;
            break;
        }
        c->nchunks++;
        get(r, ch->data, ch->len);
    }
    if (r->bad || !c->name || !c->cwd || r->left != 0) {
        command_unref(c);
        return NULL;
    }
    return c;
}

struct command *cmdstore_load(const char *sandbox_id, const char *command_id)
{
    char *path = store_path(sandbox_id, "");
    char magic[sizeof MAGIC];
    struct command *c = NULL;
    uint32_t n;
    FILE *f;

    if (!path) {
        errno = ENOMEM;
        return NULL;
    }
    f = fopen(path, "re");
    sbx__free(path);
    if (!f)
        return NULL;
    if (fread(magic, 1, sizeof magic, f) != sizeof magic || memcmp(magic, MAGIC, sizeof magic) != 0 ||
        fread(&n, 1, sizeof n, f) != sizeof n)
        goto bad;
    for (uint32_t i = 0; i < n; i++) {
        struct rd r = {f, UINT64_MAX, false};
        char *id;
        r.left = get_u64(&r);
        if (r.bad || !(id = get_str(&r)))
            goto bad;
        if (strcmp(id, command_id) == 0) {
            c = get_command_record(&r, id);
            if (!c)
                goto bad;
            fclose(f);
            return c;
        }
        sbx__free(id);
        if (r.left > (uint64_t)INT64_MAX || fseeko(f, (off_t)r.left, SEEK_CUR) != 0)
            goto bad;
    }
    fclose(f);
    errno = ENOENT;
    return NULL;
bad:
    fclose(f);
    errno = EBADMSG;
    return NULL;
}

long cmdstore_count(const char *sandbox_id)
{
    char *path = store_path(sandbox_id, "");
    char magic[sizeof MAGIC];
    uint32_t n;
    FILE *f = path ? fopen(path, "re") : NULL;
    long r = -1;
    sbx__free(path);
    if (!f)
        return -1;
    if (fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, MAGIC, sizeof magic) == 0 &&
        fread(&n, 1, sizeof n, f) == sizeof n)
        r = (long)n;
    fclose(f);
    return r;
}

void cmdstore_remove(const char *sandbox_id)
{
    char *path = store_path(sandbox_id, "");
    if (path)
        unlink(path);
    sbx__free(path);
}
