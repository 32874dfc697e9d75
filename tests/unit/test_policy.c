/* SPDX-License-Identifier: MIT */
/* The command policy: its API, its JSON file, and every rule through the
 * table-driven corpus tests/unit/policy_corpus.jsonl. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "util/jobtype.h"

#ifndef SBX_POLICY_CORPUS
#error "SBX_POLICY_CORPUS: the corpus file's path, set by tests/unit/meson.build"
#endif

/* Check argv (NULL-terminated) under p from the default cwd. */
static sbx_status chk(const sbx_policy *p, const char *job, const char *const *argv, sbx_policy_reason *r,
                      char *msg, size_t cap)
{
    size_t n = 0;
    while (argv[n])
        n++;
    return sbx_policy_check(p, job, n, argv, NULL, r, msg, cap);
}

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_policy_api_arguments)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r = SBX_POLICY_SCRIPT;
    char msg[128];
    const char *argv[] = {"ls", NULL};
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sbx_policy_check(NULL, NULL, 1, argv, NULL, &r, msg, sizeof msg), SBX_E_INVALID_ARG);
    ck_assert_str_eq(msg, "invalid argument: the policy is NULL");
    ck_assert_int_eq(r, SBX_POLICY_ALLOW);
    ck_assert_int_eq(sbx_policy_check(p, NULL, 1, NULL, NULL, &r, msg, sizeof msg), SBX_E_INVALID_ARG);
    ck_assert_str_eq(msg, "invalid argument: argv is NULL");
    ck_assert_int_eq(sbx_policy_check(p, NULL, 2, argv, NULL, &r, msg, sizeof msg), SBX_E_INVALID_ARG);
    ck_assert_str_eq(msg, "invalid argument: argv[1] is NULL");
    ck_assert_int_eq(sbx_policy_check(p, "verify.lnt", 1, argv, NULL, &r, msg, sizeof msg), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(msg, "verify.lnt"), "%s", msg);
    /* No argv at all is a denial, not a misuse. */
    ck_assert_int_eq(sbx_policy_check(p, NULL, 0, NULL, NULL, &r, msg, sizeof msg), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_EMPTY_ARGV);
    /* reason and msg are optional. */
    ck_assert_int_eq(sbx_policy_check(p, NULL, 1, ARGV("sh"), NULL, NULL, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(sbx_policy_check(p, NULL, 1, argv, NULL, NULL, NULL, 99), SBX_OK);
    /* A short buffer gets a truncated, terminated message. */
    ck_assert_int_eq(sbx_policy_check(p, NULL, 2, ARGV("cat", "/etc/passwd"), NULL, &r, msg, 12),
                     SBX_E_POLICY_DENIED);
    ck_assert_uint_eq(strlen(msg), 11);
    ck_assert_str_eq(sbx_policy_last_error(NULL), "invalid argument: the handle is NULL");
    sbx_policy_free(p);
    sbx_policy_free(NULL);
}
END_TEST

START_TEST(test_policy_reason_names)
{
    static const char *const names[] = {"allow",       "empty_argv", "program_path", "program_not_allowed",
                                        "control_char", "arg_too_long", "cwd_outside", "path_outside",
                                        "subcommand",  "option",     "config",       "transport",
                                        "script",      "package_exec", "encoding"};
    for (int i = 0; i < (int)SBX__ARRAY_LEN(names); i++)
        ck_assert_str_eq(sbx_policy_reason_name(i), names[i]);
    ck_assert_str_eq(sbx_policy_reason_name(-1), "unknown");
    ck_assert_str_eq(sbx_policy_reason_name(15), "unknown");
}
END_TEST

START_TEST(test_policy_messages_name_the_argument)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    char msg[256];
    ck_assert_int_eq(chk(p, NULL, ARGV("cat", "ok.txt", "../../etc/shadow"), &r, msg, sizeof msg),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PATH_OUTSIDE);
    ck_assert_msg(strstr(msg, "argument 2") && strstr(msg, "../../etc/shadow"), "%s", msg);
    ck_assert_int_eq(chk(p, NULL, ARGV("git", "-c", "core.pager=sh", "log"), &r, msg, sizeof msg),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_CONFIG);
    ck_assert_msg(strstr(msg, "core.pager=sh") && strstr(msg, "argument 2"), "%s", msg);
    /* Control characters are shown escaped, never raw. */
    ck_assert_int_eq(chk(p, NULL, ARGV("ls", "a\x1b[2Jb"), &r, msg, sizeof msg), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_CONTROL_CHAR);
    ck_assert_msg(strstr(msg, "a\\x1b[2Jb") && !strchr(msg, 0x1b), "%s", msg);
    sbx_policy_free(p);
}
END_TEST

START_TEST(test_policy_setters)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, "/bin/make"), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_policy_last_error(p), "/bin/make"), "%s", sbx_policy_last_error(p));
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, ""), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, "ma\nke"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_program(NULL, NULL, "make"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_program(p, "verify.nope", "make"), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_policy_last_error(p), "verify.nope"), "%s", sbx_policy_last_error(p));
    ck_assert_int_eq(sbx_policy_allow_package(p, NULL, "npm:evil"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_package(p, NULL, "Eslint"), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_allow_package(p, NULL, "eslint@"), SBX_E_INVALID_ARG);

    /* A job type's allow applies to that job type only. */
    ck_assert_int_eq(sbx_policy_allow_program(p, "verify.build", "make"), SBX_OK);
    ck_assert_str_eq(sbx_policy_last_error(p), "");
    ck_assert_int_eq(chk(p, "verify.build", ARGV("make", "all"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("make", "all"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PROGRAM_NOT_ALLOWED);
    ck_assert_int_eq(chk(p, NULL, ARGV("make", "all"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    /* Generic rules still apply to it. */
    ck_assert_int_eq(chk(p, "verify.build", ARGV("make", "-C/etc"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PATH_OUTSIDE);

    /* Deny wins over allow, in either order and across scopes. */
    ck_assert_int_eq(sbx_policy_deny_program(p, "verify.lint", "sed"), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.lint", ARGV("sed", "p", "f"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("sed", "p", "f"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(sbx_policy_allow_program(p, "verify.lint", "sed"), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.lint", ARGV("sed", "p", "f"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(sbx_policy_deny_program(p, NULL, "npx"), SBX_OK);
    ck_assert_int_eq(sbx_policy_allow_package(p, NULL, "eslint"), SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("npx", "eslint"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PROGRAM_NOT_ALLOWED);
    ck_assert_int_eq(chk(p, NULL, ARGV("bunx", "eslint", "src"), &r, NULL, 0), SBX_OK);

    /* Packages per job type. */
    ck_assert_int_eq(sbx_policy_allow_package(p, "verify.typecheck", "typescript@5.6.3"), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.typecheck", ARGV("bunx", "typescript@5.6.3"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.typecheck", ARGV("bunx", "typescript@5.6.4"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("bunx", "typescript@5.6.3"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PACKAGE_EXEC);
    sbx_policy_free(p);
}
END_TEST

START_TEST(test_policy_load_json_errors)
{
    static const struct {
        const char *json;
        sbx_status st;
        const char *want;
    } bad[] = {
        {"{", SBX_E_PARSE, "not valid JSON"},
        {"[]", SBX_E_INVALID_ARG, "must be a JSON object"},
        {"{}", SBX_E_INVALID_ARG, "version: missing"},
        {"{\"version\":2}", SBX_E_INVALID_ARG, "version: must be 1"},
        {"{\"version\":1,\"alow\":{}}", SBX_E_INVALID_ARG, "alow: unknown key"},
        {"{\"version\":1,\"allow\":{\"progams\":[]}}", SBX_E_INVALID_ARG, "allow.progams: unknown key"},
        {"{\"version\":1,\"deny\":{\"packages\":[]}}", SBX_E_INVALID_ARG, "deny.packages: unknown key"},
        {"{\"version\":1,\"allow\":{\"programs\":\"make\"}}", SBX_E_INVALID_ARG, "allow.programs: must be an array"},
        {"{\"version\":1,\"allow\":{\"programs\":[\"make\",3]}}", SBX_E_INVALID_ARG, "allow.programs[1]: must be a string"},
        {"{\"version\":1,\"allow\":{\"programs\":[\"/bin/make\"]}}", SBX_E_INVALID_ARG, "allow.programs[0]: \"/bin/make\""},
        {"{\"version\":1,\"allow\":{\"programs\":[\"ma\\u0000ke\"]}}", SBX_E_PARSE, "u0000"},
        {"{\"version\":1,\"allow\":{\"packages\":[\"git+https://x/y\"]}}", SBX_E_INVALID_ARG, "allow.packages[0]"},
        {"{\"version\":1,\"extends\":\"all\"}", SBX_E_INVALID_ARG, "extends: must be"},
        {"{\"version\":1,\"jobTypes\":{\"verify.lnt\":{}}}", SBX_E_INVALID_ARG, "jobTypes.verify.lnt: unknown job type"},
        {"{\"version\":1,\"jobTypes\":{\"verify.lint\":{\"allow\":{\"programs\":[\"\"]}}}}", SBX_E_INVALID_ARG,
         "jobTypes.verify.lint.allow.programs[0]"},
        {"{\"version\":1,\"jobTypes\":{\"verify.lint\":{\"extends\":1}}}", SBX_E_INVALID_ARG,
         "jobTypes.verify.lint.extends: unknown key"},
        {"{\"version\":1,\"version\":1}", SBX_E_PARSE, "duplicate"},
    };
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, "make"), SBX_OK);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        ck_assert_int_eq(sbx_policy_load_json(p, bad[i].json), bad[i].st);
        ck_assert_msg(strstr(sbx_policy_last_error(p), bad[i].want), "%s: %s", bad[i].json,
                      sbx_policy_last_error(p));
        /* Unchanged on failure: make is still allowed. */
        ck_assert_int_eq(chk(p, NULL, ARGV("make"), &r, NULL, 0), SBX_OK);
    }
    ck_assert_int_eq(sbx_policy_load_json(p, NULL), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx_policy_load_json(NULL, "{}"), SBX_E_INVALID_ARG);
    sbx_policy_free(p);
}
END_TEST

START_TEST(test_policy_load_json_replaces)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    ck_assert_int_eq(sbx_policy_allow_program(p, NULL, "make"), SBX_OK);
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"deny\":{\"programs\":[\"sed\"]},"
                                             "\"jobTypes\":{\"verify.lint\":{\"allow\":{\"packages\":[\"eslint\"]}}}}"),
                     SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("make"), &r, NULL, 0), SBX_E_POLICY_DENIED); /* replaced */
    ck_assert_int_eq(chk(p, NULL, ARGV("sed", "p"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, NULL, ARGV("git", "status"), &r, NULL, 0), SBX_OK);   /* default kept */
    ck_assert_int_eq(chk(p, "verify.lint", ARGV("npx", "eslint", "."), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("npx", "eslint", "."), &r, NULL, 0), SBX_E_POLICY_DENIED);
    /* extends none: only what the file allows. */
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"extends\":\"none\",\"allow\":{\"programs\":[\"ls\"]}}"),
                     SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("ls"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("git", "status"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    sbx_policy_free(p);
}
END_TEST

START_TEST(test_policy_load_file)
{
    char path[] = "/tmp/sbx-policy-XXXXXX";
    int fd = mkstemp(path);
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    static const char doc[] = "{\"version\": 1, \"allow\": {\"programs\": [\"make\"]}}\n";
    char *big;
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, doc, sizeof doc - 1), (ssize_t)(sizeof doc - 1));
    close(fd);
    ck_assert_int_eq(sbx_policy_load_file(p, path), SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("make"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(sbx_policy_load_file(p, "/nonexistent/policy.json"), SBX_E_IO);
    ck_assert_msg(strstr(sbx_policy_last_error(p), "/nonexistent/policy.json"), "%s", sbx_policy_last_error(p));
    ck_assert_int_eq(sbx_policy_load_file(p, "/tmp"), SBX_E_IO);
    ck_assert_int_eq(sbx_policy_load_file(p, NULL), SBX_E_INVALID_ARG);
    /* Over 1 MiB: refused before parsing. */
    big = malloc((1u << 20) + 2);
    memset(big, ' ', (1u << 20) + 1);
    fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(write(fd, big, (1u << 20) + 1), (ssize_t)((1u << 20) + 1));
    close(fd);
    free(big);
    ck_assert_int_eq(sbx_policy_load_file(p, path), SBX_E_BUDGET_EXCEEDED);
    ck_assert_int_eq(chk(p, NULL, ARGV("make"), &r, NULL, 0), SBX_OK); /* unchanged */
    unlink(path);
    sbx_policy_free(p);
}
END_TEST

/* ---- the corpus ---------------------------------------------------------------------------- */

struct corpus_case {
    json_t *j;
    int line;
};

static int run_case(json_t *c, int line, char *why, size_t cap)
{
    json_t *jargv = json_object_get(c, "argv"), *pol = json_object_get(c, "policy"), *rep = json_object_get(c, "repeat");
    const char *cwd = json_string_value(json_object_get(c, "cwd"));
    const char *job = json_string_value(json_object_get(c, "job"));
    const char *expect = json_string_value(json_object_get(c, "expect"));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    size_t n = json_array_size(jargv);
    const char **argv = calloc(n + 1, sizeof *argv);
    char *big = NULL, msg[512];
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    sbx_status st;
    int bad = 0;

    if (!json_is_array(jargv) || !expect || (strcmp(expect, "allow") && (strcmp(expect, "deny") || !reason))) {
        snprintf(why, cap, "line %d: malformed case", line);
        bad = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        argv[i] = json_string_value(json_array_get(jargv, i));
    if (rep) {
        size_t idx = (size_t)json_integer_value(json_object_get(rep, "index"));
        size_t cnt = (size_t)json_integer_value(json_object_get(rep, "count"));
        const char *ch = json_string_value(json_object_get(rep, "char"));
        big = malloc(cnt + 1);
        memset(big, ch ? ch[0] : 'a', cnt);
        big[cnt] = '\0';
        if (idx < n)
            argv[idx] = big;
    }
    if (pol) {
        char *s = json_dumps(pol, 0);
        st = sbx_policy_load_json(p, s);
        free(s);
        if (st != SBX_OK) {
            snprintf(why, cap, "line %d: inline policy: %s", line, sbx_policy_last_error(p));
            bad = 1;
            goto out;
        }
    }
    st = sbx_policy_check(p, job, n, argv, cwd, &r, msg, sizeof msg);
    if (strcmp(expect, "allow") == 0 ? st != SBX_OK
                                     : st != SBX_E_POLICY_DENIED || strcmp(sbx_policy_reason_name((int)r), reason)) {
        char *a = json_dumps(jargv, JSON_COMPACT);
        snprintf(why, cap, "line %d: %s%s%s -> got %s %s (%s)%s%s", line, expect, reason ? " " : "",
                 reason ? reason : "", st == SBX_OK ? "allow" : st == SBX_E_POLICY_DENIED ? "deny" : "error",
                 sbx_policy_reason_name((int)r), msg, a ? " argv " : "", a ? a : "");
        free(a);
        bad = 1;
    }
out:
    free(big);
    free(argv);
    sbx_policy_free(p);
    return bad;
}

START_TEST(test_policy_corpus)
{
    FILE *f = fopen(SBX_POLICY_CORPUS, "r");
    char *line = NULL, why[1024];
    size_t cap = 0;
    int lineno = 0, cases = 0, failed = 0;
    ssize_t len;
    ck_assert_msg(f != NULL, "cannot open %s", SBX_POLICY_CORPUS);
    while ((len = getline(&line, &cap, f)) >= 0) {
        json_error_t je;
        json_t *c;
        lineno++;
        if (len == 0 || line[0] == '#' || strspn(line, " \t\r\n") == (size_t)len)
            continue;
        c = json_loads(line, 0, &je);
        ck_assert_msg(c != NULL, "line %d: %s", lineno, je.text);
        cases++;
        if (run_case(c, lineno, why, sizeof why)) {
            if (failed++ < 60)
                fprintf(stderr, "corpus: %s\n", why);
        }
        json_decref(c);
    }
    free(line);
    fclose(f);
    ck_assert_int_ge(cases, 300);
    ck_assert_msg(failed == 0, "%d of %d corpus cases failed (listed on stderr)", failed, cases);
}
END_TEST

/* ---- job types ------------------------------------------------------------------------------ */

#define KNOWN_JOBS                                                                                           \
    "(known: repo.clone, repo.applyPatch, deps.install, verify.lint, verify.typecheck, verify.test, "        \
    "verify.build, db.migrate)"

/* One table of job types: the names in the list the messages print are the
 * table's, in its order, and every caller of it says the same. */
START_TEST(test_policy_job_types_shared)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    char msg[512], list[512] = "";
    ck_assert_int_eq(SBX__NJOB_TYPES, 8);
    for (size_t i = 0; i < SBX__NJOB_TYPES; i++) {
        const char *job = sbx__job_type_name(i);
        char doc[256];
        ck_assert_int_eq(sbx__job_type_index(job), (int)i);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", job);
        /* Every job type is a scope of the API and of the file. */
        ck_assert_int_eq(chk(p, job, ARGV("ls"), &r, msg, sizeof msg), SBX_OK);
        ck_assert_int_eq(sbx_policy_allow_program(p, job, "make"), SBX_OK);
        snprintf(doc, sizeof doc, "{\"version\":1,\"jobTypes\":{\"%s\":{\"allow\":{\"programs\":[\"make\"]}}}}", job);
        ck_assert_msg(sbx_policy_load_json(p, doc) == SBX_OK, "%s: %s", job, sbx_policy_last_error(p));
        ck_assert_int_eq(chk(p, job, ARGV("make"), &r, NULL, 0), SBX_OK);
    }
    ck_assert_str_eq(list, SBX__JOB_TYPES_LIST);
    ck_assert_ptr_null(sbx__job_type_name(SBX__NJOB_TYPES));
    ck_assert_int_eq(sbx__job_type_index(NULL), -1);
    ck_assert_int_eq(sbx__job_type_index("install"), -1); /* the alias is the network presets' only */
    ck_assert_int_eq(sbx__job_type_index("Deps.Install"), -1);

    /* The three messages list them all. */
    ck_assert_int_eq(chk(p, "deps", ARGV("ls"), &r, msg, sizeof msg), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(msg, "unknown job type \"deps\" " KNOWN_JOBS), "%s", msg);
    ck_assert_int_eq(sbx_policy_deny_program(p, "install", "npm"), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_policy_last_error(p), "unknown job type \"install\" " KNOWN_JOBS), "%s",
                  sbx_policy_last_error(p));
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"jobTypes\":{\"install\":{}}}"), SBX_E_INVALID_ARG);
    ck_assert_msg(strstr(sbx_policy_last_error(p), "jobTypes.install: unknown job type " KNOWN_JOBS), "%s",
                  sbx_policy_last_error(p));
    sbx_policy_free(p);
}
END_TEST

static bool pm_job(const char *job)
{
    static const char *const jobs[] = {"deps.install", "verify.lint", "verify.typecheck",
                                       "verify.test",  "verify.build", "db.migrate"};
    for (size_t i = 0; job && i < SBX__ARRAY_LEN(jobs); i++)
        if (strcmp(jobs[i], job) == 0)
            return true;
    return false;
}

/* npm, pnpm and yarn: allowed by default for six job types, not for
 * repo.* nor without a job type; the base programs everywhere; a policy
 * can deny them per type or for all, and extends "none" drops them. */
START_TEST(test_policy_package_manager_defaults)
{
    static const char *const pms[] = {"npm", "pnpm", "yarn"};
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    char msg[256];
    for (size_t i = 0; i <= SBX__NJOB_TYPES; i++) {
        const char *job = i < SBX__NJOB_TYPES ? sbx__job_type_name(i) : NULL;
        for (size_t k = 0; k < SBX__ARRAY_LEN(pms); k++) {
            sbx_status st = chk(p, job, ARGV(pms[k], "install"), &r, msg, sizeof msg);
            if (pm_job(job)) {
                ck_assert_msg(st == SBX_OK, "%s %s: %s", job, pms[k], msg);
            } else {
                ck_assert_msg(st == SBX_E_POLICY_DENIED && r == SBX_POLICY_PROGRAM_NOT_ALLOWED, "%s %s: %s",
                              job ? job : "NULL", pms[k], msg);
                ck_assert_msg(strstr(msg, pms[k]), "%s", msg);
            }
        }
        ck_assert_int_eq(chk(p, job, ARGV("git", "status"), &r, NULL, 0), SBX_OK);
        ck_assert_int_eq(chk(p, job, ARGV("bun", "install"), &r, NULL, 0), SBX_OK);
    }
    /* A deny wins over the default allow: per job type, then for all. */
    ck_assert_int_eq(sbx_policy_deny_program(p, "verify.test", "npm"), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("npm", "test"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PROGRAM_NOT_ALLOWED);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("yarn", "test"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.lint", ARGV("npm", "run", "lint"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"jobTypes\":{\"deps.install\":{\"deny\":{\"programs\":"
                                             "[\"pnpm\"]}}}}"),
                     SBX_OK);
    ck_assert_int_eq(chk(p, "deps.install", ARGV("pnpm", "install"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, "deps.install", ARGV("npm", "ci"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, "verify.test", ARGV("npm", "test"), &r, NULL, 0), SBX_OK); /* replaced */
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"deny\":{\"programs\":[\"npm\",\"yarn\"]}}"), SBX_OK);
    ck_assert_int_eq(chk(p, "deps.install", ARGV("npm", "ci"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, "verify.build", ARGV("yarn"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(chk(p, "verify.build", ARGV("pnpm", "run", "build"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"extends\":\"none\",\"allow\":{\"programs\":[\"ls\"]}}"),
                     SBX_OK);
    ck_assert_int_eq(chk(p, "deps.install", ARGV("npm", "ci"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    /* A file can allow them for a plain command, and the rules still apply. */
    ck_assert_int_eq(sbx_policy_load_json(p, "{\"version\":1,\"allow\":{\"programs\":[\"npm\"]}}"), SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("npm", "ci"), &r, NULL, 0), SBX_OK);
    ck_assert_int_eq(chk(p, NULL, ARGV("npm", "install", "lodash"), &r, NULL, 0), SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_SUBCOMMAND);
    ck_assert_int_eq(chk(p, "repo.clone", ARGV("npm", "ci"), &r, NULL, 0), SBX_OK);
    sbx_policy_free(p);
}
END_TEST

/* The rules of npm, pnpm and yarn: each case under every job type that
 * allows them by default, and without a job type under a policy that
 * allows them for all (there, without one, they are not allowed at all).
 * A denial names the argument: the message holds `want`. */
struct pm_case {
    const char *const *argv;
    sbx_policy_reason reason;
    const char *want;
};

#define A(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct pm_case pm_cases[] = {
    /* npm: allowed */
    {A("npm", "ci"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "install"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "i"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "install", "--offline", "--omit=dev", "--include=dev", "--loglevel", "warn", "--silent"),
     SBX_POLICY_ALLOW, NULL},
    {A("npm", "ci", "--omit", "dev", "--registry=https://npm.example.com/", "--registry", "https://r.example.com/"),
     SBX_POLICY_ALLOW, NULL},
    {A("npm", "ci", "--cache", ".npm-cache", "--prefix", "app"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "ci", "--cache=/vercel/sandbox/.npm", "--prefix=/vercel/sandbox/app"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "--ignore-scripts", "ci"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "--", "ci"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "rebuild"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run", "build"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run", "build", "--", "--watch", "src/index.ts"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run-script", "lint"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run", "test", "--if-present", "--ignore-scripts"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "test"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "t"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "test", "--", "--coverage", "-t", "name"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "--version"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "-v"), SBX_POLICY_ALLOW, NULL},
    /* npm: refused */
    {A("npm", "install", "lodash"), SBX_POLICY_SUBCOMMAND, "npm install \"lodash\" (argument 2) adds a package"},
    {A("npm", "i", "lodash@4"), SBX_POLICY_SUBCOMMAND, "(argument 2)"},
    {A("npm", "install", "--", "lodash"), SBX_POLICY_SUBCOMMAND, "\"lodash\" (argument 3)"},
    {A("npm", "ci", "./evil"), SBX_POLICY_SUBCOMMAND, "(argument 2)"},
    {A("npm", "install", "--ignore-scripts", "git+https://evil.example.com/x.git"), SBX_POLICY_SUBCOMMAND,
     "(argument 3)"},
    {A("npm", "rebuild", "lodash"), SBX_POLICY_SUBCOMMAND, "(argument 2)"},
    {A("npm", "exec", "cowsay"), SBX_POLICY_PACKAGE_EXEC, "\"cowsay\" (argument 2)"},
    {A("npm", "x", "cowsay"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("npm", "init"), SBX_POLICY_PACKAGE_EXEC, "npm init"},
    {A("npm", "init", "vite"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("npm", "create", "vite"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("npm", "publish"), SBX_POLICY_SUBCOMMAND, "npm publish (argument 1)"},
    {A("npm", "link"), SBX_POLICY_SUBCOMMAND, "npm link (argument 1)"},
    {A("npm", "add", "lodash"), SBX_POLICY_SUBCOMMAND, "npm add (argument 1)"},
    {A("npm", "explore", "lodash"), SBX_POLICY_SUBCOMMAND, "npm explore (argument 1)"},
    {A("npm", "config", "get", "registry"), SBX_POLICY_SUBCOMMAND, "npm config (argument 1)"},
    {A("npm", "version", "patch"), SBX_POLICY_SUBCOMMAND, "(argument 1)"},
    {A("npm", "uninstall", "lodash"), SBX_POLICY_SUBCOMMAND, "(argument 1)"},
    {A("npm", "ins"), SBX_POLICY_SUBCOMMAND, "(argument 1)"}, /* abbreviations are not read */
    {A("npm", "install", "-g", "typescript"), SBX_POLICY_OPTION, "npm -g (argument 2)"},
    {A("npm", "--global", "ci"), SBX_POLICY_OPTION, "npm --global (argument 1)"},
    {A("npm", "ci", "--location=global"), SBX_POLICY_OPTION, "npm --location (argument 2)"},
    {A("npm", "ci", "-gs"), SBX_POLICY_OPTION, "\"-gs\" (argument 2)"},
    {A("npm", "ci", "--prefix", "/usr/local"), SBX_POLICY_PATH_OUTSIDE, "argument 3"},
    {A("npm", "ci", "--prefix=../.."), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("npm", "-C", "/", "ci"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("npm", "ci", "--cache", "/root/.npm"), SBX_POLICY_PATH_OUTSIDE, "argument 3"},
    {A("npm", "ci", "--cache=/tmp/c"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    /* --prefix moves where scripts run, not where npm reads --cache: both readings are judged */
    {A("npm", "--prefix", "a/b/c", "ci", "--cache", "../../../../x"), SBX_POLICY_PATH_OUTSIDE, "argument 5"},
    {A("npm", "--prefix", "..", "run", "t", "--", "../x"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("npm", "run", "build", "--script-shell=/bin/sh"), SBX_POLICY_OPTION, "npm --script-shell (argument 3)"},
    {A("npm", "run", "build", "--script-shell", "bash"), SBX_POLICY_OPTION, "(argument 3)"},
    {A("npm", "test", "--node-options=--require=/tmp/x.js"), SBX_POLICY_OPTION, "npm --node-options (argument 2)"},
    {A("npm", "run", "lint", "--userconfig", "/tmp/npmrc"), SBX_POLICY_OPTION, "(argument 3)"},
    {A("npm", "ci", "--script-sh=bash"), SBX_POLICY_OPTION, "\"--script-sh=bash\" (argument 2)"},
    {A("npm", "test", "--watch"), SBX_POLICY_OPTION, "\"--watch\" (argument 2)"},
    {A("npm", "ci", "--ignore-scripts=false"), SBX_POLICY_OPTION, "takes no value"},
    {A("npm", "ci", "--cache"), SBX_POLICY_OPTION, "has no value"},
    {A("npm", "ci", "--loglevel", "--global"), SBX_POLICY_OPTION, "npm option --loglevel (argument 2) has no value"},
    {A("npm", "ci", "--loglevel=-x"), SBX_POLICY_ALLOW, NULL},
    {A("npm", "run", "build", "--", "../../etc/passwd"), SBX_POLICY_PATH_OUTSIDE, "argument 4"},
    /* pnpm */
    {A("pnpm", "install", "--frozen-lockfile"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "i"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "install", "--ignore-scripts"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "install", "--frozen-lockfile", "--prefer-offline", "--store-dir", ".pnpm-store"), SBX_POLICY_ALLOW,
     NULL},
    {A("pnpm", "run", "build"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "run", "test", "--watch", "--ignore-scripts"), SBX_POLICY_ALLOW, NULL}, /* the script's */
    {A("pnpm", "test"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "-C", "app", "install", "--frozen-lockfile"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "--version"), SBX_POLICY_ALLOW, NULL},
    {A("pnpm", "install", "lodash"), SBX_POLICY_SUBCOMMAND, "pnpm install \"lodash\" (argument 2)"},
    {A("pnpm", "dlx", "cowsay"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("pnpm", "exec", "sh"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("pnpm", "create", "vite"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("pnpm", "add", "lodash"), SBX_POLICY_SUBCOMMAND, "pnpm add (argument 1)"},
    {A("pnpm", "env", "use", "20"), SBX_POLICY_SUBCOMMAND, "pnpm env (argument 1)"},
    {A("pnpm", "build"), SBX_POLICY_SUBCOMMAND, "pnpm build (argument 1)"}, /* falls back to exec */
    {A("pnpm", "-g", "install"), SBX_POLICY_OPTION, "pnpm -g (argument 1)"},
    {A("pnpm", "--dir", "/tmp", "install"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("pnpm", "install", "--store-dir=/root/.pnpm"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("pnpm", "--config.script-shell=/bin/sh", "run", "lint"), SBX_POLICY_OPTION, "(argument 1)"},
    {A("pnpm", "run", "build", "--config.script-shell=/bin/sh"), SBX_POLICY_OPTION, "(argument 3)"},
    {A("pnpm", "test", "--node-options=--require=x"), SBX_POLICY_OPTION, "(argument 2)"},
    {A("pnpm", "run", "x", "../../etc"), SBX_POLICY_PATH_OUTSIDE, "argument 3"},
    /* yarn */
    {A("yarn"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "install", "--frozen-lockfile"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "install", "--immutable"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "--frozen-lockfile", "--ignore-scripts"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "install", "--ignore-scripts", "--cache-folder", ".yarn-cache"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "run", "build"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "test", "--watch"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "build", "--prod"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "tsc", "--noEmit"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "--cwd", "app", "lint"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "node", "scripts/check.js"), SBX_POLICY_ALLOW, NULL},
    {A("yarn", "install", "lodash"), SBX_POLICY_SUBCOMMAND, "yarn install \"lodash\" (argument 2)"},
    {A("yarn", "dlx", "cowsay"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("yarn", "exec", "sh"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("yarn", "create", "vite"), SBX_POLICY_PACKAGE_EXEC, "(argument 2)"},
    {A("yarn", "add", "lodash"), SBX_POLICY_SUBCOMMAND, "yarn add (argument 1)"},
    {A("yarn", "global", "add", "x"), SBX_POLICY_SUBCOMMAND, "yarn global (argument 1)"},
    {A("yarn", "npm", "publish"), SBX_POLICY_SUBCOMMAND, "yarn npm (argument 1)"},
    {A("yarn", "set", "version", "latest"), SBX_POLICY_SUBCOMMAND, "yarn set (argument 1)"},
    {A("yarn", "sh", "-c", "id"), SBX_POLICY_SUBCOMMAND, "\"sh\" (argument 1)"},
    {A("yarn", "bash"), SBX_POLICY_SUBCOMMAND, "\"bash\" (argument 1)"},
    {A("yarn", "python3", "x.py"), SBX_POLICY_SUBCOMMAND, "(argument 1)"},
    {A("yarn", "env"), SBX_POLICY_SUBCOMMAND, "(argument 1)"},
    {A("yarn", "run", "sh"), SBX_POLICY_SUBCOMMAND, "\"sh\" (argument 2)"},
    {A("yarn", "--silent", "curl", "http://x"), SBX_POLICY_SUBCOMMAND, "(argument 2)"},
    {A("yarn", "node", "-e", "1"), SBX_POLICY_SCRIPT, "node -e"},
    {A("yarn", "cat", "/etc/passwd"), SBX_POLICY_PATH_OUTSIDE, "/etc/passwd"},
    {A("yarn", "--cwd", "/tmp", "install"), SBX_POLICY_PATH_OUTSIDE, "argument 2"},
    {A("yarn", "--cwd", "a", "--cache-folder", "../../x"), SBX_POLICY_PATH_OUTSIDE, "argument 4"},
    {A("yarn", "--global-folder", "g"), SBX_POLICY_OPTION, "(argument 1)"},
    {A("yarn", "install", "--verbose"), SBX_POLICY_OPTION, "\"--verbose\" (argument 2)"},
    {A("yarn", "test", "--script-shell=sh"), SBX_POLICY_OPTION, "(argument 2)"},
};

static void pm_expect(const sbx_policy *p, const char *job, const struct pm_case *k)
{
    sbx_policy_reason r;
    char msg[256], line[256] = "";
    sbx_status st = chk(p, job, k->argv, &r, msg, sizeof msg);
    for (size_t i = 0; k->argv[i]; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", i ? " " : "", k->argv[i]);
    if (k->reason == SBX_POLICY_ALLOW) {
        ck_assert_msg(st == SBX_OK, "%s: [%s] denied: %s", job ? job : "NULL", line, msg);
        return;
    }
    ck_assert_msg(st == SBX_E_POLICY_DENIED && r == k->reason, "%s: [%s]: %s %s, expected %s",
                  job ? job : "NULL", line, sbx_policy_reason_name(r), msg, sbx_policy_reason_name(k->reason));
    ck_assert_msg(strstr(msg, k->want), "%s: [%s]: message \"%s\" lacks \"%s\"", job ? job : "NULL", line, msg,
                  k->want);
}

START_TEST(test_policy_package_manager_rules)
{
    sbx_policy *def = sbx_policy_new(), *all = sbx_policy_new();
    sbx_policy_reason r;
    ck_assert_int_eq(sbx_policy_load_json(all, "{\"version\":1,\"allow\":{\"programs\":[\"npm\",\"pnpm\",\"yarn\"]}}"),
                     SBX_OK);
    for (size_t c = 0; c < SBX__ARRAY_LEN(pm_cases); c++) {
        const struct pm_case *k = &pm_cases[c];
        sbx_status st;
        for (size_t i = 0; i < SBX__NJOB_TYPES; i++)
            if (pm_job(sbx__job_type_name(i)))
                pm_expect(def, sbx__job_type_name(i), k);
        pm_expect(all, NULL, k);
        pm_expect(all, "repo.clone", k);
        /* Without a job type the default policy does not allow them: only
         * a package exec is judged as one. */
        st = chk(def, NULL, k->argv, &r, NULL, 0);
        ck_assert_int_eq(st, SBX_E_POLICY_DENIED);
        if (r != SBX_POLICY_PACKAGE_EXEC)
            ck_assert_int_eq(r, SBX_POLICY_PROGRAM_NOT_ALLOWED);
    }
    sbx_policy_free(def);
    sbx_policy_free(all);
}
END_TEST

/* The commands a job layer runs for repo.clone and repo.applyPatch. */
START_TEST(test_policy_job_git_commands)
{
    const struct {
        const char *job;
        const char *const *argv;
    } ok[] = {
        {"repo.clone", A("git", "clone", "--depth", "1", "--branch", "main", "https://github.com/o/r.git",
                         "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "clone", "--depth", "1", "--branch", "release/v1.2", "https://github.com/o/r",
                         "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "clone", "https://gitlab.example.com:8443/group/sub/r.git", "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "clone", "http://git.example.com/r.git", "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "clone", "git://git.kernel.org/pub/scm/git/git.git", "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "clone", "--depth", "1", "--branch", "v2.0.0", "git://example.com/r.git",
                         "/vercel/sandbox/repo")},
        {"repo.clone", A("git", "-C", "/vercel/sandbox/repo", "fetch", "--depth", "1", "origin",
                         "0123456789abcdef0123456789abcdef01234567")},
        {"repo.clone", A("git", "-C", "/vercel/sandbox/repo", "checkout", "--detach",
                         "0123456789abcdef0123456789abcdef01234567")},
        {"repo.clone", A("git", "-C", "/vercel/sandbox/repo", "rev-parse", "HEAD")},
        {"repo.applyPatch", A("git", "-C", "/vercel/sandbox/repo", "apply", "--index", "--whitespace=nowarn",
                              "/vercel/sandbox/.sbx/patch-1.diff")},
        {"repo.applyPatch", A("git", "apply", "--check", "/vercel/sandbox/.sbx/patch-1.diff")},
        {"repo.applyPatch", A("git", "apply", "--check", "patch.diff")},
    };
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    char msg[256];
    for (size_t i = 0; i < SBX__ARRAY_LEN(ok); i++) {
        /* Allowed for their job type and for plain commands alike. */
        ck_assert_msg(chk(p, ok[i].job, ok[i].argv, &r, msg, sizeof msg) == SBX_OK, "%zu: %s", i, msg);
        ck_assert_msg(chk(p, NULL, ok[i].argv, &r, msg, sizeof msg) == SBX_OK, "%zu: %s", i, msg);
    }
    /* ... and their hostile neighbours are not. */
    ck_assert_int_eq(chk(p, "repo.clone", A("git", "clone", "file:///etc", "/vercel/sandbox/repo"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_TRANSPORT);
    ck_assert_int_eq(chk(p, "repo.clone", A("git", "clone", "https://github.com/o/r", "/tmp/repo"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PATH_OUTSIDE);
    ck_assert_int_eq(chk(p, "repo.clone", A("git", "-C", "/vercel/sandbox/repo", "fetch", "--upload-pack=sh",
                                            "origin"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_OPTION);
    ck_assert_int_eq(chk(p, "repo.applyPatch", A("git", "apply", "--check", "/tmp/p.diff"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_PATH_OUTSIDE);
    ck_assert_int_eq(chk(p, "repo.applyPatch", A("git", "apply", "--unsafe-paths", "p.diff"), &r, NULL, 0),
                     SBX_E_POLICY_DENIED);
    ck_assert_int_eq(r, SBX_POLICY_OPTION);
    sbx_policy_free(p);
}
END_TEST

/* ---- threads and allocation failures ------------------------------------------------------- */

struct shared {
    const sbx_policy *p;
    int denied;
};

static void *checker(void *arg)
{
    struct shared *s = arg;
    sbx_policy_reason r;
    char msg[128];
    int denied = 0;
    for (int i = 0; i < 20000; i++) {
        if (chk(s->p, "verify.lint", ARGV("git", "-C", i % 2 ? "/tmp" : "sub", "status"), &r, msg, sizeof msg) ==
            SBX_E_POLICY_DENIED)
            denied++;
    }
    s->denied = denied;
    return NULL;
}

START_TEST(test_policy_shared_between_threads)
{
    sbx_policy *p = sbx_policy_new();
    pthread_t t[4];
    struct shared s[4];
    for (int i = 0; i < 4; i++) {
        s[i].p = p;
        ck_assert_int_eq(pthread_create(&t[i], NULL, checker, &s[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(s[i].denied, 10000);
    }
    sbx_policy_free(p);
}
END_TEST

static sbx_status oom_once(void *ctx)
{
    sbx_policy *p = sbx_policy_new();
    sbx_policy_reason r;
    sbx_status st;
    (void)ctx;
    if (!p)
        return SBX_E_NOMEM;
    st = sbx_policy_allow_program(p, "verify.build", "make");
    if (st == SBX_OK)
        st = sbx_policy_allow_package(p, NULL, "eslint@9.1.0");
    if (st == SBX_OK)
        st = sbx_policy_load_json(p, "{\"version\":1,\"allow\":{\"programs\":[\"make\"],\"packages\":[\"tsx\"]},"
                                     "\"jobTypes\":{\"verify.lint\":{\"deny\":{\"programs\":[\"sed\"]}}}}");
    if (st == SBX_OK && chk(p, NULL, ARGV("npx", "tsx", "a.ts"), &r, NULL, 0) != SBX_OK)
        st = SBX_E_INTERNAL;
    sbx_policy_free(p);
    return st;
}

START_TEST(test_policy_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_once, NULL), 10);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("policy");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_policy_api_arguments);
    tcase_add_test(tc, test_policy_reason_names);
    tcase_add_test(tc, test_policy_messages_name_the_argument);
    tcase_add_test(tc, test_policy_setters);
    tcase_add_test(tc, test_policy_load_json_errors);
    tcase_add_test(tc, test_policy_load_json_replaces);
    tcase_add_test(tc, test_policy_load_file);
    tcase_add_test(tc, test_policy_corpus);
    tcase_add_test(tc, test_policy_job_types_shared);
    tcase_add_test(tc, test_policy_package_manager_defaults);
    tcase_add_test(tc, test_policy_package_manager_rules);
    tcase_add_test(tc, test_policy_job_git_commands);
    tcase_add_test(tc, test_policy_shared_between_threads);
    tcase_add_test(tc, test_policy_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}
