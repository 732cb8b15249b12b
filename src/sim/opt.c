/* opt.c - Belady's OPT with bypass, by next-use positions and an indexed max-heap.
 *
 * next[i] is the position of the next access to the key accessed at i (or
 * NEVER), found in one backward pass over the dense ids.  The residents
 * sit in a binary max-heap ordered by the position of their next use, so
 * the root is the one OPT would drop.  The heap is indexed (slot[id] is an
 * id's place in it, or NONE when not resident), so a hit updates its key in
 * place and the heap never holds more than capacity entries: no lazy
 * deletion, memory fixed before the replay starts.
 *
 * On a hit the key's next use moves later, so it can only sift up.  On a
 * miss with the heap full, the newcomer replaces the root only if the
 * root's next use is strictly farther than the newcomer's; otherwise the
 * newcomer is bypassed (ties, typically two keys never used again, change
 * no hit count).
 */
#include "sim/opt.h"

#include <stdlib.h>

#include "common/tfs_err.h"

#define NEVER UINT32_MAX
#define NONE UINT32_MAX

struct opt_heap {
	uint32_t *ids;          /* heap of resident ids, size entries */
	uint32_t *slot;         /* id -> index in ids, or NONE */
	uint32_t *when;         /* id -> position of its next use (residents) */
	size_t size;
};

static void heap_swap(struct opt_heap *h, size_t i, size_t j)
{
	uint32_t a = h->ids[i], b = h->ids[j];

	h->ids[i] = b;
	h->ids[j] = a;
	h->slot[b] = (uint32_t)i;
	h->slot[a] = (uint32_t)j;
}

static void heap_up(struct opt_heap *h, size_t i)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h->when[h->ids[parent]] >= h->when[h->ids[i]])
			break;
		heap_swap(h, i, parent);
		i = parent;
	}
}

static void heap_down(struct opt_heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, big = i;

		if (l < h->size && h->when[h->ids[l]] > h->when[h->ids[big]])
			big = l;
		if (r < h->size && h->when[h->ids[r]] > h->when[h->ids[big]])
			big = r;
		if (big == i)
			return;
		heap_swap(h, i, big);
		i = big;
	}
}

int opt_hits(const struct trace *t, size_t capacity, uint64_t *hits)
{
	struct opt_heap h = { 0 };
	uint32_t *next = NULL, *last = NULL;
	size_t nd = t->n_distinct ? t->n_distinct : 1;
	uint64_t count = 0;
	int rc = TFS_OK;

	*hits = 0;
	if (capacity == 0)
		return TFS_E_INVAL;
	if (capacity > nd)
		capacity = nd;
	next = malloc((t->n ? t->n : 1) * sizeof(*next));
	last = malloc(nd * sizeof(*last));
	h.ids = malloc(capacity * sizeof(*h.ids));
	h.slot = malloc(nd * sizeof(*h.slot));
	h.when = malloc(nd * sizeof(*h.when));
	if (!next || !last || !h.ids || !h.slot || !h.when) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	for (size_t k = 0; k < nd; k++) {
		last[k] = NEVER;
		h.slot[k] = NONE;
	}
	for (size_t i = t->n; i-- > 0;) {
		next[i] = last[t->ids[i]];
		last[t->ids[i]] = (uint32_t)i;
	}

	for (size_t i = 0; i < t->n; i++) {
		uint32_t id = t->ids[i];

		if (h.slot[id] != NONE) {
			if (i >= t->warm_from)
				count++;
			h.when[id] = next[i];
			heap_up(&h, h.slot[id]);
		} else if (h.size < capacity) {
			h.when[id] = next[i];
			h.ids[h.size] = id;
			h.slot[id] = (uint32_t)h.size;
			heap_up(&h, h.size++);
		} else if (h.when[h.ids[0]] > next[i]) {
			h.slot[h.ids[0]] = NONE;
			h.when[id] = next[i];
			h.ids[0] = id;
			h.slot[id] = 0;
			heap_down(&h, 0);
		}
	}
	*hits = count;
out:
	free(h.when);
	free(h.slot);
	free(h.ids);
	free(last);
	free(next);
	return rc;
}

double trace_bound_cn(const struct trace *t, size_t capacity)
{
	if (t->n_distinct == 0)
		return 0;
	if (capacity >= t->n_distinct)
		return 1;
	return (double)capacity / (double)t->n_distinct;
}
