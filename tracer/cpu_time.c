/* cpu_time.c - thread CPU time for the tracer (see cpu_time.h). This is
 * the fallback path: one CLOCK_THREAD_CPUTIME_ID read per boundary. */
#include "cpu_time.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void tracer_cpu_time_attach(int map_fd)
{
    if (map_fd >= 0) syscall(SYS_close, map_fd);
}

void tracer_cpu_time_claim_thread(uint32_t tid)
{
    (void)tid;
}
void tracer_cpu_time_release_thread(void) {}
void tracer_cpu_time_after_fork(void) {}

uint64_t tracer_cpu_time_now(uint64_t now_ns)
{
    (void)now_ns;
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
