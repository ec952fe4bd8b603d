#!/bin/bash
# refsnapd's D-Bus API on the host, under ASan: a private bus with the
# system bus's default policy and ours, refsnapd on it, refsnapctl against
# it.  The host has no reflinkat(2), so a snapshot here fails: that is the
# failure path, end to end.
set -u
daemon=${1:?usage: test-bus.sh REFSNAPD REFSNAPCTL POLICY}
ctl=${2:?} policy=${3:?}
# In /run: not under /tmp or /var/tmp, which the daemon refuses
# (PrivateTmp=), and root's whatever folder the tests run from.
t=$(mktemp -d /run/refsnap-test-bus.XXXXXX)
bus_pid= d_pid=
cleanup() {
	[ -n "$d_pid" ] && kill "$d_pid" 2>/dev/null
	[ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); if "$@"; then echo "ok $n - $*"; else echo "not ok $n - $*"; failed=$((failed + 1)); fi; }
rc() { "$@" >> "$t/calls.log" 2>&1; echo $?; }

mkdir -p "$t/system.d" "$t/src" "$t/conf.d"
cp "$policy" "$t/system.d/"
cat > "$t/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$t/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <includedir>$t/system.d</includedir>
</busconfig>
CONF
dbus-daemon --config-file="$t/bus.conf" --nofork --nosyslog > "$t/bus.log" 2>&1 &
bus_pid=$!
for i in $(seq 50); do [ -S "$t/bus.sock" ] && break; sleep 0.1; done
chmod 0666 "$t/bus.sock"
chmod 0755 "$t"
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$t/bus.sock
printf '[bt]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src" "$t/store" > "$t/main.conf"
# A second job whose prune has one snapshot to remove (keep_hourly = 1
# keeps the newest, 2020-01-02; 2020-01-01 is the one it removes).
mkdir -p "$t/src2" "$t/store2/2020-01-01T00:00:00Z" "$t/store2/2020-01-02T00:00:00Z"
printf '[pr]\nsource = %s\nstore = %s\ninterval = 1h\nkeep_hourly = 1\n' "$t/src2" "$t/store2" >> "$t/main.conf"
c=(-c "$t/main.conf" --conf-dir "$t/conf.d")

# Not running yet.
ok test "$(rc "$ctl" status)" = 3
ok test "$(rc "$ctl" snapshot bt)" = 3
ok test "$(rc "$ctl" snapshot bt --if-changed)" = 3
ok test "$(rc "$ctl" snapshot --if-changed)" = 2

# The stock path forced (as on a kernel without reflinkat(2)): status,
# the ReflinkPath property and the journal say so.
REFSNAP_REFLINK_PATH=stock "$daemon" "${c[@]}" > "$t/daemon.log" 2>&1 &
d_pid=$!
for i in $(seq 100); do "$ctl" status 2>/dev/null | grep -q '^bt .*failed$' && break; sleep 0.1; done
ok sh -c "busctl --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
intro=$(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" introspect org.refsnap1 /org/refsnap1 org.refsnap1.Manager 2>&1)
ok grep -q '^\.Snapshot  *method  *s  *s ' <<<"$intro"
ok grep -q '^\.SnapshotFinished  *signal  *ssbs ' <<<"$intro"
ok grep -q '^\.SnapshotIfChanged  *method  *s  *bs ' <<<"$intro"
ok grep -q '^\.SnapshotFull  *method  *s  *s ' <<<"$intro"
out=$("$ctl" status)
ok test $? = 0
ok grep -q '^refsnapd .*: running$' <<<"$out"
ok grep -qx 'reflink path: stock' <<<"$out"
ok test "$(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" get-property org.refsnap1 /org/refsnap1 org.refsnap1.Manager ReflinkPath)" = 's "stock"'
ok grep -q 'reflink path: stock (no reflinkat(2) in this kernel' "$t/daemon.log"
# The first snapshot of a new job starts at once; here it fails (the
# host's filesystem shares no extents, or the host has no reflinkat).
ok grep -q '^bt  *-  *20[-0-9T:]*Z  *failed$' <<<"$out"
json=$("$ctl" --json status)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["jobs"][0]["job"]=="bt" and d["jobs"][0]["result"]=="failed" and d["reflink"]=="stock"' "$json"
ok test "$(rc "$ctl" snapshot bt)" = 1
ok grep -q 'Snapshot of bt failed' "$t/calls.log"
ok test "$(rc "$ctl" snapshot nope)" = 4
# --if-changed: a job without on_change is never skipped, so one is taken
# (and fails here); the daemon's answer comes when it ends.
ok test "$(rc "$ctl" snapshot bt --if-changed)" = 1
ok grep -q 'Snapshot of bt failed' "$t/calls.log"
ok test "$(rc "$ctl" snapshot --if-changed nope)" = 4
ok test "$(rc "$ctl" snapshot bt --if-changed extra)" = 2
# --full: a full one asked of the daemon (it fails here as the others do); not with --if-changed.
ok test "$(rc "$ctl" snapshot bt --full)" = 1
ok grep -q 'full snapshot requested over D-Bus' "$t/daemon.log"
ok test "$(rc "$ctl" snapshot bt --full --if-changed)" = 2
ok test "$(rc "$ctl" snapshot --full nope)" = 4
ok test "$(rc "$ctl" prune nope)" = 4
out=$("$ctl" "${c[@]}" prune bt --dry-run 2>&1)
ok test $? = 0
ok grep -q '0 snapshots would be removed' <<<"$out"
out=$(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.refsnap1 /org/refsnap1 org.refsnap1.Manager ListSnapshots s bt 2>&1)
ok test "$out" = "a(sxxttt) 0"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ok test "$(rc setpriv --reuid=nobody --regid=nogroup --clear-groups "$ctl" status)" = 5
	ok test "$(rc setpriv --reuid=nobody --regid=nogroup --clear-groups "$ctl" snapshot bt)" = 5
	ok test "$(rc setpriv --reuid=nobody --regid=nogroup --clear-groups "$ctl" snapshot bt --if-changed)" = 5
fi
# A prune over D-Bus runs in a child of the daemon: at stop it gets
# SIGTERM and is waited for, never left running.  Holding the store's
# lock keeps the prune waiting for it, so the stop surely finds it.
flock "$t/store2" sleep 60 </dev/null >/dev/null 2>&1 &
holder=$!
for i in $(seq 100); do flock -n "$t/store2" true || break; sleep 0.1; done
ok sh -c "! flock -n '$t/store2' true"
busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" --timeout=60 call org.refsnap1 /org/refsnap1 \
	org.refsnap1.Manager Prune sb pr false > "$t/prune-call.log" 2>&1 &
caller=$!
child=
for i in $(seq 100); do child=$(pgrep -P "$d_pid" | head -1); [ -n "$child" ] && break; sleep 0.1; done
ok test -n "$child"
# Stopped: the daemon exits cleanly (ASan would say otherwise), status
# says so.  How long the stop took is printed; the bound is a hang's (the
# daemon kills what is left 3 s after SIGTERM).
kill -TERM "$d_pid"
start=$(date +%s%N)
gone() { local _p _c st; ! read -r _p _c st _ 2>/dev/null < "/proc/$1/stat" || [ "$st" = Z ]; }
for i in $(seq 600); do gone "$d_pid" && break; sleep 0.1; done
gone "$d_pid" || kill -KILL "$d_pid"
wait "$d_pid"
ok test $? = 0
echo "# time: the stop with a prune running took $(( ($(date +%s%N) - start) / 1000000 )) ms"
ok sh -c "! kill -0 '${child:-0}' 2>/dev/null"
pkill -P "$holder" 2>/dev/null
kill "$holder" 2>/dev/null
wait "$caller" "$holder" 2>/dev/null
# The prune ended before it removed anything: the snapshot retention
# would remove is still there (and the one it keeps).
ok test -d "$t/store2/2020-01-01T00:00:00Z"
ok test -d "$t/store2/2020-01-02T00:00:00Z"
d_pid=
ok test "$(rc "$ctl" status)" = 3
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon.log'"
[ "$failed" = 0 ] || { echo "# daemon log:"; sed 's/^/# /' "$t/daemon.log"; echo "# calls:"; sed 's/^/# /' "$t/calls.log"; }
echo "1..$n"
[ "$failed" = 0 ]
