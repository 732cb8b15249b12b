/* cache_index.h - the SSD tier's persistent index: a RocksDB database in
 * DIR/index holding one record per cached chunk, small metadata blobs and
 * the cache's identity.  The only code that includes <rocksdb/c.h>; no
 * RocksDB type, error string or allocation crosses this header.
 *
 * Key space (one byte of prefix per kind, so kinds never interleave):
 *   "c" key '\0' etag '\0' be64(index)   chunk record (struct cache_index_rec)
 *   "m" name                             metadata blob (opaque bytes)
 *   "iformat" / "iowner" / "ichunk"      identity singletons
 * Because neither key nor etag holds a NUL, "c" key '\0' is a prefix of
 * exactly the records of that object: "a" never sees "ab" or "a/b".  The
 * index is big-endian so one object's chunks sort in index order.
 *
 * Durability: the write-ahead log is on and writes are not synced: a
 * killed process loses nothing, a power loss may lose the last writes
 * (the chunk files' checksums catch what that leaves inconsistent).
 *
 * Errors: every RocksDB failure becomes TFS_E_IO (TFS_E_NOSPC when the
 * device is full), is logged here (rate-limited) and never aborts.
 *
 * All functions are thread-safe (RocksDB serialises writers itself);
 * a batch belongs to one thread at a time.
 */
#ifndef TIERFS_CACHE_INDEX_H
#define TIERFS_CACHE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/chunk_id.h"

struct cache_index;
struct cache_index_batch;

/* A chunk's bytes are checked in blocks of 2^shift bytes, 4 KiB to 256
 * MiB; a chunk has at most CACHE_INDEX_BLOCKS_MAX of them. */
#define CACHE_INDEX_BLOCK_SHIFT_MIN 12
#define CACHE_INDEX_BLOCK_SHIFT_MAX 28
#define CACHE_INDEX_BLOCKS_MAX 4096

/* What the index knows about one stored chunk (about 16 KiB: keep it off
 * small stacks in loops). */
struct cache_index_rec {
	uint64_t data_len;     /* chunk bytes */
	uint32_t block_size;   /* bytes one checksum covers: a power of two */
	uint32_t nblocks;      /* ceil(data_len / block_size) */
	uint32_t sums[CACHE_INDEX_BLOCKS_MAX];   /* low 32 bits of each block's XXH3-64 */
	uint32_t hits;         /* reads served, saturating */
	uint64_t last_access;  /* seconds since the epoch */
	uint32_t policy_stat;  /* the SSD tier's eviction policy's statistics (opaque) */
};

/* Open (creating if missing) the index in cache_dir/index; cache_dir
 * itself must exist.  TFS_OK and *out; else *out = NULL, a message for the
 * user in err, and TFS_E_ACCESS when another process holds the index
 * ("cache directory DIR is in use by another tierfs"), TFS_E_NOSPC, or
 * TFS_E_IO (unreadable or corrupt database). */
int cache_index_open(const char *cache_dir, struct cache_index **out, char *err, size_t errlen);

/* Close and free.  NULL is a no-op. */
void cache_index_close(struct cache_index *ix);

/* Delete the database in cache_dir/index (it must not be open): used to
 * start over when an index cannot even be opened and the user asked for a
 * wipe.  TFS_OK or TFS_E_IO with a message in err. */
int cache_index_destroy(const char *cache_dir, char *err, size_t errlen);

/* Delete every record of every kind (chunks, blobs, identity). */
int cache_index_clear(struct cache_index *ix);

/* The index key of a chunk id, written to buf (not NUL-terminated).
 * Returns its length; when that exceeds cap, nothing useful is written and
 * the caller needs a bigger buffer.  Exposed so the SSD tier names chunk
 * files by a hash of exactly these bytes. */
size_t cache_index_chunk_key(const struct chunk_id *id, char *buf, size_t cap);

/* Chunk records.  get: TFS_OK and *rec, TFS_MISS, or an error (a record
 * that does not decode is a miss).  put/del: TFS_OK or an error. */
int cache_index_chunk_get(struct cache_index *ix, const struct chunk_id *id,
			  struct cache_index_rec *rec);
int cache_index_chunk_put(struct cache_index *ix, const struct chunk_id *id,
			  const struct cache_index_rec *rec);
int cache_index_chunk_del(struct cache_index *ix, const struct chunk_id *id);

/* Called per chunk record by the scans.  id's strings and rec point into
 * the iterator: valid only during the call.  Return 0 to go on; anything
 * else stops the scan, which then returns that value. */
typedef int (*cache_index_chunk_fn)(void *ctx, const struct chunk_id *id,
				    const struct cache_index_rec *rec);

/* Visit every chunk record (cache_index_chunk_scan) or every record of
 * object key, all cache ids and indexes (cache_index_chunk_scan_key), in
 * key order.  Records that do not decode are deleted as they are met (no
 * reader could use them) and not passed on.  The callback may put and
 * delete records: the scan reads a snapshot taken when it starts.
 * Returns TFS_OK, the callback's non-zero value, or an error. */
int cache_index_chunk_scan(struct cache_index *ix, cache_index_chunk_fn fn, void *ctx);
int cache_index_chunk_scan_key(struct cache_index *ix, const char *key, cache_index_chunk_fn fn,
			       void *ctx);

/* Metadata blobs: name any string, value any bytes (the caller bounds
 * the size).  get: TFS_OK with *value (malloc'd, caller frees; never NULL,
 * even for 0 bytes) and *len, TFS_MISS, or an error. */
int cache_index_meta_put(struct cache_index *ix, const char *name, const void *value, size_t len);
int cache_index_meta_get(struct cache_index *ix, const char *name, void **value, size_t *len);
int cache_index_meta_del(struct cache_index *ix, const char *name);

/* The cache's identity, written in one atomic batch.  get: TFS_OK with
 * *format, *owner (malloc'd, caller frees) and *chunk_size; TFS_MISS when
 * the index holds none (a new or wiped cache), or an error (a partial or
 * undecodable identity is TFS_E_IO: the cache cannot be trusted). */
int cache_index_identity_put(struct cache_index *ix, uint32_t format, const char *owner,
			     uint64_t chunk_size);
int cache_index_identity_get(struct cache_index *ix, uint32_t *format, char **owner,
			     uint64_t *chunk_size);

/* A write batch: many chunk puts and deletes applied atomically by one
 * commit.  new: NULL when out of memory.  The batch may be committed more
 * than once (it is emptied by a successful commit) and is freed by free. */
struct cache_index_batch *cache_index_batch_new(void);
void cache_index_batch_chunk_put(struct cache_index_batch *b, const struct chunk_id *id,
				 const struct cache_index_rec *rec);
void cache_index_batch_chunk_del(struct cache_index_batch *b, const struct chunk_id *id);
/* Operations queued and not yet committed. */
size_t cache_index_batch_count(const struct cache_index_batch *b);
/* Apply the batch atomically.  It is empty afterwards, committed or not. */
int cache_index_batch_commit(struct cache_index *ix, struct cache_index_batch *b);
void cache_index_batch_free(struct cache_index_batch *b);

#endif
