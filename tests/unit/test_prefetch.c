/* Unit tests for src/fs/prefetch: the read-ahead worker pool runs every
 * job, holds at most queue_max, and frees queued jobs at shutdown. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/prefetch.h"

struct job {
	struct prefetch_item item;
	int id;
};

static atomic_int ran, cancelled;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void run(void *ctx, struct prefetch_item *it, bool cancel)
{
	(void)ctx;
	if (cancel) {
		atomic_fetch_add(&cancelled, 1);
	} else {
		pthread_mutex_lock(&gate);      /* tests hold it to keep jobs running */
		pthread_mutex_unlock(&gate);
		atomic_fetch_add(&ran, 1);
	}
	free(it);
}

static struct prefetch_item *job(int id)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	return &j->item;
}

static void wait_idle(struct prefetch_pool *p)
{
	for (int i = 0; i < 10000 && prefetch_pool_held(p) > 0; i++)
		usleep(1000);
}

Test(prefetch, runs_every_job)
{
	struct prefetch_pool *p = prefetch_pool_new(4, 1000, run, NULL);

	atomic_store(&ran, 0);
	cr_assert_not_null(p);
	for (int i = 0; i < 500; i++)
		cr_assert(prefetch_pool_submit(p, job(i)));
	wait_idle(p);
	cr_expect_eq(atomic_load(&ran), 500);
	cr_expect_eq(prefetch_pool_refused(p), 0);
	prefetch_pool_free(p);
}

Test(prefetch, holds_at_most_queue_max_and_cancels_the_rest)
{
	struct prefetch_pool *p;
	struct prefetch_item *extra;
	int accepted = 0;

	atomic_store(&ran, 0);
	atomic_store(&cancelled, 0);
	pthread_mutex_lock(&gate);              /* jobs block: nothing finishes */
	p = prefetch_pool_new(2, 5, run, NULL);
	cr_assert_not_null(p);
	for (int i = 0; i < 20; i++) {
		struct prefetch_item *it = job(i);
		if (prefetch_pool_submit(p, it))
			accepted++;
		else
			free(it);
	}
	cr_expect_eq(accepted, 5);
	cr_expect_eq(prefetch_pool_refused(p), 15);
	cr_expect_eq(prefetch_pool_held(p), 5);
	extra = job(99);
	cr_expect_not(prefetch_pool_submit(p, extra));
	free(extra);
	pthread_mutex_unlock(&gate);
	prefetch_pool_free(p);                  /* two running finish; queued ones may be cancelled */
	cr_expect_eq(atomic_load(&ran) + atomic_load(&cancelled), 5);
}

Test(prefetch, bad_arguments)
{
	cr_expect_null(prefetch_pool_new(0, 4, run, NULL));
	cr_expect_null(prefetch_pool_new(4, 0, run, NULL));
	cr_expect_null(prefetch_pool_new(4, 4, NULL, NULL));
}
