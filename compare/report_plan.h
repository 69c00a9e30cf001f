/* report_plan.h - what the report says about the plan behind a comparison:
 * how much of the recording the analyzer could explain (coverage, blocks
 * flagged as built by the fallback, interleaving threads), the untraced
 * peers it emulates (external calls by address), the recorded DB endpoints
 * and components, and which inner-tier blocks served which front-end label
 * (so an inner tier's time can be attributed to the front-end requests it
 * served). Built from a plan that is already in memory; never reads files,
 * never prints. */
#ifndef PREPLAY_REPORT_PLAN_H
#define PREPLAY_REPORT_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct plan;

/* Kinds of recorded op time, in compare_resource's order: CPU, file,
 * network (request/response transfer and untraced peers), lock, DB. */
#define REPORT_PLAN_NKINDS 5

struct report_plan_component {
    char *name, *host;
    uint32_t workers;
    int frontend;
};

struct report_plan_external {
    char *address; /* "addr:port" of the untraced peer */
    uint64_t calls;
    double recorded_s; /* total recorded duration of those calls */
};

/* Blocks of one inner component with one block label that served requests
 * of one front-end label (directly or through other inner tiers). */
struct report_plan_tier {
    size_t label;       /* front-end label index (the recording's) */
    uint32_t component; /* index into components */
    char *inner_label;  /* the inner blocks' label as the plan has it ("" possible) */
    uint64_t blocks;
    double recorded_s[REPORT_PLAN_NKINDS]; /* their ops' recorded time by kind */
};

struct report_plan_facts {
    double coverage;
    uint64_t unmatched_bytes;
    uint32_t nviolations;
    char *violations_text;
    uint64_t nblocks, nflagged; /* flagged: PLAN_BLOCK_VIOLATION */
    struct report_plan_component *components;
    size_t ncomponents;
    struct report_plan_external *external;
    size_t nexternal;
    char **db_endpoints;
    size_t ndb_endpoints;
    struct report_plan_tier *tiers;
    size_t ntiers;
    size_t nlabels;
    double *call_s;  /* [nlabels * ncomponents]: recorded time the front end's blocks of each
                      * label spent calling each component directly */
    double *front_s; /* [nlabels * REPORT_PLAN_NKINDS]: the front-end blocks' own ops */
};

/* label_index maps a string id to the front-end label index (or
 * (size_t)-1) for the plan's requests. 0, or -1 when out of memory
 * (f is then freed). */
int report_plan_facts_build(const struct plan *p, const size_t *label_index, size_t nlabels,
                            struct report_plan_facts *f);
void report_plan_facts_free(struct report_plan_facts *f);

#endif
