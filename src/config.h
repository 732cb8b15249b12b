/* config.h - the mount configuration: defaults, config file, command line.
 * It belongs to the tierfs command (main.c), above every layer: it names
 * the eviction policies, and the layers below get what they need from it
 * as plain values.
 *
 * Precedence, lowest first: built-in defaults, environment (endpoint,
 * region), the config file (--config), the command line.  The config file
 * is INI (parsed by libinih): `key = value` lines whose keys are the long
 * option names (endpoint, region, path-style, ...), in no section or in a
 * [mount] section.  Unknown keys and bad values are errors that name the
 * file and line.  Credentials are never read from this file.
 */
#ifndef TIERFS_CONFIG_H
#define TIERFS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tierfs_config {
	char *bucket;              /* from s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX] */
	char *prefix;              /* "" or "some/prefix/" (always ends in '/') */
	char *mountpoint;          /* absolute, canonical */
	char *endpoint;            /* NULL = AWS */
	char *region;              /* never NULL after config_finish() */
	char *profile;             /* NULL = AWS_PROFILE / "default" */
	char *ca_bundle;           /* PEM file of CAs to trust; NULL = AWS_CA_BUNDLE, else
				    * the system's */
	char *fuse_options;        /* extra -o options, comma-separated, or NULL */
	char *config_file;         /* NULL = none */
	bool gcs;                  /* a gs:// source: Google Cloud Storage */
	bool path_style;
	bool foreground;
	int verbosity;             /* 0 warn, 1 info, 2 debug */
	unsigned metadata_ttl_s;
	unsigned max_stale_s;      /* stale-if-error bound past the TTL; 0 = off */
	uid_t uid;
	gid_t gid;
	mode_t file_mode;
	mode_t dir_mode;
	uint64_t chunk_size;
	uint64_t ram_size;         /* RAM chunk tier capacity */
	char *cache_dir;           /* SSD tier directory; NULL = RAM tier only */
	uint64_t ssd_size;         /* SSD tier capacity; 0 = bounded by ssd_min_free only */
	unsigned ssd_min_free;     /* percent of the cache filesystem kept free */
	int ram_policy;            /* enum evict_kind: the RAM tier's eviction policy */
	int ssd_policy;            /* enum evict_kind: the SSD tier's */
	bool cache_wipe;           /* wipe a cache of another bucket/format/chunk size */
	bool direct_io;            /* file data bypasses the kernel page cache */
	bool passthrough;          /* "auto": the kernel reads files wholly on SSD itself
				    * when it can; false: "off" */
	bool verify_reads;         /* every read checks its blocks' checksums: no passthrough */
	uint64_t scrub_rate;       /* SSD bytes re-checked per idle second; 0 = off;
				    * UINT64_MAX = auto (16 MiB) */
	uint64_t kernel_readahead; /* bytes; 0 = kernel default; UINT64_MAX = 2 chunks */
	uint64_t read_ahead;       /* bytes per stream; 0 = off; UINT64_MAX = 8 chunks */
	unsigned read_ahead_files; /* files read ahead across a directory */
	unsigned list_ahead;       /* subdirectory listings fetched ahead of a walk */
	uint64_t read_ahead_mem;   /* bytes, all streams; UINT64_MAX = half the RAM tier */
	uint64_t random_blocks;    /* bytes of blocks kept for random readers; UINT64_MAX =
				    * auto (a sixteenth of the RAM tier), 0 = off */
	unsigned scan_prefetch;    /* fetchers for a job consuming a directory in any order,
				    * and for the loader's plan */
	unsigned plan_window;      /* files of a plan fetched ahead of its reader; 0 = 256 */
	unsigned parallel_gets;    /* ranged GETs per chunk fill somebody waits for */
	unsigned stall_timeout_s;
	unsigned max_retries;
	bool adaptive_rate;        /* --retry-mode adaptive: after a throttle, pace
				    * requests to a learned rate (s3/send_rate.h) */
	unsigned max_connections;
	unsigned max_threads;      /* FUSE worker threads */
	/* the tier shared by a cluster's nodes (tiers/shared_tier.h) */
	char *shared_cache;        /* "s3://BUCKET[/PREFIX]", NULL = none */
	char *shared_endpoint;     /* NULL = AWS for shared_region */
	char *shared_region;       /* NULL = region */
	char *shared_profile;      /* NULL = the origin's credentials chain */
	unsigned shared_timeout_ms; /* bound on one request to it */
};

/* Fill cfg with the built-in defaults (uid/gid = the caller's). */
void config_init(struct tierfs_config *cfg);

/* Free every string in cfg (cfg itself is caller-owned). */
void config_release(struct tierfs_config *cfg);

/* Set one option by its long name (without "--") from text.  Used by both
 * the command line and the config file.  0, or -1 with a message in err. */
int config_set(struct tierfs_config *cfg, const char *key, const char *value,
	       char *err, size_t errlen);

/* Does option `key` take a value?  (-1: unknown key.) */
int config_key_takes_value(const char *key);

/* Load an INI file into cfg (keys as for config_set).  0, or -1 with a
 * message naming the file and line in err. */
int config_load_file(struct tierfs_config *cfg, const char *path, char *err, size_t errlen);

/* Parse "s3://BUCKET[/PREFIX]" or "gs://BUCKET[/PREFIX]" into cfg->gcs,
 * cfg->bucket and cfg->prefix.  Rejects other schemes, empty or invalid
 * bucket names and unsafe prefixes (".", "..", "//"). */
int config_set_source(struct tierfs_config *cfg, const char *uri, char *err, size_t errlen);

/* Parse cfg->shared_cache ("s3://BUCKET[/PREFIX]"): *bucket and *prefix
 * ("" or ending in '/') allocated on success.  0, or -1 with a message. */
int config_shared_source(const struct tierfs_config *cfg, char **bucket, char **prefix,
			 char *err, size_t errlen);

/* Apply environment fallbacks (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * AWS_REGION, AWS_DEFAULT_REGION) to unset fields.  A gs:// source takes
 * no endpoint from the AWS variables (they name an S3 endpoint); call
 * after config_set_source(). */
void config_apply_env(struct tierfs_config *cfg);

/* Parse a size such as "8M", "512K", "4G", "1048576" (binary units). */
int config_parse_size(const char *s, uint64_t *out);

/* Print every option with its value to f, one "key = value" per line
 * (nothing secret is held here, so nothing is redacted). */
void config_dump(const struct tierfs_config *cfg, void *file);

#endif
