/* SPDX-License-Identifier: MIT */
/*
 * source: populate a new sandbox's workspace from a git repository or a
 * tarball, as create's `source` asks. A clone is untrusted work, so git runs
 * in a throwaway sandbox of its own that sees only the new workspace, with
 * the sandbox's host ids, its seccomp filter, a hardened /proc and a network
 * namespace with user-mode networking (the new sandbox's own policy may be
 * deny-all: like Vercel, the platform fetches the source). Tarballs are
 * downloaded with libcurl and extracted with the checks in tarx.c.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/alloc.h"
#include "tarx.h"
#include "sbxd.h"

#define FETCH_TIMEOUT_MS (10 * 60 * 1000)
#define LOCAL_REPO_FD 9 /* a local repository, opened by sbxd, at this fd */

/* A local repository is opened by sbxd and reached through its fd: the
 * sandbox's id may not search the path to it. It is first copied as a bare
 * repository (a local clone reads files only), so fetches by revision and
 * --depth work as they do from a URL. */
static const char GIT_SCRIPT[] =
    "set -e\n"
    "url=$1 depth=$2 rev=$3 local=$4\n"
    "if [ -n \"$local\" ]; then\n"
    "  git clone -q --bare --no-hardlinks /proc/self/fd/9 /tmp/src.git\n"
    "  url=file:///tmp/src.git\n"
    "fi\n"
    "cd /vercel/sandbox\n"
    "if [ -z \"$rev\" ]; then\n"
    "  git clone -q ${depth:+--depth \"$depth\"} -- \"$url\" .\n"
    "elif printf %s \"$rev\" | grep -Eq '^[0-9a-fA-F]{7,40}$'; then\n"
    "  git init -q .\n"
    "  git remote add origin \"$url\"\n"
    "  git fetch -q ${depth:+--depth \"$depth\"} origin \"$rev\" 2>/dev/null || git fetch -q origin\n"
    "  git checkout -q --detach \"$rev\" 2>/dev/null || git checkout -q --detach FETCH_HEAD\n"
    "else\n"
    "  git clone -q ${depth:+--depth \"$depth\"} --branch \"$rev\" -- \"$url\" .\n"
    "fi\n"
    "if [ -n \"$local\" ]; then git remote set-url origin \"$1\"; fi\n";

static int add(sbx__strlist *a, const char *s)
{
    return sbx__strlist_push(a, s) == SBX_OK ? 0 : -1;
}

/* A memfd holding text, for bwrap's --ro-bind-data. */
static int data_fd(const char *text)
{
    int fd = memfd_create("sbxd-data", MFD_CLOEXEC);
    size_t n = strlen(text);
    if (fd < 0)
        return -1;
    if (write(fd, text, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int fetcher_args(sbx__strlist *a, const char *workspace, bool seccomp, sbx__strlist *env,
                        const char *const *cmd)
{
    static const char *const ro[] = {"/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates",
                                     "/etc/ld.so.cache", "/etc/alternatives", "/etc/passwd", "/etc/group"};
    static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

    if (add(a, g.cfg.bwrap) || add(a, "--unshare-user") || add(a, "--uid") || add(a, "1000") ||
        add(a, "--gid") || add(a, "1000") || add(a, "--unshare-pid") || add(a, "--unshare-ipc") ||
        add(a, "--unshare-uts") || add(a, "--unshare-net") || add(a, "--unshare-cgroup-try") ||
        add(a, "--die-with-parent") || add(a, "--new-session") || add(a, "--cap-drop") || add(a, "ALL") ||
        add(a, "--info-fd") || add(a, "4") || (seccomp && (add(a, "--seccomp") || add(a, "5"))) ||
        add(a, "--tmpfs") || add(a, "/") || add(a, "--ro-bind") || add(a, "/usr") || add(a, "/usr"))
        return -1;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        struct stat st;
        char target[256];
        ssize_t n;
        if (lstat(top[i], &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode) && (n = readlink(top[i], target, sizeof target - 1)) > 0) {
            target[n] = '\0';
            if (add(a, "--symlink") || add(a, target) || add(a, top[i]))
                return -1;
        } else if (add(a, "--ro-bind") || add(a, top[i]) || add(a, top[i])) {
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++)
        if (add(a, "--ro-bind-try") || add(a, ro[i]) || add(a, ro[i]))
            return -1;
    if (add(a, "--ro-bind-data") || add(a, "6") || add(a, "/etc/hosts") || add(a, "--ro-bind-data") ||
        add(a, "7") || add(a, "/etc/resolv.conf") || add(a, "--ro-bind-data") || add(a, "8") ||
        add(a, "/etc/gitconfig") || add(a, "--tmpfs") || add(a, "/tmp") || add(a, "--bind") ||
        add(a, workspace) || add(a, "/vercel/sandbox") || add(a, "--ro-bind") || add(a, g.init_copy) ||
        add(a, "/.sbxd/init") || add(a, "--proc") || add(a, "/proc") || add(a, "--dev") ||
        add(a, "/dev") || add(a, "--chdir") || add(a, "/vercel/sandbox") || add(a, "--clearenv"))
        return -1;
    for (size_t i = 0; i < env->n; i++) {
        const char *eq = strchr(env->v[i], '=');
        char key[128];
        if (!eq || (size_t)(eq - env->v[i]) >= sizeof key)
            continue;
        memcpy(key, env->v[i], (size_t)(eq - env->v[i]));
        key[eq - env->v[i]] = '\0';
        if (add(a, "--setenv") || add(a, key) || add(a, eq + 1))
            return -1;
    }
    if (add(a, "/.sbxd/init") || add(a, "--oneshot") || add(a, "--"))
        return -1;
    for (size_t i = 0; cmd[i]; i++)
        if (add(a, cmd[i]))
            return -1;
    return 0;
}

/* The fetcher's /etc/hosts: --add-host names resolve there too. */
static char *fetcher_hosts(void)
{
    sbx__buf b = SBX__BUF_INIT;
    if (sbx__buf_puts(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost\n") != SBX_OK)
        return NULL;
    for (size_t i = 0; i < g.cfg.add_hosts.n; i++) {
        const char *e = g.cfg.add_hosts.v[i], *eq = strchr(e, '=');
        if (sbx__buf_printf(&b, "%s\t%.*s\n", eq + 1, (int)(eq - e), e) != SBX_OK) {
            sbx__buf_free(&b);
            return NULL;
        }
    }
    return sbx__buf_detach(&b, NULL);
}

/* Keep the tail of what the fetcher printed: the last lines say what went
 * wrong. */
static void keep_tail(char *out, size_t outlen, size_t *got, const char *p, size_t n)
{
    if (n >= outlen - 1) {
        memcpy(out, p + n - (outlen - 1), outlen - 1);
        *got = outlen - 1;
    } else {
        if (*got + n > outlen - 1) {
            size_t drop = *got + n - (outlen - 1);
            memmove(out, out + drop, *got - drop);
            *got -= drop;
        }
        memcpy(out + *got, p, n);
        *got += n;
    }
    out[*got] = '\0';
}

/* Run cmd in a fetcher sandbox of s (seeing its workspace at /vercel/sandbox
 * and, when local_fd >= 0, a local repository at fd 9) and collect its
 * output; returns the exit status, or -1 with the reason in out. */
static int run_fetcher(struct sandbox *s, const char *workspace, int local_fd, sbx__strlist *env,
                       const char *const *cmd, char *out, size_t outlen)
{
    sbx__strlist a = SBX__STRLIST_INIT;
    struct spawn_req req;
    int pipefd[2] = {-1, -1}, sv[2] = {-1, -1}, info[2] = {-1, -1}, fds[4] = {-1, -1, -1, -1};
    int status = -1, net_fd = -1;
    char *hosts = fetcher_hosts();
    size_t got = 0;
    int64_t deadline = mono_ms() + FETCH_TIMEOUT_MS;
    pid_t pid = -1, child = -1, net_pid = 0;
    char go = 'G';

    memset(&req, 0, sizeof req);
    out[0] = '\0';
    if (!hosts || fetcher_args(&a, workspace, g.filter != NULL, env, cmd) < 0) {
        snprintf(out, outlen, "out of memory");
        goto done;
    }
    fds[0] = g.filter ? seccomp_memfd() : open("/dev/null", O_RDONLY | O_CLOEXEC);
    fds[1] = data_fd(hosts);
    fds[2] = data_fd("nameserver " USERNET_DNS "\n");
    fds[3] = data_fd("[safe]\n\tdirectory = *\n");
    if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || fds[3] < 0 || pipe2(pipefd, O_CLOEXEC) < 0 ||
        pipe2(info, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(out, outlen, "cannot set up the fetcher: %s", strerror(errno));
        goto done;
    }
    req.argv = a.v;
    req.keep_fds[req.nkeep++] = sv[1];   /* 3: init --oneshot's socket */
    req.keep_fds[req.nkeep++] = info[1]; /* 4 */
    for (int i = 0; i < 4; i++)
        req.keep_fds[req.nkeep++] = fds[i]; /* 5: seccomp, 6-8: data */
    if (local_fd >= 0)
        req.keep_fds[req.nkeep++] = local_fd; /* LOCAL_REPO_FD */
    req.stdout_fd = pipefd[1];
    req.stderr_fd = pipefd[1];
    sandbox_spawn_ids(s, &req);
    /* In the sandbox's cgroup: a hostile remote's pack is bounded by the
     * sandbox's memory and processes (rlimits have no effect on the fetcher,
     * which has no sbxd-init to set them). */
    if (sandbox_ensure_limits(s, out, outlen) < 0)
        goto done;
    limits_spawn_setup(s->limits, &req);
    pid = launcher_spawn(&req);
    close(pipefd[1]);
    close(sv[1]);
    close(info[1]);
    pipefd[1] = sv[1] = info[1] = -1;
    if (pid < 0) {
        snprintf(out, outlen, "cannot run %s: %s", g.cfg.bwrap, strerror(errno));
        goto done;
    }
    /* Init says it runs (bwrap is done), then it is hardened and networked
     * before it may start git. */
    {
        struct pollfd p = {sv[0], POLLIN, 0};
        char c = 0, why[512] = "";
        child = sandbox_read_child_pid(info[0], mono_ms() + 60000);
        if (child <= 0 || poll(&p, 1, 60000) <= 0 || read(sv[0], &c, 1) != 1 || c != 'R' ||
            sandbox_harden(s, child, -1, why, sizeof why) < 0 ||
            (usernet_mode(NP_ALLOW_ALL) == NET_OPEN &&
             usernet_start(s, child, -1, false, &net_pid, &net_fd, why, sizeof why) < 0) ||
            write(sv[0], &go, 1) != 1) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            /* What bwrap or git said, else why we stopped. */
            for (;;) {
                char tmp[4096];
                ssize_t r = read(pipefd[0], tmp, sizeof tmp);
                if (r <= 0)
                    break;
                keep_tail(out, outlen, &got, tmp, (size_t)r);
            }
            if (!got)
                snprintf(out, outlen, "%s", why[0] ? why : "the fetcher did not start");
            goto done;
        }
    }
    for (;;) {
        struct pollfd p = {pipefd[0], POLLIN, 0};
        int64_t left = deadline - mono_ms();
        char tmp[4096];
        ssize_t r;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            kill(-pid, SIGKILL);
            snprintf(out, outlen, "timed out after %d s", FETCH_TIMEOUT_MS / 1000);
            waitpid(pid, NULL, 0);
            goto done;
        }
        r = read(pipefd[0], tmp, sizeof tmp);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        keep_tail(out, outlen, &got, tmp, (size_t)r);
    }
    if (waitpid(pid, &status, 0) < 0)
        status = -1;
    while (got && (out[got - 1] == '\n' || out[got - 1] == ' '))
        out[--got] = '\0';
done:
    usernet_stop(net_pid, net_fd);
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    for (int i = 0; i < 2; i++) {
        if (pipefd[i] >= 0)
            close(pipefd[i]);
        if (sv[i] >= 0)
            close(sv[i]);
        if (info[i] >= 0)
            close(info[i]);
    }
    sbx__free(hosts);
    sbx__strlist_clear(&a);
    return status;
}

int source_git(struct sandbox *s, json_t *src, int *http_status, char *err, size_t errlen)
{
    const char *url = json_string_value(json_object_get(src, "url"));
    json_t *jdepth = json_object_get(src, "depth"), *jrev = json_object_get(src, "revision");
    const char *user = json_string_value(json_object_get(src, "username"));
    const char *pass = json_string_value(json_object_get(src, "password"));
    char depth[32] = "", out[2048], *workspace;
    const char *local = NULL;
    sbx__strlist env = SBX__STRLIST_INIT;
    int st, local_fd = -1;

    *http_status = 400;
    if (!url || !*url) {
        snprintf(err, errlen, "source.url is required for a git source");
        return -1;
    }
    if (jdepth && !json_is_null(jdepth)) {
        if (!json_is_integer(jdepth) || json_integer_value(jdepth) < 1) {
            snprintf(err, errlen, "source.depth must be an integer >= 1");
            return -1;
        }
        snprintf(depth, sizeof depth, "%lld", (long long)json_integer_value(jdepth));
    }
    if (jrev && !json_is_null(jrev) && (!json_is_string(jrev) || !*json_string_value(jrev))) {
        snprintf(err, errlen, "source.revision must be a non-empty string");
        return -1;
    }
    if (!user != !pass) {
        snprintf(err, errlen, "source.username and source.password go together");
        return -1;
    }
    if (access("/usr/bin/git", X_OK) != 0) {
        snprintf(err, errlen, "git sources need git on the sbxd host (apt-get install -y git)");
        return -1;
    }
    /* Local repositories (a path or file://) are made visible read-only. */
    if (url[0] == '/')
        local = url;
    else if (strncmp(url, "file://", 7) == 0)
        local = url + 7;
    /* The fetcher's only way out is sbxd-net (there is no proxy for git). */
    if (!local && usernet_mode(NP_ALLOW_ALL) != NET_OPEN) {
        snprintf(err, errlen, "git source %s: cloning over the network needs sbxd's network layer, which is "
                              "off (%s); local paths work", url, g.layers[LAYER_NET].what);
        return -1;
    }
    /* Opened here, by sbxd, and passed down as a descriptor. */
    if (local && (local_fd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "git source %s: %s", url, strerror(errno));
        return -1;
    }
    if (sbx__strlist_push(&env, "PATH=/usr/local/bin:/usr/bin:/bin") != SBX_OK ||
        sbx__strlist_push(&env, "HOME=/tmp") != SBX_OK ||
        sbx__strlist_push(&env, "GIT_TERMINAL_PROMPT=0") != SBX_OK)
        goto oom;
    {
        /* Credentials as an HTTP header, not in argv or the remote URL, so they
         * stay out of the workspace's .git/config. */
        char kv[64];
        int n = 0;
        if (sbx__strlist_push(&env, "GIT_CONFIG_KEY_0=safe.directory") != SBX_OK ||
            sbx__strlist_push(&env, "GIT_CONFIG_VALUE_0=*") != SBX_OK)
            goto oom;
        n++;
        if (user) {
            size_t plen = strlen(user) + strlen(pass) + 2, blen = 4 * ((plen + 2) / 3) + 1;
            char *plain = sbx__malloc(plen), *b64 = sbx__malloc(blen), *hdr;
            if (!plain || !b64) {
                sbx__free(plain);
                sbx__free(b64);
                goto oom;
            }
            snprintf(plain, plen, "%s:%s", user, pass);
            EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)plain, (int)strlen(plain));
            hdr = sbx__malloc(blen + 64);
            if (hdr)
                snprintf(hdr, blen + 64, "GIT_CONFIG_VALUE_1=Authorization: Basic %s", b64);
            sbx__free_secret(plain);
            sbx__free_secret(b64);
            if (!hdr || sbx__strlist_push(&env, "GIT_CONFIG_KEY_1=http.extraHeader") != SBX_OK ||
                sbx__strlist_push_take(&env, hdr) != SBX_OK)
                goto oom;
            n++;
        }
        snprintf(kv, sizeof kv, "GIT_CONFIG_COUNT=%d", n);
        if (sbx__strlist_push(&env, kv) != SBX_OK)
            goto oom;
    }
    workspace = path_join(s->root, "vercel/sandbox");
    if (!workspace)
        goto oom;
    {
        const char *cmd[] = {"/bin/sh", "-c", GIT_SCRIPT, "sh", url, depth,
                             jrev && json_is_string(jrev) ? json_string_value(jrev) : "",
                             local ? "local" : "", NULL};
        st = run_fetcher(s, workspace, local_fd, &env, cmd, out, sizeof out);
    }
    sbx__free(workspace);
    sbx__strlist_wipe(&env);
    if (local_fd >= 0)
        close(local_fd);
    if (st == 0)
        return 0;
    snprintf(err, errlen, "git source %s could not be cloned%s%s", url, out[0] ? ": " : "", out);
    return -1;
oom:
    sbx__strlist_wipe(&env);
    if (local_fd >= 0)
        close(local_fd);
    *http_status = 500;
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* Tarballs are downloaded by sbxd, on the host: like a sandbox, and through
 * every redirect, they may not come from the host itself (its loopback, its
 * addresses, link-local metadata services), unless --unsafe-host-network. */
struct download {
    int fd;
    bool refused;
};

static curl_socket_t open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct download *dl = user;
    const void *addr = a->family == AF_INET ? (const void *)&((struct sockaddr_in *)&a->addr)->sin_addr
                                            : (const void *)&((struct sockaddr_in6 *)&a->addr)->sin6_addr;
    (void)purpose;
    if ((a->family == AF_INET || a->family == AF_INET6) && !g.cfg.unsafe_host_net &&
        egress_is_host_addr(a->family, addr)) {
        dl->refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t write_cb(void *p, size_t size, size_t n, void *user)
{
    int fd = ((struct download *)user)->fd;
    size_t len = size * n, off = 0;
    while (off < len) {
        ssize_t w = write(fd, (char *)p + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        off += (size_t)w;
    }
    return len;
}

int source_tarball(struct sandbox *s, json_t *src, int *http_status, char *err, size_t errlen)
{
    const char *url = json_string_value(json_object_get(src, "url"));
    char tmp[4096], cerr[CURL_ERROR_SIZE] = "";
    CURL *h;
    CURLcode rc;
    struct curl_slist *connect_to = NULL;
    struct download dl = {-1, false};
    long code = 0;
    int fd, r = -1;
    char *workspace;

    *http_status = 400;
    if (!url || !*url) {
        snprintf(err, errlen, "source.url is required for a tarball source");
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s/../source.tar", s->root);
    fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    h = curl_easy_init();
    if (fd < 0 || !h) {
        *http_status = 500;
        snprintf(err, errlen, "cannot download the tarball: %s", fd < 0 ? strerror(errno) : "no curl");
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    for (size_t i = 0; i < g.cfg.add_hosts.n; i++) {
        /* --add-host names, for this transfer and its redirects. */
        const char *e = g.cfg.add_hosts.v[i], *eq = strchr(e, '=');
        char entry[384];
        struct curl_slist *n;
        snprintf(entry, sizeof entry, strchr(eq + 1, ':') ? "%.*s::[%s]:" : "%.*s::%s:", (int)(eq - e), e,
                 eq + 1);
        if (!(n = curl_slist_append(connect_to, entry))) {
            *http_status = 500;
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        connect_to = n;
    }
    if (connect_to)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)g.cfg.max_upload);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)FETCH_TIMEOUT_MS);
    dl.fd = fd;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &dl);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &dl);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK) {
        if (dl.refused)
            snprintf(err, errlen, "tarball %s: refused: it resolves (or redirects) to an address of this "
                                  "host, which sandboxes may not reach", url);
        else
            snprintf(err, errlen, "tarball %s could not be downloaded: %s", url,
                     cerr[0] ? cerr : curl_easy_strerror(rc));
        goto out;
    }
    if (code >= 400) {
        snprintf(err, errlen, "tarball %s could not be downloaded: HTTP %ld", url, code);
        goto out;
    }
    /* From the network: its headers checked before libarchive's reader
     * sees them (the file downloaded into, read from its start). */
    if (tarx_check_untrusted(fd, err, errlen) < 0) {
        *http_status = 400;
        goto out;
    }
    workspace = path_join(s->root, "vercel/sandbox");
    if (!workspace) {
        *http_status = 500;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = archive_extract(tmp, workspace, err, errlen);
    if (r < 0 && (errno == ENOSPC || errno == EDQUOT)) {
        /* A large archive, or a bomb: extraction stopped at the limit. */
        *http_status = 413;
        snprintf(err, errlen, "tarball %s does not fit in the sandbox's disk limit (%lld MiB)", url,
                 (long long)(g.cfg.disk_limit >> 20));
    } else if (r == 0 && ids_chown_tree(s->root, &s->ids) < 0) {
        *http_status = 500;
        snprintf(err, errlen, "cannot give the extracted files to the sandbox: %s", strerror(errno));
        r = -1;
    }
    sbx__free(workspace);
out:
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(connect_to);
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return r;
}
