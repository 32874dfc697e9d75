/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the JWT claims reader (lib/client/auth.c), which decodes the
 * payload of an OIDC token from the environment without verifying it. The
 * input is read twice: as a token of its own, and as the payload of a
 * token this harness encodes (base64url, with and without padding). The
 * encoded one must decode to exactly the input: its claims are read iff
 * the input is a JSON object, and equal that object's owner_id and
 * project_id strings. Built with libFuzzer by -Dfuzz=true (clang); built
 * without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/auth.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *encode(const uint8_t *p, size_t n, bool pad)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc(n / 3 * 4 + 16), *o = out;
    size_t i = 0;
    if (!out)
        abort();
    memcpy(o, "eyJ9.", 5);
    o += 5;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = a[v >> 18];
        *o++ = a[v >> 12 & 63];
        *o++ = a[v >> 6 & 63];
        *o++ = a[v & 63];
    }
    if (n - i == 1) {
        *o++ = a[p[i] >> 2];
        *o++ = a[(p[i] & 3) << 4];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 8 | p[i + 1];
        *o++ = a[v >> 10];
        *o++ = a[v >> 4 & 63];
        *o++ = a[(v & 15) << 2];
        if (pad)
            *o++ = '=';
    }
    memcpy(o, ".sig", 5);
    return out;
}

static bool same_claim(json_t *j, const char *key, const char *got)
{
    const char *want = json_string_value(json_object_get(j, key));
    return want ? got && strcmp(want, got) == 0 : !got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *owner, *project;
    int64_t exp;
    sbx_status st;
    json_t *j;
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    st = sbx__jwt_claims(text, &owner, &project, &exp);
    if (st != SBX_OK && (st != SBX_E_PARSE || owner || project))
        abort();
    sbx__free(owner);
    sbx__free(project);
    free(text);

    j = json_loadb((const char *)data, size, 0, NULL);
    for (int pad = 0; pad < 2; pad++) {
        char *jwt = encode(data, size, pad);
        st = sbx__jwt_claims(jwt, &owner, &project, &exp);
        if ((st == SBX_OK) != json_is_object(j))
            abort(); /* the payload decoded to other bytes than encoded */
        if (st == SBX_OK && (!same_claim(j, "owner_id", owner) || !same_claim(j, "project_id", project)))
            abort();
        sbx__free(owner);
        sbx__free(project);
        free(jwt);
    }
    json_decref(j);
    return 0;
}
