/* counters.h - every counter tierfs reports, defined once.
 *
 * The daemon fills a struct tfs_counters (fs_counters()); the SIGUSR1 log
 * line, the control socket's JSON (docs/control.md), the CLI's Prometheus
 * text and its human tables are all generated from the two lists below,
 * so a counter is added here and nowhere else.  Latency is a histogram,
 * not a counter: it travels beside them (struct tfs_counters.latency).
 *
 * TFS_TIER_COUNTERS(X) - kept by each cache tier ("ram", "ssd"), from its
 * struct tier_stats field of the same name:
 *     X(name, kind, unit, prom, help, label)
 * TFS_COUNTERS(X) - the others:
 *     X(id, section, name, kind, unit, prom, prom_labels, help, label, source)
 *
 *   kind   TFS_CK_COUNT: only grows (an epoch shows its difference);
 *          TFS_CK_STATE: a value now (occupancy, a flag), shown as is
 *   unit   TFS_CU_COUNT, TFS_CU_BYTES, TFS_CU_BOOL (JSON true/false, 0/1
 *          elsewhere)
 *   prom   the Prometheus family after "tierfs_" (entries of one family
 *          follow each other and differ by prom_labels; the first one's
 *          help is the family's)
 *   label  the human table's row label; NULL = not in the table
 *   source where the daemon reads it (an expression over the snapshots
 *          taken in fs_counters(); nowhere else expanded)
 *
 * The log line names a counter "section.name" ("ram.hits",
 * "readahead.used"); the JSON nests it the same way under "counters".
 */
#ifndef TIERFS_COUNTERS_H
#define TIERFS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/latency_hist.h"

enum tfs_counter_kind { TFS_CK_COUNT, TFS_CK_STATE };
enum tfs_counter_unit { TFS_CU_COUNT, TFS_CU_BYTES, TFS_CU_BOOL };

#define TFS_TIER_COUNTERS(X) \
	X(hits, TFS_CK_COUNT, TFS_CU_COUNT, "tier_hits_total", \
	  "Chunk lookups the tier answered.", "hits") \
	X(misses, TFS_CK_COUNT, TFS_CU_COUNT, "tier_misses_total", \
	  "Chunk lookups the tier could not answer.", "misses") \
	X(bytes_served, TFS_CK_COUNT, TFS_CU_BYTES, "tier_served_bytes_total", \
	  "Bytes read from the tier.", "bytes served") \
	X(bytes_fetched, TFS_CK_COUNT, TFS_CU_BYTES, "tier_fetched_bytes_total", \
	  "Bytes fetched from below to fill the tier.", "bytes fetched") \
	X(insertions, TFS_CK_COUNT, TFS_CU_COUNT, "tier_insertions_total", \
	  "Chunks inserted into the tier.", NULL) \
	X(evictions, TFS_CK_COUNT, TFS_CU_COUNT, "tier_evictions_total", \
	  "Chunks evicted from the tier.", "evictions") \
	X(evictions_read, TFS_CK_COUNT, TFS_CU_COUNT, "tier_evictions_read_total", \
	  "Of the evictions, chunks read through this epoch by a plan or scan.", NULL) \
	X(checksum_failures, TFS_CK_COUNT, TFS_CU_COUNT, "tier_checksum_failures_total", \
	  "Stored chunks whose checksum did not match (served as misses).", "checksum failures") \
	X(io_errors, TFS_CK_COUNT, TFS_CU_COUNT, "tier_io_errors_total", \
	  "I/O errors of the tier.", NULL) \
	X(dropped, TFS_CK_COUNT, TFS_CU_COUNT, "tier_dropped_total", \
	  "Chunks dropped instead of stored.", "dropped") \
	X(spilled, TFS_CK_COUNT, TFS_CU_COUNT, "tier_spilled_total", \
	  "Readers' chunks copied to wait for a writer that was behind.", "spilled") \
	X(resaved, TFS_CK_COUNT, TFS_CU_COUNT, "tier_resaved_total", \
	  "Of the dropped chunks, those stored when offered again.", "resaved") \
	X(rejected, TFS_CK_COUNT, TFS_CU_COUNT, "tier_rejected_total", \
	  "Chunks the admission policy refused.", "rejected") \
	X(waits, TFS_CK_COUNT, TFS_CU_COUNT, "tier_waits_total", \
	  "Lookups that waited for a fill in flight.", NULL) \
	X(overflow, TFS_CK_COUNT, TFS_CU_COUNT, "tier_overflow_total", \
	  "Fills that found the tier full.", NULL) \
	X(fills_failed, TFS_CK_COUNT, TFS_CU_COUNT, "tier_fills_failed_total", \
	  "Fills that failed.", NULL) \
	X(queued, TFS_CK_STATE, TFS_CU_COUNT, "tier_queued", \
	  "Jobs the tier's writer has not finished (write-behind stores, copies, drops).", NULL) \
	X(ahead_bytes, TFS_CK_STATE, TFS_CU_BYTES, "tier_ahead_bytes", \
	  "Bytes a scan fetched ahead into the tier and its reader has not read yet.", \
	  "fetched ahead, unread") \
	X(ahead_evicted, TFS_CK_COUNT, TFS_CU_BYTES, "tier_ahead_evicted_bytes_total", \
	  "Bytes fetched ahead and evicted before their reader came.", "ahead evicted unread") \
	X(entries, TFS_CK_STATE, TFS_CU_COUNT, "tier_entries", \
	  "Chunks held by the tier.", NULL) \
	X(bytes_used, TFS_CK_STATE, TFS_CU_BYTES, "tier_used_bytes", \
	  "Bytes held by the tier.", "used") \
	X(capacity, TFS_CK_STATE, TFS_CU_BYTES, "tier_capacity_bytes", \
	  "Capacity of the tier.", "capacity") \
	X(degraded, TFS_CK_STATE, TFS_CU_BOOL, "tier_degraded", \
	  "1 when the tier is disabled after errors.", "degraded")

#define TFS_COUNTERS(X) \
	X(RA_ISSUED, "readahead", "issued", TFS_CK_COUNT, TFS_CU_COUNT, "readahead_issued_total", \
	  NULL, "Chunks fetched ahead of readers.", "read-ahead issued", cc.ram.ahead_issued) \
	X(RA_USED, "readahead", "used", TFS_CK_COUNT, TFS_CU_COUNT, "readahead_used_total", NULL, \
	  "Chunks fetched ahead that were then read.", "read-ahead used", cc.ram.ahead_used) \
	X(RA_WASTED, "readahead", "wasted", TFS_CK_COUNT, TFS_CU_COUNT, "readahead_wasted_total", \
	  NULL, "Chunks fetched ahead and evicted unread.", "read-ahead wasted", \
	  cc.ram.ahead_wasted) \
	X(RA_LATE, "readahead", "late", TFS_CK_COUNT, TFS_CU_COUNT, "readahead_late_total", NULL, \
	  "Reads that waited for a chunk fetched ahead.", "read-ahead late", cc.ram.ahead_late) \
	X(RA_DROPPED, "readahead", "dropped", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "readahead_dropped_total", NULL, "Read-ahead requests dropped.", NULL, \
	  cc.ram.ahead_dropped) \
	X(RA_REFUSED, "readahead", "refused", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "readahead_refused_total", NULL, "Read-ahead requests refused for lack of memory.", \
	  NULL, fst.ra_refused) \
	X(RA_HELD, "readahead", "held", TFS_CK_STATE, TFS_CU_COUNT, "readahead_held", NULL, \
	  "Read-ahead chunks queued or in flight now.", NULL, fst.ra_held) \
	X(RA_FILES, "readahead", "files", TFS_CK_COUNT, TFS_CU_COUNT, "readahead_files_total", \
	  NULL, "Files read ahead across a directory.", NULL, fst.ra_files) \
	X(RA_LISTINGS, "readahead", "listings", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "readahead_listings_total", NULL, \
	  "Directory listings fetched ahead of a walk (--list-ahead).", "listings read ahead", \
	  fst.lists_ahead) \
	X(SCAN_FILES, "readahead", "scan_files", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "readahead_scan_files_total", NULL, \
	  "Files fetched for a job consuming a directory in any order.", "scan files fetched", \
	  fst.scan_files) \
	X(SCAN_BYTES, "readahead", "scan_bytes", TFS_CK_COUNT, TFS_CU_BYTES, \
	  "readahead_scan_bytes_total", NULL, \
	  "Bytes fetched for a job consuming a directory in any order.", NULL, fst.scan_bytes) \
	X(SCAN_BUSY, "readahead", "scan_busy", TFS_CK_STATE, TFS_CU_COUNT, \
	  "readahead_scan_busy", NULL, \
	  "Scan and plan fetchers at work: a file in hand, or woken and not yet looking.", \
	  NULL, fst.scan_busy) \
	X(PLAN_FILES, "readahead", "plan_files", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "readahead_plan_files_total", NULL, "Files fetched ahead of a loader's plan.", \
	  "plan files fetched", fst.plan_files) \
	X(PLAN_BYTES, "readahead", "plan_bytes", TFS_CK_COUNT, TFS_CU_BYTES, \
	  "readahead_plan_bytes_total", NULL, "Bytes fetched ahead of a loader's plan.", NULL, \
	  fst.plan_bytes) \
	X(S3_REQUESTS, "s3", "requests", TFS_CK_COUNT, TFS_CU_COUNT, "s3_requests_total", NULL, \
	  "Requests to the object store.", "s3 requests", os.requests) \
	X(S3_GETS, "s3", "gets", TFS_CK_COUNT, TFS_CU_COUNT, "s3_gets_total", NULL, \
	  "GET requests.", NULL, os.gets) \
	X(S3_HEADS, "s3", "heads", TFS_CK_COUNT, TFS_CU_COUNT, "s3_heads_total", NULL, \
	  "HEAD requests.", NULL, os.heads) \
	X(S3_LISTS, "s3", "lists", TFS_CK_COUNT, TFS_CU_COUNT, "s3_lists_total", NULL, \
	  "LIST requests.", NULL, os.lists) \
	X(S3_RETRIES, "s3", "retries", TFS_CK_COUNT, TFS_CU_COUNT, "s3_retries_total", NULL, \
	  "Requests retried.", "s3 retries", os.retries) \
	X(S3_ERRORS, "s3", "errors", TFS_CK_COUNT, TFS_CU_COUNT, "s3_errors_total", NULL, \
	  "Requests failed after retries.", "s3 errors", os.errors) \
	X(S3_THROTTLES, "s3", "throttles", TFS_CK_COUNT, TFS_CU_COUNT, "s3_throttles_total", NULL, \
	  "Answers asking the client to slow down (503 SlowDown, 429).", "s3 throttles", \
	  os.throttles) \
	X(S3_RATE_WAITS, "s3", "rate_waits", TFS_CK_COUNT, TFS_CU_COUNT, "s3_rate_waits_total", \
	  NULL, "Requests that waited for the send rate after a throttle.", NULL, os.rate_waits) \
	X(S3_RATE_LIMIT, "s3", "rate_limit", TFS_CK_STATE, TFS_CU_COUNT, "s3_rate_limit", NULL, \
	  "Requests per second the client sends at most now (0: no limit).", "s3 rate limit", \
	  os.rate_limit) \
	X(S3_BYTES, "s3", "bytes", TFS_CK_COUNT, TFS_CU_BYTES, "s3_received_bytes_total", NULL, \
	  "Bytes received from the object store.", "s3 bytes", os.bytes_received) \
	X(STORE_FETCHES, "store", "fetches", TFS_CK_COUNT, TFS_CU_COUNT, "store_fetches_total", \
	  NULL, "Chunk fetches from the store.", NULL, cc.store_fetches) \
	X(STORE_BYTES, "store", "bytes", TFS_CK_COUNT, TFS_CU_BYTES, "store_fetched_bytes_total", \
	  NULL, "Bytes fetched from the store.", NULL, cc.store_bytes) \
	X(STORE_ERRORS, "store", "errors", TFS_CK_COUNT, TFS_CU_COUNT, "store_errors_total", NULL, \
	  "Chunk fetches that failed.", NULL, cc.store_errors) \
	X(PART_BYTES, "random", "bytes", TFS_CK_STATE, TFS_CU_BYTES, "random_held_bytes", NULL, \
	  "Bytes of blocks kept for random readers, of chunks not whole yet.", "random held", \
	  cc.part.bytes) \
	X(PART_CAP, "random", "capacity", TFS_CK_STATE, TFS_CU_BYTES, "random_capacity_bytes", NULL, \
	  "The most those blocks may hold (0: random reads fetch whole chunks).", NULL, \
	  cc.part.cap) \
	X(PART_READS, "random", "reads", TFS_CK_COUNT, TFS_CU_COUNT, "random_reads_total", NULL, \
	  "Random reads that missed both tiers, served by their blocks alone.", "random reads", \
	  cc.part.reads) \
	X(PART_BLOCK_HITS, "random", "block_hits", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "random_block_hits_total", NULL, "Of those, reads whose blocks were all kept already.", \
	  NULL, cc.part.block_hits) \
	X(PART_COMPLETED, "random", "completed", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "random_completed_total", NULL, \
	  "Chunks read at random whose rest was fetched: whole in RAM, then on SSD.", NULL, \
	  cc.part.completed) \
	X(PART_DROPPED, "random", "dropped", TFS_CK_COUNT, TFS_CU_COUNT, "random_dropped_total", \
	  NULL, "Chunks whose kept blocks were let go for room.", NULL, cc.part.dropped) \
	X(PT_ON, "passthrough", "on", TFS_CK_STATE, TFS_CU_BOOL, "passthrough_on", NULL, \
	  "1 when the kernel reads files wholly on SSD itself (FUSE passthrough).", \
	  "passthrough", fst.passthrough) \
	X(PT_OPENS, "passthrough", "opens", TFS_CK_COUNT, TFS_CU_COUNT, "passthrough_opens_total", \
	  NULL, "Opens handed to the kernel to read from the SSD tier's file.", \
	  "passthrough opens", fst.pt_opens) \
	X(PT_DECLINED, "passthrough", "declined", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "passthrough_declined_total", NULL, \
	  "Opens served by the daemon while passthrough is on (not all on SSD, or busy).", NULL, \
	  fst.pt_declined) \
	X(SHARED_HITS, "shared", "hits", TFS_CK_COUNT, TFS_CU_COUNT, "shared_hits_total", NULL, \
	  "Chunks the shared tier supplied.", "shared hits", cc.shared.hits) \
	X(SHARED_MISSES, "shared", "misses", TFS_CK_COUNT, TFS_CU_COUNT, "shared_misses_total", \
	  NULL, "Chunk lookups the shared tier could not answer.", "shared misses", \
	  cc.shared.misses) \
	X(SHARED_BYTES, "shared", "bytes", TFS_CK_COUNT, TFS_CU_BYTES, "shared_served_bytes_total", \
	  NULL, "Bytes the shared tier supplied.", "shared bytes", cc.shared.bytes) \
	X(SHARED_CORRUPT, "shared", "corrupt", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_checksum_failures_total", NULL, \
	  "Shared chunks that failed verification (misses, rewritten).", "shared corrupt", \
	  cc.shared.corrupt) \
	X(SHARED_ERRORS, "shared", "errors", TFS_CK_COUNT, TFS_CU_COUNT, "shared_errors_total", \
	  NULL, "Requests to the shared tier that failed or timed out.", "shared errors", \
	  cc.shared.errors) \
	X(SHARED_SKIPPED, "shared", "skipped", TFS_CK_COUNT, TFS_CU_COUNT, "shared_skipped_total", \
	  NULL, "Lookups not sent while the shared tier was paused after failures.", NULL, \
	  cc.shared.skipped) \
	X(SHARED_CLAIMS, "shared", "claims", TFS_CK_COUNT, TFS_CU_COUNT, "shared_claims_total", \
	  NULL, "Chunks this node claimed and fetched from the origin for the cluster.", NULL, \
	  cc.shared.claims) \
	X(SHARED_CLAIM_WAITS, "shared", "claim_waits", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_claim_waits_total", NULL, "Misses that waited for another node's claim.", NULL, \
	  cc.shared.claim_waits) \
	X(SHARED_CLAIM_HITS, "shared", "claim_hits", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_claim_hits_total", NULL, "Of those, chunks the other node wrote in time.", NULL, \
	  cc.shared.claim_hits) \
	X(SHARED_WRITES, "shared", "writes", TFS_CK_COUNT, TFS_CU_COUNT, "shared_writes_total", \
	  NULL, "Chunks written to the shared tier.", "shared writes", cc.shared.writes) \
	X(SHARED_WRITE_BYTES, "shared", "write_bytes", TFS_CK_COUNT, TFS_CU_BYTES, \
	  "shared_written_bytes_total", NULL, "Bytes written to the shared tier.", NULL, \
	  cc.shared.write_bytes) \
	X(SHARED_WRITE_EXISTS, "shared", "write_exists", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_write_exists_total", NULL, "Writes another node had made first.", NULL, \
	  cc.shared.write_exists) \
	X(SHARED_WRITE_FAILURES, "shared", "write_failures", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_write_failures_total", NULL, "Writes to the shared tier refused or failed.", \
	  "shared write failures", cc.shared.write_failures) \
	X(SHARED_WRITE_DROPPED, "shared", "write_dropped", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "shared_write_dropped_total", NULL, \
	  "Writes not made: queue full or the tier paused.", NULL, cc.shared.write_dropped) \
	X(SHARED_WRITE_QUEUE, "shared", "write_queue", TFS_CK_STATE, TFS_CU_COUNT, \
	  "shared_write_queue", NULL, "Writes to the shared tier queued or in flight.", NULL, \
	  cc.shared.write_queue) \
	X(SHARED_PAUSED, "shared", "paused", TFS_CK_STATE, TFS_CU_BOOL, "shared_paused", NULL, \
	  "1 while the shared tier is skipped after failures.", "shared paused", \
	  cc.shared.open) \
	X(SHARED_P50_US, "shared", "latency_p50_us", TFS_CK_STATE, TFS_CU_COUNT, \
	  "shared_latency_microseconds", "{quantile=\"0.5\"}", \
	  "Latency of requests to the shared tier.", "shared latency p50 (us)", \
	  cc.shared.req_p50_us) \
	X(SHARED_P99_US, "shared", "latency_p99_us", TFS_CK_STATE, TFS_CU_COUNT, \
	  "shared_latency_microseconds", "{quantile=\"0.99\"}", \
	  "Latency of requests to the shared tier.", "shared latency p99 (us)", \
	  cc.shared.req_p99_us) \
	X(FS_OPEN_FILES, "fs", "open_files", TFS_CK_STATE, TFS_CU_COUNT, "open_files", NULL, \
	  "Files open on the mount.", NULL, fst.open_files) \
	X(FS_STALE_SERVED, "fs", "stale_served", TFS_CK_COUNT, TFS_CU_COUNT, \
	  "stale_served_total", NULL, \
	  "Lookups, attributes and listings served past the metadata TTL because the " \
	  "store did not answer (--max-stale).", "served stale", fst.stale_served) \
	X(FS_STORE_DOWN, "fs", "store_unreachable", TFS_CK_STATE, TFS_CU_BOOL, \
	  "store_unreachable", NULL, \
	  "1 while the store does not answer and stale metadata is served.", NULL, \
	  fst.store_down) \
	X(FS_UNSAFE_KEYS, "fs", "unsafe_keys", TFS_CK_COUNT, TFS_CU_COUNT, "unsafe_keys_total", \
	  NULL, "Object keys left out of the tree as unrepresentable.", NULL, \
	  fst.unsafe_keys_skipped) \
	X(PINS_FILES, "pins", "files", TFS_CK_STATE, TFS_CU_COUNT, "pinned_files", NULL, \
	  "Files pinned.", NULL, cc.pinned_files) \
	X(PINS_RAM, "pins", "ram_bytes", TFS_CK_STATE, TFS_CU_BYTES, "pinned_bytes", \
	  "{tier=\"ram\"}", "Bytes of pinned files, per tier.", NULL, cc.pinned_ram) \
	X(PINS_SSD, "pins", "ssd_bytes", TFS_CK_STATE, TFS_CU_BYTES, "pinned_bytes", \
	  "{tier=\"ssd\"}", "Bytes of pinned files, per tier.", NULL, cc.pinned_ssd)

#define TFS_X_TIER_ID(name, kind, unit, prom, help, label) TFS_TC_##name,
enum tfs_tier_counter { TFS_TIER_COUNTERS(TFS_X_TIER_ID) TFS_TIER_COUNTER_N };
#undef TFS_X_TIER_ID

#define TFS_X_ID(id, section, name, kind, unit, prom, labels, help, label, source) TFS_C_##id,
enum tfs_counter { TFS_COUNTERS(TFS_X_ID) TFS_COUNTER_N };
#undef TFS_X_ID

enum { TFS_TIER_RAM, TFS_TIER_SSD, TFS_TIER_N };

/* Every counter at one moment. */
struct tfs_counters {
	uint64_t tier[TFS_TIER_N][TFS_TIER_COUNTER_N];
	bool has_ssd;                     /* tier[TFS_TIER_SSD] means something */
	uint64_t v[TFS_COUNTER_N];
	/* the object store's request latency (objstore_stats) */
	struct latency_hist_snap latency;
};

/* The metadata of one counter, from the lists above: name, section, kind,
 * unit, Prometheus family and labels, help, human label. */
struct tfs_counter_info {
	const char *section, *name;
	enum tfs_counter_kind kind;
	enum tfs_counter_unit unit;
	const char *prom, *prom_labels, *help, *label;
};

/* tier_name[TFS_TIER_RAM] = "ram", ... */
extern const char *const tfs_tier_names[TFS_TIER_N];
extern const struct tfs_counter_info tfs_tier_counter_info[TFS_TIER_COUNTER_N];
extern const struct tfs_counter_info tfs_counter_info[TFS_COUNTER_N];

/* The value of counter i (or tier counter i of tier t) since base: its
 * difference for a count (0 if it went down: counters only grow), its
 * value now for a state; base NULL: since the start. */
uint64_t tfs_counter_since(const struct tfs_counters *now, const struct tfs_counters *base,
			   enum tfs_counter i);
uint64_t tfs_tier_counter_since(const struct tfs_counters *now, const struct tfs_counters *base,
				int tier, enum tfs_tier_counter i);

/* One line of every counter, "section.name=value" pairs separated by
 * spaces (the SIGUSR1 log line), into buf (n bytes, truncated). */
void tfs_counters_line(const struct tfs_counters *c, char *buf, size_t n);

#endif
