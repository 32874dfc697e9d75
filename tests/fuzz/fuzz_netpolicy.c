/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the network-policy loader (lib/policy/netpolicy.c). An input
 * that starts with '@' names a preset ("@repo.clone") on its first line,
 * then gives its inputs as key=value lines; any other input is a policy in
 * the protocol's JSON form. A load that fails must leave the policy as it
 * was, with a message; one that succeeds must serialise to JSON that loads
 * again into the same policy (the serialisation is a fixed point). Built
 * with libFuzzer by -Dfuzz=true (clang); built without it (with
 * standalone.c) it runs over the files named on its command line, which
 * `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUTS 8

static char *json_of(const sbx_netpolicy *n)
{
    char *out = NULL;
    if (sbx_netpolicy_to_json(n, &out) != SBX_OK || !out)
        abort();
    return out;
}

/* A preset: "@job\nkey=value\n...". */
static sbx_status preset(sbx_netpolicy *n, char *text)
{
    const char *keys[MAX_INPUTS], *values[MAX_INPUTS];
    size_t k = 0;
    char *job = text + 1, *line = strchr(job, '\n');
    if (line)
        *line++ = '\0';
    while (line && *line && k < MAX_INPUTS) {
        char *next = strchr(line, '\n'), *eq;
        if (next)
            *next++ = '\0';
        eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            keys[k] = line;
            values[k++] = eq + 1;
        }
        line = next;
    }
    return sbx_netpolicy_load_preset(n, job, k, keys, values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *before, *after, *again;
    sbx_netpolicy *n = sbx_netpolicy_new(), *m = sbx_netpolicy_new();
    sbx_status st;
    if (!text || !n || !m)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    /* Something to keep when the load fails. */
    if (sbx_netpolicy_set_mode(n, SBX_NETPOLICY_CUSTOM) != SBX_OK ||
        sbx_netpolicy_allow_domain(n, "example.com") != SBX_OK ||
        sbx_netpolicy_inject_header(n, "api.example.com", "x-token", "t0ps3cret") != SBX_OK)
        abort();
    before = json_of(n);
    st = text[0] == '@' ? preset(n, text) : sbx_netpolicy_load_json(n, text);
    after = json_of(n);
    if (st != SBX_OK) {
        if (st != SBX_E_PARSE && st != SBX_E_INVALID_ARG)
            abort();
        if (!sbx_netpolicy_last_error(n)[0] || strcmp(before, after) != 0)
            abort(); /* on failure n is unchanged */
        if (!memmem(data, size, "t0ps3cret", 9) && strstr(sbx_netpolicy_last_error(n), "t0ps3cret"))
            abort(); /* a header value is never quoted */
    } else {
        if (sbx_netpolicy_last_error(n)[0])
            abort();
        if (sbx_netpolicy_load_json(m, after) != SBX_OK)
            abort(); /* what it writes, it reads */
        again = json_of(m);
        if (strcmp(after, again) != 0 || sbx_netpolicy_mode(m) != sbx_netpolicy_mode(n))
            abort();
        sbx_free(again);
    }
    sbx_free(before);
    sbx_free(after);
    sbx_netpolicy_free(m);
    sbx_netpolicy_free(n);
    free(text);
    return 0;
}
