#!/bin/bash
# Unit test of tests/console-check against the fixture logs: the clean
# boot passes, every kind of kernel report fails, a log without a kernel
# boot fails, an unreadable log is an error.  Filesystem errors fail
# outside the spans a suite marked as provoking them, and only they are
# excused inside; a report names the suite that held it.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
check=$here/console-check
fx=$here/fixtures/console
. "$here/unit/tap.sh"

expect() {	# expect STATUS LOG [TEXT-IN-OUTPUT]
	local want=$1 log=$2 rc out
	out=$("$check" "$fx/$log" 2>&1)
	rc=$?
	[ "$rc" = "$want" ]
	ok $? "$log exits $want (exit $rc)"
	if [ -n "${3:-}" ]; then
		grep -qF -- "$3" <<<"$out"
		ok $? "$log: the report says \"$3\""
	fi
}

expect 0 clean.log
for f in bug warning kasan oops lockdep panic sleep hung noboot; do
	expect 1 "$f.log"
done
# The watchdogs of the test kernel, and RCU stalls.
for f in rcu-sched rcu-self softlockup workqueue; do
	expect 1 "$f.log"
done
# Filesystem errors.
for f in btrfs-error btrfs-critical btrfs-abort xfs-corruption xfs-internal xfs-force-shutdown xfs-shutdown ext4-error; do
	expect 1 "$f.log" "filesystem error in suite reflinkat"
done
expect 0 fs-expected.log
expect 1 fs-after-expected.log "600.000000] BTRFS error"
expect 1 fs-expected-bug.log "BUG: KASAN"
expect 1 fs-span-ends-with-suite.log "in suite refsnapctl"
expect 1 suite-named.log "in suite watch"
expect 1 hung.log "outside the suites"
expect 2 does-not-exist.log
tap_end
