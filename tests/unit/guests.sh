#!/bin/bash
# Unit test of the runner's two guests (tests/lib/guests.sh, split_suites
# in tests/lib/verdicts.sh, images/run-vm --smp): every suite runs in
# exactly one guest (smoke first in each), each verdict is counted once,
# and one guest's hang or crash fails the run naming its suites, while the
# other's verdicts are kept.  QEMU is a stand-in that plays the guest's
# stream from the suites list in its input archive (and a kernel report
# on its console when a suite is named splat*).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
. "$here/lib/verdicts.sh"
. "$here/lib/guests.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The runner's own skip list, not the project's (whose reflinkat lines the
# stand-in's reflinkat suite, which skips nothing, would make stale).
: > "$tmp/expected-skips"; export REFSNAP_EXPECTED_SKIPS=$tmp/expected-skips
. "$here/unit/tap.sh"
show() { sed 's/^/#   /' "$1"; }
table=$top/tests/vm/timeouts

# split_suites: each suite once, smoke first in each guest, and the
# measured times balanced: no guest ends later than the other would with
# the other's last suite moved over.
all=$(cd "$top/tests/vm/suites.d" && ls | grep -v '^bench')
split_suites 2 "$table" $all > "$tmp/split"; show "$tmp/split"
[ "$(wc -l < "$tmp/split")" = 2 ] && [ "$(cut -d' ' -f1 "$tmp/split" | sort -u)" = smoke ] &&
	[ "$(tr ' ' '\n' < "$tmp/split" | grep -v '^smoke$' | sort)" = "$(grep -v '^smoke$' <<<"$all" | sort)" ]
ok $? "split: every suite in one guest, smoke first in each"
load() { local s w=0; for s in $1; do w=$((w + $(suite_weight "$table" "$s"))); done; echo "$w"; }
l1=$(load "$(sed -n 1p "$tmp/split")") l2=$(load "$(sed -n 2p "$tmp/split")")
echo "# loads $l1 s and $l2 s"
d=$((l1 > l2 ? l1 - l2 : l2 - l1))
[ "$d" -le "$(suite_weight "$table" reflink-tool)" ] || [ "$d" -le 100 ]
ok $? "split: the guests' measured times within 100 s of each other ($l1, $l2)"
[ "$(split_suites 2 "$table" smoke)" = smoke ] && [ "$(split_suites 2 "$table" smoke crash | wc -l)" = 1 ]
ok $? "split: no more guests than suites besides smoke"
[ "$(split_suites 1 "$table" smoke crash watch)" = "smoke crash watch" ]
ok $? "split: one guest runs them all"

# With the kernel without lockdep: the suites marked lockdep all in the
# first guest (the debug kernel's), the others balanced with their cost
# on the lighter kernel (the table's "lockdep" factor).
REFSNAP_VM_LIGHT_KERNEL=x split_suites 2 "$table" $all > "$tmp/lsplit"; show "$tmp/lsplit"
pct=$(lockdep_factor "$table")
l1=$(load "$(sed -n 1p "$tmp/lsplit")") l2=$(( $(load "$(sed -n 2p "$tmp/lsplit")") * 100 / pct ))
echo "# loads $l1 s (debug kernel) and $l2 s (without lockdep, factor $pct %)"
d=$((l1 > l2 ? l1 - l2 : l2 - l1))
sed -n 1p "$tmp/lsplit" | grep -qw reflinkat && sed -n 1p "$tmp/lsplit" | grep -qw crash &&
	! sed -n 2p "$tmp/lsplit" | grep -qw 'reflinkat\|crash' && [ "$pct" -gt 100 ] && [ "$d" -le 100 ] &&
	[ "$(tr ' ' '\n' < "$tmp/lsplit" | grep -v '^smoke$' | sort)" = "$(grep -v '^smoke$' <<<"$all" | sort)" ]
ok $? "split: lockdep's suites in the first guest, the rest balanced at the lighter kernel's cost ($l1, $l2)"
[ "$(REFSNAP_VM_LIGHT_KERNEL=x split_suites 2 "$table" smoke watch refsnapd refsnapctl)" = \
	"$(split_suites 2 "$table" smoke watch refsnapd refsnapctl)" ] &&
	[ "$(REFSNAP_VM_LIGHT_KERNEL=x split_suites 1 "$table" smoke watch crash)" = "smoke crash watch" ]
ok $? "split: without a suite marked lockdep, as before; one guest runs them all"
suite_lockdep "$table" reflinkat && ! suite_lockdep "$table" watch && ! suite_lockdep "$table" nosuch
ok $? "suite_lockdep: the table's fifth column"

# The last run's times on this machine come before the table's.
printf 'trust-restore 900\nwatch 1\n' > "$tmp/times"
[ "$(REFSNAP_VM_TIMES=$tmp/times split_suites 2 "$table" smoke watch crash trust-restore)" = "smoke trust-restore
smoke crash watch" ]
ok $? "split: by this machine's last times when it has them"

# The QEMU stand-in: from the input archive's suites list, each suite's
# stream as main writes it; a suite named hang* hangs, crash* ends QEMU
# with an error mid-suite.  The results disk gets what main leaves.  It
# notes its -smp and suites in $QEMU_NOTES.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/qemu-system-x86_64" <<'SH'
#!/bin/bash
n=0 prev=
for a in "$@"; do
	case "$a" in file:*) n=$((n + 1)); [ "$n" = 1 ] && console=${a#file:}; [ "$n" = 2 ] && stream=${a#file:} ;; esac
	case "$a" in *id=input,*) input=${a#*file=}; input=${input%%,*} ;; esac
	case "$a" in *id=results,*) results=${a#*file=}; results=${results%%,*} ;; esac
	[ "$prev" = -smp ] && smp=$a
	[ "$prev" = -kernel ] && kernel=$a
	[ "$prev" = -append ] && append=$a
	prev=$a
done
d=$(mktemp -d)
tar -C "$d" -xf "$input" ./suites
echo "smp $smp suites $(echo $(cat "$d/suites"))" >> "$QEMU_NOTES"
echo "kernel $kernel append $append suites $(echo $(cat "$d/suites"))" >> "$QEMU_NOTES.kernels"
mkdir -p "$d/out"
echo "[    0.000000] Linux version (stand-in)" > "$console"
: > "$stream"
for s in $(cat "$d/suites"); do
	echo "suite-begin $s" >> "$stream"
	case "$s" in
	hang*) sleep 30 ;;
	crash*) exit 1 ;;
	splat*) echo "[    9.000000] BUG: KASAN: use-after-free in stand_in" >> "$console" ;;
	esac
	echo "PASS $s/ok" >> "$stream"; echo "PASS $s/ok" >> "$d/out/results.txt"
	echo "$s log" > "$d/out/$s.log"
	echo "suite-end $s 0 1000ms" >> "$stream"
done
echo "status 0" >> "$stream"
echo 0 > "$d/out/status"; echo ok > "$d/out/boot"
tar -C "$d/out" -cf "$results" .
rm -rf "$d"
SH
chmod +x "$tmp/bin/qemu-system-x86_64"
mkdir -p "$tmp/in"
printf '#!/bin/sh\n' > "$tmp/in/main" && chmod +x "$tmp/in/main"
cp "$table" "$tmp/in/timeouts"
: > "$tmp/bzImage"; : > "$tmp/root.img"
boot() {	# SUITES: vm_guests with the stand-in; verdicts in $tmp/out
	rm -f "$tmp/notes"
	PATH=$tmp/bin:$PATH REFSNAP_BUILD=$tmp/build QEMU_NOTES=$tmp/notes \
		vm_guests "$tmp/in" "$tmp/res" unit "$1" --kernel "$tmp/bzImage" --image "$tmp/root.img" \
		> "$tmp/out" 2> "$tmp/err"
	show "$tmp/out"; show "$tmp/notes"; show "$tmp/err"
}
once() { [ "$(grep -c -- "$1" "$tmp/out")" = 1 ]; }

REFSNAP_VM_GUESTS=2 boot "smoke refsnapd reflinkat watch refsnapctl"
n=0; for s in refsnapd reflinkat watch refsnapctl; do once "^PASS vm/$s/ok$" || n=1; done
[ "$n" = 0 ] && once '^PASS vm/smoke/ok$' && once '^PASS vm/guest2/smoke/ok$' &&
	once '^PASS vm/results-read-back$' && once '^PASS vm/guest2/results-read-back$' &&
	! grep -q '^FAIL' "$tmp/out"
ok $? "two guests: each verdict counted once, smoke judged in each boot"
[ "$(grep -c '^smp 1 ' "$tmp/notes")" = 1 ] && grep -q '^smp 2 .*reflinkat' "$tmp/notes" || [ "$(nproc)" -lt 2 ]
ok $? "two guests: one CPU each on this $(nproc)-CPU machine, but two for reflinkat's (tests/vm/timeouts)"
REFSNAP_VM_GUESTS=2 REFSNAP_VM_SMP=1 boot "smoke refsnapd reflinkat watch refsnapctl"
[ "$(grep -c '^smp 1 ' "$tmp/notes")" = 2 ]
ok $? "two guests: REFSNAP_VM_SMP sets every guest's CPUs"
grep -q '^reflinkat 4200 ' "$tmp/in-guest1/timeouts" "$tmp/in-guest2/timeouts" &&
	grep -q '^default 1800' "$tmp/in-guest1/timeouts" && grep -q '^reflinkat 2100 ' "$top/tests/vm/timeouts"
ok $? "two guests: each suite's limit doubled in the guests' inputs, the table left as it is"
[ "$(suite_cpus "$table" reflinkat)" = 2 ] && [ "$(suite_cpus "$table" watch)" = 1 ] && [ "$(suite_cpus "$table" nosuch)" = 1 ]
ok $? "suite_cpus: the table's fourth column, 1 without one"
[ "$(grep -o 'suites .*' "$tmp/notes" | tr ' ' '\n' | grep -v '^suites$\|^smoke$' | sort | uniq -d)" = "" ] &&
	[ "$(grep -o 'suites .*' "$tmp/notes" | tr ' ' '\n' | grep -c '^smoke$')" = 2 ]
ok $? "two guests: no suite runs in both but smoke"
[ -L "$tmp/res/refsnapd.log" ] && [ -L "$tmp/res/watch.log" ] && grep -q 'watch log' "$tmp/res/watch.log" &&
	[ "$(grep -c '^suite time: ' "$tmp/res/suite-times.txt")" = 6 ] && [ "$(grep -c . "$tmp/res/results.txt")" = 6 ] && grep -q '^suite time: guest2/smoke ' "$tmp/res/suite-times.txt"
ok $? "two guests: each suite's log, verdicts and time where one guest leaves them"

[ "$(sort "$tmp/build/vm-suite-times.txt" | tr '\n' ' ')" = "reflinkat 1 refsnapctl 1 refsnapd 1 smoke 1 watch 1 " ]
ok $? "two guests: each suite's time kept for the next split"

REFSNAP_VM_GUESTS=2 REFSNAP_VM_TIMEOUT=3 boot "smoke hang reflinkat watch"
once '^FAIL vm/hang/unfinished' && grep -q '^FAIL vm/\(guest2/\)\?run (.*hang' "$tmp/out" &&
	once '^PASS vm/reflinkat/ok$' && once '^PASS vm/watch/ok$'
ok $? "two guests: one guest's hang fails the run naming the suite; the other's verdicts kept"
REFSNAP_VM_GUESTS=2 boot "smoke crash reflinkat watch"
once '^FAIL vm/crash/unfinished' && grep -q '^FAIL vm/\(guest2/\)\?run (.*crash' "$tmp/out" &&
	grep -q '^FAIL vm/\(guest2/\)\?guest-finished' "$tmp/out" && once '^PASS vm/reflinkat/ok$'
ok $? "two guests: one guest's crash fails the run naming the suite"

REFSNAP_VM_GUESTS=2 boot "smoke splat reflinkat watch"
grep -q '^FAIL vm/\(guest2/\)\?run (.*splat' "$tmp/out" && [ "$(grep -c '^FAIL' "$tmp/out")" = 1 ] &&
	grep -q 'console-check: .*BUG: KASAN' "$tmp/err"
ok $? "two guests: a kernel report on one guest's console fails that guest alone"

REFSNAP_VM_GUESTS=1 boot "smoke reflinkat watch"
once '^PASS vm/smoke/ok$' && once '^PASS vm/watch/ok$' && ! grep -q 'guest2\|^FAIL' "$tmp/out" &&
	[ "$(wc -l < "$tmp/notes")" = 1 ] && grep -q "^smp $(nproc) " "$tmp/notes" && [ -f "$tmp/res/watch.log" ]
ok $? "one guest (REFSNAP_VM_GUESTS=1): every suite, all the CPUs, results where they always were"
# The kernel without lockdep for the guest with no suite marked lockdep,
# told so on its command line, its times counted in the debug kernel's.
mkdir -p "$tmp/build/kernel" && : > "$tmp/build/kernel/bzImage" && : > "$tmp/bzImage-kasan"
rm -f "$tmp/notes.kernels" "$tmp/build/vm-suite-times.txt"
PATH=$tmp/bin:$PATH REFSNAP_BUILD=$tmp/build QEMU_NOTES=$tmp/notes REFSNAP_VM_GUESTS=2 \
	REFSNAP_VM_LIGHT_KERNEL=$tmp/bzImage-kasan vm_guests "$tmp/in" "$tmp/res" unit \
	"smoke reflinkat watch refsnapctl" --image "$tmp/root.img" > "$tmp/out" 2> "$tmp/err"
show "$tmp/notes.kernels"
grep -q "^kernel $tmp/build/kernel/bzImage append .*suites smoke reflinkat\$" "$tmp/notes.kernels" &&
	grep -q "^kernel $tmp/bzImage-kasan append .*refsnap.kernel=kasan.* suites smoke .*watch" "$tmp/notes.kernels" &&
	! grep "bzImage-kasan" "$tmp/notes.kernels" | grep -qw reflinkat && ! grep -q '^FAIL' "$tmp/out" &&
	grep -q '^watch 2$' "$tmp/build/vm-suite-times.txt" && grep -q '^reflinkat 1$' "$tmp/build/vm-suite-times.txt"
ok $? "two guests: the debug kernel for lockdep's suites, the lighter one for the rest, its times scaled"
rm -f "$tmp/notes.kernels"
PATH=$tmp/bin:$PATH REFSNAP_BUILD=$tmp/build QEMU_NOTES=$tmp/notes REFSNAP_VM_GUESTS=2 \
	REFSNAP_VM_LIGHT_KERNEL=$tmp/bzImage-kasan vm_guests "$tmp/in" "$tmp/res" unit \
	"smoke watch" --kernel "$tmp/bzImage" --image "$tmp/root.img" > "$tmp/out" 2> "$tmp/err"
grep -q "^kernel $tmp/bzImage append " "$tmp/notes.kernels" && ! grep -q kasan "$tmp/notes.kernels"
ok $? "a kernel named by the caller (the benchmarks', Debian's) is the one booted"

REFSNAP_VM_GUESTS=2 boot "bench smoke"
[ "$(wc -l < "$tmp/notes")" = 1 ]; ok $? "benchmarks run in one guest"

tap_end
