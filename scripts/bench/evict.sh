#!/usr/bin/env bash
# evict.sh - the eviction policies against their targets, in one table:
# the simulator's (tierfs-sim, the very policy code the daemon runs) and
# the daemon's own (a real mount against a local radosgw).
#
#   bash scripts/bench/evict.sh [FILES (64)] [FILE_MIB (4)] [RAM_MIB (16)] [SSD_MIB (128)] [EPOCHS (4)]
#
# Simulator: every generator at 10,000 items, 5 epochs (the first one not
#   counted), cache sizes C/N = 0.25 and 0.5.  Targets: the default policy
#   (tinylfu) >= 95% of Belady's OPT on epoch-seq and epoch-shuffled; on
#   zipf (alpha 0.8, 1.0, 1.2), shifting-hotset and hotset-scans within 2
#   points of the better of lru and lfu.
# Daemon: FILES files of FILE_MIB MiB (N) read EPOCHS times through a
#   mount with --ram-size RAM_MIB M --ssd-size SSD_MIB M and otherwise the
#   default options, the page cache dropped before each epoch, in four
#   orders: listing order, a new seeded shuffle each epoch, the same with
#   --scan-prefetch 0, and the shuffle handed over as a loader's plan.
#   Per epoch, the object-store bytes (store.bytes, the daemon's SIGUSR1
#   counter) over N.  Targets: epoch 1 <= 1.02, later epochs <= 1.05 x
#   (1 - C/N) with C the SSD tier (the tiers are inclusive).  The same runs
#   with --ram-policy lru --ssd-policy lru are printed beside them; OPT is
#   1 - C/N.
# Exit status 0 when every target is met, 1 otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
FILES=${1:-64}
FILE_MIB=${2:-4}
RAM_MIB=${3:-16}
SSD_MIB=${4:-128}
EPOCHS=${5:-4}
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

"${S3UTIL[@]}" mb bench >/dev/null
for i in $(seq -w 1 "$FILES"); do
	"${S3UTIL[@]}" put-bytes bench "data/f-$i" $((FILE_MIB * 1024 * 1024)) "$((10#$i))" >/dev/null
done

dataset=$((FILES * FILE_MIB * 1048576))
declare -A frac
# run POLICY ORDER [OPTS...]: EPOCHS epochs through a fresh mount and cache;
# frac[POLICY,ORDER,e] = store bytes of epoch e / N.
run() {
	local policy=$1 order=$2 e before after
	shift 2
	rm -rf "$WORK/cache"
	build/tierfs mount s3://bench "$MNT" -f --endpoint "$S3_ENDPOINT" --path-style \
		--ram-size "${RAM_MIB}M" --cache-dir "$WORK/cache" --ssd-size "${SSD_MIB}M" \
		--ram-policy "$policy" --ssd-policy "$policy" "$@" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 200); do grep -q " $MNT " /proc/mounts && break; sleep 0.05; done
	grep -q " $MNT " /proc/mounts || { tail -n 20 "$LOG" >&2; exit 1; }
	ls "$MNT/data" >/dev/null
	for e in $(seq "$EPOCHS"); do
		ls "$MNT/data" | sed "s|^|$MNT/data/|" >"$WORK/order"
		if [ "$order" != listing ]; then
			shuf --random-source=<(yes "$e" 2>/dev/null) "$WORK/order" >"$WORK/order.s"
			mv "$WORK/order.s" "$WORK/order"
		fi
		drop_caches
		before=$(stat_of store.bytes)
		[ "$order" = plan ] && build/tierfs plan "$MNT" "$WORK/order" >/dev/null
		while read -r f; do dd if="$f" of=/dev/null bs=1M status=none; done <"$WORK/order"
		after=$(stat_of store.bytes)
		frac[$policy,$order,$e]=$(awk -v x=$((after - before)) -v n="$dataset" 'BEGIN { printf "%.2f", x / n }')
	done
	build/tierfs unmount "$MNT"
	wait "$pid"
	pid=
}
for policy in tinylfu lru; do
	run "$policy" listing
	run "$policy" shuffle
	run "$policy" shuffle-noscan --scan-prefetch 0
	run "$policy" plan
done

opt=$(awk -v c="$SSD_MIB" -v n="$((FILES * FILE_MIB))" 'BEGIN { printf "%.3f", 1 - c / n }')
bound=$(awk -v o="$opt" 'BEGIN { printf "%.3f", 1.05 * o }')
echo
echo "## Daemon: $FILES x $FILE_MIB MiB (N = $((FILES * FILE_MIB)) MiB), RAM ${RAM_MIB}M," \
	"SSD ${SSD_MIB}M, $EPOCHS epochs: store bytes / N"
echo
hdr="| order | policy |"
sep="|---|---|"
for e in $(seq "$EPOCHS"); do hdr="$hdr epoch $e |"; sep="$sep---:|"; done
echo "$hdr bound (epoch 1: 1.02, then) | OPT | met |"
echo "$sep---:|---:|---|"
for order in listing shuffle shuffle-noscan plan; do
	for policy in tinylfu lru; do
		row="| $order | $policy |"
		met=yes
		for e in $(seq "$EPOCHS"); do
			v=${frac[$policy,$order,$e]}
			row="$row $v |"
			lim=$bound
			[ "$e" -eq 1 ] && lim=1.02
			awk -v v="$v" -v l="$lim" 'BEGIN { exit !(v <= l) }' || met=NO
		done
		if [ "$policy" = tinylfu ]; then
			[ "$met" = NO ] && failed=1
		else
			met=-
		fi
		echo "$row $bound | $opt | $met |"
	done
done
echo
echo "(bound = 1.05 x (1 - C/N), C the SSD tier; $(nproc) cores; cache disk: $(df --output=source "$WORK" | tail -n 1))"
if [ "$failed" -eq 0 ]; then echo "every target met"; else echo "a target was missed (NO above)"; fi
exit "$failed"
