/* SPDX-License-Identifier: MIT */
/*
 * The smallest libsbxrun program: build it against an installed library with
 *   cc main.c $(pkg-config --cflags --libs libsbxrun)
 * It checks that the headers and the loaded library agree.
 */
#include <stdio.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

int main(void)
{
    sbx_status st;

    if (strcmp(sbx_version(), SBX_VERSION_STRING) != 0) {
        fprintf(stderr, "headers are %s but the library is %s\n", SBX_VERSION_STRING, sbx_version());
        return 1;
    }
    st = sbx_global_init();
    if (st != SBX_OK) {
        fprintf(stderr, "sbx_global_init: %s (%s)\n", sbx_strerror(st), sbx_status_name(st));
        return 1;
    }
    printf("libsbxrun %s\n", sbx_version());
    sbx_global_cleanup();
    return 0;
}
