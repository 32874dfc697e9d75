/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the command policy (lib/policy*.c): its JSON loader and
 * the decisions it then makes. The input is a policy document, then,
 * after a NUL byte, NUL-separated fields: a job type ("" for none), a cwd
 * ("" for the default) and the arguments of a command. A load that fails
 * must leave the policy as it was (its decisions unchanged); a load that
 * succeeds must give the same decisions when done again; every decision is
 * allowed with no reason or denied with one and a message that fits its
 * buffer, and does not depend on the size of that buffer. Built with
 * libFuzzer by -Dfuzz=true (clang); built without it (with standalone.c)
 * it runs over the files named on its command line, which `meson test`
 * does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 24

struct verdict {
    sbx_status st;
    sbx_policy_reason reason;
    char msg[256];
};

static void decide(const sbx_policy *p, const char *job, const char *const *argv, size_t argc, const char *cwd,
                   struct verdict *v)
{
    char small[8];
    sbx_policy_reason r2;
    sbx_status st2;
    memset(v, 0, sizeof *v);
    v->st = sbx_policy_check(p, job, argc, argv, cwd, &v->reason, v->msg, sizeof v->msg);
    if (v->st == SBX_OK && v->reason != SBX_POLICY_ALLOW)
        abort();
    if (v->st == SBX_E_POLICY_DENIED && (v->reason == SBX_POLICY_ALLOW || !v->msg[0]))
        abort();
    if (v->st != SBX_OK && v->st != SBX_E_POLICY_DENIED && v->st != SBX_E_INVALID_ARG)
        abort();
    if (strnlen(v->msg, sizeof v->msg) == sizeof v->msg)
        abort();
    /* A short buffer gets the start of the same message; none gets none. */
    st2 = sbx_policy_check(p, job, argc, argv, cwd, &r2, small, sizeof small);
    if (st2 != v->st || r2 != v->reason || strnlen(small, sizeof small) == sizeof small ||
        strncmp(small, v->msg, sizeof small - 1) != 0)
        abort();
    if (sbx_policy_check(p, job, argc, argv, cwd, NULL, NULL, 0) != v->st)
        abort();
}

static void same(const struct verdict *a, const struct verdict *b)
{
    if (a->st != b->st || a->reason != b->reason || strcmp(a->msg, b->msg) != 0)
        abort();
}

/* Commands worth asking any policy about, besides the input's own. */
static const char *const fixed[][5] = {
    {"git", "clone", "https://example.com/r.git", NULL},
    {"npx", "left-pad@1.3.0", NULL},
    {"sed", "-i", "s/a/b/", "../x", NULL},
    {"node", "-e", "1", NULL},
    {"cat", "/etc/passwd", NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2), *p, *end, *json, *job = NULL, *cwd = NULL;
    const char *argv[MAX_ARGS];
    size_t argc = 0;
    sbx_policy *pol = sbx_policy_new(), *again = sbx_policy_new();
    struct verdict before, after, other;
    sbx_status st;

    if (!buf || !pol || !again)
        abort();
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    end = buf + size;
    json = buf;
    p = buf + strlen(buf);
    /* Fields after the document: job type, cwd, then argv. */
    for (int field = 0; p < end; field++) {
        char *f = ++p;
        p += strlen(p);
        if (field == 0)
            job = *f ? f : NULL;
        else if (field == 1)
            cwd = *f ? f : NULL;
        else if (argc < MAX_ARGS)
            argv[argc++] = f;
    }

    decide(pol, job, argv, argc, cwd, &before);
    st = sbx_policy_load_json(pol, json);
    if (st != SBX_OK && st != SBX_E_PARSE && st != SBX_E_INVALID_ARG)
        abort();
    if (st != SBX_OK) {
        if (!sbx_policy_last_error(pol)[0])
            abort();
        decide(pol, job, argv, argc, cwd, &after);
        same(&before, &after); /* on failure the policy is unchanged */
    } else {
        if (sbx_policy_last_error(pol)[0])
            abort();
        if (sbx_policy_load_json(again, json) != SBX_OK)
            abort();
        decide(pol, job, argv, argc, cwd, &after);
        decide(again, job, argv, argc, cwd, &other);
        same(&after, &other);
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
            size_t n = 0;
            while (fixed[i][n])
                n++;
            decide(pol, job, fixed[i], n, cwd, &after);
            decide(again, job, fixed[i], n, cwd, &other);
            same(&after, &other);
        }
    }
    sbx_policy_free(again);
    sbx_policy_free(pol);
    free(buf);
    return 0;
}
