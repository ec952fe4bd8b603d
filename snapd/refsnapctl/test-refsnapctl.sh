#!/bin/bash
# refsnapctl's offline verbs against a store laid out by hand: list (human
# and --json), prune --dry-run and prune, check-config, the exit codes.
set -u
ctl=${1:?usage: test-refsnapctl.sh REFSNAPCTL}
# In /run: not under /tmp or /var/tmp, which check-config refuses
# (PrivateTmp=), and root's whatever folder the tests run from.
t=$(mktemp -d /run/refsnap-test-ctl.XXXXXX)
chmod 0755 "$t"
trap 'rm -rf "$t"' EXIT
n=0 failed=0
# The test's description on one line: an argument may hold a newline, which
# would end the TAP line.
ok() {
	local d="$*"
	d=${d//$'\n'/\\n}
	n=$((n + 1))
	if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; failed=$((failed + 1)); fi
}

mkdir -p "$t/src" "$t/store/.facts" "$t/conf.d"
y=$(date -u -d '2 days ago' +%Y-%m-%d)
for s in "${y}T10:00:00Z" "${y}T10:30:00Z" "${y}T11:00:00Z"; do
	mkdir "$t/store/$s"
	printf 'start=100\nend=103\nfiles=1234\nbytes=5000000\n' > "$t/store/.facts/$s"
done
mkdir "$t/store/notes"
ln -s "${y}T11:00:00Z" "$t/store/latest"
cat > "$t/main.conf" <<CONF
[home]
source = $t/src
store = $t/store
interval = 1h
keep_hourly = 1
CONF
c=(-c "$t/main.conf" --conf-dir "$t/conf.d")

out=$("$ctl" "${c[@]}" list)
ok test $? = 0
ok grep -q "^home  *${y}T10:00:00Z  *1234  *4.8M  *3s$" <<<"$out"
ok test "$(grep -c "^home " <<<"$out")" = 3
json=$("$ctl" "${c[@]}" --json list home)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d)==3 and d[0]["files"]==1234 and d[0]["job"]=="home"' "$json"
# A description (snapshot --description), shown at the end of its line and in JSON;
# one that holds what none may is not shown, and said on stderr.
printf 'before the upgrade – ok\n' > "$t/store/.facts/${y}T10:30:00Z.description"
printf 'evil\033[2J\n' > "$t/store/.facts/${y}T11:00:00Z.description"
out=$("$ctl" "${c[@]}" list 2>"$t/err")
ok grep -q "^home  *${y}T10:30:00Z  *1234  *4.8M  *3s  description: before the upgrade – ok$" <<<"$out"
ok grep -q "^home  *${y}T11:00:00Z  *1234  *4.8M  *3s$" <<<"$out"
ok grep -q "snapshot ${y}T11:00:00Z: cannot read its description: Bad message" "$t/err"
ok test "$(grep -c $'\e' <<<"$out")" = 0
json=$("$ctl" "${c[@]}" --json list home 2>/dev/null)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [x["description"] for x in d]==[None, "before the upgrade – ok", None], d' "$json"
rm "$t/store/.facts/${y}T10:30:00Z.description" "$t/store/.facts/${y}T11:00:00Z.description"
# snapshot --description: refused before refsnapd is asked when no snapshot may carry it.
for bad in "$(printf 'two\nlines')" "$(printf 'esc\033[31m')" "$(head -c 257 /dev/zero | tr '\0' x)" ''; do
	"$ctl" "${c[@]}" snapshot home --description "$bad" >/dev/null 2>"$t/err"
	ok test $? = 2
	ok grep -q -- "--description: .*one line of 1 to 256 bytes" "$t/err"
done
"$ctl" "${c[@]}" snapshot home --if-changed --description fine >/dev/null 2>&1
ok test $? = 2
"$ctl" "${c[@]}" list nope >/dev/null 2>&1
ok test $? = 4
# How each was made, when its facts say: full or incremental, reused and made.
printf 'start=100\nend=103\nfiles=1234\nbytes=5000000\nincremental=0\nreused=0\nmade=1300\ncompared=0\n' > "$t/store/.facts/${y}T10:30:00Z"
printf 'start=100\nend=101\nfiles=1234\nbytes=5000000\nincremental=1\nreused=1200\nmade=100\ncompared=60\n' > "$t/store/.facts/${y}T11:00:00Z"
out=$("$ctl" "${c[@]}" list)
ok grep -q "^home  *${y}T10:00:00Z  *1234  *4.8M  *3s$" <<<"$out"
ok grep -q "^home  *${y}T10:30:00Z  *1234  *4.8M  *3s  full: 1300 made$" <<<"$out"
ok grep -q "^home  *${y}T11:00:00Z  *1234  *4.8M  *1s  incremental: 1200 reused, 100 made$" <<<"$out"
json=$("$ctl" "${c[@]}" --json list home)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d[0]["kind"] is None and d[1]["kind"]=="full" and d[1]["made"]==1300 and d[2]["kind"]=="incremental" and d[2]["reused"]==1200 and d[2]["made"]==100 and d[2]["compared"]==60' "$json"
# on_change's last skip, after the newest snapshot: said, on a line of its own.
date -u -d "${y}T12:00:00Z" +%s > "$t/store/.checked"
# Its times in the local zone, with the zone's name (a POSIX TZ: no
# zoneinfo needed), or in UTC with --utc; the names stay UTC identifiers.
out=$(TZ=XST-5:30 "$ctl" "${c[@]}" list)
ok grep -q "^  home: unchanged since ${y} 16:30:00 XST, last checked ${y} 17:30:00 XST$" <<<"$out"
ok test "$(grep -c "^home  *${y}T1[01]:[03]0:00Z " <<<"$out")" = 3
out=$(TZ=XST-5:30 "$ctl" "${c[@]}" --utc list)
ok grep -q "^  home: unchanged since ${y} 11:00:00 UTC, last checked ${y} 12:00:00 UTC$" <<<"$out"
# --no-legend: the rows alone.
out=$("$ctl" "${c[@]}" --no-legend list)
ok test "$(wc -l <<<"$out")" = 4
ok test "$(grep -c "^home " <<<"$out")" = 3
ok test "$(grep -c SNAPSHOT <<<"$out")" = 0
rm "$t/store/.checked"
out=$("$ctl" "${c[@]}" prune home --dry-run)
ok grep -q "2 snapshots would be removed" <<<"$out"
ok test -d "$t/store/${y}T10:00:00Z"
# --json: each snapshot with what keeps it (zrepl#713), the rules by name; a pin is one.
json=$("$ctl" "${c[@]}" --json prune home --dry-run)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); s=d["snapshots"]; assert d["job"]=="home" and d["dry_run"] is True and d["removed"]==2 and [x["action"] for x in s]==["remove","remove","keep"] and s[0]["kept_by"]==[] and "newest" in s[2]["kept_by"] and "hourly" in s[2]["kept_by"] and s[2]["error"] is None and d["messages"]==[], d' "$json"
touch "$t/store/.facts/${y}T10:00:00Z.pinned"
json=$("$ctl" "${c[@]}" --json prune home --dry-run)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); s=d["snapshots"]; assert d["removed"]==1 and s[0]["snapshot"].endswith("T10:00:00Z") and s[0]["action"]=="keep" and s[0]["kept_by"]==["pinned"], d' "$json"
rm "$t/store/.facts/${y}T10:00:00Z.pinned"
out=$("$ctl" "${c[@]}" --no-legend prune home --dry-run)
ok test "$(grep -c "would be removed" <<<"$out")" = 0
ok test -d "$t/store/${y}T10:00:00Z"
json=$("$ctl" "${c[@]}" --json prune home)
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); s=d["snapshots"]; assert d["dry_run"] is False and d["removed"]==2 and [x["action"] for x in s]==["remove","remove","keep"] and s[0]["error"] is None, d' "$json"
ok test ! -e "$t/store/${y}T10:00:00Z" -a ! -e "$t/store/.facts/${y}T10:30:00Z"
ok test -d "$t/store/${y}T11:00:00Z" -a -d "$t/store/notes"
"$ctl" "${c[@]}" prune >/dev/null 2>&1
ok test $? = 2
"$ctl" "${c[@]}" frobnicate >/dev/null 2>&1
ok test $? = 2
# check-config probes each store's filesystem with a reflink: here, on
# tmpfs, it cannot share data, and says so at the store's line (the VM
# suites see it pass on btrfs and XFS, and fail on ext4).
before=$(ls -A "$t/store")
out=$("$ctl" "${c[@]}" check-config 2>&1)
ok test $? = 1
ok grep -q "main.conf:3: \[home\]: store $t/store: its filesystem cannot share data between files, so every snapshot would fail (a reflink of the probe file: " <<<"$out"
ok test "$(ls -A "$t/store")" = "$before"
# --json: the same error by file and line, the same exit status.
json=$("$ctl" "${c[@]}" --json check-config)
ok test $? = 1
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); e=d["errors"]; assert d["ok"] is False and d["jobs"] is None and len(e)==1 and e[0]["file"].endswith("/main.conf") and e[0]["line"]==3 and "cannot share data" in e[0]["message"] and d["notes"]==[], d' "$json"
# A configuration whose name holds an escape sequence, a newline and a
# byte of no UTF-8: escaped in text, valid JSON that gives the bytes back.
odd=$t/$'odd\e[31m\nname\xff.conf'
cp "$t/main.conf" "$odd"
out=$("$ctl" -c "$odd" --conf-dir "$t/conf.d" check-config 2>&1)
ok test $? = 1
ok grep -qF 'odd\x1b[31m\nname\xff.conf:3: [home]: store' <<<"$out"
ok test "$(grep -c $'\e' <<<"$out")" = 0
json=$("$ctl" -c "$odd" --conf-dir "$t/conf.d" --json check-config)
# The configuration by its bytes; an error's file as the text shows it, escaped (one line).
ok python3 -c 'import json,os,sys; d=json.loads(sys.argv[1]); e=d["errors"]; assert os.fsencode(d["config"])==os.fsencode(sys.argv[2]) and len(e)==1 and e[0]["file"].endswith("/odd\\x1b[31m\\nname\\xff.conf") and e[0]["line"]==3, d' "$json" "$odd"
rm "$odd"

# diff: a snapshot against the live tree, against another, --json, a path.
s1="${y}T11:00:00Z"
mkdir -p "$t/src/d" "$t/store/$s1/d"
echo same > "$t/src/d/same"; cp -p "$t/src/d/same" "$t/store/$s1/d/same"
echo old > "$t/store/$s1/gone"
echo new > "$t/src/added"
echo v1 > "$t/store/$s1/d/edit"; echo v22 > "$t/src/d/edit"
out=$("$ctl" "${c[@]}" diff home "$s1")
ok test $? = 0
ok test "$out" = "$(printf '+ added\n~ d/edit\n- gone')"
out=$("$ctl" "${c[@]}" diff home latest live d)
ok test "$out" = "~ d/edit"
"$ctl" "${c[@]}" diff home "$t/src/d/edit" >/dev/null 2>&1
ok test $? = 4
out=$("$ctl" "${c[@]}" diff home "$s1" "$t/src/d/edit")
ok test "$out" = "~ d/edit"
json=$("$ctl" "${c[@]}" --json diff home "$s1")
ok python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [x["change"] for x in d]==["added","changed","removed"]' "$json"
out=$("$ctl" "${c[@]}" diff home "$s1" "${y}T10:00:00Z" 2>&1)
ok test $? = 4
"$ctl" "${c[@]}" diff home "not-a-snapshot" >/dev/null 2>&1
ok test $? = 4
"$ctl" "${c[@]}" diff home "$s1" ../etc >/dev/null 2>&1
ok test $? = 2
# Names that are no text: escaped in text (one line each, nothing a
# terminal acts on, cescape), valid JSON that gives the bytes back.
names=("$(printf 'a\nb')" "$(printf '\e[31m')" "$(printf '\xff')" 'back\slash')
for f in "${names[@]}"; do : > "$t/src/$f"; done
out=$("$ctl" "${c[@]}" diff home "$s1")
ok grep -qxF '+ a\nb' <<<"$out"
ok grep -qxF '+ \x1b[31m' <<<"$out"
ok grep -qxF '+ \xff' <<<"$out"
ok grep -qxF '+ back\\slash' <<<"$out"
ok test "$(wc -l <<<"$out")" = 7
ok sh -c "! printf '%s' \"\$1\" | grep -q \"\$(printf '\\033')\"" sh "$out"
"$ctl" "${c[@]}" --json diff home "$s1" > "$t/names.json"
ok python3 -c 'import json,os,sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
got = sorted(os.fsencode(x["path"]) for x in d)
want = sorted([b"a\nb", b"\x1b[31m", b"\xff", b"back\\slash", b"added", b"d/edit", b"gone"])
assert got == want, got' "$t/names.json"
for f in "${names[@]}"; do rm -f "$t/src/$f"; done
# diff ... live opens the source as everything else does: never through a symbolic link.
ln -s . "$t/lnk"
printf '[linked]\nsource = %s/lnk/src\nstore = %s/store\ninterval = 1h\n' "$t" "$t" > "$t/linked.conf"
out=$("$ctl" -c "$t/linked.conf" --conf-dir "$t/conf.d" diff linked "$s1" live 2>&1)
ok test $? != 0
ok grep -q "symbolic link" <<<"$out"
rm -f "$t/lnk" "$t/linked.conf"
"$ctl" "${c[@]}" restore nope latest >/dev/null 2>&1
ok test $? = 4
"$ctl" "${c[@]}" restore home "${y}T09:00:00Z" >/dev/null 2>&1
ok test $? = 4
out=$("$ctl" "${c[@]}" restore home latest --dry-run --delete)
ok grep -q "^- added$" <<<"$out"
ok grep -q "^+ gone$" <<<"$out"
ok grep -q "^~ d/edit$" <<<"$out"
ok test -e "$t/src/added" -a ! -e "$t/src/gone"
# --json: the same entries, a name of any bytes among them given back
# exactly (escaped in the text), and the counts; only with --dry-run.
s1n=$'r\e[1m\nx\xfe'
touch "$t/store/$s1/$s1n"
out=$("$ctl" "${c[@]}" restore home latest --dry-run --delete)
ok grep -qxF '+ r\x1b[1m\nx\xfe' <<<"$out"
ok test "$(grep -c $'\e' <<<"$out")" = 0
json=$("$ctl" "${c[@]}" --json restore home latest --dry-run --delete)
ok test $? = 0
ok python3 -c 'import json,os,sys; d=json.loads(sys.argv[1]); e={os.fsencode(x["path"]): x["change"] for x in d["entries"]}; assert d["job"]=="home" and d["delete"] is True and e[b"added"]=="removed" and e[b"gone"]=="added" and e[b"d/edit"]=="changed" and e[os.fsencode(sys.argv[2])]=="added" and d["restore"]==3 and d["remove"]==1 and d["refused"]==0, d' "$json" "$s1n"
rm "$t/store/$s1/$s1n"
"$ctl" "${c[@]}" --json restore home latest >/dev/null 2>&1
ok test $? = 2
ok test -e "$t/src/added" -a ! -e "$t/src/gone"
# PATHs that overlap are one (restored, and guarded, once); the source
# itself as a PATH is the whole job.
out=$("$ctl" "${c[@]}" restore home latest "$t/src/d" "$t/src/d/edit" --dry-run)
ok test "$(grep -c "^~ d/edit$" <<<"$out")" = 1
out=$("$ctl" "${c[@]}" restore home latest "$t/src/d" "$t/src" --dry-run --delete)
ok grep -q "^+ gone$" <<<"$out"
ok test "$(grep -c "^~ d/edit$" <<<"$out")" = 1
# A guard of some paths whose list of them is lost: its facts say what it
# is, so it is not restored as a whole (which --delete would empty the
# live tree by).
g="${y}T11:30:00Z"
mkdir "$t/store/$g"
printf 'files=0\nguard=1\nguarded=1\npaths=1\n' > "$t/store/.facts/$g"
out=$("$ctl" "${c[@]}" restore home "$g" --dry-run --delete 2>&1)
ok test $? = 1
ok grep -q "list of them is missing" <<<"$out"
rm -r "$t/store/$g" "$t/store/.facts/$g"
# A --to target that is not empty: guarded by the job whose source holds
# it, or, in no job's source, --delete into it needs --no-guard.
mkdir -p "$t/out" "$t/src/in" && echo x > "$t/out/x" && echo x > "$t/src/in/x"
out=$("$ctl" "${c[@]}" restore home latest --dry-run --delete --to "$t/out" 2>&1)
ok test $? = 1
ok grep -q "^! $t/out: not empty, and in no job's source" <<<"$out"
ok grep -q -- "--no-guard" <<<"$out"
out=$("$ctl" "${c[@]}" restore home latest --dry-run --delete --to "$t/out" --no-guard 2>&1)
ok test $? = 0
out=$("$ctl" "${c[@]}" restore home latest --dry-run --delete --to "$t/./src//in" 2>&1)
ok test $? = 0
ok grep -q "a guard snapshot of job home, whose source holds it" <<<"$out"
rm -rf "$t/out" "$t/src/in"
# A target in no job's source that holds another job's source: what the
# restore writes there is that job's, which no guard would hold; refused
# without --no-guard, with or without --delete.
mkdir -p "$t/out/b" && echo x > "$t/out/b/x"
{ cat "$t/main.conf"; printf '[other]\nsource = %s/out/b\nstore = %s/store2\ninterval = 1h\n' "$t" "$t"; } > "$t/two.conf"
out=$("$ctl" -c "$t/two.conf" --conf-dir "$t/conf.d" restore home latest --dry-run --to "$t/out" 2>&1)
ok test $? = 1
ok grep -q "holds the source of job other" <<<"$out"
out=$("$ctl" -c "$t/two.conf" --conf-dir "$t/conf.d" restore home latest --dry-run --to "$t/out" --no-guard 2>&1)
ok test $? = 0
rm -rf "$t/out" "$t/two.conf"
# A target named with "..": refused, not resolved one way for the checks
# and another for the restore.
out=$("$ctl" "${c[@]}" restore home latest --dry-run --to "$t/src/in/../../out" 2>&1)
ok test $? = 2
ok grep -q "names \.\." <<<"$out"
# A target on another mount below a job's source is in no job's source:
# that job's guard could not hold it (a guard never crosses a mount).
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	mkdir -p "$t/src/mnt"
	out=$(unshare -m sh -c 'mount -t tmpfs tmpfs "$1/src/mnt" && mkdir "$1/src/mnt/in" &&
		echo x > "$1/src/mnt/in/x" && shift && exec "$@"' sh "$t" \
		"$ctl" "${c[@]}" restore home latest --dry-run --delete --to "$t/src/mnt/in" 2>&1)
	ok test $? = 1
	ok grep -q "^! $t/src/mnt/in: not empty, and in no job's source" <<<"$out"
	ok bash -c '! grep -q "a guard snapshot of job home" <<<"$1"' sh "$out"
	rmdir "$t/src/mnt"
fi
# The restore target is resolved without following a symbolic link, and
# only through root's directories (checked before anything else, so the
# host, without reflinkat, can test it with --dry-run).
mkdir -p "$t/real" && ln -s real "$t/link"
sed "s|^source = .*|source = $t/link/src|" "$t/main.conf" > "$t/link.conf"
out=$("$ctl" -c "$t/link.conf" --conf-dir "$t/conf.d" restore home latest --dry-run 2>&1)
ok test $? = 1
ok grep -q "link: a symbolic link; restore never follows one" <<<"$out"
out=$("$ctl" "${c[@]}" restore home latest --dry-run --to "$t/link/x" 2>&1)
ok test $? = 1
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$t/user/src" && chown -R nobody "$t/user"
	sed "s|^source = .*|source = $t/user/src|" "$t/main.conf" > "$t/user.conf"
	out=$("$ctl" -c "$t/user.conf" --conf-dir "$t/conf.d" restore home latest --dry-run 2>&1)
	ok test $? = 1
	ok grep -q "user is owned by or writable by a user other than root" <<<"$out"
	out=$("$ctl" "${c[@]}" restore home latest --dry-run --to "$t/user/src/x" 2>&1)
	ok test $? = 1
	chown nobody "$t/store"
	out=$("$ctl" "${c[@]}" restore home latest --dry-run 2>&1)
	ok test $? = 1
	ok grep -q "store $t/store is not root's" <<<"$out"
	out=$("$ctl" "${c[@]}" list home 2>&1)
	ok test $? != 0
	chown root "$t/store"
	out=$("$ctl" "${c[@]}" restore home latest --dry-run 2>&1)
	ok test $? = 0
fi
# offsite: what it refuses before any mount or restic (the VM suite
# offsite backs up and restores): usage, no such job, a job with no
# snapshot, a bad --force-every; nothing mounted, nothing run.
"$ctl" "${c[@]}" offsite >/dev/null 2>&1
ok test $? = 2
"$ctl" "${c[@]}" offsite home extra >/dev/null 2>&1
ok test $? = 2
out=$("$ctl" "${c[@]}" offsite nope 2>&1)
ok test $? = 4
ok grep -q "no job 'nope' in the configuration" <<<"$out"
out=$("$ctl" "${c[@]}" offsite home --force-every=often 2>&1)
ok test $? = 2
ok grep -q -- "--force-every: 'often' is not a number of runs" <<<"$out"
mkdir -p "$t/empty-store" && chmod 0700 "$t/empty-store"
printf '[bare]\nsource = %s\nstore = %s\ninterval = 1h\n' "$t/src" "$t/empty-store" > "$t/conf.d/bare.conf"
out=$(PATH=/nonexistent "$ctl" "${c[@]}" offsite bare 2>&1)
ok test $? = 4
ok grep -q "bare: no snapshots" <<<"$out"
rm -f "$t/conf.d/bare.conf"
# pin, unpin, delete, purge, pause, resume, cancel: usage (2, before any
# call), and the daemon not running (3: a bus with nobody on it).
nobus=(env DBUS_SYSTEM_BUS_ADDRESS=unix:path=$t/no-bus.sock)
"$ctl" purge home "" >/dev/null 2>&1
ok test $? = 2
for v in pin unpin delete purge; do
	"$ctl" $v home >/dev/null 2>&1
	ok test $? = 2
	"${nobus[@]}" "$ctl" $v home "${y}T10:00:00Z" >/dev/null 2>&1
	ok test $? = 3
done
for v in pause resume cancel; do
	"$ctl" $v >/dev/null 2>&1
	ok test $? = 2
	"$ctl" $v home extra >/dev/null 2>&1
	ok test $? = 2
	"${nobus[@]}" "$ctl" $v home >/dev/null 2>&1
	ok test $? = 3
done
out=$("$ctl" pause home --for 1h --until '2099-01-01 00:00' 2>&1)
ok test $? = 2
out=$("$ctl" pause home --for often 2>&1)
ok test $? = 2
ok grep -q -- "pause --for: 'often' is not a time span" <<<"$out"
out=$("$ctl" pause home --until yesterday 2>&1)
ok test $? = 2
ok grep -q -- "pause --until: 'yesterday' is not a time" <<<"$out"
out=$("$ctl" pause home --until @1000 2>&1)
ok test $? = 2
ok grep -q -- "pause --until: @1000 is past" <<<"$out"
out=$("${nobus[@]}" "$ctl" pause home --until '2099-01-01 00:00' 2>&1)
ok test $? = 3
out=$("${nobus[@]}" "$ctl" pause home --until 2099-01-01T00:00:00Z 2>&1)
ok test $? = 3
# public = yes|no, nothing else: check-config says where.
echo "public = sometimes" >> "$t/main.conf"
out=$("$ctl" "${c[@]}" check-config 2>&1)
ok test $? = 1
ok grep -q "main.conf:6: public: 'sometimes' is not a boolean (yes or no)" <<<"$out"
sed -i '$d' "$t/main.conf"
echo "colour = blue" >> "$t/main.conf"
out=$("$ctl" "${c[@]}" check-config 2>&1)
ok test $? = 1
ok grep -q "main.conf:6: colour: unknown key" <<<"$out"
"$ctl" "${c[@]}" list >/dev/null 2>&1
ok test $? = 1
echo "1..$n"
[ "$failed" = 0 ]
