/* SPDX-License-Identifier: MIT */
/* The one JSON envelope of sbxrun's --json output (cli.h). */
#include <stdio.h>

#include "cli.h"

static void emit(json_t *j)
{
    if (!j) {
        fputs("{\"ok\":false,\"exitCode\":125,\"error\":{\"status\":\"SBX_E_NOMEM\",\"message\":\"out of memory\"}}\n",
              stdout);
        return;
    }
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    fflush(stdout);
    json_decref(j);
}

void cli_json_result(const char *cmd, int exit_code, json_t *result)
{
    emit(json_pack("{s:s,s:b,s:i,s:o}", "sbxrun", cmd, "ok", exit_code == 0, "exitCode", exit_code, "result",
                   result ? result : json_null()));
}

void cli_json_error(const char *cmd, int exit_code, const char *what, sbx_status st, const char *message)
{
    const char *name = sbx_status_name(st);
    emit(json_pack("{s:s,s:b,s:i,s:{s:s,s:s,s:s}}", "sbxrun", cmd, "ok", 0, "exitCode", exit_code, "error", "status",
                   name ? name : "SBX_E_INTERNAL", "what", what ? what : cmd, "message",
                   message && *message ? message : (name ? sbx_strerror(st) : "")));
}
