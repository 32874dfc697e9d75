/* SPDX-License-Identifier: MIT */
/* sbxrun transcript show|verify: read a job transcript (doc/transcript.md). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"

static const char usage_text[] =
    "usage: sbxrun transcript show FILE [--json] [--step N]\n"
    "       sbxrun transcript verify FILE [--expect HASH] [--allow-incomplete] [--json]\n"
    "\n"
    "show    print a job transcript for people: the job, then one block per step\n"
    "        (command, duration, exit code or why there is none, output tails,\n"
    "        dropped bytes). --json prints sbxrun's JSON envelope (sbxrun(1)),\n"
    "        its result the array of the entries; --step N only the Nth step\n"
    "        (1 = the first to end; with --json, its entry is the result).\n"
    "verify  check the hash chain: exit 0 when every entry holds and the job\n"
    "        ended, 1 with the first broken one (or a torn last line) on stderr,\n"
    "        5 when the chain holds but has no end entry (the job was killed or\n"
    "        its writer failed); --allow-incomplete accepts that (exit 0).\n"
    "        --expect HASH also wants the last entry's hash to be HASH (kept from\n"
    "        when it was written), so that entries cut from the end are seen too.\n"
    "        --json: sbxrun's envelope, its result file, valid, complete, steps\n"
    "        and headHash (valid false and brokenEntry, beside the error, when\n"
    "        the chain is broken).\n";

/* The transcript at path, or NULL after saying why; *rc is then the exit
 * status: 125 when it could not be read (no such file, out of memory), as
 * for any local file, else 1 (it is no transcript). */
static sbx_transcript *open_transcript(const char *cmd, const char *path, int *rc)
{
    sbx_transcript *t = sbx_transcript_new();
    sbx_status st;
    if (!t) {
        *rc = cli_fail(cmd, SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
        return NULL;
    }
    if ((st = sbx_transcript_load_file(t, path)) != SBX_OK) {
        *rc = cli_fail(cmd, st == SBX_E_NOMEM || st == SBX_E_IO ? SBXRUN_EXIT_CANNOT_RUN : SBXRUN_EXIT_FAIL, st,
                       "%s", sbx_transcript_last_error(t));
        sbx_transcript_free(t);
        return NULL;
    }
    return t;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A window for a terminal: text as it is, base64 said so. */
static void print_window(json_t *o, const char *key)
{
    char b64[32];
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(b64, sizeof b64, "%s_b64", key);
    if (s) {
        size_t n = strlen(s);
        fputs(s, stdout);
        if (n && s[n - 1] != '\n')
            putchar('\n');
    } else if (json_string_value(json_object_get(o, b64))) {
        printf("(not UTF-8: %zu base64 characters)\n", strlen(json_string_value(json_object_get(o, b64))));
    }
}

static void print_stream(json_t *out, const char *name)
{
    json_t *o = json_object_get(out, name);
    json_int_t bytes = json_integer_value(json_object_get(o, "bytes")), dropped =
                                                                            json_integer_value(json_object_get(o, "dropped"));
    if (!bytes)
        return;
    printf("  --- %s: %lld bytes", name, (long long)bytes);
    if (dropped)
        printf(", %lld dropped between head and tail", (long long)dropped);
    printf(" ---\n");
    print_window(o, "head");
    if (dropped)
        printf("  [... %lld bytes ...]\n", (long long)dropped);
    print_window(o, "tail");
}

static void print_step(json_t *e)
{
    json_t *argv = json_object_get(e, "argv"), *v, *keys = json_object_get(e, "env_keys");
    json_t *red = json_object_get(e, "redactions");
    size_t i;
    const char *k;
    printf("step %lld", (long long)json_integer_value(json_object_get(e, "step")));
    if (json_string_value(json_object_get(e, "name")))
        printf(" (%s)", str(e, "name"));
    printf(":");
    json_array_foreach(argv, i, v)
        printf(" %s", json_string_value(v));
    printf("\n");
    if (json_string_value(json_object_get(e, "cwd")))
        printf("  cwd %s\n", str(e, "cwd"));
    if (json_array_size(keys)) {
        printf("  env");
        json_array_foreach(keys, i, v)
            printf(" %s", json_string_value(v));
        printf("\n");
    }
    printf("  %s -> %s, %lld ms", str(e, "started_at"), str(e, "ended_at"),
           (long long)json_integer_value(json_object_get(e, "duration_ms")));
    if (json_is_integer(json_object_get(e, "exit_code")))
        printf(", exit code %lld", (long long)json_integer_value(json_object_get(e, "exit_code")));
    if (strcmp(str(e, "reason"), "exited") != 0)
        printf(", %s", str(e, "reason"));
    if (json_is_true(json_object_get(e, "retryable")))
        printf(", retryable");
    if (json_is_true(json_object_get(e, "truncated")))
        printf(", output cut to fit the transcript's limit");
    printf("\n");
    if (json_string_value(json_object_get(e, "command_id")))
        printf("  command %s\n", str(e, "command_id"));
    if (json_string_value(json_object_get(e, "detail")))
        printf("  %s\n", str(e, "detail"));
    if (json_object_size(red)) {
        printf("  redacted:");
        json_object_foreach(red, k, v)
            printf(" %s %lld", k, (long long)json_integer_value(v));
        printf("\n");
    }
    print_stream(json_object_get(e, "output"), "stdout");
    print_stream(json_object_get(e, "output"), "stderr");
}

static int show(const char *path, bool as_json, long step)
{
    int rc = SBXRUN_EXIT_OK;
    sbx_transcript *t = open_transcript("transcript show", path, &rc);
    char *text = NULL;
    size_t len;
    sbx_status st;
    json_t *e;
    if (!t)
        return rc;
    if (step > 0) {
        if ((st = sbx_transcript_step_to_json(t, (size_t)step, &text)) != SBX_OK) {
            rc = cli_fail("transcript show", st == SBX_E_NOMEM ? SBXRUN_EXIT_CANNOT_RUN : SBXRUN_EXIT_FAIL, st, "%s",
                          sbx_transcript_last_error(t));
            sbx_transcript_free(t);
            return rc;
        }
        if (as_json) {
            cli_json_result("transcript", SBXRUN_EXIT_OK, cli_json_parse(text));
        } else if ((e = json_loads(text, 0, NULL))) {
            print_step(e);
            json_decref(e);
        }
        sbx_free(text);
        sbx_transcript_free(t);
        return rc;
    }
    if ((st = sbx_transcript_save_data(t, (uint8_t **)&text, &len)) != SBX_OK) {
        rc = cli_fail("transcript show", st == SBX_E_NOMEM ? SBXRUN_EXIT_CANNOT_RUN : SBXRUN_EXIT_FAIL, st, "%s",
                      sbx_transcript_last_error(t));
        sbx_transcript_free(t);
        return rc;
    }
    if (as_json) {
        /* The entries in order, each as the file has it. */
        json_t *all = json_array();
        for (char *line = text, *nl; all && line < text + len; line = nl + 1) {
            nl = memchr(line, '\n', (size_t)(text + len - line));
            if (!nl)
                nl = text + len;
            if (nl > line && json_array_append_new(all, cli_json_parsen(line, (size_t)(nl - line))) != 0) {
                json_decref(all);
                all = NULL;
            }
        }
        if (all)
            cli_json_result("transcript", SBXRUN_EXIT_OK, all);
        else
            rc = cli_fail("transcript show", SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
    } else {
        for (char *line = text, *nl; line < text + len; line = nl + 1) {
            nl = strchr(line, '\n');
            *nl = '\0';
            if (!(e = json_loads(line, 0, NULL))) {
                printf("(a damaged entry)\n");
                continue;
            }
            if (strcmp(str(e, "type"), "job") == 0) {
                json_t *job = json_object_get(e, "job"), *in = json_object_get(job, "inputs"), *v;
                const char *k;
                printf("job %s, started %s\n", json_string_value(json_object_get(job, "type")) ?: "(no type)",
                       str(job, "started_at"));
                if (json_string_value(json_object_get(job, "endpoint")))
                    printf("  endpoint %s\n", str(job, "endpoint"));
                if (json_string_value(json_object_get(job, "sandbox_id")))
                    printf("  sandbox %s\n", str(job, "sandbox_id"));
                json_object_foreach(in, k, v)
                    printf("  input %s = %s\n", k, json_string_value(v) ?: "");
            } else if (strcmp(str(e, "type"), "meta") == 0) {
                if (json_string_value(json_object_get(e, "sandbox_id")))
                    printf("sandbox %s\n", str(e, "sandbox_id"));
            } else if (strcmp(str(e, "type"), "step") == 0) {
                print_step(e);
            } else if (strcmp(str(e, "type"), "end") == 0) {
                printf("end: %s, %lld steps, %lld ms\n", str(e, "verdict"),
                       (long long)json_integer_value(json_object_get(e, "steps")),
                       (long long)json_integer_value(json_object_get(e, "duration_ms")));
            }
            json_decref(e);
        }
        if (!sbx_transcript_complete(t))
            printf("(incomplete: no end entry; the job did not finish)\n");
        if (sbx_transcript_torn_bytes(t))
            printf("(a torn last line of %llu bytes was left out)\n",
                   (unsigned long long)sbx_transcript_torn_bytes(t));
    }
    sbx_free(text);
    sbx_transcript_free(t);
    return rc;
}

static int verify(const char *path, const char *expect, bool allow_incomplete, bool json)
{
    int rc = SBXRUN_EXIT_OK;
    sbx_transcript *t = open_transcript("transcript verify", path, &rc);
    size_t broken = 0;
    sbx_status st;
    if (!t)
        return rc;
    if ((st = sbx_transcript_verify(t, &broken)) != SBX_OK) {
        rc = cli_fail("transcript", SBXRUN_EXIT_FAIL, st, "verify: %s: %s", path, sbx_transcript_last_error(t));
        if (json)
            cli_json_partial("transcript", rc, json_pack("{s:s,s:b,s:I}", "file", path, "valid", 0, "brokenEntry",
                                                         (json_int_t)broken),
                             "verify", st, sbx_transcript_last_error(t));
    } else if (expect && strcmp(expect, sbx_transcript_head_hash(t)) != 0) {
        fprintf(stderr, "sbxrun transcript verify: %s: the last entry's hash is %s, not %s (entries were cut "
                        "from the end, or it is another transcript)\n",
                path, sbx_transcript_head_hash(t), expect);
        rc = SBXRUN_EXIT_FAIL;
    } else {
        if (json)
            cli_json_result("transcript",
                            !sbx_transcript_complete(t) && !allow_incomplete ? SBXRUN_EXIT_INCOMPLETE : SBXRUN_EXIT_OK,
                            json_pack("{s:s,s:b,s:b,s:I,s:s}", "file", path, "valid", 1, "complete",
                                      sbx_transcript_complete(t), "steps", (json_int_t)sbx_transcript_step_count(t),
                                      "headHash", sbx_transcript_head_hash(t)));
        else
            printf("%s: the chain holds: %zu steps%s; last hash %s\n", path, sbx_transcript_step_count(t),
                   sbx_transcript_complete(t) ? ", complete" : ", incomplete (no end entry)",
                   sbx_transcript_head_hash(t));
        /* An intact record of a job that never ended is not a record of the
         * job: a caller checking only the exit status must not take it for one. */
        if (!sbx_transcript_complete(t) && !allow_incomplete) {
            fprintf(stderr, "sbxrun transcript verify: %s: incomplete: no end entry (the job was killed, or the "
                            "transcript could not be finished); --allow-incomplete accepts it\n",
                    path);
            rc = SBXRUN_EXIT_INCOMPLETE;
        }
    }
    sbx_transcript_free(t);
    return rc;
}

int cmd_transcript(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"step", required_argument, NULL, 's'},
                                             {"expect", required_argument, NULL, 'e'},
                                             {"allow-incomplete", no_argument, NULL, 'i'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *sub, *path = NULL, *expect = NULL;
    bool as_json = cli_json_enabled(), allow_incomplete = false;
    long step = 0;
    int c;
    {
        static const char *const subs[] = {"show", "verify"};
        if ((c = cli_subcommand("transcript", argc, argv, usage_text, subs, 2)) >= 0)
            return c;
    }
    sub = argv[1];
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = true; cli_json_mode(); break;
        case 's': {
            char *end;
            step = strtol(optarg, &end, 10);
            if (!*optarg || *end || step < 1)
                return cli_usage_error("transcript", "--step wants a step number (1, 2...), not '%s'", optarg);
            break;
        }
        case 'e': expect = optarg; break;
        case 'i': allow_incomplete = true; break;
        case 'h': fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        default: return cli_bad_option("transcript", argc - 1, argv + 1, longopts);
        }
    }
    if (argc - 1 - optind != 1)
        return cli_usage_error("transcript", "%s: one FILE expected, %s", sub,
                               argc - 1 - optind == 0 ? "and none was given" : "and more were given");
    path = argv[1 + optind];
    if (strcmp(sub, "verify") == 0) {
        if (step)
            return cli_usage_error("transcript verify", "--step is an option of show");
        return verify(path, expect, allow_incomplete, as_json);
    }
    if (expect || allow_incomplete)
        return cli_usage_error("transcript show", "--expect and --allow-incomplete are options of verify");
    return show(path, as_json, step);
}
