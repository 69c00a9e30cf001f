#!/usr/bin/env python3
"""check-blocks.py - compares the blocks `preplay analyze --blocks` rebuilt
with the sample app's own side logs (tests/apps/README.md): every front-end
request is exactly one scheduled block on the same thread containing the
logged interval, with the same label; every app-tier request is one block,
nested (in call order) in the block of its parent; nothing else is a block;
no block is flagged. Plan 1.1 fields: each component's serving threads are
workers 0..n-1 (one per thread), each worker's blocks have start_ns in
recorded order; the front end's TCP_NODELAY (set on every accepted
connection) is a SOCKOPT op of every front-end block, and every nested call
(over connections the front end set TCP_NODELAY on) carries
PLAN_CALL_NODELAY. Prints counts; exits 1 with the first mismatches."""
import sys


def read_side(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            tier, pid, tid, rid, parent, label, start, end, nested = line.rstrip('\n').split('\t')
            rows.append(dict(tier=tier, pid=int(pid), tid=int(tid), id=int(rid),
                             parent=int(parent), label=label, start=int(start), end=int(end),
                             nested=[] if nested == '-' else [int(x) for x in nested.split(',')]))
    return rows


def main():
    blocks_tsv, front_log, app_log = sys.argv[1:4]
    blocks, scheduled = {}, []
    with open(blocks_tsv) as f:
        for line in f:
            p = line.rstrip('\n').split('\t')
            if p[0] == 'B':
                blocks[int(p[1])] = dict(comp=p[2], pid=int(p[3]), tid=int(p[4]), start=int(p[5]),
                                         end=int(p[6]), flags=int(p[7]),
                                         callees=[] if p[8] == '-' else [int(x) for x in p[8].split(',')],
                                         label=p[9], worker=int(p[10]), start_ns=int(p[11]),
                                         sockopts=[] if p[12] == '-' else p[12].split(','),
                                         nodelay_calls=int(p[13]))
            elif p[0] == 'R':
                scheduled.append(int(p[1]))
    front, app = read_side(front_log), read_side(app_log)
    by_thread = {}
    for bid, b in blocks.items():
        by_thread.setdefault((b['pid'], b['tid']), []).append(bid)
    errors = []

    def match(row):
        hits = [bid for bid in by_thread.get((row['pid'], row['tid']), [])
                if blocks[bid]['start'] <= row['start'] and row['end'] <= blocks[bid]['end']]
        if len(hits) != 1:
            errors.append('%s request %d (%s, tid %d): %d matching blocks' %
                          (row['tier'], row['id'], row['label'], row['tid'], len(hits)))
            return None
        return hits[0]

    sched = set(scheduled)
    if len(scheduled) != len(sched):
        errors.append('a block is scheduled twice')
    block_of = {}
    for r in front:
        bid = match(r)
        block_of[r['id']] = bid
        if bid is None:
            continue
        if bid not in sched:
            errors.append('front-end request %d: block %d is not in the schedule' % (r['id'], bid))
        if blocks[bid]['label'] != r['label']:
            errors.append('front-end request %d: label %r, block says %r' %
                          (r['id'], r['label'], blocks[bid]['label']))
    for r in app:
        bid = match(r)
        block_of[r['id']] = bid
        if bid is not None and bid in sched:
            errors.append('app-tier request %d: block %d scheduled as a front-end request' % (r['id'], bid))
    for r in front:
        bid = block_of.get(r['id'])
        if bid is None:
            continue
        want = [block_of.get(n) for n in r['nested']]
        if blocks[bid]['callees'] != want:
            errors.append('front-end request %d: callees %s, side log nests %s' %
                          (r['id'], blocks[bid]['callees'], want))
    matched = set(v for v in block_of.values() if v is not None)
    extra = set(blocks) - matched
    if extra:
        errors.append('%d blocks match no side-log line (e.g. %s)' % (len(extra), sorted(extra)[:5]))
    if len(sched) != len(front):
        errors.append('%d scheduled requests, %d front-end side-log lines' % (len(sched), len(front)))
    workers = {}
    for b in blocks.values():
        workers.setdefault(b['comp'], {}).setdefault(b['worker'], set()).add((b['pid'], b['tid']))
    for comp, ws in workers.items():
        if sorted(ws) != list(range(len(ws))):
            errors.append('%s: workers %s are not dense from 0' % (comp, sorted(ws)))
        for w, threads in ws.items():
            if len(threads) != 1:
                errors.append('%s: worker %d is %d threads' % (comp, w, len(threads)))
        if len(set().union(*ws.values())) != len(ws):
            errors.append('%s: a thread has several worker numbers' % comp)
    for (pid, tid), bids in by_thread.items():
        bs = sorted(bids, key=lambda i: blocks[i]['start'])
        if [blocks[i]['start_ns'] for i in bs] != sorted(blocks[i]['start_ns'] for i in bs):
            errors.append('thread %d: start_ns not in recorded order' % tid)
        starts = [blocks[i]['start'] - blocks[i]['start_ns'] for i in bs]
        if max(starts) - min(starts) > 1000000:  # one origin (same host, same clock)
            # where it moved: a block whose start the merge clamped to an
            # earlier event's later time (the trace's times went backwards)
            moves = ['block %d at %d: %+d ns' % (bs[k], blocks[bs[k]]['start'], starts[k] - starts[k - 1])
                     for k in range(1, len(bs)) if abs(starts[k] - starts[k - 1]) > 100000]
            errors.append('thread %d: start_ns origin drifts by %d ns (%s)' %
                          (tid, max(starts) - min(starts), '; '.join(moves[:4])))
    for bid in sched:
        if '6:1=1' not in blocks[bid]['sockopts']:
            errors.append('front-end block %d: no TCP_NODELAY SOCKOPT op (%s)' % (bid, blocks[bid]['sockopts']))
    for bid, b in blocks.items():
        if b['nodelay_calls'] != len(b['callees']):
            errors.append('block %d: %d of %d calls flagged NODELAY' % (bid, b['nodelay_calls'], len(b['callees'])))
    flagged = [bid for bid, b in blocks.items() if b['flags']]
    if flagged:
        errors.append('%d blocks flagged as violations' % len(flagged))
    print('check-blocks: %d front-end requests, %d app-tier requests, %d blocks, %d scheduled, '
          '%d nested calls' % (len(front), len(app), len(blocks), len(sched),
                               sum(len(b['callees']) for b in blocks.values())))
    for e in errors[:20]:
        print('check-blocks: ' + e)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
