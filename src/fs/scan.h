/* scan.h - recognising a job that consumes a directory in any order, and
 * what to fetch for it: pure decisions, no I/O (as readahead.h).
 *
 * A training loader's first epoch opens every file of its dataset once,
 * in a shuffled order: read-ahead by offset or listing order never fires,
 * and each sample pays a round trip.  But the set is known: the
 * directory's listing.  A scan (one per directory being consumed) counts
 * the distinct files opened; once SCAN_TRIGGER have been, and nearly all
 * opens were of files not opened before (a job reading each file once,
 * not one re-reading a few), the scan is active and hands out the
 * listing's other files, those not opened yet this epoch, to be fetched
 * in the background, up to a byte budget per epoch.  It stops handing
 * out when no file was opened for SCAN_IDLE_US (the job stopped), and a
 * new epoch begins when every file was opened: the marks are cleared.
 *
 * Bounds: a scan covers at most SCAN_ENTRIES_MAX entries (three bits each).
 * Not thread-safe: the caller holds its lock.
 */
#ifndef TIERFS_SCAN_H
#define TIERFS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCAN_TRIGGER 16                    /* distinct files opened before fetching others */
#define SCAN_IDLE_US (10ull * 1000 * 1000) /* no open for this long: the job stopped */
#define SCAN_ENTRIES_MAX (1u << 22)

struct ra_scan {
	uint8_t *opened, *taken;  /* bitmaps over the listing's entries */
	uint8_t *unfetched;       /* taken, fetched nothing: bytes not counted */
	size_t n;                 /* entries */
	size_t n_opened;          /* distinct files opened this epoch */
	/* since the scan last woke from idle (an open after SCAN_IDLE_US
	 * without one): opens of files not opened this epoch, and all opens;
	 * what tells a job reading each file once, now */
	size_t run_new, run_opens;
	size_t cursor;            /* where the next take looks first */
	size_t n_marked;          /* entries opened or taken: take() stops at n */
	bool active;
	uint64_t bytes_taken;     /* handed out this epoch, held against the budget */
	uint64_t last_open_us;
	uint64_t epochs;          /* epochs completed (every entry opened) */
	uint64_t wakes;           /* wakes from idle: what was taken before one is not held */
};

/* A scan over n entries: 0, or -1 when n is 0, beyond SCAN_ENTRIES_MAX
 * or memory ran out. */
int ra_scan_init(struct ra_scan *s, size_t n);
void ra_scan_release(struct ra_scan *s);

/* Entry idx was opened at now_us.  true when this open made the scan
 * active (time to wake the fetchers).  An open after SCAN_IDLE_US without
 * one wakes the scan inactive: what the epoch opened stays marked, but
 * the job must show itself again (one file read in a folder scanned long
 * ago fetches nothing), and what it took before is forgotten (marks and
 * bytes: the fetches of then are over, and a job's new run takes anew). */
bool ra_scan_on_open(struct ra_scan *s, size_t idx, uint64_t now_us);

/* Sibling directories consumed by one job (a dataset of class folders
 * read in one shuffled order): each sees too few opens of its own to be
 * recognised early (ten folders: some 130 opens before the first has 16),
 * while together they show the job at once.  true when the n scans of
 * directories with one parent, at least two of them opened in within
 * SCAN_IDLE_US of now_us, together have SCAN_TRIGGER distinct files
 * opened, nearly all once (the rule ra_scan_on_open applies to one
 * directory); a sibling idle longer is another job's, or none. */
bool ra_scan_family_due(const struct ra_scan *const *members, size_t n, uint64_t now_us);
/* Make s active, its family recognised: true when it was not and has a
 * file opened this epoch, within SCAN_IDLE_US of now_us (a sibling the
 * job has not touched stays out). */
bool ra_scan_activate(struct ra_scan *s, uint64_t now_us);

/* The next entry to fetch: not opened, not handed out this epoch, the
 * scan active and not idle at now_us, and fewer than budget bytes handed
 * out.  Marks it taken; the caller says how many bytes it stands for
 * (ra_scan_account) or skips it (a directory, an empty file).  false
 * when there is nothing to hand out now. */
bool ra_scan_take(struct ra_scan *s, uint64_t now_us, uint64_t budget, size_t *idx);
void ra_scan_account(struct ra_scan *s, uint64_t bytes);

/* Entry idx was opened this epoch (a fetch ahead of it is too late: its
 * reader has it, or fetches it itself). */
bool ra_scan_opened(const struct ra_scan *s, size_t idx);

/* The bytes s holds at now_us against the budget every scan shares: what
 * it took and has not opened yet, or 0 once idle (no open for
 * SCAN_IDLE_US: its job stopped, and its share would keep every other
 * scan's room at 0 for good). */
uint64_t ra_scan_holds(const struct ra_scan *s, uint64_t now_us);

/* Entry idx, taken and accounted bytes, is being opened (call before
 * ra_scan_on_open): its bytes no longer count against the budget, which
 * then bounds what is fetched and not yet opened rather than what an
 * epoch fetches.  For a scan into RAM, whose files leave RAM first once
 * read; nothing if idx is not taken or was opened already. */
void ra_scan_consumed(struct ra_scan *s, size_t idx, uint64_t bytes);

/* Entry idx, taken and accounted bytes, brought nothing into the cache:
 * it was there already (or its fetch failed).  Its bytes leave the budget
 * now, not at its open: a file the reader will open late must not hold
 * the budget that the files it opens sooner need.  Nothing if idx is not
 * taken, opened already, or not fetched already. */
void ra_scan_not_fetched(struct ra_scan *s, size_t idx, uint64_t bytes);

/* Entry idx, taken and accounted bytes, was not fetched after all (no
 * room for it yet): hand it out again, first.  Nothing if it is not
 * taken (a new epoch cleared the marks since). */
void ra_scan_untake(struct ra_scan *s, size_t idx, uint64_t bytes);

#endif
