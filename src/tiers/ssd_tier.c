/* ssd_tier.c - object files on a local disk, their chunks indexed in
 * RocksDB (see ssd_tier.h).
 *
 * Invariants (under t->lock unless noted):
 *  - every entry (a chunk) is in the hash table exactly once, keyed by its
 *    chunk id, either PENDING (queued for the writer, invisible to
 *    readers, counts against queue_max) or STORED (its bytes were written
 *    into its object's file, synced, read back and checked, and then its
 *    index record written, in that order: a reader never sees a chunk
 *    whose bytes are not all on disk);
 *  - every entry points to its object (struct ssd_obj), which counts the
 *    entries pointing to it (refs), those in the table (entries), and the
 *    holds on it; an object lives while it has refs or holds, and its file
 *    exists while it has a STORED entry (the writer creates it, and
 *    unlinks it when its last chunk goes);
 *  - t->entries and t->bytes_used count STORED entries and their bytes
 *    (data length rounded up to 4 KiB), exactly; t->reserved the bytes of
 *    the writer's batch, written and not yet STORED: the bounds count both;
 *  - a STORED entry of a held object (ssd_tier_object_open) is neither
 *    evicted nor punched out: the kernel reads its file without us;
 *  - an entry removed from the table by a reader (bad block) or an
 *    operator goes on the doomed list; only the writer thread punches out
 *    bytes, unlinks files, deletes index records and frees entries
 *    removed from the table, and it empties the doomed list before each
 *    batch, so a punch never overtakes a re-store of the same chunk;
 *  - no lock is held across file I/O or RocksDB calls; readers take the
 *    lock once per read (lookup, checksums, access stats) and again only
 *    to drop a bad entry.
 */
#include "tiers/ssd_tier.h"

#include <assert.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#if (defined(__x86_64__) || defined(__i386__)) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#define TIERFS_XXH_DISPATCH 1
#endif

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "evict/shape.h"
#include "tiers/cache_index.h"

/* On-disk format of this code: stored in the index; a cache of another
 * format is refused (or wiped).  1 was a file per chunk with a header. */
#define SSD_FORMAT_VERSION 2

#define KEY_ROOM 4032u             /* key + cache id bytes a chunk may have */
#define META_MAX (64u << 20)       /* the contract's bound on a blob */
#define DROP_QUEUE_MAX 64          /* drop-version jobs waiting (then skipped) */
#define EVICT_PASS_MAX 1024        /* victims one write may evict before giving up */
#define BACKOFF_MS 1000            /* stores refused this long after a write error */
#define BATCH_MAX 4096             /* index operations per RocksDB batch */
#define WRITE_BATCH_JOBS 16        /* chunks written before one sync and commit */
#define BUCKETS_MIN 1024u
#define BUCKETS_MAX (1u << 26)     /* 512 MiB of buckets: far beyond any real disk */
#define OBJ_BUCKETS_MIN 256u
#define DIO_ALIGN 4096u

/* "XX/" + 32 hex digits + NUL, relative to objects/. */
#define NAME_LEN 35
#define NAME_BUF 40

enum entry_state { ENTRY_PENDING, ENTRY_STORED };

/* One object version that has chunks here (or is held). */
struct ssd_obj {
	struct ssd_obj *hnext;
	uint64_t hi, lo;             /* XXH3_128 of 'o' key '\0' cache id: its file's name */
	unsigned entries;            /* its entries in the table, PENDING and STORED */
	unsigned refs;               /* entries pointing to it, in the table or not */
	unsigned holds;              /* ssd_tier_object_open()s not released */
	uint64_t bytes;              /* of its STORED entries */
	const char *etag;            /* into key[] */
	char key[];                  /* key '\0' cache id '\0' */
};

struct ssd_entry {
	struct ssd_entry *hnext;     /* hash chain */
	struct ssd_entry *dnext;     /* doomed list */
	struct ssd_obj *obj;
	uint64_t hi, lo;             /* XXH3_128 of the index key: bucket and policy key */
	uint64_t index;
	uint64_t data_len, bytes;    /* chunk bytes; what they take on disk (4 KiB blocks) */
	uint64_t gen;                /* tells a re-stored entry from the one a reader saw */
	uint64_t last_access;        /* seconds since the epoch (persisted) */
	uint64_t checked;            /* when the scrub last read it back (monotonic s) */
	uint32_t hits;
	uint32_t policy_stat;        /* the policy's statistics, as loaded (persisted) */
	uint32_t nblocks;
	uint32_t ahead_epoch;        /* fetched ahead of its reader in this tier epoch, unread; 0 none */
	bool touched;                /* access stats changed since loaded */
	bool pinned;                 /* an operator pinned it: kept out of the policy */
	enum entry_state state;
	const unsigned char *pending; /* PENDING with its bytes in our copy (a spilled
				     * job's): readers copy from it (under lock) */
	uint32_t *sums;              /* into the allocation: the blocks' checksums */
	const char *etag;            /* into key[] */
	char key[];                  /* key '\0' etag '\0', then the sums */
};

enum job_kind { JOB_STORE, JOB_DROP };

struct job {
	struct job *next;
	enum job_kind kind;
	struct ssd_entry *e;         /* STORE: its PENDING entry */
	const void *data;
	size_t len;
	ssd_tier_release_fn release;
	void *arg;
	bool force;                  /* STORE: an operator's warm-up, past admission */
	char *key, *keep;            /* DROP: one allocation; keep may be NULL */
	int fd;                      /* STORE, in a batch: its object's file */
	bool reserved;               /* STORE: its bytes are in t->reserved */
	bool spill;                  /* STORE: data is our copy (malloc'd, in t->spill_used),
				    * not the caller's buffer; release is not called */
};

struct ssd_tier {
	pthread_mutex_t lock;
	pthread_cond_t work_cond;    /* writer: a job or a doomed entry arrived */
	pthread_cond_t done_cond;    /* flushers: a job finished */
	struct ssd_entry **buckets;
	size_t n_buckets;            /* power of two */
	size_t n_table;              /* entries in the table, PENDING included */
	struct ssd_obj **obuckets;
	size_t n_obuckets, n_objs;
	uint64_t entries, bytes_used;
	uint64_t reserved;           /* bytes of the batch being written, not yet STORED */
	uint64_t q_bytes;            /* bytes of the stores queued (job_done drops them) */
	uint32_t epoch;              /* ssd_tier_new_epoch(): what an ahead mark belongs to */
	uint64_t ahead_bytes;        /* of the entries marked in this epoch */
	uint64_t next_gen;
	struct evict_policy *policy; /* the STORED entries, keyed by lo; NULL while loading */
	enum evict_kind policy_kind;
	uint64_t policy_bytes;       /* the bound the policy was sized for */
	struct plan_slot *plans;     /* the loader's plan; NULL = none (under lock) */
	struct job *q_head, *q_tail;
	unsigned q_stores, q_drops;  /* q_stores: jobs on callers' buffers (<= queue_max) */
	uint64_t q_store_bytes;      /* their chunks' bytes */
	uint64_t spill_used, spill_max;  /* bytes of copies queued (<= spill_max) */
	uint64_t seq_queued, seq_done;
	struct ssd_entry *doomed;
	bool doomed_busy;            /* the writer is deleting a doomed batch */
	bool stopping;
	bool writer_started;
	pthread_t writer;

	int dir_fd, objects_fd;
	char *dir;
	size_t chunk_size;
	uint64_t capacity;
	unsigned min_free_pct;
	uint64_t fs_spare, fs_spare_at;  /* ssd_tier_room()'s last statvfs (under lock) */
	unsigned queue_max;
	uint64_t queue_bytes;        /* bound on q_store_bytes; 0 = none */
	bool verify;                 /* read each chunk back before its record */
	uint64_t scrub_rate;         /* bytes per idle second the writer scrubs */
	uint64_t front_bytes;        /* cfg->front_bytes */
	struct cache_index *ix;
	unsigned char *rbuf;         /* writer-only: a chunk read back (DIO aligned) */
	pthread_mutex_t scrub_lock;  /* one scrub at a time; its buffer */
	unsigned char *sbuf;

	_Atomic uint64_t hits, misses, bytes_served, bytes_fetched, insertions, evictions;
	_Atomic uint64_t ahead_evicted;
	_Atomic uint64_t checksum_failures, io_errors, dropped, rejected, spilled, resaved;
	atomic_bool degraded;
	_Atomic int64_t backoff_until_ms;
	struct pin_set *pins;        /* the operator's pins (borrowed); NULL = none */
};

#define STAT_ADD(t, f, n) atomic_fetch_add_explicit(&(t)->f, (n), memory_order_relaxed)

/* Bytes a chunk of len bytes takes on disk: whole 4 KiB blocks. */
static uint64_t bytes_of(uint64_t len)
{
	return evict_ssd_bytes(len);
}

static uint32_t blocks_of(uint64_t len)
{
	return (uint32_t)((len + SSD_BLOCK - 1) / SSD_BLOCK);
}

/* A block's checksum: the low half of its XXH3-64.  On x86 the library's
 * dispatching entry picks AVX2 or AVX-512 where the CPU has them (the
 * same hash, 1.4x as fast as the plain entry's SSE2 here): every byte a
 * cold reader fetches is summed twice on its way to the SSD tier. */
static uint32_t block_sum(const void *p, size_t n)
{
#ifdef TIERFS_XXH_DISPATCH
	return (uint32_t)XXH3_64bits_dispatch(p, n);
#else
	return (uint32_t)XXH3_64bits(p, n);
#endif
}

static void block_sums(const void *data, size_t len, uint32_t *sums)
{
	for (uint32_t b = 0; b < blocks_of(len); b++) {
		size_t off = (size_t)b * SSD_BLOCK;
		size_t n = len - off < SSD_BLOCK ? len - off : SSD_BLOCK;

		sums[b] = block_sum((const char *)data + off, n);
	}
}

/* Whether a chunk id can be stored at all: bounded key and cache id. */
static bool id_fits(const struct chunk_id *id)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);
	return kl <= KEY_ROOM && el <= KEY_ROOM - kl;
}

/* XXH3_128 of the chunk's index key: picks its bucket and its policy key.
 * The id must fit (id_fits). */
static void id_hash(const struct chunk_id *id, uint64_t *hi, uint64_t *lo)
{
	char buf[KEY_ROOM + 16];
	size_t n = cache_index_chunk_key(id, buf, sizeof(buf));
	XXH128_hash_t h;

	assert(n <= sizeof(buf));
	h = XXH3_128bits(buf, n);
	*hi = h.high64;
	*lo = h.low64;
}

/* XXH3_128 of 'o' key '\0' cache id: names the object's file.  Key and
 * cache id together at most KEY_ROOM bytes (id_fits). */
static void obj_hash(const char *key, const char *cache_id, uint64_t *hi, uint64_t *lo)
{
	size_t kl = strlen(key), el = strlen(cache_id);
	char buf[KEY_ROOM + 2];
	XXH128_hash_t h;

	assert(kl + el <= KEY_ROOM);
	buf[0] = 'o';
	memcpy(buf + 1, key, kl + 1);
	memcpy(buf + 2 + kl, cache_id, el);
	h = XXH3_128bits(buf, kl + el + 2);
	*hi = h.high64;
	*lo = h.low64;
}

static void hex64(char *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = digits[v & 15];
}

/* "XX/<32 hex>" relative to objects/. */
static void obj_name(char out[NAME_BUF], uint64_t hi, uint64_t lo)
{
	hex64(out + 3, hi);
	hex64(out + 19, lo);
	out[0] = out[3];
	out[1] = out[4];
	out[2] = '/';
	out[NAME_LEN] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Parse 32 lowercase hex digits. */
static bool parse_hex128(const char *s, uint64_t *hi, uint64_t *lo)
{
	uint64_t v[2] = { 0, 0 };

	for (int i = 0; i < 32; i++) {
		int d = hexval(s[i]);
		if (d < 0)
			return false;
		v[i / 16] = (v[i / 16] << 4) | (uint64_t)d;
	}
	*hi = v[0];
	*lo = v[1];
	return true;
}

/* ---- objects (lock held) ---- */

static struct ssd_obj *obj_find(struct ssd_tier *t, uint64_t hi, uint64_t lo)
{
	for (struct ssd_obj *o = t->obuckets[lo & (t->n_obuckets - 1)]; o; o = o->hnext)
		if (o->lo == lo && o->hi == hi)
			return o;
	return NULL;
}

static void obj_grow(struct ssd_tier *t)
{
	size_t n = t->n_obuckets * 2;
	struct ssd_obj **nb;

	if (t->n_objs <= t->n_obuckets || n > BUCKETS_MAX)
		return;
	nb = calloc(n, sizeof(*nb));
	if (!nb)
		return;
	for (size_t i = 0; i < t->n_obuckets; i++) {
		for (struct ssd_obj *o = t->obuckets[i], *next; o; o = next) {
			next = o->hnext;
			o->hnext = nb[o->lo & (n - 1)];
			nb[o->lo & (n - 1)] = o;
		}
	}
	free(t->obuckets);
	t->obuckets = nb;
	t->n_obuckets = n;
}

/* The object of version cache_id of key, (hi, lo) its hash, made if
 * missing; NULL when out of memory. */
static struct ssd_obj *obj_get(struct ssd_tier *t, const char *key, const char *cache_id,
			       uint64_t hi, uint64_t lo)
{
	struct ssd_obj *o = obj_find(t, hi, lo), **b;
	size_t kl = strlen(key), el = strlen(cache_id);

	if (o)
		return o;
	o = calloc(1, sizeof(*o) + kl + el + 2);
	if (!o)
		return NULL;
	memcpy(o->key, key, kl + 1);
	memcpy(o->key + kl + 1, cache_id, el + 1);
	o->etag = o->key + kl + 1;
	o->hi = hi;
	o->lo = lo;
	b = &t->obuckets[lo & (t->n_obuckets - 1)];
	o->hnext = *b;
	*b = o;
	t->n_objs++;
	obj_grow(t);
	return o;
}

/* Free o once nothing refers to it. */
static void obj_maybe_free(struct ssd_tier *t, struct ssd_obj *o)
{
	struct ssd_obj **pp;

	if (o->refs || o->holds)
		return;
	assert(o->entries == 0);
	for (pp = &t->obuckets[o->lo & (t->n_obuckets - 1)]; *pp != o; pp = &(*pp)->hnext)
		assert(*pp);
	*pp = o->hnext;
	t->n_objs--;
	free(o);
}

/* ---- the in-memory table (lock held) ---- */

/* Free an entry out of the table, and its object once nothing refers to
 * it (takes the lock). */
static void entry_free(struct ssd_tier *t, struct ssd_entry *e)
{
	pthread_mutex_lock(&t->lock);
	assert(e->obj->refs > 0);
	e->obj->refs--;
	obj_maybe_free(t, e->obj);
	pthread_mutex_unlock(&t->lock);
	free(e);
}

/* A new entry for chunk id of object o, with room for the checksums of
 * nblocks blocks. */
static struct ssd_entry *entry_new(const struct chunk_id *id, uint64_t hi, uint64_t lo,
				   uint32_t nblocks)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);
	size_t strs = (kl + el + 2 + 3) & ~(size_t)3;
	struct ssd_entry *e = calloc(1, sizeof(*e) + strs + 4 * (size_t)nblocks);

	if (!e)
		return NULL;
	memcpy(e->key, id->key, kl + 1);
	memcpy(e->key + kl + 1, id->etag, el + 1);
	e->etag = e->key + kl + 1;
	e->sums = (uint32_t *)(void *)(e->key + strs);
	e->nblocks = nblocks;
	e->index = id->index;
	e->hi = hi;
	e->lo = lo;
	return e;
}

static struct chunk_id entry_id(const struct ssd_entry *e)
{
	return (struct chunk_id){ e->key, e->etag, e->index };
}

static struct ssd_entry *table_find(struct ssd_tier *t, const struct chunk_id *id, uint64_t hi,
				    uint64_t lo)
{
	for (struct ssd_entry *e = t->buckets[lo & (t->n_buckets - 1)]; e; e = e->hnext)
		if (e->lo == lo && e->hi == hi && e->index == id->index &&
		    strcmp(e->key, id->key) == 0 && strcmp(e->etag, id->etag) == 0)
			return e;
	return NULL;
}

/* Double the buckets when the table is fuller than one entry per bucket.
 * Allocation failure only leaves chains longer. */
static void table_grow(struct ssd_tier *t)
{
	size_t n = t->n_buckets * 2;
	struct ssd_entry **nb;

	if (t->n_table <= t->n_buckets || n > BUCKETS_MAX)
		return;
	nb = calloc(n, sizeof(*nb));
	if (!nb)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct ssd_entry *e = t->buckets[i], *next;
		for (; e; e = next) {
			next = e->hnext;
			e->hnext = nb[e->lo & (n - 1)];
			nb[e->lo & (n - 1)] = e;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->n_buckets = n;
}

/* The policy weighs an entry by its 4 KiB blocks on disk, and the tier
 * by the blocks its bound holds: W-TinyLFU's window and protected
 * segments are shares of the bytes, whatever the chunk sizes. */
#define POLICY_WEIGHT_UNIT EVICT_SSD_WEIGHT_UNIT

static void policy_insert(struct ssd_tier *t, const struct ssd_entry *e)
{
	evict_policy_insert_weighted(t->policy, e->lo, e->bytes / POLICY_WEIGHT_UNIT);
}

/* e's mark of a fetch ahead goes (lock held): its reader came, or (gone)
 * it left the table unread. */
static void ahead_clear(struct ssd_tier *t, struct ssd_entry *e, bool gone)
{
	if (e->ahead_epoch != 0 && e->ahead_epoch == t->epoch) {
		t->ahead_bytes -= e->bytes;
		if (gone)
			STAT_ADD(t, ahead_evicted, e->bytes);
	}
	e->ahead_epoch = 0;
}

/* A reader came for e (lock held): its hit counted, its access time
 * moved, and no longer "fetched ahead". */
static void entry_read(struct ssd_tier *t, struct ssd_entry *e)
{
	if (e->hits < UINT32_MAX)
		e->hits++;
	ahead_clear(t, e, false);
	e->last_access = clock_wall_coarse_s();
	e->touched = true;
}

/* Is e out of eviction's reach (pinned, or its object held)? */
static bool entry_kept(const struct ssd_entry *e)
{
	return e->pinned || e->obj->holds > 0;
}

static void table_insert(struct ssd_tier *t, struct ssd_entry *e)
{
	struct ssd_entry **b = &t->buckets[e->lo & (t->n_buckets - 1)];

	e->hnext = *b;
	*b = e;
	e->gen = ++t->next_gen;
	t->n_table++;
	e->obj->entries++;
	if (e->state == ENTRY_STORED) {
		t->entries++;
		t->bytes_used += e->bytes;
		e->obj->bytes += e->bytes;
		if (t->policy && !e->pinned)
			policy_insert(t, e);
	}
	table_grow(t);
}

/* Unlink e from the table and its counts, its fetch-ahead mark left as
 * it is: a move (PENDING -> STORED, table_insert next) is not a removal.
 * Its object stays (the caller frees it with obj_maybe_free once done
 * with e->obj). */
static void table_unlink(struct ssd_tier *t, struct ssd_entry *e)
{
	struct ssd_entry **pp = &t->buckets[e->lo & (t->n_buckets - 1)];

	while (*pp != e) {
		assert(*pp);
		pp = &(*pp)->hnext;
	}
	*pp = e->hnext;
	e->hnext = NULL;
	t->n_table--;
	assert(e->obj->entries > 0);
	e->obj->entries--;
	if (e->state == ENTRY_STORED) {
		assert(t->entries > 0 && t->bytes_used >= e->bytes && e->obj->bytes >= e->bytes);
		t->entries--;
		t->bytes_used -= e->bytes;
		e->obj->bytes -= e->bytes;
		if (t->policy && !e->pinned)
			evict_policy_remove(t->policy, e->lo);
	}
}

/* Take e out of the table for good: a fetch ahead not read yet leaves
 * unread (counted). */
static void table_remove(struct ssd_tier *t, struct ssd_entry *e)
{
	ahead_clear(t, e, true);
	table_unlink(t, e);
}

/* For assert() only: the counters match the table.  O(entries), so it
 * runs where the table is walked anyway (end of open, close). */
static bool table_check(struct ssd_tier *t)
{
	uint64_t n = 0, stored = 0, bytes = 0;

	for (size_t i = 0; i < t->n_buckets; i++)
		for (struct ssd_entry *e = t->buckets[i]; e; e = e->hnext) {
			if ((e->lo & (t->n_buckets - 1)) != i)
				return false;
			n++;
			if (e->state == ENTRY_STORED) {
				stored++;
				bytes += e->bytes;
			}
		}
	return n == t->n_table && stored == t->entries && bytes == t->bytes_used;
}

/* The STORED entry whose policy key is lo, or NULL: one bucket's walk. */
static struct ssd_entry *entry_of_key(struct ssd_tier *t, uint64_t lo)
{
	for (struct ssd_entry *e = t->buckets[lo & (t->n_buckets - 1)]; e; e = e->hnext)
		if (e->lo == lo && e->state == ENTRY_STORED)
			return e;
	return NULL;
}

/* The policy's pinned test: an entry of a held object is never a victim;
 * while a plan is known, one the plan reads later is kept while there is
 * another victim (lock held). */
static bool needed_soon(void *ctx, uint64_t lo)
{
	struct ssd_tier *t = ctx;
	struct ssd_entry *e = entry_of_key(t, lo);

	return e && (e->obj->holds > 0 || e->ahead_epoch == t->epoch ||
		     (t->plans && plan_slot_future(t->plans, e->key, false) == PLAN_SOON));
}

/* Held, or fetched ahead this epoch and not read yet: evicting that would
 * fetch it twice (the whole point of fetching it was its reader). */
static bool held(void *ctx, uint64_t lo)
{
	struct ssd_tier *t = ctx;
	struct ssd_entry *e = entry_of_key(t, lo);

	return e && (e->obj->holds > 0 || e->ahead_epoch == t->epoch);
}

/* The eviction policy's victim (lock held), or NULL when it has none.
 * The policy (src/evict, the `ssd-policy` option) sees every read that
 * reached this tier, hit or miss, and each STORED entry by the half of
 * its 128-bit hash that picks its bucket.  A key it holds with no entry
 * behind it (two chunks whose halves collided, one of them gone) is
 * forgotten.  With a plan, a victim the plan does not read later comes
 * first if the policy has one (Belady's rule: what is needed furthest
 * ahead goes first, and what is not needed again is furthest). */
static struct ssd_entry *victim_choose(struct ssd_tier *t, uint64_t incoming)
{
	uint64_t v;

	while (t->plans && evict_policy_victim_for(t->policy, incoming, needed_soon, t, &v)) {
		struct ssd_entry *e = entry_of_key(t, v);

		if (e)
			return e;
		evict_policy_remove(t->policy, v);
	}
	while (evict_policy_victim_for(t->policy, incoming, held, t, &v)) {
		struct ssd_entry *e = entry_of_key(t, v);

		if (e)
			return e;
		evict_policy_remove(t->policy, v);
	}
	return NULL;
}

/* ---- object files ---- */

/* pread/pwrite until every byte moved, EOF, or an error.  Returns the
 * bytes moved or -1 (errno set). */
static ssize_t rw_full(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	size_t total = 0;

	while (total < len) {
		ssize_t r = write ? pwrite(fd, (char *)buf + total, len - total, (off_t)(off + total))
				  : pread(fd, (char *)buf + total, len - total, (off_t)(off + total));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		total += (size_t)r;
	}
	return (ssize_t)total;
}

/* Write a chunk's len bytes at off (a multiple of DIO_ALIGN) to fd,
 * open for writing: its whole pages around the page cache (O_DIRECT)
 * when the buffer is page-aligned and the filesystem allows it, the rest
 * (a file's last partial page, or all of it otherwise) through the page
 * cache.  The copy into the page cache was a third of a cold reader's
 * CPU on two cores, and the bytes are read back from the device anyway
 * (job_verify).  Returns the bytes written or -1 (errno set). */
static ssize_t chunk_pwrite(int fd, const void *data, size_t len, uint64_t off)
{
	size_t direct = len / DIO_ALIGN * DIO_ALIGN;
	void *buf = (void *)(uintptr_t)data;
	int fl = fcntl(fd, F_GETFL), err;
	ssize_t n = -1;

	if (direct && (uintptr_t)data % DIO_ALIGN == 0 && off % DIO_ALIGN == 0 && fl >= 0 &&
	    fcntl(fd, F_SETFL, fl | O_DIRECT) == 0) {
		n = rw_full(fd, buf, direct, off, true);
		err = errno;
		(void)fcntl(fd, F_SETFL, fl);
		if (n < 0 && err != EINVAL) {
			errno = err;
			return -1;   /* the device's answer */
		}
	}
	if (n != (ssize_t)direct)   /* refused (EINVAL): all through the page cache */
		return rw_full(fd, buf, len, off, true);
	if (direct == len)
		return n;
	n = rw_full(fd, (char *)buf + direct, len - direct, off + direct, true);
	return n < 0 ? -1 : (ssize_t)direct + n;
}

/* READ_BUSY: the system, not the file, said no (out of descriptors or
 * memory, interrupted): a miss that keeps the entry. */
enum read_result { READ_OK, READ_GONE, READ_IOERR, READ_BAD, READ_BUSY };

static enum read_result read_errno(int err)
{
	switch (err) {
	case ENOENT: return READ_GONE;
	case EMFILE: case ENFILE: case ENOMEM: case EINTR: case EAGAIN: return READ_BUSY;
	default: return READ_IOERR;
	}
}

/* Open object (hi, lo)'s file: read-only, or for writing (made, with its
 * XX directory, when missing).  fd or -1 (errno set). */
static int obj_file_open(struct ssd_tier *t, uint64_t hi, uint64_t lo, bool write)
{
	char name[NAME_BUF];
	int fd;

	obj_name(name, hi, lo);
	if (!write)
		return openat(t->objects_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	fd = openat(t->objects_fd, name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		char sub[3] = { name[0], name[1], '\0' };
		if (mkdirat(t->objects_fd, sub, 0700) < 0 && errno != EEXIST)
			return -1;
		fd = openat(t->objects_fd, name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	/* 0600 whatever the umask: the mode is part of the contract */
	if (fd >= 0 && fchmod(fd, 0600) < 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Read bytes [off, off + len) of a chunk of data_len bytes, whole blocks,
 * from the object file into buf, and check each block against sums (the
 * first block's checksum at sums[0]).  fd: an open file, or -1 to open it
 * here. */
static enum read_result span_read(struct ssd_tier *t, int fd, uint64_t hi, uint64_t lo,
				  uint64_t chunk_off, size_t span_off, size_t span_len,
				  const uint32_t *sums, void *buf)
{
	bool mine = fd < 0;
	ssize_t n;
	int err = 0;

	if (mine) {
		fd = obj_file_open(t, hi, lo, false);
		if (fd < 0)
			return read_errno(errno);
	}
	n = rw_full(fd, buf, span_len, chunk_off + span_off, false);
	err = errno;
	if (mine)
		close(fd);
	if (n < 0)
		return read_errno(err);
	if ((size_t)n != span_len)   /* truncated: not what we wrote */
		return READ_BAD;
	for (size_t off = 0, b = 0; off < span_len; off += SSD_BLOCK, b++) {
		size_t m = span_len - off < SSD_BLOCK ? span_len - off : SSD_BLOCK;

		if (block_sum((const char *)buf + off, m) != sums[b])
			return READ_BAD;
	}
	return READ_OK;
}

/* Free the disk space of an entry's bytes: a hole in its object's file,
 * and the file itself when it was the object's last chunk.  Writer
 * thread (or open/close, when there is no writer). */
static void punch(struct ssd_tier *t, const struct ssd_entry *e, bool last)
{
	char name[NAME_BUF];
	int fd;

	obj_name(name, e->obj->hi, e->obj->lo);
	if (last) {
		if (unlinkat(t->objects_fd, name, 0) < 0 && errno != ENOENT)
			log_debug("ssd tier: unlink %s: %s", name, strerror(errno));
		return;
	}
	fd = openat(t->objects_fd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(e->index * t->chunk_size), (off_t)e->bytes) < 0)
		log_debug("ssd tier: punching %s: %s", name, strerror(errno));
	close(fd);
}

/* Delete an entry already out of the table: its bytes, its record, it,
 * and its object once nothing else refers to it.  Writer thread (or
 * open/close, when there is no writer). */
static void entry_destroy(struct ssd_tier *t, struct ssd_entry *e)
{
	struct chunk_id id = entry_id(e);
	bool last;

	pthread_mutex_lock(&t->lock);
	last = e->obj->entries == 0 && e->obj->holds == 0;
	pthread_mutex_unlock(&t->lock);
	/* The record goes before the bytes, as a write puts the bytes before
	 * the record: a process killed in between leaves bytes without a
	 * record, which the next open punches out (or deletes with the file),
	 * never a record over a hole, which it would count as stored.  A
	 * failed delete leaves such a record: a checksum miss when read. */
	(void)cache_index_chunk_del(t->ix, &id);
	/* A held object's file stays whole: its last chunk is punched out
	 * only when an eviction asked for while it was held comes after. */
	punch(t, e, last);
	entry_free(t, e);
}

static void doomed_destroy(struct ssd_tier *t, struct ssd_entry *d)
{
	while (d) {
		struct ssd_entry *next = d->dnext;
		entry_destroy(t, d);
		d = next;
	}
}

/* The tier's filesystem now: *avail bytes free to us, of which *reserve
 * must stay free (min_free_pct of it).  0, or -1 (errno set). */
static int fs_space(const struct ssd_tier *t, uint64_t *avail, uint64_t *reserve)
{
	struct statvfs sv;

	if (fstatvfs(t->dir_fd, &sv) < 0)
		return -1;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*reserve = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * t->min_free_pct;
	return 0;
}

/* Make room for need more bytes (and, when need > 0, one more entry):
 * evict the policy's victims until bytes_used + need <= capacity (when
 * bounded), the filesystem keeps min_free_pct free after the write (when
 * that is not 0) and the policy has room for a key.  When candidate is
 * not NULL and something must go, the policy first decides whether that
 * chunk may displace its victim at all: if not, nothing is evicted,
 * *rejected is set and false returned.  false also when it cannot be
 * done: nothing evictable left, more than EVICT_PASS_MAX victims needed,
 * or the free-space bound out of reach even with all our chunks gone
 * (then nothing is evicted: another user's data fills the disk, and
 * emptying the cache would not help).  Likewise when key (the object
 * being stored; NULL: an operator's or no chunk) is one the reader's plan
 * is done with (ssd_tier_set_plan).  Writer thread, or open. */
static bool make_room(struct ssd_tier *t, uint64_t need, const uint64_t *candidate,
		      const char *key, bool *rejected)
{
	bool check_fs = t->min_free_pct > 0;
	uint64_t avail = 0, reserve = 0, used;

	if (t->capacity && need > t->capacity)
		return false;
	if (check_fs) {
		if (fs_space(t, &avail, &reserve) < 0) {
			log_warn("ssd tier %s: statvfs: %s", t->dir, strerror(errno));
			return false;
		}
		pthread_mutex_lock(&t->lock);
		used = t->bytes_used;
		pthread_mutex_unlock(&t->lock);
		if (avail + used < reserve + need)
			return false;
	}
	for (unsigned n = 0;; n++) {
		struct ssd_entry *v;

		pthread_mutex_lock(&t->lock);
		if ((!t->capacity || t->bytes_used + t->reserved + need <= t->capacity) &&
		    (!check_fs || avail >= reserve + need)) {
			size_t keys = evict_policy_capacity(t->policy);

			/* the bytes fit and only the keys are taken: small
			 * chunks; more keys, not an eviction */
			if (need > 0 && evict_policy_size(t->policy) >= keys)
				(void)evict_policy_grow(t->policy,
						(size_t)evict_ssd_keys_next(keys, t->policy_bytes));
			if (need == 0 ||
			    evict_policy_size(t->policy) < evict_policy_capacity(t->policy)) {
				pthread_mutex_unlock(&t->lock);
				return true;
			}
		}
		if (n == 0 && key && t->plans &&
		    plan_slot_future(t->plans, key, true) == PLAN_DONE) {
			pthread_mutex_unlock(&t->lock);
			*rejected = true;
			return false;
		}
		v = n < EVICT_PASS_MAX ? victim_choose(t, need / POLICY_WEIGHT_UNIT) : NULL;
		if (!v) {
			pthread_mutex_unlock(&t->lock);
			return false;
		}
		/* asked for every victim: one that makes room for a chunk
		 * heavier than W-TinyLFU's window is the candidate's own duel */
		if (candidate &&
		    !evict_policy_admit_for(t->policy, *candidate, need / POLICY_WEIGHT_UNIT, v->lo)) {
			pthread_mutex_unlock(&t->lock);
			*rejected = true;
			return false;
		}
		table_remove(t, v);
		pthread_mutex_unlock(&t->lock);
		avail += v->bytes;   /* freed by the punch below (estimate) */
		entry_destroy(t, v);
		STAT_ADD(t, evictions, 1);
	}
}

/* ---- the writer thread ---- */

static void degrade(struct ssd_tier *t, const char *what, int err)
{
	atomic_store(&t->backoff_until_ms, clock_coarse_ms() + BACKOFF_MS);
	if (!atomic_exchange(&t->degraded, true))
		log_warn("ssd tier %s: %s: %s; degraded: insertions refused, retried in %d ms",
			 t->dir, what, err ? strerror(err) : tfs_strerror(TFS_E_IO), BACKOFF_MS);
}

static bool in_backoff(struct ssd_tier *t)
{
	return atomic_load(&t->degraded) && clock_coarse_ms() < atomic_load(&t->backoff_until_ms);
}

/* The index record of entry e (its access statistics as they are now). */
static void entry_record(const struct ssd_tier *t, const struct ssd_entry *e,
			 struct cache_index_rec *rec)
{
	rec->data_len = e->data_len;
	rec->block_size = SSD_BLOCK;
	rec->nblocks = e->nblocks;
	memcpy(rec->sums, e->sums, 4 * (size_t)e->nblocks);
	rec->hits = e->hits;
	rec->last_access = e->last_access;
	rec->policy_stat = e->state == ENTRY_STORED && t->policy ?
				   evict_policy_stat_get(t->policy, e->lo) : e->policy_stat;
}

/* A store job's first half: room, then the bytes into the object's file.
 * false when the job was dropped (released, counted). */
static bool job_write(struct ssd_tier *t, struct job *j)
{
	struct ssd_entry *e = j->e;
	bool rejected = false;
	ssize_t n;
	int err = 0;

	j->fd = -1;
	if (in_backoff(t))
		goto drop;
	if (!make_room(t, e->bytes, j->force ? NULL : &e->lo, j->force ? NULL : e->key,
		       &rejected))
		goto drop;
	pthread_mutex_lock(&t->lock);
	t->reserved += e->bytes;
	pthread_mutex_unlock(&t->lock);
	j->reserved = true;
	block_sums(j->data, j->len, e->sums);
	j->fd = obj_file_open(t, e->obj->hi, e->obj->lo, true);
	if (j->fd < 0) {
		err = errno;
	} else {
		n = chunk_pwrite(j->fd, j->data, j->len, e->index * t->chunk_size);
		if (n < 0)
			err = errno;
		else if ((size_t)n != j->len)
			err = EIO;
	}
	if (!err)
		return true;
	degrade(t, "chunk write", err);
	STAT_ADD(t, io_errors, 1);
	if (j->fd >= 0) {
		/* give back what a partial write took (an ENOSPC, say) */
		(void)fallocate(j->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)(e->index * t->chunk_size), (off_t)e->bytes);
		close(j->fd);
		j->fd = -1;
	}
drop:
	STAT_ADD(t, dropped, !rejected);
	STAT_ADD(t, rejected, rejected);
	return false;
}

/* Read len bytes at off of object (hi, lo)'s file around the page cache
 * (O_DIRECT): the device's bytes, not a cached copy.  The bytes read, or
 * -1 with *err its errno (EINVAL: the filesystem refuses O_DIRECT, as
 * tmpfs does); *err is 0 after a read. */
static ssize_t direct_pread(struct ssd_tier *t, uint64_t hi, uint64_t lo, void *buf, size_t len,
			    uint64_t off, int *err)
{
	char name[NAME_BUF];
	ssize_t n;
	int fd;

	obj_name(name, hi, lo);
	fd = openat(t->objects_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	do {
		n = pread(fd, buf, len, (off_t)off);
	} while (n < 0 && errno == EINTR);
	*err = n < 0 ? errno : 0;
	close(fd);
	return n;
}

/* Read job j's bytes back from the disk, around the page cache when the
 * filesystem allows it, and compare them with their checksums: 0 when
 * they match, EBADMSG when they do not, else the read's errno. */
static int job_verify(struct ssd_tier *t, struct job *j)
{
	struct ssd_entry *e = j->e;
	uint64_t off = e->index * t->chunk_size;
	ssize_t n;
	int fd, derr;

	if (!t->verify)
		return 0;
	/* through the page cache where the filesystem refuses O_DIRECT or
	 * the read comes back short; any other error is the device's answer,
	 * which the page cache's copy must not hide */
	n = direct_pread(t, e->obj->hi, e->obj->lo, t->rbuf, (size_t)e->bytes, off, &derr);
	if (n != (ssize_t)e->bytes && n != (ssize_t)j->len) {
		if (derr && derr != EINVAL)
			return derr;
		fd = obj_file_open(t, e->obj->hi, e->obj->lo, false);
		n = fd < 0 ? -1 : rw_full(fd, t->rbuf, j->len, off, false);
		derr = n < 0 ? errno : EIO;   /* short: the file lost its end */
		if (fd >= 0)
			close(fd);
	}
	if (n < (ssize_t)j->len)
		return derr;
	for (uint32_t b = 0; b < e->nblocks; b++) {
		size_t boff = (size_t)b * SSD_BLOCK;
		size_t m = j->len - boff < SSD_BLOCK ? j->len - boff : SSD_BLOCK;

		if (block_sum(t->rbuf + boff, m) != e->sums[b])
			return EBADMSG;
	}
	return 0;
}

/* A store job's data is no longer needed: the caller's buffer released,
 * or our copy freed. */
static void job_release(struct ssd_tier *t, struct job *j)
{
	if (j->spill) {
		free((void *)(uintptr_t)j->data);
		pthread_mutex_lock(&t->lock);
		t->spill_used -= j->len;
		pthread_mutex_unlock(&t->lock);
	} else {
		j->release(j->arg);
	}
}

/* Finish a store job the batch could not keep: its bytes punched out, its
 * entry gone, its buffer released. */
static void job_abandon(struct ssd_tier *t, struct job *j)
{
	struct ssd_entry *e = j->e;

	pthread_mutex_lock(&t->lock);
	table_remove(t, e);
	e->pending = NULL;
	if (j->reserved)
		t->reserved -= e->bytes;
	pthread_mutex_unlock(&t->lock);
	if (j->fd >= 0)
		close(j->fd);
	entry_destroy(t, e);   /* no record: the delete finds none */
	job_release(t, j);
}

/* Store jobs js[0..n), written (job_write) and still holding their files
 * open: one fdatasync per file, each chunk read back and checked, then
 * every record in one index batch, and only then visible to readers. */
static void batch_finish(struct ssd_tier *t, struct job **js, size_t n)
{
	struct cache_index_batch *b = cache_index_batch_new();
	struct cache_index_rec *rec = malloc(sizeof(*rec));
	bool ok[WRITE_BATCH_JOBS];
	uint64_t now = clock_wall_coarse_s();
	int rc;

	for (size_t i = 0; i < n; i++) {
		int err = 0;

		ok[i] = b && rec;
		for (size_t k = 0; k < i && ok[i]; k++)   /* one sync per file */
			if (js[k]->e->obj == js[i]->e->obj)
				goto synced;
		if (ok[i] && fdatasync(js[i]->fd) < 0) {
			err = errno;
			degrade(t, "sync", err);
			STAT_ADD(t, io_errors, 1);
			ok[i] = false;
		}
synced:
		if (ok[i] && (err = job_verify(t, js[i])) == EBADMSG) {
			log_warn("ssd tier %s: a chunk of '%s' read back wrong after it was written; "
				 "not kept", t->dir, js[i]->e->key);
			STAT_ADD(t, checksum_failures, 1);
			ok[i] = false;
		} else if (ok[i] && err) {
			/* not kept; the device's failure (not a file gone, nor a
			 * descriptor or memory short) degrades the tier */
			if (read_errno(err) == READ_IOERR) {
				degrade(t, "read back", err);
				STAT_ADD(t, io_errors, 1);
			}
			ok[i] = false;
		}
		if (ok[i]) {
			struct chunk_id id = entry_id(js[i]->e);

			js[i]->e->last_access = now;
			entry_record(t, js[i]->e, rec);
			cache_index_batch_chunk_put(b, &id, rec);
		}
	}
	rc = b ? cache_index_batch_commit(t->ix, b) : TFS_E_NOMEM;
	if (rc != TFS_OK)
		degrade(t, "index write", rc == TFS_E_NOSPC ? ENOSPC : EIO);
	for (size_t i = 0; i < n; i++) {
		struct job *j = js[i];
		struct ssd_entry *e = j->e;

		if (!ok[i] || rc != TFS_OK) {
			if (rc != TFS_OK && ok[i])
				STAT_ADD(t, io_errors, 1);
			STAT_ADD(t, dropped, 1);
			job_abandon(t, j);
			continue;
		}
		close(j->fd);
		pthread_mutex_lock(&t->lock);
		/* PENDING -> STORED: now readers may see it.  A fetch ahead
		 * keeps its mark (and its bytes in ahead_bytes): being written
		 * is not being read, nor being evicted. */
		table_unlink(t, e);
		t->reserved -= e->bytes;
		e->state = ENTRY_STORED;
		e->pending = NULL;
		e->pinned = t->pins && pin_set_tier(t->pins, e->key) == PIN_SSD;
		e->checked = (uint64_t)clock_coarse_ms() / 1000;
		table_insert(t, e);
		pthread_mutex_unlock(&t->lock);
		STAT_ADD(t, insertions, 1);
		STAT_ADD(t, bytes_fetched, j->len);
		job_release(t, j);
	}
	if (rc == TFS_OK && atomic_load(&t->degraded) && !in_backoff(t) &&
	    atomic_exchange(&t->degraded, false))
		log_info("ssd tier %s: writes succeed again; no longer degraded", t->dir);
	cache_index_batch_free(b);
	free(rec);
}

struct drop_ctx {
	struct ssd_tier *t;
	const char *keep;
	struct cache_index_batch *b;
	size_t n;
};

static int drop_cb(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	struct drop_ctx *d = ctx;
	struct ssd_tier *t = d->t;
	struct ssd_entry *e;
	uint64_t hi, lo;

	if ((d->keep && strcmp(id->etag, d->keep) == 0) || !id_fits(id))
		return 0;
	id_hash(id, &hi, &lo);
	pthread_mutex_lock(&t->lock);
	e = table_find(t, id, hi, lo);
	/* A PENDING one was queued after the drop was asked: keep it. */
	if (e && e->state != ENTRY_STORED) {
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	if (e)
		table_remove(t, e);
	pthread_mutex_unlock(&t->lock);
	/* the whole file goes below, even held: a reader that has it open
	 * keeps reading it */
	if (e)
		entry_free(t, e);
	cache_index_batch_chunk_del(d->b, id);
	{
		char name[NAME_BUF];
		uint64_t ohi, olo;

		obj_hash(id->key, id->etag, &ohi, &olo);
		obj_name(name, ohi, olo);
		(void)unlinkat(t->objects_fd, name, 0);
	}
	d->n++;
	if (cache_index_batch_count(d->b) >= BATCH_MAX)
		(void)cache_index_batch_commit(t->ix, d->b);
	return 0;
}

static void job_drop(struct ssd_tier *t, struct job *j)
{
	struct drop_ctx d = { t, j->keep, cache_index_batch_new(), 0 };

	if (!d.b)
		return;
	(void)cache_index_chunk_scan_key(t->ix, j->key, drop_cb, &d);
	(void)cache_index_batch_commit(t->ix, d.b);
	cache_index_batch_free(d.b);
	if (d.n)
		log_debug("ssd tier: dropped %zu chunks of old versions of %s", d.n, j->key);
}

/* The next job, and the doomed list, for the writer (lock held); NULL job
 * when there is none.  A drop job is taken only when it comes first. */
static struct job *job_pop(struct ssd_tier *t, bool stores_only)
{
	struct job *j = t->q_head;

	if (!j || (stores_only && j->kind != JOB_STORE))
		return NULL;
	t->q_head = j->next;
	if (!t->q_head)
		t->q_tail = NULL;
	/* a store counts against queue_max until it is done (job_done): the
	 * buffers of the jobs being written are referenced too */
	if (j->kind == JOB_DROP)
		t->q_drops--;
	return j;
}

/* A job is over: out of the queue's count (a store's), and freed. */
static void job_done(struct ssd_tier *t, struct job *j)
{
	if (j->kind == JOB_STORE) {
		pthread_mutex_lock(&t->lock);
		if (!j->spill) {
			t->q_stores--;
			t->q_store_bytes -= j->len;
		}
		t->q_bytes -= bytes_of(j->len);
		pthread_cond_broadcast(&t->done_cond);   /* room in the queue */
		pthread_mutex_unlock(&t->lock);
	}
	free(j->key);
	free(j);
}

/* Wait (lock held) up to a second for work; false when the second passed
 * with none. */
static bool writer_idle_wait(struct ssd_tier *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 1;
	while (!t->q_head && !t->doomed && !t->stopping)
		if (pthread_cond_timedwait(&t->work_cond, &t->lock, &ts) == ETIMEDOUT)
			return t->q_head || t->doomed || t->stopping;
	return true;
}

static void *writer_main(void *arg)
{
	struct ssd_tier *t = arg;

	for (;;) {
		struct job *js[WRITE_BATCH_JOBS], *j;
		struct ssd_entry *d;
		size_t n = 0;

		pthread_mutex_lock(&t->lock);
		while (!t->q_head && !t->doomed && !t->stopping) {
			/* idle: a second with nothing to write scrubs a second's
			 * worth (the kernel reads passthrough files unchecked;
			 * this is what notices the disk changing them) */
			if (t->scrub_rate && !writer_idle_wait(t)) {
				pthread_mutex_unlock(&t->lock);
				(void)ssd_tier_scrub(t, t->scrub_rate);
				pthread_mutex_lock(&t->lock);
				continue;
			}
			if (!t->scrub_rate)
				pthread_cond_wait(&t->work_cond, &t->lock);
		}
		/* Doomed entries first: a re-store of the same chunk may be the
		 * next job, and its bytes must not be punched after it is written. */
		d = t->doomed;
		t->doomed = NULL;
		t->doomed_busy = d != NULL;
		j = job_pop(t, false);
		if (!j && !d && t->stopping) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		pthread_mutex_unlock(&t->lock);

		doomed_destroy(t, d);
		if (j && j->kind == JOB_DROP) {
			job_drop(t, j);
			job_done(t, j);
			n = 1;
		} else if (j) {
			/* a batch: the store jobs already queued, up to a bound;
			 * none is waited for */
			size_t kept = 0;

			for (;;) {
				n++;
				if (job_write(t, j)) {
					js[kept++] = j;
				} else {
					job_abandon(t, j);
					job_done(t, j);
				}
				if (kept == WRITE_BATCH_JOBS)
					break;
				/* entries doomed since d was taken go first: the
				 * next job may store one of their chunks again, at
				 * the same place, and its bytes and record must not
				 * be deleted after they are written */
				pthread_mutex_lock(&t->lock);
				j = t->doomed ? NULL : job_pop(t, true);
				pthread_mutex_unlock(&t->lock);
				if (!j)
					break;
			}
			batch_finish(t, js, kept);
			for (size_t i = 0; i < kept; i++)
				job_done(t, js[i]);
		}

		pthread_mutex_lock(&t->lock);
		t->doomed_busy = false;
		t->seq_done += n;
		pthread_cond_broadcast(&t->done_cond);
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

/* ---- open: directory, identity, reconcile ---- */

/* Check, create or tighten the cache directory; open it and objects/. */
static int dir_prepare(struct ssd_tier *t, char *err, size_t errlen)
{
	struct stat st, st2;
	bool ours = false;
	size_t others = 0;
	DIR *d = NULL;
	struct dirent *de;
	int fd;

	if (lstat(t->dir, &st) < 0) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "cache directory %s: %s", t->dir, strerror(errno));
			return TFS_E_IO;
		}
		/* Only the last component is created: a missing parent is more
		 * likely a typo than a wish for a new tree. */
		if (mkdir(t->dir, 0700) < 0 && errno != EEXIST) {
			if (errno == ENOENT)
				snprintf(err, errlen,
					 "cannot create cache directory %s: its parent directory does not exist (create it first)",
					 t->dir);
			else
				snprintf(err, errlen, "cannot create cache directory %s: %s", t->dir,
					 strerror(errno));
			return errno == ENOSPC ? TFS_E_NOSPC : TFS_E_IO;
		}
		if (lstat(t->dir, &st) < 0) {
			snprintf(err, errlen, "cache directory %s: %s", t->dir, strerror(errno));
			return TFS_E_IO;
		}
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "cache directory %s is a symbolic link; refusing to use it (give the real path)",
			 t->dir);
		return TFS_E_INVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cache directory %s is not a directory", t->dir);
		return TFS_E_NOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "cache directory %s is owned by uid %u, not by this user (uid %u); refusing to use it",
			 t->dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return TFS_E_ACCESS;
	}
	fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		snprintf(err, errlen, "cache directory %s changed while being opened", t->dir);
		if (fd >= 0)
			close(fd);
		return TFS_E_IO;
	}
	t->dir_fd = fd;

	/* Never write into (or wipe) a directory holding things we did not put
	 * there: only an empty one or one with our layout (this format's, or
	 * format 1's chunks/) is a cache. */
	fd = dup(t->dir_fd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot list cache directory %s: %s", t->dir, strerror(errno));
		return TFS_E_IO;
	}
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "index") || !strcmp(de->d_name, "objects") ||
		    !strcmp(de->d_name, "chunks"))
			ours = true;
		else if (strcmp(de->d_name, "lost+found") != 0)   /* a fresh filesystem's root */
			others++;
	}
	closedir(d);
	if (others && !ours) {
		snprintf(err, errlen, "%s is not a tierfs cache directory (it holds other files and no index/ or objects/); refusing to use or wipe it",
			 t->dir);
		return TFS_E_INVAL;
	}

	/* Only now that it is known to be ours. */
	if ((st2.st_mode & 07777) != 0700 && fchmod(t->dir_fd, 0700) < 0) {
		snprintf(err, errlen, "cannot set mode 0700 on cache directory %s: %s", t->dir,
			 strerror(errno));
		return TFS_E_ACCESS;
	}
	for (int i = 0; i < 2; i++) {
		const char *sub = i ? "objects" : "index";
		if (mkdirat(t->dir_fd, sub, 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s/%s: %s", t->dir, sub, strerror(errno));
			return errno == ENOSPC ? TFS_E_NOSPC : TFS_E_IO;
		}
		if (fstatat(t->dir_fd, sub, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid()) {
			snprintf(err, errlen, "%s/%s is not a directory owned by this user; refusing to use it",
				 t->dir, sub);
			return TFS_E_ACCESS;
		}
	}
	t->objects_fd = openat(t->dir_fd, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->objects_fd < 0) {
		snprintf(err, errlen, "cannot open %s/objects: %s", t->dir, strerror(errno));
		return TFS_E_IO;
	}
	return TFS_OK;
}

/* Is name "XX" (a subdirectory of objects/, or of format 1's chunks/)? */
static bool is_subdir_name(const char *s)
{
	return hexval(s[0]) >= 0 && hexval(s[1]) >= 0 && s[2] == '\0';
}

/* Is name 32 hex digits (format 1: optionally followed by ".tmp")? */
static bool is_file_name(const char *s)
{
	for (int i = 0; i < 32; i++)
		if (hexval(s[i]) < 0)
			return false;
	return s[32] == '\0' || strcmp(s + 32, ".tmp") == 0;
}

/* Called per file under DIR/XX/ with a name of ours. */
typedef void (*file_fn)(struct ssd_tier *t, int subfd, const char *sub, const char *name,
			void *ctx);

/* Visit the files of ours in every XX/ directory of the directory dirfd.
 * Names we would never write are left alone (they are not ours). */
static int files_walk(struct ssd_tier *t, int dirfd, file_fn fn, void *ctx)
{
	int fd = dup(dirfd);
	DIR *top = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!top) {
		if (fd >= 0)
			close(fd);
		return TFS_E_IO;
	}
	rewinddir(top);
	while ((de = readdir(top)) != NULL) {
		struct dirent *fe;
		DIR *sd;
		int sfd;

		if (!is_subdir_name(de->d_name))
			continue;
		sfd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			continue;
		sd = fdopendir(sfd);
		if (!sd) {
			close(sfd);
			continue;
		}
		while ((fe = readdir(sd)) != NULL)
			if (is_file_name(fe->d_name))
				fn(t, sfd, de->d_name, fe->d_name, ctx);
		closedir(sd);
	}
	closedir(top);
	return TFS_OK;
}

static void wipe_file(struct ssd_tier *t, int subfd, const char *sub, const char *name, void *ctx)
{
	if (unlinkat(subfd, name, 0) == 0)
		(*(size_t *)ctx)++;
}

/* Delete every object file (ours by name and place), format 1's chunk
 * files, and every record. */
static int cache_wipe(struct ssd_tier *t, bool quiet, char *err, size_t errlen)
{
	size_t n = 0;
	int rc = cache_index_clear(t->ix), legacy;

	if (rc == TFS_OK)
		rc = files_walk(t, t->objects_fd, wipe_file, &n);
	legacy = openat(t->dir_fd, "chunks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rc == TFS_OK && legacy >= 0)
		rc = files_walk(t, legacy, wipe_file, &n);
	if (legacy >= 0)
		close(legacy);
	if (rc != TFS_OK)
		snprintf(err, errlen, "cannot wipe cache directory %s: %s", t->dir, tfs_strerror(rc));
	else if (!quiet || n)
		log_info("ssd tier %s: wiped (%zu files deleted)", t->dir, n);
	return rc;
}

static int identity_check(struct ssd_tier *t, const struct ssd_tier_config *cfg, char *err,
			  size_t errlen)
{
	uint32_t format = 0;
	uint64_t cs = 0;
	char *owner = NULL;
	char why[1024];
	int rc, w = 0;

	rc = cache_index_identity_get(t->ix, &format, &owner, &cs);
	if (rc == TFS_MISS) {
		/* A new cache, or an index lost with its files left: whose bytes
		 * those are is unknown, so none is kept. */
		rc = cache_wipe(t, true, err, errlen);
		goto put;
	}
	if (rc != TFS_OK) {
		if (!cfg->wipe) {
			snprintf(err, errlen, "the cache index in %s has no valid identity (%s); use --cache-wipe to start over",
				 t->dir, tfs_strerror(rc));
			goto out;
		}
		log_info("ssd tier %s: unreadable identity; wiping as asked", t->dir);
		rc = cache_wipe(t, false, err, errlen);
		goto put;
	}
	why[0] = '\0';
	if (format != SSD_FORMAT_VERSION)
		w += snprintf(why + w, sizeof(why) - (size_t)w,
			      "; its format is %u (%s), this tierfs reads and writes %u", format,
			      format == 1 ? "a file per chunk" : "unknown", SSD_FORMAT_VERSION);
	if (w < (int)sizeof(why) && strcmp(owner, cfg->owner) != 0)
		w += snprintf(why + w, sizeof(why) - (size_t)w, "; it belongs to '%s', not '%s'", owner,
			      cfg->owner);
	if (w < (int)sizeof(why) && cs != cfg->chunk_size)
		w += snprintf(why + w, sizeof(why) - (size_t)w,
			      "; its chunk size is %" PRIu64 ", the mount asks %zu", cs, cfg->chunk_size);
	if (!why[0]) {
		rc = TFS_OK;
		goto out;
	}
	if (!cfg->wipe) {
		snprintf(err, errlen, "cache directory %s cannot be used%s; use --cache-wipe to start over",
			 t->dir, why);
		rc = TFS_E_INVAL;
		goto out;
	}
	log_info("ssd tier %s: wiping as asked%s", t->dir, why);
	rc = cache_wipe(t, false, err, errlen);
put:
	if (rc == TFS_OK) {
		rc = cache_index_identity_put(t->ix, SSD_FORMAT_VERSION, cfg->owner, cfg->chunk_size);
		if (rc != TFS_OK)
			snprintf(err, errlen, "cannot write the cache index in %s: %s", t->dir,
				 tfs_strerror(rc));
	}
out:
	free(owner);
	return rc;
}

/* The object files found on disk at open, sorted for lookup by name. */
struct found {
	uint64_t hi, lo;
	uint64_t allocated;   /* bytes the file takes (st_blocks) */
	uint64_t size;        /* its length */
	bool claimed;         /* a record names it */
};

struct reconcile {
	struct found *f;
	size_t n, cap;
	bool nomem;
	struct cache_index_batch *b;
	size_t records, dropped_records, orphans, bad, punched;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

static void reconcile_collect(struct ssd_tier *t, int subfd, const char *sub, const char *name,
			      void *ctx)
{
	struct reconcile *r = ctx;
	struct stat st;
	uint64_t hi, lo;

	if (name[32] != '\0' || name[0] != sub[0] || name[1] != sub[1] ||
	    !parse_hex128(name, &hi, &lo) || fstatat(subfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode)) {
		if (unlinkat(subfd, name, 0) == 0)   /* misplaced or not a file: never served */
			r->bad++;
		return;
	}
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 1024;
		struct found *nf = realloc(r->f, nc * sizeof(*nf));
		if (!nf) {
			r->nomem = true;
			return;
		}
		r->f = nf;
		r->cap = nc;
	}
	r->f[r->n++] = (struct found){ hi, lo, (uint64_t)st.st_blocks * 512, (uint64_t)st.st_size,
				       false };
}

static void batch_maybe_commit(struct ssd_tier *t, struct cache_index_batch *b)
{
	if (cache_index_batch_count(b) >= BATCH_MAX)
		(void)cache_index_batch_commit(t->ix, b);
}

static int reconcile_record(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	struct ssd_tier *t = ((void **)ctx)[0];
	struct reconcile *r = ((void **)ctx)[1];
	struct found key = { 0 }, *f = NULL;
	struct ssd_entry *e;
	uint64_t hi, lo;

	r->records++;
	if (id_fits(id)) {
		obj_hash(id->key, id->etag, &key.hi, &key.lo);
		f = bsearch(&key, r->f, r->n, sizeof(*r->f), found_cmp);
	}
	/* No file, one too short to hold it, or an impossible length or
	 * block size: the record can never serve a read. */
	if (!f || rec->data_len == 0 || rec->data_len > t->chunk_size ||
	    rec->block_size != SSD_BLOCK ||
	    f->size < id->index * t->chunk_size + rec->data_len) {
		cache_index_batch_chunk_del(r->b, id);
		batch_maybe_commit(t, r->b);
		r->dropped_records++;
		return 0;
	}
	id_hash(id, &hi, &lo);
	e = entry_new(id, hi, lo, rec->nblocks);
	if (!e || !(e->obj = obj_get(t, id->key, id->etag, f->hi, f->lo))) {
		free(e);
		return TFS_E_NOMEM;
	}
	e->obj->refs++;
	f->claimed = true;
	e->state = ENTRY_STORED;
	e->data_len = rec->data_len;
	e->bytes = bytes_of(rec->data_len);
	memcpy(e->sums, rec->sums, 4 * (size_t)rec->nblocks);
	e->hits = rec->hits;
	e->last_access = rec->last_access;
	e->policy_stat = rec->policy_stat;
	table_insert(t, e);
	return 0;
}

/* Drop the entries of object o whose bytes have a hole in its file fd:
 * a record over a hole would be counted as stored though its bytes are
 * gone (a cache written by a version that punched before it deleted the
 * record, or a power loss).  Its object file goes with its last entry. */
static void reconcile_holes(struct ssd_tier *t, struct reconcile *r, const struct found *f,
			    struct ssd_obj *o, int fd)
{
	uint64_t nchunks = (f->size + t->chunk_size - 1) / t->chunk_size;
	char name[NAME_BUF];

	for (uint64_t i = 0; i < nchunks; i++) {
		struct chunk_id id = { o->key, o->etag, i };
		struct ssd_entry *e;
		uint64_t hi, lo, off = i * t->chunk_size;
		off_t h;

		id_hash(&id, &hi, &lo);
		e = table_find(t, &id, hi, lo);
		if (!e)
			continue;
		h = lseek(fd, (off_t)off, SEEK_HOLE);
		if (h < 0 || (uint64_t)h >= off + e->data_len)
			continue;
		table_remove(t, e);
		cache_index_batch_chunk_del(r->b, &id);
		batch_maybe_commit(t, r->b);
		r->dropped_records++;
		o->refs--;
		free(e);
	}
	if (o->entries == 0) {
		obj_name(name, f->hi, f->lo);
		if (unlinkat(t->objects_fd, name, 0) == 0)
			r->orphans++;
		obj_maybe_free(t, o);
	}
}

/* An object file with records: space its records do not account for is
 * what a writer killed between its write and its record left behind.
 * When the file's allocated bytes say there is some, punch out the range
 * of every chunk that has no entry.  When they then say there is less
 * than the records count, drop the records over holes. */
static void reconcile_punch(struct ssd_tier *t, struct reconcile *r, const struct found *f)
{
	uint64_t nchunks = (f->size + t->chunk_size - 1) / t->chunk_size;
	struct ssd_obj *o = obj_find(t, f->hi, f->lo);
	char name[NAME_BUF];
	struct stat st;
	int fd;

	if (!o || f->allocated == o->bytes)
		return;
	obj_name(name, f->hi, f->lo);
	fd = openat(t->objects_fd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	for (uint64_t i = 0; f->allocated > o->bytes && i < nchunks; i++) {
		struct chunk_id id = { o->key, o->etag, i };
		uint64_t hi, lo;

		id_hash(&id, &hi, &lo);
		if (!table_find(t, &id, hi, lo) &&
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(i * t->chunk_size), (off_t)t->chunk_size) == 0)
			r->punched++;
	}
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_blocks * 512 < o->bytes)
		reconcile_holes(t, r, f, o, fd);
	close(fd);
}

/* Build the eviction policy over the loaded entries, restoring each one's
 * statistics.  Its key capacity is the number of EVICT_SSD_KEY_GRAIN chunks
 * (or full chunks, when smaller) the byte bound holds (the whole
 * filesystem's worth when only min_free_pct bounds the tier), at most
 * EVICT_SSD_KEYS_MAX, and never less than what is loaded.  Counted in full
 * chunks, a dataset of 100 KB images would fill 1/80 of the bytes with
 * 8 MiB chunks: the byte bound, not the key count, must be what binds.
 * A key costs the policy about 87 bytes (TinyLFU): 4M keys, 348 MiB, for
 * a tier of 256 GiB and more (0.13% of the bytes it bounds). */
static int policy_load(struct ssd_tier *t)
{
	uint64_t bytes = t->capacity, keys;
	struct statvfs sv;

	if (!bytes && fstatvfs(t->dir_fd, &sv) == 0)
		bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	t->policy_bytes = bytes;
	keys = evict_ssd_keys(bytes, t->chunk_size);
	if (keys < t->entries)
		keys = t->entries;
	t->policy = evict_policy_new(t->policy_kind, (size_t)keys);
	if (!t->policy)
		return TFS_E_NOMEM;
	evict_policy_set_weight_capacity(t->policy, bytes / POLICY_WEIGHT_UNIT);
	evict_policy_set_front(t->policy, t->front_bytes / POLICY_WEIGHT_UNIT);
	for (size_t i = 0; i < t->n_buckets; i++)
		for (struct ssd_entry *e = t->buckets[i]; e; e = e->hnext) {
			policy_insert(t, e);
			evict_policy_stat_set(t->policy, e->lo, e->policy_stat);
		}
	return TFS_OK;
}

static int reconcile(struct ssd_tier *t, char *err, size_t errlen)
{
	struct reconcile r = { 0 };
	void *ctx[2] = { t, &r };
	uint64_t t0 = clock_mono_us(), ev0;
	int rc;

	r.b = cache_index_batch_new();
	if (!r.b) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	rc = files_walk(t, t->objects_fd, reconcile_collect, &r);
	if (rc == TFS_OK && r.nomem)
		rc = TFS_E_NOMEM;
	if (rc != TFS_OK)
		goto out;
	if (r.n)
		qsort(r.f, r.n, sizeof(*r.f), found_cmp);
	rc = cache_index_chunk_scan(t->ix, reconcile_record, ctx);
	if (rc != TFS_OK)
		goto out;
	for (size_t i = 0; i < r.n; i++) {
		char name[NAME_BUF];

		if (r.f[i].claimed) {
			reconcile_punch(t, &r, &r.f[i]);
			continue;
		}
		/* no record names it: a writer killed before its first record */
		obj_name(name, r.f[i].hi, r.f[i].lo);
		if (unlinkat(t->objects_fd, name, 0) == 0)
			r.orphans++;
	}
	rc = cache_index_batch_commit(t->ix, r.b);
	if (rc != TFS_OK)
		goto out;
	ev0 = atomic_load(&t->evictions);
	rc = policy_load(t);
	if (rc != TFS_OK)
		goto out;
	(void)make_room(t, 0, NULL, NULL, NULL);
	assert(table_check(t));   /* the bounds may have shrunk since last time */
	log_info("ssd tier %s: %" PRIu64 " chunks (%" PRIu64 " MiB) ready in %llu ms: %zu records, %zu dropped (no file or bytes), %zu files without records and %zu bad deleted, %zu leftover chunk ranges punched, %" PRIu64 " evicted to fit the bounds",
		 t->dir, t->entries, t->bytes_used >> 20,
		 (unsigned long long)((clock_mono_us() - t0) / 1000), r.records, r.dropped_records,
		 r.orphans, r.bad, r.punched, (uint64_t)atomic_load(&t->evictions) - ev0);
out:
	if (rc != TFS_OK)
		snprintf(err, errlen, "cannot load the cache in %s: %s", t->dir, tfs_strerror(rc));
	cache_index_batch_free(r.b);
	free(r.f);
	return rc;
}

static void tier_free(struct ssd_tier *t)
{
	for (size_t i = 0; t->buckets && i < t->n_buckets; i++) {
		struct ssd_entry *e = t->buckets[i], *next;
		for (; e; e = next) {
			next = e->hnext;
			free(e);
		}
	}
	for (size_t i = 0; t->obuckets && i < t->n_obuckets; i++) {
		struct ssd_obj *o = t->obuckets[i], *next;
		for (; o; o = next) {
			next = o->hnext;
			free(o);
		}
	}
	cache_index_close(t->ix);
	if (t->objects_fd >= 0)
		close(t->objects_fd);
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->scrub_lock);
	pthread_cond_destroy(&t->work_cond);
	pthread_cond_destroy(&t->done_cond);
	evict_policy_free(t->policy);
	free(t->buckets);
	free(t->obuckets);
	free(t->rbuf);
	free(t->sbuf);
	free(t->dir);
	free(t);
}

int ssd_tier_open(const struct ssd_tier_config *cfg, struct ssd_tier **out, char *err,
		  size_t errlen)
{
	struct ssd_tier *t;
	size_t rlen;
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!cfg->dir || !cfg->dir[0] || !cfg->owner || cfg->chunk_size == 0 ||
	    cfg->chunk_size / SSD_BLOCK > CACHE_INDEX_BLOCKS_MAX || cfg->queue_max == 0 ||
	    cfg->min_free_pct > 99) {
		snprintf(err, errlen, "invalid SSD cache configuration (directory, owner, chunk size, queue length >= 1, min free 0..99)");
		return TFS_E_INVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return TFS_E_NOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->scrub_lock, NULL);
	{
		/* the writer's idle second (writer_idle_wait) is monotonic */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&t->work_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_cond_init(&t->done_cond, NULL);
	t->dir_fd = t->objects_fd = -1;
	t->chunk_size = cfg->chunk_size;
	t->capacity = cfg->capacity;
	t->epoch = 1;
	t->min_free_pct = cfg->min_free_pct;
	t->policy_kind = cfg->policy;
	t->queue_max = cfg->queue_max;
	t->queue_bytes = cfg->queue_bytes;
	t->spill_max = cfg->spill_max;
	t->verify = !cfg->no_verify;
	t->scrub_rate = cfg->scrub_rate;
	t->front_bytes = cfg->front_bytes;
	t->n_buckets = BUCKETS_MIN;
	t->n_obuckets = OBJ_BUCKETS_MIN;
	t->dir = strdup(cfg->dir);
	/* "link/" would make lstat follow a symlink: drop trailing slashes. */
	for (size_t n = t->dir ? strlen(t->dir) : 0; n > 1 && t->dir[n - 1] == '/'; n--)
		t->dir[n - 1] = '\0';
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	t->obuckets = calloc(t->n_obuckets, sizeof(*t->obuckets));
	rlen = (size_t)bytes_of(cfg->chunk_size);
	if (posix_memalign((void **)&t->rbuf, DIO_ALIGN, rlen) != 0)
		t->rbuf = NULL;
	if (posix_memalign((void **)&t->sbuf, DIO_ALIGN, rlen) != 0)
		t->sbuf = NULL;
	if (!t->dir || !t->buckets || !t->obuckets || !t->rbuf || !t->sbuf) {
		snprintf(err, errlen, "out of memory");
		rc = TFS_E_NOMEM;
		goto fail;
	}
	rc = dir_prepare(t, err, errlen);
	if (rc != TFS_OK)
		goto fail;
	rc = cache_index_open(t->dir, &t->ix, err, errlen);
	if (rc != TFS_OK && rc != TFS_E_ACCESS && cfg->wipe) {
		log_info("ssd tier %s: %s; deleting the index as asked", t->dir, err);
		rc = cache_index_destroy(t->dir, err, errlen);
		if (rc == TFS_OK)
			rc = cache_index_open(t->dir, &t->ix, err, errlen);
	}
	if (rc != TFS_OK)
		goto fail;
	rc = identity_check(t, cfg, err, errlen);
	if (rc != TFS_OK)
		goto fail;
	rc = reconcile(t, err, errlen);
	if (rc != TFS_OK)
		goto fail;
	if (pthread_create(&t->writer, NULL, writer_main, t) != 0) {
		snprintf(err, errlen, "cannot start the SSD writer thread");
		rc = TFS_E_NOMEM;
		goto fail;
	}
	t->writer_started = true;
	*out = t;
	return TFS_OK;
fail:
	tier_free(t);
	return rc;
}

/* Write the access statistics reads changed back to the index, so the
 * next run's eviction knows what was hot.  A batch per BATCH_MAX records
 * bounds the memory the batch takes. */
static void stats_persist(struct ssd_tier *t)
{
	struct cache_index_batch *b = cache_index_batch_new();
	struct cache_index_rec *rec = malloc(sizeof(*rec));
	size_t n = 0;

	if (!b || !rec)
		goto out;
	for (size_t i = 0; i < t->n_buckets; i++) {
		for (struct ssd_entry *e = t->buckets[i]; e; e = e->hnext) {
			struct chunk_id id = entry_id(e);

			if (e->state != ENTRY_STORED)
				continue;
			entry_record(t, e, rec);
			if (!e->touched && rec->policy_stat == e->policy_stat)
				continue;
			cache_index_batch_chunk_put(b, &id, rec);
			n++;
			batch_maybe_commit(t, b);
		}
	}
	(void)cache_index_batch_commit(t->ix, b);
	log_debug("ssd tier %s: access statistics of %zu chunks saved", t->dir, n);
out:
	cache_index_batch_free(b);
	free(rec);
}

void ssd_tier_close(struct ssd_tier *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_signal(&t->work_cond);
	pthread_mutex_unlock(&t->lock);
	if (t->writer_started)
		pthread_join(t->writer, NULL);   /* it drains every queued job first */
	assert(!t->q_head && !t->doomed && t->entries == t->n_table);
	assert(table_check(t));
	stats_persist(t);
	tier_free(t);
}

/* ---- the read path ---- */

/* Drop an entry a reader found bad, if it is still the one it read. */
static void read_drop(struct ssd_tier *t, const struct chunk_id *id, uint64_t hi, uint64_t lo,
		      uint64_t gen)
{
	struct ssd_entry *e;

	pthread_mutex_lock(&t->lock);
	e = table_find(t, id, hi, lo);
	if (e && e->gen == gen && e->state == ENTRY_STORED) {
		table_remove(t, e);
		e->dnext = t->doomed;
		t->doomed = e;
		pthread_cond_signal(&t->work_cond);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Is the entry of generation gen still stored?  (A reader that found bad
 * bytes under an entry evicted meanwhile read a hole being punched: a
 * plain miss, not a checksum failure.) */
static bool still_stored(struct ssd_tier *t, const struct chunk_id *id, uint64_t hi, uint64_t lo,
			 uint64_t gen)
{
	struct ssd_entry *e;
	bool yes;

	pthread_mutex_lock(&t->lock);
	e = table_find(t, id, hi, lo);
	yes = e && e->gen == gen && e->state == ENTRY_STORED;
	pthread_mutex_unlock(&t->lock);
	return yes;
}

size_t ssd_tier_span_max(size_t len)
{
	/* unaligned: one block more on each side */
	return (len + SSD_BLOCK - 1) / SSD_BLOCK * SSD_BLOCK + SSD_BLOCK;
}

/* ssd_tier_read_range(), an access of the policy only when access. */
static int read_range(struct ssd_tier *t, const struct chunk_id *id, size_t expect_len,
		      size_t off, size_t len, void *buf, size_t *span_off, size_t *span_len,
		      bool access)
{
	uint32_t sums[CACHE_INDEX_BLOCKS_MAX];
	uint64_t hi, lo, dlen = 0, gen, ohi = 0, olo = 0;
	size_t first, last;
	struct ssd_entry *e;
	enum read_result r;

	*span_off = *span_len = 0;
	if (!id_fits(id) || len == 0 || off + len > expect_len)
		goto miss;
	id_hash(id, &hi, &lo);
	first = off / SSD_BLOCK;
	last = (off + len - 1) / SSD_BLOCK;
	pthread_mutex_lock(&t->lock);
	if (access)
		evict_policy_access(t->policy, lo);
	e = table_find(t, id, hi, lo);
	if (e && e->state == ENTRY_PENDING && e->pending && e->data_len == expect_len) {
		/* a reader's chunk the writer has yet to write, in our copy:
		 * served from there rather than fetched again (the copy is
		 * freed only after it leaves the table or becomes STORED) */
		*span_off = first * SSD_BLOCK;
		*span_len = (last + 1) * SSD_BLOCK < e->data_len ? (last + 1) * SSD_BLOCK - *span_off
								 : (size_t)e->data_len - *span_off;
		memcpy(buf, e->pending + *span_off, *span_len);
		pthread_mutex_unlock(&t->lock);
		STAT_ADD(t, hits, 1);
		STAT_ADD(t, bytes_served, len);
		return TFS_OK;
	}
	if (e && e->state == ENTRY_STORED && e->data_len != expect_len) {
		/* The object's version fixes its chunks' lengths: a record of
		 * another length is damaged, and kept it would never serve a read
		 * nor let the chunk be stored again.  Dropped, like bad bytes. */
		dlen = e->data_len;
		table_remove(t, e);
		e->dnext = t->doomed;
		t->doomed = e;
		pthread_cond_signal(&t->work_cond);
		pthread_mutex_unlock(&t->lock);
		STAT_ADD(t, checksum_failures, 1);
		log_debug("ssd tier: stored chunk %s#%" PRIu64 " has length %" PRIu64 ", not %zu; dropped",
			  id->key, id->index, dlen, expect_len);
		goto miss;
	}
	if (!e || e->state != ENTRY_STORED) {
		pthread_mutex_unlock(&t->lock);
		goto miss;
	}
	dlen = e->data_len;
	gen = e->gen;
	ohi = e->obj->hi;
	olo = e->obj->lo;
	memcpy(sums, e->sums + first, 4 * (last - first + 1));
	/* Counted as an access now: a read that then fails drops the entry,
	 * so the stats of a failed read do not outlive it. */
	entry_read(t, e);
	pthread_mutex_unlock(&t->lock);

	*span_off = first * SSD_BLOCK;
	*span_len = (last + 1) * SSD_BLOCK < dlen ? (last + 1) * SSD_BLOCK - *span_off
						  : (size_t)dlen - *span_off;
	r = span_read(t, -1, ohi, olo, id->index * t->chunk_size, *span_off, *span_len, sums, buf);
	if (r == READ_OK) {
		STAT_ADD(t, hits, 1);
		STAT_ADD(t, bytes_served, len);
		return TFS_OK;
	}
	*span_off = *span_len = 0;
	if (r == READ_BUSY) {
		log_debug("ssd tier: chunk %s#%" PRIu64 " not read now (out of descriptors or "
			  "memory); kept", id->key, id->index);
		goto miss;
	}
	if (r == READ_BAD && !still_stored(t, id, hi, lo, gen))
		goto miss;   /* evicted while read: its hole is no corruption */
	if (r == READ_BAD)
		STAT_ADD(t, checksum_failures, 1);
	else if (r == READ_IOERR)
		STAT_ADD(t, io_errors, 1);
	log_debug("ssd tier: stored chunk %s#%" PRIu64 " unusable (%s); dropped", id->key, id->index,
		  r == READ_BAD ? "bad checksum or short file" : r == READ_GONE ? "file gone" :
		  "I/O error");
	read_drop(t, id, hi, lo, gen);
miss:
	STAT_ADD(t, misses, 1);
	return TFS_MISS;
}

/* The length of chunk id if a reader can read it: STORED, or PENDING in
 * our copy; else 0. */
static size_t readable_len(struct ssd_tier *t, const struct chunk_id *id)
{
	struct ssd_entry *e = NULL;
	uint64_t hi, lo;
	size_t len = 0;

	if (!id_fits(id))
		return 0;
	id_hash(id, &hi, &lo);
	pthread_mutex_lock(&t->lock);
	e = table_find(t, id, hi, lo);
	if (e && (e->state == ENTRY_STORED || e->pending))
		len = (size_t)e->data_len;
	pthread_mutex_unlock(&t->lock);
	return len;
}

void ssd_tier_access(struct ssd_tier *t, const struct chunk_id *id)
{
	uint64_t hi, lo;

	if (!id_fits(id))
		return;
	id_hash(id, &hi, &lo);
	pthread_mutex_lock(&t->lock);
	if (t->policy)
		evict_policy_access(t->policy, lo);
	pthread_mutex_unlock(&t->lock);
}

unsigned ssd_tier_policy_count(struct ssd_tier *t, const struct chunk_id *id)
{
	uint64_t hi, lo;
	unsigned n = 0;

	if (!id_fits(id))
		return 0;
	id_hash(id, &hi, &lo);
	pthread_mutex_lock(&t->lock);
	if (t->policy)
		n = evict_policy_frequency(t->policy, lo);
	pthread_mutex_unlock(&t->lock);
	return n;
}

int ssd_tier_read_range(struct ssd_tier *t, const struct chunk_id *id, size_t expect_len,
			size_t off, size_t len, void *buf, size_t *span_off, size_t *span_len,
			bool visit)
{
	return read_range(t, id, expect_len, off, len, buf, span_off, span_len, visit);
}

int ssd_tier_read(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t cap,
		  size_t *len, bool reader)
{
	size_t dlen = readable_len(t, id), span_off, span_len;

	*len = 0;
	if (dlen == 0 || dlen > cap) {
		STAT_ADD(t, misses, 1);
		return TFS_MISS;
	}
	if (read_range(t, id, dlen, 0, dlen, buf, &span_off, &span_len, reader) != TFS_OK)
		return TFS_MISS;
	assert(span_off == 0 && span_len == dlen);
	*len = dlen;
	return TFS_OK;
}

/* ---- files the kernel reads by itself ---- */

/* The kernel reads the n chunks of an object's file without us (lock
 * held, the object held): an open is the one access the policy sees, and
 * a loader opens a file to read it whole.  Counted for every chunk, as
 * reads would be, so that a file read through passthrough is not taken
 * for cold and one fetched ahead is no longer "ahead" once its reader
 * came. */
static void object_read(struct ssd_tier *t, const char *key, const char *cache_id, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { key, cache_id, i };
		struct ssd_entry *e;
		uint64_t hi, lo;

		id_hash(&id, &hi, &lo);
		e = table_find(t, &id, hi, lo);
		evict_policy_access(t->policy, lo);
		if (e)
			entry_read(t, e);
	}
}

int ssd_tier_object_open(struct ssd_tier *t, const char *key, const char *cache_id,
			 uint64_t size, int *fd)
{
	uint64_t n = (size + t->chunk_size - 1) / t->chunk_size, ohi, olo;
	struct ssd_obj *o;
	bool whole = size > 0;

	*fd = -1;
	if (in_backoff(t) || size == 0 || strlen(key) + strlen(cache_id) > KEY_ROOM)
		return TFS_MISS;
	obj_hash(key, cache_id, &ohi, &olo);
	pthread_mutex_lock(&t->lock);
	o = obj_find(t, ohi, olo);
	for (uint64_t i = 0; o && whole && i < n; i++) {
		struct chunk_id id = { key, cache_id, i };
		uint64_t hi, lo, want = size - i * t->chunk_size;
		struct ssd_entry *e;

		id_hash(&id, &hi, &lo);
		e = table_find(t, &id, hi, lo);
		whole = e && e->state == ENTRY_STORED &&
			e->data_len == (want < t->chunk_size ? want : t->chunk_size);
	}
	if (o && whole) {
		o->holds++;   /* before the open: an eviction now would punch under it */
		object_read(t, key, cache_id, n);
	}
	pthread_mutex_unlock(&t->lock);
	if (!o || !whole)
		return TFS_MISS;
	*fd = obj_file_open(t, ohi, olo, false);
	if (*fd < 0) {
		ssd_tier_object_release(t, key, cache_id);
		return TFS_MISS;
	}
	return TFS_OK;
}

void ssd_tier_object_reopened(struct ssd_tier *t, const char *key, const char *cache_id,
			      uint64_t size)
{
	pthread_mutex_lock(&t->lock);
	object_read(t, key, cache_id, (size + t->chunk_size - 1) / t->chunk_size);
	pthread_mutex_unlock(&t->lock);
}

void ssd_tier_object_release(struct ssd_tier *t, const char *key, const char *cache_id)
{
	uint64_t ohi, olo;
	struct ssd_obj *o;

	obj_hash(key, cache_id, &ohi, &olo);
	pthread_mutex_lock(&t->lock);
	o = obj_find(t, ohi, olo);
	if (o && o->holds > 0) {
		o->holds--;
		obj_maybe_free(t, o);
	}
	pthread_mutex_unlock(&t->lock);
}

/* ---- scrub ---- */

/* The STORED entry checked least lately, among a bucket walk's worth
 * from where the last scrub stopped (lock held); NULL when none. */
static struct ssd_entry *scrub_pick(struct ssd_tier *t, size_t *cursor)
{
	struct ssd_entry *best = NULL;

	for (size_t k = 0; k < t->n_buckets && k < 4096; k++) {
		size_t b = (*cursor + k) % t->n_buckets;

		for (struct ssd_entry *e = t->buckets[b]; e; e = e->hnext)
			if (e->state == ENTRY_STORED && (!best || e->checked < best->checked))
				best = e;
		if (best && k >= 64) {
			*cursor = (b + 1) % t->n_buckets;
			break;
		}
	}
	return best;
}

uint64_t ssd_tier_scrub(struct ssd_tier *t, uint64_t max_bytes)
{
	static const uint32_t none[1] = { 0 };
	uint64_t done = 0, stamp = (uint64_t)clock_coarse_ms() / 1000 + 1;
	size_t cursor = 0;

	pthread_mutex_lock(&t->scrub_lock);
	while (done < max_bytes) {
		uint32_t sums[CACHE_INDEX_BLOCKS_MAX];
		uint64_t hi, lo, ohi, olo, gen, dlen;
		struct chunk_id id;
		struct ssd_entry *e;
		char *kcopy;
		enum read_result r;
		int fd, derr;
		ssize_t n;

		pthread_mutex_lock(&t->lock);
		e = scrub_pick(t, &cursor);
		if (!e || e->checked >= stamp) {
			/* none, or the least lately checked was checked by this
			 * very call: each chunk once a call, however few there are
			 * (a tier of one small chunk read it back 16 M times, the
			 * writer deaf to its queue and to its close meanwhile) */
			pthread_mutex_unlock(&t->lock);
			break;
		}
		e->checked = stamp;
		kcopy = malloc(strlen(e->key) + strlen(e->etag) + 2);
		if (!kcopy) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		strcpy(kcopy, e->key);
		strcpy(kcopy + strlen(e->key) + 1, e->etag);
		id = (struct chunk_id){ kcopy, kcopy + strlen(e->key) + 1, e->index };
		hi = e->hi;
		lo = e->lo;
		ohi = e->obj->hi;
		olo = e->obj->lo;
		gen = e->gen;
		dlen = e->data_len;
		memcpy(sums, e->sums, 4 * (size_t)e->nblocks);
		pthread_mutex_unlock(&t->lock);

		/* the device's bytes; through the page cache, on a descriptor
		 * of its own, only where the filesystem refuses O_DIRECT
		 * (EINVAL) or the read is short */
		n = direct_pread(t, ohi, olo, t->sbuf, (size_t)bytes_of(dlen),
				 id.index * t->chunk_size, &derr);
		if (derr && derr != EINVAL) {
			r = read_errno(derr);   /* the device's answer, not the page cache's copy */
		} else if (n >= (ssize_t)dlen) {
			r = READ_OK;
			for (uint64_t off = 0, b = 0; off < dlen && r == READ_OK; off += SSD_BLOCK, b++)
				if (block_sum(t->sbuf + off, dlen - off < SSD_BLOCK ? dlen - off
										: SSD_BLOCK) != sums[b])
					r = READ_BAD;
		} else {
			fd = obj_file_open(t, ohi, olo, false);
			r = fd < 0 ? read_errno(errno)
				   : span_read(t, fd, ohi, olo, id.index * t->chunk_size, 0,
					       (size_t)dlen, dlen ? sums : none, t->sbuf);
			if (fd >= 0)
				close(fd);
		}
		done += bytes_of(dlen);   /* what was read: whole blocks */
		if ((r == READ_BAD || r == READ_IOERR) && still_stored(t, &id, hi, lo, gen)) {
			STAT_ADD(t, checksum_failures, r == READ_BAD);
			STAT_ADD(t, io_errors, r == READ_IOERR);
			log_warn("ssd tier %s: chunk %" PRIu64 " of '%s' no longer matches its "
				 "checksums on disk; dropped", t->dir, id.index, id.key);
			read_drop(t, &id, hi, lo, gen);
		}
		free(kcopy);
	}
	pthread_mutex_unlock(&t->scrub_lock);
	return done;
}

/* ---- the write side's front door ---- */

/* Append job j for the writer (t->lock held). */
static void queue_push(struct ssd_tier *t, struct job *j)
{
	if (t->q_tail)
		t->q_tail->next = j;
	else
		t->q_head = j;
	t->q_tail = j;
	t->seq_queued++;
	pthread_cond_signal(&t->work_cond);
}

/* Do the stores waiting on callers' buffers fill the queue (lock held)?
 * Counted in chunks and, when bounded, in bytes: small files queue many
 * more chunks than large ones in the same memory. */
static bool queue_full(const struct ssd_tier *t)
{
	return t->q_stores >= t->queue_max || (t->queue_bytes && t->q_store_bytes >= t->queue_bytes);
}

/* How a chunk is offered to store(), or'ed: the admission policy not
 * asked (FORCE), room in the queue waited for (WAIT), kept until read
 * (AHEAD: ssd_tier_store_ahead), offered again after TFS_AGAIN (AGAIN:
 * a refusal is not counted again, a store is counted as resaved), and
 * data a heap buffer the tier takes as one of its copies (OWNED, with
 * AGAIN; release a no-op). */
enum store_how { ST_FORCE = 1, ST_WAIT = 2, ST_AHEAD = 4, ST_AGAIN = 8, ST_OWNED = 16 };

/* The store jobs' one way in: ssd_tier_store() and its variants, as how
 * says.  TFS_OK, TFS_AGAIN (the writer behind) or TFS_MISS, as
 * ssd_tier_store(). */
static int store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		 ssd_tier_release_fn release, void *arg, unsigned how)
{
	bool force = how & ST_FORCE, wait = how & ST_WAIT, ahead = how & ST_AHEAD;
	bool owned = how & ST_OWNED;
	struct ssd_entry *e = NULL;
	struct job *j = NULL;
	uint64_t hi, lo, ohi, olo;
	bool counted = !(how & ST_AGAIN);   /* a refusal the dropped counter reports */
	bool behind = false;   /* refused because the writer is behind */
	bool spilled = false;  /* copy is in spill_used */
	void *copy = owned ? (void *)(uintptr_t)data : NULL;

	assert(release && (data || len == 0) && !(owned && wait));
	if (len == 0)
		counted = false;   /* nothing to keep: nothing lost */
	if (len == 0 || len > t->chunk_size || !id_fits(id) || in_backoff(t))
		goto refuse;
	id_hash(id, &hi, &lo);
	obj_hash(id->key, id->etag, &ohi, &olo);
	e = entry_new(id, hi, lo, blocks_of(len));
	j = calloc(1, sizeof(*j));
	if (!e || !j)
		goto refuse;
	*j = (struct job){ .kind = JOB_STORE, .e = e, .data = data, .len = len,
			   .release = release, .arg = arg, .force = force, .fd = -1 };
	e->state = ENTRY_PENDING;
	e->data_len = len;
	e->bytes = bytes_of(len);
	pthread_mutex_lock(&t->lock);
	if (table_find(t, id, hi, lo)) {
		counted = false;   /* already stored or queued: nothing lost */
		pthread_mutex_unlock(&t->lock);
		goto refuse;
	}
	/* an operator's warm-up (force, which waits too), and a fetch ahead,
	 * wait for room in the queue: no reader waits on them */
	while (wait && !t->stopping && queue_full(t))
		pthread_cond_wait(&t->done_cond, &t->lock);
	/* A reader's chunk finds the writer behind (the queue of chunks held
	 * in RAM full): it is not worth the reader's wait, and dropping it
	 * would fetch it again at its next read while the tier has room.  A
	 * copy waits instead, within spill_max bytes; beyond those it is
	 * dropped (counted: the writer cannot keep up). */
	if (!wait && !t->stopping && (owned || queue_full(t)) &&
	    t->spill_used + len <= t->spill_max) {
		t->spill_used += len;
		spilled = true;
		if (!owned) {
			pthread_mutex_unlock(&t->lock);
			if (posix_memalign(&copy, DIO_ALIGN, len) == 0)   /* see chunk_pwrite */
				memcpy(copy, data, len);
			else
				copy = NULL;
			pthread_mutex_lock(&t->lock);
		}
		if (!copy) {
			pthread_mutex_unlock(&t->lock);
			goto refuse;
		}
		j->spill = true;
		j->data = copy;
	}
	behind = !t->stopping && !j->spill && (owned || queue_full(t));
	if (t->stopping || behind || table_find(t, id, hi, lo) ||
	    !(e->obj = obj_get(t, id->key, id->etag, ohi, olo))) {
		if (table_find(t, id, hi, lo)) {
			counted = false;   /* queued by another meanwhile */
			behind = false;
		}
		pthread_mutex_unlock(&t->lock);
		goto refuse;
	}
	e->obj->refs++;
	e->pending = copy;
	if (ahead) {
		e->ahead_epoch = t->epoch;
		t->ahead_bytes += e->bytes;
	}
	table_insert(t, e);
	if (!copy) {
		t->q_stores++;
		t->q_store_bytes += len;
	}
	t->q_bytes += bytes_of(len);   /* a copy's bytes too: they take room */
	queue_push(t, j);   /* the writer owns j (and our copy) from here */
	pthread_mutex_unlock(&t->lock);
	if (copy) {
		STAT_ADD(t, spilled, 1);
		release(arg);   /* the caller's buffer: copied (or ours now) */
	}
	STAT_ADD(t, resaved, (how & ST_AGAIN) != 0);
	return TFS_OK;
refuse:
	if (spilled) {
		pthread_mutex_lock(&t->lock);
		t->spill_used -= len;
		pthread_mutex_unlock(&t->lock);
	}
	free(copy);
	free(e);
	free(j);
	if (counted)
		STAT_ADD(t, dropped, 1);
	release(arg);
	return behind ? TFS_AGAIN : TFS_MISS;
}

int ssd_tier_store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		   ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, 0);
}

int ssd_tier_store_again(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, ST_AGAIN);
}

static void release_nothing(void *arg)
{
	(void)arg;
}

int ssd_tier_store_owned(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t len)
{
	return store(t, id, buf, len, release_nothing, NULL, ST_AGAIN | ST_OWNED);
}

bool ssd_tier_store_wait(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, ST_WAIT) == TFS_OK;
}

bool ssd_tier_store_forced(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			   size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, ST_FORCE | ST_WAIT) == TFS_OK;
}

bool ssd_tier_store_ahead(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			  size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, ST_FORCE | ST_WAIT | ST_AHEAD) == TFS_OK;
}

bool ssd_tier_ahead_room(struct ssd_tier *t, uint64_t len)
{
	uint64_t room = ssd_tier_room(t), taken;

	pthread_mutex_lock(&t->lock);
	taken = t->bytes_used + t->reserved + t->q_bytes;
	pthread_mutex_unlock(&t->lock);
	return taken + bytes_of(len) <= room;
}

void ssd_tier_new_epoch(struct ssd_tier *t)
{
	pthread_mutex_lock(&t->lock);
	if (++t->epoch == 0)
		t->epoch = 1;   /* 0 is "no mark" */
	t->ahead_bytes = 0;   /* the marks made so far are void */
	pthread_mutex_unlock(&t->lock);
}

void ssd_tier_set_plan(struct ssd_tier *t, struct plan_slot *plans)
{
	pthread_mutex_lock(&t->lock);
	t->plans = plans;
	pthread_mutex_unlock(&t->lock);
}

/* ---- residency, pins and evictions an operator asks for ---- */

/* How long ssd_tier_room() trusts a statvfs.  A scan's fetchers ask for
 * their budget before every job, two a file: in a cached epoch of 3,000
 * small files that was 6,000 statvfs calls, an eighth of the daemon's
 * CPU.  The room is a budget, not the bound (make_room asks the
 * filesystem itself before every write), and in 100 ms the disk's free
 * space moves by what the writer wrote, which bytes_used counts. */
#define ROOM_STATVFS_US 100000u

uint64_t ssd_tier_room(struct ssd_tier *t)
{
	uint64_t now = clock_mono_us(), used, spare, at, room;

	pthread_mutex_lock(&t->lock);
	used = t->bytes_used;
	spare = t->fs_spare;
	at = t->fs_spare_at;
	pthread_mutex_unlock(&t->lock);
	if (!at || now - at >= ROOM_STATVFS_US) {
		uint64_t avail, reserve;

		if (fs_space(t, &avail, &reserve) < 0)
			return t->capacity ? t->capacity : used;
		spare = avail > reserve ? avail - reserve : 0;
		pthread_mutex_lock(&t->lock);
		t->fs_spare = spare;
		t->fs_spare_at = now;
		pthread_mutex_unlock(&t->lock);
	}
	room = used + spare;
	return t->capacity && t->capacity < room ? t->capacity : room;
}

void ssd_tier_set_pins(struct ssd_tier *t, struct pin_set *pins)
{
	pthread_mutex_lock(&t->lock);
	t->pins = pins;
	pthread_mutex_unlock(&t->lock);
}

/* The STORED entry of chunk id, or NULL (lock held). */
static struct ssd_entry *stored_find(struct ssd_tier *t, const struct chunk_id *id)
{
	struct ssd_entry *e;
	uint64_t hi, lo;

	if (!id_fits(id))
		return NULL;
	id_hash(id, &hi, &lo);
	e = table_find(t, id, hi, lo);
	return e && e->state == ENTRY_STORED ? e : NULL;
}

size_t ssd_tier_contains(struct ssd_tier *t, const struct chunk_id *id)
{
	struct ssd_entry *e;
	size_t len = 0;

	pthread_mutex_lock(&t->lock);
	e = stored_find(t, id);
	if (e)
		len = (size_t)e->data_len;
	pthread_mutex_unlock(&t->lock);
	return len;
}

/* Hand a STORED entry, out of the table, to the writer to delete (lock
 * held): bytes are punched out by the writer only (see the invariants). */
static void entry_doom(struct ssd_tier *t, struct ssd_entry *e)
{
	table_remove(t, e);
	e->dnext = t->doomed;
	t->doomed = e;
	pthread_cond_signal(&t->work_cond);
}

/* Pin or unpin entry e (lock held).  A pinned entry is out of the
 * policy, so its victims are never pinned and a tier mostly pinned still
 * evicts; an unpinned one goes back, making room for its key. */
static bool entry_pin(struct ssd_tier *t, struct ssd_entry *e, bool on)
{
	if (e->state != ENTRY_STORED || e->pinned == on)
		return false;
	if (on) {
		evict_policy_remove(t->policy, e->lo);
		e->pinned = true;
	} else {
		struct ssd_entry *v;

		if (evict_policy_size(t->policy) >= evict_policy_capacity(t->policy) &&
		    (v = victim_choose(t, e->bytes / POLICY_WEIGHT_UNIT)))
			entry_doom(t, v);
		e->pinned = false;
		policy_insert(t, e);
	}
	return true;
}

struct pin_ctx {
	struct ssd_tier *t;
	bool on;
	size_t n;
};

static int pin_cb(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	struct pin_ctx *p = ctx;
	struct ssd_entry *e;

	pthread_mutex_lock(&p->t->lock);
	e = stored_find(p->t, id);
	if (e && entry_pin(p->t, e, p->on))
		p->n++;
	pthread_mutex_unlock(&p->t->lock);
	return 0;
}

size_t ssd_tier_pin_key(struct ssd_tier *t, const char *key, bool on)
{
	struct pin_ctx p = { t, on, 0 };

	if (key) {
		/* every version of the key, from the index: no table walk */
		(void)cache_index_chunk_scan_key(t->ix, key, pin_cb, &p);
		return p.n;
	}
	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < t->n_buckets; b++) {
		struct ssd_entry *e = t->buckets[b];

		while (e) {
			if (entry_pin(t, e, on)) {
				p.n++;
				e = t->buckets[b];   /* a victim doomed may have been next */
			} else {
				e = e->hnext;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
	return p.n;
}

int ssd_tier_evict(struct ssd_tier *t, const struct chunk_id *id, uint64_t *bytes)
{
	struct ssd_entry *e;
	int r = SSD_EVICT_ABSENT;

	pthread_mutex_lock(&t->lock);
	e = stored_find(t, id);
	if (e && e->pinned) {
		r = SSD_EVICT_PINNED;
	} else if (e && e->obj->holds > 0) {
		r = SSD_EVICT_BUSY;
	} else if (e) {
		*bytes += e->data_len;
		entry_doom(t, e);
		STAT_ADD(t, evictions, 1);
		r = SSD_EVICT_DONE;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

void ssd_tier_evict_all(struct ssd_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned)
{
	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < t->n_buckets; b++) {
		struct ssd_entry *e = t->buckets[b], *next;

		for (; e; e = next) {
			next = e->hnext;
			if (e->state != ENTRY_STORED)
				continue;
			if (entry_kept(e)) {
				(*pinned)++;
				continue;
			}
			*bytes += e->data_len;
			(*chunks)++;
			entry_doom(t, e);
			STAT_ADD(t, evictions, 1);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void ssd_tier_drop_versions(struct ssd_tier *t, const char *key, const char *keep_etag)
{
	size_t kl = strlen(key), el = keep_etag ? strlen(keep_etag) : 0;
	struct job *j = calloc(1, sizeof(*j));
	char *s = malloc(kl + el + 2);

	if (!j || !s)
		goto skip;
	memcpy(s, key, kl + 1);
	j->kind = JOB_DROP;
	j->key = s;
	j->fd = -1;
	if (keep_etag) {
		j->keep = s + kl + 1;
		memcpy(j->keep, keep_etag, el + 1);
	}
	pthread_mutex_lock(&t->lock);
	/* Skipping is safe: old versions are never read again, so the
	 * eviction policy reclaims them in time anyway. */
	if (t->stopping || t->q_drops >= DROP_QUEUE_MAX) {
		pthread_mutex_unlock(&t->lock);
		goto skip;
	}
	t->q_drops++;
	queue_push(t, j);
	pthread_mutex_unlock(&t->lock);
	return;
skip:
	log_debug("ssd tier: drop of old versions of %s skipped (queue full)", key);
	free(s);
	free(j);
}

void ssd_tier_flush(struct ssd_tier *t)
{
	uint64_t target;

	pthread_mutex_lock(&t->lock);
	target = t->seq_queued;
	while (t->seq_done < target || t->doomed || t->doomed_busy)
		pthread_cond_wait(&t->done_cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

/* ---- metadata blobs ---- */

int ssd_tier_meta_put(struct ssd_tier *t, const char *name, const void *value, size_t len)
{
	if (len > META_MAX)
		return TFS_E_TOOBIG;
	return cache_index_meta_put(t->ix, name, value, len);
}

int ssd_tier_meta_get(struct ssd_tier *t, const char *name, void **value, size_t *len)
{
	return cache_index_meta_get(t->ix, name, value, len);
}

int ssd_tier_meta_del(struct ssd_tier *t, const char *name)
{
	return cache_index_meta_del(t->ix, name);
}

void ssd_tier_stats(struct ssd_tier *t, struct tier_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->hits = atomic_load(&t->hits);
	out->misses = atomic_load(&t->misses);
	out->bytes_served = atomic_load(&t->bytes_served);
	out->bytes_fetched = atomic_load(&t->bytes_fetched);
	out->insertions = atomic_load(&t->insertions);
	out->evictions = atomic_load(&t->evictions);
	out->checksum_failures = atomic_load(&t->checksum_failures);
	out->io_errors = atomic_load(&t->io_errors);
	out->dropped = atomic_load(&t->dropped);
	out->spilled = atomic_load(&t->spilled);
	out->resaved = atomic_load(&t->resaved);
	out->rejected = atomic_load(&t->rejected);
	out->degraded = atomic_load(&t->degraded);
	out->ahead_evicted = atomic_load(&t->ahead_evicted);
	out->capacity = t->capacity;
	pthread_mutex_lock(&t->lock);
	/* every job not finished, copies and drops included, and a doomed
	 * batch not yet deleted: 0 means the disk matches the counts */
	out->queued = (t->seq_queued - t->seq_done) + (t->doomed || t->doomed_busy ? 1 : 0);
	out->ahead_bytes = t->ahead_bytes;
	out->entries = t->entries;
	out->bytes_used = t->bytes_used;
	pthread_mutex_unlock(&t->lock);
}
