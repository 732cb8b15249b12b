#!/usr/bin/env bash
# ctl.sh - what the control socket's commands cost and give, against a
# local radosgw, each against a baseline measured in the same run.
#
#   bash scripts/bench/ctl.sh [SMALL_FILES (5000)] [BIG_MIB (512)]
#
#   residency   `tierfs residency --count` over SMALL_FILES small files
#               (files per second; a sampler asks in batches of 10,000),
#               against `stat` of the same files through the mount;
#   warm small  `tierfs warm --tier ssd` of the small files, then `cat` of
#               them (no GET: the proxy-free mount's s3.gets counter), against
#               a cold `cat` of them with an empty cache;
#   warm big    the same for 8 files of BIG_MIB/8 MiB: warm MiB/s against a
#               cold `cat` MiB/s (the read path's own speed).
# Every cold read follows `tierfs evict --all` and a page-cache drop.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SMALL=${1:-5000}
BIG_MIB=${2:-512}
MNT=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-bench-mnt.XXXXXX")
CACHE=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-bench-cache.XXXXXX")
export RGW_DIR=${TMPDIR:-/tmp}/tierfs-bench-rgw

cleanup() {
	grep -q " $MNT " /proc/mounts && { build/tierfs unmount "$MNT" || umount -l "$MNT"; }
	rmdir "$MNT" 2>/dev/null || true
	rm -rf "$CACHE" "$MNT.rgw.log" "$MNT.log"
	bench_stop_rgw
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$MNT.rgw.log"
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-many bench small/f "$SMALL" 16384 11 16 >/dev/null
"${S3UTIL[@]}" put-many bench big/b 8 $((BIG_MIB * 1048576 / 8)) 12 4 >/dev/null

T=build/tierfs
$T mount s3://bench "$MNT" --endpoint "$S3_ENDPOINT" --path-style --cache-dir "$CACHE/c" \
	--ram-size 1G >"$MNT.log"
gets() { $T stats "$MNT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["s3"]["gets"])'; }
cold() { $T evict --all "$MNT" >/dev/null; drop_caches; }
quiet() { "$@" >/dev/null; }

echo "| measure | tierfs command | baseline | ratio |"
echo "|---|---|---|---|"

find "$MNT/small" -type f >/dev/null   # the listing, once
res=()
st=()
for _ in 1 2 3; do
	s=$(secs_of quiet $T residency --count "$MNT/small")
	res+=("$(awk -v n="$SMALL" -v s="$s" 'BEGIN { printf "%.0f", n / s }')")
	s=$(secs_of quiet find "$MNT/small" -type f -exec stat -c %s {} +)
	st+=("$(awk -v n="$SMALL" -v s="$s" 'BEGIN { printf "%.0f", n / s }')")
done
r=$(printf '%s\n' "${res[@]}" | median)
b=$(printf '%s\n' "${st[@]}" | median)
echo "| residency, $SMALL files (files/s, median of 3) | $r | stat: $b | $(awk -v a="$r" -v b="$b" 'BEGIN { printf "%.2f", a / b }') |"

for set in small big; do
	bytes=$([ $set = small ] && echo $((SMALL * 16384)) || echo $((BIG_MIB * 1048576)))
	cold
	c=$(secs_of quiet sh -c "cat $MNT/$set/*")
	cold
	g0=$(gets)
	w=$(secs_of quiet $T warm --tier ssd "$MNT/$set")
	g1=$(gets)
	drop_caches
	a=$(secs_of quiet sh -c "cat $MNT/$set/*")
	g2=$(gets)
	echo "| warm $set (MiB/s; GETs for the read after it: $((g2 - g1)), warm's: $((g1 - g0))) | $(mibs "$bytes" "$w") | cold cat: $(mibs "$bytes" "$c") | $(awk -v a="$c" -v b="$w" 'BEGIN { printf "%.2f", a / b }') |"
	echo "| read after warm $set (MiB/s) | $(mibs "$bytes" "$a") | cold cat: $(mibs "$bytes" "$c") | $(awk -v a="$c" -v b="$a" 'BEGIN { printf "%.2f", a / b }') |"
done
