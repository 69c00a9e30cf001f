/* stacks.c - optional call stacks on events (`preplay record --stacks N`).
 *
 * Each non-CPU event may carry a stack id: up to N return addresses of the
 * calling thread (libunwind's unw_backtrace, our own frames skipped),
 * deduplicated in a process-wide table. A new stack is written once as a
 * STACK record (op TRACE_STACK_FRAMES) in the process ring; each address is
 * symbolized once per process with dladdr, written as a STRING and tied to
 * the address by a STACK record with op TRACE_STACK_SYMBOL (FORMAT.md §6).
 *
 * Off by default: unwinding costs microseconds per event (docs/benchmarks.md).
 * dladdr takes the dynamic loader's lock, so stacks are skipped for events
 * raised while our own code is already running on the thread (signal
 * handlers interrupting the tracer). Built only with libunwind. */
#include "stacks.h"

#include "tracer_core.h"

#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef PREPLAY_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define STACKS_MAX_DEPTH 32
#define STACKS_SLOTS (1u << 14)
#define STACKS_ADDR_SLOTS (1u << 16)
#define STACKS_SCAN 8 /* frames of our own library we may have to skip */

struct stacks_slot {
    _Atomic uint32_t id;
    uint32_t nframes;
    uint64_t hash;
    uint64_t frames[STACKS_MAX_DEPTH];
};

static struct stacks_slot *stacks_table;
static _Atomic uint64_t *stacks_addrs; /* addresses already symbolized */
static _Atomic uint32_t stacks_next_id;
static _Atomic int stacks_state;                /* 0 unmapped, 1 ready, -1 failed */
static uint64_t stacks_self_lo, stacks_self_hi; /* our library's code */

static int stacks_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t self = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (self >= lo && self < hi) {
            stacks_self_lo = lo;
            stacks_self_hi = hi;
            return 1;
        }
    }
    return 0;
}

static int stacks_init(void)
{
    int st = atomic_load_explicit(&stacks_state, memory_order_acquire);
    if (st)
        return st;
    void *t = (void *)syscall(SYS_mmap, NULL, sizeof(struct stacks_slot) * STACKS_SLOTS,
                              PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *a = (void *)syscall(SYS_mmap, NULL, sizeof(uint64_t) * STACKS_ADDR_SLOTS,
                              PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED || a == MAP_FAILED) {
        atomic_store(&stacks_state, -1);
        return -1;
    }
    stacks_table = t;
    stacks_addrs = a;
    dl_iterate_phdr(stacks_find_self, (void *)(uintptr_t)&tracer_stack_id);
    atomic_store_explicit(&stacks_state, 1, memory_order_release);
    return 1;
}

/* Writes "symbol+0xoff (library)" for an address not seen before. */
static void stacks_symbolize(uint64_t addr)
{
    uint32_t mask = STACKS_ADDR_SLOTS - 1;
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;
    for (uint32_t i = (uint32_t)(h >> 40) & mask, n = 0; n < 32; i = (i + 1) & mask, n++) {
        uint64_t cur = atomic_load_explicit(&stacks_addrs[i], memory_order_relaxed);
        if (cur == addr)
            return;
        if (cur)
            continue;
        uint64_t expect = 0;
        if (!atomic_compare_exchange_strong(&stacks_addrs[i], &expect, addr)) {
            if (expect == addr)
                return;
            continue;
        }
        Dl_info info;
        char text[512];
        int len;
        if (dladdr((void *)(uintptr_t)addr, &info) && info.dli_fname) {
            const char *lib = strrchr(info.dli_fname, '/');
            lib = lib ? lib + 1 : info.dli_fname;
            if (info.dli_sname)
                len = snprintf(text, sizeof text, "%s+0x%lx (%s)", info.dli_sname,
                               (unsigned long)(addr - (uint64_t)(uintptr_t)info.dli_saddr), lib);
            else
                len = snprintf(text, sizeof text, "%s+0x%lx", lib,
                               (unsigned long)(addr - (uint64_t)(uintptr_t)info.dli_fbase));
        } else {
            len = snprintf(text, sizeof text, "0x%lx", (unsigned long)addr);
        }
        if (len < 0)
            return;
        if ((size_t)len >= sizeof text)
            len = sizeof text - 1;
        uint32_t sid = tracer_intern(text, (size_t)len);
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_STACK;
        ev.op = TRACE_STACK_SYMBOL;
        ev.tid = tracer_gettid();
        ev.u.stack.id = sid;
        ev.u.stack.nframes = 1;
        tracer_emit_definition_data(&ev, &addr, sizeof addr);
        return;
    }
}

uint32_t tracer_stack_id(uint32_t depth)
{
    if (stacks_init() < 0)
        return 0;
    if (depth > STACKS_MAX_DEPTH)
        depth = STACKS_MAX_DEPTH;
    void *buf[STACKS_MAX_DEPTH + STACKS_SCAN];
    int n = unw_backtrace(buf, (int)depth + STACKS_SCAN);
    int skip = 0; /* the stack starts at the application's call into us */
    while (skip < n && (uint64_t)(uintptr_t)buf[skip] >= stacks_self_lo &&
           (uint64_t)(uintptr_t)buf[skip] < stacks_self_hi)
        skip++;
    if (n - skip <= 0)
        return 0;
    uint32_t nframes = (uint32_t)(n - skip) < depth ? (uint32_t)(n - skip) : depth;
    uint64_t frames[STACKS_MAX_DEPTH];
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < nframes; i++) {
        frames[i] = (uint64_t)(uintptr_t)buf[i + skip];
        h = (h ^ frames[i]) * 1099511628211ull;
    }
    uint32_t mask = STACKS_SLOTS - 1;
    for (uint32_t i = (uint32_t)h & mask, probes = 0; probes < 64; i = (i + 1) & mask, probes++) {
        struct stacks_slot *s = &stacks_table[i];
        uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
        if (id) {
            if (s->hash == h && s->nframes == nframes &&
                !memcmp(s->frames, frames, nframes * sizeof frames[0]))
                return id;
            continue;
        }
        /* Claim the slot: UINT32_MAX marks "being filled" for other threads,
         * which then move on (a duplicate stack entry is harmless). */
        uint32_t expect = 0;
        if (!atomic_compare_exchange_strong(&s->id, &expect, UINT32_MAX))
            continue;
        s->hash = h;
        s->nframes = nframes;
        memcpy(s->frames, frames, nframes * sizeof frames[0]);
        for (uint32_t f = 0; f < nframes; f++)
            stacks_symbolize(frames[f]);
        uint32_t new_id = atomic_fetch_add(&stacks_next_id, 1) + 1;
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_STACK;
        ev.op = TRACE_STACK_FRAMES;
        ev.tid = tracer_gettid();
        ev.u.stack.id = new_id;
        ev.u.stack.nframes = nframes;
        if (tracer_emit_definition_data(&ev, frames, nframes * sizeof frames[0]) != 0) {
            atomic_store(&s->id, 0);
            return 0;
        }
        atomic_store_explicit(&s->id, new_id, memory_order_release);
        return new_id;
    }
    return 0; /* table crowded here: this event goes without a stack */
}

void tracer_stacks_after_fork(void)
{
    /* Ids and symbol records belong to the parent's trace: start over
     * (fresh mappings, so the child touches no page it does not use). */
    if (atomic_load(&stacks_state) == 1) {
        syscall(SYS_munmap, stacks_table, sizeof(struct stacks_slot) * STACKS_SLOTS);
        syscall(SYS_munmap, (void *)stacks_addrs, sizeof(uint64_t) * STACKS_ADDR_SLOTS);
        stacks_table = NULL;
        stacks_addrs = NULL;
    }
    atomic_store(&stacks_state, 0);
    atomic_store(&stacks_next_id, 0);
}

#else

uint32_t tracer_stack_id(uint32_t depth)
{
    (void)depth;
    return 0;
}

void tracer_stacks_after_fork(void) {}

#endif
