/* deps_input.h - the analyzer's input: every trace file of one or more
 * recording directories, read in parallel and merged into one stream in
 * (approximate) global time order, with a bounded reordering window per
 * file. It must never hold more than the window's worth of events.
 *
 * Order: within a file, each thread's events are in order but threads
 * interleave by collector drain round, and an event is committed at its
 * END (a blocking recv that began 2 s ago appears in the file now). So
 * the merge key is the end time (ts + dur; for CPU events, which the
 * collector stamps with the end of the previous event, ts), made
 * monotone per thread; each thread (and the file's connection
 * definitions) is a FIFO, and a heap over FIFO heads pops the smallest key
 * once every file has been read far enough past it (or to its end): four
 * times the worst disorder seen in that file so far, at least 20 ms, at
 * most `window_ns`. Events that arrive later than that are still
 * processed (counted as late; CPU events, which ride with their thread,
 * and LOSS records, keyed by the start of what they cover, are not).
 *
 * Before the merge, hosts are pre-aligned from connection handshakes seen
 * on both sides (see deps_input_presync), and the common timeline starts at
 * the earliest host, so no host's early events map below 0. */
#ifndef PREPLAY_DEPS_INPUT_H
#define PREPLAY_DEPS_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "deps_map.h"
#include "mem_budget.h"
#include "trace_file.h"

/* The most the analyzer's tables may hold together: its event queues and
 * state per thread, per open connection, per descriptor, file and lock
 * (issue 24 item 1). They grow with the distinct tids, connections,
 * descriptors, inodes and locks a trace names, and a trace naming 2
 * million tids (4 MB compressed) made analyze hold 8.8 GB. Real
 * recordings hold a few MB here (a thread costs about 4.5 KB, an open
 * connection 0.5 KB: 240000 threads or 2 million open connections fit).
 * Beyond, analyze fails with one line naming the file, the table and
 * this limit. */
#define DEPS_MAX_TABLE_BYTES (1ull << 30)
/* What one entry of a deps_map costs, with the map's slack (it doubles at
 * 3/4 full: up to 8/3 slots per entry). */
#define DEPS_MAP_ENTRY_BYTES (3 * sizeof(struct deps_map_slot))

struct deps_queued {
    uint64_t key; /* merge key on the common timeline */
    struct trace_event ev;
};

struct deps_fifo {
    struct deps_queued *q;
    uint32_t cap, head, n; /* ring buffer */
    uint64_t last_key;
    uint64_t id; /* tid + 1; 0: the file's connection definitions */
    uint32_t file;
};

struct deps_heap_entry {
    uint64_t key; /* the FIFO's head key */
    struct deps_fifo *q;
};

struct deps_input_file {
    char *path;
    struct trace_reader *reader;
    const struct trace_header *hdr;
    uint32_t host; /* index into deps_input.hosts */
    int eof;
    uint64_t first_key;    /* key of the first event read (0: none yet) */
    uint64_t max_key;      /* largest key read so far */
    uint64_t max_lag;      /* largest max_key - key of an event read (its disorder) */
    uint64_t bytes;        /* file size */
    struct deps_map fifos; /* tid -> fifo; key 0 = definitions */
    struct deps_fifo **all;
    uint32_t nall;
    size_t capall;
};

struct deps_input_host {
    char *name;
    int64_t offset_ns;      /* added to a ts to get the common timeline */
    int64_t anchor_ns;      /* realtime - monotonic at record time */
    int64_t corrected_ns;   /* skew corrections applied so far (sum) */
    uint32_t presync_pairs; /* connections that aligned this host before the merge (0 = none) */
    uint32_t presync_ref;   /* ... against this host */
};

struct deps_input {
    struct deps_input_file *files;
    uint32_t nfiles;
    struct deps_input_host *hosts;
    uint32_t nhosts;
    struct deps_heap_entry *heap; /* FIFOs with events, by head key */
    uint32_t nheap;
    size_t capheap;
    uint64_t window_ns;
    uint64_t events; /* popped */
    uint64_t late;   /* popped with a key below an earlier popped key (CPU, LOSS aside) */
    /* Events that ended more than DEPS_BACKWARDS_NS before an earlier event
     * of their thread (the recording's clock went backwards: a thread's
     * events end in order otherwise); their keys were raised to it. */
    uint64_t backwards;
    uint64_t backwards_worst_ns;
    uint32_t backwards_file, backwards_tid; /* where the worst one was */
    uint64_t last_key;
    /* every file not at its end was read at least its window past this key
     * (deps_input_fill_others) */
    uint64_t all_read_until;
    /* --salvage: trace files of a directory that could not be opened
     * (unreadable header: empty, not a trace, unknown major version), each
     * "FILE: why", skipped so the valid ones are analyzed */
    char **skipped;
    uint32_t nskipped;
    /* what the analyzer's tables hold (DEPS_MAX_TABLE_BYTES), charged by
     * deps_input_charge */
    struct mem_budget tables;
    char err[1024];
};

/* A thread's event ending this much before an earlier one of the same
 * thread is counted in `backwards` (less is a signal handler's call that
 * ended after the call it interrupted, or rounding). */
#define DEPS_BACKWARDS_NS 1000000u

/* Opens every *.trace file in each input (a directory, or a trace file)
 * and checks that files of one directory share a recording id. 0 or -1
 * with a one-line reason in in->err (also for an input without traces).
 * With salvage, a directory's file that cannot be opened is skipped and
 * listed in in->skipped (a directory with none left is an error). The
 * analyzer's tables may hold max_table_bytes (0: DEPS_MAX_TABLE_BYTES). */
int deps_input_open(struct deps_input *in, const char *const *inputs, int ninputs, int salvage,
                    uint64_t window_ns, uint64_t max_table_bytes);
/* Charges bytes for a new entry of one of the analyzer's tables (table:
 * "thread", "connection", ...; entries: how many it holds with this one;
 * key: what the entry is for, as "tid 12"): 0, or -1 with "FILE: KEY: the
 * TABLE table (N entries) would pass the analyzer's limit of X bytes" in
 * in->err. */
int deps_input_charge(struct deps_input *in, uint32_t file, const char *table, uint64_t entries,
                      const char *key, uint64_t bytes);
/* Next event in merge order: 1 (*file, *ev set; valid until the next call),
 * 0 at the end, -1 on damage (in->err). */
int deps_input_next(struct deps_input *in, uint32_t *file, struct deps_queued **ev);
/* Common-timeline time of a raw ts of file f. */
uint64_t deps_input_common(const struct deps_input *in, uint32_t f, uint64_t ts);
/* Skew correction: subtract delta_ns from host h's clock from now on. */
void deps_input_correct_host(struct deps_input *in, uint32_t h, int64_t delta_ns);
/* Bytes of all files, and bytes consumed so far (approximation for progress). */
uint64_t deps_input_total_bytes(const struct deps_input *in);
void deps_input_close(struct deps_input *in);

#endif
