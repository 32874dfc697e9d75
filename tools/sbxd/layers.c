/* SPDX-License-Identifier: MIT */
/*
 * layers: the record of which isolation layers this sbxd set up, for the
 * start-up log, `sbxd --check`, and the rule that a missing layer stops sbxd
 * unless --allow-degraded says to run without it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "sbxd.h"

const char *layer_name(enum layer l)
{
    switch (l) {
    case LAYER_IDS: return "ids";
    case LAYER_SECCOMP: return "seccomp";
    case LAYER_PROC: return "proc";
    case LAYER_LIMITS: return "limits";
    case LAYER_DISK: return "disk";
    case LAYER_NET: return "network";
    case LAYER_COUNT: break;
    }
    return "?";
}

void layer_set(enum layer l, bool on, const char *fmt, ...)
{
    va_list ap;
    g.layers[l].on = on;
    g.layers[l].waived = false;
    va_start(ap, fmt);
    vsnprintf(g.layers[l].what, sizeof g.layers[l].what, fmt, ap);
    va_end(ap);
}

void layers_print(FILE *out)
{
    for (int l = 0; l < LAYER_COUNT; l++)
        fprintf(out, "  %-8s %-3s  %s\n", layer_name((enum layer)l),
                g.layers[l].on ? "on" : g.layers[l].waived ? "OFF" : "off", g.layers[l].what);
}

int layers_enforce(void)
{
    int missing = 0;
    for (int l = 0; l < LAYER_COUNT; l++) {
        if (g.layers[l].on)
            continue;
        if (g.layers[l].waived) {
            sbxd_log(LOG_WARN, "isolation layer '%s' is off as asked: %s", layer_name((enum layer)l),
                     g.layers[l].what);
            continue;
        }
        missing++;
        sbxd_log(g.cfg.allow_degraded ? LOG_WARN : LOG_ERROR, "isolation layer '%s' is off: %s",
                 layer_name((enum layer)l), g.layers[l].what);
    }
    if (missing == 0 || g.cfg.allow_degraded)
        return 0;
    fprintf(stderr, "sbxd: %d isolation layer%s cannot be set up on this host (above). Fix %s, or\n"
                    "start sbxd with --allow-degraded to run sandboxes without %s.\n",
            missing, missing > 1 ? "s" : "", missing > 1 ? "them" : "it", missing > 1 ? "them" : "it");
    return -1;
}
