/* test_s3_creds.c - credential resolution: environment, shared file,
 * profiles, long session tokens, clear errors.  Criterion runs every test
 * in its own process, so setenv() does not leak between tests. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/s3_creds.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	strcpy(dir, "/tmp/tierfs-creds-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/credentials", dir);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	setenv("HOME", dir, 1);   /* $HOME/.aws/credentials does not exist */
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *p, const char *content)
{
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f);
	fputs(content, f);
	fclose(f);
}

static void use_file(const char *content)
{
	write_file(path, content);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
}

TestSuite(s3_creds, .init = setup, .fini = teardown);

Test(s3_creds, from_environment)
{
	struct s3_creds *c;

	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret/env+", 1);
	setenv("AWS_SESSION_TOKEN", "tok", 1);
	use_file("[default]\naws_access_key_id = AKFILE\naws_secret_access_key = sf\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKENV");
	cr_assert_str_eq(c->secret_key, "secret/env+");
	cr_assert_str_eq(c->session_token, "tok");
	cr_assert_str_eq(c->source, "environment");
	s3_creds_free(c);

	unsetenv("AWS_SESSION_TOKEN");
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_null(c->session_token);
	s3_creds_free(c);
	setenv("AWS_SESSION_TOKEN", "", 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_null(c->session_token);
	s3_creds_free(c);
}

Test(s3_creds, half_set_environment)
{
	struct tfs_errinfo ei;
	struct s3_creds *c = (struct s3_creds *)0x1;

	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	cr_assert_null(c);
	cr_assert_str_eq(ei.message, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
	/* an empty key id means "not set": fall through to the file */
	setenv("AWS_ACCESS_KEY_ID", "", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "orphan", 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_MISS);
	cr_assert_null(c);
}

Test(s3_creds, nothing_configured)
{
	struct s3_creds *c;

	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_MISS);
	cr_assert_null(c);
	unsetenv("HOME");
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_MISS);
}

Test(s3_creds, home_default_profile)
{
	char aws[128], p[160];
	struct s3_creds *c;

	snprintf(aws, sizeof(aws), "%s/.aws", dir);
	cr_assert_eq(mkdir(aws, 0700), 0);
	snprintf(p, sizeof(p), "%s/credentials", aws);
	write_file(p, "# comment\n; another\n\n[other]\naws_access_key_id=AKO\n"
		   "aws_secret_access_key=SO\n\n[default]\r\n"
		   "  aws_access_key_id   =   AKDEF  \r\n"
		   "AWS_SECRET_ACCESS_KEY = s/d+e=f ; inline comment\r\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKDEF");
	cr_assert_str_eq(c->secret_key, "s/d+e=f");
	cr_assert_null(c->session_token);
	cr_assert(strstr(c->source, "/.aws/credentials [default]") != NULL, "%s", c->source);
	s3_creds_free(c);
}

Test(s3_creds, profile_selection)
{
	struct tfs_errinfo ei;
	struct s3_creds *c;
	char want[256];

	use_file("[default]\naws_access_key_id=AKD\naws_secret_access_key=SD\n"
		 "[prod]\naws_access_key_id=AKP\naws_secret_access_key=SP\n"
		 "aws_session_token=TP\n");
	setenv("AWS_PROFILE", "prod", 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKP");
	cr_assert_str_eq(c->session_token, "TP");
	s3_creds_free(c);

	/* the argument beats AWS_PROFILE, and environment keys */
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SENV", 1);
	cr_assert_eq(s3_creds_resolve("default", &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKD");
	s3_creds_free(c);

	cr_assert_eq(s3_creds_resolve("nope", &c, &ei), TFS_E_INVAL);
	cr_assert_null(c);
	snprintf(want, sizeof(want), "profile 'nope' not found in %s", path);
	cr_assert_str_eq(ei.message, want);

	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_PROFILE", "missing", 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	snprintf(want, sizeof(want), "profile 'missing' not found in %s", path);
	cr_assert_str_eq(ei.message, want);
}

Test(s3_creds, implicit_default_absent_is_a_miss)
{
	struct s3_creds *c;

	use_file("[prod]\naws_access_key_id=AKP\naws_secret_access_key=SP\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_MISS);
	cr_assert_eq(s3_creds_resolve("default", &c, NULL), TFS_E_INVAL);
}

Test(s3_creds, explicit_profile_without_file)
{
	struct tfs_errinfo ei;
	struct s3_creds *c;
	char want[256];

	cr_assert_eq(s3_creds_resolve("prod", &c, &ei), TFS_E_INVAL);
	snprintf(want, sizeof(want), "profile 'prod' not found: %s/.aws/credentials does not exist",
		 dir);
	cr_assert_str_eq(ei.message, want);
}

Test(s3_creds, incomplete_profile)
{
	struct tfs_errinfo ei;
	struct s3_creds *c;
	char want[256];

	use_file("[default]\naws_access_key_id=AKD\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	snprintf(want, sizeof(want), "profile 'default' in %s has no aws_secret_access_key", path);
	cr_assert_str_eq(ei.message, want);
	cr_assert(strstr(ei.message, "AKD") == NULL);
}

/* A real STS token is ~1 KiB; inih's line buffer is 200 bytes. */
Test(s3_creds, long_session_token)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char token[1601], secret[301], *file;
	struct s3_creds *c;

	for (size_t i = 0; i < sizeof(token) - 1; i++)
		token[i] = b64[(i * 7 + i / 64) % 64];
	token[sizeof(token) - 1] = '\0';
	token[500] = ';';   /* no space before: not a comment */
	token[777] = '#';
	token[1000] = '=';
	for (size_t i = 0; i < sizeof(secret) - 1; i++)
		secret[i] = b64[(i * 13) % 64];
	secret[sizeof(secret) - 1] = '\0';
	cr_assert_gt(asprintf(&file, "; %0300d\n[default]\naws_access_key_id = AKLONG\n"
			      "aws_session_token = %s\naws_secret_access_key=%s\n"
			      "# trailing %0400d\n[x]\nk = %s\n", 0, token, secret, 0, token), 0);
	use_file(file);
	free(file);
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKLONG");
	cr_assert_str_eq(c->session_token, token);
	cr_assert_str_eq(c->secret_key, secret);
	s3_creds_free(c);

	/* a long value followed by an inline comment keeps only the value */
	cr_assert_gt(asprintf(&file, "[default]\naws_access_key_id=A\naws_secret_access_key=S\n"
			      "aws_session_token=%s ; %0500d\n", token, 0), 0);
	use_file(file);
	free(file);
	cr_assert_eq(s3_creds_resolve(NULL, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->session_token, token);
	s3_creds_free(c);
}

Test(s3_creds, malformed_files)
{
	struct tfs_errinfo ei;
	struct s3_creds *c;
	char want[256], *file;

	/* the error names the physical line even after a long split line */
	cr_assert_gt(asprintf(&file, "[default]\naws_session_token=%01000d\n"
			      "aws_access_key_id=A\nthis line is broken\n", 0), 0);
	use_file(file);
	free(file);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	snprintf(want, sizeof(want), "%s:4: malformed line", path);
	cr_assert_str_eq(ei.message, want);

	use_file("[default]\naws_access_key_id=A\naws_access_key_id=B\naws_secret_access_key=S\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	snprintf(want, sizeof(want), "%s:3: aws_access_key_id set twice", path);
	cr_assert_str_eq(ei.message, want);

	use_file("[default]\naws_access_key_id=A\n  continued\naws_secret_access_key=S\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, ":3: continuation line") != NULL, "%s", ei.message);

	use_file("[default\naws_access_key_id=A\n");
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);

	/* a line that cannot be split without losing bytes */
	cr_assert_gt(asprintf(&file, "[default]\naws_access_key_id=A\naws_secret_access_key=S\n"
			      "aws_session_token=x%0100d                                       "
			      "                                                              "
			      "                                                              "
			      "                                                   y\n", 0), 0);
	use_file(file);
	free(file);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, ":4: line too long") != NULL, "%s", ei.message);

	/* not a regular file */
	setenv("AWS_SHARED_CREDENTIALS_FILE", dir, 1);
	cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, "not a regular file") != NULL, "%s", ei.message);

	/* unreadable */
	use_file("[default]\n");
	chmod(path, 0);
	if (geteuid() != 0) {
		cr_assert_eq(s3_creds_resolve(NULL, &c, &ei), TFS_E_INVAL);
		cr_assert(strstr(ei.message, "cannot open") != NULL, "%s", ei.message);
	}
}

Test(s3_creds, free_null)
{
	s3_creds_free(NULL);
}
