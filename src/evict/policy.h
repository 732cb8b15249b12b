/* policy.h - the policy struct, its ops table and the helpers the
 * policies share (key index, intrusive lists).  For src/evict/ and tests.
 *
 * Invariants (checked by evict_policy_check()):
 *  - size <= capacity; a node is live (tag != EVICT_TAG_FREE) iff it is in
 *    the key index, and the free chain holds exactly the other nodes;
 *  - every live node is on exactly one of the policy's lists (LRU, the
 *    three TinyLFU segments) or in the LFU dense array, and its tag says
 *    which;
 *  - the index is open addressing with linear probing, at most half full,
 *    no tombstones (deletion shifts back), so a probe ends at an empty slot.
 */
#ifndef TIERFS_EVICT_POLICY_H
#define TIERFS_EVICT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rand.h"
#include "evict/evict.h"

#define EVICT_NIL UINT32_MAX
/* Node numbers are 32-bit and the index has 2 * capacity slots: 2^30
 * keys (a petabyte of 1 MiB chunks) is far beyond any tier. */
#define EVICT_MAX_CAPACITY ((size_t)1 << 30)
/* Victim search examines at most this many keys per list (everything
 * pinned must not turn one miss into a walk of the whole cache). */
#define EVICT_SCAN_MAX 64
#define LFU_POOL_SIZE 16
#define LFU_SAMPLES 16

enum evict_tag {
	EVICT_TAG_FREE = 0,
	EVICT_TAG_RESIDENT,       /* LRU, LFU */
	EVICT_TAG_WINDOW,         /* TinyLFU segments */
	EVICT_TAG_PROBATION,
	EVICT_TAG_PROTECTED,
};

struct evict_node {
	uint64_t key;
	union {
		struct {
			uint32_t prev, next;   /* towards head (newer) / tail (older) */
		} link;                        /* LRU, TinyLFU; free chain uses next */
		struct {
			uint32_t pos;          /* index in the dense array */
			uint32_t seq;          /* last access (tie-break), truncated */
		} lfu;
	};
	uint32_t stat;    /* LRU: access seq; LFU: ldt << 8 | counter; TinyLFU: 1 if the key
			   * was asked for before it was offered (tinylfu.c) */
	uint32_t tag;     /* enum evict_tag */
	uint32_t weight;  /* what it takes of the tier (>= 1; 1 unless inserted weighted) */
};

/* An intrusive doubly linked list over the node array; head = most recent. */
struct evict_list {
	uint32_t head, tail;
	size_t len;
	uint64_t weight;  /* of its nodes */
};

struct evict_slot {
	uint64_t key;
	uint32_t node;    /* EVICT_NIL: empty */
};

struct lfu_pool_entry {
	uint64_t key;
	uint64_t score;   /* lower = better victim */
	uint32_t node;    /* valid while nodes[node] is live and holds key */
};

struct evict_lru {
	struct evict_list list;
	uint32_t seq;
};

struct evict_lfu {
	uint32_t *dense;          /* node numbers of the size resident keys */
	uint64_t rng;             /* xorshift64* state */
	uint64_t decay_period;    /* accesses per counter decrement */
	struct lfu_pool_entry pool[LFU_POOL_SIZE];   /* ascending score */
	size_t pool_len;
};

struct sketch;
/* A ghost slot (tinylfu.c): for the keys that hash to it, the last one
 * the window rejected (window: fingerprint, asked bit and weight;
 * window_at: the ghosts' clock then), the last one main evicted (main:
 * fingerprint and weight), and the last one asked for while not
 * resident (asked: fingerprint).  0: none. */
struct evict_ghost {
	uint64_t window, window_at, main, asked;
};

struct evict_tinylfu {
	struct sketch *sketch;
	struct evict_list window, probation, protected_;
	/* In weight units (keys when every weight is 1). */
	uint64_t window_cap, protected_cap;
	uint64_t window_min, window_max;   /* window_cap adapts within these */
	struct evict_ghost *ghosts;   /* ghost_len slots, direct-mapped */
	size_t ghost_len;
	uint64_t expired;         /* window ghosts overwritten before they returned */
	uint64_t offered;         /* weight of every new key offered: the ghosts' clock */
	uint64_t front;           /* evict_policy_set_front(): added to the reach */
};

/* tinylfu.c: evict_policy_set_min_window() for W-TinyLFU, and the
 * segments' shares recomputed for a new weight capacity. */
void evict_tinylfu_set_min_window(struct evict_policy *p, uint64_t n);
unsigned evict_tinylfu_frequency(const struct evict_policy *p, uint64_t key);
void evict_tinylfu_reweigh(struct evict_policy *p);
/* An unweighted W-TinyLFU's capacity grew: the window keeps its size and
 * its floor, main's segments and the window's ceiling take the rest. */
void evict_tinylfu_grown(struct evict_policy *p);

struct evict_ops {
	/* Allocate the policy's own state; false on out of memory. */
	bool (*init)(struct evict_policy *p);
	void (*release)(struct evict_policy *p);
	/* node: the key's node, or EVICT_NIL when not resident. */
	void (*access)(struct evict_policy *p, uint64_t key, uint32_t node);
	void (*insert)(struct evict_policy *p, uint32_t node);   /* node is indexed */
	void (*remove)(struct evict_policy *p, uint32_t node);   /* before unindexing */
	bool (*victim)(struct evict_policy *p, evict_pinned_fn pinned, void *ctx,
		       uint64_t *victim);
	/* The key capacity grows from p->capacity to capacity: resize what
	 * depends on it; false when out of memory (nothing changed).  NULL:
	 * nothing to do. */
	bool (*grow)(struct evict_policy *p, size_t capacity);
	/* NULL: always admit.  victim_node may be EVICT_NIL. */
	bool (*admit)(struct evict_policy *p, uint64_t candidate, uint32_t victim_node);
	uint32_t (*stat_get)(const struct evict_policy *p, uint32_t node);
	void (*stat_set)(struct evict_policy *p, uint32_t node, uint32_t stat);
	bool (*check)(const struct evict_policy *p);
};

struct evict_policy {
	const struct evict_ops *ops;
	enum evict_kind kind;
	size_t capacity;
	size_t size;
	uint64_t wcap;                 /* weight the tier holds (capacity unless set) */
	bool weighted;                 /* wcap was set: weights are not key counts */
	uint64_t weight;               /* of the resident keys */
	uint64_t incoming;             /* weight of the key the next victim makes room for */
	uint64_t clock;                /* accesses seen: the only time there is */
	struct evict_node *nodes;      /* capacity */
	uint32_t free_head;            /* chain through link.next */
	struct evict_slot *slots;      /* slot_mask + 1, a power of two */
	size_t slot_mask;
	union {
		struct evict_lru lru;
		struct evict_lfu lfu;
		struct evict_tinylfu tlfu;
	} u;
};

extern const struct evict_ops evict_lru_ops;
extern const struct evict_ops evict_lfu_ops;
extern const struct evict_ops evict_tinylfu_ops;

/* The node of key, or EVICT_NIL. */
uint32_t evict_index_find(const struct evict_policy *p, uint64_t key);

/* Keys are spread with mix64() (common/rand.h): chunk keys may be sequential. */

static inline void evict_list_init(struct evict_list *l)
{
	l->head = l->tail = EVICT_NIL;
	l->len = 0;
	l->weight = 0;
}

static inline void evict_list_push_head(struct evict_node *nodes, struct evict_list *l,
					uint32_t n)
{
	nodes[n].link.prev = EVICT_NIL;
	nodes[n].link.next = l->head;
	if (l->head != EVICT_NIL)
		nodes[l->head].link.prev = n;
	else
		l->tail = n;
	l->head = n;
	l->len++;
	l->weight += nodes[n].weight;
}

static inline void evict_list_unlink(struct evict_node *nodes, struct evict_list *l,
				     uint32_t n)
{
	uint32_t prev = nodes[n].link.prev, next = nodes[n].link.next;

	if (prev != EVICT_NIL)
		nodes[prev].link.next = next;
	else
		l->head = next;
	if (next != EVICT_NIL)
		nodes[next].link.prev = prev;
	else
		l->tail = prev;
	nodes[n].link.prev = nodes[n].link.next = EVICT_NIL;
	l->len--;
	l->weight -= nodes[n].weight;
}

static inline void evict_list_push_tail(struct evict_node *nodes, struct evict_list *l,
					uint32_t n)
{
	nodes[n].link.next = EVICT_NIL;
	nodes[n].link.prev = l->tail;
	if (l->tail != EVICT_NIL)
		nodes[l->tail].link.next = n;
	else
		l->head = n;
	l->tail = n;
	l->len++;
	l->weight += nodes[n].weight;
}

/* Walk l from its tail; true if its links agree both ways, it has len
 * nodes of weight weight, all tagged tag.  For evict_policy_check(). */
bool evict_list_check(const struct evict_policy *p, const struct evict_list *l, uint32_t tag);

/* The first unpinned node from l's tail among at most EVICT_SCAN_MAX,
 * or EVICT_NIL. */
uint32_t evict_list_victim(const struct evict_policy *p, const struct evict_list *l,
			   evict_pinned_fn pinned, void *ctx);

#endif
