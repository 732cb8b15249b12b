#!/usr/bin/env bash
# read_cold.sh - cold sequential read of one object through the mount vs
# one curl GET of the same object, in the same run, against a local
# radosgw.  Prints a markdown table: per run curl MiB/s, tierfs MiB/s,
# their ratio (goal >= 0.8 before read-ahead exists) and the daemon's
# peak RSS (VmHWM) during the read.
#
#   bash scripts/bench/read_cold.sh [SIZE_MIB (256)] [RUNS (5)]
#
# Each run: drop the kernel page cache, curl GET to /dev/null; drop it
# again, mount a fresh daemon (empty RAM tier = cold), dd bs=1M to
# /dev/null, read VmHWM, unmount.  curl and tierfs alternate so drift in
# the machine's load hits both alike.
#
# Two configurations, each RUNS times:
#   fresh tier:  the default 256M RAM tier; every chunk lands in memory the
#                process has never touched, so the kernel zeroes it first
#                (half of the daemon's CPU on this VM, measured with perf);
#   recycled:    --ram-size 64M; after the first 64 MiB chunks reuse
#                buffers, as they do once any tier is full (the steady
#                state of an epoch over a dataset larger than the tier).
# Extra mount options for both: TIERFS_BENCH_MOUNT_OPTS (e.g. "--chunk-size 16M").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SIZE_MIB=${1:-256}
RUNS=${2:-5}
MNT=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-bench-mnt.XXXXXX")
export RGW_DIR=${TMPDIR:-/tmp}/tierfs-bench-rgw
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})

cleanup() {
	grep -q " $MNT " /proc/mounts && { build/tierfs unmount "$MNT" || umount -l "$MNT"; }
	rmdir "$MNT" 2>/dev/null || true
	rm -f "$MNT.rgw.log"
	bench_stop_rgw
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$MNT.rgw.log"
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-bytes bench obj $((SIZE_MIB * 1024 * 1024)) 7 >/dev/null


bytes=$((SIZE_MIB * 1024 * 1024))
echo "| configuration | run | curl GET MiB/s | tierfs MiB/s | ratio | tierfs peak RSS MiB |"
echo "|---|---|---|---|---|---|"
summary=()
for config in fresh recycled; do
ratios=()
TIER=()
[ "$config" = recycled ] && TIER=(--ram-size 64M)
for run in $(seq "$RUNS"); do
	drop_caches
	t0=$(now)
	curl -sS --fail --aws-sigv4 "aws:amz:${AWS_DEFAULT_REGION}:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o /dev/null "$S3_ENDPOINT/bench/obj"
	t1=$(now)
	curl_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

	drop_caches
	build/tierfs mount s3://bench "$MNT" -f --endpoint "$S3_ENDPOINT" --path-style "${TIER[@]}" "${EXTRA[@]}" &
	pid=$!
	for _ in $(seq 100); do grep -q " $MNT " /proc/mounts && break; sleep 0.05; done
	t0=$(now)
	dd if="$MNT/obj" of=/dev/null bs=1M status=none
	t1=$(now)
	hwm=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
	build/tierfs unmount "$MNT"
	wait "$pid"
	fs_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	ratio=$(awk -v c="$curl_s" -v f="$fs_s" 'BEGIN { printf "%.2f", c / f }')
	ratios+=("$ratio")
	echo "| $config | $run | $(mibs "$bytes" "$curl_s") | $(mibs "$bytes" "$fs_s") | $ratio | $hwm |"
done
median=$(printf '%s\n' "${ratios[@]}" | median)
summary+=("median ratio tierfs/curl, $config: $median")
done
echo
printf '%s\n' "${summary[@]}"
echo "(object ${SIZE_MIB} MiB, 1 MiB reads, cold kernel page cache; $(nproc) cores, server on the same machine)"
