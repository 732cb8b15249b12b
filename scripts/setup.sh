#!/bin/bash
# setup.sh - install everything tierfs needs to build, test and benchmark on a
# fresh Debian 12 machine. Run as root (no sudo). Idempotent and cheap when
# nothing is missing: tests call it on every run, so the fast path is one
# dpkg-query and no apt at all.
#
# Invariants:
#   - the package list below is the whole list; meson.build's pkg-config
#     dependencies and the test/bench tools all come from it
#   - apt-get update runs at most once, and only if a package is missing
#   - /dev/fuse exists afterwards (created with mknod c 10 229 if absent,
#     as in some containers)
set -euo pipefail

PKGS=(
    # build (help2man: the tierfs(1) man page, made from tierfs --help)
    meson ninja-build pkg-config gcc libc6-dev help2man
    # libraries (pkg-config dependencies of the daemon and tests)
    libfuse3-dev fuse3 libcurl4-openssl-dev libssl-dev ca-certificates
    libxml2-dev libinih-dev libcriterion-dev librocksdb-dev libxxhash-dev
    libjson-c-dev
    # local S3 server (scripts/rgw/start-rgw.sh)
    ceph-mon ceph-osd radosgw ceph-common uuid-runtime curl
    # tests, comparisons and benchmarks (g++: libfuse's passthrough_hp
    # example, the loader benchmark's FUSE floor)
    python3 s3fs rclone fio psmisc procps util-linux kmod g++
    # tests/tools/credserver.py: RS256 checks of service-account assertions
    python3-cryptography
    # contrib/python's PyTorch sampler: its test and the loader benchmark
    # (Debian's torch is for /usr/bin/python3)
    python3-torch
    # tierfs-sim --plot (tests/sim_plot.sh)
    gnuplot-nox
    # scripts/fuzz.sh: clang with libFuzzer (its runtime is in
    # libclang-rt-14-dev); test_hostile_keys traces the daemon with strace
    clang libclang-rt-14-dev strace
)

die() { echo "setup: ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"
command -v dpkg-query >/dev/null || die "dpkg-query not found (Debian 12 expected)"

# missing_pkgs: print the packages of PKGS that are not fully installed.
# dpkg-query -W exits non-zero and prints nothing for unknown packages, so
# compare its output with the list instead of trusting its exit status.
missing_pkgs() {
    dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null |
        awk -v want="${PKGS[*]}" '
            $2 == "ii" { ok[$1] = 1 }
            END { n = split(want, w, " "); for (i = 1; i <= n; i++) if (!(w[i] in ok)) print w[i] }'
}

mapfile -t MISSING < <(missing_pkgs)
if [ "${#MISSING[@]}" -eq 0 ]; then
    apt_note="all ${#PKGS[@]} packages present"
else
    echo "setup: installing ${#MISSING[@]} missing package(s): ${MISSING[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # only the missing ones: naming an installed package would upgrade it,
    # e.g. ceph under a radosgw another test is running
    apt-get install -y -q --no-install-recommends "${MISSING[@]}"
    mapfile -t STILL < <(missing_pkgs)
    [ "${#STILL[@]}" -eq 0 ] || die "still missing after apt-get install: ${STILL[*]}"
    apt_note="installed ${MISSING[*]}"
fi

fuse_note="/dev/fuse present"
if [ ! -e /dev/fuse ]; then
    mknod -m 0666 /dev/fuse c 10 229 || die "cannot create /dev/fuse (mknod c 10 229)"
    fuse_note="/dev/fuse created"
elif [ ! -c /dev/fuse ]; then
    die "/dev/fuse exists but is not a character device"
fi

# libfuse >= 3.16 for FUSE passthrough: a pinned build of Debian's own
# source package, static, under deps/ (Debian 12 ships 3.14)
bash "$(dirname "$0")/build-libfuse.sh" || die "scripts/build-libfuse.sh failed"

echo "setup: ok: $apt_note; $fuse_note"
