/* s3_client.c - S3 over libcurl with SigV4 signing, a bounded pool of
 * kept-alive handles, and retries (see s3_client.h).
 *
 * One call = one s3_op.  s3_run() loops over attempts: borrow a handle
 * from the pool, sign (x-amz-date is per attempt), perform, classify,
 * give the handle back, and on a transient failure sleep a full-jitter
 * backoff (uniform in [0, min(max, base * 2^attempt)] ms, drawn from a
 * per-call xorshift state) before the next attempt.  Each perform, whatever
 * its outcome, is timed into a lock-free latency histogram.
 *
 * Classification of one attempt:
 *   transport: refused / DNS / TLS handshake / connect timeout -> CONNECT
 *     (retried at most S3_CONNECT_RETRIES times so that a dead endpoint
 *     fails fast; certificate failures and connect timeouts, which have
 *     waited long enough already, not at all); reset, recv/send error,
 *     partial body, stall, nothing received -> IO, retried.
 *   HTTP >= 300: the error body goes through s3_xml_parse_error() and
 *     s3_error_map(); 5xx/429/SlowDown are IO and retried.
 *   HTTP 2xx: the op's check function validates what came back (a ranged
 *     GET checks 206 + Content-Range against what it asked; a short body,
 *     a missing or wrong Content-Range, a 200 with the whole object where
 *     a range was asked, are IO and retried; a body longer than asked is
 *     refused by the write callback and retried).
 * When retries run out the error is what the last attempt saw: IO for
 * transient failures, CONNECT for connect failures, never NOENT.
 *
 * Throttles (503 SlowDown, 429) are counted; with cfg->adaptive_rate they
 * also lower the client's own send rate (send_rate.h): once the store has
 * asked to slow down, every attempt takes a token first, waiting for one
 * before it borrows a handle, so that a store that limits requests sees
 * fewer of them instead of each call spending its retries against the
 * limit; and a throttled call is retried, paced, for as long as its
 * max_retries backoffs could take at their longest (max_retries x
 * backoff_max) rather than for a count of attempts.  (Off by default, as
 * in the AWS SDKs: the rate is the client's, so a throttled prefix slows
 * the requests for every other one too.)
 *
 * Invariants: at most max_connections easy handles exist; every body read
 * into memory is bounded (caller's buffer, S3_LIST_BODY_MAX,
 * S3_ERR_BODY_MAX) and so are response headers (S3_HEADERS_MAX); secrets
 * live only in the credentials provider's struct cred (held by reference
 * for one attempt, so a refresh never frees keys being signed with) and in
 * the header list of an attempt, both wiped, and are never logged.  The
 * only process-wide state is curl_global_init(), run once through
 * pthread_once().
 *
 * Credentials: an attempt takes the provider's current set before it
 * borrows a handle (the provider may have to fetch new ones), signs with
 * SigV4 (keys) or sends "Authorization: Bearer" (an OAuth token).  When the
 * server refuses credentials the provider thought valid, the call asks for
 * new ones and tries once more.
 *
 * CA bundle: decided once, in s3_client_new(): cfg->ca_bundle if set, else
 * $AWS_CA_BUNDLE if set and non-empty, else curl's built-in default.  Peer
 * and host verification are always on.
 */
#include "s3/s3_client.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>

#include "common/log.h"
#include "common/rand.h"
#include "s3/aws_creds.h"
#include "s3/cred_util.h"
#include "s3/s3_client_internal.h"
#include "s3/s3_xml.h"
#include "s3/send_rate.h"
#include "s3/sigv4.h"

#define S3_LIST_BODY_MAX (16u * 1024 * 1024)
#define S3_ERR_BODY_MAX (64u * 1024)
#define S3_HEADERS_MAX (64u * 1024)
#define S3_KEY_MAX 1024
#define S3_CONNECT_RETRIES 2
#define S3_AUTH_MAX 1024
#define S3_META_MAX 128
#define S3_MAX_CONNECTIONS 1024
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

#ifndef TIERFS_VERSION
#define TIERFS_VERSION "dev"
#endif

struct s3_client {
	struct objstore os;          /* first: objstore_free() casts back */

	char *scheme;                /* "http" or "https" */
	char *req_host;              /* Host header: "host[:port]" or "bucket.host[:port]" */
	char *base_url;              /* scheme://req_host */
	char *bucket_path;           /* "/bucket-encoded" (path style) or "" */
	char *bucket;
	char *region;
	struct cred_provider *creds; /* NULL = anonymous; express: the session */
	struct cred_provider *iam;   /* express (cfg->express) when set: what
	                              * CreateSession is signed with */
	bool express_read_only;      /* cfg->express_read_only */
	enum s3_dialect dialect;
	char *ca_bundle;             /* NULL = curl default */
	bool aws;                    /* endpoint derived from the region */
	bool adaptive;               /* cfg->adaptive_rate */
	unsigned max_conn, max_retries, backoff_base_ms, backoff_max_ms;
	long connect_timeout_ms, stall_ms, stall_s, request_timeout_ms;

	pthread_mutex_t lock;        /* guards idle[], n_idle, n_open */
	pthread_cond_t cond;         /* signalled when a handle is returned */
	CURL **idle;                 /* max_conn slots, LIFO: warm first */
	unsigned n_idle, n_open;

	struct send_rate *rate;      /* the send rate after a throttle */
	CURLSH *share;               /* DNS cache and TLS sessions */
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];

	_Atomic uint64_t st_requests, st_gets, st_heads, st_lists, st_retries,
		st_errors, st_bytes;
	struct latency_hist st_latency; /* per attempt, see struct objstore_stats */
};

enum rx_mode { RX_NONE, RX_BUF, RX_DYN };

struct s3_xfer;

/* One call: what to send and where a 2xx body goes. */
struct s3_op {
	const char *method;
	const char *path;            /* encoded, e.g. "/bucket/a%20b" */
	const char *query;           /* canonical query string, "" if none */
	const struct sigv4_param *params;
	size_t n_params;
	bool iam;                    /* express: sign with c->iam (CreateSession) */
	const char *session_mode;    /* CreateSession: x-amz-create-session-mode (signed) */
	const char *range;           /* Range header value or NULL */
	const char *if_match;
	bool if_none_match;          /* PUT: "If-None-Match: *" (create only) */
	const char *meta_name;       /* PUT: sends x-amz-meta-NAME (signed); GET:
	                              * keeps that header of the reply */
	const char *meta_value;      /* PUT: its value */
	const void *body;            /* PUT body */
	size_t body_len;
	const char *payload_hash;
	enum rx_mode rx;
	void *rx_buf;                /* RX_BUF: caller's buffer */
	size_t rx_cap;
	bool refuse_200;             /* a 200 answer must not be written (ranged GET, off > 0) */
	bool empty_on_416;           /* 416 means an empty object (ranged GET, off == 0) */
	const struct s3_client *client; /* set by s3_run() */
	/* Validate a 2xx attempt; ctx is the op's own output. */
	int (*check)(const struct s3_op *op, struct s3_xfer *x, void *ctx,
		     bool *retry, struct tfs_errinfo *ei);
	void *ctx;
};

/* One attempt: what came back. */
struct s3_xfer {
	const struct s3_op *op;
	long status;                 /* of the last status line seen */
	size_t header_bytes;
	bool header_over;
	bool have_len;
	uint64_t content_length;
	bool have_etag;
	char etag[OBJ_ETAG_MAX];
	char generation[24];         /* x-goog-generation, "" when none */
	char meta[S3_META_MAX];      /* x-amz-meta-<op->meta_name>, "" when none */
	bool etag_too_long;
	char last_modified[64];
	bool have_crange, crange_total_known;
	uint64_t cr_start, cr_end, cr_total;
	size_t rx_len;               /* bytes written to op->rx_buf */
	bool overflow;               /* server sent more than rx_cap */
	bool refused;                /* body of a 200 we do not take */
	char *dyn;                   /* RX_DYN body, or any error body */
	size_t dyn_len, dyn_cap;
	bool dyn_over;               /* RX_DYN body over S3_LIST_BODY_MAX */
	bool dyn_nomem;
	size_t up_pos;               /* upload position */
	CURL *h;
	long stall_ms;
	int64_t last_progress_ns;    /* last time bytes moved (or connect ended) */
	curl_off_t last_dl, last_ul;
	bool stalled;
	char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

/* ---- random numbers for jitter (per call, no shared state) ---- */

static uint64_t rng_seed(void)
{
	uint64_t seed = 0;
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
		seed = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	seed ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
		(uint64_t)(uintptr_t)&ts;
	return seed ? seed : 0x2545F4914F6CDD1Dull;
}


static void backoff_sleep(const struct s3_client *c, unsigned attempt, uint64_t *rng)
{
	uint64_t cap = c->backoff_base_ms;
	struct timespec ts;

	for (unsigned i = 1; i < attempt && cap < c->backoff_max_ms; i++)
		cap *= 2;
	if (cap > c->backoff_max_ms)
		cap = c->backoff_max_ms;
	uint64_t ms = xorshift64s_next(rng) % (cap + 1);

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- configuration ---- */

static bool dns_bucket_ok(const char *b)
{
	size_t n = strlen(b);

	if (n < 3 || n > 63 || b[0] == '.' || b[0] == '-' || b[n - 1] == '.' ||
	    b[n - 1] == '-' || strstr(b, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) ||
		      b[i] == '-' || b[i] == '.'))
			return false;
	return true;
}

/* Split "scheme://host[:port][/]" into scheme and a normalised host[:port]
 * (lower case, default port dropped).  The Host header we sign is exactly
 * this string, and we send it ourselves so curl cannot disagree. */
static int parse_endpoint(const char *ep, char **scheme, char **host, bool *is_ip,
			  struct tfs_errinfo *ei)
{
	const char *sep = strstr(ep, "://"), *h, *port = NULL;
	size_t hl;
	char *out;

	*scheme = *host = NULL;
	if (!sep)
		goto bad;
	if ((size_t)(sep - ep) == 4 && strncasecmp(ep, "http", 4) == 0)
		*scheme = strdup("http");
	else if ((size_t)(sep - ep) == 5 && strncasecmp(ep, "https", 5) == 0)
		*scheme = strdup("https");
	else
		goto bad;
	if (!*scheme)
		return TFS_E_NOMEM;
	h = sep + 3;
	hl = strlen(h);
	if (hl && h[hl - 1] == '/')
		hl--;
	if (hl == 0 || hl > 255)
		goto bad;
	for (size_t i = 0; i < hl; i++) {
		unsigned char ch = (unsigned char)h[i];

		if (ch <= 0x20 || ch >= 0x7f || strchr("/?#@\\%", ch))
			goto bad;
	}
	if (h[0] == '[') {
		const char *close = memchr(h, ']', hl);

		if (!close)
			goto bad;
		if ((size_t)(close - h) + 1 < hl) {
			if (close[1] != ':')
				goto bad;
			port = close + 1;
		}
		*is_ip = true;
	} else {
		port = memchr(h, ':', hl);
		*is_ip = true;
		for (const char *p = h; p < (port ? port : h + hl); p++)
			if (!isdigit((unsigned char)*p) && *p != '.')
				*is_ip = false;
	}
	if (port) {
		size_t pl = hl - (size_t)(port - h) - 1;
		unsigned long v = 0;

		if (pl == 0 || pl > 5)
			goto bad;
		for (size_t i = 0; i < pl; i++) {
			if (!isdigit((unsigned char)port[1 + i]))
				goto bad;
			v = v * 10 + (unsigned long)(port[1 + i] - '0');
		}
		if (v == 0 || v > 65535)
			goto bad;
		if ((v == 80 && strcmp(*scheme, "http") == 0) ||
		    (v == 443 && strcmp(*scheme, "https") == 0))
			hl = (size_t)(port - h);
	}
	out = malloc(hl + 1);
	if (!out)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < hl; i++)
		out[i] = (char)tolower((unsigned char)h[i]);
	out[hl] = '\0';
	*host = out;
	return TFS_OK;
bad:
	free(*scheme);
	*scheme = NULL;
	tfs_errinfo_set(ei, "endpoint must be http(s)://host[:port]");
	return TFS_E_INVAL;
}

static void share_lock_cb(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct s3_client *c = ud;

	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&c->share_lock[data]);
}

static void share_unlock_cb(CURL *h, curl_lock_data data, void *ud)
{
	struct s3_client *c = ud;

	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&c->share_lock[data]);
}

static void s3_client_os_free(struct objstore *os);
static int s3_os_head(struct objstore *os, const char *key, struct obj_meta *out,
		      struct tfs_errinfo *ei);
static int s3_os_get_range(struct objstore *os, const char *key, const char *if_match,
			   uint64_t off, size_t len, void *buf, size_t *got,
			   struct tfs_errinfo *ei);
static int s3_os_list(struct objstore *os, const char *prefix, const char *delimiter,
		      const char *token, unsigned max_keys, struct obj_list_page **out,
		      struct tfs_errinfo *ei);

static void s3_os_stats(struct objstore *os, struct objstore_stats *out)
{
	s3_client_stats((struct s3_client *)os, out);
}

static const struct objstore_ops s3_objstore_ops = {
	.head = s3_os_head,
	.get_range = s3_os_get_range,
	.list = s3_os_list,
	.stats = s3_os_stats,
	.free = s3_client_os_free,
};

/* Free c's own allocations and c itself (secrets wiped); the curl and
 * pthread objects are released by the caller.  NULL is a no-op. */
static void client_free_fields(struct s3_client *c)
{
	if (!c)
		return;
	free(c->idle);
	free(c->scheme);
	free(c->req_host);
	free(c->base_url);
	free(c->bucket_path);
	free(c->bucket);
	free(c->region);
	cred_provider_free(c->creds);
	cred_provider_free(c->iam);
	free(c->ca_bundle);
	send_rate_free(c->rate);
	free(c);
}

#define EXPRESS_SUFFIX "--x-s3"

bool s3_bucket_is_express(const char *name)
{
	size_t n = name ? strlen(name) : 0, sl = strlen(EXPRESS_SUFFIX);

	return n > sl && strcmp(name + n - sl, EXPRESS_SUFFIX) == 0;
}

/* The zone id of a directory bucket "NAME--ZONE--x-s3" into zone. */
static bool express_zone(const char *bucket, char *zone, size_t cap)
{
	size_t n = strlen(bucket) - strlen(EXPRESS_SUFFIX);
	const char *start = NULL;

	for (size_t i = 0; i + 1 < n; i++)
		if (bucket[i] == '-' && bucket[i + 1] == '-')
			start = bucket + i + 2;
	if (!start || start == bucket + n || (size_t)(bucket + n - start) >= cap)
		return false;
	for (const char *p = start; p < bucket + n; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return false;
	memcpy(zone, start, (size_t)(bucket + n - start));
	zone[bucket + n - start] = '\0';
	return true;
}

static int session_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei);

struct s3_client *s3_client_new(const struct s3_config *cfg, struct tfs_errinfo *ei)
{
	struct s3_client *c = NULL;
	char *host = NULL, *aws_ep = NULL, *benc = NULL;
	const char *ca;
	bool oom = false, is_ip = false;
	int rc, locks = 0;

	struct cred_provider *creds = cfg ? cfg->creds : NULL;

	tfs_errinfo_clear(ei);
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		tfs_errinfo_set(ei, "curl_global_init failed");
		cred_provider_free(creds);
		return NULL;
	}
	if (!cfg || !cfg->bucket || !*cfg->bucket || strlen(cfg->bucket) > 255 ||
	    strchr(cfg->bucket, '/')) {
		tfs_errinfo_set(ei, "a bucket name (without '/', at most 255 bytes) is required");
		cred_provider_free(creds);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		cred_provider_free(creds);
		goto oom;
	}
	c->os.ops = &s3_objstore_ops;
	c->creds = creds;            /* owned from here on */
	c->dialect = cfg->dialect;
	latency_hist_init(&c->st_latency);
	c->adaptive = cfg->adaptive_rate;
	c->rate = send_rate_new(cfg->adaptive_rate);
	if (!c->rate)
		goto oom;
	c->region = strdup(cfg->region && *cfg->region ? cfg->region : "us-east-1");
	c->bucket = strdup(cfg->bucket);
	if (!c->region || !c->bucket)
		goto oom;
	if (cfg->express && !s3_bucket_is_express(c->bucket)) {
		tfs_errinfo_set(ei, "bucket '%s' is not a directory bucket (NAME--ZONE--x-s3)",
			       c->bucket);
		goto fail;
	}
	for (const char *p = c->region; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '-') {
			tfs_errinfo_set(ei, "bad region name");
			goto fail;
		}
	}
	if (cfg->endpoint && *cfg->endpoint) {
		rc = parse_endpoint(cfg->endpoint, &c->scheme, &host, &is_ip, ei);
	} else {
		/* AWS for the region; a directory bucket's zonal endpoint */
		char svc[80] = "s3";

		if (cfg->express) {
			char zone[64];

			if (!express_zone(c->bucket, zone, sizeof(zone))) {
				tfs_errinfo_set(ei, "S3 Express bucket '%s' names no zone "
					       "(NAME--ZONE-ID--x-s3)", c->bucket);
				goto fail;
			}
			snprintf(svc, sizeof(svc), "s3express-%s", zone);
		}
		c->aws = true;
		if (asprintf(&aws_ep, "https://%s.%s.amazonaws.com", svc, c->region) < 0)
			goto oom;
		rc = parse_endpoint(aws_ep, &c->scheme, &host, &is_ip, ei);
	}
	if (rc == TFS_E_NOMEM)
		goto oom;
	if (rc)
		goto fail;

	if (cfg->path_style) {
		size_t bl = strlen(c->bucket);

		benc = malloc(3 * bl + 2);
		if (!benc)
			goto oom;
		benc[0] = '/';
		sigv4_uri_encode(c->bucket, bl, 0, benc + 1, 3 * bl + 1);
		c->bucket_path = benc;
		benc = NULL;
		c->req_host = host;
		host = NULL;
	} else {
		if (!dns_bucket_ok(c->bucket) || is_ip) {
			tfs_errinfo_set(ei, "bucket '%s' or endpoint cannot be used virtual-hosted "
			       "(needs a DNS-style bucket name and a host name); use path style",
			       c->bucket);
			goto fail;
		}
		if (asprintf(&c->req_host, "%s.%s", c->bucket, host) < 0) {
			c->req_host = NULL;
			goto oom;
		}
		c->bucket_path = strdup("");
		if (!c->bucket_path)
			goto oom;
	}
	if (asprintf(&c->base_url, "%s://%s", c->scheme, c->req_host) < 0) {
		c->base_url = NULL;
		goto oom;
	}

	if (!c->creds && cfg->access_key && *cfg->access_key) {
		struct cred *k;

		if (!cfg->secret_key || !*cfg->secret_key) {
			tfs_errinfo_set(ei, "an access key needs a secret key");
			goto fail;
		}
		k = cred_new_keys(cfg->access_key, cfg->secret_key, cfg->session_token, 0);
		if (!k || !(c->creds = cred_provider_new_static("static keys", k)))
			goto oom;
	}
	if (cfg->express) {
		char desc[300];

		if (!c->creds) {
			tfs_errinfo_set(ei, "S3 Express bucket '%s' needs credentials to ask it "
				       "for a session", c->bucket);
			goto fail;
		}
		/* the mount's credentials sign CreateSession; the session
		 * signs everything else */
		snprintf(desc, sizeof(desc), "S3 Express session of bucket %s", c->bucket);
		c->express_read_only = cfg->express_read_only;
		c->iam = c->creds;
		/* the sessions come from the store itself: a CreateSession
		 * the store did not answer is the store down (pass_outage) */
		c->creds = cred_provider_new(desc, &(struct cred_source){ .fetch = session_fetch,
									.ctx = c,
									.pass_outage = true }, NULL);
		if (!c->creds)
			goto oom;
	}
	ca = cfg->ca_bundle && *cfg->ca_bundle ? cfg->ca_bundle : getenv("AWS_CA_BUNDLE");
	if (ca && *ca)
		c->ca_bundle = dup_or_null(ca, &oom);
	if (oom)
		goto oom;

	c->max_conn = cfg->max_connections ? cfg->max_connections : 16;
	if (c->max_conn > S3_MAX_CONNECTIONS) {
		tfs_errinfo_set(ei, "max_connections is at most %d", S3_MAX_CONNECTIONS);
		goto fail;
	}
	c->max_retries = cfg->max_retries;
	c->backoff_base_ms = cfg->backoff_base_ms ? cfg->backoff_base_ms : 50;
	c->backoff_max_ms = cfg->backoff_max_ms ? cfg->backoff_max_ms : 2000;
	if (c->backoff_max_ms < c->backoff_base_ms)
		c->backoff_max_ms = c->backoff_base_ms;
	c->connect_timeout_ms = cfg->connect_timeout_ms ? (long)cfg->connect_timeout_ms : 5000;
	c->stall_ms = cfg->stall_timeout_ms ? (long)cfg->stall_timeout_ms : 15000;
	if (c->stall_ms < 1000)
		c->stall_ms = 1000;   /* the progress callback ticks about once a second */
	c->stall_s = (c->stall_ms + 999) / 1000;
	c->request_timeout_ms = (long)cfg->request_timeout_ms;

	c->idle = calloc(c->max_conn, sizeof(*c->idle));
	if (!c->idle)
		goto oom;
	if (pthread_mutex_init(&c->lock, NULL))
		goto oom;
	if (pthread_cond_init(&c->cond, NULL)) {
		pthread_mutex_destroy(&c->lock);
		goto oom;
	}
	for (; locks < CURL_LOCK_DATA_LAST; locks++)
		if (pthread_mutex_init(&c->share_lock[locks], NULL))
			goto oom_locks;
	c->share = curl_share_init();
	if (!c->share ||
	    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock_cb) ||
	    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock_cb) ||
	    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c) ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION))
		goto oom_locks;
	free(host);
	free(aws_ep);
	return c;

oom_locks:
	if (c->share)
		curl_share_cleanup(c->share);
	c->share = NULL;
	while (locks-- > 0)
		pthread_mutex_destroy(&c->share_lock[locks]);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->idle);
	c->idle = NULL;
oom:
	tfs_errinfo_set(ei, "out of memory");
fail:
	client_free_fields(c);
	free(benc);
	free(host);
	free(aws_ep);
	return NULL;
}

struct objstore *s3_client_objstore(struct s3_client *c)
{
	return &c->os;
}

struct s3_client *s3_client_of(struct objstore *os)
{
	return os && os->ops == &s3_objstore_ops ? (struct s3_client *)os : NULL;
}

void s3_client_free(struct s3_client *c)
{
	if (!c)
		return;
	/* Every call has returned its handle by now (callers own that). */
	for (unsigned i = 0; i < c->n_idle; i++)
		curl_easy_cleanup(c->idle[i]);
	curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_lock[i]);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	client_free_fields(c);
}

static void s3_client_os_free(struct objstore *os)
{
	s3_client_free((struct s3_client *)os);
}

void s3_client_stats(struct s3_client *c, struct objstore_stats *out)
{
	out->requests = atomic_load_explicit(&c->st_requests, memory_order_relaxed);
	out->gets = atomic_load_explicit(&c->st_gets, memory_order_relaxed);
	out->heads = atomic_load_explicit(&c->st_heads, memory_order_relaxed);
	out->lists = atomic_load_explicit(&c->st_lists, memory_order_relaxed);
	out->retries = atomic_load_explicit(&c->st_retries, memory_order_relaxed);
	out->errors = atomic_load_explicit(&c->st_errors, memory_order_relaxed);
	out->bytes_received = atomic_load_explicit(&c->st_bytes, memory_order_relaxed);
	latency_hist_snapshot(&c->st_latency, &out->latency);
	{
		struct send_rate_stats rs;

		send_rate_stats(c->rate, &rs);
		out->throttles = rs.throttles;
		out->rate_waits = rs.waits;
		out->rate_limit = (uint64_t)rs.rate;
	}
}

static void stat_add(_Atomic uint64_t *ctr, uint64_t n)
{
	atomic_fetch_add_explicit(ctr, n, memory_order_relaxed);
}

/* ---- handle pool ---- */

static CURL *pool_get(struct s3_client *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->lock);
	while (c->n_idle == 0 && c->n_open >= c->max_conn)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->n_idle) {
		h = c->idle[--c->n_idle];
	} else {
		c->n_open++;
		pthread_mutex_unlock(&c->lock);
		h = curl_easy_init();
		if (h)
			return h;
		pthread_mutex_lock(&c->lock);
		c->n_open--;
		pthread_cond_signal(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return h;
}

static void pool_put(struct s3_client *c, CURL *h)
{
	pthread_mutex_lock(&c->lock);
	c->idle[c->n_idle++] = h;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* ---- curl callbacks ---- */

static bool dyn_append(struct s3_xfer *x, const char *p, size_t n, size_t max)
{
	if (n > max - x->dyn_len)
		return false;
	if (x->dyn_len + n + 1 > x->dyn_cap) {
		size_t cap = x->dyn_cap ? x->dyn_cap : 16384;
		char *q;

		while (cap < x->dyn_len + n + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		q = realloc(x->dyn, cap);
		if (!q) {
			x->dyn_nomem = true;
			return false;
		}
		x->dyn = q;
		x->dyn_cap = cap;
	}
	memcpy(x->dyn + x->dyn_len, p, n);
	x->dyn_len += n;
	x->dyn[x->dyn_len] = '\0';
	return true;
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
	struct s3_xfer *x = ud;
	const struct s3_op *op = x->op;
	size_t n = size * nmemb;

	if (x->status < 200 || x->status >= 300) {
		/* Error body: keep the start, drain the rest so the connection
		 * stays usable. */
		if (x->dyn_len < S3_ERR_BODY_MAX)
			dyn_append(x, p, n < S3_ERR_BODY_MAX - x->dyn_len ? n : S3_ERR_BODY_MAX - x->dyn_len,
				   S3_ERR_BODY_MAX);
		return n;
	}
	switch (op->rx) {
	case RX_NONE:
		return n;
	case RX_BUF:
		if (x->status == 200 && op->refuse_200) {
			x->refused = true;
			return CURL_WRITEFUNC_ERROR;
		}
		if (n > op->rx_cap - x->rx_len) {
			x->overflow = true;
			return CURL_WRITEFUNC_ERROR;
		}
		memcpy((char *)op->rx_buf + x->rx_len, p, n);
		x->rx_len += n;
		return n;
	case RX_DYN:
		if (!dyn_append(x, p, n, S3_LIST_BODY_MAX)) {
			x->dyn_over = !x->dyn_nomem;
			return CURL_WRITEFUNC_ERROR;
		}
		return n;
	}
	return CURL_WRITEFUNC_ERROR;
}

static bool parse_u64(const char *s, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	if (s >= end)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* "bytes START-END/TOTAL" (TOTAL may be '*'). */
static void parse_content_range(struct s3_xfer *x, const char *v, size_t n)
{
	const char *end = v + n, *dash, *slash;

	if (n < 6 || strncasecmp(v, "bytes ", 6) != 0)
		return;
	v += 6;
	dash = memchr(v, '-', (size_t)(end - v));
	slash = dash ? memchr(dash, '/', (size_t)(end - dash)) : NULL;
	if (!slash || !parse_u64(v, dash, &x->cr_start) ||
	    !parse_u64(dash + 1, slash, &x->cr_end))
		return;
	x->crange_total_known = parse_u64(slash + 1, end, &x->cr_total);
	if (!x->crange_total_known && !(end - slash == 2 && slash[1] == '*'))
		return;
	x->have_crange = true;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *ud)
{
	struct s3_xfer *x = ud;
	size_t n = size * nmemb, nl, vl;
	const char *colon, *v;

	x->header_bytes += n;
	if (x->header_bytes > S3_HEADERS_MAX) {
		x->header_over = true;
		return 0;
	}
	vl = n;
	while (vl && (p[vl - 1] == '\r' || p[vl - 1] == '\n'))
		vl--;
	if (vl >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new response (after 100 Continue too): forget the old one. */
		const char *sp = memchr(p, ' ', vl);

		x->status = 0;
		if (sp && (size_t)(sp - p) + 4 <= vl && isdigit((unsigned char)sp[1]) &&
		    isdigit((unsigned char)sp[2]) && isdigit((unsigned char)sp[3]))
			x->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
		x->have_len = x->have_etag = x->etag_too_long = false;
		x->have_crange = x->crange_total_known = false;
		x->last_modified[0] = '\0';
		x->generation[0] = '\0';
		x->meta[0] = '\0';
		return n;
	}
	colon = memchr(p, ':', vl);
	if (!colon)
		return n;
	nl = (size_t)(colon - p);
	v = colon + 1;
	while (v < p + vl && (*v == ' ' || *v == '\t'))
		v++;
	vl = (size_t)(p + vl - v);
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;

	if (nl == 14 && strncasecmp(p, "content-length", nl) == 0) {
		x->have_len = parse_u64(v, v + vl, &x->content_length);
	} else if (nl == 4 && strncasecmp(p, "etag", nl) == 0) {
		if (vl >= sizeof(x->etag)) {
			x->etag_too_long = true;
		} else {
			memcpy(x->etag, v, vl);
			x->etag[vl] = '\0';
			x->have_etag = true;
		}
	} else if (nl == 13 && strncasecmp(p, "last-modified", nl) == 0) {
		if (vl < sizeof(x->last_modified)) {
			memcpy(x->last_modified, v, vl);
			x->last_modified[vl] = '\0';
		}
	} else if (nl == 13 && strncasecmp(p, "content-range", nl) == 0) {
		parse_content_range(x, v, vl);
	} else if (nl == 17 && strncasecmp(p, "x-goog-generation", nl) == 0) {
		/* digits only: it becomes part of a cache key and a header
		 * (counted within vl: curl's line is not NUL-terminated) */
		size_t digits = 0;

		while (digits < vl && isdigit((unsigned char)v[digits]))
			digits++;
		if (vl > 0 && vl < sizeof(x->generation) && digits == vl) {
			memcpy(x->generation, v, vl);
			x->generation[vl] = '\0';
		}
	} else if (x->op->meta_name && nl == 11 + strlen(x->op->meta_name) &&
		   strncasecmp(p, "x-amz-meta-", 11) == 0 &&
		   strncasecmp(p + 11, x->op->meta_name, nl - 11) == 0 && vl < sizeof(x->meta)) {
		memcpy(x->meta, v, vl);
		x->meta[vl] = '\0';
	}
	return n;
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct s3_xfer *x = ud;
	size_t want = size * nitems, left = x->op->body_len - x->up_pos;
	size_t n = want < left ? want : left;

	if (n)
		memcpy(buf, (const char *)x->op->body + x->up_pos, n);
	x->up_pos += n;
	return n;
}

static int seek_cb(void *ud, curl_off_t off, int origin)
{
	struct s3_xfer *x = ud;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->op->body_len)
		return CURL_SEEKFUNC_FAIL;
	x->up_pos = (size_t)off;
	return CURL_SEEKFUNC_OK;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Stall detection.  curl's LOW_SPEED check averages over a window of
 * about five seconds, so on its own it notices a stall only after ~5 s
 * plus LOW_SPEED_TIME; this callback (called at least once a second)
 * aborts once no byte has moved for stall_ms after the request went out.
 * LOW_SPEED stays set as a backstop. */
static int xferinfo_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct s3_xfer *x = ud;
	int64_t now = mono_ns();
	curl_off_t sent = 0;

	/* PRETRANSFER, unlike CONNECT_TIME, is set on reused connections too:
	 * it marks the request going out, after any connect and handshake. */
	curl_easy_getinfo(x->h, CURLINFO_PRETRANSFER_TIME_T, &sent);
	if (!sent || dlnow != x->last_dl || ulnow != x->last_ul) {
		x->last_dl = dlnow;
		x->last_ul = ulnow;
		x->last_progress_ns = now;
		return 0;
	}
	if (now - x->last_progress_ns > (int64_t)x->stall_ms * 1000000) {
		x->stalled = true;
		return 1;
	}
	return 0;
}

/* ---- one attempt ---- */

static struct curl_slist *hdr_add(struct curl_slist *l, bool *oom, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct curl_slist *hdr_add(struct curl_slist *l, bool *oom, const char *fmt, ...)
{
	struct curl_slist *n;
	char *line = NULL;
	va_list ap;
	int len;

	if (*oom)
		return l;
	va_start(ap, fmt);
	len = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (len < 0) {
		*oom = true;
		return l;
	}
	n = curl_slist_append(l, line);
	explicit_bzero(line, (size_t)len);
	free(line);
	if (!n) {
		*oom = true;
		return l;
	}
	return n;
}

static void hdr_free(struct curl_slist *l)
{
	for (struct curl_slist *p = l; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

static struct curl_slist *build_headers(struct s3_client *c, const struct s3_op *op,
					const struct cred *cr, int *rc)
{
	struct curl_slist *l = NULL;
	bool oom = false;
	/* S3 Express: a session's token has a header of its own */
	const char *tok_hdr = c->iam && !op->iam ? "x-amz-s3session-token"
						 : "x-amz-security-token";
	char amz_date[17], auth[S3_AUTH_MAX], meta_hdr[64];
	bool put_meta = op->meta_name && op->meta_value;
	struct timespec now;
	struct tm tm;

	*rc = TFS_OK;
	if (put_meta)
		snprintf(meta_hdr, sizeof(meta_hdr), "x-amz-meta-%s", op->meta_name);
	l = hdr_add(l, &oom, "Host: %s", c->req_host);
	if (cr && cr->kind == CRED_BEARER) {
		l = hdr_add(l, &oom, "Authorization: Bearer %s", cr->token);
	} else if (cr && cr->kind == CRED_KEYS) {
		/* x-amz-* headers must be signed: the metadata one too */
		struct sigv4_header sh[6] = {
			{ "host", c->req_host },
			{ "x-amz-content-sha256", op->payload_hash },
			{ "x-amz-date", amz_date },
			{ tok_hdr, cr->session_token },
			{ meta_hdr, op->meta_value },
			{ "x-amz-create-session-mode", op->session_mode },
		};
		struct sigv4_request req = {
			.method = op->method,
			.canonical_uri = op->path,
			.params = op->params,
			.n_params = op->n_params,
			.headers = sh,
			.n_headers = 3,
			.payload_hash = op->payload_hash,
			.amz_date = amz_date,
			.region = c->region,
			.service = c->iam ? "s3express" : "s3",
			.access_key = cr->access_key,
			.secret_key = cr->secret_key,
		};

		if (cr->session_token)
			req.n_headers = 4;
		if (put_meta)
			sh[req.n_headers++] = sh[4];
		if (op->session_mode)
			sh[req.n_headers++] = sh[5];
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
		*rc = sigv4_authorization(&req, auth, sizeof(auth));
		if (*rc) {
			hdr_free(l);
			return NULL;
		}
		l = hdr_add(l, &oom, "x-amz-date: %s", amz_date);
		l = hdr_add(l, &oom, "x-amz-content-sha256: %s", op->payload_hash);
		if (cr->session_token)
			l = hdr_add(l, &oom, "%s: %s", tok_hdr, cr->session_token);
		l = hdr_add(l, &oom, "Authorization: %s", auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (op->range)
		l = hdr_add(l, &oom, "Range: %s", op->range);
	if (op->if_match && c->dialect == S3_DIALECT_GCS && strncmp(op->if_match, "gen:", 4) == 0)
		l = hdr_add(l, &oom, "x-goog-if-generation-match: %s", op->if_match + 4);
	else if (op->if_match)
		l = hdr_add(l, &oom, "If-Match: %s", op->if_match);
	if (op->if_none_match)
		l = hdr_add(l, &oom, "If-None-Match: *");
	if (put_meta)
		l = hdr_add(l, &oom, "%s: %s", meta_hdr, op->meta_value);
	if (op->session_mode)
		l = hdr_add(l, &oom, "x-amz-create-session-mode: %s", op->session_mode);
	/* No 100-continue round trip, no form content type. */
	l = hdr_add(l, &oom, "Expect:");
	l = hdr_add(l, &oom, "Content-Type:");
	if (oom) {
		hdr_free(l);
		*rc = TFS_E_NOMEM;
		return NULL;
	}
	return l;
}

static bool setopts(struct s3_client *c, CURL *h, const struct s3_op *op,
		    struct s3_xfer *x, const char *url, struct curl_slist *hdrs)
{
	CURLcode e = CURLE_OK;

#define SET(opt, val) do { if (e == CURLE_OK) e = curl_easy_setopt(h, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_SHARE, c->share);
	SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SET(CURLOPT_PROTOCOLS_STR, c->scheme);
#endif
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_PATH_AS_IS, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	if (c->request_timeout_ms)
		SET(CURLOPT_TIMEOUT_MS, c->request_timeout_ms);
	SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SET(CURLOPT_LOW_SPEED_TIME, c->stall_s);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_bundle)
		SET(CURLOPT_CAINFO, c->ca_bundle);
	SET(CURLOPT_USERAGENT, "tierfs/" TIERFS_VERSION);
	SET(CURLOPT_HTTPHEADER, hdrs);
	SET(CURLOPT_HEADERFUNCTION, header_cb);
	SET(CURLOPT_HEADERDATA, x);
	/* 96 KiB reads instead of curl's 16 KiB: an 8 MiB chunk then costs
	 * ~86 recv calls and write callbacks, not ~512.  Below the daemon's
	 * mmap threshold (128 KiB, main.c) on purpose: curl allocates this
	 * buffer for each transfer and frees it after, and a buffer past the
	 * threshold was a fresh mapping each time (page faults while it
	 * fills, a TLB flush when freed).  Only a speed hint: curl 7.88
	 * refuses it on a reset handle that still holds its buffer (after a
	 * failed transfer), so its result is ignored on purpose. */
	(void)curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 96L * 1024);
	SET(CURLOPT_WRITEFUNCTION, write_cb);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_ERRORBUFFER, x->errbuf);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
	SET(CURLOPT_XFERINFODATA, x);
	if (strcmp(op->method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (strcmp(op->method, "PUT") == 0) {
		SET(CURLOPT_UPLOAD, 1L);
		SET(CURLOPT_READFUNCTION, read_cb);
		SET(CURLOPT_READDATA, x);
		SET(CURLOPT_SEEKFUNCTION, seek_cb);
		SET(CURLOPT_SEEKDATA, x);
		SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)op->body_len);
	} else if (strcmp(op->method, "GET") != 0) {
		SET(CURLOPT_CUSTOMREQUEST, op->method);
	}
#undef SET
	return e == CURLE_OK;
}

/* Map a failed curl_easy_perform(). */
static int classify_transport(CURL *h, CURLcode cc, const struct s3_xfer *x,
			      bool *retry, bool *connect)
{
	curl_off_t sent_us = 0;

	*retry = false;
	*connect = false;
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		*retry = *connect = true;
		return TFS_E_CONNECT;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
		*connect = true;
		return TFS_E_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		/* The connect timeout if the request never went out: that
		 * already took connect_timeout_ms, so no retry. */
		curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &sent_us);
		if (sent_us == 0 && x->status == 0) {
			*connect = true;
			return TFS_E_CONNECT;
		}
		*retry = true;
		return TFS_E_IO;
	case CURLE_WRITE_ERROR:
		if (x->header_over)
			return TFS_E_PROTO;
		if (x->dyn_over)
			return TFS_E_TOOBIG;
		if (x->overflow && !x->op->range)
			/* a whole object longer than the caller's buffer (the
			 * shared tier's GETs): an answer, of the wrong object */
			return TFS_E_PROTO;
		if (x->overflow || x->refused) {
			/* More than the range asked for, or a 200 with the
			 * whole object to a ranged GET: a proxy or a server
			 * having a bad moment, as a 503 is.  Retried; a server
			 * that always ignores Range costs the retry budget,
			 * then EIO. */
			*retry = true;
			return TFS_E_IO;
		}
		return TFS_E_NOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		*retry = x->stalled;
		return TFS_E_IO;
	case CURLE_OUT_OF_MEMORY:
		return TFS_E_NOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_BAD_FUNCTION_ARGUMENT:
		return TFS_E_INVAL;
	default:
		/* reset, recv/send errors, partial file, got nothing, stalls,
		 * HTTP/2 stream errors, weird replies (curl calls a garbled
		 * status line UNSUPPORTED_PROTOCOL, "HTTP/0.9"): all worth a
		 * retry on a fresh connection. */
		*retry = true;
		return x->header_over ? TFS_E_PROTO : TFS_E_IO;
	}
}

/* The credentials op is signed with: a directory bucket's own ones for
 * CreateSession, else the client's (its sessions, for such a bucket). */
static struct cred_provider *op_creds(const struct s3_client *c, const struct s3_op *op)
{
	return op->iam ? c->iam : c->creds;
}

/* One attempt.  *used: the credentials it was signed with (a reference
 * the caller drops), NULL when anonymous or when none could be had. */
static int attempt(struct s3_client *c, const struct s3_op *op, const char *url,
		   struct tfs_errinfo *ei, bool *retry, bool *connect, struct cred **used)
{
	struct s3_xfer x = { .op = op, .stall_ms = c->stall_ms };
	struct curl_slist *hdrs = NULL;
	struct cred_provider *creds = op_creds(c, op);
	struct cred *cr = NULL;
	int64_t t0 = 0;
	double took, wait;
	CURLcode cc;
	CURL *h;
	int rc;

	*retry = *connect = false;
	*used = NULL;
	tfs_errinfo_clear(ei);
	/* Before borrowing a handle: this may wait for a refresh.  A failure
	 * here was retried by the provider already. */
	if (creds) {
		rc = cred_provider_get(creds, &cr, ei);
		if (rc)
			return rc;
		*used = cr;
	}
	/* and for a token, when the store has asked to slow down */
	took = (double)mono_ns() / 1e9;
	wait = send_rate_take(c->rate, took);
	if (wait > 0) {
		struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };

		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	h = pool_get(c);
	if (!h)
		return TFS_E_NOMEM;
	/* Signed after the wait for a handle, so x-amz-date is fresh. */
	hdrs = build_headers(c, op, cr, &rc);
	if (!hdrs) {
		tfs_errinfo_set(ei, "cannot sign the request");
		rc = rc ? rc : TFS_E_NOMEM;
		goto out_handle;
	}
	curl_easy_reset(h);
	x.h = h;
	x.last_progress_ns = mono_ns();
	if (!setopts(c, h, op, &x, url, hdrs)) {
		tfs_errinfo_set(ei, "curl rejected an option");
		rc = TFS_E_INVAL;
		goto out_handle;
	}
	stat_add(&c->st_requests, 1);
	t0 = mono_ns();
	cc = curl_easy_perform(h);
	latency_hist_record(&c->st_latency, (uint64_t)(mono_ns() - t0));
	ei->http_status = (int)x.status;
	if (cc != CURLE_OK) {
		rc = classify_transport(h, cc, &x, retry, connect);
		tfs_errinfo_set(ei, "%s", x.errbuf[0] ? x.errbuf : curl_easy_strerror(cc));
		if (x.stalled)
			tfs_errinfo_set(ei, "no data moved for %ld ms", c->stall_ms);
		if (x.overflow)
			tfs_errinfo_set(ei, "server sent more than the %zu bytes asked for", op->rx_cap);
		if (x.refused)
			tfs_errinfo_set(ei, "server ignored the Range header (HTTP 200)");
		goto out_handle;
	}
	if (x.status < 200 || x.status >= 300) {
		if (x.dyn_len)
			s3_xml_parse_error(x.dyn, x.dyn_len, ei);
		ei->http_status = (int)x.status;
		rc = s3_error_map((int)x.status, ei->code, retry);
		if (rc == TFS_E_RANGE && op->empty_on_416) {
			/* S3 answers 416 to any range of an empty object: the
			 * object ends before the range, so there are 0 bytes. */
			tfs_errinfo_clear(ei);
			rc = TFS_OK;
		}
		goto out_handle;
	}
	rc = op->check ? op->check(op, &x, op->ctx, retry, ei) : TFS_OK;
out_handle:
	if (x.status > 0)   /* the store answered: a throttle, or not */
		send_rate_answer(c->rate, took, (double)mono_ns() / 1e9,
				 send_rate_is_throttle((int)x.status, ei->code));
	/* A handle stays in the pool whatever happened: curl drops a broken
	 * connection by itself and the next perform opens a new one.  Reset
	 * it so that no pointer into this stack frame outlives the call. */
	curl_easy_reset(h);
	pool_put(c, h);
	hdr_free(hdrs);
	free(x.dyn);
	return rc;
}

/* Run op with retries; returns the last attempt's result. */
static int s3_run(struct s3_client *c, struct s3_op *op, struct tfs_errinfo *ei)
{
	char *url = NULL;
	uint64_t rng = 0;
	unsigned tries = 0;
	int64_t started = mono_ns();
	bool retry, connect, renewed = false;
	struct cred_provider *creds = op_creds(c, op);
	int rc;

	op->client = c;
	if (asprintf(&url, "%s%s%s%s", c->base_url, op->path, op->query[0] ? "?" : "",
		     op->query) < 0)
		return TFS_E_NOMEM;
	for (;;) {
		struct cred *used = NULL;
		unsigned limit;

		rc = attempt(c, op, url, ei, &retry, &connect, &used);
		/* The server refused credentials we thought valid (revoked, or
		 * our clock is off): once per call, get new ones and try again
		 * at once, whatever the retry bound (that bound is for faults
		 * of the store, and a client without retries is one too). */
		if (rc == TFS_E_AUTH && used && ei->http_status && !renewed &&
		    cred_provider_refreshes(creds)) {
			cred_provider_invalidate(creds, used);
			cred_put(used);
			renewed = true;
			log_info("s3: %s %s: credentials refused (%s), getting new ones", op->method,
				 op->path, ei->code[0] ? ei->code : "no code");
			continue;
		}
		cred_put(used);
		if (rc == TFS_OK || !retry)
			break;
		limit = c->max_retries;
		if (connect && limit > S3_CONNECT_RETRIES)
			limit = S3_CONNECT_RETRIES;
		/* adaptive: a throttled call, paced from now on, is retried for
		 * as long as its retries could take at their longest, not for a
		 * count of them (each one paced may still meet the limit while
		 * the rate is being learned) */
		if (tries >= limit &&
		    !(c->adaptive && send_rate_is_throttle(ei->http_status, ei->code) &&
		      mono_ns() - started < (int64_t)limit * c->backoff_max_ms * 1000000))
			break;
		tries++;
		stat_add(&c->st_retries, 1);
		log_debug("s3: %s %s: %s (HTTP %d), retry %u of %u", op->method, op->path,
			  tfs_strerror(rc), ei->http_status, tries, limit);
		if (!rng)
			rng = rng_seed();
		backoff_sleep(c, tries, &rng);
	}
	if (rc < 0)
		stat_add(&c->st_errors, 1);
	free(url);
	return rc;
}

/* ---- operations ---- */

static int key_path(struct s3_client *c, const char *key, char **out)
{
	size_t kl, bl = strlen(c->bucket_path);
	char *p;

	*out = NULL;
	if (!key || !*key)
		return TFS_E_INVAL;
	kl = strlen(key);
	if (kl > S3_KEY_MAX)
		return TFS_E_NAMETOOLONG;
	p = malloc(bl + 1 + 3 * kl + 1);
	if (!p)
		return TFS_E_NOMEM;
	memcpy(p, c->bucket_path, bl);
	p[bl] = '/';
	sigv4_uri_encode(key, kl, 1, p + bl + 1, 3 * kl + 1);
	*out = p;
	return TFS_OK;
}

static const char *bucket_level_path(struct s3_client *c)
{
	return c->bucket_path[0] ? c->bucket_path : "/";
}

static int head_check(const struct s3_op *op, struct s3_xfer *x, void *ctx,
		      bool *retry, struct tfs_errinfo *ei)
{
	struct obj_meta *m = ctx;

	if (!x->have_len || x->etag_too_long) {
		tfs_errinfo_set(ei, "HEAD reply without a usable Content-Length or ETag");
		return TFS_E_PROTO;
	}
	m->size = x->content_length;
	m->mtime = 0;
	if (x->last_modified[0]) {
		time_t t = curl_getdate(x->last_modified, NULL);

		if (t != (time_t)-1)
			m->mtime = (int64_t)t;
	}
	if (x->generation[0] && op->client->dialect == S3_DIALECT_GCS)
		snprintf(m->etag, sizeof(m->etag), "gen:%s", x->generation);
	else
		snprintf(m->etag, sizeof(m->etag), "%s", x->have_etag ? x->etag : "");
	return TFS_OK;
}

static int s3_os_head(struct objstore *os, const char *key, struct obj_meta *out,
		      struct tfs_errinfo *ei)
{
	struct s3_client *c = (struct s3_client *)os;
	struct tfs_errinfo local;
	struct obj_meta m = { 0 };
	struct s3_op op = {
		.method = "HEAD", .query = "", .payload_hash = S3_EMPTY_SHA256,
		.rx = RX_NONE, .check = head_check, .ctx = &m,
	};
	char *path = NULL;
	int rc;

	tfs_errinfo_clear(&local);
	rc = key_path(c, key, &path);
	if (rc)
		goto out;
	op.path = path;
	stat_add(&c->st_heads, 1);
	rc = s3_run(c, &op, &local);
	if (rc == TFS_OK)
		*out = m;
out:
	free(path);
	if (ei)
		*ei = local;
	return rc;
}

struct get_ctx {
	uint64_t off;
	size_t len;
	size_t got;
};

static int get_check(const struct s3_op *op, struct s3_xfer *x, void *ctx,
		     bool *retry, struct tfs_errinfo *ei)
{
	struct get_ctx *g = ctx;
	uint64_t span;

	/* Every answer that does not prove it holds exactly the bytes asked
	 * for is a transient fault, retried like a 503: the next attempt
	 * usually gets a good one, and no byte of a bad one is kept. */
	if (x->status == 200) {
		/* The server ignored Range: fine for off == 0 when it all fit
		 * (the write callback refused anything else). */
		if (g->off != 0) {
			*retry = true;
			tfs_errinfo_set(ei, "server ignored the Range header");
			return TFS_E_IO;
		}
		if (x->have_len && x->content_length != x->rx_len) {
			*retry = true;
			tfs_errinfo_set(ei, "short body: %zu of %llu bytes", x->rx_len,
			       (unsigned long long)x->content_length);
			return TFS_E_IO;
		}
		g->got = x->rx_len;
		return TFS_OK;
	}
	if (x->status != 206 || !x->have_crange) {
		*retry = true;
		tfs_errinfo_set(ei, "HTTP %ld without Content-Range to a ranged GET", x->status);
		return TFS_E_IO;
	}
	if (x->cr_start != g->off || x->cr_end < x->cr_start || x->cr_end - g->off >= g->len ||
	    (x->crange_total_known && x->cr_end >= x->cr_total)) {
		*retry = true;
		tfs_errinfo_set(ei, "Content-Range %llu-%llu/%llu does not match the range asked for",
		       (unsigned long long)x->cr_start, (unsigned long long)x->cr_end,
		       (unsigned long long)x->cr_total);
		return TFS_E_IO;
	}
	span = x->cr_end - x->cr_start + 1;
	if (x->rx_len != span ||
	    (span < g->len && (!x->crange_total_known || x->cr_total != x->cr_end + 1))) {
		*retry = true;
		tfs_errinfo_set(ei, "short body: %zu bytes, range %llu-%llu of %llu", x->rx_len,
		       (unsigned long long)x->cr_start, (unsigned long long)x->cr_end,
		       (unsigned long long)x->cr_total);
		return TFS_E_IO;
	}
	g->got = (size_t)span;
	return TFS_OK;
}

static int s3_os_get_range(struct objstore *os, const char *key, const char *if_match,
			   uint64_t off, size_t len, void *buf, size_t *got,
			   struct tfs_errinfo *ei)
{
	struct s3_client *c = (struct s3_client *)os;
	struct tfs_errinfo local;
	struct get_ctx g = { .off = off, .len = len };
	char range[64], *path = NULL;
	struct s3_op op = {
		.method = "GET", .query = "", .range = range,
		.if_match = if_match && *if_match ? if_match : NULL,
		.payload_hash = S3_EMPTY_SHA256, .rx = RX_BUF, .rx_buf = buf,
		.rx_cap = len, .refuse_200 = off != 0, .empty_on_416 = off == 0,
		.check = get_check, .ctx = &g,
	};
	int rc;

	tfs_errinfo_clear(&local);
	*got = 0;
	rc = key_path(c, key, &path);
	if (rc)
		goto out;
	if (len == 0)
		goto out;      /* nothing to fetch: no request */
	if (!buf || (uint64_t)len - 1 > UINT64_MAX - off ||
	    (if_match && (strlen(if_match) >= OBJ_ETAG_MAX || strpbrk(if_match, "\r\n")))) {
		rc = TFS_E_INVAL;
		goto out;
	}
	snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	op.path = path;
	stat_add(&c->st_gets, 1);
	rc = s3_run(c, &op, &local);
	if (rc == TFS_OK) {
		*got = g.got;
		stat_add(&c->st_bytes, g.got);
	}
out:
	free(path);
	if (ei)
		*ei = local;
	return rc;
}

struct list_ctx {
	struct obj_list_page *page;
};

static int list_check(const struct s3_op *op, struct s3_xfer *x, void *ctx,
		      bool *retry, struct tfs_errinfo *ei)
{
	struct list_ctx *l = ctx;
	int rc;

	rc = s3_xml_parse_list_v(x->dyn, x->dyn_len, true,
				 op->client->dialect == S3_DIALECT_GCS,
				 &l->page);
	if (rc)
		tfs_errinfo_set(ei, "cannot parse the ListObjectsV2 reply");
	return rc;
}

static int s3_list(struct s3_client *c, const char *prefix, const char *delimiter,
		   const char *token, unsigned max_keys, struct obj_list_page **out,
		   struct tfs_errinfo *ei)
{
	struct sigv4_param params[6];
	struct list_ctx l = { 0 };
	struct s3_op op = {
		.method = "GET", .path = bucket_level_path(c), .params = params,
		.payload_hash = S3_EMPTY_SHA256, .rx = RX_DYN, .check = list_check,
		.ctx = &l,
	};
	char maxk[16], *query = NULL;
	size_t n = 0, qcap = 0;
	int rc = TFS_E_NOMEM;

	params[n++] = (struct sigv4_param){ "list-type", "2" };
	params[n++] = (struct sigv4_param){ "encoding-type", "url" };
	if (prefix && *prefix)
		params[n++] = (struct sigv4_param){ "prefix", prefix };
	if (delimiter && *delimiter)
		params[n++] = (struct sigv4_param){ "delimiter", delimiter };
	if (token && *token)
		params[n++] = (struct sigv4_param){ "continuation-token", token };
	if (max_keys) {
		snprintf(maxk, sizeof(maxk), "%u", max_keys);
		params[n++] = (struct sigv4_param){ "max-keys", maxk };
	}
	for (size_t i = 0; i < n; i++)
		qcap += 3 * (strlen(params[i].name) + strlen(params[i].value)) + 2;
	if (qcap > 64 * 1024) {
		tfs_errinfo_set(ei, "prefix, delimiter or token too long");
		return TFS_E_NAMETOOLONG;
	}
	query = malloc(qcap + 1);
	if (!query || sigv4_canonical_query(params, n, query, qcap + 1) < 0)
		goto out;
	op.query = query;
	op.n_params = n;
	stat_add(&c->st_lists, 1);
	rc = s3_run(c, &op, ei);
	if (rc == TFS_OK) {
		*out = l.page;
		l.page = NULL;
	}
out:
	obj_list_page_free(l.page);
	free(query);
	return rc;
}

static int s3_os_list(struct objstore *os, const char *prefix, const char *delimiter,
		      const char *token, unsigned max_keys, struct obj_list_page **out,
		      struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	int rc;

	*out = NULL;
	tfs_errinfo_clear(&local);
	rc = s3_list((struct s3_client *)os, prefix, delimiter, token, max_keys, out, &local);
	if (ei)
		*ei = local;
	return rc;
}

static int session_check(const struct s3_op *op, struct s3_xfer *x, void *ctx, bool *retry,
			 struct tfs_errinfo *ei)
{
	(void)op;
	(void)retry;
	return aws_creds_parse_session(x->dyn ? x->dyn : "", x->dyn_len, ctx, ei);
}

/* S3 Express's CreateSession: the source of an express client's session
 * credentials (a cred_provider fetch, so one at a time, renewed before
 * they expire). */
static int session_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	static const struct sigv4_param params[] = { { "session", "" } };
	struct s3_client *c = ctx;
	struct s3_op op = {
		.method = "GET", .path = bucket_level_path(c), .query = "session",
		.params = params, .n_params = 1, .iam = true,
		.session_mode = c->express_read_only ? "ReadOnly" : NULL,
		.payload_hash = S3_EMPTY_SHA256, .rx = RX_DYN, .check = session_check,
		.ctx = out,
	};
	int rc;

	*out = NULL;
	rc = s3_run(c, &op, ei);
	if (rc != TFS_OK) {
		cred_put(*out);
		*out = NULL;
		if (ei && strncmp(ei->message, "CreateSession", 13) != 0)
			cred_err_prefix(ei, "CreateSession");
	}
	return rc;
}

int s3_client_check(struct s3_client *c, const char *prefix, struct tfs_errinfo *ei)
{
	struct obj_list_page *page = NULL;
	struct tfs_errinfo local;
	int rc;

	tfs_errinfo_clear(&local);
	rc = s3_list(c, prefix, "/", NULL, 1, &page, &local);
	obj_list_page_free(page);
	/* A bucket-level 404 without a code can only be the bucket. */
	if (rc == TFS_E_NOENT)
		rc = TFS_E_NOBUCKET;
	if (ei)
		*ei = local;
	return rc;
}

struct put_ctx {
	char *etag_out;
};

static int put_check(const struct s3_op *op, struct s3_xfer *x, void *ctx,
		     bool *retry, struct tfs_errinfo *ei)
{
	struct put_ctx *p = ctx;

	if (p->etag_out)
		snprintf(p->etag_out, OBJ_ETAG_MAX, "%s", x->have_etag ? x->etag : "");
	return TFS_OK;
}

/* meta_name/meta_value: one x-amz-meta- header, or NULL; if_absent:
 * "If-None-Match: *". */
static int s3_put_path(struct s3_client *c, const char *path, const void *body,
		       size_t len, const char *meta_name, const char *meta_value,
		       bool if_absent, char *etag_out, struct tfs_errinfo *ei)
{
	struct put_ctx p = { .etag_out = etag_out };
	char hash[65];
	struct s3_op op = {
		.method = "PUT", .path = path, .query = "", .body = body,
		.body_len = len, .payload_hash = hash, .rx = RX_NONE,
		.if_none_match = if_absent, .meta_name = meta_name,
		.meta_value = meta_value, .check = put_check, .ctx = &p,
	};

	if (len && !body)
		return TFS_E_INVAL;
	sigv4_sha256_hex(len ? body : "", len, hash);
	return s3_run(c, &op, ei);
}

int s3_client_put(struct s3_client *c, const char *key, const void *body, size_t len,
		  char *etag_out, struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	char *path = NULL;
	int rc;

	tfs_errinfo_clear(&local);
	rc = key_path(c, key, &path);
	if (rc == TFS_OK)
		rc = s3_put_path(c, path, body, len, NULL, NULL, false, etag_out, &local);
	free(path);
	if (ei)
		*ei = local;
	return rc;
}

/* A user-metadata name we put in a header: [a-z0-9-], 1..32 bytes; its
 * value printable ASCII without leading or trailing blanks. */
static bool meta_ok(const char *name, const char *value)
{
	size_t n = name ? strlen(name) : 0, vl = value ? strlen(value) : 0;

	if (n == 0 || n > 32 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
		return false;
	if (!value)
		return true;
	if (vl == 0 || vl >= S3_META_MAX || value[0] == ' ' || value[vl - 1] == ' ')
		return false;
	for (size_t i = 0; i < vl; i++)
		if (value[i] < 0x20 || value[i] > 0x7e)
			return false;
	return true;
}

int s3_client_put_meta(struct s3_client *c, const char *key, const void *body, size_t len,
		       const char *meta_name, const char *meta_value, bool if_absent,
		       struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	char *path = NULL;
	int rc;

	tfs_errinfo_clear(&local);
	rc = key_path(c, key, &path);
	if (rc == TFS_OK && (!meta_ok(meta_name, meta_value) || !meta_value))
		rc = TFS_E_INVAL;
	if (rc == TFS_OK)
		rc = s3_put_path(c, path, body, len, meta_name, meta_value, if_absent, NULL,
				 &local);
	free(path);
	if (ei)
		*ei = local;
	return rc;
}

struct get_meta_ctx {
	size_t got;
	char *meta_out;
	size_t meta_cap;
};

static int get_meta_check(const struct s3_op *op, struct s3_xfer *x, void *ctx, bool *retry,
			  struct tfs_errinfo *ei)
{
	struct get_meta_ctx *g = ctx;

	(void)op;
	if (x->status != 200 || !x->have_len) {
		tfs_errinfo_set(ei, "HTTP %ld without Content-Length to a GET", x->status);
		return TFS_E_PROTO;
	}
	if (x->content_length != x->rx_len) {
		*retry = true;
		tfs_errinfo_set(ei, "short body: %zu of %llu bytes", x->rx_len,
				(unsigned long long)x->content_length);
		return TFS_E_IO;
	}
	g->got = x->rx_len;
	snprintf(g->meta_out, g->meta_cap, "%s", x->meta);
	return TFS_OK;
}

int s3_client_get_meta(struct s3_client *c, const char *key, const char *meta_name, void *buf,
		       size_t cap, size_t *got, char *meta_out, size_t meta_cap,
		       struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	struct get_meta_ctx g = { .meta_out = meta_out, .meta_cap = meta_cap };
	char *path = NULL;
	int rc;

	tfs_errinfo_clear(&local);
	*got = 0;
	if (meta_cap)
		meta_out[0] = '\0';
	rc = key_path(c, key, &path);
	if (rc == TFS_OK && (!meta_ok(meta_name, NULL) || !buf || !cap || !meta_cap))
		rc = TFS_E_INVAL;
	if (rc == TFS_OK) {
		struct s3_op op = {
			.method = "GET", .path = path, .query = "", .meta_name = meta_name,
			.payload_hash = S3_EMPTY_SHA256, .rx = RX_BUF, .rx_buf = buf,
			.rx_cap = cap, .check = get_meta_check, .ctx = &g,
		};

		stat_add(&c->st_gets, 1);
		rc = s3_run(c, &op, &local);
		if (rc == TFS_OK) {
			*got = g.got;
			stat_add(&c->st_bytes, g.got);
		}
	}
	free(path);
	if (ei)
		*ei = local;
	return rc;
}

/* DELETE path (encoded): an object, or the bucket itself. */
static int delete_path(struct s3_client *c, const char *path, struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	struct s3_op op = {
		.method = "DELETE", .path = path, .query = "",
		.payload_hash = S3_EMPTY_SHA256, .rx = RX_NONE,
	};
	int rc;

	tfs_errinfo_clear(&local);
	rc = s3_run(c, &op, &local);
	if (ei)
		*ei = local;
	return rc;
}

int s3_client_delete(struct s3_client *c, const char *key, struct tfs_errinfo *ei)
{
	char *path = NULL;
	int rc = key_path(c, key, &path);

	if (rc == TFS_OK)
		rc = delete_path(c, path, ei);
	else if (ei)
		tfs_errinfo_clear(ei);
	free(path);
	return rc;
}

int s3_client_delete_bucket(struct s3_client *c, struct tfs_errinfo *ei)
{
	return delete_path(c, bucket_level_path(c), ei);
}

int s3_client_create_bucket(struct s3_client *c, struct tfs_errinfo *ei)
{
	struct tfs_errinfo local;
	char *body = NULL;
	size_t len = 0;
	int rc;

	tfs_errinfo_clear(&local);
	/* AWS wants the region spelled out outside us-east-1; other servers
	 * (radosgw zonegroups) may not know AWS region names, so only AWS
	 * gets the body. */
	if (c->aws && strcmp(c->region, "us-east-1") != 0) {
		if (asprintf(&body, "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/"
			     "doc/2006-03-01/\"><LocationConstraint>%s</LocationConstraint>"
			     "</CreateBucketConfiguration>", c->region) < 0) {
			rc = TFS_E_NOMEM;
			goto out;
		}
		len = strlen(body);
	}
	rc = s3_put_path(c, bucket_level_path(c), body, len, NULL, NULL, false, NULL, &local);
	if (rc != TFS_OK && strcmp(local.code, "BucketAlreadyOwnedByYou") == 0)
		rc = TFS_OK;
out:
	free(body);
	if (ei)
		*ei = local;
	return rc;
}

void s3_client_parse_headers(const char *buf, size_t len, struct s3_headers_seen *out)
{
	struct s3_op op;   /* a GET that asks for a metadata header, as the
			    * shared tier's do: every branch of header_cb */
	struct s3_xfer x;
	size_t pos = 0;

	memset(&op, 0, sizeof(op));
	op.meta_name = "tierfs-sum";
	memset(&x, 0, sizeof(x));
	x.op = &op;
	while (pos < len && !x.header_over) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) + 1 : len - pos;

		/* curl's header callback gets a writable buffer */
		char *line = malloc(n ? n : 1);

		if (!line)
			break;
		memcpy(line, buf + pos, n);
		if (header_cb(line, 1, n, &x) != n)
			x.header_over = true;
		free(line);
		pos += n;
	}
	memset(out, 0, sizeof(*out));
	out->status = x.status;
	out->over = x.header_over;
	out->have_len = x.have_len;
	out->content_length = x.content_length;
	out->have_etag = x.have_etag;
	out->etag_too_long = x.etag_too_long;
	memcpy(out->etag, x.etag, sizeof(out->etag));
	memcpy(out->last_modified, x.last_modified, sizeof(out->last_modified));
	memcpy(out->generation, x.generation, sizeof(out->generation));
	out->have_crange = x.have_crange;
	out->crange_total_known = x.crange_total_known;
	out->cr_start = x.cr_start;
	out->cr_end = x.cr_end;
	out->cr_total = x.cr_total;
}
