/* Unit tests for src/sim/opt: Belady's OPT (with bypass) and the C/N bound. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/tfs_err.h"
#include "evict/evict.h"
#include "sim/opt.h"
#include "sim/sim.h"
#include "sim/trace.h"

/* A finished trace of the given keys with hits counted from warm_from. */
static void make(struct trace *t, const uint64_t *keys, size_t n, size_t warm_from)
{
	trace_init(t);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(trace_push(t, keys[i]), TFS_OK);
	cr_assert_eq(trace_finish(t), TFS_OK);
	t->warm_from = warm_from;
}

static uint64_t opt(const struct trace *t, size_t c)
{
	uint64_t hits = 12345;

	cr_assert_eq(opt_hits(t, c, &hits), TFS_OK);
	return hits;
}

static const uint64_t classic[] = { 1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5 };

/* Positions 0..11.  C = 3: 1 2 3 fill.  At 3, key 4 (next use 10) is used
 * later than all of 1 (4), 2 (5), 3 (9): bypassed.  1, 2 hit (4, 5).  At
 * 6, key 5 (next 11) again farthest: bypassed.  1, 2, 3 hit (7, 8, 9).  4
 * and 5 miss (nothing is used again).  5 hits, 7 misses: the textbook
 * "7 page faults" for OPT with 3 frames. */
Test(opt, classic_three_frames)
{
	struct trace t;

	make(&t, classic, 12, 0);
	cr_assert_eq(opt(&t, 3), 5);
	trace_release(&t);
}

/* C = 4: 1 2 3 4 fill, 1 2 hit, 5 (next 11) bypassed since 1 (7), 2 (8),
 * 3 (9), 4 (10) all come sooner, then 1 2 3 4 hit, 5 misses: 6 hits (the
 * textbook 6 faults). */
Test(opt, classic_four_frames)
{
	struct trace t;

	make(&t, classic, 12, 0);
	cr_assert_eq(opt(&t, 4), 6);
	trace_release(&t);
}

/* The hits of the C = 3 run are at 4, 5, 7, 8, 9; counting from 6 leaves
 * 7, 8, 9. */
Test(opt, counts_only_from_warm_from)
{
	struct trace t;

	make(&t, classic, 12, 6);
	cr_assert_eq(opt(&t, 3), 3);
	trace_release(&t);
}

/* 1 1 2 1 1 with C = 1: 1 misses, 1 hits; 2 is never used again while 1
 * is at 3, so OPT bypasses 2 and keeps 1: hits at 1, 3, 4 = 3.  (A cache
 * that must admit every miss, like LRU, gets only 2.) */
Test(opt, bypass_keeps_the_useful_key)
{
	static const uint64_t k[] = { 1, 1, 2, 1, 1 };
	struct trace t;
	struct sim_result r;

	make(&t, k, 5, 0);
	cr_assert_eq(opt(&t, 1), 3);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 1, &r), TFS_OK);
	cr_assert_eq(r.hits, 2);
	trace_release(&t);
}

/* With room for every key, OPT misses only first accesses. */
Test(opt, capacity_of_all_keys_misses_only_first_uses)
{
	static const uint64_t k[] = { 5, 6, 5, 7, 6, 5, 8, 7 };
	struct trace t;

	make(&t, k, 8, 0);
	cr_assert_eq(t.n_distinct, 4);
	cr_assert_eq(opt(&t, 4), 4);
	cr_assert_eq(opt(&t, 100), 4);
	trace_release(&t);
}

Test(opt, edge_cases)
{
	struct trace t;
	uint64_t hits;

	trace_init(&t);
	cr_assert_eq(trace_finish(&t), TFS_OK);
	cr_assert_eq(opt(&t, 3), 0);
	cr_assert_eq(opt_hits(&t, 0, &hits), TFS_E_INVAL);
	cr_assert_eq(trace_bound_cn(&t, 3), 0);
	trace_release(&t);
}

/* N = 10 items read in order, 4 epochs, C = 5, first epoch not counted
 * (30 counted accesses).  Upper bound: a hit in epoch k (k = 1, 2, 3) on
 * item x needs x resident from its access in epoch k - 1 to its access in
 * epoch k, hence across the boundary between the epochs; at that instant
 * at most C = 5 keys are resident, so at most 5 hits per counted epoch:
 * 15 in all, a ratio of C/N = 0.5.  A stable resident set reaches it: keep
 * 0..4 for ever (bypass 5..9) and every epoch hits 0..4.  OPT finds exactly
 * that: at 5 the newcomer's next use (15) is later than every resident's
 * (10..14), and so on for every later miss. */
Test(opt, epoch_sequential_meets_the_cn_bound)
{
	struct trace t;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 10, 4), TFS_OK);
	cr_assert_eq(t.warm_from, 10);
	cr_assert_eq(opt(&t, 5), 15);
	cr_assert_float_eq(trace_bound_cn(&t, 5), 0.5, 1e-12);
	cr_assert_float_eq(trace_bound_cn(&t, 50), 1.0, 1e-12);
	/* generally C hits per counted epoch, for every C < N */
	for (size_t c = 1; c < 10; c++)
		cr_assert_eq(opt(&t, c), 3 * c, "C = %zu", c);
	trace_release(&t);
}

/* Shuffled epochs: the same argument bounds OPT by C hits per counted
 * epoch, and keeping any C items resident for ever reaches it, so OPT is
 * exactly C * (epochs - 1) whatever the order within the epochs. */
Test(opt, epoch_shuffled_equals_the_cn_bound)
{
	struct trace t;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_shuffled(&t, 1000, 5, 42), TFS_OK);
	for (size_t c = 100; c < 1000; c += 200) {
		double bound = trace_bound_cn(&t, c) * (double)(t.n - t.warm_from);

		cr_assert_eq(opt(&t, c), 4 * c, "C = %zu", c);
		cr_assert_float_eq((double)(4 * c), bound, 1e-6);
	}
	trace_release(&t);
	trace_init(&t);
	cr_assert_eq(trace_gen_two_jobs(&t, 300, 700, 4, 1), TFS_OK);
	cr_assert_eq(opt(&t, 250), 3 * 250);
	trace_release(&t);
}

/* No policy beats OPT: random traces with some locality, every policy,
 * several capacities. */
Test(opt, at_least_every_policy_on_random_traces)
{
	uint64_t s = 0x1234567;

	for (int round = 0; round < 20; round++) {
		struct trace t;
		size_t universe = 20 + (size_t)round * 10;

		trace_init(&t);
		for (int i = 0; i < 3000; i++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			/* half the draws from a small hot range */
			uint64_t k = (s >> 33) % universe;
			if ((s >> 20) & 1)
				k %= universe / 4;
			cr_assert_eq(trace_push(&t, k), TFS_OK);
		}
		cr_assert_eq(trace_finish(&t), TFS_OK);
		for (size_t c = 1; c <= universe; c += 7) {
			uint64_t o = opt(&t, c);

			for (int kind = 0; kind < EVICT_KIND_COUNT; kind++) {
				struct sim_result r;

				cr_assert_eq(sim_replay(&t, (enum evict_kind)kind, c, &r), TFS_OK);
				cr_assert_leq(r.hits, o, "round %d C = %zu %s: %llu > OPT %llu", round,
					      c, evict_kind_name((enum evict_kind)kind),
					      (unsigned long long)r.hits, (unsigned long long)o);
			}
		}
		trace_release(&t);
	}
}

/* The most hits any cache of capacity c can get on keys < 6, by trying
 * every choice: a dynamic programme over resident sets (bit masks), where
 * a miss may bypass, fill a free slot, or replace any resident key. */
static uint64_t brute_force(const uint64_t *keys, size_t n, size_t c)
{
	int best[64], next[64];

	for (int m = 0; m < 64; m++)
		best[m] = -1;
	best[0] = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned bit = 1u << keys[i];

		for (int m = 0; m < 64; m++)
			next[m] = -1;
		for (int m = 0; m < 64; m++) {
			if (best[m] < 0)
				continue;
			if (m & bit) {
				if (best[m] + 1 > next[m])
					next[m] = best[m] + 1;
				continue;
			}
			if (best[m] > next[m])
				next[m] = best[m];             /* bypass */
			if ((size_t)__builtin_popcount((unsigned)m) < c) {
				if (best[m] > next[m | bit])
					next[m | bit] = best[m];
			} else {
				for (int v = 0; v < 6; v++) {
					int to = (m & ~(1 << v)) | (int)bit;

					if ((m & (1 << v)) && best[m] > next[to])
						next[to] = best[m];
				}
			}
		}
		for (int m = 0; m < 64; m++)
			best[m] = next[m];
	}
	{
		int top = 0;

		for (int m = 0; m < 64; m++)
			if (best[m] > top)
				top = best[m];
		return (uint64_t)top;
	}
}

Test(opt, equals_exhaustive_search_on_small_traces)
{
	uint64_t s = 99;

	for (int round = 0; round < 300; round++) {
		uint64_t keys[14];
		size_t n = 6 + (size_t)round % 9;
		struct trace t;

		for (size_t i = 0; i < n; i++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			keys[i] = (s >> 33) % 6;
		}
		make(&t, keys, n, 0);
		for (size_t c = 1; c <= 4; c++)
			cr_assert_eq(opt(&t, c), brute_force(keys, n, c), "round %d C = %zu", round, c);
		trace_release(&t);
	}
}
