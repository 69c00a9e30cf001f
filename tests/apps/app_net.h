/* app_net.h - small socket and clock helpers shared by the sample application's
 * front end, app tier and load generator. Blocking I/O only (but for the started
 * connect of app_connect_tcp_start); these helpers never
 * print and never exit: they return -1 with errno set and let the caller say
 * what failed. */
#ifndef APP_NET_H
#define APP_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* CLOCK_MONOTONIC in nanoseconds (the clock every side log uses). */
uint64_t app_now_ns(void);

/* Writes all of buf; retries on EINTR and short writes. 0 on success, -1 on error. */
int app_write_all(int fd, const void *buf, size_t len);

/* Reads exactly len bytes. 1 when done, 0 on end of stream before the first byte,
 * -1 on error or end of stream in the middle (errno = EPIPE then). */
int app_read_full(int fd, void *buf, size_t len);

/* Listening TCP socket on host:port (port 0 picks a free one); the bound port is
 * stored in *bound_port. Returns the fd or -1. */
int app_listen_tcp(const char *host, unsigned port, unsigned *bound_port);

/* Connected TCP socket with TCP_NODELAY, or -1. */
int app_connect_tcp(const char *host, unsigned port);

/* The first TCP address host:port resolves to, into *addr (*len its
 * length). 0, or -1 with errno set. */
int app_resolve_tcp(const char *host, unsigned port, struct sockaddr_storage *addr, socklen_t *len);

/* A non-blocking TCP socket with TCP_NODELAY whose connect to addr has
 * started: the fd (*in_progress 1 while the connect is still under way:
 * writable when it ended, SO_ERROR says how), or -1 with errno set. */
int app_connect_tcp_start(const struct sockaddr *addr, socklen_t len, int *in_progress);

/* Splits "host:port" into host (copied into host_out) and port. 0 or -1. */
int app_parse_host_port(const char *text, char *host_out, size_t host_cap, unsigned *port);

/* Parses a decimal number in [min, max]; 0 or -1. */
int app_parse_uint(const char *text, unsigned long long min, unsigned long long max,
                   unsigned long long *out);

/* Writes "PORT\n" to path atomically (temp file + rename) so a script polling the
 * file never reads a half-written number. 0 or -1. */
int app_write_port_file(const char *path, unsigned port);

#endif
