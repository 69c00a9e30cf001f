#!/usr/bin/env python3
"""free_port.py - a TCP port for a test's server, shared by the Python and
shell tests (run as a script it prints one; argument: the host, default
127.0.0.1). The port is below the kernel's ephemeral range, where outgoing
connections take their local ports: a port inside it could be taken by any
connect() between this pick and the server's bind (a CI run of the tracer
benchmark failed that way). It is checked by a bind without SO_REUSEADDR,
which fails while any socket holds the port in any state (listening,
connected, TIME_WAIT). A server should still retry its bind on failure."""
import random
import socket
import sys

LOWEST = 10000


def free_port(host="127.0.0.1"):
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    if ephemeral_low <= LOWEST + 1000:
        raise RuntimeError(f"ephemeral ports start at {ephemeral_low}: no room below them")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    span = ephemeral_low - LOWEST
    start = random.randrange(span)
    for k in range(span):
        port = LOWEST + (start + k) % span
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError(f"no free TCP port on {host} below {ephemeral_low}")


if __name__ == "__main__":
    print(free_port(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"))
