/* SPDX-License-Identifier: MIT */
/* sbxrun: the command-line front end of libsbxrun; dispatches to subcommands. */
#include <ftw.h>
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
    {"sandbox", "create, list, inspect, stop or snapshot sandboxes", cmd_sandbox},
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
    fprintf(out, "usage: sbxrun [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'sbxrun <command> --help' for a command's options.\n");
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
    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: sbxrun version\n\nPrint the version sbxrun was built with and the version of\n"
                   "the libsbxrun it loaded; exit 1 if they differ in major version.\n");
            return SBXRUN_EXIT_OK;
        }
        fprintf(stderr, "sbxrun version: unexpected argument '%s'\n", argv[1]);
        return SBXRUN_EXIT_USAGE;
    }
    printf("sbxrun %s\nlibsbxrun %s\n", SBX_VERSION_STRING, sbx_version());
    if ((sbx_version_num() >> 16) != (SBX_VERSION_NUM >> 16)) {
        fprintf(stderr, "sbxrun: built for libsbxrun %s but loaded %s\n", SBX_VERSION_STRING,
                sbx_version());
        return SBXRUN_EXIT_FAIL;
    }
    return SBXRUN_EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 1) {
        const struct sbxrun_cmd *c = find_cmd(argv[1]);
        char help[] = "--help";
        char *sub[] = {argv[1], help, NULL};
        if (!c) {
            fprintf(stderr, "sbxrun help: unknown command '%s'\n", argv[1]);
            return SBXRUN_EXIT_USAGE;
        }
        return c->run(2, sub);
    }
    usage(stdout);
    return SBXRUN_EXIT_OK;
}

int64_t cli_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

void cli_rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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

void cli_cancel_on_signal(sbx_op *op)
{
    running_op = op;
    signal(SIGINT, op ? on_signal : SIG_DFL);
    signal(SIGTERM, op ? on_signal : SIG_DFL);
}

bool cli_interrupted(void)
{
    return interrupted != 0;
}

int main(int argc, char **argv)
{
    const struct sbxrun_cmd *c;

    if (argc < 2) {
        usage(stderr);
        return SBXRUN_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return SBXRUN_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv + 1);
    c = find_cmd(argv[1]);
    if (!c) {
        fprintf(stderr, "sbxrun: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return SBXRUN_EXIT_USAGE;
    }
    /* With --json, one object on stdout whatever happened (cli.h). */
    return cli_json_end(c->name, c->run(argc - 1, argv + 1));
}
