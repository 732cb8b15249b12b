/* s3_creds.c - resolve S3 credentials from the environment or the shared
 * credentials file (see s3_creds.h for the order).
 *
 * The file is parsed with inih, whose Debian build has a fixed 200-byte
 * line buffer (INI_MAX_LINE, not configurable without touching the
 * library's globals), while an AWS session token alone is often over 1 KiB.
 * So inih reads through creds_reader(), which hands it each physical line
 * as it is when it fits, and otherwise in pieces: the first piece as is,
 * each further piece behind one space.  inih sees the indented pieces as
 * continuation lines (INI_ALLOW_MULTILINE) and calls the handler again for
 * the same name; the handler, told by the reader that the piece is a split
 * and not a real continuation, appends it verbatim.  Pieces are cut only
 * between two characters that inih would not strip or read as a comment,
 * so the value comes back byte for byte.
 *
 * Invariants: the file is bounded (CREDS_FILE_MAX) and so is each value
 * (CREDS_VALUE_MAX); every copy of a secret made here is wiped before it
 * is freed (file buffer, partial values, the result in s3_creds_free()).
 */
#include "s3/s3_creds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "s3/cred_util.h"

#define CREDS_FILE_MAX (1024 * 1024)
#define CREDS_VALUE_MAX 8192

enum line_kind { LINE_PLAIN, LINE_INDENTED, LINE_SPLIT };

enum creds_field { F_ACCESS, F_SECRET, F_TOKEN, F_COUNT };

static const char *const field_names[F_COUNT] = {
	"aws_access_key_id", "aws_secret_access_key", "aws_session_token",
};

struct creds_parse {
	/* reader state */
	const char *buf;
	size_t len, pos;         /* pos: start of the unread part */
	size_t line_end;         /* end of the current physical line */
	size_t content_end;      /* its end without an inline comment */
	bool splitting;          /* the rest of that line is still to come */
	int num;                 /* inih's buffer size, as last seen */
	bool reader_err;         /* a line could not be split safely */
	int line;                /* physical line of the piece last returned */
	int calls;               /* pieces returned so far (inih's line number) */
	enum line_kind kind;     /* what the piece last returned was */
	/* handler state */
	const char *profile;
	bool in_profile;         /* saw at least one key of the profile */
	char *val[F_COUNT];
	size_t val_len[F_COUNT];
	int last_field;          /* field the previous line of the profile set, or -1 */
	int err_line;            /* handler-detected error (physical line) */
	char err[160];
};

static void wipe_free(char *p, size_t n)
{
	if (!p)
		return;
	explicit_bzero(p, n);
	free(p);
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Can a line be cut between s[i-1] and s[i] without inih losing bytes? */
static bool can_cut(const char *s, size_t i)
{
	return !is_ws(s[i - 1]) && !is_ws(s[i]) && s[i] != ';' && s[i] != '#';
}

/* inih's fgets-style reader over st->buf (see the file comment). */
static char *creds_reader(char *str, int num, void *stream)
{
	struct creds_parse *st = stream;
	char *dst = str;
	size_t room, n, next;
	bool comment = false;

	if (num < 16 || st->reader_err)
		return NULL;
	room = (size_t)num - 2;   /* '\n' and NUL */
	if (!st->splitting) {
		const char *nl;
		size_t i = st->pos;

		if (st->pos >= st->len)
			return NULL;
		nl = memchr(st->buf + st->pos, '\n', st->len - st->pos);
		st->line_end = nl ? (size_t)(nl - st->buf) : st->len;
		st->line++;
		while (i < st->line_end && is_ws(st->buf[i]))
			i++;
		st->kind = i > st->pos && i < st->line_end ? LINE_INDENTED : LINE_PLAIN;
		comment = i < st->line_end && (st->buf[i] == ';' || st->buf[i] == '#');
		/* Drop an inline comment here, as inih would, so that no piece
		 * of it can come back as a continuation. */
		st->content_end = st->line_end;
		for (size_t j = st->pos + 1; !comment && j < st->line_end; j++) {
			if (st->buf[j] == ';' && is_ws(st->buf[j - 1])) {
				st->content_end = j;
				break;
			}
		}
	} else {
		st->kind = LINE_SPLIT;
		*dst++ = ' ';
		room--;
	}
	st->num = num;
	n = st->content_end - st->pos;
	next = st->line_end + 1;
	st->splitting = false;
	if (n > room && comment) {
		n = room;             /* an over-long comment: its start will do */
	} else if (n > room) {
		size_t cut = st->pos + room;

		while (cut > st->pos + room / 2 && !can_cut(st->buf, cut))
			cut--;
		if (cut == st->pos + room / 2) {
			st->reader_err = true;
			return NULL;
		}
		n = cut - st->pos;
		next = cut;
		st->splitting = true;
	}
	memcpy(dst, st->buf + st->pos, n);
	dst[n] = '\n';
	dst[n + 1] = '\0';
	st->pos = next < st->len ? next : st->len;
	st->calls++;
	return str;
}

static int field_set(struct creds_parse *st, int f, const char *v, bool append)
{
	size_t vl = strlen(v), old = append ? st->val_len[f] : 0;
	char *p;

	if (old + vl > CREDS_VALUE_MAX) {
		snprintf(st->err, sizeof(st->err), "value of %s too long", field_names[f]);
		return 0;
	}
	p = malloc(old + vl + 1);
	if (!p) {
		snprintf(st->err, sizeof(st->err), "out of memory");
		return 0;
	}
	if (old)
		memcpy(p, st->val[f], old);
	memcpy(p + old, v, vl + 1);
	wipe_free(st->val[f], st->val_len[f]);
	st->val[f] = p;
	st->val_len[f] = old + vl;
	return 1;
}

static int creds_handler(void *user, const char *section, const char *name,
			 const char *value)
{
	struct creds_parse *st = user;
	int f = -1;

	if (strcmp(section, st->profile) != 0) {
		st->last_field = -1;
		return 1;
	}
	st->in_profile = true;
	for (int i = 0; i < F_COUNT; i++)
		if (strcasecmp(name, field_names[i]) == 0)
			f = i;
	if (f < 0 && strcasecmp(name, "aws_security_token") == 0)
		f = F_TOKEN;   /* the older name of the same thing */
	if (st->kind == LINE_SPLIT) {
		if (f >= 0 && f == st->last_field)
			return field_set(st, f, value, true);
		return 1;      /* piece of a long line we do not care about */
	}
	if (st->kind == LINE_INDENTED && f >= 0 && f == st->last_field) {
		snprintf(st->err, sizeof(st->err), "continuation line in the value of %s",
			 field_names[f]);
		st->err_line = st->line;
		return 0;
	}
	st->last_field = f;
	if (f < 0)
		return 1;
	if (st->val[f]) {
		snprintf(st->err, sizeof(st->err), "%s set twice", field_names[f]);
		st->err_line = st->line;
		return 0;
	}
	if (!field_set(st, f, value, false)) {
		st->err_line = st->line;
		return 0;
	}
	return 1;
}

/* Physical line of inih's piece number `call` (replays the reader). */
static int physical_line(const char *buf, size_t len, int num, int call)
{
	struct creds_parse st = { .buf = buf, .len = len };
	char *piece = malloc((size_t)num);
	int line = 0;

	if (!piece)
		return 0;
	while (st.calls < call && creds_reader(piece, num, &st))
		;
	line = st.line;
	wipe_free(piece, (size_t)num);
	return line;
}

static int creds_new(const char *ak, const char *sk, const char *tok, const char *src,
		     struct s3_creds **out)
{
	struct s3_creds *c = calloc(1, sizeof(*c));

	if (!c)
		return TFS_E_NOMEM;
	c->access_key = strdup(ak);
	c->secret_key = strdup(sk);
	c->session_token = tok && *tok ? strdup(tok) : NULL;
	c->source = strdup(src);
	if (!c->access_key || !c->secret_key || !c->source || (tok && *tok && !c->session_token)) {
		s3_creds_free(c);
		return TFS_E_NOMEM;
	}
	*out = c;
	return TFS_OK;
}

static int from_file(const char *profile, bool explicit_profile, struct s3_creds **out,
		     struct tfs_errinfo *ei)
{
	struct creds_parse st = { .profile = profile, .last_field = -1 };
	char *path = NULL, *buf = NULL, source[512];
	const char *env = getenv("AWS_SHARED_CREDENTIALS_FILE");
	size_t len = 0;
	int rc, line;

	if (env && *env) {
		path = strdup(env);
	} else {
		const char *home = getenv("HOME");

		if (!home || !*home) {
			if (!explicit_profile)
				return TFS_MISS;
			tfs_errinfo_set(ei, "profile '%s' not found: HOME is not set and neither is "
			       "AWS_SHARED_CREDENTIALS_FILE", profile);
			return TFS_E_INVAL;
		}
		if (asprintf(&path, "%s/.aws/credentials", home) < 0)
			path = NULL;
	}
	if (!path)
		return TFS_E_NOMEM;

	rc = cred_read_file(path, CREDS_FILE_MAX, &buf, &len, ei);
	if (rc == TFS_MISS && explicit_profile) {
		tfs_errinfo_set(ei, "profile '%s' not found: %s does not exist", profile, path);
		rc = TFS_E_INVAL;
	}
	if (rc)
		goto out_path;

	st.buf = buf;
	st.len = len;
	line = ini_parse_stream(creds_reader, &st, creds_handler, &st);
	if (line == 0 && st.reader_err)
		line = -3;
	if (line != 0) {
		rc = TFS_E_INVAL;
		if (line == -2)
			rc = TFS_E_NOMEM;
		else if (st.err[0])
			tfs_errinfo_set(ei, "%s:%d: %s", path, st.err_line, st.err);
		else if (st.reader_err)
			tfs_errinfo_set(ei, "%s:%d: line too long", path, st.line);
		else
			tfs_errinfo_set(ei, "%s:%d: malformed line", path,
			       line > 0 && st.num > 0 ? physical_line(buf, len, st.num, line) : 0);
		goto out_vals;
	}
	if (!st.in_profile) {
		if (!explicit_profile) {
			rc = TFS_MISS;
			goto out_vals;
		}
		tfs_errinfo_set(ei, "profile '%s' not found in %s", profile, path);
		rc = TFS_E_INVAL;
		goto out_vals;
	}
	for (int f = F_ACCESS; f <= F_SECRET; f++) {
		if (!st.val[f] || !*st.val[f]) {
			tfs_errinfo_set(ei, "profile '%s' in %s has no %s", profile, path, field_names[f]);
			rc = TFS_E_INVAL;
			goto out_vals;
		}
	}
	snprintf(source, sizeof(source), "%s [%s]", path, profile);
	rc = creds_new(st.val[F_ACCESS], st.val[F_SECRET], st.val[F_TOKEN], source, out);
out_vals:
	for (int f = 0; f < F_COUNT; f++)
		wipe_free(st.val[f], st.val_len[f]);
	wipe_free(buf, len);
out_path:
	free(path);
	return rc;
}

int s3_creds_resolve(const char *profile, struct s3_creds **out, struct tfs_errinfo *ei)
{
	const char *ak, *sk, *env_profile;

	*out = NULL;
	tfs_errinfo_clear(ei);
	if (profile && *profile)
		return from_file(profile, true, out, ei);

	ak = getenv("AWS_ACCESS_KEY_ID");
	if (ak && *ak) {
		sk = getenv("AWS_SECRET_ACCESS_KEY");
		if (!sk || !*sk) {
			tfs_errinfo_set(ei, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
			return TFS_E_INVAL;
		}
		return creds_new(ak, sk, getenv("AWS_SESSION_TOKEN"), "environment", out);
	}
	env_profile = getenv("AWS_PROFILE");
	if (env_profile && *env_profile)
		return from_file(env_profile, true, out, ei);
	return from_file("default", false, out, ei);
}

void s3_creds_free(struct s3_creds *c)
{
	if (!c)
		return;
	if (c->access_key)
		wipe_free(c->access_key, strlen(c->access_key));
	if (c->secret_key)
		wipe_free(c->secret_key, strlen(c->secret_key));
	if (c->session_token)
		wipe_free(c->session_token, strlen(c->session_token));
	free(c->source);
	free(c);
}
