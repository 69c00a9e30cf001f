/* replay_server.h - the replay server: an accept thread (replay_gate.h)
 * admits a connection once its first header carries the run's token; a
 * pool of worker threads waits together on every admitted connection (one
 * epoll set, one-shot); the worker woken for a connection with a request
 * ready checks its header (magic, run token, block id), replays the block
 * (replay_exec.h) and re-arms the connection. A request with a wrong token
 * or magic closes its connection with one log line: no stray client can
 * make the replayer burn CPU or hold a worker. */
#ifndef PREPLAY_REPLAY_SERVER_H
#define PREPLAY_REPLAY_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "replay_exec.h"

struct replay_server;

/* Starts `workers` workers on listen_fd (which the server
 * then owns). `log` gets one line per rejected client or failed request
 * (NULL = stderr). NULL with err on failure. */
struct replay_server *replay_server_start(struct replay_engine *e, int listen_fd, int workers,
                                          FILE *log, char *err, size_t errlen);
/* Stops the threads, closes every connection. */
void replay_server_stop(struct replay_server *s);
/* Requests served and rejected so far. */
uint64_t replay_server_served(const struct replay_server *s);
uint64_t replay_server_rejected(const struct replay_server *s);

#endif
