#!/usr/bin/env bash
# loader.sh - the loader benchmark: a shuffled image-folder dataset read by a
# PyTorch DataLoader (2 workers) through the S3-like network emulator
# (tierfs-faultproxy: first byte after LATENCY ms, each connection capped at
# BANDWIDTH bytes/s, in front of a local radosgw), by each tool in turn on
# the same data with the same orders, 3 epochs each, the kernel page cache
# dropped before every epoch:
#
#   local        the files on local disk (a copy straight from radosgw)
#   tierfs       tierfs, --cache-dir (the dataset fits), no plan
#   tierfs+plan  the same, the sampler wrapped in contrib/python's
#                PlanSampler (each epoch's order handed over first)
#   fusefloor    libfuse's own passthrough_hp example over the local copy,
#                with kernel passthrough: what any FUSE daemon pays per
#                file here, the floor under tierfs's cached epochs
#                (scripts/build-libfuse.sh --example builds it)
#   s3fs         -o use_cache (as scripts/bench/peers.sh mounts it)
#   rclone       --vfs-cache-mode full (as peers.sh)
#   network      the dataset's bytes by curl --parallel --parallel-max 16
#                through the emulator: the network limit, one number
#
# Each tool starts on a fresh mount with an empty cache.  Reported: seconds
# per epoch, and object-store requests per sample (every request the tool
# sent through the emulator during the epoch, over the samples).  A wrong
# byte, a missing or doubled sample, an error or a timeout makes the cell
# FAIL, never a number (scripts/bench/loader_epoch.py checks every sample's
# crc32 against the local copy's).
#
# Then "twice the cache": tierfs with a plan and a cache (RAM + SSD) of half
# the dataset's bytes, 3 epochs; object-store bytes per epoch against what
# Belady's rule needs: the chunk access trace of the run (tierfs trace)
# replayed by tierfs-sim, whose OPT column is Belady's hit ratio for a cache
# of K files (K = cache bytes / mean file size: files are one chunk each,
# and the sim counts items, not bytes, so this is an approximation that
# gives Belady the whole RAM + SSD, though the tiers are not exclusive);
# Belady's bytes per epoch = (1 - OPT) x dataset bytes.
#
#   bash scripts/bench/loader.sh [OUTDIR (${TMPDIR:-/tmp}/tierfs-loader-bench)]
#
# Parameters (environment; defaults in parentheses):
#   LOADER_FILES (3000), LOADER_CLASSES (10)   dataset: class k's files are
#       40 KB + k x 160 KB / (CLASSES - 1): 40 to 200 KB
#   LOADER_EPOCHS (3), LOADER_WORKERS (2), LOADER_BATCH (32), LOADER_SEED (1)
#   LOADER_RUNS (3)   runs of the local, tierfs, tierfs+plan and fusefloor rows and of
#       the network limit, interleaved (run 1 of each, then run 2, ...);
#       each cell is the median, with the range over the runs; s3fs, rclone
#       and half run once (minutes each, and far from the targets either way)
#   LOADER_LATENCY_MS (20), LOADER_BANDWIDTH (90000000)   the emulator
#   LOADER_TOOLS ("local tierfs tierfs+plan fusefloor s3fs rclone half")  rows to run
#       (half: the twice-the-cache run; its SSD tier must hold a chunk,
#       8 MiB past an 8 MiB RAM tier: some 300 files of the default sizes)
#   LOADER_STEP_TIMEOUT (900)   seconds before one epoch is a FAIL
#   TIERFS_BENCH_MOUNT_OPTS     extra tierfs mount options
# Targets: epoch 1 without a plan >= 5x faster than s3fs; epoch 1 with a
# plan <= 1.3x the network limit; epochs 2 on <= 1.5x local disk, with or
# without a plan; twice the cache, with a plan: object-store bytes <= 1.05x
# Belady's from epoch 2.
# Output: OUTDIR/loader.md (tables, ratios against those targets,
# machine, command) and OUTDIR/logs/.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMDLINE="bash scripts/bench/loader.sh${1:+ $1}"
OUT=${1:-${TMPDIR:-/tmp}/tierfs-loader-bench}
FILES=${LOADER_FILES:-3000}
CLASSES=${LOADER_CLASSES:-10}
EPOCHS=${LOADER_EPOCHS:-3}
RUNS=${LOADER_RUNS:-3}
WORKERS=${LOADER_WORKERS:-2}
BATCH=${LOADER_BATCH:-32}
SEED=${LOADER_SEED:-1}
LATENCY_MS=${LOADER_LATENCY_MS:-20}
BANDWIDTH=${LOADER_BANDWIDTH:-90000000}
STEP_TIMEOUT=${LOADER_STEP_TIMEOUT:-900}
CURL_PAR=16
read -r -a TOOLS <<<"${LOADER_TOOLS:-local tierfs tierfs+plan fusefloor s3fs rclone half}"
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})
PY=/usr/bin/python3
export TIERFS_BIN=$ROOT/build/tierfs   # the tierfs PlanSampler runs

die() { echo "loader: $*" >&2; exit 2; }
for v in FILES CLASSES EPOCHS RUNS WORKERS BATCH SEED LATENCY_MS BANDWIDTH STEP_TIMEOUT; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v must be a whole number >= 1"
done
[ "$CLASSES" -ge 2 ] || die "LOADER_CLASSES must be at least 2"
for t in "${TOOLS[@]}"; do
	case $t in local | tierfs | tierfs+plan | fusefloor | s3fs | rclone | half) ;; *) die "unknown row '$t'" ;; esac
done
has() { [[ " ${TOOLS[*]} " == *" $1 "* ]]; }

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-loader.XXXXXX")
MNT=$WORK/mnt
LOCAL=$WORK/local       # on disk: the target compares with local disk
LOGS=$OUT/logs
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT" "$LOCAL" "$OUT"
rm -rf "$LOGS"
mkdir -p "$LOGS"
pid=
tool=
proxy_pid=

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"    # before the trap: cleanup uses it
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

T_START=$(now)
log() { printf '[loader %6.1fs] %s\n' "$(awk -v a="$T_START" -v b="$(now)" 'BEGIN { print b - a }')" "$*" >&2; }

log "setup, build, radosgw"
bench_start "$WORK/rgw.log"
for p in s3fs rclone fusermount3 curl; do
	command -v "$p" >/dev/null || die "$p is needed (scripts/setup.sh installs it)"
done
$PY -c 'import torch' 2>/dev/null || die "$PY cannot import torch (scripts/setup.sh installs python3-torch)"
FLOOR_BIN=$ROOT/deps/fuse3/bin/passthrough_hp
if has fusefloor; then
	bash scripts/build-libfuse.sh --example >"$LOGS/build-libfuse.log" 2>&1 ||
		die "scripts/build-libfuse.sh --example failed (see $LOGS/build-libfuse.log)"
fi

bench_proxy_start "$LOGS/faultproxy.log" || exit 2
bench_peer_config

# ---- the dataset, straight to radosgw ----
log "uploading $FILES files in $CLASSES classes"
"${S3UTIL[@]}" mb bench >/dev/null
per=$((FILES / CLASSES))
for k in $(seq 0 $((CLASSES - 1))); do
	n=$per
	[ "$k" = $((CLASSES - 1)) ] && n=$((FILES - per * (CLASSES - 1)))
	size=$((40000 + k * 160000 / (CLASSES - 1)))
	"${S3UTIL[@]}" put-many bench "train/c$(printf %02d "$k")/img" "$n" "$size" $((SEED * 100 + k)) 16 >/dev/null
done
"${S3UTIL[@]}" get-many bench train/ "$LOCAL/train" 8 >/dev/null
$PY - "$LOCAL/train" >"$WORK/ref.json" <<'PY'
import json, os, sys, zlib
ref = {}
for d, _, names in os.walk(sys.argv[1]):
    for n in names:
        data = open(os.path.join(d, n), "rb").read()
        ref[os.path.relpath(os.path.join(d, n), sys.argv[1])] = [zlib.crc32(data), len(data)]
json.dump(ref, sys.stdout)
PY
read -r DS_FILES DS_BYTES < <($PY -c 'import json, sys
r = json.load(open(sys.argv[1])); print(len(r), sum(v[1] for v in r.values()))' "$WORK/ref.json")
[ "$DS_FILES" = "$FILES" ] || die "the local copy has $DS_FILES files, not $FILES"
log "dataset: $DS_FILES files, $DS_BYTES bytes"

declare -A SECS REQS NOTE SECS_RUN SPREAD
RUN=1
# epoch ROW E ROOT [--plan]: one epoch of run RUN; SECS_RUN[ROW,E,RUN],
# REQS[ROW,E] (per sample, the last run's)
epoch() {
	local r=$1 e=$2 root=$3 rc=0 out
	shift 3
	drop_caches
	proxy_reset
	out=$(timeout -k 10 "$STEP_TIMEOUT" $PY scripts/bench/loader_epoch.py "$root" "$WORK/ref.json" "$e" \
		--seed "$SEED" --workers "$WORKERS" --batch "$BATCH" "$@" 2>>"$LOGS/client.log") || rc=$?
	if [ "$rc" != 0 ]; then
		SECS_RUN[$r,$e,$RUN]=FAIL
		NOTE[$r]="${NOTE[$r]:+${NOTE[$r]}; }run $RUN epoch $e: exit $rc: $(tail -n 1 "$LOGS/client.log")"
		log "$r epoch $e: FAIL ($(tail -n 1 "$LOGS/client.log"))"
	else
		SECS_RUN[$r,$e,$RUN]=$($PY -c 'import json, sys; print(json.loads(sys.argv[1])["secs"])' "$out")
		log "$r run $RUN epoch $e: ${SECS_RUN[$r,$e,$RUN]} s"
	fi
	if [ "$tool" = tierfs ] && [ "$root" = "$MNT/train" ]; then
		build/tierfs stats "$MNT" --json >"$LOGS/$r-run$RUN-epoch$e.json" 2>&1 || true
	fi
	REQS[$r,$e]=$(awk -v n="$(proxy_stat requests)" -v s="$DS_FILES" 'BEGIN { printf "%.2f", n / s }')
	BYTES_DOWN[$r,$e]=$(proxy_stat bytes_down)
}
declare -A BYTES_DOWN

# mount_tool TOOL [tierfs options...]: TOOL on MNT through the emulator, with
# an empty cache of its own: a new directory for each row, never one
# emptied just before (ext4 then searches its recently freed inodes on
# each create: a third of tierfs's CPU in a first epoch once measured).
mount_tool() {
	local cache
	cache=$(mktemp -d "$WORK/cache.$1.XXXXXX")
	tool=$1
	shift
	case $tool in
	tierfs)
		build/tierfs mount s3://bench "$MNT" -f --endpoint "$PROXY" --path-style \
			--cache-dir "$cache" "$@" "${EXTRA[@]}" >>"$LOGS/tierfs.log" 2>&1 &
		;;
	fusefloor)
		"$FLOOR_BIN" --foreground "$LOCAL" "$MNT" >>"$LOGS/fusefloor.log" 2>&1 &
		;;
	s3fs)
		s3fs bench "$MNT" -f -o "url=$PROXY,use_path_request_style,use_cache=$cache,passwd_file=$WORK/s3fs.passwd,ro,endpoint=$AWS_DEFAULT_REGION" \
			>>"$LOGS/s3fs.log" 2>&1 &
		;;
	rclone)
		"${RCLONE_ENV[@]}" rclone mount peers:bench "$MNT" --vfs-cache-mode full --cache-dir "$cache" --read-only \
			>>"$LOGS/rclone.log" 2>&1 &
		;;
	esac
	pid=$!
	bench_mounted && return 0
	log "$tool: mount failed (see $LOGS/$tool.log)"
	return 1
}

# run_row ROW TOOL [--plan]: EPOCHS epochs on a fresh mount
run_row() {
	local r=$1 t=$2 plan=()
	[ "${3:-}" = --plan ] && plan=(--plan)
	if [ "$t" = local ]; then
		tool=local
		for e in $(seq "$EPOCHS"); do epoch "$r" "$e" "$LOCAL/train"; done
		return
	fi
	if ! mount_tool "$t"; then
		for e in $(seq "$EPOCHS"); do SECS_RUN[$r,$e,$RUN]=FAIL; done
		NOTE[$r]="${NOTE[$r]:+${NOTE[$r]}; }run $RUN: mount failed"
		unmount_tool
		return
	fi
	for e in $(seq "$EPOCHS"); do epoch "$r" "$e" "$MNT/train" "${plan[@]}"; done
	unmount_tool
}

# cell ROW E: SECS[ROW,E] = the median of its runs (FAIL if one failed),
# SPREAD[ROW,E] = "min-max" when there were several
cell() {
	local r=$1 e=$2 k v vals=()
	for k in "${!SECS_RUN[@]}"; do
		[[ $k == "$r,$e,"* ]] || continue
		v=${SECS_RUN[$k]}
		[ "$v" = FAIL ] && { SECS[$r,$e]=FAIL; return; }
		vals+=("$v")
	done
	[ "${#vals[@]}" -gt 0 ] || { SECS[$r,$e]=FAIL; return; }
	SECS[$r,$e]=$(printf '%s\n' "${vals[@]}" | median)
	[ "${#vals[@]}" -gt 1 ] && SPREAD[$r,$e]=$(printf '%s\n' "${vals[@]}" | sort -n | sed -n '1p;$p' | paste -sd-)
	return 0
}

ROWS=()
for t in "${TOOLS[@]}"; do
	case $t in local | tierfs | tierfs+plan | fusefloor | s3fs | rclone) ROWS+=("$t") ;; esac
done
for RUN in $(seq "$RUNS"); do
	for t in "${ROWS[@]}"; do
		case $t in
		s3fs | rclone) [ "$RUN" = 1 ] || continue ;;
		esac
		log "row $t, run $RUN of $RUNS"
		case $t in
		tierfs+plan) run_row "$t" tierfs --plan ;;
		*) run_row "$t" "$t" ;;
		esac
	done
done
RUN=1

# ---- the network limit ----
# CURL_PAR at once, as many as tierfs's fetchers (--scan-prefetch, 16);
# twice that for comparison (the emulator caps each connection, not the
# sum, so more connections hide more of the latency).
(cd "$LOCAL/train" && find . -type f | sed 's|^\./||' | sort) |
	awk -v u="$PROXY/bench/train/" '{ printf "url = \"%s%s\"\noutput = \"/dev/null\"\n", u, $0 }' >"$WORK/all.curl"
# net_limit PAR: seconds for curl to get every file, PAR at once (FAIL if not all)
net_limit() {
	local t0 got secs
	t0=$(now)
	got=$(curl -K "$WORK/curl.cfg" -K "$WORK/all.curl" --parallel --parallel-max "$1" --no-progress-meter \
		-w '%{http_code} %{size_download}\n' | awk '$1 == 200 { n++; b += $2 } END { printf "%d %d\n", n, b }')
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
	[ "$got" = "$DS_FILES $DS_BYTES" ] || { log "network limit: got '$got', want '$DS_FILES $DS_BYTES'"; secs=FAIL; }
	echo "$secs"
}
log "network limit: curl --parallel-max $CURL_PAR, and $((2 * CURL_PAR)), of every file"
for i in $(seq "$RUNS"); do
	SECS_RUN[net,1,$i]=$(net_limit "$CURL_PAR")
	SECS_RUN[net2,1,$i]=$(net_limit $((2 * CURL_PAR)))
	log "network limit, run $i: ${SECS_RUN[net,1,$i]} s ($((2 * CURL_PAR)) at once: ${SECS_RUN[net2,1,$i]} s)"
done
cell net 1
cell net2 1
NET_SECS=${SECS[net,1]}
NET2_SECS=${SECS[net2,1]}

# ---- twice the cache, with a plan ----
HALF_LINE=
if has half; then
	ram=$((32 << 20))
	# 32M, or an eighth of the dataset when smaller, but a chunk at least
	[ "$ram" -le $((DS_BYTES / 8)) ] || ram=$(((DS_BYTES / 8 + 1048575) / 1048576 * 1048576))
	[ "$ram" -ge $((8 << 20)) ] || ram=$((8 << 20))
	ssd=$((DS_BYTES / 2 - ram))
	log "row half: --ram-size $ram --ssd-size $ssd (cache = half of $DS_BYTES bytes)"
	r=half
	ROWS+=("$r")
	if mount_tool tierfs --ram-size "$ram" --ssd-size "$ssd"; then
		build/tierfs trace start "$WORK/half.trace" "$MNT" >/dev/null
		for e in $(seq "$EPOCHS"); do epoch "$r" "$e" "$MNT/train" --plan; done
		build/tierfs trace stop "$MNT" >/dev/null
		unmount_tool
		mean=$((DS_BYTES / DS_FILES))
		K=$(((ram + ssd) / mean))
		build/tierfs-sim --trace "$WORK/half.trace" --sizes "$K" --policies lru >"$LOGS/half-sim.md" 2>&1 || true
		# the OPT % column of the sim's one row
		OPT=$(awk -F'|' '/^\| / && $3 ~ /[0-9]/ { for (i = 1; i <= NF; i++) if (h[i] ~ /OPT/) print $i } /OPT %/ { for (i = 1; i <= NF; i++) h[i] = $i }' "$LOGS/half-sim.md" | tr -d ' ' | head -n 1)
		if [[ $OPT =~ ^[0-9.]+$ ]]; then
			BELADY=$(awk -v o="$OPT" -v b="$DS_BYTES" 'BEGIN { printf "%.0f", (1 - o / 100) * b }')
			HALF_LINE="Belady (tierfs-sim OPT on the run's trace, K = $K files): hit ratio $OPT %, $BELADY bytes per epoch"
		else
			HALF_LINE="tierfs-sim gave no OPT figure (see logs/half-sim.md)"
		fi
	else
		for e in $(seq "$EPOCHS"); do SECS_RUN[$r,$e,$RUN]=FAIL; done
		NOTE[$r]="${NOTE[$r]:+${NOTE[$r]}; }run $RUN: mount failed"
		unmount_tool
	fi
fi

# ---- report ----
for r in "${ROWS[@]}"; do
	for e in $(seq "$EPOCHS"); do cell "$r" "$e"; done
done
# show SECS[ROW,E] and its range over the runs
secs() { printf '%s%s' "${SECS[$1,$2]}" "${SPREAD[$1,$2]:+ (${SPREAD[$1,$2]})}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "FAIL" || b == "FAIL" || b == 0 || a == "") print "n/a"; else printf "%.2f", a / b }'; }
{
	echo "# DataLoader over a shuffled image folder (the loader benchmark)"
	echo
	echo "$DS_FILES files of 40 to 200 KB ($DS_BYTES bytes) in $CLASSES class directories;"
	echo "torch DataLoader, $WORKERS workers, batch $BATCH, RandomSampler seeded per epoch (same orders for"
	echo "every tool); radosgw behind tierfs-faultproxy ($LATENCY_MS ms to first byte, $BANDWIDTH B/s per"
	echo "connection); page cache dropped before every epoch; each tool on a fresh mount, empty cache."
	echo "local, tierfs, tierfs+plan, fusefloor and the network limit: median of $RUNS runs, interleaved (range in"
	echo "parentheses); s3fs, rclone and the twice-the-cache run: one run. Ratios are of medians."
	echo
	printf '| tool |'
	for e in $(seq "$EPOCHS"); do printf ' epoch %s s | req/sample |' "$e"; done
	echo
	printf '|---|'
	for _ in $(seq "$EPOCHS"); do printf -- '---:|---:|'; done
	echo
	for r in "${ROWS[@]}"; do
		[ "$r" = half ] && continue
		printf '| %s |' "$r"
		for e in $(seq "$EPOCHS"); do
			if [ "$r" = local ]; then printf ' %s | - |' "$(secs "$r" "$e")"
			else printf ' %s | %s |' "$(secs "$r" "$e")" "${REQS[$r,$e]}"; fi
		done
		echo
	done
	echo "| network limit (curl, $CURL_PAR at once) | $(secs net 1) | 1.00 |"
	echo "| network, $((2 * CURL_PAR)) at once (for comparison) | $(secs net2 1) | 1.00 |"
	echo
	for r in "${ROWS[@]}"; do [ -n "${NOTE[$r]:-}" ] && echo "- $r: ${NOTE[$r]}"; done
	echo
	echo "Against the loader benchmark's targets:"
	echo
	if has tierfs && has s3fs; then
		echo "- epoch 1, s3fs / tierfs without a plan: $(ratio "${SECS[s3fs,1]}" "${SECS[tierfs,1]}")x (target >= 5)"
	fi
	if has tierfs+plan; then
		echo "- epoch 1, tierfs with a plan / network limit: $(ratio "${SECS[tierfs+plan,1]}" "$NET_SECS") (target <= 1.3)"
	fi
	if has local; then
		for r in tierfs tierfs+plan; do
			has "$r" || continue
			for e in $(seq 2 "$EPOCHS"); do
				echo "- epoch $e, $r / local disk: $(ratio "${SECS[$r,$e]}" "${SECS[local,$e]}") (target <= 1.5)"
			done
		done
		if has fusefloor; then
			for e in $(seq "$EPOCHS"); do
				echo "- epoch $e, fusefloor / local disk: $(ratio "${SECS[fusefloor,$e]}" "${SECS[local,$e]}") (no target: the floor of a FUSE daemon with passthrough)"
			done
		fi
	fi
	if has half && [ -n "${BELADY:-}" ]; then
		echo "- twice the cache, with a plan: $HALF_LINE"
		for e in $(seq "$EPOCHS"); do
			echo "  - epoch $e: ${SECS[half,$e]} s, ${BYTES_DOWN[half,$e]} bytes from the store, $(ratio "${BYTES_DOWN[half,$e]}" "$BELADY") of Belady's (target <= 1.05 from epoch 2)"
		done
	elif has half; then
		echo "- twice the cache: $HALF_LINE"
	fi
	echo
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r)."
	echo "Command: \`$CMDLINE\` ($(awk -v a="$T_START" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s)."
} >"$OUT/loader.md"
cat "$OUT/loader.md"
