/* ctl_path.c - the control socket's directory and name (see ctl_path.h).
 *
 * The directory checks are what keeps another local user from planting a
 * socket (or a symlink to one) where the CLI will talk to it, or from
 * reading the daemon's: DIR is private to its owner, so DIR/HASH.sock can
 * only have been made by that owner.
 */
#include "ctl/ctl_path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <xxhash.h>

#include "common/tfs_err.h"

_Static_assert(sizeof(((struct sockaddr_un *)0)->sun_path) == CTL_PATH_SUN_MAX,
	       "sun_path is not 108 bytes on this system");

void ctl_path_hash(const char *mountpoint_canonical, char hex[17])
{
	XXH64_hash_t h = XXH64(mountpoint_canonical, strlen(mountpoint_canonical), 0);

	snprintf(hex, 17, "%016llx", (unsigned long long)h);
}

int ctl_path_dir_check(const char *dir, uid_t uid, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st) != 0) {
		if (errno == ENOENT) {
			tfs_err_printf(err, errlen, "control directory %s does not exist", dir);
			return TFS_E_NOENT;
		}
		tfs_err_printf(err, errlen, "control directory %s: %s", dir, strerror(errno));
		return errno == EACCES ? TFS_E_ACCESS : TFS_E_IO;
	}
	if (S_ISLNK(st.st_mode)) {
		tfs_err_printf(err, errlen, "control directory %s is a symlink: refusing it "
			"(remove it, or set TIERFS_RUNTIME_DIR)", dir);
		return TFS_E_ACCESS;
	}
	if (!S_ISDIR(st.st_mode)) {
		tfs_err_printf(err, errlen, "control directory %s is not a directory: refusing it "
			"(remove it, or set TIERFS_RUNTIME_DIR)", dir);
		return TFS_E_ACCESS;
	}
	if (st.st_uid != uid) {
		tfs_err_printf(err, errlen, "control directory %s is owned by uid %u, not %u: "
			"refusing it (remove it, or set TIERFS_RUNTIME_DIR)",
			dir, (unsigned)st.st_uid, (unsigned)uid);
		return TFS_E_ACCESS;
	}
	if (st.st_mode & 077) {
		tfs_err_printf(err, errlen, "control directory %s is open to group or others "
			"(mode %04o): refusing it (chmod 700 it, or remove it)",
			dir, (unsigned)(st.st_mode & 07777));
		return TFS_E_ACCESS;
	}
	return TFS_OK;
}

/* DIR by the rule, not yet looked at. */
static int runtime_dir_name(uid_t uid, char *buf, size_t cap, char *err, size_t errlen)
{
	const char *env = getenv("TIERFS_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && env[0])
		n = snprintf(buf, cap, "%s", env);
	else if (uid == 0)
		n = snprintf(buf, cap, "/run/tierfs");
	else if (xdg && xdg[0])
		n = snprintf(buf, cap, "%s/tierfs", xdg);
	else
		n = snprintf(buf, cap, "/tmp/tierfs-%u", (unsigned)uid);
	if (n < 0 || (size_t)n >= cap) {
		tfs_err_printf(err, errlen, "control directory name is too long (%d bytes)", n);
		return TFS_E_NAMETOOLONG;
	}
	/* "dir/" and "dir" are the same directory; keep one spelling so
	 * the socket path (and its length check) does not depend on it */
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return TFS_OK;
}

int ctl_path_runtime_dir(uid_t uid, bool create, char *buf, size_t cap, char *err,
			 size_t errlen)
{
	char dir[4096];
	int rc;

	rc = runtime_dir_name(uid, dir, sizeof(dir), err, errlen);
	if (rc != TFS_OK)
		return rc;
	if (strlen(dir) >= cap) {
		tfs_err_printf(err, errlen, "control directory name %s is too long", dir);
		return TFS_E_NAMETOOLONG;
	}
	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		tfs_err_printf(err, errlen, "cannot create control directory %s: %s", dir,
			strerror(errno));
		return errno == EACCES || errno == EPERM ? TFS_E_ACCESS
		       : errno == ENOENT ? TFS_E_NOENT : TFS_E_IO;
	}
	rc = ctl_path_dir_check(dir, uid, err, errlen);
	if (rc == TFS_E_NOENT && !create)
		rc = TFS_OK;
	if (rc != TFS_OK)
		return rc;
	memcpy(buf, dir, strlen(dir) + 1);
	return TFS_OK;
}

int ctl_path_socket_in(const char *dir, const char *mountpoint_canonical, char *buf, size_t cap,
		       char *err, size_t errlen)
{
	char hex[17], path[4200];
	int n;

	ctl_path_hash(mountpoint_canonical, hex);
	n = snprintf(path, sizeof(path), "%s/%s.sock", dir, hex);
	if (n < 0 || (size_t)n >= sizeof(path) || (size_t)n >= CTL_PATH_SUN_MAX) {
		tfs_err_printf(err, errlen, "control socket path %s/%s.sock is %d bytes, more than "
			"the %d a Unix socket allows: set TIERFS_RUNTIME_DIR to a shorter "
			"directory", dir, hex, n, CTL_PATH_SUN_MAX - 1);
		return TFS_E_NAMETOOLONG;
	}
	if ((size_t)n >= cap) {
		tfs_err_printf(err, errlen, "control socket path %s does not fit in %zu bytes", path, cap);
		return TFS_E_NAMETOOLONG;
	}
	memcpy(buf, path, (size_t)n + 1);
	return TFS_OK;
}

int ctl_path_socket(const char *mountpoint_canonical, uid_t uid, bool create_dir, char *buf,
		    size_t cap, char *err, size_t errlen)
{
	char dir[4096];
	int rc;

	rc = ctl_path_runtime_dir(uid, create_dir, dir, sizeof(dir), err, errlen);
	if (rc != TFS_OK)
		return rc;
	return ctl_path_socket_in(dir, mountpoint_canonical, buf, cap, err, errlen);
}
