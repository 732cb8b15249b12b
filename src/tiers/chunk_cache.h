/* chunk_cache.h - the read chain: RAM tier -> SSD tier -> shared tier ->
 * object store.
 *
 * A reader asks for chunk `index` of one object version.  A RAM hit is
 * served at once.  A RAM miss fills a RAM slot (single-flight: concurrent
 * misses on one chunk wait for one fill) from the SSD tier when it holds a
 * verified copy (promotion), else from the shared tier when there is one
 * and it has a verified copy (shared_tier.h), else from the object store,
 * the last link of the chain (parallel ranged GETs, store_fetch.h); a
 * chunk fetched from the store is then queued for the SSD tier and the
 * shared tier (write-behind, so a restart
 * or kill -9 finds it without a GET; the RAM buffer stays referenced
 * until written).  The SSD tier is optional, and a failing one is a miss:
 * it can slow a read down, never fail it.  Prefetch, scans, plans and an
 * operator's warm-up ask for chunks here like any reader; nothing below
 * calls back up.
 * Thread-safe.
 */
#ifndef TIERFS_CHUNK_CACHE_H
#define TIERFS_CHUNK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evict/evict.h"
#include "evict/plan.h"
#include "s3/objstore.h"
#include "tiers/chunk_id.h"
#include "tiers/part_cache.h"
#include "tiers/pin_set.h"
#include "tiers/ram_tier.h"
#include "tiers/shared_tier.h"
#include "tiers/tier_stats.h"

struct chunk_cache;
struct ssd_tier;
struct access_trace;

struct chunk_cache_config {
	struct objstore *store;    /* borrowed; outlives the cache */
	unsigned parallel_gets;    /* ranged GETs a chunk somebody waits for is fetched with (>= 1) */
	uint64_t ram_bytes;        /* RAM tier capacity (>= chunk_size) */
	enum evict_kind ram_policy;   /* 0 (LRU) when left out */
	size_t chunk_size;
	struct ssd_tier *ssd;      /* borrowed, outlives the cache; NULL = RAM only */
	struct shared_tier *shared; /* borrowed, outlives the cache; NULL = none */
	uint64_t ahead_bytes;      /* read-ahead protected from eviction (0 = none) */
	/* blocks kept for random readers (part_cache.h; 0 = none: a random
	 * read fetches its whole chunk) */
	uint64_t part_bytes;
	/* called when the SSD writer, done with a fetch ahead's RAM copy,
	 * makes room in RAM for the next (from its thread, no lock of the
	 * cache held; NULL = none): ram_tier_set_room_made() */
	void (*room_made)(void *arg);
	void *room_arg;
};

struct chunk_cache_stats {
	struct tier_stats ram, ssd;
	bool has_ssd;
	uint64_t store_fetches;    /* chunk fills from the object store */
	uint64_t store_bytes;      /* bytes those fills brought */
	uint64_t store_errors;     /* fills that failed */
	bool has_part;
	struct part_cache_stats part;
	bool has_shared;
	struct shared_tier_stats shared;
	size_t pinned_files;       /* keys pinned by an operator */
	uint64_t pinned_ram, pinned_ssd;   /* their bytes, per tier */
};

/* What an operator's eviction did: chunks dropped (a chunk in both tiers
 * counts twice) and their bytes; chunks kept as pinned, or in use. */
struct chunk_cache_evicted {
	uint64_t chunks, bytes, pinned, busy;
};

/* NULL on bad config or out of memory. */
struct chunk_cache *chunk_cache_new(const struct chunk_cache_config *cfg);
/* Every reference must be put first.  Does not close the SSD tier. */
void chunk_cache_free(struct chunk_cache *cc);

/* Chunks of an object of size bytes, and the length of chunk index. */
uint64_t chunk_cache_chunks(const struct chunk_cache *cc, uint64_t size);
size_t chunk_cache_chunk_len(const struct chunk_cache *cc, uint64_t size, uint64_t index);

/* A reference to chunk index of o (index < chunk_cache_chunks()), from
 * RAM, SSD, or the store.  A copy of another length than o's chunk (a
 * store that reused an ETag for other bytes) is never served: SSD copies
 * are fetched again, a RAM chunk gives TFS_E_STALE.  *out is set on TFS_OK
 * only; chunk_ref_put() it.  Errors are the store's (TFS_E_STALE: the
 * object changed since o was learnt). */
int chunk_cache_get(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		    struct chunk_ref **out);

/* A reader's bytes [off, off + len) of chunk index of o (len > 0, within
 * the chunk): *data points to them.  From RAM: *ref is the chunk's
 * reference (chunk_ref_put() it).  Absent from RAM but on SSD: only the
 * 64 KiB blocks that cover the range are read and checked, into a buffer
 * of ours, *span (free() it), and nothing enters RAM: a random 1 MiB read
 * costs 1 MiB of SSD reads, not a whole chunk promoted.  Absent from
 * both, for a random reader (random: one that seeks and reads less than a
 * chunk between seeks) when the cache keeps blocks for them: only the
 * blocks that cover the range are fetched, into *span, and kept; the
 * read that would bring a chunk's blocks to half of it fetches the rest,
 * and the chunk is then a reader's fill in RAM (*ref set).  Otherwise as
 * chunk_cache_get() (*ref set).  Errors as chunk_cache_get().
 * how: CHUNK_READ_RANDOM for a random reader; CHUNK_READ_VISIT when the
 * read begins the reader's visit of the chunk (the caller knows its
 * reader's passes: fs_read): the one access of the SSD tier's policy for
 * it, whichever tier serves it; the visit's other reads are not. */
enum { CHUNK_READ_RANDOM = 1, CHUNK_READ_VISIT = 2 };
int chunk_cache_read(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		     size_t off, size_t len, unsigned how, struct chunk_ref **ref, void **span,
		     const void **data);

/* The SSD tier's file of o, when every chunk of o is stored there, for
 * the kernel to read by itself (FUSE passthrough): TFS_OK with *fd (a
 * read-only descriptor the caller closes) and o held: none of its chunks
 * is evicted or punched out until chunk_cache_backing_release(o).
 * TFS_MISS otherwise (no SSD tier, a chunk missing, the tier degraded). */
int chunk_cache_backing_open(struct chunk_cache *cc, const struct chunk_obj *o, int *fd);
/* Another open of o while it is held (the kernel shares the file it
 * has): counted as the first was, an access of every chunk. */
void chunk_cache_backing_reopened(struct chunk_cache *cc, const struct chunk_obj *o);
void chunk_cache_backing_release(struct chunk_cache *cc, const struct chunk_obj *o);

/* Whether a fetch ahead is still wanted, asked once its RAM slot is
 * claimed and before any byte is fetched (a reader that comes after the
 * claim waits for this fetch instead of making its own).  Called with no
 * lock of the cache held; it may take the caller's locks, but must not
 * wait for a chunk. */
typedef bool chunk_cache_wanted_fn(void *arg);

/* Bring chunk index of o into the RAM tier ahead of its reader (from SSD,
 * or the store, then queued for SSD like a reader's chunk, waiting for
 * room in the SSD tier's queue where a reader's would be dropped).
 * TFS_OK when fetched; TFS_AGAIN when present or in flight already, or
 * when RAM has no slot to spare; errors are the store's.  Blocks for the
 * fill: call it from a read-ahead worker, never a reader.  epoch: for a
 * job that reads each file once an epoch (RAM_AHEAD_EPOCH).  near: its
 * reader is close behind (a stream whose read-ahead still widens), so a
 * fetch from the store comes in parts as a reader's miss does; else in
 * one GET.  wanted (may be NULL): TFS_E_INTR, nothing fetched, when it
 * says no. */
int chunk_cache_prefetch(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
			 bool epoch, bool near, chunk_cache_wanted_fn *wanted, void *arg);

/* A scan's fetch ahead of its reader: chunk_cache_prefetch() for a job
 * that reads each file once an epoch, whose chunk also goes to the SSD
 * tier's free room, asked for before the fetch, and is kept there until
 * its reader reads it or the epoch ends (ssd_tier_store_ahead).  With no
 * free room nothing is fetched: the set the tier keeps for the next epoch
 * is never evicted for a fetch ahead.  TFS_OK, *fetched false: the SSD
 * tier holds it; TFS_AGAIN: in RAM already, no free room on SSD, or no
 * RAM slot to spare (then nothing was fetched); TFS_E_INVAL: no SSD tier;
 * TFS_E_INTR: wanted said no (nothing fetched). */
int chunk_cache_prefetch_ssd(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
			     bool *fetched, chunk_cache_wanted_fn *wanted, void *arg);

/* Bring chunk index of o into tier (an operator's warm-up).  PIN_RAM: as a reader's miss would (RAM, then SSD
 * write-behind).  PIN_SSD: straight to the SSD tier, past its admission
 * policy, in a private buffer (no RAM slot taken); nothing fetched when a
 * copy of the right length is there.  *fetched: the store supplied it.
 * TFS_E_INVAL: PIN_SSD without an SSD tier; TFS_AGAIN: the SSD tier would
 * not take it (full of pins, degraded); else the store's errors.  Blocks
 * for the fetch. */
int chunk_cache_warm(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		     enum pin_tier tier, bool *fetched);

/* ref (held) was read through by a reader that reads its file once this
 * epoch: evicted first from RAM (ram_tier_read_done).  new_epoch: every
 * file is needed again. */
void chunk_cache_read_done(struct chunk_cache *cc, struct chunk_ref *ref);
void chunk_cache_new_epoch(struct chunk_cache *cc);

/* Room for one more chunk of read-ahead within files: the read-ahead in
 * flight or fetched and not read yet, with len more bytes, stays within
 * the bound the cache protects from eviction (chunk_cache_config
 * .ahead_bytes).  Past it, new read-ahead would evict the older while
 * their reader has yet to come: not issued. */
bool chunk_cache_ahead_room(struct chunk_cache *cc, size_t len);

/* Chunks [first, end) of o, read ahead, are awaited no more: their
 * reader closed the file or left the stream (ram_tier_ahead_forget), so
 * they stop counting against chunk_cache_ahead_room(). */
void chunk_cache_ahead_forget(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t first,
			      uint64_t end);

/* Is chunk index of o in RAM, or being filled there?  Not an access. */
bool chunk_cache_in_ram(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index);

/* Bytes of o present in RAM and on SSD.  Not an access; no I/O. */
void chunk_cache_residency(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t *ram,
			   uint64_t *ssd);

/* Evict o's chunks from tiers (a mask of PIN_RAM and PIN_SSD), or every
 * chunk; pinned chunks and chunks in use stay.  Writes to the SSD tier
 * queued before the call land first, so none of them outlives it.  Adds
 * to *ev. */
void chunk_cache_evict(struct chunk_cache *cc, const struct chunk_obj *o, unsigned tiers,
		       struct chunk_cache_evicted *ev);
void chunk_cache_evict_all(struct chunk_cache *cc, unsigned tiers, struct chunk_cache_evicted *ev);

/* Wait until every write to the SSD tier queued so far is done (a warm-up
 * that replies when its chunks are stored).  No-op without an SSD tier. */
void chunk_cache_flush(struct chunk_cache *cc);

/* Pin keys[0..n) (sizes[i] bytes each) in tier: their chunks there are
 * never evicted (in the other tier they are ordinary).  All or nothing:
 * TFS_E_NOSPC when the tier's pinned bytes would exceed
 * chunk_cache_pin_limit() (*would_be: what they would have been),
 * TFS_E_INVAL for PIN_SSD without an SSD tier, TFS_E_TOOBIG past
 * PIN_SET_MAX keys.  Does not fetch. */
int chunk_cache_pin(struct chunk_cache *cc, const char *const *keys, const uint64_t *sizes,
		    size_t n, enum pin_tier tier, uint64_t *would_be);
/* The most a tier may hold pinned: half the RAM tier (readers need the
 * rest), 90% of what the SSD tier may occupy. */
uint64_t chunk_cache_pin_limit(struct chunk_cache *cc, enum pin_tier tier);
/* Unpin key (true when it was pinned) / every key (how many were). */
bool chunk_cache_unpin(struct chunk_cache *cc, const char *key);
size_t chunk_cache_unpin_all(struct chunk_cache *cc);
enum pin_tier chunk_cache_pinned(struct chunk_cache *cc, const char *key);

/* Let the loader's plan steer the SSD tier (ssd_tier_set_plan); NULL
 * turns it off.  plans is borrowed. */
void chunk_cache_set_plan(struct chunk_cache *cc, struct plan_slot *plans);

/* Start (t) or stop (NULL) recording readers' chunk accesses into an
 * access trace; returns the trace recorded until now (the caller stops
 * it), after every reader that was recording into it has finished. */
struct access_trace *chunk_cache_trace_swap(struct chunk_cache *cc, struct access_trace *t);

/* Object key is now at version keep_etag: reclaim the space of its other
 * versions' chunks (in the background). */
void chunk_cache_forget_versions(struct chunk_cache *cc, const char *key, const char *keep_etag);

/* Small metadata records kept beside the chunks, in the SSD tier's index
 * (the fs keeps directory listings there): ssd_tier_meta_put/get/del.
 * TFS_MISS from every call without an SSD tier. */
bool chunk_cache_has_ssd(const struct chunk_cache *cc);
int chunk_cache_meta_put(struct chunk_cache *cc, const char *name, const void *value, size_t len);
int chunk_cache_meta_get(struct chunk_cache *cc, const char *name, void **value, size_t *len);
int chunk_cache_meta_del(struct chunk_cache *cc, const char *name);

/* Count bytes handed to a reader out of chunk buffers (every byte read is
 * served from the RAM tier's buffers, whichever tier filled them). */
void chunk_cache_count_served(struct chunk_cache *cc, uint64_t bytes);

void chunk_cache_stats(struct chunk_cache *cc, struct chunk_cache_stats *out);

#endif
