/* test_cred_util.c - timestamps, form encoding, JSON access and the small
 * file reader the credential sources share. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s3/cred_util.h"

Test(cred_util, times_in_the_forms_sources_send)
{
	int64_t ms = 0;

	cr_assert(cred_parse_time("2014-10-24T23:00:23Z", &ms));
	cr_assert_eq(ms, 1414191623000LL);
	cr_assert(cred_parse_time("2014-10-24T23:00:23.250Z", &ms));
	cr_assert_eq(ms, 1414191623250LL);
	cr_assert(cred_parse_time("2014-10-25T01:00:23+02:00", &ms));
	cr_assert_eq(ms, 1414191623000LL);
	cr_assert(cred_parse_time("2014-10-24T22:00:23-01:00", &ms));
	cr_assert_eq(ms, 1414191623000LL);
	cr_assert_not(cred_parse_time("2014-10-24", &ms));
	cr_assert_not(cred_parse_time("2014-10-24T23:00:23", &ms), "a zone is required");
	cr_assert_not(cred_parse_time("2014-13-24T23:00:23Z", &ms));
	cr_assert_not(cred_parse_time("2014-10-24T23:00:23Zjunk", &ms));
	cr_assert_not(cred_parse_time("", &ms));
	cr_assert_not(cred_parse_time(NULL, &ms));
}

Test(cred_util, form_encoding)
{
	const char *pairs[] = { "a b", "x&y=z", "tok", "A-Z_a.z~0/+" };
	char *s = cred_form_encode(pairs, 2);

	cr_assert_str_eq(s, "a%20b=x%26y%3Dz&tok=A-Z_a.z~0%2F%2B");
	free(s);
}

Test(cred_util, json_members_and_malformed_documents)
{
	const char *why = NULL;
	static const char doc[] = "{\"s\": \"v\", \"n\": 3599, \"ns\": \"42\", \"f\": 1.5, "
				  "\"o\": {}} \n";
	struct cred_json *j = cred_json_parse(doc, strlen(doc), &why);
	int64_t v = 0;

	cr_assert_not_null(j, "%s", why);
	cr_assert_str_eq(cred_json_str(j, "s"), "v");
	cr_assert_null(cred_json_str(j, "n"));
	cr_assert_null(cred_json_str(j, "missing"));
	cr_assert(cred_json_int(j, "n", &v) && v == 3599);
	cr_assert(cred_json_int(j, "ns", &v) && v == 42);
	cr_assert(cred_json_int(j, "f", &v) && v == 1);
	cr_assert_not(cred_json_int(j, "o", &v));
	cr_assert_not(cred_json_int(j, "s", &v));
	cred_json_free(j);

	cr_assert_null(cred_json_parse("{\"a\": 1} trailing", 17, &why));
	cr_assert_null(cred_json_parse("{\"a\": ", 6, &why));
	cr_assert_str_eq(why, "not JSON");
	cr_assert_null(cred_json_parse("[1]", 3, &why));
	cr_assert_str_eq(why, "not a JSON object");
	cr_assert_null(cred_json_parse("", 0, &why));
	cr_assert_null(cred_json_parse("\x01\x02\xff", 3, &why));
}

Test(cred_util, json_quote)
{
	char *q = cred_json_quote("a\"b\\c\nd");

	cr_assert_str_eq(q, "\"a\\\"b\\\\c\\u000ad\"");
	free(q);
}

Test(cred_util, read_file_bounds)
{
	char path[] = "/tmp/tfs-cred-util-XXXXXX", *buf = NULL;
	struct tfs_errinfo ei;
	size_t len = 0;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "  token \n", 9), 9);
	close(fd);
	cr_assert_eq(cred_read_file(path, 100, &buf, &len, &ei), TFS_OK);
	cr_assert_eq(len, 9);
	cr_assert_str_eq(cred_trim(buf), "token");
	cred_wipe_free(buf);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(cred_read_file(path, 4, &buf, &len, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, "at most 4 bytes"), "%s", ei.message);
	cr_assert_null(buf);
	unlink(path);
	cr_assert_eq(cred_read_file(path, 100, &buf, &len, &ei), TFS_MISS);
	cr_assert_eq(cred_read_file("/", 100, &buf, &len, &ei), TFS_E_INVAL);
}

Test(cred_util, err_prefix)
{
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	tfs_errinfo_set(&ei, "inner");
	cred_err_prefix(&ei, "outer");
	cr_assert_str_eq(ei.message, "outer: inner");
	cred_err_prefix(NULL, "x");
}
