/* SPDX-License-Identifier: MIT */
/* isolation: what a sandbox cannot see or touch of the host and of other sandboxes. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "testnet.h"

static void write_host(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "cannot create %s", path);
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

START_TEST(test_sbxd_isolation_host_home_marker)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    const char *home = getenv("HOME") && *getenv("HOME") ? getenv("HOME") : "/root";
    char name[64], secret[64], in_home[512], in_root[512], in_tmp[512];
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    snprintf(name, sizeof name, ".sbxd-it-marker-%s", rand_hex(16));
    snprintf(secret, sizeof secret, "host-secret-%s", rand_hex(16));
    snprintf(in_home, sizeof in_home, "%s/%s", home, name);
    snprintf(in_root, sizeof in_root, "/root/%s-root", name);
    snprintf(in_tmp, sizeof in_tmp, "%s/%s", d->dir, name); /* a host /tmp path */
    sbxd_cleanup_path(d, in_home);
    sbxd_cleanup_path(d, in_root);
    write_host(in_home, secret);
    write_host(in_root, secret);
    write_host(in_tmp, secret);
    for (int sudo = 0; sudo < 2; sudo++) {
        const char *who = sudo ? "sudo" : "user";
        const char *cat = "cat '%s' '%s' '%s' 2>&1; cat ~/%s /root/%s 2>&1; true";
        const char *look = "ls -a /root ~ /tmp 2>&1";
        c = sudo ? sbx_sh_sudo(d, sid, cat, in_home, in_root, in_tmp, name, name)
                 : sbx_sh(d, sid, cat, in_home, in_root, in_tmp, name, name);
        ck_assert_msg(!contains(c->out, secret), "%s: the sandbox read a host file: %s", who, c->out);
        ck_assert_msg(contains(c->out, "No such file"), "%s: unexpected: %s", who, c->out);
        cmd_result_free(c);
        c = sudo ? sbx_sh_sudo(d, sid, "%s", look) : sbx_sh(d, sid, "%s", look);
        ck_assert_msg(!contains(c->out, name), "%s: the sandbox sees the host marker: %s", who, c->out);
        cmd_result_free(c);
        c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s],s:b}", "command", "python3", "args", "-c", PY_FIND, name,
                                  "sudo", sudo));
        ck_assert_msg(c->exit_code == 0 && !contains(c->out, name), "%s: found the host marker: %s%s", who, c->out,
                      c->err);
        cmd_result_free(c);
    }
    /* The control: the same command finds a marker placed inside the sandbox. */
    c = sbx_sh(d, sid, "echo %s > ~/%s; cat ~/%s", secret, name, name);
    ck_assert_msg(contains(c->out, secret), "control failed: %s %s", c->out, c->err);
    cmd_result_free(c);
    ck_assert_msg(host_sh("grep -q '%s' '%s'", secret, in_home) == 0, "the host marker changed");
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_etc_shadow)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), first[256] = "";
    FILE *f = fopen("/etc/shadow", "r");
    struct cmd_result *c;

    if (f) {
        if (!fgets(first, sizeof first, f))
            first[0] = '\0';
        fclose(f);
        first[strcspn(first, "\n")] = '\0';
    }
    for (int sudo = 0; sudo < 2; sudo++) {
        c = sudo ? sbx_sh_sudo(d, sid, "cat /etc/shadow") : sbx_sh(d, sid, "cat /etc/shadow");
        ck_assert_msg(c->exit_code != 0, "%s: cat /etc/shadow succeeded: %s", sudo ? "sudo" : "user", c->out);
        ck_assert_msg(!*first || !contains(c->out, first), "host /etc/shadow leaked");
        cmd_result_free(c);
    }
    /* Not through fs/read either. */
    {
        struct http_resp *r = sbx_fs_read(d, sid, "/etc/shadow", NULL);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* The file API follows links as the sandbox sees them, never on the host:
 * a link to a host file, to the host's /tmp through /proc/1/root, or to a
 * host directory neither reads nor writes the host. */
START_TEST(test_sbxd_isolation_files_api_through_links)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    char secret[300], outdir[300], marker[64], tmp_marker[128], ent[160];
    struct cmd_result *c;
    struct http_resp *r;
    void *t;
    size_t len;
    FILE *f;

    snprintf(marker, sizeof marker, "sbxd-link-secret-%ld", (long)getpid());
    snprintf(secret, sizeof secret, "%s/host-secret.txt", d->dir);
    snprintf(outdir, sizeof outdir, "%s/host-out", d->dir);
    ck_assert_int_eq(mkdir(outdir, 0777), 0);
    ck_assert_ptr_nonnull(f = fopen(secret, "w"));
    fprintf(f, "%s\n", marker);
    fclose(f);
    chmod(secret, 0644);
    snprintf(tmp_marker, sizeof tmp_marker, "/tmp/%s-written", marker);
    c = sbx_sh(d, sid, "cd /vercel/sandbox && ln -s '%s' s && ln -s /proc/1/root/tmp evil && ln -s '%s' hostdir && "
                       "ln -s / root && echo LINKED", secret, outdir);
    ck_assert_str_eq(c->out, "LINKED\n");
    cmd_result_free(c);
    /* reads */
    {
        char through_root[400];
        const char *paths[] = {"/vercel/sandbox/s", through_root, "/proc/1/root/../../..", secret};
        snprintf(through_root, sizeof through_root, "/vercel/sandbox/root%s", secret);
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
            r = sbx_fs_read(d, sid, paths[i], NULL);
            ck_assert_msg(r->status != 200 && !contains(r->body, marker), "fs/read %s: %ld %s", paths[i], r->status,
                          r->body);
            http_resp_free(r);
        }
    }
    /* writes: through the links, with x-cwd / */
    {
        const char *names[] = {"vercel/sandbox/hostdir/pwned.txt", NULL};
        snprintf(ent, sizeof ent, "vercel/sandbox/evil/%s-written", marker);
        names[1] = ent;
        for (size_t i = 0; i < 2; i++) {
            struct tar_ent e = {names[i], "pwned", 5, 0644, 'f', NULL};
            t = tar_gz(&e, 1, TAR_PAX, &len);
            r = sbx_fs_write(d, sid, t, len, "/");
            http_resp_free(r);
            free(t);
        }
    }
    ck_assert_msg(host_sh("[ -z \"$(ls -A '%s')\" ]", outdir) == 0, "fs/write wrote into a host directory");
    ck_assert_msg(access(tmp_marker, F_OK) != 0, "fs/write wrote %s on the host", tmp_marker);
    /* where it did land: the sandbox's own /tmp */
    c = sbx_sh(d, sid, "cat /tmp/%s-written", marker);
    ck_assert_str_eq(c->out, "pwned");
    cmd_result_free(c);
    unlink(tmp_marker);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_host_environment)
{
    char secret[96], env_entry[128];
    const char *env[] = {env_entry, NULL};
    struct sbxd *d;
    char *sid;
    struct cmd_result *c;

    snprintf(secret, sizeof secret, "sbxd-it-env-%s", rand_hex(24));
    snprintf(env_entry, sizeof env_entry, "SBXD_TEST_SECRET=%s", secret);
    d = sbxd_start(NULL, env);
    /* sbxd itself has it (the control). */
    ck_assert_int_eq(host_sh("tr '\\0' '\\n' < /proc/%d/environ | grep -q '%s'", (int)d->pid, secret), 0);
    for (int iso = 0; iso < 2; iso++) {
        sid = sbx_create(d, iso ? jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all") : NULL);
        c = sbx_sh(d, sid, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; true");
        ck_assert_msg(contains(c->out, "PATH="), "env printed nothing: %s", c->out);
        ck_assert_msg(!contains(c->out, secret) && !contains(c->out, "SBXD_TEST_SECRET"),
                      "a host environment variable reached the sandbox: %s", c->out);
        cmd_result_free(c);
        c = sbx_sh_sudo(d, sid, "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; true");
        ck_assert_msg(!contains(c->out, secret), "sudo: host environment visible");
        cmd_result_free(c);
        free(sid);
    }
    sbxd_stop(d);
}
END_TEST

/* A direct TCP connection and an HTTP fetch (with the sandbox's proxy
 * settings as they are) from the sandbox to addr:port; whether they got
 * through. Both must agree. */
static bool reaches(struct sbxd *d, const char *sid, const char *addr, int port, const char *body)
{
    char p[16], url[96];
    struct cmd_result *c;
    bool tcp, http;

    snprintf(p, sizeof p, "%d", port);
    snprintf(url, sizeof url, "http://%s:%d/", addr, port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_CONNECT, addr, p));
    tcp = contains(c->out, "CONNECTED");
    ck_assert_msg(tcp || contains(c->out, "REFUSED"), "connect %s:%d: %s%s", addr, port, c->out, c->err);
    cmd_result_free(c);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s]}", "command", "python3", "args", "-c", PY_FETCH, url));
    http = contains(c->out, "STATUS 200") && contains(c->out, body);
    cmd_result_free(c);
    return tcp || http;
}

START_TEST(test_sbxd_isolation_no_sandbox_reaches_host)
{
    struct testnet *t = testnet_start(0);
    struct sbxd *d = sbxd_start(testnet_sbxd_args(t), NULL);
    struct host_server *hs = host_server_start("host-server-body");
    char *deny = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));
    char *allow = sbx_create(d, NULL);
    struct http_resp *r;

    /* The control: the same server in the test network is the outside. */
    r = testnet_http_get(t, "http://www.test/", 5000);
    expect_status(r, 200);
    ck_assert_msg(reaches(d, allow, t->addr, t->http_port, r->body), "allow-all cannot reach the outside");
    ck_assert_msg(!reaches(d, deny, t->addr, t->http_port, r->body), "deny-all reached the outside");
    http_resp_free(r);
    /* Neither reaches a server on the host's loopback. */
    ck_assert_msg(!reaches(d, deny, "127.0.0.1", hs->port, hs->body), "deny-all reached the host");
    ck_assert_msg(!reaches(d, allow, "127.0.0.1", hs->port, hs->body), "allow-all reached the host");
    ck_assert_msg(hs->hits == 0, "the host server saw %d requests from sandboxes", hs->hits);
    host_server_stop(hs);
    free(deny);
    free(allow);
    sbxd_stop(d);
    testnet_stop(t);
}
END_TEST

/* A direct TCP connection (no proxy) from the sandbox must (want) or must
 * not get through. */
static void expect_connect(struct sbxd *d, const char *sid, const char *host, int port, bool want, const char *what)
{
    char p[16];
    struct cmd_result *c;
    snprintf(p, sizeof p, "%d", port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_CONNECT, host, p));
    ck_assert_msg(contains(c->out, "CONNECTED") || contains(c->out, "REFUSED"), "connect %s:%d: %s%s", host, port,
                  c->out, c->err);
    ck_assert_msg(contains(c->out, "CONNECTED") == want, "%s (%s:%d): %s", what, host, port, c->out);
    cmd_result_free(c);
}

static void set_policy(struct sbxd *d, const char *sid, json_t *policy)
{
    struct http_resp *r = http_post(d, policy, "/v1/sandboxes/%s/network-policy", sid);
    expect_status(r, 200);
    http_resp_free(r);
}

/* A custom policy reaches what it allows over plain TCP too (a database's
 * protocol does not go through the egress proxy), and nothing else: not
 * another address, not an allowed address a denied CIDR covers, not the
 * host even when a CIDR names it, not after the policy changes. */
START_TEST(test_sbxd_isolation_custom_policy_raw_tcp)
{
    struct testnet *t = testnet_start(0);
    struct sbxd *d = sbxd_start(testnet_sbxd_args(t), NULL);
    struct host_server *hs = host_server_start("raw-tcp-host");
    char addr32[32], host32[32], other[32];
    char *sid;
    /* Without sbxd-net (an unprivileged sbxd where /dev/net/tun is 0600)
     * the egress proxy is a custom policy's only way out: no raw TCP. */
    bool raw = host_sh("grep -q \"isolation layer 'network' is off\" '%s'", d->log) != 0;

    snprintf(addr32, sizeof addr32, "%s/32", t->addr);
    snprintf(host32, sizeof host32, "%s/32", t->host_addr);
    /* An address next to the fixture's that nothing routes: refused by the
     * rules (an RST at once), never a timeout. */
    snprintf(other, sizeof other, "%s", t->addr);
    other[strlen(other) - 1] = other[strlen(other) - 1] == '9' ? '8' : '9';

    /* By name: the policy allows git.test, which --add-host resolves. */
    sid = sbx_create(d, jpack("{s:{s:s,s:[s]}}", "networkPolicy", "mode", "custom", "allowedDomains", "git.test"));
    expect_connect(d, sid, "git.test", t->git_port, raw, "an allowed name is not reachable over TCP");
    expect_connect(d, sid, t->addr, t->http_port, raw, "the allowed name's address, another port");
    expect_connect(d, sid, other, t->http_port, false, "an address the policy does not allow was reached");
    expect_connect(d, sid, t->host_addr, hs->port, false, "the host's address was reached");
    expect_connect(d, sid, "10.0.2.2", hs->port, false, "the stack's gateway (the host's loopback) was reached");
    ck_assert_int_eq(hs->hits, 0);

    /* A name the policy does not allow: the same address is out of reach. */
    set_policy(d, sid, jpack("{s:s,s:[s]}", "mode", "custom", "allowedDomains", "registry.example"));
    expect_connect(d, sid, "git.test", t->git_port, false, "a name the policy no longer allows was reached");

    /* By CIDR, and a denied CIDR wins. */
    set_policy(d, sid, jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs", addr32));
    expect_connect(d, sid, t->addr, t->git_port, raw, "an allowed CIDR is not reachable over TCP");
    set_policy(d, sid, jpack("{s:s,s:[s],s:[s]}", "mode", "custom", "allowedCIDRs", addr32, "deniedCIDRs", addr32));
    expect_connect(d, sid, t->addr, t->git_port, false, "a denied CIDR was reached");

    /* A CIDR naming the host opens the proxy's way to it, never a raw one. */
    set_policy(d, sid, jpack("{s:s,s:[s,s]}", "mode", "custom", "allowedCIDRs", host32, "127.0.0.0/8"));
    expect_connect(d, sid, t->host_addr, hs->port, false, "the host was reached over raw TCP");
    expect_connect(d, sid, "10.0.2.2", hs->port, false, "the host's loopback was reached over raw TCP");
    ck_assert_int_eq(hs->hits, 0);

    /* deny-all closes it again; custom opens it again. */
    set_policy(d, sid, jpack("{s:s}", "mode", "deny-all"));
    expect_connect(d, sid, t->addr, t->git_port, false, "deny-all reached the outside over TCP");
    set_policy(d, sid, jpack("{s:s,s:[s]}", "mode", "custom", "allowedDomains", "*.test"));
    expect_connect(d, sid, "db.test", t->http_port, raw, "a wildcard's name is not reachable over TCP");
    free(sid);

    /* A sandbox created deny-all, then given a custom policy. */
    sid = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));
    expect_connect(d, sid, t->addr, t->git_port, false, "deny-all reached the outside over TCP");
    set_policy(d, sid, jpack("{s:s,s:[s]}", "mode", "custom", "allowedCIDRs", addr32));
    expect_connect(d, sid, t->addr, t->git_port, raw, "custom after deny-all is not reachable over TCP");
    free(sid);

    host_server_stop(hs);
    sbxd_stop(d);
    testnet_stop(t);
}
END_TEST

START_TEST(test_sbxd_isolation_sandboxes_do_not_see_each_other)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *a = sbx_create(d, NULL), *b = sbx_create(d, NULL), *b_iso, *cid, marker[32], secret[64];
    struct cmd_result *c;

    snprintf(marker, sizeof marker, "3%s", rand_hex(6)); /* a number of seconds nobody else sleeps */
    for (char *p = marker; *p; p++)
        if (*p < '0' || *p > '9')
            *p = (char)('0' + (*p - 'a'));
    snprintf(secret, sizeof secret, "a-only-%s", rand_hex(16));
    cid = sbx_detach(d, a, jpack("{s:s,s:[s]}", "command", "sleep", "args", marker));
    c = sbx_sh(d, a, "echo %s > /vercel/sandbox/a-file; echo %s > /tmp/a-file; "
                     "for i in $(seq 100); do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | "
                     "grep -q 'sleep %s' && break; sleep 0.05; done; cat /proc/[0-9]*/cmdline | tr '\\0' ' '",
               secret, secret, marker);
    ck_assert_msg(contains(c->out, marker), "control: A does not see its own sleep %s: %s", marker, c->out);
    cmd_result_free(c);

    b_iso = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));
    for (int i = 0; i < 2; i++) {
        const char *other = i ? b_iso : b;
        c = sbx_sh(d, other, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; "
                             "cat /vercel/sandbox/a-file /tmp/a-file 2>&1; true");
        ck_assert_msg(!contains(c->out, marker), "sandbox %s sees A's process: %s", other, c->out);
        ck_assert_msg(!contains(c->out, secret), "sandbox %s reads A's files: %s", other, c->out);
        cmd_result_free(c);
        /* Nor can it signal it: A's sleep is still running afterwards. */
        c = sbx_sh_sudo(d, other, "kill -9 -1; true");
        cmd_result_free(c);
    }
    c = sbx_sh(d, a, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '");
    ck_assert_msg(contains(c->out, marker), "A's process died: %s", c->out);
    cmd_result_free(c);
    free(cid);
    free(a);
    free(b);
    free(b_iso);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_usr_read_only)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), name[64], host_path[128];
    struct cmd_result *c;

    snprintf(name, sizeof name, "sbxd-it-%s", rand_hex(12));
    snprintf(host_path, sizeof host_path, "/usr/lib/%s", name);
    sbxd_cleanup_path(d, host_path);
    snprintf(host_path, sizeof host_path, "/usr/bin/%s", name);
    sbxd_cleanup_path(d, host_path);
    snprintf(host_path, sizeof host_path, "/usr/%s", name);
    sbxd_cleanup_path(d, host_path);
    for (int sudo = 0; sudo < 2; sudo++) {
        const char *script = "touch /usr/%s 2>&1 && echo WROTE; mkdir /usr/lib/%s 2>&1 && echo WROTE; "
                             "cp /usr/bin/env /usr/bin/%s 2>&1 && echo WROTE; true";
        c = sudo ? sbx_sh_sudo(d, sid, script, name, name, name) : sbx_sh(d, sid, script, name, name, name);
        ck_assert_msg(!contains(c->out, "WROTE"), "%s wrote into /usr: %s", sudo ? "sudo" : "user", c->out);
        ck_assert_msg(contains(c->out, "Read-only") || contains(c->out, "ermission denied"), "%s", c->out);
        cmd_result_free(c);
    }
    ck_assert_msg(access(host_path, F_OK) != 0, "%s appeared on the host", host_path);
    /* fs/write and fs/mkdir cannot either. */
    {
        char p[128];
        struct http_resp *r;
        struct tar_ent e = {host_path + 1, "x", 1, 0644, 'f', NULL};
        size_t len;
        void *t = tar_gz(&e, 1, TAR_PAX, &len);
        r = sbx_fs_write(d, sid, t, len, "/");
        ck_assert_msg(r->status >= 400 && r->status < 500, "fs/write into /usr: %ld", r->status);
        http_resp_free(r);
        free(t);
        snprintf(p, sizeof p, "/usr/%s-dir", name);
        r = http_post(d, jpack("{s:s}", "path", p), "/v1/sandboxes/%s/fs/mkdir", sid);
        ck_assert_msg(r->status >= 400 && r->status < 500, "fs/mkdir in /usr: %ld", r->status);
        http_resp_free(r);
    }
    ck_assert_msg(access(host_path, F_OK) != 0, "%s appeared on the host", host_path);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_uid_and_sudo)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    c = sbx_sh(d, sid, "id -u; id -g; id -un; echo $HOME");
    ck_assert_str_eq(c->out, "1000\n1000\nvercel-sandbox\n/home/vercel-sandbox\n");
    cmd_result_free(c);
    c = sbx_sh_sudo(d, sid, "id -u; id -g");
    ck_assert_str_eq(c->out, "0\n0\n");
    cmd_result_free(c);
    /* Files written through the API belong to the sandbox user. */
    sbx_write_file(d, sid, "/vercel/sandbox/owned", "x", 1, 0644);
    c = sbx_sh(d, sid, "stat -c %%u:%%g /vercel/sandbox/owned");
    ck_assert_str_eq(c->out, "1000:1000\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

static void check_server_then_client(struct sbxd *d, const char *sid, int port)
{
    char portstr[16], url[64], body[64];
    struct cmd_result *c;
    char *cid;
    const char *client = "import sys, time, urllib.request\n"
                         "deadline = time.time() + 20\n"
                         "while True:\n"
                         "    try:\n"
                         "        print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()); break\n"
                         "    except Exception as e:\n"
                         "        if time.time() > deadline: print('ERROR', e); break\n"
                         "        time.sleep(0.1)\n";

    snprintf(portstr, sizeof portstr, "%d", port);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/served.txt", port);
    snprintf(body, sizeof body, "served-%s", rand_hex(12));
    sbx_write_file(d, sid, "/vercel/sandbox/served.txt", body, strlen(body), 0644);
    cid = sbx_detach(d, sid, jpack("{s:s,s:[s,s,s,s,s]}", "command", "python3", "args", "-m", "http.server", portstr,
                                   "--bind", "127.0.0.1"));
    /* A later command in the same sandbox reaches it (it retries until the
     * server listens: nothing else says when it does). */
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s]}", "command", "python3", "args", "-c", client, url));
    ck_assert_msg(contains(c->out, body), "second command could not reach the first's server: %s%s", c->out, c->err);
    cmd_result_free(c);
    free(cid);
}

START_TEST(test_sbxd_isolation_detached_server_reachable_later)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *host_net = sbx_create(d, NULL);
    char *isolated = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));

    check_server_then_client(d, host_net, free_port());
    check_server_then_client(d, isolated, 8000);
    free(host_net);
    free(isolated);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_state_dir_not_visible)
{
    /* The token and other sandboxes' roots live in the state directory. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    for (int sudo = 0; sudo < 2; sudo++) {
        const char *script = "cat '%s/token' 2>&1; ls '%s' 2>&1; true";
        c = sudo ? sbx_sh_sudo(d, sid, script, d->state, d->state) : sbx_sh(d, sid, script, d->state, d->state);
        ck_assert_msg(!contains(c->out, d->token), "the sandbox can read sbxd's token: %s", c->out);
        ck_assert_msg(!contains(c->out, "sandboxes"), "the sandbox lists the state directory: %s", c->out);
        cmd_result_free(c);
        c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s],s:b}", "command", "python3", "args", "-c", PY_FIND, d->token,
                                  "content", "sudo", sudo));
        ck_assert_msg(c->exit_code == 0, "search failed: %s", c->err);
        ck_assert_msg(!contains(c->out, "/"), "files holding sbxd's token are visible: %s", c->out);
        cmd_result_free(c);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_init_control_channel_private)
{
    /* sbxd-init (pid 1) holds the control socket that can start commands and
     * open files for sbxd; commands must not get at it. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;
    const char *probe = "import os\n"
                        "for p in ('/proc/1/fd/3', '/proc/1/environ', '/proc/1/mem'):\n"
                        "    try:\n"
                        "        f = os.open(p, os.O_RDWR)\n"
                        "        print('OPENED', p)\n"
                        "    except OSError as e:\n"
                        "        print('DENIED', p, e.errno)\n"
                        "print('FDS', sorted(os.listdir('/proc/self/fd')))\n";

    for (int sudo = 0; sudo < 2; sudo++) {
        c = sbxd_run(d, sid, jpack("{s:s,s:[s,s],s:b}", "command", "python3", "args", "-c", probe, "sudo", sudo));
        ck_assert_msg(!contains(c->out, "OPENED"), "%s: %s", sudo ? "sudo" : "user", c->out);
        ck_assert_msg(contains(c->out, "DENIED /proc/1/fd/3"), "%s", c->out);
        /* Nothing but stdin, stdout, stderr (and the listing's own fd) is inherited. */
        ck_assert_msg(contains(c->out, "FDS ['0', '1', '2', '3']"), "inherited fds: %s", c->out);
        cmd_result_free(c);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* bwrap sets a context up with the host's root at /oldroot and the sandbox's
 * root at /newroot; its mount points are made (mkdir, creat) on the real file
 * system. A sandbox that plants a symlink where a mount point goes must not
 * get directories or files created on the host. */
START_TEST(test_sbxd_isolation_planted_symlink_policy_switch)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), host[400];
    struct cmd_result *c;
    struct http_resp *r;

    snprintf(host, sizeof host, "%s/escape", d->dir);
    ck_assert(mkdir(host, 0755) == 0);
    /* /etc holds mount points (/etc/ssl, ...) but is not one: it can move. */
    c = sbx_sh(d, sid, "mv /etc /etc.orig && ln -s /oldroot%s /etc && ls -ld /etc", host);
    ck_assert_msg(c->exit_code == 0, "could not plant the symlink: %s%s", c->out, c->err);
    cmd_result_free(c);
    /* A policy change across host/isolated boots a second context. */
    r = http_post(d, jpack("{s:s}", "mode", "deny-all"), "/v1/sandboxes/%s/network-policy", sid);
    /* The second context joins by namespace fds: the tampered tree is no
     * obstacle, and the change succeeds. */
    expect_status(r, 200);
    http_resp_free(r);
    c = sbx_sh(d, sid, "cat /proc/net/dev | wc -l");
    ck_assert_msg(c->exit_code == 0 && contains(c->out, "3"),
                  "commands after the switch should run isolated (only lo): %s%s", c->out, c->err);
    cmd_result_free(c);
    ck_assert_msg(count_entries(host) == 0,
                  "starting a context on the sandbox's tampered root created %d entries in the host directory %s "
                  "(sandbox escape: files and directories created on the host)",
                  count_entries(host), host);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_planted_symlink_in_snapshot)
{
    /* The same through a snapshot: no policy change needed, whoever creates a
     * sandbox from it boots a context on the planted tree. /etc/ld.so.cache
     * is a file mount point; a dangling symlink there is followed by creat(). */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), host[400], *snap;
    struct cmd_result *c;
    struct http_resp *r;

    snprintf(host, sizeof host, "%s/created-by-sandbox", d->dir); /* does not exist yet */
    c = sbx_sh(d, sid, "set -e; mv /etc /etc.orig; mkdir /etc; "
                       "for f in passwd group hosts hostname resolv.conf nsswitch.conf; do "
                       "cp /etc.orig/$f /etc/ 2>/dev/null || true; done; ln -s /oldroot%s /etc/ld.so.cache",
               host);
    ck_assert_msg(c->exit_code == 0, "could not plant the symlink: %s%s", c->out, c->err);
    cmd_result_free(c);
    r = http_post(d, NULL, "/v1/sandboxes/%s/snapshot", sid);
    expect_status(r, 200);
    snap = strdup(json_string_value(json_object_get(json_object_get(r->json, "snapshot"), "id")));
    http_resp_free(r);
    r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap), "/v1/sandboxes");
    http_resp_free(r);
    ck_assert_msg(access(host, F_OK) != 0,
                  "booting a sandbox from a snapshot with a planted /etc/ld.so.cache symlink created %s on the host",
                  host);
    free(snap);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_isolation_pids_max)
{
    /* A fork bomb stays inside its sandbox's process limit. */
    /* Unprivileged, the limit is RLIMIT_NPROC of sbxd's own uid, which its
     * threads and every sandbox share: room for the control needs more. */
    const char *limit = sbxd_it_uid() ? "64" : "32";
    const char *args[] = {"--pids-max", limit, NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *a = sbx_create(d, NULL), *b = sbx_create(d, NULL);
    struct cmd_result *c;

    c = sbxd_run(d, a, jpack("{s:s,s:[s,s]}", "command", "python3", "args", "-c",
                            "import os, signal, time\n"
                            "kids = []\n"
                            "for i in range(200):\n"
                            "    try:\n"
                            "        pid = os.fork()\n"
                            "    except OSError:\n"
                            "        break\n"
                            "    if pid == 0:\n"
                            "        time.sleep(60); os._exit(0)\n"
                            "    kids.append(pid)\n"
                            "print(len(kids))\n"
                            "for k in kids: os.kill(k, signal.SIGKILL)\n"
                            "for k in kids: os.waitpid(k, 0)\n"));
    ck_assert_msg(c->exit_code == 0, "fork loop: %d %s", c->exit_code, c->err);
    ck_assert_msg(atoi(c->out) < atoi(limit), "%d forks succeeded in a sandbox with --pids-max %s", atoi(c->out),
                  limit);
    ck_assert_msg(atoi(c->out) >= 8, "control: only %s forks", c->out);
    cmd_result_free(c);
    /* The other sandbox is unaffected; B can start plenty. */
    c = sbx_sh(d, b, "for i in 1 2 3 4 5 6 7 8 9 10; do (exec sleep 1) & done; wait; echo fine");
    ck_assert_str_eq(c->out, "fine\n");
    cmd_result_free(c);
    free(a);
    free(b);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_isolation");
    TCase *tc = sbx_tcase("isolation", 120);
    tcase_add_test(tc, test_sbxd_isolation_host_home_marker);
    tcase_add_test(tc, test_sbxd_isolation_etc_shadow);
    tcase_add_test(tc, test_sbxd_isolation_host_environment);
    tcase_add_test(tc, test_sbxd_isolation_files_api_through_links);
    tcase_add_test(tc, test_sbxd_isolation_no_sandbox_reaches_host);
    tcase_add_test(tc, test_sbxd_isolation_custom_policy_raw_tcp);
    tcase_add_test(tc, test_sbxd_isolation_sandboxes_do_not_see_each_other);
    tcase_add_test(tc, test_sbxd_isolation_usr_read_only);
    tcase_add_test(tc, test_sbxd_isolation_uid_and_sudo);
    tcase_add_test(tc, test_sbxd_isolation_detached_server_reachable_later);
    tcase_add_test(tc, test_sbxd_isolation_state_dir_not_visible);
    tcase_add_test(tc, test_sbxd_isolation_init_control_channel_private);
    tcase_add_test(tc, test_sbxd_isolation_pids_max);
    tcase_add_test(tc, test_sbxd_isolation_planted_symlink_policy_switch);
    tcase_add_test(tc, test_sbxd_isolation_planted_symlink_in_snapshot);
    suite_add_tcase(s, tc);
    return s;
}
