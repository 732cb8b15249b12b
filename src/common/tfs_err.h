/* tfs_err.h - the one error type of tierfs.
 *
 * Every module returns an int that is either TFS_OK, a non-failure outcome
 * (> 0, e.g. TFS_MISS) or a failure (< 0).  The errno a FUSE reply carries
 * is chosen where the error is created (by picking the kind) and converted
 * once, at the FUSE edge, by tfs_err_to_errno().
 */
#ifndef TIERFS_TFS_ERR_H
#define TIERFS_TFS_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum tfs_err {
	TFS_OK = 0,
	TFS_MISS = 1,          /* a cache tier does not have it: not an error */
	TFS_AGAIN = 2,         /* try again later (e.g. in-flight) */

	TFS_E_NOENT = -1,      /* no such object/key/bucket (404) */
	TFS_E_ACCESS = -2,     /* refused by the server (403) */
	TFS_E_AUTH = -3,       /* credentials rejected (bad key id / signature) */
	TFS_E_STALE = -4,      /* object changed under an open file (412) */
	TFS_E_IO = -5,         /* transient failures persisted past retries */
	TFS_E_NOMEM = -6,
	TFS_E_INVAL = -7,      /* bad argument, malformed input or config */
	TFS_E_CONNECT = -8,    /* endpoint unreachable (DNS, refused, TLS) */
	TFS_E_PROTO = -9,      /* server answered something we cannot parse */
	TFS_E_RANGE = -10,     /* range not satisfiable (416) */
	TFS_E_NOSPC = -11,
	TFS_E_ROFS = -12,      /* write attempted on the read-only tree */
	TFS_E_NOBUCKET = -13,  /* the bucket does not exist */
	TFS_E_TOOBIG = -14,    /* a bound was hit (body larger than buffer...) */
	TFS_E_ISDIR = -15,
	TFS_E_NOTDIR = -16,
	TFS_E_NAMETOOLONG = -17,
	TFS_E_INTR = -18,      /* cancelled by the one who asked */
};

/* Short human text for rc (static storage, never NULL).  Thread-safe. */
const char *tfs_strerror(int rc);

/* The positive errno for a failure rc (EIO for anything unknown, 0 for
 * TFS_OK and non-failure outcomes).  Called only at the FUSE edge. */
int tfs_err_to_errno(int rc);

/* Extra detail about a failure, filled by callees that take one (may be
 * NULL).  Never holds secrets: only status, the server's error code and
 * its message text. */
struct tfs_errinfo {
	int http_status;       /* 0 when no HTTP response was received */
	char code[64];         /* e.g. "NoSuchBucket", or "" */
	char message[256];     /* server message or transport error text */
};

/* Reset ei (if not NULL) to "no detail". */
void tfs_errinfo_clear(struct tfs_errinfo *ei);

/* Format ei->message (if ei is not NULL), truncated to fit; the status
 * and code fields are left as they are.  Never pass secrets. */
void tfs_errinfo_set(struct tfs_errinfo *ei, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Format a message into the caller's buffer err (errlen bytes, truncated;
 * nothing when err is NULL or errlen 0), as functions that report "what
 * went wrong" for a person do.  Never pass secrets. */
void tfs_err_printf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void tfs_err_vprintf(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
