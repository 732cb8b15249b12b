/* Unit tests of a directory scan's fetch ahead racing its reader, over an
 * in-memory object store.  The executable is linked with
 * -Wl,--wrap=ram_tier_lookup: the wrapper can hold one fetch ahead of a
 * chosen key just before it claims its RAM slot, which is where a reader
 * that came meanwhile must be noticed. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "fake_objstore.h"
#include "fs/fs.h"
#include "fs/scan.h"
#include "tiers/pin_set.h"
#include "tiers/ram_tier.h"

#define CS (64u * 1024)

static struct fake_objstore *store;
static struct tfs_fs *fs;

/* The gate: the first read-ahead lookup of gate.key waits in the
 * wrapper until the test opens it. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char key[64];             /* "" = hold nothing */
	bool held, open, passed;  /* a lookup waits; it may go; it went */
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, "", false, false, false };

/* The refusal: a fetch ahead's lookup of chunk 0 of refuse.key finds no
 * room (TFS_AGAIN, as a full RAM tier answers), every time.  Under the
 * gate's lock, signalled on its condition (gate_wait). */
static struct {
	char key[64];             /* "" = refuse nothing */
	bool refused;             /* a lookup was refused */
} refuse = { "", false };

int __real_ram_tier_lookup(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
			   enum ram_mode mode, struct chunk_ref **out);

int __wrap_ram_tier_lookup(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
			   enum ram_mode mode, struct chunk_ref **out)
{
	bool hold = false;
	int rc;

	if ((mode == RAM_AHEAD || mode == RAM_AHEAD_EPOCH) && id->index == 0) {
		pthread_mutex_lock(&gate.lock);
		hold = refuse.key[0] && strcmp(refuse.key, id->key) == 0;
		if (hold) {
			refuse.refused = true;
			pthread_cond_broadcast(&gate.cond);
		}
		pthread_mutex_unlock(&gate.lock);
		if (hold) {
			*out = NULL;
			return TFS_AGAIN;
		}
	}
	if (mode == RAM_AHEAD || mode == RAM_AHEAD_EPOCH) {
		pthread_mutex_lock(&gate.lock);
		hold = gate.key[0] && strcmp(gate.key, id->key) == 0 && !gate.held;
		if (hold) {
			gate.held = true;
			pthread_cond_broadcast(&gate.cond);
			while (!gate.open)
				pthread_cond_wait(&gate.cond, &gate.lock);
		}
		pthread_mutex_unlock(&gate.lock);
	}
	rc = __real_ram_tier_lookup(t, id, expect_len, mode, out);
	if (hold) {
		pthread_mutex_lock(&gate.lock);
		gate.passed = true;
		pthread_cond_broadcast(&gate.cond);
		pthread_mutex_unlock(&gate.lock);
	}
	return rc;
}

/* Wait up to secs (a bound for a slow build, not a speed) for *flag. */
static bool gate_wait(bool *flag, int secs)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_mutex_lock(&gate.lock);
	while (!*flag)
		if (pthread_cond_timedwait(&gate.cond, &gate.lock, &until) != 0)
			break;
	ok = *flag;
	pthread_mutex_unlock(&gate.lock);
	return ok;
}

static void gate_open(void)
{
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

static void setup(void)
{
	store = fake_objstore_new();
}

static void teardown(void)
{
	gate_open();   /* a failed test must not leave a fetcher held */
	fs_free(fs);
	objstore_free(&store->base);
}

TestSuite(scan_fetch, .init = setup, .fini = teardown);

static uint64_t lookup(uint64_t parent, const char *name)
{
	struct fs_attr a;

	cr_assert_eq(fs_lookup(fs, parent, name, &a), TFS_OK, "lookup %s", name);
	return a.ino;
}

/* Open name in dir, read it whole and check its bytes. */
static void read_file(uint64_t dir, const char *name, size_t len, unsigned seed)
{
	struct fs_file *f;
	struct fs_read r;
	size_t pos = 0;
	bool keep;

	cr_assert_eq(fs_open(fs, lookup(dir, name), &f, &keep), TFS_OK);
	cr_assert_eq(fs_read(fs, f, 0, len, &r), TFS_OK);
	cr_assert_eq(r.bytes, len, "%s: %zu bytes of %zu", name, r.bytes, len);
	for (size_t i = 0; i < r.n; i++) {
		const unsigned char *p = r.iov[i].iov_base;

		for (size_t k = 0; k < r.iov[i].iov_len; k++, pos++)
			cr_assert_eq(p[k], fake_byte(seed, pos), "%s: byte %zu", name, pos);
	}
	fs_read_done(fs, &r);
	fs_release(fs, f);
}

/* A mount of the store's ds/ with a scan's fetchers and no SSD tier, ds
 * listed as a loader lists it; its inode. */
static uint64_t mount_listed(void)
{
	const struct fs_config c = {
		.store = &store->base, .prefix = "", .metadata_ttl_ms = 600000,
		.chunk_size = CS, .ram_bytes = 256 * CS, .uid = 1, .gid = 2,
		.file_mode = 0444, .dir_mode = 0555, .read_ahead_mem = 128 * CS,
		.scan_threads = 4,
	};
	struct fs_dir *d;
	uint64_t dir;

	fs = fs_new(&c);
	cr_assert_not_null(fs);
	dir = lookup(FS_ROOT_INO, "ds");
	cr_assert_eq(fs_opendir(fs, dir, &d), TFS_OK);
	fs_releasedir(fs, d);
	return dir;
}

/* Wait for every fetcher to be done (a bound on a hang, not a speed). */
static void fetchers_settle(void)
{
	uint64_t t0 = clock_mono_us();
	struct fs_stats st;

	do {
		usleep(10000);
		fs_stats(fs, &st);
	} while (st.scan_busy && clock_mono_us() - t0 < 60000000);
	cr_assert_eq(st.scan_busy, 0, "fetchers still at work after 60 s");
}

/* The race: a scan's fetcher takes a file nobody has opened, and before
 * it claims the file's RAM slot the job opens the file, reads it whole
 * (one GET, its own), and RAM evicts it.  The fetcher then finds no copy
 * and claims the slot; fetching now would bring bytes nobody reads this
 * epoch.  It must see that the file was opened and fetch nothing. */
Test(scan_fetch, a_file_its_reader_read_while_the_fetch_waited_is_not_fetched_again,
     .timeout = 180)
{
	enum { N = 64 };
	unsigned order[N], target;
	char name[32];
	struct fs_object o;
	struct fs_evicted ev = { 0 };
	uint64_t dir;

	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "ds/s%03u", i);
		fake_objstore_put_pattern(store, name, 1000 + i, 100 + i);
		order[i] = (i * 29 + 7) % N;     /* a fixed shuffle */
	}
	target = order[N - 1];               /* the job's last: the scan takes it */
	snprintf(gate.key, sizeof(gate.key), "ds/s%03u", target);
	dir = mount_listed();
	for (unsigned k = 0; k < SCAN_TRIGGER; k++) {
		snprintf(name, sizeof(name), "s%03u", order[k]);
		read_file(dir, name, 1000 + order[k], 100 + order[k]);
	}
	cr_assert(gate_wait(&gate.held, 60), "the scan never fetched %s", gate.key);

	/* the job reads the held file, and RAM lets it go */
	snprintf(name, sizeof(name), "s%03u", target);
	read_file(dir, name, 1000 + target, 100 + target);
	cr_assert_eq(fake_objstore_gets(store, gate.key), 1);
	cr_assert_eq(fs_path_object(fs, gate.key, &o), TFS_OK);
	fs_object_evict(fs, &o, PIN_RAM, &ev);
	fs_object_release(&o);
	cr_assert_eq(ev.chunks, 1, "%s not evicted from RAM", gate.key);

	gate_open();
	cr_assert(gate_wait(&gate.passed, 60));
	fetchers_settle();
	cr_expect_eq(fake_objstore_gets(store, gate.key), 1,
		     "%s fetched again after its reader read it (%u GETs)", gate.key,
		     fake_objstore_gets(store, gate.key));
	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "ds/s%03u", i);
		cr_expect_eq(fake_objstore_gets(store, name), 1, "%s: %u GETs", name,
			     fake_objstore_gets(store, name));
	}
}

/* A fetch ahead that finds no room for a file's chunk fetches none after
 * it: the reader's miss on that chunk would evict the later ones, unread
 * (they were fetched twice).  Chunk 0 of a three-chunk file is refused
 * room; the scan must leave chunks 1 and 2 to the reader too. */
Test(scan_fetch, a_file_whose_first_chunk_finds_no_room_is_not_fetched_past_it, .timeout = 180)
{
	enum { N = 40 };
	char name[32];
	uint64_t dir;

	for (unsigned i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "ds/s%03u", i);
		fake_objstore_put_pattern(store, name, 1000 + i, 100 + i);
	}
	fake_objstore_put_pattern(store, "ds/big", 3 * CS, 7);   /* listed first */
	pthread_mutex_lock(&gate.lock);
	snprintf(refuse.key, sizeof(refuse.key), "ds/big");
	pthread_mutex_unlock(&gate.lock);
	dir = mount_listed();
	for (unsigned k = 0; k < SCAN_TRIGGER; k++) {   /* a shuffled job: the scan starts */
		unsigned i = (k * 7 + 3) % N;

		snprintf(name, sizeof(name), "s%03u", i);
		read_file(dir, name, 1000 + i, 100 + i);
	}
	cr_assert(gate_wait(&refuse.refused, 60), "the scan never tried ds/big");
	fetchers_settle();
	cr_expect_eq(fake_objstore_gets(store, "ds/big"), 0,
		     "chunks after the one with no room were fetched (%u GETs)",
		     fake_objstore_gets(store, "ds/big"));
	pthread_mutex_lock(&gate.lock);
	refuse.key[0] = '\0';
	pthread_mutex_unlock(&gate.lock);
	read_file(dir, "big", 3 * CS, 7);
}
