/* readahead.h - when to read ahead, and how far: pure decisions, no I/O,
 * so they are testable alone and the filesystem layer only acts on them.
 *
 * A file stream (struct ra_file, one per open file): a read that starts
 * near where the previous reads ended and goes beyond it extends the
 * stream.  The second such read starts read-ahead with a window of one
 * chunk (three reads in a row: a random reader rarely makes two), once
 * the stream began at the start of the file or has read a chunk's worth
 * (the kernel turns one random read into a short sequential burst of
 * FUSE reads: that burst must not read a whole chunk ahead; nor may
 * random reads that happen to land a little ahead of each other); each
 * chunk the reader enters doubles it, up to window_max; a read anywhere
 * else (a seek) resets the stream, so a random reader never reads ahead.
 * "Near" is RA_SEQ_SLACK chunks either way: the kernel's own readahead
 * and several FUSE threads deliver one sequential reader's requests
 * slightly out of order.
 *
 * A directory stream (struct ra_dir, one per directory): opening the
 * files of a directory in listing order (each open a little after the
 * previous one, as a loader walking shards or image folders does) starts
 * reading the next files ahead, up to files_max files and bytes_max bytes
 * beyond the file being opened.
 *
 * Not thread-safe: the caller holds the file's or directory's lock.
 */
#ifndef TIERFS_READAHEAD_H
#define TIERFS_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RA_SEQ_SLACK 4        /* chunks a sequential read may land off the stream */
#define RA_FILE_STREAK 2      /* reads extending a stream before reading ahead */
#define RA_DIR_SLACK 8        /* entries an in-order open may skip */
#define RA_DIR_STREAK 2       /* in-order opens before reading files ahead */
/* the same while the directory is consumed once an epoch in any order (a
 * scan or a plan, whose fetchers fetch ahead): opens that happen to fall
 * in listing order within a shuffle are no stream */
#define RA_DIR_STREAK_ONCE 8

struct ra_file {
	bool started;         /* a read was seen */
	unsigned streak;      /* sequential reads since the last seek */
	uint64_t run_start;   /* where the stream began */
	uint64_t next_off;    /* end of the furthest read of the stream */
	uint64_t cur_chunk;   /* the chunk that read was in */
	uint64_t frontier;    /* first chunk not issued */
	uint64_t window;      /* bytes to keep issued beyond the reader */
	uint64_t run_bytes;   /* bytes the stream's reads covered (not the
			       * gaps a forward jump within the slack leaves) */
	bool seeked;          /* a read has restarted a stream */
};

struct ra_dir {
	bool started;
	unsigned streak;      /* in-order opens */
	size_t last;          /* listing index of the furthest open */
	size_t next;          /* first index not read ahead */
};

void ra_file_init(struct ra_file *r);

/* A read of [off, off + len) of a file of `size` bytes in chunks of
 * chunk_size, read-ahead window at most window_max bytes (whole chunks;
 * 0 = off).  Returns how many chunks to issue, from chunk *first. */
uint64_t ra_file_on_read(struct ra_file *r, uint64_t chunk_size, uint64_t window_max,
			 uint64_t off, uint64_t len, uint64_t size, uint64_t *first);

/* Is the reader random, as of its last read?  The stream it is in began
 * away from the file's start and its reads have not covered a chunk's
 * worth yet (what read-ahead also holds back for), and it is not the
 * file's first stream, or it began beyond RA_SEQ_SLACK chunks: the kernel
 * can deliver a sequential reader's first requests out of order, that
 * far. */
bool ra_file_random(const struct ra_file *r, uint64_t chunk_size);

/* Chunks from `chunk` on were not issued after all (no room): let a later
 * read issue them. */
void ra_file_unissue(struct ra_file *r, uint64_t chunk);

void ra_dir_init(struct ra_dir *d);

/* The open of listing entry idx.  Returns true when the entries from
 * *from on may be read ahead, after streak in-order opens (RA_DIR_STREAK,
 * or RA_DIR_STREAK_ONCE); the caller issues some and reports where it
 * stopped with ra_dir_issued(). */
bool ra_dir_on_open(struct ra_dir *d, size_t idx, unsigned streak, size_t *from);
void ra_dir_issued(struct ra_dir *d, size_t next);

#endif
