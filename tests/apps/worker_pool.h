/* worker_pool.h - the dispatcher/worker model both sample tiers use: one
 * dispatcher thread accepts connections and hands each to a pool of worker
 * threads; a worker serves one connection at a time, start to end, then takes the
 * next. This is exactly the model the analyzer assumes (worker = thread), so this
 * module must never let two workers share a connection or one worker interleave
 * connections. */
#ifndef WORKER_POOL_H
#define WORKER_POOL_H

#include <stddef.h>

struct worker_pool;

struct worker_pool_hooks {
    /* Serves one connection until it ends; the pool closes fd afterwards. */
    void (*serve)(int fd, unsigned worker_index, void *ctx);
    /* Optional: called in each worker thread when it starts and before it exits
     * (per-thread setup such as mysql_thread_init). */
    void (*thread_start)(unsigned worker_index, void *ctx);
    void (*thread_stop)(unsigned worker_index, void *ctx);
    void *ctx;
};

/* Starts the dispatcher on listen_fd (the pool takes ownership) and `workers`
 * worker threads. NULL on error with a one-line reason in err. */
struct worker_pool *worker_pool_start(int listen_fd, unsigned workers,
                                      const struct worker_pool_hooks *hooks, char *err,
                                      size_t err_cap);

/* Stops accepting, wakes workers blocked on their connections (shutdown(2)),
 * joins every thread, closes the queued and listening sockets and frees. */
void worker_pool_stop(struct worker_pool *pool);

/* A tier's whole serving life: blocks SIGINT/SIGTERM/SIGHUP in every thread
 * (the caller's thread takes them), ignores SIGPIPE, listens on
 * bind_host:port (0 = any free port), starts the pool, writes the bound port
 * to port_file (if not NULL) and logs "NAME: pid P listening on H:PORT",
 * then waits for a stop signal and stops the pool. 0 after a stop signal,
 * -1 when start-up failed (the reason printed to stderr, prefixed NAME). */
int worker_pool_serve(const char *name, const char *bind_host, unsigned port, const char *port_file,
                      unsigned workers, const struct worker_pool_hooks *hooks);

#endif
