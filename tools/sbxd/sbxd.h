/* SPDX-License-Identifier: MIT */
/*
 * sbxd: the local sandbox server. Shared declarations of its modules.
 *
 * Concurrency: one global mutex (g.lock) guards every sandbox, command and
 * snapshot object and their lists. HTTP requests run on http.c's workers,
 * which may block on the work (a control reply, a sandbox's boot) but never
 * on an event: long polls and streams park on a command's wait queue
 * (http.h) until output or its exit. One I/O thread owns the control
 * sockets: it reads them, appends the output init forwards, records exits.
 * One launcher thread forks bwrap, so that
 * PR_SET_PDEATHSIG (bwrap --die-with-parent) is tied to a thread that lives as
 * long as sbxd. Objects are reference-counted under g.lock.
 */
#ifndef SBXD_H
#define SBXD_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/buf.h"
#include "netpolicy.h"
#include "ctl.h"
#include "http.h"
#include "parse.h"
#include "util/str.h"

#define SBXD_VERSION "1.0.0"
#ifndef SBXD_LIBEXECDIR
#define SBXD_LIBEXECDIR "/usr/local/libexec"
#endif
#define SBXD_REGION "local"
#define SBXD_CWD "/vercel/sandbox"
/* The runtime a create without one asks for (the SDK's default). */
#define SBXD_DEFAULT_RUNTIME "node24"
#define SBXD_HOME "/home/vercel-sandbox"
#define SBXD_USER "vercel-sandbox"
/* A sandbox's published ports: 15 in the 2.x API, 4 in v1 (each as its
 * SDK documents). */
#define SBXD_MAX_PORTS 15
#define SBXD_MAX_PORTS_V1 4

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* The isolation layers sbxd sets up around every sandbox (layers.c). */
enum layer { LAYER_IDS, LAYER_SECCOMP, LAYER_PROC, LAYER_LIMITS, LAYER_DISK, LAYER_NET, LAYER_COUNT };

struct layer_state {
    bool on;
    bool waived;              /* off because an option asked for it (never refuses start) */
    char what[320];           /* on: the mechanism; off: why not, and the fix */
};

/* Host ids for sandboxes (ids.c). */
struct ids {
    bool per_sandbox;         /* root: one id per sandbox from the range */
    uid_t first_uid;
    gid_t first_gid;
    uint32_t count;
    char source[64];          /* where the range came from */
};

/* The host uid/gid one sandbox runs as, and the lock that reserves them. */
struct sandbox_ids {
    uid_t uid;
    gid_t gid;
    int lock_fd;              /* -1 when not reserved (unprivileged sbxd) */
};

struct sbxd_config {
    char *listen;          /* 127.0.0.1:PORT, [::1]:PORT or unix:PATH */
    char *state_dir;
    char *token_file;
    char *bwrap;           /* bwrap program */
    char *init_path;       /* sbxd-init program (host path) */
    char *upstream_ca;     /* extra CAs the egress proxy trusts upstream */
    char *id_range;        /* --id-range FIRST:COUNT, NULL = /etc/subuid or the default */
    sbx__strlist add_hosts; /* --add-host NAME=ADDR entries */
    int64_t disk_limit;    /* bytes per sandbox */
    int64_t inode_limit;   /* files per sandbox, 0 = one per 16 KiB of disk_limit */
    bool allow_degraded;   /* start even when a layer cannot be set up */
    bool unsafe_host_net;  /* allow-all sandboxes may reach the host's addresses */
    int64_t default_timeout_ms;
    int64_t max_timeout_ms;
    int64_t snapshot_ttl_ms;   /* default snapshot expiration; 0 = never */
    int default_vcpus;
    int max_vcpus;
    int max_sandboxes;         /* running at once */
    int pids_max;              /* processes per sandbox */
    size_t max_json_body;
    size_t max_upload;         /* fs/write body */
    size_t max_cmd_log;        /* stored output per command */
    size_t max_sandbox_log;    /* stored output per sandbox */
    int64_t retain_stopped_ms; /* keep command logs of stopped sandboxes */
    int64_t spill_after_ms;    /* ... in memory this long, then in the command store */
    int64_t retain_records_ms; /* keep records of stopped sandboxes, 0 = forever */
    unsigned max_conns;        /* connections served; past it a 503 */
    unsigned max_unauth;       /* connections without a valid token yet */
    unsigned read_timeout_s;   /* a silent connection is closed */
    unsigned io_threads;       /* libmicrohttpd's pool */
    unsigned max_workers;      /* requests handled at once */
    enum log_level log_level;
};

enum sandbox_status {
    SBXD_PENDING, SBXD_RUNNING, SBXD_STOPPING, SBXD_STOPPED, SBXD_FAILED, SBXD_ABORTED, SBXD_SNAPSHOTTING
};

/* A context's network: NET_OPEN (allow-all) has user-mode networking to the
 * outside (sbxd-net), NET_ISOLATED only the egress proxy. Both are network
 * namespaces of their own. */
enum netmode { NET_OPEN, NET_ISOLATED };

struct egress;        /* egress.c */
struct route;         /* routes.c */
struct limits;        /* limits.c */
struct disk;          /* disk.c */

/* A pending request to a sandbox's init. */
struct ctl_wait {
    uint64_t id;
    int ctx;
    bool done;
    int err;
    int fd;
    char *detail;
    struct ctl_wait *next;
};

struct log_chunk {
    uint8_t stream; /* 1 stdout, 2 stderr */
    uint32_t len;
    char *data;     /* valid UTF-8 */
};

struct command {
    int refs;
    char id[40];
    struct sandbox *sbx;
    uint64_t ctl_id;
    int ctx;                  /* which context runs it */
    char *name;
    sbx__strlist args;
    char *cwd;
    int64_t started_at;
    int64_t finished_at;
    int64_t deadline_mono;    /* its timeout: killed then (0: none) */
    bool timeout_fired;
    bool exited;
    int exit_code;
    bool killed_by_stop;      /* ended because the sandbox stopped: logs end in an error line */
    unsigned char carry[2][4]; /* incomplete UTF-8 sequence per stream */
    size_t carry_len[2];
    struct log_chunk *chunks;
    size_t nchunks, capchunks;
    size_t log_bytes;
    bool log_truncated;
    pthread_cond_t cond;      /* output appended, or exited (sbxd's own waits) */
    struct waitq waitq;       /* the same, for requests and streams (http.h) */
    struct command *next;     /* in sbx->commands */
};

struct sandbox {
    int refs;
    char id[40];
    char *project_id;
    char *runtime;            /* the runtime provided (runtime.c), as Vercel names it */
    char *requested_runtime;  /* what the create body asked for, NULL when it named none */
    int vcpus;
    int memory_mb;
    int64_t timeout_ms;
    enum sandbox_status status;
    int64_t requested_at, created_at, updated_at, started_at;
    int64_t requested_stop_at, stopped_at, aborted_at, snapshotted_at;
    int64_t active_cpu_ms;    /* reported after stop, when measurable */
    char *source_snapshot_id;
    struct netpolicy *policy;
    sbx__strlist env;         /* KEY=VALUE, create-time */
    int ports[SBXD_MAX_PORTS];
    int nports;
    struct route *routes[SBXD_MAX_PORTS];
    char route_urls[SBXD_MAX_PORTS][64]; /* kept after stop and across restarts */
    char *root;               /* host path of the sandbox's filesystem */
    struct sandbox_ids ids;   /* the host uid/gid it runs as */
    struct disk *disk;        /* its size-limited file system, when the layer is on */
    int relay_conns;          /* its proxy and route connections being served (g.lock) */
    int64_t relay_refused_at; /* when one over RELAY_CONNS_MAX was last logged */
    int64_t setup_us[4];      /* what its isolation cost at create: file system,
                               * /proc, network, seccomp hand-over (logged) */
    enum netmode netmode;     /* of the current policy */
    /* Runtime. A sandbox runs in up to two contexts, one per network mode:
     * init processes in the same user, mount and PID namespaces over the
     * same root, each in a network namespace of its own: one with user-mode
     * networking (allow-all), one isolated. The first context created owns
     * the PID namespace; a policy change across the open/isolated line
     * starts the other lazily. */
    struct sbx_ctx {
        bool up;              /* booted and not dead */
        pid_t bwrap_pid;
        pid_t init_pid;       /* as seen from the host */
        int ctl_fd;
        pthread_mutex_t send_lock;
        void *watch;          /* I/O thread's registration */
        int init_pidfd;       /* readable once init (and, for the PID namespace's
                               * init, every process of the sandbox) is gone */
        pid_t net_pid;        /* its sbxd-net, 0 when none: NET_OPEN always; NET_ISOLATED
                               * (restricted) once a custom policy allows an address */
        int net_fd;           /* sbxd-net's control socket: closing it stops it */
        pthread_mutex_t net_lock; /* net_pid, net_fd, rules_gen */
        uint64_t rules_gen;   /* the policy_gen whose rules its sbxd-net has (NET_ISOLATED) */
    } ctx[2];
    uint64_t policy_gen;      /* bumped at each policy change (g.lock) */
    int primary;              /* index of the context owning the PID namespace */
    uint64_t next_ctl_id;
    struct ctl_wait *waits;
    pthread_cond_t cond;      /* replies, death, status changes */
    bool finalizing;
    struct snapshot *snap_pending; /* set by the snapshot request before stopping */
    struct snapshot *auto_snap;    /* the snapshot its stop took (persistent sessions) */
    char *name;               /* the named sandbox it is a session of, or NULL (v1) */
    bool persistent;          /* its stop saves the file system as a snapshot */
    int64_t snap_ttl_ms;      /* that snapshot's expiration, -1: sbxd's default */
    char *stop_reason;        /* "timeout", "stop", "snapshot", "failed" */
    struct command *commands;
    size_t ncommands;         /* kept, in memory or in the command store */
    bool cmds_stored;         /* all of them are in the command store (cmdstore.c);
                               * those in memory are copies loaded by reads */
    bool cmds_store_failed;   /* a write failed: they stay in memory */
    int64_t cmds_used_at;     /* when a read last loaded one back */
    size_t log_bytes;
    int64_t deadline_mono;    /* monotonic ms when the timeout stops it */
    struct limits *limits;
    struct egress *egress;
    bool persisted_dirty;
    struct sandbox *next;
};

struct snapshot {
    char id[40];
    char *source_sandbox_id;
    char *project_id;
    char *runtime;            /* of the source sandbox, for sandboxes made from it */
    char *status;             /* created, deleted, failed */
    int64_t size_bytes;
    int64_t created_at, updated_at, expires_at; /* expires_at 0 = never */
    int64_t last_used_at;     /* a session last started from it */
    char *sandbox_name;       /* the named sandbox of its source session, or NULL */
    char *parent_id;          /* the snapshot its source session started from */
    char *method;             /* "snapshot" (asked for) or "stop" (a persistent sandbox's stop) */
    bool listed;              /* in g.snapshots */
    struct snapshot *next;
};

/* A named sandbox (the 2.x protocol's "sandbox"): a name, the defaults its
 * sessions start with, and its current session. Sessions are struct
 * sandbox (a v1 sandbox is a session without a name). Under g.lock;
 * reference-counted, so a resume may run without the lock. */
struct named {
    int refs;
    char id[40];              /* nsb_...: its record's file name */
    char *name, *project_id;
    bool persistent;
    bool deleted;             /* off the list; its record is gone */
    bool resuming;            /* a request is starting its next session */
    bool lost_headers;        /* loaded from disk: injection header values were not kept */
    pthread_cond_t cond;      /* resuming ended */
    int64_t created_at, updated_at;
    char session_id[40];      /* currentSessionId */
    char *snapshot_id;        /* currentSnapshotId: what a persistent sandbox resumes from */
    json_t *config;           /* v1 create body for its sessions: runtime, ports, timeout,
                               * resources, env, networkPolicy (API form) */
    json_t *extra;            /* echoed settings: image, tags, region, failoverRegions,
                               * snapshotExpiration, keepLastSnapshots */
    struct named *next;
};

/* The node and python3 sandboxes get (runtime.c), found once at start. */
struct runtime_info {
    bool probed;                 /* the probe ran (else nothing is known) */
    char node[16];               /* "node20"; "" when sandboxes have no node */
    char python[24];             /* "python3.11"; "" when they have no python3 */
    char node_version[64];       /* what `node --version` printed, "" when absent */
    char python_version[64];     /* what `python3 --version` printed */
};

struct sbxd {
    struct sbxd_config cfg;
    char *token;
    pthread_mutex_t lock;
    struct sandbox *sandboxes;   /* newest first */
    struct snapshot *snapshots;  /* newest first */
    struct named *named;         /* newest first */
    int running;                 /* sandboxes not stopped */
    int cmd_deadlines;           /* commands whose timeout is still to fire */
    int orphans_found;           /* at start: sandboxes an earlier sbxd left running */
    int orphan_mounts;           /* at start: their file systems still mounted */
    int64_t last_ts;             /* for strictly increasing timestamps */
    int epfd;                    /* I/O thread's epoll */
    int wake_fd;                 /* eventfd to wake the I/O thread */
    volatile int shutting_down;
    pthread_t io_thread, launcher_thread;
    char *url;                   /* what we listen on, for logs */
    bool can_sudo;               /* nested user namespaces work */
    struct ids ids;              /* the host ids sandboxes get */
    struct layer_state layers[LAYER_COUNT];
    char *init_copy;             /* sbxd-init where every sandbox id can reach it */
    void *filter;                /* the seccomp program (struct sock_filter[]) */
    size_t filter_len;           /* its size in bytes */
    bool can_inject;             /* the egress CA is set up: injection rules work */
    struct runtime_info runtime; /* set before the first request, read-only after */
};

extern struct sbxd g;

/* util.c */
void sbxd_log(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t now_ms(void);
int64_t mono_ms(void);
int64_t mono_us(void);
int64_t next_timestamp(void); /* strictly increasing wall-clock ms; needs g.lock */
void make_id(char *out, size_t cap, const char *prefix);
int random_bytes(void *p, size_t n);
int mkdir_p(const char *path, mode_t mode);
int rm_rf(const char *path);
int sandbox_prune_records(void);
/* The same, for name relative to the directory dirfd. */
int rm_rf_at(int dirfd, const char *name);
/* Replace path's contents via a temp file and rename; `durable` adds an fsync
 * (for records worth a disk flush; never while holding g.lock). */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, bool durable);
/* For a thread about to end: the pages of its stack below the caller's
 * frame go back to the kernel. glibc keeps ended threads' stacks (up to
 * 40 MiB) for new threads, resident as they were left: after a burst, 64
 * workers' stacks held some 3 MB. */
void thread_stack_release(void);
/* Create or truncate path with these contents, no rename, no fsync. */
int write_file(const char *path, const void *data, size_t len, mode_t mode);
/* All of data to fd (EINTR retried); 0 or -1 with errno. */
int write_all(int fd, const void *data, size_t len);
char *read_file(const char *path, size_t max, size_t *len);
/* A JSON file of at most 1 MiB, parsed; NULL if missing or malformed. */
json_t *load_json_file(const char *path);
/* Each record STATE/SUB/ID.json whose ID starts with prefix, parsed, to
 * each(); one that does not parse or that each() refuses (-1) is logged and
 * skipped. Returns how many each() took (-1: no memory). */
int records_each(const char *sub, const char *prefix, int (*each)(const char *id, json_t *j, void *arg), void *arg);
char *path_join(const char *a, const char *b);
json_t *json_str_or_null(const char *s);
bool id_is_safe(const char *id);
/* An --add-host entry is NAME=ADDR with a host name and an IP address. */
bool add_host_ok(const char *entry);
/* The address --add-host gives name (case-insensitive), or NULL. */
const char *add_host_lookup(const char *name);

/* ids.c */
/* Choose the range (opt: --id-range, or NULL); 0 or -1 with a message. */
int ids_setup(const char *opt, char *err, size_t errlen);
/* Reserve an id for a new sandbox; -1 with errno EAGAIN when all are taken. */
int ids_acquire(struct sandbox_ids *out);
void ids_release(struct sandbox_ids *ids);
/* Give every entry of the tree at root to the sandbox's ids (no link followed). */
int ids_chown_tree(const char *root, const struct sandbox_ids *ids);

/* layers.c */
const char *layer_name(enum layer l);
void layer_set(enum layer l, bool on, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Print each layer as on/off with its mechanism or reason. */
void layers_print(FILE *out);
/* Log the missing layers; -1 (with the fix printed) unless --allow-degraded. */
int layers_enforce(void);

/* launcher.c: runs fork+exec on a long-lived thread. */
#define SPAWN_MAX_FDS 16
struct spawn_req {
    char **argv;
    int keep_fds[SPAWN_MAX_FDS]; /* fds to place at 3, 4, ... in the child */
    int nkeep;
    bool set_ids;             /* run as uid/gid (sbxd as root: a sandbox's ids) */
    uid_t uid;
    gid_t gid;
    int stdout_fd, stderr_fd; /* -1 = /dev/null */
    const char *cgroup_procs[4]; /* cgroup.procs files to join */
    int ncgroups;
};
/* Raise the descriptor limit to the hard one (sandboxes keep the old). */
void launcher_raise_nofile(void);
int launcher_start(void);
void launcher_stop(void);
/* Start the program; returns its pid or -1 with errno. */
pid_t launcher_spawn(const struct spawn_req *req);

/* disk.c: a size-limited file system per sandbox (root only). */
void disk_probe(bool own_mounts);            /* needs the launcher running */
void disk_shutdown(void);
/* Make, attach and mount s's file system on s->root; NULL with a message. */
struct disk *disk_create(struct sandbox *s, char *err, size_t errlen);
/* Unmount and delete it (NULL is fine). */
void disk_destroy(struct disk *d);
/* Space left under root, in bytes (and files in *inodes); -1 on error. */
int64_t disk_free_bytes(const char *root, int64_t *inodes);

/* usernet.c: user-mode networking for open contexts, by sbxd-net. */
#define USERNET_DNS "10.0.2.3"
void usernet_probe(void);
/* Start sbxd-net on the network namespace of init_pid (context ctx of s) and
 * wait until its TAP is up; 0, or -1 with a message. */
int usernet_attach(struct sandbox *s, int ctx, pid_t init_pid, int logfd, char *err, size_t errlen);
/* Stop it (nothing when none runs). */
void usernet_detach(struct sandbox *s, int ctx);
/* The isolated context's raw network: a restricted sbxd-net (started on
 * first need) given the rules of s's policy, unless it has them already;
 * 0, or -1 with a message. */
int usernet_sync_isolated(struct sandbox *s, char *err, size_t errlen);
/* The same for any process: sbxd-net for target's network namespace, run
 * as s's ids and in s's cgroups (its CPU, memory and processes are the
 * sandbox's); its pid and control socket in *pid / *fd (0 / -1 on failure). */
int usernet_start(struct sandbox *s, pid_t target, int logfd, bool restricted, pid_t *pid, int *fd, char *err,
                  size_t errlen);
void usernet_stop(pid_t pid, int fd);
/* The context a policy gets: open for allow-all when the layer is on. */
enum netmode usernet_mode(enum np_mode policy_mode);
void usernet_shutdown(void);

/* seccomp.c: the system-call filter every command runs under. */
void seccomp_probe(void);                    /* builds g.filter */
/* A sealed-off copy of the program in a memfd at offset 0 (bwrap --seccomp). */
int seccomp_memfd(void);

/* limits.c */
struct limits *limits_create(const char *sandbox_id, int vcpus, int memory_mb, int pids_max);
void limits_spawn_setup(struct limits *l, struct spawn_req *req);
/* sbxd-init's options for the rlimits it sets on each command (rlimit
 * backend only): appended to argv. 0 or -1 (out of memory). */
int limits_init_args(struct limits *l, sbx__strlist *argv);
int64_t limits_cpu_ms(struct limits *l);
void limits_destroy(struct limits *l);
const char *limits_backend(void);  /* "cgroup2", "cgroup1", "rlimit" */
void limits_probe(void);
void limits_shutdown(void);
int limits_effective_vcpus(int requested);

/* sandbox.c */
/* A zeroed sandbox with its locks ready and one reference (the caller's). */
struct sandbox *sandbox_alloc(void);
/* Stop its helpers and give back what it holds on the host: limits, file
 * system, tree, ids. Its processes must be gone. */
void sandbox_release(struct sandbox *s);
/* Remove STATE/sandboxes/ID (record, tree, log). */
void sandbox_remove_state(struct sandbox *s);
struct sandbox *sandbox_find(const char *id);           /* needs g.lock; no ref */
void sandbox_ref(struct sandbox *s);                     /* needs g.lock */
void sandbox_unref(struct sandbox *s);                   /* needs g.lock */
/* The host pid bwrap's --info-fd reports; -1 at EOF or the deadline. */
pid_t sandbox_read_child_pid(int fd, int64_t deadline);
/* Make /proc read-only and masked in the mount namespace of pid (one of
 * s's sandboxes, or its fetcher); helper output to logfd (-1: none). */
int sandbox_harden(struct sandbox *s, pid_t pid, int logfd, char *err, size_t errlen);
/* Create s's cgroups (or rlimit record) if not yet made. */
/* The sandbox's limits made if they are not yet; -1 with a message when
 * they cannot be (nothing of the sandbox may run then). */
int sandbox_ensure_limits(struct sandbox *s, char *err, size_t errlen);
/* Set req to run as s's host ids (when sbxd is root). */
void sandbox_spawn_ids(const struct sandbox *s, struct spawn_req *req);
/* Start a prepared sandbox (root laid out, fields set). 0 or -1 with a message. */
int sandbox_boot(struct sandbox *s, char *err, size_t errlen);
int sandbox_prepare_root(struct sandbox *s, char *err, size_t errlen);
/* Request to the sandbox's init; returns errno-style result, *fd / *detail
 * filled when given. Does not need g.lock (takes it). */
int sandbox_ctl(struct sandbox *s, int ctx, struct ctl_msg *m, int *fd, char **detail);
/* The context commands and file operations use now (the current policy's);
 * starts it if needed. -1 with a message when the sandbox is not running. */
int sandbox_active_ctx(struct sandbox *s, char *err, size_t errlen);
/* Stop: kill everything, wait until stopped. Needs g.lock (released while waiting). */
void sandbox_stop_locked(struct sandbox *s, bool by_timeout);
void sandbox_persist_locked(struct sandbox *s);
json_t *sandbox_json(struct sandbox *s);                 /* needs g.lock */
json_t *sandbox_routes_json(struct sandbox *s);          /* needs g.lock */
const char *sandbox_status_name(enum sandbox_status st);
int sandbox_load_all(void);
void sandbox_janitor(void);                              /* I/O thread, periodic */
int64_t sandbox_next_deadline(void);                     /* needs g.lock */
int sandbox_set_network(struct sandbox *s, struct netpolicy *p, char *err, size_t errlen);

/* command.c */
struct command *command_find(struct sandbox *s, const char *id); /* needs g.lock */
void command_ref(struct command *c);
void command_unref(struct command *c);

/* cmdstore.c: a stopped sandbox's commands on disk. Write: the list
 * (whose records no longer change) into sandboxes/ID/commands, 0 or -1
 * with errno. Load: a copy of one command (refs 1, in no list), or NULL
 * with errno (ENOENT: not there). Count: how many the file holds, -1
 * without a valid one. None needs g.lock. */
int cmdstore_write(const char *sandbox_id, struct command *list);
struct command *cmdstore_load(const char *sandbox_id, const char *command_id);
long cmdstore_count(const char *sandbox_id);
void cmdstore_remove(const char *sandbox_id);
/* Start a command; returns it (with a reference) or NULL with the HTTP status and message set. */
struct command *command_start(struct sandbox *s, const char *name, sbx__strlist *args,
                              const char *cwd, sbx__strlist *env, bool sudo, int64_t timeout_ms,
                              int *http_status, char *err, size_t errlen);
/* Kill (SIGKILL) the commands whose timeout has passed. I/O thread, g.lock. */
void command_fire_timeouts(int64_t now);
json_t *command_json(struct command *c);                 /* needs g.lock */
void command_output(struct command *c, int stream, const char *p, size_t n); /* I/O thread, g.lock */
void command_finish(struct command *c, int exit_code, bool by_stop);         /* I/O thread, g.lock */
/* A context's init died: finish its commands, fail its waits. I/O thread, g.lock. */
void sandbox_ctx_dead(struct sandbox *s, int ctx);
int command_kill(struct command *c, int sig);

/* iothread.c */
int io_start(void);
void io_stop(void);
int io_watch_ctl(struct sandbox *s, int ctx); /* register a control socket */
void io_wake(void);

/* snapshot.c */
struct snapshot *snapshot_find(const char *id);          /* needs g.lock */
json_t *snapshot_json(struct snapshot *sn);
int snapshot_load_all(void);
void snapshot_persist_locked(struct snapshot *sn);
/* Archive the sandbox's filesystem; the sandbox must be quiesced. */
int snapshot_capture(struct sandbox *s, struct snapshot *sn, char *err, size_t errlen);
/* Extract the snapshot into s's new root, owned by s's ids; 0, or -1 with
 * an HTTP status (413: larger than the disk limit) and a message. */
int snapshot_restore(struct snapshot *sn, struct sandbox *s, int *status, char *err, size_t errlen);
char *snapshot_archive_path(const char *id);
void snapshot_expire(void);                              /* needs g.lock */
void snapshot_delete_locked(struct snapshot *sn);
void snapshot_free(struct snapshot *sn);
/* A snapshot of s to be taken by its stop (s->snap_pending); listed by the
 * finalizer once captured. NULL when out of memory. */
struct snapshot *snapshot_begin_locked(struct sandbox *s, int64_t ttl, const char *method);
void snapshot_list_locked(struct snapshot *sn);

/* named.c */
struct named *named_find(const char *project, const char *name); /* needs g.lock; no ref */
struct named *named_alloc(void);                                  /* one reference */
void named_ref(struct named *n);                                  /* needs g.lock */
void named_unref(struct named *n);                                /* needs g.lock */
json_t *named_json(struct named *n);                              /* needs g.lock */
void named_persist_locked(struct named *n);
void named_remove_state(struct named *n);
int named_load_all(void);
/* Whether name may name a sandbox (and why not, in err). */
bool named_name_ok(const char *name, char *err, size_t errlen);
/* A session of a named sandbox finished a snapshot (g.lock): it becomes the
 * sandbox's current one, and older automatic ones go. */
void named_snapshot_taken(struct sandbox *s, struct snapshot *sn);
/* Forget the named sandboxes --retain-records let go of: no session record
 * left and no snapshot to resume from (g.lock). How many went. */
int named_prune_locked(void);

/* source.c: populate a new sandbox's workspace from git or a tarball. */
int source_git(struct sandbox *s, json_t *src, int *http_status, char *err, size_t errlen);
int source_tarball(struct sandbox *s, json_t *src, int *http_status, char *err, size_t errlen);

/* egress.c: the proxy through which isolated sandboxes reach what a custom
 * policy allows. Attaching asks the context's init for a listener on
 * 127.0.0.1:EGRESS_PORT inside the sandbox's network namespace. */
#define EGRESS_PORT 3128
int egress_attach(struct sandbox *s, int ctx, char *err, size_t errlen);
void egress_detach(struct sandbox *s);
/* Whether an address is this host's (any interface), loopback, link-local or
 * unspecified: never reached on a sandbox's behalf. */
bool egress_is_host_addr(int family, const void *addr);
void egress_shutdown(void);

/* routes.c: host listeners forwarding to ports inside a sandbox. */
struct route *route_start(struct sandbox *s, int port, char *err, size_t errlen);
const char *route_url(struct route *r);
void route_stop(struct route *r);

/* runtime.c: the runtime sandboxes really have (they run the host's /usr). */
extern const char runtime_probe_script[];  /* `sh -c` it in a sandbox: its output */
void runtime_set_probe(const char *out);   /* ...goes here (NULL: the probe failed) */
/* The runtime a sandbox asked for `requested` (NULL: the default) gets, as
 * Vercel names it: "node" + the major version of the sandboxes' node for
 * node*, "python" + major.minor of their python3 for python*; `requested`
 * itself when that program is missing (or was never probed). */
const char *runtime_provided(const char *requested);
/* Whether name is one of the runtimes runtime_provided answers ("node20"). */
bool runtime_is_provided_name(const char *name);
/* Whether name has the form of a name sbxd answers ("node20",
 * "python3.11"), whatever this host provides now. */
bool runtime_family_name(const char *name);
/* "node" or "python3" when the program requested's family needs is missing
 * from sandboxes, else NULL. */
const char *runtime_missing(const char *requested);
void runtime_log(void);
void runtime_print(FILE *out);

/* http.c */
int http_start(void);
void http_stop(void);

#endif /* SBXD_H */
