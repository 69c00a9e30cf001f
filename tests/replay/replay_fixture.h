/* replay_fixture.h - hand-built replay plans for the replay tests: a small
 * builder over struct plan (strings, components, files, locks, blocks of
 * ops, call segments, requests) so each test states exactly the blocks it
 * replays. Test code only: aborts on allocation failure. */
#ifndef PREPLAY_REPLAY_FIXTURE_H
#define PREPLAY_REPLAY_FIXTURE_H

#include <stdint.h>

#include "plan.h"

struct plan *fixture_plan_new(void);
uint32_t fixture_string(struct plan *p, const char *s);
uint32_t fixture_component(struct plan *p, const char *name, uint32_t workers, int frontend);
uint32_t fixture_file(struct plan *p, uint64_t initial_size);
uint32_t fixture_lock(struct plan *p);
/* Starts a block; ops added with fixture_op until the next block. */
uint32_t fixture_block(struct plan *p, uint32_t component, const char *label);
void fixture_op(struct plan *p, struct plan_op op);
/* A CALL op to callee with segments given as signed byte counts:
 * positive = caller sends, negative = caller receives; `more` marks sends
 * with MSG_MORE (bit i for segment i). */
void fixture_call(struct plan *p, uint32_t callee, const int32_t *segs, uint32_t nsegs,
                  uint32_t more, uint16_t flags);
void fixture_request(struct plan *p, uint32_t block, uint64_t arrival_ns, uint32_t session,
                     uint64_t think_ns);
/* Frees a plan made here (plan_free may not know this layout). */
void fixture_plan_free(struct plan *p);

static inline struct plan_op fixture_cpu(uint64_t ns)
{
    struct plan_op o = {.kind = PLAN_OP_CPU, .recorded_ns = ns};
    o.a.cpu_ns = ns;
    return o;
}
static inline struct plan_op fixture_net(int send, uint64_t bytes, uint16_t flags)
{
    struct plan_op o = {.kind = send ? PLAN_OP_SEND : PLAN_OP_RECV, .flags = flags};
    o.a.net.bytes = bytes;
    return o;
}
static inline struct plan_op fixture_external(uint64_t ns)
{
    struct plan_op o = {.kind = PLAN_OP_EXTERNAL, .recorded_ns = ns};
    return o;
}
static inline struct plan_op fixture_lockop(uint8_t op, uint32_t lock, uint8_t mode)
{
    struct plan_op o = {.kind = PLAN_OP_LOCK, .op = op};
    o.a.lock.lock = lock;
    o.a.lock.mode = mode;
    return o;
}
static inline struct plan_op fixture_fileop(uint8_t op, uint32_t file, int64_t offset,
                                            uint64_t size)
{
    struct plan_op o = {.kind = PLAN_OP_FILE, .op = op};
    o.a.file.file = file;
    o.a.file.offset = offset;
    o.a.file.size = size;
    return o;
}

#endif
