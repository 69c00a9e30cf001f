#!/usr/bin/env python3
"""rm_load.py - the Redmine accuracy app's load generator (open_loop.py:
Poisson arrivals from a fixed seed, one thread and connection per request,
loadgen's CSV) over a request mix of issue lists (GET
/projects/bench/issues?page=N, 25 issues a page), issue views (GET
/issues/N), searches (GET /search?q=WORD&issues=1) as an anonymous visitor
of the public project, and issue creations (POST /issues.json through
the REST API as `reporter`, its API key in X-Redmine-API-Key; each with a
unique subject; 201 is its success).
--warmup N sends N requests one after another first (lists, views and
searches in turn; never a creation, which would change the database), not
in the CSV: Rails' first requests fill its caches and compile templates.

usage: rm_load.py --host H --port P --rate R --duration S --seed N --csv OUT
                  --api-key KEY [--mix list=30,view=40,search=20,create=10]
                  [--issues 1000] [--warmup N]"""
import json
import sys

import open_loop

HOST = "preplay-redmine"
WORDS = ("cloud latency replay cache kernel socket thread queue buffer index "
         "server client packet schedule median tail budget").split()


def main():
    ap = open_loop.parser(__doc__, "list=30,view=40,search=20,create=10")
    ap.add_argument("--issues", type=int, default=1000)
    ap.add_argument("--api-key", required=True)
    a = ap.parse_args()
    pages = max(1, a.issues // 25)
    api = {"Content-Type": "application/json", "X-Redmine-API-Key": a.api_key}

    def build(rng, label, n):
        if label == "list":
            return ("GET", "/projects/bench/issues?page=%d" % (1 + rng.randrange(pages)), None, None)
        if label == "view":
            return ("GET", "/issues/%d" % (1 + rng.randrange(a.issues)), None, None)
        if label == "search":
            return ("GET", "/search?q=%s&issues=1" % rng.choice(WORDS), None, None)
        words = " ".join(rng.choice(WORDS) for _ in range(30))
        body = json.dumps({"issue": {"project_id": "bench", "subject": "load %d of seed %d: %s" % (n, a.seed, words[:40]),
                                     "description": words}})
        return ("POST", "/issues.json", body, api)

    def warmup(i):
        kind = i % 3
        if kind == 0:
            return ("GET", "/projects/bench/issues?page=%d" % (1 + i % pages), None, None)
        if kind == 1:
            return ("GET", "/issues/%d" % (1 + i % a.issues), None, None)
        return ("GET", "/search?q=%s&issues=1" % WORDS[i % len(WORDS)], None, None)

    return open_loop.run(a, "rm_load", HOST, build, warmup)


if __name__ == "__main__":
    sys.exit(main())
