/* test_crash.c - crashes and disks: the daemon killed at random moments
 * under parallel reads, corrupt chunk data and index records, a cache disk
 * full of bytes or of inodes or failing with I/O errors, and the memory
 * and descriptors a long read keeps.
 *
 * Every byte read through a mount is compared with the generator that
 * produced the upload.  The cache directory is checked from outside: the
 * index is opened offline with the project's own cache_index API (the
 * daemon stopped), each record's object file is found by the name the
 * format gives it (XXH3-128 of 'o' key '\0' cache id, docs/format.md),
 * and the files under objects/ are listed and their allocated blocks
 * summed.
 *
 * Knobs (environment): TIERFS_CRASH_SEED (the kill loop's seed; printed),
 * TIERFS_CRASH_KILLS (kills, default 20), TIERFS_CRASH_MEM_MIB (bytes the
 * memory test reads, default 512, 128 in a sanitizer build).
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rocksdb/c.h>
#include <xxhash.h>

#include "common/tfs_err.h"
#include "tiers/cache_index.h"

#define CHUNK IT_MIB

struct obj {
	char key[64];
	uint64_t seed;
	uint64_t size;
};

static struct it_env env;
static struct it_bucket bucket;
static struct it_mount mnt;
static char cache_dir[PATH_MAX];
static char tmpfs_dir[PATH_MAX];   /* a tmpfs mounted by a test, or "" */

static void crash_init(void)
{
	char parent[PATH_MAX];

	IT_ENV_OR_SKIP(&env);
	cr_assert_eq(it_bucket_create(&env, "crash", &bucket), 0, "create bucket");
	cr_assert_eq(it_mkdtemp(&env, "cachedir", parent, sizeof(parent)), 0);
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", parent);
	tmpfs_dir[0] = '\0';
}

static void crash_fini(void)
{
	it_cleanup();
	if (tmpfs_dir[0])
		umount2(tmpfs_dir, MNT_DETACH);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(crash, .init = crash_init, .fini = crash_fini, .timeout = 600);

/* ---- the fixture ------------------------------------------------------- */

/* Sizes around the chunk and block edges, and a few of several chunks. */
static const uint64_t SIZES[] = {
	1, 4095, 4096, 65535, 65537, 300000, CHUNK - 1, CHUNK, CHUNK + 1,
	2 * CHUNK + 12345, 3 * CHUNK, 3 * CHUNK + 7, 4 * CHUNK - 4096, 5 * CHUNK + 65536,
	700000, 2 * CHUNK - 1,
};
#define NOBJ (sizeof(SIZES) / sizeof(SIZES[0]))

static struct obj objs[NOBJ];

static uint64_t upload_fixture(struct obj *o, size_t n, const char *dir)
{
	struct it_obj up[64];
	uint64_t total = 0;

	cr_assert_leq(n, 64);
	for (size_t i = 0; i < n; i++) {
		it_fmt(o[i].key, sizeof(o[i].key), "%s/f%02zu.bin", dir, i);
		o[i].seed = 0xc0ffee00u + i * 7919u;
		o[i].size = SIZES[i % NOBJ];
		up[i] = (struct it_obj){ o[i].key, o[i].seed, o[i].size };
		total += o[i].size;
	}
	cr_assert_eq(it_put_many(&bucket, up, n, 4), 0, "upload");
	return total;
}

/* ---- mounting ---------------------------------------------------------- */

/* Mount the bucket straight from the server with the cache options plus
 * extra (NULL-terminated) and the environment env_set.  0 or -1. */
static int mount_try(const char *const *extra, const char *const *env_set)
{
	const char *opts[40];
	char src[128], dir[PATH_MAX];
	size_t n = 0;

	opts[n++] = "--chunk-size";
	opts[n++] = "1M";
	opts[n++] = "--cache-dir";
	opts[n++] = cache_dir;
	opts[n++] = "-v";
	for (size_t i = 0; extra && extra[i] && n < 39; i++)
		opts[n++] = extra[i];
	opts[n] = NULL;
	it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	if (it_mkdtemp(&env, "mnt", dir, sizeof(dir)) < 0)
		return -1;
	return it_mount_at(&env, src, env.endpoint, dir, opts, env_set, &mnt);
}

static void mount_ok(const char *const *extra, const char *const *env_set)
{
	struct stat st;

	if (mount_try(extra, env_set) != 0)
		cr_assert_fail("mount failed (status %d): %s", mnt.status, it_mount_log(&mnt));
	/* the kernel has answered once: an unmount now is an unmount, not a
	 * mount that never came up */
	cr_assert_eq(stat(mnt.dir, &st), 0, "stat %s: %s", mnt.dir, strerror(errno));
}

/* SIGKILL the daemon, reap it, unmount lazily (readers get ENOTCONN). */
static void kill_daemon(void)
{
	cr_assert_gt(mnt.pid, 0);
	cr_assert_eq(kill(mnt.pid, SIGKILL), 0);
	cr_assert_eq(it_wait_pid(mnt.pid, 20.0), 128 + SIGKILL);
	mnt.pid = 0;
	umount2(mnt.dir, MNT_DETACH);
	it_unmount(&mnt);   /* nothing left to do but forget it */
}

static long long stat_of(const char *name)
{
	long long v = it_daemon_stat(&mnt, name);

	cr_assert_geq(v, 0, "no counter %s", name);
	return v;
}

/* Read all of o through the mount and compare; fails the test. */
static void read_ok(const struct obj *o)
{
	char p[PATH_MAX];

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, o->key);
	it_read_ok(p, o->seed, o->size);
}

static void read_all_ok(const struct obj *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		read_ok(&o[i]);
}

/* ---- the cache directory, from outside ------------------------------- */

/* objects/XX/NAME of an object version, relative to the cache dir. */
static void object_file(const char *key, const char *etag, char *out, size_t n)
{
	size_t kl = strlen(key), el = strlen(etag);
	char *buf = malloc(kl + el + 2);
	XXH128_hash_t h;
	char hex[33];

	buf[0] = 'o';
	memcpy(buf + 1, key, kl + 1);
	memcpy(buf + 2 + kl, etag, el);
	h = XXH3_128bits(buf, kl + el + 2);
	free(buf);
	snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64, (uint64_t)h.high64,
		 (uint64_t)h.low64);
	it_fmt(out, n, "objects/%.2s/%s", hex, hex);
}

struct ix_rec {
	char key[256], etag[128];
	uint64_t index, data_len;
	char file[64];
};

struct ix_list {
	struct ix_rec *v;
	size_t n, cap;
};

static int collect_rec(void *ctx, const struct chunk_id *id, const struct cache_index_rec *rec)
{
	struct ix_list *l = ctx;
	struct ix_rec *r;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	r = &l->v[l->n++];
	it_fmt(r->key, sizeof(r->key), "%s", id->key);
	it_fmt(r->etag, sizeof(r->etag), "%s", id->etag);
	r->index = id->index;
	r->data_len = rec->data_len;
	object_file(id->key, id->etag, r->file, sizeof(r->file));
	return 0;
}

/* Every chunk record of the (closed) cache's index. */
static struct ix_list index_records(void)
{
	struct ix_list l = { 0 };
	struct cache_index *ix;
	char err[512];

	cr_assert_eq(cache_index_open(cache_dir, &ix, err, sizeof(err)), TFS_OK, "%s", err);
	cr_assert_eq(cache_index_chunk_scan(ix, collect_rec, &l), TFS_OK);
	cache_index_close(ix);
	return l;
}

struct disk_use {
	uint64_t allocated;   /* st_blocks * 512 of the object files */
	unsigned files;
	unsigned strays;      /* anything under objects/ the format never writes */
	char stray[PATH_MAX];
};

/* Walk objects/: XX directories holding 32-hex-digit files, nothing else. */
static struct disk_use disk_use(void)
{
	struct disk_use u = { 0 };
	char top[PATH_MAX];
	DIR *d;
	struct dirent *de;

	it_fmt(top, sizeof(top), "%s/objects", cache_dir);
	d = opendir(top);
	cr_assert_not_null(d, "%s: %s", top, strerror(errno));
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		DIR *sd;
		struct dirent *fe;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		it_fmt(sub, sizeof(sub), "%s/%s", top, de->d_name);
		sd = strlen(de->d_name) == 2 ? opendir(sub) : NULL;
		if (!sd) {
			u.strays++;
			it_fmt(u.stray, sizeof(u.stray), "%s", sub);
			continue;
		}
		while ((fe = readdir(sd))) {
			char p[PATH_MAX];
			struct stat st;

			if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
				continue;
			it_fmt(p, sizeof(p), "%s/%s", sub, fe->d_name);
			if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode) || strlen(fe->d_name) != 32 ||
			    strncmp(fe->d_name, de->d_name, 2) != 0) {
				u.strays++;
				it_fmt(u.stray, sizeof(u.stray), "%s", p);
				continue;
			}
			u.files++;
			u.allocated += (uint64_t)st.st_blocks * 512;
		}
		closedir(sd);
	}
	closedir(d);
	return u;
}

/* The allowance of the disk check: a file's allocated blocks hold its
 * chunks' bytes rounded up to 4 KiB, exactly, plus what the filesystem
 * adds for a sparse file's extent tree: at most one 4 KiB block per
 * object file on ext4 (its holes need more extents than the inode holds),
 * nothing on tmpfs. */
#define DISK_SLACK_PER_FILE 4096u

static uint64_t round4k(uint64_t n)
{
	return (n + 4095) & ~(uint64_t)4095;
}

/* The daemon's accounting against the disk: ssd.bytes_used is what the
 * object files take, within the stated slack.  The daemon must be idle. */
static void check_accounting(const char *when)
{
	struct disk_use u = disk_use();
	long long used = stat_of("ssd.bytes_used");

	cr_assert_eq(u.strays, 0, "%s: stray file under objects/: %s", when, u.stray);
	cr_assert_geq(u.allocated, (uint64_t)used,
		      "%s: the cache counts %lld bytes, the disk holds %" PRIu64 " (%u files)", when,
		      used, u.allocated, u.files);
	cr_assert_leq(u.allocated, (uint64_t)used + (uint64_t)u.files * DISK_SLACK_PER_FILE,
		      "%s: the disk holds %" PRIu64 " bytes in %u files, the cache counts %lld", when,
		      u.allocated, u.files, used);
}

/* With the daemon stopped: every file under objects/ is named by a record
 * of the index, every record's file is there and long enough, and the
 * records account for the files' blocks.  Returns the records. */
static struct ix_list check_offline(const char *when)
{
	struct ix_list l = index_records();
	struct disk_use u = disk_use();
	uint64_t accounted = 0;
	unsigned named = 0;

	cr_assert_eq(u.strays, 0, "%s: stray file under objects/: %s", when, u.stray);
	for (size_t i = 0; i < l.n; i++) {
		char p[PATH_MAX];
		struct stat st;
		bool first = true;

		it_fmt(p, sizeof(p), "%s/%s", cache_dir, l.v[i].file);
		cr_assert_eq(stat(p, &st), 0, "%s: record %s#%" PRIu64 " has no file %s", when,
			     l.v[i].key, l.v[i].index, p);
		cr_assert_geq((uint64_t)st.st_size, l.v[i].index * CHUNK + l.v[i].data_len,
			      "%s: %s is too short for chunk %" PRIu64, when, p, l.v[i].index);
		accounted += round4k(l.v[i].data_len);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(l.v[k].file, l.v[i].file))
				first = false;
		named += first;
	}
	cr_assert_eq(named, u.files, "%s: %u object files on disk, %u named by the index (leak)",
		     when, u.files, named);
	cr_assert_geq(u.allocated, accounted, "%s: records account %" PRIu64 " bytes, files hold %" PRIu64,
		      when, accounted, u.allocated);
	cr_assert_leq(u.allocated, accounted + (uint64_t)u.files * DISK_SLACK_PER_FILE,
		      "%s: files hold %" PRIu64 " bytes, records account %" PRIu64, when, u.allocated,
		      accounted);
	return l;
}

/* ---- the kill loop ----------------------------------------------------- */

struct reader {
	pthread_t th;
	uint64_t rng;
	const struct obj *o;
	size_t n;
	const char *dir;
	atomic_bool *killed;
	atomic_bool *stop;
	uint64_t bytes_ok, reads_ok;
	char fail[512];            /* the first wrong thing seen, or "" */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Read random ranges of random files and check every byte returned.  An
 * error is wrong only before the kill; a wrong byte is wrong always. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(6 * CHUNK);

	while (!atomic_load(r->stop)) {
		const struct obj *o = &r->o[rnd(&r->rng) % r->n];
		uint64_t off = 0, len = o->size;
		char p[PATH_MAX];
		ssize_t got;
		int64_t bad;
		int fd;

		if (rnd(&r->rng) % 2 && o->size > 1) {
			off = rnd(&r->rng) % o->size;
			len = 1 + rnd(&r->rng) % (o->size - off);
		}
		if (len > 6 * CHUNK)
			len = 6 * CHUNK;
		it_fmt(p, sizeof(p), "%s/%s", r->dir, o->key);
		fd = open(p, O_RDONLY);
		if (fd < 0) {
			if (!atomic_load(r->killed))
				snprintf(r->fail, sizeof(r->fail), "open %s: %s", o->key, strerror(errno));
			break;
		}
		got = it_pread_full(fd, buf, len, (off_t)off);
		int err = errno;
		close(fd);
		if (got > 0) {
			bad = it_gen_mismatch(o->seed, off, buf, (size_t)got);
			if (bad >= 0) {
				snprintf(r->fail, sizeof(r->fail), "%s: wrong byte at %" PRIu64, o->key,
					 off + (uint64_t)bad);
				break;
			}
			r->bytes_ok += (uint64_t)got;
		}
		if (got == (ssize_t)len) {
			r->reads_ok++;
			continue;
		}
		if (!atomic_load(r->killed))
			snprintf(r->fail, sizeof(r->fail), "read %s [%" PRIu64 ", +%" PRIu64 "): %zd (%s)",
				 o->key, off, len, got, got < 0 ? strerror(err) : "short");
		break;
	}
	free(buf);
	return NULL;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : dflt;
}

Test(crash, kill_loop_serves_exact_bytes_and_keeps_disk_and_index_in_step)
{
	uint64_t seed = env_u64("TIERFS_CRASH_SEED", (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16));
	unsigned kills = (unsigned)env_u64("TIERFS_CRASH_KILLS", 20);
	uint64_t rng = seed | 1, total, bytes = 0, reads = 0;
	/* a RAM tier of 4 chunks and an SSD tier of 12 for 22 MiB: every
	 * round evicts, punches and rewrites */
	const char *base[] = { "--ram-size", "4M", "--ssd-size", "12M", NULL };
	const char *dio[] = { "--ram-size", "4M", "--ssd-size", "12M", "--direct-io", NULL };
	char when[64];

	fprintf(stderr, "kill loop: seed %" PRIu64 " (TIERFS_CRASH_SEED=%" PRIu64 " repeats it), %u kills\n",
		seed, seed, kills);
	cr_log_info("kill loop seed %" PRIu64, seed);
	total = upload_fixture(objs, NOBJ, "k");
	for (unsigned i = 0; i < kills; i++) {
		atomic_bool killed = false, stop = false;
		struct reader rd[4];
		double delay;

		/* a restart after a kill: the daemon's count is the disk's; every
		 * fourth round, also what the index names (read offline, so the
		 * daemon is stopped cleanly first and started again) */
		mount_ok(i % 2 ? dio : base, NULL);
		it_fmt(when, sizeof(when), "restart %u", i);
		check_accounting(when);
		if (i % 4 == 0) {
			cr_assert_eq(it_unmount(&mnt), 0, "clean unmount after restart %u: %s", i,
				     it_mount_log(&mnt));
			free(check_offline(when).v);
			mount_ok(i % 2 ? dio : base, NULL);
		}
		for (size_t k = 0; k < 4; k++) {
			rd[k] = (struct reader){ .rng = rnd(&rng) | 1, .o = objs, .n = NOBJ,
						 .dir = mnt.dir, .killed = &killed, .stop = &stop };
			cr_assert_eq(pthread_create(&rd[k].th, NULL, reader_main, &rd[k]), 0);
		}
		delay = 0.05 + (double)(rnd(&rng) % 1500) / 1000.0;
		usleep((useconds_t)(delay * 1e6));
		atomic_store(&killed, true);
		kill_daemon();
		atomic_store(&stop, true);
		for (size_t k = 0; k < 4; k++) {
			pthread_join(rd[k].th, NULL);
			cr_assert_eq(rd[k].fail[0], '\0', "round %u (seed %" PRIu64 "): %s", i, seed,
				     rd[k].fail);
			bytes += rd[k].bytes_ok;
			reads += rd[k].reads_ok;
		}
	}
	/* the last restart: everything reads right, nothing was lost or leaked */
	mount_ok(base, NULL);
	check_accounting("last restart");
	read_all_ok(objs, NOBJ);
	it_ssd_settle(&mnt, 60.0);
	check_accounting("after the last reads");
	it_unmount_ok(&env, &mnt);
	free(check_offline("the end").v);
	cr_log_info("kill loop: %u kills, %" PRIu64 " reads (%" PRIu64 " MiB) checked over %" PRIu64 " MiB of objects",
		    kills, reads, bytes >> 20, total >> 20);
	fprintf(stderr, "kill loop: %u kills, %" PRIu64 " reads (%" PRIu64 " MiB) checked\n", kills,
		reads, bytes >> 20);
	cr_assert_gt(reads, kills, "the readers hardly read: the loop proves little");
}

/* ---- corruption -------------------------------------------------------- */

static unsigned chunks_of(const struct obj *o, size_t n)
{
	unsigned c = 0;

	for (size_t i = 0; i < n; i++)
		c += (unsigned)((o[i].size + CHUNK - 1) / CHUNK);
	return c;
}

/* Flip one byte of the stored chunk r, in the middle of its data. */
static void flip_chunk_byte(const struct ix_rec *r)
{
	char p[PATH_MAX];
	off_t off = (off_t)(r->index * CHUNK + r->data_len / 2);
	unsigned char b;
	int fd;

	it_fmt(p, sizeof(p), "%s/%s", cache_dir, r->file);
	fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

/* `tierfs ARGS...` must succeed. */
static void cli_ok(const char *const *args)
{
	struct it_run r;

	cr_assert_eq(it_run_tierfs(&env, args, NULL, 120, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs %s: %s", args[0], r.out);
	it_run_release(&r);
}

Test(crash, corrupt_chunk_bytes_offline_and_while_mounted_are_counted_misses)
{
	/* room for the writer's queue; every read checked (passthrough reads
	 * are not: their corruption is the background scrub's to find); no
	 * scrub, so that each damaged chunk is found by its reader alone and
	 * counted once */
	const char *extra[] = { "--ram-size", "64M", "--verify-reads", "--scrub-rate", "0", NULL };
	const char *evict_ram[] = { "evict", "--tier", "ram", "--all", mnt.dir, NULL };
	unsigned chunks, flipped = 0, flipped2 = 0;
	struct ix_list l;
	long long fail0;

	upload_fixture(objs, NOBJ, "c");
	chunks = chunks_of(objs, NOBJ);
	mount_ok(extra, NULL);
	read_all_ok(objs, NOBJ);
	it_ssd_settle(&mnt, 60.0);
	cr_assert_eq(stat_of("ssd.entries"), chunks, "every chunk is on SSD before the damage");
	cr_assert_eq(it_unmount(&mnt), 0);

	/* offline: a byte flipped in every third chunk */
	l = check_offline("stored");
	cr_assert_eq(l.n, chunks);
	for (size_t i = 0; i < l.n; i += 3, flipped++)
		flip_chunk_byte(&l.v[i]);
	mount_ok(extra, NULL);
	read_all_ok(objs, NOBJ);
	cr_expect_eq(stat_of("ssd.checksum_failures"), flipped,
		     "each damaged chunk is one checksum failure");
	/* the damaged chunks' bytes came from the store (the bytes are
	 * exact), the others' from the SSD (hits count reads, not chunks) */
	cr_expect_gt(stat_of("ssd.hits"), 0, "nothing read from the SSD: the test proves nothing");
	it_ssd_settle(&mnt, 60.0);
	check_accounting("after offline damage");

	/* while mounted: the same chunks and their neighbours damaged under
	 * the daemon (the damaged ones were stored again, at the same place) */
	fail0 = stat_of("ssd.checksum_failures");
	for (size_t i = 0; i < l.n; i += 2, flipped2++)
		flip_chunk_byte(&l.v[i]);
	cli_ok(evict_ram);
	it_drop_caches();
	read_all_ok(objs, NOBJ);
	cr_expect_eq(stat_of("ssd.checksum_failures") - fail0, flipped2,
		     "each chunk damaged while mounted is one checksum failure");
	it_ssd_settle(&mnt, 60.0);
	check_accounting("after damage while mounted");
	it_unmount_ok(&env, &mnt);
	free(check_offline("the end").v);
	free(l.v);
	cr_log_info("%u chunks damaged offline, %u while mounted, all caught", flipped, flipped2);
}

/* Write value (len bytes) under chunk id's index key straight through
 * RocksDB: a record the index's own API would never write. */
static void raw_put(const struct chunk_id *id, const void *value, size_t len)
{
	char key[512], path[PATH_MAX];
	char *err = NULL;
	size_t kl = cache_index_chunk_key(id, key, sizeof(key));
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_t *db;

	cr_assert_leq(kl, sizeof(key));
	it_fmt(path, sizeof(path), "%s/index", cache_dir);
	db = rocksdb_open(o, path, &err);
	cr_assert_null(err, "rocksdb_open: %s", err);
	rocksdb_put(db, wo, key, kl, value, len, &err);
	cr_assert_null(err, "rocksdb_put: %s", err);
	rocksdb_close(db);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
}

Test(crash, corrupt_index_records_are_misses_or_dropped_never_wrong_bytes)
{
	/* room for the writer's queue; every read checked (passthrough reads
	 * are not: their corruption is the background scrub's to find); no
	 * scrub, so that each damaged chunk is found by its reader alone and
	 * counted once */
	const char *extra[] = { "--ram-size", "64M", "--verify-reads", "--scrub-rate", "0", NULL };
	struct cache_index_rec *rec = malloc(sizeof(*rec));
	unsigned chunks, sums_bad = 0, len_bad = 0;
	struct cache_index *ix;
	struct ix_list l;
	char err[512];

	upload_fixture(objs, NOBJ, "i");
	chunks = chunks_of(objs, NOBJ);
	mount_ok(extra, NULL);
	read_all_ok(objs, NOBJ);
	it_ssd_settle(&mnt, 60.0);
	cr_assert_eq(it_unmount(&mnt), 0);
	l = check_offline("stored");
	cr_assert_eq(l.n, chunks);

	cr_assert_eq(cache_index_open(cache_dir, &ix, err, sizeof(err)), TFS_OK, "%s", err);
	for (size_t i = 0; i < l.n; i++) {
		struct chunk_id id = { l.v[i].key, l.v[i].etag, l.v[i].index };

		cr_assert_eq(cache_index_chunk_get(ix, &id, rec), TFS_OK);
		switch (i % 6) {
		case 0:   /* a block's checksum wrong: caught when read */
			rec->sums[rec->nblocks - 1] ^= 0x10000;
			sums_bad++;
			break;
		case 1:   /* a length that is not the chunk's */
			if (rec->data_len > 1) {
				rec->data_len -= 1;
				len_bad++;
			}
			break;
		case 2:   /* a block size the format never writes */
			rec->block_size = 4096;
			break;
		case 3:   /* longer than a chunk */
			rec->data_len = CHUNK + 4096;
			break;
		default:
			continue;
		}
		cr_assert_eq(cache_index_chunk_put(ix, &id, rec), TFS_OK);
	}
	/* a record of a chunk that was never stored: its file is missing */
	{
		struct chunk_id ghost = { "i/ghost.bin", "\"0123\"", 0 };

		rec->data_len = 4096;
		rec->nblocks = 1;
		rec->block_size = 64 << 10;
		cr_assert_eq(cache_index_chunk_put(ix, &ghost, rec), TFS_OK);
	}
	cache_index_close(ix);
	/* and values that do not decode at all */
	for (size_t i = 4; i < l.n; i += 6) {
		struct chunk_id id = { l.v[i].key, l.v[i].etag, l.v[i].index };

		raw_put(&id, i % 12 == 4 ? "garbage" : "", i % 12 == 4 ? 7 : 0);
	}

	mount_ok(extra, NULL);
	check_accounting("restart over a damaged index");
	read_all_ok(objs, NOBJ);
	cr_expect_eq(stat_of("ssd.checksum_failures"), sums_bad + len_bad,
		     "a record whose checksum or length is wrong is a counted miss");
	cr_expect_leq(stat_of("ssd.hits"), (long long)(l.n - sums_bad - len_bad) + 0LL,
		      "a damaged record served a hit");
	it_ssd_settle(&mnt, 60.0);
	check_accounting("after reading everything again");
	it_unmount_ok(&env, &mnt);
	{
		struct ix_list after = check_offline("the end");

		for (size_t i = 0; i < after.n; i++)
			cr_expect_neq(strcmp(after.v[i].key, "i/ghost.bin"), 0,
				      "a record without its file survived");
		free(after.v);
	}
	free(l.v);
	free(rec);
}

/* ---- a full or failing cache disk ------------------------------------- */

/* Mount a tmpfs with opts at a fresh directory and put the cache in it. */
static void cache_on_tmpfs(const char *opts)
{
	char parent[PATH_MAX];

	cr_assert_eq(it_mkdtemp(&env, "tmpfs", parent, sizeof(parent)), 0);
	it_fmt(tmpfs_dir, sizeof(tmpfs_dir), "%s", parent);
	cr_assert_eq(mount("tmpfs", tmpfs_dir, "tmpfs", 0, opts), 0, "mount tmpfs %s: %s", opts,
		     strerror(errno));
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", tmpfs_dir);
}

static void tmpfs_release(void)
{
	cr_assert_eq(umount2(tmpfs_dir, 0), 0, "umount tmpfs: %s", strerror(errno));
	tmpfs_dir[0] = '\0';
}

/* The daemon is alive and its mount answers. */
static void daemon_alive(void)
{
	struct stat st;

	cr_assert_gt(mnt.pid, 0);
	cr_assert_eq(kill(mnt.pid, 0), 0, "the daemon died");
	cr_assert_eq(stat(mnt.dir, &st), 0, "the mount does not answer: %s", strerror(errno));
}

/* Read everything twice, the second time from below RAM; then wait for
 * the SSD writer, so what the test counts next is final. */
static void read_twice(const struct obj *o, size_t n)
{
	const char *evict_ram[] = { "evict", "--tier", "ram", "--all", mnt.dir, NULL };

	read_all_ok(o, n);
	it_ssd_settle(&mnt, 60.0);
	cli_ok(evict_ram);
	it_drop_caches();
	read_all_ok(o, n);
	it_ssd_settle(&mnt, 60.0);
}

Test(crash, cache_disk_full_of_bytes_keeps_its_margin_and_serves_exact_bytes)
{
	/* a 16 MiB disk under a tier told it may take 64 MiB, and keep 25% free */
	const char *extra[] = { "--ram-size", "8M", "--ssd-size", "64M", "--ssd-min-free", "25", NULL };
	struct statvfs sv;
	uint64_t margin, avail, total;
	char s[8192];

	cache_on_tmpfs("size=16m,mode=0700");
	total = upload_fixture(objs, NOBJ, "b");
	mount_ok(extra, NULL);
	read_twice(objs, NOBJ);
	daemon_alive();
	cr_assert_eq(statvfs(cache_dir, &sv), 0);
	margin = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * 25;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	/* the margin is checked before each chunk is written; what may eat
	 * into it is the index's own growth: at most 1 MiB here */
	cr_expect_geq(avail + IT_MIB, margin, "%" PRIu64 " bytes free, the margin is %" PRIu64 ": %s",
		      avail, margin, s);
	cr_expect_gt(it_stats_get(s, "ssd.evictions") + it_stats_get(s, "ssd.dropped") +
			     it_stats_get(s, "ssd.rejected"), 0,
		     "%" PRIu64 " MiB through a 16 MiB disk and nothing had to give way: %s",
		     total >> 20, s);
	check_accounting("full disk");
	cr_log_info("16 MiB disk, 25%% margin: %" PRIu64 " KiB free (margin %" PRIu64 " KiB); %s",
		    avail >> 10, margin >> 10, s);
	it_unmount_ok(&env, &mnt);
	free(check_offline("full disk").v);
	tmpfs_release();
}

Test(crash, cache_disk_out_of_inodes_serves_exact_bytes)
{
	/* room for the index's files and a few object files, not for all */
	const char *extra[] = { "--ram-size", "8M", "--ssd-size", "64M", "--ssd-min-free", "0", NULL };
	char s[8192];

	cache_on_tmpfs("size=64m,nr_inodes=24,mode=0700");
	upload_fixture(objs, NOBJ, "n");
	mount_ok(extra, NULL);
	read_twice(objs, NOBJ);
	daemon_alive();
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	cr_expect_gt(it_stats_get(s, "ssd.io_errors"), 0, "no write failed for want of inodes: %s", s);
	cr_expect_lt(it_stats_get(s, "ssd.entries"), chunks_of(objs, NOBJ), "%s", s);
	check_accounting("out of inodes");
	cr_log_info("out of inodes: %s", s);
	it_unmount_ok(&env, &mnt);
	/* a restart on the same full disk: the index cannot even open (it
	 * needs new files), and the mount goes on without the SSD tier */
	mount_ok(extra, NULL);
	read_all_ok(objs, NOBJ);
	daemon_alive();
	it_unmount_ok(&env, &mnt);
	{
		char *log = it_mount_log(&mnt);

		cr_log_info("restart out of inodes: %s",
			    strstr(log, "without the SSD tier") ? "without the SSD tier" : "with it");
		free(log);
	}
	/* inodes for the offline check's own opening of the index */
	cr_assert_eq(mount("tmpfs", tmpfs_dir, "tmpfs", MS_REMOUNT, "nr_inodes=1000"), 0,
		     "remount: %s", strerror(errno));
	free(check_offline("out of inodes").v);
	tmpfs_release();
}

/* The environment of a daemon under tests/tools/iofault.c: the shim
 * beside TIERFS_BIN, failing every `every`th call of ops with err. */
struct iofault_env {
	char preload[PATH_MAX], asan[1024], ops[64], every[64], err[64], log[PATH_MAX + 32];
	char direct[64];
	const char *set[8];
};

/* direct: only reads and writes around the page cache (O_DIRECT) fail */
static void iofault_env(struct iofault_env *f, const char *ops, unsigned every, const char *err,
			const char *logpath, bool direct)
{
	char bin[PATH_MAX];
	const char *a = getenv("ASAN_OPTIONS");
	char *slash;

	it_fmt(bin, sizeof(bin), "%s", env.tierfs_bin);
	slash = strrchr(bin, '/');
	cr_assert_not_null(slash);
	*slash = '\0';
	it_fmt(f->preload, sizeof(f->preload), "LD_PRELOAD=%s/tests/libtierfs-iofault.so", bin);
	cr_assert_eq(access(f->preload + strlen("LD_PRELOAD="), R_OK), 0, "%s: %s", f->preload,
		     strerror(errno));
	/* the shim comes before the sanitizer's runtime: let it */
	it_fmt(f->asan, sizeof(f->asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0", a ? a : "",
	       a && *a ? ":" : "");
	it_fmt(f->ops, sizeof(f->ops), "TIERFS_IOFAULT_OPS=%s", ops);
	it_fmt(f->every, sizeof(f->every), "TIERFS_IOFAULT_EVERY=%u", every);
	it_fmt(f->err, sizeof(f->err), "TIERFS_IOFAULT_ERRNO=%s", err);
	it_fmt(f->log, sizeof(f->log), "TIERFS_IOFAULT_LOG=%s", logpath);
	f->set[0] = f->preload;
	f->set[1] = f->asan;
	f->set[2] = f->ops;
	f->set[3] = f->every;
	f->set[4] = f->err;
	f->set[5] = f->log;
	it_fmt(f->direct, sizeof(f->direct), "TIERFS_IOFAULT_DIRECT=%d", direct ? 1 : 0);
	f->set[6] = f->direct;
	f->set[7] = NULL;
}

static unsigned count_lines(const char *path)
{
	size_t len = 0;
	char *s = it_read_file(path, &len);
	unsigned n = 0;

	for (size_t i = 0; s && i < len; i++)
		n += s[i] == '\n';
	free(s);
	return n;
}

/* A disk whose calls fail on a schedule: reads stay exact, the daemon
 * stays up, each failure is counted, and after a restart without faults
 * the cache is whole (nothing leaked, the accounting right). */
static void failing_disk(const char *ops, unsigned every, const char *err)
{
	/* the daemon's own reads of the disk: under passthrough the kernel
	 * reads the cache's files and its errors are the reader's (see
	 * docs/caching.md, passthrough) */
	const char *extra[] = { "--ram-size", "8M", "--passthrough", "off", NULL };
	struct iofault_env f;
	char logpath[PATH_MAX], s[8192];
	unsigned injected;

	it_fmt(logpath, sizeof(logpath), "%s/iofault-%d.log", env.tmp, (int)getpid());
	unlink(logpath);
	/* a cache filled on a good disk, so reads meet the faults too (when
	 * they fail; failing writes need chunks still to store) */
	if (strstr(ops, "pread")) {
		mount_ok(extra, NULL);
		read_all_ok(objs, NOBJ);
		it_ssd_settle(&mnt, 60.0);
		it_unmount_ok(&env, &mnt);
	}
	iofault_env(&f, ops, every, err, logpath, false);
	mount_ok(extra, f.set);
	read_twice(objs, NOBJ);
	daemon_alive();
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	injected = count_lines(logpath);
	cr_expect_gt(injected, 0, "the shim injected nothing: the test proves nothing");
	cr_expect_gt(it_stats_get(s, "ssd.io_errors"), 0, "%u faults, none counted: %s", injected, s);
	cr_expect_leq(it_stats_get(s, "ssd.io_errors"), injected, "%s", s);
	cr_log_info("%s failing with %s every %u calls: %u injected; %s", ops, err, every, injected, s);
	it_unmount_ok(&env, &mnt);
	unlink(logpath);
	free(check_offline("after a failing disk").v);
	mount_ok(extra, NULL);
	check_accounting("after a failing disk");
	read_all_ok(objs, NOBJ);
	it_unmount_ok(&env, &mnt);
}

Test(crash, cache_disk_io_errors_are_counted_never_served)
{
	upload_fixture(objs, NOBJ, "e");
	failing_disk("pread,pwrite,fsync", 3, "EIO");
}

Test(crash, cache_disk_enospc_on_writes_is_counted_never_served)
{
	upload_fixture(objs, NOBJ, "s");
	failing_disk("pwrite", 2, "ENOSPC");
}

/* Skip a test of reads or writes around the page cache where the test
 * directory's filesystem has none (tmpfs before Linux 6.6): no such read
 * or write to fail. */
static void skip_without_direct_io(void)
{
	char probe[PATH_MAX];
	int fd;

	it_fmt(probe, sizeof(probe), "%s.probe", cache_dir);
	fd = open(probe, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0 && errno == EINVAL)
		cr_skip_test("the test directory's filesystem refuses O_DIRECT");
	cr_assert_geq(fd, 0, "%s: %s", probe, strerror(errno));
	close(fd);
	unlink(probe);
}

/* A device that fails every read while the page cache still holds what
 * was just written: the SSD tier reads each chunk back around the page
 * cache before it keeps it, and a read back that fails is the device's
 * answer (counted, the tier degraded, the chunk not kept), not a reason
 * to check the page cache's copy instead.  Reads stay exact. */
Test(crash, a_chunk_the_device_cannot_read_back_is_not_kept)
{
	const char *extra[] = { "--ram-size", "8M", "--passthrough", "off", NULL };
	char logpath[PATH_MAX], s[8192];
	struct iofault_env f;

	skip_without_direct_io();
	upload_fixture(objs, NOBJ, "v");
	it_fmt(logpath, sizeof(logpath), "%s/iofault-%d.log", env.tmp, (int)getpid());
	unlink(logpath);
	iofault_env(&f, "pread", 1, "EIO", logpath, true);
	mount_ok(extra, f.set);
	read_twice(objs, NOBJ);
	daemon_alive();
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	cr_expect_gt(count_lines(logpath), 0, "the shim injected nothing: the test proves nothing");
	cr_expect_eq(it_stats_get(s, "ssd.entries"), 0, "kept what the disk could not read back: %s",
		     s);
	cr_expect_gt(it_stats_get(s, "ssd.io_errors"), 0, "%s", s);
	cr_expect_eq(it_stats_get(s, "ssd.checksum_failures"), 0, "an I/O error is no bad checksum: %s",
		     s);
	it_unmount_ok(&env, &mnt);
	unlink(logpath);
}

/* A filesystem that opens files O_DIRECT but refuses such writes (EINVAL
 * on every one): the SSD tier writes its chunks around the page cache
 * where it can, and here writes them through it instead.  Every chunk is
 * kept, no I/O error is counted, and after a restart every byte is read
 * back exact from the SSD tier (the fixture's sizes end on and off page
 * and chunk edges: the partial last pages too). */
Test(crash, chunks_refused_direct_writes_are_written_through_the_page_cache)
{
	const char *extra[] = { "--ram-size", "8M", "--passthrough", "off", NULL };
	char logpath[PATH_MAX], s[8192];
	struct iofault_env f;
	unsigned chunks;

	skip_without_direct_io();
	upload_fixture(objs, NOBJ, "w");
	chunks = chunks_of(objs, NOBJ);
	it_fmt(logpath, sizeof(logpath), "%s/iofault-%d.log", env.tmp, (int)getpid());
	unlink(logpath);
	iofault_env(&f, "pwrite", 1, "EINVAL", logpath, true);
	mount_ok(extra, f.set);
	read_all_ok(objs, NOBJ);
	it_ssd_settle(&mnt, 60.0);
	daemon_alive();
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	cr_expect_gt(count_lines(logpath), 0, "the shim injected nothing: the test proves nothing");
	cr_expect_eq(it_stats_get(s, "ssd.entries"), chunks, "%s", s);
	cr_expect_eq(it_stats_get(s, "ssd.io_errors"), 0, "a refused O_DIRECT is no I/O error: %s", s);
	it_unmount_ok(&env, &mnt);

	mount_ok(extra, NULL);
	it_drop_caches();
	read_all_ok(objs, NOBJ);
	cr_assert_eq(it_daemon_stats(&mnt, s, sizeof(s)), 0);
	cr_expect_geq(it_stats_get(s, "ssd.hits"), chunks, "%s", s);
	cr_expect_eq(it_stats_get(s, "ssd.checksum_failures"), 0, "%s", s);
	cr_expect_eq(it_stats_get(s, "store.fetches"), 0, "a stored chunk fetched again: %s", s);
	it_unmount_ok(&env, &mnt);
	unlink(logpath);
}

/* ---- memory and descriptors ------------------------------------------ */

/* A field of /proc/PID/status in KiB ("VmRSS", "VmHWM"), -1 if absent. */
static long long proc_status_kib(pid_t pid, const char *field)
{
	char p[64], *s, *at;
	long long v = -1;

	it_fmt(p, sizeof(p), "/proc/%d/status", (int)pid);
	s = it_read_file(p, NULL);
	if (!s)
		return -1;
	at = strstr(s, field);
	if (at && at[strlen(field)] == ':')
		v = strtoll(at + strlen(field) + 1, NULL, 10);
	free(s);
	return v;
}

#define MAX_TCP 4096

/* Appends the socket inodes of the table /proc/PID/net/FILE (tcp, tcp6)
 * to ino[*n .. MAX_TCP), but 0 (TIME_WAIT: no socket left). */
static void net_table_inodes(pid_t pid, const char *file, unsigned long *ino, size_t *n)
{
	char p[64], line[512];
	FILE *f;

	it_fmt(p, sizeof(p), "/proc/%d/net/%s", (int)pid, file);
	f = fopen(p, "r");
	if (!f)
		return;
	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
	while (*n < MAX_TCP && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu", &ino[*n]) == 1 &&
		    ino[*n] != 0)
			(*n)++;
	fclose(f);
}

/* The daemon's open descriptors: *tcp of them TCP sockets, *other_sockets
 * the other sockets, the rest (files, pipes, devices) returned. */
static unsigned count_fds(pid_t pid, unsigned *tcp, unsigned *other_sockets)
{
	char p[64];
	DIR *d;
	struct dirent *de;
	unsigned long tcp_ino[MAX_TCP];
	size_t n_tcp = 0;
	unsigned n = 0;

	*tcp = *other_sockets = 0;
	net_table_inodes(pid, "tcp", tcp_ino, &n_tcp);
	net_table_inodes(pid, "tcp6", tcp_ino, &n_tcp);
	it_fmt(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	cr_assert_not_null(d, "%s: %s", p, strerror(errno));
	while ((de = readdir(d))) {
		char link[96], target[64];
		unsigned long ino;
		ssize_t len;
		size_t i;

		if (de->d_name[0] == '.')
			continue;
		it_fmt(link, sizeof(link), "%s/%.16s", p, de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = '\0';
		if (sscanf(target, "socket:[%lu]", &ino) != 1) {
			n++;
			continue;
		}
		for (i = 0; i < n_tcp && tcp_ino[i] != ino; i++)
			;
		if (i < n_tcp)
			(*tcp)++;
		else
			(*other_sockets)++;
	}
	closedir(d);
	return n;
}

/* Does the daemon run under AddressSanitizer (its runtime mapped)? */
static bool under_asan(pid_t pid)
{
	char p[64], *s;
	bool yes;

	it_fmt(p, sizeof(p), "/proc/%d/maps", (int)pid);
	s = it_read_file(p, NULL);
	yes = s && strstr(s, "libasan");
	free(s);
	return yes;
}

struct stream_arg {
	pthread_t th;
	const struct obj *o;
	size_t first, n, step;
	char fail[256];
};

/* Read files first, first + step, ... whole, in 1 MiB reads, and check. */
static void *stream_main(void *arg)
{
	struct stream_arg *a = arg;
	char *buf = malloc(CHUNK);

	for (size_t i = a->first; i < a->n && !a->fail[0]; i += a->step) {
		const struct obj *o = &a->o[i];
		char p[PATH_MAX];
		int fd;

		it_fmt(p, sizeof(p), "%s/%s", mnt.dir, o->key);
		fd = open(p, O_RDONLY);
		if (fd < 0) {
			snprintf(a->fail, sizeof(a->fail), "open %s: %s", o->key, strerror(errno));
			break;
		}
		for (uint64_t off = 0; off < o->size; off += CHUNK) {
			size_t len = o->size - off < CHUNK ? (size_t)(o->size - off) : CHUNK;
			ssize_t r = it_pread_full(fd, buf, len, (off_t)off);
			int64_t bad;

			if (r != (ssize_t)len) {
				snprintf(a->fail, sizeof(a->fail), "read %s at %" PRIu64 ": %zd", o->key, off, r);
				break;
			}
			bad = it_gen_mismatch(o->seed, off, buf, len);
			if (bad >= 0) {
				snprintf(a->fail, sizeof(a->fail), "%s: wrong byte at %" PRIu64, o->key,
					 off + (uint64_t)bad);
				break;
			}
		}
		close(fd);
	}
	free(buf);
	return NULL;
}

/* Read files [0, n) with 4 readers; the daemon's largest RSS seen (KiB). */
static long long stream_all(const struct obj *o, size_t n)
{
	struct stream_arg a[4];
	bool joined[4] = { false };
	long long peak = 0;
	unsigned left = 4;

	for (size_t k = 0; k < 4; k++) {
		a[k] = (struct stream_arg){ .o = o, .first = k, .n = n, .step = 4 };
		cr_assert_eq(pthread_create(&a[k].th, NULL, stream_main, &a[k]), 0);
	}
	while (left) {
		long long rss = proc_status_kib(mnt.pid, "VmRSS");

		if (rss > peak)
			peak = rss;
		usleep(50000);
		for (size_t k = 0; k < 4; k++)
			if (!joined[k] && pthread_tryjoin_np(a[k].th, NULL) == 0) {
				joined[k] = true;
				left--;
			}
	}
	for (size_t k = 0; k < 4; k++)
		cr_assert_eq(a[k].fail[0], '\0', "%s", a[k].fail);
	return peak;
}

#define MEM_FILE (8 * IT_MIB)
#define MEM_RAM_MIB 64
#define MEM_MAX_CONNECTIONS 64   /* --max-connections' default */

Test(crash, rss_stays_within_the_ram_tier_and_descriptors_stay_flat)
{
#ifdef __SANITIZE_ADDRESS__
	uint64_t mib = env_u64("TIERFS_CRASH_MEM_MIB", 128);   /* ASan reads slowly */
#else
	uint64_t mib = env_u64("TIERFS_CRASH_MEM_MIB", 512);
#endif
	size_t n = (size_t)(mib * IT_MIB / MEM_FILE);
	struct obj *o = calloc(n, sizeof(*o));
	struct it_obj *up = calloc(n, sizeof(*up));
	const char *extra[] = { "--ram-size", "64M", "--ssd-size", "128M", NULL };
	const char *evict_ram[] = { "evict", "--tier", "ram", "--all", mnt.dir, NULL };
	long long peak, hwm, allowance_kib;
	unsigned fds[5], tcp[5], other[5];
	bool asan;

	cr_assert_geq(n, 8, "TIERFS_CRASH_MEM_MIB below 64");
	for (size_t i = 0; i < n; i++) {
		it_fmt(o[i].key, sizeof(o[i].key), "m/f%03zu.bin", i);
		o[i].seed = 0x3e3e0000u + i;
		o[i].size = MEM_FILE;
		up[i] = (struct it_obj){ o[i].key, o[i].seed, o[i].size };
	}
	cr_assert_eq(it_put_many(&bucket, up, n, 4), 0, "upload");
	mount_ok(extra, NULL);
	asan = under_asan(mnt.pid);
	/* The stated overhead above --ram-size: the index (RocksDB's write
	 * buffer and caches), the SSD writer's buffers, the threads' stacks,
	 * TLS and HTTP state, and read-ahead kept beside the tier: 160 MiB.
	 * Under AddressSanitizer every allocation costs its shadow and freed
	 * memory waits in quarantine: 2x the tier plus 512 MiB. */
	allowance_kib = asan ? (2 * MEM_RAM_MIB + 512) * 1024LL : (MEM_RAM_MIB + 160) * 1024LL;
	peak = stream_all(o, n);
	hwm = proc_status_kib(mnt.pid, "VmHWM");
	cr_log_info("%" PRIu64 " MiB through a %d MiB RAM tier%s: RSS peak %lld MiB sampled, %lld MiB VmHWM, allowance %lld MiB",
		    mib, MEM_RAM_MIB, asan ? " (ASan)" : "", peak >> 10, hwm >> 10, allowance_kib >> 10);
	fprintf(stderr, "memory: %" PRIu64 " MiB through a %d MiB RAM tier%s: VmHWM %lld MiB, allowance %lld MiB\n",
		mib, MEM_RAM_MIB, asan ? " (ASan)" : "", hwm >> 10, allowance_kib >> 10);
	cr_expect_gt(hwm, 0);
	cr_expect_leq(hwm, allowance_kib, "the daemon's RSS reached %lld MiB", hwm >> 10);

	/* Descriptors over epochs of the first 16 files, from SSD and store.
	 * Files, pipes and devices stay flat.  Sockets follow the store
	 * client's pool of curl handles, which grows as concurrency asks, up to
	 * --max-connections (default 64): each handle holds its TCP connection
	 * and the socket pair curl wakes itself with.  How many handles exist
	 * varies from run to run, and the pool has grown by three handles
	 * after the first epoch; so sockets are held to the pool's bound (and
	 * the control socket's few), which a leaked connection passes. */
	it_ssd_settle(&mnt, 60.0);
	for (int e = 0; e < 5; e++) {
		cli_ok(evict_ram);
		it_drop_caches();
		stream_all(o, 16);
		it_ssd_settle(&mnt, 60.0);
		fds[e] = count_fds(mnt.pid, &tcp[e], &other[e]);
	}
	fprintf(stderr, "descriptors after 5 epochs: %u %u %u %u %u, TCP %u %u %u %u %u, "
		"other sockets %u %u %u %u %u\n", fds[0], fds[1], fds[2], fds[3], fds[4], tcp[0],
		tcp[1], tcp[2], tcp[3], tcp[4], other[0], other[1], other[2], other[3], other[4]);
	for (int e = 0; e < 5; e++) {
		cr_expect_leq(fds[e], fds[0] + 4, "descriptors grew from %u to %u by epoch %d", fds[0],
			      fds[e], e + 1);
		cr_expect_leq(tcp[e], MEM_MAX_CONNECTIONS + 4, "%u TCP sockets after epoch %d",
			      tcp[e], e + 1);
		cr_expect_leq(other[e], 2 * MEM_MAX_CONNECTIONS + 8, "%u other sockets after epoch %d",
			      other[e], e + 1);
	}
	it_unmount_ok(&env, &mnt);
	free(o);
	free(up);
}
