#!/bin/sh
# man-help.sh - `tierfs --help` and `tierfs --version` as help2man(1) reads
# them.  meson.build runs help2man on this script, with TIERFS_BIN set to
# the built binary, to make the tierfs(1) man page from the very text
# `tierfs --help` prints.
#
#   TIERFS_BIN=build/tierfs scripts/man-help.sh --help | --version
#
# --version is the binary's own.  --help is too, word for word, except for
# the shape of its usage block: help2man takes a synopsis only from a
# "Usage:" line followed by "  or:" lines, so the first line's "usage:"
# becomes "Usage:", each further "tierfs ..." line of the block an
# "  or:  tierfs ..." line, and a note inside the block (the line in
# parentheses) moves just after it, as a paragraph of its own.  Later
# indented "tierfs ..." lines (the control commands) are each made a
# paragraph of their own, which help2man would otherwise run together.
set -eu

bin=${TIERFS_BIN:?set TIERFS_BIN to the tierfs binary}

case ${1:-} in
--version)
	exec "$bin" --version
	;;
--help)
	text=$("$bin" --help)
	printf '%s\n' "$text" | awk '
		NR == 1 { sub(/^usage:/, "Usage:"); print; in_usage = 1; next }
		in_usage && /^[ \t]*$/ {
			in_usage = 0
			if (notes != "")
				printf "\n%s", notes
			print
			next
		}
		in_usage && /^ +tierfs / { sub(/^ +/, "  or:  "); print; next }
		in_usage { sub(/^ +/, ""); notes = notes $0 "\n"; next }
		/^ +tierfs / { print; print ""; next }
		{ print }
	'
	;;
*)
	echo "usage: TIERFS_BIN=PATH man-help.sh --help | --version" >&2
	exit 2
	;;
esac
