/* deps_outside.h - work outside requests, measured (deps_outside.c). */
#ifndef PREPLAY_DEPS_OUTSIDE_H
#define PREPLAY_DEPS_OUTSIDE_H

#include <stdint.h>

#include "deps_state.h"

/* Thread t did one event (a resource event, or CPU time cpu_ns) that no
 * block took (attributed 0) or that its block took (1); in_request: the
 * thread had a block its events go to (deps_block_of). */
void deps_outside_note(struct deps_state *s, struct deps_thread *t, uint64_t events,
                       uint64_t cpu_ns, int attributed, int in_request);
/* Thread t accepted a connection: what it does until that request's first
 * read is the accept path. */
void deps_outside_accept(struct deps_thread *t);
/* Thread t starts serving a block: what it did since its last one (or
 * since the first request, before its first) gets its kind. */
void deps_outside_block_start(struct deps_state *s, struct deps_thread *t);
/* The end of the recording: what threads did after their last block (and
 * threads that never served, after the last block anywhere) is shutdown,
 * the rest of what threads that never served did is background. */
void deps_outside_finish(struct deps_state *s);

#endif
