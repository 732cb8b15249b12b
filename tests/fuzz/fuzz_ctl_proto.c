/* fuzz_ctl_proto.c - fuzz target of the control socket's request parser.
 *
 * scripts/fuzz.sh runs it under libFuzzer; test_fuzz_ctl_proto replays
 * tests/fuzz/corpus/ctl_proto and deterministic mutations of it
 * (fuzz_replay.c) in every build.  The property is: ctl_request_parse() returns 0 or -1 with a
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
