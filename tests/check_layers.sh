#!/usr/bin/env bash
# check_layers.sh - the include graph of src/ keeps its layers: run by
# scripts/test.sh like every shell test (see scripts/check-layers.sh for
# the rule).  Also checks that the check itself fails on a broken tree.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/check-layers.sh" "$root/src" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/src" "$tmp/src"
echo '#include "tiers/ssd_tier.h"' >>"$tmp/src/ctl/ctl_daemon.c"
if bash "$root/scripts/check-layers.sh" "$tmp/src" >/dev/null; then
	echo "check-layers.sh passed a ctl/ file that includes a tier"
	exit 1
fi
echo "check_layers: ok"
