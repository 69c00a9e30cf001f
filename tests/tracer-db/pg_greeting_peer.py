#!/usr/bin/python3
"""tests/tracer-db/pg_greeting_peer.py ANSWER - a server and a client in
one process (the client's side is what test-pg.sh records): the client
sends a PostgreSQL StartupMessage, the server answers with ANSWER's bytes,
then the client sends a Query 'SELECT 42' and the server answers it like
PostgreSQL (CommandComplete "SELECT 1", ReadyForQuery). ANSWER:
  ok      AuthenticationOk then ReadyForQuery: a PostgreSQL server
  http    an HTTP response, as a web server answers garbage
  badauth 'R' with an authentication code no server sends first (11)
  badlen  AuthenticationOk with a length that does not fit it
Only `ok` may make the query a DB event (pg_greeting.c)."""
import socket
import struct
import sys
import threading

answers = {
    "ok": b"R" + struct.pack("!ii", 8, 0) + b"Z" + struct.pack("!i", 5) + b"I",
    "http": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    "badauth": b"R" + struct.pack("!ii", 8, 11),
    "badlen": b"R" + struct.pack("!ii", 9, 0) + b"\0",
}
answer = answers[sys.argv[1]]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)


def serve():
    c, _ = srv.accept()
    c.recv(4096)
    c.sendall(answer)
    c.recv(4096)
    c.sendall(b"C" + struct.pack("!i", 13) + b"SELECT 1\0" + b"Z" + struct.pack("!i", 5) + b"I")
    c.close()


th = threading.Thread(target=serve)
th.start()
cl = socket.create_connection(srv.getsockname())
params = b"user\0preplay\0\0"
cl.sendall(struct.pack("!ii", len(params) + 8, 196608) + params)
cl.recv(4096)
q = b"SELECT 42\0"
cl.sendall(b"Q" + struct.pack("!i", len(q) + 4) + q)
cl.recv(4096)
cl.close()
th.join()
