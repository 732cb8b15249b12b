/* faultproxy.c - HTTP/1.1 fault-injecting, network-shaping proxy for tests.
 *
 * tierfs-faultproxy sits on loopback between an S3 client (tierfs, curl) and
 * radosgw. Tests arm faults and shaping through /__proxy/... requests on the
 * same port; everything else is forwarded. See usage() for the CLI and
 * control_handle() for the control API.
 *
 * Shaping makes one machine look like a network to S3: a first-byte delay
 * per request, a bandwidth cap per client connection, and a request rate
 * over all connections above which requests get S3's 503 SlowDown (as S3
 * does per prefix). --s3-like presets the first two to S3_LIKE_LATENCY_MS
 * and S3_LIKE_BANDWIDTH: ~20 ms to the first byte and ~90 MB/s per
 * connection, what one connection to S3 in the same region gets. With
 * shaping off the proxy must not be the bottleneck: scripts/bench/proxy.sh
 * measures it against radosgw directly. (Relaying bodies with splice(2)
 * through a pipe was tried and measured slower on loopback: it saves the
 * proxy's two copies but hands the reader skbs of many small page frags,
 * which cost curl more than the copies cost the proxy.)
 *
 * Invariants:
 *  - A request goes upstream byte for byte except for its Connection header,
 *    which becomes "Connection: close": every other header may be SigV4-signed.
 *    Each request gets a new upstream connection, so the upstream closing it
 *    is the one sure end of a response.
 *  - A client connection is kept alive only while the proxy knows where each
 *    response ends (Content-Length, chunked, or no body) and the request body
 *    was consumed exactly; otherwise it is closed after the response.
 *  - Response heads may be rewritten (their Connection header), request heads
 *    never beyond the above; bodies are streamed, never buffered whole.
 *  - Everything is bounded: MAX_CONNS client threads, each with one BUF_SIZE
 *    buffer per direction and HEAD_MAX per head; MAX_RULES armed rules;
 *    IO_TIMEOUT_S on every blocking socket call.
 *  - Counters are atomics, GETs by target under proxy.gets_lock (a table of
 *    GETS_TABLE targets); rules are under proxy.lock; the request-rate
 *    bucket is under proxy.rate_lock; the other shaping settings are
 *    atomics read once per request. Control requests are never shaped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem, accept4; meson passes it already */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (256 * 1024)
#define HEAD_MAX (64 * 1024)
#define HEAD_SLACK 64		/* room for an added "Connection: close" */
#define MAX_CONNS 1024
#define MAX_RULES 64
#define GETS_TABLE 16384	/* object targets counted one by one (a power of two) */
#define IO_TIMEOUT_S 300
#define DRAIN_MS 1000		/* graceful close: read leftovers this long */
#define DRAIN_BYTES (4 << 20)
#define RST_WAIT_MS 2000	/* reset fault: wait this long for unacked data */
#define S3_LIKE_LATENCY_MS 20
#define S3_LIKE_BANDWIDTH 90000000	/* bytes/s per connection */

/* Faults of a response's validity (the answer is complete and well framed
 * but does not hold what was asked): NORANGE drops the request's Range
 * header, so a ranged GET gets 200 and the whole object; BAD_CRANGE
 * shifts the Content-Range by one byte; EXTRA sends `after` (default 1000)
 * more bytes than upstream did, counted in the Content-Length.  429 is
 * S3's and GCS's "too many requests". */
enum fault_kind {
	FAULT_NONE, FAULT_503, FAULT_500, FAULT_RESET, FAULT_TRUNCATE,
	FAULT_STALL, FAULT_RESET_BEFORE, FAULT_429, FAULT_NORANGE, FAULT_BAD_CRANGE,
	FAULT_EXTRA, FAULT_403, FAULT_KIND_COUNT
};
static const char *const fault_names[FAULT_KIND_COUNT] = {
	[FAULT_503] = "503", [FAULT_500] = "500", [FAULT_RESET] = "reset",
	[FAULT_TRUNCATE] = "truncate", [FAULT_STALL] = "stall",
	[FAULT_RESET_BEFORE] = "reset_before", [FAULT_429] = "429",
	[FAULT_NORANGE] = "norange", [FAULT_BAD_CRANGE] = "bad_crange",
	[FAULT_EXTRA] = "extra", [FAULT_403] = "403",
};
#define EXTRA_DEFAULT 1000

enum stat_idx {
	ST_REQUESTS, ST_GET, ST_HEAD, ST_PUT, ST_POST, ST_DELETE, ST_FAULTS,
	ST_BYTES_DOWN, ST_OBJECT_GET, ST_SLOWDOWNS, ST_OBJECT_BYTES, ST_COUNT
};
static const char *const stat_names[ST_COUNT] = {
	"requests", "GET", "HEAD", "PUT", "POST", "DELETE", "faults", "bytes_down",
	"object_GET",   /* GETs of an object (path-style /BUCKET/KEY, no query): not LISTs */
	"slowdowns",    /* requests refused with 503 SlowDown by the request rate */
	"object_bytes", /* body bytes relayed in answer to object GETs: no heads, no LISTs */
};

/* An armed rule; kind FAULT_NONE marks a free slot.  A matching request
 * takes a shot with probability pct/100; a rule with for_ms lasts that
 * long from its arming (whatever its count), so "every request for 5 s"
 * is one rule. */
struct rule {
	enum fault_kind kind;
	long long count;
	long long pct;		/* 1..100 */
	int64_t until_ns;	/* 0: no time limit */
	uint64_t rng;		/* xorshift state for pct */
	char method[16];	/* "" matches any method */
	char path[1024];	/* substring of the request target, "" any */
	long long after;	/* body bytes relayed first; -1: half of Content-Length */
	long long ms;		/* stall duration */
};

struct proxy {
	struct sockaddr_in upstream;
	pthread_mutex_t lock;	/* guards rules */
	struct rule rules[MAX_RULES];
	atomic_llong latency_ms;
	atomic_llong bandwidth;	/* bytes/s per connection, 0 = unlimited */
	pthread_mutex_t rate_lock;	/* guards the request-rate bucket below */
	long long req_rate;	/* requests/s admitted, 0 = unlimited */
	long long req_burst;	/* bucket size; 0 = req_rate (one second's worth) */
	double rate_tokens;
	int64_t rate_last_ns;
	atomic_int nconns;
	atomic_ullong stats[ST_COUNT];
	/* object GETs by target (FNV-1a of it), open addressing; a full
	 * table counts no new target (the answer says so) */
	pthread_mutex_t gets_lock;
	struct target_count { uint64_t hash; unsigned long long n; } gets[GETS_TABLE];
	bool gets_full;
};

struct request {
	char method[16];
	const char *target;	/* points into conn.qhead, not NUL-terminated */
	size_t target_len;
	long long clen;		/* request body bytes (0 if no Content-Length) */
	bool client_close;	/* Connection: close, or HTTP/1.0 */
};

enum close_mode { CLOSE_GRACEFUL, CLOSE_RST };

struct conn {
	struct proxy *px;
	int fd;
	enum close_mode close_mode;
	size_t in_off, in_len;	/* in[in_off, in_len): client bytes not consumed */
	size_t qhead_len;
	long long tb_rate;	/* token bucket of the response shaping */
	double tb_tokens;
	int64_t tb_last_ns;
	char in[BUF_SIZE];
	char out[BUF_SIZE];
	char qhead[HEAD_MAX + HEAD_SLACK];	/* request head as sent upstream */
	char rhead[HEAD_MAX];	/* response head being collected */
	char whead[HEAD_MAX + HEAD_SLACK];	/* response head as sent to the client */
};

/* State of relaying one upstream response to the client. */
struct relay {
	bool final;		/* the final (non-1xx) head has been relayed */
	bool done;		/* the response is complete */
	bool keep;		/* client connection may carry another request */
	bool cut;		/* the fault's byte limit was reached */
	bool failed;		/* client gone, or upstream garbage after bytes sent */
	bool sent_any;
	bool object;		/* the request is an object GET (is_object_get) */
	size_t rhead_len;
	long long clen;		/* -1: unknown */
	long long body_sent;
	long long limit;	/* -1: no fault limit */
	long long extra;	/* FAULT_EXTRA: junk bytes sent after the body */
};

struct fault {
	enum fault_kind kind;
	long long after;
	long long ms;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	ts.tv_sec = ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void set_sock_opts(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Parses a decimal in [0, LLONG_MAX/2]; -1 if s[0, n) is not one. */
static long long parse_num(const char *s, size_t n)
{
	long long v = 0;

	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static const char *memmem_crlf2(const char *p, size_t n)
{
	return memmem(p, n, "\r\n\r\n", 4);
}

/* Next CRLF at or after p; the caller knows there is one (a whole head ends
 * in CRLFCRLF), so no length is needed. */
static const char *next_crlf(const char *p)
{
	while (p[0] != '\r' || p[1] != '\n')
		p++;
	return p;
}

/* If line[0, n) is header `name`, points *val, *vlen at its trimmed value. */
static bool header_is(const char *line, size_t n, const char *name,
		      const char **val, size_t *vlen)
{
	size_t nl = strlen(name);

	if (n <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
		return false;
	line += nl + 1;
	n -= nl + 1;
	while (n > 0 && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	*val = line;
	*vlen = n;
	return true;
}

/* Case-insensitive search for token `tok` in v[0, n). */
static bool value_has(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i + tl <= n; i++)
		if (strncasecmp(v + i, tok, tl) == 0)
			return true;
	return false;
}

/* ---- client side: reading requests, local answers, closing ------------ */

/* Reads until in[in_off..] holds a whole head. Returns its length, 0 on a
 * clean EOF before any byte, -1 on error/EOF mid-head, -2 if too large. */
static long conn_read_head(struct conn *c)
{
	for (;;) {
		const char *p = c->in + c->in_off;
		size_t have = c->in_len - c->in_off;
		const char *e = memmem_crlf2(p, have);
		ssize_t k;

		if (e)
			return (long)(e + 4 - p) <= HEAD_MAX ? (long)(e + 4 - p) : -2;
		if (have >= HEAD_MAX)
			return -2;
		if (c->in_off > 0) {
			memmove(c->in, p, have);
			c->in_off = 0;
			c->in_len = have;
		}
		k = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return (k == 0 && have == 0) ? 0 : -1;
		c->in_len += (size_t)k;
	}
}

/* Points *p at up to `max` next bytes of the client stream (buffered first).
 * Returns their count, 0 on EOF, -1 on error. */
static ssize_t conn_body_chunk(struct conn *c, const char **p, size_t max)
{
	ssize_t k;

	if (c->in_off == c->in_len) {
		c->in_off = c->in_len = 0;
		do
			k = recv(c->fd, c->in, sizeof(c->in), 0);
		while (k < 0 && errno == EINTR);
		if (k <= 0)
			return k;
		c->in_len = (size_t)k;
	}
	k = (ssize_t)(c->in_len - c->in_off < max ? c->in_len - c->in_off : max);
	*p = c->in + c->in_off;
	c->in_off += (size_t)k;
	return k;
}

/* Reads and drops n body bytes; false if the client went away first. */
static bool conn_drain_body(struct conn *c, long long n)
{
	const char *p;

	while (n > 0) {
		ssize_t k = conn_body_chunk(c, &p, n < BUF_SIZE ? (size_t)n : BUF_SIZE);

		if (k <= 0)
			return false;
		n -= k;
	}
	return true;
}

/* Sends a response made by the proxy itself. */
/* A HEAD request's answer carries the body's Content-Length but never the
 * body itself: a kept-alive client would read those bytes as the next
 * response. */
static int conn_send_local(struct conn *c, int code, const char *reason,
			   const char *ctype, const char *body, bool close, bool is_head)
{
	char head[512];
	size_t blen = strlen(body);
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\n%s\r\n",
			 code, reason, ctype, blen, close ? "Connection: close\r\n" : "");

	if (send_all(c->fd, head, (size_t)n) < 0 || (!is_head && send_all(c->fd, body, blen) < 0))
		return -1;
	return 0;
}

/* Closes the client: with RST, or after our FIN and a short bounded read of
 * leftovers (closing with unread data would turn the FIN into an RST and
 * could destroy the response we just sent). */
static void conn_close(struct conn *c)
{
	if (c->close_mode == CLOSE_RST) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	} else if (shutdown(c->fd, SHUT_WR) == 0) {
		int64_t deadline = now_ns() + (int64_t)DRAIN_MS * 1000000;
		size_t drained = 0;

		while (drained < DRAIN_BYTES) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			int64_t left = deadline - now_ns();
			ssize_t k;

			if (left <= 0 || poll(&pfd, 1, (int)(left / 1000000) + 1) <= 0)
				break;
			k = recv(c->fd, c->in, sizeof(c->in), MSG_DONTWAIT);
			if (k <= 0)
				break;
			drained += (size_t)k;
		}
	}
	close(c->fd);
}

/* Parses the head in[in_off, +len) into *rq and writes the upstream version
 * (Connection: close) to c->qhead. Returns 0, or 400/501 to refuse it. */
static int request_parse(struct conn *c, size_t len, struct request *rq)
{
	const char *h = c->in + c->in_off, *end = h + len - 2, *line, *eol, *sp;
	char *q = c->qhead;
	const char *v;
	size_t vl, ml;
	bool seen_clen = false;

	memset(rq, 0, sizeof(*rq));
	eol = next_crlf(h);
	sp = memchr(h, ' ', (size_t)(eol - h));
	if (!sp || (ml = (size_t)(sp - h)) == 0 || ml >= sizeof(rq->method))
		return 400;
	for (size_t i = 0; i < ml; i++)
		if (h[i] < 'A' || h[i] > 'Z')
			return 400;
	memcpy(rq->method, h, ml);
	rq->target = c->qhead + ml + 1;
	line = sp + 1;
	sp = memchr(line, ' ', (size_t)(eol - line));
	if (!sp || sp == line || line[0] != '/' || memchr(line, '\t', (size_t)(sp - line)))
		return 400;
	rq->target_len = (size_t)(sp - line);
	if (eol - sp - 1 != 8 || strncmp(sp + 1, "HTTP/1.", 7) != 0 ||
	    (sp[8] != '0' && sp[8] != '1'))
		return 400;
	rq->client_close = sp[8] == '0';
	memcpy(q, h, (size_t)(eol + 2 - h));
	q += eol + 2 - h;
	for (line = eol + 2; line < end; line = eol + 2) {
		size_t n;

		eol = next_crlf(line);
		n = (size_t)(eol - line);
		if (n == 0 || line[0] == ' ' || line[0] == '\t' || !memchr(line, ':', n))
			return 400;
		if (header_is(line, n, "Connection", &v, &vl)) {
			if (value_has(v, vl, "close"))
				rq->client_close = true;
			continue;	/* replaced below */
		}
		if (header_is(line, n, "Transfer-Encoding", &v, &vl))
			return 501;
		if (header_is(line, n, "Content-Length", &v, &vl)) {
			long long cl = parse_num(v, vl);

			if (cl < 0 || (seen_clen && cl != rq->clen))
				return 400;
			rq->clen = cl;
			seen_clen = true;
		}
		memcpy(q, line, n + 2);
		q += n + 2;
	}
	memcpy(q, "Connection: close\r\n\r\n", 21);
	c->qhead_len = (size_t)(q + 21 - c->qhead);
	return 0;
}

/* ---- request rate ---------------------------------------------------- */

/* One token bucket over all connections, as S3 limits a prefix rather than
 * a connection: it refills at req_rate tokens/s up to the burst, and each
 * request takes a token or is refused. A refused request takes none, so a
 * client retrying with backoff gets through at the rate. Changing the rate
 * or burst refills the bucket, which makes a test's first requests
 * predictable: exactly `burst` of them pass at once. */
static void rate_set(struct proxy *px, long long rate, long long burst)
{
	pthread_mutex_lock(&px->rate_lock);
	px->req_rate = rate;
	px->req_burst = burst;
	px->rate_tokens = (double)(burst ? burst : rate);
	px->rate_last_ns = now_ns();
	pthread_mutex_unlock(&px->rate_lock);
}

/* Takes a token for one request; false if it must get 503 SlowDown. */
static bool rate_admit(struct proxy *px)
{
	bool ok = true;

	pthread_mutex_lock(&px->rate_lock);
	if (px->req_rate > 0) {
		double cap = (double)(px->req_burst ? px->req_burst : px->req_rate);
		int64_t t = now_ns();

		px->rate_tokens += (double)(t - px->rate_last_ns) * (double)px->req_rate / 1e9;
		if (px->rate_tokens > cap)
			px->rate_tokens = cap;
		px->rate_last_ns = t;
		ok = px->rate_tokens >= 1.0;
		if (ok)
			px->rate_tokens -= 1.0;
	}
	pthread_mutex_unlock(&px->rate_lock);
	return ok;
}

/* ---- rules and control endpoint -------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Takes one shot of the first rule matching the request; kind NONE if none.
 * A rule whose time is up is freed; one that lost its pct draw lets the
 * request go on to the next rules. */
static struct fault rules_take(struct proxy *px, const struct request *rq)
{
	struct fault f = { .kind = FAULT_NONE };
	int64_t t = now_ns();

	pthread_mutex_lock(&px->lock);
	for (int i = 0; i < MAX_RULES; i++) {
		struct rule *r = &px->rules[i];
		size_t pl = strlen(r->path);

		if (r->kind != FAULT_NONE && r->until_ns && t >= r->until_ns)
			r->kind = FAULT_NONE;
		if (r->kind == FAULT_NONE ||
		    (r->method[0] && strcmp(r->method, rq->method) != 0) ||
		    (pl && !memmem(rq->target, rq->target_len, r->path, pl)))
			continue;
		if (r->pct < 100 && (long long)(xorshift(&r->rng) % 100) >= r->pct)
			continue;
		f = (struct fault){ .kind = r->kind, .after = r->after, .ms = r->ms };
		if (!r->until_ns && --r->count <= 0)
			r->kind = FAULT_NONE;
		break;
	}
	pthread_mutex_unlock(&px->lock);
	return f;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
		return (ch | 0x20) - 'a' + 10;
	return -1;
}

/* Finds key in query q[0, n) and percent-decodes its value into val.
 * Returns 1 if found, 0 if absent, -1 if malformed or too long. */
static int query_get(const char *q, size_t n, const char *key, char *val, size_t vsize)
{
	size_t kl = strlen(key);

	for (const char *p = q, *end = q + n; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;
		size_t o = 0;

		if ((size_t)(pe - p) > kl && p[kl] == '=' && strncmp(p, key, kl) == 0) {
			for (const char *s = p + kl + 1; s < pe; s++) {
				int ch = (unsigned char)*s;

				if (ch == '%') {
					if (pe - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0)
						return -1;
					ch = hexval(s[1]) * 16 + hexval(s[2]);
					s += 2;
				}
				if (o + 1 >= vsize || ch == 0)
					return -1;
				val[o++] = (char)ch;
			}
			val[o] = '\0';
			return 1;
		}
		p = pe + 1;
	}
	return 0;
}

/* Reads numeric parameter key into *out (unchanged if absent). */
static bool query_num(const char *q, size_t n, const char *key, long long *out)
{
	char buf[32];
	int rc = query_get(q, n, key, buf, sizeof(buf));

	if (rc == 0)
		return true;
	if (rc < 0 || (*out = parse_num(buf, strlen(buf))) < 0)
		return false;
	return true;
}

static bool query_has(const char *q, size_t n, const char *key)
{
	char buf[32];

	return query_get(q, n, key, buf, sizeof(buf)) != 0;
}

static int control_fault(struct proxy *px, const char *q, size_t qn, char *msg, size_t msize)
{
	struct rule r = { .count = 1, .after = -1, .ms = 30000, .pct = 100 };
	long long for_ms = 0;
	char kind[16];
	int i;

	if (query_get(q, qn, "kind", kind, sizeof(kind)) != 1)
		return snprintf(msg, msize, "missing kind\n"), 400;
	for (i = 1; i < FAULT_KIND_COUNT && strcmp(kind, fault_names[i]) != 0; i++)
		;
	if (i == FAULT_KIND_COUNT)
		return snprintf(msg, msize, "unknown kind %s\n", kind), 400;
	r.kind = (enum fault_kind)i;
	if (!query_num(q, qn, "count", &r.count) || r.count < 1 ||
	    !query_num(q, qn, "after", &r.after) || !query_num(q, qn, "ms", &r.ms) ||
	    !query_num(q, qn, "pct", &r.pct) || r.pct < 1 || r.pct > 100 ||
	    !query_num(q, qn, "for_ms", &for_ms) ||
	    query_get(q, qn, "method", r.method, sizeof(r.method)) < 0 ||
	    query_get(q, qn, "path", r.path, sizeof(r.path)) < 0)
		return snprintf(msg, msize, "bad parameter\n"), 400;
	if (for_ms > 0)
		r.until_ns = now_ns() + for_ms * 1000000;
	r.rng = (uint64_t)now_ns() | 1;
	pthread_mutex_lock(&px->lock);
	for (i = 0; i < MAX_RULES && px->rules[i].kind != FAULT_NONE; i++)
		;
	if (i < MAX_RULES)
		px->rules[i] = r;
	pthread_mutex_unlock(&px->lock);
	if (i == MAX_RULES)
		return snprintf(msg, msize, "too many rules (max %d)\n", MAX_RULES), 400;
	snprintf(msg, msize, "armed %s count %lld\n", kind, r.count);
	return 200;
}

static uint64_t target_hash(const char *t, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)t[i]) * 1099511628211ull;
	return h ? h : 1;	/* 0 marks a free entry */
}

/* The entry of target hash h (lock held): the one found, else, with add,
 * a new one; NULL when absent and not added (add false, or the table
 * full: then gets_full is set). */
static struct target_count *gets_entry(struct proxy *px, uint64_t h, bool add)
{
	for (size_t i = 0; i < GETS_TABLE; i++) {
		struct target_count *e = &px->gets[(h + i) & (GETS_TABLE - 1)];

		if (e->hash == h)
			return e;
		if (e->hash == 0) {
			if (!add)
				return NULL;
			e->hash = h;
			return e;
		}
	}
	if (add)
		px->gets_full = true;
	return NULL;
}

/* Answers a /__proxy/ request:
 *   fault?kind=K[&count=N][&method=M][&path=SUBSTR][&after=BYTES][&ms=MS]
 *        [&pct=P][&for_ms=MS]
 *   clear   stats   reset_stats (the counters, and the GETs by target)
 *   gets?target=/BUCKET/KEY  object GETs of that target since the last reset
 *   shape[?latency_ms=N][&bandwidth=BYTES_PER_SEC][&req_rate=N][&req_burst=N]
 *     (absent parameters keep their value; 0 turns one off; req_burst 0 is
 *     one second's worth; the answer lists all four)
 * Writes a text/plain body into msg; returns the status code. */
static int control_handle(struct proxy *px, const struct request *rq, char *msg, size_t msize)
{
	const char *name = rq->target + 9, *end = rq->target + rq->target_len;
	const char *qm = memchr(name, '?', (size_t)(end - name));
	const char *q = qm ? qm + 1 : end;
	size_t nl = (size_t)((qm ? qm : end) - name), qn = (size_t)(end - q);
	size_t o = 0;

	if (nl == 5 && memcmp(name, "fault", 5) == 0)
		return control_fault(px, q, qn, msg, msize);
	if (nl == 5 && memcmp(name, "clear", 5) == 0) {
		pthread_mutex_lock(&px->lock);
		for (int i = 0; i < MAX_RULES; i++)
			px->rules[i].kind = FAULT_NONE;
		pthread_mutex_unlock(&px->lock);
		snprintf(msg, msize, "cleared\n");
		return 200;
	}
	if (nl == 5 && memcmp(name, "stats", 5) == 0) {
		for (int i = 0; i < ST_COUNT && o < msize; i++)
			o += (size_t)snprintf(msg + o, msize - o, "%s %llu\n", stat_names[i],
					      (unsigned long long)atomic_load(&px->stats[i]));
		return 200;
	}
	if (nl == 4 && memcmp(name, "gets", 4) == 0) {
		char target[1024];
		struct target_count *e;
		unsigned long long n;
		bool full;

		if (query_get(q, qn, "target", target, sizeof(target)) != 1)
			return snprintf(msg, msize, "bad parameter\n"), 400;
		pthread_mutex_lock(&px->gets_lock);
		e = gets_entry(px, target_hash(target, strlen(target)), false);
		n = e ? e->n : 0;
		full = px->gets_full;
		pthread_mutex_unlock(&px->gets_lock);
		if (full)
			return snprintf(msg, msize, "too many targets (max %d)\n", GETS_TABLE), 507;
		snprintf(msg, msize, "%llu\n", n);
		return 200;
	}
	if (nl == 11 && memcmp(name, "reset_stats", 11) == 0) {
		for (int i = 0; i < ST_COUNT; i++)
			atomic_store(&px->stats[i], 0);
		pthread_mutex_lock(&px->gets_lock);
		memset(px->gets, 0, sizeof(px->gets));
		px->gets_full = false;
		pthread_mutex_unlock(&px->gets_lock);
		snprintf(msg, msize, "stats reset\n");
		return 200;
	}
	if (nl == 5 && memcmp(name, "shape", 5) == 0) {
		long long lat = atomic_load(&px->latency_ms), bw = atomic_load(&px->bandwidth);
		long long rate, burst;

		pthread_mutex_lock(&px->rate_lock);
		rate = px->req_rate;
		burst = px->req_burst;
		pthread_mutex_unlock(&px->rate_lock);
		if (!query_num(q, qn, "latency_ms", &lat) || !query_num(q, qn, "bandwidth", &bw) ||
		    !query_num(q, qn, "req_rate", &rate) || !query_num(q, qn, "req_burst", &burst))
			return snprintf(msg, msize, "bad parameter\n"), 400;
		atomic_store(&px->latency_ms, lat);
		atomic_store(&px->bandwidth, bw);
		if (query_has(q, qn, "req_rate") || query_has(q, qn, "req_burst"))
			rate_set(px, rate, burst);
		snprintf(msg, msize, "latency_ms %lld\nbandwidth %lld\nreq_rate %lld\nreq_burst %lld\n",
			 lat, bw, rate, burst);
		return 200;
	}
	snprintf(msg, msize, "unknown control request\n");
	return 404;
}

/* A GET of an object (path-style /BUCKET/KEY, no query), not a LIST. */
static bool is_object_get(const struct request *rq)
{
	return strcmp(rq->method, "GET") == 0 && rq->target_len > 1 && rq->target[0] == '/' &&
	       !memchr(rq->target, '?', rq->target_len) &&
	       memchr(rq->target + 1, '/', rq->target_len - 1);
}

/* ---- relaying a response --------------------------------------------- */

/* Sends relayed bytes to the client through the per-connection token bucket.
 * Pieces are at most 64 KiB and 20 ms worth, so output is smooth; the
 * bucket holds up to 20 ms of tokens (at least one piece), so a sleep that
 * overshoots (timer slack, a busy machine) is made up for by the next
 * pieces and the average rate holds. */
static int relay_send(struct conn *c, const char *p, size_t n)
{
	int64_t cap = c->tb_rate / 50, piece_max = cap < 65536 ? cap : 65536;

	if (piece_max < 1)
		piece_max = 1;
	if (cap < piece_max)
		cap = piece_max;
	while (n > 0) {
		size_t piece = n;

		if (c->tb_rate > 0) {
			int64_t t = now_ns();

			if (piece > (size_t)piece_max)
				piece = (size_t)piece_max;
			c->tb_tokens += (double)(t - c->tb_last_ns) * (double)c->tb_rate / 1e9;
			if (c->tb_tokens > (double)cap)
				c->tb_tokens = (double)cap;
			c->tb_last_ns = t;
			if (c->tb_tokens < (double)piece)
				sleep_ns((int64_t)(((double)piece - c->tb_tokens) * 1e9 /
						   (double)c->tb_rate));
			c->tb_tokens -= (double)piece;
		}
		if (send_all(c->fd, p, piece) < 0)
			return -1;
		atomic_fetch_add(&c->px->stats[ST_BYTES_DOWN], piece);
		p += piece;
		n -= piece;
	}
	return 0;
}

/* The upstream body is complete: send the EXTRA fault's junk, which the
 * Content-Length sent to the client counted. */
static void relay_finish(struct conn *c, struct relay *r)
{
	char junk[4096];

	memset(junk, 'X', sizeof(junk));
	for (long long left = r->extra; left > 0 && !r->failed;) {
		size_t n = left < (long long)sizeof(junk) ? (size_t)left : sizeof(junk);

		if (relay_send(c, junk, n) < 0)
			r->failed = true;
		left -= (long long)n;
	}
	r->done = true;
}

/* Relays body bytes, up to the fault limit. */
static void relay_body(struct conn *c, struct relay *r, const char *p, size_t n)
{
	if (r->limit >= 0 && (long long)n > r->limit - r->body_sent)
		n = (size_t)(r->limit - r->body_sent);
	if (n > 0 && relay_send(c, p, n) < 0) {
		r->failed = r->done = true;
		return;
	}
	r->body_sent += (long long)n;
	if (r->object)
		atomic_fetch_add(&c->px->stats[ST_OBJECT_BYTES], n);
	if (r->limit >= 0 && r->body_sent >= r->limit)
		r->cut = r->done = true;
	else if (r->clen >= 0 && r->body_sent >= r->clen)
		relay_finish(c, r);
}

/* Writes "Content-Range: bytes S+1-E+1/T" for value v[0, vl) =
 * "bytes S-E/T" at o (*end: after it); false if v is not of that form. */
static bool crange_shift(char *o, const char *v, size_t vl, char **end)
{
	const char *dash, *slash, *e = v + vl;
	long long s, t;

	if (vl < 6 || strncasecmp(v, "bytes ", 6) != 0 ||
	    !(dash = memchr(v + 6, '-', vl - 6)) ||
	    !(slash = memchr(dash, '/', (size_t)(e - dash))) ||
	    (s = parse_num(v + 6, (size_t)(dash - v - 6))) < 0 ||
	    (t = parse_num(dash + 1, (size_t)(slash - dash - 1))) < 0)
		return false;
	*end = o + sprintf(o, "Content-Range: bytes %lld-%lld/%.*s\r\n", s + 1, t + 1,
			   (int)(e - slash - 1), slash + 1);
	return true;
}

/* Handles a complete response head rhead[0, hl): relays a 1xx head as it
 * is; for the final one decides framing, drops Connection/Keep-Alive (adding
 * "Connection: close" if the client connection must end), waits the shaping
 * latency and relays it. Returns false if the head is garbage. */
static bool relay_head(struct conn *c, struct relay *r, const struct request *rq,
		       const struct fault *f, long long latency_ms, size_t hl)
{
	const char *h = c->rhead, *end = h + hl - 2, *line, *eol, *v;
	char *o = c->whead;
	size_t vl;
	int status;
	bool chunked = false, nobody;

	eol = next_crlf(h);
	if (eol - h < 12 || strncmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ' ||
	    (status = (int)parse_num(h + 9, 3)) < 100 || (h[12] != ' ' && h[12] != '\r'))
		return false;
	r->sent_any = true;
	if (status < 200 && status != 101) {
		if (relay_send(c, h, hl) < 0)
			r->failed = r->done = true;
		return true;
	}
	r->final = true;
	nobody = strcmp(rq->method, "HEAD") == 0 || status == 204 || status == 304;
	memcpy(o, h, (size_t)(eol + 2 - h));
	o += eol + 2 - h;
	for (line = eol + 2; line < end; line = eol + 2) {
		size_t n;

		eol = next_crlf(line);
		n = (size_t)(eol - line);
		if (header_is(line, n, "Connection", &v, &vl) ||
		    header_is(line, n, "Keep-Alive", &v, &vl))
			continue;
		if (header_is(line, n, "Transfer-Encoding", &v, &vl))
			chunked = value_has(v, vl, "chunked");
		if (header_is(line, n, "Content-Length", &v, &vl)) {
			r->clen = parse_num(v, vl);
			if (f->kind == FAULT_EXTRA && !nobody && r->clen >= 0) {
				r->extra = f->after >= 0 ? f->after : EXTRA_DEFAULT;
				o += sprintf(o, "Content-Length: %lld\r\n", r->clen + r->extra);
				continue;
			}
		}
		if (f->kind == FAULT_BAD_CRANGE &&
		    header_is(line, n, "Content-Range", &v, &vl) && crange_shift(o, v, vl, &o))
			continue;
		memcpy(o, line, n + 2);
		o += n + 2;
	}
	if (chunked)
		r->clen = -1;	/* ends when upstream closes */
	if (nobody)
		r->clen = 0;
	r->keep = !rq->client_close && (nobody || chunked || r->clen >= 0);
	if (!r->keep) {
		memcpy(o, "Connection: close\r\n", 19);
		o += 19;
	}
	memcpy(o, "\r\n", 2);
	o += 2;
	if (f->kind == FAULT_RESET || f->kind == FAULT_TRUNCATE || f->kind == FAULT_STALL)
		r->limit = f->after >= 0 ? f->after : (r->clen > 0 ? r->clen / 2 : 0);
	sleep_ns(latency_ms * 1000000);
	if (relay_send(c, c->whead, (size_t)(o - c->whead)) < 0)
		r->failed = r->done = true;
	else if (r->limit == 0)
		r->cut = r->done = true;
	else if (r->clen == 0)
		relay_finish(c, r);
	return true;
}

/* Feeds n bytes from upstream into the relay: collects heads in rhead,
 * relays them, then streams the body straight from p. */
static void relay_input(struct conn *c, struct relay *r, const struct request *rq,
			const struct fault *f, long long latency_ms, const char *p, size_t n)
{
	while (!r->done) {
		const char *e;
		size_t take, hl, rest;

		if (r->final) {
			if (n > 0)
				relay_body(c, r, p, n);
			return;
		}
		take = sizeof(c->rhead) - r->rhead_len;
		take = n < take ? n : take;
		memcpy(c->rhead + r->rhead_len, p, take);
		r->rhead_len += take;
		p += take;
		n -= take;
		e = memmem_crlf2(c->rhead, r->rhead_len);
		if (!e) {
			if (r->rhead_len == sizeof(c->rhead))
				r->failed = r->done = true;	/* head too large */
			return;
		}
		hl = (size_t)(e + 4 - c->rhead);
		if (!relay_head(c, r, rq, f, latency_ms, hl)) {
			r->failed = r->done = true;
			return;
		}
		rest = r->rhead_len - hl;
		memmove(c->rhead, c->rhead + hl, rest);
		r->rhead_len = rest;
		if (r->final && rest > 0 && !r->done) {
			r->rhead_len = 0;
			relay_body(c, r, c->rhead, rest);
		}
	}
}

/* Forwards one request (head already in qhead) and relays its response.
 * Returns true if the client connection can take another request. */
static bool forward(struct conn *c, const struct request *rq, const struct fault *f)
{
	struct proxy *px = c->px;
	struct relay r = { .clen = -1, .limit = -1, .object = is_object_get(rq) };
	long long latency_ms = atomic_load(&px->latency_ms), body_left = rq->clen;
	long long rate = atomic_load(&px->bandwidth);
	bool upload_ok = true, keep = false;
	int up;

	if (rate != c->tb_rate) {
		c->tb_rate = rate;
		c->tb_tokens = 0;
		c->tb_last_ns = now_ns();
	}
	up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (up < 0)
		goto bad_gateway;
	set_sock_opts(up);
	if (connect(up, (const struct sockaddr *)&px->upstream, sizeof(px->upstream)) < 0 ||
	    send_all(up, c->qhead, c->qhead_len) < 0)
		goto close_up;
	/* upload the body while relaying whatever upstream says meanwhile
	 * (100 Continue, or an early error) */
	while (body_left > 0 && !r.done) {
		struct pollfd pfd[2] = { { .fd = up, .events = POLLIN },
					 { .fd = c->fd, .events = POLLIN } };
		bool buffered = c->in_off < c->in_len;
		ssize_t k;
		const char *p;
		int pr = buffered ? 0 : poll(pfd, 2, IO_TIMEOUT_S * 1000);

		if (pr < 0 && errno == EINTR)
			continue;
		if (!buffered && pr <= 0) {
			close(up);	/* nothing either way for IO_TIMEOUT_S */
			return false;
		}
		if (!buffered && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			k = recv(up, c->out, sizeof(c->out), 0);
			if (k <= 0)
				break;
			relay_input(c, &r, rq, f, latency_ms, c->out, (size_t)k);
			continue;
		}
		if (!buffered && !(pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		k = conn_body_chunk(c, &p, body_left < BUF_SIZE ? (size_t)body_left : BUF_SIZE);
		if (k <= 0) {
			close(up);	/* client gone mid-body */
			return false;
		}
		body_left -= k;
		if (upload_ok && send_all(up, p, (size_t)k) < 0)
			upload_ok = false;	/* keep reading: the response may explain */
		if (!upload_ok)
			break;
	}
	while (!r.done) {
		ssize_t k = recv(up, c->out, sizeof(c->out), 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		relay_input(c, &r, rq, f, latency_ms, c->out, (size_t)k);
	}
	close(up);
	up = -1;
	if (!r.sent_any)
		goto bad_gateway;	/* nothing or garbage from upstream */
	keep = r.final && r.keep && !r.failed && !r.cut && body_left == 0 &&
	       (r.clen < 0 || r.body_sent == r.clen);
	if (f->kind == FAULT_RESET || f->kind == FAULT_TRUNCATE || f->kind == FAULT_STALL) {
		keep = false;
		if (f->kind == FAULT_STALL && !r.failed)
			sleep_ns(f->ms * 1000000);
		if (f->kind == FAULT_RESET) {
			int64_t deadline = now_ns() + (int64_t)RST_WAIT_MS * 1000000;
			int unacked = 0;

			/* let the relayed bytes reach the client before the RST,
			 * which would discard them from our send queue */
			while (ioctl(c->fd, SIOCOUTQ, &unacked) == 0 && unacked > 0 &&
			       now_ns() < deadline)
				sleep_ns(1000000);
			c->close_mode = CLOSE_RST;
		}
	}
	return keep;

close_up:
	close(up);
bad_gateway:
	if (r.sent_any)
		return false;
	return conn_send_local(c, 502, "Bad Gateway", "text/plain",
			       "faultproxy: upstream unreachable or failed\n", false, false) == 0 &&
	       conn_drain_body(c, body_left);
}

static const char *const s3_503 =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
	"<Message>Please reduce your request rate.</Message></Error>";
static const char *const s3_429 =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>TooManyRequests</Code>"
	"<Message>Too many requests.</Message></Error>";
static const char *const s3_500 =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>"
	"<Message>We encountered an internal error. Please try again.</Message></Error>";
static const char *const s3_403 =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code>"
	"<Message>Access Denied</Message></Error>";

/* Answers rq with an S3 error made here (503 SlowDown, 500 InternalError,
 * 429 TooManyRequests or 403 AccessDenied) and consumes its body. Returns false if the
 * connection must end. */
static bool conn_send_s3_error(struct conn *c, const struct request *rq, int code)
{
	const char *reason = code == 503 ? "Slow Down" : code == 429 ? "Too Many Requests" :
			     code == 403 ? "Forbidden" : "Internal Server Error";
	const char *body = code == 503 ? s3_503 : code == 429 ? s3_429 : code == 403 ? s3_403 : s3_500;

	return conn_send_local(c, code, reason, "application/xml", body, rq->client_close,
			       strcmp(rq->method, "HEAD") == 0) == 0 &&
	       conn_drain_body(c, rq->clen) && !rq->client_close;
}

/* Removes header `name` from the upstream request head (NORANGE). */
static void qhead_drop(struct conn *c, const char *name)
{
	char *line = (char *)next_crlf(c->qhead) + 2, *end = c->qhead + c->qhead_len;
	const char *v;
	size_t vl;

	while (line < end - 2) {
		char *eol = (char *)next_crlf(line);
		size_t n = (size_t)(eol - line) + 2;

		if (header_is(line, n - 2, name, &v, &vl)) {
			memmove(line, line + n, (size_t)(end - line - (ptrdiff_t)n));
			end -= n;
			c->qhead_len -= n;
			continue;
		}
		line = eol + 2;
	}
}

static void count_object_get(struct proxy *px, const char *target, size_t n)
{
	struct target_count *e;

	pthread_mutex_lock(&px->gets_lock);
	if ((e = gets_entry(px, target_hash(target, n), true)))
		e->n++;
	pthread_mutex_unlock(&px->gets_lock);
}

static void count_request(struct proxy *px, const struct request *rq)
{
	static const char *const names[] = { "GET", "HEAD", "PUT", "POST", "DELETE" };
	const char *method = rq->method;

	atomic_fetch_add(&px->stats[ST_REQUESTS], 1);
	if (is_object_get(rq)) {
		atomic_fetch_add(&px->stats[ST_OBJECT_GET], 1);
		count_object_get(px, rq->target, rq->target_len);
	}
	for (int i = 0; i < 5; i++)
		if (strcmp(method, names[i]) == 0)
			atomic_fetch_add(&px->stats[ST_GET + i], 1);
}

/* Serves one client connection until it closes or must be closed. */
static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct proxy *px = c->px;

	for (;;) {
		struct request rq;
		struct fault f;
		long hl = conn_read_head(c);
		int status;

		if (hl == 0 || hl == -1)
			break;
		if (hl == -2) {
			conn_send_local(c, 400, "Bad Request", "text/plain",
					"faultproxy: request head too large\n", true, false);
			break;
		}
		status = request_parse(c, (size_t)hl, &rq);
		c->in_off += (size_t)hl;
		if (status) {
			conn_send_local(c, status, status == 501 ? "Not Implemented" : "Bad Request",
					"text/plain", status == 501 ?
					"faultproxy: chunked request bodies are not supported\n" :
					"faultproxy: malformed request\n", true, false);
			break;
		}
		if (rq.target_len >= 9 && memcmp(rq.target, "/__proxy/", 9) == 0) {
			char msg[1024];

			status = control_handle(px, &rq, msg, sizeof(msg));
			if (conn_send_local(c, status, status == 200 ? "OK" :
					    status == 404 ? "Not Found" : "Bad Request",
					    "text/plain", msg, rq.client_close, false) < 0 ||
			    !conn_drain_body(c, rq.clen) || rq.client_close)
				break;
			continue;
		}
		count_request(px, &rq);
		/* a refused request never reaches the server: it takes no
		 * fault rule's shot */
		if (!rate_admit(px)) {
			atomic_fetch_add(&px->stats[ST_SLOWDOWNS], 1);
			if (!conn_send_s3_error(c, &rq, 503))
				break;
			continue;
		}
		f = rules_take(px, &rq);
		if (f.kind != FAULT_NONE)
			atomic_fetch_add(&px->stats[ST_FAULTS], 1);
		if (f.kind == FAULT_RESET_BEFORE) {
			c->close_mode = CLOSE_RST;
			break;
		}
		if (f.kind == FAULT_503 || f.kind == FAULT_500 || f.kind == FAULT_429 ||
		    f.kind == FAULT_403) {
			if (!conn_send_s3_error(c, &rq, f.kind == FAULT_503 ? 503 :
						f.kind == FAULT_429 ? 429 :
						f.kind == FAULT_403 ? 403 : 500))
				break;
			continue;
		}
		if (f.kind == FAULT_NORANGE)
			qhead_drop(c, "Range");
		if (!forward(c, &rq, &f) || rq.client_close)
			break;
	}
	conn_close(c);
	atomic_fetch_sub(&px->nconns, 1);
	free(c);
	return NULL;
}

/* ---- start-up ---------------------------------------------------------- */

static bool parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	long long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = parse_num(colon + 1, strlen(colon + 1));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return port >= 0 && port <= 65535 && inet_pton(AF_INET, host, &sa->sin_addr) == 1;
}

/* Writes the port to a temp file renamed over path: readers polling for the
 * file never see it half-written. */
static int write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *fp;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -1;
	fp = fopen(tmp, "w");
	if (!fp)
		return -1;
	if (fprintf(fp, "%u\n", port) < 0)
		goto close_fp;
	if (fclose(fp) != 0 || rename(tmp, path) != 0)
		goto unlink_tmp;
	return 0;
close_fp:
	fclose(fp);
unlink_tmp:
	unlink(tmp);
	return -1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tierfs-faultproxy --listen 127.0.0.1:PORT --upstream 127.0.0.1:PORT\n"
		"         [--port-file FILE] [--s3-like] [--latency-ms N]\n"
		"         [--bandwidth BYTES_PER_SEC] [--req-rate N] [--req-burst N]\n"
		"PORT 0 listens on an ephemeral port (written to FILE).\n"
		"Shaping (all off by default):\n"
		"  --latency-ms N   delay before each response's first byte\n"
		"  --bandwidth B    cap on each client connection, bytes/s\n"
		"  --req-rate N     requests/s admitted over all connections; the rest\n"
		"                   get 503 SlowDown (control requests are never limited)\n"
		"  --req-burst N    requests admitted at once after a pause (default:\n"
		"                   one second's worth, the --req-rate)\n"
		"  --s3-like        presets --latency-ms %d --bandwidth %d (S3 in-region;\n"
		"                   explicit options override it)\n"
		"Control API on the same port:\n"
		"  /__proxy/fault?kind=503|500|429|403|reset|truncate|stall|reset_before|\n"
		"  norange|bad_crange|extra [&count=N][&method=M][&path=SUBSTR][&after=BYTES]\n"
		"  [&ms=MS][&pct=P][&for_ms=MS], /__proxy/clear,\n"
		"  /__proxy/stats, /__proxy/reset_stats,\n"
		"  /__proxy/shape?latency_ms=N&bandwidth=B&req_rate=N&req_burst=N (0 = off)\n",
		S3_LIKE_LATENCY_MS, S3_LIKE_BANDWIDTH);
}

int main(int argc, char **argv)
{
	struct proxy *px;
	const char *listen_s = NULL, *upstream_s = NULL, *port_file = NULL;
	long long latency_ms = -2, bandwidth = -2, req_rate = 0, req_burst = 0;	/* -2: unset */
	bool s3_like = false;
	struct sockaddr_in la;
	socklen_t alen = sizeof(la);
	sigset_t sigs;
	pthread_attr_t attr;
	char host[INET_ADDRSTRLEN];
	int lfd = -1, sfd = -1, one = 1, rc = 1;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *val;

		if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0)
			return usage(), 0;
		if (strcmp(opt, "--s3-like") == 0) {
			s3_like = true;
			continue;
		}
		if (i + 1 == argc)
			return usage(), 2;
		val = argv[++i];
		if (strcmp(opt, "--listen") == 0)
			listen_s = val;
		else if (strcmp(opt, "--upstream") == 0)
			upstream_s = val;
		else if (strcmp(opt, "--port-file") == 0)
			port_file = val;
		else if (strcmp(opt, "--latency-ms") == 0)
			latency_ms = parse_num(val, strlen(val));
		else if (strcmp(opt, "--bandwidth") == 0)
			bandwidth = parse_num(val, strlen(val));
		else if (strcmp(opt, "--req-rate") == 0)
			req_rate = parse_num(val, strlen(val));
		else if (strcmp(opt, "--req-burst") == 0)
			req_burst = parse_num(val, strlen(val));
		else
			return usage(), 2;
	}
	if (latency_ms == -2)
		latency_ms = s3_like ? S3_LIKE_LATENCY_MS : 0;
	if (bandwidth == -2)
		bandwidth = s3_like ? S3_LIKE_BANDWIDTH : 0;
	px = calloc(1, sizeof(*px));
	if (!px)
		return 1;
	if (!listen_s || !upstream_s || latency_ms < 0 || bandwidth < 0 || req_rate < 0 ||
	    req_burst < 0 ||
	    !parse_addr(listen_s, &la) || !parse_addr(upstream_s, &px->upstream)) {
		usage();
		rc = 2;
		goto free_px;
	}
	pthread_mutex_init(&px->lock, NULL);
	pthread_mutex_init(&px->rate_lock, NULL);
	pthread_mutex_init(&px->gets_lock, NULL);
	atomic_store(&px->latency_ms, latency_ms);
	atomic_store(&px->bandwidth, bandwidth);
	rate_set(px, req_rate, req_burst);

	/* SIGTERM/SIGINT are blocked in every thread and read from a signalfd
	 * by the accept loop; SIGPIPE is ignored (sends also use MSG_NOSIGNAL) */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sfd < 0 || lfd < 0) {
		perror("faultproxy: socket");
		goto close_fds;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&la, sizeof(la)) < 0 || listen(lfd, 512) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&la, &alen) < 0) {
		fprintf(stderr, "faultproxy: cannot listen on %s: %s\n", listen_s, strerror(errno));
		goto close_fds;
	}
	if (port_file && write_port_file(port_file, ntohs(la.sin_port)) < 0) {
		fprintf(stderr, "faultproxy: cannot write %s: %s\n", port_file, strerror(errno));
		goto close_fds;
	}
	inet_ntop(AF_INET, &la.sin_addr, host, sizeof(host));
	printf("faultproxy: listening on %s:%u\n", host, ntohs(la.sin_port));
	fflush(stdout);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);	/* buffers are in struct conn */
	for (;;) {
		struct pollfd pfd[2] = { { .fd = lfd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		struct conn *c;
		pthread_t tid;
		int fd;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				sleep_ns(10 * 1000000);	/* don't spin on a full table */
			continue;
		}
		if (atomic_fetch_add(&px->nconns, 1) >= MAX_CONNS) {
			atomic_fetch_sub(&px->nconns, 1);
			close(fd);
			continue;
		}
		set_sock_opts(fd);
		c = malloc(sizeof(*c));
		if (c) {
			memset(c, 0, offsetof(struct conn, in));
			c->px = px;
			c->fd = fd;
		}
		if (!c || pthread_create(&tid, &attr, conn_main, c) != 0) {
			free(c);
			close(fd);
			atomic_fetch_sub(&px->nconns, 1);
		}
	}
	pthread_attr_destroy(&attr);
	printf("faultproxy: stopping\n");
	rc = 0;
close_fds:
	if (lfd >= 0)
		close(lfd);
	if (sfd >= 0)
		close(sfd);
	/* detached connection threads may still use px until exit() ends them;
	 * a thread no longer touches it once it has decremented nconns */
	if (rc == 0 && atomic_load(&px->nconns) > 0)
		return 0;
	pthread_mutex_destroy(&px->rate_lock);
	pthread_mutex_destroy(&px->lock);
free_px:
	free(px);
	return rc;
}
