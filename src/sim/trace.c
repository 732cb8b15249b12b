/* trace.c - access traces: growth, dense ids, the text reader and the generators.
 *
 * Invariants: n <= cap <= TRACE_MAX_ACCESSES; after trace_finish() ids[i]
 * < n_distinct for every i < n, ids are numbered in order of first
 * appearance, and warm_from <= n.
 *
 * Dense ids come from an open-addressing table (linear probing, at most
 * half full, doubled when it would be more) that lives only during
 * trace_finish(): the simulator needs the ids, not the table.
 */
#include "sim/trace.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/rand.h"

#define ID_EMPTY UINT32_MAX

/* ---- deterministic random numbers ---------------------------------- */

/* xorshift64* (Vigna), seeded through splitmix64 so that small seeds
 * (0, 1, 2 ...) still give unrelated streams. */
struct rng {
	uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = xorshift64s_seed(seed);
}

static uint64_t rng_next(struct rng *r)
{
	return xorshift64s_next(&r->s);
}

/* Uniform in [0, n), n > 0, without modulo bias (reject the short top). */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
	uint64_t threshold = (0 - n) % n;
	uint64_t x;

	do
		x = rng_next(r);
	while (x < threshold);
	return x % n;
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- the trace itself ----------------------------------------------- */

void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
}

void trace_release(struct trace *t)
{
	free(t->keys);
	free(t->ids);
	free(t->chunk_bytes);
	free(t->read_bytes);
	free(t->visit);
	trace_init(t);
}

/* Grow one array of t to cap elements of size each. */
static int grow(void *arrp, size_t cap, size_t size)
{
	void **arr = arrp;
	void *p = realloc(*arr, cap * size);

	if (!p)
		return TFS_E_NOMEM;
	*arr = p;
	return TFS_OK;
}

static int trace_reserve(struct trace *t, size_t want)
{
	uint64_t *k;
	size_t cap;

	if (want <= t->cap)
		return TFS_OK;
	if (want > TRACE_MAX_ACCESSES)
		return TFS_E_TOOBIG;
	cap = t->cap ? t->cap : 1024;
	while (cap < want)
		cap *= 2;
	if (cap > TRACE_MAX_ACCESSES)
		cap = TRACE_MAX_ACCESSES;
	k = realloc(t->keys, cap * sizeof(*k));
	if (!k)
		return TFS_E_NOMEM;
	t->keys = k;
	if (t->sized && (grow(&t->chunk_bytes, cap, sizeof(uint32_t)) != TFS_OK ||
			 grow(&t->read_bytes, cap, sizeof(uint32_t)) != TFS_OK ||
			 grow(&t->visit, cap, sizeof(uint8_t)) != TFS_OK))
		return TFS_E_NOMEM;   /* cap unchanged: the next push grows again */
	t->cap = cap;
	return TFS_OK;
}

int trace_push(struct trace *t, uint64_t key)
{
	int rc = t->sized ? TFS_E_INVAL : trace_reserve(t, t->n + 1);

	if (rc != TFS_OK)
		return rc;
	t->keys[t->n++] = key;
	return TFS_OK;
}

int trace_push_sized(struct trace *t, uint64_t key, uint32_t chunk_bytes, uint32_t read_bytes,
		     bool visit)
{
	int rc = !t->sized || chunk_bytes == 0 || read_bytes > chunk_bytes
			 ? TFS_E_INVAL : trace_reserve(t, t->n + 1);

	if (rc != TFS_OK)
		return rc;
	t->chunk_bytes[t->n] = chunk_bytes;
	t->read_bytes[t->n] = read_bytes;
	t->visit[t->n] = visit;
	t->keys[t->n++] = key;
	return TFS_OK;
}


struct id_table {
	uint64_t *keys;
	uint32_t *ids;
	size_t mask;
};

static int id_table_init(struct id_table *tb, size_t n_slots)
{
	tb->keys = malloc(n_slots * sizeof(*tb->keys));
	tb->ids = malloc(n_slots * sizeof(*tb->ids));
	tb->mask = n_slots - 1;
	if (!tb->keys || !tb->ids) {
		free(tb->keys);
		free(tb->ids);
		return TFS_E_NOMEM;
	}
	for (size_t i = 0; i < n_slots; i++)
		tb->ids[i] = ID_EMPTY;
	return TFS_OK;
}

static void id_table_release(struct id_table *tb)
{
	free(tb->keys);
	free(tb->ids);
}

/* The slot holding key, or the empty slot where it belongs. */
static size_t id_table_slot(const struct id_table *tb, uint64_t key)
{
	size_t i = (size_t)mix64(key) & tb->mask;

	while (tb->ids[i] != ID_EMPTY && tb->keys[i] != key)
		i = (i + 1) & tb->mask;
	return i;
}

static int id_table_grow(struct id_table *tb)
{
	struct id_table bigger;
	int rc = id_table_init(&bigger, 2 * (tb->mask + 1));

	if (rc != TFS_OK)
		return rc;
	for (size_t i = 0; i <= tb->mask; i++) {
		if (tb->ids[i] != ID_EMPTY) {
			size_t j = id_table_slot(&bigger, tb->keys[i]);

			bigger.keys[j] = tb->keys[i];
			bigger.ids[j] = tb->ids[i];
		}
	}
	id_table_release(tb);
	*tb = bigger;
	return TFS_OK;
}

int trace_finish(struct trace *t)
{
	struct id_table tb;
	uint32_t *ids;
	size_t distinct = 0;
	int rc;

	ids = realloc(t->ids, (t->n ? t->n : 1) * sizeof(*ids));
	if (!ids)
		return TFS_E_NOMEM;
	t->ids = ids;
	rc = id_table_init(&tb, 1024);
	if (rc != TFS_OK)
		return rc;
	for (size_t i = 0; i < t->n; i++) {
		size_t s = id_table_slot(&tb, t->keys[i]);

		if (tb.ids[s] == ID_EMPTY) {
			if (2 * (distinct + 1) > tb.mask + 1) {
				rc = id_table_grow(&tb);
				if (rc != TFS_OK)
					goto out_table;
				s = id_table_slot(&tb, t->keys[i]);
			}
			tb.keys[s] = t->keys[i];
			tb.ids[s] = (uint32_t)distinct++;
		}
		t->ids[i] = tb.ids[s];
	}
	t->n_distinct = distinct;
	t->warm_from = t->epoch_len ? t->epoch_len : t->n / 5;
	if (t->warm_from > t->n)
		t->warm_from = t->n;
out_table:
	id_table_release(&tb);
	return rc;
}

uint64_t trace_chunk_key(const char *obj, size_t obj_len, uint64_t chunk_index)
{
	return XXH3_64bits_withSeed(obj, obj_len, chunk_index);
}

/* ---- the text reader ------------------------------------------------ */

/* A whole token [s, e) as an unsigned decimal or 0x-hex integer. */
static bool parse_u64(const char *s, const char *e, uint64_t *out)
{
	char buf[32];
	char *end;
	size_t len = (size_t)(e - s);
	int base = 10;
	size_t i = 0;
	unsigned long long v;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (len > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < len; i++)
		if (base == 16 ? !isxdigit((unsigned char)buf[i]) : !isdigit((unsigned char)buf[i]))
			return false;
	errno = 0;
	v = strtoull(buf, &end, base);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* The next blank-separated field of [*s, e) as a decimal number of at
 * most 32 bits; *s moves past it and the blanks after it. */
static bool take_u32(char **s, char *e, uint32_t *out)
{
	char *f = *s;
	uint64_t v;

	while (*s < e && !is_blank(**s))
		(*s)++;
	if (!parse_u64(f, *s, &v) || v > UINT32_MAX || (f[0] == '0' && *s - f > 1))
		return false;   /* no 0x here: a byte count is decimal */
	while (*s < e && is_blank(**s))
		(*s)++;
	*out = (uint32_t)v;
	return true;
}

/* Does the comment [s, e) start with header h? */
static bool is_header(const char *s, const char *e, const char *h)
{
	return (size_t)(e - s) >= strlen(h) && memcmp(s, h, strlen(h)) == 0;
}

/* One line, trimmed of its newline, into *key (and, sized, *chunk and
 * *read; with pieces, *visit).  false if malformed, with why in *what;
 * *skip for blank and comment lines, *header the version of a
 * TRACE_HEADER_2 or TRACE_HEADER_3 line (else 0). */
static bool parse_line(char *line, size_t len, bool sized, bool pieces, uint64_t *key,
		       uint32_t *chunk, uint32_t *read, bool *visit, bool *skip, int *header,
		       const char **what)
{
	char *s = line, *e = line + len;
	char *idx;
	uint32_t v = 1;

	*skip = false;
	*header = 0;
	while (s < e && is_blank(*s))
		s++;
	while (e > s && is_blank(e[-1]))
		e--;
	if (s == e || *s == '#') {
		*skip = true;
		*header = is_header(s, e, TRACE_HEADER_2) ? 2 : is_header(s, e, TRACE_HEADER_3) ? 3 : 0;
		return true;
	}
	if (memchr(s, '\0', (size_t)(e - s))) {
		*what = "a NUL byte";
		return false;
	}
	if (sized) {
		*what = "a sized trace's line starts with CHUNK_BYTES READ_BYTES (decimal, "
			"READ_BYTES <= CHUNK_BYTES, 0 < CHUNK_BYTES < 2^32)";
		if (!take_u32(&s, e, chunk) || !take_u32(&s, e, read) || *chunk == 0 ||
		    *read > *chunk || s == e)
			return false;
		*what = "a version 3 trace's line has VISIT (0 or 1) after READ_BYTES";
		if (pieces && (!take_u32(&s, e, &v) || v > 1 || s == e))
			return false;
		*visit = v == 1;
	}
	for (idx = e; idx > s && !is_blank(idx[-1]); idx--)
		;
	if (idx == s) {
		*what = "not a decimal or 0x-hex integer";
		return parse_u64(s, e, key);
	}
	{
		uint64_t chunk;
		char *obj_end = idx;

		if (!parse_u64(idx, e, &chunk)) {
			*what = "the chunk index (last field) is not a decimal or 0x-hex integer";
			return false;
		}
		while (obj_end > s && is_blank(obj_end[-1]))
			obj_end--;
		*key = trace_chunk_key(s, (size_t)(obj_end - s), chunk);
	}
	return true;
}

int trace_read_stream(struct trace *t, FILE *in, struct tfs_errinfo *ei)
{
	char line[TRACE_MAX_LINE + 2];
	size_t lineno = 0;
	int rc = TFS_OK;

	while (fgets(line, sizeof(line), in)) {
		size_t len = strlen(line);
		const char *what = "malformed";
		uint64_t key;
		uint32_t chunk = 0, read = 0;
		bool skip, visit = true;
		int header;

		lineno++;
		if (len > 0 && line[len - 1] != '\n' && !feof(in)) {
			tfs_errinfo_set(ei, "line %zu: longer than %d bytes", lineno, TRACE_MAX_LINE);
			rc = TFS_E_INVAL;
			goto fail;
		}
		if (!parse_line(line, len, t->sized, t->pieces, &key, &chunk, &read, &visit, &skip,
				&header, &what)) {
			tfs_errinfo_set(ei, "line %zu: %s", lineno, what);
			rc = TFS_E_INVAL;
			goto fail;
		}
		if (header && t->n == 0) {
			t->sized = true;
			t->pieces = header == 3;
		}
		if (skip)
			continue;
		rc = t->sized ? trace_push_sized(t, key, chunk, read, visit) : trace_push(t, key);
		if (rc == TFS_E_TOOBIG)
			tfs_errinfo_set(ei, "line %zu: more than %zu accesses", lineno,
					TRACE_MAX_ACCESSES);
		if (rc != TFS_OK)
			goto fail;
	}
	if (ferror(in)) {
		tfs_errinfo_set(ei, "read error after line %zu", lineno);
		rc = TFS_E_IO;
		goto fail;
	}
	rc = trace_finish(t);
	if (rc != TFS_OK)
		goto fail;
	return TFS_OK;

fail:
	trace_release(t);
	return rc;
}

int trace_read_file(struct trace *t, const char *path, struct tfs_errinfo *ei)
{
	FILE *in = fopen(path, "r");
	int rc;

	if (!in) {
		tfs_errinfo_set(ei, "%s", strerror(errno));
		return TFS_E_NOENT;
	}
	rc = trace_read_stream(t, in, ei);
	fclose(in);
	if (rc == TFS_OK) {
		const char *base = strrchr(path, '/');

		snprintf(t->name, sizeof(t->name), "%s", base ? base + 1 : path);
	}
	return rc;
}

/* ---- generators ------------------------------------------------------ */

/* a * b accesses, or 0 if that overflows the bound (callers reject 0). */
static size_t checked_len(size_t a, size_t b)
{
	if (a == 0 || b == 0 || a > TRACE_MAX_ACCESSES / b)
		return 0;
	return a * b;
}

static int gen_reserve(struct trace *t, size_t len)
{
	assert(t->n == 0);
	return trace_reserve(t, len);
}

static int gen_done(struct trace *t, int rc)
{
	if (rc == TFS_OK)
		rc = trace_finish(t);
	if (rc != TFS_OK)
		trace_release(t);
	return rc;
}

static void shuffle(uint64_t *a, size_t n, struct rng *r)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(r, i);
		uint64_t tmp = a[i - 1];

		a[i - 1] = a[j];
		a[j] = tmp;
	}
}

int trace_gen_epoch_sequential(struct trace *t, size_t n_items, size_t epochs)
{
	size_t len = checked_len(n_items, epochs);
	int rc;

	if (!len)
		return TFS_E_INVAL;
	rc = gen_reserve(t, len);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	for (size_t e = 0; e < epochs; e++)
		for (size_t i = 0; i < n_items; i++)
			t->keys[t->n++] = i;
	t->epoch_len = n_items;
	snprintf(t->name, sizeof(t->name), "epoch-seq N=%zu E=%zu", n_items, epochs);
	return gen_done(t, TFS_OK);
}

int trace_gen_epoch_shuffled(struct trace *t, size_t n_items, size_t epochs, uint64_t seed)
{
	size_t len = checked_len(n_items, epochs);
	struct rng r;
	int rc;

	if (!len)
		return TFS_E_INVAL;
	rc = gen_reserve(t, len);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	rng_seed(&r, seed);
	for (size_t e = 0; e < epochs; e++) {
		uint64_t *perm = t->keys + t->n;

		for (size_t i = 0; i < n_items; i++)
			perm[i] = i;
		shuffle(perm, n_items, &r);
		t->n += n_items;
	}
	t->epoch_len = n_items;
	snprintf(t->name, sizeof(t->name), "epoch-shuffled N=%zu E=%zu seed=%" PRIu64, n_items,
		 epochs, seed);
	return gen_done(t, TFS_OK);
}

/* rank^-alpha without libm (the library does not link it): exp(-alpha *
 * ln rank), ln by the atanh series on the mantissa, exp by range reduction
 * to |r| <= ln2 / 2 and a Taylor series.  Both are accurate to ~1e-15
 * relative, far below what a sampled distribution can show. */
static double zipf_weight(size_t rank, double alpha)
{
	static const double ln2 = 0.69314718055994530942;
	double m = (double)rank, z, z2, term, ln = 0, y, r, e = 1;
	int exp2 = 0;
	long n;

	while (m >= 2) {
		m /= 2;
		exp2++;
	}
	z = (m - 1) / (m + 1);          /* m in [1, 2): z in [0, 1/3) */
	z2 = z * z;
	term = z;
	for (int k = 1; k < 60; k += 2) {
		ln += term / k;
		term *= z2;
	}
	ln = 2 * ln + exp2 * ln2;
	y = -alpha * ln;                /* <= 0 */
	n = (long)(y / ln2 - 0.5);      /* round to nearest for y <= 0 */
	r = y - (double)n * ln2;
	term = 1;
	for (int k = 1; k < 25; k++) {
		term *= r / k;
		e += term;
	}
	for (; n < 0; n++)
		e /= 2;
	return e;
}

/* The CDF is a table of n_items doubles; a draw is a binary search for
 * the first rank whose cumulative probability exceeds a uniform u. */
int trace_gen_zipf(struct trace *t, size_t n_items, double alpha, size_t length, uint64_t seed)
{
	double *cdf;
	double sum = 0;
	struct rng r;
	int rc;

	if (n_items == 0 || n_items > TRACE_MAX_ACCESSES || length == 0 ||
	    length > TRACE_MAX_ACCESSES || !(alpha > 0 && alpha <= 5))
		return TFS_E_INVAL;
	rc = gen_reserve(t, length);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	cdf = malloc(n_items * sizeof(*cdf));
	if (!cdf)
		return gen_done(t, TFS_E_NOMEM);
	for (size_t k = 0; k < n_items; k++) {
		sum += zipf_weight(k + 1, alpha);
		cdf[k] = sum;
	}
	for (size_t k = 0; k < n_items; k++)
		cdf[k] /= sum;
	cdf[n_items - 1] = 1.0;
	rng_seed(&r, seed);
	for (size_t i = 0; i < length; i++) {
		double u = rng_unit(&r);
		size_t lo = 0, hi = n_items - 1;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		t->keys[t->n++] = lo;
	}
	free(cdf);
	snprintf(t->name, sizeof(t->name), "zipf N=%zu alpha=%.2f L=%zu seed=%" PRIu64, n_items,
		 alpha, length, seed);
	return gen_done(t, TFS_OK);
}

int trace_gen_hotset_scans(struct trace *t, size_t n_hot, size_t hot_between, size_t scan_len,
			   size_t rounds, uint64_t seed)
{
	size_t per_round = hot_between + scan_len;
	size_t len;
	struct rng r;
	int rc;

	if (n_hot == 0 || hot_between == 0 || scan_len == 0 || per_round < scan_len)
		return TFS_E_INVAL;
	len = checked_len(per_round, rounds);
	if (!len)
		return TFS_E_INVAL;
	rc = gen_reserve(t, len);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	rng_seed(&r, seed);
	for (size_t round = 0; round < rounds; round++) {
		for (size_t i = 0; i < hot_between; i++)
			t->keys[t->n++] = rng_below(&r, n_hot);
		for (size_t i = 0; i < scan_len; i++)
			t->keys[t->n++] = (uint64_t)n_hot + i;
	}
	snprintf(t->name, sizeof(t->name), "hotset-scans hot=%zu between=%zu scan=%zu rounds=%zu seed=%" PRIu64,
		 n_hot, hot_between, scan_len, rounds, seed);
	return gen_done(t, TFS_OK);
}

int trace_gen_shifting_hotset(struct trace *t, size_t n_items, size_t hot_size,
			      size_t shift_every, size_t length, uint64_t seed)
{
	size_t start = 0, step;
	struct rng r;
	int rc;

	if (n_items == 0 || hot_size == 0 || hot_size > n_items || shift_every == 0 ||
	    length == 0 || length > TRACE_MAX_ACCESSES)
		return TFS_E_INVAL;
	rc = gen_reserve(t, length);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	step = hot_size / 2 ? hot_size / 2 : 1;
	rng_seed(&r, seed);
	for (size_t i = 0; i < length; i++) {
		if (i > 0 && i % shift_every == 0)
			start = (start + step) % n_items;
		if (rng_below(&r, 10) < 9)
			t->keys[t->n++] = (start + rng_below(&r, hot_size)) % n_items;
		else
			t->keys[t->n++] = rng_below(&r, n_items);
	}
	snprintf(t->name, sizeof(t->name), "shifting-hotset N=%zu hot=%zu shift=%zu L=%zu seed=%" PRIu64,
		 n_items, hot_size, shift_every, length, seed);
	return gen_done(t, TFS_OK);
}

int trace_gen_two_jobs(struct trace *t, size_t n_a, size_t n_b, size_t epochs, uint64_t seed)
{
	size_t n_items = n_a + n_b;
	size_t len;
	uint64_t *a, *b;
	struct rng r;
	int rc;

	if (n_a == 0 || n_b == 0 || n_items < n_a)
		return TFS_E_INVAL;
	len = checked_len(n_items, epochs);
	if (!len)
		return TFS_E_INVAL;
	rc = gen_reserve(t, len);
	if (rc != TFS_OK)
		return gen_done(t, rc);
	a = malloc(n_a * sizeof(*a));
	b = malloc(n_b * sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return gen_done(t, TFS_E_NOMEM);
	}
	rng_seed(&r, seed);
	for (size_t e = 0; e < epochs; e++) {
		size_t ia = 0, ib = 0;

		for (size_t i = 0; i < n_a; i++)
			a[i] = i;
		for (size_t i = 0; i < n_b; i++)
			b[i] = (uint64_t)n_a + i;
		shuffle(a, n_a, &r);
		shuffle(b, n_b, &r);
		while (ia < n_a || ib < n_b) {
			size_t left_a = n_a - ia, left_b = n_b - ib;

			if (rng_below(&r, left_a + left_b) < left_a)
				t->keys[t->n++] = a[ia++];
			else
				t->keys[t->n++] = b[ib++];
		}
	}
	free(a);
	free(b);
	t->epoch_len = n_items;
	snprintf(t->name, sizeof(t->name), "two-jobs A=%zu B=%zu E=%zu seed=%" PRIu64, n_a, n_b,
		 epochs, seed);
	return gen_done(t, TFS_OK);
}
