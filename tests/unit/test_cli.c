/* Unit tests for src/ctl/cli: formatting, relative paths, batching. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "ctl/cli.h"
#include "ctl/cli_internal.h"

static const char *bytes(uint64_t n)
{
	static char buf[64];

	cli_fmt_bytes(n, buf, sizeof(buf));
	return buf;
}

Test(cli, human_bytes)
{
	cr_assert_str_eq(bytes(0), "0 B");
	cr_assert_str_eq(bytes(1023), "1023 B");
	cr_assert_str_eq(bytes(1024), "1.0 KiB");
	cr_assert_str_eq(bytes(1536), "1.5 KiB");
	cr_assert_str_eq(bytes(1048575), "1.0 MiB");   /* not "1024.0 KiB" */
	cr_assert_str_eq(bytes(10ull << 20), "10.0 MiB");
	cr_assert_str_eq(bytes(3ull << 30), "3.0 GiB");
	cr_assert_str_eq(bytes((5ull << 40) + (1ull << 39)), "5.5 TiB");
	cr_assert_str_eq(bytes(UINT64_MAX), "16.0 EiB");
}

Test(cli, durations_and_progress)
{
	char buf[128];

	cli_fmt_duration(12.34, buf, sizeof(buf));
	cr_assert_str_eq(buf, "12.3s");
	cli_fmt_duration(187, buf, sizeof(buf));
	cr_assert_str_eq(buf, "3m07s");
	cli_fmt_duration(7380, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2h03m");
	cli_fmt_duration(2 * 86400 + 5 * 3600, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2d05h");

	/* 100 MiB of 1 GiB in 10 s: 10 MiB/s, 924 MiB left: 92.4 s */
	cli_fmt_progress(buf, sizeof(buf), 100ull << 20, 1ull << 30, 3, 10, 10.0);
	cr_assert_str_eq(buf, "100.0 MiB / 1.0 GiB  3/10 files  10.0 MiB/s  ETA 1:32");
	cli_fmt_progress(buf, sizeof(buf), 0, 1ull << 30, 0, 10, 0);
	cr_assert_str_eq(buf, "0 B / 1.0 GiB  0/10 files  0.0 MiB/s  ETA --:--");
	cli_fmt_progress(buf, sizeof(buf), 1ull << 30, 1ull << 30, 10, 10, 4.0);
	cr_assert_str_eq(buf, "1.0 GiB / 1.0 GiB  10/10 files  256.0 MiB/s  ETA 0:00");
}

Test(cli, relative_paths)
{
	char rel[PATH_MAX];

	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt/x/a/b.jpg", rel, sizeof(rel)), TFS_OK);
	cr_assert_str_eq(rel, "a/b.jpg");
	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt/x", rel, sizeof(rel)), TFS_OK);
	cr_assert_str_eq(rel, "");
	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt/x/new\nline", rel, sizeof(rel)), TFS_OK);
	cr_assert_str_eq(rel, "new\nline");
	cr_assert_eq(cli_rel_path("/", "/etc/passwd", rel, sizeof(rel)), TFS_OK);
	cr_assert_str_eq(rel, "etc/passwd");
	cr_assert_eq(cli_rel_path("/", "/", rel, sizeof(rel)), TFS_OK);
	cr_assert_str_eq(rel, "");
	/* a sibling that shares the prefix is not below the root */
	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt/xy/a", rel, sizeof(rel)), TFS_E_INVAL);
	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt", rel, sizeof(rel)), TFS_E_INVAL);
	cr_assert_eq(cli_rel_path("/mnt/x", "relative", rel, sizeof(rel)), TFS_E_INVAL);
	cr_assert_eq(cli_rel_path("/mnt/x", "/mnt/x/abcdef", rel, 4), TFS_E_NAMETOOLONG);
}

Test(cli, mount_root_walks_to_the_device_boundary)
{
	char dir[] = "/tmp/tierfs-test-cli-XXXXXX", sub[64], root[PATH_MAX], real[PATH_MAX];
	char err[256];
	struct stat a, b;

	cr_assert_eq(cli_mount_root("/", root, sizeof(root), err, sizeof(err)), TFS_OK, "%s", err);
	cr_assert_str_eq(root, "/");

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/s", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_not_null(realpath(sub, real));
	cr_assert_eq(cli_mount_root(real, root, sizeof(root), err, sizeof(err)), TFS_OK, "%s", err);
	/* a prefix of the path, on its device, whose parent is not */
	cr_assert(strcmp(root, "/") == 0 || strncmp(real, root, strlen(root)) == 0);
	cr_assert_eq(stat(root, &a), 0);
	cr_assert_eq(stat(real, &b), 0);
	cr_assert_eq(a.st_dev, b.st_dev);
	if (strcmp(root, "/") != 0) {
		char parent[PATH_MAX];

		snprintf(parent, sizeof(parent), "%s/..", root);
		cr_assert_eq(stat(parent, &b), 0);
		cr_assert_neq(a.st_dev, b.st_dev);
	}
	/* /proc is its own mount wherever these tests run */
	if (stat("/proc/self", &a) == 0 && stat("/", &b) == 0 && a.st_dev != b.st_dev) {
		cr_assert_eq(cli_mount_root("/proc/1", root, sizeof(root), err, sizeof(err)), TFS_OK);
		cr_assert_str_eq(root, "/proc");
	}
	cr_assert_eq(cli_mount_root("/nonexistent-tierfs-xyz", root, sizeof(root), err,
				    sizeof(err)), TFS_E_NOENT);
	rmdir(sub);
	rmdir(dir);
}

Test(cli, mountinfo_owner)
{
	const char *mi =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"40 22 0:45 / /mnt/d rw,nosuid,nodev,relatime shared:30 - fuse.tierfs tierfs:b "
		"rw,user_id=1000,group_id=1000\n"
		"41 22 0:46 / /mnt/with\\040space rw,relatime - fuse tierfs:c rw,user_id=1001,"
		"group_id=1001,allow_other\n"
		"42 22 0:47 / /mnt/e rw,relatime - tmpfs tmpfs rw,user_id=5\n"
		"43 40 0:48 / /mnt/d rw,relatime - fuse.tierfs tierfs:b2 rw,user_id=1002,group_id=1\n";
	uid_t uid = 0;

	cr_assert(cli_mountinfo_owner(mi, "/mnt/d", &uid));
	cr_assert_eq(uid, 1002, "the mount on top wins");
	cr_assert(cli_mountinfo_owner(mi, "/mnt/with space", &uid));
	cr_assert_eq(uid, 1001);
	cr_assert_not(cli_mountinfo_owner(mi, "/mnt/e", &uid), "not a FUSE mount");
	cr_assert_not(cli_mountinfo_owner(mi, "/", &uid));
	cr_assert_not(cli_mountinfo_owner(mi, "/mnt", &uid));
	cr_assert_not(cli_mountinfo_owner("", "/mnt/d", &uid));
}

Test(cli, json_cost_matches_json_c)
{
	static const char *const paths[] = {
		"train/0001.jpg", "with \"quotes\" and \\backslash", "new\nline\ttab\r",
		"ctrl\001\037", "slash/es/", "utf8 \xc3\xa9\xe2\x82\xac", "",
	};
	struct json_object *arr = json_object_new_array();
	size_t sum = 0, n = sizeof(paths) / sizeof(paths[0]);
	const char *s;

	for (size_t i = 0; i < n; i++) {
		json_object_array_add(arr, json_object_new_string(paths[i]));
		sum += cli_json_str_cost(paths[i]);
	}
	s = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	/* "[" + elements joined by "," + "]": the cost counts a comma each */
	cr_assert_eq(strlen(s), sum - 1 + 2, "%s: %zu vs %zu", s, strlen(s), sum + 1);
	json_object_put(arr);
}

Test(cli, batches_respect_both_bounds)
{
	struct cli_file f[25];
	char names[25][16];

	for (int i = 0; i < 25; i++) {
		snprintf(names[i], sizeof(names[i]), "dir/f%04d", i);   /* 9 chars: cost 12 */
		f[i].rel = names[i];
		f[i].size = 0;
	}
	cr_assert_eq(cli_batch_end(f, 0, 25, 10, SIZE_MAX), 10);
	cr_assert_eq(cli_batch_end(f, 20, 25, 10, SIZE_MAX), 25);
	cr_assert_eq(cli_batch_end(f, 0, 25, SIZE_MAX, 12 * 7), 7);
	cr_assert_eq(cli_batch_end(f, 0, 25, SIZE_MAX, 12 * 7 + 11), 7);
	cr_assert_eq(cli_batch_end(f, 3, 25, 2, 12 * 7), 5);
	/* a path larger than the byte bound still goes, alone */
	cr_assert_eq(cli_batch_end(f, 0, 25, SIZE_MAX, 5), 1);
}

static const char sample_stats[] =
	"{\"ok\":true,\"uptime_s\":12.5,"
	"\"counters\":{"
	" \"ram\":{\"hits\":900,\"misses\":100,\"bytes_served\":1073741824,\"bytes_fetched\":"
	"  104857600,\"insertions\":12,\"evictions\":3,\"entries\":9,\"bytes_used\":75497472,"
	"  \"capacity\":268435456,\"checksum_failures\":0,\"io_errors\":0,\"dropped\":0,"
	"  \"rejected\":1,\"waits\":2,\"overflow\":0,\"fills_failed\":0,\"degraded\":false},"
	" \"ssd\":{\"hits\":18446744073709551615,\"misses\":0,\"bytes_served\":5,"
	"  \"bytes_fetched\":6,\"evictions\":0,\"bytes_used\":1,\"capacity\":2,"
	"  \"checksum_failures\":7,\"rejected\":0,\"degraded\":true},"
	" \"readahead\":{\"issued\":10,\"used\":8,\"wasted\":1,\"late\":1,\"dropped\":0,"
	"  \"refused\":0,\"files\":2},"
	" \"s3\":{\"requests\":42,\"gets\":40,\"heads\":1,\"lists\":1,\"retries\":3,\"errors\":0,"
	"  \"bytes\":104857600,\"latency_ms\":{\"p50\":12.5,\"p90\":40,\"p99\":250,\"max\":900,"
	"  \"count\":42}},"
	" \"store\":{\"fetches\":12,\"bytes\":104857600,\"errors\":0},"
	" \"fs\":{\"open_files\":3,\"unsafe_keys\":0},"
	" \"pins\":{\"files\":2,\"ram_bytes\":1048576,\"ssd_bytes\":0}},"
	"\"epoch\":{\"number\":3,\"age_s\":45.0,\"counters\":{"
	" \"ram\":{\"hits\":9,\"misses\":1,\"bytes_served\":1024,\"bytes_fetched\":0,"
	"  \"bytes_used\":75497472,\"capacity\":268435456,\"degraded\":false},"
	" \"s3\":{\"requests\":4,\"latency_ms\":{\"p50\":10,\"p90\":20,\"p99\":30}}}}}";

static char *render(int (*fn)(FILE *, struct json_object *), const char *json)
{
	struct json_object *o = json_tokener_parse(json);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_not_null(o);
	f = open_memstream(&buf, &len);
	cr_assert_not_null(f);
	cr_assert_eq(fn(f, o), 0);
	fclose(f);
	json_object_put(o);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

Test(cli, prometheus_exposition)
{
	char *out = render(cli_stats_prometheus, sample_stats);

	cr_assert_not_null(strstr(out, "# HELP tierfs_tier_hits_total "), "%s", out);
	cr_assert_not_null(strstr(out, "# TYPE tierfs_tier_hits_total counter\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_tier_hits_total{tier=\"ram\"} 900\n"));
	/* uint64 counters exactly, not through a double */
	cr_assert_not_null(strstr(out, "\ntierfs_tier_hits_total{tier=\"ssd\"} "
				  "18446744073709551615\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_tier_degraded{tier=\"ssd\"} 1\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_tier_degraded{tier=\"ram\"} 0\n"));
	cr_assert_not_null(strstr(out, "# TYPE tierfs_tier_used_bytes gauge\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_s3_requests_total 42\n"));
	cr_assert_not_null(strstr(out, "# TYPE tierfs_s3_latency_seconds summary\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_s3_latency_seconds{quantile=\"0.5\"} 0.0125\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_s3_latency_seconds{quantile=\"0.99\"} 0.25\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_s3_latency_seconds_count 42\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_pinned_bytes{tier=\"ram\"} 1048576\n"));
	cr_assert_not_null(strstr(out, "\ntierfs_uptime_seconds 12.5\n"));
	/* one HELP and TYPE per family, even when it spans several entries */
	cr_assert_eq(count(out, "# TYPE tierfs_tier_hits_total "), 1);
	cr_assert_eq(count(out, "# TYPE tierfs_s3_latency_seconds "), 1);
	cr_assert_eq(count(out, "# TYPE tierfs_pinned_bytes "), 1);
	cr_assert_eq(count(out, "(null)"), 0);
	/* a family's samples come right after its TYPE line: no metric name
	 * appears again after another family started */
	{
		const char *p = strstr(out, "# TYPE tierfs_tier_hits_total");
		const char *next = strstr(p + 1, "# HELP");

		cr_assert_eq(count(next, "tierfs_tier_hits_total"), 0);
	}
	/* every non-comment line is NAME[{labels}] VALUE with the tierfs_ prefix */
	for (char *line = out, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cr_assert_not_null(nl);
		if (line[0] == '#')
			continue;
		cr_assert_eq(strncmp(line, "tierfs_", 7), 0, "%.*s", (int)(nl - line), line);
		cr_assert_not_null(memchr(line, ' ', (size_t)(nl - line)));
	}
	free(out);
}

Test(cli, prometheus_without_ssd_and_bad_reply)
{
	char *out = render(cli_stats_prometheus,
			   "{\"ok\":true,\"counters\":{\"ram\":{\"hits\":1}}}");
	struct json_object *bad = json_tokener_parse("{\"ok\":true}");

	cr_assert_not_null(strstr(out, "tierfs_tier_hits_total{tier=\"ram\"} 1\n"));
	cr_assert_null(strstr(out, "ssd"));
	cr_assert_null(strstr(out, "tierfs_s3_"));
	free(out);
	cr_assert_eq(cli_stats_prometheus(stdout, bad), -1);
	json_object_put(bad);
}

static int human(FILE *f, struct json_object *o)
{
	cli_stats_human(f, o, "/mnt/d");
	return 0;
}

Test(cli, human_table)
{
	char *out = render(human, sample_stats);

	cr_assert_not_null(strstr(out, "/mnt/d: up 12.5s, epoch 3 started 45.0s ago"), "%s", out);
	cr_assert_not_null(strstr(out, "since mount"));
	cr_assert_not_null(strstr(out, "epoch 3"));
	cr_assert_not_null(strstr(out, "90.0%"), "%s", out);   /* ram, since mount and epoch */
	cr_assert_eq(count(out, "90.0%"), 2, "%s", out);
	cr_assert_not_null(strstr(out, "72.0 MiB"), "%s", out);
	cr_assert_eq(count(out, "256.0 MiB"), 1, "current values once: %s", out);
	cr_assert_eq(count(out, "250.0 ms"), 1, "current values once: %s", out);
	cr_assert_not_null(strstr(out, "1.0 GiB"));
	cr_assert_not_null(strstr(out, "12.5 ms"));
	cr_assert_not_null(strstr(out, "250.0 ms"));
	cr_assert_not_null(strstr(out, "checksum failures"));
	cr_assert_not_null(strstr(out, "yes"));   /* ssd degraded */
	free(out);

	out = render(human, "{\"ok\":true,\"uptime_s\":7380,\"counters\":{\"ram\":{\"hits\":3,"
			    "\"misses\":1}}}");
	cr_assert_not_null(strstr(out, "/mnt/d: up 2h03m\n"), "%s", out);
	cr_assert_null(strstr(out, "epoch"), "%s", out);
	cr_assert_null(strstr(out, "0 B"), "missing fields show as -: %s", out);
	cr_assert_not_null(strstr(out, "75.0%"), "%s", out);
	free(out);
}

Test(cli, commands)
{
	cr_assert(cli_is_command("stats"));
	cr_assert(cli_is_command("warm"));
	cr_assert(cli_is_command("residency"));
	cr_assert(cli_is_command("ping"));
	cr_assert_not(cli_is_command("mount"));
	cr_assert_not(cli_is_command("unmount"));
	cr_assert_not(cli_is_command(NULL));
}

Test(cli, usage_errors_exit_2)
{
	char *a1[] = { "tierfs", "warm", NULL };
	char *a2[] = { "tierfs", "warm", "--tier", "disk", "/x", NULL };
	char *a3[] = { "tierfs", "stats", "--bogus", "/x", NULL };
	char *a4[] = { "tierfs", "warm", "--jobs", "0", "/x", NULL };
	char *a5[] = { "tierfs", "stats", "--json", "--prometheus", "/", NULL };
	char *a6[] = { "tierfs", "trace", "begin", "/", NULL };

	cr_assert_eq(cli_main(2, a1), 2);
	cr_assert_eq(cli_main(5, a2), 2);
	cr_assert_eq(cli_main(4, a3), 2);
	cr_assert_eq(cli_main(5, a4), 2);
	cr_assert_eq(cli_main(5, a5), 2);
	cr_assert_eq(cli_main(4, a6), 2);
}

Test(cli, no_socket_is_a_clear_failure)
{
	char dir[] = "/tmp/tierfs-test-cli-XXXXXX";
	char *argv[] = { "tierfs", "ping", dir, NULL };

	cr_assert_not_null(mkdtemp(dir));
	setenv("TIERFS_RUNTIME_DIR", dir, 1);
	unsetenv("TIERFS_SOCKET");
	cr_assert_eq(cli_main(3, argv), 1);
	rmdir(dir);
}

Test(cli, plan_lines_become_paths_below_the_mount)
{
	cr_expect_str_eq(cli_plan_path("/mnt/d", NULL, "a/b.jpg"), "a/b.jpg");
	cr_expect_str_eq(cli_plan_path("/mnt/d", NULL, "/mnt/d/a/b.jpg"), "a/b.jpg");
	cr_expect_str_eq(cli_plan_path("/mnt/d", "/mnt/d/", "/mnt/d/a"), "a");
	/* the MOUNT argument as typed, when it is not canonical (a symlink) */
	cr_expect_str_eq(cli_plan_path("/mnt/d", "/data", "/data/x/y"), "x/y");
	cr_expect_null(cli_plan_path("/mnt/d", NULL, "/mnt/dd/a"), "a sibling, not below");
	cr_expect_null(cli_plan_path("/mnt/d", NULL, "/mnt/d"), "the root is not a file");
	cr_expect_null(cli_plan_path("/mnt/d", NULL, "/etc/passwd"));
	cr_expect_null(cli_plan_path("/mnt/d", NULL, "a/../../etc"));
	cr_expect_null(cli_plan_path("/mnt/d", NULL, "a//b"));
	/* a relative MOUNT is no prefix: the line is relative to the mount */
	cr_expect_str_eq(cli_plan_path("/mnt/d", "d", "d/a"), "d/a");
}
