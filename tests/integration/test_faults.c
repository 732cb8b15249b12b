/* test_faults.c - reads and lookups through tierfs-faultproxy.
 *
 * Each test gets its own bucket and proxy and mounts through the proxy.
 * Faults are armed after the mount's own start-up requests, scoped by
 * method and by a path substring ("/BUCKET/KEY" for object GETs,
 * "list-type" for LIST) so they hit exactly the requests under test.
 * Transient faults must be invisible (right bytes, retries counted by the
 * proxy); persistent ones must surface as EIO in bounded time - never as
 * ENOENT, never as wrong or missing data - and must not stick once the
 * fault is gone.  Shaping must act (lower bounds on time only: CI may be
 * slow) and a request rate over the limit must look like S3's 503
 * SlowDown, which a read survives with exact bytes.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define F_KEY "f.bin"
#define F_SEED 0xf00du
#define F_SIZE (3 * IT_MIB + 5)
#define DEEP_KEY "zzz/deep/file.bin"
#define DEEP_SEED 0xdee9u
#define DEEP_SIZE 100000u
#define N_LIST 1500

static struct it_env env;
static struct it_bucket bucket;
static struct it_proxy proxy;
static struct it_mount mnt;
static char obj_path[160];         /* "/BUCKET/f.bin": matches object GETs only */

static void faults_init(void)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "faults", &bucket), 0, "create bucket");
	/* "aaa.txt" sorts first, so a one-key LIST at mount time returns it
	 * and tells nothing about zzz/ */
	cr_assert_eq(it_put_gen(&bucket, "aaa.txt", 1, 100), 0);
	cr_assert_eq(it_put_gen(&bucket, F_KEY, F_SEED, F_SIZE), 0);
	cr_assert_eq(it_put_gen(&bucket, DEEP_KEY, DEEP_SEED, DEEP_SIZE), 0);
	it_fmt(obj_path, sizeof(obj_path), "/%s/%s", bucket.name, F_KEY);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
}

static void faults_fini(void)
{
	it_cleanup();
	it_proxy_stop(&proxy);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(faults, .init = faults_init, .fini = faults_fini, .timeout = 120);

/* Mount through the proxy with --chunk-size 1M plus extra. */
static void mount_via_proxy(const char *const *extra)
{
	const char *opts[24];
	size_t n = 0;
	opts[n++] = "--chunk-size";
	opts[n++] = "1M";
	opts[n++] = "-vv";
	for (size_t i = 0; extra && extra[i] && n < 23; i++)
		opts[n++] = extra[i];
	opts[n] = NULL;
	char src[128];
	it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	if (it_mount(&env, src, proxy.url, opts, &mnt) != 0)
		cr_assert_fail("mount through the proxy failed (status %d): %s", mnt.status,
			 it_mount_log(&mnt));
}

static void path_of(const char *rel, char *out, size_t n)
{
	it_fmt(out, n, "%s/%s", mnt.dir, rel);
}

/* Look the file up (so faults armed next hit only the reads). */
static void lookup_ok(const char *rel, uint64_t size)
{
	char p[PATH_MAX];
	struct stat st;
	path_of(rel, p, sizeof(p));
	if (stat(p, &st) != 0) {
		int err = errno;
		char *log = it_mount_log(&mnt);
		size_t ll = strlen(log);
		cr_assert_fail("stat %s: %s; daemon log ends: %s", rel, strerror(err),
			       log + (ll > 3000 ? ll - 3000 : 0));
	}
	cr_assert_eq((uint64_t)st.st_size, size, "%s: size %lld", rel, (long long)st.st_size);
}

/* Read all of rel with 128 KiB reads; it must be exactly the upload. */
static void read_all_ok(const char *rel, uint64_t seed, uint64_t size)
{
	char p[PATH_MAX];
	path_of(rel, p, sizeof(p));
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		int err = errno;
		char *log = it_mount_log(&mnt);
		size_t ll = strlen(log);
		cr_assert_fail("open %s: %s; daemon log ends: %s", rel, strerror(err),
			       log + (ll > 3000 ? ll - 3000 : 0));
	}
	char *buf = malloc(size + 1);
	ssize_t r = it_pread_full(fd, buf, size + 1, 0);
	cr_assert_eq(r, (ssize_t)size, "read %s: %zd (%s), want %llu", rel, r,
		     r < 0 ? strerror(errno) : "", (unsigned long long)size);
	int64_t bad = it_gen_mismatch(seed, 0, buf, size);
	cr_assert_eq(bad, -1, "%s: wrong byte at %lld", rel, (long long)bad);
	free(buf);
	close(fd);
}


/* A transient fault on the object GETs: the read must succeed with the
 * right bytes, and the proxy must have injected exactly `faults`. */
static double transient_get_fault(const char *kind, unsigned count, const char *more,
				  const char *const *extra)
{
	mount_via_proxy(extra);
	lookup_ok(F_KEY, F_SIZE);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=%s&count=%u&method=GET&path=%s%s", kind, count,
				    obj_path, more), 0);
	double t0 = it_now();
	read_all_ok(F_KEY, F_SEED, F_SIZE);
	double secs = it_now() - t0;
	long long faults = it_proxy_stat(&proxy, "faults");
	long long gets = it_proxy_stat(&proxy, "GET");
	cr_expect_eq(faults, (long long)count, "%s: proxy injected %lld faults, armed %u", kind,
		     faults, count);
	/* F_SIZE spans 4 chunks: at least one good GET besides the failures */
	cr_expect_geq(gets, (long long)count + 1, "%s: only %lld GETs for %u faults", kind, gets,
		      count);
	/* a bound on a hang, not a speed (a 5 s stall plus its retry is
	 * about 6 s here); the stall cases check their timeout themselves */
	cr_expect_lt(secs, 60.0, "%s: read took %.1f s", kind, secs);
	cr_log_info("%s%s x%u: %lld GETs, %.2f s", kind, more, count, gets, secs);
	it_unmount_ok(&env, &mnt);
	return secs;
}

Test(faults, get_503_twice_then_ok)
{
	transient_get_fault("503", 2, "", NULL);
}

Test(faults, get_500_once_then_ok)
{
	transient_get_fault("500", 1, "", NULL);
}

Test(faults, get_reset_mid_body)
{
	transient_get_fault("reset", 1, "&after=100000", NULL);
}

Test(faults, get_truncate_mid_body)
{
	transient_get_fault("truncate", 1, "&after=300001", NULL);
}

Test(faults, get_reset_before_response)
{
	transient_get_fault("reset_before", 2, "", NULL);
}

/* Answers that are complete and well framed but do not hold what was
 * asked: each is retried like a 503, and none of its bytes is returned. */
Test(faults, get_429_twice_then_ok)
{
	transient_get_fault("429", 2, "", NULL);
}

Test(faults, get_200_whole_object_for_a_range_twice_then_ok)
{
	transient_get_fault("norange", 2, "", NULL);
}

Test(faults, get_wrong_content_range_twice_then_ok)
{
	transient_get_fault("bad_crange", 2, "", NULL);
}

Test(faults, get_extra_bytes_after_the_body_twice_then_ok)
{
	transient_get_fault("extra", 2, "", NULL);
}

/* A stall of 5 s mid-body, under the default stall timeout (15 s): the
 * proxy then ends the response short, and the read retries. */
Test(faults, get_stall_5s_mid_body_then_ok)
{
	transient_get_fault("stall", 1, "&after=65536&ms=5000", NULL);
}

/* The proxy stalls one GET for 60 s after `after` body bytes: only the
 * stall timeout (2 s) saves the read.  It takes the timeout plus a retry
 * (about 3 s here); what must hold on any machine, however slow, is that
 * the read ends long before the stall would have: under 20 s. */
static void stall_case(const char *after)
{
	const char *extra[] = { "--stall-timeout", "2", NULL };
	char more[64];
	it_fmt(more, sizeof(more), "&after=%s&ms=60000", after);
	double secs = transient_get_fault("stall", 1, more, extra);
	cr_expect_lt(secs, 20.0, "stall after %s bytes: read took %.1f s with --stall-timeout 2",
		     after, secs);
	cr_expect_gt(secs, 1.5, "stall after %s bytes: read took only %.1f s: no stall?", after,
		     secs);
}

Test(faults, get_stall_before_body_detected)
{
	stall_case("0");
}

Test(faults, get_stall_mid_body_detected)
{
	stall_case("65536");
}

Test(faults, get_503_forever_is_eio_then_recovers)
{
	const char *extra[] = { "--max-retries", "2", NULL };
	mount_via_proxy(extra);
	lookup_ok(F_KEY, F_SIZE);
	char p[PATH_MAX];
	path_of(F_KEY, p, sizeof(p));
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=1000000&method=GET&path=%s",
				    obj_path), 0);
	char *buf = malloc(IT_MIB);
	double t0 = it_now();
	errno = 0;
	ssize_t r = pread(fd, buf, 65536, 0);
	double secs = it_now() - t0;
	cr_expect(r < 0 && errno == EIO, "read under persistent 503: %zd (%s), want EIO", r,
		  strerror(errno));
	cr_expect_lt(secs, 15.0, "EIO took %.1f s", secs);
	long long faults = it_proxy_stat(&proxy, "faults");
	/* one ranged GET = 1 try + 2 retries; the kernel and read-ahead may
	 * ask a few times, but not unboundedly */
	cr_expect_geq(faults, 3, "only %lld failed GETs: --max-retries 2 not used?", faults);
	cr_expect_leq(faults, 60, "%lld failed GETs for one read", faults);

	cr_assert_eq(it_proxy_clear(&proxy), 0);
	r = it_pread_full(fd, buf, IT_MIB, 0);
	cr_assert_eq(r, (ssize_t)IT_MIB, "read after clearing the fault: %zd (%s)", r,
		     r < 0 ? strerror(errno) : "");
	cr_expect_eq(it_gen_mismatch(F_SEED, 0, buf, IT_MIB), -1, "wrong bytes after recovery");
	free(buf);
	close(fd);
	read_all_ok(F_KEY, F_SEED, F_SIZE);
	it_unmount_ok(&env, &mnt);
}

Test(faults, lookup_under_persistent_503_is_eio_not_enoent)
{
	const char *extra[] = { "--max-retries", "2", NULL };
	mount_via_proxy(extra);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	/* every request fails: LIST, HEAD, GET */
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=1000000"), 0);
	char p[PATH_MAX];
	path_of(DEEP_KEY, p, sizeof(p));
	struct stat st;
	double t0 = it_now();
	errno = 0;
	int r = stat(p, &st);
	double secs = it_now() - t0;
	cr_expect(r < 0 && errno == EIO, "stat %s under persistent 503: %d (%s), want EIO",
		  DEEP_KEY, r, strerror(errno));
	cr_expect_lt(secs, 15.0, "lookup failure took %.1f s", secs);
	cr_expect_gt(it_proxy_stat(&proxy, "faults"), 0, "the lookup sent no request");

	/* a failed lookup is not remembered as absent */
	cr_assert_eq(it_proxy_clear(&proxy), 0);
	lookup_ok(DEEP_KEY, DEEP_SIZE);
	read_all_ok(DEEP_KEY, DEEP_SEED, DEEP_SIZE);
	it_unmount_ok(&env, &mnt);
}

/* With stale-if-error off: see the outage tests below for it on. */
Test(faults, open_with_head_500_is_eio_not_enoent)
{
	const char *extra[] = { "--max-retries", "2", "--metadata-ttl", "0", "--max-stale", "0",
				NULL };
	mount_via_proxy(extra);
	lookup_ok(F_KEY, F_SIZE);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=500&count=1000000&method=HEAD"), 0);
	char p[PATH_MAX];
	path_of(F_KEY, p, sizeof(p));
	errno = 0;
	int fd = open(p, O_RDONLY);
	int err = errno;
	long long heads = it_proxy_stat(&proxy, "HEAD");
	cr_expect(!(fd < 0 && err == ENOENT), "open under HEAD 500s gave ENOENT");
	if (heads > 0) {
		/* it asked, and the answer was 500 every time */
		cr_expect(fd < 0 && err == EIO, "open after %lld failed HEADs: fd %d (%s), want EIO",
			  heads, fd, strerror(err));
	} else {
		cr_expect_geq(fd, 0, "open failed (%s) without sending a HEAD", strerror(err));
	}
	if (fd >= 0)
		close(fd);
	cr_assert_eq(it_proxy_clear(&proxy), 0);
	read_all_ok(F_KEY, F_SEED, F_SIZE);
	it_unmount_ok(&env, &mnt);
}

/* Names of mnt/rel, or NULL with *err = errno when listing failed. */
static char **list_dir(const char *rel, size_t *n, int *err)
{
	char p[PATH_MAX];
	path_of(rel, p, sizeof(p));
	*n = 0;
	*err = 0;
	errno = 0;
	DIR *d = opendir(p);
	if (!d) {
		*err = errno;
		return NULL;
	}
	char **names = NULL;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		names = realloc(names, (*n + 1) * sizeof(*names));
		names[(*n)++] = strdup(de->d_name);
		errno = 0;
	}
	*err = errno;
	closedir(d);
	return names;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void upload_list_dir(void)
{
	struct it_obj *objs = calloc(N_LIST, sizeof(*objs));
	char (*keys)[32] = calloc(N_LIST, 32);
	for (unsigned i = 0; i < N_LIST; i++) {
		it_fmt(keys[i], 32, "list/e%04u", i);
		objs[i] = (struct it_obj){ keys[i], i, i % 10 };
	}
	cr_assert_eq(it_put_many(&bucket, objs, N_LIST, 8), 0);
	free(objs);
	free(keys);
}

/* The listing must be exactly list/e0000..e1499. */
static void check_list_names(char **names, size_t n)
{
	cr_assert_eq(n, N_LIST, "listing has %zu names, want %u", n, N_LIST);
	qsort(names, n, sizeof(*names), cmp_str);
	for (unsigned i = 0; i < N_LIST; i++) {
		char want[16];
		it_fmt(want, sizeof(want), "e%04u", i);
		cr_assert_str_eq(names[i], want);
	}
}

Test(faults, list_503_twice_then_complete_listing)
{
	upload_list_dir();
	mount_via_proxy(NULL);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	/* 1,500 keys = 2 pages; the first two LIST requests fail */
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=2&method=GET&path=list-type"), 0);
	size_t n;
	int err;
	char **names = list_dir("list", &n, &err);
	cr_assert_eq(err, 0, "listing under 2 LIST 503s: %s", strerror(err));
	check_list_names(names, n);
	free_names(names, n);
	cr_expect_eq(it_proxy_stat(&proxy, "faults"), 2, "faults injected: %lld",
		     it_proxy_stat(&proxy, "faults"));
	it_unmount_ok(&env, &mnt);
}

Test(faults, list_failing_midway_never_partial)
{
	upload_list_dir();
	const char *extra[] = { "--max-retries", "2", NULL };
	mount_via_proxy(extra);
	lookup_ok("list/e0000", 0);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	/* the second page fails persistently: its request carries a token */
	cr_assert_eq(it_proxy_fault(&proxy,
				    "kind=503&count=1000000&method=GET&path=continuation-token"), 0);
	size_t n;
	int err;
	char **names = list_dir("list", &n, &err);
	if (err == 0) {
		/* only acceptable if it never needed page 2 (served from a
		 * complete earlier listing) */
		check_list_names(names, n);
	} else {
		cr_expect_eq(err, EIO, "listing failed with %s, want EIO", strerror(err));
	}
	free_names(names, n);
	cr_assert_eq(it_proxy_clear(&proxy), 0);
	names = list_dir("list", &n, &err);
	cr_assert_eq(err, 0, "listing after clearing the fault: %s", strerror(err));
	check_list_names(names, n);
	free_names(names, n);
	it_unmount_ok(&env, &mnt);
}

/* ---- shaping ------------------------------------------------------------ */

/* /__proxy/shape?query; the test fails unless the proxy accepts it. */
static void shape(const char *query)
{
	char what[256], body[256];
	it_fmt(what, sizeof(what), "shape?%s", query);
	int code = it_proxy_ctl(&proxy, what, body, sizeof(body));
	cr_assert_eq(code, 200, "proxy %s -> %d %s", what, code, body);
}

/* An s3_client on the test bucket through the proxy (free with
 * s3_client_free()). */
static struct s3_client *proxy_client(unsigned max_retries)
{
	struct s3_config cfg = {
		.endpoint = proxy.url,
		.region = env.region,
		.bucket = bucket.name,
		.path_style = true,
		.access_key = env.access_key,
		.secret_key = env.secret_key,
		.max_connections = 1,
		.max_retries = max_retries,
	};
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	struct s3_client *c = s3_client_new(&cfg, &ei);
	cr_assert_not_null(c, "s3_client_new: %s", ei.message);
	return c;
}

/* GET [0, len) of DEEP_KEY through c: it must succeed with the right bytes.
 * Returns its wall time in seconds. */
static double timed_get_ok(struct s3_client *c, char *buf, size_t len)
{
	struct tfs_errinfo ei;
	size_t got = 0;
	tfs_errinfo_clear(&ei);
	double t0 = it_now();
	int rc = objstore_get_range(s3_client_objstore(c), DEEP_KEY, NULL, 0, len, buf, &got, &ei);
	double secs = it_now() - t0;
	cr_assert_eq(rc, TFS_OK, "GET through the proxy: %s (HTTP %d %s)", tfs_strerror(rc),
		     ei.http_status, ei.message);
	cr_assert_eq(got, len, "GET got %zu bytes, want %zu", got, len);
	cr_assert_eq(it_gen_mismatch(DEEP_SEED, 0, buf, len), -1, "wrong bytes through the proxy");
	return secs;
}

/* Shaping must really shape.  Lower bounds only: a slow machine or a
 * sanitizer build may take longer, never shorter. */
Test(faults, shape_delays_first_byte_and_caps_bandwidth)
{
	struct s3_client *c = proxy_client(0);
	char *buf = malloc(DEEP_SIZE);
	timed_get_ok(c, buf, 4096);	/* the connection is up before timing */

	shape("latency_ms=200");
	double secs = timed_get_ok(c, buf, 4096);
	cr_expect_geq(secs, 0.2, "GET with latency_ms=200 took %.3f s", secs);
	cr_log_info("latency_ms=200: 4 KiB GET in %.3f s", secs);

	/* the per-connection bucket starts empty when the rate changes, so
	 * DEEP_SIZE bytes at 200 kB/s take DEEP_SIZE / 200 kB/s = 0.5 s; 10%
	 * off that for rounding (unshaped, they take about a millisecond) */
	shape("latency_ms=0&bandwidth=200000");
	secs = timed_get_ok(c, buf, DEEP_SIZE);
	cr_expect_geq(secs, 0.9 * DEEP_SIZE / 200000, "%u bytes at 200 kB/s took %.3f s",
		      DEEP_SIZE, secs);
	cr_log_info("bandwidth=200000: %u bytes in %.3f s", DEEP_SIZE, secs);
	free(buf);
	s3_client_free(c);
}

/* Over the request rate the proxy answers as S3 does: 503 with the XML
 * code SlowDown, counted in "slowdowns"; below it requests pass again.
 * Control requests are never limited (the stats calls here would fail). */
Test(faults, request_rate_over_limit_is_slowdown)
{
	struct s3_client *c = proxy_client(0);
	char *buf = malloc(4096);
	struct tfs_errinfo ei;
	size_t got;
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	timed_get_ok(c, buf, 4096);	/* no rate limit by default */
	cr_assert_eq(it_proxy_stat(&proxy, "slowdowns"), 0);
	/* a bucket of one request, refilled once a second: the first GET
	 * takes the token, the second right after finds none */
	shape("req_rate=1&req_burst=1");
	timed_get_ok(c, buf, 4096);
	tfs_errinfo_clear(&ei);
	int rc = objstore_get_range(s3_client_objstore(c), DEEP_KEY, NULL, 0, 4096, buf, &got, &ei);
	cr_expect_eq(rc, TFS_E_IO, "GET over the rate: %s, want IO", tfs_strerror(rc));
	cr_expect_eq(ei.http_status, 503, "GET over the rate: HTTP %d", ei.http_status);
	cr_expect_str_eq(ei.code, "SlowDown");
	cr_expect_eq(it_proxy_stat(&proxy, "slowdowns"), 1);
	cr_expect_eq(it_proxy_stat(&proxy, "faults"), 0, "a slowdown counted as a fault");
	shape("req_rate=0");
	timed_get_ok(c, buf, 4096);
	cr_expect_eq(it_proxy_stat(&proxy, "slowdowns"), 1);
	free(buf);
	s3_client_free(c);
}

/* A read under a low request rate: tierfs's GETs of F_KEY's 4 chunks come
 * faster than 2 a second, so some get 503 SlowDown, and its retries must
 * still deliver exactly the uploaded bytes.  The bucket holds one request
 * and refills every 0.5 s; a refused GET backs off (full jitter, 50 ms
 * doubling to 2 s, src/s3/s3_client.c), and --max-retries 20 gives each
 * GET ~15 s of tries on average for a token that comes every 0.5 s, so
 * running out of retries is vanishingly unlikely even when read-ahead
 * sends several GETs at once (the default 6 would be ~1.6 s). */
Test(faults, read_under_request_rate_limit_is_exact)
{
	const char *extra[] = { "--max-retries", "20", NULL };
	mount_via_proxy(extra);
	lookup_ok(F_KEY, F_SIZE);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	shape("req_rate=2&req_burst=1");
	double t0 = it_now();
	read_all_ok(F_KEY, F_SEED, F_SIZE);
	double secs = it_now() - t0;
	long long slow = it_proxy_stat(&proxy, "slowdowns");
	long long gets = it_proxy_stat(&proxy, "object_GET");
	cr_expect_gt(slow, 0, "no request refused at req_rate=2 (%lld object GETs in %.2f s)",
		     gets, secs);
	cr_expect_eq(it_proxy_stat(&proxy, "faults"), 0);
	cr_log_info("req_rate=2: %lld object GETs, %lld slowdowns, %.2f s", gets, slow, secs);
	shape("req_rate=0");
	it_unmount_ok(&env, &mnt);
}

/* ---- invalid answers past the retry budget ------------------------------ */

#define K_SIZE (IT_MIB + 200000u)   /* over a chunk: a 200 cannot fit the range */
static const char *const k_kinds[] = { "429", "norange", "bad_crange", "extra", "truncate" };
#define N_KINDS (sizeof(k_kinds) / sizeof(k_kinds[0]))

/* Each kind of answer, on every GET of its own file: EIO (never ENOENT,
 * never bytes), after the retry budget; then, the fault cleared, exactly
 * the upload: nothing of the bad answers was cached. */
Test(faults, every_invalid_answer_past_the_budget_is_eio_and_never_cached)
{
	char key[32], path[160], p[PATH_MAX];
	for (unsigned i = 0; i < N_KINDS; i++) {
		it_fmt(key, sizeof(key), "k/%u.bin", i);
		cr_assert_eq(it_put_gen(&bucket, key, 0x4000 + i, K_SIZE), 0);
	}
	const char *extra[] = { "--max-retries", "2", NULL };
	mount_via_proxy(extra);
	char *buf = malloc(K_SIZE);
	for (unsigned i = 0; i < N_KINDS; i++) {
		it_fmt(key, sizeof(key), "k/%u.bin", i);
		lookup_ok(key, K_SIZE);
		it_fmt(path, sizeof(path), "/%s/%s", bucket.name, key);
		cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
		cr_assert_eq(it_proxy_fault(&proxy, "kind=%s&count=1000000&method=GET&path=%s",
					    k_kinds[i], path), 0);
		path_of(key, p, sizeof(p));
		int fd = open(p, O_RDONLY);
		cr_assert_geq(fd, 0, "open %s: %s", key, strerror(errno));
		errno = 0;
		ssize_t r = pread(fd, buf, K_SIZE, 0);
		int err = errno;
		cr_expect(r < 0 && err == EIO, "%s on every GET: read %zd (%s), want EIO",
			  k_kinds[i], r, strerror(err));
		long long faults = it_proxy_stat(&proxy, "faults");
		cr_expect_geq(faults, 3, "%s: %lld faulty answers: --max-retries 2 not used?",
			      k_kinds[i], faults);
		cr_assert_eq(it_proxy_clear(&proxy), 0);
		close(fd);
		read_all_ok(key, 0x4000 + i, K_SIZE);
		cr_log_info("%s: EIO after %lld faulty answers, then exact", k_kinds[i], faults);
	}
	free(buf);
	it_unmount_ok(&env, &mnt);
}

/* ---- throttling: some requests, then all for 5 s ------------------------ */

#define T_FILES 8
#define T_SIZE (IT_MIB + 300000u)

struct reader {
	char path[PATH_MAX];
	uint64_t seed, size;
	int err;               /* errno of a failed open or read, 0 */
	int64_t bad;           /* first wrong byte, -1 */
	double done;           /* it_now() when finished */
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(r->size + 1);
	r->err = 0;
	r->bad = -1;
	int fd = open(r->path, O_RDONLY);
	if (fd < 0) {
		r->err = errno;
	} else {
		ssize_t got = it_pread_full(fd, buf, r->size + 1, 0);
		if (got != (ssize_t)r->size)
			r->err = got < 0 ? errno : EMSGSIZE;
		else
			r->bad = it_gen_mismatch(r->seed, 0, buf, r->size);
		close(fd);
	}
	free(buf);
	r->done = it_now();
	return NULL;
}

static void reader_check(const struct reader *r)
{
	cr_expect_eq(r->err, 0, "%s: %s", r->path, strerror(r->err));
	cr_expect_eq(r->bad, -1, "%s: wrong byte at %lld", r->path, (long long)r->bad);
}

/* 503 SlowDown and 429 on 10% of the GETs of t/, then 503 on all of them
 * for 5 s: every byte right (retries with capped, jittered backoff:
 * --max-retries 20 is ~15 s of backoff on average, far more than 5 s).
 * Meanwhile another file, outside t/, reads at once: a throttled prefix
 * holds no lock or connection the others need.  (Its reader must be done
 * before t/'s, which cannot finish before the 5 s are over.) */
Test(faults, throttled_10pct_then_all_for_5s_bytes_exact_others_flow)
{
	char key[32], p[PATH_MAX], tpath[160];
	for (unsigned i = 0; i < T_FILES; i++) {
		it_fmt(key, sizeof(key), "t/%u.bin", i);
		cr_assert_eq(it_put_gen(&bucket, key, 0x7000 + i, T_SIZE), 0);
	}
	const char *extra[] = { "--max-retries", "20", NULL };
	mount_via_proxy(extra);
	for (unsigned i = 0; i < T_FILES; i++) {
		it_fmt(key, sizeof(key), "t/%u.bin", i);
		lookup_ok(key, T_SIZE);
	}
	lookup_ok(F_KEY, F_SIZE);
	it_fmt(tpath, sizeof(tpath), "/%s/t/", bucket.name);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=1000000&pct=10&method=GET&path=%s",
				    tpath), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=429&count=1000000&pct=10&method=GET&path=%s",
				    tpath), 0);
	/* the first half under 10% */
	for (unsigned i = 0; i < T_FILES / 2; i++) {
		it_fmt(key, sizeof(key), "t/%u.bin", i);
		read_all_ok(key, 0x7000 + i, T_SIZE);
	}
	long long some = it_proxy_stat(&proxy, "faults");
	/* then all of them for 5 s, the other half read meanwhile */
	double t0 = it_now();
	cr_assert_eq(it_proxy_fault(&proxy, "kind=503&for_ms=5000&method=GET&path=%s", tpath), 0);
	struct reader rs[T_FILES / 2 + 1];
	pthread_t th[T_FILES / 2 + 1];
	for (unsigned i = 0; i <= T_FILES / 2; i++) {
		if (i < T_FILES / 2) {
			it_fmt(key, sizeof(key), "t/%u.bin", T_FILES / 2 + i);
			rs[i] = (struct reader){ .seed = 0x7000 + T_FILES / 2 + i, .size = T_SIZE };
		} else {
			it_fmt(key, sizeof(key), "%s", F_KEY);
			rs[i] = (struct reader){ .seed = F_SEED, .size = F_SIZE };
		}
		path_of(key, p, sizeof(p));
		it_fmt(rs[i].path, sizeof(rs[i].path), "%s", p);
		cr_assert_eq(pthread_create(&th[i], NULL, reader_main, &rs[i]), 0);
	}
	double last_t = 0;
	for (unsigned i = 0; i <= T_FILES / 2; i++) {
		pthread_join(th[i], NULL);
		reader_check(&rs[i]);
		if (i < T_FILES / 2 && rs[i].done > last_t)
			last_t = rs[i].done;
	}
	long long all = it_proxy_stat(&proxy, "faults");
	cr_expect_gt(all - some, T_FILES / 2, "only %lld faults in the 5 s of 503s", all - some);
	cr_expect_geq(last_t - t0, 4.9, "t/ read in %.1f s although every GET failed for 5 s",
		      last_t - t0);
	cr_expect_lt(rs[T_FILES / 2].done, last_t,
		     "%s waited for the throttled prefix (done at +%.1f s, t/ at +%.1f s)", F_KEY,
		     rs[T_FILES / 2].done - t0, last_t - t0);
	cr_log_info("throttling: %lld faults under 10%%, %lld in the 5 s; t/ done at +%.1f s, "
		    "%s at +%.1f s", some, all - some, last_t - t0, F_KEY,
		    rs[T_FILES / 2].done - t0);
	it_unmount_ok(&env, &mnt);
}

/* A store that admits 10 requests a second, 16 readers of 64 small files
 * at once, the default retry budget (6).  Each retry on its own (standard
 * mode) keeps coming back at the limit and many reads end in EIO; with
 * --retry-mode adaptive the mount learns the rate from the SlowDowns and
 * paces its requests to it, and every read gets its bytes. */
#define RL_FILES 64
#define RL_READERS 16
#define RL_SIZE 100000u

static void *rl_reader(void *arg)
{
	struct reader *rs = arg;

	for (unsigned i = 0; i < RL_FILES / RL_READERS; i++)
		reader_main(&rs[i * RL_READERS]);
	return NULL;
}

/* Read RL_FILES files under the limit with the given retry mode; the
 * reads that failed. */
static unsigned read_under_limit(const char *mode, struct reader *rs)
{
	const char *extra[] = { "--retry-mode", mode, "--read-ahead", "0", "--scan-prefetch", "0",
				NULL };
	pthread_t th[RL_READERS];
	char key[32];
	unsigned failed = 0;

	mount_via_proxy(extra);
	for (unsigned i = 0; i < RL_FILES; i++) {
		it_fmt(key, sizeof(key), "rl/%02u.bin", i);
		lookup_ok(key, RL_SIZE);
		path_of(key, rs[i].path, sizeof(rs[i].path));
		rs[i].seed = 0x71 + i;
		rs[i].size = RL_SIZE;
	}
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	shape("req_rate=10&req_burst=10");
	for (unsigned t = 0; t < RL_READERS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, rl_reader, &rs[t]), 0);
	for (unsigned t = 0; t < RL_READERS; t++)
		pthread_join(th[t], NULL);
	shape("req_rate=0");
	for (unsigned i = 0; i < RL_FILES; i++)
		failed += rs[i].err != 0;
	if (failed) {
		char *log = it_mount_log(&mnt);
		size_t ll = strlen(log);

		cr_log_warn("daemon log ends: %s", log + (ll > 6000 ? ll - 6000 : 0));
		free(log);
	}
	cr_log_info("--retry-mode %s: %u of %u reads failed; %lld SlowDowns; s3.throttles %lld, "
		    "s3.rate_waits %lld", mode, failed, RL_FILES, it_proxy_stat(&proxy, "slowdowns"),
		    it_daemon_stat(&mnt, "s3.throttles"), it_daemon_stat(&mnt, "s3.rate_waits"));
	return failed;
}

Test(faults, adaptive_retry_mode_reads_everything_under_a_request_rate_limit)
{
	struct reader rs[RL_FILES];
	char key[32];
	struct it_obj objs[RL_FILES];

	for (unsigned i = 0; i < RL_FILES; i++) {
		it_fmt(key, sizeof(key), "rl/%02u.bin", i);
		objs[i] = (struct it_obj){ strdup(key), 0x71 + i, RL_SIZE };
	}
	cr_assert_eq(it_put_many(&bucket, objs, RL_FILES, 4), 0);
	for (unsigned i = 0; i < RL_FILES; i++)
		free((char *)objs[i].key);
	cr_expect_eq(read_under_limit("adaptive", rs), 0, "reads failed in adaptive mode");
	for (unsigned i = 0; i < RL_FILES; i++)
		reader_check(&rs[i]);
	cr_expect_gt(it_daemon_stat(&mnt, "s3.throttles"), 0, "the limit was never hit");
	cr_expect_gt(it_daemon_stat(&mnt, "s3.rate_waits"), 0, "no request was paced");
	it_unmount_ok(&env, &mnt);
}

/* ---- the store unreachable: stale-if-error ------------------------------ */

#define S_FILES 3
#define S_SIZE 300000u
#define S_SEED 0x5100u
#define COLD_KEY "s/cold.bin"
#define COLD_SEED 0xc01du

static void upload_stale_dir(void)
{
	char key[32];
	for (unsigned i = 0; i < S_FILES; i++) {
		it_fmt(key, sizeof(key), "s/%u.bin", i);
		cr_assert_eq(it_put_gen(&bucket, key, S_SEED + i, S_SIZE), 0);
	}
	cr_assert_eq(it_put_gen(&bucket, COLD_KEY, COLD_SEED, S_SIZE), 0);
}

/* s/ lists exactly the S_FILES files and cold.bin. */
static void stale_dir_lists_all(const char *when)
{
	size_t n;
	int err;
	char **names = list_dir("s", &n, &err);
	cr_assert_eq(err, 0, "%s: listing s/: %s", when, strerror(err));
	cr_expect_eq(n, S_FILES + 1, "%s: s/ has %zu names", when, n);
	free_names(names, n);
}

static unsigned log_count(const char *what)
{
	char *log = it_mount_log(&mnt);
	unsigned n = 0;
	for (const char *p = log; (p = strstr(p, what)); p++)
		n++;
	free(log);
	return n;
}

/* How the store goes away: connections refused (the proxy stopped), or
 * every request answered 503 (the proxy up, the store failing). */
enum outage { OUT_REFUSED, OUT_503 };

static void outage_begin(enum outage how)
{
	if (how == OUT_REFUSED)
		it_proxy_stop(&proxy);
	else
		cr_assert_eq(it_proxy_fault(&proxy, "kind=503&count=1000000000"), 0);
}

static void outage_end(enum outage how)
{
	if (how == OUT_REFUSED)
		cr_assert_eq(it_proxy_restart(&env, env.endpoint, &proxy), 0, "restart the proxy");
	else
		cr_assert_eq(it_proxy_clear(&proxy), 0);
}

/* With a 1 s metadata TTL, a directory listed and files read before the
 * outage: once the TTL has passed during it, the cached files still stat,
 * list and read exactly; the uncached one opens but reads EIO (never
 * ENOENT); a name the stale listing lacks is EIO, not ENOENT; stats count
 * it and the log says so once.  When the store is back, the same mount
 * reads the uncached file and logs the recovery once. */
static void outage_case(enum outage how)
{
	upload_stale_dir();
	const char *extra[] = { "--metadata-ttl", "1", "--max-retries", "2", "--read-ahead", "0",
				NULL };
	mount_via_proxy(extra);
	char key[32], p[PATH_MAX];
	stale_dir_lists_all("before");
	for (unsigned i = 0; i < S_FILES; i++) {
		it_fmt(key, sizeof(key), "s/%u.bin", i);
		read_all_ok(key, S_SEED + i, S_SIZE);
	}
	lookup_ok(COLD_KEY, S_SIZE);
	cr_expect_eq(it_daemon_stat(&mnt, "fs.stale_served"), 0);

	outage_begin(how);
	usleep(1500 * 1000);            /* past the TTL, the kernel's too */
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < S_FILES; i++) {
			it_fmt(key, sizeof(key), "s/%u.bin", i);
			lookup_ok(key, S_SIZE);
			read_all_ok(key, S_SEED + i, S_SIZE);
		}
		stale_dir_lists_all("during the outage");
		usleep(1100 * 1000);    /* past the TTL again: asked again */
	}
	path_of(COLD_KEY, p, sizeof(p));
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		int err = errno;
		char *log = it_mount_log(&mnt);
		size_t ll = strlen(log);
		cr_assert_fail("open of an uncached file during the outage: %s; daemon log ends: %s",
			       strerror(err), log + (ll > 6000 ? ll - 6000 : 0));
	}
	char *buf = malloc(S_SIZE);
	errno = 0;
	ssize_t r = pread(fd, buf, S_SIZE, 0);
	cr_expect(r < 0 && errno == EIO, "read of an uncached file during the outage: %zd (%s), "
		  "want EIO", r, strerror(errno));
	close(fd);
	path_of("s/never-listed.bin", p, sizeof(p));
	struct stat st;
	errno = 0;
	cr_expect(stat(p, &st) < 0 && errno == EIO, "a name the stale listing lacks: %s, want EIO",
		  strerror(errno));
	cr_expect_gt(it_daemon_stat(&mnt, "fs.stale_served"), 0, "nothing counted as served stale");
	cr_expect_eq(it_daemon_stat(&mnt, "fs.store_unreachable"), 1);
	cr_expect_eq(log_count("object store not answering"), 1, "outage logged %u times",
		     log_count("object store not answering"));

	outage_end(how);
	usleep(1100 * 1000);            /* past the probe interval and the TTL */
	stale_dir_lists_all("after");
	read_all_ok(COLD_KEY, COLD_SEED, S_SIZE);
	cr_expect_eq(it_daemon_stat(&mnt, "fs.store_unreachable"), 0);
	cr_expect_eq(log_count("object store answering again"), 1, "recovery logged %u times",
		     log_count("object store answering again"));

	/* a real deletion is believed at once: a 404 is not an outage */
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	cr_assert_eq(s3_client_delete(bucket.client, "s/0.bin", &ei), TFS_OK);
	usleep(1100 * 1000);
	size_t n;
	int err;
	char **names = list_dir("s", &n, &err);
	cr_assert_eq(err, 0, "listing after a deletion: %s", strerror(err));
	cr_expect_eq(n, S_FILES, "s/ after deleting one: %zu names", n);
	free_names(names, n);
	path_of("s/0.bin", p, sizeof(p));
	errno = 0;
	cr_expect(stat(p, &st) < 0 && errno == ENOENT, "stat of a deleted file: %s, want ENOENT",
		  strerror(errno));
	free(buf);
	it_unmount_ok(&env, &mnt);
}

Test(faults, outage_refused_serves_cached_files_and_listings)
{
	outage_case(OUT_REFUSED);
}

Test(faults, outage_503_serves_cached_files_and_listings)
{
	outage_case(OUT_503);
}

/* --max-stale 0: no stale answers; an outage past the TTL is EIO for the
 * cached file too (never ENOENT). */
Test(faults, outage_with_max_stale_0_is_eio)
{
	upload_stale_dir();
	const char *extra[] = { "--metadata-ttl", "1", "--max-retries", "1", "--max-stale", "0",
				NULL };
	mount_via_proxy(extra);
	read_all_ok("s/0.bin", S_SEED, S_SIZE);
	it_proxy_stop(&proxy);
	usleep(1500 * 1000);
	char p[PATH_MAX];
	struct stat st;
	path_of("s/0.bin", p, sizeof(p));
	errno = 0;
	cr_expect(stat(p, &st) < 0 && errno == EIO, "stat with --max-stale 0 in an outage: %s, "
		  "want EIO", strerror(errno));
	cr_expect_eq(it_daemon_stat(&mnt, "fs.stale_served"), 0);
	cr_assert_eq(it_proxy_restart(&env, env.endpoint, &proxy), 0);
	read_all_ok("s/0.bin", S_SEED, S_SIZE);
	it_unmount_ok(&env, &mnt);
}

/* ---- an object replaced or deleted while open and cached ---------------- */

#define V_SIZE (2 * IT_MIB + 1000u)
#define V_OLD 0x0e1du
#define V_NEW 0x0e2du

/* One read(2) of [off, off + len) through fd: old bytes (with new_ok:
 * or new bytes, the whole of what came from one version), possibly short
 * before an error, or an error (ESTALE, EIO, ENOENT); never a mix of
 * versions, never zeros.  Returns the errno, 0 when all bytes came. */
static int read_one_version(int fd, uint64_t off, size_t len, bool new_ok, const char *what,
			    const char **which)
{
	char *buf = malloc(len);
	errno = 0;
	ssize_t r = pread(fd, buf, len, (off_t)off);
	int err = r < 0 ? errno : 0;
	*which = "error";
	if (r < 0) {
		*which = strerror(err);
		cr_expect(err == ESTALE || err == EIO || err == ENOENT,
			  "%s: read @ %llu failed with %s", what, (unsigned long long)off,
			  strerror(err));
	} else {
		int64_t bad = it_gen_mismatch(V_OLD, off, buf, (size_t)r);
		*which = "old bytes";
		if (bad >= 0 && new_ok && it_gen_mismatch(V_NEW, off, buf, (size_t)r) == -1) {
			bad = -1;
			*which = "new bytes";
		}
		cr_expect_eq(bad, -1, "%s: read @ %llu: %zd bytes, not of one version from %lld",
			     what, (unsigned long long)off, r, (long long)bad);
		if (r < (ssize_t)len) {
			/* a short read is how an error after some bytes shows */
			*which = "short";
			err = EIO;
		}
	}
	free(buf);
	return err;
}

static int read_old_or_error(int fd, uint64_t off, size_t len, const char *what)
{
	const char *which;
	return read_one_version(fd, off, len, false, what, &which);
}

/* Overwritten with the same size: through a handle opened before, all of
 * the file once cached and half of another, reads give old bytes or an
 * error, never new ones or a mix; a new open reads the new object whole.
 * After that, the old handle may see the new bytes the new open put in
 * the kernel's page cache (it belongs to the inode, not to a handle),
 * never the old and the new in one read. */
Test(faults, overwrite_same_size_while_open_and_cached)
{
	cr_assert_eq(it_put_gen(&bucket, "v/full.bin", V_OLD, V_SIZE), 0);
	cr_assert_eq(it_put_gen(&bucket, "v/half.bin", V_OLD, V_SIZE), 0);
	const char *extra[] = { "--metadata-ttl", "1", "--read-ahead", "0", NULL };
	mount_via_proxy(extra);
	char p[PATH_MAX];
	path_of("v/full.bin", p, sizeof(p));
	int full = open(p, O_RDONLY);
	path_of("v/half.bin", p, sizeof(p));
	int half = open(p, O_RDONLY);
	cr_assert(full >= 0 && half >= 0, "open: %s", strerror(errno));
	cr_assert_eq(read_old_or_error(full, 0, V_SIZE, "before"), 0);
	cr_assert_eq(read_old_or_error(half, 0, IT_MIB, "before"), 0);
	cr_assert_eq(it_put_gen(&bucket, "v/full.bin", V_NEW, V_SIZE), 0);
	cr_assert_eq(it_put_gen(&bucket, "v/half.bin", V_NEW, V_SIZE), 0);
	usleep(1300 * 1000);
	const char *w1, *w2, *w3;
	read_one_version(full, 0, V_SIZE, false, "cached, overwritten", &w1);
	read_one_version(half, 0, V_SIZE, false, "half cached, overwritten", &w2);
	read_all_ok("v/full.bin", V_NEW, V_SIZE);
	/* the new open superseded the version the old handles hold */
	read_one_version(full, 0, V_SIZE, true, "after a new open", &w3);
	read_all_ok("v/half.bin", V_NEW, V_SIZE);
	cr_log_info("overwrite while open: cached -> %s, half cached -> %s, after a new open -> %s",
		    w1, w2, w3);
	close(full);
	close(half);
	it_unmount_ok(&env, &mnt);
}

/* Deleted: through handles opened before, old bytes or an error; new
 * lookups say ENOENT once the TTL has passed (a 404 is news, not an
 * outage). */
Test(faults, delete_while_open_and_cached)
{
	cr_assert_eq(it_put_gen(&bucket, "v/full.bin", V_OLD, V_SIZE), 0);
	cr_assert_eq(it_put_gen(&bucket, "v/half.bin", V_OLD, V_SIZE), 0);
	const char *extra[] = { "--metadata-ttl", "1", "--read-ahead", "0", NULL };
	mount_via_proxy(extra);
	char p[PATH_MAX];
	path_of("v/full.bin", p, sizeof(p));
	int full = open(p, O_RDONLY);
	path_of("v/half.bin", p, sizeof(p));
	int half = open(p, O_RDONLY);
	cr_assert(full >= 0 && half >= 0, "open: %s", strerror(errno));
	cr_assert_eq(read_old_or_error(full, 0, V_SIZE, "before"), 0);
	cr_assert_eq(read_old_or_error(half, 0, IT_MIB, "before"), 0);
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	cr_assert_eq(s3_client_delete(bucket.client, "v/full.bin", &ei), TFS_OK);
	cr_assert_eq(s3_client_delete(bucket.client, "v/half.bin", &ei), TFS_OK);
	usleep(1300 * 1000);
	const char *w1, *w2, *w3;
	read_one_version(full, 0, V_SIZE, false, "cached, deleted", &w1);
	read_one_version(half, 0, V_SIZE, false, "half cached, deleted", &w2);
	struct stat st;
	path_of("v/full.bin", p, sizeof(p));
	errno = 0;
	cr_expect(stat(p, &st) < 0 && errno == ENOENT, "stat of a deleted file: %s, want ENOENT",
		  strerror(errno));
	read_one_version(full, 0, V_SIZE, false, "after the lookup saw it gone", &w3);
	cr_log_info("delete while open: cached -> %s, half cached -> %s, after the lookup -> %s",
		    w1, w2, w3);
	close(full);
	close(half);
	it_unmount_ok(&env, &mnt);
}

/* The proxy drops the Range header of 15% of the GETs of 30 files (a
 * 200 with the whole object each time): every file reads exactly. */
Test(faults, range_dropped_on_15pct_of_gets_every_file_exact)
{
	enum { N = 30, SIZE = 300000 };
	char key[32], path[160];
	struct it_obj objs[N];
	char keys[N][32];
	for (unsigned i = 0; i < N; i++) {
		it_fmt(keys[i], sizeof(keys[i]), "r/%02u.bin", i);
		objs[i] = (struct it_obj){ keys[i], 0x8000 + i, SIZE };
	}
	cr_assert_eq(it_put_many(&bucket, objs, N, 4), 0);
	const char *extra[] = { "--chunk-size", "128K", "--max-retries", "10", NULL };
	mount_via_proxy(extra);
	it_fmt(path, sizeof(path), "/%s/r/", bucket.name);
	cr_assert_eq(it_proxy_reset_stats(&proxy), 0);
	cr_assert_eq(it_proxy_fault(&proxy, "kind=norange&count=1000000&pct=15&method=GET&path=%s",
				    path), 0);
	for (unsigned i = 0; i < N; i++) {
		it_fmt(key, sizeof(key), "r/%02u.bin", i);
		read_all_ok(key, 0x8000 + i, SIZE);
	}
	long long faults = it_proxy_stat(&proxy, "faults");
	cr_expect_gt(faults, 0, "no Range dropped in %lld object GETs",
		     it_proxy_stat(&proxy, "object_GET"));
	cr_log_info("Range dropped on %lld of %lld object GETs; %d files exact", faults,
		    it_proxy_stat(&proxy, "object_GET"), N);
	it_unmount_ok(&env, &mnt);
}
