/* harness.h - shared helpers of the integration tests: environment, unique
 * buckets and uploads through s3_client, a seekable pseudo-random data
 * generator, the fault proxy, and real tierfs mounts.
 *
 * Invariants: every process, mount and directory a helper creates is
 * recorded here and undone by it_cleanup() (call it from a Criterion
 * .fini), so a failing test leaves no mount behind.  Foreground daemons get
 * SIGTERM when the test process dies (PR_SET_PDEATHSIG); the test process
 * is a child subreaper, so daemons that detach are reaped by it too.
 * Nothing here is thread-safe except it_put_many()'s internal workers.
 */
#ifndef TIERFS_IT_HARNESS_H
#define TIERFS_IT_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <criterion/criterion.h>

#include "s3/s3_client.h"

#define IT_MIB (1024u * 1024u)

/* Test environment, from the variables scripts/test.sh exports. */
struct it_env {
	const char *endpoint;      /* S3_ENDPOINT, e.g. http://127.0.0.1:7480 */
	const char *access_key;    /* AWS_ACCESS_KEY_ID */
	const char *secret_key;    /* AWS_SECRET_ACCESS_KEY */
	const char *region;        /* AWS_DEFAULT_REGION or "us-east-1" */
	const char *tierfs_bin;    /* TIERFS_BIN */
	const char *proxy_bin;     /* TIERFS_PROXY_BIN */
	const char *sim_bin;       /* TIERFS_SIM_BIN */
	char tmp[PATH_MAX];        /* TIERFS_TEST_TMP (created) or /tmp/tierfs-it */
};

/* Fill env from the environment.  false when S3_ENDPOINT is unset (the
 * caller skips).  Also makes the calling process a child subreaper. */
bool it_env_load(struct it_env *env);

/* Load env or skip the current test. */
#define IT_ENV_OR_SKIP(env)                                             \
	do {                                                            \
		if (!it_env_load(env))                                  \
			cr_skip_test("S3_ENDPOINT not set");            \
		cr_assert_not_null((env)->tierfs_bin, "TIERFS_BIN not set"); \
	} while (0)

/* Undo everything the helpers created in this process: unmount mounts
 * (tierfs unmount, fusermount3 -u, lazy unmount as last resort), kill and
 * reap daemons and proxies, remove mountpoints.  Idempotent. */
void it_cleanup(void);

/* snprintf that aborts the test process, with a message, when the output
 * does not fit (a silently truncated path would test the wrong thing). */
int it_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- data generator ---------------------------------------------------- */

/* Byte off..off+len of the endless stream for seed into buf.  Any window of
 * the stream can be produced on its own, so big fixtures need no files. */
void it_gen(uint64_t seed, uint64_t off, void *buf, size_t len);

/* Offset (relative to buf) of the first byte of buf that differs from the
 * stream for seed at off, or -1 when all len bytes match. */
int64_t it_gen_mismatch(uint64_t seed, uint64_t off, const void *buf, size_t len);

/* ---- buckets ----------------------------------------------------------- */

/* A bucket on the test server, with an s3_client talking to it directly
 * (path-style, never through the proxy). */
struct it_bucket {
	char name[64];
	struct s3_client *client;
};

/* "tfs-it-TAG-PID-COUNTER-TIME" (lower case, <= 63 bytes) into out. */
void it_unique_bucket_name(const char *tag, char *out, size_t n);

/* Create a fresh bucket named it_unique_bucket_name(tag).  0 or a tfs_err
 * (detail printed to stderr). */
int it_bucket_create(const struct it_env *env, const char *tag, struct it_bucket *b);

/* A client on an existing bucket (no network I/O). */
int it_bucket_open(const struct it_env *env, const char *name, struct it_bucket *b);

/* Delete every key of the bucket (best effort; returns the first error). */
int it_bucket_empty(struct it_bucket *b);

/* Free the client (the bucket itself stays). */
void it_bucket_close(struct it_bucket *b);
/* Empty the bucket, delete it and free the client: what a fixture does at
 * its end, so that runs in a row do not pile buckets up on the server.
 * Failures are reported, not fatal. */
void it_bucket_remove(struct it_bucket *b);

/* PUT key with the given bytes / with size bytes of the stream for seed.
 * 0 or a tfs_err (detail printed to stderr). */
int it_put(struct it_bucket *b, const char *key, const void *data, size_t len);
int it_put_gen(struct it_bucket *b, const char *key, uint64_t seed, uint64_t size);

struct it_obj {
	const char *key;
	uint64_t seed;
	uint64_t size;
};

/* PUT n generated objects with up to `threads` parallel uploads. */
int it_put_many(struct it_bucket *b, const struct it_obj *objs, size_t n, unsigned threads);

/* ---- fault proxy ------------------------------------------------------- */

struct it_proxy {
	pid_t pid;
	int port;
	char url[64];              /* http://127.0.0.1:PORT */
	char portfile[PATH_MAX];
};

/* Start tierfs-faultproxy in front of upstream ("http://host:port") and
 * wait (<= 10 s) until its control endpoint answers.  0 or -1. */
int it_proxy_start(const struct it_env *env, const char *upstream, struct it_proxy *p);

/* Stop p and start a new proxy on the same port: in between, connections
 * to it are refused (the store is unreachable).  Rules and stats start
 * empty.  0 or -1. */
int it_proxy_restart(const struct it_env *env, const char *upstream, struct it_proxy *p);

/* GET http://127.0.0.1:PORT/__proxy/<what> ; the body (NUL-terminated,
 * truncated to outlen) into out when out != NULL.  HTTP status or -1. */
int it_proxy_ctl(struct it_proxy *p, const char *what, char *out, size_t outlen);

/* Arm a rule: query is what follows "fault?" (printf format). 0 or -1. */
int it_proxy_fault(struct it_proxy *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int it_proxy_clear(struct it_proxy *p);
int it_proxy_reset_stats(struct it_proxy *p);

/* The counter `name` of /__proxy/stats ("GET", "faults", ...), -1 if absent. */
long long it_proxy_stat(struct it_proxy *p, const char *name);

/* SIGTERM (then SIGKILL) and reap. */
void it_proxy_stop(struct it_proxy *p);

/* ---- credential endpoints (tests/tools/credserver.py) ------------------ */

struct it_credserver {
	pid_t pid;
	int port;
	char url[64];              /* http://127.0.0.1:PORT */
	char dir[PATH_MAX];        /* sa.json, user.json, web-token, container-token */
	char portfile[PATH_MAX];
};

/* ARN of the role credserver lets a web identity assume. */
#define IT_ROLE_ARN "arn:aws:iam::123456789012:role/tierfs-test"
/* What every secret credserver makes contains. */
#define IT_CANARY "TFSCANARY"

/* Start credserver (credentials live ttl_s seconds; data forwarded to
 * env->endpoint with env's keys) and wait (<= 15 s) until it answers.
 * 0 or -1. */
int it_credserver_start(const struct it_env *env, unsigned ttl_s, struct it_credserver *cs);

/* Counter `name` of /__cred/stats, -1 if absent or no answer. */
long long it_credserver_stat(struct it_credserver *cs, const char *name);

/* The next n credential requests fail with HTTP 500.  0 or -1. */
int it_credserver_fail(struct it_credserver *cs, int n);

/* Make the S3 Express sessions credserver issues from now on live s
 * seconds.  0 or -1. */
int it_credserver_session_ttl(struct it_credserver *cs, unsigned s);
/* Make credserver forget every S3 Express session it issued.  0 or -1. */
int it_credserver_revoke_sessions(struct it_credserver *cs);
/* "DIR/name" of a file credserver wrote, into out. */
void it_credserver_file(const struct it_credserver *cs, const char *name, char *out, size_t n);

void it_credserver_stop(struct it_credserver *cs);

/* ---- running tierfs ---------------------------------------------------- */

/* Result of a command run to completion. */
struct it_run {
	int status;                /* exit code; 128+signal; -1 when timed out */
	bool timed_out;
	double secs;               /* wall time until it exited */
	char *out;                 /* its stderr and stdout (malloc'd, NUL-terminated) */
};

/* Run TIERFS_BIN with args (NULL-terminated, without argv[0]) and the
 * extra environment assignments env_set ("K=V"; "K=" with nothing after
 * unsets K; of two assignments of a name the later wins; may be NULL),
 * wait at most timeout_s (then SIGKILL).
 * Detached grandchildren (the daemon) keep running.  0 or -1 (fork). */
int it_run_tierfs(const struct it_env *env, const char *const *args,
		  const char *const *env_set, double timeout_s, struct it_run *r);
void it_run_release(struct it_run *r);
/* The same with TIERFS_SIM_BIN (tierfs-sim) and no extra environment. */
int it_run_sim(const struct it_env *env, const char *const *args, double timeout_s,
	       struct it_run *r);

/* A foreground (-f) tierfs mount. */
struct it_mount {
	char dir[PATH_MAX];        /* the mountpoint */
	char errpath[PATH_MAX];    /* daemon's stderr+stdout */
	pid_t pid;                 /* daemon; 0 once reaped */
	int status;                /* exit status once reaped (as it_run) */
};

/* Make a fresh empty directory under env->tmp (removed by it_cleanup). */
int it_mkdtemp(const struct it_env *env, const char *tag, char *out, size_t n);

/* Mount source ("s3://bucket[/prefix]") at a fresh mountpoint with
 * `-f --endpoint endpoint --path-style` plus extra (NULL-terminated, may
 * be NULL), and wait (<= 60 s) until it is a FUSE mount.  0 when mounted;
 * -1 when the daemon exited or timed out (m->status, it_mount_log()). */
int it_mount(const struct it_env *env, const char *source, const char *endpoint,
	     const char *const *extra, struct it_mount *m);

/* As it_mount with an explicit mountpoint (must exist) and env_set. */
int it_mount_at(const struct it_env *env, const char *source, const char *endpoint,
		const char *mountpoint, const char *const *extra,
		const char *const *env_set, struct it_mount *m);

/* The daemon's stderr so far (malloc'd, never NULL). */
char *it_mount_log(const struct it_mount *m);

/* Send SIGUSR1 to the (foreground) daemon and copy the stats line it logs
 * ("s3.gets=N ram.hits=N ...") into out.  0, or -1 when none came in 10 s. */
int it_daemon_stats(struct it_mount *m, char *out, size_t outlen);
/* Counter `name` ("ssd.hits") of such a line, -1 if absent. */
long long it_stats_get(const char *stats, const char *name);
/* Both in one: a fresh stats line, one counter of it. */
long long it_daemon_stat(struct it_mount *m, const char *name);
/* Poll counter name (every 100 ms, at most timeout_s) until it reaches at
 * least want; its last value, which the caller checks. */
long long it_daemon_stat_wait(struct it_mount *m, const char *name, long long want,
			      double timeout_s);
/* Wait (<= timeout_s) until the SSD writer has nothing queued and its
 * counters (insertions, dropped, rejected, evictions) have not moved for
 * half a second: what was read has reached the disk or been refused.
 * Asserts when it never settles. */
void it_ssd_settle(struct it_mount *m, double timeout_s);

/* sync, then drop the kernel's page cache, so reads reach the daemon. */
void it_drop_caches(void);

/* `tierfs unmount dir` (fusermount3 -u if that fails), then wait (<= 10 s)
 * for the daemon.  Its exit status (as it_run), -1 when it had to be
 * killed.  The mountpoint directory stays (it_cleanup removes it). */
int it_unmount(struct it_mount *m);

/* it_unmount, then expect: exit status 0, no sanitizer report and no
 * secret key in the daemon's output, and the mount gone. */
void it_unmount_ok(const struct it_env *env, struct it_mount *m);

/* Record a mount made by a detached daemon (non-foreground mode) so
 * it_cleanup() unmounts it. */
void it_track_mountpoint(const char *dir);

/* ---- observations ------------------------------------------------------ */

/* Is path currently a FUSE mountpoint (per /proc/self/mountinfo)? */
bool it_is_fuse_mount(const char *path);

/* Poll until it_is_fuse_mount(path) == want, at most timeout_s. */
bool it_wait_fuse_mount(const char *path, bool want, double timeout_s);

/* A live child of this process (direct, or reparented to us as subreaper)
 * other than `except` whose command line contains `needle`, or 0. */
pid_t it_find_child(const char *needle, pid_t except);

/* waitpid with a bound: exit status (as it_run) or -1 on timeout. */
int it_wait_pid(pid_t pid, double timeout_s);

/* Seconds on CLOCK_MONOTONIC. */
double it_now(void);

/* Whole file into a malloc'd buffer (NUL-terminated; *len without it). */
char *it_read_file(const char *path, size_t *len);

/* Read all of fd from offset off (looping over short reads) into buf, at
 * most len bytes.  Bytes read, or -1 with errno set. */
ssize_t it_pread_full(int fd, void *buf, size_t len, off_t off);

/* Read all of path (one pread loop) and compare it with size bytes of the
 * stream for seed: fails the current test on an error, another size or a
 * wrong byte (naming its offset). */
void it_read_ok(const char *path, uint64_t seed, uint64_t size);

/* A TCP port on 127.0.0.1 that refuses connections (bound, not
 * listening; close *fd_out to release). */
int it_dead_port(int *fd_out);

#endif
