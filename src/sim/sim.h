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

#endif
