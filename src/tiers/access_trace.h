/* access_trace.h - record readers' chunk accesses for the simulator.
 *
 * One line per access, `CHUNK_BYTES READ_BYTES VISIT OBJECT_KEY
 * CHUNK_INDEX` after a first line `# tierfs trace 3 ...`: the format
 * tierfs-sim --trace reads (src/sim/trace.h).  CHUNK_BYTES is the chunk's
 * length (what a miss fetches and the cache keeps), READ_BYTES what the
 * reader took of it in this access, VISIT 1 when the access begins a
 * visit of the chunk (what the SSD tier's policy counts), 0 for a later
 * piece of the same visit.  A key the reader could not take back
 * as written (control characters, blanks at either end, a leading '#',
 * too long for a trace line) is written as its policy key instead,
 * `0x` + 16 hex digits of XXH3_64(key, seed = index): what the reader
 * computes for a `KEY INDEX` line, so the replay is the same.
 * Writes are buffered; a write error (a full disk) stops the recording
 * (counted in dropped), never a reader.  Thread-safe.
 */
#ifndef TIERFS_ACCESS_TRACE_H
#define TIERFS_ACCESS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct access_trace;

/* Create path (absolute; O_EXCL is not used: an existing regular file is
 * truncated, a symlink refused) mode 0600.  TFS_OK with *out, or an error
 * with a message in err. */
int access_trace_start(const char *path, struct access_trace **out, char *err, size_t errlen);

/* Record one access: read_bytes of chunk chunk_index (chunk_bytes long)
 * of object key; visit: it begins a visit of the chunk. */
void access_trace_record(struct access_trace *t, const char *key, uint64_t chunk_index,
			 uint64_t chunk_bytes, uint64_t read_bytes, bool visit);

/* Accesses written so far / lost to a write error. */
uint64_t access_trace_records(struct access_trace *t);
uint64_t access_trace_dropped(struct access_trace *t);

/* Flush, close, free; the number of accesses written.  No record may be
 * running or start (the caller's swap guarantees it). */
uint64_t access_trace_stop(struct access_trace *t);

#endif
