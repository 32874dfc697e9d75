/* SPDX-License-Identifier: MIT */
/* Command-line conventions shared by the subcommands (cli.h): durations,
 * "did you mean", and one way to report a bad option. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "duration.h"

/* A bare number over a day is almost surely milliseconds written the old
 * way: refused with the fix rather than read as days. */
#define BARE_SECONDS_MAX 86400

int cli_parse_duration(const char *v, int64_t min_ms, int64_t *ms, char *why, size_t whylen)
{
    int64_t x;
    int bare;
    if (parse_duration(v, 1000, &x, &bare) != DURATION_OK) {
        snprintf(why, whylen, "'%s' is not a duration (300 or 300s, 250ms, 5m, 1.5h, 2d; a bare number is seconds)",
                 v ? v : "");
        return -1;
    }
    if (bare && x > BARE_SECONDS_MAX * 1000LL) {
        snprintf(why, whylen, "'%s': a bare number is seconds (that would be %.0f hours); for milliseconds write %sms",
                 v, (double)x / 3.6e6, v);
        return -1;
    }
    if (x < min_ms) {
        snprintf(why, whylen, "'%s': at least %lldms", v, (long long)min_ms);
        return -1;
    }
    *ms = x;
    return 0;
}

int cli_duration(const char *cmd, const char *opt, const char *v, int64_t min_ms, int64_t *ms)
{
    char why[300];
    if (cli_parse_duration(v, min_ms, ms, why, sizeof why) < 0)
        return cli_usage_error(cmd, "%s %s", opt, why);
    return 0;
}

/* Optimal string alignment distance (insertions, deletions, substitutions,
 * adjacent swaps), capped: words are short. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), d[33][33];
    if (la > 32 || lb > 32)
        return 99;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t c = a[i - 1] == b[j - 1] ? 0 : 1, m = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < m)
                m = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + c < m)
                m = d[i - 1][j - 1] + c;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m)
                m = d[i - 2][j - 2] + 1;
            d[i][j] = m;
        }
    return d[la][lb];
}

const char *cli_suggest(const char *word, const char *const *words, size_t n)
{
    const char *best = NULL;
    size_t best_d = 99, ties = 0, len = strlen(word), limit = len < 4 ? 1 : len < 8 ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        size_t d;
        if (!words[i] || strcmp(words[i], word) == 0)
            continue;
        /* "sand" for "sandbox": a start of a word is one step away */
        d = len >= 2 && strncmp(words[i], word, len) == 0 ? 1 : distance(word, words[i]);
        if (d < best_d) {
            best_d = d;
            best = words[i];
            ties = 0;
        } else if (d == best_d) {
            ties++;
        }
    }
    /* two words as close: suggesting one would be a guess */
    return best_d <= limit && ties == 0 ? best : NULL;
}

int cli_bad_option(const char *cmd, int argc, char **argv, const struct option *longopts)
{
    const char *arg = optind - 1 < argc && optind >= 1 ? argv[optind - 1] : "";
    char name[64];
    size_t n;
    const char *names[128];
    size_t nn = 0;
    cli_json_scan(argc, argv);
    /* A short option's letter, in the cluster getopt is in (optind has not
     * moved past it when more letters follow) or the one it just left. */
    if (optopt > 0x20 && optopt < 0x7f) {
        const char *cur = optind < argc ? argv[optind] : "";
        bool in_cur = cur[0] == '-' && cur[1] && cur[1] != '-' && strchr(cur + 1, optopt);
        bool in_arg = arg[0] == '-' && arg[1] && arg[1] != '-' && strchr(arg + 1, optopt);
        if (in_cur || in_arg)
            return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    }
    if (strncmp(arg, "--", 2) != 0)
        return cli_usage_error(cmd, "unknown option '%s'", arg);
    n = strcspn(arg + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name - 1 ? n : sizeof name - 1), arg + 2);
    for (const struct option *o = longopts; o && o->name; o++) {
        if (strcmp(o->name, name) == 0) {
            if (o->has_arg == required_argument)
                return cli_usage_error(cmd, "option '--%s' needs a value", name);
            return cli_usage_error(cmd, "option '--%s' takes no value", name);
        }
        if (nn < 128)
            names[nn++] = o->name;
    }
    /* A start of several options: getopt_long does not guess between them. */
    {
        size_t hits = 0;
        for (size_t i = 0; i < nn; i++)
            hits += strncmp(names[i], name, strlen(name)) == 0;
        if (hits > 1 && *name)
            return cli_usage_error(cmd, "option '--%s' is ambiguous (it starts %zu options)", name, hits);
    }
    {
        const char *s = cli_suggest(name, names, nn);
        if (s)
            return cli_usage_error(cmd, "unknown option '--%s' (did you mean '--%s'?)", name, s);
    }
    return cli_usage_error(cmd, "unknown option '--%s'", name);
}

const char *cli_network_policy(const char *cmd, const char *v)
{
    static const char *const modes[] = {"allow-all", "deny-all"};
    const char *s;
    if (strcmp(v, "allow-all") == 0)
        return "{\"mode\":\"allow-all\"}";
    if (strcmp(v, "deny-all") == 0)
        return "{\"mode\":\"deny-all\"}";
    if (*v == '{')
        return v; /* JSON: the API form, or the SDKs' {"allow": [...], "subnets": {...}} */
    if (strcmp(v, "deny") == 0 || strcmp(v, "none") == 0 || strcmp(v, "off") == 0)
        s = "deny-all";
    else if (strcmp(v, "allow") == 0 || strcmp(v, "all") == 0 || strcmp(v, "open") == 0)
        s = "allow-all";
    else
        s = cli_suggest(v, modes, 2);
    cli_usage_error(cmd,
                    "--network-policy '%s': allow-all, deny-all, or a JSON policy (the API's {\"mode\": ...} or "
                    "the SDK's {\"allow\": [DOMAIN...]})%s%s%s",
                    v, s ? "; did you mean '" : "", s ? s : "", s ? "'?" : "");
    return NULL;
}

int cli_subcommand(const char *cmd, int argc, char **argv, const char *usage, const char *const *subs, size_t n)
{
    const char *guess;
    char list[256] = "";
    cli_json_scan(argc, argv); /* a usage error below is then an envelope too */
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return SBXRUN_EXIT_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (argc >= 2 && strcmp(argv[1], subs[i]) == 0)
            return -1;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", subs[i]);
    }
    if (argc < 2)
        return cli_usage_error(cmd, "which subcommand? (%s)", list);
    if (argv[1][0] == '-') {
        /* sbxrun sandbox --endpoint X list: say where the option goes. */
        const char *sub = "SUBCOMMAND";
        for (int k = 2; k < argc && strcmp(sub, "SUBCOMMAND") == 0; k++)
            for (size_t i = 0; i < n; i++)
                if (strcmp(argv[k], subs[i]) == 0)
                    sub = subs[i];
        return cli_usage_error(cmd, "the subcommand (%s) comes before the options: 'sbxrun %s %s %s ...'", list, cmd,
                               sub, argv[1]);
    }
    guess = cli_suggest(argv[1], subs, n);
    return cli_usage_error(cmd, "unknown subcommand '%s' (%s)%s%s%s", argv[1], list, guess ? "; did you mean '" : "",
                           guess ? guess : "", guess ? "'?" : "");
}

int cli_number(const char *cmd, const char *opt, const char *v, long long min, long long *out)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < min)
        return cli_usage_error(cmd, "%s wants a number >= %lld, not '%s'", opt, min, v);
    *out = x;
    return 0;
}

const char *cli_json_str(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "-";
}

void cli_time_text(char *buf, size_t n, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0) {
        snprintf(buf, n, "-");
        return;
    }
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%SZ", &tm);
}

void cli_printable(char *out, size_t cap, const char *text, size_t len)
{
    size_t n = 0;
    if (!cap)
        return;
    for (size_t i = 0; i < len && n + 5 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
        else
            out[n++] = (char)c;
    }
    out[n] = '\0';
}

void cli_print_next_page(json_t *page)
{
    json_t *next = json_object_get(json_object_get(page, "pagination"), "next");
    if (json_is_string(next))
        printf("(more: --cursor %s)\n", json_string_value(next));
    else if (json_is_integer(next))
        printf("(more: --until %lld)\n", (long long)json_integer_value(next));
}
