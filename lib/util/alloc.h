/* SPDX-License-Identifier: MIT */
/* The one allocation wrapper of lib/, with optional fault injection for tests. */
#ifndef SBX_ALLOC_H
#define SBX_ALLOC_H

#include <stddef.h>

/* All of lib/ allocates through these, so a test build can fail any one
 * allocation (SBX_FAULT_INJECTION) and prove the error path is clean. A zero
 * size is allocated as one byte, so NULL always means out of memory. */
void *sbx__malloc(size_t n);
void *sbx__calloc(size_t count, size_t size);
void *sbx__realloc(void *p, size_t n);
char *sbx__strdup(const char *s);
char *sbx__strndup(const char *s, size_t n);
void *sbx__memdup(const void *p, size_t n);
void sbx__free(void *p);

#ifdef SBX_FAULT_INJECTION
/* Make the n-th allocation from now fail (1 = the next one); 0 turns it off and
 * clears the record of a triggered fault. */
void sbx__fault_fail_nth(long n);
/* Whether the armed fault has fired since the last sbx__fault_fail_nth(). */
int sbx__fault_triggered(void);
/* Allocations made since the last sbx__fault_fail_nth(). */
long sbx__fault_count(void);
#endif

#endif /* SBX_ALLOC_H */
