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
/* Work cut short: what there is of the result (consumed) and the error,
 * in one object: {"sbxrun", "ok": false, "exitCode", "result", "error"}. */
void cli_json_partial(const char *cmd, int exit_code, json_t *result, const char *what, sbx_status st,
                      const char *message);

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

/* A live view (spinner, progress redrawn in place) on fd: a terminal whose
 * TERM is not "dumb". Colours too unless NO_COLOR is set (cli_color()). */
bool cli_live_view(int fd);
bool cli_color(void);

/* Monotonic milliseconds, for the durations sbxrun prints. */
int64_t cli_mono_ms(void);
/* One pass of a client driven by hand: wait for its next event, at most
 * cap_ms (< 0: as long as the client says), then handle what came. False
 * when sbx_client_process() fails. */
bool cli_pump(sbx_client *c, int64_t cap_ms);
/* Remove a directory sbxrun made, and everything in it (no symlink is
 * followed). */
void cli_rm_tree(const char *dir);
/* SIGINT and SIGTERM cancel op (NULL: back to the default action); whether
 * one came is cli_interrupted(). */
void cli_cancel_on_signal(sbx_op *op);
bool cli_interrupted(void);
/* From now on SIGINT and SIGTERM only set cli_interrupted() (and cancel
 * the op given to cli_cancel_on_signal(), if any), also between ops: for
 * commands that must clean up, or not finish, after an interruption. */
void cli_trap_signals(void);

/* "sbxrun CMD: MESSAGE" and a pointer to CMD's help on stderr; returns
 * SBXRUN_EXIT_USAGE; the message is kept for cli_json_end() (envelope.c). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a command line that names no command yet: "WHO: MESSAGE",
 * then "(HINT)" when hint is not NULL. */
int cli_usage_top(const char *who, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct option;

/* Command-line conventions (args.c). */

/* A duration: "300" or "300s" (a bare number is seconds, as timeout(1)),
 * "250ms", "5m", "1.5h". 0 and *ms set, or the usage error printed and
 * SBXRUN_EXIT_USAGE: not a duration, below min_ms, or a bare number over a
 * day (milliseconds written the old way: the message gives the fix). */
int cli_duration(const char *cmd, const char *opt, const char *v, int64_t min_ms, int64_t *ms);
/* The same without printing: 0, or -1 with why. */
int cli_parse_duration(const char *v, int64_t min_ms, int64_t *ms, char *why, size_t whylen);

/* The one of words (n of them; NULLs skipped) that word is most likely a
 * typo of, or NULL when none is close or two are as close. */
const char *cli_suggest(const char *word, const char *const *words, size_t n);

/* For getopt_long's '?' (with opterr = 0): the usage error for the option
 * at argv[optind - 1], saying whether it is unknown (with a "did you
 * mean"), ambiguous, missing its value or given one it does not take.
 * Returns SBXRUN_EXIT_USAGE. */
int cli_bad_option(const char *cmd, int argc, char **argv, const struct option *longopts);

/* --network-policy VALUE as JSON for the library: "allow-all", "deny-all",
 * or JSON (the API form, or the SDKs' {"allow": [...]}, which the library
 * reads too). Anything else: the usage error, with a suggestion, and NULL. */
const char *cli_network_policy(const char *cmd, const char *v);

/* A warning on stderr when sandbox s runs another runtime than asked
 * (NULL: nothing asked): sbxd provides the host's. */
void cli_runtime_warning(const char *cmd, const char *asked, const sbx_sandbox *s);

/* A command with subcommands (sandbox, snapshot, transcript): its help
 * for -h/--help (exit 0), the usage error naming the known ones for no
 * subcommand, an option before it, or an unknown one (with a "did you
 * mean"), or -1 when argv[1] is one of subs. --json anywhere makes a usage
 * error an envelope. */
int cli_subcommand(const char *cmd, int argc, char **argv, const char *usage, const char *const *subs, size_t n);

/* An integer option >= min: 0 and *out, or the usage error. */
int cli_number(const char *cmd, const char *opt, const char *v, long long min, long long *out);

/* For tables: a string member, or "-"; a time (ms since the epoch) as
 * "YYYY-MM-DD HH:MM:SSZ", or "-" when not positive. */
const char *cli_json_str(json_t *o, const char *key);
void cli_time_text(char *buf, size_t n, int64_t ms);

/* text (len bytes, from a sandbox or a server) for a terminal: control
 * bytes (escape sequences, carriage returns) as \xNN, cut to fit cap. */
void cli_printable(char *out, size_t cap, const char *text, size_t len);

/* After a listed page: how to ask for the next one (--cursor in v2,
 * --until in v1), when there is one. */
void cli_print_next_page(json_t *page);

/* Whether --json is on (given to the subcommand, or before it). */
bool cli_json_enabled(void);

#endif /* SBXRUN_CLI_H */
