/* replay_loop.h - an event-loop component's replay (plan 1.2; nginx, node,
 * haproxy, Redis): each recorded loop is ONE thread serving many
 * connections, as the recorded server's loop was, so the machine's
 * scheduler sees one busy thread where the recording had one. Ops of the
 * requests it serves run on it (CPU, files, locks, socket options, the
 * request's bytes, nested calls' sends and receives, waited for in its
 * epoll set); ops it cannot wait for there (external calls, DB ops not
 * recorded as blocking) run on helper threads while the loop serves other
 * connections. Must never block the loop on a client:
 * connections are read and written with MSG_DONTWAIT and waited on in the
 * loop's epoll set, each wait bounded by the engine's I/O timeout. */
#ifndef PREPLAY_REPLAY_LOOP_H
#define PREPLAY_REPLAY_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "replay_exec.h"
#include "replay_server.h"

struct replay_loops;

/* Starts `nloops` loop threads and `helpers` helper threads for engine e;
 * each loop also waits on stop_fd (never read: written once, it stops
 * them). Header checks, control requests and logs go through s. NULL with
 * err on failure. */
struct replay_loops *replay_loops_start(struct replay_server *s, struct replay_engine *e,
                                        uint32_t nloops, int helpers, int stop_fd, char *err,
                                        size_t errlen);
/* Takes an admitted connection (closes it when it cannot): loops take
 * connections in turn. Called from the gate's thread. */
void replay_loops_admit(struct replay_loops *l, int fd);
/* After stop_fd was written: every loop closes its connections once the
 * ops its helpers run are back (their sockets have timeouts), then the
 * threads end. NULL is a no-op. */
void replay_loops_stop(struct replay_loops *l);

#endif
