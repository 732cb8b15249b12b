/* test_gcp_creds.c - Google token sources: token replies, the service
 * account's JWT assertion checked with the public key and its claims, key
 * files that are wrong in every way we could think of, and where the chain
 * looks (no network: the metadata server is switched off). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3/cred_util.h"
#include "s3/gcp_creds.h"
#include "s3/jwt.h"

#include "test_keys.h"

/* A service-account key file's text around rfc7515_key (any RSA key will
 * do: test_keys.h's). */
static char *sa_json(const char *token_uri)
{
	char *pem = cred_json_quote(rfc7515_key), *out = NULL;

	cr_assert(asprintf(&out, "{\"type\": \"service_account\", \"project_id\": \"p\", "
			   "\"private_key_id\": \"0123abcd\", \"private_key\": %s, "
			   "\"client_email\": \"loader@p.iam.gserviceaccount.com\", "
			   "\"token_uri\": \"%s\"}", pem, token_uri) > 0);
	free(pem);
	return out;
}

Test(gcp_creds, token_replies)
{
	static const char ok[] = "{\"access_token\": \"ya29.a0Af\", \"expires_in\": 3599, "
				 "\"token_type\": \"Bearer\"}";
	static const char err[] = "{\"error\": \"invalid_grant\", \"error_description\": "
				  "\"Invalid JWT Signature.\"}";
	static const char *const bad[] = {
		"", "<html>", "{\"access_token\": \"t\"}",
		"{\"access_token\": \"t\", \"expires_in\": 0}",
		"{\"access_token\": \"t\", \"expires_in\": \"soon\"}",
		"{\"access_token\": \"t\", \"expires_in\": 60, \"token_type\": \"MAC\"}",
		"{\"access_token\": \"a\\r\\nX-Evil: 1\", \"expires_in\": 60}",
		"{\"access_token\": 5, \"expires_in\": 60}",
	};
	struct cred *c = NULL;
	struct tfs_errinfo ei;

	cr_assert_eq(gcp_creds_parse_token(ok, strlen(ok), 1000, &c, &ei), TFS_OK);
	cr_assert_eq(c->kind, CRED_BEARER);
	cr_assert_str_eq(c->token, "ya29.a0Af");
	cr_assert_eq(c->expires_ms, 1000 + 3599000);
	cred_put(c);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(gcp_creds_parse_token(err, strlen(err), 0, &c, &ei), TFS_E_AUTH);
	cr_assert_str_eq(ei.code, "invalid_grant");
	cr_assert(strstr(ei.message, "Invalid JWT Signature."), "%s", ei.message);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tfs_errinfo_clear(&ei);
		cr_assert_eq(gcp_creds_parse_token(bad[i], strlen(bad[i]), 0, &c, &ei),
			     TFS_E_PROTO, "case %zu", i);
		cr_assert_null(c);
		cr_assert(ei.message[0]);
	}
}

Test(gcp_creds, assertion_is_signed_by_the_key_with_the_claims_google_wants)
{
	char *key = sa_json("https://oauth2.googleapis.com/token"), *jwt = NULL, *d1, *d2;
	unsigned char *sig = NULL, *claims = NULL, *hdr = NULL;
	size_t sn = 0, cn = 0, hn = 0;
	const char *why;
	struct cred_json *j;
	int64_t iat = 0, exp = 0;

	cr_assert_eq(gcp_creds_sa_assertion(key, strlen(key), 1700000000, &jwt, NULL), TFS_OK);
	d1 = strchr(jwt, '.');
	d2 = strrchr(jwt, '.');
	cr_assert_eq(jwt_b64url_decode(d2 + 1, strlen(d2 + 1), &sig, &sn), TFS_OK);
	cr_assert_eq(jwt_rs256_verify(rfc7515_pub, jwt, (size_t)(d2 - jwt), sig, sn), TFS_OK);
	cr_assert_eq(jwt_b64url_decode(jwt, (size_t)(d1 - jwt), &hdr, &hn), TFS_OK);
	cr_assert_str_eq((char *)hdr, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"0123abcd\"}");
	cr_assert_eq(jwt_b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &claims, &cn), TFS_OK);
	j = cred_json_parse((char *)claims, cn, &why);
	cr_assert_not_null(j, "%s: %s", why, claims);
	cr_assert_str_eq(cred_json_str(j, "iss"), "loader@p.iam.gserviceaccount.com");
	cr_assert_str_eq(cred_json_str(j, "aud"), "https://oauth2.googleapis.com/token");
	cr_assert_str_eq(cred_json_str(j, "scope"),
			 "https://www.googleapis.com/auth/devstorage.read_only");
	cr_assert(cred_json_int(j, "iat", &iat) && iat == 1700000000);
	cr_assert(cred_json_int(j, "exp", &exp) && exp == 1700003600, "one hour at most");
	cred_json_free(j);
	free(sig);
	free(claims);
	free(hdr);
	free(jwt);
	free(key);
}

static char tmpdir[64];

static void mk_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tfs-gcp-%d", (int)getpid());
	mkdir(tmpdir, 0700);
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("GCE_METADATA_HOST");
	setenv("NO_GCE_CHECK", "true", 1);      /* never a metadata address */
	setenv("CLOUDSDK_CONFIG", tmpdir, 1);
}

static void rm_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(gcp_chain, .init = mk_tmpdir, .fini = rm_tmpdir);

static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

Test(gcp_chain, nothing_configured_is_a_miss)
{
	struct cred_provider *p = NULL;

	cr_assert_eq(gcp_creds_chain(&p, NULL), TFS_MISS);
	cr_assert_null(p);
}

Test(gcp_chain, service_account_file_from_the_environment)
{
	char *key = sa_json("http://127.0.0.1:9/token");
	struct cred_provider *p = NULL;

	setenv("GOOGLE_APPLICATION_CREDENTIALS", write_file("sa.json", key), 1);
	cr_assert_eq(gcp_creds_chain(&p, NULL), TFS_OK);
	cr_assert(strstr(cred_provider_desc(p), "service account loader@p.iam.gserviceaccount.com"));
	cr_assert_null(strstr(cred_provider_desc(p), "PRIVATE"));
	cr_assert(cred_provider_refreshes(p));
	cred_provider_free(p);
	free(key);
}

Test(gcp_chain, gcloud_application_default_credentials)
{
	struct cred_provider *p = NULL;

	write_file("application_default_credentials.json",
		   "{\"type\": \"authorized_user\", \"client_id\": \"id\", \"client_secret\": \"s\", "
		   "\"refresh_token\": \"1//r\"}");
	cr_assert_eq(gcp_creds_chain(&p, NULL), TFS_OK);
	cr_assert(strstr(cred_provider_desc(p), "authorized user (file "));
	cred_provider_free(p);
}

Test(gcp_chain, malformed_files_fail_clearly)
{
	static const struct { const char *text, *want; } cases[] = {
		{ "", "not JSON" },
		{ "{\"type\": ", "not JSON" },
		{ "\"a string\"", "not a JSON object" },
		{ "{}", "is not supported" },
		{ "{\"type\": \"external_account\"}", "is not supported" },
		{ "{\"type\": \"service_account\"}", "without client_email and private_key" },
		{ "{\"type\": \"service_account\", \"client_email\": \"a\", \"private_key\": 7}",
		  "without client_email and private_key" },
		{ "{\"type\": \"service_account\", \"client_email\": \"a\", \"private_key\": "
		  "\"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\"}",
		  "not a PEM RSA key" },
		{ "{\"type\": \"authorized_user\", \"client_id\": \"x\", \"client_secret\": \"\", "
		  "\"refresh_token\": \"r\"}", "without client_id, client_secret" },
		{ "{\"type\": \"authorized_user\", \"token_uri\": \"http://10.0.0.1/t\"}",
		  "token_uri must be https" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cred_provider *p = NULL;
		struct tfs_errinfo ei;

		setenv("GOOGLE_APPLICATION_CREDENTIALS", write_file("bad.json", cases[i].text), 1);
		tfs_errinfo_clear(&ei);
		cr_assert_eq(gcp_creds_chain(&p, &ei), TFS_E_INVAL, "case %zu", i);
		cr_assert_null(p);
		cr_assert(strstr(ei.message, "bad.json") && strstr(ei.message, cases[i].want),
			  "case %zu: %s", i, ei.message);
	}
	setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json", 1);
	{
		struct cred_provider *p = NULL;
		struct tfs_errinfo ei;

		tfs_errinfo_clear(&ei);
		cr_assert_eq(gcp_creds_chain(&p, &ei), TFS_E_INVAL);
		cr_assert(strstr(ei.message, "does not exist"));
	}
}

Test(gcp_chain, metadata_host_must_be_host_and_port)
{
	struct cred_provider *p = NULL;
	struct tfs_errinfo ei;

	setenv("GCE_METADATA_HOST", "evil.example/x?", 1);
	tfs_errinfo_clear(&ei);
	cr_assert_eq(gcp_creds_chain(&p, &ei), TFS_E_INVAL);
	cr_assert(strstr(ei.message, "GCE_METADATA_HOST"));
	unsetenv("GCE_METADATA_HOST");
}
