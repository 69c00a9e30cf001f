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

#include "grow_array.h"

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

/* One pass of the schedule replays at most this many blocks in a sequence
 * (all components together): a plan from `preplay analyze` replays each of
 * its blocks at most once per pass, so its count never exceeds
 * PLAN_MAX_BLOCKS; only a hand-built plan that shares blocks among many
 * requests and calls can. */
#define REPLAY_NODEPS_MAX_USES ((uint64_t)PLAN_MAX_BLOCKS)

/* How often one pass of the schedule replays each block: once per request
 * naming it, and once per CALL op naming it in every replay of its caller.
 * `preplay analyze` writes one block per served request, so there every
 * count is 0 or 1; a hand-built plan may name one block from many requests.
 * The reader makes a callee precede its caller (PLAN.md §5.2), so one sweep
 * from the last block down sums them (a CALL to a later block, possible
 * only in a plan built in memory, is left out: served at once). Counts
 * saturate at REPLAY_NODEPS_MAX_USES + 1. NULL when out of memory. */
static uint64_t *replay_nodeps_uses(const struct plan *p)
{
    const uint64_t sat = REPLAY_NODEPS_MAX_USES + 1;
    uint64_t *uses = calloc(p->nblocks ? p->nblocks : 1, sizeof *uses);
    if (!uses)
        return NULL;
    for (uint32_t r = 0; r < p->nrequests; r++) {
        uint32_t b = p->requests[r].block;
        if (b < p->nblocks && uses[b] < sat)
            uses[b]++;
    }
    for (uint32_t b = p->nblocks; b-- > 0;) {
        const struct plan_block *blk = &p->blocks[b];
        for (uint32_t i = 0; uses[b] && i < blk->nops; i++) {
            const struct plan_op *op = &p->ops[blk->first_op + i];
            uint32_t c = op->a.call.callee_block;
            if (op->kind == PLAN_OP_CALL && c < b)
                uses[c] = uses[c] + uses[b] < sat ? uses[c] + uses[b] : sat;
        }
    }
    return uses;
}

/* Appends every block of n's component one pass replays to its worker's
 * sequence, in the order the schedule reaches them: request by request,
 * each request's block before its callees, in op order. Each worker's seq
 * has room for its uses. -1 when out of memory. */
static int replay_nodeps_fill(struct replay_nodeps *n, uint32_t component)
{
    const struct plan *p = n->plan;
    size_t cap = 64;
    uint32_t top = 0;
    uint32_t *stack = malloc(cap * sizeof *stack);
    if (!stack)
        return -1;
    for (uint32_t r = 0; r < p->nrequests; r++) {
        if (p->requests[r].block >= p->nblocks)
            continue;
        stack[top++] = p->requests[r].block;
        while (top) {
            uint32_t b = stack[--top];
            const struct plan_block *blk = &p->blocks[b];
            if (blk->component == component) {
                struct replay_nodeps_worker *wk = &n->workers[blk->worker];
                wk->seq[wk->len++] = b;
            }
            for (uint32_t i = blk->nops; i-- > 0;) { /* reversed: popped in op order */
                const struct plan_op *op = &p->ops[blk->first_op + i];
                if (op->kind != PLAN_OP_CALL || op->a.call.callee_block >= b)
                    continue;
                if (grow_array((void **)&stack, &cap, (size_t)top + 1, sizeof *stack, 64) != 0) {
                    free(stack);
                    return -1;
                }
                stack[top++] = op->a.call.callee_block;
            }
        }
    }
    free(stack);
    return 0;
}

struct replay_nodeps_entry {
    uint32_t block, pos;
};

static const struct plan *replay_nodeps_sort_plan;

/* Recorded start first; the order the schedule reaches them breaks ties
 * (a hand-built plan leaves every start_ns 0: schedule order). */
static int replay_nodeps_by_start(const void *a, const void *b)
{
    const struct replay_nodeps_entry *x = a, *y = b;
    uint64_t sx = replay_nodeps_sort_plan->blocks[x->block].start_ns;
    uint64_t sy = replay_nodeps_sort_plan->blocks[y->block].start_ns;
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sorts every worker's sequence by recorded start. -1 when out of memory. */
static int replay_nodeps_sort(struct replay_nodeps *n)
{
    uint32_t longest = 1;
    for (uint32_t w = 0; w < n->nworkers; w++)
        if (n->workers[w].len > longest)
            longest = n->workers[w].len;
    struct replay_nodeps_entry *e = malloc(longest * sizeof *e);
    if (!e)
        return -1;
    replay_nodeps_sort_plan = n->plan; /* qsort has no context argument in C11 */
    for (uint32_t w = 0; w < n->nworkers; w++) {
        struct replay_nodeps_worker *wk = &n->workers[w];
        for (uint32_t i = 0; i < wk->len; i++)
            e[i] = (struct replay_nodeps_entry){wk->seq[i], i};
        qsort(e, wk->len, sizeof *e, replay_nodeps_by_start);
        for (uint32_t i = 0; i < wk->len; i++)
            wk->seq[i] = e[i].block;
    }
    free(e);
    return 0;
}

struct replay_nodeps *replay_nodeps_new(const struct plan *p, uint32_t component, double hold_s,
                                        char *err, size_t errlen)
{
    struct replay_nodeps *n = calloc(1, sizeof *n);
    uint64_t *uses = replay_nodeps_uses(p);
    if (!n || !uses)
        goto oom;
    n->plan = p;
    n->hold_s = hold_s > 0 ? hold_s : 5;
    pthread_mutex_init(&n->mu, NULL);
    uint64_t total = 0;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        total += uses[b];
        if (uses[b] && p->blocks[b].component == component && p->blocks[b].worker >= n->nworkers)
            n->nworkers = p->blocks[b].worker + 1;
    }
    if (total > REPLAY_NODEPS_MAX_USES) {
        snprintf(err, errlen,
                 "--no-deps: one pass of the schedule replays blocks more than %llu times, the "
                 "limit (one sequence entry each; the plan's requests and calls share blocks)",
                 (unsigned long long)REPLAY_NODEPS_MAX_USES);
        goto fail;
    }
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
    uint64_t *len = calloc(n->nworkers, sizeof *len);
    if (!len)
        goto oom;
    for (uint32_t b = 0; b < p->nblocks; b++)
        if (uses[b] && p->blocks[b].component == component) {
            len[p->blocks[b].worker] += uses[b];
            n->owner[b] = p->blocks[b].worker + 1;
        }
    for (uint32_t w = 0; w < n->nworkers; w++) {
        n->workers[w].seq = malloc((len[w] ? len[w] : 1) * sizeof(uint32_t));
        if (!n->workers[w].seq) {
            free(len);
            goto oom;
        }
    }
    free(len);
    if (replay_nodeps_fill(n, component) || replay_nodeps_sort(n))
        goto oom;
    free(uses);
    return n;
oom:
    snprintf(err, errlen, "--no-deps: out of memory");
fail:
    free(uses);
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
    /* a recorded worker whose blocks the schedule never reaches has an
     * empty sequence: it only waits to be stopped */
    while (!wk->len && !n->stopping)
        pthread_cond_wait(&wk->cv, &n->mu);
    if (n->stopping) {
        pthread_mutex_unlock(&n->mu);
        return -1;
    }
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
