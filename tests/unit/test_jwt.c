/* test_jwt.c - RS256 JWTs: RFC 7515's published example (appendix A.2),
 * signatures checked with the public key, tampering detected, base64url
 * edge cases, unusable keys refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "s3/jwt.h"

#include "test_keys.h"

/* A.2's JWS Signing Input and the signature the RFC publishes for it
 * (RSASSA-PKCS1-v1_5 is deterministic, so ours must be identical). */
static const char rfc7515_input[] =
	"eyJhbGciOiJSUzI1NiJ9."
	"eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFt"
	"cGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
static const char rfc7515_sig[] =
	"cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7"
	"AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4"
	"BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K"
	"0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqv"
	"hJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrB"
	"p0igcN_IoypGlUPQGe77Rw";

Test(jwt, rfc7515_a2_signature_matches_the_published_one)
{
	unsigned char *sig = NULL;
	size_t n = 0;
	char *b64;

	cr_assert_eq(jwt_rs256_sign(rfc7515_key, rfc7515_input, strlen(rfc7515_input), &sig, &n,
				    NULL), TFS_OK);
	cr_assert_eq(n, 256);
	b64 = jwt_b64url_encode(sig, n);
	cr_assert_str_eq(b64, rfc7515_sig);
	cr_assert_eq(jwt_rs256_verify(rfc7515_pub, rfc7515_input, strlen(rfc7515_input), sig, n),
		     TFS_OK);
	free(b64);
	free(sig);
}

Test(jwt, rfc7515_a2_payload_decodes)
{
	const char *p = strchr(rfc7515_input, '.') + 1;
	unsigned char *out = NULL;
	size_t n = 0;

	cr_assert_eq(jwt_b64url_decode(p, strlen(p), &out, &n), TFS_OK);
	cr_assert_eq(n, 70);
	cr_assert_eq(memcmp(out, "{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n "
			    "\"http://example.com/is_root\":true}", 70), 0);
	free(out);
}

/* Split a compact JWT and check it with the public key, as a token
 * endpoint does; returns the decoded claims (malloc'd). */
static char *verify_compact(const char *jwt, const char *pub, char **header)
{
	const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	unsigned char *sig = NULL, *claims = NULL, *hdr = NULL;
	size_t sn = 0, cn = 0, hn = 0;

	cr_assert(d1 && d2 && !strchr(d2 + 1, '.'), "three parts: %s", jwt);
	cr_assert_eq(jwt_b64url_decode(d2 + 1, strlen(d2 + 1), &sig, &sn), TFS_OK);
	cr_assert_eq(jwt_rs256_verify(pub, jwt, (size_t)(d2 - jwt), sig, sn), TFS_OK);
	cr_assert_eq(jwt_b64url_decode(jwt, (size_t)(d1 - jwt), &hdr, &hn), TFS_OK);
	cr_assert_eq(jwt_b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &claims, &cn), TFS_OK);
	free(sig);
	*header = (char *)hdr;
	return (char *)claims;
}

Test(jwt, made_token_verifies_and_tampering_is_caught)
{
	char *jwt = NULL, *hdr, *claims;
	const char *c = "{\"iss\":\"a@b\",\"exp\":2}";

	cr_assert_eq(jwt_make_rs256(rfc7515_key, "kid-1", c, &jwt, NULL), TFS_OK);
	claims = verify_compact(jwt, rfc7515_pub, &hdr);
	cr_assert_str_eq(claims, c);
	cr_assert_str_eq(hdr, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"kid-1\"}");
	free(claims);
	free(hdr);
	/* one flipped character of the claims: the signature no longer holds */
	{
		char *d1 = strchr(jwt, '.'), *d2 = strchr(d1 + 1, '.');
		unsigned char *sig = NULL;
		size_t sn = 0;

		d1[3] = d1[3] == 'A' ? 'B' : 'A';
		cr_assert_eq(jwt_b64url_decode(d2 + 1, strlen(d2 + 1), &sig, &sn), TFS_OK);
		cr_assert_eq(jwt_rs256_verify(rfc7515_pub, jwt, (size_t)(d2 - jwt), sig, sn),
			     TFS_E_AUTH);
		free(sig);
	}
	free(jwt);
}

Test(jwt, another_key_does_not_verify)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	BIO *b = BIO_new(BIO_s_mem());
	char *pem, *jwt = NULL, *hdr;
	unsigned char *sig = NULL;
	size_t sn = 0;
	long len;

	cr_assert(k && b);
	cr_assert(PEM_write_bio_PUBKEY(b, k));
	len = BIO_get_mem_data(b, &pem);
	pem = strndup(pem, (size_t)len);
	cr_assert_eq(jwt_make_rs256(rfc7515_key, NULL, "{}", &jwt, NULL), TFS_OK);
	free(verify_compact(jwt, rfc7515_pub, &hdr));
	cr_assert_str_eq(hdr, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
	free(hdr);
	{
		char *d2 = strrchr(jwt, '.');

		cr_assert_eq(jwt_b64url_decode(d2 + 1, strlen(d2 + 1), &sig, &sn), TFS_OK);
		cr_assert_eq(jwt_rs256_verify(pem, jwt, (size_t)(d2 - jwt), sig, sn), TFS_E_AUTH);
	}
	free(sig);
	free(jwt);
	free(pem);
	BIO_free(b);
	EVP_PKEY_free(k);
}

Test(jwt, base64url_round_trip_and_bad_input)
{
	static const unsigned char bytes[] = { 0xfb, 0xff, 0xfe, 0x00, 0x3e, 0x3f };
	unsigned char *out = NULL;
	size_t n = 0;

	for (size_t len = 0; len <= sizeof(bytes); len++) {
		char *e = jwt_b64url_encode(bytes, len);

		cr_assert_null(strpbrk(e, "+/="), "url-safe, unpadded: %s", e);
		cr_assert_eq(jwt_b64url_decode(e, strlen(e), &out, &n), TFS_OK);
		cr_assert_eq(n, len);
		cr_assert_eq(memcmp(out, bytes, len), 0);
		free(out);
		free(e);
	}
	{
		char *e = jwt_b64url_encode("\xfb\xff", 2);

		cr_assert_str_eq(e, "-_8");
		free(e);
	}
	cr_assert_eq(jwt_b64url_decode("ab+c", 4, &out, &n), TFS_E_INVAL);
	cr_assert_eq(jwt_b64url_decode("abcde", 5, &out, &n), TFS_E_INVAL);
	cr_assert_eq(jwt_b64url_decode("ab$c", 4, &out, &n), TFS_E_INVAL);
	cr_assert_eq(jwt_b64url_decode("QR", 2, &out, &n), TFS_E_INVAL, "non-canonical bits");
	cr_assert_eq(jwt_b64url_decode("QQ==", 4, &out, &n), TFS_OK, "padding accepted");
	cr_assert_eq(n, 1);
	free(out);
}

Test(jwt, unusable_keys_are_refused_without_a_prompt)
{
	struct tfs_errinfo ei;
	char *jwt = NULL;
	static const char enc[] =
		"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkq\n"
		"-----END ENCRYPTED PRIVATE KEY-----\n";

	tfs_errinfo_clear(&ei);
	cr_assert_eq(jwt_make_rs256("not a key", NULL, "{}", &jwt, &ei), TFS_E_INVAL);
	cr_assert_null(jwt);
	cr_assert(strstr(ei.message, "not a PEM RSA private key"));
	cr_assert_eq(jwt_make_rs256(enc, NULL, "{}", &jwt, &ei), TFS_E_INVAL);
	cr_assert_eq(jwt_make_rs256(rfc7515_pub, NULL, "{}", &jwt, &ei), TFS_E_INVAL,
		     "a public key cannot sign");
	cr_assert_eq(jwt_make_rs256(rfc7515_key, "bad\"kid", "{}", &jwt, &ei), TFS_E_INVAL);
	cr_assert_eq(jwt_rs256_verify("junk", "x", 1, (const unsigned char *)"y", 1), TFS_E_INVAL);
}
