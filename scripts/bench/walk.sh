#!/usr/bin/env bash
# walk.sh - the listing read-ahead benchmark: a walk of a tree of class
# folders through tierfs behind the S3 emulator (tierfs-faultproxy in
# front of radosgw, LATENCY ms to the first byte of every request), with
# --list-ahead at its default and with 0 (off), alternated, each walk on
# a fresh mount (no --cache-dir, so no saved listing):
#
#   find       `find MNT/tree | sort | cksum`
#   imagefolder  what torchvision's ImageFolder does before its first
#              sample: scandir the root for class folders, then os.walk
#              each class folder in sorted order, collecting the paths
#              (timed inside Python, its start left out)
#
# Prints seconds per walk (median of RUNS), the ratio off/on, and the LISTs
# the proxy saw per walk: the same on and off, since every directory is
# listed once either way.  Every walk's output is checked against the
# tree's known names.
#
#   bash scripts/bench/walk.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-walk-bench)]
#
# Parameters (environment; defaults in parentheses):
#   WALK_DIRS (200)        class folders
#   WALK_FILES (10)        files per folder (100 bytes each)
#   WALK_LATENCY_MS (30)   the emulator's time to first byte
#   WALK_RUNS (3)          walks of each kind, per setting
#   TIERFS_BENCH_MOUNT_OPTS extra tierfs mount options
# Output: OUTDIR/walk.md (table and command) and OUTDIR/logs/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMDLINE="bash scripts/bench/walk.sh${1:+ $1}"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-walk-bench}
DIRS=${WALK_DIRS:-200}
FILES=${WALK_FILES:-10}
LATENCY_MS=${WALK_LATENCY_MS:-30}
RUNS=${WALK_RUNS:-3}
BANDWIDTH=0
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})

die() { echo "walk: $*" >&2; exit 2; }
for v in DIRS FILES RUNS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v must be a whole number >= 1"
done
[[ $LATENCY_MS =~ ^[0-9]+$ ]] || die "WALK_LATENCY_MS must be a whole number"

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_work walk

T_START=$(now)
log() { printf '[walk %6.1fs] %s\n' "$(awk -v a="$T_START" -v b="$(now)" 'BEGIN { print b - a }')" "$*" >&2; }

log "setup, build, radosgw"
bench_start "$WORK/rgw.log"
bench_proxy_start "$LOGS/faultproxy.log" || exit 2

BUCKET=walk-bench-$$
log "uploading $DIRS folders of $FILES files"
"${S3UTIL[@]}" mb "$BUCKET" >/dev/null
for k in $(seq 0 $((DIRS - 1))); do
	"${S3UTIL[@]}" put-many "$BUCKET" "tree/c$(printf %04d "$k")/img" "$FILES" 100 $((100 + k)) 16 >/dev/null
done
# the names every walk must find: what radosgw lists, in find's form
"${S3UTIL[@]}" get-many "$BUCKET" tree/ "$WORK/local" 16 >/dev/null
REF_FIND=$(cd "$WORK/local" && find . | sed 's|^\.|/tree|' | sort | cksum)
REF_FILES=$(find "$WORK/local" -type f | wc -l)
rm -rf "$WORK/local"

mount_tierfs() {
	build/tierfs mount "s3://$BUCKET" "$MNT" -f --endpoint "$PROXY" --path-style "$@" "${EXTRA[@]}" \
		>>"$LOGS/tierfs.log" 2>&1 &
	pid=$!
	bench_mounted || die "tierfs did not mount (see $LOGS/tierfs.log)"
}

rd_find() { find "$MNT/tree" | cut -c $((${#MNT} + 1))- | sort | cksum; }
# the paths found, and the walk's own seconds (Python's start left out)
rd_imagefolder() {
	python3 - "$MNT/tree" <<'EOF'
import os, sys, time
t0 = time.monotonic()
root = sys.argv[1]
classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
paths = []
for c in classes:
    for d, _, names in sorted(os.walk(os.path.join(root, c), followlinks=True)):
        paths += [os.path.join(d, f) for f in sorted(names)]
print(len(paths), "%.3f" % (time.monotonic() - t0))
EOF
}

declare -A SECS LISTS
# walk KIND SETTING: one walk on a fresh mount; its seconds and LISTs
walk() {
	local kind=$1 setting=$2 opts=() t0 got want
	[ "$setting" = off ] && opts=(--list-ahead 0)
	mount_tierfs "${opts[@]}"
	drop_caches
	proxy_reset
	t0=$(now)
	got=$("rd_$kind")
	if [ "$kind" = imagefolder ]; then
		SECS[$kind,$setting]+="${got#* } "
		got=${got%% *}
	else
		SECS[$kind,$setting]+="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }') "
	fi
	LISTS[$kind,$setting]=$(($(proxy_stat GET) - $(proxy_stat object_GET)))
	unmount_tool
	if [ "$kind" = find ]; then want=$REF_FIND; else want=$REF_FILES; fi
	[ "$got" = "$want" ] || die "$kind with list-ahead $setting: got '$got', want '$want'"
}

for r in $(seq "$RUNS"); do
	for kind in find imagefolder; do
		for setting in on off; do
			walk "$kind" "$setting"
		done
	done
	log "run $r: find on ${SECS[find,on]}/ off ${SECS[find,off]}; imagefolder on ${SECS[imagefolder,on]}/ off ${SECS[imagefolder,off]}"
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
{
	echo "# Listing read-ahead: a walk of $DIRS folders of $FILES files"
	echo
	echo "Emulator: ${LATENCY_MS} ms to first byte. Median of $RUNS walks each, fresh mounts, alternated."
	echo
	echo "| walk | list-ahead on, s | off, s | off / on | LISTs on | LISTs off | every walk, on | every walk, off |"
	echo "|---|---:|---:|---:|---:|---:|---|---|"
	for kind in find imagefolder; do
		on=$(med "${SECS[$kind,on]}")
		off=$(med "${SECS[$kind,off]}")
		echo "| $kind | $on | $off | $(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.2fx", a / b }') | ${LISTS[$kind,on]} | ${LISTS[$kind,off]} | ${SECS[$kind,on]% } | ${SECS[$kind,off]% } |"
	done
	echo
	echo "Machine: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); tierfs $(git rev-parse --short HEAD)"
	echo "Command: WALK_DIRS=$DIRS WALK_FILES=$FILES WALK_LATENCY_MS=$LATENCY_MS WALK_RUNS=$RUNS $CMDLINE"
} >"$OUT/walk.md"
cat "$OUT/walk.md"
