/* Unit tests for src/ctl/ctl_path: where a mount's control socket is. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "ctl/ctl_path.h"

/* A fresh private directory; each Criterion test runs in its own process,
 * so the environment set here does not leak into other tests. */
static void tmpdir(char *buf, size_t cap)
{
	snprintf(buf, cap, "/tmp/tierfs-test-ctl-XXXXXX");
	cr_assert_not_null(mkdtemp(buf));
}

static void clear_env(void)
{
	unsetenv("TIERFS_RUNTIME_DIR");
	unsetenv("XDG_RUNTIME_DIR");
}

Test(ctl_path, hash_is_xxh64_seed0_lower_hex)
{
	char hex[17];

	/* reference values from an independent XXH64 implementation */
	ctl_path_hash("", hex);
	cr_assert_str_eq(hex, "ef46db3751d8e999");
	ctl_path_hash("abc", hex);
	cr_assert_str_eq(hex, "44bc2cf5ad770999");
	ctl_path_hash("/mnt/x", hex);
	cr_assert_str_eq(hex, "9f315a8c04a4ce1b");
	ctl_path_hash("/home/user/data/a-much-longer-mountpoint-name-over-32-bytes", hex);
	cr_assert_str_eq(hex, "79723daa67dddc11");
}

Test(ctl_path, env_precedence)
{
	char dir[PATH_MAX], xdg[PATH_MAX], want[PATH_MAX + 16], err[256];
	uid_t other = 54321;   /* no such directories exist for it */

	clear_env();
	tmpdir(xdg, sizeof(xdg));

	/* nothing set: /tmp/tierfs-UID (missing is fine without create) */
	cr_assert_eq(ctl_path_runtime_dir(other, false, dir, sizeof(dir), err, sizeof(err)), TFS_OK,
		     "%s", err);
	cr_assert_str_eq(dir, "/tmp/tierfs-54321");

	/* XDG_RUNTIME_DIR */
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	cr_assert_eq(ctl_path_runtime_dir(other, false, dir, sizeof(dir), err, sizeof(err)), TFS_OK,
		     "%s", err);
	snprintf(want, sizeof(want), "%s/tierfs", xdg);
	cr_assert_str_eq(dir, want);

	/* uid 0 beats XDG_RUNTIME_DIR */
	cr_assert_eq(ctl_path_runtime_dir(0, false, dir, sizeof(dir), err, sizeof(err)), TFS_OK,
		     "%s", err);
	cr_assert_str_eq(dir, "/run/tierfs");

	/* TIERFS_RUNTIME_DIR beats everything; a trailing slash is dropped */
	snprintf(want, sizeof(want), "%s/", xdg);
	setenv("TIERFS_RUNTIME_DIR", want, 1);
	chmod(xdg, 0700);
	cr_assert_eq(ctl_path_runtime_dir(getuid(), false, dir, sizeof(dir), err, sizeof(err)),
		     TFS_OK, "%s", err);
	cr_assert_str_eq(dir, xdg);
	cr_assert_eq(ctl_path_runtime_dir(0, false, dir, sizeof(dir), err, sizeof(err)),
		     getuid() == 0 ? TFS_OK : TFS_E_ACCESS);

	/* an empty TIERFS_RUNTIME_DIR counts as unset */
	setenv("TIERFS_RUNTIME_DIR", "", 1);
	cr_assert_eq(ctl_path_runtime_dir(other, false, dir, sizeof(dir), err, sizeof(err)), TFS_OK);
	snprintf(want, sizeof(want), "%s/tierfs", xdg);
	cr_assert_str_eq(dir, want);
	rmdir(xdg);
}

Test(ctl_path, socket_path_is_dir_hash_sock)
{
	char base[PATH_MAX], path[CTL_PATH_SUN_MAX], want[PATH_MAX + 64], err[256];
	struct stat st;

	clear_env();
	tmpdir(base, sizeof(base));
	cr_assert_eq(chmod(base, 0700), 0);
	setenv("TIERFS_RUNTIME_DIR", base, 1);
	cr_assert_eq(ctl_path_socket("/mnt/x", getuid(), true, path, sizeof(path), err,
				     sizeof(err)), TFS_OK, "%s", err);
	snprintf(want, sizeof(want), "%s/9f315a8c04a4ce1b.sock", base);
	cr_assert_str_eq(path, want);
	cr_assert_eq(lstat(base, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	rmdir(base);
}

Test(ctl_path, create_makes_0700)
{
	char base[PATH_MAX], dir[PATH_MAX + 8], got[PATH_MAX + 8], err[256];
	struct stat st;

	clear_env();
	tmpdir(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/rt", base);
	setenv("TIERFS_RUNTIME_DIR", dir, 1);
	/* without create a missing dir is fine and not made */
	cr_assert_eq(ctl_path_runtime_dir(getuid(), false, got, sizeof(got), err, sizeof(err)),
		     TFS_OK, "%s", err);
	cr_assert_neq(lstat(dir, &st), 0);
	cr_assert_eq(ctl_path_runtime_dir(getuid(), true, got, sizeof(got), err, sizeof(err)),
		     TFS_OK, "%s", err);
	cr_assert_str_eq(got, dir);
	cr_assert_eq(lstat(dir, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0700);
	/* and again: it exists now */
	cr_assert_eq(ctl_path_runtime_dir(getuid(), true, got, sizeof(got), err, sizeof(err)),
		     TFS_OK, "%s", err);
	rmdir(dir);
	rmdir(base);
}

Test(ctl_path, refuses_group_or_other_bits)
{
	char base[PATH_MAX], got[PATH_MAX], err[256];

	clear_env();
	tmpdir(base, sizeof(base));
	cr_assert_eq(chmod(base, 0755), 0);
	setenv("TIERFS_RUNTIME_DIR", base, 1);
	got[0] = 'X';
	cr_assert_eq(ctl_path_runtime_dir(getuid(), true, got, sizeof(got), err, sizeof(err)),
		     TFS_E_ACCESS);
	cr_assert_not_null(strstr(err, "open to group or others"), "%s", err);
	cr_assert_not_null(strstr(err, "0755"), "%s", err);
	cr_assert_eq(got[0], 'X', "buf written on failure");
	/* the CLI (no create) refuses it too */
	cr_assert_eq(ctl_path_socket("/mnt/x", getuid(), false, got, sizeof(got), err,
				     sizeof(err)), TFS_E_ACCESS);
	cr_assert_eq(chmod(base, 0710), 0);
	cr_assert_eq(ctl_path_dir_check(base, getuid(), err, sizeof(err)), TFS_E_ACCESS);
	cr_assert_eq(chmod(base, 0700), 0);
	cr_assert_eq(ctl_path_dir_check(base, getuid(), err, sizeof(err)), TFS_OK, "%s", err);
	rmdir(base);
}

Test(ctl_path, refuses_symlink_file_and_wrong_owner)
{
	char base[PATH_MAX], real[PATH_MAX + 8], link[PATH_MAX + 8], file[PATH_MAX + 8];
	char got[PATH_MAX], err[256];
	FILE *f;

	clear_env();
	tmpdir(base, sizeof(base));
	snprintf(real, sizeof(real), "%s/real", base);
	snprintf(link, sizeof(link), "%s/link", base);
	snprintf(file, sizeof(file), "%s/file", base);
	cr_assert_eq(mkdir(real, 0700), 0);
	cr_assert_eq(symlink(real, link), 0);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fclose(f);

	setenv("TIERFS_RUNTIME_DIR", link, 1);
	cr_assert_eq(ctl_path_runtime_dir(getuid(), true, got, sizeof(got), err, sizeof(err)),
		     TFS_E_ACCESS);
	cr_assert_not_null(strstr(err, "symlink"), "%s", err);
	cr_assert_eq(ctl_path_runtime_dir(getuid(), false, got, sizeof(got), err, sizeof(err)),
		     TFS_E_ACCESS);

	setenv("TIERFS_RUNTIME_DIR", file, 1);
	cr_assert_eq(ctl_path_runtime_dir(getuid(), true, got, sizeof(got), err, sizeof(err)),
		     TFS_E_ACCESS);
	cr_assert_not_null(strstr(err, "not a directory"), "%s", err);

	setenv("TIERFS_RUNTIME_DIR", real, 1);
	cr_assert_eq(ctl_path_runtime_dir(getuid() + 1, true, got, sizeof(got), err, sizeof(err)),
		     TFS_E_ACCESS);
	cr_assert_not_null(strstr(err, "owned by uid"), "%s", err);

	cr_assert_eq(ctl_path_dir_check(file + 0, getuid(), err, sizeof(err)), TFS_E_ACCESS);
	snprintf(file, sizeof(file), "%s/missing", base);
	cr_assert_eq(ctl_path_dir_check(file, getuid(), err, sizeof(err)), TFS_E_NOENT);

	unlink(link);
	rmdir(real);
	snprintf(file, sizeof(file), "%s/file", base);
	unlink(file);
	rmdir(base);
}

Test(ctl_path, sun_path_bound)
{
	char dir[200], got[256], err[512];

	/* DIR + "/" + 16 + ".sock" = DIR + 22 bytes; 107 fit with the NUL */
	memset(dir, 'd', sizeof(dir));
	dir[0] = '/';
	dir[85] = '\0';
	cr_assert_eq(ctl_path_socket_in(dir, "/mnt/x", got, sizeof(got), err, sizeof(err)), TFS_OK,
		     "%s", err);
	cr_assert_eq(strlen(got), 107);
	dir[85] = 'd';
	dir[86] = '\0';
	got[0] = 'X';
	cr_assert_eq(ctl_path_socket_in(dir, "/mnt/x", got, sizeof(got), err, sizeof(err)),
		     TFS_E_NAMETOOLONG);
	cr_assert_eq(got[0], 'X');
	cr_assert_not_null(strstr(err, "108"), "%s", err);
	cr_assert_not_null(strstr(err, "TIERFS_RUNTIME_DIR"), "%s", err);

	/* a caller buffer too small is its own error */
	dir[10] = '\0';
	cr_assert_eq(ctl_path_socket_in(dir, "/mnt/x", got, 20, err, sizeof(err)),
		     TFS_E_NAMETOOLONG);

	/* through ctl_path_socket with a long TIERFS_RUNTIME_DIR */
	clear_env();
	memset(dir, 'd', sizeof(dir));
	memcpy(dir, "/tmp/", 5);
	dir[150] = '\0';
	setenv("TIERFS_RUNTIME_DIR", dir, 1);
	cr_assert_eq(ctl_path_socket("/mnt/x", getuid(), false, got, sizeof(got), err, sizeof(err)),
		     TFS_E_NAMETOOLONG);
}
