/* replay_nodeps.c - worker sequences for `--no-deps` (CloudProphet §5.3.4's
 * strawman, see replay_nodeps.h). One mutex guards everything: the
 * sequences are short critical sections (pop a held request, advance a
 * position) next to block replays of micro- to milliseconds. Held requests
 * are a FIFO per block, so a schedule repeated within one interval (the
 * driver loops it) queues the next pass behind the current one. Must never
 * replay or read from a held connection: it only orders them. */
#include "replay_nodeps.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct replay_nodeps_held {
    struct replay_nodeps_held *next;
    int fd;
    uint32_t request_bytes, response_bytes;
};

struct replay_nodeps_worker {
    uint32_t *seq; /* block ids in recorded order */
    uint32_t len, pos;
    uint64_t held; /* requests held for this worker */
    struct timespec waiting_since;
    pthread_cond_t cv;
};

struct replay_nodeps {
    const struct plan *plan;
    uint32_t nworkers;
    struct replay_nodeps_worker *workers;
    uint32_t *owner; /* block -> worker index + 1 (0 = in no sequence) */
    struct replay_nodeps_held **head, **tail;
    double hold_s;
    uint64_t skipped;
    int stopping;
    pthread_mutex_t mu;
};

static const struct plan *replay_nodeps_sort_plan;

static int replay_nodeps_by_start(const void *a, const void *b)
{
    const struct plan_block *x = &replay_nodeps_sort_plan->blocks[*(const uint32_t *)a];
    const struct plan_block *y = &replay_nodeps_sort_plan->blocks[*(const uint32_t *)b];
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Marks the blocks the schedule reaches: requests' blocks and, transitively,
 * the callees of their CALL ops. */
static uint8_t *replay_nodeps_reachable(const struct plan *p)
{
    uint8_t *seen = calloc(p->nblocks ? p->nblocks : 1, 1);
    uint32_t *stack = malloc((p->nblocks ? p->nblocks : 1) * sizeof *stack);
    if (!seen || !stack) {
        free(seen);
        free(stack);
        return NULL;
    }
    uint32_t top = 0;
    for (uint32_t r = 0; r < p->nrequests; r++) {
        uint32_t b = p->requests[r].block;
        if (b < p->nblocks && !seen[b]) {
            seen[b] = 1;
            stack[top++] = b;
        }
    }
    while (top) {
        const struct plan_block *blk = &p->blocks[stack[--top]];
        for (uint32_t i = 0; i < blk->nops; i++) {
            const struct plan_op *op = &p->ops[blk->first_op + i];
            uint32_t c = op->a.call.callee_block;
            if (op->kind == PLAN_OP_CALL && c < p->nblocks && !seen[c]) {
                seen[c] = 1;
                stack[top++] = c;
            }
        }
    }
    free(stack);
    return seen;
}

struct replay_nodeps *replay_nodeps_new(const struct plan *p, uint32_t component, double hold_s,
                                        char *err, size_t errlen)
{
    struct replay_nodeps *n = calloc(1, sizeof *n);
    uint8_t *reach = replay_nodeps_reachable(p);
    if (!n || !reach)
        goto oom;
    n->plan = p;
    n->hold_s = hold_s > 0 ? hold_s : 5;
    pthread_mutex_init(&n->mu, NULL);
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (reach[b] && p->blocks[b].component == component && p->blocks[b].worker >= n->nworkers)
            n->nworkers = p->blocks[b].worker + 1;
    if (!n->nworkers) {
        snprintf(err, errlen, "--no-deps: component %u has no block the schedule reaches",
                 component);
        goto fail;
    }
    /* one thread per recorded worker: no more than a replayer may start */
    if (n->nworkers > PLAN_MAX_WORKERS) {
        snprintf(err, errlen,
                 "--no-deps: component %u's blocks name %u recorded workers, more than the limit "
                 "%u (one thread each)",
                 component, n->nworkers, PLAN_MAX_WORKERS);
        goto fail;
    }
    n->workers = calloc(n->nworkers, sizeof *n->workers);
    n->owner = calloc(p->nblocks, sizeof *n->owner);
    n->head = calloc(p->nblocks, sizeof *n->head);
    n->tail = calloc(p->nblocks, sizeof *n->tail);
    if (!n->workers || !n->owner || !n->head || !n->tail)
        goto oom;
    for (uint32_t w = 0; w < n->nworkers; w++)
        pthread_cond_init(&n->workers[w].cv, NULL);
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (reach[b] && p->blocks[b].component == component)
            n->workers[p->blocks[b].worker].len++;
    for (uint32_t w = 0; w < n->nworkers; w++) {
        n->workers[w].seq = malloc((n->workers[w].len ? n->workers[w].len : 1) * sizeof(uint32_t));
        if (!n->workers[w].seq)
            goto oom;
        n->workers[w].len = 0;
    }
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (reach[b] && p->blocks[b].component == component) {
            struct replay_nodeps_worker *wk = &n->workers[p->blocks[b].worker];
            wk->seq[wk->len++] = b;
            n->owner[b] = p->blocks[b].worker + 1;
        }
    replay_nodeps_sort_plan = p; /* qsort has no context argument in C11 */
    for (uint32_t w = 0; w < n->nworkers; w++)
        qsort(n->workers[w].seq, n->workers[w].len, sizeof(uint32_t), replay_nodeps_by_start);
    free(reach);
    return n;
oom:
    snprintf(err, errlen, "--no-deps: out of memory");
fail:
    free(reach);
    replay_nodeps_free(n);
    return NULL;
}

void replay_nodeps_free(struct replay_nodeps *n)
{
    if (!n)
        return;
    replay_nodeps_stop(n);
    for (uint32_t w = 0; n->workers && w < n->nworkers; w++) {
        free(n->workers[w].seq);
        pthread_cond_destroy(&n->workers[w].cv);
    }
    free(n->workers);
    free(n->owner);
    free(n->head);
    free(n->tail);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

uint32_t replay_nodeps_workers(const struct replay_nodeps *n)
{
    return n->nworkers;
}

int replay_nodeps_offer(struct replay_nodeps *n, uint32_t block, int fd, uint32_t request_bytes,
                        uint32_t response_bytes)
{
    if (block >= n->plan->nblocks || !n->owner[block])
        return 0;
    struct replay_nodeps_held *h = malloc(sizeof *h);
    if (!h)
        return 0; /* out of memory: serve it at once rather than lose it */
    *h = (struct replay_nodeps_held){NULL, fd, request_bytes, response_bytes};
    pthread_mutex_lock(&n->mu);
    if (n->stopping) {
        pthread_mutex_unlock(&n->mu);
        free(h);
        close(fd);
        return 1;
    }
    if (n->tail[block])
        n->tail[block]->next = h;
    else
        n->head[block] = h;
    n->tail[block] = h;
    struct replay_nodeps_worker *wk = &n->workers[n->owner[block] - 1];
    wk->held++;
    pthread_cond_signal(&wk->cv);
    pthread_mutex_unlock(&n->mu);
    return 1;
}

static double replay_nodeps_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int replay_nodeps_next(struct replay_nodeps *n, uint32_t w, uint32_t *block, int *fd,
                       uint32_t *request_bytes, uint32_t *response_bytes)
{
    if (w >= n->nworkers)
        return -1;
    struct replay_nodeps_worker *wk = &n->workers[w];
    pthread_mutex_lock(&n->mu);
    clock_gettime(CLOCK_MONOTONIC, &wk->waiting_since);
    uint32_t waiting_for = wk->seq[wk->pos];
    for (;;) {
        if (n->stopping) {
            pthread_mutex_unlock(&n->mu);
            return -1;
        }
        uint32_t b = wk->seq[wk->pos];
        if (b != waiting_for) { /* reset or skip moved the position */
            waiting_for = b;
            clock_gettime(CLOCK_MONOTONIC, &wk->waiting_since);
        }
        struct replay_nodeps_held *h = n->head[b];
        if (h) {
            n->head[b] = h->next;
            if (!n->head[b])
                n->tail[b] = NULL;
            wk->held--;
            wk->pos = (wk->pos + 1) % wk->len;
            pthread_mutex_unlock(&n->mu);
            *block = b;
            *fd = h->fd;
            *request_bytes = h->request_bytes;
            *response_bytes = h->response_bytes;
            free(h);
            return 0;
        }
        if (wk->held && replay_nodeps_since(&wk->waiting_since) >= n->hold_s) {
            /* a later block is held and this one has not come for hold_s */
            wk->pos = (wk->pos + 1) % wk->len;
            n->skipped++;
            continue;
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 50 * 1000 * 1000;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&wk->cv, &n->mu, &dl);
        (void)rc; /* ETIMEDOUT or a signal: re-check either way */
    }
}

void replay_nodeps_reset(struct replay_nodeps *n)
{
    pthread_mutex_lock(&n->mu);
    for (uint32_t w = 0; w < n->nworkers; w++) {
        n->workers[w].pos = 0;
        pthread_cond_signal(&n->workers[w].cv);
    }
    pthread_mutex_unlock(&n->mu);
}

uint64_t replay_nodeps_skipped(const struct replay_nodeps *n)
{
    pthread_mutex_lock((pthread_mutex_t *)&n->mu);
    uint64_t s = n->skipped;
    pthread_mutex_unlock((pthread_mutex_t *)&n->mu);
    return s;
}

void replay_nodeps_stop(struct replay_nodeps *n)
{
    pthread_mutex_lock(&n->mu);
    n->stopping = 1;
    for (uint32_t b = 0; n->head && b < n->plan->nblocks; b++)
        while (n->head[b]) {
            struct replay_nodeps_held *h = n->head[b];
            n->head[b] = h->next;
            close(h->fd);
            free(h);
        }
    if (n->tail)
        memset(n->tail, 0, n->plan->nblocks * sizeof *n->tail);
    for (uint32_t w = 0; n->workers && w < n->nworkers; w++) {
        n->workers[w].held = 0;
        pthread_cond_broadcast(&n->workers[w].cv);
    }
    pthread_mutex_unlock(&n->mu);
}
