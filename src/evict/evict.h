/* evict.h - eviction and admission policies behind one small interface.
 *
 * A policy tracks the resident set of one cache tier by 64-bit keys (the
 * tier hashes its chunk ids; collisions are the tier's concern) and
 * answers two questions: which resident key to evict next, and whether a
 * candidate that is not resident may displace that victim at all
 * (admission; a scan-resistant policy says no to one-off chunks).
 *
 * Pure data structures: no I/O, no clocks (time is the count of accesses
 * seen, so a replayed trace gives the same answers as the live daemon),
 * no threads (the caller serialises; not thread-safe).  Every operation is
 * O(1) amortised; memory is O(capacity) fixed at creation.
 *
 * The daemon's tiers and the simulator (tierfs-sim) run this very code.
 */
#ifndef TIERFS_EVICT_H
#define TIERFS_EVICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum evict_kind {
	EVICT_LRU,        /* least recently used: what the peers use */
	EVICT_LFU,        /* LFU with aging: decayed 8-bit logarithmic counters
			   * (Redis evict.c), victims by sampling */
	EVICT_TINYLFU,    /* a frequency sketch admits a candidate only if it
			   * was seen more often than the victim */
	EVICT_KIND_COUNT
};

struct evict_policy;

/* "lru", "lfu", "tinylfu" -> kind; -1 if unknown. */
int evict_kind_parse(const char *name);
const char *evict_kind_name(enum evict_kind kind);

/* A policy for up to capacity resident keys (>= 1).  NULL on bad
 * arguments or out of memory. */
struct evict_policy *evict_policy_new(enum evict_kind kind, size_t capacity);
void evict_policy_free(struct evict_policy *p);

/* Key was asked for (hit or miss).  Updates recency, frequency and the
 * admission sketch.  Call before insert on a miss. */
void evict_policy_access(struct evict_policy *p, uint64_t key);

/* Key became resident (the caller decided to admit it and made room:
 * never more than capacity resident keys).  No-op if already resident. */
void evict_policy_insert(struct evict_policy *p, uint64_t key);

/* Weighted residency, for a tier whose entries differ in size (a 100 KB
 * image and an 8 MiB chunk): the tier holds wcap units of weight (its
 * bytes in 4 KiB blocks, say) and each key is inserted with its own.
 * W-TinyLFU's window and protected segments are then shares of the
 * weight, not of the keys: counted in keys, a window of 1% of a tier's
 * key capacity held most of its bytes when the keys were few and large,
 * and the stable main segment that makes an epoch's hits was the rest.
 * Set wcap on an empty policy (ignored otherwise); the key capacity
 * still bounds how many keys are resident.  Without it wcap = capacity
 * and every weight is 1. */
void evict_policy_set_weight_capacity(struct evict_policy *p, uint64_t wcap);
/* evict_policy_insert() with the key's weight (0 counts as 1). */
void evict_policy_insert_weighted(struct evict_policy *p, uint64_t key, uint64_t weight);
/* The resident keys' total weight (their number when unweighted). */
uint64_t evict_policy_weight(const struct evict_policy *p);

/* Key left the cache for a reason of the caller's (eviction it carried
 * out, corruption, an object changed).  No-op if not resident. */
void evict_policy_remove(struct evict_policy *p, uint64_t key);

bool evict_policy_contains(const struct evict_policy *p, uint64_t key);
size_t evict_policy_size(const struct evict_policy *p);
size_t evict_policy_capacity(const struct evict_policy *p);
/* Raise the key capacity to capacity (no-op if not above it), keeping
 * every resident key, its place and its statistics, and W-TinyLFU's
 * frequency estimates.  For a weighted tier whose keys turn out smaller
 * than its key capacity assumed (small files), so that it holds its
 * bytes, not a key per assumed chunk.  false when out of memory (the
 * policy is unchanged and still whole). */
bool evict_policy_grow(struct evict_policy *p, size_t capacity);

/* Pinned keys cannot be evicted now (a RAM chunk being replied from);
 * the caller says which.  NULL = nothing is pinned. */
typedef bool (*evict_pinned_fn)(void *ctx, uint64_t key);

/* The resident key to evict next, skipping pinned ones, into *victim.
 * false when the set is empty or every key examined was pinned (a bounded
 * number are examined).  Does not remove it: the caller evicts, then
 * calls evict_policy_remove(). */
bool evict_policy_victim(struct evict_policy *p, evict_pinned_fn pinned, void *ctx,
			 uint64_t *victim);

/* May candidate (accessed, not resident) displace victim (resident)?
 * LRU and LFU always say yes; TinyLFU compares estimated frequencies. */
bool evict_policy_admit(struct evict_policy *p, uint64_t candidate, uint64_t victim);

/* The same two questions when the room is made for a candidate of
 * weight `incoming` (evict_policy_victim/admit assume 1): W-TinyLFU's
 * window overflows into main when the candidate's weight does not fit
 * it, and a candidate heavier than the whole window duels main's victim
 * itself.  A caller that evicts several victims for one candidate asks
 * both questions for each. */
bool evict_policy_victim_for(struct evict_policy *p, uint64_t incoming, evict_pinned_fn pinned,
			     void *ctx, uint64_t *victim);
bool evict_policy_admit_for(struct evict_policy *p, uint64_t candidate, uint64_t incoming,
			    uint64_t victim);

/* A resident key's access statistics, to be kept with the chunk index so
 * they survive a restart: an opaque 32-bit value. */
uint32_t evict_policy_stat_get(const struct evict_policy *p, uint64_t key);
/* Restore a key's statistics (after insert, e.g. at start-up). */
void evict_policy_stat_set(struct evict_policy *p, uint64_t key, uint32_t stat);

/* How often W-TinyLFU has seen key asked for: its sketch's estimate, any
 * key, resident or not (a 4-bit count, halved with the sketch).  0 for
 * LRU and LFU.  For diagnosis and tests: not an access. */
unsigned evict_policy_frequency(const struct evict_policy *p, uint64_t key);

/* Keep at least n (weight units) of the most recent keys out of eviction's first reach:
 * W-TinyLFU's window never shrinks below n keys (capped at its 80%
 * bound).  A tier whose chunks are read in several pieces (the RAM tier:
 * every stream's current chunk) sets this to the number of chunks in use
 * at once, so a chunk still being read is not the one that loses its
 * duel.  LRU and LFU ignore it (LRU's recent keys are never its victims). */
void evict_policy_set_min_window(struct evict_policy *p, uint64_t n);

/* The weight (in this policy's units) of a tier in front of this one,
 * which answers a key's accesses while it holds it: the RAM tier before
 * the SSD tier.  A key the window rejected and that tier still holds
 * comes back to this policy only once the tier in front lets it go, so
 * W-TinyLFU counts a window ghost as "back soon" within its reach plus
 * this weight, at most half this policy's weight capacity (the largest
 * front measured: a RAM tier half the SSD tier's size).  0 (the default)
 * = nothing in front.  LRU and LFU ignore it. */
void evict_policy_set_front(struct evict_policy *p, uint64_t weight);

/* Debug builds: check the policy's internal invariants; true if sound. */
bool evict_policy_check(const struct evict_policy *p);

#endif
