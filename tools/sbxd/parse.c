/* SPDX-License-Identifier: MIT */
/*
 * parse: the helpers that turn the JSON of a request body into sbxd's own
 * values. They touch no server state, so the fuzz targets in tests/fuzz
 * link this file alone.
 */
#include "parse.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

static bool env_key_ok(const char *k)
{
    return *k && !strchr(k, '=');
}

/* An object of string values into KEY=VALUE; -1 with a message. */
int parse_env(json_t *j, const char *what, sbx__strlist *out, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s must be an object of strings", what);
        return -1;
    }
    json_object_foreach(j, k, v) {
        size_t n;
        char *kv;
        if (!json_is_string(v) || !env_key_ok(k)) {
            snprintf(err, errlen, "%s: '%s' must be a name without '=' with a string value", what, k);
            return -1;
        }
        n = strlen(k) + json_string_length(v) + 2;
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            snprintf(err, errlen, "%s: the value of '%s' contains a NUL byte", what, k);
            return -1;
        }
        kv = sbx__malloc(n);
        if (!kv) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(kv, n, "%s=%s", k, json_string_value(v));
        if (sbx__strlist_push_take(out, kv) != SBX_OK) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

int parse_strings(json_t *j, const char *what, sbx__strlist *out, char *err, size_t errlen)
{
    size_t i;
    json_t *v;
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_array(j)) {
        snprintf(err, errlen, "%s must be an array of strings", what);
        return -1;
    }
    json_array_foreach(j, i, v) {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
            snprintf(err, errlen, "%s[%zu] must be a string without NUL bytes", what, i);
            return -1;
        }
        if (sbx__strlist_push(out, json_string_value(v)) != SBX_OK) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

int json_get_int64(json_t *o, const char *key, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    /* JSON.stringify writes 5e3 style numbers only for huge values; accept
     * integral reals so 3000.0 from other clients is not refused. */
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* The range first: converting a double outside int64_t's is
         * undefined behaviour (a body's 1e300). */
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(int64_t)d) {
            *out = (int64_t)d;
            return 1;
        }
    }
    return -1;
}

void json_copy_key(json_t *to, json_t *from, const char *key)
{
    json_t *v = json_object_get(from, key);
    if (v && !json_is_null(v))
        json_object_set(to, key, v);
}
