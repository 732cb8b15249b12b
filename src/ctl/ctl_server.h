/* ctl_server.h - the control socket: a Unix stream socket, one JSON
 * request per line, one JSON reply per line (docs/control.md).
 *
 * Peers are checked with SO_PEERCRED: only the daemon's own uid and root
 * are served.  At most CTL_CONN_MAX connections at once, each on its own
 * thread; a request line is at most CTL_LINE_MAX bytes.  A bad request
 * gets an error reply from the parser and never reaches the handler.
 * Thread-safe; the handler runs on connection threads, concurrently.
 */
#ifndef TIERFS_CTL_SERVER_H
#define TIERFS_CTL_SERVER_H

#include <stddef.h>

#include "ctl/ctl_proto.h"

#define CTL_CONN_MAX 32

struct ctl_server;
struct json_object;

/* Handle one valid request from the peer on fd (the handler may poll fd
 * for a hang-up to stop a long request early; it must not read or write
 * it).  Returns a new reply object, or NULL when the peer hung up and no
 * reply is wanted.  Called concurrently. */
typedef struct json_object *(*ctl_handler_fn)(void *ctx, const struct ctl_request *req, int fd);

/* Listen on path (its directory must exist and be private: see
 * ctl_path.h); a stale socket left there by a dead daemon is replaced,
 * a live one is an error.  The socket is mode 0600.  TFS_OK with *out, or
 * an error with a message in err. */
int ctl_server_start(const char *path, ctl_handler_fn handle, void *ctx, struct ctl_server **out,
		     char *err, size_t errlen);

/* Stop listening, hang up on every peer, wait for the connection threads,
 * remove the socket.  NULL is a no-op. */
void ctl_server_stop(struct ctl_server *s);

#endif
