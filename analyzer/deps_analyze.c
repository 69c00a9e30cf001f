/* deps_analyze.c - dependency extraction (CloudProphet §3.2, Figure 3) in one
 * streaming pass over the merged trace events (deps_input.c):
 *
 *  - connection ends: one per (process, conn_id), identified by the CONN
 *    event's 4-tuple or AF_UNIX inode; the two ends of a connection are
 *    paired through an index (reversed tuple, inode <-> peer inode).
 *  - messages are cut by stream byte offsets per direction: a request on a
 *    server end starts at the first byte received after a response (direction
 *    change), and the caller's call that sent it starts at the same offset of
 *    the same stream, so 3 sends arriving as 2 recvs still match.
 *  - a block is what the serving thread did between the request's first
 *    receive and the response's last send; it ends when the same end starts
 *    a new request, is closed, reaches EOF, or the thread starts a request on
 *    another end; events after the last send are cut off.
 *  - outgoing traffic inside a block becomes a CALL (traced peer: the callee
 *    block, matched by stream offset), an EXTERNAL op (untraced peer) or
 *    nothing (DB connections: their DB events are the ops).
 *  - a block is written when all its calls are resolved (callees first, as
 *    the plan writer requires); front-end requests (ends whose peer is
 *    untraced) go to the schedule in arrival order.
 *  - model violations: a thread that starts a request on one end while a
 *    request on another end is still unanswered, or answers an end it left,
 *    is reported; its events go to the end it last read and its blocks are
 *    flagged PLAN_BLOCK_VIOLATION.
 *  - clock skew between hosts: per host pair, the callee's block must lie
 *    within the caller's call; bounds from every pair give a correction.
 *
 * Never keeps events after their block is written; never writes a block
 * that silently mixes requests. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include "deps_input.h"
#include "deps_map.h"
#include "plan.h"
#include "preplay_analyze.h"

#define DEPS_CHECKPOINT_EVENTS 65536u
#define DEPS_BLOCK_POOL 256u /* recycled blocks kept (with their arrays) */
/* Linux socket option numbers as the tracer records them (SOCKOPT events
 * carry the raw level/name; these are fixed by the Linux ABI). */
#define TRACE_IPPROTO_TCP 6
#define TRACE_TCP_NODELAY 1
#define TRACE_TCP_CORK 3

enum deps_peer { DEPS_PEER_UNKNOWN = 0, DEPS_PEER_TRACED, DEPS_PEER_UNTRACED };
enum deps_call_state {
    DEPS_CALL_OPEN = 0,
    DEPS_CALL_WAIT_PEER,
    DEPS_CALL_WAIT_CALLEE,
    DEPS_CALL_DONE
};

struct deps_block;
struct deps_thread;

struct deps_served { /* a finished block served on an end, waiting for a decision */
    struct deps_served *next;
    uint64_t gid, in_off;    /* rendezvous key */
    uint32_t block;          /* plan block id */
    uint64_t start_c, end_c; /* common timeline */
    uint64_t start_raw;
    uint32_t label, connection;
    uint64_t think_ns;
    uint64_t bytes;
    uint32_t component;
};

struct deps_end {
    struct deps_end *prev, *next; /* live list */
    uint64_t gid;
    uint32_t file;
    uint64_t conn_id;
    uint8_t proto, family, accepted, is_db, closed, has_ident;
    uint8_t local_addr[16], remote_addr[16];
    uint16_t local_port, remote_port;
    uint64_t unix_inode, unix_peer_inode;
    uint64_t index_key; /* key in the pairing index, 0 = not indexed */
    /* AF_UNIX: key under which the end that this one names as its peer
     * finds it (deps_end_identify), 0 = none */
    uint64_t named_peer_key;
    int peer; /* enum deps_peer */
    uint64_t peer_gid;
    uint64_t deadline; /* common time after which an unknown peer is untraced */
    uint64_t in_off, out_off;
    struct deps_block *cur; /* open server block */
    uint32_t pending_label;
    uint32_t connection; /* front-end connection number, 0 = none yet */
    uint64_t last_resp_end;
    struct deps_served *served; /* finished blocks awaiting the peer decision */
    struct deps_served *served_last;
    struct deps_waiter *waiters; /* calls of finished blocks waiting for the peer decision */
    uint64_t served_min_c;       /* earliest start_c in served (the schedule's horizon) */
    uint32_t db_index;           /* +1; 0 = none */
    uint32_t external_host;      /* plan string id of the address (untraced peer), 0 = not yet */
    int refs;
    /* the call currently open on this (client) end */
    struct deps_block *call_block;
    uint32_t call_index;
    /* timing socket options (TCP_NODELAY, TCP_CORK) as last set; *_set = seen */
    uint8_t nodelay_set, cork_set;
    int64_t nodelay, cork;
    /* SOCKOPT events set on this end between requests by thread
     * opts_thread, already serving (inside its coverage window): when that
     * thread serves the end's next block, the block carries them as its
     * leading SOCKOPT ops, so they count as covered there */
    uint32_t opts_between_requests;
    const struct deps_thread *opts_thread;
};

struct deps_call {
    uint32_t op; /* index into the block's ops */
    int state;
    struct deps_end *end;
    uint64_t out_off;
    struct plan_segment *segs;
    uint32_t nsegs, capsegs;
    uint64_t sent, received, t0_raw, t1_raw, t0_c, t1_c;
    uint32_t callee;
};

struct deps_waiter { /* call ci of finished block b waits for its end's peer decision */
    struct deps_waiter *next;
    struct deps_block *b;
    uint32_t ci;
};

struct deps_block {
    uint32_t held_pos; /* +1 in the held heap (finished, unresolved); 0 = not held */
    struct deps_end *end;
    struct deps_thread *th;
    uint32_t label, flags, component;
    uint64_t in_off;
    uint64_t start_raw, start_c, last_send_end_raw, last_send_end_c;
    uint64_t first_recv_end_raw;
    struct plan_op *ops;
    uint32_t nops, capops;
    struct deps_call *calls;
    uint32_t ncalls, capcalls;
    uint32_t nops_at_send, ncalls_at_send;
    uint64_t covered, covered_at_send, bytes, bytes_at_send;
    uint32_t sends;
    uint64_t th_events_at_send; /* the thread's res_events at the last send */
    int unresolved;
    int finished;
};

struct deps_thread {
    uint32_t file, tid;
    struct deps_end *last_read;
    uint64_t left_gid; /* end whose block this thread finished by switching */
    int serving;
    int violating;
    uint64_t viol_events, viol_blocks;
    uint32_t viol_conns;
    uint64_t blocks;
    uint32_t worker; /* dense index among its component's serving threads */
    /* coverage window: resource events of this thread, counted; the window
     * runs from its first request's first receive to its last block's end */
    uint64_t res_events, win_first, win_end;
};

struct deps_component {
    char name[64];
    uint32_t host;
    uint32_t plan_id;
    struct plan_component pc;
    uint32_t serving_threads, serving_procs;
    uint32_t max_threads_per_proc;
};

struct deps_pending_opt { /* options set on a socket before its CONN event */
    uint64_t ts_ns;
    uint8_t nodelay_set, cork_set;
    int64_t nodelay, cork;
};

struct deps_proc {
    uint32_t component;
    struct deps_map threads;      /* tid -> thread */
    struct deps_map ends;         /* conn_id -> end */
    struct deps_map pending_opts; /* fd + 1 -> struct deps_pending_opt */
    struct deps_thread **all;
    uint32_t nall, capall;
    uint32_t serving_threads;
    struct deps_thread *last_thread; /* threads' events come in runs */
    uint64_t lost;                   /* LOSS counts of its trace */
};

struct deps_file_rec {
    uint64_t initial_size;
    uint32_t plan_id; /* +1, 0 = not yet in the plan */
};

struct deps_sched {
    uint64_t arrival_c;
    struct plan_request r;
};

struct deps_skew {
    uint32_t caller_host, callee_host;
    int64_t max_lo, min_hi;
    uint64_t pairs;
    int64_t applied;
};

struct deps_state {
    struct deps_input in;
    struct plan_writer *w;
    const struct analyze_options *opt;
    struct analyze_result *res;
    struct deps_proc *procs;
    struct deps_component *comps;
    uint32_t ncomps;
    struct deps_map index;        /* pairing: tuple key -> end */
    struct deps_map rendezvous;   /* (callee gid, offset) -> served or waiting call */
    struct deps_map waiting;      /* (callee gid, offset) -> block (call waiting) */
    struct deps_map files;        /* (host, dev, ino) -> file rec */
    struct deps_map locks;        /* key -> plan id + 1 (as pointer) */
    struct deps_map strings;      /* (file, string id) -> plan id (as pointer) */
    struct deps_map db_endpoints; /* address hash -> plan id + 1 */
    struct deps_map label_text;   /* plan string id -> text (labels only) */
    struct deps_end live;         /* list head */
    struct deps_block **held;     /* finished blocks with unresolved calls, min-heap by start */
    uint32_t nheld, capheld;
    struct deps_block *pool[DEPS_BLOCK_POOL];
    uint32_t npool;
    uint64_t next_gid;
    uint64_t now_c;
    struct deps_sched *sched;
    size_t nsched, capsched;
    int have_origin;
    uint64_t origin_c; /* first request's start: origin of arrival_ns and start_ns */
    uint32_t next_connection;
    struct deps_skew *skews;
    uint32_t nskews;
    FILE *blocks_out;
    uint64_t untraced_calls;
    /* LOSS events of the recording: how many events, in how many files, and
     * the file and reason of the largest */
    uint64_t lost, lost_worst;
    uint32_t lost_files, lost_worst_file, lost_worst_reason;
    char err[1024];
    int failed;
};

static void deps_fail(struct deps_state *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->failed = 1;
}

static void *deps_grow(struct deps_state *s, void *p, uint32_t *cap, size_t elem)
{
    uint32_t nc = *cap ? *cap * 2 : 8;
    void *np = realloc(p, nc * elem);
    if (!np) {
        deps_fail(s, "out of memory");
        return NULL;
    }
    *cap = nc;
    return np;
}

/* --- strings, files, locks --- */

static uint32_t deps_string(struct deps_state *s, uint32_t file, uint32_t id)
{
    if (!id)
        return 0;
    uint64_t key = (uint64_t)file << 32 | id;
    void *v = deps_map_get(&s->strings, key);
    if (v)
        return (uint32_t)(uintptr_t)v;
    uint32_t len = 0;
    const char *str = trace_reader_string(s->in.files[file].reader, id, &len);
    if (!str)
        return 0;
    uint32_t pid = plan_writer_string(s->w, str, len);
    if (pid == UINT32_MAX) {
        deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return 0;
    }
    if (pid && deps_map_put(&s->strings, key, (void *)(uintptr_t)pid) != 0)
        deps_fail(s, "out of memory");
    return pid;
}

static uint32_t deps_literal(struct deps_state *s, const char *str)
{
    uint32_t id = plan_writer_string(s->w, str, strlen(str));
    if (id == UINT32_MAX) {
        deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return 0;
    }
    return id;
}

static struct deps_file_rec *deps_file_seen(struct deps_state *s, uint32_t file,
                                            const struct trace_file_event *fe)
{
    if (!fe->dev && !fe->ino)
        return NULL;
    uint64_t key = deps_map_mix(deps_map_mix(s->in.files[file].host, fe->dev), fe->ino);
    struct deps_file_rec *r = deps_map_get(&s->files, key);
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r || deps_map_put(&s->files, key, r) != 0) {
            free(r);
            deps_fail(s, "out of memory");
            return NULL;
        }
        r->initial_size = fe->file_size; /* size before the first operation seen */
    }
    return r;
}

static uint32_t deps_file_id(struct deps_state *s, uint32_t file, const struct trace_file_event *fe)
{
    struct deps_file_rec *r = deps_file_seen(s, file, fe);
    if (!r)
        return UINT32_MAX;
    if (!r->plan_id) {
        struct plan_file pf = {.path = deps_string(s, file, fe->path_id),
                               .initial_size = r->initial_size};
        uint32_t id = plan_writer_file(s->w, &pf);
        if (id == UINT32_MAX) {
            deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
            return UINT32_MAX;
        }
        r->plan_id = id + 1;
    }
    return r->plan_id - 1;
}

static uint32_t deps_lock_id(struct deps_state *s, uint32_t file, const struct trace_lock_event *le)
{
    int per_process = le->kind == TRACE_LOCK_MUTEX || le->kind == TRACE_LOCK_RWLOCK ||
                      le->kind == TRACE_LOCK_SEMAPHORE;
    uint64_t key = deps_map_mix(
        per_process ? (uint64_t)file : (1ull << 40) + s->in.files[file].host, le->lock_id);
    void *v = deps_map_get(&s->locks, key);
    if (v)
        return (uint32_t)(uintptr_t)v - 1;
    struct plan_lock pl = {.kind = le->kind, .recorded_id = le->lock_id};
    uint32_t id = plan_writer_lock(s->w, &pl);
    if (id == UINT32_MAX) {
        deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return UINT32_MAX;
    }
    if (deps_map_put(&s->locks, key, (void *)(uintptr_t)(id + 1)) != 0)
        deps_fail(s, "out of memory");
    return id;
}

static void deps_addr_text(const struct deps_end *e, char *buf, size_t cap)
{
    if (e->family == AF_UNIX) {
        snprintf(buf, cap, "unix:inode=%" PRIu64, e->unix_peer_inode);
        return;
    }
    char a[INET6_ADDRSTRLEN] = "?";
    inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->remote_addr, a, sizeof a);
    snprintf(buf, cap, e->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, e->remote_port);
}

/* --- threads and ends --- */

static struct deps_thread *deps_thread_get(struct deps_state *s, uint32_t file, uint32_t tid)
{
    struct deps_proc *p = &s->procs[file];
    if (p->last_thread && p->last_thread->tid == tid)
        return p->last_thread;
    struct deps_thread *t = deps_map_get(&p->threads, (uint64_t)tid + 1);
    if (t)
        return p->last_thread = t;
    t = calloc(1, sizeof *t);
    if (!t)
        goto oom;
    t->file = file;
    t->tid = tid;
    if (p->nall == p->capall) {
        struct deps_thread **na = deps_grow(s, p->all, &p->capall, sizeof *na);
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
    deps_fail(s, "out of memory");
    return NULL;
}

static void deps_end_unref(struct deps_state *s, struct deps_end *e);

static struct deps_end *deps_end_get(struct deps_state *s, uint32_t file, uint64_t conn_id)
{
    struct deps_proc *p = &s->procs[file];
    struct deps_end *e = deps_map_get(&p->ends, conn_id);
    if (e)
        return e;
    e = calloc(1, sizeof *e);
    if (!e || deps_map_put(&p->ends, conn_id, e) != 0) {
        free(e);
        deps_fail(s, "out of memory");
        return NULL;
    }
    e->gid = ++s->next_gid;
    e->file = file;
    e->conn_id = conn_id;
    e->refs = 1; /* the process's table */
    e->deadline = s->now_c + s->opt->grace_ns;
    e->next = s->live.next;
    e->prev = &s->live;
    s->live.next->prev = e;
    s->live.next = e;
    return e;
}

static void deps_end_unref(struct deps_state *s, struct deps_end *e)
{
    if (!e || --e->refs > 0)
        return;
    (void)s;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    while (e->waiters) { /* stale: their calls were given up at the end */
        struct deps_waiter *w = e->waiters;
        e->waiters = w->next;
        free(w);
    }
    free(e);
}

static uint64_t deps_tuple_key(uint32_t host, uint8_t proto, const uint8_t *la, uint16_t lp,
                               const uint8_t *ra, uint16_t rp)
{
    uint64_t k = deps_map_mix(proto == TRACE_PROTO_UDP ? 2 : 1, (uint64_t)lp << 16 | rp);
    uint64_t a, b;
    memcpy(&a, la, 8);
    memcpy(&b, la + 8, 8);
    k = deps_map_mix(deps_map_mix(k, a), b);
    memcpy(&a, ra, 8);
    memcpy(&b, ra + 8, 8);
    k = deps_map_mix(deps_map_mix(k, a), b);
    /* loopback tuples are only unique within a host */
    if (la[0] == 127 || (!memcmp(la, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15) && la[15] == 1))
        k = deps_map_mix(k, host + 1);
    return k | 1;
}

static void deps_served_decide(struct deps_state *s, struct deps_end *e);
static int deps_call_resolve(struct deps_state *s, struct deps_block *b, uint32_t ci, int final);
static void deps_block_emit(struct deps_state *s, struct deps_block *b);

static void deps_pair(struct deps_state *s, struct deps_end *a, struct deps_end *b)
{
    a->peer = b->peer = DEPS_PEER_TRACED;
    a->peer_gid = b->gid;
    b->peer_gid = a->gid;
    deps_served_decide(s, a);
    deps_served_decide(s, b);
}

/* Points index entry *key at e under new_key (0: none), dropping the old
 * entry if it was e's. 0, or -1 when out of memory (the state has failed). */
static int deps_index_set(struct deps_state *s, uint64_t *key, uint64_t new_key, struct deps_end *e)
{
    if (*key && *key != new_key && deps_map_get(&s->index, *key) == e)
        deps_map_del(&s->index, *key);
    *key = new_key;
    if (new_key && deps_map_put(&s->index, new_key, e) != 0) {
        deps_fail(s, "out of memory");
        return -1;
    }
    return 0;
}

/* The index key under which an AF_UNIX end that named `inode` as its peer
 * is found by the end whose inode it is. */
static uint64_t deps_unix_named_key(uint32_t host, uint64_t inode)
{
    return deps_map_mix(deps_map_mix(4, host), inode) | 1;
}

/* Index the end under its own identity and look for the reverse. An
 * AF_UNIX end may not know its peer's inode (a CONNECT: the accepted
 * socket gets its inode only at accept), while the other end names it:
 * the end that names its peer is also indexed under that name, for the
 * nameless end to find when it comes second. */
static void deps_end_identify(struct deps_state *s, struct deps_end *e)
{
    uint32_t host = s->in.files[e->file].host;
    uint64_t own, rev;
    if (e->family == AF_UNIX) {
        if (!e->unix_inode)
            return;
        own = deps_map_mix(deps_map_mix(3, host), e->unix_inode) | 1;
        rev = e->unix_peer_inode ? deps_map_mix(deps_map_mix(3, host), e->unix_peer_inode) | 1 : 0;
        if (deps_index_set(s, &e->named_peer_key,
                           e->unix_peer_inode ? deps_unix_named_key(host, e->unix_peer_inode) : 0,
                           e) != 0)
            return;
        if (!rev) {
            struct deps_end *o = deps_map_get(&s->index, deps_unix_named_key(host, e->unix_inode));
            if (o && o != e && o->file != e->file && e->peer != DEPS_PEER_TRACED)
                rev = o->index_key;
        }
    } else {
        if (!e->remote_port)
            return;
        own = deps_tuple_key(host, e->proto, e->local_addr, e->local_port, e->remote_addr,
                             e->remote_port);
        rev = deps_tuple_key(host, e->proto, e->remote_addr, e->remote_port, e->local_addr,
                             e->local_port);
    }
    if (deps_index_set(s, &e->index_key, own, e) != 0)
        return;
    struct deps_end *o = rev ? deps_map_get(&s->index, rev) : NULL;
    if (o && o != e && o->file != e->file && e->peer != DEPS_PEER_TRACED)
        deps_pair(s, e, o);
}

/* --- blocks --- */

/* Appends an op of this kind (and per-kind op, recorded duration) to the
 * block, the rest zeroed; NULL on out of memory (the state has failed). */
static struct plan_op *deps_op_add(struct deps_state *s, struct deps_block *b, uint8_t kind,
                                   uint8_t op_code, uint64_t recorded_ns)
{
    if (b->nops == b->capops) {
        struct plan_op *n = deps_grow(s, b->ops, &b->capops, sizeof *n);
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

static struct plan_op *deps_sockopt_op(struct deps_state *s, struct deps_block *b, int32_t level,
                                       int32_t name, int64_t value)
{
    struct plan_op *o = deps_op_add(s, b, PLAN_OP_SOCKOPT, 0, 0);
    if (o) {
        o->a.sockopt.level = level;
        o->a.sockopt.name = name;
        o->a.sockopt.value = value;
    }
    return o;
}

static void deps_block_free(struct deps_block *b)
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

static void deps_block_emit(struct deps_state *s, struct deps_block *b);

/* Frees a block and drops its references on ends. */
static void deps_block_release(struct deps_state *s, struct deps_block *b)
{
    struct deps_end *e = b->end;
    for (uint32_t i = 0; i < b->ncalls; i++)
        deps_end_unref(s, b->calls[i].end);
    deps_block_recycle(s, b);
    deps_end_unref(s, e);
}

/* Offset of a common-timeline time from the plan's origin (PLAN.md §5.3),
 * clamped at 0: the origin is the first request start the merge delivered,
 * and a concurrent first request may have begun microseconds before it. */
static uint64_t deps_since_origin(const struct deps_state *s, uint64_t t_c)
{
    return s->have_origin && t_c > s->origin_c ? t_c - s->origin_c : 0;
}

static void deps_schedule_push(struct deps_state *s, const struct deps_served *sv)
{
    if (s->nsched == s->capsched) {
        size_t nc = s->capsched ? s->capsched * 2 : 256;
        struct deps_sched *n = realloc(s->sched, nc * sizeof *n);
        if (!n) {
            deps_fail(s, "out of memory");
            return;
        }
        s->sched = n;
        s->capsched = nc;
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

static void deps_schedule_flush(struct deps_state *s, uint64_t horizon)
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
        top.r.arrival_ns = deps_since_origin(s, top.arrival_c);
        if (plan_writer_request(s->w, &top.r) != 0)
            deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        if (s->blocks_out)
            fprintf(s->blocks_out, "R\t%u\t%" PRIu64 "\t%u\t%" PRIu64 "\n", top.r.block,
                    top.r.arrival_ns, top.r.session, top.r.think_ns);
        s->res->requests++;
    }
}

static uint64_t deps_rv_key(uint64_t gid, uint64_t off)
{
    return deps_map_mix(gid, off);
}

static void deps_skew_note(struct deps_state *s, struct deps_block *caller, struct deps_call *c,
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
    deps_skew_note(s, b, c, sv, callee_file);
    if (--b->unresolved == 0 && b->finished)
        deps_block_emit(s, b);
}

struct deps_rv { /* rendezvous entry */
    int is_call;
    struct deps_served sv; /* when !is_call */
    uint32_t callee_file;
    struct deps_block *b; /* when is_call */
    uint32_t ci;
};

static void deps_rv_served(struct deps_state *s, const struct deps_served *sv, uint32_t file)
{
    uint64_t key = deps_rv_key(sv->gid, sv->in_off);
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
        deps_fail(s, "out of memory");
        return;
    }
    rv->sv = *sv;
    rv->callee_file = file;
}

/* Decide what finished blocks on end e are, once its peer is known. */
static void deps_served_decide(struct deps_state *s, struct deps_end *e)
{
    if (e->peer == DEPS_PEER_UNKNOWN)
        return;
    e->served_last = NULL;
    while (e->served) {
        struct deps_served *sv = e->served;
        e->served = sv->next;
        if (e->peer == DEPS_PEER_UNTRACED)
            deps_schedule_push(s, sv);
        else
            deps_rv_served(s, sv, e->file);
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

static void deps_call_to_external(struct deps_state *s, struct deps_block *b, struct deps_call *c)
{
    struct plan_op *op = &b->ops[c->op];
    if (!c->end->external_host) { /* the address text, once per end */
        char host[96];
        deps_addr_text(c->end, host, sizeof host);
        c->end->external_host = deps_literal(s, host);
    }
    op->kind = PLAN_OP_EXTERNAL;
    op->a.external.host = c->end->external_host;
    op->a.external.sent = c->sent;
    op->a.external.received = c->received;
    op->recorded_ns = c->t1_raw > c->t0_raw ? c->t1_raw - c->t0_raw : 0;
    c->state = DEPS_CALL_DONE;
    s->res->externals++;
}

/* Tries to resolve call ci of finished block b; returns 1 when it is done. */
static int deps_call_resolve(struct deps_state *s, struct deps_block *b, uint32_t ci, int final)
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
            deps_fail(s, "out of memory");
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
        deps_call_to_external(s, b, c);
        return 1;
    }
    uint64_t key = deps_rv_key(e->peer_gid, c->out_off);
    struct deps_rv *rv = deps_map_get(&s->rendezvous, key);
    if (rv && !rv->is_call) {
        deps_map_del(&s->rendezvous, key);
        struct deps_served sv = rv->sv;
        uint32_t f = rv->callee_file;
        free(rv);
        c->callee = sv.block;
        c->state = DEPS_CALL_DONE;
        s->res->calls++;
        deps_skew_note(s, b, c, &sv, f);
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
        deps_fail(s, "out of memory");
        return 1;
    }
    rv->is_call = 1;
    rv->b = b;
    rv->ci = ci;
    c->state = DEPS_CALL_WAIT_CALLEE;
    return 0;
}

/* --- held blocks: a min-heap by start, so the schedule's horizon (the
 * oldest request still undecided) is its top, not a walk over all of them */

static void deps_held_set(struct deps_state *s, uint32_t i, struct deps_block *b)
{
    s->held[i] = b;
    b->held_pos = i + 1;
}

static void deps_held_sift(struct deps_state *s, uint32_t i)
{
    struct deps_block *b = s->held[i];
    while (i > 0 && s->held[(i - 1) / 2]->start_c > b->start_c) {
        deps_held_set(s, i, s->held[(i - 1) / 2]);
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
        deps_held_set(s, i, s->held[m]);
        i = m;
    }
    deps_held_set(s, i, b);
}

static void deps_held_add(struct deps_state *s, struct deps_block *b)
{
    if (s->nheld == s->capheld) {
        struct deps_block **n = deps_grow(s, s->held, &s->capheld, sizeof *n);
        if (!n)
            return;
        s->held = n;
    }
    deps_held_set(s, s->nheld++, b);
    deps_held_sift(s, s->nheld - 1);
}

static void deps_held_remove(struct deps_state *s, struct deps_block *b)
{
    if (!b->held_pos)
        return;
    uint32_t i = b->held_pos - 1;
    b->held_pos = 0;
    struct deps_block *last = s->held[--s->nheld];
    if (i < s->nheld) {
        deps_held_set(s, i, last);
        deps_held_sift(s, i);
    }
}

static void deps_block_emit(struct deps_state *s, struct deps_block *b)
{
    deps_held_remove(s, b);
    /* compact: drop removed ops, renumber CALL segments */
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
                struct plan_segment *ns = deps_grow(s, segs, &capsegs, sizeof *ns);
                if (!ns) {
                    free(segs);
                    return;
                }
                segs = ns;
            }
            memcpy(segs + nsegs, c->segs, c->nsegs * sizeof *segs);
            nsegs += c->nsegs;
        }
        b->ops[n++] = op;
    }
    struct plan_block pb = {.component = s->comps[b->component].plan_id,
                            .label = b->label,
                            .nops = n,
                            .flags = b->flags,
                            .recorded_ns = b->last_send_end_raw - b->start_raw,
                            .worker = b->th->worker,
                            .start_ns = deps_since_origin(s, b->start_c)};
    uint32_t id = plan_writer_block(s->w, &pb, b->ops, segs, nsegs);
    free(segs);
    if (id == UINT32_MAX) {
        deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        deps_block_release(s, b);
        return;
    }
    s->res->blocks++;
    s->res->covered_events += b->covered;
    if (s->blocks_out) {
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
                pb.worker, pb.start_ns);
        uint32_t nodelay_calls = 0;
        any = 0;
        for (uint32_t i = 0; i < n; i++) {
            const struct plan_op *o = &b->ops[i];
            if (o->kind == PLAN_OP_CALL && (o->flags & PLAN_CALL_NODELAY))
                nodelay_calls++;
            if (o->kind == PLAN_OP_SOCKOPT) {
                fprintf(s->blocks_out, "%s%d:%d=%" PRId64, any ? "," : "", o->a.sockopt.level,
                        o->a.sockopt.name, o->a.sockopt.value);
                any = 1;
            }
        }
        fprintf(s->blocks_out, "%s\t%u\n", any ? "" : "-", nodelay_calls);
    }
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
    sv.think_ns =
        e->last_resp_end && b->start_raw > e->last_resp_end ? b->start_raw - e->last_resp_end : 0;
    e->last_resp_end = b->last_send_end_raw;
    e->refs++; /* keep e while deciding below */
    deps_block_release(s, b);
    if (e->peer == DEPS_PEER_UNTRACED) {
        deps_schedule_push(s, &sv);
    } else if (e->peer == DEPS_PEER_TRACED) {
        deps_rv_served(s, &sv, e->file);
    } else {
        struct deps_served *p = malloc(sizeof *p);
        /* the served entry takes over the reference taken above */
        if (!p) {
            deps_fail(s, "out of memory");
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

/* The request on end e is complete (its last send is known). */
static void deps_block_finish(struct deps_state *s, struct deps_end *e, int final)
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
    if (final) {
        /* the recording ended with the block open: what followed the last
         * send may be anything up to the end (shutdown), so it is cut off */
        b->nops = b->nops_at_send;
        for (uint32_t i = b->ncalls_at_send; i < b->ncalls; i++) {
            if (b->calls[i].end->call_block == b)
                b->calls[i].end->call_block = NULL;
            deps_end_unref(s, b->calls[i].end);
            free(b->calls[i].segs);
        }
        b->ncalls = b->ncalls_at_send;
        b->covered = b->covered_at_send;
        if (b->th_events_at_send > b->th->win_end)
            b->th->win_end = b->th_events_at_send;
    } else {
        /* the post-response tail (after the last send, until the connection
         * serves its next request, ends, or the thread takes another
         * request) stays: it is work of this request that keeps the worker
         * busy (logging, a runtime's lock handoff before the next read)
         * without delaying this response, and the replay keeps it so */
        b->th->win_end = b->th->res_events;
    }
    b->finished = 1;
    b->th->blocks++;
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
    deps_held_add(s, b);
}

static void deps_violation(struct deps_state *s, struct deps_thread *t, struct deps_end *other)
{
    if (!t->violating) {
        t->violating = 1;
        s->res->violations++;
    }
    t->viol_conns++;
    if (other && other->cur)
        other->cur->flags |= PLAN_BLOCK_VIOLATION;
}

static struct deps_block *deps_block_start(struct deps_state *s, struct deps_thread *t,
                                           struct deps_end *e, const struct trace_event *ev,
                                           uint64_t common)
{
    struct deps_block *b = deps_block_alloc(s);
    if (!b) {
        deps_fail(s, "out of memory");
        return NULL;
    }
    b->end = e;
    e->refs++;
    b->th = t;
    b->component = s->procs[e->file].component;
    b->label = e->pending_label;
    e->pending_label = 0;
    b->in_off = e->in_off;
    /* The request arrived by the end of the first receive that returned its
     * bytes: a blocking receive (keep-alive idle, a thread per connection)
     * began long before the client sent anything. */
    b->start_raw = ev->ts_ns + ev->dur_ns;
    b->start_c = common;
    if (!s->have_origin) {
        s->have_origin = 1;
        s->origin_c = common;
    }
    if (t->violating)
        b->flags |= PLAN_BLOCK_VIOLATION;
    e->cur = b;
    /* the response's socket options as set before the request: the
     * replayer applies them to its connection before answering */
    if ((e->nodelay_set &&
         !deps_sockopt_op(s, b, TRACE_IPPROTO_TCP, TRACE_TCP_NODELAY, e->nodelay)) ||
        (e->cork_set && !deps_sockopt_op(s, b, TRACE_IPPROTO_TCP, TRACE_TCP_CORK, e->cork)))
        return NULL;
    if (e->opts_thread == t)
        b->covered += e->opts_between_requests;
    e->opts_between_requests = 0;
    e->opts_thread = NULL;
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

/* The block events of thread t currently belong to. */
static struct deps_block *deps_thread_block(struct deps_thread *t)
{
    struct deps_end *e = t->last_read;
    if (e && e->cur && e->cur->th == t)
        return e->cur;
    return NULL;
}

static void deps_cover(struct deps_thread *t, struct deps_block *b)
{
    b->covered++;
    if (t->violating) {
        t->viol_events++;
        b->flags |= PLAN_BLOCK_VIOLATION;
    }
}

/* A RECV or SEND of the request/response itself, counted and covered. */
static struct plan_op *deps_message_op(struct deps_state *s, struct deps_thread *t,
                                       struct deps_block *b, uint8_t kind,
                                       const struct trace_event *ev)
{
    struct plan_op *op = deps_op_add(s, b, kind, 0, ev->dur_ns);
    if (!op)
        return NULL;
    op->a.net.bytes = (uint64_t)ev->u.net.result;
    b->bytes += (uint64_t)ev->u.net.result;
    deps_cover(t, b);
    return op;
}

static void deps_on_server_net(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                               const struct trace_event *ev, uint64_t common)
{
    int64_t n = ev->u.net.result;
    if (ev->op == TRACE_NET_RECV) {
        if (n <= 0) {
            if (e->cur && e->cur->th == t && e->cur->sends)
                deps_cover(t, e->cur); /* a read for the next request: the tail */
            if (n == 0)
                deps_block_finish(s, e, 0); /* EOF: the client is done */
            return;
        }
        if (e->cur && e->cur->sends)
            deps_block_finish(s, e, 0); /* keep-alive: the next request */
        int starts_block = !e->cur;
        if (!e->cur) {
            /* a worker serves one connection at a time: another end of this
             * thread with an unanswered request means interleaving */
            struct deps_end *prev = t->last_read;
            if (prev && prev != e && prev->cur && prev->cur->th == t) {
                if (!prev->cur->sends) {
                    deps_violation(s, t, prev);
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
                return;
            if (t->violating)
                e->cur->flags |= PLAN_BLOCK_VIOLATION;
        }
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
            deps_violation(s, t, e);
            deps_violation(s, b->th, e);
        }
        struct plan_op *op = deps_message_op(s, t, b, PLAN_OP_RECV, ev);
        if (!op)
            return;
        /* The block starts when this receive returns (deps_block_start):
         * its time before that was the wait for the request (keep-alive
         * idle, a pooled connection between calls: up to seconds), not
         * time of the block. Later receives of the request keep theirs. */
        if (starts_block)
            op->recorded_ns = 0;
        e->in_off += (uint64_t)n;
        return;
    }
    if (n <= 0)
        return;
    e->out_off += (uint64_t)n;
    struct deps_block *b = e->cur;
    if (!b) {
        if (t->left_gid == e->gid)
            deps_violation(s, t, NULL); /* answered an end it had left: late interleave */
        s->res->unmatched_bytes += 0;
        return;
    }
    if (b->th != t) {
        deps_violation(s, t, e);
        deps_violation(s, b->th, e);
    } else if (t->last_read != e && t->last_read && t->last_read->cur &&
               t->last_read->cur->th == t) {
        deps_violation(s, t, t->last_read); /* answering X after reading Y */
        b->flags |= PLAN_BLOCK_VIOLATION;
    }
    struct plan_op *op = deps_message_op(s, t, b, PLAN_OP_SEND, ev);
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
}

static void deps_on_client_net(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                               const struct trace_event *ev, uint64_t common)
{
    int64_t n = ev->u.net.result;
    if (n <= 0)
        return;
    int send = ev->op == TRACE_NET_SEND;
    uint64_t off = send ? e->out_off : e->in_off;
    if (send)
        e->out_off += (uint64_t)n;
    else
        e->in_off += (uint64_t)n;
    struct deps_block *b = deps_thread_block(t);
    if (!b)
        return;
    deps_cover(t, b);
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
            struct deps_call *nc = deps_grow(s, b->calls, &b->capcalls, sizeof *nc);
            if (!nc)
                return;
            b->calls = nc;
        }
        c = &b->calls[b->ncalls];
        memset(c, 0, sizeof *c);
        struct plan_op *op = deps_op_add(s, b, PLAN_OP_CALL, 0, 0);
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
        struct plan_segment *ns = deps_grow(s, c->segs, &c->capsegs, sizeof *ns);
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

static void deps_apply_pending_opts(struct deps_state *s, uint32_t file, struct deps_end *e,
                                    const struct trace_event *ev);

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
        if (ev->op == TRACE_CONN_ACCEPT)
            e->accepted = 1;
        deps_apply_pending_opts(s, file, e, ev);
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
        deps_block_finish(s, e, 0);
        break;
    case TRACE_CONN_CLOSE: {
        deps_block_finish(s, e, 0);
        deps_index_set(s, &e->index_key, 0, e);
        deps_index_set(s, &e->named_peer_key, 0, e);
        e->closed = 1;
        deps_map_del(&s->procs[file].ends, e->conn_id);
        deps_end_unref(s, e);
        break;
    }
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
            deps_addr_text(e, addr, sizeof addr);
            uint64_t k = deps_map_mix((uint64_t)s->in.files[file].host, e->remote_port);
            k = deps_map_mix(k, e->family == AF_UNIX ? e->unix_peer_inode : 0);
            if (e->family != AF_UNIX && !deps_map_get(&s->db_endpoints, k)) {
                struct plan_db_endpoint ep = {.address = deps_literal(s, addr)};
                uint32_t id = plan_writer_db_endpoint(s->w, &ep);
                if (id == UINT32_MAX)
                    deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
                else if (deps_map_put(&s->db_endpoints, k, (void *)(uintptr_t)(id + 1)) != 0)
                    deps_fail(s, "out of memory");
            }
        }
    }
    if (e && !e->db_index)
        e->db_index = ++s->comps[s->procs[file].component].pc.db_conns;
    struct deps_block *b = deps_thread_block(t);
    if (!b)
        return;
    deps_cover(t, b);
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
    struct plan_op *o = deps_op_add(s, b, PLAN_OP_DB, op, ev->dur_ns);
    if (!o)
        return;
    o->a.db.conn = e && e->db_index ? e->db_index - 1 : 0;
    o->a.db.sql = deps_string(s, file, d->query_id);
    o->a.db.params = deps_string(s, file, d->params_id);
    o->a.db.rows = d->rows;
    o->a.db.error = d->error;
    s->res->db_ops++;
}

static void deps_on_file(struct deps_state *s, uint32_t file, struct deps_thread *t,
                         const struct trace_event *ev)
{
    const struct trace_file_event *fe = &ev->u.file;
    deps_file_seen(s, file, fe);
    struct deps_block *b = deps_thread_block(t);
    if (!b)
        return;
    deps_cover(t, b);
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
    uint32_t id = deps_file_id(s, file, fe);
    if (id == UINT32_MAX)
        return; /* not a file with an identity (pipe, tty) */
    struct plan_op *o = deps_op_add(s, b, PLAN_OP_FILE, op, ev->dur_ns);
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
        po = calloc(1, sizeof *po);
        if (!po || deps_map_put(m, (uint64_t)so->fd + 1, po) != 0) {
            free(po);
            deps_fail(s, "out of memory");
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

/* Options set on descriptor fd before its connection existed. */
static void deps_apply_pending_opts(struct deps_state *s, uint32_t file, struct deps_end *e,
                                    const struct trace_event *ev)
{
    struct deps_map *m = &s->procs[file].pending_opts;
    if (ev->u.conn.fd < 0 || !m->count)
        return;
    struct deps_pending_opt *po = deps_map_del(m, (uint64_t)ev->u.conn.fd + 1);
    if (!po)
        return;
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

static void deps_on_event(struct deps_state *s, uint32_t file, const struct deps_queued *q)
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
    struct deps_thread *t = deps_thread_get(s, file, ev->tid);
    if (!t)
        return;
    t->res_events += counted;
    switch (ev->type) {
    case TRACE_EV_CPU: {
        struct deps_block *b = deps_thread_block(t);
        if (!b)
            return;
        if (b->nops && b->ops[b->nops - 1].kind == PLAN_OP_CPU) {
            b->ops[b->nops - 1].a.cpu_ns += ev->dur_ns;
            b->ops[b->nops - 1].recorded_ns += ev->dur_ns;
        } else {
            struct plan_op *o = deps_op_add(s, b, PLAN_OP_CPU, 0, ev->dur_ns);
            if (o)
                o->a.cpu_ns = ev->dur_ns;
        }
        return;
    }
    case TRACE_EV_NET: {
        struct deps_end *e = deps_end_get(s, file, ev->u.net.conn_id);
        if (!e)
            return;
        if (e->accepted)
            deps_on_server_net(s, t, e, ev, q->key);
        else
            deps_on_client_net(s, t, e, ev, q->key);
        return;
    }
    case TRACE_EV_LABEL: {
        struct deps_end *e = deps_end_get(s, file, ev->u.label.conn_id);
        if (!e)
            return;
        uint32_t id = deps_string(s, file, ev->u.label.label_id);
        if (id && !deps_map_get(&s->label_text, id)) {
            uint32_t len = 0;
            const char *str =
                trace_reader_string(s->in.files[file].reader, ev->u.label.label_id, &len);
            char *copy = str ? strndup(str, len) : NULL;
            if (copy && deps_map_put(&s->label_text, id, copy) != 0)
                free(copy);
        }
        if (e->cur && !e->cur->sends)
            e->cur->label = id;
        else
            e->pending_label = id;
        return;
    }
    case TRACE_EV_FILE:
        deps_on_file(s, file, t, ev);
        return;
    case TRACE_EV_DB:
        deps_on_db(s, file, t, ev);
        return;
    case TRACE_EV_LOCK: {
        struct deps_block *b = deps_thread_block(t);
        if (!b)
            return;
        deps_cover(t, b);
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
        uint32_t id = deps_lock_id(s, file, le);
        if (id == UINT32_MAX)
            return;
        struct plan_op *o = deps_op_add(s, b, PLAN_OP_LOCK, op, ev->dur_ns);
        if (!o)
            return;
        o->a.lock.lock = id;
        o->a.lock.mode = le->mode == TRACE_LOCK_SHARED ? PLAN_LOCK_SHARED : PLAN_LOCK_EXCLUSIVE;
        return;
    }
    case TRACE_EV_SOCKOPT: {
        deps_on_sockopt_state(s, file, ev);
        struct deps_block *b = deps_thread_block(t);
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
        deps_cover(t, b);
        if (ev->u.sockopt.conn_id != b->end->conn_id)
            return; /* a caller's connection: its NODELAY goes to CALL flags */
        deps_sockopt_op(s, b, ev->u.sockopt.level, ev->u.sockopt.name, ev->u.sockopt.value);
        return;
    }
    default:
        return;
    }
}

/* Periodic (and final) decisions: peers that did not show up within the
 * grace time are untraced; held blocks waiting for them resolve; the
 * schedule is flushed up to the oldest request still in flight. */
/* The live ends, each with a reference held, so callbacks may close them. */
static struct deps_end **deps_live_snapshot(struct deps_state *s, size_t *n)
{
    size_t cnt = 0;
    for (struct deps_end *e = s->live.next; e != &s->live; e = e->next)
        cnt++;
    struct deps_end **v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v) {
        deps_fail(s, "out of memory");
        *n = 0;
        return NULL;
    }
    cnt = 0;
    for (struct deps_end *e = s->live.next; e != &s->live; e = e->next) {
        e->refs++;
        v[cnt++] = e;
    }
    *n = cnt;
    return v;
}

static void deps_live_release(struct deps_state *s, struct deps_end **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        deps_end_unref(s, v[i]);
    free(v);
}

static void deps_checkpoint(struct deps_state *s, int final)
{
    uint64_t horizon = final ? UINT64_MAX : s->now_c;
    size_t n = 0;
    struct deps_end **v = deps_live_snapshot(s, &n);
    for (size_t i = 0; i < n; i++)
        if (final && v[i]->cur)
            deps_block_finish(s, v[i], 1);
    for (size_t i = 0; i < n; i++) {
        struct deps_end *e = v[i];
        if (e->peer == DEPS_PEER_UNKNOWN && (final || s->now_c > e->deadline)) {
            e->peer = DEPS_PEER_UNTRACED;
            deps_served_decide(s, e);
        }
    }
    deps_live_release(s, v, n);
    /* held blocks: calls waiting for a peer decision were resolved when it
     * was made (deps_served_decide); at the end, what still waits for a
     * callee never got one, and becomes an external call (unmatched) */
    while (final && s->nheld && !s->failed) {
        struct deps_block *b = s->held[0];
        for (uint32_t i = 0; i < b->ncalls; i++) {
            struct deps_call *c = &b->calls[i];
            if (c->state == DEPS_CALL_WAIT_PEER) { /* every end is decided by now */
                if (deps_call_resolve(s, b, i, final))
                    b->unresolved--;
            } else if (c->state == DEPS_CALL_WAIT_CALLEE) {
                uint64_t key = deps_rv_key(c->end->peer_gid, c->out_off);
                struct deps_rv *rv = deps_map_del(&s->rendezvous, key);
                free(rv);
                s->res->unmatched_bytes += c->sent + c->received;
                deps_call_to_external(s, b, c);
                b->unresolved--;
            }
        }
        if (b->unresolved) { /* cannot happen: every call is done; never loop */
            deps_fail(s, "internal error: block with %d unresolved calls at the end",
                      b->unresolved);
            break;
        }
        deps_block_emit(s, b); /* leaves the heap (its cascade may empty more) */
    }
    if (final) /* served on traced connections, never claimed by a call */
        for (size_t j = 0; j < s->rendezvous.cap; j++) {
            const struct deps_rv *rv = s->rendezvous.slots[j].value;
            if (rv && !rv->is_call)
                s->res->unmatched_bytes += rv->sv.bytes;
        }
    if (s->nheld && s->held[0]->start_c < horizon)
        horizon = s->held[0]->start_c;
    if (!final) {
        for (struct deps_end *e = s->live.next; e != &s->live; e = e->next) {
            if (e->cur && e->cur->start_c < horizon)
                horizon = e->cur->start_c;
            if (e->served && e->served_min_c < horizon)
                horizon = e->served_min_c;
        }
    }
    deps_schedule_flush(s, horizon);
}

static int deps_components(struct deps_state *s)
{
    s->procs = calloc(s->in.nfiles, sizeof *s->procs);
    s->comps = calloc(s->in.nfiles, sizeof *s->comps);
    if (!s->procs || !s->comps)
        return -1;
    for (uint32_t i = 0; i < s->in.nfiles; i++) {
        const struct trace_header *h = s->in.files[i].hdr;
        char name[64];
        if (h->component[0]) {
            snprintf(name, sizeof name, "%s", h->component);
        } else { /* no -c given: the executable's base name */
            const char *b = strrchr(h->exe, '/');
            snprintf(name, sizeof name, "%s", b ? b + 1 : h->exe);
        }
        uint32_t host = s->in.files[i].host, c;
        for (c = 0; c < s->ncomps; c++)
            if (!strcmp(s->comps[c].name, name) && s->comps[c].host == host)
                break;
        if (c == s->ncomps) {
            struct deps_component *x = &s->comps[s->ncomps++];
            memcpy(x->name, name, sizeof x->name);
            x->host = host;
            x->pc.name = deps_literal(s, name);
            x->pc.host = deps_literal(s, h->host);
            x->plan_id = plan_writer_component(s->w, &x->pc);
            if (x->plan_id == UINT32_MAX) {
                deps_fail(s, "writing the plan: %s", plan_writer_error(s->w));
                return -1;
            }
        }
        s->procs[i].component = c;
        deps_map_init(&s->procs[i].threads);
        deps_map_init(&s->procs[i].ends);
        deps_map_init(&s->procs[i].pending_opts);
    }
    return 0;
}

static void deps_progress(struct deps_state *s, int done)
{
    if (!s->opt->progress)
        return;
    uint64_t total = deps_input_total_bytes(&s->in);
    (void)total;
    fprintf(s->opt->progress,
            "\ranalyze: %" PRIu64 " events, %" PRIu64 " blocks, %" PRIu64 " requests%s",
            s->in.events, s->res->blocks, s->res->requests, done ? "\n" : "");
    fflush(s->opt->progress);
}

/* Violations, skew and untraced peers as text (plan summary and stderr). */
static char *deps_report(struct deps_state *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        struct deps_proc *p = &s->procs[f];
        for (uint32_t i = 0; i < p->nall; i++) {
            struct deps_thread *t = p->all[i];
            if (!t->violating)
                continue;
            fprintf(m,
                    "model violation: component %s (pid %u) thread %u switched between open "
                    "requests %u times; %" PRIu64 " events attributed to the connection last "
                    "read (blocks flagged)\n",
                    s->comps[p->component].name, s->in.files[f].hdr->pid, t->tid, t->viol_conns,
                    t->viol_events);
        }
    }
    /* the total correction: the pre-alignment from connection handshakes
     * (deps_input.c) plus the call-pair estimate */
    for (uint32_t i = 0; i < s->nskews; i++) {
        struct deps_skew *k = &s->skews[i];
        const struct deps_input_host *ee = &s->in.hosts[k->callee_host],
                                     *er = &s->in.hosts[k->caller_host];
        fprintf(m,
                "clock skew: host %s runs %+.3f ms from host %s (corrected; %" PRIu64 " call pairs",
                ee->name, (double)(er->corrected_ns - ee->corrected_ns) / 1e6, er->name, k->pairs);
        if (ee->presync_pairs || er->presync_pairs)
            fprintf(m, ", %u connection handshakes",
                    ee->presync_pairs ? ee->presync_pairs : er->presync_pairs);
        fprintf(m, ")\n");
    }
    for (uint32_t h = 0; h < s->in.nhosts; h++) {
        const struct deps_input_host *x = &s->in.hosts[h], *ref = &s->in.hosts[x->presync_ref];
        int reported = 0;
        for (uint32_t i = 0; i < s->nskews; i++)
            reported |= s->skews[i].callee_host == h || s->skews[i].caller_host == h;
        if (x->presync_pairs && !reported)
            fprintf(m,
                    "clock skew: host %s runs %+.3f ms from host %s (corrected; %u connection "
                    "handshakes)\n",
                    x->name, (double)(ref->corrected_ns - x->corrected_ns) / 1e6, ref->name,
                    x->presync_pairs);
    }
    fclose(m);
    return buf;
}

int analyze_run(const char *const *inputs, int ninputs, const char *plan_path,
                const struct analyze_options *opt_in, struct analyze_result *res, char *err,
                size_t errlen)
{
    struct analyze_options opt = *opt_in;
    if (!opt.window_ns)
        opt.window_ns = 200000000ull;
    if (!opt.grace_ns)
        opt.grace_ns = 2000000000ull;
    struct deps_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(res, 0, sizeof *res);
    s->opt = &opt;
    s->res = res;
    s->live.next = s->live.prev = &s->live;
    s->live.refs = 1 << 30;
    int rc = -1;
    char *report = NULL;
    if (deps_input_open(&s->in, inputs, ninputs, opt.salvage, opt.window_ns) != 0) {
        snprintf(err, errlen, "%s", s->in.err);
        goto out;
    }
    const struct trace_header *h0 = s->in.files[0].hdr;
    char werr[512];
    s->w = plan_writer_open(plan_path, h0->recording_id, h0->cpu_scores, h0->ncpu_scores, werr,
                            sizeof werr);
    if (!s->w) {
        snprintf(err, errlen, "%s", werr);
        goto out;
    }
    if (opt.blocks_path && !(s->blocks_out = fopen(opt.blocks_path, "w"))) {
        snprintf(err, errlen, "%s: cannot write", opt.blocks_path);
        goto out;
    }
    if (deps_components(s) != 0) {
        snprintf(err, errlen, "%s", s->failed ? s->err : "out of memory");
        goto out;
    }
    uint32_t file;
    struct deps_queued *q;
    int n = 0;
    while (!s->failed && (n = deps_input_next(&s->in, &file, &q)) > 0) {
        deps_on_event(s, file, q);
        if ((s->in.events & (DEPS_CHECKPOINT_EVENTS - 1)) == 0) {
            deps_checkpoint(s, 0);
            if ((s->in.events & (DEPS_CHECKPOINT_EVENTS * 16 - 1)) == 0)
                deps_progress(s, 0);
        }
    }
    if (!s->failed && n < 0) {
        snprintf(err, errlen, "%s", s->in.err);
        goto out;
    }
    if (!s->failed)
        deps_checkpoint(s, 1);
    if (s->failed) {
        snprintf(err, errlen, "%s", s->err);
        goto out;
    }
    res->events = s->in.events;
    res->late_events = s->in.late;
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        const char *w = trace_reader_warning(s->in.files[f].reader);
        if (w && opt.warnings)
            fprintf(opt.warnings, "preplay analyze: salvaged: %s\n", w);
    }
    /* traces recorded with filters: say so once per set of options (before
     * a "no front end" error, which a filter may be the cause of) */
    for (uint32_t f = 0; f < s->in.nfiles && opt.warnings; f++) {
        const char *o = s->in.files[f].hdr->record_options;
        if (!strstr(o, "--only") && !strstr(o, "--port") && !strstr(o, "--path-prefix"))
            continue;
        uint32_t same = 0, seen = 0;
        for (uint32_t g = 0; g < s->in.nfiles; g++)
            if (!strcmp(s->in.files[g].hdr->record_options, o)) {
                same++;
                seen |= g < f;
            }
        if (!seen) {
            char more[48] = "";
            if (same > 1)
                snprintf(more, sizeof more, " (and %u more traces)", same - 1);
            fprintf(opt.warnings,
                    "preplay analyze: %s%s was recorded with '%s': what those options left out "
                    "is not in the plan\n",
                    s->in.files[f].path, more, o);
        }
    }
    if (!res->requests) {
        snprintf(err, errlen,
                 "no front end: no traced component answered a request from an untraced "
                 "client (%" PRIu64 " blocks, %" PRIu64 " events in %u trace files)",
                 res->blocks, res->events, s->in.nfiles);
        goto out;
    }
    for (uint32_t c = 0; c < s->ncomps; c++) {
        struct deps_component *x = &s->comps[c];
        x->pc.prefork = x->serving_procs > 1 && x->max_threads_per_proc == 1;
        x->pc.workers = x->pc.prefork ? x->serving_procs : x->serving_threads;
        if (plan_writer_update_component(s->w, x->plan_id, &x->pc) != 0) {
            snprintf(err, errlen, "writing the plan: %s", plan_writer_error(s->w));
            goto out;
        }
    }
    for (uint32_t f = 0; f < s->in.nfiles; f++)
        for (uint32_t i = 0; i < s->procs[f].nall; i++) {
            const struct deps_thread *t = s->procs[f].all[i];
            if (t->serving && t->win_end > t->win_first)
                res->window_events += t->win_end - t->win_first;
        }
    res->coverage_all =
        res->resource_events ? (double)res->covered_events / (double)res->resource_events : 1.0;
    res->coverage = res->window_events ? (double)res->covered_events / (double)res->window_events
                                       : res->coverage_all;
    if (res->coverage > 1.0) /* events of a request another thread read (flagged) */
        res->coverage = 1.0;
    report = deps_report(s);
    if (s->in.backwards && opt.warnings)
        fprintf(opt.warnings,
                "preplay analyze: %" PRIu64 " events ended more than %u ms before an earlier "
                "event of their own thread (worst %.3f ms, thread %u in %s): the recording's "
                "clock went backwards there (see what preplay record said at its end); they "
                "were taken as ending with that earlier event\n",
                s->in.backwards, DEPS_BACKWARDS_NS / 1000000u,
                (double)s->in.backwards_worst_ns / 1e6, s->in.backwards_tid,
                s->in.files[s->in.backwards_file].path);
    if (s->in.late && opt.warnings)
        fprintf(opt.warnings,
                "preplay analyze: %" PRIu64 " events came after later events of other threads "
                "had been analysed (their file held them back beyond the merge window of at "
                "most %" PRIu64 " ms); they were analysed out of time order (--window-ms raises "
                "the window)\n",
                s->in.late, s->in.window_ns / 1000000u);
    if (s->lost && opt.warnings)
        fprintf(opt.warnings,
                "preplay analyze: the recording lost %" PRIu64 " events in %u trace file%s "
                "(most: %" PRIu64 " in %s, %s): requests served around the losses are "
                "incomplete or missing in the plan\n",
                s->lost, s->lost_files, s->lost_files == 1 ? "" : "s", s->lost_worst,
                s->in.files[s->lost_worst_file].path, trace_loss_reason_name(s->lost_worst_reason));
    if (s->untraced_calls && opt.warnings)
        fprintf(opt.warnings,
                "preplay analyze: %" PRIu64 " calls went to untraced peers and became external "
                "calls (if a peer is a tier you meant to trace, its trace is missing)\n",
                s->untraced_calls);
    if (report && *report && opt.warnings)
        fprintf(opt.warnings, "%s", report);
    if (plan_writer_summary(s->w, res->coverage, res->unmatched_bytes, res->violations,
                            report ? report : "") != 0) {
        snprintf(err, errlen, "writing the plan: %s", plan_writer_error(s->w));
        goto out;
    }
    deps_progress(s, 1);
    {
        struct plan_writer *w = s->w;
        s->w = NULL;
        if (plan_writer_close(w, err, errlen) != 0)
            goto out;
    }
    rc = 0;
out:
    free(report);
    if (s->w)
        plan_writer_abort(s->w);
    if (s->blocks_out)
        fclose(s->blocks_out);
    /* free what is left: held blocks, open blocks, ends, threads, maps */
    while (s->nheld) {
        struct deps_block *b = s->held[0];
        deps_held_remove(s, b);
        deps_block_free(b);
    }
    free(s->held);
    while (s->npool) {
        struct deps_block *b = s->pool[--s->npool];
        b->ncalls = 0; /* their segments were freed when recycled */
        deps_block_free(b);
    }
    for (struct deps_end *e = s->live.next, *nx; e != &s->live; e = nx) {
        nx = e->next;
        if (e->cur)
            deps_block_free(e->cur);
        while (e->served) {
            struct deps_served *sv = e->served;
            e->served = sv->next;
            free(sv);
        }
        while (e->waiters) { /* their blocks are freed above */
            struct deps_waiter *w = e->waiters;
            e->waiters = w->next;
            free(w);
        }
        free(e);
    }
    if (s->procs)
        for (uint32_t f = 0; f < s->in.nfiles; f++) {
            for (uint32_t i = 0; i < s->procs[f].nall; i++)
                free(s->procs[f].all[i]);
            free(s->procs[f].all);
            deps_map_free(&s->procs[f].threads);
            deps_map_free(&s->procs[f].ends);
            for (size_t j = 0; j < s->procs[f].pending_opts.cap; j++)
                free(s->procs[f].pending_opts.slots[j].value);
            deps_map_free(&s->procs[f].pending_opts);
        }
    struct deps_map *ptr_maps[] = {&s->files, &s->rendezvous, &s->label_text};
    for (size_t i = 0; i < sizeof ptr_maps / sizeof ptr_maps[0]; i++) {
        for (size_t j = 0; j < ptr_maps[i]->cap; j++)
            free(ptr_maps[i]->slots[j].value);
        deps_map_free(ptr_maps[i]);
    }
    deps_map_free(&s->index);
    deps_map_free(&s->waiting);
    deps_map_free(&s->locks);
    deps_map_free(&s->strings);
    deps_map_free(&s->db_endpoints);
    free(s->procs);
    free(s->comps);
    free(s->sched);
    free(s->skews);
    deps_input_close(&s->in);
    free(s);
    return rc;
}
