/* store_fetch.h - the last link of the read chain: one chunk's bytes from
 * the object store, as concurrent ranged GETs of one object version.
 *
 * No cache knowledge: the chunk cache calls it on a miss of both tiers.
 * Thread-safe (the store is).
 */
#ifndef TIERFS_STORE_FETCH_H
#define TIERFS_STORE_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "s3/objstore.h"
#include "tiers/chunk_id.h"

/* Bounds on one fetch's parts: at most this many, each at least this big
 * (a part pays the server's time to first byte, so smaller ones cost more
 * than they overlap). */
#define STORE_FETCH_PARTS_MAX 4
#define STORE_FETCH_PART_MIN (2u * 1024 * 1024)

/* Fetch bytes [start, start + want) of o into buf (>= want bytes) as up
 * to `parallel` ranged GETs (clamped to 1..STORE_FETCH_PARTS_MAX, parts of
 * at least STORE_FETCH_PART_MIN), the first on the calling thread, the
 * others on threads of their own (run here too if a thread cannot
 * start).  Each GET names o's ETag (If-Match): TFS_E_STALE when the object
 * changed or is shorter than o->size says; else TFS_OK or the store's
 * error (already retried).  index names the chunk in log lines only. */
int store_fetch(struct objstore *store, unsigned parallel, const struct chunk_obj *o,
		uint64_t index, uint64_t start, size_t want, void *buf);

#endif
