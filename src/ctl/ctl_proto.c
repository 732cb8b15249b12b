/* ctl_proto.c - request parsing and reply helpers (see ctl_proto.h). */
#include "ctl/ctl_proto.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/tfs_err.h"

static const struct {
	const char *name;
	enum ctl_cmd cmd;
} cmds[] = {
	{ "ping", CTL_PING },           { "stats", CTL_STATS },
	{ "warm", CTL_WARM },           { "pin", CTL_PIN },
	{ "unpin", CTL_UNPIN },         { "evict", CTL_EVICT },
	{ "residency", CTL_RESIDENCY }, { "trace_start", CTL_TRACE_START },
	{ "trace_stop", CTL_TRACE_STOP }, { "epoch", CTL_EPOCH },
	{ "config", CTL_CONFIG },       { "plan", CTL_PLAN },
};

bool ctl_path_ok(const char *p, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > TFS_PATH_MAX || p[0] == '/' || memchr(p, '\0', len))
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		if (i == start || (i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tfs_err_vprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Field name of obj as a string (NULL when absent); -1 when present and
 * not a string, or holding a NUL. */
static int field_string(struct json_object *obj, const char *name, const char **out, char *err,
			size_t errlen)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(obj, name, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, "\"%s\" must be a string", name);
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v))
		return fail(err, errlen, "\"%s\" holds a NUL character", name);
	return 0;
}

static int parse_tier(struct json_object *root, struct ctl_request *req, bool all_ok, char *err,
		      size_t errlen)
{
	const char *t;

	if (field_string(root, "tier", &t, err, errlen) < 0)
		return -1;
	if (!t)
		req->tier = CTL_TIER_DEFAULT;
	else if (strcmp(t, "ram") == 0)
		req->tier = CTL_TIER_RAM;
	else if (strcmp(t, "ssd") == 0)
		req->tier = CTL_TIER_SSD;
	else if (all_ok && strcmp(t, "all") == 0)
		req->tier = CTL_TIER_ALL;
	else
		return fail(err, errlen, "\"tier\" must be \"ram\"%s or \"ssd\"",
			    all_ok ? ", \"all\"" : "");
	return 0;
}

static int parse_paths(struct json_object *root, struct ctl_request *req, bool all_ok,
		       bool empty_ok, char *err, size_t errlen)
{
	struct json_object *v, *a;
	size_t n;

	if (all_ok && json_object_object_get_ex(root, "all", &a)) {
		if (!json_object_is_type(a, json_type_boolean))
			return fail(err, errlen, "\"all\" must be true or false");
		req->all = json_object_get_boolean(a);
	}
	if (!json_object_object_get_ex(root, "paths", &v)) {
		if (req->all)
			return 0;
		return fail(err, errlen, "\"paths\" is missing%s", all_ok ? " (or \"all\": true)" : "");
	}
	if (req->all)
		return fail(err, errlen, "\"paths\" and \"all\" exclude each other");
	if (!json_object_is_type(v, json_type_array))
		return fail(err, errlen, "\"paths\" must be an array of strings");
	n = json_object_array_length(v);
	if (n == 0 && !empty_ok)
		return fail(err, errlen, "\"paths\" is empty");
	if (n > CTL_PATHS_MAX)
		return fail(err, errlen, "%zu paths in one request: at most %u", n, CTL_PATHS_MAX);
	req->paths = calloc(n, sizeof(*req->paths));
	if (!req->paths)
		return fail(err, errlen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(v, i);

		if (!json_object_is_type(p, json_type_string))
			return fail(err, errlen, "paths[%zu] is not a string", i);
		if (!ctl_path_ok(json_object_get_string(p), (size_t)json_object_get_string_len(p)))
			return fail(err, errlen, "paths[%zu] is not a path below the mount root "
				    "(relative, no empty, \".\" or \"..\" parts, at most %d bytes)",
				    i, TFS_PATH_MAX);
		req->paths[i] = json_object_get_string(p);
	}
	req->n_paths = n;
	return 0;
}

static int field_bool(struct json_object *root, const char *name, bool *out, char *err,
		      size_t errlen)
{
	struct json_object *v;

	*out = false;
	if (!json_object_object_get_ex(root, name, &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return fail(err, errlen, "\"%s\" must be true or false", name);
	*out = json_object_get_boolean(v);
	return 0;
}

/* plan: {"clear":true}, or "paths" (a first part; empty only when it
 * appends), "append": the id of the plan being sent, "more": parts follow */
static int parse_plan(struct json_object *root, struct ctl_request *req, char *err,
		      size_t errlen)
{
	struct json_object *v;

	if (field_bool(root, "clear", &req->clear, err, errlen) < 0 ||
	    field_bool(root, "more", &req->more, err, errlen) < 0)
		return -1;
	if (json_object_object_get_ex(root, "append", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0)
			return fail(err, errlen, "\"append\" must be the id a plan's first part "
				    "was given (a positive integer)");
		req->append = (uint64_t)json_object_get_int64(v);
	}
	if (req->clear) {
		if (json_object_object_get_ex(root, "paths", &v) || req->append || req->more)
			return fail(err, errlen, "\"clear\" takes no \"paths\", \"append\" or "
				    "\"more\"");
		return 0;
	}
	return parse_paths(root, req, false, req->append != 0, err, errlen);
}

int ctl_request_parse(const char *line, size_t len, struct ctl_request *req, char *err,
		      size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	const char *cmd;
	size_t i;

	memset(req, 0, sizeof(*req));
	if (len > CTL_LINE_MAX)
		return fail(err, errlen, "request too long: %zu bytes, at most %u", len, CTL_LINE_MAX);
	tok = json_tokener_new();   /* depth 32: deeper nesting is an error */
	if (!tok)
		return fail(err, errlen, "out of memory");
	root = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue) {
		json_object_put(root);
		root = NULL;
	}
	if (root && json_tokener_get_parse_end(tok) != len) {
		/* only white space may follow the object */
		for (i = json_tokener_get_parse_end(tok); i < len; i++)
			if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
				break;
		if (i < len) {
			json_object_put(root);
			json_tokener_free(tok);
			return fail(err, errlen, "not one JSON object: text after it at byte %zu", i);
		}
	}
	json_tokener_free(tok);
	if (!root)
		return fail(err, errlen, "not JSON: %s",
			    jerr == json_tokener_continue ? "incomplete" : json_tokener_error_desc(jerr));
	req->root = root;
	if (!json_object_is_type(root, json_type_object)) {
		fail(err, errlen, "a request is a JSON object");
		goto bad;
	}
	if (field_string(root, "cmd", &cmd, err, errlen) < 0)
		goto bad;
	if (!cmd) {
		fail(err, errlen, "\"cmd\" is missing");
		goto bad;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmd, cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0])) {
		fail(err, errlen, "unknown command \"%.64s\"", cmd);
		goto bad;
	}
	req->cmd = cmds[i].cmd;
	switch (req->cmd) {
	case CTL_WARM:
		if (parse_tier(root, req, false, err, errlen) < 0 ||
		    field_string(root, "path", &req->path, err, errlen) < 0)
			goto bad;
		if (!req->path || !ctl_path_ok(req->path, strlen(req->path))) {
			fail(err, errlen, "\"path\" must be a file's path below the mount root");
			goto bad;
		}
		break;
	case CTL_PIN:
		if (parse_tier(root, req, false, err, errlen) < 0 ||
		    parse_paths(root, req, false, false, err, errlen) < 0)
			goto bad;
		break;
	case CTL_UNPIN:
		if (parse_paths(root, req, true, false, err, errlen) < 0)
			goto bad;
		break;
	case CTL_EVICT:
		if (parse_tier(root, req, true, err, errlen) < 0 ||
		    parse_paths(root, req, true, false, err, errlen) < 0)
			goto bad;
		break;
	case CTL_RESIDENCY:
		if (parse_paths(root, req, false, false, err, errlen) < 0)
			goto bad;
		break;
	case CTL_TRACE_START:
		if (field_string(root, "file", &req->file, err, errlen) < 0)
			goto bad;
		if (!req->file || req->file[0] != '/' || strlen(req->file) > 4095) {
			fail(err, errlen, "\"file\" must be an absolute path");
			goto bad;
		}
		break;
	case CTL_PLAN:
		if (parse_plan(root, req, err, errlen) < 0)
			goto bad;
		break;
	default:
		break;
	}
	return 0;
bad:
	ctl_request_release(req);
	return -1;
}

void ctl_request_release(struct ctl_request *req)
{
	free(req->paths);
	json_object_put(req->root);
	memset(req, 0, sizeof(*req));
}

struct json_object *ctl_reply_error(const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[1024];
	va_list ap;

	if (!o)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

struct json_object *ctl_reply_ok(void)
{
	struct json_object *o = json_object_new_object();

	if (o)
		json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}
