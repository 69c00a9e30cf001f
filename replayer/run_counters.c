/* run_counters.c - the counters `preplay run` measures per time window
 * (run_counters.h, formats/RESULTS.md "counters"), the input of `preplay
 * regress` (the thesis's performance counters, Foo ch. 5). A sampler
 * thread wakes every tick while a drive is on, adds /proc/stat's
 * procs_running to the window's run-queue mean, and at each window's end
 * takes a snapshot of the cumulative counters (/proc/stat, PSI,
 * /proc/diskstats, /proc/net/dev, the process tree's CPU, the type's CPU
 * cgroup) and asks the replayers for theirs; a window's values are the
 * differences between its two snapshots divided by its length. Per-label
 * throughput and response times come from the drive's samples at its end.
 * Must never: stop or slow the run for a counter (what cannot be read is
 * null), print, or hold its lock while the main thread drives. */
#include "run_counters.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "grow_array.h"
#include "machine_counters.h"
#include "replay_results.h"
#include "results_writer.h"
#include "run_placement.h"

/* The fixed counters, in their order in every window (RESULTS.md): the
 * machine's (counters/machine_counters.h, MC_*), then the run's own. */
enum rc_counter {
    RC_TYPE_THROTTLED = MACHINE_COUNTERS_N,
    RC_LOCK_WAIT,
    RC_DB_TIME,
    RC_DB_QPS,
    RC_NFIXED
};
static const char *const rc_own_names[RC_NFIXED - MACHINE_COUNTERS_N] = {
    "type_throttled", COUNTERS_LOCK_WAIT, COUNTERS_DB_TIME, COUNTERS_DB_QPS};

/* Cumulative counters at one moment; NAN: could not be read. */
struct rc_snap {
    struct machine_snap m;
    double throttled_ns;
    double lock_s, db_s, db_q;
};

struct rc_window {
    long interval;
    double start, length; /* monotonic start; seconds */
    double *values;       /* cap_values of them, NAN: none */
};

struct run_counters {
    double window_s, tick_s, t0; /* t0: the first begin */
    pid_t *pids;
    size_t npids;
    run_counters_stats_fn stats;
    void *stats_arg;
    struct machine_counters machine;
    char cgroup_stat[4352]; /* the type's cpu.stat; "" outside a type */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit, active, have_t0;
    long interval;
    struct rc_snap open;   /* the open window's starting snapshot */
    double rq_sum, rq_n;   /* its procs_running ticks */
    size_t interval_first; /* the current interval's first window */
    char **names;          /* RC_NFIXED, then per-label ones */
    size_t nnames, cap_names;
    struct rc_window *windows;
    size_t nwindows, cap_windows;
};

static void rc_read_tree(const struct run_counters *rc, struct rc_snap *s)
{
    double t = machine_counters_proc_ticks(0);
    for (size_t i = 0; t >= 0 && i < rc->npids; i++) {
        double c = machine_counters_proc_ticks(rc->pids[i]);
        if (c >= 0) /* a replayer that died is the run's to report */
            t += c;
    }
    s->m.proc_ticks = t >= 0 ? t : NAN;
}

static void rc_read_cgroup(const struct run_counters *rc, struct rc_snap *s)
{
    if (!rc->cgroup_stat[0])
        return;
    FILE *f = fopen(rc->cgroup_stat, "r");
    char line[256];
    unsigned long long v;
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "throttled_time %llu", &v) == 1)
            s->throttled_ns = (double)v;
    fclose(f);
}

/* Every cumulative counter now. Called with the lock held, from the
 * sampler or from end (never both at once). */
static void rc_snapshot(struct run_counters *rc, struct rc_snap *s)
{
    s->throttled_ns = s->lock_s = s->db_s = s->db_q = NAN;
    machine_counters_snapshot(&rc->machine, &s->m);
    rc_read_tree(rc, s);
    rc_read_cgroup(rc, s);
    if (rc->stats && rc->stats(rc->stats_arg, &s->lock_s, &s->db_s, &s->db_q)) {
        s->lock_s = s->db_s = s->db_q = NAN;
    }
}

static int rc_grow_names(struct run_counters *rc)
{
    if (rc->nnames < rc->cap_names)
        return 0;
    size_t cap = rc->cap_names ? rc->cap_names * 2 : 32;
    char **n = realloc(rc->names, cap * sizeof *n);
    if (!n)
        return -1;
    rc->names = n;
    for (size_t w = 0; w < rc->nwindows; w++) {
        double *v = realloc(rc->windows[w].values, cap * sizeof *v);
        if (!v)
            return -1;
        for (size_t i = rc->cap_names; i < cap; i++)
            v[i] = NAN;
        rc->windows[w].values = v;
    }
    rc->cap_names = cap;
    return 0;
}

/* Appends the window [a, b] of the current interval with its machine and
 * replay values. -1 out of memory. */
static int rc_add_window(struct run_counters *rc, const struct rc_snap *a, const struct rc_snap *b)
{
    if (grow_array((void **)&rc->windows, &rc->cap_windows, rc->nwindows + 1, sizeof *rc->windows,
                   64) != 0)
        return -1;
    double *v = malloc(rc->cap_names * sizeof *v), len = b->m.t - a->m.t;
    if (!v)
        return -1;
    for (size_t i = 0; i < rc->cap_names; i++)
        v[i] = NAN;
    machine_counters_rates(&a->m, &b->m, rc->rq_n > 0 ? rc->rq_sum / rc->rq_n : NAN, v);
    v[RC_TYPE_THROTTLED] = machine_counters_rate(a->throttled_ns, b->throttled_ns, len * 1e9);
    v[RC_LOCK_WAIT] = machine_counters_rate(a->lock_s, b->lock_s, len);
    v[RC_DB_TIME] = machine_counters_rate(a->db_s, b->db_s, len);
    v[RC_DB_QPS] = machine_counters_rate(a->db_q, b->db_q, len);
    rc->windows[rc->nwindows++] =
        (struct rc_window){.interval = rc->interval, .start = a->m.t, .length = len, .values = v};
    return 0;
}

/* Closes the open window at now and opens the next one. */
static int rc_roll(struct run_counters *rc, int keep)
{
    struct rc_snap now;
    rc_snapshot(rc, &now);
    int rc_ = keep ? rc_add_window(rc, &rc->open, &now) : 0;
    rc->open = now;
    rc->rq_sum = rc->rq_n = 0;
    return rc_;
}

static void *rc_thread(void *arg)
{
    struct run_counters *rc = arg;
    pthread_mutex_lock(&rc->mu);
    while (!rc->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double until = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + rc->tick_s;
        ts.tv_sec = (time_t)until;
        ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&rc->cv, &rc->mu, &ts);
        if (rc->quit || !rc->active)
            continue;
        double running = machine_counters_running();
        if (isfinite(running)) {
            rc->rq_sum += running;
            rc->rq_n++;
        }
        if (machine_counters_now() - rc->open.m.t >= rc->window_s - rc->tick_s / 2)
            (void)rc_roll(rc, 1); /* out of memory: that window is lost, the run goes on */
    }
    pthread_mutex_unlock(&rc->mu);
    return NULL;
}

struct run_counters *run_counters_new(double window_s, const pid_t *pids, size_t npids,
                                      run_counters_stats_fn stats, void *stats_arg)
{
    struct run_counters *rc = calloc(1, sizeof *rc);
    if (!rc)
        return NULL;
    rc->window_s = window_s;
    rc->tick_s = machine_counters_tick(window_s);
    rc->stats = stats;
    rc->stats_arg = stats_arg;
    rc->pids = malloc((npids ? npids : 1) * sizeof *pids);
    if (rc->pids)
        memcpy(rc->pids, pids, npids * sizeof *pids);
    rc->npids = npids;
    machine_counters_init(&rc->machine);
    char cg[4096];
    if (!run_placement_cpu_cgroup(0, cg, sizeof cg) && strcmp(cg, "/"))
        snprintf(rc->cgroup_stat, sizeof rc->cgroup_stat, "/sys/fs/cgroup/cpu%s/cpu.stat", cg);
    int ok = rc->pids && !rc_grow_names(rc);
    for (int i = 0; ok && i < RC_NFIXED; i++)
        ok = (rc->names[rc->nnames] =
                  strdup(i < MACHINE_COUNTERS_N ? machine_counters_names[i]
                                                : rc_own_names[i - MACHINE_COUNTERS_N])) != NULL &&
             ++rc->nnames;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&rc->mu, NULL);
    pthread_cond_init(&rc->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!ok || pthread_create(&rc->thread, NULL, rc_thread, rc)) {
        rc->quit = 1; /* no thread to join */
        rc->thread = pthread_self();
        run_counters_free(rc);
        return NULL;
    }
    return rc;
}

void run_counters_begin(struct run_counters *rc, long iv)
{
    pthread_mutex_lock(&rc->mu);
    rc->interval = iv;
    rc->interval_first = rc->nwindows;
    rc_snapshot(rc, &rc->open);
    rc->rq_sum = rc->rq_n = 0;
    if (!rc->have_t0) {
        rc->t0 = rc->open.m.t;
        rc->have_t0 = 1;
    }
    rc->active = 1;
    pthread_cond_signal(&rc->cv);
    pthread_mutex_unlock(&rc->mu);
}

/* Index of name, added when new; -1 out of memory. */
static long rc_name_index(struct run_counters *rc, const char *prefix, const char *label)
{
    size_t pl = strlen(prefix), ll = strlen(label);
    for (size_t i = RC_NFIXED; i < rc->nnames; i++)
        if (!strncmp(rc->names[i], prefix, pl) && !strcmp(rc->names[i] + pl, label))
            return (long)i;
    char *n = malloc(pl + ll + 1);
    if (!n || rc_grow_names(rc)) {
        free(n);
        return -1;
    }
    memcpy(n, prefix, pl);
    memcpy(n + pl, label, ll + 1);
    rc->names[rc->nnames] = n;
    return (long)rc->nnames++;
}

static int rc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Per label (labels: the distinct label ids of the drive), the
 * successful responses that ended in window w (offsets from the drive's
 * start, begin). */
static int rc_label_values(struct run_counters *rc, struct rc_window *w, double begin,
                           const struct plan *p, const uint32_t *labels, size_t nlabels,
                           const struct replay_sample *s, size_t n, double *buf)
{
    double from = w->start - begin, to = from + w->length;
    for (size_t l = 0; l < nlabels; l++) {
        size_t k = 0;
        for (size_t j = 0; j < n; j++) {
            double end = s[j].sent_s - s[j].late_s + s[j].response_s;
            if (s[j].ok && s[j].label == labels[l] && end >= from && end < to)
                buf[k++] = s[j].response_s;
        }
        const char *label = plan_string(p, labels[l]);
        long idx[3];
        for (int m = 0; m < 3; m++)
            if ((idx[m] = rc_name_index(rc, counters_label_prefix[m],
                                        label[0] ? label : COUNTERS_UNLABELLED)) < 0)
                return -1;
        w->values[idx[0]] = (double)k / w->length;
        if (k) {
            qsort(buf, k, sizeof *buf, rc_cmp_double);
            w->values[idx[1]] = replay_percentile(buf, k, 50);
            w->values[idx[2]] = replay_percentile(buf, k, 95);
        }
    }
    return 0;
}

/* The distinct labels of the drive's successful samples, into labels
 * (room for n); their count. */
static size_t rc_distinct_labels(const struct replay_sample *s, size_t n, uint32_t *labels)
{
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = 0;
        while (l < nl && labels[l] != s[i].label)
            l++;
        if (s[i].ok && l == nl)
            labels[nl++] = s[i].label;
    }
    return nl;
}

int run_counters_end(struct run_counters *rc, const struct plan *p,
                     const struct replay_sample *samples, size_t nsamples)
{
    pthread_mutex_lock(&rc->mu);
    rc->active = 0;
    double begin =
        rc->nwindows > rc->interval_first ? rc->windows[rc->interval_first].start : rc->open.m.t;
    int ret = rc_roll(rc, machine_counters_now() - rc->open.m.t >= rc->window_s / 2);
    double *buf = malloc((nsamples ? nsamples : 1) * sizeof *buf);
    uint32_t *labels = malloc((nsamples ? nsamples : 1) * sizeof *labels);
    if (!buf || !labels)
        ret = -1;
    size_t nlabels = ret ? 0 : rc_distinct_labels(samples, nsamples, labels);
    for (size_t w = rc->interval_first; !ret && w < rc->nwindows; w++)
        ret =
            rc_label_values(rc, &rc->windows[w], begin, p, labels, nlabels, samples, nsamples, buf);
    free(buf);
    free(labels);
    pthread_mutex_unlock(&rc->mu);
    return ret;
}

/* The machine: host, CPUs, memory, CPU model, kernel, emulated type. */
static void rc_environment(struct results_environment *env, char *host, size_t hostlen, char *model,
                           size_t modellen, struct utsname *u)
{
    char line[512];
    env->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    env->memory_bytes = NAN;
    if (!gethostname(host, hostlen))
        env->host = host;
    if (!uname(u))
        env->kernel = u->release;
    env->emulated_type = getenv("PREPLAY_EMU_TYPE");
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            env->memory_bytes = (double)kb * 1024;
    if (f)
        fclose(f);
    f = fopen("/proc/cpuinfo", "r");
    while (f && !env->cpu_model && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && c) {
            c[strcspn(c, "\n")] = 0;
            snprintf(model, modellen, "%s", c + 1 + (c[1] == ' '));
            env->cpu_model = model;
        }
    }
    if (f)
        fclose(f);
}

json_t *run_counters_json(struct run_counters *rc)
{
    pthread_mutex_lock(&rc->mu);
    json_t *names = json_array(), *windows = json_array();
    for (size_t i = 0; names && i < rc->nnames; i++)
        json_array_append_new(names, json_string(rc->names[i]));
    for (size_t w = 0; windows && w < rc->nwindows; w++)
        json_array_append_new(
            windows,
            results_counter_window_json(rc->windows[w].interval, rc->windows[w].start - rc->t0,
                                        rc->windows[w].length, rc->windows[w].values, rc->nnames));
    pthread_mutex_unlock(&rc->mu);
    char host[256] = "", model[256] = "";
    struct utsname u;
    struct results_environment env = {0};
    rc_environment(&env, host, sizeof host, model, sizeof model, &u);
    return results_counters_json(rc->window_s, rc->tick_s, &env, names, windows);
}

void run_counters_free(struct run_counters *rc)
{
    if (!rc)
        return;
    pthread_mutex_lock(&rc->mu);
    int joinable = !rc->quit;
    rc->quit = 1;
    pthread_cond_signal(&rc->cv);
    pthread_mutex_unlock(&rc->mu);
    if (joinable)
        pthread_join(rc->thread, NULL);
    pthread_mutex_destroy(&rc->mu);
    pthread_cond_destroy(&rc->cv);
    for (size_t i = 0; i < rc->nnames; i++)
        free(rc->names[i]);
    free(rc->names);
    for (size_t w = 0; w < rc->nwindows; w++)
        free(rc->windows[w].values);
    free(rc->windows);
    free(rc->pids);
    free(rc);
}
