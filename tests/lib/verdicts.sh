# How tests/run turns what each step left behind into verdict lines
# ("PASS NAME", "FAIL NAME", "SKIP NAME: reason"), one per line on stdout.
# Sourced by tests/run; tests/unit/run-verdicts.sh calls the same
# functions on fixtures.

# host_verdicts TESTLOG: meson's testlog.json.
host_verdicts() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    verdict = {"OK": "PASS", "EXPECTEDFAIL": "PASS", "SKIP": "SKIP"}.get(t["result"], "FAIL")
    print(verdict, "host/" + t["name"])
PY
}

# host_tests BUILDDIR LOG: run meson test in BUILDDIR, its output to LOG,
# and print its verdicts.
host_tests() {
	meson test -C "$1" --print-errorlogs > "$2" 2>&1
	host_verdicts "$1/meson-logs/testlog.json"
}

# checkpatch_run LOG COMMAND...: run COMMAND (kernel/checkpatch), its output
# to LOG, and print its verdicts.
checkpatch_run() {
	local log=$1
	shift
	"$@" > "$log" 2>&1
	checkpatch_verdicts "$log"
}

# checkpatch_verdicts LOG: kernel/checkpatch's output.
checkpatch_verdicts() {
	grep '^\(PASS\|FAIL\) ' "$1" | while read -r v name; do
		echo "$v kernel/$name"; done
}

# vm_verdicts RESULTS_DIR: what the guest wrote.
vm_verdicts() {
	local res=$1 line
	if [ -f "$res/results.txt" ]; then
		[ -f "$res/boot" ] && echo "PASS vm/results-read-back"
		while IFS= read -r line; do
			echo "${line%% *} vm/${line#* }"
		done < "$res/results.txt"
	fi
}
