#!/usr/bin/python3
"""record_db_wire_seed.py - writes a seed for the fuzz_db_wire target
(tests/tracer/fuzz_db_wire.c) from a real MySQL-protocol conversation: it
relays one client connection to a server and writes every chunk either way
in the target's script format, after its cap byte (op 1: the client sends,
parsed before the send; op 2: the server's bytes arrive). The seeds in
tests/fuzz/corpus/fuzz_db_wire/ came from it, with test-db.sh's server and
clients (db_pipeline.py, pymysql, the Java client); gathered.bin was written
by hand: a long COM_QUERY whose header and payload come in separate sends,
and one continued past a 0xffffff-byte packet.

usage: record_db_wire_seed.py LISTEN_PORT SERVER_PORT OUT
  then point one client at 127.0.0.1:LISTEN_PORT; the seed is written when
  the client closes."""
import select
import socket
import struct
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    listen_port, server_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(1)
    client, _ = lsock.accept()
    server = socket.create_connection(("127.0.0.1", server_port))
    script = bytearray(b"\x01")  # the cap byte: 5000 (fuzz_db_wire.c)
    peers = {client: (server, 1), server: (client, 2)}
    while peers:
        ready, _, _ = select.select(list(peers), [], [], 30)
        if not ready:
            break
        for s in ready:
            data = s.recv(65535)
            other, op = peers[s]
            if not data:
                peers = {}
                break
            other.sendall(data)
            script += struct.pack("<BHB", op, len(data), 0) + data
    with open(out, "wb") as f:
        f.write(script)


if __name__ == "__main__":
    main()
