/* cache_index.c - the RocksDB wrapper behind the SSD tier (see cache_index.h).
 *
 * Invariants:
 *  - no RocksDB pointer, error string or allocation leaves this file: every
 *    errptr is turned into a tfs_err here and freed, every value RocksDB
 *    hands back is copied into our own memory before it is returned;
 *  - a chunk record value starts with REC_VERSION and is exactly REC_FIXED
 *    + 4 bytes per block long, the blocks those the data length needs; a
 *    value of another size or version is never decoded (it is deleted by
 *    the scans and is a miss for get).
 */
#include "tiers/cache_index.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rocksdb/c.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "tiers/cache_index_internal.h"

/* Record value layout, little-endian:
 *   0  u8   REC_VERSION
 *   1  u8   log2 of the block size (CACHE_INDEX_BLOCK_SHIFT_MIN..MAX)
 *   2  u16  zero
 *   4  u32  blocks: ceil(data length / block size)
 *   8  u64  data length
 *  16  u32  hits           20 u32 eviction policy statistics
 *  24  u64  last access (s)
 *  32  u32  checksum of each block (the low half of its XXH3-64)
 * Variable-size, but exactly REC_FIXED + 4 * blocks: a value of any other
 * size is recognisably not ours.  (Versions 1 and 2, the chunk-file format,
 * are not decoded: their cache is refused or wiped by its format number.) */
#define REC_VERSION 3
#define REC_FIXED 32
#define REC_MAX (REC_FIXED + 4 * CACHE_INDEX_BLOCKS_MAX)

/* Keys up to this size are built on the stack; longer ones (object keys
 * may be up to 1024 bytes in S3, more elsewhere) are malloc'd. */
#define KEYBUF_STACK 512

/* Errors are logged at most once per this many seconds per index: a
 * failing disk fails every write, and one line says as much as a
 * thousand. */
#define ERR_LOG_INTERVAL_S 10

struct cache_index {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *bbto;
	rocksdb_cache_t *block_cache;
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;
	_Atomic int64_t last_err_log;   /* monotonic seconds of the last logged error */
	atomic_uint_fast64_t errs_suppressed;
};

struct cache_index_batch {
	rocksdb_writebatch_t *wb;
	bool nomem;             /* a key could not be built: commit fails */
};

static const char ID_FORMAT[] = "iformat";
static const char ID_OWNER[] = "iowner";
static const char ID_CHUNK[] = "ichunk";

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* The kind of failure a RocksDB status message describes. */
static int err_kind(const char *msg)
{
	if (msg && (strstr(msg, "No space left") || strstr(msg, "NoSpace")))
		return TFS_E_NOSPC;
	return TFS_E_IO;
}

/* Turn a RocksDB error into a tfs_err, log it (rate-limited), free it. */
static int ix_fail(struct cache_index *ix, const char *what, char *rerr)
{
	int rc = err_kind(rerr);
	int64_t now = (clock_coarse_ms() / 1000), last = atomic_load(&ix->last_err_log);

	if (now - last >= ERR_LOG_INTERVAL_S &&
	    atomic_compare_exchange_strong(&ix->last_err_log, &last, now)) {
		uint64_t n = atomic_exchange(&ix->errs_suppressed, 0);
		log_warn("cache index: %s failed: %s (%llu similar errors not shown)", what,
			 rerr ? rerr : "?", (unsigned long long)n);
	} else {
		atomic_fetch_add(&ix->errs_suppressed, 1);
	}
	rocksdb_free(rerr);
	return rc;
}

size_t cache_index_chunk_key(const struct chunk_id *id, char *buf, size_t cap)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);
	size_t n = 1 + kl + 1 + el + 1 + 8;

	if (n > cap)
		return n;
	buf[0] = 'c';
	memcpy(buf + 1, id->key, kl);
	buf[1 + kl] = '\0';
	memcpy(buf + 2 + kl, id->etag, el);
	buf[2 + kl + el] = '\0';
	for (int i = 0; i < 8; i++)   /* big-endian: chunks sort by index */
		buf[3 + kl + el + i] = (char)(id->index >> (8 * (7 - i)));
	return n;
}

/* A chunk key in *buf: the caller's stack buffer if it fits, else a heap
 * copy the caller frees when *buf != stack.  0 when out of memory. */
static size_t chunk_key_build(const struct chunk_id *id, char *stack, char **buf)
{
	size_t n = cache_index_chunk_key(id, stack, KEYBUF_STACK);

	*buf = stack;
	if (n <= KEYBUF_STACK)
		return n;
	*buf = malloc(n);
	if (!*buf)
		return 0;
	cache_index_chunk_key(id, *buf, n);
	return n;
}

static void chunk_key_done(char *stack, char *buf)
{
	if (buf != stack)
		free(buf);
}

/* Parse a chunk key into id (pointing into key), false when malformed. */
static bool chunk_key_parse(const char *k, size_t n, struct chunk_id *id)
{
	const char *key, *etag, *z1, *z2;

	if (n < 1 + 1 + 1 + 8 || k[0] != 'c')
		return false;
	key = k + 1;
	z1 = memchr(key, '\0', n - 1);
	if (!z1)
		return false;
	etag = z1 + 1;
	z2 = memchr(etag, '\0', (size_t)(k + n - etag));
	if (!z2 || (size_t)(k + n - (z2 + 1)) != 8)
		return false;
	id->key = key;
	id->etag = etag;
	id->index = 0;
	for (int i = 0; i < 8; i++)
		id->index = (id->index << 8) | (unsigned char)z2[1 + i];
	return true;
}

static unsigned block_shift_of(uint32_t block_size)
{
	unsigned shift = 0;

	while (shift < 32 && (1u << shift) < block_size)
		shift++;
	return shift;
}

/* Encode rec into v (REC_MAX bytes); returns the value's length. */
static size_t rec_encode(const struct cache_index_rec *rec, unsigned char *v)
{
	memset(v, 0, REC_FIXED);
	v[0] = REC_VERSION;
	v[1] = (unsigned char)block_shift_of(rec->block_size);
	put_u32(v + 4, rec->nblocks);
	put_u64(v + 8, rec->data_len);
	put_u32(v + 16, rec->hits);
	put_u32(v + 20, rec->policy_stat);
	put_u64(v + 24, rec->last_access);
	for (uint32_t i = 0; i < rec->nblocks; i++)
		put_u32(v + REC_FIXED + 4 * i, rec->sums[i]);
	return REC_FIXED + 4 * (size_t)rec->nblocks;
}

static bool rec_decode(const char *val, size_t n, struct cache_index_rec *rec)
{
	const unsigned char *v = (const unsigned char *)val;
	uint64_t bs, need;

	if (n < REC_FIXED || v[0] != REC_VERSION || v[1] < CACHE_INDEX_BLOCK_SHIFT_MIN ||
	    v[1] > CACHE_INDEX_BLOCK_SHIFT_MAX)
		return false;
	bs = 1ull << v[1];
	rec->block_size = (uint32_t)bs;
	rec->nblocks = get_u32(v + 4);
	rec->data_len = get_u64(v + 8);
	need = (rec->data_len + bs - 1) / bs;
	if (rec->nblocks != need || rec->nblocks > CACHE_INDEX_BLOCKS_MAX ||
	    n != REC_FIXED + 4 * (size_t)rec->nblocks)
		return false;
	rec->hits = get_u32(v + 16);
	rec->policy_stat = get_u32(v + 20);
	rec->last_access = get_u64(v + 24);
	for (uint32_t i = 0; i < rec->nblocks; i++)
		rec->sums[i] = get_u32(v + REC_FIXED + 4 * i);
	return true;
}

static void opts_free(struct cache_index *ix)
{
	if (ix->wopts)
		rocksdb_writeoptions_destroy(ix->wopts);
	if (ix->ropts)
		rocksdb_readoptions_destroy(ix->ropts);
	if (ix->opts)
		rocksdb_options_destroy(ix->opts);
	if (ix->bbto)
		rocksdb_block_based_options_destroy(ix->bbto);
	if (ix->block_cache)
		rocksdb_cache_destroy(ix->block_cache);
}

/* Options for a small, embedded index: a few MiB of memory whatever the
 * cache size (records are ~150 bytes; a million of them is 150 MB of
 * table data, read at open and then rarely). */
static int opts_init(struct cache_index *ix)
{
	ix->opts = rocksdb_options_create();
	ix->bbto = rocksdb_block_based_options_create();
	ix->block_cache = rocksdb_cache_create_lru(8u << 20);
	ix->ropts = rocksdb_readoptions_create();
	ix->wopts = rocksdb_writeoptions_create();
	if (!ix->opts || !ix->bbto || !ix->block_cache || !ix->ropts || !ix->wopts)
		return TFS_E_NOMEM;
	rocksdb_block_based_options_set_block_cache(ix->bbto, ix->block_cache);
	rocksdb_options_set_block_based_table_factory(ix->opts, ix->bbto);
	rocksdb_options_set_create_if_missing(ix->opts, 1);
	rocksdb_options_set_write_buffer_size(ix->opts, 4u << 20);
	rocksdb_options_set_max_write_buffer_number(ix->opts, 2);
	rocksdb_options_set_max_open_files(ix->opts, 64);
	rocksdb_options_set_keep_log_file_num(ix->opts, 2);
	rocksdb_options_set_max_log_file_size(ix->opts, 1u << 20);
	rocksdb_options_set_info_log_level(ix->opts, 2 /* WARN: the LOG file stays small */);
	rocksdb_options_set_max_background_jobs(ix->opts, 2);
	/* The default 4 MiB MANIFEST preallocation is real memory on tmpfs
	 * and real blocks on a nearly full disk; the manifest stays tiny. */
	rocksdb_options_set_manifest_preallocation_size(ix->opts, 64u << 10);
	rocksdb_options_set_max_total_wal_size(ix->opts, 16u << 20);
	/* WAL on, no sync: a killed process loses nothing (the WAL is in
	 * the page cache), a power loss is caught by the chunk checksums. */
	rocksdb_writeoptions_set_sync(ix->wopts, 0);
	return TFS_OK;
}

int cache_index_open(const char *cache_dir, struct cache_index **out, char *err, size_t errlen)
{
	struct cache_index *ix;
	char *path = NULL, *rerr = NULL;
	int rc;

	*out = NULL;
	ix = calloc(1, sizeof(*ix));
	if (!ix || asprintf(&path, "%s/index", cache_dir) < 0) {
		path = NULL;
		snprintf(err, errlen, "out of memory opening the cache index");
		rc = TFS_E_NOMEM;
		goto fail;
	}
	atomic_init(&ix->last_err_log, INT64_MIN / 2);
	atomic_init(&ix->errs_suppressed, 0);
	rc = opts_init(ix);
	if (rc != TFS_OK) {
		snprintf(err, errlen, "out of memory opening the cache index");
		goto fail;
	}
	ix->db = rocksdb_open(ix->opts, path, &rerr);
	if (rerr) {
		ix->db = NULL;
		/* RocksDB says "While lock file: DIR/index/LOCK: Resource
		 * temporarily unavailable" when another process holds it. */
		if (strstr(rerr, "lock file") || strstr(rerr, "LOCK")) {
			snprintf(err, errlen, "cache directory %s is in use by another tierfs",
				 cache_dir);
			rc = TFS_E_ACCESS;
		} else {
			rc = err_kind(rerr);
			snprintf(err, errlen, "cannot open the cache index %s: %s", path, rerr);
		}
		rocksdb_free(rerr);
		goto fail;
	}
	free(path);
	*out = ix;
	return TFS_OK;
fail:
	free(path);
	if (ix)
		opts_free(ix);
	free(ix);
	return rc;
}

void cache_index_close(struct cache_index *ix)
{
	if (!ix)
		return;
	if (ix->db)
		rocksdb_close(ix->db);
	opts_free(ix);
	free(ix);
}

int cache_index_destroy(const char *cache_dir, char *err, size_t errlen)
{
	rocksdb_options_t *opts = rocksdb_options_create();
	char *path = NULL, *rerr = NULL;
	int rc = TFS_OK;

	if (!opts || asprintf(&path, "%s/index", cache_dir) < 0) {
		path = NULL;
		snprintf(err, errlen, "out of memory");
		rc = TFS_E_NOMEM;
		goto out;
	}
	rocksdb_destroy_db(opts, path, &rerr);
	if (rerr) {
		snprintf(err, errlen, "cannot delete the cache index %s: %s", path, rerr);
		rc = err_kind(rerr);
		rocksdb_free(rerr);
	}
out:
	free(path);
	if (opts)
		rocksdb_options_destroy(opts);
	return rc;
}

int cache_index_clear(struct cache_index *ix)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	char *rerr = NULL;
	/* Every key we write starts with 'c', 'i' or 'm': [0x00, 0xff) holds all. */
	static const char lo[1] = { 0x00 }, hi[1] = { (char)0xff };

	if (!wb)
		return TFS_E_NOMEM;
	rocksdb_writebatch_delete_range(wb, lo, 1, hi, 1);
	rocksdb_write(ix->db, ix->wopts, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr)
		return ix_fail(ix, "clear", rerr);
	/* Reclaim the space now rather than at some later compaction. */
	rocksdb_compact_range(ix->db, NULL, 0, NULL, 0);
	return TFS_OK;
}

int cache_index_chunk_get(struct cache_index *ix, const struct chunk_id *id,
			  struct cache_index_rec *rec)
{
	char stack[KEYBUF_STACK], *k, *rerr = NULL;
	size_t kn = chunk_key_build(id, stack, &k), vn = 0;
	rocksdb_pinnableslice_t *ps;
	const char *v;
	int rc;

	if (kn == 0)
		return TFS_E_NOMEM;
	ps = rocksdb_get_pinned(ix->db, ix->ropts, k, kn, &rerr);
	chunk_key_done(stack, k);
	if (rerr)
		return ix_fail(ix, "chunk get", rerr);
	if (!ps)
		return TFS_MISS;
	v = rocksdb_pinnableslice_value(ps, &vn);
	rc = v && rec_decode(v, vn, rec) ? TFS_OK : TFS_MISS;
	rocksdb_pinnableslice_destroy(ps);
	return rc;
}

int cache_index_chunk_put(struct cache_index *ix, const struct chunk_id *id,
			  const struct cache_index_rec *rec)
{
	char stack[KEYBUF_STACK], *k, *rerr = NULL;
	size_t kn = chunk_key_build(id, stack, &k), vn;
	unsigned char v[REC_MAX];

	if (kn == 0)
		return TFS_E_NOMEM;
	vn = rec_encode(rec, v);
	rocksdb_put(ix->db, ix->wopts, k, kn, (const char *)v, vn, &rerr);
	chunk_key_done(stack, k);
	return rerr ? ix_fail(ix, "chunk put", rerr) : TFS_OK;
}

int cache_index_chunk_del(struct cache_index *ix, const struct chunk_id *id)
{
	char stack[KEYBUF_STACK], *k, *rerr = NULL;
	size_t kn = chunk_key_build(id, stack, &k);

	if (kn == 0)
		return TFS_E_NOMEM;
	rocksdb_delete(ix->db, ix->wopts, k, kn, &rerr);
	chunk_key_done(stack, k);
	return rerr ? ix_fail(ix, "chunk delete", rerr) : TFS_OK;
}

/* Visit the chunk records whose key starts with prefix (n bytes). */
static int scan_prefix(struct cache_index *ix, const char *prefix, size_t n,
		       cache_index_chunk_fn fn, void *ctx)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(ix->db, ix->ropts);
	char *rerr = NULL;
	int rc = TFS_OK;
	size_t bad = 0;

	if (!it)
		return TFS_E_NOMEM;
	for (rocksdb_iter_seek(it, prefix, n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *k = rocksdb_iter_key(it, &kn), *v = rocksdb_iter_value(it, &vn);
		struct chunk_id id;
		struct cache_index_rec rec;

		if (kn < n || memcmp(k, prefix, n) != 0)
			break;
		if (!chunk_key_parse(k, kn, &id) || !rec_decode(v, vn, &rec)) {
			/* Unusable by any reader: delete rather than carry it. */
			rocksdb_delete(ix->db, ix->wopts, k, kn, &rerr);
			if (rerr) {
				rocksdb_free(rerr);
				rerr = NULL;
			}
			bad++;
			continue;
		}
		rc = fn(ctx, &id, &rec);
		if (rc != 0)
			break;
	}
	if (rc == TFS_OK) {
		rocksdb_iter_get_error(it, &rerr);
		if (rerr)
			rc = ix_fail(ix, "scan", rerr);
	}
	rocksdb_iter_destroy(it);
	if (bad)
		log_warn("cache index: deleted %zu undecodable chunk records", bad);
	return rc;
}

int cache_index_chunk_scan(struct cache_index *ix, cache_index_chunk_fn fn, void *ctx)
{
	return scan_prefix(ix, "c", 1, fn, ctx);
}

int cache_index_chunk_scan_key(struct cache_index *ix, const char *key, cache_index_chunk_fn fn,
			       void *ctx)
{
	size_t kl = strlen(key);
	char *p = malloc(kl + 2);
	int rc;

	if (!p)
		return TFS_E_NOMEM;
	p[0] = 'c';
	memcpy(p + 1, key, kl);
	p[1 + kl] = '\0';   /* the NUL ends the key: "a" does not match "ab" */
	rc = scan_prefix(ix, p, kl + 2, fn, ctx);
	free(p);
	return rc;
}

static char *meta_key(const char *name, size_t *n)
{
	size_t nl = strlen(name);
	char *k = malloc(nl + 1);

	if (!k)
		return NULL;
	k[0] = 'm';
	memcpy(k + 1, name, nl);
	*n = nl + 1;
	return k;
}

int cache_index_meta_put(struct cache_index *ix, const char *name, const void *value, size_t len)
{
	size_t kn;
	char *k = meta_key(name, &kn), *rerr = NULL;

	if (!k)
		return TFS_E_NOMEM;
	rocksdb_put(ix->db, ix->wopts, k, kn, value ? value : "", len, &rerr);
	free(k);
	return rerr ? ix_fail(ix, "meta put", rerr) : TFS_OK;
}

/* Copy a value out of RocksDB into malloc'd memory: TFS_OK, TFS_MISS or
 * an error.  The copy is ours; the pinned slice goes back at once. */
static int get_copy(struct cache_index *ix, const char *k, size_t kn, void **value, size_t *len)
{
	rocksdb_pinnableslice_t *ps;
	const char *v;
	char *rerr = NULL;
	size_t vn = 0;
	void *copy;

	ps = rocksdb_get_pinned(ix->db, ix->ropts, k, kn, &rerr);
	if (rerr)
		return ix_fail(ix, "get", rerr);
	if (!ps)
		return TFS_MISS;
	v = rocksdb_pinnableslice_value(ps, &vn);
	copy = malloc(vn ? vn : 1);
	if (!copy) {
		rocksdb_pinnableslice_destroy(ps);
		return TFS_E_NOMEM;
	}
	if (vn)
		memcpy(copy, v, vn);
	rocksdb_pinnableslice_destroy(ps);
	*value = copy;
	*len = vn;
	return TFS_OK;
}

int cache_index_meta_get(struct cache_index *ix, const char *name, void **value, size_t *len)
{
	size_t kn;
	char *k = meta_key(name, &kn);
	int rc;

	*value = NULL;
	*len = 0;
	if (!k)
		return TFS_E_NOMEM;
	rc = get_copy(ix, k, kn, value, len);
	free(k);
	return rc;
}

int cache_index_meta_del(struct cache_index *ix, const char *name)
{
	size_t kn;
	char *k = meta_key(name, &kn), *rerr = NULL;

	if (!k)
		return TFS_E_NOMEM;
	rocksdb_delete(ix->db, ix->wopts, k, kn, &rerr);
	free(k);
	return rerr ? ix_fail(ix, "meta delete", rerr) : TFS_OK;
}

int cache_index_identity_put(struct cache_index *ix, uint32_t format, const char *owner,
			     uint64_t chunk_size)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	unsigned char f[4], c[8];
	char *rerr = NULL;

	if (!wb)
		return TFS_E_NOMEM;
	put_u32(f, format);
	put_u64(c, chunk_size);
	rocksdb_writebatch_put(wb, ID_FORMAT, sizeof(ID_FORMAT) - 1, (const char *)f, sizeof(f));
	rocksdb_writebatch_put(wb, ID_OWNER, sizeof(ID_OWNER) - 1, owner, strlen(owner));
	rocksdb_writebatch_put(wb, ID_CHUNK, sizeof(ID_CHUNK) - 1, (const char *)c, sizeof(c));
	rocksdb_write(ix->db, ix->wopts, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	return rerr ? ix_fail(ix, "identity put", rerr) : TFS_OK;
}

int cache_index_identity_get(struct cache_index *ix, uint32_t *format, char **owner,
			     uint64_t *chunk_size)
{
	void *f = NULL, *o = NULL, *c = NULL;
	size_t fl = 0, ol = 0, cl = 0;
	int rf, ro, rc_;
	int rc;

	*owner = NULL;
	rf = get_copy(ix, ID_FORMAT, sizeof(ID_FORMAT) - 1, &f, &fl);
	ro = get_copy(ix, ID_OWNER, sizeof(ID_OWNER) - 1, &o, &ol);
	rc_ = get_copy(ix, ID_CHUNK, sizeof(ID_CHUNK) - 1, &c, &cl);
	if (rf < 0 || ro < 0 || rc_ < 0) {
		rc = rf < 0 ? rf : ro < 0 ? ro : rc_;
		goto out;
	}
	if (rf == TFS_MISS && ro == TFS_MISS && rc_ == TFS_MISS) {
		rc = TFS_MISS;
		goto out;
	}
	/* Written in one batch: a partial identity is not something we wrote. */
	if (rf != TFS_OK || ro != TFS_OK || rc_ != TFS_OK || fl != 4 || cl != 8 ||
	    memchr(o, '\0', ol)) {
		rc = TFS_E_IO;
		goto out;
	}
	*owner = malloc(ol + 1);
	if (!*owner) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	memcpy(*owner, o, ol);
	(*owner)[ol] = '\0';
	*format = get_u32(f);
	*chunk_size = get_u64(c);
	rc = TFS_OK;
out:
	free(f);
	free(o);
	free(c);
	return rc;
}

struct cache_index_batch *cache_index_batch_new(void)
{
	struct cache_index_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->wb = rocksdb_writebatch_create();
	if (!b->wb) {
		free(b);
		return NULL;
	}
	return b;
}

void cache_index_batch_chunk_put(struct cache_index_batch *b, const struct chunk_id *id,
				 const struct cache_index_rec *rec)
{
	char stack[KEYBUF_STACK], *k;
	size_t kn = chunk_key_build(id, stack, &k), vn;
	unsigned char v[REC_MAX];

	if (kn == 0) {
		b->nomem = true;
		return;
	}
	vn = rec_encode(rec, v);
	rocksdb_writebatch_put(b->wb, k, kn, (const char *)v, vn);
	chunk_key_done(stack, k);
}

void cache_index_batch_chunk_del(struct cache_index_batch *b, const struct chunk_id *id)
{
	char stack[KEYBUF_STACK], *k;
	size_t kn = chunk_key_build(id, stack, &k);

	if (kn == 0) {
		b->nomem = true;
		return;
	}
	rocksdb_writebatch_delete(b->wb, k, kn);
	chunk_key_done(stack, k);
}

size_t cache_index_batch_count(const struct cache_index_batch *b)
{
	int n = rocksdb_writebatch_count(b->wb);
	return n > 0 ? (size_t)n : 0;
}

int cache_index_batch_commit(struct cache_index *ix, struct cache_index_batch *b)
{
	char *rerr = NULL;

	if (b->nomem) {
		rocksdb_writebatch_clear(b->wb);
		b->nomem = false;
		return TFS_E_NOMEM;
	}
	if (rocksdb_writebatch_count(b->wb) == 0)
		return TFS_OK;
	rocksdb_write(ix->db, ix->wopts, b->wb, &rerr);
	/* cleared either way: a failing disk must not grow it without bound
	 * (what was lost is access statistics or deletions the next open's
	 * reconcile redoes) */
	rocksdb_writebatch_clear(b->wb);
	if (rerr)
		return ix_fail(ix, "batch write", rerr);
	return TFS_OK;
}

void cache_index_batch_free(struct cache_index_batch *b)
{
	if (!b)
		return;
	rocksdb_writebatch_destroy(b->wb);
	free(b);
}

bool cache_index_rec_decode(const void *val, size_t n, struct cache_index_rec *rec)
{
	return rec_decode(val, n, rec);
}

size_t cache_index_rec_encode(const struct cache_index_rec *rec, void *v)
{
	static_assert(CACHE_INDEX_REC_MAX == REC_MAX, "record bound");
	return rec_encode(rec, v);
}

bool cache_index_chunk_key_parse(const void *k, size_t n, struct chunk_id *id)
{
	return chunk_key_parse(k, n, id);
}
