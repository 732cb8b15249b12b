#!/usr/bin/env bash
# proxy.sh - what tierfs-faultproxy costs, and what its S3-like shaping
# looks like: reading one object from radosgw directly vs through the
# proxy, in the same run.  Prints a markdown table: per path and transfer
# the MiB/s of each run, their median, the median time to first byte and
# the median ratio to direct (goal with shaping off: >= 0.80).
#
#   bash scripts/bench/proxy.sh [SIZE_MIB (1024)] [RUNS (3)]
#
# Three paths, each read two ways:
#   direct:            curl -> radosgw
#   proxy, no shaping: curl -> tierfs-faultproxy -> radosgw
#   proxy, --s3-like:  the same with 20 ms to first byte and 90e6 B/s per
#                      connection (one GET should give ~86 MiB/s)
#   1 GET:             the whole object on one connection
#   8 ranged GETs:     8 curls at once, each --range over an eighth
# Each run: for each path and transfer, drop the kernel page cache, then
# time it until all its curls are done.  Paths alternate within a run so
# drift in the machine's load hits them alike (one untimed GET first warms
# radosgw and the proxy).  curl checks the status (--fail), the script the
# byte count of every transfer.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SIZE_MIB=${1:-1024}
RUNS=${2:-3}
PAR=8
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-bench-proxy.XXXXXX")
export RGW_DIR=${TMPDIR:-/tmp}/tierfs-bench-rgw
PROXY_PIDS=()

cleanup() {
	local p
	for p in "${PROXY_PIDS[@]}"; do
		kill "$p" 2>/dev/null || continue
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
	bench_stop_rgw
}
trap cleanup EXIT

# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
bench_start "$TMP/rgw.log"
bytes=$((SIZE_MIB * 1024 * 1024))
"${S3UTIL[@]}" mb bench >/dev/null
"${S3UTIL[@]}" put-bytes bench obj "$bytes" 7 >/dev/null

declare -A URL=([direct]=$S3_ENDPOINT)
# start_proxy NAME [OPTIONS...]: start a proxy in front of radosgw at URL[NAME]
start_proxy() {
	local name=$1 port=""
	shift
	build/tests/tierfs-faultproxy --listen 127.0.0.1:0 --upstream "${S3_ENDPOINT#http://}" \
		--port-file "$TMP/$name.port" "$@" >"$TMP/$name.log" 2>&1 &
	PROXY_PIDS+=($!)
	for _ in $(seq 200); do
		[ -s "$TMP/$name.port" ] && port=$(cat "$TMP/$name.port") && break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$TMP/$name.log"; exit 1; }
	URL[$name]=http://127.0.0.1:$port
}
start_proxy plain
start_proxy s3like --s3-like

CURL=(curl -sS --fail --aws-sigv4 "aws:amz:${AWS_DEFAULT_REGION}:s3"
	--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o /dev/null
	-w '%{time_starttransfer} %{size_download}\n')

# transfer URL N: read the object with N ranged GETs at once (N = 1: one
# plain GET); prints "SECS FIRST_BYTE_MS", the slowest first byte of them
transfer() {
	local url=$1 n=$2 part=$(($2 > 1 ? bytes / $2 : bytes)) t0 t1 i lo hi got pid pids=()
	t0=$(now)
	if [ "$n" = 1 ]; then
		"${CURL[@]}" "$url/bench/obj" >"$TMP/out.0"
	else
		for i in $(seq 0 $((n - 1))); do
			lo=$((i * part))
			hi=$((i == n - 1 ? bytes - 1 : lo + part - 1))
			"${CURL[@]}" --range "$lo-$hi" "$url/bench/obj" >"$TMP/out.$i" &
			pids+=($!)
		done
		for pid in "${pids[@]}"; do wait "$pid"; done
	fi
	t1=$(now)
	# every byte arrived, none twice
	got=$(cat "$TMP"/out.* | awk '{ s += $2 } END { print s }')
	[ "$got" = "$bytes" ] || { echo "proxy.sh: $url: got $got bytes, want $bytes" >&2; exit 1; }
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%s ", b - a }'
	sort -n -k1,1 "$TMP"/out.* | tail -n 1 | awk '{ printf "%.1f\n", $1 * 1000 }'
	rm -f "$TMP"/out.*
}

PATHS=(direct plain s3like)
declare -A LABEL=([direct]="direct" [plain]="proxy, no shaping" [s3like]="proxy, --s3-like")
declare -A MIBS FB RATIO
# untimed: a fresh radosgw and proxy are slower on their first GET
for p in direct plain; do transfer "${URL[$p]}" 1 >/dev/null; done
for _ in $(seq "$RUNS"); do
	for n in 1 "$PAR"; do
		for p in "${PATHS[@]}"; do
			drop_caches
			out=$(transfer "${URL[$p]}" "$n")
			read -r secs fb <<<"$out"
			MIBS[$p.$n]+="$(mibs "$bytes" "$secs") "
			FB[$p.$n]+="$fb "
			[ "$p" = direct ] && direct_secs=$secs
			RATIO[$p.$n]+="$(awk -v d="$direct_secs" -v s="$secs" 'BEGIN { printf "%.2f", d / s }') "
		done
	done
done

med() { tr ' ' '\n' | grep . | median; }
echo "| path | transfer | MiB/s per run | median MiB/s | median first byte ms | median ratio to direct |"
echo "|---|---|---|---|---|---|"
for n in 1 "$PAR"; do
	what="1 GET"
	[ "$n" = 1 ] || what="$n ranged GETs"
	for p in "${PATHS[@]}"; do
		echo "| ${LABEL[$p]} | $what | ${MIBS[$p.$n]% } | $(med <<<"${MIBS[$p.$n]}") |" \
			"$(med <<<"${FB[$p.$n]}") | $(med <<<"${RATIO[$p.$n]}") |"
	done
done
echo
echo "(object ${SIZE_MIB} MiB, $RUNS runs, cold kernel page cache; first byte: the slowest" \
	"of the transfer's GETs; --s3-like: 20 ms, 90e6 B/s = 85.8 MiB/s per connection;" \
	"$(nproc) cores, server, proxy and curl on the same machine)"
