# Sourced by test-bus.sh, test-polkit.sh, test-monitor.sh and
# test-self-service.sh (meson passes its path in TEST_BUS_LIB): a private
# system bus for refsnapd under test, with the system bus's default
# policy (method calls denied unless a policy file allows them) and the
# policy files the test put in $t/system.d (ours among them).
#
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
