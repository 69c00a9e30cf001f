#!/usr/bin/env python3
"""test_agent.py - `preplay remote-agent` on its own, without ssh: its
session protocol (docs/preplay-remote-agent.md) driven over stdin/stdout as
the controller does. Checks the first line, errors for unknown commands and
a start without token, plan and peers written, dummy files created, the
replayer serving with the token (a STATS control request), the token on no
command line, restore, `died` when the replayer is killed, `stop` and end of
input both stopping the replayer and removing the directory, and a
directory outside /tmp/preplay-remote.* refused.

usage: test_agent.py PREPLAY_BIN PLAN LOG_DIR (stdlib only; every wait bounded)"""
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time

BIN, PLAN, LOGS = sys.argv[1], sys.argv[2], sys.argv[3]
TOKEN = 0x0123456789ABCDEF
MAGIC = 0x31505250
BLOCK_STATS = 0xFFFFFFFF


class Agent:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="preplay-remote.", dir="/tmp")
        env = {k: v for k, v in os.environ.items() if k != "SSH_CONNECTION"}
        self.log = open(os.path.join(LOGS, os.path.basename(self.dir) + ".log"), "w")
        self.proc = subprocess.Popen([BIN, "remote-agent", self.dir], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.buf = b""

    def send(self, data):
        self.proc.stdin.write(data if isinstance(data, bytes) else data.encode())
        self.proc.stdin.flush()

    def line(self, timeout=120):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no line from the agent in %d s (got %r)" % (timeout, self.buf)
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                assert chunk, "agent closed its stdout (got %r)" % self.buf
                self.buf += chunk
        text, self.buf = self.buf.split(b"\n", 1)
        return text.decode()

    def wait(self, timeout=20):
        return self.proc.wait(timeout=timeout)

    def replayer_pid(self):
        for _ in range(100):
            out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                 text=True).stdout.split()
            for pid in out:
                try:
                    if open("/proc/%s/comm" % pid).read().strip() == "preplay-replay":
                        return int(pid)
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("no preplay-replay child of the agent")

    def start(self, component):
        self.send("token %016x\n" % TOKEN)
        self.send("arg --cpu-ratio\narg 1\n")
        plan = open(PLAN, "rb").read()
        self.send(b"plan %d\n" % len(plan) + plan)
        self.send("start %s 127.0.0.1:0\n" % component)
        got = self.line()
        assert got.startswith("listening 127.0.0.1:"), got
        return got[len("listening "):]


def gone(path, timeout=10):
    deadline = time.monotonic() + timeout
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(path)


def stats(addr, token):
    """the reply to a STATS control request (b"" when the replayer hangs up)"""
    host, port = addr.rsplit(":", 1)
    data = b""
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack("<IIQII", MAGIC, BLOCK_STATS, token, 0, 0))
        s.settimeout(10)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if len(data) >= 4 and len(data) >= 4 + struct.unpack("<I", data[:4])[0]:
                    break
        except ConnectionResetError:
            pass
    return data


# 1. a full session ending with `stop`
a = Agent()
assert a.line() == "agent - -", "first line without SSH_CONNECTION"
a.send("bogus\n")
assert a.line() == "error unknown command 'bogus'"
a.send("start app 127.0.0.1:0\n")
assert a.line() == "error start: no token"
addr = a.start("app")
assert open(a.dir + "/plan", "rb").read() == open(PLAN, "rb").read(), "plan not copied exactly"
files = sorted(os.listdir(a.dir + "/files"))
assert files, "no dummy files created for app"
peers = "app %s\nweb 127.0.0.1:1\n" % addr
a.send("peers %d\n%s" % (len(peers), peers))
assert a.line() == "ok"
assert open(a.dir + "/peers").read() == peers
pid = a.replayer_pid()
for p in (pid, a.proc.pid):
    cmdline = open("/proc/%d/cmdline" % p, "rb").read().split(b"\0")[:-1]
    assert cmdline == [BIN.encode(), b"remote-agent", a.dir.encode()], cmdline
reply = stats(addr, TOKEN)
doc = reply[4:].decode()
assert '"labels"' in doc, doc[:200]
assert stats(addr, TOKEN ^ 1) == b"", "a wrong token got an answer"
a.send("restore\n")
got = a.line()
assert got.startswith("restored ") and float(got.split()[1]) >= 0, got
a.send("start app 127.0.0.1:0\n")
assert a.line() == "error start: already started"
a.send("stop\n")
assert a.line() == "stopped"
assert a.wait() == 0
assert gone(a.dir), "dir left after stop"
assert not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"
print("session with stop: ok (%s, %d dummy files)" % (addr, len(files)))

# 2. the replayer killed: `died`, exit 3, dir removed
a = Agent()
a.line()
a.start("web")
pid = a.replayer_pid()
os.kill(pid, 9)
assert a.line(20) == "died killed by signal 9"
assert a.wait() == 3
assert gone(a.dir), "dir left after died"
print("died: ok")

# 3. end of input (the ssh session gone): replayer stopped, dir removed
a = Agent()
a.line()
a.start("web")
pid = a.replayer_pid()
a.proc.stdin.close()
assert a.wait() == 0
assert gone(a.dir), "dir left after end of input"
try:
    os.kill(pid, 0)
    raise AssertionError("replayer survived the end of input")
except ProcessLookupError:
    pass
print("end of input: ok")

# 4. a directory outside /tmp/preplay-remote.* refused, nothing removed
keep = tempfile.mkdtemp(prefix="agent-keep-", dir="/tmp")
r = subprocess.run([BIN, "remote-agent", keep], capture_output=True, text=True, timeout=10)
assert r.returncode == 2 and os.path.isdir(keep), (r.returncode, r.stderr)
assert r.stderr.strip().startswith("remote-agent: needs the temp dir /tmp/preplay-remote.*"), r.stderr
os.rmdir(keep)
r = subprocess.run([BIN, "remote-agent", "/tmp/preplay-remote.x/../etc"], capture_output=True,
                   text=True, timeout=10)
assert r.returncode == 2, r
print("remote-agent ok")
