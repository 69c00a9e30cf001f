/* deps_block.h - the block lifecycle and the held-block heap (deps_block.c). */
#ifndef PREPLAY_DEPS_BLOCK_H
#define PREPLAY_DEPS_BLOCK_H

#include <stdint.h>

#include "deps_state.h"

/* Thread t starts serving a request on end e with receive ev (ending at
 * `common`): the new block is e's open block. NULL when out of memory (the
 * state has failed). */
struct deps_block *deps_block_start(struct deps_state *s, struct deps_thread *t, struct deps_end *e,
                                    const struct trace_event *ev, uint64_t common);
/* The request on end e is complete (its last send is known); final: the
 * recording ended with it open. A block never answered is dropped; one whose
 * calls are resolved is written, the others are held. */
void deps_block_finish(struct deps_state *s, struct deps_end *e, int final);
/* The post-response tail of thread t's finished block (t->tail) is over:
 * the thread takes another request or accepts a connection (final: the
 * recording ended, and what followed the finish is cut off as possible
 * shutdown work). The block is written or held; nothing when t has none. */
void deps_block_seal_tail(struct deps_state *s, struct deps_thread *t, int final);
/* Checkpoint: tails whose thread has been idle a grace time since the
 * finish are over; the others hold the schedule's horizon back to their
 * start. */
void deps_block_seal_idle_tails(struct deps_state *s, uint64_t *horizon);
/* Writes finished block b (its calls resolved) to the plan and frees it;
 * its end decides whether it is a front-end request or a callee. */
void deps_block_emit(struct deps_state *s, struct deps_block *b);
/* The block events of thread t currently belong to (its open block, else
 * its block's post-response tail), or NULL. */
struct deps_block *deps_block_of(struct deps_thread *t);
/* One more of t's resource events is covered by b (flagged when t violates). */
void deps_block_cover(struct deps_thread *t, struct deps_block *b);
/* Appends an op of this kind (and per-kind op, recorded duration) to the
 * block, the rest zeroed; NULL on out of memory (the state has failed). */
struct plan_op *deps_block_op_add(struct deps_state *s, struct deps_block *b, uint8_t kind,
                                  uint8_t op_code, uint64_t recorded_ns);
/* Appends a SOCKOPT op; NULL on out of memory (the state has failed). */
struct plan_op *deps_block_sockopt_op(struct deps_state *s, struct deps_block *b, int32_t level,
                                      int32_t name, int64_t value);
/* Frees a block with its arrays (not its references on ends). */
void deps_block_free(struct deps_block *b);
/* Takes a block out of the held heap (nothing when it is not held). */
void deps_block_held_remove(struct deps_state *s, struct deps_block *b);
/* A front-end request (block served to an untraced peer) joins the schedule. */
void deps_block_schedule_push(struct deps_state *s, const struct deps_served *sv);
/* Writes the schedule's requests that arrived up to horizon, in arrival order. */
void deps_block_schedule_flush(struct deps_state *s, uint64_t horizon);

#endif
