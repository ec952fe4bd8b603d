#!/bin/bash
# Who may call what, decided in refsnapd's code with polkit: a private
# bus with the shipped policy (everyone may send to the manager), the
# daemon under ASan on it, and fake-polkitd answering CheckAuthorization
# from a rules file (polkit's decision is polkit's: what is tested here is
# the question refsnapd asks and what it does with the answer).  Run as
# root (the callers become nobody with setpriv); skipped otherwise.
set -u
. "${TEST_BUS_LIB:-$(dirname "$0")/test-bus-lib.sh}"
daemon=${1:?usage: test-polkit.sh REFSNAPD REFSNAPCTL FAKE-POLKITD POLICY}
ctl=${2:?} fake=${3:?} policy=${4:?}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1 ||
   ! id daemon >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv and the users nobody and daemon"
	exit 0
fi
# In /run: not under /tmp or /var/tmp, which the daemon refuses.
bus_test_begin polkit
rc() { "$@" >> "$t/calls.log" 2>&1; echo $?; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
un=$(id -u nobody)

mkdir -p "$t/system.d" "$t/src" "$t/src2" "$t/store2/2020-01-01T00:00:00Z" "$t/store2/2020-01-02T00:00:00Z"
echo leaked > "$t/store2/2020-01-02T00:00:00Z/secret"
cp "$policy" "$t/system.d/"
bus_allow_polkit "$t"
bus_start "$t" || { echo "Bail out! dbus-daemon did not start: $(cat "$t/bus.log")"; exit 1; }
bc=(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS")
M=(org.refsnap1 /org/refsnap1 org.refsnap1.Manager)
printf '[bt]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src" "$t/store" > "$t/main.conf"
# pr: a prune with one snapshot to remove (keep_hourly = 1 keeps 2020-01-02).
printf '[pr]\nsource = %s\nstore = %s\ninterval = 1h\nkeep_hourly = 1\n' "$t/src2" "$t/store2" >> "$t/main.conf"
"$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon.log" 2>&1 &
d_pid=$!
# The first snapshot of a new job starts at once; here it fails (the host has no reflinks).
wait_until 30 sh -c "'$ctl' status 2>/dev/null | grep -q '^bt .*failed$'"
# logged PATTERN: the daemon's log has a line matching PATTERN since the
# last mark (each call is logged as it is decided).
mark=0
mark() { mark=$(wc -l < "$t/daemon.log"); }
logged() { tail -n +$((mark + 1)) "$t/daemon.log" | grep -q -- "$1"; }
# asked PATTERN: fake-polkitd was asked a question matching PATTERN.
asked() { grep -q -- "$1" "$t/pk.log" 2>/dev/null; }
caller="uid $un, pid [1-9][0-9]*, unit [^ ]* (:1\.[0-9]*)"

# No polkit on the bus: refused, as with a "no" (the error name is the standard AccessDenied).
ok test "$(rc as_nobody "$ctl" snapshot bt)" = 5
ok grep -q 'refsnapctl: permission denied' "$t/calls.log"
ok logged "Snapshot() from $caller refused: org.refsnap1.snapshot: polkit did not answer"
out=$(as_nobody "${bc[@]}" call "${M[@]}" Reload a{sv} 0 2>&1)
ok grep -q 'Access denied' <<<"$out"
# Root is allowed without polkit: the snapshot reaches the worker (and fails on this host).
ok test "$(rc "$ctl" snapshot bt)" = 1
ok grep -q 'Snapshot of bt failed' "$t/calls.log"
ok logged "Snapshot() called by uid 0, pid [1-9][0-9]*, unit "
ok "${bc[@]}" call "${M[@]}" Reload a{sv} 0
# The reading methods stay root's (sd-bus's check).
ok test "$(rc as_nobody "$ctl" status)" = 5
ok test "$(rc as_nobody "${bc[@]}" call "${M[@]}" ListSnapshots s bt)" = 1
ok test "$(rc as_nobody "${bc[@]}" call "${M[@]}" ListJobs)" = 1
# The properties and the object tree are everyone's, systemd's way, but
# a job's paths (Source, Store) only root's, or everyone's for a job
# "public = yes": anyone else reads them empty (the type kept), in Get,
# GetAll and GetManagedObjects alike.
J=(org.refsnap1 /org/refsnap1/job/bt org.refsnap1.Job)
# bytes PATH: PATH as busctl prints an ay's bytes.
lacks() { ! grep -q -- "$1" <<<"$2"; }
bytes() { printf '%s' "$1" | od -An -tu1 | tr -s ' \n' '  ' | sed 's/^ //; s/ $//'; }
ok test "$(as_nobody "${bc[@]}" get-property "${M[@]}" Jobs 2>&1)" = 'a(so) 2 "bt" "/org/refsnap1/job/bt" "pr" "/org/refsnap1/job/pr"'
ok test "$(as_nobody "${bc[@]}" get-property "${J[@]}" Name 2>&1)" = 's "bt"'
ok test "$(as_nobody "${bc[@]}" get-property "${J[@]}" IntervalUSec 2>&1)" = 't 3600000000'
ok test "$(as_nobody "${bc[@]}" get-property "${J[@]}" Source 2>&1)" = 'ay 0'
ok test "$(as_nobody "${bc[@]}" get-property "${J[@]}" Store 2>&1)" = 'ay 0'
ok test "$("${bc[@]}" get-property "${J[@]}" Source 2>&1)" = "ay $((${#t} + 4)) $(bytes "$t/src")"
ok test "$("${bc[@]}" get-property "${J[@]}" Store 2>&1)" = "ay $((${#t} + 6)) $(bytes "$t/store")"
"${bc[@]}" call org.refsnap1 /org/refsnap1 org.freedesktop.DBus.ObjectManager GetManagedObjects > "$t/objs.root" 2>&1
as_nobody "${bc[@]}" call org.refsnap1 /org/refsnap1 org.freedesktop.DBus.ObjectManager GetManagedObjects \
	> "$t/objs.nobody" 2>&1
ok grep -q "$(bytes "$t/src2")" "$t/objs.root"
ok grep -q '"Name" s "pr"' "$t/objs.nobody"
ok test "$(grep -o '"Source" ay 0 "Store" ay 0' "$t/objs.nobody" | wc -l)" = 2
ok sh -c "! grep -q '$(bytes "$t")' '$t/objs.nobody'"
as_nobody "${bc[@]}" call org.refsnap1 /org/refsnap1/job/bt org.freedesktop.DBus.Properties GetAll s org.refsnap1.Job \
	> "$t/all.nobody" 2>&1
ok grep -q '"Source" ay 0 "Store" ay 0' "$t/all.nobody"
ok as_nobody "${bc[@]}" introspect org.refsnap1 /org/refsnap1/job/bt org.refsnap1.Job
ok sh -c "setpriv --reuid=nobody --regid=nogroup --clear-groups ${bc[*]} tree --list org.refsnap1 | grep -qx /org/refsnap1/job/pr"
# Nothing of them is writable by her.
ok test "$(rc as_nobody "${bc[@]}" set-property org.refsnap1 /org/refsnap1 org.freedesktop.LogControl1 LogLevel s debug)" = 1
ok test "$("${bc[@]}" get-property org.refsnap1 /org/refsnap1 org.freedesktop.LogControl1 LogLevel)" != 's "debug"'
# A job public = yes (a drop-in, reloaded): its paths shown to her too; the others' still not.
mkdir -p "$t/conf.d" "$t/pubsrc"
printf '[pub]\nsource = %s\nstore = %s\ninterval = 1h\npublic = yes\n' "$t/pubsrc" "$t/pubstore" > "$t/conf.d/pub.conf"
ok "${bc[@]}" call "${M[@]}" Reload a{sv} 0
P=(org.refsnap1 /org/refsnap1/job/pub org.refsnap1.Job)
ok test "$(as_nobody "${bc[@]}" get-property "${P[@]}" Source 2>&1)" = "ay $((${#t} + 7)) $(bytes "$t/pubsrc")"
ok test "$(as_nobody "${bc[@]}" get-property "${P[@]}" Store 2>&1)" = "ay $((${#t} + 9)) $(bytes "$t/pubstore")"
ok test "$(as_nobody "${bc[@]}" get-property "${J[@]}" Source 2>&1)" = 'ay 0'
# A bad value: the reload refused with the file and line, the old jobs kept.
printf '[pub]\nsource = %s\nstore = %s\ninterval = 1h\npublic = maybe\n' "$t/pubsrc" "$t/pubstore" > "$t/conf.d/pub.conf"
out=$("${bc[@]}" call "${M[@]}" Reload a{sv} 0 2>&1)
ok grep -q "$t/conf.d/pub.conf:5: public: 'maybe' is not a boolean" <<<"$out"
ok test "$(as_nobody "${bc[@]}" get-property "${P[@]}" Source 2>&1)" = "ay $((${#t} + 7)) $(bytes "$t/pubsrc")"
rm "$t/conf.d/pub.conf"
ok "${bc[@]}" call "${M[@]}" Reload a{sv} 0
# The verbs that read the stores directly are root's: refused before anything is read, no path said.
for v in "diff bt latest" "list" "list bt"; do
	out=$(as_nobody "$ctl" -c "$t/main.conf" $v 2>&1; echo "exit $?")
	ok grep -qx 'exit 5' <<<"$out"
	ok grep -q "^refsnapctl: ${v%% *}: only root may read the snapshots directly" <<<"$out"
	ok lacks "$t" "$out"
done

mark
# polkit on the bus, saying no: refused; the question names the caller
# by its unique bus name (never a PID), with no interaction (refsnapctl
# has no terminal here).
: > "$t/rules"
: > "$t/pk.log"
chmod 0644 "$t/rules"
chmod 0666 "$t/pk.log"
setpriv --reuid=daemon --regid=daemon --clear-groups "$fake" "$t/rules" "$t/pk.log" > "$t/pk.out" 2>&1 &
pk_pid=$!
ok wait_until 10 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.freedesktop.PolicyKit1 '"
ok test "$(rc as_nobody "$ctl" snapshot bt)" = 5
ok asked "^kind=system-bus-name name=:1\.[0-9]* action=org.refsnap1.snapshot flags=0 uid=$un\$"
ok logged "Snapshot() from $caller refused: org.refsnap1.snapshot: not authorized"
ok test "$(rc as_nobody "$ctl" snapshot bt --full)" = 5
ok test "$(rc as_nobody "$ctl" snapshot bt --if-changed)" = 5
ok test "$(grep -c "action=org.refsnap1.snapshot .*uid=$un\$" "$t/pk.log")" = 3
# busctl allows interactive authorization by default: the flag is passed on.
ok test "$(rc as_nobody "${bc[@]}" call "${M[@]}" Snapshot s bt)" = 1
ok asked "action=org.refsnap1.snapshot flags=1 uid=$un\$"
ok test "$(rc as_nobody "${bc[@]}" --allow-interactive-authorization=no call "${M[@]}" Snapshot s bt)" = 1
ok test "$(grep -c "action=org.refsnap1.snapshot flags=0 uid=$un\$" "$t/pk.log")" = 4
# refsnapctl on a terminal asks for interaction too.
if command -v script >/dev/null; then
	script -qec "setpriv --reuid=nobody --regid=nogroup --clear-groups '$ctl' snapshot bt" /dev/null \
		>> "$t/calls.log" 2>&1 < /dev/null
	ok test "$(grep -c "action=org.refsnap1.snapshot flags=1 uid=$un\$" "$t/pk.log")" = 2
fi
# Each mutating member asks for its action: prune, cancel and reload manage.
ok test "$(rc as_nobody "$ctl" prune pr --dry-run)" = 5
ok asked "action=org.refsnap1.manage flags=0 uid=$un\$"
ok logged "Prune() from $caller refused: org.refsnap1.manage: not authorized"
ok test "$(rc as_nobody "${bc[@]}" call "${M[@]}" Cancel sa{sv} bt 0)" = 1
ok logged "Cancel() from $caller refused: org.refsnap1.manage: not authorized"
ok test "$(rc as_nobody "${bc[@]}" call "${M[@]}" Reload a{sv} 0)" = 1
ok logged "Reload() from $caller refused: org.refsnap1.manage: not authorized"
ok test "$(grep -c "action=org.refsnap1.manage " "$t/pk.log")" = 3
# Purge (manage too): refused, the snapshot untouched, a dry run as well.
ok test "$(rc as_nobody "$ctl" purge pr secret)" = 5
ok logged "Purge() from $caller refused: org.refsnap1.manage: not authorized"
ok test "$(rc as_nobody "$ctl" purge pr secret --dry-run)" = 5
ok test -f "$t/store2/2020-01-02T00:00:00Z/secret"
# Root never asks polkit.
ok test "$(rc "$ctl" snapshot bt)" = 1
ok test "$(rc "$ctl" prune pr --dry-run)" = 0
ok sh -c "! grep -q 'uid=0\$' '$t/pk.log'"

# polkit says yes to nobody's snapshot: it is taken (it reaches the
# worker, and fails on this host as root's does); manage is still refused.
echo "org.refsnap1.snapshot $un yes" > "$t/rules"
: > "$t/calls.log"
mark
ok test "$(rc as_nobody "$ctl" snapshot bt)" = 1
ok grep -q 'Snapshot of bt failed' "$t/calls.log"
ok logged "Snapshot() called by $caller: org.refsnap1.snapshot authorized by polkit"
ok test "$(rc as_nobody "$ctl" snapshot bt --full)" = 1
ok logged "SnapshotFull() called by $caller: org.refsnap1.snapshot authorized by polkit"
ok test "$(rc as_nobody "$ctl" snapshot nope)" = 4
ok test "$(rc as_nobody "$ctl" prune pr)" = 5
ok test -d "$t/store2/2020-01-01T00:00:00Z"
# ... until polkit says yes to manage as well: the prune removes the old one.
echo "org.refsnap1.manage $un yes" >> "$t/rules"
ok test "$(rc as_nobody "$ctl" prune pr)" = 0
ok test ! -e "$t/store2/2020-01-01T00:00:00Z" -a -d "$t/store2/2020-01-02T00:00:00Z"
ok logged "Prune() called by $caller: org.refsnap1.manage authorized by polkit"
ok test "$(rc as_nobody "$ctl" purge pr secret)" = 0
ok test ! -e "$t/store2/2020-01-02T00:00:00Z/secret" -a -d "$t/store2/2020-01-02T00:00:00Z"
ok logged "Purge() called by $caller: org.refsnap1.manage authorized by polkit"
ok as_nobody "${bc[@]}" call "${M[@]}" Reload a{sv} 0
# Reading is not opened by it.
ok test "$(rc as_nobody "$ctl" status)" = 5

# "Could be, with authentication": InteractiveAuthorizationRequired, exit 5, saying so.
echo "org.refsnap1.snapshot $un challenge" > "$t/rules"
: > "$t/calls.log"
ok test "$(rc as_nobody "$ctl" snapshot bt)" = 5
ok grep -q 'authentication is required' "$t/calls.log"
if command -v gdbus >/dev/null; then
	out=$(as_nobody gdbus call --address "$DBUS_SYSTEM_BUS_ADDRESS" -d org.refsnap1 -o /org/refsnap1 \
		-m org.refsnap1.Manager.Snapshot bt 2>&1)
	ok grep -q 'org.freedesktop.DBus.Error.InteractiveAuthorizationRequired' <<<"$out"
fi
# polkit answering with an error: refused.
mark
echo "org.refsnap1.snapshot $un error" > "$t/rules"
ok test "$(rc as_nobody "$ctl" snapshot bt)" = 5
ok logged "Snapshot() from $caller refused: org.refsnap1.snapshot: polkit did not answer"

# The call waits for polkit's answer without holding the daemon: while
# polkit holds the question, root's calls are answered; when it says
# yes, the waiting call is carried out and answered.
echo "org.refsnap1.snapshot $un hold" > "$t/rules"
: > "$t/pk.log"
mark
as_nobody "$ctl" snapshot bt > "$t/held.out" 2>&1 &
held=$!
ok wait_until 10 asked "action=org.refsnap1.snapshot flags=0 uid=$un\$"
start=$(date +%s%N)
ok test "$(rc "$ctl" status)" = 0
echo "# time: root's status answered in $(( ($(date +%s%N) - start) / 1000000 )) ms while a call waited for polkit"
ok kill -0 "$held"
ok sh -c "! tail -n +$((mark + 1)) '$t/daemon.log' | grep -q 'Snapshot() called by uid $un'"
echo "org.refsnap1.snapshot $un yes" > "$t/rules"
wait "$held"
ok test $? = 1
ok grep -q 'Snapshot of bt failed' "$t/held.out"
# A caller that goes away while polkit holds its question: nothing breaks.
echo "org.refsnap1.snapshot $un hold" > "$t/rules"
: > "$t/pk.log"
mark
as_nobody "${bc[@]}" --timeout=60 call "${M[@]}" Snapshot s bt > /dev/null 2>&1 &
gone=$!
ok wait_until 10 asked "action=org.refsnap1.snapshot"
kill "$gone"
wait "$gone" 2>/dev/null
echo "org.refsnap1.snapshot $un no" > "$t/rules"
ok wait_until 30 logged "Snapshot() from $caller refused: org.refsnap1.snapshot: not authorized"
ok test "$(rc "$ctl" status)" = 0
# The daemon stopped while a call waits for polkit: the caller is told,
# and the daemon exits cleanly (ASan would say what it left).
echo "org.refsnap1.snapshot $un hold" > "$t/rules"
: > "$t/pk.log"
as_nobody "$ctl" snapshot bt > "$t/stopped.out" 2>&1 &
held=$!
ok wait_until 10 asked "action=org.refsnap1.snapshot"
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
wait "$held"
ok test $? != 0
ok grep -q 'refsnapd is stopping' "$t/stopped.out"
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon.log'"
[ "$failed" = 0 ] || { echo "# daemon log:"; sed 's/^/# /' "$t/daemon.log"; echo "# calls:"; sed 's/^/# /' "$t/calls.log"
	echo "# polkit:"; sed 's/^/# /' "$t/pk.log"; echo "# stopped:"; sed 's/^/# /' "$t/stopped.out"; }
echo "1..$n"
[ "$failed" = 0 ]
