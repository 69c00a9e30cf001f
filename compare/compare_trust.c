/* compare_trust.c - what the verdict of `preplay compare` cannot vouch for
 * (docs/preplay-compare.md "What the verdict does not vouch for"):
 *  - a run whose replay failed (requests that failed, queries the database
 *    refused, labels of the plan it never replayed successfully) is not
 *    ranked unless --allow-failed: its numbers describe a different load;
 *  - a label the stop rule never judged (fewer than its sample minimum in
 *    the last comparison), a label whose replay does not resemble the
 *    recording (p < COMPARE_RESEMBLE_P with enough samples on both sides)
 *    and blocks the analyzer built by its fallback are named on the
 *    verdict line.
 * Only decides and words; never prints, and never computes statistics
 * itself (p against the recording comes from compare_analyze, the sample
 * minimum from stats/). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "stats.h"

#define COMPARE_TRUST_MSG_CHARS 40 /* characters of a DB error message quoted */
#define COMPARE_TRUST_DB_KINDS 2   /* distinct DB errors quoted per run */

/* A growing string; on out of memory it keeps failing and buf is NULL. */
struct compare_text {
    char *buf;
    size_t len, cap;
    int oom;
};

static void compare_text_add(struct compare_text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            break;
        }
        if (t->buf && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->oom = 1;
            break;
        }
        t->buf = nb;
        t->cap = cap;
    }
    free(t->buf);
    t->buf = NULL;
}

/* The finished string ("" when nothing was added), or NULL out of memory. */
static char *compare_text_done(struct compare_text *t)
{
    if (!t->oom && !t->buf)
        compare_text_add(t, "%s", "");
    return t->oom ? NULL : t->buf;
}

size_t compare_trust_min_samples(void)
{
    struct stats_config cfg;
    stats_config_default(&cfg);
    return cfg.min_samples;
}

/* A DB error message cut to COMPARE_TRUST_MSG_CHARS characters (never
 * inside a UTF-8 sequence), with "…" when cut. */
static void compare_text_quote(struct compare_text *t, const char *msg)
{
    size_t bytes = 0, chars = 0;
    while (msg[bytes] && chars < COMPARE_TRUST_MSG_CHARS) {
        bytes++;
        while (((unsigned char)msg[bytes] & 0xC0) == 0x80)
            bytes++;
        chars++;
    }
    size_t shown = bytes;
    while (msg[bytes] && shown && msg[shown - 1] == ' ')
        shown--; /* no space before the "…" */
    compare_text_add(t, "'%.*s%s'", (int)shown, msg, msg[bytes] ? "…" : "");
}

/* "20 DB queries failed (component php: 20 × 'You have an error…')": the
 * run's DB errors summed per component and message, the largest first. */
static void compare_trust_db(struct compare_text *t, const struct compare_run *r)
{
    uint64_t total = 0;
    size_t n = r->ndb_errors;
    uint64_t *sum = calloc(n + 1, sizeof *sum); /* per first entry of a kind, else 0 */
    if (!sum) {
        t->oom = 1;
        return;
    }
    size_t kinds = 0;
    for (size_t i = 0; i < n; i++) {
        total += r->db_errors[i].count;
        size_t k = 0;
        while (k < i && (strcmp(r->db_errors[k].component, r->db_errors[i].component) ||
                         strcmp(r->db_errors[k].message, r->db_errors[i].message)))
            k++;
        kinds += k == i;
        sum[k] += r->db_errors[i].count;
    }
    compare_text_add(t, "%llu DB quer%s failed (", (unsigned long long)total,
                     total == 1 ? "y" : "ies");
    for (size_t shown = 0; shown < kinds && shown < COMPARE_TRUST_DB_KINDS; shown++) {
        size_t best = n;
        for (size_t k = 0; k < n; k++)
            if (sum[k] && (best == n || sum[k] > sum[best]))
                best = k;
        compare_text_add(t, "%scomponent %s: %llu × ", shown ? "; " : "",
                         r->db_errors[best].component, (unsigned long long)sum[best]);
        compare_text_quote(t, r->db_errors[best].message);
        sum[best] = 0;
    }
    if (kinds > COMPARE_TRUST_DB_KINDS)
        compare_text_add(t, "; %zu more kinds", kinds - COMPARE_TRUST_DB_KINDS);
    compare_text_add(t, ")");
    free(sum);
}

static int compare_trust_push(struct compare_run *r, struct compare_text *t)
{
    char *s = compare_text_done(t);
    char **np = s ? realloc(r->problems, (r->nproblems + 1) * sizeof *np) : NULL;
    if (!np) {
        free(s);
        return -1;
    }
    r->problems = np;
    r->problems[r->nproblems++] = s;
    return 0;
}

/* The labels a run should have replayed: the plan's, else every run's. */
static int compare_trust_missing(struct compare_run *r, const struct compare_recording *rec,
                                 const struct compare_verdict *v)
{
    size_t n = rec ? rec->nlabels : v->nlabels;
    for (size_t l = 0; l < n; l++) {
        const char *name = rec ? rec->label_names[l] : v->labels[l];
        const struct compare_label *lab = compare_run_label(r, name);
        if (lab && lab->count)
            continue;
        struct compare_text t = {0};
        compare_text_add(&t, "label '%s' never replayed successfully", name);
        if (compare_trust_push(r, &t))
            return -1;
    }
    return 0;
}

/* r->problems, in the order the problem line gives them. */
static int compare_trust_problems(struct compare_run *r, const struct compare_recording *rec,
                                  const struct compare_verdict *v)
{
    for (size_t i = 0; i < r->nproblems; i++)
        free(r->problems[i]); /* from an earlier analysis of the same runs */
    free(r->problems);
    r->problems = NULL;
    r->nproblems = 0;
    uint64_t db = 0;
    for (size_t i = 0; i < r->ndb_errors; i++)
        db += r->db_errors[i].count;
    struct compare_text t = {0};
    if (db) {
        compare_trust_db(&t, r);
        if (compare_trust_push(r, &t))
            return -1;
    }
    if (r->failed) {
        t = (struct compare_text){0};
        compare_text_add(&t, "%zu request%s failed", r->failed, r->failed == 1 ? "" : "s");
        if (compare_trust_push(r, &t))
            return -1;
    }
    return compare_trust_missing(r, rec, v);
}

char *compare_trust_problem_line(const struct compare_run *r)
{
    if (!r->nproblems)
        return NULL;
    struct compare_text t = {0};
    compare_text_add(&t, "%s: ", r->path);
    for (size_t i = 0; i < r->nproblems; i++)
        compare_text_add(&t, "%s%s", i ? ", " : "", r->problems[i]);
    return compare_text_done(&t);
}

/* Per label of r: whether the stop rule judged it, whether it resembles
 * the recording (rec may be NULL). */
static void compare_trust_labels(struct compare_run *r, const struct compare_recording *rec)
{
    size_t min = compare_trust_min_samples();
    for (size_t l = 0; l < r->nlabels; l++) {
        struct compare_label *lab = &r->labels[l];
        /* the standard method's last comparison: d1 = every interval but the
         * last; unknown when no sample says its interval */
        size_t n = 0, known = 0;
        for (size_t k = 0; k < lab->nsamples; k++) {
            known += lab->sample_interval[k] != 0;
            n += lab->sample_interval[k] && lab->sample_interval[k] < r->nintervals;
        }
        lab->stop_rule_n = n;
        lab->judged = !r->has_stop_rule || !known ? -1 : n >= min;
        size_t rl = rec ? compare_recording_label(rec, lab->name) : (size_t)-1;
        lab->unlike_recording = !isnan(lab->p_recording) && lab->p_recording < COMPARE_RESEMBLE_P &&
                                lab->nsamples >= min && rl != (size_t)-1 &&
                                rec->nrecorded[rl] >= min;
    }
}

int compare_trust_runs(struct compare_run *runs, size_t nruns, const struct compare_recording *rec,
                       const struct compare_options *opt, const struct compare_verdict *v)
{
    for (size_t i = 0; i < nruns; i++) {
        if (compare_trust_problems(&runs[i], rec, v))
            return -1;
        runs[i].ranked = !runs[i].nproblems || opt->allow_failed;
        compare_trust_labels(&runs[i], rec);
    }
    return 0;
}

/* "Not ranked, the replay failed: small (--allow-failed ranks them)." */
static void compare_caveat_ranking(struct compare_text *t, const struct compare_run *runs,
                                   size_t nruns, const struct compare_options *opt)
{
    size_t nfailed = 0;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].nproblems)
            compare_text_add(t, "%s%s",
                             nfailed++ ? ", "
                             : opt->allow_failed
                                 ? "Ranked although the replay failed (--allow-failed): "
                                 : "Not ranked, the replay failed: ",
                             runs[i].instance);
    if (nfailed)
        compare_text_add(t, "%s", opt->allow_failed ? "." : " (--allow-failed ranks them).");
}

/* "small 'GET /b' (12 samples in the stop rule's last comparison, it
 * judges 30 or more); large 'POST /x' (does not resemble the recording:
 * p 0.001 < 0.05 with 400 replayed and 350 recorded)" */
static void compare_caveat_labels(struct compare_text *t, const struct compare_run *runs,
                                  size_t nruns, const struct compare_recording *rec, size_t *nout)
{
    size_t min = compare_trust_min_samples();
    for (size_t i = 0; i < nruns; i++)
        for (size_t l = 0; l < runs[i].nlabels; l++) {
            const struct compare_label *lab = &runs[i].labels[l];
            if (lab->judged != 0 && !lab->unlike_recording)
                continue;
            compare_text_add(t, "%s%s '%s' (", (*nout)++ ? "; " : "", runs[i].instance, lab->name);
            if (!lab->judged)
                compare_text_add(t,
                                 "%zu samples in the stop rule's last comparison, it judges %zu "
                                 "or more%s",
                                 lab->stop_rule_n, min, lab->unlike_recording ? "; " : "");
            if (lab->unlike_recording) {
                size_t rl = compare_recording_label(rec, lab->name);
                char p[32];
                if (lab->p_recording < 0.001)
                    snprintf(p, sizeof p, "p < 0.001");
                else
                    snprintf(p, sizeof p, "p %.3f < %.2g", lab->p_recording, COMPARE_RESEMBLE_P);
                compare_text_add(t,
                                 "does not resemble the recording: %s with %zu replayed and %zu "
                                 "recorded samples",
                                 p, lab->nsamples, rec->nrecorded[rl]);
            }
            compare_text_add(t, ")");
        }
}

/* "plan: 3 blocks built by the analyzer's fallback for interleaving
 * threads ('GET /a' 3)" */
static void compare_caveat_flagged(struct compare_text *t, const struct compare_recording *rec,
                                   size_t *nout)
{
    size_t total = 0;
    for (size_t i = 0; rec && i < rec->nflagged_labels; i++)
        total += rec->nflagged[i];
    if (!total)
        return;
    compare_text_add(t,
                     "%splan: %zu block%s built by the analyzer's fallback for interleaving "
                     "threads (",
                     (*nout)++ ? "; " : "", total, total == 1 ? "" : "s");
    for (size_t i = 0; i < rec->nflagged_labels; i++)
        compare_text_add(t, "%s'%s' %zu", i ? ", " : "", rec->flagged_labels[i], rec->nflagged[i]);
    compare_text_add(t, ")");
}

/* "Approximated: small replayed 3 DB statements as waits (recorded cut at
 * --db-max-statement; record with a larger one to replay them)." A cut
 * statement is timed, not executed: the run is ranked, but the user is told. */
static void compare_caveat_cut(struct compare_text *t, const struct compare_run *runs, size_t nruns)
{
    size_t n = 0;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].db_cut)
            compare_text_add(t, "%s%s replayed %llu DB statement%s as waits",
                             n++ ? ", " : "Approximated: ", runs[i].instance,
                             (unsigned long long)runs[i].db_cut, runs[i].db_cut == 1 ? "" : "s");
    if (n)
        compare_text_add(t, " (recorded cut at --db-max-statement; record with a larger one to "
                            "replay them).");
}

int compare_trust_caveats(const struct compare_run *runs, size_t nruns,
                          const struct compare_recording *rec, const struct compare_options *opt,
                          struct compare_verdict *v)
{
    struct compare_text ranking = {0}, judged = {0}, cut = {0}, all = {0};
    size_t n = 0;
    compare_caveat_ranking(&ranking, runs, nruns, opt);
    compare_caveat_labels(&judged, runs, nruns, rec, &n);
    compare_caveat_flagged(&judged, rec, &n);
    compare_caveat_cut(&cut, runs, nruns);
    char *a = compare_text_done(&ranking), *b = compare_text_done(&judged);
    char *c = compare_text_done(&cut);
    if (a && b && c)
        compare_text_add(&all, "%s%s%s%s%s%s%s", a, a[0] && b[0] ? " " : "",
                         b[0] ? "Not judged: " : "", b, b[0] ? "." : "",
                         (a[0] || b[0]) && c[0] ? " " : "", c);
    else
        all.oom = 1;
    free(a);
    free(b);
    free(c);
    free(v->caveats);
    v->caveats = compare_text_done(&all);
    return v->caveats ? 0 : -1;
}
