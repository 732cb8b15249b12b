/* fake_objstore.c - in-memory objstore for unit tests (see the header). */
#include "fake_objstore.h"

#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static int fake_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fake_obj *)a)->key, ((const struct fake_obj *)b)->key);
}

unsigned char fake_byte(unsigned seed, size_t i)
{
	unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
	x ^= x >> 31;
	x *= 0x94D049BB133111EBull;
	return (unsigned char)(x >> 29);
}

static struct fake_obj *find(struct fake_objstore *f, const char *key)
{
	struct fake_obj k = { .key = (char *)key };

	if (f->n == 0)
		return NULL;
	return bsearch(&k, f->objs, f->n, sizeof(*f->objs), fake_cmp);
}

void fake_objstore_put(struct fake_objstore *f, const char *key, const void *data, size_t len)
{
	static unsigned version;
	struct fake_obj *o = find(f, key);

	if (!o) {
		f->objs = realloc(f->objs, (f->n + 1) * sizeof(*f->objs));
		o = &f->objs[f->n++];
		o->key = strdup(key);
		o->data = NULL;
		atomic_init(&o->gets, 0);
	}
	free(o->data);
	o->data = malloc(len ? len : 1);
	if (len)
		memcpy(o->data, data, len);
	o->len = len;
	snprintf(o->etag, sizeof(o->etag), "\"etag-%u\"", ++version);
	qsort(f->objs, f->n, sizeof(*f->objs), fake_cmp);
}

void fake_objstore_put_pattern(struct fake_objstore *f, const char *key, size_t len,
			       unsigned seed)
{
	unsigned char *b = malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		b[i] = fake_byte(seed, i);
	fake_objstore_put(f, key, b, len);
	free(b);
}

unsigned fake_objstore_gets(struct fake_objstore *f, const char *key)
{
	struct fake_obj *o = find(f, key);

	return o ? atomic_load(&o->gets) : 0;
}

static int fake_head(struct objstore *os, const char *key, struct obj_meta *out,
		     struct tfs_errinfo *ei)
{
	struct fake_objstore *f = (struct fake_objstore *)os;
	struct fake_obj *o;

	atomic_fetch_add(&f->heads, 1);
	if (f->fail_rc)
		return f->fail_rc;
	o = find(f, key);
	if (!o)
		return TFS_E_NOENT;
	out->size = o->len;
	out->mtime = 1700000000;
	snprintf(out->etag, sizeof(out->etag), "%s", o->etag);
	return TFS_OK;
}

static int fake_get(struct objstore *os, const char *key, const char *if_match, uint64_t off,
		    size_t len, void *buf, size_t *got, struct tfs_errinfo *ei)
{
	struct fake_objstore *f = (struct fake_objstore *)os;
	struct fake_obj *o;

	atomic_fetch_add(&f->gets, 1);
	*got = 0;
	if (f->fail_rc)
		return f->fail_rc;
	o = find(f, key);
	if (!o)
		return TFS_E_NOENT;
	atomic_fetch_add(&o->gets, 1);
	if (if_match && strcmp(if_match, o->etag) != 0)
		return TFS_E_STALE;
	/* as S3: 416 for a range starting at or past the end, except that an
	 * empty object answers a read at 0 with no bytes */
	if (off > o->len || (off == o->len && o->len > 0))
		return TFS_E_RANGE;
	*got = o->len - off < len ? o->len - off : len;
	memcpy(buf, o->data + off, *got);
	return TFS_OK;
}

static int fake_list(struct objstore *os, const char *prefix, const char *delim, const char *token,
		     unsigned max_keys, struct obj_list_page **out, struct tfs_errinfo *ei)
{
	struct fake_objstore *f = (struct fake_objstore *)os;
	struct obj_list_page *p;
	size_t plen = strlen(prefix), start = token ? strtoul(token, NULL, 10) : 0;
	unsigned limit = max_keys ? max_keys : 1000, count = 0;
	const char *last_prefix = NULL;
	size_t last_prefix_len = 0;

	atomic_fetch_add(&f->lists, 1);
	if (f->list_delay_ms)
		usleep(f->list_delay_ms * 1000u);
	if (f->fail_rc)
		return f->fail_rc;
	if (f->list_fail && strcmp(prefix, f->list_fail) == 0)
		return TFS_E_IO;
	if (f->page_size && f->page_size < limit)
		limit = f->page_size;
	p = calloc(1, sizeof(*p));
	p->entries = calloc(f->n + 1, sizeof(*p->entries));
	p->prefixes = calloc(f->n + 1, sizeof(*p->prefixes));
	for (size_t i = start; i < f->n; i++) {
		const char *k = f->objs[i].key, *d;
		if (strncmp(k, prefix, plen) != 0)
			continue;
		if (count == limit) {
			char t[32];
			snprintf(t, sizeof(t), "%zu", i);
			p->truncated = true;
			p->next_token = strdup(t);
			break;
		}
		d = delim ? strstr(k + plen, delim) : NULL;
		if (d) {
			size_t n = (size_t)(d - k) + strlen(delim);
			if (last_prefix && last_prefix_len == n && memcmp(last_prefix, k, n) == 0)
				continue;
			p->prefixes[p->n_prefixes].prefix = strndup(k, n);
			p->prefixes[p->n_prefixes].prefix_len = n;
			last_prefix = k;
			last_prefix_len = n;
			p->n_prefixes++;
		} else {
			struct obj_list_entry *e = &p->entries[p->n_entries++];
			e->key = strdup(k);
			e->key_len = strlen(k);
			e->meta.size = f->objs[i].len;
			e->meta.mtime = 1700000000;
			snprintf(e->meta.etag, sizeof(e->meta.etag), "%s", f->objs[i].etag);
		}
		count++;
	}
	*out = p;
	return TFS_OK;
}

static void fake_free(struct objstore *os)
{
	struct fake_objstore *f = (struct fake_objstore *)os;

	for (size_t i = 0; i < f->n; i++) {
		free(f->objs[i].key);
		free(f->objs[i].data);
	}
	free(f->objs);
	free(f);
}

static const struct objstore_ops fake_ops = {
	.head = fake_head, .get_range = fake_get, .list = fake_list, .free = fake_free
};

struct fake_objstore *fake_objstore_new(void)
{
	struct fake_objstore *f = calloc(1, sizeof(*f));
	f->base.ops = &fake_ops;
	return f;
}
