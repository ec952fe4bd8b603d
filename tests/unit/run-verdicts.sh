#!/bin/bash
# Unit test of the runner's own reading of results (tests/lib/verdicts.sh,
# images/run-vm, tests/run's options): each case is a way the summary line
# could read better than the truth.  meson, kernel/checkpatch and QEMU are
# stand-ins that do what the case needs; results are fixtures.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
fx=$here/fixtures/run
. "$here/lib/verdicts.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/unit/tap.sh"

has() { grep -q -- "$1" "$tmp/out"; }	# PATTERN: in the verdicts of the case
hasnt() { ! grep -q -- "$1" "$tmp/out"; }
show() { sed 's/^/#   /' "$tmp/out"; }

# A stand-in for meson: "meson test -C DIR" writes $MESON_LOG (if set) as
# DIR's testlog and exits $MESON_RC.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/meson" <<'SH'
#!/bin/bash
dir=$3
[ -n "${MESON_LOG:-}" ] && mkdir -p "$dir/meson-logs" && cp "$MESON_LOG" "$dir/meson-logs/testlog.json"
echo "meson stand-in: exit ${MESON_RC:-0}"
exit "${MESON_RC:-0}"
SH
chmod +x "$tmp/bin/meson"
hostcase() {	# DIR-STATE MESON_LOG MESON_RC: run host_tests
	rm -rf "$tmp/asan" && mkdir -p "$tmp/asan/meson-logs"
	[ "$1" = stale ] && cp "$fx/testlog-ok.json" "$tmp/asan/meson-logs/testlog.json"
	PATH=$tmp/bin:$PATH MESON_LOG=$2 MESON_RC=$3 host_tests "$tmp/asan" "$tmp/host.log" > "$tmp/out" 2>&1
	show
}

# 1. meson test fails before writing a testlog, and none is left: FAIL.
hostcase none "" 1
has '^FAIL'; ok $? "host: no testlog is a FAIL"
# 2. ... and the testlog of an earlier run is still there: not read.
hostcase stale "" 1
has '^FAIL' && hasnt '^PASS'; ok $? "host: a stale testlog is not read as this run"
# 3. meson test exits non-zero, every test in its log OK: FAIL.
hostcase none "$fx/testlog-ok.json" 1
has '^FAIL'; ok $? "host: a non-zero exit with no FAIL parsed is a FAIL"
# 4. The honest case.
hostcase none "$fx/testlog-ok.json" 0
has '^PASS host/basic' && hasnt '^FAIL'; ok $? "host: all OK and exit 0 passes"

# kernel/checkpatch stand-ins.
cpcase() {	# OUTPUT RC
	printf '#!/bin/sh\nprintf "%s"\nexit %s\n' "$1" "$2" > "$tmp/checkpatch"
	chmod +x "$tmp/checkpatch"
	checkpatch_run "$tmp/cp.log" "$tmp/checkpatch" > "$tmp/out" 2>&1
	show
}
# 5. checkpatch could not run at all.
cpcase 'checkpatch: run kernel/build first\\n' 2
has '^FAIL'; ok $? "checkpatch: no verdict and exit 2 is a FAIL"
# 6. every patch PASS, but the status says otherwise.
cpcase 'PASS checkpatch/0001-a.patch\\n' 1
has '^FAIL'; ok $? "checkpatch: a non-zero exit with no FAIL parsed is a FAIL"
cpcase 'PASS checkpatch/0001-a.patch\\n' 0
has '^PASS kernel/checkpatch/0001-a.patch' && hasnt '^FAIL'; ok $? "checkpatch: PASS and exit 0 passes"

# 7. A boot that failed leaves the results of an earlier one behind.
# A QEMU stand-in fails at once; run-vm must not leave the old results.
cat > "$tmp/bin/qemu-system-x86_64" <<'SH'
#!/bin/bash
# The guest's stream: the second "-serial file:PATH".
n=0
for a in "$@"; do
	case "$a" in file:*) n=$((n + 1)); [ "$n" = 2 ] && stream=${a#file:} ;; esac
done
case "${QEMU_DOES:-fail}" in
fail) exit 1 ;;
args) printf '%s\n' "$@" > "$QEMU_ARGS"; exit 1 ;;
hang)
	printf 'suite-begin smoke\nPASS smoke/a\nsuite-end smoke 0 10ms\nsuite-begin crash\nPASS crash/b\n' > "$stream"
	sleep 30 ;;
esac
SH
chmod +x "$tmp/bin/qemu-system-x86_64"
mkdir -p "$tmp/in" && printf '#!/bin/sh\n' > "$tmp/in/main" && chmod +x "$tmp/in/main"
: > "$tmp/bzImage"; : > "$tmp/root.img"
vmcase() {	# QEMU_DOES: boot with the stand-in, then read as tests/run does
	rm -rf "$tmp/res" && cp -a "$fx/stale" "$tmp/res"
	PATH=$tmp/bin:$PATH REFSNAP_BUILD=$tmp/build QEMU_DOES=$1 "$top/images/run-vm" \
		--name unit --kernel "$tmp/bzImage" --image "$tmp/root.img" \
		--input "$tmp/in" --results "$tmp/res" --timeout 3 > "$tmp/run-vm.log" 2>&1
	vm_verdicts "$tmp/res" smoke crash reflinkat > "$tmp/out"
	show
}
vmcase fail
hasnt 'stale-pass' && has '^FAIL'; ok $? "vm: a failed boot does not count an earlier boot's results"
# 7b. A test boot's clock starts at the next full hour (no hourly job's
# due time inside a suite); the demo keeps the host's.
QEMU_ARGS=$tmp/args vmcase args
grep -A1 -x -- -rtc "$tmp/args" | tail -1 | grep -Eq '^base=[0-9-]{10}T[0-9]{2}:00:00,clock=host$'
ok $? "vm: a test boot's clock starts at a full hour"
b=$(grep -A1 -x -- -rtc "$tmp/args" | tail -1 | sed 's/^base=//; s/,.*//')
t=$(date -u -d "$b" +%s) && now=$(date +%s) && [ "$t" -gt "$now" ] && [ "$t" -le $((now + 3600)) ]
ok $? "vm: ... the next one, not an earlier one"

# 8. A guest that hangs in a suite: the verdicts it sent as they came are
# kept, the hung suite and those after it fail.
vmcase hang
has '^PASS vm/smoke/a' && has '^PASS vm/crash/b' && has '^FAIL vm/crash/unfinished' &&
	has '^FAIL vm/reflinkat/not-run' && hasnt 'stale-pass'
ok $? "vm: a hang keeps the finished verdicts and fails the rest"
cp -a "$fx/hung" "$tmp/hung"
vm_verdicts "$tmp/hung" smoke reflinkat crash > "$tmp/out"; show
has '^PASS vm/smoke/multi-user-target' && has '^FAIL vm/reflinkat/btrfs' &&
	has '^FAIL vm/reflinkat/unfinished' && has '^FAIL vm/crash/not-run' && has '^FAIL vm/guest-finished'
ok $? "vm: a guest's stream cut off mid-suite"

# 9. A skip not in the expected list is a FAIL; one in it is a SKIP.
REFSNAP_EXPECTED_SKIPS=$fx/expected-skips vm_verdicts "$fx/skips" reflinkat > "$tmp/out"; show
has '^SKIP vm/reflinkat/btrfs/reflinkat.user.swap_file_etxtbsy' &&
	has '^FAIL vm/reflinkat/btrfs/reflinkat.root.new_test' && hasnt '^SKIP vm/reflinkat/btrfs/reflinkat.root.new_test'
ok $? "skips: only the expected ones are skips"
# ... and an expected skip that did not skip, in a suite that ran, is a
# FAIL (a stale line); one of a suite that did not run is not judged.
has '^FAIL vm/reflinkat/btrfs/reflinkat.root.swap_file_etxtbsy (listed in tests/expected-skips' &&
	hasnt 'reflinkat.user.swap_file_etxtbsy (listed' && hasnt 'crash/never-ran'
ok $? "skips: an expected skip that did not happen is a FAIL"
# ... and the list names real tests: each line a name and a reason.
bad=$(grep -v '^#' "$top/tests/expected-skips" | grep . | awk 'NF < 2')
[ -z "$bad" ] && [ -n "$(grep -v '^#' "$top/tests/expected-skips" | grep .)" ]
ok $? "tests/expected-skips: every name has its reason"

# 10. --no-vm with a VM suite is refused, not dropped.
"$top/tests/run" --no-vm --only host,smoke > "$tmp/out" 2>&1
rc=$?; show
[ "$rc" = 2 ] && has 'no-vm'; ok $? "tests/run --no-vm --only smoke is refused"
# 11. smoke runs first.
[ "$("$top/tests/run" --list | grep -v '^host$' | head -n 1)" = smoke ]
ok $? "tests/run: smoke is the first VM suite"
# 12. The boot on Debian's kernel is a selection of its own, and a VM one.
"$top/tests/run" --list | grep -qx debian-kernel
ok $? "tests/run --list names debian-kernel"
"$top/tests/run" --no-vm --only debian-kernel > "$tmp/out" 2>&1
rc=$?; show
[ "$rc" = 2 ] && has 'no-vm'; ok $? "tests/run --no-vm --only debian-kernel is refused"

tap_end
