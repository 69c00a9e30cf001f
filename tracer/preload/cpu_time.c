/* cpu_time.c - thread CPU time for the tracer (see cpu_time.h), on top of
 * tracer/cpuclock: the BPF slot table when the collector sent one (a few ns
 * per read, no syscall), else the thread's CPU clock, which the gap clock
 * reads only after a wall gap longer than its threshold
 * (tracer_cpu_mark.c). The collector's clock page, when it sent that
 * instead of a table, carries the TSC calibration alone. */
#include "cpu_time.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpuclock.h"

/* glibc >= 2.35 registers each thread's struct rseq at this offset from
 * the thread pointer (size 0: not registered); weak, so that an older
 * glibc leaves them NULL and rseq unused. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

int tracer_rseq_usable;

#if defined(__x86_64__)
/* An empty critical section (post_commit_offset 0: no instruction pointer
 * is ever inside it). The kernel still checks the descriptor when it
 * clears it, including the signature glibc registered (RSEQ_SIG) in the
 * 4 bytes before abort_ip: a bad one would be a SIGSEGV. */
#define TRACER_RSEQ_SIG 0x53053053u
struct tracer_rseq_cs {
    uint32_t version, flags;
    uint64_t start_ip, post_commit_offset, abort_ip;
} __attribute__((aligned(32)));
static const uint32_t tracer_rseq_sig_area[2] = {TRACER_RSEQ_SIG, 0};
static struct tracer_rseq_cs tracer_rseq_section;

_Atomic uint64_t *tracer_rseq_word(void)
{
    if (!tracer_rseq_usable)
        return NULL;
    char *tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    char *area = tp + __rseq_offset;
    if (*(volatile int32_t *)(area + 4) < 0) /* cpu_id: not registered */
        return NULL;
    return (_Atomic uint64_t *)(area + 8);
}

uint64_t tracer_rseq_armed(void)
{
    return (uint64_t)(uintptr_t)&tracer_rseq_section;
}

void tracer_rseq_probe(void)
{
    static int probed; /* once per image: a forked child inherits the answer */
    if (probed)
        return;
    probed = 1;
    tracer_rseq_usable = 0;
    if (!&__rseq_size || !&__rseq_offset || __rseq_size < 16)
        return;
    tracer_rseq_section.start_ip = (uint64_t)(uintptr_t)&tracer_rseq_sig_area[0];
    tracer_rseq_section.post_commit_offset = 0;
    tracer_rseq_section.abort_ip = (uint64_t)(uintptr_t)&tracer_rseq_sig_area[1];
    tracer_rseq_usable = 1;
    _Atomic uint64_t *word = tracer_rseq_word();
    tracer_rseq_usable = 0;
    if (!word)
        return;
    int saved_errno = errno;
    for (int attempt = 0; attempt < 3 && !tracer_rseq_usable; attempt++) {
        atomic_store_explicit(word, tracer_rseq_armed(), memory_order_relaxed);
        struct timespec pause = {0, 1000};
        syscall(SYS_nanosleep, &pause, NULL); /* a switch out and in */
        tracer_rseq_usable = atomic_load_explicit(word, memory_order_relaxed) == 0;
    }
    atomic_store_explicit(word, 0, memory_order_relaxed);
    errno = saved_errno;
}
#else
_Atomic uint64_t *tracer_rseq_word(void)
{
    return NULL;
}

uint64_t tracer_rseq_armed(void)
{
    return 0;
}

void tracer_rseq_probe(void) {}
#endif

const struct cpuclock_tsc *tracer_cpu_time_tsc;
static struct cpuclock_table tracer_cpu_table;
static int tracer_cpu_have_table;
__thread struct cpuclock_thread tracer_cpu_thread __attribute__((tls_model("initial-exec")));

void tracer_cpu_time_attach(int map_fd, int is_page)
{
    if (map_fd < 0)
        return;
    char err[128];
    if (!tracer_cpu_table.header &&
        (is_page ? cpuclock_attach_page(map_fd, &tracer_cpu_table, err, sizeof err)
                 : cpuclock_attach(map_fd, &tracer_cpu_table, err, sizeof err)) == 0) {
        tracer_cpu_have_table = tracer_cpu_table.slots != NULL;
        if (tracer_cpu_table.header->flags & CPUCLOCK_HEADER_TSC_VALID)
            tracer_cpu_time_tsc = &tracer_cpu_table.header->tsc;
    }
    syscall(SYS_close, map_fd);
}

void tracer_cpu_time_claim_thread(uint32_t tid)
{
    cpuclock_thread_claim(tracer_cpu_have_table ? &tracer_cpu_table : NULL, &tracer_cpu_thread,
                          tid);
}

void tracer_cpu_time_release_thread(void)
{
    cpuclock_thread_release(&tracer_cpu_thread);
}

/* The child keeps the table mapping (it is the kernel's map, shared on
 * purpose); its one thread claims a slot under its own tid on first use. */
void tracer_cpu_time_after_fork(void)
{
    tracer_cpu_thread.mode = CPUCLOCK_MODE_NONE;
}
