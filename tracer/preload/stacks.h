/* stacks.h - optional call stacks on events (`preplay record --stacks N`),
 * stacks.c. Off unless --stacks: tracer_event_new asks for a stack only
 * when the process's stack_depth is set, with the busy mark up. */
#ifndef PREPLAY_TRACER_STACKS_H
#define PREPLAY_TRACER_STACKS_H

#include <stdint.h>

/* Id of the calling thread's current stack, at most `depth` frames (0:
 * none, or built without libunwind). */
uint32_t tracer_stack_id(uint32_t depth);
/* In a fork child: ids and symbols were the parent's; start over. */
void tracer_stacks_after_fork(void);

#endif
