/* test_readahead_mount.c - read-ahead on a real mount: a sequential reader gets
 * its chunks read ahead and every byte exact, each chunk fetched once; a
 * directory read in listing order has its next files fetched before they
 * are opened; a random reader reads nothing ahead; failures of read-ahead
 * GETs cost the reader nothing but time.
 *
 * Mounts go through the proxy with --chunk-size 1M --parallel-gets 1, so
 * one chunk fill is one object GET the proxy counts (object_GET leaves
 * LISTs out).  No timing is asserted: read-ahead that comes late is still
 * counted used.
 */
#include "harness.h"

#include <json-c/json.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEQ_KEY "seq.bin"
#define SEQ_SEED 0x5e9
#define SEQ_SIZE (32 * IT_MIB + 77)
#define SEQ_CHUNKS 33
#define N_IMGS 40
#define IMG_SIZE (100 * 1024)
#define N_CLASSES 12          /* walk/cNN/: class folders of two files */

static struct it_env env;
static struct it_bucket bucket;
static struct it_proxy proxy;
static struct it_mount mnt;

static void ra_init(void)
{
	struct it_obj objs[N_IMGS];
	char keys[N_IMGS][32];

	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "ra", &bucket), 0, "create bucket");
	cr_assert_eq(it_put_gen(&bucket, SEQ_KEY, SEQ_SEED, SEQ_SIZE), 0);
	for (int i = 0; i < N_IMGS; i++) {
		it_fmt(keys[i], sizeof(keys[i]), "imgs/%03d.jpg", i);
		objs[i] = (struct it_obj){ keys[i], 1000 + (uint64_t)i, IMG_SIZE + (uint64_t)i };
	}
	cr_assert_eq(it_put_many(&bucket, objs, N_IMGS, 8), 0);
	for (int i = 0; i < 2 * N_CLASSES; i++) {
		it_fmt(keys[i], sizeof(keys[i]), "walk/c%02d/%d.jpg", i / 2, i % 2);
		objs[i] = (struct it_obj){ keys[i], 3000 + (uint64_t)i, 1000 + (uint64_t)i };
	}
	cr_assert_eq(it_put_many(&bucket, objs, 2 * N_CLASSES, 8), 0);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
}

static void ra_fini(void)
{
	it_cleanup();
	it_proxy_stop(&proxy);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(readahead, .init = ra_init, .fini = ra_fini, .timeout = 180);

static void mount_ra(const char *const *extra)
{
	const char *opts[24] = { "--chunk-size", "1M", "--parallel-gets", "1", "--ram-size", "64M",
				 "-v" };
	size_t n = 7;
	char src[128];

	for (size_t i = 0; extra && extra[i] && n < 23; i++)
		opts[n++] = extra[i];
	opts[n] = NULL;
	it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	if (it_mount(&env, src, proxy.url, opts, &mnt) != 0)
		cr_assert_fail("mount failed (status %d): %s", mnt.status, it_mount_log(&mnt));
	it_proxy_reset_stats(&proxy);
}


/* Read `path` front to back in `piece`-byte read()s; compare with the
 * generator (seed, size). */
static void read_seq_exact(const char *rel, uint64_t seed, uint64_t size, size_t piece)
{
	char p[PATH_MAX];
	char *buf = malloc(piece);
	uint64_t off = 0;
	int fd;

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, rel);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", rel, strerror(errno));
	for (;;) {
		ssize_t r = read(fd, buf, piece);
		cr_assert_geq(r, 0, "read %s at %llu: %s", rel, (unsigned long long)off,
			      strerror(errno));
		if (r == 0)
			break;
		int64_t bad = it_gen_mismatch(seed, off, buf, (size_t)r);
		cr_assert_eq(bad, -1, "%s: wrong byte at %llu", rel,
			     (unsigned long long)(off + (uint64_t)bad));
		off += (uint64_t)r;
	}
	cr_assert_eq(off, size, "%s: %llu bytes, want %llu", rel, (unsigned long long)off,
		     (unsigned long long)size);
	close(fd);
	free(buf);
}

Test(readahead, sequential_reader_is_read_ahead_exact_and_fetched_once)
{
	mount_ra(NULL);
	it_drop_caches();
	read_seq_exact(SEQ_KEY, SEQ_SEED, SEQ_SIZE, 256 * 1024);
	long long used = it_daemon_stat(&mnt, "readahead.used");
	long long issued = it_daemon_stat(&mnt, "readahead.issued");
	cr_expect_geq(used, SEQ_CHUNKS / 2, "%lld of %d chunks read ahead and used", used,
		      SEQ_CHUNKS);
	cr_expect_eq(it_daemon_stat(&mnt, "readahead.wasted"), 0);
	cr_expect_leq(issued, SEQ_CHUNKS);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), SEQ_CHUNKS,
		     "each chunk fetched once, by the reader or ahead of it");
	it_unmount_ok(&env, &mnt);
}

Test(readahead, directory_in_listing_order_is_fetched_before_opened)
{
	char rel[64];
	DIR *d;
	char p[PATH_MAX];
	unsigned listed = 0;

	mount_ra(NULL);
	it_fmt(p, sizeof(p), "%s/imgs", mnt.dir);
	d = opendir(p);
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));)
		listed += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(listed, N_IMGS);
	for (int i = 0; i < N_IMGS; i++) {
		it_fmt(rel, sizeof(rel), "imgs/%03d.jpg", i);
		read_seq_exact(rel, 1000 + (uint64_t)i, IMG_SIZE + (uint64_t)i, 64 * 1024);
	}
	long long files = it_daemon_stat(&mnt, "readahead.files");
	long long used = it_daemon_stat(&mnt, "readahead.used");
	cr_expect_geq(files, N_IMGS - 8, "%lld of %d files read ahead", files, N_IMGS);
	cr_expect_geq(used, N_IMGS - 8, "%lld read ahead and used", used);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), N_IMGS, "one GET per file");
	cr_expect_eq(it_proxy_stat(&proxy, "HEAD"), 0, "sizes and ETags from the listing");
	it_unmount_ok(&env, &mnt);
}

/* LISTs the proxy saw (its GETs that are not an object's). */
static long long proxy_lists(void)
{
	return it_proxy_stat(&proxy, "GET") - it_proxy_stat(&proxy, "object_GET");
}

/* A walk of walk/ as find does it, each class folder's names and first
 * file's bytes checked. */
static void walk_classes(void)
{
	char p[PATH_MAX], rel[64];

	for (int c = 0; c < N_CLASSES; c++) {
		unsigned listed = 0;
		DIR *d;

		it_fmt(p, sizeof(p), "%s/walk/c%02d", mnt.dir, c);
		d = opendir(p);
		cr_assert_not_null(d, "opendir %s: %s", p, strerror(errno));
		for (struct dirent *e; (e = readdir(d));)
			listed += e->d_name[0] != '.';
		closedir(d);
		cr_assert_eq(listed, 2, "walk/c%02d: %u names", c, listed);
		it_fmt(rel, sizeof(rel), "walk/c%02d/0.jpg", c);
		read_seq_exact(rel, 3000 + 2 * (uint64_t)c, 1000 + 2 * (uint64_t)c, 4096);
	}
}

/* Listings of walk/ and its class folders: with listing read-ahead, the
 * class folders' are fetched before the walk opens them, and no open asks
 * the store for one a second time; without it, each open fetches its
 * own.  Either way every directory is listed once. */
static void walk_lists(bool ahead)
{
	const char *off[] = { "--list-ahead", "0", NULL };
	char p[PATH_MAX];
	struct stat st;
	DIR *d;

	mount_ra(ahead ? NULL : off);
	it_fmt(p, sizeof(p), "%s/walk", mnt.dir);
	cr_assert_eq(stat(p, &st), 0, "stat walk: %s", strerror(errno));
	it_proxy_reset_stats(&proxy);   /* walk/ found: its listing and its folders' left */
	/* a store some way off: the walk overtakes fetches under way */
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=30", NULL, 0), 200);
	d = opendir(p);
	cr_assert_not_null(d, "opendir walk: %s", strerror(errno));
	while (readdir(d))
		;
	closedir(d);
	walk_classes();
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=0", NULL, 0), 200);
	cr_expect_eq(proxy_lists(), 1 + N_CLASSES, "%lld LISTs for %d directories",
		     proxy_lists(), 1 + N_CLASSES);
	cr_expect_eq(it_daemon_stat(&mnt, "readahead.listings"), ahead ? N_CLASSES : 0);
	it_unmount_ok(&env, &mnt);
}

Test(readahead, a_walk_has_its_next_listings_fetched_ahead_once)
{
	walk_lists(true);
}

Test(readahead, list_ahead_off_lists_as_the_walk_goes)
{
	walk_lists(false);
}

Test(readahead, random_reader_reads_nothing_ahead)
{
	char p[PATH_MAX];
	char *buf = malloc(64 * 1024);
	uint64_t x = 12345;
	int fd;

	mount_ra(NULL);
	it_drop_caches();
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, SEQ_KEY);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	for (int i = 0; i < 60; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = ((x >> 33) % 32) * IT_MIB + 4096;
		ssize_t r = pread(fd, buf, 64 * 1024, (off_t)off);
		cr_assert_eq(r, 64 * 1024);
		cr_assert_eq(it_gen_mismatch(SEQ_SEED, off, buf, (size_t)r), -1);
	}
	close(fd);
	free(buf);
	long long issued = it_daemon_stat(&mnt, "readahead.issued");
	cr_expect_leq(issued, 2, "%lld chunks read ahead for a random reader", issued);
	it_unmount_ok(&env, &mnt);
}

Test(readahead, off_means_off)
{
	const char *extra[] = { "--read-ahead", "0", NULL };

	mount_ra(extra);
	it_drop_caches();
	read_seq_exact(SEQ_KEY, SEQ_SEED, SEQ_SIZE, IT_MIB);
	cr_expect_eq(it_daemon_stat(&mnt, "readahead.issued"), 0);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), SEQ_CHUNKS);
	it_unmount_ok(&env, &mnt);
}

Test(readahead, failed_read_ahead_gets_cost_the_reader_nothing_but_time)
{
	mount_ra(NULL);
	it_drop_caches();
	/* resets mid-body and 503s on a share of the GETs, read-ahead's and
	 * the reader's alike: retried or dropped, never wrong bytes */
	cr_assert_eq(it_proxy_fault(&proxy, "kind=reset&count=6&method=GET&after=1000"), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=6&method=GET"), 0);
	read_seq_exact(SEQ_KEY, SEQ_SEED, SEQ_SIZE, 256 * 1024);
	cr_expect_gt(it_proxy_stat(&proxy, "faults"), 0, "the faults fired");
	cr_expect_eq(it_daemon_stat(&mnt, "readahead.wasted"), 0);
	it_proxy_clear(&proxy);
	it_unmount_ok(&env, &mnt);
}

/* A job reading the directory's files once each in a shuffled order:
 * after 16 of them the directory scan fetches the others ahead (the proxy
 * answers after 50 ms, so it has time to), every byte is exact, and no
 * file is fetched twice (the scan and the reader share fills). */
static void loader_epoch(const int *order, bool plan);

Test(readahead, shuffled_epoch_is_fetched_ahead_once)
{
	char out[256];
	int order[N_IMGS];

	mount_ra(NULL);
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=50", out, sizeof(out)), 200);
	for (int i = 0; i < N_IMGS; i++)
		order[i] = (i * 17 + 5) % N_IMGS;   /* 17 is prime to 40: a permutation */
	loader_epoch(order, false);
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=0", out, sizeof(out)), 200);
	long long scanned = it_daemon_stat(&mnt, "readahead.scan_files");
	cr_expect_gt(scanned, 0, "the scan fetched nothing ahead");
	cr_expect_leq(scanned, N_IMGS - 16, "the scan fetched files already opened");
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), N_IMGS, "a file was fetched twice");
	it_unmount_ok(&env, &mnt);
}

/* A dataset of class folders, TOP/cNN/NN.jpg: n folders of files each;
 * file k = c * files + i has size + k bytes made from seed0 + k. */
struct folders {
	const char *top;
	int n, files;
	uint64_t size, seed0;
};

static void folder_file(const struct folders *f, int c, int i, char *rel, size_t cap,
			uint64_t *seed, uint64_t *size)
{
	uint64_t k = (uint64_t)(c * f->files + i);

	it_fmt(rel, cap, "%s/c%02d/%02d.jpg", f->top, c, i);
	*seed = f->seed0 + k;
	*size = f->size + k;
}

/* Upload f's files, mount (extra options: mount_ra's), and list every
 * folder, as a loader lists its dataset first. */
static void folders_mount(const struct folders *f, const char *const *extra)
{
	size_t n = (size_t)(f->n * f->files);
	struct it_obj *objs = calloc(n, sizeof(*objs));
	char (*keys)[64] = calloc(n, sizeof(*keys)), rel[PATH_MAX];

	cr_assert(objs && keys);
	for (int c = 0; c < f->n; c++)
		for (int i = 0; i < f->files; i++) {
			size_t k = (size_t)(c * f->files + i);

			folder_file(f, c, i, keys[k], sizeof(keys[k]), &objs[k].seed, &objs[k].size);
			objs[k].key = keys[k];
		}
	cr_assert_eq(it_put_many(&bucket, objs, n, 8), 0);
	free(objs);
	free(keys);
	mount_ra(extra);
	for (int c = 0; c < f->n; c++) {
		DIR *d;

		it_fmt(rel, sizeof(rel), "%s/%s/c%02d", mnt.dir, f->top, c);
		cr_assert_not_null(d = opendir(rel));
		while (readdir(d))
			;
		closedir(d);
	}
}

/* Read file i of folder c whole; every byte must be the upload's. */
static void folder_read(const struct folders *f, int c, int i)
{
	char rel[64];
	uint64_t seed, size;

	folder_file(f, c, i, rel, sizeof(rel), &seed, &size);
	read_seq_exact(rel, seed, size, 64 * 1024);
}

/* A dataset of class folders read in one shuffled order (as
 * torchvision's ImageFolder does): no folder sees 16 opens of its own
 * early, yet after 18 files spread over six folders (three each) the
 * folders' scans start together and fetch the rest ahead, each file once,
 * every byte exact.  A scan per folder alone would wait for 16 opens in
 * one folder, which these 18 never give. */
Test(readahead, class_folders_read_in_one_shuffle_are_scanned_together)
{
	const struct folders f = { "classes", 6, 20, 10 * 1024, 7000 };
	long long scanned;

	folders_mount(&f, NULL);
	for (int j = 0; j < 3; j++)
		for (int c = 0; c < f.n; c++)
			folder_read(&f, c, (j * 7 + c * 3) % f.files);
	/* fetched in the background: wait for it (bounded), assert no speed */
	scanned = it_daemon_stat_wait(&mnt, "readahead.scan_files", 1, 30.0);
	cr_expect_gt(scanned, 0, "no folder was scanned after 18 opens over 6 folders");
	/* the rest of the epoch: every byte exact, no file fetched twice */
	for (int c = 0; c < f.n; c++)
		for (int i = 0; i < f.files; i++)
			folder_read(&f, c, i);
	cr_expect_leq(it_proxy_stat(&proxy, "object_GET"), f.n * f.files, "a file was fetched twice");
	it_unmount_ok(&env, &mnt);
}

/* A stats --json field by its dotted path, "counters.ssd.entries" (-1
 * when absent). */
static long long json_stat(const char *path)
{
	const char *args[] = { "stats", mnt.dir, "--json", NULL };
	struct json_object *o, *v;
	struct it_run r;
	char buf[128], *save = NULL;
	long long val = -1;

	cr_assert_eq(it_run_tierfs(&env, args, NULL, 60, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs stats: %s", r.out);
	o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "not JSON: %s", r.out);
	it_fmt(buf, sizeof(buf), "%s", path);
	v = o;
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(v, k, &v))
			v = NULL;
	if (v)
		val = json_object_get_int64(v);
	json_object_put(o);
	it_run_release(&r);
	return val;
}

/* stats --json's "plan" object's field (-1 when there is no plan). */
static long long plan_stat(const char *field)
{
	char path[64];

	it_fmt(path, sizeof(path), "plan.%s", field);
	return json_stat(path);
}

/* Write the plan file (absolute paths under the mount, as a loader has
 * them) of imgs[order[0..n)] and hand it over with `tierfs plan`. */
static void plan_send(const int *order, int n)
{
	char pf[PATH_MAX], p[PATH_MAX];
	const char *args[] = { "plan", mnt.dir, pf, NULL };
	struct it_run r;
	FILE *f;

	cr_assert_eq(it_mkdtemp(&env, "plan", p, sizeof(p)), 0);
	it_fmt(pf, sizeof(pf), "%s/plan.txt", p);
	f = fopen(pf, "w");
	cr_assert_not_null(f);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s/imgs/%03d.jpg\n", mnt.dir, order[k]);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(it_run_tierfs(&env, args, NULL, 60, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs plan: %s", r.out);
	cr_expect(strstr(r.out, "plan of"), "%s", r.out);
	it_run_release(&r);
}

/* One epoch of a loader: hand over the plan of imgs[order] (or, !plan,
 * list the directory), then read them all in that order, every byte
 * checked. */
static void loader_epoch(const int *order, bool plan)
{
	char rel[64];

	if (plan) {
		plan_send(order, N_IMGS);
	} else {     /* it lists its dataset first (ImageFolder, a file list) */
		DIR *d;

		it_fmt(rel, sizeof(rel), "%s/imgs", mnt.dir);
		cr_assert_not_null(d = opendir(rel));
		while (readdir(d))
			;
		closedir(d);
	}
	for (int k = 0; k < N_IMGS; k++) {
		it_fmt(rel, sizeof(rel), "imgs/%03d.jpg", order[k]);
		read_seq_exact(rel, 1000 + (uint64_t)order[k], IMG_SIZE + (uint64_t)order[k],
			       128 * 1024);
	}
}

/* A loader hands over its shuffled order first, without listing anything:
 * the files are fetched ahead in that order (the proxy answers after
 * 50 ms), each once, sized from the listing (no HEAD), every byte exact. */
Test(readahead, a_loaders_plan_is_fetched_ahead_in_its_order)
{
	const char *opts[] = { "--scan-prefetch", "4", NULL };
	char out[256], rel[64];
	int order[N_IMGS];

	mount_ra(opts);
	for (int i = 0; i < N_IMGS; i++)
		order[i] = (i * 23 + 7) % N_IMGS;   /* 23 is prime to 40 */
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=50", out, sizeof(out)), 200);
	plan_send(order, N_IMGS);
	for (int k = 0; k < N_IMGS; k++) {
		it_fmt(rel, sizeof(rel), "imgs/%03d.jpg", order[k]);
		read_seq_exact(rel, 1000 + (uint64_t)order[k], IMG_SIZE + (uint64_t)order[k],
			       128 * 1024);
	}
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=0", out, sizeof(out)), 200);
	long long planned = it_daemon_stat(&mnt, "readahead.plan_files");
	cr_expect_geq(planned, N_IMGS / 2, "only %lld of %d files fetched ahead", planned, N_IMGS);
	cr_expect_eq(it_daemon_stat(&mnt, "readahead.scan_files"), 0, "a scan ran beside the plan");
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), N_IMGS, "a file was fetched twice");
	long long heads = it_proxy_stat(&proxy, "HEAD");
	/* a lookup that comes before the plan's fetchers have listed "imgs"
	 * asks by name (a HEAD): the reader's first file or two, however
	 * slow the machine; one HEAD per file would be 40 */
	cr_expect_leq(heads, 4, "%lld HEADs: sizes and ETags come from the listing", heads);
	cr_expect_eq(plan_stat("entries"), N_IMGS);
	cr_expect_eq(plan_stat("opened"), N_IMGS);
	cr_expect_eq(plan_stat("done"), 1);
	it_unmount_ok(&env, &mnt);
}

/* A reader that jumps ahead in its plan (a job resumed mid-epoch): what
 * it jumped over is never fetched, the window follows it from there. */
Test(readahead, a_plan_follows_a_reader_that_skips_ahead)
{
	const char *opts[] = { "--scan-prefetch", "2", "--plan-window", "4", NULL };
	char rel[64];
	int order[N_IMGS];

	mount_ra(opts);
	for (int i = 0; i < N_IMGS; i++)
		order[i] = N_IMGS - 1 - i;
	plan_send(order, N_IMGS);
	for (int k = 0; k < N_IMGS; k++) {
		if (k == 5)
			k = 30;
		it_fmt(rel, sizeof(rel), "imgs/%03d.jpg", order[k]);
		read_seq_exact(rel, 1000 + (uint64_t)order[k], IMG_SIZE + (uint64_t)order[k],
			       128 * 1024);
	}
	sleep(1);   /* fetches of the window in flight land */
	long long gets = it_proxy_stat(&proxy, "object_GET");
	/* read: 15; fetched ahead at most the window (4) before the jump */
	cr_expect_geq(gets, 15);
	cr_expect_leq(gets, 15 + 4, "%lld GETs: files jumped over were fetched", gets);
	cr_expect_eq(plan_stat("skips"), 1);
	it_unmount_ok(&env, &mnt);
}

/* A plan file with a path outside the mount is refused as a whole, with
 * the line named; the plan the mount had stays.  --clear drops it. */
Test(readahead, a_bad_plan_is_refused_and_clear_drops_the_plan)
{
	char pf[PATH_MAX], p[PATH_MAX];
	const char *args[] = { "plan", mnt.dir, pf, NULL };
	const char *clear[] = { "plan", "--clear", mnt.dir, NULL };
	struct it_run r;
	int order[3] = { 1, 2, 3 };
	FILE *f;

	mount_ra(NULL);
	plan_send(order, 3);
	cr_assert_eq(it_mkdtemp(&env, "badplan", p, sizeof(p)), 0);
	it_fmt(pf, sizeof(pf), "%s/plan.txt", p);
	f = fopen(pf, "w");
	cr_assert_not_null(f);
	fprintf(f, "imgs/004.jpg\n\n%s/imgs/005.jpg\nimgs/../etc/passwd\n", mnt.dir);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(it_run_tierfs(&env, args, NULL, 60, &r), 0);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "plan.txt:4: not a path below"), "%s", r.out);
	it_run_release(&r);
	/* the old plan is intact: reading its first entry is a plan open */
	read_seq_exact("imgs/001.jpg", 1001, IMG_SIZE + 1, 128 * 1024);
	cr_expect_eq(plan_stat("entries"), 3);
	cr_expect_eq(plan_stat("opened"), 1);
	cr_assert_eq(it_run_tierfs(&env, clear, NULL, 60, &r), 0);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "dropped"), "%s", r.out);
	it_run_release(&r);
	cr_expect_eq(plan_stat("entries"), -1, "a plan after --clear");
	it_unmount_ok(&env, &mnt);
}

/* A plan longer than one request (10000 paths) goes in parts and arrives
 * whole, repeats included (epochs listed back to back). */
Test(readahead, a_long_plan_arrives_whole)
{
	enum { LINES = 25000 };
	char pf[PATH_MAX], p[PATH_MAX];
	const char *args[] = { "plan", mnt.dir, pf, NULL };
	struct it_run r;
	FILE *f;

	mount_ra(NULL);
	cr_assert_eq(it_mkdtemp(&env, "longplan", p, sizeof(p)), 0);
	it_fmt(pf, sizeof(pf), "%s/plan.txt", p);
	f = fopen(pf, "w");
	cr_assert_not_null(f);
	for (int k = 0; k < LINES; k++)
		fprintf(f, "imgs/%03d.jpg\n", k % N_IMGS);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(it_run_tierfs(&env, args, NULL, 60, &r), 0);
	cr_expect_eq(r.status, 0, "%s", r.out);
	it_run_release(&r);
	cr_expect_eq(plan_stat("entries"), LINES);
	read_seq_exact("imgs/000.jpg", 1000, IMG_SIZE, 128 * 1024);
	cr_expect_eq(plan_stat("opened"), 1);
	it_unmount_ok(&env, &mnt);
}

/* Wait (<= 60 s) until nothing is fetched ahead: no scan or plan fetcher
 * at work or about to look (readahead.scan_busy), no chunk read ahead in
 * flight (readahead.held), the SSD writer idle (ssd.queued; absent
 * without an SSD tier).  A reader that waits so leaves the fetches ahead
 * all the time they need, however slow the build: what they fetch then
 * depends on the scan's logic alone, not on who is faster. */
static void settle(void)
{
	double deadline = it_now() + 60.0;

	while (it_now() < deadline) {
		char s[4096];

		cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
		cr_assert_geq(it_stats_get(s, "readahead.scan_busy"), 0, "no scan_busy: %s", s);
		if (it_stats_get(s, "readahead.scan_busy") == 0 &&
		    it_stats_get(s, "readahead.held") == 0 && it_stats_get(s, "ssd.queued") <= 0)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("the fetches ahead never settled");
}

/* A dataset twice the cache, read in a new shuffled order each epoch with
 * the plan handed over: what the SSD tier holds stays (nothing is evicted
 * for a file the plan will not read again this epoch, Belady's rule), so
 * from epoch 2 on it all is read from the cache and only the rest from
 * the store. */
Test(readahead, with_a_plan_a_cache_smaller_than_the_dataset_keeps_its_set)
{
	char dir[PATH_MAX];
	const char *opts[] = { "--cache-dir", dir, "--ssd-size", "2M", "--ram-size", "1M",
			       "--scan-prefetch", "4", NULL };
	static const int mult[] = { 23, 17, 31 };
	int order[N_IMGS];

	cr_assert_eq(it_mkdtemp(&env, "belady", dir, sizeof(dir)), 0);
	mount_ra(opts);
	for (int e = 0; e < 3; e++) {
		long long held = json_stat("counters.ssd.entries");
		long long ev = json_stat("counters.ssd.evictions");

		for (int i = 0; i < N_IMGS; i++)
			order[i] = (i * mult[e] + 7 * e) % N_IMGS;
		it_proxy_reset_stats(&proxy);
		loader_epoch(order, true);
		settle();    /* fetches ahead in flight land, the SSD writer stores them */
		long long gets = it_proxy_stat(&proxy, "object_GET");
		long long evicted = json_stat("counters.ssd.evictions") - ev;

		if (e == 0) {
			/* a 1 MiB RAM tier holds ~9 of them: a file fetched
			 * ahead may be evicted before it is read, and fetched
			 * again */
			cr_expect_geq(gets, N_IMGS, "epoch 1: %lld GETs", gets);
			cr_log_info("epoch 1: %lld GETs of %d files", gets, N_IMGS);
			continue;
		}
		cr_expect_gt(held, N_IMGS / 4, "epoch %d began with %lld files on SSD", e + 1, held);
		cr_expect_eq(evicted, 0, "epoch %d: %lld evicted from SSD", e + 1, evicted);
		cr_expect_leq(gets, N_IMGS - held, "epoch %d: %lld GETs, %lld files were on SSD",
			      e + 1, gets, held);
		cr_log_info("epoch %d: %lld GETs of %d files, %lld on SSD", e + 1, gets, N_IMGS, held);
	}
	it_unmount_ok(&env, &mnt);
}

/* RAM of about half the dataset (2 MiB, 19 of the 40 files in their 104
 * KiB buffers), the same order every epoch: a file read through this
 * epoch leaves RAM first, the latest first, so RAM keeps a stable part of
 * the dataset and from epoch 2 on that part is hit (C/N, the best any
 * cache does on one pass an epoch).  RAM-only with the plan handed over:
 * the store is asked for the rest only, 21 files.  With an SSD tier and
 * no plan (the scan finds the job): RAM hits its part, the SSD serves the
 * rest (evicting by the policy alone: 11 RAM hits an epoch here). */
static void ram_keeps_a_stable_part(bool plan, bool ssd)
{
	char dir[PATH_MAX];
	/* --direct-io: every read reaches the daemon, not the page cache;
	 * --passthrough off: nor the kernel's own reads of files on SSD */
	const char *opts[] = { "--ram-size", "2M", "--scan-prefetch", "2", "--plan-window", "2",
			       "--direct-io", "--passthrough", "off",
			       ssd ? "--cache-dir" : NULL, dir, NULL };
	long long hits0 = 0;
	int order[N_IMGS];

	if (ssd)
		cr_assert_eq(it_mkdtemp(&env, "stable", dir, sizeof(dir)), 0);
	mount_ra(opts);
	for (int i = 0; i < N_IMGS; i++)
		order[i] = (i * 17 + 5) % N_IMGS;
	for (int e = 0; e < 3; e++) {
		it_proxy_reset_stats(&proxy);
		loader_epoch(order, plan);
		settle();    /* fetches ahead in flight land, the SSD writer stores them */
		long long gets = it_proxy_stat(&proxy, "object_GET");
		long long hits = json_stat("counters.ram.hits") - hits0;

		hits0 += hits;
		cr_log_info("epoch %d: %lld GETs, %lld RAM hits, of %d files", e + 1, gets, hits,
			    N_IMGS);
		if (e == 0) {
			cr_expect_geq(gets, N_IMGS, "epoch 1: %lld GETs", gets);
			continue;
		}
		if (ssd)
			cr_expect_geq(hits, 15, "epoch %d: %lld RAM hits: RAM did not keep its part",
				      e + 1, hits);
		else    /* at best 21 */
			cr_expect_leq(gets, N_IMGS - 15,
				      "epoch %d: %lld GETs: RAM did not keep its part", e + 1, gets);
	}
	cr_expect_gt(json_stat("counters.ram.evictions_read"), 0);
	it_unmount_ok(&env, &mnt);
}

Test(readahead, ram_smaller_than_the_dataset_keeps_a_stable_part_with_a_plan)
{
	ram_keeps_a_stable_part(true, false);
}

Test(readahead, ram_smaller_than_the_dataset_keeps_a_stable_part_in_a_scan)
{
	ram_keeps_a_stable_part(false, true);
}

/* RAM only, no plan, RAM of about half the dataset: the scan's budget
 * (--read-ahead-mem 256K, 3 of these files) bounds what is fetched and
 * not opened yet, not what an epoch fetches.  So from epoch 2 on the
 * scan keeps fetching ahead as the reader opens what it fetched.  A
 * budget spent once per epoch (it was) can never fetch more than 3 files
 * an epoch, 6 in epochs 2 and 3, however long the reader waits; the
 * reader here waits for the scan to settle after each file, so the count
 * does not depend on speed.  (What RAM keeps across epochs while the scan
 * fetches ahead is the subject of the larger-than-the-cache tests.) */
Test(readahead, ram_only_scan_keeps_fetching_ahead_as_files_are_read)
{
	const char *opts[] = { "--ram-size", "2M", "--read-ahead-mem", "128K", "--scan-prefetch",
			       "2", "--direct-io", NULL };
	/* a budget spent once per epoch hands out files while less than it
	 * was handed out: at most this many an epoch */
	const long long budget_files = (128 * 1024 - 1) / IMG_SIZE + 1;
	char out[256], rel[64];
	long long later = 0;
	int order[N_IMGS];

	mount_ra(opts);
	/* a GET takes 20 ms, as on S3 */
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=20", out, sizeof(out)), 200);
	for (int i = 0; i < N_IMGS; i++)
		order[i] = (i * 17 + 5) % N_IMGS;
	for (int e = 0; e < 3; e++) {
		long long s0 = json_stat("counters.readahead.scan_files"), scanned, gets;
		DIR *d;

		it_proxy_reset_stats(&proxy);
		it_fmt(rel, sizeof(rel), "%s/imgs", mnt.dir);
		cr_assert_not_null(d = opendir(rel));
		while (readdir(d))
			;
		closedir(d);
		for (int k = 0; k < N_IMGS; k++) {
			it_fmt(rel, sizeof(rel), "imgs/%03d.jpg", order[k]);
			read_seq_exact(rel, 1000 + (uint64_t)order[k],
				       IMG_SIZE + (uint64_t)order[k], 128 * 1024);
			if (e > 0)
				settle();
		}
		settle();
		gets = it_proxy_stat(&proxy, "object_GET");
		scanned = json_stat("counters.readahead.scan_files") - s0;
		cr_log_info("epoch %d: %lld GETs, %lld fetched ahead by the scan (wasted %lld, "
			    "dropped %lld, ram hits %lld)", e + 1, gets, scanned,
			    json_stat("counters.readahead.wasted"), json_stat("counters.readahead.dropped"),
			    json_stat("counters.ram.hits"));
		if (e == 0)
			continue;
		later += scanned;
	}
	cr_expect_gt(later, 2 * budget_files,
		     "epochs 2 and 3: the scan fetched %lld ahead, no more than a budget an epoch",
		     later);
	it_unmount_ok(&env, &mnt);
}

/* Object GETs of file i of folder c so far, counted by the proxy. */
static long long folder_file_gets(const struct folders *f, int c, int i)
{
	char rel[64], q[192], out[64];
	uint64_t seed, size;

	folder_file(f, c, i, rel, sizeof(rel), &seed, &size);
	it_fmt(q, sizeof(q), "gets?target=/%s/%s", bucket.name, rel);
	cr_assert_eq(it_proxy_ctl(&proxy, q, out, sizeof(out)), 200, "%s: %s", q, out);
	return strtoll(out, NULL, 10);
}

/* More sibling folders than the daemon scans at once (SCAN_DIRS, 16), read
 * in one order that goes round all of them, through a RAM tier that holds
 * few of their files: every open lands in a folder whose scan has just
 * lost its slot to another.  What a folder's scan knows (the files opened
 * this epoch) stays with the folder, so no file the job has read is
 * fetched again when its folder comes back: no GET of a file after its
 * read, counted file by file at the proxy.  A scan that forgot would hand
 * out files read and since evicted.  (How often a file fetched ahead is
 * evicted before its read depends on who is faster: a GET before the
 * read, not asserted.)  One file of each folder stays unread, so no
 * folder's epoch ends (a next epoch may rightly be fetched ahead). */
Test(readahead, folders_beyond_the_scan_slots_are_fetched_once)
{
	const char *opts[] = { "--ram-size", "2M", "--read-ahead-mem", "128K", NULL };
	const struct folders f = { "fam", 20, 20, 8 * 1024, 9000 };
	long long gets, *at_read = calloc((size_t)(f.n * f.files), sizeof(*at_read)), after = 0;

	cr_assert_not_null(at_read);
	folders_mount(&f, opts);
	/* 7 is prime to f.files: j < f.files - 1 reads all but one */
	for (int j = 0; j < f.files - 1; j++)
		for (int c = 0; c < f.n; c++) {
			int i = (j * 7 + c) % f.files;

			folder_read(&f, c, i);
			at_read[c * f.files + i] = folder_file_gets(&f, c, i);
			cr_expect_geq(at_read[c * f.files + i], 1, "read, never fetched");
		}
	settle();
	for (int j = 0; j < f.files - 1; j++)
		for (int c = 0; c < f.n; c++) {
			int i = (j * 7 + c) % f.files;
			long long more = folder_file_gets(&f, c, i) - at_read[c * f.files + i];

			cr_expect_eq(more, 0, "c%02d/%02d.jpg fetched %lld more times after its read",
				     c, i, more);
			after += more;
		}
	gets = it_proxy_stat(&proxy, "object_GET");
	cr_log_info("%d files, %d read: %lld GETs, %lld after a file's read, %lld fetched ahead "
		    "by the scan", f.n * f.files, f.n * (f.files - 1), gets, after,
		    json_stat("counters.readahead.scan_files"));
	cr_expect_gt(json_stat("counters.readahead.scan_files"), 0, "the folders were scanned");
	free(at_read);
	it_unmount_ok(&env, &mnt);
}
