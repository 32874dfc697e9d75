/* SPDX-License-Identifier: MIT */
/* Shared definitions of the sbxrun subcommands. */
#ifndef SBXRUN_CLI_H
#define SBXRUN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <sbxrun/sbxrun.h>

/* The exit codes of every subcommand, one table (doc/man/sbxrun.1, EXIT
 * STATUS). exec alone passes its program's own code through instead. */
enum {
    SBXRUN_EXIT_OK = 0,      /* done; verify: every step passed */
    SBXRUN_EXIT_FAIL = 1,    /* a step ran and failed, or an operation failed */
    SBXRUN_EXIT_USAGE = 2,   /* bad command line */
    SBXRUN_EXIT_DENIED = 3,  /* refused: a policy, an unsafe patch */
    SBXRUN_EXIT_DOES_NOT_APPLY = 4, /* a patch does not apply, or is malformed */
    SBXRUN_EXIT_INCOMPLETE = 5, /* transcript verify: the chain holds but the job never ended */
    SBXRUN_EXIT_TIMED_OUT = 124, /* the work ran past its timeout (as timeout(1)) */
    SBXRUN_EXIT_CANNOT_RUN = 125, /* sbxrun could not do it: no sandbox, transport, I/O */
    SBXRUN_EXIT_INTERRUPTED = 130 /* verify: stopped by SIGINT or SIGTERM (128 + 2) */
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

/* --json output, the one envelope of every subcommand (envelope.c):
 *   {"sbxrun": CMD, "ok": EXIT == 0, "exitCode": EXIT, "result": RESULT}
 *   {"sbxrun": CMD, "ok": false, "exitCode": EXIT,
 *    "error": {"status": "SBX_E_...", "what": WHAT, "message": MESSAGE}}
 * printed on stdout, one object, nothing else. result is consumed. */
void cli_json_result(const char *cmd, int exit_code, json_t *result);
void cli_json_error(const char *cmd, int exit_code, const char *what, sbx_status st, const char *message);

/* JSON text (NUL-terminated, or len bytes) as a value for a result: parsed,
 * else the text as a string; NULL text is null. */
json_t *cli_json_parse(const char *text);
json_t *cli_json_parsen(const char *text, size_t len);

/* A subcommand calls cli_json_mode() when it sees --json (cli_json_scan():
 * when its options could not all be read, whether --json is among argv's
 * before "--"). cli_json_end() (main.c, after the subcommand) keeps the
 * promise of one object: with --json, a subcommand that failed without
 * printing one gets an error object here, from the last cli_fail() or
 * cli_usage_error() message. Returns exit_code. */
void cli_json_mode(void);
void cli_json_scan(int argc, char **argv);
int cli_json_end(const char *cmd, int exit_code);

/* "sbxrun CMD: MESSAGE" on stderr, kept for cli_json_end(); returns
 * exit_code. */
int cli_fail(const char *cmd, int exit_code, sbx_status st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Monotonic milliseconds, for the durations sbxrun prints. */
int64_t cli_mono_ms(void);
/* Remove a directory sbxrun made, and everything in it (no symlink is
 * followed). */
void cli_rm_tree(const char *dir);
/* SIGINT and SIGTERM cancel op (NULL: back to the default action); whether
 * one came is cli_interrupted(). */
void cli_cancel_on_signal(sbx_op *op);
bool cli_interrupted(void);

/* "sbxrun CMD: MESSAGE" and a pointer to CMD's help on stderr; returns
 * SBXRUN_EXIT_USAGE; the message is kept for cli_json_end() (envelope.c). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SBXRUN_CLI_H */
