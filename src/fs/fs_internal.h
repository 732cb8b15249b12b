/* fs_internal.h - what the files of src/fs/ share: the mount's state
 * (struct tfs_fs), its nodes, listings, versions and open handles, and the
 * functions each file offers the others.  Not for use outside src/fs/.
 *
 * The files, one job each, each using only those below it:
 *   mount.c      the mount's life: fs_new/fs_free
 *   read.c       open/read/release, and read-ahead within a file and
 *                across a directory's files in listing order
 *   workers.c    the fetchers of a job consuming a directory in any order
 *                (a scan) and of a loader's plan; the plan handed over
 *   operator.c   the operator interface: files by path, warm-up, pins,
 *                eviction, residency, traces, counters
 *   namespace.c  names to nodes: lookups, revalidation, readdir
 *   dirahead.c   listing read-ahead: the listings of the directories a
 *                walk opens next, fetched before it opens them
 *   nodes.c      the inode table, object versions, open handles; the
 *                listings kept for nodes not created yet (stash, ahead)
 *   listing.c    directory listings as data: fetched, saved in the cache
 *                index and loaded from it, searched
 *
 * Invariants (under fs->lock):
 *  - every node is in both hash tables: by ino, and by (parent ino, name);
 *  - a node other than the root lives while nlookup > 0;
 *  - a directory's `listing` is an immutable, refcounted snapshot; a newer
 *    fetch replaces it, readers holding the old one keep it alive;
 *  - network I/O never happens with fs->lock held.
 * Locks, in the order they may be taken: fs->lock; scan_lock (never with
 * fs->lock held, nor fs->lock with it); the plan slot's lock (a leaf).
 * Nobody holding scan_lock asks the chunk cache for a chunk, nor waits
 * for the SSD writer: a fetch ahead takes scan_lock while it holds a RAM
 * slot being filled (to ask whether the chunk is still wanted), and the
 * SSD writer takes it to say it made room in RAM (scan_room_made), so a
 * holder waiting for either could wait forever.
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
#ifndef TIERFS_FS_INTERNAL_H
#define TIERFS_FS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "evict/plan.h"
#include "fs/fs.h"
#include "fs/prefetch.h"
#include "fs/readahead.h"
#include "fs/scan.h"
#include "tiers/chunk_cache.h"

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
	/* under fs->scan_lock: the directory's scan as of this listing (its
	 * marks are indexes into ents), made at the first open that a scan
	 * counts, freed with the listing: a scan slot given to another
	 * directory loses nothing of it */
	struct ra_scan *scan;
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

/* A handle's pass over one chunk (file_visits in read.c). */
struct fs_visit {
	uint64_t chunk;            /* the chunk's index + 1; 0: none */
	uint64_t bytes;            /* read of it in this pass */
};

struct fs_file {
	struct fs_handle_link link;   /* first member */
	char *key;
	struct fs_version *ver;    /* a reference */
	pthread_mutex_t ra_lock;   /* guards ra and visits: reads of one handle may run at once */
	struct ra_file ra;
	struct fs_visit visits[2]; /* the passes over its two latest chunks, latest first */
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

/* A listing fetched ahead of a walk (dirahead.c fetches, nodes.c gives it
 * to its node), for directory key: the child `name` of directory ino
 * parent.  Under fs->lock. */
struct dir_ahead {
	char *key;                 /* NULL = a free slot */
	char *name;
	uint64_t parent;
	struct dir_listing *listing;   /* NULL while busy, or when its fetch brought none */
	uint64_t tried_us;         /* a fetch that brought none (failed, too big): when;
				    * not asked again ahead before the TTL has passed */
	bool busy;                 /* its fetch is queued or under way */
};

/* A directory being consumed in any order (see scan.h): its listing as
 * the scan saw it (a reference; entries are immutable), whose scan holds
 * the marks.  A slot is where the fetchers look; SCAN_DIRS bounds that
 * work, not what the scans remember. */
#define SCAN_DIRS 16           /* directories scanned at once */
#define SCAN_THREADS_MAX 32

struct scan_dir {
	char *dirkey;              /* NULL = a free slot */
	struct dir_listing *listing;
	struct ra_scan *st;        /* listing->scan */
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
	/* listing read-ahead (dirahead.c): slots under lock, NULL/0 = off */
	struct dir_ahead *ahead;
	size_t n_ahead;
	struct prefetch_pool *list_pool;
	atomic_uint_fast64_t lists_ahead;
	atomic_uint_fast64_t unsafe, shadowed, listings, heads, lookups_remote, open_files;
	atomic_uint_fast64_t ra_files;   /* files read ahead across a directory */
	/* stale-if-error (nodes.c): answers served stale, and the outage
	 * they belong to (logged once when it starts, once when it ends) */
	atomic_uint_fast64_t stale_served;
	atomic_bool store_down;
	_Atomic uint64_t down_since_us, down_last_us, down_stale_base;
	/* directory scans: scan_lock guards scans[] and scan_stop; never
	 * taken with fs->lock held, nor fs->lock with it */
	pthread_mutex_t scan_lock;
	pthread_cond_t scan_cond;
	struct scan_dir scans[SCAN_DIRS];
	size_t scan_next;             /* round-robin start of the workers */
	bool scan_stop;
	/* workers whose fetch found RAM without room for an epoch's fetch:
	 * each chunk a reader reads through makes room, and wakes one */
	atomic_uint scan_room_waiters;
	/* scan and plan jobs in hand, their room waits included (under
	 * scan_lock); scan_kick: work may be waiting for a worker's next
	 * look (set before a wake-up, cleared at each look) */
	unsigned scan_busy;
	atomic_bool scan_kick;
	unsigned n_scan_threads;
	pthread_t scan_threads[SCAN_THREADS_MAX];
	atomic_uint_fast64_t scan_files, scan_bytes;
	/* the loader's plan (evict/plan.h); its workers are the scans', and
	 * serve it first; the SSD tier's eviction reads it too.  The slot's
	 * generation tells a worker the plan it took an entry from from a
	 * newer one.  Its lock is a leaf. */
	struct plan_slot plans;
	bool plans_ready;             /* plans was set up (fs_free) */
	atomic_uint_fast64_t plan_files, plan_bytes;
	/* the kernel reading cached files itself (FUSE passthrough): on for
	 * this mount, opens handed to it, opens served here while on */
	atomic_bool passthrough;
	atomic_uint_fast64_t pt_opens, pt_declined;
	/* the access trace an operator started (fs_trace_start) */
	pthread_mutex_t trace_lock;
	struct access_trace *trace;
};

/* ---- dirahead.c ---- */
/* Set up (list_ahead and a TTL: on) and stop listing read-ahead. */
int dir_ahead_start(struct tfs_fs *fs);
void dir_ahead_stop(struct tfs_fs *fs);
/* Directory ino was opened and has a listing (lock held): fetch ahead
 * the listings of its first subdirectories and of those after it in its
 * parent's listing. */
void dir_ahead_kick(struct tfs_fs *fs, uint64_t ino);
/* Directory node n has no fresh listing (lock held): when one is being
 * fetched ahead for it, wait for that fetch (the lock is dropped: n may be
 * gone after) or take what it brought, and return true; else false. */
bool dir_ahead_wait(struct tfs_fs *fs, struct fs_node *n);

/* ---- listing.c ---- */
void listing_put(struct dir_listing *l);
struct dir_listing *listing_get(struct dir_listing *l);
const struct dir_entry *listing_find(const struct dir_listing *l, const char *name);
/* The object metadata a listing entry carries (zeroes for a directory). */
void listing_entry_meta(const struct dir_entry *e, struct obj_meta *m);
/* Fetch the full listing of directory key dir (all pages), and save it
 * in the cache index (listing_save). */
int listing_fetch(struct tfs_fs *fs, const char *dir, struct dir_listing **out);
/* The same for a directory of max entries at most: TFS_E_TOOBIG for a
 * bigger one, found out in its first pages. */
int listing_fetch_small(struct tfs_fs *fs, const char *dir, size_t max,
			struct dir_listing **out);
/* Save l, fetched at fetched_wall_us, in the cache index (when there is
 * an SSD tier); the saved listing of dirkey if it is still within the
 * TTL (with stale: the TTL plus --max-stale, for stale_ok()), else NULL. */
void listing_save(struct tfs_fs *fs, const char *dirkey, const struct dir_listing *l,
		  uint64_t fetched_wall_us);
struct dir_listing *listing_load(struct tfs_fs *fs, const char *dirkey, bool stale);

/* ---- nodes.c ---- */
/* Is information learnt at at_us (monotonic) still within the TTL? */
bool meta_fresh(const struct tfs_fs *fs, uint64_t at_us);
/* Stale-if-error.  A revalidation of what was learnt at at_us ended with
 * rc: true when rc says the store did not answer (a transient failure,
 * never a 404) and at_us is within the TTL plus --max-stale, so the old
 * answer is served instead; counted, and the outage logged once.  Any
 * thread, lock held or not. */
bool stale_ok(struct tfs_fs *fs, int rc, uint64_t at_us);
/* During an outage, the store is asked again at most once per
 * STORE_PROBE_US; in between, true (and served as stale_ok) for what
 * stale_ok would serve, so that a job reading cached data does not pay
 * a round of retries per lookup. */
bool stale_without_asking(struct tfs_fs *fs, uint64_t at_us);
/* A metadata request to the store ended with rc: if that is an answer
 * (anything but a transient failure), an outage is over (logged). */
void store_answered(struct tfs_fs *fs, int rc);
void version_put(struct fs_version *v);
struct fs_version *version_get(struct fs_version *v);
/* The chunk identity of version m (see struct fs_version). */
void cache_id_of(const struct obj_meta *m, char *out, size_t n);
/* Record that file node n has version m, learnt at learned_us (lock
 * held).  Older news than what the node has is ignored. */
int node_set_version(struct tfs_fs *fs, struct fs_node *n, const struct obj_meta *m,
		     uint64_t learned_us);
struct fs_node *node_by_ino(struct tfs_fs *fs, uint64_t ino);
/* The child `name` of directory ino parent (lock held), NULL if unknown. */
struct fs_node *node_by_name(struct tfs_fs *fs, uint64_t parent, const char *name);
void node_link(struct tfs_fs *fs, struct fs_node *n);
void node_free(struct fs_node *n);
void node_attr(const struct tfs_fs *fs, const struct fs_node *n, struct fs_attr *a);
/* Child key of directory node dir: "dirkey" + name (+ "/" for a dir). */
char *node_child_key(const struct fs_node *dir, const char *name, bool is_dir);
/* Find or create the child `name` of parent (lock held) with what was
 * learnt about it at learned_us, add one lookup, and fill *out. */
int node_learn(struct tfs_fs *fs, struct fs_node *parent, const char *name, bool is_dir,
	       const struct obj_meta *meta, uint64_t learned_us, struct fs_attr *out);
/* Directory node n takes l (a reference of its own) when it is newer
 * than n's listing (lock held). */
void node_listing_offer(struct fs_node *n, struct dir_listing *l);
void stash_clear(struct dir_stash *s);
/* Slots of listings fetched ahead (lock held): free one; the one of
 * directory key, or NULL; give its listing to node n (if newer) and free
 * it. */
void ahead_clear(struct dir_ahead *s);
struct dir_ahead *ahead_find(struct tfs_fs *fs, const char *key);
void ahead_give(struct dir_ahead *s, struct fs_node *n);
/* The listing kept for forgotten directory key (lock held), NULL if none. */
const struct dir_listing *stash_find(const struct tfs_fs *fs, const char *key);
void fs_handle_add(struct tfs_fs *fs, struct fs_handle_link *head, struct fs_handle_link *l);
void fs_handle_del(struct tfs_fs *fs, struct fs_handle_link *l);

/* ---- namespace.c ---- */
/* Make directory ino's listing fresh (lock held; dropped while fetching). */
int dir_relist(struct tfs_fs *fs, uint64_t ino);
/* File node ino's version from its parent's listing (lock held). */
bool file_relist(struct tfs_fs *fs, uint64_t ino);
/* Look name up in a listing loaded from the cache index (consumes l). */
int listing_lookup_saved(struct tfs_fs *fs, uint64_t parent_ino, const char *name,
			 struct dir_listing *l, struct fs_attr *out);
/* Refresh node ino's attributes when older than the TTL; with copy_out,
 * the key and version an open gets. */
int file_refresh(struct tfs_fs *fs, uint64_t ino, struct fs_attr *attr,
		 struct fs_file *copy_out, bool *keep_cache);
void fs_dir_free(struct fs_dir *d);

/* ---- operator.c ---- */
/* The chunk cache's view of an object version. */
void fs_object_chunks(const struct fs_object *o, struct chunk_obj *out);

/* ---- workers.c ---- */
void *scan_worker(void *arg);
/* Stop and join the workers, drop the scans. */
void scan_stop_all(struct tfs_fs *fs);
/* File node ino was opened: mark it in its directory's scan.  true when
 * the file is read once this epoch. */
bool scan_open(struct tfs_fs *fs, uint64_t ino);
/* File key was opened: consume it in the plan.  true when the plan,
 * still running, has it; *once: not again in this plan. */
bool plan_open(struct tfs_fs *fs, const char *key, bool *once);
/* A reader read a chunk through, or the SSD writer handed a fetch
 * ahead's copy down: wake a worker waiting for RAM room. */
void scan_room_made(struct tfs_fs *fs);

/* ---- read.c ---- */
/* The prefetch pool's job runner (ctx: the fs). */
void ra_job_run(void *ctx, struct prefetch_item *item, bool cancelled);
void fs_file_free(struct fs_file *f);

#endif
