/* stress_chunk_cache.c - tierfs-stress-cache: many threads through one
 * chunk cache (RAM tier small enough to churn, a real SSD tier with its
 * writer thread and RocksDB index, blocks kept for random readers in a
 * bound that lets them go; beside it, chunks big enough to come in
 * parallel part GETs, through a cache of their own), every
 * byte checked, while other threads prefetch, evict, warm, pin and read
 * the counters.  Built in every build; scripts/test.sh runs it in
 * the ThreadSanitizer build (build-tsan), where Criterion cannot run (its
 * sandbox maps memory where TSan keeps its shadow), so any data race in
 * the tiers is reported.  Plain exit status: 0 when every byte matched.
 *
 *   tierfs-stress-cache [SECONDS]     (default 10)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "../unit/fake_objstore.h"
#include "tiers/chunk_cache.h"
#include "tiers/ssd_tier.h"
#include "tiers/store_fetch.h"

#define CS (4 * PART_BLOCK)
#define OBJECTS 24
#define READERS 6
#define PARTS_READERS 2
#define BIG_CS (3 * (size_t)STORE_FETCH_PART_MIN)   /* fetched in three part GETs */

struct store {
	struct objstore base;        /* first member */
	atomic_ulong gets;
};

static int store_get_range(struct objstore *os, const char *key, const char *if_match,
			   uint64_t off, size_t len, void *buf, size_t *got,
			   struct tfs_errinfo *ei)
{
	struct store *s = (struct store *)os;
	unsigned seed = (unsigned)strtoul(key + 1, NULL, 10);

	atomic_fetch_add(&s->gets, 1);
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = fake_byte(seed, off + i);
	*got = len;
	return TFS_OK;
}

static const struct objstore_ops store_ops = { .get_range = store_get_range };

static struct store store = { .base.ops = &store_ops };
static struct chunk_cache *cc, *big_cc;
static char keys[OBJECTS][16];
static struct chunk_obj objs[OBJECTS];
static atomic_bool stop;
static atomic_ulong reads, bad;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random reader's read of a part of chunk idx of object o: its bytes
 * checked; returns false on an error or a wrong byte. */
static bool random_read(unsigned o, uint64_t idx, uint64_t *s)
{
	size_t clen = chunk_cache_chunk_len(cc, objs[o].size, idx);
	size_t off = (size_t)(next(s) % clen), len = 1 + (size_t)(next(s) % (clen - off));
	struct chunk_ref *r;
	const unsigned char *p;
	void *span;
	bool ok = true;
	int rc = chunk_cache_read(cc, &objs[o], idx, off, len, true, &r, &span,
				  (const void **)&p);

	if (rc != TFS_OK) {
		fprintf(stderr, "read %s #%llu: %s\n", keys[o], (unsigned long long)idx,
			tfs_strerror(rc));
		return false;
	}
	for (size_t i = 0; i < len && ok; i += 61)
		ok = p[i] == fake_byte((unsigned)o, idx * CS + off + i);
	ok = ok && p[len - 1] == fake_byte((unsigned)o, idx * CS + off + len - 1);
	if (r)
		chunk_ref_put(r);
	free(span);
	return ok;
}

static void *reader(void *arg)
{
	uint64_t s = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;

	while (!atomic_load(&stop)) {
		unsigned o = (unsigned)(next(&s) % OBJECTS);
		uint64_t n = chunk_cache_chunks(cc, objs[o].size), idx = next(&s) % n;
		struct chunk_ref *r = NULL;
		int rc;

		if (next(&s) % 2) {
			if (!random_read(o, idx, &s))
				atomic_fetch_add(&bad, 1);
			atomic_fetch_add(&reads, 1);
			continue;
		}
		rc = chunk_cache_get(cc, &objs[o], idx, &r);

		if (rc != TFS_OK) {
			fprintf(stderr, "get %s #%llu: %s\n", keys[o], (unsigned long long)idx,
				tfs_strerror(rc));
			atomic_fetch_add(&bad, 1);
			continue;
		}
		const unsigned char *p = chunk_ref_data(r);
		size_t len = chunk_ref_len(r);
		if (len != chunk_cache_chunk_len(cc, objs[o].size, idx))
			atomic_fetch_add(&bad, 1);
		for (size_t i = 0; i < len; i += 61)
			if (p[i] != fake_byte((unsigned)o, idx * CS + i)) {
				atomic_fetch_add(&bad, 1);
				break;
			}
		if (next(&s) % 4 == 0)
			chunk_cache_read_done(cc, r);
		chunk_ref_put(r);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

/* Whole chunks of BIG_CS, each fetched in three part GETs, two of them
 * on threads of their own: two such readers share a cache of their own
 * and evict the object after each get, so most gets are fetches, some
 * waiting on the other's.  A sample of each chunk's bytes checked. */
static void *parts_reader(void *arg)
{
	struct chunk_obj o = { "k1", "\"e\"", "\"e\"", 2 * BIG_CS - 5 };
	uint64_t idx = (uintptr_t)arg % 2;
	struct chunk_cache_evicted ev = { 0 };
	const struct timespec pause = { 0, 100 * 1000 * 1000 };

	while (!atomic_load(&stop)) {
		struct chunk_ref *r;
		const unsigned char *p;
		size_t len;
		int rc = chunk_cache_get(big_cc, &o, idx, &r);

		if (rc != TFS_OK) {
			fprintf(stderr, "get of a big chunk #%llu: %s\n", (unsigned long long)idx,
				tfs_strerror(rc));
			atomic_fetch_add(&bad, 1);
			break;
		}
		p = chunk_ref_data(r);
		len = chunk_ref_len(r);
		if (len != chunk_cache_chunk_len(big_cc, o.size, idx))
			atomic_fetch_add(&bad, 1);
		for (size_t i = 0; i < len; i += 4093)
			if (p[i] != fake_byte(1, idx * BIG_CS + i)) {
				atomic_fetch_add(&bad, 1);
				break;
			}
		if (len && p[len - 1] != fake_byte(1, idx * BIG_CS + len - 1))
			atomic_fetch_add(&bad, 1);
		chunk_cache_read_done(big_cc, r);
		chunk_ref_put(r);
		atomic_fetch_add(&reads, 1);
		chunk_cache_evict(big_cc, &o, PIN_RAM, &ev);   /* the next get fetches */
		idx ^= 1;
		nanosleep(&pause, NULL);   /* the main readers keep most of the CPU */
	}
	return NULL;
}

/* chunk_cache_wanted_fn: yes or no at random (arg: the caller's state). */
static bool coin(void *arg)
{
	return next(arg) % 2;
}

/* Prefetch, warm, evict, pin, count: everything an operator or the
 * read-ahead does beside the readers. */
static void *meddler(void *arg)
{
	uint64_t s = (uintptr_t)arg + 77;

	while (!atomic_load(&stop)) {
		unsigned o = (unsigned)(next(&s) % OBJECTS);
		uint64_t idx = next(&s) % chunk_cache_chunks(cc, objs[o].size), ram, ssd;
		struct chunk_cache_evicted ev = { 0 };
		struct chunk_cache_stats st;
		bool fetched;
		const char *k[] = { keys[o] };
		uint64_t sz[] = { objs[o].size }, would;

		switch (next(&s) % 8) {
		case 0: {
			/* one draw each, in this order (arguments have none) */
			bool epoch = next(&s) % 2, near = next(&s) % 2;

			(void)chunk_cache_prefetch(cc, &objs[o], idx, epoch, near, NULL, NULL);
			break;
		}
		case 1:   /* a fetch ahead that may be withdrawn once it holds its slot */
			(void)chunk_cache_prefetch(cc, &objs[o], idx, next(&s) % 2, false, coin, &s);
			break;
		case 2:
			(void)chunk_cache_warm(cc, &objs[o], idx, next(&s) % 2 ? PIN_SSD : PIN_RAM,
					       &fetched);
			break;
		case 3:
			chunk_cache_evict(cc, &objs[o], PIN_RAM | PIN_SSD, &ev);
			break;
		case 4:
			if (chunk_cache_pin(cc, k, sz, 1, PIN_SSD, &would) == TFS_OK)
				chunk_cache_unpin(cc, keys[o]);
			break;
		case 5:
			chunk_cache_residency(cc, &objs[o], &ram, &ssd);
			break;
		case 6:
			chunk_cache_stats(cc, &st);
			break;
		default:
			chunk_cache_new_epoch(cc);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	char dir[] = "/tmp/tierfs-stress-XXXXXX", path[64], err[512], cmd[96];
	struct ssd_tier *ssd = NULL;
	pthread_t th[READERS + 2 + PARTS_READERS];
	struct chunk_cache_stats st;

	if (!mkdtemp(dir))
		return 2;
	snprintf(path, sizeof(path), "%s/cache", dir);
	struct ssd_tier_config sc = { .dir = path, .owner = "stress", .capacity = 40u * (CS + 4096),
				      .min_free_pct = 0, .chunk_size = CS, .queue_max = 8,
				      .spill_max = 2u * CS, .policy = EVICT_LRU };
	if (ssd_tier_open(&sc, &ssd, err, sizeof(err)) != TFS_OK) {
		fprintf(stderr, "ssd_tier_open: %s\n", err);
		return 2;
	}
	struct chunk_cache_config c = { .store = &store.base, .parallel_gets = 3,
					.ram_bytes = 12u * CS, .chunk_size = CS, .ssd = ssd,
					.part_bytes = 2u * CS };
	struct chunk_cache_config bc = { .store = &store.base, .parallel_gets = 3,
					 .ram_bytes = BIG_CS, .chunk_size = BIG_CS };
	cc = chunk_cache_new(&c);
	big_cc = chunk_cache_new(&bc);
	if (!cc || !big_cc)
		return 2;
	for (unsigned i = 0; i < OBJECTS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%u", i);
		objs[i] = (struct chunk_obj){ keys[i], "\"e\"", "\"e\"",
					      (uint64_t)(1 + i % 5) * CS - i * 7 };
	}
	for (uintptr_t i = 0; i < READERS; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[READERS + i], NULL, meddler, (void *)i);
	for (uintptr_t i = 0; i < PARTS_READERS; i++)
		pthread_create(&th[READERS + 2 + i], NULL, parts_reader, (void *)i);
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < READERS + 2 + PARTS_READERS; i++)
		pthread_join(th[i], NULL);
	chunk_cache_stats(cc, &st);
	chunk_cache_free(cc);
	chunk_cache_free(big_cc);
	ssd_tier_close(ssd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	printf("stress: %lu chunk reads, %lu store GETs, %lu wrong; SSD writer: %llu dropped, "
	       "%llu of them taken at a second offer\n", atomic_load(&reads),
	       atomic_load(&store.gets), atomic_load(&bad), (unsigned long long)st.ssd.dropped,
	       (unsigned long long)st.ssd.resaved);
	return atomic_load(&bad) == 0 && atomic_load(&reads) > 0 ? 0 : 1;
}
