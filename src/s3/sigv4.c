/* sigv4.c - AWS Signature Version 4 for S3 (see sigv4.h).
 *
 * The signature is HMAC-SHA256 over a "string to sign" that hashes a
 * canonical form of the request:
 *
 *   canonical request = METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n PAYLOAD
 *     URI      the path exactly as sent (S3 does not normalise it)
 *     QUERY    name=value pairs, both percent-encoded, sorted by name then
 *              value (byte order of the encoded form), every pair with '='
 *     HEADERS  "name:value\n" per signed header: names lower-cased and
 *              sorted, values trimmed with inner runs of spaces collapsed
 *     SIGNED   the header names joined with ';'
 *   string to sign = "AWS4-HMAC-SHA256" \n DATE \n SCOPE \n hex(sha256(canon))
 *   signing key    = HMAC chain "AWS4"+secret -> day -> region -> service
 *                    -> "aws4_request"
 *
 * Invariants: every buffer is bounded (SIGV4_CANON_MAX); derived keys are
 * wiped before return; nothing here logs.
 */
#include "s3/sigv4.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define SIGV4_CANON_MAX (256 * 1024)  /* canonical request bound */
#define SIGV4_MAX_HEADERS 32

/* A bounded append-only string; `err` latches the first failure. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (n >= b->cap - b->len) {
		b->err = TFS_E_TOOBIG;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sbuf_adds(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		/* Only on allocation failure inside OpenSSL: an impossible
		 * hash makes the server reject the request, never accept it. */
		memset(out, '0', 64);
		out[64] = '\0';
		return;
	}
	hex_encode(md, 32, out);
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

long sigv4_uri_encode(const char *src, size_t len, int keep_slash, char *dst, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		if (is_unreserved(c) || (c == '/' && keep_slash)) {
			if (cap - o < 2)
				return -1;
			dst[o++] = (char)c;
		} else {
			if (cap - o < 4)
				return -1;
			dst[o++] = '%';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	if (cap - o < 1)
		return -1;
	dst[o] = '\0';
	return (long)o;
}

/* One query parameter, encoded, for sorting. */
struct enc_param {
	char *name;
	char *value;
};

static int enc_param_cmp(const void *a, const void *b)
{
	const struct enc_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static size_t len_or0(const char *s)
{
	return s ? strlen(s) : 0;
}

static char *uri_encode_dup(const char *s)
{
	size_t n = strlen(s);
	char *out;

	if (n > SIGV4_CANON_MAX)
		return NULL;
	out = malloc(3 * n + 1);
	if (out && sigv4_uri_encode(s, n, 0, out, 3 * n + 1) < 0) {
		free(out);
		out = NULL;
	}
	return out;
}

long sigv4_canonical_query(const struct sigv4_param *params, size_t n, char *dst, size_t cap)
{
	struct enc_param *enc = NULL;
	struct sbuf b = { .p = dst, .cap = cap };
	long rc = -1;
	size_t done = 0;

	if (cap == 0)
		return -1;
	dst[0] = '\0';
	if (n == 0)
		return 0;
	enc = calloc(n, sizeof(*enc));
	if (!enc)
		return -1;
	for (; done < n; done++) {
		enc[done].name = uri_encode_dup(params[done].name ? params[done].name : "");
		enc[done].value = uri_encode_dup(params[done].value ? params[done].value : "");
		if (!enc[done].name || !enc[done].value) {
			done++;
			goto out_free;
		}
	}
	qsort(enc, n, sizeof(*enc), enc_param_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i)
			sbuf_add(&b, "&", 1);
		sbuf_adds(&b, enc[i].name);
		sbuf_add(&b, "=", 1);
		sbuf_adds(&b, enc[i].value);
	}
	if (!b.err)
		rc = (long)b.len;
out_free:
	for (size_t i = 0; i < done; i++) {
		free(enc[i].name);
		free(enc[i].value);
	}
	free(enc);
	if (rc < 0)
		dst[0] = '\0';
	return rc;
}

/* A signed header, name lower-cased, value trimmed (both owned). */
struct canon_header {
	char name[64];
	char *value;
};

static int canon_header_cmp(const void *a, const void *b)
{
	const struct canon_header *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static bool is_token_char(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Trim and collapse runs of spaces/tabs; reject CR, LF and other control
 * characters (header injection).  NULL on bad input or no memory. */
static char *trim_value(const char *v)
{
	size_t n = strlen(v), o = 0;
	char *out;
	bool space = false;

	out = malloc(n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == ' ' || c == '\t') {
			space = true;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			free(out);
			return NULL;
		}
		if (space && o > 0)
			out[o++] = ' ';
		space = false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return out;
}

static bool hmac_sha256(const void *key, size_t klen, const char *msg,
			unsigned char out[32])
{
	unsigned int olen = 0;

	return HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
		    strlen(msg), out, &olen) != NULL && olen == 32;
}

int sigv4_authorization_debug(const struct sigv4_request *req, char *dst, size_t cap,
			      char *canon_out, size_t canon_cap,
			      char *sts_out, size_t sts_cap)
{
	struct canon_header hdr[SIGV4_MAX_HEADERS];
	size_t n_hdr = 0;
	char *canon = NULL, *query = NULL, *kdate_in = NULL;
	char canon_hash[65], day[9], sig_hex[65];
	char sts[512];
	unsigned char k[32], sig[32];
	struct sbuf b;
	size_t signed_at, signed_end, slen = 0, qcap, ccap;
	int rc = TFS_E_INVAL;
	int n;

	if (cap)
		dst[0] = '\0';
	if (!req || !req->method || !req->canonical_uri || !req->payload_hash ||
	    !req->amz_date || !req->region || !req->service || !req->access_key ||
	    !req->secret_key || strlen(req->amz_date) != 16 ||
	    req->n_headers > SIGV4_MAX_HEADERS || (req->n_params && !req->params) ||
	    (req->n_headers && !req->headers))
		return TFS_E_INVAL;
	memcpy(day, req->amz_date, 8);
	day[8] = '\0';

	for (; n_hdr < req->n_headers; n_hdr++) {
		const char *name = req->headers[n_hdr].name;
		size_t nl = name ? strlen(name) : 0;

		hdr[n_hdr].value = NULL;
		if (nl == 0 || nl >= sizeof(hdr[n_hdr].name) || !req->headers[n_hdr].value)
			goto out_headers;
		for (size_t i = 0; i < nl; i++) {
			if (!is_token_char((unsigned char)name[i]))
				goto out_headers;
			hdr[n_hdr].name[i] = (char)tolower((unsigned char)name[i]);
		}
		hdr[n_hdr].name[nl] = '\0';
		hdr[n_hdr].value = trim_value(req->headers[n_hdr].value);
		if (!hdr[n_hdr].value)
			goto out_headers;
	}
	qsort(hdr, n_hdr, sizeof(*hdr), canon_header_cmp);
	for (size_t i = 1; i < n_hdr; i++)
		if (strcmp(hdr[i - 1].name, hdr[i].name) == 0)
			goto out_headers;   /* duplicates would need joining: refuse */

	/* Sized to what this request can need, at most the bound: a buffer
	 * of the bound itself would be a fresh mapping per request (past the
	 * daemon's mmap threshold), a page fault and a TLB flush each. */
	qcap = 1;
	for (size_t i = 0; i < req->n_params; i++)
		qcap += 3 * (len_or0(req->params[i].name) + len_or0(req->params[i].value)) + 2;
	ccap = strlen(req->method) + strlen(req->canonical_uri) + strlen(req->payload_hash) + 8;
	for (size_t i = 0; i < n_hdr; i++)
		ccap += 2 * strlen(hdr[i].name) + strlen(hdr[i].value) + 3;
	qcap = qcap < SIGV4_CANON_MAX ? qcap : SIGV4_CANON_MAX;
	ccap = ccap + qcap < SIGV4_CANON_MAX ? ccap + qcap : SIGV4_CANON_MAX;
	rc = TFS_E_NOMEM;
	query = malloc(qcap);
	canon = malloc(ccap);
	if (!query || !canon)
		goto out_bufs;
	rc = TFS_E_TOOBIG;
	if (sigv4_canonical_query(req->params, req->n_params, query, qcap) < 0)
		goto out_bufs;

	b = (struct sbuf){ .p = canon, .cap = ccap };
	sbuf_adds(&b, req->method);
	sbuf_add(&b, "\n", 1);
	sbuf_adds(&b, req->canonical_uri);
	sbuf_add(&b, "\n", 1);
	sbuf_adds(&b, query);
	sbuf_add(&b, "\n", 1);
	for (size_t i = 0; i < n_hdr; i++) {
		sbuf_adds(&b, hdr[i].name);
		sbuf_add(&b, ":", 1);
		sbuf_adds(&b, hdr[i].value);
		sbuf_add(&b, "\n", 1);
	}
	sbuf_add(&b, "\n", 1);
	signed_at = b.len;
	for (size_t i = 0; i < n_hdr; i++) {
		if (i)
			sbuf_add(&b, ";", 1);
		sbuf_adds(&b, hdr[i].name);
	}
	signed_end = b.len;
	sbuf_add(&b, "\n", 1);
	sbuf_adds(&b, req->payload_hash);
	if (b.err)
		goto out_bufs;
	sigv4_sha256_hex(canon, b.len, canon_hash);

	n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s",
		     req->amz_date, day, req->region, req->service, canon_hash);
	if (n < 0 || (size_t)n >= sizeof(sts))
		goto out_bufs;

	/* Signing key: the secret is only ever in kdate_in and k, both wiped. */
	rc = TFS_E_NOMEM;
	slen = strlen(req->secret_key);
	kdate_in = malloc(slen + 5);
	if (!kdate_in)
		goto out_bufs;
	memcpy(kdate_in, "AWS4", 4);
	memcpy(kdate_in + 4, req->secret_key, slen + 1);
	rc = TFS_E_INVAL;
	if (!hmac_sha256(kdate_in, slen + 4, day, k) ||
	    !hmac_sha256(k, 32, req->region, k) ||
	    !hmac_sha256(k, 32, req->service, k) ||
	    !hmac_sha256(k, 32, "aws4_request", k) ||
	    !hmac_sha256(k, 32, sts, sig))
		goto out_key;
	hex_encode(sig, 32, sig_hex);

	rc = TFS_E_TOOBIG;
	n = snprintf(dst, cap, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,"
		     "SignedHeaders=%.*s,Signature=%s", req->access_key, day, req->region,
		     req->service, (int)(signed_end - signed_at), canon + signed_at, sig_hex);
	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			dst[0] = '\0';
		goto out_key;
	}
	if (canon_out && canon_cap) {
		if (b.len >= canon_cap)
			goto out_key;
		memcpy(canon_out, canon, b.len + 1);
	}
	if (sts_out && sts_cap) {
		if ((size_t)snprintf(sts_out, sts_cap, "%s", sts) >= sts_cap)
			goto out_key;
	}
	rc = TFS_OK;
out_key:
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(sig, sizeof(sig));
	if (kdate_in) {
		OPENSSL_cleanse(kdate_in, slen + 4);
		free(kdate_in);
	}
out_bufs:
	free(canon);
	free(query);
out_headers:
	for (size_t i = 0; i < n_hdr; i++)
		free(hdr[i].value);
	return rc;
}

int sigv4_authorization(const struct sigv4_request *req, char *dst, size_t cap)
{
	return sigv4_authorization_debug(req, dst, cap, NULL, 0, NULL, 0);
}
