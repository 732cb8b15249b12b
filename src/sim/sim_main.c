/* sim_main.c - tierfs-sim: replay a trace against every eviction policy and compare with OPT.
 *
 * One trace (read or generated), several cache sizes, several policies:
 * for each size a row of hit ratios next to Belady's OPT and, for epoch
 * traces, the C/N bound, printed as a markdown table.  With --plot the
 * same rows are drawn as a PNG line chart by gnuplot, after the table.
 * Exit status: 0 ok, 1 the trace could not be read, memory ran out or the
 * plot could not be written, 2 bad command line.
 *
 * The plot never puts the user's path into the gnuplot script: we create
 * the PNG ourselves (a mkstemp() temp name next to it, renamed into place
 * only when gnuplot succeeded, so a failure leaves no half-written file)
 * and hand it to gnuplot as its stdout.  The script goes to gnuplot's
 * stdin; the only text in it that comes from outside is the trace name in
 * the title, quoted as a single-quoted gnuplot string (no escapes, no
 * backquote or macro substitution; '' is a quote).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/size.h"
#include "common/tfs_err.h"
#include "evict/evict.h"
#include "sim/opt.h"
#include "sim/sim.h"
#include "sim/trace.h"

#define MAX_SIZES 32
#define EXIT_USAGE 2
#define DEFAULT_SIZES "0.25,0.5"
/* With --plot and no --sizes: enough points for a curve. */
#define PLOT_SIZES "0.05,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"

enum gen_kind {
	GEN_NONE = -1,
	GEN_EPOCH_SEQ,
	GEN_EPOCH_SHUFFLED,
	GEN_ZIPF,
	GEN_HOTSET_SCANS,
	GEN_SHIFTING_HOTSET,
	GEN_TWO_JOBS,
	GEN_COUNT
};

static const char *const gen_names[GEN_COUNT] = {
	[GEN_EPOCH_SEQ] = "epoch-seq",
	[GEN_EPOCH_SHUFFLED] = "epoch-shuffled",
	[GEN_ZIPF] = "zipf",
	[GEN_HOTSET_SCANS] = "hotset-scans",
	[GEN_SHIFTING_HOTSET] = "shifting-hotset",
	[GEN_TWO_JOBS] = "two-jobs",
};

struct size_spec {
	bool fraction;
	double frac;
	size_t count;
	char text[32];
};

struct options {
	const char *trace_path;
	enum gen_kind gen;
	size_t items, epochs, length;
	double alpha;
	uint64_t seed;
	bool have_alpha, have_length, have_gen_opt, have_sizes;
	const char *plot_path;          /* --plot FILE.png, or NULL */
	struct size_spec sizes[MAX_SIZES];
	size_t n_sizes;
	enum evict_kind policies[EVICT_KIND_COUNT];
	size_t n_policies;
	/* --ram-size given: the daemon's two tiers instead of the table */
	struct sim_tiers_config tiers;
	bool have_tiers, have_tier_opt;
	uint64_t warm_from;             /* --warm-from N, or UINT64_MAX */
};

/* The hits at one cache size: one row of the table, one x of the plot. */
struct size_row {
	size_t cap;                             /* cache size in items */
	uint64_t hits[EVICT_KIND_COUNT];        /* indexed like options.policies */
	uint64_t opt;
};

struct results {
	struct size_row rows[MAX_SIZES];        /* indexed like options.sizes */
	size_t n_rows;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tierfs-sim [--trace FILE | --gen KIND [--items N] [--epochs E]\n"
		"                  [--alpha A] [--length L] [--seed S]]\n"
		"                  [--sizes LIST] [--policies LIST] [--plot FILE.png]\n"
		"                  [--warm-from N]\n"
		"       tierfs-sim (--trace FILE | --gen ...) --ram-size SIZE [--ssd-size SIZE]\n"
		"                  [--chunk-size SIZE] [--ram-policy P] [--ssd-policy P]\n"
		"                  [--warm-from N]\n"
		"\n"
		"Replays an access trace against eviction policies at several cache sizes\n"
		"and prints each policy's hit ratio next to Belady's OPT (with bypass: the\n"
		"best any cache with admission control can do) and, for epoch traces, the\n"
		"C/N bound (cache size / distinct items: with every item read once per\n"
		"epoch, no cache can beat it).  Hits are counted after a warm-up: the\n"
		"first epoch of an epoch trace, the first fifth of any other trace.\n"
		"\n"
		"  --trace FILE     one access per line: a decimal or 0x-hex id, or\n"
		"                   \"OBJECT_KEY CHUNK_INDEX\"; '#' comments, blank lines ok\n"
		"  --gen KIND       generate the trace instead (N = --items, E = --epochs):\n"
		"      epoch-seq         0..N-1, E times                       (epoch trace)\n"
		"      epoch-shuffled    a fresh random permutation per epoch  (epoch trace)\n"
		"      zipf              L draws, Zipf exponent A over N items\n"
		"      hotset-scans      E rounds of N uniform draws from a hot set of N/10,\n"
		"                        then a scan of the other 9N/10 items\n"
		"      shifting-hotset   L accesses, 90%% within a hot window of N/10 items\n"
		"                        that moves by N/20 every N accesses, 10%% uniform\n"
		"      two-jobs          two epoch-shuffled jobs over N/2 items each,\n"
		"                        interleaved at random                 (epoch trace)\n"
		"  --items N        distinct items (default 10000)\n"
		"  --epochs E       epochs or rounds (default 5)\n"
		"  --alpha A        Zipf exponent, 0 < A <= 5 (default 1.0; zipf only)\n"
		"  --length L       accesses (default 10 * N; zipf, shifting-hotset only)\n"
		"  --seed S         random seed (default 1)\n"
		"  --sizes LIST     cache sizes, comma-separated: fractions of the distinct\n"
		"                   items (with a '.', e.g. 0.25,0.5) or item counts\n"
		"                   (e.g. 1000,5000); default " DEFAULT_SIZES ", or with --plot\n"
		"                   " PLOT_SIZES "\n"
		"  --policies LIST  comma-separated among lru, lfu, tinylfu, or all (default)\n"
		"  --plot FILE.png  after the table, also draw it as a PNG line chart: hit\n"
		"                   ratio %% against cache size (C/N), one line per policy,\n"
		"                   OPT and, for epoch traces, the C/N bound; the title is\n"
		"                   the trace.  Needs gnuplot in PATH (Debian: gnuplot-nox)\n"
		"  --warm-from N    count hits from access N on (0-based) instead\n"
		"\n"
		"With --ram-size, the trace is replayed against a mount's two tiers\n"
		"instead, the way the daemon drives them (a RAM hit, an SSD hit or a\n"
		"fetch that goes into RAM and is offered to the SSD tier), and one row is\n"
		"printed: the accesses, where they hit, and the byte hit ratio, 1 - bytes\n"
		"fetched / bytes read, which is what `tierfs stats` shows for the mount.\n"
		"A trace of `tierfs trace start` has each chunk's length and the bytes\n"
		"read; other traces count every access as a whole chunk.\n"
		"  --ram-size SIZE  the mount's --ram-size (e.g. 256M)\n"
		"  --ssd-size SIZE  the mount's --ssd-size (none: no SSD tier)\n"
		"  --chunk-size SIZE  the mount's --chunk-size (default 8M)\n"
		"  --ram-policy P, --ssd-policy P  lru, lfu or tinylfu (default tinylfu)\n"
		"  --help           this text\n"
		"\n"
		"Exit status: 0 ok, 1 the trace could not be read, memory ran out or the\n"
		"plot could not be written (the table is printed all the same), 2 bad\n"
		"command line.\n");
}

/* A whole decimal number in [min, max]. */
static bool parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

__attribute__((format(printf, 1, 2)))
static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tierfs-sim: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(tierfs-sim --help for usage)\n");
	return EXIT_USAGE;
}

static int parse_sizes(struct options *o, const char *list)
{
	char buf[1024];
	char *save = NULL;

	if (strlen(list) >= sizeof(buf))
		return bad("--sizes: list too long: %s", list);
	strcpy(buf, list);
	o->n_sizes = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct size_spec *sz;

		if (o->n_sizes == MAX_SIZES)
			return bad("--sizes: more than 32 sizes in %s", list);
		sz = &o->sizes[o->n_sizes];
		snprintf(sz->text, sizeof(sz->text), "%s", tok);
		if (strchr(tok, '.')) {
			char *end;

			errno = 0;
			sz->fraction = true;
			sz->frac = strtod(tok, &end);
			if (errno || *end || !(sz->frac > 0 && sz->frac <= 1))
				return bad("--sizes: '%s' is not a fraction in (0, 1]", tok);
		} else {
			uint64_t v;

			sz->fraction = false;
			if (!parse_count(tok, 1, TRACE_MAX_ACCESSES, &v))
				return bad("--sizes: '%s' is not a fraction (0.25) or a count "
					   "(1 .. 100000000)", tok);
			sz->count = (size_t)v;
		}
		o->n_sizes++;
	}
	if (o->n_sizes == 0)
		return bad("--sizes: empty list '%s'", list);
	return 0;
}

static int parse_policies(struct options *o, const char *list)
{
	char buf[256];
	char *save = NULL;
	bool seen[EVICT_KIND_COUNT] = { false };

	if (strlen(list) >= sizeof(buf))
		return bad("--policies: list too long: %s", list);
	strcpy(buf, list);
	o->n_policies = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		if (strcmp(tok, "all") == 0) {
			for (k = 0; k < EVICT_KIND_COUNT; k++)
				seen[k] = true;
			continue;
		}
		k = evict_kind_parse(tok);
		if (k < 0)
			return bad("--policies: unknown policy '%s' (lru, lfu, tinylfu, all)", tok);
		seen[k] = true;
	}
	for (int k = 0; k < EVICT_KIND_COUNT; k++)
		if (seen[k])
			o->policies[o->n_policies++] = (enum evict_kind)k;
	if (o->n_policies == 0)
		return bad("--policies: empty list '%s'", list);
	return 0;
}

static int parse_args(struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "gen", required_argument, NULL, 'g' },
		{ "items", required_argument, NULL, 'n' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "alpha", required_argument, NULL, 'a' },
		{ "length", required_argument, NULL, 'l' },
		{ "seed", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "policies", required_argument, NULL, 'p' },
		{ "plot", required_argument, NULL, 'P' },
		{ "ram-size", required_argument, NULL, 'R' },
		{ "ssd-size", required_argument, NULL, 'S' },
		{ "chunk-size", required_argument, NULL, 'C' },
		{ "ram-policy", required_argument, NULL, 'r' },
		{ "ssd-policy", required_argument, NULL, 'd' },
		{ "warm-from", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->gen = GEN_NONE;
	o->items = 10000;
	o->epochs = 5;
	o->alpha = 1.0;
	o->seed = 1;
	o->warm_from = UINT64_MAX;
	o->tiers = (struct sim_tiers_config){ .ram_kind = EVICT_TINYLFU, .ssd_kind = EVICT_TINYLFU,
					      .chunk_size = 8u << 20 };
	if ((rc = parse_sizes(o, DEFAULT_SIZES)) || (rc = parse_policies(o, "all")))
		return rc;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			o->trace_path = optarg;
			break;
		case 'g':
			o->gen = GEN_NONE;
			for (int k = 0; k < GEN_COUNT; k++)
				if (strcmp(optarg, gen_names[k]) == 0)
					o->gen = (enum gen_kind)k;
			if (o->gen == GEN_NONE)
				return bad("--gen: unknown kind '%s' (epoch-seq, epoch-shuffled, "
					   "zipf, hotset-scans, shifting-hotset, two-jobs)", optarg);
			break;
		case 'n':
			if (!parse_count(optarg, 2, TRACE_MAX_ACCESSES, &v))
				return bad("--items: '%s' is not a count in 2 .. 100000000", optarg);
			o->items = (size_t)v;
			o->have_gen_opt = true;
			break;
		case 'e':
			if (!parse_count(optarg, 1, TRACE_MAX_ACCESSES, &v))
				return bad("--epochs: '%s' is not a count in 1 .. 100000000", optarg);
			o->epochs = (size_t)v;
			o->have_gen_opt = true;
			break;
		case 'a': {
			char *end;

			errno = 0;
			o->alpha = strtod(optarg, &end);
			if (errno || *end || !*optarg || !(o->alpha > 0 && o->alpha <= 5))
				return bad("--alpha: '%s' is not a number in (0, 5]", optarg);
			o->have_alpha = o->have_gen_opt = true;
			break;
		}
		case 'l':
			if (!parse_count(optarg, 1, TRACE_MAX_ACCESSES, &v))
				return bad("--length: '%s' is not a count in 1 .. 100000000", optarg);
			o->length = (size_t)v;
			o->have_length = o->have_gen_opt = true;
			break;
		case 's':
			if (!parse_count(optarg, 0, UINT64_MAX, &v))
				return bad("--seed: '%s' is not an unsigned integer", optarg);
			o->seed = v;
			o->have_gen_opt = true;
			break;
		case 'z':
			if ((rc = parse_sizes(o, optarg)))
				return rc;
			o->have_sizes = true;
			break;
		case 'p':
			if ((rc = parse_policies(o, optarg)))
				return rc;
			break;
		case 'P':
			if (!*optarg)
				return bad("%s", "--plot: empty file name");
			o->plot_path = optarg;
			break;
		case 'R':
		case 'S':
		case 'C': {
			uint64_t *to = c == 'R' ? &o->tiers.ram_bytes :
				       c == 'S' ? &o->tiers.ssd_bytes : &o->tiers.chunk_size;

			if (size_parse(optarg, &v) != 0 || v == 0)
				return bad("--%s: '%s' is not a size (e.g. 256M)",
					   c == 'R' ? "ram-size" : c == 'S' ? "ssd-size" : "chunk-size",
					   optarg);
			*to = v;
			o->have_tiers |= c == 'R';
			o->have_tier_opt = true;
			break;
		}
		case 'r':
		case 'd': {
			int k = evict_kind_parse(optarg);

			if (k < 0)
				return bad("--%s: unknown policy '%s' (lru, lfu, tinylfu)",
					   c == 'r' ? "ram-policy" : "ssd-policy", optarg);
			*(c == 'r' ? &o->tiers.ram_kind : &o->tiers.ssd_kind) = (enum evict_kind)k;
			o->have_tier_opt = true;
			break;
		}
		case 'w':
			if (!parse_count(optarg, 0, TRACE_MAX_ACCESSES, &v))
				return bad("--warm-from: '%s' is not a count in 0 .. 100000000", optarg);
			o->warm_from = v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return bad("unknown option or missing argument: %s",
				   argv[optind - 1] ? argv[optind - 1] : "?");
		}
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (!o->trace_path == (o->gen == GEN_NONE))
		return bad("%s", "give exactly one of --trace FILE and --gen KIND");
	if (o->trace_path && o->have_gen_opt)
		return bad("%s", "--items, --epochs, --alpha, --length and --seed go with --gen, "
			   "not --trace");
	if (o->have_alpha && o->gen != GEN_ZIPF)
		return bad("--alpha applies to --gen zipf only, not %s", gen_names[o->gen]);
	if (o->have_length && o->gen != GEN_ZIPF && o->gen != GEN_SHIFTING_HOTSET)
		return bad("--length applies to zipf and shifting-hotset only, not %s",
			   gen_names[o->gen]);
	if (o->have_tier_opt && !o->have_tiers)
		return bad("%s", "--ssd-size, --chunk-size, --ram-policy and --ssd-policy go with "
			   "--ram-size");
	if (o->have_tiers && (o->plot_path || o->have_sizes))
		return bad("%s", "--sizes and --plot are for the policy table, not --ram-size");
	if (o->have_tiers && (o->tiers.chunk_size & (o->tiers.chunk_size - 1)))
		return bad("--chunk-size: %llu is not a power of two",
			   (unsigned long long)o->tiers.chunk_size);
	if (o->have_tiers && o->tiers.ram_bytes < o->tiers.chunk_size)
		return bad("%s", "--ram-size must hold at least one chunk");
	if (o->have_tiers && o->tiers.ssd_bytes && o->tiers.ssd_bytes < o->tiers.chunk_size + 4096)
		return bad("%s", "--ssd-size must hold at least one chunk plus 4K");
	if (!o->have_length)
		o->length = o->items > TRACE_MAX_ACCESSES / 10 ? TRACE_MAX_ACCESSES : 10 * o->items;
	if (o->plot_path && !o->have_sizes && (rc = parse_sizes(o, PLOT_SIZES)))
		return rc;
	return 0;
}

static int make_trace(const struct options *o, struct trace *t)
{
	struct tfs_errinfo ei;
	size_t n = o->items, tenth = n / 10 ? n / 10 : 1;
	int rc;

	tfs_errinfo_clear(&ei);
	switch (o->gen) {
	case GEN_NONE:
		rc = trace_read_file(t, o->trace_path, &ei);
		if (rc != TFS_OK)
			fprintf(stderr, "tierfs-sim: %s: %s\n", o->trace_path,
				ei.message[0] ? ei.message : tfs_strerror(rc));
		return rc;
	case GEN_EPOCH_SEQ:
		rc = trace_gen_epoch_sequential(t, n, o->epochs);
		break;
	case GEN_EPOCH_SHUFFLED:
		rc = trace_gen_epoch_shuffled(t, n, o->epochs, o->seed);
		break;
	case GEN_ZIPF:
		rc = trace_gen_zipf(t, n, o->alpha, o->length, o->seed);
		break;
	case GEN_HOTSET_SCANS:
		rc = trace_gen_hotset_scans(t, tenth, n, n - tenth, o->epochs, o->seed);
		break;
	case GEN_SHIFTING_HOTSET:
		rc = trace_gen_shifting_hotset(t, n, tenth, n, o->length, o->seed);
		break;
	case GEN_TWO_JOBS:
		rc = trace_gen_two_jobs(t, n / 2, n - n / 2, o->epochs, o->seed);
		break;
	default:
		rc = TFS_E_INVAL;
		break;
	}
	if (rc != TFS_OK)
		fprintf(stderr, "tierfs-sim: cannot generate %s: %s\n", gen_names[o->gen],
			rc == TFS_E_INVAL ? "the trace would be empty or longer than 10^8 accesses"
					  : tfs_strerror(rc));
	return rc;
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

/* --ram-size: one replay against the daemon's tiers, one row. */
static int run_tiers(const struct options *o, const struct trace *t)
{
	const char *label = o->gen == GEN_NONE ? t->name : gen_names[o->gen];
	struct sim_tiers_result res;
	int rc = sim_replay_tiers(t, &o->tiers, &res);

	if (rc != TFS_OK) {
		fprintf(stderr, "tierfs-sim: the tiers' replay: %s\n", tfs_strerror(rc));
		return rc;
	}
	printf("trace %s: %zu accesses, %zu distinct chunks%s; counted from access %zu\n\n",
	       label, t->n, t->n_distinct, t->sized ? ", sized" : "", t->warm_from);
	printf("| RAM | SSD | accesses | RAM hits | SSD hits | misses | read MiB | fetched MiB | "
	       "byte hit %% | SSD rejects |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	printf("| %.0f MiB %s | ", mib(o->tiers.ram_bytes), evict_kind_name(o->tiers.ram_kind));
	if (o->tiers.ssd_bytes)
		printf("%.0f MiB %s |", mib(o->tiers.ssd_bytes), evict_kind_name(o->tiers.ssd_kind));
	else
		printf("none |");
	printf(" %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.1f | %.1f | %.2f | %" PRIu64
	       " |\n", res.accesses, res.ram_hits, res.ssd_hits, res.misses, mib(res.read_bytes),
	       mib(res.fetched_bytes), 100.0 * sim_tiers_hit_ratio(&res), res.ssd_rejects);
	return TFS_OK;
}

static void print_ratio_to_opt(uint64_t hits, uint64_t opt)
{
	if (opt)
		printf(" %.2f |", (double)hits / (double)opt);
	else
		printf(" - |");
}

/* Replay every size and policy, print the table, and keep the rows in r
 * for the plot. */
static int run(const struct options *o, const struct trace *t, struct results *r)
{
	const char *label = o->gen == GEN_NONE ? t->name : gen_names[o->gen];
	uint64_t counted = t->n - t->warm_from;

	printf("trace %s: %zu accesses, %zu distinct; hits counted from access %zu (%s)\n\n",
	       t->name, t->n, t->n_distinct, t->warm_from,
	       t->epoch_len ? "first epoch excluded" : "first fifth excluded");
	printf("| trace | size (C/N) |");
	for (size_t p = 0; p < o->n_policies; p++)
		printf(" %s %% |", evict_kind_name(o->policies[p]));
	printf(" OPT %% | C/N bound %% |");
	for (size_t p = 0; p < o->n_policies; p++)
		printf(" %s/OPT |", evict_kind_name(o->policies[p]));
	printf("\n|---|---|");
	for (size_t p = 0; p < 2 * o->n_policies + 2; p++)
		printf("---:|");
	printf("\n");

	r->n_rows = 0;
	for (size_t s = 0; s < o->n_sizes; s++) {
		const struct size_spec *sz = &o->sizes[s];
		struct size_row *row = &r->rows[s];
		size_t cap = sz->count;
		uint64_t *hits = row->hits, opt;
		int rc;

		if (sz->fraction) {
			cap = (size_t)(sz->frac * (double)t->n_distinct + 0.5);
			if (cap == 0)
				cap = 1;
		}
		for (size_t p = 0; p < o->n_policies; p++) {
			struct sim_result res;

			rc = sim_replay(t, o->policies[p], cap, &res);
			if (rc != TFS_OK) {
				fprintf(stderr, "tierfs-sim: %s at %zu items: %s\n",
					evict_kind_name(o->policies[p]), cap, tfs_strerror(rc));
				return rc;
			}
			hits[p] = res.hits;
		}
		rc = opt_hits(t, cap, &opt);
		if (rc != TFS_OK) {
			fprintf(stderr, "tierfs-sim: OPT at %zu items: %s\n", cap, tfs_strerror(rc));
			return rc;
		}
		printf("| %s | %zu (%.3g) |", label, cap,
		       t->n_distinct ? (double)cap / (double)t->n_distinct : 0.0);
		for (size_t p = 0; p < o->n_policies; p++) {
			if (counted)
				printf(" %.1f |", 100.0 * (double)hits[p] / (double)counted);
			else
				printf(" - |");
		}
		if (counted)
			printf(" %.1f |", 100.0 * (double)opt / (double)counted);
		else
			printf(" - |");
		if (t->epoch_len)
			printf(" %.1f |", 100.0 * trace_bound_cn(t, cap));
		else
			printf(" - |");
		for (size_t p = 0; p < o->n_policies; p++)
			print_ratio_to_opt(hits[p], opt);
		printf("\n");
		row->cap = cap;
		row->opt = opt;
		r->n_rows++;
	}
	return TFS_OK;
}

/* s as a single-quoted gnuplot string.  Inside single quotes gnuplot
 * expands nothing (no backslash escapes, no `command`, no @macro) and
 * reads '' as one quote; a newline would end the command, so control
 * characters become '?'.  Used for the title, which may come from a trace
 * file's name. */
static void gp_put_string(FILE *out, const char *s)
{
	fputc('\'', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\'')
			fputs("''", out);
		else if (c < 0x20 || c == 0x7f)
			fputc('?', out);
		else
			fputc(c, out);
	}
	fputc('\'', out);
}

/* The gnuplot script that draws r: data inline as a datablock, one row per
 * size in increasing order (--sizes may come in any order), columns
 * C/N, each policy's hit %, OPT %, C/N bound % (epoch traces only).  The
 * PNG goes to gnuplot's stdout. */
static void gp_write_script(FILE *out, const struct options *o, const struct trace *t,
			    const struct results *r)
{
	double counted = (double)(t->n - t->warm_from), n = (double)t->n_distinct;
	size_t order[MAX_SIZES], np = o->n_policies, max_cap = 0;
	char title[256];

	for (size_t i = 0; i < r->n_rows; i++) {
		size_t j = i;

		if (r->rows[i].cap > max_cap)
			max_cap = r->rows[i].cap;
		for (; j > 0 && r->rows[order[j - 1]].cap > r->rows[i].cap; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	snprintf(title, sizeof(title), "%s: %zu accesses, %zu distinct items", t->name, t->n,
		 t->n_distinct);

	fputs("set terminal pngcairo noenhanced size 900,600\n", out);
	fputs("set title ", out);
	gp_put_string(out, title);
	/* counts (not fractions) in --sizes may exceed N: then let it grow */
	fprintf(out, "\nset xrange [0:%s]\n", max_cap <= t->n_distinct ? "1" : "*");
	fputs("set xlabel 'cache size (C/N)'\n"
	      "set ylabel 'hit ratio %'\n"
	      "set yrange [0:100]\n"
	      "set grid\n"
	      "set key outside right top\n"
	      "$data << EOD\n", out);
	for (size_t i = 0; i < r->n_rows; i++) {
		const struct size_row *row = &r->rows[order[i]];

		fprintf(out, "%.6g", (double)row->cap / n);
		for (size_t p = 0; p < np; p++)
			fprintf(out, " %.4f", 100.0 * (double)row->hits[p] / counted);
		fprintf(out, " %.4f", 100.0 * (double)row->opt / counted);
		if (t->epoch_len)
			fprintf(out, " %.4f", 100.0 * trace_bound_cn(t, row->cap));
		fputc('\n', out);
	}
	fputs("EOD\nplot", out);
	for (size_t p = 0; p < np; p++)
		fprintf(out, " $data using 1:%zu with linespoints lw 2 title '%s', \\\n    ",
			p + 2, evict_kind_name(o->policies[p]));
	fprintf(out, " $data using 1:%zu with linespoints lw 3 lc 'black' title 'OPT'", np + 2);
	if (t->epoch_len)
		fprintf(out, ", \\\n     $data using 1:%zu with lines dt 2 lw 2 lc 'red' "
			"title 'C/N bound'", np + 3);
	fputc('\n', out);
}

/* Run gnuplot with the script for r on its stdin and png_fd as its stdout.
 * Returns 0 once gnuplot exited 0, else -1 after saying why on stderr
 * (gnuplot's own messages go to stderr too). */
static int gp_run(int png_fd, const struct options *o, const struct trace *t,
		  const struct results *r)
{
	static char *const argv[] = { "gnuplot", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
	sigset_t pipe_set;
	int pipefd[2], err, status, write_err = 0, rc = -1;
	pid_t pid;
	FILE *script;

	if (pipe2(pipefd, O_CLOEXEC)) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: pipe: %s\n", o->plot_path,
			strerror(errno));
		return -1;
	}
	err = posix_spawn_file_actions_init(&fa);
	if (err)
		goto close_pipe;
	err = posix_spawnattr_init(&attr);
	if (err)
		goto destroy_fa;
	/* gnuplot gets the default SIGPIPE even though we ignore ours below */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if ((err = posix_spawn_file_actions_adddup2(&fa, pipefd[0], STDIN_FILENO)) ||
	    (err = posix_spawn_file_actions_adddup2(&fa, png_fd, STDOUT_FILENO)) ||
	    (err = posix_spawnattr_setsigdefault(&attr, &pipe_set)) ||
	    (err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF)))
		goto destroy_attr;
	/* glibc's posix_spawnp() reports a failed exec (ENOENT: no gnuplot)
	 * as its result, so there is no child to reap then */
	err = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
destroy_attr:
	posix_spawnattr_destroy(&attr);
destroy_fa:
	posix_spawn_file_actions_destroy(&fa);
close_pipe:
	close(pipefd[0]);
	if (err) {
		close(pipefd[1]);
		if (err == ENOENT)
			fprintf(stderr, "tierfs-sim: cannot plot to %s: gnuplot not found in PATH "
				"(Debian: apt-get install gnuplot-nox)\n", o->plot_path);
		else
			fprintf(stderr, "tierfs-sim: cannot plot to %s: cannot run gnuplot: %s\n",
				o->plot_path, strerror(err));
		return -1;
	}

	/* if gnuplot dies early, writing its script must fail with EPIPE, not
	 * kill us: the table is printed and the exit status must say 1 */
	sigaction(SIGPIPE, &ign, &old_pipe);
	script = fdopen(pipefd[1], "w");
	if (!script) {
		write_err = errno;
		close(pipefd[1]);
	} else {
		errno = 0;
		gp_write_script(script, o, t, r);
		if (ferror(script))
			write_err = errno ? errno : EIO;
		if (fclose(script) && !write_err)
			write_err = errno;
	}
	sigaction(SIGPIPE, &old_pipe, NULL);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "tierfs-sim: cannot plot to %s: waitpid: %s\n",
				o->plot_path, strerror(errno));
			return -1;
		}
	}
	if (WIFSIGNALED(status))
		fprintf(stderr, "tierfs-sim: cannot plot to %s: gnuplot killed by signal %d\n",
			o->plot_path, WTERMSIG(status));
	else if (WEXITSTATUS(status))
		fprintf(stderr, "tierfs-sim: cannot plot to %s: gnuplot failed (exit status %d)\n",
			o->plot_path, WEXITSTATUS(status));
	else if (write_err)
		fprintf(stderr, "tierfs-sim: cannot plot to %s: writing gnuplot's script: %s\n",
			o->plot_path, strerror(write_err));
	else
		rc = 0;
	return rc;
}

/* Draw r into o->plot_path.  The PNG is written under a temp name in the
 * same directory and renamed over the target only when gnuplot succeeded,
 * so a failure leaves whatever was there before.  Returns 0 or -1 after
 * saying why on stderr, naming the file. */
static int plot_write(const struct options *o, const struct trace *t, const struct results *r)
{
	const char *path = o->plot_path;
	char tmp[PATH_MAX];
	struct stat st;
	mode_t mask;
	int fd, err, rc = -1;

	if (t->n == t->warm_from || r->n_rows == 0) {
		fprintf(stderr, "tierfs-sim: not plotting to %s: no accesses are counted after "
			"the warm-up, so there is no hit ratio to draw\n", path);
		return -1;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: path too long\n", path);
		return -1;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* mkstemp() makes it 0600; give it the mode a plain create would */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask)) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: chmod %s: %s\n", path, tmp,
			strerror(errno));
		goto out;
	}
	fflush(stdout);         /* the table before anything gnuplot says */
	if (gp_run(fd, o, t, r))
		goto out;
	if (fstat(fd, &st) || st.st_size == 0) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: gnuplot wrote nothing\n", path);
		goto out;
	}
	err = close(fd);
	fd = -1;
	if (err) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (rename(tmp, path)) {
		fprintf(stderr, "tierfs-sim: cannot plot to %s: rename from %s: %s\n", path, tmp,
			strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o;
	struct trace t;
	struct results r;
	int rc, plot_rc = 0;

	rc = parse_args(&o, argc, argv);
	if (rc)
		return rc;
	trace_init(&t);
	rc = make_trace(&o, &t);
	if (rc != TFS_OK)
		return 1;
	if (o.warm_from != UINT64_MAX)
		t.warm_from = o.warm_from < t.n ? (size_t)o.warm_from : t.n;
	if (o.have_tiers) {
		rc = run_tiers(&o, &t);
		trace_release(&t);
		return rc == TFS_OK ? 0 : 1;
	}
	rc = run(&o, &t, &r);
	if (rc == TFS_OK && o.plot_path)
		plot_rc = plot_write(&o, &t, &r);
	trace_release(&t);
	return rc == TFS_OK && plot_rc == 0 ? 0 : 1;
}
