#!/usr/bin/env bash
# test.sh - set up, build and run every tierfs test on a Debian 12 machine
# (as root).  This is the README's test command; .ci/run calls exactly it.
#
#   1. scripts/setup.sh installs what is missing (fast when nothing is);
#   2. three builds: build/ (debugoptimized, warnings as errors),
#      build-asan/ (ASan + UBSan) and build-tsan/ (ThreadSanitizer: only
#      the cache stress program and the sanitizer canary);
#   3. a throwaway radosgw on loopback (scripts/rgw/start-rgw.sh), stopped
#      from the exit trap;
#   4. every Criterion test binary of both builds: unit tests, then
#      integration tests that mount for real (the ASan daemon for the ASan
#      pass); in each build, tierfs-stress-cache (threads through the
#      whole chunk cache, bytes checked) and, in the sanitizer builds, the
#      canary that proves each sanitizer live; build-tsan runs only those
#      (Criterion's sandbox cannot run under ThreadSanitizer);
#   5. every fuzz target under libFuzzer for a short time (scripts/fuzz.sh,
#      TIERFS_TEST_FUZZ_SECS each, default 10), each counting as one test.
# Ends with one line "N passed, N failed" counting individual tests
# (Criterion's own counts; a binary that crashes or hangs without a
# summary counts as one failure).  Exit status 0 only when nothing failed.
#
# Knobs: TIERFS_TEST_SKIP_ASAN=1 skips the ASan pass, TIERFS_TEST_SKIP_TSAN=1
#        the TSan pass, TIERFS_TEST_FUZZ_SECS=0 the fuzzing;
#        TIERFS_TEST_FILTER=glob runs only binaries whose name matches;
#        TIERFS_TEST_REPEAT=N runs it all N times in a row (the tests, the
#        stress runs and canary, the fuzzing; one setup, build and radosgw;
#        the counts add up), to show nothing flakes.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOG_DIR=$ROOT/build-logs
mkdir -p "$LOG_DIR"

step() { echo "== $*"; }
die() { echo "test.sh: ERROR: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

step "setup"
bash scripts/setup.sh || die "scripts/setup.sh failed"

# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"

use_pinned_libfuse
build() { # build DIR [meson options...] [-- ninja targets...]
	local dir=$1 reconf=() opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	# an existing build is configured again: it may predate the pinned
	# libfuse, or options of this script
	[ -f "$dir/build.ninja" ] && reconf=(--reconfigure)
	meson setup "${reconf[@]}" "$dir" "${MESON_FUSE_OPTS[@]}" "${opts[@]}" >"$LOG_DIR/setup-$dir.log" 2>&1 ||
		{ tail -n 30 "$LOG_DIR/setup-$dir.log"; return 1; }
	ninja -C "$dir" "$@" >"$LOG_DIR/build-$dir.log" 2>&1 ||
		{ grep -E "error|FAILED" "$LOG_DIR/build-$dir.log" | head -n 40; return 1; }
}

step "build (debugoptimized, -Werror)"
build build -Dwerror=true || die "build failed (log: $LOG_DIR/build-build.log)"
BUILDS=(build)
if [ "${TIERFS_TEST_SKIP_ASAN:-0}" != 1 ]; then
	step "build (ASan + UBSan)"
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug ||
		die "sanitizer build failed (log: $LOG_DIR/build-build-asan.log)"
	BUILDS+=(build-asan)
fi
# ThreadSanitizer: Criterion's sandbox maps memory where TSan keeps its
# shadow, so this build makes only the plain programs run under it.
if [ "${TIERFS_TEST_SKIP_TSAN:-0}" != 1 ]; then
	step "build (TSan: stress and canary)"
	build build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debug -- \
		tests/tierfs-stress-cache tests/tierfs-sanitizer-canary ||
		die "TSan build failed (log: $LOG_DIR/build-build-tsan.log)"
	BUILDS+=(build-tsan)
fi

step "start radosgw"
export RGW_DIR=${TMPDIR:-/tmp}/tierfs-test-rgw-$$
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-test.XXXXXX")
cleanup() {
	# never leave a mount behind: lazily detach anything under our scratch dir
	grep -o " $TEST_TMP[^ ]*" /proc/mounts 2>/dev/null | while read -r m; do umount -l "$m" 2>/dev/null; done
	bash "$ROOT/scripts/rgw/stop-rgw.sh" --purge >/dev/null 2>&1
	rm -rf "$TEST_TMP"
}
trap cleanup EXIT
rgw_start "$LOG_DIR/rgw-start.log" ||
	{ tail -n 30 "$LOG_DIR/rgw-start.log"; die "radosgw did not start"; }
# the harness must never pick up credentials or endpoints from elsewhere
unset AWS_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SESSION_TOKEN
# ... nor ask a cloud's metadata service (link-local addresses, never a
# test's target); tests that exercise those flows run their own servers
unset AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST
export AWS_EC2_METADATA_DISABLED=true NO_GCE_CHECK=true
echo "radosgw at $S3_ENDPOINT"

PASSED=0
FAILED=0
FAILED_NAMES=()
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
export TSAN_OPTIONS=exitcode=88:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan/tsan.supp

# sanitizer_report LOG: did LeakSanitizer, ASan, UBSan or TSan report in LOG?
sanitizer_report() { grep -aqE "ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer" "$1"; }

# fail_one BUILD NAME LOG WHY: count one failed test, show LOG's end
fail_one() {
	FAILED=$((FAILED + 1))
	FAILED_NAMES+=("$1/$2")
	echo "FAIL $1/$2$4"
	tail -n 30 "$3"
}

# tests_in BUILD SUITE: the names of BUILD's tests in SUITE
tests_in() {
	meson introspect "$1" --tests | python3 -c '
import json, sys
kind = sys.argv[1]
for t in json.load(sys.stdin):
    if kind in t["suite"] or any(s.endswith(":" + kind) for s in t["suite"]):
        print(t["name"])' "$2"
}

# run_bin BUILD NAME: run one Criterion binary, add its counts
run_bin() {
	local b=$1 name=$2 exe=$1/tests/$2 log=$LOG_DIR/$1-$2.log rc line tested passing
	export TIERFS_BIN=$ROOT/$b/tierfs
	export TIERFS_PROXY_BIN=$ROOT/$b/tests/tierfs-faultproxy
	export TIERFS_SIM_BIN=$ROOT/$b/tierfs-sim
	export TIERFS_S3UTIL_BIN=$ROOT/$b/tests/tierfs-s3util
	export TIERFS_TEST_TMP=$TEST_TMP
	timeout -k 10 1200 "$exe" --jobs 1 --verbose=0 >"$log" 2>&1
	rc=$?
	line=$(grep -a "Synthesis: Tested:" "$log" | tail -n 1)
	# Criterion does not fail a test whose worker LeakSanitizer or UBSan
	# reported on: any such report fails the binary
	if sanitizer_report "$log"; then
		echo "sanitizer report in $log"
		rc=86
	fi
	if [ -n "$line" ]; then
		tested=$(sed -E 's/.*Tested: ([0-9]+).*/\1/' <<<"$line")
		passing=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$line")
		PASSED=$((PASSED + passing))
		FAILED=$((FAILED + tested - passing))
		if [ "$passing" != "$tested" ] || [ "$rc" != 0 ]; then
			[ "$passing" = "$tested" ] && FAILED=$((FAILED + 1))
			FAILED_NAMES+=("$b/$name")
			echo "FAIL $b/$name ($line, exit $rc)"
			grep -a -E "\[(FAIL|----)\]|ERROR|runtime error|Sanitizer" "$log" | head -n 40
		else
			echo "ok   $b/$name: $passing tests"
		fi
	else
		fail_one "$b" "$name" "$log" " (no summary, exit $rc)"
	fi
}

# run_sh BUILD NAME: run the shell test tests/NAME.sh against BUILD's
# binaries; it counts as one test
run_sh() {
	local b=$1 name=$2 log=$LOG_DIR/$1-$2.log
	if TIERFS_SIM_BIN=$ROOT/$b/tierfs-sim TIERFS_BIN=$ROOT/$b/tierfs \
		timeout -k 10 300 bash "$ROOT/tests/$name.sh" \
		>"$log" 2>&1 && ! sanitizer_report "$log"; then
		PASSED=$((PASSED + 1))
		echo "ok   $b/$name"
	else
		fail_one "$b" "$name" "$log" ""
	fi
}

# tests_round: every test binary and shell test of every build, once
tests_round() {
	local b kind name
	for b in "${BUILDS[@]}"; do
		[ "$b" = build-tsan ] && continue   # its tests: the stress run
		step "tests: $b$ROUND"
		for kind in unit integration shell; do
			for name in $(tests_in "$b" "$kind"); do
				# shellcheck disable=SC2053
				[[ $name == ${TIERFS_TEST_FILTER:-*} ]] || continue
				if [ "$kind" = shell ]; then run_sh "$b" "$name"; else run_bin "$b" "$name"; fi
			done
		done
	done
}

# run_stress BUILD: threads through the chunk cache for a while (one test)
run_stress() {
	local b=$1 log=$LOG_DIR/$1-stress.log
	if timeout -k 10 300 "$b/tests/tierfs-stress-cache" "${TIERFS_TEST_STRESS_SECS:-15}" \
		>"$log" 2>&1 && ! sanitizer_report "$log"; then
		PASSED=$((PASSED + 1))
		echo "ok   $b/tierfs-stress-cache: $(tail -n 1 "$log")"
	else
		fail_one "$b" tierfs-stress-cache "$log" ""
	fi
}

# run_canary BUILD MODE REPORT: the sanitizer must report MODE's bug (one
# test); its report stays in its own log, never in one sanitizer_report reads
run_canary() {
	local b=$1 log=$LOG_DIR/$1-canary-$2.txt
	"$b/tests/tierfs-sanitizer-canary" "$2" >"$log" 2>&1
	if grep -aq "$3" "$log"; then
		PASSED=$((PASSED + 1))
		echo "ok   $b/canary $2: the sanitizer reported it"
	else
		fail_one "$b" "canary-$2" "$log" " (no \"$3\": the sanitizer is not live)"
	fi
}

# stress_round: the threaded stress test in every build, and the TSan canary
stress_round() {
	local b
	if [[ stress == ${TIERFS_TEST_FILTER:-*} ]]; then
		for b in "${BUILDS[@]}"; do
			step "stress: $b$ROUND"
			run_stress "$b"
			[ "$b" = build-tsan ] && run_canary "$b" race "ThreadSanitizer: data race"
		done
	fi
}

# libFuzzer on every parser for a short time: each target counts as one
# test (scripts/fuzz.sh; without clang's libFuzzer, said and skipped)
FUZZ_SECS=${TIERFS_TEST_FUZZ_SECS:-10}
# fuzz_round: each target FUZZ_SECS seconds
fuzz_round() {
	local rc word name
	if [ "$FUZZ_SECS" != 0 ] && [[ fuzz == ${TIERFS_TEST_FILTER:-*} ]]; then
		step "fuzz (${FUZZ_SECS}s per target)$ROUND"
		bash scripts/fuzz.sh "$FUZZ_SECS" >"$LOG_DIR/fuzz.log" 2>&1
		rc=$?
		if [ "$rc" = 2 ]; then
			echo "fuzz: skipped: $(tail -n 1 "$LOG_DIR/fuzz.log")"
		else
			while read -r word name _; do
				if [ "$word" = ok ]; then
					PASSED=$((PASSED + 1))
				else
					FAILED=$((FAILED + 1))
					FAILED_NAMES+=("$name")
				fi
			done < <(grep -aE "^(ok|FAIL) +fuzz_" "$LOG_DIR/fuzz.log")
			grep -aE "^(ok|FAIL) +fuzz_" "$LOG_DIR/fuzz.log"
			if [ "$rc" != 0 ] && ! grep -aq "^FAIL" "$LOG_DIR/fuzz.log"; then
				fail_one fuzz fuzz.sh "$LOG_DIR/fuzz.log" " (exit $rc)"
			fi
		fi
	fi
}

REPEAT=${TIERFS_TEST_REPEAT:-1}
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "TIERFS_TEST_REPEAT must be a positive number"
for ((round = 1; round <= REPEAT; round++)); do
	ROUND=
	[ "$REPEAT" -gt 1 ] && ROUND=" (round $round of $REPEAT)"
	tests_round
	stress_round
	fuzz_round
done

echo
if [ "${#FAILED_NAMES[@]}" -gt 0 ]; then
	echo "failed: ${FAILED_NAMES[*]} (logs in $LOG_DIR)"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
