#!/usr/bin/env python3
"""test_postgres.py - Debian's PostgreSQL server and its pgbench client, both
traced, nobody here wrote either: a process-per-connection server that
starts as root and drops it (setpriv), forks its backends and background workers, writes and
fdatasyncs its WAL, and dups descriptor 0 a thousand times at start to
count usable descriptors. Checked, from the two sides' traces: every
process trace decodes with no loss; each pgbench connection's bytes sent
equal the bytes its backend received, and the other way (matched by the
4-tuple of the client's CONNECT and the backend's ACCEPT: the postmaster
accepts, the backend it forks writes the connection's identity again in
its own trace, tracer_fd_after_fork); the server wrote
WAL files (writes and fdatasyncs on pg_wal paths); the postmaster's dups
are DUP records and every CLOSE in its trace pairs with an OPEN or a DUP.
Postgres opens its data files relative to the data directory: every file
event names an absolute path, under the data directory for the WAL, or
what the kernel calls a descriptor made where LD_PRELOAD cannot see (the
latches' signalfd, "anon_inode:[signalfd]")."""
import glob
import json
import os
import signal
import subprocess
import time

import tracerlib as tl

bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
if not tl.check(bins, "PostgreSQL missing (tools/install-deps installs postgresql)"):
    tl.finish()
bindir = os.path.dirname(bins[-1])
for tool in ("initdb", "pgbench", "pg_isready"):
    if not tl.check(os.access(os.path.join(bindir, tool), os.X_OK), f"{bindir}/{tool} missing"):
        tl.finish()

work = tl.scratch("postgres")
os.chmod(work, 0o755)
subprocess.run(["chown", "postgres", work], check=True)
data = os.path.join(work, "data")
server_out = os.path.join(work, "server")
client_out = os.path.join(work, "client")
# setpriv execs (runuser would stay as a parent that does not pass SIGINT on)
as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
r = subprocess.run(as_postgres + [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
if not tl.check_eq(r.returncode, 0, f"initdb ({r.stdout.decode()[-300:]})"):
    tl.finish()

port = tl.free_port()
log = open(os.path.join(work, "server.log"), "wb")
server = tl.spawn(tl.record_args(server_out, as_postgres + [
    os.path.join(bindir, "postgres"), "-D", data, "-k", work, "-p", str(port),
    "-c", "listen_addresses=127.0.0.1"], component="db"),
    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
ready = False
for _ in range(300):
    if server.poll() is not None:
        break
    if subprocess.run([os.path.join(bindir, "pg_isready"), "-q", "-h", "127.0.0.1", "-p",
                       str(port)]).returncode == 0:
        ready = True
        break
    time.sleep(0.1)
if not tl.check(ready, f"postgres ready (log {work}/server.log)"):
    tl.finish()
pgbench = [os.path.join(bindir, "pgbench"), "-h", "127.0.0.1", "-p", str(port)]
r = subprocess.run(as_postgres + pgbench + ["-q", "-i", "-s", "1", "postgres"],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
if not tl.check_eq(r.returncode, 0, f"pgbench -i ({r.stdout.decode()[-300:]})"):
    tl.finish()
# a fixed number of transactions (not a duration): bounded in count and time
rc, out, err = tl.record(client_out, as_postgres + pgbench + ["-c", "2", "-j", "2", "-t", "300",
                                                              "postgres"],
                         timeout=120, component="client")
tl.check_eq(rc, 0, f"traced pgbench exit status ({err[-300:]})")
tl.check("number of transactions actually processed: 600/600" in out,
         f"pgbench did its 600 transactions: {out[-300:]}")
server.send_signal(signal.SIGINT)  # record forwards it: a fast shutdown
tl.wait_end(server, "postgres shutdown", timeout=60)
tl.check_eq(server.returncode, 0, "record's exit status (postgres shut down cleanly)")

for outdir in (server_out, client_out):
    info = json.loads(subprocess.run([tl.PREPLAY, "info", "--json", outdir], check=True,
                                     stdout=subprocess.PIPE).stdout)
    tl.check_eq(info["lost_events"], 0, f"lost events in {outdir}")
servers = tl.read_traces(server_out)
clients = tl.read_traces(client_out)
tl.check(len(servers) >= 6, f"postmaster, its workers and backends traced: {len(servers)} traces")


def conn_bytes(traces, ops):
    """(local port, remote port) of each TCP connection whose identity a CONN
    record of one of `ops` gives -> [bytes sent, bytes received] on it. A
    backend's connection is the postmaster's accepted socket, inherited:
    its identity comes with the backend's first transfer (ident)."""
    out = {}
    for t in traces.values():
        ids = {e["conn_id"]: (e["local_port"], e["remote_port"]) for e in t.of("conn")
               if e["op"] in ops and e["proto"] == 1}
        for e in t.of("net"):
            key = ids.get(e["conn_id"])
            if key and e["result"] > 0:
                out.setdefault(key, [0, 0])[0 if e["op"] == "send" else 1] += e["result"]
    return out


client_conns = {k: v for k, v in conn_bytes(clients, ("connect",)).items() if k[1] == port}
server_conns = conn_bytes(servers, ("accept",))
tl.check(len(client_conns) >= 2, f"pgbench's connections traced: {client_conns}")
for (cport, sport), (sent, received) in sorted(client_conns.items()):
    backend = server_conns.get((sport, cport))
    if not tl.check(backend is not None, f"a backend accepted pgbench's connection from {cport}"):
        continue
    tl.check_eq(backend, [received, sent],
                f"connection {cport}->{sport}: the backend's [sent, received] against pgbench's")

# its two clients' connections (300 transactions each; pgbench's first one
# only looks the tables up)
busy = [k for k, (sent, _) in client_conns.items() if sent > 10000]
tl.check_eq(len(busy), 2, f"pgbench connections with 300 transactions' bytes: {client_conns}")

file_ev = [e for t in servers.values() for e in t.of("file")]
unnamed = [e for e in file_ev if not e.get("path", "").startswith(("/", "anon_inode:", "pipe"))]
tl.check_eq(unnamed[:3], [], "server file events whose path is not absolute or a kernel name")
wal = [e for e in file_ev if e.get("path", "").startswith(os.path.realpath(data) + "/pg_wal/") and e["result"] >= 0]
wal_written = sum(e["result"] for e in wal if e["op"] in ("write", "pwrite"))
tl.check(wal_written > 100000, f"WAL bytes written: {wal_written}")
tl.check(any(e["op"] in ("fdatasync", "fsync") for e in wal), "WAL files synced")

duppers = [t for t in servers.values() if t.of("file", "dup")]
if tl.check(duppers, "a server process with DUP records (the postmaster's fd probe)"):
    pm = max(duppers, key=lambda t: len(t.of("file", "dup")))
    tl.check(len(pm.of("file", "dup")) >= 100, f"{pm.path}: DUP records")
    made = set()
    unpaired = []
    for e in pm.of("file"):
        if e["op"] in ("open", "dup") and e["result"] >= 0:
            made.add(e["result"])
        elif e["op"] == "close" and e["fd"] > 2:
            if e["fd"] not in made:
                unpaired.append(e)
            made.discard(e["fd"])
    tl.check_eq(unpaired[:3], [], f"{pm.path}: CLOSEs with no OPEN or DUP before them")
tl.finish()
