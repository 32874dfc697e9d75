/* SPDX-License-Identifier: MIT */
/* sbxrun netpolicy show: print the network-policy preset of a job type. */
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"

static const char usage_text[] =
    "usage: sbxrun netpolicy show JOBTYPE [--input KEY=VALUE]... [--compact] [--json]\n"
    "\n"
    "Print the network policy that the preset of a job type gives, as the\n"
    "protocol's networkPolicy JSON, after the checks the library makes.\n"
    "\n"
    "job types and their inputs:\n"
    "  verify.lint, verify.typecheck, verify.test, verify.build, repo.applyPatch\n"
    "                      deny-all; no inputs\n"
    "  repo.clone          the git host of url=URL only (https, http, ssh, git,\n"
    "                      or user@host:path)\n"
    "  deps.install        registry.npmjs.org, registry.yarnpkg.com,\n"
    "                      repo.yarnpkg.com, and the host of each registry=URL\n"
    "                      (\"install\" is accepted as another name of it)\n"
    "  db.migrate          the database host of url=URL (postgres, mysql,\n"
    "                      mongodb, redis, ...) or of host=HOST[:PORT]\n"
    "\n"
    "options:\n"
    "  --input KEY=VALUE   an input of the preset (repeatable)\n"
    "  --compact           the JSON on one line instead of indented\n"
    "  --json              sbxrun's JSON envelope (sbxrun(1), JSON OUTPUT), the\n"
    "                      policy its result\n"
    "  --help, -h          show this help\n"
    "\n"
    "Exit status: 0 printed; 2 bad usage, unknown job type, or a missing or bad\n"
    "input; 125 out of memory, or the policy could not be written. Passwords in\n"
    "URLs are never printed.\n";

enum { O_INPUT = 1, O_COMPACT, O_JSON, O_HELP };

static int usage_error(const char *msg)
{
    return cli_usage_error("netpolicy", "%s", msg);
}

/* "KEY=VALUE" into a copied key and a value pointing into arg. The argument
 * is never quoted back: it may hold a password. */
static int split_input(const char *arg, char **key, const char **value)
{
    const char *eq = strchr(arg, '=');
    if (!eq)
        return usage_error("--input wants KEY=VALUE (this one has no '=')");
    if (eq == arg)
        return usage_error("--input wants KEY=VALUE (this one has an empty KEY)");
    if (!(*key = strndup(arg, (size_t)(eq - arg)))) {
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    *value = eq + 1;
    return SBXRUN_EXIT_OK;
}

/* Print the policy's JSON, indented unless compact, ending in a newline;
 * with json, as the envelope's result. */
static int print_policy(const sbx_netpolicy *n, bool compact, bool json)
{
    char *text = NULL, *pretty = NULL;
    json_t *j;
    int rc = SBXRUN_EXIT_CANNOT_RUN;

    if (sbx_netpolicy_to_json(n, &text) != SBX_OK) {
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    if (json) {
        cli_json_result("netpolicy", SBXRUN_EXIT_OK, cli_json_parse(text));
        rc = SBXRUN_EXIT_OK;
    } else if (compact) {
        rc = printf("%s\n", text) < 0 ? SBXRUN_EXIT_CANNOT_RUN : SBXRUN_EXIT_OK;
    } else if ((j = json_loads(text, 0, NULL)) != NULL) {
        pretty = json_dumps(j, JSON_INDENT(2));
        json_decref(j);
        if (pretty)
            rc = printf("%s\n", pretty) < 0 ? SBXRUN_EXIT_CANNOT_RUN : SBXRUN_EXIT_OK;
        free(pretty);
    }
    if (rc != SBXRUN_EXIT_OK)
        fprintf(stderr, "sbxrun netpolicy: could not write the policy\n");
    sbx_free(text);
    return rc;
}

static int show(const char *job, char **keys, const char **values, size_t n, bool compact, bool json)
{
    sbx_netpolicy *np = sbx_netpolicy_new();
    sbx_status st;
    int rc;

    if (!np) {
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    st = sbx_netpolicy_load_preset(np, job, n, (const char *const *)keys, values);
    if (st != SBX_OK) {
        rc = st == SBX_E_INVALID_ARG ? cli_usage_error("netpolicy", "%s", sbx_netpolicy_last_error(np))
                                     : cli_fail("netpolicy", SBXRUN_EXIT_CANNOT_RUN, st, "%s",
                                                sbx_netpolicy_last_error(np));
    } else {
        rc = print_policy(np, compact, json);
    }
    sbx_netpolicy_free(np);
    return rc;
}

/* Named only when it cannot be a misplaced secret (short, no '@', '=' or ':'). */
static int bad_subcommand(const char *sub)
{
    char msg[160];
    bool plain = strlen(sub) <= 32 && !strpbrk(sub, "@=:");
    for (const char *p = sub; plain && *p; p++)
        plain = *p > 0x20 && *p < 0x7f;
    snprintf(msg, sizeof msg, "unknown subcommand%s%s%s (the one subcommand is 'show'; see --help)",
             plain ? " '" : "", plain ? sub : "", plain ? "'" : "");
    return usage_error(msg);
}

int cmd_netpolicy(int argc, char **argv)
{
    static const struct option longopts[] = {{"input", required_argument, NULL, O_INPUT},
                                             {"compact", no_argument, NULL, O_COMPACT},
                                             {"json", no_argument, NULL, O_JSON},
                                             {"help", no_argument, NULL, O_HELP},
                                             {NULL, 0, NULL, 0}};
    char **keys = calloc((size_t)argc + 1, sizeof *keys);
    const char **values = calloc((size_t)argc + 1, sizeof *values);
    size_t n = 0;
    bool compact = false, json = cli_json_enabled();
    int c, rc = SBXRUN_EXIT_OK;

    if (!keys || !values) {
        free(keys);
        free(values);
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    optind = 1;
    opterr = 0;
    while (rc == SBXRUN_EXIT_OK && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == O_HELP || c == 'h') {
            fputs(usage_text, stdout);
            rc = -1;
        } else if (c == O_COMPACT) {
            compact = true;
        } else if (c == O_JSON) {
            json = true;
            cli_json_mode();
        } else if (c == O_INPUT) {
            if ((rc = split_input(optarg, &keys[n], &values[n])) == SBXRUN_EXIT_OK)
                n++;
        } else {
            rc = cli_bad_option("netpolicy", argc, argv, longopts);
        }
    }
    if (rc == SBXRUN_EXIT_OK) {
        int npos = argc - optind;
        if (npos == 0) {
            fputs(usage_text, stderr);
            rc = SBXRUN_EXIT_USAGE;
        } else if (strcmp(argv[optind], "show") != 0) {
            rc = bad_subcommand(argv[optind]);
        } else if (npos < 2) {
            rc = usage_error("show needs a JOBTYPE (see --help)");
        } else if (npos > 2) {
            /* Not quoted: a forgotten --input may carry a password. */
            rc = usage_error("show takes one JOBTYPE; give inputs as --input KEY=VALUE");
        } else {
            rc = show(argv[optind + 1], keys, values, n, compact, json);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(values);
    return rc < 0 ? SBXRUN_EXIT_OK : rc;
}
