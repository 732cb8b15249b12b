/* cred_util.c - helpers of the credential sources (see cred_util.h). */
#include "s3/cred_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

struct cred_json {
	json_object *obj;
};

void cred_wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

int cred_read_file(const char *path, size_t max, char **out, size_t *out_len,
		   struct tfs_errinfo *ei)
{
	struct stat sb;
	char *buf = NULL;
	size_t got = 0;
	int fd, rc = TFS_E_INVAL;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return TFS_MISS;
		tfs_errinfo_set(ei, "cannot open %s: %s", path, strerror(errno));
		return TFS_E_INVAL;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > max) {
		tfs_errinfo_set(ei, "%s is not a regular file of at most %zu bytes", path, max);
		goto out;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			tfs_errinfo_set(ei, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	if (memchr(buf, '\0', got)) {
		tfs_errinfo_set(ei, "%s contains a NUL byte", path);
		goto out;
	}
	*out = buf;
	if (out_len)
		*out_len = got;
	buf = NULL;
	rc = TFS_OK;
out:
	if (buf) {
		explicit_bzero(buf, got);
		free(buf);
	}
	close(fd);
	return rc;
}

char *cred_trim(char *s)
{
	size_t n, i = 0;

	while (s[i] && isspace((unsigned char)s[i]))
		i++;
	n = strlen(s + i);
	memmove(s, s + i, n + 1);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static bool digits(const char **s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*s)[i]))
			return false;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*out = v;
	return true;
}

bool cred_parse_time(const char *s, int64_t *out_ms)
{
	int y, mo, d, h, mi, sec, ms = 0, oh = 0, om = 0, sign = 0;
	struct tm tm = { 0 };
	time_t t;

	if (!s || !digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) || *s++ != '-' ||
	    !digits(&s, 2, &d) || (*s != 'T' && *s != 't' && *s != ' '))
		return false;
	s++;
	if (!digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &mi) || *s++ != ':' ||
	    !digits(&s, 2, &sec))
		return false;
	if (*s == '.') {
		int scale = 100, n = 0;

		s++;
		while (isdigit((unsigned char)*s)) {
			if (n++ < 3) {
				ms += (*s - '0') * scale;
				scale /= 10;
			}
			s++;
		}
		if (n == 0)
			return false;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s == '+' ? 1 : -1;
		s++;
		if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om))
			return false;
	} else {
		return false;
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
	    oh > 23 || om > 59)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 && !(y == 1969 && mo == 12 && d == 31))
		return false;
	*out_ms = ((int64_t)t - sign * (int64_t)(oh * 3600 + om * 60)) * 1000 + ms;
	return true;
}

char *cred_form_encode(const char *const *pairs, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t cap = 1;
	char *out, *p;

	for (size_t i = 0; i < 2 * n; i++)
		cap += 3 * strlen(pairs[i]) + 2;
	out = p = malloc(cap);
	if (!out)
		return NULL;
	for (size_t i = 0; i < 2 * n; i++) {
		if (i)
			*p++ = i % 2 ? '=' : '&';
		for (const unsigned char *s = (const unsigned char *)pairs[i]; *s; s++) {
			if (isalnum(*s) || *s == '-' || *s == '.' || *s == '_' || *s == '~') {
				*p++ = (char)*s;
			} else {
				*p++ = '%';
				*p++ = hex[*s >> 4];
				*p++ = hex[*s & 15];
			}
		}
	}
	*p = '\0';
	return out;
}

void cred_err_prefix(struct tfs_errinfo *ei, const char *prefix)
{
	char old[sizeof(ei->message)];

	if (!ei)
		return;
	/* a copy first: formatting a buffer into itself is undefined */
	snprintf(old, sizeof(old), "%s", ei->message);
	tfs_errinfo_set(ei, "%s: %s", prefix, old);
}

char *cred_json_quote(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	char *out = malloc(6 * strlen(s) + 3), *o = out;

	if (!out)
		return NULL;
	*o++ = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			*o++ = '\\';
			*o++ = (char)*p;
		} else if (*p < 0x20) {
			memcpy(o, "\\u00", 4);
			o += 4;
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		} else {
			*o++ = (char)*p;
		}
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

struct cred_json *cred_json_parse(const char *text, size_t len, const char **why)
{
	struct json_tokener *tok;
	struct cred_json *j;
	json_object *o;

	*why = "not JSON";
	if (!text || len == 0 || len > CRED_FILE_MAX)
		return NULL;
	tok = json_tokener_new();
	if (!tok) {
		*why = "out of memory";
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		/* nothing but white space may follow the object */
		size_t used = json_tokener_get_parse_end(tok);

		while (used < len && isspace((unsigned char)text[used]))
			used++;
		if (used != len) {
			json_object_put(o);
			o = NULL;
		}
	} else if (o) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (!o)
		return NULL;
	if (!json_object_is_type(o, json_type_object)) {
		*why = "not a JSON object";
		json_object_put(o);
		return NULL;
	}
	j = malloc(sizeof(*j));
	if (!j) {
		*why = "out of memory";
		json_object_put(o);
		return NULL;
	}
	j->obj = o;
	return j;
}

const char *cred_json_str(const struct cred_json *j, const char *name)
{
	json_object *v;

	if (!json_object_object_get_ex(j->obj, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool cred_json_int(const struct cred_json *j, const char *name, int64_t *out)
{
	json_object *v;
	const char *s;
	char *end;
	long long n;

	if (!json_object_object_get_ex(j->obj, name, &v))
		return false;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (json_object_is_type(v, json_type_double)) {
		double dv = json_object_get_double(v);

		if (dv != dv || dv < -9e15 || dv > 9e15)
			return false;
		*out = (int64_t)dv;
		return true;
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = n;
	return true;
}

void cred_json_free(struct cred_json *j)
{
	if (!j)
		return;
	json_object_put(j->obj);
	free(j);
}
