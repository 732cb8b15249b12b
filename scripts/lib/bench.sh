# bench.sh - what every scripts/bench/* script shares: set up and build,
# a throwaway radosgw, and timing helpers.  Sourced from the repo root.

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# bench_start LOG: install what is missing, build, start radosgw (its
# output to LOG; RGW_DIR must be set) and set S3UTIL to a client of it.
bench_start() {
	bash scripts/setup.sh >/dev/null
	[ -f build/build.ninja ] || meson setup build >/dev/null
	ninja -C build >/dev/null
	rgw_start "$1" || { tail -n 30 "$1"; exit 1; }
	S3UTIL=(build/tests/tierfs-s3util --endpoint "$S3_ENDPOINT" --path-style)
}

bench_stop_rgw() { bash scripts/rgw/stop-rgw.sh --purge >/dev/null 2>&1 || true; }

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
# secs_of CMD...: run CMD, print its wall time in seconds.
secs_of() { local t0; t0=$(now); "$@"; awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }'; }
# mibs BYTES SECS: MiB/s, rounded.
mibs() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / 1048576 / s }'; }
# median: of the numbers on stdin, one per line.
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# stat_of NAME: the daemon's counter NAME from a fresh SIGUSR1 stats line
# (the daemon's PID in $pid, its log in $LOG).
stat_of() {
	local before
	before=$(grep -c 'stats (SIGUSR1)' "$LOG" || true)
	kill -USR1 "$pid"
	for _ in $(seq 200); do
		[ "$(grep -c 'stats (SIGUSR1)' "$LOG" || true)" -gt "$before" ] && break
		sleep 0.05
	done
	grep 'stats (SIGUSR1)' "$LOG" | tail -n 1 | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'
}
