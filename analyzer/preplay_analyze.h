/* preplay_analyze.h - dependency extraction (CloudProphet §3.2): turns the
 * trace files of a recording (one or more directories, one per tier or
 * host) into a replay plan (formats/plan.h). Streaming: memory grows with
 * open connections and in-flight blocks, never with trace length. The
 * algorithm and its limits are described in docs/preplay-analyze.md. */
#ifndef PREPLAY_ANALYZE_H
#define PREPLAY_ANALYZE_H

#include <stdint.h>
#include <stdio.h>

struct label_rules;

struct analyze_options {
    int salvage;             /* analyze what is valid in damaged traces */
    uint64_t window_ns;      /* per-file reordering window, the most (0 = 200 ms) */
    uint64_t grace_ns;       /* time to wait for a connection's peer end (0 = 2 s) */
    const char *blocks_path; /* optional TSV of blocks and requests (tests, debugging) */
    FILE *progress;          /* progress line target (a terminal) or NULL */
    FILE *warnings;          /* one-line warnings (violations, skew, untraced peers) or NULL */
    /* --label rules (labels/label_rules.h) applied to the labels as recorded,
     * NULL for none; --drop-query: cut unmatched labels at their '?' */
    const struct label_rules *label_rules;
    int drop_query;
    /* the most its tables of threads, connections, descriptors, files and
     * locks may hold (0 = DEPS_MAX_TABLE_BYTES, 1 GiB; tests set less) */
    uint64_t max_table_bytes;
};

/* Work of the traced threads that belongs to no request (docs/preplay-analyze.md,
 * "Work outside requests"), by where the thread was when it did it. */
enum analyze_outside_kind {
    ANALYZE_OUT_POST = 0,   /* a serving thread after a block, before its next accept/request */
    ANALYZE_OUT_ACCEPT,     /* a serving thread between its accept and the request's first read */
    ANALYZE_OUT_IDLE,       /* a worker started before the first request, before its first */
    ANALYZE_OUT_SPAWN,      /* a worker started under load (fork, exec), before its first */
    ANALYZE_OUT_BACKGROUND, /* threads that never served, from the first request on */
    ANALYZE_OUT_UNNAMED,    /* a thread in a request, an event no block took (a loop's
                             * bytes on an upstream with no call open) */
    ANALYZE_OUT_STARTUP,    /* anything before the first request (not counted as outside) */
    ANALYZE_OUT_SHUTDOWN,   /* a serving thread after its last block (not counted either) */
    ANALYZE_OUT_KINDS
};

struct analyze_outside {
    uint64_t events[ANALYZE_OUT_KINDS]; /* resource events (as coverage counts them) */
    uint64_t cpu_ns[ANALYZE_OUT_KINDS]; /* recorded CPU time */
};

struct analyze_result {
    uint64_t events;          /* events read (without strings/stacks) */
    uint64_t resource_events; /* FILE, NET, LOCK, DB, SOCKOPT events */
    uint64_t covered_events;  /* of those, belonging to a written block */
    uint64_t window_events;   /* of those, on serving threads between their first
                               * request and their last block's end */
    double coverage;          /* covered / window (docs/preplay-analyze.md) */
    double coverage_all;      /* covered / all resource events */
    uint64_t blocks, requests, calls, externals, db_ops;
    uint64_t db_cut; /* DB ops recorded cut (PLAN_DB_CUT): replayed as waits */
    uint64_t unmatched_bytes;
    uint32_t violations;     /* threads that interleaved connections */
    uint64_t late_events;    /* arrived after the reordering window */
    uint64_t dropped_blocks; /* requests without a response */
    uint64_t lost_events;    /* LOSS counts of the recording (docs/preplay-analyze.md) */
    uint64_t in_cpu_ns;      /* recorded CPU time inside written blocks */
    /* of the blocks' events and CPU, the post-response tails' (after the
     * response's last send; replayed after the response) */
    uint64_t tail_events, tail_cpu_ns;
    struct analyze_outside outside;
};

/* Returns 0, or -1 with a one-line reason in err (the plan is not written). */
int analyze_run(const char *const *inputs, int ninputs, const char *plan_path,
                const struct analyze_options *opt, struct analyze_result *res, char *err,
                size_t errlen);

/* The work outside requests as one line ("outside requests: X ms CPU (Y%)
 * in N events (Z%): post-response ..."), into buf (docs/preplay-analyze.md). */
void analyze_outside_format(const struct analyze_result *r, char *buf, size_t cap);

#endif
