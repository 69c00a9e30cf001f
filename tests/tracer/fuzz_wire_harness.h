/* fuzz_wire_harness.h - what fuzz_db_wire.c and fuzz_pg_wire.c share: the
 * tracer symbols db_wire.c needs, the check of every record the parser
 * wrote into our own ring, and the script of transfers
 *
 *   [cap and start byte] then [op][len lo][len hi][split][len bytes]...
 *
 * run against one DB connection on descriptor 7 (each target's comment
 * says what its ops and first byte mean). Must never: be included by
 * anything but one fuzz target's translation unit (it defines the
 * tracer's globals). */
#ifndef PREPLAY_FUZZ_WIRE_HARNESS_H
#define PREPLAY_FUZZ_WIRE_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fd_table.h"
#include "io_events.h"
#include "tracer_core.h"

/* What one target adds to the shared script. */
struct fuzz_wire_target {
    int pg_only;  /* every DB event must be of the PostgreSQL dialect */
    uint8_t nops; /* ops 0-5 are shared; op 6, if nops is 7, is extra_op */
    /* sets the connection's dialect and start from the first input byte */
    void (*prepare)(struct tracer_fd *f, uint8_t first);
    void (*extra_op)(const uint8_t *bytes, size_t len, uint8_t split);
};

struct tracer_state tracer_global;
struct tracer_fd *tracer_fds;
_Atomic int tracer_fds_state;
static struct trace_event scratch_event;
static unsigned char interned[1 << 16];

struct tracer_fd *tracer_fd_get_mapping(int fd)
{
    (void)fd;
    return NULL;
}

uint32_t tracer_intern(const char *s, size_t len)
{
    if (len > tracer_global.control->db_max_statement)
        abort(); /* text or parameters kept past the cap */
    /* every byte the parser says is text must be readable (ASan) */
    unsigned sum = 1;
    for (size_t i = 0; i < len; i++)
        sum += (unsigned char)s[i];
    interned[sum & 0xffff] = 1;
    return sum | 1u;
}

uint32_t tracer_stack_id(uint32_t depth)
{
    (void)depth;
    return 0;
}

/* The general path (ring full): a record that goes nowhere. */
struct trace_event *tracer_reserve_uninit(struct tracer_thread *t, size_t event_bytes)
{
    (void)event_bytes;
    tracer_busy_enter(t); /* tracer_commit leaves */
    t->pending_size = 0;
    return &scratch_event;
}

enum { DB_FD = 7 };

static void fuzz_wire_check(const struct tracer_ring *r, int pg_only)
{
    uint64_t head = atomic_load(&r->head);
    for (uint64_t pos = 0; pos < head;) {
        const struct tracer_record_header *h = (const void *)(r->data + pos);
        if (h->size < sizeof *h || pos + h->size > head)
            abort(); /* a record the parser wrote out of its bounds */
        const struct trace_event *ev = (const void *)(h + 1);
        if (h->kind == TRACER_REC_EVENT &&
            (ev->type != TRACE_EV_DB || (pg_only && ev->u.db.dialect != TRACE_DB_POSTGRESQL)))
            abort();
        /* a cut statement says so, with a real length past the cap */
        int cut = h->kind == TRACER_REC_EVENT && (ev->flags & TRACE_F_CUT);
        if (h->kind == TRACER_REC_EVENT && cut != (ev->u.db.query_len || ev->u.db.params_len))
            abort();
        pos += h->size;
    }
}

static int fuzz_wire_run(const struct fuzz_wire_target *tg, const uint8_t *data, size_t size)
{
    static struct tracer_fd *fds;
    static struct tracer_ring *ring;
    static uint64_t conn_id;
    static struct tracer_control control;
    if (!fds) {
        fds = calloc(TRACER_FD_MAX, sizeof *fds);
        ring = calloc(1, TRACER_RING_BYTES);
        if (!fds || !ring)
            abort();
        tracer_fds = fds;
        atomic_store(&tracer_fds_state, 2);
        tracer_global.only_mask = TRACER_ONLY_DB | TRACER_ONLY_NET;
        tracer_global.db_wire_in_use = 1;
        tracer_global.control = &control;
    }
    if (!size)
        return 0;
    control.db_max_statement = data[0] & 1 ? 5000 : 100;
    uint8_t first = data[0];
    data++;
    size--;
    struct tracer_thread threads[2];
    memset(threads, 0, sizeof threads);
    threads[0].tid = 4242;
    threads[1].tid = 4343;
    threads[0].ring = threads[1].ring = ring; /* one after the other */
    atomic_store(&ring->head, 0);
    struct tracer_fd *f = &fds[DB_FD];
    memset(f, 0, sizeof *f);
    f->kind = TRACER_FD_SOCKET;
    f->flags = TRACER_FDF_DB | TRACER_FDF_IDENT_DONE;
    f->conn_id = ++conn_id;
    if (tg->prepare)
        tg->prepare(f, first);
    uint64_t now = 1000;
    for (size_t pos = 0; pos + 4 <= size;) {
        uint8_t op = data[pos] % tg->nops, split = data[pos + 3];
        size_t len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
        pos += 4;
        if (len > size - pos)
            len = size - pos;
        const uint8_t *bytes = data + pos;
        pos += len;
        now += 1000;
        size_t cut = len ? split % (len + 1) : 0;
        struct tracer_thread *t = &threads[(split >> 4) & 1];
        struct iovec iov[2] = {{(void *)bytes, cut}, {(void *)(bytes + cut), len - cut}};
        if (op == 5) {
            f->conn_id = ++conn_id; /* tracer_conn_ensure gives a reused fd a new id */
            continue;
        }
        if (!len)
            continue;
        switch (op) {
        case 0:
            tracer_db_wire_sent(t, f, iov, 2, len, now, now + 10);
            break;
        case 1: {
            size_t parsed = tracer_db_wire_before_send(t, DB_FD, iov, 2, len, now, 0);
            int64_t result = split & 1 ? (int64_t)(len / 2) : (int64_t)len;
            if (split & 2)
                result = -1; /* EAGAIN, EINTR... */
            if (parsed)
                tracer_db_wire_after_send(DB_FD, parsed, result);
            break;
        }
        case 2:
            tracer_db_wire_received(t, f, iov, 2, len, now, now + 10, 0);
            break;
        case 3: /* SSL_write's plaintext, parsed before it goes out */
            tracer_db_wire_before_send(t, DB_FD, iov, 2, len, now, 1);
            break;
        case 4:
            tracer_db_wire_received(t, f, iov, 2, len, now, now + 10, 1);
            break;
        case 6:
            tg->extra_op(bytes, len, split);
            break;
        }
        if (atomic_load(&ring->head) > TRACER_RING_DATA_BYTES / 2) {
            fuzz_wire_check(ring, tg->pg_only);
            atomic_store(&ring->head, 0);
            threads[0].fast_limit = threads[1].fast_limit = 0;
        }
    }
    fuzz_wire_check(ring, tg->pg_only);
    /* a new connection on the descriptor writes what this one owed */
    f->conn_id = ++conn_id;
    tracer_db_wire_received(&threads[0], f, (struct iovec[]){{(void *)"", 0}}, 1, 0, now, now, 0);
    fuzz_wire_check(ring, tg->pg_only);
    return 0;
}

#endif
