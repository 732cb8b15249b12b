/* sim.h - replay a trace against one eviction policy, the way a tier drives it.
 *
 * Per access, in trace order:
 *     evict_policy_access(key);
 *     resident         -> a hit
 *     room left        -> insert
 *     full             -> victim (nothing pinned); admit(key, victim)?
 *                         yes: remove(victim), insert(key); no: reject
 * A rejected key is a miss that does not enter the cache.  Hits are
 * counted at positions >= t->warm_from; the replay runs from the start.
 *
 * Not thread-safe per policy; several replays may share one finished
 * trace.
 */
#ifndef TIERFS_SIM_SIM_H
#define TIERFS_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "evict/evict.h"
#include "sim/trace.h"

struct sim_result {
	uint64_t hits;          /* hits at positions >= warm_from */
	uint64_t counted;       /* accesses at positions >= warm_from */
	uint64_t inserts;       /* over the whole trace, like the two below */
	uint64_t evictions;
	uint64_t rejects;       /* misses the policy refused to admit */
};

/* Replay finished trace t against p (borrowed, any state; usually new),
 * filling *res.  TFS_E_INVAL if the policy names no victim while full
 * (a policy bug: nothing is pinned). */
int sim_replay_policy(const struct trace *t, struct evict_policy *p, struct sim_result *res);

/* The same against a fresh policy of kind with room for capacity keys,
 * freed before returning.  TFS_E_INVAL on a bad kind or capacity,
 * TFS_E_NOMEM. */
int sim_replay(const struct trace *t, enum evict_kind kind, size_t capacity,
	       struct sim_result *res);

/* hits / counted, 0 when nothing was counted. */
double sim_hit_ratio(const struct sim_result *res);

/* ---- the daemon's two tiers ------------------------------------------
 * A mount's RAM tier and SSD tier, replayed the way a reader's access
 * drives them (chunk_cache_read in src/tiers/chunk_cache.c), with the
 * policies shaped as the tiers shape theirs (evict/shape.h):
 *     in RAM           -> a RAM hit (RAM policy access)
 *     on SSD           -> an SSD hit; not copied to RAM
 *     neither          -> a miss: the chunk is fetched, goes into RAM
 *                         (victims until
 *                         its buffer fits; RAM admits every fetch) and is
 *                         offered to the SSD tier, whose policy may refuse
 *                         it (W-TinyLFU's duel, weighed in 4 KiB blocks)
 * Wherever it is served, an access that begins a visit of its chunk (the
 * trace's VISIT; every access of a trace without it) is one access of the
 * SSD policy, the visit's other reads none.
 * What is left out: timing (read-ahead and write-behind happen at once
 * here), the RAM tier's eviction of chunks an epoch has read through
 * (the daemon's scan detection), pins and plans.  On a trace without
 * sizes every access is a whole chunk of chunk_size bytes. */
struct sim_tiers_config {
	enum evict_kind ram_kind, ssd_kind;
	uint64_t ram_bytes;     /* --ram-size, at least one chunk */
	uint64_t ssd_bytes;     /* --ssd-size; 0: no SSD tier */
	uint64_t chunk_size;    /* --chunk-size */
};

struct sim_tiers_result {
	/* at positions >= warm_from */
	uint64_t accesses, ram_hits, ssd_hits, misses;
	uint64_t read_bytes;    /* what the accesses read */
	uint64_t fetched_bytes; /* what their misses fetched */
	/* over the whole trace */
	uint64_t ram_evictions, ssd_evictions, ssd_rejects;
};

/* Replay finished trace t against cfg's tiers.  TFS_E_INVAL on a bad
 * config (or a policy naming no victim while full), TFS_E_NOMEM. */
int sim_replay_tiers(const struct trace *t, const struct sim_tiers_config *cfg,
		     struct sim_tiers_result *res);

/* The byte hit ratio, 1 - fetched / read (what `tierfs stats` shows as
 * 1 - store bytes / bytes served); 0 when nothing was read. */
double sim_tiers_hit_ratio(const struct sim_tiers_result *res);

#endif
