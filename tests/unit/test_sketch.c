/* Unit tests for src/evict/sketch: count-min bound, doorkeeper, reset, restore. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/rand.h"
#include "evict/sketch.h"

/* A skewed key: low keys are much more frequent. */
static uint64_t skewed_key(uint64_t *s, uint64_t n)
{
	uint64_t a = xorshift64s_next(s) % n, b = xorshift64s_next(s) % n;

	return (a < b ? a : b) * 0x100000001b3ull + 7;
}

Test(sketch, bad_arguments)
{
	cr_assert_null(sketch_new(0));
	cr_assert_null(sketch_new((size_t)1 << 31));
}

Test(sketch, first_occurrence_goes_to_the_doorkeeper_and_counters_saturate)
{
	struct sketch *s = sketch_new(1000);

	cr_assert_eq(sketch_estimate(s, 42), 0);
	sketch_add(s, 42);
	cr_assert_eq(sketch_estimate(s, 42), 1);
	sketch_add(s, 42);
	cr_assert_eq(sketch_estimate(s, 42), 2);
	for (int i = 0; i < 100; i++)
		sketch_add(s, 42);
	cr_assert_eq(sketch_estimate(s, 42), SKETCH_COUNTER_MAX + 1);
	cr_assert_eq(sketch_reset_count(s), 0);
	sketch_free(s);
}

Test(sketch, never_underestimates_before_a_reset)
{
	const size_t cap = 1000, n_keys = 3000;
	struct sketch *s = sketch_new(cap);
	unsigned *truth = calloc(n_keys, sizeof(*truth));
	uint64_t seed = 12345, adds = sketch_sample_size(s) - 1;
	unsigned over = 0, absent = 0;

	cr_assert_eq(sketch_sample_size(s), 10 * cap);
	for (uint64_t i = 0; i < adds; i++) {
		uint64_t r = xorshift64s_next(&seed) % n_keys, a = xorshift64s_next(&seed) % n_keys;
		uint64_t k = r < a ? r : a;

		truth[k]++;
		sketch_add(s, k);
	}
	cr_assert_eq(sketch_reset_count(s), 0);
	for (uint64_t k = 0; k < n_keys; k++) {
		unsigned e = sketch_estimate(s, k), t = truth[k] < 16 ? truth[k] : 16;

		cr_assert_geq(e, t, "key %lu: estimate %u < true %u", (unsigned long)k, e, truth[k]);
		if (truth[k] == 0) {
			absent++;
			over += e;
		}
	}
	/* and it is a useful estimate: keys never added look cold */
	cr_assert_gt(absent, 100);
	cr_assert_lt((double)over / absent, 1.0, "mean estimate of absent keys %f",
		     (double)over / absent);
	free(truth);
	sketch_free(s);
}

Test(sketch, reset_every_w_additions_halves_counts_and_clears_doorkeeper)
{
	const size_t cap = 100;
	enum { N = 64 };
	struct sketch *s = sketch_new(cap);
	uint64_t w = sketch_sample_size(s), adds = 0, seed = 99;
	unsigned before[N];

	/* keys 1..N with varied counts, key 1000 saturated */
	for (uint64_t k = 1; k <= N; k++)
		for (uint64_t j = 0; j < k % 20 + 1; j++, adds++)
			sketch_add(s, k);
	for (int i = 0; i < 40; i++, adds++)
		sketch_add(s, 1000);
	while (adds < w - 1) {
		sketch_add(s, 5000 + xorshift64s_next(&seed) % 100000);
		adds++;
	}
	cr_assert_eq(sketch_reset_count(s), 0);
	for (uint64_t k = 1; k <= N; k++) {
		before[k - 1] = sketch_estimate(s, k);
		cr_assert_geq(before[k - 1], 1);
	}
	cr_assert_eq(sketch_estimate(s, 1000), 16);
	sketch_add(s, 1000);           /* the W-th addition: saturated, only resets */
	cr_assert_eq(sketch_reset_count(s), 1);
	cr_assert_eq(sketch_estimate(s, 1000), 7);
	for (uint64_t k = 1; k <= N; k++)
		cr_assert_eq(sketch_estimate(s, k), (before[k - 1] - 1) / 2, "key %lu: %u -> %u",
			     (unsigned long)k, before[k - 1], sketch_estimate(s, k));
	/* the next reset comes W additions later */
	for (uint64_t i = 0; i < w - 1; i++)
		sketch_add(s, 1000);
	cr_assert_eq(sketch_reset_count(s), 1);
	sketch_add(s, 1000);
	cr_assert_eq(sketch_reset_count(s), 2);
	sketch_free(s);
}

Test(sketch, frequent_keys_estimate_higher_than_rare_ones)
{
	struct sketch *s = sketch_new(500);
	uint64_t seed = 7;

	for (int i = 0; i < 40000; i++)
		sketch_add(s, skewed_key(&seed, 5000));
	/* key 0 is the most frequent of the skewed stream, key 4999 the rarest */
	cr_assert_gt(sketch_estimate(s, 0 * 0x100000001b3ull + 7),
		     sketch_estimate(s, 4999 * 0x100000001b3ull + 7));
	cr_assert_gt(sketch_reset_count(s), 0);
	sketch_free(s);
}

Test(sketch, restore_raises_without_counting_additions)
{
	struct sketch *s = sketch_new(10);

	sketch_restore(s, 77, 9);
	cr_assert_eq(sketch_estimate(s, 77), 9);
	sketch_restore(s, 77, 3);      /* never lowers */
	cr_assert_eq(sketch_estimate(s, 77), 9);
	sketch_restore(s, 78, 40);     /* capped */
	cr_assert_eq(sketch_estimate(s, 78), SKETCH_COUNTER_MAX + 1);
	sketch_restore(s, 79, 0);
	cr_assert_eq(sketch_estimate(s, 79), 0);
	for (int i = 0; i < 1000; i++)
		sketch_restore(s, (uint64_t)i, 2);
	cr_assert_eq(sketch_reset_count(s), 0);
	sketch_free(s);
}

/* A sketch of capacity 64 that saw key k (0 <= k < n) k % mod times;
 * before[k] its estimate. */
static struct sketch *sketch_seen(uint64_t n, unsigned mod, unsigned *before)
{
	struct sketch *s = sketch_new(64);

	cr_assert_not_null(s);
	for (uint64_t k = 0; k < n; k++)
		for (uint64_t r = 0; r < k % mod; r++)
			sketch_add(s, k);
	for (uint64_t k = 0; k < n; k++)
		before[k] = sketch_estimate(s, k);
	return s;
}

/* Growing keeps every estimate: no key's count drops or rises, and the
 * grown sketch goes on counting. */
Test(sketch, grow_keeps_every_estimate)
{
	unsigned before[2000];
	struct sketch *s = sketch_seen(2000, 5, before);

	cr_assert(sketch_grow(s, 512));
	for (uint64_t k = 0; k < 2000; k++)
		cr_assert_eq(sketch_estimate(s, k), before[k], "key %llu: %u, was %u",
			     (unsigned long long)k, sketch_estimate(s, k), before[k]);
	cr_assert(sketch_grow(s, 100), "a smaller capacity is a no-op");
	sketch_add(s, 7);
	cr_assert_geq(sketch_estimate(s, 7), before[7]);
	cr_assert_not(sketch_grow(s, 0));
	sketch_free(s);
}

/* An SSD tier's sketch is large: from 2 MiB its arrays are mapped on
 * their own (huge pages) rather than calloc'ed.  Grown from a small one
 * across that line, and again within it, every estimate survives, new
 * counters start at 0, and freeing each kind is clean (the sanitizer
 * builds catch a mapping handed to free()). */
Test(sketch, grow_across_the_mapped_size_keeps_every_estimate)
{
	static const size_t caps[] = { (size_t)1 << 17, (size_t)1 << 19 };
	unsigned before[3000];
	struct sketch *s = sketch_seen(3000, 7, before);

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		cr_assert(sketch_grow(s, caps[i]));
		for (uint64_t k = 0; k < 3000; k++)
			cr_assert_eq(sketch_estimate(s, k), before[k], "capacity %zu, key %llu: %u, was %u",
				     caps[i], (unsigned long long)k, sketch_estimate(s, k), before[k]);
	}
	for (uint64_t k = 0; k < 3000; k++) {
		sketch_add(s, k);
		sketch_add(s, k);
		cr_assert_geq(sketch_estimate(s, k), before[k] + 1);
	}
	sketch_free(s);

	s = sketch_new((size_t)1 << 19);
	cr_assert_not_null(s);
	for (uint64_t k = 0; k < 3000; k++)
		cr_assert_eq(sketch_estimate(s, k * 0x9e3779b97f4a7c15ull), 0, "a new sketch is zeroed");
	sketch_add(s, 5);
	sketch_add(s, 5);
	cr_assert_eq(sketch_estimate(s, 5), 2);
	sketch_free(s);
}
