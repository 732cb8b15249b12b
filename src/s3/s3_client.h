/* s3_client.h - S3 (SigV4) implementation of the objstore interface, on
 * libcurl and OpenSSL.
 *
 * Thread-safe: any number of threads may call at once; each call borrows
 * one curl handle from a bounded pool (connections are kept alive and
 * reused) and blocks while all are busy.  Transient failures (5xx, 429,
 * resets, timeouts, short bodies) are retried with capped exponential
 * backoff and full jitter; after max_retries the call fails with
 * TFS_E_IO (never TFS_E_NOENT).  Secrets never appear in logs or in
 * tfs_errinfo.
 */
#ifndef TIERFS_S3_CLIENT_H
#define TIERFS_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/cred_provider.h"
#include "s3/objstore.h"

/* Which server's dialect of the S3 XML API to speak. */
enum s3_dialect {
	S3_DIALECT_S3 = 0,         /* AWS S3 and compatible servers */
	/* Google Cloud Storage's XML API: bearer tokens as well as HMAC keys
	 * (SigV4), and object generations as the version an open pins: HEAD's
	 * x-goog-generation and a listing's <Generation> become the meta's
	 * etag "gen:N", and a GET pinned to "gen:N" sends
	 * x-goog-if-generation-match: N (a server that names no generation
	 * is pinned by ETag and If-Match, as S3 is). */
	S3_DIALECT_GCS = 1,
};

struct s3_config {
	const char *endpoint;      /* "http(s)://host[:port]"; NULL = AWS for region */
	const char *region;        /* NULL = "us-east-1" */
	const char *bucket;        /* required */
	bool path_style;           /* else virtual-hosted (bucket.host): needs a
	                            * DNS-style bucket and a host name, not an IP */
	enum s3_dialect dialect;
	/* An S3 Express One Zone directory bucket (s3_bucket_is_express()):
	 * every request is signed for the service "s3express", and data
	 * requests with a session the client asks the bucket for
	 * (CreateSession, signed with creds) and renews before it expires;
	 * its token goes in x-amz-s3session-token.  Needs credentials.
	 * Without an endpoint, the bucket's zonal endpoint is used:
	 * https://BUCKET.s3express-AZID.REGION.amazonaws.com. */
	bool express;
	bool express_read_only;    /* express: ask for ReadOnly sessions (a
	                            * mount's origin), else ReadWrite */
	/* Credentials: a provider (ownership passes to the client, even when
	 * s3_client_new() fails), else static keys, else none. */
	struct cred_provider *creds;
	const char *access_key;    /* without creds: NULL/"" = anonymous (unsigned) requests */
	const char *secret_key;
	const char *session_token; /* NULL = none */
	const char *ca_bundle;     /* NULL = $AWS_CA_BUNDLE if set, else curl's
	                            * default; read once, in s3_client_new().
	                            * TLS peer and host verification always on */
	unsigned max_connections;  /* pool bound; 0 = 16 */
	unsigned max_retries;      /* 0 = no retry */
	unsigned backoff_base_ms;  /* first backoff; 0 = 50 */
	unsigned backoff_max_ms;   /* cap; 0 = 2000 */
	unsigned connect_timeout_ms; /* 0 = 5000 */
	unsigned stall_timeout_ms; /* abort (and retry) an attempt when no byte has
	                            * moved this long after the request went out;
	                            * 0 = 15000, at least 1000, ~1 s granularity */
	unsigned request_timeout_ms; /* abort an attempt that has not ended this
	                            * long after it started; 0 = no bound */
	bool adaptive_rate;        /* after a throttle (503 SlowDown, 429), pace
	                            * every request to a learned rate
	                            * (send_rate.h); else only retries back off */
};

struct s3_client;

/* Is name an S3 Express One Zone directory bucket ("NAME--AZID--x-s3")? */
bool s3_bucket_is_express(const char *name);

/* Copy cfg (strings included) and set up the pool.  NULL on bad config
 * (message in ei->message) or out of memory.  Does no network I/O.
 * Keys passed to any call must be non-empty C strings of at most 1024
 * bytes (TFS_E_INVAL / TFS_E_NAMETOOLONG otherwise).  Connect failures
 * (refused, DNS, TLS handshake) give TFS_E_CONNECT after at most two
 * quick retries, a connect timeout after one connect_timeout_ms, so a
 * dead endpoint fails within seconds. */
struct s3_client *s3_client_new(const struct s3_config *cfg, struct tfs_errinfo *ei);

/* The objstore view of c (same lifetime; objstore_free() frees c). */
struct objstore *s3_client_objstore(struct s3_client *c);

/* The client behind an objstore that s3_client_objstore() gave, else NULL. */
struct s3_client *s3_client_of(struct objstore *os);

/* Free c; no call may be in flight.  Secrets are wiped.  NULL is a no-op. */
void s3_client_free(struct s3_client *c);

/* Check that the bucket exists and the credentials work (one LIST of at
 * most one key under prefix, prefix may be NULL).  TFS_E_NOBUCKET, TFS_E_AUTH, TFS_E_ACCESS,
 * TFS_E_CONNECT or TFS_E_IO with detail in ei. */
int s3_client_check(struct s3_client *c, const char *prefix, struct tfs_errinfo *ei);

/* Write operations, used by tests, tools and benchmarks (the mount is
 * read-only).  body may be NULL when len == 0.  On success *etag_out (if
 * not NULL, OBJ_ETAG_MAX bytes) receives the new ETag. */
int s3_client_put(struct s3_client *c, const char *key, const void *body, size_t len,
		  char *etag_out, struct tfs_errinfo *ei);
int s3_client_delete(struct s3_client *c, const char *key, struct tfs_errinfo *ei);
/* PUT the bucket; one we already own counts as success.  A
 * LocationConstraint is sent only to AWS outside us-east-1. */
int s3_client_create_bucket(struct s3_client *c, struct tfs_errinfo *ei);
/* DELETE the bucket (it must be empty: else TFS_E_* from the server's
 * BucketNotEmpty).  For tools and tests; tierfs never deletes a bucket. */
int s3_client_delete_bucket(struct s3_client *c, struct tfs_errinfo *ei);

/* Calls of a cache kept in a bucket (tiers/shared_tier.h): an object and
 * one user-metadata value (x-amz-meta-NAME) beside its bytes.  meta_name:
 * 1-32 bytes of [a-z0-9-]; meta_value: 1-127 bytes of printable ASCII,
 * no blank at either end (TFS_E_INVAL otherwise).
 * put_meta: one PUT of body; if_absent sends "If-None-Match: *", so that
 * an object present already gives TFS_E_STALE (HTTP 412) and is left as
 * it was.  get_meta: one GET of the whole object into buf (cap bytes); an
 * object larger than cap is an error (TFS_E_PROTO), never a short read;
 * *got is its size, meta_out (meta_cap bytes) the value of the metadata
 * header, "" when the object has none or a longer one.  TFS_E_NOENT when
 * absent. */
int s3_client_put_meta(struct s3_client *c, const char *key, const void *body, size_t len,
		       const char *meta_name, const char *meta_value, bool if_absent,
		       struct tfs_errinfo *ei);
int s3_client_get_meta(struct s3_client *c, const char *key, const char *meta_name, void *buf,
		       size_t cap, size_t *got, char *meta_out, size_t meta_cap,
		       struct tfs_errinfo *ei);

/* Counters since creation (see struct objstore_stats; relaxed atomics).
 * Thread-safe, lock-free. */
void s3_client_stats(struct s3_client *c, struct objstore_stats *out);

#endif
