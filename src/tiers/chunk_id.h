/* chunk_id.h - the name of a cached chunk.
 *
 * A chunk is (object key, cache id, index): the cache id is the object's
 * ETag (or a size+mtime stand-in when it has none), so a changed object can
 * never be served from an older version's chunks.  Chunk `index` covers
 * bytes [index * chunk_size, (index + 1) * chunk_size) of the object.
 */
#ifndef TIERFS_CHUNK_ID_H
#define TIERFS_CHUNK_ID_H

#include <stdint.h>

struct chunk_id {
	const char *key;     /* full object key; no NUL inside */
	const char *etag;    /* cache id; no NUL inside */
	uint64_t index;
};

/* One version of one object, as a reader opened it: what the cache needs
 * to name its chunks and, on a miss, to fetch them. */
struct chunk_obj {
	const char *key;      /* full object key */
	const char *etag;     /* its ETag, sent as If-Match ("" = none) */
	const char *cache_id; /* its chunks' name (struct chunk_id's etag) */
	uint64_t size;
};

#endif
