/* SPDX-License-Identifier: MIT */
/*
 * sbx_redactor and sbx_redact_stream: streaming secret redaction. Included by
 * <sbxrun/sbxrun.h>.
 *
 * A redactor is a rule set: the built-in credential shapes (GitHub, GitLab,
 * Slack, Stripe, AWS, Google, npm, OpenAI, Anthropic tokens, JWTs, PEM
 * private keys, URL userinfo, Authorization headers) and the secret values
 * registered with it, each also in its percent-encoded, JSON-escaped and
 * base64 forms. A stream applies it to one byte stream fed in chunks: every
 * span found becomes `[REDACTED:KIND]`, whatever the chunking, holding back
 * only the bytes that could still start a match. Redaction is best effort
 * (doc/redact.md): within its rules it never lets a match through and never
 * changes other bytes.
 *
 * Threads: a redactor may be shared by any number of streams and threads as
 * long as nobody adds to it meanwhile; a stream belongs to one thread at a
 * time. A stream keeps the rules it was created with.
 */
#ifndef SBXRUN_REDACT_H
#define SBXRUN_REDACT_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_redactor sbx_redactor;
typedef struct sbx_redact_stream sbx_redact_stream;

/**
 * A new redactor with the built-in shapes and no secret values.
 *
 * @return the redactor, or NULL when out of memory. Free with
 *         sbx_redactor_free().
 * @since 1.0
 */
SBX_API sbx_redactor *sbx_redactor_new(void);

/**
 * Free a redactor, wiping the values it holds. Streams made from it keep
 * working. NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_redactor_free(sbx_redactor *r);

/**
 * What went wrong in the most recent failing call on the redactor: "" when
 * the last call on it that can fail succeeded (each such call clears it
 * first). Getters and sbx_redactor_last_error() itself never change it.
 * Owned by the handle, valid until the next call on it that can fail. Never
 * NULL; for a NULL handle, "invalid argument: the handle is NULL". Never
 * contains a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_redactor_last_error(const sbx_redactor *r);

/**
 * Register a secret value: it is redacted as `[REDACTED:secret]`, and so are
 * its percent-encoded and JSON-escaped forms, whatever the encoder escaped
 * (escapes are decoded while comparing), and its base64 forms (standard and
 * URL-safe alphabets, at the three byte alignments, also wrapped across
 * lines). A value with several lines also redacts each line of at least 8
 * bytes (blank lines and PEM armor lines aside). Streams created before the
 * call do not see it. The rules are built again at the next use (a stream,
 * a redaction, a transcript or client taking the redactor), so values
 * added one after another cost one build.
 *
 * @param value  the bytes (copied; wiped on free).
 * @param len    at least 8 (shorter values would redact ordinary text).
 * @return SBX_OK, SBX_E_INVALID_ARG (NULL, shorter than 8 bytes, longer than
 *         4096), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_redactor_add_secret(sbx_redactor *r, const uint8_t *value, size_t len);

/**
 * Register the value of the environment variable `name` as a secret (this
 * reads the process environment).
 *
 * @return SBX_OK, SBX_E_NOT_FOUND (the variable is not set),
 *         SBX_E_INVALID_ARG (as sbx_redactor_add_secret(), naming the
 *         variable, never its value), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_redactor_add_secret_env(sbx_redactor *r, const char *name);

/**
 * Turn the built-in shapes on (the default) or off (only registered values
 * are redacted).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG.
 * @since 1.0
 */
SBX_API sbx_status sbx_redactor_set_shapes(sbx_redactor *r, int enabled);

/**
 * Redact a whole buffer at once (a stream fed once and finished).
 *
 * @param r        the redactor (not modified, its last_error included: safe
 *                 to share between threads).
 * @param out      receives the redacted bytes, with a NUL after them for
 *                 convenience; free it with sbx_free().
 * @param out_len  receives its length; may be NULL.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_redactor_redact(const sbx_redactor *r, const uint8_t *data, size_t len, uint8_t **out,
                                       size_t *out_len);

/**
 * A stream over r's rules as they are now.
 *
 * @return the stream, or NULL when r is NULL or memory runs out.
 * @since 1.0
 */
SBX_API sbx_redact_stream *sbx_redact_stream_new(const sbx_redactor *r);

/**
 * Free a stream; bytes it held back are dropped (wiped). NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_redact_stream_free(sbx_redact_stream *s);

/**
 * Feed the next chunk. What can be decided is returned at once; the bytes
 * that could still start a match are held back until more input or
 * sbx_redact_stream_finish() decides them.
 *
 * @param out      receives the redacted output of this call (may be empty),
 *                 owned by s and valid until the next call on s.
 * @param out_len  receives its length.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (after finish),
 *         SBX_E_NOMEM (nothing of the chunk was consumed).
 * @since 1.0
 */
SBX_API sbx_status sbx_redact_stream_feed(sbx_redact_stream *s, const uint8_t *data, size_t len,
                                          const uint8_t **out, size_t *out_len);

/**
 * End the stream: decide and return the bytes still held back. Further
 * feeds fail with SBX_E_MISUSE.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (finished twice),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_redact_stream_finish(sbx_redact_stream *s, const uint8_t **out, size_t *out_len);

/**
 * How many spans of a kind the stream has replaced so far ("secret",
 * "github", "aws", ...), or of every kind when kind is NULL.
 * @since 1.0
 */
SBX_API uint64_t sbx_redact_stream_count(const sbx_redact_stream *s, const char *kind);

/**
 * The counts per kind as a JSON object (`{"github": 2, "secret": 1}`), kinds
 * with no redaction left out.
 *
 * @param out  receives the JSON; free it with sbx_free().
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_redact_stream_counts_to_json(const sbx_redact_stream *s, char **out);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_REDACT_H */
