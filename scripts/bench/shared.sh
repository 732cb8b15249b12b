#!/usr/bin/env bash
# shared.sh - the shared cache benchmark: NODES tierfs daemons on this
# machine (each with its own mountpoint, RAM and SSD cache directory) read
# one dataset - an image folder like the loader benchmark's and one large
# file - from an origin behind the S3 emulator (tierfs-faultproxy: first
# byte after LATENCY ms, BANDWIDTH bytes/s per connection, in front of
# radosgw), with and without a shared cache tier (--shared-cache: a second
# bucket on the same radosgw, behind a second proxy that does not shape,
# so that it can be killed):
#
#   in turn   node 1 reads the whole dataset, then node 2, ... : each
#             node's epoch time, the origin's bytes over all nodes
#   at once   every node reads the dataset at the same time
#   killed    with the shared tier, node 1 reads the dataset; then the
#             other nodes read it at once and the shared tier's proxy is
#             killed KILL_AFTER seconds in: failed reads (a read error or
#             a wrong byte) must be zero
#
# With the shared tier, a node's epoch in turn ends when its writes to the
# shared tier do (the next node starts then; the wait is not in its time).
# Each row starts from fresh mounts, empty local caches and (with the
# shared tier) an empty prefix of the shared bucket.  Every file each node
# reads is checked against a copy downloaded from radosgw directly (md5).
# Targets: with the shared tier, origin bytes <= 1.1x the dataset (about
# NODES x without); nodes 2..NODES in turn >= 3x faster than without it;
# killed: zero failed reads.
#
#   bash scripts/bench/shared.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-shared-bench)]
#
# Parameters (environment; defaults in parentheses):
#   SHARED_NODES (4)
#   SHARED_FILES (1000), SHARED_CLASSES (10)  image files of 40 to 200 KB
#   SHARED_LARGE (256M)   the large file's size (0 = none)
#   SHARED_LATENCY_MS (50), SHARED_BANDWIDTH (25000000)  the emulator: an
#       origin farther than the shared store (another region or cloud)
#   SHARED_KILL_AFTER (2)   seconds into the killed row
#   SHARED_PAR (8)          files each node reads at once
#   SHARED_USE_RUNNING (0)  1: use the radosgw at $S3_ENDPOINT (with the
#       AWS_* credentials of the environment) instead of a throwaway one
#   TIERFS_BENCH_MOUNT_OPTS extra tierfs mount options
# Output: OUTDIR/shared.md (tables with the shared tier's requests per row, from
# its proxy; ratios against the targets; command)
# and OUTDIR/logs/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMDLINE="bash scripts/bench/shared.sh${1:+ $1}"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-shared-bench}
NODES=${SHARED_NODES:-4}
FILES=${SHARED_FILES:-1000}
CLASSES=${SHARED_CLASSES:-10}
LARGE=${SHARED_LARGE:-256M}
LATENCY_MS=${SHARED_LATENCY_MS:-50}
BANDWIDTH=${SHARED_BANDWIDTH:-25000000}
KILL_AFTER=${SHARED_KILL_AFTER:-2}
PAR=${SHARED_PAR:-8}
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})

die() { echo "shared: $*" >&2; exit 2; }
for v in NODES FILES CLASSES LATENCY_MS BANDWIDTH KILL_AFTER PAR; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v must be a whole number >= 1"
done
[ "$NODES" -ge 2 ] || die "SHARED_NODES must be at least 2"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-shared.XXXXXX")
LOGS=$OUT/logs
export RGW_DIR=$WORK/rgw
mkdir -p "$OUT"
rm -rf "$LOGS"
mkdir -p "$LOGS"
proxy_pid=
shared_pid=
declare -a PIDS MNTS

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
unmount_all() {
	for i in "${!MNTS[@]}"; do
		grep -qF " ${MNTS[$i]} " /proc/mounts &&
			{ build/tierfs unmount "${MNTS[$i]}" 2>/dev/null || umount -l "${MNTS[$i]}" || true; }
	done
	for i in "${!PIDS[@]}"; do
		for _ in $(seq 300); do kill -0 "${PIDS[$i]}" 2>/dev/null || break; sleep 0.1; done
		kill -9 "${PIDS[$i]}" 2>/dev/null || true
		wait "${PIDS[$i]}" 2>/dev/null || true
	done
	PIDS=()
	MNTS=()
}
stop_shared_proxy() {
	if [ -n "$shared_pid" ]; then kill "$shared_pid" 2>/dev/null; wait "$shared_pid" 2>/dev/null || true; fi
	shared_pid=
}
cleanup() {
	set +e
	unmount_all
	stop_shared_proxy
	if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null; fi
	[ "${SHARED_USE_RUNNING:-0}" = 1 ] || bench_stop_rgw
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T_START=$(now)
log() { printf '[shared %6.1fs] %s\n' "$(awk -v a="$T_START" -v b="$(now)" 'BEGIN { print b - a }')" "$*" >&2; }

if [ "${SHARED_USE_RUNNING:-0}" = 1 ]; then
	[ -n "${S3_ENDPOINT:-}" ] || die "SHARED_USE_RUNNING=1 needs S3_ENDPOINT"
	RGW_PORT=${S3_ENDPOINT##*:}
	S3UTIL=(build/tests/tierfs-s3util --endpoint "$S3_ENDPOINT" --path-style)
	[ -x build/tierfs ] || die "build first (ninja -C build)"
else
	log "setup, build, radosgw"
	bench_start "$WORK/rgw.log"
fi
bench_proxy_start "$LOGS/faultproxy.log" || exit 2

# the shared bucket's own proxy, unshaped: killing it kills the tier
start_shared_proxy() {
	rm -f "$WORK/shared.port"
	build/tests/tierfs-faultproxy --listen 127.0.0.1:${SHARED_PORT:-0} --port-file "$WORK/shared.port" \
		--upstream "127.0.0.1:$RGW_PORT" >>"$LOGS/shared-proxy.log" 2>&1 &
	shared_pid=$!
	for _ in $(seq 100); do [ -s "$WORK/shared.port" ] && break; sleep 0.05; done
	[ -s "$WORK/shared.port" ] || die "the shared tier's proxy did not start"
	SHARED_PORT=$(cat "$WORK/shared.port")
}

# ---- the dataset ----
ORIGIN=shared-bench-origin-$$
SHARED=shared-bench-cache-$$
log "uploading $FILES files in $CLASSES classes, and a $LARGE file"
"${S3UTIL[@]}" mb "$ORIGIN" >/dev/null
"${S3UTIL[@]}" mb "$SHARED" >/dev/null
per=$((FILES / CLASSES))
for k in $(seq 0 $((CLASSES - 1))); do
	n=$per
	[ "$k" = $((CLASSES - 1)) ] && n=$((FILES - per * (CLASSES - 1)))
	size=$((40000 + k * 160000 / (CLASSES - 1)))
	"${S3UTIL[@]}" put-many "$ORIGIN" "train/c$(printf %02d "$k")/img" "$n" "$size" $((100 + k)) 16 >/dev/null
done
[ "$LARGE" != 0 ] && "${S3UTIL[@]}" put-bytes "$ORIGIN" train/large.bin "$LARGE" 7 >/dev/null
"${S3UTIL[@]}" get-many "$ORIGIN" train/ "$WORK/local" 8 >/dev/null
(cd "$WORK/local" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$WORK/ref.md5"
DS_FILES=$(wc -l <"$WORK/ref.md5")
DS_BYTES=$(du -sb --apparent-size "$WORK/local" | awk '{ print $1 }')
log "dataset: $DS_FILES files, $DS_BYTES bytes"
rm -rf "$WORK/local"

# mount_nodes SHARED_PREFIX|"": NODES fresh mounts through the emulator
mount_nodes() {
	local opts=() i
	[ -n "$1" ] && opts=(--shared-cache "s3://$SHARED/$1" --shared-endpoint "http://127.0.0.1:$SHARED_PORT")
	for i in $(seq "$NODES"); do
		MNTS[$i]=$WORK/mnt$i
		mkdir -p "${MNTS[$i]}"
		build/tierfs mount "s3://$ORIGIN" "${MNTS[$i]}" -f --endpoint "$PROXY" --path-style \
			--cache-dir "$(mktemp -d "$WORK/cache.XXXXXX")" --ram-size 128M "${opts[@]}" "${EXTRA[@]}" \
			>>"$LOGS/node$i.log" 2>&1 &
		PIDS[$i]=$!
	done
	for i in $(seq "$NODES"); do
		for _ in $(seq 600); do
			grep -qF " ${MNTS[$i]} " /proc/mounts && break
			kill -0 "${PIDS[$i]}" 2>/dev/null || die "node $i did not mount (see $LOGS/node$i.log)"
			sleep 0.05
		done
	done
}

# read_node I TAG: node I reads every file, PAR at once; its seconds to
# $WORK/TAG.I.secs, the files it failed on to $WORK/TAG.I.bad
read_node() {
	local i=$1 t0
	t0=$(now)
	(cd "${MNTS[$i]}/train" && find . -type f -print0 | sort -z |
		xargs -0 -P "$PAR" -n 16 md5sum 2>>"$LOGS/read-errors.log") | sort -k 2 >"$WORK/$2.$i.md5" || true
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }' >"$WORK/$2.$i.secs"
	# a file missing from the output or with another sum failed
	diff <(sort -k 2 "$WORK/ref.md5") "$WORK/$2.$i.md5" | grep -c '^<' >"$WORK/$2.$i.bad" || true
}

# settle I: wait (60 s at most) until node I has written what it queued
# for the shared tier: a node's epoch ends when its writes do
settle() {
	local q
	for _ in $(seq 600); do
		q=$(build/tierfs stats "${MNTS[$1]}" --json 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"]["shared"]["write_queue"])' 2>/dev/null || echo 0)
		[ "$q" = 0 ] && return 0
		sleep 0.1
	done
}

declare -A SECS BAD BYTES SREQ
# row NAME MODE SHARED_PREFIX: MODE "turn" or "once"
row() {
	local r=$1 mode=$2 i bad=0
	mount_nodes "$3"
	drop_caches
	proxy_reset
	proxy_reset "http://127.0.0.1:$SHARED_PORT"
	if [ "$mode" = turn ]; then
		for i in $(seq "$NODES"); do
			read_node "$i" "$r"
			[ -n "$3" ] && settle "$i"
		done
	else
		readers=()
		for i in $(seq "$NODES"); do read_node "$i" "$r" & readers+=($!); done
		wait "${readers[@]}"
	fi
	BYTES[$r]=$(proxy_stat bytes_down)
	# the shared tier's requests, by method (its proxy's counts)
	SREQ[$r]=$(for m in GET HEAD PUT DELETE; do
		printf '%s %s, ' "$m" "$(proxy_stat "$m" "http://127.0.0.1:$SHARED_PORT")"; done)
	SREQ[$r]=${SREQ[$r]%, }
	for i in $(seq "$NODES"); do
		SECS[$r,$i]=$(cat "$WORK/$r.$i.secs")
		bad=$((bad + $(cat "$WORK/$r.$i.bad")))
		build/tierfs stats "${MNTS[$i]}" --json >"$LOGS/$r-node$i.json" 2>&1 || true
	done
	BAD[$r]=$bad
	log "$r: origin bytes ${BYTES[$r]}, seconds $(for i in $(seq "$NODES"); do printf '%s ' "${SECS[$r,$i]}"; done), failed reads $bad"
	unmount_all
}

start_shared_proxy
row "without, in turn" turn ""
row "with, in turn" turn "turn"
row "without, at once" once ""
row "with, at once" once "once"

# killed: node 1 warms the tier, the others read at once, the tier dies
mount_nodes "killed"
drop_caches
read_node 1 killed
settle 1
proxy_reset
readers=()
for i in $(seq 2 "$NODES"); do read_node "$i" killed & readers+=($!); done
sleep "$KILL_AFTER"
log "killing the shared tier"
stop_shared_proxy
wait "${readers[@]}"
BYTES[killed]=$(proxy_stat bytes_down)
bad=0
for i in $(seq 2 "$NODES"); do
	SECS[killed,$i]=$(cat "$WORK/killed.$i.secs")
	bad=$((bad + $(cat "$WORK/killed.$i.bad")))
	build/tierfs stats "${MNTS[$i]}" --json >"$LOGS/killed-node$i.json" 2>&1 || true
done
BAD[killed]=$bad
log "killed: failed reads $bad"
unmount_all

# ---- report ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# mean of nodes 2..NODES of row
rest_mean() { local s=0 i; for i in $(seq 2 "$NODES"); do s=$(awk -v a="$s" -v b="${SECS[$1,$i]}" 'BEGIN { print a + b }'); done; awk -v s="$s" -v n=$((NODES - 1)) 'BEGIN { printf "%.2f", s / n }'; }
{
	echo "# Shared cache tier: $NODES nodes, one dataset"
	echo
	echo "Dataset: $DS_FILES files, $DS_BYTES bytes (image folder of $FILES files and a $LARGE file)."
	echo "Origin behind the emulator: ${LATENCY_MS} ms to first byte, $BANDWIDTH B/s per connection."
	echo "Shared tier: a bucket on the same radosgw, through an unshaped proxy."
	echo
	echo "| row | origin bytes | x dataset | failed reads | epoch s, node 1..$NODES | shared tier requests |"
	echo "|---|---:|---:|---:|---|---|"
	for r in "without, in turn" "with, in turn" "without, at once" "with, at once" killed; do
		secs=""
		for i in $(seq "$NODES"); do secs="$secs ${SECS[$r,$i]:--}"; done
		echo "| $r | ${BYTES[$r]} | $(ratio "${BYTES[$r]}" "$DS_BYTES") | ${BAD[$r]} |$secs | ${SREQ[$r]:--} |"
	done
	echo
	echo "Targets:"
	echo "- origin bytes with the shared tier <= 1.1x the dataset: in turn $(ratio "${BYTES[with, in turn]}" "$DS_BYTES")x, at once $(ratio "${BYTES[with, at once]}" "$DS_BYTES")x (without: $(ratio "${BYTES[without, in turn]}" "$DS_BYTES")x, $(ratio "${BYTES[without, at once]}" "$DS_BYTES")x)"
	echo "- nodes 2..$NODES in turn >= 3x faster with it: mean $(rest_mean "without, in turn") s without, $(rest_mean "with, in turn") s with: $(ratio "$(rest_mean "without, in turn")" "$(rest_mean "with, in turn")")x"
	echo "- shared tier killed mid-epoch: ${BAD[killed]} failed reads (target 0)"
	echo
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "Command: ${SHARED_USE_RUNNING:+SHARED_USE_RUNNING=$SHARED_USE_RUNNING }SHARED_NODES=$NODES SHARED_FILES=$FILES SHARED_LARGE=$LARGE $CMDLINE"
} >"$OUT/shared.md"
cat "$OUT/shared.md"
[ "${BAD[killed]}" = 0 ] && [ "${BAD[with, in turn]}" = 0 ] && [ "${BAD[with, at once]}" = 0 ]
