/* SPDX-License-Identifier: MIT */
/* sbxrun redact: standard input to standard output through the redactor. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"

extern char **environ;

static const char usage_text[] =
    "usage: sbxrun redact [--secret VALUE]... [--secret-env NAME]... [--chunk-size N]\n"
    "                     [--stats] [--no-env] [--no-shapes] [--json]\n"
    "\n"
    "Copy standard input to standard output with secrets replaced by\n"
    "[REDACTED:KIND]: credential shapes (tokens of GitHub, GitLab, Slack, Stripe,\n"
    "AWS, Google, npm, OpenAI, Anthropic; JWTs; private keys; URL passwords;\n"
    "Authorization headers) and the given values, also percent-encoded,\n"
    "JSON-escaped and in base64. See doc/redact.md.\n"
    "\n"
    "  --secret VALUE     redact this value (at least 8 bytes; repeatable)\n"
    "  --secret-env NAME  redact the value of this environment variable\n"
    "  --chunk-size N     feed the redactor N bytes at a time [65536]\n"
    "  --stats            print the counts per kind to stderr (JSON) at the end\n"
    "  --no-env           do not redact the values of secret-looking variables\n"
    "  --no-shapes        redact the given values only\n"
    "  --json             print sbxrun's JSON envelope (sbxrun(1), JSON OUTPUT)\n"
    "                     instead: its result the redacted text (\"text\", or\n"
    "                     \"base64\" when it is not UTF-8) and the counts per kind\n"
    "\n"
    "By default the values (8 bytes or more) of this process's environment\n"
    "variables whose names contain TOKEN, SECRET, PASSWORD, CREDENTIAL or AUTH,\n"
    "or end in _KEY, are redacted too.\n";

enum { O_SECRET = 1, O_SECRET_ENV, O_CHUNK, O_STATS, O_NO_ENV, O_NO_SHAPES, O_JSON, O_HELP };

bool cli_secret_name(const char *name, size_t n)
{
    static const char *const parts[] = {"TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"};
    char up[256];
    if (n == 0 || n >= sizeof up)
        return false;
    for (size_t i = 0; i < n; i++)
        up[i] = (char)toupper((unsigned char)name[i]);
    up[n] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(up, parts[i]))
            return true;
    return n > 4 && strcmp(up + n - 4, "_KEY") == 0;
}

/* The values of secret-looking variables; short ones are skipped (they
 * would redact ordinary text), never an error. */
int cli_add_env_secrets(sbx_redactor *r)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len;
        if (!eq || !cli_secret_name(*e, (size_t)(eq - *e)))
            continue;
        len = strlen(eq + 1);
        if (len < 8 || len > 4096)
            continue;
        if (sbx_redactor_add_secret(r, (const uint8_t *)(eq + 1), len) == SBX_E_NOMEM) {
            fprintf(stderr, "sbxrun redact: out of memory\n");
            return SBXRUN_EXIT_CANNOT_RUN;
        }
    }
    return 0;
}

static int copy(sbx_redact_stream *s, size_t chunk, FILE *to)
{
    char *buf = malloc(chunk);
    const uint8_t *out;
    size_t n, got;
    if (!buf) {
        fprintf(stderr, "sbxrun redact: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    for (;;) {
        got = 0;
        /* Fill whole chunks, so --chunk-size is what the redactor sees. */
        while (got < chunk) {
            ssize_t k = read(STDIN_FILENO, buf + got, chunk - got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                fprintf(stderr, "sbxrun redact: reading standard input: %s\n", strerror(errno));
                free(buf);
                return SBXRUN_EXIT_CANNOT_RUN;
            }
            if (k == 0)
                break;
            got += (size_t)k;
        }
        if (got == 0)
            break;
        if (sbx_redact_stream_feed(s, (const uint8_t *)buf, got, &out, &n) != SBX_OK) {
            fprintf(stderr, "sbxrun redact: out of memory\n");
            free(buf);
            return SBXRUN_EXIT_CANNOT_RUN;
        }
        if (n && fwrite(out, 1, n, to) != n)
            break;
        if (got < chunk)
            break;
    }
    free(buf);
    if (sbx_redact_stream_finish(s, &out, &n) != SBX_OK) {
        fprintf(stderr, "sbxrun redact: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    if ((n && fwrite(out, 1, n, to) != n) || fflush(to) != 0) {
        fprintf(stderr, "sbxrun redact: writing standard output: %s\n", strerror(errno));
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    return SBXRUN_EXIT_OK;
}

static int usage_error(const char *msg, const char *arg)
{
    return cli_usage_error("redact", "%s%s", msg, arg ? arg : "");
}

/* {"base64": ...} of n bytes (NULL: out of memory). */
static json_t *base64_result(const char *p, size_t n)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *b = malloc((n + 2) / 3 * 4 + 1), *q = b;
    json_t *j;
    if (!b)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)(unsigned char)p[i] << 16 | (i + 1 < n ? (unsigned)(unsigned char)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? (unsigned char)p[i + 2] : 0);
        *q++ = al[v >> 18 & 63];
        *q++ = al[v >> 12 & 63];
        *q++ = i + 1 < n ? al[v >> 6 & 63] : '=';
        *q++ = i + 2 < n ? al[v & 63] : '=';
    }
    *q = '\0';
    j = json_pack("{s:s}", "base64", b);
    free(b);
    return j;
}

int cmd_redact(int argc, char **argv)
{
    static const struct option opts[] = {
        {"secret", required_argument, NULL, O_SECRET}, {"secret-env", required_argument, NULL, O_SECRET_ENV},
        {"chunk-size", required_argument, NULL, O_CHUNK}, {"stats", no_argument, NULL, O_STATS},
        {"no-env", no_argument, NULL, O_NO_ENV},       {"no-shapes", no_argument, NULL, O_NO_SHAPES},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, O_HELP},           {NULL, 0, NULL, 0},
    };
    sbx_redactor *r = sbx_redactor_new();
    sbx_redact_stream *s = NULL;
    bool stats = false, env = true, json = cli_json_enabled();
    char *text = NULL;
    size_t text_len = 0;
    FILE *to = stdout;
    size_t chunk = 65536;
    int o, rc = SBXRUN_EXIT_USAGE;
    char *end, *counts = NULL;

    if (!r) {
        fprintf(stderr, "sbxrun redact: out of memory\n");
        return SBXRUN_EXIT_CANNOT_RUN;
    }
    opterr = 0;
    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_SECRET:
            if (sbx_redactor_add_secret(r, (const uint8_t *)optarg, strlen(optarg)) != SBX_OK) {
                rc = usage_error("--secret: ", sbx_redactor_last_error(r));
                goto out;
            }
            break;
        case O_SECRET_ENV:
            if (sbx_redactor_add_secret_env(r, optarg) != SBX_OK) {
                rc = usage_error("--secret-env: ", sbx_redactor_last_error(r));
                goto out;
            }
            break;
        case O_CHUNK:
            errno = 0;
            chunk = (size_t)strtoull(optarg, &end, 10);
            if (errno || *end || !*optarg || optarg[0] == '-' || chunk == 0 || chunk > (64u << 20)) {
                rc = usage_error("--chunk-size wants 1 to 67108864 bytes, not ", optarg);
                goto out;
            }
            break;
        case O_STATS: stats = true; break;
        case O_NO_ENV: env = false; break;
        case O_NO_SHAPES: sbx_redactor_set_shapes(r, 0); break;
        case O_JSON: json = true; cli_json_mode(); break;
        case 'h':
        case O_HELP: fputs(usage_text, stdout); rc = SBXRUN_EXIT_OK; goto out;
        default: rc = cli_bad_option("redact", argc, argv, opts); goto out;
        }
    }
    if (optind < argc) {
        rc = usage_error("unexpected argument ", argv[optind]);
        goto out;
    }
    if (env && (rc = cli_add_env_secrets(r)) != 0)
        goto out;
    if (!(s = sbx_redact_stream_new(r))) {
        fprintf(stderr, "sbxrun redact: out of memory\n");
        rc = SBXRUN_EXIT_CANNOT_RUN;
        goto out;
    }
    /* --json: the text is the result, so it is gathered first */
    if (json && !(to = open_memstream(&text, &text_len))) {
        rc = cli_fail("redact", SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
        goto out;
    }
    rc = copy(s, chunk, to);
    if (json) {
        if (fclose(to) != 0 && rc == SBXRUN_EXIT_OK)
            rc = cli_fail("redact", SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
        to = stdout;
    }
    if (rc == SBXRUN_EXIT_OK && (stats || json) && sbx_redact_stream_counts_to_json(s, &counts) != SBX_OK) {
        rc = cli_fail("redact", SBXRUN_EXIT_CANNOT_RUN, SBX_E_NOMEM, "out of memory");
    } else if (rc == SBXRUN_EXIT_OK && json) {
        json_t *t = json_stringn(text, text_len), *res;
        /* not UTF-8 (or holding a NUL): the bytes in base64 */
        res = t && !memchr(text, '\0', text_len) ? json_pack("{s:o}", "text", t) : NULL;
        if (!res) {
            json_decref(t);
            res = base64_result(text, text_len);
        }
        if (res)
            json_object_set_new(res, "counts", cli_json_parse(counts));
        cli_json_result("redact", SBXRUN_EXIT_OK, res);
    } else if (rc == SBXRUN_EXIT_OK && stats) {
        fprintf(stderr, "%s\n", counts);
    }
out:
    sbx_free(counts);
    free(text);
    sbx_redact_stream_free(s);
    sbx_redactor_free(r);
    return rc;
}
