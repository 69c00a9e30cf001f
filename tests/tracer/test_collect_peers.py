#!/usr/bin/env python3
"""test_collect_peers.py - who may register with a collector (issue 24,
item 6; docs/preplay-record.md, "Who may connect"). A hand-made client
speaks the registration protocol (tracer/shm_layout.h) to `preplay
collect`'s abstract socket:
  - as root, claiming another process's pid: accepted, but its trace is
    named by the pid the kernel gives (SO_PEERCRED), never the claimed one;
  - as nobody (uid 65534): refused (EPERM, no region), nothing written, and
    the collector says so when it ends;
  - as nobody with `--allow-uid nobody`: accepted.
And `preplay record` accepts its own command after it becomes nobody
(setpriv): a process of the recorded tree whatever its user."""
import array
import os
import signal
import socket
import struct
import subprocess
import time

import tracerlib as tl

MAGIC = 0x72656731  # TRACER_REGISTER_MAGIC
NOBODY = 65534
EPERM = 1
work = tl.scratch("collect-peers")
os.chmod(work, 0o755)


def start_collector(name, out, extra=()):
    col = tl.spawn([tl.PREPLAY, "collect", "--no-cpu-scores", "-o", out, "--name", name] +
                   list(extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and col.poll() is None:
        with open("/proc/net/unix") as f:
            if any(line.rstrip().endswith(f"@preplay-{name}") for line in f):
                return col
        time.sleep(0.05)
    tl.fail(f"preplay collect --name {name} does not listen")
    tl.finish()


held = []  # the parent's ends of earlier clients' go pipes


def register(name, claimed_pid, exe, uid=None):
    """Registers as exe claiming claimed_pid, in a child (as uid when given)
    that reports (status, number of fds received, its real pid) on a pipe
    and then stays alive until told to go (its trace stays open)."""
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in [r, go_w] + held:  # an earlier client ends when told, not at our exit
                os.close(fd)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(b"\0preplay-" + name.encode())
            req = struct.pack("<7I64s", MAGIC, claimed_pid, os.getppid(), claimed_pid, 0,
                              len(exe), 0, b"") + exe
            s.send(req)
            fds = array.array("i")
            msg, anc, _, _ = s.recvmsg(16, socket.CMSG_SPACE(2 * fds.itemsize))
            for level, type_, data in anc:
                if level == socket.SOL_SOCKET and type_ == socket.SCM_RIGHTS:
                    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
            status = struct.unpack("<IiII", msg)[1] if len(msg) == 16 else -999
            os.write(w, struct.pack("<iiI", status, len(fds), os.getpid()))
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(w)
    os.close(go_r)
    held.append(go_w)
    data = os.read(r, 12)
    os.close(r)
    if len(data) != 12:
        tl.fail(f"the registering client (uid {uid}) said nothing")
        return None, 0, pid, go_w, pid
    status, nfds, real = struct.unpack("<iiI", data)
    return status, nfds, real, go_w, pid


def release(go_w, pid):
    held.remove(go_w)
    os.close(go_w)
    os.waitpid(pid, 0)


# 1. root, lying about its pid; 2. nobody, refused
name = f"test-peers-{os.getpid()}"
out = os.path.join(work, "t1")
col = start_collector(name, out)
victim_pid = os.getpid()  # a live process whose pid the liar claims
st, nfds, real, go, child = register(name, victim_pid, b"liar")
tl.check_eq((st, nfds >= 1), (0, True), "root client claiming another pid: accepted with a region")
st2, nfds2, _, go2, child2 = register(name, 4242, b"nobodyclient", uid=NOBODY)
tl.check_eq((st2, nfds2), (EPERM, 0), "client of uid 65534: refused (EPERM), no region")
time.sleep(0.3)
release(go, child)
release(go2, child2)
time.sleep(0.3)
col.send_signal(signal.SIGINT)
err = tl.wait_end(col, "preplay collect after SIGINT")[1].decode()
tl.check_eq(col.returncode, 0, f"collect's exit status (stderr: {err.strip()})")
names = sorted(n for n in os.listdir(out) if n.endswith(".trace"))  # not machine-*.counters
tl.check_eq(names, [f"liar-{real}.trace"], "trace files: the liar's, by its real pid only")
if names == [f"liar-{real}.trace"]:
    t = tl.read_trace(os.path.join(out, names[0]))
    tl.check_eq(t.pid, real, "the header's pid: the kernel's, not the claim")
tl.check(f"1 registration(s) refused" in err and f"uid {NOBODY}" in err,
         f"collect says one registration of uid {NOBODY} was refused: {err!r}")

# 3. nobody, allowed by --allow-uid
name3 = name + "-allow"
out3 = os.path.join(work, "t3")
col = start_collector(name3, out3, ["--allow-uid", "nobody"])
st, nfds, real, go, child = register(name3, 4242, b"allowed", uid=NOBODY)
tl.check_eq((st, nfds >= 1), (0, True), "uid 65534 with --allow-uid nobody: accepted")
time.sleep(0.3)
release(go, child)
time.sleep(0.3)
col.send_signal(signal.SIGINT)
err = tl.wait_end(col, "preplay collect --allow-uid after SIGINT")[1].decode()
tl.check_eq(sorted(n for n in os.listdir(out3) if n.endswith(".trace")), [f"allowed-{real}.trace"],
            "--allow-uid: the trace")
tl.check("refused" not in err, f"--allow-uid: nothing refused: {err!r}")

# 4. record: its command, become nobody, is still traced
out4 = os.path.join(work, "t4")
rc, _, err = tl.record(out4, ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                              "/bin/true"], quiet=False)
tl.check_eq(rc, 0, f"record -- setpriv nobody true: exit status ({err.strip()})")
tl.check("refused" not in err, f"record refuses nothing of its own tree: {err!r}")
traces = list(tl.read_traces(out4).values())
tl.check(len(traces) == 1 and any(e["arg0"] == -1 for e in traces[0].of("control", "exec")),
         f"record traced true run as nobody (its image after exec registered): "
         f"{[(t.path, t.of('control', 'exec')) for t in traces]}")
tl.finish()
