/* test_cache.c - the chunk cache on a real server: RAM hits, the SSD tier
 * across clean and killed restarts, corruption, a full disk, deleted cache
 * files, changed objects, single-flight under 32 readers, foreign caches.
 *
 * Every test has its own bucket, proxy and cache directory and mounts
 * through the proxy with --chunk-size 1M --parallel-gets 1, so one chunk
 * fill from the store is exactly one object GET the proxy counts (its
 * object_GET counter leaves LISTs out).  The daemon's
 * own counters come from its SIGUSR1 stats line.  Every byte read is
 * compared with the generator that produced the upload.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct obj {
	const char *key;
	uint64_t seed;
	uint64_t size;
	unsigned chunks;           /* at 1 MiB */
};

static const struct obj A = { "a.bin", 0xa1, 5 * IT_MIB + 3, 6 };
static const struct obj B = { "b.bin", 0xb2, 3 * IT_MIB, 3 };
static const struct obj C = { "d/c.bin", 0xc3, IT_MIB + 1, 2 };
static const struct obj BIG = { "big.bin", 0xb16, 48 * IT_MIB, 48 };

static struct it_env env;
static struct it_bucket bucket;
static struct it_proxy proxy;
static struct it_mount mnt;
static char cache_dir[PATH_MAX];
static char tmpfs_dir[PATH_MAX];   /* a tmpfs mounted by a test, or "" */

static void cache_init(void)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "cache", &bucket), 0, "create bucket");
	cr_assert_eq(it_put_gen(&bucket, A.key, A.seed, A.size), 0);
	cr_assert_eq(it_put_gen(&bucket, B.key, B.seed, B.size), 0);
	cr_assert_eq(it_put_gen(&bucket, C.key, C.seed, C.size), 0);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
	char parent[PATH_MAX];
	cr_assert_eq(it_mkdtemp(&env, "cachedir", parent, sizeof(parent)), 0);
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", parent);
	tmpfs_dir[0] = '\0';
}

static void cache_fini(void)
{
	it_cleanup();
	if (tmpfs_dir[0])
		umount2(tmpfs_dir, MNT_DETACH);
	it_proxy_stop(&proxy);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(cache, .init = cache_init, .fini = cache_fini, .timeout = 180);

/* Mount the bucket (or source) through the proxy with the cache options
 * plus extra; -1 when the mount failed (m.status and the log tell why). */
static int mount_cache_src(const char *source, const char *const *extra)
{
	const char *opts[32];
	size_t n = 0;
	opts[n++] = "--chunk-size";
	opts[n++] = "1M";
	opts[n++] = "--parallel-gets";
	opts[n++] = "1";
	opts[n++] = "--ram-size";
	opts[n++] = "64M";
	opts[n++] = "--cache-dir";
	opts[n++] = cache_dir;
	opts[n++] = "-v";
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		opts[n++] = extra[i];
	opts[n] = NULL;
	char src[128];
	if (source)
		it_fmt(src, sizeof(src), "%s", source);
	else
		it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	return it_mount(&env, src, proxy.url, opts, &mnt);
}

static void mount_cache(const char *const *extra)
{
	if (mount_cache_src(NULL, extra) != 0)
		cr_assert_fail("mount failed (status %d): %s", mnt.status, it_mount_log(&mnt));
}


/* Open o through the mount and read it all: exactly the upload.  The
 * descriptor stays open: the caller closes it. */
static int open_read_ok(const struct obj *o)
{
	char p[PATH_MAX];
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, o->key);
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", o->key, strerror(errno));
	char *buf = malloc(o->size + 1);
	ssize_t r = it_pread_full(fd, buf, o->size + 1, 0);
	cr_assert_eq(r, (ssize_t)o->size, "read %s: %zd (%s)", o->key, r,
		     r < 0 ? strerror(errno) : "");
	int64_t bad = it_gen_mismatch(o->seed, 0, buf, o->size);
	cr_assert_eq(bad, -1, "%s: wrong byte at %lld", o->key, (long long)bad);
	free(buf);
	return fd;
}

/* Read all of o through the mount; it must be exactly the upload. */
static void read_ok(const struct obj *o)
{
	close(open_read_ok(o));
}

/* Poll the daemon's counter until it reaches want (<= 60 s: the SSD
 * writer of a slow sanitizer build on a busy disk). */
static long long wait_stat_geq(const char *name, long long want)
{
	long long v = it_daemon_stat_wait(&mnt, name, want, 60.0);

	cr_assert_geq(v, want, "%s stayed at %lld, want >= %lld", name, v, want);
	return v;
}

/* Regular files under dir whose name ends with suffix ("" = all). */
static unsigned count_files(const char *dir, const char *suffix, char *first, size_t firstlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		it_fmt(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			n += count_files(p, suffix, first, firstlen);
		} else if (S_ISREG(st.st_mode)) {
			size_t nl = strlen(e->d_name), sl = strlen(suffix);
			if (nl >= sl && !strcmp(e->d_name + nl - sl, suffix)) {
				if (first && !first[0])
					it_fmt(first, firstlen, "%s", p);
				n++;
			}
		}
	}
	closedir(d);
	return n;
}

/* The cache's object files (one per object version it holds chunks of). */
static unsigned object_files(char *first, size_t firstlen)
{
	char dir[PATH_MAX];
	it_fmt(dir, sizeof(dir), "%s/objects", cache_dir);
	if (first)
		first[0] = '\0';
	return count_files(dir, "", first, firstlen);
}

Test(cache, second_read_comes_from_ram_with_zero_gets)
{
	const char *off[] = { "--passthrough", "off", NULL };
	mount_cache(off);   /* the re-read must reach the daemon to count */
	read_ok(&A);
	long long gets = it_daemon_stat(&mnt, "s3.gets");
	long long hits = it_daemon_stat(&mnt, "ram.hits");
	long long proxy_gets = it_proxy_stat(&proxy, "object_GET");
	cr_assert_eq(it_daemon_stat(&mnt, "store.fetches"), A.chunks);
	it_drop_caches();
	read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "s3.gets"), gets, "the second read sent GETs");
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), proxy_gets, "the proxy saw GETs");
	cr_expect_geq(it_daemon_stat(&mnt, "ram.hits"), hits + A.chunks);
	cr_expect_geq(it_daemon_stat(&mnt, "ram.bytes_served"), 2 * A.size);
	it_unmount_ok(&env, &mnt);
}

Test(cache, remount_after_clean_unmount_is_warm_and_exact)
{
	/* served by the daemon, checked block by block (the passthrough
	 * path is passthrough_reads_files_wholly_on_ssd_without_the_daemon) */
	const char *verify[] = { "--verify-reads", NULL };
	mount_cache(NULL);
	read_ok(&A);
	read_ok(&B);
	read_ok(&C);
	wait_stat_geq("ssd.entries", A.chunks + B.chunks + C.chunks);
	it_unmount_ok(&env, &mnt);
	cr_assert_eq(object_files(NULL, 0), 3, "a file per object");

	mount_cache(verify);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&A);
	read_ok(&B);
	read_ok(&C);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0, "a warm remount sent GETs");
	/* each chunk read from SSD at least once: whole (promoted by
	 * read-ahead) or the blocks a read asked for */
	cr_expect_geq(it_daemon_stat(&mnt, "ssd.hits"), A.chunks + B.chunks + C.chunks);
	cr_expect_geq(it_daemon_stat(&mnt, "ssd.bytes_served"), A.size + B.size + C.size);
	cr_expect_eq(it_daemon_stat(&mnt, "store.fetches"), 0);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.on"), 0, "--verify-reads left passthrough on");
	it_unmount_ok(&env, &mnt);
}

struct reader_arg {
	char path[PATH_MAX];
};

static void *read_until_error(void *arg)
{
	struct reader_arg *r = arg;
	char buf[1 << 16];
	int fd = open(r->path, O_RDONLY);
	if (fd < 0)
		return NULL;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return NULL;
}

Test(cache, kill9_while_caching_keeps_every_complete_chunk)
{
	cr_assert_eq(it_put_gen(&bucket, BIG.key, BIG.seed, BIG.size), 0);
	mount_cache(NULL);
	read_ok(&A);
	read_ok(&B);
	wait_stat_geq("ssd.entries", A.chunks + B.chunks);

	/* heavy caching of BIG, slowed down (2 MB/s per connection: seconds
	 * for its 48 chunks, against one poll of the stats) so that the
	 * kill -9 lands in the middle of it */
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?bandwidth=2000000", NULL, 0), 200);
	struct reader_arg ra;
	pthread_t th;
	it_fmt(ra.path, sizeof(ra.path), "%s/%s", mnt.dir, BIG.key);
	cr_assert_eq(pthread_create(&th, NULL, read_until_error, &ra), 0);
	long long ins = wait_stat_geq("ssd.insertions", A.chunks + B.chunks + 6);
	cr_assert_lt(ins, A.chunks + B.chunks + BIG.chunks, "BIG was cached before the kill");
	pid_t pid = mnt.pid;
	cr_assert_eq(kill(pid, SIGKILL), 0);
	int ws;
	waitpid(pid, &ws, 0);
	mnt.pid = 0;
	umount2(mnt.dir, MNT_DETACH);   /* the reader gets ENOTCONN and stops */
	pthread_join(th, NULL);
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?bandwidth=0", NULL, 0), 200);

	const char *off[] = { "--passthrough", "off", NULL };
	mount_cache(off);   /* every chunk read counted by the daemon */
	cr_expect_eq(count_files(cache_dir, ".tmp", NULL, 0), 0, "half-written files left");
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&A);
	read_ok(&B);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0, "chunks cached before the kill were fetched");
	read_ok(&BIG);
	long long ssd_hits = it_daemon_stat(&mnt, "ssd.hits");
	long long fetches = it_daemon_stat(&mnt, "store.fetches");
	cr_expect_eq(fetches, it_proxy_stat(&proxy, "object_GET"));
	cr_expect_leq(fetches, A.chunks + B.chunks + BIG.chunks - ins,
		      "chunks stored before the kill were fetched again (ssd %lld, store %lld)",
		      ssd_hits, fetches);
	cr_expect_geq(ssd_hits, A.chunks + B.chunks + 6, "cached parts of BIG were lost");
	cr_log_info("after kill -9: %lld chunks from SSD, %lld from the store", ssd_hits, fetches);
	it_unmount_ok(&env, &mnt);
}

/* Cache A, unmount, and flip the byte of its object file at off (from the
 * end when negative), as a disk that changed it would. */
static void cache_a_and_flip_a_byte(off_t off)
{
	mount_cache(NULL);
	read_ok(&A);
	wait_stat_geq("ssd.entries", A.chunks);
	it_unmount_ok(&env, &mnt);

	char victim[PATH_MAX];
	cr_assert_eq(object_files(victim, sizeof(victim)), 1);
	int fd = open(victim, O_RDWR);
	cr_assert_geq(fd, 0, "%s: %s", victim, strerror(errno));
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	if (off < 0)
		off += st.st_size;
	unsigned char b;
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

Test(cache, corrupted_chunk_file_is_detected_dropped_and_refetched)
{
	cache_a_and_flip_a_byte(-100);   /* in the last chunk */
	const char *verify[] = { "--verify-reads", NULL };
	mount_cache(verify);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.checksum_failures"), 1);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 1, "only the corrupt chunk is refetched");
	cr_expect_geq(it_daemon_stat(&mnt, "ssd.hits"), A.chunks - 1);
	it_unmount_ok(&env, &mnt);
}

Test(cache, deleted_cache_files_fall_back_to_the_store)
{
	/* a 2-chunk RAM tier: most of the re-read must go below RAM (RAM may
	 * hold a chunk or two more while the SSD writer holds them) */
	const char *extra[] = { "--ram-size", "2M", NULL };
	long long misses0, hits0, ins0, gets, misses, hits, ins;
	mount_cache(extra);
	read_ok(&A);
	it_ssd_settle(&mnt, 60.0);
	cr_assert_geq(it_daemon_stat(&mnt, "ssd.entries"), 1);
	char dir[PATH_MAX];
	it_fmt(dir, sizeof(dir), "rm -rf '%s/objects/'*", cache_dir);
	cr_assert_eq(system(dir), 0);
	cr_assert_eq(object_files(NULL, 0), 0);
	it_drop_caches();
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	misses0 = it_daemon_stat(&mnt, "ram.misses");
	hits0 = it_daemon_stat(&mnt, "ssd.hits");
	ins0 = it_daemon_stat(&mnt, "ssd.insertions");
	read_ok(&A);
	gets = it_proxy_stat(&proxy, "object_GET");
	misses = it_daemon_stat(&mnt, "ram.misses") - misses0;
	hits = it_daemon_stat(&mnt, "ssd.hits") - hits0;
	ins = it_daemon_stat(&mnt, "ssd.insertions") - ins0;
	/* none of the files gone served a byte: an SSD hit now can only be a
	 * chunk fetched again and written back during this read (read-ahead
	 * that RAM dropped before the reader came, on a slow machine); every
	 * other chunk RAM did not have came from the store (read-ahead may
	 * fetch more than the reader missed) */
	cr_expect(hits == 0 || ins > 0, "%lld SSD hits with no chunk written since the files were deleted",
		  hits);
	cr_expect_geq(gets + hits, misses, "%lld GETs and %lld SSD hits for %lld RAM misses", gets,
		      hits, misses);
	cr_expect_geq(gets, 1, "nothing was fetched: the test proves nothing");
	it_unmount_ok(&env, &mnt);
}

Test(cache, full_cache_disk_degrades_to_misses_never_to_errors)
{
	char parent[PATH_MAX];
	cr_assert_eq(it_mkdtemp(&env, "tmpfs", parent, sizeof(parent)), 0);
	it_fmt(tmpfs_dir, sizeof(tmpfs_dir), "%s", parent);
	cr_assert_eq(mount("tmpfs", tmpfs_dir, "tmpfs", 0, "size=6m,mode=0700"), 0,
		     "mount tmpfs: %s", strerror(errno));
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", tmpfs_dir);
	cr_assert_eq(it_put_gen(&bucket, BIG.key, BIG.seed, BIG.size), 0);
	const char *extra[] = { "--ssd-min-free", "0", NULL };
	mount_cache(extra);
	read_ok(&A);
	read_ok(&B);
	read_ok(&BIG);
	read_ok(&C);
	it_ssd_settle(&mnt, 60.0);
	char stats[4096];
	cr_assert_eq(it_daemon_stats(&mnt, stats, sizeof(stats)), 0);
	cr_expect_gt(it_stats_get(stats, "ssd.dropped"), 0, "%s", stats);
	cr_expect_gt(it_stats_get(stats, "ssd.io_errors"), 0, "no ENOSPC seen: %s", stats);
	/* degraded is a state: a write that succeeds after the backoff ends
	 * it; that the tier went degraded is in the log */
	char *log = it_mount_log(&mnt);
	cr_expect(log && strstr(log, "degraded: insertions refused"), "no degraded tier in the log: %s",
		  log ? log : "(none)");
	free(log);
	cr_expect_leq(it_stats_get(stats, "ssd.bytes_used"), 6 * IT_MIB, "%s", stats);
	cr_log_info("full disk: %s", stats);
	/* everything still reads right after the RAM tier let go of it */
	it_drop_caches();
	read_ok(&A);
	it_unmount_ok(&env, &mnt);
	cr_assert_eq(umount2(tmpfs_dir, 0), 0, "umount tmpfs: %s", strerror(errno));
	tmpfs_dir[0] = '\0';
}

Test(cache, overwritten_object_is_never_served_stale_and_old_chunks_go)
{
	const char *extra[] = { "--metadata-ttl", "1", NULL };
	mount_cache(extra);
	read_ok(&B);
	wait_stat_geq("ssd.entries", B.chunks);
	const struct obj B2 = { B.key, 0xb2b2, 2 * IT_MIB + 7, 3 };
	cr_assert_eq(it_put_gen(&bucket, B2.key, B2.seed, B2.size), 0);
	usleep(1300 * 1000);
	read_ok(&B2);
	/* the old version's three chunks are reclaimed; the new one's cached */
	double deadline = it_now() + 60.0;
	unsigned files = 0;
	while (it_now() < deadline && (files = object_files(NULL, 0)) != 1)
		usleep(50000);
	cr_expect_eq(files, 1, "object files on disk: %u (the new version's alone)", files);
	it_unmount_ok(&env, &mnt);

	/* and a remount serves the new version from the SSD tier */
	mount_cache(NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&B2);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0);
	it_unmount_ok(&env, &mnt);
}

struct same_reader {
	char path[PATH_MAX];
	const struct obj *o;
	int64_t bad;
	ssize_t got;
};

static void *read_same(void *arg)
{
	struct same_reader *r = arg;
	char *buf = malloc(r->o->size);
	int fd = open(r->path, O_RDONLY);
	r->got = fd < 0 ? -1 : it_pread_full(fd, buf, r->o->size, 0);
	r->bad = r->got == (ssize_t)r->o->size ? it_gen_mismatch(r->o->seed, 0, buf, r->o->size)
					       : 0;
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

Test(cache, thirty_two_readers_of_one_cold_file_cause_one_get_per_chunk)
{
	const struct obj S = { "s.bin", 0x5511, 16 * IT_MIB, 16 };
	cr_assert_eq(it_put_gen(&bucket, S.key, S.seed, S.size), 0);
	mount_cache(NULL);
	char p[PATH_MAX];
	struct stat st;
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, S.key);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	struct same_reader rs[32];
	pthread_t th[32];
	for (int i = 0; i < 32; i++) {
		rs[i] = (struct same_reader){ .o = &S };
		it_fmt(rs[i].path, sizeof(rs[i].path), "%s", p);
		cr_assert_eq(pthread_create(&th[i], NULL, read_same, &rs[i]), 0);
	}
	for (int i = 0; i < 32; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(rs[i].got, (ssize_t)S.size, "reader %d got %zd", i, rs[i].got);
		cr_expect_eq(rs[i].bad, -1, "reader %d: wrong byte at %lld", i, (long long)rs[i].bad);
	}
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), S.chunks, "GETs for %u chunks", S.chunks);
	cr_expect_eq(it_daemon_stat(&mnt, "store.fetches"), S.chunks);
	it_unmount_ok(&env, &mnt);
}

Test(cache, cache_of_another_source_is_refused_unless_wiped)
{
	mount_cache(NULL);
	read_ok(&C);
	wait_stat_geq("ssd.entries", C.chunks);
	it_unmount_ok(&env, &mnt);

	char other[128];
	it_fmt(other, sizeof(other), "s3://%s/d", bucket.name);
	cr_assert_neq(mount_cache_src(other, NULL), 0, "a foreign cache was accepted");
	char *log = it_mount_log(&mnt);
	cr_expect_not_null(strstr(log, "--cache-wipe"), "no hint in: %s", log);
	cr_expect_not_null(strstr(log, cache_dir), "the directory is not named: %s", log);
	free(log);
	cr_assert_eq(object_files(NULL, 0), 1, "a refused cache was modified");

	const char *wipe[] = { "--cache-wipe", NULL };
	cr_assert_eq(mount_cache_src(other, wipe), 0, "wipe: %s", it_mount_log(&mnt));
	cr_expect_eq(object_files(NULL, 0), 0, "wipe left object files");
	const struct obj C_IN_D = { "c.bin", C.seed, C.size, C.chunks };
	read_ok(&C_IN_D);
	it_unmount_ok(&env, &mnt);
}

Test(cache, cache_root_is_private_and_symlinks_are_refused)
{
	mount_cache(NULL);
	read_ok(&C);
	wait_stat_geq("ssd.entries", C.chunks);
	it_unmount_ok(&env, &mnt);
	struct stat st;
	cr_assert_eq(lstat(cache_dir, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0700, "cache root mode %o", st.st_mode & 07777);
	char file[PATH_MAX];
	cr_assert_eq(object_files(file, sizeof(file)), 1);
	cr_assert_eq(stat(file, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0600, "object file mode %o", st.st_mode & 07777);

	char link[PATH_MAX];
	it_fmt(link, sizeof(link), "%s.link", cache_dir);
	cr_assert_eq(symlink(cache_dir, link), 0);
	it_fmt(cache_dir, sizeof(cache_dir), "%s", link);
	cr_assert_neq(mount_cache_src(NULL, NULL), 0, "a symlinked cache root was accepted");
	char *log = it_mount_log(&mnt);
	cr_expect_not_null(strstr(log, "symbolic link"), "no reason in: %s", log);
	free(log);
}

/* Listings are saved in the cache index: a remount within the metadata
 * TTL lists, looks up, opens and reads without a single request. */
Test(cache, remount_within_ttl_needs_no_request_at_all)
{
	const char *extra[] = { "--metadata-ttl", "600", NULL };
	char p[PATH_MAX];
	mount_cache(extra);
	it_fmt(p, sizeof(p), "%s/d", mnt.dir);
	DIR *d = opendir(mnt.dir);
	cr_assert_not_null(d);
	while (readdir(d))
		;
	closedir(d);
	cr_assert_not_null(d = opendir(p));
	while (readdir(d))
		;
	closedir(d);
	read_ok(&A);
	read_ok(&C);
	wait_stat_geq("ssd.entries", A.chunks + C.chunks);
	it_unmount_ok(&env, &mnt);

	mount_cache(extra);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	unsigned names = 0;
	cr_assert_not_null(d = opendir(mnt.dir));
	for (struct dirent *e; (e = readdir(d));)
		names += !strcmp(e->d_name, "a.bin") || !strcmp(e->d_name, "b.bin") ||
			 !strcmp(e->d_name, "d");
	closedir(d);
	cr_expect_eq(names, 3, "the saved root listing lost names");
	read_ok(&A);
	read_ok(&C);
	cr_expect_eq(it_proxy_stat(&proxy, "requests"), 0, "a warm remount sent requests");
	it_unmount_ok(&env, &mnt);
}

/* --direct-io: bytes are exact, and a re-read (page cache not dropped)
 * still reaches the daemon, which serves it from the RAM tier. */
Test(cache, direct_io_bypasses_the_page_cache_and_reads_exact_bytes)
{
	const char *extra[] = { "--direct-io", "--passthrough", "off", NULL };
	mount_cache(extra);
	read_ok(&A);
	long long hits = it_daemon_stat(&mnt, "ram.hits");
	long long gets = it_daemon_stat(&mnt, "s3.gets");
	read_ok(&A);
	cr_expect_geq(it_daemon_stat(&mnt, "ram.hits"), hits + A.chunks,
		      "the re-read did not reach the RAM tier");
	cr_expect_eq(it_daemon_stat(&mnt, "s3.gets"), gets);
	it_unmount_ok(&env, &mnt);
}

/* The kernel's readahead window of the mount, in KiB (read once the mount
 * is in use: the INIT reply would cap a value written before it at 128
 * KiB). */
static int kernel_readahead_kb(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], dev[64] = "", path[128], *v;
	int kb;

	read_ok(&C);
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char mnt_dir[PATH_MAX], d[64];
		if (sscanf(line, "%*s %*s %63s %*s %4095s", d, mnt_dir) == 2 &&
		    strcmp(mnt_dir, mnt.dir) == 0)
			it_fmt(dev, sizeof(dev), "%s", d);
	}
	fclose(f);
	cr_assert_neq(dev[0], '\0', "mount not in mountinfo");
	it_fmt(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	v = it_read_file(path, NULL);
	cr_assert_not_null(v, "%s", path);
	kb = atoi(v);
	free(v);
	return kb;
}

/* By default the window is two chunks. */
Test(cache, kernel_readahead_window_is_two_chunks)
{
	mount_cache(NULL);
	cr_expect_eq(kernel_readahead_kb(), 2 * 1024, "want two 1M chunks");
	it_unmount_ok(&env, &mnt);
}

/* ... but at most a quarter of a small RAM tier: the kernel's pages ahead
 * of the reader are chunks RAM must hold beside the one being read. */
Test(cache, kernel_readahead_window_fits_a_small_ram_tier)
{
	const char *const extra[] = { "--ram-size", "2M", NULL };

	mount_cache(extra);
	cr_expect_eq(kernel_readahead_kb(), 512, "want a quarter of 2M");
	it_unmount_ok(&env, &mnt);
}

/* ---- the kernel reading cached files itself (FUSE passthrough) ---- */

/* Skip unless this mount has passthrough on (kernel 6.9+, CAP_SYS_ADMIN,
 * libfuse 3.16+): the daemon logged why not. */
static void passthrough_or_skip(void)
{
	struct stat st;

	/* a request answered: the kernel's INIT, where it is decided, is done
	 * (the mount shows in the mount table before it) */
	cr_assert_eq(stat(mnt.dir, &st), 0);
	if (it_daemon_stat(&mnt, "passthrough.on") != 1) {
		char *log = it_mount_log(&mnt);
		cr_log_warn("no FUSE passthrough here: %s", log);
		free(log);
		it_unmount_ok(&env, &mnt);
		cr_skip_test("no FUSE passthrough here (the daemon's log says why)");
	}
}

Test(cache, passthrough_reads_files_wholly_on_ssd_without_the_daemon)
{
	mount_cache(NULL);
	passthrough_or_skip();
	read_ok(&A);
	read_ok(&B);
	wait_stat_geq("ssd.entries", A.chunks + B.chunks);
	long long served = it_daemon_stat(&mnt, "ram.bytes_served");
	long long opens = it_daemon_stat(&mnt, "passthrough.opens");
	it_drop_caches();
	/* two opens at once share the inode's backing file; the kernel
	 * refuses (EIO) an inode with two, or one mixed with page-cache opens */
	int fa = open_read_ok(&A), fa2 = open_read_ok(&A);
	read_ok(&B);
	close(fa);
	close(fa2);
	read_ok(&A);   /* a fresh open after the last one closed */
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.opens"), opens + 4);
	cr_expect_eq(it_daemon_stat(&mnt, "ram.bytes_served"), served,
		     "reads of files wholly on SSD reached the daemon");
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.hits"), 0);
	it_unmount_ok(&env, &mnt);

	/* a remount: every file is on SSD, none is fetched, none is read
	 * through the daemon */
	mount_cache(NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&A);
	read_ok(&B);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.opens"), 2);
	cr_expect_eq(it_daemon_stat(&mnt, "ram.bytes_served"), 0);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0, "a warm remount sent GETs");
	it_unmount_ok(&env, &mnt);
}

Test(cache, passthrough_off_serves_every_read_through_the_daemon)
{
	const char *off[] = { "--passthrough", "off", NULL };
	mount_cache(off);
	read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.on"), 0);
	wait_stat_geq("ssd.entries", A.chunks);
	it_unmount_ok(&env, &mnt);
	mount_cache(off);
	read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.opens"), 0);
	cr_expect_geq(it_daemon_stat(&mnt, "ssd.hits"), A.chunks);
	cr_expect_geq(it_daemon_stat(&mnt, "ssd.bytes_served"), (long long)A.size);
	cr_expect_eq(it_daemon_stat(&mnt, "store.fetches"), 0);
	it_unmount_ok(&env, &mnt);
}

/* The file the kernel reads is held: evicting it while it is open is
 * refused (busy), and every byte read through it stays right; once
 * closed, it can go. */
Test(cache, passthrough_file_is_not_evicted_while_open)
{
	mount_cache(NULL);
	passthrough_or_skip();
	read_ok(&A);
	wait_stat_geq("ssd.entries", A.chunks);
	it_drop_caches();
	int fd = open_read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.opens"), 1);

	char p[PATH_MAX];
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, A.key);
	const char *ev[] = { "evict", "--tier", "ssd", p, NULL };
	struct it_run r;
	cr_assert_eq(it_run_tierfs(&env, ev, NULL, 60, &r), 0);
	cr_expect_eq(r.status, 0, "evict: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.entries"), A.chunks, "a held chunk was evicted");
	it_drop_caches();   /* the kernel reads the backing file again */
	char *buf = malloc(A.size);
	cr_assert_eq(it_pread_full(fd, buf, A.size, 0), (ssize_t)A.size);
	cr_expect_eq(it_gen_mismatch(A.seed, 0, buf, A.size), -1, "wrong bytes under a hold");
	free(buf);
	close(fd);

	/* released (the kernel's RELEASE may come a little after close) */
	double deadline = it_now() + 20.0;
	long long left = A.chunks;
	while (left > 0 && it_now() < deadline) {
		cr_assert_eq(it_run_tierfs(&env, ev, NULL, 60, &r), 0);
		it_run_release(&r);
		left = it_daemon_stat(&mnt, "ssd.entries");
		if (left > 0)
			usleep(100000);
	}
	cr_expect_eq(left, 0, "the file could not be evicted once closed");
	read_ok(&A);   /* fetched again, through the daemon */
	it_unmount_ok(&env, &mnt);
}

/* The object changes while a file is open through passthrough.  The
 * kernel ties one backing file to an inode, so an open that finds the new
 * version fails with EBUSY while the old open lasts; the old descriptor
 * keeps reading the old bytes; once it is closed, an open gets the new
 * version's bytes. */
Test(cache, passthrough_open_of_a_newer_version_is_busy_until_the_old_closes)
{
	const char *extra[] = { "--metadata-ttl", "1", NULL };
	const struct obj B2 = { B.key, 0xb3b3, B.size, B.chunks };
	char p[PATH_MAX];
	int fd, fd2 = -1, err = 0;

	mount_cache(extra);
	passthrough_or_skip();
	read_ok(&B);
	wait_stat_geq("ssd.entries", B.chunks);
	it_drop_caches();
	fd = open_read_ok(&B);
	cr_assert_eq(it_daemon_stat(&mnt, "passthrough.opens"), 1);
	cr_assert_eq(it_put_gen(&bucket, B2.key, B2.seed, B2.size), 0, "the new version");
	usleep(1300 * 1000);   /* past --metadata-ttl: the next open asks the store */

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, B.key);
	fd2 = open(p, O_RDONLY);
	err = errno;
	cr_expect_eq(fd2, -1, "an open of the new version succeeded while the old is open");
	cr_expect_eq(err, EBUSY, "open: %s, not EBUSY", strerror(err));
	if (fd2 >= 0)
		close(fd2);

	it_drop_caches();   /* the kernel reads the old backing file again */
	char *buf = malloc(B.size);
	cr_assert_eq(it_pread_full(fd, buf, B.size, 0), (ssize_t)B.size);
	cr_expect_eq(it_gen_mismatch(B.seed, 0, buf, B.size), -1, "the old open saw new bytes");
	free(buf);
	close(fd);

	/* the kernel's RELEASE may come a little after close */
	double deadline = it_now() + 20.0;
	do {
		fd2 = open(p, O_RDONLY);
		err = errno;
		if (fd2 < 0)
			usleep(50000);
	} while (fd2 < 0 && err == EBUSY && it_now() < deadline);
	cr_assert_geq(fd2, 0, "open after the old one closed: %s", strerror(err));
	close(fd2);
	read_ok(&B2);
	it_unmount_ok(&env, &mnt);
}

/* With passthrough, a block the disk changed after it was verified is
 * not seen by the daemon at read time: the background scrub finds it,
 * drops its chunk (the file is then no longer wholly on SSD), and the
 * next open reads through the daemon: the right bytes, one chunk
 * fetched again. */
Test(cache, passthrough_corruption_is_found_by_the_scrub)
{
	cache_a_and_flip_a_byte(2 * IT_MIB + 70000);   /* chunk 2, its second block */
	const char *scrub[] = { "--scrub-rate", "64M", NULL };
	mount_cache(scrub);
	passthrough_or_skip();
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	wait_stat_geq("ssd.checksum_failures", 1);
	read_ok(&A);
	cr_expect_eq(it_daemon_stat(&mnt, "passthrough.opens"), 0,
		     "a file with a chunk dropped was handed to the kernel");
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 1, "only the corrupt chunk is refetched");
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.checksum_failures"), 1);
	it_unmount_ok(&env, &mnt);
}

/* A small RAM tier (four chunks: one may wait for the SSD writer on its
 * RAM buffer) in front of a roomy SSD tier, read twice: the writer falls
 * behind the reader, and the chunks it has not written yet wait as
 * copies instead of being dropped, so the second read fetches nothing.
 * (Dropped, they would be fetched again: 4% of such a run once did.) */
Test(cache, chunks_the_ssd_writer_is_behind_on_are_not_fetched_again)
{
	enum { SMALL = 24 };
	struct it_obj objs[SMALL + 1];
	char keys[SMALL][32];
	uint64_t total = 0, chunks = 0;
	for (int i = 0; i < SMALL; i++) {
		it_fmt(keys[i], sizeof(keys[i]), "ds/f%02d.bin", i);
		objs[i] = (struct it_obj){ keys[i], 0xd500 + (uint64_t)i, IT_MIB + 4096 * (uint64_t)i };
	}
	/* the big one last in listing order ("ds/z...") */
	objs[SMALL] = (struct it_obj){ "ds/zbig.bin", 0xd5ff, 24 * IT_MIB + 5 };
	for (int i = 0; i <= SMALL; i++) {
		total += objs[i].size;
		chunks += (objs[i].size + IT_MIB - 1) / IT_MIB;
	}
	cr_assert_eq(it_put_many(&bucket, objs, SMALL + 1, 8), 0);
	const char *small_ram[] = { "--ram-size", "4M", "--ssd-size", "1G", NULL };
	mount_cache(small_ram);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			wait_stat_geq("ssd.entries", (long long)chunks);
			it_drop_caches();
			cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
		}
		for (int i = 0; i <= SMALL; i++) {
			struct obj o = { objs[i].key, objs[i].seed, objs[i].size, 0 };
			read_ok(&o);
		}
	}
	/* the copies waiting (at most 64 MiB) hold every chunk of this run */
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.dropped"), 0, "chunks were dropped, not stored");
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0,
		     "the second read fetched chunks the first had fetched");
	cr_expect_eq(it_daemon_stat(&mnt, "ssd.insertions"), (long long)chunks);
	cr_log_info("%llu chunks, %llu bytes, fetched %lld times in all",
		    (unsigned long long)chunks, (unsigned long long)total,
		    it_daemon_stat(&mnt, "store.fetches"));
	it_unmount_ok(&env, &mnt);
}

/* pread 128 KiB of R at piece p through fd: exactly the upload. */
#define PIECE (128 * 1024)
static void piece_ok(int fd, uint64_t seed, uint64_t p)
{
	char buf[PIECE];
	ssize_t r = it_pread_full(fd, buf, PIECE, (off_t)(p * PIECE));
	cr_assert_eq(r, PIECE, "piece %llu: %zd", (unsigned long long)p, r);
	int64_t bad = it_gen_mismatch(seed, p * PIECE, buf, PIECE);
	cr_assert_eq(bad, -1, "piece %llu: wrong byte at %lld", (unsigned long long)p,
		     (long long)bad);
}

/* A random reader of a cold file costs the store at most twice the bytes
 * it asks for, counted at the proxy: 128 KiB reads of a file in 1 MiB
 * chunks fetch their own blocks, not whole chunks (8 times the bytes).
 * Read whole in a shuffled order, the file's chunks are made whole on the
 * way and a second shuffled pass fetches nothing. */
Test(cache, a_random_reader_fetches_at_most_twice_what_it_asks_for)
{
	enum { CHUNKS = 24, PIECES = CHUNKS * (IT_MIB / PIECE), SPARSE = 20 };
	const struct obj R = { "r.bin", 0x7a2d, CHUNKS * IT_MIB, CHUNKS };
	uint64_t order[PIECES], x = 0x9e3779b97f4a7c15ull, asked = 0;
	long long down;
	char p[PATH_MAX];
	int fd;

	cr_assert_eq(it_put_gen(&bucket, R.key, R.seed, R.size), 0);
	mount_cache(NULL);
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, R.key);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	piece_ok(fd, R.seed, 0);   /* a file's first stream is read in chunks */
	for (uint64_t i = 0; i < PIECES; i++)
		order[i] = i;
	for (uint64_t i = PIECES - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t j = x % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	/* sparse: the first reads of the order, pieces outside chunk 0 */
	for (uint64_t i = 0, n = 0; n < SPARSE; i++) {
		if (order[i] < IT_MIB / PIECE)
			continue;
		piece_ok(fd, R.seed, order[i]);
		asked += PIECE;
		n++;
	}
	down = it_proxy_stat(&proxy, "bytes_down");
	/* a response's headers: well under 4 KiB each */
	cr_expect_leq(down, (long long)(2 * asked + SPARSE * 4096),
		      "%lld bytes fetched for %llu asked", down, (unsigned long long)asked);
	cr_log_info("sparse: %lld bytes down for %llu asked", down, (unsigned long long)asked);
	/* the whole file in that order */
	for (uint64_t i = 0; i < PIECES; i++) {
		piece_ok(fd, R.seed, order[i]);
		asked += PIECE;
	}
	down = it_proxy_stat(&proxy, "bytes_down");
	cr_expect_leq(down, (long long)(2 * asked + PIECES * 4096),
		      "%lld bytes fetched for %llu asked", down, (unsigned long long)asked);
	cr_log_info("whole: %lld bytes down for %llu asked", down, (unsigned long long)asked);
	cr_expect_geq(it_daemon_stat(&mnt, "random.reads"), SPARSE);
	cr_expect_eq(it_daemon_stat(&mnt, "random.bytes"), 0, "blocks kept of whole chunks");
	/* whole now, in RAM and on SSD */
	it_drop_caches();
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	for (uint64_t i = PIECES; i-- > 0;)
		piece_ok(fd, R.seed, order[i]);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0, "the second pass fetched");
	close(fd);
	it_unmount_ok(&env, &mnt);
}

/* --random-blocks 0: a random read fetches its whole chunk, as before
 * random readers had blocks of their own. */
Test(cache, random_blocks_off_fetches_whole_chunks)
{
	const struct obj R = { "r0.bin", 0x7a2e, 16 * IT_MIB, 16 };
	const char *off[] = { "--random-blocks", "0", NULL };
	const uint64_t pieces[] = { 15 * 8 + 3, 9 * 8 + 1, 12 * 8 + 6 };
	char p[PATH_MAX];
	int fd;

	cr_assert_eq(it_put_gen(&bucket, R.key, R.seed, R.size), 0);
	mount_cache(off);
	cr_expect_eq(it_daemon_stat(&mnt, "random.capacity"), 0);
	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, R.key);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	piece_ok(fd, R.seed, 0);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	for (size_t i = 0; i < 3; i++)
		piece_ok(fd, R.seed, pieces[i]);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 3);
	cr_expect_geq(it_proxy_stat(&proxy, "bytes_down"), 3 * IT_MIB, "whole chunks");
	cr_expect_eq(it_daemon_stat(&mnt, "random.reads"), 0);
	close(fd);
	it_unmount_ok(&env, &mnt);
}
