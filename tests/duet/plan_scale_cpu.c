/* plan_scale_cpu.c - test helper: `plan_scale_cpu IN OUT FACTOR [OLD=NEW]`
 * rewrites a replay plan with every CPU op's duration (cpu_ns and
 * recorded_ns) multiplied by FACTOR, through the plan codec (plan_read /
 * plan_write), so `preplay duet` tests get a "version B" that is FACTOR
 * slower in CPU per block without any special case in the code under test;
 * OLD=NEW also renames the request label OLD (a version whose URL
 * changed). Everything else (recording id, schedule) is kept. Test code:
 * exits non-zero with one line on failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: plan_scale_cpu IN.plan OUT.plan FACTOR [OLD=NEW]\n");
        return 2;
    }
    char *end;
    double f = strtod(argv[3], &end);
    if (*end || !(f > 0) || !isfinite(f)) {
        fprintf(stderr, "plan_scale_cpu: FACTOR '%s': expected a positive number\n", argv[3]);
        return 2;
    }
    char err[1024];
    struct plan *p = plan_read(argv[1], err, sizeof err);
    if (!p) {
        fprintf(stderr, "plan_scale_cpu: %s\n", err);
        return 1;
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < p->nops; i++)
        if (p->ops[i].kind == PLAN_OP_CPU) {
            p->ops[i].a.cpu_ns = (uint64_t)llround((double)p->ops[i].a.cpu_ns * f);
            p->ops[i].recorded_ns = (uint64_t)llround((double)p->ops[i].recorded_ns * f);
            n++;
        }
    char *eq = argc == 5 ? strchr(argv[4], '=') : NULL;
    if (eq) { /* the string table is the plan's own: replace the entry */
        *eq = 0;
        for (uint32_t i = 1; i < p->nstrings; i++)
            if (!strcmp(p->strings[i], argv[4])) {
                free(p->strings[i]);
                p->strings[i] = strdup(eq + 1);
                if (p->string_lens)
                    p->string_lens[i] = (uint32_t)strlen(eq + 1);
            }
    }
    int rc = plan_write(p, argv[2], err, sizeof err);
    if (rc)
        fprintf(stderr, "plan_scale_cpu: %s\n", err);
    else
        printf("%llu CPU ops scaled by %g\n", (unsigned long long)n, f);
    plan_free(p);
    return rc ? 1 : 0;
}
