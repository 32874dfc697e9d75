/* SPDX-License-Identifier: MIT */
/*
 * Differential fuzz target for the redactor: the input is split into a
 * secret (first line, if 8..64 bytes) and a text; the text redacted in one
 * piece must equal the text fed in chunks of every size the input picks
 * and the text redacted without the three-byte prefilter, and the
 * registered secret must not survive. Built with libFuzzer by
 * -Dfuzz=true (clang); built without it (with standalone.c) it runs over the
 * files named on its command line, which `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "redact/redact_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *run(const sbx_redactor *r, const char *text, size_t len, size_t chunk, size_t *outlen)
{
    sbx_redact_stream *s = sbx_redact_stream_new(r);
    char *all = malloc(len * 4 + 64);
    size_t o = 0, n, cap = len * 4 + 64;
    const uint8_t *out;
    if (!s || !all)
        abort();
    for (size_t i = 0; i <= len; i += chunk) {
        size_t k = len - i < chunk ? len - i : chunk;
        if (i == len)
            break;
        if (sbx_redact_stream_feed(s, (const uint8_t *)text + i, k, &out, &n) != SBX_OK)
            abort();
        if (o + n > cap && !(all = realloc(all, cap = (o + n) * 2)))
            abort();
        memcpy(all + o, out, n);
        o += n;
    }
    if (sbx_redact_stream_finish(s, &out, &n) != SBX_OK)
        abort();
    if (o + n > cap && !(all = realloc(all, o + n)))
        abort();
    memcpy(all + o, out, n);
    *outlen = o + n;
    sbx_redact_stream_free(s);
    return all;
}

/* Whether the secret occurs in out other than inside a redaction marker:
 * a value such as "authoriza" is part of "[REDACTED:authorization]". */
static int leaked(const char *out, size_t n, const uint8_t *sec, size_t slen)
{
    for (const char *p = out; (p = memmem(p, n - (size_t)(p - out), sec, slen)) != NULL; p++) {
        size_t at = (size_t)(p - out);
        int inside = 0;
        /* every kind: "secret", then the shapes' */
        for (size_t k = 0; k <= sbx__nshapes && !inside; k++) {
            char m[64];
            size_t mlen = (size_t)snprintf(m, sizeof m, "[REDACTED:%s]", k ? sbx__shapes[k - 1].kind : "secret");
            for (size_t st = at + slen > mlen ? at + slen - mlen : 0; st <= at && st + mlen <= n && !inside; st++)
                inside = memcmp(out + st, m, mlen) == 0;
        }
        if (!inside)
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size < 65 ? size : 65);
    sbx_redactor *r = sbx_redactor_new();
    const char *text = (const char *)data;
    size_t len = size, reflen, gotlen, secret = 0;
    char *ref;
    if (!r)
        abort();
    if (nl && nl - data >= 8) {
        secret = (size_t)(nl - data);
        if (sbx_redactor_add_secret(r, data, secret) != SBX_OK)
            abort();
        text = (const char *)nl + 1;
        len = size - secret - 1;
    }
    ref = run(r, text, len, len ? len : 1, &reflen);
    if (secret && leaked(ref, reflen, data, secret))
        abort(); /* the registered value leaked */
    for (size_t chunk = 1; chunk <= 17 && chunk < len; chunk += (chunk < 4 ? 1 : 5)) {
        char *got = run(r, text, len, chunk, &gotlen);
        if (gotlen != reflen || memcmp(got, ref, reflen) != 0)
            abort(); /* the output depends on the chunking */
        free(got);
    }
    /* The same rules with the pair filter alone, and behind the AVX2
     * prefilter (where the CPU has the three-byte one, AUTO above ran
     * behind it; texts of 70 bytes and more go through a prefilter in one
     * piece). The mode holds while the value is added: adding rebuilds
     * the rules. */
    static const int modes[] = {SBX__PF_NONE, SBX__PF_AVX2};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        int pf = modes[m];
        sbx_redactor *other;
        char *got;
        atomic_store(&sbx__prefilter, pf);
        other = sbx_redactor_new();
        if (!other || (secret && sbx_redactor_add_secret(other, data, secret) != SBX_OK))
            abort();
        (void)sbx__redact_prefilter(other); /* the rules are built at first use: now, under pf */
        atomic_store(&sbx__prefilter, SBX__PF_AUTO);
        got = run(other, text, len, len ? len : 1, &gotlen);
        if (gotlen != reflen || memcmp(got, ref, reflen) != 0)
            abort(); /* the prefilter changed the output */
        free(got);
        sbx_redactor_free(other);
    }
    free(ref);
    sbx_redactor_free(r);
    return 0;
}
