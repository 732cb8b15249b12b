#!/usr/bin/env bash
# evict.sh - the eviction policies against their targets, in one table:
# the simulator's (tierfs-sim, the very policy code the daemon runs) and
# the daemon's own (a real mount against a local radosgw).
#
#   bash scripts/bench/evict.sh [FILES (64)] [FILE_MIB (4)] [RAM_MIB (16)] [SSD_MIB] [EPOCHS (4)]
#
# Simulator: every generator at 10,000 items, 5 epochs (the first one not
#   counted), cache sizes C/N = 0.25 and 0.5.  Targets: the default policy
#   (tinylfu) >= 95% of Belady's OPT on epoch-seq and epoch-shuffled; on
#   zipf (alpha 0.8, 1.0, 1.2), shifting-hotset and hotset-scans within 2
#   points of the better of lru and lfu.
# Daemon: FILES files of FILE_MIB MiB (N) read EPOCHS times through a
#   mount with --ram-size RAM_MIB M --ssd-size C and otherwise the
#   default options, for every N/C in EVICT_RATIOS (environment, default
#   "1.5 2 4 8": C = N / ratio, in whole MiB) or, when SSD_MIB is given,
#   for C = SSD_MIB MiB alone.  With EVICT_SHAPE=mixed the dataset is
#   instead files from 40 KB to 64 MiB (log-uniform, a fixed seed) that
#   add up to the same N; with EVICT_FILE_BYTES=B, FILES files of B
#   bytes each (100000 with TIERFS_BENCH_MOUNT_OPTS="--chunk-size 64K"
#   and RAM_MIB 1: two chunks a file).  The page cache dropped before
#   each epoch, in four orders: listing order, a new seeded shuffle each epoch, the same with
#   --scan-prefetch 0, and the shuffle handed over as a loader's plan.
#   Per epoch, the object-store bytes (store.bytes, the daemon's SIGUSR1
#   counter) over N.  Targets: epoch 1 <= 1.02, later epochs <= 1.05 x
#   (1 - C/N) with C the SSD tier (the tiers are inclusive).  The same runs
#   with --ram-policy lru --ssd-policy lru are printed beside them; OPT is
#   1 - C/N.  EVICT_ORDERS and EVICT_POLICIES (environment) run a subset
#   of the orders and of "tinylfu lru"; EVICT_SIM=0 skips the simulator;
#   EVICT_SEED=K (default 0) draws other shuffles (epoch e's is seeded
#   with e + 1000 K); TIERFS_BENCH_MOUNT_OPTS, extra options for every
#   mount.
# Output: the tables on stdout; with EVICT_OUT=DIR also DIR/evict.md (the
#   same) and DIR/evict.png: for each order, the mean of epochs 2 on
#   against N/C, for both policies, beside OPT and the bound (gnuplot).
# Exit status 0 when every target is met, 1 otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
FILES=${1:-64}
FILE_MIB=${2:-4}
RAM_MIB=${3:-16}
SSD_ARG=${4:-}
EPOCHS=${5:-4}
# shellcheck disable=SC2206
EXTRA=(${TIERFS_BENCH_MOUNT_OPTS:-})
# SIZES: the dataset's file sizes in bytes; N_MIB their sum in MiB.
case ${EVICT_SHAPE:-uniform} in
uniform)
	if [ -n "${EVICT_FILE_BYTES:-}" ]; then
		[[ $EVICT_FILE_BYTES =~ ^[1-9][0-9]*$ ]] || { echo "evict.sh: EVICT_FILE_BYTES must be a whole number" >&2; exit 2; }
		SHAPE="$FILES x $EVICT_FILE_BYTES bytes"
	else
		SHAPE="$FILES x $FILE_MIB MiB"
	fi
	mapfile -t SIZES < <(for _ in $(seq "$FILES"); do echo "${EVICT_FILE_BYTES:-$((FILE_MIB * 1048576))}"; done) ;;
mixed)
	mapfile -t SIZES < <(awk -v n=$((FILES * FILE_MIB * 1048576)) 'BEGIN {
		srand(1); lo = log(40000); hi = log(64 * 1048576)
		for (s = 0; s < n; s += x) {
			x = int(exp(lo + rand() * (hi - lo)))
			if (x > n - s) x = n - s
			if (x < 40000) x = 40000
			print x
		} }')
	SHAPE="${#SIZES[@]} files of 40 KB-64 MiB" ;;
*) echo "evict.sh: EVICT_SHAPE must be uniform or mixed" >&2; exit 2 ;;
esac
dataset=0
for b in "${SIZES[@]}"; do dataset=$((dataset + b)); done
N_MIB=$(awk -v b="$dataset" 'BEGIN { printf "%.2f", b / 1048576 }')
if [ -n "$SSD_ARG" ]; then
	SSDS=("$SSD_ARG")
else
	SSDS=()
	for r in ${EVICT_RATIOS:-1.5 2 4 8}; do
		SSDS+=("$(awk -v n="$N_MIB" -v r="$r" 'BEGIN { c = int(n / r); if (r <= 1 || c < 1) exit 1; print c }')") ||
			{ echo "evict.sh: bad N/C ratio '$r' (must be > 1 and leave C >= 1 MiB)" >&2; exit 2; }
	done
fi
OUT=${EVICT_OUT:-}
[ -z "$OUT" ] || mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tierfs-bench-evict.XXXXXX")
MNT=$WORK/mnt
LOG=$WORK/daemon.log
export RGW_DIR=$WORK/rgw
mkdir -p "$MNT"
pid=
failed=0

cleanup() {
	if grep -q " $MNT " /proc/mounts; then build/tierfs unmount "$MNT" || umount -l "$MNT"; fi
	[ -n "$pid" ] && wait "$pid" 2>/dev/null || true
	bench_stop_rgw
	rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$WORK/rgw.log"

ORDERS=(${EVICT_ORDERS:-listing shuffle shuffle-noscan plan})
SEED=${EVICT_SEED:-0}
case $SEED in *[!0-9]* | "") echo "evict.sh: EVICT_SEED must be a number" >&2; exit 2 ;; esac
POLICIES=(${EVICT_POLICIES:-tinylfu lru})
for o in "${ORDERS[@]}"; do
	case $o in listing | shuffle | shuffle-noscan | plan) ;;
	*) echo "evict.sh: unknown order '$o' in EVICT_ORDERS" >&2; exit 2 ;;
	esac
done
for p in "${POLICIES[@]}"; do
	case $p in tinylfu | lru) ;;
	*) echo "evict.sh: unknown policy '$p' in EVICT_POLICIES" >&2; exit 2 ;;
	esac
done

sim_table=
if [ "${EVICT_SIM:-1}" != 0 ]; then
echo "## Simulator (tierfs-sim --items 10000 --epochs 5 --sizes 0.25,0.5)"
echo
echo "| trace | C/N | lru % | lfu % | tinylfu % | OPT % | target | met |"
echo "|---|---|---:|---:|---:|---:|---|---|"
# sim_rows KIND [ARGS...]: one table row per cache size.
sim_rows() {
	local kind=$1 label=$1
	shift
	[ $# -gt 0 ] && label="$kind ($*)"
	build/tierfs-sim --gen "$kind" --items 10000 --epochs 5 --sizes 0.25,0.5 \
		--policies lru,lfu,tinylfu "$@" |
		awk -F'|' -v kind="$kind" -v label="$label" '
		$2 ~ "^ *" kind " *$" {
			cn = $3; sub(/.*\(/, "", cn); sub(/\).*/, "", cn)
			lru = $4 + 0; lfu = $5 + 0; t = $6 + 0; opt = $7 + 0
			if (kind ~ /^epoch/) {
				target = sprintf(">= 0.95 x OPT (%.1f)", 0.95 * opt)
				ok = t >= 0.95 * opt
			} else {
				best = lru > lfu ? lru : lfu
				target = sprintf(">= best of lru, lfu - 2 (%.1f)", best - 2)
				ok = t >= best - 2
			}
			printf "| %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s |\n", label, cn, lru, lfu, t, opt, target, ok ? "yes" : "NO"
		}'
}
sim_table=$(
	sim_rows epoch-seq
	sim_rows epoch-shuffled
	sim_rows zipf --alpha 0.8
	sim_rows zipf --alpha 1.0
	sim_rows zipf --alpha 1.2
	sim_rows shifting-hotset
	sim_rows hotset-scans
)
echo "$sim_table"
if grep -q '| NO |' <<<"$sim_table"; then failed=1; fi
fi

"${S3UTIL[@]}" mb bench >/dev/null
for i in "${!SIZES[@]}"; do
	"${S3UTIL[@]}" put-bytes bench "$(printf 'data/f-%04d' "$i")" "${SIZES[$i]}" "$((i + 1))" >/dev/null
done

declare -A frac
# run SSD_MIB POLICY ORDER [OPTS...]: EPOCHS epochs through a fresh mount
# and cache; frac[SSD_MIB,POLICY,ORDER,e] = store bytes of epoch e / N.
run() {
	local ssd=$1 policy=$2 order=$3 e before after
	shift 3
	rm -rf "$WORK/cache"
	build/tierfs mount s3://bench "$MNT" -f --endpoint "$S3_ENDPOINT" --path-style \
		--ram-size "${RAM_MIB}M" --cache-dir "$WORK/cache" --ssd-size "${ssd}M" \
		--ram-policy "$policy" --ssd-policy "$policy" "$@" "${EXTRA[@]}" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 200); do grep -q " $MNT " /proc/mounts && break; sleep 0.05; done
	grep -q " $MNT " /proc/mounts || { tail -n 20 "$LOG" >&2; exit 1; }
	ls "$MNT/data" >/dev/null
	for e in $(seq "$EPOCHS"); do
		ls "$MNT/data" | sed "s|^|$MNT/data/|" >"$WORK/order"
		if [ "$order" != listing ]; then
			shuf --random-source=<(yes "$((e + SEED * 1000))" 2>/dev/null) "$WORK/order" >"$WORK/order.s"
			mv "$WORK/order.s" "$WORK/order"
		fi
		drop_caches
		before=$(stat_of store.bytes)
		[ "$order" = plan ] && build/tierfs plan "$MNT" "$WORK/order" >/dev/null
		while read -r f; do dd if="$f" of=/dev/null bs=1M status=none; done <"$WORK/order"
		after=$(stat_of store.bytes)
		frac[$ssd,$policy,$order,$e]=$(awk -v x=$((after - before)) -v n="$dataset" 'BEGIN { printf "%.2f", x / n }')
	done
	build/tierfs unmount "$MNT"
	wait "$pid"
	pid=
}
for ssd in "${SSDS[@]}"; do
	for policy in "${POLICIES[@]}"; do
		for order in "${ORDERS[@]}"; do
			if [ "$order" = shuffle-noscan ]; then
				run "$ssd" "$policy" "$order" --scan-prefetch 0
			else
				run "$ssd" "$policy" "$order"
			fi
		done
	done
done

# mean_later SSD POLICY ORDER: the mean of epochs 2.. (epoch 1 alone: itself).
mean_later() {
	local e sum=0 n=0
	[ -n "${frac[$1,$2,$3,1]+set}" ] || { echo NaN; return; }   # not run
	for e in $(seq "$EPOCHS"); do
		[ "$e" -eq 1 ] && [ "$EPOCHS" -gt 1 ] && continue
		sum=$(awk -v a="$sum" -v b="${frac[$1,$2,$3,$e]}" 'BEGIN { print a + b }')
		n=$((n + 1))
	done
	awk -v a="$sum" -v n="$n" 'BEGIN { printf "%.3f", a / n }'
}
# daemon_table: one table per SSD size; a tinylfu row over its bound is NO.
daemon_table() {
	local ssd opt bound order policy row met e v lim hdr sep
	for ssd in "${SSDS[@]}"; do
		opt=$(awk -v c="$ssd" -v n="$N_MIB" 'BEGIN { printf "%.3f", 1 - c / n }')
		bound=$(awk -v o="$opt" 'BEGIN { printf "%.3f", 1.05 * o }')
		echo
		echo "## Daemon: $SHAPE (N = $N_MIB MiB), RAM ${RAM_MIB}M," \
			"SSD ${ssd}M (N/C = $(awk -v c="$ssd" -v n="$N_MIB" 'BEGIN { printf "%.2f", n / c }')), $EPOCHS epochs: store bytes / N"
		echo
		hdr="| order | policy |"
		sep="|---|---|"
		for e in $(seq "$EPOCHS"); do hdr="$hdr epoch $e |"; sep="$sep---:|"; done
		echo "$hdr bound (epoch 1: 1.02, then) | OPT | met |"
		echo "$sep---:|---:|---|"
		for order in "${ORDERS[@]}"; do
			for policy in "${POLICIES[@]}"; do
				row="| $order | $policy |"
				met=yes
				for e in $(seq "$EPOCHS"); do
					v=${frac[$ssd,$policy,$order,$e]}
					row="$row $v |"
					lim=$bound
					[ "$e" -eq 1 ] && lim=1.02
					awk -v v="$v" -v l="$lim" 'BEGIN { exit !(v <= l) }' || met=NO
				done
				[ "$policy" = tinylfu ] || met=-
				echo "$row $bound | $opt | $met |"
			done
		done
	done
	echo
	echo "(bound = 1.05 x (1 - C/N), C the SSD tier; $(nproc) cores; cache disk: $(df --output=source "$WORK" | tail -n 1))"
}
tables=$(daemon_table)
echo "$tables"
if grep -q '| NO |' <<<"$tables"; then failed=1; fi
if [ "$failed" -eq 0 ]; then verdict="every target met"; else verdict="a target was missed (NO above)"; fi
echo "$verdict"

if [ -n "$OUT" ]; then
	{
		echo "$sim_table"
		echo "$tables"
		echo "$verdict"
		echo
		echo "Command: \`EVICT_SHAPE=${EVICT_SHAPE:-uniform} EVICT_RATIOS=\"${EVICT_RATIOS:-1.5 2 4 8}\" bash scripts/bench/evict.sh $*\`"
	} >"$OUT/evict.md"
	# one data block per order: N/C, tinylfu, lru, OPT, bound (means of epochs 2..)
	for order in "${ORDERS[@]}"; do
		echo "# $order"
		for ssd in $(printf '%s\n' "${SSDS[@]}" | sort -rn); do
			awk -v c="$ssd" -v n="$N_MIB" -v t="$(mean_later "$ssd" tinylfu "$order")" \
				-v l="$(mean_later "$ssd" lru "$order")" \
				'BEGIN { printf "%.3f %s %s %.3f %.3f\n", n / c, t, l, 1 - c / n, 1.05 * (1 - c / n) }'
		done
		printf '\n\n'
	done >"$OUT/evict.dat"
	gnuplot >"$OUT/gnuplot.log" 2>&1 <<EOF || echo "evict.sh: gnuplot failed: $OUT/gnuplot.log" >&2
set terminal pngcairo size 1200,900 noenhanced font ",10"
set output "$OUT/evict.png"
set multiplot layout 2,2 title "Store bytes per epoch / N (mean of epochs 2-$EPOCHS), $SHAPE, RAM ${RAM_MIB}M, C = the SSD tier"
set logscale x 2
set xrange [1.2:10]
set xlabel "N/C"
set ylabel "fetched / N"
set yrange [0:1.1]
set key bottom right
set grid
do for [i=0:$((${#ORDERS[@]} - 1))] {
	set title word("${ORDERS[*]}", i + 1)
	plot "$OUT/evict.dat" index i using 1:2 with linespoints lw 2 title "tierfs (tinylfu)", \
		"" index i using 1:3 with linespoints title "lru", \
		"" index i using 1:4 with lines dt 2 title "OPT (1 - C/N)", \
		"" index i using 1:5 with lines dt 3 title "bound (1.05 x OPT)"
}
unset multiplot
EOF
	echo "table: $OUT/evict.md"
	[ -s "$OUT/evict.png" ] && echo "chart: $OUT/evict.png"
fi
exit "$failed"
