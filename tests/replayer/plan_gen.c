/* plan_gen.c - writes a replay plan whose file manifest is given on the
 * command line, for the `preplay prepare` tests:
 *   plan_gen OUT RECORDED_PATH:SIZE...
 * (no components or blocks: prepare only reads the manifest). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: plan_gen OUT [RECORDED_PATH:SIZE...]\n");
        return 2;
    }
    char err[512];
    struct plan_writer *w = plan_writer_open(argv[1], "plan-gen-test", NULL, 0, err, sizeof err);
    if (!w) {
        fprintf(stderr, "plan_gen: %s\n", err);
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char *colon = strrchr(argv[i], ':');
        char *end = NULL;
        unsigned long long size = colon ? strtoull(colon + 1, &end, 10) : 0;
        if (!colon || !end || *end || end == colon + 1) {
            fprintf(stderr, "plan_gen: bad file spec '%s' (PATH:SIZE)\n", argv[i]);
            plan_writer_abort(w);
            return 2;
        }
        struct plan_file f = {.path = plan_writer_string(w, argv[i], (size_t)(colon - argv[i])),
                              .initial_size = size};
        if (plan_writer_file(w, &f) == UINT32_MAX) {
            fprintf(stderr, "plan_gen: %s\n", plan_writer_error(w));
            plan_writer_abort(w);
            return 1;
        }
    }
    if (plan_writer_close(w, err, sizeof err)) {
        fprintf(stderr, "plan_gen: %s\n", err);
        return 1;
    }
    return 0;
}
