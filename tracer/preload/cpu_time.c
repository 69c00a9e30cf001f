/* cpu_time.c - thread CPU time for the tracer (see cpu_time.h), on top of
 * tracer/cpuclock: the BPF slot table when the collector sent one (a few ns
 * per read, no syscall), else the thread's CPU clock, which the gap clock
 * reads only after a wall gap longer than its threshold
 * (tracer_cpu_mark.c). The collector's clock page, when it sent that
 * instead of a table, carries the TSC calibration alone. */
#include "cpu_time.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "cpuclock.h"

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
