/* cred_util.h - small pieces the credential sources share: reading a
 * small file that may hold a secret, timestamps, JSON fields (json-c stays
 * inside cred_util.c and the sources), form encoding.
 *
 * Pure functions or single file reads; thread-safe; no globals.
 */
#ifndef TIERFS_CRED_UTIL_H
#define TIERFS_CRED_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tfs_err.h"

#define CRED_FILE_MAX (1024u * 1024)

/* Read path (a regular file of at most max bytes, no NUL byte) into a new
 * NUL-terminated buffer.  TFS_OK; TFS_MISS when it does not exist;
 * TFS_E_INVAL (message naming the file in ei) otherwise.  Free the buffer
 * with cred_wipe_free(). */
int cred_read_file(const char *path, size_t max, char **out, size_t *out_len,
		   struct tfs_errinfo *ei);

/* explicit_bzero(strlen) + free; NULL is a no-op. */
void cred_wipe_free(char *s);

/* Strip leading and trailing white space in place; returns s. */
char *cred_trim(char *s);

/* ISO 8601 / RFC 3339 time ("2024-01-02T03:04:05Z", fractions and
 * "+01:00" offsets accepted) to ms since the epoch.  false if malformed. */
bool cred_parse_time(const char *s, int64_t *out_ms);

/* application/x-www-form-urlencoded "k=v&k=v" of n pairs (values
 * percent-encoded, unreserved kept).  New string or NULL (out of memory). */
char *cred_form_encode(const char *const *pairs, size_t n);

/* Prefix ei's message with "prefix: " (ei may be NULL). */
void cred_err_prefix(struct tfs_errinfo *ei, const char *prefix);

/* s as a JSON string literal, quotes included (new string or NULL). */
char *cred_json_quote(const char *s);

struct cred_json;

/* Parse a JSON object (at most len bytes).  NULL when malformed or not an
 * object (*why says which, static text). */
struct cred_json *cred_json_parse(const char *text, size_t len, const char **why);
/* A string member, or NULL when absent or not a string (owned by j). */
const char *cred_json_str(const struct cred_json *j, const char *name);
/* An integer member (a JSON number, or a string of digits); false if absent. */
bool cred_json_int(const struct cred_json *j, const char *name, int64_t *out);
void cred_json_free(struct cred_json *j);

#endif
