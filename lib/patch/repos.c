/* SPDX-License-Identifier: MIT */
/*
 * repos: repositories opened for patches, kept for the next patch of the
 * same repository. Opening one (its config, refs and packs) costs more than
 * checking a small patch, and checks come in series against one repository.
 * A repository is used by one handle at a time (libgit2's objects are not
 * for concurrent use); idle ones wait in a small pool, their in-memory
 * object database emptied. Objects on disk never change, and refs are read
 * again at every revision lookup, so a pooled repository is never stale.
 */
#include "util/internal.h"

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "patch/patch_int.h"

#define POOL_MAX 8

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sbx__repo *pool; /* most recently returned first */
static size_t pool_n;

static void repo_close(struct sbx__repo *r)
{
    git_repository_free(r->repo); /* its odb, and the mempack in it, go too */
    sbx__free(r->key);
    sbx__free(r);
}

/* Whether r's git directory is still the one it opened: a directory
 * removed and made again at the same path is another repository. */
static bool same_dir(const struct sbx__repo *r)
{
    struct stat sb;
    return stat(git_repository_path(r->repo), &sb) == 0 && sb.st_dev == r->dev && sb.st_ino == r->ino;
}

static struct sbx__repo *pool_take(const char *key)
{
    struct sbx__repo **at, *r = NULL;
    pthread_mutex_lock(&pool_lock);
    for (at = &pool; *at; at = &(*at)->next)
        if (strcmp((*at)->key, key) == 0) {
            r = *at;
            *at = r->next;
            pool_n--;
            break;
        }
    pthread_mutex_unlock(&pool_lock);
    return r;
}

sbx_status sbx__repo_take(const char *dir, struct sbx__repo **out, char *why, size_t why_cap)
{
    char real[PATH_MAX];
    struct sbx__repo *r;
    git_odb *odb = NULL;
    const git_error *e;

    *out = NULL;
    if (!realpath(dir, real)) {
        snprintf(why, why_cap, "no git repository at %s", dir);
        return SBX_E_NOT_FOUND;
    }
    if ((r = pool_take(real)) != NULL) {
        if (same_dir(r)) {
            *out = r;
            return SBX_OK;
        }
        repo_close(r);
    }
    if (!(r = sbx__calloc(1, sizeof *r)) || !(r->key = sbx__strdup(real))) {
        sbx__free(r);
        return SBX_E_NOMEM;
    }
    if (git_repository_open_ext(&r->repo, real, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
        e = git_error_last();
        snprintf(why, why_cap, "no git repository at %s: %s", dir, e && e->message ? e->message : "unknown error");
        repo_close(r);
        return SBX_E_NOT_FOUND;
    }
    /* Everything a check writes (patched blobs, trees) stays in memory. */
    if (git_repository_odb(&odb, r->repo) < 0 || git_mempack_new(&r->mempack) < 0 ||
        git_odb_add_backend(odb, r->mempack, 999) < 0) {
        if (r->mempack && r->mempack->free && odb && git_odb_num_backends(odb) == 0)
            r->mempack->free(r->mempack);
        git_odb_free(odb);
        repo_close(r);
        return SBX_E_NOMEM;
    }
    git_odb_free(odb);
    r->odb = odb; /* borrowed: the repository holds it */
    {
        struct stat sb;
        if (stat(git_repository_path(r->repo), &sb) == 0) {
            r->dev = sb.st_dev;
            r->ino = sb.st_ino;
        }
    }
    *out = r;
    return SBX_OK;
}

void sbx__repo_give(struct sbx__repo *r)
{
    struct sbx__repo *drop = NULL;
    if (!r)
        return;
    git_mempack_reset(r->mempack);
    pthread_mutex_lock(&pool_lock);
    r->next = pool;
    pool = r;
    if (++pool_n > POOL_MAX) {
        struct sbx__repo **at = &pool;
        while ((*at)->next)
            at = &(*at)->next;
        drop = *at;
        *at = NULL;
        pool_n--;
    }
    pthread_mutex_unlock(&pool_lock);
    if (drop)
        repo_close(drop);
}

/* The backends in libgit2's own order (git_odb_read()'s), the first that
 * has the object answering; one that fails otherwise than "not here" ends
 * the read, as it ends libgit2's. */
int sbx__blob_read(struct sbx__blob *b, struct git_odb *odb, const git_oid *id)
{
    size_t n = git_odb_num_backends(odb);
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < n; i++) {
        git_odb_backend *be = NULL;
        git_object_t type = GIT_OBJECT_INVALID;
        int rc;
        if (git_odb_get_backend(&be, odb, i) < 0 || !be->read)
            continue;
        rc = be->read(&b->data, &b->len, &type, be, id);
        if (rc == GIT_ENOTFOUND || rc == GIT_PASSTHROUGH) {
            b->data = NULL;
            continue;
        }
        if (rc < 0) {
            memset(b, 0, sizeof *b);
            return rc;
        }
        b->from = be;
        if (type != GIT_OBJECT_BLOB) {
            sbx__blob_free(b);
            git_error_set_str(GIT_ERROR_INVALID, "the object is not a blob");
            return GIT_EINVALIDSPEC;
        }
        return 0;
    }
    /* Nowhere: git_odb_read() looks again in packs written since and says
     * why it is missing. */
    {
        git_odb_object *o = NULL;
        int rc = git_odb_read(&o, odb, id);
        if (rc < 0)
            return rc;
        if (git_odb_object_type(o) != GIT_OBJECT_BLOB) {
            git_odb_object_free(o);
            git_error_set_str(GIT_ERROR_INVALID, "the object is not a blob");
            return GIT_EINVALIDSPEC;
        }
        b->obj = o;
        b->data = (void *)(uintptr_t)git_odb_object_data(o); /* read only, as git_odb_object_data() says */
        b->len = git_odb_object_size(o);
        return 0;
    }
}

void sbx__blob_free(struct sbx__blob *b)
{
    if (b->obj)
        git_odb_object_free(b->obj);
    else if (b->from && b->data)
        git_odb_backend_data_free(b->from, b->data);
    memset(b, 0, sizeof *b);
}
