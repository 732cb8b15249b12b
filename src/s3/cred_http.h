/* cred_http.h - the one small HTTP call credential sources make (IMDS,
 * container endpoint, STS, OAuth 2 token endpoints, GCE metadata), on
 * libcurl.
 *
 * One attempt, no retries (the provider retries), bounded in time and in
 * size.  Peer and host TLS verification are always on (AWS_CA_BUNDLE is
 * honoured as by the S3 client).  No redirects are followed: a
 * credentials endpoint that redirects is misconfigured or hostile.
 * Thread-safe; no state between calls.
 */
#ifndef TIERFS_CRED_HTTP_H
#define TIERFS_CRED_HTTP_H

#include <stddef.h>

#include "common/tfs_err.h"

#define CRED_HTTP_BODY_MAX (256u * 1024)

struct cred_http_req {
	const char *method;        /* "GET", "PUT" or "POST" */
	const char *url;
	const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL */
	const char *body;          /* sent as is (NULL = none) */
	size_t body_len;
	unsigned timeout_ms;       /* whole call; 0 = 10000 */
	unsigned connect_timeout_ms; /* 0 = timeout_ms */
};

struct cred_http_resp {
	long status;               /* HTTP status */
	char *body;                /* NUL-terminated (malloc'd), at most
	                            * CRED_HTTP_BODY_MAX bytes; may hold secrets:
	                            * free with cred_http_resp_release() */
	size_t body_len;
};

/* Perform req.  TFS_OK once any HTTP answer came back (look at status);
 * TFS_E_CONNECT when nothing could be reached (refused, DNS, timeout to
 * connect), TFS_E_IO for other transport failures and time-outs,
 * TFS_E_TOOBIG for a body over the bound, with the detail in ei (what
 * curl said and the URL without its query, never a header or a body). */
int cred_http_do(const struct cred_http_req *req, struct cred_http_resp *resp,
		 struct tfs_errinfo *ei);

/* Wipe and free resp->body. */
void cred_http_resp_release(struct cred_http_resp *resp);

/* Is url's host a loopback address (127.0.0.0/8, ::1, localhost)? */
int cred_http_url_is_loopback(const char *url);

#endif
