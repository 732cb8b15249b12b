/* read.c - open, read and release: byte ranges become chunks of the
 * version the file was opened at, asked of the chunk cache; read-ahead
 * within a file and across a directory read in listing order queues the
 * next chunks on the prefetch pool, which asks the chunk cache for them
 * as fetches ahead (see fs_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "fs/fs_internal.h"

void fs_file_free(struct fs_file *f)
{
	pthread_mutex_destroy(&f->ra_lock);
	version_put(f->ver);
	free(f->key);
	free(f);
}

/* ---- read-ahead --------------------------------------------------------- */

/* One chunk to read ahead, with its object version copied: the file may
 * be closed, or the object changed, before the job runs (then the fill's
 * If-Match fails, or the chunk is simply never read: wasted, not wrong). */
struct ra_job {
	struct prefetch_item item;   /* first member */
	uint64_t index, size;
	bool near;                   /* chunk_cache_prefetch's */
	char etag[OBJ_ETAG_MAX];
	char cache_id[CACHE_ID_MAX];
	char key[];
};

void ra_job_run(void *ctx, struct prefetch_item *item, bool cancelled)
{
	struct ra_job *j = (struct ra_job *)item;
	struct tfs_fs *fs = ctx;

	if (!cancelled) {
		struct chunk_obj o = { j->key, j->etag, j->cache_id, j->size };

		(void)chunk_cache_prefetch(fs->cache, &o, j->index, false, j->near, NULL, NULL);
	}
	free(j);
}

/* Queue chunks [first, first + n) of one object version for read-ahead,
 * those below near_end with chunk_cache_prefetch's near.  Returns how
 * many were queued: fewer when the pool is full, or when the read-ahead
 * not read yet fills the bound the cache protects (more would evict it
 * before its reader came: fetched twice). */
static uint64_t ra_issue(struct tfs_fs *fs, const char *key, const char *etag,
			 const char *cache_id, uint64_t size, uint64_t first, uint64_t n,
			 uint64_t near_end)
{
	size_t kl = strlen(key);

	for (uint64_t i = 0; i < n; i++) {
		struct ra_job *j;

		if (!chunk_cache_ahead_room(fs->cache, chunk_cache_chunk_len(fs->cache, size, first + i)))
			return i;
		j = malloc(sizeof(*j) + kl + 1);
		if (!j)
			return i;
		j->index = first + i;
		j->size = size;
		j->near = first + i < near_end;
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
/* The chunks f's stream issued past the one its reader is in are awaited
 * no more (f->ra_lock held): the reader closed the file or left the
 * stream.  Without this they would count against the read-ahead bound
 * until evicted, and a few streams left midway would stop read-ahead for
 * every reader of the mount. */
static void ra_file_forget(struct tfs_fs *fs, struct fs_file *f, const struct ra_file *ra)
{
	struct chunk_obj o = { f->key, f->ver->etag, f->ver->cache_id, f->ver->size };

	if (ra->frontier > ra->cur_chunk + 1)
		chunk_cache_ahead_forget(fs->cache, &o, ra->cur_chunk + 1, ra->frontier);
}

/* Which chunks of f's read of [off, end) begin a visit of theirs (bit i:
 * chunk off / chunk_size + i): the unit the SSD tier's policy counts.  A
 * visit is a handle's pass over a chunk: its reads of the chunk, in
 * whatever order they come (the kernel hands one stream's pieces to
 * several threads), until they add up to the chunk's length or the handle
 * has gone on to two other chunks.  Counted per read instead, a chunk
 * read in eight pieces from SSD was eight times as hot as one RAM served
 * whole; counted at a read of its first byte, the pieces that came before
 * that read were counted once more.  f->ra_lock held. */
static uint64_t file_visits(struct tfs_fs *fs, struct fs_file *f, uint64_t off, uint64_t end)
{
	uint64_t cs = fs->cfg.chunk_size, size = f->ver->size, mask = 0;
	struct fs_visit *v = f->visits;

	for (uint64_t idx = off / cs, i = 0; idx * cs < end; idx++, i++) {
		uint64_t from = off > idx * cs ? off : idx * cs;
		uint64_t to = end < (idx + 1) * cs ? end : (idx + 1) * cs;
		uint64_t len = size - idx * cs < cs ? size - idx * cs : cs;

		if (v[1].chunk == idx + 1) {
			struct fs_visit t = v[0];

			v[0] = v[1];
			v[1] = t;
		}
		if (v[0].chunk == idx + 1 && v[0].bytes < len) {
			v[0].bytes += to - from;
			continue;
		}
		if (v[0].chunk != idx + 1)
			v[1] = v[0];
		v[0] = (struct fs_visit){ idx + 1, to - from };
		mask |= 1ull << i;
	}
	return mask;
}

/* f's stream takes a read of [off, off + len); returns whether its reader
 * reads at random (ra_file_random), and in *visits which chunks it begins
 * a visit of (file_visits).  Read-ahead, when the mount reads ahead, is
 * issued as the stream says. */
static bool ra_file_read(struct tfs_fs *fs, struct fs_file *f, uint64_t off, uint64_t len,
			 uint64_t *visits)
{
	uint64_t first, n, done = 0;
	struct ra_file before;
	bool random;

	pthread_mutex_lock(&f->ra_lock);
	before = f->ra;
	n = ra_file_on_read(&f->ra, fs->cfg.chunk_size, fs->cfg.read_ahead, off, len,
			    f->ver->size, &first);
	if (fs->pool && f->ra.frontier == 0 && before.frontier > 0)
		ra_file_forget(fs, f, &before);   /* a seek restarted the stream */
	if (n) {
		/* the stream's first window of chunks: its reader catches
		 * up with them while the window widens, and would wait for
		 * a whole GET, so parts, as for its own miss (a cold 64 MiB
		 * file: 172-180 MiB/s in one GET a chunk, 203-214 in parts); further
		 * on the window keeps enough GETs in flight: one a chunk */
		uint64_t near_end = (f->ra.run_start + fs->cfg.read_ahead) / fs->cfg.chunk_size + 1;

		if (fs->pool)
			done = ra_issue(fs, f->key, f->ver->etag, f->ver->cache_id, f->ver->size,
					first, n, near_end);
		if (done < n)
			ra_file_unissue(&f->ra, first + done);
	}
	random = ra_file_random(&f->ra, fs->cfg.chunk_size);
	*visits = file_visits(fs, f, off, off + len);
	pthread_mutex_unlock(&f->ra_lock);
	return random;
}

/* Across files: file node ino was opened; if its directory is being read
 * in listing order, read the next files' first bytes ahead (as listed:
 * size and ETag from the listing, no HEAD), up to read_ahead_files files,
 * as far as the reader will be from them when it starts this one is
 * within read_ahead and read_ahead_mem bytes: a file that far ahead of a
 * large one would wait in RAM while the large one streams through, and
 * be evicted unread (a 16 MiB RAM tier, a 33 MiB file followed by small
 * ones: each of them fetched twice).  fs->lock held. */
static void ra_dir_open(struct tfs_fs *fs, uint64_t ino, bool once)
{
	uint64_t cs = fs->cfg.chunk_size, max = fs->cfg.read_ahead, bytes;
	struct fs_node *n = node_by_ino(fs, ino), *d;
	const struct dir_listing *l;
	const struct dir_entry *e;
	size_t idx, from, i;

	if (!n || n->is_dir || !(d = node_by_ino(fs, n->parent)) || !(l = d->listing))
		return;
	if (!(e = listing_find(l, n->name)) || e->is_dir)
		return;
	idx = (size_t)(e - l->ents);
	if (fs->cfg.read_ahead_mem < max)
		max = fs->cfg.read_ahead_mem;
	bytes = e->size < max ? e->size : max;   /* the reader's way to the next file */
	/* a job reading the files once each (a plan, or a scan the opens
	 * revealed) has fetchers that fetch only what the cache has room
	 * for; a few opens in listing order within its shuffle are chance,
	 * and files read ahead for them were not read next (a tenth of an
	 * epoch's fetches, evicted unread, with files of one chunk) */
	if (!ra_dir_on_open(&d->ra, idx, once ? RA_DIR_STREAK_ONCE : RA_DIR_STREAK, &from))
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
		listing_entry_meta(x, &m);
		cache_id_of(&m, cache_id, sizeof(cache_id));
		key = node_child_key(d, x->name, false);
		if (!key)
			break;
		if (ra_issue(fs, key, m.etag, cache_id, x->size, 0, chunks, 0) < chunks) {
			free(key);
			break;              /* the pool is full: this file later */
		}
		free(key);
		atomic_fetch_add(&fs->ra_files, 1);
	}
	ra_dir_issued(&d->ra, i > from ? i : from);
}

/* ---- open, read, release ------------------------------------------------ */

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
	fs_handle_add(fs, &fs->files, &f->link);
	if (fs->n_scan_threads && !plan_open(fs, f->key, &f->once))
		f->once = scan_open(fs, ino);
	if (fs->pool) {
		pthread_mutex_lock(&fs->lock);
		ra_dir_open(fs, ino, f->once);
		pthread_mutex_unlock(&fs->lock);
	}
	*out = f;
	return TFS_OK;
}

int fs_read(struct tfs_fs *fs, struct fs_file *f, uint64_t off, size_t size, struct fs_read *r)
{
	uint64_t cs = fs->cfg.chunk_size, end, ram_bytes = 0, visits;
	struct chunk_obj o = { f->key, f->ver->etag, f->ver->cache_id, f->ver->size };
	bool random;
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
	random = ra_file_read(fs, f, off, end - off, &visits);
	for (uint64_t idx = off / cs; idx * cs < end; idx++) {
		uint64_t cstart = idx * cs, from, to;
		const void *data;

		from = off > cstart ? off - cstart : 0;
		to = end - cstart < cs ? end - cstart : cs;
		/* the cache never hands out a chunk of another length than
		 * this version's (TFS_E_STALE) */
		rc = chunk_cache_read(fs->cache, &o, idx, (size_t)from, (size_t)(to - from),
				      (random ? CHUNK_READ_RANDOM : 0) |
				      ((visits >> (idx - off / cs)) & 1 ? CHUNK_READ_VISIT : 0),
				      &r->refs[r->n], &r->spans[r->n], &data);
		if (rc != TFS_OK)
			break;
		if (r->refs[r->n]) {
			size_t clen = chunk_ref_len(r->refs[r->n]);

			to = to < clen ? to : clen;
			ram_bytes += to - from;
		}
		r->iov[r->n].iov_base = (void *)(uintptr_t)data;
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
	chunk_cache_count_served(fs->cache, ram_bytes);
	/* a file read once this epoch: each chunk this read finishes is of
	 * no more use until the next epoch, and the first to leave RAM */
	for (size_t i = 0; f->once && i < r->n; i++)
		if (r->refs[i] &&
		    (const char *)r->iov[i].iov_base + r->iov[i].iov_len ==
		    (const char *)chunk_ref_data(r->refs[i]) + chunk_ref_len(r->refs[i])) {
			chunk_cache_read_done(fs->cache, r->refs[i]);
			scan_room_made(fs);   /* room for a scan's fetch that found none */
		}
	return TFS_OK;
}

void fs_read_done(struct tfs_fs *fs, struct fs_read *r)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->refs[i])
			chunk_ref_put(r->refs[i]);
		free(r->spans[i]);
	}
	r->n = 0;
	r->bytes = 0;
}

void fs_release(struct tfs_fs *fs, struct fs_file *f)
{
	if (!f)
		return;
	atomic_fetch_sub(&fs->open_files, 1);
	fs_handle_del(fs, &f->link);
	if (fs->pool) {
		pthread_mutex_lock(&f->ra_lock);
		ra_file_forget(fs, f, &f->ra);
		pthread_mutex_unlock(&f->ra_lock);
	}
	fs_file_free(f);
}

/* ---- the kernel reading a file by itself -------------------------------- */

struct fs_backing {
	uint64_t size;
	char etag[OBJ_ETAG_MAX];
	char cache_id[CACHE_ID_MAX];
	char key[];
};

static struct chunk_obj backing_obj(const struct fs_backing *b)
{
	return (struct chunk_obj){ b->key, b->etag, b->cache_id, b->size };
}

int fs_backing_get(struct tfs_fs *fs, struct fs_file *f, int *fd, struct fs_backing **out)
{
	size_t kl = strlen(f->key);
	struct fs_backing *b;
	struct chunk_obj o;
	int rc;

	*fd = -1;
	*out = NULL;
	if (atomic_load_explicit(&f->ver->superseded, memory_order_acquire) || f->ver->size == 0)
		return TFS_MISS;
	b = malloc(sizeof(*b) + kl + 1);
	if (!b)
		return TFS_E_NOMEM;
	b->size = f->ver->size;
	snprintf(b->etag, sizeof(b->etag), "%s", f->ver->etag);
	snprintf(b->cache_id, sizeof(b->cache_id), "%s", f->ver->cache_id);
	memcpy(b->key, f->key, kl + 1);
	o = backing_obj(b);
	rc = chunk_cache_backing_open(fs->cache, &o, fd);
	if (rc != TFS_OK) {
		free(b);
		return rc;
	}
	*out = b;
	return TFS_OK;
}

void fs_backing_reopened(struct tfs_fs *fs, const struct fs_backing *b)
{
	struct chunk_obj o = backing_obj(b);

	chunk_cache_backing_reopened(fs->cache, &o);
}

void fs_backing_put(struct tfs_fs *fs, struct fs_backing *b)
{
	struct chunk_obj o;

	if (!b)
		return;
	o = backing_obj(b);
	chunk_cache_backing_release(fs->cache, &o);
	free(b);
}

bool fs_backing_same(const struct fs_backing *b, const struct fs_file *f)
{
	return b->size == f->ver->size && strcmp(b->cache_id, f->ver->cache_id) == 0 &&
	       strcmp(b->key, f->key) == 0;
}

void fs_passthrough_set(struct tfs_fs *fs, bool on)
{
	atomic_store(&fs->passthrough, on);
}

void fs_passthrough_count(struct tfs_fs *fs, bool passed)
{
	atomic_fetch_add_explicit(passed ? &fs->pt_opens : &fs->pt_declined, 1,
				  memory_order_relaxed);
}
