/* ctl_server.c - accept loop and connection threads (see ctl_server.h).
 *
 * One thread accepts (poll on the listening socket and a stop pipe); each
 * accepted peer that passes the SO_PEERCRED check gets a detached thread
 * that reads lines into a buffer bounded by CTL_LINE_MAX, parses, calls
 * the handler and writes the reply.  Stop: close the stop pipe's write
 * end, shutdown() every connection (its blocked read returns 0), wait
 * until the connection count is 0.
 *
 * Invariants (under lock): n_conns counts live connection threads and is
 * at most CTL_CONN_MAX; conns[] holds their fds (-1 = free slot).
 */
#include "ctl/ctl_server.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tfs_err.h"

struct ctl_server {
	char *path;
	int listen_fd;
	int stop_pipe[2];
	pthread_t acceptor;
	ctl_handler_fn handle;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t idle;         /* n_conns reached 0 */
	int conns[CTL_CONN_MAX];
	unsigned n_conns;
	bool stopping;
};

struct conn {
	struct ctl_server *s;
	int fd;
	unsigned slot;
};

/* Write all of buf; false when the peer is gone. */
static bool write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Send reply (consumed) as one line. */
static bool reply_send(int fd, struct json_object *reply)
{
	const char *text;
	size_t len;
	bool ok;

	if (!reply)
		reply = ctl_reply_error("out of memory");
	if (!reply)
		return false;
	text = json_object_to_json_string_length(
		reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	ok = text && write_all(fd, text, len) && write_all(fd, "\n", 1);
	json_object_put(reply);
	return ok;
}

/* One line: parse, handle, reply.  false: stop serving this peer. */
static bool serve_line(struct ctl_server *s, int fd, const char *line, size_t len)
{
	struct ctl_request req;
	char err[512];
	struct json_object *reply;

	if (ctl_request_parse(line, len, &req, err, sizeof(err)) < 0)
		return reply_send(fd, ctl_reply_error("%s", err));
	reply = s->handle(s->ctx, &req, fd);
	ctl_request_release(&req);
	if (!reply)
		return false;              /* the peer hung up mid-request */
	return reply_send(fd, reply);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct ctl_server *s = c->s;
	size_t cap = 4096, used = 0, scanned = 0;
	char *buf = malloc(cap);
	bool alive = buf != NULL;

	while (alive) {
		char *nl = memchr(buf + scanned, '\n', used - scanned);
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - buf);

			alive = serve_line(s, c->fd, buf, len);
			memmove(buf, nl + 1, used - len - 1);
			used -= len + 1;
			scanned = 0;
			continue;
		}
		scanned = used;
		if (used > CTL_LINE_MAX) {
			/* no way to find the next request's start: say why, hang up */
			reply_send(c->fd, ctl_reply_error("request too long: more than %u bytes "
							  "without a newline", CTL_LINE_MAX));
			break;
		}
		if (used == cap) {
			size_t ncap = cap * 2 > CTL_LINE_MAX + 2 ? CTL_LINE_MAX + 2 : cap * 2;
			char *nb = realloc(buf, ncap);

			if (!nb)
				break;
			buf = nb;
			cap = ncap;
		}
		n = recv(c->fd, buf + used, cap - used, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	free(buf);
	pthread_mutex_lock(&s->lock);
	close(c->fd);
	s->conns[c->slot] = -1;
	if (--s->n_conns == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	free(c);
	return NULL;
}

/* Only the daemon's uid and root. */
static bool peer_allowed(int fd, uid_t *uid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr))
		return false;
	*uid = cr.uid;
	return cr.uid == 0 || cr.uid == geteuid();
}

/* A peer we will not serve: one error line, without blocking on it. */
static void refuse(int fd, const char *fmt, unsigned long a, unsigned long b)
{
	char msg[256];
	struct json_object *r;

	snprintf(msg, sizeof(msg), fmt, a, b);
	(void)fcntl(fd, F_SETFL, O_NONBLOCK);
	r = ctl_reply_error("%s", msg);
	reply_send(fd, r);
	close(fd);
}

static void *accept_main(void *arg)
{
	struct ctl_server *s = arg;

	for (;;) {
		struct pollfd p[2] = { { s->listen_fd, POLLIN, 0 }, { s->stop_pipe[0], POLLIN, 0 } };
		struct conn *c;
		pthread_t th;
		pthread_attr_t attr;
		uid_t uid = (uid_t)-1;
		unsigned slot;
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warn("control socket: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;                 /* stop */
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				usleep(100 * 1000);   /* out of resources: do not spin */
			continue;
		}
		if (!peer_allowed(fd, &uid)) {
			log_warn("control socket: refused a peer with uid %ld", (long)uid);
			refuse(fd, "permission denied: uid %lu is neither the mount's owner (uid %lu) "
			       "nor root", (unsigned long)uid, (unsigned long)geteuid());
			continue;
		}
		pthread_mutex_lock(&s->lock);
		if (s->n_conns >= CTL_CONN_MAX) {
			pthread_mutex_unlock(&s->lock);
			refuse(fd, "busy: %lu control connections open, at most %lu", CTL_CONN_MAX,
			       CTL_CONN_MAX);
			continue;
		}
		for (slot = 0; s->conns[slot] >= 0; slot++)
			;
		c = malloc(sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&s->lock);
			close(fd);
			continue;
		}
		*c = (struct conn){ s, fd, slot };
		s->conns[slot] = fd;
		s->n_conns++;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, conn_main, c) != 0) {
			s->conns[slot] = -1;
			s->n_conns--;
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

/* Is something answering on path?  (A daemon still running there.) */
static bool socket_live(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return live;
}

int ctl_server_start(const char *path, ctl_handler_fn handle, void *ctx, struct ctl_server **out,
		     char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ctl_server *s;
	struct stat st;
	mode_t old_mask;
	int rc;

	*out = NULL;
	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "control socket path too long (%zu bytes, at most %zu): %s",
			 strlen(path), sizeof(a.sun_path) - 1, path);
		return TFS_E_NAMETOOLONG;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket: not replaced", path);
			return TFS_E_INVAL;
		}
		if (socket_live(path)) {
			snprintf(err, errlen, "%s is in use: another tierfs serves this mountpoint",
				 path);
			return TFS_E_INVAL;
		}
		(void)unlink(path);        /* a dead daemon's */
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return TFS_E_NOMEM;
	}
	s->listen_fd = -1;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	s->handle = handle;
	s->ctx = ctx;
	for (int i = 0; i < CTL_CONN_MAX; i++)
		s->conns[i] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 || pipe2(s->stop_pipe, O_CLOEXEC) < 0)
		goto sys_fail;
	/* born 0600: no window in which another user could connect (the
	 * directory is private too) */
	old_mask = umask(0177);
	rc = bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a));
	umask(old_mask);
	if (rc < 0 || chmod(path, 0600) < 0 || listen(s->listen_fd, 64) < 0)
		goto sys_fail;
	if (pthread_create(&s->acceptor, NULL, accept_main, s) != 0) {
		errno = EAGAIN;
		goto sys_fail;
	}
	*out = s;
	return TFS_OK;
sys_fail:
	snprintf(err, errlen, "control socket %s: %s", path, strerror(errno));
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		(void)unlink(path);
	}
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
	return TFS_E_IO;
}

void ctl_server_stop(struct ctl_server *s)
{
	if (!s)
		return;
	close(s->stop_pipe[1]);
	pthread_join(s->acceptor, NULL);
	close(s->listen_fd);
	(void)unlink(s->path);
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	for (int i = 0; i < CTL_CONN_MAX; i++)
		if (s->conns[i] >= 0)
			shutdown(s->conns[i], SHUT_RDWR);
	while (s->n_conns > 0)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	close(s->stop_pipe[0]);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}
