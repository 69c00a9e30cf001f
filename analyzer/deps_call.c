/* deps_call.c - call matching and clock skew. Messages are cut by stream
 * byte offsets per direction: a request on a server end starts at the first
 * byte received after a response, and the caller's call that sent it starts
 * at the same offset of the same stream (so 3 sends arriving as 2 recvs
 * still match). A finished block and the call that sent its request meet in
 * the rendezvous map under (callee end, offset), whichever comes first
 * waiting for the other. Outgoing traffic inside a block becomes a CALL
 * (traced peer: the callee block), an EXTERNAL op (untraced peer) or nothing
 * (DB connections: their DB events are the ops). Clock skew between hosts:
 * per host pair, the callee's block must lie within the caller's call;
 * bounds from every pair give a correction. A call is never matched to two
 * blocks, nor left unresolved at the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deps_block.h"
#include "deps_call.h"
#include "deps_end.h"

static uint64_t deps_call_rv_key(uint64_t gid, uint64_t off)
{
    return deps_map_mix(gid, off);
}

struct deps_rv { /* rendezvous entry */
    int is_call;
    struct deps_served sv; /* when !is_call */
    uint32_t callee_file;
    struct deps_block *b; /* when is_call */
    uint32_t ci;
};

void deps_call_skew_note(struct deps_state *s, struct deps_block *caller, struct deps_call *c,
                         const struct deps_served *sv, uint32_t callee_file)
{
    uint32_t ch = s->in.files[caller->end->file].host, eh = s->in.files[callee_file].host;
    if (ch == eh)
        return;
    struct deps_skew *k = NULL;
    for (uint32_t i = 0; i < s->nskews; i++)
        if (s->skews[i].caller_host == ch && s->skews[i].callee_host == eh)
            k = &s->skews[i];
    if (!k) {
        struct deps_skew *n = realloc(s->skews, (s->nskews + 1) * sizeof *n);
        if (!n)
            return;
        s->skews = n;
        k = &s->skews[s->nskews++];
        memset(k, 0, sizeof *k);
        k->caller_host = ch;
        k->callee_host = eh;
        k->max_lo = INT64_MIN;
        k->min_hi = INT64_MAX;
    }
    /* callee clock - caller clock = d: callee_start - d >= t0, callee_end - d <= t1 */
    int64_t lo = (int64_t)(sv->end_c - c->t1_c), hi = (int64_t)(sv->start_c - c->t0_c);
    if (lo > k->max_lo)
        k->max_lo = lo;
    if (hi < k->min_hi)
        k->min_hi = hi;
    k->pairs++;
    if (k->max_lo > 0 || k->min_hi < 0) {
        int64_t d = k->max_lo <= k->min_hi ? k->max_lo / 2 + k->min_hi / 2 : k->max_lo;
        deps_input_correct_host(&s->in, eh, d);
        k->applied += d;
        k->max_lo -= d;
        k->min_hi -= d;
    }
}

/* The callee block for call c of block b is known. */
static void deps_call_matched(struct deps_state *s, struct deps_block *b, uint32_t ci,
                              const struct deps_served *sv, uint32_t callee_file)
{
    struct deps_call *c = &b->calls[ci];
    c->callee = sv->block;
    c->state = DEPS_CALL_DONE;
    s->res->calls++;
    deps_call_skew_note(s, b, c, sv, callee_file);
    if (--b->unresolved == 0 && b->finished)
        deps_block_emit(s, b);
}

void deps_call_served(struct deps_state *s, const struct deps_served *sv, uint32_t file)
{
    uint64_t key = deps_call_rv_key(sv->gid, sv->in_off);
    struct deps_rv *rv = deps_map_get(&s->rendezvous, key);
    if (rv && rv->is_call) {
        deps_map_del(&s->rendezvous, key);
        struct deps_block *b = rv->b;
        uint32_t ci = rv->ci;
        free(rv);
        deps_call_matched(s, b, ci, sv, file);
        return;
    }
    if (rv) { /* a duplicate offset: the earlier one was never claimed */
        s->res->unmatched_bytes += rv->sv.bytes;
        free(rv);
        deps_map_del(&s->rendezvous, key);
    }
    rv = calloc(1, sizeof *rv);
    if (!rv || deps_map_put(&s->rendezvous, key, rv) != 0) {
        free(rv);
        deps_state_fail(s, "out of memory");
        return;
    }
    rv->sv = *sv;
    rv->callee_file = file;
}

void deps_call_decide_served(struct deps_state *s, struct deps_end *e)
{
    if (e->peer == DEPS_PEER_UNKNOWN)
        return;
    e->served_last = NULL;
    while (e->served) {
        struct deps_served *sv = e->served;
        e->served = sv->next;
        if (e->peer == DEPS_PEER_UNTRACED)
            deps_block_schedule_push(s, sv);
        else
            deps_call_served(s, sv, e->file);
        free(sv);
        deps_end_unref(s, e);
    }
    /* calls that waited for this decision resolve now (the end is kept
     * alive by each call's reference) */
    struct deps_waiter *w = e->waiters;
    e->waiters = NULL;
    while (w) {
        struct deps_waiter *next = w->next;
        struct deps_block *b = w->b;
        uint32_t ci = w->ci;
        free(w);
        w = next;
        if (s->failed || b->calls[ci].state != DEPS_CALL_WAIT_PEER)
            continue;
        if (deps_call_resolve(s, b, ci, 0) && --b->unresolved == 0)
            deps_block_emit(s, b);
    }
}

/* One more external call to host, counted for the warning that names the
 * peers (docs/preplay-analyze.md); its peer's entry, or NULL (the state
 * has failed). */
static struct deps_external_peer *deps_call_count_external(struct deps_state *s, const char *host)
{
    uint64_t key = 1469598103934665603ull; /* FNV-1a of the text, probed on collision */
    for (const char *p = host; *p; p++)
        key = (key ^ (uint8_t)*p) * 1099511628211ull;
    struct deps_external_peer *e;
    while ((e = deps_map_get(&s->external_peers, key)) && strcmp(e->host, host) != 0)
        key = deps_map_mix(key, 1);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e || deps_map_put(&s->external_peers, key, e) != 0) {
            free(e);
            deps_state_fail(s, "out of memory");
            return NULL;
        }
        snprintf(e->host, sizeof e->host, "%s", host);
    }
    e->calls++;
    return e;
}

/* Call c becomes an EXTERNAL op; returns its peer's entry (or NULL). */
static struct deps_external_peer *deps_call_to_external(struct deps_state *s, struct deps_block *b,
                                                        struct deps_call *c)
{
    struct plan_op *op = &b->ops[c->op];
    char host[96];
    deps_end_addr_text(c->end, host, sizeof host);
    if (!c->end->external_host) /* the address in the plan, once per end */
        c->end->external_host = deps_state_literal(s, host);
    struct deps_external_peer *peer = deps_call_count_external(s, host);
    op->kind = PLAN_OP_EXTERNAL;
    op->a.external.host = c->end->external_host;
    op->a.external.sent = c->sent;
    op->a.external.received = c->received;
    op->recorded_ns = c->t1_raw > c->t0_raw ? c->t1_raw - c->t0_raw : 0;
    c->state = DEPS_CALL_DONE;
    s->res->externals++;
    return peer;
}

int deps_call_resolve(struct deps_state *s, struct deps_block *b, uint32_t ci, int final)
{
    struct deps_call *c = &b->calls[ci];
    struct deps_end *e = c->end;
    if (e->is_db) {
        b->ops[c->op].kind = 0; /* the DB events are the ops */
        c->state = DEPS_CALL_DONE;
        return 1;
    }
    if (e->peer == DEPS_PEER_UNKNOWN && !final) {
        struct deps_waiter *w = malloc(sizeof *w);
        if (!w) {
            deps_state_fail(s, "out of memory");
            return 1;
        }
        w->b = b;
        w->ci = ci;
        w->next = e->waiters;
        e->waiters = w;
        c->state = DEPS_CALL_WAIT_PEER;
        return 0;
    }
    if (e->peer != DEPS_PEER_TRACED) {
        s->untraced_calls++;
        struct deps_external_peer *peer = deps_call_to_external(s, b, c);
        /* a DB server is told by its greeting (tracer/preload/db_greeting.c)
         * on the connections the trace holds from their connect() on */
        int stream = e->proto == TRACE_PROTO_TCP || e->proto == TRACE_PROTO_UNIX_STREAM;
        if (peer && stream && !e->connected)
            peer->unsure = 1;
        return 1;
    }
    uint64_t key = deps_call_rv_key(e->peer_gid, c->out_off);
    struct deps_rv *rv = deps_map_get(&s->rendezvous, key);
    if (rv && !rv->is_call) {
        deps_map_del(&s->rendezvous, key);
        struct deps_served sv = rv->sv;
        uint32_t f = rv->callee_file;
        free(rv);
        c->callee = sv.block;
        c->state = DEPS_CALL_DONE;
        s->res->calls++;
        deps_call_skew_note(s, b, c, &sv, f);
        return 1;
    }
    if (final) {
        s->res->unmatched_bytes += c->sent + c->received;
        deps_call_to_external(s, b, c);
        return 1;
    }
    if (rv) { /* two calls at one offset: keep the newer */
        s->res->unmatched_bytes += rv->b->calls[rv->ci].sent;
        free(rv);
        deps_map_del(&s->rendezvous, key);
    }
    rv = calloc(1, sizeof *rv);
    if (!rv || deps_map_put(&s->rendezvous, key, rv) != 0) {
        free(rv);
        deps_state_fail(s, "out of memory");
        return 1;
    }
    rv->is_call = 1;
    rv->b = b;
    rv->ci = ci;
    c->state = DEPS_CALL_WAIT_CALLEE;
    return 0;
}

void deps_call_give_up(struct deps_state *s, struct deps_block *b, struct deps_call *c)
{
    uint64_t key = deps_call_rv_key(c->end->peer_gid, c->out_off);
    struct deps_rv *rv = deps_map_del(&s->rendezvous, key);
    free(rv);
    s->res->unmatched_bytes += c->sent + c->received;
    deps_call_to_external(s, b, c);
}

uint64_t deps_call_unclaimed_bytes(const struct deps_state *s)
{
    uint64_t bytes = 0;
    for (size_t j = 0; j < s->rendezvous.cap; j++) {
        const struct deps_rv *rv = s->rendezvous.slots[j].value;
        if (rv && !rv->is_call)
            bytes += rv->sv.bytes;
    }
    return bytes;
}
