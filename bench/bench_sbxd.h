/* SPDX-License-Identifier: MIT */
/* sbxd started and stopped by a benchmark (bench-client, bench-cp,
 * bench-sbxd). */
#ifndef SBX_BENCH_SBXD_H
#define SBX_BENCH_SBXD_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* sbxd (bin) with its state in dir/state and its log in dir/sbxd.log,
 * listening on listen ("unix:PATH" or HOST:PORT), at log_level, with the
 * NULL-terminated extra options (at most 8; NULL for none) after. Waits
 * for its line "sbxd listening on URL": URL into url, its token into
 * token. sbxd's pid, or -1 with a message naming who on stderr. */
static inline pid_t bench_sbxd_start(const char *who, const char *bin, const char *dir, const char *listen,
                                     const char *log_level, const char *const *extra, char *url, size_t url_cap,
                                     char *token, size_t token_cap)
{
    char state[512], log[512], line[1024], path[600], fmt[32];
    const char *argv[20];
    size_t n = 0;
    int out[2];
    pid_t pid;
    FILE *f;
    snprintf(state, sizeof state, "%s/state", dir);
    snprintf(log, sizeof log, "%s/sbxd.log", dir);
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--state-dir";
    argv[n++] = state;
    argv[n++] = "--log-level";
    argv[n++] = log_level;
    for (size_t i = 0; extra && extra[i] && i < 8; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    if (pipe(out) < 0)
        return -1;
    if ((pid = fork()) == 0) {
        dup2(out[1], 1);
        if (!freopen(log, "w", stderr))
            _exit(127);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    f = fdopen(out[0], "r");
    snprintf(fmt, sizeof fmt, "sbxd listening on %%%zus", url_cap - 1);
    if (pid < 0 || !f || !fgets(line, sizeof line, f) || sscanf(line, fmt, url) != 1) {
        fprintf(stderr, "%s: sbxd did not start (see %s)\n", who, log);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/token", state);
    if (!(f = fopen(path, "r")) || !fgets(token, (int)token_cap, f)) {
        fprintf(stderr, "%s: no token in %s\n", who, path);
        if (f)
            fclose(f);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    token[strcspn(token, "\n")] = '\0';
    fclose(f);
    return pid;
}

/* Stop sbxd (pid > 0) and remove dir with everything in it. */
static inline void bench_sbxd_stop(const char *who, pid_t pid, const char *dir)
{
    char cmd[600];
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir[0] && system(cmd) != 0)
        fprintf(stderr, "%s: could not remove %s\n", who, dir);
}

#endif /* SBX_BENCH_SBXD_H */
