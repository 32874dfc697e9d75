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
    tcase_add_test(tc, test_policy_shared_between_threads);
    tcase_add_test(tc, test_policy_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}
