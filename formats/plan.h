/* plan.h - the replay plan: what `preplay analyze` writes and `preplay
 * replay/drive/run` read. The contract between the analyzer and the
 * replayer; the byte layout is specified in PLAN.md.
 *
 * A plan says, per component (tier), how many workers it had and which
 * event blocks it serves; each block is the ordered list of operations one
 * worker performed for one request (CPU, file, lock, DB, nested calls to
 * other components' blocks, external calls, and the request/response bytes
 * send by send). The schedule lists the front-end requests as they arrived.
 * Everything is referenced by dense ids (index into the owning array).
 *
 * In memory a plan is plain arrays owned by struct plan; plan_free releases
 * them. Strings (paths, SQL, labels, hosts) live in one string table and
 * are referenced by id; id 0 is the empty string. */
#ifndef PREPLAY_PLAN_H
#define PREPLAY_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "trace_file.h" /* struct trace_cpu_score */

#define PLAN_FORMAT_MAJOR 1
/* 1.1: blocks carry worker and start_ns; 1.2: event loops; 1.3: DB ops may
 * carry PLAN_DB_CUT; 1.4: RECV ops may carry PLAN_RECV_FULL; 1.5: blocks
 * carry tail_ns; 1.6: DB ops may carry PLAN_DB_BLOCKING; 1.7: DB ops may
 * carry PLAN_DB_POSTGRESQL */
#define PLAN_FORMAT_MINOR 7

/* Limits (PLAN.md §6.1), in one place: the writer refuses and the reader
 * calls damage any count, size, index or time beyond them, naming the
 * field and its limit ("workers 1000000 exceeds the limit 4096"), so a
 * replayer may size threads, buffers and memory by a plan it read.
 * Counts are of the whole plan; per-block counts are of one block. */
#define PLAN_MAX_WORKERS 4096u                 /* component.workers (as replay --workers) */
#define PLAN_MAX_WORKER_INDEX ((1u << 20) - 1) /* block.worker */
#define PLAN_MAX_DB_CONNS (1u << 24)           /* component.db_conns */
#define PLAN_MAX_COMPONENTS 4096u
#define PLAN_MAX_STRINGS (1u << 24) /* including string 0 */
#define PLAN_MAX_STRING_BYTES (16u << 20)
#define PLAN_MAX_FILES (1u << 20)
#define PLAN_MAX_LOCKS (1u << 20)
#define PLAN_MAX_DB_ENDPOINTS 4096u
#define PLAN_MAX_BLOCKS (1u << 26)
#define PLAN_MAX_BLOCK_OPS (1u << 20)
#define PLAN_MAX_BLOCK_SEGMENTS (1u << 20)
#define PLAN_MAX_OPS (1u << 28)
#define PLAN_MAX_SEGMENTS (1u << 28)
#define PLAN_MAX_REQUESTS (1u << 26)
#define PLAN_MAX_FILE_BYTES (1ull << 40)        /* file initial_size; FILE op offset and end */
#define PLAN_MAX_IO_BYTES (1ull << 31)          /* one FILE read/write (the replayer's buffer) */
#define PLAN_MAX_NET_BYTES (1ull << 40)         /* RECV/SEND bytes, EXTERNAL sent/received */
#define PLAN_MAX_NS (7ull * 86400 * 1000000000) /* every duration and time offset: 7 days */

enum plan_op_kind {
    PLAN_OP_CPU = 1,      /* burn a.cpu_ns of CPU (scaled by the CPU ratio at replay) */
    PLAN_OP_FILE = 2,     /* file operation on a.file */
    PLAN_OP_LOCK = 3,     /* lock operation on a.lock */
    PLAN_OP_DB = 4,       /* SQL on a DB connection */
    PLAN_OP_CALL = 5,     /* nested request to another component's block */
    PLAN_OP_EXTERNAL = 6, /* call to an untraced peer, emulated by its duration */
    PLAN_OP_RECV = 7,     /* receive a.net.bytes of this block's request */
    PLAN_OP_SEND = 8,     /* send a.net.bytes of this block's response */
    PLAN_OP_SOCKOPT = 9,  /* set an option on the request's connection */
};

enum plan_file_op {
    PLAN_FILE_READ = 1,
    PLAN_FILE_WRITE,
    PLAN_FILE_FSYNC,
    PLAN_FILE_FDATASYNC,
    PLAN_FILE_OPEN,
    PLAN_FILE_CLOSE,
    PLAN_FILE_TRUNCATE
};
enum plan_lock_op { PLAN_LOCK_ACQUIRE = 1, PLAN_LOCK_RELEASE, PLAN_LOCK_TRY };
enum plan_lock_mode { PLAN_LOCK_EXCLUSIVE = 1, PLAN_LOCK_SHARED };
enum plan_db_op { PLAN_DB_QUERY = 1, PLAN_DB_PREPARE, PLAN_DB_EXECUTE };

/* One message segment of a nested call: a send or a receive of `bytes`,
 * as the caller performed it (the sequence reproduces Nagle/delayed-ACK
 * behaviour; flags carry MSG_MORE). */
struct plan_segment {
    uint8_t dir; /* 0 = caller sends (request), 1 = caller receives (response) */
    uint8_t flags;
    uint32_t bytes;
};
#define PLAN_SEG_MORE 0x01

/* plan_op.flags, per kind: SEND ops carry PLAN_SEG_MORE (MSG_MORE); CALL ops
 * carry PLAN_CALL_NODELAY (the caller's connection had TCP_NODELAY set when
 * it made the call, so the replayer uses a pooled connection with Nagle
 * off). Other bits are 0 in 1.x. */
#define PLAN_CALL_NODELAY 0x0001
/* DB ops (1.3): the recorded statement was cut at the recording's
 * --db-max-statement (trace flag TRACE_F_CUT): `sql` / `params` hold a
 * prefix, so the replayer never sends it as SQL; it waits recorded_ns
 * instead and counts it (`db_cut`). */
#define PLAN_DB_CUT 0x0001
/* RECV ops (1.4): the receive returned every byte it asked for (result ==
 * requested size), so the sender's bytes may have been there already and
 * no sender's segment boundary is known after it. The driver, which plays
 * the untraced client, sends such a segment and the next RECV's as one
 * write (split, its second half would wait out Nagle and the replayer's
 * delayed ACK: 40 ms the recording did not have). */
#define PLAN_RECV_FULL 0x0001
/* DB ops (1.6): the statement was a call into the client library (trace
 * source CAPI): its thread sat in it until the answer, so an event loop
 * making it served nobody else meanwhile (thin running Rails, whose mysql2
 * queries block the reactor); the replayer keeps such a loop held through
 * it. Without it (a wire-parsed statement: the thread may have gone on, as
 * node's mysqljs does) a loop is released while the statement waits. */
#define PLAN_DB_BLOCKING 0x0002
/* DB ops (1.7): the statement is PostgreSQL's (trace dialect
 * TRACE_DB_POSTGRESQL; without the bit, MySQL's): replayed only through a
 * postgresql:// --db, and its `params` bind the $n placeholders. */
#define PLAN_DB_POSTGRESQL 0x0004

struct plan_op {
    uint8_t kind;         /* enum plan_op_kind */
    uint8_t op;           /* per kind: plan_file_op, plan_lock_op, plan_db_op */
    uint16_t flags;       /* per kind, see PLAN_CALL_NODELAY */
    uint64_t recorded_ns; /* duration this operation took when recorded */
    union {
        uint64_t cpu_ns;
        struct {
            uint32_t file; /* index into plan.files */
            int64_t offset;
            uint64_t size;
        } file;
        struct {
            uint32_t lock; /* index into plan.locks */
            uint8_t mode;  /* plan_lock_mode */
        } lock;
        struct {
            uint32_t conn;   /* DB connection index within the component */
            uint32_t sql;    /* string id */
            uint32_t params; /* string id (rendered parameters) or 0 */
            uint64_t rows;
            int32_t error; /* recorded server error (0 = success) */
        } db;
        struct {
            uint32_t callee_block;  /* index into plan.blocks */
            uint32_t first_segment; /* into plan.segments */
            uint32_t nsegments;
        } call;
        struct {
            uint32_t host; /* string id "addr:port" of the untraced peer */
            uint64_t sent, received;
        } external;
        struct {
            uint64_t bytes;
        } net;
        struct {
            int32_t level, name;
            int64_t value;
        } sockopt;
    } a;
};

#define PLAN_BLOCK_VIOLATION 0x0001 /* built by the fallback for an interleaving thread */

struct plan_block {
    uint32_t component;      /* index into plan.components */
    uint32_t label;          /* string id ("GET /cart") or 0 */
    uint32_t first_op, nops; /* into plan.ops */
    uint32_t flags;
    uint64_t recorded_ns; /* response time of this block when recorded */
    /* Since 1.1 (a 1.0 plan reads as worker 0, start_ns 0 for every block;
     * check version_minor >= 1 before relying on them): */
    uint32_t worker;   /* the recorded worker that served it: dense index, within
                        * its component, of the thread (or process, prefork) */
    uint64_t start_ns; /* recorded start, offset from the first request (the
                        * same origin as plan_request.arrival_ns) */
    /* Since 1.5 (0 in older plans): recorded time of the post-response
     * tail, from the end of the response's last send to the end of the
     * block's last op (its ops after the last SEND op), which the replayer
     * runs after answering; not part of recorded_ns */
    uint64_t tail_ns;
};

struct plan_component {
    uint32_t name;        /* string id, e.g. "frontend" */
    uint32_t host;        /* string id of the recorded host */
    uint32_t workers;     /* worker threads (or processes for prefork servers) seen */
    uint32_t db_conns;    /* DB connections the component used */
    uint16_t listen_port; /* port it served on when recorded (informative) */
    uint8_t prefork;      /* workers are processes */
    uint8_t is_frontend;
    uint8_t event_loop; /* (1.2) each worker is an event loop serving many connections */
};

struct plan_file {
    uint32_t path; /* string id of the recorded path (informative) */
    uint64_t initial_size;
};

struct plan_lock {
    uint8_t kind; /* trace_lock_kind */
    uint64_t recorded_id;
};

struct plan_db_endpoint {
    uint32_t address; /* string id, e.g. "127.0.0.1:3306" or a socket path */
};

struct plan_request {
    uint64_t arrival_ns; /* offset from the first request */
    uint32_t block;      /* front-end block */
    uint32_t label;      /* string id */
    uint32_t session;    /* session id (0 = none) */
    uint32_t connection; /* client connection it came on (keep-alive grouping) */
    uint64_t think_ns;   /* think time before it within its session */
};

struct plan {
    uint16_t version_major, version_minor;
    char recording_id[40];
    uint32_t ncpu_scores;
    struct trace_cpu_score cpu_scores[TRACE_MAX_CPU_SCORES];

    char **strings; /* strings[0] == ""; each NUL-terminated */
    uint32_t nstrings;
    uint32_t *string_lens; /* byte length of each string (they may hold NUL bytes);
                            * may be NULL in a hand-built plan (then strlen) */
    struct plan_component *components;
    uint32_t ncomponents;
    struct plan_file *files;
    uint32_t nfiles;
    struct plan_lock *locks;
    uint32_t nlocks;
    struct plan_db_endpoint *db_endpoints;
    uint32_t ndb_endpoints;
    struct plan_block *blocks;
    uint32_t nblocks;
    struct plan_op *ops;
    uint64_t nops;
    struct plan_segment *segments;
    uint64_t nsegments;
    struct plan_request *requests;
    uint64_t nrequests;

    /* analysis summary, for `preplay info PLAN` */
    double coverage;          /* non-CPU events of serving threads within their
                               * requests that belong to a block
                               * (docs/preplay-analyze.md) */
    uint64_t unmatched_bytes; /* network bytes not matched to a peer */
    uint32_t nviolations;     /* threads that interleaved connections */
    uint32_t violations_text; /* string id: human-readable violation report */
    uint64_t skipped_records; /* records of types this reader does not know (newer minor) */
};

/* Streaming writer: the analyzer emits definitions and blocks as it
 * finishes them, so its memory does not grow with the trace. Every id a
 * record refers to must have been added before (a block's callee blocks
 * finish before the caller's block does). Ids are dense, from 0 (strings
 * from 1; 0 is ""). The file appears atomically at plan_writer_close
 * (temp file + rename). Functions return the new id, or UINT32_MAX /
 * -1 on error (reason via plan_writer_error; the writer is then unusable). */
struct plan_writer;
struct plan_writer *plan_writer_open(const char *path, const char *recording_id,
                                     const struct trace_cpu_score *scores, uint32_t nscores,
                                     char *err, size_t errlen);
uint32_t plan_writer_string(struct plan_writer *w, const char *s, size_t len); /* deduplicated */
uint32_t plan_writer_component(struct plan_writer *w, const struct plan_component *c);
uint32_t plan_writer_file(struct plan_writer *w, const struct plan_file *f);
uint32_t plan_writer_lock(struct plan_writer *w, const struct plan_lock *l);
uint32_t plan_writer_db_endpoint(struct plan_writer *w, const struct plan_db_endpoint *e);
/* A block with its ops; CALL ops' segments are given in `segs` (their
 * first_segment fields index into segs, the writer renumbers them). */
uint32_t plan_writer_block(struct plan_writer *w, const struct plan_block *b,
                           const struct plan_op *ops, const struct plan_segment *segs,
                           uint32_t nsegs);
int plan_writer_request(struct plan_writer *w, const struct plan_request *r);
/* Component fields learned late (worker counts) may be updated until close. */
int plan_writer_update_component(struct plan_writer *w, uint32_t id,
                                 const struct plan_component *c);
int plan_writer_summary(struct plan_writer *w, double coverage, uint64_t unmatched_bytes,
                        uint32_t nviolations, const char *violations_text);
const char *plan_writer_error(const struct plan_writer *w);
/* Uncompressed bytes per zstd frame (default 256 KiB; 64 B .. 64 MiB). A
 * record bigger than this gets a frame of its own. */
int plan_writer_set_frame_bytes(struct plan_writer *w, size_t bytes);
/* Finishes and renames into place; on error removes the temp file. Frees w. */
int plan_writer_close(struct plan_writer *w, char *err, size_t errlen);
/* Drops the partial plan (error path). Frees w. */
void plan_writer_abort(struct plan_writer *w);

/* Writes a whole in-memory plan (tests, tools): built on the writer. */
int plan_write(const struct plan *p, const char *path, char *err, size_t errlen);
/* Reads a plan. NULL + reason naming file and offset on damage, wrong
 * magic or an unknown major version. */
struct plan *plan_read(const char *path, char *err, size_t errlen);
/* plan_read taking at most max_bytes for the plan's arrays and strings:
 * beyond, NULL and "the plan needs more memory than the N MB available"
 * naming the record (a plan of 150 KB can decode to gigabytes within
 * every PLAN_MAX_* limit). plan_read passes mem_budget_available()
 * (mem_budget.h). */
struct plan *plan_read_within(const char *path, uint64_t max_bytes, char *err, size_t errlen);
void plan_free(struct plan *p);
/* 1 when path starts like a plan file (its magic), 0 when not, -1 when it
 * cannot be read (errno set). Reads 16 bytes; validates nothing else. */
int plan_file_probe(const char *path);
/* The string with this id, or NULL when id >= nstrings. */
const char *plan_string(const struct plan *p, uint32_t id);

#endif
