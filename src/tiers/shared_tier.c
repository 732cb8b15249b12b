/* shared_tier.c - chunks in a bucket shared by a cluster (see shared_tier.h).
 *
 * Layout in the bucket, under the configured prefix:
 *     c/<sha256 hex>      a chunk; x-amz-meta-tierfs-sum: "1 LEN XXH3-128"
 *     claim/<sha256 hex>  a claim: some node is fetching that chunk now
 * The hash is over length-prefixed parts, so no two (origin, key, cache
 * id, chunk size, index) tuples share a name whatever bytes a key holds,
 * and the checksum is seeded by the name, so a copy under another
 * chunk's name fails verification like a corrupt one.
 *
 * Consistency: a name is only ever written with the bytes of that one
 * origin version's chunk (the origin's GET was pinned by If-Match to the
 * same ETag or generation that names it), so every complete object under
 * a name holds the same bytes; S3 PUTs are atomic (a reader sees the old
 * object, the new one or none, never a mix), and what a failed or partial
 * write could leave is caught by the length and checksum.  Create-only
 * writes ("If-None-Match: *") keep concurrent nodes from writing a chunk
 * twice; a server that ignores the header overwrites it with the same
 * bytes, which is still correct.
 *
 * Claim wait: a node that finds another's claim waits for that node's
 * write as long as its own claims take to be written (claim_ms: claim to
 * written, a slower sample taken half at once, a faster one an eighth),
 * times CLAIM_WAIT_FACTOR, at least claim_wait_ms; it polls first after
 * half that time, then at a quarter of it, so that a waiter costs the
 * store a few requests, not one every POLL_MAX_MS.  A lookup first looks
 * at this node's own queued and in-flight writes: a chunk it fetched
 * (and claimed) is served from there while it is written, instead of
 * waiting on its own claim or going to the origin again.
 *
 * Breaker: BREAKER_FAILS consecutive failed requests open it for pause_ms;
 * each failure while it is half-open (the pause over, no success yet)
 * opens it again for twice as long, up to 32x; a success closes it.
 */
#include "tiers/shared_tier.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "s3/s3_client.h"
#include "s3/sigv4.h"

#define SUM_META "tierfs-sum"
#define CLAIM_META "tierfs-claim"
#define SUM_MAX 80
#define NAME_HEX 65
#define BREAKER_FAILS 3
#define POLL_FIRST_MS 10
#define POLL_MAX_MS 100
#define QUEUE_JOBS 256
#define CLAIM_TTL_S 30      /* a claim older than this is stale */
#define CLAIM_WAIT_FACTOR 4 /* a waiter waits this many claim times */
#define WRITERS_MAX 8

struct write_job {
	char hex[NAME_HEX];
	void *data;                   /* a copy, owned by the job */
	size_t len;
	int64_t claimed_ms;           /* the ticket's: when this node claimed it */
	bool rewrite, claimed;
};

struct shared_tier {
	struct objstore *store;
	struct s3_client *client;
	char *prefix, *origin;
	size_t chunk_size;
	unsigned claim_wait_ms, pause_base_ms, put_wait_ms;
	atomic_uint claim_ms;            /* claim to written, this node's; 0 = none yet */

	/* the breaker */
	atomic_uint fails;
	atomic_uint pause_ms;
	_Atomic int64_t open_until_ms;   /* clock_coarse_ms(); 0 = closed */

	/* the write queue: a ring of QUEUE_JOBS jobs holding queue_bytes at
	 * most (reserved ones and those in flight included), written by
	 * n_writers threads */
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a job queued, or stop */
	pthread_cond_t idle;          /* the queue ran empty */
	pthread_cond_t room;          /* a job done: room for a waiting put (monotonic) */
	struct write_job ring[QUEUE_JOBS];
	const struct write_job *active[WRITERS_MAX]; /* jobs being written now */
	unsigned head, count, busy, reserved;
	uint64_t queued_bytes, queue_bytes, spill_bytes;
	bool stop;
	pthread_t writers[WRITERS_MAX];
	unsigned n_writers;

	atomic_uint_fast64_t hits, misses, bytes, corrupt, errors, skipped, claims,
		claim_waits, claim_hits, writes, write_bytes, write_exists,
		write_failures, write_dropped;
};

static void count(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- names and checksums ---- */

static bool put_part(char **p, const char *end, const void *s, size_t n)
{
	int k = snprintf(*p, (size_t)(end - *p), "%zu:", n);

	if (k < 0 || (size_t)k + n >= (size_t)(end - *p))
		return false;
	memcpy(*p + k, s, n);
	*p += (size_t)k + n;
	return true;
}

/* hex: SHA-256 of the chunk's identity.  false when out of memory. */
static bool chunk_name(const struct shared_tier *st, const struct chunk_id *id,
		       char hex[NAME_HEX])
{
	char nums[48], *buf, *p;
	size_t cap = strlen(st->origin) + strlen(id->key) + strlen(id->etag) + 160;
	bool ok;

	buf = malloc(cap);
	if (!buf)
		return false;
	p = buf;
	snprintf(nums, sizeof(nums), "%zu %llu", st->chunk_size, (unsigned long long)id->index);
	ok = put_part(&p, buf + cap, "tierfs-shared-1", 15) &&
	     put_part(&p, buf + cap, st->origin, strlen(st->origin)) &&
	     put_part(&p, buf + cap, id->key, strlen(id->key)) &&
	     put_part(&p, buf + cap, id->etag, strlen(id->etag)) &&
	     put_part(&p, buf + cap, nums, strlen(nums));
	if (ok)
		sigv4_sha256_hex(buf, (size_t)(p - buf), hex);
	free(buf);
	return ok;
}

/* "1 LEN HASH": the format, the length, XXH3-128 of the bytes seeded by
 * the name's first 64 bits. */
static void chunk_sum(const char *hex, const void *data, size_t len, char out[SUM_MAX])
{
	char h16[17];
	XXH128_hash_t h;

	memcpy(h16, hex, 16);
	h16[16] = '\0';
	h = XXH3_128bits_withSeed(data, len, (XXH64_hash_t)strtoull(h16, NULL, 16));
	snprintf(out, SUM_MAX, "1 %zu %016llx%016llx", len, (unsigned long long)h.high64,
		 (unsigned long long)h.low64);
}

/* key = prefix + kind + hex, into out (caller frees). */
static char *object_key(const struct shared_tier *st, const char *kind, const char *hex)
{
	char *k = NULL;

	if (asprintf(&k, "%s%s/%s", st->prefix, kind, hex) < 0)
		return NULL;
	return k;
}

/* ---- the breaker ---- */

static bool breaker_open(struct shared_tier *st)
{
	int64_t until = atomic_load_explicit(&st->open_until_ms, memory_order_relaxed);

	return until && clock_coarse_ms() < until;
}

static void breaker_ok(struct shared_tier *st)
{
	if (atomic_load_explicit(&st->fails, memory_order_relaxed) == 0)
		return;
	if (atomic_exchange(&st->fails, 0) >= BREAKER_FAILS)
		log_notice("shared cache: answering again, back in the read chain");
	atomic_store(&st->pause_ms, st->pause_base_ms);
	atomic_store(&st->open_until_ms, 0);
}

static void breaker_fail(struct shared_tier *st, const char *what, int rc,
			 const struct tfs_errinfo *ei)
{
	unsigned n = atomic_fetch_add(&st->fails, 1) + 1, pause;

	count(&st->errors, 1);
	if (n < BREAKER_FAILS)
		return;
	pause = atomic_load(&st->pause_ms);
	atomic_store(&st->open_until_ms, clock_coarse_ms() + pause);
	if (pause < st->pause_base_ms * 32)
		atomic_store(&st->pause_ms, pause * 2);
	log_warn("shared cache: %s: %s (%s): skipped for %u ms, reads go to the origin", what,
		 tfs_strerror(rc), ei->message[0] ? ei->message : "no detail", pause);
}

/* The server answered and refused (a full quota, a key that may only
 * read): the tier works, this write will not.  429 is a slow-down. */
static bool refused(const struct tfs_errinfo *ei)
{
	return ei->http_status >= 400 && ei->http_status < 500 && ei->http_status != 429;
}

/* ---- lookups ---- */

enum found { FOUND_OK, FOUND_ABSENT, FOUND_BAD, FOUND_ERROR };

/* One GET of the chunk's object, verified. */
static enum found fetch_verify(struct shared_tier *st, const char *hex, size_t want, void *buf)
{
	char meta[SUM_MAX], sum[SUM_MAX], *key = object_key(st, "c", hex);
	struct tfs_errinfo ei;
	size_t got = 0;
	int rc;

	if (!key)
		return FOUND_ERROR;
	rc = s3_client_get_meta(st->client, key, SUM_META, buf, want, &got, meta, sizeof(meta),
				&ei);
	free(key);
	if (rc == TFS_E_NOENT) {
		breaker_ok(st);
		return FOUND_ABSENT;
	}
	if (rc == TFS_E_PROTO && ei.http_status == 200) {
		breaker_ok(st);    /* longer than the chunk: answered, but wrong */
		return FOUND_BAD;
	}
	if (rc != TFS_OK) {
		breaker_fail(st, "GET", rc, &ei);
		return FOUND_ERROR;
	}
	breaker_ok(st);
	if (got != want)
		return FOUND_BAD;
	chunk_sum(hex, buf, want, sum);
	return strcmp(sum, meta) == 0 ? FOUND_OK : FOUND_BAD;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* This node's claims took ms from claim to written chunk: fold it into
 * claim_ms (a slower sample half at once, a faster one an eighth, so a
 * waiter rather waits too long than gives up on a write about to land).
 * Two writers racing lose a sample, nothing more. */
static void claim_time_note(struct shared_tier *st, int64_t ms)
{
	unsigned old = atomic_load_explicit(&st->claim_ms, memory_order_relaxed);
	unsigned s = ms < 1 ? 1 : ms > CLAIM_TTL_S * 1000 ? CLAIM_TTL_S * 1000 : (unsigned)ms;

	if (!old)
		old = s;
	atomic_store_explicit(&st->claim_ms, s > old ? old + (s - old) / 2 : old - (old - s) / 8,
			      memory_order_relaxed);
}

/* Another node claimed hex: poll its object until it appears or the
 * claim wait is over (see the top of this file). */
static enum found wait_claimed(struct shared_tier *st, const char *hex, size_t want, void *buf)
{
	unsigned est = atomic_load_explicit(&st->claim_ms, memory_order_relaxed);
	uint64_t wait = (uint64_t)est * CLAIM_WAIT_FACTOR;
	unsigned step = est / 2 > POLL_FIRST_MS ? est / 2 : POLL_FIRST_MS;
	unsigned step_max = est / 4 > POLL_MAX_MS ? est / 4 : POLL_MAX_MS;
	int64_t deadline;
	enum found f = FOUND_ABSENT;

	if (wait > CLAIM_TTL_S * 1000)
		wait = CLAIM_TTL_S * 1000;
	if (wait < st->claim_wait_ms)
		wait = st->claim_wait_ms;
	deadline = clock_coarse_ms() + (int64_t)wait;
	count(&st->claim_waits, 1);
	while (f == FOUND_ABSENT && clock_coarse_ms() + step < deadline) {
		sleep_ms(step);
		step = step * 3 / 2 > step_max ? step_max : step * 3 / 2;
		f = fetch_verify(st, hex, want, buf);
	}
	if (f == FOUND_OK)
		count(&st->claim_hits, 1);
	return f;
}

/* A claim on hex exists: is it older than a claimer could still be busy
 * with (its node died between claim and write)?  Then take it over (a plain
 * PUT: it restarts the claim's age) and set t->claimed.  The age is the
 * server's Last-Modified against this node's clock: nodes whose clocks
 * are seconds apart wait for nothing, or fetch once more, never worse. */
static bool claim_stale(struct shared_tier *st, const char *hex, struct shared_ticket *t)
{
	char *key = object_key(st, "claim", hex);
	struct obj_meta m;
	struct tfs_errinfo ei;
	int64_t ttl_s = CLAIM_TTL_S + st->claim_wait_ms / 1000;
	bool stale = false;

	if (!key)
		return false;
	if (objstore_head(st->store, key, &m, &ei) == TFS_OK && m.mtime > 0 &&
	    (int64_t)time(NULL) - m.mtime > ttl_s) {
		stale = s3_client_put_meta(st->client, key, "1", 1, CLAIM_META, "1", false, &ei) ==
			TFS_OK;
		t->claimed = stale;
		t->claimed_ms = stale ? clock_coarse_ms() : 0;
	}
	free(key);
	return stale;
}

/* Is hex this node's own write, queued or in flight?  Then its bytes into
 * buf (they came from the origin for this very name).  Lock held: the
 * copy keeps the job from being freed under it. */
static bool queue_copy(struct shared_tier *st, const char *hex, size_t want, void *buf)
{
	const struct write_job *j = NULL;

	for (unsigned i = 0; i < st->count && !j; i++) {
		j = &st->ring[(st->head + i) % QUEUE_JOBS];
		if (j->len != want || memcmp(j->hex, hex, NAME_HEX) != 0)
			j = NULL;
	}
	for (unsigned i = 0; i < WRITERS_MAX && !j; i++) {
		j = st->active[i];
		if (j && (j->len != want || memcmp(j->hex, hex, NAME_HEX) != 0))
			j = NULL;
	}
	if (j)
		memcpy(buf, j->data, want);
	return j != NULL;
}

int shared_tier_get(struct shared_tier *st, const struct chunk_id *id, size_t want, void *buf,
		    struct shared_ticket *t)
{
	char hex[NAME_HEX], *key;
	struct tfs_errinfo ei;
	enum found f;
	int rc;

	*t = (struct shared_ticket){ 0 };
	if (want == 0 || want > st->chunk_size)
		return TFS_MISS;
	if (!chunk_name(st, id, hex))
		goto miss;
	pthread_mutex_lock(&st->lock);
	f = queue_copy(st, hex, want, buf) ? FOUND_OK : FOUND_ABSENT;
	pthread_mutex_unlock(&st->lock);
	if (f == FOUND_OK)
		goto hit;
	if (breaker_open(st)) {
		count(&st->skipped, 1);
		goto miss;
	}
	f = fetch_verify(st, hex, want, buf);
	if (f == FOUND_ABSENT) {
		/* claim it: one node of those missing it now fetches it */
		key = object_key(st, "claim", hex);
		rc = key ? s3_client_put_meta(st->client, key, "1", 1, CLAIM_META, "1", true, &ei)
			 : TFS_E_NOMEM;
		free(key);
		if (rc == TFS_OK) {
			breaker_ok(st);
			count(&st->claims, 1);
			t->claimed = true;
			t->claimed_ms = clock_coarse_ms();
		} else if (rc == TFS_E_STALE) {
			breaker_ok(st);
			if (claim_stale(st, hex, t))
				count(&st->claims, 1);
			else
				f = wait_claimed(st, hex, want, buf);
		} else if (rc != TFS_E_NOMEM && !refused(&ei)) {
			breaker_fail(st, "claim PUT", rc, &ei);
		}
	}
	if (f == FOUND_OK) {
hit:
		t->hit = true;
		count(&st->hits, 1);
		count(&st->bytes, want);
		return TFS_OK;
	}
	if (f == FOUND_BAD) {
		count(&st->corrupt, 1);
		log_warn("shared cache: chunk %llu of '%s' failed verification: fetched again "
			 "and rewritten", (unsigned long long)id->index, id->key);
		t->rewrite = true;
	}
miss:
	count(&st->misses, 1);
	return TFS_MISS;
}

/* ---- writes ---- */

static void write_one(struct shared_tier *st, const struct write_job *j)
{
	char sum[SUM_MAX], *key = NULL;
	struct tfs_errinfo ei;
	int rc;

	if (breaker_open(st)) {
		count(&st->write_dropped, 1);
		return;
	}
	chunk_sum(j->hex, j->data, j->len, sum);
	key = object_key(st, "c", j->hex);
	if (!key) {
		count(&st->write_failures, 1);
		return;
	}
	/* create-only, unless it replaces a bad copy */
	rc = s3_client_put_meta(st->client, key, j->data, j->len, SUM_META, sum, !j->rewrite, &ei);
	free(key);
	if (rc != TFS_OK && rc != TFS_E_STALE) {
		count(&st->write_failures, 1);
		/* a refusal leaves reads alone */
		if (refused(&ei))
			log_debug("shared cache: PUT refused: HTTP %d %s", ei.http_status, ei.code);
		else
			breaker_fail(st, "PUT", rc, &ei);
		return;
	}
	breaker_ok(st);
	if (j->claimed) {
		/* the chunk is there: the claim has done its work */
		if (j->claimed_ms)
			claim_time_note(st, clock_coarse_ms() - j->claimed_ms);
		key = object_key(st, "claim", j->hex);
		if (key && s3_client_delete(st->client, key, &ei) != TFS_OK)
			log_debug("shared cache: claim %s not deleted: %s", j->hex, ei.message);
		free(key);
	}
	if (rc == TFS_E_STALE) {
		count(&st->write_exists, 1);
	} else {
		count(&st->write_bytes, j->len);
		count(&st->writes, 1);
	}
}

static void *writer_run(void *arg)
{
	struct shared_tier *st = arg;

	pthread_mutex_lock(&st->lock);
	for (;;) {
		struct write_job j;
		unsigned slot = 0;

		/* stopping: a put that reserved a place still queues its job */
		while (st->count == 0 && !(st->stop && st->reserved == 0))
			pthread_cond_wait(&st->cond, &st->lock);
		if (st->count == 0)
			break;
		j = st->ring[st->head];
		st->head = (st->head + 1) % QUEUE_JOBS;
		st->count--;
		st->busy++;
		while (st->active[slot])   /* busy <= n_writers: one is free */
			slot++;
		st->active[slot] = &j;
		pthread_mutex_unlock(&st->lock);
		write_one(st, &j);
		pthread_mutex_lock(&st->lock);
		st->active[slot] = NULL;
		free(j.data);
		st->busy--;
		st->queued_bytes -= j.len;
		pthread_cond_broadcast(&st->room);
		if (st->count == 0 && st->busy == 0 && st->reserved == 0)
			pthread_cond_broadcast(&st->idle);
	}
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

/* Reserve a place and len bytes in the queue; when it is full and wait,
 * wait for room for put_wait_ms at most.  Lock held. */
static bool queue_reserve(struct shared_tier *st, size_t len, bool wait)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += st->put_wait_ms / 1000;
	until.tv_nsec += (long)(st->put_wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	/* a fetch ahead waits below queue_bytes; a reader's copy, which may
	 * not wait, may also take the spill room beyond it */
	uint64_t bound = st->queue_bytes + (wait ? 0 : st->spill_bytes);

	while (st->count + st->reserved >= QUEUE_JOBS || st->queued_bytes + len > bound) {
		if (!wait || st->stop || breaker_open(st) ||
		    pthread_cond_timedwait(&st->room, &st->lock, &until) == ETIMEDOUT)
			return false;
	}
	if (st->stop)
		return false;
	st->reserved++;
	st->queued_bytes += len;
	return true;
}

void shared_tier_put(struct shared_tier *st, const struct chunk_id *id, const void *data,
		     size_t len, const struct shared_ticket *t, bool wait)
{
	struct write_job j = { .len = len, .rewrite = t->rewrite, .claimed = t->claimed,
			       .claimed_ms = t->claimed_ms };
	bool room;

	if (len == 0 || len > st->chunk_size || breaker_open(st) || !chunk_name(st, id, j.hex))
		goto drop;
	pthread_mutex_lock(&st->lock);
	room = queue_reserve(st, len, wait);
	pthread_mutex_unlock(&st->lock);
	if (!room)
		goto drop;
	/* copied outside the lock, so the reader's chunk is not held */
	j.data = malloc(len);
	if (j.data)
		memcpy(j.data, data, len);
	pthread_mutex_lock(&st->lock);
	st->reserved--;
	if (j.data) {
		st->ring[(st->head + st->count) % QUEUE_JOBS] = j;
		st->count++;
		pthread_cond_signal(&st->cond);
	} else {
		st->queued_bytes -= len;
		pthread_cond_broadcast(&st->cond);   /* writers stopping wait for this */
		pthread_cond_broadcast(&st->room);
		if (st->count == 0 && st->busy == 0 && st->reserved == 0)
			pthread_cond_broadcast(&st->idle);
	}
	pthread_mutex_unlock(&st->lock);
	if (j.data)
		return;
drop:
	count(&st->write_dropped, 1);
	if (t->claimed && !breaker_open(st)) {
		/* others would wait for a write that will not come: let go of
		 * the claim (one small request, only when writes back up) */
		struct tfs_errinfo ei;
		char *key = j.hex[0] ? object_key(st, "claim", j.hex) : NULL;

		if (key)
			(void)s3_client_delete(st->client, key, &ei);
		free(key);
	}
}

void shared_tier_flush(struct shared_tier *st)
{
	pthread_mutex_lock(&st->lock);
	while (st->count > 0 || st->busy > 0 || st->reserved > 0)
		pthread_cond_wait(&st->idle, &st->lock);
	pthread_mutex_unlock(&st->lock);
}

/* ---- life ---- */

struct shared_tier *shared_tier_new(const struct shared_tier_config *cfg)
{
	struct shared_tier *st = NULL;
	struct s3_client *client = s3_client_of(cfg->store);
	size_t pl = cfg->prefix ? strlen(cfg->prefix) : 0;

	if (!client || cfg->chunk_size == 0 || !cfg->origin || (pl && cfg->prefix[pl - 1] != '/'))
		goto fail;
	st = calloc(1, sizeof(*st));
	if (!st)
		goto fail;
	st->store = cfg->store;
	st->client = client;
	st->prefix = strdup(pl ? cfg->prefix : "");
	st->origin = strdup(cfg->origin);
	st->chunk_size = cfg->chunk_size;
	st->queue_bytes = cfg->queue_bytes ? cfg->queue_bytes : 64u << 20;
	if (st->queue_bytes < cfg->chunk_size)
		st->queue_bytes = cfg->chunk_size;
	st->spill_bytes = cfg->spill_bytes ? cfg->spill_bytes
			  : 4 * cfg->chunk_size > (64u << 20) ? 4 * cfg->chunk_size : 64u << 20;
	st->claim_wait_ms = cfg->claim_wait_ms ? cfg->claim_wait_ms : 2000;
	st->put_wait_ms = cfg->put_wait_ms ? cfg->put_wait_ms : 1000;
	st->pause_base_ms = cfg->pause_ms ? cfg->pause_ms : 1000;
	atomic_init(&st->pause_ms, st->pause_base_ms);
	if (!st->prefix || !st->origin)
		goto fail_fields;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	pthread_cond_init(&st->idle, NULL);
	{
		/* a put's wait for room (queue_reserve) is monotonic */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&st->room, &ca);
		pthread_condattr_destroy(&ca);
	}
	for (unsigned i = 0; i < (cfg->writers ? cfg->writers : 4) && i < WRITERS_MAX; i++) {
		if (pthread_create(&st->writers[i], NULL, writer_run, st) != 0)
			break;          /* fewer writers: slower, not wrong */
		st->n_writers++;
	}
	if (st->n_writers == 0) {
		pthread_cond_destroy(&st->room);
		pthread_cond_destroy(&st->idle);
		pthread_cond_destroy(&st->cond);
		pthread_mutex_destroy(&st->lock);
		goto fail_fields;
	}
	return st;
fail_fields:
	free(st->prefix);
	free(st->origin);
	free(st);
fail:
	objstore_free(cfg->store);
	return NULL;
}

void shared_tier_free(struct shared_tier *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->stop = true;
	pthread_cond_broadcast(&st->cond);
	pthread_cond_broadcast(&st->room);
	pthread_mutex_unlock(&st->lock);
	for (unsigned i = 0; i < st->n_writers; i++)
		pthread_join(st->writers[i], NULL);   /* they drain the queue first */
	pthread_cond_destroy(&st->room);
	pthread_cond_destroy(&st->idle);
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	objstore_free(st->store);
	free(st->prefix);
	free(st->origin);
	free(st);
}

void shared_tier_stats(struct shared_tier *st, struct shared_tier_stats *out)
{
	struct objstore_stats *os = malloc(sizeof(*os));   /* ~3 KB: off the stack */

	out->hits = atomic_load(&st->hits);
	out->misses = atomic_load(&st->misses);
	out->bytes = atomic_load(&st->bytes);
	out->corrupt = atomic_load(&st->corrupt);
	out->errors = atomic_load(&st->errors);
	out->skipped = atomic_load(&st->skipped);
	out->claims = atomic_load(&st->claims);
	out->claim_waits = atomic_load(&st->claim_waits);
	out->claim_hits = atomic_load(&st->claim_hits);
	out->writes = atomic_load(&st->writes);
	out->write_bytes = atomic_load(&st->write_bytes);
	out->write_exists = atomic_load(&st->write_exists);
	out->write_failures = atomic_load(&st->write_failures);
	out->write_dropped = atomic_load(&st->write_dropped);
	out->open = breaker_open(st);
	pthread_mutex_lock(&st->lock);
	out->write_queue = st->count + st->busy;
	pthread_mutex_unlock(&st->lock);
	out->req_p50_us = out->req_p99_us = 0;
	if (os) {
		objstore_stats(st->store, os);
		out->req_p50_us = latency_hist_quantile(&os->latency, 0.5) / 1000;
		out->req_p99_us = latency_hist_quantile(&os->latency, 0.99) / 1000;
		free(os);
	}
}
