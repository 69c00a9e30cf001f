/* tracer_core.h - the shared core every interposer of libpreplay_trace.so
 * stands on, in one include: resolving the real functions
 * (tracer_resolve.h), the process's and each thread's state
 * (tracer_state.h, tracer_thread.h), timing and CPU time between records
 * (tracer_cpu_mark.h), writing a record into the thread's shared-memory
 * ring (tracer_ring.h), ring 0 and the process lock (tracer_process.h),
 * the string table (tracer_strings.h); and the process's own life
 * (tracer_core.c): registration with the collector, fork and exec.
 *
 * The hot path must never allocate, take a lock the app could hold, change
 * errno or the result of the wrapped call, or crash: when anything is off
 * (no collector, tracing switched off, re-entered from our own code), the
 * wrappers call the real function and do nothing else. */
#ifndef PREPLAY_TRACER_CORE_H
#define PREPLAY_TRACER_CORE_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "cpu_time.h"
#include "cpuclock.h"
#include "shm_layout.h"
#include "trace_event.h"
#include "tracer_cpu_mark.h"
#include "tracer_process.h"
#include "tracer_resolve.h"
#include "tracer_ring.h"
#include "tracer_state.h"
#include "tracer_strings.h"
#include "tracer_thread.h"

/* Registers the process with the collector, once: from our constructor, or
 * from the first wrapped call when that comes sooner. -1 when an earlier
 * call had done so (or is doing so) already: nothing done; else 0, and
 * tracer_global.active says whether the process is traced. */
int tracer_init_once(void);

/* Called by the process interposer after fork in the child / before exec. */
void tracer_after_fork_child(void);
void tracer_before_exec(const char *path);
/* The collector's name is known (from the environment, or as first seen
 * at load when the app cleared its environment since). */
int tracer_collector_env_present(void);

#endif
