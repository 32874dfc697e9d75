/* SPDX-License-Identifier: MIT */
/* sbxrun sandbox create|list|get|stop|extend|snapshot|resume|delete. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "remote.h"
#include "util/duration.h"

/* A sandbox's timeout as its options take it (sbx__duration_text, as the
 * library's messages write durations); "-" when the server gave none. */
static const char *timeout_text(int64_t ms, char *buf)
{
    return ms < 0 ? "-" : sbx__duration_text(ms, buf);
}

static const char usage_text[] =
    "usage: sbxrun sandbox create [options]\n"
    "       sbxrun sandbox list [--limit N] [--since MS] [--until MS] [--cursor C] [--project ID]\n"
    "       sbxrun sandbox get ID\n"
    "       sbxrun sandbox stop ID\n"
    "       sbxrun sandbox extend ID DURATION\n"
    "       sbxrun sandbox snapshot ID [--expiration D]\n"
    "       sbxrun sandbox resume NAME\n"
    "       sbxrun sandbox delete NAME\n"
    "       sbxrun sandbox sessions NAME [--limit N] [--cursor C] [--project ID]\n"
    "\n"
    "Create, list, inspect, stop, extend, snapshot, resume and delete sandboxes\n"
    "(extend: add DURATION, as 300 or 300s, 10m, 1h, to its timeout; the\n"
    "snapshots themselves: sbxrun snapshot), and list a named sandbox's\n"
    "sessions (its runs, newest first). Named sandboxes (--name, --persistent,\n"
    "resume, delete, sessions, --cursor) are the v2 protocol's (the default).\n"
    "\n"
    "create options:\n"
    "  --runtime NAME      node24 (default), node22, node26, python3.13\n"
    "  --timeout D         lifetime: 300 or 300s, 10m, 1h, 500ms [the server's\n"
    "                      default]\n"
    "  --vcpus N           virtual CPUs (2048 MB of memory each)\n"
    "  --port PORT         publish a port (up to 15 times; 4 with protocol v1)\n"
    "  --env NAME=VALUE    environment of every command (repeatable)\n"
    "  --network-policy P  allow-all, deny-all, or JSON (the API's {\"mode\": ...} or\n"
    "                      the SDK's {\"allow\": [DOMAIN...]})\n"
    "  --git URL           clone a repository into /vercel/sandbox\n"
    "  --revision REV      its branch, tag or commit; --depth N: shallow clone\n"
    "  --git-username U    with the password from $SBXRUN_GIT_PASSWORD\n"
    "  --tarball URL       extract a tarball into /vercel/sandbox\n"
    "  --snapshot ID       start from a snapshot\n"
    "  --name NAME         the sandbox's name (v2), unique in its project\n"
    "  --persistent        its stop keeps the files; resume starts from them (v2)\n"
    "list options:\n"
    "  --limit N           entries per page; --until MS: the page's pagination.next\n"
    "                      (v1); --cursor C: the page's pagination.next (v2)\n"
    "snapshot options:\n"
    "  --expiration D      lifetime of the snapshot (7d is 168h), 0 = never [the\n"
    "                      server's default]\n"
    "common options:\n" REMOTE_OPTS_HELP
    "\n"
    "get, stop, extend and snapshot take an ID or a named sandbox's NAME.\n"
    "create prints the new sandbox's id (v2: its session's), and a warning on\n"
    "stderr when the server provides another runtime than --runtime asked for;\n"
    "snapshot the snapshot's id (a snapshot stops the sandbox, as Vercel's do),\n"
    "resume the id of the session it is running now,\n"
    "extend the new timeout, delete the name; with --json\n"
    "every subcommand prints sbxrun's JSON envelope, the server's JSON its result.\n"
    "Exit status: 0 done; 1 the server refused; 2 usage; 125 no such sandbox, or\n"
    "the endpoint could not be reached or did not answer in time.\n";

/* In longopts' order: option c is longopts[c - 1]. */
enum { O_RUNTIME = 1, O_TIMEOUT, O_VCPUS, O_PORT, O_ENV, O_POLICY, O_GIT, O_REV, O_DEPTH, O_GITUSER, O_TARBALL,
       O_SNAPSHOT, O_NAME, O_PERSISTENT, O_LIMIT, O_SINCE, O_UNTIL, O_PROJECT, O_CURSOR, O_EXPIRATION, O_HELP };

/* Wait for op; on a terminal (stderr), "LABEL... 3.2s" kept up to date,
 * then erased; nothing when stderr is not one. Ctrl-C cancels. The op's
 * status, its message in why. */
static sbx_status wait_shown(sbx_op *op, const char *label, bool json, char *why, size_t whylen)
{
    bool tty = cli_live_view(STDERR_FILENO) && !json;
    int64_t t0 = cli_mono_ms();
    sbx_status st;
    cli_cancel_on_signal(op);
    while ((st = sbx_op_wait(op, 100)) == SBX_E_AGAIN)
        if (tty)
            fprintf(stderr, "\r\033[Ksbxrun sandbox: %s... %.1fs", label, (double)(cli_mono_ms() - t0) / 1000);
    cli_cancel_on_signal(NULL);
    if (tty)
        fputs("\r\033[K", stderr);
    st = sbx_op_status(op);
    if (st != SBX_OK)
        snprintf(why, whylen, "%s", sbx_op_last_error(op));
    return st;
}

/* 130 for an operation Ctrl-C cancelled, else remote_exit(). */
static int interrupted_or(sbx_status st)
{
    return st == SBX_E_CANCELLED && cli_interrupted() ? SBXRUN_EXIT_INTERRUPTED : remote_exit(st);
}

void cli_runtime_warning(const char *cmd, const char *asked, const sbx_sandbox *s)
{
    const char *got = sbx_sandbox_runtime(s);
    if (asked && got && strcmp(asked, got) != 0)
        fprintf(stderr, "sbxrun %s: warning: asked for runtime %s, the server provides %s\n", cmd, asked, got);
}

static void print_sandbox(const sbx_sandbox *s, bool json)
{
    char d[64];
    if (json) {
        cli_json_result("sandbox", SBXRUN_EXIT_OK, cli_json_parse(sbx_sandbox_json(s)));
        return;
    }
    if (sbx_sandbox_name(s))
        printf("name:      %s\npersistent: %s\n", sbx_sandbox_name(s), sbx_sandbox_persistent(s) == 1 ? "yes" : "no");
    printf("id:        %s\nstatus:    %s\nruntime:   %s\nregion:    %s\nvcpus:     %zu\nmemory:    %lld MB\n"
           "timeout:   %s\n",
           sbx_sandbox_id(s), sbx_sandbox_status(s), sbx_sandbox_runtime(s) ? sbx_sandbox_runtime(s) : "-",
           sbx_sandbox_region(s), sbx_sandbox_vcpus(s), (long long)sbx_sandbox_memory_mb(s),
           timeout_text(sbx_sandbox_timeout_ms(s), d));
    if (sbx_sandbox_network_policy_json(s))
        printf("network:   %s\n", sbx_sandbox_network_policy_json(s));
}

static void print_when(json_t *e)
{
    char when[32];
    cli_time_text(when, sizeof when, json_integer_value(json_object_get(e, "createdAt")));
    printf("%s\n", when);
}

/* The sessions of the named sandbox name, one page. */
static int do_sessions(struct remote *r, const struct remote_opts *o, const char *name, long long limit,
                       const char *cursor, const char *project)
{
    char *page = NULL;
    json_t *j, *e;
    size_t i;
    int rc;
    sbx_status st = sbx_client_list_sessions_from(r->client, project, name, (size_t)limit, cursor, &page);
    if (!(j = remote_list_page(r, o, "sandbox", "list sessions", st, page, &rc)))
        return rc;
    printf("%-28s %-12s %-11s %s\n", "SESSION", "STATUS", "RUNTIME", "CREATED");
    json_array_foreach(json_object_get(j, "sessions"), i, e) {
        printf("%-28s %-12s %-11s ", cli_json_str(e, "id"), cli_json_str(e, "status"), cli_json_str(e, "runtime"));
        print_when(e);
    }
    cli_print_next_page(j);
    json_decref(j);
    return SBXRUN_EXIT_OK;
}

static int do_list(struct remote *r, const struct remote_opts *o, long long limit, long long since,
                   long long until, const char *cursor, const char *project)
{
    char *page = NULL;
    json_t *j, *arr, *e;
    size_t i;
    bool v2 = o->protocol && strcmp(o->protocol, "v2") == 0;
    int rc;
    sbx_status st = cursor || v2 ? sbx_client_list_sandboxes_from(r->client, project, (size_t)limit, cursor, &page)
                                 : sbx_client_list_sandboxes(r->client, project, (size_t)limit, since, until, &page);
    if (!(j = remote_list_page(r, o, "sandbox", "list sandboxes", st, page, &rc)))
        return rc;
    arr = json_object_get(j, "sandboxes");
    e = json_object_get(json_object_get(j, "pagination"), "next");
    /* a v2 page: a cursor, and no "prev" */
    if (json_is_string(e) || (json_is_null(e) && !json_object_get(json_object_get(j, "pagination"), "prev"))) {
        /* v2: named sandboxes and their current sessions */
        printf("%-28s %-12s %-28s %s\n", "NAME", "STATUS", "SESSION", "CREATED");
        json_array_foreach(arr, i, e) {
            printf("%-28s %-12s %-28s ", cli_json_str(e, "name"), cli_json_str(e, "status"), cli_json_str(e, "currentSessionId"));
            print_when(e);
        }
        cli_print_next_page(j);
    } else {
        printf("%-28s %-12s %-11s %s\n", "ID", "STATUS", "RUNTIME", "CREATED");
        json_array_foreach(arr, i, e) {
            printf("%-28s %-12s %-11s ", cli_json_str(e, "id"), cli_json_str(e, "status"), cli_json_str(e, "runtime"));
            print_when(e);
        }
        cli_print_next_page(j);
    }
    json_decref(j);
    return SBXRUN_EXIT_OK;
}

int cmd_sandbox(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"runtime", required_argument, NULL, O_RUNTIME},   {"timeout", required_argument, NULL, O_TIMEOUT},
        {"vcpus", required_argument, NULL, O_VCPUS},       {"port", required_argument, NULL, O_PORT},
        {"env", required_argument, NULL, O_ENV},           {"network-policy", required_argument, NULL, O_POLICY},
        {"git", required_argument, NULL, O_GIT},           {"revision", required_argument, NULL, O_REV},
        {"depth", required_argument, NULL, O_DEPTH},       {"git-username", required_argument, NULL, O_GITUSER},
        {"tarball", required_argument, NULL, O_TARBALL},   {"snapshot", required_argument, NULL, O_SNAPSHOT},
        {"name", required_argument, NULL, O_NAME},         {"persistent", no_argument, NULL, O_PERSISTENT},
        {"limit", required_argument, NULL, O_LIMIT},       {"since", required_argument, NULL, O_SINCE},
        {"until", required_argument, NULL, O_UNTIL},       {"project", required_argument, NULL, O_PROJECT},
        {"cursor", required_argument, NULL, O_CURSOR},
        {"expiration", required_argument, NULL, O_EXPIRATION}, {"help", no_argument, NULL, O_HELP},
        REMOTE_LONGOPTS,                                   {NULL, 0, NULL, 0}};
    struct remote_opts o = remote_defaults;
    struct remote r;
    const char *sub, *id = NULL, *project = NULL, *git = NULL, *rev = NULL, *git_user = NULL, *name = NULL;
    const char *cursor = NULL, *runtime = NULL;
    bool persistent = false;
    char timeout_ms[32];
    int64_t ms;
    const char *create_opts[64][2];
    int ncreate = 0, c, rc = SBXRUN_EXIT_FAIL;
    long long limit = 0, since = -1, until = -1, expiration = -1, depth = 0;
    char err[1024];
    sbx_sandbox *s = NULL;
    sbx_status st;

    {
        static const char *const subs[] = {"create",   "list",   "get",    "stop",    "extend",
                                           "snapshot", "resume", "delete", "sessions"};
        if ((rc = cli_subcommand("sandbox", argc, argv, usage_text, subs, sizeof subs / sizeof subs[0])) >= 0)
            return rc;
        rc = SBXRUN_EXIT_FAIL;
    }
    sub = argv[1];
    optind = 1;
    opterr = 0;
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        if (c == O_HELP || c == 'h') {
            fputs(usage_text, stdout);
            return SBXRUN_EXIT_OK;
        }
        if (c == '?')
            return cli_bad_option("sandbox", argc, argv, longopts);
        /* Options of another subcommand are an error, not ignored. */
        if ((c <= O_PERSISTENT && strcmp(sub, "create") != 0) ||
            (c >= O_LIMIT && c <= O_CURSOR && strcmp(sub, "list") != 0 &&
             !(strcmp(sub, "sessions") == 0 && c != O_SINCE && c != O_UNTIL)) ||
            (c == O_EXPIRATION && strcmp(sub, "snapshot") != 0)) {
            return cli_usage_error("sandbox", "%s: option --%s belongs to another subcommand",
                            sub, longopts[c - 1].name);
        }
        switch (c) {
        case O_GIT: git = optarg; break;
        case O_REV: rev = optarg; break;
        case O_GITUSER: git_user = optarg; break;
        case O_DEPTH:
            if (cli_number("sandbox", "--depth", optarg, 1, &depth))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_LIMIT:
            if (cli_number("sandbox", "--limit", optarg, 1, &limit))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_SINCE:
            if (cli_number("sandbox", "--since", optarg, 0, &since))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_UNTIL:
            if (cli_number("sandbox", "--until", optarg, 0, &until))
                return SBXRUN_EXIT_USAGE;
            break;
        case O_PROJECT: project = optarg; break;
        case O_CURSOR: cursor = optarg; break;
        case O_NAME: name = optarg; break;
        case O_PERSISTENT: persistent = true; break;
        case O_EXPIRATION:
            if (cli_duration("sandbox", "--expiration", optarg, 0, &ms))
                return SBXRUN_EXIT_USAGE;
            expiration = ms;
            break;
        default: {
            static const char *keys[] = {NULL, "runtime", "timeout_ms", "vcpus", "port", "env.", "network_policy"};
            if (ncreate == 64)
                return cli_usage_error("sandbox create", "too many options");
            if (c == O_TARBALL)
                create_opts[ncreate][0] = "source.tarball";
            else if (c == O_SNAPSHOT)
                create_opts[ncreate][0] = "source.snapshot";
            else
                create_opts[ncreate][0] = keys[c];
            create_opts[ncreate][1] = optarg;
            if (c == O_POLICY && !(create_opts[ncreate][1] = cli_network_policy("sandbox", optarg)))
                return SBXRUN_EXIT_USAGE;
            if (c == O_TIMEOUT) {
                if (cli_duration("sandbox", "--timeout", optarg, 1, &ms))
                    return SBXRUN_EXIT_USAGE;
                snprintf(timeout_ms, sizeof timeout_ms, "%lld", (long long)ms);
                create_opts[ncreate][1] = timeout_ms;
            }
            if (c == O_RUNTIME)
                runtime = optarg;
            ncreate++;
        }
        }
    }
    if (strcmp(sub, "extend") == 0) {
        if (optind + 2 != argc)
            return cli_usage_error("sandbox", "extend: expected a sandbox ID and a DURATION (sbxrun sandbox extend ID "
                                   "10m), %s", optind == argc ? "got neither" : optind + 1 == argc ? "the DURATION is missing"
                                                                                                : "got more");
        id = argv[optind];
        {
            char why[300];
            /* extend 10m ID: the usual slip, named as such. */
            if (cli_parse_duration(argv[optind + 1], 1, &ms, why, sizeof why) < 0)
                return cli_parse_duration(id, 1, &ms, why, sizeof why) == 0
                           ? cli_usage_error("sandbox", "extend: the ID comes first, then the DURATION: 'sbxrun sandbox "
                                             "extend %s %s'", argv[optind + 1], id)
                           : cli_usage_error("sandbox", "extend %s", why);
        }
    } else if (strcmp(sub, "create") && strcmp(sub, "list")) {
        if (optind != argc - 1)
            return cli_usage_error("sandbox", "%s: expected one sandbox %s%s", sub,
                                   strcmp(sub, "resume") && strcmp(sub, "delete") && strcmp(sub, "sessions") ? "ID"
                                                                                                        : "NAME",
                                   optind == argc ? ", and got none" : ", and got more");
        id = argv[optind];
    } else if (optind != argc) {
        return cli_usage_error("sandbox", "%s: unexpected argument '%s'", sub,
                        argv[optind]);
    }
    if ((rev || depth || git_user) && !git)
        return cli_usage_error("sandbox create", "--revision, --depth and --git-username need --git");
    if (cursor && (since >= 0 || until >= 0))
        return cli_usage_error("sandbox list", "--cursor (v2) and --since/--until (v1) page different lists");
    /* Named sandboxes are the v2 protocol's: asking for one picks it. */
    if ((name || persistent || cursor || strcmp(sub, "resume") == 0 || strcmp(sub, "delete") == 0 ||
         strcmp(sub, "sessions") == 0) && !o.protocol)
        o.protocol = "v2";

    if ((st = remote_open(&r, &o, false, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "sandbox", remote_open_exit(st), "connect", st, err);
        remote_close(&r);
        return rc;
    }
    if (strcmp(sub, "list") == 0) {
        rc = do_list(&r, &o, limit, since, until, cursor, project);
        goto out;
    }
    if (strcmp(sub, "sessions") == 0) {
        rc = do_sessions(&r, &o, id, limit, cursor, project);
        goto out;
    }
    s = sbx_sandbox_new(r.client);
    if (!s) {
        rc = fail_msg(o.json, "sandbox", SBXRUN_EXIT_CANNOT_RUN, sub, SBX_E_NOMEM, "out of memory");
        goto out;
    }
    if (strcmp(sub, "create") == 0) {
        for (int i = 0; i < ncreate; i++) {
            const char *k = create_opts[i][0], *v = create_opts[i][1];
            char key[300];
            if (strcmp(k, "env.") == 0) {
                const char *eq = strchr(v, '=');
                if (!eq || eq == v) {
                    rc = cli_usage_error("sandbox create", "--env wants NAME=VALUE, not '%s'", v);
                    goto out;
                }
                snprintf(key, sizeof key, "env.%.*s", (int)(eq - v), v);
                k = key;
                v = eq + 1;
            }
            if ((st = sbx_sandbox_set_option(s, k, v)) != SBX_OK) {
                rc = cli_usage_error("sandbox create", "%s", sbx_sandbox_last_error(s));
                goto out;
            }
        }
        if ((name && (st = sbx_sandbox_set_name(s, name)) != SBX_OK) ||
            (persistent && (st = sbx_sandbox_set_persistent(s, 1)) != SBX_OK)) {
            rc = cli_usage_error("sandbox create", "%s", sbx_sandbox_last_error(s));
            goto out;
        }
        if (git) {
            const char *pw = getenv("SBXRUN_GIT_PASSWORD");
            if ((st = sbx_sandbox_set_source_git(s, git, rev, (uint32_t)depth)) != SBX_OK ||
                (git_user && (st = sbx_sandbox_set_source_git_auth(s, git_user, pw ? pw : "")) != SBX_OK)) {
                rc = cli_usage_error("sandbox create", "%s", sbx_sandbox_last_error(s));
                goto out;
            }
        }
        /* A create that clones, downloads or restores its source may take
         * minutes to answer: no deadline unless one was asked for. */
        {
            bool slow = git != NULL;
            for (int i = 0; i < ncreate; i++)
                slow = slow || strncmp(create_opts[i][0], "source.", 7) == 0;
            if (slow && !o.request_timeout)
                sbx_client_set_option(r.client, "timeout_ms", "0");
        }
        {
            sbx_op *op = NULL;
            err[0] = '\0';
            if ((st = sbx_sandbox_create_start(s, &op)) == SBX_OK)
                st = wait_shown(op, "creating the sandbox", o.json, err, sizeof err);
            sbx_op_free(op);
        }
        if (st != SBX_OK) {
            rc = fail_msg(o.json, "sandbox", interrupted_or(st), "create", st, err[0] ? err : sbx_sandbox_last_error(s));
            goto out;
        }
        cli_runtime_warning("sandbox", runtime, s);
        if (o.json)
            cli_json_result("sandbox", SBXRUN_EXIT_OK, cli_json_parse(sbx_sandbox_json(s)));
        else
            printf("%s\n", sbx_sandbox_id(s));
        rc = SBXRUN_EXIT_OK;
        goto out;
    }
    if (strcmp(sub, "resume") == 0 || strcmp(sub, "delete") == 0) {
        /* a named sandbox: its running session (started when needed), or
         * gone (its session stops, the name is free) */
        bool del = sub[0] == 'd';
        if ((st = sbx_sandbox_fetch_named(s, id)) != SBX_OK) {
            /* Worded as get and stop word it. */
            if (st == SBX_E_NOT_FOUND)
                snprintf(err, sizeof err, "no sandbox has the name %s", id);
            rc = fail_msg(o.json, "sandbox", remote_fetch_exit(st), sub, st,
                          st == SBX_E_NOT_FOUND ? err : sbx_sandbox_last_error(s));
            goto out;
        }
        if ((st = del ? sbx_sandbox_delete(s) : sbx_sandbox_resume(s)) != SBX_OK) {
            rc = fail_msg(o.json, "sandbox", remote_fetch_exit(st), sub, st, sbx_sandbox_last_error(s));
            goto out;
        }
        if (o.json)
            cli_json_result("sandbox", SBXRUN_EXIT_OK,
                            del ? json_pack("{s:s,s:b}", "name", id, "deleted", 1) : cli_json_parse(sbx_sandbox_json(s)));
        else if (del)
            printf("%s deleted\n", id);
        else
            printf("%s\n", sbx_sandbox_id(s));
        rc = SBXRUN_EXIT_OK;
        goto out;
    }
    if ((st = remote_fetch(s, id, false, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "sandbox", remote_fetch_exit(st), sub, st, err);
        goto out;
    }
    if (strcmp(sub, "get") == 0) {
        print_sandbox(s, o.json);
        rc = SBXRUN_EXIT_OK;
    } else if (strcmp(sub, "extend") == 0) {
        if ((st = sbx_sandbox_extend_timeout(s, ms)) != SBX_OK) {
            rc = fail_msg(o.json, "sandbox", remote_exit(st), "extend", st, sbx_sandbox_last_error(s));
            goto out;
        }
        if (o.json)
            cli_json_result("sandbox", SBXRUN_EXIT_OK, cli_json_parse(sbx_sandbox_json(s)));
        else {
            char d[64];
            printf("%s timeout %s\n", sbx_sandbox_id(s), timeout_text(sbx_sandbox_timeout_ms(s), d));
        }
        rc = SBXRUN_EXIT_OK;
    } else if (strcmp(sub, "stop") == 0) {
        if ((st = sbx_sandbox_stop(s)) != SBX_OK) {
            rc = fail_msg(o.json, "sandbox", remote_exit(st), "stop", st, sbx_sandbox_last_error(s));
            goto out;
        }
        if (o.json)
            cli_json_result("sandbox", SBXRUN_EXIT_OK, cli_json_parse(sbx_sandbox_json(s)));
        else
            printf("%s %s\n", sbx_sandbox_id(s), sbx_sandbox_status(s));
        rc = SBXRUN_EXIT_OK;
    } else {
        sbx_snapshot *sn = sbx_snapshot_new(r.client);
        sbx_op *op = NULL;
        err[0] = '\0';
        if (sn && (st = sbx_sandbox_snapshot_start(s, expiration, sn, &op)) == SBX_OK)
            st = wait_shown(op, "snapshotting", o.json, err, sizeof err);
        sbx_op_free(op);
        if (!sn || st != SBX_OK) {
            if (!sn)
                st = SBX_E_NOMEM;
            rc = fail_msg(o.json, "sandbox", interrupted_or(st), "snapshot", st,
                          !sn ? "out of memory" : err[0] ? err : sbx_sandbox_last_error(s));
            sbx_snapshot_free(sn);
            goto out;
        }
        if (o.json)
            cli_json_result("sandbox", SBXRUN_EXIT_OK, cli_json_parse(sbx_snapshot_json(sn)));
        else
            printf("%s\n", sbx_snapshot_id(sn));
        sbx_snapshot_free(sn);
        rc = SBXRUN_EXIT_OK;
    }
out:
    sbx_sandbox_free(s);
    remote_close(&r);
    return rc;
}
