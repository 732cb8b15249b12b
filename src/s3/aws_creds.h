/* aws_creds.h - S3 credentials from wherever the AWS SDKs find them, as a
 * cred_provider: static keys, web identity (STS), credential_process,
 * container credentials, EC2 instance profiles (IMDSv2).
 *
 * Chain, first match wins (botocore's order, less SSO and assume-role
 * profiles):
 *   with an explicit profile (--profile): that profile only: its keys in
 *      the shared credentials file, else its credential_process in the
 *      shared config file;
 *   1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN;
 *   2. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *      (+ AWS_ROLE_SESSION_NAME), AssumeRoleWithWebIdentity at
 *      AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else STS of the region
 *      (AWS_REGION / AWS_DEFAULT_REGION; the global endpoint without one);
 *      the token file is read again at every refresh (it rotates);
 *   3. the shared credentials file, profile AWS_PROFILE or "default";
 *   4. credential_process of that profile in the shared config file
 *      (AWS_CONFIG_FILE, else ~/.aws/config; "[default]" or
 *      "[profile NAME]"), run with /bin/sh -c, stdout JSON (Version 1);
 *   5. container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI, else
 *      http://169.254.170.2 + AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with
 *      the Authorization header from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
 *      (read at every refresh) or AWS_CONTAINER_AUTHORIZATION_TOKEN; plain
 *      http only to loopback and the ECS/EKS agent addresses;
 *   6. EC2 instance profile through IMDSv2 (session token, then the
 *      role's credentials) at AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 *      http://169.254.169.254, unless AWS_EC2_METADATA_DISABLED=true; an
 *      unreachable IMDS means "not on EC2", not an error.
 * Temporary credentials (2, 4 with an Expiration, 5, 6) are refreshed by
 * the provider before they expire.
 *
 * Reads the environment: call at start-up.  Thread-safe providers.
 */
#ifndef TIERFS_AWS_CREDS_H
#define TIERFS_AWS_CREDS_H

#include <stddef.h>

#include "common/tfs_err.h"
#include "s3/cred_provider.h"

/* Resolve the chain above.  profile: --profile (NULL = not given).
 *   TFS_OK    *out is a provider (its description names the source and,
 *             for keys, no more than the key id's first 4 characters).
 *   TFS_MISS  nothing configured (the caller may go anonymous).
 *   < 0       a configuration error, or a source that was found but
 *             failed (message in ei).
 * May do network I/O (the IMDS probe) and run credential_process. */
int aws_creds_chain(const char *profile, struct cred_provider **out, struct tfs_errinfo *ei);

/* ---- parsers, exposed for unit tests (pure functions) ---- */

/* An AssumeRoleWithWebIdentity reply (or an STS ErrorResponse: TFS_E_AUTH
 * with its code and message in ei). */
int aws_creds_parse_sts(const char *xml, size_t len, struct cred **out, struct tfs_errinfo *ei);

/* An S3 Express One Zone CreateSession reply (<CreateSessionResult>
 * <Credentials> with the session's AccessKeyId, SecretAccessKey,
 * SessionToken and Expiration). */
int aws_creds_parse_session(const char *xml, size_t len, struct cred **out,
			    struct tfs_errinfo *ei);

/* A credentials JSON document: the container endpoint's and IMDS's
 * ("AccessKeyId", "SecretAccessKey", "Token", "Expiration", IMDS's "Code"
 * must be "Success" when present) or credential_process's ("Version": 1,
 * "SessionToken").  Expiration optional only when allow_no_expiry. */
int aws_creds_parse_json(const char *json, size_t len, int allow_no_expiry,
			 struct cred **out, struct tfs_errinfo *ei);

/* The value of `key` in section [section] of an INI-style AWS config text
 * (new string), or NULL.  Comments (#, ;) and white space handled as the
 * AWS CLI does; no line-length limit. */
char *aws_config_value(const char *text, const char *section, const char *key);

#endif
