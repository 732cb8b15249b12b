/* Unit tests for src/config: options, sizes, sources, files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "evict/evict.h"

static char err[512];

Test(config, sizes)
{
	uint64_t v;

	cr_assert_eq(config_parse_size("8M", &v), 0);
	cr_assert_eq(v, 8ull << 20);
	cr_assert_eq(config_parse_size("512K", &v), 0);
	cr_assert_eq(v, 512ull << 10);
	cr_assert_eq(config_parse_size("4G", &v), 0);
	cr_assert_eq(v, 4ull << 30);
	cr_assert_eq(config_parse_size("4GiB", &v), 0);
	cr_assert_eq(v, 4ull << 30);
	cr_assert_eq(config_parse_size("1048576", &v), 0);
	cr_assert_eq(v, 1048576);
	cr_assert_neq(config_parse_size("", &v), 0);
	cr_assert_neq(config_parse_size("-1M", &v), 0);
	cr_assert_neq(config_parse_size("12X", &v), 0);
	cr_assert_neq(config_parse_size("99999999999999999999T", &v), 0);
	cr_assert_neq(config_parse_size("17000000T", &v), 0);   /* overflows 64 bits */
}

Test(config, set_values_and_reject_bad_ones)
{
	struct tierfs_config c;

	config_init(&c);
	cr_assert_eq(c.chunk_size, 8u << 20);
	cr_assert_eq(config_set(&c, "chunk-size", "1M", err, sizeof(err)), 0);
	cr_assert_eq(c.chunk_size, 1u << 20);
	cr_assert_neq(config_set(&c, "chunk-size", "3M", err, sizeof(err)), 0);   /* not 2^n */
	cr_assert_neq(config_set(&c, "chunk-size", "1K", err, sizeof(err)), 0);
	cr_assert_eq(c.chunk_size, 1u << 20);
	cr_assert_eq(config_set(&c, "file-mode", "0640", err, sizeof(err)), 0);
	cr_assert_eq(c.file_mode, 0640);
	cr_assert_neq(config_set(&c, "file-mode", "0999", err, sizeof(err)), 0);
	cr_assert_eq(config_set(&c, "path-style", NULL, err, sizeof(err)), 0);
	cr_assert(c.path_style);
	cr_assert_eq(config_set(&c, "path-style", "false", err, sizeof(err)), 0);
	cr_assert_not(c.path_style);
	cr_assert_neq(config_set(&c, "path-style", "maybe", err, sizeof(err)), 0);
	cr_assert_neq(config_set(&c, "metadata-ttl", "-5", err, sizeof(err)), 0);
	cr_assert_neq(config_set(&c, "no-such-key", "1", err, sizeof(err)), 0);
	cr_assert(strstr(err, "unknown option"));
	cr_assert_eq(config_set(&c, "endpoint", "http://127.0.0.1:1", err, sizeof(err)), 0);
	cr_assert_str_eq(c.endpoint, "http://127.0.0.1:1");
	config_release(&c);
}

Test(config, source_uri)
{
	struct tierfs_config c;

	config_init(&c);
	cr_assert_eq(config_set_source(&c, "s3://bucket", err, sizeof(err)), 0);
	cr_assert_str_eq(c.bucket, "bucket");
	cr_assert_str_eq(c.prefix, "");
	cr_assert_eq(config_set_source(&c, "s3://my-bucket/train/shards/", err, sizeof(err)), 0);
	cr_assert_str_eq(c.bucket, "my-bucket");
	cr_assert_str_eq(c.prefix, "train/shards/");
	cr_assert_eq(config_set_source(&c, "s3://b.c.d/x", err, sizeof(err)), 0);
	cr_assert_str_eq(c.prefix, "x/");
	cr_assert_not(c.gcs);
	cr_assert_neq(config_set_source(&c, "gcs://bucket", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "http://bucket", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "gs://", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://a..b", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://bucket/a/../b", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://bucket/a//b", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://bucket/./b", err, sizeof(err)), 0);
	cr_assert_neq(config_set_source(&c, "s3://bu/cket", err, sizeof(err)), 0);  /* too short */
	/* a failed parse keeps the previous value */
	cr_assert_str_eq(c.bucket, "b.c.d");
	cr_assert_not(c.gcs);
	config_release(&c);
}

Test(config, source_uri_gs)
{
	struct tierfs_config c;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	config_init(&c);
	cr_assert_eq(config_set_source(&c, "gs://my_bucket.example/train/", err, sizeof(err)), 0);
	cr_assert(c.gcs);
	cr_assert_str_eq(c.bucket, "my_bucket.example");
	cr_assert_str_eq(c.prefix, "train/");
	cr_assert_neq(config_set_source(&c, "gs://bucket/a/../b", err, sizeof(err)), 0);
	cr_assert(c.gcs, "a failed parse keeps the previous source");
	/* the AWS endpoint variables name an S3 endpoint, never a GCS one */
	setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific:1", 1);
	config_apply_env(&c);
	cr_assert_null(c.endpoint);
	unsetenv("AWS_ENDPOINT_URL_S3");
	f = open_memstream(&text, &len);
	config_dump(&c, f);
	fclose(f);
	cr_assert(strstr(text, "source = gs://my_bucket.example/train/\n"), "%s", text);
	cr_assert(strstr(text, "endpoint = (Google Cloud Storage)\n"), "%s", text);
	free(text);
	cr_assert_eq(config_set_source(&c, "s3://back", err, sizeof(err)), 0);
	cr_assert_not(c.gcs);
	config_release(&c);
}

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/tierfs-config-test-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(config, file_loads_and_names_bad_lines)
{
	struct tierfs_config c;
	char *p;

	config_init(&c);
	p = write_tmp("# comment\nendpoint = http://127.0.0.1:7480\npath-style = true\n"
		      "[mount]\nchunk-size = 2M\nmetadata-ttl = 5\n");
	cr_assert_eq(config_load_file(&c, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.endpoint, "http://127.0.0.1:7480");
	cr_assert(c.path_style);
	cr_assert_eq(c.chunk_size, 2u << 20);
	cr_assert_eq(c.metadata_ttl_s, 5);
	unlink(p);

	p = write_tmp("region = eu-west-1\nbogus = 1\n");
	cr_assert_neq(config_load_file(&c, p, err, sizeof(err)), 0);
	cr_assert(strstr(err, ":2:"), "error names line 2: %s", err);
	cr_assert(strstr(err, "bogus"), "%s", err);
	unlink(p);

	p = write_tmp("[secrets]\nx = y\n");
	cr_assert_neq(config_load_file(&c, p, err, sizeof(err)), 0);
	unlink(p);

	cr_assert_neq(config_load_file(&c, "/nonexistent/tierfs.conf", err, sizeof(err)), 0);
	cr_assert(strstr(err, "cannot open"));
	config_release(&c);
}

Test(config, env_fallbacks_do_not_override)
{
	struct tierfs_config c;

	config_init(&c);
	setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific:1", 1);
	setenv("AWS_ENDPOINT_URL", "http://generic:1", 1);
	unsetenv("AWS_REGION");
	setenv("AWS_DEFAULT_REGION", "ap-south-1", 1);
	config_apply_env(&c);
	cr_assert_str_eq(c.endpoint, "http://s3-specific:1");
	cr_assert_str_eq(c.region, "ap-south-1");
	config_release(&c);

	config_init(&c);
	config_set(&c, "endpoint", "http://explicit:1", err, sizeof(err));
	unsetenv("AWS_DEFAULT_REGION");
	config_apply_env(&c);
	cr_assert_str_eq(c.endpoint, "http://explicit:1");
	cr_assert_str_eq(c.region, "us-east-1");
	config_release(&c);
}

Test(config, kernel_readahead_values)
{
	struct tierfs_config c;

	config_init(&c);
	cr_assert_eq(c.kernel_readahead, UINT64_MAX, "default is auto");
	cr_assert_eq(config_set(&c, "kernel-readahead", "0", err, sizeof(err)), 0);
	cr_assert_eq(c.kernel_readahead, 0);
	cr_assert_eq(config_set(&c, "kernel-readahead", "16M", err, sizeof(err)), 0);
	cr_assert_eq(c.kernel_readahead, 16u << 20);
	cr_assert_eq(config_set(&c, "kernel-readahead", "auto", err, sizeof(err)), 0);
	cr_assert_eq(c.kernel_readahead, UINT64_MAX);
	cr_assert_neq(config_set(&c, "kernel-readahead", "2G", err, sizeof(err)), 0);
	cr_assert_neq(config_set(&c, "kernel-readahead", "lots", err, sizeof(err)), 0);
	config_release(&c);
}

Test(config, read_ahead_values)
{
	struct tierfs_config c;

	config_init(&c);
	cr_assert_eq(c.read_ahead, UINT64_MAX, "default is auto (8 chunks)");
	cr_assert_eq(c.read_ahead_mem, UINT64_MAX, "default is auto (half the RAM tier)");
	cr_assert_eq(c.read_ahead_files, 16);
	cr_assert_eq(config_set(&c, "read-ahead", "0", err, sizeof(err)), 0);
	cr_assert_eq(c.read_ahead, 0);
	cr_assert_eq(config_set(&c, "read-ahead", "256M", err, sizeof(err)), 0);
	cr_assert_eq(c.read_ahead, 256u << 20);
	cr_assert_neq(config_set(&c, "read-ahead", "5G", err, sizeof(err)), 0);
	cr_assert(strstr(err, "up to 4G"), "%s", err);
	cr_assert_eq(config_set(&c, "read-ahead-mem", "2G", err, sizeof(err)), 0);
	cr_assert_eq(c.read_ahead_mem, 2ull << 30);
	cr_assert_eq(config_set(&c, "read-ahead-files", "64", err, sizeof(err)), 0);
	cr_assert_eq(c.read_ahead_files, 64);
	cr_assert_neq(config_set(&c, "read-ahead-files", "5000", err, sizeof(err)), 0);
	cr_assert_neq(config_set(&c, "read-ahead-files", "-1", err, sizeof(err)), 0);
	cr_assert_eq(c.random_blocks, UINT64_MAX, "default is auto (a sixteenth of the RAM tier)");
	cr_assert_eq(config_set(&c, "random-blocks", "0", err, sizeof(err)), 0);
	cr_assert_eq(c.random_blocks, 0);
	cr_assert_eq(config_set(&c, "random-blocks", "64M", err, sizeof(err)), 0);
	cr_assert_eq(c.random_blocks, 64u << 20);
	cr_assert_neq(config_set(&c, "random-blocks", "lots", err, sizeof(err)), 0);
	config_release(&c);
}

Test(config, eviction_policies_per_tier)
{
	struct tierfs_config c;
	char *p;

	config_init(&c);
	cr_assert_eq(c.ram_policy, EVICT_TINYLFU);
	cr_assert_eq(c.ssd_policy, EVICT_TINYLFU);
	cr_assert_eq(config_set(&c, "ram-policy", "lru", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.ram_policy, EVICT_LRU);
	cr_assert_eq(c.ssd_policy, EVICT_TINYLFU);
	p = write_tmp("ssd-policy = lfu\n");
	cr_assert_eq(config_load_file(&c, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.ssd_policy, EVICT_LFU);
	unlink(p);
	cr_assert_neq(config_set(&c, "ssd-policy", "arc", err, sizeof(err)), 0);
	cr_assert(strstr(err, "lru, lfu or tinylfu"), "%s", err);
	cr_assert_neq(config_set(&c, "ram-policy", "", err, sizeof(err)), 0);
	cr_assert_eq(c.ssd_policy, EVICT_LFU, "a bad value keeps the previous one");
	config_release(&c);
}

Test(config, retry_mode_standard_adaptive_and_the_sdk_variable)
{
	struct tierfs_config c;

	unsetenv("AWS_RETRY_MODE");
	config_init(&c);
	cr_assert(!c.adaptive_rate, "standard by default");
	cr_assert_eq(config_set(&c, "retry-mode", "adaptive", err, sizeof(err)), 0, "%s", err);
	cr_assert(c.adaptive_rate);
	cr_assert_neq(config_set(&c, "retry-mode", "legacy", err, sizeof(err)), 0);
	cr_assert(strstr(err, "standard or adaptive"), "%s", err);
	cr_assert(c.adaptive_rate, "a bad value keeps the previous one");
	cr_assert_eq(config_set(&c, "retry-mode", "standard", err, sizeof(err)), 0, "%s", err);
	cr_assert(!c.adaptive_rate);
	config_release(&c);

	setenv("AWS_RETRY_MODE", "adaptive", 1);
	config_init(&c);
	cr_assert(c.adaptive_rate, "AWS_RETRY_MODE=adaptive is the default then");
	config_release(&c);
	setenv("AWS_RETRY_MODE", "standard", 1);
	config_init(&c);
	cr_assert(!c.adaptive_rate);
	config_release(&c);
	unsetenv("AWS_RETRY_MODE");
}
