/* test_s3_client.c - s3_client against a real radosgw.
 *
 * Needs S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and
 * optionally AWS_DEFAULT_REGION); every test skips when S3_ENDPOINT is
 * unset.  Each test makes its own uniquely named bucket.  The fault tests
 * put tierfs-faultproxy (built next to this binary) between the client and
 * radosgw and skip when it is not there.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "s3/s3_client.h"

#define NEED_S3() do { \
	if (!getenv("S3_ENDPOINT") || !*getenv("S3_ENDPOINT")) \
		cr_skip_test("S3_ENDPOINT is not set: no S3 server to test against"); \
} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void unique_bucket(char *out, size_t n, const char *tag)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, n, "tierfs-it-%s-%d-%ld", tag, (int)getpid(), ts.tv_nsec % 1000000);
}

static struct s3_client *mk_client(const char *endpoint, const char *bucket, bool path_style,
				   const char *ak, const char *sk, unsigned retries)
{
	struct tfs_errinfo ei;
	struct s3_config cfg = {
		.endpoint = endpoint,
		.region = getenv("AWS_DEFAULT_REGION"),
		.bucket = bucket,
		.path_style = path_style,
		.access_key = ak,
		.secret_key = sk,
		.max_connections = 8,
		.max_retries = retries,
		.backoff_base_ms = 20,
		.backoff_max_ms = 200,
		.connect_timeout_ms = 2000,
		.stall_timeout_ms = 5000,
	};
	struct s3_client *c = s3_client_new(&cfg, &ei);

	cr_assert_not_null(c, "s3_client_new: %s", ei.message);
	return c;
}

static struct s3_client *client(const char *bucket)
{
	return mk_client(getenv("S3_ENDPOINT"), bucket, true, getenv("AWS_ACCESS_KEY_ID"),
			 getenv("AWS_SECRET_ACCESS_KEY"), 3);
}

static struct s3_client *new_bucket(const char *tag, char *name, size_t n)
{
	struct tfs_errinfo ei;
	struct s3_client *c;
	int rc;

	unique_bucket(name, n, tag);
	c = client(name);
	rc = s3_client_create_bucket(c, &ei);
	cr_assert_eq(rc, TFS_OK, "create bucket %s: %s (%d %s %s)", name, tfs_strerror(rc),
		     ei.http_status, ei.code, ei.message);
	return c;
}

static void fill(unsigned char *buf, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

static void put_ok(struct s3_client *c, const char *key, const void *body, size_t len,
		   char *etag)
{
	struct tfs_errinfo ei;
	int rc = s3_client_put(c, key, body, len, etag, &ei);

	cr_assert_eq(rc, TFS_OK, "put '%s': %s (%d %s %s)", key, tfs_strerror(rc),
		     ei.http_status, ei.code, ei.message);
}

/* ---- basic object operations ---- */

Test(s3_client, put_head_get_ranges)
{
	NEED_S3();
	char bucket[64], etag[OBJ_ETAG_MAX];
	struct s3_client *c = new_bucket("basic", bucket, sizeof(bucket));
	struct objstore *os = s3_client_objstore(c);
	size_t size = 1 << 20, got;
	unsigned char *data = malloc(size), *buf = malloc(size + 100);
	struct tfs_errinfo ei;
	struct obj_meta m;
	struct objstore_stats st;

	fill(data, size, 1);
	put_ok(c, "obj.bin", data, size, etag);
	cr_assert_eq(etag[0], '"', "etag %s", etag);

	cr_assert_eq(objstore_head(os, "obj.bin", &m, &ei), TFS_OK, "%s", ei.message);
	cr_assert_eq(m.size, size);
	cr_assert_str_eq(m.etag, etag);
	cr_assert_lt(llabs((long long)(m.mtime - time(NULL))), 3600, "mtime %lld",
		     (long long)m.mtime);

	/* whole object */
	cr_assert_eq(objstore_get_range(os, "obj.bin", NULL, 0, size, buf, &got, &ei), TFS_OK,
		     "%s", ei.message);
	cr_assert_eq(got, size);
	cr_assert(memcmp(buf, data, size) == 0);
	/* a middle range */
	memset(buf, 0, size);
	cr_assert_eq(objstore_get_range(os, "obj.bin", etag, 1000, 5000, buf, &got, &ei), TFS_OK);
	cr_assert_eq(got, 5000);
	cr_assert(memcmp(buf, data + 1000, 5000) == 0);
	/* across the end: only what exists */
	cr_assert_eq(objstore_get_range(os, "obj.bin", NULL, size - 10, 100, buf, &got, &ei),
		     TFS_OK, "%s", ei.message);
	cr_assert_eq(got, 10);
	cr_assert(memcmp(buf, data + size - 10, 10) == 0);
	/* more than the object, from 0 */
	cr_assert_eq(objstore_get_range(os, "obj.bin", NULL, 0, size + 100, buf, &got, &ei),
		     TFS_OK);
	cr_assert_eq(got, size);
	/* past the end */
	cr_assert_eq(objstore_get_range(os, "obj.bin", NULL, size, 10, buf, &got, &ei),
		     TFS_E_RANGE, "got %s", tfs_strerror(objstore_get_range(os, "obj.bin", NULL,
		     size, 10, buf, &got, &ei)));
	cr_assert_eq(ei.http_status, 416);
	/* nothing asked, nothing sent */
	cr_assert_eq(objstore_get_range(os, "obj.bin", NULL, 5, 0, buf, &got, &ei), TFS_OK);
	cr_assert_eq(got, 0);

	/* an empty object */
	put_ok(c, "empty", NULL, 0, NULL);
	cr_assert_eq(objstore_head(os, "empty", &m, &ei), TFS_OK);
	cr_assert_eq(m.size, 0);
	cr_assert_eq(objstore_get_range(os, "empty", NULL, 0, 10, buf, &got, &ei), TFS_OK,
		     "%s %d %s", tfs_strerror(objstore_get_range(os, "empty", NULL, 0, 10, buf,
		     &got, &ei)), ei.http_status, ei.code);
	cr_assert_eq(got, 0);

	s3_client_stats(c, &st);
	cr_assert_geq(st.requests, 9);
	cr_assert_geq(st.gets, 6);
	cr_assert_geq(st.heads, 2);
	cr_assert_geq(st.bytes_received, 2 * size + 5000 + 10);
	cr_assert_eq(st.retries, 0);
	/* every attempt timed, on loopback well under a minute */
	cr_assert_eq(st.latency.count, st.requests);
	cr_assert_gt(latency_hist_quantile(&st.latency, 0.5), 0);
	cr_assert_lt(st.latency.max_ns, 60ull * 1000000000);

	cr_assert_eq(s3_client_delete(c, "obj.bin", &ei), TFS_OK);
	cr_assert_eq(objstore_head(os, "obj.bin", &m, &ei), TFS_E_NOENT);
	free(buf);
	free(data);
	s3_client_free(c);
}

Test(s3_client, if_match)
{
	NEED_S3();
	char bucket[64], etag1[OBJ_ETAG_MAX], etag2[OBJ_ETAG_MAX];
	struct s3_client *c = new_bucket("ifm", bucket, sizeof(bucket));
	struct objstore *os = s3_client_objstore(c);
	struct tfs_errinfo ei;
	char buf[64];
	size_t got = 99;

	put_ok(c, "k", "version one", 11, etag1);
	cr_assert_eq(objstore_get_range(os, "k", etag1, 0, 64, buf, &got, &ei), TFS_OK);
	cr_assert_eq(got, 11);
	cr_assert_eq(objstore_get_range(os, "k", "\"0123456789abcdef0123456789abcdef\"", 0, 64,
					buf, &got, &ei), TFS_E_STALE);
	cr_assert_eq(ei.http_status, 412);
	cr_assert_eq(got, 0);
	/* the object changes under an open file */
	put_ok(c, "k", "version two!", 12, etag2);
	cr_assert_str_neq(etag1, etag2);
	cr_assert_eq(objstore_get_range(os, "k", etag1, 0, 64, buf, &got, &ei), TFS_E_STALE);
	cr_assert_eq(objstore_get_range(os, "k", etag2, 0, 64, buf, &got, &ei), TFS_OK);
	cr_assert_eq(got, 12);
	cr_assert(memcmp(buf, "version two!", 12) == 0);
	s3_client_free(c);
}

Test(s3_client, missing_key_and_bucket)
{
	NEED_S3();
	char bucket[64], missing[80];
	struct s3_client *c = new_bucket("miss", bucket, sizeof(bucket));
	struct objstore *os = s3_client_objstore(c);
	struct obj_list_page *page = NULL;
	struct tfs_errinfo ei;
	struct obj_meta m;
	char buf[16];
	size_t got;

	cr_assert_eq(objstore_head(os, "no/such/key", &m, &ei), TFS_E_NOENT);
	cr_assert_eq(ei.http_status, 404);
	cr_assert_eq(objstore_get_range(os, "no/such/key", NULL, 0, 16, buf, &got, &ei),
		     TFS_E_NOENT);
	cr_assert_str_eq(ei.code, "NoSuchKey");
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_OK, "%s", ei.code);
	cr_assert_eq(s3_client_check(c, "some/prefix/", &ei), TFS_OK);
	/* creating it again is fine */
	cr_assert_eq(s3_client_create_bucket(c, &ei), TFS_OK, "%d %s", ei.http_status, ei.code);
	s3_client_free(c);

	snprintf(missing, sizeof(missing), "%s-absent", bucket);
	c = client(missing);
	os = s3_client_objstore(c);
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_NOBUCKET);
	cr_assert_str_eq(ei.code, "NoSuchBucket");
	cr_assert_eq(objstore_list(os, NULL, NULL, NULL, 0, &page, &ei), TFS_E_NOBUCKET);
	cr_assert_null(page);
	cr_assert_eq(objstore_get_range(os, "k", NULL, 0, 16, buf, &got, &ei), TFS_E_NOBUCKET);
	s3_client_free(c);
}

Test(s3_client, bad_credentials)
{
	NEED_S3();
	char bucket[64];
	struct s3_client *good = new_bucket("auth", bucket, sizeof(bucket));
	struct s3_client *c;
	struct tfs_errinfo ei;
	char buf[16];
	size_t got;

	put_ok(good, "k", "x", 1, NULL);
	s3_client_free(good);

	c = mk_client(getenv("S3_ENDPOINT"), bucket, true, getenv("AWS_ACCESS_KEY_ID"),
		      "definitely-not-the-secret", 3);
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_AUTH, "%d %s", ei.http_status, ei.code);
	cr_assert_str_eq(ei.code, "SignatureDoesNotMatch");
	cr_assert(strstr(ei.message, "definitely") == NULL);
	cr_assert_eq(objstore_get_range(s3_client_objstore(c), "k", NULL, 0, 16, buf, &got, &ei),
		     TFS_E_AUTH);
	s3_client_free(c);

	c = mk_client(getenv("S3_ENDPOINT"), bucket, true, "AKIANOSUCHKEY0000000", "x", 3);
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_AUTH);
	cr_assert_str_eq(ei.code, "InvalidAccessKeyId");
	s3_client_free(c);

	/* a session token of STS size (~2 KiB) goes out signed; radosgw
	 * without STS turns it down, but it must answer */
	{
		char *tok = malloc(3001);
		struct s3_config cfg = {
			.endpoint = getenv("S3_ENDPOINT"), .bucket = bucket, .path_style = true,
			.access_key = getenv("AWS_ACCESS_KEY_ID"),
			.secret_key = getenv("AWS_SECRET_ACCESS_KEY"), .session_token = tok,
		};

		memset(tok, 'T', 3000);
		tok[3000] = '\0';
		c = s3_client_new(&cfg, &ei);
		cr_assert_not_null(c);
		s3_client_check(c, NULL, &ei);
		cr_assert_neq(ei.http_status, 0, "%s", ei.message);
		s3_client_free(c);
		free(tok);
	}

	/* anonymous requests to a private bucket are refused, not "auth" */
	c = mk_client(getenv("S3_ENDPOINT"), bucket, true, NULL, NULL, 3);
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_ACCESS, "%s %d %s",
		     tfs_strerror(s3_client_check(c, NULL, &ei)), ei.http_status, ei.code);
	s3_client_free(c);
}

Test(s3_client, dead_endpoint_fails_fast)
{
	NEED_S3();
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct objstore_stats st;
	struct tfs_errinfo ei;
	struct s3_client *c;
	char ep[64];
	double t0;
	int fd, rc;

	/* a port that was just free and is now closed */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(sa.sin_port));

	c = mk_client(ep, "whatever", true, "AK", "SK", 10);
	t0 = now_s();
	rc = s3_client_check(c, NULL, &ei);
	cr_assert_eq(rc, TFS_E_CONNECT, "%s", tfs_strerror(rc));
	/* "fast" is a count: at most two quick retries of ten allowed (what
	 * the header promises); the time only guards against a hang, with
	 * the margin a loaded sanitizer build needs */
	s3_client_stats(c, &st);
	cr_assert_leq(st.retries, 2, "%llu retries of a refused connection",
		      (unsigned long long)st.retries);
	cr_assert_lt(now_s() - t0, 10.0);
	cr_assert_eq(ei.http_status, 0);
	cr_assert_neq(ei.message[0], '\0');
	s3_client_free(c);

	/* TLS spoken to a plain-HTTP port */
	const char *plain = getenv("S3_ENDPOINT");
	if (strncmp(plain, "http://", 7) == 0) {
		snprintf(ep, sizeof(ep), "https://%s", plain + 7);
		c = mk_client(ep, "whatever", true, "AK", "SK", 10);
		t0 = now_s();
		rc = s3_client_check(c, NULL, &ei);
		cr_assert_eq(rc, TFS_E_CONNECT, "%s: %s", tfs_strerror(rc), ei.message);
		s3_client_stats(c, &st);
		cr_assert_leq(st.retries, 2, "%llu retries of a TLS handshake with plain HTTP",
			      (unsigned long long)st.retries);
		cr_assert_lt(now_s() - t0, 10.0);
		s3_client_free(c);
	}

	/* a name that does not resolve */
	c = mk_client("http://no-such-host.invalid:9", "whatever", true, "AK", "SK", 10);
	t0 = now_s();
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_CONNECT);
	cr_assert_lt(now_s() - t0, 10.0);
	s3_client_free(c);
}

/* ---- keys ---- */

static const char *const odd_keys[] = {
	"with space",
	"plus+sign",
	"space and+plus",
	"percent%41%",
	"tilde~and.dot_-",
	"unicode-\xc3\xbc\xc3\xa9-\xe2\x9c\x93",
	"a//b",
	"../x",
	"./y",
	"q?x#y&z=1;p",
	"ctl\x01\x1f",
	"trailing/",
	"star*paren()!'",
	NULL,   /* the 300-byte component goes here */
};
#define N_ODD (sizeof(odd_keys) / sizeof(odd_keys[0]))

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void odd_keys_roundtrip(struct s3_client *c, const char *dir)
{
	struct objstore *os = s3_client_objstore(c);
	char *keys[N_ODD], long_comp[301];
	struct obj_list_page *page = NULL;
	struct tfs_errinfo ei;
	struct obj_meta m;
	char buf[2048];
	size_t got;
	int rc;

	memset(long_comp, 'L', 300);
	long_comp[300] = '\0';
	for (size_t i = 0; i < N_ODD; i++)
		cr_assert_gt(asprintf(&keys[i], "%s/%s", dir, odd_keys[i] ? odd_keys[i] : long_comp),
			     0);
	for (size_t i = 0; i < N_ODD; i++) {
		/* content = the key, so a mix-up shows */
		put_ok(c, keys[i], keys[i], strlen(keys[i]), NULL);
	}
	for (size_t i = 0; i < N_ODD; i++) {
		rc = objstore_head(os, keys[i], &m, &ei);
		cr_assert_eq(rc, TFS_OK, "head '%s': %s", keys[i], tfs_strerror(rc));
		cr_assert_eq(m.size, strlen(keys[i]));
		rc = objstore_get_range(os, keys[i], m.etag, 0, sizeof(buf), buf, &got, &ei);
		cr_assert_eq(rc, TFS_OK, "get '%s': %s", keys[i], tfs_strerror(rc));
		cr_assert_eq(got, strlen(keys[i]));
		cr_assert(memcmp(buf, keys[i], got) == 0, "wrong bytes for '%s'", keys[i]);
	}
	/* LIST gives every key back byte for byte */
	char prefix[128];
	snprintf(prefix, sizeof(prefix), "%s/", dir);
	cr_assert_eq(objstore_list(os, prefix, NULL, NULL, 0, &page, &ei), TFS_OK, "%s",
		     ei.message);
	cr_assert_eq(page->n_entries, N_ODD);
	cr_assert_not(page->truncated);
	qsort(keys, N_ODD, sizeof(keys[0]), cmp_str);
	for (size_t i = 0; i < N_ODD; i++) {
		cr_assert_eq(page->entries[i].key_len, strlen(keys[i]), "entry %zu: '%s' vs '%s'",
			     i, page->entries[i].key, keys[i]);
		cr_assert(memcmp(page->entries[i].key, keys[i], strlen(keys[i])) == 0,
			  "entry %zu: '%s' vs '%s'", i, page->entries[i].key, keys[i]);
		cr_assert_eq(page->entries[i].meta.size, strlen(keys[i]));
	}
	obj_list_page_free(page);
	/* a prefix with a space and a plus selects exactly one key */
	snprintf(prefix, sizeof(prefix), "%s/space and+", dir);
	cr_assert_eq(objstore_list(os, prefix, NULL, NULL, 0, &page, &ei), TFS_OK);
	cr_assert_eq(page->n_entries, 1);
	obj_list_page_free(page);
	for (size_t i = 0; i < N_ODD; i++)
		free(keys[i]);
}

Test(s3_client, odd_keys_path_style)
{
	NEED_S3();
	char bucket[64];
	struct s3_client *c = new_bucket("keys", bucket, sizeof(bucket));

	odd_keys_roundtrip(c, "odd");
	s3_client_free(c);
}

Test(s3_client, key_bounds)
{
	NEED_S3();
	char bucket[64], key[1100];
	struct s3_client *c = new_bucket("kb", bucket, sizeof(bucket));
	struct tfs_errinfo ei;
	struct obj_meta m;

	memset(key, 'k', sizeof(key));
	key[1024] = '\0';
	put_ok(c, key, "x", 1, NULL);
	cr_assert_eq(objstore_head(s3_client_objstore(c), key, &m, &ei), TFS_OK);
	key[1024] = 'k';
	key[1025] = '\0';
	cr_assert_eq(s3_client_put(c, key, "x", 1, NULL, &ei), TFS_E_NAMETOOLONG);
	cr_assert_eq(objstore_head(s3_client_objstore(c), "", &m, &ei), TFS_E_INVAL);
	s3_client_free(c);
}

/* ---- virtual-hosted addressing ---- */

/* http://localhost:PORT for S3_ENDPOINT http://127.0.0.1:PORT or
 * http://localhost:PORT; NULL when the endpoint is something else. */
static char *vhost_endpoint(void)
{
	const char *ep = getenv("S3_ENDPOINT");
	const char *hosts[] = { "http://127.0.0.1:", "http://localhost:" };
	char *out = NULL;

	for (size_t i = 0; i < 2; i++)
		if (strncmp(ep, hosts[i], strlen(hosts[i])) == 0 &&
		    asprintf(&out, "http://localhost:%s", ep + strlen(hosts[i])) > 0)
			return out;
	return NULL;
}

Test(s3_client, virtual_hosted)
{
	NEED_S3();
	char bucket[64];
	struct s3_client *path = new_bucket("vhost", bucket, sizeof(bucket));
	char *ep = vhost_endpoint();
	struct s3_client *c;
	struct tfs_errinfo ei;
	int rc;

	s3_client_free(path);
	if (!ep)
		cr_skip_test("S3_ENDPOINT is not a loopback http endpoint; no virtual-hosted test");
	c = mk_client(ep, bucket, false, getenv("AWS_ACCESS_KEY_ID"),
		      getenv("AWS_SECRET_ACCESS_KEY"), 1);
	rc = s3_client_check(c, NULL, &ei);
	if (rc == TFS_E_CONNECT) {
		s3_client_free(c);
		free(ep);
		cr_skip_test("%s.localhost does not resolve to loopback here (%s): "
			     "virtual-hosted addressing not tested", bucket, ei.message);
	}
	cr_assert_eq(rc, TFS_OK, "%s: %s %d %s", ep, tfs_strerror(rc), ei.http_status, ei.code);
	odd_keys_roundtrip(c, "vh");
	/* and the same objects are there path-style */
	path = client(bucket);
	struct obj_list_page *page = NULL;
	cr_assert_eq(objstore_list(s3_client_objstore(path), "vh/", NULL, NULL, 0, &page, &ei),
		     TFS_OK);
	cr_assert_eq(page->n_entries, N_ODD);
	obj_list_page_free(page);
	s3_client_free(path);
	s3_client_free(c);
	free(ep);
}

Test(s3_client, config_errors)
{
	struct tfs_errinfo ei;
	struct s3_config cfg = { .endpoint = "http://127.0.0.1:1", .bucket = "b" };

	cfg.path_style = false;
	cr_assert_null(s3_client_new(&cfg, &ei), "vhost on an IP address");
	cfg.endpoint = "http://localhost:1";
	cfg.bucket = "Not_DNS";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.path_style = true;
	cfg.bucket = "";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.bucket = "a/b";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.bucket = "b";
	cfg.endpoint = "ftp://host";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.endpoint = "http://host/path";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.endpoint = "http://user@host";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cfg.endpoint = "http://host:99999";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cr_assert_str_eq(ei.message, "endpoint must be http(s)://host[:port]");
	cfg.endpoint = "http://host:80/";
	cfg.access_key = "AK";
	cr_assert_null(s3_client_new(&cfg, &ei), "access key without secret");
	cfg.secret_key = "SK";
	struct s3_client *c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c, "%s", ei.message);
	s3_client_free(c);
	cfg.endpoint = NULL;   /* AWS */
	cfg.path_style = false;
	c = s3_client_new(&cfg, &ei);
	cr_assert_null(c, "bucket 'b' is too short for DNS");
	cfg.bucket = "my-bucket";
	c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c, "%s", ei.message);
	s3_client_free(c);
}

/* S3 Express One Zone: directory buckets are told by their name, need
 * credentials (for CreateSession) and, without an endpoint, a zone in
 * their name. */
Test(s3_client, express_config)
{
	struct tfs_errinfo ei;
	struct s3_config cfg = { .bucket = "train--use1-az4--x-s3", .express = true };
	struct s3_client *c;

	cr_assert(s3_bucket_is_express("train--use1-az4--x-s3"));
	cr_assert(s3_bucket_is_express("a--b--x-s3"));
	cr_assert_not(s3_bucket_is_express("--x-s3"));
	cr_assert_not(s3_bucket_is_express("train-x-s3"));
	cr_assert_not(s3_bucket_is_express("train--x-s3-more"));
	cr_assert_not(s3_bucket_is_express(NULL));

	cfg.bucket = "train";             /* flagged, but not named as one */
	cfg.access_key = "AK";
	cfg.secret_key = "SK";
	cr_assert_null(s3_client_new(&cfg, &ei));
	cr_assert(strstr(ei.message, "not a directory bucket"), "%s", ei.message);
	cfg.bucket = "train--use1-az4--x-s3";
	cfg.access_key = cfg.secret_key = NULL;

	cr_assert_null(s3_client_new(&cfg, &ei), "no credentials");
	cr_assert(strstr(ei.message, "needs credentials"), "%s", ei.message);
	cfg.access_key = "AK";
	cfg.secret_key = "SK";
	c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c, "%s", ei.message);
	s3_client_free(c);
	const char *zoneless[] = { "train--x-s3", "train--USE1--x-s3", "tr----x-s3" };
	for (size_t i = 0; i < sizeof(zoneless) / sizeof(zoneless[0]); i++) {
		cfg.bucket = zoneless[i];
		cr_assert_null(s3_client_new(&cfg, &ei), "%s", zoneless[i]);
		cr_assert(strstr(ei.message, "names no zone"), "%s: %s", zoneless[i], ei.message);
	}
	/* with an endpoint, the name needs no zone */
	cfg.endpoint = "http://localhost:1";
	cfg.path_style = true;
	c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c, "%s", ei.message);
	s3_client_free(c);
}

/* ---- listing ---- */

struct put_job {
	struct s3_client *c;
	int from, to;
};

static void *put_range(void *arg)
{
	struct put_job *j = arg;
	char key[64];

	for (int i = j->from; i < j->to; i++) {
		snprintf(key, sizeof(key), "page/key-%05d", i);
		if (s3_client_put(j->c, key, key, strlen(key), NULL, NULL) != TFS_OK)
			return (void *)1;
	}
	return NULL;
}

Test(s3_client, list_pagination)
{
	NEED_S3();
	enum { N = 2500, THREADS = 8 };
	char bucket[64], key[64];
	struct s3_client *c = new_bucket("page", bucket, sizeof(bucket));
	struct objstore *os = s3_client_objstore(c);
	struct put_job jobs[THREADS];
	pthread_t th[THREADS];
	struct obj_list_page *page;
	struct tfs_errinfo ei;
	char *token = NULL;
	int seen = 0, pages = 0;

	for (int t = 0; t < THREADS; t++) {
		jobs[t] = (struct put_job){ c, t * N / THREADS, (t + 1) * N / THREADS };
		cr_assert_eq(pthread_create(&th[t], NULL, put_range, &jobs[t]), 0);
	}
	for (int t = 0; t < THREADS; t++) {
		void *res;

		pthread_join(th[t], &res);
		cr_assert_null(res, "a PUT failed");
	}
	put_ok(c, "pagf", "outside the prefix", 18, NULL);

	do {
		int rc = objstore_list(os, "page/", NULL, token, 1000, &page, &ei);

		cr_assert_eq(rc, TFS_OK, "%s", ei.message);
		free(token);
		token = NULL;
		pages++;
		cr_assert_eq(page->n_entries, pages < 3 ? 1000u : 500u);
		cr_assert_eq(page->truncated, pages < 3);
		for (size_t i = 0; i < page->n_entries; i++, seen++) {
			snprintf(key, sizeof(key), "page/key-%05d", seen);
			cr_assert_str_eq(page->entries[i].key, key);
			cr_assert_eq(page->entries[i].meta.size, strlen(key));
		}
		if (page->truncated) {
			cr_assert_not_null(page->next_token);
			token = strdup(page->next_token);
		} else {
			cr_assert_null(page->next_token);
		}
		obj_list_page_free(page);
	} while (token);
	cr_assert_eq(pages, 3);
	cr_assert_eq(seen, N);
	s3_client_free(c);
}

Test(s3_client, list_delimiter)
{
	NEED_S3();
	static const char *const keys[] = {
		"tree/a/1", "tree/a/2", "tree/b c/1", "tree/b+c/1", "tree/c", "tree/d e",
		"tree/%41/x", "tree/\xc3\xbc/x",
	};
	char bucket[64];
	struct s3_client *c = new_bucket("delim", bucket, sizeof(bucket));
	struct objstore *os = s3_client_objstore(c);
	struct obj_list_page *page;
	struct tfs_errinfo ei;
	char *token = NULL;
	int pages = 0;
	size_t n_pre = 0, n_ent = 0;
	char got_pre[8][32], got_ent[8][32];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put_ok(c, keys[i], "x", 1, NULL);
	/* one page */
	cr_assert_eq(objstore_list(os, "tree/", "/", NULL, 0, &page, &ei), TFS_OK);
	cr_assert_eq(page->n_prefixes, 5);
	cr_assert_str_eq(page->prefixes[0].prefix, "tree/%41/");
	cr_assert_str_eq(page->prefixes[1].prefix, "tree/a/");
	cr_assert_str_eq(page->prefixes[2].prefix, "tree/b c/");
	cr_assert_str_eq(page->prefixes[3].prefix, "tree/b+c/");
	cr_assert_str_eq(page->prefixes[4].prefix, "tree/\xc3\xbc/");
	cr_assert_eq(page->n_entries, 2);
	cr_assert_str_eq(page->entries[0].key, "tree/c");
	cr_assert_str_eq(page->entries[1].key, "tree/d e");
	obj_list_page_free(page);

	/* one key or prefix per page: same set, seven pages */
	do {
		cr_assert_eq(objstore_list(os, "tree/", "/", token, 1, &page, &ei), TFS_OK);
		free(token);
		token = page->truncated ? strdup(page->next_token) : NULL;
		pages++;
		cr_assert_leq(page->n_prefixes + page->n_entries, 1);
		for (size_t i = 0; i < page->n_prefixes && n_pre < 8; i++)
			snprintf(got_pre[n_pre++], 32, "%s", page->prefixes[i].prefix);
		for (size_t i = 0; i < page->n_entries && n_ent < 8; i++)
			snprintf(got_ent[n_ent++], 32, "%s", page->entries[i].key);
		obj_list_page_free(page);
	} while (token && pages < 20);
	cr_assert_eq(n_pre, 5);
	cr_assert_eq(n_ent, 2);
	cr_assert_str_eq(got_pre[2], "tree/b c/");
	cr_assert_str_eq(got_ent[1], "tree/d e");
	s3_client_free(c);
}

/* ---- concurrency: more threads than connections ---- */

struct get_job {
	struct objstore *os;
	const unsigned char *data;
	size_t size;
	int id;
	int failures;
};

static void *get_many(void *arg)
{
	struct get_job *j = arg;
	unsigned char buf[4096];
	size_t got;

	for (int i = 0; i < 50; i++) {
		size_t off = (size_t)((j->id * 7919 + i * 104729) % (int)(j->size - sizeof(buf)));

		if (objstore_get_range(j->os, "shared", NULL, off, sizeof(buf), buf, &got, NULL) ||
		    got != sizeof(buf) || memcmp(buf, j->data + off, got) != 0)
			j->failures++;
	}
	return NULL;
}

Test(s3_client, pool_bound_under_contention)
{
	NEED_S3();
	enum { THREADS = 12 };
	char bucket[64];
	struct s3_client *setup = new_bucket("pool", bucket, sizeof(bucket));
	size_t size = 256 * 1024;
	unsigned char *data = malloc(size);
	struct s3_config cfg = {
		.endpoint = getenv("S3_ENDPOINT"), .bucket = bucket, .path_style = true,
		.access_key = getenv("AWS_ACCESS_KEY_ID"),
		.secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
		.max_connections = 2, .max_retries = 2,
	};
	struct get_job jobs[THREADS];
	pthread_t th[THREADS];
	struct s3_client *c;
	struct objstore_stats st;

	fill(data, size, 7);
	put_ok(setup, "shared", data, size, NULL);
	s3_client_free(setup);
	c = s3_client_new(&cfg, NULL);
	cr_assert_not_null(c);
	for (int t = 0; t < THREADS; t++) {
		jobs[t] = (struct get_job){ s3_client_objstore(c), data, size, t, 0 };
		pthread_create(&th[t], NULL, get_many, &jobs[t]);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		cr_assert_eq(jobs[t].failures, 0, "thread %d", t);
	}
	s3_client_stats(c, &st);
	cr_assert_eq(st.gets, THREADS * 50);
	cr_assert_eq(st.errors, 0);
	objstore_free(s3_client_objstore(c));
	free(data);
}

/* ---- TLS: verification is always on ---- */

static pid_t tls_server_pid;
static char tls_dir[64];

static void tls_fini(void)
{
	char cmd[128];

	if (tls_server_pid > 0) {
		kill(tls_server_pid, SIGTERM);
		waitpid(tls_server_pid, NULL, 0);
	}
	if (tls_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tls_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tls_dir);
	}
}

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* An `openssl s_server -www` with a fresh self-signed certificate for
 * localhost: it completes TLS and answers any GET with an HTML page. */
Test(s3_client, tls_verification, .fini = tls_fini)
{
	char cmd[512], cert[128], ep[64], accept_arg[32];
	struct tfs_errinfo ei;
	struct s3_client *c;
	int port, rc, fd;

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		cr_skip_test("no openssl command: TLS verification not tested");
	strcpy(tls_dir, "/tmp/tierfs-it-tls-XXXXXX");
	cr_assert_not_null(mkdtemp(tls_dir));
	snprintf(cert, sizeof(cert), "%s/cert.pem", tls_dir);
	snprintf(cmd, sizeof(cmd), "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
		 "-subj /CN=localhost -addext subjectAltName=DNS:localhost "
		 "-keyout '%s/key.pem' -out '%s' >/dev/null 2>&1", tls_dir, cert);
	cr_assert_eq(system(cmd), 0, "openssl req failed");
	port = free_port();
	snprintf(accept_arg, sizeof(accept_arg), "127.0.0.1:%d", port);
	snprintf(cmd, sizeof(cmd), "%s/key.pem", tls_dir);
	tls_server_pid = fork();
	cr_assert_geq(tls_server_pid, 0);
	if (tls_server_pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execlp("openssl", "openssl", "s_server", "-www", "-accept", accept_arg,
		       "-cert", cert, "-key", cmd, (char *)NULL);
		_exit(127);
	}
	/* wait until it listens (<= 60 s: a bound on a hang, not a speed) */
	for (int i = 0; i < 3000; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
		if (rc == 0)
			break;
		usleep(20000);
	}
	cr_assert_eq(rc, 0, "openssl s_server did not start");
	snprintf(ep, sizeof(ep), "https://localhost:%d", port);

	/* unknown CA: refused at the handshake, not retried, not data */
	unsetenv("AWS_CA_BUNDLE");
	c = mk_client(ep, "bucket", true, "AK", "SK", 5);
	rc = s3_client_check(c, NULL, &ei);
	cr_assert_eq(rc, TFS_E_CONNECT, "%s: %s", tfs_strerror(rc), ei.message);
	s3_client_free(c);

	/* trusted through ca_bundle: the handshake passes, and the HTML page
	 * is no ListObjectsV2 reply */
	struct s3_config cfg = {
		.endpoint = ep, .bucket = "bucket", .path_style = true, .access_key = "AK",
		.secret_key = "SK", .ca_bundle = cert,
	};
	c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c);
	rc = s3_client_check(c, NULL, &ei);
	cr_assert_eq(rc, TFS_E_PROTO, "%s: %s", tfs_strerror(rc), ei.message);
	s3_client_free(c);

	/* trusted through AWS_CA_BUNDLE */
	setenv("AWS_CA_BUNDLE", cert, 1);
	c = mk_client(ep, "bucket", true, "AK", "SK", 0);
	rc = s3_client_check(c, NULL, &ei);
	cr_assert_eq(rc, TFS_E_PROTO, "%s: %s", tfs_strerror(rc), ei.message);
	s3_client_free(c);

	/* the right CA but the wrong name */
	snprintf(ep, sizeof(ep), "https://127.0.0.1:%d", port);
	c = mk_client(ep, "bucket", true, "AK", "SK", 0);
	rc = s3_client_check(c, NULL, &ei);
	cr_assert_eq(rc, TFS_E_CONNECT, "%s: %s", tfs_strerror(rc), ei.message);
	s3_client_free(c);
}

/* ---- faults, through tierfs-faultproxy ---- */

struct proxy {
	pid_t pid;
	char endpoint[64];
	char dir[64];
};

/* The proxy of the running test, stopped by proxy_fini() even when an
 * assertion ends the test early (each test is its own process). */
static struct proxy *running_proxy;

static bool proxy_start(struct proxy *p)
{
	char exe[PATH_MAX], bin[PATH_MAX + 32], portfile[128], upstream[64];
	const char *ep = getenv("S3_ENDPOINT");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int port = 0;

	if (n <= 0 || strncmp(ep, "http://", 7) != 0)
		return false;
	exe[n] = '\0';
	snprintf(bin, sizeof(bin), "%s/tierfs-faultproxy", dirname(exe));
	if (access(bin, X_OK) != 0)
		return false;
	snprintf(upstream, sizeof(upstream), "%s", ep + 7);
	if (strncmp(upstream, "localhost:", 10) == 0)
		snprintf(upstream, sizeof(upstream), "127.0.0.1:%s", ep + 17);
	strcpy(p->dir, "/tmp/tierfs-it-proxy-XXXXXX");
	cr_assert_not_null(mkdtemp(p->dir));
	snprintf(portfile, sizeof(portfile), "%s/port", p->dir);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl(bin, bin, "--listen", "127.0.0.1:0", "--upstream", upstream,
		      "--port-file", portfile, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000 && port == 0; i++) {   /* <= 60 s */
		FILE *f = fopen(portfile, "r");

		if (f) {
			if (fscanf(f, "%d", &port) != 1)
				port = 0;
			fclose(f);
		}
		if (!port)
			usleep(20000);
	}
	running_proxy = p;
	cr_assert_gt(port, 0, "faultproxy did not start");
	snprintf(p->endpoint, sizeof(p->endpoint), "http://127.0.0.1:%d", port);
	return true;
}

static void proxy_stop(struct proxy *p)
{
	char path[128];

	running_proxy = NULL;
	kill(p->pid, SIGTERM);
	waitpid(p->pid, NULL, 0);
	snprintf(path, sizeof(path), "%s/port", p->dir);
	unlink(path);
	rmdir(p->dir);
}

static void proxy_fini(void)
{
	if (running_proxy)
		proxy_stop(running_proxy);
}

static size_t discard(char *ptr, size_t size, size_t n, void *ud)
{
	return size * n;
}

static void proxy_ctl(const struct proxy *p, const char *what)
{
	char url[256];
	CURL *h = curl_easy_init();
	long code = 0;

	snprintf(url, sizeof(url), "%s/__proxy/%s", p->endpoint, what);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	cr_assert_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	cr_assert_eq(code, 200, "proxy control %s -> %ld", what, code);
}

#define NEED_PROXY(p) do { \
	if (!proxy_start(p)) \
		cr_skip_test("tierfs-faultproxy not built next to this test: no fault tests"); \
} while (0)

static struct s3_client *fault_client(const struct proxy *p, const char *bucket,
				      unsigned retries, unsigned stall_ms)
{
	struct tfs_errinfo ei;
	struct s3_config cfg = {
		.endpoint = p->endpoint, .bucket = bucket, .path_style = true,
		.access_key = getenv("AWS_ACCESS_KEY_ID"),
		.secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
		.max_retries = retries, .backoff_base_ms = 10, .backoff_max_ms = 100,
		.stall_timeout_ms = stall_ms,
	};
	struct s3_client *c = s3_client_new(&cfg, &ei);

	cr_assert_not_null(c, "%s", ei.message);
	return c;
}

Test(s3_client, transient_faults_are_retried, .fini = proxy_fini)
{
	NEED_S3();
	static struct proxy p;
	char bucket[64];
	struct s3_client *setup = new_bucket("fault", bucket, sizeof(bucket));
	size_t size = 1 << 20, got;
	unsigned char *data = malloc(size), *buf = malloc(size);
	struct obj_list_page *page = NULL;
	struct tfs_errinfo ei;
	struct objstore_stats st;
	struct obj_meta m;
	struct s3_client *c;
	struct objstore *os;
	int rc;

	fill(data, size, 3);
	put_ok(setup, "f.bin", data, size, NULL);
	s3_client_free(setup);
	NEED_PROXY(&p);
	c = fault_client(&p, bucket, 4, 1000);
	os = s3_client_objstore(c);

	/* two 503s, then the data */
	proxy_ctl(&p, "fault?kind=503&count=2&method=GET");
	rc = objstore_get_range(os, "f.bin", NULL, 0, size, buf, &got, &ei);
	cr_assert_eq(rc, TFS_OK, "%s %s", tfs_strerror(rc), ei.message);
	cr_assert_eq(got, size);
	cr_assert(memcmp(buf, data, size) == 0);
	/* a body cut short */
	proxy_ctl(&p, "fault?kind=truncate&count=1&method=GET&after=1000");
	memset(buf, 0, size);
	rc = objstore_get_range(os, "f.bin", NULL, 100, size - 100, buf, &got, &ei);
	cr_assert_eq(rc, TFS_OK, "%s %s", tfs_strerror(rc), ei.message);
	cr_assert_eq(got, size - 100);
	cr_assert(memcmp(buf, data + 100, size - 100) == 0);
	/* a reset mid-body and a reset before any answer */
	proxy_ctl(&p, "fault?kind=reset&count=1&method=GET&after=5000");
	cr_assert_eq(objstore_get_range(os, "f.bin", NULL, 0, size, buf, &got, &ei), TFS_OK,
		     "%s", ei.message);
	cr_assert(memcmp(buf, data, size) == 0);
	proxy_ctl(&p, "fault?kind=reset_before&count=1&method=HEAD");
	cr_assert_eq(objstore_head(os, "f.bin", &m, &ei), TFS_OK, "%s", ei.message);
	cr_assert_eq(m.size, size);
	/* a 500 on LIST */
	proxy_ctl(&p, "fault?kind=500&count=1&method=GET");
	cr_assert_eq(objstore_list(os, NULL, NULL, NULL, 0, &page, &ei), TFS_OK);
	cr_assert_eq(page->n_entries, 1);
	obj_list_page_free(page);
	/* a stalled body (stall timeout 1 s): the retry, not the end of the
	 * 60 s stall, brings the bytes; about 2 s here, and far less than 60
	 * on any machine */
	proxy_ctl(&p, "fault?kind=stall&count=1&method=GET&after=2000&ms=60000");
	double t0 = now_s();
	rc = objstore_get_range(os, "f.bin", NULL, 0, size, buf, &got, &ei);
	cr_assert_eq(rc, TFS_OK, "%s %s", tfs_strerror(rc), ei.message);
	cr_assert(memcmp(buf, data, size) == 0);
	cr_assert_lt(now_s() - t0, 30.0, "stalled GET took %.2f s", now_s() - t0);

	s3_client_stats(c, &st);
	/* 2 + 1 + 1 + 1 + 1; the reset_before may instead be retried inside
	 * curl, which replays a request once when a reused connection died */
	cr_assert_geq(st.retries, 6, "retries %llu", (unsigned long long)st.retries);
	cr_assert_eq(st.errors, 0);
	/* failed attempts are timed too: the stalled one took over 1 s */
	cr_assert_eq(st.latency.count, st.requests);
	cr_assert_geq(latency_hist_quantile(&st.latency, 1.0), 1000000000ull);
	s3_client_free(c);
	proxy_stop(&p);
	free(buf);
	free(data);
}

Test(s3_client, persistent_faults_become_io_errors, .fini = proxy_fini)
{
	NEED_S3();
	static struct proxy p;
	char bucket[64], buf[16];
	struct s3_client *setup = new_bucket("fault2", bucket, sizeof(bucket));
	struct tfs_errinfo ei;
	struct obj_meta m;
	struct objstore_stats st;
	struct s3_client *c;
	struct objstore *os;
	size_t got;
	int rc;

	s3_client_free(setup);
	NEED_PROXY(&p);
	/* no stall here: a slow answer must not count as one more retry */
	c = fault_client(&p, bucket, 3, 30000);
	os = s3_client_objstore(c);

	/* a missing key behind 503s is an I/O error, never "no such key" */
	proxy_ctl(&p, "fault?kind=503&count=100");
	cr_assert_eq(objstore_get_range(os, "absent", NULL, 0, 16, buf, &got, &ei), TFS_E_IO);
	cr_assert_eq(ei.http_status, 503);
	cr_assert_eq(objstore_head(os, "absent", &m, &ei), TFS_E_IO);
	cr_assert_eq(s3_client_check(c, NULL, &ei), TFS_E_IO);
	proxy_ctl(&p, "clear");
	proxy_ctl(&p, "fault?kind=reset_before&count=100");
	rc = objstore_head(os, "absent", &m, &ei);
	cr_assert_eq(rc, TFS_E_IO, "%s: %s", tfs_strerror(rc), ei.message);
	proxy_ctl(&p, "clear");
	cr_assert_eq(objstore_head(os, "absent", &m, &ei), TFS_E_NOENT);

	s3_client_stats(c, &st);
	cr_assert_eq(st.retries, 4 * 3);
	cr_assert_eq(st.errors, 5);
	s3_client_free(c);
	proxy_stop(&p);
}
