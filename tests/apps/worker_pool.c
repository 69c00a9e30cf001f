/* worker_pool.c - dispatcher thread + worker threads handing whole connections
 * over a bounded queue (see worker_pool.h). Never lets a worker serve two
 * connections at once. */
#include "worker_pool.h"

#include "app_net.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WORKER_POOL_QUEUE_CAP 1024

struct worker_pool_worker {
    struct worker_pool *pool;
    unsigned index;
    pthread_t thread;
    int started;
};

struct worker_pool {
    int listen_fd;
    struct worker_pool_hooks hooks;
    pthread_mutex_t mutex;
    pthread_cond_t not_empty, not_full;
    int queue[WORKER_POOL_QUEUE_CAP];
    unsigned head, count;
    int stopping;
    unsigned worker_count;
    int *active_fd; /* per worker: the connection being served, or -1 */
    struct worker_pool_worker *workers;
    pthread_t dispatcher;
    int dispatcher_started;
};

static void *worker_pool_dispatch(void *arg)
{
    struct worker_pool *pool = arg;
    for (;;) {
        int fd = accept4(pool->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        pthread_mutex_lock(&pool->mutex);
        int stopping = pool->stopping;
        pthread_mutex_unlock(&pool->mutex);
        if (stopping) {
            if (fd >= 0)
                close(fd);
            break;
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
                errno == ENOBUFS || errno == ENOMEM) {
                if (errno != EINTR && errno != ECONNABORTED)
                    usleep(10000); /* out of descriptors: let workers close some */
                continue;
            }
            fprintf(stderr, "worker pool: accept: %s\n", strerror(errno));
            break;
        }
        pthread_mutex_lock(&pool->mutex);
        while (pool->count == WORKER_POOL_QUEUE_CAP && !pool->stopping)
            pthread_cond_wait(&pool->not_full, &pool->mutex);
        if (pool->stopping) {
            pthread_mutex_unlock(&pool->mutex);
            close(fd);
            break;
        }
        pool->queue[(pool->head + pool->count) % WORKER_POOL_QUEUE_CAP] = fd;
        pool->count++;
        pthread_cond_signal(&pool->not_empty);
        pthread_mutex_unlock(&pool->mutex);
    }
    return NULL;
}

static void *worker_pool_work(void *arg)
{
    struct worker_pool_worker *self = arg;
    struct worker_pool *pool = self->pool;
    if (pool->hooks.thread_start)
        pool->hooks.thread_start(self->index, pool->hooks.ctx);
    for (;;) {
        pthread_mutex_lock(&pool->mutex);
        while (pool->count == 0 && !pool->stopping)
            pthread_cond_wait(&pool->not_empty, &pool->mutex);
        if (pool->stopping) {
            pthread_mutex_unlock(&pool->mutex);
            break;
        }
        int fd = pool->queue[pool->head];
        pool->head = (pool->head + 1) % WORKER_POOL_QUEUE_CAP;
        pool->count--;
        pool->active_fd[self->index] = fd;
        pthread_cond_signal(&pool->not_full);
        pthread_mutex_unlock(&pool->mutex);

        pool->hooks.serve(fd, self->index, pool->hooks.ctx);

        /* Cleared under the mutex before close so worker_pool_stop never shuts down
         * a descriptor number that has been reused. */
        pthread_mutex_lock(&pool->mutex);
        pool->active_fd[self->index] = -1;
        pthread_mutex_unlock(&pool->mutex);
        close(fd);
    }
    if (pool->hooks.thread_stop)
        pool->hooks.thread_stop(self->index, pool->hooks.ctx);
    return NULL;
}

struct worker_pool *worker_pool_start(int listen_fd, unsigned workers,
                                      const struct worker_pool_hooks *hooks, char *err,
                                      size_t err_cap)
{
    struct worker_pool *pool = calloc(1, sizeof *pool);
    if (!pool || workers == 0) {
        snprintf(err, err_cap, "worker pool: %s",
                 pool ? "need at least one worker" : "out of memory");
        free(pool);
        return NULL;
    }
    pool->listen_fd = listen_fd;
    pool->hooks = *hooks;
    pool->worker_count = workers;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->not_empty, NULL);
    pthread_cond_init(&pool->not_full, NULL);
    pool->active_fd = malloc(workers * sizeof *pool->active_fd);
    pool->workers = calloc(workers, sizeof *pool->workers);
    if (!pool->active_fd || !pool->workers) {
        snprintf(err, err_cap, "worker pool: out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < workers; i++) {
        pool->active_fd[i] = -1;
        pool->workers[i].pool = pool;
        pool->workers[i].index = i;
        int rc =
            pthread_create(&pool->workers[i].thread, NULL, worker_pool_work, &pool->workers[i]);
        if (rc != 0) {
            snprintf(err, err_cap, "worker pool: starting worker %u: %s", i, strerror(rc));
            goto fail;
        }
        pool->workers[i].started = 1;
    }
    int rc = pthread_create(&pool->dispatcher, NULL, worker_pool_dispatch, pool);
    if (rc != 0) {
        snprintf(err, err_cap, "worker pool: starting dispatcher: %s", strerror(rc));
        goto fail;
    }
    pool->dispatcher_started = 1;
    return pool;
fail:
    worker_pool_stop(pool);
    return NULL;
}

void worker_pool_stop(struct worker_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mutex);
    pool->stopping = 1;
    /* shutdown() wakes accept() and every read blocked on a served connection. */
    shutdown(pool->listen_fd, SHUT_RDWR);
    for (unsigned i = 0; pool->active_fd && i < pool->worker_count; i++)
        if (pool->active_fd[i] >= 0)
            shutdown(pool->active_fd[i], SHUT_RDWR);
    pthread_cond_broadcast(&pool->not_empty);
    pthread_cond_broadcast(&pool->not_full);
    pthread_mutex_unlock(&pool->mutex);

    if (pool->dispatcher_started)
        pthread_join(pool->dispatcher, NULL);
    for (unsigned i = 0; pool->workers && i < pool->worker_count; i++)
        if (pool->workers[i].started)
            pthread_join(pool->workers[i].thread, NULL);
    while (pool->count > 0) {
        close(pool->queue[pool->head]);
        pool->head = (pool->head + 1) % WORKER_POOL_QUEUE_CAP;
        pool->count--;
    }
    close(pool->listen_fd);
    pthread_cond_destroy(&pool->not_empty);
    pthread_cond_destroy(&pool->not_full);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->active_fd);
    free(pool->workers);
    free(pool);
}

int worker_pool_serve(const char *name, const char *bind_host, unsigned port, const char *port_file,
                      unsigned workers, const struct worker_pool_hooks *hooks)
{
    /* Every thread inherits this mask; the calling thread takes the signals. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned bound = 0;
    int listen_fd = app_listen_tcp(bind_host, port, &bound);
    if (listen_fd < 0) {
        fprintf(stderr, "%s: listen on %s:%u: %s\n", name, bind_host, port, strerror(errno));
        return -1;
    }
    char err[512];
    struct worker_pool *pool = worker_pool_start(listen_fd, workers, hooks, err, sizeof err);
    if (!pool) {
        fprintf(stderr, "%s: %s\n", name, err);
        return -1;
    }
    if (port_file && app_write_port_file(port_file, bound) < 0) {
        fprintf(stderr, "%s: port file %s: %s\n", name, port_file, strerror(errno));
        worker_pool_stop(pool);
        return -1;
    }
    fprintf(stderr, "%s: pid %d listening on %s:%u with %u workers\n", name, (int)getpid(),
            bind_host, bound, workers);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fprintf(stderr, "%s: signal %d, stopping\n", name, sig);
    worker_pool_stop(pool);
    return 0;
}
