/* SPDX-License-Identifier: MIT */
/*
 * libsbxrun common definitions: export macro, status codes, version, memory
 * release and library initialisation. Included by <sbxrun/sbxrun.h>.
 */
#ifndef SBXRUN_COMMON_H
#define SBXRUN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SBX_API marks the exported functions; the library builds with hidden
 * visibility and a version script, so nothing else leaves it. */
#if defined(__GNUC__) || defined(__clang__)
#define SBX_API __attribute__((visibility("default")))
#define SBX_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define SBX_API
#define SBX_DEPRECATED(msg)
#endif

/**
 * Status codes returned by every fallible libsbxrun call.
 *
 * The values are fixed and the list is append-only: a code is never
 * renumbered or reused. Bindings must treat a value they do not know as
 * "another error". A job whose steps ran and failed is not an error; these
 * codes describe failures of the library itself. The handle that failed
 * keeps a message with the detail (sbx_<noun>_last_error()), until the next
 * call on it that can fail.
 * @since 1.0
 */
typedef enum sbx_status {
    /** Success. */
    SBX_OK = 0,
    /** An argument is NULL, out of range or malformed. */
    SBX_E_INVALID_ARG = 1,
    /** The call is not allowed now: wrong state, or made from a callback. */
    SBX_E_MISUSE = 2,
    /** Memory allocation failed. */
    SBX_E_NOMEM = 3,
    /** An option key given by name is not known. */
    SBX_E_UNKNOWN_OPTION = 4,
    /** The named object (sandbox, command, file, snapshot) does not exist. */
    SBX_E_NOT_FOUND = 5,
    /** A local file or operating-system call failed. */
    SBX_E_IO = 6,
    /** Input could not be parsed (JSON, patch, transcript, policy file). */
    SBX_E_PARSE = 7,
    /** Credentials are missing, malformed, expired or were refused. */
    SBX_E_AUTH = 8,
    /** The endpoint could not be reached or the connection broke. */
    SBX_E_TRANSPORT = 9,
    /** The server's answer does not follow the protocol. */
    SBX_E_PROTOCOL = 10,
    /** The server answered with an error status not mapped to another code. */
    SBX_E_HTTP = 11,
    /** A deadline passed before the operation finished. */
    SBX_E_TIMEOUT = 12,
    /** The operation was cancelled by the caller. */
    SBX_E_CANCELLED = 13,
    /** A size, count or time budget was exceeded. */
    SBX_E_BUDGET_EXCEEDED = 14,
    /** The command policy or network policy refused the request. */
    SBX_E_POLICY_DENIED = 15,
    /** The feature is not available in this build or on this endpoint. */
    SBX_E_UNSUPPORTED = 16,
    /** The object is in a state that does not allow this (stopped, exists). */
    SBX_E_CONFLICT = 17,
    /** The server kept refusing with "too many requests". */
    SBX_E_RATE_LIMITED = 18,
    /** Tamper evidence failed: a hash chain or checksum does not match. */
    SBX_E_INTEGRITY = 19,
    /** A patch does not apply, or touches paths it may not. */
    SBX_E_PATCH = 20,
    /** An internal invariant broke: a bug in libsbxrun; please report it. */
    SBX_E_INTERNAL = 21,
    /** Not finished yet, or nothing available now: try again later. */
    SBX_E_AGAIN = 22
} sbx_status;

/**
 * The output streams of a command, as commands and transcripts name them.
 * @since 1.0
 */
typedef enum sbx_stream {
    /** Standard output. */
    SBX_STREAM_STDOUT = 1,
    /** Standard error. */
    SBX_STREAM_STDERR = 2
} sbx_stream;

/**
 * The library's version at run time, as "MAJOR.MINOR.PATCH".
 *
 * Compare with SBX_VERSION_STRING to detect a header/library mismatch.
 * Safe from any thread, before or without sbx_global_init().
 *
 * @return a static string; never NULL.
 * @since 1.0
 */
SBX_API const char *sbx_version(void);

/**
 * The library's version at run time as one number, 0xMMmmpp.
 *
 * Same encoding as SBX_VERSION_NUM. Safe from any thread.
 *
 * @return the version number.
 * @since 1.0
 */
SBX_API uint32_t sbx_version_num(void);

/**
 * A short English description of a status code.
 *
 * Safe from any thread. For the detail of a particular failure, ask the
 * handle that failed (sbx_<noun>_last_error()).
 *
 * @param code  any value; codes this library version does not know get a
 *              generic text.
 * @return a static string; never NULL.
 * @since 1.0
 */
SBX_API const char *sbx_strerror(sbx_status code);

/**
 * The name of a status code's constant, such as "SBX_E_NOMEM".
 *
 * Lets bindings map codes to exception classes without copying the enum.
 * Safe from any thread.
 *
 * @param code  any value.
 * @return a static string, or NULL when this library version does not know
 *         the code.
 * @since 1.0
 */
SBX_API const char *sbx_status_name(sbx_status code);

/**
 * Release memory that the library returned to the caller.
 *
 * Use it for every `char *` (and other buffer) documented as "free with
 * sbx_free", never free(): the library may use another allocator.
 *
 * @param p  a pointer returned by libsbxrun, or NULL (then nothing happens).
 * @since 1.0
 */
SBX_API void sbx_free(void *p);

/**
 * Initialise the library's global state (libcurl's global init included).
 *
 * Reference-counted and thread-safe: every successful call must be matched by
 * one sbx_global_cleanup(); the state is set up by the first call and torn
 * down by the last cleanup. Several independent users in one process may each
 * call it. Handles that need it (sbx_client_new()) take their own reference,
 * so calling it yourself is optional; do it once at start if other threads
 * may use libcurl while the library starts up.
 *
 * @return SBX_OK, SBX_E_NOMEM, or SBX_E_INTERNAL when a dependency's global
 *         initialisation fails (the reference is then not taken).
 * @since 1.0
 */
SBX_API sbx_status sbx_global_init(void);

/**
 * Drop one reference taken by sbx_global_init().
 *
 * The last reference tears the global state down. Thread-safe.
 *
 * @return SBX_OK, or SBX_E_MISUSE when there is no reference to drop (more
 *         cleanups than inits); nothing is changed then.
 * @since 1.0
 */
SBX_API sbx_status sbx_global_cleanup(void);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_COMMON_H */
