#!/usr/bin/env bash
# soak.sh - a long read of a churning mount through a faulty network:
# fio verifies every block it reads, pass after pass, while the proxy in
# front of the store answers 503 SlowDown and resets connections, and the
# RAM and SSD tiers are far smaller than the data.  Not part of CI.
#
#   bash scripts/soak.sh [MINUTES (30)]
#
# The data: NFILES files of FILE_MIB MiB (8 x 16 MiB, more than both
# tiers) written locally by fio with a crc32c header in every 64 KiB
# block, uploaded, and mounted through tierfs-faultproxy (503 SlowDown
# above 100 requests/s, and 503, reset and reset-before-reply rules
# re-armed every 2 s) with --ram-size 32M --ssd-size 64M --chunk-size 1M.
# Each pass drops the page cache and runs fio --verify_only over the
# mount (a job per file, random order).  After each pass the daemon's RSS
# and open descriptors are sampled.
#
# It passes (exit 0) when fio reports no error in any pass, the daemon is
# still up, and its RSS after the last pass is within RSS_SLACK_MIB (32)
# of its RSS at half time, its descriptors other than sockets within 4
# of theirs (the first passes fill the tiers), and its sockets never more
# than the connection pool's bound and 4 (the pool grows to its working
# size with the request rate).  The last lines are a summary to
# copy into docs/reliability.md.
#
# With S3_ENDPOINT (and AWS_*) in the environment it uses that server;
# otherwise it starts a throwaway radosgw.  Needs root (mount, drop_caches).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MINUTES=${1:-30}
NFILES=${NFILES:-8}
FILE_MIB=${FILE_MIB:-16}
RSS_SLACK_MIB=${RSS_SLACK_MIB:-32}
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-soak.XXXXXX")
MNT=$WORK/mnt
LOG=$WORK/tierfs.log
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT" "$WORK/data" "$WORK/cache"
pid= proxy_pid= armer_pid= own_rgw=

# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"

cleanup() {
	[ -n "$armer_pid" ] && kill "$armer_pid" 2>/dev/null || true
	if grep -qF " $MNT " /proc/mounts; then build/tierfs unmount "$MNT" 2>/dev/null || umount -l "$MNT"; fi
	[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	[ -n "$proxy_pid" ] && { kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; }
	[ -n "$own_rgw" ] && { bash scripts/rgw/stop-rgw.sh --purge >/dev/null 2>&1 || true; }
	rm -rf "$WORK"
}
trap cleanup EXIT

command -v fio >/dev/null || { echo "soak.sh: needs fio (apt-get install fio)" >&2; exit 2; }
use_pinned_libfuse
[ -f build/build.ninja ] || meson setup build "${MESON_FUSE_OPTS[@]}" >/dev/null
ninja -C build >/dev/null
if [ -z "${S3_ENDPOINT:-}" ]; then
	rgw_start "$WORK/rgw.log" || { tail -n 30 "$WORK/rgw.log"; exit 1; }
	own_rgw=1
fi
S3UTIL=(build/tests/tierfs-s3util --endpoint "$S3_ENDPOINT" --path-style)
BUCKET=tfs-soak-$$-$(date +%s)
"${S3UTIL[@]}" mb "$BUCKET" >/dev/null

# One job writes the files here, the same job reading verifies them over
# the mount (each 64 KiB block carries its offset and crc32c).
FIO_JOB=(--name=soak --bs=64k --size="${FILE_MIB}M" --numjobs="$NFILES" --randrepeat=1
	--verify=crc32c --verify_state_save=0 --ioengine=psync --group_reporting=1)
fio "${FIO_JOB[@]}" --rw=randwrite --directory="$WORK/data" --do_verify=0 >"$WORK/fio-write.log"
for f in "$WORK"/data/*; do
	"${S3UTIL[@]}" put "$BUCKET" "$(basename "$f")" "$f" >/dev/null
done
DATA_MIB=$((NFILES * FILE_MIB))
rm -rf "$WORK/data"

# The proxy: 503 SlowDown above 100 requests/s, and rules re-armed below.
# The rate limit is a rail the daemon's bursts may touch, not a constant
# refusal: these readers ask about 45 requests/s, and a store that
# refuses half of all requests for half an hour makes some read spend its
# retry budget and fail with EIO, as documented (test_faults holds that).
build/tests/tierfs-faultproxy --listen 127.0.0.1:0 --port-file "$WORK/proxy.port" \
	--upstream "${S3_ENDPOINT#http://}" --req-rate 100 >"$WORK/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 100); do [ -s "$WORK/proxy.port" ] && break; sleep 0.05; done
PROXY=http://127.0.0.1:$(cat "$WORK/proxy.port")
arm() { curl -sf "$PROXY/__proxy/fault?$1" >/dev/null || true; }
(
	while :; do
		arm "kind=503&count=3&method=GET"
		arm "kind=reset&count=1&method=GET&after=65536"
		arm "kind=reset_before&count=1&method=GET"
		sleep 2
	done
) &
armer_pid=$!

build/tierfs mount "s3://$BUCKET" "$MNT" -f --endpoint "$PROXY" --path-style \
	--ram-size 32M --ssd-size 64M --chunk-size 1M --cache-dir "$WORK/cache" >"$LOG" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -qF " $MNT " /proc/mounts && break; sleep 0.05; done
grep -qF " $MNT " /proc/mounts || { echo "soak.sh: mount failed: $(cat "$LOG")" >&2; exit 1; }

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
# descriptors other than sockets (files, pipes, /dev/fuse): a leak of
# any is growth; sockets are the connection pool, bounded by its size
nfds() { find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 ! -lname 'socket:*' | wc -l; }
nsocks() { find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -lname 'socket:*' | wc -l; }
MAX_CONN=64   # the daemon's --max-connections (its default)

end=$(($(date +%s) + MINUTES * 60)) half=$(($(date +%s) + MINUTES * 30))
passes=0 verify_errors=0 failed_passes=0 rss_first= fds_first= rss_max=0 socks_max=0
while [ "$(date +%s)" -lt "$end" ]; do
	sync
	echo 3 >/proc/sys/vm/drop_caches
	rc=0
	fio "${FIO_JOB[@]}" --rw=randread --readonly --directory="$MNT" --verify_only=1 \
		--verify_fatal=0 >"$WORK/fio-pass.log" 2>&1 || rc=$?
	errs=$(grep -c "verify failed" "$WORK/fio-pass.log" || true)
	kill -0 "$pid" 2>/dev/null || { echo "soak.sh: the daemon died in pass $((passes + 1))" >&2; tail -n 30 "$LOG" >&2; exit 1; }
	passes=$((passes + 1))
	verify_errors=$((verify_errors + errs))
	if [ "$rc" -ne 0 ] || [ "$errs" -ne 0 ]; then
		failed_passes=$((failed_passes + 1))
		echo "pass $passes: fio exit $rc, $errs verify errors:" >&2
		tail -n 20 "$WORK/fio-pass.log" >&2
	fi
	rss=$(rss_kib) fds=$(nfds) socks=$(nsocks)
	[ "$socks" -gt "$socks_max" ] && socks_max=$socks
	# the baseline is the first pass after half the run: the first ones
	# fill the tiers, and the connection pool grows with the request rate
	# for a while (to its working size, at most --max-connections); a
	# leak is growth in the second half
	[ -z "$rss_first" ] && [ "$(date +%s)" -ge "$half" ] && rss_first=$rss fds_first=$fds
	[ "$rss" -gt "$rss_max" ] && rss_max=$rss
	echo "pass $passes: $DATA_MIB MiB verified, fio exit $rc, RSS $((rss / 1024)) MiB, $fds descriptors and $socks sockets"
done

[ -n "$rss_first" ] || rss_first=$rss fds_first=$fds   # no pass ended after half time
kill -USR1 "$pid"
sleep 1
stats=$(grep 'stats (SIGUSR1)' "$LOG" | tail -n 1 | tr ' ' '\n')
stat() { awk -F= -v k="$1" '$1 == k { print $2 }' <<<"$stats"; }
faults=$(curl -sf "$PROXY/__proxy/stats" | awk -F'[ =:]+' '/faults|slowdowns/ { s = s $0 " " } END { print s }')

ok=1
[ "$verify_errors" -eq 0 ] && [ "$failed_passes" -eq 0 ] || ok=0
[ $((rss / 1024)) -le $((rss_first / 1024 + RSS_SLACK_MIB)) ] || ok=0
[ "$fds" -le $((fds_first + 4)) ] || ok=0
[ "$socks_max" -le $((MAX_CONN + 4)) ] || ok=0   # the pool, the control socket, a few more
echo
echo "soak: $(date -u +%Y-%m-%d) $MINUTES min, $passes passes of $DATA_MIB MiB ($((passes * DATA_MIB)) MiB verified by fio),"
echo "  verify errors $verify_errors, failed passes $failed_passes;"
echo "  RSS at half time $((rss_first / 1024)) MiB, after the last pass $((rss / 1024)) MiB, max $((rss_max / 1024)) MiB (--ram-size 32M);"
echo "  descriptors (not sockets) $fds_first -> $fds, sockets at most $socks_max (pool bound $MAX_CONN);"
echo "  store: $(stat s3.gets) GETs, $(stat s3.retries) retries, $(stat s3.errors) errors; proxy: $faults"
echo "  ssd: $(stat ssd.insertions) stored, $(stat ssd.evictions) evicted, $(stat ssd.checksum_failures) checksum failures; ram: $(stat ram.evictions) evicted"
[ "$ok" -eq 1 ] && echo "soak: PASS" || { echo "soak: FAIL"; exit 1; }
