/* duet_cli.c - `preplay duet A.PLAN B.PLAN -o DUET.json`: the controller.
 * It checks the plans (DB work needs a database per side: two replays
 * must never share one silently), measures the CPU ratio once per
 * distinct recording host (so A and B burn with the same ratio when they
 * were recorded on one machine: a ratio measured twice would differ by its
 * own noise, a bias in B/A), picks the two cores, and runs R runs: each
 * forks a fresh pair of side processes (duet_side.c), A pinned to one core
 * and B to the other, swapped at random per run (§V: "we randomize the
 * assignment of workloads to processors") but balanced, half the runs each
 * way round (stats_duet_balanced says why), with a new shared barrier. A
 * side that fails aborts the barrier so the other stops too; nothing of a
 * failed run is reported as a measurement. The report (duet_report.c)
 * turns the sides' iterations into duet.json. Never leaves a side or a
 * replayer running: sides die with us (PR_SET_PDEATHSIG) and are waited
 * for, their replayers die with them. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "duet.h"
#include "replay_cli.h"
#include "replayer_cli.h"
#include "results_writer.h"
#include "stats_duet.h"

static volatile sig_atomic_t duet_signal;

static void duet_on_signal(int sig)
{
    duet_signal = sig;
}

static int duet_has_db(const struct plan *p)
{
    for (uint64_t i = 0; i < p->nops; i++)
        if (p->ops[i].kind == PLAN_OP_DB)
            return 1;
    return 0;
}

/* DB work: each side its own database, or a refusal. */
static int duet_check_db(const struct duet_config *c, const struct plan *a, const struct plan *b)
{
    int db = duet_has_db(a) || duet_has_db(b);
    if (db && !c->db_a) {
        fprintf(stderr,
                "duet: %s has DB work: give each side its own database with --db-a URL --db-b "
                "URL (two replays must not share one)\n",
                duet_has_db(a) ? c->plan_a : c->plan_b);
        return -1;
    }
    if (c->db_a) {
        char ca[1024], cb[1024], pw[256];
        replay_cli_db_url_split(c->db_a, ca, sizeof ca, pw, sizeof pw);
        replay_cli_db_url_split(c->db_b, cb, sizeof cb, pw, sizeof pw);
        memset(pw, 0, sizeof pw);
        if (!strcmp(ca, cb)) {
            fprintf(stderr,
                    "duet: --db-a and --db-b name the same database (%s): each side "
                    "needs its own copy\n",
                    ca);
            return -1;
        }
    }
    return 0;
}

/* The distinct label ids of p's requests (malloc'ed), their count in *n. */
static uint32_t *duet_labels(const struct plan *p, size_t *n)
{
    unsigned char *seen = calloc(p->nstrings ? p->nstrings : 1, 1);
    uint32_t *ids = malloc((p->nstrings ? p->nstrings : 1) * sizeof *ids);
    *n = 0;
    for (uint64_t i = 0; seen && ids && i < p->nrequests; i++) {
        uint32_t l = p->requests[i].label;
        if (l < p->nstrings && !seen[l]) {
            seen[l] = 1;
            ids[(*n)++] = l;
        }
    }
    free(seen);
    return ids;
}

/* A and B must have a request label in common to be compared. */
static int duet_check_labels(const struct duet_config *c, const struct plan *a,
                             const struct plan *b)
{
    size_t na, nb;
    uint32_t *la = duet_labels(a, &na), *lb = duet_labels(b, &nb);
    int common = 0;
    for (size_t i = 0; la && lb && i < na && !common; i++)
        for (size_t j = 0; j < nb && !common; j++)
            common = !strcmp(plan_string(a, la[i]), plan_string(b, lb[j]));
    free(la);
    free(lb);
    if (common)
        return 0;
    fprintf(stderr, "duet: %s and %s have no request label in common: nothing to compare\n",
            c->plan_a, c->plan_b);
    return -1;
}

/* The two cores: --cpus, else the first two this process may run on. */
static int duet_pick_cpus(struct duet_config *c)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) {
        perror("duet: sched_getaffinity");
        return -1;
    }
    if (c->cpus_given) {
        for (int k = 0; k < 2; k++)
            if (!CPU_ISSET(c->cpus[k], &set)) {
                fprintf(stderr, "duet: --cpus: this process may not run on CPU %d\n", c->cpus[k]);
                return -1;
            }
        return 0;
    }
    int n = 0;
    for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &set))
            c->cpus[n++] = i;
    if (n < 2) {
        fprintf(stderr, "duet: needs two CPUs to pin A and B to; this process may use %d\n", n);
        return -1;
    }
    return 0;
}

/* Forks one side; its pid, or -1. */
static pid_t duet_fork_side(const struct duet_side *sd)
{
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        signal(SIGINT, SIG_DFL); /* the session installs its own handlers */
        signal(SIGTERM, SIG_DFL);
        _exit(duet_side_main(sd));
    }
    return pid;
}

/* Waits for both sides; when one fails first, the other is stopped at
 * its next barrier or drive poll. 0 when both succeeded. */
static int duet_wait_sides(pid_t pids[2], struct duet_barrier *bar)
{
    int bad = 0, left = 2;
    while (left) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w < 0 && errno == EINTR) {
            /* Ctrl-C: the sides stop at their next barrier or drive poll */
            duet_barrier_abort(bar);
            for (int k = 0; k < 2; k++)
                kill(pids[k], SIGTERM);
            continue;
        }
        if (w < 0)
            return -1;
        if (w != pids[0] && w != pids[1])
            continue;
        left--;
        if (!WIFEXITED(st) || WEXITSTATUS(st)) {
            bad = 1;
            duet_barrier_abort(bar);
        }
    }
    return bad ? -1 : 0;
}

/* One run: a fresh barrier and pair of sides; their documents in out. */
static int duet_one_run(const struct duet_config *c, const struct duet_plans *pl, long r, int swap,
                        const unsigned char *first, const char *work, json_t *out[2])
{
    struct duet_barrier *bar = duet_barrier_map(2);
    if (!bar) {
        perror("duet: mmap");
        return -1;
    }
    char path[2][4200];
    struct duet_side sd[2];
    pid_t pids[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof path[k], "%s/run%ld-%c.json", work, r, "AB"[k]);
        sd[k] = (struct duet_side){.cfg = c,
                                   .plan_path = k ? c->plan_b : c->plan_a,
                                   .db_url = k ? c->db_b : c->db_a,
                                   .name = k ? "B" : "A",
                                   .role = k,
                                   .cpu = pl->cpus[k ^ swap],
                                   .ratio = k ? pl->ratio_b : pl->ratio_a,
                                   .run = r,
                                   .first = first,
                                   .barrier = bar,
                                   .out_path = path[k]};
    }
    for (int k = 0; k < 2; k++)
        if ((pids[k] = duet_fork_side(&sd[k])) < 0) {
            perror("duet: fork");
            duet_barrier_abort(bar);
            if (k)
                waitpid(pids[0], NULL, 0);
            duet_barrier_unmap(bar);
            return -1;
        }
    int rc = duet_wait_sides(pids, bar);
    duet_barrier_unmap(bar);
    for (int k = 0; k < 2 && !rc; k++) {
        json_error_t je;
        out[k] = json_load_file(path[k], 0, &je);
        if (!out[k]) {
            fprintf(stderr, "duet: run %ld side %c: %s: %s\n", r, "AB"[k], path[k], je.text);
            rc = -1;
        }
    }
    for (int k = 0; k < 2; k++)
        unlink(path[k]);
    if (duet_signal)
        fprintf(stderr, "duet: interrupted by signal %d during run %ld: no result written\n",
                (int)duet_signal, r);
    else if (rc)
        fprintf(stderr, "duet: run %ld failed (the side's reason above): no result written\n", r);
    return rc;
}

/* The CPU ratio of each plan: --cpu-ratio, else measured once when both
 * carry the same recording host's scores, once each otherwise. */
static void duet_ratios(const struct duet_config *c, const struct plan *a, const struct plan *b,
                        struct duet_plans *pl)
{
    if (c->ratio > 0) {
        pl->ratio_a = pl->ratio_b = c->ratio;
        return;
    }
    pl->ratio_a = replay_cli_cpu_ratio(a, "duet", NULL, NULL);
    int same = a->ncpu_scores == b->ncpu_scores &&
               !memcmp(a->cpu_scores, b->cpu_scores, a->ncpu_scores * sizeof a->cpu_scores[0]);
    pl->ratio_b = same ? pl->ratio_a : replay_cli_cpu_ratio(b, "duet", NULL, NULL);
}

static int duet_runs(const struct duet_config *c, const struct duet_plans *pl, const char *work)
{
    size_t nit = (size_t)(c->warmup + c->iterations);
    unsigned char *assign = malloc((size_t)c->runs);
    unsigned char *first = malloc((size_t)c->runs * nit);
    json_t *(*sides)[2] = calloc((size_t)c->runs, sizeof *sides);
    int rc = -1;
    if (!assign || !first || !sides) {
        fprintf(stderr, "duet: out of memory\n");
        goto out;
    }
    stats_duet_balanced(c->seed, assign, (size_t)c->runs);
    for (long r = 0; r < c->runs; r++) /* each run: half A first, half B first */
        stats_duet_balanced(c->seed ^ (0x5e90e7ceULL + (uint64_t)r), first + (size_t)r * nit, nit);
    for (long r = 0; r < c->runs; r++) {
        fprintf(stderr, "duet: run %ld of %ld: A on CPU %d, B on CPU %d\n", r + 1, c->runs,
                pl->cpus[assign[r]], pl->cpus[!assign[r]]);
        if (duet_signal ||
            duet_one_run(c, pl, r + 1, assign[r], first + (size_t)r * nit, work, sides[r]))
            goto out;
    }
    char err[1024];
    json_t *doc = duet_report_build(c, pl, sides, assign, err, sizeof err);
    if (!doc || results_save(doc, c->out, err, sizeof err)) {
        fprintf(stderr, "duet: %s\n", err);
    } else {
        duet_report_print(doc, stderr);
        fprintf(stderr, "duet: wrote %s\n", c->out);
        rc = 0;
    }
    json_decref(doc);
out:
    for (long k = 0; sides && k < c->runs; k++) {
        json_decref(sides[k][0]);
        json_decref(sides[k][1]);
    }
    free(sides);
    free(first);
    free(assign);
    return rc;
}

int cmd_duet(int argc, char **argv)
{
    struct duet_config c;
    int rc;
    if (duet_config_parse(argc, argv, &c, &rc))
        return rc;
    struct plan *a = replay_cli_load_plan(c.plan_a, "duet");
    struct plan *b = a ? replay_cli_load_plan(c.plan_b, "duet") : NULL;
    char work[] = "/tmp/preplay-duet-XXXXXX";
    rc = 1;
    if (!a || !b || duet_check_db(&c, a, b) || duet_pick_cpus(&c))
        goto out;
    struct duet_plans pl = {.recording_a = a->recording_id, .recording_b = b->recording_id};
    pl.same_recording = !strcmp(a->recording_id, b->recording_id);
    if (duet_check_labels(&c, a, b))
        goto out;
    pl.cpus[0] = c.cpus[0];
    pl.cpus[1] = c.cpus[1];
    duet_ratios(&c, a, b, &pl);
    if (!mkdtemp(work)) {
        fprintf(stderr, "duet: %s: %s\n", work, strerror(errno));
        goto out;
    }
    struct sigaction sa = {.sa_handler = duet_on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = duet_runs(&c, &pl, work) ? (duet_signal ? 128 + duet_signal : 1) : 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rmdir(work) && rc == 0) /* the sides' files are unlinked as they are read */
        fprintf(stderr, "duet: warning: %s: %s\n", work, strerror(errno));
out:
    plan_free(a);
    plan_free(b);
    return rc;
}
