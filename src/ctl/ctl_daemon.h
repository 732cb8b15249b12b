/* ctl_daemon.h - what the daemon answers on its control socket: the
 * handlers of every request of docs/control.md, over the operator
 * interface of one mount's fs (fs/fs.h).
 *
 * Thread-safe: requests run concurrently on the server's connection
 * threads; the epoch snapshot and a plan being sent have their own lock.
 */
#ifndef TIERFS_CTL_DAEMON_H
#define TIERFS_CTL_DAEMON_H

#include "ctl/ctl_proto.h"

struct tfs_fs;
struct json_object;

/* The strings are copied. */
struct ctl_daemon_config {
	struct tfs_fs *fs;                 /* borrowed: outlives the daemon object */
	const char *source;                /* "s3://bucket/prefix", as ping shows it */
	const char *mountpoint;
	const char *config_text;           /* every option, "key = value" lines */
	const char *credentials;           /* where credentials came from, the key id
					    * shortened ("environment, key AKIA..."); never
					    * a secret */
	const char *socket_path;
};

struct ctl_daemon;

/* NULL on out of memory. */
struct ctl_daemon *ctl_daemon_new(const struct ctl_daemon_config *c);
/* Stops a trace being recorded.  The server must be stopped first. */
void ctl_daemon_free(struct ctl_daemon *d);

/* A ctl_handler_fn (ctx = the ctl_daemon). */
struct json_object *ctl_daemon_handle(void *ctx, const struct ctl_request *req, int fd);

#endif
