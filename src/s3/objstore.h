/* objstore.h - the object-store interface every backend implements (S3
 * SigV4 today; GCS and test fakes later) and every upper layer calls.
 *
 * An implementation embeds `struct objstore` as its FIRST member and points
 * `ops` at a static ops table.  All calls are thread-safe and blocking; they
 * retry transient failures internally, so an error returned here is final.
 * No cache knowledge lives behind this interface.
 */
#ifndef TIERFS_OBJSTORE_H
#define TIERFS_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/latency_hist.h"
#include "common/tfs_err.h"

#define OBJ_ETAG_MAX 128   /* ETag as the server sent it, quotes included */

struct obj_meta {
	uint64_t size;
	int64_t mtime;             /* Last-Modified, seconds since the epoch */
	char etag[OBJ_ETAG_MAX];
};

/* One object in a listing page.  `key` is the full, decoded key. */
struct obj_list_entry {
	char *key;
	size_t key_len;            /* keys may contain NUL after URL decoding */
	struct obj_meta meta;
};

/* One decoded common prefix (ends with the delimiter). */
struct obj_list_prefix {
	char *prefix;
	size_t prefix_len;
};

/* One page of ListObjectsV2.  Owned by the caller; free with
 * obj_list_page_free(). */
struct obj_list_page {
	struct obj_list_entry *entries;
	size_t n_entries;
	struct obj_list_prefix *prefixes;
	size_t n_prefixes;
	bool truncated;
	char *next_token;          /* NULL when !truncated */
};

void obj_list_page_free(struct obj_list_page *page);

/* Counters since the store was opened (monotonic). */
struct objstore_stats {
	uint64_t requests;         /* HTTP requests sent, retries included */
	uint64_t gets, heads, lists;
	uint64_t retries;
	uint64_t errors;           /* calls that failed after retries */
	uint64_t bytes_received;   /* body bytes of successful GETs */
	uint64_t throttles;        /* answers asking to slow down (503 SlowDown, 429) */
	uint64_t rate_waits;       /* requests that waited for the send rate */
	uint64_t rate_limit;       /* requests/s the client sends at most now; 0 = no limit */
	/* Duration of every completed attempt (connect if any, send, wait,
	 * receive; not the wait for a connection nor backoff sleeps),
	 * success or failure, retries included.  Read it with
	 * latency_hist_quantile(); latency_hist_snap_sub() of two snapshots
	 * gives the attempts between them. */
	struct latency_hist_snap latency;
};

struct objstore;

struct objstore_ops {
	/* HEAD key.  TFS_E_NOENT when absent. */
	int (*head)(struct objstore *os, const char *key, struct obj_meta *out,
		    struct tfs_errinfo *ei);
	/* GET bytes [off, off+len) of key into buf (caller-owned, >= len
	 * bytes).  if_match: ETag the object must still have (NULL = any);
	 * a mismatch is TFS_E_STALE.  *got = bytes stored; it is < len only
	 * when the object ends before off+len.  A short or over-long body is
	 * retried, never returned as data.  len == 0 sends nothing (TFS_OK,
	 * *got = 0).  An empty object gives TFS_OK, *got = 0 for off == 0;
	 * off at or past the end of a non-empty object is TFS_E_RANGE (S3
	 * answers 416 there without the size, so callers that know the size
	 * should not ask). */
	int (*get_range)(struct objstore *os, const char *key, const char *if_match,
			 uint64_t off, size_t len, void *buf, size_t *got,
			 struct tfs_errinfo *ei);
	/* One ListObjectsV2 page.  delimiter may be NULL; token is the
	 * previous page's next_token or NULL; max_keys 0 = server default.
	 * *out is allocated on success only. */
	int (*list)(struct objstore *os, const char *prefix, const char *delimiter,
		    const char *token, unsigned max_keys, struct obj_list_page **out,
		    struct tfs_errinfo *ei);
	/* Fill *out (about 3.3 KB: keep it off small stacks in hot loops).
	 * Lock-free.  NULL in a backend that counts nothing (all zeros). */
	void (*stats)(struct objstore *os, struct objstore_stats *out);
	void (*free)(struct objstore *os);
};

struct objstore {
	const struct objstore_ops *ops;
};

static inline int objstore_head(struct objstore *os, const char *key,
				struct obj_meta *out, struct tfs_errinfo *ei)
{
	return os->ops->head(os, key, out, ei);
}

static inline int objstore_get_range(struct objstore *os, const char *key,
				     const char *if_match, uint64_t off, size_t len,
				     void *buf, size_t *got, struct tfs_errinfo *ei)
{
	return os->ops->get_range(os, key, if_match, off, len, buf, got, ei);
}

static inline int objstore_list(struct objstore *os, const char *prefix,
				const char *delimiter, const char *token,
				unsigned max_keys, struct obj_list_page **out,
				struct tfs_errinfo *ei)
{
	return os->ops->list(os, prefix, delimiter, token, max_keys, out, ei);
}

static inline void objstore_stats(struct objstore *os, struct objstore_stats *out)
{
	if (os->ops->stats)
		os->ops->stats(os, out);
	else
		*out = (struct objstore_stats){ 0 };
}

static inline void objstore_free(struct objstore *os)
{
	if (os)
		os->ops->free(os);
}

#endif
