#!/bin/bash
# build-libfuse.sh - a pinned libfuse 3.17.2, static, in a private prefix,
# for FUSE passthrough (the kernel reading a cached file itself).
#
# Debian 12 ships libfuse 3.14, which has no passthrough API (3.16 and
# later do).  This fetches Debian's own source package of fuse3 3.17.2
# (the trixie release) with `apt-get source`, checks it against the
# hashes pinned below, and builds only the library, static, into
# deps/fuse3 under the repository (git ignores it).  meson.build finds it
# through PKG_CONFIG_PATH (scripts/lib/common.sh: fuse_pkgconfig_path);
# without it tierfs builds against the system's libfuse and mounts
# without passthrough.
#
# Idempotent: a prefix already holding this version is left as it is.
# Run as root (apt-get); scripts/setup.sh calls it.
#
# --example also builds libfuse's own passthrough_hp example (C++) into
# PREFIX/bin: the loader benchmark's floor, the least any FUSE daemon
# with kernel passthrough pays per file on this machine.
set -euo pipefail

EXAMPLE=0
case ${1:-} in
--example) EXAMPLE=1 ;;
"") ;;
*) echo "usage: build-libfuse.sh [--example]" >&2; exit 2 ;;
esac

VERSION=3.17.2
DEB_VERSION=3.17.2-3
# sha256 of the source package's files, as fetched on 2026-12-04
SHA_ORIG=3d932431ad94e86179e5265cddde1d67aa3bb2fb09a5bd35c641f86f2b5ed06f
SHA_DEBIAN=eaf7a177761ae8bf99ea97619f2cccf83f169b4f000e17b6106834e69456b5a2

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${TIERFS_FUSE_PREFIX:-$ROOT/deps/fuse3}
STAMP=$PREFIX/.tierfs-built

die() { echo "build-libfuse: ERROR: $*" >&2; exit 1; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$DEB_VERSION" ] &&
	{ [ "$EXAMPLE" = 0 ] || [ -x "$PREFIX/bin/passthrough_hp" ]; }; then
	echo "build-libfuse: ok: libfuse $DEB_VERSION in $PREFIX"
	exit 0
fi
tools=(apt-get dpkg-source meson ninja sha256sum)
[ "$EXAMPLE" = 1 ] && tools+=(g++)
for b in "${tools[@]}"; do
	command -v "$b" >/dev/null || die "missing $b (scripts/setup.sh installs it)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-libfuse.XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt with a private deb-src list and state: the machine's own sources
# and lists are left untouched
mkdir -p "$work/sources" "$work/lists/partial" "$work/cache/archives/partial"
cat >"$work/sources/trixie-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/sources"
	-o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -q)
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
	{ tail -n 20 "$work/apt.log"; die "apt-get update of the trixie source list failed"; }
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "fuse3=$DEB_VERSION") \
	>>"$work/apt.log" 2>&1 ||
	{ tail -n 20 "$work/apt.log"; die "apt-get source fuse3=$DEB_VERSION failed"; }

check() { # check FILE SHA
	local got
	got=$(sha256sum "$work/$1" | cut -d' ' -f1)
	[ "$got" = "$2" ] || die "$1: sha256 $got, pinned $2"
}
check "fuse3_$VERSION.orig.tar.gz" "$SHA_ORIG"
check "fuse3_$DEB_VERSION.debian.tar.xz" "$SHA_DEBIAN"

(cd "$work" && dpkg-source --no-check -x "fuse3_$DEB_VERSION.dsc" src) >>"$work/apt.log" 2>&1 ||
	{ tail -n 20 "$work/apt.log"; die "dpkg-source -x failed"; }
# the library alone: no fusermount (tierfs mounts as root), and the
# examples only when asked (passthrough_hp, kept; the others are built too)
examples=false
[ "$EXAMPLE" = 1 ] && examples=true
(cd "$work/src" &&
	meson setup b --prefix="$PREFIX" --libdir=lib -Ddefault_library=static -Dutils=false \
		-Dexamples=$examples -Dtests=false -Duseroot=false -Dudevrulesdir="$work/udev" &&
	ninja -C b && rm -rf "$PREFIX" && ninja -C b install &&
	if [ "$EXAMPLE" = 1 ]; then install -D -m 755 b/example/passthrough_hp "$PREFIX/bin/passthrough_hp"; fi) \
	>"$work/build.log" 2>&1 ||
	{ tail -n 30 "$work/build.log"; die "building libfuse $VERSION failed"; }
echo "$DEB_VERSION" >"$STAMP"
echo "build-libfuse: built libfuse $DEB_VERSION into $PREFIX"
