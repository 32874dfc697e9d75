/* SPDX-License-Identifier: MIT */
/*
 * slots: how many jobs of a client run at once. The client options
 * jobs.max_running and jobs.max_running_per_project (0 = no limit) are
 * shared by every job of the client; a job over a limit waits in a queue
 * and is let go in the order it came, as soon as its limits allow (a job
 * of a project that is full does not hold back one of another project).
 */
#include "util/internal.h"

#include <string.h>

#include "job/job_int.h"

struct proj {
    char *name;
    unsigned running;
};

struct slots {
    unsigned running;
    struct proj *per;
    size_t nper;
    struct sbx__slot_wait *head, *tail;
};

static void slots_free(void *p)
{
    struct slots *s = p;
    if (!s)
        return;
    for (size_t i = 0; i < s->nper; i++)
        sbx__free(s->per[i].name);
    sbx__free(s->per);
    sbx__free(s);
}

static void grant_waiting(struct sbx__core *c);

static struct slots *get(struct sbx__core *c)
{
    if (!c->jobs) {
        if (!(c->jobs = sbx__calloc(1, sizeof(struct slots))))
            return NULL;
        c->jobs_free = slots_free;
        c->jobs_changed = grant_waiting;
    }
    return c->jobs;
}

static struct proj *project(struct slots *s, const char *name, bool make)
{
    struct proj *n;
    for (size_t i = 0; i < s->nper; i++)
        if (strcmp(s->per[i].name, name) == 0)
            return &s->per[i];
    if (!make || !(n = sbx__realloc(s->per, (s->nper + 1) * sizeof *n)))
        return NULL;
    s->per = n;
    if (!(n[s->nper].name = sbx__strdup(name)))
        return NULL;
    n[s->nper].running = 0;
    return &n[s->nper++];
}

static bool fits(const struct sbx__core *c, const struct slots *s, const struct proj *p)
{
    return (!c->jobs_max || s->running < c->jobs_max) && (!c->jobs_max_project || !p || p->running < c->jobs_max_project);
}

static void take(struct slots *s, struct proj *p, struct sbx__slot_wait *w)
{
    s->running++;
    if (p)
        p->running++;
    w->holds = true;
}

sbx_status sbx__slot_take(struct sbx__core *c, struct sbx__slot_wait *w, bool *now)
{
    struct slots *s = get(c);
    struct proj *p;
    *now = false;
    if (!s || !(p = project(s, w->project, true)))
        return SBX_E_NOMEM;
    if (!s->head && fits(c, s, p)) {
        take(s, p, w);
        *now = true;
        return SBX_OK;
    }
    w->next = NULL;
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    w->queued = true;
    return SBX_OK;
}

void sbx__slot_unqueue(struct sbx__core *c, struct sbx__slot_wait *w)
{
    struct slots *s = c->jobs;
    struct sbx__slot_wait *prev = NULL;
    if (!s || !w->queued)
        return;
    for (struct sbx__slot_wait *it = s->head; it; prev = it, it = it->next) {
        if (it != w)
            continue;
        if (prev)
            prev->next = it->next;
        else
            s->head = it->next;
        if (s->tail == it)
            s->tail = prev;
        break;
    }
    w->queued = false;
    w->next = NULL;
}

/* Let go, in order, every waiting job its limits now allow. */
static void grant_waiting(struct sbx__core *c)
{
    struct slots *s = c->jobs;
    struct sbx__slot_wait *it, *next;
    if (!s)
        return;
    for (it = s->head; it; it = next) {
        struct proj *p = project(s, it->project, false);
        next = it->next;
        if (c->jobs_max && s->running >= c->jobs_max)
            break;
        if (!fits(c, s, p))
            continue;
        sbx__slot_unqueue(c, it);
        take(s, p, it);
        it->grant(it);
    }
}

void sbx__slot_give(struct sbx__core *c, struct sbx__slot_wait *w)
{
    struct slots *s = c->jobs;
    struct proj *p;
    if (!s || !w->holds)
        return;
    w->holds = false;
    s->running--;
    if ((p = project(s, w->project, false)) && p->running)
        p->running--;
    grant_waiting(c);
}

unsigned sbx__slot_running(const struct sbx__core *c)
{
    const struct slots *s = c->jobs;
    return s ? s->running : 0;
}
