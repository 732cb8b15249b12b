/* cache_index_internal.h - the index's record decoders, for its unit
 * tests and fuzz target only: what a damaged or hostile index value or
 * key decodes to (the daemon reaches them through cache_index.h).
 */
#ifndef TIERFS_CACHE_INDEX_INTERNAL_H
#define TIERFS_CACHE_INDEX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tiers/cache_index.h"

/* Decode a chunk record value of n bytes into rec: false (rec partly
 * written) when it is not exactly what cache_index_chunk_put writes. */
bool cache_index_rec_decode(const void *val, size_t n, struct cache_index_rec *rec);

/* Encode rec as cache_index_chunk_put does into v (at least
 * CACHE_INDEX_REC_MAX bytes); the value's length. */
#define CACHE_INDEX_REC_MAX (32 + 4 * CACHE_INDEX_BLOCKS_MAX)
size_t cache_index_rec_encode(const struct cache_index_rec *rec, void *v);

/* Parse a chunk record's key (n bytes) into id, pointing into k: false
 * when malformed. */
bool cache_index_chunk_key_parse(const void *k, size_t n, struct chunk_id *id);

#endif
