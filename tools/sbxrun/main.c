/* SPDX-License-Identifier: MIT */
/* sbxrun: the command-line front end of libsbxrun; dispatches to subcommands. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"
#include "remote.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct sbxrun_cmd commands[] = {
    {"verify", "check, patch and verify a project in a sandbox (the main job)", cmd_verify},
    {"exec", "run a program in a sandbox, streaming its output", cmd_exec},
    {"sandbox", "create, list, inspect, extend, stop or snapshot sandboxes", cmd_sandbox},
    {"snapshot", "list, inspect or delete snapshots", cmd_snapshot},
    {"cp", "copy files into or out of a sandbox", cmd_cp},
    {"policy", "check a command against the command policy", cmd_policy},
    {"netpolicy", "show the network-policy preset of a job type", cmd_netpolicy},
    {"redact", "copy standard input to standard output with secrets redacted", cmd_redact},
    {"transcript", "show or verify a job transcript", cmd_transcript},
    {"patch", "check that a patch is safe and applies to a local repository", cmd_patch},
    {"help", "show this help, or a subcommand's", cmd_help},
    {"version", "print the versions of sbxrun and the loaded libsbxrun", cmd_version},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: sbxrun [--version] [--help] [GLOBAL OPTIONS] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nglobal options, before the command (the commands that talk to sandboxes also\n"
                 "take them after it, and theirs win; --json applies to every command but help):\n"
                 "  --endpoint URL, --token-file FILE, --request-timeout D, --protocol V, --json\n"
                 "\nRun 'sbxrun <command> --help' (or -h) for a command's options.\n");
}

static const struct sbxrun_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int cmd_version(int argc, char **argv)
{
    bool json = remote_defaults.json;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: sbxrun version [--json]\n\nPrint the version sbxrun was built with and the version of\n"
                   "the libsbxrun it loaded; exit 1 if they differ in major version.\n");
            return SBXRUN_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            cli_json_mode();
            continue;
        }
        cli_json_scan(argc, argv);
        return cli_usage_error("version", "unexpected argument '%s' (the one option is --json)", argv[i]);
    }
    if ((sbx_version_num() >> 16) != (SBX_VERSION_NUM >> 16))
        return cli_fail("version", SBXRUN_EXIT_FAIL, SBX_E_MISUSE, "built for libsbxrun %s but loaded %s",
                        SBX_VERSION_STRING, sbx_version());
    if (json)
        cli_json_result("version", SBXRUN_EXIT_OK,
                        json_pack("{s:s,s:s}", "sbxrun", SBX_VERSION_STRING, "libsbxrun", sbx_version()));
    else
        printf("sbxrun %s\nlibsbxrun %s\n", SBX_VERSION_STRING, sbx_version());
    return SBXRUN_EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: sbxrun help [COMMAND]\n\nShow the commands, or a command's help (as 'sbxrun COMMAND "
               "--help').\n");
        return SBXRUN_EXIT_OK;
    }
    if (argc > 1) {
        const struct sbxrun_cmd *c = find_cmd(argv[1]);
        char help[] = "--help";
        char *sub[] = {argv[1], help, NULL};
        if (!c) {
            const char *names[sizeof commands / sizeof commands[0]], *s;
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                names[i] = commands[i].name;
            s = cli_suggest(argv[1], names, sizeof names / sizeof names[0]);
            return cli_usage_top("sbxrun help", NULL, "unknown command '%s'%s%s%s", argv[1],
                                 s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : "");
        }
        return c->run(2, sub);
    }
    usage(stdout);
    return SBXRUN_EXIT_OK;
}

bool cli_live_view(int fd)
{
    const char *term = getenv("TERM");
    return isatty(fd) && !(term && strcmp(term, "dumb") == 0);
}

bool cli_color(void)
{
    const char *no = getenv("NO_COLOR"); /* no-color.org: set and not empty */
    return !(no && *no);
}

int64_t cli_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool cli_pump(sbx_client *c, int64_t cap_ms)
{
    int64_t ms = -1;
    sbx_client_get_timeout(c, &ms);
    if (cap_ms >= 0 && (ms < 0 || ms > cap_ms))
        ms = cap_ms;
    sbx_client_wait(c, ms);
    return sbx_client_process(c, NULL) == SBX_OK;
}

/* Remove name (in dirfd) and, for a directory, everything below it, by
 * descriptors: no path grows, so a tree deeper than PATH_MAX (as a
 * sandbox may send) goes too, and no link is followed. nftw() was not
 * used: glibc's asserts on such trees. Past MAX_DEPTH levels, or out of
 * descriptors, what is below stays. */
#define RM_MAX_DEPTH 4096

static void rm_at(int at, const char *name, int depth)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        int fd = depth < RM_MAX_DEPTH ? openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        if (!d && fd >= 0)
            close(fd);
        while (d && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                rm_at(fd, e->d_name, depth + 1);
        if (d)
            closedir(d);
        unlinkat(at, name, AT_REMOVEDIR);
    } else {
        unlinkat(at, name, 0);
    }
}

void cli_rm_tree(const char *dir)
{
    rm_at(AT_FDCWD, dir, 0);
}

static volatile sig_atomic_t interrupted;
static sbx_op *volatile running_op;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
    /* sbx_op_cancel() only flags and wakes: safe enough from a handler
     * (an atomic store and an eventfd write). */
    if (running_op)
        sbx_op_cancel(running_op);
}

static bool trapping; /* cli_trap_signals(): the handler stays between ops */

void cli_cancel_on_signal(sbx_op *op)
{
    running_op = op;
    signal(SIGINT, op || trapping ? on_signal : SIG_DFL);
    signal(SIGTERM, op || trapping ? on_signal : SIG_DFL);
}

void cli_trap_signals(void)
{
    trapping = true;
    cli_cancel_on_signal(running_op);
}

bool cli_interrupted(void)
{
    return interrupted != 0;
}

/* The common options before the command (sbxrun --endpoint X sandbox
 * list): into remote_defaults, which every subcommand starts from. Returns
 * the index of the command word, or -1 after a usage error. */
static int global_options(int argc, char **argv)
{
    static const char *const with_value[] = {"endpoint", "token-file", "request-timeout", "protocol"};
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0 && argv[i][2]) {
        const char *a = argv[i] + 2, *eq = strchr(a, '='), *val = NULL;
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        int k = -1;
        if ((n == 4 && strncmp(a, "json", 4) == 0) || (n == 4 && strncmp(a, "help", 4) == 0) ||
            (n == 7 && strncmp(a, "version", 7) == 0)) {
            if (eq)
                return cli_usage_top("sbxrun", NULL, "option '--%.*s' takes no value", (int)n, a), -1;
        }
        if (n == 4 && strncmp(a, "json", 4) == 0 && !eq) {
            remote_defaults.json = true;
            cli_json_mode();
            i++;
            continue;
        }
        if ((n == 4 && strncmp(a, "help", 4) == 0) || (n == 7 && strncmp(a, "version", 7) == 0))
            return i; /* main handles them */
        for (int j = 0; j < 4; j++)
            if (strlen(with_value[j]) == n && strncmp(a, with_value[j], n) == 0)
                k = j;
        if (k < 0) {
            char name[64];
            const char *s;
            snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), a);
            s = cli_suggest(name, with_value, 4);
            return cli_usage_top("sbxrun",
                                 "global options: --endpoint, --token-file, --request-timeout, --protocol, --json; "
                                 "a command's own options go after it",
                                 "unknown global option '--%s'%s%s%s", name, s ? " (did you mean '--" : "",
                                 s ? s : "", s ? "'?)" : ""),
                   -1;
        }
        if (eq) {
            val = eq + 1;
            i++;
        } else if (i + 1 < argc) {
            val = argv[i + 1];
            i += 2;
        } else {
            return cli_usage_top("sbxrun", NULL, "option '--%s' needs a value", with_value[k]), -1;
        }
        switch (k) {
        case 0: remote_defaults.endpoint = val; break;
        case 1: remote_defaults.token_file = val; break;
        case 2: remote_defaults.request_timeout = val; break;
        default: remote_defaults.protocol = val; break;
        }
    }
    return i;
}

int main(int argc, char **argv)
{
    const struct sbxrun_cmd *c;
    int at;

    if (argc < 2) {
        usage(stderr);
        return SBXRUN_EXIT_USAGE;
    }
    if ((at = global_options(argc, argv)) < 0)
        return cli_json_end("sbxrun", SBXRUN_EXIT_USAGE);
    if (at >= argc) {
        return cli_json_end("sbxrun", cli_usage_top("sbxrun", "run 'sbxrun help' for the commands",
                                                    "no command after the global options"));
    }
    if (strcmp(argv[at], "--help") == 0 || strcmp(argv[at], "-h") == 0) {
        /* sbxrun -h exec: exec's help, as sbxrun help exec. */
        if (at + 1 < argc && find_cmd(argv[at + 1])) {
            char help[] = "--help";
            char *sub[] = {argv[at + 1], help, NULL};
            return find_cmd(argv[at + 1])->run(2, sub);
        }
        usage(stdout);
        return SBXRUN_EXIT_OK;
    }
    if (strcmp(argv[at], "--version") == 0)
        return cmd_version(1, argv + at);
    c = find_cmd(argv[at]);
    if (!c) {
        const char *names[sizeof commands / sizeof commands[0]], *s;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            names[i] = commands[i].name;
        s = cli_suggest(argv[at], names, sizeof names / sizeof names[0]);
        return cli_json_end("sbxrun", cli_usage_top("sbxrun", "run 'sbxrun help' for the commands",
                                                    "unknown command '%s'%s%s%s", argv[at],
                                                    s ? " (did you mean '" : "", s ? s : "", s ? "'?)" : ""));
    }
    /* With --json, one object on stdout whatever happened (cli.h). */
    return cli_json_end(c->name, c->run(argc - at, argv + at));
}
