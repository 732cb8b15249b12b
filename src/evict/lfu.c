/* lfu.c - LFU with aging: Redis's decayed 8-bit logarithmic counters, victims by sampling.
 *
 * Invariants: the size resident nodes are exactly u.lfu.dense[0..size),
 * and nodes[dense[i]].lfu.pos == i (removal moves the last entry into the
 * hole); the pool holds at most LFU_POOL_SIZE keys, possibly stale (a key
 * removed since it was pooled is dropped when next seen).
 *
 * Each key carries 24 bits in node.stat, as Redis keeps them in robj.lru:
 *
 *           16 bits      8 bits
 *      +----------------+--------+
 *      | Last decr time | LOG_C  |
 *      +----------------+--------+
 *
 * LOG_C is a logarithmic access counter: a new key starts at LFU_INIT_VAL
 * (5, so that it is not evicted before it had a chance to be accessed
 * again) and an access increments it with probability
 * 1 / ((LOG_C - LFU_INIT_VAL) * LFU_LOG_FACTOR + 1), so about 10 accesses
 * reach 6-7, 100 reach 9-10, 10^4 reach ~50 and 10^6 saturate at 255.
 * The coin is a xorshift64* generator seeded with a constant at creation:
 * a replayed trace gives the same victims.
 *
 * Aging: the clock is the count of accesses seen; a "period" is
 * decay_period = LFU_DECAY_MULT * capacity accesses, and the counter
 * loses one per whole period since the last decrement time (16 bits of
 * periods, wrapping as Redis's minutes do).  The decay is applied lazily,
 * when the key is accessed or examined, never by a sweep.
 * Why 10 * capacity and not capacity: at equilibrium a key accessed r
 * times per period sits near LFU_INIT_VAL + r / LFU_LOG_FACTOR.  With a
 * period of one cache turnover (capacity accesses) a key worth caching is
 * seen about once per period and every resident key hovers at the
 * newcomers' value: no frequency information at all.  Ten turnovers give
 * such a key ~10 accesses per period, the same horizon TinyLFU's sketch
 * uses (W = 10 * capacity), while a formerly hot key still fades: from 255
 * to a newcomer's 5 in 250 periods, sooner for the merely warm.
 *
 * Victim: up to LFU_SAMPLES resident keys picked at random slots of the
 * dense array (all of them when there are no more) enter a pool of the
 * LFU_POOL_SIZE best candidates seen so far, kept across calls as Redis's
 * EvictionPoolLRU is; pooled keys are re-scored at each call (cheap here,
 * and a pooled key that became hot must not be evicted on an old score).
 * Best = lowest decayed counter, then oldest last access.
 */
#include <stdlib.h>
#include <string.h>

#include "evict/policy.h"

#define LFU_INIT_VAL 5
#define LFU_LOG_FACTOR 10
#define LFU_DECAY_MULT 10
#define LFU_SEED 0x9e3779b97f4a7c15ull

static uint64_t lfu_rand(struct evict_lfu *l)
{
	return xorshift64s_next(&l->rng);
}

static uint16_t lfu_now(const struct evict_policy *p)
{
	return (uint16_t)(p->clock / p->u.lfu.decay_period);
}

/* LOG_C after the periods elapsed since its last decrement time. */
static unsigned lfu_decayed(const struct evict_policy *p, uint32_t n)
{
	uint32_t stat = p->nodes[n].stat;
	unsigned counter = stat & 0xff;
	unsigned elapsed = (uint16_t)(lfu_now(p) - (uint16_t)(stat >> 8));

	return elapsed >= counter ? 0 : counter - elapsed;
}

static unsigned lfu_log_incr(struct evict_lfu *l, unsigned counter)
{
	unsigned base;

	if (counter == 255)
		return 255;
	base = counter > LFU_INIT_VAL ? counter - LFU_INIT_VAL : 0;
	if (base == 0 || lfu_rand(l) % ((uint64_t)base * LFU_LOG_FACTOR + 1) == 0)
		counter++;
	return counter;
}

static void lfu_set(struct evict_policy *p, uint32_t n, unsigned counter)
{
	p->nodes[n].stat = (uint32_t)lfu_now(p) << 8 | counter;
	p->nodes[n].lfu.seq = (uint32_t)p->clock;
}

static bool lfu_init(struct evict_policy *p)
{
	struct evict_lfu *l = &p->u.lfu;

	l->dense = malloc(p->capacity * sizeof(*l->dense));
	if (!l->dense)
		return false;
	l->rng = LFU_SEED;
	l->decay_period = (uint64_t)p->capacity * LFU_DECAY_MULT;
	l->pool_len = 0;
	return true;
}

static bool lfu_grow(struct evict_policy *p, size_t capacity)
{
	struct evict_lfu *l = &p->u.lfu;
	uint32_t *dense = realloc(l->dense, capacity * sizeof(*dense));

	if (!dense)
		return false;
	/* decay_period stays: the keys' stamps are in its units, and a
	 * longer one would make every resident key look fully decayed */
	l->dense = dense;
	return true;
}

static void lfu_release(struct evict_policy *p)
{
	free(p->u.lfu.dense);
}

static void lfu_access(struct evict_policy *p, uint64_t key, uint32_t n)
{
	if (n == EVICT_NIL)
		return;     /* LFU keeps no history of keys it does not hold */
	lfu_set(p, n, lfu_log_incr(&p->u.lfu, lfu_decayed(p, n)));
}

static void lfu_insert(struct evict_policy *p, uint32_t n)
{
	struct evict_lfu *l = &p->u.lfu;

	p->nodes[n].tag = EVICT_TAG_RESIDENT;
	p->nodes[n].lfu.pos = (uint32_t)(p->size - 1);   /* size counts n already */
	l->dense[p->size - 1] = n;
	lfu_set(p, n, LFU_INIT_VAL);
}

static void lfu_remove(struct evict_policy *p, uint32_t n)
{
	struct evict_lfu *l = &p->u.lfu;
	uint32_t pos = p->nodes[n].lfu.pos, last = l->dense[p->size - 1];

	l->dense[pos] = last;
	p->nodes[last].lfu.pos = pos;
}

/* Lower is a better victim: counter first, then age (older lower). */
static uint64_t lfu_score(const struct evict_policy *p, uint32_t n)
{
	uint32_t age = (uint32_t)p->clock - p->nodes[n].lfu.seq;

	return (uint64_t)lfu_decayed(p, n) << 32 | (UINT32_MAX - age);
}

/* Offer key (node n) to the ascending pool; no duplicates. */
static void pool_offer(struct evict_policy *p, uint32_t n)
{
	struct evict_lfu *l = &p->u.lfu;
	uint64_t key = p->nodes[n].key, score = lfu_score(p, n);
	size_t i;

	for (i = 0; i < l->pool_len; i++)
		if (l->pool[i].key == key)
			return;
	if (l->pool_len == LFU_POOL_SIZE) {
		if (score >= l->pool[LFU_POOL_SIZE - 1].score)
			return;
		l->pool_len--;      /* the worst entry makes room */
	}
	for (i = l->pool_len; i > 0 && l->pool[i - 1].score > score; i--)
		l->pool[i] = l->pool[i - 1];
	l->pool[i].key = key;
	l->pool[i].score = score;
	l->pool[i].node = n;
	l->pool_len++;
}

/* Drop pooled keys no longer resident, re-score the rest, re-sort. */
static void pool_refresh(struct evict_policy *p)
{
	struct evict_lfu *l = &p->u.lfu;
	struct lfu_pool_entry old[LFU_POOL_SIZE];
	size_t n_old = l->pool_len;

	memcpy(old, l->pool, n_old * sizeof(old[0]));
	for (size_t i = 0; i < n_old; i++)
		__builtin_prefetch(&p->nodes[old[i].node]);
	l->pool_len = 0;
	for (size_t i = 0; i < n_old; i++) {
		uint32_t n = old[i].node;

		/* the node tells without a probe: a removed key's node is free
		 * or holds another key */
		if (p->nodes[n].tag == EVICT_TAG_RESIDENT && p->nodes[n].key == old[i].key)
			pool_offer(p, n);
	}
}

static bool lfu_victim(struct evict_policy *p, evict_pinned_fn pinned, void *ctx,
		       uint64_t *victim)
{
	struct evict_lfu *l = &p->u.lfu;

	/* samples by multiply-shift, not %: size < 2^32, and a division per
	 * sample was a fifth of the cost */
	pool_refresh(p);
	if (p->size <= LFU_SAMPLES) {
		for (size_t i = 0; i < p->size; i++)
			pool_offer(p, l->dense[i]);
	} else {
		uint32_t pick[LFU_SAMPLES];

		/* draw all, prefetch all, then score: sixteen cache misses
		 * overlap instead of following one another */
		for (int i = 0; i < LFU_SAMPLES; i++) {
			pick[i] = l->dense[((lfu_rand(l) >> 32) * p->size) >> 32];
			__builtin_prefetch(&p->nodes[pick[i]]);
		}
		for (int i = 0; i < LFU_SAMPLES; i++)
			pool_offer(p, pick[i]);
	}
	for (size_t i = 0; i < l->pool_len; i++) {
		if (!pinned || !pinned(ctx, l->pool[i].key)) {
			*victim = l->pool[i].key;
			return true;
		}
	}
	return false;
}

/* The stat is LOG_C << 16 | last decrement time, LOG_C decayed to now.
 * The time is only informative: the clock is this policy's count of
 * accesses, which a restart (or another tier's policy) does not share,
 * so stat_set keeps the counter and restarts its decay from now. */
static uint32_t lfu_stat_get(const struct evict_policy *p, uint32_t n)
{
	return (uint32_t)lfu_decayed(p, n) << 16 | (uint16_t)(p->nodes[n].stat >> 8);
}

static void lfu_stat_set(struct evict_policy *p, uint32_t n, uint32_t stat)
{
	lfu_set(p, n, (stat >> 16) & 0xff);
}

static bool lfu_check(const struct evict_policy *p)
{
	const struct evict_lfu *l = &p->u.lfu;

	if (l->pool_len > LFU_POOL_SIZE)
		return false;
	for (size_t i = 0; i < p->size; i++) {
		uint32_t n = l->dense[i];

		if (n >= p->capacity || p->nodes[n].tag != EVICT_TAG_RESIDENT ||
		    p->nodes[n].lfu.pos != i)
			return false;
	}
	return true;
}

const struct evict_ops evict_lfu_ops = {
	.init = lfu_init,
	.grow = lfu_grow,
	.release = lfu_release,
	.access = lfu_access,
	.insert = lfu_insert,
	.remove = lfu_remove,
	.victim = lfu_victim,
	.admit = NULL,
	.stat_get = lfu_stat_get,
	.stat_set = lfu_stat_set,
	.check = lfu_check,
};
