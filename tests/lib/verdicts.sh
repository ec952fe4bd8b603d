# How tests/run turns what each step left behind into verdict lines
# ("PASS NAME", "FAIL NAME", "SKIP NAME: reason"), one per line on stdout.
# Sourced by tests/run; tests/unit/run-verdicts.sh calls the same
# functions on fixtures.  A step that could not say what it ran is a FAIL,
# never silence: a missing log, a non-zero status with no FAIL in it, a
# suite that never began or never ended.

verdicts_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# judge_skips: a filter of verdict lines; a SKIP whose name (up to ": ",
# without "vm/") is not in tests/expected-skips (one "NAME reason" a line;
# REFSNAP_EXPECTED_SKIPS names another list) becomes a FAIL saying so.
judge_skips() {
	local line v name names=" "
	local expected_skips=${REFSNAP_EXPECTED_SKIPS:-$verdicts_top/tests/expected-skips}
	[ -r "$expected_skips" ] &&
		while read -r name _; do
			case "$name" in ''|'#'*) continue ;; esac
			names+="$name "
		done < "$expected_skips"
	while IFS= read -r line; do
		v=${line%% *}
		if [ "$v" = SKIP ]; then
			name=${line#SKIP }; name=${name%%: *}; name=${name#vm/}
			[[ $name == guest[0-9]*/* ]] && name=${name#*/}
			case "$names" in
			*" $name "*) ;;
			*) line="FAIL ${line#SKIP } (skipped, not in tests/expected-skips)" ;;
			esac
		fi
		printf '%s\n' "$line"
	done
}

# stale_skips VERDICTS ENDED: the other half of judge_skips.  A name of
# tests/expected-skips whose suite (the name's first part) is among ENDED
# (" SUITE SUITE ... ") but which VERDICTS (the run's verdict lines) did
# not skip is a FAIL: the list must say what skips, not what once did.
# Host tests (host/NAME) are not judged here.
stale_skips() {
	local name _ expected_skips=${REFSNAP_EXPECTED_SKIPS:-$verdicts_top/tests/expected-skips}
	[ -r "$expected_skips" ] || return 0
	while read -r name _; do
		case "$name" in ''|'#'*|host/*) continue ;; esac
		case "$2" in *" ${name%%/*} "*) ;; *) continue ;; esac
		case $'\n'"$1" in
		*$'\n'"SKIP vm/$name: "*) ;;
		*) echo "FAIL vm/$name (listed in tests/expected-skips, but it did not skip: remove the line)" ;;
		esac
	done < "$expected_skips"
}

# host_verdicts TESTLOG [STATUS]: meson's testlog.json and meson test's
# exit status.
host_verdicts() {
	local log=$1 rc=${2:-0} out
	if [ ! -s "$log" ]; then
		echo "FAIL host/testlog (meson test wrote no $log, exit $rc)"
		return
	fi
	out=$(python3 - "$log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    verdict = {"OK": "PASS", "EXPECTEDFAIL": "PASS", "SKIP": "SKIP"}.get(t["result"], "FAIL")
    print(verdict, "host/" + t["name"])
PY
	) || out+=$'\n'"FAIL host/testlog (cannot read $log)"
	printf '%s\n' "$out" | sed '/^$/d' | judge_skips
	if [ "$rc" != 0 ] && ! grep -q '^FAIL' <<<"$out"; then
		echo "FAIL host/meson-test (exit $rc, no failed test named)"
	fi
}

# host_tests BUILDDIR LOG: run meson test in BUILDDIR, its output to LOG,
# and print its verdicts.  The testlog of an earlier run is removed first:
# only what this run wrote is read.
host_tests() {
	local rc
	rm -f "$1/meson-logs/testlog.json"
	meson test -C "$1" --print-errorlogs > "$2" 2>&1
	rc=$?
	host_verdicts "$1/meson-logs/testlog.json" "$rc"
}

# checkpatch_run LOG COMMAND...: run COMMAND (kernel/checkpatch), its output
# to LOG, and print its verdicts.
checkpatch_run() {
	local log=$1 rc
	shift
	"$@" > "$log" 2>&1
	rc=$?
	checkpatch_verdicts "$log" "$rc"
}

# checkpatch_verdicts LOG [STATUS]: kernel/checkpatch's output and status.
checkpatch_verdicts() {
	local rc=${2:-0} out
	out=$(grep '^\(PASS\|FAIL\) ' "$1" 2>/dev/null | while read -r v name; do
		echo "$v kernel/$name"; done)
	[ -n "$out" ] && printf '%s\n' "$out"
	if [ -z "$out" ]; then
		echo "FAIL kernel/checkpatch (no verdict, exit $rc)"
	elif [ "$rc" != 0 ] && ! grep -q '^FAIL' <<<"$out"; then
		echo "FAIL kernel/checkpatch (exit $rc, no failed patch named)"
	fi
}

# vm_verdicts [--guest LABEL] RESULTS_DIR SUITE...: what the guest wrote
# as it went (the stream of its second serial port, stream.txt: verdict
# lines, "suite-begin NAME", "suite-end NAME STATUS TIME", "status N").
# Every verdict of a suite that ended, and of one that was cut off; a
# suite that never began or never ended is a FAIL, and so is a guest that
# never said its status.  With two guests, the second's (LABEL guest2)
# own lines and its smoke, the one suite every guest runs, are named
# vm/guest2/..., so that no verdict of one guest is counted as the
# other's.
vm_verdicts() {
	local g= line s v status= began=" " ended=" " verdicts=
	[ "${1:-}" = --guest ] && { g=${2:+$2/}; shift 2; }
	local res=$1
	shift
	[ -f "$res/boot" ] && echo "PASS vm/${g}results-read-back"
	if [ ! -f "$res/stream.txt" ]; then
		echo "FAIL vm/${g}results (the guest's stream $res/stream.txt is missing)"
		return
	fi
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in
		PASS\ smoke/*|FAIL\ smoke/*|SKIP\ smoke/*) verdicts+="${line%% *} vm/$g${line#* }"$'\n' ;;
		PASS\ *|FAIL\ *|SKIP\ *) verdicts+="${line%% *} vm/${line#* }"$'\n' ;;
		"suite-begin "*) began+="${line#suite-begin } " ;;
		"suite-end "*) s=${line#suite-end }; ended+="${s%% *} " ;;
		"status "*) status=${line#status } ;;
		esac
	done < "$res/stream.txt"
	printf '%s' "$verdicts" | judge_skips
	for s in "$@"; do
		v=$s
		[ "$s" = smoke ] && v=$g$s
		case "$began" in
		*" $s "*) case "$ended" in
			*" $s "*) ;;
			*) echo "FAIL vm/$v/unfinished (the VM stopped while it ran)" ;;
			esac ;;
		*) echo "FAIL vm/$v/not-run (the VM stopped before it)" ;;
		esac
	done
	stale_skips "$verdicts" "$ended"
	[ -n "$status" ] || echo "FAIL vm/${g}guest-finished (the guest never reported its status)"
	# The results disk, when the guest got to write it, says the same.
	if [ -f "$res/results.txt" ] &&
		! grep -E '^(PASS|FAIL|SKIP) ' "$res/stream.txt" | tr -d '\r' | cmp -s - "$res/results.txt"; then
		echo "FAIL vm/${g}stream (its verdicts differ from the results disk's results.txt)"
	fi
}

# suite_times [--guest LABEL] RESULTS_DIR: "suite time: NAME STATUS TIME"
# from the stream (a second guest's smoke named LABEL/smoke).
suite_times() {
	local g=
	[ "${1:-}" = --guest ] && { g=${2:+$2/}; shift 2; }
	sed -n "s/\r\$//; s|^suite-end smoke |suite-end ${g}smoke |; s/^suite-end /suite time: /p" "$1/stream.txt" 2>/dev/null
}

# suite_weight TABLE SUITE: the seconds it was measured to take: in the
# last run on this machine that ran it (REFSNAP_VM_TIMES, a file of "NAME
# SECONDS" lines that vm_guests keeps), else in the third column of
# tests/vm/timeouts, else half its limit.
suite_weight() {
	local name t w def=900
	if [ -n "${REFSNAP_VM_TIMES:-}" ] && [ -r "$REFSNAP_VM_TIMES" ]; then
		while read -r name t _; do
			[ "$name" = "$2" ] && [[ $t == [0-9]* ]] && { echo "$t"; return; }
		done < "$REFSNAP_VM_TIMES"
	fi
	while read -r name t w _; do
		case "$name" in ''|'#'*) continue ;; default) def=$t ;; "$2") echo "${w:-$((t / 2))}"; return ;; esac
	done < "$1"
	echo $((def / 2))
}

# split_suites GUESTS TABLE SUITE...: the suites of each guest, one line a
# guest.  Each suite runs in exactly one guest, but smoke, which judges
# each boot, runs first in every guest; the others go, the longest first
# by their measured time (suite_weight), to the guest that would end
# them soonest (a greedy balance).  No more guests than suites besides
# smoke.  With REFSNAP_VM_LIGHT_KERNEL set (tests/run: the kernel without
# lockdep), the suites marked "lockdep" in TABLE all go to the first
# guest, which boots the debug kernel (vm_guests), and a suite costs the
# other guests its weight divided by TABLE's "lockdep" factor (the
# percent of its time a suite takes on the debug kernel; weights are in
# the debug kernel's seconds).
split_suites() {
	local n=$1 table=$2 s i best w c cbest smoke=0 sorted pct=100 locked=0
	shift 2
	local -a load=() list=()
	sorted=$(for s in "$@"; do
		[ "$s" = smoke ] && continue
		echo "$(suite_weight "$table" "$s") $s"
	done | LC_ALL=C sort -k1,1nr -k2,2)
	for s in "$@"; do [ "$s" = smoke ] && smoke=1; done
	local others
	others=$(grep -c . <<<"$sorted")
	[ "$n" -gt "$others" ] && n=$others
	[ "$n" -ge 1 ] || n=1
	for ((i = 0; i < n; i++)); do load[i]=0; list[i]=; done
	if [ -n "${REFSNAP_VM_LIGHT_KERNEL:-}" ]; then
		for s in "$@"; do suite_lockdep "$table" "$s" && locked=1; done
		[ "$locked" = 1 ] && pct=$(lockdep_factor "$table")
	fi
	# The marked suites first, all in the first guest.
	while read -r w s; do
		[ -n "$s" ] && [ "$locked" = 1 ] && suite_lockdep "$table" "$s" || continue
		load[0]=$((load[0] + w))
		list[0]+="$s "
	done <<<"$sorted"
	while read -r w s; do
		[ -n "$s" ] || continue
		[ "$locked" = 1 ] && suite_lockdep "$table" "$s" && continue
		best=0 cbest=$((load[0] + w))
		for ((i = 1; i < n; i++)); do
			c=$((load[i] + (locked ? w * 100 / pct : w)))
			[ "$c" -lt "$cbest" ] && best=$i cbest=$c
		done
		load[best]=$cbest
		list[best]+="$s "
	done <<<"$sorted"
	for ((i = 0; i < n; i++)); do
		[ "$smoke" = 1 ] && list[i]="smoke ${list[i]}"
		echo "${list[i]% }"
	done
}

# suite_lockdep TABLE SUITE: true when marked "lockdep" (5th column of
# tests/vm/timeouts): it runs on the debug kernel with lockdep.
suite_lockdep() {
	local name _t _w _c mark
	while read -r name _t _w _c mark _; do
		[ "$name" = "$2" ] && { [ "$mark" = lockdep ]; return; }
	done < "$1"
	return 1
}

# lockdep_factor TABLE: the "lockdep PERCENT" line of tests/vm/timeouts
# (100 when none).
lockdep_factor() {
	local name t
	while read -r name t _; do
		[ "$name" = lockdep ] && [[ $t == [1-9]* ]] && { echo "$t"; return; }
	done < "$1"
	echo 100
}

# suite_cpus TABLE SUITE: the CPUs its guest needs (the 4th column of
# tests/vm/timeouts; 1 when none is given).
suite_cpus() {
	local name _t _w c
	while read -r name _t _w c _; do
		case "$name" in ''|'#'*) continue ;; "$2") echo "${c:-1}"; return ;; esac
	done < "$1"
	echo 1
}

# suite_timeout TABLE SUITE: its time limit in seconds (tests/vm/timeouts).
suite_timeout() {
	local name t def=900
	while read -r name t _; do
		case "$name" in ''|'#'*) continue ;; default) def=$t ;; "$2") echo "$t"; return ;; esac
	done < "$1"
	echo "$def"
}
