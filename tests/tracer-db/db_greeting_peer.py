#!/usr/bin/python3
"""db_greeting_peer.py - a raw TCP server and its client, recorded together by
test-db-greeting.sh to show which first bytes make a DB connection. The
server accepts one connection, sends its first bytes (MODE), reads one
packet, and answers it with a MySQL OK packet; the client (this script,
traced) connects, reads the first bytes, sends a COM_QUERY packet
("SELECT 1") and reads the answer. On a connection the tracer takes for a
DB connection, that exchange is a QUERY event; on any other, it is bytes.

usage: db_greeting_peer.py MODE    MODE: good (a real MariaDB-like
  HandshakeV10: the positive control), filler (the same with a nonzero
  filler byte), proto9 (protocol version 9), noversion (version not
  starting with a digit), http (an HTTP response), split (the good
  greeting in 1-byte sends)"""
import socket
import struct
import sys
import threading
import time


def greeting(proto=10, version=b"10.11.6-MariaDB-log", filler=0):
    body = bytes([proto]) + version + b"\0" + struct.pack("<I", 7) + b"abcdefgh" + bytes([filler])
    body += struct.pack("<H", 0xF7FE) + bytes([45]) + struct.pack("<H", 2)
    body += struct.pack("<H", 0x81BF) + bytes([21]) + bytes(6) + struct.pack("<I", 0x1D)
    body += b"ijklmnopqrst\0" + b"mysql_native_password\0"
    return struct.pack("<I", len(body))[:3] + b"\0" + body


FIRST = {
    "good": greeting(),
    "split": greeting(),
    "filler": greeting(filler=1),
    "proto9": greeting(proto=9),
    "noversion": greeting(version=b"MariaDB"),
    "http": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
}
OK = b"\x07\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00"


def serve(listener, mode):
    conn, _ = listener.accept()
    first = FIRST[mode]
    if mode == "split":
        for i in range(len(first)):
            conn.sendall(first[i:i + 1])
            time.sleep(0.002)
    else:
        conn.sendall(first)
    hdr = conn.recv(4, socket.MSG_WAITALL)
    conn.recv(int.from_bytes(hdr[:3], "little"), socket.MSG_WAITALL)
    conn.sendall(OK)
    conn.close()


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in FIRST:
        sys.exit(__doc__)
    mode = sys.argv[1]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    server = threading.Thread(target=serve, args=(listener, mode))
    server.start()
    c = socket.create_connection(listener.getsockname())
    want = len(FIRST[mode])
    got = b""
    while len(got) < want:  # the split greeting comes in pieces: read what is there
        got += c.recv(want - len(got))
    query = b"\x03SELECT 1"
    c.sendall(struct.pack("<I", len(query))[:3] + b"\0" + query)
    c.recv(len(OK), socket.MSG_WAITALL)
    c.close()
    server.join()


if __name__ == "__main__":
    main()
