/* SPDX-License-Identifier: MIT */
/* str: string lists, UTF-8 validation and secret wiping shared by every module. */
#include "util/internal.h"

#include <string.h>

#include "util/str.h"

static sbx_status strlist_grow(sbx__strlist *l)
{
    size_t cap, bytes;
    char **v;

    /* Keep a slot for the terminating NULL. */
    if (l->n + 1 < l->cap)
        return SBX_OK;
    cap = l->cap ? l->cap * 2 : 8;
    if (sbx__size_mul(cap, sizeof *v, &bytes))
        return SBX_E_NOMEM;
    v = sbx__realloc(l->v, bytes);
    if (!v)
        return SBX_E_NOMEM;
    l->v = v;
    l->cap = cap;
    return SBX_OK;
}

sbx_status sbx__strlist_push_take(sbx__strlist *l, char *s)
{
    if (strlist_grow(l) != SBX_OK) {
        sbx__free_secret(s); /* lists hold secrets too (environments) */
        return SBX_E_NOMEM;
    }
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return SBX_OK;
}

sbx_status sbx__strlist_pushn(sbx__strlist *l, const char *s, size_t n)
{
    char *d = sbx__strndup(s, n);
    if (!d)
        return SBX_E_NOMEM;
    return sbx__strlist_push_take(l, d);
}

sbx_status sbx__strlist_push(sbx__strlist *l, const char *s)
{
    char *d = sbx__strdup(s);
    if (!d)
        return SBX_E_NOMEM;
    return sbx__strlist_push_take(l, d);
}

sbx_status sbx__strlist_set(sbx__strlist *l, const char *const *argv, size_t argc)
{
    sbx__strlist tmp = SBX__STRLIST_INIT;
    for (size_t i = 0; i < argc; i++) {
        if (sbx__strlist_push(&tmp, argv[i]) != SBX_OK) {
            sbx__strlist_clear(&tmp);
            return SBX_E_NOMEM;
        }
    }
    sbx__strlist_clear(l);
    *l = tmp;
    return SBX_OK;
}

sbx_status sbx__strlist_copy(sbx__strlist *dst, const sbx__strlist *src)
{
    if (dst == src)
        return SBX_OK;
    return sbx__strlist_set(dst, (const char *const *)src->v, src->n);
}

void sbx__strlist_clear(sbx__strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        sbx__free(l->v[i]);
    sbx__free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

void sbx__strlist_wipe(sbx__strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        sbx__wipe(l->v[i], strlen(l->v[i]));
    sbx__strlist_clear(l);
}

void sbx__wipe(void *p, size_t n)
{
    if (p && n)
        explicit_bzero(p, n);
}

void sbx__free_secret(char *s)
{
    if (!s)
        return;
    sbx__wipe(s, strlen(s));
    sbx__free(s);
}

void sbx__str_scrub(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    char *p;
    if (n < 4 || !s)
        return;
    while ((p = strstr(s, secret)) != NULL) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + n, strlen(p + n) + 1);
    }
}

/* Length of the UTF-8 sequence at s[0..avail), or 0 if it is malformed. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2; cp = c & 0x1F; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; cp = c & 0x0F; min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return 0;
    }
    if (avail < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

bool sbx__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

size_t sbx__utf8_floor(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = n;
    /* Step back over at most three continuation bytes to the lead byte. */
    while (i > 0 && n - i < 3 && (p[i] & 0xC0) == 0x80)
        i--;
    if ((p[i] & 0xC0) == 0x80)
        return n; /* not UTF-8 here; a byte cut is all we can do */
    return i;
}

bool sbx__str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

sbx_status sbx__url_split_userinfo(const char *url, char **url_out, char **userpwd_out)
{
    const char *auth = strstr(url, "://"), *at = NULL, *p;
    size_t n;
    char *u, *d;
    *url_out = *userpwd_out = NULL;
    if (auth) {
        auth += 3;
        for (p = auth; *p && *p != '/' && *p != '?' && *p != '#'; p++)
            if (*p == '@')
                at = p; /* the last one: a password may hold '@' unescaped */
    }
    if (!at) {
        *url_out = sbx__strdup(url);
        return *url_out ? SBX_OK : SBX_E_NOMEM;
    }
    n = (size_t)(auth - url);
    if (!(u = sbx__malloc(n + strlen(at + 1) + 1)) || !(d = sbx__malloc((size_t)(at - auth) + 1))) {
        sbx__free(u);
        return SBX_E_NOMEM;
    }
    memcpy(u, url, n);
    strcpy(u + n, at + 1);
    for (p = auth, n = 0; p < at; p++) {
        if (*p == '%' && p + 2 < at && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
            d[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
            p += 2;
        } else {
            d[n++] = *p;
        }
    }
    d[n] = '\0';
    *url_out = u;
    *userpwd_out = d;
    return SBX_OK;
}
