"""open_loop.py - the accuracy benchmark's open-loop load client, shared by
the real applications' load generators (wp_load.py, rm_load.py): each
names its request types and builds their requests; this module draws the
schedule, sends it and writes the CSV.

Open loop, Poisson arrivals from a fixed seed: the same schedule for the
real app and for what the replay repeats. The exponential gaps between
arrivals are the users' think times seen by the server. Each request runs
on its own connection in its own thread, so a slow answer never delays a
later arrival. The CSV is tests/apps/loadgen.c's (compare.py reads it):
label,start_ns,response_ns,status,request_id,session,think_ns, where
response_ns counts from the scheduled arrival. Must never follow a
redirect (a 302 can be a request's success) and never send a request the
application built outside the schedule's order except the warm-up, which
is not in the CSV. With --duration 0 only the warm-up runs."""
import argparse
import http.client
import random
import sys
import threading
import time


def parser(doc, default_mix):
    """The common options; the caller adds its own and parses."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--mix", default=default_mix)
    ap.add_argument("--warmup", type=int, default=0)
    return ap


def schedule(a, build):
    """[(t, label, (method, path, body, headers))]: arrivals until
    a.duration; build(rng, label, n) makes request n of type label."""
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
        out.append((t, label, build(rng, label, n)))


def send(a, host_header, req):
    """One request on its own connection: the status, or 0 on failure."""
    method, path, body, headers = req
    h = {"Host": host_header, "Connection": "close"}
    h.update(headers or {})
    c = http.client.HTTPConnection(a.host, a.port, timeout=60)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def run(a, name, host_header, build, warmup_request):
    """The warm-up (warmup_request(i) for i < a.warmup, one after another),
    then the schedule; writes a.csv. Returns the exit status."""
    for i in range(a.warmup):
        req = warmup_request(i)
        try:
            send(a, host_header, req)
        except (OSError, http.client.HTTPException) as e:
            print(f"{name}: warm-up {req[0]} {req[1]}: {e}", file=sys.stderr)
    if a.duration <= 0:
        return 0
    sched = schedule(a, build)
    rows = [None] * len(sched)
    t0 = time.monotonic() + 0.2

    def one(i, item):
        t, label, req = item
        delay = t0 + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        status = 0
        try:
            status = send(a, host_header, req)
        except (OSError, http.client.HTTPException) as e:
            print(f"{name}: {req[0]} {req[1]}: {e}", file=sys.stderr)
        rows[i] = (label, int(t * 1e9), int((time.monotonic() - t0 - t) * 1e9), status, i)

    threads = []
    for i, item in enumerate(sched):
        delay = t0 + item[0] - time.monotonic() - 0.05
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=one, args=(i, item), daemon=True)
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
    print(f"{name}: {len(sched)} requests in {a.duration:.0f} s ({len(sched) / a.duration:.2f}/s), "
          f"{bad} failed", file=sys.stderr)
    return 0
