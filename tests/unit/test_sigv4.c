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
