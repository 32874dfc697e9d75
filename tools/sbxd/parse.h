/* SPDX-License-Identifier: MIT */
/* parse: the pure helpers that read the JSON of request bodies (no server state). */
#ifndef SBXD_PARSE_H
#define SBXD_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/str.h"

/* An object of string values into KEY=VALUE entries appended to out; absent
 * (NULL) or null adds nothing. 0, or -1 with a message in err. */
int parse_env(json_t *j, const char *what, sbx__strlist *out, char *err, size_t errlen);
/* An array of strings without NUL bytes appended to out; absent or null adds
 * nothing. 0, or -1 with a message in err. */
int parse_strings(json_t *j, const char *what, sbx__strlist *out, char *err, size_t errlen);
/* The integer at key (an integral real is taken too): 1 found, 0 absent,
 * -1 wrong type. */
int json_get_int64(json_t *o, const char *key, int64_t *out);
/* to[key] = from[key] when that is present and not null. */
void json_copy_key(json_t *to, json_t *from, const char *key);

#endif /* SBXD_PARSE_H */
