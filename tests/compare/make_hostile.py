#!/usr/bin/python3
"""make_hostile.py - hostile but readable duet and regress files for
compare's report (issue 24 item 3), each within the readers' limits
(formats/DUET.md, formats/REGRESS.md), from a real regress file and a
make_duet.py file:
make_hostile.py DIR REGRESS.json DUET.json
writes into DIR: r_huge (levels and target values at 1.79e308, 0, the
smallest denormal), r_denormal, r_zero, r_negative (low -1e308, high
1e308, windows with nothing measured), r_evil (counter, paths and
instances of HTML/JS special characters, a 480-byte name), r_windows
(200000 target windows), r_longname (a 513-byte name: refused),
d_extreme (every ratio at 1e9 and 1e-9), d_evil (200 labels of 3900 bytes
of special characters, a skipped one), d_many (5000 labels)."""
import copy
import json
import sys

EVIL = '</script><script>alert(1)</script>"\'&<>\u2028`${x}'
C = "disk_write_bytes_per_s"


def save(doc, out, name):
    with open(f"{out}/{name}.json", "w", encoding="utf-8") as f:
        json.dump(doc, f)


def rename(doc, old, new):
    doc["levels"][new] = doc["levels"].pop(old)
    for fl in doc["flagged"]:
        if fl["counter"] == old:
            fl["counter"] = new
    for ru in doc["rules"]:
        for it in ru["premise"] + [ru["consequent"]]:
            if it["counter"] == old:
                it["counter"] = new


def with_values(r, levels, values):
    x = copy.deepcopy(r)
    x["levels"][C].update(levels)
    fl = next(f for f in x["flagged"] if f["counter"] == C)
    fl["target_values"] = [values[i % len(values)] for i in range(len(fl["target_values"]))]
    return x


def regress_files(r, out):
    save(with_values(r, {"low": 0, "high": 1e308, "min": 0, "median": 1e308, "max": 1.79e308},
                     [1.79e308, 0, 5e-324]), out, "r_huge")
    save(with_values(r, {"low": 0, "high": 5e-324, "min": 0, "median": 5e-324, "max": 1e-323},
                     [5e-324, 0, 1e-323]), out, "r_denormal")
    save(with_values(r, {"low": 0, "high": 0, "min": 0, "median": 0, "max": 0}, [0]), out, "r_zero")
    save(with_values(r, {"low": -1e308, "high": 1e308, "min": 0, "median": 1, "max": 1e308},
                     [1e308, None]), out, "r_negative")
    x = copy.deepcopy(r)
    rename(x, C, (EVIL * 20)[:480])
    x["target"]["path"] = x["target"]["instance"] = EVIL
    for b in x["baselines"]:
        b["path"], b["instance"] = EVIL * 3, EVIL
    save(x, out, "r_evil")
    x = copy.deepcopy(r)
    rename(x, C, "x" * 513)
    save(x, out, "r_longname")
    x = copy.deepcopy(r)
    n = 200000
    x["target"]["windows"] = n
    fl = next(f for f in x["flagged"] if f["counter"] == C)
    fl["target_values"] = [[1.79e308, 0, 5e-324, 1e5][i % 4] for i in range(n)]
    fl["severity"] = len(fl["violating_windows"]) / n
    save(x, out, "r_windows")


def duet_files(d, out):
    y = copy.deepcopy(d)
    for m in [y["overall"]] + list(y["labels"].values()):
        m.update({"gms": 1e9, "ci_low": 1e-9, "ci_high": 1e9, "ci_width": 1e9 - 1e-9,
                  "equal": True})
        m["run_gms"] = [[1e9, 1e-9][i % 2] for i in range(len(m["run_gms"]))]
        m["ratios"] = [[[1e9, 1e-9][j % 2] for j in range(len(rr))] for rr in m["ratios"]]
    save(y, out, "d_extreme")
    y = copy.deepcopy(d)
    lab = y["labels"].pop(next(iter(y["labels"])))
    for i in range(200):
        y["labels"][(EVIL * 300)[:3900] + str(i)] = lab
    y["labels_skipped"][(EVIL * 300)[:3900]] = (EVIL * 300)[:3900]
    save(y, out, "d_evil")
    y = copy.deepcopy(d)
    y["labels"] = {f"GET /{i}": copy.deepcopy(lab) for i in range(5000)}
    for i, m in enumerate(y["labels"].values()):  # a spread of ratios: the chart keeps the furthest
        g = 1 + (i % 100) / 1000
        m.update({"gms": g, "ci_low": g - 0.01, "ci_high": g + 0.01, "ci_width": 0.02,
                  "equal": g - 0.01 <= 1, "run_gms": [g] * len(m["run_gms"]),
                  "ratios": [[g] * len(rr) for rr in m["ratios"]]})
    save(y, out, "d_many")


def main():
    out = sys.argv[1]
    with open(sys.argv[2], encoding="utf-8") as f:
        regress_files(json.load(f), out)
    with open(sys.argv[3], encoding="utf-8") as f:
        duet_files(json.load(f), out)


if __name__ == "__main__":
    main()
