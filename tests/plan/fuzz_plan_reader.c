/* fuzz_plan_reader.c - libFuzzer target for the replay-plan reader: any
 * byte string, read as a plan (through a memfd, since plan_read takes a
 * path). The reader must never crash, hang or read out of bounds, and a
 * plan it accepts must hold no dangling reference: every id is walked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plan.h"
#include "../fuzz/fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024];
    int fd = fuzz_input_file(data, size, "fuzz_plan", path, sizeof path);
    if (fd < 0)
        return 0;
    struct plan *p = plan_read(path, err, sizeof err);
    if (p) {
        for (uint32_t b = 0; b < p->nblocks; b++) {
            const struct plan_block *blk = &p->blocks[b];
            if ((uint64_t)blk->first_op + blk->nops > p->nops || blk->component >= p->ncomponents ||
                !plan_string(p, blk->label))
                abort();
            for (uint32_t i = 0; i < blk->nops; i++) {
                const struct plan_op *o = &p->ops[blk->first_op + i];
                if (o->kind == PLAN_OP_CALL &&
                    (o->a.call.callee_block >= b ||
                     (uint64_t)o->a.call.first_segment + o->a.call.nsegments > p->nsegments))
                    abort();
                if (o->kind == PLAN_OP_FILE && o->a.file.file >= p->nfiles)
                    abort();
                if (o->kind == PLAN_OP_DB &&
                    (!plan_string(p, o->a.db.sql) ||
                     o->a.db.conn >= p->components[blk->component].db_conns))
                    abort();
            }
        }
        for (uint64_t i = 0; i < p->nrequests; i++)
            if (p->requests[i].block >= p->nblocks || !plan_string(p, p->requests[i].label))
                abort();
        plan_free(p);
    }
    close(fd);
    return 0;
}
