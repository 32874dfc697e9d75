/* SPDX-License-Identifier: MIT */
/*
 * sbxd: a local server speaking the Vercel Sandbox API (v2, the current
 * SDKs', and v1), each sandbox a set of Linux namespaces made with
 * bubblewrap. See doc/man/sbxd.8.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/internal.h"
#include "duration.h"
#include "mitm.h"
#include "procmask.h"
#include "sbxd.h"

struct sbxd g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void usage(FILE *out)
{
    fprintf(out,
"usage: sbxd [options]\n"
"\n"
"A local server for the Vercel Sandbox API (v2, the current SDKs', and v1):\n"
"every sandbox is a set of Linux namespaces made with bubblewrap, its\n"
"workspace at /vercel/sandbox.\n"
"\n"
"  --listen ADDR           127.0.0.1:PORT, [::1]:PORT (PORT 0 picks one) or\n"
"                          unix:PATH (mode 0600); loopback only [127.0.0.1:0]\n"
"  --state-dir DIR         sandboxes, snapshots, token [/var/lib/sbxd as root,\n"
"                          else $XDG_STATE_HOME/sbxd or ~/.local/state/sbxd]\n"
"  --token-file FILE       the bearer token clients must send [a random token\n"
"                          kept in STATE-DIR/token, mode 0600]\n"
"  --bwrap PROGRAM         bubblewrap [bwrap]\n"
"  --init PROGRAM          sbxd-init [next to sbxd, else %s/sbxd-init]\n"
"  --default-timeout T     sandbox lifetime when create gives none [5m]\n"
"  --max-timeout T         longest lifetime, extensions included [5h]\n"
"  --max-sandboxes N       sandboxes running at once [256]\n"
"  --max-vcpus N           largest resources.vcpus [8]\n"
"  --pids-max N            processes per sandbox [1024]\n"
"  --max-log-bytes N       stored output per command [16777216]\n"
"  --max-sandbox-log-bytes N  stored output per sandbox [268435456]\n"
"  --max-upload BYTES      largest fs/write body and tarball source [536870912]\n"
"  --snapshot-expiration T  default snapshot lifetime, 0 = never [7d]\n"
"  --upstream-ca FILE      CA certificates (PEM) the egress proxy also trusts when it\n"
"                          connects upstream for header injection [host store only]\n"
"  --id-range FIRST:COUNT  host uids/gids for sandboxes when run as root [the 'sbxd'\n"
"                          line of /etc/subuid and /etc/subgid, else 1878982656:65536]\n"
"  --disk-limit SIZE       disk space per sandbox: bytes or a K, M, G, T suffix [8G]\n"
"  --inode-limit N         files per sandbox [one per 16 KiB of --disk-limit]\n"
"  --add-host NAME=ADDR    resolve NAME to ADDR in sandboxes, the egress proxy and\n"
"                          tarball downloads (repeatable)\n"
"  --allow-degraded        start even when an isolation layer cannot be set up\n"
"                          (each missing layer is logged and shown by --check)\n"
"  --unsafe-host-network   UNSAFE: let allow-all sandboxes reach this host's own\n"
"                          addresses (its loopback included, sbxd among them)\n"
"  --max-connections N     connections served at once; past it requests get a 503\n"
"                          with Retry-After [RLIMIT_NOFILE's hard limit less 256 +\n"
"                          12 per --max-sandboxes, at least half of it]\n"
"  --max-unauthenticated N  connections that have not yet sent a valid token;\n"
"                          past it the oldest is closed [256]\n"
"  --read-timeout S        a connection silent this long while a request is read,\n"
"                          or idle between requests, is closed [60]\n"
"  --io-threads N          threads reading requests and writing responses [2]\n"
"  --workers N             most requests handled at once (a long poll or a log\n"
"                          stream waiting for output holds none) [64]\n"
"  --retain-records T      records of stopped sandboxes are kept this long, then\n"
"                          deleted, 0 = forever [7d]\n"
"  --retain-output T       output of a stopped sandbox's commands is kept this\n"
"                          long [30m]\n"
"  --spill-after T         ... in memory until nothing has read it for this long,\n"
"                          then in the state directory [10s]\n"
"  --log-level LEVEL       error, warn, info or debug [info]\n"
"  --check                 create a sandbox, report every isolation layer, then exit\n"
"                          (status 1 when a layer is off without --allow-degraded)\n"
"  --version, --help\n"
"\n"
"A time T is milliseconds, or a number with a unit: 250ms, 30s, 10m, 1.5h, 7d.\n"
"On start sbxd prints one line, \"sbxd listening on URL\", to stdout; logs go to\n"
"stderr. SIGINT or SIGTERM stops every sandbox and exits.\n",
            SBXD_LIBEXECDIR);
}

/* A size: bytes, or a number with K, M, G or T (powers of 1024; "KiB",
 * "MB"... read the same). */
static int parse_size(const char *opt, const char *v, int64_t min, int64_t *out)
{
    char *end;
    unsigned long long x;
    int shift = 0;
    errno = 0;
    x = strtoull(v, &end, 10);
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && *end == 'i')
        end++;
    if (shift && (*end == 'B' || *end == 'b'))
        end++;
    if (errno || *end || end == v || !(*v >= '0' && *v <= '9') || x > (1ull << 62) >> shift ||
        (int64_t)(x << shift) < min) {
        fprintf(stderr, "sbxd: %s wants a size of at least %lld bytes (as 512M, 8G...), not '%s'\n",
                opt, (long long)min, v);
        return -1;
    }
    *out = (int64_t)(x << shift);
    return 0;
}

static int parse_i64(const char *opt, const char *v, int64_t min, int64_t *out)
{
    char *end;
    long long x;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (errno || *end || !*v || x < min) {
        fprintf(stderr, "sbxd: %s wants a number >= %lld, not '%s'\n", opt, (long long)min, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* A time option: milliseconds (the unit these options always took), or a
 * number with a unit (250ms, 30s, 10m, 1.5h, 7d), at least min ms. */
static int parse_ms(const char *opt, const char *v, int64_t min, int64_t *out)
{
    int64_t ms;
    int bare;
    /* A bare number is whole milliseconds, as these options always took. */
    if (parse_duration(v, 1, &ms, &bare) == DURATION_OK && ms >= min && !(bare && strchr(v, '.'))) {
        *out = ms;
        return 0;
    }
    fprintf(stderr, "sbxd: %s wants a time of at least %lld ms (milliseconds, or 250ms, 30s, 10m, 1.5h, 7d), not '%s'\n",
            opt, (long long)min, v);
    return -1;
}

static char *default_state_dir(void)
{
    const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (geteuid() == 0)
        return sbx__strdup("/var/lib/sbxd");
    if (x && *x)
        return path_join(x, "sbxd");
    if (home && *home)
        return path_join(home, ".local/state/sbxd");
    return sbx__strdup("/tmp/sbxd");
}

static char *find_init(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        char *slash;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            char *p = path_join(self, "sbxd-init");
            if (p && access(p, X_OK) == 0)
                return p;
            sbx__free(p);
        }
    }
    return path_join(SBXD_LIBEXECDIR, "sbxd-init");
}

static char *find_program(const char *name)
{
    const char *path = getenv("PATH");
    char *copy, *save = NULL;
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? sbx__strdup(name) : NULL;
    copy = sbx__strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
        char *p = path_join(dir, name);
        if (p && access(p, X_OK) == 0) {
            sbx__free(copy);
            return p;
        }
        sbx__free(p);
    }
    sbx__free(copy);
    return NULL;
}

static int read_sysctl(const char *path)
{
    char *s = read_file(path, 64, NULL);
    int v = s ? atoi(s) : -1;
    sbx__free(s);
    return v;
}

/* Say exactly how to let this host create sandboxes. */
static void explain_failure(const char *err)
{
    fprintf(stderr, "sbxd: cannot create a sandbox on this host.\n  %s\n", err);
    if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
        fprintf(stderr,
                "  AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later). Fix:\n"
                "    sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n"
                "  and, to keep it after a reboot:\n"
                "    echo kernel.apparmor_restrict_unprivileged_userns=0 | sudo tee /etc/sysctl.d/60-sbxd-userns.conf\n"
                "  (or give bwrap an AppArmor profile with the 'userns' permission).\n");
    else if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == 0)
        fprintf(stderr, "  Unprivileged user namespaces are disabled. Fix:\n"
                        "    sudo sysctl -w kernel.unprivileged_userns_clone=1\n");
    else if (read_sysctl("/proc/sys/user/max_user_namespaces") == 0)
        fprintf(stderr, "  User namespaces are limited to 0. Fix:\n"
                        "    sudo sysctl -w user.max_user_namespaces=15000\n");
    else if (access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0)
        fprintf(stderr, "  sbxd runs in a container whose seccomp/AppArmor profile forbids creating\n"
                        "  namespaces. Fix: start the container with\n"
                        "    --security-opt seccomp=unconfined --security-opt apparmor=unconfined\n"
                        "  (docker/podman), or run sbxd on the host.\n");
    else
        fprintf(stderr, "  Check that 'bwrap --unshare-all --uid 1000 true' works for this user;\n"
                        "  sbxd needs unprivileged user, PID, mount, IPC, UTS and network namespaces.\n");
}

/* Run `sh -c script` in s and return its stdout (first 256 bytes), or NULL. */
static char *probe_cmd(struct sandbox *s, const char *script, bool sudo, char *err, size_t errlen)
{
    sbx__strlist args = SBX__STRLIST_INIT, env = SBX__STRLIST_INIT;
    struct command *c;
    char *out = NULL;
    int status;

    if (sbx__strlist_push(&args, "-c") != SBX_OK || sbx__strlist_push(&args, script) != SBX_OK) {
        sbx__strlist_clear(&args);
        return NULL;
    }
    c = command_start(s, "sh", &args, "/", &env, sudo, 0, &status, err, errlen);
    sbx__strlist_clear(&args);
    if (!c)
        return NULL;
    pthread_mutex_lock(&g.lock);
    while (!c->exited)
        pthread_cond_wait(&c->cond, &g.lock);
    if ((out = sbx__calloc(1, 257))) {
        size_t len = 0;
        for (size_t i = 0; i < c->nchunks; i++)
            for (size_t k = 0; k < c->chunks[i].len && len < 256; k++)
                out[len++] = c->chunks[i].data[k];
        if (c->exit_code != 0) {
            /* What it said is the reason: keep it for the caller's message. */
            snprintf(err, errlen, "`%s` exited %d: %s", script, c->exit_code, out);
            sbx__free(out);
            out = NULL;
        }
    }
    command_unref(c);
    pthread_mutex_unlock(&g.lock);
    return out;
}

/* Boot a sandbox with the layers as probed; NULL with a message. */
static struct sandbox *self_test_boot(enum netmode mode, char *err, size_t errlen)
{
    struct sandbox *s = sandbox_alloc();
    char rel[96];

    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    make_id(s->id, sizeof s->id, "sbx_selftest");
    snprintf(rel, sizeof rel, "sandboxes/%s/root", s->id);
    s->root = path_join(g.cfg.state_dir, rel);
    s->runtime = sbx__strdup(SBXD_DEFAULT_RUNTIME);
    s->policy = netpolicy_allow_all();
    s->netmode = mode;
    s->vcpus = 1;
    s->memory_mb = 2048;
    pthread_mutex_lock(&g.lock);
    g.running++;
    pthread_mutex_unlock(&g.lock);
    if (!s->root || !s->runtime || !s->policy) {
        snprintf(err, errlen, "out of memory");
    } else if (ids_acquire(&s->ids) < 0) {
        snprintf(err, errlen, "no free host id in the range %u:%u", (unsigned)g.ids.first_uid,
                 (unsigned)g.ids.count);
    } else if (sandbox_prepare_root(s, err, errlen) == 0 && sandbox_boot(s, err, errlen) == 0) {
        pthread_mutex_lock(&g.lock);
        s->status = SBXD_RUNNING;
        s->deadline_mono = mono_ms() + 60000;
        pthread_mutex_unlock(&g.lock);
        return s;
    }
    pthread_mutex_lock(&g.lock);
    if (s->ctx[s->primary].up) {
        s->status = SBXD_RUNNING;
        sandbox_stop_locked(s, false); /* the finalizer releases */
    } else {
        g.running--;
    }
    pthread_mutex_unlock(&g.lock);
    sandbox_release(s);
    sandbox_remove_state(s);
    pthread_mutex_lock(&g.lock);
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

/* Create, use (with sudo too) and stop a real sandbox, and check that the
 * layers said to be on are there. */
static int self_test(char *err, size_t errlen)
{
    enum netmode mode = usernet_mode(NP_ALLOW_ALL);
    struct sandbox *s = self_test_boot(mode, err, errlen);
    char *out;

    if (!s && mode == NET_OPEN) {
        /* Sandboxes work without user-mode networking: allow-all then uses
         * the egress proxy. */
        layer_set(LAYER_NET, false, "sbxd-net failed (%s); allow-all sandboxes reach the outside through "
                                    "the egress proxy only", err);
        s = self_test_boot(NET_ISOLATED, err, errlen);
    }
    if (!s)
        return -1;
    out = probe_cmd(s, "id -u", true, err, errlen);
    g.can_sudo = out && strncmp(out, "0\n", 2) == 0;
    sbx__free(out);
    if (!g.can_sudo)
        sbxd_log(LOG_WARN, "nested user namespaces are not available: commands with sudo will be refused "
                           "(%s)", err);
    out = probe_cmd(s, "grep '^Seccomp:' /proc/self/status", false, err, errlen);
    if (g.layers[LAYER_SECCOMP].on && (!out || !strstr(out, "\t2")))
        layer_set(LAYER_SECCOMP, false, "the kernel did not apply the filter (%s)", out ? out : err);
    sbx__free(out);
    /* The node and python3 every sandbox gets: the host's, whatever a create
     * asks for. Asked once, of the programs a sandbox command finds. */
    {
        char rterr[256] = "out of memory";
        out = probe_cmd(s, runtime_probe_script, false, rterr, sizeof rterr);
        if (!out)
            sbxd_log(LOG_WARN, "the runtime probe failed: %s", rterr);
        runtime_set_probe(out);
        sbx__free(out);
    }
    pthread_mutex_lock(&g.lock);
    sandbox_stop_locked(s, false);
    pthread_mutex_unlock(&g.lock);
    sandbox_remove_state(s);
    pthread_mutex_lock(&g.lock);
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
    return 0;
}

static int setup_token(void)
{
    char *path = g.cfg.token_file ? sbx__strdup(g.cfg.token_file) : path_join(g.cfg.state_dir, "token");
    size_t len = 0;
    char *t;

    if (!path)
        return -1;
    t = read_file(path, 4096, &len);
    if (!t && g.cfg.token_file) {
        fprintf(stderr, "sbxd: cannot read --token-file %s: %s\n", path, strerror(errno));
        sbx__free(path);
        return -1;
    }
    if (!t) {
        /* Opaque, never JWT-shaped: the SDK treats a JWT as an OIDC token. */
        unsigned char rnd[24];
        char tok[64];
        if (random_bytes(rnd, sizeof rnd) < 0) {
            sbx__free(path);
            return -1;
        }
        strcpy(tok, "sbxd_");
        for (size_t i = 0; i < sizeof rnd; i++)
            sprintf(tok + 5 + 2 * i, "%02x", rnd[i]);
        if (write_file_atomic(path, tok, strlen(tok), 0600, true) < 0) {
            fprintf(stderr, "sbxd: cannot write the token to %s: %s\n", path, strerror(errno));
            sbx__free(path);
            return -1;
        }
        t = sbx__strdup(tok);
        len = strlen(tok);
        sbxd_log(LOG_INFO, "generated a token in %s", path);
    }
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
        t[--len] = '\0';
    if (len == 0 || strpbrk(t, " \t\r\n")) {
        fprintf(stderr, "sbxd: the token in %s must be one word without spaces\n", path);
        sbx__free(path);
        sbx__free(t);
        return -1;
    }
    {
        const char *d1 = strchr(t, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
        if (d2 && !strchr(d2 + 1, '.'))
            sbxd_log(LOG_WARN, "the token looks like a JWT; the Vercel SDK will treat it as an OIDC "
                               "token and may replace it. Prefer an opaque token.");
    }
    g.token = t;
    sbx__free(path);
    return 0;
}

/* As root, sandboxes run under ids of their own, and bwrap (which runs as
 * the sandbox's id) must reach their trees and sbxd-init: the state
 * directory is searchable (0711) but not listable, and whatever is private
 * (token, CA key, records, snapshots) stays 0600/0700 inside it. */
static int setup_state_dir(void)
{
    bool root = geteuid() == 0;
    mode_t dmode = root ? 0711 : 0700;
    char real[PATH_MAX], *sub;
    int fd;
    if (mkdir_p(g.cfg.state_dir, 0700) < 0 || !realpath(g.cfg.state_dir, real)) {
        fprintf(stderr, "sbxd: cannot use state directory %s: %s\n", g.cfg.state_dir, strerror(errno));
        return -1;
    }
    /* Without symlinks: extraction refuses any path through one. */
    sbx__free(g.cfg.state_dir);
    g.cfg.state_dir = sbx__strdup(real);
    chmod(real, dmode);
    for (int i = 0; i < 4; i++) {
        static const char *const names[] = {"sandboxes", "snapshots", "named", "libexec"};
        sub = path_join(real, names[i]);
        /* snapshots and named records (which hold create-time env) are sbxd's alone */
        if (!sub || mkdir_p(sub, 0700) < 0 || chmod(sub, i == 1 || i == 2 ? 0700 : dmode) < 0) {
            fprintf(stderr, "sbxd: cannot create %s: %s\n", sub ? sub : real, strerror(errno));
            sbx__free(sub);
            return -1;
        }
        sbx__free(sub);
    }
    sub = path_join(real, "sbxd.lock");
    fd = sub ? open(sub, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
    sbx__free(sub);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "sbxd: another sbxd is using %s (or it cannot be locked: %s)\n", real,
                strerror(errno));
        return -1;
    }
    return 0; /* the lock fd stays open for the life of the process */
}

/* Whether a sandbox's id can search its way to the state directory (the
 * tests and the CLI use directories under /tmp made 0700 by mkdtemp), and
 * through / to the programs it runs (bwrap, its libraries). */
static int check_state_reachable(void)
{
    char path[PATH_MAX];
    struct stat st;

    if (!g.ids.per_sandbox)
        return 0;
    snprintf(path, sizeof path, "%s", g.cfg.state_dir);
    for (char *slash = path + strlen(path); slash >= path; slash = strrchr(path, '/')) {
        *slash = '\0';
        if (!*path)
            snprintf(path, sizeof path, "/"); /* and the root itself, last */
        if (stat(path, &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
            fprintf(stderr,
                    "sbxd: sandboxes run under their own host ids and must be able to pass through\n"
                    "  %s (mode %04o) to reach the state directory %s.\n"
                    "  Fix: chmod o+x %s, or choose another --state-dir.\n",
                    path, (unsigned)(st.st_mode & 07777), g.cfg.state_dir, path);
            return -1;
        }
        if (strcmp(path, "/") == 0)
            break;
    }
    return 0;
}

/* The sbxd-init every sandbox binds, copied where sandbox ids can reach it
 * (the build tree or prefix may not be reachable for them), execute-only:
 * the kernel makes a process whose program its user cannot read
 * non-dumpable from the exec on, so a sandbox process of the same uid
 * cannot ptrace an init in the moment before init makes itself so (a
 * second context's init starts while the sandbox's processes run). */
static int publish_init(void)
{
    size_t len;
    char *data = read_file(g.cfg.init_path, 64u << 20, &len), *dst;
    int r = -1;

    dst = path_join(g.cfg.state_dir, "libexec/sbxd-init");
    if (data && dst && write_file_atomic(dst, data, len, 0111, false) == 0) {
        g.init_copy = dst;
        dst = NULL;
        r = 0;
    } else {
        fprintf(stderr, "sbxd: cannot copy %s into %s/libexec: %s\n", g.cfg.init_path, g.cfg.state_dir,
                strerror(errno));
    }
    sbx__free(dst);
    sbx__free(data);
    return r;
}

/* As root, sbxd mounts a file system per sandbox: in a mount namespace of
 * its own, so the host's mount table never lists them and they vanish with
 * sbxd. Host mounts still propagate in. Must run before any thread starts. */
static bool private_mounts(void)
{
    if (geteuid() != 0)
        return false;
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
        sbxd_log(LOG_WARN, "cannot make a private mount namespace: %s", strerror(errno));
        return false;
    }
    return true;
}

static void stop_everything(void)
{
    pthread_mutex_lock(&g.lock);
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        if (s->status == SBXD_RUNNING || s->status == SBXD_STOPPING || s->status == SBXD_SNAPSHOTTING) {
            sandbox_ref(s);
            sandbox_stop_locked(s, false);
            sandbox_unref(s);
        }
    }
    pthread_mutex_unlock(&g.lock);
}

/* Release everything, so leak checkers see a clean exit. Every sandbox is
 * stopped and every thread joined by now. */
static void free_all(void)
{
    pthread_mutex_lock(&g.lock);
    while (g.sandboxes) {
        struct sandbox *s = g.sandboxes;
        g.sandboxes = s->next;
        sandbox_unref(s);
    }
    while (g.named) {
        struct named *n = g.named;
        g.named = n->next;
        named_unref(n);
    }
    while (g.snapshots) {
        struct snapshot *sn = g.snapshots;
        g.snapshots = sn->next;
        snapshot_free(sn);
    }
    pthread_mutex_unlock(&g.lock);
    sbx__free_secret(g.token);
    sbx__free(g.url);
    sbx__free(g.cfg.listen);
    sbx__free(g.cfg.state_dir);
    sbx__free(g.cfg.token_file);
    sbx__free(g.cfg.bwrap);
    sbx__free(g.cfg.init_path);
    sbx__free(g.cfg.upstream_ca);
    sbx__free(g.cfg.id_range);
    sbx__strlist_clear(&g.cfg.add_hosts);
    sbx__free(g.init_copy);
    sbx__free(g.filter);
    usernet_shutdown();
    disk_shutdown();
    egress_shutdown();
    curl_global_cleanup();
}

/* Leave before serving: what start made on the host (cgroups, the disk
 * template) goes, or every failed start or --check would leave some. */
/* Append to out (", "-separated) the paths of list that exist here. */
static void proc_present(const char *const *list, size_t n, char *out, size_t cap)
{
    struct stat st;
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(out);
        if (lstat(list[i], &st) == 0)
            snprintf(out + used, cap - used, "%s%s", used ? ", " : "", list[i]);
    }
}

static int leave(int status)
{
    limits_shutdown();
    disk_shutdown();
    return status;
}

enum {
    O_LISTEN = 1000, O_STATE, O_TOKEN, O_BWRAP, O_INIT, O_DEFTIMEOUT, O_MAXTIMEOUT, O_MAXSBX,
    O_MAXVCPU, O_PIDS, O_MAXLOG, O_MAXSBXLOG, O_MAXUPLOAD, O_SNAPEXP, O_LOGLEVEL, O_CHECK, O_VERSION,
    O_HELP, O_UPSTREAM_CA, O_IDRANGE, O_DISK, O_INODES, O_ADDHOST, O_DEGRADED, O_UNSAFE_NET,
    O_MAXCONN, O_MAXUNAUTH, O_READTIMEOUT, O_IOTHREADS, O_WORKERS, O_RETAIN, O_RETAIN_OUT, O_SPILL
};

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"state-dir", required_argument, NULL, O_STATE},
        {"token-file", required_argument, NULL, O_TOKEN},
        {"bwrap", required_argument, NULL, O_BWRAP},
        {"init", required_argument, NULL, O_INIT},
        {"default-timeout", required_argument, NULL, O_DEFTIMEOUT},
        {"max-timeout", required_argument, NULL, O_MAXTIMEOUT},
        {"max-sandboxes", required_argument, NULL, O_MAXSBX},
        {"max-vcpus", required_argument, NULL, O_MAXVCPU},
        {"pids-max", required_argument, NULL, O_PIDS},
        {"max-log-bytes", required_argument, NULL, O_MAXLOG},
        {"max-sandbox-log-bytes", required_argument, NULL, O_MAXSBXLOG},
        {"max-upload", required_argument, NULL, O_MAXUPLOAD},
        {"snapshot-expiration", required_argument, NULL, O_SNAPEXP},
        {"log-level", required_argument, NULL, O_LOGLEVEL},
        {"check", no_argument, NULL, O_CHECK},
        {"upstream-ca", required_argument, NULL, O_UPSTREAM_CA},
        {"id-range", required_argument, NULL, O_IDRANGE},
        {"disk-limit", required_argument, NULL, O_DISK},
        {"inode-limit", required_argument, NULL, O_INODES},
        {"add-host", required_argument, NULL, O_ADDHOST},
        {"allow-degraded", no_argument, NULL, O_DEGRADED},
        {"unsafe-host-network", no_argument, NULL, O_UNSAFE_NET},
        {"max-connections", required_argument, NULL, O_MAXCONN},
        {"max-unauthenticated", required_argument, NULL, O_MAXUNAUTH},
        {"read-timeout", required_argument, NULL, O_READTIMEOUT},
        {"io-threads", required_argument, NULL, O_IOTHREADS},
        {"workers", required_argument, NULL, O_WORKERS},
        {"retain-records", required_argument, NULL, O_RETAIN},
        {"retain-output", required_argument, NULL, O_RETAIN_OUT},
        {"spill-after", required_argument, NULL, O_SPILL},
        {"version", no_argument, NULL, O_VERSION},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    struct sbxd_config *c = &g.cfg;
    bool check_only = false;
    sigset_t sigs;
    int sig, o;
    int64_t v;
    char err[2048];
    char *bwrap = NULL;

    /* Few arenas: sbxd's workers come and go, and memory freed in an arena
     * of its own per thread is hard to give back after a burst. */
    mallopt(M_ARENA_MAX, 2);
    /* A connection's 16 KiB pool (libmicrohttpd's) and larger blocks come
     * from mmap: returned whole when freed, never left as holes that the
     * small records allocated between them (commands kept for
     * --retain-output) pin in the heap after a burst. */
    mallopt(M_MMAP_THRESHOLD, 16 * 1024);
    c->listen = sbx__strdup("127.0.0.1:0");
    c->default_timeout_ms = 300000;
    c->max_timeout_ms = 5 * 3600 * 1000;
    c->snapshot_ttl_ms = 7LL * 24 * 3600 * 1000;
    c->default_vcpus = 2;
    c->max_vcpus = 8;
    c->max_sandboxes = 256;
    c->pids_max = 1024;
    c->max_json_body = 4u << 20;
    c->max_upload = 512u << 20;
    c->max_cmd_log = 16u << 20;
    c->max_sandbox_log = 256u << 20;
    c->retain_stopped_ms = 30 * 60 * 1000;
    c->spill_after_ms = 10 * 1000;
    c->retain_records_ms = 7LL * 24 * 3600 * 1000;
    c->max_unauth = 256;
    c->read_timeout_s = 60;
    c->io_threads = 2;
    c->max_workers = 64;
    c->log_level = LOG_INFO;
    c->disk_limit = 8ll << 30;

    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case O_LISTEN: sbx__free(c->listen); c->listen = sbx__strdup(optarg); break;
        case O_STATE: c->state_dir = sbx__strdup(optarg); break;
        case O_TOKEN: c->token_file = sbx__strdup(optarg); break;
        case O_BWRAP: bwrap = optarg; break;
        case O_INIT: c->init_path = sbx__strdup(optarg); break;
        case O_DEFTIMEOUT: if (parse_ms("--default-timeout", optarg, 1000, &c->default_timeout_ms)) return 2; break;
        case O_MAXTIMEOUT: if (parse_ms("--max-timeout", optarg, 1000, &c->max_timeout_ms)) return 2; break;
        case O_MAXSBX: if (parse_i64("--max-sandboxes", optarg, 1, &v)) return 2; c->max_sandboxes = (int)v; break;
        case O_MAXVCPU: if (parse_i64("--max-vcpus", optarg, 1, &v)) return 2; c->max_vcpus = (int)v; break;
        case O_PIDS: if (parse_i64("--pids-max", optarg, 16, &v)) return 2; c->pids_max = (int)v; break;
        case O_MAXLOG: if (parse_i64("--max-log-bytes", optarg, 1024, &v)) return 2; c->max_cmd_log = (size_t)v; break;
        case O_MAXSBXLOG: if (parse_i64("--max-sandbox-log-bytes", optarg, 1024, &v)) return 2; c->max_sandbox_log = (size_t)v; break;
        case O_MAXUPLOAD: if (parse_i64("--max-upload", optarg, 1024, &v)) return 2; c->max_upload = (size_t)v; break;
        case O_SNAPEXP: if (parse_ms("--snapshot-expiration", optarg, 0, &c->snapshot_ttl_ms)) return 2; break;
        case O_LOGLEVEL:
            if (strcmp(optarg, "error") == 0) c->log_level = LOG_ERROR;
            else if (strcmp(optarg, "warn") == 0) c->log_level = LOG_WARN;
            else if (strcmp(optarg, "info") == 0) c->log_level = LOG_INFO;
            else if (strcmp(optarg, "debug") == 0) c->log_level = LOG_DEBUG;
            else { fprintf(stderr, "sbxd: --log-level is error, warn, info or debug\n"); return 2; }
            break;
        case O_CHECK: check_only = true; break;
        case O_UPSTREAM_CA: c->upstream_ca = sbx__strdup(optarg); break;
        case O_IDRANGE: sbx__free(c->id_range); c->id_range = sbx__strdup(optarg); break;
        case O_DISK: if (parse_size("--disk-limit", optarg, 16 << 20, &c->disk_limit)) return 2; break;
        case O_INODES: if (parse_i64("--inode-limit", optarg, 1024, &c->inode_limit)) return 2; break;
        case O_ADDHOST:
            if (!add_host_ok(optarg)) {
                fprintf(stderr, "sbxd: --add-host wants NAME=ADDR (a host name and an IPv4 or IPv6 "
                                "address), not '%s'\n", optarg);
                return 2;
            }
            sbx__strlist_push(&c->add_hosts, optarg);
            break;
        case O_DEGRADED: c->allow_degraded = true; break;
        case O_UNSAFE_NET: c->unsafe_host_net = true; break;
        case O_MAXCONN: if (parse_i64("--max-connections", optarg, 16, &v)) return 2; c->max_conns = (unsigned)(v > 1000000 ? 1000000 : v); break;
        case O_MAXUNAUTH: if (parse_i64("--max-unauthenticated", optarg, 1, &v)) return 2; c->max_unauth = (unsigned)(v > 1000000 ? 1000000 : v); break;
        case O_READTIMEOUT: if (parse_i64("--read-timeout", optarg, 1, &v)) return 2; c->read_timeout_s = (unsigned)(v > 86400 ? 86400 : v); break;
        case O_IOTHREADS: if (parse_i64("--io-threads", optarg, 1, &v)) return 2; c->io_threads = (unsigned)(v > 64 ? 64 : v); break;
        case O_WORKERS: if (parse_i64("--workers", optarg, 1, &v)) return 2; c->max_workers = (unsigned)(v > 4096 ? 4096 : v); break;
        case O_RETAIN: if (parse_ms("--retain-records", optarg, 0, &c->retain_records_ms)) return 2; break;
        case O_RETAIN_OUT: if (parse_ms("--retain-output", optarg, 0, &c->retain_stopped_ms)) return 2; break;
        case O_SPILL: if (parse_ms("--spill-after", optarg, 0, &c->spill_after_ms)) return 2; break;
        case O_VERSION: printf("sbxd %s\n", SBXD_VERSION); return 0;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sbxd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (c->default_timeout_ms > c->max_timeout_ms) {
        fprintf(stderr, "sbxd: --default-timeout is above --max-timeout\n");
        return 2;
    }
    c->bwrap = find_program(bwrap ? bwrap : "bwrap");
    if (!c->bwrap) {
        fprintf(stderr, "sbxd: bubblewrap (%s) was not found. Install it: apt-get install -y bubblewrap\n",
                bwrap ? bwrap : "bwrap");
        return 1;
    }
    if (!c->init_path)
        c->init_path = find_init();
    if (!c->init_path || access(c->init_path, X_OK) != 0) {
        fprintf(stderr, "sbxd: sbxd-init was not found at %s; give its path with --init\n",
                c->init_path ? c->init_path : "?");
        return 1;
    }
    /* Absolute paths: programs are started without a PATH search. */
    {
        char real[PATH_MAX];
        if (realpath(c->init_path, real)) {
            sbx__free(c->init_path);
            c->init_path = sbx__strdup(real);
        }
        if (realpath(c->bwrap, real)) {
            sbx__free(c->bwrap);
            c->bwrap = sbx__strdup(real);
        }
    }
    if (!c->state_dir)
        c->state_dir = default_state_dir();
    /* Before any thread exists: unshare(CLONE_NEWNS) needs a lone thread. */
    bool own_mounts = private_mounts();
    if (!c->state_dir || setup_state_dir() < 0)
        return 1;
    if (ids_setup(c->id_range, err, sizeof err) < 0) {
        fprintf(stderr, "sbxd: %s\n", err);
        return 2;
    }
    if (check_state_reachable() < 0)
        return 1;
    if (publish_init() < 0)
        return 1;
    if (g.ids.per_sandbox)
        layer_set(LAYER_IDS, true, "each sandbox runs as host uid/gid of its own from %u-%u (%s); "
                                   "none is root",
                  (unsigned)g.ids.first_uid, (unsigned)(g.ids.first_uid + g.ids.count - 1), g.ids.source);
    else
        layer_set(LAYER_IDS, false, "sbxd is not root, so every sandbox runs as its uid %u, which also "
                                    "owns sbxd's state; run sbxd as root for per-sandbox host ids",
                  (unsigned)g.ids.first_uid);

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    launcher_raise_nofile();
    if (!c->max_conns)
        c->max_conns = http_default_max_conns();
    seccomp_probe();
    limits_probe();
    {
        /* What sbxd-init covers: the paths of its lists this kernel has. */
        char ro[256], masked[256];
        ro[0] = masked[0] = '\0';
        proc_present(procmask_read_only, SBX__ARRAY_LEN(procmask_read_only), ro, sizeof ro);
        proc_present(procmask_files, SBX__ARRAY_LEN(procmask_files), masked, sizeof masked);
        proc_present(procmask_dirs, SBX__ARRAY_LEN(procmask_dirs), masked, sizeof masked);
        layer_set(LAYER_PROC, true, "%s read-only; %s masked; no /sys; /dev read-only", ro,
                  masked[0] ? masked : "nothing to be");
    }
    if (mitm_init(err, sizeof err) < 0) {
        if (c->upstream_ca) {
            fprintf(stderr, "sbxd: %s\n", err);
            return leave(1);
        }
        sbxd_log(LOG_WARN, "%s: network policies with injectionRules will be refused", err);
    }
    else
        g.can_inject = true;
    if (launcher_start() < 0 || io_start() < 0) {
        fprintf(stderr, "sbxd: cannot start its threads\n");
        return leave(1);
    }
    disk_probe(own_mounts);
    usernet_probe();
    if (self_test(err, sizeof err) < 0) {
        explain_failure(err);
        return leave(1);
    }
    if (check_only) {
        printf("sbxd: sandboxes can be created here (bwrap %s, sudo: %s); isolation layers:\n", c->bwrap,
               g.can_sudo ? "yes" : "no");
        layers_print(stdout);
        runtime_print(stdout);
        fflush(stdout);
        return leave(layers_enforce() < 0 ? 1 : 0);
    }
    if (layers_enforce() < 0)
        return leave(1);
    if (setup_token() < 0)
        return leave(1);
    runtime_log();
    pthread_mutex_lock(&g.lock);
    int nsbx = sandbox_load_all(), nsnap = snapshot_load_all(), npruned = sandbox_prune_records();
    int nnamed = named_load_all();
    pthread_mutex_unlock(&g.lock);
    if (g.orphans_found)
        sbxd_log(LOG_INFO, "%d sandboxes were running when the previous sbxd ended: marked stopped, "
                 "their file systems removed (%d still mounted, now unmounted); their processes and "
                 "network helpers died with it", g.orphans_found, g.orphan_mounts);
    if (npruned)
        sbxd_log(LOG_INFO, "removed the records of %d sandboxes stopped more than %lld ms ago "
                 "(--retain-records)", npruned, (long long)c->retain_records_ms);
    if (nsbx > 0 || nsnap > 0 || nnamed > 0)
        sbxd_log(LOG_INFO, "loaded %d earlier sessions (all stopped), %d named sandboxes and %d snapshots",
                 nsbx - npruned, nnamed, nsnap);
    if (http_start() < 0)
        return leave(1);
    sbxd_log(LOG_INFO, "state in %s, bwrap %s, limits %s", c->state_dir, c->bwrap, limits_backend());
    printf("sbxd listening on %s\n", g.url);
    fflush(stdout);

    do {
        if (sigwait(&sigs, &sig) != 0)
            break;
    } while (sig == SIGHUP);
    sbxd_log(LOG_INFO, "signal %d: stopping every sandbox", sig);
    stop_everything(); /* ends the streams the requests in flight follow */
    http_stop();
    /* Those requests may have started sessions meanwhile (a create or a
     * resume that was booting one): with every worker gone, none can
     * start another. */
    stop_everything();
    io_stop();
    launcher_stop();
    limits_shutdown();
    free_all();
    sbxd_log(LOG_INFO, "bye");
    return 0;
}
