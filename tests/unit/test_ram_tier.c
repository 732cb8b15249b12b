/* Unit tests for src/tiers/ram_tier: hits, bounds, refcounts, single-flight. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "tiers/ram_tier.h"

#define CS 4096

struct counter {
	atomic_int fills;
	int fail_rc;
	useconds_t delay;
};

typedef int (*fill_fn)(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len);

/* The caller's side of a lookup, as the chunk cache does it: on a miss,
 * fill the buffer through fill(ctx, ...) and publish it. */
static int tier_lookup(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		       enum ram_mode mode, fill_fn fill, void *ctx, struct chunk_ref **out)
{
	struct chunk_ref *r;
	size_t len = 0;
	int rc = ram_tier_lookup(t, id, expect_len, mode, &r);

	*out = NULL;
	if (rc == TFS_MISS) {
		rc = fill(ctx, id, chunk_ref_buf(r), chunk_ref_cap(r), &len);
		rc = ram_tier_fill_done(t, r, rc, len);
	}
	if (rc == TFS_OK)
		*out = r;
	return rc;
}

static int tier_get(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		    fill_fn fill, void *ctx, struct chunk_ref **out)
{
	return tier_lookup(t, id, expect_len, RAM_READ, fill, ctx, out);
}

static int tier_ahead(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		      fill_fn fill, void *ctx, struct chunk_ref **out)
{
	return tier_lookup(t, id, expect_len, RAM_AHEAD, fill, ctx, out);
}

static int tier_ahead_epoch(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
			    fill_fn fill, void *ctx, struct chunk_ref **out)
{
	return tier_lookup(t, id, expect_len, RAM_AHEAD_EPOCH, fill, ctx, out);
}

static int fill(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct counter *c = ctx;

	atomic_fetch_add(&c->fills, 1);
	if (c->delay)
		usleep(c->delay);
	if (c->fail_rc)
		return c->fail_rc;
	memset(buf, (int)(id->index & 0xff), cap);
	*len = cap - (size_t)(id->index % 1024);   /* distinct lengths */
	return TFS_OK;
}

Test(ram_tier, hit_after_miss_and_etag_separates_versions)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	struct chunk_id a = { "obj", "\"v1\"", 3 }, b = { "obj", "\"v2\"", 3 };
	struct tier_stats st;

	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	cr_assert_eq(chunk_ref_len(r), CS - 3);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(r))[0], 3);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 1);
	/* same key and index, another ETag: never the old bytes */
	cr_assert_eq(tier_get(t, &b, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 2);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.misses, 2);
	ram_tier_free(t);
}

Test(ram_tier, capacity_bound_and_lru_victim)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	struct tier_stats st;

	for (uint64_t i = 0; i < 3; i++) {
		struct chunk_id id = { "k", "e", i };
		cr_assert_eq(tier_get(t, &id, 0, fill, &c, &r), TFS_OK);
		chunk_ref_put(r);
	}
	ram_tier_stats(t, &st);
	cr_assert_eq(st.capacity, 2 * CS);
	cr_assert_eq(st.entries, 2);
	cr_assert_eq(st.evictions, 1);
	/* chunk 0 was the least recently used: it is gone, 1 and 2 stay */
	{
		struct chunk_id id2 = { "k", "e", 2 }, id0 = { "k", "e", 0 };
		cr_assert_eq(tier_get(t, &id2, 0, fill, &c, &r), TFS_OK);
		chunk_ref_put(r);
		cr_assert_eq(c.fills, 3);
		cr_assert_eq(tier_get(t, &id0, 0, fill, &c, &r), TFS_OK);
		chunk_ref_put(r);
		cr_assert_eq(c.fills, 4);
	}
	ram_tier_free(t);
}

Test(ram_tier, referenced_chunks_are_never_reused)
{
	struct ram_tier *t = ram_tier_new(1 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_ref *held, *other;
	struct chunk_id a = { "k", "e", 1 }, b = { "k", "e", 2 };
	struct tier_stats st;

	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &held), TFS_OK);
	/* the only slot is pinned: b is served from an overflow buffer */
	cr_assert_eq(tier_get(t, &b, 0, fill, &c, &other), TFS_OK);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(held))[0], 1);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(other))[0], 2);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.overflow, 1);
	chunk_ref_put(other);
	chunk_ref_put(held);
	ram_tier_free(t);
}

Test(ram_tier, failed_fill_caches_nothing)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_TINYLFU);
	struct counter c = { .fail_rc = TFS_E_IO };
	struct chunk_ref *r;
	struct chunk_id a = { "k", "e", 0 };

	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_E_IO);
	cr_assert_null(r);
	c.fail_rc = 0;
	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 2);
	ram_tier_free(t);
}

struct racer {
	struct ram_tier *t;
	struct counter *c;
	int rc;
	unsigned char first;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct chunk_id id = { "hot", "e", 7 };
	struct chunk_ref *ref;

	r->rc = tier_get(r->t, &id, 0, fill, r->c, &ref);
	if (r->rc == TFS_OK) {
		r->first = ((const unsigned char *)chunk_ref_data(ref))[0];
		chunk_ref_put(ref);
	}
	return NULL;
}

Test(ram_tier, concurrent_misses_fill_once)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	struct counter c = { .delay = 50000 };
	pthread_t th[32];
	struct racer rs[32];

	for (int i = 0; i < 32; i++) {
		rs[i] = (struct racer){ t, &c, -100, 0 };
		pthread_create(&th[i], NULL, race, &rs[i]);
	}
	for (int i = 0; i < 32; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(rs[i].rc, TFS_OK);
		cr_assert_eq(rs[i].first, 7);
	}
	cr_assert_eq(c.fills, 1);
	ram_tier_free(t);
}

Test(ram_tier, concurrent_failure_is_shared_not_retried_forever)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	struct counter c = { .delay = 50000, .fail_rc = TFS_E_STALE };
	pthread_t th[8];
	struct racer rs[8];

	for (int i = 0; i < 8; i++) {
		rs[i] = (struct racer){ t, &c, -100, 0 };
		pthread_create(&th[i], NULL, race, &rs[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(rs[i].rc, TFS_E_STALE);
	}
	cr_assert_leq(c.fills, 8);
	ram_tier_free(t);
}

/* A hit sets the CLOCK bit: a chunk read again survives a miss that
 * evicts, one read once does not. */
/* A hit reaches the policy through the stripe buffers. */
Test(ram_tier, lru_gives_reread_chunks_a_second_chance)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	/* three objects: chunks of one object are not independent (below) */
	struct chunk_id id0 = { "k0", "e", 0 }, id1 = { "k1", "e", 0 }, id2 = { "k2", "e", 0 };

	cr_assert_eq(tier_get(t, &id0, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &id1, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &id0, 0, fill, &c, &r), TFS_OK);   /* hit */
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &id2, 0, fill, &c, &r), TFS_OK);   /* evicts 1 */
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 3);
	cr_assert_eq(tier_get(t, &id0, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 3, "chunk 0 was re-read and must have survived");
	cr_assert_eq(tier_get(t, &id1, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 4, "chunk 1 was the victim");
	ram_tier_free(t);
}

/* A fill does not evict the chunk just before it in the same object
 * while another can go: its sequential reader (or the kernel's read-ahead
 * for it) may be midway through that one.  LRU would evict it here. */
Test(ram_tier, a_fill_keeps_the_chunk_before_it_in_its_object)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	struct chunk_id k1 = { "k", "e", 1 }, k2 = { "k", "e", 2 }, x = { "x", "e", 0 };

	cr_assert_eq(tier_get(t, &k1, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &x, 0, fill, &c, &r), TFS_OK);   /* k1 is LRU now */
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &k2, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 3);
	cr_assert_eq(tier_get(t, &k1, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 3, "chunk 1 of k was evicted by the fill of chunk 2");
	ram_tier_free(t);
}

/* With nothing else to evict, a reader's fill takes it all the same. */
Test(ram_tier, a_fill_takes_the_chunk_before_it_when_nothing_else_can_go)
{
	struct ram_tier *t = ram_tier_new(1 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	struct chunk_id k1 = { "k", "e", 1 }, k2 = { "k", "e", 2 };

	cr_assert_eq(tier_get(t, &k1, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &k2, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 2);
	cr_assert_gt(ram_tier_contains(t, &k2), 0);
	cr_assert_eq(ram_tier_contains(t, &k1), 0);
	ram_tier_free(t);
}

Test(ram_tier, dup_keeps_a_chunk_pinned_until_the_last_put)
{
	struct ram_tier *t = ram_tier_new(CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_ref *r, *d, *o;
	struct chunk_id a = { "k", "e", 1 }, b = { "k", "e", 2 };
	struct tier_stats st;

	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	d = chunk_ref_dup(r);
	chunk_ref_put(r);
	/* still pinned by d: b cannot take the only slot */
	cr_assert_eq(tier_get(t, &b, 0, fill, &c, &o), TFS_OK);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.overflow, 1);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(d))[0], 1);
	chunk_ref_put(o);
	chunk_ref_put(d);
	cr_assert_eq(tier_get(t, &b, 0, fill, &c, &o), TFS_OK);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.evictions, 1);
	chunk_ref_put(o);
	ram_tier_free(t);
}

/* Many readers over three times more chunks than slots, a fifth of the
 * fills failing, references duplicated at random: every byte a reader
 * sees belongs to the chunk it asked for, the counters add up, and every
 * reference comes back (ram_tier_free asserts it).  A stress, not a
 * proof: the race of a slot freed under a waiter (when the orphan mark was
 * a separate atomic) showed up under TSan and in 2 of 11 longer runs, not
 * reliably here. */
struct stress {
	struct ram_tier *t;
	unsigned seed;
	atomic_int *fills, *bad;
};

static int stress_fill(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct stress *s = ctx;

	atomic_fetch_add(s->fills, 1);
	if (rand_r(&s->seed) % 5 == 0)
		return TFS_E_IO;
	memset(buf, (int)(id->index * 7 + 1) & 0xff, cap);
	*len = cap - (size_t)(id->index % 7);
	return TFS_OK;
}

static void *stress_run(void *arg)
{
	struct stress *s = arg;

	for (int i = 0; i < 50000; i++) {
		struct chunk_id id = { "obj", "e", (uint64_t)(rand_r(&s->seed) % 12) };
		struct chunk_ref *r, *d = NULL;
		int rc = tier_get(s->t, &id, 0, stress_fill, s, &r);

		if (rc == TFS_E_IO)
			continue;
		if (rc != TFS_OK) {
			atomic_fetch_add(s->bad, 1);
			continue;
		}
		const unsigned char *p = chunk_ref_data(r);
		if (chunk_ref_len(r) != CS - id.index % 7 || p[0] != ((id.index * 7 + 1) & 0xff) ||
		    p[chunk_ref_len(r) - 1] != p[0])
			atomic_fetch_add(s->bad, 1);
		if (rand_r(&s->seed) % 3 == 0)
			d = chunk_ref_dup(r);
		chunk_ref_put(r);
		chunk_ref_put(d);
	}
	return NULL;
}

Test(ram_tier, stress_readers_always_see_their_own_chunk)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	atomic_int fills = 0, bad = 0;
	struct stress ss[8];
	pthread_t th[8];
	struct tier_stats st;

	for (unsigned i = 0; i < 8; i++) {
		ss[i] = (struct stress){ t, i + 1, &fills, &bad };
		pthread_create(&th[i], NULL, stress_run, &ss[i]);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&bad), 0);
	ram_tier_stats(t, &st);
	cr_assert_leq(st.entries, 4);
	/* every get is a hit or a miss, except waiters on a failed fill */
	cr_assert_leq(st.hits + st.misses, 8 * 50000);
	cr_assert_geq(st.hits + st.misses, 8 * 50000 - st.waits);
	cr_assert_eq(st.misses, (uint64_t)atomic_load(&fills));
	ram_tier_free(t);
}

static int get_put(struct ram_tier *t, uint64_t i, struct counter *c)
{
	struct chunk_id id = { "k", "e", i };
	struct chunk_ref *r;
	int rc = tier_get(t, &id, 0, fill, c, &r);

	chunk_ref_put(r);
	return rc;
}

/* The access-frequency policy in the tier: a hot set re-read through hits
 * (replayed from the stripe buffers) survives a scan ten times the tier;
 * LRU, the same code with another policy, loses all of it. */
Test(ram_tier, tinylfu_keeps_a_hot_set_through_a_scan)
{
	enum { SLOTS = 64, HOT = 32 };
	const enum evict_kind kinds[] = { EVICT_TINYLFU, EVICT_LRU };
	int refills[2];

	for (int k = 0; k < 2; k++) {
		struct ram_tier *t = ram_tier_new(SLOTS * (uint64_t)CS, CS, kinds[k]);
		struct counter c = { 0 };
		int before;

		for (int round = 0; round < 8; round++)
			for (uint64_t i = 0; i < HOT; i++)
				cr_assert_eq(get_put(t, i, &c), TFS_OK);
		cr_assert_eq(c.fills, HOT);
		for (uint64_t i = 1000; i < 1000 + 10 * SLOTS; i++)
			cr_assert_eq(get_put(t, i, &c), TFS_OK);
		before = c.fills;
		for (uint64_t i = 0; i < HOT; i++)
			cr_assert_eq(get_put(t, i, &c), TFS_OK);
		refills[k] = c.fills - before;
		ram_tier_free(t);
	}
	cr_assert_leq(refills[0], HOT / 8, "tinylfu refetched %d of %d hot chunks", refills[0], HOT);
	cr_assert_eq(refills[1], HOT, "lru keeps nothing of the hot set");
}

/* Several chunks read at once stay resident while they are read (the
 * window is kept wide enough): interleaved partial reads of 4 chunks,
 * among one-off chunks, fill each chunk once. */
Test(ram_tier, chunks_being_read_together_are_filled_once)
{
	enum { SLOTS = 32 };
	struct ram_tier *t = ram_tier_new(SLOTS * (uint64_t)CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	uint64_t hot = 0, scan = 100000;

	/* a resident set that looks more valuable than any stream's chunk */
	for (int round = 0; round < 10; round++)
		for (hot = 0; hot < SLOTS; hot++)
			cr_assert_eq(get_put(t, 500 + hot, &c), TFS_OK);
	for (uint64_t chunk = 0; chunk < 40; chunk += 4) {
		int before = c.fills;

		for (int piece = 0; piece < 8; piece++)
			for (uint64_t s = 0; s < 4; s++) {
				cr_assert_eq(get_put(t, chunk + s, &c), TFS_OK);
				cr_assert_eq(get_put(t, scan++, &c), TFS_OK);
			}
		cr_assert_eq(c.fills - before, 4 + 32, "chunks %lu..%lu refetched",
			     (unsigned long)chunk, (unsigned long)chunk + 3);
	}
	ram_tier_free(t);
}

/* ---- read-ahead --------------------------------------------------------- */

/* One reader's visit to chunk (key, "e", i): get, check, put. */
static void visit(struct ram_tier *t, struct counter *c, const char *key, uint64_t i)
{
	struct chunk_id id = { key, "e", i };
	struct chunk_ref *r;

	cr_assert_eq(tier_get(t, &id, 0, fill, c, &r), TFS_OK);
	cr_assert_eq(chunk_ref_len(r), CS - (size_t)i % CS);
	chunk_ref_put(r);
}

/* Read chunk (key, "e", i) ahead. */
static void ahead(struct ram_tier *t, struct counter *c, const char *key, uint64_t i)
{
	struct chunk_id id = { key, "e", i };
	struct chunk_ref *r;

	cr_assert_eq(tier_ahead(t, &id, 0, fill, c, &r), TFS_OK);
	chunk_ref_put(r);
}

Test(ram_tier, prefetched_chunk_is_a_used_hit_and_present_one_is_left_alone)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_ref *r;
	struct chunk_id a = { "obj", "e", 1 };
	struct tier_stats st;

	cr_assert_eq(tier_ahead(t, &a, 0, fill, &c, &r), TFS_OK);
	cr_assert_eq(chunk_ref_len(r), CS - 1);
	chunk_ref_put(r);
	cr_assert_eq(tier_ahead(t, &a, 0, fill, &c, &r), TFS_AGAIN, "present already");
	cr_assert_null(r);
	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(r))[0], 1);
	chunk_ref_put(r);
	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 1, "one fill for the read-ahead and both reads");
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_issued, 1);
	cr_expect_eq(st.ahead_used, 1, "used once, however often read");
	cr_expect_eq(st.ahead_wasted, 0);
	cr_expect_eq(st.misses, 0, "a read-ahead is not a reader's miss");
	cr_expect_eq(st.hits, 2);
	ram_tier_free(t);
}

Test(ram_tier, unread_prefetch_is_evicted_last_then_counted_wasted)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct tier_stats st;

	ram_tier_set_ahead_limit(t, 4 * CS);
	ahead(t, &c, "ra", 0);
	/* many more reads than slots: LRU would evict the read-ahead chunk
	 * (the least recent) first; it is protected instead */
	for (uint64_t i = 0; i < 20; i++)
		visit(t, &c, "k", i);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_wasted, 0);
	visit(t, &c, "ra", 0);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_used, 1, "still there when its reader came");
	cr_expect_eq(c.fills, 21);

	/* with no protection (limit 0) an unread one is evicted: wasted */
	ram_tier_set_ahead_limit(t, 0);
	ahead(t, &c, "ra", 1);
	for (uint64_t i = 100; i < 110; i++)
		visit(t, &c, "k", i);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_wasted, 1);
	cr_expect_eq(st.ahead_used, 1);
	ram_tier_free(t);
}

Test(ram_tier, protection_is_bounded_by_the_latest_read_ahead)
{
	struct ram_tier *t = ram_tier_new(8 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct tier_stats st;

	ram_tier_set_ahead_limit(t, 2 * CS);
	/* six read ahead, none read: only the latest two stay protected, so
	 * ordinary reads still find room and the others can go */
	for (uint64_t i = 0; i < 6; i++)
		ahead(t, &c, "ra", i);
	for (uint64_t i = 0; i < 30; i++)
		visit(t, &c, "k", i);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_wasted, 4);
	cr_expect_eq(st.overflow, 0);
	for (uint64_t i = 4; i < 6; i++)
		visit(t, &c, "ra", i);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_used, 2, "the latest two were kept");
	ram_tier_free(t);
}

struct late_arg {
	struct ram_tier *t;
	struct counter *c;
	int rc;
};

static void *prefetch_thread(void *arg)
{
	struct late_arg *a = arg;
	struct chunk_id id = { "slow", "e", 2 };
	struct chunk_ref *r;

	a->rc = tier_ahead(a->t, &id, 0, fill, a->c, &r);
	if (a->rc == TFS_OK)
		chunk_ref_put(r);
	return NULL;
}

Test(ram_tier, reader_of_a_chunk_in_flight_waits_and_is_late)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	/* the fill lasts 2 s: the reader's get comes while it is in flight
	 * however slow the build */
	struct counter c = { .delay = 2000000 };
	struct late_arg a = { t, &c, 0 };
	struct chunk_id id = { "slow", "e", 2 };
	struct chunk_ref *r;
	struct tier_stats st;
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, prefetch_thread, &a), 0);
	while (atomic_load(&c.fills) == 0)
		usleep(1000);
	cr_assert_eq(tier_get(t, &id, 0, fill, &c, &r), TFS_OK);
	cr_assert_eq(chunk_ref_len(r), CS - 2);
	chunk_ref_put(r);
	pthread_join(th, NULL);
	cr_assert_eq(a.rc, TFS_OK);
	cr_expect_eq(atomic_load(&c.fills), 1, "the reader waited for the read-ahead's fill");
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_late, 1);
	cr_expect_eq(st.ahead_used, 1);
	ram_tier_free(t);
}

Test(ram_tier, prefetch_never_overflows)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_ref *r1, *r2, *r;
	struct chunk_id a = { "k", "e", 0 }, b = { "k", "e", 1 }, x = { "ra", "e", 0 };
	struct tier_stats st;

	cr_assert_eq(tier_get(t, &a, 0, fill, &c, &r1), TFS_OK);
	cr_assert_eq(tier_get(t, &b, 0, fill, &c, &r2), TFS_OK);
	cr_expect_eq(tier_ahead(t, &x, 0, fill, &c, &r), TFS_AGAIN, "every slot pinned");
	ram_tier_stats(t, &st);
	cr_expect_eq(st.ahead_dropped, 1);
	cr_expect_eq(st.overflow, 0);
	cr_expect_eq(c.fills, 2);
	chunk_ref_put(r1);
	chunk_ref_put(r2);
	ram_tier_free(t);
}

/* A read-ahead never evicts read-ahead that is still awaited, even when
 * nothing else can go: the contract says TFS_AGAIN (dropped). */
Test(ram_tier, prefetch_never_evicts_protected_prefetch)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_id a = { "k", "e", 0 }, b = { "k", "e", 1 }, x = { "k", "e", 2 };
	struct chunk_ref *r;
	struct tier_stats st;

	ram_tier_set_ahead_limit(t, 2 * CS);
	cr_assert_eq(tier_ahead(t, &a, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_ahead(t, &b, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(tier_ahead(t, &x, 0, fill, &c, &r), TFS_AGAIN);
	cr_assert_gt(ram_tier_contains(t, &a), 0, "awaited read-ahead was evicted");
	cr_assert_gt(ram_tier_contains(t, &b), 0, "awaited read-ahead was evicted");
	ram_tier_stats(t, &st);
	cr_assert_eq(st.ahead_wasted, 0);
	cr_assert_eq(st.ahead_dropped, 1);
	/* a reader still gets a slot (it must make progress) */
	cr_assert_eq(tier_get(t, &x, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	ram_tier_free(t);
}

/* Pinned chunks survive any pressure; a miss overflows instead; unpinned
 * they are ordinary again.  The pin set is asked at insertion and
 * ram_tier_pin_key() changes a present chunk. */
static void pin_only(struct pin_set *ps, const char *key)
{
	const char *keys[] = { key };
	uint64_t sizes[] = { CS }, would_be;

	pin_set_clear(ps);
	cr_assert_eq(pin_set_add(ps, keys, sizes, 1, PIN_RAM, UINT64_MAX, &would_be), TFS_OK);
}

Test(ram_tier, pinned_chunks_are_never_evicted)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id p0 = { "pinned", "e", 0 }, u = { "other", "e", 0 };
	struct chunk_ref *r;
	uint64_t bytes = 0, chunks = 0, pinned = 0;
	struct tier_stats st;
	struct pin_set *ps = pin_set_new();

	ram_tier_set_pins(t, ps);
	pin_only(ps, "pinned");
	cr_assert_eq(tier_get(t, &p0, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	for (uint64_t i = 0; i < 20; i++) {
		struct chunk_id id = { "other", "e", i };
		cr_assert_eq(tier_get(t, &id, 0, fill, &c, &r), TFS_OK);
		chunk_ref_put(r);
	}
	cr_assert_eq(ram_tier_contains(t, &p0), CS, "pinned chunk evicted");
	cr_assert_eq(ram_tier_evict(t, &p0, &bytes), RAM_EVICT_PINNED);
	ram_tier_evict_all(t, &chunks, &bytes, &pinned);
	cr_assert_eq(chunks, 1);
	cr_assert_eq(pinned, 1);
	cr_assert_eq(ram_tier_contains(t, &p0), CS);
	/* unpinned: evictable on request, and gone */
	cr_assert_eq(ram_tier_pin_key(t, "pinned", false), 1);
	bytes = 0;
	cr_assert_eq(ram_tier_evict(t, &p0, &bytes), RAM_EVICT_DONE);
	cr_assert_eq(bytes, CS);
	cr_assert_eq(ram_tier_contains(t, &p0), 0);
	cr_assert_eq(ram_tier_evict(t, &u, &bytes), RAM_EVICT_ABSENT);
	/* a chunk in use is not evicted under its reader */
	cr_assert_eq(tier_get(t, &u, 0, fill, &c, &r), TFS_OK);
	cr_assert_eq(ram_tier_evict(t, &u, &bytes), RAM_EVICT_BUSY);
	chunk_ref_put(r);
	cr_assert_eq(ram_tier_evict(t, &u, &bytes), RAM_EVICT_DONE);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.entries, 0);
	/* every slot pinned: a reader overflows, nothing is lost */
	pin_only(ps, "other");
	for (uint64_t i = 0; i < 2; i++) {
		struct chunk_id id = { "other", "e", i };
		cr_assert_eq(tier_get(t, &id, 0, fill, &c, &r), TFS_OK);
		chunk_ref_put(r);
	}
	cr_assert_eq(tier_get(t, &p0, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.overflow, 1);
	ram_tier_free(t);
	pin_set_free(ps);
}

/* A fill of exactly `len` bytes (the object's last, short chunk), which
 * checks it was given room for them. */
struct sized {
	atomic_int fills;
	size_t len;
	size_t min_cap, max_cap;
};

static int fill_sized(void *ctx, const struct chunk_id *id, void *buf, size_t cap, size_t *len)
{
	struct sized *c = ctx;

	atomic_fetch_add(&c->fills, 1);
	if (cap < c->len)
		return TFS_E_IO;
	if (!c->min_cap || cap < c->min_cap)
		c->min_cap = cap;
	if (cap > c->max_cap)
		c->max_cap = cap;
	memset(buf, (int)(id->index & 0xff), c->len);
	*len = c->len;
	return TFS_OK;
}

/* Small chunks take their size, not a chunk's: 40 images of 100 KB fit a
 * 4 MiB tier of 1 MiB chunks (4 chunk-sized slots would hold 4). */
Test(ram_tier, small_chunks_take_their_size_not_a_chunk)
{
	const size_t big = 1u << 20;
	struct ram_tier *t = ram_tier_new(4 * big, big, EVICT_LRU);
	struct sized c = { .len = 100000 };
	struct tier_stats st;
	struct chunk_ref *r;

	cr_assert_not_null(t);
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t i = 0; i < 40; i++) {
			struct chunk_id id = { "img", "e", i };

			cr_assert_eq(tier_get(t, &id, c.len, fill_sized, &c, &r), TFS_OK);
			cr_assert_eq(chunk_ref_len(r), c.len);
			cr_assert_eq(((const unsigned char *)chunk_ref_data(r))[c.len - 1], i & 0xff);
			chunk_ref_put(r);
		}
	}
	cr_expect_eq(atomic_load(&c.fills), 40, "the second pass was all hits");
	cr_expect_eq(c.max_cap, 102400, "a buffer of the length rounded to 4 KiB");
	ram_tier_stats(t, &st);
	cr_expect_eq(st.entries, 40);
	cr_expect_eq(st.evictions, 0);
	cr_expect_eq(st.capacity, 4 * big);
	ram_tier_free(t);
}

/* The bound is on bytes: a whole chunk (length unknown) arriving in a
 * tier full of small ones evicts as many as its buffer needs, and no
 * more; the small ones left are still hits. */
Test(ram_tier, a_whole_chunk_evicts_small_ones_to_fit_the_bytes)
{
	const size_t big = 1u << 20;
	struct ram_tier *t = ram_tier_new(4 * big, big, EVICT_LRU);
	struct sized c = { .len = 100000 }, w = { .len = 5000 };
	struct chunk_id whole = { "big", "e", 0 };
	struct tier_stats st;
	struct chunk_ref *r;
	int hits = 0;

	for (uint64_t i = 0; i < 40; i++) {
		struct chunk_id id = { "img", "e", i };
		cr_assert_eq(tier_get(t, &id, c.len, fill_sized, &c, &r), TFS_OK);
		chunk_ref_put(r);
	}
	cr_assert_eq(tier_get(t, &whole, 0, fill_sized, &w, &r), TFS_OK);
	cr_expect_eq(w.max_cap, big, "unknown length: a whole chunk's buffer");
	chunk_ref_put(r);
	ram_tier_stats(t, &st);
	/* 40 x 100 KiB + 1 MiB <= 4 MiB needs 10 out (LRU: the first 10) */
	cr_expect_eq(st.evictions, 10, "%llu evicted", (unsigned long long)st.evictions);
	c.fills = 0;
	for (uint64_t i = 10; i < 40; i++) {
		struct chunk_id id = { "img", "e", i };
		cr_assert_eq(tier_get(t, &id, c.len, fill_sized, &c, &r), TFS_OK);
		chunk_ref_put(r);
	}
	hits = 30 - atomic_load(&c.fills);
	cr_expect_eq(hits, 30, "the small chunks kept are hits");
	ram_tier_free(t);
}

/* Read chunk i of "f" (filling it on a miss), marked read through when
 * done; true when it was a hit. */
static bool read_once(struct ram_tier *t, struct counter *c, uint64_t i, bool done)
{
	struct chunk_id id = { "f", "e", i };
	struct chunk_ref *r;
	int before = atomic_load(&c->fills);

	cr_assert_eq(tier_get(t, &id, 0, fill, c, &r), TFS_OK);
	cr_assert_eq(((const unsigned char *)chunk_ref_data(r))[0], (unsigned char)i);
	if (done)
		ram_tier_read_done(r);
	chunk_ref_put(r);
	return atomic_load(&c->fills) == before;
}

static bool present(struct ram_tier *t, uint64_t i)
{
	struct chunk_id id = { "f", "e", i };

	return ram_tier_contains(t, &id) != 0;
}

/* Chunks read through this epoch leave first, the latest first, whatever
 * the policy would say (LRU here would take chunk 0). */
Test(ram_tier, read_through_chunks_leave_first_latest_first)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct tier_stats st;

	read_once(t, &c, 0, false);
	read_once(t, &c, 1, true);
	read_once(t, &c, 2, true);
	read_once(t, &c, 3, false);
	read_once(t, &c, 4, false);      /* evicts 2, the latest read through */
	cr_expect(!present(t, 2));
	cr_expect(present(t, 0) && present(t, 1) && present(t, 3));
	read_once(t, &c, 5, false);      /* then 1 */
	cr_expect(!present(t, 1));
	cr_expect(present(t, 0));
	read_once(t, &c, 6, false);      /* none left marked: the policy's (LRU: 0) */
	cr_expect(!present(t, 0));
	cr_expect(present(t, 3) && present(t, 4) && present(t, 5) && present(t, 6));
	ram_tier_stats(t, &st);
	cr_expect_eq(st.evictions, 3);
	cr_expect_eq(st.evictions_read, 2);
	ram_tier_free(t);
}

/* A new epoch voids the marks: every file is needed again, and the
 * policy chooses. */
Test(ram_tier, a_new_epoch_voids_the_marks)
{
	struct ram_tier *t = ram_tier_new(2 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct tier_stats st;

	read_once(t, &c, 0, false);
	read_once(t, &c, 1, true);
	ram_tier_new_epoch(t);
	read_once(t, &c, 2, false);      /* LRU: 0, not 1 */
	cr_expect(!present(t, 0));
	cr_expect(present(t, 1));
	ram_tier_stats(t, &st);
	cr_expect_eq(st.evictions_read, 0);
	ram_tier_free(t);
}

/* A chunk read through but still referenced (a reply in flight, a store
 * to SSD) is passed over, and taken once it is put. */
Test(ram_tier, a_referenced_read_through_chunk_is_passed_over)
{
	struct ram_tier *t = ram_tier_new(3 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id id2 = { "f", "e", 2 };
	struct chunk_ref *held;

	read_once(t, &c, 0, false);
	read_once(t, &c, 1, true);
	cr_assert_eq(tier_get(t, &id2, 0, fill, &c, &held), TFS_OK);
	ram_tier_read_done(held);        /* the latest, but held */
	read_once(t, &c, 3, false);      /* takes 1 */
	cr_expect(!present(t, 1));
	cr_expect(present(t, 2));
	chunk_ref_put(held);
	read_once(t, &c, 4, false);      /* now 2 */
	cr_expect(!present(t, 2));
	cr_expect(present(t, 0) && present(t, 3) && present(t, 4));
	ram_tier_free(t);
}

/* The point of it: a dataset twice the tier, read in the same order every
 * epoch, each chunk marked once read.  LRU alone gets no hit at all; with
 * the marks the tier keeps a stable half, C/N of the reads hit. */
Test(ram_tier, twice_the_tier_in_one_order_hits_c_over_n_each_epoch)
{
	enum { C = 8, N = 16, EPOCHS = 4 };
	int hits[2][EPOCHS] = { { 0 } };

	for (int marked = 0; marked < 2; marked++) {
		struct ram_tier *t = ram_tier_new(C * CS, CS, EVICT_LRU);
		struct counter c = { 0 };

		for (int e = 0; e < EPOCHS; e++) {
			ram_tier_new_epoch(t);
			for (uint64_t i = 0; i < N; i++)
				hits[marked][e] += read_once(t, &c, (i * 5 + 3) % N, marked);
		}
		ram_tier_free(t);
	}
	for (int e = 1; e < EPOCHS; e++) {
		cr_expect_eq(hits[0][e], 0, "epoch %d, LRU alone: %d hits", e + 1, hits[0][e]);
		cr_expect_eq(hits[1][e], C, "epoch %d, with marks: %d hits, want C = %d", e + 1,
			     hits[1][e], C);
	}
}

/* An epoch's fetch ahead never takes RAM beyond its bound, nor a chunk the
 * epoch has yet to read: with slots to spare (one per 64 KiB) but the
 * bytes taken by 100 KB images nobody read through, it is refused; one
 * read through makes room for exactly one. */
Test(ram_tier, an_epochs_fetch_ahead_stays_in_the_bound)
{
	const size_t big = 1u << 20;
	struct ram_tier *t = ram_tier_new(4 * big, big, EVICT_LRU);
	struct sized c = { .len = 100000 };
	struct tier_stats st;
	struct chunk_ref *r, *keep = NULL;
	uint64_t i;

	for (i = 0; i < 40; i++) {   /* 40 x 100 KiB buffers: 4 MiB, full */
		struct chunk_id id = { "img", "e", i };
		cr_assert_eq(tier_get(t, &id, c.len, fill_sized, &c, &r), TFS_OK);
		if (i == 7)
			keep = r;
		else
			chunk_ref_put(r);
	}
	for (; i < 45; i++) {
		struct chunk_id id = { "img", "e", i };
		cr_expect_eq(tier_ahead_epoch(t, &id, c.len, fill_sized, &c, &r), TFS_AGAIN);
	}
	ram_tier_stats(t, &st);
	cr_expect_leq(st.bytes_used, 4 * big);
	cr_expect_eq(st.entries, 40);
	cr_expect_eq(st.evictions, 0, "a file the epoch has yet to read was evicted");
	ram_tier_read_done(keep);
	chunk_ref_put(keep);
	{
		struct chunk_id id = { "img", "e", 50 }, id2 = { "img", "e", 51 };
		cr_expect_eq(tier_ahead_epoch(t, &id, c.len, fill_sized, &c, &r), TFS_OK);
		chunk_ref_put(r);
		cr_expect_eq(tier_ahead_epoch(t, &id2, c.len, fill_sized, &c, &r), TFS_AGAIN);
	}
	ram_tier_stats(t, &st);
	cr_expect_leq(st.bytes_used, 4 * big);
	cr_expect_eq(st.evictions, 1);
	cr_expect_eq(st.evictions_read, 1);
	ram_tier_free(t);
}

/* An epoch's fetch ahead whose chunks the SSD tier keeps for their readers
 * (handed down once written): their RAM copies are no longer awaited, so
 * the next fetch ahead takes their room instead of being refused (a
 * reader that opens its file with passthrough never reads the copy here
 * to say it is done), and none of them counts as wasted. */
Test(ram_tier, fetch_ahead_handed_down_makes_room_for_the_next)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_LRU);
	struct counter c = { 0 };
	struct tier_stats st;
	struct chunk_ref *held[12] = { NULL }, *r;

	ram_tier_set_ahead_limit(t, 64 * CS);   /* every chunk ahead is awaited */
	for (uint64_t i = 0; i < 4; i++) {
		struct chunk_id id = { "f", "e", i };

		/* held as the SSD tier's writer holds what it is writing */
		cr_assert_eq(tier_ahead_epoch(t, &id, 0, fill, &c, &held[i]), TFS_OK);
	}
	{
		/* a tier whose chunks ahead were written but not handed down */
		struct ram_tier *u = ram_tier_new(4 * CS, CS, EVICT_LRU);
		struct counter cu = { 0 };
		struct chunk_id id = { "f", "e", 4 };

		ram_tier_set_ahead_limit(u, 64 * CS);
		for (uint64_t i = 0; i < 4; i++) {
			struct chunk_id a = { "f", "e", i };

			cr_assert_eq(tier_ahead_epoch(u, &a, 0, fill, &cu, &r), TFS_OK);
			chunk_ref_put(r);
		}
		cr_expect_eq(tier_ahead_epoch(u, &id, 0, fill, &cu, &r), TFS_AGAIN,
			     "a full tier of awaited chunks takes no more");
		ram_tier_free(u);
	}
	for (uint64_t i = 4; i < 12; i++) {
		struct chunk_id id = { "f", "e", i };

		ram_tier_handed_down(held[i - 4]);
		chunk_ref_put(held[i - 4]);
		cr_assert_eq(tier_ahead_epoch(t, &id, 0, fill, &c, &held[i]), TFS_OK,
			     "chunk %d found no room", (int)i);
		cr_expect(!present(t, i - 4), "chunk %d made the room", (int)(i - 4));
	}
	for (uint64_t i = 8; i < 12; i++)
		chunk_ref_put(held[i]);
	ram_tier_stats(t, &st);
	cr_expect_eq(st.evictions, 8);
	cr_expect_eq(st.ahead_wasted, 0);
	cr_expect_eq(atomic_load(&c.fills), 12, "each chunk fetched once");
	ram_tier_free(t);
}

struct getter {
	struct ram_tier *t;
	struct chunk_id id;
	struct counter *c;
	int rc;
	size_t len;
};

static void *get_thread(void *arg)
{
	struct getter *g = arg;
	struct chunk_ref *r;

	g->rc = tier_get(g->t, &g->id, 0, fill, g->c, &r);
	if (g->rc == TFS_OK) {
		g->len = chunk_ref_len(r);
		chunk_ref_put(r);
	}
	return NULL;
}

/* A fetch ahead that is no longer wanted gives its slot back before any
 * byte is fetched: the chunk is absent after, and the slot free (a tier
 * of one slot takes another chunk at once). */
Test(ram_tier, a_fill_ahead_nobody_waits_for_is_withdrawn)
{
	struct ram_tier *t = ram_tier_new(CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct chunk_id id = { "w", "e", 5 }, other = { "w", "e", 6 };
	struct chunk_ref *r;
	struct tier_stats st;

	cr_assert_eq(ram_tier_lookup(t, &id, 0, RAM_AHEAD_EPOCH, &r), TFS_MISS);
	cr_assert(ram_tier_fill_withdraw(t, r));
	cr_assert_eq(ram_tier_contains(t, &id), 0);
	ram_tier_stats(t, &st);
	cr_assert_eq(st.ahead_issued, 0, "a withdrawn fill was counted as issued");
	cr_assert_eq(tier_get(t, &other, 0, fill, &c, &r), TFS_OK);
	chunk_ref_put(r);
	cr_assert_eq(c.fills, 1);
	ram_tier_free(t);
}

/* A reader already waiting on the slot keeps it: the withdrawal is
 * refused, the fill goes on, and the reader gets the bytes, not an error. */
Test(ram_tier, a_fill_ahead_a_reader_waits_for_is_not_withdrawn)
{
	struct ram_tier *t = ram_tier_new(4 * CS, CS, EVICT_TINYLFU);
	struct counter c = { 0 };
	struct getter g = { t, { "w", "e", 7 }, &c, -100, 0 };
	struct chunk_ref *r;
	struct tier_stats st;
	pthread_t th;
	size_t len = 0;

	cr_assert_eq(ram_tier_lookup(t, &g.id, 0, RAM_AHEAD_EPOCH, &r), TFS_MISS);
	cr_assert_eq(pthread_create(&th, NULL, get_thread, &g), 0);
	do {   /* until the reader waits on the slot (bounded by the test's timeout) */
		usleep(1000);
		ram_tier_stats(t, &st);
	} while (st.waits == 0);
	cr_assert_not(ram_tier_fill_withdraw(t, r));
	cr_assert_eq(fill(&c, &g.id, chunk_ref_buf(r), chunk_ref_cap(r), &len), TFS_OK);
	cr_assert_eq(ram_tier_fill_done(t, r, TFS_OK, len), TFS_OK);
	chunk_ref_put(r);
	pthread_join(th, NULL);
	cr_assert_eq(g.rc, TFS_OK);
	cr_assert_eq(g.len, len);
	cr_assert_eq(c.fills, 1, "the reader fetched it a second time");
	ram_tier_free(t);
}

/* An epoch's fetch ahead leaves room for a reader's next two chunks, as
 * large as the largest a reader has missed on: the fetches ahead not read
 * yet stay within the tier less that room, even when chunks read through
 * this epoch could be evicted for more (the reader's next miss would then
 * evict what was fetched for the epoch, unread). */
Test(ram_tier, an_epochs_fetch_ahead_leaves_room_for_a_readers_two_chunks)
{
	enum { BIG = 64 * 1024 };
	struct ram_tier *t = ram_tier_new(4 * BIG, BIG, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id r1 = { "read", "e", 0 }, r2 = { "read", "e", 1 };
	struct chunk_id e[3] = { { "ahead", "e", 0 }, { "ahead", "e", 1 }, { "ahead", "e", 2 } };
	struct chunk_ref *ref;

	cr_assert_not_null(t);
	for (int i = 0; i < 2; i++) {   /* a reader reads two whole chunks through */
		cr_assert_eq(tier_get(t, i ? &r2 : &r1, BIG, fill, &c, &ref), TFS_OK);
		ram_tier_read_done(ref);
		chunk_ref_put(ref);
	}
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tier_ahead_epoch(t, &e[i], BIG, fill, &c, &ref), TFS_OK, "fetch %d", i);
		chunk_ref_put(ref);
	}
	cr_expect_eq(tier_ahead_epoch(t, &e[2], BIG, fill, &c, &ref), TFS_AGAIN,
		     "a third chunk fetched ahead left no room for the reader's next two");
	if (ref)
		chunk_ref_put(ref);
	cr_expect(ram_tier_contains(t, &r1) > 0 && ram_tier_contains(t, &r2) > 0,
		  "a refused fetch ahead evicted a chunk");
	/* the reader reads one of them: it is no longer awaited */
	cr_assert_eq(tier_get(t, &e[0], BIG, fill, &c, &ref), TFS_OK);
	chunk_ref_put(ref);
	cr_expect_eq(tier_ahead_epoch(t, &e[2], BIG, fill, &c, &ref), TFS_OK);
	chunk_ref_put(ref);
	cr_expect(ram_tier_contains(t, &e[1]) > 0, "a chunk fetched for the epoch was evicted");
	cr_expect_eq(c.fills, 5);
	ram_tier_free(t);
}

/* While readers take small chunks only, the room kept for them is small. */
Test(ram_tier, small_reads_leave_an_epochs_fetch_ahead_most_of_the_tier)
{
	enum { BIG = 64 * 1024 };
	struct ram_tier *t = ram_tier_new(4 * BIG, BIG, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id s0 = { "small", "e", 0 };
	struct chunk_ref *ref;

	cr_assert_not_null(t);
	cr_assert_eq(tier_get(t, &s0, CS, fill, &c, &ref), TFS_OK);
	chunk_ref_put(ref);
	for (uint64_t i = 0; i < 3; i++) {
		struct chunk_id id = { "ahead", "e", i };

		cr_expect_eq(tier_ahead_epoch(t, &id, BIG, fill, &c, &ref), TFS_OK, "fetch %llu",
			     (unsigned long long)i);
		if (ref)
			chunk_ref_put(ref);
	}
	ram_tier_free(t);
}

/* A reader's get of chunk id, expected len bytes long, put at once
 * (marked read through first when done). */
static void get_len(struct ram_tier *t, struct counter *c, const struct chunk_id *id, size_t len,
		    bool done)
{
	struct chunk_ref *r;

	cr_assert_eq(tier_get(t, id, len, fill, c, &r), TFS_OK);
	if (done)
		ram_tier_read_done(r);
	chunk_ref_put(r);
}

/* A read-ahead of chunk id, expected len bytes long: its result (the
 * reference put at once). */
static int ahead_len(struct ram_tier *t, struct counter *c, const struct chunk_id *id, size_t len)
{
	struct chunk_ref *r = NULL;
	int rc = tier_ahead(t, id, len, fill, c, &r);

	if (r)
		chunk_ref_put(r);
	return rc;
}

/* A read-ahead of chunk c + 2 of an object does not evict chunk c: its
 * reader (or the kernel's read-ahead for it, whose requests come out of
 * order) may still ask for c's last pages; taken, c was fetched again.  A
 * tier of two chunks: c (read, no longer held) and c + 1 (read ahead,
 * read): the read-ahead of c + 2 finds no room instead. */
Test(ram_tier, a_read_ahead_spares_the_two_chunks_before_it)
{
	enum { BIG = 64 * 1024 };
	struct ram_tier *t = ram_tier_new(2 * BIG, BIG, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id c0 = { "obj", "e", 0 }, c1 = { "obj", "e", 1 }, c2 = { "obj", "e", 2 };

	cr_assert_not_null(t);
	get_len(t, &c, &c0, BIG, false);
	cr_assert_eq(ahead_len(t, &c, &c1, BIG), TFS_OK);
	get_len(t, &c, &c1, BIG, false);   /* consumed */
	cr_expect_eq(ahead_len(t, &c, &c2, BIG), TFS_AGAIN,
		     "the read-ahead of chunk 2 evicted chunk 0 or 1");
	cr_expect(ram_tier_contains(t, &c0) > 0);
	/* a reader's own miss on chunk 2 may take chunk 0 (chunk 1 is the
	 * one before it) */
	get_len(t, &c, &c2, BIG, false);
	cr_expect(ram_tier_contains(t, &c1) > 0, "the reader's miss took the chunk before it");
	cr_expect_eq(ram_tier_contains(t, &c0), 0);
	ram_tier_free(t);
}

/* Chunks read through this epoch go first, the latest first, but not the
 * ones just before the chunk being filled in its object: the read that
 * ended at a chunk's end marked it, and the kernel's read-ahead requests,
 * served out of order, may still ask for its earlier pages.  A read-ahead
 * of chunk 2 takes another object's chunk read through, not chunk 0. */
Test(ram_tier, chunks_read_through_just_before_a_fill_are_not_its_victims)
{
	enum { BIG = 64 * 1024 };
	struct ram_tier *t = ram_tier_new(3 * BIG, BIG, EVICT_LRU);
	struct counter c = { 0 };
	struct chunk_id other = { "other", "e", 0 }, c0 = { "obj", "e", 0 },
			c1 = { "obj", "e", 1 }, c2 = { "obj", "e", 2 };

	cr_assert_not_null(t);
	get_len(t, &c, &other, BIG, true);
	get_len(t, &c, &c0, BIG, true);   /* the latest read through */
	get_len(t, &c, &c1, BIG, false);
	cr_assert_eq(ahead_len(t, &c, &c2, BIG), TFS_OK);
	cr_expect(ram_tier_contains(t, &c0) > 0, "the read-ahead of chunk 2 took chunk 0");
	cr_expect_eq(ram_tier_contains(t, &other), 0);
	ram_tier_free(t);
}

/* Buffers trimmed to the capacity for a reader's fill never take the
 * chunk just before it: the fill has its slot, and the tier runs over by
 * that chunk rather than evict what its reader is finishing (its last
 * pages, asked for out of order, fetched it again, and the second miss
 * counted twice in the SSD policy).  The next fill elsewhere trims back. */
Test(ram_tier, trimming_for_a_fill_spares_the_chunk_before_it)
{
	enum { BIG = 128 * 1024 };
	struct ram_tier *t = ram_tier_new(2 * BIG, BIG, EVICT_LRU);   /* 4 slots */
	struct counter c = { 0 };
	struct chunk_id c0 = { "obj", "e", 0 }, c1 = { "obj", "e", 1 }, c2 = { "obj", "e", 2 },
			x = { "x", "e", 0 };
	struct chunk_ref *held;
	struct tier_stats st;

	cr_assert_not_null(t);
	cr_assert_eq(tier_get(t, &c0, BIG, fill, &c, &held), TFS_OK);   /* still read */
	get_len(t, &c, &c1, BIG, false);
	get_len(t, &c, &c2, BIG, false);
	cr_expect(ram_tier_contains(t, &c1) > 0, "the fill of chunk 2 trimmed chunk 1 away");
	chunk_ref_put(held);
	get_len(t, &c, &x, BIG, false);
	ram_tier_stats(t, &st);
	cr_expect_leq(st.bytes_used, st.capacity, "%llu bytes in a tier of %llu",
		      (unsigned long long)st.bytes_used, (unsigned long long)st.capacity);
	cr_expect_eq(c.fills, 4);
	ram_tier_free(t);
}
