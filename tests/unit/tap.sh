# The TAP the runner's shell tests print, sourced by each of them:
# ok STATUS DESCRIPTION (STATUS 0 is a pass), then tap_end last, which
# prints the plan and is the script's exit status.
pass=0 fail=0

ok() {
	if [ "$1" = 0 ]; then
		echo "ok - $2"
		pass=$((pass + 1))
	else
		echo "not ok - $2"
		fail=$((fail + 1))
	fi
}

tap_end() {
	echo "1..$((pass + fail))"
	[ "$fail" = 0 ]
}
