/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for sbx_patch's reader and safety check (lib/patch/): the
 * input is a diff, loaded with the default limits and again with small
 * ones. Every load answers one of the documented codes, with the verdict,
 * rule and message that go with it. A patch found safe is checked again
 * here, independently of the library: every path it names is relative,
 * non-empty, free of control bytes, has no ".." component and no ".git"
 * component in any case, and it creates or changes no symbolic link and no
 * gitlink. Its JSON parses, and the diff it saves reads back as a safe
 * patch of as many files. Built with libFuzzer by -Dfuzz=true (clang);
 * built without it (with standalone.c) it runs over the files named on its
 * command line, which `meson test` does on the seeds.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sbxrun/sbxrun.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rules, as the header states them, written again. */
static int path_is_safe(const char *path)
{
    const char *s = path, *e;
    if (!path || !*path || path[0] == '/')
        return 0;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    for (;; s = e + 1) {
        size_t n;
        e = strchr(s, '/');
        n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && memcmp(s, "..", 2) == 0)
            return 0;
        if (n == 4 && strncasecmp(s, ".git", 4) == 0)
            return 0;
        if (!e)
            break;
    }
    return 1;
}

static int is_link_mode(uint32_t mode)
{
    uint32_t type = mode & 0170000;
    return type == 0120000 || type == 0160000;
}

static void check_safe(const sbx_patch *p)
{
    size_t n = sbx_patch_file_count(p);
    if (n == 0)
        abort();
    for (size_t i = 0; i < n; i++) {
        const char *old = sbx_patch_file_old_path(p, i);
        sbx_patch_change c = sbx_patch_file_change(p, i);
        if (!path_is_safe(sbx_patch_file_path(p, i)))
            abort();
        if (old && !path_is_safe(old))
            abort();
        if (c < SBX_PATCH_ADDED || c > SBX_PATCH_COPIED)
            abort();
        if ((c == SBX_PATCH_RENAMED || c == SBX_PATCH_COPIED) && !old)
            abort();
        if (is_link_mode(sbx_patch_file_new_mode(p, i)))
            abort();
        if (c == SBX_PATCH_MODIFIED && is_link_mode(sbx_patch_file_old_mode(p, i)))
            abort();
    }
    if (sbx_patch_file_path(p, n) != NULL)
        abort();
}

/* The code, verdict, rule and message of one answer go together. */
static void check_answer(const sbx_patch *p, sbx_status st)
{
    const char *err = sbx_patch_last_error(p);
    sbx_patch_verdict v = sbx_patch_get_verdict(p);
    sbx_patch_rule r = sbx_patch_broken_rule(p);
    const char *id = sbx_patch_id(p);
    if (!err || !id)
        abort();
    switch (st) {
    case SBX_OK:
        if (err[0] || v != SBX_PATCH_SAFE || r != SBX_PATCH_RULE_NONE)
            abort();
        /* 40 hex digits; "" only where git patch-id gives none either (no
         * line starting "diff "): test_patch compares with git itself. */
        if (id[0] && (strlen(id) != 40 || strspn(id, "0123456789abcdef") != 40))
            abort();
        check_safe(p);
        break;
    case SBX_E_PATCH:
        if (!err[0] || v != SBX_PATCH_UNSAFE || r == SBX_PATCH_RULE_NONE ||
            strcmp(sbx_patch_rule_name(r), "unknown") == 0)
            abort();
        break;
    case SBX_E_PARSE:
        if (!err[0] || v != SBX_PATCH_MALFORMED || r != SBX_PATCH_RULE_NONE)
            abort();
        break;
    case SBX_E_BUDGET_EXCEEDED:
        if (!err[0] || v != SBX_PATCH_TOO_LARGE)
            abort();
        break;
    case SBX_E_NOMEM:
        if (!err[0])
            abort();
        break;
    default:
        abort(); /* INVALID_ARG and MISUSE cannot happen here; nothing else is documented */
    }
    /* Control bytes never reach a message raw. */
    for (const unsigned char *c = (const unsigned char *)err; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            abort();
}

static void check_json(sbx_patch *p)
{
    char *json = NULL;
    json_t *j;
    if (sbx_patch_to_json(p, &json) != SBX_OK || !json)
        abort();
    j = json_loads(json, 0, NULL);
    if (!j || json_array_size(json_object_get(j, "files")) != sbx_patch_file_count(p))
        abort();
    if (strcmp(json_string_value(json_object_get(j, "verdict")), sbx_patch_verdict_name(sbx_patch_get_verdict(p))) != 0)
        abort();
    json_decref(j);
    sbx_free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sbx_patch *p = sbx_patch_new(), *small = sbx_patch_new();
    sbx_status st;
    if (!p || !small)
        abort();

    st = sbx_patch_load_data(p, data, size);
    check_answer(p, st);
    check_json(p);
    if (st == SBX_OK) {
        uint8_t *out = NULL;
        size_t len = 0;
        sbx_patch *again = sbx_patch_new();
        /* No base: the check is the safety check again. */
        if (sbx_patch_check(p) != SBX_OK || sbx_patch_get_verdict(p) != SBX_PATCH_SAFE)
            abort();
        if (sbx_patch_save_data(p, &out, &len) != SBX_OK || !out || out[len] != 0)
            abort();
        if (!again || sbx_patch_load_data(again, out, len) != SBX_OK ||
            sbx_patch_file_count(again) != sbx_patch_file_count(p))
            abort();
        check_safe(again);
        sbx_patch_free(again);
        sbx_free(out);
    }
    /* A second load is refused and changes nothing. */
    if (st == SBX_OK && (sbx_patch_load_data(p, data, size) != SBX_E_MISUSE || sbx_patch_get_verdict(p) != SBX_PATCH_SAFE))
        abort();

    /* Small limits: the same answers, or over a limit. */
    if (sbx_patch_set_limits(small, size / 2 + 1, 2, 256) != SBX_OK)
        abort();
    st = sbx_patch_load_data(small, data, size);
    check_answer(small, st);
    if (st == SBX_OK && (sbx_patch_file_count(small) > 2 || size > size / 2 + 1))
        abort();

    sbx_patch_free(small);
    sbx_patch_free(p);
    return 0;
}
