/* cpuclock_thread.c - app side of the per-thread CPU clock: mapping the table the
 * collector sent, claiming and releasing a thread's slot, and the fallback's
 * precise read. The per-event read is inline in cpuclock.h.
 *
 * Runs inside traced apps (linked into libpreplay_trace.so): it must never
 * allocate, print, or depend on libbpf, and must leave errno as it found it.
 */
#include "cpuclock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t cpuclock_clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cpuclock_attach(int map_fd, struct cpuclock_table *table, char *err, size_t errlen)
{
    int saved_errno = errno;
    size_t bytes = (size_t)CPUCLOCK_MAP_ENTRIES * CPUCLOCK_SLOT_SIZE;
    long page = 4096;
    struct stat pidns;
    memset(table, 0, sizeof *table);
    bytes = (bytes + (size_t)page - 1) & ~((size_t)page - 1);
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "cpuclock: cannot map the CPU clock table (fd %d): %s", map_fd,
                 strerror(errno));
        goto fail;
    }
    struct cpuclock_header *header =
        (struct cpuclock_header *)((char *)map + (size_t)CPUCLOCK_SLOT_COUNT * CPUCLOCK_SLOT_SIZE);
    if (header->magic != CPUCLOCK_MAGIC || header->version != CPUCLOCK_VERSION ||
        header->slot_count != CPUCLOCK_SLOT_COUNT) {
        snprintf(err, errlen,
                 "cpuclock: fd %d is not a CPU clock table of version %u (magic 0x%08x version "
                 "%u slots %u)",
                 map_fd, CPUCLOCK_VERSION, header->magic, header->version, header->slot_count);
        goto fail_unmap;
    }
    if (stat("/proc/self/ns/pid", &pidns) != 0) {
        snprintf(err, errlen, "cpuclock: cannot stat /proc/self/ns/pid: %s", strerror(errno));
        goto fail_unmap;
    }
    if ((uint64_t)pidns.st_ino != header->pidns_ino ||
        (uint64_t)pidns.st_dev != header->pidns_dev) {
        snprintf(err, errlen,
                 "cpuclock: this process is in another pid namespace than the collector "
                 "(thread ids differ from the kernel's); using the fallback clock");
        goto fail_unmap;
    }
    table->slots = (struct cpuclock_slot *)map;
    table->header = header;
    table->claimed = cpuclock_table_bitmap(map);
    table->map_bytes = bytes;
    errno = saved_errno;
    return 0;
fail_unmap:
    munmap(map, bytes);
fail:
    errno = saved_errno;
    return -1;
}

int cpuclock_attach_page(int fd, struct cpuclock_table *table, char *err, size_t errlen)
{
    int saved_errno = errno;
    memset(table, 0, sizeof *table);
    void *map = mmap(NULL, CPUCLOCK_PAGE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "cpuclock: cannot map the clock page (fd %d): %s", fd,
                 strerror(errno));
        errno = saved_errno;
        return -1;
    }
    struct cpuclock_header *header = map;
    if (header->magic != CPUCLOCK_MAGIC || header->version != CPUCLOCK_VERSION ||
        header->slot_count != 0) {
        snprintf(err, errlen,
                 "cpuclock: fd %d is not a clock page of version %u (magic 0x%08x version %u "
                 "slots %u)",
                 fd, CPUCLOCK_VERSION, header->magic, header->version, header->slot_count);
        munmap(map, CPUCLOCK_PAGE_BYTES);
        errno = saved_errno;
        return -1;
    }
    table->header = header;
    table->map_bytes = CPUCLOCK_PAGE_BYTES;
    errno = saved_errno;
    return 0;
}

uint64_t cpuclock_thread_read_ns(void)
{
    int saved_errno = errno;
    uint64_t ns = cpuclock_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    errno = saved_errno;
    return ns;
}

void cpuclock_detach(struct cpuclock_table *table)
{
    if (table->slots)
        munmap(table->slots, table->map_bytes);
    else if (table->header)
        munmap(table->header, table->map_bytes);
    memset(table, 0, sizeof *table);
}

/* Raises or lowers the claimed bit of tid's slot (no bitmap: nothing). */
static void cpuclock_bitmap_set(_Atomic uint64_t *bitmap, uint32_t tid, int on)
{
    if (!bitmap)
        return;
    uint32_t index = tid & (CPUCLOCK_SLOT_COUNT - 1);
    uint64_t bit = 1ull << (index & 63u);
    if (on)
        atomic_fetch_or_explicit(&bitmap[index >> 6], bit, memory_order_seq_cst);
    else
        atomic_fetch_and_explicit(&bitmap[index >> 6], ~bit, memory_order_seq_cst);
}

/* Is the thread that owns `tid` alive? kill(tid, 0) finds any task by tid. */
static int cpuclock_tid_alive(uint32_t tid)
{
    return kill((pid_t)tid, 0) == 0 || errno == EPERM;
}

static void cpuclock_fallback_init(struct cpuclock_thread *th)
{
    th->slot = NULL;
    th->mode = CPUCLOCK_MODE_FALLBACK;
    th->reported_cpu_ns = cpuclock_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    th->precise_mono_ns = cpuclock_clock_ns(CLOCK_MONOTONIC);
    th->reported_mono_ns = th->precise_mono_ns;
    th->precise_reads++;
}

/* Writes the current CPU time and switch-in time into an owned slot. The kernel
 * updates the slot only while this thread is switched out, i.e. between two of
 * our instructions, never concurrently with them: if seq did not move from
 * before the clock reads to after the stores, no switch happened in between and
 * the values are ours and right; if it moved, the kernel's values may have been
 * overwritten by stale ones, so do it again. */
static int cpuclock_slot_initialise(struct cpuclock_slot *slot, uint64_t *first_cpu_ns)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        uint64_t cpu = cpuclock_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        if (attempt == 0 && first_cpu_ns)
            *first_cpu_ns = cpu;
        uint64_t mono = cpuclock_clock_ns(CLOCK_MONOTONIC);
        atomic_store_explicit(&slot->total_ns, cpu, memory_order_relaxed);
        atomic_store_explicit(&slot->on_cpu_since_ns, mono, memory_order_relaxed);
        atomic_store_explicit(&slot->off_cpu_since_ns, mono, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) == seq)
            return 0;
    }
    return -1;
}

enum cpuclock_mode cpuclock_thread_claim(const struct cpuclock_table *table,
                                         struct cpuclock_thread *th, uint32_t tid)
{
    int saved_errno = errno;
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->threshold_ns = CPUCLOCK_FALLBACK_THRESHOLD_NS;
    if (table && table->slots && tid != 0) {
        struct cpuclock_slot *slot = &table->slots[tid & (CPUCLOCK_SLOT_COUNT - 1)];
        uint32_t owner = atomic_load_explicit(&slot->tid, memory_order_acquire);
        int claimed = 0;
        if (owner == tid) {
            claimed = 1; /* left by an earlier thread with our tid: it is dead */
        } else if (owner == 0 || !cpuclock_tid_alive(owner)) {
            claimed = atomic_compare_exchange_strong(&slot->tid, &owner, tid);
        }
        /* The bit goes up before the slot is initialised: from then on the
         * kernel writes the slot at every switch, so initialise's sequence
         * check sees any switch in between. */
        if (claimed)
            cpuclock_bitmap_set(table->claimed, tid, 1);
        if (claimed && cpuclock_slot_initialise(slot, NULL) == 0) {
            th->slot = slot;
            th->claimed = table->claimed;
            th->mode = CPUCLOCK_MODE_BPF;
            errno = saved_errno;
            return CPUCLOCK_MODE_BPF;
        }
        if (claimed) {
            cpuclock_bitmap_set(table->claimed, tid, 0);
            atomic_store_explicit(&slot->tid, 0, memory_order_release);
        }
    }
    cpuclock_fallback_init(th);
    errno = saved_errno;
    return CPUCLOCK_MODE_FALLBACK;
}

void cpuclock_thread_release(struct cpuclock_thread *th)
{
    if (th->mode == CPUCLOCK_MODE_BPF && th->slot) {
        uint32_t expected = th->tid;
        /* Bit down first: a new owner of the slot raises it again after its
         * own compare-and-swap, which cannot succeed before ours. */
        cpuclock_bitmap_set(th->claimed, th->tid, 0);
        atomic_compare_exchange_strong(&th->slot->tid, &expected, 0);
    }
    th->slot = NULL;
    th->claimed = NULL;
    th->mode = CPUCLOCK_MODE_NONE;
}

uint64_t cpuclock_slot_repair(struct cpuclock_thread *th, uint64_t mono_now, unsigned *flags)
{
    int saved_errno = errno;
    /* Only this thread and, while it is switched out, the kernel write the
     * slot: the inline read's snapshot still holds unless a switch happened
     * since, and then initialise below rewrites it anyway. */
    if (atomic_load_explicit(&th->slot->off_cpu_since_ns, memory_order_relaxed) >
        atomic_load_explicit(&th->slot->on_cpu_since_ns, memory_order_relaxed))
        th->repairs++;
    else
        th->resyncs++;
    if (flags)
        *flags = CPUCLOCK_EXACT;
    /* The answer is the kernel's CPU time read first, right after mono_now:
     * CPU time only grows while the thread runs, so it is the value at
     * mono_now plus the few hundred ns of running in between, however long
     * the thread is switched out meanwhile. Taking a later read back to
     * mono_now as if the thread had run all along (the earlier code did) is
     * wrong exactly when the thread was preempted in between - and the
     * syscall itself is where a thread past its slice gets preempted (issue 2:
     * 6-46% low with 8 busy threads on 2 cores). Then the slot is rewritten
     * as at claim; if that keeps failing (a switch on every try), the next
     * read comes back here. */
    uint64_t cpu = 0;
    (void)cpuclock_slot_initialise(th->slot, &cpu);
    errno = saved_errno;
    (void)mono_now;
    return cpu;
}

uint64_t cpuclock_fallback_precise(struct cpuclock_thread *th, uint64_t mono_now, unsigned *flags)
{
    if (th->mode != CPUCLOCK_MODE_FALLBACK) {
        if (flags)
            *flags = 0;
        return 0;
    }
    int saved_errno = errno;
    uint64_t cpu = cpuclock_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    errno = saved_errno;
    th->precise_reads++;
    /* Earlier estimates may have counted a preemption as CPU: never go back in
     * time, the excess is taken out of this segment instead. */
    if (cpu < th->reported_cpu_ns)
        cpu = th->reported_cpu_ns;
    th->reported_cpu_ns = cpu;
    th->precise_mono_ns = mono_now;
    if (mono_now > th->reported_mono_ns)
        th->reported_mono_ns = mono_now;
    if (flags)
        *flags = CPUCLOCK_EXACT;
    return cpu;
}
