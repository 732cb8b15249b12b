/* cli.c - the control commands (see cli.h; the protocol is docs/control.md).
 *
 * Every command: parse options, find the mount (the canonical path of an
 * argument, walked up to where st_dev changes), find its socket (--socket,
 * TIERFS_SOCKET, the documented path, and as root the mount owner's
 * directories), send requests, print.  Requests name files by their path
 * relative to the mount root; directories are expanded here by walking the
 * mounted tree (symlinks skipped, at most CLI_DEPTH_MAX levels and
 * CLI_FILES_MAX files).  One mount per command.
 *
 * warm: up to --jobs threads, each with its own connection, take files from
 * a shared index one at a time.  The main thread blocks SIGINT/SIGTERM and
 * waits for them with sigtimedwait(), which is also its progress clock; on
 * a signal it stops handing out files and shuts every connection down, so
 * the daemon abandons the chunk in hand.  No signal handler, no global.
 */
#include "ctl/cli.h"
#include "ctl/cli_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/counters.h"
#include "common/tfs_err.h"
#include "ctl/ctl_client.h"
#include "ctl/ctl_path.h"
#include "ctl/ctl_proto.h"

#define CLI_DEPTH_MAX 64
#define CLI_FILES_MAX (16u << 20)
#define CLI_JOBS_MAX 32            /* the daemon serves 32 connections */
#define CLI_JOBS_DEFAULT 8
#define CLI_MOUNTINFO_MAX (4u << 20)
#define CLI_WATCH_MAX 86400.0

/* ---- formatting (pure) ---- */

void cli_fmt_bytes(uint64_t n, char *buf, size_t cap)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)n);
		return;
	}
	/* 1023.96 KiB would print as "1024.0 KiB": move up a unit instead */
	while (u < 5 && v >= 1023.95) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
}

void cli_fmt_duration(double s, char *buf, size_t cap)
{
	unsigned long long t;

	if (!(s >= 0))
		s = 0;
	if (s < 60) {
		snprintf(buf, cap, "%.1fs", s);
		return;
	}
	t = (unsigned long long)s;
	if (t < 3600)
		snprintf(buf, cap, "%llum%02llus", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, cap, "%lluh%02llum", t / 3600, t / 60 % 60);
	else
		snprintf(buf, cap, "%llud%02lluh", t / 86400, t / 3600 % 24);
}

static void fmt_eta(double s, char *buf, size_t cap)
{
	unsigned long long t;

	if (!(s >= 0) || s > 360000.0) {
		snprintf(buf, cap, "--:--");
		return;
	}
	t = (unsigned long long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, cap, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, cap, "%llu:%02llu", t / 60, t % 60);
}

void cli_fmt_progress(char *buf, size_t cap, uint64_t bytes_done, uint64_t bytes_total,
		      size_t files_done, size_t files_total, double elapsed_s)
{
	char done[32], total[32], eta[32];
	double rate = elapsed_s > 0 ? (double)bytes_done / elapsed_s : 0;

	cli_fmt_bytes(bytes_done, done, sizeof(done));
	cli_fmt_bytes(bytes_total, total, sizeof(total));
	if (bytes_done >= bytes_total)
		snprintf(eta, sizeof(eta), "0:00");
	else if (rate > 0)
		fmt_eta((double)(bytes_total - bytes_done) / rate, eta, sizeof(eta));
	else
		fmt_eta(-1, eta, sizeof(eta));
	snprintf(buf, cap, "%s / %s  %zu/%zu files  %.1f MiB/s  ETA %s", done, total,
		 files_done, files_total, rate / 1048576.0, eta);
}

/* A path for a message or a table: control bytes and backslashes escaped
 * so that a name with a newline cannot forge a line. */
static const char *fmt_path(const char *s, char *buf, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\')
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

/* ---- paths and mounts ---- */

int cli_rel_path(const char *mount_root, const char *canonical, char *buf, size_t cap)
{
	size_t rl = strlen(mount_root), n;
	const char *rest;

	if (canonical[0] != '/' || mount_root[0] != '/')
		return TFS_E_INVAL;
	if (strcmp(mount_root, "/") == 0) {
		rest = canonical + 1;
	} else {
		if (strncmp(canonical, mount_root, rl) != 0)
			return TFS_E_INVAL;
		if (canonical[rl] == '\0')
			rest = "";
		else if (canonical[rl] == '/')
			rest = canonical + rl + 1;
		else
			return TFS_E_INVAL;
	}
	n = strlen(rest);
	if (n >= cap)
		return TFS_E_NAMETOOLONG;
	memcpy(buf, rest, n + 1);
	return TFS_OK;
}

int cli_mount_root(const char *canonical, char *buf, size_t cap, char *err, size_t errlen)
{
	char cur[PATH_MAX], parent[PATH_MAX];
	struct stat st, pst;
	size_t n = strlen(canonical);

	if (canonical[0] != '/' || n >= sizeof(cur)) {
		snprintf(err, errlen, "%s: not an absolute path", canonical);
		return TFS_E_INVAL;
	}
	memcpy(cur, canonical, n + 1);
	if (stat(cur, &st) != 0) {
		snprintf(err, errlen, "%s: %s", canonical, strerror(errno));
		return errno == ENOENT ? TFS_E_NOENT : TFS_E_IO;
	}
	while (strcmp(cur, "/") != 0) {
		char *slash = strrchr(cur, '/');
		size_t pl = slash == cur ? 1 : (size_t)(slash - cur);

		memcpy(parent, cur, pl);
		parent[pl] = '\0';
		if (stat(parent, &pst) != 0) {
			snprintf(err, errlen, "%s: %s", parent, strerror(errno));
			return TFS_E_IO;
		}
		if (pst.st_dev != st.st_dev)
			break;
		memcpy(cur, parent, pl + 1);
	}
	if (strlen(cur) >= cap) {
		snprintf(err, errlen, "%s: name too long", cur);
		return TFS_E_NAMETOOLONG;
	}
	memcpy(buf, cur, strlen(cur) + 1);
	return TFS_OK;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void mountinfo_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

bool cli_mountinfo_owner(const char *mountinfo, const char *mount_root, uid_t *uid)
{
	const char *line = mountinfo;
	bool found = false;

	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char copy[8192], *field[64], *save = NULL, *t;
		int nf = 0, dash = -1;

		if (len < sizeof(copy)) {
			memcpy(copy, line, len);
			copy[len] = '\0';
			for (t = strtok_r(copy, " ", &save); t && nf < 64; t = strtok_r(NULL, " ", &save)) {
				if (dash < 0 && nf >= 6 && strcmp(t, "-") == 0)
					dash = nf;
				field[nf++] = t;
			}
		}
		if (dash > 0 && dash + 3 < nf &&
		    (strcmp(field[dash + 1], "fuse") == 0 || strncmp(field[dash + 1], "fuse.", 5) == 0 ||
		     strcmp(field[dash + 1], "fuseblk") == 0)) {
			mountinfo_unescape(field[4]);
			if (strcmp(field[4], mount_root) == 0) {
				char *o = field[dash + 3], *tok, *s2 = NULL;

				for (tok = strtok_r(o, ",", &s2); tok; tok = strtok_r(NULL, ",", &s2)) {
					char *end;
					unsigned long v;

					if (strncmp(tok, "user_id=", 8) != 0)
						continue;
					errno = 0;
					v = strtoul(tok + 8, &end, 10);
					if (errno == 0 && *end == '\0' && end != tok + 8 && v < UINT_MAX) {
						*uid = (uid_t)v;
						found = true;
					}
				}
			}
		}
		line += len + (eol ? 1 : 0);
	}
	return found;
}

/* ---- batching (pure) ---- */

size_t cli_json_str_cost(const char *s)
{
	size_t cost = 3;   /* two quotes and a comma */

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' ||
		    c == '\t')
			cost += 2;
		else if (c < 0x20)
			cost += 6;   /* \u00XX */
		else
			cost += 1;
	}
	return cost;
}

size_t cli_batch_end(const struct cli_file *files, size_t start, size_t n, size_t max_paths,
		     size_t max_bytes)
{
	size_t i = start, bytes = 0;

	while (i < n && i - start < max_paths) {
		size_t c = cli_json_str_cost(files[i].rel);

		if (i > start && bytes + c > max_bytes)
			break;
		bytes += c;
		i++;
	}
	return i;
}

const char *cli_plan_path(const char *mount_root, const char *mount_arg, const char *line)
{
	const char *const roots[] = { mount_root, mount_arg };
	const char *rel = NULL;

	if (line[0] != '/') {
		rel = line;
	} else {
		for (size_t i = 0; i < 2 && !rel; i++) {
			size_t n = roots[i] ? strlen(roots[i]) : 0;

			while (n > 1 && roots[i][n - 1] == '/')
				n--;
			if (n > 0 && roots[i][0] == '/' && strncmp(line, roots[i], n) == 0 &&
			    (n == 1 ? true : line[n] == '/'))
				rel = line + n + (n == 1 ? 0 : 1);
		}
	}
	return rel && ctl_path_ok(rel, strlen(rel)) ? rel : NULL;
}

/* ---- JSON helpers ---- */

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static bool jnum(struct json_object *v)
{
	return v && (json_object_is_type(v, json_type_int) ||
		     json_object_is_type(v, json_type_double) ||
		     json_object_is_type(v, json_type_boolean));
}

static uint64_t ju64(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	if (!jnum(v))
		return 0;
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		return d > 0 ? (uint64_t)d : 0;
	}
	return json_object_get_uint64(v);
}

static double jdbl(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return jnum(v) ? json_object_get_double(v) : 0;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool reply_ok(struct json_object *reply)
{
	struct json_object *ok = jget(reply, "ok");

	return ok && json_object_get_boolean(ok);
}

static const char *reply_error(struct json_object *reply)
{
	const char *e = jstr(reply, "error");

	return e ? e : "the daemon refused the request without saying why";
}

/* ---- Prometheus ---- */

/* A sample value: integers exactly, doubles (and scaled values) as %.9g. */
static void prom_value(FILE *out, struct json_object *v, double scale)
{
	if (json_object_is_type(v, json_type_boolean))
		fprintf(out, "%d", json_object_get_boolean(v) ? 1 : 0);
	else if (json_object_is_type(v, json_type_double) || scale != 1.0)
		fprintf(out, "%.9g", json_object_get_double(v) * scale);
	else if (json_object_get_int64(v) < 0)
		fprintf(out, "%lld", (long long)json_object_get_int64(v));
	else
		fprintf(out, "%llu", (unsigned long long)json_object_get_uint64(v));
}

struct prom_family {
	const char *name;          /* after "tierfs_" */
	const char *type;
	const char *help;
	bool *printed;             /* HELP/TYPE written */
};

static void prom_sample(FILE *out, struct prom_family *f, const char *labels,
			struct json_object *v, double scale)
{
	if (!jnum(v))
		return;
	if (!*f->printed) {
		fprintf(out, "# HELP tierfs_%s %s\n# TYPE tierfs_%s %s\n", f->name, f->help, f->name,
			f->type);
		*f->printed = true;
	}
	fprintf(out, "tierfs_%s%s ", f->name, labels ? labels : "");
	prom_value(out, v, scale);
	fputc('\n', out);
}

static const char *prom_type(enum tfs_counter_kind kind)
{
	return kind == TFS_CK_COUNT ? "counter" : "gauge";
}

/* The store's latency (milliseconds in the JSON): a summary in seconds,
 * and its largest value. */
static void prom_latency(FILE *out, struct json_object *lat)
{
	static const struct {
		const char *key, *labels;
	} q[] = { { "p50", "{quantile=\"0.5\"}" }, { "p90", "{quantile=\"0.9\"}" },
		  { "p99", "{quantile=\"0.99\"}" } };
	bool printed = false;
	struct prom_family f = { "s3_latency_seconds", "summary",
				 "Latency of object store requests.", &printed };

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		prom_sample(out, &f, q[i].labels, jget(lat, q[i].key), 0.001);
	f.name = "s3_latency_seconds_count";   /* part of the summary: no HELP/TYPE */
	prom_sample(out, &f, NULL, jget(lat, "count"), 1);
	printed = false;
	f = (struct prom_family){ "s3_latency_max_seconds", "gauge",
				  "Longest object store request latency.", &printed };
	prom_sample(out, &f, NULL, jget(lat, "max"), 0.001);
}

int cli_stats_prometheus(FILE *out, struct json_object *reply)
{
	struct json_object *c = jget(reply, "counters");
	bool printed = false;

	if (!c || !json_object_is_type(c, json_type_object))
		return -1;
	{
		struct prom_family f = { "uptime_seconds", "gauge", "Seconds since the mount.",
					 &printed };
		prom_sample(out, &f, NULL, jget(reply, "uptime_s"), 1);
	}
	/* a family per tier counter, a sample per tier */
	for (size_t m = 0; m < TFS_TIER_COUNTER_N; m++) {
		const struct tfs_counter_info *in = &tfs_tier_counter_info[m];
		struct prom_family f = { in->prom, prom_type(in->kind), in->help, &printed };

		printed = false;
		for (size_t t = 0; t < TFS_TIER_N; t++) {
			char labels[32];

			snprintf(labels, sizeof(labels), "{tier=\"%s\"}", tfs_tier_names[t]);
			prom_sample(out, &f, labels, jget(jget(c, tfs_tier_names[t]), in->name), 1);
		}
	}
	/* the others: entries of one family follow each other */
	for (size_t m = 0; m < TFS_COUNTER_N; m++) {
		const struct tfs_counter_info *in = &tfs_counter_info[m];
		struct prom_family f = { in->prom, prom_type(in->kind), in->help, &printed };

		if (m == 0 || strcmp(tfs_counter_info[m - 1].prom, in->prom) != 0)
			printed = false;
		prom_sample(out, &f, in->prom_labels, jget(jget(c, in->section), in->name), 1);
	}
	prom_latency(out, jget(jget(c, "s3"), "latency_ms"));
	return 0;
}

/* ---- human stats table ---- */

#define TBL_ROWS 32
#define TBL_COLS 5
#define TBL_CELL 40

struct tbl {
	char cell[TBL_ROWS][TBL_COLS][TBL_CELL];
	int rows;
	int cols;
};

static int tbl_row(struct tbl *t, const char *label)
{
	int r = t->rows;

	if (r >= TBL_ROWS)
		r = TBL_ROWS - 1;   /* never: the layouts below are fixed */
	else
		t->rows++;
	for (int c = 0; c < TBL_COLS; c++)
		t->cell[r][c][0] = '\0';
	snprintf(t->cell[r][0], TBL_CELL, "%s", label);
	return r;
}

/* Column 0 is at least label_w wide, so that tables printed one after
 * the other line up. */
static void tbl_print(FILE *out, const struct tbl *t, size_t label_w)
{
	size_t w[TBL_COLS] = { label_w };

	for (int r = 0; r < t->rows; r++)
		for (int c = 0; c < t->cols; c++)
			if (strlen(t->cell[r][c]) > w[c])
				w[c] = strlen(t->cell[r][c]);
	for (int r = 0; r < t->rows; r++) {
		int last = t->cols - 1;

		while (last > 0 && !t->cell[r][last][0])
			last--;   /* no trailing blanks */
		fprintf(out, "%-*s", last ? (int)w[0] : 0, t->cell[r][0]);
		for (int c = 1; c <= last; c++)
			fprintf(out, "  %*s", (int)w[c], t->cell[r][c]);
		fputc('\n', out);
	}
}

enum cell_kind { CELL_COUNT, CELL_BYTES, CELL_RATIO, CELL_BOOL, CELL_MS };

static void cell_fmt(char *buf, size_t cap, enum cell_kind kind, struct json_object *o,
		     const char *key)
{
	if (!o) {
		snprintf(buf, cap, "-");
		return;
	}
	switch (kind) {
	case CELL_COUNT:
		if (!jnum(jget(o, key)))
			snprintf(buf, cap, "-");
		else
			snprintf(buf, cap, "%llu", (unsigned long long)ju64(o, key));
		break;
	case CELL_BYTES:
		if (!jnum(jget(o, key)))
			snprintf(buf, cap, "-");
		else
			cli_fmt_bytes(ju64(o, key), buf, cap);
		break;
	case CELL_RATIO: {
		uint64_t h = ju64(o, "hits"), m = ju64(o, "misses");

		if (h + m == 0)
			snprintf(buf, cap, "-");
		else
			snprintf(buf, cap, "%.1f%%", 100.0 * (double)h / (double)(h + m));
		break;
	}
	case CELL_BOOL:
		snprintf(buf, cap, "%s", ju64(o, key) ? "yes" : "no");
		break;
	case CELL_MS:
		if (!jnum(jget(o, key)))
			snprintf(buf, cap, "-");
		else
			snprintf(buf, cap, "%.1f ms", jdbl(o, key));
		break;
	}
}

/* The format of a counter's cell: its unit's. */
static enum cell_kind cell_of(enum tfs_counter_unit u)
{
	return u == TFS_CU_BYTES ? CELL_BYTES : u == TFS_CU_BOOL ? CELL_BOOL : CELL_COUNT;
}

/* One counter's row: the since-mount column and, for a count while an
 * epoch runs, the epoch's (a state is the same in both: shown once). */
static void tbl_counter_row(struct tbl *t, int col0, int nper, struct json_object *const *cols,
			    const char *section, const struct tfs_counter_info *in)
{
	int r = tbl_row(t, in->label);

	for (int p = 0; p < (in->kind == TFS_CK_STATE ? 1 : nper); p++)
		cell_fmt(t->cell[r][col0 + p], TBL_CELL, cell_of(in->unit), jget(cols[p], section),
			 in->name);
}

void cli_stats_human(FILE *out, struct json_object *reply, const char *mount)
{
	/* latency percentiles: states of now, shown in the since-mount column */
	static const struct {
		const char *label, *key;
	} latency_rows[] = {
		{ "s3 latency p50", "p50" }, { "s3 latency p90", "p90" }, { "s3 latency p99", "p99" },
	};
	struct json_object *since = jget(reply, "counters");
	struct json_object *ep = jget(reply, "epoch");
	struct json_object *epc = jget(ep, "counters");
	struct json_object *cols[2];
	const char *tiers[TFS_TIER_N];
	int ntiers = 0, nper = epc ? 2 : 1, r;
	struct tbl *t;
	char up[32], age[32], epname[32];

	cli_fmt_duration(jdbl(reply, "uptime_s"), up, sizeof(up));
	fprintf(out, "%s: up %s", mount, up);
	if (epc) {
		cli_fmt_duration(jdbl(ep, "age_s"), age, sizeof(age));
		fprintf(out, ", epoch %llu started %s ago", (unsigned long long)ju64(ep, "number"),
			age);
	}
	fputs("\n\n", out);
	snprintf(epname, sizeof(epname), "epoch %llu", (unsigned long long)ju64(ep, "number"));
	cols[0] = since;
	cols[1] = epc;
	for (int i = 0; i < TFS_TIER_N; i++)
		if (jget(since, tfs_tier_names[i]))
			tiers[ntiers++] = tfs_tier_names[i];

	t = calloc(1, sizeof(*t));
	if (!t) {
		fputs("(out of memory)\n", out);
		return;
	}
	if (ntiers > 0) {
		t->cols = 1 + ntiers * nper;
		r = tbl_row(t, "");
		for (int i = 0; i < ntiers; i++)
			snprintf(t->cell[r][1 + i * nper], TBL_CELL, "%s", tiers[i]);
		if (epc) {
			r = tbl_row(t, "");
			for (int i = 0; i < ntiers; i++) {
				snprintf(t->cell[r][1 + i * nper], TBL_CELL, "since mount");
				snprintf(t->cell[r][2 + i * nper], TBL_CELL, "%s", epname);
			}
		}
		for (size_t k = 0; k < TFS_TIER_COUNTER_N; k++) {
			const struct tfs_counter_info *in = &tfs_tier_counter_info[k];

			if (!in->label)
				continue;
			r = tbl_row(t, in->label);
			for (int i = 0; i < ntiers; i++)
				for (int p = 0; p < (in->kind == TFS_CK_STATE ? 1 : nper); p++)
					cell_fmt(t->cell[r][1 + i * nper + p], TBL_CELL,
						 cell_of(in->unit), jget(cols[p], tiers[i]), in->name);
			if (k == TFS_TC_misses) {   /* derived from the two above */
				r = tbl_row(t, "hit ratio");
				for (int i = 0; i < ntiers; i++)
					for (int p = 0; p < nper; p++)
						cell_fmt(t->cell[r][1 + i * nper + p], TBL_CELL,
							 CELL_RATIO, jget(cols[p], tiers[i]), NULL);
			}
		}
		tbl_print(out, t, 18);
		fputc('\n', out);
	}

	memset(t, 0, sizeof(*t));
	t->cols = 1 + nper;
	r = tbl_row(t, "");
	snprintf(t->cell[r][1], TBL_CELL, "since mount");
	if (epc)
		snprintf(t->cell[r][2], TBL_CELL, "%s", epname);
	for (size_t k = 0; k < TFS_COUNTER_N; k++)
		if (tfs_counter_info[k].label)
			tbl_counter_row(t, 1, nper, cols, tfs_counter_info[k].section,
					&tfs_counter_info[k]);
	for (size_t k = 0; k < sizeof(latency_rows) / sizeof(latency_rows[0]); k++) {
		r = tbl_row(t, latency_rows[k].label);
		cell_fmt(t->cell[r][1], TBL_CELL, CELL_MS, jget(jget(since, "s3"), "latency_ms"),
			 latency_rows[k].key);
	}
	tbl_print(out, t, 18);
	free(t);

	if (jget(since, "fs") || jget(since, "pins")) {
		struct json_object *pins = jget(since, "pins");
		char a[32], b[32];

		cli_fmt_bytes(ju64(pins, "ram_bytes"), a, sizeof(a));
		cli_fmt_bytes(ju64(pins, "ssd_bytes"), b, sizeof(b));
		fprintf(out, "\nopen files %llu, pinned %llu files (ram %s, ssd %s)\n",
			(unsigned long long)ju64(jget(since, "fs"), "open_files"),
			(unsigned long long)ju64(pins, "files"), a, b);
	}
}

/* ---- options ---- */

enum {
	OPT_TIER = 1 << 0,
	OPT_JOBS = 1 << 1,
	OPT_JSON = 1 << 2,
	OPT_PROM = 1 << 3,
	OPT_WATCH = 1 << 4,
	OPT_ALL = 1 << 5,
	OPT_COUNT = 1 << 6,
	OPT_CLEAR = 1 << 7,
};

struct cli_opts {
	const char *socket;        /* --socket, else TIERFS_SOCKET, else NULL */
	const char *tier;          /* --tier, validated by the command */
	unsigned jobs;
	double watch_s;            /* 0: once */
	bool json, prometheus, all, count, clear;
	char **pos;                /* positional arguments (point into argv) */
	int npos;
};

struct cli_cmd;
typedef int cli_run_fn(const struct cli_cmd *cmd, struct cli_opts *o);

struct cli_cmd {
	const char *name;
	unsigned opts;             /* OPT_* accepted (--socket always is) */
	cli_run_fn *run;
	const char *usage;
};

__attribute__((format(printf, 2, 3)))
static int usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("tierfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s\n", cmd->usage);
	return 2;
}

/* "--name VALUE" or "--name=VALUE": the value, advancing *i; NULL if arg
 * is not this option.  *missing is set when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/* Parse argv (the arguments after the command).  0, 2 (usage error
 * printed), or -1 for --help. */
static int opts_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_opts *o)
{
	bool only_pos = false;

	memset(o, 0, sizeof(*o));
	o->jobs = CLI_JOBS_DEFAULT;
	o->pos = calloc((size_t)argc + 1, sizeof(*o->pos));
	if (!o->pos) {
		fprintf(stderr, "tierfs: out of memory\n");
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false;

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			o->pos[o->npos++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return -1;
		} else if ((v = opt_value(argc, argv, &i, "--socket", &missing))) {
			o->socket = v;
		} else if ((cmd->opts & OPT_TIER) && (v = opt_value(argc, argv, &i, "--tier", &missing))) {
			o->tier = v;
		} else if ((cmd->opts & OPT_JOBS) && (v = opt_value(argc, argv, &i, "--jobs", &missing))) {
			char *end;
			unsigned long j;

			errno = 0;
			j = strtoul(v, &end, 10);
			if (errno || *end || end == v || j < 1 || j > CLI_JOBS_MAX)
				return usage_error(cmd, "--jobs must be 1 to %d (the daemon serves "
						   "%d connections)", CLI_JOBS_MAX, CLI_JOBS_MAX);
			o->jobs = (unsigned)j;
		} else if ((cmd->opts & OPT_WATCH) &&
			   (v = opt_value(argc, argv, &i, "--watch", &missing))) {
			char *end;

			errno = 0;
			o->watch_s = strtod(v, &end);
			if (errno || *end || end == v || !(o->watch_s >= 0.1) ||
			    o->watch_s > CLI_WATCH_MAX)
				return usage_error(cmd, "--watch needs SECONDS, 0.1 to %.0f",
						   CLI_WATCH_MAX);
		} else if ((cmd->opts & OPT_JSON) && strcmp(a, "--json") == 0) {
			o->json = true;
		} else if ((cmd->opts & OPT_PROM) && strcmp(a, "--prometheus") == 0) {
			o->prometheus = true;
		} else if ((cmd->opts & OPT_ALL) && strcmp(a, "--all") == 0) {
			o->all = true;
		} else if ((cmd->opts & OPT_COUNT) && strcmp(a, "--count") == 0) {
			o->count = true;
		} else if ((cmd->opts & OPT_CLEAR) && strcmp(a, "--clear") == 0) {
			o->clear = true;
		} else if (missing) {
			return usage_error(cmd, "option %s needs a value", a);
		} else {
			return usage_error(cmd, "unknown option '%s'", a);
		}
		if (missing)
			return usage_error(cmd, "option %s needs a value", a);
	}
	if (!o->socket) {
		const char *env = getenv("TIERFS_SOCKET");

		if (env && env[0])
			o->socket = env;
	}
	return 0;
}

/* ---- the mount and its socket ---- */

struct cli_mount {
	char root[PATH_MAX];       /* canonical mount root; "" until known */
	dev_t dev;
	bool have_dev;             /* false when root could not be stat'ed (EACCES) */
	char sock[CTL_PATH_SUN_MAX];
	char tried[600];           /* other socket paths looked at, for the message */
};

/* At most max bytes of a file, NUL-terminated (malloc'd), or NULL. */
static char *read_bounded(const char *path, size_t max)
{
	size_t len = 0, cap = 65536;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t n;

		if (len == cap) {
			char *nb = cap >= max ? NULL : realloc(buf, cap * 2 + 1);

			if (!nb)
				break;   /* keep what fits: the bound */
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* Whose mount it is: the user_id= of the FUSE mount (the daemon's uid,
 * whatever --uid shows files as), else the root directory's owner. */
static bool mount_owner(const struct cli_mount *m, uid_t *uid)
{
	char *mi = read_bounded("/proc/self/mountinfo", CLI_MOUNTINFO_MAX);
	bool found = mi && cli_mountinfo_owner(mi, m->root, uid);
	struct stat st;

	free(mi);
	if (!found && stat(m->root, &st) == 0) {
		*uid = st.st_uid;
		found = true;
	}
	return found;
}

static bool is_socket(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* m->sock from --socket/TIERFS_SOCKET or the documented places.  0, or 1
 * with a message printed. */
static int mount_find_socket(const struct cli_opts *o, struct cli_mount *m)
{
	char err[600], dir[PATH_MAX], cand[CTL_PATH_SUN_MAX];
	uid_t owner;
	int rc;

	m->tried[0] = '\0';
	if (o->socket) {
		if (strlen(o->socket) >= sizeof(m->sock)) {
			fprintf(stderr, "tierfs: socket path %s is longer than a Unix socket "
				"allows (%d bytes)\n", o->socket, CTL_PATH_SUN_MAX - 1);
			return 1;
		}
		snprintf(m->sock, sizeof(m->sock), "%s", o->socket);
		return 0;
	}
	rc = ctl_path_socket(m->root, geteuid(), false, m->sock, sizeof(m->sock), err,
			     sizeof(err));
	if (rc != TFS_OK) {
		fprintf(stderr, "tierfs: %s\n", err);
		return 1;
	}
	if (geteuid() != 0 || is_socket(m->sock) || !mount_owner(m, &owner) || owner == 0)
		return 0;
	/* root against another user's mount: that user's directories */
	for (int k = 0; k < 2; k++) {
		size_t tl = strlen(m->tried);

		if (k == 0)
			snprintf(dir, sizeof(dir), "/run/user/%u/tierfs", (unsigned)owner);
		else
			snprintf(dir, sizeof(dir), "/tmp/tierfs-%u", (unsigned)owner);
		if (ctl_path_socket_in(dir, m->root, cand, sizeof(cand), NULL, 0) != TFS_OK)
			continue;
		snprintf(m->tried + tl, sizeof(m->tried) - tl, ", %s", cand);
		rc = ctl_path_dir_check(dir, owner, err, sizeof(err));
		if (rc == TFS_E_ACCESS)
			fprintf(stderr, "tierfs: warning: %s\n", err);
		if (rc == TFS_OK && is_socket(cand)) {
			memcpy(m->sock, cand, sizeof(cand));
			return 0;
		}
	}
	return 0;
}

/* The mount of the canonical path canon: m->root and m->dev.  0 or 1. */
static int mount_set(struct cli_mount *m, const char *canon)
{
	char err[PATH_MAX + 100];
	struct stat st;

	if (cli_mount_root(canon, m->root, sizeof(m->root), err, sizeof(err)) != TFS_OK) {
		fprintf(stderr, "tierfs: %s\n", err);
		m->root[0] = '\0';
		return 1;
	}
	m->have_dev = stat(m->root, &st) == 0;
	m->dev = m->have_dev ? st.st_dev : 0;
	return 0;
}

/* Canonicalize arg into canon (PATH_MAX).  When a FUSE mount of another
 * user is closed to us (no allow_other: EACCES even for root), arg may
 * still name the mountpoint itself: the parent is canonicalized and the
 * result accepted if mountinfo lists a FUSE mount there.  0, or 1 with a
 * message printed. */
static int canonicalize(const char *arg, char *canon, bool *closed)
{
	char tmp[PATH_MAX], parent[PATH_MAX], *slash;
	const char *dir, *base;
	size_t n;
	int e;

	*closed = false;
	if (realpath(arg, canon))
		return 0;
	e = errno;
	if (e == EACCES && strlen(arg) < sizeof(tmp)) {
		char *mi;
		uid_t uid;
		bool found;

		snprintf(tmp, sizeof(tmp), "%s", arg);
		n = strlen(tmp);
		while (n > 1 && tmp[n - 1] == '/')
			tmp[--n] = '\0';
		slash = strrchr(tmp, '/');
		if (!slash) {
			dir = ".";
			base = tmp;
		} else if (slash == tmp) {
			dir = "/";
			base = tmp + 1;
		} else {
			*slash = '\0';
			dir = tmp;
			base = slash + 1;
		}
		if (base[0] && strcmp(base, ".") != 0 && strcmp(base, "..") != 0 &&
		    realpath(dir, parent) &&
		    snprintf(canon, PATH_MAX, "%s%s%s", parent, strcmp(parent, "/") == 0 ? "" : "/",
			     base) < PATH_MAX) {
			mi = read_bounded("/proc/self/mountinfo", CLI_MOUNTINFO_MAX);
			found = mi && cli_mountinfo_owner(mi, canon, &uid);
			free(mi);
			if (found) {
				*closed = true;
				return 0;
			}
		}
		fprintf(stderr, "tierfs: %s: %s (a FUSE mount is closed to other users, root "
			"included, unless mounted with -o allow_other)\n", arg, strerror(e));
		return 1;
	}
	fprintf(stderr, "tierfs: %s: %s\n", arg, strerror(e));
	return 1;
}

/* The mount named by a MOUNT argument (any path in it) and its socket. */
static int mount_open(const struct cli_opts *o, const char *arg, struct cli_mount *m)
{
	char canon[PATH_MAX];
	bool closed;

	memset(m, 0, sizeof(*m));
	if (canonicalize(arg, canon, &closed) != 0)
		return 1;
	if (closed) {
		snprintf(m->root, sizeof(m->root), "%s", canon);
		m->have_dev = false;
	} else if (mount_set(m, canon) != 0) {
		return 1;
	}
	return mount_find_socket(o, m);
}

/* 0 with *out connected, or 1 with the reason printed. */
static int cli_connect(const struct cli_mount *m, struct ctl_client **out)
{
	char err[512];
	int rc = ctl_client_connect(m->sock, out, err, sizeof(err));

	if (rc == TFS_OK)
		return 0;
	if (rc == TFS_E_NOENT)
		fprintf(stderr, "tierfs: no tierfs control socket for %s at %s: is it mounted "
			"with tierfs?\n", m->root, m->sock);
	else
		fprintf(stderr, "tierfs: cannot reach the control socket of %s: %s\n", m->root, err);
	if (rc == TFS_E_NOENT && m->tried[0])
		fprintf(stderr, "tierfs: also looked at%s\n", m->tried + 1);
	return 1;
}

/* Send req (consumed) and wait for a reply with "ok": true.  0 with
 * *reply (caller puts it), or 1 with the transport error or the daemon's
 * error printed. */
static int cli_call(struct ctl_client *c, struct json_object *req, struct json_object **reply)
{
	char err[512];
	int rc;

	*reply = NULL;
	if (!req) {
		fprintf(stderr, "tierfs: out of memory\n");
		return 1;
	}
	rc = ctl_client_call(c, req, reply, err, sizeof(err));
	json_object_put(req);
	if (rc != TFS_OK) {
		fprintf(stderr, "tierfs: %s\n", err);
		return 1;
	}
	if (!reply_ok(*reply)) {
		fprintf(stderr, "tierfs: %s\n", reply_error(*reply));
		json_object_put(*reply);
		*reply = NULL;
		return 1;
	}
	return 0;
}

/* {"cmd":name} plus optional tier.  NULL when out of memory. */
static struct json_object *req_new(const char *name, const char *tier)
{
	struct json_object *req = json_object_new_object();

	if (!req)
		return NULL;
	if (json_object_object_add(req, "cmd", json_object_new_string(name)) != 0 ||
	    (tier && json_object_object_add(req, "tier", json_object_new_string(tier)) != 0)) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

/* ---- file lists ---- */

struct cli_files {
	struct cli_file *v;
	size_t n, cap;
};

static void files_release(struct cli_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].rel);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

/* 0, or 1 with a message printed (fatal: out of memory, too many). */
static int files_add(struct cli_files *f, const char *rel, uint64_t size)
{
	if (f->n == CLI_FILES_MAX) {
		fprintf(stderr, "tierfs: more than %u files: name fewer at a time\n", CLI_FILES_MAX);
		return 1;
	}
	if (f->n == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 256;
		struct cli_file *nv = realloc(f->v, ncap * sizeof(*nv));

		if (!nv)
			goto nomem;
		f->v = nv;
		f->cap = ncap;
	}
	f->v[f->n].rel = strdup(rel);
	if (!f->v[f->n].rel)
		goto nomem;
	f->v[f->n].size = size;
	f->n++;
	return 0;
nomem:
	fprintf(stderr, "tierfs: out of memory listing files\n");
	return 1;
}

/* A directory walk: path holds the directory being read. */
struct walk {
	const struct cli_mount *m;
	struct cli_files *files;
	size_t rel_off;            /* where the relative path starts in path */
	unsigned errors;
	bool fatal;
	char path[PATH_MAX];
};

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

static void walk_dir(struct walk *w, size_t len, unsigned depth)
{
	char pbuf[600];
	struct dirent **ents = NULL;
	int n = scandir(w->path, &ents, not_dots, name_cmp);

	if (n < 0) {
		fprintf(stderr, "tierfs: %s: %s\n", fmt_path(w->path, pbuf, sizeof(pbuf)),
			strerror(errno));
		w->errors++;
		return;
	}
	for (int i = 0; i < n; i++) {
		size_t nl = strlen(ents[i]->d_name);
		unsigned char type = ents[i]->d_type;
		struct stat st;
		bool have_st = false;

		if (w->fatal)
			break;
		if (len + 1 + nl >= sizeof(w->path)) {
			fprintf(stderr, "tierfs: %s/%s: path too long, skipped\n",
				fmt_path(w->path, pbuf, sizeof(pbuf)), ents[i]->d_name);
			w->errors++;
			continue;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, ents[i]->d_name, nl + 1);
		if (type == DT_UNKNOWN || type == DT_REG) {
			if (lstat(w->path, &st) != 0) {
				fprintf(stderr, "tierfs: %s: %s\n",
					fmt_path(w->path, pbuf, sizeof(pbuf)), strerror(errno));
				w->errors++;
				continue;
			}
			have_st = true;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
			       : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
		}
		if (type == DT_DIR) {
			if (depth + 1 >= CLI_DEPTH_MAX) {
				fprintf(stderr, "tierfs: %s: deeper than %d levels, skipped\n",
					fmt_path(w->path, pbuf, sizeof(pbuf)), CLI_DEPTH_MAX);
				w->errors++;
				continue;
			}
			walk_dir(w, len + 1 + nl, depth + 1);
		} else if (type == DT_REG && have_st) {
			if (files_add(w->files, w->path + w->rel_off, (uint64_t)st.st_size) != 0)
				w->fatal = true;
		}
		/* symlinks and special files: skipped */
	}
	w->path[len] = '\0';
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
}

/* Expand o->pos[first..] into files below one mount, setting m (and its
 * socket) from the first path that resolves.  0 (*errors counts paths
 * that could not be listed, each reported), or 1 on a fatal error. */
static int cli_expand(const struct cli_opts *o, int first, struct cli_mount *m,
		      struct cli_files *out, unsigned *errors)
{
	struct walk *w = NULL;
	char pbuf[600];
	int rc = 1;

	memset(m, 0, sizeof(*m));
	*errors = 0;
	w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "tierfs: out of memory\n");
		return 1;
	}
	w->m = m;
	w->files = out;
	for (int i = first; i < o->npos; i++) {
		char canon[PATH_MAX], rel[PATH_MAX];
		struct stat st;
		bool closed;

		if (canonicalize(o->pos[i], canon, &closed) != 0) {
			(*errors)++;
			continue;
		}
		if (closed || stat(canon, &st) != 0) {
			fprintf(stderr, "tierfs: %s: %s\n", fmt_path(o->pos[i], pbuf, sizeof(pbuf)),
				closed ? strerror(EACCES) : strerror(errno));
			(*errors)++;
			continue;
		}
		if (!m->root[0]) {
			if (mount_set(m, canon) != 0)
				goto free_walk;
			if (mount_find_socket(o, m) != 0)
				goto free_walk;
		}
		if ((m->have_dev && st.st_dev != m->dev) ||
		    cli_rel_path(m->root, canon, rel, sizeof(rel)) != TFS_OK) {
			fprintf(stderr, "tierfs: %s is not on the mount %s (one mount per command)\n",
				fmt_path(o->pos[i], pbuf, sizeof(pbuf)), m->root);
			(*errors)++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			memcpy(w->path, canon, strlen(canon) + 1);
			w->rel_off = strcmp(m->root, "/") == 0 ? 1 : strlen(m->root) + 1;
			/* the root itself: its entries start right after "/" */
			walk_dir(w, strcmp(canon, "/") == 0 ? 0 : strlen(canon), 0);
			if (w->fatal)
				goto free_walk;
		} else if (S_ISREG(st.st_mode)) {
			if (files_add(out, rel, (uint64_t)st.st_size) != 0)
				goto free_walk;
		} else {
			fprintf(stderr, "tierfs: %s: not a regular file or directory, skipped\n",
				fmt_path(o->pos[i], pbuf, sizeof(pbuf)));
		}
	}
	if (!m->root[0]) {
		fprintf(stderr, "tierfs: none of the paths given could be resolved\n");
		goto free_walk;
	}
	*errors += w->errors;
	rc = 0;
free_walk:
	free(w);
	return rc;
}

/* root/rel for messages, escaped. */
static const char *full_path(const char *root, const char *rel, char *buf, size_t cap)
{
	char tmp[PATH_MAX * 2];

	snprintf(tmp, sizeof(tmp), "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", rel);
	return fmt_path(tmp, buf, cap);
}

/* ---- warm ---- */

struct warm_run {
	const char *root;
	const struct cli_file *files;
	size_t nfiles;
	const char *tier;          /* NULL: the daemon's default */
	atomic_size_t next;        /* next file to hand out */
	atomic_bool cancel;
	atomic_uint_fast64_t bytes_done;
	atomic_uint_fast64_t bytes_fetched;
	atomic_size_t files_done;
	atomic_size_t files_failed;
	atomic_uint running;       /* workers not yet finished */
	pthread_mutex_t out_lock;  /* stderr lines vs the live progress line */
	bool tty;
	bool line_shown;           /* a progress line is on the terminal (out_lock) */
};

struct warm_worker {
	struct warm_run *run;
	struct ctl_client *conn;
	pthread_t th;
	bool started;
};

__attribute__((format(printf, 2, 3)))
static void warm_report(struct warm_run *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->out_lock);
	if (r->line_shown) {
		fputs("\r\033[K", stderr);
		r->line_shown = false;
	}
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&r->out_lock);
}

static void *warm_worker_run(void *arg)
{
	struct warm_worker *w = arg;
	struct warm_run *r = w->run;
	char err[512], pbuf[600];

	while (!atomic_load(&r->cancel)) {
		size_t i = atomic_fetch_add(&r->next, 1);
		struct json_object *req, *reply = NULL;
		int rc;

		if (i >= r->nfiles)
			break;
		req = req_new("warm", r->tier);
		if (!req || json_object_object_add(req, "path",
						   json_object_new_string(r->files[i].rel)) != 0) {
			json_object_put(req);
			atomic_fetch_add(&r->files_failed, 1);
			warm_report(r, "tierfs: warm: out of memory\n");
			break;
		}
		rc = ctl_client_call(w->conn, req, &reply, err, sizeof(err));
		json_object_put(req);
		if (rc != TFS_OK) {
			if (atomic_load(&r->cancel))
				break;
			/* the connection is unusable: this worker stops, the others go on */
			atomic_fetch_add(&r->files_failed, 1);
			warm_report(r, "tierfs: warm %s: %s\n",
				    full_path(r->root, r->files[i].rel, pbuf, sizeof(pbuf)), err);
			break;
		}
		if (reply_ok(reply)) {
			atomic_fetch_add(&r->bytes_done, r->files[i].size);
			atomic_fetch_add(&r->bytes_fetched, ju64(reply, "bytes_fetched"));
			atomic_fetch_add(&r->files_done, 1);
		} else {
			atomic_fetch_add(&r->files_failed, 1);
			warm_report(r, "tierfs: warm %s: %s\n",
				    full_path(r->root, r->files[i].rel, pbuf, sizeof(pbuf)),
				    reply_error(reply));
		}
		json_object_put(reply);
	}
	atomic_fetch_sub(&r->running, 1);
	return NULL;
}

static void warm_progress(struct warm_run *r, uint64_t total, double elapsed)
{
	char line[256];

	cli_fmt_progress(line, sizeof(line), atomic_load(&r->bytes_done), total,
			 atomic_load(&r->files_done), r->nfiles, elapsed);
	pthread_mutex_lock(&r->out_lock);
	if (r->tty) {
		fprintf(stderr, "\r%s\033[K", line);
		r->line_shown = true;
	} else {
		fprintf(stderr, "%s\n", line);
	}
	fflush(stderr);
	pthread_mutex_unlock(&r->out_lock);
}

/* Open up to want connections, each answering a ping (a busy daemon
 * answers "busy" and closes).  Returns how many; 0 means the error was
 * printed. */
static unsigned warm_connect(const struct cli_mount *m, struct warm_worker *wk, unsigned want)
{
	unsigned k;

	for (k = 0; k < want; k++) {
		struct json_object *req, *reply = NULL;
		char err[512];
		int rc;

		if (k == 0) {
			if (cli_connect(m, &wk[k].conn) != 0)
				return 0;
		} else if (ctl_client_connect(m->sock, &wk[k].conn, err, sizeof(err)) != TFS_OK) {
			fprintf(stderr, "tierfs: warning: %s: warming with %u connections\n", err, k);
			break;
		}
		req = req_new("ping", NULL);
		rc = req ? ctl_client_call(wk[k].conn, req, &reply, err, sizeof(err)) : TFS_E_NOMEM;
		json_object_put(req);
		if (rc == TFS_E_NOMEM)
			snprintf(err, sizeof(err), "out of memory");
		if (rc == TFS_OK && !reply_ok(reply)) {
			snprintf(err, sizeof(err), "%s", reply_error(reply));
			rc = TFS_E_IO;
		}
		json_object_put(reply);
		if (rc != TFS_OK) {
			ctl_client_free(wk[k].conn);
			wk[k].conn = NULL;
			if (k == 0) {
				fprintf(stderr, "tierfs: %s\n", err);
				return 0;
			}
			fprintf(stderr, "tierfs: warning: %s: warming with %u connections\n", err, k);
			break;
		}
	}
	return k;
}

/* Warm files with up to jobs connections; prints progress and a summary.
 * Returns the exit status (0, 1, 130 when cancelled). */
static int warm_files(const struct cli_mount *m, const struct cli_file *files, size_t n,
		      const char *tier, unsigned jobs)
{
	struct warm_run r = { .root = m->root, .files = files, .nfiles = n, .tier = tier };
	struct warm_worker *wk = NULL;
	const struct timespec tick = { 0, 200 * 1000 * 1000 };
	sigset_t set, old;
	uint64_t total = 0;
	double start, last = 0, el;
	char a[32], b[32], c[32], d[32];
	bool cancelled = false;
	unsigned nconn, started = 0;
	size_t done, failed;
	int status = 1;

	for (size_t i = 0; i < n; i++)
		total += files[i].size;
	if (n == 0) {
		printf("nothing to warm\n");
		return 0;
	}
	wk = calloc(jobs, sizeof(*wk));
	if (!wk) {
		fprintf(stderr, "tierfs: out of memory\n");
		return 1;
	}
	nconn = warm_connect(m, wk, (size_t)jobs < n ? jobs : (unsigned)n);
	if (nconn == 0)
		goto free_conns;
	pthread_mutex_init(&r.out_lock, NULL);
	r.tty = isatty(STDERR_FILENO);
	atomic_init(&r.next, 0);
	atomic_init(&r.cancel, false);
	atomic_init(&r.bytes_done, 0);
	atomic_init(&r.bytes_fetched, 0);
	atomic_init(&r.files_done, 0);
	atomic_init(&r.files_failed, 0);
	atomic_init(&r.running, nconn);

	/* blocked before the workers exist, so only sigtimedwait() sees them */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	start = clock_mono_s();
	for (unsigned k = 0; k < nconn; k++) {
		wk[k].run = &r;
		wk[k].started = pthread_create(&wk[k].th, NULL, warm_worker_run, &wk[k]) == 0;
		if (wk[k].started)
			started++;
		else
			atomic_fetch_sub(&r.running, 1);
	}
	if (started == 0)
		fprintf(stderr, "tierfs: cannot start warming threads\n");
	while (atomic_load(&r.running) > 0) {
		int sig = sigtimedwait(&set, NULL, &tick);

		if (sig == SIGINT || sig == SIGTERM) {
			cancelled = true;
			atomic_store(&r.cancel, true);
			for (unsigned k = 0; k < nconn; k++)
				ctl_client_shutdown(wk[k].conn);
			break;
		}
		el = clock_mono_s() - start;
		if (r.tty || el - last >= 2.0) {
			warm_progress(&r, total, el);
			last = el;
		}
	}
	for (unsigned k = 0; k < nconn; k++)
		if (wk[k].started)
			pthread_join(wk[k].th, NULL);
	/* a second Ctrl-C is pending: consume it, do not die of it on unblocking */
	{
		const struct timespec zero = { 0, 0 };

		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	el = clock_mono_s() - start;
	if (r.line_shown)
		fputs("\r\033[K", stderr);
	done = atomic_load(&r.files_done);
	failed = atomic_load(&r.files_failed);
	cli_fmt_bytes(atomic_load(&r.bytes_done), a, sizeof(a));
	cli_fmt_bytes(atomic_load(&r.bytes_fetched), b, sizeof(b));
	cli_fmt_duration(el, c, sizeof(c));
	cli_fmt_bytes(total, d, sizeof(d));
	printf("%swarmed %zu of %zu files, %s of %s (%s fetched) in %s, %.1f MiB/s",
	       cancelled ? "cancelled: " : "", done, n, a, d, b, c,
	       el > 0 ? (double)atomic_load(&r.bytes_done) / el / 1048576.0 : 0.0);
	if (failed)
		printf(", %zu failed", failed);
	printf("\n");
	fflush(stdout);
	status = cancelled ? 130 : (done == n ? 0 : 1);
	pthread_mutex_destroy(&r.out_lock);
free_conns:
	for (unsigned k = 0; k < jobs; k++)
		ctl_client_free(wk[k].conn);
	free(wk);
	return status;
}

static bool tier_valid(const char *t, bool all_ok)
{
	return strcmp(t, "ram") == 0 || strcmp(t, "ssd") == 0 || (all_ok && strcmp(t, "all") == 0);
}

static int cmd_warm(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct cli_files files = { 0 };
	struct cli_mount m;
	unsigned errors;
	int status;

	if (o->npos < 1)
		return usage_error(cmd, "warm needs at least one PATH");
	if (o->tier && !tier_valid(o->tier, false))
		return usage_error(cmd, "--tier must be ram or ssd");
	if (cli_expand(o, 0, &m, &files, &errors) != 0) {
		files_release(&files);
		return 1;
	}
	status = warm_files(&m, files.v, files.n, o->tier, o->jobs);
	files_release(&files);
	return status == 0 && errors ? 1 : status;
}

/* Add files[start..end) as "paths" to req.  0 or -1 (out of memory). */
static int req_add_paths(struct json_object *req, const struct cli_file *files, size_t start,
			 size_t end)
{
	struct json_object *arr = json_object_new_array_ext((int)(end - start));

	if (!arr)
		return -1;
	for (size_t i = start; i < end; i++) {
		struct json_object *s = json_object_new_string(files[i].rel);

		if (!s || json_object_array_add(arr, s) != 0) {
			json_object_put(s);
			json_object_put(arr);
			return -1;
		}
	}
	if (json_object_object_add(req, "paths", arr) != 0) {
		json_object_put(arr);
		return -1;
	}
	return 0;
}

/* The tier the daemon uses by default: ssd when it has one. */
static int default_tier(struct ctl_client *c, const char **tier)
{
	struct json_object *reply;

	if (cli_call(c, req_new("stats", NULL), &reply) != 0)
		return 1;
	*tier = jget(jget(reply, "counters"), "ssd") ? "ssd" : "ram";
	json_object_put(reply);
	return 0;
}

static int cmd_pin(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct cli_files files = { 0 };
	struct ctl_client *c = NULL;
	struct cli_mount m;
	unsigned errors;
	uint64_t nfiles = 0, bytes = 0, pinned = 0, limit = 0;
	char a[32], b[32], d[32];
	int status = 1;

	if (o->npos < 1)
		return usage_error(cmd, "pin needs at least one PATH");
	if (o->tier && !tier_valid(o->tier, false))
		return usage_error(cmd, "--tier must be ram or ssd");
	if (cli_expand(o, 0, &m, &files, &errors) != 0)
		goto release;
	if (errors) {
		fprintf(stderr, "tierfs: nothing pinned\n");
		goto release;
	}
	if (files.n == 0) {
		printf("no files to pin\n");
		status = 0;
		goto release;
	}
	if (cli_connect(&m, &c) != 0)
		goto release;
	if (!o->tier && default_tier(c, &o->tier) != 0)
		goto disconnect;
	/* One request is all-or-nothing; a list too long for one line goes in
	 * several, and a refusal of a later one leaves the earlier pinned. */
	for (size_t start = 0; start < files.n;) {
		size_t end = cli_batch_end(files.v, start, files.n, SIZE_MAX, CLI_BATCH_BYTES);
		struct json_object *req = req_new("pin", o->tier), *reply;

		if (req && req_add_paths(req, files.v, start, end) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (cli_call(c, req, &reply) != 0) {
			if (start > 0)
				fprintf(stderr, "tierfs: the %zu files were pinned in several requests "
					"(too many for one): the first %zu stay pinned (tierfs unpin "
					"undoes it)\n", files.n, start);
			goto disconnect;
		}
		nfiles += ju64(reply, "files");
		bytes += ju64(reply, "bytes");
		pinned = ju64(reply, "pinned_bytes");
		limit = ju64(reply, "limit");
		json_object_put(reply);
		start = end;
	}
	cli_fmt_bytes(bytes, a, sizeof(a));
	cli_fmt_bytes(pinned, b, sizeof(b));
	cli_fmt_bytes(limit, d, sizeof(d));
	printf("pinned %llu files (%s) in %s: %s pinned of a %s limit\n",
	       (unsigned long long)nfiles, a, o->tier, b, d);
	fflush(stdout);
	ctl_client_free(c);
	c = NULL;
	status = warm_files(&m, files.v, files.n, o->tier, o->jobs);
disconnect:
	ctl_client_free(c);
release:
	files_release(&files);
	return status;
}

/* unpin and evict: paths in batches, or --all MOUNT.  Sums the numeric
 * fields of the replies into sums[] (keys[] names them). */
static int paths_or_all(const struct cli_cmd *cmd, struct cli_opts *o, const char *tier,
			const char *const *keys, uint64_t *sums, size_t nkeys, struct cli_mount *m)
{
	struct cli_files files = { 0 };
	struct ctl_client *c = NULL;
	unsigned errors = 0;
	int status = 1;

	if (o->all) {
		struct json_object *req, *reply;

		if (o->npos != 1)
			return usage_error(cmd, "--all takes exactly one MOUNT");
		if (mount_open(o, o->pos[0], m) != 0 || cli_connect(m, &c) != 0)
			goto release;
		req = req_new(cmd->name, tier);
		if (req && json_object_object_add(req, "all", json_object_new_boolean(1)) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (cli_call(c, req, &reply) != 0)
			goto disconnect;
		for (size_t k = 0; k < nkeys; k++)
			sums[k] += ju64(reply, keys[k]);
		json_object_put(reply);
		status = 0;
		goto disconnect;
	}
	if (o->npos < 1)
		return usage_error(cmd, "%s needs PATHs or --all MOUNT", cmd->name);
	if (cli_expand(o, 0, m, &files, &errors) != 0)
		goto release;
	if (files.n > 0 && cli_connect(m, &c) != 0)
		goto release;
	for (size_t start = 0; start < files.n;) {
		size_t end = cli_batch_end(files.v, start, files.n, SIZE_MAX, CLI_BATCH_BYTES);
		struct json_object *req = req_new(cmd->name, tier), *reply;

		if (req && req_add_paths(req, files.v, start, end) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (cli_call(c, req, &reply) != 0)
			goto disconnect;
		for (size_t k = 0; k < nkeys; k++)
			sums[k] += ju64(reply, keys[k]);
		json_object_put(reply);
		start = end;
	}
	status = errors ? 1 : 0;
disconnect:
	ctl_client_free(c);
release:
	files_release(&files);
	return status;
}

static int cmd_unpin(const struct cli_cmd *cmd, struct cli_opts *o)
{
	static const char *const keys[] = { "files" };
	uint64_t sums[1] = { 0 };
	struct cli_mount m;
	int status = paths_or_all(cmd, o, NULL, keys, sums, 1, &m);

	if (status <= 1 && (status == 0 || sums[0]))
		printf("unpinned %llu files\n", (unsigned long long)sums[0]);
	return status;
}

static int cmd_evict(const struct cli_cmd *cmd, struct cli_opts *o)
{
	static const char *const keys[] = { "chunks", "bytes", "skipped_pinned" };
	uint64_t sums[3] = { 0 };
	struct cli_mount m;
	char a[32];
	int status;

	if (o->tier && !tier_valid(o->tier, true))
		return usage_error(cmd, "--tier must be ram, ssd or all");
	status = paths_or_all(cmd, o, o->tier, keys, sums, 3, &m);
	if (status <= 1 && (status == 0 || sums[0] || sums[2])) {
		cli_fmt_bytes(sums[1], a, sizeof(a));
		printf("evicted %llu chunks (%s), skipped_pinned %llu\n",
		       (unsigned long long)sums[0], a, (unsigned long long)sums[2]);
	}
	return status;
}

/* ---- residency ---- */

struct res_totals {
	uint64_t files, size, ram, ssd, errors;
};

static void res_print_file(const struct cli_opts *o, const struct cli_mount *m,
			   struct json_object *f, struct res_totals *tot)
{
	const char *path = jstr(f, "path"), *err = jstr(f, "error"), *pin = jstr(f, "pinned");
	uint64_t size = ju64(f, "size"), ram = ju64(f, "ram"), ssd = ju64(f, "ssd");
	char pbuf[PATH_MAX], sz[32], rp[16], sp[16];

	if (err || !path) {
		tot->errors++;
		fprintf(stderr, "tierfs: %s: %s\n",
			full_path(m->root, path ? path : "?", pbuf, sizeof(pbuf)),
			err ? err : "no path in the reply");
		if (!o->json || o->count)
			return;
	} else {
		tot->files++;
		tot->size += size;
		tot->ram += ram;
		tot->ssd += ssd;
	}
	if (o->count)
		return;
	if (o->json) {
		puts(json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	cli_fmt_bytes(size, sz, sizeof(sz));
	if (size == 0) {
		snprintf(rp, sizeof(rp), "-");
		snprintf(sp, sizeof(sp), "-");
	} else {
		snprintf(rp, sizeof(rp), "%.1f%%", 100.0 * (double)ram / (double)size);
		snprintf(sp, sizeof(sp), "%.1f%%", 100.0 * (double)ssd / (double)size);
	}
	printf("%6s  %6s  %10s  %-3s  %s\n", rp, sp, sz, pin ? pin : "-",
	       full_path(m->root, path, pbuf, sizeof(pbuf)));
}

static int cmd_residency(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct cli_files files = { 0 };
	struct ctl_client *c = NULL;
	struct res_totals tot = { 0 };
	struct cli_mount m;
	unsigned errors;
	int status = 1;

	if (o->npos < 1)
		return usage_error(cmd, "residency needs at least one PATH");
	if (cli_expand(o, 0, &m, &files, &errors) != 0)
		goto release;
	if (files.n > 0 && cli_connect(&m, &c) != 0)
		goto release;
	if (!o->json && !o->count && files.n > 0)
		printf("%6s  %6s  %10s  %-3s  %s\n", "ram", "ssd", "size", "pin", "path");
	for (size_t start = 0; start < files.n;) {
		size_t end = cli_batch_end(files.v, start, files.n, CLI_RESIDENCY_BATCH,
					   CLI_BATCH_BYTES);
		struct json_object *req = req_new("residency", NULL), *reply, *arr;

		if (req && req_add_paths(req, files.v, start, end) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (cli_call(c, req, &reply) != 0)
			goto disconnect;
		arr = jget(reply, "files");
		if (!arr || !json_object_is_type(arr, json_type_array)) {
			fprintf(stderr, "tierfs: residency reply without \"files\"\n");
			json_object_put(reply);
			goto disconnect;
		}
		for (size_t k = 0; k < json_object_array_length(arr); k++)
			res_print_file(o, &m, json_object_array_get_idx(arr, k), &tot);
		json_object_put(reply);
		start = end;
	}
	if (o->count) {
		printf("files=%llu bytes=%llu ram=%llu ssd=%llu errors=%llu\n",
		       (unsigned long long)tot.files, (unsigned long long)tot.size,
		       (unsigned long long)tot.ram, (unsigned long long)tot.ssd,
		       (unsigned long long)(tot.errors + errors));
	} else if (!o->json && tot.files > 1) {
		char s[32], r[32], d[32];

		cli_fmt_bytes(tot.size, s, sizeof(s));
		cli_fmt_bytes(tot.ram, r, sizeof(r));
		cli_fmt_bytes(tot.ssd, d, sizeof(d));
		printf("total: %llu files, %s; ram %s (%.1f%%), ssd %s (%.1f%%)\n",
		       (unsigned long long)tot.files, s, r,
		       tot.size ? 100.0 * (double)tot.ram / (double)tot.size : 0.0, d,
		       tot.size ? 100.0 * (double)tot.ssd / (double)tot.size : 0.0);
	}
	status = errors || tot.errors ? 1 : 0;
disconnect:
	ctl_client_free(c);
release:
	files_release(&files);
	return status;
}

/* ---- stats ---- */

static int stats_print(const struct cli_opts *o, const struct cli_mount *m,
		       struct json_object *reply)
{
	if (o->json) {
		puts(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
	} else if (o->prometheus) {
		if (cli_stats_prometheus(stdout, reply) != 0) {
			fprintf(stderr, "tierfs: stats reply without \"counters\"\n");
			return 1;
		}
	} else {
		cli_stats_human(stdout, reply, m->root);
	}
	fflush(stdout);
	return 0;
}

static int cmd_stats(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct ctl_client *c = NULL;
	struct cli_mount m;
	sigset_t set, old;
	bool tty = isatty(STDOUT_FILENO);
	int status = 1;

	if (o->npos != 1)
		return usage_error(cmd, "stats takes exactly one MOUNT");
	if (o->json && o->prometheus)
		return usage_error(cmd, "--json and --prometheus are exclusive");
	if (mount_open(o, o->pos[0], &m) != 0 || cli_connect(&m, &c) != 0)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (o->watch_s > 0)
		pthread_sigmask(SIG_BLOCK, &set, &old);
	for (;;) {
		struct json_object *reply;
		struct timespec ts;

		if (cli_call(c, req_new("stats", NULL), &reply) != 0)
			break;
		if (o->watch_s > 0 && tty)
			fputs("\033[H\033[2J", stdout);
		status = stats_print(o, &m, reply);
		json_object_put(reply);
		if (status != 0 || o->watch_s <= 0)
			break;
		status = 1;
		ts.tv_sec = (time_t)o->watch_s;
		ts.tv_nsec = (long)((o->watch_s - (double)ts.tv_sec) * 1e9);
		if (sigtimedwait(&set, NULL, &ts) > 0) {
			status = 0;   /* Ctrl-C is how --watch ends */
			break;
		}
	}
	if (o->watch_s > 0) {
		const struct timespec zero = { 0, 0 };

		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	ctl_client_free(c);
	return status;
}

/* ---- one-request commands ---- */

/* Connect to the mount of arg and make one request (consumed).  0 with
 * *reply, or 1 (printed). */
static int one_call(const struct cli_opts *o, const char *arg, struct json_object *req,
		    struct cli_mount *m, struct json_object **reply)
{
	struct ctl_client *c = NULL;
	int status = 1;

	*reply = NULL;
	if (mount_open(o, arg, m) != 0 || cli_connect(m, &c) != 0) {
		json_object_put(req);
		return 1;
	}
	status = cli_call(c, req, reply);
	ctl_client_free(c);
	return status;
}

static int cmd_trace(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct json_object *req, *reply;
	struct cli_mount m;
	char abs[PATH_MAX], cwd[PATH_MAX], pbuf[PATH_MAX];

	if (o->npos >= 1 && strcmp(o->pos[0], "start") == 0) {
		if (o->npos != 3)
			return usage_error(cmd, "trace start takes FILE and MOUNT");
		if (o->pos[1][0] == '/') {
			snprintf(abs, sizeof(abs), "%s", o->pos[1]);
		} else if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "tierfs: getcwd: %s\n", strerror(errno));
			return 1;
		} else if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, o->pos[1]) >=
			   sizeof(abs)) {
			fprintf(stderr, "tierfs: %s: name too long\n", o->pos[1]);
			return 1;
		}
		req = req_new("trace_start", NULL);
		if (req && json_object_object_add(req, "file", json_object_new_string(abs)) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (one_call(o, o->pos[2], req, &m, &reply) != 0)
			return 1;
		printf("tracing chunk accesses of %s to %s\n", m.root,
		       fmt_path(abs, pbuf, sizeof(pbuf)));
		json_object_put(reply);
		return 0;
	}
	if (o->npos >= 1 && strcmp(o->pos[0], "stop") == 0) {
		if (o->npos != 2)
			return usage_error(cmd, "trace stop takes MOUNT");
		if (one_call(o, o->pos[1], req_new("trace_stop", NULL), &m, &reply) != 0)
			return 1;
		printf("trace stopped: %llu records\n", (unsigned long long)ju64(reply, "records"));
		json_object_put(reply);
		return 0;
	}
	return usage_error(cmd, "trace needs start or stop");
}

static int cmd_epoch(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct json_object *reply;
	struct cli_mount m;

	if (o->npos != 1)
		return usage_error(cmd, "%s takes exactly one MOUNT", cmd->name);
	if (one_call(o, o->pos[0], req_new("epoch", NULL), &m, &reply) != 0)
		return 1;
	printf("epoch %llu\n", (unsigned long long)ju64(reply, "epoch"));
	json_object_put(reply);
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmd_config(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct json_object *reply, *cfg;
	struct cli_mount m;
	const char **keys = NULL;
	size_t n = 0;
	int status = 1;

	if (o->npos != 1)
		return usage_error(cmd, "%s takes exactly one MOUNT", cmd->name);
	if (one_call(o, o->pos[0], req_new("config", NULL), &m, &reply) != 0)
		return 1;
	cfg = jget(reply, "config");
	if (!cfg || !json_object_is_type(cfg, json_type_object)) {
		fprintf(stderr, "tierfs: config reply without \"config\"\n");
		goto put;
	}
	keys = calloc((size_t)json_object_object_length(cfg) + 1, sizeof(*keys));
	if (!keys) {
		fprintf(stderr, "tierfs: out of memory\n");
		goto put;
	}
	{
		json_object_object_foreach(cfg, k, v) {
			(void)v;
			keys[n++] = k;
		}
	}
	qsort(keys, n, sizeof(*keys), str_cmp);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = jget(cfg, keys[i]);

		printf("%s = %s\n", keys[i],
		       json_object_is_type(v, json_type_string) ? json_object_get_string(v)
		       : v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "");
	}
	status = 0;
	free(keys);
put:
	json_object_put(reply);
	return status;
}

static int cmd_ping(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct json_object *reply;
	struct cli_mount m;
	const char *v, *mp, *src;

	if (o->npos != 1)
		return usage_error(cmd, "%s takes exactly one MOUNT", cmd->name);
	if (one_call(o, o->pos[0], req_new("ping", NULL), &m, &reply) != 0)
		return 1;
	v = jstr(reply, "version");
	mp = jstr(reply, "mountpoint");
	src = jstr(reply, "source");
	printf("tierfs %s, pid %llu, %s mounted at %s\n", v ? v : "?",
	       (unsigned long long)ju64(reply, "pid"), src ? src : "?", mp ? mp : m.root);
	json_object_put(reply);
	return 0;
}

/* plan: send FILE's paths in parts (CLI_RESIDENCY_BATCH paths and
 * CLI_BATCH_BYTES at most each), the first starting the plan, the others
 * naming it with "append", the last without "more".  A bad line stops
 * everything before the plan is complete: the daemon keeps the plan it
 * had. */
static int plan_send(const struct cli_opts *o, const struct cli_mount *m, FILE *in,
		     const char *name, struct ctl_client *c)
{
	struct json_object *req = NULL, *arr = NULL, *reply;
	char *line = NULL;
	size_t cap = 0, lineno = 0, n = 0, bytes = 0, total = 0;
	uint64_t id = 0;
	ssize_t len;
	int status = 1;

	for (;;) {
		const char *rel = NULL;
		bool last;

		len = getline(&line, &cap, in);
		if (len >= 0) {
			lineno++;
			while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
				line[--len] = '\0';
			if (len == 0)
				continue;
			if ((size_t)len != strlen(line) ||
			    !(rel = cli_plan_path(m->root, o->pos[0], line))) {
				fprintf(stderr, "tierfs: %s:%zu: not a path below %s (relative to it, "
					"or absolute under it; no \".\" or \"..\" parts)\n", name,
					lineno, m->root);
				goto out;
			}
		} else if (ferror(in)) {
			fprintf(stderr, "tierfs: %s: %s\n", name, strerror(errno));
			goto out;
		}
		last = len < 0;
		/* send what is gathered when this path would not fit, or at the end */
		if (arr && (last || n == CLI_RESIDENCY_BATCH ||
			    bytes + cli_json_str_cost(rel) > CLI_BATCH_BYTES)) {
			json_object_object_add(req, "paths", arr);
			arr = NULL;
			if (!last)
				json_object_object_add(req, "more", json_object_new_boolean(1));
			if (id)
				json_object_object_add(req, "append", json_object_new_int64((int64_t)id));
			if (cli_call(c, req, &reply) != 0) {
				req = NULL;
				goto out;
			}
			req = NULL;
			total += n;
			if (!last)
				id = ju64(reply, "plan");
			json_object_put(reply);
			n = bytes = 0;
		}
		if (last)
			break;
		if (!req && (!(req = req_new("plan", NULL)) || !(arr = json_object_new_array()))) {
			fprintf(stderr, "tierfs: out of memory\n");
			goto out;
		}
		json_object_array_add(arr, json_object_new_string(rel));
		bytes += cli_json_str_cost(rel);
		n++;
	}
	if (total == 0) {
		fprintf(stderr, "tierfs: %s: no paths (to drop the plan: tierfs plan --clear "
			"MOUNT)\n", name);
		goto out;
	}
	printf("plan of %zu files handed to %s\n", total, m->root);
	status = 0;
out:
	json_object_put(arr);
	json_object_put(req);
	free(line);
	return status;
}

static int cmd_plan(const struct cli_cmd *cmd, struct cli_opts *o)
{
	struct json_object *req, *reply;
	struct ctl_client *c = NULL;
	struct cli_mount m;
	FILE *in;
	int status;

	if (o->clear) {
		if (o->npos != 1)
			return usage_error(cmd, "plan --clear takes exactly one MOUNT");
		req = req_new("plan", NULL);
		if (req && json_object_object_add(req, "clear", json_object_new_boolean(1)) != 0) {
			json_object_put(req);
			req = NULL;
		}
		if (one_call(o, o->pos[0], req, &m, &reply) != 0)
			return 1;
		printf("plan of %s dropped\n", m.root);
		json_object_put(reply);
		return 0;
	}
	if (o->npos != 2)
		return usage_error(cmd, "plan takes MOUNT and FILE (- for standard input)");
	if (mount_open(o, o->pos[0], &m) != 0)
		return 1;
	in = strcmp(o->pos[1], "-") == 0 ? stdin : fopen(o->pos[1], "r");
	if (!in) {
		fprintf(stderr, "tierfs: %s: %s\n", o->pos[1], strerror(errno));
		return 1;
	}
	status = cli_connect(&m, &c);
	if (status == 0)
		status = plan_send(o, &m, in, in == stdin ? "standard input" : o->pos[1], c);
	ctl_client_free(c);
	if (in != stdin)
		fclose(in);
	return status;
}

/* ---- dispatch ---- */

static const struct cli_cmd cli_cmds[] = {
	{ "stats", OPT_JSON | OPT_PROM | OPT_WATCH, cmd_stats,
	  "tierfs stats MOUNT [--json | --prometheus] [--watch SECONDS]" },
	{ "warm", OPT_TIER | OPT_JOBS, cmd_warm, "tierfs warm [--tier ram|ssd] [--jobs N] PATH..." },
	{ "pin", OPT_TIER | OPT_JOBS, cmd_pin, "tierfs pin [--tier ram|ssd] [--jobs N] PATH..." },
	{ "unpin", OPT_ALL, cmd_unpin, "tierfs unpin PATH... | tierfs unpin --all MOUNT" },
	{ "evict", OPT_TIER | OPT_ALL, cmd_evict,
	  "tierfs evict [--tier ram|ssd|all] PATH... | --all MOUNT" },
	{ "residency", OPT_JSON | OPT_COUNT, cmd_residency, "tierfs residency [--json] PATH..." },
	{ "trace", 0, cmd_trace, "tierfs trace start FILE MOUNT | tierfs trace stop MOUNT" },
	{ "epoch", 0, cmd_epoch, "tierfs epoch MOUNT" },
	{ "config", 0, cmd_config, "tierfs config MOUNT" },
	{ "ping", 0, cmd_ping, "tierfs ping MOUNT" },
	{ "plan", OPT_CLEAR, cmd_plan, "tierfs plan MOUNT FILE | tierfs plan --clear MOUNT" },
};

static const struct cli_cmd *cmd_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	return NULL;
}

bool cli_is_command(const char *name)
{
	return cmd_find(name) != NULL;
}

void cli_usage(FILE *out)
{
	for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(out, "       %s\n", cli_cmds[i].usage);
	fputs("\nControl commands take a mount (or paths under one) and find its control\n"
	      "socket from the mountpoint; --socket PATH or TIERFS_SOCKET overrides that.\n"
	      "warm, pin, evict, unpin and residency expand directories recursively.\n"
	      "plan: FILE (- = standard input) lists the files a loader will open next, in\n"
	      "order, one per line, relative to the mount or absolute under it.\n", out);
}

int cli_main(int argc, char **argv)
{
	const struct cli_cmd *cmd = argc >= 2 ? cmd_find(argv[1]) : NULL;
	struct cli_opts o;
	int rc;

	if (!cmd) {
		fprintf(stderr, "tierfs: unknown command '%s'\n", argc >= 2 ? argv[1] : "");
		return 2;
	}
	rc = opts_parse(cmd, argc - 2, argv + 2, &o);
	if (rc == -1) {
		printf("usage: %s\n       (--socket PATH: the control socket, else TIERFS_SOCKET, "
		       "else found from the mountpoint)\n", cmd->usage);
		rc = 0;
	} else if (rc == 0) {
		rc = cmd->run(cmd, &o);
	}
	free(o.pos);
	return rc;
}
