/* fuzz_cache_index.c - fuzz target of the SSD cache index's decoders:
 * chunk record values and chunk record keys, as a damaged or hostile
 * index hands them back.  The first byte picks which.
 * Property: a value decodes only when it is exactly what the encoder
 * writes for the decoded record (re-encoding gives a value that decodes
 * to the same record, with block counts that match the length); a key
 * parses only when re-encoding its id gives the key back byte for byte.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiers/cache_index_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rec(const uint8_t *v, size_t n)
{
	static struct cache_index_rec a, b;
	static unsigned char enc[CACHE_INDEX_REC_MAX];
	size_t len;

	if (!cache_index_rec_decode(v, n, &a))
		return;
	assert(a.block_size && (a.block_size & (a.block_size - 1)) == 0);
	assert(a.nblocks <= CACHE_INDEX_BLOCKS_MAX);
	assert(a.nblocks == (a.data_len + a.block_size - 1) / a.block_size);
	len = cache_index_rec_encode(&a, enc);
	assert(len == n);
	assert(cache_index_rec_decode(enc, len, &b));
	assert(a.data_len == b.data_len && a.block_size == b.block_size &&
	       a.nblocks == b.nblocks && a.hits == b.hits && a.last_access == b.last_access &&
	       a.policy_stat == b.policy_stat);
	assert(memcmp(a.sums, b.sums, 4 * (size_t)a.nblocks) == 0);
}

static void check_key(const uint8_t *k, size_t n)
{
	struct chunk_id id;
	char *buf;
	size_t len;

	if (!cache_index_chunk_key_parse(k, n, &id))
		return;
	len = cache_index_chunk_key(&id, NULL, 0);
	assert(len == n);
	buf = malloc(len);
	assert(buf);
	assert(cache_index_chunk_key(&id, buf, len) == len);
	assert(memcmp(buf, k, n) == 0);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		check_key(data + 1, size - 1);
	else
		check_rec(data + 1, size - 1);
	return 0;
}
