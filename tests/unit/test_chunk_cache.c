/* Unit tests for src/tiers/chunk_cache: the RAM -> SSD -> store chain, with
 * a real SSD tier in a temporary directory and a counting fake store. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "fake_objstore.h"
#include "ssd_gate.h"
#include "tiers/chunk_cache.h"
#include "tiers/ssd_tier.h"
#include "tiers/store_fetch.h"
#include "tmpdir.h"

#define CS (64u * 1024)

/* The "object store": every object's byte at offset off is
 * fake_byte(seed ^ etag[1], off), so two versions differ; GETs are
 * counted, can be made slow or failing. */
struct store {
	struct objstore base;        /* first member */
	atomic_int fetches;
	int fail_rc;
	unsigned seed;
	useconds_t delay;
};

static unsigned version_seed(const struct store *s, const char *etag)
{
	return s->seed ^ (unsigned char)(etag[0] ? etag[1] : 0);
}

static int store_get_range(struct objstore *os, const char *key, const char *if_match,
			   uint64_t off, size_t len, void *buf, size_t *got,
			   struct tfs_errinfo *ei)
{
	struct store *s = (struct store *)os;

	atomic_fetch_add(&s->fetches, 1);
	if (s->delay)
		usleep(s->delay);
	if (s->fail_rc)
		return s->fail_rc;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = fake_byte(version_seed(s, if_match ? if_match : ""),
						      off + i);
	*got = len;
	return TFS_OK;
}

/* the cache never lists nor HEADs */
static const struct objstore_ops store_ops = { .get_range = store_get_range };

static void store_init(struct store *s, unsigned seed)
{
	memset(s, 0, sizeof(*s));
	s->base.ops = &store_ops;
	s->seed = seed;
}

/* Object "obj/key" at version etag, of size bytes. */
static struct chunk_obj obj(const char *key, const char *etag, uint64_t size)
{
	return (struct chunk_obj){ key, etag, etag, size };
}

static bool bytes_ok(const struct store *s, const struct chunk_obj *o, uint64_t idx,
		     const struct chunk_ref *r)
{
	const unsigned char *p = chunk_ref_data(r);
	uint64_t start = idx * CS;
	size_t want = (size_t)(o->size - start < CS ? o->size - start : CS);

	if (chunk_ref_len(r) != want)
		return false;
	for (size_t i = 0; i < want; i++)
		if (p[i] != fake_byte(version_seed(s, o->etag), start + i))
			return false;
	return true;
}

static char dir[64];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "cc");
}

static void teardown(void)
{
	tmpdir_remove(dir);
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

static struct chunk_cache *cc_new_cfg(struct store *s, struct ssd_tier *ssd, uint64_t ram_bytes)
{
	struct chunk_cache_config c = { .store = &s->base, .parallel_gets = 1,
					.ram_bytes = ram_bytes, .chunk_size = CS, .ssd = ssd };
	struct chunk_cache *cc = chunk_cache_new(&c);
	cr_assert_not_null(cc);
	return cc;
}

static struct chunk_cache *cc_new(struct store *s, struct ssd_tier *ssd, unsigned ram_chunks)
{
	return cc_new_cfg(s, ssd, (uint64_t)ram_chunks * CS);
}

/* The object get_ok() reads: 8 chunks, the last 3 bytes short. */
#define OBJ_SIZE (8 * CS - 3)

static void get_ok(struct chunk_cache *cc, struct store *s, const char *etag, uint64_t idx)
{
	struct chunk_obj o = obj("obj/key", etag, OBJ_SIZE);
	struct chunk_ref *r;

	cr_assert_eq(chunk_cache_get(cc, &o, idx, &r), TFS_OK);
	cr_assert(bytes_ok(s, &o, idx, r), "chunk %llu: wrong bytes", (unsigned long long)idx);
	chunk_ref_put(r);
}

Test(chunk_cache, ram_only_second_get_is_a_hit)
{
	struct store s;
	struct chunk_cache *cc;

	store_init(&s, 1);
	cc = cc_new(&s, NULL, 4);
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
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct chunk_cache_stats st;

	store_init(&s, 2);
	cc = cc_new(&s, ssd, 2);
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
	cc = cc_new(&s, ssd, 2);
	for (uint64_t i = 0; i < 6; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_eq(s.fetches, 6);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.hits, 6);
	cr_assert_eq(st.store_fetches, 0);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* A reader's chunk that finds the SSD writer too far behind (its queue
 * and its copies full) is kept in RAM as unsaved and offered again: at
 * its next hit, or when RAM evicts it.  Either way its next read after
 * RAM let it go is an SSD hit, not a GET. */
Test(chunk_cache, a_chunk_the_writer_could_not_take_is_offered_again)
{
	char path[128], err[512];
	struct ssd_tier *ssd = NULL;
	struct store s;
	struct chunk_cache *cc;
	struct chunk_cache_stats st;
	struct chunk_id c1 = { "obj/key", "e1", 1 }, c2 = { "obj/key", "e1", 2 };

	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config c = { .dir = path, .owner = "test bucket ", .chunk_size = CS,
				     .queue_max = 1, .spill_max = CS };
	cr_assert_eq(ssd_tier_open(&c, &ssd, err, sizeof(err)), TFS_OK, "%s", err);
	store_init(&s, 5);
	cc = cc_new(&s, ssd, 4);

	/* the writer held: the queue (the gate) and the copies (chunk 0)
	 * are full, so chunks 1 and 2 are refused */
	ssd_gate_close(ssd, free);
	for (uint64_t i = 0; i < 3; i++)
		get_ok(cc, &s, "e1", i);
	ssd_gate_open();
	ssd_tier_flush(ssd);
	cr_assert_eq(ssd_tier_contains(ssd, &c1), 0);
	cr_assert_eq(ssd_tier_contains(ssd, &c2), 0);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.dropped, 2);

	/* chunk 1 is read again while in RAM: offered at that hit */
	get_ok(cc, &s, "e1", 1);
	ssd_tier_flush(ssd);
	cr_assert_eq(ssd_tier_contains(ssd, &c1), CS, "not offered again at its hit");

	/* chunk 2 is not: five more chunks through four chunks of RAM
	 * evict it, and it is offered then (the writer keeping up now: each
	 * read's chunk is written before the next read) */
	for (uint64_t i = 3; i < 8; i++) {
		get_ok(cc, &s, "e1", i);
		ssd_tier_flush(ssd);
	}
	cr_assert_eq(ssd_tier_contains(ssd, &c2), CS, "not offered again when evicted");
	cr_assert_eq(s.fetches, 8);

	/* every chunk once more: from RAM or SSD, none from the store */
	for (uint64_t i = 0; i < 8; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_eq(s.fetches, 8);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.ssd.dropped, 2, "a second offer is not another drop");
	cr_assert_eq(st.ssd.resaved, 2);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, failed_fetch_caches_nothing_anywhere)
{
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct chunk_obj o = obj("obj/key", "e1", OBJ_SIZE);
	struct chunk_ref *r = NULL;
	struct chunk_cache_stats st;

	store_init(&s, 3);
	s.fail_rc = TFS_E_IO;
	cc = cc_new(&s, ssd, 2);
	cr_assert_eq(chunk_cache_get(cc, &o, 0, &r), TFS_E_IO);
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
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct chunk_cache_stats st;

	store_init(&s, 4);
	cc = cc_new(&s, ssd, 1);
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
	cc = cc_new(&s, ssd, 1);            /* empty RAM: only the SSD tier could serve v1 */
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
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct chunk_cache_stats st;

	store_init(&s, 4);
	cc = cc_new(&s, ssd, 1);
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
	struct chunk_obj o = obj("obj/key", "e1", OBJ_SIZE);
	struct chunk_ref *ref;

	r->rc = chunk_cache_get(r->cc, &o, 3, &ref);
	if (r->rc == TFS_OK) {
		r->ok = bytes_ok(r->s, &o, 3, ref);
		chunk_ref_put(ref);
	}
	return NULL;
}

Test(chunk_cache, thirty_two_concurrent_misses_fetch_once)
{
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct racer rs[32];
	pthread_t th[32];

	store_init(&s, 5);
	s.delay = 50000;
	cc = cc_new(&s, ssd, 4);
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
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	char cmd[160];

	store_init(&s, 6);
	cc = cc_new(&s, ssd, 1);
	for (uint64_t i = 0; i < 4; i++)
		get_ok(cc, &s, "e1", i);
	ssd_tier_flush(ssd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/cache/objects'", dir);
	cr_assert_eq(system(cmd), 0);
	for (uint64_t i = 0; i < 4; i++)
		get_ok(cc, &s, "e1", i);
	cr_assert_geq(s.fetches, 7);        /* 3 left RAM and had to be refetched */
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, an_ssd_copy_of_another_length_is_not_used)
{
	struct store s;
	struct ssd_tier *ssd = ssd_open();
	struct chunk_cache *cc;
	struct chunk_obj shorter = obj("obj/key", "e1", 100);
	struct chunk_ref *r;

	store_init(&s, 7);
	cc = cc_new(&s, ssd, 2);
	get_ok(cc, &s, "e1", 0);
	ssd_tier_flush(ssd);
	/* same (key, ETag, index), but the version opened says 100 bytes: a
	 * RAM chunk of another length is refused, an SSD copy fetched again */
	cr_assert_eq(chunk_cache_get(cc, &shorter, 0, &r), TFS_E_STALE);
	chunk_cache_free(cc);
	cc = cc_new(&s, ssd, 2);
	cr_assert_eq(chunk_cache_get(cc, &shorter, 0, &r), TFS_OK);
	cr_assert_eq(s.fetches, 2, "the SSD copy of the wrong length was served");
	cr_assert(bytes_ok(&s, &shorter, 0, r));
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

/* The n-chunk object key ("e1", its last chunk 1 byte short). */
static struct chunk_obj obj_n(const char *key, unsigned n)
{
	return obj(key, "e1", (uint64_t)n * CS - 1);
}

/* Every chunk of the n-chunk object key: read each once (RAM, then SSD
 * write-behind). */
static void read_chunks(struct chunk_cache *cc, struct store *s, const char *key, unsigned n)
{
	struct chunk_obj o = obj_n(key, n);

	for (unsigned i = 0; i < n; i++) {
		struct chunk_ref *r;
		cr_assert_eq(chunk_cache_get(cc, &o, i, &r), TFS_OK);
		cr_assert(bytes_ok(s, &o, i, r));
		chunk_ref_put(r);
	}
}

Test(chunk_cache, warm_into_ssd_takes_no_ram_and_later_reads_hit_ssd)
{
	struct ssd_tier *ssd = ssd_open();
	struct store s;
	struct chunk_cache *cc;
	struct chunk_obj w = obj_n("w", 3);
	uint64_t ram, on_ssd;
	bool fetched;

	store_init(&s, 7);
	cc = cc_new(&s, ssd, 4);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(chunk_cache_warm(cc, &w, i, PIN_SSD, &fetched), TFS_OK);
		cr_expect(fetched);
	}
	ssd_tier_flush(ssd);
	chunk_cache_residency(cc, &w, &ram, &on_ssd);
	cr_expect_eq(ram, 0, "warm --tier ssd filled RAM");
	cr_expect_eq(on_ssd, w.size);
	/* warming again fetches nothing */
	cr_assert_eq(chunk_cache_warm(cc, &w, 0, PIN_SSD, &fetched), TFS_OK);
	cr_expect(!fetched);
	cr_expect_eq(s.fetches, 3);
	read_chunks(cc, &s, "w", 3);
	cr_expect_eq(s.fetches, 3, "reads after a warm-up went to the store");
	chunk_cache_residency(cc, &w, &ram, &on_ssd);
	cr_expect_eq(ram, w.size);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, pinned_file_stays_on_a_full_ssd_until_unpinned)
{
	struct ssd_tier *ssd = ssd_open_cap(6);
	struct store s;
	struct chunk_cache *cc;
	struct chunk_obj pinned = obj_n("pinned", 2);
	const char *keys[] = { "pinned" };
	uint64_t sizes[] = { 2 * CS - 1 }, would, ram, on_ssd;
	char other[16];

	store_init(&s, 9);
	cc = cc_new(&s, ssd, 2);
	cr_assert_eq(chunk_cache_pin(cc, keys, sizes, 1, PIN_SSD, &would), TFS_OK);
	cr_expect_eq(would, 2 * CS - 1);
	read_chunks(cc, &s, "pinned", 2);
	for (int k = 0; k < 5; k++) {    /* 20 chunks through a 6-chunk tier */
		snprintf(other, sizeof(other), "o%d", k);
		read_chunks(cc, &s, other, 4);
		ssd_tier_flush(ssd);
	}
	chunk_cache_residency(cc, &pinned, &ram, &on_ssd);
	cr_expect_eq(on_ssd, 2 * CS - 1, "a pinned chunk left the SSD tier");
	cr_expect_eq(chunk_cache_pinned(cc, "pinned"), PIN_SSD);
	/* evicting it on request is refused too */
	struct chunk_cache_evicted ev = { 0 };
	chunk_cache_evict(cc, &pinned, PIN_SSD, &ev);
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
	chunk_cache_residency(cc, &pinned, &ram, &on_ssd);
	cr_expect_eq(on_ssd, 0, "unpinned chunks never evicted");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

Test(chunk_cache, pinning_more_than_fits_is_refused_whole)
{
	struct store s;
	struct chunk_cache *cc;
	const char *keys[] = { "a", "b", "c" };
	uint64_t sizes[] = { 2 * CS, 2 * CS, 1 }, would;
	struct chunk_cache_stats st;

	store_init(&s, 1);
	cc = cc_new(&s, NULL, 8);
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
	struct store s;
	struct chunk_cache *cc;
	struct chunk_obj x = obj_n("x", 2), y = obj_n("y", 2);
	struct chunk_cache_evicted ev = { 0 };
	uint64_t ram, on_ssd;

	store_init(&s, 3);
	cc = cc_new(&s, ssd, 8);
	read_chunks(cc, &s, "x", 2);
	read_chunks(cc, &s, "y", 2);
	ssd_tier_flush(ssd);
	chunk_cache_evict(cc, &x, PIN_RAM | PIN_SSD, &ev);
	cr_expect_eq(ev.chunks, 4, "2 chunks in each tier");
	cr_expect_eq(ev.bytes, 2 * (2 * CS - 1));
	chunk_cache_residency(cc, &x, &ram, &on_ssd);
	cr_expect_eq(ram + on_ssd, 0);
	read_chunks(cc, &s, "x", 2);
	cr_expect_eq(s.fetches, 6, "evicted chunks came from the store again");
	memset(&ev, 0, sizeof(ev));
	ssd_tier_flush(ssd);
	chunk_cache_evict_all(cc, PIN_RAM, &ev);
	cr_expect_eq(ev.chunks, 4);
	chunk_cache_residency(cc, &y, &ram, &on_ssd);
	cr_expect_eq(ram, 0);
	cr_expect_eq(on_ssd, 2 * CS - 1, "--tier ram left SSD alone");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* The one object file under dir/cache/objects/XX/, into out. */
static void object_file(char *out, size_t n)
{
	char top[128];
	DIR *d;
	struct dirent *de;

	out[0] = '\0';
	snprintf(top, sizeof(top), "%s/cache/objects", dir);
	d = opendir(top);
	cr_assert_not_null(d);
	while ((de = readdir(d)) && !out[0]) {
		char sub[512];
		DIR *sd;
		struct dirent *fe;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", top, de->d_name);
		sd = opendir(sub);
		while (sd && (fe = readdir(sd)))
			if (fe->d_name[0] != '.')
				snprintf(out, n, "%s/%s", sub, fe->d_name);
		if (sd)
			closedir(sd);
	}
	closedir(d);
	cr_assert_neq(out[0], '\0', "no object file");
}

/* Bytes [off, off + len) of chunk idx of o (chunks of cs bytes), read
 * with chunk_cache_read() as a reader that is random or not: the right
 * bytes; returns whether they came from a RAM chunk (else from a span of
 * the read's own: SSD blocks, or a random reader's blocks). */
static bool read_checked(struct chunk_cache *cc, const struct store *s,
			 const struct chunk_obj *o, size_t cs, uint64_t idx, size_t off, size_t len,
			 bool random)
{
	struct chunk_ref *ref;
	void *span;
	const unsigned char *p;
	bool from_ram;

	cr_assert_eq(chunk_cache_read(cc, o, idx, off, len,
				      (random ? CHUNK_READ_RANDOM : 0) | CHUNK_READ_VISIT, &ref, &span,
				      (const void **)&p), TFS_OK);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], fake_byte(version_seed(s, o->etag), idx * cs + off + i),
			     "chunk %llu: wrong byte at %zu", (unsigned long long)idx, off + i);
	from_ram = ref != NULL;
	if (ref)
		chunk_ref_put(ref);
	free(span);
	return from_ram;
}

/* bytes [off, off + len) of chunk idx of o, read with chunk_cache_read():
 * right, and from SSD's blocks (no RAM reference) when from_ssd */
static void range_ok(struct chunk_cache *cc, struct store *s, const struct chunk_obj *o,
		     size_t cs, uint64_t idx, size_t off, size_t len, bool from_ssd)
{
	bool from_ram = read_checked(cc, s, o, cs, idx, off, len, false);

	cr_expect_eq(!from_ram, from_ssd, "chunk %llu at %zu: %s", (unsigned long long)idx,
		     off, from_ssd ? "not read from SSD" : "read from SSD");
}

/* A read of a few bytes of a chunk on SSD reads and checks only the
 * blocks that cover them, and the chunk stays out of RAM; a block the
 * disk changed is a miss (counted, fetched again), and the blocks of
 * other chunks still hit. */
Test(chunk_cache, ssd_reads_only_the_blocks_asked_for_and_a_bad_block_is_a_miss)
{
	const size_t cs = 8 * SSD_BLOCK;
	char path[128], err[512], file[1024];
	struct ssd_tier *ssd = NULL;
	struct chunk_cache *cc;
	struct chunk_cache_stats st;
	struct store s;
	struct chunk_obj o = obj("obj/blocks", "e1", 2 * cs);
	struct chunk_ref *r;

	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config c = { .dir = path, .owner = "test bucket ", .min_free_pct = 0,
				     .chunk_size = cs, .queue_max = 8 };
	cr_assert_eq(ssd_tier_open(&c, &ssd, err, sizeof(err)), TFS_OK, "%s", err);
	store_init(&s, 5);
	struct chunk_cache_config ccfg = { .store = &s.base, .parallel_gets = 1,
					   .ram_bytes = 2 * cs, .chunk_size = cs, .ssd = ssd };
	cc = chunk_cache_new(&ccfg);
	cr_assert_not_null(cc);
	for (uint64_t i = 0; i < 2; i++) {
		cr_assert_eq(chunk_cache_get(cc, &o, i, &r), TFS_OK);
		chunk_ref_put(r);
	}
	ssd_tier_flush(ssd);
	chunk_cache_free(cc);
	cc = chunk_cache_new(&ccfg);   /* an empty RAM tier */
	cr_assert_not_null(cc);

	range_ok(cc, &s, &o, cs, 0, 3 * SSD_BLOCK + 10, 100, true);
	range_ok(cc, &s, &o, cs, 1, SSD_BLOCK - 50, 100, true);   /* two blocks */
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.ssd.hits, 2);
	cr_expect_eq(st.ssd.bytes_served, 200, "bytes served from SSD");
	cr_expect_eq(st.ram.entries, 0, "a chunk read from SSD was copied into RAM");
	cr_expect_eq(s.fetches, 2);

	/* the disk changes a byte of chunk 0's block 5 */
	object_file(file, sizeof(file));
	int fd = open(file, O_RDWR);
	cr_assert_geq(fd, 0);
	unsigned char b;
	cr_assert_eq(pread(fd, &b, 1, 5 * SSD_BLOCK + 7), 1);
	b ^= 0x40;
	cr_assert_eq(pwrite(fd, &b, 1, 5 * SSD_BLOCK + 7), 1);
	close(fd);

	range_ok(cc, &s, &o, cs, 0, 2 * SSD_BLOCK, SSD_BLOCK, true);   /* another block: a hit */
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.ssd.checksum_failures, 0);
	range_ok(cc, &s, &o, cs, 0, 5 * SSD_BLOCK, 4096, false);   /* the bad one: fetched */
	chunk_cache_stats(cc, &st);
	cr_expect_eq(st.ssd.checksum_failures, 1);
	cr_expect_eq(s.fetches, 3, "only the chunk with the bad block is fetched again");
	range_ok(cc, &s, &o, cs, 1, 6 * SSD_BLOCK, SSD_BLOCK, true);   /* the other chunk hits */
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* One access of the SSD tier's policy per chunk read, however the chunk
 * came: a chunk fetched ahead and then read counts as one read on a miss
 * does.  Without that, W-TinyLFU saw it as never asked for, and the next
 * chunk asked for twice won the duel against it: with a dataset larger
 * than the cache, the chunks read ahead were the ones evicted unread from
 * one epoch to the next.  An SSD tier of two chunks, W-TinyLFU (its window
 * holds no chunk, so every insertion is a duel): X fetched ahead and read,
 * then A read; C asked for twice must not displace X (its victim, the
 * older), each of them asked for once before. */
Test(chunk_cache, a_chunk_fetched_ahead_and_read_counts_as_read)
{
	char path[128], err[512];
	struct ssd_tier *ssd = NULL;
	struct store s;
	struct chunk_cache *cc;
	struct chunk_obj x = obj_n("x", 1), a = obj_n("a", 1), c = obj_n("c", 1);
	struct chunk_cache_evicted ev = { 0 };
	uint64_t ram, on_ssd;

	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config cfg = { .dir = path, .owner = "test bucket ",
				       .capacity = 2 * (CS + 4096), .min_free_pct = 0,
				       .chunk_size = CS, .queue_max = 8, .policy = EVICT_TINYLFU };
	cr_assert_eq(ssd_tier_open(&cfg, &ssd, err, sizeof(err)), TFS_OK, "%s", err);
	store_init(&s, 11);
	cc = cc_new(&s, ssd, 4);

	cr_assert_eq(chunk_cache_prefetch(cc, &x, 0, false, false, NULL, NULL), TFS_OK);
	chunk_cache_flush(cc);
	read_chunks(cc, &s, "x", 1);     /* a RAM hit: the read ahead consumed */
	read_chunks(cc, &s, "a", 1);     /* a miss */
	chunk_cache_flush(cc);
	chunk_cache_residency(cc, &x, &ram, &on_ssd);
	cr_assert_eq(on_ssd, x.size, "x was not stored");
	chunk_cache_residency(cc, &a, &ram, &on_ssd);
	cr_assert_eq(on_ssd, a.size, "a was not stored");

	for (int i = 0; i < 2; i++) {   /* c: asked for twice, evicted from RAM between */
		read_chunks(cc, &s, "c", 1);
		chunk_cache_flush(cc);
		chunk_cache_evict(cc, &c, PIN_RAM, &ev);
	}
	chunk_cache_residency(cc, &x, &ram, &on_ssd);
	cr_expect_eq(on_ssd, x.size, "x, read once, lost its place to c, read twice: "
		     "its read was not counted");
	chunk_cache_residency(cc, &a, &ram, &on_ssd);
	cr_expect_eq(on_ssd, a.size, "a, read once, lost its place to c");
	cr_expect_eq(s.fetches, 4, "x, a and c twice");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* Read [off, off + len) of chunk 0 of o as a reader would; the bytes
 * must be the store's. */
static void read_piece(struct chunk_cache *cc, struct store *s, const struct chunk_obj *o,
		       size_t off, size_t len, unsigned how)
{
	struct chunk_ref *r = NULL;
	const void *data;
	void *span = NULL;

	cr_assert_eq(chunk_cache_read(cc, o, 0, off, len, how, &r, &span, &data), TFS_OK);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(((const unsigned char *)data)[i],
			     fake_byte(version_seed(s, o->etag), off + i),
			     "byte %zu of the piece at %zu", i, off);
	if (r)
		chunk_ref_put(r);
	free(span);
}

/* A reader's pass over chunk 0 of o in four pieces, the first its
 * visit's, in the order the kernel may send them. */
static void read_visit(struct chunk_cache *cc, struct store *s, const struct chunk_obj *o)
{
	static const size_t order[] = { 1, 0, 3, 2 };

	for (size_t i = 0; i < 4; i++)
		read_piece(cc, s, o, order[i] * (CS / 4), CS / 4, i == 0 ? CHUNK_READ_VISIT : 0);
}

/* The SSD tier's policy counts one access per visit of a chunk, whichever
 * tier serves it: a pass in pieces is one, from the store, from RAM or
 * from SSD, for a random reader too.  Counted reads, not visits, made a
 * chunk read in eight pieces from SSD eight times as hot as one RAM
 * served, and one RAM served never hotter than its first fetch: a dataset
 * larger than the cache churned. */
Test(chunk_cache, the_ssd_policy_counts_each_visit_once_wherever_it_is_served)
{
	char path[128], err[512];
	struct ssd_tier *ssd = NULL;
	struct store s;
	struct chunk_cache *cc;
	struct chunk_obj x = obj_n("x", 2);
	struct chunk_id id = { x.key, x.cache_id, 0 };
	struct chunk_cache_evicted ev = { 0 };

	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config cfg = { .dir = path, .owner = "test bucket ", .capacity = 0,
				       .min_free_pct = 0, .chunk_size = CS, .queue_max = 8,
				       .policy = EVICT_TINYLFU };
	cr_assert_eq(ssd_tier_open(&cfg, &ssd, err, sizeof(err)), TFS_OK, "%s", err);
	store_init(&s, 13);
	cc = cc_new(&s, ssd, 4);

	read_visit(cc, &s, &x);   /* a miss, then RAM */
	chunk_cache_flush(cc);
	cr_assert_eq(ssd_tier_contains(ssd, &id), CS, "the chunk was not stored");
	cr_expect_eq(ssd_tier_policy_count(ssd, &id), 1, "a fetch and its pieces");
	read_visit(cc, &s, &x);   /* all from RAM */
	cr_expect_eq(ssd_tier_policy_count(ssd, &id), 2, "a visit RAM served");
	chunk_cache_evict(cc, &x, PIN_RAM, &ev);
	read_visit(cc, &s, &x);   /* all from SSD */
	cr_expect_eq(ssd_tier_policy_count(ssd, &id), 3, "a visit SSD served");
	read_piece(cc, &s, &x, CS / 2, 4096, 0);   /* a later piece of it */
	cr_expect_eq(ssd_tier_policy_count(ssd, &id), 3, "a later piece counted");
	read_piece(cc, &s, &x, CS / 2, 4096, CHUNK_READ_RANDOM | CHUNK_READ_VISIT);
	read_piece(cc, &s, &x, 100, 4096, CHUNK_READ_RANDOM);
	cr_expect_eq(ssd_tier_policy_count(ssd, &id), 4, "a random reader's visit");
	cr_expect_eq(s.fetches, 1);
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* A chunk somebody waits for comes in parts (--parallel-gets), each at
 * least STORE_FETCH_PART_MIN, and so does a fetch ahead whose reader is
 * near; any other chunk fetched ahead comes in one GET; all hold the
 * object's bytes. */
Test(chunk_cache, a_reader_waits_for_parts_a_fetch_ahead_is_one_get)
{
	const size_t big = 4 * STORE_FETCH_PART_MIN;
	struct chunk_cache_config c = { .store = NULL, .parallel_gets = 4,
					.ram_bytes = 5 * big, .chunk_size = big };
	struct chunk_obj o = obj("obj/parts", "\"v1\"", 4 * big);
	struct chunk_cache *cc;
	struct chunk_ref *r;
	struct store s;

	store_init(&s, 5);
	c.store = &s.base;
	cc = chunk_cache_new(&c);
	cr_assert_not_null(cc);
	cr_assert_eq(chunk_cache_prefetch(cc, &o, 1, false, false, NULL, NULL), TFS_OK);
	cr_expect_eq(s.fetches, 1, "a fetch ahead of %zu bytes took %d GETs", big,
		     (int)s.fetches);
	cr_assert_eq(chunk_cache_prefetch(cc, &o, 3, false, true, NULL, NULL), TFS_OK);
	cr_expect_eq(s.fetches, 1 + 4, "a fetch ahead with its reader near took %d GETs in all",
		     (int)s.fetches - 1);
	for (uint64_t i = 0; i < 4; i++) {
		const unsigned char *p;

		cr_assert_eq(chunk_cache_get(cc, &o, i, &r), TFS_OK);
		cr_assert_eq(chunk_ref_len(r), big);
		p = chunk_ref_data(r);
		for (size_t k = 0; k < big; k += 4093)
			cr_assert_eq(p[k], fake_byte(version_seed(&s, o.etag), i * big + k),
				     "chunk %llu, byte %zu", (unsigned long long)i, k);
		chunk_ref_put(r);
	}
	cr_expect_eq(s.fetches, 1 + 4 + 4 + 4, "the reader's two misses in 4 parts each, "
		     "the chunks fetched ahead hits: %d GETs", (int)s.fetches);
	chunk_cache_free(cc);
}

/* An operator's warm is waited for: its chunk comes in parts, into RAM
 * or straight to SSD, and holds the object's bytes. */
Test(chunk_cache, a_warm_is_waited_for_and_comes_in_parts)
{
	const size_t big = 4 * STORE_FETCH_PART_MIN;
	struct chunk_cache_config c = { .store = NULL, .parallel_gets = 4,
					.ram_bytes = 5 * big, .chunk_size = big };
	struct chunk_obj o = obj("obj/warm", "\"v1\"", 2 * big);
	char path[128], err[512];
	struct ssd_tier *ssd = NULL;
	struct chunk_cache *cc;
	struct store s;
	bool fetched;
	int before;

	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config cfg = { .dir = path, .owner = "test bucket ",
				       .capacity = 4 * big, .chunk_size = big, .queue_max = 8,
				       .policy = EVICT_TINYLFU };
	cr_assert_eq(ssd_tier_open(&cfg, &ssd, err, sizeof(err)), TFS_OK, "%s", err);
	store_init(&s, 9);
	c.store = &s.base;
	c.ssd = ssd;
	cc = chunk_cache_new(&c);
	cr_assert_not_null(cc);
	cr_assert_eq(chunk_cache_warm(cc, &o, 0, PIN_RAM, &fetched), TFS_OK);
	cr_expect(fetched);
	cr_expect_eq(s.fetches, 4, "a warm into RAM took %d GETs", (int)s.fetches);
	before = s.fetches;
	cr_assert_eq(chunk_cache_warm(cc, &o, 1, PIN_SSD, &fetched), TFS_OK);
	cr_expect(fetched);
	cr_expect_eq(s.fetches - before, 4, "a warm to SSD took %d GETs", (int)s.fetches - before);
	chunk_cache_flush(cc);
	range_ok(cc, &s, &o, big, 0, 0, big, false);   /* from RAM */
	range_ok(cc, &s, &o, big, 1, 0, big, true);    /* from SSD */
	cr_expect_eq(s.fetches, 8, "the warmed chunks were fetched again");
	chunk_cache_free(cc);
	ssd_tier_close(ssd);
}

/* ---- random readers: the blocks they ask for, not whole chunks ------- */

#define RCS (16 * PART_BLOCK)   /* chunks of 16 blocks */

static struct chunk_cache *random_cache(struct store *s, uint64_t part_bytes)
{
	struct chunk_cache_config c = { .store = &s->base, .parallel_gets = 1,
					.ram_bytes = 8 * RCS, .chunk_size = RCS,
					.part_bytes = part_bytes };
	struct chunk_cache *cc = chunk_cache_new(&c);

	cr_assert_not_null(cc);
	return cc;
}

static uint64_t store_bytes(struct chunk_cache *cc)
{
	struct chunk_cache_stats st;

	chunk_cache_stats(cc, &st);
	return st.store_bytes;
}

/* A random read of [off, off + len) of o (within one chunk): the right
 * bytes; returns whether they came from a RAM chunk (else from the read's
 * own span). */
static bool random_read_ok(struct chunk_cache *cc, const struct store *s,
			   const struct chunk_obj *o, uint64_t off, size_t len)
{
	return read_checked(cc, s, o, RCS, off / RCS, (size_t)(off % RCS), len, true);
}

/* Reads far apart fetch the blocks that cover them and nothing else, a
 * second read of the same blocks fetches nothing, and no chunk enters
 * RAM whole. */
Test(chunk_cache, sparse_random_reads_fetch_only_their_blocks)
{
	struct store s;
	struct chunk_obj o = obj("obj/random", "e1", 8 * RCS);
	struct chunk_cache *cc;
	struct chunk_cache_stats st;

	store_init(&s, 11);
	cc = random_cache(&s, 2 * RCS);
	cr_assert(!random_read_ok(cc, &s, &o, 3 * PART_BLOCK, 2 * PART_BLOCK));
	cr_assert_eq(store_bytes(cc), 2 * PART_BLOCK);
	cr_assert(!random_read_ok(cc, &s, &o, 5 * RCS + PART_BLOCK + 5, 100));
	cr_assert_eq(store_bytes(cc), 3 * PART_BLOCK, "a 100-byte read fetches its block");
	cr_assert(!random_read_ok(cc, &s, &o, 3 * PART_BLOCK + 7, PART_BLOCK));
	cr_assert_eq(store_bytes(cc), 3 * PART_BLOCK, "its blocks were kept");
	for (uint64_t i = 0; i < 8; i++)
		cr_assert(!chunk_cache_in_ram(cc, &o, i), "chunk %llu is in RAM whole",
			  (unsigned long long)i);
	chunk_cache_stats(cc, &st);
	cr_assert(st.has_part && st.part.reads == 3 && st.part.block_hits == 1);
	chunk_cache_free(cc);
}

/* Every 128 KiB piece of four chunks read once, in a shuffled order:
 * after every read the store has sent at most twice the bytes asked for;
 * each chunk ends up whole in RAM (its rest fetched once half of it was
 * asked for), so a second pass fetches nothing.  With a bound on the
 * blocks kept that lets entries go (tight) the same holds, the chunks
 * being made whole later. */
static void shuffled_pass(uint64_t part_bytes, bool tight)
{
	struct chunk_cache_stats st;
	enum { PIECE = 2 * PART_BLOCK, N = 4 * RCS / PIECE };
	struct store s;
	struct chunk_obj o = obj("obj/shuffled", "e1", 4 * RCS);
	struct chunk_cache *cc;
	uint64_t order[N], asked = 0, after;
	unsigned seed = 7;

	store_init(&s, 12);
	cc = random_cache(&s, part_bytes);
	for (uint64_t i = 0; i < N; i++)
		order[i] = i;
	for (uint64_t i = N - 1; i > 0; i--) {
		uint64_t j = (seed = seed * 1103515245u + 12345u) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < N; i++) {
		(void)random_read_ok(cc, &s, &o, order[i] * PIECE, PIECE);
		asked += PIECE;
		cr_assert_leq(store_bytes(cc), 2 * asked, "read %llu: %llu bytes fetched for %llu",
			      (unsigned long long)i, (unsigned long long)store_bytes(cc),
			      (unsigned long long)asked);
	}
	for (uint64_t i = 0; i < 4; i++)
		cr_assert(chunk_cache_in_ram(cc, &o, i), "chunk %llu was not made whole",
			  (unsigned long long)i);
	after = store_bytes(cc);
	for (uint64_t i = 0; i < N; i++)
		cr_assert(random_read_ok(cc, &s, &o, order[i] * PIECE, PIECE));
	cr_assert_eq(store_bytes(cc), after, "the second pass fetched");
	chunk_cache_stats(cc, &st);
	cr_assert(tight ? st.part.dropped > 0 : st.part.dropped == 0, "%llu entries let go",
		  (unsigned long long)st.part.dropped);
	chunk_cache_free(cc);
}

Test(chunk_cache, a_shuffled_pass_stays_within_twice_and_makes_chunks_whole)
{
	shuffled_pass(4 * RCS, false);
}

Test(chunk_cache, a_tight_bound_on_kept_blocks_keeps_the_same_promise)
{
	shuffled_pass(RCS / 2, true);
}

/* A whole-chunk reader after a random one gets the chunk as usual, and
 * the random reader's blocks of it are let go. */
Test(chunk_cache, a_sequential_read_of_a_chunk_read_at_random_lets_its_blocks_go)
{
	struct store s;
	struct chunk_obj o = obj("obj/both", "e1", 2 * RCS);
	struct chunk_cache *cc;
	struct chunk_cache_stats st;

	store_init(&s, 13);
	cc = random_cache(&s, 2 * RCS);
	(void)random_read_ok(cc, &s, &o, RCS + PART_BLOCK, PART_BLOCK);
	range_ok(cc, &s, &o, RCS, 1, 0, RCS, false);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.part.entries, 0);
	cr_assert_eq(st.part.bytes, 0);
	cr_assert(random_read_ok(cc, &s, &o, RCS + 3 * PART_BLOCK, PART_BLOCK),
		  "a random read of a chunk in RAM is a RAM hit");
	chunk_cache_free(cc);
}

/* A chunk whose length is not a whole number of blocks (an object's
 * last): random reads of its short last block, alone and with the
 * blocks before it, until the chunk is made whole. */
Test(chunk_cache, random_reads_of_a_short_last_block, .timeout = 30)
{
	struct store s;
	struct chunk_obj o = obj("obj/short", "e1", RCS + 5 * PART_BLOCK + 777);
	struct chunk_cache *cc;
	uint64_t last = RCS + 5 * PART_BLOCK;

	store_init(&s, 14);
	cc = random_cache(&s, 2 * RCS);
	cr_assert(!random_read_ok(cc, &s, &o, last + 700, 77));
	cr_assert_eq(store_bytes(cc), 777);
	cr_assert(!random_read_ok(cc, &s, &o, last - 100, 200));
	cr_assert_eq(store_bytes(cc), 777 + PART_BLOCK);
	cr_assert(!random_read_ok(cc, &s, &o, RCS + 2 * PART_BLOCK, 10));
	/* the fourth block of six asked for: the rest is fetched */
	(void)random_read_ok(cc, &s, &o, RCS, 3 * PART_BLOCK + 777);
	cr_assert(chunk_cache_in_ram(cc, &o, 1));
	cr_assert(random_read_ok(cc, &s, &o, last, 777));
	chunk_cache_free(cc);
}
