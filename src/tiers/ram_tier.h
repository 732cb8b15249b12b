/* ram_tier.h - a bounded RAM cache of object chunks.
 *
 * A chunk is named by (key, etag, index): a changed object (new ETag) can
 * never be served from an older version's chunks.  Buffers are refcounted:
 * a chunk being replied from is never freed or reused under its reader.
 * Concurrent misses on one chunk run the fill function once (single-flight);
 * the others wait for its result.
 *
 * Memory bound: capacity / chunk_size slots.  When every slot is referenced
 * a miss is served from a private buffer freed at its last unref, so usage
 * exceeds the bound only by chunks in flight (one per reading thread).
 * Victims are the least recently used unreferenced slots (the access-
 * frequency policy of issue 4 replaces this choice).
 * Thread-safe.
 */
#ifndef TIERFS_RAM_TIER_H
#define TIERFS_RAM_TIER_H

#include <stddef.h>
#include <stdint.h>

struct ram_tier;
struct chunk_ref;

struct chunk_id {
	const char *key;
	const char *etag;
	uint64_t index;
};

/* Fill buf (cap bytes) with the chunk's bytes; set *len.  Returns a
 * tfs_err code; on failure nothing is cached. */
typedef int (*ram_tier_fill_fn)(void *ctx, const struct chunk_id *id, void *buf,
				size_t cap, size_t *len);

/* capacity_bytes >= chunk_size.  NULL on out of memory. */
struct ram_tier *ram_tier_new(uint64_t capacity_bytes, size_t chunk_size);
void ram_tier_free(struct ram_tier *t);   /* every ref must be put first */

/* Get a reference to chunk id, filling it through fill(ctx, ...) on a miss.
 * *out is set on TFS_OK only; the caller must chunk_ref_put() it. */
int ram_tier_get(struct ram_tier *t, const struct chunk_id *id, ram_tier_fill_fn fill,
		 void *ctx, struct chunk_ref **out);

const void *chunk_ref_data(const struct chunk_ref *r);
size_t chunk_ref_len(const struct chunk_ref *r);
void chunk_ref_put(struct ram_tier *t, struct chunk_ref *r);

struct ram_tier_stats {
	uint64_t hits, misses, fills_failed, waits, evictions, overflow;
	uint64_t slots, slots_used, bytes_used;
};
void ram_tier_stats(struct ram_tier *t, struct ram_tier_stats *out);

#endif
