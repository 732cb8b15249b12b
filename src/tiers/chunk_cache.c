/* chunk_cache.c - RAM -> SSD -> object store, promoting on the way up.
 *
 * The RAM tier's single-flight covers the whole miss: the caller that
 * gets a RAM miss (ram_tier_lookup's TFS_MISS) reads SSD or GETs before
 * it publishes the chunk (ram_tier_fill_done), and the others wait, so two
 * readers of one cold chunk cause one SSD read or one GET between them.
 * Admission to SSD is "every chunk the store had to supply" for now:
 * write-behind at fill time (not demotion at RAM eviction) is what makes a
 * killed daemon come back warm.
 */
#include "tiers/chunk_cache.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/log.h"
#include "common/tfs_err.h"
#include "tiers/access_trace.h"
#include "tiers/part_cache.h"
#include "tiers/pin_set.h"
#include "tiers/shared_tier.h"
#include "tiers/ssd_tier.h"
#include "tiers/store_fetch.h"

#define FORGOT_SLOTS 65536    /* 512 KiB: few collisions below ~30,000 files */

struct chunk_cache {
	struct ram_tier *ram;
	struct ssd_tier *ssd;
	struct shared_tier *shared;   /* between SSD and the store; NULL = none */
	struct part_cache *part;      /* random readers' blocks; NULL = none */
	struct objstore *store;
	unsigned parallel_gets;
	size_t chunk_size;
	uint64_t ahead_bytes;         /* read-ahead protected from eviction */
	struct pin_set *pins;
	/* the access trace being recorded, if any: a reader counts itself in
	 * trace_users around its use, so a stop can wait readers out */
	_Atomic(struct access_trace *) trace;
	atomic_uint trace_users;
	atomic_uint_fast64_t store_fetches, store_bytes, store_errors, served;
	/* (key, ETag) pairs whose other versions were reclaimed lately, by
	 * hash, direct-mapped (see chunk_cache_forget_versions) */
	atomic_uint_fast64_t forgot[FORGOT_SLOTS];
};

static ram_tier_unsaved_fn unsaved_evicted;

struct chunk_cache *chunk_cache_new(const struct chunk_cache_config *cfg)
{
	struct chunk_cache *cc;

	if (!cfg->store || cfg->chunk_size == 0 || cfg->ram_bytes < cfg->chunk_size)
		return NULL;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->ram = ram_tier_new(cfg->ram_bytes, cfg->chunk_size, cfg->ram_policy);
	cc->pins = pin_set_new();
	if (cfg->part_bytes)
		cc->part = part_cache_new(cfg->part_bytes);
	if (!cc->ram || !cc->pins || (cfg->part_bytes && !cc->part)) {
		ram_tier_free(cc->ram);
		pin_set_free(cc->pins);
		part_cache_free(cc->part);
		free(cc);
		return NULL;
	}
	ram_tier_set_room_made(cc->ram, cfg->room_made, cfg->room_arg);
	cc->chunk_size = cfg->chunk_size;
	cc->store = cfg->store;
	cc->parallel_gets = cfg->parallel_gets ? cfg->parallel_gets : 1;
	ram_tier_set_ahead_limit(cc->ram, cfg->ahead_bytes);
	cc->ahead_bytes = cfg->ahead_bytes;
	ram_tier_set_pins(cc->ram, cc->pins);
	cc->ssd = cfg->ssd;
	cc->shared = cfg->shared;
	if (cc->ssd) {
		ssd_tier_set_pins(cc->ssd, cc->pins);
		ram_tier_set_unsaved_evicted(cc->ram, unsaved_evicted, cc);
	}
	return cc;
}

void chunk_cache_free(struct chunk_cache *cc)
{
	struct access_trace *t;

	if (!cc)
		return;
	t = chunk_cache_trace_swap(cc, NULL);
	if (t)
		(void)access_trace_stop(t);
	if (cc->ssd) {
		ssd_tier_flush(cc->ssd);   /* queued writes hold RAM references */
		ssd_tier_set_pins(cc->ssd, NULL);
		ssd_tier_set_plan(cc->ssd, NULL);
	}
	ram_tier_free(cc->ram);
	pin_set_free(cc->pins);
	part_cache_free(cc->part);
	free(cc);
}

uint64_t chunk_cache_chunks(const struct chunk_cache *cc, uint64_t size)
{
	return size ? (size - 1) / cc->chunk_size + 1 : 0;
}

size_t chunk_cache_chunk_len(const struct chunk_cache *cc, uint64_t size, uint64_t index)
{
	uint64_t start = index * cc->chunk_size;

	if (start >= size)
		return 0;
	return (size_t)(size - start < cc->chunk_size ? size - start : cc->chunk_size);
}

/* The object store's part of a miss: bytes [off, off + want) of chunk
 * index of o into buf, counted.  waited: somebody waits, or soon will,
 * for these bytes (a reader, an operator, a stream's read-ahead while its
 * window still widens), so they come as up to --parallel-gets part GETs;
 * any other fetch ahead is one GET.  Parts cut one chunk's wait, but each
 * is a request the store serves and bills: a sequential reader's fetches
 * ahead at full width keep several GETs in flight anyway, and 2 MiB parts
 * made a cold 2 GiB read cost 1,024 GETs instead of about 285, and the
 * server a third more CPU per GiB (benchmarks.md, "Cold sequential
 * reads: GETs and CPU"). */
static int store_get_at(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
			size_t off, size_t want, void *buf, bool waited)
{
	int rc;

	if (want == 0)
		return TFS_OK;
	rc = store_fetch(cc->store, waited ? cc->parallel_gets : 1, o, index,
			 index * cc->chunk_size + off, want, buf);
	if (rc != TFS_OK) {
		atomic_fetch_add(&cc->store_errors, 1);
		return rc;
	}
	atomic_fetch_add(&cc->store_fetches, 1);
	atomic_fetch_add(&cc->store_bytes, want);
	return TFS_OK;
}

/* Below the SSD tier: the shared tier when it has a verified copy, else
 * the store (*from_store; *t: what the shared tier wants done with it;
 * waited: see store_get_at). */
static int shared_or_store(struct chunk_cache *cc, const struct chunk_obj *o,
			   const struct chunk_id *id, size_t want, void *buf, bool waited,
			   bool *from_store, struct shared_ticket *t)
{
	int rc;

	*t = (struct shared_ticket){ 0 };
	if (cc->shared && want > 0 && shared_tier_get(cc->shared, id, want, buf, t) == TFS_OK)
		return TFS_OK;
	rc = store_get_at(cc, o, id->index, 0, want, buf, waited);
	*from_store = rc == TFS_OK;
	return rc;
}

/* Fill ref, the RAM tier's miss on chunk id of o (want bytes): from the
 * SSD tier when it holds a verified copy of that length, else from the
 * shared tier or the store (*from_store).  *len: the bytes filled.
 * reader: a reader's miss, not a fetch ahead (an access of the SSD
 * tier's policy even when the tier misses too).  parts: see
 * store_get_at's waited. */
static int chain_fill(struct chunk_cache *cc, const struct chunk_obj *o,
		      const struct chunk_id *id, size_t want, bool reader, bool parts,
		      struct chunk_ref *ref, size_t *len, bool *from_store, struct shared_ticket *t)
{
	void *buf = chunk_ref_buf(ref);
	int rc;

	*len = 0;
	if (cc->ssd && ssd_tier_read(cc->ssd, id, buf, chunk_ref_cap(ref), len, reader) == TFS_OK) {
		if (*len == want)
			return TFS_OK;
		log_warn("cached chunk %llu of '%s' has %zu bytes, the object's version %zu: "
			 "fetched again", (unsigned long long)id->index, id->key, *len, want);
	} else if (cc->ssd && reader) {
		ssd_tier_access(cc->ssd, id);
	}
	rc = shared_or_store(cc, o, id, want, buf, parts, from_store, t);
	*len = rc == TFS_OK ? want : 0;
	return rc;
}

static void release_ref(void *ref)
{
	chunk_ref_put(ref);
}

/* A fetch ahead's RAM copy was its way to the SSD tier, which keeps the
 * chunk for its reader from now on: RAM gives the copy up first and
 * keeps its room for the next fetch ahead (a reader with passthrough
 * never reads the copy to say it is done with it).  Also when the tier
 * refused the store: it mostly has the chunk queued or stored already;
 * if it is failing instead, the worst is one more GET for the reader. */
static void release_ref_written(void *ref)
{
	ram_tier_handed_down(ref);
	chunk_ref_put(ref);
}

/* How a chunk the store supplied goes to the SSD tier (write-behind):
 * a reader's is dropped when the queue is full; a fetch ahead waits for
 * room in the queue (no reader waits on it); a scan's fetch ahead into
 * free room is kept there until read (ssd_tier_store_ahead).  And to the
 * shared tier, as t says, unless that is where it came from: there too a
 * reader's copy may spill past the queue's bound, up to a second bound,
 * and a fetch ahead waits for room below the first. */
enum wb_mode { WB_READER, WB_WAIT, WB_AHEAD };

/* Chunk id (ref, the caller's) to the SSD tier, as wb says; again: a
 * reader's chunk offered once more.  A reader's chunk that the writer is
 * too far behind to take is marked unsaved in RAM, and offered again at
 * its next reader's hit (reader_hit) or, at the latest, when RAM evicts
 * it (unsaved_evicted): a burst that outran the writer is not fetched
 * again later while RAM still held it when the writer caught up.
 * Other refusals (already stored, degraded, the policy) are final;
 * every one is released and counted by the tier. */
static void ssd_behind(struct chunk_cache *cc, const struct chunk_id *id, struct chunk_ref *ref,
		       enum wb_mode wb, bool again)
{
	struct chunk_ref *d = chunk_ref_dup(ref);
	const void *data = chunk_ref_data(d);
	size_t len = chunk_ref_len(d);

	if (wb == WB_AHEAD)
		(void)ssd_tier_store_ahead(cc->ssd, id, data, len, release_ref_written, d);
	else if (wb == WB_WAIT)
		(void)ssd_tier_store_wait(cc->ssd, id, data, len, release_ref, d);
	else if ((again ? ssd_tier_store_again : ssd_tier_store)(cc->ssd, id, data, len,
								 release_ref, d) == TFS_AGAIN)
		ram_tier_mark_unsaved(ref);
}

/* RAM evicted a chunk marked unsaved: its buffer (ours now) is offered
 * to the SSD tier as one of the writer's copies, or freed. */
static void unsaved_evicted(void *arg, const struct chunk_id *id, void *buf, size_t len)
{
	struct chunk_cache *cc = arg;

	(void)ssd_tier_store_owned(cc->ssd, id, buf, len);
}

/* A reader's RAM hit on chunk id (r).  The SSD tier's policy counts one
 * access per visit of a chunk wherever it is served: a hit that begins a
 * visit (visit) is one, also on a chunk a fetch ahead brought (whose fill
 * was not).  Were hits not counted there, a chunk RAM happened to hold at
 * an epoch's turn fell a count behind the resident set each time, until
 * a fetched chunk won its duel and the set churned (64 files of 4 MiB,
 * N/C 1.5, shuffled: up to 1.37 x the bound without passthrough).  A
 * chunk the SSD writer could not take yet is offered again. */
static void reader_hit(struct chunk_cache *cc, const struct chunk_id *id, struct chunk_ref *r,
		       bool visit)
{
	if (!cc->ssd)
		return;
	if (visit)
		ssd_tier_access(cc->ssd, id);
	if (chunk_ref_take_unsaved(r))
		ssd_behind(cc, id, r, WB_READER, true);
}

static void write_behind(struct chunk_cache *cc, const struct chunk_id *id,
			 struct chunk_ref *ref, enum wb_mode wb, const struct shared_ticket *t)
{
	if (cc->ssd && chunk_ref_len(ref) > 0)
		ssd_behind(cc, id, ref, wb, false);
	if (cc->shared && !t->hit && chunk_ref_len(ref) > 0)
		shared_tier_put(cc->shared, id, chunk_ref_data(ref), chunk_ref_len(ref), t,
				wb != WB_READER);
}

/* Record a reader's access (read_len bytes of chunk id, chunk_len long;
 * visit: it begins a visit of the chunk, see chunk_cache_read) in the
 * trace being recorded, if any. */
static void trace_access(struct chunk_cache *cc, const struct chunk_id *id, size_t chunk_len,
			 size_t read_len, bool visit)
{
	struct access_trace *t;

	if (!atomic_load_explicit(&cc->trace, memory_order_relaxed))
		return;
	atomic_fetch_add(&cc->trace_users, 1);
	t = atomic_load(&cc->trace);
	if (t)
		access_trace_record(t, id->key, id->index, chunk_len, read_len, visit);
	atomic_fetch_sub(&cc->trace_users, 1);
}

struct access_trace *chunk_cache_trace_swap(struct chunk_cache *cc, struct access_trace *t)
{
	struct access_trace *old = atomic_exchange(&cc->trace, t);

	while (atomic_load(&cc->trace_users) != 0)
		sched_yield();   /* a record takes microseconds */
	return old;
}

/* The chain for one chunk of o, as mode asks (enum ram_mode): a RAM hit,
 * or a miss filled from SSD or the store, published, and when the store
 * supplied it (*fetched) queued for SSD (as wb says: for room in the
 * queue).  wanted (a fetch ahead's, or NULL): asked once the miss holds
 * its slot; no, and nobody waits on the slot: TFS_E_INTR, nothing
 * fetched.  parts: a store fetch in parts (store_get_at's waited).
 * visit: a reader's (RAM_READ) read that begins a visit of the chunk, the
 * one access the SSD tier's policy counts for it, hit or miss.  The
 * caller gets a reference on TFS_OK. */
static int chain_get(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		     enum ram_mode mode, bool visit, enum wb_mode wb, bool parts,
		     chunk_cache_wanted_fn *wanted, void *arg, struct chunk_ref **out, bool *fetched)
{
	struct chunk_id id = { o->key, o->cache_id, index };
	size_t want = chunk_cache_chunk_len(cc, o->size, index), len;
	struct chunk_ref *ref;
	struct shared_ticket t = { 0 };
	bool from_store = false;
	int rc;

	*out = NULL;
	*fetched = false;
	rc = ram_tier_lookup(cc->ram, &id, want, mode, &ref);
	if (rc == TFS_OK && chunk_ref_len(ref) != want) {
		/* a RAM chunk of this (key, ETag) from a version of another
		 * size: the store reused an ETag; never serve its bytes */
		chunk_ref_put(ref);
		return TFS_E_STALE;
	}
	if (rc == TFS_OK && mode == RAM_READ)
		reader_hit(cc, &id, ref, visit);
	if (rc == TFS_MISS && wanted && !wanted(arg) && ram_tier_fill_withdraw(cc->ram, ref))
		return TFS_E_INTR;   /* its reader came meanwhile: no fetch after its read */
	if (rc == TFS_MISS) {
		rc = chain_fill(cc, o, &id, want, mode == RAM_READ && visit, parts, ref, &len,
				&from_store, &t);
		rc = ram_tier_fill_done(cc->ram, ref, rc, len);
		if (rc == TFS_OK && (from_store || t.hit))
			write_behind(cc, &id, ref, wb, &t);
		*fetched = rc == TFS_OK && from_store;
	}
	if (rc == TFS_OK)
		*out = ref;
	return rc;
}

int chunk_cache_get(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		    struct chunk_ref **out)
{
	struct chunk_id id = { o->key, o->cache_id, index };
	size_t want = chunk_cache_chunk_len(cc, o->size, index);
	bool fetched;

	trace_access(cc, &id, want, want, true);
	return chain_get(cc, o, index, RAM_READ, true, WB_READER, true, NULL, NULL, out, &fetched);
}

/* ---- random readers: the blocks asked for, not the whole chunk -------- */

/* Make chunk id of o whole in RAM from e's blocks and the store: a RAM
 * fill as a reader's miss makes, then queued for SSD as a reader's chunk.
 * The store is asked only for e's holes; runs of holes are joined across
 * the blocks held between them (one GET instead of two, each paying the
 * store's time to first byte) while the bytes so fetched again stay
 * within budget.  *out on TFS_OK. */
static int part_complete(struct chunk_cache *cc, const struct chunk_obj *o,
			 const struct chunk_id *id, struct part_entry *e, size_t want,
			 size_t budget, struct chunk_ref **out)
{
	struct shared_ticket t = { 0 };
	struct chunk_ref *ref;
	size_t s, u, s2, u2;
	bool hole, next;
	char *buf;
	int rc;

	rc = ram_tier_lookup(cc->ram, id, want, RAM_READ, &ref);
	if (rc == TFS_OK && chunk_ref_len(ref) != want) {
		chunk_ref_put(ref);   /* see chain_get: an ETag reused */
		return TFS_E_STALE;
	}
	if (rc == TFS_OK)
		*out = ref;
	if (rc != TFS_MISS)
		return rc;
	buf = chunk_ref_buf(ref);
	part_entry_copy_held(e, buf);
	rc = TFS_OK;
	hole = part_entry_hole(e, 0, want, &s, &u);
	while (hole && rc == TFS_OK) {
		next = part_entry_hole(e, u, want, &s2, &u2);
		if (next && s2 - u <= budget) {
			budget -= s2 - u;
			u = u2;
			continue;
		}
		rc = store_get_at(cc, o, id->index, s, u - s, buf + s, true);
		hole = next;
		s = s2;
		u = u2;
	}
	rc = ram_tier_fill_done(cc->ram, ref, rc, rc == TFS_OK ? want : 0);
	if (rc != TFS_OK)
		return rc;
	write_behind(cc, id, ref, WB_READER, &t);
	*out = ref;
	return TFS_OK;
}

/* A random reader's bytes [off, off + len) of chunk id of o (want bytes),
 * absent from both tiers: from the blocks held for the chunk, fetching
 * those missing in one GET; when fetching all the chunk's missing blocks
 * keeps what the store sent for it within twice what its readers asked
 * for (the entry's ledger), the chunk is made whole instead
 * (part_complete).  TFS_OK:
 * *span (the caller frees it) or *ref, and *data.  TFS_MISS: not served
 * here, the chain serves it: no entry could be had, or (*again) the
 * chunk may be whole in RAM now. */
static int part_read(struct chunk_cache *cc, const struct chunk_obj *o,
		     const struct chunk_id *id, size_t want, size_t off, size_t len,
		     struct chunk_ref **ref, void **span, const void **data, bool *again)
{
	size_t from = off / PART_BLOCK * PART_BLOCK, to, held, miss, s, u, first, end;
	uint64_t asked, fetched;
	struct part_entry *e;
	bool waited;
	char *buf;
	int rc = TFS_OK;

	*again = false;
	to = (off + len + PART_BLOCK - 1) / PART_BLOCK * PART_BLOCK;
	to = to < want ? to : want;
	e = part_cache_acquire(cc->part, id, want, &waited);
	if (!e)
		return TFS_MISS;
	if (waited && ram_tier_present(cc->ram, id)) {
		part_cache_release(cc->part, e, false);   /* made whole meanwhile */
		*again = true;
		return TFS_MISS;
	}
	held = part_entry_bytes(e);
	miss = part_entry_missing(e, from, to);
	part_entry_ledger(e, &asked, &fetched);
	asked += to - from;
	if (miss > 0 && fetched + (want - held) <= 2 * asked) {
		rc = part_complete(cc, o, id, e, want, 2 * asked - fetched - (want - held), ref);
		part_cache_release(cc->part, e, rc == TFS_OK);
		if (rc != TFS_OK)
			return rc;
		part_cache_count_read(cc->part, false, true);
		*data = (const char *)chunk_ref_data(*ref) + off;
		return TFS_OK;
	}
	buf = malloc(to - from);
	if (!buf) {
		part_cache_release(cc->part, e, false);
		return TFS_E_NOMEM;
	}
	first = end = to;   /* [first, end): what the store sends */
	if (part_entry_hole(e, from, to, &first, &end)) {
		while (part_entry_hole(e, end, to, &s, &u))
			end = u;
		rc = store_get_at(cc, o, id->index, first, end - first, buf + (first - from), true);
		if (rc == TFS_OK)   /* out of memory: served all the same, kept not */
			(void)part_entry_put(cc->part, e, first, end, buf + (first - from));
	}
	if (rc == TFS_OK) {
		part_entry_account(e, to - from, end - first);
		part_entry_copy(e, from, first - from, buf);
		part_entry_copy(e, end, to - end, buf + (end - from));
	}
	part_cache_release(cc->part, e, false);
	if (rc != TFS_OK) {
		free(buf);
		return rc;
	}
	part_cache_count_read(cc->part, miss == 0, false);
	*span = buf;
	*data = buf + (off - from);
	return TFS_OK;
}

int chunk_cache_read(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		     size_t off, size_t len, unsigned how, struct chunk_ref **ref, void **span,
		     const void **data)
{
	struct chunk_id id = { o->key, o->cache_id, index };
	size_t want = chunk_cache_chunk_len(cc, o->size, index), so, sl;
	bool random = how & CHUNK_READ_RANDOM, visit = how & CHUNK_READ_VISIT;
	bool part = random && cc->part && off + len <= want, again = false;
	struct chunk_ref *r;
	bool fetched;
	void *buf;
	int rc = TFS_MISS;

	*ref = NULL;
	*span = NULL;
	*data = NULL;
	trace_access(cc, &id, want, len, visit);
	for (int tries = 0; (cc->ssd || part) && off + len <= want && tries < 4; tries++) {
		/* RAM first (a hit takes no SSD lock); absent, the SSD's
		 * blocks, when it holds the chunk; absent there too, a random
		 * reader's blocks */
		rc = ram_tier_lookup(cc->ram, &id, want, RAM_PEEK, &r);
		if (rc == TFS_OK && chunk_ref_len(r) != want) {
			chunk_ref_put(r);   /* see chain_get: an ETag reused */
			return TFS_E_STALE;
		}
		if (rc == TFS_OK) {
			reader_hit(cc, &id, r, visit);
			*ref = r;
			*data = (const char *)chunk_ref_data(r) + off;
			return TFS_OK;
		}
		if (rc != TFS_MISS)
			return rc;   /* the fill we waited for failed */
		buf = cc->ssd && ssd_tier_contains(cc->ssd, &id) == want
			      ? malloc(ssd_tier_span_max(len)) : NULL;
		if (buf && ssd_tier_read_range(cc->ssd, &id, want, off, len, buf, &so, &sl,
						visit) == TFS_OK) {
			*span = buf;
			*data = (const char *)buf + (off - so);
			return TFS_OK;
		}
		if (buf)
			visit = false;   /* counted by the tier, whether it served it or not */
		free(buf);   /* not there, or a bad copy (dropped): fetched */
		if (!part)
			break;
		rc = part_read(cc, o, &id, want, off, len, ref, span, data, &again);
		if (rc != TFS_MISS || !again)
			break;
	}
	if (part && rc == TFS_OK && visit && cc->ssd)
		ssd_tier_access(cc->ssd, &id);   /* served from a random reader's blocks */
	if (part && rc != TFS_MISS)
		return rc;
	rc = chain_get(cc, o, index, RAM_READ, visit, WB_READER, true, NULL, NULL, &r, &fetched);
	if (rc != TFS_OK)
		return rc;
	if (fetched && cc->part)
		part_cache_drop_chunk(cc->part, &id);   /* whole now: its blocks are spare */
	*ref = r;
	*data = (const char *)chunk_ref_data(r) + off;
	return TFS_OK;
}

int chunk_cache_prefetch(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
			 bool epoch, bool near, chunk_cache_wanted_fn *wanted, void *arg)
{
	struct chunk_ref *ref;
	bool fetched;
	int rc = chain_get(cc, o, index, epoch ? RAM_AHEAD_EPOCH : RAM_AHEAD, false, WB_WAIT, near,
			   wanted, arg, &ref, &fetched);

	if (rc == TFS_OK)
		chunk_ref_put(ref);
	return rc;
}

/* Through a RAM slot, not a private buffer: a reader that opens the file
 * while it is fetched waits for this fill (single-flight) instead of
 * fetching it a second time, which a scan's 16 fetchers ahead of a
 * shuffled reader did for a sixth of an epoch's files.  Only into the SSD
 * tier's free room: fetched ahead into RAM alone, a chunk of a dataset
 * larger than the cache was evicted by readers' misses before its reader
 * came (a 16 MiB RAM tier, 4 MiB files: 1.44 x N in the first epoch). */
int chunk_cache_prefetch_ssd(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
			     bool *fetched, chunk_cache_wanted_fn *wanted, void *arg)
{
	struct chunk_id id = { o->key, o->cache_id, index };
	size_t want = chunk_cache_chunk_len(cc, o->size, index);
	struct chunk_ref *ref;
	int rc;

	*fetched = false;
	if (!cc->ssd)
		return TFS_E_INVAL;
	if (ssd_tier_contains(cc->ssd, &id) == want)
		return TFS_OK;
	if (!ssd_tier_ahead_room(cc->ssd, want))
		return TFS_AGAIN;
	rc = chain_get(cc, o, index, RAM_AHEAD_EPOCH, false, WB_AHEAD, false, wanted, arg, &ref,
		       fetched);
	if (rc == TFS_OK)
		chunk_ref_put(ref);
	return rc;
}

/* The kernel reads o from the SSD tier's file now: in the trace, as in
 * the SSD tier's policy, an access of every chunk. */
static void trace_object(struct chunk_cache *cc, const struct chunk_obj *o)
{
	for (uint64_t i = 0; i < chunk_cache_chunks(cc, o->size); i++) {
		struct chunk_id id = { o->key, o->cache_id, i };
		size_t len = chunk_cache_chunk_len(cc, o->size, i);

		trace_access(cc, &id, len, len, true);
	}
}

int chunk_cache_backing_open(struct chunk_cache *cc, const struct chunk_obj *o, int *fd)
{
	int rc;

	*fd = -1;
	if (!cc->ssd)
		return TFS_MISS;
	rc = ssd_tier_object_open(cc->ssd, o->key, o->cache_id, o->size, fd);
	if (rc == TFS_OK)
		trace_object(cc, o);
	return rc;
}

void chunk_cache_backing_reopened(struct chunk_cache *cc, const struct chunk_obj *o)
{
	if (!cc->ssd)
		return;
	ssd_tier_object_reopened(cc->ssd, o->key, o->cache_id, o->size);
	trace_object(cc, o);
}

void chunk_cache_backing_release(struct chunk_cache *cc, const struct chunk_obj *o)
{
	if (cc->ssd)
		ssd_tier_object_release(cc->ssd, o->key, o->cache_id);
}

static void release_buf(void *buf)
{
	free(buf);
}

int chunk_cache_warm(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index,
		     enum pin_tier tier, bool *fetched)
{
	struct chunk_id id = { o->key, o->cache_id, index };
	size_t want = chunk_cache_chunk_len(cc, o->size, index), len;
	struct chunk_ref *ref;
	struct shared_ticket t;
	bool from_store = false;
	void *buf;
	int rc;

	*fetched = false;
	if (tier == PIN_RAM) {
		rc = chain_get(cc, o, index, RAM_READ, true, WB_WAIT, true, NULL, NULL, &ref, fetched);
		if (rc == TFS_OK)
			chunk_ref_put(ref);
		return rc;
	}
	if (!cc->ssd)
		return TFS_E_INVAL;
	len = ssd_tier_contains(cc->ssd, &id);
	if (len == want)
		return TFS_OK;
	/* in RAM or on its way there (a reader's fill): copy it from there,
	 * rather than a second GET for the same bytes */
	if (ram_tier_present(cc->ram, &id)) {
		/* *fetched: evicted meanwhile, fetched after all */
		rc = chain_get(cc, o, index, RAM_READ, true, WB_WAIT, true, NULL, NULL, &ref, fetched);
		if (rc != TFS_OK)
			return rc;
		if (chunk_ref_len(ref) > 0) {
			struct chunk_ref *d = chunk_ref_dup(ref);
			(void)ssd_tier_store_forced(cc->ssd, &id, chunk_ref_data(d), chunk_ref_len(d),
						    release_ref, d);   /* refused: stored already */
		}
		chunk_ref_put(ref);
		return TFS_OK;
	}
	/* straight to SSD: a private buffer, not a RAM slot (warming a
	 * dataset bigger than RAM must not flush what readers are using) */
	buf = malloc(cc->chunk_size ? cc->chunk_size : 1);
	if (!buf)
		return TFS_E_NOMEM;
	rc = shared_or_store(cc, o, &id, want, buf, true, &from_store, &t);
	if (rc != TFS_OK) {
		free(buf);
		return rc;
	}
	*fetched = from_store;
	if (cc->shared && from_store && want > 0)
		shared_tier_put(cc->shared, &id, buf, want, &t, true);   /* a copy */
	if (want == 0) {
		free(buf);
		return TFS_OK;
	}
	if (!ssd_tier_store_forced(cc->ssd, &id, buf, want, release_buf, buf)) {
		/* refused (the buffer is released): fine if a copy is stored
		 * or queued already, else the tier is degraded or stopping */
		ssd_tier_flush(cc->ssd);
		return ssd_tier_contains(cc->ssd, &id) == want ? TFS_OK : TFS_AGAIN;
	}
	return TFS_OK;
}

void chunk_cache_read_done(struct chunk_cache *cc, struct chunk_ref *ref)
{
	(void)cc;
	ram_tier_read_done(ref);
}

bool chunk_cache_ahead_room(struct chunk_cache *cc, size_t len)
{
	return ram_tier_ahead_unread(cc->ram) + len <= cc->ahead_bytes;
}

void chunk_cache_new_epoch(struct chunk_cache *cc)
{
	ram_tier_new_epoch(cc->ram);
	if (cc->ssd)
		ssd_tier_new_epoch(cc->ssd);
}

void chunk_cache_ahead_forget(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t first,
			      uint64_t end)
{
	for (uint64_t i = first; i < end; i++) {
		struct chunk_id id = { o->key, o->cache_id, i };

		ram_tier_ahead_forget(cc->ram, &id);
	}
}

bool chunk_cache_in_ram(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t index)
{
	struct chunk_id id = { o->key, o->cache_id, index };

	return ram_tier_present(cc->ram, &id);
}

void chunk_cache_residency(struct chunk_cache *cc, const struct chunk_obj *o, uint64_t *ram,
			   uint64_t *ssd)
{
	uint64_t n = chunk_cache_chunks(cc, o->size);

	*ram = *ssd = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { o->key, o->cache_id, i };

		*ram += ram_tier_contains(cc->ram, &id);
		if (cc->ssd)
			*ssd += ssd_tier_contains(cc->ssd, &id);
	}
}

void chunk_cache_evict(struct chunk_cache *cc, const struct chunk_obj *o, unsigned tiers,
		       struct chunk_cache_evicted *ev)
{
	uint64_t n = chunk_cache_chunks(cc, o->size);

	if ((tiers & PIN_RAM) && cc->part)
		ev->bytes += part_cache_drop(cc->part, o->key);   /* a random reader's blocks */
	if ((tiers & PIN_SSD) && cc->ssd)
		ssd_tier_flush(cc->ssd);   /* a write queued before the request lands first */
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_id id = { o->key, o->cache_id, i };

		if (tiers & PIN_RAM) {
			switch (ram_tier_evict(cc->ram, &id, &ev->bytes)) {
			case RAM_EVICT_DONE: ev->chunks++; break;
			case RAM_EVICT_PINNED: ev->pinned++; break;
			case RAM_EVICT_BUSY: ev->busy++; break;
			default: break;
			}
		}
		if ((tiers & PIN_SSD) && cc->ssd) {
			switch (ssd_tier_evict(cc->ssd, &id, &ev->bytes)) {
			case SSD_EVICT_DONE: ev->chunks++; break;
			case SSD_EVICT_PINNED: ev->pinned++; break;
			default: break;
			}
		}
	}
}

void chunk_cache_evict_all(struct chunk_cache *cc, unsigned tiers, struct chunk_cache_evicted *ev)
{
	if (tiers & PIN_RAM)
		ram_tier_evict_all(cc->ram, &ev->chunks, &ev->bytes, &ev->pinned);
	if ((tiers & PIN_RAM) && cc->part)
		ev->bytes += part_cache_drop(cc->part, NULL);
	if ((tiers & PIN_SSD) && cc->ssd) {
		ssd_tier_flush(cc->ssd);
		ssd_tier_evict_all(cc->ssd, &ev->chunks, &ev->bytes, &ev->pinned);
	}
}

void chunk_cache_flush(struct chunk_cache *cc)
{
	if (cc->ssd)
		ssd_tier_flush(cc->ssd);
}

uint64_t chunk_cache_pin_limit(struct chunk_cache *cc, enum pin_tier tier)
{
	struct tier_stats st;

	if (tier == PIN_RAM) {
		ram_tier_stats(cc->ram, &st);
		return st.capacity / 2;
	}
	return cc->ssd ? ssd_tier_room(cc->ssd) / 10 * 9 : 0;
}

int chunk_cache_pin(struct chunk_cache *cc, const char *const *keys, const uint64_t *sizes,
		    size_t n, enum pin_tier tier, uint64_t *would_be)
{
	int rc;

	*would_be = 0;
	if (tier == PIN_SSD && !cc->ssd)
		return TFS_E_INVAL;
	rc = pin_set_add(cc->pins, keys, sizes, n, tier, chunk_cache_pin_limit(cc, tier), would_be);
	if (rc != TFS_OK && rc != TFS_E_NOMEM)
		return rc;
	/* the set first, then the chunks already present: a chunk inserted
	 * in between asks the set (see ram_tier_set_pinned_fn) */
	for (size_t i = 0; i < n; i++) {
		ram_tier_pin_key(cc->ram, keys[i], tier == PIN_RAM);
		if (cc->ssd)
			ssd_tier_pin_key(cc->ssd, keys[i], tier == PIN_SSD);
	}
	return rc;
}

bool chunk_cache_unpin(struct chunk_cache *cc, const char *key)
{
	enum pin_tier was = pin_set_remove(cc->pins, key);

	if (was == PIN_RAM)
		ram_tier_pin_key(cc->ram, key, false);
	else if (was == PIN_SSD && cc->ssd)
		ssd_tier_pin_key(cc->ssd, key, false);
	return was != PIN_NONE;
}

size_t chunk_cache_unpin_all(struct chunk_cache *cc)
{
	size_t n = pin_set_clear(cc->pins);

	ram_tier_pin_key(cc->ram, NULL, false);
	if (cc->ssd)
		ssd_tier_pin_key(cc->ssd, NULL, false);
	return n;
}

enum pin_tier chunk_cache_pinned(struct chunk_cache *cc, const char *key)
{
	return pin_set_tier(cc->pins, key);
}

void chunk_cache_set_plan(struct chunk_cache *cc, struct plan_slot *plans)
{
	if (cc->ssd)
		ssd_tier_set_plan(cc->ssd, plans);
}

bool chunk_cache_has_ssd(const struct chunk_cache *cc)
{
	return cc->ssd != NULL;
}

int chunk_cache_meta_put(struct chunk_cache *cc, const char *name, const void *value, size_t len)
{
	return cc->ssd ? ssd_tier_meta_put(cc->ssd, name, value, len) : TFS_MISS;
}

int chunk_cache_meta_get(struct chunk_cache *cc, const char *name, void **value, size_t *len)
{
	return cc->ssd ? ssd_tier_meta_get(cc->ssd, name, value, len) : TFS_MISS;
}

int chunk_cache_meta_del(struct chunk_cache *cc, const char *name)
{
	return cc->ssd ? ssd_tier_meta_del(cc->ssd, name) : TFS_MISS;
}

/* The file system asks at the first open of a version in a file node's
 * life, and the kernel drops nodes (memory pressure, drop_caches): a
 * loader's every epoch then asked again for each file, and each ask is
 * an index scan in the SSD writer (10-15% of tierfs's CPU in an epoch
 * read from the cache).  A pair reclaimed lately is not asked again; a
 * slot overwritten by another pair only costs a scan, and a reclaim
 * skipped (an object back at an ETag it had) only leaves space to the
 * policy to reclaim, never bytes to be served: reads name their version. */
void chunk_cache_forget_versions(struct chunk_cache *cc, const char *key, const char *keep_etag)
{
	uint64_t h;
	atomic_uint_fast64_t *slot;

	if (!cc->ssd)
		return;
	h = XXH3_64bits_withSeed(key, strlen(key), XXH3_64bits(keep_etag, strlen(keep_etag)));
	h |= 1;    /* 0 is an empty slot */
	slot = &cc->forgot[h % FORGOT_SLOTS];
	if (atomic_load_explicit(slot, memory_order_relaxed) == h)
		return;
	ssd_tier_drop_versions(cc->ssd, key, keep_etag);
	atomic_store_explicit(slot, h, memory_order_relaxed);
}

void chunk_cache_count_served(struct chunk_cache *cc, uint64_t bytes)
{
	atomic_fetch_add_explicit(&cc->served, bytes, memory_order_relaxed);
}

void chunk_cache_stats(struct chunk_cache *cc, struct chunk_cache_stats *out)
{
	ram_tier_stats(cc->ram, &out->ram);
	out->ram.bytes_served = atomic_load(&cc->served);
	out->has_ssd = cc->ssd != NULL;
	if (cc->ssd) {
		ssd_tier_stats(cc->ssd, &out->ssd);
		if (!out->ssd.capacity)     /* unbounded: what it may occupy now */
			out->ssd.capacity = ssd_tier_room(cc->ssd);
	} else
		out->ssd = (struct tier_stats){ 0 };
	out->store_fetches = atomic_load(&cc->store_fetches);
	out->store_bytes = atomic_load(&cc->store_bytes);
	out->store_errors = atomic_load(&cc->store_errors);
	out->has_part = cc->part != NULL;
	if (cc->part)
		part_cache_stats(cc->part, &out->part);
	else
		out->part = (struct part_cache_stats){ 0 };
	out->has_shared = cc->shared != NULL;
	if (cc->shared)
		shared_tier_stats(cc->shared, &out->shared);
	else
		out->shared = (struct shared_tier_stats){ 0 };
	pin_set_totals(cc->pins, &out->pinned_files, &out->pinned_ram, &out->pinned_ssd);
}
