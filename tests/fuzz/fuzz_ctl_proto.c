/* fuzz_ctl_proto.c - fuzz target of the control socket's request parser.
 *
 * Built two ways:
 *  - with clang -fsanitize=fuzzer (scripts/fuzz.sh): libFuzzer drives
 *    LLVMFuzzerTestOneInput for as long as asked;
 *  - with the project's compiler, linked into tests/unit/test_ctl_proto.c:
 *    fuzz_ctl_proto_run() replays the seed corpus and a fixed number of
 *    deterministic mutations of it, so every CI run (and the sanitizer
 *    build) exercises the parser on hostile input.
 * Either way the property is: ctl_request_parse() returns 0 or -1 with a
 * message, never crashes, never leaks (ASan), and what it accepts passes
 * its own validation again.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_request req;
	char err[512];

	err[0] = '\0';
	if (ctl_request_parse((const char *)data, size, &req, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < req.n_paths; i++)
			assert(ctl_path_ok(req.paths[i], strlen(req.paths[i])));
		assert(!req.path || ctl_path_ok(req.path, strlen(req.path)));
		assert(!req.file || req.file[0] == '/');
		ctl_request_release(&req);
	} else {
		assert(err[0] != '\0');
	}
	return 0;
}

#ifndef TIERFS_LIBFUZZER
static const char *const seeds[] = {
	"{\"cmd\":\"ping\"}",
	"{\"cmd\":\"stats\"}",
	"{\"cmd\":\"warm\",\"path\":\"a/b.jpg\",\"tier\":\"ssd\"}",
	"{\"cmd\":\"pin\",\"paths\":[\"a\",\"b/c\"],\"tier\":\"ram\"}",
	"{\"cmd\":\"unpin\",\"all\":true}",
	"{\"cmd\":\"evict\",\"paths\":[\"x y\"],\"tier\":\"all\"}",
	"{\"cmd\":\"residency\",\"paths\":[\"d/\\u00e9\\n.bin\"]}",
	"{\"cmd\":\"trace_start\",\"file\":\"/tmp/t\"}",
	"{\"cmd\":\"trace_stop\"}",
	"{\"cmd\":\"epoch\"}",
	"{\"cmd\":\"config\"}",
	"{\"cmd\":\"pin\",\"paths\":[\"../x\",\"\",\"a//b\"]}",
	"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	"{\"cmd\":\"warm\",\"path\":1e999999}",
	"\"\\ud800\"",
};

/* xorshift64*: the same mutations on every machine. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

unsigned long fuzz_ctl_proto_run(unsigned long rounds);

unsigned long fuzz_ctl_proto_run(unsigned long rounds)
{
	const char *dict[] = { "{", "}", "[", "]", "\"", ":", ",", "\\u0000", "\\", "null",
			       "true", "\"paths\"", "\"cmd\"", "\"all\"", "..", "/", "9e9",
			       "\"tier\"", "\"pin\"", "-0", "\xff", "\n" };
	size_t nseeds = sizeof(seeds) / sizeof(seeds[0]), ndict = sizeof(dict) / sizeof(dict[0]);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	unsigned char buf[4096];

	for (size_t i = 0; i < nseeds; i++)
		LLVMFuzzerTestOneInput((const uint8_t *)seeds[i], strlen(seeds[i]));
	for (unsigned long r = 0; r < rounds; r++) {
		const char *seed = seeds[next(&s) % nseeds];
		size_t len = strlen(seed), edits = 1 + next(&s) % 6;

		memcpy(buf, seed, len);
		for (size_t e = 0; e < edits; e++) {
			size_t pos = len ? next(&s) % (len + 1) : 0;

			switch (next(&s) % 4) {
			case 0:     /* flip a byte */
				if (len)
					buf[pos % len] ^= (unsigned char)(1u << (next(&s) % 8));
				break;
			case 1:     /* delete a run */
				if (len) {
					size_t n = 1 + next(&s) % 8;
					pos %= len;
					if (n > len - pos)
						n = len - pos;
					memmove(buf + pos, buf + pos + n, len - pos - n);
					len -= n;
				}
				break;
			default: {  /* insert a token */
				const char *t = dict[next(&s) % ndict];
				size_t tl = strlen(t);
				if (len + tl <= sizeof(buf)) {
					memmove(buf + pos + tl, buf + pos, len - pos);
					memcpy(buf + pos, t, tl);
					len += tl;
				}
			}
			}
		}
		LLVMFuzzerTestOneInput(buf, len);
	}
	return nseeds + rounds;
}
#endif
