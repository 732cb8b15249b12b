/* shape.h - how the daemon's tiers shape their eviction policies.
 *
 * The RAM and SSD tiers (src/tiers) size and weigh their policies by
 * these rules, and the simulator's model of the two tiers (src/sim) by
 * the very same, so that a trace replayed with a mount's sizes meets the
 * policies the mount had.
 */
#ifndef TIERFS_EVICT_SHAPE_H
#define TIERFS_EVICT_SHAPE_H

#include <stddef.h>
#include <stdint.h>

/* RAM tier: a policy slot per this many bytes of its capacity at most
 * (per chunk when chunks are smaller): a 100 KB image takes about 100 KB,
 * not a slot sized for a chunk. */
#define EVICT_RAM_SLOT_GRAIN (64u << 10)
/* RAM tier: chunks read at once that W-TinyLFU's window keeps. */
#define EVICT_RAM_STREAMS 8
/* RAM tier: buffers are sized in multiples of this (O_DIRECT reads). */
#define EVICT_RAM_BUF_ALIGN 4096u

/* SSD tier: the policy weighs an entry by its blocks of this many bytes
 * on disk, and the tier by the blocks its bound holds. */
#define EVICT_SSD_WEIGHT_UNIT 4096u
/* SSD tier: a policy key per this many bytes of the bound (per chunk
 * when chunks are smaller), within these bounds, to begin with; while the
 * tier's keys are smaller than that (files of a few KB), the key capacity
 * doubles as it fills (evict_ssd_keys_next), so that the tier holds its
 * bytes, not a key per 64 KiB of them. */
#define EVICT_SSD_KEY_GRAIN (64u << 10)
#define EVICT_SSD_KEYS_MIN 16
#define EVICT_SSD_KEYS_MAX (4u << 20)

/* The RAM tier's policy slots for capacity bytes of chunk_size chunks. */
static inline size_t evict_ram_slots(uint64_t capacity, uint64_t chunk_size)
{
	return (size_t)(capacity / (chunk_size < EVICT_RAM_SLOT_GRAIN ? chunk_size
								      : EVICT_RAM_SLOT_GRAIN));
}

/* The RAM buffer a chunk of len bytes takes (chunk_size when unknown, 0). */
static inline uint64_t evict_ram_buf(uint64_t len, uint64_t chunk_size)
{
	uint64_t n;

	if (len == 0 || len >= chunk_size)
		return chunk_size;
	n = (len + EVICT_RAM_BUF_ALIGN - 1) / EVICT_RAM_BUF_ALIGN * EVICT_RAM_BUF_ALIGN;
	return n < chunk_size ? n : chunk_size;
}

/* The bytes a chunk of len bytes takes on the SSD tier's disk. */
static inline uint64_t evict_ssd_bytes(uint64_t len)
{
	return (len + EVICT_SSD_WEIGHT_UNIT - 1) / EVICT_SSD_WEIGHT_UNIT * EVICT_SSD_WEIGHT_UNIT;
}

/* The SSD tier's policy key capacity for a bound of bytes. */
static inline uint64_t evict_ssd_keys(uint64_t bytes, uint64_t chunk_size)
{
	uint64_t grain = evict_ssd_bytes(chunk_size < EVICT_SSD_KEY_GRAIN ? chunk_size
									  : EVICT_SSD_KEY_GRAIN);
	uint64_t keys = bytes / grain;

	if (keys > EVICT_SSD_KEYS_MAX)
		keys = EVICT_SSD_KEYS_MAX;
	return keys < EVICT_SSD_KEYS_MIN ? EVICT_SSD_KEYS_MIN : keys;
}

/* The next key capacity of an SSD tier of a bound of bytes whose keys are
 * all taken while its bytes are not: twice cur, at most a key per weight
 * unit of the bound and EVICT_SSD_KEYS_MAX; cur when it cannot grow. */
static inline uint64_t evict_ssd_keys_next(uint64_t cur, uint64_t bytes)
{
	uint64_t max = bytes / EVICT_SSD_WEIGHT_UNIT;

	if (max > EVICT_SSD_KEYS_MAX)
		max = EVICT_SSD_KEYS_MAX;
	if (max <= cur)
		return cur;
	return 2 * cur < max ? 2 * cur : max;
}

#endif
