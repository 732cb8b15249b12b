/* evict.c - policy lifecycle, the shared key index and dispatch to a policy's ops.
 *
 * Invariants: see policy.h.  This file owns the node array, the
 * free chain, the index and the clock; the policies own their orderings.
 *
 * The index is open addressing with linear probing over 2 * capacity
 * (rounded up to a power of two) slots, so it is at most half full and an
 * unsuccessful probe is short on average.  A slot holds the key itself,
 * not just the node number, so a probe touches one cache line, not one
 * per candidate node.  Deletion shifts the following run back (Knuth's
 * algorithm R) instead of leaving tombstones: the table never degrades,
 * however long the daemon runs.
 */
#include "evict/evict.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "evict/policy.h"

static const char *const kind_names[EVICT_KIND_COUNT] = {
	[EVICT_LRU] = "lru",
	[EVICT_LFU] = "lfu",
	[EVICT_TINYLFU] = "tinylfu",
};

static const struct evict_ops *const kind_ops[EVICT_KIND_COUNT] = {
	[EVICT_LRU] = &evict_lru_ops,
	[EVICT_LFU] = &evict_lfu_ops,
	[EVICT_TINYLFU] = &evict_tinylfu_ops,
};

int evict_kind_parse(const char *name)
{
	if (!name)
		return -1;
	for (int k = 0; k < EVICT_KIND_COUNT; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return k;
	return -1;
}

const char *evict_kind_name(enum evict_kind kind)
{
	if ((unsigned)kind >= EVICT_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

static size_t slot_of(const struct evict_policy *p, uint64_t key)
{
	return (size_t)mix64(key) & p->slot_mask;
}

uint32_t evict_index_find(const struct evict_policy *p, uint64_t key)
{
	for (size_t i = slot_of(p, key);; i = (i + 1) & p->slot_mask) {
		const struct evict_slot *s = &p->slots[i];

		if (s->node == EVICT_NIL)
			return EVICT_NIL;
		if (s->key == key)
			return s->node;
	}
}

static void index_add(struct evict_policy *p, uint64_t key, uint32_t node)
{
	size_t i = slot_of(p, key);

	while (p->slots[i].node != EVICT_NIL)
		i = (i + 1) & p->slot_mask;
	p->slots[i].key = key;
	p->slots[i].node = node;
}

static void index_del(struct evict_policy *p, uint64_t key)
{
	size_t i = slot_of(p, key);

	while (p->slots[i].key != key || p->slots[i].node == EVICT_NIL) {
		assert(p->slots[i].node != EVICT_NIL);
		i = (i + 1) & p->slot_mask;
	}
	/* Shift back every later entry of the run whose home slot is not in
	 * the cyclic range (i, j]: it would no longer be reachable across
	 * the hole at i. */
	for (size_t j = (i + 1) & p->slot_mask; p->slots[j].node != EVICT_NIL;
	     j = (j + 1) & p->slot_mask) {
		size_t home = slot_of(p, p->slots[j].key);

		if (((j - home) & p->slot_mask) >= ((j - i) & p->slot_mask)) {
			p->slots[i] = p->slots[j];
			i = j;
		}
	}
	p->slots[i].node = EVICT_NIL;
}

struct evict_policy *evict_policy_new(enum evict_kind kind, size_t capacity)
{
	struct evict_policy *p;
	size_t n_slots = 16;

	if ((unsigned)kind >= EVICT_KIND_COUNT || capacity == 0 || capacity > EVICT_MAX_CAPACITY)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	while (n_slots < 2 * capacity)
		n_slots <<= 1;
	p->ops = kind_ops[kind];
	p->kind = kind;
	p->capacity = capacity;
	p->wcap = capacity;
	p->incoming = 1;
	p->slot_mask = n_slots - 1;
	p->nodes = calloc(capacity, sizeof(*p->nodes));
	p->slots = malloc(n_slots * sizeof(*p->slots));
	if (!p->nodes || !p->slots)
		goto fail_arrays;
	for (size_t i = 0; i < n_slots; i++)
		p->slots[i].node = EVICT_NIL;
	/* free chain in ascending order: node numbers are handed out 0, 1, ... */
	for (size_t i = 0; i < capacity; i++)
		p->nodes[i].link.next = i + 1 < capacity ? (uint32_t)(i + 1) : EVICT_NIL;
	p->free_head = 0;
	if (!p->ops->init(p))
		goto fail_arrays;
	return p;

fail_arrays:
	free(p->slots);
	free(p->nodes);
	free(p);
	return NULL;
}

void evict_policy_free(struct evict_policy *p)
{
	if (!p)
		return;
	p->ops->release(p);
	free(p->slots);
	free(p->nodes);
	free(p);
}

void evict_policy_access(struct evict_policy *p, uint64_t key)
{
	p->clock++;
	p->ops->access(p, key, evict_index_find(p, key));
}

/* A full policy drops the insert: the caller broke the contract, and
 * tracking more keys than there are nodes is impossible without
 * allocating.  assert() is not used so that the tests can show the bound
 * holds in debug builds too; the caller sees it in contains(). */
void evict_policy_set_weight_capacity(struct evict_policy *p, uint64_t wcap)
{
	if (p->size != 0 || wcap == 0)
		return;
	p->wcap = wcap;
	p->weighted = true;
	if (p->kind == EVICT_TINYLFU)
		evict_tinylfu_reweigh(p);
}

uint64_t evict_policy_weight(const struct evict_policy *p)
{
	return p->weight;
}

void evict_policy_insert(struct evict_policy *p, uint64_t key)
{
	evict_policy_insert_weighted(p, key, 1);
}

/* Weights are 32-bit in a node: 2^32 blocks of 4 KiB is 16 TiB, far past
 * any one chunk. */
void evict_policy_insert_weighted(struct evict_policy *p, uint64_t key, uint64_t weight)
{
	uint32_t n;

	if (evict_index_find(p, key) != EVICT_NIL || p->size == p->capacity)
		return;
	n = p->free_head;
	assert(n != EVICT_NIL);
	p->free_head = p->nodes[n].link.next;
	memset(&p->nodes[n], 0, sizeof(p->nodes[n]));
	p->nodes[n].key = key;
	p->nodes[n].weight = weight == 0 ? 1 : weight > UINT32_MAX ? UINT32_MAX : (uint32_t)weight;
	index_add(p, key, n);
	p->size++;
	p->weight += p->nodes[n].weight;
	p->ops->insert(p, n);
	assert(p->nodes[n].tag != EVICT_TAG_FREE);
}

void evict_policy_remove(struct evict_policy *p, uint64_t key)
{
	uint32_t n = evict_index_find(p, key);

	if (n == EVICT_NIL)
		return;
	p->ops->remove(p, n);
	index_del(p, key);
	p->size--;
	p->weight -= p->nodes[n].weight;
	p->nodes[n].tag = EVICT_TAG_FREE;
	p->nodes[n].link.next = p->free_head;
	p->free_head = n;
}

bool evict_policy_contains(const struct evict_policy *p, uint64_t key)
{
	return evict_index_find(p, key) != EVICT_NIL;
}

size_t evict_policy_size(const struct evict_policy *p)
{
	return p->size;
}

size_t evict_policy_capacity(const struct evict_policy *p)
{
	return p->capacity;
}

bool evict_policy_grow(struct evict_policy *p, size_t capacity)
{
	size_t old = p->capacity, n_slots = 16;
	struct evict_node *nodes;
	struct evict_slot *slots;

	if (capacity <= old)
		return true;
	if (capacity > EVICT_MAX_CAPACITY)
		return false;
	while (n_slots < 2 * capacity)
		n_slots <<= 1;
	/* a bigger node array changes nothing by itself: node numbers stay */
	nodes = realloc(p->nodes, capacity * sizeof(*nodes));
	if (!nodes)
		return false;
	p->nodes = nodes;
	slots = malloc(n_slots * sizeof(*slots));
	if (!slots)
		return false;
	if (p->ops->grow && !p->ops->grow(p, capacity)) {
		free(slots);
		return false;
	}
	memset(&nodes[old], 0, (capacity - old) * sizeof(*nodes));
	for (size_t i = old; i < capacity; i++)
		nodes[i].link.next = i + 1 < capacity ? (uint32_t)(i + 1) : p->free_head;
	p->free_head = (uint32_t)old;
	for (size_t i = 0; i < n_slots; i++)
		slots[i].node = EVICT_NIL;
	{
		struct evict_slot *was = p->slots;
		size_t was_n = p->slot_mask + 1;

		p->slots = slots;
		p->slot_mask = n_slots - 1;
		for (size_t i = 0; i < was_n; i++)
			if (was[i].node != EVICT_NIL)
				index_add(p, was[i].key, was[i].node);
		free(was);
	}
	p->capacity = capacity;
	if (!p->weighted) {
		p->wcap = capacity;
		if (p->kind == EVICT_TINYLFU)
			evict_tinylfu_grown(p);
	}
	return true;
}

bool evict_policy_victim(struct evict_policy *p, evict_pinned_fn pinned, void *ctx,
			 uint64_t *victim)
{
	return evict_policy_victim_for(p, 1, pinned, ctx, victim);
}

bool evict_policy_admit(struct evict_policy *p, uint64_t candidate, uint64_t victim)
{
	return evict_policy_admit_for(p, candidate, 1, victim);
}

bool evict_policy_victim_for(struct evict_policy *p, uint64_t incoming, evict_pinned_fn pinned,
			     void *ctx, uint64_t *victim)
{
	if (p->size == 0)
		return false;
	p->incoming = incoming ? incoming : 1;
	return p->ops->victim(p, pinned, ctx, victim);
}

bool evict_policy_admit_for(struct evict_policy *p, uint64_t candidate, uint64_t incoming,
			    uint64_t victim)
{
	if (!p->ops->admit)
		return true;
	p->incoming = incoming ? incoming : 1;
	return p->ops->admit(p, candidate, evict_index_find(p, victim));
}

uint32_t evict_policy_stat_get(const struct evict_policy *p, uint64_t key)
{
	uint32_t n = evict_index_find(p, key);

	return n == EVICT_NIL ? 0 : p->ops->stat_get(p, n);
}

void evict_policy_stat_set(struct evict_policy *p, uint64_t key, uint32_t stat)
{
	uint32_t n = evict_index_find(p, key);

	if (n != EVICT_NIL)
		p->ops->stat_set(p, n, stat);
}

unsigned evict_policy_frequency(const struct evict_policy *p, uint64_t key)
{
	return p->kind == EVICT_TINYLFU ? evict_tinylfu_frequency(p, key) : 0;
}

void evict_policy_set_min_window(struct evict_policy *p, uint64_t n)
{
	if (p->kind == EVICT_TINYLFU)
		evict_tinylfu_set_min_window(p, n);
}

void evict_policy_set_front(struct evict_policy *p, uint64_t weight)
{
	if (p->kind == EVICT_TINYLFU)
		p->u.tlfu.front = weight;
}

bool evict_policy_check(const struct evict_policy *p)
{
	size_t indexed = 0, live = 0, free_count = 0;
	uint64_t weight = 0;

	if (p->size > p->capacity)
		return false;
	for (size_t i = 0; i <= p->slot_mask; i++) {
		const struct evict_slot *s = &p->slots[i];

		if (s->node == EVICT_NIL)
			continue;
		indexed++;
		if (s->node >= p->capacity || p->nodes[s->node].key != s->key ||
		    p->nodes[s->node].tag == EVICT_TAG_FREE ||
		    evict_index_find(p, s->key) != s->node)
			return false;
	}
	for (size_t i = 0; i < p->capacity; i++)
		if (p->nodes[i].tag != EVICT_TAG_FREE) {
			live++;
			weight += p->nodes[i].weight;
		}
	for (uint32_t n = p->free_head; n != EVICT_NIL; n = p->nodes[n].link.next) {
		if (n >= p->capacity || p->nodes[n].tag != EVICT_TAG_FREE ||
		    ++free_count > p->capacity)
			return false;
	}
	if (indexed != p->size || live != p->size || free_count + p->size != p->capacity ||
	    weight != p->weight)
		return false;
	return p->ops->check(p);
}
