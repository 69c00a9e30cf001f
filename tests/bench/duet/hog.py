#!/usr/bin/python3
"""hog.py SECONDS [SEED] - a synthetic noisy neighbour for the duet
benchmark: for SECONDS, alternately on (0.3-2 s: two processes that each
write through a 32 MiB buffer, page after page, burning CPU and memory
bandwidth) and off (0.3-2 s: nothing), the lengths drawn at random. Prints
one line at the end with how long it was on. Never outlives SECONDS by
more than one period, and kills its children on the way out."""
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
    seconds = float(sys.argv[1])
    random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    end = time.monotonic() + seconds
    on_total = 0.0
    kids = []
    try:
        while time.monotonic() < end:
            on = random.uniform(0.3, 2.0)
            kids = []
            for _ in range(2):
                pid = os.fork()
                if pid == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
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
