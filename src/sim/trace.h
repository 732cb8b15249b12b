/* trace.h - access traces for the simulator: a text reader and seeded generators.
 *
 * A trace is a sequence of 64-bit keys, the same keys a tier hands to its
 * eviction policy.  Each key also gets a dense id (0 .. n_distinct - 1, in
 * order of first appearance) so that OPT can index arrays instead of
 * hashing.  Hits are counted only from warm_from on: every cache starts
 * cold, and the cold-start misses say nothing about the policy.
 *
 *   epoch traces (every item accessed exactly once per epoch):
 *       warm_from = epoch_len, the whole first epoch is excluded;
 *   every other trace (file, zipf, hot set + scans, shifting hot set):
 *       warm_from = n / 5, the first fifth is excluded.
 *
 * Generators are deterministic: the same arguments and seed give the same
 * keys on every machine (xorshift64*, no libc rand()).  Generated keys are
 * the item numbers themselves (0 .. n_items - 1 unless said otherwise);
 * policies mix keys before hashing, so dense numbers are fine.
 *
 * Not thread-safe; a finished trace is read-only and may be shared by
 * readers.
 */
#ifndef TIERFS_SIM_TRACE_H
#define TIERFS_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tfs_err.h"

/* No trace holds more accesses than this (TFS_E_TOOBIG beyond): 10^8
 * accesses are 1.2 GB of keys and ids. */
#define TRACE_MAX_ACCESSES ((size_t)100000000)
/* A trace file line longer than this is malformed (S3 keys are at most
 * 1024 bytes). */
#define TRACE_MAX_LINE 4096

struct trace {
	uint64_t *keys;         /* n keys, owned */
	/* A sized trace (the daemon's, see trace_read_stream) also has per
	 * access the chunk's length, what a miss fetches and the cache
	 * keeps, and the bytes the access read of it; both NULL otherwise
	 * (every access one unit). */
	uint32_t *chunk_bytes, *read_bytes;
	/* A sized trace's: 1 where the access begins a visit of its chunk
	 * (the SSD tier's policy counts visits), 0 for a later piece of the
	 * same visit; NULL otherwise (every access a visit). */
	uint8_t *visit;
	bool sized;             /* set on the empty trace before the first push */
	bool pieces;            /* sized, and its lines say which access is a visit */
	uint32_t *ids;          /* n dense ids, owned; valid after finish */
	size_t n, cap;
	size_t n_distinct;      /* valid after finish */
	size_t warm_from;       /* hits are counted at positions >= warm_from */
	size_t epoch_len;       /* > 0: an epoch trace (each item once per epoch) */
	char name[128];         /* what generated it, for reports */
};

/* Empty trace (embedded object: init/release). */
void trace_init(struct trace *t);
/* Frees the arrays; t is empty afterwards and may be reused. */
void trace_release(struct trace *t);

/* Append one access.  TFS_E_TOOBIG past TRACE_MAX_ACCESSES, TFS_E_NOMEM;
 * TFS_E_INVAL on a sized trace. */
int trace_push(struct trace *t, uint64_t key);
/* Append one access of a sized trace: read_bytes (at most chunk_bytes)
 * of a chunk chunk_bytes (> 0) long; visit: it begins a visit of the
 * chunk.  TFS_E_INVAL on a trace not sized or bad lengths; else as
 * trace_push(). */
int trace_push_sized(struct trace *t, uint64_t key, uint32_t chunk_bytes, uint32_t read_bytes,
		     bool visit);

/* Compute ids and n_distinct after the last push; sets warm_from to n / 5
 * unless epoch_len > 0 (then warm_from = epoch_len).  TFS_E_NOMEM. */
int trace_finish(struct trace *t);

/* The key of chunk chunk_index of object obj (obj_len bytes): XXH3-64 of
 * the key bytes seeded with the index.  Stable across runs and machines. */
uint64_t trace_chunk_key(const char *obj, size_t obj_len, uint64_t chunk_index);

/* The first line of a sized trace, as the daemon writes it (`tierfs
 * trace start`); the rest of that line is a comment.  Version 2 has no
 * VISIT field (every access a visit). */
#define TRACE_HEADER_2 "# tierfs trace 2"
#define TRACE_HEADER_3 "# tierfs trace 3"

/* Read a trace from a text stream, one access per line:
 *     12345            a decimal id
 *     0x3039           a hexadecimal id
 *     OBJECT_KEY IDX   an object key and chunk index -> trace_chunk_key();
 *                      the index is the last blank-separated field, so the
 *                      object key may contain blanks
 * After a TRACE_HEADER_2 line, before any access, the trace is sized and
 * each access line starts with two more decimal fields:
 *     CHUNK_BYTES READ_BYTES ACCESS   (ACCESS one of the three above)
 * after a TRACE_HEADER_3 line with three:
 *     CHUNK_BYTES READ_BYTES VISIT ACCESS   (VISIT 0 or 1)
 * Blank lines and lines starting with '#' (after blanks) are skipped.
 * t must be empty (just initialised); it is finished on success and
 * released on failure.  TFS_E_INVAL on a malformed line, with "line N: ..."
 * in ei->message; TFS_E_TOOBIG past the bound; TFS_E_IO on a read error.
 * An empty trace (no accesses) is valid. */
int trace_read_stream(struct trace *t, FILE *in, struct tfs_errinfo *ei);
/* The same from a file path (TFS_E_NOENT if it cannot be opened). */
int trace_read_file(struct trace *t, const char *path, struct tfs_errinfo *ei);

/* Generators.  t must be empty; it is finished on success.  TFS_E_INVAL
 * on zero sizes or lengths past TRACE_MAX_ACCESSES, TFS_E_NOMEM. */

/* 0, 1, ..., n_items - 1, repeated epochs times.  Epoch trace. */
int trace_gen_epoch_sequential(struct trace *t, size_t n_items, size_t epochs);

/* Each epoch a fresh uniformly random permutation of 0 .. n_items - 1
 * (Fisher-Yates).  Epoch trace. */
int trace_gen_epoch_shuffled(struct trace *t, size_t n_items, size_t epochs, uint64_t seed);

/* length draws from a Zipf distribution over n_items with exponent alpha
 * (> 0, up to 5; 0.8 .. 1.2 is typical): key k has rank k + 1, so key 0
 * is the most popular.  n_items is bounded by TRACE_MAX_ACCESSES (the CDF
 * is a table). */
int trace_gen_zipf(struct trace *t, size_t n_items, double alpha, size_t length, uint64_t seed);

/* rounds times: hot_between uniform draws from the hot set 0 .. n_hot - 1,
 * then one sequential scan of the cold items n_hot .. n_hot + scan_len - 1
 * (the same cold items every round: a backup or a batch job re-reading a
 * dataset larger than the cache). */
int trace_gen_hotset_scans(struct trace *t, size_t n_hot, size_t hot_between, size_t scan_len,
			   size_t rounds, uint64_t seed);

/* length accesses over n_items: 90 % uniform within a hot window of
 * hot_size consecutive items, 10 % uniform over all items; the window
 * moves on by hot_size / 2 (wrapping) every shift_every accesses. */
int trace_gen_shifting_hotset(struct trace *t, size_t n_items, size_t hot_size,
			      size_t shift_every, size_t length, uint64_t seed);

/* Two jobs each reading its own dataset once per epoch in a fresh random
 * order: job A items 0 .. n_a - 1, job B items n_a .. n_a + n_b - 1.  In
 * each epoch the two permutations are merged at random, each step taking
 * from a job with probability proportional to what it has left, so both
 * finish their epochs together.  An epoch trace with epoch length
 * n_a + n_b (every item exactly once per epoch: the C/N bound holds). */
int trace_gen_two_jobs(struct trace *t, size_t n_a, size_t n_b, size_t epochs, uint64_t seed);

#endif
