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

#include "common/config.h"
#include "common/tfs_err.h"
#include "fs/fs.h"
#include "fs/plan.h"
#include "s3/s3_client.h"
#include "tiers/access_trace.h"
#include "tiers/chunk_cache.h"

#define EVICT_ERRORS_MAX 100      /* per-path errors listed in one evict reply */

/* Every counter at one moment. */
struct counters {
	struct chunk_cache_stats cc;
	struct objstore_stats s3;
	struct fs_stats fs;
};

struct ctl_daemon {
	struct tfs_fs *fs;
	struct s3_client *client;
	const struct tierfs_config *cfg;
	char *credentials, *socket_path;
	double started;
	pthread_mutex_t lock;         /* epoch and trace */
	unsigned epoch;               /* 0: none taken yet */
	double epoch_at;
	struct counters epoch_base;
	struct access_trace *trace;   /* the trace being recorded (also in the cache) */
	struct ra_plan *pending;      /* a plan being sent in parts (with lock) */
	uint64_t pending_id, plan_ids;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct ctl_daemon *ctl_daemon_new(const struct ctl_daemon_config *c)
{
	struct ctl_daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fs = c->fs;
	d->client = c->client;
	d->cfg = c->cfg;
	d->credentials = strdup(c->credentials ? c->credentials : "none (anonymous)");
	d->socket_path = strdup(c->socket_path ? c->socket_path : "");
	if (!d->credentials || !d->socket_path) {
		free(d->credentials);
		free(d->socket_path);
		free(d);
		return NULL;
	}
	d->started = now_s();
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

void ctl_daemon_free(struct ctl_daemon *d)
{
	if (!d)
		return;
	if (d->trace) {
		chunk_cache_trace_swap(fs_chunk_cache(d->fs), NULL);
		(void)access_trace_stop(d->trace);
	}
	ra_plan_free(d->pending);
	pthread_mutex_destroy(&d->lock);
	free(d->credentials);
	free(d->socket_path);
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

static void counters_take(struct ctl_daemon *d, struct counters *c)
{
	chunk_cache_stats(fs_chunk_cache(d->fs), &c->cc);
	s3_client_stats(d->client, &c->s3);
	fs_stats(d->fs, &c->fs);
}

/* A counter since base (base NULL: since mount).  Counters only grow; a
 * smaller value means nothing happened (never a huge unsigned wrap). */
#define SINCE(now, base, field) \
	((base) && (now)->field >= (base)->field ? (now)->field - (base)->field : \
	 (base) ? 0 : (now)->field)

static struct json_object *tier_json(const struct tier_stats *t, const struct tier_stats *b)
{
	struct json_object *o = json_object_new_object();

	add_u64(o, "hits", SINCE(t, b, hits));
	add_u64(o, "misses", SINCE(t, b, misses));
	add_u64(o, "bytes_served", SINCE(t, b, bytes_served));
	add_u64(o, "bytes_fetched", SINCE(t, b, bytes_fetched));
	add_u64(o, "insertions", SINCE(t, b, insertions));
	add_u64(o, "evictions", SINCE(t, b, evictions));
	add_u64(o, "evictions_read", SINCE(t, b, evictions_read));
	add_u64(o, "checksum_failures", SINCE(t, b, checksum_failures));
	add_u64(o, "io_errors", SINCE(t, b, io_errors));
	add_u64(o, "dropped", SINCE(t, b, dropped));
	add_u64(o, "rejected", SINCE(t, b, rejected));
	add_u64(o, "waits", SINCE(t, b, waits));
	add_u64(o, "overflow", SINCE(t, b, overflow));
	add_u64(o, "fills_failed", SINCE(t, b, fills_failed));
	/* occupancy is a state, not a count: always now */
	add_u64(o, "entries", t->entries);
	add_u64(o, "bytes_used", t->bytes_used);
	add_u64(o, "capacity", t->capacity);
	json_object_object_add(o, "degraded", json_object_new_boolean(t->degraded));
	return o;
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

static struct json_object *counters_json(const struct counters *c, const struct counters *b)
{
	struct json_object *o = json_object_new_object(), *x;
	const struct tier_stats *rb = b ? &b->cc.ram : NULL;

	json_object_object_add(o, "ram", tier_json(&c->cc.ram, b ? &b->cc.ram : NULL));
	if (c->cc.has_ssd)
		json_object_object_add(o, "ssd", tier_json(&c->cc.ssd, b ? &b->cc.ssd : NULL));
	x = json_object_new_object();
	add_u64(x, "issued", SINCE(&c->cc.ram, rb, ahead_issued));
	add_u64(x, "used", SINCE(&c->cc.ram, rb, ahead_used));
	add_u64(x, "wasted", SINCE(&c->cc.ram, rb, ahead_wasted));
	add_u64(x, "late", SINCE(&c->cc.ram, rb, ahead_late));
	add_u64(x, "dropped", SINCE(&c->cc.ram, rb, ahead_dropped));
	add_u64(x, "refused", SINCE(&c->fs, b ? &b->fs : NULL, ra_refused));
	add_u64(x, "files", SINCE(&c->fs, b ? &b->fs : NULL, ra_files));
	add_u64(x, "scan_files", SINCE(&c->fs, b ? &b->fs : NULL, scan_files));
	add_u64(x, "scan_bytes", SINCE(&c->fs, b ? &b->fs : NULL, scan_bytes));
	add_u64(x, "plan_files", SINCE(&c->fs, b ? &b->fs : NULL, plan_files));
	add_u64(x, "plan_bytes", SINCE(&c->fs, b ? &b->fs : NULL, plan_bytes));
	json_object_object_add(o, "readahead", x);
	x = json_object_new_object();
	add_u64(x, "requests", SINCE(&c->s3, b ? &b->s3 : NULL, requests));
	add_u64(x, "gets", SINCE(&c->s3, b ? &b->s3 : NULL, gets));
	add_u64(x, "heads", SINCE(&c->s3, b ? &b->s3 : NULL, heads));
	add_u64(x, "lists", SINCE(&c->s3, b ? &b->s3 : NULL, lists));
	add_u64(x, "retries", SINCE(&c->s3, b ? &b->s3 : NULL, retries));
	add_u64(x, "errors", SINCE(&c->s3, b ? &b->s3 : NULL, errors));
	add_u64(x, "bytes", SINCE(&c->s3, b ? &b->s3 : NULL, bytes_received));
	json_object_object_add(x, "latency_ms", latency_json(&c->s3.latency, b ? &b->s3.latency : NULL));
	json_object_object_add(o, "s3", x);
	x = json_object_new_object();
	add_u64(x, "fetches", SINCE(&c->cc, b ? &b->cc : NULL, store_fetches));
	add_u64(x, "bytes", SINCE(&c->cc, b ? &b->cc : NULL, store_bytes));
	add_u64(x, "errors", SINCE(&c->cc, b ? &b->cc : NULL, store_errors));
	json_object_object_add(o, "store", x);
	x = json_object_new_object();
	add_u64(x, "open_files", c->fs.open_files);
	add_u64(x, "unsafe_keys", c->fs.unsafe_keys_skipped);
	json_object_object_add(o, "fs", x);
	x = json_object_new_object();
	add_u64(x, "files", c->cc.pinned_files);
	add_u64(x, "ram_bytes", c->cc.pinned_ram);
	add_u64(x, "ssd_bytes", c->cc.pinned_ssd);
	json_object_object_add(o, "pins", x);
	return o;
}

/* ---- requests ---- */

static struct json_object *do_ping(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();
	char src[4096];

	snprintf(src, sizeof(src), "s3://%s/%s", d->cfg->bucket, d->cfg->prefix);
	if (src[strlen(src) - 1] == '/')
		src[strlen(src) - 1] = '\0';
	add_str(r, "version", TIERFS_VERSION);
	json_object_object_add(r, "pid", json_object_new_int64(getpid()));
	add_str(r, "mountpoint", d->cfg->mountpoint ? d->cfg->mountpoint : "");
	add_str(r, "source", src);
	return r;
}

/* The plan's position, when there is one: "plan" in a stats reply. */
static void plan_json(struct ctl_daemon *d, struct json_object *r)
{
	struct ra_plan_info in;
	struct json_object *p;
	bool done;

	if (!fs_plan_info(d->fs, &in, &done))
		return;
	p = json_object_new_object();
	add_u64(p, "entries", in.entries);
	add_u64(p, "position", in.low);
	add_u64(p, "next", in.next);
	add_u64(p, "opened", in.consumed);
	add_u64(p, "skips", in.skips);
	add_u64(p, "ahead_bytes", in.ahead_bytes);
	json_object_object_add(p, "done", json_object_new_boolean(done));
	json_object_object_add(r, "plan", p);
}

static struct json_object *do_stats(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();
	struct counters now, base;
	unsigned epoch;
	double at;

	counters_take(d, &now);
	pthread_mutex_lock(&d->lock);
	epoch = d->epoch;
	at = d->epoch_at;
	base = d->epoch_base;
	pthread_mutex_unlock(&d->lock);
	json_object_object_add(r, "uptime_s", json_object_new_double(now_s() - d->started));
	json_object_object_add(r, "counters", counters_json(&now, NULL));
	plan_json(d, r);
	if (epoch) {
		struct json_object *e = json_object_new_object();

		add_u64(e, "number", epoch);
		json_object_object_add(e, "age_s", json_object_new_double(now_s() - at));
		json_object_object_add(e, "counters", counters_json(&now, &base));
		json_object_object_add(r, "epoch", e);
	}
	return r;
}

static struct json_object *do_epoch(struct ctl_daemon *d)
{
	struct json_object *r = ctl_reply_ok();
	struct counters now;
	unsigned n;

	counters_take(d, &now);
	pthread_mutex_lock(&d->lock);
	d->epoch_base = now;
	d->epoch_at = now_s();
	n = ++d->epoch;
	pthread_mutex_unlock(&d->lock);
	add_u64(r, "epoch", n);
	return r;
}

/* The tier a request means: its own, else SSD when there is one. */
static enum pin_tier tier_of(struct ctl_daemon *d, enum ctl_tier t)
{
	struct chunk_cache_stats cs;

	if (t == CTL_TIER_RAM)
		return PIN_RAM;
	if (t == CTL_TIER_SSD)
		return PIN_SSD;
	chunk_cache_stats(fs_chunk_cache(d->fs), &cs);
	return cs.has_ssd ? PIN_SSD : PIN_RAM;
}

static bool has_ssd(struct ctl_daemon *d)
{
	struct chunk_cache_stats cs;

	chunk_cache_stats(fs_chunk_cache(d->fs), &cs);
	return cs.has_ssd;
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

	if (tier == PIN_SSD && !has_ssd(d))
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
	struct chunk_cache *cc = fs_chunk_cache(d->fs);
	enum pin_tier tier = tier_of(d, q->tier);
	struct fs_object *objs = calloc(q->n_paths, sizeof(*objs));
	const char **keys = calloc(q->n_paths, sizeof(*keys));
	uint64_t *sizes = calloc(q->n_paths, sizeof(*sizes));
	struct json_object *r = NULL;
	uint64_t total = 0, would_be, limit;
	size_t i;
	int rc;

	if (!objs || !keys || !sizes) {
		r = ctl_reply_error("out of memory");
		goto out;
	}
	if (tier == PIN_SSD && !has_ssd(d)) {
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
		keys[i] = objs[i].key;
		sizes[i] = objs[i].size;
		total += objs[i].size;
	}
	limit = chunk_cache_pin_limit(cc, tier);
	rc = chunk_cache_pin(cc, keys, sizes, q->n_paths, tier, &would_be);
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
	free(keys);
	free(sizes);
	return r;
}

static struct json_object *do_unpin(struct ctl_daemon *d, const struct ctl_request *q)
{
	struct chunk_cache *cc = fs_chunk_cache(d->fs);
	struct json_object *r;
	size_t n = 0;

	if (q->all) {
		n = chunk_cache_unpin_all(cc);
	} else {
		/* by key, not by lookup: a file deleted since can be unpinned */
		for (size_t i = 0; i < q->n_paths; i++) {
			size_t pl = strlen(d->cfg->prefix), kl = strlen(q->paths[i]);
			char *key = malloc(pl + kl + 1);

			if (!key)
				return ctl_reply_error("out of memory");
			memcpy(key, d->cfg->prefix, pl);
			memcpy(key + pl, q->paths[i], kl + 1);
			n += chunk_cache_unpin(cc, key);
			free(key);
		}
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
	struct chunk_cache *cc = fs_chunk_cache(d->fs);
	struct chunk_cache_evicted ev = { 0 };
	struct json_object *r, *errs = json_object_new_array();
	uint64_t failed = 0;

	if (q->tier == CTL_TIER_SSD && !has_ssd(d)) {
		json_object_put(errs);
		return ctl_reply_error("evict: this mount has no SSD tier (--cache-dir)");
	}
	if (q->all) {
		chunk_cache_evict_all(cc, evict_mask(q->tier), &ev);
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
			chunk_cache_evict(cc, o.key, o.cache_id, o.size, evict_mask(q->tier), &ev);
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
	struct chunk_cache *cc = fs_chunk_cache(d->fs);
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
			chunk_cache_residency(cc, o.key, o.cache_id, o.size, &ram, &ssd);
			pin = chunk_cache_pinned(cc, o.key);
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
	struct access_trace *t;
	char err[512];

	pthread_mutex_lock(&d->lock);
	if (d->trace) {
		pthread_mutex_unlock(&d->lock);
		return ctl_reply_error("a trace is being recorded already: trace stop first");
	}
	if (access_trace_start(q->file, &t, err, sizeof(err)) != TFS_OK) {
		pthread_mutex_unlock(&d->lock);
		return ctl_reply_error("trace: %s", err);
	}
	d->trace = t;
	chunk_cache_trace_swap(fs_chunk_cache(d->fs), t);
	pthread_mutex_unlock(&d->lock);
	return ctl_reply_ok();
}

static struct json_object *do_trace_stop(struct ctl_daemon *d)
{
	struct json_object *r;
	struct access_trace *t;
	uint64_t n;

	pthread_mutex_lock(&d->lock);
	t = d->trace;
	d->trace = NULL;
	if (t)
		chunk_cache_trace_swap(fs_chunk_cache(d->fs), NULL);
	pthread_mutex_unlock(&d->lock);
	if (!t)
		return ctl_reply_error("no trace is being recorded");
	n = access_trace_stop(t);
	r = ctl_reply_ok();
	add_u64(r, "records", n);
	return r;
}

/* Every option as config_dump() prints it ("key = value" lines). */
static struct json_object *do_config(struct ctl_daemon *d)
{
	struct json_object *r, *c = json_object_new_object();
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		json_object_put(c);
		return ctl_reply_error("out of memory");
	}
	config_dump(d->cfg, f);
	fclose(f);
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
		ra_plan_free(d->pending);
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
		ra_plan_free(d->pending);
		d->pending_id = ++d->plan_ids;
		if (!(d->pending = ra_plan_new())) {
			pthread_mutex_unlock(&d->lock);
			return error_of(TFS_E_NOMEM);
		}
	}
	for (size_t i = 0; i < req->n_paths; i++) {
		if (ra_plan_add(d->pending, req->paths[i], strlen(req->paths[i])) != 0) {
			n = ra_plan_entries(d->pending);
			ra_plan_free(d->pending);
			d->pending = NULL;
			pthread_mutex_unlock(&d->lock);
			return ctl_reply_error("plan dropped at entry %zu: a plan holds at most %u "
					       "paths of %u bytes (or memory ran out)", n,
					       PLAN_ENTRIES_MAX, PLAN_PATH_MAX);
		}
	}
	id = d->pending_id;
	n = ra_plan_entries(d->pending);
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
