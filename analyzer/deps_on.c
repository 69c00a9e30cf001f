/* deps_on.c - the event handlers: each merged trace event (deps_input.c) in
 * turn, by type, onto the state: CONN events identify and close ends,
 * receives and sends on server ends start and answer requests, traffic on
 * client ends becomes calls, FILE, LOCK, DB, CPU and SOCKOPT events become
 * ops of the block their thread is serving; strings, files and locks get
 * their plan ids here.
 *
 * Event loops: a thread that starts a request on one end while a request
 * on another end of it is unanswered, or answers an end after reading
 * another, multiplexes connections (nginx, node, haproxy). From then on its
 * events go to the request whose descriptor they touch: receives and sends
 * on a server end to that end's request, traffic on a client end to the
 * request whose call is open on it (a new call to the request handled
 * last), and everything else (CPU, files, locks, DB) to the request it
 * handled last. Until the first interleave a loop's events are exactly
 * what the worker model gives them, so nothing is attributed twice; a
 * connection's opener names its first call only, and a worker that goes
 * back to the upstream call of a request it had left is a loop from there
 * (deps_on_left_call).
 * Model violations remain what no descriptor settles: two threads serving
 * one request, a send on an end whose request is over; they are reported,
 * their events go to the end last handled and the blocks are flagged
 * PLAN_BLOCK_VIOLATION. A loop's event no request can be named for (bytes
 * on an upstream connection with no call open) is counted, never guessed.
 * Never writes a block that silently mixes requests. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "deps_block.h"
#include "deps_end.h"
#include "deps_on.h"
#include "deps_outside.h"
#include "label_rules.h"

/* The plan's id of the string str (len bytes), 0 when the plan cannot take
 * it (the state has failed). */
static uint32_t deps_on_plan_string(struct deps_state *s, const char *str, size_t len)
{
    uint32_t pid = plan_writer_string(s->w, str, len);
    if (pid == UINT32_MAX) {
        deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return 0;
    }
    return pid;
}

/* Keeps the text of label plan string id for the --blocks TSV. */
static void deps_on_label_text(struct deps_state *s, uint32_t id, const char *str, size_t len)
{
    if (!id || deps_map_get(&s->label_text, id))
        return;
    char *copy = str ? strndup(str, len) : NULL;
    if (copy && deps_map_put(&s->label_text, id, copy) != 0)
        free(copy);
}

/* The plan string of trace string `id` of `file`, worked out once per
 * (trace, string) and kept in `cache`. As a label (as_label) it is what
 * --label rules and --drop-query make of it (label_rules_apply), and its
 * text is kept for the --blocks TSV. */
static uint32_t deps_on_cached_string(struct deps_state *s, struct deps_map *cache, uint32_t file,
                                      uint32_t id, int as_label)
{
    if (!id)
        return 0;
    uint64_t key = (uint64_t)file << 32 | id;
    void *v = deps_map_get(cache, key);
    if (v)
        return (uint32_t)(uintptr_t)v;
    uint32_t len = 0;
    const char *str = trace_reader_string(s->in.files[file].reader, id, &len);
    if (!str)
        return 0;
    size_t n = len;
    if (as_label)
        n = label_rules_apply(s->opt->label_rules, str, len, s->opt->drop_query, &str);
    uint32_t pid = deps_on_plan_string(s, str, n);
    if (as_label)
        deps_on_label_text(s, pid, str, n);
    if (pid && deps_map_put(cache, key, (void *)(uintptr_t)pid) != 0)
        deps_state_fail(s, "out of memory");
    return pid;
}

static uint32_t deps_on_string(struct deps_state *s, uint32_t file, uint32_t id)
{
    return deps_on_cached_string(s, &s->strings, file, id, 0);
}

static struct deps_file_rec *deps_on_file_seen(struct deps_state *s, uint32_t file,
                                               const struct trace_file_event *fe)
{
    if (!fe->dev && !fe->ino)
        return NULL;
    uint64_t key = deps_map_mix(deps_map_mix(s->in.files[file].host, fe->dev), fe->ino);
    struct deps_file_rec *r = deps_map_get(&s->files, key);
    if (!r) {
        char what[64];
        snprintf(what, sizeof what, "dev %" PRIu64 " ino %" PRIu64, fe->dev, fe->ino);
        if (deps_state_charge(s, file, "file", s->files.count + 1, what,
                              sizeof *r + DEPS_MAP_ENTRY_BYTES) != 0)
            return NULL;
        r = calloc(1, sizeof *r);
        if (!r || deps_map_put(&s->files, key, r) != 0) {
            free(r);
            deps_state_fail(s, "out of memory");
            return NULL;
        }
        r->initial_size = fe->file_size; /* size before the first operation seen */
    }
    return r;
}

static uint32_t deps_on_file_id(struct deps_state *s, uint32_t file,
                                const struct trace_file_event *fe)
{
    struct deps_file_rec *r = deps_on_file_seen(s, file, fe);
    if (!r)
        return UINT32_MAX;
    if (!r->plan_id) {
        struct plan_file pf = {.path = deps_on_string(s, file, fe->path_id),
                               .initial_size = r->initial_size};
        uint32_t id = plan_writer_file(s->w, &pf);
        if (id == UINT32_MAX) {
            deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
            return UINT32_MAX;
        }
        r->plan_id = id + 1;
    }
    return r->plan_id - 1;
}

static uint32_t deps_on_lock_id(struct deps_state *s, uint32_t file,
                                const struct trace_lock_event *le)
{
    int per_process = le->kind == TRACE_LOCK_MUTEX || le->kind == TRACE_LOCK_RWLOCK ||
                      le->kind == TRACE_LOCK_SEMAPHORE;
    uint64_t key = deps_map_mix(
        per_process ? (uint64_t)file : (1ull << 40) + s->in.files[file].host, le->lock_id);
    void *v = deps_map_get(&s->locks, key);
    if (v)
        return (uint32_t)(uintptr_t)v - 1;
    char what[40];
    snprintf(what, sizeof what, "lock 0x%" PRIx64, le->lock_id);
    if (deps_state_charge(s, file, "lock", s->locks.count + 1, what, DEPS_MAP_ENTRY_BYTES) != 0)
        return UINT32_MAX;
    struct plan_lock pl = {.kind = le->kind, .recorded_id = le->lock_id};
    uint32_t id = plan_writer_lock(s->w, &pl);
    if (id == UINT32_MAX) {
        deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return UINT32_MAX;
    }
    if (deps_map_put(&s->locks, key, (void *)(uintptr_t)(id + 1)) != 0)
        deps_state_fail(s, "out of memory");
    return id;
}

static struct deps_thread *deps_on_thread(struct deps_state *s, uint32_t file, uint32_t tid)
{
    struct deps_proc *p = &s->procs[file];
    if (p->last_thread && p->last_thread->tid == tid)
        return p->last_thread;
    struct deps_thread *t = deps_map_get(&p->threads, (uint64_t)tid + 1);
    if (t)
        return p->last_thread = t;
    char what[24];
    snprintf(what, sizeof what, "tid %u", tid);
    if (deps_state_charge(s, file, "thread", p->nall + 1u, what,
                          sizeof *t + sizeof *p->all + DEPS_MAP_ENTRY_BYTES) != 0)
        return NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        goto oom;
    t->file = file;
    t->tid = tid;
    /* a process started after the first request (a worker spawned under
     * load), or a thread first seen then in an older process (a thread per
     * connection): its work before its first request is spawning */
    if (s->have_origin) {
        const struct deps_input_file *in = &s->in.files[file];
        int64_t anchor_c = (int64_t)in->hdr->mono_anchor_ns + s->in.hosts[in->host].offset_ns;
        t->born_under_load = anchor_c > (int64_t)s->origin_c || tid != in->hdr->pid;
    }
    if (p->nall == p->capall) {
        struct deps_thread **na = deps_state_grow(s, p->all, &p->capall, sizeof *na);
        if (!na) {
            free(t);
            return NULL;
        }
        p->all = na;
    }
    p->all[p->nall++] = t;
    if (deps_map_put(&p->threads, (uint64_t)tid + 1, t) != 0)
        goto oom;
    return t;
oom:
    deps_state_fail(s, "out of memory");
    return NULL;
}

/* Thread t multiplexes connections: it becomes an event loop (counted
 * once per thread, for its component) and this was one switch. */
static void deps_on_loop_switch(struct deps_state *s, struct deps_thread *t)
{
    if (!t->event_loop) {
        t->event_loop = 1;
        s->comps[s->procs[t->file].component].loop_threads++;
    }
    t->loop_switches++;
}

/* Event loop t now handles the request on end e: its events that name no
 * descriptor go there (deps_block_of). */
static void deps_on_loop_handle(struct deps_state *s, struct deps_thread *t, struct deps_end *e)
{
    if (t->last_read == e)
        return;
    if (t->last_read)
        deps_end_unref(s, t->last_read);
    t->last_read = e;
    e->refs++;
}

static void deps_on_violation(struct deps_state *s, struct deps_thread *t, struct deps_end *other)
{
    if (!t->violating) {
        t->violating = 1;
        s->res->violations++;
    }
    t->viol_conns++;
    if (other && other->cur)
        other->cur->flags |= PLAN_BLOCK_VIOLATION;
}

/* A RECV or SEND of the request/response itself, counted and covered. */
static struct plan_op *deps_on_message_op(struct deps_state *s, struct deps_thread *t,
                                          struct deps_block *b, uint8_t kind,
                                          const struct trace_event *ev)
{
    struct plan_op *op = deps_block_op_add(s, b, kind, 0, ev->dur_ns);
    if (!op)
        return NULL;
    op->a.net.bytes = (uint64_t)ev->u.net.result;
    b->bytes += (uint64_t)ev->u.net.result;
    deps_block_cover(t, b);
    return op;
}

/* A worker serves one connection at a time: thread t starting a request on
 * end e while another end of it has an unanswered request is interleaving.
 * Then the new block starts; -1 when out of memory (the state has failed). */
static int deps_on_request_start(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                                 const struct trace_event *ev, uint64_t common)
{
    struct deps_end *prev = t->last_read;
    if (prev && prev != e && prev->cur && prev->cur->th == t) {
        if (!prev->cur->sends) {
            deps_on_loop_switch(s, t); /* prev stays open, served by descriptor */
        } else if (t->event_loop) {
            /* answered; in a loop its later sends are its own (by descriptor) */
        } else {
            /* answered, but maybe not completely: an event-driven
             * server writes what fits and comes back later. The
             * block stays open until its connection serves its next
             * request, ends or closes; a send on it from this thread
             * before then is an interleave and flags both blocks. */
            t->left_gid = prev->gid;
        }
    }
    if (!deps_block_start(s, t, e, ev, common))
        return -1;
    if (t->violating)
        e->cur->flags |= PLAN_BLOCK_VIOLATION;
    return 0;
}

/* A receive on a server end: part of a request, the start of the next one
 * (keep-alive), or EOF. */
static void deps_on_server_recv(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                                const struct trace_event *ev, uint64_t common)
{
    int64_t n = ev->u.net.result;
    if (n <= 0) {
        if (e->cur && e->cur->th == t && (e->cur->sends || t->event_loop))
            deps_block_cover(t, e->cur); /* a read for the next request: the tail;
                                          * a loop's read that found nothing yet */
        if (n == 0)
            deps_block_finish(s, e, 0); /* EOF: the client is done */
        return;
    }
    if (e->shut_wr && e->cur && e->cur->th == t && e->cur->sends) {
        /* bytes read after answering and shutting down the sending side
         * (php-fpm drains FastCGI's last record): the tail, no request */
        deps_block_cover(t, e->cur);
        e->in_off += (uint64_t)n;
        return;
    }
    if (e->cur && e->cur->sends)
        deps_block_finish(s, e, 0); /* keep-alive: the next request */
    int starts_block = !e->cur;
    if (starts_block && deps_on_request_start(s, t, e, ev, common) != 0)
        return;
    if (t->left_gid == e->gid)
        t->left_gid = 0;
    if (t->last_read != e) {
        if (t->last_read)
            deps_end_unref(s, t->last_read);
        t->last_read = e;
        e->refs++;
    }
    struct deps_block *b = e->cur;
    if (b->th != t) { /* another thread reads this request */
        deps_on_violation(s, t, e);
        deps_on_violation(s, b->th, e);
    }
    struct plan_op *op = deps_on_message_op(s, t, b, PLAN_OP_RECV, ev);
    if (!op)
        return;
    /* The block starts when this receive returns (deps_block_start):
     * its time before that was the wait for the request (keep-alive
     * idle, a pooled connection between calls: up to seconds), not
     * time of the block. Later receives of the request keep theirs. */
    if (starts_block)
        op->recorded_ns = 0;
    if ((uint64_t)n == ev->u.net.size)
        op->flags |= PLAN_RECV_FULL; /* no client write boundary seen here */
    e->in_off += (uint64_t)n;
}

/* A send on a server end: (part of) the response; the block remembers where
 * its last send left it, for a cut at the end of the recording. */
static void deps_on_server_send(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                                const struct trace_event *ev, uint64_t common)
{
    int64_t n = ev->u.net.result;
    if (n <= 0) {
        if (t->event_loop && e->cur && e->cur->th == t)
            deps_block_cover(t, e->cur); /* a loop's write that found the buffer full */
        return;
    }
    e->out_off += (uint64_t)n;
    struct deps_block *b = e->cur;
    if (!b) {
        if (t->left_gid == e->gid)
            deps_on_violation(s, t, NULL); /* answered an end it had left: late interleave */
        s->res->unmatched_bytes += 0;
        return;
    }
    if (b->th != t) {
        deps_on_violation(s, t, e);
        deps_on_violation(s, b->th, e);
    } else if (t->last_read != e && t->last_read && t->last_read->cur &&
               t->last_read->cur->th == t) {
        deps_on_loop_switch(s, t); /* answering X after reading Y */
    }
    if (t->event_loop && b->th == t)
        deps_on_loop_handle(s, t, e);
    struct plan_op *op = deps_on_message_op(s, t, b, PLAN_OP_SEND, ev);
    if (!op)
        return;
    if (ev->flags & TRACE_F_MSG_MORE)
        op->flags |= PLAN_SEG_MORE;
    b->sends++;
    if (t->violating || b->th != t)
        b->flags |= PLAN_BLOCK_VIOLATION;
    b->nops_at_send = b->nops;
    b->ncalls_at_send = b->ncalls;
    b->covered_at_send = b->covered;
    b->bytes_at_send = b->bytes;
    b->th_events_at_send = t->res_events;
    b->last_send_end_raw = ev->ts_ns + ev->dur_ns;
    b->last_send_end_c = common;
    e->last_resp_end = b->last_send_end_raw;
}

/* The block event loop t's traffic on client end e belongs to: the block
 * whose call is open on e (t then handles that request), else, for a send
 * that starts a new call, the request t handled last. NULL, counted as
 * unattributed, for bytes received with no call open. */
static struct deps_block *deps_on_loop_call_block(struct deps_state *s, struct deps_thread *t,
                                                  struct deps_end *e, int send)
{
    struct deps_block *cb = e->call_block;
    if (cb && cb->th == t && !cb->finished && e->call_index < cb->ncalls &&
        !(send && cb->calls[e->call_index].received)) {
        deps_on_loop_handle(s, t, cb->end);
        return cb;
    }
    if (send && e->opener_conn) { /* the first call: whoever connected */
        struct deps_end *o = deps_map_get(&s->procs[t->file].ends, e->opener_conn);
        e->opener_conn = 0;
        if (o && o->cur && o->cur->th == t) {
            deps_on_loop_handle(s, t, o);
            return o->cur;
        }
    }
    if (send)
        return deps_block_of(t);
    t->loop_unattributed++;
    return NULL;
}

/* Whether traffic on client end e continues the call of another request
 * than the one worker t serves now: a server that answered part of a
 * response, read the next request on another connection (left_gid, see
 * deps_on_request_start) and then reads more of the first one's upstream
 * answer (nginx streaming a large proxied body). Such a thread multiplexes
 * connections; it is an event loop from here on, so those bytes stay with
 * the call they continue instead of starting a call of the new request
 * that no callee ever answers. */
static int deps_on_left_call(struct deps_thread *t, const struct deps_end *e, int send)
{
    const struct deps_block *cb = e->call_block;
    return cb && cb->th == t && !cb->finished && e->call_index < cb->ncalls &&
           !(send && cb->calls[e->call_index].received) && cb != deps_block_of(t);
}

static void deps_on_client_net(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                               const struct trace_event *ev, uint64_t common)
{
    int64_t n = ev->u.net.result;
    int send = ev->op == TRACE_NET_SEND;
    if (n <= 0) {
        /* a loop's read or write on its upstream that found nothing to do;
         * a worker's read of its upstream's end-of-file (nginx reading
         * php-fpm's close after the FastCGI answer): the request's */
        struct deps_block *cb = t->event_loop ? e->call_block : deps_block_of(t);
        if (cb && cb->th == t && !cb->finished)
            deps_block_cover(t, cb);
        return;
    }
    uint64_t off = send ? e->out_off : e->in_off;
    if (send)
        e->out_off += (uint64_t)n;
    else
        e->in_off += (uint64_t)n;
    if (!t->event_loop && deps_on_left_call(t, e, send))
        deps_on_loop_switch(s, t); /* back to a request it had left: it multiplexes */
    struct deps_block *b =
        t->event_loop ? deps_on_loop_call_block(s, t, e, send) : deps_block_of(t);
    /* the opener names the first call's request only: a worker that
     * became a loop after that call must not hand a later call on this
     * end (a pooled upstream connection) to the opener's request */
    if (send)
        e->opener_conn = 0;
    if (!b)
        return;
    deps_block_cover(t, b);
    if (e->is_db)
        return; /* covered; the DB events carry the work */
    struct deps_call *c = NULL;
    if (e->call_block == b && e->call_index < b->ncalls) {
        c = &b->calls[e->call_index];
        if (send && c->received)
            c = NULL; /* a send after the response began: a new call */
    }
    if (!c) {
        if (b->ncalls == b->capcalls) {
            struct deps_call *nc = deps_state_grow(s, b->calls, &b->capcalls, sizeof *nc);
            if (!nc)
                return;
            b->calls = nc;
        }
        c = &b->calls[b->ncalls];
        memset(c, 0, sizeof *c);
        struct plan_op *op = deps_block_op_add(s, b, PLAN_OP_CALL, 0, 0);
        if (!op)
            return;
        if (e->nodelay_set && e->nodelay)
            op->flags |= PLAN_CALL_NODELAY;
        c->op = b->nops - 1;
        c->end = e;
        e->refs++;
        c->callee = UINT32_MAX;
        c->out_off = send ? off : e->out_off;
        c->t0_raw = ev->ts_ns;
        c->t0_c = common - ev->dur_ns;
        e->call_block = b;
        e->call_index = b->ncalls++;
    }
    if (c->nsegs == c->capsegs) {
        struct plan_segment *ns = deps_state_grow(s, c->segs, &c->capsegs, sizeof *ns);
        if (!ns)
            return;
        c->segs = ns;
    }
    struct plan_segment *sg = &c->segs[c->nsegs++];
    sg->dir = send ? 0 : 1;
    sg->flags = (ev->flags & TRACE_F_MSG_MORE) ? PLAN_SEG_MORE : 0;
    sg->bytes = (uint32_t)n;
    if (send)
        c->sent += (uint64_t)n;
    else
        c->received += (uint64_t)n;
    c->t1_raw = ev->ts_ns + ev->dur_ns;
    c->t1_c = common;
}

/* Options set on descriptor fd before its connection existed. */
static void deps_on_pending_opts(struct deps_state *s, uint32_t file, struct deps_end *e,
                                 const struct trace_event *ev)
{
    struct deps_map *m = &s->procs[file].pending_opts;
    if (ev->u.conn.fd < 0 || !m->count)
        return;
    struct deps_pending_opt *po = deps_map_del(m, (uint64_t)ev->u.conn.fd + 1);
    if (!po)
        return;
    deps_state_uncharge(s, sizeof *po + DEPS_MAP_ENTRY_BYTES);
    if (po->ts_ns <= ev->ts_ns + ev->dur_ns) { /* else it belongs to a later socket */
        if (po->nodelay_set && !e->nodelay_set) {
            e->nodelay_set = 1;
            e->nodelay = po->nodelay;
        }
        if (po->cork_set && !e->cork_set) {
            e->cork_set = 1;
            e->cork = po->cork;
        }
    }
    free(po);
}

static void deps_on_conn(struct deps_state *s, uint32_t file, const struct trace_event *ev)
{
    const struct trace_conn_event *c = &ev->u.conn;
    if (!c->conn_id)
        return;
    struct deps_end *e = deps_end_get(s, file, c->conn_id);
    if (!e)
        return;
    switch (ev->op) {
    case TRACE_CONN_ACCEPT:
    case TRACE_CONN_CONNECT:
    case TRACE_CONN_IDENT:
        if (ev->op == TRACE_CONN_ACCEPT) {
            e->accepted = 1;
            /* the accepting thread's post-response tail is over, and what
             * it does until the request's first read is its accept path */
            struct deps_thread *t = deps_map_get(&s->procs[file].threads, (uint64_t)ev->tid + 1);
            if (t) {
                deps_block_seal_tail(s, t, 0);
                deps_outside_accept(t);
            }
        }
        if (ev->op == TRACE_CONN_CONNECT) {
            e->connected = 1;
            struct deps_thread *t = deps_map_get(&s->procs[file].threads, (uint64_t)ev->tid + 1);
            struct deps_block *b = t ? deps_block_of(t) : NULL;
            e->opener_conn = b ? b->end->conn_id : 0;
        }
        deps_on_pending_opts(s, file, e, ev);
        if (c->family) {
            e->family = c->family;
            e->proto = c->proto;
            memcpy(e->local_addr, c->local_addr, 16);
            memcpy(e->remote_addr, c->remote_addr, 16);
            e->local_port = c->local_port;
            e->remote_port = c->remote_port;
            e->unix_inode = c->unix_inode;
            e->unix_peer_inode = c->unix_peer_inode;
            e->has_ident = 1;
            deps_end_identify(s, e);
        }
        break;
    case TRACE_CONN_SHUTDOWN:
        /* an answered request whose server only stops sending (SHUT_WR)
         * keeps its block until EOF or close: it reads the rest first */
        if (c->result == SHUT_WR && e->accepted && e->cur && e->cur->sends)
            e->shut_wr = 1;
        else
            deps_block_finish(s, e, 0);
        break;
    case TRACE_CONN_CLOSE:
        deps_block_finish(s, e, 0);
        deps_end_close(s, file, e);
        break;
    default:
        break;
    }
}

static void deps_on_db(struct deps_state *s, uint32_t file, struct deps_thread *t,
                       const struct trace_event *ev)
{
    const struct trace_db_event *d = &ev->u.db;
    struct deps_end *e = d->db_conn_id ? deps_end_get(s, file, d->db_conn_id) : NULL;
    if (e && !e->is_db) {
        e->is_db = 1;
        if (e->has_ident) {
            char addr[96];
            deps_end_addr_text(e, addr, sizeof addr);
            uint64_t k = deps_map_mix((uint64_t)s->in.files[file].host, e->remote_port);
            k = deps_map_mix(k, e->family == AF_UNIX ? e->unix_peer_inode : 0);
            if (e->family != AF_UNIX && !deps_map_get(&s->db_endpoints, k)) {
                struct plan_db_endpoint ep = {.address = deps_state_literal(s, addr)};
                uint32_t id = plan_writer_db_endpoint(s->w, &ep);
                if (id == UINT32_MAX)
                    deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
                else if (deps_map_put(&s->db_endpoints, k, (void *)(uintptr_t)(id + 1)) != 0)
                    deps_state_fail(s, "out of memory");
            }
        }
    }
    if (e && !e->db_index)
        e->db_index = ++s->comps[s->procs[file].component].pc.db_conns;
    struct deps_block *b = deps_block_of(t);
    if (!b)
        return;
    deps_block_cover(t, b);
    uint8_t op;
    switch (ev->op) {
    case TRACE_DB_QUERY:
        op = PLAN_DB_QUERY;
        break;
    case TRACE_DB_PREPARE:
        op = PLAN_DB_PREPARE;
        break;
    case TRACE_DB_EXECUTE:
        op = PLAN_DB_EXECUTE;
        break;
    case TRACE_DB_FETCH:
        if (b->nops && b->ops[b->nops - 1].kind == PLAN_OP_DB) {
            b->ops[b->nops - 1].recorded_ns += ev->dur_ns;
            b->ops[b->nops - 1].a.db.rows += d->rows;
        }
        return;
    default:
        return;
    }
    struct plan_op *o = deps_block_op_add(s, b, PLAN_OP_DB, op, ev->dur_ns);
    if (!o)
        return;
    o->a.db.conn = e && e->db_index ? e->db_index - 1 : 0;
    o->a.db.sql = deps_on_string(s, file, d->query_id);
    o->a.db.params = deps_on_string(s, file, d->params_id);
    o->a.db.rows = d->rows;
    o->a.db.error = d->error;
    if (d->source == TRACE_DB_CAPI)
        o->flags |= PLAN_DB_BLOCKING; /* its thread sat in the library call */
    if (d->dialect == TRACE_DB_POSTGRESQL)
        o->flags |= PLAN_DB_POSTGRESQL;
    if (ev->flags & TRACE_F_CUT) {
        o->flags |= PLAN_DB_CUT; /* replayed as a wait, never as broken SQL */
        s->res->db_cut++;
    }
    s->res->db_ops++;
}

/* Which request a file descriptor serves: the one whose thread was serving
 * when it was opened. An event loop that reads a file in pieces (a large
 * static file, written as the client's socket drains) handles that request
 * again when it touches the file. */
static void deps_on_file_owner(struct deps_state *s, struct deps_thread *t,
                               const struct trace_event *ev)
{
    const struct trace_file_event *fe = &ev->u.file;
    struct deps_proc *p = &s->procs[t->file];
    if (ev->op == TRACE_FILE_OPEN) {
        if (fe->result < 0)
            return;
        struct deps_block *b = deps_block_of(t);
        if (!b) {
            if (deps_map_del(&p->file_owner, (uint64_t)fe->result + 1))
                deps_state_uncharge(s, DEPS_MAP_ENTRY_BYTES);
            return;
        }
        char what[40];
        snprintf(what, sizeof what, "fd %" PRId64, fe->result);
        if (!deps_map_get(&p->file_owner, (uint64_t)fe->result + 1) &&
            deps_state_charge(s, t->file, "descriptor", p->file_owner.count + 1, what,
                              DEPS_MAP_ENTRY_BYTES) != 0)
            return;
        if (deps_map_put(&p->file_owner, (uint64_t)fe->result + 1,
                         (void *)(uintptr_t)b->end->conn_id) != 0)
            deps_state_fail(s, "out of memory");
        return;
    }
    if (fe->fd < 0 || !p->file_owner.count)
        return;
    uint64_t conn = (uint64_t)(uintptr_t)deps_map_get(&p->file_owner, (uint64_t)fe->fd + 1);
    if (ev->op == TRACE_FILE_CLOSE && deps_map_del(&p->file_owner, (uint64_t)fe->fd + 1))
        deps_state_uncharge(s, DEPS_MAP_ENTRY_BYTES);
    if (!conn || !t->event_loop)
        return;
    struct deps_end *e = deps_map_get(&p->ends, conn);
    if (e && e->cur && e->cur->th == t)
        deps_on_loop_handle(s, t, e);
}

static void deps_on_file(struct deps_state *s, uint32_t file, struct deps_thread *t,
                         const struct trace_event *ev)
{
    const struct trace_file_event *fe = &ev->u.file;
    deps_on_file_seen(s, file, fe);
    deps_on_file_owner(s, t, ev);
    struct deps_block *b = deps_block_of(t);
    if (!b)
        return;
    deps_block_cover(t, b);
    uint8_t op;
    switch (ev->op) {
    case TRACE_FILE_READ:
    case TRACE_FILE_PREAD:
    case TRACE_FILE_SENDFILE:
    case TRACE_FILE_COPY_RANGE: /* its read side: the write is a record of its own */
        op = PLAN_FILE_READ;
        break;
    case TRACE_FILE_WRITE:
    case TRACE_FILE_PWRITE:
        op = PLAN_FILE_WRITE;
        break;
    case TRACE_FILE_FSYNC:
        op = PLAN_FILE_FSYNC;
        break;
    case TRACE_FILE_FDATASYNC:
        op = PLAN_FILE_FDATASYNC;
        break;
    case TRACE_FILE_OPEN:
        op = PLAN_FILE_OPEN;
        break;
    case TRACE_FILE_CLOSE:
        op = PLAN_FILE_CLOSE;
        break;
    case TRACE_FILE_TRUNCATE:
        op = PLAN_FILE_TRUNCATE;
        break;
    default:
        return; /* seek, dup: no I/O to replay */
    }
    uint32_t id = deps_on_file_id(s, file, fe);
    if (id == UINT32_MAX)
        return; /* not a file with an identity (pipe, tty) */
    struct plan_op *o = deps_block_op_add(s, b, PLAN_OP_FILE, op, ev->dur_ns);
    if (!o)
        return;
    o->a.file.file = id;
    o->a.file.offset = fe->offset;
    o->a.file.size =
        fe->result > 0 ? (uint64_t)fe->result : (op == PLAN_FILE_TRUNCATE ? fe->size : 0);
}

/* Keeps each end's TCP_NODELAY / TCP_CORK as last set. An option set before
 * connect() names no connection yet (conn_id 0): it waits by descriptor
 * for the CONN event of that descriptor. */
static void deps_on_sockopt_state(struct deps_state *s, uint32_t file, const struct trace_event *ev)
{
    const struct trace_sockopt_event *so = &ev->u.sockopt;
    if (so->level != TRACE_IPPROTO_TCP ||
        (so->name != TRACE_TCP_NODELAY && so->name != TRACE_TCP_CORK))
        return;
    int nodelay = so->name == TRACE_TCP_NODELAY;
    if (so->conn_id) {
        struct deps_end *e = deps_end_get(s, file, so->conn_id);
        if (!e)
            return;
        if (nodelay) {
            e->nodelay_set = 1;
            e->nodelay = so->value;
        } else {
            e->cork_set = 1;
            e->cork = so->value;
        }
        return;
    }
    if (so->fd < 0)
        return;
    struct deps_map *m = &s->procs[file].pending_opts;
    struct deps_pending_opt *po = deps_map_get(m, (uint64_t)so->fd + 1);
    if (!po) {
        char what[24];
        snprintf(what, sizeof what, "fd %d", so->fd);
        if (deps_state_charge(s, file, "socket option", m->count + 1, what,
                              sizeof *po + DEPS_MAP_ENTRY_BYTES) != 0)
            return;
        po = calloc(1, sizeof *po);
        if (!po || deps_map_put(m, (uint64_t)so->fd + 1, po) != 0) {
            free(po);
            deps_state_fail(s, "out of memory");
            return;
        }
    }
    po->ts_ns = ev->ts_ns;
    if (nodelay) {
        po->nodelay_set = 1;
        po->nodelay = so->value;
    } else {
        po->cork_set = 1;
        po->cork = so->value;
    }
}

/* Events the recording could not keep (a full ring in --drop mode, the
 * --max-size ring, threads beyond the tracer's rings, salvage): the blocks
 * they belonged to are incomplete or missing, which analyze says. */
static void deps_on_loss(struct deps_state *s, uint32_t file, const struct trace_event *ev)
{
    uint64_t n = ev->u.loss.count;
    s->lost += n;
    s->res->lost_events += n;
    if (!s->procs[file].lost)
        s->lost_files++;
    s->procs[file].lost += n;
    if (n > s->lost_worst) {
        s->lost_worst = n;
        s->lost_worst_file = file;
        s->lost_worst_reason = ev->u.loss.reason;
    }
}

static void deps_on_cpu(struct deps_state *s, struct deps_thread *t, const struct trace_event *ev)
{
    struct deps_block *b = deps_block_of(t);
    deps_outside_note(s, t, 0, ev->dur_ns, b != NULL, 0);
    if (!b)
        return;
    if (b->nops && b->ops[b->nops - 1].kind == PLAN_OP_CPU) {
        b->ops[b->nops - 1].a.cpu_ns += ev->dur_ns;
        b->ops[b->nops - 1].recorded_ns += ev->dur_ns;
    } else {
        struct plan_op *o = deps_block_op_add(s, b, PLAN_OP_CPU, 0, ev->dur_ns);
        if (o)
            o->a.cpu_ns = ev->dur_ns;
    }
}

static void deps_on_net(struct deps_state *s, uint32_t file, struct deps_thread *t,
                        const struct trace_event *ev, uint64_t common)
{
    struct deps_end *e = deps_end_get(s, file, ev->u.net.conn_id);
    if (!e)
        return;
    if (!e->accepted)
        deps_on_client_net(s, t, e, ev, common);
    else if (ev->op == TRACE_NET_RECV)
        deps_on_server_recv(s, t, e, ev, common);
    else
        deps_on_server_send(s, t, e, ev, common);
}

/* A request's label (an HTTP method and path, or what --label rules and
 * --drop-query make of it): its text is kept for the --blocks TSV; the
 * end's open block takes it until its first send, else its next block. */
static void deps_on_label(struct deps_state *s, uint32_t file, const struct trace_event *ev)
{
    struct deps_end *e = deps_end_get(s, file, ev->u.label.conn_id);
    if (!e)
        return;
    uint32_t id;
    if (label_rules_count(s->opt->label_rules) || s->opt->drop_query) {
        id = deps_on_cached_string(s, &s->label_ids, file, ev->u.label.label_id, 1);
    } else {
        id = deps_on_string(s, file, ev->u.label.label_id);
        if (id && !deps_map_get(&s->label_text, id)) {
            uint32_t len = 0;
            const char *str =
                trace_reader_string(s->in.files[file].reader, ev->u.label.label_id, &len);
            deps_on_label_text(s, id, str, len);
        }
    }
    if (e->cur && !e->cur->sends)
        e->cur->label = id;
    else
        e->pending_label = id;
}

static void deps_on_lock(struct deps_state *s, uint32_t file, struct deps_thread *t,
                         const struct trace_event *ev)
{
    struct deps_block *b = deps_block_of(t);
    if (!b)
        return;
    deps_block_cover(t, b);
    const struct trace_lock_event *le = &ev->u.lock;
    uint8_t op;
    if (ev->op == TRACE_LOCK_RELEASE)
        op = PLAN_LOCK_RELEASE;
    else if (ev->op == TRACE_LOCK_ACQUIRE || ev->op == TRACE_LOCK_TIMED)
        op = le->result == 0 ? PLAN_LOCK_ACQUIRE : 0;
    else
        op = le->result == 0 ? PLAN_LOCK_TRY : 0;
    if (!op)
        return; /* failed try/timed acquire: nothing held */
    uint32_t id = deps_on_lock_id(s, file, le);
    if (id == UINT32_MAX)
        return;
    struct plan_op *o = deps_block_op_add(s, b, PLAN_OP_LOCK, op, ev->dur_ns);
    if (!o)
        return;
    o->a.lock.lock = id;
    o->a.lock.mode = le->mode == TRACE_LOCK_SHARED ? PLAN_LOCK_SHARED : PLAN_LOCK_EXCLUSIVE;
}

static void deps_on_sockopt(struct deps_state *s, uint32_t file, struct deps_thread *t,
                            const struct trace_event *ev)
{
    deps_on_sockopt_state(s, file, ev);
    if (t->tail && ev->u.sockopt.conn_id && ev->u.sockopt.conn_id != t->tail->end->conn_id) {
        struct deps_end *o = deps_map_get(&s->procs[file].ends, ev->u.sockopt.conn_id);
        if (o && o->accepted)
            deps_block_seal_tail(s, t, 0); /* the next connection's options */
    }
    struct deps_block *b = deps_block_of(t);
    if (!b) {
        /* an option set on a connection before its request (after
         * accept): the end's next block applies it (deps_block_start) */
        if (t->serving && ev->u.sockopt.conn_id) {
            struct deps_end *e = deps_map_get(&s->procs[file].ends, ev->u.sockopt.conn_id);
            if (e && e->opts_thread != t) {
                e->opts_thread = t;
                e->opts_between_requests = 0;
            }
            if (e)
                e->opts_between_requests++;
        }
        return;
    }
    deps_block_cover(t, b);
    if (ev->u.sockopt.conn_id != b->end->conn_id)
        return; /* a caller's connection: its NODELAY goes to CALL flags */
    deps_block_sockopt_op(s, b, ev->u.sockopt.level, ev->u.sockopt.name, ev->u.sockopt.value);
}

void deps_on_event(struct deps_state *s, uint32_t file, const struct deps_queued *q)
{
    const struct trace_event *ev = &q->ev;
    int counted = 0;
    s->now_c = q->key;
    switch (ev->type) {
    case TRACE_EV_CONN:
        deps_on_conn(s, file, ev);
        return;
    case TRACE_EV_LOSS:
        deps_on_loss(s, file, ev);
        return;
    case TRACE_EV_THREAD_EXIT: {
        /* a worker that ends (php-fpm's pm.max_requests, a prefork child
         * recycled) after its last block: what it did since the finish
         * may be its shutdown, cut like a tail at the end of the recording */
        struct deps_thread *t = deps_map_get(&s->procs[file].threads, (uint64_t)ev->tid + 1);
        if (t)
            deps_block_seal_tail(s, t, 1);
        return;
    }
    case TRACE_EV_FILE:
    case TRACE_EV_NET:
    case TRACE_EV_LOCK:
    case TRACE_EV_DB:
    case TRACE_EV_SOCKOPT:
        s->res->resource_events++;
        counted = 1;
        break;
    case TRACE_EV_CPU:
    case TRACE_EV_LABEL:
        break;
    default:
        return;
    }
    struct deps_thread *t = deps_on_thread(s, file, ev->tid);
    if (!t)
        return;
    t->res_events += counted;
    uint64_t covers = t->covers;
    switch (ev->type) {
    case TRACE_EV_CPU:
        deps_on_cpu(s, t, ev);
        break;
    case TRACE_EV_NET:
        deps_on_net(s, file, t, ev, q->key);
        break;
    case TRACE_EV_LABEL:
        deps_on_label(s, file, ev);
        break;
    case TRACE_EV_FILE:
        deps_on_file(s, file, t, ev);
        break;
    case TRACE_EV_DB:
        deps_on_db(s, file, t, ev);
        break;
    case TRACE_EV_LOCK:
        deps_on_lock(s, file, t, ev);
        break;
    case TRACE_EV_SOCKOPT:
        deps_on_sockopt(s, file, t, ev);
        break;
    default:
        break;
    }
    if (counted)
        deps_outside_note(s, t, 1, 0, t->covers != covers, deps_block_of(t) != NULL);
    if (ev->ts_ns + ev->dur_ns > t->last_end_raw)
        t->last_end_raw = ev->ts_ns + ev->dur_ns;
}
