/* cpu_time.h - the calling thread's CPU time at an event boundary, as cheap
 * as the machine allows. Backed by the BPF sched_switch clock when the
 * collector could load it (no syscall per read), else by a fallback that
 * reads CLOCK_THREAD_CPUTIME_ID. See docs/cpu-time.md. */
#ifndef PREPLAY_TRACER_CPU_TIME_H
#define PREPLAY_TRACER_CPU_TIME_H

#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpuclock.h"

/* map_fd: the BPF clock map the collector sent, or -1. Takes ownership. */
void tracer_cpu_time_attach(int map_fd);
void tracer_cpu_time_claim_thread(uint32_t tid);
void tracer_cpu_time_release_thread(void);
void tracer_cpu_time_after_fork(void);
/* The calling thread's clock (tracer_cpu_time_now reads it inline: it runs
 * at every event boundary). */
extern __thread struct cpuclock_thread tracer_cpu_thread __attribute__((tls_model("initial-exec")));

/* Thread CPU ns at CLOCK_MONOTONIC time now_ns (the caller just read it);
 * 0 when unknown. */
static inline __attribute__((always_inline)) uint64_t tracer_cpu_time_now(uint64_t now_ns)
{
    if (__builtin_expect(tracer_cpu_thread.mode == CPUCLOCK_MODE_NONE, 0))
        tracer_cpu_time_claim_thread((uint32_t)syscall(SYS_gettid));
    return cpuclock_thread_now(&tracer_cpu_thread, now_ns, NULL);
}
/* 1 when this thread's CPU time comes from the BPF table. */
int tracer_cpu_time_exact(void);

/* The collector's TSC -> CLOCK_MONOTONIC block when it maintains one (set
 * at attach), else NULL: timestamps then come from the vDSO. */
extern const struct cpuclock_tsc *tracer_cpu_time_tsc;

#endif
