/* replay_nodeps.h - the strawman replay of CloudProphet §5.3.4
 * (`preplay replay/run --no-deps`): every recorded worker of a component
 * replays its blocks strictly in the order it served them when recorded,
 * ignoring which request each block belongs to. A request whose block is not
 * its worker's next one is held until the blocks before it have been
 * replayed: the false dependencies of the paper's §2 (Figure 2), kept on
 * purpose so the benefit of dependency extraction can be measured. Only the
 * server (replay_server.c) uses it. Never replays anything itself: it only
 * decides which held request a worker takes next. */
#ifndef PREPLAY_REPLAY_NODEPS_H
#define PREPLAY_REPLAY_NODEPS_H

#include <stdint.h>

#include "plan.h"

struct replay_nodeps;

/* Worker sequences of `component`: its blocks reachable from the schedule
 * (front-end requests and the calls they make, transitively), each once per
 * time one pass of the schedule replays it (a hand-built plan may share a
 * block among requests), grouped by plan_block.worker and sorted by
 * plan_block.start_ns, then by the order the schedule reaches them. Refused
 * (NULL) when one pass replays more than 2^26 blocks. A worker waiting
 * longer than hold_s for a block while a later one of its blocks is held
 * skips it (a request lost or cut off by the end of an interval must not
 * stall the run forever). NULL with err on failure. */
struct replay_nodeps *replay_nodeps_new(const struct plan *p, uint32_t component, double hold_s,
                                        char *err, size_t errlen);
void replay_nodeps_free(struct replay_nodeps *n);
/* Recorded workers that have a sequence (the server starts one thread each). */
uint32_t replay_nodeps_workers(const struct replay_nodeps *n);
/* Hands a request for `block` on connection fd (header already read) to its
 * worker: 1 = taken (the server must not touch fd until a worker returns it),
 * 0 = the block is in no sequence (serve it at once). */
int replay_nodeps_offer(struct replay_nodeps *n, uint32_t block, int fd, uint32_t request_bytes,
                        uint32_t response_bytes);
/* Worker w's next request in recorded order; blocks until it has arrived.
 * 0 with block/fd/bytes set, -1 once stopped. */
int replay_nodeps_next(struct replay_nodeps *n, uint32_t w, uint32_t *block, int *fd,
                       uint32_t *request_bytes, uint32_t *response_bytes);
/* Every worker back to its first block (a new interval starts the schedule
 * from its beginning). */
void replay_nodeps_reset(struct replay_nodeps *n);
/* Blocks skipped after waiting hold_s (reported in the server's log). */
uint64_t replay_nodeps_skipped(const struct replay_nodeps *n);
/* Wakes every worker (next returns -1) and closes the held connections. */
void replay_nodeps_stop(struct replay_nodeps *n);

#endif
