/* deps_state.h - the analyzer's shared state (internal to analyzer/): the
 * connection ends, blocks, calls, threads and components that the files of
 * dependency extraction (deps_end.c, deps_call.c, deps_block.c, deps_on.c,
 * driven by deps_analyze.c) hand to each other, and the few helpers all of
 * them use (deps_state.c). The public face is preplay_analyze.h; nothing
 * outside analyzer/ (and its unit tests) may include this header. */
#ifndef PREPLAY_DEPS_STATE_H
#define PREPLAY_DEPS_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "deps_input.h"
#include "deps_map.h"
#include "plan.h"
#include "preplay_analyze.h"

#define DEPS_CHECKPOINT_EVENTS 65536u
#define DEPS_BLOCK_POOL 256u /* recycled blocks kept (with their arrays) */
/* A request's arrival is at most this long before the receive that read it
 * (the kernel's queued_us, capped): the schedule is flushed only this far
 * behind the events, so a request read late still goes in order. */
#define DEPS_QUEUED_MAX_NS 10000000000ull
/* Linux socket option numbers as the tracer records them (SOCKOPT events
 * carry the raw level/name; these are fixed by the Linux ABI). */
#define TRACE_IPPROTO_TCP 6
#define TRACE_TCP_NODELAY 1
#define TRACE_TCP_CORK 3

enum deps_peer { DEPS_PEER_UNKNOWN = 0, DEPS_PEER_TRACED, DEPS_PEER_UNTRACED };
enum deps_call_state {
    DEPS_CALL_OPEN = 0,
    DEPS_CALL_WAIT_PEER,
    DEPS_CALL_WAIT_CALLEE,
    DEPS_CALL_DONE
};

struct deps_block;
struct deps_thread;

struct deps_served { /* a finished block served on an end, waiting for a decision */
    struct deps_served *next;
    uint64_t gid, in_off;    /* rendezvous key */
    uint32_t block;          /* plan block id */
    uint64_t start_c, end_c; /* common timeline */
    uint64_t start_raw;
    uint32_t label, connection;
    uint64_t think_ns;
    uint64_t bytes;
    uint32_t component;
};

struct deps_end {
    struct deps_end *prev, *next; /* live list */
    uint64_t gid;
    uint32_t file;
    uint64_t conn_id;
    uint8_t proto, family, accepted, is_db, closed, has_ident;
    /* the trace holds its connect(): the tracer saw the first bytes its
     * server sent, and would have made it a DB connection had they been a
     * MySQL/MariaDB greeting (tracer/preload/db_greeting.c) */
    uint8_t connected;
    /* the server shut down its sending side after answering (SHUT_WR):
     * what it reads from then on drains the request, none can follow */
    uint8_t shut_wr;
    uint8_t local_addr[16], remote_addr[16];
    uint16_t local_port, remote_port;
    uint64_t unix_inode, unix_peer_inode;
    uint64_t index_key; /* key in the pairing index, 0 = not indexed */
    /* AF_UNIX: key under which the end that this one names as its peer
     * finds it (deps_end_identify), 0 = none */
    uint64_t named_peer_key;
    int peer; /* enum deps_peer */
    uint64_t peer_gid;
    uint64_t deadline; /* common time after which an unknown peer is untraced */
    uint64_t in_off, out_off;
    struct deps_block *cur; /* open server block */
    uint32_t pending_label;
    uint32_t connection; /* front-end connection number, 0 = none yet */
    /* end of the last response bytes sent on this (server) end, as they
     * are sent: a block starting here takes its think time from it */
    uint64_t last_resp_end;
    struct deps_served *served; /* finished blocks awaiting the peer decision */
    struct deps_served *served_last;
    struct deps_waiter *waiters; /* calls of finished blocks waiting for the peer decision */
    uint64_t served_min_c;       /* earliest start_c in served (the schedule's horizon) */
    uint32_t db_index;           /* +1; 0 = none */
    uint32_t external_host;      /* plan string id of the address (untraced peer), 0 = not yet */
    int refs;
    /* a client end: the served connection whose request its thread was
     * serving when it connected (0 = none); an event loop's first call on
     * it is that request's, even when the connect completes later */
    uint64_t opener_conn;
    /* the call currently open on this (client) end */
    struct deps_block *call_block;
    uint32_t call_index;
    /* timing socket options (TCP_NODELAY, TCP_CORK) as last set; *_set = seen */
    uint8_t nodelay_set, cork_set;
    int64_t nodelay, cork;
    /* SOCKOPT events set on this end between requests by thread
     * opts_thread, already serving (inside its coverage window): when that
     * thread serves the end's next block, the block carries them as its
     * leading SOCKOPT ops, so they count as covered there */
    uint32_t opts_between_requests;
    const struct deps_thread *opts_thread;
};

struct deps_call {
    uint32_t op; /* index into the block's ops */
    int state;
    struct deps_end *end;
    uint64_t out_off;
    struct plan_segment *segs;
    uint32_t nsegs, capsegs;
    uint64_t sent, received, t0_raw, t1_raw, t0_c, t1_c;
    uint32_t callee;
};

struct deps_waiter { /* call ci of finished block b waits for its end's peer decision */
    struct deps_waiter *next;
    struct deps_block *b;
    uint32_t ci;
};

struct deps_block {
    uint32_t held_pos; /* +1 in the held heap (finished, unresolved); 0 = not held */
    struct deps_end *end;
    struct deps_thread *th;
    uint32_t label, flags, component;
    uint64_t in_off;
    uint64_t start_raw, start_c, last_send_end_raw, last_send_end_c;
    uint64_t first_recv_end_raw;
    struct plan_op *ops;
    uint32_t nops, capops;
    struct deps_call *calls;
    uint32_t ncalls, capcalls;
    uint32_t nops_at_send, ncalls_at_send;
    uint64_t covered, covered_at_send, bytes, bytes_at_send;
    uint32_t sends;
    uint64_t th_events_at_send; /* the thread's res_events at the last send */
    /* the block finished (its connection closed, reached EOF or shut down)
     * while its thread went on: the thread's events until its next request
     * (accept, a receive on another connection) are its post-response
     * tail, and the block waits as the thread's `tail` until then; what it
     * held then, for a cut at the end of the recording */
    uint32_t nops_at_finish, ncalls_at_finish;
    uint64_t covered_at_finish, th_events_at_finish, finish_c, finish_raw;
    uint64_t tail_ns; /* recorded time from the last send to the tail's end */
    /* the client's think time before this request: its start minus the
     * end of the previous response on its end, taken when it starts (the
     * previous block may be handed over after this one: a callee's
     * post-response tail holds it) */
    uint64_t think_ns;
    int unresolved;
    int finished;
};

struct deps_thread {
    uint32_t file, tid;
    struct deps_end *last_read;
    uint64_t left_gid; /* end whose block this thread finished by switching */
    int serving;
    int violating;
    uint64_t viol_events, viol_blocks;
    uint32_t viol_conns;
    /* event loop (deps_on.c): the thread multiplexes connections, so its
     * events go to the request whose descriptor they touch and the rest to
     * the request it handled last (last_read then names that end, whatever
     * its last event on it was); switches: times it took up another open
     * request; unattributed: its events no request could be named for */
    int event_loop;
    uint64_t loop_switches, loop_unattributed;
    uint64_t blocks;
    /* a finished block whose post-response tail this thread is still doing
     * (deps_block_finish), NULL when none */
    struct deps_block *tail;
    uint64_t last_end_raw; /* end of the thread's last event (raw clock) */
    /* work outside requests (deps_outside.c): events and CPU of this
     * thread in no block since its last block (or, before it served, since
     * the first request), kind decided when the thread serves next or at
     * the end; born_under_load: first seen after the first request;
     * accepting: it accepted a connection since its last block */
    uint64_t out_events, out_cpu_ns;
    /* of those, the ones since the latest block finished anywhere (epoch
     * out_epoch): a thread that never serves did them after the last
     * request if no block finishes after them (shutdown, not background) */
    uint64_t out_recent_events, out_recent_cpu_ns, out_epoch;
    uint64_t covers; /* events of this thread blocks took (deps_block_cover) */
    uint8_t born_under_load, accepting;
    uint32_t worker; /* dense index among its component's serving threads */
    /* coverage window: resource events of this thread, counted; the window
     * runs from its first request's first receive to its last block's end */
    uint64_t res_events, win_first, win_end;
};

struct deps_component {
    char name[64];
    uint32_t host;
    uint32_t plan_id;
    struct plan_component pc;
    uint32_t serving_threads, serving_procs;
    uint32_t max_threads_per_proc;
    uint32_t loop_threads; /* serving threads that were event loops */
};

struct deps_pending_opt { /* options set on a socket before its CONN event */
    uint64_t ts_ns;
    uint8_t nodelay_set, cork_set;
    int64_t nodelay, cork;
};

struct deps_proc {
    uint32_t component;
    struct deps_map threads;      /* tid -> thread */
    struct deps_map ends;         /* conn_id -> end */
    struct deps_map pending_opts; /* fd + 1 -> struct deps_pending_opt */
    /* fd + 1 -> conn_id (as pointer) of the request whose thread was
     * serving it when the file was opened: an event loop's reads of that
     * file belong to that request (deps_on.c) */
    struct deps_map file_owner;
    struct deps_thread **all;
    uint32_t nall, capall;
    uint32_t serving_threads;
    struct deps_thread *last_thread; /* threads' events come in runs */
    uint64_t lost;                   /* LOSS counts of its trace */
};

struct deps_file_rec {
    uint64_t initial_size;
    uint32_t plan_id; /* +1, 0 = not yet in the plan */
};

struct deps_sched {
    uint64_t arrival_c;
    struct plan_request r;
};

struct deps_skew {
    uint32_t caller_host, callee_host;
    int64_t max_lo, min_hi;
    uint64_t pairs;
    int64_t applied;
};

/* The calls that became EXTERNAL ops to one peer address, for the warning
 * that names them. */
struct deps_external_peer {
    uint64_t calls;
    char host[96];
    /* calls to it as an untraced peer went over a stream connection the
     * trace does not hold from its connect() on (made before the trace
     * began): the tracer could not tell a DB server by its greeting there */
    uint8_t unsure;
};

struct deps_state {
    struct deps_input in;
    struct plan_writer *w;
    const struct analyze_options *opt;
    struct analyze_result *res;
    struct deps_proc *procs;
    struct deps_component *comps;
    uint32_t ncomps;
    struct deps_map index;        /* pairing: tuple key -> end */
    struct deps_map rendezvous;   /* (callee gid, offset) -> served or waiting call */
    struct deps_map waiting;      /* (callee gid, offset) -> block (call waiting) */
    struct deps_map files;        /* (host, dev, ino) -> file rec */
    struct deps_map locks;        /* key -> plan id + 1 (as pointer) */
    struct deps_map strings;      /* (file, string id) -> plan id (as pointer) */
    struct deps_map db_endpoints; /* address hash -> plan id + 1 */
    struct deps_map label_text;   /* plan string id -> text (labels only) */
    struct deps_map label_ids; /* (file, string id) -> plan id, labels under --label/--drop-query */
    struct deps_end live;      /* list head */
    struct deps_block **held;  /* finished blocks with unresolved calls, min-heap by start */
    uint32_t nheld, capheld;
    struct deps_block *pool[DEPS_BLOCK_POOL];
    uint32_t npool;
    uint64_t next_gid;
    uint64_t now_c;
    struct deps_sched *sched;
    size_t nsched, capsched;
    int have_origin;
    uint64_t origin_c; /* first request's start: origin of arrival_ns and start_ns */
    uint32_t next_connection;
    struct deps_skew *skews;
    uint32_t nskews;
    FILE *blocks_out;
    uint64_t untraced_calls;
    struct deps_map external_peers; /* address text hash -> struct deps_external_peer */
    /* LOSS events of the recording: how many events, in how many files, and
     * the file and reason of the largest */
    uint64_t finish_epoch; /* blocks finished so far (deps_outside.c) */
    uint64_t lost, lost_worst;
    uint32_t lost_files, lost_worst_file, lost_worst_reason;
    char err[1024];
    int failed;
};

/* A new state for one run (the live list empty, everything else zero); NULL
 * when out of memory. */
struct deps_state *deps_state_new(const struct analyze_options *opt, struct analyze_result *res);
/* Frees everything the state still holds (held, open and pooled blocks,
 * ends, threads, maps, the input); a plan still open is aborted. */
void deps_state_free(struct deps_state *s);
/* Records the first failure (printf-style one line); later ones are dropped. */
void deps_state_fail(struct deps_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Charges a new table entry to the analyzer's tables (deps_input_charge):
 * 0, or -1 and the state has failed, naming the file, key, table and
 * limit. deps_state_uncharge gives an entry's bytes back when it is freed. */
int deps_state_charge(struct deps_state *s, uint32_t file, const char *table, uint64_t entries,
                      const char *key, uint64_t bytes);
void deps_state_uncharge(struct deps_state *s, uint64_t bytes);
/* Doubles an array's capacity (8 at first); NULL when out of memory (the
 * state has failed, p is untouched). */
void *deps_state_grow(struct deps_state *s, void *p, uint32_t *cap, size_t elem);
/* The plan string id of str (0 on failure: the state has failed). */
uint32_t deps_state_literal(struct deps_state *s, const char *str);
/* Offset of a common-timeline time from the plan's origin (PLAN.md §5.3). */
uint64_t deps_state_since_origin(const struct deps_state *s, uint64_t t_c);

#endif
