/* SPDX-License-Identifier: MIT */
/*
 * runtime: which Node.js and Python sandboxes really get. sbxd has no images:
 * every sandbox runs the host's /usr, so "node22" or "python3.13" in a create
 * body cannot be honoured as such. At start, the self-test sandbox runs
 * `node --version` and `python3 --version` (the binaries a sandbox command
 * finds, through the sandbox's PATH and mounts) once; the versions are kept
 * here, and a sandbox's "runtime" is named after them, as Vercel names its
 * runtimes ("node20", "python3.11").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbxd.h"

/* What the self-test sandbox runs: one "NAME VERSION-LINE" line per
 * program, "NAME -" when the sandbox has none. Only the first line of what
 * the program prints is kept. A program that hangs is stopped after 10 s
 * (by timeout(1), which every coreutils has), so sbxd's start cannot. */
const char runtime_probe_script[] =
    "nl='\n'\n"
    "t=; command -v timeout >/dev/null 2>&1 && t='timeout 10'\n"
    "for p in node python3; do\n"
    "  if command -v \"$p\" >/dev/null 2>&1; then v=$($t \"$p\" --version 2>&1 </dev/null); else v=-; fi\n"
    "  v=${v%%\"$nl\"*}\n"
    "  printf '%s %s\\n' \"$p\" \"${v:--}\"\n"
    "done\n";

/* The text after "NAME " on the line of the probe's output that starts so,
 * up to the end of that line, into buf; false when there is none. */
static bool probe_line(const char *out, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            const char *v = p + n + 1, *end = strchr(v, '\n');
            size_t vl = end ? (size_t)(end - v) : strlen(v);
            if (vl >= len)
                vl = len - 1;
            memcpy(buf, v, vl);
            buf[vl] = '\0';
            return true;
        }
    }
    return false;
}

/* A decimal number of at most 4 digits at *p, advancing past it; -1 when
 * there is none. */
static int number(const char **p)
{
    int v = 0, n = 0;
    while (isdigit((unsigned char)**p) && n < 5) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    return n == 0 || n > 4 ? -1 : v;
}

void runtime_set_probe(const char *out)
{
    char line[64]; /* as long as the versions kept */
    struct runtime_info *rt = &g.runtime;

    memset(rt, 0, sizeof *rt);
    rt->probed = out != NULL;
    if (!out)
        return;
    /* node --version: "v20.20.2" */
    if (probe_line(out, "node", line, sizeof line) && strcmp(line, "-") != 0) {
        const char *p = line + (line[0] == 'v');
        int major = number(&p);
        snprintf(rt->node_version, sizeof rt->node_version, "%s", line);
        if (major > 0 && (*p == '.' || *p == '\0'))
            snprintf(rt->node, sizeof rt->node, "node%d", major);
    }
    /* python3 --version: "Python 3.11.2" */
    if (probe_line(out, "python3", line, sizeof line) && strcmp(line, "-") != 0) {
        const char *p = strncmp(line, "Python ", 7) == 0 ? line + 7 : NULL;
        int major = p ? number(&p) : -1, minor = -1;
        if (major > 0 && *p == '.') {
            p++;
            minor = number(&p);
        }
        snprintf(rt->python_version, sizeof rt->python_version, "%s", line);
        if (major > 0 && minor >= 0)
            snprintf(rt->python, sizeof rt->python, "python%d.%d", major, minor);
    }
}

static bool is_python(const char *name)
{
    return strncmp(name, "python", 6) == 0;
}

const char *runtime_provided(const char *requested)
{
    const char *name = requested ? requested : SBXD_DEFAULT_RUNTIME;
    if (is_python(name))
        return g.runtime.python[0] ? g.runtime.python : name;
    if (strncmp(name, "node", 4) == 0)
        return g.runtime.node[0] ? g.runtime.node : name;
    return name;
}

bool runtime_is_provided_name(const char *name)
{
    return name && ((g.runtime.node[0] && strcmp(name, g.runtime.node) == 0) ||
                    (g.runtime.python[0] && strcmp(name, g.runtime.python) == 0));
}

/* digits: 1 to 3 decimal digits and nothing after */
static bool all_digits(const char *p)
{
    size_t n = strspn(p, "0123456789");
    return n >= 1 && n <= 3 && p[n] == '\0';
}

bool runtime_family_name(const char *name)
{
    return name && ((strncmp(name, "node", 4) == 0 && all_digits(name + 4)) ||
                    (strncmp(name, "python3.", 8) == 0 && all_digits(name + 8)));
}

const char *runtime_missing(const char *requested)
{
    const char *name = requested ? requested : SBXD_DEFAULT_RUNTIME;
    if (!g.runtime.probed)
        return NULL;
    if (is_python(name))
        return g.runtime.python[0] ? NULL : "python3";
    if (strncmp(name, "node", 4) == 0)
        return g.runtime.node[0] ? NULL : "node";
    return NULL;
}

void runtime_log(void)
{
    const struct runtime_info *rt = &g.runtime;
    if (!rt->probed) {
        sbxd_log(LOG_WARN, "could not ask the sandbox which node and python3 it has: sandboxes answer "
                           "the runtime their create asked for");
        return;
    }
    sbxd_log(LOG_INFO, "sandboxes run the host's node (%s: runtime %s) and python3 (%s: runtime %s)",
             rt->node_version[0] ? rt->node_version : "none", rt->node[0] ? rt->node : "-",
             rt->python_version[0] ? rt->python_version : "none", rt->python[0] ? rt->python : "-");
    if (!rt->node[0])
        sbxd_log(LOG_WARN, "sandboxes have no usable node (%s): node runtimes are answered as "
                           "requested but cannot run node",
                 rt->node_version[0] ? rt->node_version : "not found in /usr");
    if (!rt->python[0])
        sbxd_log(LOG_WARN, "sandboxes have no usable python3 (%s): python runtimes are answered as "
                           "requested but cannot run python3",
                 rt->python_version[0] ? rt->python_version : "not found in /usr");
}

void runtime_print(FILE *out)
{
    const struct runtime_info *rt = &g.runtime;
    if (!rt->probed) {
        fprintf(out, "runtimes: unknown (the probe failed)\n");
        return;
    }
    fprintf(out, "runtimes: node %s (%s), python3 %s (%s)\n", rt->node[0] ? rt->node : "none",
            rt->node_version[0] ? rt->node_version : "not found",
            rt->python[0] ? rt->python : "none", rt->python_version[0] ? rt->python_version : "not found");
}
