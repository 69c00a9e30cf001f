/* tt_cpu_work.h - the known CPU work of the tracer's CPU test programs
 * (tt_cpuping, tt_waitcpu): a register-only burn the compiler
 * cannot drop, and the thread's own CPU clock. Neither may call anything
 * the tracer wraps. */
#ifndef PREPLAY_TT_CPU_WORK_H
#define PREPLAY_TT_CPU_WORK_H

#include <time.h>

static volatile unsigned long tt_sink;

/* n steps of a dependent chain (an LCG) from x. */
static inline unsigned long tt_burn(unsigned long x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    tt_sink = x;
    return x;
}

/* The calling thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID). */
static inline unsigned long long tt_thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

#endif
