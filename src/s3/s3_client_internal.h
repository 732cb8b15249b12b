/* s3_client_internal.h - the response-header parser of s3_client.c, for
 * its unit tests and fuzz target only (the daemon never calls this).
 */
#ifndef TIERFS_S3_CLIENT_INTERNAL_H
#define TIERFS_S3_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/objstore.h"

/* What the header parser kept of one response. */
struct s3_headers_seen {
	long status;               /* of the last status line, 0 if none or malformed */
	bool over;                 /* more than the header bound: the transfer is aborted */
	bool have_len;
	uint64_t content_length;
	bool have_etag, etag_too_long;
	char etag[OBJ_ETAG_MAX];
	char last_modified[64];
	char generation[24];
	bool have_crange, crange_total_known;
	uint64_t cr_start, cr_end, cr_total;
};

/* Feed buf (len bytes: header lines, each ending in '\n' except perhaps
 * the last) to the parser line by line, exactly as curl hands them over,
 * and report what it kept.  Thread-safe, no I/O. */
void s3_client_parse_headers(const char *buf, size_t len, struct s3_headers_seen *out);

#endif
