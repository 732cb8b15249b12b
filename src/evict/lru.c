/* lru.c - exact least-recently-used order on one intrusive list.
 *
 * Invariants: every resident node is on u.lru.list, most recent at the
 * head; an access or insert moves the node to the head and stamps it with
 * the next value of u.lru.seq, so along the list seq decreases from head
 * to tail (modulo 2^32, and except where stat_set could not sift a
 * restored node far enough, see lru_stat_set()).
 *
 * The victim is the least recent unpinned key among the EVICT_SCAN_MAX
 * least recent: a tier with more pinned chunks than that is overloaded,
 * and walking further would make every miss pay for it.
 */
#include "evict/policy.h"

static bool lru_init(struct evict_policy *p)
{
	evict_list_init(&p->u.lru.list);
	p->u.lru.seq = 0;
	return true;
}

static void lru_release(struct evict_policy *p)
{
}

static void lru_touch(struct evict_policy *p, uint32_t n)
{
	struct evict_list *l = &p->u.lru.list;

	p->nodes[n].stat = ++p->u.lru.seq;
	if (l->head == n)
		return;
	evict_list_unlink(p->nodes, l, n);
	evict_list_push_head(p->nodes, l, n);
}

static void lru_access(struct evict_policy *p, uint64_t key, uint32_t n)
{
	if (n != EVICT_NIL)
		lru_touch(p, n);
}

static void lru_insert(struct evict_policy *p, uint32_t n)
{
	p->nodes[n].tag = EVICT_TAG_RESIDENT;
	p->nodes[n].stat = ++p->u.lru.seq;
	evict_list_push_head(p->nodes, &p->u.lru.list, n);
}

static void lru_remove(struct evict_policy *p, uint32_t n)
{
	evict_list_unlink(p->nodes, &p->u.lru.list, n);
}

static bool lru_victim(struct evict_policy *p, evict_pinned_fn pinned, void *ctx,
		       uint64_t *victim)
{
	uint32_t n = evict_list_victim(p, &p->u.lru.list, pinned, ctx);

	if (n == EVICT_NIL)
		return false;
	*victim = p->nodes[n].key;
	return true;
}

/* The stat is the key's access sequence number (32 bits, wrapping). */
static uint32_t lru_stat_get(const struct evict_policy *p, uint32_t n)
{
	return p->nodes[n].stat;
}

/* Restore a sequence number: later accesses must be newer than it, so
 * the policy's own counter moves past it; then the node (just inserted,
 * at the head) sinks past newer-stamped neighbours, at most
 * EVICT_SCAN_MAX steps.  Restoring in ascending stat order (what a start-
 * up that sorts its index does) rebuilds the exact order with no step;
 * any other order gives an approximation, never an unbounded walk. */
static void lru_stat_set(struct evict_policy *p, uint32_t n, uint32_t stat)
{
	struct evict_list *l = &p->u.lru.list;
	uint32_t older;

	p->nodes[n].stat = stat;
	if ((int32_t)(stat - p->u.lru.seq) > 0)
		p->u.lru.seq = stat;
	for (int i = 0; i < EVICT_SCAN_MAX; i++) {
		older = p->nodes[n].link.next;
		if (older == EVICT_NIL || (int32_t)(p->nodes[older].stat - stat) <= 0)
			break;
		/* swap n with the older neighbour: n goes right after it */
		evict_list_unlink(p->nodes, l, n);
		p->nodes[n].link.prev = older;
		p->nodes[n].link.next = p->nodes[older].link.next;
		if (p->nodes[older].link.next != EVICT_NIL)
			p->nodes[p->nodes[older].link.next].link.prev = n;
		else
			l->tail = n;
		p->nodes[older].link.next = n;
		l->len++;
		l->weight += p->nodes[n].weight;
	}
}

static bool lru_check(const struct evict_policy *p)
{
	return p->u.lru.list.len == p->size &&
	       evict_list_check(p, &p->u.lru.list, EVICT_TAG_RESIDENT);
}

const struct evict_ops evict_lru_ops = {
	.init = lru_init,
	.release = lru_release,
	.access = lru_access,
	.insert = lru_insert,
	.remove = lru_remove,
	.victim = lru_victim,
	.admit = NULL,
	.stat_get = lru_stat_get,
	.stat_set = lru_stat_set,
	.check = lru_check,
};
