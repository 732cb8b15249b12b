/* tfs_err.c - text and errno for the tfs_err codes (see tfs_err.h). */
#include "common/tfs_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *tfs_strerror(int rc)
{
	switch (rc) {
	case TFS_OK: return "ok";
	case TFS_MISS: return "not cached";
	case TFS_AGAIN: return "try again";
	case TFS_E_NOENT: return "no such object";
	case TFS_E_ACCESS: return "access denied";
	case TFS_E_AUTH: return "credentials rejected";
	case TFS_E_STALE: return "object changed while open";
	case TFS_E_IO: return "I/O error";
	case TFS_E_NOMEM: return "out of memory";
	case TFS_E_INVAL: return "invalid argument";
	case TFS_E_CONNECT: return "endpoint unreachable";
	case TFS_E_PROTO: return "unexpected reply from the server";
	case TFS_E_RANGE: return "range not satisfiable";
	case TFS_E_NOSPC: return "no space left";
	case TFS_E_ROFS: return "read-only file system";
	case TFS_E_NOBUCKET: return "no such bucket";
	case TFS_E_TOOBIG: return "size limit exceeded";
	case TFS_E_ISDIR: return "is a directory";
	case TFS_E_NOTDIR: return "not a directory";
	case TFS_E_NAMETOOLONG: return "name too long";
	case TFS_E_INTR: return "cancelled";
	}
	return "unknown error";
}

int tfs_err_to_errno(int rc)
{
	if (rc >= 0)
		return 0;
	switch (rc) {
	case TFS_E_NOENT: return ENOENT;
	case TFS_E_NOBUCKET: return ENOENT;
	case TFS_E_ACCESS: return EACCES;
	case TFS_E_AUTH: return EACCES;
	case TFS_E_STALE: return ESTALE;
	case TFS_E_NOMEM: return ENOMEM;
	case TFS_E_INVAL: return EINVAL;
	case TFS_E_RANGE: return EINVAL;
	case TFS_E_NOSPC: return ENOSPC;
	case TFS_E_ROFS: return EROFS;
	case TFS_E_TOOBIG: return EFBIG;
	case TFS_E_ISDIR: return EISDIR;
	case TFS_E_NOTDIR: return ENOTDIR;
	case TFS_E_NAMETOOLONG: return ENAMETOOLONG;
	case TFS_E_INTR: return EINTR;
	default: return EIO;   /* IO, CONNECT, PROTO and anything unknown */
	}
}

void tfs_errinfo_clear(struct tfs_errinfo *ei)
{
	if (!ei)
		return;
	ei->http_status = 0;
	ei->code[0] = '\0';
	ei->message[0] = '\0';
}

void tfs_errinfo_set(struct tfs_errinfo *ei, const char *fmt, ...)
{
	va_list ap;

	if (!ei)
		return;
	va_start(ap, fmt);
	vsnprintf(ei->message, sizeof(ei->message), fmt, ap);
	va_end(ap);
}

void tfs_err_vprintf(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
}

void tfs_err_printf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tfs_err_vprintf(err, errlen, fmt, ap);
	va_end(ap);
}
