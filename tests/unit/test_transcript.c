/* SPDX-License-Identifier: MIT */
/* The transcript: head/tail windows and dropped counts, the total limit,
 * the hash chain (every single-byte change detected), torn tails, crash
 * safety of the journal (a writer killed with SIGKILL), the atomic final
 * write, JSON round trips, redaction of argv, env, output and job fields,
 * argument errors, allocation failures. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ok(call) ck_assert_int_eq((call), SBX_OK)
#define SECRET "hunter2-correct-horse-battery"
#define GHP "ghp_" "0123456789abcdefghijABCDEFGHIJ012345"

/* A scratch directory, removed with what it holds. */
static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sbx-transcript-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char p[512];
    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmpdir);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* A step's entry (1-based) parsed. */
static json_t *step_obj(sbx_transcript *t, size_t n)
{
    char *s = NULL;
    json_t *j;
    ok(sbx_transcript_step_to_json(t, n, &s));
    j = json_loads(s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    sbx_free(s);
    return j;
}

static const char *jstr(json_t *o, const char *path1, const char *path2)
{
    json_t *v = json_object_get(o, path1);
    if (path2)
        v = json_object_get(v, path2);
    return json_string_value(v);
}

/* A transcript of a small job: two steps, finished. */
static sbx_transcript *small_job(void)
{
    sbx_transcript *t = sbx_transcript_new();
    size_t a, b;
    const char *argv1[] = {"npm", "ci"}, *argv2[] = {"npm", "test", "--", "--silent"};
    ck_assert_ptr_nonnull(t);
    ok(sbx_transcript_set_job_type(t, "verify.test"));
    ok(sbx_transcript_set_input(t, "repo", "https://github.com/acme/app.git"));
    ok(sbx_transcript_set_endpoint(t, "http://127.0.0.1:7777"));
    ok(sbx_transcript_set_policy_json(t, "{\"programs\":[\"npm\",\"git\"]}"));
    ok(sbx_transcript_set_netpolicy_json(t, "{\"mode\":\"deny-all\"}"));
    ok(sbx_transcript_set_sandbox_id(t, "sbx_0123abcd"));
    ok(sbx_transcript_step_begin(t, "install", &a));
    ok(sbx_transcript_step_set_argv(t, a, 2, argv1));
    ok(sbx_transcript_step_set_cwd(t, a, "/vercel/sandbox"));
    ok(sbx_transcript_step_add_env(t, a, "CI=1"));
    ok(sbx_transcript_step_set_command_id(t, a, "cmd_aaaa"));
    ok(t_step_output(t, a, SBX_STREAM_STDOUT, "added 12 packages\n", 18));
    ok(sbx_transcript_step_end(t, a, SBX_STEP_EXITED, 0, 1, NULL));
    ok(sbx_transcript_step_begin(t, "test", &b));
    ok(sbx_transcript_step_set_argv(t, b, 4, argv2));
    ok(t_step_output(t, b, SBX_STREAM_STDERR, "1 failing\n", 10));
    ok(sbx_transcript_step_end(t, b, SBX_STEP_EXITED, 1, 0, "tests failed"));
    ok(sbx_transcript_finish(t, SBX_VERDICT_FAILED));
    return t;
}

START_TEST(test_transcript_round_trip)
{
    sbx_transcript *t = small_job(), *u = sbx_transcript_new();
    char *a, *b, *job;
    size_t alen, blen;
    json_t *s1, *s2, *h;
    size_t broken = 7;

    ok(t_save_data(t, &a, &alen));
    ck_assert_uint_eq(strlen(a), alen);
    ok(sbx_transcript_verify(t, &broken));
    ck_assert_uint_eq(broken, 7); /* untouched when the chain holds */
    ck_assert_uint_eq(sbx_transcript_step_count(t), 2);
    ck_assert_int_eq(sbx_transcript_complete(t), 1);
    ck_assert_uint_eq(strlen(sbx_transcript_head_hash(t)), 64);

    /* Loaded back: the same bytes, the same chain. */
    ok(t_load_data(u, a, alen));
    ok(sbx_transcript_verify(u, NULL));
    ok(t_save_data(u, &b, &blen));
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(a, b, alen);
    ck_assert_str_eq(sbx_transcript_head_hash(u), sbx_transcript_head_hash(t));
    ck_assert_uint_eq(sbx_transcript_step_count(u), 2);
    ck_assert_int_eq(sbx_transcript_complete(u), 1);
    ck_assert_uint_eq(sbx_transcript_torn_bytes(u), 0);

    /* The header and the steps, field by field. */
    ok(sbx_transcript_job_to_json(u, &job));
    h = json_loads(job, 0, NULL);
    ck_assert_str_eq(jstr(h, "format", NULL), "sbxrun-transcript");
    ck_assert_int_eq(json_integer_value(json_object_get(h, "version")), 1);
    ck_assert_str_eq(jstr(json_object_get(h, "job"), "type", NULL), "verify.test");
    ck_assert_str_eq(jstr(json_object_get(h, "job"), "inputs", "repo"), "https://github.com/acme/app.git");
    ck_assert_str_eq(jstr(json_object_get(h, "job"), "sandbox_id", NULL), "sbx_0123abcd");
    ck_assert_str_eq(jstr(json_object_get(h, "job"), "netpolicy", "mode"), "deny-all");
    ck_assert_int_eq(json_integer_value(json_object_get(h, "seq")), 0);
    json_decref(h);
    sbx_free(job);
    s1 = step_obj(u, 1);
    s2 = step_obj(u, 2);
    ck_assert_str_eq(jstr(s1, "name", NULL), "install");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(s1, "argv"), 1)), "ci");
    ck_assert_str_eq(jstr(s1, "cwd", NULL), "/vercel/sandbox");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(s1, "env_keys"), 0)), "CI");
    ck_assert_str_eq(jstr(s1, "command_id", NULL), "cmd_aaaa");
    ck_assert_str_eq(jstr(s1, "reason", NULL), "exited");
    ck_assert_int_eq(json_integer_value(json_object_get(s1, "exit_code")), 0);
    ck_assert(json_is_true(json_object_get(s1, "retryable")));
    ck_assert_str_eq(jstr(json_object_get(s1, "output"), "stdout", "head"), "added 12 packages\n");
    ck_assert_str_eq(jstr(s2, "detail", NULL), "tests failed");
    ck_assert_int_eq(json_integer_value(json_object_get(s2, "exit_code")), 1);
    ck_assert(json_is_false(json_object_get(s2, "retryable")));
    ck_assert_str_eq(jstr(json_object_get(s2, "output"), "stderr", "head"), "1 failing\n");
    ck_assert_int_eq(json_integer_value(json_object_get(s2, "step")), 2);
    ck_assert_ptr_nonnull(jstr(s2, "started_at", NULL));
    ck_assert(json_integer_value(json_object_get(s2, "duration_ms")) >= 0);
    json_decref(s1);
    json_decref(s2);
    {
        char *x = NULL;
        ck_assert_int_eq(sbx_transcript_step_to_json(u, 3, &x), SBX_E_NOT_FOUND);
        ck_assert_ptr_null(x);
    }
    sbx_free(a);
    sbx_free(b);
    sbx_transcript_free(t);
    sbx_transcript_free(u);
}
END_TEST

/* Feed total bytes of a known pattern in chunks; check the windows. */
static void check_windows(uint64_t head, uint64_t tail, size_t total, size_t chunk)
{
    sbx_transcript *t = sbx_transcript_new();
    size_t s;
    char *text = malloc(total + 1), *h;
    json_t *e, *o;
    size_t hl, tl;
    const char *hs, *ts;
    for (size_t i = 0; i < total; i++)
        text[i] = (char)('a' + (i * 7 + i / 26) % 26);
    ok(sbx_transcript_set_limits(t, head, tail, 1u << 20));
    ok(sbx_transcript_step_begin(t, NULL, &s));
    for (size_t i = 0; i < total; i += chunk)
        ok(t_step_output(t, s, SBX_STREAM_STDOUT, text + i, total - i < chunk ? total - i : chunk));
    ok(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    e = step_obj(t, 1);
    o = json_object_get(json_object_get(e, "output"), "stdout");
    hs = json_string_value(json_object_get(o, "head"));
    ts = json_string_value(json_object_get(o, "tail"));
    hl = strlen(hs);
    tl = strlen(ts);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "bytes")), (json_int_t)total);
    ck_assert_uint_eq(hl, total < head ? total : head);
    ck_assert_uint_eq(tl, total <= head ? 0 : total - head < tail ? total - head : tail);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "dropped")), (json_int_t)(total - hl - tl));
    ck_assert_mem_eq(hs, text, hl);
    ck_assert_mem_eq(ts, text + total - tl, tl);
    /* stderr is a stream of its own, empty */
    h = (char *)json_string_value(json_object_get(json_object_get(json_object_get(e, "output"), "stderr"), "head"));
    ck_assert_str_eq(h, "");
    json_decref(e);
    free(text);
    sbx_transcript_free(t);
}

START_TEST(test_transcript_windows_exact)
{
    static const size_t totals[] = {0, 1, 9, 10, 11, 17, 18, 19, 100, 5000};
    static const size_t chunks[] = {1, 3, 7, 64, 100000};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
            check_windows(10, 8, totals[i], chunks[c]);
    check_windows(0, 0, 100, 7);
    check_windows(0, 16, 100, 7);
    check_windows(16, 0, 100, 7);
    /* a step producing far more than its windows keeps only them */
    check_windows(1024, 1024, 2u << 20, 65536);
}
END_TEST

/* Windows are cut at UTF-8 character boundaries; non-UTF-8 output is kept
 * as base64, byte for byte. */
START_TEST(test_transcript_windows_utf8_and_binary)
{
    sbx_transcript *t = sbx_transcript_new();
    size_t s;
    json_t *e, *o;
    /* "é" is 2 bytes: 10 of them, head 5 bytes, tail 5 bytes */
    const char *text = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    ok(sbx_transcript_set_limits(t, 5, 5, 1u << 20));
    ok(sbx_transcript_step_begin(t, NULL, &s));
    ok(t_step_output(t, s, SBX_STREAM_STDOUT, text, strlen(text)));
    ok(t_step_output(t, s, SBX_STREAM_STDERR, "\xff\x00\x01\xfe", 4));
    ok(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    e = step_obj(t, 1);
    o = json_object_get(json_object_get(e, "output"), "stdout");
    ck_assert_str_eq(json_string_value(json_object_get(o, "head")), "\xc3\xa9\xc3\xa9");
    ck_assert_str_eq(json_string_value(json_object_get(o, "tail")), "\xc3\xa9\xc3\xa9");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "dropped")), 20 - 8);
    o = json_object_get(json_object_get(e, "output"), "stderr");
    ck_assert_ptr_null(json_object_get(o, "head"));
    ck_assert_str_eq(json_string_value(json_object_get(o, "head_b64")), "/wAB/g==");
    json_decref(e);
    sbx_transcript_free(t);
}
END_TEST

/* The whole transcript stays within its limit: steps keep less output and
 * say so, and the end entry always fits. */
START_TEST(test_transcript_total_limit)
{
    sbx_transcript *t = sbx_transcript_new();
    char *big = malloc(100000), *x;
    size_t len;
    size_t s;
    json_t *e;
    memset(big, 'x', 100000);
    ok(sbx_transcript_set_limits(t, 4096, 4096, 8192));
    for (int i = 0; i < 5; i++) {
        sbx_status st;
        ok(sbx_transcript_step_begin(t, NULL, &s));
        ok(t_step_output(t, s, SBX_STREAM_STDOUT, big, 100000));
        st = sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL);
        ck_assert_msg(st == SBX_OK || st == SBX_E_BUDGET_EXCEEDED, "%s", sbx_transcript_last_error(t));
    }
    ok(sbx_transcript_finish(t, SBX_VERDICT_PASSED));
    ok(t_save_data(t, &x, &len));
    ck_assert_uint_le(len, 8192);
    ok(sbx_transcript_verify(t, NULL));
    ck_assert_uint_ge(sbx_transcript_step_count(t), 1);
    e = step_obj(t, 1);
    ck_assert(json_is_true(json_object_get(e, "truncated")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(e, "output"), "stdout"),
                                                        "bytes")),
                     100000);
    json_decref(e);
    sbx_free(x);
    free(big);
    sbx_transcript_free(t);
}
END_TEST

/* Any single-byte change in any entry is detected: the load fails or the
 * chain does not verify. */
START_TEST(test_transcript_every_byte_change_detected)
{
    sbx_transcript *t = small_job();
    char *text;
    size_t len, checked = 0;
    /* a flipped bit (digits, letters, hex of the hashes), a line break, a
     * quote: changes that keep or break the structure */
    static const unsigned char repl[] = {0x01, '\n', '"'};
    ok(t_save_data(t, &text, &len));
    for (size_t i = 0; i < len; i++) {
        for (size_t r = 0; r < sizeof repl; r++) {
            char *m;
            sbx_transcript *u;
            sbx_status st;
            unsigned char b = repl[r] == 0x01 ? (unsigned char)text[i] ^ 0x01 : repl[r];
            if ((unsigned char)text[i] == b)
                continue;
            m = malloc(len);
            memcpy(m, text, len);
            m[i] = (char)b;
            u = sbx_transcript_new();
            st = t_load_data(u, m, len);
            if (st == SBX_OK)
                st = sbx_transcript_verify(u, NULL);
            ck_assert_msg(st != SBX_OK, "byte %zu set to 0x%02x is not detected", i, repl[r]);
            sbx_transcript_free(u);
            free(m);
            checked++;
        }
    }
    ck_assert_uint_gt(checked, 2 * len);
    sbx_free(text);
    sbx_transcript_free(t);
}
END_TEST

/* The first broken entry is the one reported. */
START_TEST(test_transcript_verify_reports_first_broken)
{
    sbx_transcript *t = small_job(), *u;
    char *text, *m, *p;
    size_t len;
    size_t broken;
    ok(t_save_data(t, &text, &len));
    /* entry 1 (the first step) changed: its exit code */
    m = strdup(text);
    p = strstr(m, "\"exit_code\":0");
    ck_assert_ptr_nonnull(p);
    p[12] = '7';
    u = sbx_transcript_new();
    ok(t_load_data(u, m, len));
    ck_assert_int_eq(sbx_transcript_verify(u, &broken), SBX_E_INTEGRITY);
    ck_assert_int_eq(broken, 1);
    ck_assert_msg(strstr(sbx_transcript_last_error(u), "entry 1"), "%s", sbx_transcript_last_error(u));
    sbx_transcript_free(u);
    free(m);
    /* an entry removed: the next one's sequence and link break */
    {
        char *nl1 = strchr(text, '\n'), *nl2 = strchr(nl1 + 1, '\n');
        size_t cut = (size_t)(nl2 - nl1);
        m = malloc(len);
        memcpy(m, text, (size_t)(nl1 - text) + 1);
        memcpy(m + (nl1 - text) + 1, nl2 + 1, len - (size_t)(nl2 + 1 - text));
        u = sbx_transcript_new();
        ok(t_load_data(u, m, len - cut));
        ck_assert_int_eq(sbx_transcript_verify(u, &broken), SBX_E_INTEGRITY);
        ck_assert_int_eq(broken, 1);
        sbx_transcript_free(u);
        free(m);
    }
    /* the end entry dropped: the chain holds, but the job is not complete */
    {
        size_t k = len - 1;
        while (k > 0 && text[k - 1] != '\n')
            k--;
        u = sbx_transcript_new();
        ok(t_load_data(u, text, k));
        ok(sbx_transcript_verify(u, &broken));
        ck_assert_int_eq(sbx_transcript_complete(u), 0);
        /* ... which the head hash of the whole one tells apart */
        ck_assert_str_ne(sbx_transcript_head_hash(u), sbx_transcript_head_hash(t));
        sbx_transcript_free(u);
    }
    sbx_free(text);
    sbx_transcript_free(t);
}
END_TEST

/* A torn last line (a writer killed while writing it) is left out and
 * reported; what came before loads and verifies. */
START_TEST(test_transcript_torn_tail)
{
    sbx_transcript *t = small_job(), *u;
    char *text;
    size_t len, last;
    size_t broken;
    ok(t_save_data(t, &text, &len));
    last = len - 1;
    while (last > 0 && text[last - 1] != '\n')
        last--;
    for (size_t cut = last + 1; cut < len - 1; cut += 7) {
        u = sbx_transcript_new();
        ok(t_load_data(u, text, cut));
        ck_assert_uint_eq(sbx_transcript_torn_bytes(u), cut - last);
        ck_assert_uint_eq(sbx_transcript_step_count(u), 2);
        ck_assert_int_eq(sbx_transcript_complete(u), 0);
        ck_assert_int_eq(sbx_transcript_verify(u, &broken), SBX_E_INTEGRITY);
        ck_assert_int_eq(broken, 3); /* the header, two steps, then the torn end */
        ck_assert_msg(strstr(sbx_transcript_last_error(u), "torn"), "%s", sbx_transcript_last_error(u));
        sbx_transcript_free(u);
    }
    sbx_free(text);
    sbx_transcript_free(t);
}
END_TEST

/* The journal: entries are on disk as they are made; finish replaces the
 * file atomically with the complete transcript, leaving no temporary file. */
START_TEST(test_transcript_journal_and_atomic_finish)
{
    sbx_transcript *t = sbx_transcript_new(), *u;
    char path[300], *disk, *mem;
    size_t dlen, mlen;
    size_t s;
    const char *argv[] = {"true"};
    DIR *d;
    struct dirent *e;
    int files = 0;
    make_tmpdir();
    snprintf(path, sizeof path, "%s/job.transcript", tmpdir);
    ok(sbx_transcript_set_job_type(t, "verify.build"));
    ok(sbx_transcript_set_file(t, path));
    ok(sbx_transcript_step_begin(t, "build", &s));
    ok(sbx_transcript_step_set_argv(t, s, 1, argv));
    ok(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    /* on disk already: the header and the step */
    u = sbx_transcript_new();
    ok(sbx_transcript_load_file(u, path));
    ok(sbx_transcript_verify(u, NULL));
    ck_assert_uint_eq(sbx_transcript_step_count(u), 1);
    ck_assert_int_eq(sbx_transcript_complete(u), 0);
    sbx_transcript_free(u);
    ok(sbx_transcript_finish(t, SBX_VERDICT_PASSED));
    disk = read_file(path, &dlen);
    ok(t_save_data(t, &mem, &mlen));
    ck_assert_uint_eq(dlen, mlen);
    ck_assert_mem_eq(disk, mem, dlen);
    d = opendir(tmpdir);
    while ((e = readdir(d)))
        files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(files, 1);
    {
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
    }
    /* saved elsewhere, atomically too */
    {
        char other[320];
        snprintf(other, sizeof other, "%s/copy", tmpdir);
        ok(sbx_transcript_save_file(t, other));
        free(disk);
        disk = read_file(other, &dlen);
        ck_assert_mem_eq(disk, mem, mlen);
    }
    free(disk);
    sbx_free(mem);
    sbx_transcript_free(t);
    remove_tmpdir();
}
END_TEST

/* A writer killed with SIGKILL in the middle of a job: every completed
 * step is on disk and the file loads and verifies. */
START_TEST(test_transcript_crash_safety)
{
    char path[300];
    make_tmpdir();
    snprintf(path, sizeof path, "%s/crash.transcript", tmpdir);
    for (int round = 0; round < 6; round++) {
        int fds[2];
        pid_t pid;
        char buf[64];
        int done = 0;
        ck_assert_int_eq(pipe(fds), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            sbx_transcript *t = sbx_transcript_new();
            char out[4096];
            memset(out, 'o', sizeof out);
            close(fds[0]);
            if (!t || sbx_transcript_set_job_type(t, "verify.test") || sbx_transcript_set_file(t, path))
                _exit(2);
            for (size_t i = 0;; i++) {
                size_t s;
                if (sbx_transcript_step_begin(t, "step", &s))
                    _exit(3);
                for (int k = 0; k < 4; k++)
                    t_step_output(t, s, SBX_STREAM_STDOUT, out, sizeof out);
                if (sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL))
                    _exit(4);
                if (write(fds[1], "x", 1) != 1) /* one byte per step on disk */
                    _exit(5);
                if (i >= 3)
                    usleep(1000 * (unsigned)round); /* killed somewhere in here or in a write */
            }
        }
        close(fds[1]);
        while (done < 4 + round) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            ck_assert_int_gt(n, 0);
            done += (int)n;
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        /* the steps acknowledged before the kill, maybe a few more */
        {
            ssize_t n;
            while ((n = read(fds[0], buf, sizeof buf)) > 0)
                done += (int)n;
        }
        close(fds[0]);
        {
            sbx_transcript *u = sbx_transcript_new();
            size_t broken;
            sbx_status st;
            ok(sbx_transcript_load_file(u, path));
            ck_assert_uint_ge(sbx_transcript_step_count(u), (size_t)done);
            ck_assert_int_eq(sbx_transcript_complete(u), 0);
            st = sbx_transcript_verify(u, &broken);
            /* whole lines only, or one torn last line */
            if (st != SBX_OK) {
                ck_assert_uint_gt(sbx_transcript_torn_bytes(u), 0);
                ck_assert_uint_eq(broken, sbx_transcript_step_count(u) + 1);
            }
            sbx_transcript_free(u);
        }
    }
    remove_tmpdir();
}
END_TEST

/* Every string that enters is redacted: argv, cwd, env values are never
 * kept, output split anywhere, job inputs, endpoint, policy strings,
 * details; counts per kind in the step and in the end entry. */
START_TEST(test_transcript_redaction)
{
    sbx_transcript *t = sbx_transcript_new();
    sbx_redactor *r = sbx_redactor_new();
    size_t s;
    const char *argv[] = {"curl", "-H", "Authorization: Bearer " SECRET, "--token=" GHP};
    const char *out = "token is " SECRET " ok\n";
    char *text, *endj;
    size_t len;
    json_t *e, *end;
    ok(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)));
    ok(sbx_transcript_set_redactor(t, r));
    sbx_redactor_free(r); /* the transcript keeps the rules */
    ok(sbx_transcript_set_input(t, "password", SECRET));
    ok(sbx_transcript_set_endpoint(t, "https://user:" SECRET "@api.example.com"));
    ok(sbx_transcript_set_policy_json(t, "{\"note\":\"uses " SECRET "\"}"));
    ok(sbx_transcript_step_begin(t, NULL, &s));
    ok(sbx_transcript_step_set_argv(t, s, 4, argv));
    ok(sbx_transcript_step_set_cwd(t, s, "/vercel/sandbox/" SECRET));
    ok(sbx_transcript_step_add_env(t, s, "API_TOKEN=" SECRET));
    ck_assert_int_eq(sbx_transcript_step_add_env(t, s, "1BAD=" SECRET), SBX_E_INVALID_ARG);
    ck_assert_ptr_null(strstr(sbx_transcript_last_error(t), SECRET));
    for (size_t i = 0; i < strlen(out); i++) /* a byte at a time: split everywhere */
        ok(t_step_output(t, s, SBX_STREAM_STDOUT, out + i, 1));
    ok(sbx_transcript_step_end(t, s, SBX_STEP_TRANSPORT_ERROR, -1, 1, "lost " SECRET));
    ok(sbx_transcript_finish(t, SBX_VERDICT_ERROR));
    ok(t_save_data(t, &text, &len));
    ck_assert_msg(!strstr(text, SECRET) && !strstr(text, GHP), "%s", text);
    ck_assert_msg(strstr(text, "API_TOKEN") && strstr(text, "[REDACTED:github]"), "%s", text);
    /* An endpoint's userinfo is a credential even when no rule knows it. */
    ck_assert_msg(strstr(text, "\"https://api.example.com\"") && !strstr(text, "user:"), "%s", text);
    e = step_obj(t, 1);
    ck_assert_str_eq(jstr(json_object_get(e, "output"), "stdout", "head"), "token is [REDACTED:secret] ok\n");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "argv"), 2)),
                     "Authorization: Bearer [REDACTED:authorization]");
    ck_assert_str_eq(jstr(e, "reason", NULL), "transport-error");
    ck_assert(json_is_null(json_object_get(e, "exit_code")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(e, "redactions"), "github")), 1);
    ck_assert_int_ge(json_integer_value(json_object_get(json_object_get(e, "redactions"), "secret")), 3);
    json_decref(e);
    endj = strrchr(text, '{');
    (void)endj;
    {
        /* the end entry totals the counts */
        char *last = text + len - 1;
        while (last > text && last[-1] != '\n')
            last--;
        end = json_loads(last, 0, NULL);
        ck_assert_ptr_nonnull(end);
        ck_assert_str_eq(jstr(end, "type", NULL), "end");
        ck_assert_str_eq(jstr(end, "verdict", NULL), "error");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(end, "redactions"), "github")), 1);
        json_decref(end);
    }
    sbx_free(text);
    sbx_transcript_free(t);

    /* No redactor given: the built-in shapes still apply. */
    t = sbx_transcript_new();
    ok(sbx_transcript_step_begin(t, NULL, &s));
    ok(sbx_transcript_step_set_argv(t, s, 4, argv));
    ok(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    ok(t_save_data(t, &text, &len));
    ck_assert_msg(!strstr(text, GHP), "%s", text);
    sbx_free(text);
    sbx_transcript_free(t);
}
END_TEST

/* A sandbox id known after the first step gets an entry of its own; steps
 * still open at the end are recorded as cancelled. */
START_TEST(test_transcript_late_fields_and_open_steps)
{
    sbx_transcript *t = sbx_transcript_new();
    size_t a, b;
    json_t *e;
    ok(sbx_transcript_step_begin(t, "first", &a));
    ok(sbx_transcript_set_sandbox_id(t, "sbx_late"));
    ok(sbx_transcript_step_begin(t, "second", &b));
    ck_assert_uint_eq(b, a + 1);
    ok(sbx_transcript_finish(t, SBX_VERDICT_CANCELLED));
    ok(sbx_transcript_verify(t, NULL));
    ck_assert_uint_eq(sbx_transcript_step_count(t), 2);
    e = step_obj(t, 1);
    ck_assert_str_eq(jstr(e, "reason", NULL), "cancelled");
    ck_assert_str_eq(jstr(e, "name", NULL), "first"); /* the oldest first */
    json_decref(e);
    {
        char *x;
        size_t n;
        ok(t_save_data(t, &x, &n));
        ck_assert_ptr_nonnull(strstr(x, "{\"hash\":"));
        ck_assert_ptr_nonnull(strstr(x, "\"type\":\"meta\""));
        ck_assert_ptr_nonnull(strstr(x, "sbx_late"));
        sbx_free(x);
    }
    sbx_transcript_free(t);
}
END_TEST

START_TEST(test_transcript_argument_errors)
{
    sbx_transcript *t = sbx_transcript_new(), *u;
    size_t s;
    char *out = (char *)1, path[300];
    const char *argv[] = {"ls", NULL};
    ck_assert_int_eq(sbx_transcript_set_job_type(NULL, "x"), SBX_E_INVALID_ARG);
    ck_assert_str_eq(sbx_transcript_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_transcript_set_job_type(t, "bad type!"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_job_type(t, ""), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_input(t, "", "v"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_input(t, "k", "\xff"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_policy_json(t, "[1]"), SBX_E_PARSE);
    ck_assert_int_eq(sbx_transcript_set_policy_json(t, "{"), SBX_E_PARSE);
    ck_assert_int_eq(sbx_transcript_set_limits(t, 10, 10, 100), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_transcript_last_error(t), "total"), "%s", sbx_transcript_last_error(t));
    ck_assert_int_eq(sbx_transcript_set_limits(t, 2ull << 30, 10, 1u << 20), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_redactor(t, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_step_begin(t, NULL, NULL), SBX_E_INVALID_ARG);
    ok(sbx_transcript_step_begin(t, NULL, &s));
    ck_assert_int_eq(sbx_transcript_set_job_type(t, "late"), SBX_E_MISUSE);
    ck_assert_int_eq(sbx_transcript_set_limits(t, 10, 10, 1u << 20), SBX_E_MISUSE);
    ck_assert_int_eq(sbx_transcript_step_set_argv(t, s, 2, argv), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_step_set_argv(t, s, 0, argv), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_step_set_argv(t, s + 9, 1, argv), SBX_E_NOT_FOUND);
    ck_assert_int_eq(t_step_output(t, s, 3, "x", 1), SBX_E_INVALID_ARG);
    ck_assert_int_eq(t_step_output(t, s, SBX_STREAM_STDOUT, NULL, 1), SBX_E_INVALID_ARG);
    ok(t_step_output(t, s, SBX_STREAM_STDOUT, NULL, 0));
    ck_assert_int_eq(sbx_transcript_step_end(t, s, (sbx_step_outcome)42, 0, 0, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 256, 0, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, -2, 0, NULL), SBX_E_INVALID_ARG);
    ok(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    ck_assert_int_eq(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL), SBX_E_NOT_FOUND);
    ck_assert_int_eq(sbx_transcript_finish(t, (sbx_verdict)42), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_finish(t, (sbx_verdict)-1), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_set_file(t, "/nonexistent-dir/x/t.jsonl"), SBX_E_IO);
    ck_assert_msg(strstr(sbx_transcript_last_error(t), "/nonexistent-dir/x/t.jsonl"), "%s",
                  sbx_transcript_last_error(t));
    ok(sbx_transcript_finish(t, SBX_VERDICT_PASSED));
    ck_assert_int_eq(sbx_transcript_finish(t, SBX_VERDICT_PASSED), SBX_E_MISUSE);
    ck_assert_int_eq(sbx_transcript_step_begin(t, NULL, &s), SBX_E_MISUSE);
    ck_assert_int_eq(t_save_data(t, NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_job_to_json(t, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_transcript_save_file(t, "/nonexistent-dir/t.jsonl"), SBX_E_IO);
    ck_assert_int_eq(t_load_data(t, "x", 1), SBX_E_MISUSE);

    /* loading what is not a transcript */
    u = sbx_transcript_new();
    ck_assert_int_eq(t_load_data(u, "hello\n", 6), SBX_E_PARSE);
    sbx_transcript_free(u);
    u = sbx_transcript_new();
    ck_assert_int_eq(t_load_data(u, "", 0), SBX_E_PARSE);
    ck_assert_int_eq(sbx_transcript_job_to_json(u, &out), SBX_E_NOT_FOUND);
    ck_assert_ptr_null(out);
    sbx_transcript_free(u);
    u = sbx_transcript_new();
    {
        const char *v2 = "{\"type\":\"job\",\"format\":\"sbxrun-transcript\",\"version\":2}\n";
        ck_assert_int_eq(t_load_data(u, v2, strlen(v2)), SBX_E_UNSUPPORTED);
    }
    ck_assert_int_eq(sbx_transcript_step_begin(u, NULL, &s), SBX_E_MISUSE); /* loaded: read-only */
    sbx_transcript_free(u);
    u = sbx_transcript_new();
    snprintf(path, sizeof path, "/nonexistent-dir/t.jsonl");
    ck_assert_int_eq(sbx_transcript_load_file(u, path), SBX_E_IO);
    ck_assert_msg(strstr(sbx_transcript_last_error(u), path), "%s", sbx_transcript_last_error(u));
    sbx_transcript_free(u);

    /* references */
    ck_assert_ptr_eq(sbx_transcript_ref(t), t);
    sbx_transcript_free(t);
    ck_assert_uint_eq(sbx_transcript_step_count(t), 1); /* still alive */
    sbx_transcript_free(t);
    ck_assert_ptr_null(sbx_transcript_ref(NULL));
    sbx_transcript_free(NULL);
    ck_assert_uint_eq(sbx_transcript_step_count(NULL), 0);
    ck_assert_int_eq(sbx_transcript_complete(NULL), 0);
}
END_TEST

/* Allocation failures at every point of a whole job, export, load and
 * verify: SBX_E_NOMEM and nothing leaked. */
static sbx_status oom_once(void *ctx)
{
    sbx_transcript *t = sbx_transcript_new(), *u = NULL;
    sbx_redactor *r = sbx_redactor_new();
    size_t s;
    char *x = NULL;
    size_t n;
    const char *argv[] = {"echo", SECRET};
    sbx_status st = SBX_E_NOMEM;
    (void)ctx;
    if (!t || !r)
        goto out;
#define TRY(call)                                                                                     \
    do {                                                                                              \
        if ((st = (call)) != SBX_OK)                                                                  \
            goto out;                                                                                 \
    } while (0)
    TRY(sbx_redactor_add_secret(r, (const uint8_t *)SECRET, strlen(SECRET)));
    TRY(sbx_transcript_set_redactor(t, r));
    TRY(sbx_transcript_set_job_type(t, "verify.lint"));
    TRY(sbx_transcript_set_input(t, "k", SECRET));
    TRY(sbx_transcript_step_begin(t, "a", &s));
    TRY(sbx_transcript_step_set_argv(t, s, 2, argv));
    TRY(sbx_transcript_step_add_env(t, s, "X=1"));
    TRY(t_step_output(t, s, SBX_STREAM_STDOUT, SECRET "\n", strlen(SECRET) + 1));
    TRY(sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL));
    TRY(sbx_transcript_finish(t, SBX_VERDICT_PASSED));
    TRY(t_save_data(t, &x, &n));
    if (!(u = sbx_transcript_new())) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(t_load_data(u, x, n));
    TRY(sbx_transcript_verify(u, NULL));
#undef TRY
out:
    sbx_free(x);
    sbx_transcript_free(t);
    sbx_transcript_free(u);
    sbx_redactor_free(r);
    return st;
}

START_TEST(test_transcript_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_once, NULL), 10);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("transcript");
    TCase *tc = tcase_create("transcript");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_transcript_round_trip);
    tcase_add_test(tc, test_transcript_windows_exact);
    tcase_add_test(tc, test_transcript_windows_utf8_and_binary);
    tcase_add_test(tc, test_transcript_total_limit);
    tcase_add_test(tc, test_transcript_every_byte_change_detected);
    tcase_add_test(tc, test_transcript_verify_reports_first_broken);
    tcase_add_test(tc, test_transcript_torn_tail);
    tcase_add_test(tc, test_transcript_journal_and_atomic_finish);
    tcase_add_test(tc, test_transcript_crash_safety);
    tcase_add_test(tc, test_transcript_redaction);
    tcase_add_test(tc, test_transcript_late_fields_and_open_steps);
    tcase_add_test(tc, test_transcript_argument_errors);
    tcase_add_test(tc, test_transcript_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}
