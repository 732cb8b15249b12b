#!/usr/bin/env bash
# chunk_size.sh - what the chunk size trades: cold sequential throughput
# against the latency of a cold random small read, for several sizes, on
# one local radosgw in one run.
#
#   bash scripts/bench/chunk_size.sh [SIZES ("4M 8M 16M 32M")] [RUNS (3)]
#
# Per size: RUNS times, a fresh mount (empty RAM tier, page cache dropped)
# reads a 512 MiB object with dd bs=1M (MiB/s); then a fresh mount reads
# 24 blocks of 4 KiB at pseudo-random 4 KiB-aligned offsets (each its own
# dd, so each is a cold chunk), timed one by one (median and p90 ms).  The
# timing includes starting dd (~1 ms).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SIZES=${1:-"4M 8M 16M 32M"}
RUNS=${2:-3}
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-chunk.XXXXXX")
MNT=$WORK/mnt
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT"
OBJ_MIB=512

cleanup() {
	if grep -q " $MNT " /proc/mounts; then build/tierfs unmount "$MNT" || umount -l "$MNT"; fi
	bench_stop_rgw
	rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$WORK/rgw.log"
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-bytes bench obj $((OBJ_MIB * 1024 * 1024)) 13 >/dev/null

mount_cs() {
	build/tierfs mount s3://bench "$MNT" --endpoint "$S3_ENDPOINT" --path-style --chunk-size "$1"
}

echo "| chunk size | cold sequential MiB/s (each run) | random 4 KiB read ms, median | p90 |"
echo "|---|---|---|---|"
for cs in $SIZES; do
	seq_rates=()
	for _ in $(seq "$RUNS"); do
		drop_caches
		mount_cs "$cs"
		t0=$(now)
		dd if="$MNT/obj" of=/dev/null bs=1M status=none
		t1=$(now)
		build/tierfs unmount "$MNT"
		seq_rates+=("$(awk -v a="$t0" -v b="$t1" -v m="$OBJ_MIB" 'BEGIN { printf "%.0f", m / (b - a) }')")
	done
	drop_caches
	mount_cs "$cs"
	lat=()
	blocks=$((OBJ_MIB * 256))
	for i in $(seq 24); do
		blk=$(((i * 2654435761) % blocks))
		t0=$(now)
		dd if="$MNT/obj" of=/dev/null bs=4096 count=1 skip="$blk" status=none
		t1=$(now)
		lat+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
	done
	build/tierfs unmount "$MNT"
	sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
	med=$(echo "$sorted" | median)
	p90=$(echo "$sorted" | awk '{ a[NR] = $1 } END { print a[int(NR * 0.9)] }')
	echo "| $cs | ${seq_rates[*]} | $med | $p90 |"
done
echo
echo "(object ${OBJ_MIB} MiB; $(nproc) cores, server on the same machine; default --parallel-gets 4 and kernel readahead of two chunks)"
