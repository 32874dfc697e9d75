/* SPDX-License-Identifier: MIT */
/* Small string helpers: string lists, UTF-8 checks, wiping secrets. */
#ifndef SBX_STR_H
#define SBX_STR_H

#include <stdbool.h>
#include <stddef.h>

#include <sbxrun/common.h>

/* A list of owned strings, kept NULL-terminated so `v` can serve as an argv.
 * Zero-initialised = empty. */
typedef struct sbx__strlist {
    char **v;
    size_t n;
    size_t cap;
} sbx__strlist;

#define SBX__STRLIST_INIT {NULL, 0, 0}

/* Append a copy of s. */
sbx_status sbx__strlist_push(sbx__strlist *l, const char *s);
/* Append a copy of the first n bytes of s (stops early at a NUL). */
sbx_status sbx__strlist_pushn(sbx__strlist *l, const char *s, size_t n);
/* Append s itself, taking ownership; on failure s is freed. */
sbx_status sbx__strlist_push_take(sbx__strlist *l, char *s);
/* Replace dst's contents by copies of src's; dst is unchanged on failure. */
sbx_status sbx__strlist_copy(sbx__strlist *dst, const sbx__strlist *src);
/* Replace the list by copies of argv[0..argc). */
sbx_status sbx__strlist_set(sbx__strlist *l, const char *const *argv, size_t argc);
void sbx__strlist_clear(sbx__strlist *l);
/* Like clear, but overwrites each string first (lists of secrets). */
void sbx__strlist_wipe(sbx__strlist *l);

/* Overwrite n bytes in a way the compiler may not drop. */
void sbx__wipe(void *p, size_t n);
/* Overwrite a NUL-terminated string, then free it. NULL is fine. */
void sbx__free_secret(char *s);
/* Replace every occurrence of secret in s by "***", in place (s only
 * shrinks). Secrets shorter than 4 bytes are left alone: scrubbing them
 * would mangle text that is no secret. For messages, as a last line behind
 * not putting secrets in them at all. */
void sbx__str_scrub(char *s, const char *secret);
/* Whether [s, s+n) is well-formed UTF-8 (no overlongs, surrogates, > U+10FFFF). */
bool sbx__utf8_valid(const char *s, size_t n);
/* The largest length <= n that does not split a UTF-8 sequence of s; reads
 * s[n], so s must hold at least n + 1 bytes (a terminator counts). */
size_t sbx__utf8_floor(const char *s, size_t n);
/* Whether s begins with prefix. */
bool sbx__str_starts(const char *s, const char *prefix);

/* A URL's userinfo ("user:pw@" after "://", before the host) cut out:
 * *url_out is the URL without it, *userpwd_out its percent-decoded
 * "user:pw" (NULL when there is none), so that no URL the library keeps,
 * prints or reports carries a credential. A string that is not
 * "scheme://..." is copied as it is. SBX_OK or SBX_E_NOMEM. */
sbx_status sbx__url_split_userinfo(const char *url, char **url_out, char **userpwd_out);

#endif /* SBX_STR_H */
