/* chunk_cache.c - RAM -> SSD -> object store, promoting on the way up.
 *
 * The RAM tier's single-flight covers the whole miss: the SSD read and the
 * GET both run inside its fill, so two readers of one cold chunk cause one
 * SSD read or one GET between them.  Admission to SSD is "every chunk the
 * store had to supply" for now: write-behind at fill time (not demotion at
 * RAM eviction) is what makes a killed daemon come back warm.
 */
#include "tiers/chunk_cache.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/tfs_err.h"
#include "tiers/ssd_tier.h"

struct chunk_cache {
	struct ram_tier *ram;
	struct ssd_tier *ssd;
	atomic_uint_fast64_t store_fetches, store_bytes, store_errors, served;
};

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
	if (!cc->ram) {
		free(cc);
		return NULL;
	}
	ram_tier_set_ahead_limit(cc->ram, cfg->ahead_bytes);
	cc->ssd = cfg->ssd;
	return cc;
}

void chunk_cache_free(struct chunk_cache *cc)
{
	if (!cc)
		return;
	if (cc->ssd)
		ssd_tier_flush(cc->ssd);   /* queued writes hold RAM references */
	ram_tier_free(cc->ram);
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

/* A chunk the store supplied goes to the SSD tier too (write-behind). */
static void write_behind(struct chunk_cache *cc, const struct chunk_id *id,
			 const struct chain_fill *c, struct chunk_ref *ref)
{
	if (c->from_store && cc->ssd && chunk_ref_len(ref) > 0) {
		struct chunk_ref *d = chunk_ref_dup(ref);
		(void)ssd_tier_store(cc->ssd, id, chunk_ref_data(d), chunk_ref_len(d),
				     release_ref, d);   /* refused: released, counted */
	}
}

int chunk_cache_get(struct chunk_cache *cc, const struct chunk_id *id, size_t expect_len,
		    ram_tier_fill_fn fetch, void *ctx, struct chunk_ref **out)
{
	struct chain_fill c = { cc, fetch, ctx, expect_len, false };
	int rc = ram_tier_get(cc->ram, id, chain_fill, &c, out);

	if (rc == TFS_OK)
		write_behind(cc, id, &c, *out);
	return rc;
}

int chunk_cache_prefetch(struct chunk_cache *cc, const struct chunk_id *id, size_t expect_len,
			 ram_tier_fill_fn fetch, void *ctx)
{
	struct chain_fill c = { cc, fetch, ctx, expect_len, false };
	struct chunk_ref *ref;
	int rc = ram_tier_prefetch(cc->ram, id, chain_fill, &c, &ref);

	if (rc == TFS_OK) {
		write_behind(cc, id, &c, ref);
		chunk_ref_put(ref);
	}
	return rc;
}

void chunk_cache_forget_versions(struct chunk_cache *cc, const char *key, const char *keep_etag)
{
	if (cc->ssd)
		ssd_tier_drop_versions(cc->ssd, key, keep_etag);
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
	if (cc->ssd)
		ssd_tier_stats(cc->ssd, &out->ssd);
	else
		out->ssd = (struct tier_stats){ 0 };
	out->store_fetches = atomic_load(&cc->store_fetches);
	out->store_bytes = atomic_load(&cc->store_bytes);
	out->store_errors = atomic_load(&cc->store_errors);
}
