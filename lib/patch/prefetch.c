/* SPDX-License-Identifier: MIT */
/*
 * prefetch: the base's blobs a large patch reads, read (and each file's
 * hunks applied to its blob) on several threads before the patch is
 * applied in order on the caller's thread, which takes the results.
 *
 * Reading a blob (finding it in a pack and inflating it) is most of the
 * time of a check that touches thousands of files; the files are
 * independent, so the reads spread over the cores. A file's result made
 * here is the one the caller's thread would make (the same function on the
 * same bytes); when it fails, the caller's thread applies again itself,
 * for its message. libgit2's objects are
 * for one thread at a time: each extra thread reads through a repository
 * of its own, taken from the pool (repos.c), while the caller's thread
 * reads through the handle's. A blob that could not be read is left out:
 * the apply reads it again itself and reports the error.
 */
#include "util/internal.h"

#include <git2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "patch/apply.h"
#include "patch/patch_int.h"

#define THREADS_MAX 8
#define FILES_PER_THREAD 128           /* fewer files than this per thread: not worth a thread */
#define BYTES_MAX ((size_t)256 << 20)  /* blobs held at once, at most */

struct sbx__prefetch {
    size_t n;
    git_oid *ids;
    bool *want;
    struct sbx__blob *blobs;
    git_patch **gps;                      /* a slot's hunks to apply, or NULL */
    char **posts;                         /* a slot's applied bytes (then its blob is freed) */
    size_t *post_lens;
    atomic_size_t next;
    atomic_size_t held;                   /* bytes of blobs and results held */
    struct sbx__repo *repos[THREADS_MAX]; /* the extra threads' repositories */
};

struct worker {
    struct sbx__prefetch *pf;
    git_odb *odb;
};

/* Count len more bytes held, unless that passes BYTES_MAX: what does not
 * fit is left to the apply, which reads it in turn. */
static bool hold(struct sbx__prefetch *pf, size_t len)
{
    size_t cur = atomic_load(&pf->held);
    do {
        if (len > BYTES_MAX - cur)
            return false;
    } while (!atomic_compare_exchange_weak(&pf->held, &cur, cur + len));
    return true;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct sbx__prefetch *pf = w->pf;
    for (;;) {
        size_t i = atomic_fetch_add(&pf->next, 1);
        if (i >= pf->n)
            break;
        char why[8];
        if (!pf->want[i])
            continue;
        if (sbx__blob_read(&pf->blobs[i], w->odb, &pf->ids[i]) < 0)
            continue;
        if (!hold(pf, pf->blobs[i].len)) {
            sbx__blob_free(&pf->blobs[i]);
            continue;
        }
        if (pf->gps[i] && sbx__apply_text(pf->blobs[i].data, pf->blobs[i].len, pf->gps[i], &pf->posts[i],
                                          &pf->post_lens[i], why, sizeof why) == SBX_OK) {
            atomic_fetch_sub(&pf->held, pf->blobs[i].len);
            sbx__blob_free(&pf->blobs[i]);
            if (!hold(pf, pf->post_lens[i])) {
                sbx__free(pf->posts[i]);
                pf->posts[i] = NULL;
            }
        } else {
            sbx__free(pf->posts[i]);
            pf->posts[i] = NULL;
        }
    }
    return NULL;
}

unsigned sbx__prefetch_threads(unsigned asked, size_t files)
{
    long cpus;
    size_t t;
    if (asked == 1 || (!asked && files < 2 * FILES_PER_THREAD))
        return 1; /* before sysconf(), which reads /sys: a small check is 20 us */
    if (!(git_libgit2_features() & GIT_FEATURE_THREADS))
        return 1; /* a libgit2 built without threads has no locks on its pack cache */
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    t = asked ? asked : cpus > 0 ? (size_t)cpus : 1;
    if (t > THREADS_MAX)
        t = THREADS_MAX;
    if (!asked && t > files / FILES_PER_THREAD)
        t = files / FILES_PER_THREAD;
    if (t > files)
        t = files; /* a thread without a file would only hold a pooled repository */
    return t ? (unsigned)t : 1;
}

struct sbx__prefetch *sbx__prefetch_new(size_t n)
{
    struct sbx__prefetch *pf = sbx__calloc(1, sizeof *pf);
    if (!pf)
        return NULL;
    pf->n = n;
    atomic_init(&pf->next, 0);
    atomic_init(&pf->held, 0);
    if (!(pf->ids = sbx__calloc(n ? n : 1, sizeof *pf->ids)) || !(pf->want = sbx__calloc(n ? n : 1, sizeof *pf->want)) ||
        !(pf->blobs = sbx__calloc(n ? n : 1, sizeof *pf->blobs)) || !(pf->gps = sbx__calloc(n ? n : 1, sizeof *pf->gps)) ||
        !(pf->posts = sbx__calloc(n ? n : 1, sizeof *pf->posts)) ||
        !(pf->post_lens = sbx__calloc(n ? n : 1, sizeof *pf->post_lens))) {
        sbx__prefetch_free(pf);
        return NULL;
    }
    return pf;
}

void sbx__prefetch_want(struct sbx__prefetch *pf, size_t i, const git_oid *id, git_patch *gp)
{
    pf->ids[i] = *id;
    pf->want[i] = true;
    pf->gps[i] = gp;
}

void sbx__prefetch_run(struct sbx__prefetch *pf, const char *repo_key, git_repository *repo, unsigned threads)
{
    pthread_t tid[THREADS_MAX];
    struct worker w[THREADS_MAX];
    unsigned started = 0;
    git_odb *odb = NULL;
    char why[256];

    if (git_repository_odb(&odb, repo) < 0)
        return; /* nothing read: the apply reads each blob itself */
    for (unsigned t = 1; t < threads && t < THREADS_MAX; t++) {
        if (sbx__repo_take(repo_key, &pf->repos[t], why, sizeof why) != SBX_OK)
            break;
        w[t].pf = pf;
        w[t].odb = pf->repos[t]->odb;
        if (pthread_create(&tid[t], NULL, work, &w[t]) != 0)
            break;
        started = t;
    }
    w[0].pf = pf;
    w[0].odb = odb;
    work(&w[0]);
    for (unsigned t = 1; t <= started; t++)
        pthread_join(tid[t], NULL);
    git_odb_free(odb);
}

bool sbx__prefetch_take(struct sbx__prefetch *pf, size_t i, const git_oid *id, char **post, size_t *len)
{
    if (!pf || i >= pf->n || !pf->posts[i] || !git_oid_equal(&pf->ids[i], id))
        return false;
    *post = pf->posts[i];
    *len = pf->post_lens[i];
    pf->posts[i] = NULL;
    return true;
}

const char *sbx__prefetch_get(const struct sbx__prefetch *pf, size_t i, const git_oid *id, size_t *len)
{
    const struct sbx__blob *b = pf && i < pf->n ? &pf->blobs[i] : NULL;
    if (!b || !(b->from || b->obj) || !git_oid_equal(&pf->ids[i], id))
        return NULL;
    *len = b->len;
    return b->data;
}

void sbx__prefetch_free(struct sbx__prefetch *pf)
{
    if (!pf)
        return;
    for (size_t i = 0; i < pf->n; i++) {
        if (pf->blobs)
            sbx__blob_free(&pf->blobs[i]);
        if (pf->posts)
            sbx__free(pf->posts[i]);
    }
    for (unsigned t = 0; t < THREADS_MAX; t++)
        sbx__repo_give(pf->repos[t]);
    sbx__free(pf->blobs);
    sbx__free(pf->gps);
    sbx__free(pf->posts);
    sbx__free(pf->post_lens);
    sbx__free(pf->want);
    sbx__free(pf->ids);
    sbx__free(pf);
}
