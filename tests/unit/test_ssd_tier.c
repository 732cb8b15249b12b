/* Unit tests for src/tiers/ssd_tier: round trips, proof of bytes (block
 * checksums), restart, reconcile, bounds, directory safety, files the
 * kernel reads by itself, failures and concurrency. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/tfs_err.h"
#include "tiers/cache_index.h"
#include "tiers/ssd_tier.h"
#include "ssd_gate.h"
#include "tmpdir.h"

#define CS (64u * 1024)
#define OWNER "https://s3.test:9000 bucket prefix/"
/* what a chunk of len bytes takes on disk: whole 4 KiB blocks */
#define FILE_BYTES(len) ((((uint64_t)(len) + 4095) & ~(uint64_t)4095))

static char base[64];      /* mkdtemp'd per test */
static char cdir[128];     /* base/cache: the cache root (created by open) */
static bool mounted;

static atomic_int released;

static void setup(void)
{
	tmpdir_make(base, sizeof(base), "ssd");
	snprintf(cdir, sizeof(cdir), "%s/cache", base);
	atomic_store(&released, 0);
	mounted = false;
}

static void teardown(void)
{
	if (mounted)
		umount2(cdir, MNT_DETACH);   /* runs after a failed assertion too */
	mounted = false;
	tmpdir_remove(base);
}

TestSuite(ssd_tier, .init = setup, .fini = teardown, .timeout = 60);

static struct ssd_tier_config cfg_default(void)
{
	return (struct ssd_tier_config){ .dir = cdir, .owner = OWNER, .capacity = 0,
					 .min_free_pct = 0, .chunk_size = CS, .queue_max = 64,
					 .wipe = false };
}

static struct ssd_tier *tier_open(const struct ssd_tier_config *cfg)
{
	struct ssd_tier *t = NULL;
	char err[1024];
	int rc = ssd_tier_open(cfg, &t, err, sizeof(err));

	cr_assert_eq(rc, TFS_OK, "open: %s", err);
	cr_assert_not_null(t);
	return t;
}

/* Open that must fail; returns the message. */
static const char *tier_open_fails(const struct ssd_tier_config *cfg)
{
	static char err[1024];
	struct ssd_tier *t = (void *)1;
	int rc = ssd_tier_open(cfg, &t, err, sizeof(err));

	cr_assert_neq(rc, TFS_OK, "open succeeded");
	cr_assert_null(t);
	cr_assert_neq(err[0], '\0');
	return err;
}

static unsigned char pattern(const struct chunk_id *id, size_t i)
{
	uint64_t h = XXH3_64bits(id->key, strlen(id->key)) ^ XXH3_64bits(id->etag, strlen(id->etag));
	return (unsigned char)((h >> 8) + id->index * 31 + i * 7 + (i >> 12));
}

static void release_free(void *arg)
{
	free(arg);
	atomic_fetch_add(&released, 1);
}

/* Queue a patterned chunk through one of the store calls (a reader's
 * ssd_tier_store, a scan's ssd_tier_store_ahead, an operator's
 * ssd_tier_store_forced); the buffer is freed by the release callback. */
static bool store_kind(struct ssd_tier *t, const struct chunk_id *id, size_t len,
		       bool (*how)(struct ssd_tier *, const struct chunk_id *, const void *, size_t,
				   ssd_tier_release_fn, void *))
{
	unsigned char *b = malloc(len ? len : 1);

	cr_assert_not_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = pattern(id, i);
	return how(t, id, b, len, release_free, b);
}

/* ssd_tier_store(), true when queued. */
static bool reader_store(struct ssd_tier *t, const struct chunk_id *id, const void *data,
			 size_t len, ssd_tier_release_fn release, void *arg)
{
	return ssd_tier_store(t, id, data, len, release, arg) == TFS_OK;
}

/* Queue a patterned chunk as a reader's. */
static bool store(struct ssd_tier *t, const struct chunk_id *id, size_t len)
{
	return store_kind(t, id, len, reader_store);
}

/* Read and check: true on a byte-exact hit of want_len, false on a miss;
 * a hit with wrong bytes fails the test. */
static bool read_ok(struct ssd_tier *t, const struct chunk_id *id, size_t want_len)
{
	unsigned char *b = malloc(CS);
	size_t len = 12345;
	int rc = ssd_tier_read(t, id, b, CS, &len, true);

	cr_assert(rc == TFS_OK || rc == TFS_MISS, "rc %d", rc);
	if (rc == TFS_MISS) {
		free(b);
		return false;
	}
	cr_assert_eq(len, want_len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(b[i], pattern(id, i), "byte %zu of %s#%llu", i, id->key,
			     (unsigned long long)id->index);
	free(b);
	return true;
}

/* The path of the file holding chunk id's object (id's key and cache id),
 * and where the chunk starts in it. */
static off_t chunk_path(const struct chunk_id *id, char *out, size_t cap)
{
	char k[8192];
	size_t kl = strlen(id->key), el = strlen(id->etag);
	XXH128_hash_t h;
	char hex[33];

	k[0] = 'o';
	memcpy(k + 1, id->key, kl + 1);
	memcpy(k + 2 + kl, id->etag, el);
	h = XXH3_128bits(k, kl + el + 2);
	snprintf(hex, sizeof(hex), "%016llx%016llx", (unsigned long long)h.high64,
		 (unsigned long long)h.low64);
	snprintf(out, cap, "%s/objects/%.2s/%s", cdir, hex, hex);
	return (off_t)(id->index * CS);
}

/* Object files under root/objects/XX/, and the bytes they take. */
static size_t count_files(const char *root, uint64_t *allocated)
{
	char path[256];
	DIR *top, *sub;
	struct dirent *de, *fe;
	size_t n = 0;

	if (allocated)
		*allocated = 0;
	snprintf(path, sizeof(path), "%s/objects", root);
	top = opendir(path);
	if (!top)
		return 0;
	while ((de = readdir(top)) != NULL) {
		char sp[512];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "%s/%s", path, de->d_name);
		sub = opendir(sp);
		if (!sub)
			continue;
		while ((fe = readdir(sub)) != NULL) {
			char fp[1024];
			struct stat sb;

			if (fe->d_name[0] == '.')
				continue;
			n++;
			snprintf(fp, sizeof(fp), "%s/%s", sp, fe->d_name);
			if (allocated && stat(fp, &sb) == 0)
				*allocated += (uint64_t)sb.st_blocks * 512;
		}
		closedir(sub);
	}
	closedir(top);
	return n;
}

static size_t count_chunk_files(const char *root)
{
	return count_files(root, NULL);
}

static uint64_t allocated_bytes(const char *root)
{
	uint64_t a;

	count_files(root, &a);
	return a;
}

static void corrupt_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	cr_assert_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static struct tier_stats stats(struct ssd_tier *t)
{
	struct tier_stats st;
	ssd_tier_stats(t, &st);
	return st;
}

Test(ssd_tier, roundtrip_sizes_byte_exact)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	size_t sizes[] = { CS, CS - 1, 1, 4096, 4097, 12345 };
	size_t n = sizeof(sizes) / sizeof(sizes[0]);
	uint64_t bytes = 0, fbytes = 0;
	struct tier_stats st;

	/* nothing to keep of an empty chunk: refused, released, not counted */
	{
		struct chunk_id id = { "dir/object.bin", "\"abc-1\"", 99 };
		cr_assert_not(store(t, &id, 0));
		cr_assert_eq(atomic_load(&released), 1);
		cr_assert_eq(stats(t).dropped, 0);
		atomic_store(&released, 0);
	}
	for (size_t i = 0; i < n; i++) {
		struct chunk_id id = { "dir/object.bin", "\"abc-1\"", i };
		cr_assert(store(t, &id, sizes[i]));
		bytes += sizes[i];
		fbytes += FILE_BYTES(sizes[i]);
	}
	ssd_tier_flush(t);
	cr_assert_eq(atomic_load(&released), (int)n);
	for (size_t i = 0; i < n; i++) {
		struct chunk_id id = { "dir/object.bin", "\"abc-1\"", i };
		cr_assert(read_ok(t, &id, sizes[i]), "chunk %zu", i);
	}
	st = stats(t);
	cr_assert_eq(st.insertions, n);
	cr_assert_eq(st.entries, n);
	cr_assert_eq(st.hits, n);
	cr_assert_eq(st.misses, 0);
	cr_assert_eq(st.bytes_served, bytes);
	cr_assert_eq(st.bytes_fetched, bytes);
	cr_assert_eq(st.bytes_used, fbytes);
	cr_assert_eq(count_chunk_files(cdir), 1, "one file for the object's chunks");
	cr_assert_geq(allocated_bytes(cdir), fbytes);
	ssd_tier_close(t);
}

Test(ssd_tier, unknown_chunk_other_etag_other_index_miss)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id id = { "k", "e1", 3 }, other_etag = { "k", "e2", 3 },
			other_index = { "k", "e1", 4 }, unknown = { "nope", "e1", 3 };
	unsigned char small[10];
	size_t len = 99;

	cr_assert(store(t, &id, 1000));
	ssd_tier_flush(t);
	cr_assert_not(read_ok(t, &unknown, 0));
	cr_assert_not(read_ok(t, &other_etag, 0));
	cr_assert_not(read_ok(t, &other_index, 0));
	/* a buffer too small is a miss, and the copy stays */
	cr_assert_eq(ssd_tier_read(t, &id, small, sizeof(small), &len, true), TFS_MISS);
	cr_assert_eq(len, 0);
	cr_assert(read_ok(t, &id, 1000));
	cr_assert_eq(stats(t).misses, 4);
	cr_assert_eq(stats(t).checksum_failures, 0);
	ssd_tier_close(t);
}

Test(ssd_tier, reopen_hits_without_rewrite)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct tier_stats st;

	for (uint64_t i = 0; i < 5; i++) {
		struct chunk_id id = { "obj", "e", i };
		cr_assert(store(t, &id, CS - i));
	}
	ssd_tier_close(t);   /* close finishes the queue: no flush needed */
	cr_assert_eq(atomic_load(&released), 5);

	t = tier_open(&cfg);
	st = stats(t);
	cr_assert_eq(st.entries, 5);
	cr_assert_eq(st.bytes_used, 5 * FILE_BYTES(CS));
	for (uint64_t i = 0; i < 5; i++) {
		struct chunk_id id = { "obj", "e", i };
		cr_assert(read_ok(t, &id, CS - i));
	}
	st = stats(t);
	cr_assert_eq(st.insertions, 0);
	cr_assert_eq(st.hits, 5);
	/* an already stored chunk is refused, and its data released */
	{
		struct chunk_id id = { "obj", "e", 0 };
		cr_assert_not(store(t, &id, CS));
		cr_assert_eq(atomic_load(&released), 6);
	}
	ssd_tier_close(t);
}

Test(ssd_tier, flipped_data_byte_is_a_counted_miss_and_dropped)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id id = { "obj", "e", 0 };
	char path[512];
	struct stat sb;
	struct tier_stats st;

	cr_assert(store(t, &id, 5000));
	ssd_tier_flush(t);
	corrupt_byte(path, chunk_path(&id, path, sizeof(path)) + 4321);
	cr_assert_not(read_ok(t, &id, 5000));
	st = stats(t);
	cr_assert_eq(st.checksum_failures, 1);
	cr_assert_eq(st.entries, 0);
	cr_assert_eq(st.bytes_used, 0);
	cr_assert_not(read_ok(t, &id, 5000));
	cr_assert_eq(stats(t).checksum_failures, 1);   /* no second file read */
	ssd_tier_flush(t);
	cr_assert_eq(stat(path, &sb), -1);
	cr_assert_eq(errno, ENOENT);
	ssd_tier_close(t);
	/* and the record went with it: nothing comes back at reopen */
	t = tier_open(&cfg);
	cr_assert_eq(stats(t).entries, 0);
	ssd_tier_close(t);
}

/* A chunk found bad is dropped (the writer deletes its record and
 * punches its bytes out later) and stored again at once, at the same
 * place, while the writer is busy with other chunks: the copy stored
 * again must not be deleted with the bad one.  Rounds of it, each with a
 * few chunks queued just before so that the writer is mid-batch; after
 * each, the chunk reads back exactly; at the end the files hold what the
 * tier counts. */
Test(ssd_tier, a_chunk_stored_again_while_its_bad_copy_is_deleted_survives)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id a = { "again", "e", 0 };
	char path[512], busy_key[32];
	uint64_t alloc;

	cr_assert(store(t, &a, CS));
	ssd_tier_flush(t);
	for (int round = 0; round < 200; round++) {
		corrupt_byte(path, chunk_path(&a, path, sizeof(path)) + 100 + round);
		snprintf(busy_key, sizeof(busy_key), "busy-%d", round);
		for (uint64_t k = 0; k < 10; k++) {
			struct chunk_id o = { busy_key, "e", k };

			cr_assert(store(t, &o, CS));
		}
		cr_assert_not(read_ok(t, &a, CS), "round %d: the bad copy hit", round);
		cr_assert(store(t, &a, CS), "round %d: not stored again", round);
		ssd_tier_flush(t);
		cr_assert(read_ok(t, &a, CS),
			  "round %d: the copy stored again was deleted with the bad one", round);
	}
	alloc = allocated_bytes(cdir);
	cr_assert_geq(alloc, stats(t).bytes_used, "the files hold less than the tier counts");
	ssd_tier_close(t);
}

/* A chunk is checked block by block: a flipped byte fails only reads of
 * its block (a counted miss that drops the chunk); reads of its chunk's
 * other blocks before it, and other chunks, hit. */
Test(ssd_tier, a_bad_block_fails_only_reads_of_it)
{
	struct ssd_tier_config cfg = cfg_default();
	const size_t big = 4 * SSD_BLOCK;
	struct ssd_tier *t;
	struct chunk_id a = { "obj", "e", 0 }, b = { "obj", "e", 1 };
	unsigned char *buf = malloc(ssd_tier_span_max(big)), *c;
	size_t so, sl;
	char path[512];

	cfg.chunk_size = big;
	t = tier_open(&cfg);
	for (int k = 0; k < 2; k++) {
		const struct chunk_id *id = k ? &b : &a;

		c = malloc(big);
		for (size_t i = 0; i < big; i++)
			c[i] = pattern(id, i);
		cr_assert_eq(ssd_tier_store(t, id, c, big, release_free, c), TFS_OK);
	}
	ssd_tier_flush(t);
	chunk_path(&a, path, sizeof(path));
	corrupt_byte(path, (off_t)(2 * SSD_BLOCK + 17));   /* block 2 of chunk 0 */
	/* block 0, and a range across blocks 0 and 1: read and checked alone */
	cr_assert_eq(ssd_tier_read_range(t, &a, big, 100, 10, buf, &so, &sl, true), TFS_OK);
	cr_expect_eq(so, 0);
	cr_expect_eq(sl, SSD_BLOCK);
	cr_assert_eq(ssd_tier_read_range(t, &a, big, SSD_BLOCK - 5, 10, buf, &so, &sl, true),
		     TFS_OK);
	cr_expect_eq(sl, 2 * SSD_BLOCK);
	for (size_t i = 0; i < sl; i++)
		cr_assert_eq(buf[i], pattern(&a, so + i));
	/* block 2: a counted miss */
	cr_assert_eq(ssd_tier_read_range(t, &a, big, 2 * SSD_BLOCK + 1, 1, buf, &so, &sl, true),
		     TFS_MISS);
	cr_expect_eq(stats(t).checksum_failures, 1);
	/* the chunk is dropped; the other one hits */
	cr_expect_eq(ssd_tier_read_range(t, &a, big, 0, 1, buf, &so, &sl, true), TFS_MISS);
	cr_assert_eq(ssd_tier_read_range(t, &b, big, 3 * SSD_BLOCK, SSD_BLOCK, buf, &so, &sl, true),
		     TFS_OK);
	for (size_t i = 0; i < sl; i++)
		cr_assert_eq(buf[i], pattern(&b, so + i));
	cr_expect_eq(stats(t).checksum_failures, 1);
	/* asked for a version of another length: a plain miss */
	cr_expect_eq(ssd_tier_read_range(t, &b, big - 1, 0, 1, buf, &so, &sl, true), TFS_MISS);
	ssd_tier_close(t);
	free(buf);
}

Test(ssd_tier, truncated_and_deleted_files_are_misses)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id a = { "obj-a", "e", 0 }, b = { "obj-b", "e", 0 };
	char path[512];
	struct tier_stats st;

	cr_assert(store(t, &a, CS));
	cr_assert(store(t, &b, CS));
	ssd_tier_flush(t);
	cr_assert_eq(truncate(path, chunk_path(&a, path, sizeof(path)) + CS / 2), 0);
	chunk_path(&b, path, sizeof(path));
	cr_assert_eq(unlink(path), 0);
	cr_assert_not(read_ok(t, &a, CS));
	cr_assert_not(read_ok(t, &b, CS));
	st = stats(t);
	cr_assert_eq(st.checksum_failures, 1);   /* the truncated one */
	cr_assert_eq(st.io_errors, 0);           /* a missing file is no I/O error */
	cr_assert_eq(st.entries, 0);
	cr_assert_eq(st.misses, 2);
	/* both can be stored again */
	cr_assert(store(t, &a, CS));
	cr_assert(store(t, &b, CS));
	ssd_tier_flush(t);
	cr_assert(read_ok(t, &a, CS));
	cr_assert(read_ok(t, &b, CS));
	ssd_tier_close(t);
}

Test(ssd_tier, missing_file_record_dropped_at_open)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id a = { "obj-a", "e", 0 }, b = { "obj-b", "e", 0 };
	char path[512];

	cr_assert(store(t, &a, 100));
	cr_assert(store(t, &b, 100));
	ssd_tier_close(t);
	chunk_path(&a, path, sizeof(path));
	cr_assert_eq(unlink(path), 0);
	t = tier_open(&cfg);
	cr_assert_eq(stats(t).entries, 1);
	cr_assert_eq(stats(t).bytes_used, FILE_BYTES(100));
	cr_assert_not(read_ok(t, &a, 100));
	cr_assert(read_ok(t, &b, 100));
	ssd_tier_close(t);
}

/* A record over a hole (its bytes punched out, its record kept: a writer
 * killed between the two, or a power loss) is dropped at open, not
 * counted as stored; the object's other chunks stay, and an object left
 * with none loses its file. */
Test(ssd_tier, record_over_a_hole_dropped_at_open)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id a0 = { "obj-a", "e", 0 }, a1 = { "obj-a", "e", 1 }, b = { "obj-b", "e", 0 };
	char pa[512], pb[512];
	off_t off;
	int fd;

	cr_assert(store(t, &a0, CS));
	cr_assert(store(t, &a1, 5000));
	cr_assert(store(t, &b, 100));
	ssd_tier_close(t);
	off = chunk_path(&a1, pa, sizeof(pa));
	fd = open(pa, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, 8192), 0);
	close(fd);
	chunk_path(&b, pb, sizeof(pb));
	fd = open(pb, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
	close(fd);

	t = tier_open(&cfg);
	cr_assert_eq(stats(t).entries, 1);
	cr_assert_eq(stats(t).bytes_used, FILE_BYTES(CS));
	cr_assert_eq(allocated_bytes(cdir), FILE_BYTES(CS), "the files hold what is counted");
	cr_assert(read_ok(t, &a0, CS));
	cr_assert_not(read_ok(t, &a1, 5000));
	cr_assert_not(read_ok(t, &b, 100));
	cr_assert_eq(access(pb, F_OK), -1, "an object with no chunk left keeps its file");
	ssd_tier_close(t);
}

static void copy_file(const char *from, const char *to)
{
	char buf[8192];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	cr_assert_geq(in, 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(out, 0, "%s: %s", to, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* What a writer killed between its write and its record leaves: a file
 * with no record at all (deleted at open), and bytes of a chunk with no
 * record in a file whose other chunks have one (punched out at open,
 * the recorded chunk kept). */
Test(ssd_tier, leftovers_of_a_killed_writer_are_cleaned_at_open)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id kept = { "obj", "e", 0 }, lost = { "obj", "e", 1 },
			orphan = { "orphan", "e", 0 };
	char path[512], sub[512];
	unsigned char *b = calloc(1, CS);
	struct stat sb;
	int fd;

	cr_assert(store(t, &kept, CS));
	ssd_tier_close(t);
	/* chunk 1's bytes, written without a record */
	chunk_path(&lost, path, sizeof(path));
	fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	memset(b, 0x77, CS);
	cr_assert_eq(pwrite(fd, b, CS, (off_t)CS), (ssize_t)CS);
	close(fd);
	cr_assert_geq(allocated_bytes(cdir), 2 * (uint64_t)CS);
	/* a whole object file without a record */
	chunk_path(&orphan, path, sizeof(path));
	snprintf(sub, sizeof(sub), "%.*s", (int)(strrchr(path, '/') - path), path);
	cr_assert(mkdir(sub, 0700) == 0 || errno == EEXIST);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, b, 100, 0), 100);
	close(fd);

	t = tier_open(&cfg);
	cr_assert_eq(stat(path, &sb), -1, "the file without a record is still there");
	cr_assert_eq(stats(t).entries, 1);
	cr_assert(read_ok(t, &kept, CS));
	cr_assert_not(read_ok(t, &lost, CS));
	cr_assert_leq(allocated_bytes(cdir), (uint64_t)CS + 4096,
		      "the unrecorded chunk's bytes were not punched out");
	ssd_tier_close(t);
	free(b);
}

/* A file copied in from another cache (same layout, same names) has no
 * record here: it is deleted at open, never served. */
Test(ssd_tier, a_file_from_another_cache_is_never_served)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct chunk_id id = { "dir/orphan", "\"v9\"", 0 };
	char other[128], src[512], dst[512], sub[512];

	snprintf(other, sizeof(other), "%s/other", base);
	cfg.dir = other;
	t = tier_open(&cfg);
	cr_assert(store(t, &id, 3333));
	ssd_tier_close(t);
	snprintf(cdir, sizeof(cdir), "%s", other);
	chunk_path(&id, src, sizeof(src));
	snprintf(cdir, sizeof(cdir), "%s/cache", base);

	cfg.dir = cdir;
	t = tier_open(&cfg);
	ssd_tier_close(t);
	chunk_path(&id, dst, sizeof(dst));
	snprintf(sub, sizeof(sub), "%.*s", (int)(strrchr(dst, '/') - dst), dst);
	cr_assert(mkdir(sub, 0700) == 0 || errno == EEXIST);
	copy_file(src, dst);
	t = tier_open(&cfg);
	cr_assert_eq(stats(t).entries, 0);
	cr_assert_not(read_ok(t, &id, 3333));
	cr_assert_eq(count_chunk_files(cdir), 0);
	ssd_tier_close(t);
}

Test(ssd_tier, capacity_bound_keeps_recently_read)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct chunk_id id[6];
	struct tier_stats st;

	cfg.capacity = 3 * FILE_BYTES(CS);
	t = tier_open(&cfg);
	for (uint64_t i = 0; i < 6; i++)
		id[i] = (struct chunk_id){ "big", "e", i };
	for (int i = 0; i < 3; i++)
		cr_assert(store(t, &id[i], CS));
	ssd_tier_flush(t);
	/* chunk 0 is read before each new store: it must outlive 1, 2 and 3 */
	for (int i = 3; i < 6; i++) {
		cr_assert(read_ok(t, &id[0], CS));
		cr_assert(store(t, &id[i], CS));
		ssd_tier_flush(t);
		st = stats(t);
		cr_assert_leq(st.entries, 3);
		cr_assert_leq(st.bytes_used, cfg.capacity);
		cr_assert_leq(allocated_bytes(cdir), cfg.capacity, "evicted bytes not punched out");
	}
	cr_assert(read_ok(t, &id[0], CS));
	cr_assert_not(read_ok(t, &id[1], CS));
	cr_assert_not(read_ok(t, &id[2], CS));
	cr_assert_not(read_ok(t, &id[3], CS));
	cr_assert(read_ok(t, &id[4], CS));
	cr_assert(read_ok(t, &id[5], CS));
	st = stats(t);
	cr_assert_eq(st.evictions, 3);
	cr_assert_eq(st.entries, 3);
	ssd_tier_close(t);

	/* a smaller bound at the next open evicts down, by last access */
	cfg.capacity = 2 * FILE_BYTES(CS);
	t = tier_open(&cfg);
	st = stats(t);
	cr_assert_eq(st.entries, 2);
	cr_assert_leq(st.bytes_used, cfg.capacity);
	cr_assert_leq(allocated_bytes(cdir), cfg.capacity);
	ssd_tier_close(t);
}

Test(ssd_tier, capacity_below_one_chunk_drops)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct chunk_id id = { "k", "e", 0 };

	cfg.capacity = 4096;
	t = tier_open(&cfg);
	cr_assert(store(t, &id, 5000));   /* queued, then dropped by the writer */
	ssd_tier_flush(t);
	cr_assert_eq(stats(t).dropped, 1);
	cr_assert_eq(stats(t).entries, 0);
	cr_assert_eq(atomic_load(&released), 1);
	ssd_tier_close(t);
}

Test(ssd_tier, identity_mismatch_refused_and_wipe_recreates)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id id = { "k", "e", 0 };
	const char *msg;

	cr_assert(store(t, &id, 100));
	ssd_tier_close(t);

	cfg.owner = "https://other bucket/";
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, OWNER) && strstr(msg, "https://other bucket/"), "%s", msg);
	cr_assert(strstr(msg, "--cache-wipe"), "%s", msg);

	cfg = cfg_default();
	cfg.chunk_size = 2 * CS;
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "65536") && strstr(msg, "131072"), "%s", msg);
	cr_assert(strstr(msg, "chunk size"), "%s", msg);

	/* still intact after the refusals */
	cfg = cfg_default();
	t = tier_open(&cfg);
	cr_assert(read_ok(t, &id, 100));
	ssd_tier_close(t);

	cfg.owner = "https://other bucket/";
	cfg.wipe = true;
	t = tier_open(&cfg);
	cr_assert_eq(stats(t).entries, 0);
	cr_assert_eq(count_chunk_files(cdir), 0);
	cr_assert_not(read_ok(t, &id, 100));
	ssd_tier_close(t);
	/* the new identity sticks */
	cfg.wipe = false;
	t = tier_open(&cfg);
	ssd_tier_close(t);
	cfg = cfg_default();
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "https://other bucket/"), "%s", msg);
}

Test(ssd_tier, symlink_root_refused)
{
	struct ssd_tier_config cfg = cfg_default();
	char real[128];
	const char *msg;

	snprintf(real, sizeof(real), "%s/real", base);
	cr_assert_eq(mkdir(real, 0700), 0);
	cr_assert_eq(symlink(real, cdir), 0);
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "symbolic link"), "%s", msg);
	/* a trailing slash must not make lstat follow the link */
	{
		char slash[160];
		snprintf(slash, sizeof(slash), "%s/", cdir);
		cfg.dir = slash;
		msg = tier_open_fails(&cfg);
		cr_assert(strstr(msg, "symbolic link"), "%s", msg);
	}
	{
		char sub[160];
		struct stat sb;
		snprintf(sub, sizeof(sub), "%s/index", real);
		cr_assert_eq(stat(sub, &sb), -1);   /* nothing was written through it */
	}
}

Test(ssd_tier, root_owned_by_another_user_refused)
{
	struct ssd_tier_config cfg = cfg_default();
	const char *msg;

	cr_assert_eq(mkdir(cdir, 0700), 0);
	cr_assert_eq(chown(cdir, 65534, 65534), 0);
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "65534"), "%s", msg);
}

Test(ssd_tier, not_a_directory_and_missing_parent_refused)
{
	struct ssd_tier_config cfg = cfg_default();
	char deep[256];
	const char *msg;
	FILE *f = fopen(cdir, "w");

	cr_assert_not_null(f);
	fclose(f);
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "not a directory"), "%s", msg);
	snprintf(deep, sizeof(deep), "%s/no/such/dir", base);
	cfg.dir = deep;
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "parent"), "%s", msg);
}

Test(ssd_tier, modes_0700_and_0600_whatever_the_umask)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct chunk_id id = { "k", "e", 0 };
	char path[512];
	struct stat sb;
	mode_t old = umask(0);

	t = tier_open(&cfg);
	cr_assert(store(t, &id, 100));
	ssd_tier_flush(t);
	umask(old);
	cr_assert_eq(stat(cdir, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0700);
	chunk_path(&id, path, sizeof(path));
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0600);
	ssd_tier_close(t);

	/* an existing cache dir of ours that is too open is tightened */
	cr_assert_eq(chmod(cdir, 0755), 0);
	t = tier_open(&cfg);
	cr_assert_eq(stat(cdir, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0700);
	ssd_tier_close(t);
}

Test(ssd_tier, foreign_directory_refused_even_with_wipe)
{
	struct ssd_tier_config cfg = cfg_default();
	char path[256], buf[64] = { 0 };
	const char *msg;
	struct stat sb;
	FILE *f;

	cr_assert_eq(mkdir(cdir, 0755), 0);
	snprintf(path, sizeof(path), "%s/thesis.tex", cdir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("precious", f);
	fclose(f);
	cfg.wipe = true;
	msg = tier_open_fails(&cfg);
	cr_assert(strstr(msg, "not a tierfs cache directory"), "%s", msg);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_str_eq(buf, "precious");
	cr_assert_eq(stat(cdir, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0755, "mode changed");
	snprintf(path, sizeof(path), "%s/index", cdir);
	cr_assert_eq(stat(path, &sb), -1);
	snprintf(path, sizeof(path), "%s/chunks", cdir);
	cr_assert_eq(stat(path, &sb), -1);
}

Test(ssd_tier, second_open_is_in_use)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	const char *msg = tier_open_fails(&cfg);

	cr_assert(strstr(msg, "is in use by another tierfs"), "%s", msg);
	ssd_tier_close(t);
}

Test(ssd_tier, drop_versions_removes_other_etags_only)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id old0 = { "k", "e1", 0 }, old1 = { "k", "e1", 1 }, cur = { "k", "e2", 0 },
			longer = { "kk", "e1", 0 }, below = { "k/x", "e1", 0 };

	cr_assert(store(t, &old0, 100));
	cr_assert(store(t, &old1, 200));
	cr_assert(store(t, &cur, 300));
	cr_assert(store(t, &longer, 400));
	cr_assert(store(t, &below, 500));
	ssd_tier_drop_versions(t, "k", "e2");
	ssd_tier_flush(t);
	cr_assert_not(read_ok(t, &old0, 100));
	cr_assert_not(read_ok(t, &old1, 200));
	cr_assert(read_ok(t, &cur, 300));
	cr_assert(read_ok(t, &longer, 400));
	cr_assert(read_ok(t, &below, 500));
	cr_assert_eq(stats(t).entries, 3);
	cr_assert_eq(count_chunk_files(cdir), 3, "a file per object version");
	ssd_tier_drop_versions(t, "k", NULL);
	ssd_tier_flush(t);
	cr_assert_not(read_ok(t, &cur, 300));
	cr_assert_eq(stats(t).entries, 2);
	cr_assert_eq(count_chunk_files(cdir), 2);
	ssd_tier_close(t);
	t = tier_open(&cfg);   /* the records went too */
	cr_assert_eq(stats(t).entries, 2);
	ssd_tier_close(t);
}

Test(ssd_tier, meta_blobs_persist)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	void *v = NULL;
	size_t len = 0;
	char small[4] = "abc";

	cr_assert_eq(ssd_tier_meta_get(t, "ls:dir/", &v, &len), TFS_MISS);
	cr_assert_eq(ssd_tier_meta_put(t, "ls:dir/", "a\0b\0c", 5), TFS_OK);
	cr_assert_eq(ssd_tier_meta_put(t, "ls:gone/", "x", 1), TFS_OK);
	cr_assert_eq(ssd_tier_meta_del(t, "ls:gone/"), TFS_OK);
	/* the bound is checked before the value is looked at */
	cr_assert_eq(ssd_tier_meta_put(t, "huge", small, (64u << 20) + 1), TFS_E_TOOBIG);
	ssd_tier_close(t);
	t = tier_open(&cfg);
	cr_assert_eq(ssd_tier_meta_get(t, "ls:dir/", &v, &len), TFS_OK);
	cr_assert_eq(len, 5);
	cr_assert_eq(memcmp(v, "a\0b\0c", 5), 0);
	free(v);
	cr_assert_eq(ssd_tier_meta_get(t, "ls:gone/", &v, &len), TFS_MISS);
	cr_assert_eq(ssd_tier_meta_get(t, "huge", &v, &len), TFS_MISS);
	ssd_tier_close(t);
}

Test(ssd_tier, refused_stores_release_once)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t = tier_open(&cfg);
	struct chunk_id id = { "k", "e", 0 };
	char *longkey = malloc(5000);
	struct chunk_id lid = { longkey, "e", 0 };

	memset(longkey, 'x', 4999);
	longkey[4999] = '\0';
	cr_assert_not(store(t, &id, CS + 1));
	cr_assert_eq(atomic_load(&released), 1);
	cr_assert_not(store(t, &lid, 10));
	cr_assert_eq(atomic_load(&released), 2);
	cr_assert_not(read_ok(t, &lid, 10));
	cr_assert_eq(stats(t).dropped, 2);
	cr_assert(store(t, &id, 10));
	cr_assert_not(store(t, &id, 10));   /* already queued */
	ssd_tier_flush(t);
	cr_assert_eq(atomic_load(&released), 4);
	/* a key that just fits the bound (4,032 bytes with its cache id) is cached */
	longkey[4096 - 64 - 1] = '\0';
	cr_assert(store(t, &lid, 10));
	ssd_tier_flush(t);
	cr_assert(read_ok(t, &lid, 10));
	ssd_tier_close(t);
	free(longkey);
}

/* A patterned chunk in a 4 KiB-aligned heap buffer, as RAM gives one
 * it evicts (ssd_tier_store_owned). */
static void *owned_chunk(const struct chunk_id *id, size_t len)
{
	unsigned char *b = NULL;

	cr_assert_eq(posix_memalign((void **)&b, 4096, len), 0);
	for (size_t i = 0; i < len; i++)
		b[i] = pattern(id, i);
	return b;
}

/* A reader's chunk refused while the writer is behind says so
 * (TFS_AGAIN, counted as dropped), and may be offered again: from the
 * caller's buffer (ssd_tier_store_again) or as a buffer the tier takes
 * over (ssd_tier_store_owned, one of the copies: refused, and freed,
 * while they are full).  A second offer is not another drop; a store
 * from one is counted as resaved. */
Test(ssd_tier, a_chunk_refused_while_behind_can_be_offered_again)
{
	struct ssd_tier_config cfg = cfg_default();
	struct chunk_id a = { "again", "e", 0 }, b = { "again", "e", 1 }, c = { "again", "e", 2 };
	struct ssd_tier *t;
	unsigned char *buf;

	cfg.queue_max = 1;
	cfg.spill_max = CS;
	t = tier_open(&cfg);
	ssd_gate_close(t, release_free);   /* the queue is full */
	cr_assert(store(t, &a, CS));       /* a copy waits: the copies are full */
	buf = owned_chunk(&b, CS);
	cr_assert_eq(ssd_tier_store(t, &b, buf, CS, release_free, buf), TFS_AGAIN);
	cr_assert_eq(ssd_tier_store_owned(t, &b, owned_chunk(&b, CS), CS), TFS_AGAIN);
	buf = owned_chunk(&c, CS);
	cr_assert_eq(ssd_tier_store_again(t, &c, buf, CS, release_free, buf), TFS_AGAIN);
	cr_assert_eq(stats(t).dropped, 1);
	ssd_gate_open();
	ssd_tier_flush(t);
	cr_assert(read_ok(t, &a, CS));
	cr_assert_not(read_ok(t, &b, CS));
	/* the writer caught up: both second offers are taken */
	cr_assert_eq(ssd_tier_store_owned(t, &b, owned_chunk(&b, CS), CS), TFS_OK);
	buf = owned_chunk(&c, CS);
	cr_assert_eq(ssd_tier_store_again(t, &c, buf, CS, release_free, buf), TFS_OK);
	/* a chunk stored already is no AGAIN: nothing to offer */
	cr_assert_eq(ssd_tier_store_owned(t, &b, owned_chunk(&b, CS), CS), TFS_MISS);
	ssd_tier_flush(t);
	cr_assert(read_ok(t, &b, CS));
	cr_assert(read_ok(t, &c, CS));
	cr_assert_eq(stats(t).dropped, 1);
	cr_assert_eq(stats(t).resaved, 2);
	cr_assert_eq(stats(t).spilled, 2);   /* a's copy, and b's buffer taken over */
	ssd_tier_close(t);
}

Test(ssd_tier, release_exactly_once_on_every_path)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	int n = 1, accepted = 1;

	cfg.queue_max = 4;
	cfg.capacity = 5 * FILE_BYTES(CS);
	t = tier_open(&cfg);
	ssd_gate_close(t, release_free);   /* the queue fills */
	for (int i = 0; i < 40; i++) {
		struct chunk_id id = { "mix", "e", (uint64_t)(i % 13) };
		size_t len = i % 7 == 0 ? CS + 1 : (size_t)(i * 997) % CS;
		accepted += store(t, &id, len);
		n++;
	}
	cr_assert_lt(accepted, n);   /* some refused: queue full, duplicates, too big */
	ssd_gate_open();
	ssd_tier_flush(t);
	cr_assert_eq(atomic_load(&released), n);
	/* more, with evictions, and closed with jobs still queued */
	for (int i = 0; i < 200; i++) {
		struct chunk_id id = { "late", "e", (uint64_t)(i % 50) };
		store(t, &id, CS);
		n++;
	}
	ssd_tier_close(t);
	cr_assert_eq(atomic_load(&released), n);
}

/* The queue is bounded in bytes too: small chunks queue as many as fit
 * the bytes, not a count sized for whole chunks, and no more. */
Test(ssd_tier, the_write_queue_is_bounded_in_bytes)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	int accepted = 0;

	cfg.queue_max = 64;
	cfg.queue_bytes = 3 * 10000;
	t = tier_open(&cfg);
	ssd_gate_close(t, release_free);   /* the queue fills */
	for (int i = 0; i < 10; i++) {
		struct chunk_id id = { "small", "e", (uint64_t)i };
		accepted += store(t, &id, 10000);
	}
	/* 10 + 3 x 10000 bytes reach the bound: the fourth is refused */
	cr_expect_eq(accepted, 3, "%d of 10 chunks of 10000 B queued, bound 30000 B", accepted);
	ssd_gate_open();
	ssd_tier_flush(t);
	cr_expect_eq(atomic_load(&released), 11);
	for (int i = 0; i < 10; i++) {
		struct chunk_id id = { "small", "e", (uint64_t)i };
		cr_expect_eq(read_ok(t, &id, 10000), i < 3, "chunk %d", i);
	}
	ssd_tier_close(t);
}

static void mount_tmpfs(const char *size)
{
	char opts[64];

	cr_assert_eq(mkdir(cdir, 0700), 0);
	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	cr_assert_eq(mount("tmpfs", cdir, "tmpfs", 0, opts), 0, "mount: %s", strerror(errno));
	mounted = true;
}

Test(ssd_tier, enospc_degrades_never_serves_bad_bytes)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	size_t big = 4u << 20;
	struct tier_stats st;
	int hits = 0;

	mount_tmpfs("16m");
	cfg.chunk_size = big;
	cfg.queue_max = 16;
	t = tier_open(&cfg);
	/* the chunks made first (slow under ASan), then stored at once: the
	 * writer's last failure is moments before the check below, however
	 * slow the build, not up to a chunk's making earlier */
	unsigned char *bufs[8];
	for (uint64_t i = 0; i < 8; i++) {
		struct chunk_id id = { "huge", "e", i };
		bufs[i] = malloc(big);
		for (size_t j = 0; j < big; j++)
			bufs[i][j] = pattern(&id, j);
	}
	for (uint64_t i = 0; i < 8; i++) {
		struct chunk_id id = { "huge", "e", i };
		ssd_tier_store(t, &id, bufs[i], big, release_free, bufs[i]);
	}
	ssd_tier_flush(t);
	/* refused during the 1 s back-off that began at the last failure,
	 * moments ago (checked first: the byte checks below are slow under
	 * ASan), and released at once */
	{
		struct chunk_id id = { "huge", "e", 100 };
		cr_assert_not(store(t, &id, 10));
		cr_assert_eq(atomic_load(&released), 9);
	}
	st = stats(t);
	cr_assert(st.degraded);
	cr_assert_gt(st.io_errors, 0);
	cr_assert_gt(st.dropped, 0);
	{
		unsigned char *b = malloc(big), *want = malloc(big);
		for (uint64_t i = 0; i < 8; i++) {
			struct chunk_id id = { "huge", "e", i };
			size_t len = 0;
			int rc = ssd_tier_read(t, &id, b, big, &len, true);
			cr_assert(rc == TFS_OK || rc == TFS_MISS);
			if (rc == TFS_OK) {
				cr_assert_eq(len, big);
				for (size_t j = 0; j < big; j++)
					want[j] = pattern(&id, j);
				cr_assert(memcmp(b, want, big) == 0, "chunk %llu: wrong bytes",
					  (unsigned long long)i);
				hits++;
			}
		}
		free(b);
		free(want);
	}
	cr_assert_eq((uint64_t)hits, st.entries);
	/* no half-written chunk left behind: the disk holds what is stored */
	cr_assert_leq(allocated_bytes(cdir), st.entries * (uint64_t)big + 4096);
	ssd_tier_close(t);
}

static double fs_used_fraction(const char *path)
{
	struct statvfs sv;

	cr_assert_eq(statvfs(path, &sv), 0);
	return 1.0 - (double)sv.f_bavail / (double)sv.f_blocks;
}

Test(ssd_tier, min_free_pct_keeps_half_the_filesystem_free)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	size_t cs = 1u << 20;
	struct tier_stats st;

	mount_tmpfs("32m");
	cfg.chunk_size = cs;
	cfg.min_free_pct = 50;
	cfg.queue_max = 8;
	t = tier_open(&cfg);
	for (uint64_t i = 0; i < 40; i++) {
		struct chunk_id id = { "m", "e", i };
		unsigned char *b = malloc(cs);
		memset(b, (int)i, cs);
		cr_assert_eq(ssd_tier_store(t, &id, b, cs, release_free, b), TFS_OK);
		ssd_tier_flush(t);
		cr_assert_leq(fs_used_fraction(cdir), 0.5, "after chunk %llu: %.3f used",
			      (unsigned long long)i, fs_used_fraction(cdir));
	}
	st = stats(t);
	cr_assert_gt(st.entries, 0);
	cr_assert_gt(st.evictions, 0);
	cr_assert_eq(st.io_errors, 0);
	cr_assert_not(st.degraded);
	ssd_tier_close(t);
}

struct racer {
	struct ssd_tier *t;
	unsigned seed;
	int hits, stores, attempts, bad;
};

static atomic_bool race_stop;
static atomic_int race_hits;   /* all racers' hits, for the main thread */

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	unsigned char *b = malloc(CS);

	while (!atomic_load(&race_stop)) {
		unsigned x = (unsigned)rand_r(&r->seed);
		struct chunk_id id = { (x & 1) ? "hot/a" : "hot/b", (x & 2) ? "e1" : "e2",
				       (x >> 2) % 24 };
		size_t len = 0, want = CS - (size_t)id.index * 100;
		int rc = ssd_tier_read(r->t, &id, b, CS, &len, true);

		if (rc == TFS_OK) {
			r->hits++;
			atomic_fetch_add(&race_hits, 1);
			if (len != want)
				r->bad++;
			for (size_t i = 0; i < len && r->bad == 0; i++)
				if (b[i] != pattern(&id, i))
					r->bad++;
		} else if (rc == TFS_MISS) {
			r->stores += store(r->t, &id, want);
			r->attempts++;
		} else {
			r->bad++;
		}
		if ((x >> 20) % 64 == 0)
			ssd_tier_drop_versions(r->t, id.key, id.etag);
	}
	free(b);
	return NULL;
}

Test(ssd_tier, concurrent_store_read_drop_byte_exact)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	pthread_t th[8];
	struct racer rs[8];
	int hits = 0, attempts = 0;
	struct tier_stats st;

	cfg.capacity = 40 * FILE_BYTES(CS);   /* fewer than the 96 chunk ids: evictions */
	cfg.queue_max = 16;
	t = tier_open(&cfg);
	atomic_store(&race_stop, false);
	atomic_store(&race_hits, 0);
	for (int i = 0; i < 8; i++) {
		rs[i] = (struct racer){ t, (unsigned)i * 7919u + 1, 0, 0, 0, 0 };
		cr_assert_eq(pthread_create(&th[i], NULL, racer_main, &rs[i]), 0);
	}
	/* A second of racing, and on a loaded machine (where the writer may
	 * not have stored a chunk within that second) until reads have hit
	 * stored chunks a few times: the race must include hits to prove
	 * anything.  Bounded: a tier that never serves a hit fails below. */
	for (int ms = 0; ms < 60000; ms += 100) {
		if (ms >= 1000 && atomic_load(&race_hits) >= 20)
			break;
		usleep(100 * 1000);
	}
	atomic_store(&race_stop, true);
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(rs[i].bad, 0, "racer %d saw wrong bytes", i);
		hits += rs[i].hits;
		attempts += rs[i].attempts;
	}
	cr_assert_gt(hits, 0);
	ssd_tier_flush(t);
	st = stats(t);
	cr_assert_leq(st.bytes_used, cfg.capacity);
	cr_assert_eq(st.checksum_failures, 0);
	cr_assert_leq(allocated_bytes(cdir), cfg.capacity + 4 * 4096,
		      "the disk holds more than what is stored");
	ssd_tier_close(t);
	cr_assert_eq(atomic_load(&released), attempts);   /* every store released once */
}

/* Read a chunk through the tier as the chain does: on a miss, store it. */
static bool read_or_store(struct ssd_tier *t, const struct chunk_id *id)
{
	if (read_ok(t, id, CS))
		return true;
	(void)store(t, id, CS);
	ssd_tier_flush(t);
	return false;
}

/* Hot chunks read 6 times, the daemon restarted, then a scan of chunks
 * read twice each, 4 times the tier: how many hot chunks still hit. */
static int hot_left_after_restart_and_scan(enum evict_kind kind)
{
	enum { SLOTS = 16, HOT = 8, SCAN = 4 * SLOTS };
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	int left = 0;

	cfg.capacity = SLOTS * FILE_BYTES(CS);
	cfg.policy = kind;
	t = tier_open(&cfg);
	for (int round = 0; round < 6; round++)
		for (uint64_t i = 0; i < HOT; i++)
			(void)read_or_store(t, &(struct chunk_id){ "hot", "e", i });
	ssd_tier_close(t);
	t = tier_open(&cfg);
	for (uint64_t i = 0; i < SCAN; i++) {
		(void)read_or_store(t, &(struct chunk_id){ "scan", "e", i });
		(void)read_or_store(t, &(struct chunk_id){ "scan", "e", i });
	}
	for (uint64_t i = 0; i < HOT; i++)
		left += read_ok(t, &(struct chunk_id){ "hot", "e", i }, CS);
	cr_assert_leq(stats(t).bytes_used, cfg.capacity);
	ssd_tier_close(t);
	return left;
}

/* The access statistics live in the index: after a restart W-TinyLFU
 * still knows the hot set and a scan does not displace it; LRU keeps
 * none of it. */
Test(ssd_tier, tinylfu_hot_set_survives_restart_and_scan)
{
	int tlfu = hot_left_after_restart_and_scan(EVICT_TINYLFU);

	teardown();
	setup();
	cr_assert_geq(tlfu, 7, "tinylfu kept %d of 8", tlfu);
	cr_assert_eq(hot_left_after_restart_and_scan(EVICT_LRU), 0);
}

/* The byte bound is what binds, not a count of chunk-sized entries: a
 * tier of 4 full chunks of 1 MiB holds 32 chunks of 100 KiB (counted in
 * full chunks it would keep 16 at most, its smallest policy). */
Test(ssd_tier, small_chunks_fill_the_bytes_not_a_chunk_count)
{
	struct ssd_tier_config cfg = cfg_default();
	const size_t big = 1u << 20, small = 100u << 10;
	struct ssd_tier *t;
	struct tier_stats st;
	unsigned char *b = malloc(big);
	size_t len;

	cfg.chunk_size = big;
	cfg.capacity = 4 * (big + 4096);
	t = tier_open(&cfg);
	for (uint64_t i = 0; i < 32; i++) {
		struct chunk_id id = { "img", "e", i };
		cr_assert(store(t, &id, small));
		ssd_tier_flush(t);
	}
	st = stats(t);
	cr_expect_eq(st.entries, 32, "%llu stored", (unsigned long long)st.entries);
	cr_expect_eq(st.evictions, 0);
	cr_expect_leq(st.bytes_used, cfg.capacity);
	for (uint64_t i = 0; i < 32; i++) {
		struct chunk_id id = { "img", "e", i };
		cr_expect_eq(ssd_tier_read(t, &id, b, big, &len, true), TFS_OK, "chunk %llu",
			     (unsigned long long)i);
		cr_expect_eq(len, small);
	}
	ssd_tier_close(t);
	free(b);
}

/* A plan of "soon" then "done", where "done" was opened: "soon" is read
 * later, "done" will not be again, "other" is not in it. */
static void plan_soon_done(struct plan_slot *slot)
{
	struct ra_plan *p = ra_plan_new();
	size_t idx;

	cr_assert_eq(plan_slot_init(slot, ""), 0);
	cr_assert_not_null(p);
	cr_assert_eq(ra_plan_add(p, "soon", 4), 0);
	cr_assert_eq(ra_plan_add(p, "done", 4), 0);
	cr_assert_eq(ra_plan_seal(p, 8, 1u << 20), 0);
	cr_assert(ra_plan_on_open(p, "done", &idx));
	cr_assert_null(plan_slot_swap(slot, p));
	cr_assert_eq(plan_slot_future(slot, "soon", false), PLAN_SOON);
	cr_assert_eq(plan_slot_future(slot, "done", true), PLAN_DONE);
	cr_assert_eq(plan_slot_future(slot, "other", true), PLAN_UNKNOWN);
}

/* With a plan, a full tier takes nothing the plan is done with (it would
 * evict to store what is needed furthest ahead: never), and a chunk the
 * plan reads later outlives others when room is made. */
Test(ssd_tier, a_plan_keeps_what_it_reads_later_and_admits_nothing_it_is_done_with)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct tier_stats st;
	struct chunk_id soon = { "soon", "e", 0 }, other = { "other", "e", 0 };
	struct chunk_id done = { "done", "e", 0 }, last = { "other", "e", 9 };
	struct plan_slot plans;

	cfg.capacity = 2 * FILE_BYTES(CS);
	cfg.policy = EVICT_LRU;
	t = tier_open(&cfg);
	plan_soon_done(&plans);
	ssd_tier_set_plan(t, &plans);
	cr_assert(store(t, &soon, CS));      /* the LRU end */
	cr_assert(store(t, &other, CS));
	ssd_tier_flush(t);
	cr_assert(store(t, &done, CS));      /* full: not admitted */
	ssd_tier_flush(t);
	st = stats(t);
	cr_expect_eq(st.entries, 2);
	cr_expect_eq(st.evictions, 0, "evicted for a chunk the plan is done with");
	cr_expect_not(read_ok(t, &done, CS));
	/* room for an unknown one: LRU would take "soon", the plan keeps it */
	cr_assert(store(t, &last, CS));
	ssd_tier_flush(t);
	cr_expect(read_ok(t, &soon, CS), "the chunk the plan reads later was evicted");
	cr_expect_not(read_ok(t, &other, CS));
	cr_expect(read_ok(t, &last, CS));
	/* without the plan, the policy alone decides again */
	ssd_tier_set_plan(t, NULL);
	cr_assert(store(t, &done, CS));
	ssd_tier_flush(t);
	cr_expect(read_ok(t, &done, CS));
	ssd_tier_close(t);
	plan_slot_release(&plans);
}

/* The writer behind: with one chunk's room on callers' buffers, the
 * others wait as copies (the callers' buffers released at once), readers
 * read them before they are written, and none is dropped while the
 * copies fit; past spill_max they are dropped and counted.  Copies are
 * counted as spilled, only when made. */
Test(ssd_tier, chunks_beyond_the_queue_wait_as_copies_and_are_readable)
{
	struct ssd_tier_config cfg = cfg_default();
	struct ssd_tier *t;
	struct tier_stats st;

	cfg.queue_max = 1;
	cfg.spill_max = 32 * (uint64_t)CS;
	t = tier_open(&cfg);
	atomic_store(&released, 0);
	for (uint64_t i = 0; i < 32; i++) {
		struct chunk_id id = { "spill", "e", i };

		cr_assert(store(t, &id, CS), "chunk %llu refused", (unsigned long long)i);
		/* pending (in a copy, or on the caller's buffer: a miss) or
		 * written: never wrong bytes */
		(void)read_ok(t, &id, CS);
	}
	cr_expect_geq(atomic_load(&released), 31 - 1, "copied buffers were not released at once");
	ssd_tier_flush(t);
	st = stats(t);
	cr_expect_eq(st.dropped, 0);
	cr_expect_eq(st.entries, 32);
	cr_expect_leq(st.spilled, 31, "the first chunk had the queue to itself");
	for (uint64_t i = 0; i < 32; i++) {
		struct chunk_id id = { "spill", "e", i };

		cr_expect(read_ok(t, &id, CS), "chunk %llu not stored", (unsigned long long)i);
	}
	ssd_tier_close(t);

	/* no room for copies: what finds the queue full is dropped, counted */
	cfg.spill_max = 0;
	t = tier_open(&cfg);
	for (uint64_t i = 0; i < 32; i++) {
		struct chunk_id id = { "nospill", "e", i };

		(void)store(t, &id, CS);
	}
	ssd_tier_flush(t);
	st = stats(t);
	cr_expect_eq(st.insertions + st.dropped, 32, "every chunk stored or counted as dropped");
	cr_expect_eq(st.spilled, 0, "no room for copies, yet copies counted");
	ssd_tier_close(t);
}

/* A scrub reads each stored chunk back at most once a call, and counts
 * the whole blocks it read: with fewer bytes stored than its budget it
 * stops after one round.  (It used to go round until the budget was
 * spent counting chunk bytes: a tier of one 1-byte chunk read it back
 * millions of times, the writer thread deaf meanwhile; a daemon with
 * such a tier did not exit after unmount.) */
Test(ssd_tier, a_scrub_reads_each_chunk_once_a_call)
{
	struct ssd_tier_config c = cfg_default();
	struct ssd_tier *t;
	struct chunk_id a = { "k/a", "e1", 0 }, b = { "k/b", "e1", 0 };

	c.scrub_rate = 0;   /* the test's calls only */
	t = tier_open(&c);
	cr_assert(store(t, &a, 1));
	cr_assert(store(t, &b, 100));
	ssd_tier_flush(t);
	cr_expect_eq(ssd_tier_scrub(t, 1u << 20), 2 * FILE_BYTES(1));
	cr_expect(read_ok(t, &a, 1));
	cr_expect(read_ok(t, &b, 100));
	ssd_tier_close(t);
}

/* A chunk fetched ahead stays marked once written: eviction passes it
 * over until its reader reads it, and it counts as fetched ahead, not as
 * evicted unread.  (The move from pending to stored once dropped the
 * mark and counted every written fetch ahead as evicted unread.) */
Test(ssd_tier, a_fetch_ahead_is_kept_for_its_reader_once_written)
{
	struct ssd_tier_config cfg = cfg_default();
	struct chunk_id ahead[2] = { { "ahead0", "e", 0 }, { "ahead1", "e", 0 } };
	struct ssd_tier *t;
	struct tier_stats st;
	uint64_t one;

	cfg.capacity = 3 * FILE_BYTES(CS);
	t = tier_open(&cfg);
	for (int i = 0; i < 2; i++) {
		cr_assert(ssd_tier_ahead_room(t, CS));
		cr_assert(store_kind(t, &ahead[i], CS, ssd_tier_store_ahead));
	}
	ssd_tier_flush(t);
	st = stats(t);
	cr_assert_eq(st.entries, 2);
	one = st.bytes_used / 2;
	cr_assert_eq(st.ahead_bytes, 2 * one, "written, not read: still ahead");
	cr_assert_eq(st.ahead_evicted, 0, "nothing was evicted");

	/* an operator's warm-up of four more files: room for one at a time */
	for (uint64_t i = 0; i < 4; i++) {
		struct chunk_id id = { "warm", "e", i };

		cr_assert(store_kind(t, &id, CS, ssd_tier_store_forced));
		ssd_tier_flush(t);
	}
	st = stats(t);
	cr_assert_geq(st.evictions, 3);
	cr_assert_eq(st.ahead_evicted, 0);
	for (int i = 0; i < 2; i++)
		cr_assert(read_ok(t, &ahead[i], CS), "%s, fetched ahead, evicted unread", ahead[i].key);
	st = stats(t);
	cr_assert_eq(st.ahead_bytes, 0, "both read");

	/* read, they are ordinary chunks: the next warm-ups may take them */
	for (uint64_t i = 4; i < 8; i++) {
		struct chunk_id id = { "warm", "e", i };

		cr_assert(store_kind(t, &id, CS, ssd_tier_store_forced));
		ssd_tier_flush(t);
	}
	cr_assert_not(read_ok(t, &ahead[0], CS) && read_ok(t, &ahead[1], CS));
	cr_assert_eq(stats(t).ahead_evicted, 0, "read before they went");
	ssd_tier_close(t);
}
