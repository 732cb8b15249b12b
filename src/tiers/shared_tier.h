/* shared_tier.h - a chunk tier shared by every node of a cluster, kept as
 * objects in an S3-compatible bucket near the nodes (a Ceph RGW or MinIO
 * cluster, S3 Express One Zone): the link between the local SSD tier and
 * the origin.
 *
 * A chunk's object is named by a SHA-256 of (origin, key, cache id, chunk
 * size, index), so any key is safe in the name and a changed origin
 * object (new ETag or generation) has other names: never served stale.
 * Each object carries its length and a checksum (x-amz-meta-tierfs-sum,
 * XXH3-128 of the bytes seeded by the name) verified on every read: a
 * corrupt, truncated or misplaced copy is a miss, and the chunk the
 * caller then fetches from the origin is written over it.
 *
 * A miss on a chunk nobody has written claims it: a small claim object,
 * created with "If-None-Match: *", so one node of all those that miss it
 * at once wins and fetches it from the origin; the others poll the
 * chunk's object for a bounded time and fall back to the origin (a claim
 * older than 30 s more is stale: taken over at once; a claimer whose
 * write is dropped lets go of its claim).  Chunks the origin
 * supplied are copied into a bounded queue and written by background
 * threads, create-only (a chunk written by another node is kept).
 *
 * Faults never fail a read: every request has a short timeout and no
 * retry, and consecutive failures open a breaker during which the tier is
 * skipped (a miss at once, writes dropped); it closes on the first
 * success after the pause.  The bucket is never listed: its size is the
 * store's business (a lifecycle rule).
 * Thread-safe.
 */
#ifndef TIERFS_SHARED_TIER_H
#define TIERFS_SHARED_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/objstore.h"
#include "tiers/chunk_id.h"

struct shared_tier;

struct shared_tier_config {
	/* the shared bucket's client: an S3 client (s3_client_objstore()),
	 * made with a short request timeout and no retries; owned by the
	 * tier from shared_tier_new() on, even when it fails */
	struct objstore *store;
	const char *prefix;        /* "" or "dir/" : where in the bucket */
	const char *origin;        /* names the origin (scheme, endpoint, bucket) */
	size_t chunk_size;
	uint64_t queue_bytes;      /* bytes queued for writing at most (0 = 64 MiB,
	                            * at least a chunk); 256 writes at most */
	uint64_t spill_bytes;      /* more a reader's copy may take beyond it, as
	                            * it may not wait for room (0 = 64 MiB, or four
	                            * chunks if more) */
	unsigned writers;          /* threads writing (0 = 4, at most 8) */
	unsigned claim_wait_ms;    /* how long a node waits at least for a chunk
	                            * another node claimed (0 = 2000); longer when
	                            * this node's own claims take longer to be
	                            * written (see shared_tier_get()) */
	unsigned put_wait_ms;      /* how long a put that may wait waits for room
	                            * in the queue (0 = 1000) */
	unsigned pause_ms;         /* first pause of the breaker (0 = 1000); it
	                            * doubles on each failed probe up to 32x */
};

struct shared_tier_stats {
	uint64_t hits, misses;     /* lookups answered / not (skipped ones included) */
	uint64_t bytes;            /* bytes of the hits */
	uint64_t corrupt;          /* objects that failed verification */
	uint64_t errors;           /* requests that failed (timeouts included) */
	uint64_t skipped;          /* lookups not sent: the breaker was open */
	uint64_t claims;           /* chunks this node claimed and fetched */
	uint64_t claim_waits;      /* misses that waited for another node's claim */
	uint64_t claim_hits;       /* of them, served once the other node wrote it */
	uint64_t writes;           /* chunks written */
	uint64_t write_bytes;
	uint64_t write_exists;     /* writes another node had made first */
	uint64_t write_failures;   /* writes refused or failed */
	uint64_t write_dropped;    /* writes not made: queue full, breaker open */
	bool open;                 /* the breaker is open now */
	uint64_t write_queue;      /* writes queued or in flight now */
	uint64_t req_p50_us, req_p99_us;   /* latency of its requests, all kinds */
};

/* What a lookup tells its caller: the tier supplied the chunk (hit);
 * else, for the caller that fetches it from the origin next, write it over
 * a bad copy (rewrite), this node claimed it (claimed: the claim is
 * removed once the chunk is written; claimed_ms: when, clock_coarse_ms()). */
struct shared_ticket {
	bool hit, rewrite, claimed;
	int64_t claimed_ms;
};

/* NULL on bad config or out of memory (cfg->store is freed then). */
struct shared_tier *shared_tier_new(const struct shared_tier_config *cfg);
/* Write what is queued (each write bounded by the request timeout), stop
 * the writer, free the client.  NULL is a no-op. */
void shared_tier_free(struct shared_tier *st);

/* Chunk id (want bytes, 0 < want <= chunk_size) into buf.  TFS_OK: buf
 * holds its verified bytes, from the bucket or from this node's own write
 * of it still queued or in flight (no request then).  TFS_MISS: not
 * there, bad, the tier failed or is paused; the caller fetches it from the
 * origin and hands it to shared_tier_put() with *t.  Blocks for at most
 * one request, or for the claim wait when another node is fetching the
 * chunk: claim_wait_ms, or four times as long as this node's own claims
 * take to be written when that is longer (at most the 30 s after which a
 * claim is stale); it polls from half that time on, not at once. */
int shared_tier_get(struct shared_tier *st, const struct chunk_id *id, size_t want, void *buf,
		    struct shared_ticket *t);

/* Queue a copy of data (len bytes of chunk id, fetched from the origin
 * after a shared_tier_get() miss that gave t) for writing; dropped
 * (counted) when the tier is paused, or when the queue is full: unless
 * wait (a reader's fetch), at once when spill_bytes beyond queue_bytes
 * are taken too; with wait (a fetch ahead of readers), once it has stayed
 * past queue_bytes for put_wait_ms.  data is not
 * referenced after the call.  Does no I/O itself. */
void shared_tier_put(struct shared_tier *st, const struct chunk_id *id, const void *data,
		     size_t len, const struct shared_ticket *t, bool wait);

/* Wait until the queue is empty and no write is in flight. */
void shared_tier_flush(struct shared_tier *st);

void shared_tier_stats(struct shared_tier *st, struct shared_tier_stats *out);

#endif
