#!/usr/bin/env python3
"""wp_load.py - the WordPress accuracy app's load generator: open-loop
Poisson arrivals (fixed seed: the same schedule for the real app and for
what the replay repeats) over a request mix of posts (GET /?p=N), pages
(GET /?page_id=N), searches (GET /?s=WORD), comments (POST
/wp-comments-post.php, each with unique text) and logins (POST
/wp-login.php as `reader`). The exponential gaps between arrivals are the
users' think times seen by the server. Each request runs on its own
connection in its own thread, so a slow answer never delays a later
arrival. Writes the CSV of tests/apps/loadgen.c (compare.py reads it):
label,start_ns,response_ns,status,request_id,session,think_ns, where
response_ns counts from the scheduled arrival. Must never follow a
redirect (a comment or login answers 302: that is its success).
--warmup N sends N requests one after another first (posts, pages,
searches and logins in turn; never a comment, which would change the
database), not in the CSV: PHP compiles WordPress into opcache on the
first requests (seconds on `small`), a cold start the load is not about.
With --duration 0 only the warm-up runs.

usage: wp_load.py --host H --port P --rate R --duration S --seed N --csv OUT
                  [--mix post=40,page=20,search=20,comment=10,login=10]
                  [--posts 300] [--pages 100] [--warmup N]"""
import argparse
import http.client
import random
import sys
import threading
import time
import urllib.parse

HOST = "preplay-wordpress"
WORDS = ("cloud latency replay cache kernel socket thread queue buffer index "
         "server client packet schedule median tail budget").split()


def build_schedule(a):
    rng = random.Random(a.seed)
    mix = []
    for item in a.mix.split(","):
        name, w = item.split("=")
        mix.append((name, float(w)))
    total = sum(w for _, w in mix)
    t, out, n = 0.0, [], 0
    while True:
        t += rng.expovariate(a.rate)
        if t >= a.duration:
            return out
        x, label = rng.random() * total, mix[-1][0]
        for name, w in mix:
            if x < w:
                label = name
                break
            x -= w
        n += 1
        if label == "post":
            req = ("GET", "/?p=%d" % (1000 + rng.randrange(a.posts)), None)
        elif label == "page":
            req = ("GET", "/?page_id=%d" % (1000 + a.posts + rng.randrange(a.pages)), None)
        elif label == "search":
            req = ("GET", "/?s=" + rng.choice(WORDS), None)
        elif label == "comment":
            body = urllib.parse.urlencode({
                "comment_post_ID": 1000 + rng.randrange(a.posts),
                "author": "load%d" % rng.randrange(1000), "email": "load@example.org", "url": "",
                "comment": "comment %d of run seed %d: %s" % (n, a.seed, " ".join(rng.choice(WORDS) for _ in range(12))),
                "comment_parent": 0})
            req = ("POST", "/wp-comments-post.php", body)
        else:
            body = urllib.parse.urlencode({"log": "reader", "pwd": "reader-pass", "redirect_to": "/"})
            req = ("POST", "/wp-login.php", body)
        out.append((t, label, req))


def one(a, t0, i, item, rows):
    t, label, (method, path, body) = item
    delay = t0 + t - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    status = 0
    try:
        c = http.client.HTTPConnection(a.host, a.port, timeout=60)
        headers = {"Host": HOST, "Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        status = r.status
        c.close()
    except (OSError, http.client.HTTPException) as e:
        print(f"wp_load: {method} {path}: {e}", file=sys.stderr)
    rows[i] = (label, int(t * 1e9), int((time.monotonic() - t0 - t) * 1e9), status, i)


def warmup(a, n):
    for i in range(n):
        kind = i % 4
        if kind == 0:
            method, path, body = "GET", "/?p=%d" % (1000 + i % a.posts), None
        elif kind == 1:
            method, path, body = "GET", "/?page_id=%d" % (1000 + a.posts + i % a.pages), None
        elif kind == 2:
            method, path, body = "GET", "/?s=" + WORDS[i % len(WORDS)], None
        else:
            method, path = "POST", "/wp-login.php"
            body = urllib.parse.urlencode({"log": "reader", "pwd": "reader-pass", "redirect_to": "/"})
        try:
            c = http.client.HTTPConnection(a.host, a.port, timeout=60)
            headers = {"Host": HOST, "Connection": "close"}
            if body is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            c.request(method, path, body=body, headers=headers)
            c.getresponse().read()
            c.close()
        except (OSError, http.client.HTTPException) as e:
            print(f"wp_load: warm-up {method} {path}: {e}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--mix", default="post=40,page=20,search=20,comment=10,login=10")
    ap.add_argument("--posts", type=int, default=300)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=0)
    a = ap.parse_args()
    warmup(a, a.warmup)
    if a.duration <= 0:
        return 0
    sched = build_schedule(a)
    rows = [None] * len(sched)
    threads = []
    t0 = time.monotonic() + 0.2
    for i, item in enumerate(sched):
        delay = t0 + item[0] - time.monotonic() - 0.05
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=one, args=(a, t0, i, item, rows), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(90)
    bad = 0
    with open(a.csv, "w") as f:
        f.write("label,start_ns,response_ns,status,request_id,session,think_ns\n")
        for r in rows:
            if r is None:
                continue
            bad += not (200 <= r[3] < 400)
            f.write("%s,%d,%d,%d,%d,0,0\n" % r)
    print(f"wp_load: {len(sched)} requests in {a.duration:.0f} s ({len(sched) / a.duration:.2f}/s), "
          f"{bad} failed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
