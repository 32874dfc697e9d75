/* SPDX-License-Identifier: MIT */
/* The one JSON envelope of sbxrun's --json output (cli.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static bool json_mode;    /* --json was given */
static bool emitted;      /* the object is out */
static char last_msg[1024]; /* the last failure said on stderr */
static sbx_status last_st = SBX_E_INVALID_ARG;
static char last_what[64];  /* and what failed: the subcommand's words */

static void emit(const char *cmd, int exit_code, json_t *j)
{
    emitted = true;
    if (!j) {
        printf("{\"sbxrun\":\"%s\",\"ok\":false,\"exitCode\":%d,\"error\":{\"status\":\"SBX_E_NOMEM\",\"what\":\"%s\","
               "\"message\":\"out of memory\"}}\n",
               cmd, exit_code, cmd);
        fflush(stdout);
        return;
    }
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    fflush(stdout);
    json_decref(j);
}

void cli_json_result(const char *cmd, int exit_code, json_t *result)
{
    emit(cmd, exit_code,
         json_pack("{s:s,s:b,s:i,s:o}", "sbxrun", cmd, "ok", exit_code == 0, "exitCode", exit_code, "result",
                   result ? result : json_null()));
}

void cli_json_error(const char *cmd, int exit_code, const char *what, sbx_status st, const char *message)
{
    const char *name = sbx_status_name(st);
    emit(cmd, exit_code,
         json_pack("{s:s,s:b,s:i,s:{s:s,s:s,s:s}}", "sbxrun", cmd, "ok", 0, "exitCode", exit_code, "error", "status",
                   name ? name : "SBX_E_INTERNAL", "what", what ? what : cmd, "message",
                   message && *message ? message : (name ? sbx_strerror(st) : "")));
}

void cli_json_partial(const char *cmd, int exit_code, json_t *result, const char *what, sbx_status st,
                      const char *message)
{
    const char *name = sbx_status_name(st);
    emit(cmd, exit_code,
         json_pack("{s:s,s:b,s:i,s:o,s:{s:s,s:s,s:s}}", "sbxrun", cmd, "ok", 0, "exitCode", exit_code, "result",
                   result, "error", "status", name ? name : "SBX_E_INTERNAL", "what", what ? what : cmd, "message",
                   message && *message ? message : (name ? sbx_strerror(st) : "")));
}

json_t *cli_json_parse(const char *text)
{
    return text ? cli_json_parsen(text, strlen(text)) : json_null();
}

json_t *cli_json_parsen(const char *text, size_t len)
{
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    return j ? j : json_stringn(text, len);
}

void cli_json_mode(void)
{
    json_mode = true;
}

bool cli_json_enabled(void)
{
    return json_mode;
}

void cli_json_scan(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--json") == 0)
            json_mode = true;
}

int cli_json_end(const char *cmd, int exit_code)
{
    if (!json_mode || emitted || exit_code == SBXRUN_EXIT_OK)
        return exit_code;
    if (exit_code == SBXRUN_EXIT_USAGE)
        cli_json_error(cmd, exit_code, "usage", SBX_E_INVALID_ARG,
                       last_msg[0] ? last_msg : "bad command line (see standard error)");
    else
        cli_json_error(cmd, exit_code, last_what[0] ? last_what : cmd, last_msg[0] ? last_st : SBX_E_INTERNAL,
                       last_msg[0] ? last_msg : "see standard error");
    return exit_code;
}

static void keep(sbx_status st, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void keep(sbx_status st, const char *fmt, va_list ap)
{
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    last_st = st;
}

int cli_fail(const char *cmd, int exit_code, sbx_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    keep(st, fmt, ap);
    va_end(ap);
    snprintf(last_what, sizeof last_what, "%s", cmd);
    fprintf(stderr, "sbxrun %s: %s\n", cmd, last_msg);
    return exit_code;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    keep(SBX_E_INVALID_ARG, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sbxrun %s: %s\n(see 'sbxrun %s --help')\n", cmd, last_msg, cmd);
    return SBXRUN_EXIT_USAGE;
}

int cli_usage_top(const char *who, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    keep(SBX_E_INVALID_ARG, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", who, last_msg);
    if (hint)
        fprintf(stderr, "(%s)\n", hint);
    return SBXRUN_EXIT_USAGE;
}
