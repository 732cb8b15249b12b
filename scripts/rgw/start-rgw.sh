#!/bin/bash
# start-rgw.sh - bring up a throwaway single-node Ceph cluster (1 mon, 1 osd,
# optional mgr) plus radosgw (S3) on 127.0.0.1, entirely under one directory.
# This is tierfs's own copy of the shared ceph-rgw/start-rgw.sh, used by the
# integration tests and benchmarks. The traps it avoids are commented where
# they are handled; keep them avoided: mon client mode crc, paxos propose
# interval, tcp_nodelay, malloc thresholds, setsid + pid files (so do not
# run it under `set -m`, and stop it only with stop-rgw.sh).
# Modelled on ceph's src/vstart.sh; uses only the Debian 12 packages
#   ceph-mon ceph-osd radosgw ceph-common   (+ ceph-mgr if RGW_WITH_MGR=1)
# installed by scripts/setup.sh.
# Everything (conf, mon/osd data, logs, sockets, pid files) lives in $RGW_DIR.
# Stop with stop-rgw.sh (kills exactly the pids recorded in $RGW_DIR/pid/).
#
# Environment knobs (all optional):
#   RGW_DIR          state directory, wiped on start      (${TMPDIR:-/tmp}/tierfs-rgw)
#   RGW_PORT         S3 HTTP port on 127.0.0.1            (7480)
#   RGW_MON_PORT     mon msgr2 port; msgr1 uses +1        (40000)
#   RGW_OBJECTSTORE  bluestore | memstore                 (bluestore)
#                    bluestore: data in a sparse file $RGW_DIR/osd.0/block,
#                      OSD RSS stays ~200 MiB; startup ~6 s
#                    memstore: data in the OSD's RAM (~2x the bytes stored,
#                      freed ~30 s after delete/overwrite); startup ~3 s
#   RGW_STORE_BYTES  size the OSD reports / size of the sparse file (16 GiB)
#   RGW_WITH_MGR     1 = also start ceph-mgr (not needed for S3) (0)
#   RGW_START_TIMEOUT  give up (and kill what was started) after N s (120)
#   RGW_ACCESS_KEY / RGW_SECRET_KEY   S3 credentials of user "tester"
set -euo pipefail

DIR=${RGW_DIR:-${TMPDIR:-/tmp}/tierfs-rgw}
RGW_PORT=${RGW_PORT:-7480}
MON_PORT=${RGW_MON_PORT:-40000}
OBJECTSTORE=${RGW_OBJECTSTORE:-bluestore}
STORE_BYTES=${RGW_STORE_BYTES:-17179869184}
WITH_MGR=${RGW_WITH_MGR:-0}
START_TIMEOUT=${RGW_START_TIMEOUT:-120}
ACCESS_KEY=${RGW_ACCESS_KEY:-0555b35654ad1656d804}
SECRET_KEY=${RGW_SECRET_KEY:-h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==}

case $OBJECTSTORE in bluestore | memstore) ;; *) echo "start-rgw: RGW_OBJECTSTORE must be bluestore or memstore" >&2; exit 2 ;; esac
T0=$(date +%s.%N)
SECONDS=0
log() { echo "[start-rgw $(awk -v a="$T0" -v b="$(date +%s.%N)" "BEGIN{printf \"%.2f\", b-a}")s] $*"; }
die() { echo "start-rgw: ERROR: $*" >&2; exit 1; }

missing=()
for b in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool uuidgen curl setsid; do
    command -v "$b" >/dev/null || missing+=("$b")
done
[ "${#missing[@]}" -eq 0 ] || die "missing program(s): ${missing[*]}; run scripts/setup.sh (as root) to install them"
if [ "$WITH_MGR" = 1 ]; then
    command -v ceph-mgr >/dev/null || die "RGW_WITH_MGR=1 but ceph-mgr is missing (apt-get install -y ceph-mgr)"
fi

# refuse to clobber a cluster that is still running from this directory
if [ -d "$DIR/pid" ]; then
    for f in "$DIR"/pid/*.pid; do
        [ -e "$f" ] || continue
        p=$(cat "$f")
        if [ -d "/proc/$p" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF "$DIR/ceph.conf"; then
            die "cluster in $DIR still running (pid $p from $f); run stop-rgw.sh first"
        fi
    done
fi
for port in "$RGW_PORT" "$MON_PORT" "$((MON_PORT + 1))"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port on 127.0.0.1 already in use"
    fi
done

rm -rf "$DIR"
mkdir -p "$DIR"/{pid,log,run,crash,mon.a,osd.0,mgr.x,rgw.a}
DIR=$(cd "$DIR" && pwd)
CONF=$DIR/ceph.conf
FSID=$(uuidgen)
MON_ADDRV="[v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$((MON_PORT + 1))]"

cat >"$CONF" <<EOF
[global]
fsid = $FSID
mon host = $MON_ADDRV
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
keyring = $DIR/keyring
run dir = $DIR/run
crash dir = $DIR/crash
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon max pg per osd = 1000
mon data avail warn = 2
mon data avail crit = 1
mon osd full ratio = .98
mon osd backfillfull ratio = .97
mon osd nearfull ratio = .96
osd failsafe full ratio = .99
rgw_rados_pool_pg_num_min = 8

[mon]
mon data = $DIR/mon.\$id
# commit map changes at once instead of batching them for 1 s: each pool
# radosgw creates (7 of them) otherwise costs ~2 s of startup / first use
paxos propose interval = 0.01
paxos min wait = 0.01

[mgr]
mgr data = $DIR/mgr.\$id

[osd]
osd data = $DIR/osd.\$id
osd objectstore = $OBJECTSTORE
memstore device bytes = $STORE_BYTES
memstore page set = false
bluestore block size = $STORE_BYTES
bluestore block create = true
bluestore fsck on mount = false
osd memory target = 1073741824
osd op num shards = 2
osd op num threads per shard = 2

[client]
log to file = false
log to stderr = true
err to stderr = true

[client.rgw.a]
# radosgw defaults to ms_mon_client_mode=secure, impossible with auth none
ms mon client mode = crc
rgw data = $DIR/rgw.a
log to file = true
log file = $DIR/log/rgw.a.log
# tcp_nodelay=1: without it every response on a reused keep-alive connection
# waits ~40 ms (Nagle vs. delayed ACK between header and body writes)
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT tcp_nodelay=1
# reclaim deleted/overwritten object data after ~30 s instead of 2 h
# (matters with memstore, where that data is held in the OSD's RAM)
rgw gc obj min wait = 30
rgw gc processor period = 30
rgw thread pool size = 128
rgw dns name = localhost
EOF

# Debian's ceph is built without tcmalloc, so glibc malloc tuning matters:
# - by default every 4 MiB message buffer is a fresh mmap(), and page-faulting
#   it in costs radosgw (reads) / the OSD (writes) ~1 CPU-second per 256 MiB
#   in this VM; a 32 MiB mmap threshold and a high trim threshold keep the
#   buffers on the heap and reuse them (3x faster GETs here).
# - memstore is the exception: its objects ARE those buffers, so for it a low
#   fixed threshold makes freed object data go back to the kernel (after GC)
#   instead of the OSD's RSS staying at its high-water mark.
FAST_MALLOC="MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456"
if [ "$OBJECTSTORE" = memstore ]; then
    OSD_MALLOC="MALLOC_MMAP_THRESHOLD_=1048576"
else
    OSD_MALLOC=$FAST_MALLOC
fi

C=(-c "$CONF")
CEPH=(ceph -c "$CONF" --connect-timeout 10)

# on any failure, kill (by recorded pid) whatever this run already started
cleanup_on_failure() {
    local rc=$? f p
    [ "$rc" = 0 ] && return
    for f in "$DIR"/pid/*.pid; do
        [ -e "$f" ] || continue
        p=$(cat "$f")
        if [ -d "/proc/$p" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF "$CONF"; then
            kill -KILL "$p" 2>/dev/null && echo "start-rgw: killed $(basename "$f" .pid) (pid $p)" >&2
        fi
        rm -f "$f"
    done
    echo "start-rgw: FAILED (exit $rc); logs in $DIR/log" >&2
}
trap cleanup_on_failure EXIT

# start DAEMON_NAME cmd... : run in the foreground (-f) as a background job in
# its own session, stdout/stderr to log/NAME.out, pid to pid/NAME.pid
start() {
    local name=$1; shift
    setsid "$@" -f >>"$DIR/log/$name.out" 2>&1 </dev/null &
    local pid=$!
    disown "$pid"
    echo "$pid" >"$DIR/pid/$name.pid"
    sleep 0.2
    [ -d "/proc/$pid" ] || { tail -n 20 "$DIR/log/$name.out" "$DIR/log/$name.log" 2>/dev/null; die "$name exited at once"; }
}
# alive NAME LOG: fail if daemon NAME died or the start deadline has passed
alive() {
    [ -d "/proc/$(cat "$DIR/pid/$1.pid")" ] || { tail -n 30 "$DIR/log/$1.out" "$DIR/log/$2" 2>/dev/null; die "$1 died"; }
    [ "$SECONDS" -lt "$START_TIMEOUT" ] || { tail -n 30 "$DIR/log/$2" 2>/dev/null; die "timed out after ${START_TIMEOUT}s waiting for $1"; }
}

# --- mon ---------------------------------------------------------------------
log "fsid $FSID, dir $DIR, objectstore $OBJECTSTORE"
ceph-authtool --create-keyring --gen-key -n mon. --cap mon 'allow *' "$DIR/keyring" >/dev/null
ceph-authtool --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mds 'allow *' --cap mgr 'allow *' "$DIR/keyring" >/dev/null
monmaptool --create --fsid "$FSID" --addv a "$MON_ADDRV" "$DIR/monmap" >/dev/null
ceph-mon "${C[@]}" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring" \
    >"$DIR/log/mon.a.mkfs" 2>&1 || { cat "$DIR/log/mon.a.mkfs"; die "mon mkfs failed"; }
start mon.a ceph-mon "${C[@]}" -i a
until "${CEPH[@]}" mon stat >/dev/null 2>&1; do alive mon.a mon.a.log; sleep 0.2; done
log "mon up"

# --- mgr (optional) ----------------------------------------------------------
if [ "$WITH_MGR" = 1 ]; then
    start mgr.x ceph-mgr "${C[@]}" -i x
fi

# --- osd ---------------------------------------------------------------------
OSD_UUID=$(uuidgen)
OSD_ID=$("${CEPH[@]}" osd new "$OSD_UUID")
[ "$OSD_ID" = 0 ] || die "unexpected osd id '$OSD_ID'"
ceph-osd "${C[@]}" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/osd.0.mkfs" 2>&1 ||
    { tail -n 30 "$DIR/log/osd.0.mkfs" "$DIR/log/osd.0.log"; die "osd mkfs failed"; }
# shellcheck disable=SC2086 # *_MALLOC hold VAR=value words for env, split on purpose
start osd.0 env $OSD_MALLOC ceph-osd "${C[@]}" -i 0
until "${CEPH[@]}" osd dump 2>/dev/null | grep -q '^osd\.0 up '; do alive osd.0 osd.0.log; sleep 0.2; done
log "osd up"

# --- radosgw -----------------------------------------------------------------
# shellcheck disable=SC2086
start rgw.a env $FAST_MALLOC radosgw "${C[@]}" -n client.rgw.a
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RGW_PORT/")" = 200 ]; do
    alive rgw.a rgw.a.log; sleep 0.2
done
log "radosgw answering on http://127.0.0.1:$RGW_PORT"

# --max-buckets: radosgw's default of 1,000 buckets a user is reached by
# the test suite run five times in a row against one server (each run
# leaves a few hundred empty buckets: fixtures empty theirs, and the
# server is thrown away afterwards)
radosgw-admin "${C[@]}" user create --uid=tester --display-name=tester --max-buckets=1000000 \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >"$DIR/log/user-create.json" 2>"$DIR/log/user-create.err" ||
    { cat "$DIR/log/user-create.err"; die "radosgw-admin user create failed"; }

cat >"$DIR/env" <<EOF
export S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY='$SECRET_KEY'
export AWS_DEFAULT_REGION=us-east-1
export CEPH_CONF=$CONF
EOF
log "ready: endpoint http://127.0.0.1:$RGW_PORT user tester (credentials in $DIR/env)"
