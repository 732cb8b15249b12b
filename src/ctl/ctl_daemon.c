/* ctl_daemon.c - the control socket's request handlers (see ctl_daemon.h).
 *
 * Paths in requests are below the mount root; each is resolved the way an
 * open would (fs_path_object: cached metadata, a listing or a HEAD when
 * stale) and never reads object data, except warm, which is asked to.
 * A request about many files answers for each: one bad path does not fail
 * the others, except pin, which is all or nothing.
 */
#include "ctl/ctl_daemon.h"

#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/counters.h"
#include "common/tfs_err.h"
#include "fs/fs.h"

#define EVICT_ERRORS_MAX 100      /* per-path errors listed in one evict reply */

struct ctl_daemon {
	struct tfs_fs *fs;
	char *source, *mountpoint, *config_text, *credentials, *socket_path;
	double started;
	pthread_mutex_t lock;         /* the epoch and the plan being sent */
	unsigned epoch;               /* 0: none taken yet */
	double epoch_at;
	struct tfs_counters epoch_base;
	struct ra_plan *pending;      /* a plan being sent in parts */
	uint64_t pending_id, plan_ids;
};

static void daemon_strings_free(struct ctl_daemon *d)
{
	free(d->source);
	free(d->mountpoint);
	free(d->config_text);
	free(d->credentials);
	free(d->socket_path);
}

struct ctl_daemon *ctl_daemon_new(const struct ctl_daemon_config *c)
{
	struct ctl_daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fs = c->fs;
	d->source = strdup(c->source ? c->source : "");
	d->mountpoint = strdup(c->mountpoint ? c->mountpoint : "");
	d->config_text = strdup(c->config_text ? c->config_text : "");
	d->credentials = strdup(c->credentials ? c->credentials : "none (anonymous)");
	d->socket_path = strdup(c->socket_path ? c->socket_path : "");
	if (!d->source || !d->mountpoint || !d->config_text || !d->credentials ||
	    !d->socket_path) {
		daemon_strings_free(d);
		free(d);
		return NULL;
	}
	d->started = clock_mono_s();
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

void ctl_daemon_free(struct ctl_daemon *d)
{
	if (!d)
		return;
	fs_plan_free(d->pending);
	pthread_mutex_destroy(&d->lock);
	daemon_strings_free(d);
	free(d);
}

/* ---- building replies ---- */

static void add_u64(struct json_object *o, const char *name, uint64_t v)
{
	json_object_object_add(o, name, json_object_new_uint64(v));
}

static void add_str(struct json_object *o, const char *name, const char *v)
{
	json_object_object_add(o, name, json_object_new_string(v));
}

static struct json_object *error_of(int rc)
{
	return ctl_reply_error("%s", tfs_strerror(rc));
}

/* Request latency percentiles in milliseconds (bucket upper bounds,
 * within 6.25%), since base when given. */
static struct json_object *latency_json(const struct latency_hist_snap *now,
					const struct latency_hist_snap *base)
{
	struct json_object *o = json_object_new_object();
	struct latency_hist_snap *d = NULL;
	const struct latency_hist_snap *s = now;
	static const struct {
		const char *name;
		double q;
	} qs[] = { { "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 }, { "max", 1.0 } };

	if (base && (d = malloc(sizeof(*d)))) {
		latency_hist_snap_sub(now, base, d);
		s = d;
	}
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		json_object_object_add(o, qs[i].name, json_object_new_double(
			s->count ? (double)latency_hist_quantile(s, qs[i].q) / 1e6 : 0.0));
	add_u64(o, "count", s->count);
	free(d);
	return o;
}

/* One counter's value, as its unit says. */
static void add_counter(struct json_object *o, const char *name, enum tfs_counter_unit unit,
			uint64_t v)
{
	if (unit == TFS_CU_BOOL)
		json_object_object_add(o, name, json_object_new_boolean(v != 0));
	else
		add_u64(o, name, v);
}

/* The section object named name in o, made if missing. */
static struct json_object *section_of(struct json_object *o, const char *name)
{
	struct json_object *s;

	if (json_object_object_get_ex(o, name, &s))
		return s;
	s = json_object_new_object();
	json_object_object_add(o, name, s);
	return s;
}

/* Every counter (common/counters.h), since b when given: "ram" and "ssd"
 * (when there is one), then each section; the store's latency in "s3". */
static struct json_object *counters_json(const struct tfs_counters *c,
					 const struct tfs_counters *b)
{
	struct json_object *o = json_object_new_object();

	for (int t = 0; t < TFS_TIER_N; t++) {
		struct json_object *to;

		if (t == TFS_TIER_SSD && !c->has_ssd)
			continue;
		to = section_of(o, tfs_tier_names[t]);
		for (int i = 0; i < TFS_TIER_COUNTER_N; i++)
			add_counter(to, tfs_tier_counter_info[i].name, tfs_tier_counter_info[i].unit,
				    tfs_tier_counter_since(c, b, t, (enum tfs_tier_counter)i));
	}
	for (int i = 0; i < TFS_COUNTER_N; i++)
		add_counter(section_of(o, tfs_counter_info[i].section), tfs_counter_info[i].name,
			    tfs_counter_info[i].unit,
			    tfs_counter_since(c, b, (enum tfs_counter)i));
	json_object_object_add(section_of(o, "s3"), "latency_ms",
			       latency_json(&c->latency, b ? &b->latency : NULL));
	return o;
}

/* ---- requests ---- */

static struct json_object *do_ping(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();

	add_str(r, "version", TIERFS_VERSION);
	json_object_object_add(r, "pid", json_object_new_int64(getpid()));
	add_str(r, "mountpoint", d->mountpoint);
	add_str(r, "source", d->source);
	return r;
}

/* The plan's position, when there is one: "plan" in a stats reply. */
static void plan_json(struct ctl_daemon *d, struct json_object *r)
{
	struct fs_plan_info in;
	struct json_object *p;
	bool done;

	if (!fs_plan_info(d->fs, &in, &done))
		return;
	p = json_object_new_object();
	add_u64(p, "entries", in.entries);
	add_u64(p, "position", in.position);
	add_u64(p, "next", in.next);
	add_u64(p, "opened", in.opened);
	add_u64(p, "skips", in.skips);
	add_u64(p, "ahead_bytes", in.ahead_bytes);
	json_object_object_add(p, "done", json_object_new_boolean(done));
	json_object_object_add(r, "plan", p);
}

static struct json_object *do_stats(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();
	struct tfs_counters now, base;
	unsigned epoch;
	double at;

	fs_counters(d->fs, &now);
	pthread_mutex_lock(&d->lock);
	epoch = d->epoch;
	at = d->epoch_at;
	base = d->epoch_base;
	pthread_mutex_unlock(&d->lock);
	json_object_object_add(r, "uptime_s", json_object_new_double(clock_mono_s() - d->started));
	json_object_object_add(r, "counters", counters_json(&now, NULL));
	plan_json(d, r);
	if (epoch) {
		struct json_object *e = json_object_new_object();

		add_u64(e, "number", epoch);
		json_object_object_add(e, "age_s", json_object_new_double(clock_mono_s() - at));
		json_object_object_add(e, "counters", counters_json(&now, &base));
		json_object_object_add(r, "epoch", e);
	}
	return r;
}

static struct json_object *do_epoch(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();
	struct tfs_counters now;
	unsigned n;

	fs_counters(d->fs, &now);
	pthread_mutex_lock(&d->lock);
	d->epoch_base = now;
	d->epoch_at = clock_mono_s();
	n = ++d->epoch;
	pthread_mutex_unlock(&d->lock);
	add_u64(r, "epoch", n);
	return r;
}

/* The tier a request means: its own, else SSD when there is one. */
static enum pin_tier tier_of(struct ctl_daemon *d, enum ctl_tier t)
{
	if (t == CTL_TIER_RAM)
		return PIN_RAM;
	if (t == CTL_TIER_SSD)
		return PIN_SSD;
	return fs_has_ssd(d->fs) ? PIN_SSD : PIN_RAM;
}

/* The peer on fd hung up (a cancelled warm-up). */
static bool peer_gone(void *ctx)
{
	struct pollfd p = { *(int *)ctx, POLLRDHUP, 0 };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static struct json_object *do_warm(struct ctl_daemon *d, const struct ctl_request *q, int fd)
{
	struct fs_object o;
	struct fs_warm w;
	struct json_object *r;
	enum pin_tier tier = tier_of(d, q->tier);
	int rc;

	if (tier == PIN_SSD && !fs_has_ssd(d->fs))
		return ctl_reply_error("warm: this mount has no SSD tier (--cache-dir)");
	rc = fs_path_object(d->fs, q->path, &o);
	if (rc != TFS_OK)
		return ctl_reply_error("%s: %s", q->path, tfs_strerror(rc));
	rc = fs_object_warm(d->fs, &o, tier, peer_gone, &fd, &w);
	if (rc == TFS_E_INTR) {
		fs_object_release(&o);
		return NULL;               /* cancelled: nobody to answer */
	}
	if (rc != TFS_OK)
		r = ctl_reply_error("%s: %s", q->path,
				    rc == TFS_AGAIN ? "the SSD tier refused a chunk (full of pinned "
						      "data, or degraded)" : tfs_strerror(rc));
	else
		r = ctl_reply_ok();
	add_u64(r, "size", o.size);
	add_u64(r, "chunks", w.chunks);
	add_u64(r, "chunks_fetched", w.chunks_fetched);
	add_u64(r, "bytes_fetched", w.bytes_fetched);
	fs_object_release(&o);
	return r;
}

static const char *tier_name(enum pin_tier t)
{
	return t == PIN_RAM ? "ram" : "ssd";
}

static struct json_object *do_pin(struct ctl_daemon *d, const struct ctl_request *q)
{
	enum pin_tier tier = tier_of(d, q->tier);
	struct fs_object *objs = calloc(q->n_paths, sizeof(*objs));
	struct json_object *r = NULL;
	uint64_t total = 0, would_be, limit;
	size_t i;
	int rc;

	if (!objs) {
		r = ctl_reply_error("out of memory");
		goto out;
	}
	if (tier == PIN_SSD && !fs_has_ssd(d->fs)) {
		r = ctl_reply_error("pin: this mount has no SSD tier (--cache-dir)");
		goto out;
	}
	for (i = 0; i < q->n_paths; i++) {
		rc = fs_path_object(d->fs, q->paths[i], &objs[i]);
		if (rc != TFS_OK) {
			r = ctl_reply_error("pin: %s: %s; nothing pinned", q->paths[i],
					    tfs_strerror(rc));
			goto out;
		}
		total += objs[i].size;
	}
	rc = fs_pin(d->fs, objs, q->n_paths, tier, &would_be, &limit);
	if (rc == TFS_E_NOSPC) {
		r = ctl_reply_error("pin: %llu bytes would be pinned in the %s tier, more than the "
				    "%llu it can hold pinned (%s); nothing pinned",
				    (unsigned long long)would_be, tier_name(tier),
				    (unsigned long long)limit,
				    tier == PIN_RAM ? "half of --ram-size" :
						      "90% of what the SSD tier may use");
		goto out;
	}
	if (rc != TFS_OK) {
		r = ctl_reply_error("pin: %s", tfs_strerror(rc));
		goto out;
	}
	r = ctl_reply_ok();
	add_u64(r, "files", q->n_paths);
	add_u64(r, "bytes", total);
	add_u64(r, "pinned_bytes", would_be);
	add_u64(r, "limit", limit);
	add_str(r, "tier", tier_name(tier));
out:
	for (i = 0; objs && i < q->n_paths; i++)
		fs_object_release(&objs[i]);
	free(objs);
	return r;
}

static struct json_object *do_unpin(struct ctl_daemon *d, const struct ctl_request *q)
{
	struct json_object *r;
	size_t n = 0;

	if (q->all) {
		n = fs_unpin_all(d->fs);
	} else {
		/* by name, not by lookup: a file deleted since can be unpinned */
		for (size_t i = 0; i < q->n_paths; i++)
			n += fs_unpin(d->fs, q->paths[i]);
	}
	r = ctl_reply_ok();
	add_u64(r, "files", n);
	return r;
}

static unsigned evict_mask(enum ctl_tier t)
{
	return t == CTL_TIER_RAM ? PIN_RAM : t == CTL_TIER_SSD ? PIN_SSD : PIN_RAM | PIN_SSD;
}

static struct json_object *do_evict(struct ctl_daemon *d, const struct ctl_request *q)
{
	struct fs_evicted ev = { 0 };
	struct json_object *r, *errs = json_object_new_array();
	uint64_t failed = 0;

	if (q->tier == CTL_TIER_SSD && !fs_has_ssd(d->fs)) {
		json_object_put(errs);
		return ctl_reply_error("evict: this mount has no SSD tier (--cache-dir)");
	}
	if (q->all) {
		fs_evict_all(d->fs, evict_mask(q->tier), &ev);
	} else {
		for (size_t i = 0; i < q->n_paths; i++) {
			struct fs_object o;
			int rc = fs_path_object(d->fs, q->paths[i], &o);

			if (rc != TFS_OK) {
				if (failed++ < EVICT_ERRORS_MAX) {
					struct json_object *e = json_object_new_object();

					add_str(e, "path", q->paths[i]);
					add_str(e, "error", tfs_strerror(rc));
					json_object_array_add(errs, e);
				}
				continue;
			}
			fs_object_evict(d->fs, &o, evict_mask(q->tier), &ev);
			fs_object_release(&o);
		}
	}
	r = ctl_reply_ok();
	add_u64(r, "chunks", ev.chunks);
	add_u64(r, "bytes", ev.bytes);
	add_u64(r, "skipped_pinned", ev.pinned);
	add_u64(r, "skipped_busy", ev.busy);
	add_u64(r, "failed", failed);
	json_object_object_add(r, "errors", errs);
	return r;
}

static struct json_object *do_residency(struct ctl_daemon *d, const struct ctl_request *q)
{
	struct json_object *r = ctl_reply_ok(), *files = json_object_new_array_ext((int)q->n_paths);

	for (size_t i = 0; i < q->n_paths; i++) {
		struct json_object *f = json_object_new_object();
		struct fs_object o;
		uint64_t ram, ssd;
		enum pin_tier pin;
		int rc = fs_path_object(d->fs, q->paths[i], &o);

		add_str(f, "path", q->paths[i]);
		if (rc != TFS_OK) {
			add_str(f, "error", tfs_strerror(rc));
		} else {
			fs_object_residency(d->fs, &o, &ram, &ssd, &pin);
			add_u64(f, "size", o.size);
			add_u64(f, "ram", ram);
			add_u64(f, "ssd", ssd);
			json_object_object_add(f, "pinned", pin == PIN_NONE ? NULL :
					       json_object_new_string(tier_name(pin)));
			fs_object_release(&o);
		}
		json_object_array_add(files, f);
	}
	json_object_object_add(r, "files", files);
	return r;
}

static struct json_object *do_trace_start(struct ctl_daemon *d, const struct ctl_request *q)
{
	char err[512];
	int rc = fs_trace_start(d->fs, q->file, err, sizeof(err));

	if (rc == TFS_AGAIN)
		return ctl_reply_error("a trace is being recorded already: trace stop first");
	if (rc != TFS_OK)
		return ctl_reply_error("trace: %s", err);
	return ctl_reply_ok();
}

static struct json_object *do_trace_stop(struct ctl_daemon *d)
{
	struct json_object *r;
	uint64_t n;

	if (fs_trace_stop(d->fs, &n) != TFS_OK)
		return ctl_reply_error("no trace is being recorded");
	r = ctl_reply_ok();
	add_u64(r, "records", n);
	return r;
}

/* Every option, from the "key = value" lines the daemon was given. */
static struct json_object *do_config(struct ctl_daemon *d)
{
	struct json_object *r, *c = json_object_new_object();
	char *text = strdup(d->config_text), *line, *save = NULL;

	if (!text) {
		json_object_put(c);
		return ctl_reply_error("out of memory");
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strstr(line, " = ");

		if (!eq)
			continue;
		*eq = '\0';
		add_str(c, line, eq + 3);
	}
	free(text);
	add_str(c, "credentials", d->credentials);
	add_str(c, "control-socket", d->socket_path);
	r = ctl_reply_ok();
	json_object_object_add(r, "config", c);
	return r;
}

/* A plan arrives in parts of at most CTL_PATHS_MAX paths: the first
 * starts it (and drops one half sent), "more" says parts follow, "append"
 * names the plan a part extends; the last hands it to the fs, replacing
 * the plan it had.  One plan is being sent at a time. */
static struct json_object *do_plan(struct ctl_daemon *d, const struct ctl_request *req)
{
	struct json_object *r;
	struct ra_plan *p;
	uint64_t id;
	size_t n;
	int rc;

	if (req->clear) {
		pthread_mutex_lock(&d->lock);
		fs_plan_free(d->pending);
		d->pending = NULL;
		pthread_mutex_unlock(&d->lock);
		fs_plan_set(d->fs, NULL);
		return ctl_reply_ok();
	}
	pthread_mutex_lock(&d->lock);
	if (req->append) {
		if (!d->pending || d->pending_id != req->append) {
			pthread_mutex_unlock(&d->lock);
			return ctl_reply_error("plan %llu is not being sent (another plan was "
					       "started since, or it was complete)",
					       (unsigned long long)req->append);
		}
	} else {
		fs_plan_free(d->pending);
		d->pending_id = ++d->plan_ids;
		if (!(d->pending = fs_plan_new())) {
			pthread_mutex_unlock(&d->lock);
			return error_of(TFS_E_NOMEM);
		}
	}
	for (size_t i = 0; i < req->n_paths; i++) {
		if (fs_plan_add(d->pending, req->paths[i], strlen(req->paths[i])) != TFS_OK) {
			size_t most, path_max;

			n = fs_plan_entries(d->pending);
			fs_plan_free(d->pending);
			d->pending = NULL;
			pthread_mutex_unlock(&d->lock);
			fs_plan_bounds(&most, &path_max);
			return ctl_reply_error("plan dropped at entry %zu: a plan holds at most %zu "
					       "paths of %zu bytes (or memory ran out)", n, most,
					       path_max);
		}
	}
	id = d->pending_id;
	n = fs_plan_entries(d->pending);
	if (req->more) {
		pthread_mutex_unlock(&d->lock);
		r = ctl_reply_ok();
		add_u64(r, "plan", id);
		add_u64(r, "entries", n);
		return r;
	}
	p = d->pending;
	d->pending = NULL;
	pthread_mutex_unlock(&d->lock);
	rc = fs_plan_set(d->fs, p);
	if (rc == TFS_E_INVAL)
		return ctl_reply_error("this mount fetches nothing ahead for a plan "
				       "(scan-prefetch = 0)");
	if (rc != TFS_OK)
		return error_of(rc);
	r = ctl_reply_ok();
	add_u64(r, "entries", n);
	return r;
}

struct json_object *ctl_daemon_handle(void *ctx, const struct ctl_request *req, int fd)
{
	struct ctl_daemon *d = ctx;

	switch (req->cmd) {
	case CTL_PING: return do_ping(d);
	case CTL_STATS: return do_stats(d);
	case CTL_WARM: return do_warm(d, req, fd);
	case CTL_PIN: return do_pin(d, req);
	case CTL_UNPIN: return do_unpin(d, req);
	case CTL_EVICT: return do_evict(d, req);
	case CTL_RESIDENCY: return do_residency(d, req);
	case CTL_TRACE_START: return do_trace_start(d, req);
	case CTL_TRACE_STOP: return do_trace_stop(d);
	case CTL_EPOCH: return do_epoch(d);
	case CTL_CONFIG: return do_config(d);
	case CTL_PLAN: return do_plan(d, req);
	}
	return error_of(TFS_E_INVAL);
}
