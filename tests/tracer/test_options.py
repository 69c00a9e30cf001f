#!/usr/bin/env python3
"""test_options.py - `preplay record`'s selection and budget options on
coreutils' dd (a real program nobody here wrote, whose every read and
write is known from its arguments):

- --only file: dd's 2 x COUNT file events, and no CPU, lock or net event;
- --only net: a file the app writes costs no probe of its name or offset
  (strace inside the recording counts the calls);
- --path-prefix DIR: the writes to DIR/out at offsets 0, BS, 2 BS, ...
  and nothing of /dev/zero (outside the prefix); the same for a path
  relative to the working directory, made absolute; a file opened through
  a symlinked prefix keeps its records in a fork child;
- both: the trace header's record options name the option;
- --drop: with the collector stopped (SIGSTOP), dd is not held back and
  finishes; the trace's reads and writes plus its LOSS counts make up
  every call dd made, and the losses are marked buffer_full;
- --max-size: a run that compresses to several times the budget leaves a
  trace file within it, which reads cleanly, says which span it dropped
  (ring_wrap, a ring_overwrite LOSS with a count) and keeps the newest
  events (dd's last writes, its exit);
- a bad --only, --max-size, --ring-clock or --cpu-clock value: exit 2 with one line
  naming it."""
import json
import os
import signal
import subprocess
import time

import tracerlib as tl

LOSS_BUFFER_FULL, LOSS_RING_OVERWRITE = 1, 2
work = tl.scratch("options")


def dd(args):
    return ["dd", "status=none"] + args


def events_of(out):
    (t,) = tl.read_traces(out).values()
    return t


# --only file
out = os.path.join(work, "only")
target = os.path.join(work, "only.dat")
rc, _, err = tl.record(out, dd(["if=/dev/zero", f"of={target}", "bs=4096", "count=50"]),
                       extra=["--only", "file"])
tl.check_eq(rc, 0, f"--only file: exit status (stderr: {err.strip()})")
t = events_of(out)
types = {e["type"] for e in t.events}
tl.check(not types & {"cpu", "lock", "net", "conn", "db", "label"},
         f"--only file: event types {sorted(types)}")
tl.check_eq(len(t.of("file", "read", result=4096)), 50, "--only file: 4096-byte reads")
tl.check_eq(len(t.of("file", "write", result=4096)), 50, "--only file: 4096-byte writes")
tl.check_eq(t.header["record_options"], "--only file", "--only file: the header's record options")

# --only net: a file opened while the file family is off is unknown to the
# tracer at each transfer; it is classified (one fstat: is it a socket?)
# but never named, positioned or probed, which served only file records
# (nginx under --only net paid readlink + lseek + fcntl per request, +40 %
# of its CPU). strace inside the recording sees the shell's calls, the
# tracer's among them.
out = os.path.join(work, "only-net")
log = os.path.join(work, "only-net.strace")
target = os.path.join(work, "only-net.dat")
loop = f'i=0; while [ $i -lt 200 ]; do echo x >> {target}; i=$((i + 1)); done'
rc, _, err = tl.record(out, ["strace", "-f", "-qq", "-e", "trace=readlink,lseek", "-o", log,
                             "sh", "-c", loop], extra=["--only", "net"])
tl.check_eq(rc, 0, f"--only net: exit status (stderr: {err.strip()})")
tl.check_eq(os.path.getsize(target), 400, "--only net: the shell's 200 appends")
with open(log) as f:
    calls = f.read()
# one readlink of the tracer's start-up; before: 202 readlink, 201 lseek
tl.check(calls.count("readlink(") <= 5 and calls.count("lseek(") <= 5,
         f"--only net: {calls.count('readlink(')} readlink and {calls.count('lseek(')} lseek "
         "calls for 200 appends (the tracer probes a file it records nothing of)")

# --path-prefix
out = os.path.join(work, "prefix")
pdir = os.path.join(os.path.realpath(work), "kept")  # getcwd gives the real path
os.mkdir(pdir)
target = os.path.join(pdir, "out.dat")
rc, _, err = tl.record(out, dd(["if=/dev/zero", f"of={target}", "bs=512", "count=40"]),
                       extra=["--path-prefix", pdir + "/"])
tl.check_eq(rc, 0, f"--path-prefix: exit status (stderr: {err.strip()})")
t = events_of(out)
tl.check_eq(t.header["record_options"], f"--path-prefix {pdir}/",
            "--path-prefix: the header's record options")
opened = [e for e in t.of("file", "open") if e.get("path") == target]
if tl.check(len(opened) == 1, f"--path-prefix: one open of {target}"):
    writes = tl.file_events(t, opened[0]["ino"], {"write"})
    tl.check_eq([(e["offset"], e["result"]) for e in writes], [(512 * i, 512) for i in range(40)],
                "--path-prefix: writes (offset, bytes)")
zero = os.stat("/dev/zero").st_ino
tl.check_eq(len(tl.file_events(t, zero)), 0, "--path-prefix: events on /dev/zero")
tl.check_eq([e.get("path") for e in t.of("file", "open") if e.get("path") != target], [],
            "--path-prefix: other files opened in the trace")
# a path relative to the working directory (postgres opens its data files
# so) is made absolute, then held to the prefix
out = os.path.join(work, "prefix_rel")
rc, _, err = tl.record(out, dd(["if=/dev/zero", "of=./rel.dat", "bs=512", "count=3"]),
                       extra=["--path-prefix", pdir + "/"], prefix=["env", "-C", pdir])
tl.check_eq(rc, 0, f"--path-prefix, relative path: exit status (stderr: {err.strip()})")
t = events_of(out)
rel = os.path.join(pdir, "rel.dat")
tl.check_eq([e.get("path") for e in t.of("file", "open")], [rel],
            "--path-prefix, relative path: the open's path")
tl.check_eq([(e["offset"], e["result"]) for e in t.of("file", "write")],
            [(512 * i, 512) for i in range(3)], "--path-prefix, relative path: writes")
# a prefix through a symlink: the shell opens the log by the link's path
# (admitted), and a forked subshell writes to it through the inherited
# descriptor, whose name the child takes from the kernel (the real path):
# the parent's filter admitted the file, so the child's writes are kept
real = os.path.join(work, "real")
os.mkdir(real)
link = os.path.join(work, "link")
os.symlink(real, link)
out = os.path.join(work, "prefix_link")
rc, _, err = tl.record(out, ["sh", "-c", f"exec 3>>{link}/out.log; (echo hi >&3); echo there >&3"],
                       extra=["--path-prefix", link + "/"])
tl.check_eq(rc, 0, f"--path-prefix through a symlink: exit status (stderr: {err.strip()})")
log_ino = os.stat(os.path.join(real, "out.log")).st_ino
writes = [e for t in tl.read_traces(out).values() for e in tl.file_events(t, log_ino, {"write"})]
tl.check_eq(sorted(e["result"] for e in writes), [3, 6],
            "--path-prefix through a symlink: the shell's and its subshell's writes")

# --drop with the collector stopped: dd reads N 8-byte blocks from a FIFO
# (it has registered with the collector by the time it opens the FIFO, and
# the FIFO is fed only once the collector is stopped)
N = 200000
out = os.path.join(work, "drop")
fifo = os.path.join(work, "feed")
os.mkfifo(fifo)
rec = tl.spawn(tl.record_args(out, dd([f"if={fifo}", "of=/dev/null", "bs=8", f"count={N}",
                                       "iflag=fullblock"]), extra=["--drop"]),
               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
deadline = time.monotonic() + 30
while time.monotonic() < deadline and not (os.path.isdir(out) and os.listdir(out)):
    time.sleep(0.02)  # the trace file appears when dd registers...
time.sleep(0.3)  # ...just before the collector answers; then dd waits for the FIFO's writer
rec.send_signal(signal.SIGSTOP)
dd_pid = int(subprocess.run(["pgrep", "-P", str(rec.pid)], stdout=subprocess.PIPE).stdout.split()[0])
with open(fifo, "wb") as f:  # dd drains it only if its tracer does not wait for the collector
    f.write(b"x" * 8 * N)
deadline = time.monotonic() + 30
state = "?"
while time.monotonic() < deadline:
    with open(f"/proc/{dd_pid}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    if state == "Z":
        break
    time.sleep(0.05)
rec.send_signal(signal.SIGCONT)
tl.check_eq(state, "Z", "--drop: dd's state after it was fed with the collector stopped (Z: done)")
_, err = tl.wait_end(rec, "--drop: preplay record")
tl.check_eq(rec.returncode, 0, f"--drop: exit status (stderr: {err.decode().strip()[-300:]})")
t = tl.read_traces(out, skip_types=("cpu",)).get(dd_pid)
if tl.check(t is not None, f"--drop: trace of dd (pid {dd_pid})"):
    reads = len(t.of("file", "read", result=8))
    writes = len(t.of("file", "write", result=8))
    losses = t.of("loss")
    lost = sum(e["count"] for e in losses)
    print(f"--drop: {reads} reads, {writes} writes traced, {lost} lost in {len(losses)} LOSS events")
    tl.check(lost > 0 and reads + writes < 2 * N, "--drop: events were lost while stopped")
    tl.check_eq(sorted({e["reason"] for e in losses}), [LOSS_BUFFER_FULL], "--drop: loss reasons")
    # besides the 2N reads and writes dd makes a few other calls (close,
    # its exit) that may be among the lost
    tl.check(2 * N <= reads + writes + lost <= 2 * N + 20,
             f"--drop: traced {reads + writes} + lost {lost} vs dd's {2 * N} reads and writes")

# --max-size
BUDGET = 2 << 20
out = os.path.join(work, "ring")
target = os.path.join(work, "ring.dat")
COUNT = 1500000
rc, _, err = tl.record(out, dd(["if=/dev/zero", f"of={target}", "bs=1", f"count={COUNT}"]),
                       extra=["--max-size", "2M"], timeout=300)
tl.check_eq(rc, 0, f"--max-size: exit status (stderr: {err.strip()})")
(path,) = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".trace")]
size = os.path.getsize(path)
tl.check(size <= BUDGET, f"--max-size: trace file of {size} bytes within {BUDGET}")
t = tl.read_trace(path, skip_types=("cpu",))
wraps = [e for e in t.events if e["type"] == "control" and e["op"] == "ring_wrap"]
overwritten = [e for e in t.of("loss") if e["reason"] == LOSS_RING_OVERWRITE]
tl.check_eq(len(wraps), 1, "--max-size: ring_wrap markers")
if tl.check(len(overwritten) == 1, "--max-size: one ring_overwrite LOSS"):
    tl.check(overwritten[0]["count"] > 100000, f"--max-size: dropped count {overwritten[0]['count']}")
writes = t.of("file", "write", result=1)
tl.check(0 < len(writes) < COUNT, f"--max-size: {len(writes)} of {COUNT} writes kept")
if writes:
    tl.check_eq(writes[-1]["offset"], COUNT - 1, "--max-size: offset of the last write kept")
    offs = [e["offset"] for e in writes]
    tl.check_eq(offs, list(range(offs[0], COUNT)), "--max-size: the kept writes are the newest, "
                "without a gap")
tl.check(len(t.of("thread_exit")) >= 1, "--max-size: dd's exit is in the trace")
info = subprocess.run([tl.PREPLAY, "info", "--json", out], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, timeout=60)
if tl.check(info.returncode == 0, f"--max-size: preplay info: {info.stderr.decode().strip()}"):
    tl.check(json.loads(info.stdout)["lost_events"] > 100000, "--max-size: info counts the dropped")

# bad values
for opt, val in (("--only", "file,disk"), ("--max-size", "12Q"), ("--ring-clock", "hpet"),
                 ("--cpu-clock", "perf"), ("--cpu-clock", "gap:0"), ("--cpu-clock", "gap:1001"),
                 ("--cpu-clock", "gap:-5")):
    r = subprocess.run(tl.record_args(os.path.join(work, "bad"), ["true"], extra=[opt, val]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    msg = r.stderr.decode().strip()
    tl.check(r.returncode == 2 and len(msg.splitlines()) == 1 and val.split(",")[-1] in msg,
             f"{opt} {val}: exit {r.returncode}, stderr {msg!r}")
tl.finish()
