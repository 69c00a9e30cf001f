/* replay_peers.c - nested calls from one replayer to another (CloudProphet
 * §3.3): persistent connections pooled per callee component (and per
 * TCP_NODELAY setting), the request header, then the recorded segments one
 * send(2) or exact receive each, in the recorded order, with MSG_MORE where
 * recorded; blocking (a worker) or one step at a time (an event loop, which
 * waits for the connection in its epoll set). Must never coalesce segments. The peers file
 * ("component address" per line, # comments) is read at the first call, so `preplay run` can write
 * it after every replayer has bound its port. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "replay_exec.h"
#include "replay_proto.h"

struct replay_peer {
    char name[128], addr[128];
    int *idle[2]; /* [nodelay] stacks of idle connections */
    int nidle[2];
};

struct replay_peers {
    char *path;
    uint64_t token;
    int pool, timeout_s;
    pthread_mutex_t mu;
    int loaded;
    char load_error[256];
    struct replay_peer *peers;
    int npeers;
    _Atomic uint64_t opened;
};

struct replay_peers *replay_peers_new(const char *path, uint64_t token, int pool, int timeout_s)
{
    struct replay_peers *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    if (path && !(ps->path = strdup(path))) {
        free(ps);
        return NULL;
    }
    ps->token = token;
    ps->pool = pool < 0 ? 0 : pool;
    ps->timeout_s = timeout_s;
    pthread_mutex_init(&ps->mu, NULL);
    return ps;
}

void replay_peers_free(struct replay_peers *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < ps->npeers; i++)
        for (int d = 0; d < 2; d++) {
            for (int k = 0; k < ps->peers[i].nidle[d]; k++)
                close(ps->peers[i].idle[d][k]);
            free(ps->peers[i].idle[d]);
        }
    free(ps->peers);
    free(ps->path);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

uint64_t replay_peers_opened(const struct replay_peers *ps)
{
    return atomic_load(&((struct replay_peers *)ps)->opened);
}

/* Called with mu held. */
static int replay_peers_load(struct replay_peers *ps)
{
    if (ps->loaded)
        return ps->load_error[0] ? -1 : 0;
    if (!ps->path) {
        snprintf(ps->load_error, sizeof ps->load_error, "no --peers file: nested calls fail");
        ps->loaded = 1;
        return -1;
    }
    FILE *f = fopen(ps->path, "r");
    if (!f) /* not written yet: try again at the next call */
        return snprintf(ps->load_error, sizeof ps->load_error, "peers %s: %s", ps->path,
                        strerror(errno)),
               -1;
    ps->load_error[0] = 0;
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char name[128], addr[128];
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        int n = sscanf(line, "%127s %127s", name, addr);
        if (n <= 0)
            continue;
        if (n != 2) {
            snprintf(ps->load_error, sizeof ps->load_error,
                     "peers %s line %d: expected 'component address'", ps->path, lineno);
            break;
        }
        struct replay_peer *np = realloc(ps->peers, (size_t)(ps->npeers + 1) * sizeof *np);
        if (!np)
            break;
        ps->peers = np;
        struct replay_peer *p = &ps->peers[ps->npeers++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", name);
        snprintf(p->addr, sizeof p->addr, "%s", addr);
        if (ps->pool) {
            p->idle[0] = malloc((size_t)ps->pool * sizeof(int));
            p->idle[1] = malloc((size_t)ps->pool * sizeof(int));
            if (!p->idle[0] || !p->idle[1])
                ps->pool = 0; /* degrade to a connection per call */
        }
    }
    fclose(f);
    ps->loaded = 1;
    return ps->load_error[0] ? -1 : 0;
}

static int replay_peers_get(struct replay_peers *ps, const char *name, int nodelay, char *addr,
                            size_t addrlen, struct replay_peer **peer, char *err, size_t errlen)
{
    pthread_mutex_lock(&ps->mu);
    if (replay_peers_load(ps)) {
        snprintf(err, errlen, "%s", ps->load_error);
        pthread_mutex_unlock(&ps->mu);
        return -1;
    }
    int fd = -2;
    *peer = NULL;
    for (int i = 0; i < ps->npeers; i++)
        if (!strcmp(ps->peers[i].name, name)) {
            *peer = &ps->peers[i];
            snprintf(addr, addrlen, "%s", ps->peers[i].addr);
            if (ps->peers[i].nidle[nodelay])
                fd = ps->peers[i].idle[nodelay][--ps->peers[i].nidle[nodelay]];
            break;
        }
    pthread_mutex_unlock(&ps->mu);
    if (!*peer) {
        snprintf(err, errlen, "no address for component '%s' in %s", name, ps->path);
        return -1;
    }
    return fd;
}

static void replay_peers_put(struct replay_peers *ps, struct replay_peer *peer, int nodelay, int fd)
{
    pthread_mutex_lock(&ps->mu);
    if (ps->pool && peer->nidle[nodelay] < ps->pool) {
        peer->idle[nodelay][peer->nidle[nodelay]++] = fd;
        fd = -1;
    }
    pthread_mutex_unlock(&ps->mu);
    if (fd >= 0)
        close(fd);
}

/* A fresh connection to the callee, or an idle pooled one. 0 or -1. */
static int replay_call_connect(struct replay_peers *ps, struct replay_call_run *cr, char *err,
                               size_t errlen)
{
    int fd = cr->attempt ? -2
                         : replay_peers_get(ps, cr->name, cr->nodelay, cr->addr, sizeof cr->addr,
                                            &cr->peer, err, errlen);
    if (fd == -1)
        return -1;
    cr->pooled = fd >= 0;
    if (!cr->pooled) {
        fd = replay_connect(cr->addr, cr->nodelay, err, errlen);
        if (fd < 0)
            return -1;
        atomic_fetch_add(&ps->opened, 1);
        struct timeval tv = {ps->timeout_s, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    cr->fd = fd;
    cr->hleft = REPLAY_HEADER_SIZE;
    cr->seg = 0;
    cr->seg_left = cr->nsegs ? cr->segs[0].bytes : 0;
    return 0;
}

int replay_peers_call_begin(struct replay_peers *ps, const struct plan *p, const struct plan_op *op,
                            struct replay_call_run *cr, char *err, size_t errlen)
{
    memset(cr, 0, sizeof *cr);
    cr->fd = -1;
    uint32_t callee = op->a.call.callee_block;
    if (callee >= p->nblocks ||
        op->a.call.first_segment + (uint64_t)op->a.call.nsegments > p->nsegments) {
        snprintf(err, errlen, "call to block %u: out of range", callee);
        return -1;
    }
    cr->name = plan_string(p, p->components[p->blocks[callee].component].name);
    cr->nodelay = (op->flags & REPLAY_CALL_NODELAY) ? 1 : 0;
    cr->segs = &p->segments[op->a.call.first_segment];
    cr->nsegs = op->a.call.nsegments;
    cr->callee = callee;
    struct replay_header h = {.block = callee, .token = ps->token};
    uint64_t rq = 0, rs = 0;
    for (uint32_t i = 0; i < cr->nsegs; i++)
        *(cr->segs[i].dir ? &rs : &rq) += cr->segs[i].bytes;
    if (rq > REPLAY_MAX_MESSAGE || rs > REPLAY_MAX_MESSAGE) {
        snprintf(err, errlen, "call to block %u: message over 1 GiB", callee);
        return -1;
    }
    h.request_bytes = (uint32_t)rq;
    h.response_bytes = (uint32_t)rs;
    cr->has_request = rq > 0;
    replay_header_encode(&h, cr->head);
    return replay_call_connect(ps, cr, err, errlen);
}

/* One send(2)/recv(2) toward the call: the header (in the first segment's
 * send when the call starts with one: one syscall, one packet), then the
 * segments in order. Bytes moved, or -1 with errno; *sending: its way. */
static ssize_t replay_call_move(struct replay_call_run *cr, int dontwait, int *sending)
{
    const struct plan_segment *sg = cr->seg < cr->nsegs ? &cr->segs[cr->seg] : NULL;
    *sending = 1;
    if (cr->hleft) {
        uint64_t with = sg && cr->seg == 0 && sg->dir == 0 ? cr->seg_left : 0;
        int flags =
            with ? ((sg->flags & PLAN_SEG_MORE) ? MSG_MORE : 0) : (cr->has_request ? MSG_MORE : 0);
        ssize_t n = replay_send_head_once(cr->fd, cr->head + REPLAY_HEADER_SIZE - cr->hleft,
                                          cr->hleft, with, flags, dontwait);
        if (n > 0) {
            size_t h = (size_t)n < cr->hleft ? (size_t)n : cr->hleft;
            cr->hleft -= h;
            cr->seg_left -= (uint64_t)n - h;
        }
        return n;
    }
    *sending = sg->dir == 0;
    int flags = *sending && (sg->flags & PLAN_SEG_MORE) ? MSG_MORE : 0;
    ssize_t n = replay_xfer_once(cr->fd, *sending, cr->seg_left, flags, dontwait);
    if (n > 0)
        cr->seg_left -= (uint64_t)n;
    return n;
}

int replay_peers_call_step(struct replay_peers *ps, struct replay_call_run *cr, int dontwait,
                           char *err, size_t errlen)
{
    int sent = 0; /* bytes went out in this step */
    for (;;) {
        if (!cr->hleft && cr->seg < cr->nsegs && !cr->seg_left) { /* this segment is done */
            cr->seg++;
            cr->seg_left = cr->seg < cr->nsegs ? cr->segs[cr->seg].bytes : 0;
            continue;
        }
        if (!cr->hleft && cr->seg == cr->nsegs)
            return 0;
        /* the callee's answer to what was just sent cannot be there yet: a
         * loop waits for it without a recv(2) bound to find nothing (one
         * syscall a call; arming the wait sees an answer already there) */
        if (dontwait && sent && !cr->hleft && cr->segs[cr->seg].dir)
            return 1;
        int sending;
        ssize_t n = replay_call_move(cr, dontwait, &sending);
        sent |= n > 0 && sending;
        if (n > 0)
            continue;
        if (n < 0 && dontwait && (errno == EAGAIN || errno == EWOULDBLOCK))
            return sending ? 2 : 1;
        int saved = n < 0 ? errno : 0;
        close(cr->fd);
        cr->fd = -1;
        /* a pooled connection may have been closed by the callee: retry once fresh */
        if (cr->pooled && cr->attempt == 0) {
            cr->attempt = 1;
            if (replay_call_connect(ps, cr, err, errlen) == 0)
                continue;
            return -1;
        }
        snprintf(err, errlen, "call to %s (%s) block %u: %s", cr->name, cr->addr, cr->callee,
                 saved ? strerror(saved) : "connection closed");
        return -1;
    }
}

void replay_peers_call_end(struct replay_peers *ps, struct replay_call_run *cr, int ok)
{
    if (cr->fd < 0)
        return;
    if (ok)
        replay_peers_put(ps, cr->peer, cr->nodelay, cr->fd);
    else
        close(cr->fd);
    cr->fd = -1;
}

int replay_peers_call(struct replay_peers *ps, const struct plan *p, const struct plan_op *op,
                      char *err, size_t errlen)
{
    struct replay_call_run cr;
    if (replay_peers_call_begin(ps, p, op, &cr, err, errlen))
        return -1;
    int rc = replay_peers_call_step(ps, &cr, 0, err, errlen);
    replay_peers_call_end(ps, &cr, rc == 0);
    return rc ? -1 : 0;
}
