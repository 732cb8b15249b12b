/* operator.c - the operator interface (fs.h): what the control socket
 * asks of a mount, files by path, warm-up, pins, eviction, residency,
 * traces, counters and the loader's plan, each answered through the
 * chunk cache (see fs_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "fs/fs_internal.h"
#include "tiers/access_trace.h"

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
	char buf[TFS_PATH_MAX + 1], *comp, *save = NULL;
	uint64_t ino = FS_ROOT_INO;
	struct fs_attr a = { .is_dir = true };
	struct fs_node *n;
	int rc = TFS_OK;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > TFS_PATH_MAX || path[0] == '/')
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

void fs_object_chunks(const struct fs_object *o, struct chunk_obj *out)
{
	*out = (struct chunk_obj){ o->key, o->etag, o->cache_id, o->size };
}

int fs_object_warm(struct tfs_fs *fs, const struct fs_object *o, enum pin_tier tier,
		   bool (*stop)(void *ctx), void *stop_ctx, struct fs_warm *res)
{
	uint64_t n = chunk_cache_chunks(fs->cache, o->size);
	struct chunk_obj co;

	fs_object_chunks(o, &co);
	memset(res, 0, sizeof(*res));
	res->chunks = n;
	for (uint64_t i = 0; i < n; i++) {
		size_t want = chunk_cache_chunk_len(fs->cache, o->size, i);
		bool fetched;
		int rc;

		if (stop && stop(stop_ctx))
			return TFS_E_INTR;
		rc = chunk_cache_warm(fs->cache, &co, i, tier, &fetched);
		if (rc != TFS_OK)
			return rc;
		if (fetched) {
			res->chunks_fetched++;
			res->bytes_fetched += want;
		}
	}
	if (tier == PIN_SSD)
		chunk_cache_flush(fs->cache);   /* the reply says the chunks are stored */
	return TFS_OK;
}

/* ---- pins, eviction, residency ------------------------------------------ */

bool fs_has_ssd(struct tfs_fs *fs)
{
	return chunk_cache_has_ssd(fs->cache);
}

int fs_pin(struct tfs_fs *fs, const struct fs_object *objs, size_t n, enum pin_tier tier,
	   uint64_t *would_be, uint64_t *limit)
{
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	uint64_t *sizes = calloc(n ? n : 1, sizeof(*sizes));
	int rc = TFS_E_NOMEM;

	*would_be = 0;
	*limit = chunk_cache_pin_limit(fs->cache, tier);
	if (keys && sizes) {
		for (size_t i = 0; i < n; i++) {
			keys[i] = objs[i].key;
			sizes[i] = objs[i].size;
		}
		rc = chunk_cache_pin(fs->cache, keys, sizes, n, tier, would_be);
	}
	free(keys);
	free(sizes);
	return rc;
}

bool fs_unpin(struct tfs_fs *fs, const char *path)
{
	size_t pl = strlen(fs->prefix), kl = strlen(path);
	char *key = malloc(pl + kl + 1);
	bool was;

	if (!key)
		return false;
	memcpy(key, fs->prefix, pl);
	memcpy(key + pl, path, kl + 1);
	was = chunk_cache_unpin(fs->cache, key);
	free(key);
	return was;
}

size_t fs_unpin_all(struct tfs_fs *fs)
{
	return chunk_cache_unpin_all(fs->cache);
}

void fs_object_evict(struct tfs_fs *fs, const struct fs_object *o, unsigned tiers,
		     struct fs_evicted *ev)
{
	struct chunk_cache_evicted ce = { 0 };
	struct chunk_obj co;

	fs_object_chunks(o, &co);
	chunk_cache_evict(fs->cache, &co, tiers, &ce);
	ev->chunks += ce.chunks;
	ev->bytes += ce.bytes;
	ev->pinned += ce.pinned;
	ev->busy += ce.busy;
}

void fs_evict_all(struct tfs_fs *fs, unsigned tiers, struct fs_evicted *ev)
{
	struct chunk_cache_evicted ce = { 0 };

	chunk_cache_evict_all(fs->cache, tiers, &ce);
	ev->chunks += ce.chunks;
	ev->bytes += ce.bytes;
	ev->pinned += ce.pinned;
	ev->busy += ce.busy;
}

void fs_object_residency(struct tfs_fs *fs, const struct fs_object *o, uint64_t *ram,
			 uint64_t *ssd, enum pin_tier *pinned)
{
	struct chunk_obj co;

	fs_object_chunks(o, &co);
	chunk_cache_residency(fs->cache, &co, ram, ssd);
	*pinned = chunk_cache_pinned(fs->cache, o->key);
}

/* ---- traces and counters ------------------------------------------------ */

void fs_stats(struct tfs_fs *fs, struct fs_stats *out)
{
	out->unsafe_keys_skipped = atomic_load(&fs->unsafe);
	out->shadowed_files = atomic_load(&fs->shadowed);
	out->listings = atomic_load(&fs->listings);
	out->heads = atomic_load(&fs->heads);
	out->lookups_remote = atomic_load(&fs->lookups_remote);
	out->lists_ahead = atomic_load(&fs->lists_ahead);
	out->open_files = atomic_load(&fs->open_files);
	out->ra_files = atomic_load(&fs->ra_files);
	out->stale_served = atomic_load(&fs->stale_served);
	out->store_down = atomic_load(&fs->store_down);
	out->scan_files = atomic_load(&fs->scan_files);
	out->scan_bytes = atomic_load(&fs->scan_bytes);
	out->plan_files = atomic_load(&fs->plan_files);
	out->plan_bytes = atomic_load(&fs->plan_bytes);
	out->passthrough = atomic_load(&fs->passthrough);
	out->pt_opens = atomic_load(&fs->pt_opens);
	out->pt_declined = atomic_load(&fs->pt_declined);
	out->ra_refused = fs->pool ? prefetch_pool_refused(fs->pool) : 0;
	out->ra_held = fs->pool ? prefetch_pool_held(fs->pool) : 0;
	/* under scan_lock alone: a worker that ends one job and takes the
	 * next does both without letting it go, so no passing 0 is seen */
	pthread_mutex_lock(&fs->scan_lock);
	out->scan_busy = fs->scan_busy + atomic_load(&fs->scan_kick);
	pthread_mutex_unlock(&fs->scan_lock);
	pthread_mutex_lock(&fs->lock);
	out->nodes = fs->n_nodes;
	pthread_mutex_unlock(&fs->lock);
}

int fs_trace_start(struct tfs_fs *fs, const char *file, char *err, size_t errlen)
{
	struct access_trace *t;
	int rc = TFS_AGAIN;

	pthread_mutex_lock(&fs->trace_lock);
	if (!fs->trace) {
		rc = access_trace_start(file, &t, err, errlen);
		if (rc == TFS_OK) {
			fs->trace = t;
			(void)chunk_cache_trace_swap(fs->cache, t);   /* none was recording */
		}
	}
	pthread_mutex_unlock(&fs->trace_lock);
	return rc;
}

int fs_trace_stop(struct tfs_fs *fs, uint64_t *records)
{
	struct access_trace *t;

	pthread_mutex_lock(&fs->trace_lock);
	t = fs->trace;
	fs->trace = NULL;
	if (t)
		(void)chunk_cache_trace_swap(fs->cache, NULL);
	pthread_mutex_unlock(&fs->trace_lock);
	if (!t)
		return TFS_MISS;
	*records = access_trace_stop(t);
	return TFS_OK;
}

void fs_counters(struct tfs_fs *fs, struct tfs_counters *out)
{
	struct chunk_cache_stats cc;
	struct objstore_stats os;
	struct fs_stats fst;

	chunk_cache_stats(fs->cache, &cc);
	objstore_stats(fs->cfg.store, &os);
	fs_stats(fs, &fst);
	memset(out, 0, sizeof(*out));
#define TIER_SOURCE(name, kind, unit, prom, help, label) \
	out->tier[TFS_TIER_RAM][TFS_TC_##name] = (uint64_t)cc.ram.name; \
	out->tier[TFS_TIER_SSD][TFS_TC_##name] = (uint64_t)cc.ssd.name;
	TFS_TIER_COUNTERS(TIER_SOURCE)
#undef TIER_SOURCE
#define SOURCE(id, section, name, kind, unit, prom, labels, help, label, source) \
	out->v[TFS_C_##id] = (uint64_t)(source);
	TFS_COUNTERS(SOURCE)
#undef SOURCE
	out->has_ssd = cc.has_ssd;
	out->latency = os.latency;
}
