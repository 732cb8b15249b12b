/* ram_tier.h - a bounded RAM cache of object chunks.
 *
 * Buffers are refcounted: a chunk being replied from is never freed or
 * reused under its reader, and replies point into it (no copy).
 * Concurrent misses on one chunk run the fill function once (single-flight);
 * the others wait for its result.  A hit takes one of many stripe locks for
 * a hash probe, never a tier-wide lock, and allocates nothing.
 *
 * Memory bound: capacity bytes of chunk buffers, each the size of the
 * chunk it holds (rounded up to 4 KiB) when the caller tells its length: a
 * dataset of 100 KB images fills a 256 MiB tier with ~2,600 of them, not
 * 32 chunk-sized slots.  There is a slot per 64 KiB of capacity (or per
 * chunk when chunks are smaller), which bounds the count.  When every slot
 * is referenced a miss is served from a private buffer freed at its last
 * unref, so usage exceeds the bound only by chunks in flight: one per
 * reading thread, plus those a caller keeps referenced (the SSD tier's
 * write queue, bounded by its queue_max).
 * Victims are chosen by an eviction policy from src/evict (LRU, LFU or
 * W-TinyLFU); a hit's access reaches it through a per-stripe buffer, so
 * the hit path takes no tier-wide lock.
 * Thread-safe.
 */
#ifndef TIERFS_RAM_TIER_H
#define TIERFS_RAM_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evict/evict.h"
#include "tiers/chunk_id.h"
#include "tiers/tier_stats.h"

struct ram_tier;
struct chunk_ref;

/* Fill buf (cap bytes) with the chunk's bytes; set *len.  Returns a
 * tfs_err code; on failure nothing is cached. */
typedef int (*ram_tier_fill_fn)(void *ctx, const struct chunk_id *id, void *buf,
				size_t cap, size_t *len);

/* capacity_bytes >= chunk_size; policy chooses victims.  NULL on out of
 * memory. */
struct ram_tier *ram_tier_new(uint64_t capacity_bytes, size_t chunk_size, enum evict_kind policy);
void ram_tier_free(struct ram_tier *t);   /* every ref must be put first */

/* Get a reference to chunk id, filling it through fill(ctx, ...) on a miss
 * into a buffer of expect_len bytes (rounded up to 4 KiB; 0 = unknown: a
 * whole chunk), which is the cap fill gets.  *out is set on TFS_OK only;
 * the caller must chunk_ref_put() it. */
int ram_tier_get(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		 ram_tier_fill_fn fill, void *ctx, struct chunk_ref **out);

/* Read chunk id ahead of its reader: fill it through fill(ctx, ...) unless
 * it is present or in flight already (TFS_AGAIN), or no slot can be taken
 * without overflowing (TFS_AGAIN, counted as dropped).  On TFS_OK *out is
 * a reference to the filled chunk (put it).  Until a reader gets it, the
 * chunk is marked read-ahead: evicted only when nothing else can be, while
 * it is among the latest read-ahead bytes (ram_tier_set_ahead_limit);
 * a reader's first get makes it used (late if the fill was still running),
 * an eviction before that makes it wasted. */
int ram_tier_prefetch(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		      ram_tier_fill_fn fill, void *ctx, struct chunk_ref **out);

/* The same for a job that reads each file once an epoch (a plan, a
 * scan): the slot is free, or a chunk read through this epoch
 * (ram_tier_read_done) is evicted for it, never one the epoch has yet to
 * read: fetching one file early at the cost of fetching another again is
 * no gain.  TFS_AGAIN (dropped) when there is no such slot. */
int ram_tier_prefetch_epoch(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
			    ram_tier_fill_fn fill, void *ctx, struct chunk_ref **out);

/* Protect at most `bytes` of the latest read-ahead (counted by buffer
 * size) from eviction (0, the default: none). */
void ram_tier_set_ahead_limit(struct ram_tier *t, uint64_t bytes);

/* Pinned chunks are never evicted; a chunk's pin is decided when it is
 * inserted, by fn(ctx, key) (called under a stripe lock: fn must not call
 * into the tier), and changed by ram_tier_pin().  Set before use. */
typedef bool (*ram_tier_pinned_fn)(void *ctx, const char *key);
void ram_tier_set_pinned_fn(struct ram_tier *t, ram_tier_pinned_fn fn, void *ctx);
/* Pin or unpin the present chunks (filled or being filled) of object key,
 * every version; key NULL: of every object.  How many changed.  O(slots). */
size_t ram_tier_pin_key(struct ram_tier *t, const char *key, bool on);

/* The caller, holding r, has read chunk r through and will not read it
 * again this epoch (its file is read once an epoch, by a loader's plan or
 * a scan): when something must be evicted, such chunks go first, the
 * latest first (Belady's rule for a job that reads every file once an
 * epoch; see ram_tier.c).  ram_tier_new_epoch(): every file is needed
 * again; the marks made so far are void. */
void ram_tier_read_done(struct chunk_ref *r);
void ram_tier_new_epoch(struct ram_tier *t);

/* The length of chunk id if it is present and filled, else 0.  Takes one
 * stripe lock; counts nothing (residency queries are not accesses). */
size_t ram_tier_contains(struct ram_tier *t, const struct chunk_id *id);

/* Is chunk id filled or being filled?  (A fill in flight will be stored
 * on SSD by its own write-behind.) */
bool ram_tier_present(struct ram_tier *t, const struct chunk_id *id);

/* Evict chunk id now, on an operator's request: RAM_EVICT_DONE (its bytes
 * added to *bytes), _ABSENT, _PINNED, or _BUSY (being read or filled). */
enum { RAM_EVICT_DONE, RAM_EVICT_ABSENT, RAM_EVICT_PINNED, RAM_EVICT_BUSY };
int ram_tier_evict(struct ram_tier *t, const struct chunk_id *id, uint64_t *bytes);
/* Evict every chunk that is not pinned or in use; adds to the counts. */
void ram_tier_evict_all(struct ram_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned);

const void *chunk_ref_data(const struct chunk_ref *r);
size_t chunk_ref_len(const struct chunk_ref *r);
/* Another reference to a chunk the caller already holds one on. */
struct chunk_ref *chunk_ref_dup(struct chunk_ref *r);
/* Drop one reference.  NULL is a no-op.  Lock-free. */
void chunk_ref_put(struct chunk_ref *r);

void ram_tier_stats(struct ram_tier *t, struct tier_stats *out);

#endif
