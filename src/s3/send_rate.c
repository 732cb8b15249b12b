/* send_rate.c - the client's send rate after a throttle (see send_rate.h).
 *
 * The measured rate counts answers per half second and smooths them
 * (SMOOTH of the newest half second).  At a throttle the rate in use (the
 * measured one, or the bucket's own fill rate when that is lower) becomes
 * max_rate and the fill rate drops to BETA of it; after that, with t the
 * seconds since the cut and K the time the curve takes to climb back to
 * max_rate,
 *     rate(t) = SCALE * (t - K)^3 + max_rate,   K = cbrt(max_rate * (1 - BETA) / SCALE)
 * which is flat near max_rate (where the store pushed back last) and steep
 * away from it; capped at twice the measured rate, so that the allowance
 * never runs far ahead of what the client actually sends.
 */
#include "s3/send_rate.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SMOOTH 0.8
#define BUCKET_S 0.5
#define OFF_AFTER_S 60.0    /* no throttle for this long: the limiter is off */

struct send_rate {
	pthread_mutex_t lock;
	bool pace;                  /* may turn on at all */
	bool on;
	double fill;                /* tokens per second */
	double tokens;              /* below 0: reserved by waiting callers */
	double cap;                 /* tokens saved at most */
	double refilled;            /* when tokens were last brought up to date */
	double measured;            /* answered requests per second, smoothed */
	double bucket;              /* start of the half second being counted; < 0: none yet */
	unsigned bucket_n;
	double max_rate;            /* the rate cut at the last throttle */
	double cut_at;              /* when */
	uint64_t throttles, waits;
};

struct send_rate *send_rate_new(bool pace)
{
	struct send_rate *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->pace = pace;
	r->bucket = -1;
	return r;
}

void send_rate_free(struct send_rate *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	free(r);
}

bool send_rate_is_throttle(int http_status, const char *code)
{
	if (http_status == 429)
		return true;
	/* S3's 503s are SlowDowns; a HEAD's has no body to say so */
	return http_status == 503 &&
	       (!code || !*code || strcmp(code, "SlowDown") == 0 ||
		strcmp(code, "Throttling") == 0 || strcmp(code, "RequestLimitExceeded") == 0);
}

/* Tokens up to date at now (lock held). */
static void refill(struct send_rate *r, double now)
{
	if (now > r->refilled) {
		r->tokens += (now - r->refilled) * r->fill;
		if (r->tokens > r->cap)
			r->tokens = r->cap;
		r->refilled = now;
	}
}

double send_rate_take(struct send_rate *r, double now)
{
	double wait = 0;

	pthread_mutex_lock(&r->lock);
	if (r->on) {
		refill(r, now);
		r->tokens -= 1;
		if (r->tokens < 0) {
			/* bounded: a wait reserved at a low rate is not slept in
			 * full when the rate has grown since; the attempt then
			 * meets the store's answer like any other */
			wait = fmin(-r->tokens / r->fill, SEND_RATE_WAIT_MAX);
			r->waits++;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return wait;
}

/* Count an answer at now into the measured rate (lock held). */
static void measure(struct send_rate *r, double now)
{
	double b = floor(now / BUCKET_S) * BUCKET_S;

	if (r->bucket < 0)
		r->bucket = b;
	r->bucket_n++;
	if (b > r->bucket) {
		double rate = r->bucket_n / (b - r->bucket);

		r->measured = SMOOTH * rate + (1 - SMOOTH) * r->measured;
		r->bucket_n = 0;
		r->bucket = b;
	}
}

void send_rate_answer(struct send_rate *r, double sent_at, double now, bool throttled)
{
	double rate, k;

	pthread_mutex_lock(&r->lock);
	measure(r, now);
	if (throttled)
		r->throttles++;
	if (!r->pace) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	if (throttled && !(r->on && sent_at < r->cut_at)) {
		/* the half second being counted tells of a recent burst (and is
		 * all there is before the first one is complete) */
		double partial = r->bucket_n / fmax(now - r->bucket, BUCKET_S / 5);
		double measured = fmax(r->measured, partial);
		double in_use = r->on && r->fill < measured ? r->fill : measured;

		if (in_use < SEND_RATE_MIN)
			in_use = SEND_RATE_MIN;
		if (!r->on) {
			r->on = true;
			r->refilled = now;
			r->tokens = 0;
		}
		r->max_rate = in_use;
		r->cut_at = now;
		rate = in_use * SEND_RATE_BETA;
	} else if (!throttled && r->on && now - r->cut_at > OFF_AFTER_S) {
		r->on = false;      /* the store has been content for a while */
		pthread_mutex_unlock(&r->lock);
		return;
	} else if (r->on) {
		double partial = r->bucket_n / fmax(now - r->bucket, BUCKET_S / 5);

		k = cbrt(r->max_rate * (1 - SEND_RATE_BETA) / SEND_RATE_SCALE);
		rate = SEND_RATE_SCALE * pow(now - r->cut_at - k, 3) + r->max_rate;
		/* twice what is sent, the half second being counted included
		 * (before the first is complete, measured is 0) */
		if (rate > 2 * fmax(r->measured, partial))
			rate = 2 * fmax(r->measured, partial);
	} else {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	if (rate < SEND_RATE_MIN)
		rate = SEND_RATE_MIN;
	refill(r, now);
	r->fill = rate;
	r->cap = rate > 1 ? rate : 1;
	if (r->tokens > r->cap)
		r->tokens = r->cap;
	pthread_mutex_unlock(&r->lock);
}

void send_rate_stats(struct send_rate *r, struct send_rate_stats *out)
{
	pthread_mutex_lock(&r->lock);
	out->rate = r->on ? r->fill : 0;
	out->throttles = r->throttles;
	out->waits = r->waits;
	pthread_mutex_unlock(&r->lock);
}
