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
    /* an event-loop component (plan 1.2): this many loops, each running one
     * request's work at a time while any number of requests wait on peers
     * (replay_exec_block); 0 = a worker pool, each worker one request */
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

/* Threads a replay server runs per event loop: requests one loop can have
 * in flight at once (each waits on its peers on a thread of its own). */
#define REPLAY_LOOP_THREADS 64

/* Replays `block` for a request whose header said request_bytes follow on
 * fd and response_bytes are expected back (fd < 0: no request connection,
 * net ops are skipped). In an event-loop engine the calling thread holds
 * one of the loops while it runs CPU, file, lock and socket-option ops and
 * lets go of it while it waits: on a call, an external call, the DB, the
 * request's bytes or the client taking the response, as a loop serves other
 * connections then. Consumes every request byte and sends exactly
 * response_bytes, shaped by the block's RECV/SEND ops. Returns 0, or -1
 * when the request connection failed (err says why); other failures (DB
 * errors, failed nested calls) are counted and replay goes on. */
int replay_exec_block(struct replay_thread *t, uint32_t block, int fd, uint64_t request_bytes,
                      uint64_t response_bytes, char *err, size_t errlen);
/* The same, when the first `preread` (<= request_bytes) request bytes were
 * already read with the header (replay_server: one recv(2) for both): the
 * RECV ops take them first, in order, and read only the rest. */
int replay_exec_block_preread(struct replay_thread *t, uint32_t block, int fd,
                              uint64_t request_bytes, uint64_t preread, uint64_t response_bytes,
                              char *err, size_t errlen);

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
/* Connections opened so far (tests check pooling). */
uint64_t replay_peers_opened(const struct replay_peers *peers);

#endif
