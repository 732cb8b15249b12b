/* send_rate.h - how fast a client sends requests to a store that has told
 * it to slow down (S3's 503 SlowDown, a 429): a token bucket whose rate
 * follows a cubic curve, as the AWS SDKs' adaptive retry mode does.
 *
 * Off until the first throttle; from then on each request takes a token
 * first and waits when there is none.  A throttle cuts the rate to
 * SEND_RATE_BETA of what was being sent; answers that are not throttles
 * let it grow back along a cubic curve to that rate and past it, never
 * past twice the rate measured; a minute with no throttle turns it off.  Throttles of requests sent before the
 * last cut do not cut again (they were sent at the old rate: a burst of
 * them is one signal, not one per request).
 *
 * Times are seconds on a monotonic clock, passed in, so the rules can be
 * tested without sleeping.  Thread-safe: a mutex around a few numbers;
 * send_rate_take() reserves the caller's place in time and returns how
 * long to wait, which the caller sleeps outside the lock.
 */
#ifndef TIERFS_SEND_RATE_H
#define TIERFS_SEND_RATE_H

#include <stdbool.h>
#include <stdint.h>

#define SEND_RATE_BETA 0.7      /* the cut at a throttle */
#define SEND_RATE_SCALE 0.4     /* the cubic's scale (requests/s per s^3) */
#define SEND_RATE_MIN 1.0       /* requests/s: the rate never goes below */
#define SEND_RATE_WAIT_MAX 2.0  /* seconds one request waits for a token at most */

struct send_rate;

/* NULL when out of memory.  pace: take tokens once throttled (the
 * adaptive mode); without it the limiter only counts throttles and never
 * turns on. */
struct send_rate *send_rate_new(bool pace);
void send_rate_free(struct send_rate *r);   /* NULL is a no-op */

/* A request is about to be sent at now: 0 when the limiter is off or a
 * token is there, else the seconds the caller must wait first (its token
 * is reserved: sleep, then send). */
double send_rate_take(struct send_rate *r, double now);

/* A request that took its token (send_rate_take()) at sent_at was answered
 * at now; throttled: the store asked to slow down.  (Not called for transport failures: they say
 * nothing about the rate.) */
void send_rate_answer(struct send_rate *r, double sent_at, double now, bool throttled);

/* true when a status and error code ask the client to slow down: 429,
 * or 503 with SlowDown, Throttling, RequestLimitExceeded or no code. */
bool send_rate_is_throttle(int http_status, const char *code);

struct send_rate_stats {
	double rate;                /* requests/s allowed now; 0 = off */
	uint64_t throttles;         /* answers that asked to slow down */
	uint64_t waits;             /* requests that waited for a token */
};

void send_rate_stats(struct send_rate *r, struct send_rate_stats *out);

#endif
