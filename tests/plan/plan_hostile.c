/* plan_hostile.c - writes a plan the writer would refuse, for shell tests
 * of how consumers bound what a plan says: `plan_hostile OUT WORKERS` gives
 * a well-formed plan (string "frontend", one front-end component with
 * WORKERS workers, one CPU block, one request) whose worker count may be
 * anything a u32 holds. Test code only; never linked into preplay. */
#include <stdio.h>
#include <stdlib.h>

#include "plan_craft.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: plan_hostile OUT WORKERS\n");
        return 2;
    }
    unsigned long long workers = strtoull(argv[2], NULL, 10);
    static struct plan_craft c;
    plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "hostile");
    plan_craft_string(&c, "frontend");
    plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, 1ull, 0ull, workers, 0ull, 80ull, 2ull);
    /* block: component 0, label 0, flags 0, recorded 100, 1 op, 0 segs; CPU op */
    uint8_t blk[] = {0, 0, 0, 100, 1, 0, PLAN_OP_CPU, 4, 0, 0, 9, 7};
    plan_craft_record(&c, PLAN_REC_BLOCK, blk, sizeof blk);
    plan_craft_varints(&c, PLAN_REC_REQUEST, 6, 0ull, 0ull, 0ull, 0ull, 0ull, 0ull);
    plan_craft_varints(&c, PLAN_REC_END, 9, 2ull, 1ull, 0ull, 0ull, 0ull, 1ull, 1ull, 0ull, 1ull);
    plan_craft_frame(&c);
    if (plan_craft_save(&c, argv[1]) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
