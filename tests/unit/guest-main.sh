#!/bin/bash
# Unit test of the guest side of the runner (tests/vm/main and the
# verdicts of tests/vm/lib.sh), run on the host with stand-in suites: a
# suite that records no verdict, a TAP program that stops before its plan,
# a suite that outlives its time limit; every verdict reaches the stream as
# it comes, and each suite is marked in the kernel log.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/unit/tap.sh"

in=$tmp/in out=$tmp/out
mkdir -p "$in/suites.d" "$in/bin" "$out"
cp "$here/vm/main" "$here/vm/lib.sh" "$in/"
printf 'default 60\nslow 2\nneedlock 60 1 1 lockdep\n' > "$in/timeouts"
suite() {	# NAME BODY
	printf '#!/bin/bash\n. "$REFSNAP_TEST_IN/lib.sh"\n%s\n' "$2" > "$in/suites.d/$1"
	chmod +x "$in/suites.d/$1"
	echo "$1" >> "$in/suites"
}
# TAP programs: a whole plan, and one that stops after 2 of 3.
printf '#!/bin/sh\necho "TAP version 13"\necho "1..2"\necho "#  RUN           f.a ..."\necho "ok 1 f.a"\necho "#  RUN           f.b ..."\necho "ok 2 f.b"\n' > "$in/bin/tap-whole"
printf '#!/bin/sh\necho "TAP version 13"\necho "1..3"\necho "#  RUN           f.a ..."\necho "ok 1 f.a"\necho "#  RUN           f.b ..."\necho "ok 2 f.b"\n' > "$in/bin/tap-short"
printf '#!/bin/sh\necho "TAP version 13"\necho "#  RUN           f.a ..."\necho "ok 1 f.a"\n' > "$in/bin/tap-noplan"
chmod +x "$in/bin/"*
suite good 'check truth true
tap whole tap-whole
suite_end'
suite quiet 'exit 0'
suite short 'tap t tap-short
suite_end'
suite noplan 'tap t tap-noplan
suite_end'
suite slow 'pass before-the-hang
sleep 20
pass after-the-hang
suite_end'
suite after 'check runs-after-the-hang true
suite_end'
suite needlock 'pass ran-without-lockdep
suite_end'

(cd "$in" && REFSNAP_TEST_CONSOLE=$tmp/console REFSNAP_TEST_STREAM=$tmp/stream \
	REFSNAP_TEST_KMSG=$tmp/kmsg REFSNAP_TEST_CONF=$tmp/conf.d \
	REFSNAP_TEST_LOCKDEP=$tmp/no-lockdep ./main "$out") > "$tmp/main.log" 2>&1
rc=$?
sed 's/^/#   /' "$out/results.txt"
r() { grep -q -- "$1" "$out/results.txt"; }

[ "$rc" != 0 ]; ok $? "main exits non-zero (exit $rc)"
r '^PASS good/truth' && r '^PASS good/whole/f.b' && ! r '^FAIL good/'
ok $? "a suite with verdicts and a whole TAP plan passes"
r '^FAIL quiet/no-verdict'; ok $? "a suite that exits 0 with no verdict fails"
r '^PASS short/t/f.b' && r '^FAIL short/t/plan: 2 of the 3'
ok $? "a TAP program that ends before its plan fails"
r '^FAIL noplan/t/plan'; ok $? "a TAP program with no plan fails"
r '^PASS slow/before-the-hang' && r '^FAIL slow/timeout' && ! r 'slow/after-the-hang'
ok $? "a suite that outlives its limit fails, naming the timeout"
r '^PASS after/runs-after-the-hang'; ok $? "the suites after a timeout still run"
r '^FAIL needlock/needs-lockdep' && ! r 'needlock/ran-without-lockdep'
ok $? "a suite marked lockdep fails unrun on a kernel without lockdep"
# The stream: every verdict, in order, framed by the suites.
grep -v '^suite-\|^status ' "$tmp/stream" | cmp -s - "$out/results.txt"
ok $? "the stream carries every verdict"
grep -q '^suite-begin slow$' "$tmp/stream" && grep -q '^suite-end slow 12[45] ' "$tmp/stream" &&
	[ "$(tail -n 1 "$tmp/stream")" = "status 1" ]
ok $? "the stream frames each suite and ends with the status"
cmp -s "$tmp/console" "$out/results.txt"; ok $? "the console shows every verdict"
grep -q 'refsnap-test: suite slow begin' "$tmp/kmsg" && grep -q 'refsnap-test: suite slow end' "$tmp/kmsg"
ok $? "each suite is marked in the kernel log"

# The refsnapd crash check, with systemctl and journalctl stand-ins that
# answer from files: MainPID, NRestarts, the unit's journal (a cursor is
# a line number); each call is counted in $SD/calls.
sd=$tmp/sd
mkdir -p "$sd/bin"
cat > "$sd/bin/systemctl" <<'SH'
#!/bin/bash
# systemctl show -p PROPERTY... UNIT
echo systemctl >> "$SD/calls"
[ "$1" = show ] || exit 1
echo LoadState=loaded; echo "MainPID=$(cat "$SD/MainPID")"; echo "NRestarts=$(cat "$SD/NRestarts")"
SH
cat > "$sd/bin/journalctl" <<'SH'
#!/bin/bash
echo journalctl >> "$SD/calls"
n=$(grep -c '' "$SD/journal") from=0
case " $* " in
*" -n 1 "*) tail -n 1 "$SD/journal"; echo "-- cursor: $n"; exit 0 ;;
*--after-cursor=*) from=$*; from=${from#*--after-cursor=}; from=${from%% *} ;;
esac
[ "$n" -gt "$from" ] || exit 0
tail -n +"$((from + 1))" "$SD/journal"
echo "-- cursor: $n"
SH
chmod +x "$sd/bin/"*
daemon_case() {	# PID-AFTER RESTARTS-AFTER JOURNAL MANAGES: daemon_check's status
	echo 100 > "$sd/MainPID"; echo 0 > "$sd/NRestarts"
	# Before the mark: a crash of an earlier suite, already reported.
	echo "refsnapd.service: Main process exited, code=dumped, status=11/SEGV" > "$sd/journal"
	(
		export SD=$sd PATH=$sd/bin:$PATH REFSNAP_TEST_OUT=$tmp/out REFSNAP_TEST_CONF=$tmp/conf.d
		. "$here/vm/lib.sh"
		daemon_mark
		echo "$1" > "$sd/MainPID"; echo "$2" > "$sd/NRestarts"; [ -z "$3" ] || printf '%s\n' "$3" >> "$sd/journal"
		daemon_check suite "$4" | sed 's/^/#   /'
		exit "${PIPESTATUS[0]}"
	)
}
daemon_case 100 0 "" 0; ok $? "refsnapd: the same process throughout passes"
daemon_case 100 0 "refsnapd.service: Deactivated successfully." 1; ok $? "refsnapd: a clean stop by the suite passes"
daemon_case 200 0 "" 1; ok $? "refsnapd: a new main PID passes when the suite restarts it"
! daemon_case 200 0 "" 0; ok $? "refsnapd: a new main PID fails when the suite does not restart it"
! daemon_case 100 1 "" 1; ok $? "refsnapd: an automatic restart fails"
! daemon_case 200 0 "refsnapd.service: Scheduled restart job, restart counter is at 1." 1
ok $? "refsnapd: a restart job in the journal fails, whoever restarted it last"
! daemon_case 200 0 "refsnapd.service: Main process exited, code=dumped, status=11/SEGV" 1
ok $? "refsnapd: a core dump fails even when the suite restarts the daemon"
! daemon_case 200 0 "refsnapd.service: Main process exited, code=killed, status=6/ABRT" 1
ok $? "refsnapd: an abort fails"
! daemon_case 200 0 "refsnapd.service: Main process exited, code=killed, status=9/KILL" 0
ok $? "refsnapd: a SIGKILL not sent by the suite fails"
daemon_case 200 0 "refsnapd.service: Main process exited, code=killed, status=9/KILL" 1
ok $? "refsnapd: a SIGKILL sent by a suite that manages the daemon passes"

# main: one systemctl and one journalctl a suite (and one of each for the
# first mark); what one suite's check saw is the next one's mark, so a
# crash is reported once, in the suite it happened in, and a PID change
# in a managing suite is not charged to the next.
rm -rf "$in/suites" "$in/suites.d" "$out" && mkdir -p "$in/suites.d" "$out"
suite one 'check a true
suite_end'
suite two 'check b true
echo 300 > "$SD/MainPID"; echo "refsnapd.service: Main process exited, code=dumped, status=6/ABRT" >> "$SD/journal"
suite_end'
suite three 'check c true
suite_end'
suite four 'check d true
: systemctl restart refsnapd
echo 400 > "$SD/MainPID"
suite_end'
suite five 'check e true
suite_end'
echo 100 > "$sd/MainPID"; echo 0 > "$sd/NRestarts"; echo "-- boot" > "$sd/journal"; : > "$sd/calls"
(cd "$in" && SD=$sd PATH=$sd/bin:$PATH REFSNAP_TEST_CONSOLE=$tmp/console REFSNAP_TEST_STREAM=$tmp/stream \
	REFSNAP_TEST_KMSG=$tmp/kmsg REFSNAP_TEST_CONF=$tmp/conf.d ./main "$out") > "$tmp/main.log" 2>&1
sed 's/^/#   /' "$out/results.txt"
[ "$(grep -c systemctl "$sd/calls")" = 6 ] && [ "$(grep -c journalctl "$sd/calls")" = 6 ]
ok $? "refsnapd: one systemctl and one journalctl a suite ($(sort "$sd/calls" | uniq -c | tr -s ' \n' ' '))"
r '^FAIL two/refsnapd-crashed: main PID 100 became 300; journal: .*status=6/ABRT' &&
	[ "$(grep -c refsnapd-crashed "$out/results.txt")" = 1 ]
ok $? "refsnapd: a crash is reported once, in the suite it happened in"

tap_end
