/* part_cache.c - blocks of chunks read at random, kept until their chunk
 * is whole or the bound needs their room.
 *
 * Invariants (under pc->lock): pc->bytes is the sum of the blocks held by
 * every entry; each entry is in exactly one hash chain and in the LRU
 * list (most recent first); an entry with `held` set is never freed or
 * emptied but by its holder; an entry not held holds a block at least
 * (so the entries are bounded with the bytes).
 */
#include "tiers/part_cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/tfs_err.h"

#define PART_BUCKETS 1024
#define PART_GHOSTS 16384    /* 384 KiB */

struct part_entry {
	struct part_entry *hnext;           /* hash chain */
	struct part_entry *prev, *next;     /* LRU list */
	uint64_t hash, index;
	size_t len;                         /* the chunk's length */
	size_t nblocks, bytes;              /* blocks of len; bytes held */
	uint64_t asked, fetched;            /* the ledger (part_entry_ledger) */
	bool held, drop;
	char *key, *etag;
	void **blocks;                      /* nblocks; NULL = not held */
};

struct part_cache {
	pthread_mutex_t lock;
	pthread_cond_t released;
	uint64_t cap, bytes, entries;
	uint64_t reads, block_hits, completed, dropped;
	struct part_entry *head, *tail;     /* LRU: head most recent */
	struct part_entry *bucket[PART_BUCKETS];
	/* the ledgers of entries let go for room, by hash, direct-mapped:
	 * an entry made again takes its ledger back (a slot another chunk
	 * took since starts it afresh, within the bound all the same) */
	struct part_ghost {
		uint64_t hash, asked, fetched;
	} *ghost;
};

static uint64_t id_hash(const struct chunk_id *id)
{
	uint64_t h = XXH3_64bits_withSeed(id->etag, strlen(id->etag), id->index);

	return XXH3_64bits_withSeed(id->key, strlen(id->key), h);
}

static size_t block_len(const struct part_entry *e, size_t b)
{
	size_t start = b * PART_BLOCK;

	return e->len - start < PART_BLOCK ? e->len - start : PART_BLOCK;
}

struct part_cache *part_cache_new(uint64_t cap_bytes)
{
	struct part_cache *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pc->ghost = calloc(PART_GHOSTS, sizeof(*pc->ghost));
	if (!pc->ghost) {
		free(pc);
		return NULL;
	}
	pthread_mutex_init(&pc->lock, NULL);
	pthread_cond_init(&pc->released, NULL);
	pc->cap = cap_bytes;
	return pc;
}

static void empty_blocks(struct part_cache *pc, struct part_entry *e)
{
	for (size_t b = 0; b < e->nblocks; b++) {
		free(e->blocks[b]);
		e->blocks[b] = NULL;
	}
	pc->bytes -= e->bytes;
	e->bytes = 0;
}

static void entry_free(struct part_cache *pc, struct part_entry *e)
{
	empty_blocks(pc, e);
	free(e->blocks);
	free(e->key);
	free(e->etag);
	free(e);
}

static void lru_unlink(struct part_cache *pc, struct part_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		pc->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		pc->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct part_cache *pc, struct part_entry *e)
{
	e->next = pc->head;
	e->prev = NULL;
	if (pc->head)
		pc->head->prev = e;
	pc->head = e;
	if (!pc->tail)
		pc->tail = e;
}

/* Unhash, unlink and free e (not held).  pc->lock held. */
static void entry_remove(struct part_cache *pc, struct part_entry *e)
{
	struct part_entry **p = &pc->bucket[e->hash % PART_BUCKETS];

	assert(!e->held);
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	lru_unlink(pc, e);
	pc->entries--;
	entry_free(pc, e);
}

void part_cache_free(struct part_cache *pc)
{
	if (!pc)
		return;
	while (pc->head)
		entry_remove(pc, pc->head);
	pthread_cond_destroy(&pc->released);
	pthread_mutex_destroy(&pc->lock);
	free(pc->ghost);
	free(pc);
}

static struct part_entry *entry_find(struct part_cache *pc, const struct chunk_id *id,
				     uint64_t h)
{
	for (struct part_entry *e = pc->bucket[h % PART_BUCKETS]; e; e = e->hnext)
		if (e->hash == h && e->index == id->index && strcmp(e->key, id->key) == 0 &&
		    strcmp(e->etag, id->etag) == 0)
			return e;
	return NULL;
}

static struct part_entry *entry_new(const struct chunk_id *id, uint64_t h, size_t len)
{
	struct part_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->hash = h;
	e->index = id->index;
	e->len = len;
	e->nblocks = (len + PART_BLOCK - 1) / PART_BLOCK;
	e->key = strdup(id->key);
	e->etag = strdup(id->etag);
	e->blocks = calloc(e->nblocks ? e->nblocks : 1, sizeof(*e->blocks));
	if (!e->key || !e->etag || !e->blocks) {
		free(e->key);
		free(e->etag);
		free(e->blocks);
		free(e);
		return NULL;
	}
	return e;
}

/* Remove e (not held), keeping its ledger for when it is made again.
 * pc->lock held. */
static void entry_forget(struct part_cache *pc, struct part_entry *e)
{
	pc->ghost[e->hash % PART_GHOSTS] = (struct part_ghost){ e->hash, e->asked, e->fetched };
	entry_remove(pc, e);
}

/* Let entries go, least recently used first, until the blocks held fit
 * the bound; held entries stay.  pc->lock held. */
static void enforce_cap(struct part_cache *pc)
{
	struct part_entry *e = pc->tail, *prev;

	for (; e && pc->bytes > pc->cap; e = prev) {
		prev = e->prev;
		if (e->held)
			continue;
		entry_forget(pc, e);
		pc->dropped++;
	}
}

struct part_entry *part_cache_acquire(struct part_cache *pc, const struct chunk_id *id,
				      size_t chunk_len, bool *waited)
{
	uint64_t h = id_hash(id);
	struct part_entry *e;

	*waited = false;
	if (chunk_len == 0 || chunk_len / 2 > pc->cap)
		return NULL;
	pthread_mutex_lock(&pc->lock);
	while ((e = entry_find(pc, id, h)) && e->held) {
		*waited = true;
		pthread_cond_wait(&pc->released, &pc->lock);
	}
	if (e && e->len != chunk_len) {
		entry_remove(pc, e);   /* the store reused an ETag for other bytes */
		e = NULL;
	}
	if (!e) {
		e = entry_new(id, h, chunk_len);
		if (!e) {
			pthread_mutex_unlock(&pc->lock);
			return NULL;
		}
		struct part_ghost *g = &pc->ghost[h % PART_GHOSTS];

		if (g->hash == h) {
			e->asked = g->asked;
			e->fetched = g->fetched;
			g->hash = 0;
		}
		e->hnext = pc->bucket[h % PART_BUCKETS];
		pc->bucket[h % PART_BUCKETS] = e;
		pc->entries++;
	} else {
		lru_unlink(pc, e);
	}
	lru_push(pc, e);
	e->held = true;
	pthread_mutex_unlock(&pc->lock);
	return e;
}

void part_cache_release(struct part_cache *pc, struct part_entry *e, bool drop)
{
	pthread_mutex_lock(&pc->lock);
	assert(e->held);
	e->held = false;
	if (drop || e->drop)
		entry_remove(pc, e);
	else if (e->bytes == 0)
		entry_forget(pc, e);   /* nothing held (its fetch failed): no entry */
	enforce_cap(pc);
	pthread_cond_broadcast(&pc->released);
	pthread_mutex_unlock(&pc->lock);
}

void part_entry_ledger(const struct part_entry *e, uint64_t *asked, uint64_t *fetched)
{
	*asked = e->asked;
	*fetched = e->fetched;
}

void part_entry_account(struct part_entry *e, uint64_t asked, uint64_t fetched)
{
	e->asked += asked;
	e->fetched += fetched;
}

size_t part_entry_bytes(const struct part_entry *e)
{
	return e->bytes;
}

size_t part_entry_missing(const struct part_entry *e, size_t off, size_t end)
{
	size_t miss = 0;

	for (size_t b = off / PART_BLOCK; b * PART_BLOCK < end && b < e->nblocks; b++)
		if (!e->blocks[b])
			miss += block_len(e, b);
	return miss;
}

bool part_entry_hole(const struct part_entry *e, size_t off, size_t end, size_t *start,
		     size_t *stop)
{
	size_t b = off / PART_BLOCK, last = (end + PART_BLOCK - 1) / PART_BLOCK;

	if (off >= end)
		return false;
	if (last > e->nblocks)
		last = e->nblocks;
	while (b < last && e->blocks[b])
		b++;
	if (b >= last)
		return false;
	*start = b * PART_BLOCK;
	while (b < last && !e->blocks[b])
		b++;
	*stop = b * PART_BLOCK < end ? b * PART_BLOCK : end;
	if (*stop > e->len)
		*stop = e->len;
	return true;
}

void part_entry_copy(const struct part_entry *e, size_t off, size_t len, void *dst)
{
	char *d = dst;

	while (len > 0) {
		size_t b = off / PART_BLOCK, in = off % PART_BLOCK;
		size_t n = PART_BLOCK - in < len ? PART_BLOCK - in : len;

		assert(b < e->nblocks && e->blocks[b]);
		memcpy(d, (const char *)e->blocks[b] + in, n);
		d += n;
		off += n;
		len -= n;
	}
}

void part_entry_copy_held(const struct part_entry *e, void *dst)
{
	for (size_t b = 0; b < e->nblocks; b++)
		if (e->blocks[b])
			memcpy((char *)dst + b * PART_BLOCK, e->blocks[b], block_len(e, b));
}

int part_entry_put(struct part_cache *pc, struct part_entry *e, size_t off, size_t end,
		   const void *src)
{
	const char *s = src;
	size_t added = 0;
	int rc = TFS_OK;

	assert(off % PART_BLOCK == 0);
	for (size_t b = off / PART_BLOCK; b * PART_BLOCK < end && b < e->nblocks; b++) {
		size_t n = block_len(e, b);

		if (!e->blocks[b]) {
			void *p = malloc(n);

			if (!p) {
				rc = TFS_E_NOMEM;
				break;
			}
			memcpy(p, s + (b * PART_BLOCK - off), n);
			e->blocks[b] = p;
			added += n;
		}
	}
	pthread_mutex_lock(&pc->lock);
	e->bytes += added;
	pc->bytes += added;
	pthread_mutex_unlock(&pc->lock);
	return rc;
}

/* Forget e, or, when a caller holds it, have its release forget it.
 * Returns the bytes forgotten now.  pc->lock held. */
static uint64_t entry_drop(struct part_cache *pc, struct part_entry *e)
{
	uint64_t bytes = e->bytes;

	if (e->held) {
		e->drop = true;
		return 0;
	}
	entry_remove(pc, e);
	return bytes;
}

uint64_t part_cache_drop(struct part_cache *pc, const char *key)
{
	struct part_entry *e, *next;
	uint64_t bytes = 0;

	pthread_mutex_lock(&pc->lock);
	for (e = pc->head; e; e = next) {
		next = e->next;
		if (!key || strcmp(e->key, key) == 0)
			bytes += entry_drop(pc, e);
	}
	pthread_mutex_unlock(&pc->lock);
	return bytes;
}

void part_cache_drop_chunk(struct part_cache *pc, const struct chunk_id *id)
{
	uint64_t h = id_hash(id);
	struct part_entry *e;

	pthread_mutex_lock(&pc->lock);
	e = entry_find(pc, id, h);
	if (e)
		(void)entry_drop(pc, e);
	pthread_mutex_unlock(&pc->lock);
}

void part_cache_count_read(struct part_cache *pc, bool all_held, bool completed)
{
	pthread_mutex_lock(&pc->lock);
	pc->reads++;
	pc->block_hits += all_held;
	pc->completed += completed;
	pthread_mutex_unlock(&pc->lock);
}

void part_cache_stats(struct part_cache *pc, struct part_cache_stats *out)
{
	pthread_mutex_lock(&pc->lock);
	*out = (struct part_cache_stats){ .bytes = pc->bytes, .entries = pc->entries,
					  .cap = pc->cap, .reads = pc->reads,
					  .block_hits = pc->block_hits,
					  .completed = pc->completed, .dropped = pc->dropped };
	pthread_mutex_unlock(&pc->lock);
}
