/* fuzz_sim_trace.c - fuzz target of the simulator's trace reader: any
 * text, plain or after a sized trace's header of version 2 or 3 (the
 * first byte picks).  Property: TFS_OK with a finished trace whose every
 * id is below its distinct count and, sized, whose every read is at most
 * its chunk and every VISIT 0 or 1; or
 * an error with a message and nothing left allocated; no crash, no leak.
 * An accepted trace also replays through the tiers' model.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "sim/sim.h"
#include "sim/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_tiers_config cfg = { EVICT_TINYLFU, EVICT_LRU, 1u << 16, 1u << 18, 1u << 16 };
	static const char h2[] = TRACE_HEADER_2 "\n", h3[] = TRACE_HEADER_3 "\n";
	const char *header;
	size_t hlen = strlen(h2);   /* both are as long */
	struct sim_tiers_result res;
	struct tfs_errinfo ei;
	struct trace t;
	char *text;
	size_t len;
	FILE *in;
	int rc;

	if (size < 1)
		return 0;
	header = data[0] & 2 ? h3 : h2;
	len = (data[0] & 1 ? hlen : 0) + size - 1;
	text = malloc(len + 1);
	assert(text);
	if (data[0] & 1)
		memcpy(text, header, hlen);
	memcpy(text + len - (size - 1), data + 1, size - 1);
	in = fmemopen(text, len, "r");
	if (!in) {          /* fmemopen refuses an empty buffer */
		free(text);
		return 0;
	}
	trace_init(&t);
	tfs_errinfo_clear(&ei);
	rc = trace_read_stream(&t, in, &ei);
	fclose(in);
	if (rc != TFS_OK) {
		assert(ei.message[0] != '\0' || rc == TFS_E_NOMEM);
		assert(!t.keys && !t.ids && !t.chunk_bytes && !t.read_bytes && !t.visit && t.n == 0);
	} else {
		assert(t.warm_from <= t.n);
		for (size_t i = 0; i < t.n; i++) {
			assert(t.ids[i] < t.n_distinct);
			assert(!t.sized || (t.chunk_bytes[i] > 0 && t.read_bytes[i] <= t.chunk_bytes[i] &&
					    t.visit[i] <= 1));
		}
		rc = sim_replay_tiers(&t, &cfg, &res);
		assert(rc == TFS_OK);
		assert(res.accesses == t.n - t.warm_from);
		assert(res.ram_hits + res.ssd_hits + res.misses == res.accesses);
		trace_release(&t);
	}
	free(text);
	return 0;
}
