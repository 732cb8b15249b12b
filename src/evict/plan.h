/* plan.h - a loader's plan: the files it will open, in order, and which of
 * them to fetch next.  Pure decisions, no I/O.
 *
 * It lives with the eviction policies because it is the cache's one
 * knowledge of the future: the fetchers (fs) serve it, and the SSD tier
 * evicts by it (Belady's rule: what is needed furthest ahead goes first).
 * Both reach the mount's current plan through one plan_slot (below).
 *
 * A training loader knows its epoch's order before the epoch starts (the
 * sampler's indices).  Handed over (the control socket's "plan"), it lets
 * tierfs fetch the next files before the loader asks, whatever the order.
 * The plan keeps a rolling window over it:
 *
 *     consumed:  the entry was opened (the earliest unconsumed occurrence
 *                of a path is the one an open consumes, so a path may
 *                appear more than once);
 *     hi:        one past the furthest entry opened;
 *     low:       the first entry not consumed, but never more than LAG
 *                entries behind hi: loaders with several workers open a
 *                little out of order, and an entry the reader left behind
 *                by more than that is abandoned, not waited for;
 *     next:      the next entry to hand out; entries in [low, next) were
 *                handed out (or abandoned);
 *     window:    an entry is handed out while next < low + window_files and
 *                the bytes handed out and not yet opened are fewer than
 *                window_bytes.
 *
 * A reader that opens an entry window_files or more beyond next skipped
 * ahead (a job resumed mid-epoch, say): next jumps past it, and what lies
 * between is abandoned.  The plan is over when low reaches the end.
 *
 * Bounds: PLAN_ENTRIES_MAX entries of at most PLAN_PATH_MAX bytes; memory
 * is the paths plus about 32 bytes an entry.  Not thread-safe: the caller
 * holds its lock.
 */
#ifndef TIERFS_PLAN_H
#define TIERFS_PLAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLAN_ENTRIES_MAX (1u << 24)
#define PLAN_PATH_MAX 4096

struct ra_plan;

struct ra_plan_info {
	size_t entries;            /* in the plan */
	size_t low, next;          /* see above */
	size_t consumed;           /* entries opened */
	size_t skips;              /* times the reader skipped ahead */
	uint64_t ahead_bytes;      /* handed out, not yet opened */
};

/* An empty plan to append to; NULL when memory ran out. */
struct ra_plan *ra_plan_new(void);
void ra_plan_free(struct ra_plan *p);

/* Append path (len bytes, no NUL inside) as the next entry.  0, or -1 past
 * the bounds, for an empty path, or when memory ran out (the plan is then
 * as it was).  Only before ra_plan_seal(). */
int ra_plan_add(struct ra_plan *p, const char *path, size_t len);
size_t ra_plan_entries(const struct ra_plan *p);

/* Done appending: index the paths and set the window (window_files >= 1).
 * 0, or -1 when memory ran out. */
int ra_plan_seal(struct ra_plan *p, size_t window_files, uint64_t window_bytes);

/* path was opened: consume its earliest unconsumed occurrence.  true when
 * the path is in the plan (*idx = the entry consumed), false otherwise. */
bool ra_plan_on_open(struct ra_plan *p, const char *path, size_t *idx);

/* The next entry to fetch, within the window.  *path stays valid until
 * ra_plan_free().  The caller then says how many bytes it stands for
 * (ra_plan_account; 0 for a directory or a file gone).  false when
 * nothing is to be fetched now. */
bool ra_plan_take(struct ra_plan *p, size_t *idx, const char **path);

/* Might ra_plan_take() hand out an entry now?  (true may still find only
 * entries read already; false is exact.)  For waking one fetcher, not
 * all of them, when the window moves. */
bool ra_plan_can_take(const struct ra_plan *p);

/* Is an open's move of the window worth waking a fetcher for?  When the
 * window has room for a batch of entries: an eighth of its files, at most
 * RA_PLAN_WAKE_FILES, or all that the plan has left.  Opens one by one then
 * wake a fetcher once per batch, not once per file: in an epoch served
 * from the cache every wake found a cached file and went back to sleep,
 * which made each open about 15 us slower on two cores.  The fetcher woken
 * takes the whole batch, waking the next while there is more. */
#define RA_PLAN_WAKE_FILES 16
bool ra_plan_wake_due(const struct ra_plan *p);
void ra_plan_account(struct ra_plan *p, size_t idx, uint64_t bytes);

/* How often the plan will still open path: its occurrences not consumed
 * at or after low, at most 2 (0: read already, or left behind); -1 when
 * path is not in the plan.  Changes nothing. */
int ra_plan_ahead(const struct ra_plan *p, const char *path);

/* Is the plan over (every entry consumed or abandoned)? */
bool ra_plan_done(const struct ra_plan *p);
void ra_plan_info(const struct ra_plan *p, struct ra_plan_info *out);

/* The mount's current plan, behind its lock.  The lock is a leaf: it is
 * taken after the fetchers' or the SSD tier's own locks, and nothing is
 * taken while it is held.  Object keys are the prefix (the mount's root
 * in the bucket) followed by the plan's paths. */
struct plan_slot {
	pthread_mutex_t lock;
	struct ra_plan *plan;      /* NULL: no plan */
	uint64_t gen;              /* plans set, ever: tells a plan from its successor */
	char *prefix;
};

/* 0, or -1 when memory ran out. */
int plan_slot_init(struct plan_slot *s, const char *prefix);
/* Frees the plan it holds. */
void plan_slot_release(struct plan_slot *s);

/* Lock the slot: its plan (NULL: none), and its generation in *gen when
 * gen is not NULL.  plan_slot_unlock() when done; nothing else may be
 * locked meanwhile. */
struct ra_plan *plan_slot_lock(struct plan_slot *s, uint64_t *gen);
void plan_slot_unlock(struct plan_slot *s);

/* Put p in the slot (NULL clears it) and return the plan it held, for
 * the caller to free. */
struct ra_plan *plan_slot_swap(struct plan_slot *s, struct ra_plan *p);

/* What the plan says of object key: read later in it (SOON), not (DONE),
 * or nothing (UNKNOWN: no plan, or not in it).  For a chunk being stored
 * (storing true), "later" means after the read its copy was fetched for:
 * the next open of it, or the one a fetch ahead of the plan serves.  A
 * plan that is over still tells what its epoch read, until the next. */
enum plan_future { PLAN_UNKNOWN, PLAN_SOON, PLAN_DONE };
enum plan_future plan_slot_future(struct plan_slot *s, const char *key, bool storing);

#endif
