/* replay_exec.h - replaying one event block of a plan on a worker thread:
 * the shared engine (lock table, DB connection pool, pooled peer
 * connections, per-label per-resource time, DB error counts) and the
 * per-thread state (cached dummy-file descriptors, the thread's DB
 * connection, locks it holds). Used by the replay server (replay_server.c)
 * and the unit tests. Never prints on the replay path; failures are counted
 * and reported through replay_engine_stats_json. */
#ifndef PREPLAY_REPLAY_EXEC_H
#define PREPLAY_REPLAY_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "replay_proto.h"

/* CALL op flag (plan_op.flags): the caller's connection had TCP_NODELAY. */
#define REPLAY_CALL_NODELAY 0x0001

/* Resource kinds time is accounted to (results' per-label resource time). */
enum replay_kind {
    REPLAY_KIND_CPU,
    REPLAY_KIND_FILE,
    REPLAY_KIND_LOCK,
    REPLAY_KIND_DB,
    REPLAY_KIND_CALL,
    REPLAY_KIND_EXTERNAL,
    REPLAY_KIND_NET, /* request/response bytes on the request's connection */
    REPLAY_NKINDS
};
extern const char *const replay_kind_names[REPLAY_NKINDS];

struct replay_config {
    const struct plan *plan;
    uint32_t component;      /* index into plan->components */
    const char *dir;         /* dummy files (preplay prepare); NULL = "." */
    const char *db_url;      /* mysql://user:pass@host:port/db; NULL = no DB */
    const char *db_password; /* replaces the URL's password; NULL = the URL's */
    const char *peers_path;  /* "component address" lines; NULL = no calls */
    uint64_t token;          /* run token sent on nested calls */
    int pool;                /* idle connections kept per callee; 0 = one per call */
    double cpu_ratio;        /* recorded CPU time is multiplied by this */
    int io_timeout_s;        /* receive/send timeout on every socket (deadlock guard) */
    int no_deps;             /* CloudProphet's strawman: workers replay in recorded order */
    /* an event-loop component (plan 1.2): this many loops, each one thread
     * serving many connections (replay_loop.c); 0 = a worker pool, each
     * worker one request */
    uint32_t event_loops;
    double no_deps_hold_s; /* --no-deps: skip a block not arrived after this long (5) */
};

/* The CPU burn used for CPU ops: ns of thread CPU time. Switchable so the
 * calibrated burn (cpu/cpuburn) replaces the self-timed fallback. */
typedef void (*replay_cpu_burn_fn)(uint64_t ns);
extern replay_cpu_burn_fn replay_cpu_burn;
void replay_cpu_burn_fallback(uint64_t ns);

struct replay_engine;
struct replay_thread;

struct replay_engine *replay_engine_new(const struct replay_config *cfg, char *err, size_t errlen);
void replay_engine_free(struct replay_engine *e);
const struct replay_config *replay_engine_config(const struct replay_engine *e);

struct replay_thread *replay_thread_new(struct replay_engine *e);
/* Closes cached descriptors, returns the DB connection to the pool. */
void replay_thread_free(struct replay_thread *t);

/* Helper threads a replay server runs per event loop: the ops a loop does
 * not sit through (nested and external calls, DB ops not recorded as
 * blocking) that one loop can have waiting at once. */
#define REPLAY_LOOP_THREADS 64

/* Replays `block` for a request whose header said request_bytes follow on
 * fd and response_bytes are expected back (fd < 0: no request connection,
 * net ops are skipped), on the calling thread, to the end. Consumes every
 * request byte and sends exactly response_bytes, shaped by the block's
 * RECV/SEND ops. Returns 0, or -1 when the request connection failed (err
 * says why); other failures (DB errors, failed nested calls) are counted
 * and replay goes on. */
int replay_exec_block(struct replay_thread *t, uint32_t block, int fd, uint64_t request_bytes,
                      uint64_t response_bytes, char *err, size_t errlen);
/* The same, when the first `preread` (<= request_bytes) request bytes were
 * already read with the header (replay_server: one recv(2) for both): the
 * RECV ops take them first, in order, and read only the rest. */
int replay_exec_block_preread(struct replay_thread *t, uint32_t block, int fd,
                              uint64_t request_bytes, uint64_t preread, uint64_t response_bytes,
                              char *err, size_t errlen);

struct replay_peer;
/* A nested call in progress (replay_peers_call_begin/step/end). */
struct replay_call_run {
    int fd; /* the connection to the callee; -1 when none */
    int pooled, attempt, nodelay, has_request;
    struct replay_peer *peer;
    const char *name;
    char addr[128];
    uint32_t callee, seg, nsegs;
    const struct plan_segment *segs;
    uint64_t seg_left; /* bytes of segment seg still to move */
    size_t hleft;      /* header bytes still to send */
    unsigned char head[REPLAY_HEADER_SIZE];
};
/* The same block as a resumable run, for an event loop (replay_loop.c),
 * which runs every op of a request on its one thread except those it must
 * not sit through, and never blocks on a connection. */
struct replay_block_run {
    uint32_t block, op; /* op: the next op, an index within the block */
    int fd;
    uint64_t req_left, resp_left, pre; /* request bytes owed, answer bytes owed, read ahead */
    uint32_t last_send, nrecv;
    int stage, phase; /* where the run is; where the current op is */
    int xfer_send, xfer_flags;
    uint64_t xfer_left; /* bytes of the current transfer still to move */
    int failed_errno;
    int wait_fd;   /* WANT_READ/WANT_WRITE: the descriptor to wait for */
    int call_open; /* call: a nested call in progress (loop) */
    struct replay_call_run call;
    uint64_t t0, kind_ns[REPLAY_NKINDS];
};
enum replay_step {
    REPLAY_STEP_DONE,       /* the block is over: replay_block_end */
    REPLAY_STEP_FAILED,     /* the request connection failed: replay_block_end */
    REPLAY_STEP_WANT_READ,  /* step again once fd is readable */
    REPLAY_STEP_WANT_WRITE, /* step again once fd is writable */
    REPLAY_STEP_OFFLOOP     /* replay_block_offloop on another thread, then step again */
};
/* -1 with err when block is out of range; else the run is set up. */
int replay_block_begin(struct replay_thread *t, struct replay_block_run *r, uint32_t block, int fd,
                       uint64_t request_bytes, uint64_t preread, uint64_t response_bytes, char *err,
                       size_t errlen);
/* loop = 0: to the end, blocking (DONE or FAILED). loop = 1: never blocks
 * on a socket (MSG_DONTWAIT: WANT_READ/WANT_WRITE on wait_fd, the request
 * connection or a nested call's), stops before an op that waits on
 * something else (OFFLOOP: an external call, a DB op not recorded as
 * blocking), and a lock found held is not waited for (lock_loop_busy). */
enum replay_step replay_block_step(struct replay_thread *t, struct replay_block_run *r, int loop);
/* Runs the op a step returned OFFLOOP for (blocking) and moves past it. */
void replay_block_offloop(struct replay_thread *t, struct replay_block_run *r);
/* Counts the block, releases the locks it left held; failed: the last
 * step said FAILED, and err gets why (then -1). */
int replay_block_end(struct replay_thread *t, struct replay_block_run *r, int failed, char *err,
                     size_t errlen);

/* Sums of a block's RECV and SEND op bytes (what a driver sends/expects). */
void replay_block_bytes(const struct plan *p, uint32_t block, uint64_t *request_bytes,
                        uint64_t *response_bytes);

/* Counters as JSON text (malloc'ed): blocks, per label per kind seconds,
 * DB errors per query, failed calls, file errors, lock anomalies. */
char *replay_engine_stats_json(struct replay_engine *e);
void replay_engine_stats_reset(struct replay_engine *e);
/* Between intervals (no block running): rewrites the ranges of the dummy
 * files this engine's writes changed, makes threads reopen their cached
 * descriptors, and waits for the filesystem's write-back (syncfs). 0, or -1
 * with the reason; seconds = restore time without the write-back wait. */
int replay_engine_restore_files(struct replay_engine *e, double *seconds, char *err, size_t errlen);

/* Internal pieces shared by replay_exec.c, replay_db.c, replay_peers.c. */
struct replay_db_pool;
/* password: replaces the URL's (NULL: the URL's, if any). */
struct replay_db_pool *replay_db_pool_new(const char *url, const char *password, char *err,
                                          size_t errlen);
void replay_db_pool_free(struct replay_db_pool *pool);
void *replay_db_acquire(struct replay_db_pool *pool, char *err, size_t errlen);
void replay_db_release(struct replay_db_pool *pool, void *conn);
/* Runs one query on a connection of pool; 0, or the server/client error
 * number (PostgreSQL: the SQLSTATE packed) with message in err. */
int replay_db_run(struct replay_db_pool *pool, void *conn, const struct plan_op *op,
                  const struct plan *p, char *err, size_t errlen);
/* Text of an EXECUTE: `sql` with each ? outside quotes replaced by the next
 * value of `params` ("1, 'a,b', NULL"). malloc'ed, NULL on allocation failure. */
char *replay_db_render(const char *sql, const char *params);

struct replay_peers;
struct replay_peers *replay_peers_new(const char *path, uint64_t token, int pool, int timeout_s);
void replay_peers_free(struct replay_peers *peers);
/* Performs one nested call: header, then the segments in order. 0 or -1 with err. */
int replay_peers_call(struct replay_peers *peers, const struct plan *p, const struct plan_op *op,
                      char *err, size_t errlen);
/* The same call a step at a time: begin (0, or -1 with err: counted as a
 * failed call); step: 0 done, 1 = wait until cr->fd is readable, 2 =
 * writable (dontwait; never with dontwait = 0), -1 failed with err; end:
 * the connection back to the pool (ok) or closed. */
int replay_peers_call_begin(struct replay_peers *peers, const struct plan *p,
                            const struct plan_op *op, struct replay_call_run *cr, char *err,
                            size_t errlen);
int replay_peers_call_step(struct replay_peers *peers, struct replay_call_run *cr, int dontwait,
                           char *err, size_t errlen);
void replay_peers_call_end(struct replay_peers *peers, struct replay_call_run *cr, int ok);
/* Connections opened so far (tests check pooling). */
uint64_t replay_peers_opened(const struct replay_peers *peers);

#endif
