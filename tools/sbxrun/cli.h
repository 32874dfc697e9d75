/* SPDX-License-Identifier: MIT */
/* Shared definitions of the sbxrun subcommands. */
#ifndef SBXRUN_CLI_H
#define SBXRUN_CLI_H

/* Exit codes of sbxrun, documented in doc/man/sbxrun.1. */
enum {
    SBXRUN_EXIT_OK = 0,      /* done; for verify: the job passed */
    SBXRUN_EXIT_FAIL = 1,    /* the job ran and failed, or an operation failed */
    SBXRUN_EXIT_USAGE = 2,   /* bad command line */
    SBXRUN_EXIT_DENIED = 3,  /* refused by policy */
};

/* One subcommand: run() gets argv with argv[0] = the subcommand's name. */
struct sbxrun_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

/* Local subcommands (no network): policy_cmd.c, netpolicy_cmd.c. */
int cmd_policy(int argc, char **argv);
int cmd_netpolicy(int argc, char **argv);
int cmd_redact(int argc, char **argv);

#endif /* SBXRUN_CLI_H */
