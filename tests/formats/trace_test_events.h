/* trace_test_events.h - deterministic event generators shared by the format
 * tests, the CLI trace generator and the benchmark: a realistic mix (small
 * file writes at increasing offsets, send/recv on connections, lock pairs,
 * CPU slices between them) and an "every field at its extremes" set. Header
 * only, static functions: each test program includes it once. Never random
 * without a seed: tests must be reproducible. */
#ifndef PREPLAY_TRACE_TEST_EVENTS_H
#define PREPLAY_TRACE_TEST_EVENTS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_event.h"
#include "trace_file.h"

static uint64_t trace_test_rng(uint64_t *s)
{
    /* xorshift64*: fast, seeded, good enough for synthetic workloads */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void trace_test_header(struct trace_header *h, uint32_t pid, const char *component)
{
    static char argv[] = "server\0--port\0008080";
    memset(h, 0, sizeof *h);
    strcpy(h->host, "testhost");
    strncpy(h->component, component, sizeof h->component - 1);
    strcpy(h->recording_id, "rec-0001");
    strcpy(h->tracer_version, "0.1.0");
    strcpy(h->exe, "/usr/bin/server");
    h->argv_joined = argv;
    h->argv_len = sizeof argv;
    h->pid = pid;
    h->ppid = 1;
    h->mono_anchor_ns = 1000000000ULL;
    h->real_anchor_ns = 1700000000000000000ULL;
    h->ncpu_scores = 2;
    strcpy(h->cpu_scores[0].name, "zstd-compress");
    h->cpu_scores[0].seconds = 0.125;
    strcpy(h->cpu_scores[1].name, "sha256");
    h->cpu_scores[1].seconds = 1.5e-3;
}

/* State of the realistic mix: per thread a clock, a file offset, a socket. */
struct trace_test_mix {
    uint64_t rng;
    uint32_t nthreads;
    uint64_t clock[16];
    int64_t offset[16];
    uint64_t file_size;
    uint32_t step[16];
};

__attribute__((unused)) static void trace_test_mix_init(struct trace_test_mix *m, uint32_t nthreads,
                                                        uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->rng = seed | 1;
    m->nthreads = nthreads > 16 ? 16 : nthreads;
    for (uint32_t i = 0; i < m->nthreads; i++)
        m->clock[i] = 5000000000ULL + i * 1000;
}

/* Next event of the mix (never STRING/CONN: those come from the caller's
 * preamble, see trace_test_mix_preamble). Per thread the cycle is:
 * recv, cpu, lock acquire, cpu, file write, lock release, cpu, send, cpu. */
__attribute__((unused)) static void trace_test_mix_next(struct trace_test_mix *m,
                                                        struct trace_event *ev)
{
    uint32_t t = (uint32_t)(trace_test_rng(&m->rng) % m->nthreads);
    uint64_t r = trace_test_rng(&m->rng);
    memset(ev, 0, sizeof *ev);
    ev->tid = 1000 + t;
    ev->ts_ns = m->clock[t] + (r & 0x3f);
    uint32_t step = m->step[t]++ % 9;
    switch (step) {
    case 0:
    case 7:
        ev->type = TRACE_EV_NET;
        ev->op = step == 0 ? TRACE_NET_RECV : TRACE_NET_SEND;
        ev->dur_ns = 2000 + (r >> 8) % 6000;
        ev->u.net.fd = 10 + (int32_t)t;
        ev->u.net.conn_id = 1 + t;
        ev->u.net.size = step == 0 ? 4096 : 200 + (r >> 20) % 1800;
        ev->u.net.result = step == 0 ? (int64_t)(100 + (r >> 24) % 400) : (int64_t)ev->u.net.size;
        break;
    case 2:
    case 5:
        ev->type = TRACE_EV_LOCK;
        ev->op = step == 2 ? TRACE_LOCK_ACQUIRE : TRACE_LOCK_RELEASE;
        ev->dur_ns = step == 2 ? 30 + (r >> 8) % 200 : 20 + (r >> 8) % 20;
        ev->u.lock.kind = TRACE_LOCK_MUTEX;
        ev->u.lock.mode = TRACE_LOCK_EXCLUSIVE;
        ev->u.lock.lock_id = 0x7f00deadbe00ULL + 64 * (t % 2);
        break;
    case 4: {
        ev->type = TRACE_EV_FILE;
        ev->op = TRACE_FILE_WRITE;
        ev->dur_ns = 1500 + (r >> 8) % 3000;
        ev->u.file.fd = 3;
        ev->u.file.dev = 0x803;
        ev->u.file.ino = 131077;
        uint64_t n = 60 + (r >> 16) % 140;
        ev->u.file.size = n;
        ev->u.file.result = (int64_t)n;
        ev->u.file.offset = (int64_t)m->file_size;
        ev->u.file.file_size = m->file_size;
        ev->u.file.fd2 = -1;
        m->file_size += n;
        break;
    }
    default:
        ev->type = TRACE_EV_CPU;
        ev->dur_ns = 500 + (r >> 8) % 20000;
        ev->flags = (r >> 40) % 8 == 0 ? TRACE_F_CPU_ESTIMATED : 0;
        break;
    }
    m->clock[t] = ev->ts_ns + ev->dur_ns;
}

/* Identity records the mix refers to: the log file's path and one
 * accepted TCP connection per thread. Returns how many were written to evs. */
__attribute__((unused)) static size_t trace_test_mix_preamble(struct trace_test_mix *m,
                                                              struct trace_event *evs)
{
    static const char path[] = "/var/log/server.log";
    size_t n = 0;
    memset(&evs[n], 0, sizeof evs[n]);
    evs[n].type = TRACE_EV_STRING;
    evs[n].tid = 1000;
    evs[n].ts_ns = m->clock[0];
    evs[n].u.string.id = 1;
    evs[n].u.string.len = sizeof path - 1;
    evs[n].data = path;
    n++;
    memset(&evs[n], 0, sizeof evs[n]);
    evs[n].type = TRACE_EV_FILE;
    evs[n].op = TRACE_FILE_OPEN;
    evs[n].tid = 1000;
    evs[n].ts_ns = m->clock[0];
    evs[n].dur_ns = 4000;
    evs[n].u.file.fd = 3;
    evs[n].u.file.path_id = 1;
    evs[n].u.file.dev = 0x803;
    evs[n].u.file.ino = 131077;
    evs[n].u.file.offset = -1;
    evs[n].u.file.result = 3;
    evs[n].u.file.open_flags = 02101;
    evs[n].u.file.fd2 = -1;
    n++;
    for (uint32_t t = 0; t < m->nthreads; t++) {
        struct trace_event *e = &evs[n++];
        memset(e, 0, sizeof *e);
        e->type = TRACE_EV_CONN;
        e->op = TRACE_CONN_ACCEPT;
        e->tid = 1000 + t;
        e->ts_ns = m->clock[t];
        e->dur_ns = 3000;
        e->u.conn.fd = 10 + (int32_t)t;
        e->u.conn.proto = TRACE_PROTO_TCP;
        e->u.conn.family = 2;
        e->u.conn.local_port = 8080;
        e->u.conn.remote_port = (uint16_t)(40000 + t);
        e->u.conn.local_addr[0] = 127;
        e->u.conn.local_addr[3] = 1;
        e->u.conn.remote_addr[0] = 127;
        e->u.conn.remote_addr[3] = 1;
        e->u.conn.conn_id = 1 + t;
        e->u.conn.result = 10 + t;
        m->clock[t] += 3000;
    }
    return n;
}

/* A hostile trace (issue 24 item 1): n distinct STRINGs of len zero bytes
 * each (len <= TRACE_MAX_STRING_BYTES, so each record is valid), which
 * zstd squeezes to a few KB per 64 MiB frame: 256 of 16 MiB (~130 KB on
 * disk) declare the whole 4 GiB TRACE_MAX_STRING_TABLE_BYTES. 0, or -1
 * with err. */
__attribute__((unused)) static int
trace_test_write_big_strings(const char *path, uint32_t n, uint32_t len, char *err, size_t errlen)
{
    struct trace_header h;
    trace_test_header(&h, 4242, "hostile");
    struct trace_writer_options o = {.frame_bytes = 64u << 20};
    struct trace_writer *w = trace_writer_open(path, &h, &o, err, errlen);
    static const uint8_t zero[1];
    uint8_t *zeros = len ? calloc(len, 1) : NULL;
    int rc = w && (zeros || !len) ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_STRING;
        ev.tid = 4242;
        ev.ts_ns = 1000 + i;
        ev.u.string.id = i + 1;
        ev.u.string.len = len;
        ev.data = zeros ? zeros : zero;
        if (trace_writer_append(w, &ev) != 0) {
            snprintf(err, errlen, "%s", trace_writer_error(w));
            rc = -1;
        }
    }
    free(zeros);
    if (w && trace_writer_close(w, rc ? NULL : err, errlen) != 0)
        rc = -1;
    return rc;
}

/* A hostile trace for stack tables: n distinct STACKs of
 * TRACE_MAX_STACK_FRAMES zero addresses (32 KB each, a few bytes on disk).
 * 0, or -1 with err. */
__attribute__((unused)) static int trace_test_write_big_stacks(const char *path, uint32_t n,
                                                               char *err, size_t errlen)
{
    struct trace_header h;
    trace_test_header(&h, 4243, "stacks");
    struct trace_writer *w = trace_writer_open(path, &h, NULL, err, errlen);
    uint64_t *frames = calloc(TRACE_MAX_STACK_FRAMES, sizeof *frames);
    int rc = w && frames ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_STACK;
        ev.op = TRACE_STACK_FRAMES;
        ev.tid = 4243;
        ev.u.stack.id = i + 1;
        ev.u.stack.nframes = TRACE_MAX_STACK_FRAMES;
        ev.data = frames;
        if (trace_writer_append(w, &ev) != 0) {
            snprintf(err, errlen, "%s", trace_writer_error(w));
            rc = -1;
        }
    }
    free(frames);
    if (w && trace_writer_close(w, rc ? NULL : err, errlen) != 0)
        rc = -1;
    return rc;
}

/* Hostile traces for the tables analyze and info keep per distinct key
 * (issue 24 item 1): n events that each name a new one, which zstd
 * squeezes to a few bytes each. kind "tids": a CPU slice of tid i;
 * "conns": an accepted TCP connection i, never closed, with a send on it;
 * "fds": a socket option on descriptor i (before any CONN) and a file
 * opened as descriptor i with its own inode, never closed; "locks": an
 * acquire and release of lock i, all serving one request. 0, or -1 with
 * err. "closed": as conns, each closed after its send (the table never
 * holds more than one). */
__attribute__((unused)) static int trace_test_write_many(const char *path, const char *kind,
                                                         uint32_t n, char *err, size_t errlen)
{
    static const char *const kinds[] = {"tids", "conns", "fds", "locks", "closed"};
    int k = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(kind, kinds[i]))
            k = i;
    if (k < 0) {
        snprintf(err, errlen, "unknown kind %s (tids, conns, fds, locks, closed)", kind);
        return -1;
    }
    struct trace_header h;
    trace_test_header(&h, 4244, "many");
    struct trace_writer *w = trace_writer_open(path, &h, NULL, err, errlen);
    int rc = w ? 0 : -1;
    uint64_t clock = 1000000000ull;
    if (w && k == 3) { /* the locks are taken serving a request */
        struct trace_event ev[2];
        memset(ev, 0, sizeof ev);
        ev[0].type = TRACE_EV_CONN;
        ev[0].op = TRACE_CONN_ACCEPT;
        ev[0].tid = 1000;
        ev[0].ts_ns = clock;
        ev[0].dur_ns = 1000;
        ev[0].u.conn = (struct trace_conn_event){.fd = 5,
                                                 .proto = TRACE_PROTO_TCP,
                                                 .family = 2,
                                                 .local_port = 8080,
                                                 .remote_port = 40000,
                                                 .conn_id = 1,
                                                 .result = 5,
                                                 .local_addr = {10, 0, 0, 1},
                                                 .remote_addr = {10, 0, 0, 9}};
        ev[1] = ev[0];
        ev[1].type = TRACE_EV_NET;
        ev[1].op = TRACE_NET_RECV;
        ev[1].ts_ns = clock + 2000;
        ev[1].u.net = (struct trace_net_event){.fd = 5, .conn_id = 1, .size = 100, .result = 100};
        clock += 100000;
        for (int j = 0; rc == 0 && j < 2; j++)
            if (trace_writer_append(w, &ev[j]) != 0) {
                snprintf(err, errlen, "%s", trace_writer_error(w));
                rc = -1;
            }
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct trace_event ev[3];
        int nev = 1;
        memset(ev, 0, sizeof ev);
        ev[0].tid = k == 0 ? 1000 + i : 1000;
        ev[0].ts_ns = clock;
        ev[0].dur_ns = 1000;
        if (k == 0) {
            ev[0].type = TRACE_EV_CPU;
        } else if (k == 1 || k == 4) {
            ev[0].type = TRACE_EV_CONN;
            ev[0].op = TRACE_CONN_ACCEPT;
            ev[0].u.conn = (struct trace_conn_event){.fd = (int32_t)(10 + i % 1000000),
                                                     .proto = TRACE_PROTO_TCP,
                                                     .family = 2,
                                                     .local_port = 8080,
                                                     .remote_port = (uint16_t)(1024 + i % 60000),
                                                     .conn_id = 1 + (uint64_t)i,
                                                     .result = (int32_t)(10 + i % 1000000)};
            ev[0].u.conn.local_addr[0] = ev[0].u.conn.remote_addr[0] = 127;
            ev[0].u.conn.local_addr[3] = 1;
            memcpy(&ev[0].u.conn.remote_addr[1], &i, 3);
            ev[1] = ev[0];
            ev[1].type = TRACE_EV_NET;
            ev[1].op = TRACE_NET_SEND;
            ev[1].ts_ns = clock + 1500;
            ev[1].u.net = (struct trace_net_event){
                .fd = ev[0].u.conn.fd, .conn_id = 1 + (uint64_t)i, .size = 10, .result = 10};
            nev = 2;
            if (k == 4) {
                ev[2] = ev[0];
                ev[2].op = TRACE_CONN_CLOSE;
                ev[2].ts_ns = clock + 3000;
                nev = 3;
            }
        } else if (k == 2) {
            ev[0].type = TRACE_EV_SOCKOPT;
            ev[0].u.sockopt.fd = (int32_t)(3 + i);
            ev[0].u.sockopt.level = 6;
            ev[0].u.sockopt.name = 1;
            ev[0].u.sockopt.value = 1;
            ev[1].type = TRACE_EV_FILE;
            ev[1].op = TRACE_FILE_OPEN;
            ev[1].tid = 1000;
            ev[1].ts_ns = clock + 1500;
            ev[1].dur_ns = 1000;
            ev[1].u.file = (struct trace_file_event){.fd = (int32_t)(3 + i),
                                                     .dev = 2049,
                                                     .ino = 1 + (uint64_t)i,
                                                     .offset = -1,
                                                     .result = (int64_t)(3 + i),
                                                     .fd2 = -1};
            nev = 2;
        } else {
            ev[0].type = TRACE_EV_LOCK;
            ev[0].op = TRACE_LOCK_ACQUIRE;
            ev[0].u.lock = (struct trace_lock_event){
                .kind = TRACE_LOCK_MUTEX, .mode = TRACE_LOCK_EXCLUSIVE, .lock_id = 0x1000 + i};
            ev[1] = ev[0];
            ev[1].op = TRACE_LOCK_RELEASE;
            ev[1].ts_ns = clock + 1500;
            nev = 2;
        }
        clock += 100000; /* 2000 in the analyzer's 200 ms window: its queues stay small */
        for (int j = 0; rc == 0 && j < nev; j++)
            if (trace_writer_append(w, &ev[j]) != 0) {
                snprintf(err, errlen, "%s", trace_writer_error(w));
                rc = -1;
            }
    }
    if (w && trace_writer_close(w, rc ? NULL : err, errlen) != 0)
        rc = -1;
    return rc;
}

#endif
