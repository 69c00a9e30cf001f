/* deps_on.h - the event handlers (deps_on.c). */
#ifndef PREPLAY_DEPS_ON_H
#define PREPLAY_DEPS_ON_H

#include <stdint.h>

#include "deps_state.h"

/* Applies one merged event q of trace file `file` to the state (its key is
 * the state's "now"); failures are recorded in the state. */
void deps_on_event(struct deps_state *s, uint32_t file, const struct deps_queued *q);

#endif
