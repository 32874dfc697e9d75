/* SPDX-License-Identifier: MIT */
/*
 * sbxrun cp: copy files and directories into a sandbox and out of it.
 *
 * In: sbx_sandbox_upload() (a file, a directory, or standard input).
 * Out: a file is sbx_sandbox_download() (a temporary file beside its
 * target, synced and renamed into place when complete), or streamed to
 * standard output (sbx_sandbox_read_stream). The protocol reads
 * only regular files, so a path that is not one is tried as a directory:
 * `tar` in the sandbox packs it into a temporary file there (zstd -1 when
 * the sandbox has zstd), which is streamed out and unpacked as it arrives
 * into a temporary directory beside the target, renamed into place when
 * complete; the sandbox's temporary file is removed either way.
 *
 * Progress (bytes, rate, elapsed) is drawn on stderr by a thread while the
 * copy runs, only when stderr is a terminal (and not with --json, nor when
 * the file goes to a terminal on stdout). A download is counted by
 * sbx_op_get_progress() (of the file's length), a stream by the bytes as
 * they arrive. An upload is sized before it is sent (the library generates
 * the gzip tar once to learn its length, inside sbx_sandbox_upload_start):
 * that pass is counted by the bytes this process has read (rchar in
 * /proc/self/io), the sending by sbx_op_get_progress() (the body's bytes
 * sent, shown as the same fraction of the files' bytes).
 */
#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "remote.h"

static const char usage_text[] =
    "usage: sbxrun cp [options] LOCAL SANDBOX:PATH\n"
    "       sbxrun cp [options] SANDBOX:PATH LOCAL\n"
    "       sbxrun cp [options] SANDBOX:PATH -\n"
    "\n"
    "Copy a local file, or a directory and everything below it, into a sandbox\n"
    "(streamed as a gzip tar; relative PATHs are under /vercel/sandbox); LOCAL -\n"
    "is standard input, read to its end first (up to 64 MiB). Copy a file or a\n"
    "directory out of a sandbox: written beside LOCAL and renamed into place\n"
    "when complete, so a failed copy leaves nothing; - writes a file to standard\n"
    "output. When LOCAL is an existing directory, the copy keeps its name inside\n"
    "it; a directory is never merged into one that exists. A directory comes out\n"
    "as a tar made in the sandbox (by its tar, in its /tmp, removed after), with\n"
    "its files and directories (modes as the umask allows); links and devices\n"
    "are left out and counted on stderr. SANDBOX is a sandbox id, or the name\n"
    "of a named sandbox (started when it is stopped).\n"
    "\n"
    "On a terminal, progress (bytes, rate, elapsed time) is shown on stderr.\n"
    "\n" REMOTE_OPTS_HELP
    "\n"
    "Exit status: 0 copied; 1 the server refused (a path that is not there);\n"
    "2 usage; 125 no such sandbox, a local file that cannot be read or written,\n"
    "or the endpoint could not be reached or did not answer in time; 130\n"
    "interrupted (SIGINT, SIGTERM), nothing left behind.\n";

/* "sbx_abc:/path" -> id and path; NULL when arg is a local path. */
static char *split_remote(const char *arg, const char **path)
{
    const char *colon = strchr(arg, ':');
    char *id;
    if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.')
        return NULL;
    for (const char *p = arg; p < colon; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return NULL;
    id = strndup(arg, (size_t)(colon - arg));
    *path = colon + 1;
    return id;
}

/* ---- progress --------------------------------------------------------------------------- */

#define DRAW_MS 200

struct progress {
    bool on;                 /* drawn: stderr is a terminal */
    _Atomic(const char *) verb; /* what is happening: "reading", "sending", ... */
    _Atomic(const char *) after; /* what happens once total is reached, or NULL */
    _Atomic uint64_t done;   /* bytes so far (not used when from_rchar) */
    uint64_t total;          /* 0: not known */
    _Atomic bool from_rchar; /* done = rchar - rchar_base */
    _Atomic uint64_t rchar_base;
    /* A transfer's op: an upload's done is total * its body's fraction
     * sent; a download's, the bytes received (of its Content-Length). The
     * lock keeps the op from being freed while the drawing thread asks. */
    pthread_mutex_t lock;
    sbx_op *op;
    bool receiving;
    int64_t t0;
    _Atomic int64_t phase_t0; /* the rate is the phase's */
    atomic_bool stop;
    pthread_t thread;
    bool running, drawn;
};

/* Bytes this process has read through read(2) and the like (all threads). */
static uint64_t rchar(void)
{
    char buf[512];
    unsigned long long v = 0;
    int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (strncmp(buf, "rchar: ", 7) != 0 || sscanf(buf + 7, "%llu", &v) != 1)
        return 0;
    return v;
}

static void human(char *out, size_t cap, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static void elapsed(char *out, size_t cap, int64_t ms)
{
    long long s = (long long)(ms / 1000);
    if (s >= 3600)
        snprintf(out, cap, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(out, cap, "%lld:%02lld", s / 60, s % 60);
}

/* How far the watched op has come, and of how much (0: not known); false
 * when no op is watched. */
static bool op_done(struct progress *p, uint64_t *d, uint64_t *total)
{
    uint64_t sent = 0, received = 0;
    int64_t of = -1, rof = -1;
    bool watching, receiving;
    pthread_mutex_lock(&p->lock);
    if ((watching = p->op != NULL))
        sbx_op_get_progress(p->op, &sent, &of, &received, &rof);
    receiving = p->receiving;
    pthread_mutex_unlock(&p->lock);
    if (receiving) {
        *d = received;
        *total = rof > 0 ? (uint64_t)rof : 0;
    } else {
        /* the body is the files' gzip tar: the same fraction of them */
        *d = of <= 0 ? 0 : p->total ? (uint64_t)((double)p->total * (double)sent / (double)of) : sent;
        *total = p->total;
    }
    return watching;
}

/* Bytes so far, and the total (0: not known). */
static uint64_t progress_done(struct progress *p, uint64_t *total)
{
    uint64_t d;
    if (op_done(p, &d, total))
        return *total && d > *total ? *total : d;
    *total = p->total;
    if (atomic_load(&p->from_rchar)) {
        uint64_t now = rchar(), base = atomic_load(&p->rchar_base);
        d = now > base ? now - base : 0;
    } else {
        d = atomic_load(&p->done);
    }
    return *total && d > *total ? *total : d;
}

/* "sbxrun cp: sending 120.5 MiB of 190.7 MiB (63%)  45.2 MiB/s  0:03" */
static void draw(struct progress *p)
{
    char got[32], of[32], rate[32], t[32], line[200];
    uint64_t total, d = progress_done(p, &total);
    int64_t now = cli_mono_ms(), ms = now - atomic_load(&p->phase_t0);
    const char *after = atomic_load(&p->after);
    human(got, sizeof got, (double)d);
    human(of, sizeof of, (double)total);
    human(rate, sizeof rate, ms > 0 ? (double)d * 1000.0 / (double)ms : 0);
    elapsed(t, sizeof t, now - p->t0);
    if (!d && !total)
        snprintf(line, sizeof line, "sbxrun cp: %s  %s", atomic_load(&p->verb), t);
    else if (total && d >= total && after)
        snprintf(line, sizeof line, "sbxrun cp: %s %s; %s  %s", atomic_load(&p->verb), of, after, t);
    else if (total)
        snprintf(line, sizeof line, "sbxrun cp: %s %s of %s (%d%%)  %s/s  %s", atomic_load(&p->verb), got, of,
                 (int)((double)d * 100.0 / (double)total), rate, t);
    else
        snprintf(line, sizeof line, "sbxrun cp: %s %s  %s/s  %s", atomic_load(&p->verb), got, rate, t);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    p->drawn = true;
}

static void *progress_thread(void *arg)
{
    struct progress *p = arg;
    struct timespec slice = {0, 50 * 1000000L};
    int64_t next = cli_mono_ms() + DRAW_MS;
    while (!atomic_load(&p->stop)) {
        nanosleep(&slice, NULL);
        if (cli_mono_ms() >= next && !atomic_load(&p->stop)) {
            draw(p);
            next += DRAW_MS;
        }
    }
    return NULL;
}

static void progress_start(struct progress *p, bool on, const char *verb, uint64_t total)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->on = on;
    atomic_store(&p->verb, verb);
    p->total = total;
    p->t0 = cli_mono_ms();
    atomic_store(&p->phase_t0, p->t0);
    if (on) {
        /* SIGINT and SIGTERM stay the main thread's (cli_cancel_on_signal):
         * the drawing thread is made with them blocked. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        p->running = pthread_create(&p->thread, NULL, progress_thread, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
}

/* A new phase: verb (after: what is said once total is reached), and
 * (for an upload) counting reads from now on. */
static void progress_phase(struct progress *p, const char *verb, const char *after, bool from_rchar)
{
    atomic_store(&p->rchar_base, from_rchar && p->on ? rchar() : 0);
    atomic_store(&p->from_rchar, from_rchar);
    atomic_store(&p->after, after);
    atomic_store(&p->phase_t0, cli_mono_ms());
    atomic_store(&p->verb, verb);
}

/* Count by op from now on: its body sent, or received (NULL: no more,
 * before op is freed; a download's bytes stay counted). */
static void progress_watch(struct progress *p, sbx_op *op, bool receiving)
{
    pthread_mutex_lock(&p->lock);
    if (!op && p->op && p->receiving) {
        uint64_t received = 0;
        sbx_op_get_progress(p->op, NULL, NULL, &received, NULL);
        atomic_store(&p->done, received);
    }
    p->op = op;
    p->receiving = receiving;
    pthread_mutex_unlock(&p->lock);
}

/* Stop drawing and take the line away; with ok, say what was copied. */
static void progress_end(struct progress *p, bool ok, const char *what, uint64_t bytes)
{
    if (p->running) {
        atomic_store(&p->stop, true);
        pthread_join(p->thread, NULL);
        p->running = false;
    }
    pthread_mutex_destroy(&p->lock);
    if (!p->on)
        return;
    if (p->drawn)
        fputs("\r\033[K", stderr);
    if (ok) {
        char b[32], rate[32];
        int64_t ms = cli_mono_ms() - p->t0;
        human(b, sizeof b, (double)bytes);
        human(rate, sizeof rate, ms > 0 ? (double)bytes * 1000.0 / (double)ms : 0);
        fprintf(stderr, "sbxrun cp: %s %s in %.1f s (%s/s)\n", what, b, (double)ms / 1000.0, rate);
    }
    fflush(stderr);
}

/* The bytes an upload of local reads (regular files, and links to them),
 * for the progress; 0 when not known (a pipe). */
static uint64_t tree_bytes_sum;

static int add_size(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    struct stat tb;
    (void)ftw;
    if (flag == FTW_F && S_ISREG(sb->st_mode))
        tree_bytes_sum += (uint64_t)sb->st_size;
    else if (flag == FTW_SL && stat(p, &tb) == 0 && S_ISREG(tb.st_mode))
        tree_bytes_sum += (uint64_t)tb.st_size;
    return 0;
}

static uint64_t local_bytes(const char *local)
{
    struct stat sb;
    if (stat(local, &sb) != 0)
        return 0;
    if (S_ISREG(sb.st_mode))
        return (uint64_t)sb.st_size;
    if (!S_ISDIR(sb.st_mode))
        return 0;
    tree_bytes_sum = 0;
    nftw(local, add_size, 32, FTW_PHYS);
    return tree_bytes_sum;
}

/* ---- driving an operation ------------------------------------------------------------- */

/* Wait for op, Ctrl-C cancelling it. Its status; the message in err. */
static sbx_status finish_op(sbx_op *op, char *err, size_t errlen)
{
    sbx_status st;
    cli_cancel_on_signal(op);
    st = sbx_op_wait(op, -1);
    cli_cancel_on_signal(NULL);
    if (st != SBX_OK)
        snprintf(err, errlen, "%s", sbx_op_last_error(op));
    return st;
}

/* ---- out: a file ---------------------------------------------------------------------- */

struct out_sink {
    int err;                 /* errno of a failed write */
    struct progress *pg;
};

static int sink_stdout(const uint8_t *data, size_t len, void *user)
{
    struct out_sink *o = user;
    while (len) {
        ssize_t w = write(STDOUT_FILENO, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->err = w < 0 ? errno : EIO;
            return 1;
        }
        data += w;
        len -= (size_t)w;
        atomic_fetch_add(&o->pg->done, (uint64_t)w);
    }
    return 0;
}

/* Copy path to local ("-": stdout). A file is the library's download (a
 * temporary file beside local, synced and renamed into place when whole).
 * SBX_E_NOT_FOUND when the sandbox has no such regular file (nothing is
 * left behind). */
static sbx_status get_file(sbx_sandbox *s, const char *path, const char *local, struct progress *pg, char *err,
                           size_t errlen)
{
    struct out_sink o = {.pg = pg};
    sbx_op *op = NULL;
    sbx_status st;
    bool to_stdout = strcmp(local, "-") == 0;

    st = to_stdout ? sbx_sandbox_read_stream_start(s, path, sink_stdout, &o, &op)
                   : sbx_sandbox_download_start(s, path, local, &op);
    if (st != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_sandbox_last_error(s));
        return st;
    }
    if (!to_stdout)
        progress_watch(pg, op, true);
    st = finish_op(op, err, errlen);
    progress_watch(pg, NULL, false);
    sbx_op_free(op);
    if (o.err) {
        snprintf(err, errlen, "standard output: %s", strerror(o.err));
        st = SBX_E_IO;
    } else if (st == SBX_OK && to_stdout && fflush(stdout) != 0) {
        snprintf(err, errlen, "standard output: %s", strerror(errno));
        st = SBX_E_IO;
    }
    return st;
}

/* ---- out: a directory ----------------------------------------------------------------- */

/* Pack $1 (a directory, relative to the sandbox's working directory) into
 * the new file $2 (named by sbxrun, so that it can remove it whatever
 * happens). Exit 3: not a directory; 4: $2 exists; 5: tar failed. The file
 * is packed whole before it is sent, so the compressor must be fast: zstd
 * -1 (~160 MB/s on text, ~1 GB/s on random bytes) when the sandbox has it,
 * else none (gzip -1 takes 30 MB/s on random bytes: slower than most
 * links). sh has no pipefail: tar's failure is marked in a file beside. */
static const char pack_script[] =
    "case $1 in /*) d=$1 ;; *) d=./$1 ;; esac\n" /* "cd -- -" would be $OLDPWD */
    "cd -- \"$d\" 2>/dev/null || exit 3\n"
    "(set -C; : >\"$2\") || exit 4\n"
    "if command -v zstd >/dev/null 2>&1; then\n"
    "  { tar -cf - . || : >\"$2.failed\"; } | zstd -1 -q -f -o \"$2\" || exit 5\n"
    "  if [ -e \"$2.failed\" ]; then exit 5; fi\n"
    "else\n"
    "  tar -cf \"$2\" . || exit 5\n"
    "fi\n";

/* The last bytes of a command's stderr; its stdout dropped. Kept by a
 * callback, so that a command that prints a lot (tar's complaints about
 * thousands of unreadable files) never fills the library's buffer. */
struct tail {
    char buf[1024];
    size_t len;
};

static int keep_tail(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct tail *t = user;
    if (stream != SBX_STREAM_STDERR)
        return 0;
    if (len >= sizeof t->buf) {
        data += len - sizeof t->buf;
        len = sizeof t->buf;
    }
    if (t->len + len > sizeof t->buf) {
        size_t drop = t->len + len - sizeof t->buf;
        memmove(t->buf, t->buf + drop, t->len - drop);
        t->len -= drop;
    }
    memcpy(t->buf + t->len, data, len);
    t->len += len;
    return 0;
}

/* Run sh -c script with up to two arguments in the sandbox: its exit code,
 * or -1 when it did not run to its end (err says why; on Ctrl-C it is
 * killed, unless cancellable is false: a clean-up runs to its end). The
 * end of its stderr in err, control bytes escaped. */
static int run_sh(sbx_sandbox *s, const char *script, const char *arg1, const char *arg2, bool cancellable, char *err,
                  size_t errlen)
{
    const char *argv[] = {"sh", "-c", script, "sh", arg1, arg2};
    sbx_command *k = sbx_command_new(s);
    sbx_op *op = NULL;
    struct tail t = {{0}, 0};
    int code = -1;
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (sbx_command_set_argv(k, arg2 ? 6 : arg1 ? 5 : 4, argv) != SBX_OK ||
        sbx_command_set_output_cb(k, keep_tail, &t) != SBX_OK || sbx_command_run_start(k, &op) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_command_last_error(k));
        sbx_command_free(k);
        return -1;
    }
    if (cancellable ? finish_op(op, err, errlen) != SBX_OK : sbx_op_wait(op, -1) != SBX_OK) {
        if (!cancellable)
            snprintf(err, errlen, "%s", sbx_op_last_error(op));
        /* Ctrl-C: the program goes too, not only the wait for it. */
        if (cli_interrupted() && sbx_command_id(k) && sbx_command_exit_code(k) < 0)
            sbx_command_kill(k, 9);
        sbx_op_free(op);
        sbx_command_free(k);
        return -1;
    }
    sbx_op_free(op);
    code = sbx_command_exit_code(k);
    while (t.len && (t.buf[t.len - 1] == '\n' || t.buf[t.len - 1] == '\r'))
        t.len--;
    cli_printable(err, errlen, t.buf, t.len);
    sbx_command_free(k);
    return code;
}

/* The bytes of a read handed to libarchive as they arrive: its read
 * callback drives the client until some are there. */
struct pull {
    sbx_client *c;
    sbx_op *op;
    unsigned char *buf, *lent; /* arriving; held by libarchive since its last read */
    size_t len, cap, lent_cap;
    bool nomem, ended;       /* ended: the archive is read, the rest is dropped */
    struct progress *pg;
};

static int pull_data(const uint8_t *data, size_t len, void *user)
{
    struct pull *p = user;
    atomic_fetch_add(&p->pg->done, (uint64_t)len);
    if (p->ended)
        return 0;
    if (p->len + len > p->cap) {
        size_t cap = p->cap ? p->cap : 65536;
        unsigned char *b;
        while (cap < p->len + len)
            cap *= 2;
        if (!(b = realloc(p->buf, cap))) {
            p->nomem = true;
            return 1;
        }
        p->buf = b;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, data, len);
    p->len += len;
    return 0;
}

static la_ssize_t pull_read(struct archive *a, void *user, const void **out)
{
    struct pull *p = user;
    unsigned char *b;
    size_t n;
    while (p->len == 0 && !sbx_op_done(p->op))
        if (!cli_pump(p->c, 100)) { /* at most 100 ms between looks at the op */
            archive_set_error(a, EIO, "%s", sbx_client_last_error(p->c));
            return -1;
        }
    if (p->len == 0) {
        if (sbx_op_status(p->op) != SBX_OK) {
            archive_set_error(a, EIO, "%s", p->nomem ? "out of memory" : sbx_op_last_error(p->op));
            return -1;
        }
        return 0;
    }
    /* Swap the buffers: libarchive reads this one until it asks again. */
    b = p->lent;
    p->lent = p->buf;
    *out = p->lent;
    n = p->len;
    p->buf = b;
    p->len = 0;
    {
        size_t c = p->lent_cap;
        p->lent_cap = p->cap;
        p->cap = c;
    }
    return (la_ssize_t)n;
}

/* A tar entry's name made relative and clean ("./a/./b" -> "a/b"; "" for
 * the root); NULL when it is absolute or climbs out with "..". */
static char *clean_name(const char *name)
{
    char *out = malloc(strlen(name) + 1);
    size_t n = 0;
    if (!out || name[0] == '/') {
        free(out);
        return NULL;
    }
    for (const char *p = name; *p;) {
        size_t k = strcspn(p, "/");
        if (k == 2 && p[0] == '.' && p[1] == '.') {
            free(out);
            return NULL;
        }
        if (k && !(k == 1 && p[0] == '.')) {
            if (n)
                out[n++] = '/';
            memcpy(out + n, p, k);
            n += k;
        }
        p += k;
        while (*p == '/')
            p++;
    }
    out[n] = '\0';
    return out;
}

/* A sandbox decides how much a directory copy writes here (zstd makes
 * gigabytes of a few kilobytes): the copy stops before the file system of
 * the target has less than DISK_RESERVE_PCT percent, or 1 GiB, left. */
#define DISK_CHECK_EVERY (64u << 20)
#define DISK_RESERVE_PCT 5

static bool room_left(const char *root, char *err, size_t errlen)
{
    struct statvfs v;
    uint64_t avail, total, reserve;
    if (statvfs(root, &v) != 0)
        return true; /* no figure to go by: the writes themselves fail when it is full */
    avail = (uint64_t)v.f_bavail * v.f_frsize;
    total = (uint64_t)v.f_blocks * v.f_frsize;
    reserve = total / 100 * DISK_RESERVE_PCT;
    if (reserve < (1ull << 30))
        reserve = 1ull << 30;
    if (avail >= reserve)
        return true;
    snprintf(err, errlen, "stopped: the copy would leave less than %llu MiB free on the disk of %s",
             (unsigned long long)(reserve >> 20), root);
    return false;
}

/* Unpack the stream of op into root (an empty directory, canonical path):
 * regular files and directories only, the others counted in *skipped. */
static int unpack(struct pull *p, const char *root, size_t *files, size_t *skipped, char *err, size_t errlen)
{
    struct archive *a = archive_read_new(), *d = archive_write_disk_new();
    struct archive_entry *e;
    uint64_t unpacked = 0, checked = 0;
    int r, rc = -1;

    if (!a || !d) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    archive_read_support_filter_zstd(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    /* No owner, no times, no ACLs; modes under the umask; never through a
     * link (the root is canonical, and no link is made). */
    archive_write_disk_set_options(d, ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
    if (archive_read_open(a, p, NULL, pull_read, NULL) != ARCHIVE_OK) {
        snprintf(err, errlen, "reading the directory's tar: %s", archive_error_string(a));
        goto out;
    }
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        mode_t type = archive_entry_filetype(e);
        const char *name = archive_entry_pathname(e);
        char *clean, *full;
        const void *buf;
        size_t size;
        la_int64_t off;
        bool wrote;

        if (archive_entry_hardlink(e) || (type != AE_IFREG && type != AE_IFDIR)) {
            (*skipped)++;
            continue;
        }
        if (!name || !(clean = clean_name(name))) {
            char shown[256];
            cli_printable(shown, sizeof shown, name ? name : "?", name ? strlen(name) : 1);
            snprintf(err, errlen, "the sandbox's tar has an entry outside the directory: %s", shown);
            goto out;
        }
        if (!*clean) { /* the directory itself: root */
            free(clean);
            continue;
        }
        if (asprintf(&full, "%s/%s", root, clean) < 0) {
            free(clean);
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        archive_entry_copy_pathname(e, full);
        /* Permission bits only; a directory stays writable, for what goes in it. */
        archive_entry_set_perm(e, (archive_entry_perm(e) & 0777) | (type == AE_IFDIR ? 0700 : 0));
        if (archive_write_header(d, e) != ARCHIVE_OK) {
            char shown[256];
            cli_printable(shown, sizeof shown, clean, strlen(clean));
            snprintf(err, errlen, "%s: %s", shown, archive_error_string(d));
            free(clean);
            free(full);
            goto out;
        }
        wrote = true;
        while (wrote && (r = archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK) {
            wrote = archive_write_data_block(d, buf, size, off) == ARCHIVE_OK;
            if (wrote && (unpacked += size) - checked >= DISK_CHECK_EVERY) {
                checked = unpacked;
                if (!room_left(root, err, errlen)) {
                    free(clean);
                    free(full);
                    goto out;
                }
            }
        }
        if (!wrote || r != ARCHIVE_EOF || archive_write_finish_entry(d) != ARCHIVE_OK) {
            /* the local side (d) or the stream (a: its reading, or the op) */
            char shown[256];
            cli_printable(shown, sizeof shown, clean, strlen(clean));
            snprintf(err, errlen, "%s: %s", shown,
                     !wrote || r == ARCHIVE_EOF ? archive_error_string(d) : archive_error_string(a));
            free(clean);
            free(full);
            goto out;
        }
        if (type == AE_IFREG)
            (*files)++;
        free(clean);
        free(full);
    }
    if (r != ARCHIVE_EOF) {
        snprintf(err, errlen, "reading the directory's tar: %s", archive_error_string(a));
        goto out;
    }
    rc = 0;
out:
    p->ended = true;
    if (a)
        archive_read_free(a);
    if (d)
        archive_write_free(d);
    return rc;
}

/* Copy directory path of the sandbox to local (which must not exist). */
static sbx_status get_dir(sbx_client *c, sbx_sandbox *s, const char *path, const char *local, struct progress *pg,
                          size_t *files, size_t *skipped, char *err, size_t errlen)
{
    char remote_tmp[64], why[1024] = "", *tmp = NULL, *root = NULL;
    struct pull p = {0};
    sbx_status st = SBX_OK;
    unsigned char rnd[8] = {0};
    int code;

    /* A name of its own in the sandbox's /tmp. */
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)cli_mono_ms() ^ ((uint64_t)getpid() << 32);
        memcpy(rnd, &x, sizeof rnd);
    }
    snprintf(remote_tmp, sizeof remote_tmp, "/tmp/sbxrun-cp.%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    progress_phase(pg, "packing it in the sandbox", NULL, false);
    code = run_sh(s, pack_script, path, remote_tmp, true, why, sizeof why);
    if (code == 3)
        return SBX_E_NOT_FOUND; /* neither a file nor a directory: the caller says so */
    if (code < 0 && !cli_interrupted()) {
        snprintf(err, errlen, "%s could not be checked for a directory: %s", path, why);
        st = SBX_E_NOT_FOUND;
        goto out;
    }
    if (code != 0) {
        if (code < 0)
            snprintf(err, errlen, "interrupted while packing %s in the sandbox", path);
        else
            snprintf(err, errlen, "packing %s in the sandbox failed (exit %d)%s%s", path, code, *why ? ": " : "",
                     why);
        st = code < 0 ? SBX_E_CANCELLED : SBX_E_IO;
        goto out;
    }
    if (asprintf(&tmp, "%s.sbxrun-XXXXXX", local) < 0 || !mkdtemp(tmp) || !(root = realpath(tmp, NULL))) {
        snprintf(err, errlen, "cannot create a directory beside %s: %s", local, strerror(errno));
        st = SBX_E_IO;
        goto out;
    }
    progress_phase(pg, "receiving", NULL, false);
    p.c = c;
    p.pg = pg;
    if (sbx_sandbox_read_stream_start(s, remote_tmp, pull_data, &p, &p.op) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_sandbox_last_error(s));
        st = SBX_E_IO;
        goto out;
    }
    cli_cancel_on_signal(p.op);
    if (unpack(&p, root, files, skipped, err, errlen) < 0) {
        st = sbx_op_done(p.op) && sbx_op_status(p.op) != SBX_OK ? sbx_op_status(p.op) : SBX_E_IO;
        if (st != SBX_E_IO)
            snprintf(err, errlen, "%s", p.nomem ? "out of memory" : sbx_op_last_error(p.op));
        sbx_op_cancel(p.op);
    } else if ((st = sbx_op_wait(p.op, -1)) != SBX_OK) { /* the end, after the tar's own */
        snprintf(err, errlen, "%s", sbx_op_last_error(p.op));
    }
    cli_cancel_on_signal(NULL);
    if (st == SBX_OK && cli_interrupted()) {
        snprintf(err, errlen, "interrupted: nothing was copied");
        st = SBX_E_CANCELLED;
    }
    if (st == SBX_OK) {
        mode_t um = umask(0);
        int fd, moved;
        umask(um);
        (void)chmod(root, 0777 & ~um);
        /* On disk before it takes the name (one syncfs, not an fsync a file). */
        if ((fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
            (void)syncfs(fd);
            close(fd);
        }
        /* Never over a directory made meanwhile; not after a Ctrl-C in the sync. */
        if (cli_interrupted()) {
            snprintf(err, errlen, "interrupted: nothing was copied");
            st = SBX_E_CANCELLED;
            goto out;
        }
        moved = renameat2(AT_FDCWD, root, AT_FDCWD, local, RENAME_NOREPLACE);
        if (moved != 0 && errno == EINVAL) { /* a file system without RENAME_NOREPLACE */
            if (access(local, F_OK) == 0)
                errno = EEXIST;
            else
                moved = rename(root, local);
        }
        if (moved != 0) {
            snprintf(err, errlen, "cannot move the copy to %s: %s", local, strerror(errno));
            st = SBX_E_IO;
        }
    }
out:
    if (st != SBX_OK && tmp)
        cli_rm_tree(tmp);
    /* The packed file in the sandbox goes, whatever happened here. */
    run_sh(s, "rm -f -- \"$1\" \"$1.failed\"", remote_tmp, NULL, false, why, sizeof why);
    sbx_op_free(p.op);
    free(p.buf);
    free(p.lent);
    free(root);
    free(tmp);
    return st;
}

/* ---- the command ---------------------------------------------------------------------- */

/* The last component of a sandbox path ("" when there is none: "/", "."). */
static const char *base_name(const char *path, char *buf, size_t cap)
{
    size_t n = strlen(path);
    const char *b;
    while (n > 1 && path[n - 1] == '/')
        n--;
    snprintf(buf, cap, "%.*s", (int)n, path);
    b = strrchr(buf, '/');
    b = b ? b + 1 : buf;
    return strcmp(b, ".") == 0 || strcmp(b, "..") == 0 ? "" : b;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int cmd_cp(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, REMOTE_LONGOPTS, {NULL, 0, NULL, 0}};
    struct remote_opts o = remote_defaults;
    struct remote r;
    struct progress pg = {0};
    const char *src_path = NULL, *dst_path = NULL, *local, *type = "file";
    char *src_id, *dst_id, *id, err[2400] = "", *local_dst = NULL, namebuf[PATH_MAX];
    int c, rc = SBXRUN_EXIT_FAIL;
    sbx_sandbox *s = NULL;
    sbx_status st;
    size_t files = 0, skipped = 0;
    bool show;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        if (c == 'h') {
            fputs(usage_text, stdout);
            return SBXRUN_EXIT_OK;
        }
        return cli_bad_option("cp", argc, argv, longopts);
    }
    /* From here a Ctrl-C is noticed, not fatal: a copy is either whole, in
     * place, or not there, on both sides. */
    cli_trap_signals();
    if (argc - optind < 2)
        return cli_usage_error("cp", "missing %s: sbxrun cp SRC DEST (one of them SANDBOX:PATH)",
                               argc == optind ? "the source and the destination" : "the destination");
    if (argc - optind > 2)
        return cli_usage_error("cp", "one source and one destination, not %d arguments ('%s' is one too many)",
                               argc - optind, argv[optind + 2]);
    src_id = split_remote(argv[optind], &src_path);
    dst_id = split_remote(argv[optind + 1], &dst_path);
    if (!src_id == !dst_id) {
        free(src_id);
        free(dst_id);
        return cli_usage_error("cp", "exactly one of the two must be SANDBOX:PATH");
    }
    id = src_id ? src_id : dst_id;
    if (!*(src_id ? src_path : dst_path)) {
        cli_usage_error("cp", "%s: the path in the sandbox is empty", id);
        free(id);
        return SBXRUN_EXIT_USAGE;
    }
    local = argv[optind + (src_id ? 1 : 0)];
    if (src_id && strcmp(local, "-") == 0 && o.json) {
        free(id);
        return cli_usage_error("cp", "--json and '-' would both write to standard output");
    }
    if ((st = remote_open(&r, &o, false, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "cp", remote_open_exit(st), "connect", st, err);
        remote_close(&r);
        free(id);
        return rc;
    }
    s = sbx_sandbox_new(r.client);
    if (!s || (st = remote_fetch(s, id, true, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "cp", s ? remote_fetch_exit(st) : SBXRUN_EXIT_CANNOT_RUN, "find the sandbox",
                      s ? st : SBX_E_NOMEM, s ? err : "out of memory");
        goto out;
    }
    /* Progress on a terminal, unless it would mix with the data there. */
    show = cli_live_view(STDERR_FILENO) && !o.json && !(src_id && strcmp(local, "-") == 0 && isatty(STDOUT_FILENO));

    if (dst_id) {
        /* In: the library reads the files twice (sizing, then sending). */
        sbx_op *op = NULL;
        const char *from = strcmp(local, "-") == 0 ? "/dev/stdin" : local;
        uint64_t total = strcmp(local, "-") == 0 ? 0 : local_bytes(local);
        type = is_dir(from) ? "directory" : "file";
        progress_start(&pg, show, "reading", total);
        progress_phase(&pg, "reading", NULL, true);
        st = sbx_sandbox_upload_start(s, from, dst_path, &op);
        if (st == SBX_OK) {
            progress_phase(&pg, "sending", "the sandbox is writing it", false);
            progress_watch(&pg, op, false);
            st = finish_op(op, err, sizeof err);
            progress_watch(&pg, NULL, false);
        } else {
            snprintf(err, sizeof err, "%s", sbx_sandbox_last_error(s));
        }
        sbx_op_free(op);
        progress_end(&pg, st == SBX_OK, "sent", total);
    } else {
        /* Out: a file, or else a directory. */
        const char *base = base_name(src_path, namebuf, sizeof namebuf);
        bool to_stdout = strcmp(local, "-") == 0, into_dir = !to_stdout && is_dir(local);
        if (into_dir && *base) {
            if (asprintf(&local_dst, "%s/%s", local, base) < 0) {
                rc = fail_msg(o.json, "cp", SBXRUN_EXIT_CANNOT_RUN, "cp", SBX_E_NOMEM, "out of memory");
                goto out;
            }
            local = local_dst;
        }
        progress_start(&pg, show, "receiving", 0);
        st = SBX_E_NOT_FOUND;
        if (!into_dir || *base)
            st = get_file(s, src_path, local, &pg, err, sizeof err);
        if (st == SBX_E_NOT_FOUND) {
            /* Not a regular file: perhaps a directory. */
            char first[1024];
            /* The library's message names no path: say which. */
            snprintf(first, sizeof first, "%.700s: %.300s", *err ? err : "read file: no such file in the sandbox",
                     src_path);
            if (to_stdout || (into_dir && !*base) || is_dir(local) || access(local, F_OK) == 0) {
                /* Decided after asking: is it a directory at all? */
                char why[256];
                int code = run_sh(s, "test -d \"$1\"", src_path, NULL, true, why, sizeof why);
                if (code == 0) {
                    st = to_stdout ? SBX_E_INVALID_ARG : SBX_E_CONFLICT;
                    if (to_stdout)
                        snprintf(err, sizeof err, "%s is a directory: '-' takes a file (give a local directory to "
                                                  "copy it to)", src_path);
                    else if (into_dir && !*base)
                        snprintf(err, sizeof err, "%s exists: name the new directory to copy %s to", local, src_path);
                    else
                        snprintf(err, sizeof err, "%s exists: a directory is copied to a new name, never merged "
                                                  "into or over what is there", local);
                } else {
                    snprintf(err, sizeof err, "%s", first);
                }
            } else {
                char why[1024] = "";
                type = "directory";
                st = get_dir(r.client, s, src_path, local, &pg, &files, &skipped, why, sizeof why);
                if (st == SBX_E_NOT_FOUND) {
                    type = "file";
                    snprintf(err, sizeof err, "%s%s%s", first, *why ? "; and " : "", why);
                } else {
                    snprintf(err, sizeof err, "%s", why);
                }
            }
        }
        progress_end(&pg, st == SBX_OK, "received", atomic_load(&pg.done));
        if (st == SBX_OK && skipped)
            fprintf(stderr, "sbxrun cp: left out %zu entr%s that %s not a regular file or a directory (links, "
                            "devices)\n", skipped, skipped == 1 ? "y" : "ies", skipped == 1 ? "is" : "are");
    }
    if (st != SBX_OK) {
        rc = cli_interrupted() && st == SBX_E_CANCELLED ? SBXRUN_EXIT_INTERRUPTED : remote_exit(st);
        rc = fail_msg(o.json, "cp", rc, "cp", st, err[0] ? err : sbx_strerror(st));
        goto out;
    }
    if (o.json) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "sandboxId", sbx_sandbox_id(s), "direction",
                              dst_id ? "in" : "out", "type", type, "from", argv[optind], "to",
                              local_dst ? local_dst : argv[optind + 1]);
        if (j && !dst_id && strcmp(type, "directory") == 0) {
            json_object_set_new(j, "files", json_integer((json_int_t)files));
            json_object_set_new(j, "skipped", json_integer((json_int_t)skipped));
        }
        cli_json_result("cp", SBXRUN_EXIT_OK, j);
    }
    rc = SBXRUN_EXIT_OK;
out:
    free(local_dst);
    free(id);
    sbx_sandbox_free(s);
    remote_close(&r);
    return rc;
}
