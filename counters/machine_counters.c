/* machine_counters.c - /proc read for the counters of a run and of a
 * recording (machine_counters.h): /proc/stat, PSI, /proc/diskstats,
 * /proc/net/dev and /proc/PID/stat. Must never: fail or print (a file the
 * kernel does not have leaves its counters NAN), or allocate. */
#include "machine_counters.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const machine_counters_names[MACHINE_COUNTERS_N] = {"cpu_user",
                                                                "cpu_system",
                                                                "run_queue",
                                                                "cpu_pressure",
                                                                "ctx_switches_per_s",
                                                                "disk_read_bytes_per_s",
                                                                "disk_write_bytes_per_s",
                                                                "disk_read_iops",
                                                                "disk_write_iops",
                                                                "net_rx_bytes_per_s",
                                                                "net_tx_bytes_per_s",
                                                                "run_cpu"};
const char *const counters_label_prefix[3] = {"throughput_per_s:", "median_s:", "p95_s:"};

double machine_counters_max(const char *name, const char **why)
{
    static const struct {
        const char *name;
        double max;
        const char *why;
    } bounds[] = {
        {"cpu_user", 1.0, "a share of the CPU time"},
        {"cpu_system", 1.0, "a share of the CPU time"},
        {"cpu_pressure", 1.1, "a share of the window's time"},
        {"run_queue", 4194304.0, "a count of runnable tasks (PID_MAX_LIMIT)"},
    };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
        if (!strcmp(name, bounds[i].name)) {
            *why = bounds[i].why;
            return bounds[i].max;
        }
    for (int m = 1; m < 3; m++) /* median_s:, p95_s: */
        if (!strncmp(name, counters_label_prefix[m], strlen(counters_label_prefix[m]))) {
            *why = "a response time (31 days)";
            return 31.0 * 86400.0;
        }
    *why = "";
    return INFINITY;
}

double machine_counters_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int counters_parse_window(const char *text, double *seconds)
{
    char *end;
    double v = strtod(text, &end);
    if (!strcmp(text, "0")) {
        *seconds = 0;
        return 0;
    }
    if (end == text || !isfinite(v))
        return -1;
    if (!strcmp(end, "ms"))
        v /= 1000;
    else if (!strcmp(end, "m"))
        v *= 60;
    else if (!strcmp(end, "h"))
        v *= 3600;
    else if (strcmp(end, "") && strcmp(end, "s"))
        return -1;
    if (!(v >= COUNTERS_MIN_WINDOW_S) || v > COUNTERS_MAX_WINDOW_S)
        return -1;
    *seconds = v;
    return 0;
}

double machine_counters_tick(double window_s)
{
    return fmin(1.0, fmax(0.05, window_s / 10));
}

/* /proc/stat: the "cpu" line, ctxt; procs_running into *running. */
static void machine_counters_read_stat(struct machine_snap *s, double *running)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512];
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v[10] = {0};
        if (s && !strncmp(line, "cpu ", 4) &&
            sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) == 8) {
            s->cpu_user = (double)(v[0] + v[1]);
            s->cpu_sys = (double)(v[2] + v[5] + v[6]);
            s->cpu_total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
        } else if (s && !strncmp(line, "ctxt ", 5) && sscanf(line + 5, "%llu", &v[0]) == 1) {
            s->ctxt = (double)v[0];
        } else if (running && !strncmp(line, "procs_running ", 14) &&
                   sscanf(line + 14, "%llu", &v[0]) == 1) {
            *running = (double)v[0];
        }
    }
    fclose(f);
}

double machine_counters_running(void)
{
    double running = NAN;
    machine_counters_read_stat(NULL, &running);
    return running;
}

static void machine_counters_read_psi(struct machine_snap *s)
{
    FILE *f = fopen("/proc/pressure/cpu", "r");
    char line[256];
    unsigned long long total;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *t = strstr(line, "total=");
        if (!strncmp(line, "some ", 5) && t && sscanf(t + 6, "%llu", &total) == 1)
            s->psi_us = (double)total;
    }
    fclose(f);
}

static void machine_counters_read_disks(const struct machine_counters *m, struct machine_snap *s)
{
    FILE *f = fopen("/proc/diskstats", "r");
    char line[512], name[64];
    unsigned long long rd, rs, wr, ws, skip;
    if (!f)
        return;
    s->rd_ios = s->rd_sect = s->wr_ios = s->wr_sect = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%*u %*u %63s %llu %llu %llu %llu %llu %llu %llu", name, &rd, &skip, &rs,
                   &skip, &wr, &skip, &ws) != 8)
            continue;
        for (int i = 0; i < m->ndisks; i++)
            if (!strcmp(name, m->disks[i])) {
                s->rd_ios += (double)rd;
                s->rd_sect += (double)rs;
                s->wr_ios += (double)wr;
                s->wr_sect += (double)ws;
            }
    }
    fclose(f);
}

static void machine_counters_read_net(struct machine_snap *s)
{
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    if (!f)
        return;
    s->net_rx = s->net_tx = 0;
    while (fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        unsigned long long rx, tx;
        if (c && sscanf(c + 1, "%llu %*u %*u %*u %*u %*u %*u %*u %llu", &rx, &tx) == 2) {
            s->net_rx += (double)rx;
            s->net_tx += (double)tx;
        }
    }
    fclose(f);
}

double machine_counters_proc_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, pid ? "/proc/%d/stat" : "/proc/self/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st);
}

void machine_counters_snapshot(const struct machine_counters *m, struct machine_snap *s)
{
    double nan = NAN;
    *s = (struct machine_snap){.t = machine_counters_now(),
                               .cpu_user = nan,
                               .cpu_sys = nan,
                               .cpu_total = nan,
                               .ctxt = nan,
                               .psi_us = nan,
                               .rd_ios = nan,
                               .rd_sect = nan,
                               .wr_ios = nan,
                               .wr_sect = nan,
                               .net_rx = nan,
                               .net_tx = nan,
                               .proc_ticks = nan};
    machine_counters_read_stat(s, NULL);
    machine_counters_read_psi(s);
    machine_counters_read_disks(m, s);
    machine_counters_read_net(s);
}

double machine_counters_rate(double a, double b, double secs)
{
    if (!isfinite(a) || !isfinite(b) || b < a || !(secs > 0))
        return NAN;
    return (b - a) / secs;
}

void machine_counters_rates(const struct machine_snap *a, const struct machine_snap *b,
                            double rq_mean, double *v)
{
    double len = b->t - a->t, jiffies = b->cpu_total - a->cpu_total;
    double hz = (double)sysconf(_SC_CLK_TCK);
    v[MC_CPU_USER] = jiffies > 0 ? machine_counters_rate(a->cpu_user, b->cpu_user, jiffies) : NAN;
    v[MC_CPU_SYSTEM] = jiffies > 0 ? machine_counters_rate(a->cpu_sys, b->cpu_sys, jiffies) : NAN;
    v[MC_RUN_QUEUE] = rq_mean;
    v[MC_CPU_PRESSURE] = machine_counters_rate(a->psi_us, b->psi_us, len * 1e6);
    v[MC_CTX] = machine_counters_rate(a->ctxt, b->ctxt, len);
    v[MC_DISK_RB] = machine_counters_rate(a->rd_sect * 512, b->rd_sect * 512, len);
    v[MC_DISK_WB] = machine_counters_rate(a->wr_sect * 512, b->wr_sect * 512, len);
    v[MC_DISK_RIOPS] = machine_counters_rate(a->rd_ios, b->rd_ios, len);
    v[MC_DISK_WIOPS] = machine_counters_rate(a->wr_ios, b->wr_ios, len);
    v[MC_NET_RX] = machine_counters_rate(a->net_rx, b->net_rx, len);
    v[MC_NET_TX] = machine_counters_rate(a->net_tx, b->net_tx, len);
    v[MC_PROC_CPU] = machine_counters_rate(a->proc_ticks, b->proc_ticks, len * hz);
}

/* Whole disks of /sys/block, without loop, ram, zram and device-mapper
 * devices (their I/O is counted on the disks under them). */
void machine_counters_init(struct machine_counters *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen("/proc/diskstats", "r");
    char line[512], name[64], path[128];
    if (!f)
        return;
    while (m->ndisks < COUNTERS_MAX_DISKS && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%*u %*u %31s", name) != 1 || !strncmp(name, "loop", 4) ||
            !strncmp(name, "ram", 3) || !strncmp(name, "zram", 4) || !strncmp(name, "dm-", 3))
            continue;
        snprintf(path, sizeof path, "/sys/block/%s", name);
        if (!access(path, F_OK))
            snprintf(m->disks[m->ndisks++], sizeof m->disks[0], "%s", name);
    }
    fclose(f);
}
