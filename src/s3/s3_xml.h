/* s3_xml.h - parse S3 XML replies with libxml2: ListObjectsV2 pages and
 * error bodies.  Pure functions, thread-safe, no I/O.
 */
#ifndef TIERFS_S3_XML_H
#define TIERFS_S3_XML_H

#include <stdbool.h>
#include <stddef.h>

#include "s3/objstore.h"

/* Parse untrusted XML of at most max bytes (named name in libxml2's
 * messages, which go nowhere): NULL if it is empty, too long, malformed,
 * carries a DTD or has no root element.  Never loads anything.  The
 * caller frees the document with xmlFreeDoc(). */
struct _xmlDoc *s3_xml_read(const char *xml, size_t len, size_t max, const char *name);

/* Parse a ListObjectsV2Result.  url_encoded: the request used
 * encoding-type=url, so Key/Prefix values are percent-decoded (a decoded
 * key may contain any byte, NUL included; key_len tells its length and
 * the string is NUL-terminated after it).  As AWS form-encodes, '+'
 * decodes to a space (a literal '+' arrives as %2B, from radosgw too).
 * An <EncodingType> in the reply overrides url_encoded.  On success *out
 * is a new page.  TFS_E_PROTO on malformed XML, any DTD, a missing
 * required element (IsTruncated; Key and Size of each Contents;
 * NextContinuationToken when truncated) or a bad escape, number or date. */
int s3_xml_parse_list(const char *xml, size_t len, bool url_encoded,
		      struct obj_list_page **out);

/* As s3_xml_parse_list(); with generations (Google Cloud Storage), an
 * entry whose <Contents> names a <Generation> gets "gen:N" as its etag:
 * the version a GET can be pinned to (see s3_client.h). */
int s3_xml_parse_list_v(const char *xml, size_t len, bool url_encoded, bool generations,
			struct obj_list_page **out);

/* Parse an <Error> body into ei->code / ei->message (truncated to fit;
 * GCS's <Details> stands in for an empty <Message>).
 * Returns TFS_OK if an <Error><Code> was found, TFS_E_PROTO otherwise
 * (ei untouched except on success). */
int s3_xml_parse_error(const char *xml, size_t len, struct tfs_errinfo *ei);

/* Map an HTTP status and S3 error code to a tfs_err (404 / NoSuchKey ->
 * TFS_E_NOENT, NoSuchBucket -> TFS_E_NOBUCKET, InvalidAccessKeyId /
 * SignatureDoesNotMatch -> TFS_E_AUTH, 403 -> TFS_E_ACCESS, 412 ->
 * TFS_E_STALE, 416 -> TFS_E_RANGE, 5xx / 429 / SlowDown -> TFS_E_IO).
 * code may be NULL or "".  *retryable is set for transient errors. */
int s3_error_map(int http_status, const char *code, bool *retryable);

#endif
