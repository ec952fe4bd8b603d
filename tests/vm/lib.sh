# Helpers for the guest suites.  Each check records one verdict line in
# $REFSNAP_TEST_OUT/results.txt; a suite exits non-zero when any of its
# checks failed.

suite_failed=0

# Each verdict also goes to the console, so that a long run shows progress.
verdict() { echo "$*" | tee -a "$REFSNAP_TEST_OUT/results.txt" /dev/console; }
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
# turn each of its test lines into a verdict.
tap() {
	local prefix=$1 line name rc
	shift
	"$@" > "$REFSNAP_TEST_OUT/tap.tmp" 2>&1
	rc=$?
	cat "$REFSNAP_TEST_OUT/tap.tmp"
	while IFS= read -r line; do
		case "$line" in
		"ok "*"# SKIP"*)
			name=${line#ok * }; name=${name%% # SKIP*}
			skip "$prefix/$name" "${line##*# SKIP}" ;;
		"ok "*)
			name=${line#ok * }
			pass "$prefix/$name" ;;
		"not ok "*)
			name=${line#not ok * }; name=${name%% # *}
			fail "$prefix/$name" ;;
		esac
	done < "$REFSNAP_TEST_OUT/tap.tmp"
	grep -q '^ok \|^not ok ' "$REFSNAP_TEST_OUT/tap.tmp" ||
		fail "$prefix" "no test ran (exit $rc)"
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

# mkfs_mount TYPE SERIAL DIR: a fresh TYPE filesystem on the scratch disk.
mkfs_mount() {
	local dev
	dev=$(disk "$2") || { echo "no disk $2" >&2; return 1; }
	umount "$3" 2>/dev/null
	case "$1" in
	btrfs) mkfs.btrfs -q -f "$dev" ;;
	xfs) mkfs.xfs -q -f "$dev" ;;
	ext4) mkfs.ext4 -q -F "$dev" ;;
	esac || return 1
	mkdir -p "$3" && mount -t "$1" "$dev" "$3"
}
