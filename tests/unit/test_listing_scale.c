/* test_listing_scale.c - 100,000 keys in one prefix, listed through the
 * file system layer: every name once, in order, in pages of at most
 * 1,000 keys, with bounded memory and time, and lookups from the
 * snapshot.  The store is generated on the fly (key i is "big/kNNNNNN"),
 * so the test measures tierfs, not a fixture; the same listing against
 * radosgw is TIERFS_TEST_BIG_LIST=1 in test_mount (docs/testing.md).
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "fs/fs.h"
#include "s3/objstore.h"

#define N_KEYS 100000u
#define PAGE_MAX 1000u
/* Bounds: generous for an ASan build on a loaded machine.  An entry costs
 * about 100 bytes (400 with ASan's redzones and quarantine), and the
 * listing takes 0.4 s (0.9 s with ASan): 128 MiB or two minutes would
 * mean something grew per key or per page beyond reason. */
#define MEM_MAX (128u << 20)
#define SECS_MAX 120.0

struct gen_store {
	struct objstore base;        /* first member */
	atomic_uint lists, heads;
	atomic_uint over_page;       /* LISTs that asked for more than PAGE_MAX */
};

static int gen_head(struct objstore *os, const char *key, struct obj_meta *out,
		    struct tfs_errinfo *ei)
{
	struct gen_store *s = (struct gen_store *)os;
	unsigned i;
	char tail;

	atomic_fetch_add(&s->heads, 1);
	if (sscanf(key, "big/k%6u%c", &i, &tail) != 1 || i >= N_KEYS)
		return TFS_E_NOENT;
	memset(out, 0, sizeof(*out));
	out->size = i % 1000;
	out->mtime = 1700000000;
	snprintf(out->etag, sizeof(out->etag), "\"e%u\"", i);
	return TFS_OK;
}

static int gen_list(struct objstore *os, const char *prefix, const char *delim, const char *token,
		    unsigned max_keys, struct obj_list_page **out, struct tfs_errinfo *ei)
{
	struct gen_store *s = (struct gen_store *)os;
	struct obj_list_page *p = calloc(1, sizeof(*p));
	unsigned start = token ? (unsigned)strtoul(token, NULL, 10) : 0, n;

	atomic_fetch_add(&s->lists, 1);
	if (max_keys == 0 || max_keys > PAGE_MAX)
		atomic_fetch_add(&s->over_page, 1);
	cr_assert_not_null(p);
	if (strcmp(prefix, "") == 0) {
		p->prefixes = calloc(1, sizeof(*p->prefixes));
		p->prefixes[0].prefix = strdup("big/");
		p->prefixes[0].prefix_len = 4;
		p->n_prefixes = 1;
	} else if (strcmp(prefix, "big/") == 0) {
		n = N_KEYS - start < max_keys ? N_KEYS - start : max_keys;
		p->entries = calloc(n ? n : 1, sizeof(*p->entries));
		for (unsigned k = 0; k < n; k++) {
			struct obj_list_entry *e = &p->entries[k];
			unsigned i = start + k;
			char key[32];

			e->key_len = (size_t)snprintf(key, sizeof(key), "big/k%06u", i);
			e->key = strdup(key);
			e->meta.size = i % 1000;
			e->meta.mtime = 1700000000;
			snprintf(e->meta.etag, sizeof(e->meta.etag), "\"e%u\"", i);
		}
		p->n_entries = n;
		if (start + n < N_KEYS) {
			char t[16];
			snprintf(t, sizeof(t), "%u", start + n);
			p->truncated = true;
			p->next_token = strdup(t);
		}
	}
	*out = p;
	return TFS_OK;
}

static void gen_free(struct objstore *os)
{
	(void)os;
}

static const struct objstore_ops gen_ops = { .head = gen_head, .list = gen_list,
					     .free = gen_free };

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(listing_scale, hundred_thousand_keys_in_one_prefix, .timeout = 600)
{
	static struct gen_store store = { .base.ops = &gen_ops };
	struct fs_config c = {
		.store = &store.base, .prefix = "", .metadata_ttl_ms = 600000,
		.chunk_size = 1u << 20, .ram_bytes = 8u << 20, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555,
	};
	struct tfs_fs *fs = fs_new(&c);
	struct fs_attr a, big;
	struct fs_dir *d;
	const char *name;
	bool is_dir;
	size_t n = 0;
	char want[32];

	cr_assert_not_null(fs);
	cr_assert_eq(fs_lookup(fs, FS_ROOT_INO, "big", &big), TFS_OK);
	cr_assert(big.is_dir);
	long rss0 = rss_bytes();
	double t0 = now();
	cr_assert_eq(fs_opendir(fs, big.ino, &d), TFS_OK);
	for (; fs_dir_entry(d, n, &name, &is_dir); n++) {
		snprintf(want, sizeof(want), "k%06zu", n);
		if (strcmp(name, want) != 0 || is_dir)
			cr_assert_fail("entry %zu is %s%s, want %s", n, name, is_dir ? "/" : "", want);
	}
	double secs = now() - t0;
	long grew = rss_bytes() - rss0;
	unsigned lists = atomic_load(&store.lists);

	cr_log_info("100,000 keys listed in %.2f s, %u LISTs, RSS +%ld KiB", secs, lists,
		    grew / 1024);
	cr_expect_eq(n, N_KEYS, "%zu entries listed", n);
	cr_expect_eq(atomic_load(&store.over_page), 0, "a LIST asked for more than %u keys",
		     PAGE_MAX);
	/* the root, then the 100 pages of big/ */
	cr_expect_eq(lists, 1 + N_KEYS / PAGE_MAX, "%u LISTs", lists);
	cr_expect_lt(grew, (long)MEM_MAX, "listing grew RSS by %ld bytes", grew);
	cr_expect_lt(secs, SECS_MAX, "listing took %.1f s", secs);

	/* lookups come from the snapshot: no more LISTs, no HEADs */
	unsigned heads = atomic_load(&store.heads);
	cr_assert_eq(fs_lookup(fs, big.ino, "k000000", &a), TFS_OK);
	cr_assert_eq(fs_lookup(fs, big.ino, "k099999", &a), TFS_OK);
	cr_expect_eq(a.size, 99999u % 1000);
	cr_expect_eq(fs_lookup(fs, big.ino, "k100000", &a), TFS_E_NOENT);
	cr_expect_eq(atomic_load(&store.lists), lists, "a lookup listed again");
	cr_expect_eq(atomic_load(&store.heads), heads, "a lookup asked HEAD");
	fs_releasedir(fs, d);
	fs_free(fs);
}
