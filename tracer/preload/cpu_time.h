/* cpu_time.h - the calling thread's CPU time at an event boundary, as cheap
 * as the machine allows. Backed by the BPF sched_switch clock when the
 * collector loaded it (--cpu-clock bpf: no syscall per read), else by
 * CLOCK_THREAD_CPUTIME_ID, read by the gap clock only after a switch
 * (rseq) or, without rseq, after long gaps.
 * See docs/cpu-time.md. */
#ifndef PREPLAY_TRACER_CPU_TIME_H
#define PREPLAY_TRACER_CPU_TIME_H

#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpuclock.h"

/* map_fd: the BPF clock map the collector sent (is_page 0) or its clock
 * page (is_page 1: the TSC calibration, no slots), or -1. Takes ownership. */
void tracer_cpu_time_attach(int map_fd, int is_page);
void tracer_cpu_time_claim_thread(uint32_t tid);
void tracer_cpu_time_release_thread(void);
void tracer_cpu_time_after_fork(void);
/* The calling thread's clock, read by the tracer's slow CPU path
 * (tracer_cpu_mark.c: tracer_cpu_exact) when the thread's mark does not hold. */
extern __thread struct cpuclock_thread tracer_cpu_thread __attribute__((tls_model("initial-exec")));

/* rseq as a switch detector for the gap clock (docs/cpu-time.md): the
 * kernel clears a thread's rseq_cs whenever it returns to the thread after
 * a context switch, a migration or a signal, if the thread's instruction
 * pointer is outside the critical section rseq_cs names. The tracer arms
 * it with an empty section; while it stays armed, the thread ran without a
 * switch, so its CPU time is the wall time. tracer_rseq_probe checks once
 * per process that glibc registered rseq and that the kernel clears it
 * across a sleep; tracer_rseq_usable says whether it did. */
extern int tracer_rseq_usable;
void tracer_rseq_probe(void);
/* The calling thread's rseq_cs word, or NULL (rseq not usable, or not
 * registered for this thread). */
_Atomic uint64_t *tracer_rseq_word(void);
/* The value the tracer arms rseq_cs with (its empty section's address). */
uint64_t tracer_rseq_armed(void);

/* The collector's TSC -> CLOCK_MONOTONIC block when it maintains one (set
 * at attach), else NULL: the ring clock is then the vDSO's CLOCK_MONOTONIC. */
extern const struct cpuclock_tsc *tracer_cpu_time_tsc;

#endif
