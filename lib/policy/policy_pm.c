/* SPDX-License-Identifier: MIT */
/* Command-policy rules for the JavaScript package managers npm, pnpm and
 * yarn: install what the lockfile lists, run the workspace's scripts, and
 * nothing that adds packages, runs one from the registry, works outside the
 * workspace or swaps the program that runs scripts. Their exec forms
 * (`npm exec`, `pnpm dlx`, `yarn dlx`...) are package execs, decided in
 * policy.c before these rules. */
#include <string.h>

#include "policy/policy_int.h"

/* What a command word does. */
enum pm_kind {
    PM_INSTALL, /* installs the lockfile's packages: no operands */
    PM_RUN,     /* runs the script named next; the words after it are the script's */
    PM_TEST,    /* runs the test script; the words after it are the script's */
};

struct pm_cmd {
    const char *name;
    enum pm_kind kind;
};

/* An option: its name, the role of its value, and for a refused one why. A
 * value is the next word or `=value`; SBX__V_OPT marks a directory the tool
 * works in (npm --prefix, pnpm --dir, yarn --cwd). */
struct pm_opt {
    const char *name;
    enum sbx__prole role;
    const char *why; /* SBX__V_DENY only */
};

struct pm {
    const char *name;
    const struct pm_cmd *cmds;
    const struct pm_opt *opts;
    /* npm reads options anywhere before `--`, the script's words included;
     * pnpm and yarn pass everything after the script name to the script. */
    bool opts_anywhere;
    /* yarn: with no command, yarn installs; an unknown word is a script. */
    bool bare_script;
    const char *const *denied; /* known commands, refused by name (bare_script) */
};

#define WHY_GLOBAL "works on the global installation, outside the workspace"
#define WHY_SHELL "names the program that runs scripts"
#define WHY_NODE "passes options to node (--require runs any file)"
#define WHY_CONFIG "reads configuration from outside the workspace"

static const struct pm_cmd npm_cmds[] = {
    {"ci", PM_INSTALL},   {"install", PM_INSTALL},  {"i", PM_INSTALL}, {"rebuild", PM_INSTALL},
    {"run", PM_RUN},      {"run-script", PM_RUN},   {"test", PM_TEST}, {"t", PM_TEST},
    {NULL, PM_INSTALL},
};

static const struct pm_opt npm_opts[] = {
    {"--ignore-scripts", SBX__V_NONE, NULL}, {"--no-audit", SBX__V_NONE, NULL},
    {"--no-fund", SBX__V_NONE, NULL},        {"--prefer-offline", SBX__V_NONE, NULL},
    {"--offline", SBX__V_NONE, NULL},        {"--silent", SBX__V_NONE, NULL},
    {"-s", SBX__V_NONE, NULL},               {"--quiet", SBX__V_NONE, NULL},
    {"-q", SBX__V_NONE, NULL},               {"--version", SBX__V_NONE, NULL},
    {"-v", SBX__V_NONE, NULL},               {"--if-present", SBX__V_NONE, NULL},
    {"--omit", SBX__V_TEXT, NULL},           {"--include", SBX__V_TEXT, NULL},
    {"--registry", SBX__V_TEXT, NULL},       {"--loglevel", SBX__V_TEXT, NULL},
    {"--cache", SBX__V_PATH, NULL},          {"--prefix", SBX__V_OPT, NULL},
    {"-C", SBX__V_OPT, NULL}, /* --prefix */
    {"--global", SBX__V_DENY, WHY_GLOBAL},   {"-g", SBX__V_DENY, WHY_GLOBAL},
    {"--location", SBX__V_DENY, WHY_GLOBAL}, {"--script-shell", SBX__V_DENY, WHY_SHELL},
    {"--shell", SBX__V_DENY, WHY_SHELL},     {"--node-options", SBX__V_DENY, WHY_NODE},
    {"--userconfig", SBX__V_DENY, WHY_CONFIG}, {"--globalconfig", SBX__V_DENY, WHY_CONFIG},
    {NULL, SBX__V_NONE, NULL},
};

static const struct pm_cmd pnpm_cmds[] = {
    {"install", PM_INSTALL}, {"i", PM_INSTALL}, {"run", PM_RUN}, {"run-script", PM_RUN},
    {"test", PM_TEST},       {"t", PM_TEST},    {NULL, PM_INSTALL},
};

static const struct pm_opt pnpm_opts[] = {
    {"--frozen-lockfile", SBX__V_NONE, NULL}, {"--ignore-scripts", SBX__V_NONE, NULL},
    {"--prefer-offline", SBX__V_NONE, NULL},  {"--offline", SBX__V_NONE, NULL},
    {"--prod", SBX__V_NONE, NULL},            {"--silent", SBX__V_NONE, NULL},
    {"-s", SBX__V_NONE, NULL},                {"--version", SBX__V_NONE, NULL},
    {"-v", SBX__V_NONE, NULL},                {"--if-present", SBX__V_NONE, NULL},
    {"--reporter", SBX__V_TEXT, NULL},        {"--registry", SBX__V_TEXT, NULL},
    {"--loglevel", SBX__V_TEXT, NULL},        {"--store-dir", SBX__V_PATH, NULL},
    {"--dir", SBX__V_OPT, NULL},              {"-C", SBX__V_OPT, NULL},
    {"--global", SBX__V_DENY, WHY_GLOBAL},    {"-g", SBX__V_DENY, WHY_GLOBAL},
    {"--global-dir", SBX__V_DENY, WHY_GLOBAL}, {"--script-shell", SBX__V_DENY, WHY_SHELL},
    {"--shell-emulator", SBX__V_DENY, WHY_SHELL}, {"--node-options", SBX__V_DENY, WHY_NODE},
    {NULL, SBX__V_NONE, NULL},
};

static const struct pm_cmd yarn_cmds[] = {
    {"install", PM_INSTALL}, {"run", PM_RUN}, {"test", PM_TEST}, {NULL, PM_INSTALL},
};

static const struct pm_opt yarn_opts[] = {
    {"--frozen-lockfile", SBX__V_NONE, NULL}, {"--immutable", SBX__V_NONE, NULL},
    {"--immutable-cache", SBX__V_NONE, NULL}, {"--check-cache", SBX__V_NONE, NULL},
    {"--ignore-scripts", SBX__V_NONE, NULL},  {"--prefer-offline", SBX__V_NONE, NULL},
    {"--offline", SBX__V_NONE, NULL},         {"--production", SBX__V_NONE, NULL},
    {"--non-interactive", SBX__V_NONE, NULL}, {"--silent", SBX__V_NONE, NULL},
    {"-s", SBX__V_NONE, NULL},                {"--version", SBX__V_NONE, NULL},
    {"-v", SBX__V_NONE, NULL},                {"--registry", SBX__V_TEXT, NULL},
    {"--network-timeout", SBX__V_TEXT, NULL}, {"--mode", SBX__V_TEXT, NULL},
    {"--cache-folder", SBX__V_PATH, NULL},    {"--modules-folder", SBX__V_PATH, NULL},
    {"--cwd", SBX__V_OPT, NULL},
    {"--global-folder", SBX__V_DENY, WHY_GLOBAL}, {"--script-shell", SBX__V_DENY, WHY_SHELL},
    {"--use-yarnrc", SBX__V_DENY, WHY_CONFIG},
    {NULL, SBX__V_NONE, NULL},
};

/* Yarn's own commands (classic and 2+) other than install, run and test: a
 * word that is one of them is that command, not a script. */
static const char *const yarn_denied[] = {
    "add", "remove", "upgrade", "up", "upgrade-interactive", "global", "link", "unlink", "publish", "pack",
    "config", "set", "plugin", "policies", "version", "versions", "npm", "workspace", "workspaces", "dedupe",
    "patch", "patch-commit", "unplug", "rebuild", "bin", "cache", "info", "why", "explain", "audit", "autoclean",
    "check", "import", "licenses", "list", "login", "logout", "outdated", "owner", "tag", "team", "search",
    "generate-lock-entry", "constraints", "stage", "help", "init", "create", "dlx", "exec", "sdks", NULL,
};

static const struct pm pms[] = {
    {"npm", npm_cmds, npm_opts, true, false, NULL},
    {"pnpm", pnpm_cmds, pnpm_opts, false, false, NULL},
    {"yarn", yarn_cmds, yarn_opts, false, true, yarn_denied},
};

static const struct pm_opt *pm_find_opt(const struct pm *t, const char *a, size_t n)
{
    for (const struct pm_opt *o = t->opts; o->name; o++)
        if (strlen(o->name) == n && memcmp(o->name, a, n) == 0)
            return o;
    return NULL;
}

static const struct pm_cmd *pm_find_cmd(const struct pm *t, const char *a)
{
    for (const struct pm_cmd *k = t->cmds; k->name; k++)
        if (strcmp(k->name, a) == 0)
            return k;
    return NULL;
}

static bool in_list(const char *const *w, const char *a)
{
    for (; w && *w; w++)
        if (strcmp(*w, a) == 0)
            return true;
    return false;
}

/* Options that would swap the program running scripts, even among the
 * script's words: pnpm and yarn pass those to the script, but a version
 * that read them instead would run another shell or give node a --require.
 * (npm stops reading options at `--`, always.) */
static bool pm_never(const char *a)
{
    static const char *const never[] = {"--script-shell", "--node-options", "--shell-emulator", NULL};
    size_t n = strcspn(a, "=");
    for (const char *const *w = never; *w; w++)
        if (strlen(*w) == n && memcmp(*w, a, n) == 0)
            return true;
    return strncmp(a, "--config.", 9) == 0; /* pnpm: any setting, script-shell included */
}

/* The passes over the line (see sbx__p_pm): judge from the working
 * directory, apply the directory options, judge again from there (the
 * directory options themselves excepted: they resolve from where the tool
 * started, and were judged so). */
enum pm_pass { PASS_JUDGE, PASS_CHDIR, PASS_AFTER };

/* One option of the tool at argv[*ip]; moves *ip past its value. */
static bool pm_option(sbx__pctx *c, const struct pm *t, size_t *ip, enum pm_pass pass)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = a[1] == '-' ? strchr(a, '=') : NULL, *v;
    const struct pm_opt *o = pm_find_opt(t, a, eq ? (size_t)(eq - a) : strlen(a));
    char b[96];
    if (!o)
        return pass != PASS_CHDIR &&
               sbx__deny(c, SBX_POLICY_OPTION, "%s option \"%s\" (argument %zu) is not allowed", t->name,
                         sbx__pshow(a, b, sizeof b), i);
    if (o->role == SBX__V_DENY)
        return pass != PASS_CHDIR &&
               sbx__deny(c, SBX_POLICY_OPTION, "%s %s (argument %zu) is not allowed: it %s", t->name, o->name, i,
                         o->why);
    if (o->role == SBX__V_NONE) {
        if (eq) /* `--ignore-scripts=false` would undo what the job asked for */
            return pass != PASS_CHDIR &&
                   sbx__deny(c, SBX_POLICY_OPTION, "%s option \"%s\" (argument %zu) takes no value", t->name,
                             sbx__pshow(a, b, sizeof b), i);
        return false;
    }
    /* A next word that looks like an option is refused as the value: the
     * parsers of the three tools disagree on whether they take it. */
    if (eq) {
        v = eq + 1;
    } else if (i + 1 < c->argc && c->argv[i + 1][0] != '-') {
        v = c->argv[++*ip];
    } else {
        return pass != PASS_CHDIR &&
               sbx__deny(c, SBX_POLICY_OPTION, "%s option %s (argument %zu) has no value (give it as %s=VALUE)",
                         t->name, o->name, i, o->name);
    }
    if (pass == PASS_CHDIR)
        return o->role == SBX__V_OPT && sbx__p_chdir(c, *ip, v);
    if (o->role == SBX__V_TEXT || (o->role == SBX__V_OPT && pass == PASS_AFTER))
        return false;
    return sbx__p_file(c, *ip, v);
}

/* yarn SCRIPT and yarn run SCRIPT: yarn runs a script, else a binary of a
 * dependency by that name, and newer versions add commands we do not know;
 * a word that is a shell, an interpreter or a launcher is refused (the
 * heuristic of bun's rules), and an allowed program keeps its own rules
 * (`yarn node -e` is node's -e). npm and pnpm run only scripts. */
static bool pm_bare_script(sbx__pctx *c, const struct pm *t, size_t i)
{
    const char *a = c->argv[i];
    char b[96];
    if (!strchr(a, '/') && strcmp(a, t->name) != 0 && sbx__p_program_allowed(c, a))
        return sbx__p_run_as(c, i);
    if (!strchr(a, '/') && sbx__p_runs_programs(a))
        return sbx__deny(c, SBX_POLICY_SUBCOMMAND,
                         "%s would run the program \"%s\" (argument %zu), not a script; run it directly", t->name,
                         sbx__pshow(a, b, sizeof b), i);
    return sbx__p_generic(c, i);
}

/* One pass over the line: options of the tool (judged, or in PASS_CHDIR
 * only the directories applied), its command, and the script's words. */
static bool pm_pass(sbx__pctx *c, const struct pm *t, enum pm_pass pass)
{
    const struct pm_cmd *cmd = NULL;
    bool opts = true;    /* the tool still reads options */
    bool script = false; /* the words from here on are the script's */
    bool want_script = false;
    char b[96];
    for (size_t i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        bool judge = pass != PASS_CHDIR;
        if (opts && strcmp(a, "--") == 0) {
            /* Before the command `--` does not end the search for it, and
             * after install the words are still packages. */
            opts = false;
            script = cmd && cmd->kind != PM_INSTALL;
            continue;
        }
        if (script && a[0] == '-') {
            if (opts && t->opts_anywhere) {
                if (pm_option(c, t, &i, pass))
                    return true;
            } else if (judge && !t->opts_anywhere && pm_never(a)) {
                return sbx__deny(c, SBX_POLICY_OPTION,
                                 "%s option \"%s\" (argument %zu) is not allowed, even among the script's arguments",
                                 t->name, sbx__pshow(a, b, sizeof b), i);
            } else if (judge && sbx__p_generic(c, i)) {
                return true;
            }
            continue;
        }
        if (script) {
            if (judge && sbx__p_generic(c, i))
                return true;
            continue;
        }
        if (opts && a[0] == '-' && a[1]) {
            if (pm_option(c, t, &i, pass))
                return true;
            continue;
        }
        if (want_script) { /* run SCRIPT */
            want_script = false;
            script = true;
            if (judge && (t->bare_script ? pm_bare_script(c, t, i) : sbx__p_generic(c, i)))
                return true;
            continue;
        }
        if (cmd) { /* an operand of install: a package to add */
            if (!judge)
                continue;
            return sbx__deny(c, SBX_POLICY_SUBCOMMAND,
                             "%s %s \"%s\" (argument %zu) adds a package; only the lockfile's are installed",
                             t->name, cmd->name, sbx__pshow(a, b, sizeof b), i);
        }
        cmd = pm_find_cmd(t, a);
        if (cmd) {
            want_script = cmd->kind == PM_RUN;
            script = cmd->kind == PM_TEST;
            continue;
        }
        if (!judge)
            return false; /* the judging pass says why */
        if (!t->bare_script || in_list(t->denied, a))
            return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "%s %s (argument %zu) is not allowed", t->name,
                             sbx__pshow(a, b, sizeof b), i);
        script = true; /* yarn SCRIPT */
        if (pm_bare_script(c, t, i))
            return true;
    }
    return false;
}

/* npm, pnpm and yarn: argv[0] names one of them. The tools change into the
 * directory of --prefix, --dir or --cwd before they run a script, but npm
 * resolves its other options from where it started: every word is judged
 * from the working directory and again from that directory (the cautious
 * reading of both). */
bool sbx__p_pm(sbx__pctx *c)
{
    const struct pm *t = NULL;
    for (size_t k = 0; k < SBX__ARRAY_LEN(pms); k++)
        if (strcmp(pms[k].name, c->argv[0]) == 0)
            t = &pms[k];
    if (!t)
        return false;
    return pm_pass(c, t, PASS_JUDGE) || pm_pass(c, t, PASS_CHDIR) || pm_pass(c, t, PASS_AFTER);
}
