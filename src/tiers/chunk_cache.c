/* chunk_cache.c - RAM -> SSD -> object store, promoting on the way up.
 *
 * The RAM tier's single-flight covers the whole miss: the SSD read and the
 * GET both run inside its fill, so two readers of one cold chunk cause one
 * SSD read or one GET between them.  Admission to SSD is "every chunk the
 * store had to supply" for now: write-behind at fill time (not demotion at
 * RAM eviction) is what makes a killed daemon come back warm.
 */
#include "tiers/chunk_cache.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/log.h"
#include "common/tfs_err.h"
#include "tiers/access_trace.h"
#include "tiers/pin_set.h"
#include "tiers/ssd_tier.h"

#define FORGOT_SLOTS 65536    /* 512 KiB: few collisions below ~30,000 files */

struct chunk_cache {
	struct ram_tier *ram;
	struct ssd_tier *ssd;
	size_t chunk_size;
	struct pin_set *pins;
	/* the access trace being recorded, if any: a reader counts itself in
	 * trace_users around its use, so a stop can wait readers out */
	_Atomic(struct access_trace *) trace;
	atomic_uint trace_users;
	atomic_uint_fast64_t store_fetches, store_bytes, store_errors, served;
	/* (key, ETag) pairs whose other versions were reclaimed lately, by
	 * hash, direct-mapped (see chunk_cache_forget_versions) */
	atomic_uint_fast64_t forgot[FORGOT_SLOTS];
};

static bool ram_pinned(void *ctx, const char *key)
{
	return pin_set_tier(ctx, key) == PIN_RAM;
}

static bool ssd_pinned(void *ctx, const char *key)
{
	return pin_set_tier(ctx, key) == PIN_SSD;
}

struct chain_fill {
	struct chunk_cache *cc;
	ram_tier_fill_fn fetch;
	void *ctx;
	size_t expect_len;
	bool from_store;
};

struct chunk_cache *chunk_cache_new(const struct chunk_cache_config *cfg)
{
	struct chunk_cache *cc;

	if (cfg->chunk_size == 0 || cfg->ram_bytes < cfg->chunk_size)
		return NULL;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->ram = ram_tier_new(cfg->ram_bytes, cfg->chunk_size, cfg->ram_policy);
	cc->pins = pin_set_new();
	if (!cc->ram || !cc->pins) {
		ram_tier_free(cc->ram);
		pin_set_free(cc->pins);
		free(cc);
		return NULL;
	}
	cc->chunk_size = cfg->chunk_size;
	ram_tier_set_ahead_limit(cc->ram, cfg->ahead_bytes);
	ram_tier_set_pinned_fn(cc->ram, ram_pinned, cc->pins);
	cc->ssd = cfg->ssd;
	if (cc->ssd)
		ssd_tier_set_pinned_fn(cc->ssd, ssd_pinned, cc->pins);
	return cc;
}

void chunk_cache_free(struct chunk_cache *cc)
{
	struct access_trace *t;

	if (!cc)
		return;
	t = chunk_cache_trace_swap(cc, NULL);
	if (t)
		(void)access_trace_stop(t);
	if (cc->ssd) {
		ssd_tier_flush(cc->ssd);   /* queued writes hold RAM references */
		ssd_tier_set_pinned_fn(cc->ssd, NULL, NULL);
	}
	ram_tier_free(cc->ram);
	pin_set_free(cc->pins);
	free(cc);
}

static int chain_fill(void *arg, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct chain_fill *c = arg;
	int rc;

	if (c->cc->ssd && ssd_tier_read(c->cc->ssd, id, buf, cap, len) == TFS_OK) {
		if (*len == c->expect_len)
			return TFS_OK;
		log_warn("cached chunk %llu of '%s' has %zu bytes, the object's version %zu: "
			 "fetched again", (unsigned long long)id->index, id->key, *len,
			 c->expect_len);
	}
	rc = c->fetch(c->ctx, id, buf, cap, len);
	if (rc != TFS_OK) {
		atomic_fetch_add(&c->cc->store_errors, 1);
		return rc;
	}
	atomic_fetch_add(&c->cc->store_fetches, 1);
	atomic_fetch_add(&c->cc->store_bytes, *len);
	c->from_store = true;
	return TFS_OK;
}

static void release_ref(void *ref)
{
	chunk_ref_put(ref);
}

/* A chunk the store supplied goes to the SSD tier too (write-behind);
 * wait: for room in its queue (a fetch ahead: no reader waits), else a
 * full queue drops it. */
static void write_behind(struct chunk_cache *cc, const struct chunk_id *id,
			 const struct chain_fill *c, struct chunk_ref *ref, bool wait)
{
	if (c->from_store && cc->ssd && chunk_ref_len(ref) > 0) {
		struct chunk_ref *d = chunk_ref_dup(ref);
		bool (*store)(struct ssd_tier *, const struct chunk_id *, const void *, size_t,
			      ssd_tier_release_fn, void *) = wait ? ssd_tier_store_wait : ssd_tier_store;

		/* refused: released, counted */
		(void)store(cc->ssd, id, chunk_ref_data(d), chunk_ref_len(d), release_ref, d);
	}
}

/* Record a reader's access in the trace being recorded, if any. */
static void trace_access(struct chunk_cache *cc, const struct chunk_id *id)
{
	struct access_trace *t;

	if (!atomic_load_explicit(&cc->trace, memory_order_relaxed))
		return;
	atomic_fetch_add(&cc->trace_users, 1);
	t = atomic_load(&cc->trace);
	if (t)
		access_trace_record(t, id->key, id->index);
	atomic_fetch_sub(&cc->trace_users, 1);
}

struct access_trace *chunk_cache_trace_swap(struct chunk_cache *cc, struct access_trace *t)
{
	struct access_trace *old = atomic_exchange(&cc->trace, t);

	while (atomic_load(&cc->trace_users) != 0)
		sched_yield();   /* a record takes microseconds */
	return old;
}

int chunk_cache_get(struct chunk_cache *cc, const struct chunk_id *id, size_t expect_len,
		    ram_tier_fill_fn fetch, void *ctx, struct chunk_ref **out)
{
	struct chain_fill c = { cc, fetch, ctx, expect_len, false };
	int rc;

	trace_access(cc, id);
	rc = ram_tier_get(cc->ram, id, expect_len, chain_fill, &c, out);

	if (rc == TFS_OK)
		write_behind(cc, id, &c, *out, false);
	return rc;
}

int chunk_cache_prefetch(struct chunk_cache *cc, const struct chunk_id *id, size_t expect_len,
			 bool epoch, ram_tier_fill_fn fetch, void *ctx)
{
	struct chain_fill c = { cc, fetch, ctx, expect_len, false };
	struct chunk_ref *ref;
	int rc = epoch ? ram_tier_prefetch_epoch(cc->ram, id, expect_len, chain_fill, &c, &ref)
		       : ram_tier_prefetch(cc->ram, id, expect_len, chain_fill, &c, &ref);

	if (rc == TFS_OK) {
		write_behind(cc, id, &c, ref, true);
		chunk_ref_put(ref);
	}
	return rc;
}

static void release_buf(void *buf)
{
	free(buf);
}

int chunk_cache_warm(struct chunk_cache *cc, const struct chunk_id *id, size_t expect_len,
		     enum pin_tier tier, ram_tier_fill_fn fetch, void *ctx, bool *fetched)
{
	struct chain_fill c = { cc, fetch, ctx, expect_len, false };
	struct chunk_ref *ref;
	size_t len;
	void *buf;
	int rc;

	*fetched = false;
	if (tier == PIN_RAM) {
		rc = ram_tier_get(cc->ram, id, expect_len, chain_fill, &c, &ref);
		if (rc != TFS_OK)
			return rc;
		write_behind(cc, id, &c, ref, true);
		chunk_ref_put(ref);
		*fetched = c.from_store;
		return TFS_OK;
	}
	if (!cc->ssd)
		return TFS_E_INVAL;
	len = ssd_tier_contains(cc->ssd, id);
	if (len == expect_len)
		return TFS_OK;
	/* in RAM or on its way there (a reader's fill): copy it from there,
	 * rather than a second GET for the same bytes */
	if (ram_tier_present(cc->ram, id)) {
		struct chunk_ref *ref;

		rc = ram_tier_get(cc->ram, id, expect_len, chain_fill, &c, &ref);
		if (rc != TFS_OK)
			return rc;
		if (c.from_store)      /* evicted meanwhile: fetched after all */
			*fetched = true;
		if (chunk_ref_len(ref) > 0) {
			struct chunk_ref *d = chunk_ref_dup(ref);
			(void)ssd_tier_store_forced(cc->ssd, id, chunk_ref_data(d), chunk_ref_len(d),
						    release_ref, d);   /* refused: stored already */
		}
		chunk_ref_put(ref);
		return TFS_OK;
	}
	/* straight to SSD: a private buffer, not a RAM slot (warming a
	 * dataset bigger than RAM must not flush what readers are using) */
	buf = malloc(cc->chunk_size ? cc->chunk_size : 1);
	if (!buf)
		return TFS_E_NOMEM;
	rc = fetch(ctx, id, buf, cc->chunk_size, &len);
	if (rc != TFS_OK) {
		atomic_fetch_add(&cc->store_errors, 1);
		free(buf);
		return rc;
	}
	atomic_fetch_add(&cc->store_fetches, 1);
	atomic_fetch_add(&cc->store_bytes, len);
	*fetched = true;
	if (len == 0) {
		free(buf);
		return TFS_OK;
	}
	if (!ssd_tier_store_forced(cc->ssd, id, buf, len, release_buf, buf)) {
		/* refused (the buffer is released): fine if a copy is stored
		 * or queued already, else the tier is degraded or stopping */
		ssd_tier_flush(cc->ssd);
		return ssd_tier_contains(cc->ssd, id) == len ? TFS_OK : TFS_AGAIN;
	}
	return TFS_OK;
}

void chunk_cache_read_done(struct chunk_cache *cc, struct chunk_ref *ref)
{
	(void)cc;
	ram_tier_read_done(ref);
}

void chunk_cache_new_epoch(struct chunk_cache *cc)
{
	ram_tier_new_epoch(cc->ram);
}

void chunk_cache_residency(struct chunk_cache *cc, const char *key, const char *cache_id,
			   uint64_t size, uint64_t *ram, uint64_t *ssd)
{
	uint64_t n = size ? (size - 1) / cc->chunk_size + 1 : 0;

	*ram = *ssd = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { key, cache_id, i };

		*ram += ram_tier_contains(cc->ram, &id);
		if (cc->ssd)
			*ssd += ssd_tier_contains(cc->ssd, &id);
	}
}

void chunk_cache_evict(struct chunk_cache *cc, const char *key, const char *cache_id,
		       uint64_t size, unsigned tiers, struct chunk_cache_evicted *ev)
{
	uint64_t n = size ? (size - 1) / cc->chunk_size + 1 : 0;

	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { key, cache_id, i };

		if (tiers & PIN_RAM) {
			switch (ram_tier_evict(cc->ram, &id, &ev->bytes)) {
			case RAM_EVICT_DONE: ev->chunks++; break;
			case RAM_EVICT_PINNED: ev->pinned++; break;
			case RAM_EVICT_BUSY: ev->busy++; break;
			default: break;
			}
		}
		if ((tiers & PIN_SSD) && cc->ssd) {
			switch (ssd_tier_evict(cc->ssd, &id, &ev->bytes)) {
			case SSD_EVICT_DONE: ev->chunks++; break;
			case SSD_EVICT_PINNED: ev->pinned++; break;
			default: break;
			}
		}
	}
}

void chunk_cache_evict_all(struct chunk_cache *cc, unsigned tiers, struct chunk_cache_evicted *ev)
{
	if (tiers & PIN_RAM)
		ram_tier_evict_all(cc->ram, &ev->chunks, &ev->bytes, &ev->pinned);
	if ((tiers & PIN_SSD) && cc->ssd)
		ssd_tier_evict_all(cc->ssd, &ev->chunks, &ev->bytes, &ev->pinned);
}

uint64_t chunk_cache_pin_limit(struct chunk_cache *cc, enum pin_tier tier)
{
	struct tier_stats st;

	if (tier == PIN_RAM) {
		ram_tier_stats(cc->ram, &st);
		return st.capacity / 2;
	}
	return cc->ssd ? ssd_tier_room(cc->ssd) / 10 * 9 : 0;
}

int chunk_cache_pin(struct chunk_cache *cc, const char *const *keys, const uint64_t *sizes,
		    size_t n, enum pin_tier tier, uint64_t *would_be)
{
	int rc;

	*would_be = 0;
	if (tier == PIN_SSD && !cc->ssd)
		return TFS_E_INVAL;
	rc = pin_set_add(cc->pins, keys, sizes, n, tier, chunk_cache_pin_limit(cc, tier), would_be);
	if (rc != TFS_OK && rc != TFS_E_NOMEM)
		return rc;
	/* the set first, then the chunks already present: a chunk inserted
	 * in between asks the set (see ram_tier_set_pinned_fn) */
	for (size_t i = 0; i < n; i++) {
		ram_tier_pin_key(cc->ram, keys[i], tier == PIN_RAM);
		if (cc->ssd)
			ssd_tier_pin_key(cc->ssd, keys[i], tier == PIN_SSD);
	}
	return rc;
}

bool chunk_cache_unpin(struct chunk_cache *cc, const char *key)
{
	enum pin_tier was = pin_set_remove(cc->pins, key);

	if (was == PIN_RAM)
		ram_tier_pin_key(cc->ram, key, false);
	else if (was == PIN_SSD && cc->ssd)
		ssd_tier_pin_key(cc->ssd, key, false);
	return was != PIN_NONE;
}

size_t chunk_cache_unpin_all(struct chunk_cache *cc)
{
	size_t n = pin_set_clear(cc->pins);

	ram_tier_pin_key(cc->ram, NULL, false);
	if (cc->ssd)
		ssd_tier_pin_key(cc->ssd, NULL, false);
	return n;
}

enum pin_tier chunk_cache_pinned(struct chunk_cache *cc, const char *key)
{
	return pin_set_tier(cc->pins, key);
}

/* The file system asks at the first open of a version in a file node's
 * life, and the kernel drops nodes (memory pressure, drop_caches): a
 * loader's every epoch then asked again for each file, and each ask is
 * an index scan in the SSD writer (10-15% of tierfs's CPU in an epoch
 * read from the cache).  A pair reclaimed lately is not asked again; a
 * slot overwritten by another pair only costs a scan, and a reclaim
 * skipped (an object back at an ETag it had) only leaves space to the
 * policy to reclaim, never bytes to be served: reads name their version. */
void chunk_cache_forget_versions(struct chunk_cache *cc, const char *key, const char *keep_etag)
{
	uint64_t h;
	atomic_uint_fast64_t *slot;

	if (!cc->ssd)
		return;
	h = XXH3_64bits_withSeed(key, strlen(key), XXH3_64bits(keep_etag, strlen(keep_etag)));
	h |= 1;    /* 0 is an empty slot */
	slot = &cc->forgot[h % FORGOT_SLOTS];
	if (atomic_load_explicit(slot, memory_order_relaxed) == h)
		return;
	ssd_tier_drop_versions(cc->ssd, key, keep_etag);
	atomic_store_explicit(slot, h, memory_order_relaxed);
}

void chunk_cache_count_served(struct chunk_cache *cc, uint64_t bytes)
{
	atomic_fetch_add_explicit(&cc->served, bytes, memory_order_relaxed);
}

void chunk_cache_stats(struct chunk_cache *cc, struct chunk_cache_stats *out)
{
	ram_tier_stats(cc->ram, &out->ram);
	out->ram.bytes_served = atomic_load(&cc->served);
	out->has_ssd = cc->ssd != NULL;
	if (cc->ssd) {
		ssd_tier_stats(cc->ssd, &out->ssd);
		if (!out->ssd.capacity)     /* unbounded: what it may occupy now */
			out->ssd.capacity = ssd_tier_room(cc->ssd);
	} else
		out->ssd = (struct tier_stats){ 0 };
	out->store_fetches = atomic_load(&cc->store_fetches);
	out->store_bytes = atomic_load(&cc->store_bytes);
	out->store_errors = atomic_load(&cc->store_errors);
	pin_set_totals(cc->pins, &out->pinned_files, &out->pinned_ram, &out->pinned_ssd);
}
