/* main.c - the tierfs command: mount, unmount, help, version.
 *
 * `tierfs mount` checks everything it can before mounting (config,
 * mountpoint, credentials, bucket) and, without -f, daemonizes only once
 * the mount is up: the parent waits on a pipe and exits 0 when the child
 * says "mounted", or non-zero after the child printed one line naming the
 * cause.  No FUSE types here (src/fuse owns them).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/tfs_err.h"
#include "ctl/cli.h"
#include "ctl/ctl_daemon.h"
#include "ctl/ctl_path.h"
#include "ctl/ctl_server.h"
#include "evict/shape.h"
#include "fs/fs.h"
#include "fuse/fuse_ops.h"
#include "s3/objstore_open.h"
#include "s3/s3_client.h"
#include "tiers/shared_tier.h"
#include "tiers/ssd_tier.h"

static const char usage_text[] =
	"usage: tierfs mount s3://BUCKET[/PREFIX] MOUNTPOINT [options]\n"
	"       tierfs mount gs://BUCKET[/PREFIX] MOUNTPOINT [options]   (Google Cloud Storage)\n"
	"       tierfs unmount MOUNTPOINT\n"
	"       tierfs stats|warm|pin|unpin|evict|residency|trace|epoch|config|ping|plan ...\n"
	"                (the control socket's commands: tierfs COMMAND --help)\n"
	"       tierfs --help | --version\n"
	"\n";

/* (strings of at most 4095 characters: all C99 compilers must take them) */
static const char usage_mount_text[] =
	"Mount options (each also a key of the --config file):\n"
	"  -f, --foreground         stay in the foreground (default: daemonize once mounted)\n"
	"  --config FILE            read options from an INI file (see conf/tierfs.conf)\n"
	"  --endpoint URL           S3 endpoint (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS);\n"
	"                           for gs://, the XML API endpoint (https://storage.googleapis.com)\n"
	"  --region R               region (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1);\n"
	"                           gs:// signs HMAC requests for region auto\n"
	"  --path-style             path-style addressing (default: virtual-hosted; gs:// always)\n"
	"  --profile P              credentials profile of the shared credentials file (its\n"
	"                           keys, else its credential_process); HMAC keys for gs://\n"
	"  --ca-bundle FILE         trust the CAs in this PEM file for every HTTPS connection\n"
	"                           (else AWS_CA_BUNDLE, else the system's)\n"
	"  --metadata-ttl SECONDS   how long listings and attributes are trusted (60)\n"
	"  --uid N, --gid N         owner of every file (the caller's)\n"
	"  --file-mode OCTAL        permission bits of files (0444)\n"
	"  --dir-mode OCTAL         permission bits of directories (0555)\n"
	"  --chunk-size SIZE        unit of ranged GETs and caching, power of two (8M)\n"
	"  --ram-size SIZE          RAM chunk cache capacity (256M)\n"
	"  --cache-dir DIR          SSD tier: keep chunks on local disk under DIR, warm across\n"
	"                           restarts (default: none, RAM tier only)\n"
	"  --ssd-size SIZE          SSD tier capacity (default: bounded by --ssd-min-free only)\n"
	"  --ssd-min-free PERCENT   keep this much of the cache disk free, 0-99 (5)\n"
	"  --ram-policy POLICY      RAM tier eviction: lru, lfu or tinylfu (tinylfu)\n"
	"  --ssd-policy POLICY      SSD tier eviction and admission: lru, lfu or tinylfu (tinylfu)\n"
	"  --cache-wipe             wipe a --cache-dir made for another bucket, prefix,\n"
	"                           endpoint, chunk size or format (default: refuse it)\n"
	"  --kernel-readahead SIZE  the kernel's readahead window on this mount: auto = two\n"
	"                           chunks, at most a quarter of --ram-size, 0 = kernel\n"
	"                           default (128K) (auto)\n"
	"  --read-ahead SIZE        bytes a sequential reader keeps in flight ahead of it,\n"
	"                           within a file and across a directory's files read in\n"
	"                           listing order; 0 = off, auto = 8 chunks (auto)\n"
	"  --read-ahead-files N     files read ahead across a directory (16)\n"
	"  --list-ahead N           subdirectory listings fetched ahead of a walk (16)\n"
	"  --read-ahead-mem SIZE    bound on read-ahead queued or in flight, and on unread\n"
	"                           read-ahead kept from eviction; part of --ram-size;\n"
	"                           auto = half of it (auto)\n"
	"  --scan-prefetch N        files fetched at once for a job found reading a\n"
	"                           directory's files once each in any order (a shuffled\n"
	"                           epoch): the others are fetched ahead, to SSD when there\n"
	"                           is one; also the fetchers of a loader's plan\n"
	"                           (tierfs plan); 0 = off, at most 32 (16)\n"
	"  --plan-window N          files of a loader's plan fetched ahead of its reader,\n"
	"                           at most (and half of --read-ahead-mem) (256)\n"
	"  --direct-io              file data bypasses the kernel page cache: one copy per\n"
	"                           read instead of two, no double caching (default: off)\n"
	;

/* (the options continue: C99 compilers need only take 4095 characters in one string) */
static const char usage_text2[] =
	"  --random-blocks SIZE     bound on the blocks kept for random readers, who fetch\n"
	"                           only the blocks they read; beside --ram-size; 0 = off\n"
	"                           (whole chunks), auto = a sixteenth of --ram-size, none\n"
	"                           with --shared-cache (auto)\n"
	"  --passthrough MODE       auto: the kernel reads a file wholly on SSD by itself\n"
	"                           (FUSE passthrough; needs root, Linux 6.9+), else the\n"
	"                           daemon serves it; off: the daemon always does (auto)\n"
	"  --verify-reads           check every read of SSD bytes against their checksums\n"
	"                           (turns passthrough off) (default: off)\n"
	"  --scrub-rate SIZE        SSD bytes re-read and checked per second while the cache\n"
	"                           disk's writer is idle; 0 = off, auto = 16M (auto)\n"
	"  --parallel-gets N        ranged GETs a chunk a reader waits for is fetched with,\n"
	"                           parts of at least 2M, 1-4; past a stream's first\n"
	"                           read-ahead window, a fetch ahead is one GET (4)\n"
	"  --stall-timeout SECONDS  abort and retry a transfer that makes no progress (15)\n"
	"  --max-stale SECONDS      when the store does not answer (refused, 5xx, timeouts),\n"
	"                           keep serving listings, attributes and cached bytes up to\n"
	"                           this long past --metadata-ttl; 0 = off (86400)\n"
	"  --max-retries N          retries of a failed request before EIO (6)\n"
	"  --retry-mode MODE        standard, or adaptive: once the store says slow\n"
	"                           down, pace requests to a rate learned from it\n"
	"                           ($AWS_RETRY_MODE, else standard)\n"
	"  --max-connections N      connections to the object store (64)\n"
	"  --max-threads N          FUSE worker threads (16)\n"
	"  -o OPTIONS               FUSE mount options (allow_other, debug, ...)\n"
	"  -v                       more logging (-v info, -vv debug)\n"
	"\n";

/* (more strings: C99 compilers need only take 4095 characters in one) */
static const char usage_shared_text[] =
	"Shared cache tier options (docs/shared.md):\n"
	"  --shared-cache URI       s3://BUCKET[/PREFIX]: a chunk tier shared by every node\n"
	"                           mounting the same origin with it, between SSD and\n"
	"                           origin (default: none)\n"
	"                           (BUCKET NAME--ZONE--x-s3: S3 Express One Zone)\n"
	"  --shared-endpoint URL    its S3 endpoint, path-style (default: AWS; for a\n"
	"                           directory bucket its zonal endpoint)\n"
	"  --shared-region R        its region (default: --region)\n"
	"  --shared-profile P       its credentials profile (default: the origin's chain)\n"
	"  --shared-timeout MS      bound on one request to it, >= 100 (1000)\n"
	"\n";

static const char usage_creds_text[] =
	"Signals: SIGUSR1 logs one line of counters (S3, RAM tier, SSD tier).\n"
	"\n"
	"Credentials for s3://, the first found: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /\n"
	"AWS_SESSION_TOKEN; web identity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN); the\n"
	"shared credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,\n"
	"AWS_PROFILE); credential_process in ~/.aws/config (AWS_CONFIG_FILE); container\n"
	"credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI); the EC2 instance\n"
	"profile (IMDSv2; AWS_EC2_METADATA_DISABLED=true skips it).  For gs://: HMAC keys\n"
	"(--profile, AWS_PROFILE, AWS_ACCESS_KEY_ID); GOOGLE_APPLICATION_CREDENTIALS (service\n"
	"account key or authorized user); gcloud's application_default_credentials.json;\n"
	"the GCE metadata server (GCE_METADATA_HOST).  Temporary credentials are refreshed\n"
	"before they expire.  `tierfs config` names the source in use (docs/backends.md).\n"
	"TLS certificates and host names are always verified (--ca-bundle, AWS_CA_BUNDLE).\n";

static void die_usage(const char *msg)
{
	fprintf(stderr, "tierfs: %s\n(see tierfs --help)\n", msg);
	exit(2);
}

/* One line of every counter (common/counters.h), for SIGUSR1 and unmount:
 * tests and operators parse it. */
static void log_stats(int level, struct tfs_fs *fs, const char *when)
{
	struct tfs_counters c;
	char line[4096];

	fs_counters(fs, &c);
	tfs_counters_line(&c, line, sizeof(line));
	log_at(level, "stats (%s): %s", when, line);
}

/* SIGUSR1 is blocked in every thread; this one waits for it. */
struct stats_thread {
	pthread_t th;
	bool started;
	atomic_bool stop;
	struct tfs_fs *fs;
};

static void *stats_run(void *arg)
{
	struct stats_thread *st = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (atomic_load(&st->stop))
			return NULL;
		log_stats(LOG_LVL_NOTICE, st->fs, "SIGUSR1");
	}
}

static void stats_thread_stop(struct stats_thread *st)
{
	if (!st->started)
		return;
	atomic_store(&st->stop, true);
	pthread_kill(st->th, SIGUSR1);
	pthread_join(st->th, NULL);
	st->started = false;
}

/* The daemon chdirs to /: a relative --cache-dir is made absolute first.
 * (Not canonicalised: the directory may not exist yet, and the SSD tier
 * refuses a symlink itself.) */
/* Read-ahead's share of the RAM tier: half by default, never more than
 * three quarters (readers need slots of their own). */
/* --kernel-readahead auto: two chunks, so that the next chunk's GET starts
 * before its first byte is read; but at most a quarter of the RAM tier
 * (at least 128K, the kernel's default): the pages the kernel asks for
 * ahead of the reader are chunks RAM must hold beside the one being read
 * and the read-ahead, and a window as large as RAM had the next chunk's
 * fill evict the one being read (a 16 MiB tier, 8 MiB chunks). */
static uint64_t kernel_readahead_auto(const struct tierfs_config *cfg)
{
	uint64_t ra = 2 * cfg->chunk_size;

	if (ra > cfg->ram_size / 4)
		ra = cfg->ram_size / 4;
	return ra < (128u << 10) ? 128u << 10 : ra;
}

/* The bound on random readers' blocks (part_cache.h): auto is a
 * sixteenth of the RAM tier, none with a shared tier (a random reader
 * there fetches the whole chunk from the shared copy rather than its
 * blocks from the origin); at least half a chunk, the most a chunk holds
 * before it is made whole. */
static uint64_t random_blocks(const struct tierfs_config *cfg)
{
	uint64_t b = cfg->random_blocks, half = cfg->chunk_size / 2;

	if (b == UINT64_MAX)
		b = cfg->shared_cache ? 0 : cfg->ram_size / 16;
	if (b > 0 && b < half) {
		if (cfg->random_blocks != UINT64_MAX)
			log_warn("random-blocks %llu is less than half a chunk: %llu used",
				 (unsigned long long)b, (unsigned long long)half);
		b = half;
	}
	return b;
}

static uint64_t read_ahead_mem(const struct tierfs_config *cfg)
{
	uint64_t most = cfg->ram_size / 4 * 3;

	if (cfg->read_ahead_mem == UINT64_MAX)
		return cfg->ram_size / 2;
	if (cfg->read_ahead_mem > most) {
		log_warn("read-ahead-mem %llu is more than 3/4 of ram-size: %llu used",
			 (unsigned long long)cfg->read_ahead_mem, (unsigned long long)most);
		return most;
	}
	return cfg->read_ahead_mem;
}

static int absolutize_cache_dir(struct tierfs_config *cfg)
{
	char cwd[PATH_MAX], *abs;

	if (!cfg->cache_dir || cfg->cache_dir[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "tierfs: getcwd: %s\n", strerror(errno));
		return -1;
	}
	if (asprintf(&abs, "%s/%s", cwd, cfg->cache_dir) < 0) {
		fprintf(stderr, "tierfs: out of memory\n");
		return -1;
	}
	free(cfg->cache_dir);
	cfg->cache_dir = abs;
	return 0;
}

/* What a cache directory belongs to: another endpoint, bucket or prefix
 * must not be served from it. */
static int open_ssd_tier(const struct tierfs_config *cfg, struct ssd_tier **out)
{
	char owner[4096], err[1024];
	/* queued writes hold RAM chunks: at most a quarter of the RAM tier's
	 * slots and of its bytes (512 MiB at most), so a queue of small
	 * files is as deep in bytes as one of whole chunks */
	size_t slots = evict_ram_slots(cfg->ram_size, cfg->chunk_size) / 4;
	unsigned queue = (unsigned)(slots < 1 ? 1 : slots > 65536 ? 65536 : slots);
	uint64_t queue_bytes = cfg->ram_size / 4 > (512u << 20) ? 512u << 20 : cfg->ram_size / 4;
	struct ssd_tier_config sc;
	int rc;

	if (queue_bytes < cfg->chunk_size)
		queue_bytes = cfg->chunk_size;   /* a whole chunk fits, whatever the RAM */
	*out = NULL;
	if (!cfg->cache_dir)
		return 0;
	/* s3:// keeps the string it always had, so existing caches stay warm */
	if (cfg->gcs)
		snprintf(owner, sizeof(owner), "gs %s %s %s",
			 cfg->endpoint ? cfg->endpoint : "google", cfg->bucket, cfg->prefix);
	else
		snprintf(owner, sizeof(owner), "%s %s %s",
			 cfg->endpoint ? cfg->endpoint : "aws", cfg->bucket, cfg->prefix);
	sc = (struct ssd_tier_config){
		.dir = cfg->cache_dir,
		.owner = owner,
		.capacity = cfg->ssd_size,
		.min_free_pct = cfg->ssd_min_free,
		.policy = (enum evict_kind)cfg->ssd_policy,
		.chunk_size = (size_t)cfg->chunk_size,
		.queue_max = queue,
		.queue_bytes = queue_bytes,
		/* readers' chunks the writer is behind on: copies, beyond --ram-size */
		.spill_max = cfg->chunk_size * 4 > (64u << 20) ? cfg->chunk_size * 4 : 64u << 20,
		.scrub_rate = cfg->scrub_rate == UINT64_MAX ? 16u << 20 : cfg->scrub_rate,
		.wipe = cfg->cache_wipe,
		.front_bytes = cfg->ram_size,
	};
	rc = ssd_tier_open(&sc, out, err, sizeof(err));
	if (rc == TFS_E_NOSPC) {
		/* A full cache disk costs the cache, never the mount: the reads
		 * go to the store until a restart finds room. */
		log_warn("cache: %s; mounting without the SSD tier", err);
		return 0;
	}
	if (rc != TFS_OK) {
		fprintf(stderr, "tierfs: mount failed: cache: %s\n", err);
		return -1;
	}
	return 0;
}

/* The tier shared by the cluster, when --shared-cache names one.  A store
 * that refuses the credentials or has no such bucket is a mount error; one
 * that cannot be reached now is not (the tier is skipped until it
 * answers).  0 or -1 (message printed). */
static int open_shared_tier(const struct tierfs_config *cfg, struct shared_tier **out)
{
	char *bucket = NULL, *prefix = NULL, origin[4096], err[1024];
	struct objstore *store = NULL;
	int rc = -1, orc;

	*out = NULL;
	if (!cfg->shared_cache)
		return 0;
	if (cfg->shared_timeout_ms < 100) {
		fprintf(stderr, "tierfs: --shared-timeout is at least 100 (milliseconds)\n");
		return -1;
	}
	if (config_shared_source(cfg, &bucket, &prefix, err, sizeof(err)) != 0) {
		fprintf(stderr, "tierfs: %s\n", err);
		return -1;
	}
	{
		/* short bounds and no retry: a slow or dead tier costs a read
		 * at most one timeout, then the breaker skips it */
		struct objstore_source os = {
			.scheme = OBJSTORE_S3,
			.bucket = bucket,
			.prefix = prefix,
			.endpoint = cfg->shared_endpoint,
			.region = cfg->shared_region ? cfg->shared_region : cfg->region,
			.path_style = cfg->shared_endpoint != NULL,
			/* gs:// profiles hold HMAC keys for Google, not for this */
			.profile = cfg->shared_profile ? cfg->shared_profile
				   : cfg->gcs ? NULL : cfg->profile,
			.max_connections = cfg->max_connections,
			.max_retries = 0,
			.stall_timeout_ms = 1000,
			.connect_timeout_ms = cfg->shared_timeout_ms,
			.request_timeout_ms = cfg->shared_timeout_ms,
		};

		orc = objstore_open(&os, &store, NULL, 0, err, sizeof(err));
		if (orc == TFS_E_CONNECT || orc == TFS_E_IO) {
			log_warn("shared cache: %s; skipped until it answers", err);
			os.skip_check = true;
			orc = objstore_open(&os, &store, NULL, 0, err, sizeof(err));
		}
		if (orc != TFS_OK) {
			fprintf(stderr, "tierfs: shared cache: %s\n", err);
			goto out;
		}
	}
	/* chunks of one origin version are shared by every node that names
	 * the origin alike */
	snprintf(origin, sizeof(origin), "%s://%s@%s", cfg->gcs ? "gs" : "s3", cfg->bucket,
		 cfg->endpoint ? cfg->endpoint : "default");
	/* queued writes are copies: a quarter of the RAM tier's size, at
	 * least four chunks; a fetch ahead waits for room in it as long as
	 * ten requests to the tier may take (a queue that full drains that
	 * fast through four writers, or the tier is failing and its breaker
	 * ends the wait) */
	*out = shared_tier_new(&(struct shared_tier_config){
		.store = store,
		.prefix = prefix,
		.origin = origin,
		.chunk_size = (size_t)cfg->chunk_size,
		.queue_bytes = cfg->ram_size / 4 > 4 * cfg->chunk_size ? cfg->ram_size / 4
								     : 4 * cfg->chunk_size,
		.put_wait_ms = 10 * cfg->shared_timeout_ms,
	});
	if (!*out) {
		fprintf(stderr, "tierfs: shared cache: out of memory\n");
		goto out;
	}
	rc = 0;
out:
	free(bucket);
	free(prefix);
	return rc;
}

struct mount_state {
	int ready_fd;              /* write end of the daemon's pipe, or -1 */
	bool ready;                /* the kernel connected */
};

/* Called once the kernel has connected: tell the waiting parent, and drop
 * the terminal. */
static void on_ready(void *ctx)
{
	struct mount_state *ms = ctx;
	int fd;

	ms->ready = true;
	if (ms->ready_fd < 0)
		return;
	if (write(ms->ready_fd, "K", 1) != 1)
		log_warn("cannot signal readiness: %s", strerror(errno));
	close(ms->ready_fd);
	ms->ready_fd = -1;
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	log_use_syslog(true);
}

/* Parse `mount` arguments into cfg.  Exits with usage errors. */
static void parse_mount_args(int argc, char **argv, struct tierfs_config *cfg)
{
	const char *positional[2] = { NULL, NULL };
	int npos = 0;
	char err[512];

	/* the config file first, so the command line overrides it */
	for (int i = 0; i < argc; i++) {
		const char *cf = NULL;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			cf = argv[i + 1];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			cf = argv[i] + 9;
		if (cf) {
			if (config_load_file(cfg, cf, err, sizeof(err)) != 0) {
				fprintf(stderr, "tierfs: %s\n", err);
				exit(2);
			}
			free(cfg->config_file);
			cfg->config_file = strdup(cf);
		}
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0)
			continue;
		if (strcmp(a, "-f") == 0) {
			cfg->foreground = true;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "-vv") == 0) {
			cfg->verbosity += (int)strlen(a) - 1;
		} else if (strcmp(a, "-o") == 0) {
			if (++i >= argc)
				die_usage("-o needs a value");
			if (cfg->fuse_options) {
				size_t n = strlen(cfg->fuse_options) + strlen(argv[i]) + 2;
				char *joined = malloc(n);
				if (!joined)
					die_usage("out of memory");
				snprintf(joined, n, "%s,%s", cfg->fuse_options, argv[i]);
				free(cfg->fuse_options);
				cfg->fuse_options = joined;
			} else if (config_set(cfg, "options", argv[i], err, sizeof(err)) != 0) {
				die_usage(err);
			}
		} else if (strncmp(a, "--", 2) == 0) {
			char name[64];
			const char *eq = strchr(a + 2, '='), *value = NULL;
			size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			int takes;

			if (n >= sizeof(name)) {
				snprintf(err, sizeof(err), "unknown option '%s'", a);
				die_usage(err);
			}
			memcpy(name, a + 2, n);
			name[n] = '\0';
			takes = config_key_takes_value(name);
			if (takes < 0 || strcmp(name, "options") == 0) {
				snprintf(err, sizeof(err), "unknown option '%s'", a);
				die_usage(err);
			}
			if (eq) {
				value = eq + 1;
			} else if (takes) {
				if (++i >= argc) {
					snprintf(err, sizeof(err), "option '%s' needs a value", a);
					die_usage(err);
				}
				value = argv[i];
			}
			if (config_set(cfg, name, value, err, sizeof(err)) != 0)
				die_usage(err);
		} else if (a[0] == '-' && a[1] != '\0') {
			snprintf(err, sizeof(err), "unknown option '%s'", a);
			die_usage(err);
		} else {
			if (npos == 2)
				die_usage("too many arguments");
			positional[npos++] = a;
		}
	}
	if (npos != 2)
		die_usage("mount needs s3://BUCKET[/PREFIX] (or gs://) and MOUNTPOINT");
	if (config_set_source(cfg, positional[0], err, sizeof(err)) != 0)
		die_usage(err);
	cfg->mountpoint = strdup(positional[1]);
}

/* Canonicalise and check the mountpoint.  0 or -1 (message printed). */
static int check_mountpoint(struct tierfs_config *cfg)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(cfg->mountpoint, real)) {
		fprintf(stderr, "tierfs: mountpoint %s: %s\n", cfg->mountpoint, strerror(errno));
		return -1;
	}
	if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tierfs: mountpoint %s is not a directory\n", real);
		return -1;
	}
	if (tierfs_is_mountpoint(real)) {
		fprintf(stderr, "tierfs: mountpoint %s is busy: already mounted\n", real);
		return -1;
	}
	free(cfg->mountpoint);
	cfg->mountpoint = strdup(real);
	return cfg->mountpoint ? 0 : -1;
}

static int cmd_mount(int argc, char **argv)
{
	struct tierfs_config cfg;
	struct objstore *store = NULL;
	struct tfs_fs *fs = NULL;
	struct ssd_tier *ssd = NULL;
	struct shared_tier *shared = NULL;
	struct stats_thread stt = { 0 };
	struct ctl_daemon *ctl = NULL;
	struct ctl_server *ctl_srv = NULL;
	char sock_path[PATH_MAX], cred_desc[512];
	struct mount_state ms = { -1, false };
	char fsname[300], err[512];
	int status = 1, pipefd[2] = { -1, -1 };

	/* Chunk buffers are big (the chunk size) and churn.  glibc raises its
	 * mmap threshold past a freed mmapped block, after which every chunk
	 * buffer comes from the heap, whose freed middle it keeps: reading
	 * 512 MiB through a 64 MiB RAM tier of 1 MiB chunks reached an RSS of
	 * 306 MiB.  A fixed threshold keeps each buffer its own mapping,
	 * returned when freed (102 MiB).  Before any thread exists. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 << 10);
	/* blocked before any thread exists, so only the stats thread gets it */
	{
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	config_init(&cfg);
	parse_mount_args(argc, argv, &cfg);
	config_apply_env(&cfg);
	log_set_level(LOG_LVL_WARN + cfg.verbosity);
	if (cfg.ca_bundle) {
		/* one setting for every HTTPS client: the store's, and the
		 * credential endpoints' (which read AWS_CA_BUNDLE) */
		if (access(cfg.ca_bundle, R_OK) != 0) {
			fprintf(stderr, "tierfs: --ca-bundle %s: %s\n", cfg.ca_bundle, strerror(errno));
			goto out;
		}
		setenv("AWS_CA_BUNDLE", cfg.ca_bundle, 1);
	}
	if (cfg.ram_size < cfg.chunk_size) {
		fprintf(stderr, "tierfs: --ram-size must be at least --chunk-size\n");
		goto out;
	}
	if (cfg.ssd_size && cfg.ssd_size < cfg.chunk_size + 4096) {
		fprintf(stderr, "tierfs: --ssd-size must hold at least one chunk (--chunk-size "
			"plus its 4K header)\n");
		goto out;
	}
	if ((cfg.ssd_size || cfg.cache_wipe) && !cfg.cache_dir) {
		fprintf(stderr, "tierfs: --ssd-size and --cache-wipe need --cache-dir\n");
		goto out;
	}
	if (check_mountpoint(&cfg) != 0 || absolutize_cache_dir(&cfg) != 0)
		goto out;
	if (ctl_path_socket(cfg.mountpoint, geteuid(), true, sock_path, sizeof(sock_path), err,
			    sizeof(err)) != TFS_OK) {
		fprintf(stderr, "tierfs: control socket: %s\n", err);
		goto out;
	}

	if (!cfg.foreground) {
		pid_t pid;
		char c;
		ssize_t n;

		if (pipe2(pipefd, O_CLOEXEC) != 0) {
			fprintf(stderr, "tierfs: pipe: %s\n", strerror(errno));
			goto out;
		}
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "tierfs: fork: %s\n", strerror(errno));
			goto out;
		}
		if (pid > 0) {
			close(pipefd[1]);
			do {
				n = read(pipefd[0], &c, 1);
			} while (n < 0 && errno == EINTR);
			close(pipefd[0]);
			if (n == 1 && c == 'K') {
				status = 0;
			} else {
				int ws;
				/* the child printed why; reap it for its status */
				waitpid(pid, &ws, 0);
				status = 1;
			}
			config_release(&cfg);
			return status;
		}
		close(pipefd[0]);
		ms.ready_fd = pipefd[1];
		setsid();
		if (chdir("/") != 0)
			log_warn("chdir /: %s", strerror(errno));
	}

	{
		/* credentials, backend and bucket check; after the fork, so that
		 * nothing of a refreshing provider crosses it.  cred_desc is what
		 * `tierfs config` shows: the source, never a secret. */
		struct objstore_source os = {
			.scheme = cfg.gcs ? OBJSTORE_GCS : OBJSTORE_S3,
			.bucket = cfg.bucket,
			.prefix = cfg.prefix,
			.endpoint = cfg.endpoint,
			.region = cfg.region,
			.path_style = cfg.path_style,
			.profile = cfg.profile,
			.max_connections = cfg.max_connections,
			.max_retries = cfg.max_retries,
			.stall_timeout_ms = cfg.stall_timeout_s * 1000,
			.adaptive_rate = cfg.adaptive_rate,
			.read_only = true,   /* the mount only reads its origin */
		};
		if (objstore_open(&os, &store, cred_desc, sizeof(cred_desc), err, sizeof(err)) != TFS_OK) {
			fprintf(stderr, "tierfs: %s\n", err);
			goto out;
		}
	}
	if (open_ssd_tier(&cfg, &ssd) != 0 || open_shared_tier(&cfg, &shared) != 0)
		goto out;
	{
		struct fs_config fc = {
			.store = store,
			.prefix = cfg.prefix,
			.metadata_ttl_ms = cfg.metadata_ttl_s * 1000,
			.max_stale_ms = (uint64_t)cfg.max_stale_s * 1000,
			.chunk_size = cfg.chunk_size,
			.ram_bytes = cfg.ram_size,
			.ram_policy = cfg.ram_policy,
			.ssd = ssd,
			.shared = shared,
			.parallel_gets = cfg.parallel_gets ? cfg.parallel_gets : 1,
			.read_ahead = cfg.read_ahead == UINT64_MAX ? 8 * cfg.chunk_size
								     : cfg.read_ahead,
			.read_ahead_files = cfg.read_ahead_files,
			.list_ahead = cfg.list_ahead,
			.read_ahead_mem = read_ahead_mem(&cfg),
			.random_bytes = random_blocks(&cfg),
			.scan_threads = cfg.scan_prefetch,
			.plan_window = cfg.plan_window,
			/* a fill ahead is one GET: a quarter of the connections, the
			 * rest left to readers and their parts */
			.read_ahead_threads = cfg.max_connections / 4 > 16 ? 16
					      : cfg.max_connections / 4 ? cfg.max_connections / 4 : 1,
			.uid = cfg.uid,
			.gid = cfg.gid,
			.file_mode = cfg.file_mode & 07777,
			.dir_mode = cfg.dir_mode & 07777,
		};
		fs = fs_new(&fc);
	}
	if (!fs) {
		fprintf(stderr, "tierfs: out of memory setting up the file system\n");
		goto out;
	}
	{
		char *text = NULL, source[4096];
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		struct ctl_daemon_config dc = {
			.fs = fs, .source = source, .mountpoint = cfg.mountpoint,
			.credentials = cred_desc, .socket_path = sock_path,
		};

		snprintf(source, sizeof(source), "%s://%s/%s", cfg.gcs ? "gs" : "s3", cfg.bucket,
			 cfg.prefix);
		if (source[strlen(source) - 1] == '/')
			source[strlen(source) - 1] = '\0';
		if (f) {
			config_dump(&cfg, f);
			fclose(f);
			dc.config_text = text;
			ctl = ctl_daemon_new(&dc);
		}
		free(text);
	}
	if (!ctl) {
		fprintf(stderr, "tierfs: out of memory setting up the control socket\n");
		goto out;
	}
	if (ctl_server_start(sock_path, ctl_daemon_handle, ctl, &ctl_srv, err, sizeof(err)) != TFS_OK) {
		fprintf(stderr, "tierfs: mount failed: %s\n", err);
		goto out;
	}
	printf("tierfs: control socket %s\n", sock_path);
	fflush(stdout);
	stt.fs = fs;
	stt.started = pthread_create(&stt.th, NULL, stats_run, &stt) == 0;
	snprintf(fsname, sizeof(fsname), "tierfs:%s", cfg.bucket);
	{
		struct tierfs_mount_opts mo = {
			.mountpoint = cfg.mountpoint,
			.fsname = fsname,
			.extra_options = cfg.fuse_options,
			.ttl_s = cfg.metadata_ttl_s,
			.max_threads = cfg.max_threads,
			/* 1 MiB: what Linux sends on 4 KiB pages, and at the
			 * smallest chunk size (64K) within FS_READ_MAX_IOV */
			.max_read = 1u << 20,
			.direct_io = cfg.direct_io,
			.passthrough = cfg.passthrough && !cfg.verify_reads,
			.kernel_readahead_kb = (unsigned)((cfg.kernel_readahead == UINT64_MAX
							   ? kernel_readahead_auto(&cfg)
							   : cfg.kernel_readahead) / 1024),
		};
		if (tierfs_fuse_serve(fs, &mo, on_ready, &ms, err, sizeof(err)) != 0) {
			fprintf(stderr, "tierfs: mount failed: %s\n", err);
			goto out;
		}
		if (!ms.ready) {
			fprintf(stderr, "tierfs: mount failed: the kernel never connected to %s\n",
				cfg.mountpoint);
			goto out;
		}
	}
	stats_thread_stop(&stt);
	log_stats(LOG_LVL_INFO, fs, "unmounted");
	status = 0;
out:
	stats_thread_stop(&stt);
	ctl_server_stop(ctl_srv);  /* before what its requests use */
	ctl_daemon_free(ctl);
	if (ms.ready_fd >= 0)
		close(ms.ready_fd);   /* parent sees EOF: failure */
	fs_free(fs);              /* first: it flushes writes queued on the SSD tier */
	shared_tier_free(shared);
	ssd_tier_close(ssd);
	objstore_free(store);
	config_release(&cfg);
	return status;
}

static int cmd_unmount(int argc, char **argv)
{
	char real[PATH_MAX], err[512];

	if (argc != 1)
		die_usage("unmount needs exactly one MOUNTPOINT");
	if (!realpath(argv[0], real)) {
		fprintf(stderr, "tierfs: %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	if (!tierfs_is_mountpoint(real)) {
		fprintf(stderr, "tierfs: %s is not mounted\n", real);
		return 1;
	}
	if (tierfs_unmount(real, err, sizeof(err)) != 0) {
		fprintf(stderr, "tierfs: %s\n", err);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die_usage("missing command");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage_text, stdout);
		fputs(usage_mount_text, stdout);
		fputs(usage_text2, stdout);
		fputs(usage_shared_text, stdout);
		fputs(usage_creds_text, stdout);
		fputs("\nControl commands (over the mount's control socket, docs/control.md):\n", stdout);
		cli_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("tierfs %s\n", TIERFS_VERSION);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	if (cli_is_command(argv[1]))
		return cli_main(argc, argv);
	if (strcmp(argv[1], "mount") == 0)
		return cmd_mount(argc - 2, argv + 2);
	if (strcmp(argv[1], "unmount") == 0 || strcmp(argv[1], "umount") == 0)
		return cmd_unmount(argc - 2, argv + 2);
	die_usage("unknown command");
	return 2;
}
