/* SPDX-License-Identifier: MIT */
/*
 * sbxd: a local server speaking the Vercel Sandbox v1 API, each sandbox a set
 * of Linux namespaces made with bubblewrap. See doc/man/sbxd.8.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "mitm.h"
#include "sbxd.h"

#ifndef SBXD_LIBEXECDIR
#define SBXD_LIBEXECDIR "/usr/local/libexec"
#endif

struct sbxd g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void usage(FILE *out)
{
    fprintf(out,
"usage: sbxd [options]\n"
"\n"
"A local server for the Vercel Sandbox v1 API: every sandbox is a set of Linux\n"
"namespaces made with bubblewrap, its workspace at /vercel/sandbox.\n"
"\n"
"  --listen ADDR           127.0.0.1:PORT, [::1]:PORT (PORT 0 picks one) or\n"
"                          unix:PATH (mode 0600); loopback only [127.0.0.1:0]\n"
"  --state-dir DIR         sandboxes, snapshots, token [/var/lib/sbxd as root,\n"
"                          else $XDG_STATE_HOME/sbxd or ~/.local/state/sbxd]\n"
"  --token-file FILE       the bearer token clients must send [a random token\n"
"                          kept in STATE-DIR/token, mode 0600]\n"
"  --bwrap PROGRAM         bubblewrap [bwrap]\n"
"  --init PROGRAM          sbxd-init [next to sbxd, else %s/sbxd-init]\n"
"  --default-timeout MS    sandbox lifetime when create gives none [300000]\n"
"  --max-timeout MS        longest lifetime, extensions included [18000000]\n"
"  --max-sandboxes N       sandboxes running at once [256]\n"
"  --max-vcpus N           largest resources.vcpus [8]\n"
"  --pids-max N            processes per sandbox [1024]\n"
"  --max-log-bytes N       stored output per command [16777216]\n"
"  --max-sandbox-log-bytes N  stored output per sandbox [268435456]\n"
"  --max-upload BYTES      largest fs/write body and tarball source [536870912]\n"
"  --snapshot-expiration MS  default snapshot lifetime, 0 = never [604800000]\n"
"  --upstream-ca FILE      CA certificates (PEM) the egress proxy also trusts when it\n"
"                          connects upstream for header injection [host store only]\n"
"  --log-level LEVEL       error, warn, info or debug [info]\n"
"  --check                 check that sandboxes can be created, then exit\n"
"  --version, --help\n"
"\n"
"On start sbxd prints one line, \"sbxd listening on URL\", to stdout; logs go to\n"
"stderr. SIGINT or SIGTERM stops every sandbox and exits.\n",
            SBXD_LIBEXECDIR);
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

/* Create, use (with sudo too) and stop a real sandbox. */
static int self_test(char *err, size_t errlen)
{
    struct sandbox *s = sandbox_alloc();
    struct command *c;
    sbx__strlist args = SBX__STRLIST_INIT, env = SBX__STRLIST_INIT;
    char rel[96];
    int status, rc = -1;

    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    make_id(s->id, sizeof s->id, "sbx_selftest");
    snprintf(rel, sizeof rel, "sandboxes/%s/root", s->id);
    s->root = path_join(g.cfg.state_dir, rel);
    s->runtime = sbx__strdup("node24");
    s->policy = netpolicy_allow_all();
    s->netmode = NET_HOST;
    s->vcpus = 1;
    s->memory_mb = 2048;
    if (!s->root || !s->runtime || !s->policy) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    pthread_mutex_lock(&g.lock);
    g.running++;
    pthread_mutex_unlock(&g.lock);
    if (sandbox_prepare_root(s, err, errlen) < 0 || sandbox_boot(s, err, errlen) < 0) {
        pthread_mutex_lock(&g.lock);
        g.running--;
        pthread_mutex_unlock(&g.lock);
        limits_destroy(s->limits);
        s->limits = NULL;
        goto out;
    }
    pthread_mutex_lock(&g.lock);
    s->status = SBX_RUNNING;
    s->deadline_mono = mono_ms() + 60000;
    pthread_mutex_unlock(&g.lock);
    sbx__strlist_push(&args, "-u");
    c = command_start(s, "id", &args, "/", &env, true, &status, err, errlen);
    if (c) {
        pthread_mutex_lock(&g.lock);
        while (!c->exited)
            pthread_cond_wait(&c->cond, &g.lock);
        g.can_sudo = c->exit_code == 0 && c->nchunks > 0 && strncmp(c->chunks[0].data, "0", 1) == 0;
        command_unref(c);
        pthread_mutex_unlock(&g.lock);
        if (!g.can_sudo)
            sbxd_log(LOG_WARN, "nested user namespaces are not available: commands with sudo "
                               "will be refused");
        rc = 0;
    }
    pthread_mutex_lock(&g.lock);
    sandbox_stop_locked(s, false);
    pthread_mutex_unlock(&g.lock);
out:
    sbx__strlist_clear(&args);
    sandbox_remove_state(s);
    pthread_mutex_lock(&g.lock);
    sandbox_unref(s);
    pthread_mutex_unlock(&g.lock);
    return rc;
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

static int setup_state_dir(void)
{
    char real[PATH_MAX], *sub;
    int fd;
    if (mkdir_p(g.cfg.state_dir, 0700) < 0 || !realpath(g.cfg.state_dir, real)) {
        fprintf(stderr, "sbxd: cannot use state directory %s: %s\n", g.cfg.state_dir, strerror(errno));
        return -1;
    }
    /* Without symlinks: extraction refuses any path through one. */
    sbx__free(g.cfg.state_dir);
    g.cfg.state_dir = sbx__strdup(real);
    chmod(real, 0700);
    for (int i = 0; i < 2; i++) {
        sub = path_join(real, i ? "snapshots" : "sandboxes");
        if (!sub || mkdir_p(sub, 0700) < 0) {
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

static void stop_everything(void)
{
    pthread_mutex_lock(&g.lock);
    for (struct sandbox *s = g.sandboxes; s; s = s->next) {
        if (s->status == SBX_RUNNING || s->status == SBX_STOPPING || s->status == SBX_SNAPSHOTTING) {
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
    curl_global_cleanup();
}

enum {
    O_LISTEN = 1000, O_STATE, O_TOKEN, O_BWRAP, O_INIT, O_DEFTIMEOUT, O_MAXTIMEOUT, O_MAXSBX,
    O_MAXVCPU, O_PIDS, O_MAXLOG, O_MAXSBXLOG, O_MAXUPLOAD, O_SNAPEXP, O_LOGLEVEL, O_CHECK, O_VERSION,
    O_HELP, O_UPSTREAM_CA
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
    c->log_level = LOG_INFO;

    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case O_LISTEN: sbx__free(c->listen); c->listen = sbx__strdup(optarg); break;
        case O_STATE: c->state_dir = sbx__strdup(optarg); break;
        case O_TOKEN: c->token_file = sbx__strdup(optarg); break;
        case O_BWRAP: bwrap = optarg; break;
        case O_INIT: c->init_path = sbx__strdup(optarg); break;
        case O_DEFTIMEOUT: if (parse_i64("--default-timeout", optarg, 1000, &c->default_timeout_ms)) return 2; break;
        case O_MAXTIMEOUT: if (parse_i64("--max-timeout", optarg, 1000, &c->max_timeout_ms)) return 2; break;
        case O_MAXSBX: if (parse_i64("--max-sandboxes", optarg, 1, &v)) return 2; c->max_sandboxes = (int)v; break;
        case O_MAXVCPU: if (parse_i64("--max-vcpus", optarg, 1, &v)) return 2; c->max_vcpus = (int)v; break;
        case O_PIDS: if (parse_i64("--pids-max", optarg, 16, &v)) return 2; c->pids_max = (int)v; break;
        case O_MAXLOG: if (parse_i64("--max-log-bytes", optarg, 1024, &v)) return 2; c->max_cmd_log = (size_t)v; break;
        case O_MAXSBXLOG: if (parse_i64("--max-sandbox-log-bytes", optarg, 1024, &v)) return 2; c->max_sandbox_log = (size_t)v; break;
        case O_MAXUPLOAD: if (parse_i64("--max-upload", optarg, 1024, &v)) return 2; c->max_upload = (size_t)v; break;
        case O_SNAPEXP: if (parse_i64("--snapshot-expiration", optarg, 0, &c->snapshot_ttl_ms)) return 2; break;
        case O_LOGLEVEL:
            if (strcmp(optarg, "error") == 0) c->log_level = LOG_ERROR;
            else if (strcmp(optarg, "warn") == 0) c->log_level = LOG_WARN;
            else if (strcmp(optarg, "info") == 0) c->log_level = LOG_INFO;
            else if (strcmp(optarg, "debug") == 0) c->log_level = LOG_DEBUG;
            else { fprintf(stderr, "sbxd: --log-level is error, warn, info or debug\n"); return 2; }
            break;
        case O_CHECK: check_only = true; break;
        case O_UPSTREAM_CA: c->upstream_ca = sbx__strdup(optarg); break;
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
    if (!c->state_dir || setup_state_dir() < 0)
        return 1;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    launcher_raise_nofile();
    limits_probe();
    if (mitm_init(err, sizeof err) < 0) {
        if (c->upstream_ca) {
            fprintf(stderr, "sbxd: %s\n", err);
            return 1;
        }
        sbxd_log(LOG_WARN, "%s: network policies with injectionRules will be refused", err);
    }
    else
        g.can_inject = true;
    if (launcher_start() < 0 || io_start() < 0) {
        fprintf(stderr, "sbxd: cannot start its threads\n");
        return 1;
    }
    if (self_test(err, sizeof err) < 0) {
        explain_failure(err);
        return 1;
    }
    if (check_only) {
        printf("sbxd: sandboxes can be created here (bwrap %s, limits: %s, sudo: %s)\n", c->bwrap,
               limits_backend(), g.can_sudo ? "yes" : "no");
        return 0;
    }
    if (setup_token() < 0)
        return 1;
    pthread_mutex_lock(&g.lock);
    int nsbx = sandbox_load_all(), nsnap = snapshot_load_all();
    pthread_mutex_unlock(&g.lock);
    if (nsbx > 0 || nsnap > 0)
        sbxd_log(LOG_INFO, "loaded %d earlier sandboxes (all stopped) and %d snapshots", nsbx, nsnap);
    if (http_start() < 0)
        return 1;
    sbxd_log(LOG_INFO, "state in %s, bwrap %s, limits %s", c->state_dir, c->bwrap, limits_backend());
    printf("sbxd listening on %s\n", g.url);
    fflush(stdout);

    do {
        if (sigwait(&sigs, &sig) != 0)
            break;
    } while (sig == SIGHUP);
    sbxd_log(LOG_INFO, "signal %d: stopping every sandbox", sig);
    stop_everything();
    http_stop();
    io_stop();
    launcher_stop();
    limits_shutdown();
    free_all();
    sbxd_log(LOG_INFO, "bye");
    return 0;
}
