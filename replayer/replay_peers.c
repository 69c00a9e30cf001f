/* replay_peers.c - nested calls from one replayer to another (CloudProphet
 * §3.3): persistent connections pooled per callee component (and per
 * TCP_NODELAY setting), the request header, then the recorded segments one
 * send(2) or exact receive each, in the recorded order, with MSG_MORE where
 * recorded. Must never coalesce segments. The peers file ("component
 * address" per line, # comments) is read at the first call, so `preplay
 * run` can write it after every replayer has bound its port. */
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

int replay_peers_call(struct replay_peers *ps, const struct plan *p, const struct plan_op *op,
                      char *err, size_t errlen)
{
    uint32_t callee = op->a.call.callee_block;
    if (callee >= p->nblocks ||
        op->a.call.first_segment + (uint64_t)op->a.call.nsegments > p->nsegments) {
        snprintf(err, errlen, "call to block %u: out of range", callee);
        return -1;
    }
    const char *name = plan_string(p, p->components[p->blocks[callee].component].name);
    int nodelay = (op->flags & REPLAY_CALL_NODELAY) ? 1 : 0;
    const struct plan_segment *segs = &p->segments[op->a.call.first_segment];
    struct replay_header h = {.block = callee, .token = ps->token};
    uint64_t rq = 0, rs = 0;
    for (uint32_t i = 0; i < op->a.call.nsegments; i++)
        *(segs[i].dir ? &rs : &rq) += segs[i].bytes;
    if (rq > REPLAY_MAX_MESSAGE || rs > REPLAY_MAX_MESSAGE) {
        snprintf(err, errlen, "call to block %u: message over 1 GiB", callee);
        return -1;
    }
    h.request_bytes = (uint32_t)rq;
    h.response_bytes = (uint32_t)rs;
    unsigned char hb[REPLAY_HEADER_SIZE];
    replay_header_encode(&h, hb);
    char addr[128];
    struct replay_peer *peer;
    /* a pooled connection may have been closed by the callee: retry once fresh */
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = replay_peers_get(ps, name, nodelay, addr, sizeof addr, &peer, err, errlen);
        if (fd == -1)
            return -1;
        int pooled = fd >= 0;
        if (!pooled) {
            fd = replay_connect(addr, nodelay, err, errlen);
            if (fd < 0)
                return -1;
            atomic_fetch_add(&ps->opened, 1);
            struct timeval tv = {ps->timeout_s, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        }
        /* the header goes out in the first segment's send: one send(2),
         * one packet (it went with MSG_MORE before, a syscall more) */
        uint32_t i = 0;
        int fail;
        if (op->a.call.nsegments && segs[0].dir == 0) {
            fail = replay_send_head_filler(fd, hb, sizeof hb, segs[0].bytes,
                                           (segs[0].flags & PLAN_SEG_MORE) ? MSG_MORE : 0);
            i = 1;
        } else {
            fail = replay_send_exact(fd, hb, sizeof hb, rq ? MSG_MORE : 0);
        }
        for (; !fail && i < op->a.call.nsegments; i++) {
            if (segs[i].dir == 0)
                fail = replay_send_filler(fd, segs[i].bytes,
                                          (segs[i].flags & PLAN_SEG_MORE) ? MSG_MORE : 0);
            else
                fail = replay_recv_discard(fd, segs[i].bytes);
            if (fail && pooled && i == 0 && attempt == 0)
                break;
        }
        if (!fail) {
            replay_peers_put(ps, peer, nodelay, fd);
            return 0;
        }
        int saved = errno;
        close(fd);
        if (!pooled || attempt == 1) {
            snprintf(err, errlen, "call to %s (%s) block %u: %s", name, addr, callee,
                     saved ? strerror(saved) : "connection closed");
            return -1;
        }
    }
    return -1;
}
