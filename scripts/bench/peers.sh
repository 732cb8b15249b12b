#!/usr/bin/env bash
# peers.sh - tierfs against its peers, s3fs (-o use_cache) and rclone mount
# (--vfs-cache-mode full), in one run: the same radosgw behind the same
# network emulator (tierfs-faultproxy: first byte after LATENCY ms, each
# connection capped at BANDWIDTH bytes/s), the same data, the same client
# commands, one tool after the other, the kernel page cache dropped before
# every timed command.  Prints a markdown table and draws a PNG chart.
#
#   bash scripts/bench/peers.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-peers-bench)]
#
# Workloads (each on a fresh mount with an emptied cache unless said):
#   1. big file: dd bs=1M | cksum of one object, cold; then again on the
#      same mount (warm: from the tool's own cache).
#   2. small files: in one directory, `ls | xargs cat | cksum` (ls order),
#      epoch 1 on a cold mount, epoch 2 on the same mount.
#   3. parallel: READERS dd bs=1M | cksum at once, each on its own object.
#   4. fio --rw=randread --bs=1M --ioengine=psync --time_based for
#      FIO_SECS on the big file (fio's default seed: the same offsets for
#      every tool), cold; then on the same mount the file is read whole
#      (untimed: into the tool's cache, given 2 s to settle) and fio runs
#      again, bs=1M and bs=128k: random reads of a cached file.  After
#      each fio run 8 sampled 1 MiB blocks are checked.
#   5. tree: `find | sort | cksum`, and `ls -lR` (names, sizes), over
#      TREE_DIRS x TREE_FILES tiny objects, each on its own cold mount.
#   6. cache pressure: DS_FILES objects of DS_MIB read EPOCHS times, each
#      epoch in another seeded permutation (the same for every tool)
#      through a cache of CACHE_MIB:
#        tierfs  --ram-size TIERFS_RAM_MIB --cache-dir D --ssd-size (CACHE - RAM)
#        rclone  --vfs-cache-max-size CACHE --vfs-cache-poll-interval RCLONE_POLL
#                (it enforces the cap only when its cleaner runs, every 1m by
#                default, so it holds more than CACHE in between)
#        s3fs    has no cache size option (ensure_diskfree only keeps free
#                space on the cache's file system), so its cache dir is an
#                ext4 file system of its own (a loop-mounted image file on
#                the same disk) and ensure_diskfree = that file system's free
#                MiB - CACHE: s3fs then evicts (CleanupCacheDir) to stay
#                within CACHE.  Without loop devices the row says "no cap".
#      The .md reports each cache directory's peak size (du every 0.5 s).
#      Elsewhere every tool caches on the same disk without a cap, tierfs
#      with its defaults plus --cache-dir.
# Limits, same run and same commands: "network" = the bytes of 1 (cold) by
#   CURL_PAR parallel ranged curl GETs through the emulator, and the files
#   of 2 (epoch 1) by curl --parallel --parallel-max CURL_PAR; "FUSE-free" =
#   every command on a local copy (PEERS_LOCAL: tmpfs, the default, or
#   disk), made with tierfs-s3util get-many straight from radosgw.  On disk
#   (page cache dropped) small files are bound by the disk's latency and can
#   be slower than a tool serving them from RAM: not a limit, hence tmpfs.
# Correctness: each command's output (cksum of the bytes read, in order;
#   find's sorted names; ls -lR's names and sizes) must equal the local
#   copy's; an error, a timeout (PEERS_STEP_TIMEOUT) or a difference makes
#   the cell FAIL, never a number.
# CPU: for every row with bytes, CPU-seconds per GiB read, the tool's
#   daemon (/proc/PID/stat, its reaped children included) plus the reading
#   commands (bash's times around each timed command: cat, dd, cksum, fio,
#   and curl for the network limit).
#
# Parameters (environment; defaults in parentheses):
#   PEERS_BIG_MIB (2048)         workload 1 and 4's file
#   PEERS_SMALL_FILES (5000), PEERS_SMALL_KIB (128)        workload 2
#   PEERS_PAR_READERS (4), PEERS_PAR_MIB (512)             workload 3
#   PEERS_FIO_SECS (20)                                    workload 4
#   PEERS_TREE_DIRS (20), PEERS_TREE_FILES (1000 per dir), PEERS_TREE_BYTES (100)
#   PEERS_DS_FILES (256), PEERS_DS_MIB (4), PEERS_CACHE_MIB (512),
#   PEERS_TIERFS_RAM_MIB (64), PEERS_EPOCHS (3), PEERS_RCLONE_POLL (1s) workload 6
#   PEERS_LATENCY_MS (20), PEERS_BANDWIDTH (90000000)      the emulator
#   PEERS_CURL_PAR (16)          parallel GETs of the network limit
#   PEERS_LOCAL (tmpfs)          tmpfs | disk: where the FUSE-free copy lives
#   PEERS_TOOLS ("tierfs s3fs rclone"), PEERS_WORKLOADS ("1 2 3 4 5 6")
#   PEERS_SEED (1)               data and permutation seeds
#   PEERS_STEP_TIMEOUT (1200)    seconds before one timed command is a FAIL
#   PEERS_S3FS_OPTS, PEERS_RCLONE_OPTS  extra options for every s3fs mount
#                                (appended to -o, e.g. "parallel_count=8") and
#                                rclone mount (e.g. "--use-server-modtime")
#   TIERFS_BENCH_MOUNT_OPTS      extra tierfs mount options, as in the others
# Defaults store ~6 GiB in radosgw and as much again in RAM (the tmpfs
# copy), plus the caches on disk under ${TMPDIR:-/var/tmp}.  A quick run (a couple of minutes):
#   PEERS_BIG_MIB=64 PEERS_SMALL_FILES=200 PEERS_PAR_MIB=32 PEERS_FIO_SECS=5 \
#   PEERS_TREE_DIRS=4 PEERS_TREE_FILES=250 PEERS_DS_FILES=32 PEERS_CACHE_MIB=64 \
#   PEERS_TIERFS_RAM_MIB=16 bash scripts/bench/peers.sh
# Output: OUTDIR/peers.md (the table, machine, command), OUTDIR/peers.png,
# OUTDIR/peers.dat (the chart's data), OUTDIR/logs/ (the daemons' logs).
# The .md also says how long each tool spent on each workload (mounts
# included), for sizing the parameters to a time budget.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMDLINE="bash scripts/bench/peers.sh${1:+ $1}"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-peers-bench}
BIG_MIB=${PEERS_BIG_MIB:-2048}
SMALL_FILES=${PEERS_SMALL_FILES:-5000}
SMALL_KIB=${PEERS_SMALL_KIB:-128}
PAR_READERS=${PEERS_PAR_READERS:-4}
PAR_MIB=${PEERS_PAR_MIB:-512}
FIO_SECS=${PEERS_FIO_SECS:-20}
TREE_DIRS=${PEERS_TREE_DIRS:-20}
TREE_FILES=${PEERS_TREE_FILES:-1000}
TREE_BYTES=${PEERS_TREE_BYTES:-100}
DS_FILES=${PEERS_DS_FILES:-256}
DS_MIB=${PEERS_DS_MIB:-4}
CACHE_MIB=${PEERS_CACHE_MIB:-512}
TIERFS_RAM_MIB=${PEERS_TIERFS_RAM_MIB:-64}
EPOCHS=${PEERS_EPOCHS:-3}
RCLONE_POLL=${PEERS_RCLONE_POLL:-1s}
LATENCY_MS=${PEERS_LATENCY_MS:-20}
BANDWIDTH=${PEERS_BANDWIDTH:-90000000}
CURL_PAR=${PEERS_CURL_PAR:-16}
LOCAL_FS=${PEERS_LOCAL:-tmpfs}
read -r -a TOOLS <<<"${PEERS_TOOLS:-tierfs s3fs rclone}"
WORKLOADS=" ${PEERS_WORKLOADS:-1 2 3 4 5 6} "
SEED=${PEERS_SEED:-1}
STEP_TIMEOUT=${PEERS_STEP_TIMEOUT:-1200}
S3FS_OPTS=${PEERS_S3FS_OPTS:-}
# shellcheck disable=SC2206
RCLONE_OPTS=(${PEERS_RCLONE_OPTS:-})
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})

die() { echo "peers: $*" >&2; exit 2; }
for v in BIG_MIB SMALL_FILES SMALL_KIB PAR_READERS PAR_MIB FIO_SECS TREE_DIRS TREE_FILES \
	TREE_BYTES DS_FILES DS_MIB CACHE_MIB TIERFS_RAM_MIB EPOCHS LATENCY_MS BANDWIDTH CURL_PAR \
	SEED STEP_TIMEOUT; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, not '${!v}'"
done
for v in BIG_MIB SMALL_FILES SMALL_KIB PAR_READERS PAR_MIB FIO_SECS TREE_DIRS TREE_FILES \
	DS_FILES DS_MIB EPOCHS CURL_PAR STEP_TIMEOUT; do
	[ "${!v}" -gt 0 ] || die "$v must be at least 1"
done
[ "$TIERFS_RAM_MIB" -lt "$CACHE_MIB" ] || die "PEERS_TIERFS_RAM_MIB must be below PEERS_CACHE_MIB"
case $LOCAL_FS in disk | tmpfs) ;; *) die "PEERS_LOCAL must be disk or tmpfs" ;; esac
for t in "${TOOLS[@]}"; do
	case $t in tierfs | s3fs | rclone) ;; *) die "unknown tool '$t' in PEERS_TOOLS" ;; esac
done
on() { [[ $WORKLOADS == *" $1 "* ]]; }

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-peers.XXXXXX")
MNT=$WORK/mnt
LOCAL=$WORK/local
CAPFS=$WORK/s3fs-capfs   # s3fs's capped cache: a file system of its own
LOGS=$OUT/logs
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT" "$LOCAL" "$OUT"
rm -rf "$LOGS"
mkdir -p "$LOGS"
pid=          # the mounted tool's daemon
tool=         # and its name
cache=        # and its cache directory
sampler=      # the loop sampling its size
proxy_pid=

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"    # before the trap: cleanup uses it
cleanup() {
	set +e
	if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; fi
	unmount_tool
	if grep -qF " $CAPFS " /proc/mounts; then umount "$CAPFS" || umount -l "$CAPFS" || true; fi
	if grep -qF " $LOCAL " /proc/mounts; then umount "$LOCAL" || true; fi
	if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null; fi
	bench_stop_rgw
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T_START=$(now)
declare -A PART   # seconds spent, per part
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
log() { printf '[peers %6.1fs] %s\n' "$(awk -v a="$T_START" -v b="$(now)" 'BEGIN { print b - a }')" "$*" >&2; }

log "setup, build, radosgw"
bench_start "$WORK/rgw.log"
for p in s3fs rclone fio gnuplot fusermount3 curl mkfs.ext4; do
	command -v "$p" >/dev/null || die "$p is needed (scripts/setup.sh installs it)"
done

bench_proxy_start "$LOGS/faultproxy.log" || exit 2
bench_peer_config   # curl's and s3fs's credentials, rclone's environment

# ---- the data, straight to radosgw (not through the emulator) ----
digits() { local n=$(($1 > 1 ? $1 - 1 : 0)); echo "${#n}"; }
S3=("${S3UTIL[@]}")
log "uploading the data set"
"${S3[@]}" mb bench >/dev/null
if on 1 || on 4; then "${S3[@]}" put-bytes bench big $((BIG_MIB * 1048576)) "$SEED" >/dev/null; fi
on 2 && "${S3[@]}" put-many bench small/f "$SMALL_FILES" "$((SMALL_KIB * 1024))" $((SEED + 1000)) 16
on 3 && "${S3[@]}" put-many bench par/p "$PAR_READERS" "$((PAR_MIB * 1048576))" $((SEED + 2000)) 2
if on 5; then
	for d in $(seq 0 $((TREE_DIRS - 1))); do
		dir=$(printf "d%0$(digits "$TREE_DIRS")d" "$d")
		"${S3[@]}" put-many bench "tree/$dir/f" "$TREE_FILES" "$TREE_BYTES" $((SEED + 3000 + d * TREE_FILES)) 16
	done
fi
on 6 && "${S3[@]}" put-many bench ds/f "$DS_FILES" "$((DS_MIB * 1048576))" $((SEED + 100000)) 4
log "local copy ($LOCAL_FS)"
if [ "$LOCAL_FS" = tmpfs ]; then
	total_mib=$((BIG_MIB + SMALL_FILES * SMALL_KIB / 1024 + PAR_READERS * PAR_MIB
		+ DS_FILES * DS_MIB + TREE_DIRS * TREE_FILES * 4 / 1024 + 64))
	mount -t tmpfs -o "size=${total_mib}m" tmpfs "$LOCAL"
fi
"${S3[@]}" get-many bench "" "$LOCAL" 8
# The permutations of workload 6.  Here and below ls is meant: the
# workloads read in ls order, and every name is [a-z0-9/].
# shellcheck disable=SC2012
for e in $(seq "$EPOCHS"); do
	[ -d "$LOCAL/ds" ] || break
	ls "$LOCAL/ds" | awk -v seed=$((SEED * 1000 + e)) '{ a[n++] = $0 }
		END { srand(seed); for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = a[i]; a[i] = a[j]; a[j] = t }
		      for (i = 0; i < n; i++) print a[i] }' >"$WORK/perm.$e"
done

# ---- the client commands: DIR is the mount or the local copy ----
# Each prints what is compared across tools; run under bash -o pipefail.
rd_big() { dd if="$1/big" bs=1M status=none | cksum; }
# shellcheck disable=SC2011
rd_small() { cd "$1/small" && ls | xargs -r -d '\n' cat | cksum; }
rd_par() {
	local dir=$1 n=$2 i pids=()
	for ((i = 0; i < n; i++)); do
		dd if="$dir/par/$(printf "p%0${3}d" "$i")" bs=1M status=none | cksum >"$4.$i" &
		pids+=($!)
	done
	wait_all "${pids[@]}" && for ((i = 0; i < n; i++)); do cat "$4.$i"; done
}
rd_fio() {   # DIR MIB SECS BS
	fio --name=peers --filename="$1/big" --readonly --rw=randread --bs="$4" --size="${2}M" \
		--ioengine=psync --time_based --runtime="$3" --output-format=json |
		python3 -c 'import json, sys
s = sys.stdin.read(); j = json.loads(s[s.index("{"):])["jobs"][0]
sys.exit(1) if j["error"] or j["read"]["io_bytes"] == 0 else print(j["read"]["bw_bytes"])'
}
rd_sample() {   # 8 1-MiB blocks spread over the big file
	local k
	for k in 0 1 2 3 4 5 6 7; do
		dd if="$1/big" bs=1M skip=$(((k * 2654435761 + 17) % $2)) count=1 status=none
	done | cksum
}
rd_find() { find "$1/tree" | cut -c $((${#1} + 1))- | sort | cksum; }
# shellcheck disable=SC2012
rd_lsR() {
	ls -lR "$1/tree" | awk -v p="$1" '/:$/ { print substr($0, length(p) + 1); next }
		/^-/ { print $5, $NF; next } /^d/ { print "d", $NF }' | cksum
}
rd_perm() { cd "$1/ds" && xargs -r -d '\n' cat <"$2" | cksum; }
net_big() {   # URL BYTES PAR: ranged GETs at once; prints the bytes received
	local url=$1 bytes=$2 par=$3 i a b part pids=() tot=0
	part=$(((bytes + par - 1) / par))
	for ((i = 0; i < par; i++)); do
		a=$((i * part)); b=$((a + part - 1)); [ "$b" -lt "$bytes" ] || b=$((bytes - 1))
		[ "$a" -lt "$bytes" ] || break
		curl -K "$4" -r "$a-$b" -o /dev/null -w '%{size_download}\n' "$url" >"$5.$i" &
		pids+=($!)
	done
	wait_all "${pids[@]}" || return 1
	for ((i = 0; i < ${#pids[@]}; i++)); do tot=$((tot + $(cat "$5.$i"))); done
	echo "$tot"
}
net_small() {   # CURLCFG LISTCFG PAR: one curl, PAR transfers at once
	curl -K "$1" -K "$2" --parallel --parallel-max "$3" --no-progress-meter \
		-w '%{http_code} %{size_download}\n' | sort | uniq -c
}
export -f wait_all rd_big rd_small rd_par rd_fio rd_sample rd_find rd_lsR rd_perm net_big net_small

# ---- rows, results ----
declare -A LABEL SHORT UNIT BYTES SECS VAL SUM CHECK NOTE
ROWS=()
# row ID UNIT BYTES LABEL SHORT: UNIT mibs (MiB/s of BYTES), secs or fio.
row() { ROWS+=("$1"); UNIT[$1]=$2; BYTES[$1]=$3; LABEL[$1]=$4; SHORT[$1]=$5; }
entries=$((TREE_DIRS * TREE_FILES + TREE_DIRS))
if on 1; then
	row big_cold mibs $((BIG_MIB * 1048576)) "1. ${BIG_MIB} MiB file, dd bs=1M, cold" "1 big file, cold"
	row big_warm mibs $((BIG_MIB * 1048576)) "1. same file again, warm (same mount)" "1 big file, warm"
fi
if on 2; then
	row small_1 secs $((SMALL_FILES * SMALL_KIB * 1024)) "2. ${SMALL_FILES} x ${SMALL_KIB} KiB files, ls order, epoch 1 (cold)" \
		"2 small files, epoch 1"
	row small_2 secs $((SMALL_FILES * SMALL_KIB * 1024)) "2. same files, epoch 2 (same mount)" "2 small files, epoch 2"
fi
on 3 && row par mibs $((PAR_READERS * PAR_MIB * 1048576)) "3. ${PAR_READERS} readers x ${PAR_MIB} MiB files at once, cold" \
	"3 ${PAR_READERS} readers"
if on 4; then
	row fio fio 0 "4. fio randread bs=1M psync ${FIO_SECS} s on the ${BIG_MIB} MiB file, cold" \
		"4 fio randread"
	row fio_c1m fio 0 "4. the same, bs=1M, the file cached (read whole first, same mount)" \
		"4 fio cached 1M"
	row fio_c128k fio 0 "4. the same, bs=128k, the file cached" "4 fio cached 128k"
fi
if on 5; then
	row find secs 0 "5. find, ${entries}-entry tree (${TREE_DIRS} dirs), cold" "5 find"
	row lsR secs 0 "5. ls -lR, same tree, cold" "5 ls -lR"
fi
if on 6; then
	for e in $(seq "$EPOCHS"); do
		row "ep_$e" secs $((DS_FILES * DS_MIB * 1048576)) \
			"6. ${DS_FILES} x ${DS_MIB} MiB, cache ${CACHE_MIB} MiB, shuffled epoch $e" "6 shuffled, epoch $e"
	done
fi

# timed ROW COL FN ARGS...: drop the page cache, run FN ARGS (step timeout,
# pipefail); SECS[ROW,COL] = wall seconds or FAIL, SUM[ROW,COL] = its stdout.
timed() {
	local r=$1 c=$2 t0 out rc=0 d0
	shift 2
	drop_caches
	times >"$WORK/times.0"   # in this shell, not a subshell: its children's CPU
	d0=$(cpu_daemon)
	t0=$(now)
	out=$(timeout -k 10 "$STEP_TIMEOUT" bash -o pipefail -c '"$@"' _ "$@" 2>"$WORK/step.err") || rc=$?
	SECS[$r,$c]=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')
	times >"$WORK/times.1"
	CPU_CLIENT[$r,$c]=$(awk -v a="$(times_secs "$WORK/times.0")" -v b="$(times_secs "$WORK/times.1")" \
		'BEGIN { printf "%.3f", b - a }')
	CPU_DAEMON[$r,$c]=$(awk -v a="$d0" -v b="$(cpu_daemon)" 'BEGIN { printf "%.3f", b - a }')
	sed "s/^/$c $r: /" "$WORK/step.err" >>"$LOGS/client.log"
	SUM[$r,$c]=$out
	CHECK[$r,$c]=$out
	if [ "$rc" != 0 ]; then
		SECS[$r,$c]=FAIL
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then fail_note "$r" "$c" "timed out after ${STEP_TIMEOUT} s"
		else fail_note "$r" "$c" "exit status $rc: $(tail -n 1 "$WORK/step.err")"; fi
	fi
}
# cpu_daemon: CPU seconds (user + system, with its reaped children) of
# the mounted tool's daemon so far; 0 with none (the limits' columns).
cpu_daemon() {
	if [ -n "${pid:-}" ]; then cpu_of "$pid"; else echo 0; fi
}
declare -A CPU_CLIENT CPU_DAEMON
fail_note() { NOTE[$1,$2]="${NOTE[$1,$2]:+${NOTE[$1,$2]}; }$3"; log "$2: $1: FAIL: $3"; }
# settle ROW COL: VAL from SECS; a tool's CHECK must equal the local copy's,
# whose byte count (cksum's second field) must be the row's.
settle() {
	local r=$1 c=$2 n
	if [ "${SECS[$r,$c]}" = FAIL ]; then VAL[$r,$c]=FAIL; return; fi
	if [ "$c" = local ] && [ "${BYTES[$r]}" -gt 0 ]; then
		n=$(awk '{ n += $2 } END { printf "%.0f\n", n }' <<<"${CHECK[$r,$c]}")
		[ "$n" = "${BYTES[$r]}" ] || die "$r on the local copy read $n bytes, not ${BYTES[$r]}"
	fi
	if [ "$c" != local ] && [ "$c" != net ] && [ "${CHECK[$r,$c]}" != "${CHECK[$r,local]:-}" ]; then
		fail_note "$r" "$c" "what was read differs from the local copy (got '$(head -c 60 <<<"${CHECK[$r,$c]}" | tr '\n' ' ')', want '$(tr '\n' ' ' <<<"${CHECK[$r,local]:-}")')"
		VAL[$r,$c]=FAIL
		return
	fi
	case ${UNIT[$r]} in
	mibs) VAL[$r,$c]=$(awk -v b="${BYTES[$r]}" -v s="${SECS[$r,$c]}" 'BEGIN { printf "%.1f", b / 1048576 / s }') ;;
	secs) VAL[$r,$c]=$(awk -v s="${SECS[$r,$c]}" 'BEGIN { printf "%.2f", s }') ;;
	fio) VAL[$r,$c]=$(awk -v b="${SUM[$r,$c]}" 'BEGIN { printf "%.1f", b / 1048576 }') ;;
	esac
	log "$c: $r: ${VAL[$r,$c]} $([ "${UNIT[$r]}" = secs ] && echo s || echo MiB/s)"
}
# run ROW COL DIR: the row's command(s) on DIR, then settle.
run() {
	local r=$1 c=$2 d=$3
	case $r in
	big_*) timed "$r" "$c" rd_big "$d" ;;
	small_*) timed "$r" "$c" rd_small "$d" ;;
	par) timed "$r" "$c" rd_par "$d" "$PAR_READERS" "$(digits "$PAR_READERS")" "$WORK/par" ;;
	fio*)
		local s bs=1M
		[ "$r" = fio_c128k ] && bs=128k
		if [ "$r" = fio_c1m ]; then
			# untimed: the whole file into the tool's cache, and time
			# for its writer to settle
			timeout "$STEP_TIMEOUT" bash -o pipefail -c '"$@"' _ rd_big "$d" >/dev/null 2>>"$LOGS/client.log" ||
				fail_note "$r" "$c" "reading the file whole first failed: not timed as cached"
			sleep 2
		fi
		timed "$r" "$c" rd_fio "$d" "$BIG_MIB" "$FIO_SECS" "$bs"
		if [ "${SECS[$r,$c]}" != FAIL ]; then
			# fio prints no data: check sampled blocks instead, untimed
			s=$(timeout 600 bash -o pipefail -c '"$@"' _ rd_sample "$d" "$BIG_MIB" 2>>"$LOGS/client.log") || s=
			CHECK[$r,$c]=${s:-sampled blocks unreadable}
		fi
		;;
	find) timed "$r" "$c" rd_find "$d" ;;
	lsR) timed "$r" "$c" rd_lsR "$d" ;;
	ep_*) timed "$r" "$c" rd_perm "$d" "$WORK/perm.${r#ep_}" ;;
	esac
	settle "$r" "$c"
}

# ---- limits ----
PART[data]=$(since "$T_START")
T_LIMITS=$(now)
log "FUSE-free limit: the same commands on the local copy"
for r in "${ROWS[@]}"; do run "$r" local "$LOCAL"; done
for r in "${ROWS[@]}"; do
	[ "${VAL[$r,local]}" != FAIL ] || die "the command of $r fails on the local copy: ${NOTE[$r,local]}"
done
if on 1; then
	log "network limit: ${CURL_PAR} ranged GETs of the big file"
	timed big_cold net net_big "$PROXY/bench/big" $((BIG_MIB * 1048576)) "$CURL_PAR" "$WORK/curl.cfg" "$WORK/net"
	[ "${SUM[big_cold,net]}" = $((BIG_MIB * 1048576)) ] || { fail_note big_cold net "got ${SUM[big_cold,net]} bytes"; SECS[big_cold,net]=FAIL; }
	settle big_cold net
fi
if on 2; then
	log "network limit: curl --parallel-max ${CURL_PAR} of the small files"
	# shellcheck disable=SC2012
	ls "$LOCAL/small" | awk -v u="$PROXY/bench/small/" '{ printf "url = \"%s%s\"\noutput = \"/dev/null\"\n", u, $0 }' >"$WORK/small.curl"
	timed small_1 net net_small "$WORK/curl.cfg" "$WORK/small.curl" "$CURL_PAR"
	want=$(printf '%7d 200 %d' "$SMALL_FILES" $((SMALL_KIB * 1024)))
	[ "${SUM[small_1,net]}" = "$want" ] || { fail_note small_1 net "got '${SUM[small_1,net]}'"; SECS[small_1,net]=FAIL; }
	settle small_1 net
fi

# ---- the tools ----
S3FS_CAP=   # how s3fs's cache was capped in workload 6
# cache_dir TOOL MODE: the emptied cache directory of TOOL (MODE plain or capped).
cache_dir() {
	local d=$WORK/cache/$1
	if [ "$1" = s3fs ] && [ "$2" = capped ] && grep -qF " $CAPFS " /proc/mounts; then
		find "$CAPFS" -mindepth 1 -delete
		echo "$CAPFS"
		return
	fi
	rm -rf "$d"
	mkdir -p "$d"
	echo "$d"
}
# s3fs_capfs: make s3fs's capped cache file system; sets S3FS_DISKFREE (MiB).
s3fs_capfs() {
	S3FS_DISKFREE=
	mkdir -p "$CAPFS"
	truncate -s $(((CACHE_MIB + 192) * 1048576)) "$WORK/s3fs-capfs.img"
	if mkfs.ext4 -q -m 0 -F "$WORK/s3fs-capfs.img" >>"$LOGS/s3fs.log" 2>&1 &&
		mount -o loop "$WORK/s3fs-capfs.img" "$CAPFS" >>"$LOGS/s3fs.log" 2>&1; then
		find "$CAPFS" -mindepth 1 -delete
		S3FS_DISKFREE=$(($(df -B1M --output=avail "$CAPFS" | tail -n 1) - CACHE_MIB))
		S3FS_CAP="cache dir on its own $((CACHE_MIB + 192)) MiB ext4 (loop), ensure_diskfree=${S3FS_DISKFREE}"
	else
		S3FS_CAP="no cap (loop mount failed)"
	fi
}
# mount_tool TOOL MODE: mount TOOL on MNT through the emulator, empty cache.
mount_tool() {
	tool=$1
	cache=$(cache_dir "$1" "$2")
	case $1 in
	tierfs)
		local tier=()
		[ "$2" = capped ] && tier=(--ram-size "${TIERFS_RAM_MIB}M" --ssd-size "$((CACHE_MIB - TIERFS_RAM_MIB))M")
		build/tierfs mount s3://bench "$MNT" -f --endpoint "$PROXY" --path-style \
			--cache-dir "$cache" "${tier[@]}" "${EXTRA[@]}" >>"$LOGS/tierfs.log" 2>&1 &
		;;
	s3fs)
		local o="url=$PROXY,use_path_request_style,use_cache=$cache,passwd_file=$WORK/s3fs.passwd,ro,endpoint=$AWS_DEFAULT_REGION"
		[ "$2" = capped ] && [ -n "$S3FS_DISKFREE" ] && o+=",ensure_diskfree=$S3FS_DISKFREE"
		o+=${S3FS_OPTS:+,$S3FS_OPTS}
		s3fs bench "$MNT" -f -o "$o" >>"$LOGS/s3fs.log" 2>&1 &
		;;
	rclone)
		local cap=()
		[ "$2" = capped ] && cap=(--vfs-cache-max-size "${CACHE_MIB}M" --vfs-cache-poll-interval "$RCLONE_POLL")
		"${RCLONE_ENV[@]}" rclone mount peers:bench "$MNT" --vfs-cache-mode full --cache-dir "$cache" \
			--read-only "${cap[@]}" "${RCLONE_OPTS[@]}" >>"$LOGS/rclone.log" 2>&1 &
		;;
	esac
	pid=$!
	bench_mounted && return 0
	log "$1: mount failed (see $LOGS/$1.log)"
	unmount_tool
	return 1
}
# session TOOL MODE ROWS...: one fresh mount, the rows in order.
session() {
	local t=$1 mode=$2 r
	shift 2
	if mount_tool "$t" "$mode"; then
		if [ "$mode" = capped ]; then   # the cache's size, every 0.5 s
			while sleep 0.5; do du -sm "$cache" 2>/dev/null | cut -f 1; done >"$WORK/du.$t" &
			sampler=$!
		fi
		for r in "$@"; do run "$r" "$t" "$MNT"; done
		if [ -n "$sampler" ]; then
			kill "$sampler" 2>/dev/null || true
			wait "$sampler" 2>/dev/null || true
			sampler=
			CACHE_USED[$t]=$(sort -n "$WORK/du.$t" | tail -n 1)
		fi
		unmount_tool
	else
		for r in "$@"; do SECS[$r,$t]=FAIL; fail_note "$r" "$t" "mount failed"; settle "$r" "$t"; done
	fi
}
declare -A CACHE_USED
PART[limits]=$(since "$T_LIMITS")
for t in "${TOOLS[@]}"; do
	log "$t"
	t0=$(now)
	for w in 1 2 3 4 5 6; do
		on "$w" || continue
		tw=$(now)
		case $w in
		1) session "$t" plain big_cold big_warm ;;
		2) session "$t" plain small_1 small_2 ;;
		3) session "$t" plain par ;;
		4) session "$t" plain fio fio_c1m fio_c128k ;;
		5) session "$t" plain find; session "$t" plain lsR ;;
		6)
			[ "$t" = s3fs ] && [ -z "$S3FS_CAP" ] && s3fs_capfs
			eps=()
			for e in $(seq "$EPOCHS"); do eps+=("ep_$e"); done
			session "$t" capped "${eps[@]}"
			;;
		esac
		PART[$w,$t]=$(since "$tw")
	done
	PART[$t]=$(since "$t0")
done

# ---- the table ----
has() { printf '%s\n' "${TOOLS[@]}" | grep -qx "$1"; }
# cell ROW COL: "primary (secondary)".
cell() {
	local r=$1 c=$2 v=${VAL[$1,$2]:-}
	if [ -z "$v" ]; then echo "-"; return; fi
	if [ "$v" = FAIL ]; then echo "FAIL"; return; fi
	case ${UNIT[$r]} in
	mibs) printf '%s (%.1f s)' "$v" "${SECS[$r,$c]}" ;;
	secs) if [ "${BYTES[$r]}" -gt 0 ]; then printf '%s (%s MiB/s)' "$v" "$(mibs "${BYTES[$r]}" "$v")"; else echo "$v"; fi ;;
	fio) echo "$v" ;;
	esac
}
# cpu_cell ROW COL: "total (daemon + client)" CPU-seconds per GiB, or -.
cpu_cell() {
	local r=$1 c=$2 v=${VAL[$1,$2]:-}
	if [ -z "$v" ] || [ "$v" = FAIL ] || [ -z "${CPU_CLIENT[$r,$c]:-}" ]; then echo "-"; return; fi
	awk -v d="${CPU_DAEMON[$r,$c]}" -v k="${CPU_CLIENT[$r,$c]}" -v b="${BYTES[$r]}" \
		'BEGIN { g = b / 1073741824; printf "%.2f (%.2f + %.2f)", (d + k) / g, d / g, k / g }'
}
# speed ROW COL: bigger is better (MiB/s, or 1/s), empty when FAIL/absent.
speed() {
	local v=${VAL[$1,$2]:-}
	[ -n "$v" ] && [ "$v" != FAIL ] || return 0
	if [ "${UNIT[$1]}" = secs ]; then awk -v v="$v" 'BEGIN { print 1 / v }'; else echo "$v"; fi
}
ratio() {
	local a b
	a=$(speed "$1" tierfs); b=$(speed "$1" "$2")
	if [ -n "$a" ] && [ -n "$b" ]; then awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", a / b }'; else echo "-"; fi
}
mem_gib=$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
machine="$(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), ${mem_gib} GiB RAM, Linux $(uname -r)"
envs=$(env | grep '^PEERS_\|^TIERFS_BENCH_MOUNT_OPTS=' | sort | sed "s/=\(.*\)/='\1'/" | tr '\n' ' ' || true)
total_s=$(awk -v a="$T_START" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
{
	echo "# tierfs vs s3fs vs rclone mount"
	echo
	echo "Emulated network: ${LATENCY_MS} ms to first byte per request, $((BANDWIDTH / 1000000)) MB/s per connection" \
		"(tierfs-faultproxy in front of a local radosgw). Page cache dropped before every timed command."
	echo
	echo "| workload | unit | tierfs | s3fs | rclone | tierfs/s3fs | tierfs/rclone | network limit | FUSE-free limit |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
	for r in "${ROWS[@]}"; do
		case ${UNIT[$r]} in
		mibs) u="MiB/s (s)" ;;
		secs) u="s"; [ "${BYTES[$r]}" -gt 0 ] && u="s (MiB/s)" ;;
		fio) u="MiB/s" ;;
		esac
		cols=()
		for t in tierfs s3fs rclone; do if has "$t"; then cols+=("$(cell "$r" "$t")"); else cols+=("-"); fi; done
		echo "| ${LABEL[$r]} | $u | ${cols[0]} | ${cols[1]} | ${cols[2]} | $(ratio "$r" s3fs) | $(ratio "$r" rclone)" \
			"| $(cell "$r" net) | $(cell "$r" local) |"
	done
	echo
	echo "Ratios > 1 mean tierfs is faster (MiB/s rows: tierfs / peer; seconds rows: peer / tierfs)."
	echo
	echo "CPU-seconds per GiB read, the tool's daemon + the reading commands (cat, dd, cksum, fio;"
	echo "for the network limit, curl), measured around each timed command:"
	echo
	echo "| workload | tierfs | s3fs | rclone | network limit | FUSE-free limit |"
	echo "|---|---:|---:|---:|---:|---:|"
	for r in "${ROWS[@]}"; do
		[ "${BYTES[$r]}" -gt 0 ] || continue
		cols=()
		for c in tierfs s3fs rclone net local; do cols+=("$(cpu_cell "$r" "$c")"); done
		echo "| ${LABEL[$r]} | ${cols[0]} | ${cols[1]} | ${cols[2]} | ${cols[3]} | ${cols[4]} |"
	done
	echo
	echo "Network limit: the same bytes by ${CURL_PAR} parallel curl GETs through the same emulator."
	echo "FUSE-free limit: the same commands on a local copy ($LOCAL_FS)."
	echo "Every cell is checked: cksum of the bytes read (in read order), find's sorted names, ls -lR's names"
	echo "and sizes, fio's 8 sampled blocks must equal the local copy's; FAIL = error, timeout or difference."
	echo
	echo "Tools: tierfs $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src 2>/dev/null || echo '+changes')" \
		"--cache-dir (defaults otherwise${EXTRA[*]:+, plus ${EXTRA[*]}}); $(s3fs --version 2>&1 | head -n 1 | sed 's/ (commit.*//')" \
		"-o use_cache${S3FS_OPTS:+,$S3FS_OPTS}; $(rclone version 2>/dev/null | head -n 1) --vfs-cache-mode full${RCLONE_OPTS[*]:+ ${RCLONE_OPTS[*]}}."
	if on 6; then
		echo "Workload 6 caches (${CACHE_MIB} MiB): tierfs --ram-size ${TIERFS_RAM_MIB}M --ssd-size $((CACHE_MIB - TIERFS_RAM_MIB))M;" \
			"rclone --vfs-cache-max-size ${CACHE_MIB}M --vfs-cache-poll-interval ${RCLONE_POLL}; s3fs: ${S3FS_CAP:-not run}."
		echo "Peak cache directory size in workload 6 (du -sm every 0.5 s):" \
			"$(for t in "${TOOLS[@]}"; do printf '%s %s MiB, ' "$t" "${CACHE_USED[$t]:-?}"; done | sed 's/, $//')" \
			"(tierfs: the SSD tier; its RAM tier is not on disk)."
	fi
	notes=0
	for r in "${ROWS[@]}"; do
		for c in tierfs s3fs rclone net local; do
			if [ -n "${NOTE[$r,$c]:-}" ]; then
				[ "$notes" = 0 ] && { echo; echo "Failures:"; notes=1; }
				echo "- $c, $r: ${NOTE[$r,$c]}"
			fi
		done
	done
	echo
	echo "Machine: $machine."
	echo "Command: ${envs}${CMDLINE}"
	echo "Run time: ${total_s} s in all: setup and data ${PART[data]} s, limits ${PART[limits]} s," \
		"$(for t in "${TOOLS[@]}"; do printf '%s %s s, ' "$t" "${PART[$t]}"; done | sed 's/, $//')."
	echo
	echo "| seconds spent (mounts included) | $(printf '%s | ' "${TOOLS[@]}")"
	echo "|---|$(printf -- '---:|%.0s' "${TOOLS[@]}")"
	for w in 1 2 3 4 5 6; do
		on "$w" || continue
		echo "| workload $w | $(for t in "${TOOLS[@]}"; do printf '%s | ' "${PART[$w,$t]}"; done)"
	done
} >"$OUT/peers.md"

# ---- the chart: each tool's speed relative to the best of the three ----
chart=$OUT/peers.png
{
	printf '# workload\ttierfs\ts3fs\trclone\n'
	for r in "${ROWS[@]}"; do
		best=0
		for t in tierfs s3fs rclone; do
			s=$(speed "$r" "$t"); [ -n "$s" ] && best=$(awk -v a="$best" -v b="$s" 'BEGIN { print (b > a ? b : a) }')
		done
		printf '%s' "${SHORT[$r]}"
		for t in tierfs s3fs rclone; do
			s=$(speed "$r" "$t")
			awk -v s="${s:-0}" -v b="$best" 'BEGIN { printf "\t%.3f", (b > 0 ? s / b : 0) }'
		done
		echo
	done
} >"$OUT/peers.dat"
gnuplot >"$LOGS/gnuplot.log" 2>&1 <<EOF || { chart="(gnuplot failed: $LOGS/gnuplot.log)"; rm -f "$OUT/peers.png"; }
set terminal pngcairo size 1400,700 noenhanced font ",10"
set output "$OUT/peers.png"
set title "tierfs vs s3fs vs rclone mount: speed relative to the best of the three (FAIL = 0)\n${LATENCY_MS} ms first byte, $((BANDWIDTH / 1000000)) MB/s per connection; $machine"
set datafile separator "\t"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:1.15]
set ylabel "relative speed (1 = best)"
set xtics rotate by 25 right scale 0
set bmargin 8
set lmargin 12
set key top right
set grid ytics
plot "$OUT/peers.dat" using 2:xtic(1) title "tierfs", "" using 3 title "s3fs", "" using 4 title "rclone"
EOF

cat "$OUT/peers.md"
echo
echo "table: $OUT/peers.md"
echo "chart: $chart"
