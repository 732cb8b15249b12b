/* Unit tests for src/tiers/access_trace: what is recorded replays, in the
 * simulator's reader, to the same policy keys; refusals; a full disk. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "sim/trace.h"
#include "tiers/access_trace.h"
#include "tmpdir.h"

static char dir[64];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "at");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

TestSuite(access_trace, .init = setup, .fini = teardown);

Test(access_trace, records_replay_to_the_same_policy_keys)
{
	static const struct {
		const char *key;
		uint64_t index;
	} acc[] = {
		{ "train/0001.jpg", 0 }, { "with space.bin", 3 }, { "new\nline", 1 },
		{ " leading", 2 },       { "#hash", 0 },          { "tab\there", 9 },
		{ "train/0001.jpg", 0 },
	};
	size_t n = sizeof(acc) / sizeof(acc[0]);
	char path[128], err[256];
	struct access_trace *t;
	struct trace tr;
	struct tfs_errinfo ei;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.txt", dir);
	cr_assert_eq(access_trace_start(path, &t, err, sizeof(err)), TFS_OK, "%s", err);
	for (size_t i = 0; i < n; i++)
		access_trace_record(t, acc[i].key, acc[i].index, 4096 + i, 100 * i, i % 3 != 1);
	cr_expect_eq(access_trace_records(t), n);
	cr_expect_eq(access_trace_stop(t), n);

	f = fopen(path, "r");
	cr_assert_not_null(f);
	trace_init(&tr);
	cr_assert_eq(trace_read_stream(&tr, f, &ei), TFS_OK, "%s", ei.message);
	fclose(f);
	cr_assert_eq(tr.n, n);
	cr_assert(tr.sized, "the trace has no sizes");
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(tr.keys[i], trace_chunk_key(acc[i].key, strlen(acc[i].key), acc[i].index),
			     "access %zu (%s) replays to another key", i, acc[i].key);
		cr_expect_eq(tr.chunk_bytes[i], 4096 + i);
		cr_expect_eq(tr.read_bytes[i], 100 * i);
		cr_expect_eq(tr.visit[i], i % 3 != 1, "access %zu: visit flag lost", i);
	}
	trace_release(&tr);
}

Test(access_trace, refuses_relative_paths_symlinks_and_missing_dirs)
{
	char path[128], link[128], err[256];
	struct access_trace *t;

	cr_expect_eq(access_trace_start("rel.txt", &t, err, sizeof(err)), TFS_E_INVAL);
	cr_expect_null(t);
	snprintf(path, sizeof(path), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(path, link), 0);
	cr_expect_neq(access_trace_start(link, &t, err, sizeof(err)), TFS_OK);
	cr_expect(strstr(err, "symlink") != NULL, "%s", err);
	cr_expect_eq(access(path, F_OK), -1, "the symlink's target was created");
	snprintf(path, sizeof(path), "%s/no/such/dir/t.txt", dir);
	cr_expect_eq(access_trace_start(path, &t, err, sizeof(err)), TFS_E_NOENT);
}

Test(access_trace, a_full_disk_stops_recording_without_harm)
{
	char err[256];
	struct access_trace *t;

	if (access("/dev/full", W_OK) != 0)
		cr_skip_test("no /dev/full");
	cr_assert_eq(access_trace_start("/dev/full", &t, err, sizeof(err)), TFS_OK, "%s", err);
	/* more than the 1 MiB buffer: stdio must hit the error */
	for (int i = 0; i < 100000; i++)
		access_trace_record(t, "some/fairly/long/object/key/for/the/trace.bin", (uint64_t)i,
				    65536, 4096, true);
	cr_expect_gt(access_trace_dropped(t), 0, "a failed write went unnoticed");
	cr_expect_lt(access_trace_records(t), 100000);
	(void)access_trace_stop(t);
}
