/* Unit tests for src/evict: the contract for every policy, then each policy's own promise. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/rand.h"
#include "evict/evict.h"
#include "evict/policy.h"

static const enum evict_kind all_kinds[] = { EVICT_LRU, EVICT_LFU, EVICT_TINYLFU };
#define N_KINDS (sizeof(all_kinds) / sizeof(all_kinds[0]))

struct pins {
	const uint64_t *keys;
	size_t n;
	size_t asked;
};

static bool is_pinned(void *ctx, uint64_t key)
{
	struct pins *pins = ctx;

	pins->asked++;
	for (size_t i = 0; i < pins->n; i++)
		if (pins->keys[i] == key)
			return true;
	return false;
}

static bool pinned_all(void *ctx, uint64_t key)
{
	return true;
}

/* What a tier does with a key it was handed (not resident): make room,
 * if the policy lets it, and insert.  *evicted as for cache_get(). */
static void offer(struct evict_policy *p, uint64_t key, uint64_t *evicted)
{
	uint64_t v;

	if (evict_policy_size(p) == evict_policy_capacity(p)) {
		if (!evict_policy_victim(p, NULL, NULL, &v) || !evict_policy_admit(p, key, v))
			return;
		cr_assert(evict_policy_contains(p, v));
		evict_policy_remove(p, v);
		if (evicted)
			*evicted = v;
	}
	evict_policy_insert(p, key);
}

/* What a tier does on a get: access; on a miss make room (victim, admit,
 * remove) and insert.  Returns true on a hit.  *evicted (if not NULL)
 * receives the evicted key or UINT64_MAX. */
static bool cache_get(struct evict_policy *p, uint64_t key, uint64_t *evicted)
{
	if (evicted)
		*evicted = UINT64_MAX;
	evict_policy_access(p, key);
	if (evict_policy_contains(p, key))
		return true;
	offer(p, key, evicted);
	return false;
}

static uint64_t pop_victim(struct evict_policy *p)
{
	uint64_t v = UINT64_MAX;

	cr_assert(evict_policy_victim(p, NULL, NULL, &v));
	evict_policy_remove(p, v);
	return v;
}

/* ---- every policy ---- */

Test(evict, kind_names_roundtrip)
{
	for (int k = 0; k < EVICT_KIND_COUNT; k++)
		cr_assert_eq(evict_kind_parse(evict_kind_name((enum evict_kind)k)), k);
	cr_assert_eq(evict_kind_parse("lru"), EVICT_LRU);
	cr_assert_eq(evict_kind_parse("tinylfu"), EVICT_TINYLFU);
	cr_assert_eq(evict_kind_parse("LRU2"), -1);
	cr_assert_eq(evict_kind_parse(""), -1);
	cr_assert_eq(evict_kind_parse(NULL), -1);
	cr_assert_str_eq(evict_kind_name(EVICT_KIND_COUNT), "unknown");
}

Test(evict, bad_arguments)
{
	cr_assert_null(evict_policy_new(EVICT_LRU, 0));
	cr_assert_null(evict_policy_new(EVICT_KIND_COUNT, 10));
	cr_assert_null(evict_policy_new((enum evict_kind)-1, 10));
	cr_assert_null(evict_policy_new(EVICT_TINYLFU, (size_t)1 << 31));
	evict_policy_free(NULL);
}

Test(evict, insert_remove_contains_are_idempotent)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		struct evict_policy *p = evict_policy_new(all_kinds[i], 8);
		uint64_t v;

		cr_assert_not_null(p);
		cr_assert_eq(evict_policy_capacity(p), 8);
		cr_assert_not(evict_policy_victim(p, NULL, NULL, &v), "empty has no victim");
		evict_policy_remove(p, 5);              /* not resident: no-op */
		evict_policy_insert(p, 5);
		evict_policy_insert(p, 5);
		cr_assert_eq(evict_policy_size(p), 1);
		cr_assert(evict_policy_contains(p, 5));
		cr_assert_not(evict_policy_contains(p, 6));
		cr_assert(evict_policy_victim(p, NULL, NULL, &v));
		cr_assert_eq(v, 5);
		evict_policy_remove(p, 5);
		evict_policy_remove(p, 5);
		cr_assert_eq(evict_policy_size(p), 0);
		cr_assert_not(evict_policy_contains(p, 5));
		cr_assert_eq(evict_policy_stat_get(p, 5), 0, "not resident: no stat");
		evict_policy_stat_set(p, 5, 1234);      /* not resident: no-op */
		cr_assert_eq(evict_policy_size(p), 0);
		cr_assert(evict_policy_check(p));
		evict_policy_free(p);
	}
}

/* Growing the key capacity keeps every resident key, its statistics and
 * the policy's order, and makes room for more; for every kind, weighted
 * and not. */
Test(evict, grow_keeps_the_residents_and_makes_room)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		for (int weighted = 0; weighted < 2; weighted++) {
			struct evict_policy *p = evict_policy_new(all_kinds[i], 16);
			uint64_t v_before, v_after;

			if (weighted)
				evict_policy_set_weight_capacity(p, 1000);
			for (uint64_t k = 0; k < 16; k++) {
				evict_policy_access(p, k);
				evict_policy_insert_weighted(p, k, 3);
			}
			for (uint64_t k = 0; k < 16; k += 3)   /* some keys hotter */
				evict_policy_access(p, k);
			cr_assert(evict_policy_victim(p, NULL, NULL, &v_before));
			cr_assert(evict_policy_grow(p, 64));
			cr_assert(evict_policy_check(p), "%s: after grow", evict_kind_name(all_kinds[i]));
			cr_assert_eq(evict_policy_capacity(p), 64);
			cr_assert_eq(evict_policy_size(p), 16);
			for (uint64_t k = 0; k < 16; k++)
				cr_assert(evict_policy_contains(p, k));
			cr_assert(evict_policy_victim(p, NULL, NULL, &v_after));
			cr_assert_eq(v_after, v_before, "%s: the victim changed with the capacity",
				     evict_kind_name(all_kinds[i]));
			for (uint64_t k = 100; k < 148; k++) {
				evict_policy_access(p, k);
				evict_policy_insert_weighted(p, k, 3);
			}
			cr_assert_eq(evict_policy_size(p), 64, "room for 48 more keys");
			cr_assert(evict_policy_grow(p, 32), "smaller: a no-op");
			cr_assert_eq(evict_policy_capacity(p), 64);
			for (uint64_t k = 200; k < 1200; k++) {
				cache_get(p, k, NULL);
				cr_assert_leq(evict_policy_size(p), 64);
			}
			cr_assert(evict_policy_check(p));
			evict_policy_free(p);
		}
	}
}

/* What a policy knows of its keys' frequency survives growing: keys read
 * often before stay while a stream of new keys passes through (LFU's
 * decay clock and W-TinyLFU's sketch kept); an unweighted W-TinyLFU with
 * a window floor keeps its invariants. */
Test(evict, grow_keeps_what_frequency_knows)
{
	const enum evict_kind kinds[] = { EVICT_LFU, EVICT_TINYLFU };

	for (size_t i = 0; i < 2; i++) {
		struct evict_policy *p = evict_policy_new(kinds[i], 16);
		uint64_t v;

		for (int round = 0; round < 40; round++)
			for (uint64_t k = 0; k < 16; k++)
				cache_get(p, k < 4 ? k : 1000 + round * 16 + k, NULL);
		cr_assert(evict_policy_grow(p, 32));
		for (uint64_t k = 5000; k < 5016; k++)   /* the new room, taken */
			cache_get(p, k, NULL);
		cr_assert_eq(evict_policy_size(p), 32);
		for (uint64_t k = 6000; k < 6008; k++) {
			cache_get(p, k, &v);
			cr_assert(v >= 4, "%s: hot key %llu evicted after grow",
				  evict_kind_name(kinds[i]), (unsigned long long)v);
		}
		cr_assert(evict_policy_check(p));
		evict_policy_free(p);
	}
	{
		struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, 1000);

		evict_policy_set_min_window(p, 300);
		for (uint64_t k = 0; k < 3000; k++)
			cache_get(p, k % 1200, NULL);
		cr_assert(evict_policy_check(p));
		cr_assert(evict_policy_grow(p, 2000));
		cr_assert(evict_policy_check(p), "unweighted, a window floor: invariants after grow");
		for (uint64_t k = 0; k < 5000; k++)
			cache_get(p, k % 2500, NULL);
		cr_assert(evict_policy_check(p));
		evict_policy_free(p);
	}
}

Test(evict, size_never_exceeds_capacity)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		struct evict_policy *p = evict_policy_new(all_kinds[i], 16);

		for (uint64_t k = 0; k < 16; k++)
			evict_policy_insert(p, k);
		cr_assert_eq(evict_policy_size(p), 16);
		/* the caller's error: a full policy drops the insert */
		evict_policy_insert(p, 100);
		cr_assert_eq(evict_policy_size(p), 16);
		cr_assert_not(evict_policy_contains(p, 100));
		cr_assert(evict_policy_check(p));
		/* following victim/remove, size stays at the bound */
		for (uint64_t k = 200; k < 1200; k++) {
			cache_get(p, k, NULL);
			cr_assert_leq(evict_policy_size(p), 16);
		}
		cr_assert(evict_policy_check(p));
		evict_policy_free(p);
	}
}

Test(evict, all_pinned_means_no_victim)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		struct evict_policy *p = evict_policy_new(all_kinds[i], 200);
		uint64_t v = 77;

		for (uint64_t k = 0; k < 200; k++)
			cache_get(p, k, NULL);
		cr_assert_not(evict_policy_victim(p, pinned_all, NULL, &v), "%s",
			      evict_kind_name(all_kinds[i]));
		cr_assert_eq(v, 77, "victim untouched on false");
		cr_assert(evict_policy_victim(p, NULL, NULL, &v));
		evict_policy_free(p);
	}
}

/* 10^5 random operations on a small cache (many evictions), with
 * pinning, stat restores and removals; check() after every one. */
Test(evict, random_operations_keep_invariants)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		const size_t cap = 50;
		struct evict_policy *p = evict_policy_new(all_kinds[i], cap);
		uint64_t seed = 0xdecafbad, pinned_keys[4] = { 0 };
		struct pins pins = { pinned_keys, 4, 0 };
		size_t hits = 0;

		for (int op = 0; op < 100000; op++) {
			uint64_t r = xorshift64s_next(&seed), a = xorshift64s_next(&seed) % 400, b = r % 400;
			uint64_t key = a < b ? a : b, v;

			switch (r >> 60) {
			case 0:
				evict_policy_remove(p, key);
				break;
			case 1:
				if (evict_policy_size(p) < cap)
					evict_policy_insert(p, key);
				break;
			case 2:
				pinned_keys[op % 4] = key;
				if (evict_policy_victim(p, is_pinned, &pins, &v)) {
					cr_assert(evict_policy_contains(p, v));
					cr_assert_not(is_pinned(&pins, v));
				}
				break;
			case 3:
				evict_policy_stat_set(p, key, evict_policy_stat_get(p, key));
				break;
			default:
				hits += cache_get(p, key, NULL);
				break;
			}
			cr_assert_leq(evict_policy_size(p), cap);
			cr_assert(evict_policy_check(p), "%s: op %d", evict_kind_name(all_kinds[i]),
				  op);
		}
		cr_assert_gt(hits, 1000);
		evict_policy_free(p);
	}
}

/* Same trace, same answers: no clock, no address-dependent choice. */
Test(evict, deterministic_given_the_trace)
{
	for (size_t i = 0; i < N_KINDS; i++) {
		struct evict_policy *p1 = evict_policy_new(all_kinds[i], 300);
		struct evict_policy *p2 = evict_policy_new(all_kinds[i], 300);
		uint64_t s1 = 5, s2 = 5, e1, e2;

		for (int op = 0; op < 50000; op++) {
			uint64_t k1 = xorshift64s_next(&s1) % 2000, k2 = xorshift64s_next(&s2) % 2000;

			cr_assert_eq(cache_get(p1, k1, &e1), cache_get(p2, k2, &e2));
			cr_assert_eq(e1, e2);
		}
		evict_policy_free(p1);
		evict_policy_free(p2);
	}
}

/* ---- LRU ---- */

Test(lru, exact_victim_order)
{
	struct evict_policy *p = evict_policy_new(EVICT_LRU, 5);

	for (uint64_t k = 1; k <= 5; k++) {
		evict_policy_access(p, k);
		evict_policy_insert(p, k);
	}
	evict_policy_access(p, 2);
	evict_policy_access(p, 1);
	evict_policy_access(p, 4);
	evict_policy_access(p, 2);
	evict_policy_access(p, 9);     /* a miss changes no order */
	/* least recent first: 3, 5, 1, 4, 2 */
	cr_assert_eq(pop_victim(p), 3);
	cr_assert_eq(pop_victim(p), 5);
	evict_policy_insert(p, 9);
	cr_assert_eq(pop_victim(p), 1);
	cr_assert_eq(pop_victim(p), 4);
	cr_assert_eq(pop_victim(p), 2);
	cr_assert_eq(pop_victim(p), 9);
	cr_assert_eq(evict_policy_size(p), 0);
	evict_policy_free(p);
}

Test(lru, pinned_keys_are_skipped)
{
	struct evict_policy *p = evict_policy_new(EVICT_LRU, 4);
	uint64_t pinned_keys[] = { 1, 2 }, v;
	struct pins pins = { pinned_keys, 2, 0 };

	for (uint64_t k = 1; k <= 4; k++)
		evict_policy_insert(p, k);
	cr_assert(evict_policy_victim(p, is_pinned, &pins, &v));
	cr_assert_eq(v, 3);
	pinned_keys[1] = 3;
	cr_assert(evict_policy_victim(p, is_pinned, &pins, &v));
	cr_assert_eq(v, 2);
	evict_policy_free(p);
}

Test(lru, victim_search_is_bounded)
{
	struct evict_policy *p = evict_policy_new(EVICT_LRU, 1000);
	struct pins pins = { NULL, 0, 0 };
	uint64_t v;

	for (uint64_t k = 0; k < 1000; k++)
		evict_policy_insert(p, k);
	cr_assert_not(evict_policy_victim(p, pinned_all, NULL, &v));
	/* count the keys examined when none is pinned but one is asked about */
	cr_assert(evict_policy_victim(p, is_pinned, &pins, &v));
	cr_assert_eq(pins.asked, 1);
	evict_policy_free(p);
}

Test(lru, stat_restore_rebuilds_the_order)
{
	enum { CAP = 40 };
	struct evict_policy *p1 = evict_policy_new(EVICT_LRU, CAP);
	struct evict_policy *p2 = evict_policy_new(EVICT_LRU, CAP);
	uint64_t keys[CAP], seed = 3;
	uint32_t stats[CAP];

	for (int op = 0; op < 2000; op++)
		cache_get(p1, xorshift64s_next(&seed) % 100, NULL);
	cr_assert_eq(evict_policy_size(p1), CAP);
	/* a start-up walks its index in key order, not recency order */
	for (size_t i = 0, n = 0; n < CAP; i++) {
		if (evict_policy_contains(p1, i)) {
			keys[n] = i;
			stats[n++] = evict_policy_stat_get(p1, i);
		}
	}
	for (size_t n = 0; n < CAP; n++) {
		evict_policy_insert(p2, keys[n]);
		evict_policy_stat_set(p2, keys[n], stats[n]);
	}
	cr_assert(evict_policy_check(p2));
	for (size_t n = 0; n < CAP; n++)
		cr_assert_eq(pop_victim(p2), pop_victim(p1));
	evict_policy_free(p1);
	evict_policy_free(p2);
}

/* ---- LFU ---- */

Test(lfu, frequent_key_outlives_keys_seen_once)
{
	struct evict_policy *p = evict_policy_new(EVICT_LFU, 10);
	uint64_t evicted;

	cache_get(p, 1000, NULL);
	for (uint64_t k = 1; k <= 9; k++)
		cache_get(p, k, NULL);
	for (int i = 0; i < 100; i++)
		cr_assert(cache_get(p, 1000, NULL));
	cr_assert_gt(evict_policy_stat_get(p, 1000) >> 16, 5);
	for (uint64_t k = 11; k <= 20; k++) {
		cache_get(p, k, &evicted);
		cr_assert_neq(evicted, 1000);
		cr_assert_neq(evicted, UINT64_MAX);
	}
	cr_assert(evict_policy_contains(p, 1000));
	evict_policy_free(p);
}

Test(lfu, least_frequent_goes_first_ties_by_age)
{
	struct evict_policy *p = evict_policy_new(EVICT_LFU, 16);

	/* keys k accessed 1 + 40 * k times: counters rise with k */
	for (uint64_t k = 0; k < 4; k++)
		cache_get(p, k, NULL);
	for (uint64_t k = 0; k < 4; k++)
		for (uint64_t j = 0; j < 40 * k; j++)
			cache_get(p, k, NULL);
	for (uint64_t k = 10; k < 14; k++)   /* four newcomers, oldest first */
		cache_get(p, k, NULL);
	cr_assert_eq(pop_victim(p), 0, "key 0: seen once, oldest");
	cr_assert_eq(pop_victim(p), 10);
	cr_assert_eq(pop_victim(p), 11);
	cr_assert_eq(pop_victim(p), 12);
	cr_assert_eq(pop_victim(p), 13);
	evict_policy_free(p);
}

Test(lfu, counters_decay_so_a_formerly_hot_key_goes)
{
	struct evict_policy *p = evict_policy_new(EVICT_LFU, 10);
	uint64_t seed = 1, k = 100;
	int op;

	for (int i = 0; i < 2000; i++)
		cache_get(p, 1, NULL);
	cr_assert_gt(evict_policy_stat_get(p, 1) >> 16, 10);
	/* key 1 is no longer asked for; others are, a few times each */
	for (op = 0; op < 200000 && evict_policy_contains(p, 1); op++) {
		if (xorshift64s_next(&seed) % 4 == 0)
			k++;
		cache_get(p, k, NULL);
		if (op == 100)
			cr_assert(evict_policy_contains(p, 1), "hot key outlives the first wave");
	}
	cr_assert_not(evict_policy_contains(p, 1), "decayed and evicted after %d accesses", op);
	evict_policy_free(p);
}

Test(lfu, stat_roundtrip_restores_counters)
{
	struct evict_policy *p1 = evict_policy_new(EVICT_LFU, 10);
	struct evict_policy *p2 = evict_policy_new(EVICT_LFU, 10);
	struct evict_policy *p3 = evict_policy_new(EVICT_LFU, 10);
	uint32_t st;

	cache_get(p1, 7, NULL);
	for (int i = 0; i < 500; i++)
		cache_get(p1, 7, NULL);
	st = evict_policy_stat_get(p1, 7);
	cr_assert_gt(st >> 16, 8);
	/* restarted: p2 restores 7's stat, p3 does not; both then see 7
	 * first and ten newcomers */
	evict_policy_insert(p2, 7);
	evict_policy_stat_set(p2, 7, st);
	cr_assert_eq(evict_policy_stat_get(p2, 7) >> 16, st >> 16);
	evict_policy_insert(p3, 7);
	for (uint64_t k = 100; k < 120; k++) {
		cache_get(p2, k, NULL);
		cache_get(p3, k, NULL);
	}
	cr_assert(evict_policy_contains(p2, 7));
	cr_assert_not(evict_policy_contains(p3, 7));
	evict_policy_free(p1);
	evict_policy_free(p2);
	evict_policy_free(p3);
}

Test(lfu, sampled_victims_approach_exact_lfu)
{
	/* capacity far above the sample: the pool must still find cold keys */
	enum { CAP = 1000 };
	struct evict_policy *p = evict_policy_new(EVICT_LFU, CAP);
	size_t hot_lost = 0;
	uint64_t evicted;

	for (uint64_t k = 0; k < CAP; k++)
		cache_get(p, k, NULL);
	for (int round = 0; round < 30; round++)   /* even keys are hot */
		for (uint64_t k = 0; k < CAP; k += 2)
			cache_get(p, k, NULL);
	for (uint64_t k = CAP; k < CAP + CAP / 4; k++) {
		cache_get(p, k, &evicted);
		hot_lost += evicted < CAP && evicted % 2 == 0;
	}
	cr_assert_lt(hot_lost, CAP / 100, "%zu hot keys evicted", hot_lost);
	evict_policy_free(p);
}

/* ---- TinyLFU ---- */

static void warm_hot_set(struct evict_policy *p, uint64_t n, int rounds)
{
	for (int r = 0; r < rounds; r++)
		for (uint64_t k = 0; k < n; k++)
			cache_get(p, k, NULL);
}

Test(tinylfu, scan_does_not_evict_the_hot_set)
{
	enum { CAP = 100, HOT = 90 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	struct evict_policy *lru = evict_policy_new(EVICT_LRU, CAP);
	size_t lru_kept = 0;

	warm_hot_set(p, HOT, 20);
	warm_hot_set(lru, HOT, 20);
	for (uint64_t k = 1000; k < 1000 + 10 * CAP; k++) {
		cache_get(p, k, NULL);
		cache_get(lru, k, NULL);
	}
	for (uint64_t k = 0; k < HOT; k++) {
		cr_assert(evict_policy_contains(p, k), "hot key %lu evicted by the scan",
			  (unsigned long)k);
		lru_kept += evict_policy_contains(lru, k);
	}
	cr_assert_eq(lru_kept, 0, "the same scan flushes LRU");
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
	evict_policy_free(lru);
}

Test(tinylfu, admission_rejects_a_cold_key_against_a_hot_victim)
{
	enum { CAP = 100 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	uint64_t v;

	warm_hot_set(p, CAP - 1, 20);
	cache_get(p, 5000, NULL);          /* a one-off: in the window */
	cr_assert_eq(evict_policy_size(p), CAP);
	evict_policy_access(p, 5001);
	cr_assert(evict_policy_victim(p, NULL, NULL, &v));
	cr_assert_eq(v, 5000, "the one-off loses its duel with main's victim");
	cr_assert(evict_policy_admit(p, 5001, v), "the window admits everything");
	/* a hot main key is not displaced: the window's key is colder */
	cr_assert_not(evict_policy_admit(p, 5001, 3));
	evict_policy_free(p);
}

Test(tinylfu, a_new_key_accessed_repeatedly_is_admitted)
{
	enum { CAP = 100, HOT = CAP };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	uint64_t scan = 100000;
	int admitted_at = -1;

	warm_hot_set(p, HOT, 20);
	for (int i = 0; i < 50 && admitted_at < 0; i++) {
		/* a hit once it survives two scan keys: in main, or in a
		 * window grown because it kept coming back */
		if (cache_get(p, 777, NULL))
			admitted_at = i;
		/* two scan keys between its accesses push it out of a 1% window */
		cache_get(p, scan++, NULL);
		cache_get(p, scan++, NULL);
	}
	cr_assert_geq(admitted_at, 0, "never kept");
	for (int i = 0; i < 5 * CAP; i++) {
		if (i % 10 == 0)
			cache_get(p, 777, NULL);
		cache_get(p, scan++, NULL);
	}
	cr_assert(evict_policy_contains(p, 777), "and it stays");
	evict_policy_free(p);
}

Test(tinylfu, stat_roundtrip_restores_frequency_and_segment)
{
	enum { CAP = 100 };
	struct evict_policy *p1 = evict_policy_new(EVICT_TINYLFU, CAP);
	struct evict_policy *p2 = evict_policy_new(EVICT_TINYLFU, CAP);
	uint32_t st[CAP];
	size_t protected_keys = 0;

	warm_hot_set(p1, CAP, 9);       /* 900 additions: before the first reset */
	for (uint64_t k = 0; k < CAP; k++) {
		st[k] = evict_policy_stat_get(p1, k);
		cr_assert_geq(st[k] & 0xff, 8);
		protected_keys += st[k] >> 8 == 2;
	}
	cr_assert_gt(protected_keys, CAP / 2, "hot keys are in protected");
	for (uint64_t k = 0; k < CAP; k++) {
		evict_policy_insert(p2, k);
		evict_policy_stat_set(p2, k, st[k]);
	}
	cr_assert(evict_policy_check(p2));
	for (uint64_t k = 0; k < CAP; k++) {
		uint32_t again = evict_policy_stat_get(p2, k);

		cr_assert_geq(again & 0xff, st[k] & 0xff);
		cr_assert_eq(again >> 8, st[k] >> 8, "key %lu back in its segment", (unsigned long)k);
	}
	/* restored frequencies defend the set against a scan at once */
	for (uint64_t k = 1000; k < 1000 + 3 * CAP; k++)
		cache_get(p2, k, NULL);
	for (uint64_t k = 0; k < CAP; k++)
		if (!evict_policy_contains(p2, k))
			cr_assert_eq(st[k] >> 8, 0, "only a window key may go");
	evict_policy_free(p1);
	evict_policy_free(p2);
}

/* A recency phase: two sets of n keys read in turn, rounds times (each
 * key comes back after 2n accesses).  Returns the hits of the last two
 * rounds. */
static size_t recency_phase(struct evict_policy *p, int rounds, uint64_t n)
{
	size_t hits = 0;

	for (int round = 0; round < rounds; round++)
		for (uint64_t k = 0; k < n; k++)
			hits += cache_get(p, 10000 + (uint64_t)round % 2 * 1000 + k, NULL) &&
				round >= rounds - 2;
	return hits;
}

/* A recency working set bigger than the 1% window: its keys leave the
 * window, lose their duel, come back and hit the window's ghosts, so the
 * window grows until the set fits. */
Test(tinylfu, window_grows_when_its_rejects_come_back)
{
	enum { CAP = 1000, LOOP = 40 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	size_t start, hits;

	warm_hot_set(p, CAP, 5);
	start = p->u.tlfu.window_cap;
	cr_assert_eq(start, CAP / 100);
	hits = recency_phase(p, 40, LOOP);
	cr_assert_gt(p->u.tlfu.window_cap, start, "window stayed at %zu", start);
	cr_assert_eq(hits, 2 * LOOP, "the last two rounds hit %zu of %d", hits, 2 * LOOP);
	cr_assert_leq(p->u.tlfu.window_cap, p->u.tlfu.window_max);
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
}

/* A pass over new keys with a fetcher running ahead of the reader: each
 * key is handed to the tier AHEAD keys before it is asked for, so it
 * leaves the window and loses its duel just before its reader comes.
 * That return is the fetcher's, not a recency the window could serve:
 * the window does not grow.  (Had the reader asked first, a window
 * ghost back that soon grows it: window_grows_when_its_rejects_come_back.) */
Test(tinylfu, keys_fetched_ahead_of_their_reader_do_not_grow_the_window)
{
	enum { CAP = 1000, KEYS = 2000, AHEAD = 30 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	size_t start;

	warm_hot_set(p, CAP, 5);
	start = p->u.tlfu.window_cap;
	for (uint64_t i = 0; i < KEYS + AHEAD; i++) {
		if (i < KEYS)
			offer(p, 20000 + i, NULL);
		if (i >= AHEAD) {
			uint64_t k = 20000 + i - AHEAD;

			evict_policy_access(p, k);
			cr_assert_leq(p->u.tlfu.window_cap, start, "key %lu grew the window",
				      (unsigned long)k);
		}
	}
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
}

/* Epochs over twice the cache after a recency phase grew the window: the
 * window's rejects never come back within the ghosts' reach, so it
 * shrinks, and the resident set that gives C/N hits is rebuilt. */
Test(tinylfu, window_shrinks_when_its_rejects_never_return)
{
	enum { CAP = 1000, EPOCHS = 12 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);
	size_t grown, hits = 0;

	warm_hot_set(p, CAP, 5);
	(void)recency_phase(p, 200, 60);
	grown = p->u.tlfu.window_cap;
	cr_assert_gt(grown, CAP / 100);
	for (int epoch = 0; epoch < EPOCHS; epoch++)
		for (uint64_t k = 0; k < 2 * CAP; k++)
			hits += cache_get(p, 100000 + k, NULL) && epoch == EPOCHS - 1;
	cr_assert_lt(p->u.tlfu.window_cap, grown, "window stayed at %zu", grown);
	cr_assert_geq(hits, CAP * 45 / 100, "last epoch hit %zu of %d", hits, 2 * CAP);
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
}

/* However hard recency pushes, main keeps a fifth of the cache. */
Test(tinylfu, window_is_bounded)
{
	enum { CAP = 200 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);

	for (int round = 0; round < 500; round++)
		for (uint64_t k = 0; k < CAP; k++) {
			cache_get(p, (uint64_t)round * 7 % 3 * 10000 + k, NULL);
			cr_assert_leq(p->u.tlfu.window_cap, CAP * 80 / 100);
			cr_assert_geq(p->u.tlfu.window_cap, 1);
		}
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
}

/* A tier that reads chunks in pieces keeps its window at least that wide,
 * whatever the ghosts say. */
Test(tinylfu, min_window_is_a_floor)
{
	enum { CAP = 1000 };
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, CAP);

	evict_policy_set_min_window(p, 20);
	cr_assert_geq(p->u.tlfu.window_cap, 20);
	for (int epoch = 0; epoch < 6; epoch++)
		for (uint64_t k = 0; k < 2 * CAP; k++) {
			cache_get(p, k, NULL);
			cr_assert_geq(p->u.tlfu.window_cap, 20);
		}
	cr_assert(evict_policy_check(p));
	evict_policy_set_min_window(p, 10 * CAP);      /* capped at the 80% bound */
	cr_assert_eq(p->u.tlfu.window_cap, p->u.tlfu.window_max);
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
}

/* ---- weighted residency: a tier bounded in bytes ---- */

/* What a tier bounded by weight does on a get of key (weight w): access;
 * on a miss evict victims until w fits, each asked for this candidate,
 * stopping at the first the candidate may not displace; insert when it
 * fits.  Returns true on a hit; *bytes_in counts the weight inserted. */
static bool wcache_get(struct evict_policy *p, uint64_t wcap, uint64_t key, uint64_t w)
{
	uint64_t v;

	evict_policy_access(p, key);
	if (evict_policy_contains(p, key))
		return true;
	while (evict_policy_weight(p) + w > wcap) {
		if (!evict_policy_victim_for(p, w, NULL, NULL, &v) ||
		    !evict_policy_admit_for(p, key, w, v))
			return false;
		evict_policy_remove(p, v);
	}
	evict_policy_insert_weighted(p, key, w);
	cr_assert(evict_policy_weight(p) <= wcap);
	return false;
}

/* Shuffled epochs (shuffles drawn from seed) over n keys of weights
 * weights[i], in a tier that holds wcap: the fraction of the dataset's
 * weight missed in each epoch from the second on, at most. */
static double weighted_epochs_worst_miss(enum evict_kind kind, size_t n, const uint64_t *weights,
					 uint64_t wcap, size_t keys, int epochs, uint64_t seed)
{
	struct evict_policy *p = evict_policy_new(kind, keys);
	uint64_t total = 0;
	size_t *order = malloc(n * sizeof(*order));
	double worst = 0;

	cr_assert(p && order);
	evict_policy_set_weight_capacity(p, wcap);
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		total += weights[i];
	}
	for (int e = 0; e < epochs; e++) {
		uint64_t missed = 0;

		for (size_t i = n - 1; i > 0; i--) {
			size_t j = xorshift64s_next(&seed) % (i + 1), tmp = order[i];
			order[i] = order[j];
			order[j] = tmp;
		}
		for (size_t i = 0; i < n; i++)
			if (!wcache_get(p, wcap, 1000 + order[i], weights[order[i]]))
				missed += weights[order[i]];
		if (e > 0 && (double)missed / (double)total > worst)
			worst = (double)missed / (double)total;
		cr_assert(evict_policy_check(p));
	}
	evict_policy_free(p);
	free(order);
	return worst;
}

/* 64 keys of 1024 blocks (4 MiB files on a tier of 128 MiB in 4 KiB
 * blocks) and the key capacity of a tier of that size in 64 KiB grains
 * (2048 keys): counted in keys, the window held 20 of the 32 files that
 * fit; weighted, main keeps a stable half of the dataset. */
Test(tinylfu, weighted_epochs_keep_a_stable_resident_set)
{
	uint64_t w[64];

	for (size_t i = 0; i < 64; i++)
		w[i] = 1024;
	double miss = weighted_epochs_worst_miss(EVICT_TINYLFU, 64, w, 32768, 2048, 5, 42);
	cr_assert_leq(miss, 1.05 * 0.5, "worst epoch missed %.3f of the dataset", miss);
}

/* The same files at N = 1.5 x C, over many shuffles: a file a shuffle
 * puts at the end of one epoch and the start of the next comes back soon
 * as a window ghost, but its estimate ties main's, and the window does
 * not grow into main's unread files (it did: 12 of these 16 shuffles
 * missed 0.38-0.47 of the dataset in an epoch, against 0.35). */
Test(tinylfu, weighted_epochs_at_the_turn_do_not_grow_the_window)
{
	uint64_t w[64];

	for (size_t i = 0; i < 64; i++)
		w[i] = 1024;
	for (uint64_t seed = 1; seed <= 16; seed++) {
		double miss = weighted_epochs_worst_miss(EVICT_TINYLFU, 64, w, 64 * 1024 * 2 / 3,
							 2730, 5, seed);

		cr_expect_leq(miss, 1.05 / 3, "seed %lu: worst epoch missed %.3f of the dataset",
			      (unsigned long)seed, miss);
	}
}

/* Sizes from 10 blocks to 4096 (40 KB to 16 MiB), N = 4 x C. */
Test(tinylfu, weighted_epochs_of_mixed_sizes)
{
	uint64_t w[400], total = 0, seed = 7;

	for (size_t i = 0; i < 400; i++) {
		w[i] = 10 + xorshift64s_next(&seed) % 4087;
		total += w[i];
	}
	double miss = weighted_epochs_worst_miss(EVICT_TINYLFU, 400, w, total / 4, total / 16, 5, 42);
	cr_assert_leq(miss, 1.05 * 0.75, "worst epoch missed %.3f of the dataset", miss);
}

Test(evict, weights_are_summed_and_checked)
{
	for (size_t k = 0; k < N_KINDS; k++) {
		struct evict_policy *p = evict_policy_new(all_kinds[k], 64);

		evict_policy_set_weight_capacity(p, 1000);
		evict_policy_insert_weighted(p, 1, 100);
		evict_policy_insert_weighted(p, 2, 0);   /* counts as 1 */
		evict_policy_insert(p, 3);
		cr_assert_eq(evict_policy_weight(p), 102);
		evict_policy_set_weight_capacity(p, 5);   /* not empty: ignored */
		cr_assert(evict_policy_check(p));
		evict_policy_remove(p, 1);
		cr_assert_eq(evict_policy_weight(p), 2);
		cr_assert(evict_policy_check(p), "%s", evict_kind_name(all_kinds[k]));
		evict_policy_free(p);
	}
}

/* A W-TinyLFU tier of weight 10000 (a window of 100) full with keys
 * 1-10 of weight 1000, each seen once: all in main. */
static struct evict_policy *ten_heavy_keys(void)
{
	struct evict_policy *p = evict_policy_new(EVICT_TINYLFU, 1000);

	cr_assert(p);
	evict_policy_set_weight_capacity(p, 10000);   /* window: 100 */
	for (uint64_t k = 1; k <= 10; k++) {
		evict_policy_access(p, k);
		evict_policy_insert_weighted(p, k, 1000);
	}
	return p;
}

/* key (of weight w), seen once, may not displace main's victim v;
 * seen four times more, it may. */
static void duel_lost_then_won(struct evict_policy *p, uint64_t key, uint64_t w, uint64_t v,
			       const char *what)
{
	cr_assert_not(evict_policy_admit_for(p, key, w, v), "a %s key seen once displaced a key of main",
		      what);
	for (int i = 0; i < 4; i++)
		evict_policy_access(p, key);
	cr_assert(evict_policy_admit_for(p, key, w, v), "a frequent %s key is admitted", what);
}

/* A candidate heavier than the whole window, seen as often as main's
 * victim, is not admitted: it would push a key of main out without a
 * duel won. */
Test(tinylfu, a_heavy_candidate_duels_for_itself)
{
	struct evict_policy *p = ten_heavy_keys();
	uint64_t v;

	cr_assert_eq(evict_policy_weight(p), 10000);
	evict_policy_access(p, 99);
	cr_assert(evict_policy_victim_for(p, 1000, NULL, NULL, &v));
	if (!evict_policy_contains(p, v) || v == 10) {
		/* the window's own key (the latest) is its victim: admitted */
		cr_assert(evict_policy_admit_for(p, 99, 1000, v));
	}
	evict_policy_remove(p, 10);                   /* the window empty */
	cr_assert(evict_policy_victim_for(p, 1000, NULL, NULL, &v));
	duel_lost_then_won(p, 99, 1000, v, "heavy");
	evict_policy_free(p);
}

/* A key lighter than main's victim, entering a window with room, takes
 * the victim only by winning the duel: otherwise a small file seen once
 * evicts a whole large chunk, which its next epoch would have hit. */
Test(tinylfu, a_light_key_does_not_take_a_heavier_victim_for_free)
{
	struct evict_policy *p = ten_heavy_keys();
	uint64_t v;

	evict_policy_access(p, 99);
	cr_assert(evict_policy_victim_for(p, 10, NULL, NULL, &v));
	cr_assert(evict_policy_contains(p, v));
	duel_lost_then_won(p, 99, 10, v, "light");
	evict_policy_free(p);
}

/* The simulator's shifting hot set (nine accesses in ten within a tenth
 * of the keys, the tenth moving on by half itself every n accesses) over
 * n keys of weight w in a tier of a quarter of them, ten rounds of n,
 * after a fifth of warm-up: the hits' share. */
static double weighted_shifting_hits(enum evict_kind kind, size_t n, uint64_t w)
{
	struct evict_policy *p = evict_policy_new(kind, n / 4);
	size_t hot = n / 10, len = n * 10, hits = 0;
	uint64_t seed = 3;

	cr_assert(p);
	evict_policy_set_weight_capacity(p, n / 4 * w);
	for (size_t i = 0; i < len; i++) {
		size_t start = i / n * (hot / 2);
		uint64_t r = xorshift64s_next(&seed);
		size_t key = r % 10 < 9 ? (start + (r >> 8) % hot) % n : (r >> 8) % n;

		if (wcache_get(p, n / 4 * w, 1000 + key, w) && i >= len / 5)
			hits++;
	}
	cr_assert(evict_policy_check(p));
	evict_policy_free(p);
	return (double)hits / (double)(len - len / 5);
}

/* A weighted tier follows the shifting hot set within 2 points of LRU,
 * as the unweighted policy does, at the simulator's scale (10,000 keys:
 * what a shrinking window hands to main goes to probation's head; at
 * its tail, 2.4 points behind) and in small tiers, where the window grows
 * by the weight of the keys that come back (by a share of the tier's
 * weight, 512 keys trailed LRU by 18 points) and a window lighter than
 * one key learns from the keys that lose their own duel (256 keys). */
Test(tinylfu, a_weighted_tier_follows_a_shifting_hot_set_within_two_points)
{
	static const size_t sizes[] = { 256, 512, 10000 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double tlfu = weighted_shifting_hits(EVICT_TINYLFU, sizes[i], 16);
		double lru = weighted_shifting_hits(EVICT_LRU, sizes[i], 16);

		cr_log_info("%zu keys: tinylfu %.4f, lru %.4f", sizes[i], tlfu, lru);
		cr_expect_geq(tlfu, lru - 0.02, "%zu keys: tinylfu %.4f, lru %.4f", sizes[i], tlfu,
			      lru);
	}
}
