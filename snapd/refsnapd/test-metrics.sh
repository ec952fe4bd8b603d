#!/bin/bash
# The metrics writer (test-metrics), then its sample file through
# promcheck.py, promtool's rules of the exposition format; and promcheck.py
# itself refusing what promtool refuses, so that its pass means something.
set -u
bin=${1:?usage: test-metrics.sh TEST-METRICS PROMCHECK} check=${2:?}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# test-metrics's own TAP lines, renumbered after it.
"$bin" "$t/sample.prom" > "$t/tap"
rc=$?
grep -v '^1\.\.' "$t/tap"
n=$(grep -c '^\(not \)\?ok ' "$t/tap")
failed=0
[ "$rc" = 0 ] || failed=1
ok() {
	n=$((n + 1))
	if "$@" >/dev/null 2>&1; then echo "ok $n - $*"; else echo "not ok $n - $*"; failed=$((failed + 1)); fi
}
not() { ! "$@"; }
ok python3 "$check" "$t/sample.prom"
python3 "$check" "$t/sample.prom"
printf '# HELP a_total x\n# TYPE a_total counter\na_total{job="x"} 1\n' > "$t/good.prom"
ok python3 "$check" "$t/good.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="x"y"} 1\n' > "$t/quote.prom"
ok not python3 "$check" "$t/quote.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="x\\y"} 1\n' > "$t/escape.prom"
ok not python3 "$check" "$t/escape.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="x"} 1\na{job="x"} 2\n' > "$t/twice.prom"
ok not python3 "$check" "$t/twice.prom"
printf '# HELP a x\n# TYPE a counter\na{job="x"} 1\n' > "$t/counter.prom"
ok not python3 "$check" "$t/counter.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="x"} 1' > "$t/cut.prom"
ok not python3 "$check" "$t/cut.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="x"} 1\n# HELP b x\n# TYPE b gauge\nb 1\na{job="y"} 1\n' > "$t/apart.prom"
ok not python3 "$check" "$t/apart.prom"
printf '# TYPE a gauge\na 1\n' > "$t/nohelp.prom"
ok not python3 "$check" "$t/nohelp.prom"
printf '# HELP a x\n# TYPE a gauge\na{job="\xff"} 1\n' > "$t/utf8.prom"
ok not python3 "$check" "$t/utf8.prom"
echo "1..$n"
[ "$failed" = 0 ]
