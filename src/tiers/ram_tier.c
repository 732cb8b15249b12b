/* ram_tier.c - bounded, refcounted, single-flight RAM chunk cache.
 *
 * Locks, and what each guards:
 *  - stripe[b % RAM_STRIPES]: hash bucket b (its chain and the membership
 *    of slots in it).  A hit holds one stripe for a probe and a refcount
 *    increment: readers of different chunks rarely meet, and there is no
 *    tier-wide lock on the hit path.
 *  - evict_lock: the free stack, the eviction policy and the fallback
 *    hand (misses, and a hit that finds its stripe's access buffer full,
 *    which only try-locks it).  Order: evict_lock, then a stripe; never a
 *    stripe then evict_lock, except by trylock.
 *  - wait_lock + wait_cond: FILLING -> READY/FREE transitions, so a waiter
 *    cannot miss its wake-up (misses only); a fill ahead withdrawn while
 *    its filler holds the only reference has no waiter, and goes FREE
 *    under its stripe lock alone (ram_tier_fill_withdraw).
 *
 * Single-flight without a callback: the first miss on a chunk hashes a
 * FILLING slot and returns it to its caller (TFS_MISS), who fills the
 * buffer from below and publishes it with ram_tier_fill_done(); a later
 * miss on the same chunk finds the FILLING slot and waits for that.
 *
 * Invariants:
 *  - a slot is FREE (not in the hash), FILLING (in the hash, one filler,
 *    waiters hold references) or READY (in the hash, data valid);
 *  - refs are taken only under the slot's stripe lock (or on a slot the
 *    caller already references), so an evictor holding the stripe that
 *    sees refs == 0 knows nobody can take one before it unhashes the slot;
 *  - a FREE slot with refs == 0 is on the free stack, except one just taken
 *    by a miss; a failed fill's slot is FREE with references (its waiters)
 *    and carries REF_ORPHAN in its refcount word: whoever drops the last
 *    reference pushes it.  The mark lives in the same atomic as the count
 *    so that a put racing with the slot's reuse cannot see a stale mark
 *    from a later failed fill and push a referenced slot;
 *  - an overflow chunk (all slots pinned) lives outside the slot array and
 *    the hash, and is freed at its last put.  A miss overflows only when
 *    no slot is `reserving` (taken by a miss that has not hashed it yet):
 *    32 readers of one cold chunk on a 4-slot tier must not fetch it 28
 *    times just because each held a slot for a moment.
 *
 * Eviction: a policy from src/evict (the `ram-policy` option; W-TinyLFU by
 * default) tracks the READY slots by chunk hash and picks victims, with
 * referenced and filling slots pinned.  The policy is not thread-safe and
 * a hit must not take a tier-wide lock, so a hit records its access in
 * its stripe's small buffer (it holds that stripe's lock anyway), and the
 * buffers are replayed into the policy under evict_lock by the next miss,
 * or by a hit that finds its buffer full and wins a trylock (Caffeine's
 * read buffers).  An access is a visit, not a read: a hit is recorded
 * only when the slot's `used` bit was clear, and replaying clears it, so
 * the eight 1 MiB reads of one 8 MiB chunk count once, and a sequential
 * epoch gives every chunk the same count however it is sliced.  The
 * policy's window is kept at least EVICT_RAM_STREAMS chunks wide: a chunk a
 * stream is still reading stays in it.  If the policy yields no victim
 * (everything it examined pinned, or it lost track of a slot whose hash
 * collided with another's), a sweep takes any READY unreferenced slot;
 * when there is none the miss overflows.
 *
 * Read through this epoch: a job that reads every file of a dataset once
 * an epoch (a loader's plan, or a scan found by the file system) has no
 * use for a file it read until the next epoch, when every file is
 * needed again.  Belady's rule then evicts those first, and the latest
 * of them first: the chunks the caller marks (ram_tier_read_done) go on
 * a list, newest on top, that victims are taken from before the policy
 * is asked.  So a dataset larger than RAM keeps a stable part of itself
 * resident, C/N of it hit every epoch, instead of each miss displacing a
 * chunk the epoch has yet to read.  A mark belongs to the epoch it was
 * made in (ram_tier_new_epoch makes the older ones void, as every file is
 * needed again), and to the chunk: an eviction voids it (done_lock,
 * after evict_lock and before a stripe lock).
 */
#include "tiers/ram_tier.h"

#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/tfs_err.h"
#include "evict/evict.h"
#include "evict/shape.h"

#define RAM_STRIPES 64
#define REF_ORPHAN (1u << 31)     /* failed fill: the last put frees the slot */
#define RING_LEN 32               /* accesses a stripe buffers between replays */
#define VICTIM_TRIES 8            /* policy victims tried per miss */

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY };

struct chunk_ref {
	struct ram_tier *tier;
	atomic_int state;
	atomic_uint refs;         /* count | REF_ORPHAN */
	atomic_bool used;         /* a hit since the last replay of accesses */
	atomic_bool ahead;        /* read ahead, not yet read (set, cleared under the stripe lock) */
	atomic_bool ahead_counted;   /* ahead, and its cap in the tier's ahead_unread (RAM_AHEAD) */
	atomic_bool pinned;       /* an operator pinned it: never evicted (under the stripe lock) */
	atomic_bool unsaved;      /* the tier below could not take it yet (ram_tier_mark_unsaved) */
	uint64_t ahead_seq;       /* the tier's ahead_pos when it was issued, its size included */
	bool overflow;
	bool on_done;             /* on the done list (under done_lock) */
	atomic_uint_fast64_t done_gen;   /* the epoch it was read through in; 0 = none */
	struct chunk_ref *dprev, *dnext; /* the done list, under done_lock */
	int fill_rc;              /* result seen by waiters of a failed fill */
	uint64_t hash;
	char *key;
	char *etag;
	uint64_t index;
	size_t len;
	void *buf;                /* cap bytes, sized for the chunk it was filled for */
	size_t cap;
	struct chunk_ref *hnext;  /* bucket chain, under the stripe lock */
	struct chunk_ref *fnext;  /* free stack, under evict_lock */
};

/* A hit's access, to be replayed into the policy: the slot, whose used
 * bit the replay clears, and the chunk's hash, which the policy sees. */
struct access_rec {
	struct chunk_ref *slot;
	uint64_t hash;
};

struct stripe {
	pthread_mutex_t lock;
	unsigned ring_n;                    /* under lock */
	struct access_rec ring[RING_LEN];
} __attribute__((aligned(64)));   /* its own cache lines: no false sharing */

struct ram_tier {
	size_t chunk_size;
	uint64_t capacity;         /* bytes of chunk buffers, the bound */
	size_t n_slots;
	struct chunk_ref *slots;
	struct chunk_ref **buckets;
	size_t n_buckets;          /* power of two */
	struct stripe stripes[RAM_STRIPES];
	pthread_mutex_t evict_lock;
	struct chunk_ref *free_top;
	size_t hand;
	struct evict_policy *policy;   /* under evict_lock */
	atomic_uint reserving;     /* slots taken by misses, not yet hashed or given back */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	atomic_uint_fast64_t hits, misses, waits, evictions, overflow, fills_failed;
	atomic_uint_fast64_t reader_max;   /* the largest buffer a reader's miss took */
	atomic_uint_fast64_t insertions, bytes_fetched, entries, bytes_used;
	atomic_uint_fast64_t mem;         /* bytes of the buffers slots hold */
	atomic_uint_fast64_t ahead_seq;   /* read-ahead fills started, ever */
	atomic_uint_fast64_t ahead_pos;   /* their bytes, ever */
	atomic_uint_fast64_t ahead_withdrawn;   /* of them, given up before the fetch */
	atomic_uint_fast64_t ahead_unread;      /* buffer bytes of RAM_AHEAD fills not read yet */
	atomic_uint_fast64_t ahead_all;         /* the same, of every fill ahead (RAM_AHEAD_EPOCH too) */
	atomic_uint_fast64_t ahead_limit; /* of the latest read-ahead bytes, how many are protected */
	atomic_uint_fast64_t ahead_used, ahead_wasted, ahead_late, ahead_dropped;
	struct pin_set *pins;           /* the operator's pins (borrowed); NULL = none */
	void (*room_made)(void *arg);   /* a handed-down copy made room (NULL = nobody asks) */
	void *room_arg;
	ram_tier_unsaved_fn *unsaved_fn;   /* takes an evicted unsaved chunk's buffer (NULL = none) */
	void *unsaved_arg;
	pthread_mutex_t done_lock;
	struct chunk_ref *done_top;     /* read through this epoch, newest first */
	atomic_uint_fast64_t epoch;     /* >= 1 */
	atomic_uint_fast64_t done_evictions;
};

/* A chunk buffer.  Chunks of 2 MiB and more are 2 MiB-aligned and asked
 * to be backed by transparent huge pages: the first write into a fresh
 * buffer then costs one fault per 2 MiB instead of 512.  Measured on this
 * project's VMs, first touch of 256 MiB: 820 ms with 4 KiB pages, 30-300
 * ms advised; that was the largest cost of a cold 8 MiB chunk.  Smaller
 * buffers (an image of 100 KB) are populated in one call instead of a
 * fault per page: 250 MiB of 128 KiB buffers, first touch, 0.89 s -> 0.37
 * s; their memory is the RAM tier filling itself, so most of it is new. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23     /* Linux 5.14; older kernels say EINVAL */
#endif
static void *chunk_buf_alloc(size_t size)
{
	const size_t huge = 2u * 1024 * 1024;
	void *p = NULL;

	/* page-aligned at least: the SSD tier reads into it with O_DIRECT */
	if (posix_memalign(&p, size < huge ? 4096 : huge, size) != 0)
		return NULL;
	/* advice only: fine if refused */
	(void)madvise(p, size, size >= huge ? MADV_HUGEPAGE : MADV_POPULATE_WRITE);
	return p;
}

/* The buffer a chunk of expect_len bytes is filled in: expect_len rounded
 * up to EVICT_RAM_BUF_ALIGN, or a whole chunk when the length is not known (0). */
static size_t buf_size(const struct ram_tier *t, size_t expect_len)
{
	return (size_t)evict_ram_buf(expect_len, t->chunk_size);
}

/* Drop slot s's buffer (a FREE slot nobody references). */
static void slot_buf_drop(struct ram_tier *t, struct chunk_ref *s)
{
	if (s->buf) {
		free(s->buf);
		atomic_fetch_sub(&t->mem, s->cap);
	}
	s->buf = NULL;
	s->cap = 0;
}

/* FNV-1a over key, etag and index. */
static uint64_t chunk_hash(const struct chunk_id *id)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)id->key; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const unsigned char *p = (const unsigned char *)id->etag; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	for (int i = 0; i < 8; i++)
		h = (h ^ ((id->index >> (8 * i)) & 0xff)) * 1099511628211ull;
	return h;
}

static bool slot_matches(const struct chunk_ref *s, uint64_t h, const struct chunk_id *id)
{
	return s->hash == h && s->index == id->index && strcmp(s->key, id->key) == 0 &&
	       strcmp(s->etag, id->etag) == 0;
}

/* The stripe of hash h's bucket. */
static struct stripe *stripe_at(struct ram_tier *t, uint64_t h)
{
	return &t->stripes[(h & (t->n_buckets - 1)) % RAM_STRIPES];
}

static pthread_mutex_t *stripe_of(struct ram_tier *t, uint64_t h)
{
	return &stripe_at(t, h)->lock;
}

struct ram_tier *ram_tier_new(uint64_t capacity_bytes, size_t chunk_size, enum evict_kind policy)
{
	struct ram_tier *t;
	size_t n;

	if (chunk_size == 0 || capacity_bytes < chunk_size)
		return NULL;
	t = aligned_alloc(64, (sizeof(*t) + 63) & ~(size_t)63);
	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	n = evict_ram_slots(capacity_bytes, chunk_size);
	t->chunk_size = chunk_size;
	t->capacity = capacity_bytes;
	t->n_slots = n;
	t->n_buckets = 16;
	while (t->n_buckets < 2 * n)
		t->n_buckets <<= 1;
	t->slots = calloc(n, sizeof(*t->slots));
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	t->policy = evict_policy_new(policy, n);
	if (t->policy)
		evict_policy_set_min_window(t->policy, EVICT_RAM_STREAMS);
	if (!t->slots || !t->buckets || !t->policy) {
		evict_policy_free(t->policy);
		free(t->slots);
		free(t->buckets);
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < RAM_STRIPES; i++)
		pthread_mutex_init(&t->stripes[i].lock, NULL);
	pthread_mutex_init(&t->evict_lock, NULL);
	pthread_mutex_init(&t->wait_lock, NULL);
	pthread_mutex_init(&t->done_lock, NULL);
	atomic_init(&t->epoch, 1);
	pthread_cond_init(&t->wait_cond, NULL);
	for (size_t i = n; i-- > 0;) {
		t->slots[i].tier = t;
		t->slots[i].fnext = t->free_top;
		t->free_top = &t->slots[i];
	}
	return t;
}

void ram_tier_free(struct ram_tier *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_slots; i++) {
		assert(atomic_load(&t->slots[i].refs) == 0);
		slot_buf_drop(t, &t->slots[i]);
		free(t->slots[i].key);
		free(t->slots[i].etag);
	}
	for (size_t i = 0; i < RAM_STRIPES; i++)
		pthread_mutex_destroy(&t->stripes[i].lock);
	pthread_mutex_destroy(&t->evict_lock);
	pthread_mutex_destroy(&t->wait_lock);
	pthread_mutex_destroy(&t->done_lock);
	pthread_cond_destroy(&t->wait_cond);
	evict_policy_free(t->policy);
	free(t->slots);
	free(t->buckets);
	free(t);
}

/* Bucket operations: the caller holds the bucket's stripe lock. */
static void hash_remove(struct ram_tier *t, struct chunk_ref *s)
{
	struct chunk_ref **pp = &t->buckets[s->hash & (t->n_buckets - 1)];

	while (*pp && *pp != s)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = s->hnext;
	s->hnext = NULL;
}

static struct chunk_ref *hash_find(struct ram_tier *t, uint64_t h, const struct chunk_id *id)
{
	for (struct chunk_ref *s = t->buckets[h & (t->n_buckets - 1)]; s; s = s->hnext)
		if (slot_matches(s, h, id))
			return s;
	return NULL;
}

static void free_push(struct ram_tier *t, struct chunk_ref *s)
{
	pthread_mutex_lock(&t->evict_lock);
	s->fnext = t->free_top;
	t->free_top = s;
	pthread_mutex_unlock(&t->evict_lock);
}

static bool slot_protected(struct ram_tier *t, const struct chunk_ref *s);

/* s is no longer read-ahead awaited (read, evicted, handed down, failed,
 * withdrawn): true when it was.  Its bytes leave ahead_unread. */
static bool ahead_clear(struct ram_tier *t, struct chunk_ref *s)
{
	if (!atomic_exchange(&s->ahead, false))
		return false;
	atomic_fetch_sub(&t->ahead_all, s->cap);
	if (atomic_exchange(&s->ahead_counted, false))
		atomic_fetch_sub(&t->ahead_unread, s->cap);
	return true;
}

/* Unhash slot s if it is READY, unreferenced, not pinned, not protected
 * read-ahead unless take_protected, and read through in epoch done_gen
 * unless that is 0 (stripe lock taken here, so the tests and the
 * unhashing are one step; evict_lock held by the caller).  true when s
 * is now a private FREE slot. */
static bool slot_try_evict_gen(struct ram_tier *t, struct chunk_ref *s, bool take_protected,
			       uint64_t done_gen)
{
	pthread_mutex_t *sl = stripe_of(t, s->hash);
	bool ok = false;

	pthread_mutex_lock(sl);
	if (atomic_load(&s->state) == SLOT_READY && atomic_load(&s->refs) == 0 &&
	    !atomic_load(&s->pinned) && (take_protected || !slot_protected(t, s)) &&
	    (done_gen == 0 || atomic_load(&s->done_gen) == done_gen)) {
		hash_remove(t, s);
		atomic_store(&s->done_gen, 0);   /* the mark was its chunk's */
		if (ahead_clear(t, s))
			atomic_fetch_add(&t->ahead_wasted, 1);
		atomic_store(&s->state, SLOT_FREE);
		atomic_fetch_sub(&t->entries, 1);
		atomic_fetch_sub(&t->bytes_used, s->len);
		atomic_fetch_add(&t->evictions, 1);
		ok = true;
	}
	pthread_mutex_unlock(sl);
	return ok;
}

static bool slot_try_evict(struct ram_tier *t, struct chunk_ref *s, bool take_protected)
{
	return slot_try_evict_gen(t, s, take_protected, 0);
}

/* The done list (done_lock held). */
static void done_unlink(struct ram_tier *t, struct chunk_ref *s)
{
	if (!s->on_done)
		return;
	if (s->dprev)
		s->dprev->dnext = s->dnext;
	else
		t->done_top = s->dnext;
	if (s->dnext)
		s->dnext->dprev = s->dprev;
	s->dprev = s->dnext = NULL;
	s->on_done = false;
}

static void done_push(struct ram_tier *t, struct chunk_ref *s)
{
	s->dprev = NULL;
	s->dnext = t->done_top;
	if (t->done_top)
		t->done_top->dprev = s;
	t->done_top = s;
	s->on_done = true;
}

static bool slot_before_locked(struct ram_tier *t, const struct chunk_ref *s,
			       const struct chunk_id *id, uint64_t span);
static uint64_t before_span(bool ahead);

/* The latest chunk read through this epoch that can be evicted, evicted;
 * NULL when none among the first DONE_LOOK of the list.  Void marks (an
 * older epoch's, an evicted chunk's) leave the list on the way.  The span
 * chunks before id's in its object are passed over (slot_before): a chunk
 * is marked when a read ends at its end, and the kernel's read-ahead
 * requests, served out of order, may still ask for its earlier pages.
 * evict_lock held. */
#define DONE_LOOK 64
static struct chunk_ref *done_evict(struct ram_tier *t, const struct chunk_id *id, uint64_t span)
{
	uint64_t gen = atomic_load(&t->epoch);
	struct chunk_ref *s, *next, *got = NULL;
	int looked = 0;

	pthread_mutex_lock(&t->done_lock);
	for (s = t->done_top; s && looked < DONE_LOOK; s = next, looked++) {
		next = s->dnext;
		if (atomic_load(&s->done_gen) != gen) {
			done_unlink(t, s);
		} else if (!slot_before_locked(t, s, id, span) &&
			   slot_try_evict_gen(t, s, false, gen)) {
			done_unlink(t, s);
			got = s;
			break;
		}
		/* else in use (being replied from, stored): the next one */
	}
	pthread_mutex_unlock(&t->done_lock);
	if (got) {
		evict_policy_remove(t->policy, got->hash);
		atomic_fetch_add(&t->done_evictions, 1);
	}
	return got;
}

void ram_tier_read_done(struct chunk_ref *r)
{
	struct ram_tier *t = r->tier;

	if (r->overflow)
		return;
	pthread_mutex_lock(&t->done_lock);
	/* the caller holds a reference: the slot still holds this chunk */
	atomic_store(&r->done_gen, atomic_load(&t->epoch));
	done_unlink(t, r);
	done_push(t, r);
	pthread_mutex_unlock(&t->done_lock);
}

void ram_tier_handed_down(struct chunk_ref *r)
{
	if (r->overflow)
		return;
	/* neither used nor wasted here: its reader is the lower tier's */
	ahead_clear(r->tier, r);
	ram_tier_read_done(r);
	if (r->tier->room_made)
		r->tier->room_made(r->tier->room_arg);
}

void ram_tier_set_room_made(struct ram_tier *t, void (*fn)(void *arg), void *arg)
{
	t->room_made = fn;
	t->room_arg = arg;
}

void ram_tier_mark_unsaved(struct chunk_ref *r)
{
	if (!r->overflow)
		atomic_store(&r->unsaved, true);
}

bool chunk_ref_take_unsaved(struct chunk_ref *r)
{
	return atomic_load_explicit(&r->unsaved, memory_order_relaxed) &&
	       atomic_exchange(&r->unsaved, false);
}

void ram_tier_set_unsaved_evicted(struct ram_tier *t, ram_tier_unsaved_fn *fn, void *arg)
{
	t->unsaved_fn = fn;
	t->unsaved_arg = arg;
}

void ram_tier_new_epoch(struct ram_tier *t)
{
	atomic_fetch_add(&t->epoch, 1);
}

/* Replay the stripes' buffered hits into the policy.  evict_lock held. */
static void accesses_replay(struct ram_tier *t)
{
	struct access_rec recs[RING_LEN];

	for (size_t i = 0; i < RAM_STRIPES; i++) {
		struct stripe *st = &t->stripes[i];
		unsigned n;

		pthread_mutex_lock(&st->lock);
		n = st->ring_n;
		memcpy(recs, st->ring, n * sizeof(recs[0]));
		st->ring_n = 0;
		pthread_mutex_unlock(&st->lock);
		for (unsigned j = 0; j < n; j++) {
			/* if the slot was reused meanwhile, its new chunk's next
			 * hit counts once more: harmless, and no racy read */
			atomic_store_explicit(&recs[j].slot->used, false, memory_order_relaxed);
			evict_policy_access(t->policy, recs[j].hash);
		}
	}
}

/* Read ahead and not yet read, among the latest ahead_limit bytes read
 * ahead: eviction passes it over (stripe lock held).  Only the latest are
 * protected, so a read-ahead chunk nobody reads (a reader that stopped)
 * loses its protection once as many newer bytes were issued, and the
 * protected share of the tier never exceeds the read-ahead bound. */
static bool slot_protected(struct ram_tier *t, const struct chunk_ref *s)
{
	return atomic_load(&s->ahead) &&
	       atomic_load(&t->ahead_pos) - s->ahead_seq < atomic_load(&t->ahead_limit);
}

/* Who asks for a victim: the tier, the chunk a slot is wanted for, and
 * whether for a read-ahead. */
struct victim_ctx {
	struct ram_tier *t;
	const struct chunk_id *id;
	bool ahead;
};

/* s holds one of the span chunks before id's in its object version: the
 * one that id's sequential reader (or the kernel's read-ahead for it) may
 * still be reading, one before id's for a reader's miss, two for a
 * read-ahead of id (issued a chunk ahead of its reader) (s's stripe lock
 * held). */
static bool slot_before(const struct chunk_ref *s, const struct chunk_id *id, uint64_t span)
{
	return s->index < id->index && id->index - s->index <= span && s->key && s->etag &&
	       strcmp(s->key, id->key) == 0 && strcmp(s->etag, id->etag) == 0;
}

/* How far back slot_before() looks for a fill of this kind. */
static uint64_t before_span(bool ahead)
{
	return ahead ? 2 : 1;
}

/* The policy's pinned test: a slot being filled or replied from, or read
 * ahead and still awaited; for a read-ahead, any read-ahead not read yet
 * (protected or not: read-ahead never displaces read-ahead that may still
 * be read; a reader's miss takes the unprotected); and the chunk just
 * before the one wanted, in the same object: with RAM of a few chunks,
 * the next chunk's fill took it from its reader midway, who fetched it
 * again (the sweep takes it only as a reader's last resort); for a
 * read-ahead, the two before it (the read-ahead of chunk c + 2 took
 * chunk c while the kernel still asked for its last pages). */
static bool slot_pinned(void *ctx, uint64_t h)
{
	const struct victim_ctx *vc = ctx;
	struct ram_tier *t = vc->t;
	pthread_mutex_t *sl = stripe_of(t, h);
	bool pinned = false;

	pthread_mutex_lock(sl);
	for (struct chunk_ref *s = t->buckets[h & (t->n_buckets - 1)]; s; s = s->hnext) {
		if (s->hash == h && atomic_load(&s->state) == SLOT_READY) {
			pinned = atomic_load(&s->refs) != 0 || atomic_load(&s->pinned) ||
				 slot_protected(t, s) || (vc->ahead && atomic_load(&s->ahead)) ||
				 slot_before(s, vc->id, before_span(vc->ahead));
			break;
		}
	}
	pthread_mutex_unlock(sl);
	return pinned;
}

/* The READY slot holding hash h, or NULL (stripe lock taken here). */
static struct chunk_ref *slot_of_hash(struct ram_tier *t, uint64_t h)
{
	pthread_mutex_t *sl = stripe_of(t, h);
	struct chunk_ref *s;

	pthread_mutex_lock(sl);
	for (s = t->buckets[h & (t->n_buckets - 1)]; s; s = s->hnext)
		if (s->hash == h && atomic_load(&s->state) == SLOT_READY)
			break;
	pthread_mutex_unlock(sl);
	return s;
}

/* The policy's victim, evicted: a private FREE slot; NULL when the policy
 * has none to give.  The policy's admission answer is not asked: the
 * chunk being read must be in RAM while it is read (a refused one would
 * be fetched again for each of its pieces), so here the policy only
 * chooses what leaves; W-TinyLFU's duel already happens inside victim().
 * evict_lock held. */
static struct chunk_ref *policy_evict(struct ram_tier *t, const struct chunk_id *id, bool ahead)
{
	struct victim_ctx vc = { t, id, ahead };

	for (int i = 0; i < VICTIM_TRIES; i++) {
		struct chunk_ref *s;
		uint64_t v;

		if (!evict_policy_victim(t->policy, slot_pinned, &vc, &v))
			return NULL;
		s = slot_of_hash(t, v);
		if (!s) {               /* lost track (a hash collision): forget it */
			evict_policy_remove(t->policy, v);
			continue;
		}
		if (slot_try_evict(t, s, false)) {
			evict_policy_remove(t->policy, v);
			return s;
		}
		/* referenced since the pinned test: ask again */
	}
	return NULL;
}

/* slot_before() for a READY slot, its stripe lock taken here. */
static bool slot_before_locked(struct ram_tier *t, const struct chunk_ref *s,
			       const struct chunk_id *id, uint64_t span)
{
	pthread_mutex_t *sl = stripe_of(t, s->hash);
	bool before;

	pthread_mutex_lock(sl);
	before = atomic_load(&s->state) == SLOT_READY && slot_before(s, id, span);
	pthread_mutex_unlock(sl);
	return before;
}

/* Any READY unreferenced unpinned slot, evicted: first one not read
 * ahead; then, only for a reader, read-ahead no longer protected (a
 * stopped reader's), and protected read-ahead last: a reader must make
 * progress, but read-ahead never displaces read-ahead not read yet (the
 * contract of RAM_AHEAD: with a window of more chunks than the protected
 * bound, the older ones lost their protection while still to be read,
 * and were evicted by the newer: fetched twice).  NULL when there is
 * none.  At most three turns of the hand.  evict_lock held. */
static struct chunk_ref *sweep_evict(struct ram_tier *t, const struct chunk_id *id, bool ahead,
				     bool trim)
{
	for (int pass = 0; pass < (ahead ? 1 : trim ? 2 : 3); pass++) {
		for (size_t step = 0; step < t->n_slots; step++) {
			struct chunk_ref *c = &t->slots[t->hand];

			t->hand = (t->hand + 1) % t->n_slots;
			if (atomic_load(&c->state) != SLOT_READY || atomic_load(&c->refs) != 0)
				continue;
			if (pass == 0 && atomic_load(&c->ahead))   /* a peek: a hint only */
				continue;
			if (pass < 2 && slot_before_locked(t, c, id, before_span(ahead)))
				continue;
			if (slot_try_evict(t, c, pass == 2)) {
				evict_policy_remove(t->policy, c->hash);
				return c;
			}
		}
	}
	return NULL;
}

/* One slot evicted (the latest read through this epoch, else the
 * policy's victim, else any evictable one; for an epoch's fetch ahead,
 * only the first), or NULL.  To trim buffers to the capacity (trim), not
 * the sweep's last resort: the slot is had, and the chunk its reader is
 * finishing (and read-ahead still protected) stays over the capacity
 * rather than being fetched again.  evict_lock held. */
static struct chunk_ref *victim_take(struct ram_tier *t, const struct chunk_id *id, bool ahead,
				     bool epoch, bool trim)
{
	struct chunk_ref *s = done_evict(t, id, before_span(ahead));

	if (epoch)
		return s;
	if (!s)
		s = policy_evict(t, id, ahead);
	return s ? s : sweep_evict(t, id, ahead, trim);
}

/* Would slot s, given a buffer of size bytes, keep its own? */
static bool buf_fits(const struct chunk_ref *s, size_t size)
{
	return s->buf && s->cap >= size && s->cap / 2 < size;
}

/* An evicted chunk the tier below could not take when it was filled
 * (unsaved), its buffer taken from its slot to be offered once more. */
struct rescued {
	void *buf;
	size_t len;
	char *key, *etag;
	uint64_t index;
};
#define RESCUE_MAX 4   /* per miss: each is a chunk buffer beyond the capacity */

/* Victim s (evicted, private) gives its buffer, key and version to r[*n]
 * if it is unsaved and there is someone to take them: a miss that
 * evicts a chunk the SSD writer was too far behind to take gives it a
 * second chance, instead of the next read fetching it again.  evict_lock
 * held. */
static void slot_rescue(struct ram_tier *t, struct chunk_ref *s, struct rescued *r, unsigned *n)
{
	if (!t->unsaved_fn || *n == RESCUE_MAX || !s->buf || !atomic_exchange(&s->unsaved, false))
		return;
	r[(*n)++] = (struct rescued){ s->buf, s->len, s->key, s->etag, s->index };
	atomic_fetch_sub(&t->mem, s->cap);   /* the taker's from now on */
	s->buf = NULL;
	s->cap = 0;
	s->key = NULL;   /* a FREE slot's name is read by nobody; slot_assign names it */
	s->etag = NULL;
}

/* Hand the rescued chunks to the taker (no tier lock held). */
static void rescued_hand(struct ram_tier *t, struct rescued *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct chunk_id id = { r[i].key, r[i].etag, r[i].index };

		t->unsaved_fn(t->unsaved_arg, &id, r[i].buf, r[i].len);
		free(r[i].key);
		free(r[i].etag);
	}
}

/* A slot for a miss on chunk hash h, to be filled in size bytes: a free
 * one, else the policy's victim (evicted), else any evictable slot; then
 * more victims, until the buffers fit the capacity with this one's: the
 * first whose buffer fits gives it to this slot, the others' are freed.
 * NULL when every slot is pinned or filling; with
 * nothing more to evict the buffers may exceed the capacity by the fills
 * in flight and the chunks just before them (victim_take's trim), except
 * for an epoch's fetch ahead (epoch), which gets NULL instead.  An
 * epoch's fetch ahead also gets NULL when the fills ahead not
 * read yet, this one included, would leave less of the tier than a
 * reader's next two chunks (the one it reads and the one read ahead of
 * it), as large as the largest a reader has missed on: that reader's
 * miss would evict them unread (a 16 MiB tier, 8 MiB chunks, files of
 * mixed sizes: a loader's plan fetched 1.02-1.10 of the dataset an epoch,
 * 1.00-1.03 with the room kept).  A read-ahead miss is not an access: the
 * read that consumes the chunk is, so a chunk read once counts once
 * whoever fetched it.
 *
 * The bound is on buffer bytes, not slots (there is a slot per EVICT_RAM_SLOT_GRAIN
 * of capacity): an image of 100 KB takes about 100 KB, not a chunk. */
static struct chunk_ref *slot_take(struct ram_tier *t, const struct chunk_id *id, uint64_t h,
				    bool ahead, bool epoch, size_t size)
{
	struct rescued rs[RESCUE_MAX];
	struct chunk_ref *s = NULL;
	unsigned nrs = 0;

	if (epoch && atomic_load(&t->ahead_all) + size + 2 * atomic_load(&t->reader_max) >
			     t->capacity)
		return NULL;   /* the room of a reader's next two chunks */
	pthread_mutex_lock(&t->evict_lock);
	accesses_replay(t);
	if (!ahead)
		evict_policy_access(t->policy, h);
	if (t->free_top) {
		s = t->free_top;
		t->free_top = s->fnext;
		s->fnext = NULL;
	} else {
		s = victim_take(t, id, ahead, epoch, false);
		if (s)
			slot_rescue(t, s, rs, &nrs);
	}
	if (s && !buf_fits(s, size)) {
		slot_buf_drop(t, s);
		while (atomic_load(&t->mem) + (s->buf ? 0 : size) > t->capacity) {
			struct chunk_ref *v = victim_take(t, id, ahead, epoch, true);

			if (!v)
				break;
			slot_rescue(t, v, rs, &nrs);
			if (!s->buf && buf_fits(v, size)) {
				/* the victim's buffer is this fill's: a buffer
				 * freed and another allocated would be memory the
				 * kernel zeroes again, an eighth of a cold
				 * reader's CPU */
				s->buf = v->buf;
				s->cap = v->cap;
				v->buf = NULL;
				v->cap = 0;
			} else {
				slot_buf_drop(t, v);
			}
			v->fnext = t->free_top;
			t->free_top = v;
		}
		if (epoch && !s->buf && atomic_load(&t->mem) + size > t->capacity) {
			/* no room but by evicting what the epoch has yet to read */
			s->fnext = t->free_top;
			t->free_top = s;
			s = NULL;
		}
	}
	if (s)
		atomic_fetch_add(&t->reserving, 1);
	pthread_mutex_unlock(&t->evict_lock);
	rescued_hand(t, rs, nrs);
	return s;
}

/* A filled slot joins the policy's resident set. */
static void policy_insert(struct ram_tier *t, uint64_t h)
{
	pthread_mutex_lock(&t->evict_lock);
	evict_policy_insert(t->policy, h);
	pthread_mutex_unlock(&t->evict_lock);
}

/* Buffer a hit's access (stripe lock held).  true when the buffer is now
 * full and should be replayed. */
static bool access_record(struct ram_tier *t, struct chunk_ref *s, uint64_t h)
{
	struct stripe *st = stripe_at(t, h);

	if (atomic_exchange_explicit(&s->used, true, memory_order_relaxed))
		return false;           /* this visit is already counted */
	if (st->ring_n < RING_LEN)
		st->ring[st->ring_n++] = (struct access_rec){ s, h };
	return st->ring_n == RING_LEN;
}

/* Name slot s for chunk id, with a buffer of size bytes (its own when
 * it fits: slot_take dropped it otherwise). */
static int slot_assign(struct ram_tier *t, struct chunk_ref *s, uint64_t h,
		       const struct chunk_id *id, size_t size)
{
	char *key = strdup(id->key), *etag = strdup(id->etag);

	if (s->buf && !buf_fits(s, size))
		slot_buf_drop(t, s);
	if (!s->buf && key && etag && (s->buf = chunk_buf_alloc(size))) {
		s->cap = size;
		atomic_fetch_add(&t->mem, size);
	}
	if (!key || !etag || !s->buf) {
		free(key);
		free(etag);
		return TFS_E_NOMEM;
	}
	free(s->key);
	free(s->etag);
	s->key = key;
	s->etag = etag;
	s->index = id->index;
	s->hash = h;
	s->len = 0;
	s->fill_rc = TFS_OK;
	atomic_store(&s->used, false);
	atomic_store(&s->unsaved, false);
	return TFS_OK;
}

/* Whether a chunk being inserted is pinned (before it is hashed, so a
 * ram_tier_pin_key() that runs later finds it and one that ran before is
 * seen here). */
static bool key_pinned(struct ram_tier *t, const char *key)
{
	return t->pins && pin_set_tier(t->pins, key) == PIN_RAM;
}

/* A private buffer for a miss that found every slot pinned: outside the
 * slot array and the hash, filled by the caller, freed at its last put. */
static int overflow_new(struct ram_tier *t, size_t size, struct chunk_ref **out)
{
	struct chunk_ref *o = calloc(1, sizeof(*o));

	if (!o || !(o->buf = chunk_buf_alloc(size))) {
		free(o);
		return TFS_E_NOMEM;
	}
	o->cap = size;
	o->tier = t;
	o->overflow = true;
	atomic_init(&o->refs, 1);
	atomic_init(&o->state, SLOT_FILLING);
	*out = o;
	return TFS_MISS;
}

/* Wait (holding a reference on s) until its fill is over. */
static int wait_fill(struct ram_tier *t, struct chunk_ref *s)
{
	int state;

	pthread_mutex_lock(&t->wait_lock);
	while ((state = atomic_load(&s->state)) == SLOT_FILLING)
		pthread_cond_wait(&t->wait_cond, &t->wait_lock);
	pthread_mutex_unlock(&t->wait_lock);
	return state == SLOT_READY ? TFS_OK : s->fill_rc;
}

/* A reader's hit on s (stripe lock held): the first read of a chunk read
 * ahead makes it used, and late if its fill is still running. */
static void ahead_consume(struct ram_tier *t, struct chunk_ref *s)
{
	if (!ahead_clear(t, s))
		return;
	atomic_fetch_add(&t->ahead_used, 1);
	if (atomic_load(&s->state) != SLOT_READY)
		atomic_fetch_add(&t->ahead_late, 1);
}

/* ram_tier_lookup(): a hit, a wait for another's fill, or a miss handed
 * to the caller with a FILLING slot (or an overflow buffer).  A read-ahead
 * finds a chunk already present or in flight and leaves it be (TFS_AGAIN,
 * no reference), and it never overflows (TFS_AGAIN when no slot can be
 * taken without evicting awaited read-ahead). */
int ram_tier_lookup(struct ram_tier *t, const struct chunk_id *id, size_t expect_len,
		    enum ram_mode mode, struct chunk_ref **out)
{
	bool ahead = mode == RAM_AHEAD || mode == RAM_AHEAD_EPOCH, epoch = mode == RAM_AHEAD_EPOCH;
	uint64_t h = chunk_hash(id);
	size_t size = buf_size(t, expect_len);
	pthread_mutex_t *sl = stripe_of(t, h);
	struct chunk_ref *s, *fresh = NULL;
	unsigned full_retries = 0;
	int rc;

	*out = NULL;
	for (;;) {
		pthread_mutex_lock(sl);
		s = hash_find(t, h, id);
		if (s && ahead) {
			pthread_mutex_unlock(sl);
			if (fresh) {
				free_push(t, fresh);
				atomic_fetch_sub(&t->reserving, 1);
			}
			return TFS_AGAIN;
		}
		if (s) {
			bool replay;

			atomic_fetch_add(&s->refs, 1);
			ahead_consume(t, s);
			replay = access_record(t, s, h);
			pthread_mutex_unlock(sl);
			if (replay && pthread_mutex_trylock(&t->evict_lock) == 0) {
				accesses_replay(t);
				pthread_mutex_unlock(&t->evict_lock);
			}
			if (fresh) {      /* lost a race to insert it: give ours back */
				free_push(t, fresh);
				atomic_fetch_sub(&t->reserving, 1);
			}
			if (atomic_load(&s->state) != SLOT_READY) {
				atomic_fetch_add(&t->waits, 1);
				rc = wait_fill(t, s);
				if (rc != TFS_OK) {
					chunk_ref_put(s);
					return rc;
				}
			}
			atomic_fetch_add_explicit(&t->hits, 1, memory_order_relaxed);
			*out = s;
			return TFS_OK;
		}
		if (mode == RAM_PEEK) {
			pthread_mutex_unlock(sl);
			return TFS_MISS;  /* absent: the caller reads below */
		}
		if (fresh)
			break;            /* still absent: insert ours (lock held) */
		pthread_mutex_unlock(sl);
		if (!ahead) {
			uint_fast64_t m = atomic_load(&t->reader_max);

			while (m < size && !atomic_compare_exchange_weak(&t->reader_max, &m, size))
				;
		}
		fresh = slot_take(t, id, h, ahead, epoch, size);
		if (!fresh && ahead) {
			atomic_fetch_add(&t->ahead_dropped, 1);
			return TFS_AGAIN;
		}
		if (!fresh && atomic_load(&t->reserving) > 0 && full_retries++ < 1000) {
			/* every slot is pinned, but some only by misses between
			 * taking a slot and hashing it, perhaps for this very
			 * chunk: let them finish, then look again, so a burst of
			 * readers of one cold chunk still fetches it once */
			sched_yield();
			continue;
		}
		if (!fresh) {
			atomic_fetch_add(&t->misses, 1);
			atomic_fetch_add(&t->overflow, 1);
			return overflow_new(t, size, out);
		}
		rc = slot_assign(t, fresh, h, id, size);
		if (rc != TFS_OK) {
			free_push(t, fresh);
			atomic_fetch_sub(&t->reserving, 1);
			return rc;
		}
	}
	atomic_store(&fresh->state, SLOT_FILLING);
	atomic_store(&fresh->refs, 1);
	atomic_store(&fresh->pinned, key_pinned(t, id->key));
	if (ahead) {
		atomic_fetch_add(&t->ahead_seq, 1);
		fresh->ahead_seq = atomic_fetch_add(&t->ahead_pos, size) + size;
		atomic_fetch_add(&t->ahead_all, fresh->cap);
		atomic_store(&fresh->ahead, true);
		if (!epoch) {
			atomic_store(&fresh->ahead_counted, true);
			atomic_fetch_add(&t->ahead_unread, fresh->cap);
		}
	}
	fresh->hnext = t->buckets[h & (t->n_buckets - 1)];
	t->buckets[h & (t->n_buckets - 1)] = fresh;
	pthread_mutex_unlock(sl);
	atomic_fetch_sub(&t->reserving, 1);
	if (!ahead)
		atomic_fetch_add(&t->misses, 1);
	*out = fresh;
	return TFS_MISS;
}

int ram_tier_fill_done(struct ram_tier *t, struct chunk_ref *r, int rc, size_t len)
{
	pthread_mutex_t *sl;

	assert(atomic_load(&r->state) == SLOT_FILLING);
	assert(rc != TFS_OK || len <= r->cap);
	if (r->overflow) {
		if (rc != TFS_OK) {
			free(r->buf);
			free(r);
			return rc;
		}
		r->len = len;
		atomic_fetch_add(&t->bytes_fetched, len);
		atomic_store(&r->state, SLOT_READY);
		return TFS_OK;
	}
	if (rc == TFS_OK) {
		r->len = len;
		policy_insert(t, r->hash);
		atomic_fetch_add(&t->insertions, 1);
		atomic_fetch_add(&t->entries, 1);
		atomic_fetch_add(&t->bytes_used, len);
		atomic_fetch_add(&t->bytes_fetched, len);
		pthread_mutex_lock(&t->wait_lock);
		atomic_store(&r->state, SLOT_READY);
		pthread_cond_broadcast(&t->wait_cond);
		pthread_mutex_unlock(&t->wait_lock);
		return TFS_OK;
	}
	atomic_fetch_add(&t->fills_failed, 1);
	sl = stripe_of(t, r->hash);
	pthread_mutex_lock(sl);
	hash_remove(t, r);
	ahead_clear(t, r);   /* neither used nor wasted: failed */
	pthread_mutex_unlock(sl);
	atomic_fetch_or(&r->refs, REF_ORPHAN);   /* while we still hold a reference */
	pthread_mutex_lock(&t->wait_lock);
	r->fill_rc = rc;
	atomic_store(&r->state, SLOT_FREE);
	pthread_cond_broadcast(&t->wait_cond);
	pthread_mutex_unlock(&t->wait_lock);
	chunk_ref_put(r);
	return rc;
}

bool ram_tier_fill_withdraw(struct ram_tier *t, struct chunk_ref *r)
{
	pthread_mutex_t *sl = stripe_of(t, r->hash);

	assert(atomic_load(&r->state) == SLOT_FILLING);
	assert(!r->overflow);   /* a read-ahead never overflows */
	pthread_mutex_lock(sl);
	/* references are taken under this lock only: with ours the only
	 * one, nobody waits, and nobody can begin to before it is unhashed */
	if ((atomic_load(&r->refs) & ~REF_ORPHAN) != 1) {
		pthread_mutex_unlock(sl);
		return false;
	}
	hash_remove(t, r);
	/* neither used nor wasted: not fetched (its bytes stay counted in
	 * ahead_pos: older fetches ahead lose their protection a chunk early) */
	ahead_clear(t, r);
	atomic_store(&r->state, SLOT_FREE);
	atomic_store(&r->refs, 0);
	pthread_mutex_unlock(sl);
	atomic_fetch_add(&t->ahead_withdrawn, 1);
	free_push(t, r);
	return true;
}

uint64_t ram_tier_ahead_unread(struct ram_tier *t)
{
	return atomic_load(&t->ahead_unread);
}

void ram_tier_set_ahead_limit(struct ram_tier *t, uint64_t bytes)
{
	atomic_store(&t->ahead_limit, bytes);
}

void ram_tier_set_pins(struct ram_tier *t, struct pin_set *pins)
{
	t->pins = pins;
}

/* The READY slot of chunk id, or NULL; stripe lock held. */
static struct chunk_ref *ready_find(struct ram_tier *t, uint64_t h, const struct chunk_id *id)
{
	struct chunk_ref *s = hash_find(t, h, id);

	return s && atomic_load(&s->state) == SLOT_READY ? s : NULL;
}

size_t ram_tier_pin_key(struct ram_tier *t, const char *key, bool on)
{
	size_t n = 0;

	/* slots change hands under evict_lock; a slot filled meanwhile took
	 * its pin from the pinned function, which the caller updated first */
	pthread_mutex_lock(&t->evict_lock);
	for (size_t i = 0; i < t->n_slots; i++) {
		struct chunk_ref *s = &t->slots[i];
		pthread_mutex_t *sl;

		if (atomic_load(&s->state) == SLOT_FREE)
			continue;
		sl = stripe_of(t, s->hash);
		pthread_mutex_lock(sl);
		if (atomic_load(&s->state) != SLOT_FREE && (!key || strcmp(s->key, key) == 0) &&
		    atomic_load(&s->pinned) != on) {
			atomic_store(&s->pinned, on);
			n++;
		}
		pthread_mutex_unlock(sl);
	}
	pthread_mutex_unlock(&t->evict_lock);
	return n;
}

void ram_tier_ahead_forget(struct ram_tier *t, const struct chunk_id *id)
{
	uint64_t h = chunk_hash(id);
	pthread_mutex_t *sl = stripe_of(t, h);
	struct chunk_ref *s;

	pthread_mutex_lock(sl);
	s = hash_find(t, h, id);
	if (s)
		ahead_clear(t, s);   /* neither used nor wasted: nobody awaits it */
	pthread_mutex_unlock(sl);
}

bool ram_tier_present(struct ram_tier *t, const struct chunk_id *id)
{
	uint64_t h = chunk_hash(id);
	pthread_mutex_t *sl = stripe_of(t, h);
	bool present;

	pthread_mutex_lock(sl);
	present = hash_find(t, h, id) != NULL;
	pthread_mutex_unlock(sl);
	return present;
}

size_t ram_tier_contains(struct ram_tier *t, const struct chunk_id *id)
{
	uint64_t h = chunk_hash(id);
	pthread_mutex_t *sl = stripe_of(t, h);
	struct chunk_ref *s;
	size_t len = 0;

	pthread_mutex_lock(sl);
	s = ready_find(t, h, id);
	if (s)
		len = s->len;
	pthread_mutex_unlock(sl);
	return len;
}

/* Evict slot s on an operator's request (evict_lock held): pinned and
 * referenced slots stay, read-ahead does not. */
static int slot_evict_asked(struct ram_tier *t, struct chunk_ref *s, uint64_t *bytes)
{
	size_t len = s->len;

	if (atomic_load(&s->pinned))
		return RAM_EVICT_PINNED;
	if (!slot_try_evict(t, s, true))
		return RAM_EVICT_BUSY;
	evict_policy_remove(t->policy, s->hash);
	slot_buf_drop(t, s);
	s->fnext = t->free_top;
	t->free_top = s;
	*bytes += len;
	return RAM_EVICT_DONE;
}

int ram_tier_evict(struct ram_tier *t, const struct chunk_id *id, uint64_t *bytes)
{
	uint64_t h = chunk_hash(id);
	pthread_mutex_t *sl = stripe_of(t, h);
	struct chunk_ref *s;
	int r = RAM_EVICT_ABSENT;

	pthread_mutex_lock(&t->evict_lock);
	pthread_mutex_lock(sl);
	s = ready_find(t, h, id);
	pthread_mutex_unlock(sl);
	/* a slot changes hands only under evict_lock, which we hold: s is
	 * still this chunk's unless a reader's fill failed (then not READY,
	 * and slot_try_evict says no) */
	if (s)
		r = slot_evict_asked(t, s, bytes);
	pthread_mutex_unlock(&t->evict_lock);
	return r;
}

void ram_tier_evict_all(struct ram_tier *t, uint64_t *chunks, uint64_t *bytes, uint64_t *pinned)
{
	pthread_mutex_lock(&t->evict_lock);
	for (size_t i = 0; i < t->n_slots; i++) {
		struct chunk_ref *s = &t->slots[i];

		if (atomic_load(&s->state) != SLOT_READY)
			continue;
		switch (slot_evict_asked(t, s, bytes)) {
		case RAM_EVICT_DONE: (*chunks)++; break;
		case RAM_EVICT_PINNED: (*pinned)++; break;
		default: break;
		}
	}
	pthread_mutex_unlock(&t->evict_lock);
}

const void *chunk_ref_data(const struct chunk_ref *r)
{
	return r->buf;
}

void *chunk_ref_buf(struct chunk_ref *r)
{
	assert(atomic_load(&r->state) == SLOT_FILLING);
	return r->buf;
}

size_t chunk_ref_cap(const struct chunk_ref *r)
{
	return r->cap;
}

size_t chunk_ref_len(const struct chunk_ref *r)
{
	return r->len;
}

struct chunk_ref *chunk_ref_dup(struct chunk_ref *r)
{
	assert((atomic_load(&r->refs) & ~REF_ORPHAN) > 0);
	atomic_fetch_add(&r->refs, 1);
	return r;
}

void chunk_ref_put(struct chunk_ref *r)
{
	unsigned old;

	if (!r)
		return;
	old = atomic_fetch_sub(&r->refs, 1);
	assert((old & ~REF_ORPHAN) > 0);
	if (old == 1 && r->overflow) {
		free(r->buf);
		free(r);
		return;
	}
	/* a READY slot stays hashed for the policy to evict; only a failed
	 * fill's slot, unhashed while referenced, is freed by its last put */
	if (old == (REF_ORPHAN | 1)) {
		atomic_store(&r->refs, 0);
		free_push(r->tier, r);
	}
}

void ram_tier_stats(struct ram_tier *t, struct tier_stats *out)
{
	/* withdrawn first: it never passes seq, so issued never goes back */
	uint64_t withdrawn = atomic_load(&t->ahead_withdrawn);

	memset(out, 0, sizeof(*out));
	out->hits = atomic_load(&t->hits);
	out->misses = atomic_load(&t->misses);
	out->waits = atomic_load(&t->waits);
	out->evictions = atomic_load(&t->evictions);
	out->evictions_read = atomic_load(&t->done_evictions);
	out->overflow = atomic_load(&t->overflow);
	out->fills_failed = atomic_load(&t->fills_failed);
	out->insertions = atomic_load(&t->insertions);
	out->bytes_fetched = atomic_load(&t->bytes_fetched);
	out->entries = atomic_load(&t->entries);
	out->bytes_used = atomic_load(&t->bytes_used);
	out->capacity = t->capacity;
	out->ahead_issued = atomic_load(&t->ahead_seq) - withdrawn;
	out->ahead_used = atomic_load(&t->ahead_used);
	out->ahead_wasted = atomic_load(&t->ahead_wasted);
	out->ahead_late = atomic_load(&t->ahead_late);
	out->ahead_dropped = atomic_load(&t->ahead_dropped);
}
