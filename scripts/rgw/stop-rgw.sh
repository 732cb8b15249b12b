#!/bin/bash
# stop-rgw.sh - stop the daemons started by start-rgw.sh, by the pids in
# $RGW_DIR/pid/*.pid only (each pid is checked to still be a process whose
# command line names $RGW_DIR/ceph.conf, so a recycled pid is never hit).
# This is tierfs's own copy of the shared /work/shared/ceph-rgw/stop-rgw.sh;
# never replace it with a kill by process name: other clusters (other
# RGW_DIRs) may be running on the same machine.
#   RGW_DIR   same as for start-rgw.sh (${TMPDIR:-/tmp}/tierfs-rgw)
#   --purge   also delete $RGW_DIR afterwards
set -u
DIR=${RGW_DIR:-${TMPDIR:-/tmp}/tierfs-rgw}
[ -d "$DIR/pid" ] || { echo "stop-rgw: nothing to stop in $DIR"; exit 0; }
DIR=$(cd "$DIR" && pwd)

ours() { [ -d "/proc/$1" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$DIR/ceph.conf"; }

# rgw first, then mgr, osd, mon.  The data is throwaway, so the OSD is killed
# with SIGKILL straight away (memstore would otherwise dump all objects to disk).
for name in rgw.a mgr.x osd.0 mon.a; do
    f=$DIR/pid/$name.pid
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if ours "$pid"; then
        if [ "$name" = osd.0 ]; then sig=KILL; else sig=TERM; fi
        kill -s "$sig" "$pid" 2>/dev/null
        for _ in $(seq 50); do ours "$pid" || break; sleep 0.1; done
        if ours "$pid"; then kill -s KILL "$pid" 2>/dev/null; sleep 0.2; fi
        echo "stop-rgw: stopped $name (pid $pid, SIG$sig)"
    fi
    rm -f "$f"
done
if [ "${1:-}" = --purge ]; then rm -rf "$DIR"; echo "stop-rgw: removed $DIR"; fi
exit 0
