/* listing.c - directory listings as data: fetched from the store (all
 * pages, merged and checked), kept in the cache index across restarts and
 * loaded from it, searched by name.  Nothing here knows the inode table
 * (namespace.c puts listings on nodes; see fs_internal.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "fs/fs_internal.h"
#include "fs/keypath.h"

void listing_put(struct dir_listing *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	if (l->scan) {
		ra_scan_release(l->scan);
		free(l->scan);
	}
	for (size_t i = 0; i < l->n; i++) {
		free(l->ents[i].name);
		free(l->ents[i].etag);
	}
	free(l->ents);
	free(l);
}

struct dir_listing *listing_get(struct dir_listing *l)
{
	if (l)
		atomic_fetch_add(&l->refs, 1);
	return l;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct dir_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	/* equal names: directory first, so the dedup below keeps it */
	return c ? c : (int)y->is_dir - (int)x->is_dir;
}

static int listing_add(struct dir_listing *l, size_t *cap, const char *name, size_t name_len,
		       bool is_dir, const struct obj_meta *meta)
{
	struct dir_entry *e;

	if (l->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct dir_entry *ne = realloc(l->ents, nc * sizeof(*ne));
		if (!ne)
			return TFS_E_NOMEM;
		l->ents = ne;
		*cap = nc;
	}
	e = &l->ents[l->n];
	memset(e, 0, sizeof(*e));
	e->name = strndup(name, name_len);
	if (!e->name)
		return TFS_E_NOMEM;
	e->is_dir = is_dir;
	if (!is_dir && meta) {
		e->etag = strdup(meta->etag);
		if (!e->etag) {
			free(e->name);
			return TFS_E_NOMEM;
		}
		e->size = meta->size;
		e->mtime = meta->mtime;
	}
	l->n++;
	return TFS_OK;
}

/* Fetch the listing of directory key dir, all pages: at most max entries
 * (more: with cut, the rest left out and said; else TFS_E_TOOBIG); saved
 * in the cache index as of the fetch's start. */
static int fetch_pages(struct tfs_fs *fs, const char *dir, size_t max, bool cut,
		       struct dir_listing **out)
{
	uint64_t wall = clock_wall_us();
	struct dir_listing *l = calloc(1, sizeof(*l));
	struct obj_list_page *page = NULL;
	char *token = NULL;
	size_t cap = 0, dlen = strlen(dir), w;
	int rc = TFS_OK;

	*out = NULL;
	if (!l)
		return TFS_E_NOMEM;
	atomic_init(&l->refs, 1);
	do {
		struct tfs_errinfo ei;
		tfs_errinfo_clear(&ei);
		rc = objstore_list(fs->cfg.store, dir, "/", token, 1000, &page, &ei);
		atomic_fetch_add(&fs->listings, 1);
		if (rc != TFS_OK) {
			/* during an outage, once a second per directory: the
			 * outage itself is logged once (nodes.c) */
			if (atomic_load(&fs->store_down))
				log_debug("listing '%s' failed: %s %s", dir, tfs_strerror(rc), ei.code);
			else
				log_warn("listing '%s' failed: %s %s", dir, tfs_strerror(rc), ei.code);
			goto out;
		}
		for (size_t i = 0; i < page->n_prefixes + page->n_entries && rc == TFS_OK; i++) {
			bool is_prefix = i < page->n_prefixes;
			const char *item, *name;
			size_t item_len, name_len;
			const struct obj_meta *meta = NULL;
			enum keypath_kind k;

			if (is_prefix) {
				item = page->prefixes[i].prefix;
				item_len = page->prefixes[i].prefix_len;
			} else {
				item = page->entries[i - page->n_prefixes].key;
				item_len = page->entries[i - page->n_prefixes].key_len;
				meta = &page->entries[i - page->n_prefixes].meta;
			}
			k = keypath_classify(dir, dlen, item, item_len, is_prefix, &name, &name_len);
			if (k == KEYPATH_UNSAFE) {
				atomic_fetch_add(&fs->unsafe, 1);
				log_debug("left out unsafe key under '%s'", dir);
				continue;
			}
			if (k == KEYPATH_MARKER)
				continue;
			if (l->n >= max) {
				if (!cut) {
					rc = TFS_E_TOOBIG;
					break;
				}
				log_warn("directory '%s' has more than %zu entries; the rest are not shown",
					 dir, max);
				page->truncated = false;
				break;
			}
			rc = listing_add(l, &cap, name, name_len, k == KEYPATH_DIR, meta);
		}
		free(token);
		token = NULL;
		if (rc == TFS_OK && page->truncated) {
			if (!page->next_token) {
				rc = TFS_E_PROTO;
			} else {
				token = strdup(page->next_token);
				if (!token)
					rc = TFS_E_NOMEM;
			}
		}
		obj_list_page_free(page);
		page = NULL;
	} while (rc == TFS_OK && token);
	if (rc != TFS_OK)
		goto out;

	/* S3 returns keys and prefixes in two sorted runs: merge, and let a
	 * directory win over a file of the same name */
	if (l->n > 1)   /* an empty directory has ents == NULL: no qsort(NULL) */
		qsort(l->ents, l->n, sizeof(*l->ents), entry_cmp);
	w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (w && strcmp(l->ents[w - 1].name, l->ents[i].name) == 0) {
			if (!l->ents[i].is_dir)
				atomic_fetch_add(&fs->shadowed, 1);
			free(l->ents[i].name);
			free(l->ents[i].etag);
			continue;
		}
		l->ents[w++] = l->ents[i];
	}
	l->n = w;
	l->fetched_us = clock_mono_us();
	listing_save(fs, dir, l, wall);
out:
	free(token);
	if (rc != TFS_OK) {
		listing_put(l);
		return rc;
	}
	*out = l;
	return TFS_OK;
}

int listing_fetch(struct tfs_fs *fs, const char *dir, struct dir_listing **out)
{
	return fetch_pages(fs, dir, LIST_MAX_ENTRIES, true, out);
}

int listing_fetch_small(struct tfs_fs *fs, const char *dir, size_t max,
			struct dir_listing **out)
{
	return fetch_pages(fs, dir, max, false, out);
}

/* ---- listings kept in the cache index ------------------------------------
 *
 * With an SSD tier, each fetched listing is also saved in its index, so a
 * remount within the metadata TTL lists, looks up and opens without a LIST
 * or a HEAD (and then reads its chunks from the SSD tier without a GET).
 * The TTL still rules: a saved listing is as old as the fetch it came
 * from, measured on the wall clock across the restart.
 *
 * Record "dir:" + directory key:
 *   u32 magic, u32 count, u64 wall-clock microseconds of the fetch,
 *   then per entry: u8 is_dir, u16 name length, u16 etag length,
 *   u64 size, i64 mtime, name bytes, etag bytes (native byte order: the
 *   cache never leaves its machine).
 * A record that does not parse is deleted and ignored.  Directories of
 * more than LISTING_SAVE_MAX entries are not saved (bounded record size
 * and save time).
 */
#define LISTING_MAGIC 0x544c5331u   /* "TLS1" */
#define LISTING_SAVE_MAX 200000u
#define LISTING_ENT_FIXED (1 + 2 + 2 + 8 + 8)

static int listing_record_name(const char *dirkey, char **out)
{
	return asprintf(out, "dir:%s", dirkey) < 0 ? TFS_E_NOMEM : TFS_OK;
}

static void put_bytes(unsigned char **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

void listing_save(struct tfs_fs *fs, const char *dirkey, const struct dir_listing *l,
			 uint64_t fetched_wall_us)
{
	size_t size = 16;
	unsigned char *buf, *p;
	char *name;
	uint32_t magic = LISTING_MAGIC, count = (uint32_t)l->n;

	if (!chunk_cache_has_ssd(fs->cache) || l->n > LISTING_SAVE_MAX)
		return;
	for (size_t i = 0; i < l->n; i++) {
		size_t el = l->ents[i].etag ? strlen(l->ents[i].etag) : 0;
		if (strlen(l->ents[i].name) > UINT16_MAX || el > UINT16_MAX)
			return;
		size += LISTING_ENT_FIXED + strlen(l->ents[i].name) + el;
	}
	buf = malloc(size);
	if (!buf || listing_record_name(dirkey, &name) != TFS_OK) {
		free(buf);
		return;
	}
	p = buf;
	put_bytes(&p, &magic, 4);
	put_bytes(&p, &count, 4);
	put_bytes(&p, &fetched_wall_us, 8);
	for (size_t i = 0; i < l->n; i++) {
		const struct dir_entry *e = &l->ents[i];
		uint8_t is_dir = e->is_dir;
		uint16_t nl = (uint16_t)strlen(e->name), el = (uint16_t)(e->etag ? strlen(e->etag) : 0);
		put_bytes(&p, &is_dir, 1);
		put_bytes(&p, &nl, 2);
		put_bytes(&p, &el, 2);
		put_bytes(&p, &e->size, 8);
		put_bytes(&p, &e->mtime, 8);
		put_bytes(&p, e->name, nl);
		put_bytes(&p, e->etag ? e->etag : "", el);
	}
	assert((size_t)(p - buf) == size);
	if (chunk_cache_meta_put(fs->cache, name, buf, size) != TFS_OK)
		log_debug("listing of '%s' not saved in the cache index", dirkey);
	free(name);
	free(buf);
}

static bool get_bytes(const unsigned char **p, const unsigned char *end, void *v, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	memcpy(v, *p, n);
	*p += n;
	return true;
}

/* The saved listing of dirkey if it is still within the TTL (stale: the
 * TTL plus --max-stale), else NULL.  A record too old for either is
 * deleted. */
struct dir_listing *listing_load(struct tfs_fs *fs, const char *dirkey, bool stale)
{
	uint64_t ttl_us = (uint64_t)fs->cfg.metadata_ttl_ms * 1000;
	uint64_t keep_us = ttl_us + fs->cfg.max_stale_ms * 1000;
	struct dir_listing *l = NULL;
	void *blob = NULL;
	size_t len = 0, cap = 0;
	const unsigned char *p, *end;
	uint32_t magic, count;
	uint64_t fetched, age, now_wall = clock_wall_us(), now_mono = clock_mono_us();
	char *name;
	bool ok = false;

	if (!chunk_cache_has_ssd(fs->cache) || listing_record_name(dirkey, &name) != TFS_OK)
		return NULL;
	if (chunk_cache_meta_get(fs->cache, name, &blob, &len) != TFS_OK)
		goto out;
	p = blob;
	end = p + len;
	if (!get_bytes(&p, end, &magic, 4) || !get_bytes(&p, end, &count, 4) ||
	    !get_bytes(&p, end, &fetched, 8) || magic != LISTING_MAGIC ||
	    count > LISTING_SAVE_MAX) {
		log_warn("saved listing of '%s' is corrupt: dropped", dirkey);
		(void)chunk_cache_meta_del(fs->cache, name);
		goto out;
	}
	ok = true;
	age = now_wall - fetched;
	if (fetched > now_wall || age >= keep_us || age >= now_mono) {
		/* too old (or the clock went back): fetch anew, and do not
		 * keep a record nobody can use (the next fetch saves anew) */
		(void)chunk_cache_meta_del(fs->cache, name);
		goto out;
	}
	if (age >= (stale ? keep_us : ttl_us))
		goto out;       /* kept for an outage, not fresh enough now */
	l = calloc(1, sizeof(*l));
	if (!l)
		goto out;
	atomic_init(&l->refs, 1);
	for (uint32_t i = 0; i < count; i++) {
		uint8_t is_dir;
		uint16_t nl, el;
		struct obj_meta m;
		char nbuf[UINT16_MAX + 1];

		memset(&m, 0, sizeof(m));
		if (!get_bytes(&p, end, &is_dir, 1) || !get_bytes(&p, end, &nl, 2) ||
		    !get_bytes(&p, end, &el, 2) || !get_bytes(&p, end, &m.size, 8) ||
		    !get_bytes(&p, end, &m.mtime, 8) || (size_t)(end - p) < (size_t)nl + el ||
		    el >= sizeof(m.etag) || is_dir > 1 || nl == 0 || memchr(p, 0, nl)) {
			ok = false;
			break;
		}
		memcpy(nbuf, p, nl);
		nbuf[nl] = '\0';
		if (!keypath_component_ok(nbuf, nl)) {
			ok = false;     /* never a name a LIST could not have given */
			break;
		}
		if (i > 0 && strcmp(l->ents[i - 1].name, nbuf) >= 0) {
			ok = false;     /* lookups bisect: sorted and unique, or nothing */
			break;
		}
		memcpy(m.etag, p + nl, el);
		m.etag[el] = '\0';
		p += nl + el;
		if (listing_add(l, &cap, nbuf, nl, is_dir, is_dir ? NULL : &m) != TFS_OK) {
			ok = false;
			break;
		}
	}
	if (!ok || p != end) {
		log_warn("saved listing of '%s' is corrupt: dropped", dirkey);
		(void)chunk_cache_meta_del(fs->cache, name);
		listing_put(l);
		l = NULL;
		goto out;
	}
	l->fetched_us = now_mono - age;
out:
	free(blob);
	free(name);
	return l;
}

/* The object metadata a listing entry carries (zeroes for a directory). */
void listing_entry_meta(const struct dir_entry *e, struct obj_meta *m)
{
	memset(m, 0, sizeof(*m));
	if (e->is_dir)
		return;
	m->size = e->size;
	m->mtime = e->mtime;
	snprintf(m->etag, sizeof(m->etag), "%s", e->etag ? e->etag : "");
}

const struct dir_entry *listing_find(const struct dir_listing *l, const char *name)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->ents[mid].name, name);
		if (c == 0)
			return &l->ents[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
