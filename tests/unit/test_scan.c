/* Unit tests for src/fs/scan: when a directory scan starts, what it hands
 * out, its budget, idleness and epochs. */
#include <criterion/criterion.h>

#include "fs/scan.h"

#define S 1000000ull   /* a second in us */

Test(scan, starts_after_distinct_opens_in_any_order)
{
	struct ra_scan s;
	bool opened[100] = { false };
	size_t idx;

	cr_assert_eq(ra_scan_init(&s, 100), 0);
	for (size_t i = 0; i < SCAN_TRIGGER - 1; i++) {
		cr_expect(!ra_scan_on_open(&s, (i * 37) % 100, S));
		opened[(i * 37) % 100] = true;
	}
	opened[99] = opened[98] = true;
	cr_expect(!ra_scan_take(&s, S, UINT64_MAX, &idx), "active before the trigger");
	cr_expect(ra_scan_on_open(&s, 99, S), "the trigger's open activates");
	cr_expect(!ra_scan_on_open(&s, 98, S), "only once");
	/* it hands out every other entry once, never an opened one */
	size_t got = 0;
	while (ra_scan_take(&s, S, UINT64_MAX, &idx)) {
		cr_expect(!opened[idx], "handed out %zu, opened already", idx);
		opened[idx] = true;   /* and never twice */
		got++;
	}
	cr_expect_eq(got, 100 - (SCAN_TRIGGER + 1));
	ra_scan_release(&s);
}

Test(scan, a_job_rereading_a_few_files_is_not_a_scan)
{
	struct ra_scan s;
	size_t idx;

	cr_assert_eq(ra_scan_init(&s, 100), 0);
	for (int round = 0; round < 10; round++)
		for (size_t i = 0; i < 5; i++)
			ra_scan_on_open(&s, i, S);
	for (size_t i = 5; i < 5 + SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_expect(!ra_scan_take(&s, S, UINT64_MAX, &idx), "70 opens of 21 files started a scan");
	ra_scan_release(&s);
}

Test(scan, budget_idleness_and_epochs)
{
	struct ra_scan s;
	size_t idx;

	cr_assert_eq(ra_scan_init(&s, 40), 0);
	for (size_t i = 0; i < SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_assert(ra_scan_take(&s, S, 100, &idx));
	ra_scan_account(&s, 60);
	cr_assert(ra_scan_take(&s, S, 100, &idx));
	ra_scan_account(&s, 60);
	cr_expect(!ra_scan_take(&s, S, 100, &idx), "past the budget");
	cr_expect(!ra_scan_take(&s, S + SCAN_IDLE_US + 1, UINT64_MAX, &idx), "idle job still fed");
	cr_expect(ra_scan_take(&s, S + SCAN_IDLE_US, UINT64_MAX, &idx));
	/* every entry opened: a new epoch, all of them wanted again */
	for (size_t i = 0; i < 40; i++)
		ra_scan_on_open(&s, i, 2 * S);
	cr_expect_eq(s.epochs, 1);
	cr_expect_eq(s.n_opened, 0);
	cr_expect_eq(s.bytes_taken, 0);
	size_t got = 0;
	while (ra_scan_take(&s, 2 * S, UINT64_MAX, &idx))
		got++;
	cr_expect_eq(got, 40, "the new epoch hands out everything again");
	ra_scan_release(&s);
}

Test(scan, bounds)
{
	struct ra_scan s;

	cr_expect_eq(ra_scan_init(&s, 0), -1);
	cr_expect_eq(ra_scan_init(&s, SCAN_ENTRIES_MAX + 1), -1);
	cr_expect(!ra_scan_on_open(&s, 5, S), "an empty scan takes no open");
}

/* untake hands an entry back, first, with its bytes; consumed takes an
 * opened entry's bytes off the budget (a window, not an epoch's total);
 * neither touches an entry not taken. */
Test(scan, untake_and_consumed)
{
	struct ra_scan s;
	size_t a, b, c;

	cr_assert_eq(ra_scan_init(&s, 40), 0);
	for (size_t i = 0; i < SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_assert(ra_scan_take(&s, S, 100, &a));
	ra_scan_account(&s, 60);
	cr_assert(ra_scan_take(&s, S, 100, &b));
	ra_scan_account(&s, 60);
	cr_expect(!ra_scan_take(&s, S, 100, &c), "past the budget");
	/* a's fetch found no room: handed back, and handed out first */
	ra_scan_untake(&s, a, 60);
	cr_expect_eq(s.bytes_taken, 60);
	cr_assert(ra_scan_take(&s, S, 100, &c));
	cr_expect_eq(c, a, "the entry handed back comes first");
	ra_scan_account(&s, 60);
	ra_scan_untake(&s, 39, 60);     /* not taken: nothing */
	cr_expect_eq(s.bytes_taken, 120);
	/* b is opened: its bytes leave the budget, room for one more */
	ra_scan_consumed(&s, b, 60);
	ra_scan_on_open(&s, b, S);
	cr_expect_eq(s.bytes_taken, 60);
	ra_scan_consumed(&s, b, 60);    /* opened already: nothing */
	ra_scan_consumed(&s, 38, 60);   /* not taken: nothing */
	cr_expect_eq(s.bytes_taken, 60);
	cr_expect(ra_scan_take(&s, S, 100, &c));
	ra_scan_release(&s);
}

/* An entry taken but found in the cache already (or whose fetch failed)
 * leaves the budget at once, and its open later takes nothing off again. */
Test(scan, not_fetched_leaves_the_budget_once)
{
	struct ra_scan s;
	size_t a, b, c;

	cr_assert_eq(ra_scan_init(&s, 40), 0);
	for (size_t i = 0; i < SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_assert(ra_scan_take(&s, S, 100, &a));
	ra_scan_account(&s, 60);
	cr_assert(ra_scan_take(&s, S, 100, &b));
	ra_scan_account(&s, 60);
	cr_expect(!ra_scan_take(&s, S, 100, &c), "past the budget");
	ra_scan_not_fetched(&s, a, 60);
	cr_expect_eq(s.bytes_taken, 60, "a's bytes left the budget");
	ra_scan_not_fetched(&s, a, 60);
	cr_expect_eq(s.bytes_taken, 60, "not twice");
	cr_expect(ra_scan_take(&s, S, 100, &c), "room for another");
	ra_scan_account(&s, 60);
	/* a is opened: nothing more leaves; b is opened: its bytes leave */
	ra_scan_consumed(&s, a, 60);
	ra_scan_on_open(&s, a, S);
	cr_expect_eq(s.bytes_taken, 120);
	ra_scan_consumed(&s, b, 60);
	ra_scan_on_open(&s, b, S);
	cr_expect_eq(s.bytes_taken, 60);
	ra_scan_not_fetched(&s, 39, 60);   /* not taken: nothing */
	ra_scan_not_fetched(&s, b, 60);    /* opened: nothing */
	cr_expect_eq(s.bytes_taken, 60);
	ra_scan_release(&s);
}

/* Ten class folders read in one shuffled order: no folder has 16 opens of
 * its own after 20 opens, but the family does, and every folder the job
 * opened in becomes active; one it never opened in stays out.  A family
 * re-reading a few files is not a scan, nor is one folder alone. */
Test(scan, sibling_folders_read_by_one_job_start_together)
{
	enum { DIRS = 10, FILES = 50 };
	struct ra_scan s[DIRS + 1];
	const struct ra_scan *m[DIRS + 1];
	size_t idx;

	for (size_t d = 0; d <= DIRS; d++) {
		cr_assert_eq(ra_scan_init(&s[d], FILES), 0);
		m[d] = &s[d];
	}
	for (size_t i = 0; i < SCAN_TRIGGER + 4; i++)   /* 2 opens in each of 10 */
		cr_expect(!ra_scan_on_open(&s[i % DIRS], i / DIRS, S));
	cr_expect(!ra_scan_family_due(m, 1, S), "one folder alone");
	cr_expect(ra_scan_family_due(m, DIRS + 1, S));
	for (size_t d = 0; d < DIRS; d++) {
		cr_expect(ra_scan_activate(&s[d], S), "folder %zu", d);
		cr_expect(!ra_scan_activate(&s[d], S), "only once");
		cr_expect(ra_scan_take(&s[d], S, UINT64_MAX, &idx), "folder %zu hands out", d);
	}
	cr_expect(!ra_scan_activate(&s[DIRS], S), "a folder the job never opened in");
	cr_expect(!ra_scan_take(&s[DIRS], S, UINT64_MAX, &idx));
	for (size_t d = 0; d <= DIRS; d++)
		ra_scan_release(&s[d]);

	/* the same opens, each file opened three times: a job re-reading */
	for (size_t d = 0; d < DIRS; d++)
		cr_assert_eq(ra_scan_init(&s[d], FILES), 0);
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < SCAN_TRIGGER + 4; i++)
			ra_scan_on_open(&s[i % DIRS], i / DIRS, S);
	cr_expect(!ra_scan_family_due(m, DIRS, S), "60 opens of 20 files");
	for (size_t d = 0; d < DIRS; d++)
		ra_scan_release(&s[d]);
}

/* Opens long past are no job's now: a folder read from an hour ago and a
 * sibling opened in now are no family, and the old one is not started.
 * A folder opened in again wakes with none of its old opens counted: the
 * two are a family once 16 files were opened between them since. */
Test(scan, a_sibling_idle_for_long_is_not_of_the_family)
{
	struct ra_scan s[2];
	const struct ra_scan *m[2] = { &s[0], &s[1] };
	uint64_t later = S + SCAN_IDLE_US + 1;

	for (size_t d = 0; d < 2; d++)
		cr_assert_eq(ra_scan_init(&s[d], 50), 0);
	for (size_t i = 0; i < SCAN_TRIGGER - 2; i++)
		cr_expect(!ra_scan_on_open(&s[0], i, S));
	cr_expect(!ra_scan_on_open(&s[1], 0, later));
	cr_expect(!ra_scan_family_due(m, 2, later), "14 opens long ago, 1 now");
	cr_expect(!ra_scan_activate(&s[0], later), "idle since");
	cr_expect(!ra_scan_on_open(&s[0], SCAN_TRIGGER - 2, later));
	cr_expect(!ra_scan_family_due(m, 2, later), "2 opens since the folder woke");
	for (size_t i = 1; i < SCAN_TRIGGER / 2; i++) {
		ra_scan_on_open(&s[0], SCAN_TRIGGER - 2 + i, later);
		ra_scan_on_open(&s[1], i, later);
	}
	cr_expect(ra_scan_family_due(m, 2, later), "16 files opened between them now");
	cr_expect(ra_scan_activate(&s[0], later));
	cr_expect(ra_scan_activate(&s[1], later));
	for (size_t d = 0; d < 2; d++)
		ra_scan_release(&s[d]);
}

/* A scan idle for SCAN_IDLE_US and opened in again wakes inactive: one
 * file read in a directory scanned long ago fetches nothing; the files
 * opened this epoch stay marked, and 16 new ones start it again. */
Test(scan, an_open_after_idle_wakes_the_scan_inactive)
{
	struct ra_scan s;
	uint64_t later = S + SCAN_IDLE_US + 1;
	size_t idx;

	cr_assert_eq(ra_scan_init(&s, 100), 0);
	for (size_t i = 0; i < SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_assert(s.active);
	cr_expect(!ra_scan_on_open(&s, SCAN_TRIGGER, later));
	cr_expect(!s.active, "one open after an idle hour");
	cr_expect(!ra_scan_take(&s, later, UINT64_MAX, &idx));
	cr_expect_eq(s.n_opened, SCAN_TRIGGER + 1, "the epoch's marks stay");
	for (size_t i = SCAN_TRIGGER + 1; i < 2 * SCAN_TRIGGER - 1; i++)
		cr_expect(!ra_scan_on_open(&s, i, later));
	cr_expect(ra_scan_on_open(&s, 2 * SCAN_TRIGGER - 1, later), "16 opens since it woke");
	cr_expect(ra_scan_take(&s, later, UINT64_MAX, &idx));
	cr_expect_geq(idx, 2 * SCAN_TRIGGER, "an opened file handed out: %zu", idx);
	ra_scan_release(&s);
}

/* A scan whose job stopped holds nothing against the budget every scan
 * shares (else one job stopped mid-epoch kept every other scan's room at
 * 0 for good), and when its job comes back it takes anew: the entries it
 * took then, not opened since, can be handed out again, and their bytes
 * are not held twice. */
Test(scan, an_idle_scan_holds_no_budget_and_wakes_taking_anew)
{
	struct ra_scan s;
	uint64_t later = S + SCAN_IDLE_US + 1;
	size_t idx, first, got = 0;

	cr_assert_eq(ra_scan_init(&s, 100), 0);
	for (size_t i = 0; i < SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, i, S);
	cr_assert(ra_scan_take(&s, S, UINT64_MAX, &first));
	ra_scan_account(&s, 1000);
	cr_assert(ra_scan_take(&s, S, UINT64_MAX, &idx));
	ra_scan_account(&s, 500);
	cr_expect_eq(ra_scan_holds(&s, S), 1500);
	cr_expect_eq(ra_scan_holds(&s, later), 0, "a stopped job's scan held the budget");
	/* the job comes back: 16 more distinct opens wake it again */
	for (size_t i = SCAN_TRIGGER; i < 2 * SCAN_TRIGGER; i++)
		ra_scan_on_open(&s, 50 + i, later);
	cr_expect_eq(ra_scan_holds(&s, later), 0, "bytes taken before the idle still held");
	ra_scan_untake(&s, first, 1000);   /* a fetch of then, done late: nothing to hand back */
	cr_expect_eq(s.bytes_taken, 0);
	while (ra_scan_take(&s, later, UINT64_MAX, &idx)) {
		got += idx == first;
		cr_expect(!ra_scan_opened(&s, idx), "handed out %zu, opened", idx);
	}
	cr_expect_eq(got, 1, "an entry taken before the idle and not opened was not handed out again");
	ra_scan_release(&s);
}
