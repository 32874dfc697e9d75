/* SPDX-License-Identifier: MIT */
/*
 * testnet: the test internet fixture itself (testnet.h), proved from the host
 * side with no sbxd: its HTTP server, git over git:// and dumb HTTP, the npm
 * registry, the PEP 503 index, PostgreSQL, two fixtures at once, and that
 * nothing is left once it stops or its holder or its test is killed. Clients
 * run with testnet_host_sh: the host's network, the fixture's /tmp, so their
 * files vanish with it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testnet.h"

#define PSQL "/usr/lib/postgresql/15/bin/psql"
/* A clean client environment: no proxy, no user or system git configuration. */
#define CLEAN_ENV "env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy " \
                  "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null "

/* ---- helpers ------------------------------------------------------------------------ */

/* Run on the host's network with the fixture's /tmp; assert exit status 0. */
static char *client(const struct testnet *t, const char *cmd)
{
    int st;
    char *out = testnet_host_sh_out(t, &st, "%s", cmd);
    ck_assert_msg(st == 0, "exit status %d from: %s\n%s", st, cmd, out);
    return out;
}

static ino_t ns_ino(pid_t pid, const char *kind)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, kind);
    ck_assert_msg(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
    return st.st_ino;
}

/* Host processes in the namespace kind/ino (alive, so its number is its own),
 * zombies aside; with comm, only those so named, and *uid gets the real uid
 * of the last one. With pids, their pids too (up to max). */
static int procs_in_ns(const char *kind, ino_t ino, const char *comm, int *uid, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    ck_assert(d != NULL);
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[4096], name[64] = "", state = 0;
        int puid = -1;
        struct stat st;
        FILE *f;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/ns/%s", e->d_name, kind);
        if (stat(path, &st) != 0 || st.st_ino != ino)
            continue;
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        while (fgets(buf, sizeof buf, f)) {
            sscanf(buf, "Name: %63s", name);
            sscanf(buf, "State: %c", &state);
            if (strncmp(buf, "Uid:", 4) == 0)
                puid = atoi(buf + 4);
        }
        fclose(f);
        if (state == 'Z' || (comm && strcmp(name, comm) != 0))
            continue;
        if (uid)
            *uid = puid;
        if (pids && n < max)
            pids[n] = (pid_t)atoi(e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* A process's state and start time (clock ticks since boot); false when gone. */
static bool proc_stat(pid_t pid, char *state, unsigned long long *start)
{
    char path[64], buf[1024], *p;
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
    return p && sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                       state, start) == 2;
}

/* A host interface's index, 0 when there is none of that name. */
static int host_ifindex(const char *name)
{
    char path[128];
    int idx = 0;
    FILE *f;
    snprintf(path, sizeof path, "/sys/class/net/%s/ifindex", name);
    if (!(f = fopen(path, "r")))
        return 0;
    if (fscanf(f, "%d", &idx) != 1)
        idx = 0;
    fclose(f);
    return idx;
}

/* What must vanish: the fixture's processes as they were (pid and start time:
 * pids and namespace numbers are reused once free) and its veth (with it, the
 * host's address in the subnet). */
#define MAX_PROCS 64
struct remains {
    int n;
    pid_t pid[MAX_PROCS];
    unsigned long long start[MAX_PROCS];
    char host_if[16];
    int host_ifindex;       /* names are reused: another fixture may take it next */
};

static struct remains remains_of(const struct testnet *t)
{
    struct remains r;
    char state;
    memset(&r, 0, sizeof r); /* it goes through a pipe whole */
    int n = procs_in_ns("pid", ns_ino(t->holder, "pid"), NULL, NULL, r.pid, MAX_PROCS);
    ck_assert_int_le(n, MAX_PROCS);
    /* Short-lived ones (a PostgreSQL worker, say) may be gone already. */
    for (int i = 0; i < n; i++)
        if (proc_stat(r.pid[i], &state, &r.start[r.n]))
            r.pid[r.n++] = r.pid[i];
    snprintf(r.host_if, sizeof r.host_if, "%s", t->host_if);
    r.host_ifindex = host_ifindex(t->host_if);
    ck_assert_int_gt(r.host_ifindex, 0);
    return r;
}

/* How many of them are still there, zombies counted apart. */
static int remaining(const struct remains *r, int *zombies)
{
    int live = 0;
    *zombies = 0;
    for (int i = 0; i < r->n; i++) {
        char state;
        unsigned long long start;
        if (proc_stat(r->pid[i], &state, &start) && start == r->start[i]) {
            if (state == 'Z')
                ++*zombies;
            else
                live++;
        }
    }
    return live;
}

/* Wait (timeout_ms at most) until nothing of the fixture is left: none of its
 * processes, no veth. An orphaned holder's
 * zombie is waited for too: the host's init reaps it (here in up to about
 * 2 s), and until then it holds its PID namespace, though nothing else. */
static void expect_gone(const struct remains *r, int timeout_ms)
{
    int64_t t0 = mono_ms(), deadline = t0 + timeout_ms, t_live = -1, t_all = -1, t_link = -1;
    int live = 0, zombies = 0, link = 0;
    for (;;) {
        live = remaining(r, &zombies);
        link = host_ifindex(r->host_if) == r->host_ifindex;
        if (live == 0 && t_live < 0)
            t_live = mono_ms() - t0;
        if (live + zombies == 0 && t_all < 0)
            t_all = mono_ms() - t0;
        if (!link && t_link < 0)
            t_link = mono_ms() - t0;
        if ((live + zombies == 0 && !link) || mono_ms() > deadline)
            break;
        usleep(20000);
    }
    if (getenv("SBXD_IT_TIMING"))
        fprintf(stderr, "# testnet: %d processes gone after %lld ms (zombies %lld ms), the veth after %lld ms\n",
                r->n, (long long)t_live, (long long)t_all, (long long)t_link);
    ck_assert_msg(live == 0, "%d of the fixture's %d processes are left", live, r->n);
    ck_assert_msg(zombies == 0, "%d zombies of the fixture are left", zombies);
    ck_assert_msg(!link, "the veth %s is still on the host", r->host_if);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

START_TEST(test_testnet_http_static)
{
    struct testnet *t = testnet_start(0);
    struct http_resp *r;
    char path[200];
    FILE *f;

    ck_assert_int_eq(t->http_port, 80);
    ck_assert_int_eq(t->db_port, 0);
    r = testnet_http_get(t, "http://www.test/hello.txt", 10000);
    expect_status(r, 200);
    ck_assert_str_eq(r->body, "hello from the test internet\n");
    ck_assert_msg(strncmp(r->ctype, "text/plain", 10) == 0, "Content-Type %s", r->ctype);
    http_resp_free(r);
    /* Every name serves the same tree. */
    r = testnet_http_get(t, "http://registry.test/", 10000);
    expect_status(r, 200);
    ck_assert_msg(contains(r->body, "<h1>www.test</h1>"), "index: %s", r->body);
    http_resp_free(r);
    r = testnet_http_get(t, "http://www.test/no-such-file", 10000);
    expect_status(r, 404);
    http_resp_free(r);
    /* A test adds content through host_www. */
    snprintf(path, sizeof path, "%s/added.txt", t->host_www);
    f = fopen(path, "w");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    fputs("added by the test\n", f);
    fclose(f);
    r = testnet_http_get(t, "http://www.test/added.txt", 10000);
    expect_status(r, 200);
    ck_assert_str_eq(r->body, "added by the test\n");
    http_resp_free(r);
    /* The access log names the host's end as the client. */
    {
        int st;
        char *log = testnet_sh_out(t, &st, "cat %s/http.log", t->root);
        char want[64];
        ck_assert_int_eq(st, 0);
        snprintf(want, sizeof want, "%s \"GET /added.txt HTTP/1.1\" 200", t->host_addr);
        ck_assert_msg(contains(log, want), "no '%s' in the access log:\n%s", want, log);
        free(log);
    }
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_http_echo)
{
    struct testnet *t = testnet_start(0);
    char cmd[512], *out;

    snprintf(cmd, sizeof cmd,
             CLEAN_ENV "curl -sS -i --resolve www.test:80:%s -H 'X-Testnet: 42' 'http://www.test/echo?q=1'",
             t->addr);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "HTTP/1.1 200") && contains(out, "Content-Type: text/plain"), "%s", out);
    ck_assert_msg(contains(out, "\r\n\r\nGET /echo?q=1 HTTP/1.1\n"), "no request line: %s", out);
    ck_assert_msg(contains(out, "\nHost: www.test\n") && contains(out, "\nX-Testnet: 42\n"), "no headers: %s",
                  out);
    free(out);
    /* A body comes back after the headers. */
    snprintf(cmd, sizeof cmd, CLEAN_ENV "curl -sS --resolve www.test:80:%s --data-binary ping http://www.test/echo",
             t->addr);
    out = client(t, cmd);
    ck_assert_msg(strncmp(out, "POST /echo HTTP/1.1\n", 20) == 0 && contains(out, "\n\nping"), "POST: %s", out);
    free(out);
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_http_bytes)
{
    struct testnet *t = testnet_start(0);
    struct http_resp *r;
    char cmd[512], *out;
    long long size = 0;
    double speed = 0;

    r = testnet_http_get(t, "http://www.test/bytes/0", 10000);
    expect_status(r, 200);
    ck_assert_uint_eq(r->len, 0);
    http_resp_free(r);
    r = testnet_http_get(t, "http://www.test/bytes/100000", 10000);
    expect_status(r, 200);
    ck_assert_uint_eq(r->len, 100000);
    for (size_t i = 0; i < r->len; i++)
        ck_assert_msg((unsigned char)r->body[i] == i % 256, "byte %zu is %u", i, (unsigned char)r->body[i]);
    http_resp_free(r);
    /* Throughput: 256 MiB through the veth. */
    snprintf(cmd, sizeof cmd,
             CLEAN_ENV "curl -sS -o /dev/null -w '%%{size_download} %%{speed_download}' http://%s/bytes/268435456",
             t->addr);
    out = client(t, cmd);
    ck_assert_msg(sscanf(out, "%lld %lf", &size, &speed) == 2 && size == 268435456LL, "curl: %s", out);
    fprintf(stderr, "# testnet /bytes: %.0f MB/s\n", speed / 1e6);
    free(out);
    testnet_stop(t);
}
END_TEST

/* ---- git ---------------------------------------------------------------------------------- */

/* Clone url into the scratch directory and check what came. */
static void expect_clone(const struct testnet *t, const char *git_opts, const char *url, const char *dir)
{
    char cmd[1024], *out, want[256];
    snprintf(cmd, sizeof cmd,
             "cd %s && " CLEAN_ENV "git %s clone -q %s %s && cd %s && git rev-parse HEAD refs/remotes/origin/feature "
             "'v1.0^{commit}' && git symbolic-ref HEAD && cat README.md && test -x hello.sh && ./hello.sh",
             t->scratch, git_opts, url, dir, dir);
    out = client(t, cmd);
    snprintf(want, sizeof want, "%s\n%s\n%s\nrefs/heads/main\n# demo\n", t->git_head, t->git_feature, t->git_tag);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "clone of %s:\n%s\nwanted first:\n%s", url, out, want);
    ck_assert_msg(contains(out, "hello from demo\n"), "hello.sh: %s", out);
    free(out);
}

START_TEST(test_testnet_git_clone_git)
{
    struct testnet *t = testnet_start(0);
    char url[128];
    ck_assert_int_eq(t->git_port, 9418);
    ck_assert_uint_eq(strlen(t->git_head), 40);
    snprintf(url, sizeof url, "git://%s/demo.git", t->addr);
    expect_clone(t, "", url, "over-git");
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_git_clone_http)
{
    struct testnet *t = testnet_start(0);
    char opts[128];
    /* The name, resolved the way git lets one (http.curloptResolve). */
    snprintf(opts, sizeof opts, "-c http.curloptResolve=git.test:80:%s -c http.proxy=", t->addr);
    expect_clone(t, opts, "http://git.test/demo.git", "over-http");
    testnet_stop(t);
}
END_TEST

/* Smart HTTP (git http-backend): the same repository, with shallow clones
 * (protocol v2 and v0), fetch by commit id, a gzip-encoded request body,
 * and private.git behind its token. */
START_TEST(test_testnet_git_clone_smart_http)
{
    struct testnet *t = testnet_start(0);
    char opts[256], cmd[2048], *out, want[512];
    snprintf(opts, sizeof opts, "-c http.curloptResolve=git.test:80:%s -c http.proxy=", t->addr);
    expect_clone(t, opts, "http://git.test/smart/demo.git", "over-smart");

    /* Shallow, then the commit of v1.0 (no branch's head) fetched by id, in
     * protocol v2 (the server says "version 2") and v0. */
    for (int v = 2; v >= 0; v -= 2) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && " CLEAN_ENV "GIT_TRACE_PACKET=$PWD/trace%d git %s -c protocol.version=%d clone -q --depth=1 "
                 "http://git.test/smart/demo.git shallow%d && cd shallow%d && git rev-list --count HEAD && "
                 "git rev-parse HEAD && git %s -c protocol.version=%d fetch -q --depth=1 origin %s && "
                 "git checkout -q --detach %s && git rev-parse HEAD && git rev-list --count HEAD && "
                 "grep -c 'version 2' ../trace%d || true",
                 t->scratch, v, opts, v, v, v, opts, v, t->git_tag, t->git_tag, v);
        out = client(t, cmd);
        snprintf(want, sizeof want, "1\n%s\n%s\n1\n%s", t->git_head, t->git_tag, v == 2 ? "" : "0\n");
        ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "protocol v%d:\n%s\nwanted first:\n%s", v, out, want);
        if (v == 2)
            ck_assert_msg(strcmp(out + strlen(want), "0\n") != 0, "no protocol v2 in the trace: %s", out);
        free(out);
    }

    /* A request body as git sends a large one: gzip (ls-refs, protocol v2). */
    snprintf(cmd, sizeof cmd,
             "cd %s && printf '0014command=ls-refs\\n00010000' | gzip -c > req.gz && " CLEAN_ENV
             "curl -sS --fail --resolve git.test:80:%s -H 'Content-Type: application/x-git-upload-pack-request' "
             "-H 'Content-Encoding: gzip' -H 'Git-Protocol: version=2' --data-binary @req.gz "
             "http://git.test/smart/demo.git/git-upload-pack",
             t->scratch, t->addr);
    out = client(t, cmd);
    snprintf(want, sizeof want, "%s refs/heads/feature", t->git_feature);
    ck_assert_msg(contains(out, want), "ls-refs: %s", out);
    free(out);

    /* private.git: 401 without the token, a shallow clone with it. */
    snprintf(cmd, sizeof cmd,
             CLEAN_ENV "curl -sS -o /dev/null -w '%%{http_code}' --resolve git.test:80:%s "
             "'http://git.test/smart/private.git/info/refs?service=git-upload-pack'",
             t->addr);
    out = client(t, cmd);
    ck_assert_str_eq(out, "401");
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd %s && " CLEAN_ENV "GIT_TERMINAL_PROMPT=0 git %s clone -q --depth=1 "
             "http://git.test/smart/private.git denied 2>&1; echo \"exit $?\"",
             t->scratch, opts);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "exit 128"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd %s && " CLEAN_ENV "git %s -c 'http.extraHeader=Authorization: Basic %s' clone -q --depth=1 "
             "http://git.test/smart/private.git private && git -C private rev-parse HEAD",
             t->scratch, opts, "eC1hY2Nlc3MtdG9rZW46dG4tcHJpdmF0ZS03ZjNjOWExZTViMmQ0MDg2");
    out = client(t, cmd);
    snprintf(want, sizeof want, "%s\n", t->git_head);
    ck_assert_str_eq(out, want);
    free(out);
    testnet_stop(t);
}
END_TEST

/* ---- package registries ---------------------------------------------------------------------- */

START_TEST(test_testnet_npm_install)
{
    struct testnet *t = testnet_start(0);
    char cmd[1024], *out;
    struct http_resp *r;

    /* The packument names the host the client asked for. */
    r = testnet_http_get(t, "http://registry.test/npm/sbx-demo", 10000);
    expect_status(r, 200);
    ck_assert_msg(json_is_object(r->json), "packument: %s", r->body);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
                         json_object_get(json_object_get(r->json, "versions"), "1.0.0"), "dist"), "tarball")),
                     "http://registry.test/npm/sbx-demo/-/sbx-demo-1.0.0.tgz");
    http_resp_free(r);

    snprintf(cmd, sizeof cmd,
             "mkdir %s/npm && cd %s/npm && " CLEAN_ENV "npm --registry http://%s/npm/ --cache %s/npm-cache "
             "--no-audit --no-fund --no-update-notifier '--noproxy=*' --loglevel=error install sbx-demo && "
             "node -e \"console.log(require('sbx-demo')())\" && cat node_modules/sbx-demo/package.json",
             t->scratch, t->scratch, t->addr, t->scratch);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "hello from sbx-demo\n") && contains(out, "\"version\": \"1.0.0\""), "npm: %s",
                  out);
    free(out);
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_pip_download)
{
    struct testnet *t = testnet_start(0);
    char cmd[1024], *out;
    int st;

    /* scripts/dev installs python3-pip: the index is only proven with it. */
    out = testnet_host_sh_out(t, &st, "python3 -m pip --version");
    ck_assert_msg(st == 0, "pip is needed (apt-get install -y python3-pip): %s", out);
    free(out);
    /* pip refuses plain-HTTP indexes unless told to trust the host. */
    snprintf(cmd, sizeof cmd,
             "cd %s && " CLEAN_ENV "python3 -m pip --isolated download --no-cache-dir --disable-pip-version-check "
             "--index-url http://%s/pypi/simple --trusted-host %s -d dl sbx-demo && ls dl && "
             "python3 -m pip --isolated install -q --no-index --no-deps --disable-pip-version-check --target site "
             "dl/*.whl && PYTHONPATH=site python3 -c 'import sbx_demo; print(sbx_demo.hello(), sbx_demo.__version__)'",
             t->scratch, t->addr, t->addr);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "sbx_demo-1.0.0-py3-none-any.whl\n") && contains(out, "hello from sbx-demo 1.0.0\n"),
                  "pip: %s", out);
    free(out);
    testnet_stop(t);
}
END_TEST

/* tests/fixtures/ts-project: a TypeScript project whose lock file names
 * http://registry.test/npm/... for typescript (from the registry directory,
 * testnet_npm_dir()) and sbx-lifecycle-probe (packed by the holder from
 * tests/fixtures/npm-packages), installed with npm ci from the host. The host
 * cannot resolve registry.test, so npm is told to swap that host for the
 * fixture's address: --replace-registry-host=registry.test with a registry
 * URL that is only an origin (npm 9 prepends the whole registry URL to the
 * resolved path; npm 11 swaps the host and keeps the path). In a sandbox,
 * where sbxd resolves registry.test, the lock file's URLs work as they are. */
#define TS_NPM CLEAN_ENV "npm_config_userconfig=/dev/null npm --no-audit --no-fund --no-update-notifier " \
               "'--noproxy=*' --loglevel=error "

START_TEST(test_testnet_npm_ts_project)
{
    struct testnet *t = testnet_start(0);
    char cmd[2048], tgz[4096], want[200], *out;
    struct http_resp *r;
    json_t *v;
    struct stat st;
    int status;

    snprintf(tgz, sizeof tgz, "%s/typescript/-/typescript-5.4.5.tgz", testnet_npm_dir());
    ck_assert_msg(stat(tgz, &st) == 0,
                  "%s: %s; fetch the registry's tarballs first: tests/fixtures/fetch-registry.sh (scripts/dev test "
                  "does), or set TESTNET_NPM_DIR", tgz, strerror(errno));

    /* A packument for a tarball from the directory, made from its package.json. */
    r = testnet_http_get(t, "http://registry.test/npm/typescript", 30000);
    expect_status(r, 200);
    v = json_object_get(json_object_get(r->json, "versions"), "5.4.5");
    ck_assert_msg(json_is_object(v), "typescript packument: %.500s", r->body);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "bin"), "tsc")), "./bin/tsc");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "dist"), "tarball")),
                     "http://registry.test/npm/typescript/-/typescript-5.4.5.tgz");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "dist"), "integrity")),
                     "sha512-vcI4UpRgg81oIRUFwR0WSIHKt11nJ7SAVlYNIu+QpqeyXP+gpQJy/Z4+F0aGxSE4MqwjyXvW/TzgkLAx2AGHwQ==");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "dist-tags"), "latest")), "5.4.5");
    http_resp_free(r);
    r = testnet_http_get(t, "http://registry.test/npm/sbx-lifecycle-probe", 10000);
    expect_status(r, 200);
    v = json_object_get(json_object_get(r->json, "versions"), "1.0.0");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "scripts"), "postinstall")),
                     "node postinstall.js");
    http_resp_free(r);
    r = testnet_http_get(t, "http://registry.test/npm/no-such-package", 10000);
    expect_status(r, 404);
    http_resp_free(r);

    /* npm ci: install scripts off; then every script of the project passes. */
    snprintf(cmd, sizeof cmd,
             "cp -R %s/ts-project %s/ts && cd %s/ts && test ! -e node_modules && "
             TS_NPM "--cache %s/npm-cache --registry http://%s/ --replace-registry-host=registry.test "
             "ci --ignore-scripts && test -x node_modules/.bin/tsc && test -f node_modules/sbx-lifecycle-probe/index.js "
             "&& if test -e lifecycle-ran; then echo 'MARKER WITHOUT SCRIPTS'; exit 1; fi && "
             "npm run typecheck && npm run build && npm test && npm run lint && ls dist && "
             "node -e \"console.log(require('./dist').latest(['1.2.0', '1.10.0-rc.1', '1.9.9']))\"",
             TESTNET_FIXTURES_DIR, t->scratch, t->scratch, t->scratch, t->addr);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "# pass 4\n") && contains(out, "# fail 0\n"), "npm test: %s", out);
    ck_assert_msg(contains(out, "lint: ") && contains(out, " 0 problems"), "npm run lint: %s", out);
    ck_assert_msg(contains(out, "index.d.ts\nindex.js\nversion.d.ts\nversion.js\n"), "dist: %s", out);
    ck_assert_msg(contains(out, "\n1.10.0-rc.1\n"), "dist/index.js: %s", out);
    free(out);
    /* The tarballs came from the lock file's paths, through the host's end. */
    out = testnet_sh_out(t, &status, "cat %s/http.log", t->root);
    ck_assert_int_eq(status, 0);
    snprintf(want, sizeof want, "%s \"GET /npm/typescript/-/typescript-5.4.5.tgz HTTP/1.1\" 200", t->host_addr);
    ck_assert_msg(contains(out, want), "no '%s' in the access log:\n%s", want, out);
    ck_assert_msg(contains(out, "\"GET /npm/sbx-lifecycle-probe/-/sbx-lifecycle-probe-1.0.0.tgz HTTP/1.1\" 200"),
                  "access log:\n%s", out);
    free(out);

    /* Scripts on, explicitly: the dependency's postinstall leaves its marker. */
    snprintf(cmd, sizeof cmd,
             "cd %s/ts && rm -rf node_modules && " TS_NPM "--cache %s/npm-cache --registry http://%s/ "
             "--replace-registry-host=registry.test ci --ignore-scripts=false && cat lifecycle-ran",
             t->scratch, t->scratch, t->addr);
    out = client(t, cmd);
    ck_assert_msg(contains(out, "sbx-lifecycle-probe postinstall, pid "), "with scripts: %s", out);
    free(out);
    testnet_stop(t);
}
END_TEST

/* ---- PostgreSQL ---------------------------------------------------------------------------------- */

START_TEST(test_testnet_db_psql)
{
    struct testnet *t = testnet_start(TESTNET_DB);
    char cmd[1024], *out, want[64];
    int uid = -1;

    ck_assert_int_eq(t->db_port, 5432);
    snprintf(cmd, sizeof cmd,
             PSQL " -X -v ON_ERROR_STOP=1 -At 'host=%s port=%d user=app dbname=app' -c 'CREATE TABLE items "
             "(id serial PRIMARY KEY, name text)' -c \"INSERT INTO items (name) VALUES ('one'), ('two')\" "
             "-c 'SELECT count(*) FROM items' -c 'SELECT current_user, host(inet_client_addr())'",
             t->addr, t->db_port);
    out = client(t, cmd);
    snprintf(want, sizeof want, "2\napp|%s\n", t->host_addr);
    ck_assert_msg(contains(out, want), "psql: %s (wanted %s)", out, want);
    free(out);
    /* The server runs unprivileged. */
    ck_assert_int_ge(procs_in_ns("pid", ns_ino(t->holder, "pid"), "postgres", &uid, NULL, 0), 1);
    ck_assert_int_eq(uid, 65534);
    testnet_stop(t);
}
END_TEST

/* ---- the fixture itself ------------------------------------------------------------------------------- */

START_TEST(test_testnet_sh_inside_and_sbxd_args)
{
    struct testnet *t = testnet_start(0);
    const char *const *a = testnet_sbxd_args(t);
    char want[64], *out;
    int st;

    for (size_t i = 0; testnet_names[i]; i++) {
        snprintf(want, sizeof want, "%s=%s", testnet_names[i], t->addr);
        ck_assert_str_eq(a[2 * i], "--add-host");
        ck_assert_str_eq(a[2 * i + 1], want);
    }
    ck_assert_ptr_null(a[8]);
    /* Inside: its own addresses only (lo and its veth end)... */
    out = testnet_sh_out(t, &st, "ip -o -4 addr | grep -v ' lo ' | grep -v ' %s '", t->ns_if);
    ck_assert_msg(st == 1 && out[0] == '\0', "other interfaces inside: %s", out);
    free(out);
    out = testnet_sh_out(t, &st, "ip -o -4 addr; ip route; cat %s/hello.txt", t->www);
    ck_assert_int_eq(st, 0);
    snprintf(want, sizeof want, " %s/30 ", t->addr);
    ck_assert_msg(contains(out, want) && contains(out, "127.0.0.1/8"), "inside: %s", out);
    /* ...its files, and the way out is the host's end. */
    snprintf(want, sizeof want, "default via %s dev %s", t->host_addr, t->ns_if);
    ck_assert_msg(contains(out, want) && contains(out, "hello from the test internet"), "inside: %s", out);
    free(out);
    ck_assert_int_eq(testnet_sh(t, "exit 7"), 7);
    /* testnet_host_sh: the host's network, the fixture's /tmp. */
    out = testnet_host_sh_out(t, &st, "ip -o link show dev %s && ls %s", t->host_if, t->www);
    ck_assert_msg(st == 0 && contains(out, "demo.git"), "host side: %s", out);
    free(out);
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_two_fixtures)
{
    struct testnet *a = testnet_start(0), *b = testnet_start(0);
    struct remains ra = remains_of(a), rb = remains_of(b);
    struct http_resp *r;
    char url[64], path[200];
    FILE *f;

    ck_assert_str_ne(a->subnet, b->subnet);
    ck_assert_str_ne(a->host_if, b->host_if);
    ck_assert_msg(ns_ino(a->holder, "net") != ns_ino(b->holder, "net"), "one network namespace for two fixtures");
    snprintf(path, sizeof path, "%s/only-a.txt", a->host_www);
    f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs("a\n", f);
    fclose(f);
    snprintf(url, sizeof url, "http://%s/only-a.txt", a->addr);
    r = http_get_url(url, 10000);
    expect_status(r, 200);
    http_resp_free(r);
    snprintf(url, sizeof url, "http://%s/only-a.txt", b->addr);
    r = http_get_url(url, 10000);
    expect_status(r, 404);
    http_resp_free(r);
    r = testnet_http_get(b, "http://www.test/hello.txt", 10000);
    expect_status(r, 200);
    http_resp_free(r);
    testnet_stop(a);
    /* b is untouched by a's end. */
    r = testnet_http_get(b, "http://www.test/hello.txt", 10000);
    expect_status(r, 200);
    http_resp_free(r);
    testnet_stop(b);
    expect_gone(&ra, 0);
    expect_gone(&rb, 0);
}
END_TEST

START_TEST(test_testnet_stop_leaves_nothing)
{
    struct testnet *t = testnet_start(TESTNET_DB);
    struct remains r = remains_of(t);
    /* Services running: the holder, git daemon, the postmaster and its helpers. */
    ck_assert_int_ge(r.n, 4);
    testnet_stop(t);
    /* At once: stop deletes the veth and waits for the namespace's last process. */
    expect_gone(&r, 0);
}
END_TEST

START_TEST(test_testnet_holder_killed_leaves_nothing)
{
    struct testnet *t = testnet_start(TESTNET_DB);
    struct remains r;
    char *out;
    /* A file in the scratch directory (the fixture's tmpfs), a command left
     * running in the fixture, a client left running on the host side: all go
     * with it. */
    out = client(t, "echo x > /tmp/testnet/scratch/file && ls /tmp/testnet/scratch");
    free(out);
    ck_assert_int_eq(testnet_sh(t, "sleep 1000 >/dev/null 2>&1 &"), 0);
    ck_assert_int_eq(testnet_host_sh(t, "sleep 1001 >/dev/null 2>&1 &"), 0);
    r = remains_of(t);
    ck_assert_int_ge(r.n, 6);
    testnet_kill(t);
    /* The namespace's teardown removes the veth, asynchronously. */
    expect_gone(&r, 10000);
    testnet_stop(t);
}
END_TEST

START_TEST(test_testnet_test_killed_leaves_nothing)
{
    /* The real case: the test process itself dies (SIGKILL, a Check timeout). */
    int p[2];
    pid_t test;
    struct remains r;
    struct testnet got;

    ck_assert(pipe(p) == 0);
    fflush(NULL);
    test = fork();
    ck_assert(test >= 0);
    if (test == 0) {
        struct testnet *t = testnet_start(TESTNET_DB);
        struct remains mine = remains_of(t);
        close(p[0]);
        ck_assert(write(p[1], &mine, sizeof mine) == sizeof mine);
        ck_assert(write(p[1], t, sizeof *t) == sizeof *t);
        pause();
        _exit(0);
    }
    close(p[1]);
    ck_assert_msg(read(p[0], &r, sizeof r) == sizeof r && read(p[0], &got, sizeof got) == sizeof got,
                  "the child did not start its fixture");
    close(p[0]);
    ck_assert_msg(kill(got.holder, 0) == 0, "no holder");
    kill(test, SIGKILL);
    waitpid(test, NULL, 0);
    /* r holds the holder too: its zombie counts until the host's init reaps it. */
    expect_gone(&r, 10000);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("testnet");
    TCase *tc = sbx_tcase("http", 60);
    tcase_add_test(tc, test_testnet_http_static);
    tcase_add_test(tc, test_testnet_http_echo);
    tcase_add_test(tc, test_testnet_http_bytes);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("git", 60);
    tcase_add_test(tc, test_testnet_git_clone_git);
    tcase_add_test(tc, test_testnet_git_clone_http);
    tcase_add_test(tc, test_testnet_git_clone_smart_http);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("registry", 120);
    tcase_add_test(tc, test_testnet_npm_install);
    tcase_add_test(tc, test_testnet_pip_download);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("npm_project", 240);
    tcase_add_test(tc, test_testnet_npm_ts_project);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("db", 60);
    tcase_add_test(tc, test_testnet_db_psql);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("fixture", 60);
    tcase_add_test(tc, test_testnet_sh_inside_and_sbxd_args);
    tcase_add_test(tc, test_testnet_two_fixtures);
    tcase_add_test(tc, test_testnet_stop_leaves_nothing);
    tcase_add_test(tc, test_testnet_holder_killed_leaves_nothing);
    tcase_add_test(tc, test_testnet_test_killed_leaves_nothing);
    suite_add_tcase(s, tc);
    return s;
}
