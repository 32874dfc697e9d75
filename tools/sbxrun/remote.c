/* SPDX-License-Identifier: MIT */
/*
 * remote: which endpoint a subcommand talks to, and the client for it.
 *
 * In order: --endpoint (or SBXRUN_ENDPOINT) with --token-file (or
 * SBXRUN_TOKEN; for a unix socket, else the file 'token' beside it, which
 * the library reads); Vercel when VERCEL_OIDC_TOKEN or VERCEL_TOKEN is set;
 * else the local sbxd at STATE/sbxd.sock (STATE as sbxd's default:
 * /var/lib/sbxd for root, else $XDG_STATE_HOME/sbxd or ~/.local/state/sbxd),
 * token from STATE/token, beside it. A one-shot job (exec without --sandbox) that finds no local
 * sbxd starts a private one for its duration.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote.h"

struct remote_opts remote_defaults;

/* A bearer token is a few dozen bytes (sbxd's) to a few KiB (an OIDC JWT);
 * a larger file is not one, and is refused rather than cut short. */
#define TOKEN_FILE_MAX 16384

/* Token bytes are overwritten before their memory goes back. */
static void wipe_free(char *p, size_t n)
{
    if (p)
        explicit_bzero(p, n);
    free(p);
}

static char *read_token_file(const char *path, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO given by mistake is refused below, not waited on. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    char *buf;
    ssize_t n;
    if (fd < 0) {
        snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "the token file %s is not a regular file", path);
        close(fd);
        return NULL;
    }
    if (!(buf = malloc(TOKEN_FILE_MAX + 2))) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }
    /* To its end: one read may bring less (FUSE, network file systems). */
    for (n = 0;;) {
        ssize_t k = read(fd, buf + n, (size_t)(TOKEN_FILE_MAX + 1 - n));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k < 0)
                n = -1;
            break;
        }
        if ((n += k) > TOKEN_FILE_MAX)
            break;
    }
    close(fd);
    if (n < 0 || n > TOKEN_FILE_MAX) {
        if (n < 0)
            snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
        else
            snprintf(err, errlen, "the token file %s is larger than %d bytes: not a token", path, TOKEN_FILE_MAX);
        wipe_free(buf, TOKEN_FILE_MAX + 2);
        return NULL;
    }
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (!n) {
        snprintf(err, errlen, "the token file %s is empty", path);
        wipe_free(buf, TOKEN_FILE_MAX + 2);
        return NULL;
    }
    return buf;
}

static char *state_dir(void)
{
    const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char buf[PATH_MAX];
    if (geteuid() == 0)
        return strdup("/var/lib/sbxd");
    if (x && *x)
        snprintf(buf, sizeof buf, "%s/sbxd", x);
    else if (home && *home)
        snprintf(buf, sizeof buf, "%s/.local/state/sbxd", home);
    else
        return strdup("/tmp/sbxd");
    return strdup(buf);
}

/* Whether something accepts connections on this unix socket. */
static bool socket_alive(const char *path)
{
    struct sockaddr_un a;
    int fd, r;
    if (strlen(path) >= sizeof a.sun_path)
        return false;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    strcpy(a.sun_path, path);
    r = connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    return r == 0;
}

/* sbxd next to this program (installed, or in the build tree), else PATH. */
static char *find_sbxd(void)
{
    char self[PATH_MAX], cand[PATH_MAX + 32];
    const char *env = getenv("SBXD");
    ssize_t n;
    if (env && *env)
        return strdup(env);
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        char *slash;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(cand, sizeof cand, "%s/sbxd", self);
            if (access(cand, X_OK) == 0)
                return strdup(cand);
            snprintf(cand, sizeof cand, "%s/../sbxd/sbxd", self);
            if (access(cand, X_OK) == 0)
                return strdup(cand);
        }
    }
    return strdup("sbxd");
}

/* Start a private sbxd in a new temporary directory; fills r. */
static int start_private(struct remote *r, char *err, size_t errlen)
{
    char tmpl[PATH_MAX - 64], sock[PATH_MAX], state[PATH_MAX], listen_arg[PATH_MAX + 8], line[512];
    char tokpath[PATH_MAX + 8];
    char *sbxd = find_sbxd();
    const char *tmp = getenv("TMPDIR");
    int out[2];
    pid_t pid, self = getpid();
    FILE *f;

    /* In TMPDIR as mktemp(1) would, unless the socket's path would not fit
     * a sockaddr_un there. */
    if (!tmp || *tmp != '/' || strlen(tmp) + sizeof "/sbxrun-XXXXXX/sbxd.sock" > sizeof ((struct sockaddr_un *)0)->sun_path)
        tmp = "/tmp";
    snprintf(tmpl, sizeof tmpl, "%s/sbxrun-XXXXXX", tmp);
    if (!mkdtemp(tmpl)) {
        snprintf(err, errlen, "cannot make a temporary directory: %s", strerror(errno));
        free(sbxd);
        return -1;
    }
    r->tmpdir = strdup(tmpl);
    /* sbxd run as root gives sandboxes host ids of their own, which must
     * pass through this directory to the state inside (listing stays
     * closed). */
    if (geteuid() == 0)
        chmod(tmpl, 0711);
    snprintf(sock, sizeof sock, "%s/sbxd.sock", tmpl);
    snprintf(state, sizeof state, "%s/state", tmpl);
    snprintf(listen_arg, sizeof listen_arg, "unix:%s", sock);
    if (pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(sbxd);
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        free(sbxd);
        return -1;
    }
    if (pid == 0) {
        int null_fd = open("/dev/null", O_WRONLY);
        char logp[PATH_MAX + 16];
        int log_fd;
        snprintf(logp, sizeof logp, "%s/sbxd.log", tmpl);
        log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out[1], 1);
        dup2(log_fd >= 0 ? log_fd : null_fd, 2);
        setpgid(0, 0);
        /* An sbxrun killed with SIGKILL cannot stop its private sbxd: the
         * kernel sends it SIGTERM, on which it stops every sandbox. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != self)
            _exit(127);
        execlp(sbxd, sbxd, "--listen", listen_arg, "--state-dir", state, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    r->sbxd_pid = pid;
    f = fdopen(out[0], "r");
    if (!f || !fgets(line, sizeof line, f) || strncmp(line, "sbxd listening on ", 18) != 0) {
        char logp[PATH_MAX + 16], tail[900] = "";
        const char *hint = "";
        FILE *lf;
        if (f)
            fclose(f);
        snprintf(logp, sizeof logp, "%s/sbxd.log", tmpl);
        /* The end of its log says why (the reason comes last). */
        const char *from = tail;
        if ((lf = fopen(logp, "r"))) {
            size_t n;
            bool cut = fseek(lf, -(long)(sizeof tail - 1), SEEK_END) == 0;
            if (!cut)
                rewind(lf);
            n = fread(tail, 1, sizeof tail - 1, lf);
            tail[n] = '\0';
            fclose(lf);
            if (cut && strchr(tail, '\n'))
                from = strchr(tail, '\n') + 1; /* from a line's start */
        }
        if (strstr(from, "--allow-degraded"))
            hint = " (it runs with every isolation layer or not at all: run sbxrun as root, or start "
                   "sbxd --allow-degraded --listen unix:PATH yourself and give sbxrun --endpoint "
                   "unix:PATH)";
        snprintf(err, errlen, "could not start a local sbxd (%s)%s%s%s", sbxd, hint, *from ? ":\n" : "", from);
        free(sbxd);
        return -1;
    }
    fclose(f);
    free(sbxd);
    snprintf(tokpath, sizeof tokpath, "%s/token", state);
    r->token = read_token_file(tokpath, err, errlen);
    if (!r->token)
        return -1;
    r->endpoint = malloc(strlen(listen_arg) + 1);
    strcpy(r->endpoint, listen_arg);
    return 0;
}

sbx_status remote_open(struct remote *r, const struct remote_opts *o, bool allow_private, char *err, size_t errlen)
{
    const char *ep = o->endpoint ? o->endpoint : getenv("SBXRUN_ENDPOINT");
    sbx_status st;

    memset(r, 0, sizeof *r);
    if (ep && *ep) {
        r->endpoint = strdup(ep);
        if (o->token_file && !(r->token = read_token_file(o->token_file, err, errlen)))
            return SBX_E_AUTH;
        /* Else the library finds it as for any program: SBXRUN_TOKEN for an
         * sbxd endpoint, the token file beside a unix socket, or the
         * VERCEL_* variables for Vercel's (sbx_client_resolve_credentials). */
    } else if ((getenv("VERCEL_OIDC_TOKEN") && *getenv("VERCEL_OIDC_TOKEN")) ||
               (getenv("VERCEL_TOKEN") && *getenv("VERCEL_TOKEN"))) {
        r->endpoint = NULL; /* the library's default, credentials from the environment */
    } else {
        char *st_dir = state_dir(), sock[PATH_MAX];
        snprintf(sock, sizeof sock, "%s/sbxd.sock", st_dir);
        if (socket_alive(sock)) {
            /* Its token is STATE/token, beside the socket: the library
             * reads it (sbx_client_resolve_credentials below). */
            size_t n = strlen(sock) + 6;
            r->endpoint = malloc(n);
            snprintf(r->endpoint, n, "unix:%s", sock);
            free(st_dir);
        } else if (allow_private) {
            free(st_dir);
            if (start_private(r, err, errlen) < 0)
                return SBX_E_TRANSPORT;
        } else {
            snprintf(err, errlen,
                     "no endpoint: set VERCEL_OIDC_TOKEN (or VERCEL_TOKEN and VERCEL_PROJECT_ID) for Vercel, "
                     "or start a local sbxd (sbxd --listen unix:%s &), or give --endpoint",
                     sock);
            free(st_dir);
            return SBX_E_TRANSPORT;
        }
    }
    r->client = sbx_client_new();
    if (!r->client) {
        snprintf(err, errlen, "out of memory");
        return SBX_E_NOMEM;
    }
    if (r->endpoint && (st = sbx_client_set_endpoint(r->client, r->endpoint)) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_client_last_error(r->client));
        return st;
    }
    if (r->token && (st = sbx_client_set_credentials(r->client, r->token, NULL, NULL)) != SBX_OK) {
        snprintf(err, errlen, "%s", sbx_client_last_error(r->client));
        return st;
    }
    {
        const char *proto = o->protocol ? o->protocol : getenv("SBXRUN_PROTOCOL");
        if (proto && *proto && sbx_client_set_option(r->client, "protocol", proto) != SBX_OK) {
            snprintf(err, errlen, "--protocol %s: v1 or v2%s", proto, o->protocol ? "" : " (SBXRUN_PROTOCOL)");
            return SBX_E_INVALID_ARG;
        }
    }
    {
        int64_t ms = REMOTE_REQUEST_TIMEOUT_MS;
        char why[300], buf[32];
        if (o->request_timeout && cli_parse_duration(o->request_timeout, 0, &ms, why, sizeof why) < 0) {
            snprintf(err, errlen, "--request-timeout %s (0 for none)", why);
            return SBX_E_INVALID_ARG;
        }
        snprintf(buf, sizeof buf, "%lld", (long long)ms);
        if (sbx_client_set_option(r->client, "timeout_ms", buf) != SBX_OK) {
            snprintf(err, errlen, "--request-timeout %s: %s", o->request_timeout, sbx_client_last_error(r->client));
            return SBX_E_INVALID_ARG;
        }
    }
    if ((st = sbx_client_resolve_credentials(r->client)) != SBX_OK) {
        /* The library's advice names its own call; here it is an option. */
        const char *m = sbx_client_last_error(r->client), *call = strstr(m, "to sbx_client_set_credentials()");
        if (call)
            snprintf(err, errlen, "%.*swith --token-file FILE%s", (int)(call - m), m,
                     call + strlen("to sbx_client_set_credentials()"));
        else
            snprintf(err, errlen, "%s", m);
        return st;
    }
    return SBX_OK;
}

void remote_close(struct remote *r)
{
    sbx_client_free(r->client);
    if (r->sbxd_pid > 0) {
        int status;
        kill(r->sbxd_pid, SIGTERM);
        waitpid(r->sbxd_pid, &status, 0);
    }
    if (r->tmpdir) {
        cli_rm_tree(r->tmpdir);
        free(r->tmpdir);
    }
    if (r->token) {
        explicit_bzero(r->token, strlen(r->token));
        free(r->token);
    }
    free(r->endpoint);
    memset(r, 0, sizeof *r);
}

sbx_status remote_fetch(sbx_sandbox *s, const char *ref, bool resume, char *err, size_t errlen)
{
    sbx_status st = sbx_sandbox_fetch(s, ref), named;
    if (st == SBX_OK || st != SBX_E_NOT_FOUND) {
        if (st != SBX_OK)
            snprintf(err, errlen, "%s", sbx_sandbox_last_error(s));
        return st;
    }
    /* Not a sandbox (v2: session) id: a named sandbox's (v2), whose
     * current session is the one meant, started when asked for. */
    snprintf(err, errlen, "%s", sbx_sandbox_last_error(s));
    named = sbx_sandbox_fetch_named(s, ref);
    if (named == SBX_OK && resume)
        named = sbx_sandbox_resume(s);
    if (named == SBX_OK)
        return SBX_OK;
    if (named == SBX_E_NOT_FOUND)
        snprintf(err, errlen, "no sandbox has the id or the name %s", ref);
    else if (named != SBX_E_UNSUPPORTED) /* v1: names do not exist, the id's error stands */
        snprintf(err, errlen, "%s", sbx_sandbox_last_error(s));
    return named == SBX_E_UNSUPPORTED ? st : named;
}

/* ---- output helpers ------------------------------------------------------------------------- */

int fail_msg(bool json, const char *cmd, int exit_code, const char *what, sbx_status st, const char *msg)
{
    char text[1200];
    size_t n = strlen(what);
    if (!msg || !*msg)
        msg = sbx_strerror(st);
    /* The library's message may start with what failed already. */
    if (strcmp(what, cmd) == 0 || (strncmp(msg, what, n) == 0 && msg[n] == ':'))
        snprintf(text, sizeof text, "%s", msg);
    else
        snprintf(text, sizeof text, "%s: %s", what, msg);
    /* A request's deadline: the option that sets it (not the kill after a
     * command's deadline, whose grace is fixed). */
    if (st == SBX_E_TIMEOUT && strstr(text, "the request's deadline") && !strstr(text, "killing it failed"))
        snprintf(text + strlen(text), sizeof text - strlen(text), "; --request-timeout sets it");
    if (json)
        cli_json_error(cmd, exit_code, what, st, text);
    fprintf(stderr, "sbxrun %s: %s\n", cmd, text);
    return exit_code;
}

json_t *remote_list_page(struct remote *r, const struct remote_opts *o, const char *cmd, const char *what,
                         sbx_status st, char *page, int *rc)
{
    json_t *j = NULL;
    *rc = SBXRUN_EXIT_OK;
    if (st != SBX_OK)
        *rc = fail_msg(o->json, cmd, remote_exit(st), what, st, sbx_client_last_error(r->client));
    else if (o->json)
        cli_json_result(cmd, SBXRUN_EXIT_OK, cli_json_parse(page));
    else if (!(j = json_loads(page, 0, NULL)))
        *rc = fail_msg(false, cmd, SBXRUN_EXIT_FAIL, what, SBX_E_NOMEM, "out of memory");
    sbx_free(page);
    return j;
}

int remote_open_exit(sbx_status st)
{
    return st == SBX_E_INVALID_ARG ? SBXRUN_EXIT_USAGE : SBXRUN_EXIT_CANNOT_RUN;
}

int remote_exit(sbx_status st)
{
    switch (st) {
    case SBX_OK: return SBXRUN_EXIT_OK;
    case SBX_E_NOMEM:
    case SBX_E_IO:
    case SBX_E_AUTH:
    case SBX_E_TRANSPORT:
    case SBX_E_PROTOCOL:
    case SBX_E_TIMEOUT:
    case SBX_E_CANCELLED:
    case SBX_E_RATE_LIMITED:
    case SBX_E_INTERNAL: return SBXRUN_EXIT_CANNOT_RUN;
    case SBX_E_POLICY_DENIED: return SBXRUN_EXIT_DENIED;
    default: return SBXRUN_EXIT_FAIL;
    }
}

int remote_fetch_exit(sbx_status st)
{
    return st == SBX_E_NOT_FOUND ? SBXRUN_EXIT_CANNOT_RUN : remote_exit(st);
}
