/* SPDX-License-Identifier: MIT */
/* limits: memory and vCPU caps, and server threads released by clients that leave. */
#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

START_TEST(test_sbxd_limits_memory_is_capped)
{
    /* One vCPU means 2048 MB; three gigabytes cannot be had, whatever the
     * backend (a cgroup kills the process, RLIMIT_DATA refuses the memory),
     * and the sandbox survives it. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = sbx_create_resp(d, jpack("{s:{s:i}}", "resources", "vcpus", 1));
    json_t *sbx;
    const char *sid;
    struct cmd_result *c;

    expect_status(r, 200);
    sbx = json_object_get(r->json, "sandbox");
    sid = json_string_value(json_object_get(sbx, "id"));
    ck_assert_int_eq(json_integer_value(json_object_get(sbx, "memory")), 2048);
    ck_assert_int_eq(json_integer_value(json_object_get(sbx, "vcpus")), 1);
    c = sbx_sh(d, sid, "python3 -c 'b = bytearray(3 << 30); print(len(b))'");
    ck_assert_msg(c->exit_code != 0, "a 3 GiB allocation succeeded in a 2048 MB sandbox: %s", c->out);
    ck_assert_msg(!contains(c->out, "3221225472"), "the allocation was reported: %s", c->out);
    cmd_result_free(c);
    c = sbx_sh(d, sid, "python3 -c 'b = bytearray(256 << 20); print(len(b))'");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_msg(contains(c->out, "268435456"), "256 MiB should fit: %s %s", c->out, c->err);
    cmd_result_free(c);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_limits_vcpus_reported_as_applied)
{
    /* vcpus is what the sandbox gets: at most the host's CPUs, and memory
     * follows it (2048 MB each); beyond --max-vcpus is refused. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    long host = sysconf(_SC_NPROCESSORS_ONLN);
    long want = host < 8 ? 8 : host; /* more than the host has, within the default max */
    struct http_resp *r = sbx_create_resp(d, jpack("{s:{s:i}}", "resources", "vcpus", (int)(want > 8 ? 8 : want)));
    json_t *sbx;
    long vcpus;

    expect_status(r, 200);
    sbx = json_object_get(r->json, "sandbox");
    vcpus = (long)json_integer_value(json_object_get(sbx, "vcpus"));
    ck_assert_int_le(vcpus, host);
    ck_assert_int_ge(vcpus, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(sbx, "memory")), 2048 * vcpus);
    http_resp_free(r);
    r = http_post(d, jpack("{s:{s:i}}", "resources", "vcpus", 9), "/v1/sandboxes");
    expect_error(r, 400, "bad_request");
    ck_assert_msg(contains(r->body, "vcpus"), "the message should name resources.vcpus: %s", r->body);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

static int threads_of(pid_t pid)
{
    char path[64];
    DIR *dir;
    struct dirent *e;
    int n = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    dir = opendir(path);
    if (!dir)
        return -1;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

static size_t discard(void *p, size_t size, size_t n, void *user)
{
    (void)p;
    (void)user;
    return size * n;
}

START_TEST(test_sbxd_limits_abandoned_streams_release_threads)
{
    /* A client that stops listening to a log stream (or a wait) of a command
     * that runs on must not keep a server thread until the command ends. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    char *cid = sbx_detach_sh(d, sid, "sleep 120");
    char url[512], auth[300];
    int before = threads_of(d->pid), after = 0;
    int64_t deadline;

    ck_assert_int_gt(before, 0);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", d->token);
    for (int i = 0; i < 6; i++) {
        CURL *h = curl_easy_init();
        struct curl_slist *hdr = curl_slist_append(NULL, auth);
        /* Half follow the logs, half long-poll the exit; each gives up. */
        snprintf(url, sizeof url, "http://sbxd/v1/sandboxes/%s/cmd/%s%s", sid, cid,
                 i % 2 ? "/logs" : "?wait=true");
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, d->sock);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 500L);
        ck_assert_int_eq(curl_easy_perform(h), CURLE_OPERATION_TIMEDOUT);
        curl_slist_free_all(hdr);
        curl_easy_cleanup(h); /* closes the connection */
    }
    /* The waits look at their client every few seconds; a pool worker
     * started during the burst (a slow machine, ASan) leaves once idle for
     * 30 s (WORKER_IDLE_MS in tools/sbxd/http.c). A thread held by an
     * abandoned stream would stay for the command's 120 s. */
    deadline = mono_ms() + 45000;
    do {
        usleep(200000);
        after = threads_of(d->pid);
    } while (after > before && mono_ms() < deadline);
    ck_assert_msg(after <= before, "%d server threads still held after the clients left (%d before)",
                  after, before);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_limits");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_sbxd_limits_memory_is_capped);
    tcase_add_test(tc, test_sbxd_limits_vcpus_reported_as_applied);
    tcase_add_test(tc, test_sbxd_limits_abandoned_streams_release_threads);
    suite_add_tcase(s, tc);
    return s;
}
