/* Unit tests for src/ctl/ctl_proto: what the control socket accepts, what
 * it refuses and why (its fuzz target is test_fuzz_ctl_proto). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_proto.h"

static int parse(const char *s, struct ctl_request *r, char *err, size_t n)
{
	return ctl_request_parse(s, strlen(s), r, err, n);
}

Test(ctl_proto, valid_requests_parse_into_checked_fields)
{
	struct ctl_request r;
	char err[256];

	cr_assert_eq(parse("{\"cmd\":\"pin\",\"paths\":[\"a/b c\",\"x\"],\"tier\":\"ram\"}", &r,
			   err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(r.cmd, CTL_PIN);
	cr_expect_eq(r.tier, CTL_TIER_RAM);
	cr_assert_eq(r.n_paths, 2);
	cr_expect_str_eq(r.paths[0], "a/b c");
	ctl_request_release(&r);

	cr_assert_eq(parse("  {\"cmd\":\"evict\",\"all\":true,\"tier\":\"all\"}  ", &r, err,
			   sizeof(err)), 0, "%s", err);
	cr_expect(r.all);
	cr_expect_eq(r.tier, CTL_TIER_ALL);
	cr_expect_eq(r.n_paths, 0);
	ctl_request_release(&r);

	cr_assert_eq(parse("{\"cmd\":\"warm\",\"path\":\"d/\\u00e9\\n.bin\",\"extra\":1}", &r, err,
			   sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(r.path, "d/\xc3\xa9\n.bin", "escapes decoded, unknown fields ignored");
	ctl_request_release(&r);

	cr_assert_eq(parse("{\"cmd\":\"plan\",\"paths\":[\"a\",\"b\"],\"more\":true}", &r, err,
			   sizeof(err)), 0, "%s", err);
	cr_expect_eq(r.cmd, CTL_PLAN);
	cr_expect(r.more);
	cr_expect_eq(r.append, 0);
	cr_expect_eq(r.n_paths, 2);
	ctl_request_release(&r);
	cr_assert_eq(parse("{\"cmd\":\"plan\",\"paths\":[],\"append\":7}", &r, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(r.append, 7, "a last part may be empty");
	cr_expect(!r.more);
	ctl_request_release(&r);
	cr_assert_eq(parse("{\"cmd\":\"plan\",\"clear\":true}", &r, err, sizeof(err)), 0, "%s", err);
	cr_expect(r.clear);
	ctl_request_release(&r);
}

Test(ctl_proto, hostile_requests_are_refused_with_a_reason)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "", "not JSON" },
		{ "{", "not JSON" },
		{ "[]", "a request is a JSON object" },
		{ "{\"cmd\":1}", "must be a string" },
		{ "{}", "\"cmd\" is missing" },
		{ "{\"cmd\":\"rm\"}", "unknown command" },
		{ "{\"cmd\":\"ping\"}x", "text after it" },
		{ "{\"cmd\":\"residency\",\"paths\":[\"../etc\"]}", "below the mount root" },
		{ "{\"cmd\":\"residency\",\"paths\":[\"a/./b\"]}", "below the mount root" },
		{ "{\"cmd\":\"residency\",\"paths\":[\"a//b\"]}", "below the mount root" },
		{ "{\"cmd\":\"residency\",\"paths\":[\"/etc/passwd\"]}", "below the mount root" },
		{ "{\"cmd\":\"residency\",\"paths\":[\"a\\u0000b\"]}", "below the mount root" },
		{ "{\"cmd\":\"residency\",\"paths\":[]}", "empty" },
		{ "{\"cmd\":\"residency\",\"paths\":[7]}", "not a string" },
		{ "{\"cmd\":\"residency\"}", "missing" },
		{ "{\"cmd\":\"pin\",\"all\":true}", "missing" },
		{ "{\"cmd\":\"unpin\",\"all\":true,\"paths\":[\"a\"]}", "exclude each other" },
		{ "{\"cmd\":\"warm\",\"path\":\"a\",\"tier\":\"all\"}", "\"tier\" must be" },
		{ "{\"cmd\":\"warm\"}", "\"path\" must be" },
		{ "{\"cmd\":\"trace_start\",\"file\":\"t.txt\"}", "absolute" },
		{ "{\"cmd\":\"ping\",\"cmd\":\"\\u0000\"}", "NUL" },
		{ "{\"cmd\":\"plan\"}", "missing" },
		{ "{\"cmd\":\"plan\",\"paths\":[]}", "empty" },
		{ "{\"cmd\":\"plan\",\"paths\":[\"../x\"]}", "below the mount root" },
		{ "{\"cmd\":\"plan\",\"paths\":[\"a\"],\"append\":0}", "positive integer" },
		{ "{\"cmd\":\"plan\",\"paths\":[\"a\"],\"append\":\"1\"}", "positive integer" },
		{ "{\"cmd\":\"plan\",\"paths\":[\"a\"],\"more\":1}", "true or false" },
		{ "{\"cmd\":\"plan\",\"clear\":true,\"paths\":[\"a\"]}", "takes no" },
	};
	struct ctl_request r;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_expect_eq(parse(bad[i].line, &r, err, sizeof(err)), -1, "accepted: %s", bad[i].line);
		cr_expect(strstr(err, bad[i].why) != NULL, "%s: reason '%s', want '%s'", bad[i].line,
			  err, bad[i].why);
		cr_expect_null(r.root);
	}
}

Test(ctl_proto, bounds_on_line_length_path_count_and_nesting)
{
	struct ctl_request r;
	char err[256];
	size_t n = CTL_PATHS_MAX + 1, len = 0;
	char *s = malloc(n * 6 + 64);

	len += (size_t)sprintf(s, "{\"cmd\":\"residency\",\"paths\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "%s\"a\"", i ? "," : "");
	strcpy(s + len, "]}");
	cr_expect_eq(parse(s, &r, err, sizeof(err)), -1);
	cr_expect(strstr(err, "at most") != NULL, "%s", err);
	free(s);

	s = malloc(CTL_LINE_MAX + 2);
	memset(s, ' ', CTL_LINE_MAX + 1);
	cr_expect_eq(ctl_request_parse(s, CTL_LINE_MAX + 1, &r, err, sizeof(err)), -1);
	cr_expect(strstr(err, "too long") != NULL, "%s", err);
	free(s);

	s = malloc(20000);
	memset(s, '[', 10000);
	memset(s + 10000, ']', 10000);
	cr_expect_eq(ctl_request_parse(s, 20000, &r, err, sizeof(err)), -1, "deep nesting");
	free(s);
}

Test(ctl_proto, path_rules)
{
	cr_expect(ctl_path_ok("a", 1));
	cr_expect(ctl_path_ok("a/b.c/..d", 9));
	cr_expect(ctl_path_ok("...", 3));
	cr_expect(!ctl_path_ok("", 0));
	cr_expect(!ctl_path_ok("a/", 2));
	cr_expect(!ctl_path_ok("./a", 3));
	cr_expect(!ctl_path_ok("a/..", 4));
}
