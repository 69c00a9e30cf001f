/* deps_call.h - call matching and clock skew (deps_call.c). */
#ifndef PREPLAY_DEPS_CALL_H
#define PREPLAY_DEPS_CALL_H

#include <stdint.h>

#include "deps_state.h"

/* Block sv (served on an end whose peer is traced, in file `file`) meets
 * the call that sent its request, or waits for it at its stream offset. */
void deps_call_served(struct deps_state *s, const struct deps_served *sv, uint32_t file);
/* End e's peer is known: its finished blocks go to the schedule (untraced
 * peer) or the rendezvous (traced), and the calls that waited for the
 * decision resolve. Nothing happens while the peer is unknown. */
void deps_call_decide_served(struct deps_state *s, struct deps_end *e);
/* Tries to resolve call ci of finished block b (final: the recording has
 * ended, so nothing is waited for); returns 1 when it is done, 0 when it
 * waits for its end's peer decision or for its callee block. */
int deps_call_resolve(struct deps_state *s, struct deps_block *b, uint32_t ci, int final);
/* At the end: call c of block b never met its callee; it becomes an
 * external call and its bytes are counted unmatched. */
void deps_call_give_up(struct deps_state *s, struct deps_block *b, struct deps_call *c);
/* Bytes of blocks served on traced connections that no call claimed. */
uint64_t deps_call_unclaimed_bytes(const struct deps_state *s);
/* Clock skew from one matched pair: the callee block sv (of callee_file)
 * must lie within call c of the caller block: its bounds narrow the host
 * pair's estimate, and the callee host's clock is corrected when the
 * estimate says it is off (nothing for two ends on one host). */
void deps_call_skew_note(struct deps_state *s, struct deps_block *caller, struct deps_call *c,
                         const struct deps_served *sv, uint32_t callee_file);

#endif
