/* jwt.c - RS256 JWTs on OpenSSL (see jwt.h).  OpenSSL objects (BIO,
 * EVP_PKEY, EVP_MD_CTX) never leave this file. */
#include "s3/jwt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *jwt_b64url_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = malloc(len / 3 * 4 + 5), *o = out;
	size_t i = 0;

	if (!out)
		return NULL;
	for (; i + 3 <= len; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];

		*o++ = b64url[v >> 18];
		*o++ = b64url[(v >> 12) & 63];
		*o++ = b64url[(v >> 6) & 63];
		*o++ = b64url[v & 63];
	}
	if (len - i == 1) {
		unsigned v = (unsigned)p[i] << 16;

		*o++ = b64url[v >> 18];
		*o++ = b64url[(v >> 12) & 63];
	} else if (len - i == 2) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;

		*o++ = b64url[v >> 18];
		*o++ = b64url[(v >> 12) & 63];
		*o++ = b64url[(v >> 6) & 63];
	}
	*o = '\0';
	return out;
}

static int b64val(unsigned char c)
{
	const char *p = c ? strchr(b64url, c) : NULL;

	return p ? (int)(p - b64url) : -1;
}

int jwt_b64url_decode(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
	unsigned char *buf;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;

	*out = NULL;
	while (len && s[len - 1] == '=')
		len--;
	if (len % 4 == 1)
		return TFS_E_INVAL;
	buf = malloc(len / 4 * 3 + 3);
	if (!buf)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < len; i++) {
		int v = b64val((unsigned char)s[i]);

		if (v < 0) {
			free(buf);
			return TFS_E_INVAL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) {            /* non-canonical trailing bits */
		free(buf);
		return TFS_E_INVAL;
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return TFS_OK;
}

/* An encrypted key is refused, never asked for on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static EVP_PKEY *load_key(const char *pem, bool private_key)
{
	BIO *bio;
	EVP_PKEY *k;

	if (!pem || strlen(pem) > 64 * 1024)
		return NULL;
	bio = BIO_new_mem_buf(pem, -1);
	if (!bio)
		return NULL;
	if (private_key) {
		k = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	} else {
		k = PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
		if (!k) {
			BIO_free(bio);
			bio = BIO_new_mem_buf(pem, -1);
			k = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
		}
	}
	BIO_free(bio);
	ERR_clear_error();   /* failed attempts leave entries in this thread's queue */
	if (k && EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
		EVP_PKEY_free(k);
		k = NULL;
	}
	return k;
}

int jwt_rs256_sign(const char *pem_key, const void *data, size_t len,
		   unsigned char **sig, size_t *sig_len, struct tfs_errinfo *ei)
{
	EVP_PKEY *k = load_key(pem_key, true);
	EVP_MD_CTX *md = NULL;
	unsigned char *buf = NULL;
	size_t n = 0;
	int rc = TFS_E_INVAL;

	*sig = NULL;
	if (!k) {
		tfs_errinfo_set(ei, "the private key is not a PEM RSA private key");
		return TFS_E_INVAL;
	}
	md = EVP_MD_CTX_new();
	if (!md) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(md, NULL, &n, data, len) != 1) {
		tfs_errinfo_set(ei, "RS256 signing failed");
		goto out;
	}
	buf = malloc(n);
	if (!buf) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	if (EVP_DigestSign(md, buf, &n, data, len) != 1) {
		tfs_errinfo_set(ei, "RS256 signing failed");
		free(buf);
		goto out;
	}
	*sig = buf;
	*sig_len = n;
	rc = TFS_OK;
out:
	ERR_clear_error();
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	return rc;
}

int jwt_make_rs256(const char *pem_key, const char *kid, const char *claims_json,
		   char **out, struct tfs_errinfo *ei)
{
	char header[256], *h = NULL, *c = NULL, *input = NULL, *s = NULL;
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	int rc = TFS_E_NOMEM;

	*out = NULL;
	if (kid && (strlen(kid) > 128 || strpbrk(kid, "\"\\"))) {
		tfs_errinfo_set(ei, "bad private_key_id");
		return TFS_E_INVAL;
	}
	if (kid && *kid)
		snprintf(header, sizeof(header), "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"%s\"}",
			 kid);
	else
		snprintf(header, sizeof(header), "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
	h = jwt_b64url_encode(header, strlen(header));
	c = jwt_b64url_encode(claims_json, strlen(claims_json));
	if (!h || !c || asprintf(&input, "%s.%s", h, c) < 0) {
		input = NULL;
		goto out;
	}
	rc = jwt_rs256_sign(pem_key, input, strlen(input), &sig, &sig_len, ei);
	if (rc)
		goto out;
	rc = TFS_E_NOMEM;
	s = jwt_b64url_encode(sig, sig_len);
	if (!s || asprintf(out, "%s.%s", input, s) < 0) {
		*out = NULL;
		goto out;
	}
	rc = TFS_OK;
out:
	free(h);
	free(c);
	free(input);
	free(s);
	free(sig);
	return rc;
}

int jwt_rs256_verify(const char *pem_key, const void *data, size_t len,
		     const unsigned char *sig, size_t sig_len)
{
	EVP_PKEY *k = load_key(pem_key, false);
	EVP_MD_CTX *md;
	int rc = TFS_E_AUTH;

	if (!k)
		return TFS_E_INVAL;
	md = EVP_MD_CTX_new();
	if (!md) {
		EVP_PKEY_free(k);
		return TFS_E_NOMEM;
	}
	if (EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestVerify(md, sig, sig_len, data, len) == 1)
		rc = TFS_OK;
	ERR_clear_error();
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	return rc;
}
