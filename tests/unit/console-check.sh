#!/bin/bash
# Unit test of tests/console-check against the fixture logs: the clean
# boot passes, every kind of kernel report fails, a log without a kernel
# boot fails, an unreadable log is an error.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
check=$here/console-check
fx=$here/fixtures/console
pass=0 fail=0

expect() {
	local want=$1 log=$2 rc
	"$check" "$fx/$log" >/dev/null 2>&1
	rc=$?
	if [ "$rc" = "$want" ]; then
		echo "ok - $log exits $want"
		pass=$((pass + 1))
	else
		echo "not ok - $log exits $rc, expected $want"
		fail=$((fail + 1))
	fi
}

expect 0 clean.log
for f in bug warning kasan oops lockdep panic sleep hung noboot; do
	expect 1 "$f.log"
done
expect 2 does-not-exist.log
echo "1..$((pass + fail))"
[ "$fail" = 0 ]
