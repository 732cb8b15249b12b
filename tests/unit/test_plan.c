/* Unit tests for src/fs/plan: what a plan hands out, how it follows the
 * reader (out of order, skipping ahead, repeats), its bounds. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "evict/plan.h"

static struct ra_plan *plan_of(size_t n, size_t wfiles, uint64_t wbytes)
{
	struct ra_plan *p = ra_plan_new();
	char name[32];

	cr_assert(p);
	for (size_t i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "d/f%05zu", i);
		cr_assert_eq(ra_plan_add(p, name, (size_t)len), 0);
	}
	cr_assert_eq(ra_plan_seal(p, wfiles, wbytes), 0);
	return p;
}

static void open_path(struct ra_plan *p, size_t i, size_t want_idx)
{
	char name[32];
	size_t idx = SIZE_MAX;

	snprintf(name, sizeof(name), "d/f%05zu", i);
	cr_assert(ra_plan_on_open(p, name, &idx), "%s not found", name);
	cr_assert_eq(idx, want_idx);
}

/* Take everything the window allows now, accounting size bytes each. */
static size_t take_all(struct ra_plan *p, uint64_t size, size_t *first, size_t *last)
{
	size_t idx, n = 0;
	const char *path;

	while (ra_plan_take(p, &idx, &path)) {
		char want[32];

		snprintf(want, sizeof(want), "d/f%05zu", idx);
		cr_assert_str_eq(path, want);
		if (n == 0 && first)
			*first = idx;
		if (last)
			*last = idx;
		ra_plan_account(p, idx, size);
		n++;
	}
	return n;
}

Test(plan, hands_out_a_window_in_plan_order_and_rolls_with_the_reader)
{
	struct ra_plan *p = plan_of(100, 10, UINT64_MAX);
	size_t first = 0, last = 0;

	cr_expect_eq(take_all(p, 1, &first, &last), 10);
	cr_expect_eq(first, 0);
	cr_expect_eq(last, 9);
	open_path(p, 0, 0);
	open_path(p, 1, 1);
	cr_expect_eq(take_all(p, 1, &first, &last), 2, "two read: two more");
	cr_expect_eq(first, 10);
	cr_expect_eq(last, 11);
	/* out of order (two workers): the window is anchored at the first unread */
	open_path(p, 5, 5);
	cr_expect_eq(take_all(p, 1, NULL, NULL), 0);
	open_path(p, 2, 2);
	cr_expect_eq(take_all(p, 1, NULL, &last), 1);
	cr_expect_eq(last, 12);
	ra_plan_free(p);
}

Test(plan, the_byte_window_bounds_what_is_fetched_and_unread)
{
	struct ra_plan *p = plan_of(100, 50, 1000);
	struct ra_plan_info in;

	cr_expect_eq(take_all(p, 300, NULL, NULL), 4, "300+300+300 < 1000, the 4th crosses it");
	ra_plan_info(p, &in);
	cr_expect_eq(in.ahead_bytes, 1200);
	open_path(p, 0, 0);
	ra_plan_info(p, &in);
	cr_expect_eq(in.ahead_bytes, 900);
	cr_expect_eq(take_all(p, 300, NULL, NULL), 1);
	ra_plan_free(p);
}

Test(plan, a_reader_ahead_of_the_fetcher_skips_it_forward)
{
	struct ra_plan *p = plan_of(1000, 10, UINT64_MAX);
	struct ra_plan_info in;
	size_t first = 0;

	cr_expect_eq(take_all(p, 1, NULL, NULL), 10);
	open_path(p, 500, 500);     /* a job resumed mid-epoch */
	ra_plan_info(p, &in);
	cr_expect_eq(in.skips, 1);
	cr_expect_eq(in.low, 501);
	cr_expect_eq(in.ahead_bytes, 0, "what was fetched before the jump is not counted");
	cr_expect_eq(take_all(p, 1, &first, NULL), 10);
	cr_expect_eq(first, 501);
	ra_plan_free(p);
}

Test(plan, entries_left_far_behind_are_abandoned)
{
	struct ra_plan *p = plan_of(100, 10, UINT64_MAX);
	struct ra_plan_info in;

	/* entry 0 is never opened; the reader goes on one by one */
	for (size_t i = 1; i <= 30; i++) {
		take_all(p, 1, NULL, NULL);
		open_path(p, i, i);
	}
	ra_plan_info(p, &in);
	cr_expect_eq(in.skips, 0);
	cr_expect_eq(in.low, 31, "entry 0 was left behind: low follows the reader");
	cr_expect_eq(in.next, 40, "the window [30, 40) was handed out before 30 was read");
	size_t first = 0;
	cr_expect_eq(take_all(p, 1, &first, NULL), 1);
	cr_expect_eq(first, 40);
	ra_plan_free(p);
}

Test(plan, a_repeated_path_is_consumed_one_occurrence_at_a_time)
{
	struct ra_plan *p = ra_plan_new();
	size_t idx;

	cr_assert_eq(ra_plan_add(p, "a", 1), 0);
	cr_assert_eq(ra_plan_add(p, "b", 1), 0);
	cr_assert_eq(ra_plan_add(p, "a", 1), 0);
	cr_assert_eq(ra_plan_seal(p, 10, UINT64_MAX), 0);
	cr_expect(ra_plan_on_open(p, "a", &idx));
	cr_expect_eq(idx, 0);
	cr_expect(ra_plan_on_open(p, "a", &idx));
	cr_expect_eq(idx, 2);
	cr_expect(!ra_plan_on_open(p, "a", &idx), "both occurrences read");
	cr_expect(!ra_plan_on_open(p, "c", &idx), "not in the plan");
	cr_expect(!ra_plan_done(p));
	cr_expect(ra_plan_on_open(p, "b", &idx));
	cr_expect(ra_plan_done(p));
	cr_expect(!ra_plan_take(p, &idx, &(const char *){ NULL }));
	ra_plan_free(p);
}

Test(plan, consumed_entries_are_not_handed_out)
{
	struct ra_plan *p = plan_of(20, 20, UINT64_MAX);
	size_t first = 0;

	open_path(p, 0, 0);
	open_path(p, 1, 1);
	open_path(p, 3, 3);
	cr_expect_eq(take_all(p, 1, &first, NULL), 17);
	cr_expect_eq(first, 2);
	ra_plan_free(p);
}

Test(plan, bad_paths_and_bounds_are_refused)
{
	struct ra_plan *p = ra_plan_new();
	char big[PLAN_PATH_MAX + 1];

	memset(big, 'x', sizeof(big));
	cr_expect_eq(ra_plan_add(p, "", 0), -1);
	cr_expect_eq(ra_plan_add(p, "a\0b", 3), -1);
	cr_expect_eq(ra_plan_add(p, big, sizeof(big)), -1);
	cr_expect_eq(ra_plan_add(p, big, PLAN_PATH_MAX), 0);
	cr_expect_eq(ra_plan_entries(p), 1);
	cr_assert_eq(ra_plan_seal(p, 1, 1), 0);
	cr_expect_eq(ra_plan_add(p, "a", 1), -1, "sealed");
	ra_plan_free(p);
}

Test(plan, an_empty_plan_is_done_and_hands_out_nothing)
{
	struct ra_plan *p = ra_plan_new();
	size_t idx;
	const char *path;

	cr_assert_eq(ra_plan_seal(p, 8, 100), 0);
	cr_expect(ra_plan_done(p));
	cr_expect(!ra_plan_take(p, &idx, &path));
	cr_expect(!ra_plan_on_open(p, "a", &idx));
	ra_plan_free(p);
}

Test(plan, a_large_shuffled_plan_is_followed_to_its_end)
{
	enum { N = 200000 };
	struct ra_plan *p = plan_of(N, 64, UINT64_MAX);
	size_t handed = 0;

	for (size_t i = 0; i < N; i++) {
		handed += take_all(p, 1, NULL, NULL);
		open_path(p, i, i);
	}
	cr_expect_eq(handed, N, "every entry fetched once ahead of its read");
	cr_expect(ra_plan_done(p));
	ra_plan_free(p);
}

Test(plan, ahead_counts_the_opens_still_to_come)
{
	struct ra_plan *p = ra_plan_new();
	size_t idx;

	cr_assert_eq(ra_plan_add(p, "a", 1), 0);
	cr_assert_eq(ra_plan_add(p, "b", 1), 0);
	cr_assert_eq(ra_plan_add(p, "a", 1), 0);
	cr_assert_eq(ra_plan_seal(p, 10, UINT64_MAX), 0);
	cr_expect_eq(ra_plan_ahead(p, "a"), 2);
	cr_expect_eq(ra_plan_ahead(p, "b"), 1);
	cr_expect_eq(ra_plan_ahead(p, "zz"), -1);
	cr_expect(ra_plan_on_open(p, "a", &idx));
	cr_expect_eq(ra_plan_ahead(p, "a"), 1, "read again at 2");
	cr_expect(ra_plan_on_open(p, "b", &idx));
	cr_expect_eq(ra_plan_ahead(p, "b"), 0);
	cr_expect(ra_plan_on_open(p, "a", &idx));
	cr_expect_eq(ra_plan_ahead(p, "a"), 0);
	ra_plan_free(p);
}

Test(plan, an_entry_skipped_over_is_not_ahead)
{
	struct ra_plan *p = plan_of(100, 4, UINT64_MAX);

	open_path(p, 50, 50);    /* skipped ahead past 0..49 */
	cr_expect_eq(ra_plan_ahead(p, "d/f00010"), 0);
	cr_expect_eq(ra_plan_ahead(p, "d/f00060"), 1);
	ra_plan_free(p);
}

/* wake_due: an open wakes a fetcher once the window has room for a batch
 * (an eighth of its files, at most 16), or for whatever the plan has
 * left; never when take would hand out nothing. */
Test(plan, wake_due_waits_for_a_batch_of_room)
{
	struct ra_plan *p = plan_of(300, 256, UINT64_MAX), *q;

	cr_expect(ra_plan_wake_due(p), "a new plan: the whole window");
	cr_expect_eq(take_all(p, 0, NULL, NULL), 256);
	cr_expect(!ra_plan_wake_due(p), "window full");
	for (size_t i = 0; i < 15; i++) {
		open_path(p, i, i);
		cr_expect(ra_plan_can_take(p), "open %zu: room for one", i);
		cr_expect(!ra_plan_wake_due(p), "open %zu: %zu of 16 free", i, i + 1);
	}
	open_path(p, 15, 15);
	cr_expect(ra_plan_wake_due(p), "16 free: a batch");
	cr_expect_eq(take_all(p, 0, NULL, NULL), 16);
	cr_expect(!ra_plan_wake_due(p));
	ra_plan_free(p);

	/* a small window (16 files: batches of 2); at the plan's end, one */
	q = plan_of(39, 16, UINT64_MAX);
	cr_expect_eq(take_all(q, 0, NULL, NULL), 16);
	open_path(q, 0, 0);
	cr_expect(!ra_plan_wake_due(q), "1 free of a batch of 2");
	open_path(q, 1, 1);
	cr_expect(ra_plan_wake_due(q));
	for (size_t i = 2; i < 22; i++)
		open_path(q, i, i);
	/* 16-21 were opened before anyone took them: 22 to 37 */
	cr_expect_eq(take_all(q, 0, NULL, NULL), 16);
	open_path(q, 22, 22);
	cr_expect(ra_plan_can_take(q));
	cr_expect(ra_plan_wake_due(q), "entry 38, the last: due though alone");
	cr_expect_eq(take_all(q, 0, NULL, NULL), 1);
	cr_expect(!ra_plan_wake_due(q), "every entry handed out");
	ra_plan_free(q);
}

/* can_take says when a fetcher is worth waking: false exactly when take
 * would hand out nothing (window full by files or bytes, plan over). */
Test(plan, can_take_agrees_with_take)
{
	struct ra_plan *p = plan_of(6, 3, 1000);

	cr_expect(ra_plan_can_take(p));
	cr_expect_eq(take_all(p, 100, NULL, NULL), 3);
	cr_expect(!ra_plan_can_take(p), "three files: the window is full");
	open_path(p, 0, 0);
	cr_expect(ra_plan_can_take(p), "the reader moved: one more");
	cr_expect_eq(take_all(p, 600, NULL, NULL), 1);
	cr_expect(!ra_plan_can_take(p), "200 + 600 bytes ahead, 3 files: full");
	open_path(p, 1, 1);
	open_path(p, 2, 2);
	open_path(p, 3, 3);
	cr_expect(ra_plan_can_take(p));
	cr_expect_eq(take_all(p, 100, NULL, NULL), 2);
	cr_expect(!ra_plan_can_take(p), "every entry handed out");
	ra_plan_free(p);
}
