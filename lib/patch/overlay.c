/* SPDX-License-Identifier: MIT */
/*
 * overlay: the files a patch changes, over a base tree that is only read.
 * Checking a patch needs the new contents of the files it touches, not a
 * copy of the whole tree: those are kept here, by path (a hash table, for
 * patches of thousands of files), until a tree is asked for.
 */
#include "util/internal.h"

#include <string.h>

#include "patch/patch_int.h"

struct sbx__ov {
    struct sbx__ov_entry *e;
    size_t n, cap;
    size_t *slot; /* index + 1 into e; 0 empty */
    size_t nslots;
};

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

struct sbx__ov *sbx__ov_new(void)
{
    return sbx__calloc(1, sizeof(struct sbx__ov));
}

void sbx__ov_free(struct sbx__ov *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        sbx__free(o->e[i].path);
        sbx__free(o->e[i].data);
    }
    sbx__free(o->e);
    sbx__free(o->slot);
    sbx__free(o);
}

static size_t *find_slot(const struct sbx__ov *o, const char *path)
{
    size_t mask = o->nslots - 1;
    for (size_t k = hash(path) & mask;; k = (k + 1) & mask)
        if (!o->slot[k] || strcmp(o->e[o->slot[k] - 1].path, path) == 0)
            return &o->slot[k];
}

const struct sbx__ov_entry *sbx__ov_get(const struct sbx__ov *o, const char *path)
{
    size_t *s;
    if (!o || !o->nslots)
        return NULL;
    s = find_slot(o, path);
    return *s ? &o->e[*s - 1] : NULL;
}

/* Keep the table at most half full. */
static bool grow(struct sbx__ov *o)
{
    size_t n = o->nslots ? o->nslots * 2 : 64;
    size_t *old = o->slot, oldn = o->nslots;
    if (!(o->slot = sbx__calloc(n, sizeof *o->slot))) {
        o->slot = old;
        return false;
    }
    o->nslots = n;
    for (size_t i = 0; i < oldn; i++)
        if (old[i])
            *find_slot(o, o->e[old[i] - 1].path) = old[i];
    sbx__free(old);
    return true;
}

sbx_status sbx__ov_put(struct sbx__ov *o, const char *path, bool deleted, uint32_t mode, char *data, size_t len)
{
    size_t *s;
    struct sbx__ov_entry *e;
    if ((o->n + 1) * 2 > o->nslots && !grow(o)) {
        sbx__free(data);
        return SBX_E_NOMEM;
    }
    s = find_slot(o, path);
    if (*s) { /* a later part of the patch replaces an earlier one's result */
        e = &o->e[*s - 1];
        sbx__free(e->data);
    } else {
        char *copy;
        if (o->n == o->cap) {
            size_t cap = o->cap ? o->cap * 2 : 32;
            struct sbx__ov_entry *ne = sbx__realloc(o->e, cap * sizeof *ne);
            if (!ne) {
                sbx__free(data);
                return SBX_E_NOMEM;
            }
            o->e = ne;
            o->cap = cap;
        }
        if (!(copy = sbx__strdup(path))) {
            sbx__free(data);
            return SBX_E_NOMEM;
        }
        e = &o->e[o->n++];
        e->path = copy;
        *s = o->n;
    }
    e->deleted = deleted;
    e->mode = mode;
    e->data = data;
    e->len = len;
    return SBX_OK;
}

size_t sbx__ov_count(const struct sbx__ov *o)
{
    return o ? o->n : 0;
}

const struct sbx__ov_entry *sbx__ov_at(const struct sbx__ov *o, size_t i)
{
    return o && i < o->n ? &o->e[i] : NULL;
}

sbx_status sbx__ov_put_all(struct sbx__ov *dst, const struct sbx__ov *src)
{
    for (size_t i = 0; i < sbx__ov_count(src); i++) {
        const struct sbx__ov_entry *e = &src->e[i];
        char *data = NULL;
        if (e->data && !(data = sbx__memdup(e->data, e->len)))
            return SBX_E_NOMEM;
        if (sbx__ov_put(dst, e->path, e->deleted, e->mode, data, e->len) != SBX_OK)
            return SBX_E_NOMEM;
    }
    return SBX_OK;
}
