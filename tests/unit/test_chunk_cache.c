/* Unit tests for src/tiers/chunk_cache: the RAM -> SSD -> store chain, with
 * a real SSD tier in a temporary directory and a counting fake store. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "fake_objstore.h"
#include "tiers/chunk_cache.h"
#include "tiers/ssd_tier.h"

#define CS (64u * 1024)

struct store {
	atomic_int fetches;
	int fail_rc;
	unsigned seed;
	useconds_t delay;
};

/* The "object store": chunk bytes are fake_byte(seed ^ index, i). */
static int fetch(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct store *s = ctx;

	atomic_fetch_add(&s->fetches, 1);
	if (s->delay)
		usleep(s->delay);
	if (s->fail_rc)
		return s->fail_rc;
	for (size_t i = 0; i < cap; i++)
		((unsigned char *)buf)[i] = fake_byte(s->seed ^ (unsigned)id->index, i);
	*len = cap - (size_t)id->index;    /* distinct lengths */
	return TFS_OK;
}

static bool bytes_ok(const struct store *s, const struct chunk_id *id, const struct chunk_ref *r)
{
	const unsigned char *p = chunk_ref_data(r);

	if (chunk_ref_len(r) != CS - id->index)
		return false;
	for (size_t i = 0; i < chunk_ref_len(r); i++)
		if (p[i] != fake_byte(s->seed ^ (unsigned)id->index, i))
			return false;
	return true;
}

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tierfs-cc-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", dir);
}

TestSuite(chunk_cache, .init = setup, .fini = teardown, .timeout = 60);

static struct ssd_tier *ssd_open(void)
{
	char path[128], err[512];
	struct ssd_tier *t = NULL;
	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config c = { .dir = path, .owner = "test bucket ", .capacity = 0,
				     .min_free_pct = 0, .chunk_size = CS, .queue_max = 8 };
	cr_assert_eq(ssd_tier_open(&c, &t, err, sizeof(err)), TFS_OK, "%s", err);
	return t;
}

static struct chunk_cache *cc_new(struct ssd_tier *ssd, unsigned ram_chunks)
{
	struct chunk_cache_config c = { .ram_bytes = (uint64_t)ram_chunks * CS, .chunk_size = CS,
					.ssd = ssd };
	struct chunk_cache *cc = chunk_cache_new(&c);
	cr_assert_not_null(cc);
	return cc;
}

static void get_ok(struct chunk_cache *cc, struct store *s, const char *etag, uint64_t idx)
{
	struct chunk_id id = { "obj/key", etag, idx };
	struct chunk_ref *r;
	cr_assert_eq(chunk_cache_get(cc, &id, CS - (size_t)idx, fetch, s, &r), TFS_OK);
	cr_assert(bytes_ok(s, &id, r), "chunk %llu: wrong bytes", (unsigned long long)idx);
	chunk_ref_put(r);
}

Test(chunk_cache, ram_only_second_get_is_a_hit)
{
	struct store s = { .seed = 1 };
	struct chunk_cache *cc = cc_new(NULL, 4);
	struct chunk_cache_stats st;

	get_ok(cc, &s, "e1", 0);
	get_ok(cc, &s, "e1", 0);
	cr_assert_eq(s.fetches, 1);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ram.hits, 1);
	cr_assert_eq(st.store_fetches, 1);
	cr_assert_eq(st.store_bytes, CS);
	cr_assert(!st.has_ssd);
	chunk_cache_count_served(cc, 1234);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ram.bytes_served, 1234);
	chunk_cache_free(cc);
}

Test(chunk_cache, ssd_serves_what_ram_evicted_and_what_a_restart_forgot)
{
	struct store s = { .seed = 2 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 2);
	struct chunk_cache_stats st;

	for (uint64_t i = 0; i < 6; i++)
		get_ok(cc, &s, "e1", i);
	ssd_tier_flush(ssd);
	cr_assert_eq(s.fetches, 6);
	/* chunks 0..3 left RAM; they come back from SSD, not the store */
	for (uint64_t i = 0; i < 6; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_eq(s.fetches, 6);
	chunk_cache_stats(cc, &st);
	cr_assert_geq(st.ssd.hits, 4);
	cr_assert_eq(st.ssd.insertions, 6, "a promoted chunk must not be written again");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);

	/* a restart: new RAM, reopened SSD tier, no fetch at all */
	ssd = ssd_open();
	cc = cc_new(ssd, 2);
	for (uint64_t i = 0; i < 6; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_eq(s.fetches, 6);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.hits, 6);
	cr_assert_eq(st.store_fetches, 0);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, failed_fetch_caches_nothing_anywhere)
{
	struct store s = { .seed = 3, .fail_rc = TFS_E_IO };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 2);
	struct chunk_id id = { "obj/key", "e1", 0 };
	struct chunk_ref *r = NULL;
	struct chunk_cache_stats st;

	cr_assert_eq(chunk_cache_get(cc, &id, CS, fetch, &s, &r), TFS_E_IO);
	cr_assert_null(r);
	ssd_tier_flush(ssd);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.entries, 0);
	cr_assert_eq(st.store_errors, 1);
	s.fail_rc = 0;
	get_ok(cc, &s, "e1", 0);
	cr_assert_eq(s.fetches, 2);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, another_etag_is_another_chunk_and_old_versions_are_reclaimed)
{
	struct store s = { .seed = 4 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 1);
	struct chunk_cache_stats st;

	get_ok(cc, &s, "v1", 0);
	get_ok(cc, &s, "v1", 1);
	get_ok(cc, &s, "v2", 0);
	cr_assert_eq(s.fetches, 3);
	ssd_tier_flush(ssd);
	chunk_cache_forget_versions(cc, "obj/key", "v2");
	ssd_tier_flush(ssd);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.entries, 1, "v1's chunks must be gone");
	chunk_cache_free(cc);
	cc = cc_new(ssd, 1);                /* empty RAM: only the SSD tier could serve v1 */
	get_ok(cc, &s, "v2", 0);
	cr_assert_eq(s.fetches, 3);
	get_ok(cc, &s, "v1", 0);
	cr_assert_eq(s.fetches, 4);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* The same (key, ETag) asked again (a loader's file opened again after
 * the kernel dropped its node, every epoch) is not another reclaim: a
 * chunk of another version stored since stays, as evicting space is the
 * policy's job; a new ETag is reclaimed for as before. */
Test(chunk_cache, a_reclaim_asked_again_for_the_same_version_is_skipped)
{
	struct store s = { .seed = 4 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 1);
	struct chunk_cache_stats st;

	get_ok(cc, &s, "v1", 0);
	get_ok(cc, &s, "v2", 0);
	ssd_tier_flush(ssd);
	chunk_cache_forget_versions(cc, "obj/key", "v2");
	ssd_tier_flush(ssd);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.entries, 1);
	get_ok(cc, &s, "v1", 1);           /* another version's chunk, stored again */
	ssd_tier_flush(ssd);
	chunk_cache_forget_versions(cc, "obj/key", "v2");
	ssd_tier_flush(ssd);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.entries, 2, "asked again: no second reclaim");
	chunk_cache_forget_versions(cc, "obj/key", "v3");
	ssd_tier_flush(ssd);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.entries, 0, "a new version: every other one reclaimed");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

struct racer {
	struct chunk_cache *cc;
	struct store *s;
	int rc;
	bool ok;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct chunk_id id = { "obj/key", "e1", 3 };
	struct chunk_ref *ref;

	r->rc = chunk_cache_get(r->cc, &id, CS - 3, fetch, r->s, &ref);
	if (r->rc == TFS_OK) {
		r->ok = bytes_ok(r->s, &id, ref);
		chunk_ref_put(ref);
	}
	return NULL;
}

Test(chunk_cache, thirty_two_concurrent_misses_fetch_once)
{
	struct store s = { .seed = 5, .delay = 50000 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 4);
	struct racer rs[32];
	pthread_t th[32];

	for (int i = 0; i < 32; i++) {
		rs[i] = (struct racer){ cc, &s, -100, false };
		pthread_create(&th[i], NULL, race, &rs[i]);
	}
	for (int i = 0; i < 32; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(rs[i].rc, TFS_OK);
		cr_assert(rs[i].ok);
	}
	cr_assert_eq(s.fetches, 1);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, a_vanished_ssd_tier_is_a_miss_not_an_error)
{
	struct store s = { .seed = 6 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 1);
	char cmd[160];

	for (uint64_t i = 0; i < 4; i++)
		get_ok(cc, &s, "e1", i);
	ssd_tier_flush(ssd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/cache/chunks'", dir);
	cr_assert_eq(system(cmd), 0);
	for (uint64_t i = 0; i < 4; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_geq(s.fetches, 7);        /* 3 left RAM and had to be refetched */
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, an_ssd_copy_of_another_length_is_not_used)
{
	struct store s = { .seed = 7 };
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc = cc_new(ssd, 2);
	struct chunk_id id = { "obj/key", "e1", 0 };
	struct chunk_ref *r;

	get_ok(cc, &s, "e1", 0);
	ssd_tier_flush(ssd);
	chunk_cache_free(cc);
	cc = cc_new(ssd, 2);
	/* same (key, ETag, index), but the opened version says 100 bytes */
	cr_assert_eq(chunk_cache_get(cc, &id, 100, fetch, &s, &r), TFS_OK);
	cr_assert_eq(s.fetches, 2, "the SSD copy of the wrong length was served");
	chunk_ref_put(r);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* ---- the operator's requests: warm, residency, pin, evict ---- */

static struct ssd_tier *ssd_open_cap(uint64_t chunks)
{
	char path[128], err[512];
	struct ssd_tier *t = NULL;
	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config c = { .dir = path, .owner = "test bucket ",
				     .capacity = chunks * (CS + 4096), .min_free_pct = 0,
				     .chunk_size = CS, .queue_max = 8, .policy = EVICT_LRU };
	cr_assert_eq(ssd_tier_open(&c, &t, err, sizeof(err)), TFS_OK, "%s", err);
	return t;
}

/* n chunks of key: read each once (RAM, then SSD write-behind). */
static void read_chunks(struct chunk_cache *cc, struct store *s, const char *key, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct chunk_id id = { key, "e1", i };
		struct chunk_ref *r;
		cr_assert_eq(chunk_cache_get(cc, &id, CS - i, fetch, s, &r), TFS_OK);
		cr_assert(bytes_ok(s, &id, r));
		chunk_ref_put(r);
	}
}

Test(chunk_cache, warm_into_ssd_takes_no_ram_and_later_reads_hit_ssd)
{
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache_config cfg = { .ram_bytes = 4 * CS, .chunk_size = CS, .ssd = ssd };
	struct chunk_cache *cc = chunk_cache_new(&cfg);
	struct store s = { .seed = 7 };
	uint64_t ram, on_ssd;
	bool fetched;

	for (unsigned i = 0; i < 3; i++) {
		struct chunk_id id = { "w", "e1", i };
		cr_assert_eq(chunk_cache_warm(cc, &id, CS - i, PIN_SSD, fetch, &s, &fetched), TFS_OK);
		cr_expect(fetched);
	}
	ssd_tier_flush(ssd);
	/* the object is 3 chunks: CS, CS-1, CS-2 bytes */
	chunk_cache_residency(cc, "w", "e1", 3 * CS - 3, &ram, &on_ssd);
	cr_expect_eq(ram, 0, "warm --tier ssd filled RAM");
	cr_expect_eq(on_ssd, 3 * CS - 3);
	/* warming again fetches nothing */
	struct chunk_id id0 = { "w", "e1", 0 };
	cr_assert_eq(chunk_cache_warm(cc, &id0, CS, PIN_SSD, fetch, &s, &fetched), TFS_OK);
	cr_expect(!fetched);
	cr_expect_eq(s.fetches, 3);
	read_chunks(cc, &s, "w", 3);
	cr_expect_eq(s.fetches, 3, "reads after a warm-up went to the store");
	chunk_cache_residency(cc, "w", "e1", 3 * CS - 3, &ram, &on_ssd);
	cr_expect_eq(ram, 3 * CS - 3);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, pinned_file_stays_on_a_full_ssd_until_unpinned)
{
	struct ssd_tier *ssd = ssd_open_cap(6);
	struct chunk_cache_config cfg = { .ram_bytes = 2 * CS, .chunk_size = CS, .ssd = ssd };
	struct chunk_cache *cc = chunk_cache_new(&cfg);
	struct store s = { .seed = 9 };
	const char *keys[] = { "pinned" };
	uint64_t sizes[] = { 2 * CS - 1 }, would, ram, on_ssd;
	char other[16];

	cr_assert_eq(chunk_cache_pin(cc, keys, sizes, 1, PIN_SSD, &would), TFS_OK);
	cr_expect_eq(would, 2 * CS - 1);
	read_chunks(cc, &s, "pinned", 2);
	for (int k = 0; k < 5; k++) {    /* 20 chunks through a 6-chunk tier */
		snprintf(other, sizeof(other), "o%d", k);
		read_chunks(cc, &s, other, 4);
		ssd_tier_flush(ssd);
	}
	chunk_cache_residency(cc, "pinned", "e1", 2 * CS - 1, &ram, &on_ssd);
	cr_expect_eq(on_ssd, 2 * CS - 1, "a pinned chunk left the SSD tier");
	cr_expect_eq(chunk_cache_pinned(cc, "pinned"), PIN_SSD);
	/* evicting it on request is refused too */
	struct chunk_cache_evicted ev = { 0 };
	chunk_cache_evict(cc, "pinned", "e1", 2 * CS - 1, PIN_SSD, &ev);
	cr_expect_eq(ev.chunks, 0);
	cr_expect_eq(ev.pinned, 2);
	/* unpinned: ordinary again, pressure evicts it */
	cr_assert(chunk_cache_unpin(cc, "pinned"));
	cr_expect(!chunk_cache_unpin(cc, "pinned"));
	for (int k = 5; k < 8; k++) {
		snprintf(other, sizeof(other), "o%d", k);
		read_chunks(cc, &s, other, 4);
		ssd_tier_flush(ssd);
	}
	chunk_cache_residency(cc, "pinned", "e1", 2 * CS - 1, &ram, &on_ssd);
	cr_expect_eq(on_ssd, 0, "unpinned chunks never evicted");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, pinning_more_than_fits_is_refused_whole)
{
	struct chunk_cache_config cfg = { .ram_bytes = 8 * CS, .chunk_size = CS };
	struct chunk_cache *cc = chunk_cache_new(&cfg);
	const char *keys[] = { "a", "b", "c" };
	uint64_t sizes[] = { 2 * CS, 2 * CS, 1 }, would;
	struct chunk_cache_stats st;

	cr_expect_eq(chunk_cache_pin_limit(cc, PIN_RAM), 4 * CS);
	cr_assert_eq(chunk_cache_pin(cc, keys, sizes, 3, PIN_RAM, &would), TFS_E_NOSPC);
	cr_expect_eq(would, 4 * CS + 1);
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.pinned_files, 0, "a refused batch pinned something");
	cr_expect_eq(chunk_cache_pinned(cc, "a"), PIN_NONE);
	cr_assert_eq(chunk_cache_pin(cc, keys, sizes, 2, PIN_RAM, &would), TFS_OK);
	cr_assert_eq(chunk_cache_pin(cc, keys, sizes, 2, PIN_RAM, &would), TFS_OK,
		     "pinning the same files again counts them once");
	cr_expect_eq(would, 4 * CS);
	cr_assert_eq(chunk_cache_pin(cc, keys + 2, sizes + 2, 1, PIN_SSD, &would), TFS_E_INVAL,
		     "no SSD tier");
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.pinned_files, 2);
	cr_expect_eq(st.pinned_ram, 4 * CS);
	cr_expect_eq(chunk_cache_unpin_all(cc), 2);
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.pinned_ram, 0);
	chunk_cache_free(cc);
}

Test(chunk_cache, evict_drops_a_version_from_both_tiers_and_all)
{
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache_config cfg = { .ram_bytes = 8 * CS, .chunk_size = CS, .ssd = ssd };
	struct chunk_cache *cc = chunk_cache_new(&cfg);
	struct store s = { .seed = 3 };
	struct chunk_cache_evicted ev = { 0 };
	uint64_t ram, on_ssd;

	read_chunks(cc, &s, "x", 2);
	read_chunks(cc, &s, "y", 2);
	ssd_tier_flush(ssd);
	chunk_cache_evict(cc, "x", "e1", 2 * CS - 1, PIN_RAM | PIN_SSD, &ev);
	cr_expect_eq(ev.chunks, 4, "2 chunks in each tier");
	cr_expect_eq(ev.bytes, 2 * (2 * CS - 1));
	chunk_cache_residency(cc, "x", "e1", 2 * CS - 1, &ram, &on_ssd);
	cr_expect_eq(ram + on_ssd, 0);
	read_chunks(cc, &s, "x", 2);
	cr_expect_eq(s.fetches, 6, "evicted chunks came from the store again");
	memset(&ev, 0, sizeof(ev));
	ssd_tier_flush(ssd);
	chunk_cache_evict_all(cc, PIN_RAM, &ev);
	cr_expect_eq(ev.chunks, 4);
	chunk_cache_residency(cc, "y", "e1", 2 * CS - 1, &ram, &on_ssd);
	cr_expect_eq(ram, 0);
	cr_expect_eq(on_ssd, 2 * CS - 1, "--tier ram left SSD alone");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}
