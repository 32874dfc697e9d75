/* SPDX-License-Identifier: MIT */
/*
 * patch: sbx_patch, an untrusted patch checked locally with libgit2 (the only
 * module that includes it): safe paths and modes, applies to a base tree,
 * what it touches, its patch id, and the patched tree as a gzip tar.
 *
 * Safety is decided twice, independently: on the paths libgit2's parser
 * reports, and on the raw header lines of the text (git's parser normalises
 * some paths, "a//etc/x" becomes "etc/x", and a check must see what a
 * different reader of the same text could see). Objects the check creates
 * (the patched blobs and trees) go to an in-memory object database layered
 * over the repository's: the repository on disk is never written.
 */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <git2.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZLIB_CONST /* next_in is const: the data is libgit2's */
#include <zlib.h>

#include <sbxrun/patch.h>

#include "client/tarball.h"
#include "patch/apply.h"
#include "patch/patch_int.h"
#include "util/buf.h"
#include "util/str.h"

#define MAX_BYTES_DEFAULT ((size_t)16 << 20)
#define MAX_FILES_DEFAULT ((size_t)10000)
#define MAX_FILE_BYTES_DEFAULT ((size_t)8 << 20)

struct pfile {
    char *path, *old_path;
    git_patch *gp;            /* libgit2's reading of this file's part, kept for the check */
    sbx_patch_change change;
    uint32_t old_mode, new_mode;
    size_t additions, deletions;
    bool binary;
};

struct op {
    sbx_patch_change change;
    char *path;
    uint8_t *data;
    size_t len;
    uint32_t mode;
};

struct sbx_patch {
    sbx__err err;
    size_t max_bytes, max_files, max_file_bytes;
    git_repository *repo;
    struct sbx__repo *pooled; /* the repository, taken from the pool; repo is its repository */
    git_tree *base;
    char *text;               /* the diff, as git's unified diff */
    size_t text_len;
    git_diff *diff;
    struct pfile *files;
    size_t nfiles;
    struct op *ops;
    size_t nops, ops_bytes;
    struct sbx__ov *ov;       /* the files as the patch leaves them (once it applies) */
    unsigned threads;         /* sbx_patch_set_threads(): 0 as many as worth it */
    struct sbx__prefetch *pf; /* during a check: the base's blobs, read ahead on threads */
    /* On the tree a series of patches leaves (sbx_patch_set_base_patch()):
     * the series' first base, in the repository, and every change of the
     * patches before; base is made from the two. */
    git_oid root;
    struct sbx__ov *prior;
    char *message;            /* why the last load or check failed, for the JSON */
    sbx_patch_verdict verdict;
    sbx_patch_rule rule;
    char id[GIT_OID_HEXSZ + 1];
};

/* ---- names ---------------------------------------------------------------------------------- */

const char *sbx_patch_verdict_name(sbx_patch_verdict v)
{
    static const char *const names[] = {"unchecked", "safe",      "applies",  "does-not-apply",
                                        "unsafe",    "malformed", "too-large"};
    return (int)v >= 0 && (size_t)v < SBX__ARRAY_LEN(names) ? names[v] : "unknown";
}

const char *sbx_patch_rule_name(sbx_patch_rule r)
{
    static const char *const names[] = {"none", "absolute", "dotdot", "git-dir", "symlink", "gitlink", "bad-path"};
    return (int)r >= 0 && (size_t)r < SBX__ARRAY_LEN(names) ? names[r] : "unknown";
}

static const char *change_name(sbx_patch_change c)
{
    switch (c) {
    case SBX_PATCH_ADDED: return "added";
    case SBX_PATCH_MODIFIED: return "modified";
    case SBX_PATCH_DELETED: return "deleted";
    case SBX_PATCH_RENAMED: return "renamed";
    case SBX_PATCH_COPIED: return "copied";
    case SBX_PATCH_CHANGE_NONE: break; /* no file of a patch has it */
    }
    return "unknown";
}

/* ---- the handle ----------------------------------------------------------------------------- */

/* libgit2 is initialised once per process and kept: its start-up (with
 * Debian's build, reading the system's CA bundle) costs milliseconds, far
 * more than a check, and handles come and go. */
static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static bool git_ok;

static void git_start(void)
{
    git_ok = git_libgit2_init() >= 0;
}

static bool libgit2_ready(void)
{
    return pthread_once(&git_once, git_start) == 0 && git_ok;
}

sbx_patch *sbx_patch_new(void)
{
    sbx_patch *p = sbx__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (!libgit2_ready()) {
        sbx__free(p);
        return NULL;
    }
    p->max_bytes = MAX_BYTES_DEFAULT;
    p->max_files = MAX_FILES_DEFAULT;
    p->max_file_bytes = MAX_FILE_BYTES_DEFAULT;
    return p;
}

static void files_clear(sbx_patch *p)
{
    for (size_t i = 0; i < p->nfiles; i++) {
        sbx__free(p->files[i].path);
        sbx__free(p->files[i].old_path);
        git_patch_free(p->files[i].gp);
    }
    sbx__free(p->files);
    p->files = NULL;
    p->nfiles = 0;
}

void sbx_patch_free(sbx_patch *p)
{
    if (!p)
        return;
    files_clear(p);
    for (size_t i = 0; i < p->nops; i++) {
        sbx__free(p->ops[i].path);
        sbx__free(p->ops[i].data);
    }
    sbx__free(p->ops);
    sbx__ov_free(p->ov);
    sbx__ov_free(p->prior);
    git_diff_free(p->diff);
    git_tree_free(p->base);
    sbx__repo_give(p->pooled); /* after every object read from it is freed */
    sbx__free(p->text);
    sbx__free(p->message);
    sbx__err_free(&p->err);
    sbx__free(p);
}

const char *sbx_patch_last_error(const sbx_patch *p)
{
    return SBX__LAST_ERROR(p);
}

/* libgit2's message for its last failure, or a fallback. */
static const char *git_msg(void)
{
    const git_error *e = git_error_last();
    return e && e->message ? e->message : "unknown libgit2 error";
}


static bool loaded(const sbx_patch *p)
{
    return p->text != NULL || p->nops > 0;
}

sbx_status sbx_patch_set_limits(sbx_patch *p, size_t max_bytes, size_t max_files, size_t max_file_bytes)
{
    SBX__ENTER(p, false);
    if (loaded(p))
        return sbx__err_set(&p->err, SBX_E_MISUSE, "limits are set before a patch is loaded");
    p->max_bytes = max_bytes ? max_bytes : MAX_BYTES_DEFAULT;
    p->max_files = max_files ? max_files : MAX_FILES_DEFAULT;
    p->max_file_bytes = max_file_bytes ? max_file_bytes : MAX_FILE_BYTES_DEFAULT;
    return SBX_OK;
}

sbx_status sbx_patch_set_threads(sbx_patch *p, size_t threads)
{
    SBX__ENTER(p, false);
    SBX__ARG(p, threads <= 8, "threads is more than 8");
    p->threads = (unsigned)threads;
    return SBX_OK;
}

/* The base from now on: tree of repository r (both taken), and for a
 * series its first base and the changes before (prior, taken). */
static void use_base(sbx_patch *p, struct sbx__repo *r, git_tree *tree, const git_oid *root, struct sbx__ov *prior)
{
    git_tree_free(p->base);
    sbx__repo_give(p->pooled); /* after the tree read from it */
    sbx__ov_free(p->prior);
    p->pooled = r;
    p->repo = r->repo;
    p->base = tree;
    p->prior = prior;
    if (root)
        p->root = *root;
}

sbx_status sbx_patch_set_base(sbx_patch *p, const char *repo_dir, const char *rev)
{
    struct sbx__repo *r = NULL;
    git_object *obj = NULL;
    git_tree *tree = NULL;
    char why[PATH_MAX + 200];
    sbx_status st;

    SBX__ENTER(p, false);
    SBX__ARG(p, repo_dir && *repo_dir, "the repository directory is NULL or empty");
    if (!rev)
        rev = "HEAD";
    if (p->ov || p->verdict == SBX_PATCH_APPLIES || p->verdict == SBX_PATCH_DOES_NOT_APPLY)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "the patch was checked against a base already");
    if ((st = sbx__repo_take(repo_dir, &r, why, sizeof why)) != SBX_OK)
        return st == SBX_E_NOMEM ? sbx__err_nomem(&p->err) : sbx__err_set(&p->err, st, "%s", why);
    if (git_revparse_single(&obj, r->repo, rev) < 0 ||
        git_object_peel((git_object **)&tree, obj, GIT_OBJECT_TREE) < 0) {
        st = sbx__err_set(&p->err, SBX_E_NOT_FOUND, "no revision '%.200s' with a tree in %s: %s", rev, repo_dir,
                          git_msg());
        git_object_free(obj);
        sbx__repo_give(r);
        return st;
    }
    git_object_free(obj);
    use_base(p, r, tree, NULL, NULL);
    return SBX_OK;
}

static sbx_status tree_index(sbx_patch *p, git_repository *repo, git_tree *base, const struct sbx__ov *ov,
                             git_index **out);
static sbx_status git_fail(sbx_patch *p, const char *what);
static sbx_status base_names_ok(sbx_patch *p, git_tree *base);

/* The tree prev leaves, made in a repository of our own from the pool:
 * the series' first base (on disk, so any repository of the pool has it)
 * with the changes of every patch so far; its new blobs and trees go to
 * that repository's in-memory object database, which lives as long as
 * this handle holds it. Every later step (the checks against the base,
 * file operations, binary patches, the result) reads it as any base. */
sbx_status sbx_patch_set_base_patch(sbx_patch *p, const sbx_patch *prev)
{
    struct sbx__repo *r = NULL;
    struct sbx__ov *prior = NULL;
    git_tree *root = NULL, *tree = NULL;
    git_index *idx = NULL;
    const git_oid *root_id;
    git_oid id;
    char why[PATH_MAX + 200];
    sbx_status st;

    SBX__ENTER(p, false);
    SBX__ARG(p, prev, "prev is NULL");
    SBX__ARG(p, prev != p, "prev is the patch itself");
    if (p->ov || p->verdict == SBX_PATCH_APPLIES || p->verdict == SBX_PATCH_DOES_NOT_APPLY)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "the patch was checked against a base already");
    if (prev->verdict != SBX_PATCH_APPLIES || !prev->ov || !prev->base || !prev->pooled)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "prev must be checked against a base and apply (it is %s%s)",
                            sbx_patch_verdict_name(prev->verdict), prev->base ? "" : ", without a base");
    root_id = prev->prior ? &prev->root : git_tree_id(prev->base);
    if (!(prior = sbx__ov_new()) || sbx__ov_put_all(prior, prev->prior) != SBX_OK ||
        sbx__ov_put_all(prior, prev->ov) != SBX_OK) {
        sbx__ov_free(prior);
        return sbx__err_nomem(&p->err);
    }
    if ((st = sbx__repo_take(prev->pooled->key, &r, why, sizeof why)) != SBX_OK) {
        sbx__ov_free(prior);
        return st == SBX_E_NOMEM ? sbx__err_nomem(&p->err) : sbx__err_set(&p->err, st, "%s", why);
    }
    if (git_tree_lookup(&root, r->repo, root_id) < 0) {
        st = sbx__err_set(&p->err, SBX_E_NOT_FOUND, "the base of prev is gone from %s: %s", r->key, git_msg());
    } else if ((st = tree_index(p, r->repo, root, prior, &idx)) == SBX_OK &&
               (git_index_write_tree_to(&id, idx, r->repo) < 0 || git_tree_lookup(&tree, r->repo, &id) < 0)) {
        st = git_fail(p, "making the tree prev leaves");
    }
    git_index_free(idx);
    git_tree_free(root);
    if (st != SBX_OK) {
        git_tree_free(tree);
        sbx__repo_give(r);
        sbx__ov_free(prior);
        return st;
    }
    use_base(p, r, tree, root_id, prior);
    return SBX_OK;
}

/* ---- refusals ------------------------------------------------------------------------------------ */

/* Refuse the patch: verdict, rule and a message naming the path (shown
 * escaped: it is attacker text). */
static sbx_status refuse(sbx_patch *p, sbx_patch_rule r, const char *path, size_t len)
{
    sbx__buf shown = SBX__BUF_INIT;
    p->verdict = SBX_PATCH_UNSAFE;
    p->rule = r;
    sbx__patch_show(&shown, path, len, 512); /* on OOM, less of the path is shown */
    sbx__err_set(&p->err, SBX_E_PATCH, "unsafe patch: '%s': %s", shown.data ? shown.data : "",
                 sbx__patch_rule_text(r));
    sbx__buf_free(&shown);
    return SBX_E_PATCH;
}

/* ---- loading --------------------------------------------------------------------------------- */

static sbx_patch_change change_of(git_delta_t s)
{
    switch (s) {
    case GIT_DELTA_ADDED: return SBX_PATCH_ADDED;
    case GIT_DELTA_DELETED: return SBX_PATCH_DELETED;
    case GIT_DELTA_RENAMED: return SBX_PATCH_RENAMED;
    case GIT_DELTA_COPIED: return SBX_PATCH_COPIED;
    default: return SBX_PATCH_MODIFIED;
    }
}

/* The deltas libgit2 read: the rules again, on its paths and modes. */
static sbx_status check_delta(sbx_patch *p, const git_diff_delta *d)
{
    const char *paths[2] = {d->old_file.path, d->new_file.path};
    for (int k = 0; k < 2; k++) {
        sbx_patch_rule r;
        if (!paths[k] || (k == 0 && d->status == GIT_DELTA_ADDED) || (k == 1 && d->status == GIT_DELTA_DELETED))
            continue;
        if ((r = sbx__patch_path_rule(paths[k], strlen(paths[k]))) != SBX_PATCH_RULE_NONE)
            return refuse(p, r, paths[k], strlen(paths[k]));
    }
    if (d->status != GIT_DELTA_DELETED) {
        /* By the mode's type bits: 0120644 is a symbolic link to git too. */
        sbx_patch_rule r = sbx__patch_mode_rule(d->new_file.mode);
        if (!r)
            r = sbx__patch_mode_rule(d->old_file.mode);
        if (r)
            return refuse(p, r, d->new_file.path, strlen(d->new_file.path));
    }
    return SBX_OK;
}

/* The bytes of one file's hunks (git_patch_size() is 0 for parsed patches). */
static size_t patch_bytes(git_patch *gp)
{
    size_t total = 0;
    for (size_t h = 0; h < git_patch_num_hunks(gp); h++) {
        const git_diff_hunk *hk;
        size_t n;
        if (git_patch_get_hunk(&hk, &n, gp, h) < 0)
            break;
        total += hk->header_len;
        for (size_t i = 0; i < n; i++) {
            const git_diff_line *l;
            if (git_patch_get_line_in_hunk(&l, gp, h, i) == 0)
                total += l->content_len + 1;
        }
    }
    return total;
}

/* Whether one side of a binary patch is sound: its deflated data inflates to
 * exactly the size it declares, all of it read. libgit2 1.5 loops for ever
 * on a truncated stream (in git_apply_to_tree), so nothing unsound reaches
 * it; git calls such a patch corrupt. */
static int binary_side_ok(const git_diff_binary_file *f, size_t max)
{
    z_stream z;
    unsigned char *out;
    int r;
    if (f->type == GIT_DIFF_BINARY_NONE)
        return 1;
    if (f->inflatedlen > max || f->datalen > UINT32_MAX || f->inflatedlen > UINT32_MAX)
        return 0;
    if (!(out = sbx__malloc(f->inflatedlen + 1)))
        return -1;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        sbx__free(out);
        return -1;
    }
    z.next_in = (const Bytef *)f->data;
    z.avail_in = (uInt)f->datalen;
    z.next_out = out;
    z.avail_out = (uInt)f->inflatedlen + 1; /* one byte more: a longer stream shows */
    r = inflate(&z, Z_FINISH);
    inflateEnd(&z);
    sbx__free(out);
    return r == Z_STREAM_END && z.total_out == f->inflatedlen && z.avail_in == 0;
}

struct bincheck {
    size_t max;
    const git_diff_delta *bad;
    bool nomem;
};

static int on_binary(const git_diff_delta *d, const git_diff_binary *b, void *payload)
{
    struct bincheck *c = payload;
    int o = binary_side_ok(&b->old_file, c->max), n = o == 1 ? binary_side_ok(&b->new_file, c->max) : o;
    if (n == 1)
        return 0;
    c->nomem = n < 0;
    c->bad = d;
    return -1;
}

static sbx_status describe(sbx_patch *p)
{
    size_t n = git_diff_num_deltas(p->diff);
    if (!(p->files = sbx__calloc(n ? n : 1, sizeof *p->files)))
        return sbx__err_nomem(&p->err);
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(p->diff, i);
        struct pfile *f = &p->files[p->nfiles++];
        git_patch *gp = NULL;
        size_t ctx = 0, add = 0, del = 0;
        f->change = change_of(d->status);
        f->old_mode = f->change == SBX_PATCH_ADDED ? 0 : d->old_file.mode;
        f->new_mode = f->change == SBX_PATCH_DELETED ? 0 : d->new_file.mode;
        f->binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
        if (!(f->path = sbx__strdup(f->change == SBX_PATCH_DELETED ? d->old_file.path : d->new_file.path)) ||
            ((f->change == SBX_PATCH_RENAMED || f->change == SBX_PATCH_COPIED) &&
             !(f->old_path = sbx__strdup(d->old_file.path))))
            return sbx__err_nomem(&p->err);
        if (git_patch_from_diff(&gp, p->diff, i) < 0)
            return sbx__err_nomem(&p->err);
        if ((f->gp = gp) != NULL) {
            if (git_patch_line_stats(&ctx, &add, &del, gp) == 0) {
                f->additions = add;
                f->deletions = del;
            }
            if (patch_bytes(gp) > p->max_file_bytes) {
                p->verdict = SBX_PATCH_TOO_LARGE;
                return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the patch of %s is larger than %zu bytes",
                                    f->path, p->max_file_bytes);
            }
        }
    }
    {
        struct bincheck c = {p->max_file_bytes, NULL, false};
        if (git_diff_foreach(p->diff, NULL, on_binary, NULL, NULL, &c) != 0 && c.nomem)
            return sbx__err_nomem(&p->err);
        if (c.bad) {
            p->verdict = SBX_PATCH_MALFORMED;
            return sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: a corrupt binary patch for %s",
                                c.bad->new_file.path ? c.bad->new_file.path : c.bad->old_file.path);
        }
    }
    return SBX_OK;
}

/* The header lines against the path rules; the finding becomes the verdict. */
static sbx_status scan(sbx_patch *p, const char *t, size_t len)
{
    struct sbx__patch_finding f = {SBX_PATCH_RULE_NONE, SBX__BUF_INIT, ""};
    sbx_status st = sbx__patch_scan_headers(t, len, &f);
    if (st == SBX_E_PATCH) {
        refuse(p, f.rule, f.path.data ? f.path.data : "", f.path.len);
    } else if (st == SBX_E_PARSE) {
        p->verdict = SBX_PATCH_MALFORMED;
        sbx__err_set(&p->err, st, "malformed patch: %s", f.why);
    } else if (st == SBX_E_NOMEM) {
        sbx__err_nomem(&p->err);
    }
    sbx__buf_free(&f.path);
    return st;
}

/* The patch id of a large text, made on a thread of its own while libgit2
 * parses the text (it was a quarter of the load of a 2 MB patch). */
#define ID_THREAD_BYTES ((size_t)256 << 10)

struct id_job {
    const char *t;
    size_t len;
    char id[GIT_OID_HEXSZ + 1];
    bool ok, threaded;
    pthread_t tid;
};

static void *id_work(void *arg)
{
    struct id_job *j = arg;
    j->ok = sbx__patch_id(j->t, j->len, j->id);
    return NULL;
}

/* On a thread when sbx_patch_set_threads() asked for more than one, or by
 * default for a large text on a machine of several CPUs; else the id is
 * made in id_finish(). */
static void id_start(struct id_job *j, const sbx_patch *p, const char *t, size_t len)
{
    memset(j, 0, sizeof *j);
    j->t = t;
    j->len = len;
    if (p->threads == 1 || (p->threads == 0 && (len < ID_THREAD_BYTES || sysconf(_SC_NPROCESSORS_ONLN) < 2)))
        return;
    j->threaded = pthread_create(&j->tid, NULL, id_work, j) == 0;
}

/* The id into out; false when memory ran out. */
static bool id_finish(struct id_job *j, char out[GIT_OID_HEXSZ + 1])
{
    if (j->threaded) {
        pthread_join(j->tid, NULL);
        j->threaded = false;
    } else {
        j->ok = sbx__patch_id(j->t, j->len, j->id);
    }
    memcpy(out, j->id, sizeof j->id);
    return j->ok;
}

static void id_abandon(struct id_job *j)
{
    if (j->threaded)
        pthread_join(j->tid, NULL);
    j->threaded = false;
}

/* The path a file section of git's form names (sec, n bytes): its "+++ "
 * line's, else its "--- " line's (a deletion), else its "diff --git a/P
 * b/P" line's. Left empty when none can be read. */
static sbx_status section_path(const char *sec, size_t n, sbx__buf *out)
{
    const char *hdr = NULL;
    size_t hdr_len = 0;
    sbx__buf old = SBX__BUF_INIT;
    sbx_status st = SBX_OK;
    for (size_t o = 0; o < n && st != SBX_E_NOMEM && !out->len;) {
        const char *l = sec + o, *nl = memchr(l, '\n', n - o);
        size_t len = nl ? (size_t)(nl - l) : n - o;
        if (sbx__patch_starts(l, len, "@@") || sbx__patch_starts(l, len, "GIT binary patch"))
            break; /* past the header */
        if (o == 0 && sbx__patch_starts(l, len, "diff --git ")) {
            hdr = l + 11;
            hdr_len = len - 11;
        } else if (sbx__patch_starts(l, len, "--- ")) {
            st = sbx__patch_header_path(l + 4, len - 4, true, &old);
        } else if (sbx__patch_starts(l, len, "+++ ")) {
            st = sbx__patch_header_path(l + 4, len - 4, true, out);
        }
        o += len + 1;
    }
    if (st != SBX_E_NOMEM && !out->len && old.len)
        st = sbx__buf_append(out, old.data, old.len);
    sbx__buf_free(&old);
    if (st == SBX_E_NOMEM)
        return st;
    /* "a/P b/P": the same path twice, unquoted */
    if (!out->len && hdr && hdr_len >= 7 && hdr_len % 2 == 1) {
        size_t k = (hdr_len - 1) / 2;
        if (memcmp(hdr, "a/", 2) == 0 && hdr[k] == ' ' && memcmp(hdr + k + 1, "b/", 2) == 0 &&
            memcmp(hdr + 2, hdr + k + 3, k - 2) == 0)
            return sbx__buf_append(out, hdr + 2, k - 2);
    }
    return SBX_OK;
}

/* libgit2 refused t (git's form): the path of the first file section it
 * refuses on its own, into out, so that the message can name the file
 * (empty when each section reads alone: the fault is between them). Only
 * on the way to an error, so each section is parsed again. */
static sbx_status malformed_path(const char *t, size_t len, sbx__buf *out)
{
    size_t start = SIZE_MAX;
    for (size_t o = 0;;) {
        const char *nl = o < len ? memchr(t + o, '\n', len - o) : NULL;
        size_t next = nl ? (size_t)(nl - t) + 1 : len;
        if (o == len || sbx__patch_starts(t + o, len - o, "diff --git ")) {
            if (start != SIZE_MAX) {
                git_diff *d = NULL;
                int r = git_diff_from_buffer(&d, t + start, o - start);
                git_diff_free(d);
                if (r < 0)
                    return section_path(t + start, o - start, out);
            }
            start = o;
        }
        if (o == len)
            return SBX_OK;
        o = next;
    }
}

/* "malformed patch: WHY", then the file whose section libgit2 refuses
 * when one does on its own (WHY is libgit2's message, kept before the
 * sections are parsed again). */
static sbx_status malformed(sbx_patch *p, const char *t, size_t len)
{
    char why[256];
    sbx__buf path = SBX__BUF_INIT, shown = SBX__BUF_INIT;
    snprintf(why, sizeof why, "%s", git_msg());
    p->verdict = SBX_PATCH_MALFORMED;
    /* on OOM the message only names no file */
    if (malformed_path(t, len, &path) == SBX_OK && path.len)
        sbx__patch_show(&shown, path.data, path.len, 512);
    if (shown.len)
        sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: %s (in the changes to '%s')", why, shown.data);
    else
        sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: %s", why);
    sbx__buf_free(&path);
    sbx__buf_free(&shown);
    return SBX_E_PARSE;
}

/* The text in the form libgit2 reads (into conv when *converted), checked
 * against the path rules, parsed and described. */
static sbx_status parse_text(sbx_patch *p, const char *data, size_t len, sbx__buf *conv, bool *converted)
{
    const char *orig = data;
    size_t orig_len = len;
    sbx_status st;
    size_t n;

    if ((st = sbx__patch_git_form(data, len, conv, converted)) != SBX_OK) {
        if (st == SBX_E_NOMEM)
            return sbx__err_nomem(&p->err);
        p->verdict = SBX_PATCH_MALFORMED;
        return sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: a '---'/'+++' pair without paths");
    }
    if (*converted) {
        data = conv->data ? conv->data : "";
        len = conv->len;
    }
    /* The text as given (a plain diff's own headers: "+++ /etc/x") and as
     * libgit2 will read it. */
    if ((st = scan(p, orig, orig_len)) != SBX_OK || (*converted && (st = scan(p, data, len)) != SBX_OK))
        return st;
    {
        sbx__buf fixed = SBX__BUF_INIT;
        bool changed;
        int r;
        sbx__patch_libgit2_form(data, len, NULL, &changed);
        if (changed && sbx__patch_libgit2_form(data, len, &fixed, &changed) != SBX_OK) {
            sbx__buf_free(&fixed);
            return sbx__err_nomem(&p->err);
        }
        r = changed ? git_diff_from_buffer(&p->diff, fixed.data, fixed.len) : git_diff_from_buffer(&p->diff, data, len);
        if (r < 0)
            st = malformed(p, changed ? fixed.data : data, changed ? fixed.len : len);
        sbx__buf_free(&fixed);
        if (r < 0)
            return st;
    }
    if ((n = git_diff_num_deltas(p->diff)) == 0) {
        p->verdict = SBX_PATCH_MALFORMED;
        return sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: no file changes found");
    }
    if (n > p->max_files) {
        p->verdict = SBX_PATCH_TOO_LARGE;
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the patch touches %zu files, more than the limit of %zu",
                            n, p->max_files);
    }
    for (size_t i = 0; i < n; i++)
        if ((st = check_delta(p, git_diff_get_delta(p->diff, i))) != SBX_OK)
            return st;
    return describe(p);
}

/* Parse text (git's form or plain diff -u), check it, describe it. The
 * text is kept; on failure the handle keeps the verdict and nothing else. */
static sbx_status load_text(sbx_patch *p, const char *data, size_t len)
{
    sbx__buf conv = SBX__BUF_INIT;
    struct id_job job;
    bool converted = false;
    sbx_status st;

    if (len > p->max_bytes) {
        p->verdict = SBX_PATCH_TOO_LARGE;
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the patch is %zu bytes, more than the limit of %zu",
                            len, p->max_bytes);
    }
    if (memchr(data, '\0', len)) {
        p->verdict = SBX_PATCH_MALFORMED;
        return sbx__err_set(&p->err, SBX_E_PARSE, "malformed patch: it contains a NUL byte");
    }
    /* git patch-id reads the text as given; for plain diff -u, which it does
     * not read, the id is that of the git form. */
    id_start(&job, p, data, len);
    if ((st = parse_text(p, data, len, &conv, &converted)) != SBX_OK) {
        id_abandon(&job);
        sbx__buf_free(&conv);
        return st;
    }
    if (!id_finish(&job, p->id) ||
        (!p->id[0] && converted && !sbx__patch_id(conv.data ? conv.data : "", conv.len, p->id))) {
        sbx__buf_free(&conv);
        return sbx__err_nomem(&p->err);
    }
    p->text = converted ? sbx__buf_detach(&conv, &p->text_len) : sbx__strndup(data, len);
    sbx__buf_free(&conv);
    if (!p->text)
        return sbx__err_nomem(&p->err);
    if (!converted)
        p->text_len = len;
    p->verdict = SBX_PATCH_SAFE;
    return SBX_OK;
}

/* Keep the message of a failed load or check for sbx_patch_to_json(), which
 * clears last_error as every call that can fail does. */
static sbx_status keep_message(sbx_patch *p, sbx_status st)
{
    /* Messages quote the patch (paths, libgit2's reading of it): no control
     * byte of it may reach a terminal or a log. */
    if (st != SBX_OK && p->err.msg)
        for (char *c = p->err.msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    if (st != SBX_OK && st != SBX_E_NOMEM && st != SBX_E_MISUSE && st != SBX_E_INVALID_ARG) {
        sbx__free(p->message);
        p->message = sbx__strdup(sbx__err_msg(&p->err)); /* NULL on OOM: the JSON has none then */
    }
    return st;
}

/* A failed load leaves no half state behind, only the verdict. */
static void unload(sbx_patch *p)
{
    files_clear(p);
    git_diff_free(p->diff);
    p->diff = NULL;
    sbx__free(p->text);
    p->text = NULL;
    p->text_len = 0;
    p->id[0] = '\0';
}

sbx_status sbx_patch_load_data(sbx_patch *p, const uint8_t *data, size_t len)
{
    sbx_status st;
    SBX__ENTER(p, false);
    SBX__ARG(p, data || !len, "data is NULL");
    if (loaded(p) || p->verdict != SBX_PATCH_UNCHECKED)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "a patch is already loaded; use a new handle");
    if ((st = load_text(p, data ? (const char *)data : "", len)) != SBX_OK)
        unload(p);
    return keep_message(p, st);
}

sbx_status sbx_patch_load_file(sbx_patch *p, const char *path)
{
    sbx__buf b = SBX__BUF_INIT;
    struct stat sb;
    sbx_status st;
    char chunk[65536];
    ssize_t n;
    int fd;

    SBX__ENTER(p, false);
    SBX__ARG(p, path, "path is NULL");
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return sbx__err_set(&p->err, SBX_E_IO, "cannot open the patch %s: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
        close(fd);
        return sbx__err_set(&p->err, SBX_E_IO, "the patch %s is a directory or cannot be read", path);
    }
    sbx__buf_init(&b, p->max_bytes + 1);
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        if ((st = sbx__buf_append(&b, chunk, (size_t)n)) != SBX_OK)
            break;
    close(fd);
    if (n < 0) {
        sbx__buf_free(&b);
        return sbx__err_set(&p->err, SBX_E_IO, "cannot read the patch %s: %s", path, strerror(errno));
    }
    if (n > 0) { /* the buffer's limit or memory */
        sbx__buf_free(&b);
        if (st == SBX_E_NOMEM)
            return sbx__err_nomem(&p->err);
        p->verdict = SBX_PATCH_TOO_LARGE;
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the patch %s is larger than the limit of %zu bytes",
                            path, p->max_bytes);
    }
    st = sbx_patch_load_data(p, (const uint8_t *)(b.data ? b.data : ""), b.len);
    sbx__buf_free(&b);
    return st;
}

/* ---- file operations --------------------------------------------------------------------------- */

sbx_status sbx_patch_add_file(sbx_patch *p, sbx_patch_change change, const char *path, const uint8_t *data,
                              size_t len, uint32_t mode)
{
    struct op *ops, *o;
    sbx_patch_rule r;
    SBX__ENTER(p, false);
    SBX__ARG(p, path, "path is NULL");
    SBX__ARG(p, change == SBX_PATCH_ADDED || change == SBX_PATCH_MODIFIED || change == SBX_PATCH_DELETED,
             "a file operation is SBX_PATCH_ADDED, SBX_PATCH_MODIFIED or SBX_PATCH_DELETED");
    SBX__ARG(p, change != SBX_PATCH_DELETED || (!data && !len), "a deletion takes no data");
    SBX__ARG(p, data || !len, "data is NULL");
    SBX__ARG(p, mode == 0 || mode == 0644 || mode == 0755 || mode == 0100644 || mode == 0100755,
             "mode %o: 0644 or 0755 (a regular file)", mode);
    if (p->text || p->verdict != SBX_PATCH_UNCHECKED)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "file operations are added before the patch is loaded or checked");
    if ((r = sbx__patch_path_rule(path, strlen(path))) != SBX_PATCH_RULE_NONE) {
        sbx_status st = refuse(p, r, path, strlen(path));
        p->verdict = SBX_PATCH_UNCHECKED; /* one bad operation is refused, the others stay */
        p->rule = SBX_PATCH_RULE_NONE;
        return st;
    }
    for (size_t i = 0; i < p->nops; i++)
        SBX__ARG(p, strcmp(p->ops[i].path, path) != 0, "%s has an operation already", path);
    if (p->nops >= p->max_files || len > p->max_file_bytes || len > p->max_bytes - p->ops_bytes)
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "%s: over the limits (%zu files, %zu bytes a file, %zu "
                                                              "bytes in all)",
                            path, p->max_files, p->max_file_bytes, p->max_bytes);
    if (!(ops = sbx__realloc(p->ops, (p->nops + 1) * sizeof *ops)))
        return sbx__err_nomem(&p->err);
    p->ops = ops;
    o = &ops[p->nops];
    memset(o, 0, sizeof *o);
    if (!(o->path = sbx__strdup(path)) || (len && !(o->data = sbx__malloc(len)))) {
        sbx__free(o->path);
        return sbx__err_nomem(&p->err);
    }
    if (len)
        memcpy(o->data, data, len);
    o->change = change;
    o->len = len;
    o->mode = (mode & 0111) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
    p->ops_bytes += len;
    p->nops++;
    return SBX_OK;
}

/* The operations as a tree (in memory), then as git's diff against the base. */
static sbx_status build_from_ops(sbx_patch *p)
{
    git_index *idx = NULL;
    git_oid tree_id;
    git_tree *tree = NULL;
    git_diff *diff = NULL;
    git_buf out = GIT_BUF_INIT;
    git_diff_options dopts;
    sbx_status st;

    if ((st = base_names_ok(p, p->base)) != SBX_OK)
        return st;
    if (git_diff_options_init(&dopts, GIT_DIFF_OPTIONS_VERSION) < 0 || git_index_new(&idx) < 0 ||
        git_index_read_tree(idx, p->base) < 0)
        goto git_fail;
    for (size_t i = 0; i < p->nops; i++) {
        const struct op *o = &p->ops[i];
        const git_index_entry *old = git_index_get_bypath(idx, o->path, 0);
        if (o->change == SBX_PATCH_ADDED && old) {
            git_index_free(idx);
            p->verdict = SBX_PATCH_DOES_NOT_APPLY;
            return sbx__err_set(&p->err, SBX_E_PATCH, "%s: added, but the base has it", o->path);
        }
        if (o->change != SBX_PATCH_ADDED && !old) {
            git_index_free(idx);
            p->verdict = SBX_PATCH_DOES_NOT_APPLY;
            return sbx__err_set(&p->err, SBX_E_PATCH, "%s: %s, but the base has no such file", o->path,
                                o->change == SBX_PATCH_DELETED ? "deleted" : "modified");
        }
        if (o->change == SBX_PATCH_DELETED) {
            if (git_index_remove_bypath(idx, o->path) < 0)
                goto git_fail;
        } else {
            git_index_entry e;
            memset(&e, 0, sizeof e);
            e.path = o->path;
            e.mode = o->mode;
            e.file_size = (uint32_t)(o->len > UINT32_MAX ? UINT32_MAX : o->len);
            /* The blob goes to the in-memory object database. */
            if (git_blob_create_from_buffer(&e.id, p->repo, o->data ? (const void *)o->data : "", o->len) < 0 ||
                git_index_add(idx, &e) < 0)
                goto git_fail;
        }
    }
    if (git_index_write_tree_to(&tree_id, idx, p->repo) < 0 || git_tree_lookup(&tree, p->repo, &tree_id) < 0)
        goto git_fail;
    dopts.flags = GIT_DIFF_SHOW_BINARY;
    dopts.id_abbrev = GIT_OID_HEXSZ;
    if (git_diff_tree_to_tree(&diff, p->repo, p->base, tree, &dopts) < 0 ||
        git_diff_to_buf(&out, diff, GIT_DIFF_FORMAT_PATCH) < 0)
        goto git_fail;
    git_diff_free(diff);
    git_tree_free(tree);
    git_index_free(idx);
    st = load_text(p, out.ptr ? out.ptr : "", out.size);
    git_buf_dispose(&out);
    if (st != SBX_OK)
        unload(p);
    return st;
git_fail:
    git_buf_dispose(&out);
    git_diff_free(diff);
    git_tree_free(tree);
    git_index_free(idx);
    return sbx__err_set(&p->err, SBX_E_INTERNAL, "building the patch from its file operations: %s", git_msg());
}

/* ---- applying ---------------------------------------------------------------------------------- */

/* Fail the check: the patch does not apply, and why (file first). */
static sbx_status no_apply(sbx_patch *p, const char *file, const char *why)
{
    p->verdict = SBX_PATCH_DOES_NOT_APPLY;
    return sbx__err_set(&p->err, SBX_E_PATCH, "the patch does not apply: %s: %s", file, why);
}

static sbx_status git_fail(sbx_patch *p, const char *what)
{
    return sbx__err_set(&p->err, SBX_E_INTERNAL, "%s: %s", what, git_msg());
}

/* A file as the patch so far leaves it: the overlay's state if the patch
 * touched it, else the base tree's. Free it with state_clear(). */
struct state {
    bool exists;
    uint32_t mode;
    const char *data;
    size_t len;
    struct sbx__blob blob;
    git_oid id;               /* the base's blob (when not touched) */
    bool touched;
    char *post;               /* the file's new bytes, when made ahead (owned) */
    size_t post_len;
};

static void state_clear(struct state *st)
{
    sbx__blob_free(&st->blob);
    sbx__free(st->post);
    st->post = NULL;
}

/* slot: the delta whose base file this is, to find it read ahead; SIZE_MAX
 * for none. */
static sbx_status file_state(sbx_patch *p, const char *path, size_t slot, struct state *st)
{
    const struct sbx__ov_entry *e = sbx__ov_get(p->ov, path);
    git_tree_entry *te = NULL;
    memset(st, 0, sizeof *st);
    if (e) {
        st->touched = true;
        st->exists = !e->deleted;
        st->mode = e->mode;
        st->data = e->data ? e->data : "";
        st->len = e->len;
        return SBX_OK;
    }
    if (git_tree_entry_bypath(&te, p->base, path) < 0)
        return SBX_OK; /* not in the base */
    st->exists = true;
    st->mode = (uint32_t)git_tree_entry_filemode(te);
    st->id = *git_tree_entry_id(te);
    st->data = "";
    if (git_tree_entry_type(te) == GIT_OBJECT_BLOB &&
        !sbx__prefetch_take(p->pf, slot, &st->id, &st->post, &st->post_len) &&
        !(st->data = sbx__prefetch_get(p->pf, slot, &st->id, &st->len))) {
        if (sbx__blob_read(&st->blob, p->pooled->odb, &st->id) < 0) {
            git_tree_entry_free(te);
            return git_fail(p, "reading the base");
        }
        st->data = st->blob.data;
        st->len = st->blob.len;
    }
    git_tree_entry_free(te);
    return SBX_OK;
}

/* A binary file's new bytes: libgit2 applies that one file's section to the
 * base tree (binary patches carry no offsets to search). */
static sbx_status apply_binary(sbx_patch *p, size_t i, const struct state *old, char **out, size_t *out_len)
{
    const git_diff_delta *d = git_diff_get_delta(p->diff, i);
    git_patch *gp = NULL;
    git_buf text = GIT_BUF_INIT;
    git_diff *one = NULL;
    git_index *res = NULL;
    git_blob *blob = NULL;
    const git_index_entry *e;
    sbx_status st = SBX_OK;

    if (d->status != GIT_DELTA_ADDED && d->old_file.id_abbrev < GIT_OID_HEXSZ)
        return no_apply(p, d->old_file.path, "a binary patch without the full index line");
    if (old->touched)
        return no_apply(p, d->old_file.path, "a binary patch on a file an earlier part of the patch changed");
    if (old->exists && !git_oid_equal(&old->id, &d->old_file.id))
        return no_apply(p, d->old_file.path, "the binary patch is for other contents than the base's");
    if (git_patch_from_diff(&gp, p->diff, i) < 0 || git_patch_to_buf(&text, gp) < 0 ||
        git_diff_from_buffer(&one, text.ptr, text.size) < 0)
        st = git_fail(p, "a binary patch");
    else if (git_apply_to_tree(&res, p->repo, p->base, one, NULL) < 0)
        st = no_apply(p, d->new_file.path, git_msg());
    else if (d->status != GIT_DELTA_DELETED) {
        if (!(e = git_index_get_bypath(res, d->new_file.path, 0)) || git_blob_lookup(&blob, p->repo, &e->id) < 0)
            st = git_fail(p, "a binary patch's result");
        else if (!(*out = sbx__malloc((size_t)git_blob_rawsize(blob) + 1)))
            st = sbx__err_nomem(&p->err);
        else {
            *out_len = (size_t)git_blob_rawsize(blob);
            memcpy(*out, git_blob_rawcontent(blob), *out_len);
        }
    }
    git_blob_free(blob);
    git_index_free(res);
    git_diff_free(one);
    git_buf_dispose(&text);
    git_patch_free(gp);
    return st;
}

/* A text file's new bytes. */
static sbx_status apply_text_file(sbx_patch *p, size_t i, struct state *old, char **out, size_t *out_len)
{
    const git_diff_delta *d = git_diff_get_delta(p->diff, i);
    git_patch *gp = p->files[i].gp;
    char why[256];
    sbx_status st;

    if (old->post) { /* made by a thread of read_ahead(), the same way */
        *out = old->post;
        *out_len = old->post_len;
        old->post = NULL;
        return SBX_OK;
    }
    if (!gp)
        return git_fail(p, "a file's hunks");
    st = sbx__apply_text(old->exists ? old->data : "", old->exists ? old->len : 0, gp, out, out_len, why,
                         sizeof why);
    if (st == SBX_E_PATCH)
        return no_apply(p, d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path, why);
    if (st == SBX_E_NOMEM)
        return sbx__err_nomem(&p->err);
    return st == SBX_OK ? SBX_OK : git_fail(p, "applying hunks");
}

/* One file of the patch onto the overlay, with the checks git apply makes:
 * what is changed, deleted or renamed exists; what is created does not. */
static sbx_status apply_delta(sbx_patch *p, size_t i)
{
    const git_diff_delta *d = git_diff_get_delta(p->diff, i);
    const char *oldp = d->old_file.path, *newp = d->new_file.path;
    bool creates = d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED;
    struct state old, target;
    char *post = NULL;
    size_t post_len = 0;
    uint32_t mode;
    sbx_status st;

    if ((st = file_state(p, d->status == GIT_DELTA_ADDED ? newp : oldp, i, &old)) != SBX_OK)
        return st;
    /* Written through or replacing a link of the base: the sandbox would
     * follow it. (A deletion only removes the link.) */
    if (!old.touched && old.exists && d->status != GIT_DELTA_DELETED && sbx__patch_mode_rule(old.mode)) {
        state_clear(&old);
        return refuse(p, sbx__patch_mode_rule(old.mode), d->status == GIT_DELTA_ADDED ? newp : oldp,
                      strlen(d->status == GIT_DELTA_ADDED ? newp : oldp));
    }
    if (d->status != GIT_DELTA_ADDED && !old.exists)
        st = no_apply(p, oldp, "no such file in the base");
    else if (d->status == GIT_DELTA_ADDED && old.exists)
        st = no_apply(p, newp, "the file exists in the base already");
    else if (creates && d->status != GIT_DELTA_ADDED) {
        if ((st = file_state(p, newp, SIZE_MAX, &target)) == SBX_OK && target.exists)
            st = !target.touched && sbx__patch_mode_rule(target.mode)
                     ? refuse(p, sbx__patch_mode_rule(target.mode), newp, strlen(newp))
                     : no_apply(p, newp, "the file exists in the base already");
        state_clear(&target);
    }
    if (st == SBX_OK) /* an added file's old state does not exist (checked above) */
        st = (d->flags & GIT_DIFF_FLAG_BINARY) ? apply_binary(p, i, &old, &post, &post_len)
                                               : apply_text_file(p, i, &old, &post, &post_len);
    mode = d->new_file.mode ? d->new_file.mode : old.exists && old.mode ? old.mode : GIT_FILEMODE_BLOB;
    state_clear(&old);
    if (st != SBX_OK) {
        sbx__free(post);
        return st;
    }
    if (d->status == GIT_DELTA_DELETED) {
        if (post_len && !(d->flags & GIT_DIFF_FLAG_BINARY)) {
            sbx__free(post);
            return no_apply(p, oldp, "the deletion leaves lines the patch does not remove");
        }
        sbx__free(post);
        return sbx__ov_put(p->ov, oldp, true, 0, NULL, 0) == SBX_OK ? SBX_OK : sbx__err_nomem(&p->err);
    }
    if (post_len > p->max_file_bytes) {
        sbx__free(post);
        p->verdict = SBX_PATCH_TOO_LARGE;
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "%s would be %zu bytes, more than the limit of %zu",
                            newp, post_len, p->max_file_bytes);
    }
    if (d->status == GIT_DELTA_RENAMED && sbx__ov_put(p->ov, oldp, true, 0, NULL, 0) != SBX_OK) {
        sbx__free(post);
        return sbx__err_nomem(&p->err);
    }
    return sbx__ov_put(p->ov, newp, false, mode, post, post_len) == SBX_OK ? SBX_OK : sbx__err_nomem(&p->err);
}

/* A path the patch writes must not go through a symbolic link or a gitlink
 * of the base, nor be one: the sandbox would follow it. */
static sbx_status check_against_base(sbx_patch *p)
{
    struct sbx__ov *dirs = sbx__ov_new(); /* directories of the base known to be plain */
    sbx_status st = dirs ? SBX_OK : sbx__err_nomem(&p->err);
    char *prefix = NULL;
    for (size_t i = 0; i < p->nfiles && st == SBX_OK; i++) {
        const struct pfile *f = &p->files[i];
        size_t len = strlen(f->path);
        if (f->change == SBX_PATCH_DELETED)
            continue;
        {
            char *grown = sbx__realloc(prefix, len + 1);
            if (!grown) {
                st = sbx__err_nomem(&p->err);
                break;
            }
            prefix = grown;
        }
        for (size_t k = 1; k < len && st == SBX_OK; k++) { /* the file itself: apply_delta */
            git_tree_entry *e = NULL;
            git_filemode_t m;
            if (k < len && f->path[k] != '/')
                continue;
            memcpy(prefix, f->path, k);
            prefix[k] = '\0';
            if (k < len && sbx__ov_get(dirs, prefix))
                continue;
            if (git_tree_entry_bypath(&e, p->base, prefix) < 0)
                break; /* not in the base: nothing below it is either */
            m = git_tree_entry_filemode(e);
            git_tree_entry_free(e);
            if (m == GIT_FILEMODE_LINK)
                st = refuse(p, SBX_PATCH_RULE_SYMLINK, f->path, len);
            else if (m == GIT_FILEMODE_COMMIT)
                st = refuse(p, SBX_PATCH_RULE_GITLINK, f->path, len);
            else if (m == GIT_FILEMODE_TREE && sbx__ov_put(dirs, prefix, false, 0, NULL, 0) != SBX_OK)
                st = sbx__err_nomem(&p->err);
        }
    }
    sbx__free(prefix);
    sbx__ov_free(dirs);
    return st;
}

/* A large patch's base files, read on several threads before the apply
 * (which reads in turn what this leaves out). Without memory for the
 * slots, nothing is read ahead. */
static void read_ahead(sbx_patch *p)
{
    size_t n = git_diff_num_deltas(p->diff);
    unsigned threads = sbx__prefetch_threads(p->threads, n);
    if (threads < 2 || !(p->pf = sbx__prefetch_new(n)))
        return;
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(p->diff, i);
        git_tree_entry *te = NULL;
        /* What an earlier patch of a series wrote is in this handle's
         * memory only: not in the other threads' repositories. */
        if (d->status == GIT_DELTA_ADDED || (d->flags & GIT_DIFF_FLAG_BINARY) ||
            (p->prior && sbx__ov_get(p->prior, d->old_file.path)) ||
            git_tree_entry_bypath(&te, p->base, d->old_file.path) < 0)
            continue;
        if (git_tree_entry_type(te) == GIT_OBJECT_BLOB)
            sbx__prefetch_want(p->pf, i, git_tree_entry_id(te), p->files[i].gp);
        git_tree_entry_free(te);
    }
    sbx__prefetch_run(p->pf, p->pooled->key, p->repo, threads);
}

static sbx_status check(sbx_patch *p)
{
    sbx_status st;

    if (!loaded(p))
        return sbx__err_set(&p->err, SBX_E_MISUSE, "no patch: load a diff or add file operations first");
    if (p->verdict == SBX_PATCH_APPLIES)
        return SBX_OK;
    if (p->verdict == SBX_PATCH_DOES_NOT_APPLY || p->verdict == SBX_PATCH_UNSAFE)
        return sbx__err_set(&p->err, SBX_E_PATCH, "the patch was checked: %s", sbx_patch_verdict_name(p->verdict));
    if (!p->text) {
        if (!p->base)
            return sbx__err_set(&p->err, SBX_E_MISUSE, "file operations need a base (sbx_patch_set_base)");
        if ((st = build_from_ops(p)) != SBX_OK)
            return st;
    }
    if (!p->base)
        return SBX_OK; /* safe; nothing to apply to */
    if ((st = check_against_base(p)) != SBX_OK)
        return st;
    if (!(p->ov = sbx__ov_new()))
        return sbx__err_nomem(&p->err);
    read_ahead(p);
    for (size_t i = 0; i < git_diff_num_deltas(p->diff) && st == SBX_OK; i++)
        st = apply_delta(p, i);
    sbx__prefetch_free(p->pf);
    p->pf = NULL;
    if (st != SBX_OK) {
        sbx__ov_free(p->ov);
        p->ov = NULL;
        return st;
    }
    p->verdict = SBX_PATCH_APPLIES;
    return SBX_OK;
}

sbx_status sbx_patch_check(sbx_patch *p)
{
    SBX__ENTER(p, false);
    return keep_message(p, check(p));
}

/* ---- what it does -------------------------------------------------------------------------------- */

sbx_patch_verdict sbx_patch_get_verdict(const sbx_patch *p)
{
    return p ? p->verdict : SBX_PATCH_UNCHECKED;
}

sbx_patch_rule sbx_patch_broken_rule(const sbx_patch *p)
{
    return p ? p->rule : SBX_PATCH_RULE_NONE;
}

size_t sbx_patch_file_count(const sbx_patch *p)
{
    return p ? p->nfiles : 0;
}

static const struct pfile *file_at(const sbx_patch *p, size_t i)
{
    return p && i < p->nfiles ? &p->files[i] : NULL;
}

const char *sbx_patch_file_path(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->path : NULL;
}

const char *sbx_patch_file_old_path(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->old_path : NULL;
}

sbx_patch_change sbx_patch_file_change(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->change : SBX_PATCH_CHANGE_NONE;
}

uint32_t sbx_patch_file_old_mode(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->old_mode : 0;
}

uint32_t sbx_patch_file_new_mode(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->new_mode : 0;
}

size_t sbx_patch_file_additions(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->additions : 0;
}

size_t sbx_patch_file_deletions(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f ? f->deletions : 0;
}

int sbx_patch_file_binary(const sbx_patch *p, size_t i)
{
    const struct pfile *f = file_at(p, i);
    return f && f->binary;
}

const char *sbx_patch_id(const sbx_patch *p)
{
    return p ? p->id : "";
}

sbx_status sbx_patch_save_data(sbx_patch *p, uint8_t **out, size_t *len)
{
    SBX__ENTER(p, false);
    SBX__ARG(p, out, "out is NULL");
    *out = NULL;
    if (len)
        *len = 0;
    if (!p->text)
        return sbx__err_set(&p->err, SBX_E_MISUSE, "no diff: load one, or check the file operations first");
    if (!(*out = sbx__malloc(p->text_len + 1)))
        return sbx__err_nomem(&p->err);
    memcpy(*out, p->text, p->text_len);
    (*out)[p->text_len] = '\0';
    if (len)
        *len = p->text_len;
    return SBX_OK;
}

/* Paths are bytes, JSON is UTF-8: bytes that are not UTF-8 are written as
 * "\\xNN" text, so every path still gives JSON. */
static json_t *json_text(const char *s)
{
    size_t n = strlen(s);
    sbx__buf b = SBX__BUF_INIT;
    json_t *j;
    if (sbx__utf8_valid(s, n))
        return json_stringn(s, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 0x80 ? sbx__buf_printf(&b, "\\x%02x", c) : sbx__buf_putc(&b, (char)c)) != SBX_OK) {
            sbx__buf_free(&b);
            return NULL;
        }
    }
    j = json_stringn(b.data ? b.data : "", b.len);
    sbx__buf_free(&b);
    return j;
}

static json_t *file_json(const struct pfile *f)
{
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "path", json_text(f->path)) ||
        json_object_set_new(o, "oldPath", f->old_path ? json_text(f->old_path) : json_null()) ||
        json_object_set_new(o, "change", json_string(change_name(f->change))) ||
        json_object_set_new(o, "oldMode", json_integer(f->old_mode)) ||
        json_object_set_new(o, "newMode", json_integer(f->new_mode)) ||
        json_object_set_new(o, "additions", json_integer((json_int_t)f->additions)) ||
        json_object_set_new(o, "deletions", json_integer((json_int_t)f->deletions)) ||
        json_object_set_new(o, "binary", json_boolean(f->binary))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

sbx_status sbx_patch_to_json(sbx_patch *p, char **out)
{
    json_t *root, *files, *stat;
    size_t add = 0, del = 0;
    char *s;
    SBX__ENTER(p, false);
    SBX__ARG(p, out, "out is NULL");
    *out = NULL;
    root = json_object();
    files = json_array();
    stat = json_object();
    if (!root || !files || !stat)
        goto oom;
    for (size_t i = 0; i < p->nfiles; i++) {
        json_t *f = file_json(&p->files[i]);
        if (!f || json_array_append_new(files, f))
            goto oom;
        add += p->files[i].additions;
        del += p->files[i].deletions;
    }
    if (json_object_set_new(stat, "files", json_integer((json_int_t)p->nfiles)) ||
        json_object_set_new(stat, "additions", json_integer((json_int_t)add)) ||
        json_object_set_new(stat, "deletions", json_integer((json_int_t)del)))
        goto oom;
    if (json_object_set_new(root, "verdict", json_string(sbx_patch_verdict_name(p->verdict))) ||
        json_object_set_new(root, "rule", p->rule ? json_string(sbx_patch_rule_name(p->rule)) : json_null()) ||
        json_object_set_new(root, "message", p->message ? json_text(p->message) : json_null()) ||
        json_object_set_new(root, "patchId", p->id[0] ? json_string(p->id) : json_null()) ||
        json_object_set_new(root, "files", files) || json_object_set_new(root, "diffstat", stat)) {
        files = stat = NULL;
        goto oom;
    }
    s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!s || !(*out = sbx__strdup(s))) {
        free(s);
        return sbx__err_nomem(&p->err);
    }
    free(s);
    return SBX_OK;
oom:
    json_decref(root);
    json_decref(files);
    json_decref(stat);
    return sbx__err_nomem(&p->err);
}

/* ---- the patched tree as a gzip tar ---------------------------------------------------------------- */

/* A name git never checks out (verify_path with core.protectNTFS, its
 * default): ".", "..", ".git" in any case, with trailing dots or spaces,
 * or as the short name "git~1". Only a repository made by hand holds one. */
static bool refused_name(const char *n)
{
    size_t len = strlen(n);
    while (len > 4 && (n[len - 1] == '.' || n[len - 1] == ' '))
        len--;
    return !*n || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
           (len == 4 && strncasecmp(n, ".git", 4) == 0) || strcasecmp(n, "git~1") == 0;
}

struct name_walk {
    bool found, nomem;
    sbx__buf bad; /* root + name of the first refused entry */
};

static int name_cb(const char *root, const git_tree_entry *e, void *payload)
{
    struct name_walk *w = payload;
    const char *name = git_tree_entry_name(e);
    if (!refused_name(name))
        return 0;
    w->found = true;
    w->nomem = sbx__patch_show(&w->bad, root, strlen(root), 256) != SBX_OK ||
               sbx__patch_show(&w->bad, name, strlen(name), 256) != SBX_OK;
    return -1;
}

/* Every name in base one git would check out. (libgit2 1.5 refuses the
 * others too when it reads the tree into an index, but leaks on the way.) */
static sbx_status base_names_ok(sbx_patch *p, git_tree *base)
{
    struct name_walk w = {false, false, SBX__BUF_INIT};
    int rc = git_tree_walk(base, GIT_TREEWALK_PRE, name_cb, &w);
    sbx_status st = SBX_OK;
    if (w.nomem)
        st = sbx__err_nomem(&p->err);
    else if (w.found)
        st = sbx__err_set(&p->err, SBX_E_INTERNAL, "the base holds an entry git does not check out: '%s'",
                          w.bad.data ? w.bad.data : "");
    else if (rc < 0)
        st = git_fail(p, "reading the base");
    sbx__buf_free(&w.bad);
    return st;
}

/* The index of base with the overlay's changes, its new blobs written to
 * repo's in-memory object database. */
static sbx_status tree_index(sbx_patch *p, git_repository *repo, git_tree *base, const struct sbx__ov *ov,
                             git_index **out)
{
    git_index *idx = NULL;
    sbx_status st = base_names_ok(p, base);
    if (st != SBX_OK)
        return st;
    if (git_index_new(&idx) < 0 || git_index_read_tree(idx, base) < 0)
        goto fail;
    for (size_t i = 0; i < sbx__ov_count(ov); i++) {
        const struct sbx__ov_entry *o = sbx__ov_at(ov, i);
        git_index_entry e;
        if (o->deleted) {
            if (git_index_remove_bypath(idx, o->path) < 0)
                goto fail;
            continue;
        }
        memset(&e, 0, sizeof e);
        e.path = o->path;
        e.mode = o->mode;
        if (git_blob_create_from_buffer(&e.id, repo, o->data ? o->data : "", o->len) < 0 || git_index_add(idx, &e) < 0)
            goto fail;
    }
    *out = idx;
    return SBX_OK;
fail:
    git_index_free(idx);
    return git_fail(p, "making the patched tree");
}

/* The base tree with the overlay on it, as an index. */
static sbx_status result_index(sbx_patch *p, git_index **out)
{
    return tree_index(p, p->repo, p->base, p->ov, out);
}

/* Call fn on each regular file of the patched tree, in index order (a
 * directory's files together), each within the per-file limit. The
 * sandbox's file API writes regular files only: links and submodules of
 * the base are left out. */
typedef sbx_status (*result_file_fn)(sbx_patch *p, const char *path, const void *data, size_t len, bool exec,
                                     void *ctx);

static sbx_status each_result_file(sbx_patch *p, result_file_fn fn, void *ctx)
{
    git_index *idx = NULL;
    sbx_status st = result_index(p, &idx);
    size_t n;
    if (st != SBX_OK)
        return st;
    n = git_index_entrycount(idx);
    for (size_t i = 0; i < n && st == SBX_OK; i++) {
        const git_index_entry *e = git_index_get_byindex(idx, i);
        struct sbx__blob blob;
        if (!e || (e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE))
            continue;
        if (sbx__blob_read(&blob, p->pooled->odb, &e->id) < 0) {
            st = sbx__err_set(&p->err, SBX_E_INTERNAL, "reading %s: %s", e->path, git_msg());
            break;
        }
        if (blob.len > p->max_file_bytes)
            st = sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "%s is %zu bytes, more than the limit of %zu", e->path,
                              blob.len, p->max_file_bytes);
        else
            st = fn(p, e->path, blob.data, blob.len, e->mode == GIT_FILEMODE_BLOB_EXECUTABLE, ctx);
        sbx__blob_free(&blob);
    }
    git_index_free(idx);
    return st;
}

/* Whether the tree can be saved: a patch checked to apply, or a base
 * with nothing loaded (a workspace with no patch to apply). */
static sbx_status can_save_tree(sbx_patch *p)
{
    if (!(p->verdict == SBX_PATCH_APPLIES && p->ov) &&
        !(p->base && p->verdict == SBX_PATCH_UNCHECKED && !p->text && !p->nops))
        return sbx__err_set(&p->err, SBX_E_MISUSE, "only a patch checked to apply (or a base alone) has a tree to save");
    return SBX_OK;
}

static sbx_status tar_file(sbx_patch *p, const char *path, const void *data, size_t len, bool exec, void *ctx)
{
    return sbx__tar_add_memory(ctx, path, data, len, exec ? 0755 : 0644, &p->err);
}

static sbx_status write_tar(sbx_patch *p, sbx__tar *tar, int fd, const char *tmp)
{
    char buf[65536];
    uint64_t size;
    size_t n;
    sbx_status st = sbx__tar_prepare(tar, 0, &size, &p->err);
    if (st != SBX_OK)
        return st;
    while ((n = sbx__tar_read(tar, buf, sizeof buf)) > 0 && n != SIZE_MAX)
        for (size_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return sbx__err_set(&p->err, SBX_E_IO, "writing %s: %s", tmp, strerror(errno));
            off += (size_t)w;
        }
    if (n == SIZE_MAX)
        return sbx__err_set(&p->err, sbx__tar_status(tar), "making the archive: %s", sbx__tar_error(tar));
    if (fsync(fd) != 0)
        return sbx__err_set(&p->err, SBX_E_IO, "syncing %s: %s", tmp, strerror(errno));
    return SBX_OK;
}

sbx_status sbx_patch_save_tree_file(sbx_patch *p, const char *path)
{
    sbx__buf tmp = SBX__BUF_INIT;
    sbx__tar *tar;
    sbx_status st;
    int fd;

    SBX__ENTER(p, false);
    SBX__ARG(p, path && *path, "path is NULL or empty");
    if ((st = can_save_tree(p)) != SBX_OK)
        return st;
    if (!(tar = sbx__tar_new()))
        return sbx__err_nomem(&p->err);
    if ((st = each_result_file(p, tar_file, tar)) != SBX_OK) {
        sbx__tar_free(tar);
        return st;
    }
    if (sbx__buf_printf(&tmp, "%s.tmp.XXXXXX", path) != SBX_OK) {
        sbx__tar_free(tar);
        return sbx__err_nomem(&p->err);
    }
    if ((fd = mkostemp(tmp.data, O_CLOEXEC)) < 0) {
        st = sbx__err_set(&p->err, SBX_E_IO, "cannot create %s: %s", tmp.data, strerror(errno));
    } else {
        st = write_tar(p, tar, fd, tmp.data);
        if (close(fd) != 0 && st == SBX_OK)
            st = sbx__err_set(&p->err, SBX_E_IO, "closing %s: %s", tmp.data, strerror(errno));
        if (st == SBX_OK && rename(tmp.data, path) != 0)
            st = sbx__err_set(&p->err, SBX_E_IO, "cannot rename %s to %s: %s", tmp.data, path, strerror(errno));
        if (st != SBX_OK)
            unlink(tmp.data);
    }
    sbx__tar_free(tar);
    sbx__buf_free(&tmp);
    return st;
}

/* ---- the patched tree as a directory --------------------------------------------------------------- */

struct dir_writer {
    int root;            /* the temporary directory being filled */
    const char *tmp;     /* its path, for messages */
    int dir;             /* the directory of the last file (root, or one below it), open */
    char last[PATH_MAX]; /* its path below root ("" for root) */
    size_t last_len;
};

/* Whether a path component is one to refuse: empty, ".", "..", too long. */
static bool bad_component(const char *c, size_t n)
{
    return n == 0 || n > NAME_MAX || (c[0] == '.' && (n == 1 || (n == 2 && c[1] == '.')));
}

/* Open w->dir on the directory path[0, n) below w->root, making what is
 * missing; every component is opened without following links, so nothing
 * lands outside the tree whatever the path says. The index is sorted, so
 * a directory's files come together: the last one stays open. */
static sbx_status open_dir(sbx_patch *p, struct dir_writer *w, const char *path, size_t n)
{
    const char *c = path, *end = path + n;
    int dfd = w->root;
    if (w->dir >= 0 && n == w->last_len && memcmp(path, w->last, n) == 0)
        return SBX_OK;
    if (w->dir >= 0 && w->dir != w->root)
        close(w->dir);
    w->dir = -1;
    if (n >= sizeof w->last)
        return sbx__err_set(&p->err, SBX_E_IO, "%.64s...: the path is too long", path);
    while (c < end) {
        const char *slash = memchr(c, '/', (size_t)(end - c));
        size_t k = slash ? (size_t)(slash - c) : (size_t)(end - c);
        char comp[NAME_MAX + 1];
        int next;
        if (bad_component(c, k)) {
            if (dfd != w->root)
                close(dfd);
            return sbx__err_set(&p->err, SBX_E_INTERNAL, "the tree holds an unsafe path: %s", path);
        }
        memcpy(comp, c, k);
        comp[k] = '\0';
        if (mkdirat(dfd, comp, 0755) != 0 && errno != EEXIST)
            next = -1;
        else
            next = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int e = errno;
            if (dfd != w->root)
                close(dfd);
            return sbx__err_set(&p->err, SBX_E_IO, "cannot make %s/%.*s: %s", w->tmp, (int)(c + k - path), path,
                                strerror(e));
        }
        if (dfd != w->root)
            close(dfd);
        dfd = next;
        c += k + 1;
    }
    w->dir = dfd;
    memcpy(w->last, path, n);
    w->last_len = n;
    return SBX_OK;
}

/* Write one file of the tree under w->root. */
static sbx_status dir_file(sbx_patch *p, const char *path, const void *data, size_t len, bool exec, void *ctx)
{
    struct dir_writer *w = ctx;
    const char *name = strrchr(path, '/');
    size_t dlen = name ? (size_t)(name - path) : 0;
    sbx_status st;
    int fd;
    name = name ? name + 1 : path;
    if (bad_component(name, strlen(name)))
        return sbx__err_set(&p->err, SBX_E_INTERNAL, "the tree holds an unsafe path: %s", path);
    if ((st = open_dir(p, w, path, dlen)) != SBX_OK)
        return st;
    if ((fd = openat(w->dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, exec ? 0755 : 0644)) < 0)
        return sbx__err_set(&p->err, SBX_E_IO, "cannot create %s/%s: %s", w->tmp, path, strerror(errno));
    for (size_t off = 0; st == SBX_OK && off < len;) {
        ssize_t n = write(fd, (const char *)data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            st = sbx__err_set(&p->err, SBX_E_IO, "writing %s/%s: %s", w->tmp, path, strerror(errno));
        else
            off += (size_t)n;
    }
    if (close(fd) != 0 && st == SBX_OK)
        st = sbx__err_set(&p->err, SBX_E_IO, "closing %s/%s: %s", w->tmp, path, strerror(errno));
    return st;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

sbx_status sbx_patch_save_tree_dir(sbx_patch *p, const char *dir)
{
    sbx__buf tmp = SBX__BUF_INIT;
    struct dir_writer w;
    sbx_status st;

    size_t n;

    SBX__ENTER(p, false);
    SBX__ARG(p, dir && *dir, "dir is NULL or empty");
    /* "out/" is "out": the temporary goes beside it, not inside. */
    for (n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
        ;
    SBX__ARG(p, !(n == 1 && dir[0] == '/'), "dir is the root directory");
    if ((st = can_save_tree(p)) != SBX_OK)
        return st;
    if (sbx__buf_printf(&tmp, "%.*s.tmp.XXXXXX", (int)n, dir) != SBX_OK)
        return sbx__err_nomem(&p->err);
    /* Filled beside dir, then renamed into place: dir never holds part of
     * a tree, and an existing dir with files in it is never touched. */
    if (!mkdtemp(tmp.data)) {
        st = sbx__err_set(&p->err, SBX_E_IO, "cannot create %s: %s", tmp.data, strerror(errno));
        sbx__buf_free(&tmp);
        return st;
    }
    w.tmp = tmp.data;
    if ((w.root = open(tmp.data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        st = sbx__err_set(&p->err, SBX_E_IO, "cannot open %s: %s", tmp.data, strerror(errno));
    } else {
        w.dir = w.root;
        w.last_len = 0;
        st = each_result_file(p, dir_file, &w);
        if (w.dir >= 0 && w.dir != w.root)
            close(w.dir);
        close(w.root);
    }
    if (st == SBX_OK && rename(tmp.data, dir) != 0) {
        int e = errno;
        st = sbx__err_set(&p->err, SBX_E_IO, "cannot rename %s to %s: %s%s", tmp.data, dir, strerror(e),
                          e == ENOTEMPTY || e == EEXIST ? " (it must not exist, or be an empty directory)" : "");
    }
    if (st != SBX_OK)
        nftw(tmp.data, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    sbx__buf_free(&tmp);
    return st;
}
