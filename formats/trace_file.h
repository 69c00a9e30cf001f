/* trace_file.h - writing and streaming-reading preplay trace files (one
 * file per traced process; the byte layout is specified in FORMAT.md).
 *
 * The writer is used by the collector: it encodes trace_event records
 * compactly and compresses them into independently decodable zstd frames
 * with content checksums. The reader never holds more than one frame in
 * memory and reports damage precisely (file, frame offset, record index). */
#ifndef PREPLAY_TRACE_FILE_H
#define PREPLAY_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_event.h"

/* 2.0: a record may carry the CPU slice before it (TRACE_F_AFTER_CPU);
 * readers still read 1.x, whose records never do. 2.1: lock kind
 * TRACE_LOCK_SEMAPHORE, FILE ops FALLOCATE, SYNC_RANGE, SYNCFS (a 2.0
 * reader keeps them as numbers). 2.2: DB flag TRACE_F_CUT and DB fields
 * query_len, params_len (a 2.1 reader skips the fields). 2.3: DB field
 * dialect (MySQL or PostgreSQL; a 2.2 reader skips it, and reads every
 * DB event as MySQL's). 2.4: CONTROL op LOCKS_FOLDED (a 2.3 reader keeps
 * it as a number). 2.5: record type COUNTERS, the counter windows of a
 * recording's .counters file (a 2.4 reader skips the records). 2.6:
 * cpu_score entries burn-chain and cpu-id. 2.7: NET field queued_us (a
 * 2.6 reader skips it). */
#define TRACE_FORMAT_MAJOR 2
#define TRACE_FORMAT_MINOR 7
#define TRACE_FORMAT_MAJOR_OLDEST 1
#define TRACE_MAX_CPU_SCORES 16

/* Limits (FORMAT.md §7), in one place: the writer refuses and the reader
 * calls damage a STRING or STACK beyond them, and the reader refuses a
 * file whose string table would grow past them, naming the field and the
 * limit. Frames (≤ 64 MiB raw) and the header (≤ 16 MiB) have theirs in
 * trace_codec.h. */
#define TRACE_MAX_STRING_BYTES (16u << 20)        /* one STRING's len */
#define TRACE_MAX_STACK_FRAMES 4096u              /* one STACK's nframes */
#define TRACE_MAX_STRINGS (1u << 26)              /* distinct string ids per file */
#define TRACE_MAX_STRING_TABLE_BYTES (4ull << 30) /* their bytes, per file */
#define TRACE_MAX_COUNTERS 4096u                  /* one COUNTERS record's nvalues */
#define TRACE_MAX_COUNTER_NAME 255u               /* bytes of one counter's name */

/* One counter of a COUNTERS record (FORMAT.md §9): name_len bytes of name
 * (not NUL-terminated), value NAN (not measured) or finite >= 0. */
struct trace_counter {
    const char *name;
    uint32_t name_len;
    double value;
};
/* Encodes n counters as a COUNTERS record's payload into out (cap bytes):
 * the bytes written, 0 when a name is empty or longer than
 * TRACE_MAX_COUNTER_NAME, a value is negative or infinite, n exceeds
 * TRACE_MAX_COUNTERS, or out is too small. */
size_t trace_counters_encode(const struct trace_counter *c, size_t n, uint8_t *out, size_t cap);
/* The entries of a COUNTERS event the reader delivered (already checked)
 * into out (room for ev->u.counters.nvalues): their number. Names point
 * into the event's data (valid until the next trace_reader_next). */
size_t trace_counters_decode(const struct trace_event *ev, struct trace_counter *out);

struct trace_cpu_score {
    char name[24];  /* benchmark kernel name, e.g. "zstd-compress" */
    double seconds; /* single-thread time of the kernel at record time */
};

struct trace_header {
    uint16_t version_major, version_minor; /* filled by the writer / reader */
    char host[256];
    char component[64];    /* e.g. "frontend"; empty when not given */
    char recording_id[40]; /* shared by every file of one `preplay record` run */
    char tracer_version[32];
    char exe[4096];
    char *argv_joined; /* argv, each argument NUL-terminated, argv_len bytes */
    uint32_t argv_len;
    uint32_t pid, ppid;
    uint64_t mono_anchor_ns; /* CLOCK_MONOTONIC and CLOCK_REALTIME read together */
    uint64_t real_anchor_ns;
    uint32_t ncpu_scores;
    struct trace_cpu_score cpu_scores[TRACE_MAX_CPU_SCORES];
    /* 1.1: the recording's options that decide what was traced, as
     * `record` options ("--only net,cpu --port 80"); empty: the defaults,
     * or a 1.0 file */
    char record_options[512];
};

struct trace_writer_options {
    int compression_level; /* zstd level; 0 = default (3) */
    size_t frame_bytes;    /* uncompressed bytes per frame; 0 = default */
    uint64_t max_bytes;    /* 0 = unbounded; else keep the file within this many
                            * bytes by dropping the oldest frames (marked) */
};

struct trace_writer;

/* Creates `path` with mode 0600 and writes the header. On failure returns
 * NULL and puts a one-line reason in err. */
struct trace_writer *trace_writer_open(const char *path, const struct trace_header *hdr,
                                       const struct trace_writer_options *opt, char *err,
                                       size_t errlen);
/* Appends one event (strings/stacks: ev->data is copied). 0 or -1 (err kept). */
int trace_writer_append(struct trace_writer *w, const struct trace_event *ev);
/* Appends cpu, a CPU event, then ev, the next event of the same thread.
 * When cpu is a plain slice that ends where ev starts and begins where the
 * thread's previous record in the frame ended, the two take one record
 * (TRACE_F_AFTER_CPU, FORMAT.md §6.4); readers deliver both either way.
 * 0 or -1 (err kept). */
int trace_writer_append_after_cpu(struct trace_writer *w, const struct trace_event *cpu,
                                  const struct trace_event *ev);
/* Ends the current frame and writes it, so everything appended is on disk. */
int trace_writer_flush(struct trace_writer *w);
/* Flushes, closes, frees. Returns 0 or -1; the reason via trace_writer_error
 * before close, or in err when non-NULL. */
int trace_writer_close(struct trace_writer *w, char *err, size_t errlen);
const char *trace_writer_error(const struct trace_writer *w);
/* Bytes written so far (compressed, including header). */
uint64_t trace_writer_bytes(const struct trace_writer *w);

struct trace_reader;

struct trace_reader_options {
    int salvage; /* keep everything valid before damage instead of failing */
    /* the most the string table and frame buffers may take (mem_budget.h):
     * 0 = a live budget shared by the process's open readers (FORMAT.md
     * §7). Beyond, the STRING (or frame) is damage: "frame at offset O:
     * record N: STRING id I: the string table (S strings, B bytes) needs
     * more memory than the M MB available" (the limits above allow ~7 GB) */
    uint64_t max_bytes;
};

/* Opens a trace and reads its header. NULL + one-line reason on failure
 * (unknown major version, bad magic, truncated header...). */
struct trace_reader *trace_reader_open(const char *path, const struct trace_reader_options *opt,
                                       char *err, size_t errlen);
const struct trace_header *trace_reader_header(const struct trace_reader *r);
/* Next event: 1 = got one, 0 = clean end, -1 = damage (see trace_reader_error;
 * with salvage, damage ends the stream with 0 after recording the reason in
 * trace_reader_warning). Event strings stay valid until the next call. */
int trace_reader_next(struct trace_reader *r, struct trace_event *ev);
const char *trace_reader_error(const struct trace_reader *r);
const char *trace_reader_warning(const struct trace_reader *r); /* NULL if none */
/* Looks up an interned string seen so far in this file (NULL if unknown).
 * The bytes are NUL-terminated after *len; the pointer stays valid until the
 * next trace_reader_next. The table keeps every distinct string of the file
 * (memory: total string bytes + ~40 bytes per id; see FORMAT.md §7). */
const char *trace_reader_string(const struct trace_reader *r, uint32_t id, uint32_t *len);
/* Records of types this reader does not know (a later minor version) that
 * were skipped so far. */
uint64_t trace_reader_skipped(const struct trace_reader *r);
/* Size of the trace file in bytes. */
uint64_t trace_reader_file_bytes(const struct trace_reader *r);
void trace_reader_close(struct trace_reader *r);

#endif
