#!/usr/bin/env bash
# evict.sh - the eviction policies against their targets, in one table:
# the simulator's (tierfs-sim, the very policy code the daemon runs) and
# the daemon's own (a real mount against a local radosgw).
#
#   bash scripts/bench/evict.sh [TOTAL_MIB (2048)] [EPOCHS (4)]
#
# Simulator: every generator at 10,000 items, 5 epochs (the first one not
#   counted), cache sizes C/N = 0.25 and 0.5.  Targets: the default policy
#   (tinylfu) >= 95% of Belady's OPT on epoch-seq and epoch-shuffled; on
#   zipf (alpha 0.8, 1.0, 1.2), shifting-hotset and hotset-scans within 2
#   points of the better of lru and lfu.
# Daemon: a dataset of 2 x TOTAL_MIB (64 MiB objects) is read in listing
#   order EPOCHS times through a mount whose RAM + SSD tiers total
#   TOTAL_MIB (RAM 32M, SSD the rest; 8M chunks), the kernel page cache
#   dropped before each epoch.  From epoch 2 on, the object-store bytes of
#   each epoch (store.bytes, the daemon's SIGUSR1 counter) must be
#   <= 1.05 x (1 - C/N) x dataset.  The same run with --ram-policy lru
#   --ssd-policy lru is printed next to it as the baseline.
# Exit status 0 when every target is met, 1 otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TOTAL_MIB=${1:-2048}
EPOCHS=${2:-4}
RAM_MIB=32
SSD_MIB=$((TOTAL_MIB - RAM_MIB))
OBJ_MIB=64
N_OBJ=$((2 * TOTAL_MIB / OBJ_MIB))
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
for i in $(seq -w 1 "$N_OBJ"); do
	"${S3UTIL[@]}" put-bytes bench "data/shard-$i" $((OBJ_MIB * 1024 * 1024)) "$i" >/dev/null
done


dataset=$((N_OBJ * OBJ_MIB * 1024 * 1024))
bound=$(awk -v d="$dataset" -v c="$TOTAL_MIB" -v n="$((N_OBJ * OBJ_MIB))" \
	'BEGIN { printf "%.0f", 1.05 * (1 - c / n) * d }')
declare -A epoch_bytes
# run POLICY: EPOCHS epochs through a fresh mount and a fresh cache.
run() {
	local policy=$1 e before after
	rm -rf "$WORK/cache"
	build/tierfs mount s3://bench "$MNT" -f --endpoint "$S3_ENDPOINT" --path-style \
		--ram-size "${RAM_MIB}M" --cache-dir "$WORK/cache" --ssd-size "${SSD_MIB}M" \
		--ram-policy "$policy" --ssd-policy "$policy" >>"$LOG" 2>&1 &
	pid=$!
	for _ in $(seq 200); do grep -q " $MNT " /proc/mounts && break; sleep 0.05; done
	grep -q " $MNT " /proc/mounts || { tail -n 20 "$LOG" >&2; exit 1; }
	for e in $(seq "$EPOCHS"); do
		drop_caches
		before=$(stat_of store.bytes)
		for f in "$MNT"/data/shard-*; do dd if="$f" of=/dev/null bs=1M status=none; done
		after=$(stat_of store.bytes)
		epoch_bytes[$policy,$e]=$((after - before))
	done
	last_stats=$(grep 'stats (SIGUSR1)' "$LOG" | tail -n 1 | tr ' ' '\n' |
		grep '^\(ram\|ssd\)\.\(hits\|misses\|evictions\|rejected\|dropped\)=' | tr '\n' ' ')
	build/tierfs unmount "$MNT"
	wait "$pid"
	pid=
}
run tinylfu
tlfu_stats=$last_stats
run lru
lru_stats=$last_stats

echo
echo "## Daemon: dataset $((N_OBJ * OBJ_MIB)) MiB ($N_OBJ x $OBJ_MIB MiB), cache ${TOTAL_MIB} MiB" \
	"(RAM ${RAM_MIB}M + SSD ${SSD_MIB}M), $EPOCHS epochs in listing order"
echo
echo "| epoch | object-store MiB, tinylfu | object-store MiB, lru | bound from epoch 2 (MiB) | met |"
echo "|---|---:|---:|---:|---|"
for e in $(seq "$EPOCHS"); do
	met=-
	if [ "$e" -ge 2 ]; then
		met=yes
		[ "${epoch_bytes[tinylfu,$e]}" -le "$bound" ] || { met=NO; failed=1; }
	fi
	echo "| $e | $((epoch_bytes[tinylfu,$e] / 1048576)) | $((epoch_bytes[lru,$e] / 1048576))" \
		"| $((bound / 1048576)) | $met |"
done
echo
echo "tinylfu counters after the last epoch: $tlfu_stats"
echo "lru counters after the last epoch: $lru_stats"
echo "(bound = 1.05 x (1 - C/N) x dataset; $(nproc) cores; cache disk: $(df --output=source "$WORK" | tail -n 1))"
if [ "$failed" -eq 0 ]; then echo "every target met"; else echo "a target was missed (NO above)"; fi
exit "$failed"
