#!/usr/bin/env bash
# test_python_sampler.sh - contrib/python's PlanSampler against a real
# mount: a PyTorch DataLoader with 2 workers reads a shuffled dataset
# through tierfs (radosgw behind the fault proxy, 30 ms before each first
# byte), the sampler hands each epoch's order over as a plan, and
# tests/python/test_tierfs_plan.py checks every sample's bytes, that the
# plan was followed (files fetched ahead, each fetched once), and that a
# sampler facing no tierfs mount warns and goes on.
# Needs radosgw's S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (as
# scripts/test.sh exports them), TIERFS_BIN, and Debian's python3-torch.
# Prints "ok N - ..." / "not ok N - ..." lines; exit 0 only if all pass.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TIERFS_BIN:-$root/build/tierfs}
tools=$(dirname "$bin")/tests
py=/usr/bin/python3
fail() { echo "not ok - $*"; exit 1; }

[ -x "$bin" ] || fail "tierfs binary $bin not found"
[ -n "${S3_ENDPOINT:-}" ] && [ -n "${AWS_ACCESS_KEY_ID:-}" ] ||
	fail "needs S3_ENDPOINT and AWS_* of a radosgw (run through scripts/test.sh)"
$py -c 'import torch' 2>/dev/null || fail "$py cannot import torch (python3-torch)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-pytest.XXXXXX")
bucket=pyplan-$$-$RANDOM
mnt=$tmp/mnt
proxy_pid=
s3u() { "$tools/tierfs-s3util" --endpoint "$S3_ENDPOINT" --path-style "$@"; }
cleanup() {
	"$bin" unmount "$mnt" >/dev/null 2>&1 || umount -l "$mnt" 2>/dev/null
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
	for k in $(s3u ls "$bucket" 2>/dev/null | awk '{ print $NF }'); do
		s3u rm "$bucket" "$k" >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# 4 classes x 40 files, 40 to 200 KB (ImageFolder's layout)
s3u mb "$bucket" >/dev/null || fail "create bucket $bucket"
sizes=(40000 93000 147000 200000)
for c in 0 1 2 3; do
	s3u put-many "$bucket" "train/c$c/img" 40 "${sizes[$c]}" $((100 + c)) 8 >/dev/null ||
		fail "upload class $c"
done

# the reference: the objects straight from radosgw, crc32 and size of each
s3u get-many "$bucket" train/ "$tmp/ref" 8 >/dev/null || fail "download the reference copy"
$py - "$tmp/ref" >"$tmp/ref.json" <<'PY' || fail "checksum the reference copy"
import json, os, sys, zlib
ref = {}
for d, _, names in os.walk(sys.argv[1]):
    for n in names:
        data = open(os.path.join(d, n), "rb").read()
        ref[os.path.relpath(os.path.join(d, n), sys.argv[1])] = [zlib.crc32(data), len(data)]
json.dump(ref, sys.stdout)
PY

"$tools/tierfs-faultproxy" --listen 127.0.0.1:0 --port-file "$tmp/port" \
	--upstream "${S3_ENDPOINT#http://}" --latency-ms 30 >"$tmp/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 600); do [ -s "$tmp/port" ] && break; sleep 0.1; done   # <= 60 s
[ -s "$tmp/port" ] || fail "fault proxy did not start: $(cat "$tmp/proxy.log")"
proxy=http://127.0.0.1:$(cat "$tmp/port")

mkdir -p "$mnt"
"$bin" mount "s3://$bucket" "$mnt" --endpoint "$proxy" --path-style \
	--scan-prefetch 8 >"$tmp/mount.log" 2>&1 ||
	fail "mount: $(cat "$tmp/mount.log")"

TIERFS_BIN=$bin PYTHONPATH=$root/contrib/python $py "$root/tests/python/test_tierfs_plan.py" \
	"$mnt" "$proxy" "$tmp"
