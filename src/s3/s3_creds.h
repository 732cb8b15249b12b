/* s3_creds.h - find S3 credentials the way the AWS CLI does (the subset
 * tierfs needs): environment variables, then the shared credentials file.
 *
 * Resolution order:
 *   1. profile given explicitly (argument): only the shared credentials
 *      file is read, as boto3 and the AWS CLI do for --profile; the
 *      environment's keys are ignored.
 *   2. otherwise AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ optional
 *      AWS_SESSION_TOKEN) from the environment, when AWS_ACCESS_KEY_ID is
 *      set and non-empty;
 *   3. otherwise the shared credentials file, profile AWS_PROFILE or
 *      "default".
 * The file is AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials; it
 * is an INI file whose sections are profile names ("[default]", "[prod]")
 * with aws_access_key_id, aws_secret_access_key and aws_session_token.
 *
 * Reads the environment (getenv) and one file: call at start-up, before
 * threads that might setenv().  No network, no caching, no globals.
 */
#ifndef TIERFS_S3_CREDS_H
#define TIERFS_S3_CREDS_H

#include "common/tfs_err.h"

struct s3_creds {
	char *access_key;
	char *secret_key;
	char *session_token;   /* NULL when none */
	char *source;          /* where they came from, for messages: "environment"
	                        * or "FILE [profile]"; never a secret */
};

/* Resolve credentials for profile (NULL = not given explicitly).
 *   TFS_OK     *out is a new struct (free with s3_creds_free()).
 *   TFS_MISS   nothing configured (no env keys, no file, or an implicit
 *              "default" profile absent from the file): the caller may go
 *              anonymous.  *out stays NULL.
 *   TFS_E_INVAL  a configuration error, explained in ei->message: a named
 *              profile that is missing ("profile 'x' not found in FILE"),
 *              half-set environment, an unreadable or malformed file, a
 *              profile without both keys.
 *   TFS_E_NOMEM
 * ei may be NULL.  Secrets never appear in ei. */
int s3_creds_resolve(const char *profile, struct s3_creds **out, struct tfs_errinfo *ei);

/* Wipe the secrets (explicit_bzero) and free c.  NULL is a no-op. */
void s3_creds_free(struct s3_creds *c);

#endif
