/* Unit tests for src/fs/fs over an in-memory object store: the tree a
 * key set produces, lookups, reads across chunks, staleness, errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_objstore.h"
#include "fs/fs.h"
#include "tiers/chunk_cache.h"
#include "fs/scan.h"
#include "sim/trace.h"

#define SCAN_TRIGGER_FOR_TEST SCAN_TRIGGER

#define CS (64u * 1024)

static struct fake_objstore *store;
static struct tfs_fs *fs;

static void put_pattern(const char *key, size_t len, unsigned seed)
{
	fake_objstore_put_pattern(store, key, len, seed);
}

static void setup(void)
{
	store = fake_objstore_new();
	put_pattern("top.bin", 10, 1);
	put_pattern("a/b/c.txt", 5, 2);
	put_pattern("a/b/", 0, 0);            /* marker */
	put_pattern("a/x", 3, 3);
	put_pattern("x", 4, 4);               /* shadowed by directory x/ */
	put_pattern("x/y", 4, 5);
	put_pattern("h/../evil", 1, 6);
	put_pattern("h//empty", 1, 7);
	put_pattern("h/./dot", 1, 8);
	put_pattern("h/ok", 1, 9);
	put_pattern("big", 3 * CS + 17, 10);
	put_pattern("pfx/inner/f", 2, 11);
}

static struct tfs_fs *mount_fs(const char *prefix, unsigned ttl_ms)
{
	struct fs_config c = {
		.store = &store->base, .prefix = prefix, .metadata_ttl_ms = ttl_ms,
		.chunk_size = CS, .ram_bytes = 8 * CS, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555,
	};
	return fs_new(&c);
}

static void teardown(void)
{
	fs_free(fs);
	objstore_free(&store->base);
}

/* Names of directory ino, joined by ',' with a trailing '/' on dirs. */
static char *list_names(uint64_t ino)
{
	static char out[4096];
	struct fs_dir *d;
	const char *name;
	bool is_dir;

	out[0] = '\0';
	cr_assert_eq(fs_opendir(fs, ino, &d), TFS_OK);
	for (size_t i = 0; fs_dir_entry(d, i, &name, &is_dir); i++) {
		strcat(out, name);
		strcat(out, is_dir ? "/," : ",");
	}
	fs_releasedir(fs, d);
	return out;
}

static uint64_t lookup(uint64_t parent, const char *name, int want_rc)
{
	struct fs_attr a;
	int rc = fs_lookup(fs, parent, name, &a);
	cr_assert_eq(rc, want_rc, "lookup %s: rc %d", name, rc);
	return rc == TFS_OK ? a.ino : 0;
}

TestSuite(fs, .init = setup, .fini = teardown);

Test(fs, root_listing_merges_and_directory_wins)
{
	struct fs_stats st;

	fs = mount_fs("", 60000);
	cr_assert_str_eq(list_names(FS_ROOT_INO), "a/,big,h/,pfx/,top.bin,x/,");
	fs_stats(fs, &st);
	cr_assert_eq(st.shadowed_files, 1);
}

Test(fs, unsafe_keys_left_out_and_counted)
{
	uint64_t h;
	struct fs_stats st;

	fs = mount_fs("", 60000);
	h = lookup(FS_ROOT_INO, "h", TFS_OK);
	cr_assert_str_eq(list_names(h), "ok,");
	fs_stats(fs, &st);
	cr_assert_eq(st.unsafe_keys_skipped, 3);
	lookup(h, "..", TFS_E_NOENT);
	lookup(h, ".", TFS_E_NOENT);
}

Test(fs, marker_makes_directory_not_file)
{
	uint64_t a, b;
	struct fs_attr at;

	fs = mount_fs("", 60000);
	a = lookup(FS_ROOT_INO, "a", TFS_OK);
	cr_assert_str_eq(list_names(a), "b/,x,");
	b = lookup(a, "b", TFS_OK);
	cr_assert_eq(fs_getattr(fs, b, &at), TFS_OK);
	cr_assert(S_ISDIR(at.mode));
	cr_assert_eq(at.mode & 07777, 0555);
	cr_assert_str_eq(list_names(b), "c.txt,");
}

Test(fs, lookup_without_listing_asks_dir_first_then_head)
{
	struct fs_attr a;

	fs = mount_fs("", 60000);
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "x", &a), TFS_OK);
	cr_assert(a.is_dir, "x/ exists, so x is a directory");
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
	cr_assert_not(a.is_dir);
	cr_assert_eq(a.size, 10);
	cr_assert_eq(a.uid, 1);
	cr_assert_eq(a.gid, 2);
	cr_assert_eq(a.mode, S_IFREG | 0444);
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "missing", &a), TFS_E_NOENT);
	cr_assert_eq(store->heads, 2);
}

Test(fs, lookup_uses_fresh_listing_without_requests)
{
	struct fs_attr a;
	int lists, heads;

	fs = mount_fs("", 60000);
	list_names(FS_ROOT_INO);
	lists = store->lists;
	heads = store->heads;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "nope", &a), TFS_E_NOENT);
	cr_assert_eq(store->lists, lists);
	cr_assert_eq(store->heads, heads);
}

Test(fs, transient_errors_are_never_enoent)
{
	struct fs_attr a;
	struct fs_dir *d;

	fs = mount_fs("", 60000);
	store->fail_rc = TFS_E_IO;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_E_IO);
	cr_assert_eq(fs_opendir(fs, FS_ROOT_INO, &d), TFS_E_IO);
	store->fail_rc = 0;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
}

/* ---- listing read-ahead --------------------------------------------------- */

/* t/ with `dirs` class folders c00.. of two files each, and a file. */
static void put_classes(unsigned dirs)
{
	char key[32];

	for (unsigned i = 0; i < dirs; i++) {
		for (unsigned k = 0; k < 2; k++) {
			snprintf(key, sizeof(key), "t/c%02u/f%u", i, k);
			put_pattern(key, 3, i);
		}
	}
	put_pattern("t/z.txt", 1, 1);
}

static struct tfs_fs *mount_list_ahead(unsigned n)
{
	struct fs_config c = {
		.store = &store->base, .metadata_ttl_ms = 60000, .list_ahead = n,
		.chunk_size = CS, .ram_bytes = 8 * CS, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555,
	};
	return fs_new(&c);
}

/* Listings fetched ahead, once there are want of them (10 s at most: the
 * fetches are on their own threads). */
static uint64_t lists_ahead_reach(uint64_t want)
{
	struct fs_stats st;

	for (int i = 0; i < 1000; i++) {
		fs_stats(fs, &st);
		if (st.lists_ahead >= want)
			break;
		usleep(10000);
	}
	return st.lists_ahead;
}

/* A walk of t/ as find does it: t, then each class folder in order. */
static void walk_classes(uint64_t t, unsigned dirs)
{
	char name[16];

	for (unsigned i = 0; i < dirs; i++) {
		snprintf(name, sizeof(name), "c%02u", i);
		cr_assert_str_eq(list_names(lookup(t, name, TFS_OK)), "f0,f1,", "%s", name);
	}
}

Test(fs, opening_a_directory_fetches_its_first_subdirectories_listings)
{
	uint64_t t;
	int before;

	put_classes(10);
	fs = mount_list_ahead(4);
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	before = store->lists;
	cr_assert_str_eq(list_names(t),
			 "c00/,c01/,c02/,c03/,c04/,c05/,c06/,c07/,c08/,c09/,z.txt,");
	/* t's own listing, then c00-c03's: four, no more without an open */
	cr_assert_eq(lists_ahead_reach(4), 4);
	cr_assert_eq(store->lists - before, 5);
	/* opening c00 moves the window: c04 */
	list_names(lookup(t, "c00", TFS_OK));
	cr_assert_eq(lists_ahead_reach(5), 5);
	cr_assert_eq(store->lists - before, 6);
}

Test(fs, a_walk_lists_each_directory_once_and_ahead_of_itself)
{
	uint64_t t;
	int before;

	put_classes(12);
	store->list_delay_ms = 20;   /* the walk overtakes fetches under way */
	fs = mount_list_ahead(4);
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	before = store->lists;
	list_names(t);
	walk_classes(t, 12);
	/* every class folder's listing was fetched ahead, and no open asked
	 * the store again for one on its way */
	cr_assert_eq(lists_ahead_reach(12), 12);
	cr_assert_eq(store->lists - before, 13);
}

Test(fs, without_list_ahead_the_walk_lists_as_it_goes)
{
	uint64_t t;
	int before;
	struct fs_stats st;

	put_classes(6);
	fs = mount_list_ahead(0);
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	before = store->lists;
	list_names(t);
	cr_assert_eq(store->lists - before, 1);
	walk_classes(t, 6);
	cr_assert_eq(store->lists - before, 7);
	fs_stats(fs, &st);
	cr_assert_eq(st.lists_ahead, 0);
}

Test(fs, a_failed_fetch_ahead_leaves_the_open_to_ask_and_report)
{
	uint64_t t, c;
	struct fs_dir *d;

	put_classes(3);
	store->list_fail = "t/c01/";    /* the store fails that one listing */
	fs = mount_list_ahead(4);
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	list_names(t);
	c = lookup(t, "c01", TFS_OK);
	/* its fetch ahead failed, or fails while the open waits: the open
	 * asks once more itself and reports what the store said */
	cr_assert_eq(fs_opendir(fs, c, &d), TFS_E_IO);
	cr_assert_eq(lists_ahead_reach(2), 2);   /* c00 and c02: no fetch under way now */
	store->list_fail = NULL;
	cr_assert_str_eq(list_names(c), "f0,f1,");
	cr_assert_str_eq(list_names(lookup(t, "c02", TFS_OK)), "f0,f1,");
}

Test(fs, a_big_directory_is_left_to_its_open)
{
	char key[32];
	uint64_t t, big;
	struct fs_dir *d;
	const char *name;
	bool is_dir;
	size_t n = 0;
	int before;

	put_classes(1);
	for (int i = 0; i <= 10000; i++) {     /* one more than a listing fetched ahead holds */
		snprintf(key, sizeof(key), "t/big/k%05d", i);
		fake_objstore_put(store, key, "z", 1);
	}
	store->page_size = 1000;
	fs = mount_list_ahead(4);
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	before = store->lists;
	list_names(t);
	/* c00 whole; big up to the page that shows it too big (11 pages) */
	cr_assert_eq(lists_ahead_reach(1), 1);
	for (int i = 0; i < 1000 && store->lists - before < 1 + 1 + 11; i++)
		usleep(10000);
	/* opening t again does not ask for big ahead once more */
	list_names(t);
	cr_assert_eq(store->lists - before, 1 + 1 + 11);
	big = lookup(t, "big", TFS_OK);
	cr_assert_eq(fs_opendir(fs, big, &d), TFS_OK);
	while (fs_dir_entry(d, n, &name, &is_dir))
		n++;
	fs_releasedir(fs, d);
	cr_assert_eq(n, 10001);
	cr_assert_eq(store->lists - before, 1 + 1 + 11 + 11);
	cr_assert_eq(lists_ahead_reach(1), 1);
}

/* t/cNN/sMM/f: a tree three levels deep. */
static void put_deep(unsigned dirs, unsigned subs)
{
	char key[32];

	for (unsigned i = 0; i < dirs; i++)
		for (unsigned k = 0; k < subs; k++) {
			snprintf(key, sizeof(key), "t/c%02u/s%02u/f", i, k);
			put_pattern(key, 3, i);
		}
}

Test(fs, a_deep_walk_lists_each_directory_once)
{
	char name[16];
	uint64_t t;
	int before;

	put_deep(5, 4);
	store->list_delay_ms = 5;
	fs = mount_list_ahead(2);   /* fewer slots than a level's directories */
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	before = store->lists;
	list_names(t);
	for (unsigned i = 0; i < 5; i++) {
		uint64_t c;

		snprintf(name, sizeof(name), "c%02u", i);
		c = lookup(t, name, TFS_OK);
		cr_assert_str_eq(list_names(c), "s00/,s01/,s02/,s03/,");
		for (unsigned k = 0; k < 4; k++) {
			snprintf(name, sizeof(name), "s%02u", k);
			cr_assert_str_eq(list_names(lookup(c, name, TFS_OK)), "f,");
		}
	}
	/* fetches ahead still under way are waited for by the walk's opens,
	 * and none is dropped before its directory is opened */
	cr_assert_eq(store->lists - before, 1 + 5 + 5 * 4);
	cr_assert_gt(lists_ahead_reach(1), 0);
}

Test(fs, unmounting_while_listings_are_fetched_ahead_is_clean)
{
	uint64_t t;
	int after;

	put_deep(3, 2);
	fs = mount_list_ahead(1);    /* one worker */
	t = lookup(FS_ROOT_INO, "t", TFS_OK);
	list_names(t);               /* c00 ahead */
	cr_assert_eq(lists_ahead_reach(1), 1);
	store->list_delay_ms = 200;  /* no fetch under way now */
	/* c00's open fetches s00 and c01 ahead: one under way, one queued
	 * behind it on the one worker, when the mount goes */
	list_names(lookup(t, "c00", TFS_OK));
	fs_free(fs);                 /* the fetch under way ends, the queued one is dropped */
	fs = NULL;
	after = store->lists;
	usleep(300000);
	cr_assert_eq(store->lists, after, "a fetch ahead outlived its mount");
}

Test(fs, prefix_mount_shows_only_subtree)
{
	fs = mount_fs("pfx/", 60000);
	cr_assert_str_eq(list_names(FS_ROOT_INO), "inner/,");
}

Test(fs, pagination_collects_every_page)
{
	char key[32];

	for (int i = 0; i < 2500; i++) {
		snprintf(key, sizeof(key), "many/k%05d", i);
		fake_objstore_put(store, key, "z", 1);
	}
	store->page_size = 1000;
	fs = mount_fs("", 60000);
	{
		uint64_t m = lookup(FS_ROOT_INO, "many", TFS_OK);
		struct fs_dir *d;
		const char *name;
		bool is_dir;
		size_t n = 0;
		int before = store->lists;
		cr_assert_eq(fs_opendir(fs, m, &d), TFS_OK);
		while (fs_dir_entry(d, n, &name, &is_dir))
			n++;
		cr_assert_eq(n, 2500);
		cr_assert_eq(store->lists - before, 3);
		fs_dir_entry(d, 2499, &name, &is_dir);
		cr_assert_str_eq(name, "k02499");
		fs_releasedir(fs, d);
	}
}

static void read_all_check(struct fs_file *f, uint64_t off, size_t size, unsigned seed,
			   size_t want_bytes)
{
	struct fs_read r;
	size_t pos = 0;

	cr_assert_eq(fs_read(fs, f, off, size, &r), TFS_OK);
	cr_assert_eq(r.bytes, want_bytes, "read %zu@%llu got %zu", size, (unsigned long long)off,
		     r.bytes);
	for (size_t i = 0; i < r.n; i++) {
		const unsigned char *p = r.iov[i].iov_base;
		for (size_t j = 0; j < r.iov[i].iov_len; j++, pos++)
			cr_assert_eq(p[j], fake_byte(seed, off + pos), "byte %llu",
				     (unsigned long long)(off + pos));
	}
	fs_read_done(fs, &r);
}

Test(fs, reads_cross_chunks_and_stop_at_eof)
{
	uint64_t ino;
	struct fs_file *f;
	bool keep;
	size_t size = 3 * CS + 17;

	fs = mount_fs("", 60000);
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	read_all_check(f, 0, 100, 10, 100);
	read_all_check(f, CS - 10, 20, 10, 20);                /* boundary */
	read_all_check(f, 1, 2 * CS + 5, 10, 2 * CS + 5);      /* three chunks */
	read_all_check(f, size - 5, 100, 10, 5);               /* EOF */
	read_all_check(f, size, 100, 10, 0);
	read_all_check(f, size + 1000, 100, 10, 0);
	/* 4 chunks exist; each fetched once despite overlapping reads */
	cr_assert_eq(store->gets, 4);
	fs_release(fs, f);
}

/* Read [off, off + size) through f, which must hold the object's bytes. */
static void read_ok(struct fs_file *f, uint64_t off, size_t size)
{
	read_all_check(f, off, size, 10, size);
}

/* A visit, the unit the SSD tier's policy counts, is a handle's pass over
 * a chunk: its reads of the chunk in any order until they add up to the
 * chunk, or until the handle has gone on to two other chunks.  Told by
 * the access trace, whose VISIT field is what fs_read handed the cache. */
Test(fs, a_visit_is_a_handles_pass_over_a_chunk)
{
	static const unsigned char want[] = { 1, 0, 1, 0, 1, 1, 1, 1 };
	char path[] = "/tmp/tierfs-visits-XXXXXX", err[256];
	struct tfs_errinfo ei;
	struct fs_file *f, *g;
	struct trace tr;
	uint64_t ino, records;
	bool keep;
	int fd;

	fs = mount_fs("", 60000);
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_geq(fd = mkstemp(path), 0);
	close(fd);
	cr_assert_eq(fs_trace_start(fs, path, err, sizeof(err)), TFS_OK, "%s", err);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &g, &keep), TFS_OK);
	read_ok(f, CS / 2, CS / 2);        /* chunk 0's second half first: a visit */
	read_ok(f, 0, CS / 2);             /* its first half: the same visit */
	read_ok(f, 0, 100);                /* the chunk read whole: a new one */
	read_ok(f, CS - 10, 20);           /* 0: the same; 1: a visit */
	read_ok(f, 2 * CS, 100);           /* 2: a visit */
	read_ok(f, 200, 100);              /* 0 after two others: a visit */
	read_ok(g, CS / 2, 10);            /* another handle's own visit */
	fs_release(fs, f);
	fs_release(fs, g);
	cr_assert_eq(fs_trace_stop(fs, &records), TFS_OK);
	cr_assert_eq(records, sizeof(want));
	trace_init(&tr);
	cr_assert_eq(trace_read_file(&tr, path, &ei), TFS_OK, "%s", ei.message);
	unlink(path);
	cr_assert_eq(tr.n, sizeof(want));
	for (size_t i = 0; i < tr.n; i++)
		cr_expect_eq(tr.visit[i], want[i], "access %zu: visit %d", i, tr.visit[i]);
	trace_release(&tr);
}

/* ---- stale-if-error ---------------------------------------------------- */

static struct tfs_fs *mount_fs_stale(unsigned ttl_ms, uint64_t max_stale_ms)
{
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = ttl_ms,
		.max_stale_ms = max_stale_ms, .chunk_size = CS, .ram_bytes = 8 * CS,
		.uid = 1, .gid = 2, .file_mode = 0444, .dir_mode = 0555,
	};
	return fs_new(&c);
}

/* Listed, looked up, a file read whole: the state an outage finds. */
static uint64_t learn_and_cache(void)
{
	struct fs_file *f;
	bool keep;
	uint64_t big;

	list_names(FS_ROOT_INO);
	lookup(FS_ROOT_INO, "top.bin", TFS_OK);
	big = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_eq(fs_open(fs, big, &f, &keep), TFS_OK);
	read_all_check(f, 0, 3 * CS + 17, 10, 3 * CS + 17);
	fs_release(fs, f);
	return big;
}

Test(fs, store_unreachable_past_the_ttl_serves_what_was_known)
{
	struct fs_attr a;
	struct fs_file *f;
	struct fs_stats st;
	bool keep;
	uint64_t big;

	fs = mount_fs_stale(20, 60000);
	big = learn_and_cache();
	usleep(40 * 1000);      /* past the TTL */
	for (int i = 0; i < 2; i++) {
		store->fail_rc = i ? TFS_E_IO : TFS_E_CONNECT;
		cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
		cr_assert_eq(a.size, 10);
		cr_assert_eq(fs_getattr(fs, big, &a), TFS_OK);
		cr_assert_eq(a.size, 3 * CS + 17);
		cr_assert_str_eq(list_names(FS_ROOT_INO), "a/,big,h/,pfx/,top.bin,x/,");
		/* a stale listing cannot say a name is absent */
		cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "missing", &a), TFS_E_IO);
		cr_assert_eq(fs_open(fs, big, &f, &keep), TFS_OK);
		read_all_check(f, 0, 3 * CS + 17, 10, 3 * CS + 17);
		fs_release(fs, f);
	}
	fs_stats(fs, &st);
	cr_assert_gt(st.stale_served, 0);
	cr_assert(st.store_down);

	/* back: the next answer ends the outage (after the probe interval) */
	store->fail_rc = 0;
	usleep(1100 * 1000);
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
	fs_stats(fs, &st);
	cr_assert_not(st.store_down);
}

/* A store that comes back refusing (403) has answered: the outage is
 * over, and the refusal is believed, not served around. */
Test(fs, an_outage_ends_with_any_answer_a_403_too)
{
	struct fs_attr a;
	struct fs_stats st;

	fs = mount_fs_stale(20, 60000);
	learn_and_cache();
	usleep(40 * 1000);      /* past the TTL */
	store->fail_rc = TFS_E_CONNECT;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
	fs_stats(fs, &st);
	cr_assert(st.store_down);

	store->fail_rc = TFS_E_ACCESS;
	usleep(1100 * 1000);    /* past the probe interval */
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_E_ACCESS);
	fs_stats(fs, &st);
	cr_assert_not(st.store_down);
}

Test(fs, a_404_during_revalidation_is_believed)
{
	struct fs_attr a;
	struct fs_dir *d;

	fs = mount_fs_stale(20, 60000);
	learn_and_cache();
	usleep(40 * 1000);
	store->fail_rc = TFS_E_NOENT;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_E_NOENT);
	cr_assert_neq(fs_opendir(fs, FS_ROOT_INO, &d), TFS_OK);
}

Test(fs, stale_answers_end_at_max_stale_and_never_with_it_0)
{
	struct fs_attr a;
	struct fs_stats st;

	/* 2 s of stale answers: room for a slow build between learning the
	 * names and the first stale lookup */
	fs = mount_fs_stale(20, 2000);
	learn_and_cache();
	usleep(40 * 1000);
	store->fail_rc = TFS_E_CONNECT;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_OK);
	usleep(2100 * 1000);    /* past the TTL plus --max-stale */
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_E_CONNECT);
	fs_free(fs);

	store->fail_rc = 0;
	fs = mount_fs_stale(20, 0);
	learn_and_cache();
	usleep(40 * 1000);
	store->fail_rc = TFS_E_IO;
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "top.bin", &a), TFS_E_IO);
	fs_stats(fs, &st);
	cr_assert_eq(st.stale_served, 0);
}

Test(fs, changed_object_gives_stale_never_mixed_bytes)
{
	uint64_t ino;
	struct fs_file *f;
	struct fs_read r;
	bool keep;

	fs = mount_fs("", 60000);
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	read_all_check(f, 0, 10, 10, 10);
	put_pattern("big", 3 * CS + 17, 99);                   /* overwritten */
	cr_assert_eq(fs_read(fs, f, 2 * CS, 10, &r), TFS_E_STALE);
	/* the chunk already read is still the old version's, consistently */
	read_all_check(f, 0, 10, 10, 10);
	fs_release(fs, f);
}

Test(fs, reopen_after_ttl_sees_new_version)
{
	uint64_t ino;
	struct fs_file *f;
	bool keep;

	fs = mount_fs("", 0);   /* TTL 0: always revalidate */
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	fs_release(fs, f);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	cr_assert(keep, "same ETag: kernel cache stays valid");
	fs_release(fs, f);
	put_pattern("big", 3 * CS + 17, 42);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	cr_assert_not(keep, "new ETag: kernel cache must be dropped");
	read_all_check(f, 5, 50, 42, 50);
	fs_release(fs, f);
}

Test(fs, forget_frees_nodes_but_not_root)
{
	struct fs_stats st;
	uint64_t a;

	fs = mount_fs("", 60000);
	a = lookup(FS_ROOT_INO, "a", TFS_OK);
	lookup(FS_ROOT_INO, "a", TFS_OK);
	fs_stats(fs, &st);
	cr_assert_eq(st.nodes, 2);
	fs_forget(fs, a, 1);
	fs_stats(fs, &st);
	cr_assert_eq(st.nodes, 2);
	fs_forget(fs, a, 1);
	fs_stats(fs, &st);
	cr_assert_eq(st.nodes, 1);
	fs_forget(fs, FS_ROOT_INO, 100);
	fs_stats(fs, &st);
	cr_assert_eq(st.nodes, 1);
}

Test(fs, empty_directory_from_marker_only)
{
	uint64_t e;

	fake_objstore_put(store, "emptydir/", "", 0);
	fs = mount_fs("", 60000);
	e = lookup(FS_ROOT_INO, "emptydir", TFS_OK);
	cr_assert_str_eq(list_names(e), "");
}

Test(fs, superseded_handle_stops_serving_even_cached_chunks)
{
	uint64_t ino;
	struct fs_file *a, *b;
	struct fs_read r;
	bool keep;

	fs = mount_fs("", 0);   /* TTL 0: every open revalidates */
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &a, &keep), TFS_OK);
	read_all_check(a, 0, 10, 10, 10);                      /* chunk 0 cached */
	put_pattern("big", 3 * CS + 17, 77);
	cr_assert_eq(fs_open(fs, ino, &b, &keep), TFS_OK);     /* learns the new version */
	cr_assert_not(keep);
	/* a's chunk 0 is still in RAM, but the kernel's page cache is shared by
	 * both handles: a must not put old bytes back into it */
	cr_assert_eq(fs_read(fs, a, 0, 10, &r), TFS_E_STALE);
	read_all_check(b, 0, 10, 77, 10);
	fs_release(fs, a);
	fs_release(fs, b);
}

Test(fs, older_listing_never_overrides_newer_head)
{
	uint64_t ino;
	struct fs_dir *d;
	struct fs_attr at;
	struct fs_file *f;
	bool keep;

	fs = mount_fs("", 60000);
	cr_assert_eq(fs_opendir(fs, FS_ROOT_INO, &d), TFS_OK);   /* snapshot: old "big" */
	put_pattern("big", 5, 55);                               /* now 5 bytes */
	fs_free(fs);
	fs = mount_fs("", 0);
	cr_assert_eq(fs_opendir(fs, FS_ROOT_INO, &d), TFS_OK);   /* snapshot at t0 */
	put_pattern("big", 7, 56);                               /* changes after it */
	ino = lookup(FS_ROOT_INO, "big", TFS_OK);                /* TTL 0: HEAD, 7 bytes */
	cr_assert_eq(fs_getattr(fs, ino, &at), TFS_OK);
	cr_assert_eq(at.size, 7);
	/* readdirplus from the older snapshot must not bring back 5 bytes */
	for (size_t i = 0;; i++) {
		const char *name;
		bool is_dir;
		cr_assert(fs_dir_entry(d, i, &name, &is_dir));
		if (strcmp(name, "big") == 0) {
			cr_assert_eq(fs_dir_entry_attr(fs, d, i, &at), TFS_OK);
			break;
		}
	}
	cr_assert_eq(at.size, 7, "stale listing overrode a newer HEAD: size %llu",
		     (unsigned long long)at.size);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	read_all_check(f, 0, 100, 56, 7);
	fs_release(fs, f);
	fs_releasedir(fs, d);
}

Test(fs, chunk_fill_in_parallel_parts_is_byte_exact)
{
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = 60000,
		.chunk_size = 8u << 20, .ram_bytes = 16u << 20, .parallel_gets = 4,
		.file_mode = 0444, .dir_mode = 0555,
	};
	size_t size = (8u << 20) + (5u << 20) + 12345;   /* a full chunk, then 5 MiB + */
	uint64_t ino;
	struct fs_file *f;
	bool keep;
	int gets;

	put_pattern("par", size, 31);
	fs = fs_new(&c);
	ino = lookup(FS_ROOT_INO, "par", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	gets = store->gets;
	read_all_check(f, 0, 1u << 20, 31, 1u << 20);
	/* 8 MiB in 4 parts of 2 MiB */
	cr_assert_eq(store->gets - gets, 4);
	read_all_check(f, (8u << 20) - 100, 1u << 20, 31, 1u << 20);
	/* second chunk, 5 MiB + 12345 bytes: 2 parts (each >= 2 MiB) */
	cr_assert_eq(store->gets - gets, 6);
	read_all_check(f, size - 4000, 1u << 20, 31, 4000);
	read_all_check(f, (11u << 20) + 7, 300000, 31, 300000);
	cr_assert_eq(store->gets - gets, 6, "everything else from RAM");
	fs_release(fs, f);
}

/* ---- listings saved in the SSD tier's index --------------------------- */

#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/tfs_err.h"
#include "tiers/ssd_tier.h"
#include "tmpdir.h"

static struct ssd_tier *ssd_in(const char *dir)
{
	char err[512];
	struct ssd_tier *t = NULL;
	struct ssd_tier_config c = { .dir = dir, .owner = "fake bucket ", .chunk_size = CS,
				     .queue_max = 4 };
	cr_assert_eq(ssd_tier_open(&c, &t, err, sizeof(err)), TFS_OK, "%s", err);
	return t;
}

static struct tfs_fs *mount_fs_ssd(struct ssd_tier *ssd, unsigned ttl_ms)
{
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = ttl_ms,
		.chunk_size = CS, .ram_bytes = 8 * CS, .ssd = ssd, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555,
	};
	return fs_new(&c);
}

Test(fs, saved_listing_serves_a_remount_and_a_corrupt_one_is_ignored)
{
	char dir[64];

	tmpdir_make(dir, sizeof(dir), "fs");
	struct ssd_tier *ssd = ssd_in(dir);
	char *first;

	fs = mount_fs_ssd(ssd, 60000);
	first = strdup(list_names(FS_ROOT_INO));
	cr_assert_eq(store->lists, 1);
	fs_free(fs);

	/* a remount within the TTL: the same names, no LIST, and a lookup
	 * answered from the saved listing (no HEAD either) */
	fs = mount_fs_ssd(ssd, 60000);
	cr_assert_str_eq(list_names(FS_ROOT_INO), first);
	lookup(FS_ROOT_INO, "top.bin", TFS_OK);
	cr_assert_eq(store->lists, 1);
	cr_assert_eq(store->heads, 0);
	fs_free(fs);

	/* a zero TTL never uses a saved listing */
	fs = mount_fs_ssd(ssd, 0);
	list_names(FS_ROOT_INO);
	cr_assert_eq(store->lists, 2);
	fs_free(fs);

	/* corrupt records of every kind: ignored, refetched, never a crash */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	uint32_t magic = 0x544c5331u, one = 1, nine = 9;
	unsigned char junk[4][64];
	size_t jlen[4];
	memset(junk, 0, sizeof(junk));
	jlen[0] = 24;                                         /* bad magic */
	memcpy(junk[1], &magic, 4);                           /* count past the end */
	memcpy(junk[1] + 4, &nine, 4);
	memcpy(junk[1] + 8, &now, 8);
	jlen[1] = 16;
	memcpy(junk[2], &magic, 4);                           /* name longer than the record */
	memcpy(junk[2] + 4, &one, 4);
	memcpy(junk[2] + 8, &now, 8);
	junk[2][17] = 0xff;
	junk[2][18] = 0xff;
	jlen[2] = 40;
	memcpy(junk[3], &magic, 4);                           /* a NUL inside a name */
	memcpy(junk[3] + 4, &one, 4);
	memcpy(junk[3] + 8, &now, 8);
	junk[3][17] = 3;                                      /* name length 3, etag 0 */
	memcpy(junk[3] + 37, "a\0b", 3);
	jlen[3] = 40;
	for (size_t i = 0; i < 4; i++) {
		int lists = store->lists;
		cr_assert_eq(ssd_tier_meta_put(ssd, "dir:", junk[i], jlen[i]), TFS_OK);
		fs = mount_fs_ssd(ssd, 60000);
		cr_assert_str_eq(list_names(FS_ROOT_INO), first, "junk %zu", i);
		cr_assert_eq(store->lists, lists + 1, "junk %zu was used", i);
		fs_free(fs);
	}
	fs = NULL;
	free(first);
	ssd_tier_close(ssd);
	cr_assert_eq(tmpdir_remove(dir), 0);
}

/* ---- read-ahead --------------------------------------------------------- */

#define RA_FILES 20

static struct tfs_fs *mount_ra(unsigned ttl_ms)
{
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = ttl_ms,
		.chunk_size = CS, .ram_bytes = 64 * CS, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555, .parallel_gets = 1,
		.read_ahead = 8 * CS, .read_ahead_files = 4, .read_ahead_mem = 16 * CS,
		.read_ahead_threads = 4,
	};
	return fs_new(&c);
}

static void ra_setup(void)
{
	char key[64];

	store = fake_objstore_new();
	put_pattern("seq", 40 * CS + 5, 21);
	for (int i = 0; i < RA_FILES; i++) {
		snprintf(key, sizeof(key), "imgs/%03d.jpg", i);
		put_pattern(key, CS / 2 + (size_t)i, 100 + (unsigned)i);
	}
}

/* Wait until no read-ahead is queued or in flight (a bound, not a timing
 * assumption: generous for sanitizer builds). */
static void ra_idle(void)
{
	struct fs_stats st;

	for (int i = 0; i < 20000; i++) {
		fs_stats(fs, &st);
		if (st.ra_held == 0)
			return;
		usleep(1000);
	}
	cr_assert_fail("read-ahead still held after 20 s");
}

TestSuite(fs_ra, .init = ra_setup, .fini = teardown);

Test(fs_ra, sequential_reader_is_served_from_read_ahead)
{
	struct tfs_counters cs;
	uint64_t ino, size = 40 * CS + 5;
	struct fs_file *f;
	bool keep;

	fs = mount_ra(60000);
	ino = lookup(FS_ROOT_INO, "seq", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	for (uint64_t off = 0; off < size; off += CS / 4) {
		read_all_check(f, off, CS / 4, 21, off + CS / 4 <= size ? CS / 4 : size - off);
		if (off % (4 * CS) == 0)
			ra_idle();          /* a reader slower than the store */
	}
	ra_idle();
	fs_counters(fs, &cs);
	cr_expect_eq(store->gets, 41, "each chunk fetched once (%d GETs)", store->gets);
	cr_expect_geq(cs.v[TFS_C_RA_USED], 35, "%llu of 41 chunks read ahead and used",
		      (unsigned long long)cs.v[TFS_C_RA_USED]);
	cr_expect_eq(cs.v[TFS_C_RA_WASTED], 0);
	cr_expect_eq(cs.v[TFS_C_RA_ISSUED], cs.v[TFS_C_RA_USED]);
	fs_release(fs, f);
}

/* Read the first `chunks` chunks of name sequentially and stop there
 * (the read-ahead issued beyond them landed, unread), then close it. */
static void read_part_and_close(const char *name, unsigned seed, uint64_t chunks)
{
	struct fs_file *f;
	bool keep;

	cr_assert_eq(fs_open(fs, lookup(FS_ROOT_INO, name, TFS_OK), &f, &keep), TFS_OK);
	for (uint64_t off = 0; off < chunks * CS; off += CS / 4)
		read_all_check(f, off, CS / 4, seed, CS / 4);
	ra_idle();
	fs_release(fs, f);
}

/* Readers that stop midway and close leave chunks read ahead and never
 * read.  They must not count against the read-ahead bound for ever: two
 * such streams hold the whole bound here (8 chunks each, 16 allowed),
 * and a third reader still gets its read-ahead. */
Test(fs_ra, read_ahead_left_by_closed_readers_does_not_stop_the_next)
{
	struct tfs_counters before, after;

	put_pattern("p1", 20 * CS, 31);
	put_pattern("p2", 20 * CS, 32);
	put_pattern("p3", 20 * CS, 33);
	fs = mount_ra(60000);
	read_part_and_close("p1", 31, 5);
	read_part_and_close("p2", 32, 5);
	fs_counters(fs, &before);
	read_part_and_close("p3", 33, 5);
	fs_counters(fs, &after);
	cr_expect_geq(after.v[TFS_C_RA_ISSUED] - before.v[TFS_C_RA_ISSUED], 4,
		      "the third reader got %llu chunks read ahead",
		      (unsigned long long)(after.v[TFS_C_RA_ISSUED] - before.v[TFS_C_RA_ISSUED]));
}

/* A stream's first read-ahead window comes in parts, as the reader's own
 * miss does: the reader catches up with it while the window widens.
 * Further on one GET a chunk.  4 MiB chunks (two parts of the 2 MiB
 * minimum), a window of two chunks: chunk 0 is the reader's miss and
 * chunks 1 and 2 lie within the first window (2 GETs each), chunks 3-7
 * are fetched ahead in one GET each.  The reader waits for the
 * read-ahead after every read, so no chunk is its own miss but the
 * first. */
Test(fs_ra, a_streams_first_window_comes_in_parts_then_one_get_a_chunk, .timeout = 60)
{
	const size_t big = 4u << 20;
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = 60000,
		.chunk_size = big, .ram_bytes = 16 * big, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555, .parallel_gets = 2,
		.read_ahead = 2 * big, .read_ahead_files = 4, .read_ahead_mem = 8 * big,
		.read_ahead_threads = 4,
	};
	uint64_t ino;
	struct fs_file *f;
	bool keep;
	int gets;

	put_pattern("mid", 8 * big, 23);
	fs = fs_new(&c);
	cr_assert_not_null(fs);
	ino = lookup(FS_ROOT_INO, "mid", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	gets = store->gets;
	for (uint64_t off = 0; off < 8 * big; off += big / 4) {
		read_all_check(f, off, big / 4, 23, big / 4);
		ra_idle();
	}
	cr_expect_eq(store->gets - gets, 2 + 2 * 2 + 5,
		     "chunk 0 and the first window in 2 parts, the rest in one GET: %d GETs",
		     store->gets - gets);
	fs_release(fs, f);
}

Test(fs_ra, random_reader_reads_nothing_ahead)
{
	struct tfs_counters cs;
	uint64_t ino, x = 7;
	struct fs_file *f;
	bool keep;

	fs = mount_ra(60000);
	ino = lookup(FS_ROOT_INO, "seq", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	for (int i = 0; i < 200; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = ((x >> 33) % 40) * CS + 100;
		read_all_check(f, off, 1000, 21, 1000);
	}
	ra_idle();
	fs_counters(fs, &cs);
	cr_expect_leq(cs.v[TFS_C_RA_ISSUED], 2, "%llu chunks read ahead",
		      (unsigned long long)cs.v[TFS_C_RA_ISSUED]);
	fs_release(fs, f);
}

Test(fs_ra, directory_read_in_listing_order_is_read_ahead)
{
	struct tfs_counters cs;
	struct fs_stats st;
	uint64_t dir;
	char name[32];

	fs = mount_ra(60000);
	dir = lookup(FS_ROOT_INO, "imgs", TFS_OK);
	list_names(dir);                 /* a listing, as ls or a loader makes */
	for (int i = 0; i < RA_FILES; i++) {
		struct fs_file *f;
		uint64_t ino;
		bool keep;

		snprintf(name, sizeof(name), "%03d.jpg", i);
		ino = lookup(dir, name, TFS_OK);
		cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
		ra_idle();
		read_all_check(f, 0, CS, 100 + (unsigned)i, CS / 2 + (size_t)i);
		fs_release(fs, f);
	}
	fs_counters(fs, &cs);
	fs_stats(fs, &st);
	cr_expect_eq(store->gets, RA_FILES, "one GET per file (%d)", store->gets);
	cr_expect_eq(store->heads, 0, "sizes and ETags came from the listing");
	cr_expect_geq(st.ra_files, RA_FILES - 4, "%llu files read ahead",
		      (unsigned long long)st.ra_files);
	cr_expect_geq(cs.v[TFS_C_RA_USED], RA_FILES - 4);
	cr_expect_eq(cs.v[TFS_C_RA_WASTED], 0);
}

Test(fs_ra, object_changed_after_read_ahead_never_serves_old_bytes)
{
	uint64_t ino;
	struct fs_file *f, *g;
	struct fs_read r;
	bool keep;

	fs = mount_ra(0);                /* every open asks the store */
	ino = lookup(FS_ROOT_INO, "seq", TFS_OK);
	cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
	for (uint64_t off = 0; off < 2 * CS; off += CS / 4)
		read_all_check(f, off, CS / 4, 21, CS / 4);
	ra_idle();                       /* chunks 2.. read ahead: the old version */
	put_pattern("seq", 40 * CS + 5, 77);
	cr_assert_eq(fs_open(fs, ino, &g, &keep), TFS_OK);
	for (uint64_t off = 0; off < 8 * CS; off += CS / 4)
		read_all_check(g, off, CS / 4, 77, CS / 4);
	cr_expect_eq(fs_read(fs, f, 4 * CS, 10, &r), TFS_E_STALE,
		     "the old handle gets STALE, never a mix");
	fs_release(fs, f);
	fs_release(fs, g);
}

Test(fs_ra, forgotten_directory_keeps_its_listing_and_stream)
{
	struct tfs_counters cs;
	uint64_t dir;
	int lists, heads;
	char name[32];

	fs = mount_ra(60000);
	list_names(FS_ROOT_INO);
	dir = lookup(FS_ROOT_INO, "imgs", TFS_OK);
	list_names(dir);
	lists = store->lists;
	heads = store->heads;
	for (int i = 0; i < RA_FILES; i++) {
		struct fs_file *f;
		uint64_t ino;
		bool keep;

		if (i == RA_FILES / 2) {
			/* the kernel trims its inode cache mid-walk */
			fs_forget(fs, dir, 1);
			dir = lookup(FS_ROOT_INO, "imgs", TFS_OK);
		}
		snprintf(name, sizeof(name), "%03d.jpg", i);
		ino = lookup(dir, name, TFS_OK);
		cr_assert_eq(fs_open(fs, ino, &f, &keep), TFS_OK);
		ra_idle();
		read_all_check(f, 0, CS, 100 + (unsigned)i, CS / 2 + (size_t)i);
		fs_release(fs, f);
		fs_forget(fs, ino, 1);
	}
	fs_counters(fs, &cs);
	cr_expect_eq(store->lists, lists, "no listing again");
	cr_expect_eq(store->heads, heads, "no HEAD per file");
	cr_expect_geq(cs.v[TFS_C_RA_USED], RA_FILES - 4, "read-ahead went on (%llu used)",
		      (unsigned long long)cs.v[TFS_C_RA_USED]);
}

Test(fs_ra, stale_listing_is_fetched_again_once_not_a_head_per_file)
{
	uint64_t dir, inos[RA_FILES], t0, elapsed_ms;
	int lists, heads;
	char name[32];

	fs = mount_ra(200);
	dir = lookup(FS_ROOT_INO, "imgs", TFS_OK);
	list_names(dir);
	for (int i = 0; i < RA_FILES; i++) {
		snprintf(name, sizeof(name), "%03d.jpg", i);
		inos[i] = lookup(dir, name, TFS_OK);
	}
	put_pattern("imgs/007.jpg", CS / 3, 555);       /* changed meanwhile */
	usleep(300 * 1000);                              /* everything is stale now */
	lists = store->lists;
	heads = store->heads;
	t0 = clock_mono_us();
	for (int i = 0; i < RA_FILES; i++) {
		struct fs_file *f;
		bool keep;

		cr_assert_eq(fs_open(fs, inos[i], &f, &keep), TFS_OK);
		if (i == 7)
			read_all_check(f, 0, CS, 555, CS / 3);
		else
			read_all_check(f, 0, CS, 100 + (unsigned)i, CS / 2 + (size_t)i);
		fs_release(fs, f);
	}
	/* a slow build may take longer than the TTL, and then the new listing
	 * goes stale too and is fetched again: once per TTL that passed, at
	 * most, and never a HEAD per file */
	elapsed_ms = (clock_mono_us() - t0) / 1000;
	cr_expect_geq(store->lists - lists, 1);
	cr_expect_leq((uint64_t)(store->lists - lists), 2 + elapsed_ms / 200,
		      "%d listings in %llu ms", store->lists - lists,
		      (unsigned long long)elapsed_ms);
	cr_expect_eq(store->heads, heads, "no HEAD per file");
}

/* A mount with directory scans (4 fetchers) and room for them in RAM. */
static struct tfs_fs *mount_scan_fs(void)
{
	struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = 60000,
		.chunk_size = CS, .ram_bytes = 256 * CS, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555, .read_ahead_mem = 128 * CS,
		.scan_threads = 4,
	};
	struct tfs_fs *f = fs_new(&c);

	cr_assert_not_null(f);
	return f;
}

/* A job opening a directory's files once each in shuffled order: after
 * SCAN_TRIGGER of them, the others are fetched in the background (one GET
 * each, no HEAD: sizes from the listing), and the job's reads of them are
 * cache hits with the right bytes. */
Test(fs, shuffled_epoch_is_fetched_ahead_by_the_directory_scan, .timeout = 60)
{
	enum { N = 64 };
	unsigned order[N];
	char name[32];
	uint64_t dir;
	int gets_before;
	struct fs_stats st;

	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "ds/s%03u", i);
		put_pattern(name, 1000 + i, 100 + i);
		order[i] = (i * 29 + 7) % N;     /* a fixed shuffle */
	}
	fs = mount_scan_fs();
	dir = lookup(FS_ROOT_INO, "ds", TFS_OK);
	list_names(dir);                      /* the loader lists it once */
	gets_before = store->gets;
	for (unsigned k = 0; k < SCAN_TRIGGER_FOR_TEST; k++) {
		struct fs_file *f;
		bool keep;
		snprintf(name, sizeof(name), "s%03u", order[k]);
		cr_assert_eq(fs_open(fs, lookup(dir, name, TFS_OK), &f, &keep), TFS_OK);
		read_all_check(f, 0, 1000 + order[k], 100 + order[k], 1000 + order[k]);
		fs_release(fs, f);
	}
	/* the rest comes without the job asking (waited for up to 25 s: a
	 * bound for a slow build, not a speed); a GET is counted when it
	 * starts, the scan's file when its fetch returns: wait for both */
	for (int t = 0; t < 2500; t++) {
		fs_stats(fs, &st);
		if (store->gets - gets_before >= N && st.scan_files >= N - SCAN_TRIGGER_FOR_TEST)
			break;
		usleep(10000);
	}
	cr_expect_eq(store->gets - gets_before, N, "each file fetched once, by the job or the scan");
	fs_stats(fs, &st);
	cr_expect_eq(st.scan_files, N - SCAN_TRIGGER_FOR_TEST);
	int heads = store->heads;
	for (unsigned k = SCAN_TRIGGER_FOR_TEST; k < N; k++) {
		struct fs_file *f;
		bool keep;
		snprintf(name, sizeof(name), "s%03u", order[k]);
		cr_assert_eq(fs_open(fs, lookup(dir, name, TFS_OK), &f, &keep), TFS_OK);
		read_all_check(f, 0, 1000 + order[k], 100 + order[k], 1000 + order[k]);
		fs_release(fs, f);
	}
	cr_expect_eq(store->gets - gets_before, N, "a read after the scan went to the store");
	cr_expect_eq(store->heads, heads, "the scan or the reads sent HEADs");
}

/* Re-reading a few files is not a scan: nothing else is fetched. */
Test(fs, rereading_a_few_files_fetches_nothing_else, .timeout = 30)
{
	char name[32];
	uint64_t dir;

	for (unsigned i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "ds/s%03u", i);
		put_pattern(name, 100, i);
	}
	fs = mount_scan_fs();
	dir = lookup(FS_ROOT_INO, "ds", TFS_OK);
	list_names(dir);
	for (int round = 0; round < 20; round++)
		for (unsigned i = 0; i < 4; i++) {
			struct fs_file *f;
			bool keep;
			snprintf(name, sizeof(name), "s%03u", i);
			cr_assert_eq(fs_open(fs, lookup(dir, name, TFS_OK), &f, &keep), TFS_OK);
			read_all_check(f, 0, 100, i, 100);
			fs_release(fs, f);
		}
	usleep(300000);
	cr_expect_eq(store->gets, 4, "a scan started for a job re-reading 4 files");
}
