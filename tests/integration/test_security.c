/* test_security.c - who can see what: the cache directory and the control
 * socket keep their modes under umask 000, and another uid's access to
 * the mount follows the documented policy (refused without allow_other;
 * with it, the --file-mode / --dir-mode bits decide, and the tree stays
 * read-only).  Credentials in logs, stats, config, argv and the cache are
 * test_creds_mount's no_secret_in_logs_config_stats_argv_or_cache; TLS
 * verification is test_s3_client's tls_verification; the control
 * socket's peer check is test_ctl_mount's
 * another_uid_is_refused_by_peer_credentials.
 */
#include "harness.h"


#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534
#define FILE_SIZE 5000u

static struct it_env env;
static struct it_bucket bucket;
static char source[128];

static void sec_init(void)
{
	IT_ENV_OR_SKIP(&env);
	cr_assert_eq(it_bucket_create(&env, "sec", &bucket), 0);
	cr_assert_eq(it_put_gen(&bucket, "d/f.bin", 77, FILE_SIZE), 0);
	it_fmt(source, sizeof(source), "s3://%s", bucket.name);
}

static void sec_fini(void)
{
	it_cleanup();
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
}

TestSuite(security, .init = sec_init, .fini = sec_fini, .timeout = 300);

/* Every directory under dir is 0700 at most and nothing under it can be
 * written by group or others; returns the number of entries checked. */
static size_t check_modes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char p[PATH_MAX * 2];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		it_fmt(p, sizeof(p), "%s/%s", dir, e->d_name);
		cr_assert_eq(lstat(p, &st), 0);
		n++;
		cr_expect_eq(st.st_mode & 022, 0, "%s is mode %04o: writable by others", p,
			     (unsigned)(st.st_mode & 07777));
		if (S_ISDIR(st.st_mode)) {
			cr_expect_eq(st.st_mode & 077, 0, "directory %s is mode %04o", p,
				     (unsigned)(st.st_mode & 07777));
			n += check_modes(p);
		}
	}
	closedir(d);
	return n;
}

Test(security, cache_and_socket_modes_hold_under_umask_000)
{
	char parent[PATH_MAX], cache[PATH_MAX + 8], run[PATH_MAX + 8], rt_env[PATH_MAX + 32];
	char sock[PATH_MAX * 2], f[PATH_MAX * 2];
	struct it_mount m;
	struct stat st;

	cr_assert_eq(it_mkdtemp(&env, "sec-umask", parent, sizeof(parent)), 0);
	it_fmt(cache, sizeof(cache), "%s/cache", parent);     /* made by the daemon */
	it_fmt(run, sizeof(run), "%s/run", parent);
	it_fmt(rt_env, sizeof(rt_env), "TIERFS_RUNTIME_DIR=%s", run);
	const char *env_set[] = { rt_env, NULL };
	const char *opts[] = { "--cache-dir", cache, "--chunk-size", "64K", NULL };
	char mnt[PATH_MAX];
	cr_assert_eq(it_mkdtemp(&env, "sec-mnt", mnt, sizeof(mnt)), 0);

	mode_t old = umask(0);     /* the daemon inherits it */
	int rc = it_mount_at(&env, source, env.endpoint, mnt, opts, env_set, &m);
	umask(old);
	cr_assert_eq(rc, 0, "mount failed: %s", it_mount_log(&m));
	it_fmt(f, sizeof(f), "%s/d/f.bin", m.dir);
	size_t len = 0;
	char *data = it_read_file(f, &len);
	cr_assert_not_null(data);
	cr_expect_eq(len, FILE_SIZE);
	free(data);
	/* the chunk files are written in the background: wait for one */
	size_t n = 0;
	for (double t0 = it_now(); it_now() - t0 < 30; usleep(100000)) {
		if (it_daemon_stat(&m, "ssd.insertions") > 0)
			break;
	}
	cr_assert_eq(stat(cache, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0700, "cache directory mode %04o",
		     (unsigned)(st.st_mode & 07777));
	n = check_modes(cache);
	cr_expect_gt(n, 3, "only %zu entries in the cache directory", n);
	cr_assert_eq(stat(run, &st), 0, "no control socket directory %s", run);
	cr_expect_eq(st.st_mode & 07777, 0700, "control socket directory mode %04o",
		     (unsigned)(st.st_mode & 07777));
	DIR *d = opendir(run);
	struct dirent *e;
	size_t socks = 0;
	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		it_fmt(sock, sizeof(sock), "%s/%s", run, e->d_name);
		if (lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
			socks++;
			cr_expect_eq(st.st_mode & 077, 0, "socket %s mode %04o", sock,
				     (unsigned)(st.st_mode & 07777));
		}
	}
	closedir(d);
	cr_expect_eq(socks, 1, "%zu control sockets in %s", socks, run);
	it_unmount_ok(&env, &m);
}

/* What uid NOBODY gets, in a child, through a directory fd the test opened
 * (so the test directory's own modes do not get in the way): open and
 * read of d/f.bin, open for writing, and a listing of d.  0 or an errno
 * for each. */
struct other_uid {
	int read_err;
	ssize_t read_bytes;
	int write_err;
	int list_err;
};

static struct other_uid as_nobody(const char *mnt)
{
	struct other_uid r;
	int dirfd = open(mnt, O_RDONLY | O_DIRECTORY);
	int pipefd[2], status;
	pid_t pid;

	cr_assert_geq(dirfd, 0, "open %s: %s", mnt, strerror(errno));
	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char buf[FILE_SIZE + 1];
		int fd;

		memset(&r, 0, sizeof(r));
		if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(3);
		fd = openat(dirfd, "d/f.bin", O_RDONLY);
		if (fd < 0) {
			r.read_err = errno;
		} else {
			r.read_bytes = read(fd, buf, sizeof(buf));
			if (r.read_bytes < 0)
				r.read_err = errno;
			close(fd);
		}
		fd = openat(dirfd, "d/f.bin", O_WRONLY);
		r.write_err = fd < 0 ? errno : 0;
		fd = openat(dirfd, "d", O_RDONLY | O_DIRECTORY);
		r.list_err = fd < 0 ? errno : 0;
		if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
			_exit(4);
		_exit(0);
	}
	close(pipefd[1]);
	cr_assert_eq(read(pipefd[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	close(pipefd[0]);
	close(dirfd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	return r;
}

Test(security, another_uid_is_refused_without_allow_other)
{
	struct it_mount m;

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another uid");
	cr_assert_eq(it_mount(&env, source, env.endpoint, NULL, &m), 0, "%s", it_mount_log(&m));
	struct other_uid r = as_nobody(m.dir);
	cr_expect_eq(r.read_err, EACCES, "read: %s", strerror(r.read_err));
	cr_expect_eq(r.list_err, EACCES, "list: %s", strerror(r.list_err));
	cr_expect_neq(r.write_err, 0, "another uid opened a file for writing");
	it_unmount_ok(&env, &m);
}

Test(security, allow_other_lets_another_uid_read_by_mode_only)
{
	struct it_mount m;
	const char *opts[] = { "-o", "allow_other", NULL };
	const char *strict[] = { "-o", "allow_other", "--file-mode", "0440", NULL };

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another uid");
	/* default modes (0444 files, 0555 directories): readable, read-only */
	cr_assert_eq(it_mount(&env, source, env.endpoint, opts, &m), 0, "%s", it_mount_log(&m));
	struct other_uid r = as_nobody(m.dir);
	cr_expect_eq(r.read_err, 0, "read: %s", strerror(r.read_err));
	cr_expect_eq(r.read_bytes, (ssize_t)FILE_SIZE);
	cr_expect_eq(r.list_err, 0, "list: %s", strerror(r.list_err));
	cr_expect(r.write_err == EROFS || r.write_err == EACCES, "write: %s",
		  strerror(r.write_err));
	it_unmount_ok(&env, &m);
	/* --file-mode 0440: the kernel checks the bits (default_permissions) */
	cr_assert_eq(it_mount(&env, source, env.endpoint, strict, &m), 0, "%s", it_mount_log(&m));
	r = as_nobody(m.dir);
	cr_expect_eq(r.read_err, EACCES, "read with 0440: %s", strerror(r.read_err));
	cr_expect_eq(r.list_err, 0, "list: %s", strerror(r.list_err));
	it_unmount_ok(&env, &m);
}

/* ---- TLS: verified always; a private CA only through --ca-bundle -------- */

static pid_t tls_pid;

static void tls_stop(void)
{
	if (tls_pid > 0) {
		kill(tls_pid, SIGTERM);
		it_wait_pid(tls_pid, 5.0);
		tls_pid = 0;
	}
}

/* tests/tools/tlsproxy.py with a fresh self-signed certificate for
 * "localhost" in front of the test's radosgw; its port. */
static int tls_start(const char *dir, char *cert, size_t cn)
{
	char cmd[PATH_MAX * 3], key[PATH_MAX + 16], portfile[PATH_MAX + 16], upstream[128];
	const char *hp = strstr(env.endpoint, "://");

	it_fmt(cert, cn, "%s/cert.pem", dir);
	it_fmt(key, sizeof(key), "%s/key.pem", dir);
	it_fmt(portfile, sizeof(portfile), "%s/port", dir);
	it_fmt(cmd, sizeof(cmd), "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
	       "-subj /CN=localhost -addext subjectAltName=DNS:localhost "
	       "-keyout '%s' -out '%s' >/dev/null 2>&1", key, cert);
	cr_assert_eq(system(cmd), 0, "openssl req failed");
	cr_assert_not_null(hp, "endpoint %s", env.endpoint);
	it_fmt(upstream, sizeof(upstream), "%s", hp + 3);
	tls_pid = fork();
	cr_assert_geq(tls_pid, 0);
	if (tls_pid == 0) {
		execlp("python3", "python3", TIERFS_TLSPROXY, "--cert", cert, "--key", key,
		       "--upstream", upstream, "--portfile", portfile, (char *)NULL);
		_exit(127);
	}
	/* python may take seconds to start on a loaded machine */
	for (double t0 = it_now(); it_now() - t0 < 60; usleep(50000)) {
		char *s = it_read_file(portfile, NULL);   /* "" until written */
		int port = atoi(s);

		free(s);
		if (port > 0)
			return port;
	}
	cr_assert_fail("tlsproxy did not start");
	return -1;
}

Test(security, tls_private_ca_only_with_ca_bundle, .fini = tls_stop)
{
	char dir[PATH_MAX], cert[PATH_MAX + 16], ep[64], f[PATH_MAX * 2];
	struct it_mount m;
	int port;

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		cr_skip_test("no openssl command: TLS verification not tested");
	cr_assert_eq(it_mkdtemp(&env, "sec-tls", dir, sizeof(dir)), 0);
	port = tls_start(dir, cert, sizeof(cert));
	const char *no_ca[] = { "AWS_CA_BUNDLE=", NULL };

	/* the system's CAs do not know this certificate: no mount */
	char mnt[PATH_MAX];
	it_fmt(ep, sizeof(ep), "https://localhost:%d", port);
	cr_assert_eq(it_mkdtemp(&env, "sec-tls-mnt", mnt, sizeof(mnt)), 0);
	cr_expect_neq(it_mount_at(&env, source, ep, mnt, NULL, no_ca, &m), 0,
		      "mounted an untrusted server");
	char *log = it_mount_log(&m);
	cr_expect(strcasestr(log, "certificate") || strcasestr(log, "SSL") ||
		  strcasestr(log, "TLS"), "no TLS reason in: %s", log);
	free(log);

	/* --ca-bundle trusts it: the bytes come through TLS */
	const char *opts[] = { "--ca-bundle", cert, NULL };
	cr_assert_eq(it_mkdtemp(&env, "sec-tls-mnt", mnt, sizeof(mnt)), 0);
	cr_assert_eq(it_mount_at(&env, source, ep, mnt, opts, no_ca, &m), 0,
		     "mount with --ca-bundle failed: %s", it_mount_log(&m));
	it_fmt(f, sizeof(f), "%s/d/f.bin", m.dir);
	size_t len = 0;
	char *data = it_read_file(f, &len);
	cr_assert_not_null(data);
	cr_expect_eq(len, FILE_SIZE);
	cr_expect_eq(it_gen_mismatch(77, 0, data, len), -1);
	free(data);
	it_unmount_ok(&env, &m);

	/* the right CA but another host name: no mount */
	it_fmt(ep, sizeof(ep), "https://127.0.0.1:%d", port);
	cr_assert_eq(it_mkdtemp(&env, "sec-tls-mnt", mnt, sizeof(mnt)), 0);
	cr_expect_neq(it_mount_at(&env, source, ep, mnt, opts, no_ca, &m), 0,
		      "mounted a server whose certificate names another host");

	/* a --ca-bundle that cannot be read is an error of its own */
	const char *missing[] = { "--ca-bundle", "/nonexistent/ca.pem", NULL };
	cr_assert_eq(it_mkdtemp(&env, "sec-tls-mnt", mnt, sizeof(mnt)), 0);
	cr_expect_neq(it_mount_at(&env, source, ep, mnt, missing, no_ca, &m), 0);
	log = it_mount_log(&m);
	cr_expect(strstr(log, "--ca-bundle /nonexistent/ca.pem"), "log: %s", log);
	free(log);
}
