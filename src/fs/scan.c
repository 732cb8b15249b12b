/* scan.c - the decisions behind a directory scan (see scan.h). */
#include "fs/scan.h"

#include <stdlib.h>
#include <string.h>

static bool bit_get(const uint8_t *b, size_t i)
{
	return b[i / 8] & (1u << (i % 8));
}

static void bit_set(uint8_t *b, size_t i)
{
	b[i / 8] |= (uint8_t)(1u << (i % 8));
}

static void bit_clear(uint8_t *b, size_t i)
{
	b[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* bytes handed out no more (never below 0) */
static void taken_sub(struct ra_scan *s, uint64_t bytes)
{
	s->bytes_taken -= bytes < s->bytes_taken ? bytes : s->bytes_taken;
}

int ra_scan_init(struct ra_scan *s, size_t n)
{
	memset(s, 0, sizeof(*s));
	if (n == 0 || n > SCAN_ENTRIES_MAX)
		return -1;
	s->opened = calloc((n + 7) / 8, 1);
	s->taken = calloc((n + 7) / 8, 1);
	s->unfetched = calloc((n + 7) / 8, 1);
	if (!s->opened || !s->taken || !s->unfetched) {
		ra_scan_release(s);
		return -1;
	}
	s->n = n;
	return 0;
}

void ra_scan_release(struct ra_scan *s)
{
	free(s->opened);
	free(s->taken);
	free(s->unfetched);
	memset(s, 0, sizeof(*s));
}

/* Every entry was opened: the next epoch starts with no marks. */
static void epoch_restart(struct ra_scan *s)
{
	memset(s->opened, 0, (s->n + 7) / 8);
	memset(s->taken, 0, (s->n + 7) / 8);
	memset(s->unfetched, 0, (s->n + 7) / 8);
	s->n_opened = 0;
	s->n_marked = 0;
	s->bytes_taken = 0;
	s->cursor = 0;
	s->epochs++;
}

/* each file once, nearly: at most one open in five a repeat */
static bool once_each(size_t n_opened, size_t opens)
{
	return n_opened >= SCAN_TRIGGER && opens * 4 <= n_opened * 5;
}

bool ra_scan_on_open(struct ra_scan *s, size_t idx, uint64_t now_us)
{
	bool was = s->active;

	if (idx >= s->n)
		return false;
	if (s->run_opens && now_us - s->last_open_us > SCAN_IDLE_US) {
		s->active = false;      /* woken from idle: the job shows itself again */
		was = false;
		s->run_new = s->run_opens = 0;
		/* and takes anew: nothing of then is held or handed back */
		memset(s->taken, 0, (s->n + 7) / 8);
		memset(s->unfetched, 0, (s->n + 7) / 8);
		s->n_marked = s->n_opened;
		s->bytes_taken = 0;
		s->wakes++;
	}
	s->last_open_us = now_us;
	s->run_opens++;
	if (!bit_get(s->opened, idx)) {
		if (!bit_get(s->taken, idx))
			s->n_marked++;
		bit_set(s->opened, idx);
		s->n_opened++;
		s->run_new++;
	}
	if (!s->active && once_each(s->run_new, s->run_opens))
		s->active = true;
	if (s->n_opened == s->n)
		epoch_restart(s);     /* stays active: the next epoch reads them all again */
	return s->active && !was;
}

uint64_t ra_scan_holds(const struct ra_scan *s, uint64_t now_us)
{
	return now_us - s->last_open_us > SCAN_IDLE_US ? 0 : s->bytes_taken;
}

/* a file of s opened since it last woke, the last within SCAN_IDLE_US */
static bool opened_lately(const struct ra_scan *s, uint64_t now_us)
{
	return s->run_new > 0 && now_us - s->last_open_us <= SCAN_IDLE_US;
}

bool ra_scan_family_due(const struct ra_scan *const *members, size_t n, uint64_t now_us)
{
	size_t n_opened = 0, opens = 0, touched = 0;

	for (size_t i = 0; i < n; i++) {
		if (!opened_lately(members[i], now_us))
			continue;
		n_opened += members[i]->run_new;
		opens += members[i]->run_opens;
		touched++;
	}
	return touched >= 2 && once_each(n_opened, opens);
}

bool ra_scan_activate(struct ra_scan *s, uint64_t now_us)
{
	if (s->active || !opened_lately(s, now_us))
		return false;
	s->active = true;
	return true;
}

bool ra_scan_take(struct ra_scan *s, uint64_t now_us, uint64_t budget, size_t *idx)
{
	if (!s->active || s->bytes_taken >= budget || s->n_marked == s->n ||
	    now_us - s->last_open_us > SCAN_IDLE_US)
		return false;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (s->cursor + k) % s->n;

		if (bit_get(s->opened, i) || bit_get(s->taken, i))
			continue;
		bit_set(s->taken, i);
		s->n_marked++;
		s->cursor = (i + 1) % s->n;
		*idx = i;
		return true;
	}
	return false;
}

bool ra_scan_opened(const struct ra_scan *s, size_t idx)
{
	return idx < s->n && bit_get(s->opened, idx);
}

void ra_scan_account(struct ra_scan *s, uint64_t bytes)
{
	s->bytes_taken += bytes;
}

void ra_scan_consumed(struct ra_scan *s, size_t idx, uint64_t bytes)
{
	if (idx >= s->n || !bit_get(s->taken, idx) || bit_get(s->opened, idx) ||
	    bit_get(s->unfetched, idx))
		return;
	taken_sub(s, bytes);
}

void ra_scan_not_fetched(struct ra_scan *s, size_t idx, uint64_t bytes)
{
	if (idx >= s->n || !bit_get(s->taken, idx) || bit_get(s->opened, idx) ||
	    bit_get(s->unfetched, idx))
		return;
	bit_set(s->unfetched, idx);
	taken_sub(s, bytes);
}

void ra_scan_untake(struct ra_scan *s, size_t idx, uint64_t bytes)
{
	if (idx >= s->n || !bit_get(s->taken, idx))
		return;
	bit_clear(s->taken, idx);
	if (!bit_get(s->opened, idx))
		s->n_marked--;          /* marked by the take alone */
	if (bit_get(s->unfetched, idx))
		bit_clear(s->unfetched, idx);   /* its bytes left the budget then */
	else
		taken_sub(s, bytes);
	s->cursor = idx;            /* the first to hand out again */
}
