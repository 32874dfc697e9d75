/* SPDX-License-Identifier: MIT */
/* remote: the endpoint and client of the subcommands that talk to sandboxes. */
#ifndef SBXRUN_REMOTE_H
#define SBXRUN_REMOTE_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"

/* Options every remote subcommand takes. */
struct remote_opts {
    const char *endpoint;     /* --endpoint */
    const char *token_file;   /* --token-file */
    const char *request_timeout; /* --request-timeout MS, NULL: the default */
    const char *protocol;     /* --protocol v1|v2 [SBXRUN_PROTOCOL; else the library's, v2] */
    bool json;                /* --json */
};

/* Each short request's deadline unless --request-timeout says otherwise: a
 * server that stopped answering is reported, not waited for. */
#define REMOTE_REQUEST_TIMEOUT_MS 60000

/* The common options given before the subcommand (sbxrun --endpoint X
 * sandbox list): each subcommand starts from these, its own override. */
extern struct remote_opts remote_defaults;

struct remote {
    sbx_client *client;
    char *endpoint, *token;
    char *tmpdir;             /* a private sbxd's directory */
    pid_t sbxd_pid;           /* a private sbxd, 0 if none */
};

/* Pick the endpoint and make the client (remote.c explains the order).
 * allow_private: with no endpoint at all, start a private sbxd. SBX_OK, or
 * why not (err says it); remote_open_exit() is then the exit status: 2 for
 * a bad --endpoint or --request-timeout (SBX_E_INVALID_ARG), else 125. */
sbx_status remote_open(struct remote *r, const struct remote_opts *o, bool allow_private, char *err, size_t errlen);
int remote_open_exit(sbx_status st);
void remote_close(struct remote *r);

/* The common options' help lines and parsing, for getopt_long users. */
#define REMOTE_OPTS_HELP                                                                        \
    "  --endpoint URL      https://vercel.com/api, http://127.0.0.1:PORT or unix:PATH\n"       \
    "                      [SBXRUN_ENDPOINT; else Vercel if VERCEL_OIDC_TOKEN or VERCEL_TOKEN\n" \
    "                      is set; else the local sbxd]\n"                                     \
    "  --token-file FILE   the endpoint's token [SBXRUN_TOKEN]\n"                              \
    "  --request-timeout D deadline of each request to the endpoint (300, 30s, 500ms,\n" \
    "                      5m; 0 for none) [60s; none for a create that clones or\n"    \
    "                      downloads its source]\n"                                     \
    "  --protocol V        v2 (named sandboxes and sessions) or v1 (the 1.x SDKs' API)\n"    \
    "                      [SBXRUN_PROTOCOL; else v2]\n"                                     \
    "  --json              one JSON object on stdout (sbxrun(1), JSON OUTPUT)\n"
enum { OPT_ENDPOINT = 1000, OPT_TOKEN_FILE, OPT_JSON, OPT_REQUEST_TIMEOUT, OPT_PROTOCOL };
#define REMOTE_LONGOPTS                                                                         \
    {"endpoint", required_argument, NULL, OPT_ENDPOINT},                                        \
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE}, {"json", no_argument, NULL, OPT_JSON}, \
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},                      \
        {"protocol", required_argument, NULL, OPT_PROTOCOL}
/* Handle one of the common options; 1 if it was one. */
static inline int remote_opt(struct remote_opts *o, int c, const char *arg)
{
    switch (c) {
    case OPT_ENDPOINT: o->endpoint = arg; return 1;
    case OPT_TOKEN_FILE: o->token_file = arg; return 1;
    case OPT_JSON: o->json = true; cli_json_mode(); return 1;
    case OPT_REQUEST_TIMEOUT: o->request_timeout = arg; return 1;
    case OPT_PROTOCOL: o->protocol = arg; return 1;
    default: return 0;
    }
}

/* Report a failure of subcommand cmd: "sbxrun CMD: WHAT: MESSAGE" on
 * stderr and, with json, its error object on stdout (cli.h). Returns
 * exit_code. */
int fail_msg(bool json, const char *cmd, int exit_code, const char *what, sbx_status st, const char *msg);
/* A list's page (st and page from an sbx_client_list_* call; page is
 * consumed): a failure reported, or with --json the page printed as the
 * result, NULL returned and *rc the exit code; otherwise the page parsed,
 * for the caller to print (json_decref it). */
json_t *remote_list_page(struct remote *r, const struct remote_opts *o, const char *cmd, const char *what,
                         sbx_status st, char *page, int *rc);
/* The exit status of a request that failed with st (cli.h's table): 125
 * when sbxrun could not get it done (the endpoint unreachable or not
 * answering in time, credentials, the server's protocol, local I/O,
 * memory), 3 when a policy refused it, else 1 (the server said no: not
 * found, a conflict, a bad value). remote_fetch_exit: the same, but a
 * sandbox that is not there is 125 (no sandbox to work with). */
int remote_exit(sbx_status st);

/* Point s at the sandbox ref names: an id (v2: a session's), else (v2) a
 * named sandbox, resumed first when resume is true (commands and files
 * need a running session). SBX_OK, or why not in err. */
sbx_status remote_fetch(sbx_sandbox *s, const char *ref, bool resume, char *err, size_t errlen);
int remote_fetch_exit(sbx_status st);

int cmd_sandbox(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif /* SBXRUN_REMOTE_H */
