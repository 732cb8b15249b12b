/* part_cache.h - the parts of chunks that random readers have read: the
 * 64 KiB blocks a reader asked for, fetched alone instead of the whole
 * chunk.
 *
 * A reader that seeks and reads less than a chunk between seeks would
 * otherwise cost a whole chunk per read: a 128 KiB read of an 8 MiB chunk,
 * 64 times the bytes it asked for.  Here a chunk's blocks arrive one read
 * at a time; once fetching the rest keeps the bytes fetched for the chunk
 * within twice the bytes its readers asked for (rounded out to blocks),
 * the rest is fetched and the chunk becomes an ordinary one, in RAM and
 * then on SSD (chunk_cache.c).  A chunk read whole in random order is so
 * fetched once while its blocks stay here.
 *
 * Bounded by the bytes of the blocks held: past the bound, the entries
 * used longest ago go (not held ones), and their blocks are fetched again
 * when asked for.  Each entry keeps a ledger of the bytes asked for and
 * fetched, kept past its blocks, and the chunk is made whole when the
 * rest fetched keeps the fetched within twice the asked: after half the
 * chunk while its blocks stay, near the whole of it when they were let
 * go.  One caller holds an entry at a time
 * (part_cache_acquire() waits for the holder).  Entries are named as
 * chunks are (struct chunk_id): another version of an object never reads
 * them.  Thread-safe.
 */
#ifndef TIERFS_PART_CACHE_H
#define TIERFS_PART_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/chunk_id.h"

#define PART_BLOCK ((size_t)64 * 1024)

struct part_cache;
struct part_entry;

struct part_cache_stats {
	uint64_t bytes, entries, cap;   /* held now; the bound */
	uint64_t reads;       /* random reads served from here */
	uint64_t block_hits;  /* of which every block was held already */
	uint64_t completed;   /* chunks whose rest was fetched, now whole */
	uint64_t dropped;     /* entries let go for room */
};

/* NULL when out of memory.  cap_bytes: the bound on blocks held. */
struct part_cache *part_cache_new(uint64_t cap_bytes);
/* No entry may be held. */
void part_cache_free(struct part_cache *pc);

/* The entry of chunk id, chunk_len bytes long (made empty when absent),
 * held by the caller until part_cache_release(); waits while another
 * caller holds it (*waited true then: what it did may have made the
 * chunk whole elsewhere).  An entry of another length (a reused ETag) is
 * emptied.  NULL when out of memory, or when half a chunk of chunk_len
 * would not fit the bound (the caller fetches the chunk whole). */
struct part_entry *part_cache_acquire(struct part_cache *pc, const struct chunk_id *id,
				      size_t chunk_len, bool *waited);

/* Let e go; drop: forget it too (its chunk is whole elsewhere now, or
 * its fetch failed).  Then enforces the bound. */
void part_cache_release(struct part_cache *pc, struct part_entry *e, bool drop);

/* e's ledger: the bytes its readers asked for (rounded out to blocks)
 * and the bytes fetched for it, since it was made; an entry let go for
 * room keeps its ledger for when it is made again (most of the time: the
 * ledgers kept are bounded too). */
void part_entry_ledger(const struct part_entry *e, uint64_t *asked, uint64_t *fetched);
void part_entry_account(struct part_entry *e, uint64_t asked, uint64_t fetched);

/* Bytes of blocks e holds. */
size_t part_entry_bytes(const struct part_entry *e);

/* Bytes of [off, end) of e's chunk (block-aligned off; end a block
 * boundary or the chunk's end) in blocks e does not hold. */
size_t part_entry_missing(const struct part_entry *e, size_t off, size_t end);

/* The first run of blocks e does not hold within [off, end), as *start,
 * *stop (stop clamped to end): false when there is none. */
bool part_entry_hole(const struct part_entry *e, size_t off, size_t end, size_t *start,
		     size_t *stop);

/* Copy bytes [off, off + len) of e's chunk, all in blocks e holds, to dst. */
void part_entry_copy(const struct part_entry *e, size_t off, size_t len, void *dst);

/* Copy every block e holds to its place in dst (the chunk's length). */
void part_entry_copy_held(const struct part_entry *e, void *dst);

/* Keep the blocks of src, bytes [off, end) of e's chunk (block-aligned
 * off; end a block boundary or the chunk's end); blocks held already are
 * kept as they are.  TFS_OK, or TFS_E_NOMEM (the blocks stored before it
 * stay).  The caller holds e. */
int part_entry_put(struct part_cache *pc, struct part_entry *e, size_t off, size_t end,
		   const void *src);

/* Forget the entries of key (every version; NULL: all); one held now is
 * forgotten when its holder lets it go.  Returns the bytes forgotten now. */
uint64_t part_cache_drop(struct part_cache *pc, const char *key);

/* Forget the entry of chunk id, if any (as part_cache_drop()). */
void part_cache_drop_chunk(struct part_cache *pc, const struct chunk_id *id);

/* Count a random read served, and whether its blocks were all held. */
void part_cache_count_read(struct part_cache *pc, bool all_held, bool completed);

void part_cache_stats(struct part_cache *pc, struct part_cache_stats *out);

#endif
