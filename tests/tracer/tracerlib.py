"""tracerlib.py - shared helpers of the tracer's script tests: a scratch
directory and process registry cleaned up however the test ends, running a
command under `preplay record` with a time limit, reading every trace of a
recording through trace_to_jsonl, and collecting failed checks so a test
reports all of them at once. Never asserts on its own: tests decide what a
trace must contain."""
import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PREPLAY = os.environ.get("PREPLAY_BIN")
BUILD = os.environ.get("PREPLAY_BUILD_DIR")
if not PREPLAY or not BUILD:
    sys.exit("tracerlib: PREPLAY_BIN and PREPLAY_BUILD_DIR must be set (run through ctest)")
HELPERS = os.path.join(BUILD, "tests", "tracer")
JSONL = os.path.join(HELPERS, "trace_to_jsonl")

_procs = []
_dirs = []
_failures = []


def _cleanup():
    for p in _procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                p.kill()
                p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, lambda s, f: sys.exit(128 + s))


def helper(name):
    """Path of one of our test programs built next to this test."""
    path = os.path.join(HELPERS, name)
    if not os.access(path, os.X_OK):
        sys.exit(f"tracerlib: test program {path} is missing (build the tests)")
    return path


def scratch(tag):
    d = tempfile.mkdtemp(prefix=f"preplay-{tag}-")
    _dirs.append(d)
    return d


def spawn(args, **kw):
    """Starts a process in its own process group; killed at exit if alive."""
    kw.setdefault("start_new_session", True)
    p = subprocess.Popen(args, **kw)
    _procs.append(p)
    return p


def record_args(outdir, cmd, component=None, extra=(), quiet=True):
    # --no-cpu-scores: the CPU benchmark kernels `record` runs before the app
    # (~1.5 s, ~7 s under ASan) are not what these tests check; recording
    # with scores is tested by tests/replayer/test_calibrate_cli.sh
    a = [PREPLAY, "record"] + (["-q"] if quiet else []) + ["--no-cpu-scores", "-o", outdir]
    if component:
        a += ["-c", component]
    return a + list(extra) + ["--"] + list(cmd)


def record(outdir, cmd, timeout=60, component=None, extra=(), stdin=None, env=None, prefix=(),
           quiet=True):
    """Runs cmd under `preplay record` (itself under prefix, e.g. a setpriv
    command line; with -q unless quiet is False); returns (exit status,
    stdout, stderr)."""
    p = spawn(list(prefix) + record_args(outdir, cmd, component, extra, quiet),
              stdin=stdin or subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=10)
        fail(f"record of {cmd} did not end within {timeout}s; stderr: {err.decode()[-500:]}")
        finish()
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def wait_end(proc, what, timeout=60):
    """proc.communicate() for a process of ours; when it does not end within
    timeout, fails the test saying so and ends it."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{what} did not end within {timeout} s")
        finish()


class Trace:
    def __init__(self, path, header, events):
        self.path = path
        self.header = header
        self.events = events
        self.pid = header["pid"]
        self.ppid = header["ppid"]

    def of(self, type_, op=None, **match):
        out = []
        for e in self.events:
            if e["type"] != type_ or (op is not None and e.get("op") != op):
                continue
            if all(e.get(k) == v for k, v in match.items()):
                out.append(e)
        return out


def read_trace(path, skip_types=()):
    """One trace through trace_to_jsonl. skip_types: event types a test never
    looks at, left unparsed (trace_to_jsonl writes "type" first on every
    line); parsing is most of a test's time on a trace of ~1M events."""
    r = subprocess.run([JSONL, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        fail(f"{path}: reader error: {r.stderr.decode().strip()}")
    skip = tuple('{"type":"%s"' % t for t in skip_types)
    lines = [json.loads(l) for l in r.stdout.decode().splitlines() if not (skip and l.startswith(skip))]
    if not lines or lines[0]["type"] != "header":
        fail(f"{path}: no header")
        finish()
    return Trace(path, lines[0], lines[1:])


def read_traces(outdir, skip_types=()):
    """Every trace of a recording, by pid (skip_types as in read_trace)."""
    traces = {}
    for name in sorted(os.listdir(outdir)):
        if name.endswith(".trace"):
            t = read_trace(os.path.join(outdir, name), skip_types)
            traces[t.pid] = t
    return traces


def file_events(trace, ino, ops=None):
    return [e for e in trace.events if e["type"] == "file" and e.get("ino") == ino and
            (ops is None or e["op"] in ops)]


def not_following_on(events, start):
    """(offset, bytes) of the transfers in events that do not start where
    the one before ended (the first: at start); [] for a contiguous run."""
    bad, at = [], start
    for e in events:
        if e["offset"] != at:
            bad.append((e["offset"], e["result"]))
        at = e["offset"] + e["result"]
    return bad


def record_under_strace(outdir, cmd, log, strace_opts, timeout=60, stdin=None, extra=()):
    """record() of cmd with `preplay record` itself under strace (options
    strace_opts, which must follow forks: -f or -ff; output to log), so
    strace sees the traced processes' system calls. --seccomp-bpf stops
    only the calls strace was asked for: without it every system call of
    every process stops, the collector's among them, and a program that
    fills its ring (node's start-up takes ~800 000 lock events) waited on
    the collector for a minute. LeakSanitizer checks for leaks by stopping
    the process with ptrace, which strace already does: it is off for
    these runs (the ASan build's preplay would abort at exit)."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if o)
    return record(outdir, cmd, timeout=timeout, stdin=stdin, env=env, extra=extra,
                  prefix=["strace", "--seccomp-bpf", "-qq", "-o", log] + list(strace_opts))


def write_nginx_conf(d, http, main=""):
    """Writes d/nginx.conf for a test's nginx: in the foreground, with all
    it writes (pid, error log, temporary files) under d; `main` goes before
    the events block (worker_processes, master_process, user), `http`
    inside http {}. Returns its path."""
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
{main}
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{http}
}}
""")
    return conf


def write_apache_conf(d, port, root, mpm="event", modules=(), extra=""):
    """Writes d/httpd.conf for a test's Debian apache2 (run it with
    -DFOREGROUND -f): listening on 127.0.0.1:port, serving root, one child
    of 4 threads of the given MPM running as www-data, all it writes under
    d; `modules` are more module names (ssl...), `extra` more directives.
    Returns its path."""
    lib = "/usr/lib/apache2/modules"
    conf = os.path.join(d, "httpd.conf")
    with open(conf, "w") as f:
        f.write(f"""ServerRoot {d}
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile {d}/apache.pid
ErrorLog {d}/error.log
LogLevel warn
Mutex file:{d} default
LoadModule mpm_{mpm}_module {lib}/mod_mpm_{mpm}.so
LoadModule authz_core_module {lib}/mod_authz_core.so
""" + "".join(f"LoadModule {m}_module {lib}/mod_{m}.so\n" for m in modules) + f"""User www-data
Group www-data
StartServers 1
ServerLimit 1
ThreadsPerChild 4
ThreadLimit 4
MaxRequestWorkers 4
DocumentRoot {root}
<Directory {root}>
    Require all granted
</Directory>
{extra}
""")
    return conf


def fail(msg):
    _failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def check_eq(got, want, what):
    return check(got == want, f"{what}: got {got!r}, want {want!r}")


def finish():
    if _failures:
        print(f"{len(_failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("ok")
    sys.exit(0)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from free_port import free_port  # noqa: E402,F401  (tests/common/free_port.py)


probe_ports = []  # client ports of wait_port's probe connections (no bytes sent)


def wait_port(port, timeout=20, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=1)
            probe_ports.append(c.getsockname()[1])
            c.close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def http_get(sock, path, state):
    """One GET on a raw socket; counts every byte sent and received."""
    req = f"GET /{path}?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sock.sendall(req)
    state["sent"] += len(req)
    buf = state["pending"]
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("server closed the connection")
        state["received"] += len(chunk)
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
              if l.lower().startswith(b"content-length:")][0]
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("server closed the connection mid-body")
        state["received"] += len(chunk)
        rest += chunk
    state["pending"] = rest[length:]
    return rest[:length]
