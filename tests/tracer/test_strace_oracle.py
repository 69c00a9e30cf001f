#!/usr/bin/env python3
"""test_strace_oracle.py - real programs nobody here wrote, traced while
strace watches the same run: per process, the bytes each file gave to
reads and took from writes, and the bytes its sockets sent and received,
must be the same in the trace as in what strace saw the system calls
return; and every positioned read and write (pread, pwrite: sqlite3, Java,
MariaDB, PostgreSQL) must be there with its offset and size. strace is
the independent oracle: any call the library does not wrap (or wraps but
does not size) shows up as a difference.

The programs, each for what it exercises:
- lscpu, lsblk: util-linux reads /proc and /sys through fscanf,
  __getdelim (the -O2 getline) and read(), and libselinux's constructor
  reads /proc/filesystems before the library's constructor has run;
- cp: copy_file_range; sort --parallel with a small buffer: threads and
  temporary files; tar piping into gzip: fork, exec, a pipe;
- sqlite3: pread/pwrite and its journal; php, node (libuv's worker
  threads) and Java (RandomAccessFile, NIO's positional reads and
  writes and transferTo) reading and writing files;
- curl and wget against python3's http.server, all traced: sockets on
  both sides;
- servers with their clients, all traced: nginx (sendfile) and apache2
  (mpm_event) under curl; MariaDB's server (InnoDB's native AIO off, so
  its background threads pread and pwrite) under the mariadb client and
  pymysql; PostgreSQL (a process per connection, WAL written and
  fdatasync'd) under pgbench.

Left out of the comparison, with the reason:
- shared objects: the dynamic loader maps them before any library runs;
- the library's own traffic: its registration with the collector (an
  AF_UNIX sendto and the recvmsg of the reply) and its read of
  /proc/PID/cmdline for the trace header;
- what glibc reads through its internal calls, which LD_PRELOAD cannot
  see (docs/tracer.md): NSS and locale files, time zone files, sysconf's
  /sys/devices/system/cpu/online and .../possible, initgroups'
  ngroups_max and pthread_getattr_np's /proc/PID/maps;
- calls from libraries loaded with RTLD_DEEPBIND (PHP's extensions and
  what they link): php runs with -n.
"""
import collections
import glob
import os
import re
import shlex
import subprocess

import tracerlib as tl

PYTHON = "/usr/bin/python3"
GLIBC_INTERNAL = {
    "/etc/locale.alias", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/localtime",
    "/etc/host.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/gai.conf", "/etc/services",
    "/etc/protocols", "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
    "/proc/sys/kernel/ngroups_max"}
SYSCALLS = ("read,pread64,readv,preadv,preadv2,write,pwrite64,writev,pwritev,pwritev2,"
            "sendfile,copy_file_range,sendto,recvfrom,sendmsg,recvmsg,sendmmsg,recvmmsg,"
            "open,openat,creat,close")
# name(FD<what>, [NULL, | [offset], ] [FD2<what2>] ...) = N; the <what> of
# an AF_UNIX socket can hold "->", so it ends where ", " or ")" follows, or
# "(deleted)" for a file unlinked while open
STRACE_FD = r"(\d+)<(.*?)>(?:\(deleted\))?(?=[,)])"
STRACE_CALL = re.compile(rf"^(\w+)\({STRACE_FD}(?:, (?:NULL, |\[\d+\], )?(?:{STRACE_FD})?)?"
                         r".*\) +=\s+(\d+)")
# open*(...) = FD<path>; close(FD<path>) = 0
STRACE_OPEN = re.compile(r"^(?:open|openat|creat)\(.*\) += (\d+)<(.*)>$")
STRACE_CLOSE = re.compile(r"^close\((\d+)<")
# -T: the call's time in the kernel (or "<unavailable>" for one cut short)
STRACE_TOOK = re.compile(r" +<(?:(\d+\.\d+)|unavailable)>\s*$")
# pread64/pwrite64/preadv...(..., OFFSET) = N
STRACE_OFFSET = re.compile(r"^.*, (\d+)\) +=\s+\d+$")
FILE_READS = {"read", "pread", "readv", "preadv", "copy_range", "sendfile", "splice"}
FILE_WRITES = {"write", "pwrite", "writev", "pwritev"}

work = tl.scratch("strace-oracle")
os.chmod(work, 0o755)


def strace_target(what):
    """A path, "net" for a socket, or None for what is left out (netlink:
    glibc's getaddrinfo asks the kernel for the host's addresses)."""
    if what.startswith("NETLINK"):
        return None
    if what.startswith(("TCP", "UDP", "UNIX", "socket")):
        return "net"
    return re.sub(r"<char \d+:\d+>$", "", what) if what.startswith("/") else None


def strace_bytes(log_prefix, tid_pid):
    """(pid, target, "r"/"w") -> bytes, and (pid, target, "r"/"w", offset,
    bytes) -> calls of the positioned reads and writes (pread, pwrite and
    their vector forms), from strace -ff's per-thread logs (merged per
    process in time order), and (pid, target, "r"/"w") -> the calls
    themselves ("stamp tid call" lines: what a failure prints). A
    descriptor the process opened is named by the path it was opened by,
    as the trace names it: a file renamed after its open (InnoDB's
    ib_logfile101 becomes ib_logfile0, PostgreSQL's temporary stats file
    its permanent one) keeps that name; one it inherited, by strace's path
    at the call."""
    per_pid = collections.defaultdict(list)
    for log in glob.glob(log_prefix + ".*"):
        tid = int(log.rsplit(".", 1)[1])
        with open(log) as fh:
            lines = fh.readlines()
        # -T's " <seconds>" at the end, kept apart: an open takes its
        # descriptor at its return, so it is ordered by its end. The stamp
        # is the entry's: an open that entered before another thread closed
        # that number, and got it after, would otherwise name the closed
        # file's later reads by the new one (the rare Java cgroup
        # difference of 29 Nov: 80 against 100 bytes)
        took = [STRACE_TOOK.search(line) for line in lines]
        lines = [line[:t.start()] + "\n" if t else line for line, t in zip(lines, took)]
        took = [float(t.group(1)) if t and t.group(1) else 0.0 for t in took]
        # the library's registration: a sendto on an AF_UNIX socket, answered
        # by a recvmsg(MSG_CMSG_CLOEXEC) of 16 bytes on the same descriptor
        for j, line in enumerate(lines):
            m = re.match(r"[\d.]+ recvmsg\((\d+)<.*MSG_CMSG_CLOEXEC\) += 16$", line.rstrip())
            if m:
                lines[j] = ""
                for i in range(j - 1, -1, -1):
                    if re.match(rf"[\d.]+ sendto\({m.group(1)}<UNIX", lines[i]):
                        lines[i] = ""
                        break
        for line, seconds in zip(lines, took):
            stamp, _, call = line.partition(" ")
            if call.strip():
                at = float(stamp) + (seconds if STRACE_OPEN.match(call) else 0.0)
                per_pid[tid_pid.get(tid, tid)].append((at, tid, call))
    seen, positioned = collections.Counter(), collections.Counter()
    calls_of = collections.defaultdict(list)
    for pid, calls in per_pid.items():
        opened = {}  # descriptor -> the path it was opened by
        for stamp, tid, call in sorted(calls, key=lambda c: c[0]):
            m = STRACE_OPEN.match(call)
            if m:
                opened[int(m.group(1))] = m.group(2)
                continue
            m = STRACE_CLOSE.match(call)
            if m:
                opened.pop(int(m.group(1)), None)
                continue
            m = STRACE_CALL.match(call)
            if not m:
                continue
            name, fd, what, fd2, what2, n = m.groups()
            first = strace_target(opened.get(int(fd), what))
            second = what2 and strace_target(opened.get(int(fd2), what2))
            n = int(n)
            if name == "sendfile":  # out, in
                moved = ((second, "r"), (first, "w"))
            elif name == "copy_file_range":  # in, offset, out, ...
                moved = ((first, "r"), (second, "w"))
            else:
                rw = "r" if name.startswith(("read", "pread", "recv")) else "w"
                moved = ((first, rw),)
            for target, way in moved:
                seen[(pid, target, way)] += n
                calls_of[(pid, target, way)].append(f"{stamp:.6f} {tid} {call.strip()}")
            if name.startswith(("pread", "pwrite")):  # one target, its way rw
                at = STRACE_OFFSET.match(call)
                if at and n > 0:
                    positioned[(pid, first, rw, int(at.group(1)), n)] += 1
    return seen, positioned, calls_of


def trace_bytes(traces):
    """The same three as strace_bytes, from the traces (the events as
    dicts of their tid, op, fd, offset and result)."""
    got, positioned = collections.Counter(), collections.Counter()
    events_of = collections.defaultdict(list)
    for pid, t in traces.items():
        for e in t.events:
            if e.get("result", 0) <= 0:
                continue
            if e["type"] == "net" and e["op"] in ("send", "recv"):
                key = (pid, "net", "r" if e["op"] == "recv" else "w")
                got[key] += e["result"]
                events_of[key].append({k: e[k] for k in ("tid", "op", "fd", "result") if k in e})
            elif e["type"] == "file" and e["op"] in FILE_READS | FILE_WRITES:
                # /proc/self and /proc/net name the traced process's, not ours
                path = re.sub(r"^/proc/(self|net)(?=/)", lambda m: f"/proc/{pid}" +
                              ("/net" if m.group(1) == "net" else ""), e.get("path") or "")
                if path.startswith("/"):
                    key = (pid, os.path.realpath(path), "r" if e["op"] in FILE_READS else "w")
                    got[key] += e["result"]
                    events_of[key].append({k: e[k] for k in ("tid", "op", "fd", "offset", "result")
                                           if k in e})
                    if e["op"] in ("pread", "pwrite", "preadv", "pwritev"):
                        positioned[key + (e["offset"], e["result"])] += 1
    return got, positioned, events_of


def compared(key):
    """Is (pid, target, ...) one to compare (not left out, above)?"""
    pid, target = key[0], key[1]
    return target is not None and (target == "net" or (
        target.startswith("/") and ".so" not in os.path.basename(target) and
        target not in GLIBC_INTERNAL and not target.startswith("/usr/share/zoneinfo/") and
        target != f"/proc/{pid}/cmdline" and target != f"/proc/{pid}/maps"))


def run(name, argv, stdin=None, extra=()):
    out = os.path.join(work, f"trace-{name}")
    log = os.path.join(work, f"strace-{name}")
    rc, _, stderr = tl.record_under_strace(out, argv, log,
                                           ("-ff", "-yy", "-ttt", "-T", "-s", "0", "-e",
                                            f"trace={SYSCALLS}"),
                                           timeout=120, stdin=stdin, extra=extra)
    if not tl.check(rc == 0, f"{name}: exit status {rc} ({stderr.strip()[-300:]})"):
        return
    traces = tl.read_traces(out)
    tid_pid = {e["tid"]: pid for pid, t in traces.items() for e in t.events if "tid" in e}
    seen, seen_at, seen_calls = strace_bytes(log, tid_pid)
    got, got_at, got_events = trace_bytes(traces)
    keys = {k for k in set(seen) | set(got) if k[0] in traces and compared(k)}
    diff = {k: (seen.get(k, 0), got.get(k, 0)) for k in keys if seen.get(k, 0) != got.get(k, 0)}
    # the positioned calls one by one: offset and size
    at_keys = {k for k in set(seen_at) | set(got_at) if k[:3] in keys}
    tl.check_eq({k: (seen_at.get(k, 0), got_at.get(k, 0)) for k in at_keys
                 if seen_at.get(k, 0) != got_at.get(k, 0)}, {},
                f"{name}: (pid, file, r/w, offset, bytes) -> (strace, trace) positioned calls "
                "that differ")
    tl.check_eq(diff, {}, f"{name}: (pid, file, r/w) -> (strace, trace) bytes that differ")
    for k in sorted(diff, key=str)[:3]:  # both sides' calls, so a failure names its cause
        print(f"{name}: {k}: strace saw {len(seen_calls[k])} calls, the trace holds "
              f"{len(got_events[k])} events (the first 20 of each):")
        for line in seen_calls[k][:20]:
            print(f"  strace {line}")
        for e in got_events[k][:20]:
            print(f"  trace  {e}")
    tl.check(sum(got[k] for k in keys) > 0, f"{name}: no bytes compared")
    return traces


# ---- the oracle's own reading of strace --------------------------------------
# Two threads of one process: 11 closes descriptor 5 (file a) while 12's
# open, which entered before that close, returns 5 (file b) after it; 11's
# read of a, between the two, is a's. Ordered by the open's entry stamp,
# the read was b's.
race = os.path.join(work, "race")
with open(race + ".11", "w") as fh:
    fh.write("100.000000 openat(AT_FDCWD</>, \"/a\", O_RDONLY) = 5</a> <0.000010>\n"
             "100.000200 read(5</a>, \"\", 20) = 20 <0.000005>\n"
             "100.000300 close(5</a>) = 0 <0.000004>\n")
with open(race + ".12", "w") as fh:
    fh.write("100.000100 openat(AT_FDCWD</>, \"/b\", O_RDONLY) = 5</b> <0.000400>\n"
             "100.000600 read(5</b>, \"\", 30) = 30 <0.000005>\n")
race_seen = strace_bytes(race, {11: 1, 12: 1})[0]
tl.check_eq(dict(race_seen), {(1, "/a", "r"): 20, (1, "/b", "r"): 30},
            "an open that returned a descriptor closed meanwhile (pid, file, r/w) -> bytes")

# ---- inputs ----------------------------------------------------------------
src = os.path.join(work, "in")
os.mkdir(src)
for i in range(20):
    with open(os.path.join(src, f"f{i}.txt"), "w") as fh:
        fh.write("".join(f"{(j * 7919 + i) % 100003} line {j}\n" for j in range(200 * (i + 1))))
nums = os.path.join(src, "f19.txt")
with open(os.path.join(work, "db.sql"), "w") as fh:
    fh.write("create table t(a integer, b text);\n"
             "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)\n"
             "  insert into t select x, hex(randomblob(20)) from c;\n"
             "create index i on t(b);\nselect count(*), sum(a) from t;\n")
php = os.path.join(work, "files.php")
with open(php, "w") as fh:
    fh.write(f"""<?php
$d = file_get_contents('{nums}');
file_put_contents('{work}/php.out', str_repeat('y', 50000));
$f = fopen('{nums}', 'r'); $n = 0; while (($l = fgets($f)) !== false) $n++; fclose($f);
echo strlen($d), " ", $n, "\\n";
""")
node = os.path.join(work, "files.js")
with open(node, "w") as fh:
    fh.write(f"""const fs = require('fs');
const d = fs.readFileSync('{nums}');
fs.writeFileSync('{work}/node.out', 'z'.repeat(70000));
fs.readFile('{nums}', (e, b) => {{ if (e) throw e; console.log(d.length, b.length); }});
""")
java = os.path.join(work, "Files.java")
with open(java, "w") as fh:
    fh.write(f"""import java.io.*;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.*;
public class Files {{
  public static void main(String[] args) throws Exception {{
    byte[] d = java.nio.file.Files.readAllBytes(Paths.get("{nums}"));
    try (FileOutputStream o = new FileOutputStream("{work}/java1.out")) {{ o.write(d, 0, 10000); }}
    try (RandomAccessFile r = new RandomAccessFile("{nums}", "r")) {{
      r.seek(5000); r.readFully(new byte[3000]);
    }}
    try (FileChannel in = FileChannel.open(Paths.get("{nums}"));
         FileChannel out = FileChannel.open(Paths.get("{work}/java2.out"),
             StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {{
      ByteBuffer b = ByteBuffer.allocate(8192);
      in.read(b, 1000);
      b.flip();
      out.write(b, 0);
      in.transferTo(0, in.size(), out);
    }}
    try (BufferedReader br = new BufferedReader(new FileReader("{nums}"))) {{
      int n = 0;
      while (br.readLine() != null) n++;
      System.out.println(d.length + " " + n);
    }}
  }}
}}
""")
javac = subprocess.run(["javac", "-d", work, java], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
tl.check_eq(javac.returncode, 0, f"javac Files.java ({javac.stdout[-300:]})")
port = tl.free_port()
q = shlex.quote
web = (f"cd {q(src)} && {{ {PYTHON} -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 & }}; "
       f"server=$!; "
       f"for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:{port}/f0.txt && break; "
       f"sleep 0.1; done; "
       f"for i in 1 2 3; do curl -sf -o /dev/null http://127.0.0.1:{port}/f19.txt; "
       f"wget -q -O /dev/null http://127.0.0.1:{port}/f7.txt; done; kill $server; wait")

www = os.path.join(work, "www")
os.mkdir(www)
with open(os.path.join(www, "page.html"), "w") as fh:
    fh.write("<p>" + "x" * 5000 + "</p>\n")
os.chmod(www, 0o755)
os.chmod(os.path.join(www, "page.html"), 0o644)


def curl_loop(port):
    """Shell: wait for the server on port, then 10 GETs of page.html and 10
    of a missing page, with curl."""
    return (f"for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:{port}/page.html "
            f"&& break; sleep 0.1; done; for i in $(seq 10); do "
            f"curl -s -o /dev/null http://127.0.0.1:{port}/page.html; "
            f"curl -s -o /dev/null http://127.0.0.1:{port}/missing; done")


def nginx_script():
    port, d = tl.free_port(), os.path.join(work, "nginx")
    os.mkdir(d)
    conf = tl.write_nginx_conf(d, f"""    access_log {d}/access.log;
    sendfile on;
    server {{ listen 127.0.0.1:{port}; root {www}; }}""", main="worker_processes 1;")
    return (f"nginx -p {q(d)} -e {q(d)}/error.log -c {q(conf)} & server=$!; "
            f"{curl_loop(port)}; kill -TERM $server; wait")


def apache_script():
    port, d = tl.free_port(), os.path.join(work, "apache")
    os.mkdir(d)
    os.chmod(d, 0o755)
    conf = tl.write_apache_conf(d, port, www)
    return (f"/usr/sbin/apache2 -DFOREGROUND -f {q(conf)} & server=$!; "
            f"{curl_loop(port)}; kill -TERM $server; wait")


def mariadb_script():
    d = os.path.join(work, "mariadb")
    r = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={d}/data", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if not tl.check_eq(r.returncode, 0, f"mariadb-install-db ({r.stdout[-300:]})"):
        return None
    port, sock = tl.free_port(), f"{d}/mariadb.sock"
    sql = ("create database oracle; create table oracle.t(a int primary key, b text); "
           "insert into oracle.t select seq, repeat('v', seq % 200) from seq_1_to_2000; "
           "select count(*), sum(length(b)) from oracle.t; drop database oracle;")
    client = (f"import pymysql; c = pymysql.connect(host='127.0.0.1', port={port}, user='root'); "
              f"k = c.cursor(); k.execute('select sum(seq) from seq_1_to_1000'); "
              f"print(k.fetchone())")
    return (f"/usr/sbin/mariadbd --no-defaults --datadir={q(d)}/data --socket={q(sock)} "
            f"--pid-file={q(d)}/mariadbd.pid --log-error={q(d)}/mariadbd.err --user=root "
            f"--skip-name-resolve --innodb-buffer-pool-size=32M --innodb-log-file-size=16M "
            f"--skip-log-bin --innodb-use-native-aio=0 --port={port} --bind-address=127.0.0.1 "
            f"</dev/null >/dev/null 2>&1 & server=$!; "
            f"for i in $(seq 300); do mariadb-admin --no-defaults --socket={q(sock)} -uroot ping "
            f">/dev/null 2>&1 && break; sleep 0.1; done; "
            f"mariadb --no-defaults --socket={q(sock)} -uroot -e {q(sql)} >/dev/null; "
            f"{PYTHON} -c {q(client)} >/dev/null; "
            f"mariadb-admin --no-defaults --socket={q(sock)} -uroot shutdown; wait $server")


def postgres_script():
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not tl.check(bins, "PostgreSQL missing (tools/install-deps installs postgresql)"):
        return None
    bindir, d = os.path.dirname(bins[-1]), os.path.join(work, "postgres")
    os.mkdir(d)
    subprocess.run(["chown", "postgres", d], check=True)
    as_postgres = "setpriv --reuid=postgres --regid=postgres --init-groups --"
    r = subprocess.run(f"{as_postgres} {bindir}/initdb -D {q(d)}/data -A trust", shell=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if not tl.check_eq(r.returncode, 0, f"initdb ({r.stdout[-300:]})"):
        return None
    port = tl.free_port()
    bench = f"{as_postgres} {bindir}/pgbench -h 127.0.0.1 -p {port}"
    return (f"{as_postgres} {bindir}/postgres -D {q(d)}/data -k {q(d)} -p {port} "
            f"-c listen_addresses=127.0.0.1 >{q(d)}/log 2>&1 & server=$!; "
            f"for i in $(seq 300); do {bindir}/pg_isready -q -h 127.0.0.1 -p {port} && break; "
            f"sleep 0.1; done; {bench} -q -i -s 1 postgres >/dev/null 2>&1 && "
            f"{bench} -c 2 -t 50 postgres >/dev/null 2>&1; status=$?; "
            f"kill -INT $server; wait $server; exit $status")


# ---- the programs ------------------------------------------------------------
run("lscpu", ["lscpu"])
run("lsblk", ["lsblk", "-O"])
run("cp", ["cp", nums, os.path.join(work, "copy.txt")])
run("sort", ["sort", "--parallel=2", "-S", "64K", "-T", work, "-o",
             os.path.join(work, "sorted.txt")] + sorted(glob.glob(os.path.join(src, "*.txt"))))
run("tar-gzip", ["/bin/sh", "-c", f"tar cf - -C {q(src)} . | gzip -c > {q(work)}/in.tgz"])
with open(os.path.join(work, "db.sql")) as sql:
    run("sqlite3", ["sqlite3", os.path.join(work, "db.sqlite")], stdin=sql)
# -n: no php.ini, so no extension is loaded. PHP loads extensions with
# RTLD_DEEPBIND, which binds their libraries' libc calls ahead of
# LD_PRELOAD (docs/tracer.md): php8.2-gd (a WordPress dependency) pulls in
# libnuma, whose constructor reads /proc/self/status unseen. PHP's own file
# I/O, which this run compares, lives in the php binary.
run("php", ["php", "-n", php])
# node's start-up takes ~800 000 lock events (OpenSSL 3): reading them back
# here would take most of the test's time, and no lock is compared
run("node", ["node", node], extra=("--only", "file,net"))
if javac.returncode == 0:
    run("java", ["java", "-cp", work, "Files"])
for name, make in (("nginx", nginx_script), ("apache2", apache_script),
                   ("mariadbd", mariadb_script), ("postgres", postgres_script)):
    script = make()
    if script:
        run(name, ["/bin/bash", "-c", script])
traces = run("curl-wget-http.server", ["/bin/sh", "-c", web])
if traces:
    tl.check(len(traces) >= 8, f"http.server: {len(traces)} traced processes (sh, python3, "
             "3 curl, 3 wget)")
tl.finish()
