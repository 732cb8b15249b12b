/* dirahead.c - listing read-ahead: the listings of the directories a walk
 * will open next, fetched before it opens them (see fs_internal.h).
 *
 * A walk of a tree (find, os.walk, a loader's ImageFolder over a thousand
 * class folders) opens one directory after another, and each open of a
 * directory whose listing is not known waits for a LIST: a thousand class
 * folders 50 ms away are 50 s before the first sample.  So an open of
 * directory D fetches ahead, on workers of their own, the listings of
 * - D's first subdirectories, in listing order, and
 * - the subdirectories that follow D in its parent's listing,
 * list_ahead subdirectories of each at most, those known already counted.
 * A listing fetched ahead becomes its node's listing when the node
 * exists, else it waits in a slot for the node the next lookup creates;
 * an open of a directory whose listing is on its way waits for it rather
 * than asking the store a second time.  It is an ordinary snapshot: the
 * metadata TTL runs from its fetch, and it is saved in the cache index
 * like any other.  A directory of more than RELIST_MAX entries is left to
 * its open (fetching it ahead costs its first pages, no more), so that an
 * `ls` of a bucket's top holds no million-entry listing.  During an
 * outage nothing is fetched ahead.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"

/* entries of one listing looked at per open, at most: a directory of a
 * million files and a few subdirectories costs each open a bounded scan */
#define AHEAD_SCAN 4096
#define AHEAD_THREADS_MAX 16

struct ahead_job {
	struct prefetch_item item;   /* first member */
	size_t slot;
	char key[];
};

/* May slot s take a new fetch (lock held)?  When free, or done and out
 * of the TTL: a fresh listing nobody took yet is kept for its node (a
 * walk comes back for it; dropped, it would be listed twice), and so is
 * the memory of a fetch that brought nothing, so that each open of the
 * parent does not ask again for a directory too big to fetch ahead. */
static bool slot_reusable(const struct tfs_fs *fs, const struct dir_ahead *s)
{
	return !s->key ||
	       (!s->busy && !meta_fresh(fs, s->listing ? s->listing->fetched_us : s->tried_us));
}

/* A slot for a new fetch (lock held), NULL when none may take one. */
static struct dir_ahead *slot_new(struct tfs_fs *fs)
{
	for (size_t i = 0; i < fs->n_ahead; i++)
		if (slot_reusable(fs, &fs->ahead[i]))
			return &fs->ahead[i];
	return NULL;
}

static void ahead_run(void *ctx, struct prefetch_item *item, bool cancelled)
{
	struct ahead_job *j = (struct ahead_job *)item;
	struct tfs_fs *fs = ctx;
	struct dir_listing *l;
	struct dir_ahead *s;
	struct fs_node *n;
	bool asked = false;
	int rc = TFS_OK;

	if (cancelled) {
		free(j);                /* stopping: dir_ahead_stop frees the slot */
		return;
	}
	l = listing_load(fs, j->key, false);
	if (!l) {
		asked = true;
		rc = listing_fetch_small(fs, j->key, RELIST_MAX, &l);
		if (rc == TFS_OK) {
			atomic_fetch_add(&fs->lists_ahead, 1);
		} else if (rc == TFS_E_TOOBIG) {
			rc = TFS_OK;        /* answered: a big directory is its open's to fetch */
		}
	}
	pthread_mutex_lock(&fs->lock);
	if (asked)
		store_answered(fs, rc);
	s = &fs->ahead[j->slot];
	s->busy = false;
	if (!l) {
		s->tried_us = clock_mono_us();   /* an open asks itself, and reports */
	} else {
		s->listing = l;
		n = node_by_name(fs, s->parent, s->name);
		if (n && n->is_dir && strcmp(n->key, s->key) == 0)
			ahead_give(s, n);
	}
	pthread_cond_broadcast(&fs->relisted);
	pthread_mutex_unlock(&fs->lock);
	free(j);
}

/* Fetch ahead the listings of directory node d's subdirectories from its
 * listing's entry `from` on (lock held): of the next list_ahead
 * subdirectories, those whose listing is not known, fresh, already. */
static void kick_from(struct tfs_fs *fs, struct fs_node *d, size_t from)
{
	const struct dir_listing *l = d->listing;
	unsigned seen = 0;
	size_t end;

	if (!l || from >= l->n)
		return;
	end = l->n - from > AHEAD_SCAN ? from + AHEAD_SCAN : l->n;
	for (size_t i = from; i < end && seen < fs->cfg.list_ahead; i++) {
		const struct dir_entry *e = &l->ents[i];
		const struct dir_listing *kept;
		struct fs_node *c;
		struct dir_ahead *s;
		struct ahead_job *j;
		char *key;

		if (!e->is_dir)
			continue;
		seen++;
		c = node_by_name(fs, d->ino, e->name);
		if (c && c->is_dir && c->listing && meta_fresh(fs, c->listing->fetched_us))
			continue;
		key = node_child_key(d, e->name, true);
		if (!key)
			return;
		kept = stash_find(fs, key);
		s = ahead_find(fs, key);
		if ((s && !slot_reusable(fs, s)) || (kept && meta_fresh(fs, kept->fetched_us))) {
			free(key);
			continue;
		}
		if (!s)
			s = slot_new(fs);
		j = s ? malloc(sizeof(*j) + strlen(key) + 1) : NULL;
		if (!j) {
			free(key);
			return;             /* every slot is in use: the walk catches up */
		}
		ahead_clear(s);
		s->key = key;
		s->name = strdup(e->name);
		s->parent = d->ino;
		s->busy = true;
		j->slot = (size_t)(s - fs->ahead);
		strcpy(j->key, key);
		if (!s->name || !prefetch_pool_submit(fs->list_pool, &j->item)) {
			free(j);
			ahead_clear(s);
			return;
		}
	}
}

void dir_ahead_kick(struct tfs_fs *fs, uint64_t ino)
{
	struct fs_node *d = node_by_ino(fs, ino), *p;
	const struct dir_entry *e;

	if (!fs->list_pool || !d || !d->is_dir || atomic_load(&fs->store_down))
		return;
	kick_from(fs, d, 0);
	if (ino == FS_ROOT_INO || !(p = node_by_ino(fs, d->parent)) || !p->listing)
		return;
	e = listing_find(p->listing, d->name);
	if (e)
		kick_from(fs, p, (size_t)(e - p->listing->ents) + 1);
}

bool dir_ahead_wait(struct tfs_fs *fs, struct fs_node *n)
{
	struct dir_ahead *s = ahead_find(fs, n->key);
	char *key;

	if (!s || (!s->busy && !s->listing))
		return false;           /* none, or it brought none: the open asks */
	if (!s->busy) {
		ahead_give(s, n);
		return true;
	}
	key = strdup(n->key);       /* n may be gone once the lock was let go */
	if (!key)
		return false;
	/* until this fetch ends (relisted is broadcast for every one) */
	while (s->busy && strcmp(s->key, key) == 0)
		pthread_cond_wait(&fs->relisted, &fs->lock);
	free(key);
	return true;
}

int dir_ahead_start(struct tfs_fs *fs)
{
	unsigned n = fs->cfg.list_ahead;

	if (n == 0 || fs->cfg.metadata_ttl_ms == 0)
		return TFS_OK;          /* off, or nothing fetched would still be fresh */
	fs->ahead = calloc(2 * (size_t)n, sizeof(*fs->ahead));
	if (!fs->ahead)
		return TFS_E_NOMEM;
	fs->n_ahead = 2 * (size_t)n;
	/* room for a job per slot, and for the workers' jobs that have freed
	 * their slot and not yet left the pool */
	fs->list_pool = prefetch_pool_new(n < AHEAD_THREADS_MAX ? n : AHEAD_THREADS_MAX,
					  fs->n_ahead + AHEAD_THREADS_MAX, ahead_run, fs);
	return fs->list_pool ? TFS_OK : TFS_E_NOMEM;
}

void dir_ahead_stop(struct tfs_fs *fs)
{
	prefetch_pool_free(fs->list_pool);   /* waits for fetches under way */
	fs->list_pool = NULL;
	for (size_t i = 0; i < fs->n_ahead; i++)
		ahead_clear(&fs->ahead[i]);
	free(fs->ahead);
	fs->ahead = NULL;
	fs->n_ahead = 0;
}
