/* Unit tests for src/common/latency_hist: bucket error of quantiles on
 * known distributions, concurrent records, and snapshot subtraction. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/latency_hist.h"
#include "common/rand.h"

#define US 1000ull
#define MS 1000000ull
#define SEC 1000000000ull

/* The histogram and its snapshots are ~3 KB each: keep them off the stack
 * of worker threads and give each test fresh ones. */
static struct latency_hist hist;
static struct latency_hist_snap snap_a, snap_b, snap_d;

static void setup(void)
{
	latency_hist_init(&hist);
	memset(&snap_a, 0xa5, sizeof(snap_a));
	memset(&snap_b, 0xa5, sizeof(snap_b));
	memset(&snap_d, 0xa5, sizeof(snap_d));
}

TestSuite(latency_hist, .init = setup);

/* The promise of latency_hist_quantile(): never below the true value,
 * above it by at most one bucket (1024 ns in the linear range, 1/16 of
 * the value beyond). */
static void assert_within_bucket(uint64_t got, uint64_t exact, const char *what)
{
	uint64_t slack = 1024 + exact / 16;

	cr_assert_geq(got, exact, "%s: %llu below the true %llu", what,
		      (unsigned long long)got, (unsigned long long)exact);
	cr_assert_leq(got, exact + slack, "%s: %llu too far above the true %llu", what,
		      (unsigned long long)got, (unsigned long long)exact);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ceil(q * n), at least 1 (no libm in the test binaries). */
static size_t rank_of(double q, size_t n)
{
	double r = q * (double)n;
	size_t k = (size_t)r;

	if ((double)k < r)
		k++;
	return k ? k : 1;
}

/* The ceil(q * n)-th smallest of sorted v. */
static uint64_t exact_quantile(const uint64_t *v, size_t n, double q)
{
	return v[rank_of(q, n) - 1];
}

Test(latency_hist, empty)
{
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, 0);
	cr_assert_eq(snap_a.sum_ns, 0);
	cr_assert_eq(snap_a.max_ns, 0);
	cr_assert_eq(latency_hist_quantile(&snap_a, 0.5), 0);
	cr_assert_eq(latency_hist_quantile(&snap_a, 1.0), 0);
}

Test(latency_hist, single_value_is_exact_through_max)
{
	latency_hist_record(&hist, 12345678);
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, 1);
	cr_assert_eq(snap_a.sum_ns, 12345678);
	cr_assert_eq(snap_a.max_ns, 12345678);
	/* The bucket's upper edge is capped at the maximum. */
	cr_assert_eq(latency_hist_quantile(&snap_a, 0.0), 12345678);
	cr_assert_eq(latency_hist_quantile(&snap_a, 0.5), 12345678);
	cr_assert_eq(latency_hist_quantile(&snap_a, 1.0), 12345678);
}

/* 1 ms, 2 ms, ... 1000 ms: every quantile is known exactly. */
Test(latency_hist, uniform_milliseconds)
{
	static const double qs[] = { 0.01, 0.1, 0.5, 0.9, 0.99, 0.999 };
	uint64_t sum = 0;

	for (uint64_t i = 1000; i >= 1; i--) {
		latency_hist_record(&hist, i * MS);
		sum += i * MS;
	}
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, 1000);
	cr_assert_eq(snap_a.sum_ns, sum);
	cr_assert_eq(snap_a.max_ns, 1000 * MS);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t exact = rank_of(qs[i], 1000) * MS;

		assert_within_bucket(latency_hist_quantile(&snap_a, qs[i]), exact, "uniform");
	}
	cr_assert_eq(latency_hist_quantile(&snap_a, 1.0), 1000 * MS);
	/* Out-of-range q is clamped. */
	cr_assert_eq(latency_hist_quantile(&snap_a, 7.0), 1000 * MS);
	assert_within_bucket(latency_hist_quantile(&snap_a, -1.0), 1 * MS, "q < 0");
	assert_within_bucket(latency_hist_quantile(&snap_a, __builtin_nan("")), 1 * MS, "q NaN");
}

/* Roughly log-uniform from 1 us to ~137 s (the whole working range,
 * every bucket group): a uniform power of two 2^10 .. 2^36 ns, then a
 * uniform value within it.  Compared with the sorted samples. */
Test(latency_hist, log_uniform_against_sorted)
{
	enum { N = 200000 };
	static const double qs[] = { 0.0, 0.001, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999 };
	uint64_t *v = malloc(N * sizeof(*v));
	uint64_t s = xorshift64s_seed(42);

	cr_assert_not_null(v);
	for (size_t i = 0; i < N; i++) {
		unsigned e = 10 + (unsigned)(xorshift64s_next(&s) % 27);

		v[i] = (1ull << e) + (xorshift64s_next(&s) & ((1ull << e) - 1));
		latency_hist_record(&hist, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, N);
	cr_assert_eq(snap_a.max_ns, v[N - 1]);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		char what[32];

		snprintf(what, sizeof(what), "q=%g", qs[i]);
		assert_within_bucket(latency_hist_quantile(&snap_a, qs[i]),
				     exact_quantile(v, N, qs[i]), what);
	}
	free(v);
}

/* One value v next to a much larger one: the median is v's bucket edge.
 * Walks every bucket edge region (powers of two, one below, one above,
 * the linear/log seam) from 0 to past the top. */
Test(latency_hist, bucket_edges)
{
	for (unsigned e = 0; e < 40; e++) {
		for (int d = -1; d <= 1; d++) {
			uint64_t v = (1ull << e) * 1024 + (uint64_t)(int64_t)d;
			uint64_t got;

			latency_hist_init(&hist);
			latency_hist_record(&hist, v);
			latency_hist_record(&hist, 1ull << 62);
			latency_hist_snapshot(&hist, &snap_a);
			got = latency_hist_quantile(&snap_a, 0.5);
			/* The last bucket starts at 31 << 23 units (~266 s). */
			if (v < (31ull << 23) * 1024) {
				cr_assert_gt(got, v, "v=%llu got %llu", (unsigned long long)v,
					     (unsigned long long)got);
				assert_within_bucket(got, v, "edge");
			} else {
				/* Past the top bucket only the maximum bounds it. */
				cr_assert_eq(got, 1ull << 62);
			}
		}
	}
}

Test(latency_hist, zero_and_huge)
{
	latency_hist_record(&hist, 0);
	latency_hist_record(&hist, 500 * SEC);     /* past the ~275 s top */
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, 2);
	cr_assert_eq(snap_a.max_ns, 500 * SEC);
	cr_assert_leq(latency_hist_quantile(&snap_a, 0.5), 1024);
	cr_assert_eq(latency_hist_quantile(&snap_a, 0.99), 500 * SEC);
}

/* ---- concurrency ---------------------------------------------------- */

enum { THREADS = 4, PER_THREAD = 250000 };

static void *recorder(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;

	/* Thread t records t + 1 ms, and once 10 s + t. */
	for (size_t i = 0; i < PER_THREAD - 1; i++)
		latency_hist_record(&hist, (id + 1) * MS);
	latency_hist_record(&hist, 10 * SEC + id);
	return NULL;
}

Test(latency_hist, four_threads_sum_exactly)
{
	pthread_t th[THREADS];
	uint64_t sum = 0;

	for (uintptr_t t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, recorder, (void *)t), 0);
	for (int t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_join(th[t], NULL), 0);
	latency_hist_snapshot(&hist, &snap_a);
	cr_assert_eq(snap_a.count, (uint64_t)THREADS * PER_THREAD);
	for (uint64_t t = 0; t < THREADS; t++)
		sum += (PER_THREAD - 1) * (t + 1) * MS + 10 * SEC + t;
	cr_assert_eq(snap_a.sum_ns, sum);
	cr_assert_eq(snap_a.max_ns, 10 * SEC + THREADS - 1);
	/* 1, 2, 3, 4 ms each hold a quarter (less one) of the counts. */
	assert_within_bucket(latency_hist_quantile(&snap_a, 0.2), 1 * MS, "q=0.2");
	assert_within_bucket(latency_hist_quantile(&snap_a, 0.7), 3 * MS, "q=0.7");
	assert_within_bucket(latency_hist_quantile(&snap_a, 0.99), 4 * MS, "q=0.99");
	cr_assert_eq(latency_hist_quantile(&snap_a, 1.0), 10 * SEC + THREADS - 1);
}

/* ---- subtraction ---------------------------------------------------- */

Test(latency_hist, snap_sub_is_the_epoch_between)
{
	struct latency_hist *only2 = malloc(sizeof(*only2));
	struct latency_hist_snap *s2 = malloc(sizeof(*s2));

	cr_assert(only2 && s2);
	latency_hist_init(only2);
	/* Epoch 1: slow requests, including the all-time maximum. */
	for (int i = 0; i < 100; i++)
		latency_hist_record(&hist, 2 * SEC + (uint64_t)i * MS);
	latency_hist_snapshot(&hist, &snap_a);
	/* Epoch 2: fast ones, 100 us .. 10 ms. */
	for (uint64_t i = 1; i <= 100; i++) {
		latency_hist_record(&hist, i * 100 * US);
		latency_hist_record(only2, i * 100 * US);
	}
	latency_hist_snapshot(&hist, &snap_b);
	latency_hist_snapshot(only2, s2);

	latency_hist_snap_sub(&snap_b, &snap_a, &snap_d);
	cr_assert_eq(snap_d.count, 100);
	cr_assert_eq(snap_d.sum_ns, s2->sum_ns);
	cr_assert_eq(memcmp(snap_d.buckets, s2->buckets, sizeof(s2->buckets)), 0);
	/* The epoch's max is not known exactly: its bucket's edge, which is
	 * above the true 10 ms and far below the all-time 2.099 s. */
	assert_within_bucket(snap_d.max_ns, 10 * MS, "delta max");
	assert_within_bucket(latency_hist_quantile(&snap_d, 0.5), 5 * MS, "delta p50");
	assert_within_bucket(latency_hist_quantile(&snap_d, 0.99), 9900 * US, "delta p99");

	/* Nothing in between: empty.  And out may alias an input. */
	latency_hist_snap_sub(&snap_b, &snap_b, &snap_d);
	cr_assert_eq(snap_d.count, 0);
	cr_assert_eq(snap_d.max_ns, 0);
	cr_assert_eq(latency_hist_quantile(&snap_d, 0.5), 0);
	latency_hist_snap_sub(&snap_b, &snap_a, &snap_b);
	cr_assert_eq(snap_b.count, 100);
	cr_assert_eq(memcmp(snap_b.buckets, s2->buckets, sizeof(s2->buckets)), 0);

	/* Snapshots in the wrong order never underflow. */
	latency_hist_snap_sub(&snap_a, &snap_b, &snap_d);
	for (unsigned i = 0; i < LATENCY_HIST_BUCKETS; i++)
		cr_assert_leq(snap_d.buckets[i], snap_a.buckets[i]);
	free(only2);
	free(s2);
}
