#!/bin/bash
# Self-service through the bus, on the host, under ASan: refsnapd on a
# private bus with fake-polkitd (as test-polkit.sh), a job whose store
# holds two snapshots made here by hand (plain directories: the host has
# no reflinks), and `refsnapctl versions` as nobody (setpriv): an own
# deleted file listed, with which versions differ; root's 0600 file, a
# readable file in a directory nobody cannot search, and a file whose
# live directory is private now not listed, and refused byte for byte as
# a missing one is; a group's file listed with the group and not after
# setpriv --clear-groups; polkit saying no refuses; restore --mine over
# a live entry with a guard snapshot first (listed, attributed, bounded
# per user; a guard that fails replaces nothing), of a directory (a
# directory she may search but not list never enumerated), --delete
# (inside what she may write, no link followed), --dry-run [--json].
# Run as root; skipped otherwise.
set -u
. "${TEST_BUS_LIB:-$(dirname "$0")/test-bus-lib.sh}"
daemon=${1:?usage: test-self-service.sh REFSNAPD REFSNAPCTL FAKE-POLKITD POLICY}
ctl=${2:?} fake=${3:?} policy=${4:?}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1 ||
   ! id daemon >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv and the users nobody and daemon"
	exit 0
fi
# A mount namespace of its own: the source and the store are on a
# btrfs of the test's (a loop device), so that files are restored with
# reflinks (libreflink's stock path) and a guard snapshot can be taken.
if [ -z "${REFSNAP_TEST_SELF_NS:-}" ] && unshare -m --propagation private true 2>/dev/null; then
	REFSNAP_TEST_SELF_NS=1 exec unshare -m --propagation private "$0" "$@"
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
mkdir -p "$t/b"
# Only where btrfs and the loop driver are in the kernel already (a test never makes it load one).
if ! { [ -n "${REFSNAP_TEST_SELF_NS:-}" ] && grep -qw btrfs /proc/filesystems && [ -e /dev/loop-control ] &&
	truncate -s 128M "$t/b.img" &&
	mkfs.btrfs -q -f -n 4096 "$t/b.img" >/dev/null 2>&1 && mount -o loop "$t/b.img" "$t/b"; }; then
	echo "1..0 # SKIP needs a mount namespace and a loop-mounted btrfs (reflinks, for files and guard snapshots)"
	exit 0
fi
trap 'umount -l "$t/b" 2>/dev/null; bus_test_cleanup' EXIT
chmod 0755 "$t/b"
mkdir -p "$t/b/store"
chmod 0700 "$t/b/store"
tree "$t/b/store/$s1" a
tree "$t/b/store/$s2" bb
cp -a "$t/b/store/$s2" "$t/b/store/$s3"     # the same as the one before
cp -a "$t/b/store/$s2" "$t/b/src"
rm "$t/b/src/own/mine" "$t/b/src/own/link"  # deleted since
chmod 0700 "$t/b/src/was-open"    # and closed by its owner since
# Open in the first snapshot, closed by its owner in the newer ones, then
# renamed away live by someone who may write its parent: a directory
# (moved) and a file (a/single).
for s in "$s1" "$s2" "$s3"; do
	mkdir -m 0755 "$t/b/store/$s/moved"
	echo old > "$t/b/store/$s/moved/f"
	echo old > "$t/b/store/$s/a/single"
done
chmod 0700 "$t/b/store/$s2/moved" "$t/b/store/$s3/moved"
# A directory of hers, for restore --mine of a directory: links and
# directories only; in it a directory of
# root's she may search but not list (0711), one she may not enter
# (0700), and one open to her.
for s in "$s1" "$s2" "$s3"; do
	d=$t/b/store/$s/own/d
	mkdir -p "$d/sub" "$d/hidden" "$d/priv" "$d/open"
	ln -s one "$d/l1"; ln -s two "$d/sub/l2"
	ln -s x "$d/hidden/secretname"; ln -s y "$d/priv/p"; ln -s z "$d/open/o"
	chown -h nobody:"$gn" "$d" "$d/sub" "$d/l1" "$d/sub/l2"
	chmod 0755 "$d" "$d/open"; chmod 0750 "$d/sub"; chmod 0711 "$d/hidden"; chmod 0700 "$d/priv"
done

chmod 0600 "$t/b/store/$s2/a/single" "$t/b/store/$s3/a/single"
mkdir -m 0700 "$t/b/src/moved.x"
echo old > "$t/b/src/a/single.x"; chmod 0600 "$t/b/src/a/single.x"
mkdir -p "$t/nob"; chown nobody "$t/nob"
# interval 52w: no scheduled snapshot of its own during the test (with
# 1h, one due at 04:00:00 held the store when a guard was asked at
# 04:00:04, and the guard got JobRunning).
printf '[self]\nsource = %s\nstore = %s\ninterval = 52w\nexclude = *.keep\n' "$t/b/src" "$t/b/store" > "$t/main.conf"
# A second job, whose own excludes --delete --to into it keeps (*.cache).
mkdir -p "$t/b/src2" "$t/b/store2/$s3"; chmod 0700 "$t/b/store2"
printf '[other]\nsource = %s\nstore = %s\ninterval = 52w\nexclude = *.cache\n' "$t/b/src2" "$t/b/store2" >> "$t/main.conf"
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
versions "$t/b/src/own" mine
ok grep -qx 'exit 5' "$t/out"
ok grep -q "action=org.refsnap1.self-service flags=0 uid=$un\$" "$t/pk.log"
echo "org.refsnap1.self-service $un yes" > "$t/rules"

# Her own deleted file: its versions, newest first; only those that differ unless --all.
versions "$t/b/src/own" mine
ok grep -qx 'exit 0' "$t/out"
ok test "$(grep -c '^20' "$t/o1")" = 2
ok grep -q "^$s2 .* 2B  file\$" "$t/o1"
ok grep -q "^$s1 .* 1B  file\$" "$t/o1"
ok test "$(head -2 "$t/o1" | tail -1 | cut -d' ' -f1)" = "$s2"
versions "$t/b/src/own" mine --all
ok test "$(grep -c '^20' "$t/o1")" = 3
ok grep -q "^$s3 .*(unchanged)\$" "$t/o1"
# MODIFIED: the file's time for a person, in her zone with its name (TZ), or in UTC with --utc.
m2=$(stat -c %Y "$t/b/store/$s2/own/mine")
TZ=XYZ-9 versions "$t/b/src/own" mine
ok grep -q "^$s2 *$(TZ=XYZ-9 date -d "@$m2" '+%Y-%m-%d %H:%M:%S XYZ') .* 2B  file\$" "$t/o1"
versions "$t/b/src/own" mine --utc
ok grep -q "^$s2 *$(date -u -d "@$m2" '+%Y-%m-%d %H:%M:%S UTC') .* 2B  file\$" "$t/o1"
versions "$t/b/src" own/mine --json
ok grep -q '"job":"self"' "$t/o1"
ok grep -q "\"path\":\"$t/b/src/own/mine\"" "$t/o1"
ok python3 -c "import json,sys; d=json.load(open('$t/o1')); sys.exit(not (len(d['versions']) == 2 and d['versions'][0]['snapshot'] == '$s2' and d['versions'][0]['differs']))"
cp "$t/out" "$t/own.out"
# A directory too.
versions "$t/b/src" own
ok grep -qx 'exit 0' "$t/out"

# Missing and forbidden look the same: root's 0600 file (a/secret) and
# a name no snapshot has (b/secret), asked the same way, byte for byte.
versions "$t/b/src/a" secret
cp "$t/out" "$t/forbidden.out"
versions "$t/b/src/b" secret
ok cmp "$t/forbidden.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
ok grep -qx 'refsnapctl: no version of secret that you may read' "$t/out"
# Readable, in a directory nobody could not search: the same.
mv "$t/b/src/closed" "$t/b/src/closed.x"; mkdir "$t/b/src/b/closed"
versions "$t/b/src" closed/readable
cp "$t/out" "$t/closed.out"
versions "$t/b/src/b" closed/readable
ok cmp "$t/closed.out" "$t/out"
mv "$t/b/src/closed.x" "$t/b/src/closed"
# Readable in every snapshot, but its live directory is private now: the same.
mkdir -p "$t/b/src/b/was-open"
versions "$t/b/src" was-open/file
cp "$t/out" "$t/was-open.out"
versions "$t/b/src/b" was-open/file
ok cmp "$t/was-open.out" "$t/out"
# ... and visible again once its owner opens it.
chmod 0755 "$t/b/src/was-open"
versions "$t/b/src" was-open/file
ok grep -qx 'exit 0' "$t/out"
chmod 0700 "$t/b/src/was-open"
# Closed by its owner, then renamed away live: the newest snapshot that
# has it judges (closed there), so the same as a missing one.
mkdir -p "$t/b/src/b/moved"
versions "$t/b/src" moved/f
cp "$t/out" "$t/moved.out"
versions "$t/b/src/b" moved/f
ok cmp "$t/moved.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
versions "$t/b/src/a" single
cp "$t/out" "$t/single.out"
versions "$t/b/src/b" single
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
(cd "$t/b/src/grp" && as_nobody_grp "$ctl" versions file > "$t/o1" 2>&1)
ok test $? = 0
ok grep -q "^$s2 " "$t/o1"
versions "$t/b/src/grp" file
ok grep -qx 'exit 4' "$t/out"

# restore --mine: her own deleted symbolic link comes back as the link, hers.
mine() { # CWD ARGS...: refsnapctl restore --mine as nobody, as versions() keeps its output
	local cwd=$1; shift
	(cd "$cwd" && as_nobody "$ctl" restore --mine "$@" > "$t/o1" 2> "$t/o2"; echo "exit $?" > "$t/o3")
	cat "$t/o1" "$t/o2" "$t/o3" > "$t/out"
}
mine "$t/b/src/own" "$s1" link --dry-run
ok grep -qx 'exit 0' "$t/out"
ok grep -q "^would restore link from $s1 of self\$" "$t/out"
ok test ! -e "$t/b/src/own/link" -a ! -L "$t/b/src/own/link"
mine "$t/b/src/own" "$s1" link
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/b/src/own/link")" = "target of a"
ok test "$(stat -c %U "$t/b/src/own/link")" = nobody
# Again from latest, over its live twin: replaced, a guard snapshot of
# what it replaces taken first (of that path only, listed as a guard,
# with whose it is), and logged with the caller; nothing left behind.
nsnaps() { ls "$t/b/store" | grep -c '^20'; }
before=$(nsnaps)
mine "$t/b/src/own" latest link --dry-run
ok grep -qx 'exit 0' "$t/out"
ok grep -q '^~ link$' "$t/out"
ok grep -q 'a guard snapshot of what it replaces would be taken first' "$t/out"
ok test "$(readlink "$t/b/src/own/link")" = "target of a"
ok test "$(nsnaps)" = "$before"
mine "$t/b/src/own" latest link
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/b/src/own/link")" = "target of bb"
ok test "$(nsnaps)" = $((before + 1))
guard=$(ls "$t/b/store" | grep '^20' | tail -1)
ok grep -q "guard snapshot $guard of self taken first" "$t/out"
ok test "$(readlink "$t/b/store/$guard/own/link")" = "target of a"
ok test ! -e "$t/b/store/$guard/own/mine"
ok sh -c "'$ctl' -c '$t/main.conf' list self | grep '^self  *$guard ' | grep -q '  guard.*description: self-service restore of uid $un\$'"
ok grep -q "self: guard snapshot $guard taken for a self-service restore by uid $un, pid [1-9][0-9]*, unit [^ ]* (:1\.[0-9]*)" "$t/daemon.log"
ok sh -c "! ls -A '$t/b/src/own' | grep -q refsnap-mine"
# The same again: nothing to replace (the live link is the snapshot's), no guard.
mine "$t/b/src/own" latest link
ok grep -qx 'exit 0' "$t/out"
ok grep -q '^= link$' "$t/out"
ok test "$(nsnaps)" = $((before + 1))
# No guard can be taken while the store is locked (a snapshot, prune or
# root's restore of the job): JobRunning, and nothing replaced.
echo live > "$t/b/src/own/mine"; chown nobody "$t/b/src/own/mine"
(flock -x 9 && exec sleep 120) 9< "$t/b/store" &
holder=$!
ok wait_until 10 sh -c "! flock -n -x '$t/b/store' true"
mine "$t/b/src/own" "$s1" mine
ok sh -c "! grep -qx 'exit 0' '$t/out'"
ok grep -q 'is running, so no guard snapshot could be taken: nothing restored' "$t/out"
ok test "$(cat "$t/b/src/own/mine")" = live
ok sh -c "! ls -A '$t/b/src/own' | grep -q refsnap-mine"
kill "$holder"; wait "$holder" 2>/dev/null
# With the store free: her file over its live twin, the guard holding the live one.
before=$(nsnaps)
mine "$t/b/src/own" "$s1" mine
ok grep -qx 'exit 0' "$t/out"
ok test "$(cat "$t/b/src/own/mine")" = a
ok test "$(stat -c %U "$t/b/src/own/mine")" = nobody
guard=$(ls "$t/b/store" | grep '^20' | tail -1)
ok test "$(nsnaps)" = $((before + 1))
ok test "$(cat "$t/b/store/$guard/own/mine")" = live
rm "$t/b/src/own/mine"
# ... and made with --to where it is not.
mkdir "$t/b/src/own/back"; chown nobody "$t/b/src/own/back"
mine "$t/b/src/own" latest link --to "$t/b/src/own/back"
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/b/src/own/back/link")" = "target of bb"
ok test "$(readlink "$t/b/src/own/link")" = "target of bb"
# What is made has her own primary group (the bus's egid), not the
# lowest-numbered of her groups (4242, below nogroup's).
rm "$t/b/src/own/back/link"
(cd "$t/b/src/own" && as_nobody_grp "$ctl" restore --mine latest link --to "$t/b/src/own/back" > "$t/out" 2>&1)
ok test $? = 0
ok test "$(stat -c %g "$t/b/src/own/back/link")" = "$gn"
# A FIFO is never made for a user, and leaves nothing behind.
mine "$t/b/src/own" "$s1" fifo
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'neither a file nor a symbolic link' "$t/out"
ok sh -c "! ls -A '$t/b/src/own' | grep -q refsnap-mine"
# Into a directory she may not write (--to): the kernel says no, as her.
mkdir -p "$t/rootdir"
mine "$t/b/src/own" "$s1" link --to "$t/rootdir"
ok grep -qx 'exit 1' "$t/out"
ok grep -q 'Permission denied' "$t/out"
ok test -z "$(ls -A "$t/rootdir")"
# Missing and forbidden look the same here too, and nothing is made.
mine "$t/b/src/a" "$s1" secret --to "$t/b/src/own"
cp "$t/out" "$t/forbidden.out"
mine "$t/b/src/b" "$s1" secret --to "$t/b/src/own"
ok cmp "$t/forbidden.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
ok test ! -e "$t/b/src/own/secret"
# ... and for what its owner closed before it was renamed away live.
mine "$t/b/src" "$s1" moved/f --to "$t/nob"
cp "$t/out" "$t/moved.out"
mine "$t/b/src/b" "$s1" moved/f --to "$t/nob"
ok cmp "$t/moved.out" "$t/out"
ok grep -qx 'exit 4' "$t/out"
mine "$t/b/src/a" "$s1" single --to "$t/nob"
ok grep -qx 'exit 4' "$t/out"
ok test -z "$(ls -A "$t/nob")"
# A snapshot that is not there: the same.
mine "$t/b/src/own" 2001-01-01T00:00:00Z link
ok grep -qx 'exit 4' "$t/out"
# restore --mine of a directory: what she may read comes back (hers),
# directories with their modes; a directory she may search but not list
# is never enumerated: no name in it made, said, or logged.
before=$(nsnaps)
mine "$t/b/src/own" "$s1" d --dry-run
ok grep -qx 'exit 0' "$t/out"
ok grep -q '^+ d/$' "$t/out"
ok grep -q '^+ d/sub/l2$' "$t/out"
ok grep -q '^! d/hidden/' "$t/out"
ok sh -c "! grep -q secretname '$t/out'"
ok test ! -e "$t/b/src/own/d"
mine "$t/b/src/own" "$s1" d
ok grep -qx 'exit 1' "$t/out"
ok test "$(readlink "$t/b/src/own/d/l1")" = one
ok test "$(readlink "$t/b/src/own/d/sub/l2")" = two
ok test "$(stat -c '%U %a' "$t/b/src/own/d")" = "nobody 755"
ok test "$(stat -c '%U %a' "$t/b/src/own/d/sub")" = "nobody 750"
ok test "$(readlink "$t/b/src/own/d/open/o")" = z
ok test "$(stat -c %U "$t/b/src/own/d/open/o")" = nobody
ok test ! -e "$t/b/src/own/d/hidden"
ok test ! -e "$t/b/src/own/d/priv"
ok sh -c "! grep -q secretname '$t/out' '$t/daemon.log'"
ok test "$(nsnaps)" = "$before"
# A directory she may search but not list has no versions for her.
versions "$t/b/src/own" d/hidden
ok grep -qx 'exit 4' "$t/out"
versions "$t/b/src/own" d
ok grep -qx 'exit 0' "$t/out"
# --delete: what the snapshot does not have goes, only inside what she
# may write, links never followed; a guard snapshot holds it first.
ln -sfn changed "$t/b/src/own/d/l1"; ln -s three "$t/b/src/own/d/l3"
mkdir -p "$t/outside"; echo keep > "$t/outside/file"
ln -s "$t/outside" "$t/b/src/own/d/sub/lk"
chown -h nobody "$t/b/src/own/d/l1" "$t/b/src/own/d/l3" "$t/b/src/own/d/sub/lk"
mkdir "$t/b/src/own/d/rootdir"; ln -s r "$t/b/src/own/d/rootdir/r"      # root's, in her directory
# What the job excludes (*.keep) is left alone, also in a directory removed.
ln -s k "$t/b/src/own/d/x.keep"; mkdir "$t/b/src/own/d/sub2"; ln -s y "$t/b/src/own/d/sub2/y.keep"
ln -s z "$t/b/src/own/d/sub2/z"
chown -h nobody "$t/b/src/own/d/x.keep" "$t/b/src/own/d/sub2" "$t/b/src/own/d/sub2/y.keep" "$t/b/src/own/d/sub2/z"
mine "$t/b/src/own" "$s1" d --delete --dry-run --json
ok grep -qx 'exit 0' "$t/out"
ok python3 -c "
import json
d = json.load(open('$t/o1'))
e = {(x['change'], x['path']) for x in d['entries']}
assert ('changed', 'd/l1') in e and ('removed', 'd/l3') in e and ('removed', 'd/sub/lk') in e, e
assert d['guard'] and d['delete'] and not any('secretname' in x['path'] for x in d['entries'])
assert ('kept', 'd/x.keep') in e and ('kept', 'd/sub2/y.keep') in e and ('removed', 'd/sub2/z') in e, e"
ok test "$(readlink "$t/b/src/own/d/l3")" = three
ok test "$(nsnaps)" = "$before"
mine "$t/b/src/own" "$s1" d --delete
cp "$t/out" "$t/delete.out"
ok grep -qx 'exit 1' "$t/out"
ok test "$(readlink "$t/b/src/own/d/l1")" = one
ok test ! -e "$t/b/src/own/d/l3" -a ! -L "$t/b/src/own/d/l3"
ok test ! -e "$t/b/src/own/d/sub/lk" -a ! -L "$t/b/src/own/d/sub/lk"
ok test "$(cat "$t/outside/file")" = keep
ok test -L "$t/b/src/own/d/rootdir/r"
ok test -L "$t/b/src/own/d/x.keep" -a -L "$t/b/src/own/d/sub2/y.keep"
ok test ! -L "$t/b/src/own/d/sub2/z"
ok test "$(nsnaps)" = $((before + 1))
guard=$(ls "$t/b/store" | grep '^20' | tail -1)
ok test "$(readlink "$t/b/store/$guard/own/d/l3")" = three
ok test "$(readlink "$t/b/store/$guard/own/d/l1")" = changed
ok sh -c "! grep -q secretname '$t/out' '$t/daemon.log'"
rm -r "$t/b/src/own/d/rootdir" "$t/b/src/own/d/x.keep" "$t/b/src/own/d/sub2"
# --delete from that guard (of own/d only) of all of own: it holds nothing
# else of own, so nothing else of own is removed.
mine "$t/b/src" "$guard" own --to "$t/b/src" --delete
ok test -L "$t/b/src/own/link" -a -d "$t/b/src/own/back" -a -d "$t/b/src/own/d"
# A live directory of another user's where hers was (daemon's, 0777):
# never merged into, nothing of hers made in it.
mkdir -p "$t/nob/m3/d"; chown nobody "$t/nob/m3" "$t/nob/m3/d"
mkdir -m 0777 "$t/nob/m3/d/sub"; chown daemon "$t/nob/m3/d/sub"; chmod 0777 "$t/nob/m3/d/sub"
mine "$t/b/src/own" "$s1" d --to "$t/nob/m3"
ok grep -qx 'exit 1' "$t/out"
ok grep -q '^! d/sub/: .*another user' "$t/out"
ok test ! -L "$t/nob/m3/d/sub/l2"
ok test "$(readlink "$t/nob/m3/d/l1")" = one
# --delete --to a directory of another job: that job's excludes (*.cache)
# are what --delete leaves alone there, at the destination's path.
mkdir -p "$t/b/src2/w/d"; chown nobody "$t/b/src2/w" "$t/b/src2/w/d"
ln -s c "$t/b/src2/w/d/x.cache"; ln -s zz "$t/b/src2/w/d/zz"
chown -h nobody "$t/b/src2/w/d/x.cache" "$t/b/src2/w/d/zz"
mine "$t/b/src/own" "$s1" d --to "$t/b/src2/w" --delete
ok test -L "$t/b/src2/w/d/x.cache"
ok grep -q '^= d/x.cache' "$t/out"
ok test ! -L "$t/b/src2/w/d/zz"
ok test "$(readlink "$t/b/src2/w/d/l1")" = one
# Guard snapshots are bounded per user: beyond the bound a restore that
# needs one is refused (Busy) and replaces nothing.
for i in $(seq 12); do
	ln -sfn "changed $i" "$t/b/src/own/link"; chown -h nobody "$t/b/src/own/link"
	mine "$t/b/src/own" latest link
	grep -q 'Too many guard snapshots' "$t/out" && break
done
ok grep -q 'Too many guard snapshots' "$t/out"
ok grep -qx 'exit 1' "$t/out"
ok test "$(readlink "$t/b/src/own/link")" = "changed $i"
rm "$t/b/src/own/link"
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
p=$t/b/src/own
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
versions "$t/b/src/own" mine
ok grep -qx 'exit 0' "$t/out"

kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' '$t/daemon.log'"

# The limits, with workers that take their time (a test-only sleep in
# the worker, once it is the caller): 4 at once per user, Busy beyond;
# a worker killed when its caller leaves the bus; the daemon stopping
# ends them and exits.
REFSNAP_TEST_SELF_SLEEP=60 "$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon2.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
p=$t/b/src/own
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
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' '$t/daemon2.log'"

# What changes between the plan and the restore is never replaced or
# removed (no snapshot holds it), and the snapshot restored is the one
# planned ("latest" resolved once): restore --mine --delete whose worker
# takes its time (a test-only sleep), the live tree changed once the
# guard is taken, and a newer snapshot made meanwhile.
REFSNAP_TEST_SELF_SLEEP=4 REFSNAP_TEST_GUARD_SLEEP=3 "$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon5.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
e=$t/b/src/own/d
mkdir -p "$e/sub"
ln -sfn changed "$e/l1"; ln -sfn three "$e/l3"; ln -sfn two "$e/sub/l2"
chown -h nobody "$e/sub" "$e/l1" "$e/l3" "$e/sub/l2"
mine "$t/b/src/own" latest d --delete &
m_pid=$!
# While the guard's child runs (the daemon holds its report's memfd): a newer snapshot.
ok wait_until 60 sh -c "ls -l /proc/$d_pid/fd | grep -q memfd:refsnap-self-guard"
for k in $(seq 20 40); do
	s4=$(date -u -d "$k seconds ago" +%Y-%m-%dT%H:%M:%SZ)
	[ -e "$t/b/store/$s4" ] || break
done
[[ "$s4" > "$s3" ]] || echo "# $s4 is not after $s3"
cp -a "$t/b/store/$s3" "$t/b/store/$s4"
ln -sfn four "$t/b/store/$s4/own/d/sub/l2"
# Once the guard is taken (the restore's worker takes its time): the live tree changed.
ok wait_until 60 grep -q 'guard snapshot .* taken for a self-service restore' "$t/daemon5.log"
touch -h "$e/l1"                        # the same link, changed (its ctime)
ln -sfn three-late "$e/l3"              # another link where l3 was
ln -s late "$e/late"                    # a new entry
mkdir "$e/moved-in"; ln -s f "$e/moved-in/f"     # a directory moved in
chown -h nobody "$e/l3" "$e/late" "$e/moved-in" "$e/moved-in/f"
wait "$m_pid"
cp "$t/out" "$t/late.out"
ok grep -qx 'exit 1' "$t/out"
ok test "$(readlink "$e/l1")" = changed
ok grep -q '^! d/l1: .*changed since the plan' "$t/out"
ok test "$(readlink "$e/l3")" = three-late
ok test "$(readlink "$e/late")" = late
ok test "$(readlink "$e/moved-in/f")" = f
ok test "$(readlink "$e/sub/l2")" = two
ok sh -c "! grep -q '$s4' '$t/out'"
rm -r "$e/late" "$e/moved-in" "$t/b/store/$s4"
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' '$t/daemon5.log'"

# A snapshot that comes due while a guard snapshot runs waits for it and
# then starts (never skipped, never failed on the store's lock): a job due
# every 4 s, and a guard that takes its time (a test-only sleep in the
# guard's child before it takes the snapshot).
# The link is excluded from the job's own snapshots (a guard excludes
# nothing), so none of them holds it and the restore always needs a guard;
# the version restored is in a snapshot made here by hand.
mkdir -p "$t/b/tick/own" "$t/b/tickstore"
chmod 0700 "$t/b/tickstore"
tick_first=$(date -u -d '5 minutes ago' +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$t/b/tickstore/$tick_first/own"
ln -s first "$t/b/tickstore/$tick_first/own/l"
chown nobody "$t/b/tick/own" "$t/b/tickstore/$tick_first/own"
ln -s second "$t/b/tick/own/l"
chown -h nobody "$t/b/tick/own/l" "$t/b/tickstore/$tick_first/own/l"
printf '[tick]\nsource = %s\nstore = %s\ninterval = 4s\nexclude = l\n' "$t/b/tick" "$t/b/tickstore" > "$t/tick.conf"
REFSNAP_TEST_GUARD_SLEEP=5 "$daemon" -c "$t/tick.conf" --conf-dir "$t/conf.d" > "$t/daemon4.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "ls '$t/b/tickstore' | grep '^20' | grep -v -x '$tick_first' | grep -q ."
# (A scheduled snapshot running when the guard is asked for: JobRunning, asked again.)
for i in 1 2 3 4 5; do
	mine "$t/b/tick/own" "$tick_first" l
	grep -q 'is running, so no guard snapshot could be taken' "$t/out" || break
done
ok grep -qx 'exit 0' "$t/out"
ok test "$(readlink "$t/b/tick/own/l")" = first
ok grep -q 'tick: due snapshot waits for the self-service guard snapshot running' "$t/daemon4.log"
tick_guard=$(sed -n 's/^guard snapshot \([^ ]*\) of tick taken first.*/\1/p' "$t/out")
ok test -n "$tick_guard"
# After the guard: a scheduled snapshot, none refused or failed for the lock.
ok wait_until 30 sh -c "ls '$t/b/tickstore' | grep '^20' | sort | tail -1 | grep -v -x '$tick_guard' | grep -q ."
ok sh -c "! grep -q 'previous snapshot still running\|another snapshot or prune of this job is running\|snapshot failed' '$t/daemon4.log'"
kill -TERM "$d_pid"
wait "$d_pid"
ok test $? = 0
d_pid=
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' '$t/daemon4.log'"

# The journal: a user's self-service lines are rate limited (200 per
# 30 s per user): a flood of refused calls logs no more, says once that
# the rest is suppressed, and another user's lines are still logged.
echo "org.refsnap1.self-service $un no" > "$t/rules"
"$daemon" -c "$t/main.conf" --conf-dir "$t/conf.d" > "$t/daemon3.log" 2>&1 &
d_pid=$!
ok wait_until 30 sh -c "'${bc[0]}' --address='$DBUS_SYSTEM_BUS_ADDRESS' list | grep -q '^org.refsnap1 '"
p=$t/b/src/own
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
ok sh -c "! grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' '$t/daemon3.log'"
[ "$failed" = 0 ] || { echo "# daemon log:"; sed 's/^/# /' "$t/daemon.log"; sed 's/^/# 2: /' "$t/daemon2.log" 2>/dev/null; tail -5 "$t/daemon3.log" 2>/dev/null | sed 's/^/# 3: /'; sed 's/^/# 4: /' "$t/daemon4.log" 2>/dev/null; echo "# polkit:"; sed 's/^/# /' "$t/pk.log"
	echo "# last:"; sed 's/^/# /' "$t/out"; echo "# delete:"; sed 's/^/# /' "$t/delete.out" 2>/dev/null; echo "# late:"; sed 's/^/# /' "$t/late.out" 2>/dev/null; sed 's/^/# 5: /' "$t/daemon5.log" 2>/dev/null; echo "# own:"; sed 's/^/# /' "$t/own.out"; }
echo "1..$n"
[ "$failed" = 0 ]
