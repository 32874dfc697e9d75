/* SPDX-License-Identifier: MIT */
/* Command-policy rules for sed, rg, node, bun, ls and cat: which arguments
 * are files, which are text, and the options that run programs or write. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/policy_int.h"

/* ---- sed ---------------------------------------------------------------------------------- */

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Past a delimited part ending in an unescaped d; NULL when it does not
 * end. In a regex (GNU sed, as in POSIX) d inside a bracket expression does
 * not end it: `s/[/]/x/` is one command. A backslash, or d, right before the
 * ']' of a bracket is ambiguous between readings: refused (NULL). */
static const char *past_delim(const char *s, char d, bool regex)
{
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
        } else if (*s == d) {
            return s + 1;
        } else if (*s == '\n') {
            return NULL; /* GNU sed: "unterminated `s' command" */
        } else if (regex && *s == '[') {
            const char *b = s + 1;
            if (*b == '^')
                b++;
            if (*b == ']')
                b++; /* a leading ']' is literal */
            for (; *b && *b != ']'; b++) {
                if (*b == '[' && (b[1] == ':' || b[1] == '=' || b[1] == '.')) {
                    const char *e = strchr(b + 2, b[1]);
                    if (!e || e[1] != ']')
                        return NULL;
                    b = e + 1;
                } else if (*b == '\\' && (b[1] == ']' || b[1] == d)) {
                    return NULL;
                } else if (*b == '\n') {
                    return NULL;
                }
            }
            if (!*b)
                return NULL;
            s = b;
        }
    }
    return NULL;
}

/* Past one address, or s itself when there is none; NULL when malformed. */
static const char *past_addr(const char *s)
{
    if (*s >= '0' && *s <= '9') {
        while ((*s >= '0' && *s <= '9') || *s == '~')
            s++;
        return s;
    }
    if (*s == '$')
        return s + 1;
    if (*s == '/' || *s == '\\') {
        char d = *s == '\\' ? s[1] : '/';
        if (*s == '\\' && (!d || d == '\n'))
            return NULL;
        s = past_delim(s + (*s == '\\' ? 2 : 1), d, true);
        while (s && (*s == 'I' || *s == 'M'))
            s++;
        return s;
    }
    return s;
}

/* Past the text of a, i and c: to the end of the line, a backslash-newline
 * continuing it. */
static const char *past_text(const char *s)
{
    for (; *s && *s != '\n'; s++)
        if (*s == '\\' && s[1])
            s++;
    return s;
}

/* Past a label (:, b, t, T) or v's version: GNU sed ends it at whitespace
 * or ';' as well as at the end of the line; what follows is read as
 * commands. (Reading more as commands than sed does only ever refuses.) */
static const char *past_label(const char *s)
{
    s = skip_ws(s);
    while (*s && *s != '\n' && *s != ';' && *s != ' ' && *s != '\t')
        s++;
    return s;
}

/* The flags of an `s` command; NULL when allowed, else why not. */
static const char *s_flags(const char **sp)
{
    const char *s = *sp;
    for (;; s++) {
        switch (*s) {
        case 'g': case 'p': case 'i': case 'I': case 'm': case 'M':
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
            continue;
        case 'e':
            return "the s command's e flag runs the pattern space as a command";
        case 'w':
            return "the s command's w flag writes a file";
        default:
            *sp = s;
            s = skip_ws(s);
            if (*s && *s != ';' && *s != '\n' && *s != '}' && *s != '#')
                return "an s command has a flag sed does not know";
            return NULL;
        }
    }
}

/* Whether the text that ends at t (a, i or c) ends in an unescaped
 * backslash: GNU sed then continues it on the next line, which for -e is
 * the first line of the next -e (sed joins them with newlines). */
static bool continues(const char *from, const char *t)
{
    size_t n = 0;
    while (t > from && t[-1] == '\\') {
        t--;
        n++;
    }
    return n % 2 == 1;
}

/* NULL when a sed script only edits text, else why not. Anything it
 * cannot read is refused: GNU sed would read it some way we did not.
 * *carry: on entry, the script starts inside text (the previous -e ended in
 * a continued a/i/c); on return, whether this one does. */
static const char *sed_script(const char *s, bool *carry)
{
    if (*carry) {
        const char *t = past_text(s);
        *carry = !*t && continues(s, t);
        s = t;
    }
    for (;;) {
        char cmd;
        s = skip_ws(s);
        while (*s == ';' || *s == '\n' || *s == ' ' || *s == '\t')
            s++;
        if (!*s)
            return NULL;
        if (!(s = past_addr(s)))
            return "an address is not terminated";
        s = skip_ws(s);
        if (*s == ',') {
            s = skip_ws(s + 1);
            if (*s == '+' || *s == '~')
                s++;
            if (!(s = past_addr(s)))
                return "an address is not terminated";
        }
        s = skip_ws(s);
        while (*s == '!')
            s = skip_ws(s + 1);
        cmd = *s ? *s++ : '\0';
        switch (cmd) {
        case '{': case '}': case '=': case 'd': case 'D': case 'g': case 'G': case 'h': case 'H': case 'n':
        case 'N': case 'p': case 'P': case 'x': case 'z': case 'F':
            break;
        case 'q': case 'Q': case 'l': case 'L':
            s = skip_ws(s);
            while (*s >= '0' && *s <= '9')
                s++;
            break;
        case '#': /* to the end of the line: no continuation in a comment */
            while (*s && *s != '\n')
                s++;
            break;
        case 'a': case 'i': case 'c': {
            const char *t = past_text(s);
            *carry = !*t && continues(s, t);
            s = t;
            break;
        }
        case ':': case 'b': case 't': case 'T': case 'v':
            s = past_label(s);
            break;
        case 's': {
            const char *why;
            char d = *s;
            if (!d || d == '\n' || d == '\\')
                return "an s command has no delimiter";
            if (!(s = past_delim(s + 1, d, true)) || !(s = past_delim(s, d, false)))
                return "an s command is not terminated (or has a bracket expression read two ways)";
            if ((why = s_flags(&s)))
                return why;
            break;
        }
        case 'y': {
            char d = *s;
            if (!d || d == '\n' || d == '\\' || !(s = past_delim(s + 1, d, false)) || !(s = past_delim(s, d, false)))
                return "a y command is not terminated";
            break;
        }
        case 'e':
            return "the e command runs a program";
        case 'r': case 'R':
            return "the r and R commands read a file";
        case 'w': case 'W':
            return "the w and W commands write a file";
        case '\0':
            return "an address has no command";
        default:
            return "a command sed does not know";
        }
    }
}

static bool sed_check_script(sbx__pctx *c, size_t i, const char *script)
{
    const char *why = c->dry ? NULL : sed_script(script, &c->carry);
    char b[96];
    if (!why)
        return false;
    return sbx__deny(c, SBX_POLICY_SCRIPT, "sed script \"%s\" (argument %zu): %s", sbx__pshow(script, b, sizeof b),
                     i, why);
}

/* -i's suffix: with a '/', GNU sed takes it as where the backup goes. */
static bool sed_suffix(sbx__pctx *c, size_t i, const char *suffix)
{
    c->aux = suffix;
    return strchr(suffix, '/') && sbx__p_file(c, i, suffix);
}

/* A file operand of sed; with a -i suffix holding '/', GNU sed writes the
 * backup at the suffix with each '*' replaced by the operand as written
 * (or the operand followed by the suffix), resolved from the cwd. */
static bool sed_file(sbx__pctx *c, size_t i, const char *a)
{
    char path[4096];
    size_t n = 0;
    const char *sfx = c->aux;
    if (sbx__p_file(c, i, a))
        return true;
    if (!sfx || !strchr(sfx, '/'))
        return false;
    if (!strchr(sfx, '*')) {
        n = (size_t)snprintf(path, sizeof path, "%s%s", a, sfx);
    } else {
        for (; *sfx && n < sizeof path; sfx++) {
            size_t k = *sfx == '*' ? strlen(a) : 1;
            if (n + k >= sizeof path)
                break;
            memcpy(path + n, *sfx == '*' ? a : sfx, k);
            n += k;
        }
        path[n < sizeof path ? n : sizeof path - 1] = '\0';
    }
    if (n >= sizeof path - 1)
        return sbx__deny(c, SBX_POLICY_PATH_OUTSIDE, "sed -i backup of argument %zu: the path is too long", i);
    return sbx__p_file(c, i, path);
}

static const sbx__popt sed_long[] = {
    {"--expression", SBX__V_TEXT}, {"--file", SBX__V_DENY},         {"--in-place", SBX__V_OPT},
    {"--line-length", SBX__V_TEXT}, {"--null-data", SBX__V_NONE},   {"--zero-terminated", SBX__V_NONE},
    {"--quiet", SBX__V_NONE},      {"--silent", SBX__V_NONE},       {"--regexp-extended", SBX__V_NONE},
    {"--separate", SBX__V_NONE},   {"--unbuffered", SBX__V_NONE},   {"--posix", SBX__V_NONE},
    {"--debug", SBX__V_NONE},      {"--sandbox", SBX__V_NONE},      {"--follow-symlinks", SBX__V_NONE},
    {"--binary", SBX__V_NONE},     {"--help", SBX__V_NONE},         {"--version", SBX__V_NONE},
    {NULL, SBX__V_NONE},
};

/* A short-option cluster: -n -r -E -s -u -z -b are flags; -i takes the rest
 * as a suffix; -e and -l take the rest or the next word; -f is refused. */
static bool sed_short(sbx__pctx *c, size_t *ip, bool *have_script)
{
    size_t i = *ip;
    const char *a = c->argv[i];
    char b[96];
    for (size_t k = 1; a[k]; k++) {
        switch (a[k]) {
        case 'n': case 'r': case 'E': case 's': case 'u': case 'z': case 'b':
            continue;
        case 'i':
            return sed_suffix(c, i, a + k + 1);
        case 'e': case 'l': {
            const char *v = a[k + 1] ? a + k + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
            if (!v)
                return sbx__deny(c, SBX_POLICY_OPTION, "sed option -%c (argument %zu) has no value", a[k], i);
            if (a[k] == 'e') {
                *have_script = true;
                return sed_check_script(c, *ip, v);
            }
            return false;
        }
        case 'f':
            return sbx__deny(c, SBX_POLICY_OPTION, "sed -f (argument %zu) reads a script file; give the script inline", i);
        default:
            return sbx__deny(c, SBX_POLICY_OPTION, "sed option \"%s\" (argument %zu) is not known to the policy",
                             sbx__pshow(a, b, sizeof b), i);
        }
    }
    return false;
}

static bool sed_long_opt(sbx__pctx *c, size_t *ip, bool *have_script)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = strchr(a, '=');
    const sbx__popt *o = sbx__p_find(sed_long, a, eq ? (size_t)(eq - a) : strlen(a));
    char b[96];
    if (!o)
        return sbx__deny(c, SBX_POLICY_OPTION, "sed option \"%s\" (argument %zu) is not known to the policy",
                         sbx__pshow(a, b, sizeof b), i);
    if (o->role == SBX__V_DENY)
        return sbx__deny(c, SBX_POLICY_OPTION, "sed %s (argument %zu) reads a script file; give the script inline",
                         o->name, i);
    if (o->role == SBX__V_OPT)
        return eq && sed_suffix(c, i, eq + 1);
    if (o->role == SBX__V_TEXT) {
        const char *v = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
        if (!v)
            return sbx__deny(c, SBX_POLICY_OPTION, "sed option %s (argument %zu) has no value", o->name, i);
        if (strcmp(o->name, "--expression") == 0) {
            *have_script = true;
            return sed_check_script(c, *ip, v);
        }
    }
    return false;
}

/* sed and rg read the same way: options anywhere (GNU getopt and rg
 * permute), and the first operand is the script or the pattern unless an
 * option gave one, in which case every operand is a file. */
struct operands {
    bool (*long_opt)(sbx__pctx *c, size_t *ip, bool *by_option);
    bool (*short_opt)(sbx__pctx *c, size_t *ip, bool *by_option);
    bool (*first)(sbx__pctx *c, size_t i, const char *a); /* NULL: text */
    bool (*file)(sbx__pctx *c, size_t i, const char *a);  /* the other operands */
};

static bool operands_pass(sbx__pctx *c, const struct operands *r, bool by_option, bool *saw)
{
    bool first = !by_option, opts = true;
    for (size_t i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts && a[0] == '-' && a[1] == '-') {
            if (r->long_opt(c, &i, saw))
                return true;
        } else if (opts && a[0] == '-' && a[1]) {
            if (r->short_opt(c, &i, saw))
                return true;
        } else if (first) {
            first = false;
            if (r->first && r->first(c, i, a))
                return true;
        } else if (r->file(c, i, a)) {
            return true;
        }
    }
    return false;
}

/* A dry pass finds whether an option gives the script or pattern (it may
 * come after the operands), then the real one decides. */
static bool operands_check(sbx__pctx *c, const struct operands *r)
{
    sbx__pctx scan = *c;
    bool by_option = false, unused = false;
    scan.dry = true;
    operands_pass(&scan, r, false, &by_option);
    c->aux = scan.aux; /* e.g. a -i suffix given after the files */
    return operands_pass(c, r, by_option, &unused);
}

bool sbx__p_sed(sbx__pctx *c)
{
    static const struct operands r = {sed_long_opt, sed_short, sed_check_script, sed_file};
    return operands_check(c, &r);
}

/* ---- rg ----------------------------------------------------------------------------------- */

static const sbx__popt rg_long[] = {
    {"--pre", SBX__V_DENY},           {"--search-zip", SBX__V_DENY},   {"--hostname-bin", SBX__V_DENY},
    {"--regexp", SBX__V_TEXT},        {"--file", SBX__V_PATH},         {"--ignore-file", SBX__V_PATH},
    {"--after-context", SBX__V_TEXT}, {"--before-context", SBX__V_TEXT}, {"--context", SBX__V_TEXT},
    {"--context-separator", SBX__V_TEXT}, {"--colors", SBX__V_TEXT},  {"--color", SBX__V_TEXT},
    {"--dfa-size-limit", SBX__V_TEXT}, {"--encoding", SBX__V_TEXT},   {"--engine", SBX__V_TEXT},
    {"--field-context-separator", SBX__V_TEXT}, {"--field-match-separator", SBX__V_TEXT},
    {"--glob", SBX__V_TEXT},          {"--iglob", SBX__V_TEXT},        {"--max-columns", SBX__V_TEXT},
    {"--max-count", SBX__V_TEXT},     {"--max-depth", SBX__V_TEXT},    {"--maxdepth", SBX__V_TEXT},
    {"--max-filesize", SBX__V_TEXT},  {"--path-separator", SBX__V_TEXT}, {"--pre-glob", SBX__V_TEXT},
    {"--regex-size-limit", SBX__V_TEXT}, {"--replace", SBX__V_TEXT},  {"--sort", SBX__V_TEXT},
    {"--sortr", SBX__V_TEXT},         {"--threads", SBX__V_TEXT},      {"--type", SBX__V_TEXT},
    {"--type-add", SBX__V_TEXT},      {"--type-clear", SBX__V_TEXT},   {"--type-not", SBX__V_TEXT},
    {"--hyperlink-format", SBX__V_TEXT}, {"--generate", SBX__V_TEXT}, {"--sort-files", SBX__V_NONE},
    {"--files", SBX__V_NONE},
    {NULL, SBX__V_NONE},
};

/* Short options of rg that take a value (the rest of the cluster or the
 * next word); z is refused. */
static bool rg_short(sbx__pctx *c, size_t *ip, bool *have_pattern)
{
    size_t i = *ip;
    const char *a = c->argv[i];
    for (size_t k = 1; a[k]; k++) {
        const char *v;
        if (a[k] == 'z')
            return sbx__deny(c, SBX_POLICY_OPTION, "rg -z (argument %zu) runs decompression programs", i);
        if (!strchr("ABCEefgjmMrtTd", a[k]))
            continue;
        v = a[k + 1] ? a + k + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
        if (!v)
            return sbx__deny(c, SBX_POLICY_OPTION, "rg option -%c (argument %zu) has no value", a[k], i);
        if (a[k] == 'e' || a[k] == 'f')
            *have_pattern = true;
        return a[k] == 'f' && sbx__p_file(c, *ip, v);
    }
    return false;
}

static bool rg_long_opt(sbx__pctx *c, size_t *ip, bool *have_pattern)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = strchr(a, '='), *v;
    const sbx__popt *o = sbx__p_find(rg_long, a, eq ? (size_t)(eq - a) : strlen(a));
    char b[96];
    if (!o) /* a flag we do not list: its value, if any, is judged */
        return eq && sbx__p_maybe_path(c, i, eq + 1);
    if (o->role == SBX__V_DENY)
        return sbx__deny(c, SBX_POLICY_OPTION, "rg %s (argument %zu) runs other programs", o->name, i);
    if (o->role == SBX__V_NONE) {
        if (strcmp(o->name, "--files") == 0)
            *have_pattern = true; /* no pattern: every operand is a path */
        return false;
    }
    v = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
    if (!v)
        return sbx__deny(c, SBX_POLICY_OPTION, "rg option %s (argument %zu) has no value",
                         sbx__pshow(a, b, sizeof b), i);
    if (strcmp(o->name, "--regexp") == 0 || strcmp(o->name, "--file") == 0)
        *have_pattern = true;
    return o->role == SBX__V_PATH && sbx__p_file(c, *ip, v);
}

bool sbx__p_rg(sbx__pctx *c)
{
    static const struct operands r = {rg_long_opt, rg_short, NULL, sbx__p_file};
    return operands_check(c, &r);
}

/* ---- node --------------------------------------------------------------------------------- */

/* Node's options, by the role of their value. Every option node 20 lists
 * with a required value is here (`node --help`): an unlisted one would make
 * its value look like the script. */
static const sbx__popt node_long[] = {
    {"--eval", SBX__V_DENY},          {"--print", SBX__V_DENY},          {"--require", SBX__V_PATH},
    {"--import", SBX__V_PATH},        {"--loader", SBX__V_PATH},         {"--experimental-loader", SBX__V_PATH},
    {"--test-reporter", SBX__V_PATH}, {"--inspect", SBX__V_DENY},       {"--inspect-brk", SBX__V_DENY},
    {"--inspect-wait", SBX__V_DENY},  {"--inspect-port", SBX__V_DENY},  {"--debug-port", SBX__V_DENY},
    {"--inspect-publish-uid", SBX__V_DENY}, {"--interactive", SBX__V_DENY},
    /* files and directories */
    {"--snapshot-blob", SBX__V_PATH}, {"--experimental-sea-config", SBX__V_PATH}, {"--redirect-warnings", SBX__V_PATH},
    {"--env-file", SBX__V_PATH},      {"--env-file-if-exists", SBX__V_PATH}, {"--test-reporter-destination", SBX__V_PATH},
    {"--report-dir", SBX__V_PATH},    {"--report-directory", SBX__V_PATH}, {"--report-filename", SBX__V_PATH},
    {"--diagnostic-dir", SBX__V_PATH}, {"--cpu-prof-dir", SBX__V_PATH},  {"--heap-prof-dir", SBX__V_PATH},
    {"--watch-path", SBX__V_PATH},    {"--experimental-policy", SBX__V_PATH}, {"--icu-data-dir", SBX__V_PATH},
    {"--openssl-config", SBX__V_PATH}, {"--tls-keylog", SBX__V_PATH},    {"--allow-fs-read", SBX__V_PATH},
    {"--allow-fs-write", SBX__V_PATH}, {"--build-snapshot-config", SBX__V_PATH},
    {"--trace-event-file-pattern", SBX__V_PATH},
    /* text */
    {"--conditions", SBX__V_TEXT},    {"--input-type", SBX__V_TEXT},     {"--title", SBX__V_TEXT},
    {"--test-name-pattern", SBX__V_TEXT}, {"--test-skip-pattern", SBX__V_TEXT}, {"--cpu-prof-interval", SBX__V_TEXT},
    {"--cpu-prof-name", SBX__V_TEXT}, {"--disable-proto", SBX__V_TEXT},  {"--disable-warning", SBX__V_TEXT},
    {"--dns-result-order", SBX__V_TEXT}, {"--experimental-default-type", SBX__V_TEXT},
    {"--heap-prof-interval", SBX__V_TEXT}, {"--heap-prof-name", SBX__V_TEXT},
    {"--heapsnapshot-near-heap-limit", SBX__V_TEXT}, {"--heapsnapshot-signal", SBX__V_TEXT},
    {"--max-http-header-size", SBX__V_TEXT}, {"--network-family-autoselection-attempt-timeout", SBX__V_TEXT},
    {"--policy-integrity", SBX__V_TEXT}, {"--report-signal", SBX__V_TEXT}, {"--secure-heap", SBX__V_TEXT},
    {"--secure-heap-min", SBX__V_TEXT}, {"--test-concurrency", SBX__V_TEXT}, {"--test-shard", SBX__V_TEXT},
    {"--test-timeout", SBX__V_TEXT},  {"--tls-cipher-list", SBX__V_TEXT}, {"--trace-event-categories", SBX__V_TEXT},
    {"--trace-require-module", SBX__V_TEXT}, {"--unhandled-rejections", SBX__V_TEXT},
    {"--use-largepages", SBX__V_TEXT}, {"--v8-pool-size", SBX__V_TEXT}, {"--stack-size", SBX__V_TEXT},
    {"--max-old-space-size", SBX__V_TEXT}, {"--max-semi-space-size", SBX__V_TEXT},
    {NULL, SBX__V_NONE},
};

/* A module to preload: a file of the workspace (or a package resolved from
 * its node_modules), not code in a URL. */
static bool node_preload(sbx__pctx *c, size_t i, const char *v)
{
    const char *colon = strchr(v, ':'), *slash = strchr(v, '/');
    char b[96];
    if (colon && (!slash || colon < slash)) {
        if (strncasecmp(v, "node:", 5) == 0)
            return false; /* a built-in module */
        if (strncasecmp(v, "data:", 5) == 0)
            return sbx__deny(c, SBX_POLICY_SCRIPT, "node preload \"%s\" (argument %zu) is inline code",
                             sbx__pshow(v, b, sizeof b), i);
        return sbx__deny(c, SBX_POLICY_PATH_OUTSIDE,
                         "node preload \"%s\" (argument %zu) is not a file of the workspace",
                         sbx__pshow(v, b, sizeof b), i);
    }
    return sbx__p_file(c, i, v);
}

/* Node reads `_` as `-` in option names (--experimental_loader). */
static const sbx__popt *node_find(const char *a, size_t n)
{
    char name[64];
    if (n >= sizeof name)
        return NULL;
    for (size_t k = 0; k < n; k++)
        name[k] = a[k] == '_' ? '-' : a[k];
    return sbx__p_find(node_long, name, n);
}

static bool node_long_opt(sbx__pctx *c, size_t *ip)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = strchr(a, '='), *v;
    const sbx__popt *o = node_find(a, eq ? (size_t)(eq - a) : strlen(a));
    if (!o)
        return eq && sbx__p_maybe_path(c, i, eq + 1);
    if (o->role == SBX__V_DENY) {
        if (strncmp(o->name, "--inspect", 9) == 0 || strcmp(o->name, "--debug-port") == 0)
            return sbx__deny(c, SBX_POLICY_OPTION, "node %s (argument %zu) opens a debugger that runs code", o->name,
                             i);
        return sbx__deny(c, SBX_POLICY_SCRIPT, "node %s (argument %zu) runs inline code", o->name, i);
    }
    v = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
    if (!v)
        return sbx__deny(c, SBX_POLICY_OPTION, "node option %s (argument %zu) has no value", o->name, i);
    if (o->role == SBX__V_TEXT)
        return false;
    /* Options that import a module: a workspace file or a package name. */
    if (strcmp(o->name, "--require") == 0 || strcmp(o->name, "--import") == 0 || strstr(o->name, "loader") ||
        strcmp(o->name, "--test-reporter") == 0)
        return node_preload(c, *ip, v);
    if (strcmp(o->name, "--test-reporter-destination") == 0 || strcmp(o->name, "--redirect-warnings") == 0)
        return sbx__p_outfile(c, *ip, v);
    return sbx__p_file(c, *ip, v);
}

static bool node_short(sbx__pctx *c, size_t *ip)
{
    size_t i = *ip;
    const char *a = c->argv[i];
    for (size_t k = 1; a[k]; k++) {
        const char *v;
        if (a[k] == 'e' || a[k] == 'p' || a[k] == 'i')
            return sbx__deny(c, SBX_POLICY_SCRIPT, "node -%c (argument %zu) runs %s", a[k], i,
                             a[k] == 'i' ? "code from standard input" : "inline code");
        if (a[k] != 'r' && a[k] != 'C')
            continue;
        v = a[k + 1] ? a + k + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
        if (!v)
            return sbx__deny(c, SBX_POLICY_OPTION, "node option -%c (argument %zu) has no value", a[k], i);
        return a[k] == 'r' && node_preload(c, *ip, v);
    }
    return false;
}

/* Without a script node runs what standard input holds, unless it only
 * prints something or runs the test runner. */
static bool node_runs_stdin(const sbx__pctx *c)
{
    static const char *const ok[] = {"--test", "--version", "-v", "--help", "-h", "--v8-options", "-c", "--check",
                                     "--completion-bash", NULL};
    for (size_t i = 1; i < c->argc; i++)
        for (const char *const *o = ok; *o; o++)
            if (strcmp(c->argv[i], *o) == 0)
                return false;
    return true;
}

bool sbx__p_node(sbx__pctx *c)
{
    size_t i;
    for (i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-") == 0)
            return sbx__deny(c, SBX_POLICY_SCRIPT, "node - (argument %zu) runs code from standard input", i);
        if (a[0] != '-')
            break;
        if (a[1] == '-' ? node_long_opt(c, &i) : node_short(c, &i))
            return true;
    }
    if (i >= c->argc || c->argv[i][0] == '\0') { /* node '' reads standard input too */
        if (node_runs_stdin(c))
            return sbx__deny(c, SBX_POLICY_SCRIPT, "node without a script runs code from standard input");
        return false;
    }
    if (sbx__p_file(c, i, c->argv[i])) /* the script */
        return true;
    for (i++; i < c->argc; i++)
        if (sbx__p_generic(c, i))
            return true;
    return false;
}

/* ---- bun ---------------------------------------------------------------------------------- */


/* `bun run NAME` and `bun NAME` fall back to any program on PATH. A NAME
 * that is a shell, an interpreter or a program that runs others is refused:
 * a fixed list and a few patterns, a heuristic (the policy cannot know the
 * workspace's package.json scripts). */
static const char *const bun_not_scripts[] = {
    "env", "sudo", "su", "doas", "runuser", "setpriv", "capsh", "xargs", "find", "nice", "ionice", "stdbuf",
    "timeout", "nohup", "setsid", "time", "chrt", "taskset", "flock", "watch", "strace", "ltrace", "gdb",
    "chroot", "unshare", "nsenter", "script", "expect", "parallel", "busybox", "toybox", "systemd-run", "at",
    "batch", "crontab", "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "ssh", "scp", "sftp",
    "rsync", "tar", "zip", "unzip", "dd", "tee", "cp", "mv", "rm", "ln", "chmod", "chown", "install", "make",
    "npx", "npm", "pnpm", "yarn", "bunx", "bun", "deno", "tsx", "ts-node", "vim", "vi", "nano", "emacs", "less",
    "more", "man", "sqlite3", "psql", "mysql", "dc", "ex", "ed", "pnpx", "yarnpkg", "nvim", "tmux", "screen",
    "cmake", "julia", "guile", "nu", "corepack", "lldb", "gdbserver", "valgrind", "busctl", "systemctl", NULL,
};

static bool in_words(const char *const *w, const char *a)
{
    for (; *w; w++)
        if (strcmp(*w, a) == 0)
            return true;
    return false;
}

static bool interpreter_like(const char *a)
{
    static const char *const prefixes[] = {"python", "perl", "ruby", "php", "lua", "node", "deno", "tclsh", "wish",
                                           "awk", "gawk", "mawk", "nawk", "pwsh", "irb", "jruby", "R", "Rscript",
                                           "osascript", "java", "jshell", NULL};
    size_t n = strlen(a);
    if (n >= 2 && strcmp(a + n - 2, "sh") == 0)
        return true; /* sh, bash, zsh, dash, ksh, csh, tcsh, fish-like shells, pwsh */
    for (const char *const *p = prefixes; *p; p++)
        if (strncmp(a, *p, strlen(*p)) == 0)
            return true;
    return in_words(bun_not_scripts, a);
}

bool sbx__p_runs_programs(const char *word)
{
    return interpreter_like(word);
}

static const char *const bun_denied[] = {
    "create", "c", "exec", "repl", "upgrade", "add", "a", "remove", "rm", "r", "uninstall", "un", "update", "link",
    "unlink", "pm", "init", "publish", "patch", "patch-commit", "outdated", "audit", "info", "why", "completions",
    "discord", "help", NULL,
};

/* Options of bun whose value is the next word: text, a file, or a
 * directory bun changes into (--cwd, applied before anything else). */
static const sbx__popt bun_long[] = {
    {"--cwd", SBX__V_OPT},         {"--preload", SBX__V_PATH},   {"--config", SBX__V_PATH},
    {"--env-file", SBX__V_PATH},   {"--outdir", SBX__V_PATH},    {"--outfile", SBX__V_PATH},
    {"--test-name-pattern", SBX__V_TEXT}, {"--timeout", SBX__V_TEXT}, {"--define", SBX__V_TEXT},
    {"--external", SBX__V_TEXT},   {"--target", SBX__V_TEXT},    {"--format", SBX__V_TEXT},
    {"--sourcemap", SBX__V_TEXT},  {"--filter", SBX__V_TEXT},    {"--reporter", SBX__V_TEXT},
    {"--coverage-reporter", SBX__V_TEXT}, {"--parallel", SBX__V_DENY}, {"--sequential", SBX__V_DENY},
    {"--shell", SBX__V_DENY},      {"--interactive", SBX__V_DENY}, {"--inspect", SBX__V_DENY},
    {"--inspect-brk", SBX__V_DENY}, {"--inspect-wait", SBX__V_DENY}, {"--global", SBX__V_DENY},
    {NULL, SBX__V_NONE},
};

/* Inline code: --eval/--print in any form, and -e/-p anywhere in a short
 * cluster or attached (`-econsole.log(1)`), except `bun build -e PKG`
 * (--external). */
static bool bun_inline(const char *a, bool build)
{
    if (!strcmp(a, "--eval") || !strcmp(a, "--print") || !strncmp(a, "--eval=", 7) || !strncmp(a, "--print=", 8))
        return true;
    if (!strcmp(a, "-"))
        return true; /* code from standard input */
    if (a[0] != '-' || a[1] == '-' || !a[1])
        return false;
    if (build && a[1] == 'e')
        return false;
    return strchr(a + 1, 'e') != NULL || strchr(a + 1, 'p') != NULL;
}

/* A word bun may run: a script name, a file of the workspace, or (PATH
 * fallback) a program; allowed programs keep their own rules. */
static bool bun_target(sbx__pctx *c, size_t i)
{
    const char *a = c->argv[i];
    if (!strchr(a, '/') && sbx__p_program_allowed(c, a) && strcmp(a, "bun") != 0)
        return sbx__p_run_as(c, i);
    if (!strchr(a, '/') && interpreter_like(a))
        return sbx__deny(c, SBX_POLICY_SUBCOMMAND,
                         "bun would run the program \"%s\" (argument %zu) from PATH; run it directly", a, i);
    return sbx__p_file(c, i, a);
}

static bool bun_option(sbx__pctx *c, size_t *ip, const char *sub)
{
    size_t i = *ip;
    const char *a = c->argv[i], *eq = a[1] == '-' ? strchr(a, '=') : NULL, *v;
    const sbx__popt *o;
    char b[96];
    if (a[1] != '-') { /* -r FILE, -t PATTERN, -c FILE, -d TEXT; g anywhere: global */
        if (strchr(a + 1, 'g'))
            return sbx__deny(c, SBX_POLICY_OPTION, "bun %s (argument %zu) works outside the workspace",
                             sbx__pshow(a, b, sizeof b), i);
        if (strlen(a) == 2 && strchr("rtcd", a[1]) && i + 1 < c->argc) {
            (*ip)++;
            return a[1] == 'r' || a[1] == 'c' ? sbx__p_file(c, *ip, c->argv[*ip]) : false;
        }
        if (sub && !strcmp(sub, "build") && !strcmp(a, "-e") && i + 1 < c->argc)
            (*ip)++; /* --external PKG */
        return sbx__p_generic(c, i);
    }
    o = sbx__p_find(bun_long, a, eq ? (size_t)(eq - a) : strlen(a));
    if (!o)
        return sbx__p_generic(c, i);
    if (o->role == SBX__V_DENY)
        return sbx__deny(c, SBX_POLICY_OPTION, "bun %s (argument %zu) is not allowed", o->name, i);
    v = eq ? eq + 1 : (i + 1 < c->argc ? c->argv[++*ip] : NULL);
    if (!v || o->role == SBX__V_OPT) /* --cwd: applied first, see sbx__p_bun */
        return false;
    return o->role == SBX__V_PATH && sbx__p_file(c, *ip, v);
}

/* bun's own command word: the first word without a leading '-' (bun does
 * not know which options take values when it looks for it, so an option's
 * value can be the command: `bun -r exec z 'shell text'`). */
static size_t bun_command_word(const sbx__pctx *c)
{
    size_t i = 1;
    while (i < c->argc && c->argv[i][0] == '-')
        i++;
    return i;
}

/* bun applies --cwd given before the subcommand or script (read knowing
 * which options take a value; later ones belong to the script) before
 * anything else: every relative path on the line resolves from the last. */
static bool bun_cwd(sbx__pctx *c)
{
    for (size_t i = 1; i < c->argc && c->argv[i][0] == '-'; i++) {
        const char *a = c->argv[i];
        const sbx__popt *o;
        if (!strncmp(a, "--cwd=", 6) && sbx__p_chdir(c, i, a + 6))
            return true;
        if (!strcmp(a, "--cwd") && i + 1 < c->argc && sbx__p_chdir(c, i + 1, c->argv[i + 1]))
            return true;
        if (a[1] == '-' && !strchr(a, '=') && (o = sbx__p_find(bun_long, a, strlen(a))) && o->role != SBX__V_DENY)
            i++; /* its value */
        else if (a[1] != '-' && strlen(a) == 2 && strchr("rtcd", a[1]))
            i++;
    }
    return false;
}

bool sbx__p_bun(sbx__pctx *c)
{
    const char *sub = NULL;
    bool script = false; /* the words after a script are its own */
    size_t ci = bun_command_word(c);
    if (ci < c->argc && strcmp(c->argv[ci], "x") == 0)
        return sbx__p_package_exec(c, "bun x", ci + 1);
    if (ci < c->argc && in_words(bun_denied, c->argv[ci]))
        return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "bun %s (argument %zu) is not allowed", c->argv[ci], ci);
    if (bun_cwd(c))
        return true;
    for (size_t i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (!script && bun_inline(a, sub && !strcmp(sub, "build")))
            return sbx__deny(c, SBX_POLICY_SCRIPT, "bun %s (argument %zu) runs inline code", a, i);
        if (a[0] == '-' && a[1] && !script) {
            if (bun_option(c, &i, sub))
                return true;
            continue;
        }
        if (script && a[0] == '-') {
            if (sbx__p_generic(c, i))
                return true;
            continue;
        }
        if (sub == NULL) {
            sub = a;
            if (strcmp(a, "x") == 0)
                return sbx__p_package_exec(c, "bun x", i + 1);
            if (in_words(bun_denied, a))
                return sbx__deny(c, SBX_POLICY_SUBCOMMAND, "bun %s (argument %zu) is not allowed", a, i);
            if (strcmp(a, "test") && strcmp(a, "run") && strcmp(a, "install") && strcmp(a, "i") &&
                strcmp(a, "build")) {
                script = true;
                if (bun_target(c, i)) /* a file or script of the workspace */
                    return true;
            }
            continue;
        }
        if (!strcmp(sub, "run"))
            script = true;
        if (!strcmp(sub, "install") || !strcmp(sub, "i"))
            return sbx__deny(c, SBX_POLICY_SUBCOMMAND,
                             "bun %s %s (argument %zu) adds a package; only the lockfile's are installed", sub, a, i);
        /* After run (or a script), any word may be what bun runs: an option we
         * do not know could take the word before it. */
        if (strcmp(sub, "test") && strcmp(sub, "build") ? bun_target(c, i) : sbx__p_generic(c, i))
            return true;
    }
    return false;
}

/* ---- ls, cat ------------------------------------------------------------------------------ */

static const sbx__popt ls_long[] = {
    {"--ignore", SBX__V_TEXT},     {"--hide", SBX__V_TEXT},       {"--tabsize", SBX__V_TEXT},
    {"--width", SBX__V_TEXT},      {"--format", SBX__V_TEXT},     {"--color", SBX__V_TEXT},
    {"--time-style", SBX__V_TEXT}, {"--block-size", SBX__V_TEXT}, {"--quoting-style", SBX__V_TEXT},
    {"--indicator-style", SBX__V_TEXT}, {"--sort", SBX__V_TEXT},  {"--time", SBX__V_TEXT},
    {"--hyperlink", SBX__V_TEXT},  {NULL, SBX__V_NONE},
};

bool sbx__p_ls_cat(sbx__pctx *c)
{
    bool ls = strcmp(c->argv[0], "ls") == 0, opts = true;
    for (size_t i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts && a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a, '=');
            const sbx__popt *o = ls ? sbx__p_find(ls_long, a, eq ? (size_t)(eq - a) : strlen(a)) : NULL;
            if (!o) {
                if (eq && sbx__p_maybe_path(c, i, eq + 1))
                    return true;
            } else if (!eq && (strcmp(o->name, "--ignore") == 0 || strcmp(o->name, "--hide") == 0 ||
                               strcmp(o->name, "--tabsize") == 0 || strcmp(o->name, "--width") == 0)) {
                i++; /* these take the next word when not attached */
            }
        } else if (opts && a[0] == '-' && a[1]) {
            size_t k = 1;
            while (a[k] && !(ls && strchr("ITw", a[k])))
                k++;
            if (a[k] && !a[k + 1])
                i++; /* -I PATTERN, -T COLS, -w COLS */
        } else if (sbx__p_file(c, i, a)) {
            return true;
        }
    }
    return false;
}
