/* SPDX-License-Identifier: MIT */
/*
 * main() for a fuzz target built without libFuzzer: runs the target once
 * on each file named on the command line (the seed corpus), so that
 * `meson test` checks every seed with the target's own assertions (a
 * failed one aborts).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/');
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        uint8_t *buf;
        long n;
        if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            return 2;
        }
        buf = malloc((size_t)n + 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            return 2;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
    }
    printf("%s: %d inputs, every check held\n", name ? name + 1 : argv[0], argc - 1);
    return 0;
}
