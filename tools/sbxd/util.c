/* SPDX-License-Identifier: MIT */
/* util: logging, clocks, ids and the careful file-system helpers of sbxd. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void sbxd_log(enum log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char ts[32];
    struct timespec now;
    struct tm tm;
    va_list ap;

    if (lvl > g.cfg.log_level)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s.%03ldZ sbxd %s: ", ts, now.tv_nsec / 1000000, names[lvl]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
}

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* List pagination uses createdAt with exclusive bounds: two objects with the
 * same millisecond would let a page boundary skip one, so stamps are unique. */
int64_t next_timestamp(void)
{
    int64_t t = now_ms();
    if (t <= g.last_ts)
        t = g.last_ts + 1;
    g.last_ts = t;
    return t;
}

int random_bytes(void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((char *)p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

void make_id(char *out, size_t cap, const char *prefix)
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned char rnd[20];
    size_t n = strlen(prefix), i;

    if (random_bytes(rnd, sizeof rnd) < 0)
        memset(rnd, 0, sizeof rnd); /* getrandom cannot fail after boot */
    snprintf(out, cap, "%s", prefix);
    for (i = 0; i < sizeof rnd && n + i + 1 < cap; i++)
        out[n + i] = alphabet[rnd[i] % 36];
    out[n + i] = '\0';
}

/* Ids from the URL are used in file names: only the characters we mint. */
bool id_is_safe(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 39)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

int mkdir_p(const char *path, mode_t mode)
{
    char *p = sbx__strdup(path);
    int r = 0;
    if (!p)
        return -1;
    for (char *q = p + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST) {
            r = -1;
            break;
        }
        *q = '/';
    }
    if (r == 0 && mkdir(p, mode) < 0 && errno != EEXIST)
        r = -1;
    sbx__free(p);
    return r;
}

/* Remove a tree without following symlinks: a sandbox fills these
 * directories, and a link to /etc must only lose the link. */
static int rm_at(int dirfd, const char *name, int depth)
{
    int fd;
    DIR *d;
    struct dirent *e;
    int r = 0;

    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    if (depth > 256)
        return -1;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* A directory we own but cannot list (chmod 000 inside the sandbox). */
    fchmod(fd, 0700);
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (rm_at(fd, e->d_name, depth + 1) < 0)
            r = -1;
    }
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        r = -1;
    return r;
}

int rm_rf(const char *path)
{
    return rm_at(AT_FDCWD, path, 0);
}

int rm_rf_at(int dirfd, const char *name)
{
    return rm_at(dirfd, name, 0);
}

int write_all(int fd, const void *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

int write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    int r;
    if (fd < 0)
        return -1;
    r = write_all(fd, data, len);
    if (close(fd) < 0)
        r = -1;
    return r;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
    size_t n = strlen(path) + 16;
    char *tmp = sbx__malloc(n);
    int fd, r = -1;

    if (!tmp)
        return -1;
    snprintf(tmp, n, "%s.tmp%d", path, (int)gettid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        goto out;
    if (write_all(fd, data, len) < 0) {
        close(fd);
        unlink(tmp);
        goto out;
    }
    if ((durable && fsync(fd) < 0) || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        goto out;
    }
    r = 0;
out:
    sbx__free(tmp);
    return r;
}

char *read_file(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    sbx__buf b = SBX__BUF_INIT;
    char chunk[8192];

    if (fd < 0)
        return NULL;
    b.limit = max;
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (sbx__buf_append(&b, chunk, (size_t)r) != SBX_OK) {
            close(fd);
            sbx__buf_free(&b);
            return NULL;
        }
    }
    close(fd);
    return sbx__buf_detach(&b, len);
}

char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = sbx__malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

json_t *json_str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *load_json_file(const char *path)
{
    char *text = read_file(path, 1 << 20, NULL);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    sbx__free(text);
    return j;
}

/* ---- --add-host ------------------------------------------------------------ */

bool add_host_ok(const char *entry)
{
    const char *eq = strchr(entry, '=');
    unsigned char buf[16];
    char addr[64];
    if (!eq || eq == entry || eq - entry > 253 || strlen(eq + 1) >= sizeof addr)
        return false;
    for (const char *p = entry; p < eq; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            return false;
    snprintf(addr, sizeof addr, "%s", eq + 1);
    return inet_pton(AF_INET, addr, buf) == 1 || inet_pton(AF_INET6, addr, buf) == 1;
}

const char *add_host_lookup(const char *name)
{
    size_t n = strlen(name);
    /* Later entries win, as with repeated options elsewhere. */
    for (size_t i = g.cfg.add_hosts.n; i-- > 0;) {
        const char *e = g.cfg.add_hosts.v[i];
        if (strncasecmp(e, name, n) == 0 && e[n] == '=')
            return e + n + 1;
    }
    return NULL;
}

int records_each(const char *sub, const char *prefix, int (*each)(const char *id, json_t *j, void *arg), void *arg)
{
    char *dir = path_join(g.cfg.state_dir, sub);
    DIR *d;
    struct dirent *e;
    int n = 0;
    if (!dir)
        return -1;
    d = opendir(dir);
    if (!d) {
        sbx__free(dir);
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        char id[64], *path;
        size_t len = strlen(e->d_name);
        json_t *j;
        if (len < 6 || len - 5 >= sizeof id || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        memcpy(id, e->d_name, len - 5);
        id[len - 5] = '\0';
        if (!id_is_safe(id) || strncmp(id, prefix, strlen(prefix)) != 0)
            continue;
        path = path_join(dir, e->d_name);
        j = path ? load_json_file(path) : NULL;
        if (!j || each(id, j, arg) < 0)
            sbxd_log(LOG_WARN, "ignoring unreadable record %s/%s", sub, e->d_name);
        else
            n++;
        json_decref(j);
        sbx__free(path);
    }
    closedir(d);
    sbx__free(dir);
    return n;
}

void thread_stack_release(void)
{
    pthread_attr_t a;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &lo, &size) == 0) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t start = ((uintptr_t)lo + page - 1) & ~(page - 1);
        /* two pages below this frame for the calls still to come here;
         * deeper ones only fault in zeroed pages */
        uintptr_t end = ((uintptr_t)__builtin_frame_address(0) - 2 * page) & ~(page - 1);
        if (end > start && end - start <= size)
            madvise((void *)start, end - start, MADV_DONTNEED);
    }
    pthread_attr_destroy(&a);
}
