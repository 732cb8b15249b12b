/* Unit tests for src/tiers/part_cache: the blocks kept for random
 * readers, their bound, and the ledger an entry keeps past its blocks. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "tiers/part_cache.h"

#define B PART_BLOCK

static struct chunk_id cid(const char *key, uint64_t index)
{
	return (struct chunk_id){ key, "etag1", index };
}

/* a chunk's bytes: byte i is i * 7 + seed, so blocks are told apart */
static unsigned char *chunk_bytes(size_t len, unsigned seed)
{
	unsigned char *p = malloc(len);

	cr_assert_not_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + seed);
	return p;
}

static struct part_entry *acquire(struct part_cache *pc, const struct chunk_id *id, size_t len)
{
	bool waited;
	struct part_entry *e = part_cache_acquire(pc, id, len, &waited);

	cr_assert_not_null(e);
	cr_assert(!waited, "nobody held it");
	return e;
}

Test(part_cache, blocks_kept_are_copied_back_and_the_holes_found)
{
	size_t len = 8 * B + 100;   /* a last block that is short */
	unsigned char *src = chunk_bytes(len, 3), *dst = calloc(1, len);
	struct part_cache *pc = part_cache_new(64 * B);
	struct chunk_id id = cid("k", 0);
	struct part_entry *e = acquire(pc, &id, len);
	size_t s, u;

	cr_assert_eq(part_entry_missing(e, 0, len), len);
	cr_assert(!part_entry_hole(e, len, len, &s, &u), "a hole found at the chunk's end");
	cr_assert_eq(part_entry_put(pc, e, 2 * B, 4 * B, src + 2 * B), TFS_OK);
	cr_assert_eq(part_entry_put(pc, e, 8 * B, len, src + 8 * B), TFS_OK);
	cr_assert_eq(part_entry_bytes(e), 2 * B + 100);
	cr_assert_eq(part_entry_missing(e, 0, len), 6 * B);
	cr_assert_eq(part_entry_missing(e, 2 * B, 4 * B), 0);
	cr_assert(part_entry_hole(e, 0, len, &s, &u));
	cr_assert(s == 0 && u == 2 * B, "first hole [%zu, %zu)", s, u);
	cr_assert(part_entry_hole(e, u, len, &s, &u));
	cr_assert(s == 4 * B && u == 8 * B, "second hole [%zu, %zu)", s, u);
	cr_assert(!part_entry_hole(e, u, len, &s, &u), "no hole after the last block");
	part_entry_copy(e, 2 * B + 5, 2 * B - 5, dst);
	cr_assert(memcmp(dst, src + 2 * B + 5, 2 * B - 5) == 0);
	memset(dst, 0, len);
	part_entry_copy_held(e, dst);
	cr_assert(memcmp(dst + 2 * B, src + 2 * B, 2 * B) == 0);
	cr_assert(memcmp(dst + 8 * B, src + 8 * B, 100) == 0);
	cr_assert_eq(dst[0], 0, "a hole is not written");
	part_cache_release(pc, e, false);

	/* held across releases, and a block put again is kept as it was */
	e = acquire(pc, &id, len);
	cr_assert_eq(part_entry_bytes(e), 2 * B + 100);
	cr_assert_eq(part_entry_put(pc, e, 0, 4 * B, src), TFS_OK);
	cr_assert_eq(part_entry_bytes(e), 4 * B + 100);
	part_cache_release(pc, e, false);
	part_cache_free(pc);
	free(src);
	free(dst);
}

/* Past the bound the entry used longest ago goes, and its ledger comes
 * back with it when it is made again; the blocks do not. */
Test(part_cache, the_bound_lets_the_oldest_go_and_keeps_its_ledger)
{
	size_t len = 4 * B;
	unsigned char *src = chunk_bytes(len, 1);
	struct part_cache *pc = part_cache_new(3 * B);
	struct chunk_id a = cid("a", 0), b = cid("b", 0);
	struct part_cache_stats st;
	uint64_t asked, fetched;
	struct part_entry *e;

	e = acquire(pc, &a, len);
	cr_assert_eq(part_entry_put(pc, e, 0, 2 * B, src), TFS_OK);
	part_entry_account(e, 2 * B, 2 * B);
	part_cache_release(pc, e, false);
	e = acquire(pc, &b, len);
	cr_assert_eq(part_entry_put(pc, e, 0, 2 * B, src), TFS_OK);
	part_entry_account(e, 3 * B, 2 * B);
	part_cache_release(pc, e, false);

	part_cache_stats(pc, &st);
	cr_assert_leq(st.bytes, st.cap, "%llu bytes held over a bound of %llu",
		      (unsigned long long)st.bytes, (unsigned long long)st.cap);
	cr_assert_eq(st.entries, 1);
	cr_assert_eq(st.dropped, 1);
	e = acquire(pc, &b, len);
	cr_assert_eq(part_entry_bytes(e), 2 * B, "the newer entry stays");
	part_cache_release(pc, e, false);

	e = acquire(pc, &a, len);
	cr_assert_eq(part_entry_bytes(e), 0, "its blocks went");
	part_entry_ledger(e, &asked, &fetched);
	cr_assert(asked == 2 * B && fetched == 2 * B, "ledger %llu / %llu",
		  (unsigned long long)asked, (unsigned long long)fetched);
	/* made whole: dropped, and its ledger with it */
	part_cache_release(pc, e, true);
	e = acquire(pc, &a, len);
	part_entry_ledger(e, &asked, &fetched);
	cr_assert(asked == 0 && fetched == 0, "a ledger outlived its chunk made whole");
	part_cache_release(pc, e, false);
	part_cache_free(pc);
	free(src);
}

/* A chunk half of which does not fit the bound is not kept at all (the
 * caller fetches it whole); an entry of another length (an ETag the store
 * reused) starts empty; dropping a key forgets its entries alone, and a
 * held one once it is let go. */
Test(part_cache, entries_too_large_other_lengths_and_drops)
{
	struct part_cache *pc = part_cache_new(2 * B);
	unsigned char *src = chunk_bytes(8 * B, 2);
	struct chunk_id a = cid("dir/a", 0), a1 = cid("dir/a", 1), b = cid("dir/b", 0);
	struct part_cache_stats st;
	struct part_entry *e, *h;
	bool waited;

	cr_assert_null(part_cache_acquire(pc, &a, 5 * B, &waited));
	e = acquire(pc, &a, 4 * B);
	cr_assert_eq(part_entry_put(pc, e, 0, B, src), TFS_OK);
	part_cache_release(pc, e, false);
	e = acquire(pc, &a, 3 * B);
	cr_assert_eq(part_entry_bytes(e), 0, "blocks of another length were kept");
	cr_assert_eq(part_entry_put(pc, e, 0, B, src), TFS_OK);
	part_cache_release(pc, e, false);
	e = acquire(pc, &b, 4 * B);
	cr_assert_eq(part_entry_put(pc, e, 0, B, src), TFS_OK);
	part_cache_release(pc, e, false);

	h = acquire(pc, &a1, 4 * B);
	cr_assert_eq(part_cache_drop(pc, "dir/a"), B, "dir/a's idle entry");
	part_cache_stats(pc, &st);
	cr_assert_eq(st.entries, 2, "dir/b and the held entry of dir/a");
	part_cache_release(pc, h, false);
	part_cache_stats(pc, &st);
	cr_assert_eq(st.entries, 1, "the held entry was forgotten when let go");
	cr_assert_eq(st.bytes, B);
	e = acquire(pc, &b, 4 * B);
	cr_assert_eq(part_entry_bytes(e), B, "dir/b was dropped with dir/a");
	part_cache_release(pc, e, false);
	part_cache_free(pc);
	free(src);
}

/* An entry let go holding no block (its fetch failed) is not kept, so
 * the entries are bounded with the bytes; its ledger is. */
Test(part_cache, an_entry_holding_nothing_is_not_kept)
{
	struct part_cache *pc = part_cache_new(8 * B);
	struct part_cache_stats st;
	uint64_t asked, fetched;
	struct part_entry *e;

	for (uint64_t i = 0; i < 100; i++) {
		struct chunk_id id = cid("k", i);

		e = acquire(pc, &id, 4 * B);
		part_entry_account(e, B, 0);
		part_cache_release(pc, e, false);
	}
	part_cache_stats(pc, &st);
	cr_assert_eq(st.entries, 0, "%llu empty entries kept", (unsigned long long)st.entries);
	struct chunk_id id = cid("k", 99);
	e = acquire(pc, &id, 4 * B);
	part_entry_ledger(e, &asked, &fetched);
	cr_assert(asked == B && fetched == 0);
	part_cache_release(pc, e, false);
	part_cache_free(pc);
}
