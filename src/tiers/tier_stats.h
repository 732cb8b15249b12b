/* tier_stats.h - the counters every cache tier keeps, in one shape, so the
 * chain, the SIGUSR1 dump and (later) the control socket print them alike.
 * A field a tier has no use for stays 0.
 */
#ifndef TIERFS_TIER_STATS_H
#define TIERFS_TIER_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct tier_stats {
	uint64_t hits, misses;
	uint64_t bytes_served;       /* bytes handed out by hits */
	uint64_t bytes_fetched;      /* bytes put into this tier from below */
	uint64_t insertions, evictions;
	uint64_t evictions_read;     /* of them, chunks read through this epoch (RAM) */
	uint64_t entries, bytes_used, capacity;   /* occupancy now, and its bound */
	uint64_t checksum_failures;  /* stored copies found corrupt (dropped) */
	uint64_t io_errors;          /* failed reads/writes of the tier's media */
	uint64_t dropped;            /* insertions refused: queue full, no space, degraded */
	uint64_t spilled;            /* readers' chunks copied to wait for the writer (SSD) */
	uint64_t resaved;            /* of the dropped, stored when offered again (SSD) */
	uint64_t waits;              /* readers that waited on another's fill */
	uint64_t overflow;           /* chunks served from a private buffer */
	uint64_t fills_failed;       /* misses whose fill from below failed */
	uint64_t rejected;           /* candidates the eviction policy did not admit */
	uint64_t queued;             /* stores waiting for the writer (SSD) */
	uint64_t ahead_bytes;        /* fetched ahead by a scan, not read yet (SSD) */
	uint64_t ahead_evicted;      /* bytes of those evicted unread (SSD) */
	/* read-ahead (the RAM tier): chunk fills issued ahead of the reader,
	 * read later (used), evicted unread (wasted), read while still in
	 * flight (late, also used), and not issued for want of a free slot */
	uint64_t ahead_issued, ahead_used, ahead_wasted, ahead_late, ahead_dropped;
	bool degraded;               /* the media failed lately; reads fall through */
};

#endif
