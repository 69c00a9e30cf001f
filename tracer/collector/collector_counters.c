/* collector_counters.c - the sampler thread of a recording's counter
 * windows (collector_counters.h). Every tick (a tenth of the window, 50 ms
 * to 1 s) it reads /proc/stat's procs_running for the run-queue mean; at
 * each window's end it takes a snapshot (machine_counters_snapshot plus
 * the traced processes' utime + stime) and writes the window's rates as a
 * COUNTERS record. Lock wait, DB time and per-label counters are not
 * here: they come from the recorded events, computed by whoever reads the
 * recording (regress/regress_trace.c), with the windows' bounds from
 * these records. Must never: slow the collector's draining (its own
 * thread, the lock held only to add a pid), or leave a window unflushed
 * once written. */
#include "collector_counters.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grow_array.h"
#include "machine_counters.h"
#include "trace_file.h"

/* a traced process: its CPU ticks when added and when last read */
struct cc_pid {
    uint32_t pid;
    double base, last;
};

struct collector_counters {
    struct trace_writer *writer;
    char path[4200];
    double window_s, tick_s;
    struct machine_counters machine;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit, failed;
    struct cc_pid *pids;
    size_t npids, cap_pids;
    struct machine_snap open; /* the open window's start */
    double rq_sum, rq_n;
    char error[512];
};

/* The traced processes' CPU ticks since they were added: a process that
 * exited keeps its last reading, so the sum never goes back. Lock held. */
static double cc_tree_ticks(struct collector_counters *cc)
{
    double sum = 0;
    for (size_t i = 0; i < cc->npids; i++) {
        double t = machine_counters_proc_ticks((pid_t)cc->pids[i].pid);
        if (t >= cc->pids[i].last)
            cc->pids[i].last = t;
        sum += cc->pids[i].last - cc->pids[i].base;
    }
    return sum;
}

static void cc_snapshot(struct collector_counters *cc, struct machine_snap *s)
{
    machine_counters_snapshot(&cc->machine, s);
    s->proc_ticks = cc_tree_ticks(cc);
}

/* Writes the window [open, now] and opens the next. Lock held. */
static void cc_roll(struct collector_counters *cc, int keep)
{
    struct machine_snap now;
    cc_snapshot(cc, &now);
    if (keep && !cc->failed) {
        double v[MACHINE_COUNTERS_N];
        machine_counters_rates(&cc->open, &now, cc->rq_n > 0 ? cc->rq_sum / cc->rq_n : NAN, v);
        struct trace_counter c[MACHINE_COUNTERS_N];
        for (int i = 0; i < MACHINE_COUNTERS_N; i++)
            c[i] = (struct trace_counter){.name = machine_counters_names[i],
                                          .name_len = (uint32_t)strlen(machine_counters_names[i]),
                                          .value = v[i]};
        uint8_t payload[MACHINE_COUNTERS_N * (TRACE_MAX_COUNTER_NAME + 9)];
        size_t bytes = trace_counters_encode(c, MACHINE_COUNTERS_N, payload, sizeof payload);
        struct trace_event ev = {.type = TRACE_EV_COUNTERS,
                                 .op = TRACE_COUNTERS_WINDOW,
                                 .ts_ns = (uint64_t)(cc->open.t * 1e9),
                                 .dur_ns = (uint64_t)(now.t * 1e9) - (uint64_t)(cc->open.t * 1e9),
                                 .u.counters = {.nvalues = MACHINE_COUNTERS_N,
                                                .bytes = (uint32_t)bytes,
                                                .window_ns = (uint64_t)(cc->window_s * 1e9),
                                                .tick_ns = (uint64_t)(cc->tick_s * 1e9)},
                                 .data = payload};
        if (ev.dur_ns &&
            (trace_writer_append(cc->writer, &ev) != 0 || trace_writer_flush(cc->writer) != 0)) {
            snprintf(cc->error, sizeof cc->error, "%s: %s", cc->path,
                     trace_writer_error(cc->writer));
            cc->failed = 1;
        }
    }
    cc->open = now;
    cc->rq_sum = cc->rq_n = 0;
}

static void *cc_thread(void *arg)
{
    struct collector_counters *cc = arg;
    pthread_mutex_lock(&cc->mu);
    while (!cc->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double until = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + cc->tick_s;
        ts.tv_sec = (time_t)until;
        ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&cc->cv, &cc->mu, &ts);
        if (cc->quit)
            break;
        double running = machine_counters_running();
        if (isfinite(running)) {
            cc->rq_sum += running;
            cc->rq_n++;
        }
        if (machine_counters_now() - cc->open.t >= cc->window_s - cc->tick_s / 2)
            cc_roll(cc, 1);
    }
    pthread_mutex_unlock(&cc->mu);
    return NULL;
}

struct collector_counters *collector_counters_start(const char *dir, double window_s,
                                                    const struct trace_header *hdr, char *err,
                                                    size_t errlen)
{
    struct collector_counters *cc = calloc(1, sizeof *cc);
    struct trace_header h = *hdr;
    if (!cc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cc->window_s = window_s;
    cc->tick_s = machine_counters_tick(window_s);
    snprintf(cc->path, sizeof cc->path, "%s/machine-%d.counters", dir, (int)getpid());
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    h.argv_joined = NULL;
    h.argv_len = 0;
    ssize_t n = readlink("/proc/self/exe", h.exe, sizeof h.exe - 1);
    h.exe[n > 0 ? n : 0] = 0;
    struct trace_writer_options wo = {0};
    cc->writer = trace_writer_open(cc->path, &h, &wo, err, errlen);
    if (!cc->writer) {
        free(cc);
        return NULL;
    }
    machine_counters_init(&cc->machine);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&cc->mu, NULL);
    pthread_cond_init(&cc->cv, &ca);
    pthread_condattr_destroy(&ca);
    cc_snapshot(cc, &cc->open);
    /* the thread takes no signal: record's handlers (forwarding, SIGUSR1)
     * run in the thread that polls, as before there was a sampler */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = pthread_create(&cc->thread, NULL, cc_thread, cc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started != 0) {
        snprintf(err, errlen, "cannot start the counters thread");
        trace_writer_close(cc->writer, NULL, 0);
        pthread_mutex_destroy(&cc->mu);
        pthread_cond_destroy(&cc->cv);
        free(cc);
        return NULL;
    }
    return cc;
}

void collector_counters_add_pid(struct collector_counters *cc, uint32_t pid)
{
    if (!cc)
        return;
    double t = machine_counters_proc_ticks((pid_t)pid);
    pthread_mutex_lock(&cc->mu);
    for (size_t i = 0; i < cc->npids; i++)
        if (cc->pids[i].pid == pid) { /* an exec: the same process */
            pthread_mutex_unlock(&cc->mu);
            return;
        }
    if (grow_array((void **)&cc->pids, &cc->cap_pids, cc->npids + 1, sizeof *cc->pids, 16) != 0) {
        /* its CPU is missing from run_cpu; the recording goes on */
        pthread_mutex_unlock(&cc->mu);
        return;
    }
    t = t >= 0 ? t : 0;
    cc->pids[cc->npids++] = (struct cc_pid){.pid = pid, .base = t, .last = t};
    pthread_mutex_unlock(&cc->mu);
}

int collector_counters_stop(struct collector_counters *cc, uint64_t *bytes, char *err,
                            size_t errlen)
{
    *bytes = 0;
    if (!cc)
        return 0;
    pthread_mutex_lock(&cc->mu);
    cc->quit = 1;
    pthread_cond_signal(&cc->cv);
    pthread_mutex_unlock(&cc->mu);
    pthread_join(cc->thread, NULL);
    cc_roll(cc, machine_counters_now() - cc->open.t >= cc->window_s / 2);
    char cerr[512];
    int rc = cc->failed ? -1 : 0;
    if (rc)
        snprintf(err, errlen, "%s", cc->error);
    if (trace_writer_close(cc->writer, cerr, sizeof cerr) != 0 && !rc) {
        snprintf(err, errlen, "%s: %s", cc->path, cerr);
        rc = -1;
    }
    struct stat st;
    if (stat(cc->path, &st) == 0)
        *bytes = (uint64_t)st.st_size;
    pthread_mutex_destroy(&cc->mu);
    pthread_cond_destroy(&cc->cv);
    free(cc->pids);
    free(cc);
    return rc;
}
