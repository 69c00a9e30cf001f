/* plan_hostile.c - writes a plan the writer may refuse, for shell tests of
 * how consumers bound what a plan says:
 *   plan_hostile OUT WORKERS [COMPONENTS [FILE_SIZE]]
 * gives a well-formed plan: strings "frontend", "c1".."cN-1", "/data";
 * COMPONENTS components (the first the front end) of WORKERS workers each,
 * one CPU block, one request, and with FILE_SIZE one file of that initial
 * size. Values may be anything their fields hold. Test code only; never
 * linked into preplay. */
#include <stdio.h>
#include <stdlib.h>

#include "plan_craft.h"

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: plan_hostile OUT WORKERS [COMPONENTS [FILE_SIZE]]\n");
        return 2;
    }
    unsigned long long workers = strtoull(argv[2], NULL, 10);
    unsigned ncomp = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    if (ncomp < 1 || ncomp > 1000) {
        fprintf(stderr, "plan_hostile: COMPONENTS 1..1000\n");
        return 2;
    }
    static struct plan_craft c;
    plan_craft_header(&c, 1, PLAN_FORMAT_MINOR, "hostile");
    plan_craft_string(&c, "frontend");
    for (unsigned i = 1; i < ncomp; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%u", i);
        plan_craft_string(&c, name);
    }
    for (unsigned i = 0; i < ncomp; i++)
        plan_craft_varints(&c, PLAN_REC_COMPONENT, 6, (uint64_t)i + 1, 0ull, workers, 0ull,
                           80ull + i, i ? 0ull : 2ull);
    uint64_t nfiles = 0;
    if (argc > 4) {
        plan_craft_string(&c, "/data");
        plan_craft_varints(&c, PLAN_REC_FILE, 2, (uint64_t)ncomp + 1, strtoull(argv[4], NULL, 10));
        nfiles = 1;
    }
    /* block: component 0, label 0, flags 0, recorded 100, 1 op, 0 segs; CPU op */
    uint8_t blk[] = {0, 0, 0, 100, 1, 0, PLAN_OP_CPU, 4, 0, 0, 9, 7};
    plan_craft_record(&c, PLAN_REC_BLOCK, blk, sizeof blk);
    plan_craft_varints(&c, PLAN_REC_REQUEST, 6, 0ull, 0ull, 0ull, 0ull, 0ull, 0ull);
    plan_craft_varints(&c, PLAN_REC_END, 9, (uint64_t)ncomp + 1 + nfiles, (uint64_t)ncomp, nfiles,
                       0ull, 0ull, 1ull, 1ull, 0ull, 1ull);
    plan_craft_frame(&c);
    if (plan_craft_save(&c, argv[1]) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
