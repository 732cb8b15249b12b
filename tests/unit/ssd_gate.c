/* ssd_gate.c - see ssd_gate.h.  One gate per test process. */
#include "ssd_gate.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/tfs_err.h"

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_is_open;
static ssd_tier_release_fn gate_then;

static void release_gated(void *arg)
{
	pthread_mutex_lock(&gate_mu);
	while (!gate_is_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	gate_then(arg);
}

void ssd_gate_close(struct ssd_tier *t, ssd_tier_release_fn then)
{
	struct chunk_id id = { "gate", "e", 0 };
	unsigned char *b = calloc(1, 10);

	cr_assert_not_null(b);
	pthread_mutex_lock(&gate_mu);
	gate_is_open = false;
	gate_then = then;
	pthread_mutex_unlock(&gate_mu);
	cr_assert_eq(ssd_tier_store(t, &id, b, 10, release_gated, b), TFS_OK);
}

void ssd_gate_open(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_is_open = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}
