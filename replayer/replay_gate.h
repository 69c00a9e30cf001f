/* replay_gate.h - the replay server's front door: one thread accepts
 * connections and holds each until its first request header has arrived
 * whole with the run's token (formats/REPLAY-PROTOCOL.md), and only then
 * hands it to the workers. A client without the token never occupies a
 * worker, never holds a descriptor longer than the header deadline, and
 * never makes the replayer spin (descriptor exhaustion pauses accepting).
 * Must never read a byte of the request: the header is peeked, the worker
 * reads it. */
#ifndef PREPLAY_REPLAY_GATE_H
#define PREPLAY_REPLAY_GATE_H

#include <stdint.h>
#include <stdio.h>
#include <pthread.h>

#define REPLAY_GATE_HEADER_MS 2000 /* a new connection's whole first header within this */
#define REPLAY_GATE_PAUSE_MS 100   /* accepting pauses this long on EMFILE/ENFILE */
#define REPLAY_GATE_MAX_PENDING 1024

struct replay_gate;

/* Called from the gate thread with an authenticated connection (blocking
 * mode, header still unread); it owns fd from then on. */
typedef void (*replay_gate_handoff_fn)(void *arg, int fd);

struct replay_gate_config {
    int listen_fd; /* the gate owns it (closed by replay_gate_stop) */
    int stop_fd;   /* readable once the server stops (not owned) */
    uint64_t token;
    int io_timeout_s; /* SO_RCVTIMEO/SO_SNDTIMEO of handed-over connections */
    FILE *log;
    pthread_mutex_t *log_mu;
    _Atomic uint64_t *rejected; /* counts bad magic, bad token, no header in time */
    replay_gate_handoff_fn handoff;
    void *handoff_arg;
};

/* Starts the gate thread; NULL with err (listen_fd is then closed). */
struct replay_gate *replay_gate_start(const struct replay_gate_config *cfg, char *err,
                                      size_t errlen);
/* Joins the thread (after stop_fd became readable), closes the listening
 * socket and every connection still waiting for its header. */
void replay_gate_stop(struct replay_gate *g);
/* How many connections without a whole header the gate holds at most
 * (a quarter of RLIMIT_NOFILE, 8..REPLAY_GATE_MAX_PENDING). */
int replay_gate_pending_cap(void);

#endif
