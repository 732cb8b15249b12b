/* counters.c - the counter tables and the log line (see counters.h). */
#include "common/counters.h"

#include <stdio.h>

const char *const tfs_tier_names[TFS_TIER_N] = { "ram", "ssd" };

#define TFS_X_TIER_INFO(name, kind, unit, prom, help, label) \
	{ NULL, #name, kind, unit, prom, NULL, help, label },
const struct tfs_counter_info tfs_tier_counter_info[TFS_TIER_COUNTER_N] = {
	TFS_TIER_COUNTERS(TFS_X_TIER_INFO)
};
#undef TFS_X_TIER_INFO

#define TFS_X_INFO(id, section, name, kind, unit, prom, labels, help, label, source) \
	{ section, name, kind, unit, prom, labels, help, label },
const struct tfs_counter_info tfs_counter_info[TFS_COUNTER_N] = {
	TFS_COUNTERS(TFS_X_INFO)
};
#undef TFS_X_INFO

static uint64_t since(uint64_t now, const uint64_t *base, enum tfs_counter_kind kind)
{
	if (!base || kind == TFS_CK_STATE)
		return now;
	return now >= *base ? now - *base : 0;
}

uint64_t tfs_counter_since(const struct tfs_counters *now, const struct tfs_counters *base,
			   enum tfs_counter i)
{
	return since(now->v[i], base ? &base->v[i] : NULL, tfs_counter_info[i].kind);
}

uint64_t tfs_tier_counter_since(const struct tfs_counters *now, const struct tfs_counters *base,
				int tier, enum tfs_tier_counter i)
{
	return since(now->tier[tier][i], base ? &base->tier[tier][i] : NULL,
		     tfs_tier_counter_info[i].kind);
}

/* Append "name=value" to buf at *off (n bytes in all), a space first
 * unless it is the first. */
static void put(char *buf, size_t n, size_t *off, const char *a, const char *b, uint64_t v)
{
	int w;

	if (*off >= n)
		return;
	w = snprintf(buf + *off, n - *off, "%s%s.%s=%llu", *off ? " " : "", a, b,
		     (unsigned long long)v);
	*off = w < 0 ? n : *off + (size_t)w;
}

void tfs_counters_line(const struct tfs_counters *c, char *buf, size_t n)
{
	size_t off = 0;

	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < TFS_COUNTER_N; i++)
		put(buf, n, &off, tfs_counter_info[i].section, tfs_counter_info[i].name, c->v[i]);
	for (int t = 0; t < TFS_TIER_N; t++) {
		if (t == TFS_TIER_SSD && !c->has_ssd)
			continue;
		for (size_t i = 0; i < TFS_TIER_COUNTER_N; i++)
			put(buf, n, &off, tfs_tier_names[t], tfs_tier_counter_info[i].name,
			    c->tier[t][i]);
	}
}
