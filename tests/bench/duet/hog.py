#!/usr/bin/python3
"""hog.py SECONDS [SEED] [--unpinned] - a synthetic noisy neighbour for the
duet benchmark: for SECONDS, alternately on (0.3-2 s: one process per CPU
this process may use, each pinned to its CPU, writing through a 32 MiB
buffer page after page, burning CPU and memory bandwidth) and off (0.3-2 s:
nothing), the lengths drawn at random. Pinned one per CPU, it takes from
every core alike, as a neighbour on the host takes from every vCPU of a
VM (the interference duet measurement is built for, Bulej et al. §III.A);
--unpinned leaves the placement to the scheduler, so at any moment it may
load one core more than the other. Prints one line at the end with how
long it was on. Never outlives SECONDS by more than one period, and kills
its children on the way out."""
import os
import random
import signal
import sys
import time


def burn():
    buf = bytearray(32 << 20)
    page = b"x" * 4096
    while True:
        for off in range(0, len(buf), 4096):
            buf[off:off + 4096] = page


def main():
    args = [a for a in sys.argv[1:] if a != "--unpinned"]
    pinned = "--unpinned" not in sys.argv
    seconds = float(args[0])
    random.seed(int(args[1]) if len(args) > 1 else 1)
    cpus = sorted(os.sched_getaffinity(0))
    end = time.monotonic() + seconds
    on_total = 0.0
    kids = []
    try:
        while time.monotonic() < end:
            on = random.uniform(0.3, 2.0)
            kids = []
            for cpu in cpus:
                pid = os.fork()
                if pid == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    if pinned:
                        os.sched_setaffinity(0, {cpu})
                    burn()
                kids.append(pid)
            time.sleep(on)
            on_total += on
            for pid in kids:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            kids = []
            time.sleep(random.uniform(0.3, 2.0))
    finally:
        for pid in kids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    print(f"hog: on {on_total:.0f} s of {seconds:.0f} s")


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
main()
