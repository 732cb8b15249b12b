/* ctl_path.h - where a mount's control socket lives (docs/control.md,
 * "Where the socket is").
 *
 *     DIR  = $TIERFS_RUNTIME_DIR             when set (and not empty), else
 *            /run/tierfs                     for uid 0, else
 *            $XDG_RUNTIME_DIR/tierfs         when XDG_RUNTIME_DIR is set, else
 *            /tmp/tierfs-UID
 *     PATH = DIR/HASH.sock    HASH = XXH64(seed 0) of the canonical
 *                             mountpoint, 16 lower-case hex digits
 *
 * Both the daemon (which creates DIR) and the CLI (which only looks) call
 * these, so nothing here prints or knows about either.  A DIR that exists
 * is accepted only if it is a real directory (not a symlink) owned by the
 * uid given and closed to group and others.  A socket path must fit in
 * sun_path (107 bytes and the NUL).
 *
 * Every function returns TFS_OK or a negative TFS_E_* code with one line
 * in err (when err is not NULL); buf is written only on TFS_OK.  The
 * environment is read with getenv(): thread-safe as long as no thread
 * changes it.
 */
#ifndef TIERFS_CTL_PATH_H
#define TIERFS_CTL_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Bytes of a socket path, NUL included, that fit in sockaddr_un.sun_path. */
#define CTL_PATH_SUN_MAX 108

/* Write the 16 lower-case hex digits of XXH64(seed 0) of
 * mountpoint_canonical and a NUL to hex (17 bytes).  Pure. */
void ctl_path_hash(const char *mountpoint_canonical, char hex[17]);

/* Check that dir is a directory, not a symlink, owned by uid, with no
 * group or other permission bits.  TFS_OK; TFS_E_NOENT when it does not
 * exist; TFS_E_ACCESS when it exists but is refused (err says why);
 * TFS_E_IO for other lstat failures. */
int ctl_path_dir_check(const char *dir, uid_t uid, char *err, size_t errlen);

/* The runtime directory DIR for uid, by the rule above (the environment
 * is the calling process's: pass the caller's own uid, or a mount
 * owner's uid only when the environment does not apply, i.e. uid 0's
 * /run/tierfs or another user's /tmp/tierfs-UID).
 * create: make DIR (mode 0700; its parent must exist) when missing, then
 * check it.  Without create, a missing DIR is not an error (the caller's
 * connect will fail) but an existing one is checked just the same.
 * TFS_E_NAMETOOLONG when it does not fit in cap. */
int ctl_path_runtime_dir(uid_t uid, bool create, char *buf, size_t cap, char *err,
			 size_t errlen);

/* DIR/HASH.sock for mountpoint_canonical in the given directory, checked
 * against the sun_path bound (TFS_E_NAMETOOLONG, with a message that
 * names the path and the fix).  Does not look at the file system. */
int ctl_path_socket_in(const char *dir, const char *mountpoint_canonical, char *buf, size_t cap,
		       char *err, size_t errlen);

/* The control socket path of mountpoint_canonical (a realpath()) for uid:
 * ctl_path_runtime_dir(uid, create_dir) then ctl_path_socket_in(). */
int ctl_path_socket(const char *mountpoint_canonical, uid_t uid, bool create_dir, char *buf,
		    size_t cap, char *err, size_t errlen);

#endif
