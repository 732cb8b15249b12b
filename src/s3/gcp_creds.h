/* gcp_creds.h - OAuth 2 access tokens for Google Cloud Storage, as a
 * cred_provider of bearer tokens, found where Google's client libraries
 * find them (Application Default Credentials):
 *
 *   1. GOOGLE_APPLICATION_CREDENTIALS names a JSON file:
 *        "type": "service_account": an RS256 JWT assertion signed with its
 *          private_key (iss client_email, scope devstorage.read_only, aud
 *          its token_uri, one hour), exchanged at its token_uri
 *          (RFC 7523 jwt-bearer grant);
 *        "type": "authorized_user" (gcloud auth application-default
 *          login): its refresh_token exchanged at its token_uri, else
 *          https://oauth2.googleapis.com/token;
 *   2. the same file where gcloud writes it:
 *      $CLOUDSDK_CONFIG/application_default_credentials.json, else
 *      ~/.config/gcloud/application_default_credentials.json;
 *   3. the GCE / GKE metadata server at GCE_METADATA_HOST, else
 *      metadata.google.internal (not tried when NO_GCE_CHECK=true and
 *      GCE_METADATA_HOST is unset); its token of the default service
 *      account, asked with "Metadata-Flavor: Google".  An unreachable
 *      default server means "not on Google Cloud", not an error.
 * A token_uri or metadata host over plain http must be a loopback address
 * (a signed assertion or refresh token never crosses a network in clear).
 * Tokens are refreshed by the provider before they expire.
 *
 * Reads the environment: call at start-up.  Thread-safe providers.
 */
#ifndef TIERFS_GCP_CREDS_H
#define TIERFS_GCP_CREDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/tfs_err.h"
#include "s3/cred_provider.h"

#define GCP_SCOPE_READ_ONLY "https://www.googleapis.com/auth/devstorage.read_only"
#define GCP_TOKEN_URI_DEFAULT "https://oauth2.googleapis.com/token"

/* Resolve the chain above: TFS_OK with *out; TFS_MISS when nothing is
 * configured; < 0 with a message in ei for a file that is malformed, of an
 * unsupported type, or a metadata server that answers wrongly.  May do
 * network I/O (the metadata probe). */
int gcp_creds_chain(struct cred_provider **out, struct tfs_errinfo *ei);

/* A provider from one credentials file (service_account or
 * authorized_user).  Does no network I/O. */
int gcp_creds_from_file(const char *path, struct cred_provider **out, struct tfs_errinfo *ei);

/* ---- exposed for unit tests (pure functions) ---- */

/* A token endpoint's or metadata server's reply: {"access_token",
 * "expires_in", "token_type": "Bearer"}, or {"error",
 * "error_description"} (TFS_E_AUTH, both in ei).  now_ms: when it came. */
int gcp_creds_parse_token(const char *json, size_t len, int64_t now_ms, struct cred **out,
			  struct tfs_errinfo *ei);

/* The signed JWT assertion for a service-account key file's JSON text,
 * issued at now_s.  TFS_OK with *out (new string). */
int gcp_creds_sa_assertion(const char *key_json, size_t len, int64_t now_s, char **out,
			   struct tfs_errinfo *ei);

#endif
