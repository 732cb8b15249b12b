/* fake_objstore.h - an in-memory objstore for unit tests of the layers
 * above src/s3: a sorted key set with contents, ListObjectsV2 semantics
 * (prefix, delimiter, pagination by max_keys), call counters, and
 * injectable failures.  Not thread-safe for mutation; reads are. */
#ifndef TIERFS_FAKE_OBJSTORE_H
#define TIERFS_FAKE_OBJSTORE_H

#include <stdatomic.h>
#include "s3/objstore.h"

struct fake_objstore {
	struct objstore base;
	size_t n;
	struct fake_obj {
		char *key;
		unsigned char *data;
		size_t len;
		char etag[OBJ_ETAG_MAX];
		atomic_uint gets;      /* GETs of this key, every version */
	} *objs;
	atomic_int heads, gets, lists;
	int fail_rc;               /* if != 0, every call fails with it */
	unsigned page_size;        /* max entries per LIST page (default 1000) */
	unsigned list_delay_ms;    /* each LIST answers this much later (a store far away) */
	const char *list_fail;     /* LISTs of this prefix fail with TFS_E_IO; NULL = none */
};

struct fake_objstore *fake_objstore_new(void);
/* Add or replace key with a copy of data; a new ETag each time. */
void fake_objstore_put(struct fake_objstore *f, const char *key, const void *data, size_t len);
/* Add or replace key with len bytes of fake_byte(seed, i). */
void fake_objstore_put_pattern(struct fake_objstore *f, const char *key, size_t len,
			       unsigned seed);
/* GETs of key so far (0 for a key never put). */
unsigned fake_objstore_gets(struct fake_objstore *f, const char *key);
/* Deterministic bytes for tests: byte i of seed s. */
unsigned char fake_byte(unsigned seed, size_t i);

#endif
