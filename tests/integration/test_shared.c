/* test_shared.c - the shared cache tier: several daemons on one machine,
 * each with its own mountpoint and cache directory, the origin behind
 * tierfs-faultproxy (which counts what the origin sends) and the shared
 * bucket on the same server, reached directly.
 *
 * What must hold: a second node reads what the first fetched from the
 * shared tier, not from the origin; a corrupt or truncated shared chunk
 * is a miss, served right from the origin and rewritten; a shared tier
 * that cannot be reached, answers errors, refuses writes or answers late
 * costs no read; a changed origin object is never
 * served from its old version's shared chunks; of two nodes missing one
 * chunk at once, one claims it and the other is served what the first
 * wrote.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tiers/shared_tier.h"

#define F_KEY "data/f.bin"
#define F_SEED 0x5a1ecu
#define F_CHUNKS 5
#define F_SIZE (F_CHUNKS * IT_MIB - 1000)    /* the last chunk is short */

static struct it_env env;
static struct it_bucket origin, shared;
static struct it_proxy proxy;

static void shared_init(void)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "sho", &origin), 0, "create the origin bucket");
	cr_assert_eq(it_bucket_create(&env, "shc", &shared), 0, "create the shared bucket");
	cr_assert_eq(it_put_gen(&origin, F_KEY, F_SEED, F_SIZE), 0);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
}

static void shared_fini(void)
{
	it_cleanup();
	it_proxy_stop(&proxy);
	if (origin.client) {
		it_bucket_remove(&origin);
	}
	if (shared.client) {
		it_bucket_remove(&shared);
	}
}

TestSuite(shared, .init = shared_init, .fini = shared_fini, .timeout = 240);

/* A node: its own mountpoint and cache directory, the origin through the
 * proxy, the shared tier at shared_ep (NULL: the server itself), each
 * request to it bounded by timeout_ms (NULL: the default). */
static void node_mount_timeout(struct it_mount *m, const char *shared_ep, const char *timeout_ms)
{
	char src[128], sh[128], cache[PATH_MAX];
	const char *opts[] = {
		"--chunk-size", "1M", "--cache-dir", cache, "--shared-cache", sh,
		"--shared-endpoint", shared_ep ? shared_ep : env.endpoint,
		"--read-ahead", "0", "--scan-prefetch", "0", "-v",
		timeout_ms ? "--shared-timeout" : NULL, timeout_ms, NULL,
	};

	cr_assert_eq(it_mkdtemp(&env, "shcache", cache, sizeof(cache)), 0);
	it_fmt(src, sizeof(src), "s3://%s", origin.name);
	it_fmt(sh, sizeof(sh), "s3://%s/cluster", shared.name);
	if (it_mount(&env, src, proxy.url, opts, m) != 0)
		cr_assert_fail("mount failed (status %d): %s", m->status, it_mount_log(m));
}

static void node_mount(struct it_mount *m, const char *shared_ep)
{
	node_mount_timeout(m, shared_ep, NULL);
}

/* Read key (size bytes of seed) through m exactly. */
static void read_key_ok(struct it_mount *m, const char *key, uint64_t seed, size_t size)
{
	char p[PATH_MAX];
	char *buf = malloc(size + 1);
	int64_t bad;
	ssize_t r;
	int fd;

	cr_assert_not_null(buf);
	it_fmt(p, sizeof(p), "%s/%s", m->dir, key);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	r = it_pread_full(fd, buf, size + 1, 0);
	cr_assert_eq(r, (ssize_t)size, "read %s: %zd (%s)", key, r, r < 0 ? strerror(errno) : "");
	bad = it_gen_mismatch(seed, 0, buf, size);
	cr_assert_eq(bad, -1, "%s: wrong byte at %lld", key, (long long)bad);
	close(fd);
	free(buf);
}

/* Read all of F_KEY through m; it must be exactly the upload of seed. */
static void read_ok(struct it_mount *m, uint64_t seed)
{
	read_key_ok(m, F_KEY, seed, F_SIZE);
}

/* Wait (<= 30 s) until counter name of m reaches at least want. */
static long long wait_stat(struct it_mount *m, const char *name, long long want)
{
	return it_daemon_stat_wait(m, name, want, 30.0);
}

/* The keys of the shared bucket under prefix, n at most. */
static size_t shared_keys(const char *prefix, char keys[][200], size_t n)
{
	struct obj_list_page *page = NULL;
	size_t k = 0;

	cr_assert_eq(objstore_list(s3_client_objstore(shared.client), prefix, NULL, NULL, 0, &page,
				   NULL), TFS_OK);
	for (size_t i = 0; i < page->n_entries && k < n; i++)
		it_fmt(keys[k++], 200, "%s", page->entries[i].key);
	obj_list_page_free(page);
	return k;
}

/* Node A reads from the origin and fills the shared tier; node B then
 * reads every chunk from the shared tier, the origin sending no byte of
 * the file. */
Test(shared, second_node_reads_from_shared)
{
	struct it_mount a, b;
	char keys[16][200];
	long long down;

	node_mount(&a, NULL);
	read_ok(&a, F_SEED);
	cr_assert_eq(wait_stat(&a, "shared.writes", F_CHUNKS), F_CHUNKS,
		     "node A wrote its chunks to the shared tier");
	cr_expect_eq(shared_keys("cluster/c/", keys, 16), F_CHUNKS, "one object per chunk");
	cr_expect_eq(shared_keys("cluster/claim/", keys, 16), 0, "claims removed once written");

	node_mount(&b, NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&b, F_SEED);
	down = it_proxy_stat(&proxy, "bytes_down");
	cr_expect_lt(down, 64 * 1024, "the origin sent %lld bytes to node B", down);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0, "no object GET reached the origin");
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), F_CHUNKS);
	cr_expect_eq(it_daemon_stat(&b, "shared.bytes"), F_SIZE);
	cr_expect_eq(it_daemon_stat(&b, "store.fetches"), 0);
	it_unmount_ok(&env, &b);
	it_unmount_ok(&env, &a);
}

/* Damage shared objects: one chunk with a byte flipped, one truncated.
 * Node B reads right bytes (two misses, from the origin), rewrites both,
 * and node C then reads everything from the shared tier. */
Test(shared, corrupt_chunk_is_a_miss_and_rewritten)
{
	struct it_mount a, b, c;
	char keys[16][200], meta[128];
	size_t n, got;
	char *buf = malloc(IT_MIB);

	cr_assert_not_null(buf);
	node_mount(&a, NULL);
	read_ok(&a, F_SEED);
	cr_assert_eq(wait_stat(&a, "shared.writes", F_CHUNKS), F_CHUNKS);
	it_unmount_ok(&env, &a);
	n = shared_keys("cluster/c/", keys, 16);
	cr_assert_eq(n, F_CHUNKS);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(s3_client_get_meta(shared.client, keys[i], "tierfs-sum", buf, IT_MIB,
						&got, meta, sizeof(meta), NULL), TFS_OK);
		cr_assert_neq(meta[0], '\0', "the shared chunk carries its checksum");
		if (i == 0)
			buf[got / 2] ^= 0x40;    /* same length, same header, one bit off */
		else
			got /= 2;                /* truncated */
		cr_assert_eq(s3_client_put_meta(shared.client, keys[i], buf, got, "tierfs-sum", meta,
						false, NULL), TFS_OK);
	}

	node_mount(&b, NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&b, F_SEED);
	cr_expect_eq(it_daemon_stat(&b, "shared.corrupt"), 2);
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), F_CHUNKS - 2);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET") > 0, 1, "the bad chunks came from the origin");
	cr_assert_eq(wait_stat(&b, "shared.writes", 2), 2, "node B rewrote both");
	it_unmount_ok(&env, &b);

	node_mount(&c, NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	read_ok(&c, F_SEED);
	cr_expect_eq(it_daemon_stat(&c, "shared.hits"), F_CHUNKS);
	cr_expect_eq(it_daemon_stat(&c, "shared.corrupt"), 0);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), 0);
	it_unmount_ok(&env, &c);
	free(buf);
}

/* The shared endpoint refuses connections: the mount comes up, reads
 * are right, and the tier is paused after its failures. */
Test(shared, unreachable_shared_tier_costs_no_read)
{
	struct it_mount a;
	char dead[64];
	int fd;
	int port = it_dead_port(&fd);
	double t0;

	cr_assert_gt(port, 0);
	it_fmt(dead, sizeof(dead), "http://127.0.0.1:%d", port);
	node_mount(&a, dead);
	t0 = it_now();
	read_ok(&a, F_SEED);
	cr_expect_lt(it_now() - t0, 60.0, "reads took %.1f s", it_now() - t0);
	cr_expect_gt(it_daemon_stat(&a, "shared.errors"), 0);
	cr_expect_eq(it_daemon_stat(&a, "shared.hits"), 0);
	cr_expect_eq(it_daemon_stat(&a, "store.fetches"), F_CHUNKS);
	it_unmount_ok(&env, &a);
	close(fd);
}

/* ---- the shared tier failing, through a proxy of its own ---- */

#define G_KEY "data/g.bin"
#define G_SEED 0x6b1edu
#define G_CHUNKS 2
#define R_KEY "data/r.bin"
#define R_SEED 0x7c2fdu
#define R_CHUNKS 3

/* Wait (<= 60 s) until m's shared tier is no longer paused. */
static void wait_unpaused(struct it_mount *m)
{
	for (int i = 0; i < 600 && it_daemon_stat(m, "shared.paused") != 0; i++)
		usleep(100 * 1000);
	cr_assert_eq(it_daemon_stat(m, "shared.paused"), 0, "the shared tier stayed paused");
}

/* Every request to the shared tier is answered 500: reads are right and
 * come from the origin, the tier is paused; once it answers again, the
 * node's next misses go through it (it writes what it fetches). */
Test(shared, a_shared_tier_answering_errors_costs_no_read)
{
	struct it_proxy sp;
	struct it_mount a;

	cr_assert_eq(it_proxy_start(&env, env.endpoint, &sp), 0, "start the tier's proxy");
	cr_assert_eq(it_proxy_fault(&sp, "kind=500&count=1000000"), 0);
	node_mount(&a, sp.url);
	read_ok(&a, F_SEED);
	cr_expect_gt(it_daemon_stat(&a, "shared.errors"), 0);
	cr_expect_eq(it_daemon_stat(&a, "shared.hits"), 0);
	cr_expect_eq(it_daemon_stat(&a, "store.fetches"), F_CHUNKS);

	cr_assert_eq(it_proxy_clear(&sp), 0);
	wait_unpaused(&a);
	cr_assert_eq(it_put_gen(&origin, G_KEY, G_SEED, G_CHUNKS * IT_MIB), 0);
	read_key_ok(&a, G_KEY, G_SEED, G_CHUNKS * IT_MIB);
	cr_expect_geq(wait_stat(&a, "shared.writes", G_CHUNKS), G_CHUNKS,
		      "back in the chain: the chunks fetched are written");
	it_unmount_ok(&env, &a);
	it_proxy_stop(&sp);
}

/* The shared tier refuses every write (403, as a full quota or a
 * read-only key would): reads are right, every lookup still goes to it,
 * and a refusal is not a failure that pauses it; a second node finds
 * nothing there and reads the origin, right. */
Test(shared, a_shared_tier_refusing_writes_costs_no_read)
{
	struct it_proxy sp;
	struct it_mount a, b;

	/* a file of its own: no other test can have put its chunks there */
	cr_assert_eq(it_put_gen(&origin, R_KEY, R_SEED, R_CHUNKS * IT_MIB), 0);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &sp), 0, "start the tier's proxy");
	cr_assert_eq(it_proxy_fault(&sp, "kind=403&count=1000000&method=PUT"), 0);
	node_mount(&a, sp.url);
	read_key_ok(&a, R_KEY, R_SEED, R_CHUNKS * IT_MIB);
	cr_expect_geq(wait_stat(&a, "shared.write_failures", R_CHUNKS), R_CHUNKS);
	cr_expect_eq(it_daemon_stat(&a, "shared.writes"), 0);
	cr_expect_eq(it_daemon_stat(&a, "shared.errors"), 0);
	cr_expect_eq(it_daemon_stat(&a, "shared.paused"), 0);
	cr_expect_eq(it_daemon_stat(&a, "shared.misses"), R_CHUNKS);
	cr_expect_eq(it_daemon_stat(&a, "store.fetches"), R_CHUNKS);
	it_unmount_ok(&env, &a);

	node_mount(&b, sp.url);
	read_key_ok(&b, R_KEY, R_SEED, R_CHUNKS * IT_MIB);
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), 0);
	cr_expect_eq(it_daemon_stat(&b, "store.fetches"), R_CHUNKS);
	it_unmount_ok(&env, &b);
	it_proxy_stop(&sp);
}

/* The shared tier answers after 3 s, each request bounded at 300 ms:
 * reads are right and come from the origin, and the tier is paused after
 * its timeouts instead of costing every chunk one (no time is asserted
 * but a bound a slow build keeps: the reads are 5 chunks). */
Test(shared, a_slow_shared_tier_costs_no_read)
{
	struct it_proxy sp;
	struct it_mount a;
	double t0;

	cr_assert_eq(it_proxy_start(&env, env.endpoint, &sp), 0, "start the tier's proxy");
	cr_assert_eq(it_proxy_ctl(&sp, "shape?latency_ms=3000", NULL, 0), 200);
	node_mount_timeout(&a, sp.url, "300");
	t0 = it_now();
	read_ok(&a, F_SEED);
	cr_expect_lt(it_now() - t0, 60.0, "reads took %.1f s", it_now() - t0);
	cr_expect_geq(it_daemon_stat(&a, "shared.errors"), 3, "timed out, counted");
	cr_expect_eq(it_daemon_stat(&a, "shared.hits"), 0);
	cr_expect_eq(it_daemon_stat(&a, "store.fetches"), F_CHUNKS);
	it_unmount_ok(&env, &a);
	it_proxy_stop(&sp);
}

/* The origin object changes (new ETag): a node that opens the new
 * version never gets the old version's shared chunks. */
Test(shared, changed_origin_object_never_stale)
{
	struct it_mount a, b;

	node_mount(&a, NULL);
	read_ok(&a, F_SEED);
	cr_assert_eq(wait_stat(&a, "shared.writes", F_CHUNKS), F_CHUNKS);
	it_unmount_ok(&env, &a);
	cr_assert_eq(it_put_gen(&origin, F_KEY, F_SEED + 1, F_SIZE), 0, "new version");

	node_mount(&b, NULL);
	read_ok(&b, F_SEED + 1);
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), 0);
	cr_expect_eq(it_daemon_stat(&b, "store.fetches"), F_CHUNKS);
	it_unmount_ok(&env, &b);
}

/* ---- the claim, through the tier's own interface ---- */

/* A node's tier at endpoint (NULL: the server itself), chunks of 4 KiB;
 * queue_bytes and put_wait_ms 0 for the defaults. */
static struct shared_tier *tier_at(const char *endpoint, unsigned claim_wait_ms,
				   uint64_t queue_bytes, unsigned put_wait_ms)
{
	struct tfs_errinfo ei;
	struct s3_client *c = s3_client_new(&(struct s3_config){
		.endpoint = endpoint ? endpoint : env.endpoint, .region = env.region,
		.bucket = shared.name, .path_style = true, .access_key = env.access_key,
		.secret_key = env.secret_key, .request_timeout_ms = 20000 }, &ei);

	cr_assert_not_null(c, "%s", ei.message);
	return shared_tier_new(&(struct shared_tier_config){
		.store = s3_client_objstore(c), .prefix = "claims-test/", .origin = "s3://x@test",
		.chunk_size = 4096, .claim_wait_ms = claim_wait_ms, .queue_bytes = queue_bytes,
		.spill_bytes = queue_bytes, .put_wait_ms = put_wait_ms });
}

static struct shared_tier *tier_open(unsigned claim_wait_ms)
{
	return tier_at(NULL, claim_wait_ms, 0, 0);
}

struct waiter {
	struct shared_tier *st;
	struct chunk_id id;
	char buf[4096];
	struct shared_ticket t;
	int rc;
};

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;

	w->rc = shared_tier_get(w->st, &w->id, sizeof(w->buf), w->buf, &w->t);
	return NULL;
}

/* Wait (<= 60 s) until st waits on a claim; its claim_waits then. */
static uint64_t claim_waits_of(struct shared_tier *st)
{
	struct shared_tier_stats s;

	for (int i = 0; i < 1200; i++) {
		shared_tier_stats(st, &s);
		if (s.claim_waits)
			break;
		usleep(50 * 1000);
	}
	return s.claim_waits;
}

/* Node 1 holds the claim t1 on id; node 2 misses id (a thread), finds
 * the claim and waits; delay_ms later node 1 writes data.  Node 2 must be
 * served exactly data. */
static void claimed_then_written(struct shared_tier *n1, struct shared_tier *n2,
				 const struct chunk_id *id, const struct shared_ticket *t1,
				 const char data[4096], unsigned delay_ms)
{
	struct waiter w = { .st = n2, .id = *id };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, waiter_run, &w), 0);
	cr_assert_eq(claim_waits_of(n2), 1, "node 2 found node 1's claim");
	usleep(delay_ms * 1000);   /* node 2's first poll is on its way, or soon */
	shared_tier_put(n1, id, data, 4096, t1, false);
	shared_tier_flush(n1);
	pthread_join(th, NULL);
	cr_assert_eq(w.rc, TFS_OK, "node 2 was served the claimed chunk");
	cr_assert_eq(memcmp(w.buf, data, 4096), 0);
}

/* Node 1 misses and claims; node 2 misses the same chunk, finds the
 * claim and waits; node 1 writes the chunk; node 2 is served it. */
Test(shared, one_node_claims_the_other_waits)
{
	struct shared_tier *n1 = tier_open(60000), *n2 = tier_open(60000);
	struct chunk_id id = { "k/with\n odd bytes \xff", "\"etag-1\"", 3 };
	struct shared_tier_stats s1, s2;
	struct shared_ticket t1;
	char data[4096], buf[4096];

	cr_assert(n1 && n2);
	it_gen(42, 0, data, sizeof(data));
	cr_assert_eq(shared_tier_get(n1, &id, sizeof(buf), buf, &t1), TFS_MISS);
	cr_assert(t1.claimed, "the first miss claims the chunk");
	claimed_then_written(n1, n2, &id, &t1, data, 0);
	shared_tier_stats(n1, &s1);
	shared_tier_stats(n2, &s2);
	cr_expect_eq(s1.claims, 1);
	cr_expect_eq(s1.writes, 1);
	cr_expect_eq(s2.claim_hits, 1);
	cr_expect_eq(s2.claims, 0);

	/* a second write of the same chunk is refused as present, not redone */
	struct shared_ticket none = { 0 };
	shared_tier_put(n2, &id, data, sizeof(data), &none, false);
	shared_tier_flush(n2);
	shared_tier_stats(n2, &s2);
	cr_expect_eq(s2.write_exists, 1, "create-only: the server kept the first copy");
	cr_expect_eq(s2.writes, 0);
	shared_tier_free(n1);
	shared_tier_free(n2);
}

/* Every request to the tier through the proxy takes SLOW_MS at least. */
#define SLOW_MS 2000

static void proxy_slow(unsigned ms)
{
	char q[64];

	it_fmt(q, sizeof(q), "shape?latency_ms=%u", ms);
	cr_assert_eq(it_proxy_ctl(&proxy, q, NULL, 0), 200);
}

/* A node misses a chunk, claims it, fetches it and queues its write;
 * while that write is in flight (every request takes SLOW_MS), the node
 * misses the chunk again: it is served from its own queue, with no request
 * (before, it asked the bucket, found its own claim and waited on it). */
Test(shared, a_chunk_being_written_is_served_from_the_queue)
{
	struct shared_tier *n = tier_at(proxy.url, 60000, 0, 0);
	struct chunk_id id = { "own/queue", "\"etag-q\"", 0 };
	struct shared_tier_stats s;
	struct shared_ticket t, t2;
	char data[4096], buf[4096];
	long long gets;
	double t_put, t_get;
	int rc;

	cr_assert_not_null(n);
	it_gen(7, 0, data, sizeof(data));
	proxy_slow(SLOW_MS);
	cr_assert_eq(shared_tier_get(n, &id, sizeof(buf), buf, &t), TFS_MISS);
	cr_assert(t.claimed);
	gets = it_proxy_stat(&proxy, "object_GET");
	t_put = it_now();
	shared_tier_put(n, &id, data, sizeof(data), &t, false);
	t_get = it_now();
	rc = shared_tier_get(n, &id, sizeof(buf), buf, &t2);
	cr_assert_eq(rc, TFS_OK, "the chunk this node is writing is a hit");
	cr_assert(t2.hit);
	cr_assert_eq(memcmp(buf, data, sizeof(data)), 0);
	/* the write's PUT cannot have been answered before SLOW_MS passed */
	if (t_get - t_put < SLOW_MS / 2000.0)
		cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), gets,
			     "served from the queue: no GET while the write was in flight");
	else
		cr_log_warn("the lookup started %.1f s after the put: not checked", t_get - t_put);
	shared_tier_flush(n);
	shared_tier_stats(n, &s);
	cr_expect_eq(s.writes, 1);
	cr_expect_eq(s.claim_waits, 0, "no wait on its own claim");
	shared_tier_free(n);
	proxy_slow(0);
}

/* A node whose own claims take a long time to be written (every request
 * it sends takes SLOW_MS) waits longer than --claim-wait for another
 * node's claim: node 2 learns a claim time of at least SLOW_MS, then waits
 * on node 1's claim, whose write lands after node 2's first poll; with the
 * fixed 1 s wait node 2 would give up after that poll and go to the
 * origin. */
Test(shared, the_claim_wait_follows_the_nodes_own_claim_times)
{
	struct shared_tier *n1 = tier_open(1000), *n2 = tier_at(proxy.url, 1000, 0, 0);
	struct chunk_id own = { "wait/own", "\"etag-o\"", 0 }, id = { "wait/other", "\"etag-w\"", 1 };
	struct shared_tier_stats s2;
	struct shared_ticket t, t1;
	char data[4096], buf[4096];

	cr_assert(n1 && n2);
	it_gen(8, 0, data, sizeof(data));
	proxy_slow(SLOW_MS);
	/* node 2 claims and writes a chunk of its own: claim to written >= SLOW_MS */
	cr_assert_eq(shared_tier_get(n2, &own, sizeof(buf), buf, &t), TFS_MISS);
	cr_assert(t.claimed);
	shared_tier_put(n2, &own, data, sizeof(data), &t, false);
	shared_tier_flush(n2);
	shared_tier_stats(n2, &s2);
	cr_assert_eq(s2.writes, 1);

	cr_assert_eq(shared_tier_get(n1, &id, sizeof(buf), buf, &t1), TFS_MISS);
	cr_assert(t1.claimed);
	it_gen(9, 0, data, sizeof(data));
	claimed_then_written(n1, n2, &id, &t1, data, SLOW_MS / 4);
	shared_tier_stats(n2, &s2);
	cr_expect_eq(s2.claim_hits, 1);
	shared_tier_free(n1);
	shared_tier_free(n2);
	proxy_slow(0);
}

/* The queue holds one chunk and may spill one more for a reader; while
 * the first write is in flight, a second reader's put takes the spill
 * room, a third is dropped at once, and a fetch ahead's put waits for
 * room and is written. */
Test(shared, a_fetch_ahead_waits_for_room_a_reader_spills_then_drops)
{
	struct shared_tier *n = tier_at(proxy.url, 0, 4096, 60000);
	struct chunk_id a = { "room/a", "\"e\"", 0 }, b = { "room/b", "\"e\"", 0 },
			c = { "room/c", "\"e\"", 0 }, d = { "room/d", "\"e\"", 0 };
	struct shared_ticket none = { 0 };
	struct shared_tier_stats s;
	char data[4096];
	double t0;

	cr_assert_not_null(n);
	it_gen(10, 0, data, sizeof(data));
	proxy_slow(SLOW_MS);
	t0 = it_now();
	shared_tier_put(n, &a, data, sizeof(data), &none, false);
	shared_tier_put(n, &b, data, sizeof(data), &none, false);
	shared_tier_put(n, &c, data, sizeof(data), &none, false);
	if (it_now() - t0 < SLOW_MS / 2000.0) {
		shared_tier_stats(n, &s);
		cr_expect_eq(s.write_dropped, 1, "past the spill room a reader's put is dropped");
	} else {
		cr_log_warn("the puts took %.1f s: the drop not checked", it_now() - t0);
	}
	shared_tier_put(n, &d, data, sizeof(data), &none, true);
	shared_tier_flush(n);
	shared_tier_stats(n, &s);
	cr_expect_geq(s.writes, 3, "the first, the spilled and the waiting one were written");
	cr_expect_eq(s.writes + s.write_dropped, 4);
	cr_expect_leq(s.write_dropped, 1, "the fetch ahead's put waited, not dropped");
	shared_tier_free(n);
	proxy_slow(0);
}

/* The client's metadata calls refuse what would make a bad header. */
Test(shared, metadata_header_checked)
{
	char buf[16], meta[128];
	size_t got;

	cr_expect_eq(s3_client_put_meta(shared.client, "k", "x", 1, "Bad Name", "v", false, NULL),
		     TFS_E_INVAL);
	cr_expect_eq(s3_client_put_meta(shared.client, "k", "x", 1, "sum", "a\r\nX-Evil: 1", false,
					NULL), TFS_E_INVAL);
	cr_expect_eq(s3_client_put_meta(shared.client, "k", "x", 1, "sum", "", false, NULL),
		     TFS_E_INVAL);
	cr_expect_eq(s3_client_get_meta(shared.client, "k", "no:colon", buf, sizeof(buf), &got,
					meta, sizeof(meta), NULL), TFS_E_INVAL);
	cr_assert_eq(s3_client_put_meta(shared.client, "k", "abc", 3, "sum", "1 3 x", true, NULL),
		     TFS_OK);
	cr_assert_eq(s3_client_get_meta(shared.client, "k", "sum", buf, sizeof(buf), &got, meta,
					sizeof(meta), NULL), TFS_OK);
	cr_expect_eq(got, 3);
	cr_expect_str_eq(meta, "1 3 x");
	cr_expect_eq(s3_client_get_meta(shared.client, "k", "sum", buf, 2, &got, meta,
					sizeof(meta), NULL), TFS_E_PROTO, "larger than the buffer");
	cr_expect_eq(s3_client_get_meta(shared.client, "absent", "sum", buf, sizeof(buf), &got,
					meta, sizeof(meta), NULL), TFS_E_NOENT);
}
