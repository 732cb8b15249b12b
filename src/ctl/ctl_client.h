/* ctl_client.h - one connection to a mount's control socket: send a
 * request object, read its reply object (docs/control.md, "Framing").
 *
 * Requests are serialized on one line of at most CTL_CLIENT_REQUEST_MAX
 * bytes (the daemon's bound); a reply line may be up to
 * CTL_CLIENT_REPLY_MAX bytes (residency of 10000 files is large).  There
 * is no timeout: a warm request legitimately takes minutes.  To abandon a
 * call in progress, another thread calls ctl_client_shutdown(): the daemon
 * sees the connection close and stops the work.
 *
 * Thread-safety: one thread at a time per ctl_client, except
 * ctl_client_shutdown(), which any thread (or a signal handler) may call
 * at any time until ctl_client_free().  Distinct clients are independent.
 */
#ifndef TIERFS_CTL_CLIENT_H
#define TIERFS_CTL_CLIENT_H

#include <stddef.h>

struct json_object;
struct ctl_client;

#define CTL_CLIENT_REQUEST_MAX (1u << 20)
#define CTL_CLIENT_REPLY_MAX (64u << 20)

/* Connect to the Unix socket at sock_path.  On TFS_OK *out is a new
 * client (free with ctl_client_free()).  Failures: TFS_E_NOENT (no socket
 * there, or the daemon is gone: ENOENT, ECONNREFUSED), TFS_E_ACCESS,
 * TFS_E_NAMETOOLONG, TFS_E_CONNECT (anything else); err holds
 * "connect PATH: reason".  *out is NULL unless TFS_OK. */
int ctl_client_connect(const char *sock_path, struct ctl_client **out, char *err,
		       size_t errlen);

/* Send req (borrowed, not modified) as one line and wait for one reply
 * line.  On TFS_OK *reply is a new JSON object (caller puts it with
 * json_object_put()) that has a boolean "ok"; whether the daemon said
 * true or false is the caller's to look at.  Failures, with *reply NULL:
 * TFS_E_TOOBIG (request or reply over its bound), TFS_E_IO (the
 * connection failed or closed, also after ctl_client_shutdown()),
 * TFS_E_PROTO (the reply is not a JSON object with "ok"), TFS_E_NOMEM.
 * After a failure the connection is unusable. */
int ctl_client_call(struct ctl_client *c, struct json_object *req, struct json_object **reply,
		    char *err, size_t errlen);

/* Shut the connection down both ways: a blocked ctl_client_call()
 * returns TFS_E_IO and the daemon abandons the request.  Idempotent,
 * async-signal-safe, callable from any thread. */
void ctl_client_shutdown(struct ctl_client *c);

/* Close and free c (NULL is fine).  No call may be in progress. */
void ctl_client_free(struct ctl_client *c);

#endif
