#!/usr/bin/env bash
# read_warm.sh - warm re-reads through the mount vs the FUSE-free limit of
# the same tier, in the same run, against a local radosgw.
#
#   bash scripts/bench/read_warm.sh [SIZE_MIB (2048)] [RUNS (3)]
#
# RAM tier: one object of SIZE_MIB is read once through a mount whose RAM
#   tier holds it all (--ram-size SIZE_MIB + 256M, --passthrough off: a
#   file wholly on SSD would otherwise be read by the kernel from the
#   cache's file, not from RAM).  Then, RUNS times, with the kernel page
#   cache dropped before each read: dd bs=1M of the file through the mount
#   (every byte from the RAM tier, no GET), and dd of the same bytes from a
#   tmpfs copy (fetched separately with one GET).  Goal: ratio >= 0.7.
#   Before the SSD rows, the file is read again until the SSD tier holds
#   every chunk (chunks its writer could not take during the cold read
#   are offered again at their RAM hits).
# SSD tier: the mount is remounted with --ram-size 64M on the same
#   --cache-dir (on this machine's disk), so the re-read comes from the
#   cache's file of the object (by passthrough where the kernel allows
#   it).  RUNS times, page cache dropped before each: dd through the
#   mount, and cat of the cache's files themselves from the same disk.
#   Goal: ratio >= 0.8.
# RAM by passthrough: a mount whose --cache-dir is on a tmpfs (page cache
#   on only; --ram-size 64M).  After a cold read the object's file is in
#   RAM, and opens are handed to the kernel, which reads that file with no
#   copy through the daemon (chunks the writer dropped meanwhile are read
#   again first).  RUNS times, page cache dropped before each: dd through
#   the mount, and dd of the tmpfs copy.  Goal, as for the RAM tier: 0.7.
# The daemon's GET counter (SIGUSR1 stats line) is checked: a warm read
# that sent a GET is reported as an error, not a number.
# Extra mount options: TIERFS_BENCH_MOUNT_OPTS (e.g. "--chunk-size 16M").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SIZE_MIB=${1:-2048}
RUNS=${2:-3}
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-warm.XXXXXX")
MNT=$WORK/mnt
CACHE=$WORK/cache
TMPFS=$WORK/tmpfs
LOG=$WORK/daemon.log
export RGW_DIR=$WORK/rgw
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})
SHM=$WORK/shm   # the tmpfs cache dir
mkdir -p "$MNT" "$TMPFS" "$SHM"
pid=

cleanup() {
	if grep -q " $MNT " /proc/mounts; then build/tierfs unmount "$MNT" || umount -l "$MNT"; fi
	[ -n "$pid" ] && wait "$pid" 2>/dev/null || true
	grep -q " $TMPFS " /proc/mounts && umount "$TMPFS"
	grep -q " $SHM " /proc/mounts && umount "$SHM"
	bench_stop_rgw
	rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$WORK/rgw.log"
bytes=$((SIZE_MIB * 1024 * 1024))
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-bytes bench obj "$bytes" 11 >/dev/null


CACHE_AT=$CACHE   # the --cache-dir of the next mount
mount_tierfs() {
	build/tierfs mount s3://bench "$MNT" -f --endpoint "$S3_ENDPOINT" --path-style \
		--cache-dir "$CACHE_AT" "$@" "${EXTRA[@]}" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 200); do grep -q " $MNT " /proc/mounts && return 0; sleep 0.05; done
	echo "mount failed:" >&2
	tail -n 20 "$LOG" >&2
	exit 1
}
unmount_tierfs() { build/tierfs unmount "$MNT"; wait "$pid"; pid=; }
read_mount() { dd if="$MNT/obj" of=/dev/null bs=1M status=none; }
read_tmpfs() { dd if="$TMPFS/obj" of=/dev/null bs=1M status=none; }
read_cache_files() { find "$CACHE/objects" -type f -print0 | xargs -0 cat >/dev/null; }
# fill_ssd WHAT: wait for the SSD writer, and read the object again while
# the tier lacks chunks ($want): a chunk the writer was too far behind to
# take is offered again at its next read (from RAM if RAM still holds
# it, else fetched again).  Fails, saying so, when four reads did not do.
fill_ssd() {
	local try
	for try in 1 2 3 4; do
		for _ in $(seq 600); do [ "$(stat_of ssd.queued)" = 0 ] && break; sleep 0.1; done
		[ "$(stat_of ssd.entries)" -ge "$want" ] && return 0
		[ "$try" = 4 ] || read_mount
	done
	echo "read_warm.sh: $1: the SSD tier holds $(stat_of ssd.entries) of $want chunks after four reads" >&2
	exit 1
}
# runs TIER MODE BASELINE_NAME BASELINE_FN: RUNS timed pairs, page cache
# dropped before each read; prints table rows, sets $ratio_median.
runs() {
	local ratios=() run fs_s base_s ratio
	for run in $(seq "$RUNS"); do
		drop_caches
		fs_s=$(secs_of read_mount)
		drop_caches
		base_s=$(secs_of "$4")
		ratio=$(awk -v b="$base_s" -v f="$fs_s" 'BEGIN { printf "%.2f", b / f }')
		ratios+=("$ratio")
		echo "| $1 | $2 | $run | $(mibs "$bytes" "$fs_s") | $3 | $(mibs "$bytes" "$base_s") | $ratio |"
	done
	ratio_median=$(printf '%s\n' "${ratios[@]}" | median)
}

# The tmpfs copy: one GET straight from the server, not through tierfs.
mount -t tmpfs -o "size=$((SIZE_MIB + 64))m" tmpfs "$TMPFS"
"${S3UTIL[@]}" get bench obj "$TMPFS/obj" >/dev/null

mount_tierfs --ram-size "$((SIZE_MIB + 256))M"
read_mount                                   # cold: fills RAM and SSD
cmp "$MNT/obj" "$TMPFS/obj" || { echo "tierfs bytes differ from the object" >&2; exit 1; }
want=$(stat_of ram.entries)
fill_ssd "the disk cache dir"
unmount_tierfs
files=$(find "$CACHE/objects" -type f | wc -l)

echo "| tier | page cache | run | tierfs MiB/s | baseline | baseline MiB/s | ratio |"
echo "|---|---|---|---|---|---|---|"
summary=()
for mode in on off; do
	MODE=()
	[ "$mode" = off ] && MODE=(--direct-io)
	# RAM tier: warm it (from the SSD tier), then time re-reads
	mount_tierfs --ram-size "$((SIZE_MIB + 256))M" --passthrough off "${MODE[@]}"
	read_mount
	gets0=$(stat_of s3.gets)
	runs RAM "$mode" "tmpfs dd" read_tmpfs
	[ "$(stat_of s3.gets)" = "$gets0" ] || { echo "warm RAM reads sent GETs" >&2; exit 1; }
	summary+=("median ratio, RAM tier vs tmpfs, page cache $mode: $ratio_median (goal >= 0.7)")
	unmount_tierfs

	# SSD tier: a RAM tier of 64M, so every chunk comes from the cache's file
	mount_tierfs --ram-size 64M "${MODE[@]}"
	gets0=$(stat_of s3.gets)
	runs SSD "$mode" "cat of the cache's $files file(s)" read_cache_files
	[ "$(stat_of s3.gets)" = "$gets0" ] || { echo "warm SSD reads sent GETs" >&2; exit 1; }
	summary+=("median ratio, SSD tier vs the cache's files, page cache $mode: $ratio_median (goal >= 0.8)")
	unmount_tierfs
done

# RAM by passthrough: the cache dir on a tmpfs, filled by a cold read
# room for the object, the index and the free share the tier leaves
mount -t tmpfs -o "size=$((SIZE_MIB * 2 + 512))m" tmpfs "$SHM"
CACHE_AT=$SHM/cache
mount_tierfs --ram-size 64M
read_mount
fill_ssd "the tmpfs cache dir"
dropped=$(stat_of ssd.dropped) resaved=$(stat_of ssd.resaved)
gets0=$(stat_of s3.gets)
runs "RAM, tmpfs cache dir" on "tmpfs dd" read_tmpfs
[ "$(stat_of s3.gets)" = "$gets0" ] || { echo "warm reads of the tmpfs cache sent GETs" >&2; exit 1; }
summary+=("median ratio, tmpfs cache dir (passthrough) vs tmpfs, page cache on: $ratio_median (goal >= 0.7)")
summary+=("tmpfs cache dir: $(stat_of passthrough.opens) passthrough opens; $dropped chunk(s) dropped by the writer during the cold read, $resaved of them taken at a second offer, the rest fetched again before the timed reads")
unmount_tierfs
umount "$SHM"
umount "$TMPFS"
echo
printf '%s\n' "${summary[@]}"
echo "(object ${SIZE_MIB} MiB, dd bs=1M, page cache dropped before each read; $(nproc) cores;" \
	"cache disk: $(df --output=source "$WORK" | tail -n 1))"
echo "last SSD run: $(grep 'stats (SIGUSR1)' "$LOG" | tail -n 1 | tr ' ' '\n' | grep '^ssd\.\(hits\|misses\|checksum_failures\|entries\)=' | tr '\n' ' ')"
