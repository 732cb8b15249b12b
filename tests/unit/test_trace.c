/* Unit tests for src/sim/trace: the text reader and the seeded generators. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "sim/trace.h"

static int read_text(struct trace *t, const char *text, struct tfs_errinfo *ei)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	int rc;

	cr_assert_not_null(in);
	trace_init(t);
	rc = trace_read_stream(t, in, ei);
	fclose(in);
	return rc;
}

/* Every epoch of length n_items holds each of 0 .. n_items - 1 once. */
static void assert_epochs_are_permutations(const struct trace *t, size_t n_items, size_t epochs)
{
	unsigned char *seen = calloc(n_items, 1);

	cr_assert_eq(t->n, n_items * epochs);
	for (size_t e = 0; e < epochs; e++) {
		memset(seen, 0, n_items);
		for (size_t i = 0; i < n_items; i++) {
			uint64_t k = t->keys[e * n_items + i];

			cr_assert_lt(k, n_items, "epoch %zu: key %llu out of range", e,
				     (unsigned long long)k);
			cr_assert_eq(seen[k], 0, "epoch %zu: key %llu twice", e,
				     (unsigned long long)k);
			seen[k] = 1;
		}
	}
	free(seen);
}

Test(trace_reader, integers_decimal_and_hex)
{
	struct trace t;
	struct tfs_errinfo ei;

	cr_assert_eq(read_text(&t, "1\n0x10\n  42  \n0XfF\n1\n", &ei), TFS_OK);
	cr_assert_eq(t.n, 5);
	cr_assert_eq(t.keys[0], 1);
	cr_assert_eq(t.keys[1], 16);
	cr_assert_eq(t.keys[2], 42);
	cr_assert_eq(t.keys[3], 255);
	cr_assert_eq(t.n_distinct, 4);
	/* dense ids in order of first appearance */
	cr_assert_eq(t.ids[0], 0);
	cr_assert_eq(t.ids[3], 3);
	cr_assert_eq(t.ids[4], 0);
	cr_assert_eq(t.epoch_len, 0);
	cr_assert_eq(t.warm_from, 1);          /* n / 5 */
	trace_release(&t);
}

Test(trace_reader, key_index_pairs_hash_equal_for_equal_pairs)
{
	struct trace t;
	struct tfs_errinfo ei;

	cr_assert_eq(read_text(&t,
			       "data/a.bin 0\n"
			       "data/a.bin 1\n"
			       "data/b.bin 0\n"
			       "data/a.bin\t0\r\n"
			       "dir with blanks/x 0x3\n"
			       "dir with blanks/x 3\n",
			       &ei), TFS_OK);
	cr_assert_eq(t.n, 6);
	cr_assert_eq(t.keys[0], t.keys[3]);
	cr_assert_neq(t.keys[0], t.keys[1]);
	cr_assert_neq(t.keys[0], t.keys[2]);
	cr_assert_eq(t.keys[4], t.keys[5]);
	cr_assert_eq(t.keys[0], trace_chunk_key("data/a.bin", 10, 0));
	cr_assert_eq(t.keys[4], trace_chunk_key("dir with blanks/x", 17, 3));
	cr_assert_eq(t.n_distinct, 4);
	trace_release(&t);
}

Test(trace_reader, comments_and_blank_lines_skipped)
{
	struct trace t;
	struct tfs_errinfo ei;

	cr_assert_eq(read_text(&t, "# a trace\n\n   \n7\n  # indented comment\n8", &ei), TFS_OK);
	cr_assert_eq(t.n, 2);
	cr_assert_eq(t.keys[0], 7);
	cr_assert_eq(t.keys[1], 8);           /* last line without a newline */
	trace_release(&t);
}

Test(trace_reader, malformed_line_names_its_number)
{
	static const char *const bad[] = {
		"1\n2\n# ok\nnot-a-number\n",
		"1\n2\n\n-5\n",
		"1\n2\n3\nobj 12x\n",
		"1\n2\n3\n0x\n",
		"1\n2\n3\n99999999999999999999999\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct trace t;
		struct tfs_errinfo ei;

		tfs_errinfo_clear(&ei);
		cr_assert_eq(read_text(&t, bad[i], &ei), TFS_E_INVAL, "case %zu", i);
		cr_assert_not_null(strstr(ei.message, "line 4"), "case %zu: '%s'", i, ei.message);
		cr_assert_null(t.keys);       /* released on failure */
		cr_assert_eq(t.n, 0);
	}
}

/* Read text, a sized trace of n accesses. */
static void read_sized(struct trace *t, const char *text, size_t n)
{
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	cr_assert_eq(read_text(t, text, &ei), TFS_OK, "%s", ei.message);
	cr_assert(t->sized);
	cr_assert_eq(t->n, n);
}

/* Each of the n texts is refused for its line 4, nothing kept. */
static void refused_at_line_4(const char *const *bad, size_t n)
{
	struct tfs_errinfo ei;
	struct trace t;

	for (size_t i = 0; i < n; i++) {
		tfs_errinfo_clear(&ei);
		cr_assert_eq(read_text(&t, bad[i], &ei), TFS_E_INVAL, "case %zu", i);
		cr_assert_not_null(strstr(ei.message, "line 4"), "case %zu: '%s'", i, ei.message);
		cr_assert_null(t.chunk_bytes);
	}
}

/* The daemon's trace: a header, then CHUNK_BYTES READ_BYTES and an
 * access of any of the three kinds; malformed sizes name their line. */
Test(trace_reader, sized_trace_after_its_header)
{
	static const char text[] =
		"# tierfs trace 2: CHUNK_BYTES READ_BYTES OBJECT_KEY CHUNK_INDEX\n"
		"65536 4096 data/a b.bin 3\n"
		"100000 100000 0x2a\n"
		"# tierfs trace 2 (a second header is a comment)\n"
		"8 0 17\n";
	static const char *const bad[] = {
		TRACE_HEADER_2 "\n1 1 a 0\n2 2 b 0\n3 3\n",            /* no access */
		TRACE_HEADER_2 "\n1 1 a 0\n2 2 b 0\n0 0 c 1\n",        /* empty chunk */
		TRACE_HEADER_2 "\n1 1 a 0\n2 2 b 0\n5 6 c 1\n",        /* read > chunk */
		TRACE_HEADER_2 "\n1 1 a 0\n2 2 b 0\n4294967296 1 c 1\n", /* 2^32 */
		TRACE_HEADER_2 "\n1 1 a 0\n2 2 b 0\n0x10 1 c 1\n",     /* hex size */
	};
	struct trace t;
	struct tfs_errinfo ei;

	read_sized(&t, text, 3);
	cr_expect_eq(t.keys[0], trace_chunk_key("data/a b.bin", 12, 3));
	cr_expect_eq(t.keys[1], 42);
	cr_expect_eq(t.keys[2], 17);
	cr_expect_eq(t.chunk_bytes[0], 65536);
	cr_expect_eq(t.read_bytes[0], 4096);
	cr_expect_eq(t.chunk_bytes[1], 100000);
	cr_expect_eq(t.read_bytes[2], 0);
	trace_release(&t);

	/* without the header the same line is an object key with blanks */
	cr_assert_eq(read_text(&t, "65536 4096 data/a 3\n", &ei), TFS_OK);
	cr_assert_not(t.sized);
	cr_expect_eq(t.keys[0], trace_chunk_key("65536 4096 data/a", 17, 3));
	trace_release(&t);

	refused_at_line_4(bad, sizeof(bad) / sizeof(bad[0]));
}

/* Version 3 adds VISIT (0 or 1) after READ_BYTES: which accesses begin a
 * visit of their chunk; version 2's are all visits. */
Test(trace_reader, version_3_says_which_access_is_a_visit)
{
	static const char text[] =
		"# tierfs trace 3: CHUNK_BYTES READ_BYTES VISIT OBJECT_KEY CHUNK_INDEX\n"
		"65536 4096 1 data/1 b.bin 3\n"
		"65536 4096 0 data/1 b.bin 3\n"
		"100000 100000 1 0x2a\n";
	static const char *const bad[] = {
		TRACE_HEADER_3 "\n1 1 1 a 0\n2 2 0 b 0\n3 3 2 c 1\n",   /* VISIT 2 */
		TRACE_HEADER_3 "\n1 1 1 a 0\n2 2 0 b 0\n3 3 c 1\n",     /* no VISIT */
		TRACE_HEADER_3 "\n1 1 1 a 0\n2 2 0 b 0\n3 3 1\n",       /* no access */
	};
	struct trace t;
	struct tfs_errinfo ei;

	read_sized(&t, text, 3);
	cr_expect_eq(t.keys[0], trace_chunk_key("data/1 b.bin", 12, 3));
	cr_expect_eq(t.keys[1], t.keys[0]);
	cr_expect_eq(t.keys[2], 42);
	cr_expect_eq(t.visit[0], 1);
	cr_expect_eq(t.visit[1], 0);
	cr_expect_eq(t.visit[2], 1);
	trace_release(&t);

	cr_assert_eq(read_text(&t, TRACE_HEADER_2 "\n1 1 0 a 0\n", &ei), TFS_OK);
	cr_expect_eq(t.keys[0], trace_chunk_key("0 a", 3, 0), "version 2 has no VISIT");
	cr_expect_eq(t.visit[0], 1);
	trace_release(&t);

	refused_at_line_4(bad, sizeof(bad) / sizeof(bad[0]));
}

Test(trace_reader, overlong_line_rejected)
{
	size_t len = TRACE_MAX_LINE + 100;
	char *text = malloc(len + 8);
	struct trace t;
	struct tfs_errinfo ei;

	strcpy(text, "5\n");
	memset(text + 2, 'k', len);
	strcpy(text + 2 + len, " 1\n");
	cr_assert_eq(read_text(&t, text, &ei), TFS_E_INVAL);
	cr_assert_not_null(strstr(ei.message, "line 2"), "'%s'", ei.message);
	free(text);
}

Test(trace_reader, empty_file_is_an_empty_trace)
{
	struct trace t;
	struct tfs_errinfo ei;

	cr_assert_eq(read_text(&t, "", &ei), TFS_OK);
	cr_assert_eq(t.n, 0);
	cr_assert_eq(t.n_distinct, 0);
	cr_assert_eq(t.warm_from, 0);
	trace_release(&t);
	cr_assert_eq(read_text(&t, "# only a comment\n\n", &ei), TFS_OK);
	cr_assert_eq(t.n, 0);
	trace_release(&t);
}

Test(trace_reader, missing_file)
{
	struct trace t;
	struct tfs_errinfo ei;

	trace_init(&t);
	cr_assert_eq(trace_read_file(&t, "/nonexistent/trace.txt", &ei), TFS_E_NOENT);
	cr_assert_eq(t.n, 0);
}

Test(trace_gen, epoch_sequential)
{
	struct trace t;

	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 100, 3), TFS_OK);
	cr_assert_eq(t.n, 300);
	cr_assert_eq(t.n_distinct, 100);
	cr_assert_eq(t.epoch_len, 100);
	cr_assert_eq(t.warm_from, 100);
	for (size_t i = 0; i < t.n; i++)
		cr_assert_eq(t.keys[i], i % 100);
	trace_release(&t);
	trace_init(&t);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 0, 3), TFS_E_INVAL);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 100, 0), TFS_E_INVAL);
	cr_assert_eq(trace_gen_epoch_sequential(&t, 100000, 10000), TFS_E_INVAL); /* > 10^8 */
}

Test(trace_gen, epoch_shuffled_permutations_and_determinism)
{
	struct trace a, b, c;
	bool differ_from_seq = false, epochs_differ = false;

	trace_init(&a);
	trace_init(&b);
	trace_init(&c);
	cr_assert_eq(trace_gen_epoch_shuffled(&a, 1000, 4, 7), TFS_OK);
	cr_assert_eq(trace_gen_epoch_shuffled(&b, 1000, 4, 7), TFS_OK);
	cr_assert_eq(trace_gen_epoch_shuffled(&c, 1000, 4, 8), TFS_OK);
	cr_assert_eq(a.n_distinct, 1000);
	cr_assert_eq(a.warm_from, 1000);
	assert_epochs_are_permutations(&a, 1000, 4);
	cr_assert_eq(memcmp(a.keys, b.keys, a.n * sizeof(*a.keys)), 0);
	cr_assert_neq(memcmp(a.keys, c.keys, a.n * sizeof(*a.keys)), 0);
	for (size_t i = 0; i < 1000; i++) {
		differ_from_seq |= a.keys[i] != i;
		epochs_differ |= a.keys[i] != a.keys[1000 + i];
	}
	cr_assert(differ_from_seq);
	cr_assert(epochs_differ, "each epoch gets a fresh permutation");
	trace_release(&a);
	trace_release(&b);
	trace_release(&c);
}

Test(trace_gen, zipf_length_skew_determinism)
{
	struct trace a, b;
	size_t count0 = 0, count99 = 0;

	trace_init(&a);
	trace_init(&b);
	cr_assert_eq(trace_gen_zipf(&a, 1000, 1.0, 50000, 3), TFS_OK);
	cr_assert_eq(trace_gen_zipf(&b, 1000, 1.0, 50000, 3), TFS_OK);
	cr_assert_eq(a.n, 50000);
	cr_assert_eq(a.warm_from, 10000);
	cr_assert_eq(a.epoch_len, 0);
	cr_assert_leq(a.n_distinct, 1000);
	cr_assert_gt(a.n_distinct, 500);
	cr_assert_eq(memcmp(a.keys, b.keys, a.n * sizeof(*a.keys)), 0);
	for (size_t i = 0; i < a.n; i++) {
		cr_assert_lt(a.keys[i], 1000);
		count0 += a.keys[i] == 0;
		count99 += a.keys[i] == 99;
	}
	/* P(rank 1) / P(rank 100) = 100 at alpha 1: expect ~6700 vs ~67 */
	cr_assert_gt(count0, 20 * count99, "rank 1: %zu, rank 100: %zu", count0, count99);
	cr_assert_gt(count0, 5000);
	cr_assert_lt(count0, 8500);
	trace_release(&a);
	trace_release(&b);
	trace_init(&a);
	cr_assert_eq(trace_gen_zipf(&a, 1000, 0, 10, 1), TFS_E_INVAL);
	cr_assert_eq(trace_gen_zipf(&a, 0, 1.0, 10, 1), TFS_E_INVAL);
}

Test(trace_gen, hotset_scans)
{
	struct trace a, b;

	trace_init(&a);
	trace_init(&b);
	cr_assert_eq(trace_gen_hotset_scans(&a, 10, 200, 500, 3, 5), TFS_OK);
	cr_assert_eq(trace_gen_hotset_scans(&b, 10, 200, 500, 3, 5), TFS_OK);
	cr_assert_eq(a.n, 3 * 700);
	cr_assert_eq(a.n_distinct, 510);
	cr_assert_eq(a.warm_from, a.n / 5);
	cr_assert_eq(memcmp(a.keys, b.keys, a.n * sizeof(*a.keys)), 0);
	for (size_t r = 0; r < 3; r++) {
		for (size_t i = 0; i < 200; i++)
			cr_assert_lt(a.keys[r * 700 + i], 10);
		for (size_t i = 0; i < 500; i++)
			cr_assert_eq(a.keys[r * 700 + 200 + i], 10 + i);
	}
	trace_release(&a);
	trace_release(&b);
}

Test(trace_gen, shifting_hotset)
{
	struct trace a, b;
	size_t in_first_window = 0;

	trace_init(&a);
	trace_init(&b);
	cr_assert_eq(trace_gen_shifting_hotset(&a, 1000, 100, 2000, 20000, 9), TFS_OK);
	cr_assert_eq(trace_gen_shifting_hotset(&b, 1000, 100, 2000, 20000, 9), TFS_OK);
	cr_assert_eq(a.n, 20000);
	cr_assert_eq(a.warm_from, 4000);
	cr_assert_leq(a.n_distinct, 1000);
	cr_assert_gt(a.n_distinct, 900);
	cr_assert_eq(memcmp(a.keys, b.keys, a.n * sizeof(*a.keys)), 0);
	for (size_t i = 0; i < 2000; i++)
		in_first_window += a.keys[i] < 100;
	/* 90 % in the window plus 10 % of the uniform tenth: ~91 % */
	cr_assert_gt(in_first_window, 1700, "%zu", in_first_window);
	/* the window moved by 50: the second phase is mostly in [50, 150) */
	in_first_window = 0;
	for (size_t i = 2000; i < 4000; i++)
		in_first_window += a.keys[i] >= 50 && a.keys[i] < 150;
	cr_assert_gt(in_first_window, 1700, "%zu", in_first_window);
	trace_release(&a);
	trace_release(&b);
}

Test(trace_gen, two_jobs_disjoint_epochs)
{
	struct trace a, b;
	size_t from_a = 0;

	trace_init(&a);
	trace_init(&b);
	cr_assert_eq(trace_gen_two_jobs(&a, 300, 700, 3, 11), TFS_OK);
	cr_assert_eq(trace_gen_two_jobs(&b, 300, 700, 3, 11), TFS_OK);
	cr_assert_eq(a.n, 3000);
	cr_assert_eq(a.n_distinct, 1000);
	cr_assert_eq(a.epoch_len, 1000);
	cr_assert_eq(a.warm_from, 1000);
	cr_assert_eq(memcmp(a.keys, b.keys, a.n * sizeof(*a.keys)), 0);
	/* each epoch visits every item of both jobs exactly once */
	assert_epochs_are_permutations(&a, 1000, 3);
	/* and interleaves them: job A is about 30 % of the first half epoch */
	for (size_t i = 0; i < 500; i++)
		from_a += a.keys[i] < 300;
	cr_assert_gt(from_a, 100);
	cr_assert_lt(from_a, 200);
	trace_release(&a);
	trace_release(&b);
}
