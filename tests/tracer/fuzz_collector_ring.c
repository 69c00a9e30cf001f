/* fuzz_collector_ring.c - libFuzzer target for the collector's ring decoder
 * (collector_drain_ring and collector_expand_event, tracer/collector/collector.c).
 * Rings live in memory the traced program maps writable: a program that
 * scribbles over its rings (a stray pointer, a double free) must cost it the
 * rest of that ring's records - reported, and marked as lost - and never
 * crash the collector, make it read outside the ring or write an event the
 * trace format refuses. The harness includes collector.c to reach those
 * static functions, and drains a region of its own:
 *
 *   [flags][ring 0 length lo][hi][ring 0 bytes][ring 1 bytes]
 *
 * flags bit 0: the region's ring clock is the TSC, converted with a
 * conversion built from the flags (else CLOCK_MONOTONIC ns); bit 1: the
 * trace is written as a --max-size ring of 2 MiB. Ring 0 is the process
 * ring (definitions), ring 1 a thread's (tid 77). The last 16 bytes, when
 * there are that many, are also ring 1's folded lock counters as the
 * collector finds them at two looks (collector_note_folded): any values,
 * as a scribbling app leaves them. */
#include "collector.c"

#define FUZZ_REGION_BYTES (TRACER_CONTROL_BYTES + 2 * (uint64_t)TRACER_RING_BYTES)

static char fuzz_trace_path[64];

static void fuzz_remove_trace(void)
{
    unlink(fuzz_trace_path);
}

/* Copies `n` bytes into ring `idx` as its whole content and drains it. */
static void fuzz_drain(struct collector *c, struct collector_process *p,
                       struct collector_region *reg, unsigned idx, const uint8_t *bytes, size_t n)
{
    struct tracer_ring *r = tracer_region_ring(reg->base, idx);
    if (n > TRACER_RING_DATA_BYTES)
        n = TRACER_RING_DATA_BYTES;
    memcpy(r->data, bytes, n);
    r->tid = idx ? 77 : 0;
    atomic_store(&r->tail, 0);
    atomic_store(&r->head, n);
    (void)collector_drain_ring(c, p, reg, idx, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void *region;
    if (!region) {
        region = calloc(1, FUZZ_REGION_BYTES);
        if (!region)
            abort();
        snprintf(fuzz_trace_path, sizeof fuzz_trace_path, "/tmp/fuzz_collector_ring.%d.trace",
                 (int)getpid());
        atexit(fuzz_remove_trace);
    }
    if (size < 3)
        return 0;
    uint8_t flags = data[0];
    size_t n0 = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3;
    size -= 3;
    if (n0 > size)
        n0 = size;

    static struct collector c;
    memset(&c, 0, sizeof c);
    struct collector_process p;
    memset(&p, 0, sizeof p);
    p.pid = 4242;
    snprintf(p.path, sizeof p.path, "%s", fuzz_trace_path);
    struct trace_header h;
    memset(&h, 0, sizeof h);
    snprintf(h.exe, sizeof h.exe, "fuzz");
    h.pid = p.pid;
    struct trace_writer_options wo = {.max_bytes = flags & 2 ? 2 * 1024 * 1024 : 0,
                                      .compression_level = COLLECTOR_ZSTD_LEVEL};
    char err[256];
    p.writer = trace_writer_open(p.path, &h, &wo, err, sizeof err);
    if (!p.writer) {
        fprintf(stderr, "fuzz_collector_ring: %s\n", err); /* /tmp must be writable */
        abort();
    }
    struct collector_region reg;
    memset(&reg, 0, sizeof reg);
    reg.base = region;
    struct tracer_control *ctl = tracer_region_control(region);
    atomic_store(&ctl->ring_clock, flags & 1 ? TRACER_RING_CLOCK_TSC : TRACER_RING_CLOCK_MONO);
    if (flags & 1) {
        /* one conversion in force: ~3 GHz, its origin and slew from the flags */
        struct cpuclock_tsc_segment *s = &c.tsc_history.segment[0];
        s->base_tsc = (uint64_t)(flags >> 2) << 30;
        s->base_mono_ns = 1000000000ull;
        s->rate = 1431655765ull; /* 2^32 / 3 */
        s->mult = s->rate + (flags >> 5);
        s->slew_cycles = (uint64_t)(flags >> 4) << 20;
        c.tsc_history.count = 1;
    }
    fuzz_drain(&c, &p, &reg, 0, data, n0);
    fuzz_drain(&c, &p, &reg, 1, data + n0, size - n0);
    (void)collector_note_losses(&c, &p, &reg, 1);
    if (size >= 16) {
        struct tracer_ring *r = tracer_region_ring(reg.base, 1);
        const uint8_t *tail = data + size - 16;
        for (int look = 0; look < 2; look++) {
            uint32_t low, shared;
            memcpy(&low, tail + 8 * look, 4); /* the high half from the flags */
            uint64_t holds = low | (uint64_t)(flags >> 6) << (30 + 2 * look);
            memcpy(&shared, tail + 8 * look + 4, 4);
            atomic_store(&r->folded_holds, holds);
            atomic_store(&r->folded_shared, shared);
            (void)collector_note_folded(&c, &p, &reg, 1, look);
        }
    }
    trace_writer_close(p.writer, err, sizeof err);
    return 0;
}
