# bench.sh - what every scripts/bench/* script shares: set up and build,
# a throwaway radosgw, and timing helpers.  Sourced from the repo root.

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# bench_start LOG: install what is missing, build, start radosgw (its
# output to LOG; RGW_DIR must be set) and set S3UTIL to a client of it.
bench_start() {
	bash scripts/setup.sh >/dev/null
	use_pinned_libfuse
	[ -f build/build.ninja ] || meson setup build "${MESON_FUSE_OPTS[@]}" >/dev/null
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
# cpu_of PID...: CPU seconds (user + system, their reaped children's too)
# of the processes so far; one that is gone counts 0.
cpu_of() {
	local p
	# fields after the ")" that ends the command name: utime is the 12th
	for p in "$@"; do if [ -r "/proc/$p/stat" ]; then sed 's/.*) //' "/proc/$p/stat"; fi; done |
		awk -v hz="$(getconf CLK_TCK)" '{ t += $12 + $13 + $14 + $15 } END { printf "%.3f\n", t / hz }'
}
# wait_all PID...: wait for each of this shell's children; fails if any
# failed (after waiting for all of them).
wait_all() {
	local p rc=0
	for p in "$@"; do wait "$p" || rc=1; done
	return "$rc"
}
# times_secs FILE: the CPU seconds of a shell's reaped children in FILE,
# the output of bash's times run in that shell (not in a $(...) subshell,
# which has children of its own): "times >FILE".
times_secs() {
	awk 'END { gsub(/[ms]/, " "); printf "%.3f\n", $1 * 60 + $2 + $3 * 60 + $4 }' "$1"
}
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

# ---- a tool mounted on $MNT through the S3 emulator (loader.sh, peers.sh) ----

# bench_work NAME: a work directory $WORK (radosgw's $RGW_DIR and the
# mount point $MNT in it), $LOGS = $OUT/logs emptied, no tool mounted
# yet, and the traps that unmount and stop everything on exit.
bench_work() {
	WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-$1.XXXXXX")
	LOGS=$OUT/logs
	export RGW_DIR=$WORK/rgw
	MNT=$WORK/mnt
	mkdir -p "$OUT" "$MNT"
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
	tool=tierfs
	pid=
	proxy_pid=
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# bench_proxy_start LOG: tierfs-faultproxy in front of radosgw ($RGW_PORT),
# $LATENCY_MS to first byte and $BANDWIDTH bytes/s per connection, its
# output to LOG ($WORK must be set); sets proxy_pid and PROXY.  Fails,
# saying why, when it does not start.
bench_proxy_start() {
	build/tests/tierfs-faultproxy --listen 127.0.0.1:0 --port-file "$WORK/proxy.port" \
		--upstream "127.0.0.1:$RGW_PORT" --latency-ms "$LATENCY_MS" --bandwidth "$BANDWIDTH" \
		>"$1" 2>&1 &
	proxy_pid=$!
	for _ in $(seq 100); do [ -s "$WORK/proxy.port" ] && break; sleep 0.05; done
	[ -s "$WORK/proxy.port" ] || { echo "tierfs-faultproxy did not start: $(cat "$1")" >&2; return 1; }
	PROXY=http://127.0.0.1:$(cat "$WORK/proxy.port")
}

# proxy_stat NAME [URL]: the counter NAME of the emulator at URL ($PROXY);
# proxy_reset [URL]: zero its counters.
proxy_stat() { curl -s "${2:-$PROXY}/__proxy/stats" | awk -v k="$1" '$1 == k { print $2 }'; }
proxy_reset() { curl -s "${1:-$PROXY}/__proxy/reset_stats" >/dev/null; }

# bench_peer_config: what curl, s3fs and rclone need to reach the bucket
# through $PROXY: credentials in mode-600 files ($WORK/s3fs.passwd,
# $WORK/curl.cfg), not on command lines, and RCLONE_ENV, the environment
# to run rclone in (remote "peers:").
bench_peer_config() {
	(
		umask 077
		printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$WORK/s3fs.passwd"
		printf 'aws-sigv4 = "aws:amz:%s:s3"\nuser = "%s:%s"\nheader = "x-amz-content-sha256: UNSIGNED-PAYLOAD"\nsilent\nshow-error\nfail\n' \
			"$AWS_DEFAULT_REGION" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$WORK/curl.cfg"
	)
	RCLONE_ENV=(env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone.conf" RCLONE_CONFIG_PEERS_TYPE=s3
		RCLONE_CONFIG_PEERS_PROVIDER=Ceph RCLONE_CONFIG_PEERS_ENDPOINT="$PROXY"
		RCLONE_CONFIG_PEERS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID"
		RCLONE_CONFIG_PEERS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
		RCLONE_CONFIG_PEERS_REGION="$AWS_DEFAULT_REGION")
}

# bench_mounted: wait (30 s at most) for $MNT to be mounted by the daemon
# just started ($pid); fails if it exits or the time runs out.
bench_mounted() {
	for _ in $(seq 600); do
		grep -qF " $MNT " /proc/mounts && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# bench_cleanup: the EXIT trap of a script that mounts tools through the
# emulator: unmount the tool, stop the emulator ($proxy_pid) and radosgw,
# remove $WORK.
bench_cleanup() {
	set +e
	unmount_tool
	if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null; fi
	bench_stop_rgw
	rm -rf "$WORK"
}

# unmount_tool: unmount the tool on $MNT if mounted ($tool: tierfs, else
# a FUSE peer), reap its daemon ($pid).
unmount_tool() {
	if grep -qF " $MNT " /proc/mounts; then
		if [ "$tool" = tierfs ]; then
			build/tierfs unmount "$MNT" 2>/dev/null || umount -l "$MNT" || true
		else
			fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" || true
		fi
	fi
	if [ -n "$pid" ]; then
		for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	pid=
}
