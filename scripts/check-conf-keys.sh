#!/bin/sh
# check-conf-keys.sh - every option config.c accepts is documented in
# conf/tierfs.conf, and the file documents no option config.c lacks.
#
#   scripts/check-conf-keys.sh [CONFIG_C [CONF]]
#
# "Documented" means a commented-out `#key = value` line whose paragraph
# (the comment lines since the last blank line) says what the default is
# ("Default" or "Defaults").  The key table is read from the opt_defs[]
# initialisers in src/config.c, one `{ "name", OPT_...` per line.
# Prints one line per problem and exits 1 if there is any, else prints
# "N keys documented" and exits 0.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
config_c=${1:-$root/src/config.c}
conf=${2:-$root/conf/tierfs.conf}

for f in "$config_c" "$conf"; do
	[ -r "$f" ] || { echo "check-conf-keys: cannot read $f" >&2; exit 2; }
done

keys=$(sed -n 's/^[[:space:]]*{ *"\([a-z0-9-]*\)", *OPT_.*/\1/p' "$config_c")
[ -n "$keys" ] || { echo "check-conf-keys: no option table found in $config_c" >&2; exit 2; }

# "key default-documented(0/1)" for every `#key = ...` line of the file
documented=$(awk '
	/^[[:space:]]*$/ { para = ""; next }
	/^#?[[:space:]]*[a-z][a-z0-9-]*[[:space:]]*=/ {
		line = $0
		sub(/^#?[[:space:]]*/, "", line)
		sub(/[[:space:]]*=.*/, "", line)
		print line, (para ~ /Default/ ? 1 : 0)
		next
	}
	{ para = para "\n" $0 }
' "$conf")

status=0
n=0
for k in $keys; do
	n=$((n + 1))
	d=$(printf '%s\n' "$documented" | awk -v k="$k" '$1 == k { print $2; exit }')
	if [ -z "$d" ]; then
		echo "missing: $k (no '#$k = ...' line in $conf)"
		status=1
	elif [ "$d" != 1 ]; then
		echo "no default: $k (its paragraph in $conf does not say 'Default')"
		status=1
	fi
done
for k in $(printf '%s\n' "$documented" | awk '{ print $1 }'); do
	if ! printf '%s\n' "$keys" | grep -qx -- "$k"; then
		echo "unknown: $k (documented in $conf, not an option of $config_c)"
		status=1
	fi
done
[ "$status" = 0 ] && echo "$n keys documented"
exit "$status"
