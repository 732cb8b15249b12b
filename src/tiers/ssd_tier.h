/* ssd_tier.h - the local-disk chunk tier: chunk files under a cache
 * directory, indexed in RocksDB, so a restarted daemon is warm at once.
 *
 * Layout under cfg->dir (0700, owned by us, not a symlink):
 *   index/            RocksDB: format version, owner, chunk size; one
 *                     record per chunk (location, length, checksum, access
 *                     statistics); small metadata blobs (ssd_tier_meta_*)
 *   chunks/XX/NAME    one file per chunk (0600), written to a temporary
 *                     name and renamed; a header (magic, format version,
 *                     object key, cache id, chunk index, length, xxHash of
 *                     the data, checksum of the header) precedes the data
 *                     and is verified on every read.
 *
 * Every stored byte is provable: a read whose header or data checksum does
 * not match, or whose file is gone or unreadable, is a miss (counted, the
 * entry dropped), never wrong bytes and never an error.  Writes, evictions
 * and index updates run on one background thread; a failing disk (ENOSPC,
 * EIO) marks the tier degraded and refuses insertions, it never fails a
 * read.  Bounds: chunk bytes on disk <= capacity (when not 0), and the
 * cache's filesystem keeps >= min_free_pct percent free, each exceeded by
 * at most the one chunk being written.
 *
 * At open, temporary files of an interrupted write are deleted, index
 * records whose file is missing are dropped, and chunk files without a
 * record (killed between rename and index update) are adopted when their
 * header is valid, deleted otherwise.
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

struct ssd_tier_config {
	const char *dir;           /* cache root; created (0700) if missing */
	const char *owner;         /* what the cache belongs to, e.g.
				    * "https://host:port bucket prefix/" */
	uint64_t capacity;         /* bytes of chunk files; 0 = no bound but min_free_pct */
	unsigned min_free_pct;     /* keep this much of the filesystem free (0..99) */
	enum evict_kind policy;    /* eviction and admission (0 = LRU when left out) */
	size_t chunk_size;         /* the mount's chunk size; part of the cache's identity */
	unsigned queue_max;        /* chunks waiting for the writer (>= 1) */
	bool wipe;                 /* a cache of another owner/format/chunk size:
				    * wipe it instead of refusing */
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
 * counted).  Never another result. */
int ssd_tier_read(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t cap,
		  size_t *len);

/* Called exactly once when the tier no longer needs a stored chunk's data. */
typedef void (*ssd_tier_release_fn)(void *arg);

/* Queue chunk id (len bytes at data, which must stay valid and unchanged
 * until release(arg)) to be written in the background.  true when queued;
 * false when refused (queue full, degraded, len > chunk_size, already
 * stored), and then release(arg) has already been called. */
bool ssd_tier_store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		    ssd_tier_release_fn release, void *arg);
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

/* Evict chunk id now (its file is deleted in the background; readers see
 * a miss at once): SSD_EVICT_DONE (its bytes added to *bytes), _ABSENT or
 * _PINNED. */
enum { SSD_EVICT_DONE, SSD_EVICT_ABSENT, SSD_EVICT_PINNED };
int ssd_tier_evict(struct ssd_tier *t, const struct chunk_id *id, uint64_t *bytes);
/* Evict every stored chunk that is not pinned; adds to the counts. */
void ssd_tier_evict_all(struct ssd_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned);

/* In the background: delete every stored chunk of object key whose cache
 * id is not keep_etag (NULL: every chunk of key).  Reclaims the space of
 * versions that can never be served again. */
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
