/* sim_main.c - tierfs-sim: replay a trace against every eviction policy and compare with OPT.
 *
 * One trace (read or generated), several cache sizes, several policies:
 * for each size a row of hit ratios next to Belady's OPT and, for epoch
 * traces, the C/N bound, printed as a markdown table.  Exit status: 0 ok,
 * 1 the trace could not be read or memory ran out, 2 bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tfs_err.h"
#include "evict/evict.h"
#include "sim/opt.h"
#include "sim/sim.h"
#include "sim/trace.h"

#define MAX_SIZES 32
#define EXIT_USAGE 2

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
	bool have_alpha, have_length, have_gen_opt;
	struct size_spec sizes[MAX_SIZES];
	size_t n_sizes;
	enum evict_kind policies[EVICT_KIND_COUNT];
	size_t n_policies;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tierfs-sim [--trace FILE | --gen KIND [--items N] [--epochs E]\n"
		"                  [--alpha A] [--length L] [--seed S]]\n"
		"                  [--sizes LIST] [--policies LIST]\n"
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
		"                   (e.g. 1000,5000); default 0.25,0.5\n"
		"  --policies LIST  comma-separated among lru, lfu, tinylfu, or all (default)\n"
		"  --help           this text\n"
		"\n"
		"Exit status: 0 ok, 1 the trace could not be read or memory ran out,\n"
		"2 bad command line.\n");
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
	if ((rc = parse_sizes(o, "0.25,0.5")) || (rc = parse_policies(o, "all")))
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
			break;
		case 'p':
			if ((rc = parse_policies(o, optarg)))
				return rc;
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
	if (!o->have_length)
		o->length = o->items > TRACE_MAX_ACCESSES / 10 ? TRACE_MAX_ACCESSES : 10 * o->items;
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

static void print_ratio_to_opt(uint64_t hits, uint64_t opt)
{
	if (opt)
		printf(" %.2f |", (double)hits / (double)opt);
	else
		printf(" - |");
}

static int run(const struct options *o, const struct trace *t)
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

	for (size_t s = 0; s < o->n_sizes; s++) {
		const struct size_spec *sz = &o->sizes[s];
		size_t cap = sz->count;
		uint64_t hits[EVICT_KIND_COUNT], opt;
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
	}
	return TFS_OK;
}

int main(int argc, char **argv)
{
	struct options o;
	struct trace t;
	int rc;

	rc = parse_args(&o, argc, argv);
	if (rc)
		return rc;
	trace_init(&t);
	rc = make_trace(&o, &t);
	if (rc != TFS_OK)
		return 1;
	rc = run(&o, &t);
	trace_release(&t);
	return rc == TFS_OK ? 0 : 1;
}
