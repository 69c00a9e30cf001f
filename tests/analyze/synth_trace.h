/* synth_trace.h - writes synthetic but well-formed trace files through the
 * project's trace writer (formats/), for the analyzer's unit tests and its
 * benchmark generator. Events are written per thread with a cursor that
 * advances like the tracer's clock (a CPU event is stamped with the end of
 * the previous event), buffered in a heap and written in end-time order (the
 * order the collector delivers), so callers may produce the threads of a
 * process in any order within the flush horizon.
 *
 * Header only, static functions: each program includes it once. Write
 * failures end the program with a one-line reason (these are test tools);
 * it must never write outside the directory it is given. */
#ifndef PREPLAY_SYNTH_TRACE_H
#define PREPLAY_SYNTH_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "trace_file.h"

struct synth_pending {
    uint64_t key, seq;
    struct trace_event ev;
};

struct synth_proc {
    struct trace_writer *w;
    struct synth_pending *heap;
    size_t n, cap;
    uint64_t seq;
    uint64_t written;
    uint32_t next_string, next_conn;
};

struct synth_thread {
    struct synth_proc *p;
    uint32_t tid;
    uint64_t now; /* CLOCK_MONOTONIC of this thread's next event */
};

/* An address: IPv4 a.b.c.d:port (family AF_INET). */
struct synth_addr {
    uint8_t ip[4];
    uint16_t port;
};

static inline void synth_die(const char *what, const char *why)
{
    fprintf(stderr, "synth_trace: %s: %s\n", what, why);
    exit(1);
}

/* Opens DIR/COMPONENT-PID.trace. The host's realtime anchor is
 * mono + 1.7e18 + clock_error_ns: a host whose realtime clock is off by
 * clock_error_ns (no NTP) maps onto the common timeline that far off. */
static inline void synth_open(struct synth_proc *p, const char *dir, const char *component,
                              const char *host, const char *recording, uint32_t pid,
                              int64_t clock_error_ns)
{
    static char argv[] = "server\0--synthetic";
    struct trace_header h;
    memset(&h, 0, sizeof h);
    memset(p, 0, sizeof *p);
    snprintf(h.host, sizeof h.host, "%s", host);
    snprintf(h.component, sizeof h.component, "%s", component);
    snprintf(h.recording_id, sizeof h.recording_id, "%s", recording);
    strcpy(h.tracer_version, "synthetic");
    snprintf(h.exe, sizeof h.exe, "/usr/bin/%s", component);
    h.argv_joined = argv;
    h.argv_len = sizeof argv;
    h.pid = pid;
    h.ppid = 1;
    h.mono_anchor_ns = 1000000000ull;
    h.real_anchor_ns = (uint64_t)(1700000000000000000ll + 1000000000ll + clock_error_ns);
    h.ncpu_scores = 1;
    strcpy(h.cpu_scores[0].name, "zstd-compress");
    h.cpu_scores[0].seconds = 0.125;
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s-%u.trace", dir, component, pid);
    p->w = trace_writer_open(path, &h, NULL, err, sizeof err);
    if (!p->w)
        synth_die(path, err);
    p->next_string = 1;
    p->next_conn = 1;
}

static inline int synth_before(const struct synth_pending *a, const struct synth_pending *b)
{
    return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static inline void synth_push(struct synth_proc *p, const struct trace_event *ev)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 1024;
        p->heap = realloc(p->heap, p->cap * sizeof *p->heap);
        if (!p->heap)
            synth_die("heap", "out of memory");
    }
    struct synth_pending x = {
        .key = ev->ts_ns + (ev->type == TRACE_EV_CPU ? 0 : ev->dur_ns), .seq = p->seq++, .ev = *ev};
    size_t i = p->n++;
    while (i > 0 && synth_before(&x, &p->heap[(i - 1) / 2])) {
        p->heap[i] = p->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    p->heap[i] = x;
}

static inline void synth_write(struct synth_proc *p, const struct trace_event *ev)
{
    if (trace_writer_append(p->w, ev) != 0)
        synth_die("append", trace_writer_error(p->w));
    p->written++;
}

/* Writes every buffered event that ended before `horizon`, in end order. */
static inline void synth_flush(struct synth_proc *p, uint64_t horizon)
{
    while (p->n && p->heap[0].key < horizon) {
        struct trace_event ev = p->heap[0].ev;
        struct synth_pending last = p->heap[--p->n];
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = SIZE_MAX;
            const struct synth_pending *best = &last;
            if (l < p->n && synth_before(&p->heap[l], best)) {
                m = l;
                best = &p->heap[l];
            }
            if (r < p->n && synth_before(&p->heap[r], best))
                m = r;
            if (m == SIZE_MAX)
                break;
            p->heap[i] = p->heap[m];
            i = m;
        }
        if (p->n)
            p->heap[i] = last;
        synth_write(p, &ev);
    }
}

static inline int synth_by_thread(const void *a, const void *b)
{
    const struct synth_pending *x = a, *y = b;
    if (x->ev.tid != y->ev.tid)
        return x->ev.tid < y->ev.tid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Like synth_flush, but in the collector's order: one drain round writes
 * each thread's events of the round in turn (thread by thread, each in its
 * own order), so a file is in time order only to within a round. */
static inline void synth_flush_round(struct synth_proc *p, uint64_t horizon)
{
    size_t n0 = p->n;
    struct synth_pending *round = malloc((n0 ? n0 : 1) * sizeof *round);
    if (!round)
        synth_die("round", "out of memory");
    size_t n = 0;
    while (p->n && p->heap[0].key < horizon) {
        round[n++] = p->heap[0];
        struct synth_pending last = p->heap[--p->n];
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = SIZE_MAX;
            const struct synth_pending *best = &last;
            if (l < p->n && synth_before(&p->heap[l], best)) {
                m = l;
                best = &p->heap[l];
            }
            if (r < p->n && synth_before(&p->heap[r], best))
                m = r;
            if (m == SIZE_MAX)
                break;
            p->heap[i] = p->heap[m];
            i = m;
        }
        if (p->n)
            p->heap[i] = last;
    }
    qsort(round, n, sizeof *round, synth_by_thread);
    for (size_t i = 0; i < n; i++)
        synth_write(p, &round[i].ev);
    free(round);
}

static inline void synth_close(struct synth_proc *p)
{
    char err[512];
    synth_flush(p, UINT64_MAX);
    if (trace_writer_close(p->w, err, sizeof err) != 0)
        synth_die("close", err);
    free(p->heap);
    memset(p, 0, sizeof *p);
}

/* A string table entry, written at once (before any event that names it).
 * Returns its id. */
static inline uint32_t synth_string(struct synth_proc *p, const char *s)
{
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_STRING;
    ev.tid = 1;
    ev.u.string.id = p->next_string++;
    ev.u.string.len = (uint32_t)strlen(s);
    ev.data = s;
    synth_write(p, &ev);
    return ev.u.string.id;
}

static inline void synth_thread_init(struct synth_thread *t, struct synth_proc *p, uint32_t tid,
                                     uint64_t now)
{
    t->p = p;
    t->tid = tid;
    t->now = now;
}

/* A new event of thread t starting now and lasting dur; the cursor moves
 * past it. The caller fills the type-specific fields, then synth_emit. */
static inline struct trace_event synth_event(struct synth_thread *t, uint8_t type, uint8_t op,
                                             uint64_t dur)
{
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.op = op;
    ev.tid = t->tid;
    ev.ts_ns = t->now;
    ev.dur_ns = dur;
    t->now += dur;
    return ev;
}

static inline void synth_emit(struct synth_thread *t, const struct trace_event *ev)
{
    synth_push(t->p, ev);
}

static inline void synth_cpu(struct synth_thread *t, uint64_t dur)
{
    struct trace_event ev = synth_event(t, TRACE_EV_CPU, 0, dur);
    synth_emit(t, &ev);
}

/* Waits (off CPU, no event) for dur: think time, idle. */
static inline void synth_idle(struct synth_thread *t, uint64_t dur)
{
    t->now += dur;
}

static inline void synth_conn_tcp(struct synth_thread *t, uint8_t op, uint64_t conn_id, int32_t fd,
                                  const struct synth_addr *local, const struct synth_addr *remote)
{
    struct trace_event ev = synth_event(t, TRACE_EV_CONN, op, 2000);
    ev.u.conn.fd = fd;
    ev.u.conn.conn_id = conn_id;
    if (local && remote) {
        ev.u.conn.proto = TRACE_PROTO_TCP;
        ev.u.conn.family = AF_INET;
        memcpy(ev.u.conn.local_addr, local->ip, 4);
        memcpy(ev.u.conn.remote_addr, remote->ip, 4);
        ev.u.conn.local_port = local->port;
        ev.u.conn.remote_port = remote->port;
    }
    ev.u.conn.result = fd;
    synth_emit(t, &ev);
}

static inline void synth_conn_unix(struct synth_thread *t, uint8_t op, uint64_t conn_id, int32_t fd,
                                   uint64_t inode, uint64_t peer_inode)
{
    struct trace_event ev = synth_event(t, TRACE_EV_CONN, op, 2000);
    ev.u.conn.fd = fd;
    ev.u.conn.conn_id = conn_id;
    ev.u.conn.proto = TRACE_PROTO_UNIX_STREAM;
    ev.u.conn.family = AF_UNIX;
    ev.u.conn.unix_inode = inode;
    ev.u.conn.unix_peer_inode = peer_inode;
    ev.u.conn.result = fd;
    synth_emit(t, &ev);
}

/* A connection's end of life (TRACE_CONN_CLOSE / SHUTDOWN). */
static inline void synth_conn_end(struct synth_thread *t, uint8_t op, uint64_t conn_id, int32_t fd)
{
    synth_conn_tcp(t, op, conn_id, fd, NULL, NULL);
}

/* send/recv of `result` bytes (0 = EOF, <0 = -errno) on conn_id. */
static inline void synth_net(struct synth_thread *t, uint8_t op, uint64_t conn_id, int64_t result,
                             uint64_t dur)
{
    struct trace_event ev = synth_event(t, TRACE_EV_NET, op, dur);
    ev.u.net.fd = 10;
    ev.u.net.conn_id = conn_id;
    ev.u.net.size = op == TRACE_NET_RECV ? 65536 : (uint64_t)(result > 0 ? result : 0);
    ev.u.net.result = result;
    ev.u.net.nmsgs = 1;
    if (result < 0)
        ev.flags |= TRACE_F_ERROR;
    synth_emit(t, &ev);
}

static inline void synth_label(struct synth_thread *t, uint64_t conn_id, uint32_t label_id)
{
    struct trace_event ev = synth_event(t, TRACE_EV_LABEL, 0, 0);
    ev.u.label.conn_id = conn_id;
    ev.u.label.label_id = label_id;
    synth_emit(t, &ev);
}

/* A file operation on (dev 0x803, ino) at offset with `bytes` done;
 * file_size is the file's size before the operation. */
static inline void synth_file(struct synth_thread *t, uint8_t op, uint32_t path_id, uint64_t ino,
                              int64_t offset, int64_t bytes, uint64_t file_size, uint64_t dur)
{
    struct trace_event ev = synth_event(t, TRACE_EV_FILE, op, dur);
    ev.u.file.fd = 7;
    ev.u.file.path_id = path_id;
    ev.u.file.dev = 0x803;
    ev.u.file.ino = ino;
    ev.u.file.offset = offset;
    ev.u.file.size = bytes > 0 ? (uint64_t)bytes : 0;
    ev.u.file.result = bytes;
    ev.u.file.file_size = file_size;
    ev.u.file.fd2 = -1;
    synth_emit(t, &ev);
}

static inline void synth_lock(struct synth_thread *t, uint8_t op, uint64_t lock_id, int32_t result,
                              uint64_t dur)
{
    struct trace_event ev = synth_event(t, TRACE_EV_LOCK, op, dur);
    ev.u.lock.kind = TRACE_LOCK_MUTEX;
    ev.u.lock.mode = TRACE_LOCK_EXCLUSIVE;
    ev.u.lock.lock_id = lock_id;
    ev.u.lock.result = result;
    synth_emit(t, &ev);
}

static inline void synth_db(struct synth_thread *t, uint8_t op, uint64_t db_conn_id,
                            uint32_t query_id, uint64_t rows, uint64_t dur)
{
    struct trace_event ev = synth_event(t, TRACE_EV_DB, op, dur);
    ev.u.db.source = TRACE_DB_CAPI;
    ev.u.db.db_conn_id = db_conn_id;
    ev.u.db.query_id = query_id;
    ev.u.db.rows = rows;
    synth_emit(t, &ev);
}

#endif
