/* replay_exec.c - replays one event block, op by op, on the calling worker
 * thread (CloudProphet §3.1): CPU as a burn of the recorded CPU time times
 * the CPU ratio; file ops on the dummy files at the recorded offsets and
 * sizes with descriptors cached per thread; lock ops on a table of pthread
 * rwlocks in the recorded modes; DB queries on the thread's connection;
 * nested calls over pooled peer connections; external calls as a sleep of
 * their recorded duration; the request and response bytes as recorded.
 * A block is a resumable run (replay_block_begin/step/end): a worker runs
 * it to the end; an event loop (replay_loop.c) runs it up to an op it must
 * not sit through and resumes it when that is over. Never prints and never
 * stops on a failed op: it counts it. */
#include "replay_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dummy_files.h"
#include "grow_array.h"
#include "out_file.h"
#include "replay_proto.h"

const char *const replay_kind_names[REPLAY_NKINDS] = {"cpu",  "file",     "lock", "db",
                                                      "call", "external", "net"};

replay_cpu_burn_fn replay_cpu_burn = replay_cpu_burn_fallback;

static uint64_t replay_now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins on the thread CPU clock (a syscall here, ~0.4 us, so the clock is
 * read every ~2 us of spinning): waiting for the CPU does not count. */
void replay_cpu_burn_fallback(uint64_t ns)
{
    uint64_t end = replay_now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    volatile uint64_t sink = 0;
    while (replay_now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 2000; i++)
            sink += (uint64_t)i;
    (void)sink;
}

struct replay_lock_slot {
    pthread_rwlock_t rw;
};

struct replay_db_error {
    _Atomic uint64_t count;
    int code; /* first error seen for this query */
    char message[160];
};

struct replay_engine {
    struct replay_config cfg;
    const struct plan *plan;
    struct replay_lock_slot *locks;
    struct replay_db_pool *db;
    struct dummy_files *files; /* paths of the dummy files (preplay prepare) */
    struct replay_peers *peers;
    /* labels: dense index per label string id seen on this component's blocks */
    uint32_t *label_of_string; /* nstrings entries, UINT32_MAX = none */
    uint32_t *label_strings;   /* nlabels string ids */
    uint32_t nlabels;
    _Atomic uint64_t *label_ns; /* nlabels * REPLAY_NKINDS */
    _Atomic uint64_t *label_blocks;
    struct replay_db_error *db_errors; /* per SQL string id */
    pthread_mutex_t db_errors_mu;
    _Atomic uint64_t blocks, db_queries, db_unavailable, call_errors, file_errors;
    _Atomic uint64_t db_cut; /* statements recorded cut: waited, not sent */
    _Atomic uint64_t lock_try_failed, locks_left_held, lock_bad_release;
    /* an event loop's acquire found its lock held: not waited for (the
     * holder may be a request of the same loop, which only it can run) */
    _Atomic uint64_t lock_loop_busy;
    /* blocks started and not yet counted: a block's last send reaches the
     * driver before the block is counted, so STATS waits for these */
    _Atomic uint64_t in_flight;
    /* bumped by replay_engine_restore_files: threads reopen their cached
     * descriptors, so position-relative ops start from offset 0 again */
    _Atomic uint32_t files_generation;
};

struct replay_thread {
    struct replay_engine *e;
    /* cached descriptor + 1 per plan file, 0 = not open (replay_table:
     * a plan's 2^20 files cost a worker only the pages it touches) */
    int *fds;
    uint32_t *opened; /* the files with a cached descriptor, to close them */
    uint32_t nopened;
    size_t opened_cap;
    uint32_t files_generation; /* of the engine when fds were opened */
    void *db;
    uint8_t *held; /* per lock: 0, 1 = write, 2 = read */
    uint32_t *held_list;
    uint32_t nheld;
    char *buf;
    size_t buflen;
};

static void replay_file_close_all(struct replay_thread *t);

static size_t replay_alloc_count(uint64_t n)
{
    return n ? (size_t)n : 1;
}

struct replay_engine *replay_engine_new(const struct replay_config *cfg, char *err, size_t errlen)
{
    const struct plan *p = cfg->plan;
    if (cfg->component >= p->ncomponents) {
        snprintf(err, errlen, "component index %u out of range (plan has %u)", cfg->component,
                 p->ncomponents);
        return NULL;
    }
    struct replay_engine *e = calloc(1, sizeof *e);
    if (!e)
        goto oom;
    e->cfg = *cfg;
    e->plan = p;
    if (!(e->cfg.cpu_ratio > 0))
        e->cfg.cpu_ratio = 1.0;
    if (e->cfg.io_timeout_s <= 0)
        e->cfg.io_timeout_s = 60;
    if (!(e->cfg.no_deps_hold_s > 0))
        e->cfg.no_deps_hold_s = 5;
    pthread_mutex_init(&e->db_errors_mu, NULL);
    e->locks = calloc(replay_alloc_count(p->nlocks), sizeof *e->locks);
    e->label_of_string = malloc(replay_alloc_count(p->nstrings) * sizeof *e->label_of_string);
    e->db_errors = calloc(replay_alloc_count(p->nstrings), sizeof *e->db_errors);
    if (!e->locks || !e->label_of_string || !e->db_errors)
        goto oom;
    for (uint32_t i = 0; i < p->nlocks; i++)
        pthread_rwlock_init(&e->locks[i].rw, NULL);
    for (uint32_t i = 0; i < p->nstrings; i++)
        e->label_of_string[i] = UINT32_MAX;
    for (uint32_t b = 0; b < p->nblocks; b++) {
        uint32_t s = p->blocks[b].label;
        if (s < p->nstrings && e->label_of_string[s] == UINT32_MAX)
            e->label_of_string[s] = e->nlabels++;
    }
    e->label_strings = malloc(replay_alloc_count(e->nlabels) * sizeof *e->label_strings);
    e->label_ns =
        calloc(replay_alloc_count((uint64_t)e->nlabels * REPLAY_NKINDS), sizeof(uint64_t));
    e->label_blocks = calloc(replay_alloc_count(e->nlabels), sizeof(uint64_t));
    if (!e->label_strings || !e->label_ns || !e->label_blocks)
        goto oom;
    for (uint32_t i = 0; i < p->nstrings; i++)
        if (e->label_of_string[i] != UINT32_MAX)
            e->label_strings[e->label_of_string[i]] = i;
    if (p->nfiles) {
        e->files = dummy_files_open_plan(cfg->dir ? cfg->dir : ".", p, err, errlen);
        /* the files are (re)written at their plan sizes before each interval */
        if (!e->files || dummy_files_check_space(e->files, err, errlen)) {
            replay_engine_free(e);
            return NULL;
        }
    }
    if (cfg->db_url && cfg->db_url[0]) {
        e->db = replay_db_pool_new(cfg->db_url, cfg->db_password, err, errlen);
        if (!e->db) {
            replay_engine_free(e);
            return NULL;
        }
    }
    e->peers = replay_peers_new(cfg->peers_path, cfg->token, cfg->pool, e->cfg.io_timeout_s);
    if (!e->peers)
        goto oom;
    return e;
oom:
    snprintf(err, errlen, "out of memory setting up the replay engine");
    replay_engine_free(e);
    return NULL;
}

void replay_engine_free(struct replay_engine *e)
{
    if (!e)
        return;
    if (e->locks)
        for (uint32_t i = 0; i < e->plan->nlocks; i++)
            pthread_rwlock_destroy(&e->locks[i].rw);
    free(e->locks);
    free(e->label_of_string);
    free(e->label_strings);
    free(e->label_ns);
    free(e->label_blocks);
    free(e->db_errors);
    pthread_mutex_destroy(&e->db_errors_mu);
    replay_db_pool_free(e->db);
    dummy_files_close(e->files);
    replay_peers_free(e->peers);
    free(e);
}

const struct replay_config *replay_engine_config(const struct replay_engine *e)
{
    return &e->cfg;
}

/* A worker's zeroed table of n entries (files, locks): mapped, not
 * allocated, when large, so only the pages a worker touches are resident.
 * calloc clears what a thread's malloc arena reuses: 4096 workers of a
 * plan with 2^20 files (within every plan.h limit) held 1.2 GB that way,
 * and 16 GB when the table was filled with -1. */
#define REPLAY_TABLE_MAPPED ((size_t)64 << 10)

static void *replay_table_new(uint64_t n, size_t size)
{
    size_t bytes = replay_alloc_count(n) * size;
    if (bytes < REPLAY_TABLE_MAPPED)
        return calloc(1, bytes);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void replay_table_free(void *table, uint64_t n, size_t size)
{
    size_t bytes = replay_alloc_count(n) * size;
    if (!table)
        return;
    if (bytes < REPLAY_TABLE_MAPPED)
        free(table);
    else
        munmap(table, bytes);
}

struct replay_thread *replay_thread_new(struct replay_engine *e)
{
    struct replay_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->e = e;
    t->fds = replay_table_new(e->plan->nfiles, sizeof *t->fds);
    t->held = replay_table_new(e->plan->nlocks, 1);
    t->held_list = replay_table_new(e->plan->nlocks, sizeof *t->held_list);
    if (!t->fds || !t->held || !t->held_list) {
        replay_thread_free(t);
        return NULL;
    }
    return t;
}

void replay_thread_free(struct replay_thread *t)
{
    if (!t)
        return;
    if (t->fds)
        replay_file_close_all(t);
    if (t->db)
        replay_db_release(t->e->db, t->db);
    const struct plan *p = t->e->plan;
    replay_table_free(t->fds, p->nfiles, sizeof *t->fds);
    free(t->opened);
    replay_table_free(t->held, p->nlocks, 1);
    replay_table_free(t->held_list, p->nlocks, sizeof *t->held_list);
    free(t->buf);
    free(t);
}

void replay_block_bytes(const struct plan *p, uint32_t block, uint64_t *request_bytes,
                        uint64_t *response_bytes)
{
    uint64_t rq = 0, rs = 0;
    const struct plan_block *b = &p->blocks[block];
    for (uint32_t i = 0; i < b->nops; i++) {
        const struct plan_op *op = &p->ops[b->first_op + i];
        if (op->kind == PLAN_OP_RECV)
            rq += op->a.net.bytes;
        else if (op->kind == PLAN_OP_SEND)
            rs += op->a.net.bytes;
    }
    *request_bytes = rq;
    *response_bytes = rs;
}

/* ---- files -------------------------------------------------------------- */

static void replay_file_close_all(struct replay_thread *t)
{
    for (uint32_t i = 0; i < t->nopened; i++) {
        close(t->fds[t->opened[i]] - 1);
        t->fds[t->opened[i]] = 0;
    }
    t->nopened = 0;
}

static int replay_file_fd(struct replay_thread *t, uint32_t file)
{
    uint32_t gen = atomic_load_explicit(&t->e->files_generation, memory_order_acquire);
    if (gen != t->files_generation) {
        replay_file_close_all(t);
        t->files_generation = gen;
    }
    if (t->fds[file] > 0)
        return t->fds[file] - 1;
    if (grow_array((void **)&t->opened, &t->opened_cap, (size_t)t->nopened + 1, sizeof *t->opened,
                   16) != 0)
        return -1;
    const char *path = dummy_files_path(t->e->files, file);
    /* never through a symlink or hard link planted among the dummy files */
    char err[512];
    int fd = path ? out_file_open(path, O_RDWR, 0644, err, sizeof err) : -1;
    if (fd >= 0) {
        t->fds[file] = fd + 1;
        t->opened[t->nopened++] = file;
    }
    return fd;
}

/* The most a worker buffers for one FILE read or write (replay_file_rw). */
#define REPLAY_IO_CHUNK ((uint64_t)1 << 20)

static int replay_buffer(struct replay_thread *t, uint64_t size)
{
    if (size <= t->buflen)
        return 0;
    char *nb = realloc(t->buf, (size_t)size);
    if (!nb)
        return -1;
    /* written data: bytes that do not compress (storage sees real blocks) */
    uint64_t x = 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)nb;
    for (size_t i = t->buflen; i < size; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        nb[i] = (char)x;
    }
    t->buf = nb;
    t->buflen = (size_t)size;
    return 0;
}

/* One FILE read or write of `size` bytes at `off` (< 0: at the file
 * position), through a buffer of at most REPLAY_IO_CHUNK: a plan may ask
 * for 2 GiB per op (PLAN_MAX_IO_BYTES) and every worker keeps its buffer,
 * so whole-op buffers would hold workers x 2 GiB. The bytes done, or -1
 * when the first call fails; stops at end of file or a short transfer. */
static ssize_t replay_file_rw(struct replay_thread *t, int fd, int write_op, int64_t off,
                              uint64_t size)
{
    if (replay_buffer(t, size < REPLAY_IO_CHUNK ? size : REPLAY_IO_CHUNK))
        return -1;
    uint64_t done = 0;
    while (done < size) {
        size_t len = (size_t)(size - done < t->buflen ? size - done : t->buflen);
        ssize_t n;
        if (write_op)
            n = off >= 0 ? pwrite(fd, t->buf, len, off + (off_t)done) : write(fd, t->buf, len);
        else
            n = off >= 0 ? pread(fd, t->buf, len, off + (off_t)done) : read(fd, t->buf, len);
        if (n < 0)
            return done ? (ssize_t)done : -1;
        done += (uint64_t)n;
        if ((size_t)n < len)
            break;
    }
    return (ssize_t)done;
}

static void replay_file_op(struct replay_thread *t, const struct plan_op *op)
{
    struct replay_engine *e = t->e;
    uint32_t file = op->a.file.file;
    if (file >= e->plan->nfiles) {
        atomic_fetch_add(&e->file_errors, 1);
        return;
    }
    int fd = replay_file_fd(t, file);
    if (fd < 0) {
        atomic_fetch_add(&e->file_errors, 1);
        return;
    }
    uint64_t size = op->a.file.size;
    int64_t off = op->a.file.offset;
    ssize_t n = 0;
    switch (op->op) {
    case PLAN_FILE_READ:
    case PLAN_FILE_WRITE:
        n = replay_file_rw(t, fd, op->op == PLAN_FILE_WRITE, off, size);
        if (n > 0 && op->op == PLAN_FILE_WRITE) { /* the next interval restores only this range */
            off_t at = off >= 0 ? (off_t)off : lseek(fd, 0, SEEK_CUR) - (off_t)n;
            if (at >= 0)
                dummy_files_note_write(e->files, file, (uint64_t)at, (uint64_t)n);
        }
        break;
    case PLAN_FILE_FSYNC:
        n = fsync(fd);
        break;
    case PLAN_FILE_FDATASYNC:
        n = fdatasync(fd);
        break;
    case PLAN_FILE_TRUNCATE:
        n = ftruncate(fd, (off_t)size);
        break;
    case PLAN_FILE_OPEN:
    case PLAN_FILE_CLOSE: /* descriptors are cached per thread (CloudProphet §3.1.2) */
        break;
    default:
        n = -1;
    }
    if (n < 0)
        atomic_fetch_add(&e->file_errors, 1);
}

/* ---- locks -------------------------------------------------------------- */

static void replay_lock_forget(struct replay_thread *t, uint32_t lock)
{
    t->held[lock] = 0;
    for (uint32_t i = 0; i < t->nheld; i++)
        if (t->held_list[i] == lock) {
            t->held_list[i] = t->held_list[--t->nheld];
            break;
        }
}

static void replay_lock_op(struct replay_thread *t, const struct plan_op *op, int loop)
{
    struct replay_engine *e = t->e;
    uint32_t lock = op->a.lock.lock;
    if (lock >= e->plan->nlocks) {
        atomic_fetch_add(&e->lock_bad_release, 1);
        return;
    }
    pthread_rwlock_t *rw = &e->locks[lock].rw;
    int shared = op->a.lock.mode == PLAN_LOCK_SHARED;
    switch (op->op) {
    case PLAN_LOCK_ACQUIRE:
    case PLAN_LOCK_TRY:
        if (t->held[lock]) { /* recursive acquire: the recorded lock allowed it */
            atomic_fetch_add(&e->lock_bad_release, 1);
            return;
        }
        if (op->op == PLAN_LOCK_ACQUIRE && loop) {
            if (shared ? pthread_rwlock_tryrdlock(rw) : pthread_rwlock_trywrlock(rw)) {
                atomic_fetch_add(&e->lock_loop_busy, 1);
                return;
            }
        } else if (op->op == PLAN_LOCK_ACQUIRE) {
            if (shared ? pthread_rwlock_rdlock(rw) : pthread_rwlock_wrlock(rw))
                return;
        } else if (shared ? pthread_rwlock_tryrdlock(rw) : pthread_rwlock_trywrlock(rw)) {
            atomic_fetch_add(&e->lock_try_failed, 1);
            return;
        }
        t->held[lock] = shared ? 2 : 1;
        t->held_list[t->nheld++] = lock;
        break;
    case PLAN_LOCK_RELEASE:
        if (!t->held[lock]) { /* a failed try, or acquired outside the block */
            atomic_fetch_add(&e->lock_bad_release, 1);
            return;
        }
        pthread_rwlock_unlock(rw);
        replay_lock_forget(t, lock);
        break;
    }
}

/* A block that ends holding locks would block every later block: release. */
static void replay_lock_release_all(struct replay_thread *t)
{
    while (t->nheld) {
        uint32_t lock = t->held_list[t->nheld - 1];
        pthread_rwlock_unlock(&t->e->locks[lock].rw);
        replay_lock_forget(t, lock);
        atomic_fetch_add(&t->e->locks_left_held, 1);
    }
}

/* ---- DB ----------------------------------------------------------------- */

static void replay_db_count_error(struct replay_engine *e, uint32_t sql, int code, const char *msg)
{
    struct replay_db_error *de = &e->db_errors[sql < e->plan->nstrings ? sql : 0];
    if (atomic_fetch_add(&de->count, 1) == 0) {
        pthread_mutex_lock(&e->db_errors_mu);
        de->code = code;
        snprintf(de->message, sizeof de->message, "%s", msg);
        pthread_mutex_unlock(&e->db_errors_mu);
    }
}

static void replay_sleep_ns(uint64_t ns);

static void replay_db_op(struct replay_thread *t, const struct plan_op *op)
{
    struct replay_engine *e = t->e;
    char err[256];
    if (op->flags & PLAN_DB_CUT) {
        /* the recorded text is a prefix: sent, it would fail as broken SQL
         * and cost less than the real statement; its recorded time instead */
        atomic_fetch_add(&e->db_cut, 1);
        replay_sleep_ns(op->recorded_ns);
        return;
    }
    if (!e->db) {
        atomic_fetch_add(&e->db_unavailable, 1);
        return;
    }
    if (!t->db && !(t->db = replay_db_acquire(e->db, err, sizeof err))) {
        replay_db_count_error(e, op->a.db.sql, -1, err);
        return;
    }
    atomic_fetch_add(&e->db_queries, 1);
    int rc = replay_db_run(e->db, t->db, op, e->plan, err, sizeof err);
    if (rc)
        replay_db_count_error(e, op->a.db.sql, rc, err);
}

/* ---- the block ---------------------------------------------------------- */

static void replay_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* Stages of a run (struct replay_block_run.stage). */
enum { RUN_TAKE_FIRST, RUN_OPS, RUN_TAKE_REST, RUN_SEND_REST, RUN_OVER };

int replay_block_begin(struct replay_thread *t, struct replay_block_run *r, uint32_t block, int fd,
                       uint64_t request_bytes, uint64_t preread, uint64_t response_bytes, char *err,
                       size_t errlen)
{
    const struct plan *p = t->e->plan;
    if (block >= p->nblocks) {
        snprintf(err, errlen, "block %u out of range (plan has %u)", block, p->nblocks);
        return -1;
    }
    const struct plan_block *b = &p->blocks[block];
    memset(r, 0, sizeof *r);
    r->block = block;
    r->fd = fd;
    r->req_left = request_bytes;
    r->resp_left = response_bytes;
    r->pre = fd < 0 ? 0 : preread < request_bytes ? preread : request_bytes;
    r->last_send = UINT32_MAX;
    for (uint32_t i = 0; i < b->nops; i++) {
        uint8_t k = p->ops[b->first_op + i].kind;
        if (k == PLAN_OP_SEND)
            r->last_send = i;
        r->nrecv += k == PLAN_OP_RECV;
    }
    atomic_fetch_add(&t->e->in_flight, 1);
    r->t0 = replay_now_ns(CLOCK_MONOTONIC);
    return 0;
}

/* Sets up taking n request bytes: first those read with the header. */
static void replay_run_take(struct replay_block_run *r, uint64_t n)
{
    uint64_t had = n < r->pre ? n : r->pre;
    r->pre -= had;
    r->xfer_send = 0;
    r->xfer_left = n - had;
}

static void replay_run_send(struct replay_block_run *r, uint64_t n, int flags)
{
    r->xfer_send = 1;
    r->xfer_left = n;
    r->xfer_flags = flags;
}

/* The current op is over: its time goes to `kind`, the next op is due. */
static void replay_run_next(struct replay_block_run *r, int kind)
{
    if (kind >= 0) {
        uint64_t t1 = replay_now_ns(CLOCK_MONOTONIC);
        r->kind_ns[kind] += t1 - r->t0;
        r->t0 = t1;
    }
    r->op++;
    r->phase = 0;
}

/* An op an event loop hands to a helper thread: it waits on something the
 * loop cannot wait for in its epoll set (a DB op recorded as a blocking
 * client-library call is not one: the thread sat in the call until the
 * answer, so the loop does too). Nested calls stay on the loop, which
 * waits for their connections as the recorded loop did. */
static int replay_op_waits(const struct plan_op *op)
{
    uint8_t k = op->kind;
    return k == PLAN_OP_EXTERNAL || (k == PLAN_OP_DB && !(op->flags & PLAN_DB_BLOCKING));
}

/* A nested call on a loop: started, or on from where it waited. */
static enum replay_step replay_run_call(struct replay_thread *t, struct replay_block_run *r,
                                        const struct plan_op *op)
{
    struct replay_engine *e = t->e;
    char cerr[256];
    if (!r->call_open) {
        if (replay_peers_call_begin(e->peers, e->plan, op, &r->call, cerr, sizeof cerr)) {
            atomic_fetch_add(&e->call_errors, 1);
            replay_run_next(r, REPLAY_KIND_CALL);
            return REPLAY_STEP_DONE;
        }
        r->call_open = 1;
    }
    int s = replay_peers_call_step(e->peers, &r->call, 1, cerr, sizeof cerr);
    if (s == 1 || s == 2) {
        r->wait_fd = r->call.fd;
        return s == 1 ? REPLAY_STEP_WANT_READ : REPLAY_STEP_WANT_WRITE;
    }
    replay_peers_call_end(e->peers, &r->call, s == 0);
    r->call_open = 0;
    if (s < 0)
        atomic_fetch_add(&e->call_errors, 1);
    replay_run_next(r, REPLAY_KIND_CALL);
    return REPLAY_STEP_DONE;
}

/* Runs an op that does not touch the request connection; its kind, or -1
 * for an op kind this build does not know (skipped, not timed). */
static int replay_op_run(struct replay_thread *t, const struct plan_op *op, int loop)
{
    struct replay_engine *e = t->e;
    switch (op->kind) {
    case PLAN_OP_CPU:
        replay_cpu_burn((uint64_t)((double)op->a.cpu_ns * e->cfg.cpu_ratio + 0.5));
        return REPLAY_KIND_CPU;
    case PLAN_OP_FILE:
        replay_file_op(t, op);
        return REPLAY_KIND_FILE;
    case PLAN_OP_LOCK:
        replay_lock_op(t, op, loop);
        return REPLAY_KIND_LOCK;
    case PLAN_OP_DB:
        replay_db_op(t, op);
        return REPLAY_KIND_DB;
    case PLAN_OP_CALL: {
        char cerr[256];
        if (replay_peers_call(e->peers, e->plan, op, cerr, sizeof cerr))
            atomic_fetch_add(&e->call_errors, 1);
        return REPLAY_KIND_CALL;
    }
    case PLAN_OP_EXTERNAL:
        replay_sleep_ns(op->recorded_ns);
        return REPLAY_KIND_EXTERNAL;
    default:
        return -1;
    }
}

void replay_block_offloop(struct replay_thread *t, struct replay_block_run *r)
{
    const struct plan *p = t->e->plan;
    const struct plan_op *op = &p->ops[p->blocks[r->block].first_op + r->op];
    replay_run_next(r, replay_op_run(t, op, 0));
}

/* Starts the current op, or finishes it when its transfers are done.
 * DONE: go on; OFFLOOP: a loop hands it off (replay_op_waits); WANT_*: a
 * loop's nested call waits for its connection. */
static enum replay_step replay_run_op(struct replay_thread *t, struct replay_block_run *r, int loop)
{
    const struct plan *p = t->e->plan;
    const struct plan_op *op = &p->ops[p->blocks[r->block].first_op + r->op];
    if (op->kind == PLAN_OP_CALL && loop)
        return replay_run_call(t, r, op);
    if (op->kind == PLAN_OP_RECV) {
        if (r->phase) { /* received */
            replay_run_next(r, REPLAY_KIND_NET);
            return REPLAY_STEP_DONE;
        }
        uint64_t n = op->a.net.bytes < r->req_left ? op->a.net.bytes : r->req_left;
        r->req_left -= n;
        r->phase = 1;
        if (r->fd >= 0 && n)
            replay_run_take(r, n);
    } else if (op->kind == PLAN_OP_SEND) {
        if (r->phase == 2) { /* sent */
            replay_run_next(r, REPLAY_KIND_NET);
            return REPLAY_STEP_DONE;
        }
        if (r->phase == 0 && r->fd >= 0 && r->req_left) {
            /* the client's bytes come before any answer */
            replay_run_take(r, r->req_left);
            r->req_left = 0;
            r->phase = 1;
            return REPLAY_STEP_DONE;
        }
        uint64_t n = r->op == r->last_send            ? r->resp_left
                     : op->a.net.bytes < r->resp_left ? op->a.net.bytes
                                                      : r->resp_left;
        int more = (op->flags & PLAN_SEG_MORE) && r->op != r->last_send ? MSG_MORE : 0;
        r->resp_left -= n;
        r->phase = 2;
        if (r->fd >= 0 && n)
            replay_run_send(r, n, more);
    } else if (op->kind == PLAN_OP_SOCKOPT) {
        int v = (int)op->a.sockopt.value;
        if (r->fd >= 0)
            setsockopt(r->fd, op->a.sockopt.level, op->a.sockopt.name, &v, sizeof v);
        replay_run_next(r, REPLAY_KIND_NET);
    } else if (loop && replay_op_waits(op)) {
        return REPLAY_STEP_OFFLOOP;
    } else {
        replay_run_next(r, replay_op_run(t, op, loop));
    }
    return REPLAY_STEP_DONE;
}

enum replay_step replay_block_step(struct replay_thread *t, struct replay_block_run *r, int loop)
{
    const struct plan_block *b = &t->e->plan->blocks[r->block];
    for (;;) {
        if (r->xfer_left) {
            ssize_t n = replay_xfer_once(r->fd, r->xfer_send, r->xfer_left,
                                         r->xfer_send ? r->xfer_flags : 0, loop);
            if (n < 0 && loop && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                r->wait_fd = r->fd;
                return r->xfer_send ? REPLAY_STEP_WANT_WRITE : REPLAY_STEP_WANT_READ;
            }
            if (n <= 0) {
                r->failed_errno = n < 0 ? errno : 0;
                return REPLAY_STEP_FAILED;
            }
            r->xfer_left -= (uint64_t)n;
            continue;
        }
        switch (r->stage) {
        case RUN_TAKE_FIRST: /* no RECV op: take the request first */
            r->stage = RUN_OPS;
            if (r->fd >= 0 && r->nrecv == 0 && r->req_left) {
                replay_run_take(r, r->req_left);
                r->req_left = 0;
            }
            break;
        case RUN_OPS:
            if (r->op == b->nops) {
                r->stage = RUN_TAKE_REST;
                break;
            }
            enum replay_step st = replay_run_op(t, r, loop);
            if (st != REPLAY_STEP_DONE)
                return st;
            break;
        case RUN_TAKE_REST:
            r->stage = RUN_SEND_REST;
            if (r->fd >= 0 && r->req_left) {
                replay_run_take(r, r->req_left);
                r->req_left = 0;
            }
            break;
        case RUN_SEND_REST:
            r->stage = RUN_OVER;
            if (r->fd >= 0 && r->resp_left) {
                replay_run_send(r, r->resp_left, 0);
                r->resp_left = 0;
            }
            break;
        default:
            return REPLAY_STEP_DONE;
        }
    }
}

int replay_block_end(struct replay_thread *t, struct replay_block_run *r, int failed, char *err,
                     size_t errlen)
{
    struct replay_engine *e = t->e;
    const struct plan *p = e->plan;
    const struct plan_block *b = &p->blocks[r->block];
    if (failed)
        snprintf(err, errlen, "block %u: request connection: %s", r->block,
                 r->failed_errno ? strerror(r->failed_errno) : "closed by peer");
    if (r->call_open) { /* cut short in a nested call (a loop's timeout or stop) */
        replay_peers_call_end(e->peers, &r->call, 0);
        r->call_open = 0;
        atomic_fetch_add(&e->call_errors, 1);
    }
    replay_lock_release_all(t);
    atomic_fetch_add(&e->blocks, 1);
    uint32_t label = e->label_of_string[b->label < p->nstrings ? b->label : 0];
    if (label != UINT32_MAX) {
        atomic_fetch_add(&e->label_blocks[label], 1);
        for (int k = 0; k < REPLAY_NKINDS; k++)
            if (r->kind_ns[k])
                atomic_fetch_add(&e->label_ns[(size_t)label * REPLAY_NKINDS + k], r->kind_ns[k]);
    }
    atomic_fetch_sub(&e->in_flight, 1);
    return failed ? -1 : 0;
}

int replay_exec_block(struct replay_thread *t, uint32_t block, int fd, uint64_t request_bytes,
                      uint64_t response_bytes, char *err, size_t errlen)
{
    return replay_exec_block_preread(t, block, fd, request_bytes, 0, response_bytes, err, errlen);
}

int replay_exec_block_preread(struct replay_thread *t, uint32_t block, int fd,
                              uint64_t request_bytes, uint64_t preread, uint64_t response_bytes,
                              char *err, size_t errlen)
{
    struct replay_block_run r;
    if (replay_block_begin(t, &r, block, fd, request_bytes, preread, response_bytes, err, errlen))
        return -1;
    enum replay_step s = replay_block_step(t, &r, 0);
    return replay_block_end(t, &r, s == REPLAY_STEP_FAILED, err, errlen);
}

/* ---- stats -------------------------------------------------------------- */

struct replay_text {
    char *s;
    size_t len, cap;
};

static void replay_text_add(struct replay_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void replay_text_add(struct replay_text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *ns = realloc(t->s, cap);
        if (!ns)
            return;
        t->s = ns;
        t->cap = cap;
    }
}

static void replay_text_json_string(struct replay_text *t, const char *s)
{
    replay_text_add(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            replay_text_add(t, "\\%c", c);
        else if (c < 0x20)
            replay_text_add(t, "\\u%04x", c);
        else
            replay_text_add(t, "%c", c);
    }
    replay_text_add(t, "\"");
}

/* How long STATS waits for blocks that already answered to be counted:
 * the controller asks right after the driver saw the last response, and a
 * worker counts its block just after its last send. Bounded, because with
 * --no-deps or a failed driver a block may still be running (reported as
 * "in_flight"). */
#define REPLAY_STATS_SETTLE_MS 250

char *replay_engine_stats_json(struct replay_engine *e)
{
    const struct plan *p = e->plan;
    struct replay_text t = {0};
    for (int ms = 0; ms < REPLAY_STATS_SETTLE_MS && atomic_load(&e->in_flight); ms++)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    replay_text_add(&t, "{\"component\":");
    replay_text_json_string(&t, plan_string(p, p->components[e->cfg.component].name));
    replay_text_add(
        &t,
        ",\"blocks\":%" PRIu64 ",\"db_queries\":%" PRIu64 ",\"db_cut\":%" PRIu64
        ",\"db_unavailable\":%" PRIu64 ",\"call_errors\":%" PRIu64 ",\"file_errors\":%" PRIu64
        ",\"lock_try_failed\":%" PRIu64 ",\"locks_left_held\":%" PRIu64
        ",\"lock_bad_release\":%" PRIu64 ",\"lock_loop_busy\":%" PRIu64
        ",\"calls_connections\":%" PRIu64 ",\"in_flight\":%" PRIu64 ",\"labels\":{",
        atomic_load(&e->blocks), atomic_load(&e->db_queries), atomic_load(&e->db_cut),
        atomic_load(&e->db_unavailable), atomic_load(&e->call_errors), atomic_load(&e->file_errors),
        atomic_load(&e->lock_try_failed), atomic_load(&e->locks_left_held),
        atomic_load(&e->lock_bad_release), atomic_load(&e->lock_loop_busy),
        replay_peers_opened(e->peers), atomic_load(&e->in_flight));
    int first = 1;
    for (uint32_t l = 0; l < e->nlabels; l++) {
        uint64_t n = atomic_load(&e->label_blocks[l]);
        if (!n)
            continue;
        replay_text_add(&t, first ? "" : ",");
        first = 0;
        replay_text_json_string(&t, plan_string(p, e->label_strings[l]));
        replay_text_add(&t, ":{\"blocks\":%" PRIu64, n);
        for (int k = 0; k < REPLAY_NKINDS; k++)
            replay_text_add(&t, ",\"%s_s\":%.9f", replay_kind_names[k],
                            (double)atomic_load(&e->label_ns[(size_t)l * REPLAY_NKINDS + k]) / 1e9);
        replay_text_add(&t, "}");
    }
    replay_text_add(&t, "},\"db_errors\":[");
    first = 1;
    pthread_mutex_lock(&e->db_errors_mu);
    for (uint32_t s = 0; s < p->nstrings; s++) {
        uint64_t n = atomic_load(&e->db_errors[s].count);
        if (!n)
            continue;
        replay_text_add(&t, "%s{\"query\":", first ? "" : ",");
        first = 0;
        replay_text_json_string(&t, plan_string(p, s));
        replay_text_add(&t, ",\"count\":%" PRIu64 ",\"code\":%d,\"message\":", n,
                        e->db_errors[s].code);
        replay_text_json_string(&t, e->db_errors[s].message);
        replay_text_add(&t, "}");
    }
    pthread_mutex_unlock(&e->db_errors_mu);
    replay_text_add(&t, "]}");
    return t.s;
}

int replay_engine_restore_files(struct replay_engine *e, double *seconds, char *err, size_t errlen)
{
    *seconds = 0;
    if (!e->files)
        return 0;
    struct dummy_files_stats st;
    atomic_fetch_add_explicit(&e->files_generation, 1, memory_order_release);
    if (dummy_files_restore(e->files, 0, &st, err, errlen))
        return -1;
    if (dummy_files_settle(e->files, err, errlen))
        return -1;
    *seconds = st.seconds;
    return 0;
}

void replay_engine_stats_reset(struct replay_engine *e)
{
    atomic_store(&e->blocks, 0);
    atomic_store(&e->db_queries, 0);
    atomic_store(&e->db_cut, 0);
    atomic_store(&e->db_unavailable, 0);
    atomic_store(&e->call_errors, 0);
    atomic_store(&e->file_errors, 0);
    atomic_store(&e->lock_try_failed, 0);
    atomic_store(&e->locks_left_held, 0);
    atomic_store(&e->lock_bad_release, 0);
    atomic_store(&e->lock_loop_busy, 0);
    for (uint32_t l = 0; l < e->nlabels; l++) {
        atomic_store(&e->label_blocks[l], 0);
        for (int k = 0; k < REPLAY_NKINDS; k++)
            atomic_store(&e->label_ns[(size_t)l * REPLAY_NKINDS + k], 0);
    }
    for (uint32_t s = 0; s < e->plan->nstrings; s++)
        atomic_store(&e->db_errors[s].count, 0);
}
