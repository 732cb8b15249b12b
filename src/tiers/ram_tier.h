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
 * write queue, bounded by its queue_max and queue_bytes).
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
#include "tiers/pin_set.h"
#include "tiers/tier_stats.h"

struct ram_tier;
struct chunk_ref;

/* capacity_bytes >= chunk_size; policy chooses victims.  NULL on out of
 * memory. */
struct ram_tier *ram_tier_new(uint64_t capacity_bytes, size_t chunk_size, enum evict_kind policy);
void ram_tier_free(struct ram_tier *t);   /* every ref must be put first */

/* Who asks for a chunk:
 *  RAM_READ         a reader: its miss is an access of the policy, takes a
 *                   victim if it must, and never fails for want of room
 *                   (a private buffer then, freed at its last put);
 *  RAM_AHEAD        read-ahead: TFS_AGAIN when the chunk is present or in
 *                   flight already, or when no slot can be taken without
 *                   overflowing (counted as dropped).  Until a reader gets
 *                   the chunk it is marked read-ahead: evicted only when
 *                   nothing else can be, while it is among the latest
 *                   read-ahead bytes (ram_tier_set_ahead_limit); a reader's
 *                   first get makes it used (late if its fill was still
 *                   running), an eviction before that makes it wasted;
 *  RAM_AHEAD_EPOCH  read-ahead for a job that reads each file once an
 *                   epoch (a plan, a scan): the slot is free, or a chunk
 *                   read through this epoch (ram_tier_read_done) is
 *                   evicted for it, never one the epoch has yet to read:
 *                   fetching one file early at the cost of fetching
 *                   another again is no gain.  TFS_AGAIN (dropped) when
 *                   there is no such slot.
 *  RAM_PEEK         a reader that reads a copy below itself when the chunk
 *                   is absent: a hit (or a wait for a fill in flight) as
 *                   RAM_READ; absent, TFS_MISS with no reference and no
 *                   slot taken (not counted: the caller's next lookup is). */
enum ram_mode { RAM_READ, RAM_AHEAD, RAM_AHEAD_EPOCH, RAM_PEEK };

/* Look chunk id up.
 *   TFS_OK     *out references the chunk, filled: a hit, perhaps after
 *              waiting for the fill another caller is running.
 *   TFS_MISS   the chunk is absent and this caller fills it: *out
 *              references an empty buffer (chunk_ref_buf(), of
 *              chunk_ref_cap() bytes: expect_len rounded up to 4 KiB, or
 *              a whole chunk when expect_len is 0).  Fill it from below,
 *              then call ram_tier_fill_done() exactly once; until then
 *              other callers of this chunk wait for it (single-flight).
 *   TFS_AGAIN  (read-ahead modes) see enum ram_mode; no reference.
 *   < 0        the fill another caller ran failed with this; or no memory.
 * *out is set on TFS_OK and TFS_MISS only; chunk_ref_put() it. */
int ram_tier_lookup(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		    enum ram_mode mode, struct chunk_ref **out);

/* The fill of r (a TFS_MISS of ram_tier_lookup) is over.  rc TFS_OK: the
 * len bytes in its buffer are published, waiters get them, and the caller
 * keeps its reference.  Otherwise nothing is cached, waiters get rc, and
 * the caller's reference is put.  Returns rc. */
int ram_tier_fill_done(struct ram_tier *t, struct chunk_ref *r, int rc, size_t len);

/* Give up the fill of r (a TFS_MISS of a read-ahead lookup, not yet
 * filled) when no reader waits for it: true when r is unhashed and freed
 * and the caller's reference gone; false when a reader waits, and the
 * caller fills it as usual (a waiter never gets an error for it). */
bool ram_tier_fill_withdraw(struct ram_tier *t, struct chunk_ref *r);

/* Buffer bytes of read-ahead (RAM_AHEAD, not an epoch's) in flight or
 * fetched and not read yet: a read-ahead that would take the tier's
 * protected bound past this evicts its own unread chunks, and is not
 * issued (the caller's test). */
uint64_t ram_tier_ahead_unread(struct ram_tier *t);

/* Protect at most `bytes` of the latest read-ahead (counted by buffer
 * size) from eviction (0, the default: none). */
void ram_tier_set_ahead_limit(struct ram_tier *t, uint64_t bytes);

/* Pinned chunks are never evicted; a chunk's pin is decided when it is
 * inserted, by asking pins (borrowed: it outlives the tier; NULL = none)
 * whether its key is pinned in RAM, and changed by ram_tier_pin_key().
 * Set before use. */
void ram_tier_set_pins(struct ram_tier *t, struct pin_set *pins);
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
/* Chunk r, read ahead, is kept for its reader by the tier below now (the
 * SSD tier): no longer awaited here, and evicted first, as one read
 * through.  The caller holds r. */
void ram_tier_handed_down(struct chunk_ref *r);
/* fn(arg) is called after each ram_tier_handed_down(), from its caller's
 * thread with none of the tier's locks held: room for a fetch ahead that
 * found none (NULL: nobody asks).  Set before use. */
void ram_tier_set_room_made(struct ram_tier *t, void (*fn)(void *arg), void *arg);

/* The tier below could not take chunk r when it was filled (its writer
 * was behind): r is to be offered again, at its next reader's hit
 * (chunk_ref_take_unsaved) and, at the latest, when it is evicted
 * (ram_tier_set_unsaved_evicted).  The caller holds r; an overflow chunk
 * is not marked. */
void ram_tier_mark_unsaved(struct chunk_ref *r);
/* true once for a chunk marked unsaved: the caller, holding r, offers it
 * again (and marks it again if it is refused again). */
bool chunk_ref_take_unsaved(struct chunk_ref *r);
/* fn(arg, id, buf, len) takes an unsaved chunk a miss has just evicted:
 * its len bytes in buf, a heap buffer that fn owns (and free()s, at once
 * or when done with it), aligned to 4 KiB.  Called from the evicting
 * miss's thread with none of the tier's locks held; id is valid only
 * during the call.  Up to four such buffers per miss are beyond the
 * tier's capacity until fn lets them go.  NULL (the default): evicted
 * as any other.  Set before use. */
typedef void ram_tier_unsaved_fn(void *arg, const struct chunk_id *id, void *buf, size_t len);
void ram_tier_set_unsaved_evicted(struct ram_tier *t, ram_tier_unsaved_fn *fn, void *arg);

/* The length of chunk id if it is present and filled, else 0.  Takes one
 * stripe lock; counts nothing (residency queries are not accesses). */
size_t ram_tier_contains(struct ram_tier *t, const struct chunk_id *id);

/* Is chunk id filled or being filled?  (A fill in flight will be stored
 * on SSD by its own write-behind.) */
bool ram_tier_present(struct ram_tier *t, const struct chunk_id *id);

/* Chunk id, if read ahead and not read yet, is awaited no more (its
 * reader closed the file, or left the stream): an ordinary chunk now,
 * out of ram_tier_ahead_unread(). */
void ram_tier_ahead_forget(struct ram_tier *t, const struct chunk_id *id);

/* Evict chunk id now, on an operator's request: RAM_EVICT_DONE (its bytes
 * added to *bytes), _ABSENT, _PINNED, or _BUSY (being read or filled). */
enum { RAM_EVICT_DONE, RAM_EVICT_ABSENT, RAM_EVICT_PINNED, RAM_EVICT_BUSY };
int ram_tier_evict(struct ram_tier *t, const struct chunk_id *id, uint64_t *bytes);
/* Evict every chunk that is not pinned or in use; adds to the counts. */
void ram_tier_evict_all(struct ram_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned);

const void *chunk_ref_data(const struct chunk_ref *r);
size_t chunk_ref_len(const struct chunk_ref *r);
/* The buffer a TFS_MISS hands its caller to fill, and its size. */
void *chunk_ref_buf(struct chunk_ref *r);
size_t chunk_ref_cap(const struct chunk_ref *r);
/* Another reference to a chunk the caller already holds one on. */
struct chunk_ref *chunk_ref_dup(struct chunk_ref *r);
/* Drop one reference.  NULL is a no-op.  Lock-free. */
void chunk_ref_put(struct chunk_ref *r);

void ram_tier_stats(struct ram_tier *t, struct tier_stats *out);

#endif
