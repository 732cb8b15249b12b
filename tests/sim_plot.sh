#!/usr/bin/env bash
# sim_plot.sh - tierfs-sim --plot writes a real PNG, and says so when it cannot.
#
#   bash tests/sim_plot.sh [TIERFS_SIM]
#
# The binary is the argument, else $TIERFS_SIM_BIN (tests/meson.build sets
# it, as scripts/test.sh sets TIERFS_BIN for the integration tests), else
# build/tierfs-sim.  Needs gnuplot (scripts/setup.sh installs gnuplot-nox).
# Checks:
#   1. --plot FILE exits 0 and FILE is a PNG (magic bytes) of more than 1 KB;
#   2. --plot into a directory that does not exist exits 1, names the file
#      on stderr and still prints the table;
#   3. without gnuplot in PATH: exit 1, a message naming the file, no file.
# Exit status 0 only when every check passed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIM=${1:-${TIERFS_SIM_BIN:-$ROOT/build/tierfs-sim}}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-sim-plot.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0

fail() { echo "FAIL: $*" >&2; FAILED=1; }

[ -x "$SIM" ] || { echo "sim_plot.sh: no executable tierfs-sim at $SIM" >&2; exit 1; }
command -v gnuplot >/dev/null ||
	{ echo "sim_plot.sh: gnuplot not in PATH (bash scripts/setup.sh installs gnuplot-nox)" >&2; exit 1; }

GEN=(--gen epoch-shuffled --items 2000 --epochs 3)

# 1. a PNG of more than 1 KB
png=$TMP/plot.png
rc=0
"$SIM" "${GEN[@]}" --plot "$png" >"$TMP/out1" 2>"$TMP/err1" || rc=$?
if [ "$rc" != 0 ]; then
	fail "--plot $png: exit $rc"
	cat "$TMP/err1" >&2
elif [ ! -f "$png" ]; then
	fail "--plot $png: exit 0 but no file"
else
	magic=$(head -c 4 "$png" | od -An -tx1 | tr -d ' \n')
	size=$(stat -c %s "$png")
	[ "$magic" = 89504e47 ] || fail "$png does not start with \\x89PNG (first bytes $magic)"
	[ "$size" -gt 1024 ] || fail "$png is only $size bytes"
	# without --sizes, --plot sweeps ten sizes 0.05 .. 0.9
	rows=$(grep -c '^| epoch-shuffled |' "$TMP/out1" || true)
	[ "$rows" = 10 ] || fail "--plot without --sizes printed $rows rows, not 10"
	[ "$FAILED" = 1 ] || echo "ok   --plot: PNG of $size bytes, $rows sizes"
fi

# 2. an output directory that does not exist
bad=$TMP/no/such/dir/plot.png
rc=0
"$SIM" "${GEN[@]}" --sizes 0.5 --plot "$bad" >"$TMP/out2" 2>"$TMP/err2" || rc=$?
if [ "$rc" = 0 ]; then
	fail "--plot $bad: exit 0"
elif ! grep -qF "$bad" "$TMP/err2"; then
	fail "--plot $bad: exit $rc, but stderr does not name the file: $(cat "$TMP/err2")"
elif ! grep -q '^| epoch-shuffled | 1000 ' "$TMP/out2"; then
	fail "--plot $bad: the table was not printed"
elif [ -e "$bad" ]; then
	fail "--plot $bad: a file appeared"
else
	echo "ok   --plot into a missing directory: exit $rc, $(head -n 1 "$TMP/err2")"
fi

# 3. no gnuplot: env resolves the binary before PATH changes
nogp=$TMP/nogp.png
rc=0
env PATH="$TMP/empty" "$SIM" "${GEN[@]}" --sizes 0.5 --plot "$nogp" >/dev/null 2>"$TMP/err3" || rc=$?
if [ "$rc" != 1 ]; then
	fail "--plot without gnuplot: exit $rc, not 1"
elif ! grep -qF "$nogp" "$TMP/err3" || ! grep -q gnuplot "$TMP/err3"; then
	fail "--plot without gnuplot: unclear message: $(cat "$TMP/err3")"
elif compgen -G "$nogp*" >/dev/null; then
	fail "--plot without gnuplot: left $(compgen -G "$nogp*")"
else
	echo "ok   --plot without gnuplot: exit 1, $(head -n 1 "$TMP/err3")"
fi

exit "$FAILED"
