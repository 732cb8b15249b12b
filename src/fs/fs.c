/* fs.c - inode table, directory listings and the read path (see fs.h).
 *
 * Invariants (under fs->lock):
 *  - every node is in both hash tables: by ino, and by (parent ino, name);
 *  - a node other than the root lives while nlookup > 0;
 *  - a directory's `listing` is an immutable, refcounted snapshot; a newer
 *    fetch replaces it, readers holding the old one keep it alive;
 *  - network I/O never happens with fs->lock held.
 * Open files copy the key and hold a reference to the object version
 * they opened, so reads do not touch the inode table at all.
 *
 * Versions: a file node points to a refcounted `fs_version` (ETag, size,
 * cache identity).  When the node learns of a different version, the old
 * record is marked superseded; handles still holding it then fail their
 * reads with TFS_E_STALE instead of serving old chunks, because the
 * kernel's page cache belongs to the inode, not to a handle: old bytes
 * read through an old handle would be seen by new opens too.  Information
 * carries the time it was learnt (a listing snapshot can be older than a
 * HEAD), and older information never overwrites newer.
 */
#include "fs/fs.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/tfs_err.h"
#include "fs/keypath.h"
#include "fs/prefetch.h"
#include "fs/readahead.h"
#include "fs/plan.h"
#include "fs/scan.h"
#include "tiers/chunk_cache.h"
#include "tiers/ssd_tier.h"

#define LIST_MAX_ENTRIES (4u * 1024 * 1024)  /* bound on one directory snapshot */
#define DIR_STASH 64          /* forgotten directories whose listing is kept */
#define RELIST_MAX 10000      /* a stale listing this big or smaller is fetched again
			       * whole (10 pages) instead of a HEAD per file */

struct dir_entry {
	char *name;
	char *etag;                /* files only */
	uint64_t size;
	int64_t mtime;
	bool is_dir;
};

struct dir_listing {
	atomic_uint refs;
	uint64_t fetched_us;
	size_t n;
	struct dir_entry *ents;    /* sorted by name, unique */
};

struct fs_version {
	atomic_uint refs;
	atomic_bool superseded;
	uint64_t serial;           /* unique per fs: kernel cache validity */
	uint64_t size;
	int64_t mtime;
	char etag[OBJ_ETAG_MAX];   /* as the server sent it; may be "" */
	/* chunk identity: the ETag, or for an object without one, its size
	 * and Last-Modified (never "" shared by two versions) */
	char cache_id[CACHE_ID_MAX];
};

struct fs_node {
	uint64_t ino;
	uint64_t parent;
	char *name;
	char *key;                 /* file: full key; dir: key prefix ending '/' or "" */
	bool is_dir;
	struct fs_version *ver;    /* files: current version, NULL until known */
	uint64_t open_serial;      /* version at the last open */
	uint64_t attr_us;          /* when type/version were learnt (source time) */
	uint64_t nlookup;
	struct dir_listing *listing;
	struct ra_dir ra;          /* dirs: opens of its files in listing order */
	bool relisting;            /* dirs: a listing fetch is under way (dir_relist) */
	int relist_rc;             /* dirs: how the last one ended */
	struct fs_node *next_ino, *next_name;
};

/* Open handles are on a list owned by the fs: a daemon stopped by a
 * signal never gets the kernel's releases, and fs_free() frees them. */
struct fs_handle_link {
	struct fs_handle_link *prev, *next;
};

struct fs_dir {
	struct fs_handle_link link;   /* first member */
	uint64_t ino, parent;
	char *key;
	struct dir_listing *listing;
};

struct fs_file {
	struct fs_handle_link link;   /* first member */
	char *key;
	struct fs_version *ver;    /* a reference */
	pthread_mutex_t ra_lock;   /* guards ra: reads of one handle may run at once */
	struct ra_file ra;
	bool once;                 /* a plan's or a scan's: read once this epoch */
};

/* A directory the kernel forgot (memory pressure, drop_caches): its
 * listing and read-ahead stream, for the node the next lookup creates.
 * Without it, a loader walking a big directory would pay a HEAD per file
 * and lose its read-ahead whenever the kernel trims its inode cache. */
struct dir_stash {
	char *key;                 /* NULL = empty slot */
	struct dir_listing *listing;
	struct ra_dir ra;
};

/* A directory being consumed in any order (see scan.h): its listing as
 * the scan saw it (a reference; entries are immutable) and the marks. */
#define SCAN_DIRS 16           /* directories scanned at once */
#define SCAN_THREADS_MAX 32

struct scan_dir {
	char *dirkey;              /* NULL = a free slot */
	uint64_t gen;              /* which scan holds the slot (fs->scan_gen) */
	struct dir_listing *listing;
	struct ra_scan st;
};

struct tfs_fs {
	struct fs_config cfg;
	char *prefix;
	struct chunk_cache *cache;
	int64_t mount_time;
	pthread_mutex_t lock;
	pthread_cond_t relisted;      /* with lock: a dir_relist() finished */
	struct fs_node **by_ino, **by_name;
	size_t n_buckets, n_nodes;
	uint64_t next_ino;
	uint64_t next_serial;
	struct fs_handle_link files, dirs;  /* list heads of open handles */
	struct prefetch_pool *pool;   /* read-ahead workers; NULL = read-ahead off */
	struct dir_stash stash[DIR_STASH];   /* under lock; a ring */
	size_t stash_next;
	atomic_uint_fast64_t unsafe, shadowed, listings, heads, lookups_remote, open_files;
	atomic_uint_fast64_t ra_files;   /* files read ahead across a directory */
	/* directory scans: scan_lock guards scans[] and scan_stop; never
	 * taken with fs->lock held, nor fs->lock with it */
	pthread_mutex_t scan_lock;
	pthread_cond_t scan_cond;
	struct scan_dir scans[SCAN_DIRS];
	size_t scan_next;             /* round-robin start of the workers */
	uint64_t scan_gen;            /* scans started, ever */
	bool scan_stop;
	/* workers whose fetch found RAM without room for an epoch's fetch:
	 * each chunk a reader reads through makes room, and wakes one */
	atomic_uint scan_room_waiters;
	unsigned n_scan_threads;
	pthread_t scan_threads[SCAN_THREADS_MAX];
	atomic_uint_fast64_t scan_files, scan_bytes;
	/* the loader's plan (plan.h); its workers are the scans', and serve
	 * it first.  plan_gen counts plans set, so a worker tells the plan
	 * it took an entry from from a newer one.  plan_lock guards both and
	 * is a leaf: taken after scan_lock or the SSD tier's lock (which
	 * asks plan_future()), nothing is taken while it is held. */
	pthread_mutex_t plan_lock;
	struct ra_plan *plan;
	uint64_t plan_gen;
	atomic_uint_fast64_t plan_files, plan_bytes;
};

static void ra_job_run(void *ctx, struct prefetch_item *item, bool cancelled);
static void *scan_worker(void *arg);
static void scan_stop_all(struct tfs_fs *fs);
static enum ssd_future plan_future(void *ctx, const char *key, bool storing);

/* Source times are in microseconds: a listing fetched and a HEAD answered
 * within one millisecond must still be ordered. */
static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void handle_add(struct tfs_fs *fs, struct fs_handle_link *head, struct fs_handle_link *l)
{
	pthread_mutex_lock(&fs->lock);
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
	pthread_mutex_unlock(&fs->lock);
}

static void handle_del(struct tfs_fs *fs, struct fs_handle_link *l)
{
	pthread_mutex_lock(&fs->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pthread_mutex_unlock(&fs->lock);
}

static bool fresh(const struct tfs_fs *fs, uint64_t at_us)
{
	return at_us && now_us() - at_us < (uint64_t)fs->cfg.metadata_ttl_ms * 1000;
}

static void version_put(struct fs_version *v)
{
	if (v && atomic_fetch_sub(&v->refs, 1) == 1)
		free(v);
}

static struct fs_version *version_get(struct fs_version *v)
{
	atomic_fetch_add(&v->refs, 1);
	return v;
}

static bool version_same(const struct fs_version *v, const struct obj_meta *m)
{
	if (v->etag[0] || m->etag[0])
		return strcmp(v->etag, m->etag) == 0 && v->size == m->size;
	return v->size == m->size && v->mtime == m->mtime;
}

/* The chunk identity of version m (see struct fs_version). */
static void cache_id_of(const struct obj_meta *m, char *out, size_t n)
{
	if (m->etag[0])
		snprintf(out, n, "%s", m->etag);
	else
		snprintf(out, n, "noetag:%llu:%lld", (unsigned long long)m->size,
			 (long long)m->mtime);
}

/* Record that file node n has version m, learnt at learned_us (lock held).
 * Older news than what the node has is ignored. */
static int node_set_version(struct tfs_fs *fs, struct fs_node *n, const struct obj_meta *m,
			    uint64_t learned_us)
{
	struct fs_version *v;

	if (n->ver && learned_us <= n->attr_us)   /* a tie keeps what we have */
		return TFS_OK;
	if (n->ver && version_same(n->ver, m)) {
		n->ver->mtime = m->mtime;
		n->attr_us = learned_us;
		return TFS_OK;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return TFS_E_NOMEM;
	atomic_init(&v->refs, 1);
	atomic_init(&v->superseded, false);
	v->serial = ++fs->next_serial;
	v->size = m->size;
	v->mtime = m->mtime;
	snprintf(v->etag, sizeof(v->etag), "%s", m->etag);
	cache_id_of(m, v->cache_id, sizeof(v->cache_id));
	if (n->ver) {
		atomic_store_explicit(&n->ver->superseded, true, memory_order_release);
		version_put(n->ver);
	}
	n->ver = v;
	n->attr_us = learned_us;
	return TFS_OK;
}

/* ---- listings ----------------------------------------------------------- */

static void listing_put(struct dir_listing *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->ents[i].name);
		free(l->ents[i].etag);
	}
	free(l->ents);
	free(l);
}

static struct dir_listing *listing_get(struct dir_listing *l)
{
	if (l)
		atomic_fetch_add(&l->refs, 1);
	return l;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct dir_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	/* equal names: directory first, so the dedup below keeps it */
	return c ? c : (int)y->is_dir - (int)x->is_dir;
}

static int listing_add(struct dir_listing *l, size_t *cap, const char *name, size_t name_len,
		       bool is_dir, const struct obj_meta *meta)
{
	struct dir_entry *e;

	if (l->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct dir_entry *ne = realloc(l->ents, nc * sizeof(*ne));
		if (!ne)
			return TFS_E_NOMEM;
		l->ents = ne;
		*cap = nc;
	}
	e = &l->ents[l->n];
	memset(e, 0, sizeof(*e));
	e->name = strndup(name, name_len);
	if (!e->name)
		return TFS_E_NOMEM;
	e->is_dir = is_dir;
	if (!is_dir && meta) {
		e->etag = strdup(meta->etag);
		if (!e->etag) {
			free(e->name);
			return TFS_E_NOMEM;
		}
		e->size = meta->size;
		e->mtime = meta->mtime;
	}
	l->n++;
	return TFS_OK;
}

/* Fetch the full listing of directory key dir (all pages). */
static int listing_fetch(struct tfs_fs *fs, const char *dir, struct dir_listing **out)
{
	struct dir_listing *l = calloc(1, sizeof(*l));
	struct obj_list_page *page = NULL;
	char *token = NULL;
	size_t cap = 0, dlen = strlen(dir), w;
	int rc = TFS_OK;

	*out = NULL;
	if (!l)
		return TFS_E_NOMEM;
	atomic_init(&l->refs, 1);
	do {
		struct tfs_errinfo ei;
		tfs_errinfo_clear(&ei);
		rc = objstore_list(fs->cfg.store, dir, "/", token, 1000, &page, &ei);
		atomic_fetch_add(&fs->listings, 1);
		if (rc != TFS_OK) {
			log_warn("listing '%s' failed: %s %s", dir, tfs_strerror(rc), ei.code);
			goto out;
		}
		for (size_t i = 0; i < page->n_prefixes + page->n_entries && rc == TFS_OK; i++) {
			bool is_prefix = i < page->n_prefixes;
			const char *item, *name;
			size_t item_len, name_len;
			const struct obj_meta *meta = NULL;
			enum keypath_kind k;

			if (is_prefix) {
				item = page->prefixes[i].prefix;
				item_len = page->prefixes[i].prefix_len;
			} else {
				item = page->entries[i - page->n_prefixes].key;
				item_len = page->entries[i - page->n_prefixes].key_len;
				meta = &page->entries[i - page->n_prefixes].meta;
			}
			k = keypath_classify(dir, dlen, item, item_len, is_prefix, &name, &name_len);
			if (k == KEYPATH_UNSAFE) {
				atomic_fetch_add(&fs->unsafe, 1);
				log_debug("left out unsafe key under '%s'", dir);
				continue;
			}
			if (k == KEYPATH_MARKER)
				continue;
			if (l->n >= LIST_MAX_ENTRIES) {
				log_warn("directory '%s' has more than %u entries; the rest are not shown",
					 dir, LIST_MAX_ENTRIES);
				page->truncated = false;
				break;
			}
			rc = listing_add(l, &cap, name, name_len, k == KEYPATH_DIR, meta);
		}
		free(token);
		token = NULL;
		if (rc == TFS_OK && page->truncated) {
			if (!page->next_token) {
				rc = TFS_E_PROTO;
			} else {
				token = strdup(page->next_token);
				if (!token)
					rc = TFS_E_NOMEM;
			}
		}
		obj_list_page_free(page);
		page = NULL;
	} while (rc == TFS_OK && token);

	/* S3 returns keys and prefixes in two sorted runs: merge, and let a
	 * directory win over a file of the same name */
	if (l->n > 1)   /* an empty directory has ents == NULL: no qsort(NULL) */
		qsort(l->ents, l->n, sizeof(*l->ents), entry_cmp);
	w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (w && strcmp(l->ents[w - 1].name, l->ents[i].name) == 0) {
			if (!l->ents[i].is_dir)
				atomic_fetch_add(&fs->shadowed, 1);
			free(l->ents[i].name);
			free(l->ents[i].etag);
			continue;
		}
		l->ents[w++] = l->ents[i];
	}
	l->n = w;
	l->fetched_us = now_us();
out:
	free(token);
	if (rc != TFS_OK) {
		listing_put(l);
		return rc;
	}
	*out = l;
	return TFS_OK;
}

/* ---- listings kept in the cache index ------------------------------------
 *
 * With an SSD tier, each fetched listing is also saved in its index, so a
 * remount within the metadata TTL lists, looks up and opens without a LIST
 * or a HEAD (and then reads its chunks from the SSD tier without a GET).
 * The TTL still rules: a saved listing is as old as the fetch it came
 * from, measured on the wall clock across the restart.
 *
 * Record "dir:" + directory key:
 *   u32 magic, u32 count, u64 wall-clock microseconds of the fetch,
 *   then per entry: u8 is_dir, u16 name length, u16 etag length,
 *   u64 size, i64 mtime, name bytes, etag bytes (native byte order: the
 *   cache never leaves its machine).
 * A record that does not parse is deleted and ignored.  Directories of
 * more than LISTING_SAVE_MAX entries are not saved (bounded record size
 * and save time).
 */
#define LISTING_MAGIC 0x544c5331u   /* "TLS1" */
#define LISTING_SAVE_MAX 200000u
#define LISTING_ENT_FIXED (1 + 2 + 2 + 8 + 8)

static uint64_t wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int listing_record_name(const char *dirkey, char **out)
{
	return asprintf(out, "dir:%s", dirkey) < 0 ? TFS_E_NOMEM : TFS_OK;
}

static void put_bytes(unsigned char **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

static void listing_save(struct tfs_fs *fs, const char *dirkey, const struct dir_listing *l,
			 uint64_t fetched_wall_us)
{
	size_t size = 16;
	unsigned char *buf, *p;
	char *name;
	uint32_t magic = LISTING_MAGIC, count = (uint32_t)l->n;

	if (!fs->cfg.ssd || l->n > LISTING_SAVE_MAX)
		return;
	for (size_t i = 0; i < l->n; i++) {
		size_t el = l->ents[i].etag ? strlen(l->ents[i].etag) : 0;
		if (strlen(l->ents[i].name) > UINT16_MAX || el > UINT16_MAX)
			return;
		size += LISTING_ENT_FIXED + strlen(l->ents[i].name) + el;
	}
	buf = malloc(size);
	if (!buf || listing_record_name(dirkey, &name) != TFS_OK) {
		free(buf);
		return;
	}
	p = buf;
	put_bytes(&p, &magic, 4);
	put_bytes(&p, &count, 4);
	put_bytes(&p, &fetched_wall_us, 8);
	for (size_t i = 0; i < l->n; i++) {
		const struct dir_entry *e = &l->ents[i];
		uint8_t is_dir = e->is_dir;
		uint16_t nl = (uint16_t)strlen(e->name), el = (uint16_t)(e->etag ? strlen(e->etag) : 0);
		put_bytes(&p, &is_dir, 1);
		put_bytes(&p, &nl, 2);
		put_bytes(&p, &el, 2);
		put_bytes(&p, &e->size, 8);
		put_bytes(&p, &e->mtime, 8);
		put_bytes(&p, e->name, nl);
		put_bytes(&p, e->etag ? e->etag : "", el);
	}
	assert((size_t)(p - buf) == size);
	if (ssd_tier_meta_put(fs->cfg.ssd, name, buf, size) != TFS_OK)
		log_debug("listing of '%s' not saved in the cache index", dirkey);
	free(name);
	free(buf);
}

static bool get_bytes(const unsigned char **p, const unsigned char *end, void *v, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	memcpy(v, *p, n);
	*p += n;
	return true;
}

/* The saved listing of dirkey if it is still within the TTL, else NULL. */
static struct dir_listing *listing_load(struct tfs_fs *fs, const char *dirkey)
{
	struct dir_listing *l = NULL;
	void *blob = NULL;
	size_t len = 0, cap = 0;
	const unsigned char *p, *end;
	uint32_t magic, count;
	uint64_t fetched, age, now_wall = wall_us(), now_mono = now_us();
	char *name;
	bool ok = false;

	if (!fs->cfg.ssd || listing_record_name(dirkey, &name) != TFS_OK)
		return NULL;
	if (ssd_tier_meta_get(fs->cfg.ssd, name, &blob, &len) != TFS_OK)
		goto out;
	p = blob;
	end = p + len;
	if (!get_bytes(&p, end, &magic, 4) || !get_bytes(&p, end, &count, 4) ||
	    !get_bytes(&p, end, &fetched, 8) || magic != LISTING_MAGIC ||
	    count > LISTING_SAVE_MAX) {
		log_warn("saved listing of '%s' is corrupt: dropped", dirkey);
		(void)ssd_tier_meta_del(fs->cfg.ssd, name);
		goto out;
	}
	ok = true;
	age = now_wall - fetched;
	if (fetched > now_wall || age >= (uint64_t)fs->cfg.metadata_ttl_ms * 1000 ||
	    age >= now_mono) {
		/* too old (or the clock went back): fetch anew, and do not
		 * keep a record nobody can use (the next fetch saves anew) */
		(void)ssd_tier_meta_del(fs->cfg.ssd, name);
		goto out;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		goto out;
	atomic_init(&l->refs, 1);
	for (uint32_t i = 0; i < count; i++) {
		uint8_t is_dir;
		uint16_t nl, el;
		struct obj_meta m;
		char nbuf[UINT16_MAX + 1];

		memset(&m, 0, sizeof(m));
		if (!get_bytes(&p, end, &is_dir, 1) || !get_bytes(&p, end, &nl, 2) ||
		    !get_bytes(&p, end, &el, 2) || !get_bytes(&p, end, &m.size, 8) ||
		    !get_bytes(&p, end, &m.mtime, 8) || (size_t)(end - p) < (size_t)nl + el ||
		    el >= sizeof(m.etag) || is_dir > 1 || nl == 0 || memchr(p, 0, nl)) {
			ok = false;
			break;
		}
		memcpy(nbuf, p, nl);
		nbuf[nl] = '\0';
		if (!keypath_component_ok(nbuf, nl)) {
			ok = false;     /* never a name a LIST could not have given */
			break;
		}
		if (i > 0 && strcmp(l->ents[i - 1].name, nbuf) >= 0) {
			ok = false;     /* lookups bisect: sorted and unique, or nothing */
			break;
		}
		memcpy(m.etag, p + nl, el);
		m.etag[el] = '\0';
		p += nl + el;
		if (listing_add(l, &cap, nbuf, nl, is_dir, is_dir ? NULL : &m) != TFS_OK) {
			ok = false;
			break;
		}
	}
	if (!ok || p != end) {
		log_warn("saved listing of '%s' is corrupt: dropped", dirkey);
		(void)ssd_tier_meta_del(fs->cfg.ssd, name);
		listing_put(l);
		l = NULL;
		goto out;
	}
	l->fetched_us = now_mono - age;
out:
	free(blob);
	free(name);
	return l;
}

/* The object metadata a listing entry carries (zeroes for a directory). */
static void entry_meta(const struct dir_entry *e, struct obj_meta *m)
{
	memset(m, 0, sizeof(*m));
	if (e->is_dir)
		return;
	m->size = e->size;
	m->mtime = e->mtime;
	snprintf(m->etag, sizeof(m->etag), "%s", e->etag ? e->etag : "");
}

static const struct dir_entry *listing_find(const struct dir_listing *l, const char *name)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->ents[mid].name, name);
		if (c == 0)
			return &l->ents[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- inode table -------------------------------------------------------- */

static size_t name_hash(const struct tfs_fs *fs, uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)(h & (fs->n_buckets - 1));
}

static size_t ino_hash(const struct tfs_fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 20) & (fs->n_buckets - 1);
}

static struct fs_node *node_by_ino(struct tfs_fs *fs, uint64_t ino)
{
	for (struct fs_node *n = fs->by_ino[ino_hash(fs, ino)]; n; n = n->next_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

static struct fs_node *node_by_name(struct tfs_fs *fs, uint64_t parent, const char *name)
{
	for (struct fs_node *n = fs->by_name[name_hash(fs, parent, name)]; n; n = n->next_name)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void node_link(struct tfs_fs *fs, struct fs_node *n)
{
	size_t bi = ino_hash(fs, n->ino), bn = name_hash(fs, n->parent, n->name);

	n->next_ino = fs->by_ino[bi];
	fs->by_ino[bi] = n;
	n->next_name = fs->by_name[bn];
	fs->by_name[bn] = n;
	fs->n_nodes++;
}

static void node_unlink(struct tfs_fs *fs, struct fs_node *n)
{
	struct fs_node **pp;

	for (pp = &fs->by_ino[ino_hash(fs, n->ino)]; *pp && *pp != n; pp = &(*pp)->next_ino)
		;
	if (*pp)
		*pp = n->next_ino;
	for (pp = &fs->by_name[name_hash(fs, n->parent, n->name)]; *pp && *pp != n;
	     pp = &(*pp)->next_name)
		;
	if (*pp)
		*pp = n->next_name;
	fs->n_nodes--;
}

static void node_free(struct fs_node *n)
{
	listing_put(n->listing);
	version_put(n->ver);
	free(n->name);
	free(n->key);
	free(n);
}

/* Grow both tables when the load passes 1 (called with the lock held). */
static void table_maybe_grow(struct tfs_fs *fs)
{
	size_t old = fs->n_buckets, nb = old * 2;
	struct fs_node **oi = fs->by_ino, **on = fs->by_name;
	struct fs_node **ni, **nn;

	if (fs->n_nodes < old)
		return;
	ni = calloc(nb, sizeof(*ni));
	nn = calloc(nb, sizeof(*nn));
	if (!ni || !nn) {          /* keep the old tables: slower, still right */
		free(ni);
		free(nn);
		return;
	}
	fs->by_ino = ni;
	fs->by_name = nn;
	fs->n_buckets = nb;
	fs->n_nodes = 0;
	for (size_t i = 0; i < old; i++) {
		for (struct fs_node *n = oi[i], *next; n; n = next) {
			next = n->next_ino;
			node_link(fs, n);
		}
	}
	free(oi);
	free(on);
}

/* Child key of directory node dir: "dirkey" + name (+ "/" for a dir). */
static char *child_key(const struct fs_node *dir, const char *name, bool is_dir)
{
	size_t dl = strlen(dir->key), nl = strlen(name);
	char *k = malloc(dl + nl + 2);

	if (!k)
		return NULL;
	memcpy(k, dir->key, dl);
	memcpy(k + dl, name, nl);
	if (is_dir)
		k[dl + nl++] = '/';
	k[dl + nl] = '\0';
	return k;
}

static void node_attr(const struct tfs_fs *fs, const struct fs_node *n, struct fs_attr *a)
{
	a->ino = n->ino;
	a->is_dir = n->is_dir;
	a->size = n->is_dir || !n->ver ? 0 : n->ver->size;
	a->mtime = n->is_dir || !n->ver || !n->ver->mtime ? fs->mount_time : n->ver->mtime;
	a->mode = n->is_dir ? (S_IFDIR | fs->cfg.dir_mode) : (S_IFREG | fs->cfg.file_mode);
	a->uid = fs->cfg.uid;
	a->gid = fs->cfg.gid;
}

static void stash_clear(struct dir_stash *s)
{
	free(s->key);
	listing_put(s->listing);
	*s = (struct dir_stash){ 0 };
}

/* Keep forgotten directory n's listing and stream (lock held).  Consumes
 * n's listing reference. */
static void stash_put(struct tfs_fs *fs, struct fs_node *n)
{
	struct dir_stash *s = &fs->stash[fs->stash_next];
	char *key;

	/* a huge listing is not kept for a directory nobody holds: 64 of
	 * them would be an unbounded share of memory (a million-entry
	 * listing is ~100 MB); one up to RELIST_MAX is cheap to keep */
	if (n->listing->n > RELIST_MAX || !(key = strdup(n->key)))
		return;
	stash_clear(s);
	s->key = key;
	s->listing = n->listing;
	s->ra = n->ra;
	n->listing = NULL;
	fs->stash_next = (fs->stash_next + 1) % DIR_STASH;
}

/* A new directory node n takes back what its forgotten predecessor left
 * (lock held). */
static void stash_take(struct tfs_fs *fs, struct fs_node *n)
{
	for (size_t i = 0; i < DIR_STASH; i++) {
		struct dir_stash *s = &fs->stash[i];

		if (s->key && strcmp(s->key, n->key) == 0) {
			n->listing = s->listing;
			n->ra = s->ra;
			s->listing = NULL;
			stash_clear(s);
			return;
		}
	}
}

/* Find or create the child `name` of parent (lock held) with what was
 * learnt about it at learned_us, add one lookup, and fill *out.  A child
 * whose type changed (file <-> dir) gets a new inode, unless the news is
 * older than what the node already knows. */
static int node_learn(struct tfs_fs *fs, struct fs_node *parent, const char *name, bool is_dir,
		      const struct obj_meta *meta, uint64_t learned_us, struct fs_attr *out)
{
	struct fs_node *n = node_by_name(fs, parent->ino, name);
	int rc;

	if (n && n->is_dir != is_dir && learned_us <= n->attr_us) {
		is_dir = n->is_dir;     /* stale news: keep the node as it is */
		meta = NULL;
	}
	if (n && n->is_dir != is_dir) {
		/* retire the old inode: it stays reachable by ino until forgotten */
		size_t bn = name_hash(fs, n->parent, n->name), bi;
		struct fs_node **pp;
		for (pp = &fs->by_name[bn]; *pp && *pp != n; pp = &(*pp)->next_name)
			;
		if (*pp)
			*pp = n->next_name;
		n->next_name = NULL;
		n->name[0] = '\0';    /* no longer findable by name */
		bi = name_hash(fs, n->parent, n->name);
		n->next_name = fs->by_name[bi];
		fs->by_name[bi] = n;
		n = NULL;
	}
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return TFS_E_NOMEM;
		n->name = strdup(name);
		n->key = child_key(parent, name, is_dir);
		if (!n->name || !n->key) {
			node_free(n);
			return TFS_E_NOMEM;
		}
		n->ino = fs->next_ino++;
		n->parent = parent->ino;
		n->is_dir = is_dir;
		if (is_dir)
			stash_take(fs, n);
		table_maybe_grow(fs);
		node_link(fs, n);
	}
	if (!is_dir && meta) {
		rc = node_set_version(fs, n, meta, learned_us);
		if (rc != TFS_OK)
			return rc;
	} else if (is_dir && learned_us > n->attr_us) {
		n->attr_us = learned_us;
	}
	n->nlookup++;
	node_attr(fs, n, out);
	return TFS_OK;
}

/* ---- public API --------------------------------------------------------- */

struct tfs_fs *fs_new(const struct fs_config *cfg)
{
	struct tfs_fs *fs;
	struct fs_node *root;

	if (!cfg->store || cfg->chunk_size == 0 || cfg->ram_bytes < cfg->chunk_size)
		return NULL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	fs->cfg = *cfg;
	fs->prefix = strdup(cfg->prefix ? cfg->prefix : "");
	fs->n_buckets = 1024;
	fs->by_ino = calloc(fs->n_buckets, sizeof(*fs->by_ino));
	fs->by_name = calloc(fs->n_buckets, sizeof(*fs->by_name));
	fs->cache = chunk_cache_new(&(struct chunk_cache_config){
		.ram_bytes = cfg->ram_bytes, .chunk_size = (size_t)cfg->chunk_size, .ssd = cfg->ssd,
		.ram_policy = (enum evict_kind)cfg->ram_policy,
		.ahead_bytes = cfg->read_ahead ? cfg->read_ahead_mem : 0 });
	root = calloc(1, sizeof(*root));
	if (!fs->prefix || !fs->by_ino || !fs->by_name || !fs->cache || !root)
		goto fail;
	if (cfg->read_ahead >= cfg->chunk_size && cfg->read_ahead_mem >= cfg->chunk_size &&
	    cfg->read_ahead_threads > 0) {
		/* jobs held (queued or filling) <= the protected bound */
		fs->pool = prefetch_pool_new(cfg->read_ahead_threads,
					     (size_t)(cfg->read_ahead_mem / cfg->chunk_size),
					     ra_job_run, fs);
		if (!fs->pool)
			goto fail;
	}
	root->ino = FS_ROOT_INO;
	root->parent = FS_ROOT_INO;
	root->is_dir = true;
	root->name = strdup("");
	root->key = strdup(fs->prefix);
	if (!root->name || !root->key)
		goto fail;
	root->nlookup = 1;
	fs->next_ino = FS_ROOT_INO + 1;
	fs->mount_time = time(NULL);
	fs->files.next = fs->files.prev = &fs->files;
	fs->dirs.next = fs->dirs.prev = &fs->dirs;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->relisted, NULL);
	node_link(fs, root);
	pthread_mutex_init(&fs->scan_lock, NULL);
	pthread_mutex_init(&fs->plan_lock, NULL);
	pthread_cond_init(&fs->scan_cond, NULL);
	if (cfg->ssd)
		ssd_tier_set_future_fn(cfg->ssd, plan_future, fs);
	for (unsigned i = 0; i < cfg->scan_threads && i < SCAN_THREADS_MAX; i++) {
		if (pthread_create(&fs->scan_threads[i], NULL, scan_worker, fs) != 0)
			break;             /* fewer fetchers: slower, not wrong */
		fs->n_scan_threads++;
	}
	return fs;
fail:
	if (root)
		node_free(root);
	prefetch_pool_free(fs->pool);
	chunk_cache_free(fs->cache);
	free(fs->by_ino);
	free(fs->by_name);
	free(fs->prefix);
	free(fs);
	return NULL;
}

static void dir_free(struct fs_dir *d)
{
	listing_put(d->listing);
	free(d->key);
	free(d);
}

static void file_free(struct fs_file *f)
{
	pthread_mutex_destroy(&f->ra_lock);
	version_put(f->ver);
	free(f->key);
	free(f);
}

void fs_free(struct tfs_fs *fs)
{
	if (!fs)
		return;
	if (fs->cfg.ssd)
		ssd_tier_set_future_fn(fs->cfg.ssd, NULL, NULL);   /* it takes plan_lock */
	scan_stop_all(fs);              /* its workers fill the cache too */
	prefetch_pool_free(fs->pool);   /* its jobs fill the cache */
	while (fs->files.next != &fs->files) {
		struct fs_handle_link *l = fs->files.next;
		handle_del(fs, l);
		file_free((struct fs_file *)l);
	}
	while (fs->dirs.next != &fs->dirs) {
		struct fs_handle_link *l = fs->dirs.next;
		handle_del(fs, l);
		dir_free((struct fs_dir *)l);
	}
	for (size_t i = 0; i < fs->n_buckets; i++) {
		for (struct fs_node *n = fs->by_ino[i], *next; n; n = next) {
			next = n->next_ino;
			node_free(n);
		}
	}
	for (size_t i = 0; i < DIR_STASH; i++)
		stash_clear(&fs->stash[i]);
	pthread_cond_destroy(&fs->relisted);
	pthread_mutex_destroy(&fs->lock);
	chunk_cache_free(fs->cache);
	free(fs->by_ino);
	free(fs->by_name);
	free(fs->prefix);
	free(fs);
}

/* Ask the server whether key "dir/name" is a directory or a file. */
static int lookup_remote(struct tfs_fs *fs, const char *dirkey, const char *name, bool *is_dir,
			 struct obj_meta *meta)
{
	size_t dl = strlen(dirkey), nl = strlen(name);
	char *key = malloc(dl + nl + 2);
	struct obj_list_page *page = NULL;
	struct tfs_errinfo ei;
	int rc;

	if (!key)
		return TFS_E_NOMEM;
	memcpy(key, dirkey, dl);
	memcpy(key + dl, name, nl);
	key[dl + nl] = '/';
	key[dl + nl + 1] = '\0';
	atomic_fetch_add(&fs->lookups_remote, 1);
	/* directory first: it wins over a file of the same name */
	rc = objstore_list(fs->cfg.store, key, NULL, NULL, 1, &page, &ei);
	atomic_fetch_add(&fs->listings, 1);
	if (rc != TFS_OK)
		goto out;
	if (page->n_entries || page->n_prefixes) {
		*is_dir = true;
		goto out;
	}
	key[dl + nl] = '\0';
	rc = objstore_head(fs->cfg.store, key, meta, &ei);
	atomic_fetch_add(&fs->heads, 1);
	*is_dir = false;
out:
	obj_list_page_free(page);
	free(key);
	return rc;
}

/* ---- revalidation by listing -------------------------------------------- */

/* A job reading a directory for longer than the metadata TTL (an epoch
 * over ImageNet takes minutes) would pay one HEAD per file once the
 * directory's listing is stale: 20 ms each on S3, a million per epoch.
 * When the stale listing is small enough (RELIST_MAX entries, 10 pages),
 * fetching it again revalidates every file in it at once.  One fetch per
 * directory at a time: the others wait for it. */

/* Make directory ino's listing fresh.  Lock held on entry and on return
 * (dropped while fetching).  TFS_OK when it is fresh now. */
static int dir_relist(struct tfs_fs *fs, uint64_t ino)
{
	struct dir_listing *l = NULL;
	struct fs_node *n;
	uint64_t wall;
	bool waited = false;
	char *key;
	int rc;

	for (;;) {
		n = node_by_ino(fs, ino);
		if (!n || !n->is_dir)
			return TFS_E_NOENT;
		if (n->listing && fresh(fs, n->listing->fetched_us))
			return TFS_OK;
		if (!n->relisting && waited)
			return n->relist_rc;   /* the fetch we waited for failed: not once more each */
		if (!n->relisting)
			break;
		pthread_cond_wait(&fs->relisted, &fs->lock);
		waited = true;
	}
	key = strdup(n->key);
	if (!key)
		return TFS_E_NOMEM;
	n->relisting = true;
	pthread_mutex_unlock(&fs->lock);
	wall = wall_us();
	rc = listing_fetch(fs, key, &l);
	if (rc == TFS_OK)
		listing_save(fs, key, l, wall);
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n) {
		n->relisting = false;
		n->relist_rc = rc;
		if (rc == TFS_OK && (!n->listing || n->listing->fetched_us < l->fetched_us)) {
			listing_put(n->listing);
			n->listing = listing_get(l);
		}
	}
	pthread_cond_broadcast(&fs->relisted);
	listing_put(l);
	free(key);
	return rc;
}

/* File node n's version from its parent's listing, fetched again first
 * if stale and small (lock held; may drop it, so n is found again by
 * ino).  true when the node is fresh now. */
static bool file_relist(struct tfs_fs *fs, uint64_t ino)
{
	struct fs_node *n = node_by_ino(fs, ino), *p;
	const struct dir_entry *e;
	struct obj_meta meta;

	if (!n || n->is_dir || !(p = node_by_ino(fs, n->parent)) || !p->listing)
		return false;
	if (!fresh(fs, p->listing->fetched_us)) {
		if (p->listing->n > RELIST_MAX || dir_relist(fs, p->ino) != TFS_OK)
			return false;
		if (!(n = node_by_ino(fs, ino)) || !(p = node_by_ino(fs, n->parent)) ||
		    !p->listing)
			return false;
	}
	e = listing_find(p->listing, n->name);
	if (!e || e->is_dir)
		return false;           /* gone, or a directory now: the HEAD will say */
	entry_meta(e, &meta);
	return node_set_version(fs, n, &meta, p->listing->fetched_us) == TFS_OK && n->ver &&
	       fresh(fs, n->attr_us);
}

/* Look name up in a listing loaded from the cache index, and make it the
 * parent's listing unless a newer one arrived meanwhile.  Consumes l. */
static int lookup_in_saved(struct tfs_fs *fs, uint64_t parent_ino, const char *name,
			   struct dir_listing *l, struct fs_attr *out)
{
	struct fs_node *parent;
	const struct dir_entry *e;
	struct obj_meta meta;
	int rc = TFS_E_NOENT;

	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, parent_ino);
	if (parent && parent->is_dir) {
		if (!parent->listing || parent->listing->fetched_us < l->fetched_us) {
			listing_put(parent->listing);
			parent->listing = listing_get(l);
		}
		/* the newest listing answers, whichever that is now */
		e = listing_find(parent->listing, name);
		if (e) {
			entry_meta(e, &meta);
			rc = node_learn(fs, parent, name, e->is_dir, &meta,
					parent->listing->fetched_us, out);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	listing_put(l);
	return rc;
}

int fs_lookup(struct tfs_fs *fs, uint64_t parent_ino, const char *name, struct fs_attr *out)
{
	struct fs_node *parent;
	struct obj_meta meta;
	char *dirkey = NULL;
	bool is_dir = false, had_listing;
	uint64_t asked_us;
	int rc;

	if (!keypath_component_ok(name, strlen(name)))
		return strlen(name) > KEYPATH_NAME_MAX ? TFS_E_NAMETOOLONG : TFS_E_NOENT;
	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, parent_ino);
	if (!parent || !parent->is_dir) {
		rc = parent ? TFS_E_NOTDIR : TFS_E_NOENT;
		goto unlock;
	}
	if (parent->listing && !fresh(fs, parent->listing->fetched_us) &&
	    parent->listing->n <= RELIST_MAX) {
		(void)dir_relist(fs, parent_ino);   /* failed: asked by name below */
		parent = node_by_ino(fs, parent_ino);
		if (!parent || !parent->is_dir) {
			rc = parent ? TFS_E_NOTDIR : TFS_E_NOENT;
			goto unlock;
		}
	}
	if (parent->listing && fresh(fs, parent->listing->fetched_us)) {
		const struct dir_entry *e = listing_find(parent->listing, name);
		if (!e) {
			rc = TFS_E_NOENT;
			goto unlock;
		}
		entry_meta(e, &meta);
		rc = node_learn(fs, parent, name, e->is_dir, &meta, parent->listing->fetched_us, out);
		goto unlock;
	}
	dirkey = strdup(parent->key);
	had_listing = parent->listing != NULL;
	pthread_mutex_unlock(&fs->lock);
	if (!dirkey)
		return TFS_E_NOMEM;

	/* a saved listing only helps a directory not listed in this mount
	 * yet: one listed (and now stale) here is newer than what was saved */
	if (!had_listing) {
		struct dir_listing *l = listing_load(fs, dirkey);
		if (l) {
			free(dirkey);
			return lookup_in_saved(fs, parent_ino, name, l, out);
		}
	}
	asked_us = now_us();
	rc = lookup_remote(fs, dirkey, name, &is_dir, &meta);
	free(dirkey);
	if (rc != TFS_OK)
		return rc;

	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, parent_ino);
	rc = parent ? node_learn(fs, parent, name, is_dir, is_dir ? NULL : &meta, asked_us, out)
		    : TFS_E_NOENT;
unlock:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

void fs_forget(struct tfs_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct fs_node *n;

	if (ino == FS_ROOT_INO)
		return;
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n) {
		n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
		if (n->nlookup == 0) {
			node_unlink(fs, n);
			if (n->is_dir && n->listing)
				stash_put(fs, n);
			node_free(n);
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

/* Refresh a file node's size/ETag if older than the TTL: from its
 * directory's listing (fetched again if it is stale and small), else
 * with a HEAD.  Called without the lock; re-finds the node by ino. */
static int file_refresh(struct tfs_fs *fs, uint64_t ino, struct fs_attr *attr,
			struct fs_file *copy_out, bool *keep_cache)
{
	struct fs_node *n;
	struct obj_meta meta;
	struct tfs_errinfo ei;
	uint64_t asked_us;
	char *key;
	int rc;

	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (!n) {
		pthread_mutex_unlock(&fs->lock);
		return TFS_E_NOENT;
	}
	if (n->is_dir || (n->ver && fresh(fs, n->attr_us)) || file_relist(fs, ino)) {
		n = node_by_ino(fs, ino);
		rc = n ? TFS_OK : TFS_E_NOENT;
		if (!n)
			goto unlock;
		goto fill;
	}
	n = node_by_ino(fs, ino);
	if (!n) {
		pthread_mutex_unlock(&fs->lock);
		return TFS_E_NOENT;
	}
	key = strdup(n->key);
	pthread_mutex_unlock(&fs->lock);
	if (!key)
		return TFS_E_NOMEM;
	asked_us = now_us();
	tfs_errinfo_clear(&ei);
	rc = objstore_head(fs->cfg.store, key, &meta, &ei);
	atomic_fetch_add(&fs->heads, 1);
	free(key);
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (!n) {
		pthread_mutex_unlock(&fs->lock);
		return TFS_E_NOENT;
	}
	if (rc != TFS_OK)
		goto unlock;
	rc = node_set_version(fs, n, &meta, asked_us);
	if (rc != TFS_OK)
		goto unlock;
fill:
	if (attr)
		node_attr(fs, n, attr);
	if (copy_out) {
		if (n->is_dir) {
			rc = TFS_E_ISDIR;
			goto unlock;
		}
		copy_out->key = strdup(n->key);
		if (!copy_out->key) {
			rc = TFS_E_NOMEM;
			goto unlock;
		}
		if (!n->ver) {         /* defensive: the HEAD above always sets it */
			free(copy_out->key);
			copy_out->key = NULL;
			rc = TFS_E_IO;
			goto unlock;
		}
		copy_out->ver = version_get(n->ver);
		/* an object without an ETag cannot prove the kernel's pages
		 * are still its own */
		*keep_cache = n->open_serial == n->ver->serial && n->ver->etag[0];
		/* the first open of this version in this mount: other versions
		 * (changed since they were cached, now or before a restart)
		 * can never be served again.  Queued under the lock, so two
		 * opens of successive versions queue their reclaims in order. */
		if (n->open_serial != n->ver->serial)
			chunk_cache_forget_versions(fs->cache, n->key, n->ver->cache_id);
		n->open_serial = n->ver->serial;
	}
unlock:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int fs_getattr(struct tfs_fs *fs, uint64_t ino, struct fs_attr *out)
{
	return file_refresh(fs, ino, out, NULL, NULL);
}

int fs_opendir(struct tfs_fs *fs, uint64_t ino, struct fs_dir **out)
{
	struct fs_node *n;
	struct fs_dir *d;
	struct dir_listing *l = NULL;
	bool had_listing;
	int rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return TFS_E_NOMEM;
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (!n || !n->is_dir) {
		rc = n ? TFS_E_NOTDIR : TFS_E_NOENT;
		goto unlock;
	}
	d->ino = n->ino;
	d->parent = n->parent;
	d->key = strdup(n->key);
	if (!d->key) {
		rc = TFS_E_NOMEM;
		goto unlock;
	}
	if (n->listing && fresh(fs, n->listing->fetched_us)) {
		d->listing = listing_get(n->listing);
		pthread_mutex_unlock(&fs->lock);
		handle_add(fs, &fs->dirs, &d->link);
		*out = d;
		return TFS_OK;
	}
	had_listing = n->listing != NULL;   /* then newer than any saved one */
	pthread_mutex_unlock(&fs->lock);

	if (!had_listing)
		l = listing_load(fs, d->key);
	if (!l) {
		uint64_t wall = wall_us();
		rc = listing_fetch(fs, d->key, &l);
		if (rc != TFS_OK)
			goto fail;
		listing_save(fs, d->key, l, wall);
	}
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n && (!n->listing || n->listing->fetched_us < l->fetched_us)) {
		listing_put(n->listing);
		n->listing = listing_get(l);
	}
	pthread_mutex_unlock(&fs->lock);
	d->listing = l;
	handle_add(fs, &fs->dirs, &d->link);
	*out = d;
	return TFS_OK;
unlock:
	pthread_mutex_unlock(&fs->lock);
fail:
	free(d->key);
	free(d);
	return rc;
}

bool fs_dir_entry(const struct fs_dir *d, size_t i, const char **name, bool *is_dir)
{
	if (i >= d->listing->n)
		return false;
	*name = d->listing->ents[i].name;
	*is_dir = d->listing->ents[i].is_dir;
	return true;
}

int fs_dir_entry_attr(struct tfs_fs *fs, struct fs_dir *d, size_t i, struct fs_attr *out)
{
	const struct dir_entry *e;
	struct fs_node *parent;
	struct obj_meta meta;
	int rc;

	if (i >= d->listing->n)
		return TFS_E_INVAL;
	e = &d->listing->ents[i];
	entry_meta(e, &meta);
	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, d->ino);
	rc = parent ? node_learn(fs, parent, e->name, e->is_dir, &meta, d->listing->fetched_us, out)
		    : TFS_E_NOENT;
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

uint64_t fs_dir_ino(const struct fs_dir *d)
{
	return d->ino;
}

uint64_t fs_dir_parent_ino(const struct fs_dir *d)
{
	return d->parent;
}

void fs_releasedir(struct tfs_fs *fs, struct fs_dir *d)
{
	if (!d)
		return;
	handle_del(fs, &d->link);
	dir_free(d);
}

/* A chunk fill's object: one version of it (etag "" = no If-Match). */
struct fill_ctx {
	struct tfs_fs *fs;
	const char *key, *etag;
	uint64_t size;
};

/* One ranged GET of a chunk fill, run on its own thread for parts > 0. */
struct fill_part {
	struct objstore *store;
	const char *key, *if_match;
	uint64_t off;
	size_t len, got;
	void *buf;
	int rc;
};

static void *fill_part_run(void *arg)
{
	struct fill_part *p = arg;
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	p->rc = objstore_get_range(p->store, p->key, p->if_match, p->off, p->len, p->buf, &p->got,
				   &ei);
	if (p->rc == TFS_OK && p->got != p->len)
		p->rc = TFS_E_STALE;   /* shorter than its size said: not our version */
	return NULL;
}

/* Fetch [start, start+want) into buf as up to FILL_MAX_PARTS ranged GETs
 * of at least FILL_PART_MIN bytes, concurrently.  One GET pays the
 * server's time to first byte (~16 ms on radosgw) before it streams and
 * one connection's bandwidth (~90 MB/s on S3); parts overlap both.  The
 * connection pool bounds the GETs in flight across all fills. */
#define FILL_PART_MIN (2u * 1024 * 1024)
#define FILL_MAX_PARTS 4

static int fill_parallel(const struct fill_ctx *c, uint64_t start, size_t want, void *buf)
{
	struct tfs_fs *fs = c->fs;
	struct fill_part parts[FILL_MAX_PARTS];
	pthread_t th[FILL_MAX_PARTS];
	bool started[FILL_MAX_PARTS] = { false };
	size_t n = want / FILL_PART_MIN, each, done = 0;
	int rc = TFS_OK;

	if (n > fs->cfg.parallel_gets)
		n = fs->cfg.parallel_gets;
	if (n > FILL_MAX_PARTS)
		n = FILL_MAX_PARTS;
	if (n < 1)
		n = 1;
	each = (want / n + 4095) & ~(size_t)4095;
	for (size_t i = 0; i < n; i++) {
		struct fill_part *p = &parts[i];
		p->store = fs->cfg.store;
		p->key = c->key;
		p->if_match = c->etag[0] ? c->etag : NULL;
		p->off = start + done;
		p->len = i == n - 1 ? want - done : each;
		p->buf = (char *)buf + done;
		p->got = 0;
		p->rc = TFS_OK;
		done += p->len;
	}
	/* parts 1.. on threads, part 0 here; a failed thread start runs its
	 * part here too, so a fill never depends on threads being available */
	for (size_t i = 1; i < n; i++)
		started[i] = pthread_create(&th[i], NULL, fill_part_run, &parts[i]) == 0;
	fill_part_run(&parts[0]);
	for (size_t i = 1; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			fill_part_run(&parts[i]);
	}
	/* the most telling failure wins: STALE (object changed) first */
	for (size_t i = 0; i < n; i++) {
		if (parts[i].rc == TFS_E_STALE)
			return TFS_E_STALE;
		if (parts[i].rc != TFS_OK && rc == TFS_OK)
			rc = parts[i].rc;
	}
	return rc;
}

static int chunk_fill(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct fill_ctx *c = ctx;
	uint64_t cs = c->fs->cfg.chunk_size, start = id->index * cs;
	size_t want = (size_t)(c->size - start < cs ? c->size - start : cs);
	int rc;

	assert(start < c->size || c->size == 0);
	assert(want <= cap);
	if (want == 0) {
		*len = 0;
		return TFS_OK;
	}
	rc = fill_parallel(c, start, want, buf);
	if (rc == TFS_E_STALE)
		log_warn("chunk %llu of '%s' is not the version opened (changed, or shorter "
			 "than its size)", (unsigned long long)id->index, c->key);
	if (rc != TFS_OK)
		return rc;
	*len = want;
	return TFS_OK;
}

/* ---- read-ahead --------------------------------------------------------- */

/* One chunk to read ahead, with its object version copied: the file may
 * be closed, or the object changed, before the job runs (then the fill's
 * If-Match fails, or the chunk is simply never read: wasted, not wrong). */
struct ra_job {
	struct prefetch_item item;   /* first member */
	uint64_t index, size;
	char etag[OBJ_ETAG_MAX];
	char cache_id[CACHE_ID_MAX];
	char key[];
};

static void ra_job_run(void *ctx, struct prefetch_item *item, bool cancelled)
{
	struct ra_job *j = (struct ra_job *)item;
	struct tfs_fs *fs = ctx;

	if (!cancelled) {
		struct fill_ctx fc = { fs, j->key, j->etag, j->size };
		struct chunk_id id = { j->key, j->cache_id, j->index };
		uint64_t cs = fs->cfg.chunk_size, start = j->index * cs;

		(void)chunk_cache_prefetch(fs->cache, &id,
					   (size_t)(j->size - start < cs ? j->size - start : cs), false,
					   chunk_fill, &fc);
	}
	free(j);
}

/* Queue chunks [first, first + n) of one object version for read-ahead.
 * Returns how many were queued: fewer when the pool is full. */
static uint64_t ra_issue(struct tfs_fs *fs, const char *key, const char *etag,
			 const char *cache_id, uint64_t size, uint64_t first, uint64_t n)
{
	size_t kl = strlen(key);

	for (uint64_t i = 0; i < n; i++) {
		struct ra_job *j = malloc(sizeof(*j) + kl + 1);

		if (!j)
			return i;
		j->index = first + i;
		j->size = size;
		snprintf(j->etag, sizeof(j->etag), "%s", etag);
		snprintf(j->cache_id, sizeof(j->cache_id), "%s", cache_id);
		memcpy(j->key, key, kl + 1);
		if (!prefetch_pool_submit(fs->pool, &j->item)) {
			free(j);
			return i;
		}
	}
	return n;
}

/* Within a file: the stream's decision, acted on. */
static void ra_file_read(struct tfs_fs *fs, struct fs_file *f, uint64_t off, uint64_t len)
{
	uint64_t first, n, done;

	pthread_mutex_lock(&f->ra_lock);
	n = ra_file_on_read(&f->ra, fs->cfg.chunk_size, fs->cfg.read_ahead, off, len,
			    f->ver->size, &first);
	if (n) {
		done = ra_issue(fs, f->key, f->ver->etag, f->ver->cache_id, f->ver->size, first, n);
		if (done < n)
			ra_file_unissue(&f->ra, first + done);
	}
	pthread_mutex_unlock(&f->ra_lock);
}

/* Across files: file node ino was opened; if its directory is being read
 * in listing order, read the next files' first bytes ahead (as listed:
 * size and ETag from the listing, no HEAD), up to read_ahead_files files
 * and read_ahead bytes beyond this one.  fs->lock held. */
static void ra_dir_open(struct tfs_fs *fs, uint64_t ino)
{
	uint64_t cs = fs->cfg.chunk_size, max = fs->cfg.read_ahead, bytes = 0;
	struct fs_node *n = node_by_ino(fs, ino), *d;
	const struct dir_listing *l;
	const struct dir_entry *e;
	size_t idx, from, i;

	if (!n || n->is_dir || !(d = node_by_ino(fs, n->parent)) || !(l = d->listing))
		return;
	if (!(e = listing_find(l, n->name)) || e->is_dir)
		return;
	idx = (size_t)(e - l->ents);
	if (!ra_dir_on_open(&d->ra, idx, &from))
		return;
	for (i = idx + 1; i < l->n && i <= idx + fs->cfg.read_ahead_files && bytes < max; i++) {
		const struct dir_entry *x = &l->ents[i];
		uint64_t want = x->size < max - bytes ? x->size : max - bytes;
		uint64_t chunks = (want + cs - 1) / cs;
		struct obj_meta m;
		char cache_id[CACHE_ID_MAX], *key;

		if (x->is_dir || x->size == 0)
			continue;
		bytes += want;
		if (i < from)
			continue;           /* read ahead at an earlier open */
		entry_meta(x, &m);
		cache_id_of(&m, cache_id, sizeof(cache_id));
		key = child_key(d, x->name, false);
		if (!key)
			break;
		if (ra_issue(fs, key, m.etag, cache_id, x->size, 0, chunks) < chunks) {
			free(key);
			break;              /* the pool is full: this file later */
		}
		free(key);
		atomic_fetch_add(&fs->ra_files, 1);
	}
	ra_dir_issued(&d->ra, i > from ? i : from);
}

/* ---- directory scans: a job consuming a directory in any order ---------- */

/* What a scan may have handed out, all directories together, this epoch:
 * what the SSD tier may hold (as much of the dataset as the cache takes),
 * else the read-ahead memory (RAM only). */
static uint64_t scan_budget(struct tfs_fs *fs)
{
	if (fs->cfg.ssd)
		return chunk_cache_pin_limit(fs->cache, PIN_SSD);
	return fs->cfg.read_ahead_mem;
}

static void scan_slot_clear(struct scan_dir *sd)
{
	free(sd->dirkey);
	listing_put(sd->listing);
	ra_scan_release(&sd->st);
	memset(sd, 0, sizeof(*sd));
}

/* File node ino was opened: mark it in its directory's scan (started, or
 * restarted for a new listing, here).  Takes fs->lock, then scan_lock.
 * true when the directory is being scanned: the file is read once this
 * epoch.  A scan's new epoch (every file of it opened) is the cache's. */
static bool scan_open(struct tfs_fs *fs, uint64_t ino)
{
	struct fs_node *n, *d;
	const struct dir_entry *e;
	struct dir_listing *l = NULL;
	struct scan_dir *sd = NULL;
	char *dirkey = NULL;
	size_t idx = 0;
	uint64_t epochs;
	bool once;

	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n && !n->is_dir && (d = node_by_ino(fs, n->parent)) && d->listing &&
	    d->listing->n >= SCAN_TRIGGER && (e = listing_find(d->listing, n->name)) &&
	    (dirkey = strdup(d->key))) {
		l = listing_get(d->listing);
		idx = (size_t)(e - l->ents);
	}
	pthread_mutex_unlock(&fs->lock);
	if (!l)
		return false;
	pthread_mutex_lock(&fs->scan_lock);
	for (size_t i = 0; i < SCAN_DIRS && !sd; i++)
		if (fs->scans[i].dirkey && strcmp(fs->scans[i].dirkey, dirkey) == 0)
			sd = &fs->scans[i];
	if (sd && sd->listing != l)
		scan_slot_clear(sd);   /* listed again since: marks of old indexes mean nothing */
	if (!sd || !sd->dirkey) {
		/* a free slot, else the one opened least lately */
		struct scan_dir *old = NULL;

		for (size_t i = 0; i < SCAN_DIRS && !(sd && !sd->dirkey); i++) {
			struct scan_dir *c = &fs->scans[i];
			if (!c->dirkey)
				sd = c;
			else if (!old || c->st.last_open_us < old->st.last_open_us)
				old = c;
		}
		if (!sd || sd->dirkey) {
			sd = old;
			scan_slot_clear(sd);
		}
		if (ra_scan_init(&sd->st, l->n) != 0) {
			pthread_mutex_unlock(&fs->scan_lock);
			listing_put(l);
			free(dirkey);
			return false;
		}
		sd->dirkey = dirkey;
		sd->listing = l;
		sd->gen = ++fs->scan_gen;
		dirkey = NULL;
		l = NULL;
	}
	epochs = sd->st.epochs;
	/* into RAM, where a file read leaves first: the budget bounds the
	 * bytes fetched and not opened yet, not all an epoch fetches (which
	 * left most of a dataset larger than the budget to be read on
	 * demand, one GET at a time) */
	if (!fs->cfg.ssd && idx < sd->listing->n)
		ra_scan_consumed(&sd->st, idx, sd->listing->ents[idx].size);
	if (ra_scan_on_open(&sd->st, idx, now_us()))
		pthread_cond_broadcast(&fs->scan_cond);
	once = sd->st.active;
	if (sd->st.epochs != epochs)
		chunk_cache_new_epoch(fs->cache);   /* its files are all needed again */
	pthread_mutex_unlock(&fs->scan_lock);
	listing_put(l);
	free(dirkey);
	return once;
}

/* One file handed out by a scan or the plan, copied: the worker fetches
 * it unlocked.  A plan's entry is a path, resolved by the worker. */
struct scan_job {
	char *key;                 /* a scan's: the object key; the plan's: the path */
	struct obj_meta meta;
	char cache_id[CACHE_ID_MAX];
	bool plan;
	uint64_t plan_gen;
	size_t plan_idx;
	/* a scan's: where the entry came from, to hand it back untaken */
	size_t scan_slot, scan_idx;
	uint64_t scan_gen, scan_epochs;
};

/* The next file any active scan hands out (scan_lock held). */
static bool scan_next_job(struct tfs_fs *fs, struct scan_job *j)
{
	uint64_t budget = 0, total = 0, now = now_us();
	bool more = false, budgeted = false;
	const char *path;

	memset(j, 0, sizeof(*j));
	pthread_mutex_lock(&fs->plan_lock);
	if (fs->plan && ra_plan_take(fs->plan, &j->plan_idx, &path)) {
		j->key = strdup(path);
		j->plan = true;
		j->plan_gen = fs->plan_gen;
		more = ra_plan_can_take(fs->plan);
	}
	pthread_mutex_unlock(&fs->plan_lock);
	if (j->plan) {
		/* an open wakes one fetcher (plan_open); when the window holds
		 * more (a new plan, a skip), each one taken wakes the next */
		if (more)
			pthread_cond_signal(&fs->scan_cond);
		return j->key != NULL;
	}

	for (size_t i = 0; i < SCAN_DIRS; i++)
		total += fs->scans[i].st.bytes_taken;
	for (size_t k = 0; k < SCAN_DIRS; k++) {
		struct scan_dir *sd = &fs->scans[(fs->scan_next + k) % SCAN_DIRS];
		uint64_t mine = sd->st.bytes_taken, room;
		size_t idx;

		if (!sd->dirkey || !sd->st.active)
			continue;
		if (!budgeted) {     /* a statvfs on an SSD tier: only for an active scan */
			budget = scan_budget(fs);
			budgeted = true;
		}
		room = budget > total - mine ? budget - (total - mine) : 0;
		while (ra_scan_take(&sd->st, now, room, &idx)) {
			const struct dir_entry *e = &sd->listing->ents[idx];
			size_t dl = strlen(sd->dirkey), nl = strlen(e->name);

			if (e->is_dir || e->size == 0)
				continue;
			if (!(j->key = malloc(dl + nl + 1)))
				return false;
			memcpy(j->key, sd->dirkey, dl);
			memcpy(j->key + dl, e->name, nl + 1);
			entry_meta(e, &j->meta);
			cache_id_of(&j->meta, j->cache_id, sizeof(j->cache_id));
			ra_scan_account(&sd->st, e->size);
			j->scan_slot = (size_t)(sd - fs->scans);
			j->scan_idx = idx;
			j->scan_gen = sd->gen;
			j->scan_epochs = sd->st.epochs;
			fs->scan_next = (fs->scan_next + k + 1) % SCAN_DIRS;
			return true;
		}
	}
	return false;
}

/* Fetch the file's chunks into the cache: to_ssd, to the SSD tier (past
 * its admission: the job will read it this epoch), else ahead into RAM.
 * Small files are one GET, sized by the listing (no HEAD).  The bytes
 * brought (0: all were there, or the fetch failed); *refused when RAM
 * had no room for a chunk the epoch may take (and it is not there). */
static uint64_t scan_fetch(struct tfs_fs *fs, const struct scan_job *j, bool to_ssd,
			   bool *refused)
{
	uint64_t cs = fs->cfg.chunk_size, size = j->meta.size, got = 0;
	struct fill_ctx fc = { fs, j->key, j->meta.etag, size };
	bool again = false;

	for (uint64_t i = 0; i * cs < size; i++) {
		struct chunk_id id = { j->key, j->cache_id, i };
		size_t want = (size_t)(size - i * cs < cs ? size - i * cs : cs);
		bool fetched = false;
		int rc;

		pthread_mutex_lock(&fs->scan_lock);
		rc = fs->scan_stop;
		pthread_mutex_unlock(&fs->scan_lock);
		if (rc)
			return got;
		if (to_ssd)
			rc = chunk_cache_warm(fs->cache, &id, want, PIN_SSD, chunk_fill, &fc, &fetched);
		else
			rc = chunk_cache_prefetch(fs->cache, &id, want, true, chunk_fill, &fc);
		if (rc != TFS_OK && rc != TFS_AGAIN)
			return got;         /* the object changed or the store fails: a reader will say */
		if (fetched || (!to_ssd && rc == TFS_OK))
			got += want;
		again |= !to_ssd && rc == TFS_AGAIN;
	}
	if (again && refused) {
		/* TFS_AGAIN is "in RAM already" or "no room": which one */
		uint64_t in_ram = 0, on_ssd = 0;

		chunk_cache_residency(fs->cache, j->key, j->cache_id, size, &in_ram, &on_ssd);
		*refused = in_ram < size;
	}
	return got;
}

/* A plan's entry: resolve its path as an open would (a listing or HEAD
 * when stale), tell the plan its size, then fetch it ahead into RAM: the
 * reader's own read decides whether the SSD tier admits it. */
static void plan_fetch(struct tfs_fs *fs, struct scan_job *j)
{
	struct fs_object o;
	uint64_t got, in_ram = 0, on_ssd = 0;
	int rc = fs_path_object(fs, j->key, &o);
	bool cached = false;

	/* a file the cache holds whole is read from there as fast as it would
	 * be copied into RAM ahead: only what the store must supply is
	 * fetched (with the SSD tier on local flash; measured, a second epoch
	 * of 3,000 files: 2.5 s copied ahead against 1.5 s not while a copy
	 * could displace a file not read yet; the same time, 0.99 against
	 * 1.03 s, since it takes only a free slot or one read through) */
	if (rc == TFS_OK)
		chunk_cache_residency(fs->cache, o.key, o.cache_id, o.size, &in_ram, &on_ssd);
	cached = rc == TFS_OK && (in_ram >= o.size || on_ssd >= o.size);
	pthread_mutex_lock(&fs->plan_lock);
	if (fs->plan && fs->plan_gen == j->plan_gen)
		ra_plan_account(fs->plan, j->plan_idx, rc == TFS_OK && !cached ? o.size : 0);
	pthread_mutex_unlock(&fs->plan_lock);
	if (rc != TFS_OK)
		return;             /* not a file (now): the reader's open will say */
	if (cached) {
		fs_object_release(&o);
		return;
	}
	free(j->key);
	j->key = o.key;
	o.key = NULL;
	memset(&j->meta, 0, sizeof(j->meta));
	j->meta.size = o.size;
	memcpy(j->meta.etag, o.etag, sizeof(j->meta.etag));
	memcpy(j->cache_id, o.cache_id, sizeof(j->cache_id));
	if ((got = scan_fetch(fs, j, false, NULL))) {
		atomic_fetch_add(&fs->plan_bytes, got);
		atomic_fetch_add(&fs->plan_files, 1);
	}
}

/* Hand a scan's entry back, to be taken again once RAM has room (scan_lock
 * held): if its scan still holds the slot, in the same epoch. */
static void scan_untake(struct tfs_fs *fs, const struct scan_job *j)
{
	struct scan_dir *sd = &fs->scans[j->scan_slot];

	if (sd->dirkey && sd->gen == j->scan_gen && sd->st.epochs == j->scan_epochs)
		ra_scan_untake(&sd->st, j->scan_idx, j->meta.size);
}

/* A scan's entry into RAM brought nothing (it was there, or its fetch
 * failed): its bytes leave the budget now (scan_lock held). */
static void scan_not_fetched(struct tfs_fs *fs, const struct scan_job *j)
{
	struct scan_dir *sd = &fs->scans[j->scan_slot];

	if (sd->dirkey && sd->gen == j->scan_gen && sd->st.epochs == j->scan_epochs)
		ra_scan_not_fetched(&sd->st, j->scan_idx, j->meta.size);
}

/* Wait (scan_lock held) for a wake-up (an open, a plan, a reader's read
 * making room) or a second. */
static void scan_wait(struct tfs_fs *fs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	pthread_cond_timedwait(&fs->scan_cond, &fs->scan_lock, &ts);
}

static void *scan_worker(void *arg)
{
	struct tfs_fs *fs = arg;
	struct scan_job j;

	pthread_mutex_lock(&fs->scan_lock);
	while (!fs->scan_stop) {
		bool refused = false, got_any = false;

		if (!scan_next_job(fs, &j)) {
			/* nothing now: an open or, for an idle scan, time will tell */
			scan_wait(fs);
			continue;
		}
		pthread_mutex_unlock(&fs->scan_lock);
		if (j.plan) {
			plan_fetch(fs, &j);
		} else {
			uint64_t got = scan_fetch(fs, &j, fs->cfg.ssd != NULL, &refused);

			/* counted only when the scan brought something the cache lacked */
			got_any = got > 0;
			if (got) {
				atomic_fetch_add(&fs->scan_bytes, got);
				atomic_fetch_add(&fs->scan_files, 1);
			}
		}
		free(j.key);
		pthread_mutex_lock(&fs->scan_lock);
		if (!j.plan && !refused && !fs->cfg.ssd && !got_any)
			scan_not_fetched(fs, &j);
		if (refused) {
			/* no room in RAM yet: handed back, taken again once a
			 * reader reads a chunk through (fs_read) */
			scan_untake(fs, &j);
			atomic_fetch_add(&fs->scan_room_waiters, 1);
			scan_wait(fs);
			atomic_fetch_sub(&fs->scan_room_waiters, 1);
		}
	}
	pthread_mutex_unlock(&fs->scan_lock);
	return NULL;
}

static void scan_stop_all(struct tfs_fs *fs)
{
	pthread_mutex_lock(&fs->scan_lock);
	fs->scan_stop = true;
	pthread_cond_broadcast(&fs->scan_cond);
	pthread_mutex_unlock(&fs->scan_lock);
	for (unsigned i = 0; i < fs->n_scan_threads; i++)
		pthread_join(fs->scan_threads[i], NULL);
	fs->n_scan_threads = 0;
	for (size_t i = 0; i < SCAN_DIRS; i++)
		scan_slot_clear(&fs->scans[i]);
	ra_plan_free(fs->plan);
	fs->plan = NULL;
	pthread_mutex_destroy(&fs->plan_lock);
	pthread_cond_destroy(&fs->scan_cond);
	pthread_mutex_destroy(&fs->scan_lock);
}

/* The SSD tier asks what the plan says of object key (see
 * ssd_tier_set_future_fn): nothing without a plan. */
static enum ssd_future plan_future(void *ctx, const char *key, bool storing)
{
	struct tfs_fs *fs = ctx;
	size_t pl = strlen(fs->prefix);
	enum ssd_future f = SSD_FUTURE_UNKNOWN;
	int n;

	if (strncmp(key, fs->prefix, pl) != 0)
		return f;
	pthread_mutex_lock(&fs->plan_lock);
	/* a plan over still tells what its epoch read: until the next one */
	if (fs->plan && (n = ra_plan_ahead(fs->plan, key + pl)) >= 0) {
		/* a chunk being stored was fetched for a read: by a reader
		 * (its open consumed it) or ahead of the plan (not yet, and
		 * that open will find it in RAM), so one open still to come
		 * is the one it serves */
		f = n > (storing ? 1 : 0) ? SSD_FUTURE_SOON : SSD_FUTURE_DONE;
	}
	pthread_mutex_unlock(&fs->plan_lock);
	return f;
}

/* File key was opened: consume it in the plan.  true when the plan,
 * still running, has it (the plan, not a scan, then fetches around it). */
static bool plan_open(struct tfs_fs *fs, const char *key, bool *once)
{
	size_t pl = strlen(fs->prefix), idx;
	bool in = false, wake;

	if (strncmp(key, fs->prefix, pl) != 0)
		return false;
	pthread_mutex_lock(&fs->plan_lock);
	in = fs->plan && !ra_plan_done(fs->plan) && ra_plan_on_open(fs->plan, key + pl, &idx);
	wake = in && ra_plan_wake_due(fs->plan);
	*once = in && ra_plan_ahead(fs->plan, key + pl) == 0;   /* not again in this plan */
	pthread_mutex_unlock(&fs->plan_lock);
	if (wake) {
		/* the window has room for a batch: one fetcher, not all of them
		 * (waking every fetcher on every open cost a second epoch from
		 * the cache 20-30% of its time); it wakes the next if there is
		 * more.
		 * Under scan_lock, so a worker between its look at the plan and
		 * its wait cannot miss it. */
		pthread_mutex_lock(&fs->scan_lock);
		pthread_cond_signal(&fs->scan_cond);
		pthread_mutex_unlock(&fs->scan_lock);
	}
	return in;
}

int fs_plan_set(struct tfs_fs *fs, struct ra_plan *p)
{
	struct ra_plan *old;

	if (p && fs->n_scan_threads == 0) {
		ra_plan_free(p);
		return TFS_E_INVAL;
	}
	/* half the read-ahead memory: what the RAM tier protects is the
	 * latest read_ahead_mem bytes fetched ahead, and the plan's files in
	 * flight, read but not yet marked so, and the loader's workers' spread
	 * need the slack.  With the whole of it, a loader benchmark (1,000
	 * files, 15 MiB of RAM) had fetched-ahead files evicted unread and
	 * fetched twice: 7.7 s and 1.6x Belady's bytes an epoch; with half,
	 * none, 1.5 s and 1.1x. */
	if (p && ra_plan_seal(p, fs->cfg.plan_window ? fs->cfg.plan_window : 256,
			      fs->cfg.read_ahead_mem / 2) != 0) {
		ra_plan_free(p);
		return TFS_E_NOMEM;
	}
	pthread_mutex_lock(&fs->plan_lock);
	old = fs->plan;
	fs->plan = p;
	fs->plan_gen++;
	pthread_mutex_unlock(&fs->plan_lock);
	chunk_cache_new_epoch(fs->cache);   /* what the old plan had read is needed again */
	pthread_mutex_lock(&fs->scan_lock);
	pthread_cond_broadcast(&fs->scan_cond);
	pthread_mutex_unlock(&fs->scan_lock);
	ra_plan_free(old);
	return TFS_OK;
}

bool fs_plan_info(struct tfs_fs *fs, struct ra_plan_info *out, bool *done)
{
	bool has;

	pthread_mutex_lock(&fs->plan_lock);
	has = fs->plan != NULL;
	if (has) {
		ra_plan_info(fs->plan, out);
		*done = ra_plan_done(fs->plan);
	}
	pthread_mutex_unlock(&fs->plan_lock);
	return has;
}

int fs_open(struct tfs_fs *fs, uint64_t ino, struct fs_file **out, bool *keep_cache)
{
	struct fs_file *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	*keep_cache = false;
	if (!f)
		return TFS_E_NOMEM;
	rc = file_refresh(fs, ino, NULL, f, keep_cache);
	if (rc != TFS_OK) {
		free(f->key);
		free(f);
		return rc;
	}
	pthread_mutex_init(&f->ra_lock, NULL);
	ra_file_init(&f->ra);
	atomic_fetch_add(&fs->open_files, 1);
	handle_add(fs, &fs->files, &f->link);
	if (fs->pool) {
		pthread_mutex_lock(&fs->lock);
		ra_dir_open(fs, ino);
		pthread_mutex_unlock(&fs->lock);
	}
	if (fs->n_scan_threads && !plan_open(fs, f->key, &f->once))
		f->once = scan_open(fs, ino);
	*out = f;
	return TFS_OK;
}

int fs_read(struct tfs_fs *fs, struct fs_file *f, uint64_t off, size_t size, struct fs_read *r)
{
	uint64_t cs = fs->cfg.chunk_size, end;
	struct fill_ctx ctx = { fs, f->key, f->ver->etag, f->ver->size };
	int rc = TFS_OK;

	r->n = 0;
	r->bytes = 0;
	if (atomic_load_explicit(&f->ver->superseded, memory_order_acquire))
		return TFS_E_STALE;
	if (off >= f->ver->size || size == 0)
		return TFS_OK;
	end = off + size > f->ver->size ? f->ver->size : off + size;
	if ((end - 1) / cs - off / cs + 1 > FS_READ_MAX_IOV)
		return TFS_E_INVAL;
	if (fs->pool)
		ra_file_read(fs, f, off, end - off);
	for (uint64_t idx = off / cs; idx * cs < end; idx++) {
		struct chunk_id id = { f->key, f->ver->cache_id, idx };
		struct chunk_ref *ref;
		uint64_t cstart = idx * cs, from, to;
		size_t want = (size_t)(f->ver->size - cstart < cs ? f->ver->size - cstart : cs);

		rc = chunk_cache_get(fs->cache, &id, want, chunk_fill, &ctx, &ref);
		if (rc != TFS_OK)
			break;
		if (chunk_ref_len(ref) != want) {
			/* a RAM chunk of this (key, ETag) from a version of another
			 * size: the store reused an ETag; never serve its bytes */
			chunk_ref_put(ref);
			rc = TFS_E_STALE;
			break;
		}
		from = off > cstart ? off - cstart : 0;
		to = end - cstart < chunk_ref_len(ref) ? end - cstart : chunk_ref_len(ref);
		r->refs[r->n] = ref;
		r->iov[r->n].iov_base = (char *)chunk_ref_data(ref) + from;
		r->iov[r->n].iov_len = (size_t)(to - from);
		r->bytes += (size_t)(to - from);
		r->n++;
	}
	/* the version may have been superseded while we fetched: checked
	 * again just before the bytes go to the (shared) page cache */
	if (rc == TFS_OK && atomic_load_explicit(&f->ver->superseded, memory_order_acquire))
		rc = TFS_E_STALE;
	if (rc != TFS_OK) {
		fs_read_done(fs, r);
		return rc;
	}
	chunk_cache_count_served(fs->cache, r->bytes);
	/* a file read once this epoch: each chunk this read finishes is of
	 * no more use until the next epoch, and the first to leave RAM */
	for (size_t i = 0; f->once && i < r->n; i++)
		if ((const char *)r->iov[i].iov_base + r->iov[i].iov_len ==
		    (const char *)chunk_ref_data(r->refs[i]) + chunk_ref_len(r->refs[i])) {
			chunk_cache_read_done(fs->cache, r->refs[i]);
			/* room for a scan's fetch that found none */
			if (atomic_load_explicit(&fs->scan_room_waiters, memory_order_relaxed)) {
				pthread_mutex_lock(&fs->scan_lock);
				pthread_cond_signal(&fs->scan_cond);
				pthread_mutex_unlock(&fs->scan_lock);
			}
		}
	return TFS_OK;
}

void fs_read_done(struct tfs_fs *fs, struct fs_read *r)
{
	for (size_t i = 0; i < r->n; i++)
		chunk_ref_put(r->refs[i]);
	r->n = 0;
	r->bytes = 0;
}

void fs_release(struct tfs_fs *fs, struct fs_file *f)
{
	if (!f)
		return;
	atomic_fetch_sub(&fs->open_files, 1);
	handle_del(fs, &f->link);
	file_free(f);
}

void fs_stats(struct tfs_fs *fs, struct fs_stats *out)
{
	out->unsafe_keys_skipped = atomic_load(&fs->unsafe);
	out->shadowed_files = atomic_load(&fs->shadowed);
	out->listings = atomic_load(&fs->listings);
	out->heads = atomic_load(&fs->heads);
	out->lookups_remote = atomic_load(&fs->lookups_remote);
	out->open_files = atomic_load(&fs->open_files);
	out->ra_files = atomic_load(&fs->ra_files);
	out->scan_files = atomic_load(&fs->scan_files);
	out->scan_bytes = atomic_load(&fs->scan_bytes);
	out->plan_files = atomic_load(&fs->plan_files);
	out->plan_bytes = atomic_load(&fs->plan_bytes);
	out->ra_refused = fs->pool ? prefetch_pool_refused(fs->pool) : 0;
	out->ra_held = fs->pool ? prefetch_pool_held(fs->pool) : 0;
	pthread_mutex_lock(&fs->lock);
	out->nodes = fs->n_nodes;
	pthread_mutex_unlock(&fs->lock);
}

struct chunk_cache *fs_chunk_cache(struct tfs_fs *fs)
{
	return fs->cache;
}

/* ---- operators' requests: files by path -------------------------------- */

/* Look name up in dir ino for an operator: the directory's listing is
 * made fresh first (one LIST, not a HEAD per name, when a tool asks about
 * thousands of files of one directory).  Adds a lookup, as fs_lookup. */
static int admin_lookup(struct tfs_fs *fs, uint64_t parent, const char *name, struct fs_attr *a)
{
	struct fs_dir *d;

	if (fs_opendir(fs, parent, &d) == TFS_OK)
		fs_releasedir(fs, d);
	return fs_lookup(fs, parent, name, a);
}

int fs_path_object(struct tfs_fs *fs, const char *path, struct fs_object *out)
{
	uint64_t walked[FS_PATH_DEPTH_MAX];
	size_t depth = 0, len = strlen(path);
	char buf[FS_PATH_MAX + 1], *comp, *save = NULL;
	uint64_t ino = FS_ROOT_INO;
	struct fs_attr a = { .is_dir = true };
	struct fs_node *n;
	int rc = TFS_OK;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > FS_PATH_MAX || path[0] == '/')
		return TFS_E_INVAL;
	memcpy(buf, path, len + 1);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0 || depth == FS_PATH_DEPTH_MAX) {
			rc = TFS_E_INVAL;
			goto forget;
		}
		if (!a.is_dir) {
			rc = TFS_E_NOTDIR;
			goto forget;
		}
		rc = admin_lookup(fs, ino, comp, &a);
		if (rc != TFS_OK)
			goto forget;
		walked[depth++] = ino = a.ino;
	}
	if (depth == 0 || a.is_dir) {
		rc = depth == 0 ? TFS_E_INVAL : TFS_E_ISDIR;
		goto forget;
	}
	/* the version a reader opening it now would get (HEAD if stale); the
	 * node's open_serial is not touched: that is the kernel's page cache
	 * validity, and only a real open may change it */
	rc = file_refresh(fs, ino, NULL, NULL, NULL);
	if (rc != TFS_OK)
		goto forget;
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (!n || !n->ver) {
		rc = TFS_E_NOENT;
	} else if (!(out->key = strdup(n->key))) {
		rc = TFS_E_NOMEM;
	} else {
		out->size = n->ver->size;
		snprintf(out->etag, sizeof(out->etag), "%s", n->ver->etag);
		snprintf(out->cache_id, sizeof(out->cache_id), "%s", n->ver->cache_id);
	}
	pthread_mutex_unlock(&fs->lock);
forget:
	while (depth > 0)
		fs_forget(fs, walked[--depth], 1);
	return rc;
}

void fs_object_release(struct fs_object *o)
{
	free(o->key);
	o->key = NULL;
}

int fs_object_warm(struct tfs_fs *fs, const struct fs_object *o, enum pin_tier tier,
		   bool (*stop)(void *ctx), void *stop_ctx, struct fs_warm *res)
{
	uint64_t cs = fs->cfg.chunk_size;
	uint64_t n = o->size ? (o->size - 1) / cs + 1 : 0;
	struct fill_ctx fc = { fs, o->key, o->etag, o->size };

	memset(res, 0, sizeof(*res));
	res->chunks = n;
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { o->key, o->cache_id, i };
		size_t want = (size_t)(o->size - i * cs < cs ? o->size - i * cs : cs);
		bool fetched;
		int rc;

		if (stop && stop(stop_ctx))
			return TFS_E_INTR;
		rc = chunk_cache_warm(fs->cache, &id, want, tier, chunk_fill, &fc, &fetched);
		if (rc != TFS_OK)
			return rc;
		if (fetched) {
			res->chunks_fetched++;
			res->bytes_fetched += want;
		}
	}
	return TFS_OK;
}
