# common.sh - helpers sourced by tierfs's scripts (test, demo, bench).

# free_port: print a TCP port P on 127.0.0.1 such that nobody listens on P
# or P+1 (radosgw's monitor uses two consecutive ports).  Below the
# kernel's ephemeral range: a port in it can be taken by any outgoing
# connection between this check and the bind (a radosgw monitor once
# failed to start so).
free_port() {
	local p low=32768 span
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	span=$((low - 2 - 10000))
	[ "$span" -gt 1000 ] || span=20000
	for _ in $(seq 200); do
		p=$((10000 + RANDOM % span))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# rgw_start: start a throwaway radosgw in $RGW_DIR on free ports and export
# its endpoint and credentials (S3_ENDPOINT, AWS_*).  Output goes to $1.
rgw_start() {
	local log=$1
	RGW_PORT=$(free_port) && RGW_MON_PORT=$(free_port) || return 1
	export RGW_PORT RGW_MON_PORT
	bash "$(dirname "${BASH_SOURCE[0]}")/../rgw/start-rgw.sh" >"$log" 2>&1 || return 1
	# shellcheck disable=SC1091
	source "$RGW_DIR/env"
	export S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION
}

# use_pinned_libfuse: let meson find the libfuse that scripts/build-libfuse.sh
# built under deps/fuse3 (passthrough), before the system's: sets
# MESON_FUSE_OPTS, the option to give `meson setup` (an option, not only
# the environment, so that `--reconfigure` of an older build sees it).
use_pinned_libfuse() {
	local pc
	pc="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/deps/fuse3/lib/pkgconfig"
	MESON_FUSE_OPTS=()
	if [ -d "$pc" ]; then
		MESON_FUSE_OPTS=("-Dpkg_config_path=$pc")
	fi
}
