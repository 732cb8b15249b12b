/* pin_set.c - a chained hash table of pinned keys (see pin_set.h).
 *
 * Invariants (under lock): n counts the nodes; bytes[t] is the sum of the
 * sizes of the nodes pinned in tier t; the table has at least n / 2
 * buckets (grown by doubling, never shrunk).  `count` mirrors n for the
 * lock-free empty test.
 */
#include "tiers/pin_set.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/tfs_err.h"

struct pin_node {
	struct pin_node *next;
	uint64_t hash, size;
	enum pin_tier tier;
	char key[];
};

struct pin_set {
	pthread_rwlock_t lock;
	struct pin_node **buckets;
	size_t n_buckets, n;          /* n_buckets: a power of two */
	uint64_t bytes[3];            /* indexed by enum pin_tier */
	atomic_size_t count;
};

struct pin_set *pin_set_new(void)
{
	struct pin_set *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->n_buckets = 64;
	ps->buckets = calloc(ps->n_buckets, sizeof(*ps->buckets));
	if (!ps->buckets) {
		free(ps);
		return NULL;
	}
	pthread_rwlock_init(&ps->lock, NULL);
	return ps;
}

static void nodes_free(struct pin_set *ps)
{
	for (size_t b = 0; b < ps->n_buckets; b++) {
		struct pin_node *x = ps->buckets[b], *next;

		for (; x; x = next) {
			next = x->next;
			free(x);
		}
		ps->buckets[b] = NULL;
	}
	ps->n = 0;
	memset(ps->bytes, 0, sizeof(ps->bytes));
	atomic_store(&ps->count, 0);
}

void pin_set_free(struct pin_set *ps)
{
	if (!ps)
		return;
	nodes_free(ps);
	pthread_rwlock_destroy(&ps->lock);
	free(ps->buckets);
	free(ps);
}

static struct pin_node *node_find(const struct pin_set *ps, const char *key, uint64_t h)
{
	for (struct pin_node *x = ps->buckets[h & (ps->n_buckets - 1)]; x; x = x->next)
		if (x->hash == h && strcmp(x->key, key) == 0)
			return x;
	return NULL;
}

enum pin_tier pin_set_tier(struct pin_set *ps, const char *key)
{
	uint64_t h;
	struct pin_node *x;
	enum pin_tier t;

	if (atomic_load_explicit(&ps->count, memory_order_acquire) == 0)
		return PIN_NONE;
	h = XXH3_64bits(key, strlen(key));
	pthread_rwlock_rdlock(&ps->lock);
	x = node_find(ps, key, h);
	t = x ? x->tier : PIN_NONE;
	pthread_rwlock_unlock(&ps->lock);
	return t;
}

/* Double the table when it is more than twice as full as it has buckets
 * (write lock held).  Failing to grow only makes chains longer. */
static void table_grow(struct pin_set *ps)
{
	size_t nb = ps->n_buckets * 2;
	struct pin_node **nbk;

	if (ps->n <= 2 * ps->n_buckets || !(nbk = calloc(nb, sizeof(*nbk))))
		return;
	for (size_t b = 0; b < ps->n_buckets; b++) {
		struct pin_node *x = ps->buckets[b], *next;

		for (; x; x = next) {
			next = x->next;
			x->next = nbk[x->hash & (nb - 1)];
			nbk[x->hash & (nb - 1)] = x;
		}
	}
	free(ps->buckets);
	ps->buckets = nbk;
	ps->n_buckets = nb;
}

int pin_set_add(struct pin_set *ps, const char *const *keys, const uint64_t *sizes, size_t n,
		enum pin_tier tier, uint64_t limit, uint64_t *would_be)
{
	uint64_t total, added = 0;
	size_t fresh = 0;
	int rc = TFS_OK;

	pthread_rwlock_wrlock(&ps->lock);
	/* first the whole batch's effect, so a refusal changes nothing (a key
	 * named twice in one batch is counted twice: harmless over-caution) */
	total = ps->bytes[tier];
	for (size_t i = 0; i < n; i++) {
		struct pin_node *x = node_find(ps, keys[i], XXH3_64bits(keys[i], strlen(keys[i])));

		if (x && x->tier == tier)
			total -= x->size;
		else if (!x)
			fresh++;
		added += sizes[i];
	}
	total += added;
	*would_be = total;
	if (total > limit || total < added) {
		rc = TFS_E_NOSPC;
		goto out;
	}
	if (ps->n + fresh > PIN_SET_MAX) {
		rc = TFS_E_TOOBIG;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t h = XXH3_64bits(keys[i], strlen(keys[i]));
		struct pin_node *x = node_find(ps, keys[i], h);

		if (!x) {
			size_t kl = strlen(keys[i]);

			x = malloc(sizeof(*x) + kl + 1);
			if (!x) {
				rc = TFS_E_NOMEM;   /* the earlier ones stay pinned */
				goto out;
			}
			memcpy(x->key, keys[i], kl + 1);
			x->hash = h;
			x->tier = PIN_NONE;
			x->size = 0;
			x->next = ps->buckets[h & (ps->n_buckets - 1)];
			ps->buckets[h & (ps->n_buckets - 1)] = x;
			ps->n++;
			table_grow(ps);
		}
		if (x->tier != PIN_NONE)
			ps->bytes[x->tier] -= x->size;
		x->tier = tier;
		x->size = sizes[i];
		ps->bytes[tier] += sizes[i];
	}
out:
	atomic_store_explicit(&ps->count, ps->n, memory_order_release);
	pthread_rwlock_unlock(&ps->lock);
	return rc;
}

enum pin_tier pin_set_remove(struct pin_set *ps, const char *key)
{
	uint64_t h = XXH3_64bits(key, strlen(key));
	struct pin_node **pp, *x;
	enum pin_tier t = PIN_NONE;

	pthread_rwlock_wrlock(&ps->lock);
	for (pp = &ps->buckets[h & (ps->n_buckets - 1)]; (x = *pp); pp = &x->next) {
		if (x->hash == h && strcmp(x->key, key) == 0) {
			*pp = x->next;
			t = x->tier;
			ps->bytes[t] -= x->size;
			ps->n--;
			free(x);
			break;
		}
	}
	atomic_store_explicit(&ps->count, ps->n, memory_order_release);
	pthread_rwlock_unlock(&ps->lock);
	return t;
}

size_t pin_set_clear(struct pin_set *ps)
{
	size_t n;

	pthread_rwlock_wrlock(&ps->lock);
	n = ps->n;
	nodes_free(ps);
	pthread_rwlock_unlock(&ps->lock);
	return n;
}

void pin_set_totals(struct pin_set *ps, size_t *files, uint64_t *ram_bytes, uint64_t *ssd_bytes)
{
	pthread_rwlock_rdlock(&ps->lock);
	*files = ps->n;
	*ram_bytes = ps->bytes[PIN_RAM];
	*ssd_bytes = ps->bytes[PIN_SSD];
	pthread_rwlock_unlock(&ps->lock);
}
