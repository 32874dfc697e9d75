/* SPDX-License-Identifier: MIT */
/* global: the library version and the reference-counted process-wide init. */
#include "util/internal.h"

#include <pthread.h>

#include "client/engine.h"
#include "client/global.h"

const char *sbx_version(void)
{
    return SBX_VERSION_STRING;
}

uint32_t sbx_version_num(void)
{
    return SBX_VERSION_NUM;
}

/* Each module with process-wide state registers here; they are set up in
 * order and torn down in reverse. */
static const struct {
    sbx_status (*init)(void);
    void (*cleanup)(void);
} modules[] = {
    {sbx__engine_global_init, sbx__engine_global_cleanup},
};

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long global_refs;

sbx_status sbx_global_init(void)
{
    sbx_status st = SBX_OK;
    size_t done = 0;

    pthread_mutex_lock(&global_lock);
    if (global_refs == 0) {
        for (; done < SBX__ARRAY_LEN(modules); done++) {
            st = modules[done].init();
            if (st != SBX_OK)
                break;
        }
        if (st != SBX_OK) {
            while (done-- > 0)
                modules[done].cleanup();
        }
    }
    if (st == SBX_OK)
        global_refs++;
    pthread_mutex_unlock(&global_lock);
    return st;
}

sbx_status sbx_global_cleanup(void)
{
    sbx_status st = SBX_OK;

    pthread_mutex_lock(&global_lock);
    if (global_refs == 0) {
        st = SBX_E_MISUSE;
    } else if (--global_refs == 0) {
        for (size_t i = SBX__ARRAY_LEN(modules); i-- > 0;)
            modules[i].cleanup();
    }
    pthread_mutex_unlock(&global_lock);
    return st;
}

unsigned long sbx__global_refs(void)
{
    unsigned long n;
    pthread_mutex_lock(&global_lock);
    n = global_refs;
    pthread_mutex_unlock(&global_lock);
    return n;
}
