#!/usr/bin/env bash
# write_mode.sh - how fast the cache disk reads back a file written the
# way the SSD tier's writer writes chunks, with O_DIRECT and through the
# page cache: the first read after the write, and a second one.  No
# tierfs here: it measures the disk (and whatever is under it), so the
# warm rows of the other benchmarks can be read against it.
#
#   bash scripts/bench/write_mode.sh [DIR (${TMPDIR:-/var/tmp})] [SIZE_MIB (2048)] [RUNS (3)]
#
# Each run writes SIZE_MIB in 8 MiB chunks into a new file in DIR, in
# the order the writer sees them (shuffled within each 8, as read-ahead
# completes them), a sync every 4 chunks and each chunk then read back
# with O_DIRECT (the writer's check); then drops the page cache and
# reads the file twice with dd (page cache dropped before each).  Needs
# root (drop_caches) and python3.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"
DIR=${1:-${TMPDIR:-/var/tmp}}
SIZE_MIB=${2:-2048}
RUNS=${3:-3}
[[ $SIZE_MIB =~ ^[0-9]+$ ]] && [ "$SIZE_MIB" -ge 64 ] || { echo "write_mode.sh: SIZE_MIB must be 64 or more" >&2; exit 2; }
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || { echo "write_mode.sh: RUNS must be 1 or more" >&2; exit 2; }
FILE=$(mktemp "$DIR/tierfs-write-mode.XXXXXX")
trap 'rm -f "$FILE"' EXIT

# write MODE: the file, as the writer writes it
write() {
	rm -f "$FILE"
	python3 - "$FILE" "$1" "$SIZE_MIB" <<'EOF'
import mmap, os, random, sys
path, mode, size_mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
cs = 8 << 20
n = size_mib * (1 << 20) // cs
buf = mmap.mmap(-1, cs)          # page-aligned, as the RAM tier's buffers
buf.write(os.urandom(1 << 20) * 8)
back = mmap.mmap(-1, cs)
order = list(range(n))
rng = random.Random(1)
for i in range(0, n, 8):
    w = order[i:i + 8]
    rng.shuffle(w)
    order[i:i + 8] = w
flags = os.O_WRONLY | os.O_CREAT | (os.O_DIRECT if mode == "direct" else 0)
for b in range(0, n, 4):
    fd = os.open(path, flags, 0o600)
    for k in order[b:b + 4]:
        os.pwrite(fd, buf, k * cs)
    os.fdatasync(fd)
    os.close(fd)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    for k in order[b:b + 4]:
        os.preadv(fd, [back], k * cs)
    os.close(fd)
EOF
}

# read_mibs: one read of the file, page cache dropped first, in MiB/s
read_mibs() {
	drop_caches
	mibs $((SIZE_MIB * 1048576)) "$(secs_of dd if="$FILE" of=/dev/null bs=1M status=none)"
}

echo "| written | run | first read MiB/s | second read MiB/s |"
echo "|---|---:|---:|---:|"
for r in $(seq "$RUNS"); do
	for mode in direct buffered; do
		write "$mode"
		first=$(read_mibs)
		second=$(read_mibs)
		label=$([ "$mode" = direct ] && echo "O_DIRECT" || echo "page cache")
		echo "| $label | $r | $first | $second |"
	done
done
echo
echo "($SIZE_MIB MiB in $DIR, $(df -T "$DIR" | awk 'NR == 2 { print $2 " on " $1 }'))"
