/* ssd_tier.h - the local-disk chunk tier: one sparse file per object
 * version under a cache directory, its chunks indexed in RocksDB, so a
 * restarted daemon is warm at once.
 *
 * Layout under cfg->dir (0700, owned by us, not a symlink):
 *   index/            RocksDB: format version, owner, chunk size; one
 *                     record per stored chunk (length, a checksum per
 *                     block of SSD_BLOCK bytes, access statistics); small
 *                     metadata blobs (ssd_tier_meta_*)
 *   objects/XX/NAME   one file per object version (0600), NAME a hash of
 *                     its key and cache id: the object's bytes at their
 *                     own offsets, the chunks not stored left as holes.
 * Because a file holds its object at its own offsets, the kernel can read
 * a file wholly on SSD by itself (FUSE passthrough: ssd_tier_object_open).
 *
 * Every byte the daemon reads here is provable: each block's checksum,
 * computed from the bytes the store sent, is checked on every read (a bad
 * or missing block is a miss, counted, the chunk dropped, never wrong
 * bytes and never an error).  A chunk is written, synced and read back
 * from the disk before its record is written ("verified on admission"),
 * so what the kernel reads by itself was right when it was stored;
 * ssd_tier_scrub() re-reads stored chunks at a bounded rate to catch the
 * disk changing it since.  Writes, evictions (holes punched) and index
 * updates run on one background thread, in batches with one fdatasync
 * per file; a failing disk (ENOSPC, EIO) marks the tier degraded and
 * refuses insertions, it never fails a read.  Bounds: stored bytes
 * (chunk lengths rounded up to 4 KiB) <= capacity (when not 0), and the
 * cache's filesystem keeps >= min_free_pct percent free, each exceeded by
 * at most the batch being written.
 *
 * At open, records whose file is missing or whose bytes are a hole are
 * dropped, files without records are deleted, and space a killed writer
 * left in a file without a record is punched out (a record is written
 * after its bytes and deleted before them, so a kill leaves only the
 * latter).  A cache of another format (the chunk files
 * of format 1) is refused, or wiped with cfg->wipe.
 *
 * All functions are thread-safe.
 */
#ifndef TIERFS_SSD_TIER_H
#define TIERFS_SSD_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evict/evict.h"
#include "evict/plan.h"
#include "tiers/chunk_id.h"
#include "tiers/pin_set.h"
#include "tiers/tier_stats.h"

struct ssd_tier;

/* Bytes one checksum covers (a chunk smaller than this is one block). */
#define SSD_BLOCK (64u << 10)

struct ssd_tier_config {
	const char *dir;           /* cache root; created (0700) if missing */
	const char *owner;         /* what the cache belongs to, e.g.
				    * "https://host:port bucket prefix/" */
	uint64_t capacity;         /* bytes of chunk files; 0 = no bound but min_free_pct */
	unsigned min_free_pct;     /* keep this much of the filesystem free (0..99) */
	enum evict_kind policy;    /* eviction and admission (0 = LRU when left out) */
	size_t chunk_size;         /* the mount's chunk size; part of the cache's identity */
	unsigned queue_max;        /* chunks waiting for the writer on callers'
				    * buffers (>= 1) */
	uint64_t queue_bytes;      /* and their bytes, at most (past this by one
				    * chunk); 0 = counted in chunks only */
	uint64_t spill_max;        /* bytes of copies of readers' chunks that wait
				    * for the writer when those are full (0 = none:
				    * such chunks are dropped) */
	bool no_verify;            /* skip reading each chunk back after it is written */
	uint64_t scrub_rate;       /* bytes per second the writer re-reads and checks
				    * when it has had nothing to do for a second
				    * (ssd_tier_scrub); 0 = no background scrub */
	bool wipe;                 /* a cache of another owner/format/chunk size:
				    * wipe it instead of refusing */
	uint64_t front_bytes;      /* the RAM tier's size: it answers a chunk's
				    * reads while it holds it, so a returning
				    * chunk reaches this tier's policy that much
				    * later (evict_policy_set_front) */
};

/* Open (or create) the cache.  TFS_OK and *out, or an error with a message
 * for the user in err: the directory is a symlink, not ours, not 0700-able,
 * belongs to another owner, format or chunk size (without wipe), or is in
 * use by another daemon. */
int ssd_tier_open(const struct ssd_tier_config *cfg, struct ssd_tier **out, char *err,
		  size_t errlen);

/* Finish queued writes, persist access statistics, close.  NULL is a no-op. */
void ssd_tier_close(struct ssd_tier *t);

/* Read chunk id into buf (cap bytes), set *len.  TFS_OK on a verified hit;
 * TFS_MISS when not stored or when the stored copy is bad (then dropped and
 * counted).  Never another result.  reader: an access of the policy; a
 * fetch ahead's read is not (see ssd_tier_access). */
int ssd_tier_read(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t cap,
		  size_t *len, bool reader);

/* Read bytes [off, off + len) of chunk id, a chunk of expect_len bytes:
 * the whole blocks that cover them go into buf (at least
 * ssd_tier_span_max(len) bytes, block-aligned reads are not required),
 * each checked; *span_off is where buf starts in the chunk (a multiple of
 * SSD_BLOCK), *span_len how many bytes it holds.  TFS_OK, or TFS_MISS as
 * ssd_tier_read (a stored chunk of another length is a miss).  visit: an
 * access of the policy, as a whole read by a reader is; a later piece of
 * the same visit is not (a chunk read in eight pieces is asked for once). */
int ssd_tier_read_range(struct ssd_tier *t, const struct chunk_id *id, size_t expect_len,
			size_t off, size_t len, void *buf, size_t *span_off, size_t *span_len,
			bool visit);
/* The most bytes ssd_tier_read_range() puts in buf for len bytes. */
size_t ssd_tier_span_max(size_t len);

/* A reader read chunk id and this tier did not serve it (it missed, or
 * RAM had a copy a fetch ahead brought): an access all the same.
 * W-TinyLFU admits a chunk asked for more often than its victim, which it
 * can tell only if it counted the asks that missed; without them a chunk
 * not admitted at its first fetch never was, and a hot set that moved
 * never got in.  Not for a fetch ahead: the read that consumes the chunk
 * is the access, so a chunk read once counts once however it came (a
 * chunk read ahead and never counted lost every duel to one that was:
 * the next epoch evicted it unread). */
void ssd_tier_access(struct ssd_tier *t, const struct chunk_id *id);
/* How often the policy has seen chunk id asked for (W-TinyLFU's
 * estimate, evict_policy_frequency; 0 for other policies).  For
 * diagnosis: not an access. */
unsigned ssd_tier_policy_count(struct ssd_tier *t, const struct chunk_id *id);

/* The file of one object version wholly on SSD, for the kernel to read
 * itself: when every chunk of the object (size bytes, key and cache_id)
 * is stored, *fd is the file opened read-only and the object is held:
 * none of its chunks is evicted (nor punched out) until
 * ssd_tier_object_release().  TFS_OK, or TFS_MISS (a chunk missing, the
 * tier degraded, the file gone).  The caller closes fd when it is done
 * with it (the hold is separate). */
int ssd_tier_object_open(struct ssd_tier *t, const char *key, const char *cache_id,
			 uint64_t size, int *fd);
/* Another open of an object held by ssd_tier_object_open(), which shares
 * its file: an access of every chunk, as the first open was. */
void ssd_tier_object_reopened(struct ssd_tier *t, const char *key, const char *cache_id,
			      uint64_t size);
void ssd_tier_object_release(struct ssd_tier *t, const char *key, const char *cache_id);

/* Read back up to max_bytes of stored chunks (counted in the whole blocks
 * read), oldest checked first and each at most once a call, from the disk
 * (not the page cache) and drop those whose blocks no longer match their
 * checksums (counted as checksum failures).  Returns the bytes read.
 * Blocks for the reads: run it off the read path. */
uint64_t ssd_tier_scrub(struct ssd_tier *t, uint64_t max_bytes);

/* Called exactly once when the tier no longer needs a stored chunk's data. */
typedef void (*ssd_tier_release_fn)(void *arg);

/* Queue chunk id (len bytes at data, which must stay valid and unchanged
 * until release(arg)) to be written in the background.  When queue_max
 * chunks, or queue_bytes of them, wait already, a copy is queued instead
 * (and release(arg) called at once) while the copies stay within
 * spill_max bytes.  TFS_OK when queued.  Refused, with release(arg)
 * already called: TFS_AGAIN when the writer is behind (queue and copies
 * full; counted as dropped: offer it again later, while its bytes are at
 * hand), TFS_MISS otherwise (already stored or queued, degraded, len >
 * chunk_size: nothing to offer again). */
int ssd_tier_store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		   ssd_tier_release_fn release, void *arg);
/* ssd_tier_store() of a chunk it answered TFS_AGAIN: a refusal is not
 * counted again, a store is counted as resaved. */
int ssd_tier_store_again(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg);
/* ssd_tier_store_again() of buf, a heap buffer aligned to 4 KiB that the
 * tier takes over: it waits for the writer as one of the copies, within
 * spill_max bytes, and is freed when written; refused (TFS_AGAIN when
 * the copies are full), it is freed at once. */
int ssd_tier_store_owned(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t len);
/* ssd_tier_store() that waits for room in the queue rather than drop the
 * chunk (a fetch ahead of a reader: no reader waits on it).  The
 * admission policy still decides. */
bool ssd_tier_store_wait(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg);

/* Let the loader's plan steer the tier (Belady's rule with the plan as
 * the future; evict/plan.h): a chunk the plan is DONE with once read is
 * stored only in free room, never by evicting (it is the furthest needed
 * of all); and eviction passes over chunks of objects the plan reads
 * later (SOON) while the policy has another victim.  The question is
 * asked when the writer stores the chunk, not when it is queued, with
 * the tier's lock held (the slot's lock is a leaf).  plans is borrowed
 * and must outlive its use; NULL turns it off, and once this returns the
 * old one is no longer read. */
void ssd_tier_set_plan(struct ssd_tier *t, struct plan_slot *plans);

/* ssd_tier_store() for an operator's warm-up: the admission policy is
 * not asked (victims are still evicted to make room), and a full write
 * queue is waited for, not a refusal. */
bool ssd_tier_store_forced(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			   size_t len, ssd_tier_release_fn release, void *arg);

/* ssd_tier_store_forced() for a chunk fetched ahead of a reader that
 * reads it once this epoch (a scan): until that reader reads it
 * (ssd_tier_read) or ssd_tier_new_epoch(), eviction passes it over.  The
 * caller asks ssd_tier_ahead_room() before fetching: a fetch ahead takes
 * free room, never the resident set kept for the next epoch. */
bool ssd_tier_store_ahead(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			  size_t len, ssd_tier_release_fn release, void *arg);
/* Is there free room for len more bytes, counting what is queued? */
bool ssd_tier_ahead_room(struct ssd_tier *t, uint64_t len);
/* Every file is needed again: the marks of chunks fetched ahead and not
 * read are void (a reader that stopped must not hold room forever). */
void ssd_tier_new_epoch(struct ssd_tier *t);

/* Bytes the tier may occupy now: its capacity, or when unbounded (or the
 * disk is fuller) what it holds plus the free space above --ssd-min-free. */
uint64_t ssd_tier_room(struct ssd_tier *t);

/* The length of chunk id if stored, else 0.  Not an access. */
size_t ssd_tier_contains(struct ssd_tier *t, const struct chunk_id *id);

/* Pinned chunks are never evicted: a chunk's pin is decided when it is
 * stored, by asking pins (borrowed, outlives its use; NULL = none)
 * whether its key is pinned on SSD, and changed by ssd_tier_pin_key().
 * Pins are not persisted. */
void ssd_tier_set_pins(struct ssd_tier *t, struct pin_set *pins);
/* Pin or unpin the stored chunks of object key, every version (found
 * through the index); key NULL: of every object.  How many changed. */
size_t ssd_tier_pin_key(struct ssd_tier *t, const char *key, bool on);

/* Evict chunk id now (its bytes are punched out in the background;
 * readers see a miss at once): SSD_EVICT_DONE (its bytes added to
 * *bytes), _ABSENT, _PINNED, or _BUSY (its object is held open for the
 * kernel to read). */
enum { SSD_EVICT_DONE, SSD_EVICT_ABSENT, SSD_EVICT_PINNED, SSD_EVICT_BUSY };
int ssd_tier_evict(struct ssd_tier *t, const struct chunk_id *id, uint64_t *bytes);
/* Evict every stored chunk that is not pinned or held; adds to the
 * counts (held chunks count as pinned). */
void ssd_tier_evict_all(struct ssd_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned);

/* In the background: delete every stored chunk of object key whose cache
 * id is not keep_etag (NULL: every chunk of key), and those versions'
 * files (a reader holding one open keeps reading it).  Reclaims the space
 * of versions that can never be served again. */
void ssd_tier_drop_versions(struct ssd_tier *t, const char *key, const char *keep_etag);

/* Wait until every write and drop queued so far is done (tests, warm-up). */
void ssd_tier_flush(struct ssd_tier *t);

/* Small metadata records kept in the index beside the chunks (the fs keeps
 * directory listings there).  name: any string; value: up to 64 MiB.
 * put/del: TFS_OK or an error (the tier may be degraded); get: TFS_OK with
 * *value (malloc'd, caller frees) and *len, TFS_MISS, or an error. */
int ssd_tier_meta_put(struct ssd_tier *t, const char *name, const void *value, size_t len);
int ssd_tier_meta_get(struct ssd_tier *t, const char *name, void **value, size_t *len);
int ssd_tier_meta_del(struct ssd_tier *t, const char *name);

void ssd_tier_stats(struct ssd_tier *t, struct tier_stats *out);

#endif
