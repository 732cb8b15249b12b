/* fuse_ops.h - the FUSE edge: decode low-level requests, call the fs
 * layer, map tfs_err to errno (only here), reply exactly once.  Also owns
 * the session: mount, serve on a multithreaded loop, unmount.
 */
#ifndef TIERFS_FUSE_OPS_H
#define TIERFS_FUSE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"

struct tierfs_mount_opts {
	const char *mountpoint;    /* absolute path of an existing directory */
	const char *fsname;        /* shown in /proc/mounts, e.g. "tierfs:bucket" */
	const char *extra_options; /* user's -o list, may be NULL */
	double ttl_s;              /* kernel entry/attr cache timeout */
	unsigned max_threads;
	uint64_t max_read;         /* largest read the kernel may send */
	unsigned kernel_readahead_kb; /* 0 = leave the kernel's default */
	bool direct_io;            /* open files with FOPEN_DIRECT_IO (no page cache) */
	bool passthrough;          /* hand the kernel the SSD tier's file of an object
				    * wholly there (FUSE passthrough), when the kernel,
				    * the privileges and libfuse allow it */
};

/* Called once the mount is up and answering (from the serving thread). */
typedef void (*tierfs_ready_fn)(void *ctx);

/* Mount fs at o->mountpoint, call ready(ready_ctx), and serve requests
 * until unmounted or SIGTERM/SIGINT/SIGHUP (then unmount).  Returns 0
 * after a clean unmount, -1 if the mount could not be set up (message in
 * err).  Blocks; installs and removes its own signal handlers. */
int tierfs_fuse_serve(struct tfs_fs *fs, const struct tierfs_mount_opts *o,
		      tierfs_ready_fn ready, void *ready_ctx, char *err, size_t errlen);

/* Is path (absolute, canonical) a mount point right now?  Reads
 * /proc/self/mountinfo; false if it cannot be read. */
bool tierfs_is_mountpoint(const char *path);

/* Unmount path (umount2 as root, else fusermount3 -u).  0 or -1 with a
 * message in err. */
int tierfs_unmount(const char *path, char *err, size_t errlen);

#endif
