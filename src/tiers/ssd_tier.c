/* ssd_tier.c - chunk files on a local disk, indexed in RocksDB (see ssd_tier.h).
 *
 * Invariants (under t->lock unless noted):
 *  - every entry is in the hash table exactly once, keyed by its chunk id,
 *    either PENDING (queued for the writer, invisible to readers, counts
 *    against queue_max) or STORED (its file was renamed into place and its
 *    index record written, in that order: a reader never sees a chunk
 *    whose bytes are not all on disk);
 *  - t->entries and t->bytes_used count STORED entries and their file
 *    bytes, exactly;
 *  - an entry removed from the table by a reader (bad copy) goes on the
 *    doomed list; only the writer thread unlinks files, deletes index
 *    records and frees entries removed from the table, and it empties the
 *    doomed list before each job, so a delete never overtakes a re-store
 *    of the same chunk;
 *  - no lock is held across file I/O or RocksDB calls; readers take the
 *    lock once per read (lookup + access stats) and again only to drop a
 *    bad entry.
 */
#include "tiers/ssd_tier.h"

#include <assert.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "tiers/cache_index.h"

/* On-disk format of this code: stored in the index and in every chunk
 * header; a cache of another format is refused (or wiped). */
#define SSD_FORMAT_VERSION 1

/* Chunk file header.  Fixed size, so the data starts page-aligned in the
 * file and one preadv reads header and data.  Little-endian:
 *   0  magic "tfschunk"     8 u32 format       12 u32 header size
 *  16  u32 key length      20 u32 etag length  24 u64 chunk index
 *  32  u64 data length     40 u64 XXH3_64 of the data
 *  48  u64 XXH3_64 of the owner string (a chunk copied from another
 *      owner's cache is never adopted)
 *  56  u64 XXH3_64 of the whole header, computed with this field 0
 *  64  key bytes, etag bytes, zeros to HDR_SIZE */
#define HDR_SIZE 4096u
#define HDR_FIXED 64u
#define HDR_ROOM (HDR_SIZE - HDR_FIXED)   /* key + etag must fit here */
static const char HDR_MAGIC[8] = { 't', 'f', 's', 'c', 'h', 'u', 'n', 'k' };

#define META_MAX (64u << 20)       /* the contract's bound on a blob */
#define DROP_QUEUE_MAX 64          /* drop-version jobs waiting (then skipped) */
#define EVICT_PASS_MAX 1024        /* victims one write may evict before giving up */
#define POLICY_KEYS_MIN 16         /* the eviction policy's smallest key capacity */
#define POLICY_KEYS_MAX (4u << 20)  /* and its largest */
#define POLICY_KEY_GRAIN (64u << 10) /* a key per this many bytes of the bound */
#define BACKOFF_MS 1000            /* stores refused this long after a write error */
#define BATCH_MAX 4096             /* index operations per RocksDB batch */
#define BUCKETS_MIN 1024u
#define BUCKETS_MAX (1u << 26)     /* 512 MiB of buckets: far beyond any real disk */

/* "XX/" + 32 hex digits (+ ".tmp") + NUL, relative to chunks/. */
#define NAME_LEN 35
#define NAME_BUF 40

enum entry_state { ENTRY_PENDING, ENTRY_STORED };

struct ssd_entry {
	struct ssd_entry *hnext;     /* hash chain */
	struct ssd_entry *dnext;     /* doomed list */
	uint64_t hi, lo;             /* XXH3_128 of the index key: file name and bucket */
	uint64_t index;
	uint64_t data_len, file_bytes, xxh;
	uint64_t gen;                /* tells a re-stored entry from the one a reader saw */
	uint64_t last_access;        /* seconds since the epoch (persisted) */
	uint32_t hits;
	uint32_t policy_stat;        /* the policy's statistics, as loaded (persisted) */
	bool touched;                /* access stats changed since loaded */
	bool pinned;                 /* an operator pinned it: kept out of the policy */
	enum entry_state state;
	const char *etag;            /* into key[] */
	char key[];                  /* key '\0' etag '\0' */
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
};

struct ssd_tier {
	pthread_mutex_t lock;
	pthread_cond_t work_cond;    /* writer: a job or a doomed entry arrived */
	pthread_cond_t done_cond;    /* flushers: a job finished */
	struct ssd_entry **buckets;
	size_t n_buckets;            /* power of two */
	size_t n_table;              /* entries in the table, PENDING included */
	uint64_t entries, bytes_used;
	uint64_t next_gen;
	struct evict_policy *policy; /* the STORED entries, keyed by lo; NULL while loading */
	enum evict_kind policy_kind;
	struct plan_slot *plans;     /* the loader's plan; NULL = none (under lock) */
	struct job *q_head, *q_tail;
	unsigned q_stores, q_drops;
	uint64_t seq_queued, seq_done;
	struct ssd_entry *doomed;
	bool doomed_busy;            /* the writer is deleting a doomed batch */
	bool stopping;
	bool writer_started;
	pthread_t writer;

	int dir_fd, chunks_fd;
	char *dir;
	uint64_t owner_hash;
	size_t chunk_size;
	uint64_t capacity;
	unsigned min_free_pct;
	unsigned queue_max;
	struct cache_index *ix;
	unsigned char *wbuf;         /* writer-only header buffer */

	_Atomic uint64_t hits, misses, bytes_served, bytes_fetched, insertions, evictions;
	_Atomic uint64_t checksum_failures, io_errors, dropped, rejected;
	atomic_bool degraded;
	_Atomic int64_t backoff_until_ms;
	struct pin_set *pins;        /* the operator's pins (borrowed); NULL = none */
};

#define STAT_ADD(t, f, n) atomic_fetch_add_explicit(&(t)->f, (n), memory_order_relaxed)

static void put_le32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put_le64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

/* Bytes a chunk of len bytes takes on disk: the header plus the data
 * rounded up to whole 4 KiB blocks. */
static uint64_t file_bytes_of(uint64_t len)
{
	return HDR_SIZE + ((len + 4095) & ~(uint64_t)4095);
}

/* Whether a chunk id can be stored at all: key and etag must fit the
 * header.  Longer keys are simply not cached. */
static bool id_fits(const struct chunk_id *id)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);
	return kl <= HDR_ROOM && el <= HDR_ROOM - kl;
}

/* XXH3_128 of the chunk's index key: names its file, picks its bucket.
 * The id must fit (id_fits). */
static void id_hash(const struct chunk_id *id, uint64_t *hi, uint64_t *lo)
{
	char buf[HDR_ROOM + 16];
	size_t n = cache_index_chunk_key(id, buf, sizeof(buf));
	XXH128_hash_t h;

	assert(n <= sizeof(buf));
	h = XXH3_128bits(buf, n);
	*hi = h.high64;
	*lo = h.low64;
}

static void hex64(char *out, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = digits[v & 15];
}

/* "XX/<32 hex>" (+ suffix) relative to chunks/. */
static void chunk_name(char out[NAME_BUF], uint64_t hi, uint64_t lo, const char *suffix)
{
	hex64(out + 3, hi);
	hex64(out + 19, lo);
	out[0] = out[3];
	out[1] = out[4];
	out[2] = '/';
	out[NAME_LEN] = '\0';
	if (suffix)
		strcat(out, suffix);
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

/* ---- the in-memory table (lock held) ---- */

static struct ssd_entry *entry_new(const struct chunk_id *id, uint64_t hi, uint64_t lo)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);
	struct ssd_entry *e = calloc(1, sizeof(*e) + kl + el + 2);

	if (!e)
		return NULL;
	memcpy(e->key, id->key, kl + 1);
	memcpy(e->key + kl + 1, id->etag, el + 1);
	e->etag = e->key + kl + 1;
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

static void table_insert(struct ssd_tier *t, struct ssd_entry *e)
{
	struct ssd_entry **b = &t->buckets[e->lo & (t->n_buckets - 1)];

	e->hnext = *b;
	*b = e;
	e->gen = ++t->next_gen;
	t->n_table++;
	if (e->state == ENTRY_STORED) {
		t->entries++;
		t->bytes_used += e->file_bytes;
		if (t->policy && !e->pinned)
			evict_policy_insert(t->policy, e->lo);
	}
	table_grow(t);
}

static void table_remove(struct ssd_tier *t, struct ssd_entry *e)
{
	struct ssd_entry **pp = &t->buckets[e->lo & (t->n_buckets - 1)];

	while (*pp != e) {
		assert(*pp);
		pp = &(*pp)->hnext;
	}
	*pp = e->hnext;
	e->hnext = NULL;
	t->n_table--;
	if (e->state == ENTRY_STORED) {
		assert(t->entries > 0 && t->bytes_used >= e->file_bytes);
		t->entries--;
		t->bytes_used -= e->file_bytes;
		if (t->policy && !e->pinned)
			evict_policy_remove(t->policy, e->lo);
	}
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
				bytes += e->file_bytes;
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

/* The eviction policy's victim (lock held), or NULL when it has none.
 * The policy (src/evict, the `ssd-policy` option) sees every read that
 * reached this tier, hit or miss, and each STORED entry by the half of
 * its 128-bit hash that picks its bucket.  A key it holds with no entry behind it (two
 * chunks whose halves collided, one of them gone) is forgotten. */
/* The policy's pinned test while a plan is known: an entry the plan
 * reads later is kept while there is another victim (lock held). */
static bool needed_soon(void *ctx, uint64_t lo)
{
	struct ssd_tier *t = ctx;
	struct ssd_entry *e = entry_of_key(t, lo);

	return e && plan_slot_future(t->plans, e->key, false) == PLAN_SOON;
}

/* The policy's victim; with a plan, one the plan does not read later if
 * the policy has one (Belady's rule: what is needed furthest ahead goes
 * first, and what is not needed again is furthest).  Lock held. */
static struct ssd_entry *victim_choose(struct ssd_tier *t)
{
	uint64_t v;

	while (t->plans && evict_policy_victim(t->policy, needed_soon, t, &v)) {
		struct ssd_entry *e = entry_of_key(t, v);

		if (e)
			return e;
		evict_policy_remove(t->policy, v);
	}
	while (evict_policy_victim(t->policy, NULL, NULL, &v)) {
		struct ssd_entry *e = entry_of_key(t, v);

		if (e)
			return e;
		evict_policy_remove(t->policy, v);
	}
	return NULL;
}

/* ---- chunk files ---- */

/* Everything a header says, pointing into the buffer it came from. */
struct hdr_info {
	uint32_t key_len, etag_len;
	uint64_t index, data_len, xxh, owner_hash;
	const char *key, *etag;
};

static void hdr_encode(unsigned char *h, const struct chunk_id *id, uint64_t len, uint64_t xxh,
		       uint64_t owner_hash)
{
	uint32_t kl = (uint32_t)strlen(id->key), el = (uint32_t)strlen(id->etag);

	assert(kl + el <= HDR_ROOM);
	memset(h, 0, HDR_SIZE);
	memcpy(h, HDR_MAGIC, 8);
	put_le32(h + 8, SSD_FORMAT_VERSION);
	put_le32(h + 12, HDR_SIZE);
	put_le32(h + 16, kl);
	put_le32(h + 20, el);
	put_le64(h + 24, id->index);
	put_le64(h + 32, len);
	put_le64(h + 40, xxh);
	put_le64(h + 48, owner_hash);
	memcpy(h + HDR_FIXED, id->key, kl);
	memcpy(h + HDR_FIXED + kl, id->etag, el);
	put_le64(h + 56, XXH3_64bits(h, HDR_SIZE));
}

/* Check magic, format, size and the header checksum, then decode.  h is
 * modified (its checksum field zeroed). */
static bool hdr_decode(unsigned char *h, struct hdr_info *hi)
{
	uint64_t sum = get_le64(h + 56);

	if (memcmp(h, HDR_MAGIC, 8) != 0 || get_le32(h + 8) != SSD_FORMAT_VERSION ||
	    get_le32(h + 12) != HDR_SIZE)
		return false;
	put_le64(h + 56, 0);
	if (XXH3_64bits(h, HDR_SIZE) != sum)
		return false;
	hi->key_len = get_le32(h + 16);
	hi->etag_len = get_le32(h + 20);
	if (hi->key_len > HDR_ROOM || hi->etag_len > HDR_ROOM - hi->key_len)
		return false;
	hi->index = get_le64(h + 24);
	hi->data_len = get_le64(h + 32);
	hi->xxh = get_le64(h + 40);
	hi->owner_hash = get_le64(h + 48);
	hi->key = (const char *)h + HDR_FIXED;
	hi->etag = hi->key + hi->key_len;
	return true;
}

static bool hdr_matches(const struct hdr_info *hi, const struct chunk_id *id)
{
	size_t kl = strlen(id->key), el = strlen(id->etag);

	return hi->index == id->index && hi->key_len == kl && hi->etag_len == el &&
	       memcmp(hi->key, id->key, kl) == 0 && memcmp(hi->etag, id->etag, el) == 0;
}

/* preadv/pwritev until every byte of iov moved, EOF, or an error.
 * Returns the bytes moved or -1 (errno set).  iov is consumed. */
static ssize_t rw_full(int fd, struct iovec *iov, int n, bool write)
{
	size_t total = 0;

	while (n > 0) {
		ssize_t r = write ? pwritev(fd, iov, n, (off_t)total)
				  : preadv(fd, iov, n, (off_t)total);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		total += (size_t)r;
		while (n > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return (ssize_t)total;
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

/* Read and verify one chunk file into buf (cap bytes).
 *
 * Header and data are page-aligned in the file, so the read goes around
 * the page cache (O_DIRECT) whenever buf allows it: the bytes are copied
 * once, disk to RAM tier, and the cache disk's page cache does not fill
 * with a second copy of what the RAM tier already holds.  Whatever
 * O_DIRECT refuses (tmpfs, an unaligned buffer, a short read) is read
 * again buffered. */
#define DIO_ALIGN 4096u

static enum read_result chunk_file_read(struct ssd_tier *t, const struct chunk_id *id,
					uint64_t hi, uint64_t lo, void *buf, size_t cap,
					uint64_t len, uint64_t xxh)
{
	_Alignas(DIO_ALIGN) unsigned char hdr[HDR_SIZE];
	uint64_t padded = (len + DIO_ALIGN - 1) & ~(uint64_t)(DIO_ALIGN - 1);
	struct iovec iov[2] = { { hdr, HDR_SIZE }, { buf, len } };
	char name[NAME_BUF];
	struct hdr_info h;
	ssize_t n = -1;
	int fd, err = 0;

	chunk_name(name, hi, lo, NULL);
	if ((uintptr_t)buf % DIO_ALIGN == 0 && padded <= cap && len > 0) {
		fd = openat(t->chunks_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
		if (fd < 0 && errno == ENOENT)
			return READ_GONE;
		if (fd >= 0) {
			iov[1].iov_len = (size_t)padded;
			do {
				n = preadv(fd, iov, 2, 0);   /* one call: a retry would be unaligned */
			} while (n < 0 && errno == EINTR);
			close(fd);
			iov[1].iov_len = (size_t)len;
		}
	}
	if (n != (ssize_t)(HDR_SIZE + len)) {
		fd = openat(t->chunks_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return read_errno(errno);
		n = rw_full(fd, iov, len ? 2 : 1, false);
		err = errno;
		close(fd);
	}
	if (n < 0)
		return read_errno(err);
	if ((uint64_t)n != HDR_SIZE + len)   /* truncated: not what we wrote */
		return READ_BAD;
	if (!hdr_decode(hdr, &h) || !hdr_matches(&h, id) || h.data_len != len || h.xxh != xxh ||
	    h.owner_hash != t->owner_hash)
		return READ_BAD;
	if (XXH3_64bits(buf, len) != xxh)
		return READ_BAD;
	return READ_OK;
}

/* Write a chunk file: temporary name, all bytes, rename.  On failure
 * nothing is left behind; returns 0 or the errno. */
static int chunk_file_write(struct ssd_tier *t, const struct ssd_entry *e, const void *data,
			    size_t len)
{
	struct chunk_id id = entry_id(e);
	char name[NAME_BUF], tmp[NAME_BUF];
	struct iovec iov[2];
	int fd, err = 0;
	ssize_t n;

	chunk_name(name, e->hi, e->lo, NULL);
	chunk_name(tmp, e->hi, e->lo, ".tmp");
	hdr_encode(t->wbuf, &id, len, e->xxh, t->owner_hash);
	(void)unlinkat(t->chunks_fd, tmp, 0);   /* a leftover of a failed write */
	fd = openat(t->chunks_fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		char sub[3] = { name[0], name[1], '\0' };
		if (mkdirat(t->chunks_fd, sub, 0700) < 0 && errno != EEXIST)
			return errno;
		fd = openat(t->chunks_fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
			    0600);
	}
	if (fd < 0)
		return errno;
	/* 0600 whatever the umask: the mode is part of the contract. */
	if (fchmod(fd, 0600) < 0)
		err = errno;
	iov[0] = (struct iovec){ t->wbuf, HDR_SIZE };
	iov[1] = (struct iovec){ (void *)(uintptr_t)data, len };
	if (!err) {
		n = rw_full(fd, iov, len ? 2 : 1, true);
		if (n < 0)
			err = errno;
		else if ((uint64_t)n != HDR_SIZE + len)
			err = EIO;
	}
	if (close(fd) < 0 && !err)
		err = errno;
	if (!err && renameat(t->chunks_fd, tmp, t->chunks_fd, name) < 0)
		err = errno;
	if (err)
		(void)unlinkat(t->chunks_fd, tmp, 0);
	return err;
}

/* Delete an entry already out of the table: its file, its record, it.
 * Writer thread (or open/close, when there is no writer). */
static void entry_destroy(struct ssd_tier *t, struct ssd_entry *e)
{
	char name[NAME_BUF];
	struct chunk_id id = entry_id(e);

	chunk_name(name, e->hi, e->lo, NULL);
	if (unlinkat(t->chunks_fd, name, 0) < 0 && errno != ENOENT)
		log_debug("ssd tier: unlink %s: %s", name, strerror(errno));
	/* A failure leaves a record whose file is gone: dropped at next open. */
	(void)cache_index_chunk_del(t->ix, &id);
	free(e);
}

static void doomed_destroy(struct ssd_tier *t, struct ssd_entry *d)
{
	while (d) {
		struct ssd_entry *next = d->dnext;
		entry_destroy(t, d);
		d = next;
	}
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
		struct statvfs sv;
		if (fstatvfs(t->dir_fd, &sv) < 0) {
			log_warn("ssd tier %s: statvfs: %s", t->dir, strerror(errno));
			return false;
		}
		avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		reserve = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * t->min_free_pct;
		pthread_mutex_lock(&t->lock);
		used = t->bytes_used;
		pthread_mutex_unlock(&t->lock);
		if (avail + used < reserve + need)
			return false;
	}
	for (unsigned n = 0;; n++) {
		struct ssd_entry *v;

		pthread_mutex_lock(&t->lock);
		if ((!t->capacity || t->bytes_used + need <= t->capacity) &&
		    (!check_fs || avail >= reserve + need) &&
		    (need == 0 ||
		     evict_policy_size(t->policy) < evict_policy_capacity(t->policy))) {
			pthread_mutex_unlock(&t->lock);
			return true;
		}
		if (n == 0 && key && t->plans &&
		    plan_slot_future(t->plans, key, true) == PLAN_DONE) {
			pthread_mutex_unlock(&t->lock);
			*rejected = true;
			return false;
		}
		v = n < EVICT_PASS_MAX ? victim_choose(t) : NULL;
		if (!v) {
			pthread_mutex_unlock(&t->lock);
			return false;
		}
		if (n == 0 && candidate && !evict_policy_admit(t->policy, *candidate, v->lo)) {
			pthread_mutex_unlock(&t->lock);
			*rejected = true;
			return false;
		}
		table_remove(t, v);
		pthread_mutex_unlock(&t->lock);
		avail += v->file_bytes;   /* freed by the unlink below (estimate) */
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

/* The index record of entry e; its file name into name (NAME_BUF bytes)
 * when name is not NULL. */
static void entry_record(const struct ssd_tier *t, const struct ssd_entry *e,
			 struct cache_index_rec *rec, char *name)
{
	char buf[NAME_BUF];

	if (!name)
		name = buf;
	memset(rec, 0, sizeof(*rec));
	chunk_name(name, e->hi, e->lo, NULL);
	snprintf(rec->loc, sizeof(rec->loc), "chunks/%s", name);
	rec->file_bytes = e->file_bytes;
	rec->data_len = e->data_len;
	rec->xxh = e->xxh;
	rec->hits = e->hits;
	rec->last_access = e->last_access;
	rec->policy_stat = e->state == ENTRY_STORED && t->policy ?
				   evict_policy_stat_get(t->policy, e->lo) : e->policy_stat;
}

static void job_store(struct ssd_tier *t, struct job *j)
{
	struct ssd_entry *e = j->e;
	struct chunk_id id = entry_id(e);
	struct cache_index_rec rec;
	char name[NAME_BUF];
	bool rejected = false;
	int err, rc;

	if (in_backoff(t))
		goto drop;
	e->data_len = j->len;
	e->file_bytes = file_bytes_of(j->len);
	if (!make_room(t, e->file_bytes, j->force ? NULL : &e->lo, j->force ? NULL : e->key,
		       &rejected))
		goto drop;
	e->xxh = XXH3_64bits(j->data, j->len);
	err = chunk_file_write(t, e, j->data, j->len);
	if (err) {
		degrade(t, "chunk write", err);
		goto fail;
	}
	entry_record(t, e, &rec, name);
	rec.last_access = clock_wall_coarse_s();   /* e is updated under the lock below */
	rc = cache_index_chunk_put(t->ix, &id, &rec);
	if (rc != TFS_OK) {
		(void)unlinkat(t->chunks_fd, name, 0);
		degrade(t, "index write", rc == TFS_E_NOSPC ? ENOSPC : EIO);
		goto fail;
	}
	if (atomic_exchange(&t->degraded, false))
		log_info("ssd tier %s: writes succeed again; no longer degraded", t->dir);
	pthread_mutex_lock(&t->lock);
	/* PENDING -> STORED: now readers may see it. */
	table_remove(t, e);
	e->state = ENTRY_STORED;
	e->last_access = rec.last_access;
	e->pinned = t->pins && pin_set_tier(t->pins, e->key) == PIN_SSD;
	table_insert(t, e);
	pthread_mutex_unlock(&t->lock);
	STAT_ADD(t, insertions, 1);
	STAT_ADD(t, bytes_fetched, j->len);
	j->release(j->arg);
	return;
fail:
	STAT_ADD(t, io_errors, 1);
drop:
	STAT_ADD(t, dropped, !rejected);
	STAT_ADD(t, rejected, rejected);
	pthread_mutex_lock(&t->lock);
	table_remove(t, e);
	pthread_mutex_unlock(&t->lock);
	free(e);
	j->release(j->arg);
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
	char name[NAME_BUF];
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
	free(e);
	chunk_name(name, hi, lo, NULL);
	(void)unlinkat(t->chunks_fd, name, 0);
	cache_index_batch_chunk_del(d->b, id);
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

static void *writer_main(void *arg)
{
	struct ssd_tier *t = arg;

	for (;;) {
		struct ssd_entry *d;
		struct job *j;

		pthread_mutex_lock(&t->lock);
		while (!t->q_head && !t->doomed && !t->stopping)
			pthread_cond_wait(&t->work_cond, &t->lock);
		/* Doomed entries first: a re-store of the same chunk may be the
		 * next job, and its file must not be deleted after it is written. */
		d = t->doomed;
		t->doomed = NULL;
		t->doomed_busy = d != NULL;
		j = t->q_head;
		if (j) {
			t->q_head = j->next;
			if (!t->q_head)
				t->q_tail = NULL;
			if (j->kind == JOB_STORE)
				t->q_stores--;
			else
				t->q_drops--;
		}
		if (!j && !d && t->stopping) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		pthread_mutex_unlock(&t->lock);

		doomed_destroy(t, d);
		if (j) {
			if (j->kind == JOB_STORE)
				job_store(t, j);
			else
				job_drop(t, j);
			free(j->key);
			free(j);
		}

		pthread_mutex_lock(&t->lock);
		t->doomed_busy = false;
		if (j)
			t->seq_done++;
		pthread_cond_broadcast(&t->done_cond);
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

/* ---- open: directory, identity, reconcile ---- */

/* Check, create or tighten the cache directory; open it and chunks/. */
static int dir_prepare(struct ssd_tier *t, char *err, size_t errlen)
{
	struct stat st, st2;
	bool has_index = false, has_chunks = false;
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
	 * there: only an empty one or one with our layout is a cache. */
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
		if (!strcmp(de->d_name, "index"))
			has_index = true;
		else if (!strcmp(de->d_name, "chunks"))
			has_chunks = true;
		else if (strcmp(de->d_name, "lost+found") != 0)   /* a fresh filesystem's root */
			others++;
	}
	closedir(d);
	if (others && !has_index && !has_chunks) {
		snprintf(err, errlen, "%s is not a tierfs cache directory (it holds other files and no index/ or chunks/); refusing to use or wipe it",
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
		const char *sub = i ? "chunks" : "index";
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
	t->chunks_fd = openat(t->dir_fd, "chunks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->chunks_fd < 0) {
		snprintf(err, errlen, "cannot open %s/chunks: %s", t->dir, strerror(errno));
		return TFS_E_IO;
	}
	return TFS_OK;
}

/* Is name "XX" (a chunk subdirectory)? */
static bool is_subdir_name(const char *s)
{
	return hexval(s[0]) >= 0 && hexval(s[1]) >= 0 && s[2] == '\0';
}

/* Is name 32 hex digits, optionally followed by ".tmp"? */
static bool is_chunk_name(const char *s, bool *tmp)
{
	for (int i = 0; i < 32; i++)
		if (hexval(s[i]) < 0)
			return false;
	*tmp = strcmp(s + 32, ".tmp") == 0;
	return s[32] == '\0' || *tmp;
}

/* Called per chunk-named file under chunks/XX/ (tmp files included). */
typedef void (*chunk_file_fn)(struct ssd_tier *t, int subfd, const char *sub, const char *name,
			      bool tmp, void *ctx);

/* Visit the chunk-named files of every chunks/XX/ directory.  Names we
 * would never write are left alone (they are not ours). */
static int chunks_walk(struct ssd_tier *t, chunk_file_fn fn, void *ctx)
{
	int fd = dup(t->chunks_fd);
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
		sfd = openat(t->chunks_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			continue;
		sd = fdopendir(sfd);
		if (!sd) {
			close(sfd);
			continue;
		}
		while ((fe = readdir(sd)) != NULL) {
			bool tmp;
			if (is_chunk_name(fe->d_name, &tmp))
				fn(t, sfd, de->d_name, fe->d_name, tmp, ctx);
		}
		closedir(sd);
	}
	closedir(top);
	return TFS_OK;
}

static void wipe_file(struct ssd_tier *t, int subfd, const char *sub, const char *name, bool tmp,
		      void *ctx)
{
	if (unlinkat(subfd, name, 0) == 0)
		(*(size_t *)ctx)++;
}

/* Delete every chunk file (ours by name and place) and every record. */
static int cache_wipe(struct ssd_tier *t, bool quiet, char *err, size_t errlen)
{
	size_t n = 0;
	int rc = cache_index_clear(t->ix);

	if (rc == TFS_OK)
		rc = chunks_walk(t, wipe_file, &n);
	if (rc != TFS_OK)
		snprintf(err, errlen, "cannot wipe cache directory %s: %s", t->dir, tfs_strerror(rc));
	else if (!quiet || n)
		log_info("ssd tier %s: wiped (%zu chunk files deleted)", t->dir, n);
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
		/* A new cache, or an index lost with its files left: whose chunks
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
		w += snprintf(why + w, sizeof(why) - (size_t)w, "; its format is %u, this tierfs writes %u",
			      format, SSD_FORMAT_VERSION);
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

/* The chunk files found on disk at open, sorted for lookup by name. */
struct found {
	uint64_t hi, lo;
	bool claimed;     /* a record points at it */
};

struct reconcile {
	struct found *f;
	size_t n, cap;
	bool nomem;
	struct cache_index_batch *b;
	size_t tmp, records, dropped_records, adopted, bad;
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
			      bool tmp, void *ctx)
{
	struct reconcile *r = ctx;
	uint64_t hi, lo;

	if (tmp) {   /* an interrupted write */
		if (unlinkat(subfd, name, 0) == 0)
			r->tmp++;
		return;
	}
	if (name[0] != sub[0] || name[1] != sub[1] || !parse_hex128(name, &hi, &lo)) {
		if (unlinkat(subfd, name, 0) == 0)   /* misplaced: never served */
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
	r->f[r->n++] = (struct found){ hi, lo, false };
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
	struct found key, *f = NULL;
	struct ssd_entry *e;
	char name[NAME_BUF], loc[NAME_BUF + 8] = "";

	r->records++;
	if (id_fits(id)) {
		id_hash(id, &key.hi, &key.lo);
		chunk_name(name, key.hi, key.lo, NULL);
		snprintf(loc, sizeof(loc), "chunks/%s", name);
		f = bsearch(&key, r->f, r->n, sizeof(*r->f), found_cmp);
	}
	/* No file, a location we would not have written, or an impossible
	 * length: the record can never serve a read. */
	if (!f || f->claimed || strcmp(loc, rec->loc) != 0 || rec->data_len > t->chunk_size ||
	    rec->file_bytes != file_bytes_of(rec->data_len)) {
		cache_index_batch_chunk_del(r->b, id);
		batch_maybe_commit(t, r->b);
		r->dropped_records++;
		return 0;
	}
	e = entry_new(id, key.hi, key.lo);
	if (!e)
		return TFS_E_NOMEM;
	f->claimed = true;
	e->state = ENTRY_STORED;
	e->data_len = rec->data_len;
	e->file_bytes = rec->file_bytes;
	e->xxh = rec->xxh;
	e->hits = rec->hits;
	e->last_access = rec->last_access;
	e->policy_stat = rec->policy_stat;
	table_insert(t, e);
	return 0;
}

/* A chunk file with no record (killed between rename and index put, or
 * copied in): adopt it when its header is valid, names this file and is
 * of this owner; delete it otherwise.  The data checksum is verified on
 * its first read, like any other. */
static void reconcile_adopt(struct ssd_tier *t, struct reconcile *r, const struct found *f)
{
	_Alignas(64) unsigned char hdr[HDR_SIZE];
	char name[NAME_BUF], *key = NULL, *etag;
	struct hdr_info h;
	struct cache_index_rec rec;
	struct chunk_id id;
	struct ssd_entry *e = NULL;
	struct stat st;
	uint64_t hi, lo;
	bool ok = false;
	int fd;

	chunk_name(name, f->hi, f->lo, NULL);
	fd = openat(t->chunks_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (pread(fd, hdr, HDR_SIZE, 0) != (ssize_t)HDR_SIZE || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || !hdr_decode(hdr, &h))
		goto out;
	if (h.owner_hash != t->owner_hash || h.data_len > t->chunk_size ||
	    (uint64_t)st.st_size != HDR_SIZE + h.data_len)
		goto out;
	key = malloc((size_t)h.key_len + h.etag_len + 2);
	if (!key)
		goto out;
	memcpy(key, h.key, h.key_len);
	key[h.key_len] = '\0';
	etag = key + h.key_len + 1;
	memcpy(etag, h.etag, h.etag_len);
	etag[h.etag_len] = '\0';
	if (strlen(key) != h.key_len || strlen(etag) != h.etag_len)   /* a NUL inside */
		goto out;
	id = (struct chunk_id){ key, etag, h.index };
	id_hash(&id, &hi, &lo);
	if (hi != f->hi || lo != f->lo || table_find(t, &id, hi, lo))
		goto out;
	e = entry_new(&id, hi, lo);
	if (!e)
		goto out;
	e->state = ENTRY_STORED;
	e->data_len = h.data_len;
	e->file_bytes = file_bytes_of(h.data_len);
	e->xxh = h.xxh;
	e->last_access = (uint64_t)st.st_mtime;
	entry_record(t, e, &rec, NULL);
	cache_index_batch_chunk_put(r->b, &id, &rec);
	batch_maybe_commit(t, r->b);
	table_insert(t, e);
	r->adopted++;
	ok = true;
out:
	close(fd);
	free(key);
	if (!ok && unlinkat(t->chunks_fd, name, 0) == 0)
		r->bad++;
}

/* Build the eviction policy over the loaded entries, restoring each one's
 * statistics.  Its key capacity is the number of POLICY_KEY_GRAIN chunks
 * (or full chunks, when smaller) the byte bound holds (the whole
 * filesystem's worth when only min_free_pct bounds the tier), at most
 * POLICY_KEYS_MAX, and never less than what is loaded.  Counted in full
 * chunks, a dataset of 100 KB images would fill 1/80 of the bytes with
 * 8 MiB chunks: the byte bound, not the key count, must be what binds.
 * A key costs the policy about 85 bytes (TinyLFU): 4M keys, 340 MiB, for
 * a tier of 256 GiB and more (0.12% of the bytes it bounds). */
static int policy_load(struct ssd_tier *t)
{
	uint64_t bytes = t->capacity, keys;
	struct statvfs sv;

	if (!bytes && fstatvfs(t->dir_fd, &sv) == 0)
		bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	keys = bytes / file_bytes_of(t->chunk_size < POLICY_KEY_GRAIN ? t->chunk_size
								  : POLICY_KEY_GRAIN);
	if (keys > POLICY_KEYS_MAX)
		keys = POLICY_KEYS_MAX;
	if (keys < POLICY_KEYS_MIN)
		keys = POLICY_KEYS_MIN;
	if (keys < t->entries)
		keys = t->entries;
	t->policy = evict_policy_new(t->policy_kind, (size_t)keys);
	if (!t->policy)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < t->n_buckets; i++)
		for (struct ssd_entry *e = t->buckets[i]; e; e = e->hnext) {
			evict_policy_insert(t->policy, e->lo);
			evict_policy_stat_set(t->policy, e->lo, e->policy_stat);
		}
	return TFS_OK;
}

static int reconcile(struct ssd_tier *t, char *err, size_t errlen)
{
	struct reconcile r = { 0 };
	void *ctx[2] = { t, &r };
	struct timespec t0, t1;
	uint64_t ev0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.b = cache_index_batch_new();
	if (!r.b) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	rc = chunks_walk(t, reconcile_collect, &r);
	if (rc == TFS_OK && r.nomem)
		rc = TFS_E_NOMEM;
	if (rc != TFS_OK)
		goto out;
	if (r.n)
		qsort(r.f, r.n, sizeof(*r.f), found_cmp);
	rc = cache_index_chunk_scan(t->ix, reconcile_record, ctx);
	if (rc != TFS_OK)
		goto out;
	for (size_t i = 0; i < r.n; i++)
		if (!r.f[i].claimed)
			reconcile_adopt(t, &r, &r.f[i]);
	rc = cache_index_batch_commit(t->ix, r.b);
	if (rc != TFS_OK)
		goto out;
	ev0 = atomic_load(&t->evictions);
	rc = policy_load(t);
	if (rc != TFS_OK)
		goto out;
	(void)make_room(t, 0, NULL, NULL, NULL);
	assert(table_check(t));   /* the bounds may have shrunk since last time */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("ssd tier %s: %" PRIu64 " chunks (%" PRIu64 " MiB) ready in %ld ms: %zu records, %zu dropped (no file), %zu files adopted, %zu bad and %zu temporary files deleted, %" PRIu64 " evicted to fit the bounds",
		 t->dir, t->entries, t->bytes_used >> 20,
		 (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000),
		 r.records, r.dropped_records, r.adopted, r.bad, r.tmp,
		 (uint64_t)atomic_load(&t->evictions) - ev0);
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
	cache_index_close(t->ix);
	if (t->chunks_fd >= 0)
		close(t->chunks_fd);
	if (t->dir_fd >= 0)
		close(t->dir_fd);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->work_cond);
	pthread_cond_destroy(&t->done_cond);
	evict_policy_free(t->policy);
	free(t->buckets);
	free(t->wbuf);
	free(t->dir);
	free(t);
}

int ssd_tier_open(const struct ssd_tier_config *cfg, struct ssd_tier **out, char *err,
		  size_t errlen)
{
	struct ssd_tier *t;
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!cfg->dir || !cfg->dir[0] || !cfg->owner || cfg->chunk_size == 0 ||
	    cfg->queue_max == 0 || cfg->min_free_pct > 99) {
		snprintf(err, errlen, "invalid SSD cache configuration (directory, owner, chunk size, queue length >= 1, min free 0..99)");
		return TFS_E_INVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return TFS_E_NOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->work_cond, NULL);
	pthread_cond_init(&t->done_cond, NULL);
	t->dir_fd = t->chunks_fd = -1;
	t->chunk_size = cfg->chunk_size;
	t->capacity = cfg->capacity;
	t->min_free_pct = cfg->min_free_pct;
	t->policy_kind = cfg->policy;
	t->queue_max = cfg->queue_max;
	t->owner_hash = XXH3_64bits(cfg->owner, strlen(cfg->owner));
	t->n_buckets = BUCKETS_MIN;
	t->dir = strdup(cfg->dir);
	/* "link/" would make lstat follow a symlink: drop trailing slashes. */
	for (size_t n = t->dir ? strlen(t->dir) : 0; n > 1 && t->dir[n - 1] == '/'; n--)
		t->dir[n - 1] = '\0';
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	if (posix_memalign((void **)&t->wbuf, 4096, HDR_SIZE) != 0)
		t->wbuf = NULL;
	if (!t->dir || !t->buckets || !t->wbuf) {
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
	size_t n = 0;

	if (!b)
		return;
	for (size_t i = 0; i < t->n_buckets; i++) {
		for (struct ssd_entry *e = t->buckets[i]; e; e = e->hnext) {
			struct cache_index_rec rec;
			struct chunk_id id = entry_id(e);
			char name[NAME_BUF];

			if (e->state != ENTRY_STORED)
				continue;
			entry_record(t, e, &rec, name);
			if (!e->touched && rec.policy_stat == e->policy_stat)
				continue;
			cache_index_batch_chunk_put(b, &id, &rec);
			n++;
			batch_maybe_commit(t, b);
		}
	}
	(void)cache_index_batch_commit(t->ix, b);
	cache_index_batch_free(b);
	log_debug("ssd tier %s: access statistics of %zu chunks saved", t->dir, n);
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

int ssd_tier_read(struct ssd_tier *t, const struct chunk_id *id, void *buf, size_t cap,
		  size_t *len)
{
	uint64_t hi, lo, dlen, xxh, gen;
	struct ssd_entry *e;
	enum read_result r;

	*len = 0;
	if (!id_fits(id))
		goto miss;
	id_hash(id, &hi, &lo);
	pthread_mutex_lock(&t->lock);
	evict_policy_access(t->policy, lo);
	e = table_find(t, id, hi, lo);
	if (!e || e->state != ENTRY_STORED || e->data_len > cap) {
		pthread_mutex_unlock(&t->lock);
		goto miss;
	}
	dlen = e->data_len;
	xxh = e->xxh;
	gen = e->gen;
	/* Counted as an access now: a read that then fails drops the entry,
	 * so the stats of a failed read do not outlive it. */
	if (e->hits < UINT32_MAX)
		e->hits++;
	e->last_access = clock_wall_coarse_s();
	e->touched = true;
	pthread_mutex_unlock(&t->lock);

	r = chunk_file_read(t, id, hi, lo, buf, cap, dlen, xxh);
	if (r == READ_OK) {
		STAT_ADD(t, hits, 1);
		STAT_ADD(t, bytes_served, dlen);
		*len = (size_t)dlen;
		return TFS_OK;
	}
	if (r == READ_BUSY) {
		log_debug("ssd tier: chunk %s#%" PRIu64 " not read now (out of descriptors or "
			  "memory); kept", id->key, id->index);
		goto miss;
	}
	if (r == READ_BAD)
		STAT_ADD(t, checksum_failures, 1);
	else if (r == READ_IOERR)
		STAT_ADD(t, io_errors, 1);
	log_debug("ssd tier: stored chunk %s#%" PRIu64 " unusable (%s); dropped", id->key, id->index,
		  r == READ_BAD ? "bad checksum or header" : r == READ_GONE ? "file gone" : "I/O error");
	read_drop(t, id, hi, lo, gen);
miss:
	STAT_ADD(t, misses, 1);
	return TFS_MISS;
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

static bool store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		  ssd_tier_release_fn release, void *arg, bool force, bool wait)
{
	struct ssd_entry *e = NULL;
	struct job *j = NULL;
	uint64_t hi, lo;
	bool counted = true;   /* a refusal the dropped counter reports */

	assert(release && (data || len == 0));
	if (len > t->chunk_size || !id_fits(id) || in_backoff(t))
		goto refuse;
	id_hash(id, &hi, &lo);
	e = entry_new(id, hi, lo);
	j = calloc(1, sizeof(*j));
	if (!e || !j)
		goto refuse;
	*j = (struct job){ .kind = JOB_STORE, .e = e, .data = data, .len = len,
			   .release = release, .arg = arg, .force = force };
	e->state = ENTRY_PENDING;
	pthread_mutex_lock(&t->lock);
	if (table_find(t, id, hi, lo)) {
		counted = false;   /* already stored or queued: nothing lost */
		pthread_mutex_unlock(&t->lock);
		goto refuse;
	}
	/* an operator's warm-up (force, which waits too), and a fetch ahead,
	 * wait for room in the queue: no reader waits on them, and a chunk
	 * dropped here is fetched again next epoch (a reader's write-behind
	 * is not worth a reader's wait: it is dropped) */
	while (wait && !t->stopping && t->q_stores >= t->queue_max)
		pthread_cond_wait(&t->done_cond, &t->lock);
	if (t->stopping || t->q_stores >= t->queue_max) {
		pthread_mutex_unlock(&t->lock);
		goto refuse;
	}
	table_insert(t, e);
	t->q_stores++;
	queue_push(t, j);
	pthread_mutex_unlock(&t->lock);
	return true;
refuse:
	free(e);
	free(j);
	if (counted)
		STAT_ADD(t, dropped, 1);
	release(arg);
	return false;
}

bool ssd_tier_store(struct ssd_tier *t, const struct chunk_id *id, const void *data, size_t len,
		    ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, false, false);
}

bool ssd_tier_store_wait(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, false, true);
}

bool ssd_tier_store_forced(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			   size_t len, ssd_tier_release_fn release, void *arg)
{
	return store(t, id, data, len, release, arg, true, true);
}

void ssd_tier_set_plan(struct ssd_tier *t, struct plan_slot *plans)
{
	pthread_mutex_lock(&t->lock);
	t->plans = plans;
	pthread_mutex_unlock(&t->lock);
}

/* ---- residency, pins and evictions an operator asks for ---- */

uint64_t ssd_tier_room(struct ssd_tier *t)
{
	struct statvfs sv;
	uint64_t used, avail, reserve, room;

	pthread_mutex_lock(&t->lock);
	used = t->bytes_used;
	pthread_mutex_unlock(&t->lock);
	if (fstatvfs(t->dir_fd, &sv) < 0)
		return t->capacity ? t->capacity : used;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	reserve = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * t->min_free_pct;
	room = used + (avail > reserve ? avail - reserve : 0);
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
 * held): files are unlinked by the writer only (see the invariants). */
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
		    (v = victim_choose(t)))
			entry_doom(t, v);
		e->pinned = false;
		evict_policy_insert(t->policy, e->lo);
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
			if (e->pinned) {
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
	out->degraded = atomic_load(&t->degraded);
	out->capacity = t->capacity;
	pthread_mutex_lock(&t->lock);
	out->entries = t->entries;
	out->bytes_used = t->bytes_used;
	pthread_mutex_unlock(&t->lock);
}
