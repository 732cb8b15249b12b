/* test_send_rate.c - the send rate after a throttle, on a clock the test
 * moves: off until a throttle; a cut to 0.7 of the rate in use; waits that
 * space requests at the fill rate; one cut for a burst of throttles sent
 * at the old rate; growth back along the curve, capped by what is sent;
 * off again after a quiet minute. */
#include <criterion/criterion.h>
#include <math.h>

#include "s3/send_rate.h"

/* Answer n requests evenly over [t, t + secs), none throttled; the time
 * after them. */
static double steady(struct send_rate *r, double t, double secs, int n)
{
	for (int i = 0; i < n; i++) {
		double at = t + secs * i / n;

		send_rate_answer(r, at, at, false);
	}
	return t + secs;
}

static double rate_of(struct send_rate *r)
{
	struct send_rate_stats s;

	send_rate_stats(r, &s);
	return s.rate;
}

Test(send_rate, off_until_the_first_throttle)
{
	struct send_rate *r = send_rate_new(true);

	cr_assert_not_null(r);
	steady(r, 0, 10, 1000);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(send_rate_take(r, 10.0), 0, "a wait before any throttle");
	cr_assert_eq(rate_of(r), 0);
	send_rate_free(r);
}

Test(send_rate, a_throttle_cuts_to_seventy_percent_of_the_measured_rate)
{
	struct send_rate *r = send_rate_new(true);
	struct send_rate_stats s;
	double t = steady(r, 0, 10, 1000);   /* 100 requests/s */

	send_rate_answer(r, t, t, true);
	send_rate_stats(r, &s);
	cr_assert_eq(s.throttles, 1);
	cr_assert(fabs(s.rate - 70.0) < 7.0, "rate %.1f after a throttle at 100/s", s.rate);
	send_rate_free(r);
}

Test(send_rate, waits_space_requests_at_the_fill_rate)
{
	struct send_rate *r = send_rate_new(true);
	double t = steady(r, 0, 10, 1000), rate, prev = 0;

	send_rate_answer(r, t, t, true);
	rate = rate_of(r);
	/* 50 requests at once: the k-th waits about k / rate */
	for (int k = 1; k <= 50; k++) {
		double w = send_rate_take(r, t);

		cr_assert_geq(w, prev, "waits grow with the queue");
		cr_assert(fabs(w - k / rate) < 1.5 / rate, "request %d waits %.3f s at %.1f/s", k, w,
			  rate);
		prev = w;
	}
	/* once the time has passed, tokens are there again */
	cr_assert_eq(send_rate_take(r, t + 60.0 / rate), 0);
	send_rate_free(r);
}

Test(send_rate, a_burst_of_throttles_sent_before_the_cut_is_one_cut)
{
	struct send_rate *r = send_rate_new(true);
	double t = steady(r, 0, 10, 1000), after_one;

	send_rate_answer(r, t - 0.05, t, true);
	after_one = rate_of(r);
	for (int i = 1; i < 64; i++)   /* sent at the old rate, answered just after */
		send_rate_answer(r, t - 0.05, t + 0.001 * i, true);
	cr_assert(rate_of(r) >= after_one * 0.95, "64 throttles of one burst cut to %.1f from %.1f",
		  rate_of(r), after_one);
	/* a throttle of a request sent after the cut cuts again */
	send_rate_answer(r, t + 0.2, t + 0.3, true);
	cr_assert_lt(rate_of(r), after_one * 0.8);
	send_rate_free(r);
}

Test(send_rate, it_grows_back_along_the_curve_and_is_capped_by_what_is_sent)
{
	struct send_rate *r = send_rate_new(true);
	double t = steady(r, 0, 10, 1000), cut, k;

	send_rate_answer(r, t, t, true);
	cut = rate_of(r);
	k = cbrt(100.0 * (1 - SEND_RATE_BETA) / SEND_RATE_SCALE);   /* about 4.2 s */
	/* the client keeps sending 100/s: the curve passes the old rate at k */
	t = steady(r, t, k * 0.5, (int)(50 * k));
	cr_assert_gt(rate_of(r), cut, "growing");
	cr_assert_lt(rate_of(r), 100.0, "below the old rate before k");
	t = steady(r, t, k, (int)(100 * k));
	cr_assert_gt(rate_of(r), 100.0, "past the old rate after k");
	/* a client sending 10/s is never allowed more than twice that */
	t = steady(r, t, 5, 50);
	cr_assert_leq(rate_of(r), 2 * 10.0 * 1.3, "allowance %.1f for a client sending 10/s",
		      rate_of(r));
	send_rate_free(r);
}

Test(send_rate, never_below_the_floor_and_off_after_a_quiet_minute)
{
	struct send_rate *r = send_rate_new(true);
	double t = 0;

	for (int i = 0; i < 200; i++, t += 0.01)   /* throttles from the start */
		send_rate_answer(r, t, t, true);
	cr_assert_geq(rate_of(r), SEND_RATE_MIN);
	cr_assert(isfinite(send_rate_take(r, t)));
	t = steady(r, t, 70, 700);
	cr_assert_eq(rate_of(r), 0, "still limited after a minute without a throttle");
	cr_assert_eq(send_rate_take(r, t), 0);
	send_rate_free(r);
}

/* A throttle in the first half second (nothing measured yet) and an
 * answer right after: the rate stays near the cut, not at the floor; and
 * no wait is longer than SEND_RATE_WAIT_MAX. */
Test(send_rate, early_throttle_keeps_its_rate_and_waits_are_bounded)
{
	struct send_rate *r = send_rate_new(true);
	double cut, w = 0;

	for (int i = 0; i < 20; i++)
		send_rate_answer(r, 0.01 * i, 0.01 * i, false);
	send_rate_answer(r, 0.2, 0.2, true);
	cut = rate_of(r);
	cr_assert_gt(cut, 10, "cut to %.1f from 20 answers in 0.2 s", cut);
	send_rate_answer(r, 0.21, 0.22, false);
	cr_assert_gt(rate_of(r), cut / 2, "one answer after the cut dropped it to %.1f", rate_of(r));
	for (int i = 0; i < 1000; i++)
		w = send_rate_take(r, 0.25);
	cr_assert_leq(w, SEND_RATE_WAIT_MAX);
	send_rate_free(r);
}

Test(send_rate, without_pacing_it_only_counts)
{
	struct send_rate *r = send_rate_new(false);
	struct send_rate_stats s;
	double t = steady(r, 0, 10, 1000);

	for (int i = 0; i < 10; i++)
		send_rate_answer(r, t + i, t + i, true);
	send_rate_stats(r, &s);
	cr_assert_eq(s.throttles, 10);
	cr_assert_eq(s.rate, 0);
	cr_assert_eq(send_rate_take(r, t + 10), 0);
	send_rate_free(r);
}

Test(send_rate, throttle_statuses)
{
	cr_assert(send_rate_is_throttle(503, "SlowDown"));
	cr_assert(send_rate_is_throttle(429, ""));
	cr_assert(send_rate_is_throttle(429, NULL));
	cr_assert(send_rate_is_throttle(503, ""), "a HEAD's 503 has no code");
	cr_assert(!send_rate_is_throttle(503, "ServiceUnavailable"));
	cr_assert(!send_rate_is_throttle(500, "SlowDown"));
	cr_assert(!send_rate_is_throttle(404, "NoSuchKey"));
}
