/* store_fetch.c - parallel ranged GETs of one chunk (see store_fetch.h).
 *
 * One GET pays the server's time to first byte (~16 ms on radosgw, ~20 on
 * S3) before it streams, and one connection's bandwidth (~90 MB/s on S3);
 * parts of one chunk overlap both.  The store's connection pool bounds
 * the GETs in flight across all fetches.
 */
#include "tiers/store_fetch.h"

#include <pthread.h>
#include <stdbool.h>

#include "common/log.h"
#include "common/tfs_err.h"

/* A part's thread stack: a GET through libcurl and OpenSSL needs tens of
 * KiB. */
#define PART_STACK ((size_t)512 * 1024)

/* One ranged GET of a fetch, run on its own thread for parts > 0. */
struct fetch_part {
	struct objstore *store;
	const char *key, *if_match;
	uint64_t off;
	size_t len, got;
	void *buf;
	int rc;
};

static void *part_run(void *arg)
{
	struct fetch_part *p = arg;
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	p->rc = objstore_get_range(p->store, p->key, p->if_match, p->off, p->len, p->buf, &p->got,
				   &ei);
	if (p->rc == TFS_OK && p->got != p->len)
		p->rc = TFS_E_STALE;   /* shorter than its size said: not our version */
	return NULL;
}

int store_fetch(struct objstore *store, unsigned parallel, const struct chunk_obj *o,
		uint64_t index, uint64_t start, size_t want, void *buf)
{
	struct fetch_part parts[STORE_FETCH_PARTS_MAX];
	pthread_t th[STORE_FETCH_PARTS_MAX];
	bool started[STORE_FETCH_PARTS_MAX] = { false }, have_attr = false;
	pthread_attr_t attr;
	size_t n = want / STORE_FETCH_PART_MIN, each, done = 0;
	int rc = TFS_OK;

	if (n > parallel)
		n = parallel;
	if (n > STORE_FETCH_PARTS_MAX)
		n = STORE_FETCH_PARTS_MAX;
	if (n < 1)
		n = 1;
	each = (want / n + 4095) & ~(size_t)4095;
	for (size_t i = 0; i < n; i++) {
		struct fetch_part *p = &parts[i];

		p->store = store;
		p->key = o->key;
		p->if_match = o->etag[0] ? o->etag : NULL;
		p->off = start + done;
		p->len = i == n - 1 ? want - done : each;
		p->buf = (char *)buf + done;
		p->got = 0;
		p->rc = TFS_OK;
		done += p->len;
	}
	/* parts 1.. on threads, part 0 here; a failed thread start runs its
	 * part here too, so a fetch never depends on threads being available.
	 * Small stacks: the C library keeps 40 MiB of ended threads' stacks
	 * for the next ones, five of the default 8 MiB; a cold reader's
	 * fetches mapped and unmapped a stack per part beyond those. */
	if (n > 1 && pthread_attr_init(&attr) == 0) {
		have_attr = pthread_attr_setstacksize(&attr, PART_STACK) == 0;
		if (!have_attr)
			pthread_attr_destroy(&attr);
	}
	for (size_t i = 1; i < n; i++)
		started[i] = pthread_create(&th[i], have_attr ? &attr : NULL, part_run,
					    &parts[i]) == 0;
	if (have_attr)
		pthread_attr_destroy(&attr);
	part_run(&parts[0]);
	for (size_t i = 1; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			part_run(&parts[i]);
	}
	/* the most telling failure wins: STALE (object changed) first */
	for (size_t i = 0; i < n; i++) {
		if (parts[i].rc == TFS_E_STALE) {
			rc = TFS_E_STALE;
			break;
		}
		if (parts[i].rc != TFS_OK && rc == TFS_OK)
			rc = parts[i].rc;
	}
	if (rc == TFS_E_STALE)
		log_warn("chunk %llu of '%s' is not the version opened (changed, or shorter "
			 "than its size)", (unsigned long long)index, o->key);
	return rc;
}
