/* latency_hist.h - a lock-free log-linear histogram of durations.
 *
 * Records nanosecond durations into a fixed array of counters, the shape
 * of HdrHistogram: durations are counted in units of 1024 ns (~1 us);
 * below 32 units every unit has its own bucket, above that each power of
 * two [2^e, 2^(e+1)) is cut into 16 equal sub-buckets, so any bucket is at
 * most 1/16 (6.25 %) of its lower edge wide.  The last bucket, from
 * 31 * 2^23 units (~266 s) up, is open-ended: quantiles that fall in it
 * are answered with the exact maximum, which is kept apart.  Memory is fixed: LATENCY_HIST_BUCKETS counters.
 *
 * Thread safety: latency_hist_record() and latency_hist_snapshot() may run
 * from any number of threads at once, without a lock (relaxed atomic
 * adds; a snapshot taken during records is each counter's value at some
 * moment, not one instant of the whole histogram).  Snapshots are plain
 * values: the functions on them are pure.
 */
#ifndef TIERFS_LATENCY_HIST_H
#define TIERFS_LATENCY_HIST_H

#include <stdatomic.h>
#include <stdint.h>

#define LATENCY_HIST_UNIT_SHIFT 10    /* one unit = 1024 ns */
#define LATENCY_HIST_SUB_BITS 4       /* 16 linear sub-buckets per power of two */
#define LATENCY_HIST_MAX_EXP 27       /* top bucket group: [2^27, 2^28) units */
#define LATENCY_HIST_BUCKETS \
	((LATENCY_HIST_MAX_EXP - LATENCY_HIST_SUB_BITS + 2) << LATENCY_HIST_SUB_BITS)

/* Embedded in its owner; fields are private to latency_hist.c.  Owns no
 * resources, so there is no _release. */
struct latency_hist {
	atomic_uint_fast64_t buckets[LATENCY_HIST_BUCKETS];
	atomic_uint_fast64_t sum_ns;
	atomic_uint_fast64_t max_ns;
};

/* A copy of a histogram at one point, or the difference of two. */
struct latency_hist_snap {
	uint64_t count;                 /* sum of buckets[] */
	uint64_t sum_ns;                /* total of the recorded durations (mean = sum / count) */
	uint64_t max_ns;                /* largest recorded duration; after
	                                 * latency_hist_snap_sub() an upper bound */
	uint64_t buckets[LATENCY_HIST_BUCKETS];
};

/* Empty h.  Not thread-safe (h is not in use yet). */
void latency_hist_init(struct latency_hist *h);

/* Count one duration of ns nanoseconds.  Lock-free, no syscall: two
 * relaxed atomic adds and a load (plus a CAS when ns is a new maximum). */
void latency_hist_record(struct latency_hist *h, uint64_t ns);

/* Copy h into *out. */
void latency_hist_snapshot(const struct latency_hist *h, struct latency_hist_snap *out);

/* The q-quantile (q in [0, 1], clamped) of s in nanoseconds: the upper
 * edge of the bucket holding the ceil(q * count)-th smallest duration
 * (at least the first), capped at s->max_ns.  So the true quantile is
 * <= the answer and at most one bucket width (6.25 %, or 1024 ns below
 * 32 us) below it.  0 when s is empty.  q = 1 gives max_ns. */
uint64_t latency_hist_quantile(const struct latency_hist_snap *s, double q);

/* *out = a - b, bucket by bucket, for the durations recorded between
 * snapshot b and the later snapshot a of the same histogram (a counter
 * that went down, which a later snapshot never shows, gives 0).  The
 * maximum of that interval is unknown: out->max_ns is the upper edge of
 * the highest non-empty bucket of the difference, capped at a->max_ns (0
 * when empty).  out may alias a or b. */
void latency_hist_snap_sub(const struct latency_hist_snap *a, const struct latency_hist_snap *b,
			   struct latency_hist_snap *out);

#endif
