/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by test_patch.c and test_patch_history.c: running git (the
 * reference sbx_patch is compared with), writing files, and building small
 * repositories. git runs with no system or global configuration, so a
 * developer's diff.noprefix or color.ui cannot change what it writes.
 */
#ifndef SBX_TEST_PATCH_GIT_H
#define SBX_TEST_PATCH_GIT_H

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

/* git's environment: no configuration but ours, the C locale, no variables
 * inherited from a hook that would point it at another repository. */
static inline void t_git_env(void)
{
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("LC_ALL", "C", 1);
    setenv("GIT_AUTHOR_NAME", "t", 1);
    setenv("GIT_AUTHOR_EMAIL", "t@example.com", 1);
    setenv("GIT_COMMITTER_NAME", "t", 1);
    setenv("GIT_COMMITTER_EMAIL", "t@example.com", 1);
    unsetenv("GIT_DIR");
    unsetenv("GIT_WORK_TREE");
    unsetenv("GIT_INDEX_FILE");
    unsetenv("GIT_OBJECT_DIRECTORY");
    unsetenv("GIT_ALTERNATE_OBJECT_DIRECTORIES");
}

/* Run a shell command (printf format); its exit status, or -1. */
static inline int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int t_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int n, st;
    va_start(ap, fmt);
    n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(n > 0 && (size_t)n < sizeof cmd, "command too long");
    st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Run a shell command and return what it prints on stdout (NUL-terminated,
 * free()), its length in *len; *status gets its exit status. */
static inline char *t_sh_out(size_t *len, int *status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline char *t_sh_out(size_t *len, int *status, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    FILE *f;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int k, st;
    va_start(ap, fmt);
    k = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(k > 0 && (size_t)k < sizeof cmd, "command too long");
    f = popen(cmd, "r");
    ck_assert_msg(f != NULL, "popen %s: %s", cmd, strerror(errno));
    for (;;) {
        size_t got;
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 65536 * 2;
            buf = realloc(buf, cap + 1);
            ck_assert_ptr_nonnull(buf);
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    st = pclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    if (status)
        *status = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    return buf;
}

/* Write n bytes to dir/rel, making the folders on the way; mode 0755 when
 * exec. */
static inline void t_write_file(const char *dir, const char *rel, const void *data, size_t n, int exec)
{
    char path[1024];
    FILE *f;
    int k = snprintf(path, sizeof path, "%s/%s", dir, rel);
    ck_assert(k > 0 && (size_t)k < sizeof path);
    for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
        *s = '/';
    }
    f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, exec ? 0755 : 0644), 0);
}

/* The verdict of `git apply --check` for the patch in file diff on tree rev
 * of repo: the tree is read into a temporary index of its own (the
 * repository's work tree and index are not used), and the patch is checked
 * against that index (--cached), which is the tree alone. 1 = applies. */
static inline int t_git_applies(const char *repo, const char *rev, const char *diff, const char *index)
{
    int st = t_sh("GIT_INDEX_FILE='%s' git -C '%s' read-tree '%s'", index, repo, rev);
    ck_assert_msg(st == 0, "git read-tree %s in %s: exit %d", rev, repo, st);
    st = t_sh("GIT_INDEX_FILE='%s' git -C '%s' apply --check --cached '%s' 2>/dev/null", index, repo, diff);
    ck_assert_msg(st == 0 || st == 1 || st == 128, "git apply --check: exit %d", st);
    return st == 0;
}

/* `git patch-id --stable` of the patch in file diff: 40 hex digits in id,
 * "" when git gives none. */
static inline void t_git_patch_id(const char *diff, char id[41])
{
    int st;
    char *out = t_sh_out(NULL, &st, "git patch-id --stable < '%s'", diff);
    id[0] = '\0';
    if (st == 0 && strlen(out) >= 40 && strspn(out, "0123456789abcdef") == 40) {
        memcpy(id, out, 40);
        id[40] = '\0';
    }
    free(out);
}

#endif /* SBX_TEST_PATCH_GIT_H */
