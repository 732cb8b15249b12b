/* test_creds_mount.c - real mounts with every credential source a training
 * node has, against local servers that check them (tests/tools/
 * credserver.py), and gs:// mounts.
 *
 * HMAC (gs://) and credential_process mounts go to radosgw directly; every
 * other flow gets its credentials from credserver and reads through its
 * gateway, which lets a request through only with credentials it issued
 * and that have not expired, then forwards it to radosgw.  So a mount that
 * reads the right bytes proves that the flow produced valid credentials,
 * and credserver's counters say which flow ran.
 *
 * Every test strips the runner's static keys and points the shared files
 * at nothing, so only the source under test can be found.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMALL_SIZE 300u
#define MID_SIZE (3u * IT_MIB + 4321u)

static struct it_env env;
static struct it_bucket bucket;
static struct it_credserver cs;
static struct it_bucket xbucket;       /* an S3 Express directory bucket */

static void creds_fini(void)
{
	it_cleanup();
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
	if (xbucket.client) {
		it_bucket_remove(&xbucket);
	}
}

TestSuite(creds, .fini = creds_fini, .timeout = 300);

/* A bucket with two files, and credserver with credentials of ttl_s. */
static void setup(const char *tag, unsigned ttl_s)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_eq(it_bucket_create(&env, tag, &bucket), 0);
	cr_assert_eq(it_put_gen(&bucket, "data/mid.bin", 11, MID_SIZE), 0);
	cr_assert_eq(it_put_gen(&bucket, "data/sub/small.txt", 12, SMALL_SIZE), 0);
	if (ttl_s)
		cr_assert_eq(it_credserver_start(&env, ttl_s, &cs), 0);
}

/* The environment every mount here starts from: nothing to find but what
 * the test adds after these (later assignments win). */
#define NO_CREDS "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", \
	"AWS_PROFILE=", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent/credentials",      \
	"AWS_CONFIG_FILE=/nonexistent/config", "CLOUDSDK_CONFIG=/nonexistent/gcloud"

static char source_buf[128];

static const char *source(const char *scheme)
{
	it_fmt(source_buf, sizeof(source_buf), "%s://%s", scheme, bucket.name);
	return source_buf;
}

static void read_check(const char *dir, const char *rel, uint64_t seed, uint64_t size)
{
	char path[PATH_MAX];
	size_t len = 0;
	char *data;

	it_fmt(path, sizeof(path), "%s/%s", dir, rel);
	data = it_read_file(path, &len);
	cr_assert_not_null(data, "read %s: %s", path, strerror(errno));
	cr_assert_eq(len, size, "%s: %zu bytes, want %llu", rel, len, (unsigned long long)size);
	cr_assert_eq(it_gen_mismatch(seed, 0, data, len), -1, "%s: wrong bytes", rel);
	free(data);
}

static void read_all(const struct it_mount *m)
{
	read_check(m->dir, "data/mid.bin", 11, MID_SIZE);
	read_check(m->dir, "data/sub/small.txt", 12, SMALL_SIZE);
}

/* `tierfs CMD MOUNTPOINT` output (malloc'd), exit status 0 required. */
static char *cli_out(const char *cmd, const struct it_mount *m)
{
	const char *args[] = { cmd, m->dir, NULL };
	struct it_run r;
	char *out;

	cr_assert_eq(it_run_tierfs(&env, args, NULL, 30, &r), 0);
	cr_assert_eq(r.status, 0, "tierfs %s: %s", cmd, r.out);
	out = strdup(r.out);
	it_run_release(&r);
	return out;
}

/* `tierfs config` names the source (and says what was expected). */
static void expect_source(const struct it_mount *m, const char *want)
{
	char *out = cli_out("config", m);

	cr_expect(strstr(out, want) != NULL, "config should name '%s': %s", want, out);
	free(out);
}

static void mount_or_fail(const char *src, const char *endpoint, const char *const *extra,
			  const char *const *env_set, struct it_mount *m)
{
	char dir[PATH_MAX];

	cr_assert_eq(it_mkdtemp(&env, "mnt", dir, sizeof(dir)), 0);
	if (it_mount_at(&env, src, endpoint, dir, extra, env_set, m) != 0) {
		char *log = it_mount_log(m);
		cr_assert_fail("mount %s failed: %s", src, log);
	}
}

/* A mount that must fail: its output, for the caller to check. */
static char *mount_fails(const char *src, const char *endpoint, const char *const *env_set)
{
	char dir[PATH_MAX];
	const char *args[] = { "mount", src, dir, "-f", "--endpoint", endpoint, "--path-style",
			       NULL };
	struct it_run r;
	char *out;

	cr_assert_eq(it_mkdtemp(&env, "mnt", dir, sizeof(dir)), 0);
	cr_assert_eq(it_run_tierfs(&env, args, env_set, 60, &r), 0);
	cr_assert_neq(r.status, 0, "mount should fail: %s", r.out);
	cr_assert(r.status < 128, "mount crashed (status %d): %s", r.status, r.out);
	cr_assert_not(it_is_fuse_mount(dir));
	out = strdup(r.out);
	it_run_release(&r);
	return out;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* ---- gs:// ---------------------------------------------------------- */

Test(creds, gcs_hmac_keys_sign_xml_requests)
{
	struct it_mount m;
	char ak[256], sk[256];
	char *out;

	setup("gshmac", 0);
	it_fmt(ak, sizeof(ak), "AWS_ACCESS_KEY_ID=%s", env.access_key);
	it_fmt(sk, sizeof(sk), "AWS_SECRET_ACCESS_KEY=%s", env.secret_key);
	const char *es[] = { NO_CREDS, ak, sk, NULL };
	mount_or_fail(source("gs"), env.endpoint, NULL, es, &m);
	read_all(&m);
	out = cli_out("config", &m);
	cr_expect(strstr(out, "source = gs://"), "%s", out);
	cr_expect(strstr(out, "HMAC key, environment"), "%s", out);
	free(out);
	it_unmount_ok(&env, &m);
}

Test(creds, gcs_service_account_key_through_a_token_endpoint)
{
	struct it_mount m;
	char key[PATH_MAX], gac[PATH_MAX + 40];

	setup("gssa", 3600);
	it_credserver_file(&cs, "sa.json", key, sizeof(key));
	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", key);
	const char *es[] = { NO_CREDS, gac, NULL };
	mount_or_fail(source("gs"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "service account loader@tierfs-test.iam.gserviceaccount.com");
	cr_expect_geq(it_credserver_stat(&cs, "oauth_jwt"), 1);
	cr_expect_gt(it_credserver_stat(&cs, "data_ok"), 0);
	/* every ranged GET was pinned to the generation the open saw */
	cr_expect_gt(it_credserver_stat(&cs, "gcs_generation_checks"), 0);
	cr_expect_eq(it_credserver_stat(&cs, "data_rejected"), 0);
	it_unmount_ok(&env, &m);
}

Test(creds, gcs_authorized_user_refresh_token)
{
	struct it_mount m;
	char f[PATH_MAX], gac[PATH_MAX + 40];

	setup("gsau", 3600);
	it_credserver_file(&cs, "user.json", f, sizeof(f));
	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", f);
	const char *es[] = { NO_CREDS, gac, NULL };
	mount_or_fail(source("gs"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "authorized user");
	cr_expect_geq(it_credserver_stat(&cs, "oauth_refresh"), 1);
	cr_expect_eq(it_credserver_stat(&cs, "data_rejected"), 0);
	it_unmount_ok(&env, &m);
}

Test(creds, gcs_metadata_server_when_nothing_else_is_given)
{
	struct it_mount m;
	char host[128];

	setup("gsmd", 3600);
	it_fmt(host, sizeof(host), "GCE_METADATA_HOST=127.0.0.1:%d", cs.port);
	const char *es[] = { NO_CREDS, host, NULL };
	mount_or_fail(source("gs"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "GCE metadata server");
	cr_expect_geq(it_credserver_stat(&cs, "metadata"), 1);
	it_unmount_ok(&env, &m);
}

Test(creds, gcs_generation_pins_an_open_file)
{
	struct it_mount m;
	char key[PATH_MAX], gac[PATH_MAX + 40], path[PATH_MAX], *buf;
	const char *extra[] = { "--chunk-size", "1M", "--read-ahead", "0", NULL };
	ssize_t n;
	int fd;

	setup("gsgen", 3600);
	it_credserver_file(&cs, "sa.json", key, sizeof(key));
	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", key);
	const char *es[] = { NO_CREDS, gac, NULL };
	mount_or_fail(source("gs"), cs.url, extra, es, &m);
	it_fmt(path, sizeof(path), "%s/data/mid.bin", m.dir);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	buf = malloc(IT_MIB);
	cr_assert_eq(it_pread_full(fd, buf, IT_MIB, 0), (ssize_t)IT_MIB);
	cr_assert_eq(it_gen_mismatch(11, 0, buf, IT_MIB), -1);
	/* a new generation while the file is open: its old bytes are gone,
	 * and the open file must not mix in the new ones */
	cr_assert_eq(it_put_gen(&bucket, "data/mid.bin", 99, MID_SIZE), 0);
	it_drop_caches();
	n = it_pread_full(fd, buf, IT_MIB, 2 * IT_MIB);
	cr_expect_eq(n, -1, "a read of the old generation must fail, got %zd bytes", n);
	cr_expect_geq(it_credserver_stat(&cs, "stale"), 1);
	close(fd);
	free(buf);
	it_unmount_ok(&env, &m);
}

Test(creds, gcs_cache_is_warm_after_a_restart)
{
	struct it_mount m;
	char key[PATH_MAX], gac[PATH_MAX + 40], cache[PATH_MAX];
	const char *extra[] = { "--cache-dir", cache, "--chunk-size", "1M", NULL };

	setup("gswarm", 3600);
	cr_assert_eq(it_mkdtemp(&env, "cache", cache, sizeof(cache)), 0);
	it_credserver_file(&cs, "sa.json", key, sizeof(key));
	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", key);
	const char *es[] = { NO_CREDS, gac, NULL };
	mount_or_fail(source("gs"), cs.url, extra, es, &m);
	read_all(&m);
	it_unmount_ok(&env, &m);
	/* a new daemon: every chunk comes from the SSD tier, pinned to the
	 * same generations, and no GET goes out */
	mount_or_fail(source("gs"), cs.url, extra, es, &m);
	it_drop_caches();
	read_all(&m);
	cr_expect_eq(it_daemon_stat(&m, "s3.gets"), 0, "GETs after a restart");
	/* read by the daemon, or by the kernel itself (passthrough) */
	cr_expect_gt(it_daemon_stat(&m, "ssd.hits") + it_daemon_stat(&m, "passthrough.opens"), 0);
	it_unmount_ok(&env, &m);
}

/* ---- s3:// temporary credentials ------------------------------------ */

Test(creds, s3_web_identity_through_sts)
{
	struct it_mount m;
	char tf[PATH_MAX], tfe[PATH_MAX + 40], sts[128];

	setup("webid", 3600);
	it_credserver_file(&cs, "web-token", tf, sizeof(tf));
	it_fmt(tfe, sizeof(tfe), "AWS_WEB_IDENTITY_TOKEN_FILE=%s", tf);
	it_fmt(sts, sizeof(sts), "AWS_ENDPOINT_URL_STS=%s", cs.url);
	const char *es[] = { NO_CREDS, tfe, "AWS_ROLE_ARN=" IT_ROLE_ARN, sts, NULL };
	mount_or_fail(source("s3"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "web identity: role " IT_ROLE_ARN);
	cr_expect_geq(it_credserver_stat(&cs, "sts"), 1);
	cr_expect_eq(it_credserver_stat(&cs, "data_rejected"), 0);
	it_unmount_ok(&env, &m);
}

Test(creds, s3_container_credentials_with_token_file)
{
	struct it_mount m;
	char tf[PATH_MAX], tfe[PATH_MAX + 60], uri[160];

	setup("ecs", 3600);
	it_credserver_file(&cs, "container-token", tf, sizeof(tf));
	it_fmt(tfe, sizeof(tfe), "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=%s", tf);
	it_fmt(uri, sizeof(uri), "AWS_CONTAINER_CREDENTIALS_FULL_URI=%s/ecs/creds", cs.url);
	const char *es[] = { NO_CREDS, tfe, uri, NULL };
	mount_or_fail(source("s3"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "container credentials");
	cr_expect_geq(it_credserver_stat(&cs, "container"), 1);
	it_unmount_ok(&env, &m);
}

Test(creds, s3_instance_profile_through_imdsv2)
{
	struct it_mount m;
	char ep[160];

	setup("imds", 3600);
	it_fmt(ep, sizeof(ep), "AWS_EC2_METADATA_SERVICE_ENDPOINT=%s", cs.url);
	const char *es[] = { NO_CREDS, "AWS_EC2_METADATA_DISABLED=", ep, NULL };
	mount_or_fail(source("s3"), cs.url, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "EC2 instance profile (IMDSv2");
	cr_expect_geq(it_credserver_stat(&cs, "imds"), 1);
	/* IMDSv1 (no session token) is refused by the server: none was tried */
	cr_expect_eq(it_credserver_stat(&cs, "refused_creds"), 0);
	it_unmount_ok(&env, &m);
}

Test(creds, s3_credential_process_from_the_config_file)
{
	struct it_mount m;
	char cfgpath[PATH_MAX], helper[PATH_MAX], cfe[PATH_MAX + 20], text[PATH_MAX + 200];

	setup("proc", 0);
	it_fmt(cfgpath, sizeof(cfgpath), "%s/aws-config-%d", env.tmp, (int)getpid());
	it_fmt(helper, sizeof(helper), "%s/cred-helper-%d.sh", env.tmp, (int)getpid());
	/* the keys reach the helper through its environment, never argv */
	write_text(helper, "#!/bin/sh\n"
		   "printf '{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": "
		   "\"%s\"}\\n' \"$TFS_AK\" \"$TFS_SK\"\n");
	it_fmt(text, sizeof(text), "[default]\nregion = us-east-1\n\n[profile loader]\n"
	       "credential_process = /bin/sh %s\n", helper);
	write_text(cfgpath, text);
	char ak[256], sk[256];
	it_fmt(ak, sizeof(ak), "TFS_AK=%s", env.access_key);
	it_fmt(sk, sizeof(sk), "TFS_SK=%s", env.secret_key);
	it_fmt(cfe, sizeof(cfe), "AWS_CONFIG_FILE=%s", cfgpath);
	const char *es[] = { NO_CREDS, cfe, "AWS_PROFILE=loader", ak, sk, NULL };
	mount_or_fail(source("s3"), env.endpoint, NULL, es, &m);
	read_all(&m);
	expect_source(&m, "credential_process of profile 'loader'");
	it_unmount_ok(&env, &m);
	unlink(cfgpath);
	unlink(helper);
}

/* ---- S3 Express One Zone as the shared tier ---------------------------- */

/* A directory bucket on radosgw, its name "...--use1-az4--x-s3". */
static void express_bucket(void)
{
	char name[64], xname[64];

	it_unique_bucket_name("shx", name, sizeof(name));
	it_fmt(xname, sizeof(xname), "%.40s--use1-az4--x-s3", name);
	cr_assert_eq(it_bucket_open(&env, xname, &xbucket), 0);
	cr_assert_eq(s3_client_create_bucket(xbucket.client, NULL), TFS_OK);
}

/* Mount src through credserver, with container credentials. */
static void container_mount(const char *src, const char *const *extra, struct it_mount *m)
{
	char tf[PATH_MAX], tfe[PATH_MAX + 60], uri[160];

	it_credserver_file(&cs, "container-token", tf, sizeof(tf));
	it_fmt(tfe, sizeof(tfe), "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=%s", tf);
	it_fmt(uri, sizeof(uri), "AWS_CONTAINER_CREDENTIALS_FULL_URI=%s/ecs/creds", cs.url);
	const char *es[] = { NO_CREDS, tfe, uri, NULL };
	mount_or_fail(src, cs.url, extra, es, m);
}

/* A node reading bucket, with the directory bucket xbucket as its shared
 * tier (both through credserver). */
static void express_node(struct it_mount *m)
{
	char sh[128], cache[PATH_MAX];
	const char *extra[] = { "--chunk-size", "1M", "--cache-dir", cache, "--shared-cache", sh,
				"--shared-endpoint", cs.url, "--read-ahead", "0",
				"--scan-prefetch", "0", NULL };

	it_fmt(sh, sizeof(sh), "s3://%s/cluster", xbucket.name);
	cr_assert_eq(it_mkdtemp(&env, "xcache", cache, sizeof(cache)), 0);
	container_mount(source("s3"), extra, m);
}

/* credserver lets a request to a directory bucket through only when a
 * session signs it (service s3express, x-amz-s3session-token), and takes
 * the node's own credentials only for CreateSession.  Node A fills the
 * tier, node B reads every chunk from it; sessions of 3 s, and a pause
 * longer than that in the middle of B's reads, make B ask for a new one. */
Test(creds, s3_express_directory_bucket_as_the_shared_tier, .timeout = 300)
{
	const long long chunks = 5;      /* mid.bin: 4 chunks of 1M, small.txt: 1 */
	struct it_mount a, b;
	long long sessions;

	setup("expo", 3600);
	express_bucket();
	cr_assert_eq(it_credserver_session_ttl(&cs, 3), 0);

	express_node(&a);
	read_all(&a);
	cr_assert_eq(it_daemon_stat_wait(&a, "shared.writes", chunks, 30.0), chunks,
		     "node A wrote every chunk to the directory bucket");
	cr_expect_geq(it_credserver_stat(&cs, "sessions"), 1);

	express_node(&b);
	read_check(b.dir, "data/sub/small.txt", 12, SMALL_SIZE);
	sessions = it_credserver_stat(&cs, "sessions");
	usleep(3500 * 1000);             /* B's session has expired */
	read_check(b.dir, "data/mid.bin", 11, MID_SIZE);
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), chunks, "every chunk from the tier");
	cr_expect_eq(it_daemon_stat(&b, "store.fetches"), 0, "nothing from the origin");
	cr_expect_gt(it_credserver_stat(&cs, "sessions"), sessions, "a new session after expiry");
	cr_expect_geq(it_credserver_stat(&cs, "express_ok"), 2 * chunks);
	cr_expect_eq(it_credserver_stat(&cs, "express_rejected"), 0);
	cr_expect_eq(it_credserver_stat(&cs, "data_rejected"), 0);
	cr_expect_eq(it_credserver_stat(&cs, "sessions_read_only"), 0, "the tier writes");
	it_unmount_ok(&env, &b);
	it_unmount_ok(&env, &a);
}

/* Sessions the bucket stops honouring, then a bucket that cannot issue
 * new ones: no read fails.  Node B's session is revoked between two
 * files; its next request is refused, and sent once more with a new
 * session, so every chunk still comes from the tier.  Node C's session
 * is revoked while CreateSession answers 500: the tier is skipped and C
 * reads the origin, every byte right. */
Test(creds, s3_express_refused_sessions_cost_no_read, .timeout = 300)
{
	const long long chunks = 5;
	struct it_mount a, b, c;
	long long sessions;

	setup("expr", 3600);
	express_bucket();
	express_node(&a);
	read_all(&a);
	cr_assert_eq(it_daemon_stat_wait(&a, "shared.writes", chunks, 30.0), chunks);

	express_node(&b);
	read_check(b.dir, "data/sub/small.txt", 12, SMALL_SIZE);
	sessions = it_credserver_stat(&cs, "sessions");
	cr_assert_eq(it_credserver_revoke_sessions(&cs), 0);
	read_check(b.dir, "data/mid.bin", 11, MID_SIZE);
	cr_expect_eq(it_daemon_stat(&b, "shared.hits"), chunks, "every chunk from the tier");
	cr_expect_eq(it_daemon_stat(&b, "store.fetches"), 0, "nothing from the origin");
	cr_expect_geq(it_credserver_stat(&cs, "express_rejected"), 1, "the revoked session");
	cr_expect_gt(it_credserver_stat(&cs, "sessions"), sessions, "a new session");

	express_node(&c);
	read_check(c.dir, "data/sub/small.txt", 12, SMALL_SIZE);
	cr_assert_eq(it_credserver_fail(&cs, 1000), 0);
	cr_assert_eq(it_credserver_revoke_sessions(&cs), 0);
	read_check(c.dir, "data/mid.bin", 11, MID_SIZE);
	cr_expect_geq(it_daemon_stat(&c, "store.fetches"), 1, "the origin served what the "
		      "tier could not");
	cr_expect_geq(it_credserver_stat(&cs, "failed_on_purpose"), 1, "CreateSession failed");
	cr_assert_eq(it_credserver_fail(&cs, 0), 0);
	it_unmount_ok(&env, &c);
	it_unmount_ok(&env, &b);
	it_unmount_ok(&env, &a);
}

/* The two files of setup() in a directory bucket, mounted as the origin
 * through credserver. */
static void express_origin(const char *tag, const char *const *extra, struct it_mount *m)
{
	char src[128];

	setup(tag, 3600);
	express_bucket();
	cr_assert_eq(it_put_gen(&xbucket, "data/mid.bin", 11, MID_SIZE), 0);
	cr_assert_eq(it_put_gen(&xbucket, "data/sub/small.txt", 12, SMALL_SIZE), 0);
	it_fmt(src, sizeof(src), "s3://%s", xbucket.name);
	container_mount(src, extra, m);
}

/* A directory bucket as the origin: listings, HEADs and ranged GETs all
 * signed with sessions. */
Test(creds, s3_express_directory_bucket_as_the_origin)
{
	struct it_mount m;

	express_origin("expx", NULL, &m);
	read_all(&m);
	expect_source(&m, "S3 Express sessions");
	cr_expect_geq(it_credserver_stat(&cs, "sessions"), 1);
	cr_expect_eq(it_credserver_stat(&cs, "sessions_read_only"),
		     it_credserver_stat(&cs, "sessions"), "an origin asks for ReadOnly sessions");
	cr_expect_geq(it_credserver_stat(&cs, "express_ok"), 4);
	cr_expect_eq(it_credserver_stat(&cs, "express_rejected"), 0);
	it_unmount_ok(&env, &m);
}

/* A directory bucket as the origin, down: its session revoked, and
 * CreateSession answering 500.  That is the store not answering, not
 * credentials refused: past the metadata TTL the node still lists,
 * stats and reads what it has (served stale), as in any outage. */
Test(creds, s3_express_origin_down_serves_what_the_node_has, .timeout = 300)
{
	const char *extra[] = { "--metadata-ttl", "1", NULL };
	struct it_mount m;

	express_origin("expd", extra, &m);
	read_all(&m);
	cr_assert_eq(it_credserver_fail(&cs, 100000), 0);
	cr_assert_eq(it_credserver_revoke_sessions(&cs), 0);
	usleep(1200 * 1000);             /* past the TTL: asked again */
	read_all(&m);
	cr_expect_gt(it_daemon_stat(&m, "fs.stale_served"), 0, "served stale");
	cr_expect_geq(it_credserver_stat(&cs, "failed_on_purpose"), 1, "CreateSession failed");
	cr_assert_eq(it_credserver_fail(&cs, 0), 0);
	it_unmount_ok(&env, &m);
}

/* ---- refresh in the middle of a long read --------------------------- */

/* Read data/long.bin (n_mib MiB, 1M chunks, no read-ahead) one MiB every
 * pace_ms through the mount, so that its GETs span several credential
 * lifetimes, and check every byte; no read may fail. */
static void slow_read(const struct it_mount *m, unsigned n_mib, unsigned pace_ms)
{
	char path[PATH_MAX], *buf = malloc(IT_MIB);
	int fd;

	it_fmt(path, sizeof(path), "%s/data/long.bin", m->dir);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	for (unsigned i = 0; i < n_mib; i++) {
		ssize_t n = it_pread_full(fd, buf, IT_MIB, (off_t)i * IT_MIB);

		cr_assert_eq(n, (ssize_t)IT_MIB, "read of MiB %u failed: %s", i, strerror(errno));
		cr_assert_eq(it_gen_mismatch(21, (uint64_t)i * IT_MIB, buf, IT_MIB), -1,
			     "wrong bytes in MiB %u", i);
		usleep(pace_ms * 1000);
	}
	close(fd);
	free(buf);
}

#define TTL_S 12
#define LONG_MIB 36
#define PACE_MS 750   /* 36 x 0.75 s = 27 s of reading: over two lifetimes */

static const char *const slow_extra[] = { "--chunk-size", "1M", "--read-ahead", "0",
					  "--kernel-readahead", "0", "--scan-prefetch", "0",
					  "--ram-size", "4M", "-v", NULL };

/* What every refresh test asserts once the read is done. */
static void expect_refreshed_ahead(struct it_mount *m)
{
	long long early = it_credserver_stat(&cs, "issued_early");

	/* Credentials issued while the previous ones were still valid: the
	 * provider refreshed ahead of expiry (a mount that only recovered
	 * after a 401 would show none).  27 s of reading with 12 s
	 * credentials refreshed at half-life: at least two. */
	cr_expect_geq(early, 2, "refreshes ahead of expiry: %lld (issued %lld, expired "
		      "requests %lld)", early, it_credserver_stat(&cs, "issued"),
		      it_credserver_stat(&cs, "data_expired"));
	it_unmount_ok(&env, m);
}

Test(creds, s3_web_identity_refreshes_mid_read_and_survives_a_failed_refresh, .timeout = 400)
{
	struct it_mount m;
	char tf[PATH_MAX], tfe[PATH_MAX + 40], sts[128], *log;

	setup("wrefresh", TTL_S);
	cr_assert_eq(it_put_gen(&bucket, "data/long.bin", 21, (uint64_t)LONG_MIB * IT_MIB), 0);
	it_credserver_file(&cs, "web-token", tf, sizeof(tf));
	it_fmt(tfe, sizeof(tfe), "AWS_WEB_IDENTITY_TOKEN_FILE=%s", tf);
	it_fmt(sts, sizeof(sts), "AWS_ENDPOINT_URL_STS=%s", cs.url);
	const char *es[] = { NO_CREDS, tfe, "AWS_ROLE_ARN=" IT_ROLE_ARN, sts, NULL };
	mount_or_fail(source("s3"), cs.url, slow_extra, es, &m);
	/* the first refresh fails: retried later, reads go on meanwhile */
	cr_assert_eq(it_credserver_fail(&cs, 1), 0);
	slow_read(&m, LONG_MIB, PACE_MS);
	cr_expect_eq(it_credserver_stat(&cs, "failed_on_purpose"), 1);
	log = it_mount_log(&m);
	cr_expect(strstr(log, "refresh from web identity") && strstr(log, "failed"),
		  "the failed refresh is logged: %s", log);
	free(log);
	expect_refreshed_ahead(&m);
}

Test(creds, gcs_service_account_refreshes_mid_read, .timeout = 400)
{
	struct it_mount m;
	char key[PATH_MAX], gac[PATH_MAX + 40];

	setup("grefresh", TTL_S);
	cr_assert_eq(it_put_gen(&bucket, "data/long.bin", 21, (uint64_t)LONG_MIB * IT_MIB), 0);
	it_credserver_file(&cs, "sa.json", key, sizeof(key));
	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", key);
	const char *es[] = { NO_CREDS, gac, NULL };
	mount_or_fail(source("gs"), cs.url, slow_extra, es, &m);
	slow_read(&m, LONG_MIB, PACE_MS);
	cr_expect_geq(it_credserver_stat(&cs, "oauth_jwt"), 3);
	expect_refreshed_ahead(&m);
}

/* ---- bad input: a clear error, never a crash ------------------------ */

Test(creds, bad_credentials_fail_the_mount_with_a_clear_message)
{
	char p[PATH_MAX], gac[PATH_MAX + 40], host[128], uri[160], *out;

	setup("bad", 3600);
	{
		static const struct { const char *text, *want; } cases[] = {
			{ "{ not json", "not JSON" },
			{ "[1, 2]", "not a JSON object" },
			{ "{\"type\": \"external_account\"}", "is not supported" },
			{ "{\"type\": \"service_account\", \"client_email\": \"a@b\"}",
			  "without client_email and private_key" },
			{ "{\"type\": \"service_account\", \"client_email\": \"a@b\", "
			  "\"private_key\": \"-----BEGIN PRIVATE KEY-----\\ngarbage\\n"
			  "-----END PRIVATE KEY-----\\n\"}", "not a PEM RSA key" },
			{ "{\"type\": \"authorized_user\", \"client_id\": \"x\"}",
			  "without client_id, client_secret and refresh_token" },
			{ "{\"type\": \"authorized_user\", \"client_id\": \"x\", \"client_secret\": "
			  "\"y\", \"refresh_token\": \"z\", \"token_uri\": \"http://example.com/t\"}",
			  "token_uri must be https" },
		};
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			it_fmt(p, sizeof(p), "%s/bad-key-%d-%zu.json", env.tmp, (int)getpid(), i);
			write_text(p, cases[i].text);
			it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", p);
			const char *es[] = { NO_CREDS, gac, NULL };
			out = mount_fails(source("gs"), cs.url, es);
			cr_expect(strstr(out, "credentials") && strstr(out, cases[i].want),
				  "case %zu: want '%s' in: %s", i, cases[i].want, out);
			free(out);
			unlink(p);
		}
	}
	/* a key the token endpoint does not know: it refuses the signature */
	{
		char sa[PATH_MAX], *text, *k;
		size_t len;

		it_credserver_file(&cs, "sa.json", sa, sizeof(sa));
		text = it_read_file(sa, &len);
		cr_assert_not_null(text);
		k = strstr(text, "\"private_key_id\": \"");
		cr_assert_not_null(k);
		k[19] = k[19] == 'a' ? 'b' : 'a';     /* another kid */
		it_fmt(p, sizeof(p), "%s/other-kid-%d.json", env.tmp, (int)getpid());
		write_text(p, text);
		free(text);
		it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", p);
		const char *es[] = { NO_CREDS, gac, NULL };
		out = mount_fails(source("gs"), cs.url, es);
		cr_expect(strstr(out, "invalid_grant"), "%s", out);
		free(out);
		unlink(p);
	}
	/* a metadata server that is not one (radosgw answers 4xx and XML) */
	{
		const char *h = strstr(env.endpoint, "://");
		it_fmt(host, sizeof(host), "GCE_METADATA_HOST=%s", h ? h + 3 : env.endpoint);
		const char *es[] = { NO_CREDS, host, NULL };
		out = mount_fails(source("gs"), cs.url, es);
		cr_expect(strstr(out, "metadata server"), "%s", out);
		free(out);
	}
	/* container credentials without the authorization token */
	{
		it_fmt(uri, sizeof(uri), "AWS_CONTAINER_CREDENTIALS_FULL_URI=%s/ecs/creds", cs.url);
		const char *es[] = { NO_CREDS, uri, NULL };
		out = mount_fails(source("s3"), cs.url, es);
		cr_expect(strstr(out, "HTTP 401"), "%s", out);
		free(out);
	}
	/* a web identity token the STS does not accept */
	{
		char tf[PATH_MAX], tfe[PATH_MAX + 40], sts[128];

		it_fmt(tf, sizeof(tf), "%s/wrong-token-%d", env.tmp, (int)getpid());
		write_text(tf, "eyJ.not.the-token\n");
		it_fmt(tfe, sizeof(tfe), "AWS_WEB_IDENTITY_TOKEN_FILE=%s", tf);
		it_fmt(sts, sizeof(sts), "AWS_ENDPOINT_URL_STS=%s", cs.url);
		const char *es[] = { NO_CREDS, tfe, "AWS_ROLE_ARN=" IT_ROLE_ARN, sts, NULL };
		out = mount_fails(source("s3"), cs.url, es);
		cr_expect(strstr(out, "InvalidIdentityToken"), "%s", out);
		free(out);
		unlink(tf);
	}
}

/* ---- no secret anywhere --------------------------------------------- */

/* Does any file under dir (recursively) contain needle? */
static bool tree_contains(const char *dir, const char *needle, char *where, size_t wn)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		it_fmt(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			found = tree_contains(p, needle, where, wn);
		} else if (S_ISREG(st.st_mode)) {
			size_t len = 0;
			char *t = it_read_file(p, &len);

			if (t && memmem(t, len, needle, strlen(needle))) {
				found = true;
				it_fmt(where, wn, "%s", p);
			}
			free(t);
		}
	}
	closedir(d);
	return found;
}

/* Mount, read, ask config and stats, then look for every needle in the
 * log (-vv), those answers, the daemon's argv and the cache directory. */
static void canary_mount(const char *src, const char *const *env_set,
			 const char *const *needles)
{
	char cache[PATH_MAX], proc[64], where[PATH_MAX];
	const char *extra[] = { "-v", "-v", "--cache-dir", cache, "--chunk-size", "1M", NULL };
	struct it_mount m;
	char *cfg, *stats, *cmdline, *log;
	size_t cl = 0;

	cr_assert_eq(it_mkdtemp(&env, "cache", cache, sizeof(cache)), 0);
	mount_or_fail(src, cs.url, extra, env_set, &m);
	read_all(&m);
	cfg = cli_out("config", &m);
	stats = cli_out("stats", &m);
	it_fmt(proc, sizeof(proc), "/proc/%d/cmdline", (int)m.pid);
	cmdline = it_read_file(proc, &cl);
	cr_assert_not_null(cmdline);
	it_unmount_ok(&env, &m);
	log = it_mount_log(&m);
	cr_assert(strstr(log, "debug") || strstr(log, "info"), "-vv logs: %s", log);
	for (const char *const *n = needles; *n; n++) {
		cr_expect_null(strstr(log, *n), "'%s' in the log", *n);
		cr_expect_null(strstr(cfg, *n), "'%s' in tierfs config", *n);
		cr_expect_null(strstr(stats, *n), "'%s' in tierfs stats", *n);
		cr_expect_null(memmem(cmdline, cl, *n, strlen(*n)), "'%s' in argv", *n);
		cr_expect_not(tree_contains(cache, *n, where, sizeof(where)), "'%s' in %s", *n,
			      where);
	}
	free(cfg);
	free(stats);
	free(cmdline);
	free(log);
}

Test(creds, no_secret_in_logs_config_stats_argv_or_cache, .timeout = 400)
{
	char key[PATH_MAX], gac[PATH_MAX + 40], tf[PATH_MAX], tfe[PATH_MAX + 40], sts[128];
	char pk[48], *text, *p;
	size_t len;

	setup("canary", 3600);
	/* a slice of the private key itself (inside the PEM body) */
	it_credserver_file(&cs, "sa.json", key, sizeof(key));
	text = it_read_file(key, &len);
	cr_assert_not_null(text);
	p = strstr(text, "-----BEGIN PRIVATE KEY-----\\n");
	cr_assert_not_null(p);
	memcpy(pk, p + 29 + 2, 40);          /* inside the body's first line */
	pk[40] = '\0';
	free(text);
	const char *needles[] = { IT_CANARY, pk, NULL };

	it_fmt(gac, sizeof(gac), "GOOGLE_APPLICATION_CREDENTIALS=%s", key);
	const char *es_gs[] = { NO_CREDS, gac, NULL };
	canary_mount(source("gs"), es_gs, needles);

	it_credserver_file(&cs, "web-token", tf, sizeof(tf));
	it_fmt(tfe, sizeof(tfe), "AWS_WEB_IDENTITY_TOKEN_FILE=%s", tf);
	it_fmt(sts, sizeof(sts), "AWS_ENDPOINT_URL_STS=%s", cs.url);
	const char *es_s3[] = { NO_CREDS, tfe, "AWS_ROLE_ARN=" IT_ROLE_ARN, sts, NULL };
	canary_mount(source("s3"), es_s3, needles);
	/* the needles were really in play: credserver issued secrets */
	cr_expect_geq(it_credserver_stat(&cs, "issued"), 2);
}
