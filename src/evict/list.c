/* list.c - the doubly linked lists of nodes the policies keep their
 * resident keys in (LRU's one list, W-TinyLFU's window, probation and
 * protected): the checks and the victim scan they share.  The inline
 * list operations are in policy.h. */
#include "evict/policy.h"

bool evict_list_check(const struct evict_policy *p, const struct evict_list *l, uint32_t tag)
{
	size_t count = 0;
	uint64_t weight = 0;
	uint32_t next = EVICT_NIL;

	for (uint32_t n = l->tail; n != EVICT_NIL; next = n, n = p->nodes[n].link.prev) {
		if (n >= p->capacity || count++ > l->len)
			return false;
		if (p->nodes[n].tag != tag || p->nodes[n].link.next != next)
			return false;
		weight += p->nodes[n].weight;
	}
	return count == l->len && weight == l->weight && (l->len == 0 ? l->head == EVICT_NIL : l->head == next);
}

uint32_t evict_list_victim(const struct evict_policy *p, const struct evict_list *l,
			   evict_pinned_fn pinned, void *ctx)
{
	uint32_t n = l->tail;

	for (int i = 0; i < EVICT_SCAN_MAX && n != EVICT_NIL; i++, n = p->nodes[n].link.prev)
		if (!pinned || !pinned(ctx, p->nodes[n].key))
			return n;
	return EVICT_NIL;
}
