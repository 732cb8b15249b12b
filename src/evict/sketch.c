/* sketch.c - count-min sketch of 4-bit counters with a doorkeeper and periodic halving.
 *
 * Invariants: width is a power of two >= 16 and each row is width / 16
 * words of 16 nibbles; every counter is <= SKETCH_COUNTER_MAX; adds < W
 * between calls (the reset runs on the addition that reaches W).
 *
 * Why these sizes.  Four rows of 8 * capacity counters: a cold key looks
 * hot only if each of its four counters is shared with a hot key, about
 * (1 - e^(-hot / width))^4, and each such key can evict a hot one.  With
 * a cache full of hot keys that is ~1e-4 at 8 * capacity against ~2e-3 at
 * 4 * capacity (measured, capacity 100: 1 cold key in 17,000 looks hot,
 * against 1 in 1,000).  Counters stop at 15 because admission only
 * compares the warm against the cold: TinyLFU shows 4 bits lose nothing measurable
 * once the reset halves them every W = 10 * capacity additions.
 * Conservative update (only the counters equal to the key's minimum are
 * incremented) cuts the overestimate of colliding keys and keeps the
 * count-min guarantee: a key's minimum rises with each of its additions
 * until it saturates.  The reset restarts the addition count at zero
 * rather than halving it as Caffeine does: a reset exactly every W
 * additions is easier to reason about and to test.
 *
 * The doorkeeper is a bloom filter of next_pow2(4 * W) bits and 3 hashes;
 * at most W distinct keys enter it between resets, so its false positive
 * rate stays under ~15% even for a pure scan, and a false positive only
 * costs one counter increment.
 */
#include "evict/sketch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "evict/policy.h"

#define SKETCH_ROWS 4
#define SKETCH_WINDOW_MULT 10
#define DK_HASHES 3

struct sketch {
	uint64_t *table;        /* SKETCH_ROWS * row_words */
	size_t row_words;
	uint64_t width_mask;    /* counters per row - 1 */
	uint64_t *dk;           /* doorkeeper bits */
	uint64_t dk_mask;       /* bits - 1 */
	uint64_t adds;
	uint64_t window;        /* W */
	uint64_t resets;
};

/* The counters and the doorkeeper are touched at random, one word per
 * row or bit, so each key new to the sketch lands on pages no key has
 * touched yet while most of them are untouched: an SSD tier's sketch is
 * sized for its key capacity (96 MiB for 4M keys), and on a fresh mount
 * those first touches, a page fault each, took a quarter of the daemon's
 * CPU in a loader's second epoch (3,000 files).  Arrays of HUGE_BYTES
 * and more are mapped on their own, aligned, and advised as huge pages:
 * one fault per 2 MiB, and no TLB miss per access, where the kernel has
 * transparent huge pages (where it has not, they are ordinary zeroed
 * pages, as calloc's).  Smaller ones come from calloc. */
#define HUGE_BYTES ((size_t)2 << 20)

/* The length of the mapping of an array of bytes >= HUGE_BYTES. */
static size_t huge_len(size_t bytes)
{
	return (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
}

static void *table_alloc(size_t bytes)
{
	size_t len, head;
	uint8_t *p;

	if (bytes < HUGE_BYTES)
		return calloc(1, bytes);
	len = huge_len(bytes);
	p = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		return NULL;
	head = (HUGE_BYTES - (uintptr_t)p % HUGE_BYTES) % HUGE_BYTES;
	if (head)
		munmap(p, head);
	munmap(p + head + len, HUGE_BYTES - head);
#ifdef MADV_HUGEPAGE
	(void)madvise(p + head, len, MADV_HUGEPAGE);
#endif
	return p + head;
}

/* Free what table_alloc(bytes) returned (NULL is fine). */
static void table_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < HUGE_BYTES)
		free(p);
	else
		munmap(p, huge_len(bytes));
}

static size_t table_bytes(const struct sketch *s)
{
	return SKETCH_ROWS * s->row_words * sizeof(*s->table);
}

static size_t dk_bytes(const struct sketch *s)
{
	return (s->dk_mask + 1) / 8;
}

static size_t next_pow2(size_t n, size_t min)
{
	size_t v = min;

	while (v < n)
		v <<= 1;
	return v;
}

struct sketch *sketch_new(size_t capacity)
{
	struct sketch *s;
	size_t width, dk_bits;

	if (capacity == 0 || capacity > EVICT_MAX_CAPACITY)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* at most 2^32 counters a row: indexes are 32-bit slices of a hash */
	width = next_pow2(8 * capacity < ((size_t)1 << 32) ? 8 * capacity : (size_t)1 << 32, 16);
	s->window = (uint64_t)capacity * SKETCH_WINDOW_MULT;
	dk_bits = next_pow2(4 * (size_t)s->window, 64);
	s->row_words = width / 16;
	s->width_mask = width - 1;
	s->dk_mask = dk_bits - 1;
	s->table = table_alloc(table_bytes(s));
	s->dk = table_alloc(dk_bytes(s));
	if (!s->table || !s->dk) {
		sketch_free(s);
		return NULL;
	}
	return s;
}

/* Copy n words of each of rows rows (old_words apart) into rows
 * new_words apart, repeated new_words / old_words times. */
static void replicate(uint64_t *to, const uint64_t *from, size_t rows, size_t old_words,
		      size_t new_words)
{
	for (size_t r = 0; r < rows; r++)
		for (size_t k = 0; k < new_words; k += old_words)
			memcpy(&to[r * new_words + k], &from[r * old_words], old_words * sizeof(*to));
}

bool sketch_grow(struct sketch *s, size_t capacity)
{
	size_t width, dk_bits, row_words, dk_words, old_dk_words = (s->dk_mask + 1) / 64;
	uint64_t window = (uint64_t)capacity * SKETCH_WINDOW_MULT, *table = NULL, *dk = NULL;

	if (capacity == 0 || capacity > EVICT_MAX_CAPACITY)
		return false;
	width = next_pow2(8 * capacity < ((size_t)1 << 32) ? 8 * capacity : (size_t)1 << 32, 16);
	dk_bits = next_pow2(4 * (size_t)window, 64);
	row_words = width / 16;
	dk_words = dk_bits / 64;
	if (row_words > s->row_words &&
	    !(table = table_alloc(SKETCH_ROWS * row_words * sizeof(*table))))
		return false;
	if (dk_words > old_dk_words && !(dk = table_alloc(dk_words * sizeof(*dk)))) {
		table_free(table, SKETCH_ROWS * row_words * sizeof(*table));
		return false;
	}
	/* every size is a power of two and an index is a hash's low bits
	 * (the doorkeeper's too: (a + k b) mod 2^n): at twice the size a
	 * key's index is the old one or the old one + the old size */
	if (table) {
		replicate(table, s->table, SKETCH_ROWS, s->row_words, row_words);
		table_free(s->table, table_bytes(s));
		s->table = table;
		s->row_words = row_words;
		s->width_mask = width - 1;
	}
	if (dk) {
		replicate(dk, s->dk, 1, old_dk_words, dk_words);
		table_free(s->dk, dk_bytes(s));
		s->dk = dk;
		s->dk_mask = dk_bits - 1;
	}
	if (window > s->window)
		s->window = window;
	return true;
}

void sketch_free(struct sketch *s)
{
	if (!s)
		return;
	table_free(s->dk, dk_bytes(s));
	table_free(s->table, table_bytes(s));
	free(s);
}

/* The four counters of hash h, one per row: four independent 32-bit
 * slices of two 64-bit mixes.  Not double hashing (a + r * b): over a
 * power-of-two width a key pair with equal a and b collides in every row
 * at once, which measured 2-3x more cold keys looking hot. */
static void cm_indexes(const struct sketch *s, uint64_t h, uint64_t idx[SKETCH_ROWS])
{
	uint64_t h2 = mix64(h ^ 0x9e3779b97f4a7c15ull);

	idx[0] = (uint32_t)h & s->width_mask;
	idx[1] = (h >> 32) & s->width_mask;
	idx[2] = (uint32_t)h2 & s->width_mask;
	idx[3] = (h2 >> 32) & s->width_mask;
}

static unsigned cm_get(const struct sketch *s, unsigned r, uint64_t i)
{
	return (s->table[r * s->row_words + (i >> 4)] >> ((i & 15) * 4)) & 0xf;
}

static void cm_set(struct sketch *s, unsigned r, uint64_t i, unsigned v)
{
	uint64_t *w = &s->table[r * s->row_words + (i >> 4)];
	unsigned shift = (i & 15) * 4;

	*w = (*w & ~(0xfull << shift)) | ((uint64_t)v << shift);
}

static unsigned cm_min(const struct sketch *s, const uint64_t idx[SKETCH_ROWS])
{
	unsigned m = SKETCH_COUNTER_MAX;

	for (unsigned r = 0; r < SKETCH_ROWS; r++) {
		unsigned v = cm_get(s, r, idx[r]);

		if (v < m)
			m = v;
	}
	return m;
}

static uint64_t dk_bit(const struct sketch *s, uint64_t g, unsigned k)
{
	uint64_t a = (uint32_t)g, b = (g >> 32) | 1;

	return (a + k * b) & s->dk_mask;
}

static bool dk_contains(const struct sketch *s, uint64_t h)
{
	uint64_t g = mix64(h ^ 0x5bd1e9955bd1e995ull);

	for (unsigned k = 0; k < DK_HASHES; k++) {
		uint64_t bit = dk_bit(s, g, k);

		if (!(s->dk[bit >> 6] & (1ull << (bit & 63))))
			return false;
	}
	return true;
}

static void dk_insert(struct sketch *s, uint64_t h)
{
	uint64_t g = mix64(h ^ 0x5bd1e9955bd1e995ull);

	for (unsigned k = 0; k < DK_HASHES; k++) {
		uint64_t bit = dk_bit(s, g, k);

		s->dk[bit >> 6] |= 1ull << (bit & 63);
	}
}

static void sketch_halve(struct sketch *s)
{
	for (size_t i = 0; i < SKETCH_ROWS * s->row_words; i++)
		s->table[i] = (s->table[i] >> 1) & 0x7777777777777777ull;
	memset(s->dk, 0, (s->dk_mask + 1) / 8);
	s->adds = 0;
	s->resets++;
}

void sketch_add(struct sketch *s, uint64_t key)
{
	uint64_t h = mix64(key), idx[SKETCH_ROWS];

	if (!dk_contains(s, h)) {
		dk_insert(s, h);
	} else {
		unsigned m;

		cm_indexes(s, h, idx);
		m = cm_min(s, idx);
		if (m < SKETCH_COUNTER_MAX) {
			for (unsigned r = 0; r < SKETCH_ROWS; r++)
				if (cm_get(s, r, idx[r]) == m)
					cm_set(s, r, idx[r], m + 1);
		}
	}
	if (++s->adds >= s->window)
		sketch_halve(s);
}

unsigned sketch_estimate(const struct sketch *s, uint64_t key)
{
	uint64_t h = mix64(key), idx[SKETCH_ROWS];

	cm_indexes(s, h, idx);
	return cm_min(s, idx) + (dk_contains(s, h) ? 1 : 0);
}

void sketch_restore(struct sketch *s, uint64_t key, unsigned est)
{
	uint64_t h = mix64(key), idx[SKETCH_ROWS];
	unsigned target;

	if (est == 0)
		return;
	dk_insert(s, h);
	cm_indexes(s, h, idx);
	target = est - 1 < SKETCH_COUNTER_MAX ? est - 1 : SKETCH_COUNTER_MAX;
	for (unsigned r = 0; r < SKETCH_ROWS; r++)
		if (cm_get(s, r, idx[r]) < target)
			cm_set(s, r, idx[r], target);
}

uint64_t sketch_sample_size(const struct sketch *s)
{
	return s->window;
}

uint64_t sketch_reset_count(const struct sketch *s)
{
	return s->resets;
}
