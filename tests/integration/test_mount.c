/* test_mount.c - mount a real bucket and compare every byte, name, type and
 * attribute with what was uploaded.
 *
 * One fixture bucket (nested dirs, empty and 1-byte objects, chunk-size
 * boundaries, hostile keys, a 3,000-key directory, file/dir conflicts,
 * directory markers) is uploaded once per run by a PRE_ALL hook in the
 * runner process; its name reaches the test processes through the
 * environment (IT_MOUNT_BUCKET, or IT_MOUNT_FIXTURE_ERR on failure).  Tests
 * that modify objects or need big ones make their own bucket.
 *
 * The expected tree is derived from the fixture table below, where each key
 * says by hand what path (if any) it must appear at; tierfs's own rules
 * are never reused to compute it.
 */
#include "harness.h"

#include <criterion/hooks.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK IT_MIB                   /* --chunk-size 1M */
#define N_MANY 3000
#define FILE_MODE 0640
#define DIR_MODE 0750
#define UID 1234
#define GID 5678

/* One uploaded object.  path: where it must appear, relative to the mount
 * root; a trailing "/" means "as a directory" (markers); NULL = nowhere. */
struct fx {
	char *key;
	uint64_t seed;
	uint64_t size;
	char *path;
};

struct fixture {
	struct fx *v;
	size_t n;
};

static void fx_add(struct fixture *f, const char *key, uint64_t size, const char *path)
{
	f->v = realloc(f->v, (f->n + 1) * sizeof(*f->v));
	struct fx *x = &f->v[f->n];
	x->key = strdup(key);
	x->seed = 0x5eed0000u + f->n;
	x->size = size;
	x->path = path ? strdup(path) : NULL;
	f->n++;
}

/* Same key and visible path. */
static void fx_safe(struct fixture *f, const char *key, uint64_t size)
{
	fx_add(f, key, size, key);
}

static char *repeat(char c, size_t n, const char *pre, const char *post)
{
	size_t pl = strlen(pre), ql = strlen(post);
	char *s = malloc(pl + n + ql + 1);
	memcpy(s, pre, pl);
	memset(s + pl, c, n);
	memcpy(s + pl + n, post, ql + 1);
	return s;
}

static void fixture_build(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	/* plain files and nesting */
	fx_safe(f, "top.txt", 321);
	fx_safe(f, "empty", 0);
	fx_safe(f, "one", 1);
	fx_safe(f, "dir1/a.txt", 1000);
	fx_safe(f, "dir1/dir2/b.txt", 2000);
	fx_safe(f, "dir1/dir2/dir3/deep.bin", 5000);
	fx_safe(f, "dir1/dir2/dir3/dir4/deeper.txt", 77);
	/* chunk boundaries (--chunk-size 1M) */
	fx_safe(f, "chunk/minus1", CHUNK - 1);
	fx_safe(f, "chunk/exact", CHUNK);
	fx_safe(f, "chunk/plus1", CHUNK + 1);
	fx_safe(f, "chunk/multi", 3 * CHUNK + 12345);
	/* hostile keys: each directory they touch also has a safe key, so
	 * whether the directory exists never depends on the unsafe one */
	fx_safe(f, "a/ok", 11);
	fx_add(f, "a/../b", 12, NULL);
	fx_add(f, "./c", 13, NULL);
	fx_add(f, "../up", 14, NULL);
	fx_add(f, "/lead", 15, NULL);
	fx_safe(f, "d/ok", 16);
	fx_add(f, "d//e", 17, NULL);
	fx_safe(f, "f/ok", 18);
	fx_add(f, "f/./g", 19, NULL);
	fx_safe(f, "i/ok", 20);
	fx_add(f, "i/.", 21, NULL);
	fx_safe(f, "j/ok", 22);
	fx_add(f, "j/..", 23, NULL);
	fx_safe(f, "h/ok", 24);
	char *s;
	s = repeat('L', 300, "h/", "");
	fx_add(f, s, 25, NULL);                 /* 300-byte file name */
	free(s);
	s = repeat('O', 256, "h/", "");
	fx_add(f, s, 26, NULL);                 /* one byte over NAME_MAX */
	free(s);
	s = repeat('N', 300, "h/", "/inner");
	fx_add(f, s, 27, NULL);                 /* 300-byte directory name */
	free(s);
	s = repeat('M', 255, "h/", "");
	fx_safe(f, s, 28);                      /* exactly NAME_MAX: visible */
	free(s);
	/* names that need encoding on the wire */
	fx_safe(f, "sp/hello world.txt", 30);
	fx_safe(f, "sp/\xc3\xbcn\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9 \xe6\x96\x87\xe4\xbb\xb6.txt", 31);
	fx_safe(f, "sp/a+b=c.txt", 32);
	fx_safe(f, "sp/100%.txt", 33);
	fx_safe(f, "sp/%41%2F.txt", 34);
	fx_safe(f, "sp/semi;colon,comma&amp'quote(paren).txt", 35);
	fx_safe(f, "sp/tilde~star*.txt", 36);
	fx_safe(f, "sp/q?mark#hash.txt", 37);
	fx_safe(f, "sp/back\\slash.txt", 38);
	fx_safe(f, "sp/dir with space/inner file", 39);
	/* a file and a directory of the same name: the directory wins */
	fx_add(f, "x", 10, NULL);
	fx_safe(f, "x/y", 41);
	fx_add(f, "mk", 42, NULL);
	fx_add(f, "mk/", 0, "mk/");
	/* directory markers */
	fx_add(f, "m/", 0, "m/");
	fx_add(f, "n/", 0, "n/");
	fx_safe(f, "n/inner.txt", 43);
	fx_add(f, "dir1/", 0, "dir1/");
	fx_add(f, "dir1/emptysub/", 0, "dir1/emptysub/");
	/* for the prefix mount */
	fx_safe(f, "p/q/r.txt", 44);
	fx_safe(f, "p/q/s/t.txt", 45);
	fx_safe(f, "p/qq.txt", 46);
	fx_safe(f, "p/other.txt", 47);
	/* 3,000 keys in one directory: LIST pages (1,000 per page) */
	for (unsigned i = 0; i < N_MANY; i++) {
		char k[32];
		it_fmt(k, sizeof(k), "many/k%05u", i);
		fx_safe(f, k, (i * 7) % 200);
	}
}

static void fixture_free(struct fixture *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].key);
		free(f->v[i].path);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

static const struct fx *fixture_find_path(const struct fixture *f, const char *path)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].path && strcmp(f->v[i].path, path) == 0)
			return &f->v[i];
	return NULL;
}

/* ---- upload hook (runner process) -------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The bucket must hold exactly the fixture keys, byte for byte. */
static int fixture_verify_keys(struct it_bucket *b, const struct fixture *f, char *err, size_t errlen)
{
	struct objstore *os = s3_client_objstore(b->client);
	char **got = NULL;
	size_t n_got = 0;
	char *token = NULL;
	int rc = 0;
	for (int page_no = 0; page_no < 100; page_no++) {
		struct obj_list_page *page = NULL;
		struct tfs_errinfo ei;
		tfs_errinfo_clear(&ei);
		rc = objstore_list(os, "", NULL, token, 1000, &page, &ei);
		free(token);
		token = NULL;
		if (rc) {
			it_fmt(err, errlen, "list: %s", tfs_strerror(rc));
			goto out;
		}
		got = realloc(got, (n_got + page->n_entries + 1) * sizeof(*got));
		for (size_t i = 0; i < page->n_entries; i++)
			got[n_got++] = strdup(page->entries[i].key);
		if (page->truncated && page->next_token)
			token = strdup(page->next_token);
		obj_list_page_free(page);
		if (!token)
			break;
	}
	char **want = malloc(f->n * sizeof(*want));
	for (size_t i = 0; i < f->n; i++)
		want[i] = f->v[i].key;
	qsort(want, f->n, sizeof(*want), cmp_str);
	qsort(got, n_got, sizeof(*got), cmp_str);
	size_t i = 0, j = 0;
	while (!rc && (i < f->n || j < n_got)) {
		int c = i == f->n ? 1 : j == n_got ? -1 : strcmp(want[i], got[j]);
		if (c == 0) {
			i++;
			j++;
		} else {
			it_fmt(err, errlen, "key %s \"%.80s\" after upload",
				 c < 0 ? "missing" : "unexpected", c < 0 ? want[i] : got[j]);
			rc = -1;
		}
	}
	free(want);
out:
	for (size_t k = 0; k < n_got; k++)
		free(got[k]);
	free(got);
	free(token);
	return rc;
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	struct it_env env;
	if (!it_env_load(&env))
		return;
	char err[512] = "";
	struct fixture f;
	fixture_build(&f);
	struct it_bucket b;
	double t0 = it_now();
	int rc = it_bucket_create(&env, "mount", &b);
	if (rc) {
		it_fmt(err, sizeof(err), "create bucket: %s", tfs_strerror(rc));
		goto out;
	}
	struct it_obj *objs = calloc(f.n, sizeof(*objs));
	for (size_t i = 0; i < f.n; i++)
		objs[i] = (struct it_obj){ f.v[i].key, f.v[i].seed, f.v[i].size };
	rc = it_put_many(&b, objs, f.n, 8);
	free(objs);
	if (rc) {
		it_fmt(err, sizeof(err), "upload: %s", tfs_strerror(rc));
		goto out_close;
	}
	fixture_verify_keys(&b, &f, err, sizeof(err));
	fprintf(stderr, "fixture: %zu objects in %s, %.1f s\n", f.n, b.name, it_now() - t0);
	setenv("IT_MOUNT_BUCKET", b.name, 1);
out_close:
	it_bucket_close(&b);
out:
	if (err[0]) {
		fprintf(stderr, "fixture: %s\n", err);
		setenv("IT_MOUNT_FIXTURE_ERR", err, 1);
	}
	fixture_free(&f);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	struct it_env env;
	const char *name = getenv("IT_MOUNT_BUCKET");
	if (!name || !it_env_load(&env))
		return;
	struct it_bucket b;
	if (it_bucket_open(&env, name, &b) == 0) {
		it_bucket_remove(&b);
	}
}

/* ---- per-test setup ---------------------------------------------------- */

static struct it_env env;
static struct fixture fix;
static char source[128];

static void tree_init(void)
{
	IT_ENV_OR_SKIP(&env);
	const char *err = getenv("IT_MOUNT_FIXTURE_ERR");
	cr_assert_null(err, "fixture upload failed: %s", err);
	const char *name = getenv("IT_MOUNT_BUCKET");
	cr_assert_not_null(name, "fixture bucket missing");
	it_fmt(source, sizeof(source), "s3://%s", name);
	fixture_build(&fix);
}

static void tree_fini(void)
{
	it_cleanup();
	fixture_free(&fix);
}

static void plain_init(void)
{
	IT_ENV_OR_SKIP(&env);
}

static void plain_fini(void)
{
	it_cleanup();
}

static const char *const tree_opts[] = {
	"--chunk-size", "1M", "--file-mode", "0640", "--dir-mode", "0750",
	"--uid", "1234", "--gid", "5678", "--metadata-ttl", "60", NULL
};

static void mount_or_die(const char *src, const char *const *opts, struct it_mount *m)
{
	if (it_mount(&env, src, env.endpoint, opts, m) != 0) {
		char *log = it_mount_log(m);
		cr_assert_fail("mount %s failed (status %d): %s", src, m->status, log);
	}
}


/* ---- expected tree ----------------------------------------------------- */

struct dent {
	char *dir;                 /* "" for the root */
	char *name;
	unsigned char type;        /* DT_DIR or DT_REG */
};

struct tree {
	struct dent *v;
	size_t n;
};

static void tree_add(struct tree *t, const char *dir, size_t dlen, const char *name,
		     size_t nlen, unsigned char type)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strlen(t->v[i].dir) == dlen && strncmp(t->v[i].dir, dir, dlen) == 0 &&
		    strlen(t->v[i].name) == nlen && strncmp(t->v[i].name, name, nlen) == 0) {
			cr_assert_eq(t->v[i].type, type, "fixture table contradicts itself at %.*s",
				     (int)nlen, name);
			return;
		}
	}
	t->v = realloc(t->v, (t->n + 1) * sizeof(*t->v));
	t->v[t->n].dir = strndup(dir, dlen);
	t->v[t->n].name = strndup(name, nlen);
	t->v[t->n].type = type;
	t->n++;
}

static void tree_build(const struct fixture *f, const char *under, struct tree *t)
{
	memset(t, 0, sizeof(*t));
	size_t ul = strlen(under);
	for (size_t i = 0; i < f->n; i++) {
		const char *p = f->v[i].path;
		if (!p || strncmp(p, under, ul) != 0)
			continue;
		p += ul;
		const char *start = p;
		for (;;) {
			const char *sl = strchr(p, '/');
			if (!sl) {
				if (*p)
					tree_add(t, start, p == start ? 0 : (size_t)(p - start - 1),
						 p, strlen(p), DT_REG);
				break;
			}
			tree_add(t, start, p == start ? 0 : (size_t)(p - start - 1), p,
				 (size_t)(sl - p), DT_DIR);
			p = sl + 1;
		}
	}
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].dir);
		free(t->v[i].name);
	}
	free(t->v);
}

struct name_type {
	char *name;
	unsigned char type;
};

static int cmp_nt(const void *a, const void *b)
{
	return strcmp(((const struct name_type *)a)->name, ((const struct name_type *)b)->name);
}

static const char *type_str(unsigned char t)
{
	return t == DT_DIR ? "dir" : t == DT_REG ? "file" : t == DT_UNKNOWN ? "unknown" : "other";
}

/* readdir(mnt/dir) must list exactly the expected names with their types. */
static void check_listing(const char *mnt, const struct tree *t, const char *dir)
{
	struct name_type *want = NULL, *got = NULL;
	size_t nw = 0, ng = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].dir, dir) != 0)
			continue;
		want = realloc(want, (nw + 1) * sizeof(*want));
		want[nw++] = (struct name_type){ t->v[i].name, t->v[i].type };
	}
	char path[PATH_MAX * 2];
	it_fmt(path, sizeof(path), "%s%s%s", mnt, *dir ? "/" : "", dir);
	DIR *d = opendir(path);
	cr_assert_not_null(d, "opendir /%s: %s", dir, strerror(errno));
	struct dirent *de;
	bool dot = false, dotdot = false;
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0) {
			dot = true;
			continue;
		}
		if (strcmp(de->d_name, "..") == 0) {
			dotdot = true;
			continue;
		}
		got = realloc(got, (ng + 1) * sizeof(*got));
		got[ng++] = (struct name_type){ strdup(de->d_name), de->d_type };
	}
	cr_assert_eq(errno, 0, "readdir /%s: %s", dir, strerror(errno));
	closedir(d);
	(void)dot;
	(void)dotdot;
	if (nw > 1)     /* an empty directory leaves want/got NULL */
		qsort(want, nw, sizeof(*want), cmp_nt);
	if (ng > 1)
		qsort(got, ng, sizeof(*got), cmp_nt);
	for (size_t i = 1; i < ng; i++)
		cr_expect_neq(strcmp(got[i - 1].name, got[i].name), 0,
			      "/%s lists \"%.60s\" twice", dir, got[i].name);
	size_t i = 0, j = 0;
	while (i < nw || j < ng) {
		int c = i == nw ? 1 : j == ng ? -1 : strcmp(want[i].name, got[j].name);
		if (c < 0) {
			cr_expect_fail("/%s: missing %s \"%.60s\"", dir, type_str(want[i].type),
				       want[i].name);
			i++;
		} else if (c > 0) {
			cr_expect_fail("/%s: unexpected entry \"%.60s\" (%zu bytes, %s)", dir,
				       got[j].name, strlen(got[j].name), type_str(got[j].type));
			j++;
		} else {
			cr_expect_eq(got[j].type, want[i].type, "/%s/%.60s: type %s, want %s",
				     dir, want[i].name, type_str(got[j].type),
				     type_str(want[i].type));
			i++;
			j++;
		}
	}
	for (size_t k = 0; k < ng; k++)
		free(got[k].name);
	free(got);
	free(want);
}

static void join(char *out, size_t n, const char *mnt, const char *rel)
{
	it_fmt(out, n, "%s%s%s", mnt, *rel ? "/" : "", rel);
}

/* Read the whole file at mnt/rel with reads of `bufsz` and compare. */
static void check_content(const char *mnt, const char *rel, uint64_t seed, uint64_t size,
			  size_t bufsz)
{
	char path[PATH_MAX * 2];
	join(path, sizeof(path), mnt, rel);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open %.80s: %s", rel, strerror(errno));
	char *buf = malloc(bufsz);
	uint64_t off = 0;
	for (;;) {
		ssize_t r = read(fd, buf, bufsz);
		cr_assert_geq(r, 0, "read %.80s at %llu: %s", rel, (unsigned long long)off,
			      strerror(errno));
		if (r == 0)
			break;
		cr_assert_leq(off + (uint64_t)r, size, "%.80s: more bytes than uploaded", rel);
		int64_t bad = it_gen_mismatch(seed, off, buf, (size_t)r);
		cr_assert_eq(bad, -1, "%.80s: wrong byte at offset %lld", rel,
			     (long long)(off + (uint64_t)bad));
		off += (uint64_t)r;
	}
	cr_assert_eq(off, size, "%.80s: read %llu bytes, uploaded %llu", rel,
		     (unsigned long long)off, (unsigned long long)size);
	free(buf);
	close(fd);
}

/* ---- tests ------------------------------------------------------------- */

TestSuite(tree, .init = tree_init, .fini = tree_fini, .timeout = 180);

Test(tree, listings_match_keys)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	struct tree t;
	tree_build(&fix, "", &t);
	check_listing(m.dir, &t, "");
	for (size_t i = 0; i < t.n; i++) {
		if (t.v[i].type != DT_DIR)
			continue;
		char sub[PATH_MAX * 2];
		it_fmt(sub, sizeof(sub), "%s%s%s", t.v[i].dir, *t.v[i].dir ? "/" : "", t.v[i].name);
		check_listing(m.dir, &t, sub);
	}
	/* a second pass sees the same (e.g. from a directory cache) */
	check_listing(m.dir, &t, "many");
	check_listing(m.dir, &t, "");
	tree_free(&t);
	it_unmount_ok(&env, &m);
}

static void check_attr(const char *mnt, const char *rel, unsigned char type)
{
	char path[PATH_MAX * 2];
	struct stat st;
	join(path, sizeof(path), mnt, rel);
	cr_assert_eq(lstat(path, &st), 0, "lstat %.80s: %s", rel, strerror(errno));
	cr_expect_eq(st.st_uid, UID, "%.80s uid %u", rel, st.st_uid);
	cr_expect_eq(st.st_gid, GID, "%.80s gid %u", rel, st.st_gid);
	if (type == DT_DIR) {
		cr_expect(S_ISDIR(st.st_mode), "%.80s: not a directory (mode %o)", rel, st.st_mode);
		cr_expect_eq(st.st_mode & 07777, DIR_MODE, "%.80s: mode %o", rel, st.st_mode & 07777);
	} else {
		const struct fx *x = fixture_find_path(&fix, rel);
		cr_assert_not_null(x);
		cr_expect(S_ISREG(st.st_mode), "%.80s: not a regular file (mode %o)", rel,
			  st.st_mode);
		cr_expect_eq(st.st_mode & 07777, FILE_MODE, "%.80s: mode %o", rel, st.st_mode & 07777);
		cr_expect_eq((uint64_t)st.st_size, x->size, "%.80s: size %lld, want %llu", rel,
			     (long long)st.st_size, (unsigned long long)x->size);
	}
}

/* Attributes of every visible entry: those outside many/ looked up cold
 * (no listing seen yet), the 3,000 in many/ after a readdir (as ls -l). */
Test(tree, attributes_match_options)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	struct stat st;
	cr_assert_eq(stat(m.dir, &st), 0, "stat root: %s", strerror(errno));
	cr_expect(S_ISDIR(st.st_mode), "root is not a directory");
	cr_expect_eq(st.st_mode & 07777, DIR_MODE, "root mode %o", st.st_mode & 07777);
	cr_expect_eq(st.st_uid, UID, "root uid %u", st.st_uid);
	cr_expect_eq(st.st_gid, GID, "root gid %u", st.st_gid);

	struct tree t;
	tree_build(&fix, "", &t);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			check_listing(m.dir, &t, "many");
		for (size_t i = 0; i < t.n; i++) {
			if ((strcmp(t.v[i].dir, "many") == 0) != (pass == 1))
				continue;
			char rel[PATH_MAX];
			it_fmt(rel, sizeof(rel), "%s%s%s", t.v[i].dir, *t.v[i].dir ? "/" : "",
			       t.v[i].name);
			check_attr(m.dir, rel, t.v[i].type);
		}
	}
	tree_free(&t);
	it_unmount_ok(&env, &m);
}

Test(tree, every_byte_matches)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	size_t checked = 0;
	for (size_t i = 0; i < fix.n; i++) {
		const struct fx *x = &fix.v[i];
		if (!x->path || x->path[strlen(x->path) - 1] == '/')
			continue;
		/* every 37th of the 3,000 small ones (all their sizes are
		 * checked by attributes_match_options) */
		if (strncmp(x->path, "many/", 5) == 0 && atoi(x->path + 6) % 37 != 0)
			continue;
		check_content(m.dir, x->path, x->seed, x->size, 65536);
		checked++;
	}
	cr_assert_gt(checked, 100);
	/* a different read size over the boundary files */
	check_content(m.dir, "chunk/plus1", fixture_find_path(&fix, "chunk/plus1")->seed,
		      CHUNK + 1, 4093);
	check_content(m.dir, "chunk/multi", fixture_find_path(&fix, "chunk/multi")->seed,
		      3 * CHUNK + 12345, CHUNK + 1);
	it_unmount_ok(&env, &m);
}

/* preads at odd offsets and across chunk boundaries; with O_DIRECT too
 * when the mount allows it, so the daemon (not the page cache) sees the
 * unaligned ranges. */
static void odd_reads(const char *mnt, const char *rel, uint64_t seed, uint64_t size, int flags)
{
	char path[PATH_MAX * 2];
	join(path, sizeof(path), mnt, rel);
	int fd = open(path, O_RDONLY | flags);
	if (fd < 0 && (flags & O_DIRECT) && errno == EINVAL) {
		cr_log_warn("%s: O_DIRECT refused, page-cache reads only", rel);
		return;
	}
	cr_assert_geq(fd, 0, "open %s: %s", rel, strerror(errno));
	const uint64_t offs[] = { 0, 1, 4095, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 3,
				  2 * CHUNK, size / 2 + 1, size - 1, size, size + 1, size + CHUNK };
	const size_t lens[] = { 1, 2, 7, 4096, 4097, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 5 };
	void *buf = NULL;
	cr_assert_eq(posix_memalign(&buf, 4096, 2 * CHUNK + 4096), 0);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			uint64_t off = offs[i];
			size_t len = lens[j];
			if (off > size + CHUNK)
				continue;
			size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
			ssize_t r = it_pread_full(fd, buf, len, (off_t)off);
			cr_assert_eq(r, (ssize_t)want,
				     "%s%s: pread(%zu @ %llu) = %zd (%s), want %zu", rel,
				     flags ? " (O_DIRECT)" : "", len, (unsigned long long)off, r,
				     r < 0 ? strerror(errno) : "", want);
			int64_t bad = it_gen_mismatch(seed, off, buf, (size_t)r);
			cr_assert_eq(bad, -1, "%s%s: pread(%zu @ %llu): wrong byte at %llu", rel,
				     flags ? " (O_DIRECT)" : "", len, (unsigned long long)off,
				     (unsigned long long)(off + (uint64_t)bad));
		}
	}
	free(buf);
	close(fd);
}

Test(tree, odd_offsets_and_chunk_boundaries)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	const char *files[] = { "chunk/minus1", "chunk/exact", "chunk/plus1", "chunk/multi",
				"one", "dir1/dir2/dir3/deep.bin" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const struct fx *x = fixture_find_path(&fix, files[i]);
		cr_assert_not_null(x);
		odd_reads(m.dir, x->path, x->seed, x->size, O_DIRECT);
		odd_reads(m.dir, x->path, x->seed, x->size, 0);
	}
	it_unmount_ok(&env, &m);
}

/* Paths a hostile key could have been mapped to must not exist, and the
 * keys that need escaping must be reachable by their exact names. */
Test(tree, hostile_keys_left_out)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	const char *absent[] = { "b", "c", "up", "lead", "d/e", "f/g", "a/b", "sp/A.txt",
				 "sp/A%2F.txt", "sp/%41", "sp/100", "sp/q", "sp/hello%20world.txt",
				 "sp/hello+world.txt", "sp/a b=c.txt" };
	/* once looked up cold, once after the directories were listed */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			struct tree t;
			tree_build(&fix, "", &t);
			const char *dirs[] = { "", "a", "d", "f", "h", "i", "j", "sp" };
			for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
				check_listing(m.dir, &t, dirs[i]);
			tree_free(&t);
		}
		for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
			char path[PATH_MAX * 2];
			struct stat st;
			join(path, sizeof(path), m.dir, absent[i]);
			errno = 0;
			int r = lstat(path, &st);
			cr_expect(r < 0 && errno == ENOENT, "pass %d: lstat %s: %d (%s), want ENOENT",
				  pass, absent[i], r, strerror(errno));
		}
	}
	/* 256- and 300-byte names never get through the kernel */
	char *longname = repeat('L', 300, "h/", "");
	char path[PATH_MAX * 2];
	struct stat st;
	join(path, sizeof(path), m.dir, longname);
	cr_expect_neq(lstat(path, &st), 0, "300-byte name stat succeeded");
	free(longname);
	/* 255 bytes is fine */
	char *maxname = repeat('M', 255, "h/", "");
	const struct fx *x = fixture_find_path(&fix, maxname);
	cr_assert_not_null(x);
	check_content(m.dir, maxname, x->seed, x->size, 4096);
	free(maxname);
	/* directory wins over the file of the same name, with the file's
	 * child readable */
	join(path, sizeof(path), m.dir, "x");
	cr_assert_eq(lstat(path, &st), 0, "lstat x: %s", strerror(errno));
	cr_expect(S_ISDIR(st.st_mode), "x is not a directory");
	x = fixture_find_path(&fix, "x/y");
	check_content(m.dir, "x/y", x->seed, x->size, 4096);
	join(path, sizeof(path), m.dir, "mk");
	cr_assert_eq(lstat(path, &st), 0, "lstat mk: %s", strerror(errno));
	cr_expect(S_ISDIR(st.st_mode), "mk is not a directory");
	it_unmount_ok(&env, &m);
}

Test(tree, missing_paths_are_enoent)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	const char *absent[] = { "nope", "dir1/nope", "dir1/dir2/dir3/nope/deeper", "many/k03000",
				 "many/k0000", "m/anything", "top.tx", "top.txt.bak", "TOP.TXT",
				 "dir", "dir1/dir2/dir3/dir4/deeper.txt/" };
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		char path[PATH_MAX * 2];
		struct stat st;
		join(path, sizeof(path), m.dir, absent[i]);
		errno = 0;
		int r = lstat(path, &st);
		int want = absent[i][strlen(absent[i]) - 1] == '/' ? ENOTDIR : ENOENT;
		cr_expect(r < 0 && errno == want, "lstat %s: %d (%s), want %s", absent[i], r,
			  strerror(errno), strerror(want));
		errno = 0;
		int fd = open(path, O_RDONLY);
		cr_expect(fd < 0 && errno == want, "open %s: %d (%s)", absent[i], fd,
			  strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	char path[PATH_MAX * 2];
	struct stat st;
	join(path, sizeof(path), m.dir, "empty/x");
	errno = 0;
	cr_expect(lstat(path, &st) < 0 && errno == ENOTDIR, "lstat empty/x: %s", strerror(errno));
	join(path, sizeof(path), m.dir, "nope");
	errno = 0;
	cr_expect(opendir(path) == NULL && errno == ENOENT, "opendir nope: %s", strerror(errno));
	/* an existing file is still found after the misses */
	join(path, sizeof(path), m.dir, "top.txt");
	cr_expect_eq(lstat(path, &st), 0, "lstat top.txt: %s", strerror(errno));
	it_unmount_ok(&env, &m);
}

#define EXPECT_EROFS(call, what)                                                  \
	do {                                                                      \
		errno = 0;                                                        \
		long r_ = (long)(call);                                           \
		cr_expect(r_ < 0 && errno == EROFS, "%s: returned %ld, errno %s", \
			  what, r_, strerror(errno));                             \
		if (r_ >= 0 && strstr(#call, "open"))                             \
			close((int)r_);                                           \
	} while (0)

Test(tree, writes_fail_erofs)
{
	struct it_mount m;
	mount_or_die(source, tree_opts, &m);
	char f[PATH_MAX], nf[PATH_MAX], d[PATH_MAX], nd[PATH_MAX], ed[PATH_MAX];
	join(f, sizeof(f), m.dir, "top.txt");
	join(nf, sizeof(nf), m.dir, "dir1/newfile");
	join(d, sizeof(d), m.dir, "dir1");
	join(nd, sizeof(nd), m.dir, "dir1/newdir");
	join(ed, sizeof(ed), m.dir, "m");
	EXPECT_EROFS(open(f, O_WRONLY), "open O_WRONLY");
	EXPECT_EROFS(open(f, O_RDWR), "open O_RDWR");
	EXPECT_EROFS(open(f, O_WRONLY | O_APPEND), "open O_APPEND");
	EXPECT_EROFS(open(f, O_RDONLY | O_TRUNC), "open O_TRUNC");
	EXPECT_EROFS(open(nf, O_WRONLY | O_CREAT, 0644), "create");
	EXPECT_EROFS(open(nf, O_WRONLY | O_CREAT | O_EXCL, 0644), "create O_EXCL");
	EXPECT_EROFS(mkdir(nd, 0755), "mkdir");
	EXPECT_EROFS(unlink(f), "unlink");
	EXPECT_EROFS(rmdir(ed), "rmdir");
	EXPECT_EROFS(rename(f, nf), "rename");
	EXPECT_EROFS(truncate(f, 0), "truncate");
	EXPECT_EROFS(chmod(f, 0600), "chmod");
	EXPECT_EROFS(symlink("top.txt", nf), "symlink");
	EXPECT_EROFS(link(f, nf), "link");
	(void)d;
	/* nothing changed, here or in the bucket */
	const struct fx *x = fixture_find_path(&fix, "top.txt");
	check_content(m.dir, "top.txt", x->seed, x->size, 4096);
	struct stat st;
	errno = 0;
	cr_expect(lstat(nf, &st) < 0 && errno == ENOENT, "dir1/newfile appeared");
	struct it_bucket b;
	cr_assert_eq(it_bucket_open(&env, source + 5, &b), 0);
	struct obj_meta meta;
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	int rc = objstore_head(s3_client_objstore(b.client), "dir1/newfile", &meta, &ei);
	cr_expect_eq(rc, TFS_E_NOENT, "dir1/newfile in the bucket: %s", tfs_strerror(rc));
	tfs_errinfo_clear(&ei);
	rc = objstore_head(s3_client_objstore(b.client), "top.txt", &meta, &ei);
	cr_expect_eq(rc, 0);
	cr_expect_eq(meta.size, x->size, "top.txt changed size in the bucket");
	it_bucket_close(&b);
	it_unmount_ok(&env, &m);
}

static void check_prefix_mount(const char *src)
{
	struct it_mount m;
	mount_or_die(src, tree_opts, &m);
	struct tree t;
	tree_build(&fix, "p/q/", &t);
	cr_assert_eq(t.n, 3, "fixture: p/q/ should hold r.txt, s, s/t.txt");
	check_listing(m.dir, &t, "");
	check_listing(m.dir, &t, "s");
	const struct fx *x = fixture_find_path(&fix, "p/q/r.txt");
	check_content(m.dir, "r.txt", x->seed, x->size, 4096);
	x = fixture_find_path(&fix, "p/q/s/t.txt");
	check_content(m.dir, "s/t.txt", x->seed, x->size, 4096);
	const char *absent[] = { "qq.txt", "q", "p", "other.txt", "top.txt", "q/r.txt" };
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		char path[PATH_MAX * 2];
		struct stat st;
		join(path, sizeof(path), m.dir, absent[i]);
		errno = 0;
		cr_expect(lstat(path, &st) < 0 && errno == ENOENT, "%s: %s visible in prefix mount",
			  src, absent[i]);
	}
	tree_free(&t);
	it_unmount_ok(&env, &m);
}

Test(tree, prefix_mount_shows_only_subtree)
{
	char src[256];
	it_fmt(src, sizeof(src), "%s/p/q", source);
	check_prefix_mount(src);
	it_fmt(src, sizeof(src), "%s/p/q/", source);
	check_prefix_mount(src);
}

Test(tree, secret_never_logged)
{
	const char *opts[] = { "--chunk-size", "1M", "-v", NULL };
	struct it_mount m;
	mount_or_die(source, opts, &m);
	const struct fx *x = fixture_find_path(&fix, "chunk/plus1");
	check_content(m.dir, x->path, x->seed, x->size, 65536);
	char path[PATH_MAX];
	join(path, sizeof(path), m.dir, "dir1");
	DIR *d = opendir(path);
	cr_assert_not_null(d);
	while (readdir(d))
		;
	closedir(d);
	it_unmount_ok(&env, &m);
	char *log = it_mount_log(&m);
	cr_expect_null(strstr(log, env.secret_key), "the secret key appears in the -v log");
	free(log);
}

/* ---- big object -------------------------------------------------------- */

TestSuite(big, .init = plain_init, .fini = plain_fini, .timeout = 300);

Test(big, object_256mib_every_byte)
{
	const uint64_t size = 256ull * IT_MIB, seed = 0xb16b16;
	struct it_bucket b;
	cr_assert_eq(it_bucket_create(&env, "big", &b), 0);
	double t0 = it_now();
	cr_assert_eq(it_put_gen(&b, "big.bin", seed, size), 0);
	double t_put = it_now() - t0;
	char src[128];
	it_fmt(src, sizeof(src), "s3://%s", b.name);
	struct it_mount m;
	mount_or_die(src, NULL, &m);       /* default chunk size (8 MiB) */
	char path[PATH_MAX];
	join(path, sizeof(path), m.dir, "big.bin");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat: %s", strerror(errno));
	cr_assert_eq((uint64_t)st.st_size, size);

	t0 = it_now();
	check_content(m.dir, "big.bin", seed, size, 4 * IT_MIB);
	double t_read = it_now() - t0;

	/* 8 MiB chunk boundaries and scattered odd windows */
	int fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0 && errno == EINVAL)
		fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	void *buf = NULL;
	cr_assert_eq(posix_memalign(&buf, 4096, 3 * IT_MIB), 0);
	uint64_t rng = 12345;
	for (unsigned i = 0; i < 64; i++) {
		uint64_t off;
		size_t len;
		if (i < 32) {
			off = (uint64_t)(i + 1) * 8 * IT_MIB - 3;
			len = 7;
		} else {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			off = (rng >> 11) % size;
			len = (size_t)((rng >> 40) % (3 * IT_MIB)) + 1;
		}
		size_t want = size - off < len ? (size_t)(size - off) : len;
		ssize_t r = it_pread_full(fd, buf, len, (off_t)off);
		cr_assert_eq(r, (ssize_t)want, "pread(%zu @ %llu) = %zd (%s)", len,
			     (unsigned long long)off, r, r < 0 ? strerror(errno) : "");
		int64_t bad = it_gen_mismatch(seed, off, buf, want);
		cr_assert_eq(bad, -1, "pread(%zu @ %llu): wrong byte at %llu", len,
			     (unsigned long long)off, (unsigned long long)(off + (uint64_t)bad));
	}
	free(buf);
	close(fd);
	it_unmount_ok(&env, &m);
	cr_log_info("256 MiB: put %.1f s, sequential read through the mount %.1f s", t_put, t_read);
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	s3_client_delete(b.client, "big.bin", &ei);
	it_bucket_close(&b);
}

/* ---- object replaced while open ---------------------------------------- */

TestSuite(stale, .init = plain_init, .fini = plain_fini, .timeout = 120);

Test(stale, overwrite_while_open_never_mixes)
{
	const uint64_t size = 6 * IT_MIB, old_seed = 0x01d, new_seed = 0x2e3;
	struct it_bucket b;
	cr_assert_eq(it_bucket_create(&env, "stale", &b), 0);
	cr_assert_eq(it_put_gen(&b, "obj", old_seed, size), 0);
	char src[128];
	it_fmt(src, sizeof(src), "s3://%s", b.name);
	const char *opts[] = { "--chunk-size", "1M", "--metadata-ttl", "0", NULL };
	struct it_mount m;
	mount_or_die(src, opts, &m);
	char path[PATH_MAX];
	join(path, sizeof(path), m.dir, "obj");
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open: %s", strerror(errno));
	char *buf = malloc(IT_MIB);
	ssize_t r = it_pread_full(fd, buf, IT_MIB, 0);
	cr_assert_eq(r, (ssize_t)IT_MIB, "first read: %zd (%s)", r, strerror(errno));
	cr_assert_eq(it_gen_mismatch(old_seed, 0, buf, IT_MIB), -1, "first MiB is not the upload");

	/* Same size, different bytes, straight to the server. */
	cr_assert_eq(it_put_gen(&b, "obj", new_seed, size), 0);

	const uint64_t offs[] = { 4 * IT_MIB, 4 * IT_MIB + 4097, 5 * IT_MIB + 17, 2 * IT_MIB - 1 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t off = offs[i];
		size_t len = size - off < IT_MIB ? (size_t)(size - off) : IT_MIB;
		errno = 0;
		r = pread(fd, buf, len, (off_t)off);
		cr_log_info("read @ %llu after overwrite: %zd%s%s", (unsigned long long)off, r,
			    r < 0 ? ", " : "", r < 0 ? strerror(errno) : "");
		if (r < 0) {
			cr_expect(errno == ESTALE || errno == EIO,
				  "read @ %llu after overwrite: errno %s, want ESTALE or EIO",
				  (unsigned long long)off, strerror(errno));
			continue;
		}
		cr_expect_gt(r, 0, "read @ %llu after overwrite returned EOF",
			     (unsigned long long)off);
		int64_t bad = it_gen_mismatch(old_seed, off, buf, (size_t)r);
		if (bad >= 0) {
			bool is_new = it_gen_mismatch(new_seed, off + (uint64_t)bad, buf + bad,
						      (size_t)(r - bad)) == -1;
			cr_expect_fail("read @ %llu after overwrite: %zd bytes, old bytes only up "
				       "to %lld, then %s", (unsigned long long)off, r,
				       (long long)bad, is_new ? "the NEW object's bytes" : "garbage");
		}
	}
	close(fd);

	/* A new open sees the new object, whole, with no old page left over. */
	check_content(m.dir, "obj", new_seed, size, IT_MIB);
	free(buf);
	it_unmount_ok(&env, &m);
	struct tfs_errinfo ei;
	tfs_errinfo_clear(&ei);
	s3_client_delete(b.client, "obj", &ei);
	it_bucket_close(&b);
}
