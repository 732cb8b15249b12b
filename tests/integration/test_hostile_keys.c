/* test_hostile_keys.c - object keys that are not plain POSIX names, mounted
 * for real with an SSD cache: what the tree shows for each, byte-exact
 * reads of what it shows, and proof (strace of the daemon) that no file
 * outside the mount, the cache directory and the control socket's
 * directory is ever created, written or removed, and nothing is read
 * outside those and the system's own directories.
 *
 * The expected tree is written out by hand below (docs/reliability.md,
 * "Hostile input", states the rule for each key); tierfs's rules are
 * never reused to compute it.
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

static struct it_env env;
static struct it_bucket bucket;
static char source[128];

#define LONG_KEY_LEN 1024

/* One key and where it must appear (NULL: nowhere; a trailing '/' means
 * "as a directory").  Built at init: some are long. */
struct hk {
	char *key;
	uint64_t size;
	char *path;
	bool optional;             /* the store may refuse it (S3 keys are UTF-8) */
	bool refused;
};

static struct hk keys[32];
static size_t n_keys;

static void hk_add(const char *key, uint64_t size, const char *path)
{
	cr_assert_lt(n_keys, sizeof(keys) / sizeof(keys[0]));
	keys[n_keys].key = strdup(key);
	keys[n_keys].size = size;
	keys[n_keys].path = path ? strdup(path) : NULL;
	n_keys++;
}

static char *run_of(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void keys_build(void)
{
	char long_key[LONG_KEY_LEN + 1], buf[600];
	char *a = run_of('A', 255), *b = run_of('B', 255), *c = run_of('C', 255);
	char *d = run_of('D', LONG_KEY_LEN - 5 - 3 * 256);
	char *e = run_of('E', 256), *f = run_of('F', 255);

	hk_add("ok.txt", 100, "ok.txt");
	hk_add(".", 11, NULL);
	hk_add("..", 12, NULL);
	hk_add("a/../b", 13, NULL);          /* "a" exists, and is empty */
	hk_add("../x", 14, NULL);
	hk_add("dbl/a//b", 15, NULL);        /* dbl/a exists, and is empty */
	hk_add("mark/", 0, "mark/");         /* a directory marker */
	hk_add("tr/file/", 0, "tr/file/");
	hk_add("nl/line1\nline2", 17, "nl/line1\nline2");
	hk_add("nl/\n", 18, "nl/\n");
	hk_add("utf/ok", 26, "utf/ok");
	hk_add("utf/\xff\xfe\x80.bin", 19, "utf/\xff\xfe\x80.bin");
	keys[n_keys - 1].optional = true;
	hk_add("utf/\xc3\x28", 20, "utf/\xc3\x28");
	keys[n_keys - 1].optional = true;
	it_fmt(long_key, sizeof(long_key), "long/%s/%s/%s/%s", a, b, c, d);
	cr_assert_eq(strlen(long_key), LONG_KEY_LEN);
	hk_add(long_key, 21, long_key);      /* 1,024 bytes, components <= 255 */
	it_fmt(buf, sizeof(buf), "n256/%s", e);
	hk_add(buf, 22, NULL);               /* one byte over NAME_MAX */
	it_fmt(buf, sizeof(buf), "n256/%s", f);
	hk_add(buf, 23, buf);
	hk_add("both", 24, NULL);            /* a file and a prefix: the directory wins */
	hk_add("both/inner", 25, "both/inner");
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
}

/* Every path the tree must show: the paths above and their parents. */
static size_t expected_paths(char **out, size_t max)
{
	size_t n = 0;
	const char *dirs[] = { "a/", "dbl/", "dbl/a/", "n256/", "both/", "long/", "nl/", "utf/", "tr/" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		out[n++] = strdup(dirs[i]);
	for (size_t i = 0; i < n_keys; i++) {
		const char *p = keys[i].path;
		if (!p || keys[i].refused)
			continue;
		out[n++] = strdup(p);
		if (strncmp(p, "long/", 5) == 0)  /* its three directories */
			for (const char *s = strchr(p + 5, '/'); s; s = strchr(s + 1, '/'))
				out[n++] = strndup(p, (size_t)(s - p) + 1);
		cr_assert_lt(n, max);
	}
	return n;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static uint64_t seed_of(size_t i)
{
	return 0x40570000u + i;
}

static void hostile_init(void)
{
	IT_ENV_OR_SKIP(&env);
	keys_build();
	cr_assert_eq(it_bucket_create(&env, "hostile", &bucket), 0);
	for (size_t i = 0; i < n_keys; i++) {
		int rc = it_put_gen(&bucket, keys[i].key, seed_of(i), keys[i].size);

		/* radosgw and S3 answer InvalidObjectName to keys that are
		 * not UTF-8: such a key cannot be in the bucket (the listing
		 * fuzz target and the keypath unit tests cover it) */
		if (rc == TFS_E_INVAL && keys[i].optional) {
			keys[i].refused = true;
			cr_log_info("the store refused key %zu (not UTF-8)", i);
			continue;
		}
		cr_assert_eq(rc, 0, "upload of key %zu failed", i);
	}
	it_fmt(source, sizeof(source), "s3://%s", bucket.name);
}

static void hostile_fini(void)
{
	it_cleanup();
	if (bucket.client) {
		it_bucket_remove(&bucket);
	}
	for (size_t i = 0; i < n_keys; i++) {
		free(keys[i].key);
		free(keys[i].path);
	}
	n_keys = 0;
}

TestSuite(hostile, .init = hostile_init, .fini = hostile_fini, .timeout = 300);

/* Walk the tree under mnt/rel ("" or ending in '/'): every name into
 * paths (directories with a trailing '/'); each file's bytes checked. */
static void walk(const char *mnt, const char *rel, char **paths, size_t *n, size_t max)
{
	char dir[PATH_MAX * 2];
	DIR *d;
	struct dirent *de;

	it_fmt(dir, sizeof(dir), "%s/%s", mnt, rel);
	d = opendir(dir);
	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		char relp[PATH_MAX * 2], full[PATH_MAX * 3];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		it_fmt(relp, sizeof(relp), "%s%s", rel, de->d_name);
		it_fmt(full, sizeof(full), "%s/%s", mnt, relp);
		cr_assert_eq(lstat(full, &st), 0, "lstat of a listed name %s: %s", relp,
			     strerror(errno));
		cr_assert_lt(*n, max);
		if (S_ISDIR(st.st_mode)) {
			strcat(relp, "/");
			paths[(*n)++] = strdup(relp);
			walk(mnt, relp, paths, n, max);
			continue;
		}
		cr_assert(S_ISREG(st.st_mode), "%s: neither file nor directory", relp);
		paths[(*n)++] = strdup(relp);
		size_t i;
		for (i = 0; i < n_keys; i++)
			if (keys[i].path && !keys[i].refused && strcmp(keys[i].path, relp) == 0)
				break;
		cr_assert_lt(i, n_keys, "%s is shown but no key should be", relp);
		cr_expect_eq((uint64_t)st.st_size, keys[i].size, "size of %s", relp);
		size_t len = 0;
		char *data = it_read_file(full, &len);
		cr_assert_not_null(data, "read %s: %s", relp, strerror(errno));
		cr_expect_eq(len, keys[i].size, "bytes read from %s", relp);
		cr_expect_eq(it_gen_mismatch(seed_of(i), 0, data, len), -1, "bytes of %s differ", relp);
		free(data);
	}
	closedir(d);
}

/* The tree must be exactly the expected one. */
static void check_tree(const char *mnt)
{
	char *want[64], *got[64];
	size_t nw = expected_paths(want, 64), ng = 0;

	walk(mnt, "", got, &ng, 64);
	qsort(want, nw, sizeof(want[0]), cmp_str);
	qsort(got, ng, sizeof(got[0]), cmp_str);
	for (size_t i = 0; ng != nw && i < ng; i++)
		cr_log_info("shown: %s", got[i]);
	cr_expect_eq(ng, nw, "%zu names shown, %zu expected", ng, nw);
	for (size_t i = 0; i < nw && i < ng; i++)
		cr_expect_str_eq(got[i], want[i], "name %zu", i);
	for (size_t i = 0; i < nw; i++)
		free(want[i]);
	for (size_t i = 0; i < ng; i++)
		free(got[i]);
}

Test(hostile, tree_is_documented_and_bytes_match)
{
	char cache[PATH_MAX];
	struct it_mount m;

	cr_assert_eq(it_mkdtemp(&env, "hk-cache", cache, sizeof(cache)), 0);
	const char *opts[] = { "--cache-dir", cache, "--chunk-size", "64K", NULL };
	cr_assert_eq(it_mount(&env, source, env.endpoint, opts, &m), 0, "mount failed: %s",
		     it_mount_log(&m));
	check_tree(m.dir);
	it_drop_caches();
	check_tree(m.dir);        /* again, from the caches */
	long long unsafe = it_daemon_stat(&m, "fs.unsafe_keys");
	cr_expect_geq(unsafe, 6, "fs.unsafe_keys = %lld: every unsafe key is counted", unsafe);
	/* names no key gives are not there, however asked for */
	const char *absent[] = { "b", "x", "a/b", "dbl/a/b", "dbl/b", "both/both" };
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		char p[PATH_MAX * 2];
		struct stat st;
		it_fmt(p, sizeof(p), "%s/%s", m.dir, absent[i]);
		errno = 0;
		cr_expect(lstat(p, &st) < 0 && errno == ENOENT, "%s: want ENOENT, got %s",
			  absent[i], strerror(errno));
	}
	it_unmount_ok(&env, &m);
}

/* ---- nothing outside the mount and the cache is touched ------------------ */

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* strace's quoted string at *p (after the quote) into out, C escapes
 * undone; *p moves past the closing quote. */
static void unquote(const char **p, char *out, size_t cap)
{
	const char *s = *p;
	size_t n = 0;

	while (*s && *s != '"') {
		char c = *s++;
		if (c == '\\' && *s) {
			char e = *s++;
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'x': {
				unsigned v = 0;
				for (int k = 0; k < 2 && *s; k++, s++)
					v = v * 16 + (unsigned)(*s <= '9' ? *s - '0' : (*s | 32) - 'a' + 10);
				c = (char)v;
				break;
			}
			default:
				if (e >= '0' && e <= '7') {
					unsigned v = (unsigned)(e - '0');
					for (int k = 0; k < 2 && *s >= '0' && *s <= '7'; k++, s++)
						v = v * 8 + (unsigned)(*s - '0');
					c = (char)v;
				} else {
					c = e;
				}
			}
		}
		if (n + 1 < cap)
			out[n++] = c;
	}
	out[n] = '\0';
	*p = *s ? s + 1 : s;
}

static const char *const write_calls[] = {
	"mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat", "chown", "lchown",
	"fchownat", "truncate", "utime", "utimes", "utimensat", "futimesat", "mknod", "mknodat",
	"mount", "umount2", "setxattr", "lsetxattr", "removexattr", "lremovexattr", "creat",
};

struct allowed {
	const char *write[8];      /* what the daemon may change */
	const char *read[16];      /* and may also look at */
	const char *marks[4];      /* names of keys: never in any path */
	const char *mnt;           /* its ancestors may be looked at (mount(8)) */
};

/* Check one strace line; 0 or 1 (a violation, printed). */
static int trace_line(const char *line, const struct allowed *a)
{
	char name[32], path[8192], dirfd_path[4096] = "";
	const char *p = line, *open_paren;
	bool writes = false, first = true, first_arg = true;
	size_t nl;
	int bad = 0;

	while (*p >= '0' && *p <= '9')   /* pid */
		p++;
	while (*p == ' ')
		p++;
	open_paren = strchr(p, '(');
	if (!open_paren || strncmp(p, "+++", 3) == 0 || strncmp(p, "---", 3) == 0 ||
	    strstr(line, "<unfinished ...>") || strstr(p, "resumed>"))
		return 0;
	nl = (size_t)(open_paren - p);
	if (nl >= sizeof(name))
		return 0;
	memcpy(name, p, nl);
	name[nl] = '\0';
	for (size_t i = 0; i < sizeof(write_calls) / sizeof(write_calls[0]); i++)
		if (strcmp(name, write_calls[i]) == 0)
			writes = true;
	if ((strcmp(name, "open") == 0 || strcmp(name, "openat") == 0 ||
	     strcmp(name, "openat2") == 0) &&
	    (strstr(line, "O_WRONLY") || strstr(line, "O_RDWR") || strstr(line, "O_CREAT") ||
	     strstr(line, "O_TRUNC")))
		writes = true;
	p = open_paren + 1;
	/* *at calls: a directory fd first, shown by -y as N</dir> */
	if (*p >= '0' && *p <= '9') {
		const char *lt = strchr(p, '<'), *gt = lt ? strchr(lt, '>') : NULL;
		if (lt && gt && (size_t)(gt - lt) < sizeof(dirfd_path) && lt < strchr(p, ',')) {
			memcpy(dirfd_path, lt + 1, (size_t)(gt - lt - 1));
			dirfd_path[gt - lt - 1] = '\0';
		}
	}
	/* every quoted argument before the result (execve: the program only) */
	const char *end = strstr(p, ") = ");
	while ((p = strchr(p, '"')) && (!end || p < end)) {
		char full[PATH_MAX * 3];
		bool ok = false;

		p++;
		unquote(&p, path, sizeof(path));
		if (!first && strcmp(name, "execve") == 0)
			break;
		first = false;
		if (path[0] == '/' || !dirfd_path[0])
			it_fmt(full, sizeof(full), "%s", path);
		else
			it_fmt(full, sizeof(full), "%s/%s", dirfd_path, path);
		if (strcmp(name, "mount") == 0 && first_arg) {
			first_arg = false;     /* the source: "tierfs:BUCKET", not a path */
			continue;
		}
		for (size_t i = 0; i < 8 && a->write[i]; i++)
			ok = ok || under(full, a->write[i]);
		for (size_t i = 0; !writes && i < 16 && a->read[i]; i++)
			ok = ok || under(full, a->read[i]);
		if (!writes && full[0] == '/' && under(a->mnt, full))
			ok = true;
		if (path[0] == '\0' && strcmp(name, "execve") != 0)
			ok = true;     /* AT_EMPTY_PATH: the fd itself */
		for (size_t i = 0; i < 4 && a->marks[i]; i++)
			if (strstr(full, a->marks[i]))
				ok = false;
		if (!ok) {
			fprintf(stderr, "outside what it may touch (%s): %s\n",
				writes ? "write" : "read", line);
			bad = 1;
		}
		if (strcmp(name, "rename") != 0 && strcmp(name, "renameat") != 0 &&
		    strcmp(name, "renameat2") != 0 && strcmp(name, "link") != 0 &&
		    strcmp(name, "linkat") != 0 && strcmp(name, "symlink") != 0 &&
		    strcmp(name, "symlinkat") != 0)
			break;
		dirfd_path[0] = '\0';  /* the second path of a two-path call */
		const char *lt = strchr(p, '<');
		if (lt && lt < strchr(p, '"') && strchr(lt, '>')) {
			const char *gt = strchr(lt, '>');
			if ((size_t)(gt - lt) < sizeof(dirfd_path)) {
				memcpy(dirfd_path, lt + 1, (size_t)(gt - lt - 1));
				dirfd_path[gt - lt - 1] = '\0';
			}
		}
	}
	return bad;
}

Test(hostile, daemon_touches_nothing_outside_mount_and_cache)
{
	char work[PATH_MAX], cache[PATH_MAX], mnt[PATH_MAX], run[PATH_MAX], wrapper[PATH_MAX];
	char trace[PATH_MAX], rt_env[PATH_MAX + 32], bin[PATH_MAX], home_aws[PATH_MAX];
	struct it_env tenv = env;
	struct it_mount m;
	FILE *f;

	if (access("/usr/bin/strace", X_OK) != 0)
		cr_skip_test("strace is not installed (apt-get install strace): cannot check "
			     "which files the daemon touches");
	cr_assert_eq(it_mkdtemp(&env, "hk-work", work, sizeof(work)), 0);
	cr_assert_eq(it_mkdtemp(&env, "hk-cache", cache, sizeof(cache)), 0);
	cr_assert_eq(it_mkdtemp(&env, "hk-mnt", mnt, sizeof(mnt)), 0);
	cr_assert_eq(it_mkdtemp(&env, "hk-run", run, sizeof(run)), 0);
	cr_assert_not_null(realpath(env.tierfs_bin, bin));
	it_fmt(wrapper, sizeof(wrapper), "%s/tierfs-traced", work);
	it_fmt(trace, sizeof(trace), "%s/trace", work);
	f = fopen(wrapper, "w");
	cr_assert_not_null(f);
	/* exec: the wrapper's pid is strace's, whose trace file this names.
	 * LeakSanitizer cannot run under ptrace: an ASan daemon's leaks are
	 * checked by every other mount test. */
	fprintf(f, "#!/bin/sh\nASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\"\n"
		   "export ASAN_OPTIONS\n"
		   "exec /usr/bin/strace -f -qq -y -s 8192 -e trace=%%file "
		   "-e signal=none -o '%s.'$$ '%s' \"$@\"\n", trace, bin);
	fclose(f);
	cr_assert_eq(chmod(wrapper, 0755), 0);
	tenv.tierfs_bin = wrapper;
	it_fmt(rt_env, sizeof(rt_env), "TIERFS_RUNTIME_DIR=%s", run);
	const char *env_set[] = { rt_env, NULL };
	const char *opts[] = { "--cache-dir", cache, "--chunk-size", "64K", NULL };
	cr_assert_eq(it_mount_at(&tenv, source, env.endpoint, mnt, opts, env_set, &m), 0,
		     "mount under strace failed: %s", it_mount_log(&m));
	pid_t traced = m.pid;
	check_tree(m.dir);
	it_drop_caches();
	check_tree(m.dir);
	it_unmount_ok(&env, &m);

	/* the daemon's trace: every path it named */
	const char *home = getenv("HOME");
	it_fmt(home_aws, sizeof(home_aws), "%s/.aws", home ? home : "/root");
	struct allowed a = {
		/* and the mount's read-ahead (kernel-readahead), and the
		 * table mount(8) keeps when libfuse mounts through it */
		/* (and its threads' names, and /dev/null) */
		.write = { cache, mnt, run, "/dev/fuse", "/sys/class/bdi", "/run/mount",
			   "/proc/self/task", "/dev/null" },
		/* the system's programs, libraries, configuration and
		 * certificates, its own binary, /proc and /sys, and the AWS
		 * configuration */
		.read = { "/etc", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/proc", "/sys",
			  "/dev", "/selinux", bin, home_aws, "/var/lib/sss", "/run/systemd", NULL },
		.mnt = mnt,
		.marks = { "line1", "ok.txt", "inner", "AAAAAAAAAAAAAAAA" },
	};
	char tf[PATH_MAX + 16];
	it_fmt(tf, sizeof(tf), "%s.%d", trace, (int)traced);
	f = fopen(tf, "r");
	cr_assert_not_null(f, "no trace %s", tf);
	char *line = NULL;
	size_t cap = 0, lines = 0, cache_paths = 0;
	int bad = 0;
	while (getline(&line, &cap, f) > 0) {
		lines++;
		bad += trace_line(line, &a);
		if (strstr(line, cache))
			cache_paths++;
	}
	free(line);
	fclose(f);
	cr_log_info("%zu traced calls, %zu in the cache directory", lines, cache_paths);
	cr_expect_gt(lines, 20, "the trace is too short to mean anything");
	cr_expect_gt(cache_paths, 0, "the daemon never used its cache directory");
	cr_expect_eq(bad, 0, "%d calls named a path outside the mount, the cache and the "
		     "system's directories (see stderr)", bad);
}

/* ---- 100,000 keys in one prefix, through radosgw (opt-in) ---------------- */

#define BIG_KEYS 100000u

static long daemon_rss_kib(pid_t pid)
{
	char path[64], *s, *p;
	long kib = -1;

	it_fmt(path, sizeof(path), "/proc/%d/status", (int)pid);
	s = it_read_file(path, NULL);
	if (s && (p = strstr(s, "VmRSS:")))
		kib = strtol(p + 6, NULL, 10);
	free(s);
	return kib;
}

/* Uploading 100,000 objects takes radosgw about five minutes here, so the
 * default run lists them from a generated store instead
 * (test_listing_scale); TIERFS_TEST_BIG_LIST=1 runs this one too. */
Test(hostile, big_prefix_through_radosgw, .timeout = 1800)
{
	struct it_bucket big;
	struct it_obj *objs;
	struct it_mount m;
	char src[128], dir[PATH_MAX * 2];
	size_t n = 0;

	if (!getenv("TIERFS_TEST_BIG_LIST") || strcmp(getenv("TIERFS_TEST_BIG_LIST"), "1") != 0)
		cr_skip_test("TIERFS_TEST_BIG_LIST=1 lists 100,000 keys through radosgw (slow)");
	cr_assert_eq(it_bucket_create(&env, "biglist", &big), 0);
	objs = calloc(BIG_KEYS, sizeof(*objs));
	cr_assert_not_null(objs);
	for (unsigned i = 0; i < BIG_KEYS; i++) {
		char k[32];
		it_fmt(k, sizeof(k), "big/k%06u", i);
		objs[i] = (struct it_obj){ strdup(k), i, i % 7 };
	}
	double t0 = it_now();
	cr_assert_eq(it_put_many(&big, objs, BIG_KEYS, 32), 0);
	cr_log_info("100,000 objects uploaded in %.0f s", it_now() - t0);
	it_fmt(src, sizeof(src), "s3://%s", big.name);
	cr_assert_eq(it_mount(&env, src, env.endpoint, NULL, &m), 0, "%s", it_mount_log(&m));
	long rss0 = daemon_rss_kib(m.pid);
	it_fmt(dir, sizeof(dir), "%s/big", m.dir);
	t0 = it_now();
	DIR *d = opendir(dir);
	struct dirent *de;
	cr_assert_not_null(d, "opendir: %s", strerror(errno));
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	double secs = it_now() - t0;
	long grew = daemon_rss_kib(m.pid) - rss0;
	cr_log_info("listed %zu names in %.1f s, daemon RSS +%ld KiB", n, secs, grew);
	cr_expect_eq(n, BIG_KEYS);
	cr_expect_lt(grew, 256L * 1024, "the daemon grew by %ld KiB", grew);
	cr_expect_lt(secs, 300.0);
	it_unmount_ok(&env, &m);
	it_bucket_remove(&big);
	for (unsigned i = 0; i < BIG_KEYS; i++)
		free((char *)objs[i].key);
	free(objs);
}
