/* Unit tests for src/tiers/cache_index: records, scans, blobs, identity, lock. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "tiers/cache_index.h"
#include "tmpdir.h"

static char dir[64];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "ix");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(cache_index, .init = setup, .fini = teardown);

static struct cache_index *ix_open(void)
{
	struct cache_index *ix = NULL;
	char err[512];
	int rc = cache_index_open(dir, &ix, err, sizeof(err));

	cr_assert_eq(rc, TFS_OK, "open: %s", err);
	return ix;
}

static struct cache_index_rec rec_make(uint64_t n)
{
	struct cache_index_rec r;

	memset(&r, 0, sizeof(r));
	r.block_size = 4096;
	r.data_len = n * 4096 - 1;
	r.nblocks = (uint32_t)n;
	for (uint32_t i = 0; i < r.nblocks; i++)
		r.sums[i] = 0x01234567u ^ (uint32_t)(n * 31 + i);
	r.hits = (uint32_t)n;
	r.last_access = 1700000000 + n;
	r.policy_stat = (uint32_t)(n * 3);
	return r;
}

static void rec_expect(const struct cache_index_rec *a, const struct cache_index_rec *b)
{
	cr_assert_eq(a->data_len, b->data_len);
	cr_assert_eq(a->block_size, b->block_size);
	cr_assert_eq(a->nblocks, b->nblocks);
	cr_assert_eq(memcmp(a->sums, b->sums, 4 * (size_t)a->nblocks), 0);
	cr_assert_eq(a->hits, b->hits);
	cr_assert_eq(a->last_access, b->last_access);
	cr_assert_eq(a->policy_stat, b->policy_stat);
}

Test(cache_index, put_get_delete)
{
	struct cache_index *ix = ix_open();
	struct chunk_id id = { "dir/obj", "\"etag1\"", 42 }, other = { "dir/obj", "\"etag1\"", 43 };
	struct cache_index_rec r = rec_make(7), got;

	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_MISS);
	cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_OK);
	rec_expect(&got, &r);
	cr_assert_eq(cache_index_chunk_get(ix, &other, &got), TFS_MISS);
	r.hits = 99;
	cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_OK);
	cr_assert_eq(got.hits, 99);
	cr_assert_eq(cache_index_chunk_del(ix, &id), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_MISS);
	cr_assert_eq(cache_index_chunk_del(ix, &id), TFS_OK);   /* absent: still fine */
	cache_index_close(ix);
}

Test(cache_index, long_key_uses_heap_path)
{
	struct cache_index *ix = ix_open();
	char key[3000];
	struct chunk_id id = { key, "e", 1 };
	struct cache_index_rec r = rec_make(1), got;

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_OK);
	rec_expect(&got, &r);
	cache_index_close(ix);
}

struct seen {
	int n;
	char keys[16][32];
	char etags[16][16];
	uint64_t idx[16];
};

static int collect(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	struct seen *s = ctx;

	cr_assert_lt(s->n, 16);
	snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", id->key);
	snprintf(s->etags[s->n], sizeof(s->etags[0]), "%s", id->etag);
	s->idx[s->n] = id->index;
	s->n++;
	return 0;
}

static int stop_at_two(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	int *n = ctx;
	return ++*n == 2 ? 77 : 0;
}

Test(cache_index, scan_all_and_scan_one_key_without_prefix_leaks)
{
	struct cache_index *ix = ix_open();
	struct cache_index_rec r = rec_make(1);
	const char *keys[] = { "a", "ab", "a/b", "b" };
	struct seen s = { 0 };
	int n = 0;

	for (int k = 0; k < 4; k++)
		for (uint64_t i = 0; i < 2; i++) {
			struct chunk_id id = { keys[k], "e1", i };
			cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
		}
	{
		struct chunk_id v2 = { "a", "e2", 300 };   /* another version of "a" */
		cr_assert_eq(cache_index_chunk_put(ix, &v2, &r), TFS_OK);
	}
	/* blobs and identity live beside chunk records but are never scanned */
	cr_assert_eq(cache_index_meta_put(ix, "a", "x", 1), TFS_OK);
	cr_assert_eq(cache_index_identity_put(ix, 1, "me", 4096), TFS_OK);

	cr_assert_eq(cache_index_chunk_scan(ix, collect, &s), TFS_OK);
	cr_assert_eq(s.n, 9);

	memset(&s, 0, sizeof(s));
	cr_assert_eq(cache_index_chunk_scan_key(ix, "a", collect, &s), TFS_OK);
	cr_assert_eq(s.n, 3);
	for (int i = 0; i < s.n; i++)
		cr_assert_str_eq(s.keys[i], "a");
	/* one version's chunks in index order (big-endian index) */
	cr_assert_str_eq(s.etags[0], "e1");
	cr_assert_eq(s.idx[0], 0);
	cr_assert_eq(s.idx[1], 1);
	cr_assert_str_eq(s.etags[2], "e2");
	cr_assert_eq(s.idx[2], 300);

	memset(&s, 0, sizeof(s));
	cr_assert_eq(cache_index_chunk_scan_key(ix, "a/b", collect, &s), TFS_OK);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.keys[0], "a/b");

	memset(&s, 0, sizeof(s));
	cr_assert_eq(cache_index_chunk_scan_key(ix, "nothing", collect, &s), TFS_OK);
	cr_assert_eq(s.n, 0);

	/* a non-zero callback result stops the scan and is returned */
	cr_assert_eq(cache_index_chunk_scan(ix, stop_at_two, &n), 77);
	cr_assert_eq(n, 2);
	cache_index_close(ix);
}

static int delete_each(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	cr_assert_eq(cache_index_chunk_del(ctx, id), TFS_OK);
	return 0;
}

Test(cache_index, scan_callback_may_delete)
{
	struct cache_index *ix = ix_open();
	struct cache_index_rec r = rec_make(2);
	struct seen s = { 0 };

	for (uint64_t i = 0; i < 10; i++) {
		struct chunk_id id = { "k", "e", i };
		cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	}
	cr_assert_eq(cache_index_chunk_scan(ix, delete_each, ix), TFS_OK);
	cr_assert_eq(cache_index_chunk_scan(ix, collect, &s), TFS_OK);
	cr_assert_eq(s.n, 0);
	cache_index_close(ix);
}

Test(cache_index, batch_puts_and_deletes_atomically)
{
	struct cache_index *ix = ix_open();
	struct cache_index_batch *b = cache_index_batch_new();
	struct cache_index_rec r = rec_make(3), got;
	struct chunk_id a = { "k", "e", 1 }, c = { "k", "e", 2 };

	cr_assert_not_null(b);
	cr_assert_eq(cache_index_chunk_put(ix, &c, &r), TFS_OK);
	cache_index_batch_chunk_put(b, &a, &r);
	cache_index_batch_chunk_del(b, &c);
	cr_assert_eq(cache_index_batch_count(b), 2);
	/* nothing visible before the commit */
	cr_assert_eq(cache_index_chunk_get(ix, &a, &got), TFS_MISS);
	cr_assert_eq(cache_index_chunk_get(ix, &c, &got), TFS_OK);
	cr_assert_eq(cache_index_batch_commit(ix, b), TFS_OK);
	cr_assert_eq(cache_index_batch_count(b), 0);
	cr_assert_eq(cache_index_chunk_get(ix, &a, &got), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &c, &got), TFS_MISS);
	cache_index_batch_free(b);
	cache_index_close(ix);
}

Test(cache_index, meta_blobs)
{
	struct cache_index *ix = ix_open();
	size_t big = 1u << 20, len = 123;
	unsigned char *v = malloc(big);
	void *out = NULL;

	for (size_t i = 0; i < big; i++)
		v[i] = (unsigned char)(i * 7);
	cr_assert_eq(cache_index_meta_get(ix, "dir/", &out, &len), TFS_MISS);
	cr_assert_null(out);
	cr_assert_eq(len, 0);
	cr_assert_eq(cache_index_meta_put(ix, "dir/", v, big), TFS_OK);
	cr_assert_eq(cache_index_meta_get(ix, "dir/", &out, &len), TFS_OK);
	cr_assert_eq(len, big);
	cr_assert_eq(memcmp(out, v, big), 0);
	free(out);
	cr_assert_eq(cache_index_meta_put(ix, "empty", NULL, 0), TFS_OK);
	cr_assert_eq(cache_index_meta_get(ix, "empty", &out, &len), TFS_OK);
	cr_assert_not_null(out);
	cr_assert_eq(len, 0);
	free(out);
	cr_assert_eq(cache_index_meta_del(ix, "dir/"), TFS_OK);
	cr_assert_eq(cache_index_meta_get(ix, "dir/", &out, &len), TFS_MISS);
	/* a blob name never collides with a chunk record of the same text */
	{
		struct chunk_id id = { "empty", "e", 0 };
		struct cache_index_rec got;
		cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_MISS);
	}
	free(v);
	cache_index_close(ix);
}

Test(cache_index, reopen_keeps_records_blobs_and_identity)
{
	struct cache_index *ix = ix_open();
	struct chunk_id id = { "obj", "e", 5 };
	struct cache_index_rec r = rec_make(5), got;
	uint32_t format = 0;
	uint64_t cs = 0;
	char *owner = NULL;
	void *v = NULL;
	size_t len = 0;

	cr_assert_eq(cache_index_identity_get(ix, &format, &owner, &cs), TFS_MISS);
	cr_assert_null(owner);
	cr_assert_eq(cache_index_identity_put(ix, 3, "https://s3.example bucket pfx/", 8u << 20),
		     TFS_OK);
	cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	cr_assert_eq(cache_index_meta_put(ix, "m1", "hello", 5), TFS_OK);
	cache_index_close(ix);

	ix = ix_open();
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_OK);
	rec_expect(&got, &r);
	cr_assert_eq(cache_index_meta_get(ix, "m1", &v, &len), TFS_OK);
	cr_assert_eq(len, 5);
	cr_assert_eq(memcmp(v, "hello", 5), 0);
	free(v);
	cr_assert_eq(cache_index_identity_get(ix, &format, &owner, &cs), TFS_OK);
	cr_assert_eq(format, 3);
	cr_assert_str_eq(owner, "https://s3.example bucket pfx/");
	cr_assert_eq(cs, 8u << 20);
	free(owner);

	/* clear empties every kind of record */
	cr_assert_eq(cache_index_clear(ix), TFS_OK);
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_MISS);
	cr_assert_eq(cache_index_meta_get(ix, "m1", &v, &len), TFS_MISS);
	cr_assert_eq(cache_index_identity_get(ix, &format, &owner, &cs), TFS_MISS);
	cache_index_close(ix);
}

Test(cache_index, second_open_is_refused_as_in_use)
{
	struct cache_index *ix = ix_open(), *ix2 = (void *)1;
	char err[512], want[256];
	int rc = cache_index_open(dir, &ix2, err, sizeof(err));

	cr_assert_eq(rc, TFS_E_ACCESS);
	cr_assert_null(ix2);
	snprintf(want, sizeof(want), "cache directory %s is in use by another tierfs", dir);
	cr_assert_str_eq(err, want);
	cache_index_close(ix);
	/* released at close: opens again */
	ix = ix_open();
	cache_index_close(ix);
}

Test(cache_index, destroy_then_open_is_empty)
{
	struct cache_index *ix = ix_open();
	struct chunk_id id = { "obj", "e", 5 };
	struct cache_index_rec r = rec_make(5), got;
	char err[256];

	cr_assert_eq(cache_index_chunk_put(ix, &id, &r), TFS_OK);
	cache_index_close(ix);
	cr_assert_eq(cache_index_destroy(dir, err, sizeof(err)), TFS_OK, "%s", err);
	ix = ix_open();
	cr_assert_eq(cache_index_chunk_get(ix, &id, &got), TFS_MISS);
	cache_index_close(ix);
}

Test(cache_index, unopenable_path_is_an_error_not_a_crash)
{
	struct cache_index *ix = (void *)1;
	char err[512];
	FILE *f;
	char path[128];

	/* index is a regular file: RocksDB cannot make a database there */
	snprintf(path, sizeof(path), "%s/index", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(cache_index_open(dir, &ix, err, sizeof(err)), TFS_E_IO);
	cr_assert_null(ix);
	cr_assert(strstr(err, "cannot open the cache index") != NULL, "%s", err);
}
