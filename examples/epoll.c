/* SPDX-License-Identifier: MIT */
/*
 * epoll: many jobs from one thread, in the program's own event loop. The
 * client gives one file descriptor and a timeout (sbx_client_get_fd,
 * sbx_client_get_timeout); the loop waits on them with its other work and
 * calls sbx_client_process, then takes the finished operations
 * (sbx_client_next_done). No callbacks, no threads.
 *
 *   cc epoll.c -o epoll $(pkg-config --cflags --libs libsbxrun)
 *   SBXRUN_ENDPOINT=unix:/tmp/sbxd/sock ./epoll 8
 *
 * Valid C11 and C++17.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

#define MAX_JOBS 64

int main(int argc, char **argv)
{
    static const char *const argv_ls[] = {"ls", "-a", "/vercel/sandbox"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_job *jobs[MAX_JOBS] = {NULL};
    sbx_op *ops[MAX_JOBS] = {NULL};
    int n = argc > 1 ? atoi(argv[1]) : 8, done = 0, passed = 0, fd = -1, ep = -1, rc = 2;
    struct epoll_event ev;

    if (n < 1 || n > MAX_JOBS) {
        fprintf(stderr, "usage: epoll [JOBS (1 to %d)]\n", MAX_JOBS);
        return 2;
    }
    if (sbx_global_init() != SBX_OK)
        return 2;
    c = sbx_client_new();
    s = c ? sbx_sandbox_new(c) : NULL;
    if (!s || sbx_sandbox_create(s) != SBX_OK) {
        fprintf(stderr, "epoll: create a sandbox: %s\n", s ? sbx_sandbox_last_error(s) : "out of memory");
        goto out;
    }
    /* n jobs on the one sandbox, all started at once. */
    for (int i = 0; i < n; i++) {
        jobs[i] = sbx_job_new(c);
        if (!jobs[i] || sbx_job_set_type(jobs[i], "verify.test") != SBX_OK ||
            sbx_job_set_argv(jobs[i], 3, argv_ls) != SBX_OK || sbx_job_run_start(jobs[i], s, &ops[i]) != SBX_OK) {
            fprintf(stderr, "epoll: job %d: %s\n", i, jobs[i] ? sbx_job_last_error(jobs[i]) : "out of memory");
            goto stop;
        }
        sbx_op_set_user(ops[i], jobs[i]);
    }
    /* The program's loop: the client's fd beside whatever else it watches. */
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0 || sbx_client_get_fd(c, &fd) != SBX_OK) {
        fprintf(stderr, "epoll: no fd\n");
        goto stop;
    }
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll: epoll_ctl");
        goto stop;
    }
    while (done < n) {
        int64_t ms = -1;
        sbx_op *op;
        sbx_client_get_timeout(c, &ms);
        if (epoll_wait(ep, &ev, 1, ms < 0 ? -1 : ms > 1000 ? 1000 : (int)ms) < 0) {
            perror("epoll: epoll_wait");
            goto stop;
        }
        sbx_client_process(c, NULL);
        while ((op = sbx_client_next_done(c)) != NULL) {
            sbx_job *job = (sbx_job *)sbx_op_user(op);
            printf("job %s: %s\n", sbx_op_status(op) == SBX_OK ? "ran" : sbx_op_last_error(op),
                   sbx_job_verdict_name(sbx_job_verdict(job)));
            passed += sbx_job_verdict(job) == SBX_VERDICT_PASSED;
            done++;
        }
    }
    printf("epoll: %d of %d jobs passed\n", passed, n);
    rc = passed == n ? 0 : 1;
stop:
    if (sbx_sandbox_stop(s) != SBX_OK)
        fprintf(stderr, "epoll: stop: %s\n", sbx_sandbox_last_error(s));
out:
    if (ep >= 0)
        close(ep);
    for (int i = 0; i < n && i < MAX_JOBS; i++) {
        sbx_op_free(ops[i]);
        sbx_job_free(jobs[i]);
    }
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbx_global_cleanup();
    return rc;
}
