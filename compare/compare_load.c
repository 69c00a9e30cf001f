/* compare_load.c - reads one results file of `preplay run` (or `preplay
 * drive`) into struct compare_run, and the plan's recording into struct
 * compare_recording. Validates what it uses: a wrong type or a missing
 * required key is an error naming the file and the key; keys it does not
 * know are ignored (newer writers may add some). Never computes
 * statistics (compare_analyze does). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "plan.h"

#define COMPARE_RESULTS_VERSION 1

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

/* A number (integer or real) at key, or NAN when absent; -1 when present
 * but not a number. */
static int compare_number(json_t *obj, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    *out = NAN;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return isfinite(*out) ? 0 : -1;
}

static int compare_load_stat(json_t *lo, const char *file, const char *label, enum compare_metric m,
                             struct compare_stat *st, char *err, size_t errlen)
{
    static const char *const keys[COMPARE_NMETRICS] = {"median_s", "p95_s", "p99_s"};
    static const char *const ci_keys[COMPARE_NMETRICS] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    if (compare_number(lo, keys[m], &st->value) || isnan(st->value) || st->value < 0) {
        snprintf(err, errlen, "%s: labels.\"%s\".%s: expected a non-negative number", file, label,
                 keys[m]);
        return -1;
    }
    st->lo = st->hi = st->value;
    st->has_band = 0;
    json_t *ci = json_object_get(lo, ci_keys[m]);
    if (!ci)
        return 0;
    if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
        !json_is_number(json_array_get(ci, 1)) ||
        json_number_value(json_array_get(ci, 0)) > json_number_value(json_array_get(ci, 1))) {
        snprintf(err, errlen, "%s: labels.\"%s\".%s: expected [low, high] with low <= high", file,
                 label, ci_keys[m]);
        return -1;
    }
    st->lo = json_number_value(json_array_get(ci, 0));
    st->hi = json_number_value(json_array_get(ci, 1));
    st->has_band = 1;
    return 0;
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

static int compare_load_labels(json_t *labels, struct compare_run *run, char *err, size_t errlen)
{
    size_t n = json_object_size(labels);
    run->labels = calloc(n ? n : 1, sizeof *run->labels);
    if (!run->labels)
        goto oom;
    const char *name;
    json_t *lo;
    json_object_foreach(labels, name, lo)
    {
        struct compare_label *l = &run->labels[run->nlabels];
        l->p_recording = NAN;
        if (!(l->name = compare_strdup(name)))
            goto oom;
        run->nlabels++;
        if (!json_is_object(lo)) {
            snprintf(err, errlen, "%s: labels.\"%s\": expected an object", run->path, name);
            return -1;
        }
        json_t *c = json_object_get(lo, "count");
        if (!json_is_integer(c) || json_integer_value(c) < 0) {
            snprintf(err, errlen, "%s: labels.\"%s\".count: expected a non-negative integer",
                     run->path, name);
            return -1;
        }
        l->count = (size_t)json_integer_value(c);
        for (int m = 0; m < COMPARE_NMETRICS; m++)
            if (compare_load_stat(lo, run->path, name, (enum compare_metric)m, &l->stat[m], err,
                                  errlen))
                return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", run->path);
    return -1;
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

static int compare_load_samples(json_t *samples, struct compare_run *run, char *err, size_t errlen)
{
    if (!json_is_array(samples)) {
        snprintf(err, errlen, "%s: samples: expected an array", run->path);
        return -1;
    }
    size_t i;
    json_t *s;
    json_array_foreach(samples, i, s)
    {
        json_t *label = json_object_get(s, "label"), *ok = json_object_get(s, "ok");
        double rt;
        if (!json_is_string(label) || compare_number(s, "response_s", &rt) || isnan(rt) || rt < 0 ||
            (ok && !json_is_boolean(ok))) {
            snprintf(err, errlen,
                     "%s: samples[%zu]: expected {\"label\": string, \"response_s\": number >= 0, "
                     "\"ok\": bool}",
                     run->path, i);
            return -1;
        }
        const char *name = json_string_value(label);
        struct compare_label *l = compare_find(run, name[0] ? name : "(unlabelled)");
        if (ok && !json_is_true(ok))
            continue; /* a label whose every request failed has no summary */
        if (!l) {
            snprintf(err, errlen, "%s: samples[%zu]: label \"%s\" is not in labels", run->path, i,
                     name);
            return -1;
        }
        if (compare_push(&l->samples, &l->nsamples, rt)) {
            snprintf(err, errlen, "%s: out of memory", run->path);
            return -1;
        }
    }
    return 0;
}

static int compare_load_intervals(json_t *iv, struct compare_run *run, char *err, size_t errlen)
{
    if (!json_is_array(iv)) {
        snprintf(err, errlen, "%s: intervals: expected an array", run->path);
        return -1;
    }
    run->intervals = calloc(json_array_size(iv) + 1, sizeof *run->intervals);
    if (!run->intervals) {
        snprintf(err, errlen, "%s: out of memory", run->path);
        return -1;
    }
    size_t i;
    json_t *o;
    json_array_foreach(iv, i, o)
    {
        struct compare_interval *x = &run->intervals[i];
        json_t *req = json_object_get(o, "requests");
        double len;
        if (!json_is_object(o) || !json_is_integer(req) || json_integer_value(req) < 0 ||
            compare_number(o, "p", &x->p) || compare_number(o, "length_s", &len)) {
            snprintf(err, errlen,
                     "%s: intervals[%zu]: expected {\"requests\": integer, \"p\": number or null}",
                     run->path, i);
            return -1;
        }
        x->requests = (size_t)json_integer_value(req);
        x->length_s = len;
        run->nintervals++;
    }
    return 0;
}

/* Time per resource: "resources": {COMPONENT: {LABEL: {"blocks", "cpu_s",
 * "file_s", "lock_s", "db_s", "call_s", "external_s", "net_s"}}}
 * (formats/RESULTS.md), kept per component and label as mean seconds per
 * block: a nested component's blocks carry their own labels, so each tier
 * shows where its own time goes. */
static int compare_load_resources(json_t *res, struct compare_run *run, char *err, size_t errlen)
{
    static const struct {
        const char *key;
        enum compare_resource r;
    } map[] = {{"cpu_s", COMPARE_RES_CPU},  {"file_s", COMPARE_RES_FILE},
               {"net_s", COMPARE_RES_NET},  {"external_s", COMPARE_RES_NET},
               {"call_s", COMPARE_RES_NET}, {"lock_s", COMPARE_RES_LOCK},
               {"db_s", COMPARE_RES_DB}};
    if (!json_is_object(res)) {
        snprintf(err, errlen, "%s: resources: expected an object (component -> label -> times)",
                 run->path);
        return -1;
    }
    size_t total = 0;
    const char *comp, *name;
    json_t *co, *o;
    json_object_foreach(res, comp, co)
    {
        if (!json_is_object(co)) {
            snprintf(err, errlen, "%s: resources.\"%s\": expected an object (label -> times)",
                     run->path, comp);
            return -1;
        }
        total += json_object_size(co);
    }
    run->resources = calloc(total + 1, sizeof *run->resources);
    if (!run->resources) {
        snprintf(err, errlen, "%s: out of memory", run->path);
        return -1;
    }
    json_object_foreach(res, comp, co)
    {
        json_object_foreach(co, name, o)
        {
            json_t *blocks = json_object_get(o, "blocks");
            if (!json_is_object(o) || !json_is_integer(blocks) || json_integer_value(blocks) < 0) {
                snprintf(err, errlen,
                         "%s: resources.\"%s\".\"%s\": expected an object with integer \"blocks\"",
                         run->path, comp, name);
                return -1;
            }
            struct compare_resources *r = &run->resources[run->nresources];
            size_t len = strlen(comp) + strlen(name) + 3;
            if (!(r->group = malloc(len))) {
                snprintf(err, errlen, "%s: out of memory", run->path);
                return -1;
            }
            snprintf(r->group, len, "%s: %s", comp, name);
            run->nresources++;
            double nb = (double)json_integer_value(blocks);
            for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
                double sec;
                if (compare_number(o, map[k].key, &sec) || (!isnan(sec) && sec < 0)) {
                    snprintf(err, errlen, "%s: resources.\"%s\".\"%s\".%s: expected a number >= 0",
                             run->path, comp, name, map[k].key);
                    return -1;
                }
                if (!isnan(sec) && nb > 0)
                    r->s[map[k].r] += sec / nb;
            }
        }
    }
    return 0;
}

int compare_run_load(const char *path, struct compare_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->price_per_hour = NAN;
    run->cost_per_million = NAN;
    run->p0 = 0.9;
    json_error_t je;
    json_t *root = NULL;
    if (!(run->path = compare_strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
        compare_run_free(run);
        return -1;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s: line %d column %d: not valid JSON (%s)", path, je.line,
                 je.column, je.text);
        compare_run_free(run);
        return -1;
    }
    int rc = -1;
    json_t *format = json_object_get(root, "format"), *version = json_object_get(root, "version");
    if (!json_is_object(root) || !json_is_string(format) ||
        strcmp(json_string_value(format), "preplay-results")) {
        snprintf(err, errlen, "%s: not a preplay results file (no \"format\": \"preplay-results\")",
                 path);
        goto out;
    }
    if (!json_is_integer(version) || json_integer_value(version) != COMPARE_RESULTS_VERSION) {
        if (json_is_integer(version))
            snprintf(err, errlen,
                     "%s: results version %lld is not supported (this preplay reads %d)", path,
                     (long long)json_integer_value(version), COMPARE_RESULTS_VERSION);
        else
            snprintf(err, errlen, "%s: version: expected an integer (this preplay reads %d)", path,
                     COMPARE_RESULTS_VERSION);
        goto out;
    }
    json_t *kind = json_object_get(root, "kind");
    const char *k = json_is_string(kind) ? json_string_value(kind) : "";
    if (strcmp(k, "run") && strcmp(k, "drive")) {
        snprintf(err, errlen, "%s: kind: expected \"run\" or \"drive\"", path);
        goto out;
    }
    run->has_stop_rule = !strcmp(k, "run");
    json_t *inst = json_object_get(root, "instance");
    if (inst && !json_is_string(inst)) {
        snprintf(err, errlen, "%s: instance: expected a string", path);
        goto out;
    }
    const char *base = strrchr(path, '/');
    run->instance = compare_strdup(inst ? json_string_value(inst) : base ? base + 1 : path);
    double price;
    if (compare_number(root, "price", &price) || (!isnan(price) && price < 0)) {
        snprintf(err, errlen, "%s: price: expected a number >= 0 (USD per hour) or null", path);
        goto out;
    }
    run->price_per_hour = price;
    json_t *rid = json_object_get(root, "recording_id"), *plan = json_object_get(root, "plan");
    run->recording_id = compare_strdup(json_is_string(rid) ? json_string_value(rid) : "");
    run->plan = compare_strdup(json_is_string(plan) ? json_string_value(plan) : "");
    json_t *stopped = json_object_get(root, "stopped"), *note = json_object_get(root, "error");
    if (run->has_stop_rule && !json_is_boolean(stopped)) {
        snprintf(err, errlen, "%s: stopped: expected true or false", path);
        goto out;
    }
    run->stopped = json_is_true(stopped);
    run->stop_note = compare_strdup(json_is_string(note) ? json_string_value(note) : "");
    double p0;
    if (!compare_number(root, "p0", &p0) && p0 > 0 && p0 <= 1)
        run->p0 = p0;
    if (!run->instance || !run->recording_id || !run->plan || !run->stop_note) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    double elapsed, failed;
    if (compare_number(root, "elapsed_s", &elapsed) || compare_number(root, "failed", &failed)) {
        snprintf(err, errlen, "%s: elapsed_s and failed must be numbers", path);
        goto out;
    }
    run->elapsed_s = elapsed;
    run->failed = isnan(failed) ? 0 : (size_t)failed;
    json_t *labels = json_object_get(root, "labels");
    if (!json_is_object(labels)) {
        snprintf(err, errlen, "%s: labels: expected an object (label -> summary)", path);
        goto out;
    }
    if (compare_load_labels(labels, run, err, errlen))
        goto out;
    for (size_t i = 0; i < run->nlabels; i++)
        run->requests_ok += run->labels[i].count;
    json_t *samples = json_object_get(root, "samples");
    if (samples && compare_load_samples(samples, run, err, errlen))
        goto out;
    json_t *iv = json_object_get(root, "intervals");
    if (iv && compare_load_intervals(iv, run, err, errlen))
        goto out;
    if (run->has_stop_rule && !iv) {
        snprintf(err, errlen, "%s: intervals: missing (a run file lists its intervals)", path);
        goto out;
    }
    if (isnan(run->elapsed_s)) {
        double sum = 0;
        for (size_t i = 0; i < run->nintervals; i++)
            sum += isnan(run->intervals[i].length_s) ? 0 : run->intervals[i].length_s;
        run->elapsed_s = sum;
    }
    json_t *res = json_object_get(root, "resources");
    if (res && compare_load_resources(res, run, err, errlen))
        goto out;
    rc = 0;
out:
    json_decref(root);
    if (rc)
        compare_run_free(run); /* a refused file leaves nothing to free */
    return rc;
}

void compare_run_free(struct compare_run *run)
{
    for (size_t i = 0; i < run->nlabels; i++) {
        free(run->labels[i].name);
        free(run->labels[i].samples);
    }
    free(run->labels);
    free(run->intervals);
    for (size_t i = 0; i < run->nresources; i++)
        free(run->resources[i].group);
    free(run->resources);
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
    free(rec->label_names);
    free(rec->recorded_s);
    free(rec->nrecorded);
    free(rec->arrival_s);
    free(rec->request_label);
    free(rec->path);
    memset(rec, 0, sizeof *rec);
}
