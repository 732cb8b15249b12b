/* cred_http.c - one bounded HTTP call for credential sources (see
 * cred_http.h).  Bodies may hold secrets (tokens, keys): they are wiped
 * before they are freed, and never logged. */
#include "s3/cred_http.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

struct rx {
	char *buf;
	size_t len, cap;
	bool over;
};

static pthread_once_t cred_curl_once = PTHREAD_ONCE_INIT;
static CURLcode cred_curl_rc = CURLE_FAILED_INIT;

static void cred_curl_init(void)
{
	cred_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t rx_cb(char *p, size_t size, size_t nmemb, void *ud)
{
	struct rx *r = ud;
	size_t n = size * nmemb;

	if (n > CRED_HTTP_BODY_MAX - r->len) {
		r->over = true;
		return CURL_WRITEFUNC_ERROR;
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *q;

		while (cap < r->len + n + 1)
			cap *= 2;
		q = malloc(cap);
		if (!q)
			return CURL_WRITEFUNC_ERROR;
		if (r->buf) {
			memcpy(q, r->buf, r->len);
			explicit_bzero(r->buf, r->cap);
			free(r->buf);
		}
		r->buf = q;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	r->buf[r->len] = '\0';
	return n;
}

/* "scheme://host[:port]/path" without query or fragment, for messages. */
static void url_for_msg(const char *url, char *out, size_t n)
{
	size_t l = strcspn(url, "?#");

	if (l >= n)
		l = n - 1;
	memcpy(out, url, l);
	out[l] = '\0';
}

int cred_http_do(const struct cred_http_req *req, struct cred_http_resp *resp,
		 struct tfs_errinfo *ei)
{
	struct rx r = { 0 };
	struct curl_slist *hl = NULL, *n;
	char errbuf[CURL_ERROR_SIZE] = "", where[160];
	unsigned t = req->timeout_ms ? req->timeout_ms : 10000;
	unsigned ct = req->connect_timeout_ms ? req->connect_timeout_ms : t;
	const char *ca = getenv("AWS_CA_BUNDLE");
	CURLcode e = CURLE_OK, cc;
	CURL *h;
	int rc;

	memset(resp, 0, sizeof(*resp));
	url_for_msg(req->url, where, sizeof(where));
	pthread_once(&cred_curl_once, cred_curl_init);
	if (cred_curl_rc != CURLE_OK) {
		tfs_errinfo_set(ei, "curl_global_init failed");
		return TFS_E_IO;
	}
	h = curl_easy_init();
	if (!h)
		return TFS_E_NOMEM;
	for (const char *const *p = req->headers; p && *p; p++) {
		n = curl_slist_append(hl, *p);
		if (!n) {
			rc = TFS_E_NOMEM;
			goto out;
		}
		hl = n;
	}
	/* no 100-continue round trip; a form type only when we say so */
	if (!(n = curl_slist_append(hl, "Expect:"))) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	hl = n;

#define SET(opt, val) do { if (e == CURLE_OK) e = curl_easy_setopt(h, opt, val); } while (0)
	SET(CURLOPT_URL, req->url);
	SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_TIMEOUT_MS, (long)t);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)ct);
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca && *ca)
		SET(CURLOPT_CAINFO, ca);
	SET(CURLOPT_USERAGENT, "tierfs/" TIERFS_VERSION);
	SET(CURLOPT_HTTPHEADER, hl);
	SET(CURLOPT_WRITEFUNCTION, rx_cb);
	SET(CURLOPT_WRITEDATA, &r);
	SET(CURLOPT_ERRORBUFFER, errbuf);
	SET(CURLOPT_PROXY, "");      /* metadata endpoints are never proxied */
	if (strcmp(req->method, "POST") == 0) {
		SET(CURLOPT_POST, 1L);
		SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
	} else if (strcmp(req->method, "GET") != 0) {
		SET(CURLOPT_CUSTOMREQUEST, req->method);
		if (req->body) {
			SET(CURLOPT_POSTFIELDS, req->body);
			SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		}
	}
#undef SET
	if (e != CURLE_OK) {
		tfs_errinfo_set(ei, "%s: curl rejected an option", where);
		rc = TFS_E_INVAL;
		goto out;
	}
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		curl_off_t sent = 0;

		curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &sent);
		if (r.over) {
			rc = TFS_E_TOOBIG;
			tfs_errinfo_set(ei, "%s: reply larger than %u bytes", where, CRED_HTTP_BODY_MAX);
		} else {
			rc = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
			     (cc == CURLE_OPERATION_TIMEDOUT && sent == 0) ? TFS_E_CONNECT : TFS_E_IO;
			tfs_errinfo_set(ei, "%s: %s", where, errbuf[0] ? errbuf : curl_easy_strerror(cc));
		}
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (!r.buf) {
		r.buf = calloc(1, 1);
		if (!r.buf) {
			rc = TFS_E_NOMEM;
			goto out;
		}
	}
	resp->body = r.buf;
	resp->body_len = r.len;
	r.buf = NULL;
	rc = TFS_OK;
out:
	if (r.buf) {
		explicit_bzero(r.buf, r.cap);
		free(r.buf);
	}
	/* header lines may carry a token */
	for (struct curl_slist *q = hl; q; q = q->next)
		explicit_bzero(q->data, strlen(q->data));
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return rc;
}

void cred_http_resp_release(struct cred_http_resp *resp)
{
	if (resp->body) {
		explicit_bzero(resp->body, resp->body_len);
		free(resp->body);
	}
	resp->body = NULL;
	resp->body_len = 0;
}

int cred_http_url_is_loopback(const char *url)
{
	const char *h = strstr(url, "://");
	size_t n;

	if (!h)
		return 0;
	h += 3;
	if (h[0] == '[')
		return strncmp(h, "[::1]", 5) == 0;
	n = strcspn(h, ":/?#");
	if (n == 9 && strncasecmp(h, "localhost", 9) == 0)
		return 1;
	return n >= 7 && strncmp(h, "127.", 4) == 0 && strspn(h, "0123456789.") == n;
}
