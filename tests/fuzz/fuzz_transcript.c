/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the transcript loader: any bytes are loaded, verified,
 * exported and read back entry by entry, without a crash, a leak or an
 * undefined behaviour; a transcript that loads exports to bytes that load
 * again with the same verdict. Built with libFuzzer by -Dfuzz=true (clang);
 * built without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sbx_transcript *t = sbx_transcript_new(), *u;
    char *text = NULL, *x = NULL;
    size_t len = 0;
    size_t broken = SIZE_MAX, broken2 = SIZE_MAX; /* left as they are when the chain holds */
    sbx_status v, v2;
    if (!t)
        abort();
    if (sbx_transcript_load_data(t, data, size) != SBX_OK) {
        sbx_transcript_free(t);
        return 0;
    }
    v = sbx_transcript_verify(t, &broken);
    if ((v == SBX_OK) != (broken == SIZE_MAX))
        abort();
    for (size_t n = 1; n <= sbx_transcript_step_count(t) + 1; n++) {
        if (sbx_transcript_step_to_json(t, n, &x) == SBX_OK && !x)
            abort();
        sbx_free(x);
        x = NULL;
    }
    if (sbx_transcript_job_to_json(t, &x) == SBX_OK)
        sbx_free(x);
    if (sbx_transcript_save_data(t, (uint8_t **)&text, &len) != SBX_OK)
        abort();
    /* The export is the entries kept (a torn tail is not): it loads again,
     * and verifies the same way unless the tail was what broke it. */
    u = sbx_transcript_new();
    if (!u || sbx_transcript_load_data(u, (const uint8_t *)text, len) != SBX_OK)
        abort();
    v2 = sbx_transcript_verify(u, &broken2);
    if (!sbx_transcript_torn_bytes(t) && (v2 != v || broken2 != broken))
        abort();
    if (sbx_transcript_torn_bytes(u))
        abort();
    sbx_free(text);
    sbx_transcript_free(u);
    sbx_transcript_free(t);
    return 0;
}
