/* opt.h - the best any cache could do on a trace: Belady's OPT and the C/N bound.
 *
 * OPT here may decline to cache a missed key (bypass), like a policy with
 * admission control: on a miss with the cache full it drops whichever of
 * the residents and the newcomer is next used farthest in the future.
 * That is optimal for this model, so no eviction + admission policy can
 * have more hits on the same trace at the same capacity.
 *
 * Hits are counted at positions >= t->warm_from (see trace.h); the
 * simulation itself runs from the start of the trace.
 *
 * Pure functions of their arguments; thread-safe on a shared finished trace.
 */
#ifndef TIERFS_SIM_OPT_H
#define TIERFS_SIM_OPT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/trace.h"

/* OPT's hit count on finished trace t with room for capacity (>= 1) keys,
 * into *hits.  O(n log capacity) time, O(n + n_distinct) memory.
 * TFS_E_INVAL on capacity 0, TFS_E_NOMEM. */
int opt_hits(const struct trace *t, size_t capacity, uint64_t *hits);

/* capacity / n_distinct, at most 1 (0 for an empty trace).  For an epoch
 * trace (every item once per epoch, first epoch not counted) no cache,
 * OPT included, has a higher hit ratio: a hit in epoch k needs its key
 * resident across the boundary between epochs k - 1 and k, and at that
 * instant at most capacity keys are resident.  Meaningless for other
 * traces (callers check t->epoch_len). */
double trace_bound_cn(const struct trace *t, size_t capacity);

#endif
