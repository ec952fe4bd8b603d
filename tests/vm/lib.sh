# Helpers for the guest suites.  Each check records one verdict line in
# $REFSNAP_TEST_OUT/results.txt; a suite exits non-zero when any of its
# checks failed.

suite_failed=0

# Each verdict also goes to the console, so that a long run shows
# progress, and to the stream (the second serial port, which main opened),
# so that the host has it even if the guest never gets to write its
# results disk.  Shell builtins only: a run posts hundreds of verdicts.
console=${REFSNAP_TEST_CONSOLE:-/dev/console}
stream=${REFSNAP_TEST_STREAM:-/dev/null}
verdict() {
	printf '%s\n' "$*" >> "$REFSNAP_TEST_OUT/results.txt"
	printf '%s\n' "$*" >> "$console" 2>/dev/null
	printf '%s\n' "$*" >> "$stream" 2>/dev/null
}
pass() { verdict "PASS $REFSNAP_SUITE/$1"; }
fail() {
	verdict "FAIL $REFSNAP_SUITE/$1${2:+: $2}"
	suite_failed=1
}
skip() { verdict "SKIP $REFSNAP_SUITE/$1: $2"; }

# check NAME COMMAND...: pass when COMMAND succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "$*"; fi
}

# tap NAME-PREFIX COMMAND...: run a TAP producer (kselftest harness) and
# turn each of its test lines into a verdict.  Each line is stamped as it
# comes, and a test that took 10 s or more says how long ("time NAME S"),
# so that a slow suite shows where its time goes.  A program that ran no
# test, said no "1..N" plan, or ended before N tests is a FAIL.
tap() {
	local prefix=$1 line name rc stamp start= run= plan= n=0 us
	shift
	"$@" 2>&1 | while IFS= read -r line; do
		printf '%s %s\n' "$EPOCHREALTIME" "$line"
	done > "$REFSNAP_TEST_OUT/tap.tmp"
	rc=${PIPESTATUS[0]}
	cut -d' ' -f2- "$REFSNAP_TEST_OUT/tap.tmp"
	while IFS= read -r line; do
		stamp=${line%% *}
		line=${line#* }
		case "$line" in
		"1.."*)
			plan=${line#1..}; plan=${plan%%[!0-9]*}
			continue ;;
		"#  RUN "*)
			start=$stamp
			run=${line#\#  RUN}; run=${run#"${run%%[! ]*}"}; run=${run% ...}
			continue ;;
		"ok "*"# SKIP"*)
			# This harness names no test on a skip line: the RUN line did.
			name=${line#ok * }; name=${name%%# SKIP*}; name=${name% }
			[ -n "$name" ] || name=$run
			skip "$prefix/$name" "${line##*# SKIP }" ;;
		"ok "*)
			name=${line#ok * }
			pass "$prefix/$name" ;;
		"not ok "*)
			name=${line#not ok * }; name=${name%% # *}
			fail "$prefix/$name" ;;
		*) continue ;;
		esac
		n=$((n + 1))
		# Microseconds, from $EPOCHREALTIME without its decimal point.
		if [ -n "$start" ]; then
			us=$(( 10#${stamp//[.,]/} - 10#${start//[.,]/} ))
			[ "$us" -ge 10000000 ] &&
				printf 'time %s %d.%d s\n' "$prefix/$name" $((us / 1000000)) $((us / 100000 % 10))
		fi
		start=
	done < "$REFSNAP_TEST_OUT/tap.tmp"
	if [ "$n" = 0 ]; then
		fail "$prefix" "no test ran (exit $rc)"
	elif [ -z "$plan" ]; then
		fail "$prefix/plan" "no 1..N plan (exit $rc)"
	elif [ "$n" != "$plan" ]; then
		fail "$prefix/plan" "$n of the $plan tests planned reported (exit $rc)"
	fi
	[ "$rc" = 0 ] || [ "$rc" = 4 ] || suite_failed=1
}

suite_end() { exit "$suite_failed"; }

# disk SERIAL: the /dev node of the scratch disk QEMU named SERIAL.
disk() {
	local d
	for d in /sys/block/vd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# fixture_time WHAT START: how long a fixture took to make, in the
# suite's log ("time: fixture ..."), so the log shows what sharing the
# fixtures between suites would save.
fixture_time() {
	echo "time: fixture $1: $(( (${EPOCHREALTIME//[.,]/} - $2) / 1000 )) ms" >&2
}

# mkfs_mount TYPE SERIAL DIR: a fresh TYPE filesystem on the scratch disk.
mkfs_mount() {
	local t=${EPOCHREALTIME//[.,]/} rc
	mkfs_mount_ "$@"
	rc=$?
	fixture_time "mkfs_mount $1" "$t"
	return $rc
}
mkfs_mount_() {
	local dev
	dev=$(disk "$2") || { echo "no disk $2" >&2; return 1; }
	umount "$3" 2>/dev/null
	# The disk may still be mounted where an earlier suite left it: every
	# mount of it goes first (mkfs refuses a mounted device), deepest first.
	findmnt -rn -S "$dev" -o TARGET | sort -r | while IFS= read -r t; do
		umount "$t" || echo "mkfs_mount: $dev is still mounted on $t" >&2
	done
	case "$1" in
	# No discard of the whole disk first (-K, nodiscard): a scratch
	# disk's old blocks are never read, and the discard cost seconds.
	btrfs) mkfs.btrfs -q -K -f "$dev" ;;
	xfs) mkfs.xfs -q -K -f "$dev" ;;
	ext4) mkfs.ext4 -q -F -E nodiscard "$dev" ;;
	esac || return 1
	mkdir -p "$3" && mount -t "$1" "$dev" "$3"
}

# dm_table DEV TABLE: load TABLE, then suspend and resume DEV whatever the
# load did, so that the device is never left suspended (I/O to it would
# wait forever); fails when the load did.
dm_table() {
	local rc=0
	dmsetup load "$1" --table "$2" || rc=1
	dmsetup suspend --nolockfs "$1"
	dmsetup resume "$1" || rc=1
	return $rc
}

# What the refsnapd and refsnapctl suites share: a tree holding every kind
# of entry, the check of its part beyond PATH_MAX, and job drop-ins.
deep_name=d123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789

# make_tree DIR: every kind of entry a snapshot must keep.  Made once a
# boot (make_tree_template, in fixture_dir on the root filesystem) and
# copied with cp -a, which keeps owners, modes, set-id bits, ACLs,
# xattrs (trusted.* too, as root), hard links, holes, device nodes and
# times; the part beyond PATH_MAX, which cp cannot copy, is made in each
# copy (make_deep, one mkdir -p).  A copy instead of a new tree saves
# most of its processes (seconds each under KASAN).
fixture_dir=/var/tmp/refsnap-fixtures
make_tree() {
	local t=${EPOCHREALTIME//[.,]/} tpl=$fixture_dir/tree
	if [ ! -e "$tpl.done" ]; then
		rm -rf "$tpl" && mkdir -p "$tpl" && make_tree_template "$tpl" || return 1
		: > "$tpl.done"
		fixture_time "make_tree template" "$t"
		t=${EPOCHREALTIME//[.,]/}
	fi
	cp -a "$tpl"/* "$1/" && make_deep "$1" || return 1
	fixture_time make_tree "$t"
}
make_tree_template() (
	set -e
	cd "$1"
	umask 022
	printf 'hello\n' > plain
	printf 'suid\n' > suid && chmod 4755 suid
	printf 'sgid\n' > sgid && chown 1234:5678 sgid && chmod 2750 sgid
	printf 'owned\n' > owned && chown 4321:8765 owned && chmod 640 owned
	printf 'x' > 'name with spaces'
	printf 'y' > "$(printf 'new\nline')"
	printf 'z' > 'ünïcödé ✓'
	mkdir -p empty sub/deeper 'dir with space'
	printf 'deep\n' > sub/deeper/file
	ln sub/deeper/file hardlink1
	ln sub/deeper/file sub/hardlink2
	ln -s plain link
	ln -s /etc etc-link
	ln -s nowhere dangling
	mkfifo fifo
	mknod null c 1 3
	mknod blk b 7 0
	truncate -s 64M sparse
	printf 'data' | dd of=sparse bs=1 seek=40000000 conv=notrunc status=none
	setfacl -m u:3000:rw,g:3001:r plain
	setfacl -m u:3000:rx sub
	setfacl -d -m u:3000:rwx,g:3001:rx sub
	setfattr -n user.comment -v kept plain
	setfattr -n trusted.t -v 1 plain
	setfattr -n user.dir -v d sub
	chmod 1777 empty && chown 99:99 empty
	head -c 300000 /dev/urandom > big
	printf 'tmp' > junk.tmp
	touch -h -d '2001-02-03 04:05:06' link
	touch -d '2002-03-04 05:06:07' plain sub
)
# make_deep DIR: DIR/deep, a path longer than PATH_MAX (45 directories of
# 100 bytes) with DIR/deep/.../bottom at its end.
make_deep() (
	set -e
	local p=deep i
	for ((i = 0; i < 45; i++)); do p+=/$deep_name; done
	umask 022
	mkdir -p "$1/$p"
	cd "$1/deep"
	for ((i = 0; i < 45; i++)); do cd "$deep_name"; done
	printf 'bottom\n' > bottom
)

# same_deep SRC SNAP: the part beyond PATH_MAX, where rsync cannot go.
same_deep() {
	local a b
	a=$(cd "$1" && find deep -printf '%P %y %m %U:%G %s %T@\n' | sort | sha256sum)
	b=$(cd "$2" && find deep -printf '%P %y %m %U:%G %s %T@\n' | sort | sha256sum)
	[ "$a" = "$b" ] || return 1
	a=$(cd "$1" && find deep -type f -execdir sha256sum {} + | sort)
	b=$(cd "$2" && find deep -type f -execdir sha256sum {} + | sort)
	[ "$a" = "$b" ] && [ -n "$a" ]
}

# rm_store DIR: remove a store made by refsnapd, whose snapshots on btrfs
# are read-only subvolumes (rm -rf cannot empty those: EROFS).
rm_store() {
	local s
	for s in "$1"/20* "$1"/.partial-* "$1"/.removing-*; do
		[ "$(stat -c %i "$s" 2>/dev/null)" = 256 ] && btrfs subvolume delete "$s" > /dev/null
	done
	rm -rf "$1"
}

conf=${REFSNAP_TEST_CONF:-/etc/refsnap/conf.d}
mkdir -p "$conf"
job_conf() {	# job_conf NAME SOURCE STORE [KEY=VALUE...]
	local name=$1 src=$2 store=$3
	shift 3
	# Only the store's last component is ever made (refsnapd.conf(5)).
	mkdir -p "$(dirname "$store")"
	{ echo "[$name]"; echo "source = $src"; echo "store = $store"; echo "interval = 1h"
	  for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done; } > "$conf/50-$name.conf"
}


# expect_fs_errors begin|end: the filesystem errors the kernel reports
# between the two were provoked on purpose (dm-flakey, a shutdown):
# tests/console-check ignores them there, and only them.
expect_fs_errors() {
	echo "refsnap-test: expect-fs-errors $1" >> "${REFSNAP_TEST_KMSG:-/dev/kmsg}"
}

# daemon_mark, then daemon_check SUITE MANAGES (main runs them around each
# suite): refsnapd.service's main process did not crash unseen behind
# Restart=on-failure.  No automatic restart, no core dump and no death by
# a fatal signal in its journal since the mark; and, unless the suite
# stops or restarts the daemon itself (MANAGES=1), the same main PID and
# no SIGKILL.  Prints what it found (and keeps it in daemon_found); fails
# when it found anything.  Run it in the shell itself, not in $(...).
# One systemctl and one journalctl a suite: what a check saw (the main
# PID, the restart count, the cursor of the unit's last journal entry) is
# the next suite's mark, so daemon_mark asks only the first time.
daemon_state() {	# daemon_loaded, daemon_pid, daemon_restarts from one systemctl
	local line
	daemon_loaded= daemon_pid= daemon_restarts=
	while IFS= read -r line; do
		case "$line" in
		LoadState=*) daemon_loaded=${line#*=} ;;
		MainPID=*) daemon_pid=${line#*=} ;;
		NRestarts=*) daemon_restarts=${line#*=} ;;
		esac
	done < <(systemctl show -p LoadState -p MainPID -p NRestarts refsnapd.service 2>/dev/null)
}
daemon_mark() {
	[ -n "${daemon_marked:-}" ] && return 0
	daemon_state
	[ "$daemon_loaded" = loaded ] || return 0
	daemon_cursor=$(journalctl -q -n 1 --show-cursor -o cat 2>/dev/null)
	daemon_cursor=${daemon_cursor##*-- cursor: }
	case "$daemon_cursor" in *$'\n'*|'') daemon_cursor= ;; esac
	daemon_marked=1
}
daemon_check() {
	local manages=$2 pid0=${daemon_pid:-} restarts0=${daemon_restarts:-0} line found= n=0 killed=
	[ "${daemon_loaded:-}" = loaded ] || { daemon_marked=; return 0; }
	daemon_state
	[ "${daemon_restarts:-0}" -gt "$restarts0" ] &&
		found+="restarted automatically ($restarts0 to $daemon_restarts); "
	[ "$manages" = 0 ] && [ "$daemon_pid" != "$pid0" ] &&
		found+="main PID $pid0 became $daemon_pid; "
	# The unit's journal since the mark, read once; its last entry's
	# cursor is the next mark (none printed: nothing new, the mark stays).
	while IFS= read -r line; do
		case "$line" in
		"-- cursor: "*) daemon_cursor=${line#-- cursor: } ;;
		*"dumped core"*|*code=dumped*|*"Scheduled restart job"*|*status=[0-9]*/SEGV*|*status=[0-9]*/ABRT*|\
		*status=[0-9]*/BUS*|*status=[0-9]*/FPE*|*status=[0-9]*/ILL*|*status=[0-9]*/SYS*|*status=[0-9]*/TRAP*)
			n=$((n + 1))
			[ "$n" -le 3 ] && found+="journal: $line; " ;;
		*status=9/KILL*)
			[ "$manages" = 0 ] && [ -z "$killed" ] && { killed=1; found+="journal: $line; "; } ;;
		esac
	done < <(journalctl -q -u refsnapd.service --no-pager -o cat --show-cursor \
		${daemon_cursor:+--after-cursor="$daemon_cursor"} 2>/dev/null)
	[ "$daemon_loaded" = loaded ] || daemon_marked=
	daemon_found=${found%; }
	[ -z "$found" ] || { printf '%s\n' "$daemon_found"; return 1; }
}

# Waiting on events, not on the clock: a condition polled every 0.1 s, the
# journal read after a cursor, the daemon's own due-time decision asked
# for now.  Each wait's limit only bounds a hang.
# wait_for SECONDS COMMAND...: until COMMAND succeeds (1: it never did).
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}
# jcursor: the journal's end now; jgrep CURSOR UNIT|FIELD=VALUE PATTERN:
# a line matching PATTERN (grep) was logged after it.  The whole journal
# after the cursor is searched, with no match given to journalctl:
# systemd 252's journalctl skips entries when --after-cursor and a match
# (-u UNIT is one) go together (the monitor suite lost events to it), and
# a snapshot worker's lines may come without the unit (it exited before
# the journal looked it up) or without the field (its stderr stream).
# The second argument says whose line it is, for the reader; the pattern
# names the job or the daemon's words.
jcursor() { journalctl -q -n 1 --show-cursor -o cat 2>/dev/null | sed -n 's/^-- cursor: //p'; }
jgrep() {
	journalctl -q --after-cursor="$1" -o cat 2>/dev/null | grep -q -- "$3"
}
# jnone CURSOR UNIT PATTERN: no line matching PATTERN was logged after the
# cursor, by the time journald has written what it was sent (--sync): the
# negative twin of jgrep, searching as it does (a match given to
# journalctl would make a negative check pass on what it skipped).
jnone() {
	journalctl --sync 2>/dev/null
	! journalctl -q --after-cursor="$1" -o cat 2>/dev/null | grep -q -- "$3"
}
# reload_daemon: systemctl reload refsnapd (D-Bus Reload(), answered once
# the configuration is reread; it fails on a bad one), and see the daemon
# say it reread it.
reload_daemon() {
	local cur
	cur=$(jcursor)
	systemctl reload refsnapd && wait_for 120 jgrep "$cur" refsnapd 'reloaded: \|reload: '
}
# job_done JOB [RESULT]: the daemon lists JOB with a last snapshot and
# none running (and RESULT, a pattern, as its result).
job_done() { refsnapctl --utc status 2>/dev/null | grep -q "^$1  *20[-0-9]* [0-9:]* UTC  *20[-0-9]* [0-9:]* UTC  *${2:-}"; }
# if_changed JOB: the exit status of refsnapctl snapshot JOB --if-changed
# (0 taken, 7 unchanged and skipped), its answer and time printed; the
# answer kept in $REFSNAP_TEST_OUT/if-changed.out.
if_changed() {
	local out r t=${EPOCHREALTIME//[.,]/}
	out=$(refsnapctl snapshot "$1" --if-changed 2>&1)
	r=$?
	printf '%s\n' "$out" > "$REFSNAP_TEST_OUT/if-changed.out"
	echo "time: refsnapctl snapshot $1 --if-changed: $(( (${EPOCHREALTIME//[.,]/} - t) / 1000 )) ms, exit $r: $out" >&2
	echo "$r"
}
# section NAME: a part of the suite begins; says how long the one before
# took ("time: section ..."), so that the log shows where the time goes.
section() {
	echo "time: section ${section_name:-setup}: $((SECONDS - ${section_start:-0})) s"
	section_name=$1 section_start=$SECONDS
}
