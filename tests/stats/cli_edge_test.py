#!/usr/bin/python3
"""Edge cases of `preplay stats` end to end: rejected records (one line each,
naming file and line, exit 1, the valid rest still used), fewer than 2
samples, zero variance, unsorted timestamps, empty intervals, short
intervals, hourly sampling, --svg, and usage errors."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PREPLAY = os.environ.get("PREPLAY_BIN", "preplay")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args):
    return subprocess.run([PREPLAY, "stats"] + args, capture_output=True, text=True)


rng = np.random.default_rng(7)
with tempfile.TemporaryDirectory() as tmp:
    def path(name, text):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    # Bad records: reported with file:line, skipped, the rest still used.
    good = rng.normal(10, 1, 400)
    lines = [f"{v!r},{i // 200}" for i, v in enumerate(good)]
    lines[5] = "nan,0"
    lines[17] = "-3,0"
    lines[300] = "12,x"
    bad = path("bad.csv", "\n".join(lines) + "\n")
    r = run(["pt4cloud", "--json", "--bootstrap", "50", bad])
    check(r.returncode == 1, f"bad records: exit {r.returncode}")
    check("bad.csv:6: value 'nan' is not finite" in r.stderr, "bad records: nan line " + r.stderr)
    check("bad.csv:18: value -3 is negative" in r.stderr, "bad records: negative line")
    check("bad.csv:301: interval 'x' is not a finite number" in r.stderr, "bad records: interval")
    out = json.loads(r.stdout)
    check(out["rejected_records"] == 3 and out["final_samples"] == 397, "bad records: kept the rest")

    # Fewer than 2 samples; zero variance.
    one = path("one.txt", "5\n")
    two = path("two.txt", "5\n6\n7\n")
    r = run(["similarity", one, two])
    check(r.returncode == 1 and "at least 2 samples" in r.stderr, "similarity of 1 sample")
    eq1 = path("eq1.txt", "4\n4\n4\n")
    eq2 = path("eq2.txt", "4\n4\n")
    r = run(["similarity", "--json", eq1, eq2])
    check(r.returncode == 0 and json.loads(r.stdout)["p"] == 1.0, "equal point masses: p = 1")
    r = run(["similarity", "--json", eq1, two])
    o = json.loads(r.stdout)
    check(r.returncode == 0 and 0 < o["p"] < 1 and "zero variance" in o["note"], "one point mass")
    flat = path("flat.csv", "".join(f"3,{i // 50}\n" for i in range(200)))
    r = run(["pt4cloud", flat])
    check(r.returncode == 1 and "zero variance" in r.stderr, "pt4cloud on equal values: " + r.stderr)

    # Empty interval (index gap) is skipped and said so.
    gap = path("gap.csv", "".join(f"{v!r},{0 if i < 300 else 2}\n"
                                  for i, v in enumerate(rng.normal(5, 1, 600))))
    r = run(["pt4cloud", "--json", "--bootstrap", "50", gap])
    check("interval 1 has no samples: skipped" in r.stderr, "empty interval message")
    check(json.loads(r.stdout)["skipped_empty_intervals"] == 1, "empty interval counted")

    # Unsorted timestamps give the same answer as sorted ones, with a note.
    t = np.arange(2000) * 60.0
    v = rng.gamma(4, 1, 2000)
    srt = path("sorted.csv", "".join(f"{a!r},{b!r}\n" for a, b in zip(v, t)))
    perm = rng.permutation(2000)
    uns = path("unsorted.csv", "".join(f"{v[i]!r},{t[i]!r}\n" for i in perm))
    a = run(["pt4cloud", "--json", "--interval", "8h", "--bootstrap", "50", srt])
    b = run(["pt4cloud", "--json", "--interval", "8h", "--bootstrap", "50", uns])
    check("not in order" in b.stderr, "unsorted timestamps note")
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    check([s["p"] for s in ja["steps"]] == [s["p"] for s in jb["steps"]], "unsorted: same steps")
    check(ja["steps"][0]["samples"] == 480, f"8h of 1/min samples: {ja['steps'][0]['samples']}")

    # Hourly sampling keeps the first half of every hour.
    r = run(["pt4cloud", "--json", "--interval", "8h", "--hourly", "0.5", "--bootstrap", "50", srt])
    check(json.loads(r.stdout)["steps"][0]["samples"] == 240, "hourly 0.5 keeps half")

    # Short intervals: an unstable start lengthens the interval.
    drift = np.concatenate([rng.normal(10, 1, 300), rng.normal(14, 1, 300),
                            rng.normal(10, 1, 20000)])
    rng.shuffle(drift[600:])
    dfile = path("drift.txt", "\n".join(repr(x) for x in drift) + "\n")
    r = run(["pt4cloud", "--json", "--short", "--per-interval", "300", "--bootstrap", "50", dfile])
    o = json.loads(r.stdout)
    actions = [s["action"] for s in o["steps"]]
    check(actions[:2] == ["continue", "lengthen"], f"short: {actions}")
    check(o["steps"][2]["length"] == 600.0, "short: doubled interval")
    check("validate" in actions and actions[-1] == "stop", f"short: validated stop {actions}")

    # --svg draws the curves.
    svg = os.path.join(tmp, "out.svg")
    r = run(["pt4cloud", "--svg", svg, "--bootstrap", "50", gap])
    body = open(svg).read() if os.path.exists(svg) else ""
    check(body.startswith("<svg") and body.count("<polyline") == 2 and "<polygon" in body, "svg")

    # Usage errors.
    check(run(["--help"]).returncode == 0, "--help")
    check(run(["pt4cloud", "--bogus", gap]).returncode == 2, "unknown option")
    r = run(["pt4cloud", dfile])
    check(r.returncode == 2 and "--per-interval" in r.stderr, "plain numbers need --per-interval")
    r = run(["pt4cloud", "--p0", "2", gap])
    check(r.returncode == 2 and "--p0" in r.stderr, "bad p0")
    r = run(["pt4cloud", os.path.join(tmp, "missing.csv")])
    check(r.returncode == 1 and "missing.csv" in r.stderr, "missing file")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("all CLI edge checks passed")
