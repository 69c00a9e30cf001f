#!/usr/bin/python3
"""test_apriori_oracle.py - regress_apriori (through regress_rules_dump)
against a brute force written here independently: every itemset of up to
max_len items with one level per counter, its support counted directly,
every single-consequent rule above the thresholds. Random tables with
correlated columns and missing values (a rule's confidence counts only
the windows where its consequent's counter is measured); the rule sets
must be equal and every support and confidence equal to 1e-9."""
import itertools
import os
import random
import subprocess
import sys

dump = os.path.join(os.environ["PREPLAY_BUILD_DIR"], "tests", "regress", "regress_rules_dump")


def brute(rows, nc, minsup, minconf, maxlen):
    n = len(rows)
    def count(items):
        return sum(all(r[c] == l for c, l in items) for r in rows)
    levels = sorted({v for r in rows for v in r if v >= 0})
    rules = {}
    for k in range(2, maxlen + 1):
        for cs in itertools.combinations(range(nc), k):
            for ls in itertools.product(levels, repeat=k):
                items = tuple(zip(cs, ls))
                both = count(items)
                if both < minsup * n - 1e-9 or both == 0:
                    continue
                for j in range(k):
                    prem = items[:j] + items[j + 1:]
                    # Apriori keeps a rule only when its premise is frequent, which a
                    # superset's support implies
                    # confidence over the windows where the consequent's counter is
                    # measured: a missing value neither keeps nor breaks the rule
                    c = items[j][0]
                    conf = both / sum(all(r[x] == l for x, l in prem) and r[c] >= 0 for r in rows)
                    if conf >= minconf:
                        rules[(prem, items[j])] = (both / n, conf)
    return rules


def main():
    rng = random.Random(int(os.environ.get("ORACLE_SEED", "7")))
    cases = total = 0
    for case in range(12):
        nw, nc = rng.randint(8, 40), rng.randint(2, 6)
        nlev = rng.randint(2, 4)
        rows = []
        for _ in range(nw):
            base = rng.randrange(nlev)
            row = [base if rng.random() < 0.7 else rng.randrange(nlev) for _ in range(nc)]
            row = [v if rng.random() > 0.05 else -1 for v in row]
            rows.append(row)
        minsup = rng.choice([0.1, 0.2, 0.3])
        minconf = rng.choice([0.5, 0.7, 0.9])
        maxlen = rng.choice([2, 3, 4])
        text = "%d %d\n" % (nw, nc) + "\n".join(" ".join(map(str, r)) for r in rows) + "\n"
        out = subprocess.run([dump, str(minsup), str(minconf), str(maxlen)], input=text,
                             capture_output=True, text=True, check=True).stdout
        got = {}
        for line in out.splitlines():
            lhs, rhs = line.split("->")
            prem = tuple(tuple(map(int, it.split("="))) for it in lhs.split())
            cons, sup, conf = rhs.split()
            got[(prem, tuple(map(int, cons.split("="))))] = (float(sup), float(conf))
        want = brute(rows, nc, minsup, minconf, maxlen)
        missing = set(want) - set(got)
        extra = set(got) - set(want)
        assert not missing and not extra, (case, sorted(missing)[:3], sorted(extra)[:3])
        for k, (s, c) in want.items():
            gs, gc = got[k]
            assert abs(gs - s) < 1e-9 and abs(gc - c) < 1e-9, (case, k, (gs, gc), (s, c))
        cases += 1
        total += len(want)
        print("case %d: %d windows, %d counters, %d levels, sup %.1f conf %.1f len %d: %d rules agree"
              % (case, nw, nc, nlev, minsup, minconf, maxlen, len(want)))
    assert total >= 100, "the random cases made only %d rules: the check would be vacuous" % total
    print("apriori oracle ok: %d cases, %d rules" % (cases, total))


if __name__ == "__main__":
    main()
