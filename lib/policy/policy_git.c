/* SPDX-License-Identifier: MIT */
/* Command-policy rules for git: everyday subcommands only, configuration
 * limited to harmless keys, no helper programs, no local transports, and
 * every directory and file it is pointed at inside the workspace. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

/* Subcommands, and their short options that take a value (the rest of the
 * cluster or the next word): those in text take text, those in path a file. */
struct gsub {
    const char *name;
    const char *text, *path;
};

static const struct gsub gsubs[] = {
    {"clone", "boj", ""},     {"fetch", "jo", ""},     {"pull", "josX", ""},  {"checkout", "bBcC", ""},
    {"switch", "bBcC", ""},   {"status", "", ""},      {"diff", "SGL", "O"},  {"log", "nSGL", "O"},
    {"show", "nSGL", "O"},    {"apply", "", ""},       {"add", "", ""},       {"commit", "mCc", "Ft"},
    {"rev-parse", "", ""},    {"ls-files", "x", "X"},  {"branch", "u", ""},   {"reset", "", ""},
    {"restore", "s", ""},     {"init", "b", ""},       {"stash", "m", "O"},    {"tag", "mu", "F"},
    {"merge-base", "", ""},   {"cat-file", "", ""},    {"remote", "", ""},    {"config", "", ""},
    {NULL, NULL, NULL},
};

/* Long options of the subcommands, by the role of their value. Options not
 * listed are flags; an unlisted `--opt=value` has its value judged as a
 * path when it looks like one. */
static const sbx__popt glong[] = {
    {"--upload-pack", SBX__V_DENY},  {"--receive-pack", SBX__V_DENY}, {"--exec", SBX__V_DENY},
    {"--ext-diff", SBX__V_DENY},     {"--unsafe-paths", SBX__V_DENY}, {"--output", SBX__V_PATH},
    {"--template", SBX__V_PATH},     {"--separate-git-dir", SBX__V_PATH}, {"--reference", SBX__V_PATH},
    {"--reference-if-able", SBX__V_PATH}, {"--directory", SBX__V_PATH}, {"--file", SBX__V_PATH},
    {"--pathspec-from-file", SBX__V_PATH}, {"--exclude-from", SBX__V_PATH}, {"--orderfile", SBX__V_PATH},
    {"--message", SBX__V_TEXT},      {"--grep", SBX__V_TEXT},         {"--author", SBX__V_TEXT},
    {"--committer", SBX__V_TEXT},    {"--format", SBX__V_TEXT},       
    {"--date", SBX__V_TEXT},         {"--since", SBX__V_TEXT},        {"--until", SBX__V_TEXT},
    {"--after", SBX__V_TEXT},        {"--before", SBX__V_TEXT},       {"--trailer", SBX__V_TEXT},
    {"--depth", SBX__V_TEXT},        {"--shallow-since", SBX__V_TEXT}, {"--shallow-exclude", SBX__V_TEXT},
    {"--filter", SBX__V_TEXT},       {"--jobs", SBX__V_TEXT},         {"--branch", SBX__V_TEXT},
    {"--origin", SBX__V_TEXT},       {"--sort", SBX__V_TEXT},         {"--points-at", SBX__V_TEXT},
    {"--contains", SBX__V_TEXT},     {"--no-contains", SBX__V_TEXT},  {"--merged", SBX__V_TEXT},
    {"--no-merged", SBX__V_TEXT},    {"--set-upstream-to", SBX__V_TEXT}, {"--orphan", SBX__V_TEXT},
    {"--source", SBX__V_TEXT},       {"--diff-filter", SBX__V_TEXT},  {"--encoding", SBX__V_TEXT},
    {"--max-count", SBX__V_TEXT},    {"--skip", SBX__V_TEXT},         {"--strategy", SBX__V_TEXT},
    {"--strategy-option", SBX__V_TEXT}, {"--cleanup", SBX__V_TEXT},   
    {"--reuse-message", SBX__V_TEXT}, {"--reedit-message", SBX__V_TEXT},
    {"--whitespace", SBX__V_TEXT},   {"--exclude", SBX__V_TEXT},      {"--include", SBX__V_TEXT},
    {"--server-option", SBX__V_TEXT}, {"--initial-branch", SBX__V_TEXT}, {"--local-user", SBX__V_TEXT},
    {"--word-diff-regex", SBX__V_TEXT}, {"--exclude-per-directory", SBX__V_TEXT},
    {"--config", SBX__V_OPT}, /* clone's: a configuration key, checked as -c */
    {"--bundle-uri", SBX__V_OPT}, /* clone's: a URL, checked as a repository */
    {"--help", SBX__V_DENY},  /* runs man (or a browser) */
    {NULL, SBX__V_NONE},
};

/* Global options (before the subcommand). Unknown ones are refused: git's
 * own set is small and an unknown one could take the next word. */
static const sbx__popt gglobal[] = {
    {"-C", SBX__V_PATH},            {"--git-dir", SBX__V_PATH},        {"--work-tree", SBX__V_PATH},
    {"-c", SBX__V_OPT},             {"--config-env", SBX__V_OPT},      {"--exec-path", SBX__V_DENY},
    {"--namespace", SBX__V_TEXT},   {"--attr-source", SBX__V_TEXT},    {"--list-cmds", SBX__V_TEXT},
    {"--bare", SBX__V_NONE},        {"--no-replace-objects", SBX__V_NONE}, {"--literal-pathspecs", SBX__V_NONE},
    {"--glob-pathspecs", SBX__V_NONE}, {"--noglob-pathspecs", SBX__V_NONE}, {"--icase-pathspecs", SBX__V_NONE},
    {"--no-optional-locks", SBX__V_NONE}, {"-p", SBX__V_NONE},          {"--paginate", SBX__V_NONE},
    {"-P", SBX__V_NONE},            {"--no-pager", SBX__V_NONE},       {"--html-path", SBX__V_NONE},
    {"--man-path", SBX__V_NONE},    {"--info-path", SBX__V_NONE},      {"--version", SBX__V_NONE},
    {"--help", SBX__V_DENY},        {"--no-advice", SBX__V_NONE},      {NULL, SBX__V_NONE},
};

/* A configuration assignment (`key=value`, `key`, or for --config-env
 * `key=ENVVAR`): only keys that change nothing but presentation and
 * identity. Git compares section and key names case-insensitively. */
static bool git_config(sbx__pctx *c, size_t i, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) : strlen(kv);
    static const char *const exact[] = {"user.name", "user.email", "core.quotepath", "init.defaultbranch"};
    char b[96];
    for (size_t k = 0; k < SBX__ARRAY_LEN(exact); k++)
        if (n == strlen(exact[k]) && strncasecmp(kv, exact[k], n) == 0)
            return false;
    if ((n > 6 && strncasecmp(kv, "color.", 6) == 0) || (n > 7 && strncasecmp(kv, "advice.", 7) == 0))
        return false;
    return sbx__deny(c, SBX_POLICY_CONFIG, "git configuration \"%s\" (argument %zu) is not allowed",
                     sbx__pshow(kv, b, sizeof b), i);
}

/* A word of clone, fetch or pull (a repository, a directory, a refspec, an
 * option's value): transports that run programs or read the host are
 * refused, and the word is then judged as the path git takes it for when
 * it is not a remote. A URL or scp-style remote stays inside as a relative
 * path (`https:/github.com/a/b`); one with enough `..` is a local path that
 * escapes. We do not rely on telling which word is the repository: an option
 * git knows and we do not could move it. */
static bool git_operand(sbx__pctx *c, size_t i, const char *a)
{
    char b[96];
    size_t k = 0;
    while (isalnum((unsigned char)a[k]) || a[k] == '+' || a[k] == '.' || a[k] == '-' || a[k] == '_')
        k++;
    if (k && a[k] == ':' && a[k + 1] == ':')
        return sbx__deny(c, SBX_POLICY_TRANSPORT, "git transport \"%s\" (argument %zu) is not allowed",
                         sbx__pshow(a, b, sizeof b), i);
    if (strncasecmp(a, "file:", 5) == 0)
        return sbx__deny(c, SBX_POLICY_TRANSPORT, "git file: URL \"%s\" (argument %zu) is not allowed",
                         sbx__pshow(a, b, sizeof b), i);
    if (a[0] == '~') /* git-upload-pack expands ~ and ~user to home directories */
        return sbx__deny(c, SBX_POLICY_PATH_OUTSIDE, "argument %zu \"%s\" names a home directory outside %s", i,
                         sbx__pshow(a, b, sizeof b), SBX__WORKSPACE);
    return sbx__p_file(c, i, a);
}

/* An option's value by role; in clone, fetch and pull every value is also
 * a word that could be a repository (see git_operand). */
static bool git_value(sbx__pctx *c, size_t i, enum sbx__prole role, const char *v, bool config)
{
    if (config)
        return git_config(c, i, v);
    if (c->aux)
        return git_operand(c, i, v);
    if (role == SBX__V_PATH)
        return sbx__p_file(c, i, v);
    return false;
}

static bool git_globals(sbx__pctx *c, size_t *ip)
{
    size_t i;
    char b[96];
    for (i = 1; i < c->argc && c->argv[i][0] == '-'; i++) {
        const char *a = c->argv[i], *eq = a[1] == '-' ? strchr(a, '=') : NULL, *v;
        size_t n = eq ? (size_t)(eq - a) : (a[1] != '-' && a[1] ? 2 : strlen(a));
        const sbx__popt *o = sbx__p_find(gglobal, a, n);
        if (!o || (o->role == SBX__V_NONE && a[1] != '-' && a[2]))
            return sbx__deny(c, SBX_POLICY_OPTION, "git option \"%s\" (argument %zu) is not allowed",
                             sbx__pshow(a, b, sizeof b), i);
        if (o->role == SBX__V_DENY)
            return sbx__deny(c, SBX_POLICY_OPTION, "git %s (argument %zu) is not allowed", o->name, i);
        if (o->role == SBX__V_NONE)
            continue;
        v = eq ? eq + 1 : a[1] != '-' && a[2] ? a + 2 : (i + 1 < c->argc ? c->argv[++i] : NULL);
        if (!v)
            return sbx__deny(c, SBX_POLICY_OPTION, "git option %s (argument %zu) has no value", o->name, i);
        /* -C applies in order: later paths resolve from it. */
        if (strcmp(o->name, "-C") == 0 ? sbx__p_chdir(c, i, v) : git_value(c, i, o->role, v, o->role == SBX__V_OPT))
            return true;
    }
    *ip = i;
    /* git resolves --git-dir and --work-tree after every -C, wherever they
     * were written: judge them again from the last directory. */
    for (size_t k = 1; k < i; k++) {
        const char *a = c->argv[k];
        const char *v = !strncmp(a, "--git-dir=", 10) ? a + 10 : !strncmp(a, "--work-tree=", 12) ? a + 12
                        : (!strcmp(a, "--git-dir") || !strcmp(a, "--work-tree")) && k + 1 < i ? c->argv[k + 1]
                                                                                                : NULL;
        if (v && sbx__p_file(c, k, v))
            return true;
    }
    return false;
}

static bool fetching(const struct gsub *g)
{
    return !strcmp(g->name, "clone") || !strcmp(g->name, "fetch") || !strcmp(g->name, "pull");
}

/* A short-option cluster of a subcommand. */
static bool git_short(sbx__pctx *c, const struct gsub *g, size_t *ip)
{
    size_t i = *ip;
    const char *a = c->argv[i], *v;
    for (size_t k = 1; a[k]; k++) {
        char ch = a[k];
        bool config = ch == 'c' && strcmp(g->name, "clone") == 0;
        if (ch == 'u' && fetching(g))
            return sbx__deny(c, SBX_POLICY_OPTION, "git %s -u (argument %zu) runs another program", g->name, i);
        if (!config && !strchr(g->text, ch) && !strchr(g->path, ch))
            continue;
        v = a[k + 1] ? a + k + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
        if (!v)
            return sbx__deny(c, SBX_POLICY_OPTION, "git %s -%c (argument %zu) has no value", g->name, ch, i);
        return git_value(c, *ip, strchr(g->path, ch) ? SBX__V_PATH : SBX__V_TEXT, v, config);
    }
    return false;
}

/* git accepts any unambiguous prefix of a long option (`--upload=x` is
 * --upload-pack). We do not know all of git's options, so a prefix of one
 * whose value is a file, or that is refused, is taken as that option: the
 * cautious reading. A prefix of a text option is left a flag, so its value
 * is judged as a path (cautious too). */
static const sbx__popt *git_abbrev(const char *a, size_t n)
{
    if (n < 3)
        return NULL;
    for (const sbx__popt *o = glong; o->name; o++)
        if (o->role != SBX__V_TEXT && strlen(o->name) > n && strncmp(o->name, a, n) == 0)
            return o;
    return NULL;
}

static bool git_long(sbx__pctx *c, const struct gsub *g, size_t *ip)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = strchr(a, '='), *v;
    const sbx__popt *o = sbx__p_find(glong, a, eq ? (size_t)(eq - a) : strlen(a));
    bool config;
    if (!o)
        o = git_abbrev(a, eq ? (size_t)(eq - a) : strlen(a));
    if (!o)
        return eq && sbx__p_maybe_path(c, i, eq + 1);
    config = o->role == SBX__V_OPT && strcmp(o->name, "--config") == 0;
    if (o->role == SBX__V_DENY)
        return sbx__deny(c, SBX_POLICY_OPTION, "git %s %s (argument %zu) is not allowed", g->name, o->name, i);
    if (o->role == SBX__V_OPT && strcmp(g->name, "clone") != 0)
        return eq && sbx__p_maybe_path(c, i, eq + 1);
    v = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
    if (!v)
        return sbx__deny(c, SBX_POLICY_OPTION, "git %s %s (argument %zu) has no value", g->name, o->name, i);
    if (o->role == SBX__V_OPT && !config)
        return git_operand(c, *ip, v); /* --bundle-uri: a URL like a repository */
    return git_value(c, *ip, o->role, v, config);
}

/* `git config --get KEY [REGEX]` and `git remote get-url [--push|--all] NAME`
 * only: the other forms write configuration or run helpers. */
static bool git_read_only_forms(sbx__pctx *c, const struct gsub *g, size_t s)
{
    size_t i = s + 1;
    if (strcmp(g->name, "config") == 0) {
        if (i >= c->argc || strcmp(c->argv[i], "--get") != 0)
            return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "git config (argument %zu) may only read a key, with --get", s);
        for (i++; i < c->argc; i++)
            if (c->argv[i][0] == '-')
                return sbx__deny(c, SBX_POLICY_SUBCOMMAND,
                                 "git config --get (argument %zu) takes no further options", i);
        return false;
    }
    if (i >= c->argc || strcmp(c->argv[i], "get-url") != 0)
        return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "git remote (argument %zu) is allowed only as `remote get-url`", s);
    for (i++; i < c->argc; i++)
        if (c->argv[i][0] == '-' && strcmp(c->argv[i], "--push") && strcmp(c->argv[i], "--all"))
            return sbx__deny(c, SBX_POLICY_OPTION, "git remote get-url option (argument %zu) is not allowed", i);
    return false;
}

bool sbx__p_git(sbx__pctx *c)
{
    size_t s = 1, i;
    const struct gsub *g;
    bool opts = true, message = false;
    char b[96];
    if (git_globals(c, &s))
        return true;
    if (s >= c->argc)
        return false; /* `git`, `git --version` */
    for (g = gsubs; g->name && strcmp(g->name, c->argv[s]) != 0; g++)
        ;
    if (!g->name)
        return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "git subcommand \"%s\" (argument %zu) is not allowed",
                         sbx__pshow(c->argv[s], b, sizeof b), s);
    if (!strcmp(g->name, "config") || !strcmp(g->name, "remote"))
        return git_read_only_forms(c, g, s);
    c->aux = fetching(g) ? g->name : NULL; /* git_value: values are words too */
    for (i = s + 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (opts && (strcmp(a, "--") == 0 || strcmp(a, "--end-of-options") == 0)) {
            opts = false;
        } else if (opts && a[0] == '-' && a[1] == '-') {
            if (git_long(c, g, &i))
                return true;
        } else if (opts && a[0] == '-' && a[1]) {
            if (git_short(c, g, &i))
                return true;
        } else if (!strcmp(g->name, "stash") && (message || (i == s + 1 && !strcmp(a, "save")))) {
            message = true; /* `stash save MESSAGE`: text */
        } else if (fetching(g) ? git_operand(c, i, a) : sbx__p_file(c, i, a)) {
            return true;
        }
    }
    return false;
}
