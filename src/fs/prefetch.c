/* prefetch.c - read-ahead worker pool: a FIFO under one mutex.
 *
 * Invariant: held == queued + running <= queue_max.
 */
#include "fs/prefetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PREFETCH_THREADS_MAX 64

struct prefetch_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct prefetch_item *head, *tail;   /* under lock */
	size_t held, queue_max;              /* under lock */
	bool stopping;                       /* under lock */
	atomic_uint_fast64_t refused;
	prefetch_run_fn run;
	void *ctx;
	unsigned n_threads;
	pthread_t threads[PREFETCH_THREADS_MAX];
};

static void *worker(void *arg)
{
	struct prefetch_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct prefetch_item *it;

		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->head || p->stopping)
			break;                      /* stopping: the rest are cancelled */
		it = p->head;
		p->head = it->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		p->run(p->ctx, it, false);
		pthread_mutex_lock(&p->lock);
		p->held--;
		if (p->stopping)
			break;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct prefetch_pool *prefetch_pool_new(unsigned threads, size_t queue_max, prefetch_run_fn run,
					void *ctx)
{
	struct prefetch_pool *p;

	if (threads == 0 || queue_max == 0 || !run)
		return NULL;
	if (threads > PREFETCH_THREADS_MAX)
		threads = PREFETCH_THREADS_MAX;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->queue_max = queue_max;
	p->run = run;
	p->ctx = ctx;
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
			break;
		p->n_threads++;
	}
	if (p->n_threads == 0) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return NULL;
	}
	return p;
}

void prefetch_pool_free(struct prefetch_pool *p)
{
	struct prefetch_item *it;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	while ((it = p->head)) {
		p->head = it->next;
		p->run(p->ctx, it, true);
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

bool prefetch_pool_submit(struct prefetch_pool *p, struct prefetch_item *item)
{
	bool ok = false;

	pthread_mutex_lock(&p->lock);
	if (!p->stopping && p->held < p->queue_max) {
		item->next = NULL;
		if (p->tail)
			p->tail->next = item;
		else
			p->head = item;
		p->tail = item;
		p->held++;
		pthread_cond_signal(&p->cond);
		ok = true;
	}
	pthread_mutex_unlock(&p->lock);
	if (!ok)
		atomic_fetch_add(&p->refused, 1);
	return ok;
}

size_t prefetch_pool_held(struct prefetch_pool *p)
{
	size_t n;

	pthread_mutex_lock(&p->lock);
	n = p->held;
	pthread_mutex_unlock(&p->lock);
	return n;
}

uint64_t prefetch_pool_refused(struct prefetch_pool *p)
{
	return atomic_load(&p->refused);
}
