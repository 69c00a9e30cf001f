/* replay_proto.h - the replayer wire protocol (formats/REPLAY-PROTOCOL.md):
 * the 24-byte header every request starts with (magic, block id, run token,
 * request and response byte counts), token text, addresses, and the
 * exact-length socket helpers shared by the replay server, nested calls and
 * the driver. Must never buffer or coalesce what the caller sends: one call,
 * one send(2). */
#ifndef PREPLAY_REPLAY_PROTO_H
#define PREPLAY_REPLAY_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define REPLAY_MAGIC 0x31505250u /* "PRP1" little-endian */
#define REPLAY_HEADER_SIZE 24
#define REPLAY_BLOCK_STATS 0xFFFFFFFFu /* control: reply with the stats JSON */
#define REPLAY_BLOCK_RESET 0xFFFFFFFEu /* control: zero the stats, reply 8 bytes */
#define REPLAY_MAX_MESSAGE (1u << 30)  /* request/response byte count limit */

struct replay_header {
    uint32_t block;
    uint64_t token;
    uint32_t request_bytes;  /* bytes that follow the header */
    uint32_t response_bytes; /* bytes the server sends back */
};

void replay_header_encode(const struct replay_header *h, unsigned char out[REPLAY_HEADER_SIZE]);
/* 0, or -1 when the magic is wrong (not a replay client). */
int replay_header_decode(const unsigned char in[REPLAY_HEADER_SIZE], struct replay_header *h);

/* Token as 16 hex digits. 0 on success, -1 on malformed text. */
int replay_token_parse(const char *text, uint64_t *token);
void replay_token_format(uint64_t token, char out[17]);
uint64_t replay_token_random(void);

/* "HOST:PORT" or "[V6]:PORT" into a sockaddr; -1 with a reason in err. */
int replay_addr_parse(const char *text, struct sockaddr_storage *ss, socklen_t *len, char *err,
                      size_t errlen);
void replay_addr_format(const struct sockaddr *sa, char *out, size_t outlen);
/* Listening socket bound to text (port 0 = any); -1 with err ("port in use"...). */
int replay_listen(const char *text, char *err, size_t errlen);
/* Blocking TCP connection to text; -1 with err. */
int replay_connect(const char *text, int nodelay, char *err, size_t errlen);

/* Exact-length I/O on blocking sockets: retries EINTR and short transfers.
 * replay_send_exact issues send(2) with `flags` (MSG_MORE...) until `len`
 * bytes are out; the payload is zero filler. 0 on success, -1 on error or EOF. */
int replay_send_exact(int fd, const void *buf, size_t len, int flags);
int replay_send_filler(int fd, uint64_t len, int flags);
/* `head` (a request header) then `len` filler bytes as one send: one
 * sendmsg(2) where replay_send_exact + replay_send_filler would be two
 * (the header sent with MSG_MORE rode in the same packet anyway). */
int replay_send_head_filler(int fd, const void *head, size_t hlen, uint64_t len, int flags);
int replay_recv_exact(int fd, void *buf, size_t len);
/* One sendmsg(2) of `head` (hlen > 0 bytes) and up to one filler buffer of
 * the `len` filler bytes that follow it (MSG_MORE when more than that
 * remains, else `flags`); dontwait as replay_xfer_once. Bytes sent (the
 * head's first), or -1 with errno. */
ssize_t replay_send_head_once(int fd, const void *head, size_t hlen, uint64_t len, int flags,
                              int dontwait);
/* One send(2) of filler (MSG_MORE while more than one filler buffer
 * remains, else `flags`) or one recv(2) into a sink, toward a transfer of
 * `len` (> 0) bytes; dontwait adds MSG_DONTWAIT (-1 with EAGAIN when the
 * socket is not ready: an event loop waits for it elsewhere). The bytes
 * moved, or -1 with errno (0 when the peer closed during a receive). */
ssize_t replay_xfer_once(int fd, int send_dir, uint64_t len, int flags, int dontwait);
int replay_recv_discard(int fd, uint64_t len);

/* Timers of the calling thread, and of the threads it creates until
 * replay_precise_timers_end, fire when due instead of up to the thread's
 * timer slack later (50 us by default: the kernel batches wake-ups). The
 * driver's sends and the replayer's recorded waits are timed by sleeps,
 * and that slack counted in every response time. Per thread, never the
 * process's: a recorded app or a DB server started from the same process
 * keeps its own. Returns the slack to restore (-1: none was read). */
int replay_precise_timers_begin(void);
void replay_precise_timers_end(int saved);

#endif
