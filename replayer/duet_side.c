/* duet_side.c - one side of one `preplay duet` run, in a process of its
 * own: pinned to its core before anything starts (the replayers it spawns
 * inherit the pinning), it opens a run_session for its plan (replayers,
 * dummy files, its own DB snapshot when it has one), then per iteration
 * restores the starting state, waits at the shared barrier, drives the
 * fixed slice of the schedule and waits for the other side to finish it, keeping the mean and
 * median successful response time per label. --sequential takes turns instead: after the barrier,
 * the side that goes first drives while the other waits at a second barrier, and then the other way
 * round. Never shares anything with the other side but the barrier; never leaves a replayer running
 * (the session closes them whatever happened). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duet.h"
#include "replay_drive.h"
#include "replay_proto.h"
#include "replay_results.h"
#include "run_config.h"
#include "run_session.h"

struct duet_side_state {
    const struct duet_side *sd;
    struct run_session *s;
};

/* The drive's and the barrier's way out: a dead replayer, a signal, or
 * the other side gone (the controller aborted the barrier). */
static int duet_side_should_stop(void *arg)
{
    struct duet_side_state *st = arg;
    return run_session_check_children(st->s) || atomic_load(&st->sd->barrier->abort);
}

static int duet_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* {"n", "mean_s", "median_s"} of v (sorted in place). */
static json_t *duet_side_summary(double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    qsort(v, n, sizeof *v, duet_cmp);
    return json_pack("{s:I, s:f, s:f}", "n", (json_int_t)n, "mean_s", n ? sum / (double)n : 0.0,
                     "median_s", n ? replay_percentile(v, n, 50) : 0.0);
}

/* One iteration's document from the drive's samples. */
static json_t *duet_side_iteration(const struct plan *p, const struct replay_drive_result *r)
{
    struct replay_label_set ls = {0};
    if (replay_label_set_add(&ls, r->samples, r->nsamples)) {
        replay_label_set_free(&ls);
        return NULL;
    }
    json_t *labels = json_object();
    for (size_t l = 0; labels && l < ls.nlabels; l++)
        json_object_set_new(labels, plan_string(p, ls.label_ids[l]),
                            duet_side_summary(ls.values[l], ls.counts[l]));
    json_t *it = json_pack("{s:I, s:I, s:f, s:o, s:o}", "requests", (json_int_t)r->nsamples,
                           "failed", (json_int_t)r->failed, "elapsed_s", r->elapsed_s, "all",
                           duet_side_summary(ls.all, ls.nall), "labels", labels);
    replay_label_set_free(&ls);
    return it;
}

/* The slice, once: restore, reset the replayers' counters, drive. */
static int duet_side_drive(struct duet_side_state *st, long iv, json_t *iterations)
{
    const struct duet_config *c = st->sd->cfg;
    struct run_session *s = st->s;
    char err[1024];
    struct replay_drive_options o = {.plan = s->p,
                                     .target = s->children[s->frontend].addr,
                                     .token = s->token,
                                     .mode = REPLAY_DRIVE_INDEPENDENT,
                                     .speed = c->speed,
                                     .duration_s = c->slice_len > 0 ? c->slice_len / c->speed : 0,
                                     .schedule_from_s = c->slice_from,
                                     .should_abort = duet_side_should_stop,
                                     .abort_arg = st};
    struct replay_drive_result r;
    if (replay_drive_run(&o, &r, err, sizeof err)) {
        fprintf(stderr, "duet: side %s, run %ld, iteration %ld: %s\n", st->sd->name, st->sd->run,
                iv, err);
        return -1;
    }
    int rc = -1;
    if (!r.aborted && !run_session_check_children(s)) {
        json_t *it = duet_side_iteration(s->p, &r);
        rc = it ? json_array_append_new(iterations, it) : -1;
    }
    replay_drive_result_free(&r);
    return rc;
}

/* Before each iteration, outside the measurement: the starting state. */
static int duet_side_restore(struct duet_side_state *st, long iv)
{
    struct run_session *s = st->s;
    char err[1024];
    double files_s, db_s;
    if (run_session_restore(s, iv, &files_s, &db_s, err, sizeof err))
        return -1;
    for (uint32_t i = 0; i < s->nchildren; i++)
        free(run_session_control(s, i, REPLAY_BLOCK_RESET, err, sizeof err));
    return 0;
}

/* Every iteration (warm-up ones too; the controller drops those). */
static int duet_side_iterations(struct duet_side_state *st, json_t *iterations)
{
    const struct duet_side *sd = st->sd;
    const struct duet_config *c = sd->cfg;
    long n = c->warmup + c->iterations;
    for (long iv = 0; iv < n; iv++) {
        if (duet_side_restore(st, iv + 1))
            return -1;
        if (duet_barrier_wait(sd->barrier, duet_side_should_stop, st))
            return -1;
        if (!c->sequential) {
            /* and wait for the other to finish too: its restore (file
             * rewrites, syncfs, DB reload) must not overlap our drive */
            if (duet_side_drive(st, iv + 1, iterations) ||
                duet_barrier_wait(sd->barrier, duet_side_should_stop, st))
                return -1;
            continue;
        }
        /* sequential: first[iv] is the role that goes first */
        int mine_first = sd->first[iv] == sd->role;
        if (!mine_first && duet_barrier_wait(sd->barrier, duet_side_should_stop, st))
            return -1;
        if (duet_side_drive(st, iv + 1, iterations))
            return -1;
        if (duet_barrier_wait(sd->barrier, duet_side_should_stop, st))
            return -1;
        if (mine_first && duet_barrier_wait(sd->barrier, duet_side_should_stop, st))
            return -1;
    }
    return 0;
}

int duet_side_main(const struct duet_side *sd)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sd->cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("duet: sched_setaffinity");
        duet_barrier_abort(sd->barrier);
        return 1;
    }
    char ratio[32];
    snprintf(ratio, sizeof ratio, "%.6f", sd->ratio);
    struct run_config rc = {.plan_path = sd->plan_path,
                            .out = sd->out_path,
                            .db_url = sd->db_url,
                            .db_password_file = sd->cfg->db_password_file,
                            .instance = "",
                            .pool = sd->cfg->pool,
                            .p0 = 0.9,
                            .speed = sd->cfg->speed,
                            .ratio = sd->ratio,
                            .ratio_given = 1,
                            .max_intervals = 1,
                            .mode = REPLAY_DRIVE_INDEPENDENT};
    struct run_session s;
    if (run_session_open(&s, &rc)) {
        duet_barrier_abort(sd->barrier);
        return 1;
    }
    struct duet_side_state st = {sd, &s};
    json_t *iterations = json_array();
    int status = 1;
    if (!run_session_start(&s) && !duet_side_iterations(&st, iterations)) {
        json_t *doc = json_pack("{s:s, s:i, s:O}", "side", sd->name, "cpu", sd->cpu, "iterations",
                                iterations);
        status = !doc || json_dump_file(doc, sd->out_path, JSON_COMPACT) ? 1 : 0;
        json_decref(doc);
    }
    /* logs are kept (and named) when this side failed by itself; a side
     * stopped because the other failed or a signal came leaves nothing */
    int keep =
        status && (s.dead || !(atomic_load(&sd->barrier->abort) || run_session_interrupted()));
    if (status) {
        if (s.dead)
            run_session_print_death(&s, "", json_array_size(iterations) + 1);
        duet_barrier_abort(sd->barrier);
    }
    json_decref(iterations);
    run_session_close(&s, keep ? status : 0);
    return status;
}
