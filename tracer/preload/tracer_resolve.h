/* tracer_resolve.h - finding the real definitions of the functions
 * libpreplay_trace.so wraps: the next one after ours for libc's, a search
 * of every loaded object for those of a library the app dlopen'ed.
 *
 * Resolution runs once per function, on its first call, maybe before our
 * constructor: it must never call a wrapped function, and a libc function
 * it cannot find aborts (nothing sane is left to call). */
#ifndef PREPLAY_TRACER_RESOLVE_H
#define PREPLAY_TRACER_RESOLVE_H

#include <dlfcn.h>

#include "tracer_state.h"

/* Declares `real_NAME`, a pointer to the definition of NAME `resolver`
 * finds on first use (wrappers can run before our constructor), and
 * tracer_real_NAME() to read it. */
#define TRACER_REAL_VIA(resolver, ret, name, params)                                               \
    typedef ret(*tracer_##name##_fn) params;                                                       \
    static tracer_##name##_fn real_##name;                                                         \
    static inline tracer_##name##_fn tracer_real_##name(void)                                      \
    {                                                                                              \
        if (TRACER_UNLIKELY(!real_##name))                                                         \
            real_##name = (tracer_##name##_fn)resolver(#name);                                     \
        return real_##name;                                                                        \
    }

/* A libc function: the next definition after ours. */
#define TRACER_REAL(ret, name, params) TRACER_REAL_VIA(tracer_resolve, ret, name, params)

/* A function of a library the app brought (libmariadb, libssl), maybe
 * loaded RTLD_LOCAL: tracer_resolve_loaded, which must find it. */
#define TRACER_REAL_LOADED(ret, name, params)                                                      \
    TRACER_REAL_VIA(tracer_resolve_loaded_required, ret, name, params)

/* The next definition of libc's `name` after ours; aborts when none. */
void *tracer_resolve(const char *name);
/* A function of a library the app loaded, also one dlopen'ed RTLD_LOCAL
 * that dlsym(RTLD_NEXT) does not search; NULL when no loaded object other
 * than ours defines it. Not for the hot path. */
void *tracer_resolve_loaded(const char *name);
/* tracer_resolve_loaded for a function whose wrapper the app just called:
 * its library is loaded, so not finding it aborts, naming the function. */
void *tracer_resolve_loaded_required(const char *name);

#endif
