/* sim.c - trace replay against an eviction policy (see sim.h for the loop).
 *
 * Invariant: the policy never holds more than its capacity; checked
 * after every access in debug builds (evict_policy_check() is too slow to
 * run per access, so it runs once at the end).
 */
#include "sim/sim.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "evict/shape.h"

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

/* One tier of the model: its policy, keyed by the trace's dense ids, and
 * the bytes each resident id takes (0: absent). */
struct model_tier {
	struct evict_policy *p;
	uint64_t *bytes;
	uint64_t used, cap;
};

static void model_tier_evict(struct model_tier *m, uint64_t v)
{
	evict_policy_remove(m->p, v);
	m->used -= m->bytes[v];
	m->bytes[v] = 0;
}

/* RAM: make room for size bytes (any victim: no admission) and insert. */
static int ram_fill(struct model_tier *m, uint64_t id, uint64_t size, uint64_t *evictions)
{
	evict_policy_access(m->p, id);
	while (evict_policy_size(m->p) >= evict_policy_capacity(m->p) ||
	       (m->used + size > m->cap && evict_policy_size(m->p) > 0)) {
		uint64_t v;

		if (!evict_policy_victim(m->p, NULL, NULL, &v))
			return TFS_E_INVAL;
		model_tier_evict(m, v);
		(*evictions)++;
	}
	evict_policy_insert(m->p, id);
	m->bytes[id] = size;
	m->used += size;
	return TFS_OK;
}

/* SSD: offer id (size bytes on disk); victims must lose W-TinyLFU's duel
 * one by one, as the tier's make_room asks them. */
static void ssd_offer(struct model_tier *m, uint64_t id, uint64_t size, struct sim_tiers_result *res)
{
	uint64_t w = size / EVICT_SSD_WEIGHT_UNIT;

	if (size > m->cap)
		return;
	/* the tier's rule: bytes that fit with every key taken grow the keys */
	if (m->used + size <= m->cap && evict_policy_size(m->p) >= evict_policy_capacity(m->p))
		(void)evict_policy_grow(m->p, (size_t)evict_ssd_keys_next(evict_policy_capacity(m->p),
									  m->cap));
	while (m->used + size > m->cap || evict_policy_size(m->p) >= evict_policy_capacity(m->p)) {
		uint64_t v;

		if (!evict_policy_victim_for(m->p, w, NULL, NULL, &v))
			return;
		if (!evict_policy_admit_for(m->p, id, w, v)) {
			res->ssd_rejects++;
			return;
		}
		model_tier_evict(m, v);
		res->ssd_evictions++;
	}
	evict_policy_insert_weighted(m->p, id, w);
	m->bytes[id] = size;
	m->used += size;
}

int sim_replay_tiers(const struct trace *t, const struct sim_tiers_config *cfg,
		     struct sim_tiers_result *res)
{
	struct model_tier ram = { 0 }, ssd = { 0 };
	uint64_t cs = cfg->chunk_size;
	int rc = TFS_E_NOMEM;

	memset(res, 0, sizeof(*res));
	if (cs == 0 || cfg->ram_bytes < cs || (unsigned)cfg->ram_kind >= EVICT_KIND_COUNT ||
	    (cfg->ssd_bytes && ((unsigned)cfg->ssd_kind >= EVICT_KIND_COUNT ||
				cfg->ssd_bytes < evict_ssd_bytes(cs))))
		return TFS_E_INVAL;
	ram.cap = cfg->ram_bytes;
	ram.p = evict_policy_new(cfg->ram_kind, evict_ram_slots(cfg->ram_bytes, cs));
	ram.bytes = calloc(t->n_distinct ? t->n_distinct : 1, sizeof(*ram.bytes));
	if (!ram.p || !ram.bytes)
		goto out;
	evict_policy_set_min_window(ram.p, EVICT_RAM_STREAMS);
	if (cfg->ssd_bytes) {
		ssd.cap = cfg->ssd_bytes;
		ssd.p = evict_policy_new(cfg->ssd_kind, (size_t)evict_ssd_keys(ssd.cap, cs));
		ssd.bytes = calloc(t->n_distinct ? t->n_distinct : 1, sizeof(*ssd.bytes));
		if (!ssd.p || !ssd.bytes)
			goto out;
		evict_policy_set_weight_capacity(ssd.p, ssd.cap / EVICT_SSD_WEIGHT_UNIT);
		evict_policy_set_front(ssd.p, cfg->ram_bytes / EVICT_SSD_WEIGHT_UNIT);
	}
	rc = TFS_OK;
	for (size_t i = 0; i < t->n && rc == TFS_OK; i++) {
		uint64_t id = t->ids[i];
		uint64_t len = t->sized ? t->chunk_bytes[i] : cs;
		uint64_t got = t->sized ? t->read_bytes[i] : cs;
		bool counted = i >= t->warm_from;

		if (len > cs)
			len = got = cs;   /* a trace of another chunk size */
		res->accesses += counted;
		res->read_bytes += counted ? got : 0;
		/* the SSD tier's policy counts each visit of a chunk once,
		 * whichever tier serves it, however many pieces it is read in */
		if (ssd.p && (!t->visit || t->visit[i]))
			evict_policy_access(ssd.p, id);
		if (ram.bytes[id]) {
			evict_policy_access(ram.p, id);
			res->ram_hits += counted;
			continue;
		}
		if (ssd.p && ssd.bytes[id]) {
			res->ssd_hits += counted;
			continue;
		}
		res->misses += counted;
		res->fetched_bytes += counted ? len : 0;
		rc = ram_fill(&ram, id, evict_ram_buf(len, cs), &res->ram_evictions);
		if (rc == TFS_OK && ssd.p)
			ssd_offer(&ssd, id, evict_ssd_bytes(len), res);
	}
out:
	evict_policy_free(ram.p);
	evict_policy_free(ssd.p);
	free(ram.bytes);
	free(ssd.bytes);
	return rc;
}

double sim_tiers_hit_ratio(const struct sim_tiers_result *res)
{
	if (!res->read_bytes)
		return 0;
	return 1.0 - (double)res->fetched_bytes / (double)res->read_bytes;
}
