#!/bin/bash
# Monitoring on the host, under ASan: refsnapd on a private bus (the system
# bus's default policy and ours), then refsnapctl check's exit statuses
# and lines for a fresh job, a job whose newest snapshot is partial, one
# whose snapshot fails (the host has no reflinkat(2)), one that does not
# exist, -w and -c, a paused one, and the daemon stopped; and the metrics file the
# daemon writes (metrics_file), through promcheck.py.
set -u
. "${TEST_BUS_LIB:-$(dirname "$0")/test-bus-lib.sh}"
daemon=${1:?usage: test-monitor.sh REFSNAPD REFSNAPCTL POLICY PROMCHECK}
ctl=${2:?} policy=${3:?} promcheck=${4:?}
# In /run: not under /tmp or /var/tmp, which the daemon refuses (PrivateTmp=).
bus_test_begin monitor
# check's exit status, its output kept in $t/out.
check() { "$ctl" "${c[@]}" check "$@" > "$t/out" 2>> "$t/calls.log"; echo $?; }

mkdir -p "$t/system.d" "$t/conf.d" "$t/prom"
cp "$policy" "$t/system.d/"
bus_start "$t" || { echo "Bail out! dbus-daemon did not start: $(cat "$t/bus.log")"; exit 1; }

# fresh: a whole snapshot of a minute ago; part: a partial one (2 files
# skipped); old: one of 2020, so the daemon takes one at start, which
# fails here.  interval 1h: the first two are not due.
# Never before this hour's start: a job's due times are its interval's
# multiples on the UTC clock, so a snapshot of 23:59:23 seen at 00:00:23
# makes fresh due, and the daemon takes one at start, which fails here
# (seen once, in a package build at 00:00:23).  In an hour's first
# minute the snapshot is of the hour's start, and younger; at least 21 s
# old all the same, for the 10 s and 20 s thresholds below (at 04:00:03 a
# snapshot of 04:00:01 was OK where they want WARNING and CRITICAL): in
# an hour's first 22 s, the test waits for its 22nd.
now=$(date -u +%s)
[ $((now % 3600)) -lt 22 ] && sleep $((22 - now % 3600)) && now=$(date -u +%s)
r=$((now - 60))
[ "$r" -le $((now - now % 3600)) ] && r=$((now - now % 3600 + 1))
recent=$(date -u -d "@$r" +%Y-%m-%dT%H:%M:%SZ)
age_re=1min
[ $((now - r)) -lt 60 ] && age_re='[0-9]*s'
for j in fresh part old; do
	mkdir -p "$t/src-$j" "$t/store-$j/.facts"
	chmod 0700 "$t/store-$j"
	s=$recent
	[ "$j" = old ] && s=2020-01-01T00:00:00Z
	mkdir "$t/store-$j/$s"
	skipped=0
	[ "$j" = part ] && skipped=2
	printf 'start=100\nend=104\nfiles=12\nbytes=3456\nskipped=%s\n' "$skipped" > "$t/store-$j/.facts/$s"
	printf '[%s]\nsource = %s\nstore = %s\ninterval = 1h\n' "$j" "$t/src-$j" "$t/store-$j" >> "$t/main.conf"
done
printf '[daemon]\nmetrics_file = %s\n' "$t/prom/refsnap.prom" >> "$t/main.conf"
c=(-c "$t/main.conf" --conf-dir "$t/conf.d")

# Stopped: UNKNOWN, said on the first line.
ok test "$(check)" = 3
ok grep -q '^REFSNAP UNKNOWN: refsnapd is not running' "$t/out"

"$daemon" "${c[@]}" > "$t/daemon.log" 2>&1 &
d_pid=$!
for i in $(seq 200); do "$ctl" status 2>/dev/null | grep -q '^old .*failed$' && break; sleep 0.1; done
ok sh -c "'$ctl' status | grep -q '^old .*failed\$'"

ok test "$(check fresh)" = 0
ok grep -q "^REFSNAP OK: 1 job: 1 ok, 0 warning, 0 critical, 0 unknown | 'fresh_age'=[0-9]*s;7200;14400;0\$" "$t/out"
ok grep -q "^fresh: OK: last verified $age_re" "$t/out"
ok test "$(check part)" = 1
ok grep -q '^part: WARNING: the newest snapshot is partial' "$t/out"
ok test "$(check old)" = 2
ok grep -q '^old: CRITICAL: the last snapshot failed' "$t/out"
# All: the worst, one line per job after the summary.
ok test "$(check)" = 2
ok grep -q '^REFSNAP CRITICAL: 3 jobs: 1 ok, 1 warning, 1 critical, 0 unknown |' "$t/out"
ok test "$(wc -l < "$t/out")" = 4
ok test "$(check fresh part)" = 1
# A job that is not configured: UNKNOWN, beside the others.
ok test "$(check fresh nope)" = 3
ok grep -q '^nope: UNKNOWN: no such job' "$t/out"
# -w and -c after the verb are its own (not --config's -c).
ok test "$(check fresh -w 10s -c 1h)" = 1
ok grep -q "'fresh_age'=[0-9]*s;10;3600;0" "$t/out"
ok test "$(check -w 10s -c 20s fresh)" = 2
ok test "$(check fresh -w 1h -c 2h)" = 0
ok test "$(check fresh -w 2h -c 1h)" = 3
ok test "$(check fresh -w soon)" = 3
# An unchanged job's check counts as verified: an old snapshot checked now is fresh.
printf '%s\n' "$(date +%s)" > "$t/store-fresh/.checked"
ok test "$(check fresh -w 10s -c 1h)" = 0

# The metrics file: written at start and after old's failure.
m=$t/prom/refsnap.prom
for i in $(seq 100); do grep -q '^refsnap_snapshot_failures_total{job="old"} 1$' "$m" 2>/dev/null && break; sleep 0.1; done
ok grep -q '^refsnap_snapshot_failures_total{job="old"} 1$' "$m"
ok grep -q '^refsnap_last_result{job="old",result="failed"} 1$' "$m"
ok grep -q '^refsnap_last_result{job="fresh",result="none"} 1$' "$m"
ok grep -q "^refsnap_snapshot_newest_timestamp_seconds{job=\"fresh\"} $(date -u -d "$recent" +%s)\$" "$m"
ok grep -q '^refsnap_snapshot_oldest_timestamp_seconds{job="old"} 1577836800$' "$m"
ok grep -q '^refsnap_snapshot_files{job="part"} 12$' "$m"
ok grep -q '^refsnap_snapshot_bytes{job="part"} 3456$' "$m"
ok grep -q '^refsnap_snapshot_duration_seconds{job="part"} 4$' "$m"
ok grep -q '^refsnap_snapshots{job="old"} 1$' "$m"
ok test "$(stat -c %a "$m")" = 644
ok python3 "$promcheck" "$m"
python3 "$promcheck" "$m"
# Only the file: its temporary names are gone.
ok test "$(ls -A "$t/prom")" = refsnap.prom

# A pause: written at once (refsnap_paused 1), check warns; a resume undoes both.
ok grep -q '^refsnap_paused{job="fresh"} 0$' "$m"
ok "$ctl" "${c[@]}" pause fresh --for 1h
for i in $(seq 100); do grep -q '^refsnap_paused{job="fresh"} 1$' "$m" 2>/dev/null && break; sleep 0.1; done
ok grep -q '^refsnap_paused{job="fresh"} 1$' "$m"
ok grep -q '^refsnap_paused{job="part"} 0$' "$m"
ok python3 "$promcheck" "$m"
ok test "$(check fresh)" = 1
ok grep -q '^fresh: WARNING: paused until 20[-0-9T:]*Z, last verified ' "$t/out"
ok "$ctl" "${c[@]}" resume fresh
for i in $(seq 100); do grep -q '^refsnap_paused{job="fresh"} 0$' "$m" 2>/dev/null && break; sleep 0.1; done
ok grep -q '^refsnap_paused{job="fresh"} 0$' "$m"
# Fresh by the thresholds (its .checked was written above, seconds ago on
# a loaded machine too): only the pause's WARNING can be gone or not.
ok test "$(check fresh -w 1h -c 2h)" = 0

# A reload writes it again (SIGHUP), with the new job in it.
mkdir -p "$t/src-late" "$t/store-late/2020-01-01T00:00:00Z"; chmod 0700 "$t/store-late"
printf '[late]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src-late" "$t/store-late" > "$t/conf.d/late.conf"
kill -HUP "$d_pid"
for i in $(seq 100); do grep -q '^refsnap_snapshots{job="late"}' "$m" 2>/dev/null && break; sleep 0.1; done
ok grep -q '^refsnap_snapshots{job="late"} 1$' "$m"
# A job the daemon runs that the file no longer has (no reload yet): UNKNOWN, said.
rm "$t/conf.d/late.conf"
ok test "$(check late)" = 3
ok grep -q '^late: UNKNOWN: not in .*main.conf (a reload pending?)$' "$t/out"

# Stopped again: UNKNOWN.
kill -TERM "$d_pid"
wait "$d_pid"
d_pid=
ok test "$(check fresh)" = 3

# No node_exporter directory: no file, and none made.
rm -rf "$t/prom"
"$daemon" "${c[@]}" > "$t/daemon2.log" 2>&1 &
d_pid=$!
for i in $(seq 100); do "$ctl" status > /dev/null 2>&1 && break; sleep 0.1; done
ok "$ctl" status
ok test ! -e "$t/prom"

[ "$failed" = 0 ] || { echo "# daemon.log:"; sed 's/^/# /' "$t/daemon.log"; echo "# calls:"; sed 's/^/# /' "$t/calls.log"; }
echo "1..$n"
[ "$failed" = 0 ]
