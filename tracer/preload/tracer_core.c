/* tracer_core.c - process and thread lifecycle of libpreplay_trace.so:
 * registration with the collector, ring claiming, the event write path and
 * the process string table.
 *
 * Everything here runs inside an application we must not harm. Internal
 * operations use raw syscalls (never our own wrappers), the hot path takes
 * no lock and never allocates, and every failure degrades to "not traced". */
#include "tracer_core.h"

#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpu_time.h"
#include "io_events.h"

/* generation 1 before the first registration: no thread's claimed_gen (0
 * until it claims a ring) matches it */
struct tracer_state tracer_global = {.generation = 1};

__thread struct tracer_thread tracer_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t tracer_thread_key;
static int tracer_key_ready;
static _Atomic int tracer_init_tried; /* tracer_init_once ran (or runs) */
static void tracer_init_once(void);
static int tracer_drop_local; /* collector stopped draining: drop from now on */

void *tracer_resolve(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        static const char msg[] = "preplay: cannot resolve a libc function; aborting\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        abort();
    }
    return p;
}

struct tracer_find_ctx {
    const char *names[64];
    size_t n;
    uintptr_t self_base;
    char store[64][256];
};

static int tracer_collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct tracer_find_ctx *c = arg;
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == c->self_base)
        return 0;
    if (c->n >= 64)
        return 1;
    size_t len = strnlen(info->dlpi_name, 255);
    memcpy(c->store[c->n], info->dlpi_name, len);
    c->store[c->n][len] = 0;
    c->names[c->n] = c->store[c->n];
    c->n++;
    return 0;
}

/* dlsym(RTLD_NEXT) misses a library loaded RTLD_LOCAL by dlopen (as Python
 * loads extension modules with their dependencies: libmariadb, libssl):
 * then ask each loaded object (other than us) whether it defines the
 * symbol. Runs once per function, never on the hot path. */
void *tracer_resolve_loaded(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    static struct tracer_find_ctx ctx; /* large: not on the app's stack */
    static _Atomic int ctx_lock;
    while (atomic_exchange_explicit(&ctx_lock, 1, memory_order_acquire))
        syscall(SYS_sched_yield);
    Dl_info self;
    memset(&ctx.names, 0, sizeof ctx.names);
    ctx.n = 0;
    ctx.self_base = 0;
    if (dladdr((void *)tracer_resolve_loaded, &self) && self.dli_fbase) {
        struct link_map *lm = NULL;
        void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
                ctx.self_base = lm->l_addr;
            dlclose(h);
        }
    }
    dl_iterate_phdr(tracer_collect_object, &ctx);
    for (size_t i = 0; i < ctx.n && !p; i++) {
        void *h = dlopen(ctx.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *q = dlsym(h, name);
        Dl_info where;
        /* skip our own definition (found through a dependency's scope) */
        if (q && !(dladdr(q, &where) && where.dli_fbase == self.dli_fbase))
            p = q;
        dlclose(h);
    }
    atomic_store_explicit(&ctx_lock, 0, memory_order_release);
    return p;
}

void *tracer_resolve_loaded_required(const char *name)
{
    void *p = tracer_resolve_loaded(name);
    if (!p) {
        /* nothing sane is left to call: say which function, without stdio */
        static const char head[] = "preplay: cannot find ",
                          tail[] = ", which the app called; aborting\n";
        syscall(SYS_write, 2, head, sizeof head - 1);
        syscall(SYS_write, 2, name, strlen(name));
        syscall(SYS_write, 2, tail, sizeof tail - 1);
        abort();
    }
    return p;
}

uint32_t tracer_gettid(void)
{
    if (TRACER_LIKELY(tracer_tls.tid))
        return tracer_tls.tid;
    tracer_tls.tid = (uint32_t)syscall(SYS_gettid);
    return tracer_tls.tid;
}

/* ---- registration ------------------------------------------------------ */

/* The collector name and component as first seen at load: an app that
 * clears its environment and then forks (a daemon, nginx's master before
 * its workers) must still register its children with the same collector. */
static char tracer_env_saved[2][256];

static const char *tracer_env(const char *name)
{
    /* getenv is safe in constructors and after fork */
    const char *v = getenv(name);
    int slot = !strcmp(name, "PREPLAY_COLLECTOR") ? 0 : !strcmp(name, "PREPLAY_COMPONENT") ? 1 : -1;
    if (slot < 0)
        return v;
    if (v) {
        if (!tracer_env_saved[slot][0])
            snprintf(tracer_env_saved[slot], sizeof tracer_env_saved[slot], "%s", v);
        return v;
    }
    return tracer_env_saved[slot][0] ? tracer_env_saved[slot] : NULL;
}

int tracer_collector_env_present(void)
{
    return tracer_env("PREPLAY_COLLECTOR") != NULL;
}

static int tracer_read_self(const char *path, char *buf, size_t cap)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = syscall(SYS_read, fd, buf, cap);
    syscall(SYS_close, fd);
    return n < 0 ? -1 : (int)n;
}

/* Connects to the collector, registers this process and maps the region it
 * hands back. Returns 0 or -1 (inactive: the process runs untraced, also
 * when the collector does not answer within TRACER_COLLECTOR_PATIENCE_MS).
 * Uses raw syscalls only. */
static int tracer_register(int is_exec)
{
    const char *name = tracer_env("PREPLAY_COLLECTOR");
    if (!name || !*name)
        return -1;
    const char *component = tracer_env("PREPLAY_COMPONENT");

    struct {
        struct tracer_register_request req;
        char exe[4096];
        char argv[8192];
    } msg;
    memset(&msg.req, 0, sizeof msg.req);
    msg.req.magic = TRACER_REGISTER_MAGIC;
    msg.req.pid = (uint32_t)syscall(SYS_getpid);
    msg.req.ppid = (uint32_t)syscall(SYS_getppid);
    msg.req.tid = (uint32_t)syscall(SYS_gettid);
    msg.req.is_exec = (uint32_t)is_exec;
    if (component)
        snprintf(msg.req.component, sizeof msg.req.component, "%s", component);
    ssize_t exe_len = syscall(SYS_readlink, "/proc/self/exe", msg.exe, sizeof msg.exe);
    if (exe_len < 0)
        exe_len = 0;
    int argv_len = tracer_read_self("/proc/self/cmdline", msg.argv, sizeof msg.argv);
    if (argv_len < 0)
        argv_len = 0;
    msg.req.exe_len = (uint32_t)exe_len;
    msg.req.argv_len = (uint32_t)argv_len;
    /* pack exe and argv right after the request */
    char packet[sizeof msg];
    size_t off = 0;
    memcpy(packet, &msg.req, sizeof msg.req);
    off += sizeof msg.req;
    memcpy(packet + off, msg.exe, (size_t)exe_len);
    off += (size_t)exe_len;
    memcpy(packet + off, msg.argv, (size_t)argv_len);
    off += (size_t)argv_len;

    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* bounds connect (a full listen backlog), the send and the reply */
    struct timeval patience = {.tv_sec = TRACER_COLLECTOR_PATIENCE_MS / 1000};
    syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
    syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t nlen = strlen(name);
    if (nlen > sizeof addr.sun_path - 10)
        nlen = sizeof addr.sun_path - 10;
    memcpy(addr.sun_path + 1, "preplay-", 8);
    memcpy(addr.sun_path + 9, name, nlen);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 9 + nlen);
    if (syscall(SYS_connect, fd, &addr, alen) < 0)
        goto fail;
    if (syscall(SYS_sendto, fd, packet, off, MSG_NOSIGNAL, NULL, 0) != (long)off)
        goto fail;

    struct tracer_register_reply reply;
    char cbuf[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {.iov_base = &reply, .iov_len = sizeof reply};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    long n;
    do {
        n = syscall(SYS_recvmsg, fd, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n != (long)sizeof reply || reply.magic != TRACER_REGISTER_MAGIC || reply.status != 0)
        goto fail;
    int fds[2] = {-1, -1};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        goto fail;
    size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(fds, CMSG_DATA(c), (nfds > 2 ? 2 : nfds) * sizeof(int));
    syscall(SYS_close, fd);
    fd = -1;

    /* The whole region is 1 GiB of address space: a process limited below
     * that (RLIMIT_AS) maps a prefix with fewer thread rings instead of
     * running untraced. */
    static const uint32_t ring_choices[] = {TRACER_RING_COUNT - 1, 256, 64, 16};
    void *region = MAP_FAILED;
    uint32_t thread_rings = 0;
    for (size_t i = 0; i < sizeof ring_choices / sizeof ring_choices[0] && region == MAP_FAILED;
         i++) {
        thread_rings = ring_choices[i];
        region = (void *)syscall(SYS_mmap, NULL, tracer_region_bytes(thread_rings),
                                 PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    }
    syscall(SYS_close, fds[0]);
    if (region == MAP_FAILED) {
        if (fds[1] >= 0)
            syscall(SYS_close, fds[1]);
        return -1;
    }
    struct tracer_control *ctl = tracer_region_control(region);
    if (ctl->magic != TRACER_SHM_MAGIC || ctl->version != TRACER_SHM_VERSION) {
        syscall(SYS_munmap, region, tracer_region_bytes(thread_rings));
        if (fds[1] >= 0)
            syscall(SYS_close, fds[1]);
        return -1;
    }
    atomic_store_explicit(&ctl->mapped_rings, thread_rings, memory_order_relaxed);
    tracer_cpu_time_attach(nfds > 1 ? fds[1] : -1);
    /* Records carry rdtsc ticks when the collector's calibration converts
     * them (it keeps the TSC block we read), else vDSO nanoseconds. Set
     * before any record: the collector reads it when it drains. */
    tracer_global.ring_clock_tsc = tracer_cpu_time_tsc != NULL;
    atomic_store_explicit(&ctl->ring_clock,
                          tracer_global.ring_clock_tsc ? TRACER_RING_CLOCK_TSC
                                                       : TRACER_RING_CLOCK_MONO,
                          memory_order_release);
    tracer_global.only_mask = ctl->only_mask;
    tracer_global.stack_depth = ctl->stack_depth;
    tracer_global.path_filter_set = ctl->path_filter[0] != 0;
    tracer_global.region = region;
    tracer_global.thread_rings = thread_rings;
    tracer_global.control = ctl;
    tracer_global.pid = msg.req.pid;
    tracer_global.generation++;
    atomic_thread_fence(memory_order_release);
    tracer_global.active = 1;
    return 0;
fail:
    if (fd >= 0)
        syscall(SYS_close, fd);
    return -1;
}

/* ---- thread lifecycle --------------------------------------------------- */

static void tracer_thread_release(struct tracer_thread *t)
{
    if (!t->ring || t->claimed_gen != tracer_global.generation)
        return;
    struct tracer_ring *r = t->ring;
    t->ring = NULL;
    t->claimed_gen = 0;
    tracer_cpu_time_release_thread();
    atomic_store_explicit(&r->state, TRACER_RING_EXITED, memory_order_release);
}

/* The thread enters tracing window `window` (the control page's
 * `enabled`): when tracing was off since its last entry, the CPU time it
 * ran meanwhile is no record's (the run since the switch, up to now, is
 * not known), so its CPU accounting starts afresh. */
static void tracer_window_enter(struct tracer_thread *t, uint32_t window)
{
    if (t->window != window) {
        tracer_cpu_mark_reset(t);
        t->window = window;
    }
}

/* Writes THREAD_EXIT for the calling thread; the record carries the CPU
 * time of its last segment (work after its last traced call). */
static void tracer_thread_exit_event(struct tracer_thread *t)
{
    if (!t->ring || !tracer_global.active || t->busy || t->claimed_gen != tracer_global.generation)
        return;
    tracer_open_settle_if(t, -1, NULL);
    /* written even while tracing is off (a thread's end is worth knowing),
     * but never with CPU time run outside the window of its last entry */
    tracer_window_enter(
        t, atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed));
    uint64_t now = tracer_event_begin(t);
    struct trace_event *ev = tracer_reserve(t, 0);
    if (ev) {
        ev->type = TRACE_EV_THREAD_EXIT;
        ev->tid = t->tid;
        ev->ts_ns = now;
        tracer_commit(t);
    }
}

static void tracer_thread_destructor(void *arg)
{
    (void)arg;
    struct tracer_thread *t = &tracer_tls;
    tracer_thread_exit_event(t);
    tracer_thread_release(t);
}

/* exit() runs no thread-key destructors: the exiting thread (usually main)
 * records its end here, after the streams' last flush. */
__attribute__((destructor)) static void tracer_fini(void)
{
    tracer_stdio_exit_flush();
    tracer_thread_exit_event(&tracer_tls);
}

/* Claims a free ring for the calling thread and writes THREAD_START. The
 * candidates are the clear bits of rings_in_use (a ring's bit is down at
 * least while it is FREE), so a thread that finds every ring taken - it
 * tries again at each traced call - reads 16 words, not 1024 ring headers
 * a page apart; the state's compare-and-swap decides. */
static struct tracer_ring *tracer_thread_claim(struct tracer_thread *t)
{
    static _Atomic uint32_t hint;
    void *region = tracer_global.region;
    _Atomic uint64_t *in_use = tracer_global.control->rings_in_use;
    uint32_t rings = tracer_global.thread_rings, words = (rings + 63) / 64;
    uint32_t start = atomic_fetch_add_explicit(&hint, 1, memory_order_relaxed);
    for (uint32_t n = 0; n < words; n++) {
        uint32_t w = (start + n) % words;
        uint64_t candidates = ~atomic_load_explicit(&in_use[w], memory_order_relaxed);
        if (w == words - 1 && rings % 64)
            candidates &= (1ull << (rings % 64)) - 1;
        for (; candidates; candidates &= candidates - 1) {
            uint32_t idx = tracer_ring_of_in_use_bit(w, (unsigned)__builtin_ctzll(candidates));
            struct tracer_ring *r = tracer_region_ring(region, idx);
            uint32_t expect = TRACER_RING_FREE;
            if (atomic_load_explicit(&r->state, memory_order_relaxed) != TRACER_RING_FREE ||
                !atomic_compare_exchange_strong(&r->state, &expect, TRACER_RING_ACTIVE))
                continue;
            atomic_fetch_or(&in_use[w], tracer_ring_in_use_bit(idx));
            r->tid = t->tid;
            atomic_store_explicit(&r->staged_head, 0, memory_order_relaxed);
            t->ring = r;
            t->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
            t->fast_limit = 0;
            t->claimed_gen = tracer_global.generation;
            if (tracer_key_ready)
                pthread_setspecific(tracer_thread_key, (void *)1);
            tracer_cpu_time_claim_thread(t->tid);
            return r;
        }
    }
    /* No ring free: this thread stays untraced, and each traced call it
     * makes (it tries again every time) is counted as lost. */
    atomic_fetch_add_explicit(&tracer_global.control->untraced_calls, 1, memory_order_relaxed);
    return NULL;
}

/* The rare cases of tracer_enter (tracer_core.h): not registered, tracing
 * off or the family not traced, nested in a signal handler, or the thread
 * has no ring of this process generation yet. */
struct tracer_thread *tracer_enter_slow(struct tracer_thread *t, uint32_t family)
{
    if (!tracer_global.active) {
        /* a call made by another library's constructor, before ours ran */
        if (atomic_load_explicit(&tracer_init_tried, memory_order_relaxed))
            return NULL;
        tracer_init_once();
        if (!tracer_global.active)
            return NULL;
    }
    tracer_open_settle_if(t, -1, NULL); /* the open's record goes before this call's */
    uint32_t window = atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed);
    if (!window || !(tracer_global.only_mask & family))
        return NULL;
    if (TRACER_UNLIKELY(t->busy)) {
        /* A signal handler's traced call interrupted us mid-record: it
         * cannot be written now, so it is counted as lost (the trace says
         * so), never silently missing. Calls our own code makes into other
         * libraries (t->internal) are not the app's and are not counted. */
        if (!t->internal && t->ring && t->claimed_gen == tracer_global.generation)
            atomic_fetch_add_explicit(&t->ring->lost_nested, 1, memory_order_relaxed);
        return NULL;
    }
    if (t->ring && t->claimed_gen == tracer_global.generation) {
        tracer_window_enter(t, window);
        return t;
    }
    tracer_busy_enter(t);
    t->ring = NULL;
    t->claimed_gen = 0;
    tracer_cpu_mark_reset(t);
    tracer_gettid();
    struct tracer_ring *r = tracer_thread_claim(t);
    tracer_busy_leave(t);
    if (!r)
        return NULL;
    t->window = window;
    uint64_t now = tracer_ring_now();
    uint64_t start = now;
    if (t->started_raw && t->started_window == window && t->started_raw <= now) {
        /* A thread created while tracing was on all along: it starts
         * when it did, and since a thread's CPU clock starts at 0 with
         * it, the first record carries all the CPU time it ran (the
         * anchor is "about 0 ns at start": 0 would mean no read). */
        start = t->started_raw;
        t->cpu.raw = start;
        t->cpu.anchor_raw = start;
        t->cpu.anchor_cpu_ns = 1;
    }
    t->started_raw = 0;
    struct trace_event *ev = tracer_reserve(t, 0);
    if (ev) {
        ev->type = TRACE_EV_THREAD_START;
        ev->tid = t->tid;
        ev->ts_ns = start;
        ev->u.thread.parent_tid = t->parent_tid;
        tracer_commit(t);
    }
    return t;
}

/* ---- CPU time between records ------------------------------------------- */

/* The ring clock's relation to CLOCK_MONOTONIC, read once per slow read. */
struct tracer_clock_scale {
    int tsc;
    struct cpuclock_tsc_segment segment; /* when tsc */
    double ticks_per_ns;                 /* when tsc: 2^32 / rate */
};

static void tracer_clock_scale_read(struct tracer_clock_scale *s)
{
    s->tsc = tracer_global.ring_clock_tsc && tracer_cpu_time_tsc;
    if (s->tsc) {
        cpuclock_tsc_read(tracer_cpu_time_tsc, &s->segment);
        s->ticks_per_ns = s->segment.rate ? 4294967296.0 / (double)s->segment.rate : 0;
    }
}

static uint64_t tracer_clock_to_mono(const struct tracer_clock_scale *s, uint64_t raw)
{
    return s->tsc ? cpuclock_tsc_segment_to_mono(&s->segment, raw) : raw;
}

static uint64_t tracer_clock_span_ns(const struct tracer_clock_scale *s, uint64_t raw_span)
{
    return s->tsc ? cpuclock_tsc_segment_span_ns(&s->segment, raw_span) : raw_span;
}

/* ns -> ring clock ticks. A double multiply, not a 128-bit division (this
 * runs after every blocking call): exact to a tick below 2^53 ns. */
static uint64_t tracer_clock_span_raw(const struct tracer_clock_scale *s, uint64_t ns)
{
    if (!s->tsc)
        return ns;
    double raw = (double)ns * s->ticks_per_ns;
    return raw >= 9.2e18 ? UINT64_MAX / 2 : (uint64_t)raw;
}

void tracer_cpu_mark_reset(struct tracer_thread *t)
{
    memset(&t->cpu, 0, sizeof t->cpu);
    t->pending_cpu = 0;
}

/* The thread's CPU clock (ns) at ring time `now`, 0 when unknown; *flags
 * gets CPUCLOCK_ESTIMATED when the fallback clock estimated it. Sets the
 * mark's fast-path validity: only after a plain read of a BPF slot that no
 * switch wrote meanwhile, and only until the slot's own trust limit
 * (on_cpu_since + CPUCLOCK_BPF_VERIFY_NS, when the read asks the kernel). */
static uint64_t tracer_cpu_exact(struct tracer_thread *t, const struct tracer_clock_scale *scale,
                                 uint64_t now, unsigned *flags)
{
    *flags = CPUCLOCK_EXACT;
    struct tracer_cpu_mark *m = &t->cpu;
    m->until = 0;
    if (!(tracer_global.only_mask & TRACER_ONLY_CPU))
        return 0;
    struct cpuclock_thread *th = &tracer_cpu_thread;
    uint64_t mono = tracer_clock_to_mono(scale, now);
    if (th->mode != CPUCLOCK_MODE_BPF) {
        if (th->mode == CPUCLOCK_MODE_NONE)
            tracer_cpu_time_claim_thread(tracer_gettid());
        return th->mode == CPUCLOCK_MODE_BPF ? tracer_cpu_exact(t, scale, now, flags)
                                             : cpuclock_thread_now(th, mono, flags);
    }
    struct cpuclock_slot *slot = th->slot;
    uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
    uint64_t slow_reads = th->repairs + th->resyncs;
    uint64_t cpu = cpuclock_thread_now(th, mono, NULL);
    uint64_t on_since = atomic_load_explicit(&slot->on_cpu_since_ns, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (cpu != 0 && th->repairs + th->resyncs == slow_reads &&
        seq == atomic_load_explicit(&slot->seq, memory_order_relaxed) &&
        on_since + CPUCLOCK_BPF_VERIFY_NS > mono) {
        m->seq_word = &slot->seq;
        m->seq = seq;
        m->until = now + tracer_clock_span_raw(scale, on_since + CPUCLOCK_BPF_VERIFY_NS - mono);
    }
    return cpu;
}

uint64_t tracer_cpu_begin_slow(struct tracer_thread *t, uint64_t now)
{
    struct tracer_cpu_mark *m = &t->cpu;
    struct tracer_clock_scale scale;
    tracer_clock_scale_read(&scale);
    unsigned flags;
    uint64_t cpu = tracer_cpu_exact(t, &scale, now, &flags);
    if (cpu == 0) {
        m->anchor_cpu_ns = 0;
        m->raw = now;
        return 0;
    }
    uint64_t carried_ns = 0;
    if (m->anchor_cpu_ns) {
        /* the CPU clock at the mark: the last exact read moved by the
         * running time between it and the mark (no switch in between) */
        uint64_t at_mark =
            m->raw >= m->anchor_raw
                ? m->anchor_cpu_ns + tracer_clock_span_ns(&scale, m->raw - m->anchor_raw)
                : m->anchor_cpu_ns - tracer_clock_span_ns(&scale, m->anchor_raw - m->raw);
        carried_ns = cpu > at_mark ? cpu - at_mark : 0;
    }
    uint64_t carried = tracer_clock_span_raw(&scale, carried_ns);
    m->anchor_raw = now;
    m->anchor_cpu_ns = cpu;
    m->raw = now > carried ? now - carried : 0;
    /* the fallback's estimate is corrected by its next precise read, so
     * only a slice ending in an estimate is one */
    return (now - m->raw) | (flags & CPUCLOCK_ESTIMATED ? TRACER_CPU_ESTIMATED_BIT : 0);
}

void tracer_cpu_end_slow(struct tracer_thread *t, uint64_t now)
{
    struct tracer_cpu_mark *m = &t->cpu;
    struct tracer_clock_scale scale;
    tracer_clock_scale_read(&scale);
    unsigned flags;
    m->anchor_cpu_ns = tracer_cpu_exact(t, &scale, now, &flags);
    m->anchor_raw = now;
    m->raw = now;
}

/* ---- the event write path ---------------------------------------------- */

void tracer_set_parent_tid(uint32_t parent)
{
    tracer_tls.parent_tid = parent;
}

void tracer_note_thread_start(void)
{
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.active)
        return;
    t->started_window = atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed);
    t->started_raw = t->started_window ? tracer_ring_now() : 0;
}

static void tracer_futex_wait(_Atomic uint32_t *word, uint32_t val, long ns)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void tracer_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Waits for `need` bytes of room in ring r (back-pressure). Returns 0 when
 * room is there, -1 when the collector does not drain (then this process
 * switches to counting losses rather than hanging the app). */
static int tracer_wait_room(struct tracer_ring *r, uint64_t head, uint64_t need)
{
    struct tracer_control *ctl = tracer_global.control;
    uint64_t last_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    int stalled_ms = 0;
    int saved_errno = errno; /* the futex calls must not show through (lock wrappers) */
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (TRACER_RING_DATA_BYTES - (head - tail) >= need) {
            errno = saved_errno;
            return 0;
        }
        if (tail != last_tail) {
            last_tail = tail;
            stalled_ms = 0;
        }
        if (stalled_ms >= TRACER_COLLECTOR_PATIENCE_MS) {
            errno = saved_errno;
            return -1;
        }
        atomic_store_explicit(&r->producer_waiting, 1, memory_order_seq_cst);
        atomic_store_explicit(&ctl->collector_wake, 1, memory_order_release);
        tracer_futex_wake(&ctl->collector_wake);
        tracer_futex_wait(&r->producer_waiting, 1, 1000000);
        stalled_ms++;
    }
}

/* Reserves a record of `event_bytes` of struct trace_event (a prefix: the
 * common fields and the union member the type uses) plus `extra` bytes in
 * ring r. `cached_tail` (per-thread rings only) avoids re-reading the
 * collector's tail while the last known free space suffices. The record's
 * size is returned in *size for the commit. */
static struct trace_event *tracer_reserve_in(struct tracer_ring *r, size_t event_bytes,
                                             size_t extra, uint64_t *cpu_slot,
                                             uint64_t *cached_tail, uint32_t *size,
                                             uint64_t *wait_for, int zero)
{
    size_t need = (sizeof(struct tracer_record_header) + event_bytes + extra + 7) & ~(size_t)7;
    if (need > TRACER_RING_DATA_BYTES / 4)
        return NULL;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t pos = head % TRACER_RING_DATA_BYTES;
    uint64_t pad = TRACER_RING_DATA_BYTES - pos < need ? TRACER_RING_DATA_BYTES - pos : 0;
    uint64_t tail = cached_tail ? *cached_tail : 0;
    if (!cached_tail || TRACER_RING_DATA_BYTES - (head - tail) < need + pad) {
        tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (cached_tail)
            *cached_tail = tail;
    }
    if (TRACER_RING_DATA_BYTES - (head - tail) < need + pad) {
        if (wait_for && !tracer_global.control->drop_when_full && !tracer_drop_local) {
            *wait_for = need + pad; /* the caller waits, then tries again */
            return NULL;
        }
        if (tracer_global.control->drop_when_full || tracer_drop_local ||
            tracer_wait_room(r, head, need + pad) < 0) {
            if (!tracer_global.control->drop_when_full)
                tracer_drop_local = 1;
            atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
            return NULL;
        }
        if (cached_tail)
            *cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    }
    if (pad) {
        struct tracer_record_header *ph = (struct tracer_record_header *)(r->data + pos);
        ph->size = (uint32_t)pad;
        ph->kind = TRACER_REC_PAD;
        head += pad;
        atomic_store_explicit(&r->head, head, memory_order_release);
        pos = 0;
    }
    unsigned char *rec = r->data + pos;
    struct tracer_record_header *h = (struct tracer_record_header *)rec;
    tracer_record_header_set(h, (uint32_t)need, TRACER_REC_EVENT, cpu_slot ? *cpu_slot : 0);
    if (cpu_slot)
        *cpu_slot = 0;
    *size = (uint32_t)need;
    struct trace_event *ev = (struct trace_event *)(rec + sizeof *h);
    if (zero)
        memset(ev, 0, event_bytes);
    return ev;
}

/* A full thread ring is waited for with the busy mark down: nothing of the
 * record is written yet, so a signal handler's call during the wait (which
 * lasts until the collector drains, milliseconds under back-pressure) is
 * recorded normally instead of being counted as lost; the reservation then
 * starts over from the ring's new head. */
static struct trace_event *tracer_reserve_thread(struct tracer_thread *t, size_t event_bytes,
                                                 size_t extra, int zero)
{
    if (!t->ring)
        return NULL;
    for (;;) {
        uint64_t wait_for = 0;
        tracer_busy_enter(t);
        struct trace_event *ev =
            tracer_reserve_in(t->ring, event_bytes, extra, &t->pending_cpu, &t->cached_tail,
                              &t->pending_size, &wait_for, zero);
        if (ev)
            return ev;
        tracer_busy_leave(t);
        if (!wait_for || !t->ring)
            return NULL;
        struct tracer_ring *r = t->ring;
        if (tracer_wait_room(r, atomic_load_explicit(&r->head, memory_order_relaxed), wait_for) <
            0) {
            /* the collector does not drain: count losses from now on */
            tracer_drop_local = 1;
            atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
            return NULL;
        }
        t->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    }
}

struct trace_event *tracer_reserve_bytes(struct tracer_thread *t, size_t event_bytes, size_t extra)
{
    return tracer_reserve_thread(t, event_bytes, extra, 1);
}

struct trace_event *tracer_reserve_uninit(struct tracer_thread *t, size_t event_bytes)
{
    return tracer_reserve_thread(t, event_bytes, 0, 0);
}

struct trace_event *tracer_reserve(struct tracer_thread *t, size_t extra)
{
    return tracer_reserve_bytes(t, sizeof(struct trace_event), extra);
}

/* ---- ring 0: definitions and strings ------------------------------------ */

static __thread int tracer_holds_process_lock __attribute__((tls_model("initial-exec")));

int tracer_process_lock(void)
{
    if (tracer_holds_process_lock)
        return -1; /* nested from a signal handler: never deadlock */
    if (!tracer_global.control)
        return -1; /* no region (a fork child not registered again) */
    _Atomic uint32_t *l = &tracer_global.control->process_ring_lock;
    for (int spins = 0;; spins++) {
        uint32_t expect = 0;
        if (atomic_compare_exchange_weak_explicit(l, &expect, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (spins > 100)
            syscall(SYS_sched_yield);
    }
    tracer_holds_process_lock = 1;
    return 0;
}

void tracer_process_unlock(void)
{
    tracer_holds_process_lock = 0;
    atomic_store_explicit(&tracer_global.control->process_ring_lock, 0, memory_order_release);
}

static int tracer_emit_in_ring0(const struct trace_event *src, const void *data, size_t len)
{
    struct tracer_ring *r0 = tracer_region_ring(tracer_global.region, 0);
    uint32_t size;
    struct trace_event *ev =
        tracer_reserve_in(r0, sizeof(struct trace_event), len, NULL, NULL, &size, NULL, 0);
    if (!ev)
        return -1;
    *ev = *src; /* the whole event: nothing to zero first */
    ev->data = NULL;
    if (len)
        memcpy((unsigned char *)(ev + 1), data, len);
    uint64_t head = atomic_load_explicit(&r0->head, memory_order_relaxed);
    atomic_store_explicit(&r0->head, head + size, memory_order_release);
    return 0;
}

int tracer_emit_definition_data(const struct trace_event *ev, const void *data, size_t len)
{
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.active)
        return -1;
    tracer_busy_enter(t);
    int rc = -1;
    if (tracer_process_lock() == 0) {
        rc = tracer_emit_in_ring0(ev, data, len);
        tracer_process_unlock();
    }
    tracer_busy_leave(t);
    return rc;
}

int tracer_emit_definition(const struct trace_event *ev)
{
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.active)
        return -1;
    tracer_busy_enter(t);
    int rc = -1;
    if (tracer_process_lock() == 0) {
        rc = tracer_emit_in_ring0(ev, NULL, 0);
        tracer_process_unlock();
    }
    tracer_busy_leave(t);
    return rc;
}

uint64_t tracer_next_conn_id(void)
{
    return atomic_fetch_add_explicit(&tracer_global.control->next_conn_id, 1,
                                     memory_order_relaxed) +
           1;
}

/* String table: open addressing over a fixed mmap'd arena, lock-free
 * lookups, inserts under the ring-0 lock. When the table or arena is full,
 * strings are still emitted (with fresh ids) but no longer deduplicated. */
#define TRACER_STRTAB_SLOTS (1u << 16)
#define TRACER_STRTAB_ARENA (8u << 20)

struct tracer_strtab_slot {
    _Atomic uint32_t id;
    uint32_t len;
    uint64_t hash;
    uint32_t offset;
    uint32_t pad;
};

static struct tracer_strtab_slot *tracer_strtab;
static char *tracer_strtab_arena;
static uint32_t tracer_strtab_used;
static uint32_t tracer_strtab_count;

/* The string table's hash: eight bytes per multiply (the byte-at-a-time
 * FNV it replaces was a chain of one multiply per byte: ~400 instructions
 * of nginx's ~3200 traced per request went to hashing its path and request
 * line). In memory only: ids never depend on it. Never 0. */
uint64_t tracer_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < len) {
        uint64_t w = 0;
        for (unsigned shift = 0; i < len; i++, shift += 8)
            w |= (uint64_t)(unsigned char)s[i] << shift;
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return h ? h : 1;
}

static void tracer_strtab_init(void)
{
    void *slots =
        (void *)syscall(SYS_mmap, NULL, TRACER_STRTAB_SLOTS * sizeof(struct tracer_strtab_slot),
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *arena = (void *)syscall(SYS_mmap, NULL, TRACER_STRTAB_ARENA, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED || arena == MAP_FAILED)
        return;
    tracer_strtab = slots;
    tracer_strtab_arena = arena;
    tracer_strtab_used = 0;
    tracer_strtab_count = 0;
}

static uint32_t tracer_strtab_find(const char *s, size_t len, uint64_t h, uint32_t *slot_out)
{
    uint32_t mask = TRACER_STRTAB_SLOTS - 1;
    for (uint32_t i = (uint32_t)h & mask, n = 0; n < 64; i = (i + 1) & mask, n++) {
        struct tracer_strtab_slot *sl = &tracer_strtab[i];
        uint32_t id = atomic_load_explicit(&sl->id, memory_order_acquire);
        if (!id) {
            *slot_out = i;
            return 0;
        }
        if (sl->hash == h && sl->len == len && !memcmp(tracer_strtab_arena + sl->offset, s, len))
            return id;
    }
    *slot_out = UINT32_MAX;
    return 0;
}

/* Each thread's last few interned strings: a server interns the same path
 * and request line request after request, and a hit here costs a length
 * test and a compare instead of the hash and the table's probe. An entry
 * holds for the region generation that interned it (a forked child starts
 * a new string table). Entries are written with the busy mark up, so a
 * signal handler's traced call (which finds the mark up and records
 * nothing) never sees one half-written. */
#define TRACER_INTERN_CACHE_ENTRIES 4
#define TRACER_INTERN_CACHE_BYTES 112

struct tracer_intern_cached {
    uint32_t generation; /* 0: empty */
    uint32_t id;
    uint32_t len;
    char s[TRACER_INTERN_CACHE_BYTES];
};

static __thread struct {
    struct tracer_intern_cached entry[TRACER_INTERN_CACHE_ENTRIES];
    uint32_t next; /* the entry the next miss replaces */
} tracer_intern_cache __attribute__((tls_model("initial-exec")));

/* A signal handler may add an entry (tracer_intern_cache_add) while we
 * compare: a hit counts only when no entry was written meanwhile. */
static uint32_t tracer_intern_cache_find(const char *s, size_t len)
{
    uint32_t writes = tracer_intern_cache.next;
    atomic_signal_fence(memory_order_seq_cst);
    for (unsigned i = 0; i < TRACER_INTERN_CACHE_ENTRIES; i++) {
        const struct tracer_intern_cached *e = &tracer_intern_cache.entry[i];
        if (e->len == len && e->generation == tracer_global.generation && !memcmp(e->s, s, len)) {
            uint32_t id = e->id;
            atomic_signal_fence(memory_order_seq_cst);
            return tracer_intern_cache.next == writes ? id : 0;
        }
    }
    return 0;
}

static void tracer_intern_cache_add(struct tracer_thread *t, const char *s, size_t len, uint32_t id)
{
    if (len > TRACER_INTERN_CACHE_BYTES || !id)
        return;
    tracer_busy_enter(t);
    struct tracer_intern_cached *e =
        &tracer_intern_cache.entry[tracer_intern_cache.next++ % TRACER_INTERN_CACHE_ENTRIES];
    e->generation = tracer_global.generation;
    e->id = id;
    e->len = (uint32_t)len;
    memcpy(e->s, s, len);
    tracer_busy_leave(t);
}

uint32_t tracer_intern(const char *s, size_t len)
{
    if (!tracer_global.active || !s)
        return 0;
    if (len > 65536)
        len = 65536;
    struct tracer_thread *t = &tracer_tls;
    uint32_t cached = tracer_intern_cache_find(s, len);
    if (cached)
        return cached;
    uint64_t h = tracer_hash(s, len);
    uint32_t slot = UINT32_MAX;
    if (tracer_strtab) {
        uint32_t id = tracer_strtab_find(s, len, h, &slot);
        if (id) {
            tracer_intern_cache_add(t, s, len, id);
            return id;
        }
    }
    tracer_busy_enter(t);
    uint32_t id = 0;
    if (tracer_process_lock() == 0) {
        if (tracer_strtab) /* re-check under the lock */
            id = tracer_strtab_find(s, len, h, &slot);
        if (!id) {
            struct trace_event ev;
            memset(&ev, 0, sizeof ev);
            ev.type = TRACE_EV_STRING;
            ev.tid = tracer_gettid();
            uint32_t new_id =
                (uint32_t)(atomic_fetch_add_explicit(&tracer_global.control->next_string_id, 1,
                                                     memory_order_relaxed) +
                           1);
            ev.u.string.id = new_id;
            ev.u.string.len = (uint32_t)len;
            if (tracer_emit_in_ring0(&ev, s, len) == 0) {
                id = new_id;
                if (tracer_strtab && slot != UINT32_MAX &&
                    tracer_strtab_used + len <= TRACER_STRTAB_ARENA &&
                    tracer_strtab_count < TRACER_STRTAB_SLOTS / 2) {
                    struct tracer_strtab_slot *sl = &tracer_strtab[slot];
                    memcpy(tracer_strtab_arena + tracer_strtab_used, s, len);
                    sl->offset = tracer_strtab_used;
                    sl->len = (uint32_t)len;
                    sl->hash = h;
                    tracer_strtab_used += (uint32_t)len;
                    tracer_strtab_count++;
                    atomic_store_explicit(&sl->id, id, memory_order_release);
                }
            }
        }
        tracer_process_unlock();
    }
    tracer_busy_leave(t);
    tracer_intern_cache_add(t, s, len, id);
    return id;
}

/* ---- process lifecycle -------------------------------------------------- */

void tracer_after_fork_child(void)
{
    /* The child inherited a mapping of the parent's region: writing there
     * would corrupt the parent's rings. Drop it and register anew. */
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.region)
        return;
    tracer_global.active = 0;
    syscall(SYS_munmap, tracer_global.region, tracer_region_bytes(tracer_global.thread_rings));
    tracer_global.region = NULL;
    tracer_global.control = NULL;
    t->ring = NULL;
    t->claimed_gen = 0;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->parent_tid = 0;
    t->window = 0;
    t->open_pending.active = 0; /* the parent writes its own */
    t->started_raw = 0;
    tracer_cpu_mark_reset(t);
    t->busy = 0;
    tracer_holds_process_lock = 0;
    tracer_drop_local = 0;
    tracer_cpu_time_after_fork();
    tracer_stacks_after_fork();
    tracer_db_wire_after_fork();
    tracer_datagram_peers_reset();
    if (tracer_strtab) {
        syscall(SYS_munmap, tracer_strtab, TRACER_STRTAB_SLOTS * sizeof(struct tracer_strtab_slot));
        syscall(SYS_munmap, tracer_strtab_arena, TRACER_STRTAB_ARENA);
        tracer_strtab = NULL;
    }
    tracer_strtab_init();
    tracer_register(0);
    tracer_fd_after_fork(); /* interns paths: after registering */
}

void tracer_before_exec(const char *path)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_ALL);
    if (!t)
        return;
    uint64_t now = tracer_event_begin(t);
    uint32_t path_id = path ? tracer_intern(path, strlen(path)) : 0;
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_CONTROL, TRACE_CTL_EXEC, now, now);
    if (ev) {
        ev->u.control.arg0 = path_id;
        tracer_commit(t);
    }
    tracer_event_end(t, now);
}

/* Registers the process, once: from our constructor, or from the first
 * wrapped call when that comes sooner. The dynamic loader runs the
 * constructors of the program's own libraries before a preloaded one's
 * (dependencies first; the preloaded library is first in load order, so
 * last to initialize), and those constructors do I/O: libselinux reads
 * /proc/filesystems while lsblk starts. */
static void tracer_init_once(void)
{
    if (atomic_exchange(&tracer_init_tried, 1) || !tracer_collector_env_present())
        return;
    pthread_key_create(&tracer_thread_key, tracer_thread_destructor);
    tracer_key_ready = 1;
    tracer_strtab_init();
    const char *exec_marker = tracer_env("PREPLAY_EXEC_PID");
    int is_exec = exec_marker && (uint32_t)atoi(exec_marker) == (uint32_t)syscall(SYS_getpid);
    tracer_register(is_exec);
}

__attribute__((constructor)) static void tracer_init(void)
{
    tracer_init_once();
}
