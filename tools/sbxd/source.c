/* SPDX-License-Identifier: MIT */
/*
 * source: populate a new sandbox's workspace from a git repository or a
 * tarball, as create's `source` asks. A clone is untrusted work, so git runs
 * in a throwaway bwrap sandbox of its own (with network, since the new
 * sandbox's policy may be deny-all: like Vercel, the platform fetches the
 * source) that sees only the new workspace. Tarballs are downloaded with
 * libcurl and extracted with the checks in archive.c.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "tarx.h"
#include "sbxd.h"

#define FETCH_TIMEOUT_MS (10 * 60 * 1000)

static const char GIT_SCRIPT[] =
    "set -e\n"
    "url=$1 depth=$2 rev=$3\n"
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
    "fi\n";

static int add(sbx__strlist *a, const char *s)
{
    return sbx__strlist_push(a, s) == SBX_OK ? 0 : -1;
}

/* Run argv (inside a fetcher sandbox that sees `workspace` at
 * /vercel/sandbox) and collect its output; returns the exit status or -1. */
static int run_fetcher(const char *workspace, const char *local_repo, sbx__strlist *env,
                       const char *const *cmd, char *out, size_t outlen)
{
    static const char *const ro[] = {"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                     "/etc/ssl", "/etc/ca-certificates", "/etc/ld.so.cache",
                                     "/etc/alternatives", "/etc/passwd", "/etc/group"};
    static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    sbx__strlist a = SBX__STRLIST_INIT;
    struct spawn_req req;
    int pipefd[2] = {-1, -1}, status = -1;
    size_t got = 0;
    int64_t deadline = mono_ms() + FETCH_TIMEOUT_MS;
    pid_t pid;

    memset(&req, 0, sizeof req);
    out[0] = '\0';
    if (add(&a, g.cfg.bwrap) || add(&a, "--unshare-user") || add(&a, "--uid") || add(&a, "1000") ||
        add(&a, "--gid") || add(&a, "1000") || add(&a, "--unshare-pid") ||
        add(&a, "--unshare-ipc") || add(&a, "--unshare-uts") || add(&a, "--die-with-parent") ||
        add(&a, "--new-session") || add(&a, "--cap-drop") || add(&a, "ALL") ||
        add(&a, "--tmpfs") || add(&a, "/") || add(&a, "--ro-bind") || add(&a, "/usr") ||
        add(&a, "/usr"))
        goto oom;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        struct stat st;
        char target[256];
        ssize_t n;
        if (lstat(top[i], &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode) && (n = readlink(top[i], target, sizeof target - 1)) > 0) {
            target[n] = '\0';
            if (add(&a, "--symlink") || add(&a, target) || add(&a, top[i]))
                goto oom;
        } else if (add(&a, "--ro-bind") || add(&a, top[i]) || add(&a, top[i])) {
            goto oom;
        }
    }
    for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++)
        if (add(&a, "--ro-bind-try") || add(&a, ro[i]) || add(&a, ro[i]))
            goto oom;
    /* /tmp first: a local repository under /tmp is bound on top of it. */
    if (add(&a, "--tmpfs") || add(&a, "/tmp"))
        goto oom;
    if (local_repo && (add(&a, "--ro-bind") || add(&a, local_repo) || add(&a, local_repo)))
        goto oom;
    if (add(&a, "--bind") || add(&a, workspace) || add(&a, "/vercel/sandbox") || add(&a, "--proc") ||
        add(&a, "/proc") || add(&a, "--dev") || add(&a, "/dev") || add(&a, "--chdir") ||
        add(&a, "/vercel/sandbox") || add(&a, "--clearenv"))
        goto oom;
    for (size_t i = 0; i < env->n; i++) {
        const char *eq = strchr(env->v[i], '=');
        char key[128];
        if (!eq || (size_t)(eq - env->v[i]) >= sizeof key)
            continue;
        memcpy(key, env->v[i], (size_t)(eq - env->v[i]));
        key[eq - env->v[i]] = '\0';
        if (add(&a, "--setenv") || add(&a, key) || add(&a, eq + 1))
            goto oom;
    }
    for (size_t i = 0; cmd[i]; i++)
        if (add(&a, cmd[i]))
            goto oom;
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        snprintf(out, outlen, "cannot create a pipe: %s", strerror(errno));
        goto done;
    }
    req.argv = a.v;
    req.stdout_fd = pipefd[1];
    req.stderr_fd = pipefd[1];
    pid = launcher_spawn(&req);
    close(pipefd[1]);
    if (pid < 0) {
        snprintf(out, outlen, "cannot run %s: %s", g.cfg.bwrap, strerror(errno));
        goto done;
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
        /* Keep the tail: the last lines say what went wrong. */
        if ((size_t)r >= outlen - 1) {
            memcpy(out, tmp + r - (ssize_t)(outlen - 1), outlen - 1);
            got = outlen - 1;
        } else {
            if (got + (size_t)r > outlen - 1) {
                size_t drop = got + (size_t)r - (outlen - 1);
                memmove(out, out + drop, got - drop);
                got -= drop;
            }
            memcpy(out + got, tmp, (size_t)r);
            got += (size_t)r;
        }
        out[got] = '\0';
    }
    if (waitpid(pid, &status, 0) < 0)
        status = -1;
    while (got && (out[got - 1] == '\n' || out[got - 1] == ' '))
        out[--got] = '\0';
    goto done;
oom:
    snprintf(out, outlen, "out of memory");
done:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
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
    int st;

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
    if (local && access(local, R_OK) != 0) {
        snprintf(err, errlen, "git source %s: %s", url, strerror(errno));
        return -1;
    }
    if (sbx__strlist_push(&env, "PATH=/usr/local/bin:/usr/bin:/bin") != SBX_OK ||
        sbx__strlist_push(&env, "HOME=/tmp") != SBX_OK ||
        sbx__strlist_push(&env, "GIT_TERMINAL_PROMPT=0") != SBX_OK ||
        sbx__strlist_push(&env, "GIT_CONFIG_NOSYSTEM=1") != SBX_OK)
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
                             jrev && json_is_string(jrev) ? json_string_value(jrev) : "", NULL};
        st = run_fetcher(workspace, local, &env, cmd, out, sizeof out);
    }
    sbx__free(workspace);
    sbx__strlist_wipe(&env);
    if (st == 0)
        return 0;
    snprintf(err, errlen, "git source %s could not be cloned%s%s", url, out[0] ? ": " : "", out);
    return -1;
oom:
    sbx__strlist_wipe(&env);
    *http_status = 500;
    snprintf(err, errlen, "out of memory");
    return -1;
}

static size_t write_cb(void *p, size_t size, size_t n, void *user)
{
    int fd = *(int *)user;
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
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)g.cfg.max_upload);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)FETCH_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &fd);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "tarball %s could not be downloaded: %s", url,
                 cerr[0] ? cerr : curl_easy_strerror(rc));
        goto out;
    }
    if (code >= 400) {
        snprintf(err, errlen, "tarball %s could not be downloaded: HTTP %ld", url, code);
        goto out;
    }
    workspace = path_join(s->root, "vercel/sandbox");
    if (!workspace) {
        *http_status = 500;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r = archive_extract(tmp, workspace, err, errlen);
    sbx__free(workspace);
out:
    if (h)
        curl_easy_cleanup(h);
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return r;
}
