/* SPDX-License-Identifier: MIT */
/* What the command-policy modules share: one decision in progress and the
 * judgements every program's rules are built from (policy.c), used by the
 * per-program rules (policy_tools.c, policy_git.c, policy_pm.c). */
#ifndef SBX_POLICY_INT_H
#define SBX_POLICY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/internal.h"

#define SBX__WORKSPACE "/vercel/sandbox"

/* A lexically normalised absolute path, reduced to what confinement needs:
 * its depth and its first two components. */
typedef struct sbx__ppath {
    size_t depth;
    const char *c0, *c1;
    size_t l0, l1;
} sbx__ppath;

/* One decision in progress. Lives on the caller's stack: checking allocates
 * nothing and writes nothing shared. */
typedef struct sbx__pctx {
    const sbx_policy *p;
    int job; /* index into the job types, -1 for none */
    const char *const *argv;
    size_t argc;
    sbx__ppath cwd;
    sbx_policy_reason reason;
    char *msg;
    size_t cap;
    bool dry; /* a scanning pass: nothing is denied */
    const char *aux; /* a program's note between passes (sed: the -i suffix) */
    bool carry;      /* sed: the previous -e ended inside a, i or c text */
} sbx__pctx;

/* Record a denial (the first one wins) and return true, so rules can
 * `return sbx__deny(...)`. In a dry pass it records nothing and returns
 * false, so the scan goes on. */
bool sbx__deny(sbx__pctx *c, sbx_policy_reason r, const char *fmt, ...) SBX__PRINTF(3, 4);
/* arg quoted for a message: escaped, cut to a readable length. */
const char *sbx__pshow(const char *arg, char *buf, size_t cap);

/* Whether s is a URL (scheme://...). */
bool sbx__p_is_url(const char *s);
/* Whether s looks like a path: absolute, containing '/', or "..". */
bool sbx__p_pathlike(const char *s);
/* s (argument i, or part of it) as a file name: it must resolve inside the
 * workspace (or be /dev/null). Denies with PATH_OUTSIDE. */
bool sbx__p_file(sbx__pctx *c, size_t i, const char *s);
/* A file the program only writes: sbx__p_file, and /dev/stdout or
 * /dev/stderr. */
bool sbx__p_outfile(sbx__pctx *c, size_t i, const char *s);
/* A directory the program changes into (git -C, bun --cwd): judged as a
 * file, then the paths after it resolve from there. */
bool sbx__p_chdir(sbx__pctx *c, size_t i, const char *s);
/* s judged as a path only if it looks like one. */
bool sbx__p_maybe_path(sbx__pctx *c, size_t i, const char *s);
/* An argument whose role is not known: `--opt=value` judges the value,
 * `-Xvalue` the value, anything else the whole argument, each only if it
 * looks like a path. */
bool sbx__p_generic(sbx__pctx *c, size_t i);
/* Package execs: npx, bunx, `bun x`, `npm exec`/`npm x`, `pnpm dlx`,
 * `yarn dlx`. first = index of the first argument after the exec word. */
bool sbx__p_package_exec(sbx__pctx *c, const char *how, size_t first);
/* Whether a program may run for this decision's job type (allow lists
 * minus deny lists). */
bool sbx__p_program_allowed(const sbx__pctx *c, const char *name);
/* Whether the policy names this package spec for this decision. */
bool sbx__p_package_allowed(const sbx__pctx *c, const char *spec);

/* The rules of the program argv[0] names (an allowed one): true when
 * they denied. */
bool sbx__p_program_rules(sbx__pctx *c);
/* argv[i..] checked as a command of its own, by sbx__p_program_rules. */
bool sbx__p_run_as(sbx__pctx *c, size_t i);

/* Per-program rules: true when they denied. */
bool sbx__p_git(sbx__pctx *c);
bool sbx__p_sed(sbx__pctx *c);
bool sbx__p_rg(sbx__pctx *c);
bool sbx__p_node(sbx__pctx *c);
bool sbx__p_bun(sbx__pctx *c);
bool sbx__p_ls_cat(sbx__pctx *c);
/* npm, pnpm and yarn (policy_pm.c), after their package-exec forms. */
bool sbx__p_pm(sbx__pctx *c);

/* Whether a word a tool may run from PATH in place of a script is a shell,
 * an interpreter or a program that runs others (a heuristic: bun run,
 * yarn SCRIPT). */
bool sbx__p_runs_programs(const char *word);

/* Option tables for the per-program rules: name (short "-x" or long
 * "--xyz"), whether it takes a value, and the role of that value. */
enum sbx__prole {
    SBX__V_NONE,  /* a flag */
    SBX__V_TEXT,  /* a value that is not a path (message, pattern, count) */
    SBX__V_PATH,  /* a file or directory */
    SBX__V_DENY,  /* the option is not allowed at all */
    SBX__V_OPT,   /* long only: an optional `=value`, judged as generic */
};

typedef struct sbx__popt {
    const char *name;
    enum sbx__prole role;
} sbx__popt;

/* The entry for `name` (up to len bytes) in a NULL-terminated table. */
const sbx__popt *sbx__p_find(const sbx__popt *t, const char *name, size_t len);

#endif /* SBX_POLICY_INT_H */
