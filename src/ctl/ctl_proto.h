/* ctl_proto.h - control socket requests: one JSON object per line, parsed
 * and checked here (see docs/control.md for the protocol).
 *
 * Everything a handler needs is validated before it runs: the command is
 * known, each field has its type, paths are relative and well formed,
 * lists are bounded.  A line that fails gets a one-line reason and the
 * daemon does nothing else.  No I/O; a fuzz target drives the parser.
 * Thread-safe (no shared state).
 */
#ifndef TIERFS_CTL_PROTO_H
#define TIERFS_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

#define CTL_LINE_MAX (1u << 20)   /* bytes of one request line, '\n' excluded */
#define CTL_PATHS_MAX 10000       /* paths in one request */

enum ctl_cmd {
	CTL_PING, CTL_STATS, CTL_WARM, CTL_PIN, CTL_UNPIN, CTL_EVICT, CTL_RESIDENCY,
	CTL_TRACE_START, CTL_TRACE_STOP, CTL_EPOCH, CTL_CONFIG, CTL_PLAN,
};

enum ctl_tier { CTL_TIER_DEFAULT, CTL_TIER_RAM, CTL_TIER_SSD, CTL_TIER_ALL };

struct ctl_request {
	enum ctl_cmd cmd;
	enum ctl_tier tier;        /* "tier", where the command takes one */
	bool all;                  /* "all": true (unpin, evict) */
	const char *path;          /* warm: one file */
	const char *file;          /* trace_start: an absolute path */
	const char **paths;        /* pin, unpin, evict, residency, plan: n_paths files */
	size_t n_paths;
	bool more, clear;          /* plan: parts follow; drop the plan */
	uint64_t append;           /* plan: the id of the plan these paths extend; 0 = a new one */
	struct json_object *root;  /* owns every string above */
};

/* Parse line[0..len) (no '\n') into *req.  0, or -1 with a reason in err
 * (and *req empty).  On 0, release *req with ctl_request_release(). */
int ctl_request_parse(const char *line, size_t len, struct ctl_request *req, char *err,
		      size_t errlen);
void ctl_request_release(struct ctl_request *req);

/* Is p a path the daemon accepts: relative, not empty, at most 4096
 * bytes, no NUL, no "", "." or ".." component. */
bool ctl_path_ok(const char *p, size_t len);

/* {"ok":false,"error":msg}: a new object (NULL on out of memory). */
struct json_object *ctl_reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"ok":true}: a new object to add fields to. */
struct json_object *ctl_reply_ok(void);

#endif
