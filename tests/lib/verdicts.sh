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

# vm_verdicts RESULTS_DIR SUITE...: what the guest wrote as it went (the
# stream of its second serial port, stream.txt: verdict lines,
# "suite-begin NAME", "suite-end NAME STATUS TIME", "status N").  Every
# verdict of a suite that ended, and of one that was cut off; a suite
# that never began or never ended is a FAIL, and so is a guest that never
# said its status.
vm_verdicts() {
	local res=$1 line s status= began=" " ended=" " verdicts=
	shift
	[ -f "$res/boot" ] && echo "PASS vm/results-read-back"
	if [ ! -f "$res/stream.txt" ]; then
		echo "FAIL vm/results (the guest's stream $res/stream.txt is missing)"
		return
	fi
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in
		PASS\ *|FAIL\ *|SKIP\ *) verdicts+="${line%% *} vm/${line#* }"$'\n' ;;
		"suite-begin "*) began+="${line#suite-begin } " ;;
		"suite-end "*) s=${line#suite-end }; ended+="${s%% *} " ;;
		"status "*) status=${line#status } ;;
		esac
	done < "$res/stream.txt"
	printf '%s' "$verdicts" | judge_skips
	for s in "$@"; do
		case "$began" in
		*" $s "*) case "$ended" in
			*" $s "*) ;;
			*) echo "FAIL vm/$s/unfinished (the VM stopped while it ran)" ;;
			esac ;;
		*) echo "FAIL vm/$s/not-run (the VM stopped before it)" ;;
		esac
	done
	stale_skips "$verdicts" "$ended"
	[ -n "$status" ] || echo "FAIL vm/guest-finished (the guest never reported its status)"
	# The results disk, when the guest got to write it, says the same.
	if [ -f "$res/results.txt" ] &&
		! grep -E '^(PASS|FAIL|SKIP) ' "$res/stream.txt" | tr -d '\r' | cmp -s - "$res/results.txt"; then
		echo "FAIL vm/stream (its verdicts differ from the results disk's results.txt)"
	fi
}

# suite_times RESULTS_DIR: "suite time: NAME STATUS TIME" from the stream.
suite_times() {
	sed -n 's/\r$//; s/^suite-end /suite time: /p' "$1/stream.txt" 2>/dev/null
}

# suite_timeout TABLE SUITE: its time limit in seconds (tests/vm/timeouts).
suite_timeout() {
	local name t def=900
	while read -r name t _; do
		case "$name" in ''|'#'*) continue ;; default) def=$t ;; "$2") echo "$t"; return ;; esac
	done < "$1"
	echo "$def"
}
