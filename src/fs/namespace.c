/* namespace.c - names to nodes: lookups (from a fresh listing, a saved
 * one, or the store), attributes and versions refreshed after the TTL by
 * fetching a small stale listing again rather than a HEAD per file, and
 * directory reads (see fs_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"
#include "fs/keypath.h"

/* ---- revalidation by listing -------------------------------------------- */

/* A job reading a directory for longer than the metadata TTL (an epoch
 * over ImageNet takes minutes) would pay one HEAD per file once the
 * directory's listing is stale: 20 ms each on S3, a million per epoch.
 * When the stale listing is small enough (RELIST_MAX entries, 10 pages),
 * fetching it again revalidates every file in it at once.  One fetch per
 * directory at a time: the others wait for it. */

/* Make directory ino's listing fresh.  Lock held on entry and on return
 * (dropped while fetching).  TFS_OK when it is fresh now, or when the
 * store did not answer and the old listing is served stale (stale_ok). */
int dir_relist(struct tfs_fs *fs, uint64_t ino)
{
	struct dir_listing *l = NULL;
	struct fs_node *n;
	bool waited = false;
	char *key;
	int rc;

	for (;;) {
		n = node_by_ino(fs, ino);
		if (!n || !n->is_dir)
			return TFS_E_NOENT;
		if (n->listing && (meta_fresh(fs, n->listing->fetched_us) ||
				   stale_without_asking(fs, n->listing->fetched_us)))
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
	rc = listing_fetch(fs, key, &l);
	pthread_mutex_lock(&fs->lock);
	store_answered(fs, rc);
	n = node_by_ino(fs, ino);
	if (n) {
		n->relisting = false;
		if (rc != TFS_OK && n->listing && stale_ok(fs, rc, n->listing->fetched_us))
			rc = TFS_OK;
		n->relist_rc = rc;
		node_listing_offer(n, l);
	}
	pthread_cond_broadcast(&fs->relisted);
	listing_put(l);
	free(key);
	return rc;
}

/* File node n's version from its parent's listing, fetched again first
 * if stale and small (lock held; may drop it, so n is found again by
 * ino).  true when the node is fresh now. */
bool file_relist(struct tfs_fs *fs, uint64_t ino)
{
	struct fs_node *n = node_by_ino(fs, ino), *p;
	const struct dir_entry *e;
	struct obj_meta meta;

	if (!n || n->is_dir || !(p = node_by_ino(fs, n->parent)) || !p->listing)
		return false;
	if (!meta_fresh(fs, p->listing->fetched_us)) {
		if (p->listing->n > RELIST_MAX || dir_relist(fs, p->ino) != TFS_OK)
			return false;
		if (!(n = node_by_ino(fs, ino)) || !(p = node_by_ino(fs, n->parent)) ||
		    !p->listing)
			return false;
	}
	e = listing_find(p->listing, n->name);
	if (!e || e->is_dir)
		return false;           /* gone, or a directory now: the HEAD will say */
	listing_entry_meta(e, &meta);
	return node_set_version(fs, n, &meta, p->listing->fetched_us) == TFS_OK && n->ver &&
	       meta_fresh(fs, n->attr_us);
}

/* Look name up in a listing loaded from the cache index, and make it the
 * parent's listing unless a newer one arrived meanwhile.  Consumes l. */
int listing_lookup_saved(struct tfs_fs *fs, uint64_t parent_ino, const char *name,
			   struct dir_listing *l, struct fs_attr *out)
{
	struct fs_node *parent;
	const struct dir_entry *e;
	struct obj_meta meta;
	int rc = TFS_E_NOENT;

	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, parent_ino);
	if (parent && parent->is_dir) {
		node_listing_offer(parent, l);
		/* the newest listing answers, whichever that is now */
		e = listing_find(parent->listing, name);
		if (e) {
			listing_entry_meta(e, &meta);
			rc = node_learn(fs, parent, name, e->is_dir, &meta,
					parent->listing->fetched_us, out);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	listing_put(l);
	return rc;
}

/* ---- lookups and attributes --------------------------------------------- */

/* Stale-if-error for a lookup (lock held): the last known answer for name
 * in parent - the node if there is one, else the parent's listing, else
 * the listing kept for it as a directory the kernel forgot - when
 * stale_ok() (asked: the store failed with rc) or stale_without_asking()
 * allows it.  true and *rc set when served. */
static bool lookup_stale(struct tfs_fs *fs, struct fs_node *parent, const char *name,
			 bool asked, int *rc, struct fs_attr *out)
{
	const struct dir_entry *e = parent->listing ? listing_find(parent->listing, name) : NULL;
	struct fs_node *n = node_by_name(fs, parent->ino, name);
	const struct dir_listing *kept = NULL;
	struct obj_meta meta;
	uint64_t at = e ? parent->listing->fetched_us : 0;
	char *dirkey;

	if (!asked && !atomic_load(&fs->store_down))
		return false;   /* no outage: nothing to serve without asking */
	if (n && (n->is_dir || n->ver) && n->attr_us >= at)
		at = n->attr_us;
	else
		n = NULL;
	if (!at && (dirkey = node_child_key(parent, name, true))) {
		kept = stash_find(fs, dirkey);
		at = kept ? kept->fetched_us : 0;
		free(dirkey);
	}
	if (!at || !(asked ? stale_ok(fs, *rc, at) : stale_without_asking(fs, at)))
		return false;
	if (n) {
		*rc = node_learn(fs, parent, name, n->is_dir, NULL, n->attr_us, out);
		return true;
	}
	if (kept) {
		*rc = node_learn(fs, parent, name, true, NULL, at, out);
		return true;
	}
	listing_entry_meta(e, &meta);
	*rc = node_learn(fs, parent, name, e->is_dir, &meta, at, out);
	return true;
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

int fs_lookup(struct tfs_fs *fs, uint64_t parent_ino, const char *name, struct fs_attr *out)
{
	struct fs_node *parent;
	struct obj_meta meta;
	char *dirkey = NULL;
	bool is_dir = false, had_listing, relisted = false;
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
	if (parent->listing && !meta_fresh(fs, parent->listing->fetched_us) &&
	    parent->listing->n <= RELIST_MAX) {
		/* failed: asked by name below; stale: the listing answers */
		relisted = dir_relist(fs, parent_ino) == TFS_OK;
		parent = node_by_ino(fs, parent_ino);
		if (!parent || !parent->is_dir) {
			rc = parent ? TFS_E_NOTDIR : TFS_E_NOENT;
			goto unlock;
		}
	}
	if (parent->listing && (relisted || meta_fresh(fs, parent->listing->fetched_us))) {
		const struct dir_entry *e = listing_find(parent->listing, name);
		if (!e) {
			/* a stale listing cannot say a name is absent: the
			 * store, which could, did not answer */
			rc = meta_fresh(fs, parent->listing->fetched_us) ? TFS_E_NOENT : TFS_E_IO;
			goto unlock;
		}
		listing_entry_meta(e, &meta);
		rc = node_learn(fs, parent, name, e->is_dir, &meta, parent->listing->fetched_us, out);
		goto unlock;
	}
	if (lookup_stale(fs, parent, name, false, &rc, out))
		goto unlock;
	dirkey = strdup(parent->key);
	had_listing = parent->listing != NULL;
	pthread_mutex_unlock(&fs->lock);
	if (!dirkey)
		return TFS_E_NOMEM;

	/* a saved listing only helps a directory not listed in this mount
	 * yet: one listed (and now stale) here is newer than what was saved */
	if (!had_listing) {
		struct dir_listing *l = listing_load(fs, dirkey, false);
		if (l) {
			free(dirkey);
			return listing_lookup_saved(fs, parent_ino, name, l, out);
		}
	}
	asked_us = clock_mono_us();
	rc = lookup_remote(fs, dirkey, name, &is_dir, &meta);
	free(dirkey);

	pthread_mutex_lock(&fs->lock);
	parent = node_by_ino(fs, parent_ino);
	store_answered(fs, rc);
	if (rc != TFS_OK) {
		if (parent)
			(void)lookup_stale(fs, parent, name, true, &rc, out);
		goto unlock;
	}
	rc = parent ? node_learn(fs, parent, name, is_dir, is_dir ? NULL : &meta, asked_us, out)
		    : TFS_E_NOENT;
unlock:
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Refresh a file node's size/ETag if older than the TTL: from its
 * directory's listing (fetched again if it is stale and small), else
 * with a HEAD.  Called without the lock; re-finds the node by ino. */
int file_refresh(struct tfs_fs *fs, uint64_t ino, struct fs_attr *attr,
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
	if (n->is_dir || (n->ver && meta_fresh(fs, n->attr_us)) || file_relist(fs, ino)) {
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
	if (n->ver && stale_without_asking(fs, n->attr_us)) {
		rc = TFS_OK;
		goto fill;
	}
	key = strdup(n->key);
	pthread_mutex_unlock(&fs->lock);
	if (!key)
		return TFS_E_NOMEM;
	asked_us = clock_mono_us();
	tfs_errinfo_clear(&ei);
	rc = objstore_head(fs->cfg.store, key, &meta, &ei);
	atomic_fetch_add(&fs->heads, 1);
	free(key);
	pthread_mutex_lock(&fs->lock);
	store_answered(fs, rc);
	n = node_by_ino(fs, ino);
	if (!n) {
		pthread_mutex_unlock(&fs->lock);
		return TFS_E_NOENT;
	}
	if (rc != TFS_OK && n->ver && stale_ok(fs, rc, n->attr_us)) {
		rc = TFS_OK;   /* the store did not answer: the version we know */
		goto fill;
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

/* ---- readdir ------------------------------------------------------------ */

/* Fetching dirkey's listing failed with *rc: the last known listing when
 * stale_ok() allows it (the node's, else the one saved in the cache
 * index), else NULL.  A reference for the caller.  Lock not held. */
static struct dir_listing *opendir_stale(struct tfs_fs *fs, uint64_t ino, const char *dirkey,
					 int *rc)
{
	struct dir_listing *l = NULL;
	struct fs_node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n && n->listing)
		l = listing_get(n->listing);
	pthread_mutex_unlock(&fs->lock);
	if (!l)
		l = listing_load(fs, dirkey, true);
	if (l && stale_ok(fs, *rc, l->fetched_us)) {
		*rc = TFS_OK;
		return l;
	}
	listing_put(l);
	return NULL;
}

int fs_opendir(struct tfs_fs *fs, uint64_t ino, struct fs_dir **out)
{
	struct fs_node *n;
	struct fs_dir *d;
	struct dir_listing *l = NULL;
	uint64_t since = clock_mono_us();
	bool had_listing, fresh, waited = false;
	int rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return TFS_E_NOMEM;
	pthread_mutex_lock(&fs->lock);
	for (;;) {
		n = node_by_ino(fs, ino);
		if (!n || !n->is_dir) {
			rc = n ? TFS_E_NOTDIR : TFS_E_NOENT;
			goto unlock;
		}
		/* after a wait, a listing fetched since this open began is as
		 * fresh as one it would fetch itself (a TTL shorter than a LIST) */
		fresh = n->listing && (meta_fresh(fs, n->listing->fetched_us) ||
				       stale_without_asking(fs, n->listing->fetched_us) ||
				       (waited && n->listing->fetched_us >= since));
		/* a listing fetched ahead for it: waited for or taken (once),
		 * look again */
		if (fresh || waited || !dir_ahead_wait(fs, n))
			break;
		waited = true;
	}
	d->ino = n->ino;
	d->parent = n->parent;
	d->key = strdup(n->key);
	if (!d->key) {
		rc = TFS_E_NOMEM;
		goto unlock;
	}
	if (fresh) {
		d->listing = listing_get(n->listing);
		dir_ahead_kick(fs, ino);
		pthread_mutex_unlock(&fs->lock);
		fs_handle_add(fs, &fs->dirs, &d->link);
		*out = d;
		return TFS_OK;
	}
	had_listing = n->listing != NULL;   /* then newer than any saved one */
	pthread_mutex_unlock(&fs->lock);

	if (!had_listing)
		l = listing_load(fs, d->key, false);
	if (!l) {
		rc = listing_fetch(fs, d->key, &l);
		store_answered(fs, rc);
		if (rc != TFS_OK) {
			l = opendir_stale(fs, ino, d->key, &rc);
			if (!l)
				goto fail;
		}
	}
	pthread_mutex_lock(&fs->lock);
	n = node_by_ino(fs, ino);
	if (n)
		node_listing_offer(n, l);
	dir_ahead_kick(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	d->listing = l;
	fs_handle_add(fs, &fs->dirs, &d->link);
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
	listing_entry_meta(e, &meta);
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

void fs_dir_free(struct fs_dir *d)
{
	listing_put(d->listing);
	free(d->key);
	free(d);
}

void fs_releasedir(struct tfs_fs *fs, struct fs_dir *d)
{
	if (!d)
		return;
	fs_handle_del(fs, &d->link);
	fs_dir_free(d);
}
