/* Unit tests for src/fs/readahead: when file and directory streams read
 * ahead, how far, and when they stop. */
#include <criterion/criterion.h>

#include "common/rand.h"
#include "fs/readahead.h"

#define CS 100u
#define MAX (8u * CS)
#define SIZE (1000u * CS)

/* Read [off, off + len): returns the chunk count, *first the start. */
static uint64_t rd(struct ra_file *r, uint64_t off, uint64_t len, uint64_t *first)
{
	return ra_file_on_read(r, CS, MAX, off, len, SIZE, first);
}

Test(readahead, first_read_never_reads_ahead)
{
	struct ra_file r;
	uint64_t first;

	ra_file_init(&r);
	cr_expect_eq(rd(&r, 0, 10, &first), 0);
}

Test(readahead, sequential_window_doubles_to_the_maximum)
{
	struct ra_file r;
	uint64_t first, n, frontier = 0, issued[64] = { 0 }, windows = 0;

	ra_file_init(&r);
	/* read in 50-byte pieces: every chunk is issued exactly once, in
	 * order, and never more than MAX ahead of the reader */
	for (uint64_t off = 0; off < 40 * CS; off += 50) {
		n = rd(&r, off, 50, &first);
		if (!n)
			continue;
		cr_assert(frontier == 0 || first == frontier, "gap or repeat at offset %llu",
			  (unsigned long long)off);
		cr_assert_gt(first * CS, off + 49, "a chunk the reader is in or behind");
		frontier = first + n;
		cr_assert_leq((frontier - 1) * CS, off + 50 + MAX, "beyond the window");
		issued[windows++ % 64] = frontier - 1 - (off + 49) / CS;
	}
	/* ahead of the reader: 1 chunk, then 2, 4, and 8 at most */
	cr_expect_eq(issued[0], 1);
	cr_expect_eq(issued[1], 2);
	cr_expect_eq(issued[2], 4);
	cr_expect_eq(issued[3], 8);
	cr_expect_eq(issued[windows - 1 < 63 ? windows - 1 : 63], 8);
}

Test(readahead, random_reads_never_read_ahead)
{
	struct ra_file r;
	uint64_t first, total = 0, x = 12345;

	ra_file_init(&r);
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		/* offsets at least RA_SEQ_SLACK + 1 chunks apart */
		uint64_t off = ((x >> 33) % 100) * (RA_SEQ_SLACK + 2) * CS;
		total += rd(&r, off, 50, &first);
	}
	cr_expect_eq(total, 0);
}

Test(readahead, seek_resets_the_window)
{
	struct ra_file r;
	uint64_t first, n;

	ra_file_init(&r);
	for (uint64_t off = 0; off < 20 * CS; off += 50)
		rd(&r, off, 50, &first);
	cr_expect_eq(rd(&r, 500 * CS, 50, &first), 0, "a seek issues nothing");
	n = rd(&r, 500 * CS + 50, 50, &first);
	cr_expect_eq(n, 0, "nor does the next read");
	n = rd(&r, 500 * CS + 100, 50, &first);
	cr_expect_eq(n, 1, "then it starts again at one chunk");
	cr_expect_eq(first, 502);
}

Test(readahead, out_of_order_pieces_stay_sequential)
{
	struct ra_file r;
	uint64_t first, total = 0;

	ra_file_init(&r);
	rd(&r, 0, 50, &first);
	/* pairs swapped, as two FUSE threads may deliver them */
	for (uint64_t off = 100; off < 30 * CS; off += 100) {
		total += rd(&r, off + 50, 50, &first);
		total += rd(&r, off, 50, &first);
	}
	cr_expect_geq(total, 30, "read-ahead kept going (%llu chunks)", (unsigned long long)total);
}

Test(readahead, stops_at_end_of_file_and_when_off)
{
	struct ra_file r;
	uint64_t first, total = 0;

	ra_file_init(&r);
	for (uint64_t off = 0; off < 3 * CS; off += 50)
		total += ra_file_on_read(&r, CS, MAX, off, 50, 3 * CS, &first);
	cr_expect_eq(total, 1, "chunk 2 of a 3-chunk file (the third read is in chunk 1)");
	ra_file_init(&r);
	total = 0;
	for (uint64_t off = 0; off < 30 * CS; off += 50)
		total += ra_file_on_read(&r, CS, 0, off, 50, SIZE, &first);
	cr_expect_eq(total, 0, "window_max 0 is off");
}

Test(readahead, unissued_chunks_are_issued_again)
{
	struct ra_file r;
	uint64_t first, n;

	uint64_t off = 0, was;

	ra_file_init(&r);
	do {
		n = rd(&r, off, 50, &was);
		off += 50;
	} while (n == 0 && off < 10 * CS);
	cr_assert_gt(n, 0);
	ra_file_unissue(&r, was);
	n = rd(&r, off, 50, &first);
	cr_expect_eq(first, was, "chunk %llu again", (unsigned long long)was);
	cr_expect_geq(n, 1);
}

Test(readahead, directory_in_order_opens_read_ahead)
{
	struct ra_dir d;
	size_t from;

	ra_dir_init(&d);
	cr_expect_not(ra_dir_on_open(&d, 0, RA_DIR_STREAK, &from));
	cr_expect_not(ra_dir_on_open(&d, 1, RA_DIR_STREAK, &from), "one in-order open is not a pattern");
	cr_expect(ra_dir_on_open(&d, 2, RA_DIR_STREAK, &from));
	cr_expect_eq(from, 3);
	ra_dir_issued(&d, 10);
	cr_expect(ra_dir_on_open(&d, 3, RA_DIR_STREAK, &from));
	cr_expect_eq(from, 10, "what was issued is not issued again");
	cr_expect_not(ra_dir_on_open(&d, 3, RA_DIR_STREAK, &from), "the same file again");
	cr_expect_not(ra_dir_on_open(&d, 1, RA_DIR_STREAK, &from), "another worker a little behind");
	cr_expect(ra_dir_on_open(&d, 5, RA_DIR_STREAK, &from), "a skip within the slack");
}

Test(readahead, directory_random_opens_never_read_ahead)
{
	struct ra_dir d;
	size_t from;
	uint64_t x = 99;
	int hits = 0;

	ra_dir_init(&d);
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		hits += ra_dir_on_open(&d, (size_t)((x >> 33) % 100000), RA_DIR_STREAK, &from);
	}
	cr_expect_leq(hits, 2, "%d read-aheads from random opens", hits);
}

/* A directory read once an epoch: a new shuffle of 96 files each epoch
 * reads nothing ahead by listing order, 100 epochs long; listing order
 * does, from its ninth open on. */
Test(readahead, directory_shuffled_once_reads_nothing_ahead_listing_order_does)
{
	size_t order[96], from;
	uint64_t seed = 7;
	struct ra_dir d;
	int hits = 0;

	ra_dir_init(&d);
	for (int e = 0; e < 100; e++) {
		for (size_t i = 0; i < 96; i++)
			order[i] = i;
		for (size_t i = 95; i > 0; i--) {
			size_t j = xorshift64s_next(&seed) % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < 96; i++)
			hits += ra_dir_on_open(&d, order[i], RA_DIR_STREAK_ONCE, &from);
	}
	cr_expect_leq(hits, 1, "%d read-aheads in 9,600 shuffled opens", hits);

	ra_dir_init(&d);
	for (size_t i = 0; i < 8; i++)
		cr_expect_not(ra_dir_on_open(&d, i, RA_DIR_STREAK_ONCE, &from), "open %zu", i);
	cr_expect(ra_dir_on_open(&d, 8, RA_DIR_STREAK_ONCE, &from));
	cr_expect_eq(from, 9);
}

Test(readahead, short_burst_mid_file_reads_nothing_ahead)
{
	struct ra_file r;
	uint64_t first, total = 0;

	/* what the kernel makes of one random read: a few pieces in a row */
	ra_file_init(&r);
	for (uint64_t off = 50 * CS + 10; off < 50 * CS + 10 + CS - 10; off += 10)
		total += rd(&r, off, 10, &first);
	cr_expect_eq(total, 0);
	/* read on past a chunk's worth: now it is a stream */
	for (uint64_t off = 51 * CS; off < 53 * CS; off += 10)
		total += rd(&r, off, 10, &first);
	cr_expect_gt(total, 0);
}

/* A reader is random once it has seeked (or began far into the file),
 * while the stream it is in began away from the file's start and has
 * covered less than a chunk: reads
 * that land a little ahead of each other (within the slack) do not add
 * up to a chunk, and read nothing ahead. */
Test(readahead, a_seeking_reader_is_random_until_it_reads_a_chunk)
{
	struct ra_file r;
	uint64_t first, off = 500 * CS;

	ra_file_init(&r);
	cr_assert_eq(rd(&r, RA_SEQ_SLACK * CS, 10, &first), 0);
	cr_assert(!ra_file_random(&r, CS), "a first stream within the slack is not random");
	ra_file_init(&r);
	cr_assert_eq(rd(&r, (RA_SEQ_SLACK + 1) * CS, 10, &first), 0);
	cr_assert(ra_file_random(&r, CS), "a first stream beyond the slack is random");
	ra_file_init(&r);
	cr_assert_eq(rd(&r, 7, 10, &first), 0);
	cr_assert_eq(rd(&r, off, 10, &first), 0);
	cr_assert(ra_file_random(&r, CS), "a seek makes the reader random");
	/* jumps of two chunks, each within the slack: 10 bytes a read, less
	 * than a chunk in all */
	for (int i = 0; i < 8; i++) {
		off += 2 * CS;
		cr_assert_eq(rd(&r, off, 10, &first), 0, "jump %d read ahead", i);
		cr_assert(ra_file_random(&r, CS), "jump %d: no longer random", i);
	}
	/* reading on from there, a chunk's worth makes it sequential */
	for (uint64_t o = off + 10; o < off + 2 * CS; o += 10)
		(void)rd(&r, o, 10, &first);
	cr_assert(!ra_file_random(&r, CS), "a chunk read in a row is not random");
	/* a seek back to the start of the file is a sequential start */
	cr_assert_eq(rd(&r, 0, 10, &first), 0);
	cr_assert(!ra_file_random(&r, CS));
}
