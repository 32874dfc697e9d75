/* SPDX-License-Identifier: MIT */
/*
 * limits: per-sandbox caps on memory, processes and CPU. cgroup v2 when sbxd
 * can delegate a subtree, cgroup v1 when its controllers are writable (as
 * root on hybrid hosts), else rlimits on every process of the sandbox:
 * RLIMIT_DATA for memory (RLIMIT_AS would break V8 and WebAssembly, which
 * reserve many GB of address space) and RLIMIT_NPROC for processes (which
 * the kernel ignores for root; sbxd says so at start).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "sbxd.h"

enum backend { BK_RLIMIT, BK_CGROUP1, BK_CGROUP2 };

struct limits {
    char *dirs[4];     /* cgroup directories created for the sandbox */
    int ndirs;
    char *procs[4];    /* their cgroup.procs files */
    int64_t mem_bytes;
    int pids_max;
    char *cpu_stat;    /* file holding CPU usage */
};

static enum backend backend = BK_RLIMIT;
static char *v2_base;            /* cgroup v2 directory holding sandbox cgroups */
/* v1 hierarchies: memory and pids are required, cpu (quota) and cpuacct
 * (usage) optional; cpu and cpuacct may be one co-mounted hierarchy. */
#define NV1 4
static char *v1_base[NV1];
static const char *v1_ctrl[NV1] = {"memory", "pids", "cpu", "cpuacct"};
static int host_cpus = 1;

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return -1;
    n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Write a number (and an optional suffix, as in cpu.max's "N 100000"). */
static int write_num(const char *dir, const char *file, long long v, const char *suffix)
{
    char path[4096], val[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(val, sizeof val, "%lld%s", v, suffix);
    return write_str(path, val);
}

static bool has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, tok, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* Our own cgroup: for a v1 controller, or the v2 one when ctrl is NULL.
 * /proc/self/cgroup lines read "ID:CONTROLLERS:PATH". */
static char *own_cgroup(const char *ctrl)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[4096];
    char *out = NULL;
    if (!f)
        return NULL;
    while (!out && fgets(line, sizeof line, f)) {
        char *c1, *c2;
        line[strcspn(line, "\n")] = '\0';
        if (!(c1 = strchr(line, ':')) || !(c2 = strchr(c1 + 1, ':')))
            continue;
        *c2 = '\0';
        if (ctrl ? has_token(c1 + 1, ctrl) : c1[1] == '\0')
            out = sbx__strdup(c2 + 1);
    }
    fclose(f);
    return out;
}

/* ---- what sbxd processes that died left behind ---------------------------- */

static int stale_cgroups; /* removed at start, for the log */

/* Whether a process with this pid exists. A pid reused by another program
 * keeps the cgroup as it is: better a leftover than killing another sbxd's
 * sandboxes. */
/* A process that has exited but is not reaped yet (a zombie) still
 * answers kill(pid, 0): its state in /proc says it is dead. */
static bool pid_alive(long pid)
{
    char path[64], stat[512];
    const char *end;
    FILE *f;
    bool alive;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return false;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "re")))
        return errno != ENOENT;
    alive = !fgets(stat, sizeof stat, f) || !(end = strrchr(stat, ')')) || end[1] != ' ' ||
            (end[2] != 'Z' && end[2] != 'X');
    fclose(f);
    return alive;
}

/* Remove a cgroup and those below it, killing what still runs there (a
 * sandbox outliving its sbxd, which should not happen, dies here). */
static void remove_cgroup_tree(const char *path, int depth)
{
    char sub[4096];
    DIR *d = depth < 4 ? opendir(path) : NULL;
    struct dirent *e;
    char *procs;

    while (d && (e = readdir(d)) != NULL)
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_cgroup_tree(sub, depth + 1);
        }
    if (d)
        closedir(d);
    snprintf(sub, sizeof sub, "%s/cgroup.procs", path);
    if ((procs = read_file(sub, 1 << 20, NULL)) != NULL) {
        for (char *p = procs, *end; *p; p = end) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (pid > 0)
                kill((pid_t)pid, SIGKILL);
        }
        sbx__free(procs);
    }
    for (int t = 0; t < 100 && rmdir(path) < 0 && errno == EBUSY; t++)
        usleep(2000);
}

/* parent's sbxd-PID cgroups whose sbxd is gone (killed before it could
 * remove them): left, they would pile up under the host's cgroup tree. */
static void reap_stale(const char *parent)
{
    char path[4096];
    DIR *d = opendir(parent);
    struct dirent *e;

    while (d && (e = readdir(d)) != NULL) {
        char *end;
        long pid;
        if (strncmp(e->d_name, "sbxd-", 5) != 0 || e->d_type != DT_DIR)
            continue;
        pid = strtol(e->d_name + 5, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || pid_alive(pid))
            continue;
        snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
        remove_cgroup_tree(path, 0);
        stale_cgroups++;
    }
    if (d)
        closedir(d);
}

static bool probe_v2(void)
{
    char *own, base[4096], path[4096];
    char *ctrls;

    ctrls = read_file("/sys/fs/cgroup/cgroup.controllers", 4096, NULL);
    if (!ctrls)
        return false;
    bool ok = strstr(ctrls, "memory") && strstr(ctrls, "pids");
    sbx__free(ctrls);
    if (!ok || !(own = own_cgroup(NULL)))
        return false;
    snprintf(base, sizeof base, "/sys/fs/cgroup%s", strcmp(own, "/") == 0 ? "" : own);
    sbx__free(own);
    /* The no-internal-processes rule: controllers can be enabled for our
     * children only if our cgroup holds no process, so move sbxd into a leaf
     * of its own first (harmless if it fails: then we cannot delegate). */
    snprintf(path, sizeof path, "%s/sbxd-supervisor", base);
    if (strcmp(base, "/sys/fs/cgroup") != 0) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return false;
        snprintf(path, sizeof path, "%s/sbxd-supervisor/cgroup.procs", base);
        if (write_str(path, "0") < 0)
            return false;
    }
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
    if (write_str(path, "+memory +pids") < 0)
        return false;
    write_str(path, "+cpu"); /* optional */
    reap_stale(base);
    snprintf(path, sizeof path, "%s/sbxd-%d", base, (int)getpid());
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return false;
    v2_base = sbx__strdup(path);
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", v2_base);
    if (write_str(path, "+memory +pids") < 0) {
        rmdir(v2_base);
        return false;
    }
    write_str(path, "+cpu");
    return true;
}

static bool probe_v1(void)
{
    for (int i = 0; i < NV1; i++) {
        char path[4096];
        char *own = own_cgroup(v1_ctrl[i]);
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s", v1_ctrl[i], own && strcmp(own, "/") ? own : "");
        if (access(path, W_OK) == 0)
            reap_stale(path);
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/sbxd-%d", v1_ctrl[i],
                 own && strcmp(own, "/") ? own : "", (int)getpid());
        sbx__free(own);
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            if (i < 2)
                goto fail;
            continue;
        }
        v1_base[i] = sbx__strdup(path);
    }
    return true;
fail:
    for (int i = 0; i < NV1; i++) {
        if (v1_base[i])
            rmdir(v1_base[i]);
        sbx__free(v1_base[i]);
        v1_base[i] = NULL;
    }
    return false;
}

void limits_probe(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    host_cpus = n > 0 ? (int)n : 1;
    if (probe_v2())
        backend = BK_CGROUP2;
    else if (probe_v1())
        backend = BK_CGROUP1;
    else
        backend = BK_RLIMIT;
    if (backend == BK_RLIMIT)
        layer_set(LAYER_LIMITS, false,
                  "no writable cgroup controllers: memory is capped per process (RLIMIT_DATA) and "
                  "processes per host uid (RLIMIT_NPROC), CPU not at all; give sbxd a delegated "
                  "cgroup v2 subtree, or writable cgroup v1 memory and pids controllers (as root)");
    else if (!g.ids.per_sandbox)
        layer_set(LAYER_LIMITS, false,
                  "%s limits apply, but their files belong to sbxd's uid, which sandboxes also run "
                  "as: only seccomp and the missing /sys keep a sandbox from raising them; run sbxd "
                  "as root", limits_backend());
    else
        layer_set(LAYER_LIMITS, true, "%s (memory, pids%s), owned by root, which no sandbox runs as",
                  backend == BK_CGROUP2 ? "cgroup v2 delegated subtree" : "cgroup v1",
                  backend == BK_CGROUP2 || v1_base[2] ? ", cpu" : "");
    sbxd_log(LOG_INFO, "resource limits: %s", limits_backend());
    if (stale_cgroups)
        sbxd_log(LOG_INFO, "removed %d cgroups left by sbxd processes that did not exit cleanly",
                 stale_cgroups);
}

const char *limits_backend(void)
{
    return backend == BK_CGROUP2 ? "cgroup2" : backend == BK_CGROUP1 ? "cgroup1" : "rlimit";
}

int limits_effective_vcpus(int requested)
{
    return requested < host_cpus ? requested : host_cpus;
}

struct limits *limits_create(const char *sandbox_id, int vcpus, int memory_mb, int pids_max)
{
    struct limits *l = sbx__calloc(1, sizeof *l);
    char path[4096];

    if (!l)
        return NULL;
    l->mem_bytes = (int64_t)memory_mb << 20;
    l->pids_max = pids_max;
    if (backend == BK_CGROUP2) {
        snprintf(path, sizeof path, "%s/%s", v2_base, sandbox_id);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            goto fail;
        l->dirs[l->ndirs++] = sbx__strdup(path);
        if (write_num(path, "memory.max", l->mem_bytes, "") < 0 ||
            write_num(path, "pids.max", pids_max, "") < 0)
            goto fail;
        write_num(path, "memory.swap.max", 0, "");
        write_num(path, "cpu.max", (long long)vcpus * 100000, " 100000");
        snprintf(path, sizeof path, "%s/%s/cgroup.procs", v2_base, sandbox_id);
        l->procs[0] = sbx__strdup(path);
        snprintf(path, sizeof path, "%s/%s/cpu.stat", v2_base, sandbox_id);
        l->cpu_stat = sbx__strdup(path);
    } else if (backend == BK_CGROUP1) {
        for (int i = 0; i < NV1; i++) {
            const char *dir;
            if (!v1_base[i])
                continue;
            snprintf(path, sizeof path, "%s/%s", v1_base[i], sandbox_id);
            if (mkdir(path, 0755) < 0 && errno != EEXIST)
                goto fail;
            dir = l->dirs[l->ndirs] = sbx__strdup(path);
            snprintf(path, sizeof path, "%s/%s/cgroup.procs", v1_base[i], sandbox_id);
            l->procs[l->ndirs++] = sbx__strdup(path);
            if (i == 0 && write_num(dir, "memory.limit_in_bytes", l->mem_bytes, "") < 0)
                goto fail;
            if (i == 1 && write_num(dir, "pids.max", pids_max, "") < 0)
                goto fail;
            if (i == 2) {
                write_num(dir, "cpu.cfs_period_us", 100000, "");
                write_num(dir, "cpu.cfs_quota_us", (long long)vcpus * 100000, "");
            }
            if (i == 3) {
                snprintf(path, sizeof path, "%s/cpuacct.usage", dir);
                l->cpu_stat = sbx__strdup(path);
            }
        }
    }
    return l;
fail:
    sbxd_log(LOG_WARN, "cannot set up cgroup limits for %s: %s", sandbox_id, strerror(errno));
    limits_destroy(l);
    return NULL;
}

void limits_spawn_setup(struct limits *l, struct spawn_req *req)
{
    if (backend == BK_RLIMIT)
        return;
    for (int i = 0; i < l->ndirs && i < 4; i++)
        req->cgroup_procs[req->ncgroups++] = l->procs[i];
}

/* rlimits are set by sbxd-init on each command, not on init itself: init
 * must keep forking commands when the sandbox has used its processes up,
 * and a sanitizer build of init reserves more address space than RLIMIT_DATA
 * would let it. */
int limits_init_args(struct limits *l, sbx__strlist *argv)
{
    char v[32];
    if (!l || backend != BK_RLIMIT)
        return 0;
    snprintf(v, sizeof v, "%lld", (long long)l->mem_bytes);
    if (sbx__strlist_push(argv, "--rlimit-data") != SBX_OK || sbx__strlist_push(argv, v) != SBX_OK)
        return -1;
    snprintf(v, sizeof v, "%d", l->pids_max);
    if (sbx__strlist_push(argv, "--rlimit-nproc") != SBX_OK || sbx__strlist_push(argv, v) != SBX_OK)
        return -1;
    return 0;
}

int64_t limits_cpu_ms(struct limits *l)
{
    char *s;
    int64_t v = -1;
    if (!l || !l->cpu_stat)
        return -1;
    s = read_file(l->cpu_stat, 65536, NULL);
    if (!s)
        return -1;
    if (backend == BK_CGROUP2) {
        char *p = strstr(s, "usage_usec ");
        if (p)
            v = strtoll(p + 11, NULL, 10) / 1000;
    } else {
        v = strtoll(s, NULL, 10) / 1000000; /* cpuacct.usage is in ns */
    }
    sbx__free(s);
    return v;
}

void limits_destroy(struct limits *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->ndirs; i++) {
        /* Empty once the sandbox's processes are gone; a straggler being
         * reaped makes rmdir fail with EBUSY, so retry briefly. */
        for (int t = 0; t < 50 && rmdir(l->dirs[i]) < 0 && errno == EBUSY; t++)
            usleep(2000);
        sbx__free(l->dirs[i]);
        sbx__free(l->procs[i]);
    }
    sbx__free(l->cpu_stat);
    sbx__free(l);
}

void limits_shutdown(void)
{
    if (v2_base) {
        rmdir(v2_base);
        sbx__free(v2_base);
        v2_base = NULL;
    }
    for (int i = 0; i < NV1; i++) {
        if (v1_base[i])
            rmdir(v1_base[i]);
        sbx__free(v1_base[i]);
        v1_base[i] = NULL;
    }
}
