#!/bin/bash
# A self-service worker is killed when its caller leaves the bus and when
# the daemon stops, by the daemon as refsnapd.service runs it: root with
# only the unit's CapabilityBoundingSet (read from the unit, given by
# setpriv), on a private bus with fake-polkitd, workers that sleep once
# they are the caller (REFSNAP_TEST_SELF_SLEEP).  The worker is nobody's
# by then: killing it takes CAP_KILL.  Its caller gone, it is killed
# once (one line), not again and again until it has exited; no kill
# fails; SIGTERM ends the daemon and the other worker.  Run as root;
# skipped otherwise.
set -u
. "${TEST_BUS_LIB:-$(dirname "$0")/test-bus-lib.sh}"
daemon=${1:?usage: test-self-kill.sh REFSNAPD FAKE-POLKITD POLICY UNIT}
fake=${2:?} policy=${3:?} unit=${4:?}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1 ||
   ! id daemon >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv and the users nobody and daemon"
	exit 0
fi
bus_test_begin selfkill
un=$(id -u nobody) gn=$(id -g nobody)
mkdir -p "$t/system.d"
cp "$policy" "$t/system.d/"
bus_allow_polkit "$t"
bus_start "$t" || { echo "Bail out! dbus-daemon did not start: $(cat "$t/bus.log")"; exit 1; }
bc=(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS")

snap=$(date -u -d '1 minute ago' +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$t/store/$snap/own" "$t/src/own"
echo x > "$t/store/$snap/own/f"
chown -R nobody "$t/store/$snap/own" "$t/src/own"
chmod 0700 "$t/store"
printf '[self]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src" "$t/store" > "$t/main.conf"
echo "org.refsnap1.self-service $un yes" > "$t/rules"
: > "$t/pk.log"
chmod 0644 "$t/rules"
chmod 0666 "$t/pk.log"
setpriv --reuid=daemon --regid=daemon --clear-groups "$fake" "$t/rules" "$t/pk.log" > "$t/pk.out" 2>&1 &
pk_pid=$!

# The unit's bounding set, as setpriv says it: -all,+chown,+dac_override,...
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_//g; s/  */,+/g')
ok test -n "$caps"
REFSNAP_TEST_SELF_SLEEP=60 setpriv --bounding-set="-all,+$caps" \
	"$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
ok wait_until 10 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.freedesktop.PolicyKit1 '"

p=$t/src/own/f
call=(call --timeout=120 org.refsnap1 /org/refsnap1 org.refsnap1.Manager Versions aya{sv}
      "$(printf %s "$p" | wc -c)" $(printf %s "$p" | od -An -tu1) 0)
children() { pgrep -P "$d_pid" | wc -l; }
went() { grep -c 'the caller went away, pid [0-9]* killed' "$t/daemon.log"; }
# setpriv itself in the background (it execs busctl): $! is the client.
setpriv --reuid=nobody --regid="$gn" --clear-groups "${bc[@]}" "${call[@]}" > /dev/null 2>&1 &
c1=$!
setpriv --reuid=nobody --regid="$gn" --clear-groups "${bc[@]}" "${call[@]}" > /dev/null 2>&1 &
c2=$!
ok wait_until 30 sh -c "test \$(grep -c 'looking it up as the caller' '$t/daemon.log') = 2"
ok wait_until 30 sh -c "test \$(pgrep -P $d_pid | wc -l) = 2"
ok test "$(children)" = 2

# Its caller killed: the worker is killed (and reaped), once.
kill -KILL "$c1"
wait "$c1" 2>/dev/null
ok wait_until 30 sh -c "test \$(pgrep -P $d_pid | wc -l) = 1"
ok test "$(went)" = 1
ok sh -c "! grep -q 'cannot be killed' '$t/daemon.log'"

# Stopping: the other worker is ended, the daemon exits.
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
wait "$c2" 2>/dev/null
ok test -z "$(pgrep -u nobody -f "refsnapd -c $t/main.conf")"
ok sh -c "! grep -q 'cannot be killed' '$t/daemon.log'"
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon.log'"
[ "$failed" = 0 ] || sed 's/^/# /' "$t/daemon.log" | tail -n 40
echo "1..$n"
exit $((failed > 0))
