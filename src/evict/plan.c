/* plan.c - a loader's plan and its rolling window (see plan.h).
 *
 * Paths live in one arena, NUL-terminated, entry i at off[i].  The index
 * is open addressing over slots holding 1 + the entry of a path's
 * earliest unconsumed occurrence; later occurrences chain through
 * next_dup[] in plan order, so an open consumes in O(1) however often a
 * path repeats.  Flags per entry say consumed, handed out, and counted in
 * ahead_bytes (sizes[] then holds the bytes counted).
 */
#include "evict/plan.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum {
	F_CONSUMED = 1,
	F_TAKEN = 2,
	F_AHEAD = 4,       /* its bytes are in ahead_bytes */
};

struct ra_plan {
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t *off;            /* entry i's path at arena + off[i] */
	size_t n, cap;
	bool sealed;
	uint8_t *flags;
	uint64_t *sizes;
	uint32_t *next_dup;       /* 1 + the next occurrence of the same path; 0 = none */
	uint32_t *slots;          /* 1 + an entry; 0 = empty */
	size_t mask;
	size_t window_files;
	uint64_t window_bytes;
	size_t low, hi, next, consumed, skips;
	uint64_t ahead_bytes;
};

struct ra_plan *ra_plan_new(void)
{
	return calloc(1, sizeof(struct ra_plan));
}

void ra_plan_free(struct ra_plan *p)
{
	if (!p)
		return;
	free(p->arena);
	free(p->off);
	free(p->flags);
	free(p->sizes);
	free(p->next_dup);
	free(p->slots);
	free(p);
}

int ra_plan_add(struct ra_plan *p, const char *path, size_t len)
{
	if (p->sealed || len == 0 || len > PLAN_PATH_MAX || memchr(path, '\0', len) ||
	    p->n >= PLAN_ENTRIES_MAX)
		return -1;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 1024;
		uint64_t *off = realloc(p->off, cap * sizeof(*off));

		if (!off)
			return -1;
		p->off = off;
		p->cap = cap;
	}
	if (p->arena_len + len + 1 > p->arena_cap) {
		size_t cap = p->arena_cap ? p->arena_cap : 64 * 1024;
		char *a;

		while (cap < p->arena_len + len + 1)
			cap *= 2;
		if (!(a = realloc(p->arena, cap)))
			return -1;
		p->arena = a;
		p->arena_cap = cap;
	}
	memcpy(p->arena + p->arena_len, path, len);
	p->arena[p->arena_len + len] = '\0';
	p->off[p->n++] = p->arena_len;
	p->arena_len += len + 1;
	return 0;
}

size_t ra_plan_entries(const struct ra_plan *p)
{
	return p->n;
}

static const char *path_of(const struct ra_plan *p, size_t i)
{
	return p->arena + p->off[i];
}

/* The slot holding path (hash h), or the empty slot where it would go. */
static size_t slot_find(const struct ra_plan *p, const char *path, uint64_t h)
{
	size_t s = (size_t)h & p->mask;

	while (p->slots[s] && strcmp(path_of(p, p->slots[s] - 1), path) != 0)
		s = (s + 1) & p->mask;
	return s;
}

int ra_plan_seal(struct ra_plan *p, size_t window_files, uint64_t window_bytes)
{
	size_t ns = 16;

	while (ns < p->n * 2)
		ns *= 2;
	p->flags = calloc(p->n ? p->n : 1, sizeof(*p->flags));
	p->sizes = calloc(p->n ? p->n : 1, sizeof(*p->sizes));
	p->next_dup = calloc(p->n ? p->n : 1, sizeof(*p->next_dup));
	p->slots = calloc(ns, sizeof(*p->slots));
	if (!p->flags || !p->sizes || !p->next_dup || !p->slots)
		return -1;
	p->mask = ns - 1;
	/* backwards: each slot ends at the first occurrence, chained forward */
	for (size_t i = p->n; i-- > 0;) {
		const char *path = path_of(p, i);
		size_t s = slot_find(p, path, XXH3_64bits(path, strlen(path)));

		p->next_dup[i] = p->slots[s];
		p->slots[s] = (uint32_t)(i + 1);
	}
	p->window_files = window_files ? window_files : 1;
	p->window_bytes = window_bytes;
	p->sealed = true;
	return 0;
}

/* Entry i no longer counts as fetched-and-unread. */
static void ahead_drop(struct ra_plan *p, size_t i)
{
	if (p->flags[i] & F_AHEAD) {
		p->flags[i] &= (uint8_t)~F_AHEAD;
		p->ahead_bytes -= p->sizes[i];
	}
}

/* low past what is consumed, and never more than window_files behind hi. */
static void low_advance(struct ra_plan *p)
{
	size_t lag = p->window_files;

	while (p->low < p->n &&
	       ((p->flags[p->low] & F_CONSUMED) || p->low + lag < p->hi)) {
		ahead_drop(p, p->low);      /* read, or abandoned */
		p->low++;
	}
	if (p->next < p->low)
		p->next = p->low;
}

bool ra_plan_on_open(struct ra_plan *p, const char *path, size_t *idx)
{
	size_t s, i;

	if (!p->sealed || p->n == 0)
		return false;
	s = slot_find(p, path, XXH3_64bits(path, strlen(path)));
	if (!p->slots[s])
		return false;
	i = p->slots[s] - 1;
	while (p->flags[i] & F_CONSUMED) {
		if (!p->next_dup[i])
			return false;   /* every occurrence was read already */
		i = p->next_dup[i] - 1;
		p->slots[s] = (uint32_t)(i + 1);
	}
	p->flags[i] |= F_CONSUMED;
	p->consumed++;
	ahead_drop(p, i);
	if (i + 1 > p->hi)
		p->hi = i + 1;
	if (i >= p->next + p->window_files) {
		/* skipped ahead: what lies between will not be read */
		p->skips++;
		while (p->low < i) {
			ahead_drop(p, p->low);
			p->low++;
		}
		p->next = i + 1;
	}
	low_advance(p);
	*idx = i;
	return true;
}

bool ra_plan_take(struct ra_plan *p, size_t *idx, const char **path)
{
	if (!p->sealed)
		return false;
	while (p->next < p->n && p->next < p->low + p->window_files &&
	       p->ahead_bytes < p->window_bytes) {
		size_t i = p->next++;

		if (p->flags[i] & F_CONSUMED)
			continue;
		p->flags[i] |= F_TAKEN;
		*idx = i;
		*path = path_of(p, i);
		return true;
	}
	return false;
}

bool ra_plan_can_take(const struct ra_plan *p)
{
	return p->sealed && p->next < p->n && p->next < p->low + p->window_files &&
	       p->ahead_bytes < p->window_bytes;
}

bool ra_plan_wake_due(const struct ra_plan *p)
{
	size_t end, batch = p->window_files / 8;

	if (!ra_plan_can_take(p))
		return false;
	if (batch > RA_PLAN_WAKE_FILES)
		batch = RA_PLAN_WAKE_FILES;
	end = p->low + p->window_files < p->n ? p->low + p->window_files : p->n;
	return end - p->next >= (batch ? batch : 1) || end == p->n;
}

void ra_plan_account(struct ra_plan *p, size_t idx, uint64_t bytes)
{
	if (idx >= p->n || !(p->flags[idx] & F_TAKEN) ||
	    (p->flags[idx] & (F_CONSUMED | F_AHEAD)) || idx < p->low)
		return;     /* read or left behind while it was being fetched */
	p->flags[idx] |= F_AHEAD;
	p->sizes[idx] = bytes;
	p->ahead_bytes += bytes;
}

int ra_plan_ahead(const struct ra_plan *p, const char *path)
{
	size_t s, i;
	int n = 0;

	if (!p->sealed || p->n == 0)
		return -1;
	s = slot_find(p, path, XXH3_64bits(path, strlen(path)));
	if (!p->slots[s])
		return -1;
	/* the slot holds the earliest occurrence not consumed (or the last);
	 * occurrences left behind come first, so the walk is short */
	for (i = p->slots[s] - 1; n < 2; i = p->next_dup[i] - 1) {
		if (!(p->flags[i] & F_CONSUMED) && i >= p->low)
			n++;
		if (!p->next_dup[i])
			break;
	}
	return n;
}

bool ra_plan_done(const struct ra_plan *p)
{
	return p->sealed && p->low >= p->n;
}

void ra_plan_info(const struct ra_plan *p, struct ra_plan_info *out)
{
	out->entries = p->n;
	out->low = p->low;
	out->next = p->next;
	out->consumed = p->consumed;
	out->skips = p->skips;
	out->ahead_bytes = p->ahead_bytes;
}

/* ---- the mount's current plan ---- */

int plan_slot_init(struct plan_slot *s, const char *prefix)
{
	memset(s, 0, sizeof(*s));
	s->prefix = strdup(prefix ? prefix : "");
	if (!s->prefix)
		return -1;
	pthread_mutex_init(&s->lock, NULL);
	return 0;
}

void plan_slot_release(struct plan_slot *s)
{
	if (!s->prefix)
		return;
	ra_plan_free(s->plan);
	pthread_mutex_destroy(&s->lock);
	free(s->prefix);
	memset(s, 0, sizeof(*s));
}

struct ra_plan *plan_slot_lock(struct plan_slot *s, uint64_t *gen)
{
	pthread_mutex_lock(&s->lock);
	if (gen)
		*gen = s->gen;
	return s->plan;
}

void plan_slot_unlock(struct plan_slot *s)
{
	pthread_mutex_unlock(&s->lock);
}

struct ra_plan *plan_slot_swap(struct plan_slot *s, struct ra_plan *p)
{
	struct ra_plan *old;

	pthread_mutex_lock(&s->lock);
	old = s->plan;
	s->plan = p;
	s->gen++;
	pthread_mutex_unlock(&s->lock);
	return old;
}

enum plan_future plan_slot_future(struct plan_slot *s, const char *key, bool storing)
{
	size_t pl = strlen(s->prefix);
	enum plan_future f = PLAN_UNKNOWN;
	int n;

	if (strncmp(key, s->prefix, pl) != 0)
		return f;
	pthread_mutex_lock(&s->lock);
	if (s->plan && (n = ra_plan_ahead(s->plan, key + pl)) >= 0) {
		/* a chunk being stored was fetched for a read: by a reader
		 * (its open consumed it) or ahead of the plan (not yet, and
		 * that open will find it in RAM), so one open still to come
		 * is the one it serves */
		f = n > (storing ? 1 : 0) ? PLAN_SOON : PLAN_DONE;
	}
	pthread_mutex_unlock(&s->lock);
	return f;
}
