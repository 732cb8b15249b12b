/* test_sigv4.c - SigV4 against AWS's published S3 examples ("Examples:
 * Signature Calculations in AWS Signature Version 4", header-based auth),
 * plus query canonicalisation and URI encoding edge cases. */
#include <criterion/criterion.h>
#include <string.h>

#include "s3/sigv4.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE "20130524T000000Z"
#define HOST "examplebucket.s3.amazonaws.com"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CRED "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"

static struct sigv4_request example(const char *method, const char *uri,
				    const struct sigv4_param *p, size_t np,
				    const struct sigv4_header *h, size_t nh,
				    const char *payload)
{
	return (struct sigv4_request){
		.method = method, .canonical_uri = uri, .params = p, .n_params = np,
		.headers = h, .n_headers = nh, .payload_hash = payload,
		.amz_date = DATE, .region = "us-east-1", .service = "s3",
		.access_key = AK, .secret_key = SK,
	};
}

Test(sigv4, sha256_hex)
{
	char out[65];

	sigv4_sha256_hex("", 0, out);
	cr_assert_str_eq(out, EMPTY);
	sigv4_sha256_hex("abc", 3, out);
	cr_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sigv4_sha256_hex("Welcome to Amazon S3.", 21, out);
	cr_assert_str_eq(out, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
}

/* GET Object with a Range header. */
Test(sigv4, aws_example_get_object)
{
	/* Given out of order and in mixed case, with padding to trim. */
	struct sigv4_header h[] = {
		{ "X-Amz-Date", DATE },
		{ "Range", "  bytes=0-9 " },
		{ "x-amz-content-sha256", EMPTY },
		{ "Host", HOST },
	};
	struct sigv4_request r = example("GET", "/test.txt", NULL, 0, h, 4, EMPTY);
	char auth[512], canon[1024], sts[512];

	cr_assert_eq(sigv4_authorization_debug(&r, auth, sizeof(auth), canon, sizeof(canon),
					       sts, sizeof(sts)), TFS_OK);
	cr_assert_str_eq(canon,
		"GET\n/test.txt\n\n"
		"host:" HOST "\nrange:bytes=0-9\nx-amz-content-sha256:" EMPTY "\n"
		"x-amz-date:" DATE "\n\n"
		"host;range;x-amz-content-sha256;x-amz-date\n" EMPTY);
	cr_assert_str_eq(sts, "AWS4-HMAC-SHA256\n" DATE "\n20130524/us-east-1/s3/aws4_request\n"
			 "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	cr_assert_str_eq(auth, CRED "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
			 "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* PUT Object "test$file.text" with a body and a storage class. */
Test(sigv4, aws_example_put_object)
{
	char body_hash[65], uri[64], auth[512];

	sigv4_sha256_hex("Welcome to Amazon S3.", 21, body_hash);
	cr_assert_eq(sigv4_uri_encode("/test$file.text", 15, 1, uri, sizeof(uri)), 17);
	cr_assert_str_eq(uri, "/test%24file.text");
	struct sigv4_header h[] = {
		{ "Host", HOST },
		{ "Date", "Fri, 24 May 2013 00:00:00 GMT" },
		{ "x-amz-date", DATE },
		{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
		{ "x-amz-content-sha256", body_hash },
	};
	struct sigv4_request r = example("PUT", uri, NULL, 0, h, 5, body_hash);

	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_OK);
	cr_assert_str_eq(auth, CRED "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
			 "x-amz-storage-class,"
			 "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

/* GET Bucket Lifecycle: a parameter without a value signs as "lifecycle=". */
Test(sigv4, aws_example_get_lifecycle)
{
	struct sigv4_param p[] = { { "lifecycle", "" } };
	struct sigv4_header h[] = {
		{ "host", HOST }, { "x-amz-date", DATE }, { "x-amz-content-sha256", EMPTY },
	};
	struct sigv4_request r = example("GET", "/", p, 1, h, 3, EMPTY);
	char auth[512], canon[1024];

	cr_assert_eq(sigv4_authorization_debug(&r, auth, sizeof(auth), canon, sizeof(canon),
					       NULL, 0), TFS_OK);
	cr_assert(strncmp(canon, "GET\n/\nlifecycle=\n", 17) == 0, "%s", canon);
	cr_assert_str_eq(auth, CRED "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
			 "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

/* GET Bucket (List Objects) ?max-keys=2&prefix=J, parameters given unsorted. */
Test(sigv4, aws_example_list_objects)
{
	struct sigv4_param p[] = { { "prefix", "J" }, { "max-keys", "2" } };
	struct sigv4_header h[] = {
		{ "host", HOST }, { "x-amz-date", DATE }, { "x-amz-content-sha256", EMPTY },
	};
	struct sigv4_request r = example("GET", "/", p, 2, h, 3, EMPTY);
	char auth[512];

	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_OK);
	cr_assert_str_eq(auth, CRED "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
			 "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

Test(sigv4, canonical_query_sorted_and_encoded)
{
	char q[256];
	struct sigv4_param p1[] = { { "list-type", "2" }, { "delimiter", "/" } };
	struct sigv4_param p2[] = { { "uploads", "" } };
	struct sigv4_param p3[] = { { "uploads", NULL } };
	struct sigv4_param p4[] = { { "k", "b" }, { "k", "a" }, { "a-b", "1" }, { "a b", "2" } };
	struct sigv4_param p5[] = { { "prefix", "a+b c~d/\xc3\xa9%" } };

	cr_assert_eq(sigv4_canonical_query(p1, 2, q, sizeof(q)), 25);
	cr_assert_str_eq(q, "delimiter=%2F&list-type=2");
	cr_assert_eq(sigv4_canonical_query(p2, 1, q, sizeof(q)), 8);
	cr_assert_str_eq(q, "uploads=");
	sigv4_canonical_query(p3, 1, q, sizeof(q));
	cr_assert_str_eq(q, "uploads=");
	/* sorted by the encoded bytes: '%' (0x25) sorts before '-' (0x2d) */
	sigv4_canonical_query(p4, 4, q, sizeof(q));
	cr_assert_str_eq(q, "a%20b=2&a-b=1&k=a&k=b");
	sigv4_canonical_query(p5, 1, q, sizeof(q));
	cr_assert_str_eq(q, "prefix=a%2Bb%20c~d%2F%C3%A9%25");
	cr_assert_eq(sigv4_canonical_query(NULL, 0, q, sizeof(q)), 0);
	cr_assert_str_eq(q, "");
	/* exact fit and one byte short */
	cr_assert_eq(sigv4_canonical_query(p1, 2, q, 26), 25);
	cr_assert_eq(sigv4_canonical_query(p1, 2, q, 25), -1);
}

Test(sigv4, uri_encode_odd_keys)
{
	char out[128];

	cr_assert_eq(sigv4_uri_encode("a b", 3, 1, out, sizeof(out)), 5);
	cr_assert_str_eq(out, "a%20b");
	sigv4_uri_encode("dir/\xc3\xbc.png", 10, 1, out, sizeof(out));
	cr_assert_str_eq(out, "dir/%C3%BC.png");
	sigv4_uri_encode("a+b%c~d", 7, 1, out, sizeof(out));
	cr_assert_str_eq(out, "a%2Bb%25c~d");
	sigv4_uri_encode("a/b", 3, 0, out, sizeof(out));
	cr_assert_str_eq(out, "a%2Fb");
	sigv4_uri_encode("../x//y", 7, 1, out, sizeof(out));
	cr_assert_str_eq(out, "../x//y");
	sigv4_uri_encode("\xff\x01*'()!", 7, 1, out, sizeof(out));
	cr_assert_str_eq(out, "%FF%01%2A%27%28%29%21");
	/* an embedded NUL is just another byte */
	cr_assert_eq(sigv4_uri_encode("a\0b", 3, 1, out, sizeof(out)), 5);
	cr_assert_str_eq(out, "a%00b");
	/* bounds: "a%20b" needs 6 bytes */
	cr_assert_eq(sigv4_uri_encode("a b", 3, 1, out, 6), 5);
	cr_assert_eq(sigv4_uri_encode("a b", 3, 1, out, 5), -1);
	cr_assert_eq(sigv4_uri_encode("", 0, 1, out, 1), 0);
	cr_assert_eq(sigv4_uri_encode("", 0, 1, out, 0), -1);
}

/* The signature must change with the key as encoded, so that a key with a
 * space and one with "%20" literally sign differently. */
Test(sigv4, different_keys_sign_differently)
{
	struct sigv4_header h[] = {
		{ "host", HOST }, { "x-amz-date", DATE }, { "x-amz-content-sha256", EMPTY },
	};
	struct sigv4_request a = example("GET", "/a%20b", NULL, 0, h, 3, EMPTY);
	struct sigv4_request b = example("GET", "/a%2520b", NULL, 0, h, 3, EMPTY);
	char sa[512], sb[512];

	cr_assert_eq(sigv4_authorization(&a, sa, sizeof(sa)), TFS_OK);
	cr_assert_eq(sigv4_authorization(&b, sb, sizeof(sb)), TFS_OK);
	cr_assert_str_neq(sa, sb);
}

Test(sigv4, bad_input)
{
	struct sigv4_header crlf[] = { { "host", HOST }, { "x-evil", "a\r\nb: c" } };
	struct sigv4_header dup[] = { { "host", HOST }, { "Host", HOST } };
	struct sigv4_header badname[] = { { "ho st", HOST } };
	struct sigv4_header ok[] = { { "host", HOST } };
	struct sigv4_request r;
	char auth[512];

	r = example("GET", "/", NULL, 0, crlf, 2, EMPTY);
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_E_INVAL);
	r = example("GET", "/", NULL, 0, dup, 2, EMPTY);
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_E_INVAL);
	r = example("GET", "/", NULL, 0, badname, 1, EMPTY);
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_E_INVAL);
	r = example("GET", "/", NULL, 0, ok, 1, EMPTY);
	r.amz_date = "2013-05-24";
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_E_INVAL);
	r = example("GET", "/", NULL, 0, ok, 1, EMPTY);
	r.secret_key = NULL;
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_E_INVAL);
	r = example("GET", "/", NULL, 0, ok, 1, EMPTY);
	cr_assert_eq(sigv4_authorization(&r, auth, 40), TFS_E_TOOBIG);
	cr_assert_str_eq(auth, "");
	cr_assert_eq(sigv4_authorization(&r, auth, sizeof(auth)), TFS_OK);
}

/* ---- Google's published V4 signing examples ----------------------------
 * Cloud Storage's conformance tests (googleapis/conformance-tests,
 * storage/v1/v4_signatures.json) sign URLs with GOOG4-RSA-SHA256 using a
 * dummy service account whose key they publish.  The canonical request is
 * the one SigV4 builds (the algorithm only names the string to sign and
 * the key), so these check our canonicalisation, and our RS256 (jwt.c),
 * against Google's expected X-Goog-Signature. */
#include <stdio.h>
#include <stdlib.h>

#include "s3/jwt.h"

static const char goog_sa_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCsPzMirIottfQ2\n"
	"ryjQmPWocSEeGo7f7Q4/tMQXHlXFzo93AGgU2t+clEj9L5loNhLVq+vk+qmnyDz5\n"
	"Q04y8jVWyMYzzGNNrGRW/yaYqnqlKZCy1O3bmnNjV7EDbC/jE1ZLBY0U3HaSHfn6\n"
	"S9ND8MXdgD0/ulRTWwq6vU8/w6i5tYsU7n2LLlQTl1fQ7/emO9nYcCFJezHZVa0H\n"
	"meWsdHwWsok0skwQYQNIzP3JF9BpR5gJT2gNge6KopDesJeLoLzaX7cUnDn+CAnn\n"
	"LuLDwwSsIVKyVxhBFsFXPplgpaQRwmGzwEbf/Xpt9qo26w2UMgn30jsOaKlSeAX8\n"
	"cS6ViF+tAgMBAAECggEACKRuJCP8leEOhQziUx8Nmls8wmYqO4WJJLyk5xUMUC22\n"
	"SI4CauN1e0V8aQmxnIc0CDkFT7qc9xBmsMoF+yvobbeKrFApvlyzNyM7tEa/exh8\n"
	"DGD/IzjbZ8VfWhDcUTwn5QE9DCoon9m1sG+MBNlokB3OVOt8LieAAREdEBG43kJu\n"
	"yQTOkY9BGR2AY1FnAl2VZ/jhNDyrme3tp1sW1BJrawzR7Ujo8DzlVcS2geKA9at7\n"
	"55ua5GbHz3hfzFgjVXDfnkWzId6aHypUyqHrSn1SqGEbyXTaleKTc6Pgv0PgkJjG\n"
	"hZazWWdSuf1T5Xbs0OhAK9qraoAzT6cXXvMEvvPt6QKBgQDXcZKqJAOnGEU4b9+v\n"
	"Odoh+nssdrIOBNMu1m8mYbUVYS1aakc1iDGIIWNM3qAwbG+yNEIi2xi80a2RMw2T\n"
	"9RyCNB7yqCXXVKLBiwg9FbKMai6Vpk2bWIrzahM9on7AhCax/X2AeOp+UyYhFEy6\n"
	"UFG4aHb8THscL7b515ukSuKb5QKBgQDMq+9PuaB0eHsrmL6q4vHNi3MLgijGg/zu\n"
	"AXaPygSYAwYW8KglcuLZPvWrL6OG0+CrfmaWTLsyIZO4Uhdj7MLvX6yK7IMnagvk\n"
	"L3xjgxSklEHJAwi5wFeJ8ai/1MIuCn8p2re3CbwISKpvf7Sgs/W4196P4vKvTiAz\n"
	"jcTiSYFIKQKBgCjMpkS4O0TakMlGTmsFnqyOneLmu4NyIHgfPb9cA4n/9DHKLKAT\n"
	"oaWxBPgatOVWs7RgtyGYsk+XubHkpC6f3X0+15mGhFwJ+CSE6tN+l2iF9zp52vqP\n"
	"Qwkjzm7+pdhZbmaIpcq9m1K+9lqPWJRz/3XXuqi+5xWIZ7NaxGvRjqaNAoGAdK2b\n"
	"utZ2y48XoI3uPFsuP+A8kJX+CtWZrlE1NtmS7tnicdd19AtfmTuUL6fz0FwfW4Su\n"
	"lQZfPT/5B339CaEiq/Xd1kDor+J7rvUHM2+5p+1A54gMRGCLRv92FQ4EON0RC1o9\n"
	"m2I4SHysdO3XmjmdXmfp4BsgAKJIJzutvtbqlakCgYB+Cb10z37NJJ+WgjDt+yT2\n"
	"yUNH17EAYgWXryfRgTyi2POHuJitd64Xzuy6oBVs3wVveYFM6PIKXlj8/DahYX5I\n"
	"R2WIzoCNLL3bEZ+nC6Jofpb4kspoAeRporj29SgesK6QBYWHWX2H645RkRGYGpDo\n"
	"51gjy9m/hSNqBbH2zmh04A==\n"
	"-----END PRIVATE KEY-----\n";

#define GOOG_CRED "test-iam-credentials@dummy-project-id.iam.gserviceaccount.com/20190201/auto/storage/goog4_request"

struct goog_case {
	const char *uri;
	const char *signed_headers;            /* X-Goog-SignedHeaders */
	struct sigv4_header headers[3];
	size_t n_headers;
	struct sigv4_param extra[2];           /* queryParameters of the case */
	size_t n_extra;
	const char *signature;                 /* X-Goog-Signature expected */
};

static void goog_check(const struct goog_case *gc)
{
	struct sigv4_param params[7] = {
		{ "X-Goog-Algorithm", "GOOG4-RSA-SHA256" },
		{ "X-Goog-Credential", GOOG_CRED },
		{ "X-Goog-Date", "20190201T090000Z" },
		{ "X-Goog-Expires", "10" },
		{ "X-Goog-SignedHeaders", gc->signed_headers },
	};
	struct sigv4_request req = {
		.method = "GET", .canonical_uri = gc->uri, .params = params,
		.n_params = 5 + gc->n_extra, .headers = gc->headers, .n_headers = gc->n_headers,
		.payload_hash = "UNSIGNED-PAYLOAD", .amz_date = "20190201T090000Z",
		.region = "auto", .service = "storage", .access_key = "unused",
		.secret_key = "unused",
	};
	char auth[512], canon[4096], hash[65], sts[512], hex[513];
	unsigned char *sig = NULL;
	size_t n = 0;

	for (size_t i = 0; i < gc->n_extra; i++)
		params[5 + i] = gc->extra[i];
	cr_assert_eq(sigv4_authorization_debug(&req, auth, sizeof(auth), canon, sizeof(canon),
					       NULL, 0), TFS_OK);
	sigv4_sha256_hex(canon, strlen(canon), hash);
	snprintf(sts, sizeof(sts), "GOOG4-RSA-SHA256\n20190201T090000Z\n"
		 "20190201/auto/storage/goog4_request\n%s", hash);
	cr_assert_eq(jwt_rs256_sign(goog_sa_key, sts, strlen(sts), &sig, &n, NULL), TFS_OK);
	cr_assert_eq(n, 256);
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", sig[i]);
	cr_assert_str_eq(hex, gc->signature, "canonical request:\n%s", canon);
	free(sig);
}

Test(sigv4, google_simple_get)
{
	struct goog_case gc = {
		.uri = "/test-bucket/test-object", .signed_headers = "host",
		.headers = { { "host", "storage.googleapis.com" } }, .n_headers = 1,
		.signature =
		"95e6a13d43a1d1962e667f17397f2b80ac9bdd1669210d5e08e0135df9dff4e56113485dbe429ca2"
		"266487b9d1796ebdee2d7cf682a6ef3bb9fbb4c351686fba90d7b621cf1c4eb1fdf126460dd25fa0"
		"837dfdde0a9fd98662ce60844c458448fb2b352c203d9969cb74efa4bdb742287744a4f2308afa4af"
		"0e0773f55e32e92973619249214b97283b2daa14195244444e33f938138d1e5f561088ce8011f4986"
		"dda33a556412594db7c12fc40e1ff3f1bedeb7a42f5bcda0b9567f17f65855f65071fabb88ea1237"
		"1877f3f77f10e1466fff6ff6973b74a933322ff0949ce357e20abe96c3dd5cfab42c9c83e740a4d32"
		"b9e11e146f0eb3404d2e975896f74",
	};

	goog_check(&gc);
}

Test(sigv4, google_list_objects)
{
	struct goog_case gc = {
		.uri = "/test-bucket", .signed_headers = "host",
		.headers = { { "host", "storage.googleapis.com" } }, .n_headers = 1,
		.signature =
		"6dbe94f8e52b2b8a9a476b1c857efa474e09944e2b52b925800316e094a7169d8dbe0df9c0ac08da"
		"bb22ac7e827470ceccd65f5a3eadba2a4fb9beebfe37f0d9bb1e552b851fa31a25045bdf019e507f"
		"5feb44f061551ef1aeb18dcec0e38ba2e2f77d560a46eaace9c56ed9aa642281301a9d848b0eb307"
		"49e34bc7f73a3d596240533466ff9b5f289cd0d4c845c7d96b82a35a5abd0c3aff83e4440ee6873e"
		"796087f43545544dc8c01afe1d79c726696b6f555371e491980e7ec145cca0803cf562c38f3fa1d7"
		"24242f5dea25aac91d74ec9ddd739ff65523627763eaef25cd1f95ad985aaf0079b7c74eb5bcb287"
		"0a9b137a7b2c8e41fbe838c95872f75b",
	};

	goog_check(&gc);
}

Test(sigv4, google_query_parameter_encoding)
{
	struct goog_case gc = {
		.uri = "/test-bucket/test-object", .signed_headers = "host",
		.headers = { { "host", "storage.googleapis.com" } }, .n_headers = 1,
		.extra = { { "souffl\xc3\xa9", "=%-_.~" } }, .n_extra = 1,
		.signature =
		"38dd9ca622b80bca10f405e7d9ba0f0fbea719ca84d66078a484c5b54b1ce98e3fa8a0d2065216ed"
		"6ac03179be69312dabf428f8171b95994bdafe465a6f7893bacc7213a7bf4054ce2d78d4b60c34df"
		"24cc43e509ad7c81be47148d43a0e67d50d8fe38c85b0c63f9a51149b4f3335315946fef8ab34315"
		"ce3f6ce01f1831abb3eda5e7e211823855ed1767c65a8c7aeec357de096e3406897acfe092fead51"
		"bbea7df83e25a6180f80c8a0871e4901c370f77f5675f2405be7ccd55fd6dd22a87cf0adfafdb3f6"
		"fa99974fcf6c947b62294eebd7954e546c28f5490a6c50694c0e4882fcfe0d4a4ae8891a92579d60"
		"99a9b4c84d9f033a3b339163b6670b7e",
	};

	goog_check(&gc);
}

Test(sigv4, google_query_parameter_ordering)
{
	struct goog_case gc = {
		.uri = "/test-bucket/test-object", .signed_headers = "host",
		.headers = { { "host", "storage.googleapis.com" } }, .n_headers = 1,
		.extra = { { "prefix", "/foo" }, { "X-Goog-Meta-Foo", "bar" } }, .n_extra = 2,
		.signature =
		"a07745e1b3d59b85cbe11aa766df72c22468959e7217615dccb7f030234f66b60b37e480f30725ed"
		"51f29816362ca8286c619ebb66448ff1d370be2a4a48aacf20d3d2d6200ed17341a5791baf2ee5cd"
		"9c2823adacc6264f66c8a54fa887e1bce3c55cf78fb2f6a52618cf09d6f945f63d148052a7b66a75"
		"e075ff5065828a806b84bdc49a42399be7483225c720d5e18a6160f79d815f433e7921694fe1d041"
		"099851793c2581db0e5ca503cfb566e414f900ceede5f9b22030edd32ab20b6f7f9fb2afba89098b"
		"9364e03397c03a94eac3a140c99979b8786844fb4f6c62c1985378939dd1bbaea8e41b9100dda85a"
		"27733171cc78d96ee362ea2c3432f4d8",
	};

	goog_check(&gc);
}
