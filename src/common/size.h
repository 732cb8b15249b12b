/* size.h - byte sizes as people write them: "8M", "512K", "4GiB", "1048576".
 * Pure, thread-safe. */
#ifndef TIERFS_COMMON_SIZE_H
#define TIERFS_COMMON_SIZE_H

#include <stdint.h>

/* Parse decimal digits with an optional binary unit (K, M, G, T, any
 * case, optionally followed by "i" and/or "B") into *out.  0, or -1 for
 * anything else: empty, a sign, blanks, an unknown unit, an overflow. */
int size_parse(const char *s, uint64_t *out);

#endif
