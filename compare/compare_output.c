/* compare_output.c - the verdict of `preplay compare` as a table for people
 * (stdout) and as JSON for tools (--json). Only formatting: every number
 * was decided by compare_analyze. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "compare_placement.h"

static json_t *compare_json_num(double x)
{
    return isnan(x) ? json_null() : json_real(x);
}

static json_t *compare_json_stat(const struct compare_stat *s)
{
    return json_pack("[f, f]", s->lo, s->hi);
}

static json_t *compare_json_tristate(int x)
{
    return x < 0 ? json_null() : json_boolean(x);
}

/* The run's problems, whether it was ranked and why not. */
static void compare_json_trust(json_t *o, const struct compare_run *r,
                               const struct compare_options *opt)
{
    json_t *problems = json_array();
    for (size_t k = 0; k < r->nproblems; k++)
        json_array_append_new(problems, json_string(r->problems[k]));
    json_object_set_new(o, "problems", problems);
    json_object_set_new(o, "ranked", json_boolean(r->ranked));
    json_object_set_new(o, "ranked_reason",
                        !r->nproblems ? json_null()
                        : opt->allow_failed
                            ? json_string("the replay failed; ranked anyway (--allow-failed)")
                            : json_string("the replay failed; --allow-failed ranks it"));
}

/* One label of one run: numbers, p against the recording and whether the
 * verdict can vouch for it. */
static json_t *compare_json_label(const struct compare_label *lab)
{
    static const char *const keys[COMPARE_NMETRICS] = {"median_s", "p95_s", "p99_s"};
    static const char *const ci_keys[COMPARE_NMETRICS] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    json_t *x = json_object();
    json_object_set_new(x, "count", json_integer((json_int_t)lab->count));
    for (int m = 0; m < COMPARE_NMETRICS; m++) {
        json_object_set_new(x, keys[m], json_real(lab->stat[m].value));
        json_object_set_new(x, ci_keys[m], compare_json_stat(&lab->stat[m]));
    }
    json_object_set_new(x, "p_recording", compare_json_num(lab->p_recording));
    json_object_set_new(x, "stop_rule_samples",
                        lab->judged < 0 ? json_null() : json_integer((json_int_t)lab->stop_rule_n));
    json_object_set_new(x, "judged_by_stop_rule", compare_json_tristate(lab->judged));
    json_object_set_new(x, "resembles_recording",
                        isnan(lab->p_recording) ? json_null()
                                                : json_boolean(!lab->unlike_recording));
    return x;
}

/* verdict.not_judged, verdict.flagged_blocks and the thresholds behind them. */
static void compare_json_not_judged(json_t *verdict, const struct compare_run *runs, size_t nruns,
                                    const struct compare_recording *rec)
{
    json_t *nj = json_array(), *flagged = json_array();
    for (size_t i = 0; i < nruns; i++)
        for (size_t l = 0; l < runs[i].nlabels; l++) {
            const struct compare_label *lab = &runs[i].labels[l];
            if (!lab->judged)
                json_array_append_new(nj, json_pack("{s:s, s:s, s:s}", "instance", runs[i].instance,
                                                    "label", lab->name, "why",
                                                    "below the stop rule's sample minimum"));
            if (lab->unlike_recording)
                json_array_append_new(nj, json_pack("{s:s, s:s, s:s}", "instance", runs[i].instance,
                                                    "label", lab->name, "why",
                                                    "does not resemble the recording"));
        }
    for (size_t i = 0; rec && i < rec->nflagged_labels; i++)
        json_array_append_new(flagged, json_pack("{s:s, s:I}", "label", rec->flagged_labels[i],
                                                 "blocks", (json_int_t)rec->nflagged[i]));
    json_object_set_new(verdict, "not_judged", nj);
    json_object_set_new(verdict, "flagged_blocks", flagged);
    json_object_set_new(verdict, "thresholds",
                        json_pack("{s:I, s:f}", "min_samples",
                                  (json_int_t)compare_trust_min_samples(), "resemble_p",
                                  COMPARE_RESEMBLE_P));
}

json_t *compare_json(const struct compare_run *runs, size_t nruns,
                     const struct compare_recording *rec, const struct compare_options *opt,
                     const struct compare_verdict *v)
{
    json_t *root = json_object(), *instances = json_array(), *labels = json_array();
    for (size_t l = 0; l < v->nlabels; l++)
        json_array_append_new(labels, json_string(v->labels[l]));
    for (size_t i = 0; i < nruns; i++) {
        const struct compare_run *r = &runs[i];
        json_t *o = json_object(), *lo = json_object(), *eq = json_array();
        json_object_set_new(o, "name", json_string(r->instance));
        json_object_set_new(o, "file", json_string(r->path));
        json_object_set_new(o, "price_per_hour", compare_json_num(r->price_per_hour));
        json_object_set_new(o, "requests", json_integer((json_int_t)r->requests_ok));
        json_object_set_new(o, "failed", json_integer((json_int_t)r->failed));
        json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
        json_object_set_new(o, "requests_per_hour", compare_json_num(r->requests_per_hour));
        json_object_set_new(o, "cost_per_million", compare_json_num(r->cost_per_million));
        json_t *stop = json_object();
        json_object_set_new(stop, "applies", json_boolean(r->has_stop_rule));
        json_object_set_new(stop, "met", json_boolean(r->stopped));
        json_object_set_new(stop, "intervals", json_integer((json_int_t)r->nintervals));
        json_object_set_new(stop, "p0", json_real(r->p0));
        json_object_set_new(stop, "note", json_string(r->stop_note));
        json_object_set_new(o, "stop_rule", stop);
        json_object_set_new(o, "meets_slo", json_boolean(r->meets_slo));
        json_object_set_new(o, "slo_failure", json_string(r->slo_failure ? r->slo_failure : ""));
        json_object_set_new(o, "tier", r->ranked ? json_integer(r->tier) : json_null());
        compare_json_trust(o, r, opt);
        json_object_set_new(o, "placement", compare_placement_json(&r->placement));
        json_object_set_new(o, "score_s", compare_json_num(r->score));
        for (size_t j = 0; j < nruns; j++)
            if (j != i && v->equivalent[i * nruns + j])
                json_array_append_new(eq, json_string(runs[j].instance));
        json_object_set_new(o, "equivalent_to", eq);
        for (size_t l = 0; l < r->nlabels; l++)
            json_object_set_new(lo, r->labels[l].name, compare_json_label(&r->labels[l]));
        json_object_set_new(o, "labels", lo);
        json_t *res = json_object();
        for (size_t k = 0; k < r->nresources; k++) {
            json_t *g = json_object();
            for (int q = 0; q < COMPARE_NRES; q++)
                json_object_set_new(g, compare_resource_names[q], json_real(r->resources[k].s[q]));
            json_object_set_new(res, r->resources[k].group, g);
        }
        json_object_set_new(o, "resource_s_per_block", res);
        json_array_append_new(instances, o);
    }
    json_object_set_new(root, "instances", instances);
    json_object_set_new(root, "labels", labels);
    json_t *slos = json_array();
    for (size_t s = 0; s < opt->nslos; s++)
        json_array_append_new(slos, json_pack("{s:s, s:s, s:s, s:f}", "slo", opt->slos[s].text,
                                              "metric", compare_metric_names[opt->slos[s].metric],
                                              "op", opt->slos[s].inclusive ? "<=" : "<", "limit_s",
                                              opt->slos[s].limit_s));
    json_t *slo_labels = json_array();
    for (size_t s = 0; s < opt->nslo_labels; s++)
        json_array_append_new(slo_labels, json_string(opt->slo_labels[s]));
    json_t *verdict = json_object(), *meeting = json_array(), *tiers = json_array();
    for (size_t i = 0; i < nruns; i++)
        if (v->meets[i])
            json_array_append_new(meeting, json_string(runs[i].instance));
    for (int t = 1;; t++) {
        json_t *tier = json_array();
        for (size_t i = 0; i < nruns; i++)
            if (runs[i].tier == t)
                json_array_append_new(tier, json_string(runs[i].instance));
        if (!json_array_size(tier)) {
            json_decref(tier);
            break;
        }
        json_array_append_new(tiers, tier);
    }
    json_object_set_new(verdict, "slos", slos);
    json_object_set_new(verdict, "slo_labels", slo_labels);
    json_object_set_new(verdict, "equivalent_p", json_real(opt->equivalent_p));
    json_object_set_new(verdict, "meeting", meeting);
    json_object_set_new(verdict, "tiers", tiers);
    json_object_set_new(verdict, "recommended",
                        v->recommended == (size_t)-1 ? json_null()
                                                     : json_string(runs[v->recommended].instance));
    json_object_set_new(verdict, "reason", json_string(v->reason));
    json_object_set_new(verdict, "caveats", json_string(v->caveats ? v->caveats : ""));
    json_object_set_new(verdict, "allow_failed", json_boolean(opt->allow_failed));
    json_t *not_ranked = json_array();
    for (size_t i = 0; i < nruns; i++)
        if (!runs[i].ranked)
            json_array_append_new(not_ranked, json_string(runs[i].instance));
    json_object_set_new(verdict, "not_ranked", not_ranked);
    compare_json_not_judged(verdict, runs, nruns, rec);
    json_object_set_new(root, "verdict", verdict);
    if (rec)
        json_object_set_new(root, "recording",
                            json_pack("{s:s, s:s, s:I, s:f}", "plan", rec->path, "recording_id",
                                      rec->recording_id, "requests", (json_int_t)rec->nrequests,
                                      "span_s", rec->span_s));
    return root;
}

/* Before any number: one line per run whose replay failed. */
static void compare_print_problems(FILE *out, const struct compare_run *runs, size_t nruns,
                                   const struct compare_options *opt)
{
    int any = 0;
    for (size_t i = 0; i < nruns; i++) {
        char *line = compare_trust_problem_line(&runs[i]);
        if (!line)
            continue;
        if (!any++)
            fprintf(out, "Replays that failed (%s):\n",
                    opt->allow_failed ? "ranked anyway, --allow-failed"
                                      : "not ranked; --allow-failed ranks them");
        fprintf(out, "%s\n", line);
        free(line);
    }
    if (any)
        fprintf(out, "\n");
}

static void compare_print_stat(FILE *out, const struct compare_stat *s)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.3g [%.3g, %.3g]", s->value * 1e3, s->lo * 1e3, s->hi * 1e3);
    fprintf(out, "  %-24s", buf);
}

void compare_print_table(FILE *out, const struct compare_run *runs, size_t nruns,
                         const struct compare_recording *rec, const struct compare_options *opt,
                         const struct compare_verdict *v)
{
    compare_print_problems(out, runs, nruns, opt);
    fprintf(out, "Response times per label (ms, value [99%% band])%s\n",
            rec ? ", p = PT4Cloud similarity to the recording" : "");
    fprintf(out, "%-16s %-20s %7s  %-24s  %-24s  %-24s%s\n", "instance", "label", "count", "median",
            "p95", "p99", rec ? "  p(rec)" : "");
    for (size_t i = 0; i < nruns; i++)
        for (size_t l = 0; l < runs[i].nlabels; l++) {
            const struct compare_label *lab = &runs[i].labels[l];
            fprintf(out, "%-16.16s %-20.20s %7zu", runs[i].instance, lab->name, lab->count);
            for (int m = 0; m < COMPARE_NMETRICS; m++)
                compare_print_stat(out, &lab->stat[m]);
            if (rec && !isnan(lab->p_recording))
                fprintf(out, "  %.3f", lab->p_recording);
            else if (rec)
                fprintf(out, "  -");
            fprintf(out, "\n");
        }
    fprintf(out, "\nVerdict");
    for (size_t s = 0; s < opt->nslos; s++)
        fprintf(out, "%s%s", s ? ", " : " (SLO ", opt->slos[s].text);
    if (opt->nslos)
        fprintf(out, " on the pessimistic band edge%s)", opt->nslo_labels ? ", some labels" : "");
    fprintf(out, "\n%-16s %8s %10s %9s  %-18s %4s  %s\n", "instance", "$/hour", "req/hour",
            "$/M req", "stop rule", "tier", "SLO");
    for (size_t i = 0; i < nruns; i++) {
        const struct compare_run *r = &runs[i];
        char price[32] = "-", rph[32] = "-", cost[32] = "-", stop[32];
        if (!isnan(r->price_per_hour))
            snprintf(price, sizeof price, "%.4g", r->price_per_hour);
        if (!isnan(r->requests_per_hour))
            snprintf(rph, sizeof rph, "%.0f", r->requests_per_hour);
        if (!isnan(r->cost_per_million))
            snprintf(cost, sizeof cost, "%.4g", r->cost_per_million);
        if (!r->has_stop_rule)
            snprintf(stop, sizeof stop, "n/a (drive)");
        else
            snprintf(stop, sizeof stop, "%s (%zu int.)", r->stopped ? "met" : "CUT SHORT",
                     r->nintervals);
        char tier[16] = "-";
        if (r->ranked)
            snprintf(tier, sizeof tier, "%d", r->tier);
        fprintf(out, "%-16.16s %8s %10s %9s  %-18s %4s  %s", r->instance, price, rph, cost, stop,
                tier, r->meets_slo ? "meets" : "fails: ");
        if (!r->meets_slo)
            fprintf(out, "%s", r->slo_failure);
        int first = 1;
        for (size_t j = 0; j < nruns; j++)
            if (j != i && v->equivalent[i * nruns + j]) {
                fprintf(out, "%s%s", first ? "  (equivalent to " : ", ", runs[j].instance);
                first = 0;
            }
        fprintf(out, "%s%s%s\n", first ? "" : ")", i == v->recommended ? "  <= recommended" : "",
                r->ranked ? "" : "  NOT RANKED (replay failed)");
    }
    fprintf(out, "=> %s%s%s\n", v->reason, v->caveats && v->caveats[0] ? ". " : "",
            v->caveats ? v->caveats : "");
}
