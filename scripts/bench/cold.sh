#!/usr/bin/env bash
# cold.sh - cold sequential reads through the S3 emulator against the
# network limit, with where the machine's CPU goes and how many GETs the
# store serves.  Prints a markdown table.
#
#   bash scripts/bench/cold.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-cold-bench)]
#
# The store is a local radosgw behind tierfs-faultproxy (first byte after
# COLD_LATENCY_MS, each connection capped at COLD_BANDWIDTH bytes/s, as in
# peers.sh).  On a small machine the server, the emulator, the daemon and
# the reader share the cores: every CPU-second one of them spends is one
# the others do not get, so the table gives each one's CPU-seconds per
# GiB read (/proc/PID/stat; radosgw with its OSD, the reader from bash's
# times) beside the speed.  With COLD_PIN=1 the store (radosgw, its OSD
# and monitor) and the emulator run on CPU 0, and the network row's curls,
# tierfs and its readers on the others: the client side has cores of its
# own, as it has when the store is a remote service, so the table shows
# whether tierfs keeps up with the network rather than who wins the
# shared cores.
#
# Each run, for every row, alternated so that drift in the machine's load
# hits them alike, the page cache dropped before each:
#   network    COLD_CURL_PAR parallel ranged curl GETs of the same bytes;
#   tierfs     a fresh mount (empty RAM tier, and an emptied --cache-dir for
#              the "cache-dir" mode), COLD_READERS dd bs=1M at once, one per
#              file, then the mount is left for a second (the daemon's CPU
#              counted to its end: the SSD writer's tail) and unmounted;
#   base       the same with the tierfs binary COLD_BASE (another build, for
#              a before/after in one run), when set.
#
# Parameters (environment; defaults in parentheses):
#   COLD_MIB (2048)          bytes read per run, in MiB, split over the files
#   COLD_READERS (1)         files read at once (each COLD_MIB / COLD_READERS)
#   COLD_RUNS (5)            runs
#   COLD_MODES ("cache-dir ram")  cache-dir: --cache-dir on the disk; ram: none
#   COLD_BASE                a tierfs binary to compare with (unset: none)
#   COLD_LATENCY_MS (20), COLD_BANDWIDTH (90000000), COLD_CURL_PAR (16)
#   COLD_PIN (0)             1: the store and the emulator on CPU 0, the
#                            client side on the other CPUs (needs 2 or more)
#   RGW_OBJECTSTORE (bluestore)   memstore keeps the store's bytes off the
#                            disk the cache writes to
#   TIERFS_BENCH_MOUNT_OPTS  extra tierfs mount options
# Output: OUTDIR/cold.md (table, machine, command), OUTDIR/logs/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMDLINE="bash scripts/bench/cold.sh${1:+ $1}"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-cold-bench}
MIB=${COLD_MIB:-2048}
READERS=${COLD_READERS:-1}
RUNS=${COLD_RUNS:-5}
read -r -a MODES <<<"${COLD_MODES:-cache-dir ram}"
BASE=${COLD_BASE:-}
LATENCY_MS=${COLD_LATENCY_MS:-20}
BANDWIDTH=${COLD_BANDWIDTH:-90000000}
CURL_PAR=${COLD_CURL_PAR:-16}
PIN=${COLD_PIN:-0}
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})

die() { echo "cold: $*" >&2; exit 2; }
for v in MIB READERS RUNS CURL_PAR; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v must be a whole number >= 1"
done
for v in LATENCY_MS BANDWIDTH; do   # 0: unshaped
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
done
[ $((MIB % READERS)) = 0 ] || die "COLD_MIB must be a multiple of COLD_READERS"
case $PIN in 0 | 1) ;; *) die "COLD_PIN must be 0 or 1" ;; esac
CLIENT=()   # the client side's command prefix
if [ "$PIN" = 1 ]; then
	[ "$(nproc)" -ge 2 ] || die "COLD_PIN=1 needs 2 or more CPUs"
	command -v taskset >/dev/null || die "COLD_PIN=1 needs taskset (util-linux)"
	CLIENT=(taskset -c "1-$(($(nproc) - 1))")
fi
for m in "${MODES[@]}"; do
	case $m in cache-dir | ram) ;; *) die "COLD_MODES: '$m' is not cache-dir or ram" ;; esac
done
[ -z "$BASE" ] || [ -x "$BASE" ] || die "COLD_BASE '$BASE' is not an executable"
FILE_BYTES=$((MIB / READERS * 1048576))
BYTES=$((MIB * 1048576))

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_work cold

bench_start "$LOGS/rgw.log"
bench_proxy_start "$LOGS/faultproxy.log"
bench_peer_config
"${S3UTIL[@]}" mb bench >/dev/null
for ((i = 0; i < READERS; i++)); do
	"${S3UTIL[@]}" put-bytes bench "cold/f$i" "$FILE_BYTES" $((7 + i)) >/dev/null
done
server_pids=$(pgrep -f "(radosgw|ceph-osd) -c $RGW_DIR/" | tr '\n' ' ' || true)
[ -n "$server_pids" ] || die "no radosgw process found under $RGW_DIR"
if [ "$PIN" = 1 ]; then
	for p in $(pgrep -f "(radosgw|ceph-osd|ceph-mon) -c $RGW_DIR/") "$proxy_pid"; do
		taskset -a -p -c 0 "$p" >/dev/null || die "cannot pin process $p to CPU 0"
	done
fi


# read_net: the bytes of every file by CURL_PAR ranged GETs in all
read_net() {
	local per=$(((CURL_PAR + READERS - 1) / READERS)) i k a b part pids=()
	part=$(((FILE_BYTES + per - 1) / per))
	for ((i = 0; i < READERS; i++)); do
		for ((k = 0; k < per; k++)); do
			a=$((k * part)); b=$((a + part - 1)); [ "$b" -lt "$FILE_BYTES" ] || b=$((FILE_BYTES - 1))
			[ "$a" -lt "$FILE_BYTES" ] || break
			"${CLIENT[@]}" curl -K "$WORK/curl.cfg" -r "$a-$b" -o /dev/null "$PROXY/bench/cold/f$i" &
			pids+=($!)
		done
	done
	wait_all "${pids[@]}" || die "a read failed"
}
# read_mnt: every file through the mount, at once
read_mnt() {
	local i pids=()
	for ((i = 0; i < READERS; i++)); do
		"${CLIENT[@]}" dd if="$MNT/cold/f$i" of=/dev/null bs=1M status=none &
		pids+=($!)
	done
	wait_all "${pids[@]}" || die "a read failed"
}
# one ROW BIN MODE: one timed read; appends "ROW MODE MIBS SERVER PROXY DAEMON CLIENT GETS"
one() {
	local row=$1 bin=$2 mode=$3 t0 t1 s0 s1 p0 p1 d0=0 d1=0 c0 c1 g0 g1 cache=()
	if [ "$row" != network ]; then
		rm -rf "$WORK/cache"
		[ "$mode" = cache-dir ] && mkdir -p "$WORK/cache" && cache=(--cache-dir "$WORK/cache")
		"${CLIENT[@]}" "$bin" mount s3://bench "$MNT" -f --endpoint "$PROXY" --path-style "${cache[@]}" \
			"${EXTRA[@]}" >>"$LOGS/tierfs.$row.log" 2>&1 &
		pid=$!
		bench_mounted || die "$row did not mount: $(tail -n 5 "$LOGS/tierfs.$row.log")"
		d0=$(cpu_of "$pid")
	fi
	drop_caches
	# shellcheck disable=SC2086
	s0=$(cpu_of $server_pids); p0=$(cpu_of "$proxy_pid"); g0=$(proxy_stat object_GET)
	times >"$WORK/times.0"; t0=$(now)
	if [ "$row" = network ]; then read_net; else read_mnt; fi
	t1=$(now); times >"$WORK/times.1"; c0=$(times_secs "$WORK/times.0"); c1=$(times_secs "$WORK/times.1")
	# shellcheck disable=SC2086
	s1=$(cpu_of $server_pids); p1=$(cpu_of "$proxy_pid"); g1=$(proxy_stat object_GET)
	if [ "$row" != network ]; then
		sleep 1   # the SSD writer's tail is the read's cost too
		d1=$(cpu_of "$pid")
		"$bin" unmount "$MNT" >/dev/null 2>&1 || umount -l "$MNT"
		wait "$pid" || true
		pid=
	fi
	awk -v r="$row" -v m="$mode" -v t0="$t0" -v t1="$t1" -v b="$BYTES" -v s0="$s0" -v s1="$s1" \
		-v p0="$p0" -v p1="$p1" -v d0="$d0" -v d1="$d1" -v c0="$c0" -v c1="$c1" \
		-v g=$((g1 - g0)) 'BEGIN {
		gib = b / 1073741824
		printf "%s %s %.1f %.3f %.3f %.3f %.3f %.1f\n", r, m, b / 1048576 / (t1 - t0),
			(s1 - s0) / gib, (p1 - p0) / gib, (d1 - d0) / gib, (c1 - c0) / gib, g / gib }' >>"$WORK/runs"
}

T_START=$(now)
: >"$WORK/runs"
for ((run = 1; run <= RUNS; run++)); do
	echo "cold: run $run/$RUNS" >&2
	one network - -
	for m in "${MODES[@]}"; do
		one tierfs build/tierfs "$m"
		[ -z "$BASE" ] || one base "$BASE" "$m"
	done
done
cp "$WORK/runs" "$OUT/runs.txt"

{
	echo "# Cold sequential reads: tierfs against the network limit"
	echo
	echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(uname -r)."
	echo "$READERS file(s) of $((MIB / READERS)) MiB read at once, $RUNS runs; the emulator: ${LATENCY_MS} ms to first byte, ${BANDWIDTH} B/s per connection; store on ${RGW_OBJECTSTORE:-bluestore}."
	[ -z "$BASE" ] || echo "base: $BASE"
	[ "$PIN" = 0 ] || echo "Pinned: the store and the emulator on CPU 0; the curls, tierfs and its readers on CPUs 1-$(($(nproc) - 1))."
	[ ${#EXTRA[@]} = 0 ] || echo "extra mount options: ${EXTRA[*]}"
	echo
	echo "| row | mode | MiB/s, each run | median | of the network | CPU-s per GiB: server | emulator | daemon | reader | GETs per GiB |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
	awk '{ k = $1 " " $2; if (!(k in n)) order[++nk] = k; n[k]++; sp[k, n[k]] = $3
		for (i = 4; i <= 8; i++) sum[k, i] += $i }
	function med(k,   a, i, j, t, c) {
		c = n[k]; for (i = 1; i <= c; i++) a[i] = sp[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
	END {
		net = med("network -")
		for (o = 1; o <= nk; o++) {
			k = order[o]; split(k, f, " "); runs = ""
			for (i = 1; i <= n[k]; i++) runs = runs (i > 1 ? ", " : "") sp[k, i]
			m = med(k)
			printf "| %s | %s | %s | %.1f | %s | %.2f | %.2f | %s | %.2f | %.0f |\n", f[1], f[2], runs, m,
				f[1] == "network" ? "-" : sprintf("%.0f%%", 100 * m / net),
				sum[k, 4] / n[k], sum[k, 5] / n[k],
				f[1] == "network" ? "-" : sprintf("%.2f", sum[k, 6] / n[k]),
				sum[k, 7] / n[k], sum[k, 8] / n[k]
		}
	}' "$WORK/runs"
	echo
	echo "CPU columns are means over the runs; the network row's reader is its curls."
	echo
	echo "Command: \`${TIERFS_BENCH_MOUNT_OPTS:+TIERFS_BENCH_MOUNT_OPTS=\"$TIERFS_BENCH_MOUNT_OPTS\" }COLD_MIB=$MIB COLD_READERS=$READERS COLD_RUNS=$RUNS COLD_MODES=\"${MODES[*]}\" COLD_LATENCY_MS=$LATENCY_MS COLD_BANDWIDTH=$BANDWIDTH COLD_CURL_PAR=$CURL_PAR COLD_PIN=$PIN${BASE:+ COLD_BASE=$BASE} $CMDLINE\`"
	echo
	awk -v a="$T_START" -v b="$(now)" 'BEGIN { printf "Took %.0f s.\n", b - a }'
} >"$OUT/cold.md"
cat "$OUT/cold.md"
