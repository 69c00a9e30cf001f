/* regress_rules_dump.c - test helper: reads a level table from stdin
 * ("NWINDOWS NCOUNTERS" then the levels row by row, -1 missing), mines it
 * with regress_apriori at the support, confidence and length given on
 * the command line, and prints one rule per line, "premise items ->
 * consequent support confidence" with items as COUNTER=LEVEL, for
 * test_apriori_oracle.py to check against its own brute force. */
#include <stdio.h>
#include <stdlib.h>

#include "regress.h"

int main(int argc, char **argv)
{
    size_t nw, nc;
    if (argc != 4 || scanf("%zu %zu", &nw, &nc) != 2)
        return 2;
    struct regress_levels lv = {.nwindows = nw, .ncounters = nc};
    lv.level = malloc((nw * nc + 1) * sizeof *lv.level);
    for (size_t i = 0; lv.level && i < nw * nc; i++)
        if (scanf("%d", &lv.level[i]) != 1)
            return 2;
    struct regress_rule *r;
    size_t n;
    char err[REGRESS_ERR_LEN];
    if (!lv.level || regress_apriori(&lv, atof(argv[1]), atof(argv[2]), atoi(argv[3]), 10000000, &r,
                                     &n, err, sizeof err)) {
        fprintf(stderr, "%s\n", lv.level ? err : "out of memory");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < r[i].npremise; p++)
            printf("%d=%d ", r[i].premise[p].counter, r[i].premise[p].level);
        printf("-> %d=%d %.12f %.12f\n", r[i].consequent.counter, r[i].consequent.level,
               r[i].support, r[i].confidence);
    }
    regress_rules_free(r, n);
    free(lv.level);
    return 0;
}
