/* cpu_time.h - the calling thread's CPU time at an event boundary, as cheap
 * as the machine allows. Backed by the BPF sched_switch clock when the
 * collector loaded it (--cpu-clock bpf: no syscall per read), else by
 * CLOCK_THREAD_CPUTIME_ID, read by the gap clock only after long gaps.
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

/* The collector's TSC -> CLOCK_MONOTONIC block when it maintains one (set
 * at attach), else NULL: the ring clock is then the vDSO's CLOCK_MONOTONIC. */
extern const struct cpuclock_tsc *tracer_cpu_time_tsc;

#endif
