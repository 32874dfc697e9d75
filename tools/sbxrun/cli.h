/* SPDX-License-Identifier: MIT */
/* Shared definitions of the sbxrun subcommands. */
#ifndef SBXRUN_CLI_H
#define SBXRUN_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <sbxrun/sbxrun.h>

/* Exit codes of sbxrun, documented in doc/man/sbxrun.1. */
enum {
    SBXRUN_EXIT_OK = 0,      /* done; for verify: the job passed */
    SBXRUN_EXIT_FAIL = 1,    /* the job ran and failed, or an operation failed */
    SBXRUN_EXIT_USAGE = 2,   /* bad command line */
    SBXRUN_EXIT_DENIED = 3,  /* refused by policy */
    SBXRUN_EXIT_DOES_NOT_APPLY = 4, /* patch check: the patch does not apply, or is malformed */
    SBXRUN_EXIT_INCOMPLETE = 5, /* transcript verify: the chain holds but the job never ended */
};

/* One subcommand: run() gets argv with argv[0] = the subcommand's name. */
struct sbxrun_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

/* Local subcommands (no network): policy_cmd.c, netpolicy_cmd.c, redact_cmd.c,
 * transcript_cmd.c, patch_cmd.c. */
int cmd_policy(int argc, char **argv);
int cmd_netpolicy(int argc, char **argv);
int cmd_redact(int argc, char **argv);
int cmd_transcript(int argc, char **argv);
int cmd_patch(int argc, char **argv);

/* Shared with exec (redact_cmd.c): whether a variable name looks secret,
 * and registering the values of this process's secret-looking variables
 * (0, or an exit status after printing why). */
bool cli_secret_name(const char *name, size_t n);
int cli_add_env_secrets(sbx_redactor *r);

/* "sbxrun CMD: MESSAGE" and a pointer to CMD's help on stderr; returns
 * SBXRUN_EXIT_USAGE (main.c). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SBXRUN_CLI_H */
