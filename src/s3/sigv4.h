/* sigv4.h - AWS Signature Version 4 for S3 requests (OpenSSL HMAC/SHA-256).
 *
 * Pure functions, no I/O, thread-safe.  The canonical query string is
 * built sorted, every parameter with '=', values percent-encoded (RFC 3986
 * unreserved set), as AWS and radosgw require.
 */
#ifndef TIERFS_SIGV4_H
#define TIERFS_SIGV4_H

#include <stddef.h>

#include "common/tfs_err.h"

/* Hex SHA-256 of data (65 bytes out, NUL-terminated). */
void sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* Percent-encode src (len bytes) per SigV4: unreserved A-Za-z0-9-._~ kept,
 * '/' kept when keep_slash, everything else %XX (upper-case hex).  Writes at
 * most cap bytes incl. NUL; returns the length, or -1 if cap is too small. */
long sigv4_uri_encode(const char *src, size_t len, int keep_slash, char *dst, size_t cap);

struct sigv4_header { const char *name; const char *value; };
struct sigv4_param { const char *name; const char *value; };  /* raw, unencoded */

struct sigv4_request {
	const char *method;         /* "GET" */
	const char *canonical_uri;  /* already encoded path, e.g. "/bucket/a%20b" */
	const struct sigv4_param *params;  size_t n_params;  /* any order */
	const struct sigv4_header *headers; size_t n_headers; /* to be signed; must include host, x-amz-date, x-amz-content-sha256 */
	const char *payload_hash;   /* hex SHA-256 or "UNSIGNED-PAYLOAD" */
	const char *amz_date;       /* "20130524T000000Z" */
	const char *region;
	const char *service;        /* "s3" */
	const char *access_key;
	const char *secret_key;
};

/* Build the canonical query string (sorted, encoded) into dst.
 * Returns length or -1 if cap is too small. */
long sigv4_canonical_query(const struct sigv4_param *params, size_t n, char *dst, size_t cap);

/* Compute the Authorization header value into dst (cap bytes).
 * TFS_OK, or TFS_E_INVAL / TFS_E_TOOBIG.  Header names are lower-cased and
 * sorted, values trimmed, as the spec says. */
int sigv4_authorization(const struct sigv4_request *req, char *dst, size_t cap);

/* Same, also returning the intermediate canonical request and string to
 * sign (for tests against AWS's published examples).  Either may be NULL. */
int sigv4_authorization_debug(const struct sigv4_request *req, char *dst, size_t cap,
			      char *canon_out, size_t canon_cap,
			      char *sts_out, size_t sts_cap);

#endif
