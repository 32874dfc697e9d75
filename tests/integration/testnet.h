/* SPDX-License-Identifier: MIT */
/*
 * The test internet: a fixture standing in for the outside world, for tests of
 * sandboxes whose network reaches "outside" addresses (see testnet.md).
 *
 * testnet_start makes a network namespace joined to the host by a veth pair
 * (a /30 of its own in 10.213.0.0/16) and runs inside it an HTTP server
 * (static files, /echo, /bytes/N, a git repository over dumb and smart HTTP
 * (http://git.test/demo.git, http://git.test/smart/demo.git), an npm registry,
 * a PEP 503 index), git daemon and, with TESTNET_DB, PostgreSQL 15. The names
 * www.test, git.test, registry.test and db.test all stand for its address.
 *
 * Nothing outlives the test process, however it ends: the holder (a Python
 * program, testnet_services.py) is PID 1 of new network, mount, IPC and PID
 * namespaces and dies with the process that started it (PR_SET_PDEATHSIG); its
 * death kills every service, frees the namespaces (so the veth pair goes) and
 * the tmpfs holding every generated file. Nothing is named in /run/netns and
 * nothing is written to the host's disk.
 *
 * Needs root, iproute2, util-linux (mount, nsenter), python3, git, and for
 * TESTNET_DB PostgreSQL 15 in /usr/lib/postgresql/15/bin. Each call makes its
 * own fixture; several may run at once, in one process or many.
 */
#ifndef SBXD_IT_TESTNET_H
#define SBXD_IT_TESTNET_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness.h"

struct curl_slist;

enum {
    TESTNET_DB = 1,         /* also start PostgreSQL (initdb: a second or two) */
};

/* The token http://git.test/private.git and http://git.test/smart/private.git
 * ask for: HTTP basic auth with user
 * x-access-token and this password (testnet_services.py's PRIVATE_TOKEN). */
#define TESTNET_PRIVATE_TOKEN "tn-private-7f3c9a1e5b2d4086"

/* The names the fixture serves, all resolving to its address (NULL-terminated). */
extern const char *const testnet_names[];

struct testnet {
    pid_t holder;           /* PID 1 of the fixture; its death removes everything */
    char netns[64];         /* /proc/PID/ns/net */
    char addr[16];          /* "the internet": the address inside the namespace */
    char host_addr[16];     /* the host's end of the veth pair: a host address */
    char subnet[24];        /* both ends, e.g. "10.213.5.0/30" */
    char host_if[16];       /* the veth's host end, e.g. "sbxtn1234h" */
    char ns_if[16];         /* its end in the namespace, e.g. "sbxtn1234n" */
    int http_port;          /* 80: every name, same content */
    int git_port;           /* 9418: git daemon */
    int db_port;            /* 5432 with TESTNET_DB, else 0 */
    unsigned flags;         /* as given to testnet_start */
    /* Paths as the fixture's processes see them (testnet_sh, testnet_host_sh). */
    char root[64];          /* /tmp/testnet: http.log, git-daemon.log, pg/postgres.log */
    char www[64];           /* /tmp/testnet/www: served at http://www.test/ */
    char scratch[64];       /* /tmp/testnet/scratch: for a test's files (mode 1777) */
    /* The same from the host: /proc/HOLDER/root/tmp/testnet..., for open() and
     * friends; not for tools that resolve real paths (npm, realpath). */
    char host_root[96];
    char host_www[96];
    /* demo.git: main's head, feature's head, the commit tagged v1.0. The same
     * on every run (fixed identities and dates). */
    char git_head[41];
    char git_feature[41];
    char git_tag[41];
    /* private */
    int holder_fd;          /* a pidfd, -1 where there is none (valgrind) */
    bool holder_reaped;
    int ctl_fd;             /* the holder's stdin (a socket): EOF ends the fixture */
    int out_fd;             /* its stdout */
    char args_buf[4][64];
    const char *args[9];
    int64_t t_ready_ms;     /* how long testnet_start took */
};

/* Start a fixture; flags: TESTNET_DB. Returns once every service answers from
 * the host (HTTP, git daemon, PostgreSQL). Fails the test (ck_abort) with the
 * reason when it cannot. Call it from the thread that lives as long as the
 * fixture should: PR_SET_PDEATHSIG fires when the creating thread exits. */
struct testnet *testnet_start(unsigned flags);
/* Delete the veth pair, kill the holder (and so every service), wait until
 * the namespace's last process is gone and free t. */
void testnet_stop(struct testnet *t);
/* Kill the holder as a crash would (SIGKILL) and reap it, nothing more: the
 * kernel's namespace teardown removes the veth pair, asynchronously. For tests
 * of that cleanup; testnet_stop(t) still frees t. Kill the holder this way,
 * never by its pid and waitpid: testnet_stop must know it was reaped. */
void testnet_kill(struct testnet *t);

/* The fixture's names as sbxd options, {"--add-host", "www.test=ADDR",
 * "--add-host", "git.test=ADDR", ...} (NULL-terminated, owned by t): pass it
 * to sbxd_start. */
const char *const *testnet_sbxd_args(const struct testnet *t);
/* "www.test:80:ADDR" entries for CURLOPT_RESOLVE (or git's http.curloptResolve),
 * one per name; free with curl_slist_free_all. */
struct curl_slist *testnet_curl_resolve(const struct testnet *t);
/* GET an http:// URL from the host with the fixture's names resolved (no
 * proxy). status 0 means the transfer failed (the curl error is the body). */
struct http_resp *testnet_http_get(const struct testnet *t, const char *url, long timeout_ms);

/* The directory of npm tarballs the registry serves besides the packages it
 * makes (DIR/<name>/-/<name>-<version>.tgz): TESTNET_NPM_DIR from the
 * environment, else the compiled-in tests/fixtures/registry-cache, which
 * tests/fixtures/fetch-registry.sh fills. It may be missing or empty. */
const char *testnet_npm_dir(void);

/* Run `sh -c CMD` inside the fixture (nsenter): its network namespace (its
 * addresses are local, the host is t->host_addr), its files (/tmp is its
 * tmpfs) and its PID namespace, so anything the command leaves running dies
 * with the fixture. Returns the exit status (128 + N after signal N). CMD is
 * a printf format. */
int testnet_sh(const struct testnet *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Run `sh -c CMD` on the host's network, as a client of the fixture, but with
 * the fixture's /tmp and PID namespace: whatever it writes under /tmp (use
 * t->scratch) and whatever it leaves running vanish with the fixture, however
 * the test ends. The host's own /tmp is hidden from it. */
int testnet_host_sh(const struct testnet *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same two, returning stdout and stderr together (malloc'd, NUL-terminated),
 * the exit status in *status. */
char *testnet_sh_out(const struct testnet *t, int *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
char *testnet_host_sh_out(const struct testnet *t, int *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SBXD_IT_TESTNET_H */
