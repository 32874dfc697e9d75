/* SPDX-License-Identifier: MIT */
/*
 * sbx_patch against git on a real history: the first commits of this
 * project, from the bundle tests/fixtures/history.bundle (a complete
 * history, cloned at test time). For every commit C with one parent P, the
 * diff git writes (git diff --binary --full-index P C) must get the verdict
 * `git apply --check` gives on the tree of P (it applies), of C itself, and
 * of C~10 where there is one; so must the reverse diff (C to P: deletions,
 * and additions turned into removals) on C and on P; and each file's
 * section of the diff alone, on C and on C~10. sbx_patch_id() must be
 * `git patch-id --stable` of both diffs, and the diffstat git's --numstat.
 * git's verdict is taken on the tree alone: read into an index of its own
 * and checked with --cached.
 *
 * Not part of the allocation-failure runs: it is about verdicts, and spends
 * its time in git.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "patch_git.h"

#ifndef SBX_HISTORY_BUNDLE
#error "SBX_HISTORY_BUNDLE: the path of tests/fixtures/history.bundle, set by tests/unit/meson.build"
#endif

struct run {
    char dir[64];
    char repo[128];
    char index[128];
    char fwd[128];
    char rev[128];
    const char *diffopts; /* git diff's options: "" or rename and copy detection */
    int checked_commits, verdicts, sections, ids, mismatches;
    char first[1024];
};

static void mismatch(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(struct run *r, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "patch_history: MISMATCH %s\n", line);
    if (r->mismatches++ == 0)
        snprintf(r->first, sizeof r->first, "%s", line);
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The diff in file diff (bytes d, n: git's from..to) checked against base:
 * compared with git apply --check on the same tree. */
static void compare_verdict(struct run *r, const char *what, const char *commit, const char *base, const char *diff,
                            const uint8_t *d, size_t n)
{
    int git = t_git_applies(r->repo, base, diff, r->index);
    sbx_patch *p = sbx_patch_new();
    sbx_status st;
    ck_assert_ptr_nonnull(p);
    st = sbx_patch_set_base(p, r->repo, base);
    ck_assert_msg(st == SBX_OK, "set_base %s: %s", base, sbx_patch_last_error(p));
    st = sbx_patch_load_data(p, d, n);
    if (st == SBX_OK)
        st = sbx_patch_check(p);
    r->verdicts++;
    if (git ? !(st == SBX_OK && sbx_patch_get_verdict(p) == SBX_PATCH_APPLIES)
            : !(st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY))
        mismatch(r, "commit %.12s, %s diff on %.12s: git apply --check: %s; sbx_patch: %s (%s): %s", commit, what, base,
                 git ? "applies" : "does not apply", sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_status_name(st),
                 sbx_patch_last_error(p));
    sbx_patch_free(p);
}

/* Each file's section of the diff (bytes d, n) alone against base, whose
 * tree is already read into r->index: a finer comparison, where a file the
 * commit adds exists already (on C) and hunks sit at other lines (on C~10). */
static void compare_sections(struct run *r, const char *commit, const char *base, const uint8_t *d, size_t n)
{
    char path[160];
    const char *t = (const char *)d, *end = t + n;
    snprintf(path, sizeof path, "%s/section.diff", r->dir);
    ck_assert_int_eq(t_sh("GIT_INDEX_FILE='%s' git -C '%s' read-tree '%s'", r->index, r->repo, base), 0);
    while (t < end) {
        const char *next = t;
        size_t len;
        FILE *f;
        int git;
        sbx_patch *p;
        sbx_status st;
        /* The next "diff --git " at the start of a line. */
        do {
            next = memchr(next, '\n', (size_t)(end - next));
            next = next ? next + 1 : end;
        } while (next < end && ((size_t)(end - next) < 11 || memcmp(next, "diff --git ", 11) != 0));
        len = (size_t)(next - t);
        f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(t, 1, len, f), len);
        fclose(f);
        git = t_sh("GIT_INDEX_FILE='%s' git -C '%s' apply --check --cached '%s' 2>/dev/null", r->index, r->repo,
                   path) == 0;
        p = sbx_patch_new();
        ck_assert_int_eq(sbx_patch_set_base(p, r->repo, base), SBX_OK);
        st = sbx_patch_load_data(p, (const uint8_t *)t, len);
        if (st == SBX_OK)
            st = sbx_patch_check(p);
        r->sections++;
        if (git ? !(st == SBX_OK && sbx_patch_get_verdict(p) == SBX_PATCH_APPLIES)
                : !(st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY)) {
            const char *nl = memchr(t, '\n', len);
            mismatch(r, "commit %.12s, the section \"%.*s\" alone on %.12s: git apply --check: %s; sbx_patch: %s (%s): %s",
                     commit, nl ? (int)(nl - t) : 0, t, base, git ? "applies" : "does not apply",
                     sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_status_name(st), sbx_patch_last_error(p));
        }
        sbx_patch_free(p);
        t = next;
    }
}

/* The patch id and the diffstat of the diff in file diff, against git's. */
static void compare_id_and_stat(struct run *r, const char *what, const char *commit, const char *diff,
                                const char *numstat_range, const uint8_t *d, size_t n)
{
    char id[41];
    sbx_patch *p = sbx_patch_new();
    sbx_status st = sbx_patch_load_data(p, d, n);
    size_t adds = 0, dels = 0, files = 0, gadds = 0, gdels = 0, gfiles = 0;
    char *ns, *line;
    int rc;
    t_git_patch_id(diff, id);
    r->ids++;
    if (st != SBX_OK) {
        mismatch(r, "commit %.12s, %s diff: load: %s: %s", commit, what, sbx_status_name(st), sbx_patch_last_error(p));
        sbx_patch_free(p);
        return;
    }
    if (strcmp(sbx_patch_id(p), id) != 0)
        mismatch(r, "commit %.12s, %s diff: git patch-id --stable %s, sbx_patch_id %s", commit, what, id,
                 sbx_patch_id(p));
    files = sbx_patch_file_count(p);
    for (size_t i = 0; i < files; i++) {
        adds += sbx_patch_file_additions(p, i);
        dels += sbx_patch_file_deletions(p, i);
    }
    ns = t_sh_out(NULL, &rc, "git -C '%s' diff %s --numstat %s", r->repo, r->diffopts, numstat_range);
    ck_assert_int_eq(rc, 0);
    for (line = strtok(ns, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long a = 0, b = 0;
        gfiles++;
        if (sscanf(line, "%lu\t%lu", &a, &b) == 2) { /* "-\t-" for a binary file */
            gadds += a;
            gdels += b;
        }
    }
    free(ns);
    if (files != gfiles || adds != gadds || dels != gdels)
        mismatch(r, "commit %.12s, %s diff: git --numstat %zu files +%zu -%zu, sbx_patch %zu files +%zu -%zu", commit,
                 what, gfiles, gadds, gdels, files, adds, dels);
    sbx_patch_free(p);
}

/* Commit c (parent pa) against git, every way: the forward diff on pa, on
 * c and on c~10, file by file on c and c~10, the reverse diff on c and pa,
 * the patch ids and diffstats. */
static void check_commit(struct run *r, const char *c, const char *pa, int *empty)
{
    char older[64];
    uint8_t *fwd, *rev;
    size_t nf, nr;
    char *out;
    int rc;
    ck_assert_int_eq(t_sh("git -C '%s' diff %s --binary --full-index %s %s > '%s'", r->repo, r->diffopts, pa, c,
                          r->fwd), 0);
    ck_assert_int_eq(t_sh("git -C '%s' diff %s --binary --full-index %s %s > '%s'", r->repo, r->diffopts, c, pa,
                          r->rev), 0);
    fwd = read_all(r->fwd, &nf);
    rev = read_all(r->rev, &nr);
    if (nf == 0) {
        (*empty)++;
        free(fwd);
        free(rev);
        return;
    }
    r->checked_commits++;

    compare_verdict(r, "forward", c, pa, r->fwd, fwd, nf);
    compare_verdict(r, "forward", c, c, r->fwd, fwd, nf);
    compare_sections(r, c, c, fwd, nf);
    out = t_sh_out(NULL, &rc, "git -C '%s' rev-parse -q --verify '%s~10^{commit}'", r->repo, c);
    if (rc == 0 && strlen(out) >= 40) {
        memcpy(older, out, 40);
        older[40] = '\0';
        compare_verdict(r, "forward", c, older, r->fwd, fwd, nf);
        compare_sections(r, c, older, fwd, nf);
    }
    free(out);
    compare_verdict(r, "reverse", c, c, r->rev, rev, nr);
    compare_verdict(r, "reverse", c, pa, r->rev, rev, nr);

    {
        char range[100];
        snprintf(range, sizeof range, "%s %s", pa, c);
        compare_id_and_stat(r, "forward", c, r->fwd, range, fwd, nf);
        snprintf(range, sizeof range, "%s %s", c, pa);
        compare_id_and_stat(r, "reverse", c, r->rev, range, rev, nr);
    }
    free(fwd);
    free(rev);
}

/* Every commit with one parent on branch of r->repo; merges and the root
 * are counted in *skipped and left out. */
static void check_history(struct run *r, const char *branch, int *skipped, int *empty)
{
    char *list, *save = NULL;
    int rc;
    /* "C P" per commit, oldest first; a merge has more parents, the root none. */
    list = t_sh_out(NULL, &rc, "git -C '%s' rev-list --reverse --parents %s", r->repo, branch);
    ck_assert_int_eq(rc, 0);
    for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char c[41], pa[41];
        if (strlen(line) != 81 || line[40] != ' ') {
            *skipped += strlen(line) > 81;
            continue;
        }
        memcpy(c, line, 40);
        c[40] = '\0';
        memcpy(pa, line + 41, 40);
        pa[40] = '\0';
        check_commit(r, c, pa, empty);
    }
    free(list);
}

static void run_init(struct run *r, const char *diffopts)
{
    memset(r, 0, sizeof *r);
    t_git_env();
    strcpy(r->dir, "/tmp/sbx-patch-history-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
    snprintf(r->repo, sizeof r->repo, "%s/repo.git", r->dir);
    snprintf(r->index, sizeof r->index, "%s/index", r->dir);
    snprintf(r->fwd, sizeof r->fwd, "%s/forward.diff", r->dir);
    snprintf(r->rev, sizeof r->rev, "%s/reverse.diff", r->dir);
    r->diffopts = diffopts;
}

START_TEST(test_patch_history_matches_git)
{
    struct run r;
    int rc, skipped_merges = 0, empty = 0;
    run_init(&r, "");
    rc = t_sh("git clone -q --bare '%s' '%s'", SBX_HISTORY_BUNDLE, r.repo);
    ck_assert_msg(rc == 0, "git clone %s: exit %d", SBX_HISTORY_BUNDLE, rc);
    check_history(&r, "history", &skipped_merges, &empty);
    fprintf(stderr,
            "patch_history: %d commits checked (%d merges and %d empty diffs skipped): %d verdicts of whole diffs, "
            "%d of single files' sections and %d patch ids and diffstats compared with git, %d mismatches\n",
            r.checked_commits, skipped_merges, empty, r.verdicts, r.sections, r.ids, r.mismatches);
    t_sh("rm -rf '%s'", r.dir);
    ck_assert_int_ge(r.checked_commits, 40);
    ck_assert_msg(r.mismatches == 0, "%d of %d comparisons with git differ (all on stderr); the first: %s",
                  r.mismatches, r.verdicts + r.sections + r.ids, r.first);
}
END_TEST

/* The forms this project's early history lacks, one commit each, with
 * git's rename and copy detection on: a pure rename, a rename with a
 * change, a copy with a change, a mode change alone and with a change, a
 * binary file changed, added and deleted, a file losing and gaining its
 * last newline, an empty file added and deleted, a file moved into a new
 * directory, and a deletion. Symbolic links are left out: git applies them,
 * sbx_patch refuses them by design (doc/patch.md). */
static const char *const forms[][2] = {
    {"git mv a.txt moved.txt", "a pure rename"},
    {"git mv b.txt b-renamed.txt && sed -i 's/^line 7 of b$/line seven of b/' b-renamed.txt",
     "a rename with a change"},
    {"cp c.txt c-copy.txt && sed -i 's/^line 3 of c$/line three of the copy/' c-copy.txt", "a copy with a change"},
    {"chmod +x tool.sh", "a mode change alone"},
    {"chmod -x tool.sh && echo 'echo again' >> tool.sh", "a mode change with a change"},
    {"printf '\\001\\002\\377binary\\000\\000tail' >> data.bin", "a binary file changed"},
    {"head -c 3000 /dev/zero | tr '\\0' '\\7' > new.bin && git rm -q --cached data.bin && rm data.bin",
     "a binary file added, another deleted"},
    {"printf 'no newline at the end' > c.txt", "a file losing its last newline"},
    {"printf 'no newline at the end, then one\\n' > c.txt", "a file gaining it"},
    {": > empty.txt", "an empty file added"},
    {"git rm -q empty.txt", "an empty file deleted"},
    {"mkdir -p deep/er && git mv moved.txt deep/er/moved.txt && sed -i '1s/.*/first, changed/' deep/er/moved.txt",
     "a file moved into a new directory, changed"},
    {"git rm -q b-renamed.txt", "a deletion"},
};

START_TEST(test_patch_history_every_form_matches_git)
{
    struct run r;
    char work[128];
    int skipped = 0, empty = 0;
    run_init(&r, "-M -C -C");
    snprintf(work, sizeof work, "%s/work", r.dir);
    /* The base: text files of 30 lines, a script, a binary file. */
    ck_assert_int_eq(t_sh("git init -q '%s' && cd '%s' && for f in a b c; do for i in $(seq 30); do "
                          "echo \"line $i of $f\"; done > $f.txt; done && printf '#!/bin/sh\\necho hi\\n' > tool.sh && "
                          "head -c 2048 /dev/zero | tr '\\0' '\\1' > data.bin && printf '\\000\\377' >> data.bin && "
                          "git add -A && git commit -qm base",
                          work, work), 0);
    for (size_t i = 0; i < SBX__ARRAY_LEN(forms); i++)
        ck_assert_msg(t_sh("cd '%s' && %s && git add -A && git commit -qm 'form %zu'", work, forms[i][0], i) == 0,
                      "could not make the commit of %s", forms[i][1]);
    ck_assert_int_eq(t_sh("git clone -q --bare '%s' '%s'", work, r.repo), 0);
    /* The diffs do hold every form (git writes them so with these options). */
    {
        static const char *const marks[] = {"similarity index 100%", "rename from", "copy from", "old mode",
                                            "GIT binary patch", "deleted file mode", "No newline at end of file",
                                            "new file mode 100644"};
        for (size_t i = 0; i < SBX__ARRAY_LEN(marks); i++)
            ck_assert_msg(t_sh("git -C '%s' log -p %s --binary --full-index | grep -q '%s'", r.repo, r.diffopts,
                               marks[i]) == 0,
                          "no diff of the history holds '%s'", marks[i]);
    }
    check_history(&r, "HEAD", &skipped, &empty);
    fprintf(stderr,
            "patch_history: every form: %d commits checked: %d verdicts, %d sections, %d patch ids and diffstats "
            "compared with git, %d mismatches\n",
            r.checked_commits, r.verdicts, r.sections, r.ids, r.mismatches);
    t_sh("rm -rf '%s'", r.dir);
    ck_assert_int_eq(r.checked_commits, (int)SBX__ARRAY_LEN(forms));
    ck_assert_msg(r.mismatches == 0, "%d of %d comparisons with git differ (all on stderr); the first: %s",
                  r.mismatches, r.verdicts + r.sections + r.ids, r.first);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("patch_history");
    TCase *tc = tcase_create("patch_history");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_patch_history_matches_git);
    tcase_add_test(tc, test_patch_history_every_form_matches_git);
    suite_add_tcase(s, tc);
    return s;
}
