/* run_cli.c - `preplay run PLAN -o RESULTS`: the controller's interval
 * loop. After the session started every replayer (run_session.c; options
 * in run_config.c), it runs interval after interval (restore files and DB,
 * drive the schedule, collect each replayer's counters) feeding the
 * response times to the PT4Cloud machine until it says stop or
 * --max-intervals. A replayer that dies, or Ctrl-C (SIGINT/SIGTERM), stops
 * the run: results so far are written (formats/results.h), with the
 * replayer's name or the signal. Never starts or stops anything itself:
 * the session owns every child, file and handler, and closes them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayer_cli.h"
#include "replay_drive.h"
#include "replay_proto.h"
#include "replay_results.h"
#include "results_bands.h"
#include "results_writer.h"
#include "run_config.h"
#include "run_counters.h"
#include "run_placement.h"
#include "run_session.h"
#include "stats.h"

enum run_step { RUN_STEP_OK, RUN_STEP_FAILED, RUN_STEP_REMOTE_FAILED };

/* The progress line of interval iv: its requests, the part of the
 * schedule it covered, the overall p and the p of the label holding the
 * run open (overwritten in place on a terminal). */
static void run_interval_print(const struct run_session *s, long iv,
                               const struct replay_drive_result *r, const struct stats_step *step)
{
    char pbuf[32] = "n/a", held[STATS_LABEL_LEN + 48] = "";
    int fed = step != NULL;
    if (fed && step->compared)
        snprintf(pbuf, sizeof pbuf, "%.3f", step->p);
    if (fed && !strcmp(step->held_open_by, "(overall)"))
        snprintf(held, sizeof held, ", held open by (overall)");
    else if (fed && step->held_open_by[0])
        snprintf(held, sizeof held, ", held open by %s (p %.3f)", step->held_open_by, step->min_p);
    fprintf(stderr,
            "%sinterval %ld of %ld: %zu requests (%llu failed), schedule %.1f-%.1f s of %.1f s, "
            "p %s%s%s",
            s->tty ? "\r" : "", iv, s->cfg->max_intervals, r->nsamples,
            (unsigned long long)r->failed, r->schedule_from_s, r->schedule_to_s, r->schedule_s,
            pbuf, held, s->tty ? "\033[K" : "\n");
}

/* One interval's successful response times, overall and per label, to
 * PT4Cloud; its samples and its entry in the results; the progress line.
 * 0, or -1 with the reason printed. */
static int run_interval_feed(struct run_session *s, long iv, const struct replay_drive_result *r,
                             double length_s, int *stopped)
{
    const struct plan *p = s->p;
    char err[1024] = "";
    struct replay_label_set ls = {0};
    if (replay_label_set_add(&ls, r->samples, r->nsamples) ||
        replay_label_set_add(&s->all, r->samples, r->nsamples) ||
        run_failures_add(&s->failures, r->samples, r->nsamples) ||
        replay_results_samples(s->samples, p, r->samples, r->nsamples, (int)iv)) {
        replay_label_set_free(&ls);
        fprintf(stderr, "run: out of memory\n");
        return -1;
    }
    struct stats_label_samples *lab = calloc(ls.nlabels ? ls.nlabels : 1, sizeof *lab);
    for (size_t l = 0; lab && l < ls.nlabels; l++)
        lab[l] = (struct stats_label_samples){plan_string(p, ls.label_ids[l]), ls.values[l],
                                              ls.counts[l]};
    struct stats_step step;
    int fed = lab && !stats_machine_feed(s->m, ls.all, ls.nall, lab, ls.nlabels, &step, err);
    struct results_interval ri = {.interval = iv,
                                  .requests = r->nsamples,
                                  .failed = r->failed,
                                  .length_s = length_s,
                                  .schedule_from_s = r->schedule_from_s,
                                  .schedule_to_s = r->schedule_to_s,
                                  .lateness = replay_results_lateness(r->samples, r->nsamples),
                                  .fed = fed};
    if (fed) {
        ri.compared = step.compared;
        ri.p = step.p;
        ri.action = stats_action_name(step.action);
        ri.held_open_by = step.held_open_by;
        *stopped = step.action == STATS_STOP;
        s->last = step;
    }
    json_array_append_new(s->intervals, results_interval_json(&ri));
    run_interval_print(s, iv, r, fed ? &step : NULL);
    free(lab);
    replay_label_set_free(&ls);
    if (!fed) {
        fprintf(stderr, "%srun: interval %ld: %s\n", s->tty ? "\n" : "", iv, err);
        return -1;
    }
    return 0;
}

/* Where the next interval starts: an interval shorter than one pass
 * continues the schedule where this one stopped, so the run covers the
 * whole recording; one at least a pass long starts at its beginning, so
 * every interval replays the same workload. */
static void run_schedule_advance(struct run_session *s, const struct replay_drive_result *r)
{
    uint64_t covered = (uint64_t)llround((r->schedule_to_s - r->schedule_from_s) * 1e9);
    if (covered >= s->schedule_ns)
        s->schedule_at_ns = 0;
    else
        s->schedule_at_ns = (s->schedule_at_ns + covered) % s->schedule_ns;
}

/* What a replayer's STATS answer says went wrong in the interval: calls
 * to other components, file operations and DB connections that failed
 * (formats/REPLAY-PROTOCOL.md), added to the run's sums. */
static void run_errors_add(struct run_session *s, const char *stats)
{
    json_t *st = json_loads(stats, 0, NULL);
    if (!st)
        return;
    s->call_errors += (uint64_t)json_integer_value(json_object_get(st, "call_errors"));
    s->file_errors += (uint64_t)json_integer_value(json_object_get(st, "file_errors"));
    s->db_unavailable += (uint64_t)json_integer_value(json_object_get(st, "db_unavailable"));
    json_decref(st);
}

/* The driver's options for the run's plan and front end: duration_s of
 * the schedule from schedule_from_s, aborted when a replayer dies or the
 * run is interrupted. Shared by the warm-up and every interval. */
static struct replay_drive_options run_drive_options(struct run_session *s, double duration_s,
                                                     double schedule_from_s)
{
    return (struct replay_drive_options){.plan = s->p,
                                         .target = s->children[s->frontend].addr,
                                         .token = s->token,
                                         .mode = s->cfg->mode,
                                         .speed = s->cfg->speed,
                                         .duration_s = duration_s,
                                         .schedule_from_s = schedule_from_s,
                                         .should_abort = run_session_check_children,
                                         .abort_arg = s};
}

/* One interval: the same starting state everywhere, the schedule driven
 * for the machine's interval length, every replayer's counters. */
static enum run_step run_interval(struct run_session *s, long iv, int *stopped, char *err,
                                  size_t errlen)
{
    double files_s, db_s;
    int st = run_session_restore(s, iv, &files_s, &db_s, err, errlen);
    if (st)
        return st == RUN_REMOTE_FAILED ? RUN_STEP_REMOTE_FAILED : RUN_STEP_FAILED;
    results_restore_append(s->restores, iv, files_s, db_s);
    for (uint32_t i = 0; i < s->nchildren; i++)
        free(run_session_control(s, i, REPLAY_BLOCK_RESET, err, errlen));
    if (s->counters)
        run_counters_begin(s->counters, iv);
    struct replay_drive_options o =
        run_drive_options(s, stats_machine_interval_length(s->m), (double)s->schedule_at_ns / 1e9);
    struct replay_drive_result r;
    if (replay_drive_run(&o, &r, err, errlen)) {
        fprintf(stderr, "run: interval %ld: %s\n", iv, err);
        return RUN_STEP_FAILED;
    }
    run_schedule_advance(s, &r);
    if (!r.realtime && !s->said_priority) {
        s->said_priority = 1;
        fprintf(stderr, "run: %s\n", REPLAY_DRIVE_NOT_REALTIME);
    }
    if (s->counters && run_counters_end(s->counters, s->p, r.samples, r.nsamples))
        fprintf(stderr, "run: interval %ld: out of memory for its counters\n", iv);
    enum run_step rc = RUN_STEP_FAILED;
    if (r.aborted || run_session_check_children(s))
        goto out;
    for (uint32_t i = 0; i < s->nchildren; i++) {
        char *stats = run_session_control(s, i, REPLAY_BLOCK_STATS, err, errlen);
        if (stats) {
            results_resources_add(s->resources, s->db_errors, &s->db_cut, s->children[i].name,
                                  stats);
            run_errors_add(s, stats);
        }
        free(stats);
    }
    if (!run_interval_feed(s, iv, &r, o.duration_s, stopped))
        rc = RUN_STEP_OK;
out:
    replay_drive_result_free(&r);
    return rc;
}

/* --warmup: the schedule driven from its start for that long with the
 * replayers' state as the run prepared it, the responses thrown away, so
 * that the first interval does not pay for opening connections and pools
 * and filling caches, which the application it stands for paid long ago.
 * The first interval then restores the state and RESETs every replayer
 * like every other, and starts at the schedule's start. Failures are
 * counted and said, not judged. */
static enum run_step run_warmup(struct run_session *s, char *err, size_t errlen)
{
    if (!(s->cfg->warmup > 0))
        return RUN_STEP_OK;
    struct replay_drive_options o = run_drive_options(s, s->cfg->warmup, 0);
    struct replay_drive_result r;
    if (replay_drive_run(&o, &r, err, errlen)) {
        fprintf(stderr, "run: warm-up: %s\n", err);
        return RUN_STEP_FAILED;
    }
    enum run_step rc = r.aborted || run_session_check_children(s) ? RUN_STEP_FAILED : RUN_STEP_OK;
    s->warmup_s = r.elapsed_s > 0 ? r.elapsed_s : s->cfg->warmup;
    s->warmup_requests = r.nsamples;
    s->warmup_failed = r.failed;
    if (rc == RUN_STEP_OK)
        fprintf(stderr, "run: warm-up: %zu requests (%llu failed) in %.1f s, not counted\n",
                r.nsamples, (unsigned long long)r.failed, s->warmup_s);
    replay_drive_result_free(&r);
    return rc;
}

/* run_counters_stats_fn: every replayer's lock wait, DB time and DB
 * statements since its RESET (their STATS answer), summed. */
static int run_counters_stats(void *arg, double *lock_s, double *db_s, double *db_queries)
{
    struct run_session *s = arg;
    char err[256];
    int answered = 0;
    *lock_s = *db_s = *db_queries = 0;
    for (uint32_t i = 0; i < s->nchildren; i++) {
        char *text = run_session_control(s, i, REPLAY_BLOCK_STATS, err, sizeof err);
        json_t *st = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
        if (!st)
            continue;
        answered++;
        *db_queries += json_number_value(json_object_get(st, "db_queries"));
        const char *label;
        json_t *v;
        json_object_foreach(json_object_get(st, "labels"), label, v)
        {
            *lock_s += json_number_value(json_object_get(v, "lock_s"));
            *db_s += json_number_value(json_object_get(v, "db_s"));
        }
        json_decref(st);
    }
    return answered ? 0 : -1;
}

/* The counters' sampler over the run's local replayers, unless --window
 * 0. 0, or -1 with the reason printed. */
static int run_counters_start(struct run_session *s)
{
    if (!(s->cfg->window > 0))
        return 0;
    pid_t *pids = calloc(s->nchildren ? s->nchildren : 1, sizeof *pids);
    size_t n = 0;
    for (uint32_t i = 0; pids && i < s->nchildren; i++)
        if (!s->children[i].remote && s->children[i].pid > 0)
            pids[n++] = s->children[i].pid;
    s->counters = pids ? run_counters_new(s->cfg->window, pids, n, run_counters_stats, s) : NULL;
    free(pids);
    if (!s->counters) {
        fprintf(stderr, "run: cannot start the counters' sampler (out of memory or threads)\n");
        return -1;
    }
    return 0;
}

/* The PT4Cloud loop: 0 when it ran to its end (stable or
 * --max-intervals), 1 when something stopped it (said, or a death or
 * signal the caller reports). */
static int run_loop(struct run_session *s)
{
    char err[1024] = "";
    int stopped = 0;
    if (run_warmup(s, err, sizeof err) != RUN_STEP_OK || run_counters_start(s))
        return 1;
    for (long iv = 1; iv <= s->cfg->max_intervals && !stopped; iv++) {
        if (run_session_interrupted())
            return 1;
        enum run_step st = run_interval(s, iv, &stopped, err, sizeof err);
        if (st == RUN_STEP_REMOTE_FAILED) {
            /* a host that stopped answering: a death if its session ended */
            if (!run_session_check_children(s))
                fprintf(stderr, "run: %s\n", err);
            return 1;
        }
        if (st == RUN_STEP_FAILED)
            return 1;
    }
    if (s->tty)
        fprintf(stderr, "\n");
    return 0;
}

/* The results document of the session so far, written to -o. 0 or -1
 * with the reason printed. */
static int run_results_write(struct run_session *s, int sig)
{
    const struct run_config *cfg = s->cfg;
    size_t error_len = s->dead ? strlen(s->dead) + 32 : 1;
    char *error = malloc(error_len), err[1024];
    if (!error) {
        fprintf(stderr, "run: out of memory building results\n");
        return -1;
    }
    snprintf(error, error_len, "replayer '%s' died", s->dead ? s->dead : "");
    json_t *hosts = s->nremote ? json_object() : NULL;
    for (uint32_t i = 0; hosts && i < s->nchildren; i++)
        if (s->children[i].remote)
            results_host_set(hosts, s->children[i].name, s->children[i].host_text,
                             s->children[i].addr, run_remote_client_ip(s->children[i].remote),
                             run_remote_dir(s->children[i].remote));
    const struct run_child *fe = &s->children[s->frontend];
    json_t *placement =
        run_placement_json(fe->remote || fe->exited ? 0 : fe->pid, cfg->db_url ? s->db.host : NULL,
                           s->db.port, s->db.socket);
    struct results_run doc = {.plan = cfg->plan_path,
                              .recording_id = s->p->recording_id,
                              .instance = cfg->instance,
                              .mode = cfg->mode == REPLAY_DRIVE_SESSION ? "session" : "independent",
                              .scale = cfg->log_scale ? "log" : "linear",
                              .error = sig       ? "interrupted"
                                       : s->dead ? error
                                                 : NULL,
                              .price = cfg->price,
                              .speed = cfg->speed,
                              .cpu_ratio = s->ratio,
                              .cpu_ratio_lo = s->ratio_lo,
                              .cpu_ratio_hi = s->ratio_hi,
                              .p0 = cfg->p0,
                              .schedule_s = (double)s->schedule_ns / 1e9,
                              .schedule_requests = s->p->nrequests,
                              .no_deps = cfg->no_deps,
                              .stopped = s->m && stats_machine_stopped(s->m),
                              .hosts = hosts,
                              .placement = placement,
                              .counters = s->counters ? run_counters_json(s->counters) : NULL,
                              .labels = replay_results_labels(s->p, &s->all, 1),
                              .intervals = s->intervals,
                              .resources = s->resources,
                              .db_errors = s->db_errors,
                              .db_cut = s->db_cut,
                              .samples = s->samples,
                              .db_method = !s->have_db ? "none"
                                           : s->db.pg  ? "pg_dump, reloaded with pg_restore --clean"
                                                       : "mariadb-dump, reloaded with mariadb",
                              .db_dump_s = s->dump_s,
                              .restores = s->restores,
                              .warmup_s = s->warmup_s,
                              .warmup_requests = s->warmup_requests,
                              .warmup_failed = s->warmup_failed};
    s->intervals = s->resources = s->db_errors = s->restores = s->samples = NULL;
    json_t *root = results_run_json(&doc);
    results_widen_ratio_bands(root); /* the bands hold the CPU ratio's interval */
    free(error);
    int rc = 0;
    if (!root)
        snprintf(err, sizeof err, "out of memory building results");
    if (!root || results_save(root, cfg->out, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        rc = -1;
    }
    json_decref(root);
    return rc;
}

/* The last line of a run that ran to its end: stable after how many
 * intervals and how many labels were judged, or what held it open. */
static void run_summary_print(const struct run_session *s)
{
    const struct stats_step *st = &s->last;
    const char *ivs = st->interval == 1 ? "interval" : "intervals";
    if (st->action == STATS_STOP)
        fprintf(stderr, "stable after %d %s, %d of %zu labels judged, wrote %s\n", st->interval,
                ivs, st->labels_judged, s->all.nlabels, s->cfg->out);
    else if (!st->compared)
        fprintf(stderr,
                "not stable after %d %s: nothing to compare yet (the stop rule compares from "
                "interval 2), wrote %s\n",
                st->interval, ivs, s->cfg->out);
    else if (!strcmp(st->held_open_by, "(overall)"))
        fprintf(stderr, "not stable after %d %s: overall p=%.3f, wrote %s\n", st->interval, ivs,
                st->p, s->cfg->out);
    else
        fprintf(stderr, "not stable after %d %s: label %s p=%.3f, wrote %s\n", st->interval, ivs,
                st->held_open_by, st->min_p, s->cfg->out);
}

/* The requests that failed, per label and why, and what the replayers
 * could not do; 1 when the failed requests exceed --max-failed (which
 * decides the exit status when `ended`: the run ran to its end). */
static int run_failures_report(struct run_session *s, int ended)
{
    const struct run_config *cfg = s->cfg;
    int over = run_failures_exceed(&s->failures, cfg->max_failed, cfg->max_failed_pct);
    char *text = run_failures_text(&s->failures, s->p);
    if (s->failures.failed)
        fprintf(stderr, "run: %s; %s --max-failed %g%s%s\n",
                text ? text : "requests failed (out of memory naming them)",
                over ? "more than" : "within", cfg->max_failed, cfg->max_failed_pct ? "%" : "",
                over && ended ? " (exit status 3)" : "");
    free(text);
    uint64_t n[4] = {s->call_errors, s->file_errors, s->db_unavailable, 0};
    for (size_t i = 0; i < json_array_size(s->db_errors); i++)
        n[3] +=
            (uint64_t)json_integer_value(json_object_get(json_array_get(s->db_errors, i), "count"));
    static const char *const what[4] = {"calls to other components", "file operations",
                                        "DB connections", "DB statements"};
    int said = 0;
    for (int k = 0; k < 4; k++)
        if (n[k])
            fprintf(stderr, "%s%llu %s",
                    said++ ? ", " : "run: the replay did not do all the recorded work: ",
                    (unsigned long long)n[k], what[k]);
    if (said)
        fprintf(stderr, " failed%s\n", n[3] ? " (db_errors in the results)" : "");
    return over;
}

/* How the run ended (a signal, a dead replayer), then the results: the
 * exit status (128 + signal, 1 for a death or a failure, 3 for more failed
 * requests than --max-failed, else rc). */
static int run_finish(struct run_session *s, int rc)
{
    int sig = run_session_interrupted();
    size_t interval = json_array_size(s->intervals) + 1;
    if (sig) {
        fprintf(stderr,
                "%srun: interrupted by signal %d during interval %zu: results so far kept\n",
                s->tty ? "\n" : "", sig, interval);
        s->dead = NULL;
        rc = 128 + sig;
    } else if (s->dead) {
        run_session_print_death(s, s->tty ? "\n" : "", interval);
        rc = 1;
    }
    if (s->db_cut)
        fprintf(stderr,
                "run: %llu DB statements were recorded cut (longer than the recording's "
                "--db-max-statement) and replayed as waits of their recorded time, not as SQL\n",
                (unsigned long long)s->db_cut);
    int over = run_failures_report(s, !rc);
    if (run_results_write(s, sig))
        rc = 1;
    else if (!rc && s->last.interval)
        run_summary_print(s);
    return !rc && over ? RUN_EXIT_FAILED : rc;
}

int cmd_run(int argc, char **argv)
{
    struct run_config cfg;
    struct run_session s;
    int rc;
    if (run_config_parse(argc, argv, &cfg, &rc))
        return rc;
    if (run_session_open(&s, &cfg))
        return 1;
    rc = 1;
    if (!run_session_start(&s))
        rc = run_finish(&s, run_loop(&s));
    run_counters_free(s.counters); /* its thread asks the replayers: before they stop */
    run_session_close(&s, rc);
    return rc;
}
