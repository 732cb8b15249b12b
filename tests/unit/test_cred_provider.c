/* test_cred_provider.c - the refresh rules of cred_provider on a fake
 * source and a fake clock: when a refresh starts, that a failed one keeps
 * the old credentials in use until they go stale, the doubling waits, one
 * fetch shared by many threads, invalidation, and references that outlive
 * a refresh. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "s3/cred_provider.h"

struct fake {
	_Atomic int64_t now;         /* ms */
	atomic_int fetches;
	atomic_int fail;             /* next fetches that fail */
	int64_t lifetime;            /* ms; 0 = never expires */
	unsigned delay_us;           /* each fetch takes this long */
	atomic_int in_fetch, max_in_fetch;
};

static int64_t fake_now(void *arg)
{
	return atomic_load(&((struct fake *)arg)->now);
}

static int fake_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct fake *f = ctx;
	int n = atomic_fetch_add(&f->fetches, 1) + 1, in = atomic_fetch_add(&f->in_fetch, 1) + 1;
	char ak[32];

	if (in > atomic_load(&f->max_in_fetch))
		atomic_store(&f->max_in_fetch, in);
	if (f->delay_us)
		usleep(f->delay_us);
	atomic_fetch_sub(&f->in_fetch, 1);
	if (atomic_load(&f->fail) > 0) {
		atomic_fetch_sub(&f->fail, 1);
		tfs_errinfo_set(ei, "fake: refused (fetch %d)", n);
		return TFS_E_IO;
	}
	snprintf(ak, sizeof(ak), "AK%d", n);
	*out = cred_new_keys(ak, "secret", "token",
			     f->lifetime ? atomic_load(&f->now) + f->lifetime : 0);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

static struct cred_provider *fake_provider(struct fake *f)
{
	struct cred_source src = { .fetch = fake_fetch, .ctx = f };
	struct cred_provider_opts o = { .now_ms = fake_now, .now_arg = f,
					.retry_min_ms = 1000, .retry_max_ms = 8000 };
	struct cred_provider *p = cred_provider_new("fake source", &src, &o);

	cr_assert_not_null(p);
	return p;
}

/* The access key of the current credentials ("" on failure). */
static int get_ak(struct cred_provider *p, char *ak, size_t n)
{
	struct cred *c = NULL;
	struct tfs_errinfo ei;
	int rc;

	tfs_errinfo_clear(&ei);
	rc = cred_provider_get(p, &c, &ei);
	snprintf(ak, n, "%s", rc == TFS_OK ? c->access_key : ei.message);
	cred_put(c);
	return rc;
}

Test(cred_provider, refresh_at_half_life_stale_at_nine_tenths)
{
	struct fake f = { .now = 1000000, .lifetime = 20000 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK1");
	f.now += 9999;                      /* before half-life: no fetch */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_eq(f.fetches, 1);
	f.now += 1;                         /* half-life: refreshed */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK2");
	cr_assert_eq(f.fetches, 2);
	cred_provider_free(p);
}

Test(cred_provider, hour_long_credentials_refresh_five_minutes_ahead)
{
	struct fake f = { .now = 5000000, .lifetime = 3600000 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	f.now += 3600000 - 300001;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK1");
	f.now += 1;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK2");
	cred_provider_free(p);
}

Test(cred_provider, failed_refresh_keeps_old_credentials_then_retries_with_doubling_waits)
{
	struct fake f = { .now = 0, .lifetime = 100000 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];
	uint64_t ok, bad;

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	f.fail = 2;
	f.now = 50000;                     /* refresh window: this fetch fails */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK1", "reads go on with the old credentials");
	cr_assert_eq(f.fetches, 2);
	f.now += 999;                      /* inside the 1 s wait: no fetch */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_eq(f.fetches, 2);
	f.now += 1;                        /* retried, fails again: next wait 2 s */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_eq(f.fetches, 3);
	f.now += 1999;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_eq(f.fetches, 3);
	f.now += 1;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK4");
	cred_provider_counts(p, &ok, &bad);
	cr_assert_eq(ok, 2);
	cr_assert_eq(bad, 2);
	cred_provider_free(p);
}

Test(cred_provider, stale_credentials_are_never_handed_out)
{
	struct fake f = { .now = 0, .lifetime = 100000 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	f.fail = 1000;
	f.now = 90000;                     /* stale (expiry - 10 s): must fetch */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_E_AUTH);
	cr_assert(strstr(ak, "fake: refused"), "the source's message: %s", ak);
	cr_assert_eq(f.fetches, 2);
	/* inside the wait after that failure: fail fast, no fetch */
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_E_AUTH);
	cr_assert_eq(f.fetches, 2);
	f.fail = 0;
	f.now += 1000;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK3");
	cred_provider_free(p);
}

Test(cred_provider, first_fetch_failure_is_reported)
{
	struct fake f = { .now = 0, .lifetime = 100000, .fail = 1 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_E_AUTH);
	cr_assert(strstr(ak, "fake: refused"));
	cred_provider_free(p);
}

Test(cred_provider, expired_on_arrival_is_a_failure)
{
	struct fake f = { .now = 0, .lifetime = -5 };
	struct cred_provider *p = fake_provider(&f);
	char ak[300];

	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_E_AUTH);
	cr_assert(strstr(ak, "already expired"), "%s", ak);
	cred_provider_free(p);
}

Test(cred_provider, a_reference_outlives_the_refresh_that_replaces_it)
{
	struct fake f = { .now = 0, .lifetime = 10000 };
	struct cred_provider *p = fake_provider(&f);
	struct cred *held = NULL;
	char ak[300];

	cr_assert_eq(cred_provider_get(p, &held, NULL), TFS_OK);
	f.now = 6000;
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK2");
	cr_assert_str_eq(held->access_key, "AK1", "still whole (ASan would catch a free)");
	cred_put(held);
	cred_provider_free(p);
}

Test(cred_provider, invalidate_fetches_new_ones_now)
{
	struct fake f = { .now = 0, .lifetime = 100000 };
	struct cred_provider *p = fake_provider(&f);
	struct cred *c = NULL;
	char ak[300];

	cr_assert_eq(cred_provider_get(p, &c, NULL), TFS_OK);
	cred_provider_invalidate(p, c);
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_str_eq(ak, "AK2");
	/* an old set that is no longer current changes nothing */
	cred_provider_invalidate(p, c);
	cr_assert_eq(get_ak(p, ak, sizeof(ak)), TFS_OK);
	cr_assert_eq(f.fetches, 2);
	cred_put(c);
	cred_provider_free(p);
}

Test(cred_provider, static_credentials_never_fetch)
{
	struct cred *c = cred_new_keys("AKSTATIC", "sk", NULL, 0);
	struct cred_provider *p = cred_provider_new_static("static", c);
	struct cred *got = NULL;

	cr_assert_not(cred_provider_refreshes(p));
	cr_assert_eq(cred_provider_get(p, &got, NULL), TFS_OK);
	cr_assert_str_eq(got->access_key, "AKSTATIC");
	cr_assert_null(got->session_token);
	cred_provider_invalidate(p, got);
	cred_put(got);
	cr_assert_eq(cred_provider_get(p, &got, NULL), TFS_OK);
	cred_put(got);
	cr_assert_str_eq(cred_provider_desc(p), "static");
	cred_provider_free(p);
	cr_assert_null(cred_new_keys("", "x", NULL, 0));
	cr_assert_null(cred_new_bearer(NULL, 0));
}

struct worker {
	struct cred_provider *p;
	int ok, failed;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++) {
		struct cred *c = NULL;

		if (cred_provider_get(w->p, &c, NULL) == TFS_OK && c->access_key[0] == 'A')
			w->ok++;
		else
			w->failed++;
		cred_put(c);
	}
	return NULL;
}

Test(cred_provider, many_threads_share_one_fetch)
{
	/* each fetch takes 20 ms: 8 threads starting at once with nothing
	 * cached must wait for one fetch, not make eight */
	struct fake f = { .now = 0, .lifetime = 100000, .delay_us = 20000 };
	struct cred_provider *p = fake_provider(&f);
	struct worker w[8];
	pthread_t th[8];

	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .p = p };
		cr_assert_eq(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(w[i].failed, 0);
		cr_assert_eq(w[i].ok, 50);
	}
	cr_assert_eq(f.fetches, 1);
	cr_assert_eq(f.max_in_fetch, 1);

	/* in the refresh window, one thread fetches and the others go on */
	f.now = 60000;
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .p = p };
		cr_assert_eq(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(w[i].failed, 0);
	cr_assert_eq(f.fetches, 2);
	cr_assert_eq(f.max_in_fetch, 1);
	cred_provider_free(p);
}
