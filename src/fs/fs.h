/* fs.h - the filesystem layer: inode table, directory listings, open
 * files, byte range -> chunks.  No FUSE types, so it is testable without
 * a mount; src/fuse/ translates requests into these calls.
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

#include "s3/objstore.h"
#include "tiers/pin_set.h"

#define FS_ROOT_INO 1
#define FS_READ_MAX_IOV 34   /* a 1 MiB read over 64 KiB chunks, + slack */
#define FS_PATH_MAX 4096     /* an operator's path below the mount root */
#define FS_PATH_DEPTH_MAX 256
#define CACHE_ID_MAX (OBJ_ETAG_MAX + 48)

struct fs_config {
	struct objstore *store;    /* borrowed; outlives the fs */
	const char *prefix;        /* "" or "dir/sub/" */
	unsigned metadata_ttl_ms;
	uint64_t chunk_size;
	uint64_t ram_bytes;        /* RAM tier capacity (>= chunk_size) */
	int ram_policy;            /* enum evict_kind for the RAM tier */
	struct ssd_tier *ssd;      /* borrowed, outlives the fs; NULL = RAM only */
	unsigned parallel_gets;    /* ranged GETs per chunk fill (1..4, parts >= 2 MiB) */
	uint64_t read_ahead;       /* bytes a sequential stream keeps in flight ahead of
				    * its reader, within a file and across a directory's
				    * files; < chunk_size = read-ahead off */
	unsigned read_ahead_files; /* files read ahead across a directory */
	uint64_t read_ahead_mem;   /* read-ahead, all streams: queued or in flight is at
				    * most this, and so is what the RAM tier keeps from
				    * eviction for it (fetched, not yet read, among the
				    * latest issued); older unread chunks are ordinary
				    * cache, evicted by the policy */
	unsigned read_ahead_threads; /* chunk fills in flight for read-ahead */
	unsigned scan_threads;     /* files fetched at once for a job consuming a directory in
				    * any order (fs/scan.h) or for the loader's plan
				    * (fs/plan.h); 0 = off */
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
struct fs_dir;
struct fs_file;

/* Read result: iov[0..n) point into referenced chunk buffers; hand them to
 * the kernel, then fs_read_done().  Total bytes in `bytes`. */
struct fs_read {
	struct iovec iov[FS_READ_MAX_IOV];
	struct chunk_ref *refs[FS_READ_MAX_IOV];
	size_t n;
	size_t bytes;
};

struct fs_stats {
	uint64_t unsafe_keys_skipped;  /* listing items left out of the tree */
	uint64_t shadowed_files;       /* "x" hidden because "x/" exists */
	uint64_t listings, heads, lookups_remote;
	uint64_t nodes;                /* inodes currently known */
	uint64_t open_files;
	uint64_t ra_files;             /* files read ahead across a directory */
	uint64_t ra_refused;           /* read-ahead chunks not issued: the bound was reached */
	uint64_t ra_held;              /* read-ahead chunks queued or in flight now */
	uint64_t scan_files, scan_bytes;   /* fetched for jobs consuming a directory */
	uint64_t plan_files, plan_bytes;   /* fetched ahead for the loader's plan */
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

void fs_stats(struct tfs_fs *fs, struct fs_stats *out);
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
 * are the first chunk's that failed. */
int fs_object_warm(struct tfs_fs *fs, const struct fs_object *o, enum pin_tier tier,
		   bool (*stop)(void *ctx), void *stop_ctx, struct fs_warm *res);

struct ra_plan;
struct ra_plan_info;

/* Hand over the loader's plan (fs/plan.h): p, built with ra_plan_add()
 * from paths relative to the mount root in the order they will be
 * opened, not sealed.  The fs takes p (freed on every outcome), seals it
 * with a window of plan_window files and read_ahead_mem / 2 bytes, and its
 * fetchers bring the window into RAM ahead of the reader.  It replaces
 * any plan; NULL clears.  TFS_OK; TFS_E_INVAL without fetchers
 * (scan_threads 0); TFS_E_NOMEM.  Thread-safe. */
int fs_plan_set(struct tfs_fs *fs, struct ra_plan *p);
/* The current plan's position: false when there is none; *done: it is
 * over. */
bool fs_plan_info(struct tfs_fs *fs, struct ra_plan_info *out, bool *done);

/* The fs's chunk cache (owned by the fs), for its counters. */
struct chunk_cache *fs_chunk_cache(struct tfs_fs *fs);

#endif
