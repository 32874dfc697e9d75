/* SPDX-License-Identifier: MIT */
/* sbxrun policy check: ask the command policy about one argv, offline. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sbxrun/sbxrun.h>

#include "cli.h"

static const char usage_text[] =
    "usage: sbxrun policy check [--policy FILE] [--cwd DIR] [--job TYPE] [--json]\n"
    "                           -- PROGRAM [ARGS...]\n"
    "\n"
    "Decide whether PROGRAM ARGS may run under the command policy (the default\n"
    "policy, or FILE's: doc/policy.md). Nothing is run.\n"
    "\n"
    "  --policy FILE  a JSON policy file\n"
    "  --cwd DIR      the working directory [/vercel/sandbox]\n"
    "  --job TYPE     apply the rules of this job type too: repo.clone,\n"
    "                 repo.applyPatch, deps.install, verify.lint,\n"
    "                 verify.typecheck, verify.test, verify.build, db.migrate\n"
    "  --json         print the decision as JSON on stdout: sbxrun's envelope\n"
    "                 (sbxrun(1), JSON OUTPUT), the decision its result\n"
    "\n"
    "Exit status: 0 allowed, 3 denied (one line on stderr: denied: REASON:\n"
    "MESSAGE), 2 usage errors (no PROGRAM, a policy file that does not load),\n"
    "125 out of memory.\n";

enum { O_POLICY = 1, O_CWD, O_JOB, O_JSON, O_HELP };

/* The decision as the result; exit code rc. */
static void print_json(int rc, sbx_status st, sbx_policy_reason reason, const char *msg)
{
    cli_json_result("policy", rc,
                    json_pack("{s:s, s:s, s:s}", "decision", st == SBX_OK ? "allow" : "deny", "reason",
                              sbx_policy_reason_name(reason), "message", msg));
}

static int check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"policy", required_argument, NULL, O_POLICY}, {"cwd", required_argument, NULL, O_CWD},
        {"job", required_argument, NULL, O_JOB},       {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, O_HELP},           {NULL, 0, NULL, 0},
    };
    const char *file = NULL, *cwd = NULL, *job = NULL;
    bool json = cli_json_enabled();
    int o, rc;
    sbx_policy *p;
    sbx_policy_reason reason;
    sbx_status st;
    char msg[1024];

    opterr = 0;
    optind = 1;
    /* '+': options end at the program, so its own options are left alone. */
    while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (o) {
        case O_POLICY: file = optarg; break;
        case O_CWD: cwd = optarg; break;
        case O_JOB: job = optarg; break;
        case O_JSON: json = true; cli_json_mode(); break;
        case 'h':
        case O_HELP: fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        default: return cli_bad_option("policy", argc, argv, opts);
        }
    }
    if (optind >= argc)
        return cli_usage_error("policy", "check: no PROGRAM to check (sbxrun policy check [options] -- PROGRAM "
                                         "[ARGS...])");
    if (!(p = sbx_policy_new()))
        return cli_fail("policy", SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
    if (file && sbx_policy_load_file(p, file) != SBX_OK) {
        rc = cli_usage_error("policy", "%s", sbx_policy_last_error(p));
        sbx_policy_free(p);
        return rc;
    }
    st = sbx_policy_check(p, job, (size_t)(argc - optind), (const char *const *)(argv + optind), cwd, &reason,
                          msg, sizeof msg);
    sbx_policy_free(p);
    if (st != SBX_OK && st != SBX_E_POLICY_DENIED)
        return cli_usage_error("policy", "%s", msg);
    if (json)
        print_json(st == SBX_OK ? SBXRUN_EXIT_OK : SBXRUN_EXIT_DENIED, st, reason, msg);
    if (st == SBX_OK)
        return SBXRUN_EXIT_OK;
    fprintf(stderr, "denied: %s: %s\n", sbx_policy_reason_name(reason), msg);
    return SBXRUN_EXIT_DENIED;
}

int cmd_policy(int argc, char **argv)
{
    static const char *const subs[] = {"check"};
    int rc = cli_subcommand("policy", argc, argv, usage_text, subs, 1);
    return rc >= 0 ? rc : check(argc - 1, argv + 1);
}
