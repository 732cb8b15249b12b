/* sim.c - trace replay against an eviction policy (see sim.h for the loop).
 *
 * Invariant: the policy never holds more than its capacity; checked
 * after every access in debug builds (evict_policy_check() is too slow to
 * run per access, so it runs once at the end).
 */
#include "sim/sim.h"

#include <assert.h>
#include <string.h>

#include "common/tfs_err.h"

int sim_replay_policy(const struct trace *t, struct evict_policy *p, struct sim_result *res)
{
	size_t cap = evict_policy_capacity(p);

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < t->n; i++) {
		uint64_t key = t->keys[i];
		bool counted = i >= t->warm_from;

		res->counted += counted;
		evict_policy_access(p, key);
		if (evict_policy_contains(p, key)) {
			res->hits += counted;
		} else if (evict_policy_size(p) < cap) {
			evict_policy_insert(p, key);
			res->inserts++;
		} else {
			uint64_t victim;

			if (!evict_policy_victim(p, NULL, NULL, &victim))
				return TFS_E_INVAL;
			if (evict_policy_admit(p, key, victim)) {
				evict_policy_remove(p, victim);
				evict_policy_insert(p, key);
				res->evictions++;
				res->inserts++;
			} else {
				res->rejects++;
			}
		}
		assert(evict_policy_size(p) <= cap);
	}
	assert(evict_policy_check(p));
	return TFS_OK;
}

int sim_replay(const struct trace *t, enum evict_kind kind, size_t capacity,
	       struct sim_result *res)
{
	struct evict_policy *p;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((unsigned)kind >= EVICT_KIND_COUNT || capacity == 0)
		return TFS_E_INVAL;
	p = evict_policy_new(kind, capacity);
	if (!p)
		return TFS_E_NOMEM;
	rc = sim_replay_policy(t, p, res);
	evict_policy_free(p);
	return rc;
}

double sim_hit_ratio(const struct sim_result *res)
{
	return res->counted ? (double)res->hits / (double)res->counted : 0;
}
