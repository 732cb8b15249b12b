/* nodes.c - the inode table: nodes created on first sight and kept while
 * the kernel holds a lookup on them, the object versions they learn
 * (older news never overwrites newer), the directories the kernel forgot
 * (their listings kept a while), and the list of open handles (see
 * fs_internal.h for the invariants and the lock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"

#define STORE_PROBE_US 1000000u   /* during an outage, ask the store once a second */

bool meta_fresh(const struct tfs_fs *fs, uint64_t at_us)
{
	return at_us && clock_mono_us() - at_us < (uint64_t)fs->cfg.metadata_ttl_ms * 1000;
}

/* ---- stale-if-error --------------------------------------------------------
 * A training job whose data is all on the node must not stop because the
 * store is away for a while: once the TTL has passed, revalidation fails,
 * and without this every stat, open and readdir would fail with it.  Only
 * "the store did not answer" qualifies: connection refused or reset,
 * timeouts, 5xx and 429 after the retries (TFS_E_IO, TFS_E_CONNECT).  An
 * answer - a 404, a 403 - is news and is believed.  What is served is
 * exactly what was known (a listing snapshot, a node's version), so the
 * bytes of an open file still come from one version, and cached chunks
 * are keyed by it; chunks not cached fail with EIO.
 *
 * The outage is a flag with the time it started and the last failure:
 * the first stale answer sets it and logs a warning, the next metadata
 * request the store answers at all (a 403 too) clears it and logs how
 * long it lasted. */

static bool store_transient(int rc)
{
	return rc == TFS_E_IO || rc == TFS_E_CONNECT;
}

static bool within_max_stale(const struct tfs_fs *fs, uint64_t at_us)
{
	uint64_t bound = ((uint64_t)fs->cfg.metadata_ttl_ms + fs->cfg.max_stale_ms) * 1000;

	return at_us && fs->cfg.max_stale_ms && clock_mono_us() - at_us < bound;
}

static void store_down_mark(struct tfs_fs *fs, int rc)
{
	uint64_t now = clock_mono_us();

	atomic_store(&fs->down_last_us, now);
	if (atomic_exchange(&fs->store_down, true))
		return;
	atomic_store(&fs->down_since_us, now);
	atomic_store(&fs->down_stale_base, atomic_load(&fs->stale_served));
	log_warn("object store not answering (%s): serving the last known listings and "
		 "attributes and cached data, up to %llu s past the metadata TTL; "
		 "uncached data fails with EIO", tfs_strerror(rc),
		 (unsigned long long)(fs->cfg.max_stale_ms / 1000));
}

bool stale_ok(struct tfs_fs *fs, int rc, uint64_t at_us)
{
	if (!store_transient(rc) || !within_max_stale(fs, at_us))
		return false;
	atomic_fetch_add(&fs->stale_served, 1);
	store_down_mark(fs, rc);
	return true;
}

bool stale_without_asking(struct tfs_fs *fs, uint64_t at_us)
{
	if (!atomic_load(&fs->store_down) ||
	    clock_mono_us() - atomic_load(&fs->down_last_us) >= STORE_PROBE_US ||
	    !within_max_stale(fs, at_us))
		return false;
	atomic_fetch_add(&fs->stale_served, 1);
	return true;
}

/* What the store says, when it says anything (a 404, a 403, a bad
 * signature, a body we cannot parse), proves it is reachable again. */
static bool store_replied(int rc)
{
	return rc == TFS_OK || (rc != TFS_E_NOMEM && rc != TFS_E_INTR && !store_transient(rc));
}

void store_answered(struct tfs_fs *fs, int rc)
{
	if (!store_replied(rc) || !atomic_load(&fs->store_down) ||
	    !atomic_exchange(&fs->store_down, false))
		return;
	log_warn("object store answering again after %.1f s; %llu answers were served stale",
		 (double)(clock_mono_us() - atomic_load(&fs->down_since_us)) / 1e6,
		 (unsigned long long)(atomic_load(&fs->stale_served) -
				      atomic_load(&fs->down_stale_base)));
}

void version_put(struct fs_version *v)
{
	if (v && atomic_fetch_sub(&v->refs, 1) == 1)
		free(v);
}

struct fs_version *version_get(struct fs_version *v)
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
void cache_id_of(const struct obj_meta *m, char *out, size_t n)
{
	if (m->etag[0])
		snprintf(out, n, "%s", m->etag);
	else
		snprintf(out, n, "noetag:%llu:%lld", (unsigned long long)m->size,
			 (long long)m->mtime);
}

/* Record that file node n has version m, learnt at learned_us (lock held).
 * Older news than what the node has is ignored. */
int node_set_version(struct tfs_fs *fs, struct fs_node *n, const struct obj_meta *m,
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

struct fs_node *node_by_ino(struct tfs_fs *fs, uint64_t ino)
{
	for (struct fs_node *n = fs->by_ino[ino_hash(fs, ino)]; n; n = n->next_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

struct fs_node *node_by_name(struct tfs_fs *fs, uint64_t parent, const char *name)
{
	for (struct fs_node *n = fs->by_name[name_hash(fs, parent, name)]; n; n = n->next_name)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

void node_link(struct tfs_fs *fs, struct fs_node *n)
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

void node_free(struct fs_node *n)
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
char *node_child_key(const struct fs_node *dir, const char *name, bool is_dir)
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

void node_attr(const struct tfs_fs *fs, const struct fs_node *n, struct fs_attr *a)
{
	a->ino = n->ino;
	a->is_dir = n->is_dir;
	a->size = n->is_dir || !n->ver ? 0 : n->ver->size;
	a->mtime = n->is_dir || !n->ver || !n->ver->mtime ? fs->mount_time : n->ver->mtime;
	a->mode = n->is_dir ? (S_IFDIR | fs->cfg.dir_mode) : (S_IFREG | fs->cfg.file_mode);
	a->uid = fs->cfg.uid;
	a->gid = fs->cfg.gid;
}

void stash_clear(struct dir_stash *s)
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

const struct dir_listing *stash_find(const struct tfs_fs *fs, const char *key)
{
	for (size_t i = 0; i < DIR_STASH; i++)
		if (fs->stash[i].key && strcmp(fs->stash[i].key, key) == 0)
			return fs->stash[i].listing;
	return NULL;
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

void node_listing_offer(struct fs_node *n, struct dir_listing *l)
{
	if (l && (!n->listing || n->listing->fetched_us < l->fetched_us)) {
		listing_put(n->listing);
		n->listing = listing_get(l);
	}
}

/* ---- listings fetched ahead, waiting for their nodes ----------------------
 * dirahead.c fills the slots; a directory node created for one takes its
 * listing, as it takes a forgotten predecessor's from the stash. */

void ahead_clear(struct dir_ahead *s)
{
	free(s->key);
	free(s->name);
	listing_put(s->listing);
	*s = (struct dir_ahead){ 0 };
}

struct dir_ahead *ahead_find(struct tfs_fs *fs, const char *key)
{
	for (size_t i = 0; i < fs->n_ahead; i++)
		if (fs->ahead[i].key && strcmp(fs->ahead[i].key, key) == 0)
			return &fs->ahead[i];
	return NULL;
}

void ahead_give(struct dir_ahead *s, struct fs_node *n)
{
	node_listing_offer(n, s->listing);
	ahead_clear(s);
}

/* A new directory node n takes a listing fetched ahead for it (lock held). */
static void ahead_take(struct tfs_fs *fs, struct fs_node *n)
{
	struct dir_ahead *s = ahead_find(fs, n->key);

	if (s && !s->busy && s->listing)
		ahead_give(s, n);
}

/* Find or create the child `name` of parent (lock held) with what was
 * learnt about it at learned_us, add one lookup, and fill *out.  A child
 * whose type changed (file <-> dir) gets a new inode, unless the news is
 * older than what the node already knows. */
int node_learn(struct tfs_fs *fs, struct fs_node *parent, const char *name, bool is_dir,
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
		n->key = node_child_key(parent, name, is_dir);
		if (!n->name || !n->key) {
			node_free(n);
			return TFS_E_NOMEM;
		}
		n->ino = fs->next_ino++;
		n->parent = parent->ino;
		n->is_dir = is_dir;
		if (is_dir) {
			stash_take(fs, n);
			ahead_take(fs, n);
		}
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

/* ---- open handles ------------------------------------------------------- */

void fs_handle_add(struct tfs_fs *fs, struct fs_handle_link *head, struct fs_handle_link *l)
{
	pthread_mutex_lock(&fs->lock);
	l->next = head->next;
	l->prev = head;
	head->next->prev = l;
	head->next = l;
	pthread_mutex_unlock(&fs->lock);
}

void fs_handle_del(struct tfs_fs *fs, struct fs_handle_link *l)
{
	pthread_mutex_lock(&fs->lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	pthread_mutex_unlock(&fs->lock);
}
