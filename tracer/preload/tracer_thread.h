/* tracer_thread.h - a thread's life in the tracer (tracer_thread.c): its
 * entry into a traced call (tracer_enter, inline: it runs before every
 * wrapped call), the ring it claims on its first traced call, its
 * THREAD_START and THREAD_EXIT records, and its tid.
 *
 * tracer_enter's fast test must stay inline and read only the thread's own
 * line, the process's and the control page's tracing window; everything
 * else is tracer_enter_slow's, which must never allocate or block. */
#ifndef PREPLAY_TRACER_THREAD_H
#define PREPLAY_TRACER_THREAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "tracer_state.h"

/* The rare cases of tracer_enter: not registered, tracing off or the
 * family not traced, nested in a signal handler, or the thread has no
 * ring of this process generation yet. */
struct tracer_thread *tracer_enter_slow(struct tracer_thread *t, uint32_t family);

/* tracer_enter's fast test, shared with the leaf paths that skip it: the
 * thread claimed a ring in this generation, is not inside the tracer, the
 * family is traced and the thread is in the current tracing window. */
static inline __attribute__((always_inline)) int tracer_thread_ready(const struct tracer_thread *t,
                                                                     uint32_t family)
{
    return t->claimed_gen == tracer_global.generation && !t->busy &&
           (tracer_global.only_mask & family) &&
           atomic_load_explicit(&tracer_global.control->enabled, memory_order_relaxed) == t->window;
}

/* Returns the calling thread's state if an event of `family` (TRACER_ONLY_*)
 * should be traced now, else NULL. Claims a ring on first use. Inline: it
 * runs before every wrapped call. A ring claimed in the current region
 * generation (never 0 in TLS: generations start at 1 and a released ring
 * zeroes its claimed_gen) implies a registered process and a mapped control
 * page, so the common answer is a few loads from two lines of our own and
 * one of the control page (the tracing window's number); everything else
 * is tracer_enter_slow's, including a new tracing window (tracing was
 * switched off and on since this thread's last entry). */
static inline struct tracer_thread *tracer_enter(uint32_t family)
{
    struct tracer_thread *t = &tracer_tls;
    if (TRACER_LIKELY(tracer_thread_ready(t, family)))
        return t;
    return tracer_enter_slow(t, family);
}

/* The calling thread's tid (one syscall, then cached in tracer_tls). */
uint32_t tracer_gettid(void);
/* Records `parent` as the thread's creator, for its THREAD_START. */
void tracer_set_parent_tid(uint32_t parent);
/* Called first thing in a thread the app created (its start routine's
 * trampoline): notes when it started (see tracer_thread.started_raw). */
void tracer_note_thread_start(void);

/* Ends the calling thread t in the trace: its THREAD_EXIT, written last,
 * then its ring given back; a traced call after it is counted untraced.
 * From the last round of its key destructor, or for the thread that calls
 * exit, from the exit handler that runs after every library destructor. */
void tracer_thread_end(struct tracer_thread *t);
/* At registration: the thread key whose destructor ends each thread's
 * ring. */
void tracer_threads_init(void);
/* In a fork child: the calling thread (the child's only one) owns no ring
 * and no deferred open of the parent's; its CPU mark starts over. */
void tracer_thread_after_fork(void);

#endif
