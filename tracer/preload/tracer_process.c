/* tracer_process.c - ring 0 and the lock the process's threads share
 * (tracer_process.h).
 *
 * Definitions are written under the lock with the busy mark up; the lock
 * spins then yields (raw sched_yield), never sleeps on anything the app
 * holds, and a thread that holds it already is refused, not deadlocked. */
#include "tracer_process.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer_ring.h"
#include "tracer_state.h"

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

int tracer_emit_definition_data(const struct trace_event *ev, const void *data, size_t len)
{
    struct tracer_thread *t = &tracer_tls;
    if (!tracer_global.active)
        return -1;
    tracer_busy_enter(t);
    int rc = -1;
    if (tracer_process_lock() == 0) {
        rc = tracer_ring0_append(ev, data, len);
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
        rc = tracer_ring0_append(ev, NULL, 0);
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

void tracer_process_after_fork(void)
{
    tracer_holds_process_lock = 0;
}
