/* SPDX-License-Identifier: MIT */
/* sbxrun patch check: is a patch safe, and does it apply to a local tree?
 * Offline: only the repository's objects are read (doc/patch.md). */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"

static const char usage_text[] =
    "usage: sbxrun patch check --repo DIR [--base REV] [--json] FILE...\n"
    "\n"
    "Check a unified diff (FILE, or - for standard input) before it is used:\n"
    "refuse it when it is unsafe (an absolute path, a \"..\" component, a path\n"
    "into .git, a symbolic link or a gitlink), else check that it applies to\n"
    "the tree of REV in the repository DIR as `git apply --check` would.\n"
    "Several FILEs are a series: each is checked on the tree the ones before\n"
    "it leave, as git apply applies them in turn, up to the first that fails.\n"
    "Nothing is written: not the work tree, not the index. See doc/patch.md.\n"
    "\n"
    "  --repo DIR   the local git repository (a work tree or a bare one)\n"
    "  --base REV   the revision to check against [HEAD]\n"
    "  --json       print sbxrun's JSON envelope (sbxrun(1)) on stdout, the\n"
    "               verdict's object its result\n"
    "  -h, --help   show this help\n"
    "\n"
    "Without --json: one line per file (A added, M modified, D deleted,\n"
    "R renamed, C copied), then the diffstat and the patch id (as\n"
    "`git patch-id --stable` computes it); with several FILEs, each patch's\n"
    "lines after a \"FILE:\" line. With --json and several FILEs, the result\n"
    "is an array of the objects of the patches checked.\n"
    "\n"
    "Exit status: 0 safe and applies; 4 does not apply, or malformed (not a\n"
    "patch that can be read); 3 refused: unsafe, or over a size limit; 2 usage\n"
    "errors (a missing FILE or --repo, a FILE that cannot be read, no\n"
    "repository at DIR, no revision REV); 1 other failures. On 3 and 4 one line\n"
    "on stderr: the reason, naming the file (for an unsafe patch, with its rule).\n";

enum { O_REPO = 1, O_BASE, O_JSON, O_HELP = 'h' };

/* What the default limit of sbx_patch_set_limits() allows, and one more
 * byte: standard input is read up to that, so that an endless one is cut
 * and the library says it is too large. */
#define STDIN_CAP ((size_t)16 * 1024 * 1024 + 1)

static int out_of_memory(void)
{
    return cli_fail("patch", SBXRUN_EXIT_FAIL, SBX_E_NOMEM, "out of memory");
}

/* A path from the patch, with control bytes and backslashes escaped: it is
 * untrusted and may hold a terminal escape. */
static void put_path(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c < 0x20 || *c == 0x7f || *c == '\\')
            printf("\\x%02x", *c);
        else
            putchar(*c);
    }
}

static char change_letter(sbx_patch_change c)
{
    switch (c) {
    case SBX_PATCH_ADDED: return 'A';
    case SBX_PATCH_MODIFIED: return 'M';
    case SBX_PATCH_DELETED: return 'D';
    case SBX_PATCH_RENAMED: return 'R';
    case SBX_PATCH_COPIED: return 'C';
    default: return '?';
    }
}

/* One line per file: "M  src/a.c (+3 -1)", "R  old -> new", ... */
static void print_files(const sbx_patch *p, size_t *adds, size_t *dels)
{
    size_t n = sbx_patch_file_count(p);
    *adds = *dels = 0;
    for (size_t i = 0; i < n; i++) {
        sbx_patch_change c = sbx_patch_file_change(p, i);
        uint32_t om = sbx_patch_file_old_mode(p, i), nm = sbx_patch_file_new_mode(p, i);
        size_t a = sbx_patch_file_additions(p, i), d = sbx_patch_file_deletions(p, i);
        bool binary = sbx_patch_file_binary(p, i) != 0;
        bool moved = c == SBX_PATCH_RENAMED || c == SBX_PATCH_COPIED;
        bool mode_change = om && nm && om != nm;
        bool unusual_new = c == SBX_PATCH_ADDED && nm && nm != 0100644;
        *adds += a;
        *dels += d;
        printf("%c  ", change_letter(c));
        if (moved) {
            put_path(sbx_patch_file_old_path(p, i));
            printf(" -> ");
        }
        put_path(sbx_patch_file_path(p, i));
        /* A pure rename or copy has nothing more to say. */
        if (moved && !binary && !a && !d && !mode_change) {
            putchar('\n');
            continue;
        }
        if (binary)
            printf(" (binary");
        else
            printf(" (+%zu -%zu", a, d);
        if (mode_change)
            printf(", mode %06o -> %06o", (unsigned)om, (unsigned)nm);
        else if (unusual_new)
            printf(", mode %06o", (unsigned)nm);
        printf(")\n");
    }
}

static void print_summary(const sbx_patch *p, size_t adds, size_t dels)
{
    size_t n = sbx_patch_file_count(p);
    printf("%zu file%s changed, %zu insertion%s(+), %zu deletion%s(-); patch id %s\n", n, n == 1 ? "" : "s", adds,
           adds == 1 ? "" : "s", dels, dels == 1 ? "" : "s", sbx_patch_id(p));
}

/* Standard input, whole (up to STDIN_CAP bytes), into a new buffer. */
static int read_stdin(uint8_t **out, size_t *len)
{
    size_t cap = 65536, n = 0;
    uint8_t *buf = malloc(cap), *bigger;
    if (!buf)
        return out_of_memory();
    for (;;) {
        size_t want, got;
        if (n == cap) {
            if (cap >= STDIN_CAP)
                break; /* enough for the library to say it is too large */
            cap = cap * 2 < STDIN_CAP ? cap * 2 : STDIN_CAP;
            if (!(bigger = realloc(buf, cap))) {
                free(buf);
                return out_of_memory();
            }
            buf = bigger;
        }
        want = cap - n;
        got = fread(buf + n, 1, want, stdin);
        n += got;
        if (got < want) {
            if (ferror(stdin)) {
                free(buf);
                return cli_fail("patch", SBXRUN_EXIT_USAGE, SBX_E_IO, "cannot read the patch from standard input");
            }
            break;
        }
    }
    *out = buf;
    *len = n;
    return SBXRUN_EXIT_OK;
}

/* The exit status of a verdict; st is the status of the call that gave it. */
static int verdict_exit(sbx_patch_verdict v, sbx_status st)
{
    switch (v) {
    case SBX_PATCH_APPLIES: return st == SBX_OK ? SBXRUN_EXIT_OK : SBXRUN_EXIT_FAIL;
    case SBX_PATCH_DOES_NOT_APPLY:
    case SBX_PATCH_MALFORMED: return SBXRUN_EXIT_DOES_NOT_APPLY;
    case SBX_PATCH_UNSAFE:
    case SBX_PATCH_TOO_LARGE: return SBXRUN_EXIT_DENIED;
    default: return SBXRUN_EXIT_FAIL;
    }
}

/* Load file (or - for standard input) into p: SBXRUN_EXIT_OK with the
 * load's status in *st, or the exit code of what stops the check. */
static int load_patch(sbx_patch *p, const char *file, sbx_status *st)
{
    if (strcmp(file, "-") == 0) {
        uint8_t *data = NULL;
        size_t len = 0;
        int rc = read_stdin(&data, &len);
        if (rc != SBXRUN_EXIT_OK)
            return rc;
        *st = sbx_patch_load_data(p, data, len);
        free(data);
    } else {
        *st = sbx_patch_load_file(p, file);
    }
    return *st == SBX_E_IO ? cli_usage_error("patch", "%s", sbx_patch_last_error(p)) : SBXRUN_EXIT_OK;
}

/* The patches in turn, each on the tree the ones before it leave (the
 * first on rev); the run stops at the first that is not safe or does not
 * apply. One patch's JSON result is its object; several give an array of
 * the objects of those checked. */
static int check_patches(const char *repo, const char *base, char **files, size_t n, bool json)
{
    sbx_patch *prev = NULL;
    json_t *all = NULL;
    bool failed = false; /* stopped by an error already reported (not a verdict) */
    int rc = SBXRUN_EXIT_OK;

    if (json && n > 1 && !(all = json_array()))
        return out_of_memory();
    for (size_t i = 0; i < n && rc == SBXRUN_EXIT_OK; i++) {
        sbx_patch *p = sbx_patch_new();
        sbx_patch_verdict v;
        sbx_status st;
        char *why;
        if (!p) {
            rc = out_of_memory();
            failed = true;
            break;
        }
        st = prev ? sbx_patch_set_base_patch(p, prev) : sbx_patch_set_base(p, repo, base);
        if (st != SBX_OK) {
            /* No repository there, or no such revision: the caller's input. */
            rc = st == SBX_E_NOMEM ? out_of_memory()
                 : prev            ? cli_fail("patch", SBXRUN_EXIT_FAIL, st, "%s", sbx_patch_last_error(p))
                                   : cli_usage_error("patch", "%s", sbx_patch_last_error(p));
            sbx_patch_free(p);
            failed = true;
            break;
        }
        if ((rc = load_patch(p, files[i], &st)) != SBXRUN_EXIT_OK) {
            sbx_patch_free(p);
            failed = true;
            break;
        }
        if (st == SBX_OK)
            st = sbx_patch_check(p);
        v = sbx_patch_get_verdict(p);
        rc = verdict_exit(v, st);
        if (rc == SBXRUN_EXIT_FAIL && st != SBX_OK) {
            /* Out of memory, or a fault of the library: no verdict to show. */
            cli_fail("patch", rc, st, "%s", *sbx_patch_last_error(p) ? sbx_patch_last_error(p) : sbx_strerror(st));
            sbx_patch_free(p);
            failed = true;
            break;
        }
        /* The verdict's reason, kept before to_json (a call that succeeds
         * clears last_error). */
        why = st != SBX_OK ? strdup(sbx_patch_last_error(p)) : NULL;
        if (st != SBX_OK && !why) {
            sbx_patch_free(p);
            rc = out_of_memory();
            failed = true;
            break;
        }
        if (json) {
            char *text = NULL;
            json_t *obj = NULL;
            if (sbx_patch_to_json(p, &text) != SBX_OK || !(obj = cli_json_parse(text))) {
                free(why);
                sbx_free(text);
                sbx_patch_free(p);
                rc = out_of_memory();
                failed = true;
                break;
            }
            sbx_free(text);
            if (all)
                json_array_append_new(all, obj);
            else
                cli_json_result("patch", rc, obj);
        } else if (*sbx_patch_id(p)) {
            size_t adds, dels;
            if (n > 1) {
                put_path(files[i]);
                printf(":\n");
            }
            print_files(p, &adds, &dels);
            print_summary(p, adds, dels);
        }
        if (st != SBX_OK) {
            if (n > 1)
                fprintf(stderr, "patch %zu of %zu (%s): ", i + 1, n, files[i]);
            if (v == SBX_PATCH_UNSAFE)
                fprintf(stderr, "%s (rule %s)\n", why, sbx_patch_rule_name(sbx_patch_broken_rule(p)));
            else
                fprintf(stderr, "%s\n", why);
        }
        free(why);
        sbx_patch_free(prev); /* the next one applies to what this one leaves */
        prev = p;
    }
    sbx_patch_free(prev);
    if (all && !failed)
        cli_json_result("patch", rc, all);
    else
        json_decref(all);
    if (fflush(stdout) != 0 && rc == SBXRUN_EXIT_OK) {
        fprintf(stderr, "sbxrun patch: cannot write the result\n");
        rc = SBXRUN_EXIT_FAIL;
    }
    return rc;
}

static int check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"repo", required_argument, NULL, O_REPO}, {"base", required_argument, NULL, O_BASE},
        {"json", no_argument, NULL, O_JSON},       {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *repo = NULL, *base = NULL;
    bool json = cli_json_enabled();
    int o;

    opterr = 0;
    optind = 1;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case O_REPO: repo = optarg; break;
        case O_BASE: base = optarg; break;
        case O_JSON: json = true; cli_json_mode(); break;
        case O_HELP: fputs(usage_text, stdout); return SBXRUN_EXIT_OK;
        default: return cli_bad_option("patch", argc, argv, opts);
        }
    }
    if (!repo)
        return cli_usage_error("patch", "check needs --repo DIR");
    if (!*repo)
        return cli_usage_error("patch", "--repo wants a directory, not an empty string");
    if (base && !*base)
        return cli_usage_error("patch", "--base wants a revision, not an empty string");
    if (argc - optind < 1)
        return cli_usage_error("patch", "check needs a patch FILE (or - for standard input)");
    {
        int stdins = 0;
        for (int i = optind; i < argc; i++)
            stdins += strcmp(argv[i], "-") == 0;
        if (stdins > 1)
            return cli_usage_error("patch", "standard input (-) can be read once, not %d times", stdins);
    }
    return check_patches(repo, base, argv + optind, (size_t)(argc - optind), json);
}

int cmd_patch(int argc, char **argv)
{
    static const char *const subs[] = {"check"};
    int rc = cli_subcommand("patch", argc, argv, usage_text, subs, 1);
    return rc >= 0 ? rc : check(argc - 1, argv + 1);
}
