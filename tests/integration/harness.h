/* SPDX-License-Identifier: MIT */
/*
 * The integration-test harness: each test_sbxd_<feature>.c defines its Check
 * suite, harness.c runs it (TAP on stdout) and gives the tests a real sbxd to
 * talk to, HTTP and NDJSON helpers over its unix socket, sandbox and command
 * shortcuts, an in-memory tar.gz builder and a loopback TCP server.
 *
 * Every test starts its own sbxd (sbxd_start) in a fresh temporary directory
 * and stops it (sbxd_stop) at the end. A guard process watches the test: if it
 * dies without stopping its server (a failed assertion, a Check timeout), the
 * guard prints the tail of the sbxd log, stops the server and removes the
 * directory, so a failure leaves nothing behind and explains itself.
 */
#ifndef SBXD_IT_HARNESS_H
#define SBXD_IT_HARNESS_H

#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Defined by each test_sbxd_<feature>.c. */
Suite *sbx_test_suite(void);

/* A TCase with a timeout fit for tests that start servers and sandboxes. */
TCase *sbx_tcase(const char *name, double timeout_s);

/* ---- the server ------------------------------------------------------------ */

struct sbxd {
    pid_t pid;              /* 0 when not running */
    char dir[256];          /* the temporary directory */
    char sock[300];         /* DIR/sock */
    char state[300];        /* DIR/state */
    char log[300];          /* DIR/sbxd.log: sbxd's stderr */
    char token[256];
    char url[320];          /* what sbxd printed after "sbxd listening on " */
    int out_fd;             /* sbxd's stdout */
    int guard_fd;           /* to the guard process */
    pid_t guard_pid;
    char **args;            /* extra options, kept for sbxd_restart */
    char **env;             /* extra environment */
    int64_t t_start;        /* mono_ms() at sbxd_start */
    char exe[400];          /* the sbxd run, when not $SBXD (unprivileged runs) */
};

/* The uid sbxd runs as in this run: SBXD_IT_UID when the tests run as root
 * with it set (an unprivileged sbxd, started with --allow-degraded), else 0
 * for a root sbxd. */
uid_t sbxd_it_uid(void);
/* In a forked child: become that uid (no supplementary groups); _exit(126)
 * on failure. Nothing when the run is a root one. */
void sbxd_it_become_user(void);

/* Start sbxd in a new temporary directory, listening on DIR/sock, with
 * --log-level debug and the extra options `args` and environment entries
 * `env` (KEY=VALUE); both NULL-terminated and optional. Waits (20 s at most)
 * for its "sbxd listening on URL" line and reads the token. */
struct sbxd *sbxd_start(const char *const *args, const char *const *env);
/* SIGTERM, wait, and assert that sbxd exited with status 0. The directory
 * (state, log) stays. */
void sbxd_terminate(struct sbxd *d);
/* SIGKILL, as a crash would: nothing of sbxd's own cleanup runs. */
void sbxd_kill(struct sbxd *d);
/* The same, but the dead sbxd is left a zombie (not reaped: its pid still
 * answers kill(pid, 0)) until the caller waits for the pid returned. */
pid_t sbxd_kill_unreaped(struct sbxd *d);
/* Replace the extra options of the next sbxd_restart (after sbxd_terminate). */
void sbxd_set_args(struct sbxd *d, const char *const *args);
/* Start sbxd again on the same directory and state (after sbxd_terminate). */
void sbxd_restart(struct sbxd *d);
/* Terminate (asserting exit status 0), remove the directory, free d. */
void sbxd_stop(struct sbxd *d);
/* Also remove this host path when the test ends, whichever way it ends. */
void sbxd_cleanup_path(struct sbxd *d, const char *path);
/* Print the last `bytes` of the sbxd log to stderr. */
void sbxd_dump_log(const struct sbxd *d, size_t bytes);

/* ---- HTTP -------------------------------------------------------------------- */

struct http_resp {
    long status;            /* 0: the transfer failed (curl error in body) */
    char *body;             /* always NUL-terminated; len excludes the NUL */
    size_t len;
    json_t *json;           /* body parsed as JSON, NULL when it is not */
    char ctype[128];        /* Content-Type, "" when absent */
    char retry_after[32];   /* Retry-After, "" when absent */
    char what[512];         /* "METHOD PATH", for messages */
    long new_conns;         /* connections opened for it (0: reused one) */
};

enum {
    REQ_NO_AUTH = 1,        /* no Authorization header */
    REQ_NO_CTYPE = 2,       /* no Content-Type header */
    REQ_NO_TEAM = 4,        /* no ?teamId= (the SDK always sends one) */
    REQ_CHUNKED = 8,        /* send the body with chunked encoding */
    REQ_REUSE = 16,         /* use the process's one kept-alive connection */
};

/* A growing byte buffer, always NUL-terminated (p is malloc'd; asserts on
 * out of memory). */
struct membuf {
    char *p;
    size_t len, cap;
};
void membuf_add(struct membuf *b, const void *p, size_t n);

/* One request to sbxd. Like the SDK: Authorization: Bearer TOKEN,
 * Content-Type: application/json (also on GET, DELETE and body-less POST),
 * its User-Agent and ?teamId=... are added unless flags say otherwise or
 * `headers` (NULL-terminated "Name: value" strings) name the header. body
 * NULL sends no body (an empty one for POST). */
struct http_resp *http_request(struct sbxd *d, const char *method, const char *path,
                               const void *body, size_t len, const char *const *headers,
                               unsigned flags);
void http_resp_free(struct http_resp *r);

/* Shortcuts; the path is a printf format. A json_t body is consumed. */
struct http_resp *http_get(struct sbxd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct http_resp *http_delete(struct sbxd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct http_resp *http_post(struct sbxd *d, json_t *body, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct http_resp *http_post_text(struct sbxd *d, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Any method with a JSON body (consumed; NULL = none) and extra headers. */
struct http_resp *http_json(struct sbxd *d, const char *method, json_t *body, const char *const *headers,
                            const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A plain GET of an absolute http:// URL (a route), no proxy, no auth. */
struct http_resp *http_get_url(const char *url, long timeout_ms);
/* The same with names resolved by CURLOPT_RESOLVE entries (NULL: none). */
struct curl_slist;
struct http_resp *http_get_url_resolve(const char *url, long timeout_ms, struct curl_slist *resolve);

/* Assert the status, printing the request and body when it differs. */
#define expect_status(r, code)                                                                  \
    ck_assert_msg((r)->status == (code), "%s: expected HTTP %d, got %ld: %s", (r)->what,       \
                  (int)(code), (r)->status, (r)->body)
/* Assert an error response: the status, Content-Type application/json and a
 * body {"error":{"code": code, "message": non-empty string}}. */
void expect_error(const struct http_resp *r, long status, const char *code);

/* ---- NDJSON streams ------------------------------------------------------------ */

/* Called for every line as it arrives, with the monotonic time in ms. A
 * non-zero return aborts the transfer. */
typedef int (*line_cb)(const char *line, size_t len, int64_t t_ms, void *user);

/* Stream a request's response line by line (method GET or POST; json body
 * consumed, may be NULL). The returned response has the status and headers;
 * its body holds the raw text only when the status is not 200. */
struct http_resp *http_stream(struct sbxd *d, const char *method, json_t *body, line_cb cb,
                              void *user, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Every line of an NDJSON response, parsed (each must be valid JSON), with
 * arrival times. */
struct ndjson {
    long status;
    char ctype[128];
    char *error_body;       /* the body of a non-200 response */
    size_t n;
    json_t **lines;
    int64_t *t;             /* arrival of each line, monotonic ms */
    int64_t t_start, t_end; /* request sent, response complete */
};
struct ndjson *ndjson_request(struct sbxd *d, const char *method, json_t *body, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ndjson_free(struct ndjson *nd);

int64_t mono_ms(void);

/* ---- sandboxes and commands -------------------------------------------------------- */

/* POST /v1/sandboxes with body (consumed; NULL = {}); asserts 200 and returns
 * the response. */
struct http_resp *sbx_create_resp(struct sbxd *d, json_t *body);
/* The same, returning only the new sandbox's id (malloc'd). */
char *sbx_create(struct sbxd *d, json_t *body);
/* GET the sandbox; asserts 200; returns the "sandbox" object (new reference). */
json_t *sbx_get_sandbox(struct sbxd *d, const char *sid);
/* Its status string (static storage, overwritten by the next call). */
const char *sbx_status_str(struct sbxd *d, const char *sid);
/* Poll (every 50 ms, up to timeout_ms) until the sandbox has this status. */
bool sbx_wait_status(struct sbxd *d, const char *sid, const char *status, int64_t timeout_ms);

struct cmd_result {
    char id[64];
    int exit_code;          /* -1 if unknown */
    char *out, *err;        /* concatenated stdout / stderr data */
    size_t out_len, err_len;
    struct ndjson *logs;    /* the log lines as received */
    bool error_line;        /* the logs ended with a {"stream":"error"} line */
};
void cmd_result_free(struct cmd_result *r);

/* Run a command in wait mode (body consumed, "wait": true added), asserting the
 * two-line NDJSON shape, then collect its output from the logs endpoint. */
struct cmd_result *sbxd_run(struct sbxd *d, const char *sid, json_t *cmd);
/* sbxd_run of `sh -c SCRIPT`; the script is a printf format. */
struct cmd_result *sbx_sh(struct sbxd *d, const char *sid, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same as root (sudo: true). */
struct cmd_result *sbx_sh_sudo(struct sbxd *d, const char *sid, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Start a command detached (body consumed); asserts 200; returns its id (malloc'd). */
char *sbx_detach(struct sbxd *d, const char *sid, json_t *cmd);
/* Detached `sh -c SCRIPT`. */
char *sbx_detach_sh(struct sbxd *d, const char *sid, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* GET .../cmd/ID?wait=true; asserts 200 and a numeric exitCode; returns it. */
int sbx_cmd_wait(struct sbxd *d, const char *sid, const char *cid);
/* Read a command's logs (until the stream ends). */
struct cmd_result *sbx_logs(struct sbxd *d, const char *sid, const char *cid);

/* ---- files ---------------------------------------------------------------------------- */

struct tar_ent {
    const char *name;
    const void *data;       /* NULL with len 0 for an empty file */
    size_t len;
    int mode;               /* 0 = 0644 */
    char type;              /* 'f' (or 0) regular, 'd' directory, 'l' symlink, 'h' hard link */
    const char *link;       /* target of 'l' and 'h' */
};
enum { TAR_PAX = 0, TAR_USTAR = 1 };
/* A gzip-compressed tar of the entries, in memory (malloc'd, *len bytes).
 * TAR_PAX writes ustar headers and PAX extended headers where ustar cannot
 * hold a name, as the SDK's tar-stream does; TAR_USTAR only ustar (names up
 * to 255 bytes, split into prefix and name). */
void *tar_gz(const struct tar_ent *e, size_t n, int format, size_t *len);
/* A gzip bomb: a tar.gz of one file of `size` zero bytes (about a thousandth
 * of that compressed). */
void *tar_gz_bomb(const char *name, int64_t size, size_t *len);
/* The entry names a tar.gz holds, in order, as libarchive reads them
 * (NULL-terminated, malloc'd; free with strv_free). */
char **tar_gz_names(const void *data, size_t len);
void strv_free(char **v);
/* POST fs/write with the x-cwd header (NULL: none). */
struct http_resp *sbx_fs_write(struct sbxd *d, const char *sid, const void *tgz, size_t len,
                               const char *xcwd);
/* Write one file (fs/write with x-cwd: /, the name made relative); asserts 200. */
void sbx_write_file(struct sbxd *d, const char *sid, const char *abs_path, const void *data,
                    size_t len, int mode);
/* POST fs/read {"path": path} (and "cwd" when not NULL). */
struct http_resp *sbx_fs_read(struct sbxd *d, const char *sid, const char *path, const char *cwd);

/* ---- host-side helpers ------------------------------------------------------------------- */

/* A loopback HTTP server on the host (127.0.0.1, a free port) answering every
 * request with 200 and `body`; it counts requests. */
struct host_server {
    int fd;
    int port;
    char body[256];
    volatile int hits;
    char last_head[8192];   /* the last request head received */
    pthread_t thread;
};
struct host_server *host_server_start(const char *body);
void host_server_stop(struct host_server *s);

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int free_port(void);
/* A random lowercase hex string of n characters (n < 64), static storage. */
const char *rand_hex(size_t n);
/* Whether any host process has this exact argv (NUL-separated in
 * /proc/PID/cmdline), given as a NULL-terminated list. */
bool host_process_exists(const char *const *argv);
/* Run a host shell command; returns its exit status (asserting it could run). */
int host_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether s contains needle. */
bool contains(const char *s, const char *needle);
/* Build a JSON value from jansson pack format; asserts success. */
json_t *jpack(const char *fmt, ...);

/* Python programs for commands (python3 -c PROGRAM ARGS...). */
/* argv[1] URL: prints "STATUS <code>" then the body, or "ERROR <exception>". */
#define PY_FETCH                                                                               \
    "import sys, urllib.request, urllib.error\n"                                              \
    "try:\n"                                                                                  \
    "    r = urllib.request.urlopen(sys.argv[1], timeout=15)\n"                               \
    "    print('STATUS', r.status)\n"                                                         \
    "    print(r.read().decode())\n"                                                          \
    "except urllib.error.HTTPError as e:\n"                                                   \
    "    print('STATUS', e.code)\n"                                                           \
    "except Exception as e:\n"                                                                \
    "    print('ERROR', type(e).__name__, e)\n"
/* argv[1] host, argv[2] port: a direct TCP connection; prints CONNECTED or REFUSED. */
#define PY_CONNECT                                                                             \
    "import sys, socket\n"                                                                    \
    "try:\n"                                                                                  \
    "    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"          \
    "    print('CONNECTED')\n"                                                                \
    "except Exception as e:\n"                                                                \
    "    print('REFUSED', type(e).__name__, e)\n"

/* The sandbox's other processes (one "argv joined by spaces" line each), read from
 * /proc (no procps needed). With arguments "present"|"absent" NEEDLE...: first
 * wait (5 s at most) until every needle is in / none is in some process's line. */
#define PY_PS                                                                                  \
    "import os, sys, time\n"                                                                  \
    "def procs():\n"                                                                          \
    "    out = []\n"                                                                          \
    "    for p in os.listdir('/proc'):\n"                                                    \
    "        if p.isdigit() and int(p) != os.getpid():\n"                                     \
    "            try:\n"                                                                      \
    "                out.append(open('/proc/%s/cmdline' % p, 'rb').read()\n"                 \
    "                           .replace(b'\\0', b' ').decode(errors='replace').strip())\n"  \
    "            except OSError:\n"                                                           \
    "                pass\n"                                                                  \
    "    return out\n"                                                                        \
    "if len(sys.argv) > 2:\n"                                                                 \
    "    deadline = time.time() + 5\n"                                                        \
    "    while time.time() < deadline:\n"                                                     \
    "        found = [any(n in l for l in procs()) for n in sys.argv[2:]]\n"                  \
    "        if (all(found) if sys.argv[1] == 'present' else not any(found)):\n"              \
    "            break\n"                                                                     \
    "        time.sleep(0.05)\n"                                                              \
    "print('\\n'.join(procs()))\n"
/* Files under / (not /proc, /sys, /dev, /usr) whose name starts with argv[1]
 * or, with a second argument "content", whose first MiB contains argv[1]. */
#define PY_FIND                                                                                \
    "import os, sys\n"                                                                        \
    "needle = sys.argv[1]\n"                                                                  \
    "by_content = len(sys.argv) > 2\n"                                                        \
    "for root, dirs, files in os.walk('/'):\n"                                                \
    "    if root == '/':\n"                                                                   \
    "        dirs[:] = [x for x in dirs if x not in ('proc', 'sys', 'dev', 'usr')]\n"         \
    "    for f in files + dirs:\n"                                                            \
    "        path = os.path.join(root, f)\n"                                                  \
    "        if not by_content:\n"                                                            \
    "            if f.startswith(needle): print(path)\n"                                      \
    "            continue\n"                                                                  \
    "        try:\n"                                                                          \
    "            if os.path.isfile(path) and needle.encode() in open(path, 'rb').read(1 << 20):\n" \
    "                print(path)\n"                                                           \
    "        except OSError:\n"                                                               \
    "            pass\n"

#endif /* SBXD_IT_HARNESS_H */
