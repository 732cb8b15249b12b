/* cred_provider.h - credentials for an object store, shared by every
 * thread of a mount and refreshed before they expire.
 *
 * A `struct cred` is one immutable set of credentials: S3-style keys
 * (access key, secret, optional session token), used to sign, or an
 * OAuth 2 bearer token, sent as is.  It is reference-counted: a caller
 * holds one for the length of one request and drops it with cred_put(),
 * so a refresh never frees credentials a request is still signing with.
 *
 * A `struct cred_provider` owns a source (a fetch function: STS, IMDS, a
 * token endpoint...) and the current credentials.  cred_provider_get()
 * hands out the current ones; when they near their expiry the first caller
 * to notice fetches new ones while every other caller goes on with the old
 * ones, and only when none are valid any more do callers wait for a fetch.
 * See cred_provider.c for the timing rules.
 *
 * Thread-safe.  No secret ever reaches a log line or a tfs_errinfo.
 */
#ifndef TIERFS_CRED_PROVIDER_H
#define TIERFS_CRED_PROVIDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tfs_err.h"

enum cred_kind { CRED_KEYS = 1, CRED_BEARER = 2 };

struct cred {
	enum cred_kind kind;
	char *access_key;          /* CRED_KEYS */
	char *secret_key;          /* CRED_KEYS */
	char *session_token;       /* CRED_KEYS; NULL = none */
	char *token;               /* CRED_BEARER */
	int64_t expires_ms;        /* wall clock, ms since the epoch; 0 = never */
	atomic_int refs;
};

/* New credentials with one reference (strings copied).  NULL when out of
 * memory or when a required string is NULL or empty.  session_token may
 * be NULL or "" (none). */
struct cred *cred_new_keys(const char *access_key, const char *secret_key,
			   const char *session_token, int64_t expires_ms);
struct cred *cred_new_bearer(const char *token, int64_t expires_ms);

/* Take / drop a reference.  The last cred_put() wipes the secrets and
 * frees c.  NULL is a no-op. */
void cred_get(struct cred *c);
void cred_put(struct cred *c);

/* Where credentials come from. */
struct cred_source {
	/* Fetch new credentials: blocking, bounded in time by the source.
	 * TFS_OK with *out (one reference, given to the caller); or a failure
	 * with a message in ei that names the source and never a secret.
	 * Called by one thread at a time. */
	int (*fetch)(void *ctx, struct cred **out, struct tfs_errinfo *ei);
	/* Release ctx (NULL = nothing to release). */
	void (*free)(void *ctx);
	void *ctx;
	/* The source is the store itself (S3 Express sessions): a fetch
	 * that failed as TFS_E_IO or TFS_E_CONNECT (no answer, a timeout,
	 * 5xx after the retries) is reported as that, the store being down,
	 * instead of TFS_E_AUTH, so that callers treat it as an outage. */
	bool pass_outage;
};

struct cred_provider_opts {
	/* Wall clock in ms since the epoch; NULL = CLOCK_REALTIME.  Tests
	 * pass their own clock. */
	int64_t (*now_ms)(void *arg);
	void *now_arg;
	unsigned retry_min_ms;     /* first wait after a failed refresh; 0 = 1000 */
	unsigned retry_max_ms;     /* cap of the doubling waits; 0 = 60000 */
};

struct cred_provider;

/* A provider that fetches from src.  desc says where credentials come
 * from, for messages and `tierfs config` ("web identity (role ARN ...)");
 * it must hold no secret.  opts may be NULL.  Does no I/O: the first
 * cred_provider_get() fetches.  Owns src->ctx from this call on, even when
 * it returns NULL (out of memory). */
struct cred_provider *cred_provider_new(const char *desc, const struct cred_source *src,
					const struct cred_provider_opts *opts);

/* A provider that always hands out c (which must not expire); takes the
 * caller's reference to c, even when it returns NULL. */
struct cred_provider *cred_provider_new_static(const char *desc, struct cred *c);

/* The current credentials, refreshed first when needed (see above).
 *   TFS_OK     *out holds one reference: cred_put() it when done.
 *   TFS_E_AUTH no valid credentials could be had: the last fetch failed
 *              (its message in ei) and the previous credentials, if any,
 *              have expired.  After a failure, fetches are retried with
 *              doubling waits, so a broken source is not hammered: a call
 *              inside such a wait fails at once with the last message.
 * With src->pass_outage, a fetch that failed as TFS_E_IO or
 * TFS_E_CONNECT gives that instead of TFS_E_AUTH.
 * Thread-safe. */
int cred_provider_get(struct cred_provider *p, struct cred **out, struct tfs_errinfo *ei);

/* The server refused c (an expired or revoked token): the next
 * cred_provider_get() fetches new credentials, unless c is no longer the
 * current set or never expires.  Thread-safe. */
void cred_provider_invalidate(struct cred_provider *p, const struct cred *c);

/* Does this provider refresh (false for static credentials)? */
bool cred_provider_refreshes(const struct cred_provider *p);

/* What the provider was created with as desc (owned by p). */
const char *cred_provider_desc(const struct cred_provider *p);

/* Counters for tests and stats: successful fetches, failed fetches. */
void cred_provider_counts(struct cred_provider *p, uint64_t *fetches, uint64_t *failures);

/* Free p, its source and its credentials (no call may be in flight).
 * NULL is a no-op. */
void cred_provider_free(struct cred_provider *p);

#endif
