/* SPDX-License-Identifier: MIT */
/* sbxrun cp: copy files into a sandbox (a file or a tree) and out of it (a file). */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "remote.h"

static const char usage_text[] =
    "usage: sbxrun cp [options] LOCAL SANDBOX:PATH\n"
    "       sbxrun cp [options] SANDBOX:PATH LOCAL\n"
    "\n"
    "Copy a local file, or a directory and everything below it, into a sandbox\n"
    "(streamed as a gzip tar; relative PATHs are under /vercel/sandbox), or copy a\n"
    "file out of a sandbox (written beside LOCAL and renamed into place, so a\n"
    "failed copy leaves nothing). SANDBOX is a sandbox id. When LOCAL is an\n"
    "existing directory, the file keeps its name inside it.\n"
    "\n" REMOTE_OPTS_HELP
    "\n"
    "Exit status: 0 copied; 1 the server refused (a file that is not there);\n"
    "2 usage; 125 no such sandbox, a local file that cannot be read or written,\n"
    "or the endpoint could not be reached or did not answer in time.\n";

/* "sbx_abc:/path" -> id and path; NULL when arg is a local path. */
static char *split_remote(const char *arg, const char **path)
{
    const char *colon = strchr(arg, ':');
    char *id;
    if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.')
        return NULL;
    for (const char *p = arg; p < colon; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return NULL;
    id = strndup(arg, (size_t)(colon - arg));
    *path = colon + 1;
    return id;
}

int cmd_cp(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, REMOTE_LONGOPTS, {NULL, 0, NULL, 0}};
    struct remote_opts o = {0};
    struct remote r;
    const char *src_path = NULL, *dst_path = NULL;
    char *src_id, *dst_id, *id, err[1024], *local_dst = NULL;
    int c, rc = SBXRUN_EXIT_FAIL;
    sbx_sandbox *s = NULL;
    sbx_status st;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (remote_opt(&o, c, optarg))
            continue;
        if (c == 'h') {
            fputs(usage_text, stdout);
            return SBXRUN_EXIT_OK;
        }
        fputs(usage_text, stderr);
        cli_json_scan(argc, argv);
        return SBXRUN_EXIT_USAGE;
    }
    if (argc - optind != 2) {
        fputs(usage_text, stderr);
        return SBXRUN_EXIT_USAGE;
    }
    src_id = split_remote(argv[optind], &src_path);
    dst_id = split_remote(argv[optind + 1], &dst_path);
    if (!src_id == !dst_id) {
        cli_usage_error("cp", "exactly one of the two must be SANDBOX:PATH");
        free(src_id);
        free(dst_id);
        return SBXRUN_EXIT_USAGE;
    }
    id = src_id ? src_id : dst_id;
    if (!*(src_id ? src_path : dst_path)) {
        cli_usage_error("cp", "%s: the path in the sandbox is empty", id);
        free(id);
        return SBXRUN_EXIT_USAGE;
    }
    if ((st = remote_open(&r, &o, false, err, sizeof err)) != SBX_OK) {
        rc = fail_msg(o.json, "cp", remote_open_exit(st), "connect", st, err);
        remote_close(&r);
        free(id);
        return rc;
    }
    s = sbx_sandbox_new(r.client);
    if (!s || (st = sbx_sandbox_fetch(s, id)) != SBX_OK) {
        rc = fail_msg(o.json, "cp", s ? remote_fetch_exit(st) : SBXRUN_EXIT_CANNOT_RUN, "find the sandbox",
                      s ? st : SBX_E_NOMEM, s ? sbx_sandbox_last_error(s) : "out of memory");
        goto out;
    }
    if (dst_id) {
        st = sbx_sandbox_upload(s, argv[optind], dst_path);
    } else {
        /* Into an existing directory: keep the file's name. */
        struct stat sb;
        const char *local = argv[optind + 1];
        if (stat(local, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            const char *base = strrchr(src_path, '/');
            base = base ? base + 1 : src_path;
            if (!*base) {
                rc = cli_usage_error("cp", "%s: name a file, not a directory", src_path);
                goto out;
            }
            local_dst = malloc(strlen(local) + strlen(base) + 2);
            sprintf(local_dst, "%s/%s", local, base);
            local = local_dst;
        }
        st = sbx_sandbox_download(s, src_path, local);
    }
    if (st != SBX_OK) {
        rc = fail_msg(o.json, "cp", remote_exit(st), "cp", st, sbx_sandbox_last_error(s));
        goto out;
    }
    if (o.json) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "sandboxId", sbx_sandbox_id(s), "direction",
                              dst_id ? "in" : "out", "from", argv[optind], "to",
                              local_dst ? local_dst : argv[optind + 1]);
        cli_json_result("cp", SBXRUN_EXIT_OK, j);
    }
    rc = SBXRUN_EXIT_OK;
out:
    free(local_dst);
    free(id);
    sbx_sandbox_free(s);
    remote_close(&r);
    return rc;
}
