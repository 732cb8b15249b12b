/* test_jwt.c - RS256 JWTs: RFC 7515's published example (appendix A.2),
 * signatures checked with the public key, tampering detected, base64url
 * edge cases, unusable keys refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "s3/jwt.h"

/* RFC 7515 appendix A.2's RSA key (its JWK converted to PEM). */
static const char rfc7515_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCh+BYK4uPJtGXO\n"
	"jS1lYmM2K5J9vinh8CR3/BYlzJChNuOL2TSXxbbqY913EeZ8dCn5VrD7io8ImtxL\n"
	"aYk8wTM/U+3QGbh3hCUv7JFP5IV3aVlL6kKA0ywPVb9ilE8TA5a8bpvfbr3SvaNn\n"
	"juygxmj3AbONv/s4yDQs4v5tJ/reSlpIdJed1LnPmt7Ex1sFhSwsD174pcF1A5L5\n"
	"ROjtZMEQxrZHYJqkeDrrnGya11UxMFBji4NmXG9veoKjlnAqH2QbgtPr8jkiGUkf\n"
	"toaHLFcW9Qr4NY2ai50Xw0Byj3+H2JoY2PyrZ62EWQwuz3WTOTY8BwNNb2BvniHg\n"
	"VFbK5emhAgMBAAECggEAEq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyW\n"
	"PEAeP88vLNO97IjlA7/GQ5sLKMgvfTeXZx9SE+7YwVol2NXOoAJe46sui395IW/G\n"
	"O+pWJ1O0BkTGoVEn2bKVRUCgu+GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzj\n"
	"kn439X0M/V51gfpRLI9JYanrC4D4qAdGcopV/0ZHHzQlBjudU2QvXt4ehNYTCBr6\n"
	"XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl/x/jTj3ccPDVZFD9pIuhLhBOneufuBiB\n"
	"4cS98l2SR/RQyGWSeWjnczT0QU91p1DhOVRuOopznQKBgQDgHMQQ60imZV1URk0K\n"
	"pLttoLhyt3SmqdEf/kgHePDdtzEafpAu+cS191R2JiuoF2yzWXnwFDcqGigp5BNr\n"
	"0AHQfD8/Lk8l1Mk09jxxCfui5nYooNyac8YFjm3vItzVCVDnEd3BbVWG8qf6deqE\n"
	"lMGAg+C2V0L4oNXnP7LZcPAZRwKBgQC5A8R+CZW2MvRTLLHzwZkUXV866cff7tx6\n"
	"kqa0finGG0KgeqlaZPxgCZnFp7AeAcCMtiynVlJ7vMVgePsLq6XtON4tB5kP9jAP\n"
	"rq3rbAOal78eUH5OcED6eNuCV8ixEu1eWcPNCS/l1OW1EnXUEoEHKl54Xrrz2uNw\n"
	"kgMTP1FZ1wKBgAcCn1dwJKufzBWQxWQp1vsM5fggqPN1qGb5y0MAk3g7/Ls5bkUp\n"
	"5u9SN0Ai3Ya6hNnvWJMb7sXQX6U/zyO2M/hTip7tUeh7CXgwo59dkpN75gJLVds2\n"
	"9+DAncu3KXU4f2Fa+7bLNrur53k8KwPOq2bbuTG69QtV7Jr5MR0AHWKNAoGBAIf/\n"
	"evpitUf+4JYbLpvNXWcY052Mpz22aR84mY3nh3F2LF2mjMJDpTg7FmuyPcVw6EcG\n"
	"yoAe9fa65iNqCq+jdw6PVNGo2hxfjSiZ8IIzHdsPXI89//pMjZcQK9r+CCoRjaZj\n"
	"OYiIDktVWZzmevJuv6WywUqd57LE3Zar3dLSIkx1AoGAIYd7DHOhrWvxkwPQsRM2\n"
	"tOgrjbcrfvtQJipd+DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd/QJQ3\n"
	"ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp/gh6A56\n"
	"03k2+ZQwVK0JKSHuLFkuQ3U=\n"
	"-----END PRIVATE KEY-----\n";

static const char rfc7515_pub[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAofgWCuLjybRlzo0tZWJj\n"
	"NiuSfb4p4fAkd/wWJcyQoTbji9k0l8W26mPddxHmfHQp+Vaw+4qPCJrcS2mJPMEz\n"
	"P1Pt0Bm4d4QlL+yRT+SFd2lZS+pCgNMsD1W/YpRPEwOWvG6b32690r2jZ47soMZo\n"
	"9wGzjb/7OMg0LOL+bSf63kpaSHSXndS5z5rexMdbBYUsLA9e+KXBdQOS+UTo7WTB\n"
	"EMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6/I5IhlJH7aGhyxX\n"
	"FvUK+DWNmoudF8NAco9/h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXp\n"
	"oQIDAQAB\n"
	"-----END PUBLIC KEY-----\n";

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
