/* pin_set.h - the object keys an operator pinned, per tier, with bytes.
 *
 * `tierfs pin` records a file here; the tiers ask pin_set_tier() when
 * they insert a chunk (and when they evict one on request) and keep a
 * pinned chunk out of eviction.  A key is pinned in one tier at a time
 * (pinning it in the other moves it).  The pinned bytes of a tier never
 * exceed the limit the caller passes: a batch that would is refused as a
 * whole.  At most PIN_SET_MAX keys.  Pins last as long as the mount.
 * Thread-safe (a read-write lock; a lookup in an empty set takes none).
 */
#ifndef TIERFS_PIN_SET_H
#define TIERFS_PIN_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PIN_SET_MAX 1000000

enum pin_tier { PIN_NONE = 0, PIN_RAM = 1, PIN_SSD = 2 };

struct pin_set;

struct pin_set *pin_set_new(void);
void pin_set_free(struct pin_set *ps);

/* The tier key is pinned in, or PIN_NONE.  Never blocks on a writer for
 * long (writers hold the lock for hash-table updates only). */
enum pin_tier pin_set_tier(struct pin_set *ps, const char *key);

/* Pin keys[0..n) (sizes[i] bytes each) in tier.  TFS_OK, or TFS_E_NOSPC
 * when the tier's pinned bytes would exceed limit (then *would_be is
 * what they would have been, and nothing changed), TFS_E_TOOBIG past
 * PIN_SET_MAX keys, TFS_E_NOMEM.  Keys already pinned there are not
 * counted twice; their size is updated. */
int pin_set_add(struct pin_set *ps, const char *const *keys, const uint64_t *sizes, size_t n,
		enum pin_tier tier, uint64_t limit, uint64_t *would_be);

/* Unpin key: the tier it was pinned in, or PIN_NONE. */
enum pin_tier pin_set_remove(struct pin_set *ps, const char *key);
/* Unpin everything: how many keys were pinned. */
size_t pin_set_clear(struct pin_set *ps);

void pin_set_totals(struct pin_set *ps, size_t *files, uint64_t *ram_bytes, uint64_t *ssd_bytes);

#endif
