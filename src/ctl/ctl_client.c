/* ctl_client.c - a control socket connection (see ctl_client.h).
 *
 * Reading: bytes accumulate in one buffer that grows by doubling up to
 * CTL_CLIENT_REPLY_MAX plus one read's worth; a reply is the bytes up to
 * the first '\n'.  Bytes after it (there should be none: one request is
 * outstanding at a time) are kept for the next call.
 */
#include "ctl/ctl_client.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "ctl/ctl_path.h"

#define READ_STEP (64u << 10)

struct ctl_client {
	int fd;
	char *buf;          /* received bytes not yet handed out */
	size_t len;         /* bytes in buf */
	size_t cap;         /* allocated size of buf */
	char path[CTL_PATH_SUN_MAX];
};

int ctl_client_connect(const char *sock_path, struct ctl_client **out, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctl_client *c = NULL;
	size_t n = strlen(sock_path);
	int rc, fd = -1;

	*out = NULL;
	if (n >= sizeof(sa.sun_path)) {
		tfs_err_printf(err, errlen, "connect %s: path longer than a Unix socket allows (%zu bytes)",
			sock_path, sizeof(sa.sun_path) - 1);
		rc = TFS_E_NAMETOOLONG;
		goto fail;
	}
	memcpy(sa.sun_path, sock_path, n + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tfs_err_printf(err, errlen, "socket: %s", strerror(errno));
		rc = TFS_E_IO;
		goto fail;
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (errno == EINTR)
			continue;
		tfs_err_printf(err, errlen, "connect %s: %s", sock_path, strerror(errno));
		rc = errno == ENOENT || errno == ECONNREFUSED || errno == ENOTDIR ? TFS_E_NOENT
		     : errno == EACCES || errno == EPERM ? TFS_E_ACCESS : TFS_E_CONNECT;
		goto close_fd;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		tfs_err_printf(err, errlen, "out of memory");
		rc = TFS_E_NOMEM;
		goto close_fd;
	}
	c->fd = fd;
	memcpy(c->path, sock_path, n + 1);
	*out = c;
	return TFS_OK;

close_fd:
	close(fd);
fail:
	return rc;
}

/* Write all of buf; MSG_NOSIGNAL so a daemon that went away is an error,
 * not a SIGPIPE. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until buf holds a '\n'; return its offset, or -1 (err set). */
static ssize_t read_line(struct ctl_client *c, int *rc, char *err, size_t errlen)
{
	size_t scanned = 0;

	for (;;) {
		char *nl = c->len > scanned ? memchr(c->buf + scanned, '\n', c->len - scanned)
					    : NULL;
		ssize_t n;

		if (nl)
			return nl - c->buf;
		scanned = c->len;
		if (c->len > CTL_CLIENT_REPLY_MAX) {
			tfs_err_printf(err, errlen, "reply from %s longer than %u MiB", c->path,
				CTL_CLIENT_REPLY_MAX >> 20);
			*rc = TFS_E_TOOBIG;
			return -1;
		}
		if (c->cap - c->len < READ_STEP) {
			size_t ncap = c->cap ? c->cap * 2 : 2 * READ_STEP;
			char *nb;

			while (ncap - c->len < READ_STEP)
				ncap *= 2;
			nb = realloc(c->buf, ncap);
			if (!nb) {
				tfs_err_printf(err, errlen, "out of memory reading a reply");
				*rc = TFS_E_NOMEM;
				return -1;
			}
			c->buf = nb;
			c->cap = ncap;
		}
		n = read(c->fd, c->buf + c->len, READ_STEP);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				tfs_err_printf(err, errlen, "%s closed the connection%s", c->path,
					c->len ? " in the middle of a reply" : "");
			else
				tfs_err_printf(err, errlen, "read %s: %s", c->path, strerror(errno));
			*rc = TFS_E_IO;
			return -1;
		}
		c->len += (size_t)n;
	}
}

int ctl_client_call(struct ctl_client *c, struct json_object *req, struct json_object **reply,
		    char *err, size_t errlen)
{
	struct json_tokener *tok = NULL;
	struct json_object *obj = NULL, *ok;
	const char *line;
	char *out = NULL;
	size_t len;
	ssize_t end;
	int rc = TFS_OK;

	*reply = NULL;
	line = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!line) {
		tfs_err_printf(err, errlen, "out of memory serializing a request");
		return TFS_E_NOMEM;
	}
	len = strlen(line);
	if (len + 1 > CTL_CLIENT_REQUEST_MAX) {
		tfs_err_printf(err, errlen, "request of %zu bytes is longer than the %u MiB allowed",
			len + 1, CTL_CLIENT_REQUEST_MAX >> 20);
		return TFS_E_TOOBIG;
	}
	out = malloc(len + 1);
	if (!out) {
		tfs_err_printf(err, errlen, "out of memory");
		return TFS_E_NOMEM;
	}
	memcpy(out, line, len);
	out[len] = '\n';
	if (send_all(c->fd, out, len + 1) != 0) {
		tfs_err_printf(err, errlen, "write %s: %s", c->path, strerror(errno));
		rc = TFS_E_IO;
		goto free_out;
	}
	end = read_line(c, &rc, err, errlen);
	if (end < 0)
		goto free_out;

	tok = json_tokener_new();
	if (!tok) {
		tfs_err_printf(err, errlen, "out of memory");
		rc = TFS_E_NOMEM;
		goto consume;
	}
	obj = json_tokener_parse_ex(tok, c->buf, (int)end);
	if (obj) {
		/* nothing but blanks may follow the object on its line */
		for (size_t i = json_tokener_get_parse_end(tok); i < (size_t)end; i++) {
			if (!strchr(" \t\r", c->buf[i])) {
				json_object_put(obj);
				obj = NULL;
				break;
			}
		}
	}
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean)) {
		tfs_err_printf(err, errlen, "unexpected reply from %s: %.*s", c->path,
			end > 200 ? 200 : (int)end, c->buf);
		json_object_put(obj);
		obj = NULL;
		rc = TFS_E_PROTO;
		goto free_tok;
	}
	*reply = obj;
free_tok:
	json_tokener_free(tok);
consume:
	/* drop the line and its '\n' */
	memmove(c->buf, c->buf + end + 1, c->len - (size_t)end - 1);
	c->len -= (size_t)end + 1;
free_out:
	free(out);
	return rc;
}

void ctl_client_shutdown(struct ctl_client *c)
{
	if (c)
		shutdown(c->fd, SHUT_RDWR);
}

void ctl_client_free(struct ctl_client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}
