/* harness.c - integration-test helpers (see harness.h).
 *
 * The table `tracked` records every mount, process and directory the
 * helpers created in this (single-threaded) test process, so it_cleanup()
 * can undo them whatever way the test ended.  Test code, not daemon code:
 * the table is the one mutable global, on purpose.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

extern char **environ;

/* ---- tracking ---------------------------------------------------------- */

enum track_kind { TRACK_NONE, TRACK_MOUNT, TRACK_PROC, TRACK_DIR, TRACK_FILE };

struct tracked {
	enum track_kind kind;
	pid_t pid;                 /* TRACK_MOUNT (0 = detached), TRACK_PROC */
	char path[PATH_MAX];       /* mountpoint, directory or file */
};

#define TRACK_MAX 256   /* the kill loop mounts 40+ times in one test */
static struct tracked tracked[TRACK_MAX];
static char tierfs_bin_saved[PATH_MAX];
static unsigned name_counter;

static struct tracked *track_add(enum track_kind kind, pid_t pid, const char *path)
{
	for (size_t i = 0; i < TRACK_MAX; i++) {
		if (tracked[i].kind == TRACK_NONE) {
			tracked[i].kind = kind;
			tracked[i].pid = pid;
			it_fmt(tracked[i].path, sizeof(tracked[i].path), "%s", path ? path : "");
			return &tracked[i];
		}
	}
	fprintf(stderr, "harness: tracking table full\n");
	return NULL;
}

static struct tracked *track_find(enum track_kind kind, pid_t pid, const char *path)
{
	for (size_t i = 0; i < TRACK_MAX; i++) {
		if (tracked[i].kind != kind)
			continue;
		if (path && strcmp(tracked[i].path, path) != 0)
			continue;
		if (!path && tracked[i].pid != pid)
			continue;
		return &tracked[i];
	}
	return NULL;
}

/* ---- small utilities --------------------------------------------------- */

int it_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= n) {
		fprintf(stderr, "harness: formatted text too long for %zu bytes: %.200s\n", n, buf);
		abort();
	}
	return r;
}

double it_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int decode_status(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return -1;
}

int it_wait_pid(pid_t pid, double timeout_s)
{
	double end = it_now() + timeout_s;
	for (;;) {
		int ws;
		pid_t r = waitpid(pid, &ws, WNOHANG);
		if (r == pid)
			return decode_status(ws);
		if (r < 0 && errno != EINTR)
			return -1;
		if (it_now() > end)
			return -1;
		sleep_ms(5);
	}
}

/* SIGTERM, wait up to grace_s, SIGKILL, reap.  Exit status or -1. */
static int kill_and_reap(pid_t pid, double grace_s)
{
	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	int st = it_wait_pid(pid, grace_s);
	if (st >= 0)
		return st;
	kill(pid, SIGKILL);
	it_wait_pid(pid, 5.0);
	return -1;
}

char *it_read_file(const char *path, size_t *len)
{
	if (len)
		*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return strdup("");
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

ssize_t it_pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

void it_read_ok(const char *path, uint64_t seed, uint64_t size)
{
	char *buf = malloc(size + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;
	int64_t bad;

	cr_assert_not_null(buf);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	r = it_pread_full(fd, buf, size + 1, 0);
	cr_assert_eq(r, (ssize_t)size, "read %s: %zd of %llu bytes (%s)", path, r,
		     (unsigned long long)size, r < 0 ? strerror(errno) : "");
	bad = it_gen_mismatch(seed, 0, buf, size);
	cr_assert_eq(bad, -1, "%s: wrong byte at %lld", path, (long long)bad);
	free(buf);
	close(fd);
}

int it_dead_port(int *fd_out)
{
	*fd_out = -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return ntohs(sa.sin_port);
}

/* ---- environment ------------------------------------------------------- */

static bool force_unmount(const char *dir);

/* Remove what test processes that died without cleaning up (crash, timeout
 * kill) left in tmp: entries named "<tag>-<pid>-..." whose pid is gone.
 * A mount still there is unmounted (lazily at worst). */
static void sweep_dead(const char *tmp)
{
	DIR *d = opendir(tmp);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *dash = strchr(de->d_name, '-');
		if (!dash || dash[1] < '1' || dash[1] > '9')
			continue;
		char *end;
		long pid = strtol(dash + 1, &end, 10);
		if (*end != '-' || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", tmp, de->d_name) >= (int)sizeof(path))
			continue;
		if (de->d_type == DT_DIR) {
			force_unmount(path);
			rmdir(path);
		} else {
			unlink(path);
		}
	}
	closedir(d);
}

bool it_env_load(struct it_env *env)
{
	memset(env, 0, sizeof(*env));
	env->endpoint = getenv("S3_ENDPOINT");
	if (!env->endpoint || !*env->endpoint)
		return false;
	env->access_key = getenv("AWS_ACCESS_KEY_ID");
	env->secret_key = getenv("AWS_SECRET_ACCESS_KEY");
	env->region = getenv("AWS_DEFAULT_REGION");
	if (!env->region || !*env->region)
		env->region = "us-east-1";
	env->tierfs_bin = getenv("TIERFS_BIN");
	env->proxy_bin = getenv("TIERFS_PROXY_BIN");
	env->sim_bin = getenv("TIERFS_SIM_BIN");
	/* A mount that finds no credentials would ask the cloud metadata
	 * services (link-local addresses no test may reach): off for every
	 * process the tests start, unless a test points them at its own
	 * server (env_set of that mount). */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("NO_GCE_CHECK", "true", 1);
	unsetenv("GCE_METADATA_HOST");
	unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *tmp = getenv("TIERFS_TEST_TMP");
	if (!tmp || !*tmp)
		tmp = "/tmp/tierfs-it";
	mkdir(tmp, 0755);
	/* Resolve now: mountinfo compares canonical paths, and later we must
	 * never stat a path that may sit on a dead FUSE mount. */
	if (!realpath(tmp, env->tmp))
		it_fmt(env->tmp, sizeof(env->tmp), "%s", tmp);
	if (env->tierfs_bin)
		it_fmt(tierfs_bin_saved, sizeof(tierfs_bin_saved), "%s", env->tierfs_bin);
	sweep_dead(env->tmp);
	return true;
}

/* ---- processes --------------------------------------------------------- */

/* environ with the assignments of env_set applied ("K=" unsets K; of two
 * assignments of one name, the later wins). */
static char **build_envp(const char *const *env_set)
{
	size_t n = 0, m = 0;
	while (environ[n])
		n++;
	if (env_set)
		while (env_set[m])
			m++;
	char **envp = calloc(n + m + 1, sizeof(*envp));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool overridden = false;
		for (size_t j = 0; j < m; j++) {
			const char *eq = strchr(env_set[j], '=');
			size_t kl = eq ? (size_t)(eq - env_set[j]) : strlen(env_set[j]);
			if (strncmp(environ[i], env_set[j], kl) == 0 && environ[i][kl] == '=')
				overridden = true;
		}
		if (!overridden)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++) {
		const char *eq = strchr(env_set[j], '=');
		size_t kl = eq ? (size_t)(eq - env_set[j]) : strlen(env_set[j]);
		bool later = false;     /* a later assignment of the same name wins */
		for (size_t j2 = j + 1; j2 < m; j2++)
			if (strncmp(env_set[j2], env_set[j], kl + 1) == 0)
				later = true;
		if (eq && eq[1] != '\0' && !later)
			envp[k++] = (char *)env_set[j];
	}
	envp[k] = NULL;
	return envp;
}

/* fork/exec argv with stdin from /dev/null and stdout+stderr appended to
 * outpath.  pdeath: SIGTERM the child when this process dies. */
static pid_t spawn(const char *const *argv, const char *const *env_set,
		   const char *outpath, bool pdeath)
{
	char **envp = build_envp(env_set);
	pid_t parent = getpid();
	/* Adopt what our children detach (daemon mode), to read its exit
	 * status.  Set here, in the test's worker process, and never in
	 * Criterion's runner (the PRE_ALL hook runs there): the runner's
	 * waitid(P_ALL) loop spins on a zombie it does not know, which is
	 * what an orphan of a crashed worker would become. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		free(envp);
		return -1;
	}
	if (pid == 0) {
		if (pdeath) {
			prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
			if (getppid() != parent)
				_exit(127);
		}
		int in = open("/dev/null", O_RDONLY);
		int out = open(outpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		/* Criterion's pipes must not outlive the test in a daemon. */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execve(argv[0], (char *const *)argv, envp);
		dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(envp);
	return pid;
}

static void tmp_path(const struct it_env *env, const char *what, const char *ext,
		     char *out, size_t n)
{
	it_fmt(out, n, "%s/%s-%d-%u%s", env->tmp, what, (int)getpid(), name_counter++, ext);
}

/* argv = bin + args (NULL-terminated), in a malloc'd array. */
static const char **make_argv(const char *bin, const char *const *args)
{
	size_t n = 0;
	while (args && args[n])
		n++;
	const char **argv = calloc(n + 2, sizeof(*argv));
	argv[0] = bin;
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	return argv;
}

static int run_cmd(const struct it_env *env, const char *bin, const char *const *args,
		   const char *const *env_set, double timeout_s, struct it_run *r)
{
	memset(r, 0, sizeof(*r));
	char outpath[PATH_MAX];
	tmp_path(env, "run", ".log", outpath, sizeof(outpath));
	unlink(outpath);
	const char **argv = make_argv(bin, args);
	double t0 = it_now();
	pid_t pid = spawn(argv, env_set, outpath, true);
	free(argv);
	if (pid < 0) {
		r->out = strdup("");
		r->status = -1;
		return -1;
	}
	struct tracked *t = track_add(TRACK_PROC, pid, NULL);
	r->status = it_wait_pid(pid, timeout_s);
	r->secs = it_now() - t0;
	if (r->status < 0) {
		r->timed_out = true;
		kill(pid, SIGKILL);
		it_wait_pid(pid, 5.0);
	}
	if (t)
		t->kind = TRACK_NONE;
	r->out = it_read_file(outpath, NULL);
	unlink(outpath);
	return 0;
}

int it_run_tierfs(const struct it_env *env, const char *const *args,
		  const char *const *env_set, double timeout_s, struct it_run *r)
{
	return run_cmd(env, env->tierfs_bin, args, env_set, timeout_s, r);
}

int it_run_sim(const struct it_env *env, const char *const *args, double timeout_s,
	       struct it_run *r)
{
	return run_cmd(env, env->sim_bin, args, NULL, timeout_s, r);
}

void it_run_release(struct it_run *r)
{
	free(r->out);
	r->out = NULL;
}

pid_t it_find_child(const char *needle, pid_t except)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t self = getpid(), found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char path[64];
		it_fmt(path, sizeof(path), "/proc/%s/stat", de->d_name);
		char *stat = it_read_file(path, NULL);
		char *rp = strrchr(stat, ')');
		int ppid = 0;
		char state = 0;
		if (rp)
			sscanf(rp + 1, " %c %d", &state, &ppid);
		free(stat);
		if (ppid != self || state == 'Z' || atoi(de->d_name) == except)
			continue;
		it_fmt(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		size_t len;
		char *cmd = it_read_file(path, &len);
		for (size_t i = 0; i < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		if (strstr(cmd, needle))
			found = (pid_t)atoi(de->d_name);
		free(cmd);
	}
	closedir(d);
	return found;
}

/* ---- mounts ------------------------------------------------------------ */

/* Undo the octal escapes of /proc/self/mountinfo in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;
	for (char *r = s; *r; ) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

bool it_is_fuse_mount(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	while (!found && getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional]* - fstype ... */
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		char *mp = NULL;
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		mp = tok;
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " ", &save);
		char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
		if (!mp || !fstype)
			continue;
		unescape_mountinfo(mp);
		if (strcmp(mp, path) == 0 && strncmp(fstype, "fuse", 4) == 0)
			found = true;
	}
	free(line);
	fclose(f);
	return found;
}

bool it_wait_fuse_mount(const char *path, bool want, double timeout_s)
{
	double end = it_now() + timeout_s;
	for (;;) {
		if (it_is_fuse_mount(path) == want)
			return true;
		if (it_now() > end)
			return false;
		sleep_ms(10);
	}
}

int it_mkdtemp(const struct it_env *env, const char *tag, char *out, size_t n)
{
	it_fmt(out, n, "%s/%s-%d-XXXXXX", env->tmp, tag, (int)getpid());
	if (!mkdtemp(out))
		return -1;
	track_add(TRACK_DIR, 0, out);
	return 0;
}

/* Unmount dir by every means, ending with a lazy unmount; true when it is
 * no longer a FUSE mount. */
static bool force_unmount(const char *dir)
{
	if (!it_is_fuse_mount(dir))
		return true;
	struct it_env env;
	memset(&env, 0, sizeof(env));
	it_fmt(env.tmp, sizeof(env.tmp), "/tmp");
	struct it_run r;
	if (tierfs_bin_saved[0]) {
		const char *args[] = { "unmount", dir, NULL };
		run_cmd(&env, tierfs_bin_saved, args, NULL, 10.0, &r);
		it_run_release(&r);
		if (it_wait_fuse_mount(dir, false, 2.0))
			return true;
	}
	const char *fargs[] = { "-u", dir, NULL };
	run_cmd(&env, "/usr/bin/fusermount3", fargs, NULL, 10.0, &r);
	it_run_release(&r);
	if (it_wait_fuse_mount(dir, false, 2.0))
		return true;
	fprintf(stderr, "harness: lazy unmount of %s\n", dir);
	if (umount2(dir, MNT_DETACH) < 0) {
		const char *zargs[] = { "-uz", dir, NULL };
		run_cmd(&env, "/usr/bin/fusermount3", zargs, NULL, 10.0, &r);
		it_run_release(&r);
	}
	return it_wait_fuse_mount(dir, false, 2.0);
}

void it_track_mountpoint(const char *dir)
{
	if (!track_find(TRACK_MOUNT, 0, dir))
		track_add(TRACK_MOUNT, 0, dir);
}

int it_mount_at(const struct it_env *env, const char *source, const char *endpoint,
		const char *mountpoint, const char *const *extra,
		const char *const *env_set, struct it_mount *m)
{
	memset(m, 0, sizeof(*m));
	m->status = -1;
	it_fmt(m->dir, sizeof(m->dir), "%s", mountpoint);
	tmp_path(env, "mount", ".log", m->errpath, sizeof(m->errpath));
	track_add(TRACK_FILE, 0, m->errpath);

	const char *argv[64];
	size_t n = 0;
	argv[n++] = env->tierfs_bin;
	argv[n++] = "mount";
	argv[n++] = source;
	argv[n++] = m->dir;
	argv[n++] = "-f";
	argv[n++] = "--endpoint";
	argv[n++] = endpoint;
	argv[n++] = "--path-style";
	for (size_t i = 0; extra && extra[i] && n < 63; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	pid_t pid = spawn(argv, env_set, m->errpath, true);
	if (pid < 0)
		return -1;
	m->pid = pid;
	struct tracked *t = track_add(TRACK_MOUNT, pid, m->dir);

	/* a bound on a hang: an ASan daemon under strace on two busy cores
	 * takes seconds to mount */
	double end = it_now() + 60.0;
	while (it_now() < end) {
		if (it_is_fuse_mount(m->dir))
			return 0;
		int ws;
		if (waitpid(pid, &ws, WNOHANG) == pid) {
			m->status = decode_status(ws);
			m->pid = 0;
			if (t)
				t->pid = 0;
			return -1;
		}
		sleep_ms(10);
	}
	fprintf(stderr, "harness: %s not mounted after 60 s\n", m->dir);
	m->status = kill_and_reap(pid, 5.0);
	m->pid = 0;
	if (t)
		t->pid = 0;
	force_unmount(m->dir);
	return -1;
}

int it_mount(const struct it_env *env, const char *source, const char *endpoint,
	     const char *const *extra, struct it_mount *m)
{
	char dir[PATH_MAX];
	if (it_mkdtemp(env, "mnt", dir, sizeof(dir)) < 0) {
		memset(m, 0, sizeof(*m));
		m->status = -1;
		return -1;
	}
	return it_mount_at(env, source, endpoint, dir, extra, NULL, m);
}

char *it_mount_log(const struct it_mount *m)
{
	return it_read_file(m->errpath, NULL);
}

static size_t count_occurrences(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

int it_daemon_stats(struct it_mount *m, char *out, size_t outlen)
{
	static const char mark[] = "stats (SIGUSR1): ";
	char *log = it_mount_log(m);
	size_t before = count_occurrences(log, mark);
	double deadline = it_now() + 10.0;

	free(log);
	if (m->pid <= 0 || kill(m->pid, SIGUSR1) != 0)
		return -1;
	while (it_now() < deadline) {
		log = it_mount_log(m);
		if (count_occurrences(log, mark) > before) {
			const char *last = log, *p, *eol;
			while ((p = strstr(last + 1, mark)))
				last = p;
			last = strstr(last, mark) + strlen(mark);
			eol = strchr(last, '\n');
			if (eol) {
				size_t len = (size_t)(eol - last);
				if (len >= outlen)
					len = outlen - 1;
				memcpy(out, last, len);
				out[len] = '\0';
				free(log);
				return 0;
			}
		}
		free(log);
		usleep(20000);
	}
	return -1;
}

long long it_stats_get(const char *stats, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = stats; (p = strstr(p, name)); p += nl) {
		if ((p == stats || p[-1] == ' ') && p[nl] == '=')
			return strtoll(p + nl + 1, NULL, 10);
	}
	return -1;
}

long long it_daemon_stat(struct it_mount *m, const char *name)
{
	char buf[4096];

	if (it_daemon_stats(m, buf, sizeof(buf)) != 0)
		return -1;
	return it_stats_get(buf, name);
}

long long it_daemon_stat_wait(struct it_mount *m, const char *name, long long want,
			      double timeout_s)
{
	double deadline = it_now() + timeout_s;
	long long v;

	while ((v = it_daemon_stat(m, name)) < want && it_now() < deadline)
		sleep_ms(100);
	return v;
}

void it_ssd_settle(struct it_mount *m, double timeout_s)
{
	long long last = -1;
	double deadline = it_now() + timeout_s, stable = 0;

	while (it_now() < deadline) {
		char s[8192];
		long long v;

		cr_assert_eq(it_daemon_stats(m, s, sizeof(s)), 0, "no stats from the daemon");
		v = it_stats_get(s, "ssd.insertions") + it_stats_get(s, "ssd.dropped") +
		    it_stats_get(s, "ssd.rejected") + it_stats_get(s, "ssd.evictions");
		if (it_stats_get(s, "ssd.queued") != 0) {
			last = -1;   /* the writer has work: not settled, however long */
		} else if (v == last) {
			if (it_now() - stable >= 0.5)
				return;
		} else {
			last = v;
			stable = it_now();
		}
		usleep(100000);
	}
	cr_assert_fail("the SSD writer never settled in %.0f s", timeout_s);
}

void it_drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	sync();
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			fprintf(stderr, "harness: drop_caches: %s\n", strerror(errno));
		close(fd);
	}
}

int it_unmount(struct it_mount *m)
{
	struct tracked *t = track_find(TRACK_MOUNT, 0, m->dir);
	if (it_is_fuse_mount(m->dir) && tierfs_bin_saved[0]) {
		struct it_env env;
		memset(&env, 0, sizeof(env));
		it_fmt(env.tmp, sizeof(env.tmp), "/tmp");
		const char *args[] = { "unmount", m->dir, NULL };
		struct it_run r;
		run_cmd(&env, tierfs_bin_saved, args, NULL, 10.0, &r);
		if (r.status != 0)
			fprintf(stderr, "harness: tierfs unmount %s: status %d: %s\n",
				m->dir, r.status, r.out);
		it_run_release(&r);
	}
	if (!it_wait_fuse_mount(m->dir, false, 5.0)) {
		struct it_env env;
		memset(&env, 0, sizeof(env));
		it_fmt(env.tmp, sizeof(env.tmp), "/tmp");
		const char *fargs[] = { "-u", m->dir, NULL };
		struct it_run r;
		run_cmd(&env, "/usr/bin/fusermount3", fargs, NULL, 10.0, &r);
		it_run_release(&r);
	}
	if (m->pid > 0) {
		/* a bound on a hang, not a speed: a sanitizer build's exit (the
		 * leak check walks the heap) on two busy cores has taken more
		 * than 10 s; a daemon that exits sooner is not waited for */
		m->status = it_wait_pid(m->pid, 60.0);
		if (m->status < 0) {
			fprintf(stderr, "harness: daemon %d did not exit after unmount\n", (int)m->pid);
			kill_and_reap(m->pid, 3.0);
			m->status = -1;
		}
		m->pid = 0;
	}
	force_unmount(m->dir);
	if (t)
		t->kind = TRACK_NONE;
	return m->status;
}

/* A daemon log that shows a crash or a sanitizer report is copied into
 * the test's own output before it is deleted, so the failure is seen
 * (scripts/test.sh fails any binary whose output carries such a report). */
static void report_daemon_log(const char *path)
{
	static const char *const marks[] = { "Sanitizer", "runtime error:", "Segmentation",
					     "Aborted", "assertion" };
	char *text;

	if (!strstr(path, "mount"))
		return;
	text = it_read_file(path, NULL);
	if (!text)
		return;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		if (strstr(text, marks[i])) {
			fprintf(stderr, "harness: daemon log %s:\n%s\n", path, text);
			break;
		}
	}
	free(text);
}

void it_cleanup(void)
{
	for (size_t i = 0; i < TRACK_MAX; i++) {
		struct tracked *t = &tracked[i];
		if (t->kind != TRACK_MOUNT)
			continue;
		force_unmount(t->path);
		if (t->pid > 0)
			kill_and_reap(t->pid, 5.0);
		t->kind = TRACK_NONE;
	}
	for (size_t i = 0; i < TRACK_MAX; i++) {
		struct tracked *t = &tracked[i];
		if (t->kind == TRACK_PROC) {
			kill_and_reap(t->pid, 3.0);
			t->kind = TRACK_NONE;
		}
	}
	/* Detached daemons reparented to us (we are a subreaper). */
	pid_t pid;
	for (int guard = 0; guard < 16 && (pid = it_find_child("", 0)) > 0; guard++)
		kill_and_reap(pid, 5.0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	for (size_t i = 0; i < TRACK_MAX; i++) {
		struct tracked *t = &tracked[i];
		if (t->kind == TRACK_DIR) {
			if (!it_is_fuse_mount(t->path))
				rmdir(t->path);
			t->kind = TRACK_NONE;
		} else if (t->kind == TRACK_FILE) {
			report_daemon_log(t->path);
			unlink(t->path);
			t->kind = TRACK_NONE;
		}
	}
}

/* ---- data generator ---------------------------------------------------- */

/* splitmix64's finalizer: a bijective 64-bit mix.  Word i of the stream
 * for seed is mix(i ^ mix(seed)); byte p is byte p%8 (little-endian) of
 * word p/8, so any window is computed without the bytes before it. */
static inline uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void word_bytes(uint64_t w, unsigned char out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (unsigned char)(w >> (8 * i));
}

void it_gen(uint64_t seed, uint64_t off, void *buf, size_t len)
{
	unsigned char *p = buf;
	uint64_t ks = mix64(seed);
	unsigned char wb[8];
	while (len > 0 && (off & 7)) {
		word_bytes(mix64((off >> 3) ^ ks), wb);
		*p++ = wb[off & 7];
		off++;
		len--;
	}
	while (len >= 8) {
		word_bytes(mix64((off >> 3) ^ ks), p);
		p += 8;
		off += 8;
		len -= 8;
	}
	if (len > 0) {
		word_bytes(mix64((off >> 3) ^ ks), wb);
		memcpy(p, wb, len);
	}
}

int64_t it_gen_mismatch(uint64_t seed, uint64_t off, const void *buf, size_t len)
{
	unsigned char tmp[65536];
	const unsigned char *b = buf;
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);
		it_gen(seed, off + done, tmp, n);
		if (memcmp(tmp, b + done, n) != 0) {
			for (size_t i = 0; i < n; i++)
				if (tmp[i] != b[done + i])
					return (int64_t)(done + i);
		}
		done += n;
	}
	return -1;
}

/* ---- buckets ----------------------------------------------------------- */

void it_unique_bucket_name(const char *tag, char *out, size_t n)
{
	it_fmt(out, n, "tfs-it-%.12s-%d-%u-%lx", tag, (int)getpid(), name_counter++,
		 (unsigned long)time(NULL));
	for (char *c = out; *c; c++) {
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
		else if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
			*c = '-';
	}
	if (strlen(out) > 63)
		out[63] = '\0';
}

static void report(const char *what, const char *key, int rc, const struct tfs_errinfo *ei)
{
	fprintf(stderr, "harness: %s %s: %s (http %d %s %s)\n", what, key ? key : "",
		tfs_strerror(rc), ei->http_status, ei->code, ei->message);
}

int it_bucket_open(const struct it_env *env, const char *name, struct it_bucket *b)
{
	memset(b, 0, sizeof(*b));
	it_fmt(b->name, sizeof(b->name), "%s", name);
	struct s3_config cfg = {
		.endpoint = env->endpoint,
		.region = env->region,
		.bucket = b->name,
		.path_style = true,
		.access_key = env->access_key,
		.secret_key = env->secret_key,
		.max_connections = 16,
		.max_retries = 3,
	};
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	b->client = s3_client_new(&cfg, &ei);
	if (!b->client) {
		report("s3_client_new", name, TFS_E_INVAL, &ei);
		return TFS_E_INVAL;
	}
	return 0;
}

int it_bucket_create(const struct it_env *env, const char *tag, struct it_bucket *b)
{
	char name[64];
	it_unique_bucket_name(tag, name, sizeof(name));
	int rc = it_bucket_open(env, name, b);
	if (rc)
		return rc;
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	rc = s3_client_create_bucket(b->client, &ei);
	if (rc)
		report("create bucket", name, rc, &ei);
	return rc;
}

void it_bucket_remove(struct it_bucket *b)
{
	struct tfs_errinfo ei;
	int rc;

	if (!b->client)
		return;
	/* best effort: what cannot be deleted is left for the throwaway
	 * server's end, as before */
	if (it_bucket_empty(b) == 0) {
		rc = s3_client_delete_bucket(b->client, &ei);
		if (rc != TFS_OK)
			report("delete bucket", b->name, rc, &ei);
	}
	it_bucket_close(b);
}

void it_bucket_close(struct it_bucket *b)
{
	if (b->client)
		s3_client_free(b->client);
	b->client = NULL;
}

int it_put(struct it_bucket *b, const char *key, const void *data, size_t len)
{
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	int rc = s3_client_put(b->client, key, data, len, NULL, &ei);
	if (rc)
		report("put", key, rc, &ei);
	return rc;
}

int it_put_gen(struct it_bucket *b, const char *key, uint64_t seed, uint64_t size)
{
	void *buf = NULL;
	if (size) {
		buf = malloc(size);
		if (!buf)
			return TFS_E_NOMEM;
		it_gen(seed, 0, buf, size);
	}
	int rc = it_put(b, key, buf, size);
	free(buf);
	return rc;
}

/* A bounded pool of threads running job(i) for i in [0, n). */
struct par {
	size_t n;
	atomic_size_t next;
	atomic_int rc;
	int (*job)(void *arg, size_t i);
	void *arg;
};

static void *par_worker(void *p_)
{
	struct par *p = p_;
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n)
			break;
		int rc = p->job(p->arg, i);
		if (rc) {
			int zero = 0;
			atomic_compare_exchange_strong(&p->rc, &zero, rc);
		}
	}
	return NULL;
}

static int par_run(size_t n, unsigned threads, int (*job)(void *, size_t), void *arg)
{
	struct par p = { .n = n, .job = job, .arg = arg };
	atomic_init(&p.next, 0);
	atomic_init(&p.rc, 0);
	if (threads < 1)
		threads = 1;
	if (threads > 32)
		threads = 32;
	pthread_t tid[32];
	unsigned started = 0;
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, par_worker, &p) == 0)
			started++;
		else
			break;
	if (started == 0)
		par_worker(&p);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	return atomic_load(&p.rc);
}

struct put_many_arg {
	struct it_bucket *b;
	const struct it_obj *objs;
};

static int put_many_job(void *a_, size_t i)
{
	struct put_many_arg *a = a_;
	return it_put_gen(a->b, a->objs[i].key, a->objs[i].seed, a->objs[i].size);
}

int it_put_many(struct it_bucket *b, const struct it_obj *objs, size_t n, unsigned threads)
{
	struct put_many_arg a = { b, objs };
	return par_run(n, threads, put_many_job, &a);
}

struct del_arg {
	struct it_bucket *b;
	struct obj_list_page *page;
};

static int del_job(void *a_, size_t i)
{
	struct del_arg *a = a_;
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	int rc = s3_client_delete(a->b->client, a->page->entries[i].key, &ei);
	if (rc && rc != TFS_E_NOENT) {
		report("delete", a->page->entries[i].key, rc, &ei);
		return rc;
	}
	return 0;
}

int it_bucket_empty(struct it_bucket *b)
{
	struct objstore *os = s3_client_objstore(b->client);
	/* Each round lists the first page and deletes it, so no continuation
	 * token is needed; bounded by the number of rounds. */
	for (int round = 0; round < 1000; round++) {
		struct obj_list_page *page = NULL;
		struct tfs_errinfo ei;
		tfs_errinfo_clear(&ei);
		int rc = objstore_list(os, "", NULL, NULL, 1000, &page, &ei);
		if (rc) {
			report("list", b->name, rc, &ei);
			return rc;
		}
		if (page->n_entries == 0) {
			obj_list_page_free(page);
			return 0;
		}
		struct del_arg a = { b, page };
		rc = par_run(page->n_entries, 8, del_job, &a);
		obj_list_page_free(page);
		if (rc)
			return rc;
	}
	return TFS_E_IO;
}

/* ---- fault proxy ------------------------------------------------------- */

struct membuf {
	char *p;
	size_t len, cap;
};

static size_t membuf_write(char *data, size_t sz, size_t nm, void *ud)
{
	struct membuf *m = ud;
	size_t n = sz * nm;
	if (m->p && m->len + 1 < m->cap) {
		size_t k = n < m->cap - m->len - 1 ? n : m->cap - m->len - 1;
		memcpy(m->p + m->len, data, k);
		m->len += k;
		m->p[m->len] = '\0';
	}
	return n;
}

int it_proxy_ctl(struct it_proxy *p, const char *what, char *out, size_t outlen)
{
	char url[512];
	it_fmt(url, sizeof(url), "http://127.0.0.1:%d/__proxy/%s", p->port, what);
	CURL *h = curl_easy_init();
	if (!h)
		return -1;
	struct membuf mb = { out, 0, outlen };
	if (out && outlen)
		out[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, membuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &mb);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	long code = -1;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return (int)code;
}

int it_proxy_fault(struct it_proxy *p, const char *fmt, ...)
{
	char q[512];
	int n = it_fmt(q, sizeof(q), "fault?");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q + n, sizeof(q) - (size_t)n, fmt, ap);
	va_end(ap);
	char body[256];
	int code = it_proxy_ctl(p, q, body, sizeof(body));
	if (code != 200) {
		fprintf(stderr, "harness: proxy %s -> %d %s\n", q, code, body);
		return -1;
	}
	return 0;
}

int it_proxy_clear(struct it_proxy *p)
{
	return it_proxy_ctl(p, "clear", NULL, 0) == 200 ? 0 : -1;
}

int it_proxy_reset_stats(struct it_proxy *p)
{
	return it_proxy_ctl(p, "reset_stats", NULL, 0) == 200 ? 0 : -1;
}

long long it_proxy_stat(struct it_proxy *p, const char *name)
{
	char body[4096];
	if (it_proxy_ctl(p, "stats", body, sizeof(body)) != 200)
		return -1;
	size_t nl = strlen(name);
	for (char *line = body; line && *line; ) {
		if (strncmp(line, name, nl) == 0 && line[nl] == ' ')
			return strtoll(line + nl + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

static int proxy_spawn(const struct it_env *env, const char *upstream, int port,
		       struct it_proxy *p);

int it_proxy_start(const struct it_env *env, const char *upstream, struct it_proxy *p)
{
	return proxy_spawn(env, upstream, 0, p);
}

int it_proxy_restart(const struct it_env *env, const char *upstream, struct it_proxy *p)
{
	int port = p->port;

	it_proxy_stop(p);
	return port > 0 ? proxy_spawn(env, upstream, port, p) : -1;
}

static int proxy_spawn(const struct it_env *env, const char *upstream, int port,
		       struct it_proxy *p)
{
	char listen[32];

	memset(p, 0, sizeof(*p));
	it_fmt(listen, sizeof(listen), "127.0.0.1:%d", port);
	if (!env->proxy_bin) {
		fprintf(stderr, "harness: TIERFS_PROXY_BIN not set\n");
		return -1;
	}
	char up[256];
	const char *u = upstream;
	if (strncmp(u, "http://", 7) == 0)
		u += 7;
	it_fmt(up, sizeof(up), "%s", u);
	size_t ul = strlen(up);
	while (ul && up[ul - 1] == '/')
		up[--ul] = '\0';

	tmp_path(env, "proxy", ".port", p->portfile, sizeof(p->portfile));
	unlink(p->portfile);
	char logpath[PATH_MAX];
	tmp_path(env, "proxy", ".log", logpath, sizeof(logpath));
	track_add(TRACK_FILE, 0, p->portfile);
	track_add(TRACK_FILE, 0, logpath);
	const char *argv[] = { env->proxy_bin, "--listen", listen, "--upstream", up,
			       "--port-file", p->portfile, NULL };
	p->pid = spawn(argv, NULL, logpath, true);
	if (p->pid < 0)
		return -1;
	track_add(TRACK_PROC, p->pid, NULL);

	double end = it_now() + 10.0;
	while (it_now() < end) {
		int ws;
		if (waitpid(p->pid, &ws, WNOHANG) == p->pid) {
			char *log = it_read_file(logpath, NULL);
			fprintf(stderr, "harness: proxy exited (%d): %s\n", decode_status(ws), log);
			free(log);
			p->pid = 0;
			return -1;
		}
		if (p->port == 0) {
			char *s = it_read_file(p->portfile, NULL);
			int port = atoi(s);
			free(s);
			if (port > 0) {
				p->port = port;
				it_fmt(p->url, sizeof(p->url), "http://127.0.0.1:%d", port);
			}
		}
		if (p->port > 0 && it_proxy_ctl(p, "stats", NULL, 0) == 200)
			return 0;
		sleep_ms(10);
	}
	fprintf(stderr, "harness: proxy did not answer within 10 s\n");
	it_proxy_stop(p);
	return -1;
}

void it_proxy_stop(struct it_proxy *p)
{
	if (p->pid > 0) {
		kill_and_reap(p->pid, 3.0);
		struct tracked *t = track_find(TRACK_PROC, p->pid, NULL);
		if (t)
			t->kind = TRACK_NONE;
	}
	p->pid = 0;
}

void it_unmount_ok(const struct it_env *env, struct it_mount *m)
{
	int st = it_unmount(m);
	char *log = it_mount_log(m);

	cr_expect_eq(st, 0, "daemon exit status after unmount: %d; log: %s", st, log);
	cr_expect_null(strstr(log, "ERROR: AddressSanitizer"), "sanitizer report: %s", log);
	if (env->secret_key && env->secret_key[0])
		cr_expect_null(strstr(log, env->secret_key), "secret in the daemon's output");
	free(log);
	cr_expect_not(it_is_fuse_mount(m->dir), "still mounted after unmount");
}

/* ---- credential endpoints ---------------------------------------------- */

#ifndef TIERFS_CREDSERVER
#define TIERFS_CREDSERVER "tests/tools/credserver.py"
#endif

static int credserver_get(struct it_credserver *cs, const char *what, char *out, size_t outlen)
{
	char url[512];
	it_fmt(url, sizeof(url), "%s/__cred/%s", cs->url, what);
	CURL *h = curl_easy_init();
	if (!h)
		return -1;
	struct membuf mb = { out, 0, outlen };
	if (out && outlen)
		out[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, membuf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &mb);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	long code = -1;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return (int)code;
}

int it_credserver_start(const struct it_env *env, unsigned ttl_s, struct it_credserver *cs)
{
	char ttl[16], logpath[PATH_MAX];

	memset(cs, 0, sizeof(*cs));
	if (it_mkdtemp(env, "creds", cs->dir, sizeof(cs->dir)) != 0)
		return -1;
	tmp_path(env, "credserver", ".port", cs->portfile, sizeof(cs->portfile));
	tmp_path(env, "credserver", ".log", logpath, sizeof(logpath));
	track_add(TRACK_FILE, 0, cs->portfile);
	track_add(TRACK_FILE, 0, logpath);
	it_fmt(ttl, sizeof(ttl), "%u", ttl_s);
	const char *argv[] = { "/usr/bin/python3", TIERFS_CREDSERVER, "--port-file", cs->portfile,
			       "--dir", cs->dir, "--ttl", ttl, "--upstream", env->endpoint,
			       "--upstream-key", env->access_key ? env->access_key : "",
			       "--upstream-secret", env->secret_key ? env->secret_key : "",
			       "--region", env->region, NULL };
	/* what it writes, then the directory again: cleanup goes in order */
	static const char *const files[] = { "sa.json", "user.json", "web-token",
					     "container-token" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char f[PATH_MAX];
		it_credserver_file(cs, files[i], f, sizeof(f));
		track_add(TRACK_FILE, 0, f);
	}
	track_add(TRACK_DIR, 0, cs->dir);
	cs->pid = spawn(argv, NULL, logpath, true);
	if (cs->pid < 0)
		return -1;
	track_add(TRACK_PROC, cs->pid, NULL);
	double end = it_now() + 15.0;
	while (it_now() < end) {
		int ws;
		if (waitpid(cs->pid, &ws, WNOHANG) == cs->pid) {
			char *log = it_read_file(logpath, NULL);
			fprintf(stderr, "harness: credserver exited (%d): %s\n", decode_status(ws), log);
			free(log);
			cs->pid = 0;
			return -1;
		}
		if (cs->port == 0) {
			char *s = it_read_file(cs->portfile, NULL);
			int port = s ? atoi(s) : 0;
			free(s);
			if (port > 0) {
				cs->port = port;
				it_fmt(cs->url, sizeof(cs->url), "http://127.0.0.1:%d", port);
			}
		}
		if (cs->port > 0 && credserver_get(cs, "stats", NULL, 0) == 200)
			return 0;
		sleep_ms(20);
	}
	fprintf(stderr, "harness: credserver did not answer in 15 s\n");
	return -1;
}

long long it_credserver_stat(struct it_credserver *cs, const char *name)
{
	char body[4096];
	size_t nl = strlen(name);

	if (credserver_get(cs, "stats", body, sizeof(body)) != 200)
		return -1;
	for (char *line = body; line && *line; ) {
		if (strncmp(line, name, nl) == 0 && line[nl] == ' ')
			return strtoll(line + nl + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

int it_credserver_fail(struct it_credserver *cs, int n)
{
	char q[64];
	it_fmt(q, sizeof(q), "fail?n=%d", n);
	return credserver_get(cs, q, NULL, 0) == 200 ? 0 : -1;
}

int it_credserver_session_ttl(struct it_credserver *cs, unsigned s)
{
	char q[64];
	it_fmt(q, sizeof(q), "session_ttl?s=%u", s);
	return credserver_get(cs, q, NULL, 0) == 200 ? 0 : -1;
}

int it_credserver_revoke_sessions(struct it_credserver *cs)
{
	return credserver_get(cs, "revoke_sessions", NULL, 0) == 200 ? 0 : -1;
}

void it_credserver_file(const struct it_credserver *cs, const char *name, char *out, size_t n)
{
	it_fmt(out, n, "%s/%s", cs->dir, name);
}

void it_credserver_stop(struct it_credserver *cs)
{
	if (cs->pid > 0) {
		kill_and_reap(cs->pid, 3.0);
		struct tracked *t = track_find(TRACK_PROC, cs->pid, NULL);
		if (t)
			t->kind = TRACK_NONE;
	}
	cs->pid = 0;
}
