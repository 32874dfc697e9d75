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
    "usage: sbxrun netpolicy show JOBTYPE [--input KEY=VALUE]... [--compact]\n"
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
    "  --help              show this help\n"
    "\n"
    "Exit status: 0 printed; 2 bad usage, unknown job type, or a missing or bad\n"
    "input; 125 out of memory, or the policy could not be written. Passwords in\n"
    "URLs are never printed.\n";

enum { O_INPUT = 1, O_COMPACT, O_HELP };

static int usage_error(const char *msg)
{
    fprintf(stderr, "sbxrun netpolicy: %s\n", msg);
    return SBXRUN_EXIT_USAGE;
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

/* Print the policy's JSON, indented unless compact, ending in a newline. */
static int print_policy(const sbx_netpolicy *n, bool compact)
{
    char *text = NULL, *pretty = NULL;
    json_t *j;
    int rc = SBXRUN_EXIT_CANNOT_RUN;

    if (sbx_netpolicy_to_json(n, &text) != SBX_OK) {
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    if (compact) {
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

static int show(const char *job, char **keys, const char **values, size_t n, bool compact)
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
        fprintf(stderr, "sbxrun netpolicy: %s\n", sbx_netpolicy_last_error(np));
        rc = st == SBX_E_INVALID_ARG ? SBXRUN_EXIT_USAGE : SBXRUN_EXIT_CANNOT_RUN;
    } else {
        rc = print_policy(np, compact);
    }
    sbx_netpolicy_free(np);
    return rc;
}

/* An option getopt_long did not take: named without any "=value" part. */
static int bad_option(char **argv, int c)
{
    const char *arg = argv[optind - 1];
    char msg[160];
    if (c == ':') {
        snprintf(msg, sizeof msg, "%.40s needs a value (see --help)", arg);
        return usage_error(msg);
    }
    if (optopt > 0x20 && optopt < 0x7f) { /* a short option: argv may not have moved on */
        snprintf(msg, sizeof msg, "unknown option '-%c' (see --help)", optopt);
        return usage_error(msg);
    }
    snprintf(msg, sizeof msg, "unknown option '%.*s' (see --help)", (int)strcspn(arg, "="), arg);
    return usage_error(msg);
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
                                             {"help", no_argument, NULL, O_HELP},
                                             {NULL, 0, NULL, 0}};
    char **keys = calloc((size_t)argc + 1, sizeof *keys);
    const char **values = calloc((size_t)argc + 1, sizeof *values);
    size_t n = 0;
    bool compact = false;
    int c, rc = SBXRUN_EXIT_OK;

    if (!keys || !values) {
        free(keys);
        free(values);
        fprintf(stderr, "sbxrun netpolicy: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    optind = 1;
    opterr = 0;
    while (rc == SBXRUN_EXIT_OK && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == O_HELP) {
            fputs(usage_text, stdout);
            rc = -1;
        } else if (c == O_COMPACT) {
            compact = true;
        } else if (c == O_INPUT) {
            if ((rc = split_input(optarg, &keys[n], &values[n])) == SBXRUN_EXIT_OK)
                n++;
        } else {
            rc = bad_option(argv, c);
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
            rc = show(argv[optind + 1], keys, values, n, compact);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(values);
    return rc < 0 ? SBXRUN_EXIT_OK : rc;
}
