/* sketch.h - a frequency sketch with aging for TinyLFU admission.
 *
 * A count-min sketch of 4-bit counters (4 rows, conservative update)
 * behind a doorkeeper bloom filter: a key's first occurrence since the
 * last reset only sets doorkeeper bits, so one-off keys (a scan) do not
 * crowd the counters.  Every W = 10 * capacity additions all counters are
 * halved and the doorkeeper cleared (the TinyLFU reset): the sketch
 * estimates frequency over a recent window, and a formerly hot key fades.
 *
 * Memory is fixed at creation: 16 bytes of counters and 5-10 of
 * doorkeeper per unit of capacity.  Pure data structure: no I/O, not thread-safe.
 */
#ifndef TIERFS_SKETCH_H
#define TIERFS_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SKETCH_COUNTER_MAX 15

struct sketch;

/* A sketch for a cache of capacity keys (1 .. 2^30).  NULL on bad
 * arguments or out of memory. */
struct sketch *sketch_new(size_t capacity);
void sketch_free(struct sketch *s);
/* Resize for a bigger capacity, keeping every estimate: a row of twice
 * the width holds each old counter at both indexes a key may now map to
 * (and the doorkeeper each bit), so no key's count drops and none rises.
 * false when out of memory (s unchanged). */
bool sketch_grow(struct sketch *s, size_t capacity);

/* Count one occurrence of key (may trigger a reset). */
void sketch_add(struct sketch *s, uint64_t key);

/* Estimated occurrences of key since about the last reset:
 * 0 .. SKETCH_COUNTER_MAX + 1 (the + 1 is the doorkeeper's bit).  Before
 * any reset it never underestimates: estimate >= min(true count, 16). */
unsigned sketch_estimate(const struct sketch *s, uint64_t key);

/* Raise key's estimate to at least est (capped), without counting as an
 * addition: restores frequency knowledge kept across a restart. */
void sketch_restore(struct sketch *s, uint64_t key, unsigned est);

/* Additions between two resets (W). */
uint64_t sketch_sample_size(const struct sketch *s);

/* Number of resets so far (for tests and statistics). */
uint64_t sketch_reset_count(const struct sketch *s);

#endif
