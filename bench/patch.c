/* SPDX-License-Identifier: MIT */
/*
 * bench/patch: how fast sbx_patch says whether a patch applies, against
 * `git apply --check` run as a process on the same patches, same run.
 *
 * The fixture is built at run time in a temporary directory with git (and
 * removed at the end): a repository of SMALL_FILES files for (a), another
 * of --large-files files for (b), each committed once and packed as a clone
 * would be (--loose keeps the objects loose). The patches are `git diff`
 * output against HEAD: (a) --small patches of one hunk in one file (a
 * one-line change, each a different line or file), (b) one patch changing
 * one line in every file of the large repository.
 *
 * Four ways to check each patch, in turn within every round, best round
 * kept:
 *   sbx_patch    in this process, per patch: sbx_patch_new, set_base(repo,
 *                HEAD), load_data, check, free; the repository is opened
 *                once per patch, as a real caller does. The phases are
 *                timed too (new, set_base, load_data, check, free).
 *   held         the same, with one idle handle alive across the loop, so
 *                that global state the library sets up with the first
 *                handle and tears down with the last (libgit2's) is set up
 *                once: what a caller keeping a handle around gets.
 *   fresh        reusing nothing: per patch (the first FRESH_MAX patches of
 *                a set, to keep the run short), this program is spawned again
 *                (--check-stdin) and does the same in a new process, the
 *                patch on its stdin, cwd the repository; the exit status is
 *                the verdict. The same cost model as git's.
 *   git          posix_spawn of `git apply --check`, the patch on stdin
 *                (a pipe), cwd the work tree checked out at the base;
 *                waits for the exit.
 * Every answer is checked (sbx_patch: SBX_PATCH_APPLIES, git and the fresh
 * process: exit 0) so the figures are for correct answers.
 *
 * usage: bench-patch [--small N] [--large-files N] [--rounds N] [--loose]
 *                    [--threads N] [--only small|large]
 *   --small        number of small patches [200]
 *   --large-files  files touched by the large patch [3000]
 *   --rounds       rounds, the best one kept [5]
 *   --loose        leave the fixture's objects loose (not packed)
 *   --threads      sbx_patch_set_threads() in this process [0: the default,
 *                  one per CPU for a large patch]; the fresh processes
 *                  keep the default
 *   --only         sbx_patch in this process alone (sbx_patch and held),
 *                  no git, no fresh process: for perf or callgrind
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

#include "bench.h"

extern char **environ;

#define SMALL_FILES 300 /* files of the small repository, in 10 folders */
#define SMALL_LINES 40
#define LARGE_PER_DIR 100
#define LARGE_LINES 24
#define NPHASES 5
#define FRESH_MAX 50 /* the fresh-process way checks the first 50 patches of a set: ~15 ms each */

static const char *const phase_names[NPHASES] = {"new", "set_base", "load_data", "check", "free"};

struct buf {
    char *p;
    size_t len, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *np;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (!(np = realloc(b->p, cap)))
            return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

struct patch {
    char *data;
    size_t len;
};

static void die(const char *what)
{
    fprintf(stderr, "bench-patch: %s\n", what);
    exit(1);
}

/*
 * Run argv (searched in PATH) in dir with in[0..inlen) on its stdin through
 * a pipe (/dev/null when in is NULL) and, when out is not NULL, its stdout
 * collected there. Returns the exit status, 128 + the signal, or -1 when it
 * could not be started.
 */
static int spawn(const char *dir, char *const argv[], const char *in, size_t inlen, struct buf *out)
{
    posix_spawn_file_actions_t fa;
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, st = 0, rc;
    pid_t pid;
    posix_spawn_file_actions_init(&fa);
    if (in) {
        if (pipe2(pin, O_CLOEXEC) != 0)
            return -1;
        posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    if (out) {
        if (pipe2(pout, O_CLOEXEC) != 0)
            return -1;
        posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    }
    if (dir)
        posix_spawn_file_actions_addchdir_np(&fa, dir);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (in)
        close(pin[0]);
    if (out)
        close(pout[1]);
    if (rc != 0) {
        if (in)
            close(pin[1]);
        if (out)
            close(pout[0]);
        errno = rc;
        return -1;
    }
    if (in) {
        size_t o = 0;
        while (o < inlen) {
            ssize_t n = write(pin[1], in + o, inlen - o);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; /* EPIPE: the child stopped reading; its status says why */
            o += (size_t)n;
        }
        close(pin[1]);
    }
    if (out) {
        char tmp[65536];
        for (;;) {
            ssize_t n = read(pout[0], tmp, sizeof tmp);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            if (buf_add(out, tmp, (size_t)n) != 0)
                die("out of memory");
        }
        close(pout[0]);
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void git(const char *dir, char *const argv[], struct buf *out)
{
    int rc = spawn(dir, argv, NULL, 0, out);
    if (rc != 0) {
        fprintf(stderr, "bench-patch: git %s in %s: exit %d\n", argv[1], dir ? dir : ".", rc);
        exit(1);
    }
}

static void write_file(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "bench-patch: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

/* The content of file `file` of a repository: lines of a few words, each
 * different; line `changed` (if >= 0) carries the change number `change`. */
static size_t file_text(char *out, size_t cap, const char *name, int lines, int changed, int change)
{
    size_t o = 0;
    uint64_t seed = 0;
    for (const char *c = name; *c; c++)
        seed = seed * 131 + (unsigned char)*c;
    for (int l = 0; l < lines; l++) {
        uint32_t v = bench_rand(&seed), f = bench_rand(&seed) % 64, w = bench_rand(&seed) % 1000;
        int n;
        if (l == changed)
            n = snprintf(out + o, cap - o, "%s line %d: changed by patch %d\n", name, l, change);
        else
            n = snprintf(out + o, cap - o, "%s line %d: value %08x, flags %u, weight %u\n", name, l, v, f, w);
        if (n < 0 || (size_t)n >= cap - o)
            die("file_text: buffer too small");
        o += (size_t)n;
    }
    return o;
}

static void small_name(char *out, size_t cap, int i)
{
    snprintf(out, cap, "src/mod%02d/file%03d.c", i % 10, i);
}

static void large_name(char *out, size_t cap, int i)
{
    snprintf(out, cap, "d%03d/f%05d.txt", i / LARGE_PER_DIR, i);
}

typedef void (*name_fn)(char *, size_t, int);

/* A repository of n files at dir, committed and (unless loose) packed. */
static void make_repo(const char *dir, int n, int lines, name_fn name, int loose)
{
    char *init[] = {"git", "init", "-q", ".", NULL};
    char *add[] = {"git", "add", "-A", NULL};
    char *commit[] = {"git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c",
                      "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "base", NULL};
    char *repack[] = {"git", "repack", "-a", "-d", "-q", NULL};
    char text[8192], rel[256], path[4200 + 260];
    if (mkdir(dir, 0700) != 0)
        die("mkdir");
    git(dir, init, NULL);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *slash;
        name(rel, sizeof rel, i);
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
            *slash = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                die("mkdir");
            *slash = '/';
        }
        len = file_text(text, sizeof text, rel, lines, -1, 0);
        write_file(path, text, len);
    }
    git(dir, add, NULL);
    git(dir, commit, NULL);
    if (!loose)
        git(dir, repack, NULL);
}

/* Apply the changes (file index, line) to the work tree, take `git diff`,
 * and put the work tree back. */
static void diff_of(const char *dir, const int *files, const int *lines, int n, int nlines, name_fn name, int first,
                    struct buf *out)
{
    char *diff[] = {"git", "diff", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", NULL};
    char *restore[] = {"git", "checkout", "-q", "--", ".", NULL};
    char text[8192], rel[256], path[4200 + 260];
    for (int k = 0; k < n; k++) {
        size_t len;
        name(rel, sizeof rel, files[k]);
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        len = file_text(text, sizeof text, rel, nlines, lines[k], first + k);
        write_file(path, text, len);
    }
    git(dir, diff, out);
    git(dir, restore, NULL);
}

/* Split git diff output into one patch per "diff --git" section. */
static size_t split(const struct buf *all, struct patch *out, size_t max)
{
    size_t n = 0;
    const char *p = all->p, *end = all->p + all->len;
    while (p < end) {
        const char *q = memmem(p + 1, (size_t)(end - p - 1), "\ndiff --git ", 12);
        q = q ? q + 1 : end;
        if (n == max)
            die("git diff gave more sections than changes");
        out[n].len = (size_t)(q - p);
        if (!(out[n].data = malloc(out[n].len)))
            die("out of memory");
        memcpy(out[n].data, p, out[n].len);
        n++;
        p = q;
    }
    return n;
}

static unsigned threads_opt; /* --threads: sbx_patch_set_threads() (0: the library's default) */

/* sbx_patch, once, as a caller does it; ph[] accumulates the phases.
 * Returns 0 when the patch applies. */
static int sbx_once(const char *repo, const struct patch *pt, size_t max_files, double ph[NPHASES])
{
    double t0, t1, t2, t3, t4, t5;
    sbx_patch *p;
    sbx_status st;
    int ok;
    t0 = bench_now();
    p = sbx_patch_new();
    t1 = bench_now();
    if (!p)
        return -1;
    if (max_files > 10000 || pt->len > (16u << 20))
        sbx_patch_set_limits(p, pt->len + 1, max_files, 0);
    sbx_patch_set_threads(p, threads_opt);
    st = sbx_patch_set_base(p, repo, NULL);
    t2 = bench_now();
    if (st == SBX_OK)
        st = sbx_patch_load_data(p, (const uint8_t *)pt->data, pt->len);
    t3 = bench_now();
    if (st == SBX_OK)
        st = sbx_patch_check(p);
    t4 = bench_now();
    ok = st == SBX_OK && sbx_patch_get_verdict(p) == SBX_PATCH_APPLIES;
    if (!ok)
        fprintf(stderr, "bench-patch: sbx_patch: %s, verdict %s: %s\n", sbx_status_name(st),
                sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_last_error(p));
    sbx_patch_free(p);
    t5 = bench_now();
    ph[0] += t1 - t0;
    ph[1] += t2 - t1;
    ph[2] += t3 - t2;
    ph[3] += t4 - t3;
    ph[4] += t5 - t4;
    return ok ? 0 : -1;
}

/* --check-stdin FILES: what one fresh process does (FILES: the number of
 * files, for the limits, as the parent passes it to sbx_once). Exit 0:
 * applies; 1: does not (or an error, on stderr). */
static int check_stdin(size_t max_files)
{
    struct buf in = {0};
    char tmp[65536];
    struct patch pt;
    double ph[NPHASES] = {0};
    for (;;) {
        ssize_t n = read(0, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 2;
        if (n == 0)
            break;
        if (buf_add(&in, tmp, (size_t)n) != 0)
            return 2;
    }
    pt.data = in.p ? in.p : tmp;
    pt.len = in.len;
    return sbx_once(".", &pt, max_files, ph) == 0 ? 0 : 1;
}

static char self_exe[4096];

enum way { SBX, HELD, FRESH, GIT, NWAYS };
static const char *const way_names[NWAYS] = {"sbx_patch", "sbx_patch (one handle held)", "sbx_patch (fresh process)",
                                             "git apply --check"};

/* Check every patch one way; seconds, or a negative value on a wrong answer. */
static double run_set(enum way w, const char *repo, const struct patch *pts, size_t n, size_t max_files,
                      double ph[NPHASES])
{
    char *git_argv[] = {"git", "apply", "--check", NULL};
    char files[32];
    char *self_argv[] = {self_exe, "--check-stdin", files, NULL};
    sbx_patch *held = NULL;
    double t;
    snprintf(files, sizeof files, "%zu", max_files);
    /* HELD: an idle handle lives across the loop, so the library's global
     * state (libgit2's) is set up once, not once per patch. */
    if (w == HELD && !(held = sbx_patch_new()))
        return -1;
    t = bench_now();
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (w == SBX || w == HELD)
            rc = sbx_once(repo, &pts[i], max_files, ph);
        else
            rc = spawn(repo, w == GIT ? git_argv : self_argv, pts[i].data, pts[i].len, NULL);
        if (rc != 0) {
            fprintf(stderr, "bench-patch: %s: patch %zu: exit %d\n", way_names[w], i, rc);
            sbx_patch_free(held);
            return -1;
        }
    }
    t = bench_now() - t;
    sbx_patch_free(held);
    return t;
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    return remove(path);
}

struct set {
    const char *label, *repo;
    struct patch *pts;
    size_t n, max_files;
    double best[NWAYS]; /* seconds per patch */
    double ph[NWAYS][NPHASES]; /* the in-process phases in the best round, summed over the set */
};

static void measure(struct set *s, int rounds, int only)
{
    for (int w = 0; w < NWAYS; w++)
        s->best[w] = 1e30;
    for (int r = 0; r < rounds; r++)
        for (int w = 0; w < NWAYS; w++) {
            double ph[NPHASES] = {0}, t;
            if (only && w != SBX && w != HELD)
                continue;
            size_t n = w == FRESH && s->n > FRESH_MAX ? FRESH_MAX : s->n;
            t = run_set((enum way)w, s->repo, s->pts, n, s->max_files, ph);
            if (t < 0)
                exit(1);
            t /= (double)n;
            if (t < s->best[w]) {
                s->best[w] = t;
                memcpy(s->ph[w], ph, sizeof ph);
            }
        }
}

static void print_phases(const struct set *s, enum way w, double scale, const char *unit)
{
    double total = 0;
    for (int k = 0; k < NPHASES; k++)
        total += s->ph[w][k];
    printf("  phases per patch, %s:", w == HELD ? "one handle held" : "sbx_patch");
    for (int k = 0; k < NPHASES; k++)
        printf("%s %s %.1f %s (%.0f%%)", k ? "," : "", phase_names[k], s->ph[w][k] / (double)s->n * scale, unit,
               total > 0 ? 100 * s->ph[w][k] / total : 0);
    printf("\n");
}

/* (c) The large patch's tree written out for upload, best of rounds:
 * sbx_patch_save_tree_dir(); the gzip tar and `tar -xzf` (what a caller of
 * sbx_patch_save_tree_file() does to get files); and git itself (`git
 * archive | tar -x`, then `git apply` in the copy). */
static void tree_out(const char *root, const char *repo, const struct patch *pt, int rounds, int nfiles)
{
    char out[4300], tgz[4300], diff[4300], cmd[22000];
    double best[3] = {1e9, 1e9, 1e9};
    sbx_patch *p = sbx_patch_new();
    FILE *f;
    snprintf(out, sizeof out, "%s/tree-out", root);
    snprintf(tgz, sizeof tgz, "%s/tree.tar.gz", root);
    snprintf(diff, sizeof diff, "%s/large.diff", root);
    if (!(f = fopen(diff, "wb")) || fwrite(pt->data, 1, pt->len, f) != pt->len || fclose(f) != 0)
        die("writing the diff");
    if (!p || sbx_patch_set_base(p, repo, NULL) != SBX_OK ||
        sbx_patch_load_data(p, (const uint8_t *)pt->data, pt->len) != SBX_OK || sbx_patch_check(p) != SBX_OK)
        die("checking the large patch");
    for (int r = 0; r < rounds; r++) {
        double t = bench_now();
        if (sbx_patch_save_tree_dir(p, out) != SBX_OK)
            die(sbx_patch_last_error(p));
        t = bench_now() - t;
        best[0] = t < best[0] ? t : best[0];
        nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);

        t = bench_now();
        if (sbx_patch_save_tree_file(p, tgz) != SBX_OK)
            die(sbx_patch_last_error(p));
        snprintf(cmd, sizeof cmd, "mkdir '%s' && tar -xzf '%s' -C '%s'", out, tgz, out);
        if (system(cmd) != 0)
            die("tar -xzf");
        t = bench_now() - t;
        best[1] = t < best[1] ? t : best[1];
        nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        unlink(tgz);

        t = bench_now();
        snprintf(cmd, sizeof cmd, "mkdir '%s' && git -C '%s' archive HEAD | tar -x -C '%s' && cd '%s' && git apply '%s'",
                 out, repo, out, out, diff);
        if (system(cmd) != 0)
            die("git archive | tar -x && git apply");
        t = bench_now() - t;
        best[2] = t < best[2] ? t : best[2];
        nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    printf("(c) the large patch's tree written out (%d files): save_tree_dir %.1f ms, save_tree_file + tar -xzf "
           "%.1f ms (%.2fx), git archive | tar -x + git apply %.1f ms (%.2fx)\n",
           nfiles, best[0] * 1e3, best[1] * 1e3, best[1] / best[0], best[2] * 1e3, best[2] / best[0]);
    unlink(diff);
    sbx_patch_free(p);
}

int main(int argc, char **argv)
{
    int nsmall = 200, nlarge = 3000, rounds = 5, loose = 0, only = 0;
    const char *tmpdir = getenv("TMPDIR");
    char root[4096], small_dir[4200], large_dir[4200];
    struct patch *small, large;
    struct buf all = {0};
    size_t small_bytes = 0;
    struct set sa, sb;
    ssize_t n;
    double t_fixture;
    if (argc == 3 && strcmp(argv[1], "--check-stdin") == 0)
        return check_stdin((size_t)strtoul(argv[2], NULL, 10));
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--small") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0) {
            nsmall = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--large-files") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0) {
            nlarge = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0) {
            rounds = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc && atoi(argv[a + 1]) >= 0 &&
                   atoi(argv[a + 1]) <= 8) {
            threads_opt = (unsigned)atoi(argv[++a]);
        } else if (strcmp(argv[a], "--loose") == 0) {
            loose = 1;
        } else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc &&
                   (strcmp(argv[a + 1], "small") == 0 || strcmp(argv[a + 1], "large") == 0)) {
            only = argv[++a][0] == 's' ? 1 : 2;
        } else {
            fprintf(stderr, "usage: bench-patch [--small N] [--large-files N] [--rounds N] [--loose] "
                            "[--threads N] [--only small|large]\n");
            return 2;
        }
    }
    if ((n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1)) <= 0)
        die("readlink /proc/self/exe");
    self_exe[n] = '\0';
    signal(SIGPIPE, SIG_IGN);
    t_fixture = bench_now();
    snprintf(root, sizeof root, "%s/bench-patch-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(root))
        die("mkdtemp");
    snprintf(small_dir, sizeof small_dir, "%s/small", root);
    snprintf(large_dir, sizeof large_dir, "%s/large", root);

    /* (a) small patches: change k is line (k / SMALL_FILES * 7 + 5) of file
     * k % SMALL_FILES, so that one batch of git diff has one section per
     * file. */
    if (!(small = calloc((size_t)nsmall, sizeof *small)))
        die("out of memory");
    if (only != 2) {
        int files[SMALL_FILES], lines[SMALL_FILES];
        make_repo(small_dir, SMALL_FILES, SMALL_LINES, small_name, loose);
        for (int first = 0; first < nsmall; first += SMALL_FILES) {
            int m = nsmall - first < SMALL_FILES ? nsmall - first : SMALL_FILES;
            for (int k = 0; k < m; k++) {
                files[k] = (first + k) % SMALL_FILES;
                lines[k] = ((first + k) / SMALL_FILES * 7 + 5 + k % 29) % SMALL_LINES;
            }
            all.len = 0;
            diff_of(small_dir, files, lines, m, SMALL_LINES, small_name, first, &all);
            if (split(&all, small + first, (size_t)m) != (size_t)m)
                die("git diff gave fewer sections than changes");
        }
        for (int i = 0; i < nsmall; i++)
            small_bytes += small[i].len;
    }
    /* (b) one large patch: one line changed in every file. */
    large.data = NULL;
    large.len = 0;
    if (only != 1) {
        int *files = malloc((size_t)nlarge * sizeof *files), *lines = malloc((size_t)nlarge * sizeof *lines);
        if (!files || !lines)
            die("out of memory");
        make_repo(large_dir, nlarge, LARGE_LINES, large_name, loose);
        for (int k = 0; k < nlarge; k++) {
            files[k] = k;
            lines[k] = LARGE_LINES / 2;
        }
        all.len = 0;
        diff_of(large_dir, files, lines, nlarge, LARGE_LINES, large_name, 0, &all);
        large.data = all.p;
        large.len = all.len;
        all.p = NULL;
        all.cap = all.len = 0;
        free(files);
        free(lines);
    }

    sa = (struct set){.label = "small", .repo = small_dir, .pts = small, .n = (size_t)nsmall, .max_files = 10};
    sb = (struct set){.label = "large", .repo = large_dir, .pts = &large, .n = 1, .max_files = (size_t)nlarge};

    t_fixture = bench_now() - t_fixture;
    printf("bench/patch: libsbxrun %s, best of %d rounds, objects %s, fixture in %s (built in %.1f s)\n",
           sbx_version(), rounds, loose ? "loose" : "packed", root, t_fixture);
    {
        char *ver[] = {"git", "--version", NULL};
        struct buf v = {0};
        git(NULL, ver, &v);
        printf("  peer: %s", v.p ? v.p : "git\n");
        free(v.p);
    }
    if (only != 2) {
        printf("(a) %d small patches (1 file, 1 hunk, a one-line change; %.0f bytes on average) against a "
               "repository of %d files\n",
               nsmall, (double)small_bytes / nsmall, SMALL_FILES);
        fflush(stdout);
        measure(&sa, rounds, only);
        if (!only) {
            printf("small patch (1 hunk): sbx_patch %.0f/s, git apply --check %.0f/s, ratio %.1fx\n",
                   1 / sa.best[SBX], 1 / sa.best[GIT], sa.best[GIT] / sa.best[SBX]);
            printf("small patch (1 hunk), one handle held: sbx_patch %.0f/s, git apply --check %.0f/s, ratio %.1fx\n",
                   1 / sa.best[HELD], 1 / sa.best[GIT], sa.best[GIT] / sa.best[HELD]);
            printf("small patch (1 hunk), a fresh process each (%d patches): sbx_patch %.0f/s, git apply --check "
                   "%.0f/s, ratio %.2fx\n",
                   nsmall < FRESH_MAX ? nsmall : FRESH_MAX, 1 / sa.best[FRESH], 1 / sa.best[GIT], sa.best[GIT] / sa.best[FRESH]);
        }
        printf("  per patch: sbx_patch %.1f us, one handle held %.1f us", sa.best[SBX] * 1e6,
               sa.best[HELD] * 1e6);
        if (!only)
            printf(", fresh process %.1f us, git apply --check %.1f us", sa.best[FRESH] * 1e6,
                   sa.best[GIT] * 1e6);
        printf("\n");
        print_phases(&sa, SBX, 1e6, "us");
        print_phases(&sa, HELD, 1e6, "us");
    }
    if (only != 1) {
        printf("(b) one large patch: %d files, one hunk each, %zu bytes\n", nlarge, large.len);
        fflush(stdout);
        measure(&sb, rounds, only);
        if (!only) {
            printf("large patch (%d files): sbx_patch %.1f ms, git apply --check %.1f ms, ratio %.2fx\n", nlarge,
                   sb.best[SBX] * 1e3, sb.best[GIT] * 1e3, sb.best[GIT] / sb.best[SBX]);
            printf("large patch (%d files), one handle held: sbx_patch %.1f ms, git apply --check %.1f ms, "
                   "ratio %.2fx\n",
                   nlarge, sb.best[HELD] * 1e3, sb.best[GIT] * 1e3, sb.best[GIT] / sb.best[HELD]);
            printf("large patch (%d files), a fresh process: sbx_patch %.1f ms, git apply --check %.1f ms, "
                   "ratio %.2fx\n",
                   nlarge, sb.best[FRESH] * 1e3, sb.best[GIT] * 1e3, sb.best[GIT] / sb.best[FRESH]);
        } else {
            printf("large patch (%d files): sbx_patch %.1f ms, one handle held %.1f ms\n", nlarge,
                   sb.best[SBX] * 1e3, sb.best[HELD] * 1e3);
        }
        print_phases(&sb, SBX, 1e3, "ms");
        print_phases(&sb, HELD, 1e3, "ms");
        tree_out(root, large_dir, &large, rounds, nlarge);
    }
    if (!only) {
        double rs = sa.best[GIT] / sa.best[SBX], rl = sb.best[GIT] / sb.best[SBX];
        printf("target: small >= 10x: %s (%.1fx); large >= 1x: %s (%.2fx)\n", rs >= 10 ? "met" : "NOT MET", rs,
               rl >= 1 ? "met" : "NOT MET", rl);
    }

    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < nsmall; i++)
        free(small[i].data);
    free(small);
    free(large.data);
    free(all.p);
    return 0;
}
