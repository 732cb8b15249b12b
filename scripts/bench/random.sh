#!/usr/bin/env bash
# random.sh - random reads of one large object through tierfs and its
# peers (s3fs -o use_cache, rclone mount --vfs-cache-mode full), on the
# same radosgw behind the same S3 emulator as peers.sh (20 ms to first
# byte, 90 MB/s a connection): what each tool fetches from the store for
# what fio asks, and how fast.
#
#   bash scripts/bench/random.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-random-bench)]
#
# Per tool and block size (1M and 128k), on a fresh mount with an empty
# cache, page cache dropped before each fio:
#   sparse  fio --rw=randread --ioengine=psync --io_size=BIG/16: a reader
#           that wants a sixteenth of the file, at random;
#   whole   the same file read whole in random order (--io_size=BIG, fio's
#           random map: every block once), on another fresh mount;
#   cached  that again on the same mount: the tool's own cache.
# "fetched" is the bytes the emulator sent (its bytes_down counter, HTTP
# headers included) over the bytes fio read.  fio uses its default seed:
# the same offsets for every tool.
#
# Parameters (environment; defaults in parentheses):
#   RANDOM_BIG_MIB (1024)            the object
#   RANDOM_TOOLS ("tierfs s3fs rclone"), RANDOM_BS ("1M 128k")
#   RANDOM_LATENCY_MS (20), RANDOM_BANDWIDTH (90000000)   the emulator
#   TIERFS_BENCH_MOUNT_OPTS          extra tierfs mount options
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-random-bench}
BIG_MIB=${RANDOM_BIG_MIB:-1024}
read -r -a TOOLS <<<"${RANDOM_TOOLS:-tierfs s3fs rclone}"
read -r -a BSS <<<"${RANDOM_BS:-1M 128k}"
LATENCY_MS=${RANDOM_LATENCY_MS:-20}
BANDWIDTH=${RANDOM_BANDWIDTH:-90000000}
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})
die() { echo "random.sh: $*" >&2; exit 2; }
[[ $BIG_MIB =~ ^[0-9]+$ ]] && [ "$BIG_MIB" -ge 16 ] || die "RANDOM_BIG_MIB must be 16 or more"
for t in "${TOOLS[@]}"; do
	case $t in tierfs | s3fs | rclone) ;; *) die "unknown tool '$t'" ;; esac
done

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-random.XXXXXX")
MNT=$WORK/mnt
LOGS=$OUT/logs
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT" "$OUT"
rm -rf "$LOGS"
mkdir -p "$LOGS"
pid=
tool=
proxy_pid=

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

bench_start "$WORK/rgw.log"
command -v fio >/dev/null || die "fio is needed (scripts/setup.sh installs it)"
bench_proxy_start "$LOGS/faultproxy.log" || exit 2
bench_peer_config
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-bytes bench big $((BIG_MIB * 1048576)) 7 >/dev/null

proxy_ctl() { curl -sS "$PROXY/__proxy/$1"; }
bytes_down() { proxy_ctl stats | awk '$1 == "bytes_down" { print $2 }'; }

# mount_tool TOOL: TOOL on $MNT through the emulator, an empty cache.
mount_tool() {
	tool=$1
	local cache=$WORK/cache.$1
	rm -rf "$cache"
	case $1 in
	tierfs)
		build/tierfs mount s3://bench "$MNT" -f --endpoint "$PROXY" --path-style \
			--cache-dir "$cache" "${EXTRA[@]}" >>"$LOGS/tierfs.log" 2>&1 &
		;;
	s3fs)
		s3fs bench "$MNT" -f -o "url=$PROXY,use_path_request_style,use_cache=$cache,passwd_file=$WORK/s3fs.passwd,ro,endpoint=$AWS_DEFAULT_REGION" \
			>>"$LOGS/s3fs.log" 2>&1 &
		;;
	rclone)
		"${RCLONE_ENV[@]}" rclone mount peers:bench "$MNT" --vfs-cache-mode full \
			--cache-dir "$cache" --read-only >>"$LOGS/rclone.log" 2>&1 &
		;;
	esac
	pid=$!
	bench_mounted || die "$1 did not mount (see $LOGS/$1.log)"
	ls "$MNT" >/dev/null
}

# row LABEL BS IO_MIB: fio on $MNT/big; prints a table row.
row() {
	local label=$1 bs=$2 io=$3 d0 d1 t0 t1 bw
	drop_caches
	d0=$(bytes_down)
	t0=$(now)
	fio --name=r --filename="$MNT/big" --readonly --rw=randread --bs="$bs" \
		--size="${BIG_MIB}M" --io_size="${io}M" --ioengine=psync --output-format=terse \
		--terse-version=3 >"$WORK/fio.out" 2>"$LOGS/fio.err" || die "fio failed: $(cat "$LOGS/fio.err")"
	t1=$(now)
	d1=$(bytes_down)
	bw=$(awk -F';' '{ printf "%.1f", $7 / 1024 }' "$WORK/fio.out")
	awk -v t="$tool" -v l="$label" -v b="$bs" -v io="$io" -v d=$((d1 - d0)) -v bw="$bw" \
		-v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN {
		printf "| %s | %s | %s | %d | %.1f | %.2f | %s | %.1f |\n", t, l, b, io,
			d / 1048576, d / (io * 1048576), bw, s }' | tee -a "$OUT/random.md"
}

{
	echo "Random reads of a ${BIG_MIB} MiB object, $(date -u +%F), $(nproc) cores;"
	echo "emulator: ${LATENCY_MS} ms to first byte, ${BANDWIDTH} B/s a connection."
	echo
	echo "| tool | reads | bs | MiB asked | MiB fetched | fetched / asked | MiB/s | s |"
	echo "|---|---|---|---:|---:|---:|---:|---:|"
} | tee "$OUT/random.md"
for bs in "${BSS[@]}"; do
	for t in "${TOOLS[@]}"; do
		mount_tool "$t"
		row "sparse, cold" "$bs" $((BIG_MIB / 16))
		unmount_tool
		mount_tool "$t"
		row "whole, cold" "$bs" "$BIG_MIB"
		row "whole, cached" "$bs" "$BIG_MIB"
		unmount_tool
	done
done
echo "(table in $OUT/random.md)" >&2
