#!/usr/bin/env bash
# check-layers.sh - the include graph of src/ has no upward or sideways
# arrow: each folder includes only the folders (or headers) listed below.
# A read travels FUSE -> fs -> chunk cache (RAM, SSD, then the object
# store) and back; the control socket speaks to the fs's operator
# interface only.  Prints every include that breaks the rule and exits 1;
# exits 0 when there is none.
#
#   usage: scripts/check-layers.sh [SRC_DIR]
set -euo pipefail

src=${1:-$(cd "$(dirname "$0")/.." && pwd)/src}

# folder -> what it may include: a folder of src/, or one header of one
# ("fs/fs.h").  Files directly in src/ (the tierfs command: main.c and
# its config) may include anything.
declare -A allow=(
	[common]="common"
	[evict]="common evict"
	[s3]="common s3"
	[sim]="common evict sim"
	[tiers]="common evict s3 tiers"
	[fs]="common evict s3 fs tiers/chunk_cache.h tiers/chunk_id.h tiers/pin_set.h tiers/access_trace.h"
	[fuse]="common fuse fs/fs.h"
	[ctl]="common ctl fs/fs.h"
)

bad=0
checked=0
while IFS= read -r file; do
	rel=${file#"$src"/}
	folder=${rel%%/*}
	[ "$folder" = "$rel" ] && continue          # src/main.c, src/config.c
	if [ -z "${allow[$folder]+x}" ]; then
		echo "$rel: the folder '$folder' has no rule in $(basename "$0")"
		bad=1
		continue
	fi
	while IFS= read -r inc; do
		checked=$((checked + 1))
		target_folder=${inc%%/*}
		[ "$target_folder" = "$inc" ] && target_folder=.   # "config.h": the command's
		ok=0
		for a in ${allow[$folder]}; do
			if [ "$a" = "$target_folder" ] || [ "$a" = "$inc" ]; then
				ok=1
				break
			fi
		done
		if [ "$ok" = 0 ]; then
			echo "$rel includes \"$inc\": $folder/ may include only: ${allow[$folder]}"
			bad=1
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find "$src" -type f \( -name '*.c' -o -name '*.h' \) | sort)

if [ "$bad" = 0 ]; then
	echo "check-layers: ok ($checked includes)"
fi
exit "$bad"
