/* replay_server.h - the replay server: an accept thread (replay_gate.h)
 * admits a connection once its first header carries the run's token; a
 * pool of worker threads waits together on every admitted connection (one
 * epoll set, one-shot); the worker woken for a connection with a request
 * ready checks its header (magic, run token, block id), replays the block
 * (replay_exec.h) and re-arms the connection. An event-loop component is
 * served by its loops instead (replay_loop.h), with the same checks. A request with a wrong token
 * or magic closes its connection with one log line: no stray client can
 * make the replayer burn CPU or hold a worker. */
#ifndef PREPLAY_REPLAY_SERVER_H
#define PREPLAY_REPLAY_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "replay_exec.h"
#include "replay_proto.h"

struct replay_server;

/* Starts `workers` workers on listen_fd (which the server
 * then owns); for an event-loop engine (config event_loops > 0, no
 * --no-deps) its loops, with `workers` helper threads. `log` gets one line per rejected client or
 * failed request (NULL = stderr). NULL with err on failure. */
struct replay_server *replay_server_start(struct replay_engine *e, int listen_fd, int workers,
                                          FILE *log, char *err, size_t errlen);
/* Stops the threads, closes every connection. */
void replay_server_stop(struct replay_server *s);
/* Requests served and rejected so far. */
uint64_t replay_server_served(const struct replay_server *s);
uint64_t replay_server_rejected(const struct replay_server *s);

/* Request bytes a worker or a loop reads together with the header, in the
 * same recv(2) (one request at a time per connection,
 * formats/REPLAY-PROTOCOL.md: whatever follows the header belongs to this
 * request). */
#define REPLAY_SERVER_PREREAD 16384

/* For the event loops (replay_loop.c), which read headers themselves. */
/* Checks a request header read on fd (magic, token, read-ahead within the
 * request, a block of the plan or a control block): 0 with h filled, or -1
 * after counting and logging the rejection (the caller closes fd). */
int replay_server_check(struct replay_server *s, int fd, const unsigned char *head,
                        uint64_t preread, struct replay_header *h);
/* Answers a control request (REPLAY_BLOCK_STATS/RESET) on fd, blocking:
 * 0, or -1 when the connection failed. */
int replay_server_control(struct replay_server *s, int fd, uint32_t block);
void replay_server_log(struct replay_server *s, int fd, const char *what);
void replay_server_count_served(struct replay_server *s);

#endif
