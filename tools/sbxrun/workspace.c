/* SPDX-License-Identifier: MIT */
/* workspace: the files `sbxrun verify` sends, made on the host without
 * running anything there (workspace.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>

#include <sbxrun/sbxrun.h>

#include "cli.h"
#include "workspace.h"

/* A patch file is read whole; sbx_patch's own limit is 16 MiB. */
#define PATCH_FILE_MAX (64u << 20)
#define PACKAGE_JSON_MAX (4u << 20)
/* One file of the project's tree (sbx_patch's default is 8 MiB). */
#define TREE_FILE_MAX ((size_t)64 << 20)

static int fail(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

static const char *git_msg(void)
{
    const git_error *e = git_error_last();
    return e && e->message ? e->message : "unknown libgit2 error";
}

void ws_free(struct workspace *w)
{
    if (w->tmpdir)
        cli_rm_tree(w->tmpdir);
    free(w->tmpdir);
    free(w->tree);
    free(w->root);
    free(w->subdir);
    free(w->commit);
    for (size_t i = 0; i < w->npatches; i++)
        free(w->patches[i]);
    free(w->patches);
    json_decref(w->patch_info);
    json_decref(w->package);
    for (size_t i = 0; i < w->nleft_out; i++)
        free(w->left_out[i]);
    memset(w, 0, sizeof *w);
}

/* ---- the base ------------------------------------------------------------------------------ */

/* The repository around dir: its top (the directory holding .git) and dir
 * below it. */
static int find_repo(struct workspace *w, const char *dir, char *err, size_t errlen)
{
    char real[PATH_MAX], probe[PATH_MAX + 8];
    size_t n;
    if (!realpath(dir, real))
        return fail(err, errlen, SBXRUN_EXIT_USAGE, "%s: %s", dir, strerror(errno));
    n = strlen(real);
    for (;;) {
        struct stat st;
        snprintf(probe, sizeof probe, "%.*s/.git", (int)n, real);
        if (lstat(probe, &st) == 0)
            break;
        while (n > 0 && real[n - 1] != '/')
            n--;
        if (n <= 1)
            return fail(err, errlen, SBXRUN_EXIT_USAGE,
                        "%s is not inside a git repository (verify sends the files tracked at a revision)", dir);
        n--; /* the slash */
    }
    w->root = strndup(real, n ? n : 1);
    w->subdir = strdup(real[n] ? real + n + 1 : "");
    if (!w->root || !w->subdir)
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
    return 0;
}

/* The commit rev names in the repository at root. */
static int resolve(struct workspace *w, const char *rev, char *err, size_t errlen)
{
    git_repository *repo = NULL;
    git_object *obj = NULL, *commit = NULL;
    char id[GIT_OID_HEXSZ + 1];
    int rc = 0;
    if (git_repository_open(&repo, w->root) < 0)
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "cannot open the repository %s: %s", w->root, git_msg());
    if (git_revparse_single(&obj, repo, rev) < 0 || git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) < 0) {
        rc = fail(err, errlen, SBXRUN_EXIT_USAGE, "no commit '%s' in %s: %s", rev, w->root, git_msg());
    } else {
        git_oid_tostr(id, sizeof id, git_object_id(commit));
        if (!(w->commit = strdup(id)))
            rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
    }
    git_object_free(commit);
    git_object_free(obj);
    git_repository_free(repo);
    return rc;
}

bool ws_url_has_credentials(const char *url)
{
    const char *p = strstr(url, "://"), *end, *at;
    bool http;
    if (!p)
        return false; /* scp-like (git@host:path): a user name only */
    http = (p - url == 4 && !strncasecmp(url, "http", 4)) || (p - url == 5 && !strncasecmp(url, "https", 5));
    p += 3;
    end = p + strcspn(p, "/?#");
    if (!(at = memrchr(p, '@', (size_t)(end - p))))
        return false;
    return http || memchr(p, ':', (size_t)(at - p)) != NULL;
}

struct fetch_auth {
    const char *token;
    const char *url; /* --repo: the token is for its host alone */
    bool tried;
};

/* The host[:port] of an http(s) URL, as a length into url (0: none). */
static size_t url_authority(const char *url, const char **start)
{
    const char *p = strstr(url, "://");
    if (!p)
        return 0;
    p += 3;
    *start = p;
    return strcspn(p, "/?#");
}

/* The token as the sandbox's clone gives it, to --repo's host only (a
 * redirect elsewhere does not get it); asked again, the host refused it:
 * no more tries (libgit2 would ask forever). */
static int credentials(git_credential **out, const char *url, const char *user, unsigned int allowed, void *payload)
{
    struct fetch_auth *a = payload;
    const char *want = NULL, *got = NULL;
    size_t nwant = url_authority(a->url, &want), ngot = url ? url_authority(url, &got) : 0;
    (void)user;
    if (!nwant || nwant != ngot || strncasecmp(want, got, nwant) != 0)
        return GIT_PASSTHROUGH;
    if (!a->token || a->tried || !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT))
        return GIT_PASSTHROUGH;
    a->tried = true;
    return git_credential_userpass_plaintext_new(out, "x-access-token", a->token);
}

/* --repo: fetch the repository into tmpdir (bare: nothing is checked out,
 * no hook or filter of it runs), and take ref's commit. */
static int fetch_repo(struct workspace *w, const char *url, const char *ref, const char *dir, const char *token,
                      char *err, size_t errlen)
{
    git_clone_options o;
    git_repository *repo = NULL;
    struct fetch_auth auth = {token, url, false};
    char path[PATH_MAX];
    int rc;
    git_clone_options_init(&o, GIT_CLONE_OPTIONS_VERSION);
    snprintf(path, sizeof path, "%s/base.git", w->tmpdir);
    o.bare = 1;
    o.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;
    o.fetch_opts.callbacks.credentials = credentials;
    o.fetch_opts.callbacks.payload = &auth;
    if (git_clone(&repo, url, path, &o) < 0)
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "cannot fetch %s: %s%s", url, git_msg(),
                    auth.tried ? " (with the token of --token-env)" : "");
    git_repository_free(repo);
    if (!(w->root = strdup(path)) || !(w->subdir = strdup(dir ? dir : "")))
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
    if (!ref)
        return resolve(w, "HEAD", err, errlen);
    {
        /* A branch of the remote, a tag, or anything git names a commit by. */
        char cand[1024];
        snprintf(cand, sizeof cand, "refs/remotes/origin/%s", ref);
        if (resolve(w, cand, err, errlen) == 0)
            return 0;
        snprintf(cand, sizeof cand, "refs/tags/%s", ref);
        if (resolve(w, cand, err, errlen) == 0)
            return 0;
        rc = resolve(w, ref, err, errlen);
        if (rc)
            fail(err, errlen, SBXRUN_EXIT_USAGE, "%s has no branch, tag or commit '%s'", url, ref);
        return rc;
    }
}

/* The base tree's entries that are neither files nor directories: what
 * the upload leaves out (patches cannot add any: their safety rules refuse
 * symbolic links and gitlinks). */
static int count_one(const char *root, const git_tree_entry *e, void *payload)
{
    struct workspace *w = payload;
    git_filemode_t mode = git_tree_entry_filemode(e);
    if (mode != GIT_FILEMODE_LINK && mode != GIT_FILEMODE_COMMIT)
        return 0;
    if (mode == GIT_FILEMODE_LINK)
        w->nsymlinks++;
    else
        w->nsubmodules++;
    if (w->nleft_out < WS_LEFT_OUT_EXAMPLES &&
        asprintf(&w->left_out[w->nleft_out], "%s%s", root, git_tree_entry_name(e)) >= 0)
        w->nleft_out++;
    return 0;
}

static int count_left_out(struct workspace *w, const char *spec, char *err, size_t errlen)
{
    git_repository *repo = NULL;
    git_object *obj = NULL, *tree = NULL;
    int rc = 0;
    if (git_repository_open(&repo, w->root) < 0)
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "cannot open the repository %s: %s", w->root, git_msg());
    if (git_revparse_single(&obj, repo, spec) < 0 || git_object_peel(&tree, obj, GIT_OBJECT_TREE) < 0 ||
        git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, count_one, w) < 0)
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "reading the tree %s: %s", spec, git_msg());
    git_object_free(tree);
    git_object_free(obj);
    git_repository_free(repo);
    return rc;
}

/* ---- the patches ----------------------------------------------------------------------------- */

static int read_all(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return fail(err, errlen, SBXRUN_EXIT_USAGE, "--patch %s: %s", path, strerror(errno));
    for (;;) {
        size_t got;
        if (n + 1 >= cap) { /* always a byte to spare, for the NUL */
            char *nb;
            cap = cap ? cap * 2 : 65536;
            if (cap > PATCH_FILE_MAX + 1 || !(nb = realloc(buf, cap))) {
                free(buf);
                if (f != stdin)
                    fclose(f);
                return fail(err, errlen, SBXRUN_EXIT_DENIED, "--patch %s: larger than %u MiB", path,
                            PATCH_FILE_MAX >> 20);
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        if (f != stdin)
            fclose(f);
        return fail(err, errlen, SBXRUN_EXIT_USAGE, "--patch %s: read error", path);
    }
    if (f != stdin)
        fclose(f);
    buf[n] = '\0'; /* a patch's text is also given as a string */
    *out = buf;
    *len = n;
    return 0;
}

/* The verdict of one patch on the base, as verify's exit code. */
static int judge(sbx_patch *p, const char *name, char *err, size_t errlen)
{
    sbx_patch_verdict v = sbx_patch_get_verdict(p);
    switch (v) {
    case SBX_PATCH_APPLIES: return 0;
    case SBX_PATCH_UNSAFE:
        return fail(err, errlen, SBXRUN_EXIT_DENIED, "the patch %s: %s (rule %s)", name, sbx_patch_last_error(p),
                    sbx_patch_rule_name(sbx_patch_broken_rule(p)));
    case SBX_PATCH_TOO_LARGE:
        return fail(err, errlen, SBXRUN_EXIT_DENIED, "the patch %s: %s", name, sbx_patch_last_error(p));
    case SBX_PATCH_DOES_NOT_APPLY:
    case SBX_PATCH_MALFORMED:
        return fail(err, errlen, SBXRUN_EXIT_DOES_NOT_APPLY, "the patch %s: %s", name, sbx_patch_last_error(p));
    default:
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "the patch %s: %s", name, sbx_patch_last_error(p));
    }
}

/* A checked patch of text on the base, or on the tree prev leaves; *out on
 * success. */
static int check_one(const char *repo, const char *base, const sbx_patch *prev, const char *name, const char *text,
                     size_t len, sbx_patch **out, char *err, size_t errlen)
{
    sbx_patch *p = sbx_patch_new();
    int rc;
    if (!p)
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
    /* A project's files may be large (fixtures, images): the limit on one
     * file of the tree is raised; a patch keeps its own limits. */
    sbx_patch_set_limits(p, 0, 0, TREE_FILE_MAX);
    if ((prev ? sbx_patch_set_base_patch(p, prev) : sbx_patch_set_base(p, repo, base)) != SBX_OK) {
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "%s", sbx_patch_last_error(p));
        sbx_patch_free(p);
        return rc;
    }
    sbx_patch_load_data(p, (const uint8_t *)text, len);
    if (sbx_patch_get_verdict(p) == SBX_PATCH_SAFE)
        sbx_patch_check(p);
    if ((rc = judge(p, name, err, errlen)) != 0) {
        sbx_patch_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* The patches in order: each read, checked against the tree the ones
 * before it leave (the base for the first), and kept (its text for a
 * sandbox that applies them itself, its description for the result). *out
 * is the last, checked: its tree is the workspace. */
static int take_patches(struct workspace *w, const char *base, const char *const *paths, size_t n, sbx_patch **out,
                        char *err, size_t errlen)
{
    sbx_patch *prev = NULL;
    int rc = 0;
    *out = NULL;
    if (!(w->patches = calloc(n, sizeof *w->patches)) || !(w->patch_info = json_array()))
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        sbx_patch *p = NULL;
        size_t len = 0;
        char *js = NULL;
        if ((rc = read_all(paths[i], &w->patches[i], &len, err, errlen)))
            break;
        w->npatches = i + 1;
        if ((rc = check_one(w->root, base, prev, paths[i], w->patches[i], len, &p, err, errlen)))
            break;
        if (sbx_patch_to_json(p, &js) == SBX_OK)
            json_array_append_new(w->patch_info, json_loads(js, 0, NULL));
        sbx_free(js);
        sbx_patch_free(prev); /* the next one applies to what this one leaves */
        prev = p;
    }
    if (rc)
        sbx_patch_free(prev);
    else
        *out = prev;
    return rc;
}

/* ---- the project ----------------------------------------------------------------------------- */

/* Lockfiles, most specific first (as the job layer reads them). */
static const struct {
    const char *file, *pm;
} lockfiles[] = {
    {"bun.lock", "bun"},          {"bun.lockb", "bun"},        {"pnpm-lock.yaml", "pnpm"},
    {"yarn.lock", "yarn"},        {"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"},
};

static int read_project(struct workspace *w, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    json_error_t je;
    struct stat st;
    for (size_t i = 0; i < sizeof lockfiles / sizeof *lockfiles && !w->lockfile; i++) {
        snprintf(path, sizeof path, "%s/%s", w->tree, lockfiles[i].file);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            w->lockfile = lockfiles[i].file;
            w->pm = lockfiles[i].pm;
        }
    }
    snprintf(path, sizeof path, "%s/package.json", w->tree);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (st.st_size > PACKAGE_JSON_MAX)
        return fail(err, errlen, SBXRUN_EXIT_USAGE, "package.json is larger than %u MiB", PACKAGE_JSON_MAX >> 20);
    w->package = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!w->package || !json_is_object(w->package))
        return fail(err, errlen, SBXRUN_EXIT_USAGE, "package.json is not a JSON object: %s (line %d)", je.text,
                    je.line);
    if (!w->pm)
        w->pm = "npm"; /* scripts run with npm when no lockfile says otherwise */
    return 0;
}

bool ws_has_script(const struct workspace *w, const char *name)
{
    json_t *s = json_object_get(json_object_get(w->package, "scripts"), name);
    return json_is_string(s) && *json_string_value(s);
}

bool ws_has_dependencies(const struct workspace *w)
{
    static const char *const kinds[] = {"dependencies", "devDependencies", "optionalDependencies"};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        json_t *d = json_object_get(w->package, kinds[i]);
        if (json_is_object(d) && json_object_size(d) > 0)
            return true;
    }
    return false;
}

int ws_prepare(struct workspace *w, const char *dir, const char *base, const char *repo_url, const char *ref,
               const char *token, const char *const *patches, size_t npatches, char *err, size_t errlen)
{
    char tmpl[] = "/tmp/sbxrun-verify-XXXXXX", *spec = NULL;
    sbx_patch *p = NULL;
    int rc;
    memset(w, 0, sizeof *w);
    git_libgit2_init();
    if (!mkdtemp(tmpl) || !(w->tmpdir = strdup(tmpl)))
        return fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "cannot make a temporary directory: %s", strerror(errno));
    if (asprintf(&w->tree, "%s/tree", w->tmpdir) < 0) {
        w->tree = NULL;
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
        goto out;
    }
    rc = repo_url ? fetch_repo(w, repo_url, ref, dir, token, err, errlen) : find_repo(w, dir, err, errlen);
    if (!rc && !repo_url)
        rc = resolve(w, base ? base : "HEAD", err, errlen);
    if (rc)
        goto out;
    /* The project's own tree: the commit's, or its subdirectory's. */
    if (asprintf(&spec, "%s%s%s", w->commit, w->subdir[0] ? ":" : "", w->subdir) < 0) {
        spec = NULL;
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "out of memory");
        goto out;
    }
    if (!repo_url && (rc = count_left_out(w, spec, err, errlen)))
        goto out;
    if (npatches) {
        if ((rc = take_patches(w, spec, patches, npatches, &p, err, errlen)))
            goto out;
    } else if (!(p = sbx_patch_new()) || sbx_patch_set_limits(p, 0, 0, TREE_FILE_MAX) != SBX_OK ||
               sbx_patch_set_base(p, w->root, spec) != SBX_OK) {
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "%s", p ? sbx_patch_last_error(p) : "out of memory");
        goto out;
    }
    if (sbx_patch_save_tree_dir(p, w->tree) != SBX_OK) {
        rc = fail(err, errlen, SBXRUN_EXIT_CANNOT_RUN, "writing the workspace: %s", sbx_patch_last_error(p));
        goto out;
    }
    rc = read_project(w, err, errlen);
out:
    sbx_patch_free(p);
    free(spec);
    git_libgit2_shutdown();
    if (rc)
        ws_free(w);
    return rc;
}

/* ---- command lines --------------------------------------------------------------------------- */

void ws_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

int ws_split(const char *line, char ***out, char *err, size_t errlen)
{
    char **argv = NULL, *word = malloc(strlen(line) + 1);
    size_t n = 0, wl;
    const char *s = line;
    *out = NULL;
    if (!word)
        return fail(err, errlen, -1, "out of memory");
    for (;;) {
        bool have = false;
        char q = 0;
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (!*s)
            break;
        wl = 0;
        for (; *s && (q || (*s != ' ' && *s != '\t' && *s != '\n')); s++) {
            if (q == '\'' && *s == '\'') {
                q = 0;
            } else if (q == '"' && *s == '"') {
                q = 0;
            } else if (!q && (*s == '\'' || *s == '"')) {
                q = *s;
                have = true;
            } else if (q != '\'' && *s == '\\' && s[1]) {
                word[wl++] = *++s;
            } else if (!q && strchr("|&;<>()$`*?[]{}~", *s)) {
                free(word);
                ws_argv_free(argv);
                return fail(err, errlen, -1,
                            "'%c' in \"%s\": commands run without a shell; quote it, or name a package.json script",
                            *s, line);
            } else {
                word[wl++] = *s;
            }
            have = true;
        }
        if (q) {
            free(word);
            ws_argv_free(argv);
            return fail(err, errlen, -1, "unterminated quote in \"%s\"", line);
        }
        if (have) {
            char **na = realloc(argv, (n + 2) * sizeof *na);
            word[wl] = '\0';
            if (na) {
                argv = na;
                argv[n + 1] = NULL;
                argv[n] = strdup(word);
            }
            if (!na || !argv[n]) {
                ws_argv_free(argv);
                free(word);
                return fail(err, errlen, -1, "out of memory");
            }
            n++;
        }
    }
    free(word);
    if (n == 0)
        return fail(err, errlen, -1, "an empty command");
    *out = argv;
    return (int)n;
}
