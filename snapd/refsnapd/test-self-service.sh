#!/bin/bash
# Self-service through the bus, on the host, under ASan: refsnapd on a
# private bus with fake-polkitd (as test-polkit.sh), a job whose store
# holds two snapshots made here by hand (plain directories: the host has
# no reflinks), and `refsnapctl versions` as nobody (setpriv): an own
# deleted file listed, with which versions differ; root's 0600 file, a
# readable file in a directory nobody cannot search, and a file whose
# live directory is private now not listed, and refused byte for byte as
# a missing one is; a group's file listed with the group and not after
# setpriv --clear-groups; polkit saying no refuses.  Run as root; skipped
# otherwise.
set -u
. "${TEST_BUS_LIB:-$(dirname "$0")/test-bus-lib.sh}"
daemon=${1:?usage: test-self-service.sh REFSNAPD REFSNAPCTL FAKE-POLKITD POLICY}
ctl=${2:?} fake=${3:?} policy=${4:?}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1 ||
   ! id daemon >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv and the users nobody and daemon"
	exit 0
fi
bus_test_begin self
un=$(id -u nobody) gn=$(id -g nobody) grp=4242
as_nobody() { setpriv --reuid=nobody --regid="$gn" --clear-groups "$@"; }
as_nobody_grp() { setpriv --reuid=nobody --regid="$gn" --groups="$grp" "$@"; }
# versions CWD ARGS...: refsnapctl versions as nobody from CWD; stdout,
# stderr and the exit status, all three, in $t/out.
versions() {
	local cwd=$1; shift
	(cd "$cwd" && as_nobody "$ctl" versions "$@" > "$t/o1" 2> "$t/o2"; echo "exit $?" > "$t/o3")
	cat "$t/o1" "$t/o2" "$t/o3" > "$t/out"
}

mkdir -p "$t/system.d"
cp "$policy" "$t/system.d/"
bus_allow_polkit "$t"
bus_start "$t" || { echo "Bail out! dbus-daemon did not start: $(cat "$t/bus.log")"; exit 1; }
bc=(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS")
M=(org.refsnap1 /org/refsnap1 org.refsnap1.Manager)

# The tree as it was: two snapshots, then the live tree as it is now.
tree() { # DIR MINE-CONTENT
	local d=$1
	mkdir -p "$d/own" "$d/a" "$d/b" "$d/closed" "$d/was-open" "$d/grp"
	chown nobody "$d/own"
	printf '%s' "$2" > "$d/own/mine"
	chown nobody "$d/own/mine"
	ln -s "target of $2" "$d/own/link"
	mkfifo -m 0644 "$d/own/fifo"
	chown -h nobody "$d/own/link" "$d/own/fifo"
	echo root > "$d/a/secret"; chmod 0600 "$d/a/secret"
	echo x > "$d/closed/readable"; chmod 0700 "$d/closed"
	echo old > "$d/was-open/file"
	echo g > "$d/grp/file"; chgrp "$grp" "$d/grp"; chmod 0750 "$d/grp"
	chmod 0755 "$d" "$d/a" "$d/b" "$d/was-open"
}
s1=$(date -u -d '3 minutes ago' +%Y-%m-%dT%H:%M:%SZ)
s2=$(date -u -d '2 minutes ago' +%Y-%m-%dT%H:%M:%SZ)
s3=$(date -u -d '1 minute ago' +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$t/store"
chmod 0700 "$t/store"
tree "$t/store/$s1" a
tree "$t/store/$s2" bb
cp -a "$t/store/$s2" "$t/store/$s3"     # the same as the one before
cp -a "$t/store/$s2" "$t/src"
rm "$t/src/own/mine" "$t/src/own/link"  # deleted since
chmod 0700 "$t/src/was-open"    # and closed by its owner since
# Open in the first snapshot, closed by its owner in the newer ones, then
# renamed away live by someone who may write its parent: a directory
# (moved) and a file (a/single).
for s in "$s1" "$s2" "$s3"; do
	mkdir -m 0755 "$t/store/$s/moved"
	echo old > "$t/store/$s/moved/f"
	echo old > "$t/store/$s/a/single"
done
chmod 0700 "$t/store/$s2/moved" "$t/store/$s3/moved"
chmod 0600 "$t/store/$s2/a/single" "$t/store/$s3/a/single"
mkdir -m 0700 "$t/src/moved.x"
echo old > "$t/src/a/single.x"; chmod 0600 "$t/src/a/single.x"
mkdir -p "$t/nob"; chown nobody "$t/nob"
printf '[self]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src" "$t/store" > "$t/main.conf"
: > "$t/rules"
: > "$t/pk.log"
chmod 0644 "$t/rules"
chmod 0666 "$t/pk.log"
setpriv --reuid=daemon --regid=daemon --clear-groups "$fake" "$t/rules" "$t/pk.log" > "$t/pk.out" 2>&1 &
pk_pid=$!
"$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
ok wait_until 10 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.freedesktop.PolicyKit1 '"

# The bus driver says the groups of a connection (what the daemon asks).
out=$(as_nobody_grp "${bc[@]}" call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
	GetConnectionCredentials s org.refsnap1 2>&1)
ok grep -q '"UnixGroupIDs" au [1-9]' <<<"$out"

# polkit says no: refused (self-service is polkit's to switch off).
echo "org.refsnap1.self-service $un no" > "$t/rules"
versions "$t/src/own" mine
ok grep -qx 'exit 5' "$t/out"
ok grep -q "action=org.refsnap1.self-service flags=0 uid=$un\$" "$t/pk.log"
echo "org.refsnap1.self-service $un yes" > "$t/rules"

# Her own deleted file: its versions, newest first; only those that differ unless --all.
versions "$t/src/own" mine
ok grep -qx 'exit 0' "$t/out"
ok test "$(grep -c '^20' "$t/o1")" = 2
ok grep -q "^$s2 .* 2B  file\$" "$t/o1"
ok grep -q "^$s1 .* 1B  file\$" "$t/o1"
ok test "$(head -2 "$t/o1" | tail -1 | cut -d' ' -f1)" = "$s2"
versions "$t/src/own" mine --all
ok test "$(grep -c '^20' "$t/o1")" = 3
ok grep -q "^$s3 .*(unchanged)\$" "$t/o1"
# MODIFIED: the file's time for a person, in her zone with its name (TZ), or in UTC with --utc.
m2=$(stat -c %Y "$t/store/$s2/own/mine")
TZ=XYZ-9 versions "$t/src/own" mine
ok grep -q "^$s2 *$(TZ=XYZ-9 date -d "@$m2" '+%Y-%m-%d %H:%M:%S XYZ') .* 2B  file\$" "$t/o1"
versions "$t/src/own" mine --utc
ok grep -q "^$s2 *$(date -u -d "@$m2" '+%Y-%m-%d %H:%M:%S UTC') .* 2B  file\$" "$t/o1"
versions "$t/src" own/mine --json
ok grep -q '"job":"self"' "$t/o1"
ok grep -q "\"path\":\"$t/src/own/mine\"" "$t/o1"
ok python3 -c "import json,sys; d=json.load(open('$t/o1')); sys.exit(not (len(d['versions']) == 2 and d['versions'][0]['snapshot'] == '$s2' and d['versions'][0]['differs']))"
cp "$t/out" "$t/own.out"
# A directory too.
versions "$t/src" own
ok grep -qx 'exit 0' "$t/out"

# Missing and forbidden look the same: root's 0600 file (a/secret) and
# a name no snapshot has (b/secret), asked the same way, byte for byte.
versions "$t/src/a" secret
cp "$t/out" "$t/forbidden.out"
versions "$t/src/b" secret
ok cmp "$t/forbidden.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
ok grep -qx 'refsnapctl: no version of secret that you may read' "$t/out"
# Readable, in a directory nobody could not search: the same.
mv "$t/src/closed" "$t/src/closed.x"; mkdir "$t/src/b/closed"
versions "$t/src" closed/readable
cp "$t/out" "$t/closed.out"
versions "$t/src/b" closed/readable
ok cmp "$t/closed.out" "$t/out"
mv "$t/src/closed.x" "$t/src/closed"
# Readable in every snapshot, but its live directory is private now: the same.
mkdir -p "$t/src/b/was-open"
versions "$t/src" was-open/file
cp "$t/out" "$t/was-open.out"
versions "$t/src/b" was-open/file
ok cmp "$t/was-open.out" "$t/out"
# ... and visible again once its owner opens it.
chmod 0755 "$t/src/was-open"
versions "$t/src" was-open/file
ok grep -qx 'exit 0' "$t/out"
chmod 0700 "$t/src/was-open"
# Closed by its owner, then renamed away live: the newest snapshot that
# has it judges (closed there), so the same as a missing one.
mkdir -p "$t/src/b/moved"
versions "$t/src" moved/f
cp "$t/out" "$t/moved.out"
versions "$t/src/b" moved/f
ok cmp "$t/moved.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
versions "$t/src/a" single
cp "$t/out" "$t/single.out"
versions "$t/src/b" single
ok cmp "$t/single.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
# Outside every job: the same answer.
versions "$t" nothing-here
ok grep -qx 'exit 4' "$t/out"
ok grep -qx 'refsnapctl: no version of nothing-here that you may read' "$t/out"
# The D-Bus error: one name, one message, for both.
e1=$(as_nobody "${bc[@]}" call "${M[@]}" Versions aya{sv} "$(printf '%s/src/a/secret' "$t" | wc -c)" \
	$(printf '%s/src/a/secret' "$t" | od -An -tu1) 0 2>&1)
e2=$(as_nobody "${bc[@]}" call "${M[@]}" Versions aya{sv} "$(printf '%s/src/a/secreT' "$t" | wc -c)" \
	$(printf '%s/src/a/secreT' "$t" | od -An -tu1) 0 2>&1)
ok test "$e1" = "$e2"
ok grep -q 'No version of this path that you may read' <<<"$e1"

# Groups: the group's directory with the group, not after --clear-groups.
(cd "$t/src/grp" && as_nobody_grp "$ctl" versions file > "$t/o1" 2>&1)
ok test $? = 0
ok grep -q "^$s2 " "$t/o1"
versions "$t/src/grp" file
ok grep -qx 'exit 4' "$t/out"

# restore --mine: her own deleted symbolic link comes back as the link, hers.
mine() { # CWD ARGS...: refsnapctl restore --mine as nobody, as versions() keeps its output
	local cwd=$1; shift
	(cd "$cwd" && as_nobody "$ctl" restore --mine "$@" > "$t/o1" 2> "$t/o2"; echo "exit $?" > "$t/o3")
	cat "$t/o1" "$t/o2" "$t/o3" > "$t/out"
}
mine "$t/src/own" "$s1" link --dry-run
ok grep -qx 'exit 0' "$t/out"
ok grep -q "^would restore link from $s1 of self\$" "$t/out"
ok test ! -e "$t/src/own/link" -a ! -L "$t/src/own/link"
mine "$t/src/own" "$s1" link
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/src/own/link")" = "target of a"
ok test "$(stat -c %U "$t/src/own/link")" = nobody
# Again from latest, over its live twin: refused (--mine takes no guard
# snapshot, so a live entry is never replaced), the live one intact,
# nothing left behind; a dry run says the same.
mine "$t/src/own" latest link
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'link exists in the destination: move it away or give --to DIR' "$t/out"
ok test "$(readlink "$t/src/own/link")" = "target of a"
ok sh -c "! ls -A '$t/src/own' | grep -q refsnap-mine"
mine "$t/src/own" latest link --dry-run
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'link exists in the destination' "$t/out"
ok test "$(readlink "$t/src/own/link")" = "target of a"
# ... and made with --to where it is not.
mkdir "$t/src/own/back"; chown nobody "$t/src/own/back"
mine "$t/src/own" latest link --to "$t/src/own/back"
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/src/own/back/link")" = "target of bb"
ok test "$(readlink "$t/src/own/link")" = "target of a"
# What is made has her own primary group (the bus's egid), not the
# lowest-numbered of her groups (4242, below nogroup's).
rm "$t/src/own/back/link"
(cd "$t/src/own" && as_nobody_grp "$ctl" restore --mine latest link --to "$t/src/own/back" > "$t/out" 2>&1)
ok test $? = 0
ok test "$(stat -c %g "$t/src/own/back/link")" = "$gn"
# A FIFO is never made for a user; a file here fails (the host has no
# reflinks) and leaves nothing behind.
mine "$t/src/own" "$s1" fifo
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'neither a file nor a symbolic link' "$t/out"
mine "$t/src/own" "$s1" mine
ok grep -qx 'exit 1' "$t/out"
ok test ! -e "$t/src/own/mine"
ok sh -c "! ls -A '$t/src/own' | grep -q refsnap-mine"
# Into a directory she may not write (--to): the kernel says no, as her.
mkdir -p "$t/rootdir"
mine "$t/src/own" "$s1" link --to "$t/rootdir"
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'Permission denied' "$t/out"
ok test -z "$(ls -A "$t/rootdir")"
# Missing and forbidden look the same here too, and nothing is made.
mine "$t/src/a" "$s1" secret --to "$t/src/own"
cp "$t/out" "$t/forbidden.out"
mine "$t/src/b" "$s1" secret --to "$t/src/own"
ok cmp "$t/forbidden.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
ok test ! -e "$t/src/own/secret"
# ... and for what its owner closed before it was renamed away live.
mine "$t/src" "$s1" moved/f --to "$t/nob"
cp "$t/out" "$t/moved.out"
mine "$t/src/b" "$s1" moved/f --to "$t/nob"
ok cmp "$t/moved.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
mine "$t/src/a" "$s1" single --to "$t/nob"
ok grep -qx 'exit 4' "$t/out"
ok test -z "$(ls -A "$t/nob")"
# A snapshot that is not there: the same.
mine "$t/src/own" 2001-01-01T00:00:00Z link
ok grep -qx 'exit 4' "$t/out"
ok grep -q "RestoreMine() for uid $un (:1\.[0-9]*): restoring as the caller" "$t/daemon.log"

# A path that is not absolute and normalized, straight on the bus: refused as such.
ok sh -c "! setpriv --reuid=nobody --regid=$gn --clear-groups '${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' call ${M[*]} Versions aya{sv} 3 97 47 98 0 2>&1 | grep -q NoSuchVersion"
# Every call logged with the caller.
ok grep -q "Versions() called by uid $un, pid [1-9][0-9]*, unit .*: org.refsnap1.self-service authorized by polkit" "$t/daemon.log"
ok grep -q "Versions() for uid $un (:1\.[0-9]*): looking it up as the caller" "$t/daemon.log"
ok sh -c "! grep -q 'the worker' '$t/daemon.log'"
ok grep -q "uid $un (:1\.[0-9]*) restored one entry of her own from $s1" "$t/daemon.log"

# Calls parked while polkit thinks count too: 8 per user waiting or
# running, Busy at once beyond, before polkit is asked; root's reading
# calls answered meanwhile; the bound freed again once polkit answers.
asked() { grep -c "action=org.refsnap1.self-service flags=[01] uid=$un\$" "$t/pk.log"; }
echo "org.refsnap1.self-service $un hold" > "$t/rules"
before=$(asked)
p=$t/src/own
held=()
for i in 1 2 3 4 5 6 7 8; do
	setpriv --reuid=nobody --regid="$gn" --clear-groups "${bc[@]}" call --timeout=120 "${M[@]}" Versions aya{sv} \
		"$(printf %s "$p" | wc -c)" $(printf %s "$p" | od -An -tu1) 0 > "$t/held.$i" 2>&1 &
	held+=($!)
done
ok wait_until 30 sh -c "test \$(grep -c 'action=org.refsnap1.self-service flags=[01] uid=$un\$' '$t/pk.log') = $((before + 8))"
out=$(as_nobody "${bc[@]}" call --timeout=60 "${M[@]}" Versions aya{sv} "$(printf %s "$p" | wc -c)" \
	$(printf %s "$p" | od -An -tu1) 0 2>&1)
ok grep -q 'Too many self-service requests at once' <<<"$out"
ok test "$(asked)" = $((before + 8))
ok "$ctl" status
echo "org.refsnap1.self-service $un yes" > "$t/rules"
for c in "${held[@]}"; do wait "$c"; done
ok sh -c "cat '$t'/held.* | grep -c '^sa(stttub) \"self\"' | grep -qx 8"
versions "$t/src/own" mine
ok grep -qx 'exit 0' "$t/out"

kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon.log'"

# The limits, with workers that take their time (a test-only sleep in
# the worker, once it is the caller): 4 at once per user, Busy beyond;
# a worker killed when its caller leaves the bus; the daemon stopping
# ends them and exits.
REFSNAP_TEST_SELF_SLEEP=60 "$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon2.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
p=$t/src/own
call=(call --timeout=120 "${M[@]}" Versions aya{sv} "$(printf %s "$p" | wc -c)" $(printf %s "$p" | od -An -tu1) 0)
workers() { grep -c "Versions() for uid $un (:1\.[0-9]*): looking it up as the caller" "$t/daemon2.log"; }
clients=()
# setpriv itself in the background (it execs busctl): $! is the client.
for i in 1 2 3 4; do
	setpriv --reuid=nobody --regid="$gn" --clear-groups "${bc[@]}" "${call[@]}" > /dev/null 2>&1 &
	clients+=($!)
done
ok wait_until 30 sh -c "test \$(grep -c 'looking it up as the caller' '$t/daemon2.log') = 4"
children() { pgrep -P "$d_pid" | wc -l; }
ok test "$(children)" = 4
out=$(as_nobody "${bc[@]}" "${call[@]}" 2>&1)
ok grep -q 'Too many self-service requests at once' <<<"$out"
# Root's reading calls are answered meanwhile: the loop never waits on a worker.
ok "$ctl" status
# A caller that leaves: its worker is killed.
kill "${clients[0]}"
wait "${clients[0]}" 2>/dev/null
ok wait_until 30 grep -q 'the caller went away, pid [0-9]* killed' "$t/daemon2.log"
ok wait_until 30 sh -c "test \$(pgrep -P $d_pid | wc -l) = 3"
setpriv --reuid=nobody --regid="$gn" --clear-groups "${bc[@]}" "${call[@]}" > /dev/null 2>&1 &
clients+=($!)
ok wait_until 30 sh -c "test \$(grep -c 'looking it up as the caller' '$t/daemon2.log') = 5"
# Stopping: the workers end, the callers are told, the daemon exits cleanly.
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
for c in "${clients[@]:1}"; do wait "$c"; done
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon2.log'"

# The journal: a user's self-service lines are rate limited (200 per
# 30 s per user): a flood of refused calls logs no more, says once that
# the rest is suppressed, and another user's lines are still logged.
echo "org.refsnap1.self-service $un no" > "$t/rules"
"$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon3.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
p=$t/src/own
start=$(date +%s%N)
for i in $(seq 250); do
	as_nobody "${bc[@]}" call "${M[@]}" Versions aya{sv} "$(printf %s "$p" | wc -c)" $(printf %s "$p" | od -An -tu1) 0 \
		> /dev/null 2>&1
done
echo "# 250 refused calls in $((($(date +%s%N) - start) / 1000000)) ms"
refused() { grep -c "Versions() from uid $1, pid [0-9]*, unit .* refused: org.refsnap1.self-service: not authorized" "$t/daemon3.log"; }
ok test "$(refused "$un")" -lt 250
ok grep -q "uid $un: more than 200 self-service log lines in 30 s: the rest suppressed" "$t/daemon3.log"
setpriv --reuid=daemon --regid=daemon --clear-groups "${bc[@]}" call "${M[@]}" Versions aya{sv} \
	"$(printf %s "$p" | wc -c)" $(printf %s "$p" | od -An -tu1) 0 > /dev/null 2>&1
ok test "$(refused "$(id -u daemon)")" = 1
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|runtime error' '$t/daemon3.log'"
[ "$failed" = 0 ] || { echo "# daemon log:"; sed 's/^/# /' "$t/daemon.log"; sed 's/^/# 2: /' "$t/daemon2.log" 2>/dev/null; tail -5 "$t/daemon3.log" 2>/dev/null | sed 's/^/# 3: /'; echo "# polkit:"; sed 's/^/# /' "$t/pk.log"
	echo "# last:"; sed 's/^/# /' "$t/out"; echo "# own:"; sed 's/^/# /' "$t/own.out"; }
echo "1..$n"
[ "$failed" = 0 ]
