/* SPDX-License-Identifier: MIT */
/* sbxrun snapshot list|get|delete: the snapshots a project holds (made by
 * `sbxrun sandbox snapshot ID`). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "remote.h"

static const char usage_text[] =
    "usage: sbxrun snapshot list [--limit N] [--cursor C] [--since MS] [--until MS] [--project ID]\n"
    "       sbxrun snapshot get ID\n"
    "       sbxrun snapshot delete ID\n"
    "\n"
    "List, inspect and delete snapshots (a sandbox's filesystem, made by\n"
    "`sbxrun sandbox snapshot ID`; a new sandbox starts from one with\n"
    "`sbxrun sandbox create --snapshot ID`). Deleted snapshots are not listed;\n"
    "get shows one as \"deleted\".\n"
    "\n"
    "list options:\n"
    "  --limit N           snapshots per page\n"
    "  --cursor C          the page after the one whose pagination.next is C (v2)\n"
    "  --since MS, --until MS  creation times, ms since the epoch (v1 paging)\n"
    "  --project ID        the project [the credentials' or the endpoint's]\n"
    "common options:\n" REMOTE_OPTS_HELP
    "\n"
    "list prints ID, STATUS, SIZE, SOURCE (the sandbox), CREATED and EXPIRES;\n"
    "get the snapshot's fields; delete the id. With --json: sbxrun's envelope,\n"
    "the server's JSON its result. Exit status: 0 done; 1 the server refused;\n"
    "2 usage; 125 no such snapshot, or the endpoint could not be reached or did\n"
    "not answer in time.\n";

enum { O_LIMIT = 1, O_CURSOR, O_SINCE, O_UNTIL, O_PROJECT, O_HELP };

static void human_size(char *buf, size_t n, json_t *v)
{
    double b = json_is_integer(v) ? (double)json_integer_value(v) : -1;
    if (b < 0)
        snprintf(buf, n, "-");
    else if (b < 1024)
        snprintf(buf, n, "%.0f B", b);
    else if (b < 1024.0 * 1024)
        snprintf(buf, n, "%.1f KiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024)
        snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024));
    else
        snprintf(buf, n, "%.1f GiB", b / (1024.0 * 1024 * 1024));
}

static void print_row(json_t *e)
{
    char size[32], created[32], expires[32];
    human_size(size, sizeof size, json_object_get(e, "sizeBytes"));
    cli_time_text(created, sizeof created, json_integer_value(json_object_get(e, "createdAt")));
    cli_time_text(expires, sizeof expires, json_integer_value(json_object_get(e, "expiresAt")));
    printf("%-28s %-9s %10s  %-28s %-21s %s\n", cli_json_str(e, "id"), cli_json_str(e, "status"), size,
           cli_json_str(e, "sourceSessionId") [0] != '-' ? cli_json_str(e, "sourceSessionId") : cli_json_str(e, "sourceSandboxId"),
           created, expires);
}

static int do_list(struct remote *r, const struct remote_opts *o, long long limit, long long since,
                   long long until, const char *cursor, const char *project)
{
    char *page = NULL;
    json_t *j, *arr, *e;
    size_t i;
    bool v1 = o->protocol && strcmp(o->protocol, "v1") == 0;
    int rc;
    sbx_status st = since >= 0 || until >= 0 || v1
                        ? sbx_client_list_snapshots(r->client, project, (size_t)limit, since, until, &page)
                        : sbx_client_list_snapshots_from(r->client, project, (size_t)limit, cursor, &page);
    if (!(j = remote_list_page(r, o, "snapshot", "list snapshots", st, page, &rc)))
        return rc;
    arr = json_object_get(j, "snapshots");
    printf("%-28s %-9s %10s  %-28s %-21s %s\n", "ID", "STATUS", "SIZE", "SOURCE", "CREATED", "EXPIRES");
    json_array_foreach(arr, i, e)
        print_row(e);
    cli_print_next_page(j);
    json_decref(j);
    return SBXRUN_EXIT_OK;
}

int cmd_snapshot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"limit", required_argument, NULL, O_LIMIT},   {"cursor", required_argument, NULL, O_CURSOR},
        {"since", required_argument, NULL, O_SINCE},   {"until", required_argument, NULL, O_UNTIL},
        {"project", required_argument, NULL, O_PROJECT}, {"help", no_argument, NULL, O_HELP},
        REMOTE_LONGOPTS,                               {NULL, 0, NULL, 0}};
    static const char *const subs[] = {"list", "get", "delete"};
    struct remote_opts o = remote_defaults;
    struct remote r;
    const char *sub, *cursor = NULL, *project = NULL, *id = NULL;
    long long limit = 0, since = -1, until = -1;
    char err[1024];
    sbx_snapshot *sn = NULL;
    sbx_status st;
    int c, rc;

    if ((rc = cli_subcommand("snapshot", argc, argv, usage_text, subs, 3)) >= 0)
        return rc;
    sub = argv[1];
    optind = 1;
    opterr = 0;
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        if (c != O_HELP && c != 'h' && c != '?' && strcmp(sub, "list") != 0)
            return cli_usage_error("snapshot", "%s: option --%s is for 'snapshot list'", sub, longopts[c - 1].name);
        switch (c) {
        case 'h':
        case O_HELP: fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        case O_LIMIT:
            if (cli_number("snapshot", "--limit", optarg, 1, &limit))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_SINCE:
            if (cli_number("snapshot", "--since", optarg, 0, &since))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_UNTIL:
            if (cli_number("snapshot", "--until", optarg, 0, &until))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_CURSOR: cursor = optarg; break;
        case O_PROJECT: project = optarg; break;
        default: return cli_bad_option("snapshot", argc, argv, longopts);
        }
    }
    if (strcmp(sub, "list") == 0) {
        if (optind != argc)
            return cli_usage_error("snapshot", "list: unexpected argument '%s'", argv[optind]);
        if (cursor && (since >= 0 || until >= 0))
            return cli_usage_error("snapshot", "list: --cursor (v2) and --since/--until (v1) page different lists");
    } else if (optind != argc - 1) {
        return cli_usage_error("snapshot", "%s: expected one snapshot ID, and got %s", sub,
                               optind == argc ? "none" : "more");
    } else {
        id = argv[optind];
    }
    if ((st = remote_open(&r, &o, false, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "snapshot", remote_open_exit(st), "connect", st, err);
        remote_close(&r);
        return rc;
    }
    if (!id) {
        rc = do_list(&r, &o, limit, since, until, cursor, project);
        remote_close(&r);
        return rc;
    }
    if (!(sn = sbx_snapshot_new(r.client))) {
        rc = fail_msg(o.json, "snapshot", SBXRUN_EXIT_CANNOT_RUN, sub, SBX_E_NOMEM, "out of memory");
        goto out;
    }
    if ((st = sbx_snapshot_fetch(sn, id)) != SBX_OK ||
        (strcmp(sub, "delete") == 0 && (st = sbx_snapshot_delete(sn)) != SBX_OK)) {
        rc = fail_msg(o.json, "snapshot", remote_fetch_exit(st), sub, st, sbx_snapshot_last_error(sn));
        goto out;
    }
    if (o.json) {
        cli_json_result("snapshot", SBXRUN_EXIT_OK, cli_json_parse(sbx_snapshot_json(sn)));
    } else if (strcmp(sub, "delete") == 0) {
        printf("%s deleted\n", sbx_snapshot_id(sn));
    } else {
        char size[32], exp[32];
        json_t *sz = sbx_snapshot_size_bytes(sn) >= 0 ? json_integer(sbx_snapshot_size_bytes(sn)) : json_null();
        human_size(size, sizeof size, sz);
        json_decref(sz);
        cli_time_text(exp, sizeof exp, sbx_snapshot_expires_at(sn));
        printf("id:        %s\nstatus:    %s\nsource:    %s\nsize:      %s\nexpires:   %s\n", sbx_snapshot_id(sn),
               sbx_snapshot_status(sn) ? sbx_snapshot_status(sn) : "-",
               sbx_snapshot_source_sandbox_id(sn) ? sbx_snapshot_source_sandbox_id(sn) : "-", size,
               sbx_snapshot_expires_at(sn) == 0 ? "never" : exp);
    }
    rc = SBXRUN_EXIT_OK;
out:
    sbx_snapshot_free(sn);
    remote_close(&r);
    return rc;
}
