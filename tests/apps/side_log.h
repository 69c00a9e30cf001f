/* side_log.h - the sample application's own record of the requests it served
 * (the "truth" the analyzer's blocks are compared with). Format in README.md.
 *
 * Lines are buffered per worker slot in memory and written when a slot's buffer
 * passes 1 MiB and at side_log_close(), so the log's own file writes stay out of
 * the request blocks a tracer records. side_log_record() must never take a lock
 * shared between workers (that would add lock events to every request). */
#ifndef SIDE_LOG_H
#define SIDE_LOG_H

#include <stddef.h>
#include <stdint.h>

#define SIDE_LOG_MAX_NESTED 8

struct side_log;

struct side_log_entry {
    uint64_t id;        /* request id (assigned by the front end) */
    uint64_t parent_id; /* front-end request that caused this one, 0 for none */
    const char *label;  /* "GET /cpu", "lookup", ... */
    uint64_t start_ns;  /* CLOCK_MONOTONIC: first byte of the request received */
    uint64_t end_ns;    /* CLOCK_MONOTONIC: just before the write of the response */
    unsigned nested_count;
    uint64_t nested_ids[SIDE_LOG_MAX_NESTED];
};

/* Opens (appending) path for tier with one buffer per slot. NULL on error with a
 * one-line reason in err. */
struct side_log *side_log_open(const char *path, const char *tier, unsigned slots, char *err,
                               size_t err_cap);

/* Records one served request; slot is the calling worker's index (< slots). Only
 * one thread may use a slot at a time. */
void side_log_record(struct side_log *log, unsigned slot, const struct side_log_entry *entry);

/* Writes every buffered line, closes and frees. Returns 0, or -1 if any write
 * failed (lines that could not be written are counted on stderr). */
int side_log_close(struct side_log *log);

#endif
