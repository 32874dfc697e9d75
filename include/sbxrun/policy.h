/* SPDX-License-Identifier: MIT */
/*
 * sbx_policy: the default-deny command policy every job consults before a
 * command leaves the process. Included by <sbxrun/sbxrun.h>.
 *
 * A policy answers, for an argv and a working directory, allow or deny with a
 * stable reason code and a message naming the offending argument. It is
 * defence in depth, not the security boundary (the sandbox is): see
 * doc/policy.md for the rules, what they cover and what they cannot.
 *
 * Checking is pure: sbx_policy_check() takes a const policy, allocates
 * nothing and may run on many threads at once on a policy nobody modifies.
 */
#ifndef SBXRUN_POLICY_H
#define SBXRUN_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_policy sbx_policy;

/**
 * Why a command was denied. Explicit values, append-only.
 * @since 1.0
 */
typedef enum sbx_policy_reason {
    /** Allowed. */
    SBX_POLICY_ALLOW = 0,
    /** The argv is empty, or the program name is empty. */
    SBX_POLICY_EMPTY_ARGV = 1,
    /** The program was given with a path (`/usr/bin/git`, `./git`). */
    SBX_POLICY_PROGRAM_PATH = 2,
    /** The program is not on the allowlist. */
    SBX_POLICY_PROGRAM_NOT_ALLOWED = 3,
    /** A control character in the program name, or in an argument (other
     *  than newline and tab). */
    SBX_POLICY_CONTROL_CHAR = 4,
    /** An argument longer than 131072 bytes. */
    SBX_POLICY_ARG_TOO_LONG = 5,
    /** The working directory is outside the workspace. */
    SBX_POLICY_CWD_OUTSIDE = 6,
    /** An argument names a path outside the workspace. */
    SBX_POLICY_PATH_OUTSIDE = 7,
    /** A subcommand that is not allowed (`git daemon`, `bun x`). */
    SBX_POLICY_SUBCOMMAND = 8,
    /** An option that is not allowed (`rg --pre`, `git --exec-path`). */
    SBX_POLICY_OPTION = 9,
    /** A git configuration key that is not allowed (`-c`, `--config-env`). */
    SBX_POLICY_CONFIG = 10,
    /** A git transport that runs programs or reads the host (`ext::`,
     *  `fd::`, `file://`). */
    SBX_POLICY_TRANSPORT = 11,
    /** Inline code, or a script that runs programs or touches files
     *  (`node -e`, sed's `e`, `w`, `r`). */
    SBX_POLICY_SCRIPT = 12,
    /** A package exec (`npx`, `bunx`, `bun x`, `npm exec`, `pnpm dlx`,
     *  `yarn dlx`) of a package the policy does not name. */
    SBX_POLICY_PACKAGE_EXEC = 13,
    /** Text that is not valid UTF-8. */
    SBX_POLICY_ENCODING = 14
} sbx_policy_reason;

/**
 * A new policy holding the default rules: the programs git, bun, node, ls,
 * cat, sed and rg (bare names) for every job type; npm, pnpm and yarn for
 * the job types deps.install, verify.lint, verify.typecheck, verify.test,
 * verify.build and db.migrate only (not for a NULL job type, nor for
 * repo.clone and repo.applyPatch); the workspace /vercel/sandbox; no package
 * exec.
 *
 * @return the policy, or NULL when out of memory. Free with sbx_policy_free().
 * @since 1.0
 */
SBX_API sbx_policy *sbx_policy_new(void);

/**
 * Free a policy and everything it holds. NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_policy_free(sbx_policy *p);

/**
 * What went wrong in the most recent failing call on the policy: "" when the
 * last call on it that can fail succeeded (each such call clears it first).
 * Getters and sbx_policy_last_error() itself never change it. Owned by the
 * handle, valid until the next call on it that can fail. Never NULL; for a
 * NULL handle, "invalid argument: the handle is NULL". Never contains a
 * secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_policy_last_error(const sbx_policy *p);

/**
 * Allow a program by bare name, for every job type (job_type NULL) or for one
 * (`"verify.lint"`...). Programs the policy has rules for (git, bun, node,
 * sed, rg, ls, cat, npm, pnpm, yarn, package execs) keep them; any other
 * program gets only the generic rules (control characters, length, paths
 * confined to the workspace).
 *
 * @param p         the policy.
 * @param job_type  NULL, or one of repo.clone, repo.applyPatch, deps.install,
 *                  verify.lint, verify.typecheck, verify.test, verify.build,
 *                  db.migrate.
 * @param program   a bare program name: no `/`, no control characters, at
 *                  most 255 bytes.
 * @return SBX_OK, SBX_E_INVALID_ARG (a bad name or job type, named in
 *         last_error), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_allow_program(sbx_policy *p, const char *job_type, const char *program);

/**
 * Deny a program by bare name, for every job type or one. A deny wins over
 * any allow, whatever the order the two were given in, the default allows
 * included (deny npm for verify.test to keep it out of that job type).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_deny_program(sbx_policy *p, const char *job_type, const char *program);

/**
 * Allow a package exec (`npx`, `bunx`, `bun x`, `npm exec`, `pnpm dlx`,
 * `yarn dlx`) of one registry package, for every job type or one.
 *
 * @param spec  a package name (`eslint`, `@scope/name`): any version of it;
 *              or name@version (`eslint@9.1.0`): exactly that version.
 * @return SBX_OK, SBX_E_INVALID_ARG (not a registry package name),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_allow_package(sbx_policy *p, const char *job_type, const char *spec);

/**
 * Replace p's rules with those of a JSON policy document (format: doc/policy.md;
 * example: examples/policy.json). On failure p is unchanged.
 *
 * @param json  the document, NUL-terminated UTF-8.
 * @return SBX_OK, SBX_E_PARSE (not JSON), SBX_E_INVALID_ARG (an unknown key
 *         or a bad value, named by its path in last_error), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_load_json(sbx_policy *p, const char *json);

/**
 * sbx_policy_load_json() on the contents of a file (at most 1 MiB).
 *
 * @return as sbx_policy_load_json(), and SBX_E_IO (cannot read the file),
 *         SBX_E_BUDGET_EXCEEDED (too large).
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_load_file(sbx_policy *p, const char *path);

/**
 * Decide whether argv may run in cwd.
 *
 * @param p         the policy (not modified, its last_error included: safe to
 *                  share between threads, which is why the message goes to
 *                  a buffer of the caller's).
 * @param job_type  NULL for the rules that apply to every job type, or a job
 *                  type whose own rules apply too.
 * @param argc      the number of arguments.
 * @param argv      argc NUL-terminated arguments, argv[0] the program.
 * @param cwd       the working directory, absolute; NULL means
 *                  /vercel/sandbox.
 * @param reason    receives the reason code (SBX_POLICY_ALLOW when allowed);
 *                  may be NULL.
 * @param msg       receives a one-line message naming the offending argument
 *                  (or why the call itself was invalid), truncated to fit;
 *                  may be NULL when msg_cap is 0.
 * @param msg_cap   the size of msg.
 * @return SBX_OK (allowed), SBX_E_POLICY_DENIED (denied: see reason and msg),
 *         SBX_E_INVALID_ARG (p or argv NULL, an argv element NULL, an unknown
 *         job type: the message lists the known ones).
 * @since 1.0
 */
SBX_API sbx_status sbx_policy_check(const sbx_policy *p, const char *job_type, size_t argc,
                                    const char *const *argv, const char *cwd, sbx_policy_reason *reason,
                                    char *msg, size_t msg_cap);

/**
 * The stable name of a reason code, such as "path_outside" (lowercase, as in
 * the JSON output of `sbxrun policy check --json`).
 *
 * @return a static string; "unknown" for a code this version does not know.
 * @since 1.0
 */
SBX_API const char *sbx_policy_reason_name(sbx_policy_reason reason);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_POLICY_H */
