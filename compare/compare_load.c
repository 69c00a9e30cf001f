/* compare_load.c - one input of `preplay compare` by its "format"
 * (compare_input_load: results, duet or regress, one parse), and one
 * results file of `preplay run` (or `preplay drive`) into struct
 * compare_run, through the format's own reader (results_read,
 * formats/results.h: it validates, this file only takes over what compare
 * uses and fills compare's defaults), and the plan's recording into struct
 * compare_recording. Never parses the results JSON itself, never computes
 * statistics (compare_analyze does). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "plan.h"
#include "report_plan.h"
#include "results_bands.h"
#include "results_reader.h"

const char *const compare_resource_names[COMPARE_NRES] = {"CPU", "file", "network", "lock", "DB"};
const char *const compare_metric_names[COMPARE_NMETRICS] = {"median", "p95", "p99"};

static char *compare_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static struct compare_label *compare_find(struct compare_run *run, const char *name)
{
    for (size_t i = 0; i < run->nlabels; i++)
        if (!strcmp(run->labels[i].name, name))
            return &run->labels[i];
    return NULL;
}

const struct compare_label *compare_run_label(const struct compare_run *run, const char *name)
{
    return compare_find((struct compare_run *)run, name);
}

static int compare_push(double **v, size_t *n, double x)
{
    /* grows at powers of two: *n is the only state needed */
    if ((*n & (*n - 1)) == 0) {
        double *nv = realloc(*v, (*n ? *n * 2 : 1) * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* The labels, their statistics and samples, taken over from rf. */
static int compare_take_labels(struct results_file *rf, struct compare_run *run)
{
    run->labels = calloc(rf->nlabels ? rf->nlabels : 1, sizeof *run->labels);
    if (!run->labels)
        return -1;
    for (size_t i = 0; i < rf->nlabels; i++) {
        struct results_label *src = &rf->labels[i];
        struct compare_label *l = &run->labels[run->nlabels++];
        l->name = src->name;
        l->samples = src->samples;
        l->sample_interval = src->sample_interval;
        l->nsamples = src->nsamples;
        src->name = NULL;
        src->samples = NULL;
        src->sample_interval = NULL;
        l->count = src->count;
        l->p_recording = NAN;
        for (int m = 0; m < COMPARE_NMETRICS; m++)
            l->stat[m] =
                (struct compare_stat){src->value[m], src->lo[m], src->hi[m], src->has_band[m]};
        run->requests_ok += l->count;
    }
    return 0;
}

/* Time per resource: the replayer's kinds (formats/RESULTS.md "resources")
 * onto the report's, kept per component and label as mean seconds per
 * block: a nested component's blocks carry their own labels, so each tier
 * shows where its own time goes. */
static int compare_take_resources(struct results_file *rf, struct compare_run *run)
{
    static const enum compare_resource map[RESULTS_NKINDS] = {
        [RESULTS_CPU] = COMPARE_RES_CPU,  [RESULTS_FILE] = COMPARE_RES_FILE,
        [RESULTS_NET] = COMPARE_RES_NET,  [RESULTS_EXTERNAL] = COMPARE_RES_NET,
        [RESULTS_CALL] = COMPARE_RES_NET, [RESULTS_LOCK] = COMPARE_RES_LOCK,
        [RESULTS_DB] = COMPARE_RES_DB};
    run->resources = calloc(rf->nresources + 1, sizeof *run->resources);
    if (!run->resources)
        return -1;
    for (size_t i = 0; i < rf->nresources; i++) {
        struct results_resource *src = &rf->resources[i];
        struct compare_resources *r = &run->resources[run->nresources];
        size_t len = strlen(src->component) + strlen(src->label) + 3;
        if (!(r->group = malloc(len)))
            return -1;
        snprintf(r->group, len, "%s: %s", src->component, src->label);
        run->nresources++;
        r->component = src->component;
        r->label = src->label;
        src->component = src->label = NULL;
        r->blocks = (size_t)src->blocks;
        double nb = (double)src->blocks;
        if (!isnan(src->s[RESULTS_CALL]) && nb > 0)
            r->call_s = src->s[RESULTS_CALL] / nb;
        for (int k = 0; k < RESULTS_NKINDS; k++)
            if (!isnan(src->s[k]) && nb > 0)
                r->s[map[k]] += src->s[k] / nb;
    }
    return 0;
}

/* The queries that failed on the database, taken over from rf. */
static int compare_take_db_errors(struct results_file *rf, struct compare_run *run)
{
    run->db_errors = calloc(rf->ndb_errors + 1, sizeof *run->db_errors);
    if (!run->db_errors)
        return -1;
    for (size_t i = 0; i < rf->ndb_errors; i++) {
        struct results_db_error *src = &rf->db_errors[i];
        run->db_errors[i] = (struct compare_db_error){src->component, src->message, src->count};
        src->component = src->message = NULL;
        run->ndb_errors++;
    }
    return 0;
}

/* What compare needs of a results file it read, with its defaults: the
 * instance is the file's name when the file does not say, p0 is 0.9, the
 * time driven is the sum of the intervals' lengths when not given. */
static int compare_take(struct results_file *rf, struct compare_run *run)
{
    const char *base = strrchr(run->path, '/');
    run->instance = rf->instance ? rf->instance : compare_strdup(base ? base + 1 : run->path);
    run->recording_id = rf->recording_id;
    run->plan = rf->plan;
    run->stop_note = rf->error;
    rf->instance = rf->recording_id = rf->plan = rf->error = NULL;
    run->has_stop_rule = rf->is_run;
    run->stopped = rf->stopped;
    run->price_per_hour = rf->price;
    if (!isnan(rf->p0))
        run->p0 = rf->p0;
    run->elapsed_s = rf->elapsed_s;
    run->cpu_ratio = rf->cpu_ratio;
    run->cpu_ratio_lo = rf->cpu_ratio_lo;
    run->cpu_ratio_hi = rf->cpu_ratio_hi;
    run->placement = rf->placement;
    memset(&rf->placement, 0, sizeof rf->placement);
    if (!run->instance || compare_take_labels(rf, run))
        return -1;
    run->intervals = calloc(rf->nintervals + 1, sizeof *run->intervals);
    if (!run->intervals)
        return -1;
    size_t failed = 0; /* a run file counts failures per interval */
    for (size_t i = 0; i < rf->nintervals; i++) {
        const struct results_interval_read *src = &rf->intervals[i];
        run->intervals[i] =
            (struct compare_interval){src->requests, src->failed, src->p, src->length_s};
        failed += src->failed;
    }
    run->nintervals = rf->nintervals;
    run->failed = isnan(rf->failed) ? failed : (size_t)rf->failed;
    run->db_cut = isnan(rf->db_cut) ? 0 : (uint64_t)rf->db_cut;
    if (isnan(run->elapsed_s)) {
        double sum = 0;
        for (size_t i = 0; i < run->nintervals; i++)
            sum += isnan(run->intervals[i].length_s) ? 0 : run->intervals[i].length_s;
        run->elapsed_s = sum;
    }
    return compare_take_resources(rf, run) || compare_take_db_errors(rf, run) ? -1 : 0;
}

int compare_run_load(const char *path, struct compare_run *run, char *err, size_t errlen)
{
    json_t *root = results_json_load(path, err, errlen);
    if (!root) {
        memset(run, 0, sizeof *run);
        return -1;
    }
    int rc = compare_run_load_json(root, path, run, err, errlen);
    json_decref(root);
    return rc;
}

int compare_run_load_json(json_t *root, const char *path, struct compare_run *run, char *err,
                          size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->price_per_hour = NAN;
    run->cost_per_million = NAN;
    run->p0 = 0.9;
    if (!(run->path = compare_strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    struct results_file rf;
    results_widen_ratio_bands(root); /* a file before 2.4: its bands without the ratio's interval */
    if (results_read_json(root, path, &rf, err, errlen)) {
        compare_run_free(run);
        return -1;
    }
    int rc = compare_take(&rf, run);
    results_file_free(&rf);
    if (rc) {
        snprintf(err, errlen, "%s: out of memory", path);
        compare_run_free(run); /* a refused file leaves nothing to free */
    }
    return rc;
}

void compare_run_free(struct compare_run *run)
{
    for (size_t i = 0; i < run->nlabels; i++) {
        free(run->labels[i].name);
        free(run->labels[i].samples);
        free(run->labels[i].sample_interval);
    }
    free(run->labels);
    for (size_t i = 0; i < run->ndb_errors; i++) {
        free(run->db_errors[i].component);
        free(run->db_errors[i].message);
    }
    free(run->db_errors);
    for (size_t i = 0; i < run->nproblems; i++)
        free(run->problems[i]);
    free(run->problems);
    free(run->intervals);
    for (size_t i = 0; i < run->nresources; i++) {
        free(run->resources[i].group);
        free(run->resources[i].component);
        free(run->resources[i].label);
    }
    free(run->resources);
    results_placement_free(&run->placement);
    free(run->path);
    free(run->instance);
    free(run->recording_id);
    free(run->plan);
    free(run->stop_note);
    free(run->slo_failure);
    memset(run, 0, sizeof *run);
}

size_t compare_recording_label(const struct compare_recording *rec, const char *name)
{
    for (size_t i = 0; i < rec->nlabels; i++)
        if (!strcmp(rec->label_names[i], name))
            return i;
    return (size_t)-1;
}

/* Blocks the analyzer built by its fallback (PLAN_BLOCK_VIOLATION), counted
 * per block label into rec. -1 when out of memory. */
static int compare_recording_flagged(const struct plan *p, struct compare_recording *rec)
{
    for (uint64_t b = 0; b < p->nblocks; b++) {
        if (!(p->blocks[b].flags & PLAN_BLOCK_VIOLATION))
            continue;
        const char *name =
            p->blocks[b].label < p->nstrings ? plan_string(p, p->blocks[b].label) : "";
        name = name[0] ? name : "(unlabelled)";
        size_t i = 0;
        while (i < rec->nflagged_labels && strcmp(rec->flagged_labels[i], name))
            i++;
        if (i == rec->nflagged_labels) {
            char **nl = realloc(rec->flagged_labels, (i + 1) * sizeof *nl);
            if (nl)
                rec->flagged_labels = nl;
            size_t *nc = nl ? realloc(rec->nflagged, (i + 1) * sizeof *nc) : NULL;
            if (nc)
                rec->nflagged = nc;
            if (!nc || !(rec->flagged_labels[i] = compare_strdup(name)))
                return -1;
            rec->nflagged[i] = 0;
            rec->nflagged_labels++;
        }
        rec->nflagged[i]++;
    }
    return 0;
}

int compare_recording_load(const char *path, struct compare_recording *rec, char *err,
                           size_t errlen)
{
    memset(rec, 0, sizeof *rec);
    char perr[COMPARE_ERR_LEN];
    struct plan *p = plan_read(path, perr, sizeof perr);
    if (!p) {
        snprintf(err, errlen, "%s", perr);
        return -1;
    }
    int rc = -1;
    rec->path = compare_strdup(path);
    memcpy(rec->recording_id, p->recording_id, sizeof rec->recording_id);
    rec->recording_id[sizeof rec->recording_id - 1] = 0;
    /* label id -> index, over the string table */
    size_t *index = malloc((p->nstrings ? p->nstrings : 1) * sizeof *index);
    rec->label_names = calloc(p->nstrings + 1, sizeof *rec->label_names);
    rec->recorded_s = calloc(p->nstrings + 1, sizeof *rec->recorded_s);
    rec->nrecorded = calloc(p->nstrings + 1, sizeof *rec->nrecorded);
    rec->arrival_s = malloc((p->nrequests ? p->nrequests : 1) * sizeof *rec->arrival_s);
    rec->request_label = malloc((p->nrequests ? p->nrequests : 1) * sizeof *rec->request_label);
    if (!rec->path || !index || !rec->label_names || !rec->recorded_s || !rec->nrecorded ||
        !rec->arrival_s || !rec->request_label)
        goto oom;
    for (uint32_t s = 0; s < p->nstrings; s++)
        index[s] = (size_t)-1;
    for (uint64_t r = 0; r < p->nrequests; r++) {
        const struct plan_request *q = &p->requests[r];
        if (q->label >= p->nstrings || q->block >= p->nblocks) {
            snprintf(err, errlen, "%s: request %llu: label or block out of range", path,
                     (unsigned long long)r);
            goto out;
        }
        if (index[q->label] == (size_t)-1) {
            const char *name = plan_string(p, q->label);
            index[q->label] = rec->nlabels;
            if (!(rec->label_names[rec->nlabels++] =
                      compare_strdup(name[0] ? name : "(unlabelled)")))
                goto oom;
        }
        size_t l = index[q->label];
        if (compare_push(&rec->recorded_s[l], &rec->nrecorded[l],
                         (double)p->blocks[q->block].recorded_ns / 1e9))
            goto oom;
        rec->arrival_s[r] = (double)q->arrival_ns / 1e9;
        rec->request_label[r] = l;
        if (rec->arrival_s[r] > rec->span_s)
            rec->span_s = rec->arrival_s[r];
        rec->nrequests++;
    }
    if (!(rec->facts = calloc(1, sizeof *rec->facts)) ||
        report_plan_facts_build(p, index, rec->nlabels, rec->facts) ||
        compare_recording_flagged(p, rec))
        goto oom;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
out:
    free(index);
    plan_free(p);
    return rc;
}

void compare_recording_free(struct compare_recording *rec)
{
    for (size_t i = 0; i < rec->nlabels; i++) {
        free(rec->label_names[i]);
        free(rec->recorded_s[i]);
    }
    for (size_t i = 0; i < rec->nflagged_labels; i++)
        free(rec->flagged_labels[i]);
    free(rec->flagged_labels);
    free(rec->nflagged);
    free(rec->label_names);
    free(rec->recorded_s);
    free(rec->nrecorded);
    free(rec->arrival_s);
    free(rec->request_label);
    if (rec->facts)
        report_plan_facts_free(rec->facts);
    free(rec->facts);
    free(rec->path);
    memset(rec, 0, sizeof *rec);
}

int compare_input_load(const char *path, struct compare_run *run, struct compare_duet *duet,
                       struct compare_regress *regress, enum compare_input_kind *kind, char *err,
                       size_t errlen)
{
    json_t *root = results_json_load(path, err, errlen);
    if (!root)
        return -1;
    int rc;
    *kind = duet_is_duet(root)              ? COMPARE_INPUT_DUET
            : regress_file_is_regress(root) ? COMPARE_INPUT_REGRESS
                                            : COMPARE_INPUT_RESULTS;
    if (*kind == COMPARE_INPUT_DUET) {
        memset(duet, 0, sizeof *duet);
        rc = duet_read_json(root, path, &duet->df, err, errlen);
        if (!rc && !(duet->path = compare_strdup(path))) {
            duet_file_free(&duet->df);
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
        }
    } else if (*kind == COMPARE_INPUT_REGRESS)
        rc = compare_regress_load_json(root, path, regress, err, errlen);
    else
        rc = compare_run_load_json(root, path, run, err, errlen);
    json_decref(root);
    return rc;
}
