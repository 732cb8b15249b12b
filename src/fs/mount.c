/* mount.c - the mount's life: fs_new() sets up the inode table, the chunk
 * cache and the fetchers' threads; fs_free() stops them and frees every
 * node and handle (see fs.h, and fs_internal.h for the files of src/fs/).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"

/* The SSD writer made room in RAM (chunk_cache_config.room_made): a scan
 * fetcher waiting for room looks again now, not at its next timeout. */
static void room_made(void *fs)
{
	scan_room_made(fs);
}

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
		.store = cfg->store, .parallel_gets = cfg->parallel_gets,
		.ram_bytes = cfg->ram_bytes, .chunk_size = (size_t)cfg->chunk_size, .ssd = cfg->ssd,
		.shared = cfg->shared,
		.ram_policy = (enum evict_kind)cfg->ram_policy,
		.ahead_bytes = cfg->read_ahead ? cfg->read_ahead_mem : 0,
		.part_bytes = cfg->random_bytes,
		.room_made = room_made, .room_arg = fs });
	root = calloc(1, sizeof(*root));
	if (!fs->prefix || !fs->by_ino || !fs->by_name || !fs->cache || !root)
		goto fail;
	if (plan_slot_init(&fs->plans, fs->prefix) != 0)
		goto fail;
	fs->plans_ready = true;
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
	pthread_cond_init(&fs->scan_cond, NULL);
	pthread_mutex_init(&fs->trace_lock, NULL);
	chunk_cache_set_plan(fs->cache, &fs->plans);
	if (dir_ahead_start(fs) != TFS_OK)
		log_warn("listing read-ahead is off: out of memory or threads");
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
	if (fs->plans_ready)
		plan_slot_release(&fs->plans);
	free(fs->by_ino);
	free(fs->by_name);
	free(fs->prefix);
	free(fs);
	return NULL;
}

void fs_free(struct tfs_fs *fs)
{
	if (!fs)
		return;
	chunk_cache_set_plan(fs->cache, NULL);   /* the SSD tier reads the plan */
	scan_stop_all(fs);              /* its workers fill the cache too */
	prefetch_pool_free(fs->pool);   /* its jobs fill the cache */
	dir_ahead_stop(fs);             /* its jobs take the lock */
	while (fs->files.next != &fs->files) {
		struct fs_handle_link *l = fs->files.next;
		fs_handle_del(fs, l);
		fs_file_free((struct fs_file *)l);
	}
	while (fs->dirs.next != &fs->dirs) {
		struct fs_handle_link *l = fs->dirs.next;
		fs_handle_del(fs, l);
		fs_dir_free((struct fs_dir *)l);
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
	chunk_cache_free(fs->cache);    /* stops a trace being recorded */
	pthread_mutex_destroy(&fs->trace_lock);
	plan_slot_release(&fs->plans);
	free(fs->by_ino);
	free(fs->by_name);
	free(fs->prefix);
	free(fs);
}
