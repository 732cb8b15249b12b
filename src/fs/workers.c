/* workers.c - the fetchers of jobs that read each file once an epoch: a
 * scan (a job found consuming a directory's files in any order, scan.h)
 * and a loader's plan (evict/plan.h).  SCAN threads take the next file
 * from the plan first, else from an active scan, and ask the chunk cache
 * for its chunks (see fs_internal.h for the locks).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"

/* What a scan may have handed out, all directories together, this epoch:
 * what the SSD tier may hold (as much of the dataset as the cache takes),
 * else the read-ahead memory (RAM only). */
static uint64_t scan_budget(struct tfs_fs *fs)
{
	if (chunk_cache_has_ssd(fs->cache))
		return chunk_cache_pin_limit(fs->cache, PIN_SSD);
	return fs->cfg.read_ahead_mem;
}

/* The slot free again; the directory's scan stays with its listing. */
static void scan_slot_clear(struct scan_dir *sd)
{
	free(sd->dirkey);
	listing_put(sd->listing);
	memset(sd, 0, sizeof(*sd));
}

/* l's scan, made at its first open a scan counts (scan_lock held); NULL
 * when l is beyond a scan (SCAN_ENTRIES_MAX) or memory ran out. */
static struct ra_scan *listing_scan(struct dir_listing *l)
{
	struct ra_scan *s;

	if (l->scan)
		return l->scan;
	if (!(s = malloc(sizeof(*s))) || ra_scan_init(s, l->n) != 0) {
		free(s);
		return NULL;
	}
	return l->scan = s;
}

/* Length of the parent part of directory key k ("a/b/" -> 2, "a/" -> 0). */
static size_t parent_len(const char *k)
{
	size_t n = strlen(k);

	if (n && k[n - 1] == '/')
		n--;
	while (n && k[n - 1] != '/')
		n--;
	return n;
}

/* sd's directory was opened in, its scan not active: when it and its
 * sibling directories being scanned together show one job reading each
 * file once (ra_scan_family_due), every one of them the job has opened
 * in becomes active.  true when one did (scan_lock held). */
static bool family_open(struct tfs_fs *fs, struct scan_dir *sd, uint64_t now)
{
	const struct ra_scan *members[SCAN_DIRS];
	struct scan_dir *sib[SCAN_DIRS];
	size_t pl = parent_len(sd->dirkey), n = 0;
	bool woke = false;

	/* the mount's root has no siblings (without a prefix its key is empty) */
	if (sd->st->active || !sd->dirkey[0])
		return false;
	for (size_t i = 0; i < SCAN_DIRS; i++) {
		struct scan_dir *c = &fs->scans[i];

		if (c->dirkey && c->dirkey[0] && parent_len(c->dirkey) == pl &&
		    strncmp(c->dirkey, sd->dirkey, pl) == 0) {
			members[n] = c->st;
			sib[n++] = c;
		}
	}
	if (!ra_scan_family_due(members, n, now))
		return false;
	for (size_t i = 0; i < n; i++)
		woke |= ra_scan_activate(sib[i]->st, now);
	return woke;
}

/* Work may wait for a worker's next look: counted in readahead.scan_busy
 * until one looks (a mount without workers sets nothing: nobody would
 * look). */
static void kick(struct tfs_fs *fs)
{
	if (fs->n_scan_threads)
		atomic_store(&fs->scan_kick, true);
}

/* File node ino was opened: mark it in its directory's scan (started, or
 * restarted for a new listing, here).  Takes fs->lock, then scan_lock.
 * true when the directory is being scanned: the file is read once this
 * epoch.  A scan's new epoch (every file of it opened) is the cache's. */
bool scan_open(struct tfs_fs *fs, uint64_t ino)
{
	struct fs_node *n, *d;
	const struct dir_entry *e;
	struct dir_listing *l = NULL;
	struct scan_dir *sd = NULL;
	char *dirkey = NULL;
	size_t idx = 0;
	uint64_t epochs, now;
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
	if ((!sd || !sd->dirkey) && !listing_scan(l)) {
		/* no scan for it: no slot taken from another either */
		pthread_mutex_unlock(&fs->scan_lock);
		listing_put(l);
		free(dirkey);
		return false;
	}
	if (!sd || !sd->dirkey) {
		/* a free slot, else the one opened least lately */
		struct scan_dir *old = NULL;

		for (size_t i = 0; i < SCAN_DIRS && !(sd && !sd->dirkey); i++) {
			struct scan_dir *c = &fs->scans[i];
			if (!c->dirkey)
				sd = c;
			else if (!old || c->st->last_open_us < old->st->last_open_us)
				old = c;
		}
		if (!sd || sd->dirkey) {
			sd = old;
			scan_slot_clear(sd);
		}
		sd->dirkey = dirkey;
		sd->listing = l;
		sd->st = l->scan;     /* as it was if the directory had a slot before */
		dirkey = NULL;
		l = NULL;
	}
	epochs = sd->st->epochs;
	/* into RAM, where a file read leaves first: the budget bounds the
	 * bytes fetched and not opened yet, not all an epoch fetches (which
	 * left most of a dataset larger than the budget to be read on
	 * demand, one GET at a time) */
	if (!chunk_cache_has_ssd(fs->cache) && idx < sd->listing->n)
		ra_scan_consumed(sd->st, idx, sd->listing->ents[idx].size);
	now = clock_mono_us();
	if (ra_scan_on_open(sd->st, idx, now) || family_open(fs, sd, now)) {
		kick(fs);
		pthread_cond_broadcast(&fs->scan_cond);
	}
	once = sd->st->active;
	if (once && !chunk_cache_has_ssd(fs->cache)) {
		/* the open made room in a RAM-only budget: one fetcher looks */
		kick(fs);
		pthread_cond_signal(&fs->scan_cond);
	}
	if (sd->st->epochs != epochs)
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
	/* a scan's: where the entry came from (a reference to the listing
	 * whose scan handed it out), to hand it back untaken */
	struct dir_listing *scan_listing;
	size_t scan_idx;
	uint64_t scan_epochs, scan_wakes;
};

/* The next file any active scan hands out (scan_lock held). */
static bool scan_next_job(struct tfs_fs *fs, struct scan_job *j)
{
	uint64_t budget = 0, total = 0, now = clock_mono_us(), gen;
	bool more = false, budgeted = false;
	struct ra_plan *p;
	const char *path;

	memset(j, 0, sizeof(*j));
	p = plan_slot_lock(&fs->plans, &gen);
	if (p && ra_plan_take(p, &j->plan_idx, &path)) {
		j->key = strdup(path);
		j->plan = true;
		j->plan_gen = gen;
		more = ra_plan_can_take(p);
	}
	plan_slot_unlock(&fs->plans);
	if (j->plan) {
		/* an open wakes one fetcher (plan_open); when the window holds
		 * more (a new plan, a skip), each one taken wakes the next */
		if (more) {
			kick(fs);
			pthread_cond_signal(&fs->scan_cond);
		}
		return j->key != NULL;
	}

	for (size_t i = 0; i < SCAN_DIRS; i++)
		if (fs->scans[i].dirkey)
			total += ra_scan_holds(fs->scans[i].st, now);
	for (size_t k = 0; k < SCAN_DIRS; k++) {
		struct scan_dir *sd = &fs->scans[(fs->scan_next + k) % SCAN_DIRS];
		uint64_t mine, others, room;
		size_t idx;

		if (!sd->dirkey || !sd->st->active)
			continue;
		if (!budgeted) {     /* a statvfs on an SSD tier: only for an active scan */
			budget = scan_budget(fs);
			budgeted = true;
		}
		mine = ra_scan_holds(sd->st, now);
		others = total - mine;
		room = budget > others ? budget - others : 0;
		while (ra_scan_take(sd->st, now, room, &idx)) {
			const struct dir_entry *e = &sd->listing->ents[idx];
			size_t dl = strlen(sd->dirkey), nl = strlen(e->name);

			if (e->is_dir || e->size == 0)
				continue;
			if (!(j->key = malloc(dl + nl + 1))) {
				ra_scan_untake(sd->st, idx, 0);   /* not handed out after all */
				return false;
			}
			memcpy(j->key, sd->dirkey, dl);
			memcpy(j->key + dl, e->name, nl + 1);
			listing_entry_meta(e, &j->meta);
			cache_id_of(&j->meta, j->cache_id, sizeof(j->cache_id));
			ra_scan_account(sd->st, e->size);
			j->scan_listing = listing_get(sd->listing);
			j->scan_idx = idx;
			j->scan_epochs = sd->st->epochs;
			j->scan_wakes = sd->st->wakes;
			fs->scan_next = (fs->scan_next + k + 1) % SCAN_DIRS;
			return true;
		}
	}
	return false;
}

/* A scan's entry, opened since it was handed out (scan_lock held): its
 * reader has it or fetches it itself; fetched now, it would come after
 * the read (a GET the job never uses, when RAM evicted it meanwhile). */
static bool scan_job_opened(const struct scan_job *j)
{
	const struct ra_scan *s = j->scan_listing->scan;

	return s->epochs == j->scan_epochs && ra_scan_opened(s, j->scan_idx);
}

struct scan_wanted {
	struct tfs_fs *fs;
	const struct scan_job *j;
};

/* chunk_cache_wanted_fn for a scan's chunk, asked once its RAM slot is
 * claimed: a reader that opened the file before the claim has it or
 * fetches it itself (it may have read it whole, and RAM evicted it,
 * between the check in scan_fetch and the claim); one that opens it
 * after the claim waits for this fetch. */
static bool scan_still_wanted(void *arg)
{
	const struct scan_wanted *w = arg;
	bool ok;

	pthread_mutex_lock(&w->fs->scan_lock);
	ok = !w->fs->scan_stop && !scan_job_opened(w->j);
	pthread_mutex_unlock(&w->fs->scan_lock);
	return ok;
}

/* Fetch the file's chunks ahead into RAM (a slot that is free or read
 * through this epoch), and to_ssd, to the SSD tier's free room too (past
 * its admission: the job will read it this epoch, and the tier keeps it
 * until then; chunk_cache_prefetch_ssd).  A fetch ahead never evicts
 * what the cache keeps for the next epoch: without room it waits, and
 * the reader may fetch the file itself.  Small files are one GET, sized
 * by the listing (no HEAD).  The bytes brought (0: all were there, or the
 * fetch failed); *refused when RAM had no room for a chunk the epoch may
 * take (and it is not there). */
static uint64_t scan_fetch(struct tfs_fs *fs, const struct scan_job *j, bool to_ssd,
			   bool *refused)
{
	uint64_t cs = fs->cfg.chunk_size, size = j->meta.size, got = 0;
	struct chunk_obj o = { j->key, j->meta.etag, j->cache_id, size };
	struct scan_wanted w = { fs, j };
	chunk_cache_wanted_fn *wanted = j->scan_listing ? scan_still_wanted : NULL;
	bool again = false;

	for (uint64_t i = 0; i * cs < size; i++) {
		size_t want = chunk_cache_chunk_len(fs->cache, size, i);
		bool fetched = false, late;
		int rc;

		pthread_mutex_lock(&fs->scan_lock);
		rc = fs->scan_stop;
		late = j->scan_listing && scan_job_opened(j);
		pthread_mutex_unlock(&fs->scan_lock);
		if (rc || late)
			return got;
		if (to_ssd) {
			rc = chunk_cache_prefetch_ssd(fs->cache, &o, i, &fetched, wanted, &w);
		} else {
			rc = chunk_cache_prefetch(fs->cache, &o, i, true, false, wanted, &w);
			fetched = rc == TFS_OK;
		}
		again |= rc == TFS_AGAIN;
		if (rc != TFS_OK && rc != TFS_AGAIN)
			return got;         /* the object changed or the store fails: a reader will say */
		if (fetched)
			got += want;
		if (rc == TFS_AGAIN && !chunk_cache_in_ram(fs->cache, &o, i))
			break;              /* no room for it: nothing after it either (the
					     * reader's miss on it would evict what came after) */
	}
	if (again && refused) {
		/* TFS_AGAIN is "in RAM already" or "no room": which one */
		uint64_t in_ram = 0, on_ssd = 0;

		chunk_cache_residency(fs->cache, &o, &in_ram, &on_ssd);
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
	struct chunk_obj co;
	struct ra_plan *p;
	uint64_t got, in_ram = 0, on_ssd = 0, gen;
	int rc = fs_path_object(fs, j->key, &o);
	bool cached = false;

	/* a file the cache holds whole is read from there as fast as it would
	 * be copied into RAM ahead: only what the store must supply is
	 * fetched (with the SSD tier on local flash; measured, a second epoch
	 * of 3,000 files: 2.5 s copied ahead against 1.5 s not while a copy
	 * could displace a file not read yet; the same time, 0.99 against
	 * 1.03 s, since it takes only a free slot or one read through) */
	if (rc == TFS_OK) {
		fs_object_chunks(&o, &co);
		chunk_cache_residency(fs->cache, &co, &in_ram, &on_ssd);
	}
	cached = rc == TFS_OK && (in_ram >= o.size || on_ssd >= o.size);
	p = plan_slot_lock(&fs->plans, &gen);
	if (p && gen == j->plan_gen)
		ra_plan_account(p, j->plan_idx, rc == TFS_OK && !cached ? o.size : 0);
	plan_slot_unlock(&fs->plans);
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

/* Was j taken in its scan's current epoch and run (scan_lock held)?  A
 * new epoch or a wake from idle forgot the take and its bytes. */
static bool scan_take_current(const struct scan_job *j)
{
	const struct ra_scan *s = j->scan_listing->scan;

	return s->epochs == j->scan_epochs && s->wakes == j->scan_wakes;
}

/* Hand a scan's entry back, to be taken again once RAM has room (scan_lock
 * held): if its take is current. */
static void scan_untake(const struct scan_job *j)
{
	if (scan_take_current(j))
		ra_scan_untake(j->scan_listing->scan, j->scan_idx, j->meta.size);
}

/* A scan's entry into RAM brought nothing (it was there, or its fetch
 * failed): its bytes leave the budget now (scan_lock held). */
static void scan_not_fetched(const struct scan_job *j)
{
	if (scan_take_current(j))
		ra_scan_not_fetched(j->scan_listing->scan, j->scan_idx, j->meta.size);
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

void *scan_worker(void *arg)
{
	struct tfs_fs *fs = arg;
	struct scan_job j;

	pthread_mutex_lock(&fs->scan_lock);
	while (!fs->scan_stop) {
		bool refused = false, got_any = false;

		atomic_store(&fs->scan_kick, false);   /* looking now */
		if (!scan_next_job(fs, &j)) {
			/* nothing now: an open or, for an idle scan, time will tell */
			scan_wait(fs);
			continue;
		}
		fs->scan_busy++;
		pthread_mutex_unlock(&fs->scan_lock);
		if (j.plan) {
			plan_fetch(fs, &j);
		} else {
			uint64_t got = scan_fetch(fs, &j, chunk_cache_has_ssd(fs->cache), &refused);

			/* counted only when the scan brought something the cache lacked */
			got_any = got > 0;
			if (got) {
				atomic_fetch_add(&fs->scan_bytes, got);
				atomic_fetch_add(&fs->scan_files, 1);
			}
		}
		free(j.key);
		pthread_mutex_lock(&fs->scan_lock);
		if (!j.plan && !refused && !chunk_cache_has_ssd(fs->cache) && !got_any)
			scan_not_fetched(&j);
		if (refused)
			scan_untake(&j);
		listing_put(j.scan_listing);
		assert(fs->scan_busy > 0);
		fs->scan_busy--;   /* a wait for room is not work: whoever makes room kicks */
		if (refused) {
			/* no room in RAM yet: handed back, taken again once a
			 * reader reads a chunk through (fs_read) or the SSD
			 * writer hands a copy down (room_made) */
			atomic_fetch_add(&fs->scan_room_waiters, 1);
			scan_wait(fs);
			atomic_fetch_sub(&fs->scan_room_waiters, 1);
		}
	}
	pthread_mutex_unlock(&fs->scan_lock);
	return NULL;
}

void scan_stop_all(struct tfs_fs *fs)
{
	pthread_mutex_lock(&fs->scan_lock);
	fs->scan_stop = true;
	atomic_store(&fs->scan_kick, false);
	pthread_cond_broadcast(&fs->scan_cond);
	pthread_mutex_unlock(&fs->scan_lock);
	for (unsigned i = 0; i < fs->n_scan_threads; i++)
		pthread_join(fs->scan_threads[i], NULL);
	fs->n_scan_threads = 0;
	for (size_t i = 0; i < SCAN_DIRS; i++)
		scan_slot_clear(&fs->scans[i]);
	pthread_cond_destroy(&fs->scan_cond);
	pthread_mutex_destroy(&fs->scan_lock);
}

/* File key was opened: consume it in the plan.  true when the plan,
 * still running, has it (the plan, not a scan, then fetches around it). */
bool plan_open(struct tfs_fs *fs, const char *key, bool *once)
{
	size_t pl = strlen(fs->prefix), idx;
	bool in = false, wake;
	struct ra_plan *p;

	if (strncmp(key, fs->prefix, pl) != 0)
		return false;
	p = plan_slot_lock(&fs->plans, NULL);
	in = p && !ra_plan_done(p) && ra_plan_on_open(p, key + pl, &idx);
	wake = in && ra_plan_wake_due(p);
	*once = in && ra_plan_ahead(p, key + pl) == 0;   /* not again in this plan */
	plan_slot_unlock(&fs->plans);
	if (wake) {
		/* the window has room for a batch: one fetcher, not all of them
		 * (waking every fetcher on every open cost a second epoch from
		 * the cache 20-30% of its time); it wakes the next if there is
		 * more.
		 * Under scan_lock, so a worker between its look at the plan and
		 * its wait cannot miss it. */
		pthread_mutex_lock(&fs->scan_lock);
		kick(fs);
		pthread_cond_signal(&fs->scan_cond);
		pthread_mutex_unlock(&fs->scan_lock);
	}
	return in;
}

void scan_room_made(struct tfs_fs *fs)
{
	if (atomic_load_explicit(&fs->scan_room_waiters, memory_order_relaxed)) {
		pthread_mutex_lock(&fs->scan_lock);
		kick(fs);
		pthread_cond_signal(&fs->scan_cond);
		pthread_mutex_unlock(&fs->scan_lock);
	}
}

/* ---- the loader's plan: handed over, and where it stands --------------- */

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
	old = plan_slot_swap(&fs->plans, p);
	chunk_cache_new_epoch(fs->cache);   /* what the old plan had read is needed again */
	pthread_mutex_lock(&fs->scan_lock);
	kick(fs);
	pthread_cond_broadcast(&fs->scan_cond);
	pthread_mutex_unlock(&fs->scan_lock);
	ra_plan_free(old);
	return TFS_OK;
}

bool fs_plan_info(struct tfs_fs *fs, struct fs_plan_info *out, bool *done)
{
	struct ra_plan *p = plan_slot_lock(&fs->plans, NULL);
	struct ra_plan_info in;

	if (p) {
		ra_plan_info(p, &in);
		*done = ra_plan_done(p);
		*out = (struct fs_plan_info){ .entries = in.entries, .position = in.low,
					      .next = in.next, .opened = in.consumed,
					      .skips = in.skips, .ahead_bytes = in.ahead_bytes };
	}
	plan_slot_unlock(&fs->plans);
	return p != NULL;
}

struct ra_plan *fs_plan_new(void)
{
	return ra_plan_new();
}

int fs_plan_add(struct ra_plan *p, const char *path, size_t len)
{
	return ra_plan_add(p, path, len) == 0 ? TFS_OK : TFS_E_TOOBIG;
}

size_t fs_plan_entries(const struct ra_plan *p)
{
	return ra_plan_entries(p);
}

void fs_plan_free(struct ra_plan *p)
{
	ra_plan_free(p);
}

void fs_plan_bounds(size_t *entries, size_t *path_len)
{
	*entries = PLAN_ENTRIES_MAX;
	*path_len = PLAN_PATH_MAX;
}
