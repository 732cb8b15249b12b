/* cli_internal.h - the CLI's pure pieces (formatting, path arithmetic,
 * request batching), exposed for tests/unit/test_cli.c only.
 * All functions are thread-safe and allocate nothing unless stated.
 */
#ifndef TIERFS_CLI_INTERNAL_H
#define TIERFS_CLI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct json_object;

/* One file named by a request: its path relative to the mount root
 * (owned, malloc'd) and its size from stat (0 when not looked up). */
struct cli_file {
	char *rel;
	uint64_t size;
};

/* Batching bounds: a request line must stay under the daemon's 1 MiB;
 * residency takes at most 10000 paths per request. */
#define CLI_BATCH_BYTES (512u << 10)
#define CLI_RESIDENCY_BATCH 10000u

/* "0 B", "1023 B", "1.5 KiB", "10.0 MiB", ... "16.0 EiB" (binary units,
 * one decimal).  Truncated to cap. */
void cli_fmt_bytes(uint64_t n, char *buf, size_t cap);

/* "45.2s", "3m07s", "2h03m", "4d07h". */
void cli_fmt_duration(double seconds, char *buf, size_t cap);

/* The live progress line of warm: "1.2 GiB / 10.0 GiB  12/345 files
 * 250.0 MiB/s  ETA 0:36" (rate and ETA from the average since start). */
void cli_fmt_progress(char *buf, size_t cap, uint64_t bytes_done, uint64_t bytes_total,
		      size_t files_done, size_t files_total, double elapsed_s);

/* The path of canonical (an absolute canonical path) relative to
 * mount_root (the canonical path of a mount root): "" for the root
 * itself, "a/b" for mount_root/a/b.  TFS_OK, TFS_E_INVAL when canonical is
 * not at or below mount_root, TFS_E_NAMETOOLONG when it does not fit. */
int cli_rel_path(const char *mount_root, const char *canonical, char *buf, size_t cap);

/* The mount root of canonical (an existing absolute canonical path): the
 * last directory walking up from it before st_dev changes.  TFS_OK, or a
 * negative TFS_E_* with err set. */
int cli_mount_root(const char *canonical, char *buf, size_t cap, char *err, size_t errlen);

/* The user_id= of the FUSE mount at mount_root in the text of
 * /proc/self/mountinfo (the last such mount wins: it is the one on top).
 * true and *uid set when found. */
bool cli_mountinfo_owner(const char *mountinfo, const char *mount_root, uid_t *uid);

/* Bytes s takes as an element of a JSON array of strings as ctl_client
 * serializes it: quotes, escapes and a comma. */
size_t cli_json_str_cost(const char *s);

/* The end (exclusive) of the batch of files starting at start (< n): at
 * most max_paths files whose cli_json_str_cost() sum stays within
 * max_bytes, and always at least one file. */
size_t cli_batch_end(const struct cli_file *files, size_t start, size_t n, size_t max_paths,
		     size_t max_bytes);

/* One line of a plan file as a path relative to the mount: a relative
 * line as it is, an absolute one under mount_root (canonical) or
 * mount_arg (the MOUNT argument as typed; may be NULL) with that prefix
 * cut.  NULL when the result is not a path the daemon accepts
 * (ctl_path_ok) or an absolute line is under neither.  Points into line. */
const char *cli_plan_path(const char *mount_root, const char *mount_arg, const char *line);

/* A stats reply (docs/control.md) in the Prometheus text exposition
 * format, since-mount counters only.  0, or -1 when reply has no
 * "counters" object. */
int cli_stats_prometheus(FILE *out, struct json_object *reply);

/* A stats reply as the human table ("since mount" and, when the reply
 * has "epoch", "epoch N" columns).  mount names the mount in the title. */
void cli_stats_human(FILE *out, struct json_object *reply, const char *mount);

#endif
