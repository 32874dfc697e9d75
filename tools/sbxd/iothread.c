/* SPDX-License-Identifier: MIT */
/*
 * iothread: one epoll loop that owns every sandbox control socket (command
 * output arrives on it too, forwarded by each sandbox's init). Reads happen
 * without the global lock (the fds are ours alone); what was read is
 * applied under it. It also fires sandbox
 * timeouts and runs the janitor.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

#define JANITOR_MS 10000

enum { W_WAKE, W_CTL };

struct watch {
    int kind;
    int fd;
    struct sandbox *s;
    int ctx;
    struct watch *next_dead;
};

static struct watch wake_watch = {W_WAKE, -1, NULL, 0, NULL};
static struct watch *dead_watches; /* freed between epoll batches */

static int add_watch(struct watch *w)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = w;
    return epoll_ctl(g.epfd, EPOLL_CTL_ADD, w->fd, &ev);
}

int io_watch_ctl(struct sandbox *s, int ctx)
{
    struct watch *w = sbx__calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->kind = W_CTL;
    w->fd = s->ctx[ctx].ctl_fd;
    w->s = s;
    w->ctx = ctx;
    if (add_watch(w) < 0) {
        sbx__free(w);
        return -1;
    }
    s->ctx[ctx].watch = w;
    sandbox_ref(s);
    return 0;
}

static void retire(struct watch *w)
{
    epoll_ctl(g.epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->fd = -1;
    w->next_dead = dead_watches;
    dead_watches = w;
}

void io_wake(void)
{
    uint64_t one = 1;
    (void)!write(g.wake_fd, &one, sizeof one);
}

static void free_dead(void)
{
    while (dead_watches) {
        struct watch *w = dead_watches;
        dead_watches = w->next_dead;
        if (w->kind == W_CTL)
            sandbox_unref(w->s);
        sbx__free(w);
    }
}

static struct command *command_by_ctl(struct sandbox *s, uint64_t id)
{
    for (struct command *c = s->commands; c; c = c->next)
        if (c->ctl_id == id)
            return c;
    return NULL;
}

static int exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 255;
}

/* Apply one message from a sandbox's init; g.lock held. */
static void apply_ctl(struct watch *w, struct ctl_msg *m)
{
    struct sandbox *s = w->s;
    struct ctl_reader r;
    long long v;

    ctl_reader_init(&r, m);
    if (m->type == CTL_REPLY) {
        for (struct ctl_wait *cw = s->waits; cw; cw = cw->next) {
            if (cw->id != m->id || cw->done)
                continue;
            cw->done = true;
            cw->err = ctl_get_int(&r, &v) == 0 ? (int)v : EPROTO;
            if (r.left)
                ctl_get_str(&r, &cw->detail);
            cw->fd = ctl_take_fd(m, 0);
            pthread_cond_broadcast(&s->cond);
            return;
        }
        sbxd_log(LOG_DEBUG, "sandbox %s: reply %llu nobody waits for", s->id,
                 (unsigned long long)m->id);
    } else if (m->type == CTL_EXIT) {
        struct command *c = command_by_ctl(s, m->id);
        if (c && ctl_get_int(&r, &v) == 0)
            command_finish(c, exit_code((int)v), false);
    } else if (m->type == CTL_OUTPUT) {
        struct command *c = command_by_ctl(s, m->id);
        const char *p;
        size_t n;
        /* After its exit nothing more is taken (init sends none). */
        if (c && !c->exited && ctl_get_int(&r, &v) == 0 && (v == 1 || v == 2) &&
            ctl_get(&r, &p, &n) == 0)
            command_output(c, (int)v, p, n);
    }
}

static void on_ctl(struct watch *w)
{
    struct ctl_msg m;
    int r;

    /* The frame is read without the lock: init writes whole frames, and
     * nobody else reads this socket. */
    pthread_mutex_unlock(&g.lock);
    r = ctl_recv(w->fd, &m);
    pthread_mutex_lock(&g.lock);
    if (w->fd < 0) {
        if (r > 0)
            ctl_msg_free(&m);
        return;
    }
    if (r > 0) {
        apply_ctl(w, &m);
        ctl_msg_free(&m);
        return;
    }
    /* EOF or a broken frame: this context's init is gone. */
    if (r < 0)
        sbxd_log(LOG_WARN, "sandbox %s: control socket: %s", w->s->id, strerror(errno));
    if (w->s->ctx[w->ctx].watch == w)
        w->s->ctx[w->ctx].watch = NULL;
    if (w->ctx == w->s->primary) {
        /* The other context dies with the PID namespace, and the finalizer
         * will close its socket: stop watching it now. */
        struct watch *ow = w->s->ctx[1 - w->ctx].watch;
        if (ow && ow != (struct watch *)1) {
            w->s->ctx[1 - w->ctx].watch = NULL;
            retire(ow);
        }
    }
    retire(w);
    sandbox_ctx_dead(w->s, w->ctx);
}

static void fire_timeouts(void)
{
    int64_t now = mono_ms();
    for (struct sandbox *s = g.sandboxes; s; s = s->next)
        if (s->status == SBXD_RUNNING && s->deadline_mono <= now)
            sandbox_stop_locked(s, true);
    command_fire_timeouts(now);
}

/* Every 10 s, or as often as --spill-after asks, down to every second. */
static int64_t janitor_period(void)
{
    int64_t ms = g.cfg.spill_after_ms;
    return ms < 1000 ? 1000 : ms > JANITOR_MS ? JANITOR_MS : ms;
}

static void *io_main(void *arg)
{
    struct epoll_event evs[64];
    int64_t next_janitor = mono_ms() + janitor_period();
    (void)arg;

    pthread_mutex_lock(&g.lock);
    while (!g.shutting_down) {
        int64_t deadline = sandbox_next_deadline(), now = mono_ms(), wait;
        int n;
        if (deadline < 0 || deadline > next_janitor)
            deadline = next_janitor;
        wait = deadline - now;
        if (wait < 0)
            wait = 0;
        pthread_mutex_unlock(&g.lock);
        n = epoll_wait(g.epfd, evs, 64, (int)(wait > 60000 ? 60000 : wait));
        pthread_mutex_lock(&g.lock);
        for (int i = 0; i < n; i++) {
            struct watch *w = evs[i].data.ptr;
            if (w->kind == W_WAKE) {
                uint64_t v;
                (void)!read(g.wake_fd, &v, sizeof v);
            } else if (w->fd < 0) {
                continue;
            } else {
                on_ctl(w);
            }
        }
        fire_timeouts();
        if (mono_ms() >= next_janitor) {
            sandbox_janitor();
            next_janitor = mono_ms() + janitor_period();
        }
        free_dead();
    }
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

int io_start(void)
{
    sigset_t all, old;
    int r;
    g.epfd = epoll_create1(EPOLL_CLOEXEC);
    g.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g.epfd < 0 || g.wake_fd < 0)
        return -1;
    wake_watch.fd = g.wake_fd;
    if (add_watch(&wake_watch) < 0)
        return -1;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&g.io_thread, NULL, io_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r == 0 ? 0 : -1;
}

void io_stop(void)
{
    pthread_mutex_lock(&g.lock);
    g.shutting_down = 1;
    pthread_mutex_unlock(&g.lock);
    io_wake();
    pthread_join(g.io_thread, NULL);
}
