/* test_ctl.c - the control socket and the tierfs CLI against a real mount:
 * stats in three forms, warm (into SSD, then reads with zero GETs), pin
 * (kept under pressure; too much refused, nothing pinned), evict, residency,
 * trace, epoch, config (no secret), and a hostile peer: garbage, oversized
 * and malformed requests, and another uid (SO_PEERCRED).
 *
 * Mounts go through the fault proxy with --chunk-size 1M --parallel-gets 1
 * so one chunk fetched from the store is one object GET the proxy counts.
 * Every byte read is compared with the generator that made the upload.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct obj {
	const char *key;
	uint64_t seed;
	uint64_t size;
};

static const struct obj FILES[] = {
	{ "set/a.bin", 0x11, 3 * IT_MIB + 17 },
	{ "set/b.bin", 0x22, 2 * IT_MIB },
	{ "set/sub/c.bin", 0x33, IT_MIB / 2 },
	{ "set/sub/with space.bin", 0x44, 1000 },
};
#define N_FILES (sizeof(FILES) / sizeof(FILES[0]))
static const struct obj BIG = { "big.bin", 0x55, 24 * IT_MIB };
static const struct obj HOT = { "hot.bin", 0x66, 3 * IT_MIB };

static struct it_env env;
static struct it_bucket bucket;
static struct it_proxy proxy;
static struct it_mount mnt;
static char cache_dir[PATH_MAX];

static void ctl_init(void)
{
	char parent[PATH_MAX];

	IT_ENV_OR_SKIP(&env);
	cr_assert_not_null(env.proxy_bin, "TIERFS_PROXY_BIN not set");
	cr_assert_eq(it_bucket_create(&env, "ctl", &bucket), 0, "create bucket");
	for (size_t i = 0; i < N_FILES; i++)
		cr_assert_eq(it_put_gen(&bucket, FILES[i].key, FILES[i].seed, FILES[i].size), 0);
	cr_assert_eq(it_put_gen(&bucket, BIG.key, BIG.seed, BIG.size), 0);
	cr_assert_eq(it_put_gen(&bucket, HOT.key, HOT.seed, HOT.size), 0);
	cr_assert_eq(it_proxy_start(&env, env.endpoint, &proxy), 0, "start the fault proxy");
	cr_assert_eq(it_mkdtemp(&env, "ctlcache", parent, sizeof(parent)), 0);
	it_fmt(cache_dir, sizeof(cache_dir), "%s/cache", parent);
}

static void ctl_fini(void)
{
	it_cleanup();
	it_proxy_stop(&proxy);
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(ctl, .init = ctl_init, .fini = ctl_fini, .timeout = 240);

static void mount_ctl(const char *ram, bool ssd)
{
	const char *opts[16];
	size_t n = 0;
	char src[128];

	opts[n++] = "--chunk-size";
	opts[n++] = "1M";
	opts[n++] = "--parallel-gets";
	opts[n++] = "1";
	opts[n++] = "--ram-size";
	opts[n++] = ram;
	opts[n++] = "--read-ahead";
	opts[n++] = "0";
	if (ssd) {
		opts[n++] = "--cache-dir";
		opts[n++] = cache_dir;
	}
	opts[n] = NULL;
	it_fmt(src, sizeof(src), "s3://%s", bucket.name);
	if (it_mount(&env, src, proxy.url, opts, &mnt) != 0)
		cr_assert_fail("mount failed (status %d): %s", mnt.status, it_mount_log(&mnt));
}

/* Run `tierfs ARGS...`; its output in r (release it). */
static int cli(struct it_run *r, const char *const *args)
{
	cr_assert_eq(it_run_tierfs(&env, args, NULL, 120, r), 0);
	return r->status;
}

/* Run `tierfs ARGS...` and parse its stdout as one JSON value. */
static struct json_object *cli_json(const char *const *args)
{
	struct it_run r;
	struct json_object *o;

	cr_assert_eq(cli(&r, args), 0, "tierfs %s failed: %s", args[0], r.out);
	o = json_tokener_parse(r.out);
	cr_assert_not_null(o, "tierfs %s: not JSON: %s", args[0], r.out);
	it_run_release(&r);
	return o;
}

/* o["a"]["b"]... as an integer (-1 when absent). */
static long long jget(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;

	it_fmt(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(o, k, &o))
			return -1;
	return json_object_get_int64(o);
}

static long long stat_now(const char *path)
{
	char p[PATH_MAX];
	const char *args[] = { "stats", p, "--json", NULL };
	struct json_object *o;
	long long v;

	it_fmt(p, sizeof(p), "%s", mnt.dir);
	o = cli_json(args);
	v = jget(o, path);
	json_object_put(o);
	return v;
}

static void read_ok(const struct obj *o)
{
	char p[PATH_MAX];
	char *buf = malloc(o->size + 1);
	int fd;
	ssize_t r;

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, o->key);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", o->key, strerror(errno));
	r = it_pread_full(fd, buf, o->size + 1, 0);
	cr_assert_eq(r, (ssize_t)o->size, "read %s: %zd", o->key, r);
	cr_assert_eq(it_gen_mismatch(o->seed, 0, buf, o->size), -1, "%s: wrong bytes", o->key);
	free(buf);
	close(fd);
}

/* The residency reply for one file: its ram and ssd bytes. */
static void residency(const struct obj *o, long long *ram, long long *ssd, char *pinned,
		      size_t pinned_len)
{
	char p[PATH_MAX];
	const char *args[] = { "residency", "--json", p, NULL };
	struct it_run r;
	struct json_object *f, *v;

	it_fmt(p, sizeof(p), "%s/%s", mnt.dir, o->key);
	cr_assert_eq(cli(&r, args), 0, "residency: %s", r.out);
	/* --json prints one object per file */
	f = json_tokener_parse(r.out);
	cr_assert_not_null(f, "residency --json: %s", r.out);
	*ram = jget(f, "ram");
	*ssd = jget(f, "ssd");
	if (pinned) {
		pinned[0] = '\0';
		if (json_object_object_get_ex(f, "pinned", &v) && v)
			it_fmt(pinned, pinned_len, "%s", json_object_get_string(v));
	}
	json_object_put(f);
	it_run_release(&r);
}

/* The control socket's path, from the mount's log line. */
static void socket_path(char *out, size_t n)
{
	char *log = it_mount_log(&mnt), *p = strstr(log, "control socket ");
	size_t len;

	cr_assert_not_null(p, "no control socket line in: %s", log);
	p += strlen("control socket ");
	len = strcspn(p, "\n");
	cr_assert_lt(len, n);
	memcpy(out, p, len);
	out[len] = '\0';
	free(log);
}

static int sock_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	it_fmt(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* One reply line (without '\n') into buf; length, or -1 on EOF/timeout. */
static ssize_t read_line(int fd, char *buf, size_t n)
{
	size_t used = 0;

	while (used + 1 < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 10000) <= 0)
			return -1;
		r = read(fd, buf + used, 1);
		if (r <= 0)
			return -1;
		if (buf[used] == '\n') {
			buf[used] = '\0';
			return (ssize_t)used;
		}
		used++;
	}
	return -1;
}

static void send_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t w = send(fd, s, len, MSG_NOSIGNAL);
		if (w <= 0)
			return;             /* the daemon hung up: the caller checks */
		s += w;
		len -= (size_t)w;
	}
}

/* ---- tests ------------------------------------------------------------- */

Test(ctl, stats_in_three_forms_count_what_a_read_did)
{
	char p[PATH_MAX];
	const char *human[] = { "stats", p, NULL };
	const char *prom[] = { "stats", p, "--prometheus", NULL };
	struct it_run r;

	mount_ctl("16M", false);
	it_fmt(p, sizeof(p), "%s", mnt.dir);
	read_ok(&FILES[0]);
	cr_expect_eq(stat_now("counters.ram.misses"), 4, "a 3 MiB + 17 file is 4 chunks");
	cr_expect_eq(stat_now("counters.s3.gets"), 4);
	cr_expect_eq(stat_now("counters.store.bytes"), (long long)FILES[0].size);
	cr_expect_eq(stat_now("counters.ram.capacity"), 16 * IT_MIB);
	cr_expect_eq(stat_now("counters.ssd.hits"), -1, "no SSD tier, no ssd object");
	cr_expect_eq(cli(&r, human), 0, "%s", r.out);
	cr_expect(strstr(r.out, "ram") && strstr(r.out, "hit"), "table: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(cli(&r, prom), 0, "%s", r.out);
	cr_expect(strstr(r.out, "# TYPE tierfs_") != NULL, "prometheus: %s", r.out);
	cr_expect(strstr(r.out, "tierfs_s3_requests_total") != NULL, "prometheus: %s", r.out);
	it_run_release(&r);
	it_unmount_ok(&env, &mnt);
}

Test(ctl, warm_into_ssd_then_reads_send_no_gets)
{
	char dir[PATH_MAX];
	const char *warm[] = { "warm", "--tier", "ssd", dir, NULL };
	struct it_run r;
	long long ram, ssd, proxy_gets;

	mount_ctl("8M", true);
	it_fmt(dir, sizeof(dir), "%s/set", mnt.dir);
	cr_assert_eq(cli(&r, warm), 0, "warm: %s", r.out);
	it_run_release(&r);
	for (size_t i = 0; i < N_FILES; i++) {
		residency(&FILES[i], &ram, &ssd, NULL, 0);
		cr_expect_eq(ssd, (long long)FILES[i].size, "%s on SSD", FILES[i].key);
		cr_expect_eq(ram, 0, "%s: warm --tier ssd took RAM", FILES[i].key);
	}
	cr_expect_eq(stat_now("counters.ssd.insertions"), 4 + 2 + 1 + 1);
	/* every chunk of the set came once; reading it now costs no GET */
	proxy_gets = it_proxy_stat(&proxy, "object_GET");
	cr_expect_eq(proxy_gets, 4 + 2 + 1 + 1);
	for (size_t i = 0; i < N_FILES; i++)
		read_ok(&FILES[i]);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), proxy_gets, "reads after warm sent GETs");
	/* from SSD: by the kernel itself when passthrough is on (every file
	 * is wholly there), else through the daemon */
	if (stat_now("counters.passthrough.on") == 1)
		cr_expect_eq(stat_now("counters.passthrough.opens"), (long long)N_FILES);
	else
		cr_expect_geq(stat_now("counters.ssd.hits"), 8);
	/* warming again fetches nothing */
	cr_assert_eq(cli(&r, warm), 0, "warm: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), proxy_gets);
	it_unmount_ok(&env, &mnt);
}

Test(ctl, pinned_file_stays_in_ram_under_pressure_and_too_much_is_refused)
{
	char hot[PATH_MAX], big[PATH_MAX], other[PATH_MAX];
	const char *pin[] = { "pin", "--tier", "ram", hot, NULL };
	const char *pin_big[] = { "pin", "--tier", "ram", big, NULL };
	const char *unpin[] = { "unpin", hot, NULL };
	char pinned[16];
	struct it_run r;
	long long ram, ssd, gets;

	mount_ctl("8M", false);     /* 8 chunks: at most 4 MiB pinned */
	it_fmt(hot, sizeof(hot), "%s/%s", mnt.dir, HOT.key);
	it_fmt(big, sizeof(big), "%s/%s", mnt.dir, BIG.key);
	it_fmt(other, sizeof(other), "%s", mnt.dir);
	cr_assert_eq(cli(&r, pin), 0, "pin: %s", r.out);
	it_run_release(&r);
	residency(&HOT, &ram, &ssd, pinned, sizeof(pinned));
	cr_expect_eq(ram, (long long)HOT.size, "pin warms the file");
	cr_expect_str_eq(pinned, "ram");
	cr_expect_eq(stat_now("counters.pins.files"), 1);
	/* 24 MiB through an 8 MiB tier: everything unpinned is evicted */
	read_ok(&BIG);
	residency(&HOT, &ram, &ssd, NULL, 0);
	cr_expect_eq(ram, (long long)HOT.size, "a pinned chunk was evicted");
	gets = it_proxy_stat(&proxy, "object_GET");
	it_drop_caches();
	read_ok(&HOT);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), gets, "reading the pinned file sent GETs");
	/* 24 MiB more would exceed half the tier: refused, nothing pinned */
	cr_expect_eq(cli(&r, pin_big), 1, "pinning too much: %s", r.out);
	cr_expect(strstr(r.out, "nothing pinned") != NULL, "message: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(stat_now("counters.pins.files"), 1);
	/* unpinned, it is ordinary again: the next big read evicts it */
	cr_assert_eq(cli(&r, unpin), 0, "unpin: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(stat_now("counters.pins.files"), 0);
	read_ok(&BIG);
	residency(&HOT, &ram, &ssd, NULL, 0);
	cr_expect_lt(ram, (long long)HOT.size, "unpinned yet never evicted");
	it_unmount_ok(&env, &mnt);
}

Test(ctl, evict_drops_a_file_from_both_tiers_and_all)
{
	char a[PATH_MAX], mp[PATH_MAX];
	const char *ev[] = { "evict", a, NULL };
	const char *ev_all[] = { "evict", "--all", mp, NULL };
	struct it_run r;
	long long ram, ssd, gets;

	mount_ctl("16M", true);
	it_fmt(a, sizeof(a), "%s/%s", mnt.dir, FILES[0].key);
	it_fmt(mp, sizeof(mp), "%s", mnt.dir);
	read_ok(&FILES[0]);
	read_ok(&FILES[1]);
	/* the SSD write-behind is asynchronous: wait for it */
	for (int i = 0; i < 200 && stat_now("counters.ssd.insertions") < 6; i++)
		usleep(50000);
	residency(&FILES[0], &ram, &ssd, NULL, 0);
	cr_assert_eq(ram, (long long)FILES[0].size);
	cr_assert_eq(ssd, (long long)FILES[0].size);
	cr_assert_eq(cli(&r, ev), 0, "evict: %s", r.out);
	it_run_release(&r);
	residency(&FILES[0], &ram, &ssd, NULL, 0);
	cr_expect_eq(ram, 0);
	cr_expect_eq(ssd, 0);
	gets = it_proxy_stat(&proxy, "object_GET");
	it_drop_caches();
	read_ok(&FILES[0]);
	cr_expect_eq(it_proxy_stat(&proxy, "object_GET"), gets + 4, "evicted chunks came back");
	cr_assert_eq(cli(&r, ev_all), 0, "evict --all: %s", r.out);
	it_run_release(&r);
	cr_expect_eq(stat_now("counters.ram.entries"), 0);
	cr_expect_eq(stat_now("counters.ssd.entries"), 0);
	it_unmount_ok(&env, &mnt);
}

Test(ctl, trace_records_what_readers_asked_epoch_and_config)
{
	char mp[PATH_MAX], tf[PATH_MAX], *text;
	const char *start[] = { "trace", "start", tf, mp, NULL };
	const char *stop[] = { "trace", "stop", mp, NULL };
	const char *epoch[] = { "epoch", mp, NULL };
	const char *config[] = { "config", mp, NULL };
	struct it_run r;
	size_t len;

	mount_ctl("16M", false);
	it_fmt(mp, sizeof(mp), "%s", mnt.dir);
	it_fmt(tf, sizeof(tf), "%s/trace.txt", env.tmp);
	unlink(tf);
	cr_assert_eq(cli(&r, start), 0, "trace start: %s", r.out);
	it_run_release(&r);
	read_ok(&FILES[1]);
	cr_assert_eq(cli(&r, stop), 0, "trace stop: %s", r.out);
	it_run_release(&r);
	text = it_read_file(tf, &len);
	cr_assert_not_null(text, "no trace file");
	cr_expect(strstr(text, "set/b.bin 0\n") && strstr(text, "set/b.bin 1\n"),
		  "trace: %s", text);
	free(text);

	cr_assert_eq(cli(&r, epoch), 0, "epoch: %s", r.out);
	it_run_release(&r);
	it_drop_caches();
	read_ok(&FILES[2]);
	cr_expect_eq(stat_now("epoch.number"), 1);
	cr_expect_eq(stat_now("epoch.counters.s3.gets"), 1, "one chunk since the epoch");
	cr_expect_geq(stat_now("counters.s3.gets"), 3);

	cr_assert_eq(cli(&r, config), 0, "config: %s", r.out);
	cr_expect(strstr(r.out, "chunk-size") != NULL, "config: %s", r.out);
	cr_expect(strstr(r.out, env.secret_key) == NULL, "config shows the secret key");
	cr_expect(strstr(r.out, env.access_key) == NULL, "config shows the whole key id");
	it_run_release(&r);
	it_unmount_ok(&env, &mnt);
}

Test(ctl, garbage_oversized_and_malformed_requests_get_errors_and_change_nothing)
{
	char path[PATH_MAX], line[4096];
	static const char *bad[] = {
		"not json",
		"[1,2,3]",
		"{\"cmd\":42}",
		"{\"nocmd\":true}",
		"{\"cmd\":\"format-disk\"}",
		"{\"cmd\":\"residency\",\"paths\":[\"../../etc/passwd\"]}",
		"{\"cmd\":\"residency\",\"paths\":[\"/abs\"]}",
		"{\"cmd\":\"residency\",\"paths\":\"set/a.bin\"}",
		"{\"cmd\":\"warm\",\"path\":\"set/a.bin\",\"tier\":\"gpu\"}",
		"{\"cmd\":\"evict\",\"paths\":[\"set/a.bin\"],\"all\":true}",
		"{\"cmd\":\"trace_start\",\"file\":\"relative.txt\"}",
		"{\"cmd\":\"ping\"} trailing",
		"{\"cmd\":\"pin\",\"paths\":[\"a\\u0000b\"]}",
		"{\"cmd\":\"ping\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	};
	int fd;
	char *huge;

	mount_ctl("16M", false);
	socket_path(path, sizeof(path));
	fd = sock_connect(path);
	cr_assert_geq(fd, 0, "connect %s: %s", path, strerror(errno));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_all(fd, bad[i], strlen(bad[i]));
		send_all(fd, "\n", 1);
		cr_assert_geq(read_line(fd, line, sizeof(line)), 0, "no reply to %s", bad[i]);
		cr_expect(strstr(line, "\"ok\":false") && strstr(line, "\"error\""),
			  "%s -> %s", bad[i], line);
	}
	/* the connection is still usable */
	send_all(fd, "{\"cmd\":\"ping\"}\n", 15);
	cr_assert_geq(read_line(fd, line, sizeof(line)), 0);
	cr_expect(strstr(line, "\"ok\":true") != NULL, "ping: %s", line);
	/* 2 MiB with no newline: an error line, then the daemon hangs up */
	huge = malloc(2 * IT_MIB);
	memset(huge, 'x', 2 * IT_MIB);
	send_all(fd, huge, 2 * IT_MIB);
	free(huge);
	cr_assert_geq(read_line(fd, line, sizeof(line)), 0, "no reply to an oversized request");
	cr_expect(strstr(line, "too long") != NULL, "oversized: %s", line);
	cr_expect_lt(read_line(fd, line, sizeof(line)), 0, "still connected after oversize");
	close(fd);
	/* 40 connections at once: 32 served, the rest told busy, none hangs.
	 * The busy answers are collected until 8 came or 10 s passed (not
	 * after a fixed pause: a loaded machine may take longer to send
	 * them); a ninth would show up in the same loop. */
	int fds[40], busy = 0;
	bool answered[40] = { false };
	for (int i = 0; i < 40; i++)
		fds[i] = sock_connect(path);
	for (double end = it_now() + 10.0; busy < 8 && it_now() < end;) {
		usleep(20000);
		for (int i = 0; i < 40; i++) {
			struct pollfd p = { fds[i], POLLIN, 0 };
			if (fds[i] >= 0 && !answered[i] && poll(&p, 1, 0) > 0) {
				answered[i] = true;
				if (read_line(fds[i], line, sizeof(line)) > 0 && strstr(line, "busy"))
					busy++;
			}
		}
	}
	usleep(200000);          /* time for a wrong ninth answer to arrive */
	for (int i = 0; i < 40; i++) {
		struct pollfd p = { fds[i], POLLIN, 0 };
		if (fds[i] >= 0 && !answered[i] && poll(&p, 1, 0) > 0 &&
		    read_line(fds[i], line, sizeof(line)) > 0 && strstr(line, "busy"))
			busy++;
	}
	cr_expect_eq(busy, 8, "connections refused as busy");
	for (int i = 0; i < 40; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* the daemon is unaffected: the mount reads, the CLI answers */
	read_ok(&FILES[0]);
	cr_expect_eq(stat_now("counters.s3.gets"), 4);
	it_unmount_ok(&env, &mnt);
}

Test(ctl, another_uid_is_refused_by_peer_credentials)
{
	char path[PATH_MAX], dir[PATH_MAX], line[1024];
	int pipefd[2], status;
	pid_t pid;
	ssize_t n;

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another uid");
	mount_ctl("16M", false);
	socket_path(path, sizeof(path));
	/* open the file permissions wide, as a careless operator might: the
	 * peer credential check must still refuse the stranger */
	it_fmt(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char buf[1024] = "";
		int fd;

		close(pipefd[0]);
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		fd = sock_connect(path);
		if (fd < 0) {
			snprintf(buf, sizeof(buf), "connect: %s", strerror(errno));
		} else {
			send_all(fd, "{\"cmd\":\"stats\"}\n", 16);
			if (read_line(fd, buf, sizeof(buf)) < 0)
				snprintf(buf, sizeof(buf), "no reply");
			close(fd);
		}
		if (write(pipefd[1], buf, strlen(buf)) < 0)
			_exit(4);
		_exit(0);
	}
	close(pipefd[1]);
	n = read(pipefd[0], line, sizeof(line) - 1);
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	cr_assert_gt(n, 0);
	line[n] = '\0';
	cr_expect(strstr(line, "permission denied") != NULL && strstr(line, "counters") == NULL,
		  "another uid got: %s", line);
	chmod(dir, 0700);
	chmod(path, 0600);
	it_unmount_ok(&env, &mnt);
}

/* The proxy's object GETs once none came for quiet_ms (at most 60 s). */
static long long gets_when_quiet(int quiet_ms)
{
	long long last = it_proxy_stat(&proxy, "object_GET");
	int still = 0;

	for (int i = 0; i < 6000 && still < quiet_ms / 10; i++) {
		long long now;

		usleep(10000);
		now = it_proxy_stat(&proxy, "object_GET");
		still = now == last ? still + 1 : 0;
		last = now;
	}
	return last;
}

Test(ctl, ctrl_c_cancels_a_warm_up_and_the_daemon_stops_fetching)
{
	char big[PATH_MAX], out[256];
	long long g1, g2;
	int status;
	pid_t pid;

	mount_ctl("64M", true);
	/* 200 ms before each response: the 24 chunks take ~5 s one by one */
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=200", out, sizeof(out)), 200);
	it_fmt(big, sizeof(big), "%s/%s", mnt.dir, BIG.key);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execl(env.tierfs_bin, "tierfs", "warm", "--jobs", "1", big, (char *)NULL);
		_exit(127);
	}
	/* Ctrl-C once the daemon is fetching (however slow the CLI starts) */
	for (int i = 0; i < 3000 && it_proxy_stat(&proxy, "object_GET") == 0; i++)
		usleep(10000);
	cr_assert_gt(it_proxy_stat(&proxy, "object_GET"), 0, "the warm-up never started");
	kill(pid, SIGINT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 130, "warm after Ctrl-C: status %d",
		  status);
	/* the chunk in hand finishes: then no GET for a second (five times
	 * the latency), or the daemon fetches on to the end of the file */
	g1 = gets_when_quiet(1000);
	usleep(1000000);
	g2 = it_proxy_stat(&proxy, "object_GET");
	cr_expect_eq(g2, g1, "the daemon kept fetching after the warm-up was cancelled");
	cr_expect_lt(g1, 24, "the whole file was fetched: nothing was cancelled");
	cr_assert_eq(it_proxy_ctl(&proxy, "shape?latency_ms=0", out, sizeof(out)), 200);
	it_unmount_ok(&env, &mnt);
}

/* A plan sent in parts: the first gets an id, parts append to it, a new
 * first part replaces a plan half sent (appending to the old id is then
 * an error), and only the last part hands the plan over. */
Test(ctl, a_plan_in_parts_is_handed_over_whole_and_a_stale_part_refused)
{
	char path[PATH_MAX], line[4096], req[256];
	int fd;
	long long id1, id2;
	struct json_object *o;

	mount_ctl("16M", false);
	socket_path(path, sizeof(path));
	fd = sock_connect(path);
	cr_assert_geq(fd, 0, "connect %s: %s", path, strerror(errno));
#define CALL(s)                                                                           \
	do {                                                                              \
		send_all(fd, s "\n", strlen(s) + 1);                                      \
		cr_assert_geq(read_line(fd, line, sizeof(line)), 0, "no reply to %s", s); \
	} while (0)
	CALL("{\"cmd\":\"plan\",\"paths\":[\"set/a.bin\",\"set/b.bin\"],\"more\":true}");
	o = json_tokener_parse(line);
	id1 = jget(o, "plan");
	json_object_put(o);
	cr_assert_gt(id1, 0, "%s", line);
	cr_expect_eq(stat_now("plan.entries"), -1, "a plan half sent is not in force");
	CALL("{\"cmd\":\"plan\",\"paths\":[\"x\"],\"more\":true}");
	o = json_tokener_parse(line);
	id2 = jget(o, "plan");
	json_object_put(o);
	cr_assert_gt(id2, id1, "%s", line);
	it_fmt(req, sizeof(req), "{\"cmd\":\"plan\",\"paths\":[\"y\"],\"append\":%lld}\n", id1);
	send_all(fd, req, strlen(req));
	cr_assert_geq(read_line(fd, line, sizeof(line)), 0);
	cr_expect(strstr(line, "\"ok\":false") && strstr(line, "not being sent"), "%s", line);
	it_fmt(req, sizeof(req), "{\"cmd\":\"plan\",\"paths\":[\"set/a.bin\"],\"append\":%lld}\n",
	       id2);
	send_all(fd, req, strlen(req));
	cr_assert_geq(read_line(fd, line, sizeof(line)), 0);
	cr_expect(strstr(line, "\"ok\":true") && strstr(line, "\"entries\":2"), "%s", line);
	cr_expect_eq(stat_now("plan.entries"), 2);
	cr_expect_eq(stat_now("plan.position"), 0);
	/* a part naming the plan handed over is stale too */
	send_all(fd, req, strlen(req));
	cr_assert_geq(read_line(fd, line, sizeof(line)), 0);
	cr_expect(strstr(line, "not being sent"), "%s", line);
#undef CALL
	close(fd);
	it_unmount_ok(&env, &mnt);
}
