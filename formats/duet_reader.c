/* duet_reader.c - reads one duet.json of `preplay duet` (formats/DUET.md)
 * into struct duet_file, for files from other machines: a wrong type, a
 * count or length past its DUET_MAX_* limit, a number out of range or a
 * metric that contradicts itself is an error naming the file and the key
 * path; unknown keys are ignored. Nothing is allocated from a count the
 * file gives before that count is checked against its limit, and nothing
 * is computed from the numbers beyond checking them. */
#include "duet_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results_reader.h"

/* An integer at key within [lo, hi]; -1 when absent or out of range. */
static int duet_int(const json_t *o, const char *key, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = (long long)json_integer_value(v);
    return 0;
}

static int duet_ratio_ok(double x)
{
    return isfinite(x) && x >= 1 / DUET_MAX_RATIO && x <= DUET_MAX_RATIO;
}

/* A ratio (a number in [1/DUET_MAX_RATIO, DUET_MAX_RATIO]) at key. */
static int duet_ratio(const json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return duet_ratio_ok(*out) ? 0 : -1;
}

/* A boolean at key into *out; -1 when absent or not a boolean. */
static int duet_bool(const json_t *o, const char *key, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_boolean(v))
        return -1;
    *out = json_is_true(v);
    return 0;
}

/* A string at key of at most max bytes, copied; -1 when absent, not a
 * string, too long or out of memory (oom says which). */
static int duet_string(const json_t *o, const char *key, size_t max, char **out, int *oom)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return -1;
    if (!(*out = strdup(json_string_value(v))))
        return *oom = 1, -1;
    return 0;
}

/* "ratios" (per run an array of at least 1 and at most the document's
 * iterations ratios, totalling the metric's iterations) and "winsorized"
 * (per run -1 or an index into that run's ratios). */
static int duet_read_ratios(const json_t *mo, const struct duet_file *df,
                            const struct duet_metric_read *m, const char *where, const char *path,
                            char *err, size_t errlen)
{
    json_t *ratios = json_object_get(mo, "ratios"), *wins = json_object_get(mo, "winsorized");
    if (!json_is_array(ratios) || json_array_size(ratios) != (size_t)m->runs) {
        snprintf(err, errlen, "%s: %s.ratios: expected an array of %ld runs", path, where, m->runs);
        return -1;
    }
    if (!json_is_array(wins) || json_array_size(wins) != (size_t)m->runs) {
        snprintf(err, errlen, "%s: %s.winsorized: expected an array of %ld indexes", path, where,
                 m->runs);
        return -1;
    }
    long long total = 0;
    for (size_t r = 0; r < (size_t)m->runs; r++) {
        json_t *run = json_array_get(ratios, r);
        size_t n = json_array_size(run);
        if (!json_is_array(run) || n < 1 || n > (size_t)df->iterations) {
            snprintf(err, errlen, "%s: %s.ratios[%zu]: expected an array of 1 to %ld ratios", path,
                     where, r, df->iterations);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_array_get(run, i);
            if (!json_is_number(x) || !duet_ratio_ok(json_number_value(x))) {
                snprintf(err, errlen, "%s: %s.ratios[%zu][%zu]: expected a ratio in [%g, %g]", path,
                         where, r, i, 1 / DUET_MAX_RATIO, DUET_MAX_RATIO);
                return -1;
            }
        }
        json_t *w = json_array_get(wins, r);
        if (!json_is_integer(w) || json_integer_value(w) < -1 ||
            json_integer_value(w) >= (json_int_t)n) {
            snprintf(err, errlen, "%s: %s.winsorized[%zu]: expected -1 or an index below %zu", path,
                     where, r, n);
            return -1;
        }
        total += (long long)n;
    }
    if (total != m->iterations) {
        snprintf(err, errlen, "%s: %s.iterations: %ld, but ratios holds %lld", path, where,
                 m->iterations, total);
        return -1;
    }
    return 0;
}

/* gms and its interval: ratios, ci_low <= gms <= ci_high, ci_width their
 * difference, equal as the interval says (DUET_ROUNDING allowed). */
static int duet_read_interval(const json_t *mo, struct duet_metric_read *m, const char *where,
                              const char *path, char *err, size_t errlen)
{
    static const char *const keys[3] = {"gms", "ci_low", "ci_high"};
    double *outs[3] = {&m->gms, &m->ci_low, &m->ci_high};
    for (int k = 0; k < 3; k++)
        if (duet_ratio(mo, keys[k], outs[k])) {
            snprintf(err, errlen, "%s: %s.%s: expected a ratio in [%g, %g]", path, where, keys[k],
                     1 / DUET_MAX_RATIO, DUET_MAX_RATIO);
            return -1;
        }
    if (!(m->ci_low <= m->gms && m->gms <= m->ci_high)) {
        snprintf(err, errlen, "%s: %s: expected ci_low <= gms <= ci_high, got %.9g, %.9g, %.9g",
                 path, where, m->ci_low, m->gms, m->ci_high);
        return -1;
    }
    json_t *w = json_object_get(mo, "ci_width");
    m->ci_width = json_number_value(w);
    if (!json_is_number(w) ||
        !(fabs(m->ci_width - (m->ci_high - m->ci_low)) <= 2 * DUET_ROUNDING * m->ci_high)) {
        snprintf(err, errlen, "%s: %s.ci_width: expected ci_high - ci_low (%.9g)", path, where,
                 m->ci_high - m->ci_low);
        return -1;
    }
    if (duet_bool(mo, "equal", &m->equal)) {
        snprintf(err, errlen, "%s: %s.equal: expected true or false", path, where);
        return -1;
    }
    int straddles = m->ci_low <= 1 && 1 <= m->ci_high;
    int on_edge = fabs(m->ci_low - 1) <= DUET_ROUNDING || fabs(m->ci_high - 1) <= DUET_ROUNDING;
    if (m->equal != straddles && !on_edge) {
        snprintf(err, errlen, "%s: %s.equal: %s, but the interval [%.9g, %.9g] %s 1", path, where,
                 m->equal ? "true" : "false", m->ci_low, m->ci_high,
                 straddles ? "contains" : "does not contain");
        return -1;
    }
    return 0;
}

/* One metric object at where ("overall", "labels."NAME""), or its
 * {"skipped": REASON}. */
static int duet_read_metric(const json_t *mo, const struct duet_file *df,
                            struct duet_metric_read *m, const char *where, const char *path,
                            char *err, size_t errlen)
{
    int oom = 0;
    if (!json_is_object(mo)) {
        snprintf(err, errlen, "%s: %s: expected an object (a metric, or {\"skipped\": why})", path,
                 where);
        return -1;
    }
    if (!json_object_get(mo, "gms") && json_object_get(mo, "skipped")) {
        if (!duet_string(mo, "skipped", DUET_MAX_LABEL_BYTES, &m->skipped, &oom))
            return 0;
        if (oom)
            snprintf(err, errlen, "%s: out of memory", path);
        else
            snprintf(err, errlen, "%s: %s.skipped: expected a string of at most %u bytes", path,
                     where, DUET_MAX_LABEL_BYTES);
        return -1;
    }
    m->present = 1;
    if (duet_read_interval(mo, m, where, path, err, errlen))
        return -1;
    long long runs, its, sa = 0, sb = 0;
    if (duet_int(mo, "runs", df->runs, df->runs, &runs)) {
        snprintf(err, errlen, "%s: %s.runs: expected %ld (every run has a gm)", path, where,
                 df->runs);
        return -1;
    }
    if (duet_int(mo, "iterations", runs, runs * df->iterations, &its)) {
        snprintf(err, errlen, "%s: %s.iterations: expected an integer in [%lld, %lld]", path, where,
                 runs, runs * df->iterations);
        return -1;
    }
    if ((json_object_get(mo, "samples_a") &&
         duet_int(mo, "samples_a", 0, (long long)DUET_MAX_COUNT, &sa)) ||
        (json_object_get(mo, "samples_b") &&
         duet_int(mo, "samples_b", 0, (long long)DUET_MAX_COUNT, &sb))) {
        snprintf(err, errlen, "%s: %s: samples_a and samples_b: expected integers in [0, %llu]",
                 path, where, DUET_MAX_COUNT);
        return -1;
    }
    m->runs = (long)runs;
    m->iterations = (long)its;
    m->samples_a = (uint64_t)sa;
    m->samples_b = (uint64_t)sb;
    json_t *gms = json_object_get(mo, "run_gms");
    if (!json_is_array(gms) || json_array_size(gms) != (size_t)runs) {
        snprintf(err, errlen, "%s: %s.run_gms: expected an array of %lld ratios", path, where,
                 runs);
        return -1;
    }
    if (!(m->run_gms = malloc((size_t)runs * sizeof *m->run_gms))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t r = 0; r < (size_t)runs; r++) {
        json_t *x = json_array_get(gms, r);
        m->run_gms[r] = json_number_value(x);
        if (!json_is_number(x) || !duet_ratio_ok(m->run_gms[r])) {
            snprintf(err, errlen, "%s: %s.run_gms[%zu]: expected a ratio in [%g, %g]", path, where,
                     r, 1 / DUET_MAX_RATIO, DUET_MAX_RATIO);
            return -1;
        }
    }
    return duet_read_ratios(mo, df, m, where, path, err, errlen);
}

/* "labels" (label -> metric) and "labels_skipped" (label -> reason). */
static int duet_read_labels(const json_t *root, struct duet_file *df, const char *path, char *err,
                            size_t errlen)
{
    json_t *labels = json_object_get(root, "labels"),
           *skipped = json_object_get(root, "labels_skipped");
    if (!json_is_object(labels) || (skipped && !json_is_object(skipped))) {
        snprintf(err, errlen, "%s: %s: expected an object (label -> %s)", path,
                 json_is_object(labels) ? "labels_skipped" : "labels",
                 json_is_object(labels) ? "reason" : "metric");
        return -1;
    }
    size_t n = json_object_size(labels), ns = skipped ? json_object_size(skipped) : 0;
    if (n > DUET_MAX_LABELS || ns > DUET_MAX_LABELS) {
        snprintf(err, errlen, "%s: %s: %zu entries exceed the limit %u", path,
                 n > DUET_MAX_LABELS ? "labels" : "labels_skipped", n > DUET_MAX_LABELS ? n : ns,
                 DUET_MAX_LABELS);
        return -1;
    }
    if (!(df->labels = calloc(n ? n : 1, sizeof *df->labels)) ||
        !(df->skipped = calloc(ns ? ns : 1, sizeof *df->skipped)))
        goto oom;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)labels, name, v)
    {
        if (strlen(name) > DUET_MAX_LABEL_BYTES) {
            snprintf(err, errlen, "%s: labels: a name of %zu bytes exceeds the limit %u", path,
                     strlen(name), DUET_MAX_LABEL_BYTES);
            return -1;
        }
        struct duet_label_read *l = &df->labels[df->nlabels];
        if (!(l->name = strdup(name)))
            goto oom;
        df->nlabels++;
        char where[DUET_MAX_LABEL_BYTES + 16];
        snprintf(where, sizeof where, "labels.\"%s\"", name);
        if (duet_read_metric(v, df, &l->m, where, path, err, errlen))
            return -1;
    }
    json_object_foreach(skipped, name, v)
    {
        struct duet_skipped_read *s = &df->skipped[df->nskipped];
        if (strlen(name) > DUET_MAX_LABEL_BYTES || !json_is_string(v) ||
            json_string_length(v) > DUET_MAX_LABEL_BYTES) {
            snprintf(err, errlen,
                     "%s: labels_skipped: expected label -> reason, each at most %u bytes", path,
                     DUET_MAX_LABEL_BYTES);
            return -1;
        }
        if (!(s->name = strdup(name)) || !(s->why = strdup(json_string_value(v)))) {
            free(s->name);
            s->name = NULL;
            goto oom;
        }
        df->nskipped++;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

/* format, version, version_minor, kind. */
static int duet_read_format(const json_t *root, struct duet_file *df, const char *path, char *err,
                            size_t errlen)
{
    if (!duet_is_duet(root)) {
        snprintf(err, errlen, "%s: not a preplay duet file (no \"format\": \"%s\")", path,
                 DUET_FORMAT);
        return -1;
    }
    long long x;
    if (duet_int(root, "version", DUET_VERSION, DUET_VERSION, &x)) {
        snprintf(err, errlen, "%s: version: expected %d (the duet version this preplay reads)",
                 path, DUET_VERSION);
        return -1;
    }
    if (json_object_get(root, "version_minor") && duet_int(root, "version_minor", 0, 65535, &x)) {
        snprintf(err, errlen, "%s: version_minor: expected an integer 0-65535", path);
        return -1;
    }
    df->version_minor = json_object_get(root, "version_minor") ? (int)x : 0;
    json_t *kind = json_object_get(root, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "duet")) {
        snprintf(err, errlen, "%s: kind: expected \"duet\"", path);
        return -1;
    }
    return 0;
}

/* A string key that must be one of two words; *out 1 for the first. */
static int duet_word(const json_t *root, const char *key, const char *one, const char *zero,
                     int *out, const char *path, char *err, size_t errlen)
{
    const char *s = json_string_value(json_object_get(root, key));
    if (!s || (strcmp(s, one) && strcmp(s, zero))) {
        snprintf(err, errlen, "%s: %s: expected \"%s\" or \"%s\"", path, key, one, zero);
        return -1;
    }
    *out = !strcmp(s, one);
    return 0;
}

/* What was run and how: plans, recordings, procedure, the counts. */
static int duet_read_head(const json_t *root, struct duet_file *df, const char *path, char *err,
                          size_t errlen)
{
    static const char *const skeys[4] = {"plan_a", "plan_b", "recording_a", "recording_b"};
    char **souts[4] = {&df->plan_a, &df->plan_b, &df->recording_a, &df->recording_b};
    for (int k = 0; k < 4; k++) {
        int oom = 0;
        if (duet_string(root, skeys[k], DUET_MAX_LABEL_BYTES, souts[k], &oom)) {
            if (oom)
                snprintf(err, errlen, "%s: out of memory", path);
            else
                snprintf(err, errlen, "%s: %s: expected a string of at most %u bytes", path,
                         skeys[k], DUET_MAX_LABEL_BYTES);
            return -1;
        }
    }
    if (duet_bool(root, "aa", &df->aa) || duet_bool(root, "same_recording", &df->same_recording)) {
        snprintf(err, errlen, "%s: %s: expected true or false", path,
                 json_is_boolean(json_object_get(root, "aa")) ? "same_recording" : "aa");
        return -1;
    }
    if (df->aa && strcmp(df->recording_a, df->recording_b)) {
        snprintf(err, errlen, "%s: aa: true, but recording_a and recording_b differ", path);
        return -1;
    }
    if (duet_word(root, "procedure", "sequential", "duet", &df->sequential, path, err, errlen) ||
        duet_word(root, "statistic", "median", "mean", &df->median, path, err, errlen))
        return -1;
    static const char *const ikeys[4] = {"runs", "iterations", "warmup", "replicates"};
    static const long long lo[4] = {2, 1, 0, 100};
    static const long long hi[4] = {DUET_MAX_RUNS, DUET_MAX_ITERATIONS, DUET_MAX_ITERATIONS,
                                    DUET_MAX_REPLICATES};
    long *iouts[4] = {&df->runs, &df->iterations, &df->warmup, &df->replicates};
    for (int k = 0; k < 4; k++) {
        long long x;
        if (duet_int(root, ikeys[k], lo[k], hi[k], &x)) {
            snprintf(err, errlen, "%s: %s: expected an integer in [%lld, %lld]", path, ikeys[k],
                     lo[k], hi[k]);
            return -1;
        }
        *iouts[k] = (long)x;
    }
    long long fa, fb;
    if (duet_int(root, "failed_a", 0, (long long)DUET_MAX_COUNT, &fa) ||
        duet_int(root, "failed_b", 0, (long long)DUET_MAX_COUNT, &fb)) {
        snprintf(err, errlen, "%s: failed_a and failed_b: expected integers in [0, %llu]", path,
                 DUET_MAX_COUNT);
        return -1;
    }
    df->failed_a = (uint64_t)fa;
    df->failed_b = (uint64_t)fb;
    json_t *cl = json_object_get(root, "confidence"), *wp = json_object_get(root, "winsorize_pct");
    df->confidence = json_number_value(cl);
    df->winsorize_pct = json_number_value(wp);
    if (!json_is_number(cl) || !(df->confidence > 0 && df->confidence < 1)) {
        snprintf(err, errlen, "%s: confidence: expected a level in (0, 1)", path);
        return -1;
    }
    if (!json_is_number(wp) || !(df->winsorize_pct >= 0 && df->winsorize_pct <= 1e6)) {
        snprintf(err, errlen, "%s: winsorize_pct: expected a percentage in [0, 1e6]", path);
        return -1;
    }
    return 0;
}

int duet_read_json(const json_t *root, const char *path, struct duet_file *df, char *err,
                   size_t errlen)
{
    memset(df, 0, sizeof *df);
    if (duet_read_format(root, df, path, err, errlen) ||
        duet_read_head(root, df, path, err, errlen) ||
        duet_read_metric(json_object_get(root, "overall"), df, &df->overall, "overall", path, err,
                         errlen) ||
        duet_read_labels(root, df, path, err, errlen)) {
        duet_file_free(df); /* a refused file leaves nothing to free */
        return -1;
    }
    return 0;
}

int duet_read(const char *path, struct duet_file *df, char *err, size_t errlen)
{
    memset(df, 0, sizeof *df);
    json_t *root = results_json_load(path, err, errlen);
    if (!root)
        return -1;
    int rc = duet_read_json(root, path, df, err, errlen);
    json_decref(root);
    return rc;
}

int duet_is_duet(const json_t *root)
{
    const char *f = json_string_value(json_object_get(root, "format"));
    return f && !strcmp(f, DUET_FORMAT);
}

static void duet_metric_free(struct duet_metric_read *m)
{
    free(m->skipped);
    free(m->run_gms);
}

void duet_file_free(struct duet_file *df)
{
    free(df->plan_a);
    free(df->plan_b);
    free(df->recording_a);
    free(df->recording_b);
    duet_metric_free(&df->overall);
    for (size_t i = 0; i < df->nlabels; i++) {
        free(df->labels[i].name);
        duet_metric_free(&df->labels[i].m);
    }
    free(df->labels);
    for (size_t i = 0; i < df->nskipped; i++) {
        free(df->skipped[i].name);
        free(df->skipped[i].why);
    }
    free(df->skipped);
    memset(df, 0, sizeof *df);
}

const char *duet_verdict(const struct duet_metric_read *m)
{
    if (!m->present)
        return NULL;
    /* not equal: the whole interval is on one side of 1, and gms in it */
    return m->equal ? "equal" : m->gms > 1 ? "slower" : "faster";
}

const struct duet_label_read *duet_file_label(const struct duet_file *df, const char *name)
{
    for (size_t i = 0; i < df->nlabels; i++)
        if (!strcmp(df->labels[i].name, name))
            return &df->labels[i];
    return NULL;
}
