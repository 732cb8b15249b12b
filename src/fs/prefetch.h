/* prefetch.h - a bounded pool of read-ahead workers.
 *
 * Jobs are the caller's (an intrusive struct prefetch_item first in each);
 * run(ctx, item) performs and frees one.  At most queue_max jobs are held
 * at once, queued or running: a full pool refuses new ones, so read-ahead
 * never queues without bound behind a slow store.  Jobs run FIFO on
 * `threads` workers.  Thread-safe.
 */
#ifndef TIERFS_PREFETCH_H
#define TIERFS_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prefetch_item {
	struct prefetch_item *next;
};

/* Perform the job and free it.  On shutdown, cancelled is true: free only. */
typedef void (*prefetch_run_fn)(void *ctx, struct prefetch_item *item, bool cancelled);

struct prefetch_pool;

/* NULL on bad arguments (threads or queue_max 0) or out of resources. */
struct prefetch_pool *prefetch_pool_new(unsigned threads, size_t queue_max, prefetch_run_fn run,
					void *ctx);
/* Waits for running jobs; queued ones are cancelled. */
void prefetch_pool_free(struct prefetch_pool *p);

/* Queue a job.  false when the pool holds queue_max jobs already: the
 * caller keeps (and frees) the item. */
bool prefetch_pool_submit(struct prefetch_pool *p, struct prefetch_item *item);

/* Jobs held now (queued or running), and jobs refused since creation. */
size_t prefetch_pool_held(struct prefetch_pool *p);
uint64_t prefetch_pool_refused(struct prefetch_pool *p);

#endif
