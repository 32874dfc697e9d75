/* SPDX-License-Identifier: MIT */
/* workspace: what `sbxrun verify` sends to the sandbox, made on the host
 * without running anything there: a directory's tracked files at a
 * revision (of a local repository, or of one fetched with libgit2), with
 * the patches applied by sbx_patch after they are checked. */
#ifndef SBXRUN_WORKSPACE_H
#define SBXRUN_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct workspace {
    char *tmpdir;        /* private, removed by ws_free() */
    char *tree;          /* tmpdir/tree: the files, patched */
    char *root;          /* the repository the base is read from */
    char *subdir;        /* the project inside it ("" for its root) */
    char *commit;        /* the base commit's id */
    char **patches;      /* each patch's text, in order (NUL-ended) */
    size_t npatches;
    json_t *patch_info;  /* [sbx_patch_to_json() of each], NULL when none */
    json_t *package;     /* the project's package.json, NULL when none */
    const char *lockfile, *pm; /* what the files say (static), NULL if none */
    /* What the upload leaves out (a sandbox's file upload takes regular
     * files only): the base tree's symbolic links and submodules, counted
     * for a local repository only (--repo's are cloned in the sandbox),
     * with up to WS_LEFT_OUT_EXAMPLES of their paths. */
    size_t nsymlinks, nsubmodules;
    char *left_out[3];
    size_t nleft_out;
};
#define WS_LEFT_OUT_EXAMPLES 3

/* Make w: from the local repository around dir (repo_url NULL) at base
 * (NULL: HEAD), or from repo_url at ref fetched into tmpdir (dir then
 * names the project inside it, NULL for its root; token, when not NULL,
 * the git host's, given as the sandbox's clone gives it: HTTP basic auth
 * as x-access-token); then the patches, in order, each checked against the
 * tree the ones before it leave. Returns 0, or an sbxrun exit code after
 * writing why into err. */
int ws_prepare(struct workspace *w, const char *dir, const char *base, const char *repo_url, const char *ref,
               const char *token, const char *const *patches, size_t npatches, char *err, size_t errlen);

/* Whether url carries credentials: a password (scheme://user:pw@), or any
 * user name of an http(s) URL (https://TOKEN@host is a token too). */
bool ws_url_has_credentials(const char *url);
void ws_free(struct workspace *w);

/* Whether package.json has a script of this name. */
bool ws_has_script(const struct workspace *w, const char *name);
/* Whether package.json declares dependencies of any kind. */
bool ws_has_dependencies(const struct workspace *w);

/* Split a command line into words as a shell would for simple quoting
 * ('...', "...", backslash), without running a shell: no variables, no
 * globbing, no operators. Returns the number of words (argv NULL-ended,
 * free with ws_argv_free), or -1 after writing why into err. */
int ws_split(const char *line, char ***argv, char *err, size_t errlen);
void ws_argv_free(char **argv);

#endif /* SBXRUN_WORKSPACE_H */
