#!/usr/bin/env bash
# fuzz.sh - run libFuzzer on the control socket's request parser.
#
#   scripts/fuzz.sh [SECONDS]     (default 60)
#
# Builds tests/fuzz/fuzz_ctl_proto.c with clang -fsanitize=fuzzer,address,
# undefined against src/ctl/ctl_proto.c, and runs it for SECONDS with the
# corpus kept in build-fuzz/corpus (reused by the next run).  A crash
# leaves crash-* in build-fuzz/ and a non-zero exit.  The test suite runs
# the same target without libFuzzer (meson test test_ctl_proto).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)"; exit 2; }
mkdir -p build-fuzz/corpus
clang -g -O1 -D_GNU_SOURCE -DTIERFS_LIBFUZZER -fsanitize=fuzzer,address,undefined \
    -Isrc $(pkg-config --cflags json-c) \
    tests/fuzz/fuzz_ctl_proto.c src/ctl/ctl_proto.c \
    $(pkg-config --libs json-c) -o build-fuzz/fuzz_ctl_proto
cd build-fuzz
./fuzz_ctl_proto -max_total_time="$secs" -max_len=8192 corpus
