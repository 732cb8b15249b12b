/* test_aws_creds.c - the AWS chain's parsers on AWS's documented replies,
 * and the chain's order and errors (no network: metadata is switched off,
 * and credential_process runs local shell commands). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/aws_creds.h"

/* AWS's example reply of AssumeRoleWithWebIdentity (STS API reference). */
static const char sts_reply[] =
	"<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
	"  <AssumeRoleWithWebIdentityResult>\n"
	"    <SubjectFromWebIdentityToken>amzn1.account.AF6RHO7KZU5XRVQJGXK6HB56KR2A"
	"</SubjectFromWebIdentityToken>\n"
	"    <Audience>client.5498841531868486423.1548@apps.example.com</Audience>\n"
	"    <AssumedRoleUser>\n"
	"      <Arn>arn:aws:sts::123456789012:assumed-role/FederatedWebIdentityRole/app1</Arn>\n"
	"      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:app1</AssumedRoleId>\n"
	"    </AssumedRoleUser>\n"
	"    <Credentials>\n"
	"      <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>\n"
	"      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>\n"
	"      <Expiration>2014-10-24T23:00:23Z</Expiration>\n"
	"      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>\n"
	"    </Credentials>\n"
	"    <Provider>www.amazon.com</Provider>\n"
	"  </AssumeRoleWithWebIdentityResult>\n"
	"  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId>"
	"</ResponseMetadata>\n"
	"</AssumeRoleWithWebIdentityResponse>\n";

typedef int (*xml_parser)(const char *xml, size_t len, struct cred **out,
			  struct tfs_errinfo *ei);

/* parse(xml) gives exactly these keys, token and expiry. */
static void parses_to(xml_parser parse, const char *xml, const char *ak, const char *sk,
		      const char *token, int64_t expires_ms)
{
	struct cred *c = NULL;
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	cr_assert_eq(parse(xml, strlen(xml), &c, &ei), TFS_OK, "%s", ei.message);
	cr_assert_str_eq(c->access_key, ak);
	cr_assert_str_eq(c->secret_key, sk);
	cr_assert_str_eq(c->session_token, token);
	cr_assert_eq(c->expires_ms, expires_ms);
	cred_put(c);
}

Test(aws_creds, sts_reply_of_the_documentation)
{
	parses_to(aws_creds_parse_sts, sts_reply, "ASgeIAIOSFODNN7EXAMPLE",
		  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
		  "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE", 1414191623000LL);
}

/* The shape of S3 Express One Zone's CreateSession reply (S3 API
 * reference, CreateSession). */
Test(aws_creds, create_session_reply)
{
	static const char reply[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<CreateSessionResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Credentials><SessionToken>TOKEN/+=</SessionToken>"
		"<SecretAccessKey>SECRET/+</SecretAccessKey><AccessKeyId>ASIASESSION</AccessKeyId>"
		"<Expiration>2026-12-07T10:05:00Z</Expiration></Credentials></CreateSessionResult>";
	static const char *const bad[] = {
		"", "<CreateSessionResult/>",
		"<CreateSessionResult><Credentials><AccessKeyId>A</AccessKeyId>"
		"<SecretAccessKey>S</SecretAccessKey><SessionToken>T</SessionToken>"
		"</Credentials></CreateSessionResult>",
		"<CreateSessionResult><Credentials><AccessKeyId>A</AccessKeyId>"
		"<SecretAccessKey>S</SecretAccessKey><SessionToken>T</SessionToken>"
		"<Expiration>soon</Expiration></Credentials></CreateSessionResult>",
	};
	struct cred *c = NULL;
	struct tfs_errinfo ei;

	parses_to(aws_creds_parse_session, reply, "ASIASESSION", "SECRET/+", "TOKEN/+=",
		  1796637900000LL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tfs_errinfo_clear(&ei);
		c = NULL;
		cr_assert_eq(aws_creds_parse_session(bad[i], strlen(bad[i]), &c, &ei), TFS_E_PROTO,
			     "case %zu", i);
		cr_assert_null(c);
		cr_assert(strstr(ei.message, "CreateSession"), "case %zu: %s", i, ei.message);
	}
}

Test(aws_creds, sts_errors_and_garbage)
{
	static const char err[] =
		"<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
		"<Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Couldn't retrieve "
		"verification key from your identity provider</Message></Error></ErrorResponse>";
	static const char *const bad[] = {
		"", "not xml", "<a><b></a>",
		"<!DOCTYPE x [<!ENTITY e \"x\">]><AssumeRoleWithWebIdentityResponse/>",
		"<AssumeRoleWithWebIdentityResponse><Credentials><AccessKeyId>A</AccessKeyId>"
		"</Credentials></AssumeRoleWithWebIdentityResponse>",
		"<R><Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
		"<SessionToken>T</SessionToken><Expiration>tomorrow</Expiration></Credentials></R>",
	};
	struct cred *c = NULL;
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	cr_assert_eq(aws_creds_parse_sts(err, strlen(err), &c, &ei), TFS_E_AUTH);
	cr_assert_str_eq(ei.code, "InvalidIdentityToken");
	cr_assert(strstr(ei.message, "verification key"), "%s", ei.message);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tfs_errinfo_clear(&ei);
		cr_assert_eq(aws_creds_parse_sts(bad[i], strlen(bad[i]), &c, &ei), TFS_E_PROTO,
			     "case %zu", i);
		cr_assert_null(c);
		cr_assert(ei.message[0], "case %zu has a message", i);
	}
}

/* A hostile STS reply must not reach the daemon's stderr through
 * libxml2's own error printing (its generic handler ignores
 * XML_PARSE_NOERROR for some errors, e.g. bytes invalid in the declared encoding). */
Test(aws_creds, sts_garbage_writes_nothing_to_stderr)
{
	static const char *const bad[] = {
		"<?xml version=\"1.0\" encoding=\"EUC-JP\"?><R>\xff\xff\xff</R>",
		"<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?><R>\x1b$B\xff\xff</R>",
	};
	char path[] = "/tmp/tierfs-sts-stderr-XXXXXX";
	struct cred *c = NULL;
	struct tfs_errinfo ei;
	int fd = mkstemp(path), saved = dup(2);
	struct stat st;

	cr_assert(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(aws_creds_parse_sts(bad[i], strlen(bad[i]), &c, &ei), TFS_E_PROTO,
			     "case %zu", i);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	unlink(path);
	cr_assert_eq(st.st_size, 0, "libxml2 wrote %lld bytes to stderr", (long long)st.st_size);
}

Test(aws_creds, imds_container_and_process_json)
{
	/* IMDS's documented reply */
	static const char imds[] =
		"{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : \"2012-04-26T16:39:16Z\",\n"
		"  \"Type\" : \"AWS-HMAC\",\n  \"AccessKeyId\" : \"ASIAIOSFODNN7EXAMPLE\",\n"
		"  \"SecretAccessKey\" : \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\",\n"
		"  \"Token\" : \"token\",\n  \"Expiration\" : \"2017-05-17T15:09:54Z\"\n}";
	static const char proc[] = "{\"Version\": 1, \"AccessKeyId\": \"AK\", "
				   "\"SecretAccessKey\": \"SK\", \"SessionToken\": \"ST\"}";
	struct cred *c = NULL;
	struct tfs_errinfo ei;

	cr_assert_eq(aws_creds_parse_json(imds, strlen(imds), 0, &c, &ei), TFS_OK, "%s",
		     ei.message);
	cr_assert_str_eq(c->access_key, "ASIAIOSFODNN7EXAMPLE");
	cr_assert_str_eq(c->session_token, "token");
	cr_assert_eq(c->expires_ms, 1495033794000LL);
	cred_put(c);
	cr_assert_eq(aws_creds_parse_json(proc, strlen(proc), 1, &c, &ei), TFS_OK);
	cr_assert_str_eq(c->session_token, "ST");
	cr_assert_eq(c->expires_ms, 0, "no Expiration: never expires");
	cred_put(c);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(aws_creds_parse_json(proc, strlen(proc), 0, &c, &ei), TFS_E_PROTO,
		     "temporary sources must say when they expire");
	cr_assert_eq(aws_creds_parse_json("{\"Code\": \"AssumeRoleUnauthorizedAccess\"}", 40, 0,
					  &c, &ei), TFS_E_AUTH);
	cr_assert_eq(aws_creds_parse_json("{\"Version\": 2, \"AccessKeyId\": \"A\", "
					  "\"SecretAccessKey\": \"S\"}", 56, 1, &c, &ei),
		     TFS_E_PROTO);
	cr_assert_eq(aws_creds_parse_json("<html>", 6, 1, &c, &ei), TFS_E_PROTO);
	cr_assert_eq(aws_creds_parse_json("{\"AccessKeyId\": 5}", 18, 1, &c, &ei), TFS_E_PROTO);
}

Test(aws_creds, config_file_values)
{
	static const char text[] =
		"# comment\n[default]\nregion = us-east-1\ncredential_process = /bin/a b\n"
		"\n[ profile  prod ]\n; comment\n  Credential_Process=  /bin/prod --x  \r\n"
		"[profile other]\nregion=eu\n";
	char *v;

	v = aws_config_value(text, "default", "credential_process");
	cr_assert_str_eq(v, "/bin/a b");
	free(v);
	v = aws_config_value(text, "profile prod", "credential_process");
	cr_assert_str_eq(v, "/bin/prod --x");
	free(v);
	cr_assert_null(aws_config_value(text, "profile other", "credential_process"));
	cr_assert_null(aws_config_value(text, "profile none", "region"));
}

static void clear_env(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);  /* never a link-local address */
}

TestSuite(aws_chain, .init = clear_env);

Test(aws_chain, nothing_configured_is_a_miss)
{
	struct cred_provider *p = NULL;

	cr_assert_eq(aws_creds_chain(NULL, &p, NULL), TFS_MISS);
	cr_assert_null(p);
}

Test(aws_chain, environment_keys_first_and_described_without_the_secret)
{
	struct cred_provider *p = NULL;

	setenv("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "very-secret", 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/x", 1);
	setenv("AWS_ROLE_ARN", "arn:x", 1);
	cr_assert_eq(aws_creds_chain(NULL, &p, NULL), TFS_OK);
	cr_assert_str_eq(cred_provider_desc(p), "environment, key AKIA...");
	cr_assert_not(cred_provider_refreshes(p));
	cred_provider_free(p);
}

Test(aws_chain, web_identity_needs_both_variables)
{
	struct cred_provider *p = NULL;
	struct tfs_errinfo ei;

	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, "AWS_ROLE_ARN"));
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
	setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9", 1);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_OK);
	cr_assert(strstr(cred_provider_desc(p), "web identity: role arn:aws:iam::1:role/r"));
	cr_assert(cred_provider_refreshes(p));
	cred_provider_free(p);
	unsetenv("AWS_ENDPOINT_URL_STS");
}

Test(aws_chain, container_uri_rules)
{
	struct cred_provider *p = NULL;
	struct tfs_errinfo ei;

	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds", 1);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_E_INVAL, "plain http off-host");
	cr_assert(strstr(ei.message, "https"));
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/creds", 1);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_OK);
	cred_provider_free(p);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "https://creds.example.com/x", 1);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_OK);
	cred_provider_free(p);
	setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "no-slash", 1);
	cr_assert_eq(aws_creds_chain(NULL, &p, &ei), TFS_E_INVAL);
}

/* A config file whose default profile runs cmd. */
static void config_with_process(char *path, size_t n, const char *cmd)
{
	FILE *f;

	snprintf(path, n, "/tmp/tfs-aws-config-%d", (int)getpid());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "[default]\ncredential_process = %s\n", cmd);
	fclose(f);
	setenv("AWS_CONFIG_FILE", path, 1);
}

Test(aws_chain, credential_process_output_becomes_credentials)
{
	struct cred_provider *p = NULL;
	struct cred *c = NULL;
	char path[64];

	config_with_process(path, sizeof(path),
			    "printf '{\"Version\":1,\"AccessKeyId\":\"AKPROC\",\"SecretAccessKey\":"
			    "\"SKPROC\",\"SessionToken\":\"STPROC\",\"Expiration\":"
			    "\"2999-01-01T00:00:00Z\"}'");
	cr_assert_eq(aws_creds_chain(NULL, &p, NULL), TFS_OK);
	cr_assert(strstr(cred_provider_desc(p), "credential_process of profile 'default'"));
	cr_assert_null(strstr(cred_provider_desc(p), "printf"), "the command is not shown");
	cr_assert_eq(cred_provider_get(p, &c, NULL), TFS_OK);
	cr_assert_str_eq(c->access_key, "AKPROC");
	cr_assert_str_eq(c->session_token, "STPROC");
	cred_put(c);
	cred_provider_free(p);
	unlink(path);
}

Test(aws_chain, credential_process_failures_are_clear)
{
	static const struct { const char *cmd, *want; } cases[] = {
		{ "exit 3", "the command failed (status 3)" },
		{ "echo not-json", "not JSON" },
		{ "kill -9 $$", "status 137" },
		{ "head -c 70000 /dev/zero | tr '\\0' x", "more than" },
	};
	char path[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cred_provider *p = NULL;
		struct cred *c = NULL;
		struct tfs_errinfo ei;

		config_with_process(path, sizeof(path), cases[i].cmd);
		cr_assert_eq(aws_creds_chain(NULL, &p, NULL), TFS_OK);
		tfs_errinfo_clear(&ei);
		cr_assert_neq(cred_provider_get(p, &c, &ei), TFS_OK, "case %zu", i);
		cr_assert(strstr(ei.message, "credential_process") &&
			  strstr(ei.message, cases[i].want), "case %zu: %s", i, ei.message);
		cred_provider_free(p);
	}
	unlink(path);
}

Test(aws_chain, named_profile_missing_everywhere)
{
	struct cred_provider *p = NULL;
	struct tfs_errinfo ei;

	tfs_errinfo_clear(&ei);
	cr_assert_eq(aws_creds_chain("nope", &p, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, "profile 'nope' not found"), "%s", ei.message);
}
