/* cred_provider.c - shared, refreshed credentials (see cred_provider.h).
 *
 * Timing.  For credentials obtained at O that expire at E (lifetime
 * L = E - O):
 *
 *     O ............ R ............ U .... E
 *     fresh          refresh window    stale
 *
 *   R = E - min(5 min, L / 2)   from here a caller starts a refresh
 *   U = E - min(10 s, L / 10)   from here they are no longer handed out
 *
 * Five minutes ahead is what the AWS SDKs and google-auth do for hour-long
 * credentials; the L/2 and L/10 terms keep short-lived ones (tests, or a
 * token endpoint that hands out minutes) from being refreshed on every
 * request or used up to the last millisecond.  U leaves the request that
 * signs with them time to reach the server.
 *
 * Single flight.  p->refreshing marks the one fetch in progress; it runs
 * without p->lock.  Inside the refresh window everyone else keeps using the
 * current credentials, so a read never waits for a refresh while they are
 * valid.  Only when there are none, or they are stale, do callers wait on
 * p->cond for the fetch, and one that waited does not start another fetch
 * itself when the one it waited for failed (it reports that failure).
 *
 * Failures.  A failed fetch is logged (warning) and sets a doubling wait
 * (retry_min_ms .. retry_max_ms) before the next fetch; while the current
 * credentials are still usable nothing else changes.  A caller that needs
 * credentials and finds none usable inside such a wait fails at once with
 * the last error, so a dead metadata server costs each read no more than
 * a lock.
 */
#include "s3/cred_provider.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

#define REFRESH_AHEAD_MAX_MS (5 * 60 * 1000)
#define STALE_AHEAD_MAX_MS (10 * 1000)

struct cred_provider {
	char *desc;
	struct cred_source src;      /* fetch == NULL: static */
	int64_t (*now_ms)(void *arg);
	void *now_arg;
	unsigned retry_min_ms, retry_max_ms;

	pthread_mutex_t lock;        /* guards everything below */
	pthread_cond_t cond;         /* a fetch ended */
	struct cred *cur;            /* NULL until the first fetch succeeds */
	int64_t refresh_at, stale_at;
	bool refreshing;
	uint64_t generation;         /* fetches ended, success or failure */
	unsigned failures;           /* consecutive failed fetches */
	int64_t next_try;            /* no fetch before this after a failure */
	int last_rc;
	struct tfs_errinfo last_ei;  /* of the last failed fetch */
	uint64_t n_fetches, n_failures;
};

/* ---- struct cred ---- */

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

struct cred *cred_new_keys(const char *access_key, const char *secret_key,
			   const char *session_token, int64_t expires_ms)
{
	struct cred *c;

	if (!access_key || !*access_key || !secret_key || !*secret_key)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->kind = CRED_KEYS;
	atomic_init(&c->refs, 1);
	c->expires_ms = expires_ms;
	c->access_key = strdup(access_key);
	c->secret_key = strdup(secret_key);
	if (session_token && *session_token)
		c->session_token = strdup(session_token);
	if (!c->access_key || !c->secret_key ||
	    (session_token && *session_token && !c->session_token)) {
		cred_put(c);
		return NULL;
	}
	return c;
}

struct cred *cred_new_bearer(const char *token, int64_t expires_ms)
{
	struct cred *c;

	if (!token || !*token)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->kind = CRED_BEARER;
	atomic_init(&c->refs, 1);
	c->expires_ms = expires_ms;
	c->token = strdup(token);
	if (!c->token) {
		free(c);
		return NULL;
	}
	return c;
}

void cred_get(struct cred *c)
{
	if (c)
		atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void cred_put(struct cred *c)
{
	if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	wipe_free(c->access_key);
	wipe_free(c->secret_key);
	wipe_free(c->session_token);
	wipe_free(c->token);
	free(c);
}

/* ---- provider ---- */

static int64_t realtime_ms(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct cred_provider *provider_alloc(const char *desc, const struct cred_provider_opts *o)
{
	struct cred_provider *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->desc = strdup(desc ? desc : "");
	if (!p->desc || pthread_mutex_init(&p->lock, NULL)) {
		free(p->desc);
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->cond, NULL)) {
		pthread_mutex_destroy(&p->lock);
		free(p->desc);
		free(p);
		return NULL;
	}
	p->now_ms = o && o->now_ms ? o->now_ms : realtime_ms;
	p->now_arg = o ? o->now_arg : NULL;
	p->retry_min_ms = o && o->retry_min_ms ? o->retry_min_ms : 1000;
	p->retry_max_ms = o && o->retry_max_ms ? o->retry_max_ms : 60000;
	if (p->retry_max_ms < p->retry_min_ms)
		p->retry_max_ms = p->retry_min_ms;
	return p;
}

struct cred_provider *cred_provider_new(const char *desc, const struct cred_source *src,
					const struct cred_provider_opts *opts)
{
	struct cred_provider *p = provider_alloc(desc, opts);

	if (!p) {
		if (src->free)
			src->free(src->ctx);
		return NULL;
	}
	p->src = *src;
	return p;
}

struct cred_provider *cred_provider_new_static(const char *desc, struct cred *c)
{
	struct cred_provider *p = provider_alloc(desc, NULL);

	if (!p) {
		cred_put(c);
		return NULL;
	}
	p->cur = c;
	p->refresh_at = p->stale_at = INT64_MAX;
	return p;
}

/* Set the refresh and stale times for p->cur, obtained at now. */
static void set_times(struct cred_provider *p, int64_t now)
{
	int64_t e = p->cur->expires_ms, life = e - now, ahead;

	if (e == 0) {
		p->refresh_at = p->stale_at = INT64_MAX;
		return;
	}
	ahead = life / 2 < REFRESH_AHEAD_MAX_MS ? life / 2 : REFRESH_AHEAD_MAX_MS;
	p->refresh_at = e - ahead;
	ahead = life / 10 < STALE_AHEAD_MAX_MS ? life / 10 : STALE_AHEAD_MAX_MS;
	p->stale_at = e - ahead;
}

/* One fetch, called with p->lock held and p->refreshing set by the
 * caller; drops the lock while the source works. */
static void refresh_locked(struct cred_provider *p)
{
	struct tfs_errinfo ei;
	struct cred *c = NULL, *old = NULL;
	int64_t now;
	int rc;

	pthread_mutex_unlock(&p->lock);
	tfs_errinfo_clear(&ei);
	rc = p->src.fetch(p->src.ctx, &c, &ei);
	now = p->now_ms(p->now_arg);
	if (rc == TFS_OK && c && c->expires_ms != 0 && c->expires_ms <= now) {
		/* garbage from the source, or a clock far off: as good as none */
		tfs_errinfo_set(&ei, "%s: the credentials received have already expired",
				p->desc);
		cred_put(c);
		c = NULL;
		rc = TFS_E_AUTH;
	} else if (rc == TFS_OK && !c) {
		rc = TFS_E_PROTO;
	}
	pthread_mutex_lock(&p->lock);
	p->refreshing = false;
	p->generation++;
	if (rc == TFS_OK) {
		old = p->cur;
		p->cur = c;
		set_times(p, now);
		p->failures = 0;
		p->next_try = 0;
		p->n_fetches++;
		if (c->expires_ms)
			log_info("credentials: new ones from %s, valid for %lld s", p->desc,
				 (long long)((c->expires_ms - now) / 1000));
		else
			log_info("credentials: new ones from %s, without expiry", p->desc);
	} else {
		unsigned wait = p->retry_min_ms;

		for (unsigned i = 0; i < p->failures && wait < p->retry_max_ms; i++)
			wait *= 2;
		if (wait > p->retry_max_ms)
			wait = p->retry_max_ms;
		p->failures++;
		p->n_failures++;
		p->next_try = now + wait;
		p->last_rc = rc;
		p->last_ei = ei;
		if (p->cur && now < p->stale_at)
			log_warn("credentials: refresh from %s failed (%s); retry in %u ms, the "
				 "current ones stay in use for %lld s more", p->desc,
				 ei.message[0] ? ei.message : tfs_strerror(rc), wait,
				 (long long)((p->stale_at - now) / 1000));
		else
			log_warn("credentials: cannot get credentials from %s (%s); retry in %u ms",
				 p->desc, ei.message[0] ? ei.message : tfs_strerror(rc), wait);
	}
	pthread_cond_broadcast(&p->cond);
	if (old) {
		/* the last reference may be ours: wipe outside the lock */
		pthread_mutex_unlock(&p->lock);
		cred_put(old);
		pthread_mutex_lock(&p->lock);
	}
}

int cred_provider_get(struct cred_provider *p, struct cred **out, struct tfs_errinfo *ei)
{
	uint64_t waited_for = 0;
	bool fetched = false, waited = false;
	int rc = TFS_OK;

	*out = NULL;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		int64_t now = p->now_ms(p->now_arg);
		bool usable = p->cur && now < p->stale_at;

		if (!p->src.fetch && p->cur) {
			break;             /* static: never refreshed */
		} else if (!p->src.fetch) {
			rc = TFS_E_AUTH;
			tfs_errinfo_set(ei, "%s: no credentials", p->desc);
			break;
		}
		if (usable && now < p->refresh_at)
			break;
		if (usable) {
			/* Refresh window: at most one caller fetches, none waits. */
			if (!p->refreshing && now >= p->next_try && !fetched) {
				p->refreshing = true;
				fetched = true;
				refresh_locked(p);
				continue;
			}
			break;
		}
		if (p->refreshing) {
			waited = true;
			waited_for = p->generation + 1;
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		/* Nothing usable and nobody fetching. */
		if (fetched || (waited && p->generation >= waited_for && p->failures) ||
		    (p->failures && now < p->next_try)) {
			rc = p->last_rc ? p->last_rc : TFS_E_AUTH;
			if (rc != TFS_E_NOMEM &&
			    !(p->src.pass_outage && (rc == TFS_E_IO || rc == TFS_E_CONNECT)))
				rc = TFS_E_AUTH;
			if (ei) {
				*ei = p->last_ei;
				if (!ei->message[0])
					tfs_errinfo_set(ei, "%s: no valid credentials", p->desc);
			}
			break;
		}
		p->refreshing = true;
		fetched = true;
		refresh_locked(p);
	}
	if (rc == TFS_OK) {
		cred_get(p->cur);
		*out = p->cur;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void cred_provider_invalidate(struct cred_provider *p, const struct cred *c)
{
	pthread_mutex_lock(&p->lock);
	if (p->src.fetch && c && p->cur == c && c->expires_ms != 0) {
		/* refresh now; stale at once, so callers wait for the new ones */
		p->refresh_at = p->stale_at = INT64_MIN;
		p->next_try = 0;
	}
	pthread_mutex_unlock(&p->lock);
}

bool cred_provider_refreshes(const struct cred_provider *p)
{
	return p->src.fetch != NULL;
}

const char *cred_provider_desc(const struct cred_provider *p)
{
	return p->desc;
}

void cred_provider_counts(struct cred_provider *p, uint64_t *fetches, uint64_t *failures)
{
	pthread_mutex_lock(&p->lock);
	if (fetches)
		*fetches = p->n_fetches;
	if (failures)
		*failures = p->n_failures;
	pthread_mutex_unlock(&p->lock);
}

void cred_provider_free(struct cred_provider *p)
{
	if (!p)
		return;
	cred_put(p->cur);
	if (p->src.free)
		p->src.free(p->src.ctx);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->desc);
	free(p);
}
