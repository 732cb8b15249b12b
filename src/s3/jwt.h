/* jwt.h - JSON Web Tokens signed with RS256 (RSASSA-PKCS1-v1_5 over
 * SHA-256, RFC 7515/7518) on OpenSSL, as a Google service account signs the
 * assertion it trades for an access token (RFC 7523).
 *
 * Pure functions, thread-safe.  Private keys are parsed from PEM for each
 * call and freed (OpenSSL clears RSA key material it frees); nothing is
 * logged.
 */
#ifndef TIERFS_JWT_H
#define TIERFS_JWT_H

#include <stddef.h>

#include "common/tfs_err.h"

/* base64url without padding (RFC 7515 section 2).  New string, or NULL
 * when out of memory. */
char *jwt_b64url_encode(const void *data, size_t len);

/* Decode base64url (padding optional).  TFS_OK with a new buffer (NUL-
 * terminated after out_len bytes), TFS_E_INVAL on a bad character or
 * length, TFS_E_NOMEM. */
int jwt_b64url_decode(const char *s, size_t len, unsigned char **out, size_t *out_len);

/* RS256 signature of data with a PEM private key (PKCS#8 "PRIVATE KEY"
 * as in a service-account key, or PKCS#1 "RSA PRIVATE KEY").  TFS_OK with
 * *sig (new buffer, *sig_len bytes); TFS_E_INVAL when the key is not a
 * usable RSA private key (ei says so, never showing the key). */
int jwt_rs256_sign(const char *pem_key, const void *data, size_t len,
		   unsigned char **sig, size_t *sig_len, struct tfs_errinfo *ei);

/* The compact JWT  b64url(header) "." b64url(claims) "." b64url(sig)
 * with header {"alg":"RS256","typ":"JWT"[,"kid":kid]}.  claims_json is the
 * claim set, already serialised; kid may be NULL.  TFS_OK with *out (new
 * string) or as jwt_rs256_sign(). */
int jwt_make_rs256(const char *pem_key, const char *kid, const char *claims_json,
		   char **out, struct tfs_errinfo *ei);

/* Check an RS256 signature over data with a PEM public key ("PUBLIC
 * KEY") or private key.  TFS_OK when valid, TFS_E_AUTH when not,
 * TFS_E_INVAL for an unusable key. */
int jwt_rs256_verify(const char *pem_key, const void *data, size_t len,
		     const unsigned char *sig, size_t sig_len);

#endif
