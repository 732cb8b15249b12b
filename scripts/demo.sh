#!/usr/bin/env bash
# demo.sh - the README's first command: set up, build, and show tierfs
# working, on a fresh Debian 12 machine (as root).
#
#   bash scripts/demo.sh                      # local radosgw + sample data
#   bash scripts/demo.sh s3://BUCKET[/PREFIX] # your bucket (read-only)
#
# Without a bucket it starts a throwaway radosgw on loopback, uploads a
# small sample dataset (shards, images, a label file), mounts it, lists
# it, reads every file back and checks each byte against what was
# uploaded, then unmounts and stops the server.  With a bucket it uses
# the usual AWS environment (AWS_ACCESS_KEY_ID..., AWS_ENDPOINT_URL,
# AWS_REGION) and only reads: it lists the tree and reads one file.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/common.sh
source "$ROOT/scripts/lib/common.sh"
SOURCE=${1:-}
MNT=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-demo-mnt.XXXXXX")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-demo-data.XXXXXX")
STARTED_RGW=0

cleanup() {
	if grep -q " $MNT " /proc/mounts 2>/dev/null; then
		"$ROOT/build/tierfs" unmount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	rmdir "$MNT" 2>/dev/null || true
	rm -rf "$WORK"
	if [ "$STARTED_RGW" = 1 ]; then
		bash "$ROOT/scripts/rgw/stop-rgw.sh" --purge >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

echo "== 1/5 install dependencies"
bash scripts/setup.sh

echo "== 2/5 build"
use_pinned_libfuse
[ -f build/build.ninja ] || meson setup build "${MESON_FUSE_OPTS[@]}" >/dev/null
ninja -C build >/dev/null
echo "built $ROOT/build/tierfs ($(build/tierfs --version))"

MOUNT_ARGS=()
if [ -z "$SOURCE" ]; then
	echo "== 3/5 start a local S3 server (radosgw) and upload a sample dataset"
	export RGW_DIR=${TMPDIR:-/tmp}/tierfs-demo-rgw
	STARTED_RGW=1
	rgw_start "$WORK/rgw.log" || { tail -n 30 "$WORK/rgw.log"; exit 1; }
	tail -n 1 "$WORK/rgw.log"
	S3UTIL=(build/tests/tierfs-s3util --endpoint "$S3_ENDPOINT" --path-style)
	BUCKET=tierfs-demo
	"${S3UTIL[@]}" mb "$BUCKET"
	mkdir -p "$WORK/data/train" "$WORK/data/val/images"
	for i in 0 1 2 3; do
		head -c $((3 * 1024 * 1024 + i * 4099)) /dev/urandom >"$WORK/data/train/shard-000$i.tar"
	done
	for i in $(seq -w 1 20); do
		head -c $((40000 + 997 * 10#$i)) /dev/urandom >"$WORK/data/val/images/img_$i.jpg"
	done
	printf 'file,label\n' >"$WORK/data/labels.csv"
	for i in $(seq -w 1 20); do printf 'val/images/img_%s.jpg,%d\n' "$i" $((10#$i % 5)) >>"$WORK/data/labels.csv"; done
	n=0
	(cd "$WORK/data" && find . -type f | sed 's|^\./||' | sort) >"$WORK/keys"
	while read -r key; do
		"${S3UTIL[@]}" put "$BUCKET" "datasets/demo/$key" "$WORK/data/$key" >/dev/null
		n=$((n + 1))
	done <"$WORK/keys"
	echo "uploaded $n objects ($(du -sh "$WORK/data" | cut -f1)) to s3://$BUCKET/datasets/demo/"
	SOURCE=s3://$BUCKET/datasets/demo
	MOUNT_ARGS=(--endpoint "$S3_ENDPOINT" --path-style)
else
	echo "== 3/5 using $SOURCE (read-only)"
fi

CACHE=$WORK/cache
echo "== 4/5 mount $SOURCE on $MNT (RAM tier + SSD tier in $CACHE)"
build/tierfs mount "$SOURCE" "$MNT" "${MOUNT_ARGS[@]}" --cache-dir "$CACHE"
grep " $MNT " /proc/mounts
echo "-- ls -l $MNT"
ls -l "$MNT"
echo "-- find $MNT | head"
find "$MNT" | head -n 12

if [ "$STARTED_RGW" = 1 ]; then
	echo "-- reading every file back and comparing with what was uploaded"
	bad=0
	while read -r key; do
		cmp -s "$WORK/data/$key" "$MNT/$key" || { echo "MISMATCH: $key"; bad=$((bad + 1)); }
	done <"$WORK/keys"
	[ "$bad" = 0 ] || { echo "demo: $bad file(s) differ"; exit 1; }
	echo "all $(wc -l <"$WORK/keys") files byte-identical"
	echo "-- labels.csv through the mount:"
	head -n 4 "$MNT/labels.csv"
	echo "-- the mount is read-only:"
	touch "$MNT/new-file" 2>&1 || true
	echo "-- remount on the same cache directory: every byte comes from the SSD tier"
	build/tierfs unmount "$MNT"
	build/tierfs mount "$SOURCE" "$MNT" "${MOUNT_ARGS[@]}" --cache-dir "$CACHE" -f \
		2>"$WORK/daemon.log" &
	for _ in $(seq 100); do grep -q " $MNT " /proc/mounts && break; sleep 0.1; done
	while read -r key; do
		cmp -s "$WORK/data/$key" "$MNT/$key" || { echo "MISMATCH after remount: $key"; exit 1; }
	done <"$WORK/keys"
	kill -USR1 "$(pgrep -f "tierfs mount $SOURCE $MNT" | head -n 1)"
	for _ in $(seq 50); do grep -q 'stats (SIGUSR1)' "$WORK/daemon.log" && break; sleep 0.1; done
	stats=$(grep 'stats (SIGUSR1)' "$WORK/daemon.log" | tail -n 1 | tr ' ' '\n')
	echo "all files byte-identical again; daemon counters (kill -USR1):"
	echo "$stats" | grep -E '^(s3\.gets|ssd\.hits|ssd\.entries|ssd\.bytes_used|ram\.hits)=' | sed 's/^/   /'
else
	first=$(find "$MNT" -type f -print -quit)
	if [ -n "$first" ]; then
		echo "-- first MiB of $first: $(head -c 1048576 "$first" | wc -c) bytes read"
	fi
fi

echo "== 5/5 unmount"
build/tierfs unmount "$MNT"
echo "demo: ok"
