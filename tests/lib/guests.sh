# How tests/run boots the VM guests that run the VM suites.  Sourced by
# tests/run after tests/lib/verdicts.sh; tests/unit/guests.sh calls it
# with a QEMU stand-in.

# vm_guests INPUT RESULTS NAME "SUITES" [RUN-VM OPTIONS...]: boot the
# guests (images/run-vm) at once, each with its share of the suites
# (split_suites), and print every verdict of every guest, each once
# (vm_verdicts).  INPUT is the guest's input directory without its
# suites list; with one guest its results go to RESULTS and its VM files
# to build/vm/NAME, as they always did; with more, guest G's go to
# RESULTS/guestG and build/vm/NAME-guestG, each suite's log is linked
# from RESULTS and RESULTS/results.txt holds every guest's, one after the
# other (for reading: the verdicts counted are the streams').
# RESULTS/suite-times.txt gets the "suite time:" lines,
# RESULTS/guest-times.txt "SECONDS G SUITES" a guest.  A guest that failed
# (QEMU, its console, its status) is a FAIL naming it and its suites.
# REFSNAP_VM_GUESTS: the number of guests (default: 2 on a machine of 2
# CPUs or more, else 1; always one when a benchmark is among the suites);
# REFSNAP_VM_SMP: each guest's CPUs (default: the CPUs shared out, but
# at least the CPUs its suites need, the 4th column of tests/vm/timeouts:
# the reflinkat suite's tests of what runs beside a long clone need a
# second CPU, which a guest of one CPU never gives them).  Each suite's
# limit in a guest is its tests/vm/timeouts limit times the number of
# guests: the limits are for a machine a guest has to itself.
# REFSNAP_VM_LIGHT_KERNEL (tests/run: the kernel without lockdep): what a
# guest none of whose suites is marked "lockdep" in tests/vm/timeouts
# boots, with "refsnap.kernel=kasan" on its command line (split_suites
# puts the marked ones in the first guest).
# REFSNAP_VM_TIMEOUT: each boot's limit (default: its suites' limits and
# ten minutes).  REFSNAP_VM_TIMES (default build/vm-suite-times.txt)
# keeps each suite's time in its last run that ended it, for the next
# split (suite_weight).
vm_guests() {
	local in=$1 res=$2 name=$3 sel=$4 ncpu guests smp gsmp c g gs gin gres gname limit s
	local label vmrc secs f pct
	shift 4
	local table=$verdicts_top/tests/vm/timeouts
	export REFSNAP_VM_TIMES=${REFSNAP_VM_TIMES:-${REFSNAP_BUILD:-$verdicts_top/build}/vm-suite-times.txt}
	local -a lists pids=() light=() kargs
	ncpu=$(nproc)
	guests=${REFSNAP_VM_GUESTS:-$(( ncpu >= 2 ? 2 : 1 ))}
	# Benchmarks: one guest with the whole machine.
	[[ " $sel" == *" bench"* ]] && guests=1
	mapfile -t lists < <(split_suites "$guests" "$table" $sel)
	guests=${#lists[@]}
	smp=${REFSNAP_VM_SMP:-$(( ncpu / guests > 1 ? ncpu / guests : 1 ))}
	rm -rf "$res" "$in"-guest[0-9]* "$res".run-vm.log "$res".rc
	mkdir -p "$res"
	for ((g = 1; g <= guests; g++)); do
		gs=${lists[g - 1]}
		gsmp=$smp
		if [ -z "${REFSNAP_VM_SMP:-}" ]; then
			for s in $gs; do
				c=$(suite_cpus "$table" "$s")
				[ "$c" -gt "$gsmp" ] && gsmp=$c
			done
			[ "$gsmp" -gt "$ncpu" ] && gsmp=$ncpu
		fi
		if [ "$guests" = 1 ]; then
			gin=$in gres=$res gname=$name
		else
			gin=$in-guest$g gres=$res/guest$g gname=$name-guest$g
			cp -al "$in" "$gin"
			echo "guest $g (-smp $gsmp): $gs" >&2
			# The suites' limits, for a machine shared by the guests.
			if [ -f "$gin/timeouts" ]; then
				awk -v n="$guests" '/^[a-z]/ { $2 *= n } { print }' "$gin/timeouts" > "$gin/timeouts.new" &&
					rm -f "$gin/timeouts" && mv "$gin/timeouts.new" "$gin/timeouts"
			fi
		fi
		rm -f "$gin/suites"
		printf '%s\n' $gs > "$gin/suites"
		limit=600
		for s in $gs; do limit=$((limit + guests * $(suite_timeout "$table" "$s"))); done
		light[g]=$(guest_light "$table" "$gs" "$@")
		kargs=()
		[ -n "${light[g]}" ] && kargs=(--kernel "${light[g]}" --append refsnap.kernel=kasan)
		[ "$guests" = 1 ] || echo "guest $g kernel: ${light[g]:-the debug kernel (lockdep)}" >&2
		(
			t=$(date +%s)
			"$verdicts_top/images/run-vm" --name "$gname" --input "$gin" --results "$gres" \
				--smp "$gsmp" --timeout "${REFSNAP_VM_TIMEOUT:-$limit}" "$@" "${kargs[@]}"
			echo "$? $(( $(date +%s) - t ))" > "$gres.rc"
		) > "$gres.run-vm.log" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	: > "$res/suite-times.txt"
	: > "$res/guest-times.txt"
	for ((g = 1; g <= guests; g++)); do
		gs=${lists[g - 1]} label= gres=$res
		[ "$guests" = 1 ] || gres=$res/guest$g
		[ "$g" -gt 1 ] && label=guest$g
		cat "$gres.run-vm.log" >&2
		read -r vmrc secs < "$gres.rc" 2>/dev/null || vmrc=255 secs=0
		echo "$secs $g $gs" >> "$res/guest-times.txt"
		vm_verdicts --guest "$label" "$gres" $gs
		suite_times --guest "$label" "$gres" >> "$res/suite-times.txt"
		# Their times, for the next split: a second guest's smoke is
		# the same suite again, and a timeout says only "at least".
		# In the debug kernel's seconds (split_suites' unit).
		pct=100
		[ -n "${light[g]}" ] && pct=$(lockdep_factor "$table")
		while read -r _ _ s rc ms; do
			[ "$s" = "${s#*/}" ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] || continue
			mkdir -p "${REFSNAP_VM_TIMES%/*}"
			{ grep -v "^$s " "$REFSNAP_VM_TIMES" 2>/dev/null; echo "$s $(( (${ms%ms} * pct / 100 + 500) / 1000 ))"; } \
				> "$REFSNAP_VM_TIMES.new" && mv "$REFSNAP_VM_TIMES.new" "$REFSNAP_VM_TIMES"
		done < <(suite_times --guest "$label" "$gres")
		if [ "$guests" != 1 ]; then
			cat "$gres/results.txt" >> "$res/results.txt" 2>/dev/null
			for f in "$gres"/*.log; do
				[ -f "$f" ] && [ ! -e "$res/${f##*/}" ] && ln -s "guest$g/${f##*/}" "$res/${f##*/}"
			done
		fi
		if [ "$vmrc" != 0 ]; then
			echo "FAIL vm/${label:+$label/}run (console clean, guest status 0: see above; images/run-vm exit $vmrc, suites $gs)"
			for f in "$gres"/*.log; do
				[ -f "$f" ] && [ ! -L "$f" ] && grep -q . "$f" && { echo "---- tail of $f"; tail -n 30 "$f"; } >&2
			done
		fi
	done
}

# guest_light TABLE "SUITES" [RUN-VM OPTIONS...]: the kernel a guest of
# these suites boots instead of the debug one: REFSNAP_VM_LIGHT_KERNEL
# (KASAN without lockdep) when none of them is marked "lockdep" and the
# options name no kernel of their own; else nothing.
guest_light() {
	local table=$1 gs=$2 s
	shift 2
	[ -n "${REFSNAP_VM_LIGHT_KERNEL:-}" ] || return 0
	for s in "$@"; do [ "$s" = --kernel ] && return 0; done
	for s in $gs; do suite_lockdep "$table" "$s" && return 0; done
	echo "$REFSNAP_VM_LIGHT_KERNEL"
}
