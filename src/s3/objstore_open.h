/* objstore_open.h - the one call that turns a mount's source into a
 * working object store: find credentials for the scheme, build the
 * backend, get the first credentials, check the bucket.
 *
 * s3://  credentials from the AWS chain (aws_creds.h), endpoint as given
 *        (else AWS for the region), SigV4.  A bucket named NAME--ZONE--x-s3
 *        is an S3 Express One Zone directory bucket: the chain's
 *        credentials ask it for sessions (CreateSession), and the sessions
 *        sign the requests (see s3_config.express).
 * gs://  Google Cloud Storage's XML API at the endpoint given, else
 *        https://storage.googleapis.com, always path-style (GCS bucket
 *        names may hold '_' and dots), SigV4 region "auto".  Credentials:
 *          1. HMAC keys of a profile named with --profile or AWS_PROFILE
 *             (shared credentials file, as for S3);
 *          2. HMAC keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY;
 *          3. Google's Application Default Credentials (gcp_creds.h).
 *        The default profile of ~/.aws/credentials is not used: on a node
 *        that has both, those keys are meant for S3.
 * With nothing found, requests go unsigned (public buckets).
 *
 * Not thread-safe (start-up); the store it returns is.
 */
#ifndef TIERFS_OBJSTORE_OPEN_H
#define TIERFS_OBJSTORE_OPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "s3/objstore.h"

enum objstore_scheme { OBJSTORE_S3 = 0, OBJSTORE_GCS = 1 };

struct objstore_source {
	enum objstore_scheme scheme;
	const char *bucket;          /* required */
	const char *prefix;          /* checked for with one LIST; NULL = "" */
	const char *endpoint;        /* NULL = the scheme's default */
	const char *region;          /* S3 only; NULL = us-east-1 */
	bool path_style;             /* S3 only (GCS is always path-style) */
	const char *profile;         /* --profile, or NULL */
	unsigned max_connections, max_retries, stall_timeout_ms; /* as s3_config */
	unsigned connect_timeout_ms, request_timeout_ms;          /* as s3_config */
	bool adaptive_rate;                                       /* as s3_config */
	bool skip_check;             /* tools: no credentials fetch, no LIST */
	bool read_only;              /* only reads will be sent (a mount's origin):
	                              * an S3 Express bucket is asked for
	                              * ReadOnly sessions */
};

/* Open src.  TFS_OK: *out is the store (objstore_free() it) and desc (may
 * be NULL) says where its credentials come from, never a secret: e.g.
 * "environment, key AKIA...", "service account x@y (key file F)", "none
 * (anonymous requests)".  Otherwise a tfs_err and one line for the user in
 * err ("credentials: ...", "no such bucket 'b' at E", ...). */
int objstore_open(const struct objstore_source *src, struct objstore **out, char *desc,
		  size_t desc_len, char *err, size_t err_len);

#endif
