# Sourced by test-bus.sh, test-polkit.sh, test-monitor.sh and
# test-self-service.sh (meson passes its path in TEST_BUS_LIB): a private
# system bus for refsnapd under test, with the system bus's default
# policy (method calls denied unless a policy file allows them) and the
# policy files the test put in $t/system.d (ours among them).
#
#   bus_test_begin NAME
#                   $t: a fresh directory /run/refsnap-test-NAME.XXXXXX
#                   (not under /tmp or /var/tmp, which the daemon
#                   refuses), removed at exit once the daemon ($d_pid),
#                   fake-polkitd ($pk_pid) and the bus ($bus_pid) are
#                   killed; ok CMD...: a TAP line for CMD, counted in $n
#                   and $failed.
#   bus_allow_polkit T
#                   polkit's own bus policy in T/system.d, as polkitd's
#                   package has it: user daemon (fake-polkitd; not root,
#                   so subject to the default context like any service)
#                   owns org.freedesktop.PolicyKit1, everyone may ask it.
#   wait_until SECONDS CMD...
#                   CMD polled every 0.1 s; the bound is a hang's.
#   bus_start T     writes T/bus.conf, starts dbus-daemon on T/bus.sock
#                   (its pid in bus_pid, its log T/bus.log), makes the
#                   socket and T reachable by every user, and exports
#                   DBUS_SYSTEM_BUS_ADDRESS.  Returns non-zero when the
#                   socket does not appear within 5 s (a hang's bound).
bus_start() {
	local t=$1 i
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
	[ -S "$t/bus.sock" ] || return 1
	chmod 0666 "$t/bus.sock"
	chmod 0755 "$t"
	export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$t/bus.sock
}

bus_test_begin() {
	t=$(mktemp -d "/run/refsnap-test-$1.XXXXXX") || exit 1
	bus_pid= d_pid= pk_pid=
	trap bus_test_cleanup EXIT
	n=0 failed=0
}
bus_test_cleanup() {
	local p
	for p in $d_pid $pk_pid $bus_pid; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$t"
}
ok() { n=$((n + 1)); if "$@"; then echo "ok $n - $*"; else echo "not ok $n - $*"; failed=$((failed + 1)); fi; }

bus_allow_polkit() {
	cat > "$1/system.d/test-polkit.conf" <<'CONF'
<busconfig>
  <policy user="daemon"><allow own="org.freedesktop.PolicyKit1"/></policy>
  <policy context="default"><allow send_destination="org.freedesktop.PolicyKit1"/></policy>
</busconfig>
CONF
}
wait_until() { local i; for i in $(seq $(($1 * 10))); do "${@:2}" && return 0; sleep 0.1; done; return 1; }
