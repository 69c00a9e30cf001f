#!/usr/bin/env python3
"""test_record_outdir.py - `preplay record` with an output directory the
traces cannot go to (issue 24, item 3; docs/preplay-record.md): a read-only
mount, an immutable directory (chattr +i), -o naming a regular file, and a
directory every user may write to without the sticky bit. Each must give
one error line naming the directory, exit 1, and never start the app (it
would run untraced); a sticky world-writable directory (/tmp's kind) works,
and the size record then says it wrote is the directory's, counter windows
included.
Runs as root (mount, chattr)."""
import atexit
import os
import re
import subprocess
import tempfile

import tracerlib as tl

work = tl.scratch("record-outdir")
marker = os.path.join(work, "ran")


def refused(outdir, why, want):
    if os.path.exists(marker):
        os.unlink(marker)
    rc, _, err = tl.record(outdir, ["sh", "-c", f"echo ran > {marker}"], quiet=False)
    lines = err.strip().splitlines()
    tl.check_eq(rc, 1, f"{why}: exit status (stderr: {err.strip()!r})")
    tl.check(len(lines) == 1 and outdir in lines[0] and want in lines[0],
             f"{why}: one error line naming {outdir} and '{want}': {err!r}")
    tl.check("events from" not in err, f"{why}: no recording summary: {err!r}")
    tl.check(not os.path.exists(marker), f"{why}: the app was not started (untraced)")


# a read-only mount (tmpfs -o ro on a fresh directory, unmounted at exit)
ro = tempfile.mkdtemp(prefix="preplay-ro-")
if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro]).returncode == 0:
    atexit.register(lambda: (subprocess.run(["umount", ro]), os.rmdir(ro)))
    refused(ro, "read-only mount", "Read-only file system")
else:
    os.rmdir(ro)
    tl.fail("cannot mount a read-only tmpfs (this test runs as root)")

# an immutable directory
imm = os.path.join(work, "immutable")
os.mkdir(imm)
if subprocess.run(["chattr", "+i", imm]).returncode == 0:
    atexit.register(lambda: subprocess.run(["chattr", "-i", imm]))
    refused(imm, "chattr +i directory", "not writable")
else:
    tl.fail("chattr +i failed on the scratch directory's filesystem")

# -o naming a regular file
plain = os.path.join(work, "plain-file")
with open(plain, "w") as f:
    f.write("keep me\n")
refused(plain, "-o naming a regular file", "not a directory")
with open(plain) as f:
    tl.check_eq(f.read(), "keep me\n", "the regular file -o named: unchanged")

# world-writable without the sticky bit: anyone could swap a trace for a link
open_dir = os.path.join(work, "world")
os.mkdir(open_dir)
os.chmod(open_dir, 0o777)
refused(open_dir, "world-writable directory without sticky bit", "sticky")

# with the sticky bit it is /tmp's kind: the traces go there
sticky = os.path.join(work, "sticky")
os.mkdir(sticky)
os.chmod(sticky, 0o1777)
rc, _, err = tl.record(sticky, ["sh", "-c", f"echo ran > {marker}; sleep 1"], quiet=False,
                       extra=["--window", "0.1s"])
tl.check_eq(rc, 0, f"sticky world-writable directory: exit status ({err.strip()!r})")
tl.check(any(n.endswith(".trace") for n in os.listdir(sticky)), "sticky directory: traces written")
# the size record says it wrote is what the directory holds, counter windows included
said = re.search(r"processes in \S+ \(([0-9.]+) (B|KB|MB)\)", err)
if tl.check(said is not None, f"record's last line names the size: {err!r}"):
    said_bytes = float(said.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6}[said.group(2)]
    disk = sum(os.path.getsize(os.path.join(sticky, n)) for n in os.listdir(sticky))
    tl.check(any(n.endswith(".counters") for n in os.listdir(sticky)), "counter windows written")
    tl.check(abs(said_bytes - disk) <= 0.02 * disk + 50,
             f"record said {said.group(1)} {said.group(2)}, the directory holds {disk} bytes")
tl.finish()
