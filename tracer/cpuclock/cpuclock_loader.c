/* cpuclock_loader.c - loads the embedded sched_switch BPF program for the
 * collector, writes the table header and proves the program works before
 * anybody relies on it.
 *
 * Collector side only (links libbpf). It must never leave a program attached
 * after cpuclock_bpf_unload() or after a failed load, and never print: reasons
 * go to the caller's err buffer. Built without libbpf/clang, every load fails
 * with the reason.
 */
#include "cpuclock_loader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#ifndef MFD_CLOEXEC
#include <linux/memfd.h>
#endif
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static enum cpuclock_tsc_policy cpuclock_bpf_tsc_policy = CPUCLOCK_TSC_AUTO;

void cpuclock_bpf_set_tsc_policy(enum cpuclock_tsc_policy policy)
{
    cpuclock_bpf_tsc_policy = policy;
}

/* Calibrates the header's TSC block when the policy lets the TSC time the
 * traces (the kernel keeps time with it, or --ring-clock tsc and the CPU
 * says it is invariant) and sets CPUCLOCK_HEADER_TSC_VALID; else leaves it
 * and says why in `why` ("" when calibrated). */
static void cpuclock_tsc_setup(struct cpuclock_header *header, char *why, size_t whylen)
{
    why[0] = '\0';
    int use_tsc = 0;
    if (cpuclock_bpf_tsc_policy == CPUCLOCK_TSC_NEVER)
        snprintf(why, whylen, "--ring-clock monotonic was asked for");
    else if (cpuclock_tsc_kernel_uses_it(why, whylen))
        use_tsc = 1;
    else if (cpuclock_bpf_tsc_policy == CPUCLOCK_TSC_FORCE)
        use_tsc = 1; /* the note on the kernel's clocksource is replaced below */
    if (use_tsc) {
        why[0] = '\0';
        if (cpuclock_tsc_calibrate(&header->tsc, 10000000u) == 0)
            header->flags |= CPUCLOCK_HEADER_TSC_VALID;
        else
            snprintf(why, whylen, "TSC calibration: %s",
                     errno == ENOTSUP ? "the TSC is not invariant (constant_tsc, nonstop_tsc)"
                                      : strerror(errno));
    }
}

int cpuclock_clock_page_create(struct cpuclock_table *page, char *why, size_t whylen)
{
    memset(page, 0, sizeof *page);
    int fd = (int)syscall(SYS_memfd_create, "preplay-clock", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "clock page: memfd_create: %s", strerror(errno));
        return -1;
    }
    void *map = MAP_FAILED;
    if (ftruncate(fd, CPUCLOCK_PAGE_BYTES) == 0)
        map = mmap(NULL, CPUCLOCK_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(why, whylen, "clock page: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct cpuclock_header *header = map;
    header->version = CPUCLOCK_VERSION;
    header->slot_count = 0; /* a page: no slots */
    cpuclock_tsc_setup(header, why, whylen);
    if (!(header->flags & CPUCLOCK_HEADER_TSC_VALID)) {
        munmap(map, CPUCLOCK_PAGE_BYTES);
        close(fd);
        return -1;
    }
    atomic_thread_fence(memory_order_release);
    header->magic = CPUCLOCK_MAGIC;
    page->header = header;
    page->map_bytes = CPUCLOCK_PAGE_BYTES;
    return fd;
}

void cpuclock_clock_page_free(struct cpuclock_table *page, int fd)
{
    if (page->header)
        munmap(page->header, page->map_bytes);
    memset(page, 0, sizeof *page);
    if (fd >= 0)
        close(fd);
}

#ifdef PREPLAY_CPUCLOCK_HAVE_BPF
#include <bpf/libbpf.h>

#include "cpuclock_bpf_object.h"

struct cpuclock_bpf {
    struct bpf_object *object;
    struct bpf_link *link;
    int map_fd;
    struct cpuclock_table table;
};

static struct cpuclock_bpf cpuclock_bpf_loaded;
static int cpuclock_bpf_is_loaded;
static char cpuclock_bpf_tsc_why[160]; /* why the table has no TSC block, "" when it has */
static char cpuclock_libbpf_last[256]; /* last libbpf warning, for the error reason */

static int cpuclock_libbpf_print(enum libbpf_print_level level, const char *format, va_list args)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    int n = vsnprintf(cpuclock_libbpf_last, sizeof cpuclock_libbpf_last, format, args);
    if (n > 0) {
        size_t len = strnlen(cpuclock_libbpf_last, sizeof cpuclock_libbpf_last);
        while (len > 0 && cpuclock_libbpf_last[len - 1] == '\n')
            cpuclock_libbpf_last[--len] = '\0';
    }
    return 0;
}

static const char *cpuclock_errno_hint(int error)
{
    if (error == EPERM || error == EACCES)
        return " (needs root or CAP_BPF+CAP_PERFMON)";
    if (error == ENOSYS)
        return " (kernel built without BPF)";
    if (error == ESRCH || error == ENOENT)
        return " (kernel BTF /sys/kernel/btf/vmlinux or the sched_switch tracepoint missing)";
    return "";
}

static void cpuclock_fail(char *err, size_t errlen, const char *step, int error)
{
    error = error < 0 ? -error : error;
    snprintf(err, errlen, "BPF unavailable: %s: %s%s%s%s", step, strerror(error),
             cpuclock_errno_hint(error), cpuclock_libbpf_last[0] ? "; libbpf: " : "",
             cpuclock_libbpf_last);
}

static void cpuclock_bpf_free(struct cpuclock_bpf *bpf)
{
    if (bpf->table.slots)
        munmap(bpf->table.slots, bpf->table.map_bytes);
    if (bpf->link)
        bpf_link__destroy(bpf->link);
    if (bpf->object)
        bpf_object__close(bpf->object);
    memset(bpf, 0, sizeof *bpf);
    bpf->map_fd = -1;
}

/* The program must see this very thread being switched out and in, with the
 * kernel's CPU time: claim a slot, sleep (a switch), compare with the syscall. */
static int cpuclock_bpf_self_test(struct cpuclock_bpf *bpf, char *err, size_t errlen)
{
    struct cpuclock_thread th;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    if (cpuclock_thread_claim(&bpf->table, &th, tid) != CPUCLOCK_MODE_BPF) {
        snprintf(err, errlen,
                 "BPF self-test: slot of the loading thread %u is owned by another live thread",
                 tid);
        return -1;
    }
    uint32_t seq_before = atomic_load(&th.slot->seq);
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 3; i++)
        nanosleep(&pause, NULL);
    uint32_t seq_after = atomic_load(&th.slot->seq);
    struct timespec cpu_ts, mono_ts;
    clock_gettime(CLOCK_MONOTONIC, &mono_ts);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_ts);
    uint64_t mono = (uint64_t)mono_ts.tv_sec * 1000000000u + (uint64_t)mono_ts.tv_nsec;
    uint64_t truth = (uint64_t)cpu_ts.tv_sec * 1000000000u + (uint64_t)cpu_ts.tv_nsec;
    uint64_t value = cpuclock_thread_now(&th, mono, NULL);
    cpuclock_thread_release(&th);
    if (seq_after - seq_before < 2) {
        snprintf(err, errlen,
                 "BPF self-test: the sched_switch program did not record this thread's switches "
                 "(seq %u -> %u; pid namespace mismatch?)",
                 seq_before, seq_after);
        return -1;
    }
    uint64_t diff = value > truth ? value - truth : truth - value;
    if (diff > 200000u) {
        snprintf(
            err, errlen,
            "BPF self-test: slot CPU time %llu ns differs from CLOCK_THREAD_CPUTIME_ID %llu ns",
            (unsigned long long)value, (unsigned long long)truth);
        return -1;
    }
    return 0;
}

struct cpuclock_bpf *cpuclock_bpf_load(char *err, size_t errlen)
{
    struct cpuclock_bpf *bpf = &cpuclock_bpf_loaded;
    struct stat pidns;
    int error;
    if (cpuclock_bpf_is_loaded) {
        snprintf(err, errlen, "BPF CPU clock already loaded in this process");
        return NULL;
    }
    memset(bpf, 0, sizeof *bpf);
    bpf->map_fd = -1;
    cpuclock_libbpf_last[0] = '\0';
    libbpf_print_fn_t previous_print = libbpf_set_print(cpuclock_libbpf_print);

    LIBBPF_OPTS(bpf_object_open_opts, open_options, .object_name = "preplay_cpuclock");
    bpf->object =
        bpf_object__open_mem(cpuclock_bpf_object, cpuclock_bpf_object_size, &open_options);
    if (!bpf->object) {
        error = errno;
        bpf->object = NULL;
        cpuclock_fail(err, errlen, "opening the embedded BPF object", error);
        goto fail;
    }
    error = bpf_object__load(bpf->object);
    if (error) {
        cpuclock_fail(err, errlen, "loading the sched_switch program", error);
        goto fail;
    }
    struct bpf_program *program =
        bpf_object__find_program_by_name(bpf->object, "cpuclock_on_sched_switch");
    struct bpf_map *map = bpf_object__find_map_by_name(bpf->object, "cpuclock_slots");
    if (!program || !map) {
        cpuclock_fail(err, errlen, "embedded BPF object lacks its program or map", ENOENT);
        goto fail;
    }
    bpf->map_fd = bpf_map__fd(map);
    size_t bytes = (size_t)CPUCLOCK_MAP_ENTRIES * CPUCLOCK_SLOT_SIZE;
    bytes = (bytes + 4095u) & ~(size_t)4095u;
    void *mapped = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf->map_fd, 0);
    if (mapped == MAP_FAILED) {
        cpuclock_fail(err, errlen, "mapping the slot table", errno);
        goto fail;
    }
    bpf->table.slots = mapped;
    bpf->table.map_bytes = bytes;
    bpf->table.header = (struct cpuclock_header *)((char *)mapped + (size_t)CPUCLOCK_SLOT_COUNT *
                                                                        CPUCLOCK_SLOT_SIZE);
    bpf->table.claimed = cpuclock_table_bitmap(mapped);
    if (stat("/proc/self/ns/pid", &pidns) != 0) {
        cpuclock_fail(err, errlen, "stat /proc/self/ns/pid", errno);
        goto fail;
    }
    struct cpuclock_header *header = bpf->table.header;
    header->pidns_dev = (uint64_t)pidns.st_dev;
    header->pidns_ino = (uint64_t)pidns.st_ino;
    header->slot_count = CPUCLOCK_SLOT_COUNT;
    header->version = CPUCLOCK_VERSION;
    cpuclock_tsc_setup(header, cpuclock_bpf_tsc_why, sizeof cpuclock_bpf_tsc_why);
    atomic_thread_fence(memory_order_release);
    header->magic = CPUCLOCK_MAGIC;

    bpf->link = bpf_program__attach(program);
    if (!bpf->link) {
        error = errno;
        bpf->link = NULL;
        cpuclock_fail(err, errlen, "attaching to tp_btf/sched_switch", error);
        goto fail;
    }
    if (cpuclock_bpf_self_test(bpf, err, errlen) != 0)
        goto fail;
    libbpf_set_print(previous_print);
    cpuclock_bpf_is_loaded = 1;
    return bpf;
fail:
    cpuclock_bpf_free(bpf);
    libbpf_set_print(previous_print);
    return NULL;
}

int cpuclock_bpf_map_fd(void)
{
    return cpuclock_bpf_is_loaded ? cpuclock_bpf_loaded.map_fd : -1;
}

struct cpuclock_table *cpuclock_bpf_table(void)
{
    return cpuclock_bpf_is_loaded ? &cpuclock_bpf_loaded.table : NULL;
}

const char *cpuclock_bpf_tsc_note(void)
{
    return cpuclock_bpf_is_loaded && cpuclock_bpf_tsc_why[0] ? cpuclock_bpf_tsc_why : NULL;
}

void cpuclock_bpf_unload(void)
{
    if (!cpuclock_bpf_is_loaded)
        return;
    cpuclock_bpf_free(&cpuclock_bpf_loaded);
    cpuclock_bpf_is_loaded = 0;
}

int cpuclock_bpf_built(void)
{
    return 1;
}

#else /* built without libbpf or clang: the fallback is all there is */

struct cpuclock_bpf *cpuclock_bpf_load(char *err, size_t errlen)
{
    snprintf(err, errlen,
             "BPF unavailable: preplay was built without libbpf/clang (install libbpf-dev and "
             "clang, then reconfigure)");
    return NULL;
}

int cpuclock_bpf_map_fd(void)
{
    return -1;
}

struct cpuclock_table *cpuclock_bpf_table(void)
{
    return NULL;
}

const char *cpuclock_bpf_tsc_note(void)
{
    return NULL;
}

void cpuclock_bpf_unload(void) {}

int cpuclock_bpf_built(void)
{
    return 0;
}
#endif
