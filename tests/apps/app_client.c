/* app_client.c - pooled persistent connections from the front end to the app
 * tier (app_client.h). Never shares a connection between two calls in flight. */
#include "app_client.h"
#include "app_net.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct app_client_pool {
    char host[256];
    unsigned port;
    unsigned size;
    pthread_mutex_t mutex;
    pthread_cond_t freed;
    int *fds;   /* -1 until connected */
    char *busy; /* per slot */
};

struct app_client_pool *app_client_pool_new(const char *host, unsigned port, unsigned size)
{
    struct app_client_pool *pool = calloc(1, sizeof *pool);
    if (!pool || size == 0)
        goto fail;
    snprintf(pool->host, sizeof pool->host, "%s", host);
    pool->port = port;
    pool->size = size;
    pool->fds = malloc(size * sizeof *pool->fds);
    pool->busy = calloc(size, 1);
    if (!pool->fds || !pool->busy)
        goto fail;
    for (unsigned i = 0; i < size; i++)
        pool->fds[i] = -1;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->freed, NULL);
    return pool;
fail:
    if (pool) {
        free(pool->fds);
        free(pool->busy);
    }
    free(pool);
    return NULL;
}

void app_client_pool_free(struct app_client_pool *pool)
{
    if (!pool)
        return;
    for (unsigned i = 0; i < pool->size; i++)
        if (pool->fds[i] >= 0)
            close(pool->fds[i]);
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->fds);
    free(pool->busy);
    free(pool);
}

static unsigned app_client_acquire(struct app_client_pool *pool)
{
    pthread_mutex_lock(&pool->mutex);
    for (;;) {
        /* Prefer a slot that is already connected, so the pool stays small. */
        unsigned pick = pool->size;
        for (unsigned i = 0; i < pool->size; i++) {
            if (pool->busy[i])
                continue;
            if (pool->fds[i] >= 0) {
                pick = i;
                break;
            }
            if (pick == pool->size)
                pick = i;
        }
        if (pick < pool->size) {
            pool->busy[pick] = 1;
            pthread_mutex_unlock(&pool->mutex);
            return pick;
        }
        pthread_cond_wait(&pool->freed, &pool->mutex);
    }
}

static void app_client_release(struct app_client_pool *pool, unsigned slot)
{
    pthread_mutex_lock(&pool->mutex);
    pool->busy[slot] = 0;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->mutex);
}

int app_client_call(struct app_client_pool *pool, const struct app_proto_request *req, char *buf,
                    size_t buf_cap, size_t *len, char *err, size_t err_cap)
{
    unsigned slot = app_client_acquire(pool);
    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = pool->fds[slot] >= 0;
        if (!reused) {
            int fd = app_connect_tcp(pool->host, pool->port);
            if (fd < 0) {
                snprintf(err, err_cap, "app tier %s:%u: connect: %s", pool->host, pool->port,
                         strerror(errno));
                break;
            }
            struct timeval tv = {.tv_sec = 30};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            pool->fds[slot] = fd;
        }
        uint8_t status = 0;
        uint64_t id = 0;
        int got = -1;
        int wrote = app_proto_write_request(pool->fds[slot], req) == 0;
        if (wrote)
            got = app_proto_read_response(pool->fds[slot], &status, &id, buf, buf_cap, len);
        if (got == 1 && id == req->request_id) {
            if (status == APP_STATUS_OK)
                rc = 0;
            else
                snprintf(err, err_cap, "app tier request %llu failed: %s",
                         (unsigned long long)req->request_id, buf);
            break;
        }
        int saved = errno;
        close(pool->fds[slot]);
        pool->fds[slot] = -1;
        if (got == 1)
            snprintf(err, err_cap, "app tier answered request %llu with id %llu",
                     (unsigned long long)req->request_id, (unsigned long long)id);
        else
            snprintf(err, err_cap, "app tier %s:%u: %s", pool->host, pool->port,
                     got == 0 ? "connection closed" : strerror(saved));
        /* Only a reused connection found closed before any answer (or that failed on send) is
         * retried: the app tier logs a request after answering it, so it never saw this one. */
        if (!(reused && (!wrote || got == 0)))
            break;
    }
    app_client_release(pool, slot);
    return rc;
}
