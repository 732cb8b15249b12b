/* rand.h - the project's one small deterministic generator and mixer.
 *
 * xorshift64* (Vigna) for streams that must replay identically (the LFU
 * coin, trace generators, retry jitter), and the murmur3 64-bit finaliser
 * for spreading keys that may be sequential over hash tables.  Neither is
 * for secrets.  Header-only: each is a few instructions on hot paths.
 */
#ifndef TIERFS_RAND_H
#define TIERFS_RAND_H

#include <stdint.h>

/* Next value of the stream whose state is *s (never 0). */
static inline uint64_t xorshift64s_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A state from any seed (splitmix64): small seeds 0, 1, 2... still give
 * unrelated streams, and the state is never 0. */
static inline uint64_t xorshift64s_seed(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 0x9e3779b97f4a7c15ull;
}

/* murmur3's fmix64: every input bit affects every output bit. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
