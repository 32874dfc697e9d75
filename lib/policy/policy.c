/* SPDX-License-Identifier: MIT */
/* The command policy: its lists, its JSON file, and the decision's common
 * rules (argv shape, encoding, workspace confinement, package execs). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "policy/policy_int.h"
#include "policy/policy_share.h"
#include "util/jobtype.h"
#include "util/str.h"

#define ARG_MAX_BYTES 131072
#define NAME_MAX_BYTES 255
#define FILE_MAX_BYTES (1u << 20)

#define NJOBS SBX__NJOB_TYPES

static const char *const default_programs[] = {"git", "bun", "node", "ls", "cat", "sed", "rg"};

/* The package managers: allowed by default only where a job installs,
 * verifies or migrates with them, never for plain commands (a NULL job
 * type) nor for the clone and patch steps, which need only git. */
static const char *const default_pm_programs[] = {"npm", "pnpm", "yarn"};
static const char *const default_pm_jobs[] = {"deps.install", "verify.lint", "verify.typecheck",
                                              "verify.test",  "verify.build", "db.migrate"};

/* One scope's lists: the base (every job type) or one job type. */
struct scope {
    sbx__strlist allow, deny, packages;
};

struct sbx_policy {
    struct scope s[1 + NJOBS]; /* [0] = base */
    sbx__err err;
};

static void scopes_clear(struct scope *s)
{
    for (size_t i = 0; i < 1 + NJOBS; i++) {
        sbx__strlist_clear(&s[i].allow);
        sbx__strlist_clear(&s[i].deny);
        sbx__strlist_clear(&s[i].packages);
    }
}

static sbx_status set_defaults(struct scope *s)
{
    for (size_t i = 0; i < SBX__ARRAY_LEN(default_programs); i++)
        if (sbx__strlist_push(&s[0].allow, default_programs[i]) != SBX_OK)
            return SBX_E_NOMEM;
    for (size_t j = 0; j < SBX__ARRAY_LEN(default_pm_jobs); j++) {
        struct scope *js = &s[1 + sbx__job_type_index(default_pm_jobs[j])];
        for (size_t i = 0; i < SBX__ARRAY_LEN(default_pm_programs); i++)
            if (sbx__strlist_push(&js->allow, default_pm_programs[i]) != SBX_OK)
                return SBX_E_NOMEM;
    }
    return SBX_OK;
}

sbx_policy *sbx_policy_new(void)
{
    sbx_policy *p = sbx__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (set_defaults(p->s) != SBX_OK) {
        sbx_policy_free(p);
        return NULL;
    }
    return p;
}

void sbx_policy_free(sbx_policy *p)
{
    if (!p)
        return;
    scopes_clear(p->s);
    sbx__err_free(&p->err);
    sbx__free(p);
}

const char *sbx_policy_last_error(const sbx_policy *p)
{
    return SBX__LAST_ERROR(p);
}

/* ---- building ----------------------------------------------------------------------------- */

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* U+0080..U+009F, in UTF-8 C2 80..C2 9F. */
static bool has_c1(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)s[0] == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f)
            return true;
    return false;
}

/* NULL when name is a valid bare program name, else why not. */
static const char *bad_program(const char *name)
{
    size_t n = strlen(name);
    if (n == 0)
        return "is empty";
    if (n > NAME_MAX_BYTES)
        return "is longer than 255 bytes";
    if (strchr(name, '/'))
        return "is not a bare name (it contains '/')";
    if (has_control(name))
        return "contains a control character";
    if (!sbx__utf8_valid(name, n))
        return "is not valid UTF-8";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "is not a program name";
    return NULL;
}

static bool pkg_name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* Length of the registry package name at the start of s (`name` or
 * `@scope/name`), 0 if s does not start with one. npm names are lowercase. */
static size_t pkg_name_len(const char *s)
{
    size_t i = 0, start;
    if (s[0] == '@') {
        for (i = 1; pkg_name_char(s[i]); i++)
            ;
        if (i == 1 || s[i] != '/')
            return 0;
        i++;
    }
    start = i;
    for (; pkg_name_char(s[i]); i++)
        ;
    if (i == start || s[start] == '.' || s[start] == '_' || i > 214)
        return 0;
    return i;
}

/* A version or range after '@': registry versions only, so no aliases
 * (`npm:`), URLs, git or file specs. */
static bool pkg_version_ok(const char *v)
{
    /* npm reads a spec starting with '.' as a folder (`eslint@..`). */
    if (!*v || *v == '.' || strstr(v, ".."))
        return false;
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if (!(isalnum(ch) || strchr(".+-^~<>=*| _x", ch)))
            return false;
    }
    return true;
}

/* Whether spec is `name` or `name@version`; *name_len receives the name's length. */
static bool pkg_spec_ok(const char *spec, size_t *name_len)
{
    size_t n = pkg_name_len(spec);
    if (!n)
        return false;
    *name_len = n;
    if (spec[n] == '\0')
        return true;
    return spec[n] == '@' && pkg_version_ok(spec + n + 1);
}

static struct scope *scope_for(sbx_policy *p, const char *job_type)
{
    int j;
    if (!job_type)
        return &p->s[0];
    j = sbx__job_type_index(job_type);
    if (j < 0) {
        sbx__err_set(&p->err, SBX_E_INVALID_ARG, "unknown job type \"%.64s\" (known: " SBX__JOB_TYPES_LIST ")",
                     job_type);
        return NULL;
    }
    return &p->s[1 + j];
}

static sbx_status add_program(sbx_policy *p, const char *job_type, const char *program, bool deny)
{
    struct scope *s;
    const char *why;
    SBX__ENTER(p, false);
    SBX__ARG(p, program, "invalid argument: program is NULL");
    if (!(s = scope_for(p, job_type)))
        return SBX_E_INVALID_ARG;
    why = bad_program(program);
    SBX__ARG(p, !why, "program name \"%.64s\" %s", program, why);
    if (sbx__strlist_push(deny ? &s->deny : &s->allow, program) != SBX_OK)
        return sbx__err_nomem(&p->err);
    return SBX_OK;
}

sbx_status sbx_policy_allow_program(sbx_policy *p, const char *job_type, const char *program)
{
    return add_program(p, job_type, program, false);
}

sbx_status sbx_policy_deny_program(sbx_policy *p, const char *job_type, const char *program)
{
    return add_program(p, job_type, program, true);
}

sbx_status sbx_policy_allow_package(sbx_policy *p, const char *job_type, const char *spec)
{
    struct scope *s;
    size_t n;
    SBX__ENTER(p, false);
    SBX__ARG(p, spec, "invalid argument: package spec is NULL");
    if (!(s = scope_for(p, job_type)))
        return SBX_E_INVALID_ARG;
    SBX__ARG(p, pkg_spec_ok(spec, &n), "package \"%.64s\" is not a registry package name with an optional @version",
             spec);
    if (sbx__strlist_push(&s->packages, spec) != SBX_OK)
        return sbx__err_nomem(&p->err);
    return SBX_OK;
}

/* ---- the JSON policy file ----------------------------------------------------------------- */

/* Loads into a scratch set of scopes; errors name the key's path. */
struct loader {
    struct scope s[1 + NJOBS];
    sbx__err *err;
};

static sbx_status load_list(struct loader *L, json_t *arr, const char *path, sbx__strlist *dst, bool packages)
{
    size_t i, n;
    json_t *v;
    if (!json_is_array(arr))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: must be an array of strings", path);
    json_array_foreach(arr, i, v) {
        const char *s = json_string_value(v), *why = NULL;
        if (!s)
            return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s[%zu]: must be a string", path, i);
        if (strlen(s) != json_string_length(v))
            return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s[%zu]: contains a NUL byte", path, i);
        if (packages && !pkg_spec_ok(s, &n))
            why = "is not a registry package name with an optional @version";
        else if (!packages)
            why = bad_program(s);
        if (why)
            return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s[%zu]: \"%.64s\" %s", path, i, s, why);
        if (sbx__strlist_push(dst, s) != SBX_OK)
            return sbx__err_nomem(L->err);
    }
    return SBX_OK;
}

/* {"programs": [...], "packages": [...]} (packages only under "allow"). */
static sbx_status load_rules(struct loader *L, json_t *o, const char *path, struct scope *s, bool allow)
{
    const char *k;
    json_t *v;
    char sub[160];
    sbx_status st;
    if (!json_is_object(o))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: must be an object", path);
    json_object_foreach(o, k, v) {
        snprintf(sub, sizeof sub, "%.100s.%.32s", path, k);
        if (strcmp(k, "programs") == 0)
            st = load_list(L, v, sub, allow ? &s->allow : &s->deny, false);
        else if (allow && strcmp(k, "packages") == 0)
            st = load_list(L, v, sub, &s->packages, true);
        else
            st = sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: unknown key (expected %s)", sub,
                              allow ? "\"programs\" or \"packages\"" : "\"programs\"");
        if (st != SBX_OK)
            return st;
    }
    return SBX_OK;
}

static sbx_status load_scope(struct loader *L, json_t *o, const char *path, struct scope *s)
{
    const char *k;
    json_t *v;
    char sub[160];
    sbx_status st;
    if (!json_is_object(o))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: must be an object", path);
    json_object_foreach(o, k, v) {
        snprintf(sub, sizeof sub, "%.100s%s%.32s", path, *path ? "." : "", k);
        if (!*path && (!strcmp(k, "version") || !strcmp(k, "extends") || !strcmp(k, "jobTypes")))
            continue; /* the document's own keys, read by load_doc */
        if (strcmp(k, "allow") == 0 || strcmp(k, "deny") == 0)
            st = load_rules(L, v, sub, s, k[0] == 'a');
        else
            st = sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: unknown key (expected \"allow\" or \"deny\")", sub);
        if (st != SBX_OK)
            return st;
    }
    return SBX_OK;
}

static sbx_status load_doc(struct loader *L, json_t *doc)
{
    json_t *v, *jt = json_object_get(doc, "jobTypes");
    const char *k, *ext;
    sbx_status st;
    char sub[160];

    if (!json_is_object(doc))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "the policy must be a JSON object");
    v = json_object_get(doc, "version");
    if (!v)
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "version: missing (this library reads version 1)");
    if (!json_is_integer(v) || json_integer_value(v) != 1)
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "version: must be 1 (the only version this library reads)");
    json_object_foreach(doc, k, v) {
        if (strcmp(k, "version") && strcmp(k, "extends") && strcmp(k, "allow") && strcmp(k, "deny") &&
            strcmp(k, "jobTypes"))
            return sbx__err_set(L->err, SBX_E_INVALID_ARG,
                                "%.64s: unknown key (expected version, extends, allow, deny, jobTypes)", k);
    }
    v = json_object_get(doc, "extends");
    ext = v ? json_string_value(v) : "default";
    if (!ext || (strcmp(ext, "default") && strcmp(ext, "none")))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "extends: must be \"default\" or \"none\"");
    if (strcmp(ext, "default") == 0 && set_defaults(L->s) != SBX_OK)
        return sbx__err_nomem(L->err);
    if ((st = load_scope(L, doc, "", &L->s[0])) != SBX_OK)
        return st;
    if (!jt)
        return SBX_OK;
    if (!json_is_object(jt))
        return sbx__err_set(L->err, SBX_E_INVALID_ARG, "jobTypes: must be an object");
    json_object_foreach(jt, k, v) {
        int j = sbx__job_type_index(k);
        snprintf(sub, sizeof sub, "jobTypes.%.64s", k);
        if (j < 0)
            return sbx__err_set(L->err, SBX_E_INVALID_ARG, "%s: unknown job type (known: " SBX__JOB_TYPES_LIST ")",
                                sub);
        if ((st = load_scope(L, v, sub, &L->s[1 + j])) != SBX_OK)
            return st;
    }
    return SBX_OK;
}

sbx_status sbx_policy_load_json(sbx_policy *p, const char *json)
{
    struct loader L;
    json_error_t je;
    json_t *doc;
    sbx_status st;
    SBX__ENTER(p, false);
    SBX__ARG(p, json, "invalid argument: json is NULL");
    doc = json_loads(json, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return sbx__err_set(&p->err, SBX_E_PARSE, "the policy is not valid JSON: line %d column %d: %s", je.line,
                            je.column, je.text);
    memset(&L, 0, sizeof L);
    L.err = &p->err;
    st = load_doc(&L, doc);
    json_decref(doc);
    if (st != SBX_OK) {
        scopes_clear(L.s);
        return st;
    }
    scopes_clear(p->s);
    memcpy(p->s, L.s, sizeof p->s);
    return SBX_OK;
}

sbx_status sbx_policy_load_file(sbx_policy *p, const char *path)
{
    char *buf;
    struct stat sb;
    ssize_t n;
    size_t got = 0;
    int fd;
    sbx_status st;
    SBX__ENTER(p, false);
    SBX__ARG(p, path, "invalid argument: path is NULL");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sbx__err_set(&p->err, SBX_E_IO, "cannot open the policy file %s: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return sbx__err_set(&p->err, SBX_E_IO, "the policy file %s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > FILE_MAX_BYTES) {
        close(fd);
        return sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the policy file %s is larger than 1 MiB", path);
    }
    if (!(buf = sbx__malloc(FILE_MAX_BYTES + 1))) {
        close(fd);
        return sbx__err_nomem(&p->err);
    }
    while ((n = read(fd, buf + got, FILE_MAX_BYTES + 1 - got)) > 0 && got + (size_t)n <= FILE_MAX_BYTES)
        got += (size_t)n;
    close(fd);
    if (n != 0) {
        st = n < 0 ? sbx__err_set(&p->err, SBX_E_IO, "cannot read the policy file %s: %s", path, strerror(errno))
                   : sbx__err_set(&p->err, SBX_E_BUDGET_EXCEEDED, "the policy file %s is larger than 1 MiB", path);
        sbx__free(buf);
        return st;
    }
    buf[got] = '\0';
    if (strlen(buf) != got)
        st = sbx__err_set(&p->err, SBX_E_PARSE, "the policy file %s contains a NUL byte", path);
    else
        st = sbx_policy_load_json(p, buf);
    sbx__free(buf);
    return st;
}

/* ---- a decision --------------------------------------------------------------------------- */

const char *sbx_policy_reason_name(sbx_policy_reason reason)
{
    static const char *const names[] = {
        "allow",     "empty_argv", "program_path", "program_not_allowed", "control_char",
        "arg_too_long", "cwd_outside", "path_outside", "subcommand",     "option",
        "config",    "transport",  "script",       "package_exec",       "encoding",
    };
    return (int)reason >= 0 && (size_t)reason < SBX__ARRAY_LEN(names) ? names[reason] : "unknown";
}

const char *sbx__pshow(const char *arg, char *buf, size_t cap)
{
    size_t o = 0, i;
    static const char hex[] = "0123456789abcdef";
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return buf;
    }
    for (i = 0; arg[i] && o + 6 < cap; i++) {
        unsigned char ch = (unsigned char)arg[i];
        if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') {
            if (ch == '"' || ch == '\\') {
                buf[o++] = '\\';
                buf[o++] = (char)ch;
            } else {
                buf[o++] = '\\';
                buf[o++] = 'x';
                buf[o++] = hex[ch >> 4];
                buf[o++] = hex[ch & 15];
            }
        } else {
            buf[o++] = (char)ch;
        }
    }
    if (arg[i]) {
        o = sbx__utf8_floor(buf, o > 3 ? o - 3 : 0);
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

bool sbx__deny(sbx__pctx *c, sbx_policy_reason r, const char *fmt, ...)
{
    va_list ap;
    if (c->dry)
        return false;
    if (c->reason != SBX_POLICY_ALLOW)
        return true;
    c->reason = r;
    if (c->cap) {
        va_start(ap, fmt);
        vsnprintf(c->msg, c->cap, fmt, ap);
        va_end(ap);
    }
    return true;
}

/* Apply the components of s to *pp (lexically: ".", "" skipped, ".." pops). */
static void ppath_walk(sbx__ppath *pp, const char *s)
{
    while (*s) {
        const char *e;
        size_t n;
        while (*s == '/')
            s++;
        e = strchr(s, '/');
        n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.')) {
            /* nothing */
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (pp->depth)
                pp->depth--;
        } else {
            if (pp->depth == 0) {
                pp->c0 = s;
                pp->l0 = n;
            } else if (pp->depth == 1) {
                pp->c1 = s;
                pp->l1 = n;
            }
            pp->depth++;
        }
        s += n;
    }
}

static bool comp_is(const char *c, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(c, want, n) == 0;
}

static bool ppath_inside(const sbx__ppath *pp)
{
    return pp->depth >= 2 && comp_is(pp->c0, pp->l0, "vercel") && comp_is(pp->c1, pp->l1, "sandbox");
}

/* /dev/null: harmless wherever a file goes. (/dev/stdout and /dev/stderr
 * only where a program writes: sbx__p_outfile; read, they run whatever the
 * output is redirected to.) */
static bool ppath_dev_null(const sbx__ppath *pp)
{
    return pp->depth == 2 && comp_is(pp->c0, pp->l0, "dev") && comp_is(pp->c1, pp->l1, "null");
}

bool sbx__p_is_url(const char *s)
{
    size_t i = 0;
    if (!isalpha((unsigned char)s[0]))
        return false;
    while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '.' || s[i] == '-')
        i++;
    return s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/';
}

bool sbx__p_pathlike(const char *s)
{
    return strchr(s, '/') != NULL || strcmp(s, "..") == 0;
}

bool sbx__p_file(sbx__pctx *c, size_t i, const char *s)
{
    sbx__ppath pp = c->cwd;
    char b[96];
    if (c->dry)
        return false;
    if (s[0] == '/')
        memset(&pp, 0, sizeof pp);
    ppath_walk(&pp, s);
    if (ppath_inside(&pp) || ppath_dev_null(&pp))
        return false;
    if (strcmp(s, c->argv[i]) == 0)
        return sbx__deny(c, SBX_POLICY_PATH_OUTSIDE, "argument %zu \"%s\" is a path outside %s", i,
                         sbx__pshow(s, b, sizeof b), SBX__WORKSPACE);
    return sbx__deny(c, SBX_POLICY_PATH_OUTSIDE, "argument %zu: \"%s\" is a path outside %s", i,
                     sbx__pshow(s, b, sizeof b), SBX__WORKSPACE);
}

bool sbx__p_outfile(sbx__pctx *c, size_t i, const char *s)
{
    if (strcmp(s, "/dev/stdout") == 0 || strcmp(s, "/dev/stderr") == 0)
        return false;
    return sbx__p_file(c, i, s);
}

bool sbx__p_chdir(sbx__pctx *c, size_t i, const char *s)
{
    if (sbx__p_file(c, i, s))
        return true;
    if (s[0] == '/')
        memset(&c->cwd, 0, sizeof c->cwd);
    ppath_walk(&c->cwd, s);
    return false;
}

bool sbx__p_maybe_path(sbx__pctx *c, size_t i, const char *s)
{
    /* A URL is judged too, as the relative path a program that does not
     * know URLs would open: `https://h/x` stays inside, `https://h/../../..`
     * does not. */
    return sbx__p_pathlike(s) && sbx__p_file(c, i, s);
}

bool sbx__p_generic(sbx__pctx *c, size_t i)
{
    const char *a = c->argv[i], *eq;
    if (a[0] == '-' && a[1] == '-' && (eq = strchr(a, '=')) != NULL)
        return sbx__p_maybe_path(c, i, eq + 1);
    if (a[0] == '-' && a[1] && a[1] != '-' && a[2] && sbx__p_maybe_path(c, i, a + 2))
        return true;
    return sbx__p_maybe_path(c, i, a);
}

const sbx__popt *sbx__p_find(const sbx__popt *t, const char *name, size_t len)
{
    for (; t->name; t++)
        if (strlen(t->name) == len && memcmp(t->name, name, len) == 0)
            return t;
    return NULL;
}

static bool in_list(const sbx__strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

static bool program_denied(const sbx__pctx *c, const char *name)
{
    const struct scope *b = &c->p->s[0], *j = c->job >= 0 ? &c->p->s[1 + c->job] : NULL;
    return in_list(&b->deny, name) || (j && in_list(&j->deny, name));
}

bool sbx__p_program_allowed(const sbx__pctx *c, const char *name)
{
    const struct scope *b = &c->p->s[0], *j = c->job >= 0 ? &c->p->s[1 + c->job] : NULL;
    if (program_denied(c, name))
        return false;
    return in_list(&b->allow, name) || (j && in_list(&j->allow, name));
}

static bool pkg_matches(const char *allowed, const char *spec)
{
    size_t an, sn;
    if (!pkg_spec_ok(spec, &sn) || !pkg_spec_ok(allowed, &an))
        return false;
    if (an != sn || memcmp(allowed, spec, an) != 0)
        return false;
    /* `name` allows any version; `name@v` exactly v. */
    return allowed[an] == '\0' || strcmp(allowed + an, spec + sn) == 0;
}

bool sbx__p_package_allowed(const sbx__pctx *c, const char *spec)
{
    for (int k = 0; k < 2; k++) {
        const sbx__strlist *l = k == 0 ? &c->p->s[0].packages
                                : c->job >= 0 ? &c->p->s[1 + c->job].packages
                                              : NULL;
        for (size_t i = 0; l && i < l->n; i++)
            if (pkg_matches(l->v[i], spec))
                return true;
    }
    return false;
}

/* Options of the package-exec front ends: those that name packages, those
 * that run shell text (denied), and flags. Anything else is denied, since an
 * unknown option may take the next word and shift which one is the package. */
static const sbx__popt pkgexec_opts[] = {
    {"-p", SBX__V_TEXT},          {"--package", SBX__V_TEXT}, {"-c", SBX__V_DENY},
    {"--call", SBX__V_DENY},      {"--shell-mode", SBX__V_DENY}, {"--shell", SBX__V_DENY},
    {"-y", SBX__V_NONE},          {"--yes", SBX__V_NONE},     {"--no", SBX__V_NONE},
    {"-q", SBX__V_NONE},          {"--quiet", SBX__V_NONE},   {"--silent", SBX__V_NONE},
    {"--bun", SBX__V_NONE},       {"--verbose", SBX__V_NONE}, {"--no-install", SBX__V_NONE},
    {"--prefer-offline", SBX__V_NONE}, {"--offline", SBX__V_NONE}, {NULL, SBX__V_NONE},
};

static bool pkg_named(sbx__pctx *c, const char *how, size_t i, const char *spec)
{
    char b[96];
    if (sbx__p_package_allowed(c, spec))
        return false;
    return sbx__deny(c, SBX_POLICY_PACKAGE_EXEC, "%s of package \"%s\" (argument %zu): the policy does not name it",
                     how, sbx__pshow(spec, b, sizeof b), i);
}

/* With --package, the command is looked up among the packages' binaries
 * and then on PATH: it must be one of the named packages' own names, or a
 * program the policy allows. */
static bool pkg_command(sbx__pctx *c, const char *how, size_t i, size_t first)
{
    const char *cmd = c->argv[i];
    char b[96];
    if (!strchr(cmd, '/') && sbx__p_program_allowed(c, cmd))
        return sbx__p_run_as(c, i); /* an allowed program keeps its own rules */
    for (size_t k = first; k < i; k++) {
        const char *a = c->argv[k], *v = NULL, *slash;
        size_t n;
        if (strcmp(a, "-p") == 0 || strcmp(a, "--package") == 0)
            v = c->argv[k + 1];
        else if (strncmp(a, "--package=", 10) == 0)
            v = a + 10;
        if (!v || !(n = pkg_name_len(v)))
            continue;
        slash = memchr(v, '/', n);
        if (slash && (size_t)(slash - v) < n) {
            n -= (size_t)(slash + 1 - v);
            v = slash + 1;
        }
        if (strlen(cmd) == n && memcmp(cmd, v, n) == 0)
            return false;
    }
    return sbx__deny(c, SBX_POLICY_PACKAGE_EXEC,
                     "%s --package: the command \"%s\" (argument %zu) is neither a named package nor an allowed "
                     "program",
                     how, sbx__pshow(cmd, b, sizeof b), i);
}

bool sbx__p_package_exec(sbx__pctx *c, const char *how, size_t first)
{
    size_t i = first;
    bool named = false;
    char b[96];
    for (; i < c->argc && c->argv[i][0] == '-'; i++) {
        const char *a = c->argv[i], *eq = strchr(a, '=');
        size_t n = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
        const sbx__popt *o;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        o = sbx__p_find(pkgexec_opts, a, n);
        if (!o || o->role == SBX__V_DENY)
            return sbx__deny(c, SBX_POLICY_PACKAGE_EXEC, "%s option \"%s\" (argument %zu) is not allowed", how,
                             sbx__pshow(a, b, sizeof b), i);
        if (o->role == SBX__V_TEXT) {
            const char *v = eq && a[1] == '-' ? eq + 1 : (i + 1 < c->argc ? c->argv[++i] : NULL);
            if (!v)
                return sbx__deny(c, SBX_POLICY_PACKAGE_EXEC, "%s option \"%s\" has no package", how, a);
            if (pkg_named(c, how, i, v))
                return true;
            named = true;
        }
    }
    if (i >= c->argc) {
        if (named)
            return false;
        return sbx__deny(c, SBX_POLICY_PACKAGE_EXEC, "%s without a package", how);
    }
    if (named ? pkg_command(c, how, i, first) : pkg_named(c, how, i, c->argv[i]))
        return true;
    for (i++; i < c->argc; i++)
        if (sbx__p_generic(c, i))
            return true;
    return false;
}

/* ---- the decision's entry ----------------------------------------------------------------- */

/* Encoding, control characters and length of every argument. */
static bool check_text(sbx__pctx *c)
{
    char b[96];
    for (size_t i = 0; i < c->argc; i++) {
        const char *a = c->argv[i];
        size_t n = strlen(a);
        if (n > ARG_MAX_BYTES)
            return sbx__deny(c, SBX_POLICY_ARG_TOO_LONG, "argument %zu is %zu bytes long (at most %d)", i, n,
                             ARG_MAX_BYTES);
        if (!sbx__utf8_valid(a, n))
            return sbx__deny(c, SBX_POLICY_ENCODING, "argument %zu \"%s\" is not valid UTF-8", i,
                             sbx__pshow(a, b, sizeof b));
        for (size_t k = 0; k < n; k++) {
            unsigned char ch = (unsigned char)a[k];
            bool ctl = ch < 0x20 || ch == 0x7f || (ch == 0xc2 && (unsigned char)a[k + 1] >= 0x80 &&
                                                   (unsigned char)a[k + 1] <= 0x9f);
            if (ctl && (i == 0 || (ch != '\n' && ch != '\t')))
                return sbx__deny(c, SBX_POLICY_CONTROL_CHAR, "%s %zu \"%s\" contains a control character",
                                 i == 0 ? "the program (argument" : "argument", i, sbx__pshow(a, b, sizeof b));
        }
    }
    return false;
}

static bool check_cwd(sbx__pctx *c, const char *cwd)
{
    char b[96];
    memset(&c->cwd, 0, sizeof c->cwd);
    if (cwd[0] != '/' || has_control(cwd) || !sbx__utf8_valid(cwd, strlen(cwd)) ||
        has_c1(cwd))
        return sbx__deny(c, SBX_POLICY_CWD_OUTSIDE, "the working directory \"%s\" is not an absolute path",
                         sbx__pshow(cwd, b, sizeof b));
    ppath_walk(&c->cwd, cwd);
    if (!ppath_inside(&c->cwd))
        return sbx__deny(c, SBX_POLICY_CWD_OUTSIDE, "the working directory \"%s\" is outside %s",
                         sbx__pshow(cwd, b, sizeof b), SBX__WORKSPACE);
    return false;
}

/* The package-exec front ends. npm, pnpm and yarn take options before
 * their command and npm accepts abbreviated commands, so any word that is
 * an exec verb makes it one (a script named `create` is then refused: the
 * cautious reading); `init` and `create` run create-<name> packages. */
static bool package_exec_form(sbx__pctx *c, bool *handled)
{
    static const char *const npm_verbs[] = {"exec", "exe", "ex", "x", "init", "ini", "innit", "inni", "inn",
                                            "create", "creat", "crea", "cre", "cr", NULL};
    static const char *const pnpm_verbs[] = {"dlx", "exec", "create", "init", NULL};
    static const char *const yarn_verbs[] = {"dlx", "exec", "create", NULL};
    const char *p = c->argv[0];
    const char *const *verbs = !strcmp(p, "npm") ? npm_verbs : !strcmp(p, "pnpm") ? pnpm_verbs
                               : !strcmp(p, "yarn") ? yarn_verbs : NULL;
    char how[32];
    *handled = true;
    if (strcmp(p, "npx") == 0 || strcmp(p, "bunx") == 0)
        return sbx__p_package_exec(c, p, 1);
    /* Every word: `npm -- exec pkg` still execs. */
    for (size_t i = 1; verbs && i < c->argc; i++) {
        for (const char *const *v = verbs; *v; v++) {
            if (strcmp(c->argv[i], *v) == 0) {
                snprintf(how, sizeof how, "%s %s", p, *v);
                return sbx__p_package_exec(c, how, i + 1);
            }
        }
    }
    *handled = false;
    return false;
}

static bool decide(sbx__pctx *c, const char *cwd)
{
    const char *prog;
    char b[96];
    bool handled;
    if (c->argc == 0 || c->argv[0][0] == '\0')
        return sbx__deny(c, SBX_POLICY_EMPTY_ARGV, c->argc ? "the program name is empty" : "the argv is empty");
    if (check_text(c) || check_cwd(c, cwd))
        return true;
    prog = c->argv[0];
    if (strchr(prog, '/'))
        return sbx__deny(c, SBX_POLICY_PROGRAM_PATH, "the program \"%s\" is given with a path; use a bare name",
                         sbx__pshow(prog, b, sizeof b));
    if (!sbx__p_program_allowed(c, prog)) {
        if (!program_denied(c, prog)) {
            bool r = package_exec_form(c, &handled);
            if (handled)
                return r;
        }
        return sbx__deny(c, SBX_POLICY_PROGRAM_NOT_ALLOWED, "the program \"%s\" is not allowed by the policy",
                         sbx__pshow(prog, b, sizeof b));
    }
    return sbx__p_program_rules(c);
}

bool sbx__p_program_rules(sbx__pctx *c)
{
    const char *prog = c->argv[0];
    bool handled;
    if (strcmp(prog, "git") == 0)
        return sbx__p_git(c);
    if (strcmp(prog, "sed") == 0)
        return sbx__p_sed(c);
    if (strcmp(prog, "rg") == 0)
        return sbx__p_rg(c);
    if (strcmp(prog, "node") == 0)
        return sbx__p_node(c);
    if (strcmp(prog, "bun") == 0)
        return sbx__p_bun(c);
    if (strcmp(prog, "ls") == 0 || strcmp(prog, "cat") == 0)
        return sbx__p_ls_cat(c);
    /* An allowed package-exec front end keeps its package rule; npm, pnpm
     * and yarn have rules of their own for the rest. */
    if (package_exec_form(c, &handled) || handled)
        return c->reason != SBX_POLICY_ALLOW;
    if (strcmp(prog, "npm") == 0 || strcmp(prog, "pnpm") == 0 || strcmp(prog, "yarn") == 0)
        return sbx__p_pm(c);
    for (size_t i = 1; i < c->argc; i++)
        if (sbx__p_generic(c, i))
            return true;
    return false;
}

bool sbx__p_run_as(sbx__pctx *c, size_t i)
{
    sbx__pctx sub = *c;
    sub.argv = c->argv + i;
    sub.argc = c->argc - i;
    sub.aux = NULL;
    sub.carry = false;
    if (!sbx__p_program_rules(&sub))
        return false;
    c->reason = sub.reason;
    return true;
}

sbx_status sbx_policy_check(const sbx_policy *p, const char *job_type, size_t argc, const char *const *argv,
                            const char *cwd, sbx_policy_reason *reason, char *msg, size_t msg_cap)
{
    sbx__pctx c;
    if (reason)
        *reason = SBX_POLICY_ALLOW;
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!msg)
        msg_cap = 0;
    if (!p || (!argv && argc)) {
        if (msg_cap)
            snprintf(msg, msg_cap, "invalid argument: %s is NULL", !p ? "the policy" : "argv");
        return SBX_E_INVALID_ARG;
    }
    for (size_t i = 0; i < argc; i++) {
        if (!argv[i]) {
            if (msg_cap)
                snprintf(msg, msg_cap, "invalid argument: argv[%zu] is NULL", i);
            return SBX_E_INVALID_ARG;
        }
    }
    memset(&c, 0, sizeof c);
    c.p = p;
    c.job = -1;
    if (job_type && (c.job = sbx__job_type_index(job_type)) < 0) {
        if (msg_cap)
            snprintf(msg, msg_cap, "invalid argument: unknown job type \"%.64s\" (known: " SBX__JOB_TYPES_LIST ")",
                     job_type);
        return SBX_E_INVALID_ARG;
    }
    c.argv = argv;
    c.argc = argc;
    c.msg = msg;
    c.cap = msg_cap;
    c.reason = SBX_POLICY_ALLOW;
    if (!decide(&c, cwd ? cwd : SBX__WORKSPACE))
        return SBX_OK;
    if (reason)
        *reason = c.reason;
    return SBX_E_POLICY_DENIED;
}

/* ---- sharing ------------------------------------------------------------------------------ */

sbx_policy *sbx__policy_copy(const sbx_policy *p)
{
    sbx_policy *q = sbx__calloc(1, sizeof *q);
    if (!q)
        return NULL;
    for (size_t i = 0; i < SBX__ARRAY_LEN(q->s); i++)
        if (sbx__strlist_copy(&q->s[i].allow, &p->s[i].allow) != SBX_OK ||
            sbx__strlist_copy(&q->s[i].deny, &p->s[i].deny) != SBX_OK ||
            sbx__strlist_copy(&q->s[i].packages, &p->s[i].packages) != SBX_OK) {
            sbx_policy_free(q);
            return NULL;
        }
    return q;
}

/* l's strings not already in a, appended to a: -1 when out of memory. */
static int add_unique(json_t *a, const sbx__strlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        size_t k;
        json_t *v;
        bool seen = false;
        json_array_foreach(a, k, v)
            seen = seen || strcmp(json_string_value(v), l->v[i]) == 0;
        if (!seen && json_array_append_new(a, json_string(l->v[i])) != 0)
            return -1;
    }
    return 0;
}

json_t *sbx__policy_summary(const sbx_policy *p, const char *job_type)
{
    int j = job_type ? sbx__job_type_index(job_type) : -1;
    const struct scope *b, *t;
    json_t *doc, *allow, *progs, *pkgs, *deny;
    if (!p || j < 0)
        return NULL;
    b = &p->s[0];
    t = &p->s[1 + j];
    doc = json_pack("{s:i,s:s}", "version", 1, "extends", "none");
    allow = json_object();
    progs = json_array();
    pkgs = json_array();
    deny = json_array();
    if (!doc || !allow || !progs || !pkgs || !deny || add_unique(progs, &b->allow) || add_unique(progs, &t->allow) ||
        add_unique(pkgs, &b->packages) || add_unique(pkgs, &t->packages) || add_unique(deny, &b->deny) ||
        add_unique(deny, &t->deny) || json_object_set(allow, "programs", progs) ||
        (json_array_size(pkgs) && json_object_set(allow, "packages", pkgs)) || json_object_set(doc, "allow", allow) ||
        (json_array_size(deny) && json_object_set_new(doc, "deny", json_pack("{s:O}", "programs", deny)))) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(allow);
    json_decref(progs);
    json_decref(pkgs);
    json_decref(deny);
    return doc;
}
