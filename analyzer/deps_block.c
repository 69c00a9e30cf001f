/* deps_block.c - the block lifecycle and the held-block heap. A block is
 * what the serving thread did between the request's first receive and the
 * response's last send; it ends when the same end starts a new request, is
 * closed, reaches EOF, or the thread starts a request on another end; at the
 * end of the recording, events after the last send are cut off. A block is
 * written when all its calls are resolved (callees first, as the plan
 * writer requires); until then it is held, in a min-heap by start. Front-end
 * requests (ends whose peer is untraced) go to the schedule, a min-heap by
 * arrival flushed up to the oldest request still undecided. Never keeps a
 * block's events after it is written; never writes a block whose calls are
 * unresolved. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "deps_block.h"
#include "deps_call.h"
#include "deps_end.h"
#include "deps_outside.h"
#include "grow_array.h"

struct plan_op *deps_block_op_add(struct deps_state *s, struct deps_block *b, uint8_t kind,
                                  uint8_t op_code, uint64_t recorded_ns)
{
    if (b->nops == b->capops) {
        struct plan_op *n = deps_state_grow(s, b->ops, &b->capops, sizeof *n);
        if (!n)
            return NULL;
        b->ops = n;
    }
    struct plan_op *op = &b->ops[b->nops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->op = op_code;
    op->recorded_ns = recorded_ns;
    return op;
}

struct plan_op *deps_block_sockopt_op(struct deps_state *s, struct deps_block *b, int32_t level,
                                      int32_t name, int64_t value)
{
    struct plan_op *o = deps_block_op_add(s, b, PLAN_OP_SOCKOPT, 0, 0);
    if (o) {
        o->a.sockopt.level = level;
        o->a.sockopt.name = name;
        o->a.sockopt.value = value;
    }
    return o;
}

void deps_block_free(struct deps_block *b)
{
    for (uint32_t i = 0; i < b->ncalls; i++)
        free(b->calls[i].segs);
    free(b->calls);
    free(b->ops);
    free(b);
}

/* Finished blocks go to a bounded pool with their op and call arrays, so a
 * steady stream of requests allocates nothing per block once warm. */
static void deps_block_recycle(struct deps_state *s, struct deps_block *b)
{
    if (s->npool == DEPS_BLOCK_POOL) {
        deps_block_free(b);
        return;
    }
    for (uint32_t i = 0; i < b->ncalls; i++)
        free(b->calls[i].segs);
    s->pool[s->npool++] = b;
}

static struct deps_block *deps_block_alloc(struct deps_state *s)
{
    if (!s->npool)
        return calloc(1, sizeof(struct deps_block));
    struct deps_block *b = s->pool[--s->npool];
    struct plan_op *ops = b->ops;
    struct deps_call *calls = b->calls;
    uint32_t capops = b->capops, capcalls = b->capcalls;
    memset(b, 0, sizeof *b);
    b->ops = ops;
    b->capops = capops;
    b->calls = calls;
    b->capcalls = capcalls;
    return b;
}

/* Frees a block and drops its references on ends. */
static void deps_block_release(struct deps_state *s, struct deps_block *b)
{
    struct deps_end *e = b->end;
    for (uint32_t i = 0; i < b->ncalls; i++)
        deps_end_unref(s, b->calls[i].end);
    deps_block_recycle(s, b);
    deps_end_unref(s, e);
}

void deps_block_schedule_push(struct deps_state *s, const struct deps_served *sv)
{
    if (grow_array((void **)&s->sched, &s->capsched, s->nsched + 1, sizeof *s->sched, 256) != 0) {
        deps_state_fail(s, "out of memory");
        return;
    }
    /* min-heap by arrival */
    size_t i = s->nsched++;
    struct deps_sched x = {.arrival_c = sv->start_c};
    x.r.block = sv->block;
    x.r.label = sv->label;
    x.r.connection = sv->connection;
    x.r.session = sv->connection; /* a session = one client connection */
    x.r.think_ns = sv->think_ns;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->sched[p].arrival_c <= x.arrival_c)
            break;
        s->sched[i] = s->sched[p];
        i = p;
    }
    s->sched[i] = x;
    s->comps[sv->component].pc.is_frontend = 1;
}

void deps_block_schedule_flush(struct deps_state *s, uint64_t horizon)
{
    while (s->nsched && s->sched[0].arrival_c <= horizon && !s->failed) {
        struct deps_sched top = s->sched[0];
        struct deps_sched last = s->sched[--s->nsched];
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = i;
            uint64_t mk = last.arrival_c;
            if (l < s->nsched && s->sched[l].arrival_c < mk) {
                m = l;
                mk = s->sched[l].arrival_c;
            }
            if (r < s->nsched && s->sched[r].arrival_c < mk)
                m = r;
            if (m == i)
                break;
            s->sched[i] = s->sched[m];
            i = m;
        }
        if (s->nsched)
            s->sched[i] = last;
        top.r.arrival_ns = deps_state_since_origin(s, top.arrival_c);
        if (plan_writer_request(s->w, &top.r) != 0)
            deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        if (s->blocks_out)
            fprintf(s->blocks_out, "R\t%u\t%" PRIu64 "\t%u\t%" PRIu64 "\n", top.r.block,
                    top.r.arrival_ns, top.r.session, top.r.think_ns);
        s->res->requests++;
    }
}

/* --- held blocks: a min-heap by start, so the schedule's horizon (the
 * oldest request still undecided) is its top, not a walk over all of them */

static void deps_block_held_set(struct deps_state *s, uint32_t i, struct deps_block *b)
{
    s->held[i] = b;
    b->held_pos = i + 1;
}

static void deps_block_held_sift(struct deps_state *s, uint32_t i)
{
    struct deps_block *b = s->held[i];
    while (i > 0 && s->held[(i - 1) / 2]->start_c > b->start_c) {
        deps_block_held_set(s, i, s->held[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t mk = b->start_c;
        if (l < s->nheld && s->held[l]->start_c < mk) {
            m = l;
            mk = s->held[l]->start_c;
        }
        if (r < s->nheld && s->held[r]->start_c < mk)
            m = r;
        if (m == i)
            break;
        deps_block_held_set(s, i, s->held[m]);
        i = m;
    }
    deps_block_held_set(s, i, b);
}

static void deps_block_held_add(struct deps_state *s, struct deps_block *b)
{
    if (s->nheld == s->capheld) {
        struct deps_block **n = deps_state_grow(s, s->held, &s->capheld, sizeof *n);
        if (!n)
            return;
        s->held = n;
    }
    deps_block_held_set(s, s->nheld++, b);
    deps_block_held_sift(s, s->nheld - 1);
}

void deps_block_held_remove(struct deps_state *s, struct deps_block *b)
{
    if (!b->held_pos)
        return;
    uint32_t i = b->held_pos - 1;
    b->held_pos = 0;
    struct deps_block *last = s->held[--s->nheld];
    if (i < s->nheld) {
        deps_block_held_set(s, i, last);
        deps_block_held_sift(s, i);
    }
}

/* Drops removed ops in place (their kind is 0: DB connections' calls) and
 * gathers the CALL ops' segments in op order, renumbered; *nops is the
 * compacted count. 0, or -1 when out of memory (the state has failed). */
static int deps_block_compact(struct deps_state *s, struct deps_block *b,
                              struct plan_segment **segs_out, uint32_t *nsegs_out, uint32_t *nops)
{
    struct plan_segment *segs = NULL;
    uint32_t nsegs = 0, capsegs = 0;
    uint32_t n = 0;
    uint32_t ci = 0;
    for (uint32_t i = 0; i < b->nops; i++) {
        struct plan_op op = b->ops[i];
        struct deps_call *c = NULL;
        while (ci < b->ncalls && b->calls[ci].op < i)
            ci++;
        if (ci < b->ncalls && b->calls[ci].op == i)
            c = &b->calls[ci];
        if (!op.kind)
            continue;
        if (op.kind == PLAN_OP_CALL && c) {
            op.a.call.callee_block = c->callee;
            op.a.call.first_segment = nsegs;
            op.a.call.nsegments = c->nsegs;
            op.recorded_ns = c->t1_raw > c->t0_raw ? c->t1_raw - c->t0_raw : 0;
            while (nsegs + c->nsegs > capsegs) {
                struct plan_segment *ns = deps_state_grow(s, segs, &capsegs, sizeof *ns);
                if (!ns) {
                    free(segs);
                    return -1;
                }
                segs = ns;
            }
            memcpy(segs + nsegs, c->segs, c->nsegs * sizeof *segs);
            nsegs += c->nsegs;
        }
        b->ops[n++] = op;
    }
    *segs_out = segs;
    *nsegs_out = nsegs;
    *nops = n;
    return 0;
}

/* The block's line of the --blocks TSV: B, plan id, component, pid, tid,
 * start, end, flags, callees, label, worker, start offset, socket options,
 * NODELAY calls, request and response bytes (its RECV and SEND ops),
 * post-response tail time
 * (tests/analyze/check-blocks.py reads it). */
static void deps_block_write_tsv(struct deps_state *s, const struct deps_block *b, uint32_t id,
                                 const struct plan_block *pb)
{
    const struct trace_header *h = s->in.files[b->end->file].hdr;
    fprintf(s->blocks_out, "B\t%u\t%s\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\t%u\t", id,
            s->comps[b->component].name, h->pid, b->th->tid, b->start_raw, b->last_send_end_raw,
            b->flags);
    int any = 0;
    for (uint32_t i = 0; i < b->ncalls; i++)
        if (b->calls[i].state == DEPS_CALL_DONE && b->calls[i].callee != UINT32_MAX) {
            fprintf(s->blocks_out, "%s%u", any ? "," : "", b->calls[i].callee);
            any = 1;
        }
    const char *label = deps_map_get(&s->label_text, b->label);
    fprintf(s->blocks_out, "%s\t%s\t%u\t%" PRIu64 "\t", any ? "" : "-", label ? label : "-",
            pb->worker, pb->start_ns);
    uint32_t nodelay_calls = 0;
    uint64_t recv_bytes = 0, send_bytes = 0;
    any = 0;
    for (uint32_t i = 0; i < pb->nops; i++) {
        const struct plan_op *o = &b->ops[i];
        if (o->kind == PLAN_OP_RECV)
            recv_bytes += o->a.net.bytes;
        else if (o->kind == PLAN_OP_SEND)
            send_bytes += o->a.net.bytes;
        if (o->kind == PLAN_OP_CALL && (o->flags & PLAN_CALL_NODELAY))
            nodelay_calls++;
        if (o->kind == PLAN_OP_SOCKOPT) {
            fprintf(s->blocks_out, "%s%d:%d=%" PRId64, any ? "," : "", o->a.sockopt.level,
                    o->a.sockopt.name, o->a.sockopt.value);
            any = 1;
        }
    }
    fprintf(s->blocks_out, "%s\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", any ? "" : "-",
            nodelay_calls, recv_bytes, send_bytes, pb->tail_ns);
}

/* Written block b (plan id `id`) is served on its end: it is freed, and what
 * the end's peer makes of it is decided now (schedule, rendezvous) or, while
 * the peer is unknown, when it is known (the end's served list). */
static void deps_block_hand_over(struct deps_state *s, struct deps_block *b, uint32_t id)
{
    struct deps_served sv = {.gid = b->end->gid,
                             .in_off = b->in_off,
                             .block = id,
                             .start_c = b->start_c,
                             .end_c = b->last_send_end_c,
                             .start_raw = b->start_raw,
                             .label = b->label,
                             .bytes = b->bytes_at_send,
                             .component = b->component};
    struct deps_end *e = b->end;
    if (!e->connection)
        e->connection = ++s->next_connection;
    sv.connection = e->connection;
    sv.think_ns = b->think_ns;
    e->refs++; /* keep e while deciding below */
    deps_block_release(s, b);
    if (e->peer == DEPS_PEER_UNTRACED) {
        deps_block_schedule_push(s, &sv);
    } else if (e->peer == DEPS_PEER_TRACED) {
        deps_call_served(s, &sv, e->file);
    } else {
        struct deps_served *p = malloc(sizeof *p);
        /* the served entry takes over the reference taken above */
        if (!p) {
            deps_state_fail(s, "out of memory");
        } else {
            *p = sv;
            p->next = NULL;
            if (e->served_last)
                e->served_last->next = p;
            else
                e->served = p;
            if (!e->served_last || sv.start_c < e->served_min_c)
                e->served_min_c = sv.start_c;
            e->served_last = p;
            return;
        }
    }
    deps_end_unref(s, e);
}

void deps_block_emit(struct deps_state *s, struct deps_block *b)
{
    deps_block_held_remove(s, b);
    struct plan_segment *segs = NULL;
    uint32_t nsegs = 0, n = 0;
    if (deps_block_compact(s, b, &segs, &nsegs, &n) != 0)
        return;
    struct plan_block pb = {.component = s->comps[b->component].plan_id,
                            .label = b->label,
                            .nops = n,
                            .flags = b->flags,
                            .recorded_ns = b->last_send_end_raw - b->start_raw,
                            .worker = b->th->worker,
                            .start_ns = deps_state_since_origin(s, b->start_c),
                            .tail_ns = b->tail_ns};
    uint32_t id = plan_writer_block(s->w, &pb, b->ops, segs, nsegs);
    free(segs);
    if (id == UINT32_MAX) {
        deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        deps_block_release(s, b);
        return;
    }
    s->res->blocks++;
    s->res->covered_events += b->covered;
    for (uint32_t i = 0; i < n; i++)
        if (b->ops[i].kind == PLAN_OP_CPU)
            s->res->in_cpu_ns += b->ops[i].a.cpu_ns;
    if (s->blocks_out)
        deps_block_write_tsv(s, b, id, &pb);
    deps_block_hand_over(s, b, id);
}

/* Drops the block's calls from index `from` on (a cut). */
static void deps_block_cut_calls(struct deps_state *s, struct deps_block *b, uint32_t from)
{
    for (uint32_t i = from; i < b->ncalls; i++) {
        if (b->calls[i].end->call_block == b)
            b->calls[i].end->call_block = NULL;
        deps_end_unref(s, b->calls[i].end);
        free(b->calls[i].segs);
    }
    b->ncalls = from;
}

/* CPU time of the block's ops from index `from` on. */
static uint64_t deps_block_cpu_from(const struct deps_block *b, uint32_t from)
{
    uint64_t ns = 0;
    for (uint32_t i = from; i < b->nops; i++)
        if (b->ops[i].kind == PLAN_OP_CPU)
            ns += b->ops[i].a.cpu_ns;
    return ns;
}

/* Block b is over, its tail included: its calls resolve, and it is written
 * or held. */
static void deps_block_complete(struct deps_state *s, struct deps_block *b)
{
    b->finished = 1;
    b->th->blocks++;
    s->res->tail_events += b->covered - b->covered_at_send;
    s->res->tail_cpu_ns += deps_block_cpu_from(b, b->nops_at_send);
    /* never give a call up here, even at the end: its callee may be one of
     * the blocks the final checkpoint finishes after this one; the
     * checkpoint's held-block pass decides what is still unresolved */
    for (uint32_t i = 0; i < b->ncalls; i++) {
        if (b->calls[i].end->call_block == b)
            b->calls[i].end->call_block = NULL;
        if (!deps_call_resolve(s, b, i, 0))
            b->unresolved++;
    }
    if (b->unresolved == 0) {
        deps_block_emit(s, b);
        return;
    }
    deps_block_held_add(s, b);
}

void deps_block_seal_tail(struct deps_state *s, struct deps_thread *t, int final)
{
    struct deps_block *b = t->tail;
    if (!b)
        return;
    t->tail = NULL;
    if (final) {
        /* the recording ended before the thread took another request: what
         * followed the finish may be shutdown work, so it is cut off */
        s->res->outside.cpu_ns[ANALYZE_OUT_SHUTDOWN] += deps_block_cpu_from(b, b->nops_at_finish);
        s->res->outside.events[ANALYZE_OUT_SHUTDOWN] += b->covered - b->covered_at_finish;
        b->nops = b->nops_at_finish;
        deps_block_cut_calls(s, b, b->ncalls_at_finish);
        b->covered = b->covered_at_finish;
        t->win_end = b->th_events_at_finish;
    } else {
        if (t->last_end_raw > b->finish_raw)
            b->finish_raw = t->last_end_raw;
        t->win_end = t->res_events;
    }
    b->tail_ns = b->finish_raw > b->last_send_end_raw ? b->finish_raw - b->last_send_end_raw : 0;
    deps_block_complete(s, b);
}

void deps_block_seal_idle_tails(struct deps_state *s, uint64_t *horizon)
{
    for (uint32_t f = 0; f < s->in.nfiles && !s->failed; f++)
        for (uint32_t i = 0; i < s->procs[f].nall; i++) {
            struct deps_thread *t = s->procs[f].all[i];
            if (!t->tail)
                continue;
            if (s->now_c > t->tail->finish_c + s->opt->grace_ns)
                deps_block_seal_tail(s, t, 0); /* idle: its tail is over */
            else if (t->tail->start_c < *horizon)
                *horizon = t->tail->start_c;
        }
}

void deps_block_finish(struct deps_state *s, struct deps_end *e, int final)
{
    struct deps_block *b = e->cur;
    if (!b)
        return;
    e->cur = NULL;
    if (!b->sends) { /* never answered: no block */
        s->res->dropped_blocks++;
        for (uint32_t i = 0; i < b->ncalls; i++)
            if (b->calls[i].end->call_block == b)
                b->calls[i].end->call_block = NULL;
        deps_block_release(s, b);
        return;
    }
    struct deps_thread *t = b->th;
    s->finish_epoch++;
    if (final) {
        /* the recording ended with the block open: what followed the last
         * send may be anything up to the end (shutdown), so it is cut off */
        s->res->outside.cpu_ns[ANALYZE_OUT_SHUTDOWN] += deps_block_cpu_from(b, b->nops_at_send);
        s->res->outside.events[ANALYZE_OUT_SHUTDOWN] += b->covered - b->covered_at_send;
        b->nops = b->nops_at_send;
        deps_block_cut_calls(s, b, b->ncalls_at_send);
        b->covered = b->covered_at_send;
        if (b->th_events_at_send > t->win_end)
            t->win_end = b->th_events_at_send;
        deps_block_complete(s, b);
        return;
    }
    /* the post-response tail (after the last send, until the connection
     * serves its next request, ends, or the thread takes another request)
     * stays: it is work of this request that keeps the worker busy
     * (logging, a runtime's lock handoff before the next read) without
     * delaying this response, and the replay keeps it so */
    t->win_end = t->res_events;
    b->finish_raw = t->last_end_raw > b->last_send_end_raw ? t->last_end_raw : b->last_send_end_raw;
    if (t->event_loop) { /* a loop's next events are other requests' */
        b->tail_ns = b->finish_raw - b->last_send_end_raw;
        deps_block_complete(s, b);
        return;
    }
    /* a worker goes on with this request's tail until it takes the next
     * (php-fpm logs to its stderr after closing the FastCGI connection and
     * before accepting the next one): the block waits for it */
    deps_block_seal_tail(s, t, 0);
    b->nops_at_finish = b->nops;
    b->ncalls_at_finish = b->ncalls;
    b->covered_at_finish = b->covered;
    b->th_events_at_finish = t->res_events;
    b->finish_c = s->now_c;
    t->tail = b;
}

struct deps_block *deps_block_start(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                                    const struct trace_event *ev, uint64_t common)
{
    struct deps_block *b = deps_block_alloc(s);
    if (!b) {
        deps_state_fail(s, "out of memory");
        return NULL;
    }
    deps_block_seal_tail(s, t, 0); /* the thread takes the next request */
    b->end = e;
    e->refs++;
    b->th = t;
    b->component = s->procs[e->file].component;
    b->label = e->pending_label;
    e->pending_label = 0;
    b->in_off = e->in_off;
    /* The request arrived by the end of the first receive that returned its
     * bytes: a blocking receive (keep-alive idle, a thread per connection)
     * began long before the client sent anything. A server busy with other
     * requests reads it late: the bytes had waited queued_us in the kernel
     * (tracer, TCP connections), not before the previous response on the
     * connection ended and at most DEPS_QUEUED_MAX_NS. */
    uint64_t end_raw = ev->ts_ns + ev->dur_ns;
    uint64_t queued = trace_net_queued_ns(ev);
    if (queued > DEPS_QUEUED_MAX_NS)
        queued = DEPS_QUEUED_MAX_NS;
    if (queued > end_raw || queued > common)
        queued = 0;
    if (queued && e->last_resp_end && end_raw - queued < e->last_resp_end)
        queued = end_raw > e->last_resp_end ? end_raw - e->last_resp_end : 0;
    b->start_raw = end_raw - queued;
    b->start_c = common - queued;
    b->think_ns =
        e->last_resp_end && b->start_raw > e->last_resp_end ? b->start_raw - e->last_resp_end : 0;
    if (!s->have_origin) {
        s->have_origin = 1;
        s->origin_c = b->start_c;
    }
    if (t->violating)
        b->flags |= PLAN_BLOCK_VIOLATION;
    e->cur = b;
    /* the response's socket options as set before the request: the
     * replayer applies them to its connection before answering */
    if ((e->nodelay_set &&
         !deps_block_sockopt_op(s, b, TRACE_IPPROTO_TCP, TRACE_TCP_NODELAY, e->nodelay)) ||
        (e->cork_set && !deps_block_sockopt_op(s, b, TRACE_IPPROTO_TCP, TRACE_TCP_CORK, e->cork)))
        return NULL;
    if (e->opts_thread == t)
        b->covered += e->opts_between_requests;
    e->opts_between_requests = 0;
    e->opts_thread = NULL;
    deps_outside_block_start(s, t);
    if (!t->serving) {
        t->serving = 1;
        struct deps_proc *p = &s->procs[e->file];
        struct deps_component *c = &s->comps[p->component];
        if (!p->serving_threads++)
            c->serving_procs++;
        if (p->serving_threads > c->max_threads_per_proc)
            c->max_threads_per_proc = p->serving_threads;
        /* prefork processes serve with one thread each, so this numbering
         * is also the process numbering PLAN.md §5.2 asks for there */
        t->worker = c->serving_threads++;
        t->win_first = t->res_events ? t->res_events - 1 : 0; /* this receive on */
        if (!c->pc.listen_port && e->family != AF_UNIX)
            c->pc.listen_port = e->local_port;
    }
    return b;
}

struct deps_block *deps_block_of(struct deps_thread *t)
{
    struct deps_end *e = t->last_read;
    if (e && e->cur && e->cur->th == t)
        return e->cur;
    return t->tail;
}

void deps_block_cover(struct deps_thread *t, struct deps_block *b)
{
    b->covered++;
    t->covers++;
    if (t->violating) {
        t->viol_events++;
        b->flags |= PLAN_BLOCK_VIOLATION;
    }
}
