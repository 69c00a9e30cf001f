#!/usr/bin/env bash
# test_compare_hostile.sh - `preplay compare -o` on hostile but readable
# duet and regress files (tests/compare/make_hostile.py; issue 24 item 3):
# values at 1.79e308, 0, denormals and -1e308, 200000 target windows, 5000
# labels, names of HTML/JS special characters. Each report is written (exit
# 0) within a size bound, every name is escaped, no chart coordinate is
# NAN, infinite or hundreds of digits long, the marks of 1.79e308 and 0 are
# apart, the time series draws at most 1000 marks, the duet chart at most
# 64 categories; a name past the reader's limit is one line and exit 1.
# Before: 200000 windows made a 33 MB report (a mark each), 65536 labels a
# 35 MB one (a chart category each), and 1.79e308 and 0 were one mark.
set -euo pipefail
: "${PREPLAY_BIN:?}" "${PREPLAY_SOURCE_DIR:?}"
work=$(mktemp -d /tmp/compare-hostile-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$PREPLAY_SOURCE_DIR/tests/compare/expect_error.sh"

/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/regress/make_counters.py" base.json --seed 1
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/regress/make_counters.py" base2.json --seed 2
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/regress/make_counters.py" disk.json --seed 4 \
  --shift disk_write_bytes_per_s=3
"$PREPLAY_BIN" regress base.json base2.json -- disk.json -o r.json --quiet
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/compare/make_duet.py" d.json \
  --overall 1.1:1.05:1.15 --label 'GET /'=1.2:1.1:1.3
/usr/bin/python3 "$PREPLAY_SOURCE_DIR/tests/compare/make_hostile.py" . r.json d.json

for f in r_huge r_denormal r_zero r_negative r_evil r_windows d_extreme d_evil d_many; do
  rc=0
  "$PREPLAY_BIN" compare "$f.json" -o "$f.html" >"$f.out" 2>"$f.err" || rc=$?
  [ "$rc" -eq 0 ] || fail "compare $f.json exited $rc: $(cat "$f.err")"
  [ "$(cat "$f.err")" = "compare: report written to $f.html" ] || fail "$f: stderr $(cat "$f.err")"
done
expect_error 1 "compare: r_longname.json: levels: a counter name of 513 bytes exceeds the limit 512" \
  r_longname.json -o bad.html
[ ! -e bad.html ] || fail "a report written for a refused file"

/usr/bin/python3 - <<'PY' || fail "reports"
import os, re, sys

def report(name):
    with open(name + ".html", encoding="utf-8") as f:
        return f.read()

bad = False
def check(ok, what):
    global bad
    if not ok:
        print("FAIL:", what, file=sys.stderr)
        bad = True

COORD = re.compile(r'\b(?:cx|cy|x|y|width|height)="([^"]*)"|\bd="([^"]*)"')
for name, limit in (("r_huge", 60000), ("r_denormal", 60000), ("r_zero", 60000),
                    ("r_negative", 60000), ("r_evil", 80000), ("r_windows", 400000),
                    ("d_extreme", 30000), ("d_evil", 3000000), ("d_many", 1500000)):
    h = report(name)
    check(len(h) <= limit, f"{name}: {len(h)} bytes, want <= {limit}")
    # escaped: no markup from the files' names
    check("</script><script>" not in h and "<script" not in h, f"{name}: a name is not escaped")
    check(not re.search(r"\b(nan|inf|NaN|Infinity)\b", h), f"{name}: NaN or infinity written")
    for m in COORD.finditer(h):
        for num in re.findall(r"-?[0-9][0-9.e+-]*", m.group(1) or m.group(2) or ""):
            check(abs(float(num)) < 1e5, f"{name}: a chart coordinate {num[:40]}")
            if abs(float(num)) >= 1e5:
                break
for name in ("r_evil", "d_evil"):
    check("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;&lt;&gt;" in report(name),
          f"{name}: the special characters are not shown escaped")

def marks(h):  # the regress chart's marks: (cx, cy)
    return [(float(a), float(b)) for a, b in re.findall(r'<circle cx="([-0-9.]+)" cy="([-0-9.]+)"', h)]
ys = {y for _, y in marks(report("r_huge"))}
check(len(ys) >= 2, f"r_huge: 1.79e308 and 0 drawn at one height {ys}")
w = marks(report("r_windows"))
check(0 < len(w) <= 1000, f"r_windows: {len(w)} marks, want 1..1000")
check("windows 0 to 199 (from 0 s)" in report("r_windows"), "r_windows: a mark does not name its windows")
h = report("d_many")
check("The chart shows 64 of the 5001: overall and the labels furthest from 1" in h,
      "d_many: the chart does not say it shows 64")
check(len(re.findall(r"<circle ", h)) == 64, "d_many: not 64 categories drawn")
check(h.count("<tr><td>GET /") == 5000, "d_many: the table lost labels")
# the 63 furthest from 1: every label drawn has gms 1.099 (i % 100 == 99: 50 of them) or 1.098
drawn = re.findall(r"<title>GET /(\d+) B/A", h)
check(len(drawn) == 63 and all(int(i) % 100 >= 98 for i in drawn), f"d_many: drew {drawn[:5]}...")
sys.exit(1 if bad else 0)
PY
echo "compare hostile: ok"
