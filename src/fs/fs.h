/* fs.h - the filesystem layer: inode table, directory listings, open
 * files, byte range -> chunks, the fetchers that read ahead, and the
 * operator interface the control socket uses.  No FUSE types, so it is
 * testable without a mount; src/fuse/ translates requests into these
 * calls, src/ctl/ the control socket's.
 *
 * Below it: the chunk cache (src/tiers/chunk_cache.h), which the fs owns
 * and through which every byte comes (RAM, then SSD, then the store), and
 * the object store itself for listings and HEADs (metadata, not bytes).
 *
 * Inode numbers are assigned on first sight and stay stable while the
 * kernel holds a lookup on them (nlookup > 0); FS_ROOT_INO is the mount's
 * root (the bucket or the prefix).  All functions are thread-safe.
 */
#ifndef TIERFS_FS_H
#define TIERFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "common/counters.h"
#include "common/limits.h"
#include "s3/objstore.h"
#include "tiers/pin_set.h"

#define FS_ROOT_INO 1
#define FS_READ_MAX_IOV 34   /* a 1 MiB read over 64 KiB chunks, + slack */
#define FS_PATH_DEPTH_MAX 256
#define CACHE_ID_MAX (OBJ_ETAG_MAX + 48)

struct fs_config {
	struct objstore *store;    /* borrowed; outlives the fs */
	const char *prefix;        /* "" or "dir/sub/" */
	unsigned metadata_ttl_ms;
	uint64_t max_stale_ms;     /* stale-if-error: what was learnt is served this long
				    * past the TTL when revalidating it fails with a
				    * transient error (never a 404); 0 = off */
	uint64_t chunk_size;
	uint64_t ram_bytes;        /* RAM tier capacity (>= chunk_size) */
	int ram_policy;            /* enum evict_kind for the RAM tier */
	struct ssd_tier *ssd;      /* borrowed, outlives the fs; NULL = RAM only (the
				    * chunk cache's SSD tier) */
	struct shared_tier *shared; /* borrowed, outlives the fs; NULL = none (the chunk
				    * cache's tier shared by a cluster) */
	unsigned parallel_gets;    /* ranged GETs per chunk fill somebody waits for
				    * (1..4, parts >= 2 MiB; chunk_cache.h) */
	uint64_t read_ahead;       /* bytes a sequential stream keeps in flight ahead of
				    * its reader, within a file and across a directory's
				    * files; < chunk_size = read-ahead off */
	unsigned read_ahead_files; /* files read ahead across a directory */
	unsigned list_ahead;       /* directories whose listings are fetched ahead of a
				    * walk, at most (fs/dirahead.c); 0 = off */
	uint64_t read_ahead_mem;   /* read-ahead, all streams: queued or in flight is at
				    * most this, and so is what the RAM tier keeps from
				    * eviction for it (fetched, not yet read, among the
				    * latest issued); older unread chunks are ordinary
				    * cache, evicted by the policy */
	uint64_t random_bytes;     /* blocks kept for random readers (tiers/part_cache.h);
				    * 0 = none: a random read fetches its whole chunk */
	unsigned read_ahead_threads; /* chunk fills in flight for read-ahead */
	unsigned scan_threads;     /* files fetched at once for a job consuming a directory in
				    * any order (fs/scan.h) or for the loader's plan
				    * (evict/plan.h); 0 = off */
	unsigned plan_window;      /* files of a plan fetched ahead of its reader at most
				    * (and read_ahead_mem / 2 bytes) */
	uid_t uid;
	gid_t gid;
	mode_t file_mode;
	mode_t dir_mode;
};

struct fs_attr {
	uint64_t ino;
	bool is_dir;
	uint64_t size;
	int64_t mtime;
	mode_t mode;               /* type bits included */
	uid_t uid;
	gid_t gid;
};

struct tfs_fs;
struct chunk_cache;
struct ssd_tier;
struct shared_tier;
struct fs_dir;
struct fs_file;

/* Read result: iov[0..n) point into referenced chunk buffers (refs[i]),
 * or into buffers of blocks read from SSD (spans[i]); hand them to the
 * kernel, then fs_read_done().  Total bytes in `bytes`. */
struct fs_read {
	struct iovec iov[FS_READ_MAX_IOV];
	struct chunk_ref *refs[FS_READ_MAX_IOV];   /* or NULL */
	void *spans[FS_READ_MAX_IOV];              /* or NULL */
	size_t n;
	size_t bytes;
};

struct fs_stats {
	uint64_t unsafe_keys_skipped;  /* listing items left out of the tree */
	uint64_t shadowed_files;       /* "x" hidden because "x/" exists */
	uint64_t listings, heads, lookups_remote;
	uint64_t lists_ahead;          /* directory listings fetched ahead of a walk */
	uint64_t nodes;                /* inodes currently known */
	uint64_t open_files;
	uint64_t ra_files;             /* files read ahead across a directory */
	uint64_t ra_refused;           /* read-ahead chunks not issued: the bound was reached */
	uint64_t ra_held;              /* read-ahead chunks queued or in flight now */
	uint64_t scan_files, scan_bytes;   /* fetched for jobs consuming a directory */
	uint64_t plan_files, plan_bytes;   /* fetched ahead for the loader's plan */
	uint64_t scan_busy;            /* scan and plan fetchers at work, or woken to look */
	bool passthrough;              /* the kernel reads files wholly on SSD itself */
	uint64_t pt_opens;             /* opens handed to the kernel */
	uint64_t pt_declined;          /* opens served by the daemon while passthrough is on */
	uint64_t stale_served;         /* answers past the TTL: the store did not answer */
	bool store_down;               /* serving stale now (an outage not over yet) */
};

/* NULL on bad config or out of memory. */
struct tfs_fs *fs_new(const struct fs_config *cfg);
void fs_free(struct tfs_fs *fs);

/* Look up name in directory parent.  On TFS_OK fills *out and adds one
 * kernel lookup to out->ino.  TFS_E_NOENT for a name that does not exist
 * (or is unsafe); other errors are transient and never NOENT. */
int fs_lookup(struct tfs_fs *fs, uint64_t parent, const char *name, struct fs_attr *out);

/* Drop n kernel lookups of ino (FUSE forget). */
void fs_forget(struct tfs_fs *fs, uint64_t ino, uint64_t n);

/* Attributes of ino, refreshed with a HEAD when older than the TTL. */
int fs_getattr(struct tfs_fs *fs, uint64_t ino, struct fs_attr *out);

/* Open directory ino: a snapshot of its listing (fetched if stale). */
int fs_opendir(struct tfs_fs *fs, uint64_t ino, struct fs_dir **out);
/* Entry i of the snapshot (no "." / ".."); false past the end.
 * *name stays valid until fs_releasedir(). */
bool fs_dir_entry(const struct fs_dir *d, size_t i, const char **name, bool *is_dir);
/* readdirplus: attributes of entry i, adding one kernel lookup. */
int fs_dir_entry_attr(struct tfs_fs *fs, struct fs_dir *d, size_t i, struct fs_attr *out);
uint64_t fs_dir_ino(const struct fs_dir *d);
uint64_t fs_dir_parent_ino(const struct fs_dir *d);
void fs_releasedir(struct tfs_fs *fs, struct fs_dir *d);

/* Open file ino for reading.  *keep_cache: the kernel's cached pages of
 * this inode are still valid (same ETag as the previous open). */
int fs_open(struct tfs_fs *fs, uint64_t ino, struct fs_file **out, bool *keep_cache);
/* Read [off, off+size) as seen at open (one object version; a changed
 * object gives TFS_E_STALE).  Short only at end of file. */
int fs_read(struct tfs_fs *fs, struct fs_file *f, uint64_t off, size_t size, struct fs_read *r);
void fs_read_done(struct tfs_fs *fs, struct fs_read *r);
void fs_release(struct tfs_fs *fs, struct fs_file *f);

/* ---- the kernel reading a file by itself (FUSE passthrough) ----------
 * A file whose every byte is on the SSD tier can be handed to the kernel
 * as the file the SSD tier keeps it in (its offsets are the object's):
 * reads then never reach the daemon.  A hold keeps that file's bytes from
 * eviction while the kernel may read it. */
struct fs_backing;

/* f's version wholly on SSD: TFS_OK with *fd (read-only; the caller
 * closes it) and *out, a hold on those bytes until fs_backing_put().
 * TFS_MISS when not all on SSD (or no SSD tier, or the version was
 * superseded); TFS_E_NOMEM. */
int fs_backing_get(struct tfs_fs *fs, struct fs_file *f, int *fd, struct fs_backing **out);
/* Another open shares the file b holds: the kernel reads it again, an
 * access of every chunk. */
void fs_backing_reopened(struct tfs_fs *fs, const struct fs_backing *b);
/* Drop the hold (NULL: no-op). */
void fs_backing_put(struct tfs_fs *fs, struct fs_backing *b);
/* Is f open at the version b holds? */
bool fs_backing_same(const struct fs_backing *b, const struct fs_file *f);
/* The FUSE edge tells whether passthrough is on for this mount (decided
 * at mount time: kernel, privileges, library, options), and counts each
 * open it handed to the kernel (passed) or served itself while on. */
void fs_passthrough_set(struct tfs_fs *fs, bool on);
void fs_passthrough_count(struct tfs_fs *fs, bool passed);

/* The fs's own counters (also among fs_counters()). */
void fs_stats(struct tfs_fs *fs, struct fs_stats *out);

/* ---- the operator interface ------------------------------------------
 * What the control socket asks of a mount: files by path, warm-up, pins,
 * eviction, residency, access traces, counters and the loader's plan.
 * Each reaches the chunk cache through the fs; nothing here reads object
 * data except a warm-up. */

/* Every counter of the mount at one moment (common/counters.h). */
void fs_counters(struct tfs_fs *fs, struct tfs_counters *out);

/* Does the mount have an SSD tier? */
bool fs_has_ssd(struct tfs_fs *fs);


/* One version of a file, as an operator's request sees it. */
struct fs_object {
	char *key;                 /* full object key, owned */
	uint64_t size;
	char etag[OBJ_ETAG_MAX];
	char cache_id[CACHE_ID_MAX];   /* its chunks' name (chunk_id.etag) */
};

/* The file at path, relative to the mount root ("a/b.jpg": no leading
 * '/', no "." or ".." components), at the version an open would get now
 * (listing or HEAD when the cached one is stale).  TFS_E_NOENT,
 * TFS_E_ISDIR, TFS_E_NOTDIR, TFS_E_INVAL (a malformed path), or a
 * transient error.  Release *out with fs_object_release(). */
int fs_path_object(struct tfs_fs *fs, const char *path, struct fs_object *out);
void fs_object_release(struct fs_object *o);

struct fs_warm {
	uint64_t chunks, chunks_fetched, bytes_fetched;
};

/* Fetch every chunk of o not yet in tier (see chunk_cache_warm()), one at
 * a time; stop(stop_ctx) is asked before each (true: TFS_E_INTR).  Errors
 * are the first chunk's that failed; TFS_E_INVAL for PIN_SSD without an
 * SSD tier, TFS_AGAIN when the SSD tier refused a chunk (full of pinned
 * data, or degraded). */
int fs_object_warm(struct tfs_fs *fs, const struct fs_object *o, enum pin_tier tier,
		   bool (*stop)(void *ctx), void *stop_ctx, struct fs_warm *res);

/* Pin objs[0..n) in tier: their chunks there are never evicted.  All or
 * nothing: TFS_E_NOSPC when the tier's pinned bytes would exceed *limit
 * (set on every outcome: half the RAM tier, 90% of what the SSD tier may
 * occupy; *would_be: what they would have been), TFS_E_INVAL for PIN_SSD
 * without an SSD tier, TFS_E_TOOBIG past PIN_SET_MAX files.  Fetches
 * nothing (a warm-up does). */
int fs_pin(struct tfs_fs *fs, const struct fs_object *objs, size_t n, enum pin_tier tier,
	   uint64_t *would_be, uint64_t *limit);
/* Unpin the file at path below the mount root, by name (no lookup: a file
 * deleted since can be unpinned): true when it was pinned.  fs_unpin_all:
 * every file; how many were pinned. */
bool fs_unpin(struct tfs_fs *fs, const char *path);
size_t fs_unpin_all(struct tfs_fs *fs);

/* What an eviction did: chunks dropped (a chunk in both tiers counts
 * twice) and their bytes; chunks kept as pinned, or in use. */
struct fs_evicted {
	uint64_t chunks, bytes, pinned, busy;
};
/* Drop o's chunks (fs_evict_all: every chunk) from tiers, a mask of
 * PIN_RAM and PIN_SSD; pinned chunks and chunks in use stay.  Adds to
 * *ev. */
void fs_object_evict(struct tfs_fs *fs, const struct fs_object *o, unsigned tiers,
		     struct fs_evicted *ev);
void fs_evict_all(struct tfs_fs *fs, unsigned tiers, struct fs_evicted *ev);

/* Bytes of o in RAM and on SSD, and the tier it is pinned in.  No I/O. */
void fs_object_residency(struct tfs_fs *fs, const struct fs_object *o, uint64_t *ram,
			 uint64_t *ssd, enum pin_tier *pinned);

/* Record readers' chunk accesses into file (the simulator's format), until
 * fs_trace_stop().  TFS_OK; TFS_AGAIN when a trace is being recorded
 * already; else an error with a message in err.  fs_trace_stop: TFS_OK
 * and the records written, or TFS_MISS when none is being recorded. */
int fs_trace_start(struct tfs_fs *fs, const char *file, char *err, size_t errlen);
int fs_trace_stop(struct tfs_fs *fs, uint64_t *records);

/* ---- the loader's plan (evict/plan.h): built here, handed over whole */
struct ra_plan;

/* An empty plan to append paths to (relative to the mount root, in the
 * order they will be opened); NULL when memory ran out. */
struct ra_plan *fs_plan_new(void);
/* Append one path (len bytes).  TFS_OK; TFS_E_TOOBIG past the bounds
 * (fs_plan_bounds()), for an empty path, or when memory ran out. */
int fs_plan_add(struct ra_plan *p, const char *path, size_t len);
size_t fs_plan_entries(const struct ra_plan *p);
void fs_plan_free(struct ra_plan *p);
/* The most entries a plan holds, and the longest path in it. */
void fs_plan_bounds(size_t *entries, size_t *path_len);

/* Where the current plan stands. */
struct fs_plan_info {
	size_t entries;            /* in the plan */
	size_t position, next;     /* the first entry not opened; the next to fetch */
	size_t opened;             /* entries opened */
	size_t skips;              /* times the reader skipped ahead */
	uint64_t ahead_bytes;      /* fetched ahead, not yet opened */
};

/* Hand over the loader's plan (evict/plan.h): p, built with fs_plan_add()
 * from paths relative to the mount root in the order they will be
 * opened, not sealed.  The fs takes p (freed on every outcome), seals it
 * with a window of plan_window files and read_ahead_mem / 2 bytes, and its
 * fetchers bring the window into RAM ahead of the reader.  It replaces
 * any plan; NULL clears.  TFS_OK; TFS_E_INVAL without fetchers
 * (scan_threads 0); TFS_E_NOMEM.  Thread-safe. */
int fs_plan_set(struct tfs_fs *fs, struct ra_plan *p);
/* The current plan's position: false when there is none; *done: it is
 * over. */
bool fs_plan_info(struct tfs_fs *fs, struct fs_plan_info *out, bool *done);

#endif
