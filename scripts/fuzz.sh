#!/usr/bin/env bash
# fuzz.sh - run libFuzzer on every parser's fuzz target (tests/fuzz/).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default 60 s each, all targets)
#
# Targets: ctl_proto (control socket requests), s3_xml (listings and error
# bodies), http_headers (status line, Content-Length, ETag, Content-Range,
# x-goog-generation), cache_index (the SSD index's record values and
# keys), config (config file, source URI, sizes), creds (credential JSON,
# STS XML, AWS config INI, GCP key files, timestamps).
#
# Each target is built with clang -fsanitize=fuzzer,address,undefined: the
# parser's own sources are compiled with coverage, the rest comes from
# build/libtierfs.a (scripts/test.sh or `ninja -C build` makes it).  It
# runs for SECONDS with tests/fuzz/corpus/TARGET as its seeds; what it
# finds new is kept in build-fuzz/corpus/TARGET (reused by the next run).
# A crash leaves build-fuzz/TARGET-crash-* and fails the run.  The unit
# suite replays every seed corpus without libFuzzer (test_fuzz_*).  Ends with "fuzz: N targets ok, N failed"; exit status
# 0 only when none failed, 2 when clang or libFuzzer is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
secs=${1:-60}
shift || true
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS must be a positive number" >&2; exit 2; }

declare -A SRCS=(
	[ctl_proto]="src/ctl/ctl_proto.c"
	[s3_xml]="src/s3/s3_xml.c"
	[http_headers]="src/s3/s3_client.c"
	[cache_index]="src/tiers/cache_index.c"
	[config]="src/config.c"
	[creds]="src/s3/cred_util.c src/s3/aws_creds.c src/s3/gcp_creds.c src/s3/jwt.c"
	[sim_trace]="src/sim/trace.c src/sim/sim.c"
)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(ctl_proto s3_xml http_headers cache_index config creds sim_trace)

command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)"; exit 2; }
[ -f build/libtierfs.a ] || { echo "fuzz.sh: build/libtierfs.a missing: run ninja -C build first"; exit 2; }
mkdir -p build-fuzz
probe=build-fuzz/probe
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' >"$probe.c"
clang -fsanitize=fuzzer "$probe.c" -o "$probe" 2>/dev/null ||
	{ echo "fuzz.sh: clang has no libFuzzer here"; exit 2; }

# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
use_pinned_libfuse
PKGS="libcurl libcrypto libxml-2.0 inih rocksdb libxxhash json-c"
# shellcheck disable=SC2086
CFLAGS="$(pkg-config --cflags $PKGS) -Isrc -D_GNU_SOURCE -DTIERFS_VERSION=\"fuzz\""
# shellcheck disable=SC2086
LIBS="$(pkg-config --libs $PKGS) -lpthread -lm"

ok=0
failed=0
for t in "${TARGETS[@]}"; do
	[ -n "${SRCS[$t]:-}" ] || { echo "fuzz.sh: unknown target $t" >&2; failed=$((failed + 1)); continue; }
	exe=build-fuzz/fuzz_$t
	log=build-fuzz/fuzz_$t.log
	# shellcheck disable=SC2086
	if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$CFLAGS "tests/fuzz/fuzz_$t.c" ${SRCS[$t]} build/libtierfs.a $LIBS -o "$exe" \
		>"$log" 2>&1; then
		echo "FAIL fuzz_$t: does not build"
		tail -n 20 "$log"
		failed=$((failed + 1))
		continue
	fi
	mkdir -p "build-fuzz/corpus/$t"
	if "$exe" -max_total_time="$secs" -max_len=65536 -timeout=20 -print_final_stats=1 \
		-artifact_prefix="build-fuzz/$t-" "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" \
		>>"$log" 2>&1; then
		echo "ok   fuzz_$t: $(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
			grep -o '[0-9]*$') runs in ${secs}s, corpus $(ls "build-fuzz/corpus/$t" | wc -l)"
		ok=$((ok + 1))
	else
		echo "FAIL fuzz_$t (log: $log)"
		grep -a -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -n 20
		failed=$((failed + 1))
	fi
done
echo "fuzz: $ok targets ok, $failed failed"
[ "$failed" -eq 0 ]
