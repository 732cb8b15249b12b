/* latency_hist.c - a lock-free log-linear histogram (see latency_hist.h).
 *
 * Bucket layout, in units u = ns >> 10, with S = 2^SUB_BITS = 16:
 *
 *   u < 16               bucket u                          (width 1 unit)
 *   2^e <= u < 2^(e+1)   bucket (e - 4) * S + (u >> (e - 4))
 *                        with e >= 4; u >> (e - 4) is in [S, 2S), so the
 *                        top SUB_BITS + 1 bits of u pick the bucket and
 *                        each group of S buckets covers one power of two
 *                        (width 2^(e - 4) units, 1/16 of 2^e)
 *   u >= 2^(MAX_EXP + 1) the last bucket, which thus has no upper edge
 *
 * For e = 4 the second rule gives bucket u too, so buckets 0 .. 31 are the
 * linear range and the rules agree at the seam.  Bucket b >= S holds
 * m << (e - 4) <= u < (m + 1) << (e - 4) with e = b / S + 3, m = S + b % S.
 *
 * Invariant: count == sum of buckets in every snapshot (count is derived,
 * never stored in the live histogram, so it cannot disagree).
 */
#include "common/latency_hist.h"

#include <assert.h>
#include <string.h>

#define SUB (1u << LATENCY_HIST_SUB_BITS)

static unsigned bucket_of(uint64_t ns)
{
	uint64_t u = ns >> LATENCY_HIST_UNIT_SHIFT;
	unsigned e, shift;

	if (u < SUB)
		return (unsigned)u;
	e = 63u - (unsigned)__builtin_clzll(u);
	if (e > LATENCY_HIST_MAX_EXP)
		return LATENCY_HIST_BUCKETS - 1;
	shift = e - LATENCY_HIST_SUB_BITS;
	return (shift << LATENCY_HIST_SUB_BITS) + (unsigned)(u >> shift);
}

/* The exclusive upper edge of bucket b in nanoseconds. */
static uint64_t bucket_upper_ns(unsigned b)
{
	uint64_t up;

	if (b < SUB) {
		up = (uint64_t)b + 1;
	} else {
		unsigned shift = b / SUB - 1;        /* e - 4 */
		uint64_t m = SUB + b % SUB;

		up = (m + 1) << shift;
	}
	return up << LATENCY_HIST_UNIT_SHIFT;
}

void latency_hist_init(struct latency_hist *h)
{
	for (unsigned i = 0; i < LATENCY_HIST_BUCKETS; i++)
		atomic_init(&h->buckets[i], 0);
	atomic_init(&h->sum_ns, 0);
	atomic_init(&h->max_ns, 0);
}

void latency_hist_record(struct latency_hist *h, uint64_t ns)
{
	uint_fast64_t max = atomic_load_explicit(&h->max_ns, memory_order_relaxed);

	atomic_fetch_add_explicit(&h->buckets[bucket_of(ns)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	while (ns > max && !atomic_compare_exchange_weak_explicit(&h->max_ns, &max, ns,
								  memory_order_relaxed,
								  memory_order_relaxed))
		;
}

void latency_hist_snapshot(const struct latency_hist *h, struct latency_hist_snap *out)
{
	out->count = 0;
	for (unsigned i = 0; i < LATENCY_HIST_BUCKETS; i++) {
		out->buckets[i] = atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
		out->count += out->buckets[i];
	}
	out->sum_ns = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
	out->max_ns = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
}

uint64_t latency_hist_quantile(const struct latency_hist_snap *s, double q)
{
	uint64_t rank, seen = 0;
	double r;

	if (s->count == 0)
		return 0;
	if (!(q > 0))           /* also NaN */
		q = 0;
	if (q > 1)
		q = 1;
	r = q * (double)s->count;
	rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	if (rank > s->count)
		rank = s->count;
	for (unsigned i = 0; i < LATENCY_HIST_BUCKETS; i++) {
		seen += s->buckets[i];
		if (seen >= rank) {
			uint64_t up = bucket_upper_ns(i);

			/* The last bucket is open-ended: only max bounds it. */
			if (i == LATENCY_HIST_BUCKETS - 1 || up > s->max_ns)
				return s->max_ns;
			return up;
		}
	}
	assert(!"count is the sum of the buckets");
	return s->max_ns;
}

void latency_hist_snap_sub(const struct latency_hist_snap *a, const struct latency_hist_snap *b,
			   struct latency_hist_snap *out)
{
	uint64_t cap = a->max_ns;
	unsigned top = LATENCY_HIST_BUCKETS;

	out->count = 0;
	for (unsigned i = 0; i < LATENCY_HIST_BUCKETS; i++) {
		uint64_t d = a->buckets[i] >= b->buckets[i] ? a->buckets[i] - b->buckets[i] : 0;

		out->buckets[i] = d;
		out->count += d;
		if (d)
			top = i;
	}
	out->sum_ns = a->sum_ns >= b->sum_ns ? a->sum_ns - b->sum_ns : 0;
	if (top == LATENCY_HIST_BUCKETS)
		out->max_ns = 0;
	else if (top == LATENCY_HIST_BUCKETS - 1 || bucket_upper_ns(top) > cap)
		out->max_ns = cap;
	else
		out->max_ns = bucket_upper_ns(top);
}
