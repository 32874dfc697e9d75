/* SPDX-License-Identifier: MIT */
/* engine: the libcurl side of the library (the only module that includes curl). */
#ifndef SBX_ENGINE_H
#define SBX_ENGINE_H

#include <sbxrun/common.h>

/* Process-wide set-up and tear-down of libcurl, called by sbx_global_init()
 * and sbx_global_cleanup() under their lock. */
sbx_status sbx__engine_global_init(void);
void sbx__engine_global_cleanup(void);

#endif /* SBX_ENGINE_H */
