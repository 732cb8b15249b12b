/* Unit tests for src/sim/sim: replaying traces against the real eviction policies. */
#include <criterion/criterion.h>

#include "common/tfs_err.h"
#include "evict/evict.h"
#include "sim/opt.h"
#include "sim/sim.h"
#include "sim/trace.h"

static void make(struct trace *t, const uint64_t *keys, size_t n, size_t warm_from)
{
	trace_init(t);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(trace_push(t, keys[i]), TFS_OK);
	cr_assert_eq(trace_finish(t), TFS_OK);
	t->warm_from = warm_from;
}

static const uint64_t classic[] = { 1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5 };

/* LRU, C = 3, by hand (resident set after each access, oldest first):
 *   1 2 3      miss x3        {1 2 3}
 *   4          miss, evict 1  {2 3 4}
 *   1          miss, evict 2  {3 4 1}
 *   2          miss, evict 3  {4 1 2}
 *   5          miss, evict 4  {1 2 5}
 *   1 2        hit, hit       {5 1 2}
 *   3          miss, evict 5  {1 2 3}
 *   4          miss, evict 1  {2 3 4}
 *   5          miss, evict 2  {3 4 5}
 * 2 hits (positions 7, 8), 10 inserts, 7 evictions: the textbook 10
 * faults.  Counting from position 8 leaves 1 hit. */
Test(sim, lru_classic_three_frames)
{
	struct trace t;
	struct sim_result r;

	make(&t, classic, 12, 0);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 3, &r), TFS_OK);
	cr_assert_eq(r.hits, 2);
	cr_assert_eq(r.counted, 12);
	cr_assert_eq(r.inserts, 10);
	cr_assert_eq(r.evictions, 7);
	cr_assert_eq(r.rejects, 0);
	cr_assert_float_eq(sim_hit_ratio(&r), 2.0 / 12, 1e-12);
	t.warm_from = 8;
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 3, &r), TFS_OK);
	cr_assert_eq(r.hits, 1);
	cr_assert_eq(r.counted, 4);
	trace_release(&t);
}

/* LRU, C = 4: 1 2 3 4 miss; 1 2 hit; 5 evicts 3 -> {4 1 2 5}; 1 2 hit;
 * 3 evicts 4 -> {5 1 2 3}; 4 evicts 5; 5 evicts 1.  4 hits, 8 faults
 * (Belady's anomaly is FIFO's, not LRU's: more frames, more hits). */
Test(sim, lru_classic_four_frames)
{
	struct trace t;
	struct sim_result r;

	make(&t, classic, 12, 0);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 4, &r), TFS_OK);
	cr_assert_eq(r.hits, 4);
	cr_assert_eq(r.inserts, 8);
	cr_assert_eq(r.evictions, 4);
	trace_release(&t);
}

/* Sequential epochs larger than the cache: LRU always evicts exactly the
 * key that comes back first, so after the first epoch it never hits. */
Test(sim, lru_epoch_sequential_no_hits_after_first_epoch)
{
	struct trace t;
	struct sim_result r;
	uint64_t o;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 100, 5), TFS_OK);
	for (size_t c = 1; c < 100; c += 13) {
		cr_assert_eq(sim_replay(&t, EVICT_LRU, c, &r), TFS_OK);
		cr_assert_eq(r.hits, 0, "C = %zu", c);
		cr_assert_eq(r.counted, 400);
		cr_assert_eq(opt_hits(&t, c, &o), TFS_OK);
		cr_assert_eq(o, 4 * c);           /* while OPT reaches C/N */
	}
	/* with room for everything, every counted access hits */
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 100, &r), TFS_OK);
	cr_assert_eq(r.hits, 400);
	trace_release(&t);
}

/* The loop's bookkeeping holds for every policy: residents never exceed
 * the capacity, and every miss was an insert or a reject. */
Test(sim, bookkeeping_every_policy)
{
	struct trace t;

	trace_init(&t);
	cr_assert_eq(trace_gen_zipf(&t, 2000, 0.9, 20000, 5), TFS_OK);
	for (int kind = 0; kind < EVICT_KIND_COUNT; kind++) {
		struct evict_policy *p = evict_policy_new((enum evict_kind)kind, 200);
		struct sim_result r, again;
		uint64_t all_hits;

		cr_assert_eq(sim_replay_policy(&t, p, &r), TFS_OK);
		cr_assert_eq(evict_policy_size(p), 200);
		cr_assert(evict_policy_check(p));
		cr_assert_eq(r.counted, t.n - t.warm_from);
		cr_assert_eq(r.inserts - r.evictions, 200);
		evict_policy_free(p);
		/* counting from 0: every access is a hit, an insert or a reject */
		t.warm_from = 0;
		cr_assert_eq(sim_replay(&t, (enum evict_kind)kind, 200, &again), TFS_OK);
		all_hits = again.hits;
		cr_assert_eq(all_hits + again.inserts + again.rejects, t.n);
		cr_assert_eq(again.inserts, r.inserts);  /* same replay, only counting differs */
		t.warm_from = t.n / 5;
		if (kind != EVICT_TINYLFU)
			cr_assert_eq(r.rejects, 0, "%s admits everything",
				     evict_kind_name((enum evict_kind)kind));
	}
	trace_release(&t);
}

/* TinyLFU's admission keeps a hot set through scans that flush LRU.  (W-
 * TinyLFU admits every miss to its window and names the window's own LRU
 * key as the victim when it loses the duel, so scans show up as window
 * churn, not as rejects.) */
Test(sim, tinylfu_resists_scans)
{
	struct trace t;
	struct sim_result lru, tlfu;

	trace_init(&t);
	cr_assert_eq(trace_gen_hotset_scans(&t, 100, 1000, 900, 10, 3), TFS_OK);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 200, &lru), TFS_OK);
	cr_assert_eq(sim_replay(&t, EVICT_TINYLFU, 200, &tlfu), TFS_OK);
	cr_assert_gt(tlfu.hits, lru.hits, "tinylfu %llu, lru %llu",
		     (unsigned long long)tlfu.hits, (unsigned long long)lru.hits);
	trace_release(&t);
}

Test(sim, bad_arguments)
{
	struct trace t;
	struct sim_result r;

	trace_init(&t);
	cr_assert_eq(trace_finish(&t), TFS_OK);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 0, &r), TFS_E_INVAL);
	cr_assert_eq(sim_replay(&t, EVICT_KIND_COUNT, 4, &r), TFS_E_INVAL);
	cr_assert_eq(sim_replay(&t, EVICT_LRU, 4, &r), TFS_OK);
	cr_assert_eq(r.hits, 0);
	cr_assert_eq(r.counted, 0);
	cr_assert_float_eq(sim_hit_ratio(&r), 0.0, 1e-12);
	trace_release(&t);
}

/* Shuffled epochs: every sample once per epoch, so frequencies are equal
 * and only a stable resident set reaches OPT (= C/N).  W-TinyLFU's duel
 * margin keeps the sketch's collision noise from churning main; with a
 * strict comparison it got 0.39 of OPT here (seed 1, 10k items, C/N 0.25). */
Test(sim, tinylfu_holds_a_stable_set_on_shuffled_epochs)
{
	struct trace t;
	struct sim_result r;
	uint64_t opt;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_shuffled(&t, 4000, 5, 7), TFS_OK);
	cr_assert_eq(opt_hits(&t, 1000, &opt), TFS_OK);
	cr_assert_eq(sim_replay(&t, EVICT_TINYLFU, 1000, &r), TFS_OK);
	cr_assert_geq((double)r.hits, 0.95 * (double)opt, "tinylfu %llu hits, OPT %llu",
		      (unsigned long long)r.hits, (unsigned long long)opt);
	trace_release(&t);
}

/* The two tiers by hand: RAM of one 64 KiB chunk, SSD of two; chunks of
 * 64 KiB (a sized trace, 4 KiB read per access).  Trace a a b c a b:
 *   a  miss: RAM {a}, SSD {a}
 *   a  RAM hit
 *   b  miss: RAM {b} (a out), SSD {a b}
 *   c  miss: RAM {c}; SSD full: c duels a victim it cannot beat (seen
 *      once, the victim as often or more): rejected
 *   a  SSD hit (not copied to RAM)
 *   b  SSD hit
 * Counted from access 1: 5 accesses, 1 RAM hit, 2 SSD hits, 2 misses,
 * 20 KiB read, 128 KiB fetched. */
Test(sim_tiers, two_tiers_by_hand)
{
	static const uint64_t keys[] = { 1, 1, 2, 3, 1, 2 };
	struct sim_tiers_config cfg = { EVICT_TINYLFU, EVICT_TINYLFU, 64 * 1024,
					2 * 64 * 1024, 64 * 1024 };
	struct sim_tiers_result r;
	struct trace t;

	trace_init(&t);
	t.sized = true;
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(trace_push_sized(&t, keys[i], 64 * 1024, 4096, true), TFS_OK);
	cr_assert_eq(trace_push(&t, 9), TFS_E_INVAL, "an unsized push into a sized trace");
	cr_assert_eq(trace_finish(&t), TFS_OK);
	t.warm_from = 1;
	cr_assert_eq(sim_replay_tiers(&t, &cfg, &r), TFS_OK);
	cr_expect_eq(r.accesses, 5);
	cr_expect_eq(r.ram_hits, 1);
	cr_expect_eq(r.ssd_hits, 2);
	cr_expect_eq(r.misses, 2);
	cr_expect_eq(r.read_bytes, 5 * 4096);
	cr_expect_eq(r.fetched_bytes, 2 * 64 * 1024);
	cr_expect_eq(r.ssd_rejects, 1);
	cr_expect_eq(r.ram_evictions, 2);
	cr_expect_eq(r.ssd_evictions, 0);
	trace_release(&t);
}

/* Shuffled epochs over 4 x the SSD tier, every chunk read whole: the
 * tiers keep a stable set, so from the second epoch on the byte hit
 * ratio is close to the SSD tier's share of the dataset (RAM adds a
 * little); LRU on both tiers gets far less. */
Test(sim_tiers, shuffled_epochs_reach_the_cache_share)
{
	struct sim_tiers_config cfg = { EVICT_TINYLFU, EVICT_TINYLFU, 1u << 20, 16u << 20,
					1u << 20 };
	struct sim_tiers_result r;
	struct trace t;
	double tiny;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_shuffled(&t, 64, 6, 3), TFS_OK);
	cr_assert_eq(sim_replay_tiers(&t, &cfg, &r), TFS_OK);
	tiny = sim_tiers_hit_ratio(&r);
	cr_expect_eq(r.read_bytes, 5 * 64 * (1u << 20));
	cr_expect_geq(tiny, 0.24, "%.3f", tiny);
	cr_expect_leq(tiny, 0.25 + 1.0 / 64 + 0.01, "%.3f", tiny);
	cfg.ram_kind = cfg.ssd_kind = EVICT_LRU;
	cr_assert_eq(sim_replay_tiers(&t, &cfg, &r), TFS_OK);
	cr_expect_lt(sim_tiers_hit_ratio(&r), tiny - 0.1, "lru %.3f", sim_tiers_hit_ratio(&r));
	cfg.ram_bytes = 1u << 19;   /* less than a chunk */
	cr_expect_eq(sim_replay_tiers(&t, &cfg, &r), TFS_E_INVAL);
	trace_release(&t);
}

/* A hot set moving through a small SSD tier behind the RAM tier (the
 * simulator's shifting hot set: 90% of accesses within a tenth of the
 * items, the tenth moving on every N accesses; SSD a quarter of the
 * items, RAM 16 chunks).  The RAM tier answers a returning hot chunk
 * while it holds it, so the SSD tier sees it back later; W-TinyLFU still
 * follows the hot set within 2 points of the better of LRU and LFU. */
Test(sim_tiers, a_hot_set_moving_behind_the_ram_tier_within_two_points)
{
	static const size_t items[] = { 256, 512, 1000 };

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		for (uint64_t seed = 1; seed <= 3; seed++) {
			size_t n = items[i];
			struct sim_tiers_config cfg = { EVICT_TINYLFU, EVICT_TINYLFU, 1u << 20,
							n / 4 * (64u << 10), 64u << 10 };
			struct sim_tiers_result r;
			double best = 0, hit[EVICT_KIND_COUNT];
			struct trace t;

			trace_init(&t);
			cr_assert_eq(trace_gen_shifting_hotset(&t, n, n / 10, n, 10 * n, seed),
				     TFS_OK);
			for (int k = 0; k < EVICT_KIND_COUNT; k++) {
				cfg.ram_kind = cfg.ssd_kind = (enum evict_kind)k;
				cr_assert_eq(sim_replay_tiers(&t, &cfg, &r), TFS_OK);
				hit[k] = sim_tiers_hit_ratio(&r);
				if (k != EVICT_TINYLFU && hit[k] > best)
					best = hit[k];
			}
			cr_expect_geq(hit[EVICT_TINYLFU], best - 0.02,
				      "%zu items, seed %lu: tinylfu %.4f, lru %.4f, lfu %.4f", n,
				      (unsigned long)seed, hit[EVICT_TINYLFU], hit[EVICT_LRU],
				      hit[EVICT_LFU]);
			trace_release(&t);
		}
	}
}
