/* fuzz_config.c - fuzz target of the configuration: the INI file
 * (through a memfd, as a path), the mount source URI and sizes.  The
 * first byte picks which; the rest is the text.
 * Property: 0, or -1 with a message; a loaded configuration can be
 * printed; no crash, no leak.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load_file(const uint8_t *data, size_t size)
{
	struct tierfs_config cfg;
	char path[64], err[512] = "";
	int fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	char *dump = NULL;
	size_t dump_len = 0;
	FILE *f;

	assert(fd >= 0);
	assert(write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	config_init(&cfg);
	if (config_load_file(&cfg, path, err, sizeof(err)) != 0) {
		assert(err[0] != '\0');
	} else {
		f = open_memstream(&dump, &dump_len);
		assert(f);
		config_dump(&cfg, f);
		fclose(f);
		free(dump);
	}
	config_release(&cfg);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tierfs_config cfg;
	char err[512] = "";
	char *s;
	uint64_t v;

	if (size < 1)
		return 0;
	if (!(data[0] & 1)) {
		load_file(data + 1, size - 1);
		return 0;
	}
	s = strndup((const char *)data + 1, size - 1);
	assert(s);
	config_init(&cfg);
	if (config_set_source(&cfg, s, err, sizeof(err)) == 0) {
		assert(cfg.bucket && cfg.bucket[0]);
		assert(cfg.prefix);
		assert(!cfg.prefix[0] || cfg.prefix[strlen(cfg.prefix) - 1] == '/');
		assert(!strstr(cfg.prefix, "//"));
	} else {
		assert(err[0] != '\0');
	}
	config_release(&cfg);
	(void)config_parse_size(s, &v);
	free(s);
	return 0;
}
