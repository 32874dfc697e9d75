/* SPDX-License-Identifier: MIT */
/* global: process-wide state shared by the handles. */
#ifndef SBX_GLOBAL_H
#define SBX_GLOBAL_H

/* Current reference count of sbx_global_init(), for tests and handle code that
 * must know whether the library is set up. */
unsigned long sbx__global_refs(void);

#endif /* SBX_GLOBAL_H */
