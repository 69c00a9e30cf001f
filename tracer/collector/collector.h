/* collector.h - the process that owns the shared memory traced processes
 * write into, drains it and writes one trace file per process. Used by
 * `preplay record` (in the recording process itself) and `preplay collect`
 * (standalone, for apps started by a service manager). */
#ifndef PREPLAY_COLLECTOR_H
#define PREPLAY_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

struct trace_cpu_score;
struct label_rules;

/* `record`'s defaults for the DB endpoints whose wire protocol is parsed. */
#define COLLECTOR_DEFAULT_DB_PORT 3306
#define COLLECTOR_DEFAULT_DB_SOCKET "mysqld.sock"

struct collector_options {
    const char *out_dir; /* created if missing (mode 0700) */
    const char *name;    /* abstract socket name; processes get PREPLAY_COLLECTOR=name */
    uint32_t only_mask;  /* TRACER_ONLY_* */
    int drop_when_full;  /* --drop */
    int keep_query;      /* --keep-query */
    int no_lock_folding; /* --no-lock-folding: every lock operation is recorded */
    /* --label rules (labels/label_rules.h), NULL or empty for none; must
     * outlive the collector. With rules the processes keep the query string
     * and the collector gives each label string its rule's NAME, or drops
     * the query itself unless keep_query. */
    const struct label_rules *label_rules;
    int start_disabled;   /* tracing starts switched off */
    uint32_t stack_depth; /* --stacks N */
    uint64_t max_bytes;   /* --max-size, per trace file; 0 = unbounded */
    int ring_clock;       /* --ring-clock: enum cpuclock_tsc_policy (cpuclock_loader.h) */
    /* --cpu-clock: enum tracer_cpu_clock (shm_layout.h; 0 = gap, the
     * default) and the gap clock's threshold (0: TRACER_CPU_GAP_DEFAULT_NS) */
    uint32_t cpu_clock;
    uint32_t cpu_gap_ns;
    uint16_t db_ports[8];
    uint32_t ndb_ports;
    const char *db_socket_suffix;
    /* --db-max-statement: bytes of DB statement text and parameters kept
     * whole (0: TRACER_DB_STATEMENT_DEFAULT) */
    uint32_t db_max_statement;
    const char *path_prefix; /* only files under this path */
    uint16_t net_ports[16];  /* --port: only connections with one of these ports */
    uint32_t nnet_ports;
    /* CPU benchmark scores of this machine (cpu/cpu_kernels.h), copied
     * into every trace header; the array must outlive the collector. */
    const struct trace_cpu_score *cpu_scores;
    uint32_t ncpu_scores;
    /* Who may register (docs/preplay-record.md, "Who may connect"): root,
     * the collector's own user, the uids here (--allow-uid), and with
     * accept_descendants any process descending from the collector's (the
     * command `record` runs, whatever user it becomes). */
    uint32_t allow_uids[16];
    uint32_t nallow_uids;
    int accept_descendants;
    /* --window: seconds per counter window written to DIR/machine-PID.counters
     * (collector_counters.h); 0: none */
    double window_s;
};

struct collector_stats {
    uint64_t events;    /* events written */
    uint64_t lost;      /* events lost (drop mode, no free ring) */
    uint64_t bytes;     /* bytes written: on disk for closed traces */
    uint32_t processes; /* processes seen */
    uint32_t live;      /* processes still running */
    /* processes that gave up waiting for the collector's answer to their
     * registration (the collector was stopped or busy for seconds): they
     * ran untraced, their trace files hold no events */
    uint32_t untraced;
    /* process images that could not map their region (its 1 GiB of address
     * space, even a smaller prefix: RLIMIT_AS?) and ran untraced, and those
     * that mapped fewer thread rings; the trace of the first of each */
    uint32_t unmapped, fewer_rings;
    char unmapped_trace[256], fewer_rings_trace[256];
    /* recalibrations that found the TSC clock of the traces more than
     * CPUCLOCK_TSC_STEP_NS off CLOCK_MONOTONIC (a paused VM, a clock step),
     * and the largest offset found: event times near them are off by it */
    uint32_t clock_corrections;
    uint64_t clock_worst_offset_ns;
    uint64_t folded_holds; /* lock holds counted instead of recorded (lock folding) */
    /* registrations refused: the peer's uid (SO_PEERCRED) is not allowed;
     * the last such uid */
    uint32_t refused;
    uint32_t refused_uid;
};

struct collector;

struct collector *collector_create(const struct collector_options *opt, char *err, size_t errlen);
/* One round: accept registrations, drain rings, notice exits. Waits at most
 * timeout_ms for something to do. Returns 0, or -1 on a fatal write error
 * (reason in collector_error). */
int collector_poll(struct collector *c, int timeout_ms);
void collector_set_enabled(struct collector *c, int enabled);
int collector_enabled(const struct collector *c);
void collector_stats(const struct collector *c, struct collector_stats *out);
const char *collector_error(const struct collector *c);
/* NULL when threads get the CPU clock asked for (--cpu-clock); else why
 * the BPF clock asked for is not there and they use the gap clock (e.g.
 * "BPF unavailable: Operation not permitted"). */
const char *collector_cpu_clock_note(const struct collector *c);
/* NULL when traced apps time their records with the TSC (calibrated and
 * trusted by the kernel, in the BPF table or the collector's clock page);
 * else why they use clock_gettime. */
const char *collector_tsc_note(const struct collector *c);
/* The longest nap when a full ring cannot wake the collector (no waker). */
#define COLLECTOR_UNWATCHED_NAP_MS 2
/* NULL when a full ring wakes the collector at once; else why it cannot
 * (e.g. a kernel without futex_waitv) and it drains on a short timer. */
const char *collector_waker_note(const struct collector *c);
/* Stops tracing in every process, drains what is left, closes every trace
 * file; collector_stats then counts their final sizes. Returns 0 or -1
 * (reason in err). */
int collector_close_all(struct collector *c, char *err, size_t errlen);
/* collector_close_all (for what is still open), then frees c. Returns 0 or
 * -1 (reason in err). */
int collector_finish(struct collector *c, char *err, size_t errlen);

#endif
