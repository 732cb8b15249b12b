/* config.c - mount configuration (see config.h).  One table lists every
 * option once; the command line and the config file both go through
 * config_set(), so they can never disagree on a key or its syntax. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/size.h"
#include "evict/evict.h"

enum opt_kind {
	OPT_STR, OPT_BOOL, OPT_UINT, OPT_MODE, OPT_SIZE, OPT_ID, OPT_BYTES, OPT_RA, OPT_POLICY,
	OPT_AUTO_OFF, OPT_RETRY_MODE
};

struct opt_def {
	const char *name;
	enum opt_kind kind;
	size_t offset;
	unsigned long max;         /* OPT_UINT / OPT_ID / OPT_RA upper bound */
};

#define OFF(f) offsetof(struct tierfs_config, f)
static const struct opt_def opt_defs[] = {
	{ "endpoint", OPT_STR, OFF(endpoint), 0 },
	{ "region", OPT_STR, OFF(region), 0 },
	{ "profile", OPT_STR, OFF(profile), 0 },
	{ "ca-bundle", OPT_STR, OFF(ca_bundle), 0 },
	{ "path-style", OPT_BOOL, OFF(path_style), 0 },
	{ "foreground", OPT_BOOL, OFF(foreground), 0 },
	/* bounded so the TTL in milliseconds fits an unsigned int */
	{ "metadata-ttl", OPT_UINT, OFF(metadata_ttl_s), 30u * 86400u },
	{ "max-stale", OPT_UINT, OFF(max_stale_s), 30u * 86400u },
	{ "uid", OPT_ID, OFF(uid), UINT_MAX - 1 },
	{ "gid", OPT_ID, OFF(gid), UINT_MAX - 1 },
	{ "file-mode", OPT_MODE, OFF(file_mode), 0 },
	{ "dir-mode", OPT_MODE, OFF(dir_mode), 0 },
	{ "chunk-size", OPT_SIZE, OFF(chunk_size), 0 },
	{ "ram-size", OPT_BYTES, OFF(ram_size), 0 },
	{ "cache-dir", OPT_STR, OFF(cache_dir), 0 },
	{ "ssd-size", OPT_BYTES, OFF(ssd_size), 0 },
	{ "ssd-min-free", OPT_UINT, OFF(ssd_min_free), 99 },
	{ "ram-policy", OPT_POLICY, OFF(ram_policy), 0 },
	{ "ssd-policy", OPT_POLICY, OFF(ssd_policy), 0 },
	{ "cache-wipe", OPT_BOOL, OFF(cache_wipe), 0 },
	{ "kernel-readahead", OPT_RA, OFF(kernel_readahead), 1ul << 30 },
	{ "read-ahead", OPT_RA, OFF(read_ahead), 4ul << 30 },
	{ "read-ahead-files", OPT_UINT, OFF(read_ahead_files), 1024 },
	{ "list-ahead", OPT_UINT, OFF(list_ahead), 64 },
	{ "read-ahead-mem", OPT_RA, OFF(read_ahead_mem), 1ul << 40 },
	{ "random-blocks", OPT_RA, OFF(random_blocks), 1ul << 40 },
	{ "scan-prefetch", OPT_UINT, OFF(scan_prefetch), 32 },
	{ "plan-window", OPT_UINT, OFF(plan_window), 65536 },
	{ "direct-io", OPT_BOOL, OFF(direct_io), 0 },
	{ "passthrough", OPT_AUTO_OFF, OFF(passthrough), 0 },
	{ "verify-reads", OPT_BOOL, OFF(verify_reads), 0 },
	{ "scrub-rate", OPT_RA, OFF(scrub_rate), 1ul << 40 },
	{ "parallel-gets", OPT_UINT, OFF(parallel_gets), 4 },
	{ "stall-timeout", OPT_UINT, OFF(stall_timeout_s), 3600 },
	{ "max-retries", OPT_UINT, OFF(max_retries), 20 },
	{ "retry-mode", OPT_RETRY_MODE, OFF(adaptive_rate), 0 },
	{ "max-connections", OPT_UINT, OFF(max_connections), 1024 },
	{ "max-threads", OPT_UINT, OFF(max_threads), 256 },
	{ "shared-cache", OPT_STR, OFF(shared_cache), 0 },
	{ "shared-endpoint", OPT_STR, OFF(shared_endpoint), 0 },
	{ "shared-region", OPT_STR, OFF(shared_region), 0 },
	{ "shared-profile", OPT_STR, OFF(shared_profile), 0 },
	{ "shared-timeout", OPT_UINT, OFF(shared_timeout_ms), 60000 },
	{ "options", OPT_STR, OFF(fuse_options), 0 },
};
#undef OFF

#define CHUNK_MIN (64u * 1024u)
#define CHUNK_MAX (256u * 1024u * 1024u)

void config_init(struct tierfs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->metadata_ttl_s = 60;
	cfg->max_stale_s = 86400;
	cfg->uid = getuid();
	cfg->gid = getgid();
	cfg->file_mode = 0444;
	cfg->dir_mode = 0555;
	cfg->chunk_size = 8u * 1024 * 1024;
	cfg->ram_size = 256u * 1024 * 1024;
	cfg->ssd_min_free = 5;
	cfg->ram_policy = EVICT_TINYLFU;
	cfg->ssd_policy = EVICT_TINYLFU;
	cfg->passthrough = true;
	cfg->kernel_readahead = UINT64_MAX;
	cfg->read_ahead = UINT64_MAX;
	cfg->read_ahead_files = 16;
	cfg->list_ahead = 16;
	cfg->read_ahead_mem = UINT64_MAX;
	cfg->random_blocks = UINT64_MAX;
	cfg->scrub_rate = UINT64_MAX;
	cfg->scan_prefetch = 16;
	cfg->plan_window = 256;
	cfg->stall_timeout_s = 15;
	cfg->parallel_gets = 4;
	cfg->max_retries = 6;
	/* the AWS SDKs' variable: a node set up for them is set up for us */
	cfg->adaptive_rate = getenv("AWS_RETRY_MODE") &&
			     strcmp(getenv("AWS_RETRY_MODE"), "adaptive") == 0;
	cfg->max_connections = 64;
	cfg->max_threads = 16;
	cfg->shared_timeout_ms = 1000;
}

void config_release(struct tierfs_config *cfg)
{
	free(cfg->bucket);
	free(cfg->prefix);
	free(cfg->mountpoint);
	free(cfg->endpoint);
	free(cfg->ca_bundle);
	free(cfg->region);
	free(cfg->profile);
	free(cfg->fuse_options);
	free(cfg->config_file);
	free(cfg->cache_dir);
	free(cfg->shared_cache);
	free(cfg->shared_endpoint);
	free(cfg->shared_region);
	free(cfg->shared_profile);
	memset(cfg, 0, sizeof(*cfg));
}

static const struct opt_def *opt_find(const char *key)
{
	for (size_t i = 0; i < sizeof(opt_defs) / sizeof(opt_defs[0]); i++)
		if (strcmp(opt_defs[i].name, key) == 0)
			return &opt_defs[i];
	return NULL;
}

int config_key_takes_value(const char *key)
{
	const struct opt_def *d = opt_find(key);

	if (!d)
		return -1;
	return d->kind != OPT_BOOL;
}

int config_parse_size(const char *s, uint64_t *out)
{
	return size_parse(s, out);
}

static int parse_bool(const char *s, bool *out)
{
	if (!s || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1") ||
	    !strcasecmp(s, "on")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0") ||
	    !strcasecmp(s, "off")) {
		*out = false;
		return 0;
	}
	return -1;
}

static int parse_ulong(const char *s, int base, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

int config_set(struct tierfs_config *cfg, const char *key, const char *value,
	       char *err, size_t errlen)
{
	const struct opt_def *d = opt_find(key);
	char *field;
	unsigned long ul;
	uint64_t size;

	if (!d) {
		snprintf(err, errlen, "unknown option '%s'", key);
		return -1;
	}
	field = (char *)cfg + d->offset;
	switch (d->kind) {
	case OPT_STR: {
		char *copy;
		if (!value || !*value) {
			snprintf(err, errlen, "option '%s' needs a value", key);
			return -1;
		}
		copy = strdup(value);
		if (!copy) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		free(*(char **)field);
		*(char **)field = copy;
		return 0;
	}
	case OPT_BOOL:
		if (parse_bool(value, (bool *)field) == 0)
			return 0;
		break;
	case OPT_UINT:
		if (parse_ulong(value, 10, d->max, &ul) == 0) {
			*(unsigned *)field = (unsigned)ul;
			return 0;
		}
		break;
	case OPT_ID:
		if (parse_ulong(value, 10, d->max, &ul) == 0) {
			*(unsigned *)field = (unsigned)ul;   /* uid_t/gid_t are unsigned int */
			return 0;
		}
		break;
	case OPT_MODE:
		if (parse_ulong(value, 8, 07777, &ul) == 0) {
			*(mode_t *)field = (mode_t)ul;
			return 0;
		}
		break;
	case OPT_SIZE:
		if (config_parse_size(value, &size) == 0 && size >= CHUNK_MIN && size <= CHUNK_MAX &&
		    (size & (size - 1)) == 0) {
			*(uint64_t *)field = size;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (a power of two from 64K to 256M)",
			 value ? value : "", key);
		return -1;
	case OPT_RA:
		/* "auto" (UINT64_MAX: worked out at mount), 0 (off / the
		 * kernel's default), or a size up to max */
		if (value && strcmp(value, "auto") == 0) {
			*(uint64_t *)field = UINT64_MAX;
			return 0;
		}
		if (config_parse_size(value, &size) == 0 && size <= d->max) {
			*(uint64_t *)field = size;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (auto, 0, or a size up to %luG)",
			 value ? value : "", key, d->max >> 30);
		return -1;
	case OPT_AUTO_OFF:
		if (value && (strcmp(value, "auto") == 0 || strcmp(value, "off") == 0)) {
			*(bool *)field = strcmp(value, "auto") == 0;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (auto or off)", value ? value : "",
			 key);
		return -1;
	case OPT_RETRY_MODE:
		if (value && (strcmp(value, "standard") == 0 || strcmp(value, "adaptive") == 0)) {
			*(bool *)field = strcmp(value, "adaptive") == 0;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (standard or adaptive)",
			 value ? value : "", key);
		return -1;
	case OPT_POLICY: {
		int kind = value ? evict_kind_parse(value) : -1;

		if (kind >= 0) {
			*(int *)field = kind;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (lru, lfu or tinylfu)",
			 value ? value : "", key);
		return -1;
	}
	case OPT_BYTES:
		if (config_parse_size(value, &size) == 0 && size >= (1u << 20)) {
			*(uint64_t *)field = size;
			return 0;
		}
		snprintf(err, errlen, "bad value '%s' for '%s' (a size of at least 1M, e.g. 512M, 4G)",
			 value ? value : "", key);
		return -1;
	}
	snprintf(err, errlen, "bad value '%s' for '%s'", value ? value : "", key);
	return -1;
}

struct ini_ctx {
	struct tierfs_config *cfg;
	char *err;
	size_t errlen;
	int failed;
};

static int config_ini_line(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *c = user;

	if (c->failed)
		return 0;
	if (section[0] && strcmp(section, "mount") != 0) {
		snprintf(c->err, c->errlen, "unknown section [%s]", section);
		c->failed = 1;
		return 0;
	}
	if (config_set(c->cfg, name, value, c->err, c->errlen) != 0) {
		c->failed = 1;
		return 0;
	}
	return 1;
}

int config_load_file(struct tierfs_config *cfg, const char *path, char *err, size_t errlen)
{
	char inner[256] = "";      /* the handler's message, prefixed with FILE:LINE below */
	struct ini_ctx c = { cfg, inner, sizeof(inner), 0 };
	int rc;

	rc = ini_parse(path, config_ini_line, &c);
	if (rc == -1) {
		snprintf(err, errlen, "cannot open config file %s: %s", path, strerror(errno));
		return -1;
	}
	if (rc == -2) {
		snprintf(err, errlen, "out of memory reading %s", path);
		return -1;
	}
	if (rc > 0) {
		snprintf(err, errlen, "%s:%d: %s", path, rc, inner[0] ? inner : "syntax error");
		return -1;
	}
	return 0;
}

/* S3 bucket names: 3-63 chars of [a-z0-9.-] (plus '_' and upper case,
 * which older buckets and other servers allow), no "..", no '/'. */
static bool bucket_name_ok(const char *b, size_t n)
{
	if (n < 3 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)b[i];
		if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
			return false;
	}
	return memmem(b, n, "..", 2) == NULL;
}

/* "s3://BUCKET[/PREFIX]" (or gs:// when allow_gs) into *gcs, *bucket and
 * *prefix ("" or ending in '/'), both allocated on success. */
static int parse_uri(const char *what, const char *uri, bool allow_gs, bool *gcs_out,
		     char **bucket_out, char **prefix_out, char *err, size_t errlen)
{
	const char *b, *slash;
	size_t blen, plen;
	char *bucket = NULL, *prefix = NULL;
	bool gcs = allow_gs && strncmp(uri, "gs://", 5) == 0;

	if (strncmp(uri, "s3://", 5) != 0 && !gcs) {
		snprintf(err, errlen, "%s must look like s3://BUCKET[/PREFIX]%s, got '%s'", what,
			 allow_gs ? " or gs://BUCKET[/PREFIX]" : "", uri);
		return -1;
	}
	b = uri + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_name_ok(b, blen)) {
		snprintf(err, errlen, "invalid bucket name in '%s'", uri);
		return -1;
	}
	bucket = strndup(b, blen);
	/* prefix: strip leading/trailing '/', then require safe components */
	{
		const char *p = slash ? slash : "";
		while (*p == '/')
			p++;
		plen = strlen(p);
		while (plen && p[plen - 1] == '/')
			plen--;
		prefix = malloc(plen + 2);
		if (!bucket || !prefix)
			goto nomem;
		memcpy(prefix, p, plen);
		if (plen)
			prefix[plen++] = '/';
		prefix[plen] = '\0';
	}
	for (const char *c = prefix; *c;) {
		const char *e = strchr(c, '/');
		size_t n = (size_t)(e - c);
		if (n == 0 || n > 255 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.')) {
			snprintf(err, errlen, "unsafe prefix in '%s' (empty, '.' or '..' component)", uri);
			goto fail;
		}
		c = e + 1;
	}
	*bucket_out = bucket;
	*prefix_out = prefix;
	*gcs_out = gcs;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	free(bucket);
	free(prefix);
	return -1;
}

int config_set_source(struct tierfs_config *cfg, const char *uri, char *err, size_t errlen)
{
	char *bucket, *prefix;
	bool gcs;

	if (parse_uri("source", uri, true, &gcs, &bucket, &prefix, err, errlen) != 0)
		return -1;
	free(cfg->bucket);
	free(cfg->prefix);
	cfg->bucket = bucket;
	cfg->prefix = prefix;
	cfg->gcs = gcs;
	return 0;
}

int config_shared_source(const struct tierfs_config *cfg, char **bucket, char **prefix,
			 char *err, size_t errlen)
{
	bool gcs;

	*bucket = *prefix = NULL;
	return parse_uri("--shared-cache", cfg->shared_cache, false, &gcs, bucket, prefix, err,
			 errlen);
}

static void set_from_env(char **field, const char *a, const char *b)
{
	const char *v = getenv(a);

	if (*field)
		return;
	if ((!v || !*v) && b)
		v = getenv(b);
	if (v && *v)
		*field = strdup(v);
}

void config_apply_env(struct tierfs_config *cfg)
{
	if (!cfg->gcs)
		set_from_env(&cfg->endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
	set_from_env(&cfg->region, "AWS_REGION", "AWS_DEFAULT_REGION");
	if (!cfg->region)
		cfg->region = strdup("us-east-1");
}

static void dump_auto(FILE *f, const char *key, uint64_t v)
{
	if (v == UINT64_MAX)
		fprintf(f, "%s = auto\n", key);
	else
		fprintf(f, "%s = %llu\n", key, (unsigned long long)v);
}

void config_dump(const struct tierfs_config *cfg, void *file)
{
	FILE *f = file;

	fprintf(f, "source = %s://%s/%s\n", cfg->gcs ? "gs" : "s3", cfg->bucket ? cfg->bucket : "",
		cfg->prefix ? cfg->prefix : "");
	fprintf(f, "endpoint = %s\n", cfg->endpoint ? cfg->endpoint
				       : cfg->gcs ? "(Google Cloud Storage)" : "(AWS)");
	fprintf(f, "region = %s\n", cfg->region ? cfg->region : "");
	fprintf(f, "path-style = %s\n", cfg->path_style ? "true" : "false");
	fprintf(f, "profile = %s\n", cfg->profile ? cfg->profile : "(default)");
	fprintf(f, "ca-bundle = %s\n", cfg->ca_bundle ? cfg->ca_bundle : "(system)");
	fprintf(f, "metadata-ttl = %u\n", cfg->metadata_ttl_s);
	fprintf(f, "max-stale = %u\n", cfg->max_stale_s);
	fprintf(f, "uid = %u\ngid = %u\n", (unsigned)cfg->uid, (unsigned)cfg->gid);
	fprintf(f, "file-mode = %04o\ndir-mode = %04o\n", (unsigned)cfg->file_mode,
		(unsigned)cfg->dir_mode);
	fprintf(f, "chunk-size = %llu\n", (unsigned long long)cfg->chunk_size);
	fprintf(f, "ram-size = %llu\n", (unsigned long long)cfg->ram_size);
	fprintf(f, "cache-dir = %s\n", cfg->cache_dir ? cfg->cache_dir : "");
	fprintf(f, "ssd-size = %llu\n", (unsigned long long)cfg->ssd_size);
	fprintf(f, "ssd-min-free = %u\n", cfg->ssd_min_free);
	fprintf(f, "ram-policy = %s\nssd-policy = %s\n", evict_kind_name(cfg->ram_policy),
		evict_kind_name(cfg->ssd_policy));
	fprintf(f, "cache-wipe = %s\n", cfg->cache_wipe ? "true" : "false");
	dump_auto(f, "kernel-readahead", cfg->kernel_readahead);
	dump_auto(f, "read-ahead", cfg->read_ahead);
	fprintf(f, "read-ahead-files = %u\n", cfg->read_ahead_files);
	fprintf(f, "list-ahead = %u\n", cfg->list_ahead);
	fprintf(f, "scan-prefetch = %u\n", cfg->scan_prefetch);
	fprintf(f, "plan-window = %u\n", cfg->plan_window);
	dump_auto(f, "read-ahead-mem", cfg->read_ahead_mem);
	dump_auto(f, "random-blocks", cfg->random_blocks);
	fprintf(f, "direct-io = %s\n", cfg->direct_io ? "true" : "false");
	fprintf(f, "passthrough = %s\n", cfg->passthrough ? "auto" : "off");
	fprintf(f, "verify-reads = %s\n", cfg->verify_reads ? "true" : "false");
	dump_auto(f, "scrub-rate", cfg->scrub_rate);
	fprintf(f, "parallel-gets = %u\n", cfg->parallel_gets);
	fprintf(f, "stall-timeout = %u\nmax-retries = %u\n", cfg->stall_timeout_s, cfg->max_retries);
	fprintf(f, "retry-mode = %s\n", cfg->adaptive_rate ? "adaptive" : "standard");
	fprintf(f, "max-connections = %u\nmax-threads = %u\n", cfg->max_connections,
		cfg->max_threads);
	fprintf(f, "shared-cache = %s\n", cfg->shared_cache ? cfg->shared_cache : "");
	fprintf(f, "shared-endpoint = %s\n", cfg->shared_endpoint ? cfg->shared_endpoint : "(AWS)");
	fprintf(f, "shared-region = %s\n", cfg->shared_region ? cfg->shared_region : "(region)");
	fprintf(f, "shared-profile = %s\n", cfg->shared_profile ? cfg->shared_profile
								: "(as the origin)");
	fprintf(f, "shared-timeout = %u\n", cfg->shared_timeout_ms);
	fprintf(f, "options = %s\n", cfg->fuse_options ? cfg->fuse_options : "");
}
