#!/bin/sh
# test_mount_helper.sh - scripts/mount.tierfs turns fstab options into the
# exact `tierfs mount` command line, refuses what it cannot honour, passes
# values as single arguments (no eval), and follows `tierfs --help`; and
# scripts/check-conf-keys.sh finds conf/tierfs.conf complete and notices a
# missing key.  Needs the tierfs binary (for --help only; nothing mounts):
# TIERFS_BIN, else tierfs next to TIERFS_SIM_BIN, else build/tierfs.
# Prints "ok N - ..." / "not ok N - ..." lines; exit 0 only if all pass.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
helper=$root/scripts/mount.tierfs
if [ -n "${TIERFS_BIN:-}" ]; then
	real=$TIERFS_BIN
elif [ -n "${TIERFS_SIM_BIN:-}" ]; then
	real=$(dirname "$TIERFS_SIM_BIN")/tierfs
else
	real=$root/build/tierfs
fi
[ -x "$real" ] || { echo "not ok 1 - tierfs binary $real not found"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tierfs-mount-helper.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/stub"
ln -s "$real" "$tmp/bin/tierfs"
T=$tmp/bin/tierfs

# a stand-in tierfs for runs that are not -f: --help from the real one;
# otherwise records its arguments one per line and exits $STUB_RC
cat >"$tmp/stub/tierfs" <<EOF
#!/bin/sh
[ "\$1" = --help ] && exec "$real" --help
for a in "\$@"; do printf '%s\n' "\$a"; done >"$tmp/stub/args"
exit \${STUB_RC:-0}
EOF
chmod +x "$tmp/stub/tierfs"

n=0
failed=0
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }

# fake NAME EXPECTED ARGS...: `mount.tierfs -f ARGS` prints EXPECTED, exits 0
fake() {
	name=$1 want=$2
	shift 2
	got=$(TIERFS_BIN=$T "$helper" "$@" -f 2>"$tmp/err")
	rc=$?
	if [ "$rc" = 0 ] && [ "$got" = "$want" ]; then
		pass "$name"
	else
		fail "$name"
		echo "#   want: $want"
		echo "#   got:  $got (exit $rc) $(cat "$tmp/err")"
	fi
}

# refused NAME ARGS...: exit 1, nothing on stdout, one message on stderr
refused() {
	name=$1
	shift
	got=$(TIERFS_BIN=$T "$helper" "$@" 2>"$tmp/err")
	rc=$?
	if [ "$rc" = 1 ] && [ -z "$got" ] && [ -s "$tmp/err" ]; then
		pass "$name"
	else
		fail "$name (exit $rc, stdout '$got', stderr '$(cat "$tmp/err")')"
	fi
}

# the fstab example of docs/operations.md (and of scripts/mount.tierfs's header)
fake "fstab example" \
	"$T mount s3://my-bucket/prefix /mnt/data --config /etc/tierfs/data.conf --ram-size 4G -o allow_other" \
	s3://my-bucket/prefix /mnt/data -o _netdev,allow_other,config=/etc/tierfs/data.conf,ram-size=4G
# what mount(8) passes for it: "defaults" arrives as rw, -o first
fake "as mount(8) calls it" \
	"$T mount s3://my-bucket/prefix /mnt/data --config /etc/tierfs/data.conf --ram-size 4G -o allow_other" \
	-o rw,allow_other,config=/etc/tierfs/data.conf,ram-size=4G,_netdev s3://my-bucket/prefix /mnt/data
fake "mount-only options dropped, ro accepted" \
	"$T mount s3://b /m" \
	s3://b /m -o defaults,auto,noauto,_netdev,nofail,user,users,owner,group,rw,ro,comment=x,x-systemd.automount,x-systemd.device-timeout=10
fake "only FUSE options" \
	"$T mount s3://b /m -o allow_other,default_permissions,noexec,nosuid,nodev" \
	s3://b /m -o allow_other,default_permissions,noexec,nosuid,nodev
fake "flags, flags with values, keys with values" \
	"$T mount s3://b/p/q /m --path-style --cache-wipe=false --direct-io=yes --endpoint http://127.0.0.1:7480 --region eu-west-1 --uid 1000 --gid 1000 --file-mode 0440 --kernel-readahead auto --read-ahead 0 --ram-policy lru" \
	s3://b/p/q /m -o path-style,cache-wipe=false,direct-io=yes,endpoint=http://127.0.0.1:7480,region=eu-west-1,uid=1000,gid=1000,file-mode=0440,kernel-readahead=auto,read-ahead=0,ram-policy=lru
fake "every sized key" \
	"$T mount s3://b /m --chunk-size 1M --ram-size 4G --cache-dir /var/cache/tierfs/d --ssd-size 200G --ssd-min-free 10 --read-ahead-mem 1G --read-ahead-files 8 --parallel-gets 2 --stall-timeout 30 --max-retries 3 --max-connections 128 --max-threads 32 --metadata-ttl 300 --profile p --ssd-policy lfu --dir-mode 0550" \
	s3://b /m -o chunk-size=1M,ram-size=4G,cache-dir=/var/cache/tierfs/d,ssd-size=200G,ssd-min-free=10,read-ahead-mem=1G,read-ahead-files=8,parallel-gets=2,stall-timeout=30,max-retries=3,max-connections=128,max-threads=32,metadata-ttl=300,profile=p,ssd-policy=lfu,dir-mode=0550
fake "several -o, -oVALUE, empty fields, -s -n -v -t ignored" \
	"$T mount s3://b /m --ram-size 1G -o allow_other,debug" \
	-s -n -v -t tierfs s3://b /m -o ram-size=1G,,allow_other -odebug
fake "special characters printed quoted, not globbed" \
	"$T mount s3://b '/mnt/my data' --config '/etc/it'\\''s *.conf' -o 'fsname=a;b'" \
	s3://b "/mnt/my data" -o "config=/etc/it's *.conf,fsname=a;b,comment=*"
# an option is not a glob, even where it would match a file
mkdir "$tmp/glob" && : >"$tmp/glob/profile=x"
cd "$tmp/glob" || exit 1
fake "no pathname expansion" "$T mount s3://b /m --profile '*'" s3://b /m -o 'profile=*'
cd "$root" || exit 1

# tierfs found on PATH when TIERFS_BIN is unset
got=$(env -u TIERFS_BIN PATH="$tmp/bin:$PATH" "$helper" -f s3://b /m 2>&1)
if [ "$got" = "$T mount s3://b /m" ]; then pass "tierfs from PATH"; else fail "tierfs from PATH: $got"; fi

refused "foreground refused" s3://b /m -o foreground
refused "options= refused" s3://b /m -o options=allow_other
refused "remount refused" s3://b /m -o remount,ram-size=1G
refused "missing value refused" s3://b /m -o ram-size=
refused "config without a file refused" s3://b /m -o config
refused "double quotes refused" s3://b /m -o 'config="/a,b"'
refused "-N refused" s3://b /m -N /proc/1/ns/mnt
refused "unknown flag refused" s3://b /m -x
refused "missing mountpoint refused" s3://b -o allow_other
refused "extra argument refused" s3://b /m /n
got=$(TIERFS_BIN=$tmp/none/tierfs "$helper" -f s3://b /m 2>/dev/null)
rc=$?
if [ "$rc" = 1 ] && [ -z "$got" ]; then pass "no tierfs binary: exit 1"; else fail "no tierfs binary: exit $rc"; fi

# a real run: each value reaches tierfs as one argument, nothing evaluated
rm -f "$tmp/stub/args"
TIERFS_BIN=$tmp/stub/tierfs "$helper" s3://b "/m n" \
	-o "config=$tmp/a b.conf,region=\$(touch $tmp/pwned),allow_other,path-style" 2>"$tmp/err"
rc=$?
printf '%s\n' mount s3://b "/m n" --config "$tmp/a b.conf" --region "\$(touch $tmp/pwned)" \
	--path-style -o allow_other >"$tmp/want"
if [ "$rc" = 0 ] && cmp -s "$tmp/want" "$tmp/stub/args" && [ ! -e "$tmp/pwned" ]; then
	pass "run: arguments passed intact, no eval"
else
	fail "run: exit $rc, args: $(tr '\n' '|' <"$tmp/stub/args" 2>/dev/null) $(cat "$tmp/err")"
fi
# exit status: 0 mounted, tierfs usage error (2) -> 1, any other failure -> 32
for pair in 0:0 2:1 1:32 3:32; do
	STUB_RC=${pair%:*} TIERFS_BIN=$tmp/stub/tierfs "$helper" s3://b /m 2>/dev/null
	rc=$?
	if [ "$rc" = "${pair#*:}" ]; then
		pass "tierfs exit ${pair%:*} -> $rc"
	else
		fail "tierfs exit ${pair%:*} -> $rc, want ${pair#*:}"
	fi
done

# the keys the helper learns from --help are config.c's, value or flag alike
config_c=$root/src/config.c
want=$(sed -n 's/^[[:space:]]*{ *"\([a-z0-9-]*\)", *OPT_\([A-Z]*\).*/\1 \2/p' "$config_c" |
	awk '$1 != "options" { print $1, ($2 == "BOOL" ? 0 : 1) }' | sort)
got=$(TIERFS_BIN=$T "$helper" --list-keys | grep -v '^config ' | sort)
if [ -n "$want" ] && [ "$got" = "$want" ]; then
	pass "tierfs --help lists every config.c key ($(printf '%s\n' "$want" | wc -l))"
else
	fail "tierfs --help and config.c disagree:"
	printf '%s\n' "$want" >"$tmp/k.want"
	printf '%s\n' "$got" >"$tmp/k.got"
	diff "$tmp/k.want" "$tmp/k.got" | sed 's/^/#   /'
fi

# conf/tierfs.conf documents every key; a missing one is caught
if out=$("$root/scripts/check-conf-keys.sh" 2>&1); then
	pass "check-conf-keys: $out"
else
	fail "check-conf-keys:"
	printf '%s\n' "$out" | sed 's/^/#   /'
fi
grep -v '^#direct-io' "$root/conf/tierfs.conf" >"$tmp/short.conf"
out=$("$root/scripts/check-conf-keys.sh" "$config_c" "$tmp/short.conf" 2>&1)
rc=$?
if [ "$rc" = 1 ] && printf '%s\n' "$out" | grep -q '^missing: direct-io '; then
	pass "check-conf-keys notices a missing key"
else
	fail "check-conf-keys on a file without direct-io: exit $rc, $out"
fi

echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
