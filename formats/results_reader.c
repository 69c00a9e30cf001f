/* results_reader.c - reads one results file of `preplay run` or `preplay
 * drive` (formats/RESULTS.md) into struct results_file, for files from
 * other machines: a wrong type, an out-of-range number or a missing
 * required key is an error naming the file and the key; keys it does not
 * know are ignored (newer writers may add some), and the keys it knows are
 * listed once, in results_known_keys. Never computes statistics. */
#include "results_reader.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const results_kind_keys[RESULTS_NKINDS] = {"cpu_s",  "file_s", "net_s", "external_s",
                                                       "call_s", "lock_s", "db_s"};

static const char *const results_keys_drive[] = {
    "format", "version",     "version_minor", "kind",       "plan",      "recording_id",
    "target", "mode",        "speed",         "duration_s", "elapsed_s", "requests",
    "failed", "connections", "lateness",      "labels",     "samples",   NULL};
static const char *const results_keys_run[] = {"format",
                                               "version",
                                               "version_minor",
                                               "kind",
                                               "plan",
                                               "recording_id",
                                               "instance",
                                               "price",
                                               "mode",
                                               "speed",
                                               "cpu_ratio",
                                               "cpu_ratio_ci",
                                               "cpu_ratio_in_bands",
                                               "no_deps",
                                               "p0",
                                               "scale",
                                               "stopped",
                                               "error",
                                               "schedule_s",
                                               "schedule_requests",
                                               "hosts",
                                               "placement",
                                               "counters",
                                               "labels",
                                               "intervals",
                                               "resources",
                                               "db_errors",
                                               "db_cut",
                                               "state_restore",
                                               "warmup",
                                               "samples",
                                               NULL};
static const char *const results_keys_label[] = {"count",    "mean_s",   "median_s",  "p95_s",
                                                 "p99_s",    "min_s",    "max_s",     "median_ci_s",
                                                 "p95_ci_s", "p99_ci_s", "cpu_share", NULL};
static const char *const results_keys_sample[] = {"label", "sent_s",  "response_s", "late_s",
                                                  "ok",    "failure", "interval",   NULL};
static const char *const results_keys_lateness[] = {"median_s", "p99_s", "max_s", NULL};
static const char *const results_keys_interval[] = {
    "interval",        "requests",      "failed",   "length_s",
    "schedule_from_s", "schedule_to_s", "lateness", "p",
    "action",          "held_open_by",  NULL};
static const char *const results_keys_host[] = {"host", "address", "controller_address", "dir",
                                                NULL};
static const char *const results_keys_resource[] = {
    "blocks", "cpu_s", "file_s", "net_s", "external_s", "call_s", "lock_s", "db_s", NULL};
static const char *const results_keys_db_error[] = {"query",   "count",     "code",
                                                    "message", "component", NULL};
static const char *const results_keys_state_restore[] = {"db_method", "db_dump_s", "per_interval",
                                                         NULL};
static const char *const results_keys_restore[] = {"interval", "files_s", "db_s", NULL};
static const char *const results_keys_warmup[] = {"length_s", "requests", "failed", NULL};
static const char *const results_keys_placement[] = {"emulated_type", "client", "db", NULL};
static const char *const results_keys_placement_client[] = {"host", "cpu_cgroup", "in_type", NULL};
static const char *const results_keys_placement_db[] = {"address",    "transport", "where",
                                                        "cpu_cgroup", "in_type",   NULL};
static const char *const results_keys_counters[] = {"window_s", "tick_s",  "environment",
                                                    "names",    "windows", NULL};
static const char *const results_keys_environment[] = {
    "host", "cpus", "memory_bytes", "cpu_model", "kernel", "emulated_type", NULL};
static const char *const results_keys_counter_window[] = {"interval", "start_s", "length_s",
                                                          "values", NULL};

const char *const *results_known_keys(enum results_object o)
{
    static const char *const *const keys[RESULTS_NOBJECTS] = {
        [RESULTS_OBJ_DRIVE] = results_keys_drive,
        [RESULTS_OBJ_RUN] = results_keys_run,
        [RESULTS_OBJ_LABEL] = results_keys_label,
        [RESULTS_OBJ_SAMPLE] = results_keys_sample,
        [RESULTS_OBJ_LATENESS] = results_keys_lateness,
        [RESULTS_OBJ_INTERVAL] = results_keys_interval,
        [RESULTS_OBJ_HOST] = results_keys_host,
        [RESULTS_OBJ_RESOURCE] = results_keys_resource,
        [RESULTS_OBJ_DB_ERROR] = results_keys_db_error,
        [RESULTS_OBJ_STATE_RESTORE] = results_keys_state_restore,
        [RESULTS_OBJ_RESTORE] = results_keys_restore,
        [RESULTS_OBJ_PLACEMENT] = results_keys_placement,
        [RESULTS_OBJ_PLACEMENT_CLIENT] = results_keys_placement_client,
        [RESULTS_OBJ_PLACEMENT_DB] = results_keys_placement_db,
        [RESULTS_OBJ_COUNTERS] = results_keys_counters,
        [RESULTS_OBJ_ENVIRONMENT] = results_keys_environment,
        [RESULTS_OBJ_COUNTER_WINDOW] = results_keys_counter_window,
        [RESULTS_OBJ_WARMUP] = results_keys_warmup,
    };
    return (unsigned)o < RESULTS_NOBJECTS ? keys[o] : NULL;
}

static char *results_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* A number (integer or real) at key, or NAN when absent; -1 when present
 * but not a finite number. */
static int results_number(json_t *obj, const char *key, double *out)
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

/* A time at key: absent (NAN) or finite within [min, RESULTS_MAX_SECONDS]
 * (min_exclusive: > 0). -1 otherwise. */
static int results_seconds(json_t *obj, const char *key, int positive, double *out)
{
    if (results_number(obj, key, out))
        return -1;
    if (isnan(*out))
        return 0;
    return (positive ? *out > 0 : *out >= 0) && *out <= RESULTS_MAX_SECONDS ? 0 : -1;
}

/* A count at key: absent (-1 in *out, when !required) or an integer in
 * [0, RESULTS_MAX_COUNT]. -1 otherwise. */
static int results_count(json_t *obj, const char *key, int required, long long *out)
{
    json_t *v = json_object_get(obj, key);
    *out = -1;
    if (!v)
        return required ? -1 : 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (unsigned long long)json_integer_value(v) > RESULTS_MAX_COUNT)
        return -1;
    *out = (long long)json_integer_value(v);
    return 0;
}

/* "PATH: WHAT: N entries exceed the limit L" when n > limit. */
static int results_too_many(size_t n, size_t limit, const char *what, const char *path, char *err,
                            size_t errlen)
{
    if (n <= limit)
        return 0;
    snprintf(err, errlen, "%s: %s: %zu entries exceed the limit %zu", path, what, n, limit);
    return -1;
}

static int results_read_stat(json_t *lo, const char *file, struct results_label *l,
                             enum results_metric m, char *err, size_t errlen)
{
    static const char *const keys[RESULTS_NMETRICS] = {"median_s", "p95_s", "p99_s"};
    static const char *const ci_keys[RESULTS_NMETRICS] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    if (results_seconds(lo, keys[m], 0, &l->value[m]) || isnan(l->value[m])) {
        snprintf(err, errlen, "%s: labels.\"%s\".%s: expected a number of seconds in [0, %g]", file,
                 l->name, keys[m], RESULTS_MAX_SECONDS);
        return -1;
    }
    l->lo[m] = l->hi[m] = l->value[m];
    l->has_band[m] = 0;
    json_t *ci = json_object_get(lo, ci_keys[m]);
    if (!ci)
        return 0;
    if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(json_array_get(ci, 0)) ||
        !json_is_number(json_array_get(ci, 1)) || json_number_value(json_array_get(ci, 0)) < 0 ||
        json_number_value(json_array_get(ci, 0)) > json_number_value(json_array_get(ci, 1)) ||
        !(json_number_value(json_array_get(ci, 1)) <= RESULTS_MAX_SECONDS)) {
        snprintf(err, errlen,
                 "%s: labels.\"%s\".%s: expected [low, high] with 0 <= low <= high <= %g", file,
                 l->name, ci_keys[m], RESULTS_MAX_SECONDS);
        return -1;
    }
    l->lo[m] = json_number_value(json_array_get(ci, 0));
    l->hi[m] = json_number_value(json_array_get(ci, 1));
    l->has_band[m] = 1;
    return 0;
}

struct results_label *results_file_label(const struct results_file *rf, const char *name)
{
    for (size_t i = 0; i < rf->nlabels; i++)
        if (!strcmp(rf->labels[i].name, name))
            return &rf->labels[i];
    return NULL;
}

static int results_read_labels(json_t *labels, struct results_file *rf, const char *path, char *err,
                               size_t errlen)
{
    size_t n = json_object_size(labels);
    if (results_too_many(n, RESULTS_MAX_LABELS, "labels", path, err, errlen))
        return -1;
    rf->labels = calloc(n ? n : 1, sizeof *rf->labels);
    if (!rf->labels)
        goto oom;
    const char *name;
    json_t *lo;
    json_object_foreach(labels, name, lo)
    {
        struct results_label *l = &rf->labels[rf->nlabels];
        if (!(l->name = results_strdup(name)))
            goto oom;
        rf->nlabels++;
        if (!json_is_object(lo)) {
            snprintf(err, errlen, "%s: labels.\"%s\": expected an object", path, name);
            return -1;
        }
        long long c;
        if (results_count(lo, "count", 1, &c)) {
            snprintf(err, errlen, "%s: labels.\"%s\".count: expected an integer in [0, %llu]", path,
                     name, RESULTS_MAX_COUNT);
            return -1;
        }
        l->count = (size_t)c;
        for (int m = 0; m < RESULTS_NMETRICS; m++)
            if (results_read_stat(lo, path, l, (enum results_metric)m, err, errlen))
                return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

static int results_push(double **v, size_t *n, double x)
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

static int results_push_u32(uint32_t **v, size_t n, uint32_t x)
{
    /* the same growth as results_push, called before it bumps n */
    if ((n & (n - 1)) == 0) {
        uint32_t *nv = realloc(*v, (n ? n * 2 : 1) * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
    }
    (*v)[n] = x;
    return 0;
}

static int results_read_samples(json_t *samples, struct results_file *rf, const char *path,
                                char *err, size_t errlen)
{
    if (!json_is_array(samples)) {
        snprintf(err, errlen, "%s: samples: expected an array", path);
        return -1;
    }
    if (results_too_many(json_array_size(samples), RESULTS_MAX_SAMPLES, "samples", path, err,
                         errlen))
        return -1;
    size_t i;
    json_t *s;
    json_array_foreach(samples, i, s)
    {
        json_t *label = json_object_get(s, "label"), *ok = json_object_get(s, "ok");
        double rt;
        if (!json_is_string(label) || results_seconds(s, "response_s", 0, &rt) || isnan(rt) ||
            (ok && !json_is_boolean(ok))) {
            snprintf(err, errlen,
                     "%s: samples[%zu]: expected {\"label\": string, \"response_s\": seconds in "
                     "[0, %g], \"ok\": bool}",
                     path, i, RESULTS_MAX_SECONDS);
            return -1;
        }
        /* compare counts the samples of the stop rule's intervals by it:
         * -1 or 1e308 were taken as "not given" */
        json_t *iv = json_object_get(s, "interval");
        if (iv && !json_is_null(iv) &&
            (!json_is_integer(iv) || json_integer_value(iv) < 1 ||
             json_integer_value(iv) > RESULTS_MAX_INTERVALS)) {
            snprintf(err, errlen,
                     "%s: samples[%zu].interval: expected an integer in [1, %u] or null", path, i,
                     RESULTS_MAX_INTERVALS);
            return -1;
        }
        const char *name = json_string_value(label);
        struct results_label *l = results_file_label(rf, name[0] ? name : "(unlabelled)");
        if (ok && !json_is_true(ok))
            continue; /* a label whose every request failed has no summary */
        if (!l) {
            snprintf(err, errlen, "%s: samples[%zu]: label \"%s\" is not in labels", path, i, name);
            return -1;
        }
        uint32_t ivn =
            json_is_integer(iv) ? (uint32_t)json_integer_value(iv) : 0; /* 0: not given */
        if (results_push_u32(&l->sample_interval, l->nsamples, ivn) ||
            results_push(&l->samples, &l->nsamples, rt)) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
    }
    return 0;
}

static int results_read_intervals(json_t *iv, struct results_file *rf, const char *path, char *err,
                                  size_t errlen)
{
    if (!json_is_array(iv)) {
        snprintf(err, errlen, "%s: intervals: expected an array", path);
        return -1;
    }
    if (results_too_many(json_array_size(iv), RESULTS_MAX_INTERVALS, "intervals", path, err,
                         errlen))
        return -1;
    rf->intervals = calloc(json_array_size(iv) + 1, sizeof *rf->intervals);
    if (!rf->intervals) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t i;
    json_t *o;
    json_array_foreach(iv, i, o)
    {
        struct results_interval_read *x = &rf->intervals[i];
        long long req, failed;
        if (!json_is_object(o) || results_count(o, "requests", 1, &req) ||
            results_number(o, "p", &x->p)) {
            snprintf(err, errlen,
                     "%s: intervals[%zu]: expected {\"requests\": integer in [0, %llu], \"p\": "
                     "number or null}",
                     path, i, RESULTS_MAX_COUNT);
            return -1;
        }
        x->requests = (size_t)req;
        if (!isnan(x->p) && !(x->p >= 0 && x->p <= 1)) {
            snprintf(err, errlen, "%s: intervals[%zu].p: expected a probability in [0, 1] or null",
                     path, i);
            return -1;
        }
        if (results_seconds(o, "length_s", 0, &x->length_s)) {
            snprintf(err, errlen, "%s: intervals[%zu].length_s: expected seconds in [0, %g]", path,
                     i, RESULTS_MAX_SECONDS);
            return -1;
        }
        if (results_count(o, "failed", 0, &failed)) {
            snprintf(err, errlen, "%s: intervals[%zu].failed: expected an integer in [0, %llu]",
                     path, i, RESULTS_MAX_COUNT);
            return -1;
        }
        x->failed = failed < 0 ? 0 : (size_t)failed;
        if (results_number(o, "schedule_from_s", &x->schedule_from_s) ||
            results_number(o, "schedule_to_s", &x->schedule_to_s) || x->schedule_from_s < 0 ||
            x->schedule_to_s < x->schedule_from_s) {
            snprintf(err, errlen,
                     "%s: intervals[%zu]: schedule_from_s and schedule_to_s: expected numbers, "
                     "0 <= from <= to",
                     path, i);
            return -1;
        }
        rf->nintervals++;
    }
    return 0;
}

/* One resources.COMPONENT.LABEL entry: integer "blocks" and the seconds
 * per kind (absent: NAN). */
static int results_read_resource(json_t *o, const char *comp, const char *name,
                                 struct results_file *rf, const char *path, char *err,
                                 size_t errlen)
{
    long long blocks;
    if (!json_is_object(o) || results_count(o, "blocks", 1, &blocks)) {
        snprintf(err, errlen,
                 "%s: resources.\"%s\".\"%s\": expected an object with integer \"blocks\"", path,
                 comp, name);
        return -1;
    }
    struct results_resource *r = &rf->resources[rf->nresources];
    if (!(r->component = results_strdup(comp)) || !(r->label = results_strdup(name))) {
        free(r->component);
        r->component = NULL;
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    rf->nresources++;
    r->blocks = (uint64_t)blocks;
    /* a total over the label's blocks, each at most RESULTS_MAX_SECONDS
     * (1e308 made the report's time chart loop over ticks without end) */
    double most = (double)(blocks ? blocks : 1) * RESULTS_MAX_SECONDS;
    for (int k = 0; k < RESULTS_NKINDS; k++)
        if (results_number(o, results_kind_keys[k], &r->s[k]) ||
            (!isnan(r->s[k]) && !(r->s[k] >= 0 && r->s[k] <= most))) {
            snprintf(err, errlen,
                     "%s: resources.\"%s\".\"%s\".%s: expected seconds in [0, %g] (%lld blocks "
                     "x %g)",
                     path, comp, name, results_kind_keys[k], most, blocks ? blocks : 1,
                     RESULTS_MAX_SECONDS);
            return -1;
        }
    return 0;
}

/* "resources": {COMPONENT: {LABEL: {"blocks", "cpu_s", ...}}}. */
static int results_read_resources(json_t *res, struct results_file *rf, const char *path, char *err,
                                  size_t errlen)
{
    if (!json_is_object(res)) {
        snprintf(err, errlen, "%s: resources: expected an object (component -> label -> times)",
                 path);
        return -1;
    }
    size_t total = 0;
    const char *comp, *name;
    json_t *co, *o;
    json_object_foreach(res, comp, co)
    {
        if (!json_is_object(co)) {
            snprintf(err, errlen, "%s: resources.\"%s\": expected an object (label -> times)", path,
                     comp);
            return -1;
        }
        total += json_object_size(co);
    }
    if (results_too_many(total, RESULTS_MAX_RESOURCES, "resources", path, err, errlen))
        return -1;
    rf->resources = calloc(total + 1, sizeof *rf->resources);
    if (!rf->resources) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    json_object_foreach(res, comp, co)
    {
        json_object_foreach(co, name, o)
        {
            if (results_read_resource(o, comp, name, rf, path, err, errlen))
                return -1;
        }
    }
    return 0;
}

/* A string at key of a db_errors entry, "" when absent; NULL when out of
 * memory, *bad when present but not a string. */
static char *results_db_string(json_t *o, const char *key, int *bad)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v))
        *bad = 1;
    return results_strdup(json_is_string(v) ? json_string_value(v) : "");
}

/* "db_errors": [{component, query, count, code, message}]. */
static int results_read_db_errors(json_t *de, struct results_file *rf, const char *path, char *err,
                                  size_t errlen)
{
    if (!json_is_array(de)) {
        snprintf(err, errlen, "%s: db_errors: expected an array", path);
        return -1;
    }
    if (results_too_many(json_array_size(de), RESULTS_MAX_DB_ERRORS, "db_errors", path, err,
                         errlen))
        return -1;
    rf->db_errors = calloc(json_array_size(de) + 1, sizeof *rf->db_errors);
    if (!rf->db_errors)
        goto oom;
    size_t i;
    json_t *o;
    json_array_foreach(de, i, o)
    {
        json_t *code = json_object_get(o, "code");
        long long count;
        if (!json_is_object(o) || results_count(o, "count", 1, &count) ||
            (code && !json_is_integer(code))) {
            snprintf(err, errlen,
                     "%s: db_errors[%zu]: expected {\"count\": integer in [0, %llu], \"code\": "
                     "integer}",
                     path, i, RESULTS_MAX_COUNT);
            return -1;
        }
        struct results_db_error *e = &rf->db_errors[rf->ndb_errors++];
        int bad = 0;
        e->component = results_db_string(o, "component", &bad);
        e->query = results_db_string(o, "query", &bad);
        e->message = results_db_string(o, "message", &bad);
        if (!e->component || !e->query || !e->message)
            goto oom;
        if (bad) {
            snprintf(err, errlen,
                     "%s: db_errors[%zu]: component, query and message must be strings", path, i);
            return -1;
        }
        e->count = (uint64_t)count;
        e->code = code ? (long long)json_integer_value(code) : 0;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

/* "format" and "version": this reader's format and version, or an error. */
/* "format" and "version": this reader's format and version, or an error;
 * version 1 is refused with what its response_s meant. */
static int results_read_format(json_t *root, const char *path, char *err, size_t errlen)
{
    json_t *format = json_object_get(root, "format"), *version = json_object_get(root, "version");
    if (!json_is_object(root) || !json_is_string(format) ||
        strcmp(json_string_value(format), RESULTS_FORMAT)) {
        snprintf(err, errlen, "%s: not a preplay results file (no \"format\": \"preplay-results\")",
                 path);
        return -1;
    }
    if (json_is_integer(version) && json_integer_value(version) == 1) {
        snprintf(err, errlen,
                 "%s: results version 1 is not supported (this preplay reads %d): its response_s "
                 "counts from the first byte sent, not from the scheduled arrival; replay again "
                 "(or add late_s to every response_s)",
                 path, RESULTS_VERSION);
        return -1;
    }
    if (!json_is_integer(version) || json_integer_value(version) != RESULTS_VERSION) {
        if (json_is_integer(version))
            snprintf(err, errlen,
                     "%s: results version %lld is not supported (this preplay reads %d)", path,
                     (long long)json_integer_value(version), RESULTS_VERSION);
        else
            snprintf(err, errlen, "%s: version: expected an integer (this preplay reads %d)", path,
                     RESULTS_VERSION);
        return -1;
    }
    return 0;
}

/* "version_minor": absent (0, a 2.0 file) or an integer >= 0; a later
 * minor only adds keys this reader ignores. */
static int results_read_minor(json_t *root, struct results_file *rf, const char *path, char *err,
                              size_t errlen)
{
    json_t *minor = json_object_get(root, "version_minor");
    if (!minor)
        return 0;
    if (!json_is_integer(minor) || json_integer_value(minor) < 0 ||
        json_integer_value(minor) > 65535) {
        snprintf(err, errlen, "%s: version_minor: expected an integer 0-65535", path);
        return -1;
    }
    rf->version_minor = (int)json_integer_value(minor);
    return 0;
}

/* "cpu_ratio" (> 0, or null) and its optional 95 % interval "cpu_ratio_ci"
 * ([low, high] around it). */
static int results_read_cpu_ratio(json_t *root, struct results_file *rf, const char *path,
                                  char *err, size_t errlen)
{
    rf->cpu_ratio_lo = rf->cpu_ratio_hi = NAN;
    if (results_number(root, "cpu_ratio", &rf->cpu_ratio) ||
        (!isnan(rf->cpu_ratio) && !(rf->cpu_ratio > 0))) {
        snprintf(err, errlen, "%s: cpu_ratio: expected a number > 0 or null", path);
        return -1;
    }
    json_t *ci = json_object_get(root, "cpu_ratio_ci");
    if (!ci || json_is_null(ci))
        return 0;
    double lo =
        json_is_number(json_array_get(ci, 0)) ? json_number_value(json_array_get(ci, 0)) : NAN;
    double hi =
        json_is_number(json_array_get(ci, 1)) ? json_number_value(json_array_get(ci, 1)) : NAN;
    if (!json_is_array(ci) || json_array_size(ci) != 2 || !(lo > 0 && lo <= hi) || !isfinite(hi) ||
        !(lo <= rf->cpu_ratio && rf->cpu_ratio <= hi)) {
        snprintf(err, errlen,
                 "%s: cpu_ratio_ci: expected [low, high] with 0 < low <= cpu_ratio <= high", path);
        return -1;
    }
    rf->cpu_ratio_lo = lo;
    rf->cpu_ratio_hi = hi;
    return 0;
}

/* A string of at most 4 KiB or null at key in obj (absent: null): 0 with
 * *out malloc'ed or NULL, -1 with err naming what.key. */
static int results_placement_string(json_t *obj, const char *what, const char *key, char **out,
                                    const char *path, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) > 4096) {
        snprintf(err, errlen, "%s: %s.%s: expected a string of at most 4096 bytes or null", path,
                 what, key);
        return -1;
    }
    if (!(*out = results_strdup(json_string_value(v)))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* true, false or null (absent: null) at key: 0 with *out 1/0/-1, or -1. */
static int results_placement_tristate(json_t *obj, const char *what, const char *key, int *out,
                                      const char *path, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    *out = !v || json_is_null(v) ? -1 : json_is_boolean(v) ? json_is_true(v) : -2;
    if (*out == -2) {
        snprintf(err, errlen, "%s: %s.%s: expected true, false or null", path, what, key);
        return -1;
    }
    return 0;
}

/* *s is NULL or one of the NULL-terminated words, or an error. */
static int results_placement_word(const char *s, const char *what, const char *const *words,
                                  const char *path, char *err, size_t errlen)
{
    char list[128] = "";
    size_t n = 0;
    for (size_t i = 0; s && words[i]; i++) {
        if (!strcmp(s, words[i]))
            return 0;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                              i == 0         ? ""
                              : words[i + 1] ? ", "
                                             : " or ",
                              words[i]);
        if (n >= sizeof list)
            n = sizeof list - 1;
    }
    if (!s)
        return 0;
    snprintf(err, errlen, "%s: %s: expected %s, not \"%.64s\"", path, what, list, s);
    return -1;
}

/* "placement" (2.1): absent or null leaves present 0. */
static int results_read_placement(json_t *root, struct results_file *rf, const char *path,
                                  char *err, size_t errlen)
{
    static const char *const transports[] = {"tcp", "unix", NULL};
    static const char *const wheres[] = {"local", "host", "remote", NULL};
    struct results_placement_read *pl = &rf->placement;
    json_t *o = json_object_get(root, "placement");
    pl->client_in_type = pl->db_in_type = -1;
    if (!o || json_is_null(o))
        return 0;
    json_t *client = json_object_get(o, "client"), *db = json_object_get(o, "db");
    if (!json_is_object(o) || (client && !json_is_object(client) && !json_is_null(client)) ||
        (db && !json_is_object(db) && !json_is_null(db))) {
        snprintf(err, errlen,
                 "%s: placement: expected {\"emulated_type\", \"client\": {...}, \"db\": "
                 "{...} or null}",
                 path);
        return -1;
    }
    pl->present = 1;
    pl->has_db = json_is_object(db);
    if (results_placement_string(o, "placement", "emulated_type", &pl->emulated_type, path, err,
                                 errlen) ||
        results_placement_string(client, "placement.client", "host", &pl->client_host, path, err,
                                 errlen) ||
        results_placement_string(client, "placement.client", "cpu_cgroup", &pl->client_cpu_cgroup,
                                 path, err, errlen) ||
        results_placement_tristate(client, "placement.client", "in_type", &pl->client_in_type, path,
                                   err, errlen) ||
        results_placement_string(db, "placement.db", "address", &pl->db_address, path, err,
                                 errlen) ||
        results_placement_string(db, "placement.db", "transport", &pl->db_transport, path, err,
                                 errlen) ||
        results_placement_string(db, "placement.db", "where", &pl->db_where, path, err, errlen) ||
        results_placement_string(db, "placement.db", "cpu_cgroup", &pl->db_cpu_cgroup, path, err,
                                 errlen) ||
        results_placement_tristate(db, "placement.db", "in_type", &pl->db_in_type, path, err,
                                   errlen))
        return -1;
    return results_placement_word(pl->db_transport, "placement.db.transport", transports, path, err,
                                  errlen) ||
                   results_placement_word(pl->db_where, "placement.db.where", wheres, path, err,
                                          errlen)
               ? -1
               : 0;
}

/* The scalar keys of the root: kind, instance, price, recording_id, plan,
 * stopped, error, p0, elapsed_s, failed, schedule_s, schedule_requests. */
static int results_read_head(json_t *root, struct results_file *rf, const char *path, char *err,
                             size_t errlen)
{
    json_t *kind = json_object_get(root, "kind");
    const char *k = json_is_string(kind) ? json_string_value(kind) : "";
    if (strcmp(k, "run") && strcmp(k, "drive")) {
        snprintf(err, errlen, "%s: kind: expected \"run\" or \"drive\"", path);
        return -1;
    }
    rf->is_run = !strcmp(k, "run");
    json_t *inst = json_object_get(root, "instance");
    if (inst && !json_is_string(inst)) {
        snprintf(err, errlen, "%s: instance: expected a string", path);
        return -1;
    }
    if (inst && !(rf->instance = results_strdup(json_string_value(inst))))
        goto oom;
    if (results_number(root, "price", &rf->price) ||
        (!isnan(rf->price) && !(rf->price >= 0 && rf->price <= RESULTS_MAX_PRICE))) {
        snprintf(err, errlen, "%s: price: expected a number in [0, %g] (USD per hour) or null",
                 path, RESULTS_MAX_PRICE);
        return -1;
    }
    json_t *rid = json_object_get(root, "recording_id"), *plan = json_object_get(root, "plan");
    rf->recording_id = results_strdup(json_is_string(rid) ? json_string_value(rid) : "");
    rf->plan = results_strdup(json_is_string(plan) ? json_string_value(plan) : "");
    json_t *stopped = json_object_get(root, "stopped"), *note = json_object_get(root, "error");
    if (rf->is_run && !json_is_boolean(stopped)) {
        snprintf(err, errlen, "%s: stopped: expected true or false", path);
        return -1;
    }
    rf->stopped = json_is_true(stopped);
    rf->error = results_strdup(json_is_string(note) ? json_string_value(note) : "");
    if (results_number(root, "p0", &rf->p0) || (!isnan(rf->p0) && !(rf->p0 > 0 && rf->p0 <= 1))) {
        snprintf(err, errlen, "%s: p0: expected a probability in (0, 1] or null", path);
        return -1;
    }
    if (!rf->recording_id || !rf->plan || !rf->error)
        goto oom;
    if (results_seconds(root, "elapsed_s", 1, &rf->elapsed_s)) {
        snprintf(err, errlen, "%s: elapsed_s: expected seconds in (0, %g]", path,
                 RESULTS_MAX_SECONDS);
        return -1;
    }
    long long n;
    if (results_count(root, "failed", 0, &n)) {
        snprintf(err, errlen, "%s: failed: expected an integer in [0, %llu]", path,
                 RESULTS_MAX_COUNT);
        return -1;
    }
    rf->failed = n < 0 ? NAN : (double)n;
    if (results_count(root, "requests", 0, &n)) {
        snprintf(err, errlen, "%s: requests: expected an integer in [0, %llu]", path,
                 RESULTS_MAX_COUNT);
        return -1;
    }
    if (results_number(root, "schedule_s", &rf->schedule_s) || rf->schedule_s < 0 ||
        results_number(root, "schedule_requests", &rf->schedule_requests) ||
        rf->schedule_requests < 0 || rf->schedule_requests > (double)RESULTS_MAX_COUNT) {
        snprintf(err, errlen,
                 "%s: schedule_s and schedule_requests must be numbers >= 0 (requests <= %llu)",
                 path, RESULTS_MAX_COUNT);
        return -1;
    }
    if (results_number(root, "db_cut", &rf->db_cut) || rf->db_cut < 0 ||
        rf->db_cut > (double)RESULTS_MAX_COUNT) {
        snprintf(err, errlen, "%s: db_cut: expected an integer in [0, %llu]", path,
                 RESULTS_MAX_COUNT);
        return -1;
    }
    return results_read_cpu_ratio(root, rf, path, err, errlen);
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

/* "counters.environment": each key a string, a number or null. */
static int results_read_environment(json_t *e, struct results_counters_read *c, const char *path,
                                    char *err, size_t errlen)
{
    if (!e || json_is_null(e))
        return 0;
    if (!json_is_object(e)) {
        snprintf(err, errlen, "%s: counters.environment: expected an object", path);
        return -1;
    }
    const char *keys[4] = {"host", "cpu_model", "kernel", "emulated_type"};
    char **outs[4] = {&c->host, &c->cpu_model, &c->kernel, &c->emulated_type};
    for (int i = 0; i < 4; i++)
        if (results_placement_string(e, "counters.environment", keys[i], outs[i], path, err,
                                     errlen))
            return -1;
    json_t *cpus = json_object_get(e, "cpus");
    if (cpus && !json_is_null(cpus) &&
        (!json_is_integer(cpus) || json_integer_value(cpus) < 1 ||
         json_integer_value(cpus) > 1 << 20)) {
        snprintf(err, errlen, "%s: counters.environment.cpus: expected an integer >= 1 or null",
                 path);
        return -1;
    }
    c->cpus = cpus && json_is_integer(cpus) ? (long)json_integer_value(cpus) : 0;
    if (results_number(e, "memory_bytes", &c->memory_bytes) || c->memory_bytes < 0) {
        snprintf(err, errlen, "%s: counters.environment.memory_bytes: expected a number >= 0",
                 path);
        return -1;
    }
    return 0;
}

/* "counters.names": unique non-empty strings, at most the limits. */
static int results_read_counter_names(json_t *names, struct results_counters_read *c,
                                      const char *path, char *err, size_t errlen)
{
    if (!json_is_array(names)) {
        snprintf(err, errlen, "%s: counters.names: expected an array of names", path);
        return -1;
    }
    if (results_too_many(json_array_size(names), RESULTS_MAX_COUNTERS, "counters.names", path, err,
                         errlen))
        return -1;
    size_t n = json_array_size(names);
    if (!(c->names = calloc(n ? n : 1, sizeof *c->names)))
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(names, i));
        if (!s || !s[0] || strlen(s) > RESULTS_MAX_COUNTER_NAME) {
            snprintf(err, errlen,
                     "%s: counters.names[%zu]: expected a non-empty string of at most %u bytes",
                     path, i, RESULTS_MAX_COUNTER_NAME);
            return -1;
        }
        if (results_counter_index(c, s) >= 0) {
            snprintf(err, errlen, "%s: counters.names[%zu]: \"%s\" is listed twice", path, i, s);
            return -1;
        }
        if (!(c->names[i] = results_strdup(s)))
            goto oom;
        c->nnames++;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

/* One "counters.windows" entry; values as many as names, each a number
 * >= 0 or null. */
static int results_read_counter_window(json_t *w, size_t i, struct results_counters_read *c,
                                       const char *path, char *err, size_t errlen)
{
    struct results_counter_window_read *cw = &c->windows[i];
    json_t *iv = json_object_get(w, "interval"), *vals = json_object_get(w, "values");
    if (!json_is_object(w) || !json_is_integer(iv) || json_integer_value(iv) < 1 ||
        results_number(w, "start_s", &cw->start_s) || !(cw->start_s >= 0) ||
        results_number(w, "length_s", &cw->length_s) || !(cw->length_s > 0)) {
        snprintf(err, errlen,
                 "%s: counters.windows[%zu]: expected {\"interval\" >= 1, \"start_s\" >= 0, "
                 "\"length_s\" > 0, \"values\"}",
                 path, i);
        return -1;
    }
    cw->interval = (long)json_integer_value(iv);
    if (!json_is_array(vals) || json_array_size(vals) != c->nnames) {
        snprintf(err, errlen,
                 "%s: counters.windows[%zu].values: expected %zu values (one per name)", path, i,
                 c->nnames);
        return -1;
    }
    if (!(cw->values = malloc((c->nnames ? c->nnames : 1) * sizeof *cw->values))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t k = 0; k < c->nnames; k++) {
        json_t *v = json_array_get(vals, k);
        cw->values[k] = json_is_number(v) ? json_number_value(v) : NAN;
        if (!json_is_null(v) &&
            !(json_is_number(v) && isfinite(cw->values[k]) && cw->values[k] >= 0)) {
            snprintf(err, errlen,
                     "%s: counters.windows[%zu].values[%zu] (%s): expected a number >= 0 or null",
                     path, i, k, c->names[k]);
            return -1;
        }
    }
    return 0;
}

/* "counters" (2.2): absent or null leaves present 0. */
static int results_read_counters(json_t *root, struct results_file *rf, const char *path, char *err,
                                 size_t errlen)
{
    struct results_counters_read *c = &rf->counters;
    json_t *o = json_object_get(root, "counters");
    c->memory_bytes = NAN;
    if (!o || json_is_null(o))
        return 0;
    c->present = 1;
    if (!json_is_object(o) || results_number(o, "window_s", &c->window_s) ||
        !(c->window_s > 0 && c->window_s <= 86400) || results_number(o, "tick_s", &c->tick_s) ||
        !(c->tick_s > 0 && c->tick_s <= c->window_s)) {
        snprintf(err, errlen,
                 "%s: counters: expected {\"window_s\" in (0, 86400], \"tick_s\" in (0, window_s], "
                 "\"names\", \"windows\"}",
                 path);
        return -1;
    }
    if (results_read_environment(json_object_get(o, "environment"), c, path, err, errlen) ||
        results_read_counter_names(json_object_get(o, "names"), c, path, err, errlen))
        return -1;
    json_t *ws = json_object_get(o, "windows");
    if (!json_is_array(ws)) {
        snprintf(err, errlen, "%s: counters.windows: expected an array of windows", path);
        return -1;
    }
    if (results_too_many(json_array_size(ws), RESULTS_MAX_COUNTER_WINDOWS, "counters.windows", path,
                         err, errlen))
        return -1;
    size_t n = json_array_size(ws);
    if (!(c->windows = calloc(n ? n : 1, sizeof *c->windows))) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        c->nwindows++;
        if (results_read_counter_window(json_array_get(ws, i), i, c, path, err, errlen))
            return -1;
    }
    return 0;
}

long results_counter_index(const struct results_counters_read *c, const char *name)
{
    for (size_t i = 0; i < c->nnames; i++)
        if (c->names[i] && !strcmp(c->names[i], name))
            return (long)i;
    return -1;
}

void results_counters_free(struct results_counters_read *c)
{
    free(c->host);
    free(c->cpu_model);
    free(c->kernel);
    free(c->emulated_type);
    for (size_t i = 0; i < c->nnames; i++)
        free(c->names[i]);
    free(c->names);
    for (size_t i = 0; i < c->nwindows; i++)
        free(c->windows[i].values);
    free(c->windows);
    memset(c, 0, sizeof *c);
    c->memory_bytes = NAN;
}

/* Everything after "format" and "version", in the order errors are found. */
static int results_read_root(json_t *root, struct results_file *rf, const char *path, char *err,
                             size_t errlen)
{
    if (results_read_head(root, rf, path, err, errlen))
        return -1;
    json_t *labels = json_object_get(root, "labels");
    if (!json_is_object(labels)) {
        snprintf(err, errlen, "%s: labels: expected an object (label -> summary)", path);
        return -1;
    }
    if (results_read_labels(labels, rf, path, err, errlen))
        return -1;
    json_t *samples = json_object_get(root, "samples");
    if (samples && results_read_samples(samples, rf, path, err, errlen))
        return -1;
    json_t *iv = json_object_get(root, "intervals");
    if (iv && results_read_intervals(iv, rf, path, err, errlen))
        return -1;
    rf->has_intervals = iv != NULL;
    if (rf->is_run && !iv) {
        snprintf(err, errlen, "%s: intervals: missing (a run file lists its intervals)", path);
        return -1;
    }
    json_t *res = json_object_get(root, "resources");
    if (res && results_read_resources(res, rf, path, err, errlen))
        return -1;
    json_t *de = json_object_get(root, "db_errors");
    if (de && results_read_db_errors(de, rf, path, err, errlen))
        return -1;
    return results_read_placement(root, rf, path, err, errlen) ||
                   results_read_counters(root, rf, path, err, errlen)
               ? -1
               : 0;
}

/* What a results_file holds before anything is read: nothing, and the
 * optional numbers absent (NAN). */
static void results_file_init(struct results_file *rf)
{
    memset(rf, 0, sizeof *rf);
    rf->price = rf->p0 = rf->elapsed_s = rf->failed = rf->schedule_s = rf->schedule_requests =
        rf->db_cut = NAN;
}

int results_read(const char *path, struct results_file *rf, char *err, size_t errlen)
{
    json_t *root = results_json_load(path, err, errlen);
    if (!root) {
        results_file_init(rf);
        return -1;
    }
    int rc = results_read_json(root, path, rf, err, errlen);
    json_decref(root);
    return rc;
}

int results_read_json(json_t *root, const char *path, struct results_file *rf, char *err,
                      size_t errlen)
{
    results_file_init(rf);
    if (results_read_format(root, path, err, errlen) ||
        results_read_minor(root, rf, path, err, errlen) ||
        results_read_root(root, rf, path, err, errlen)) {
        results_file_free(rf); /* a refused file leaves nothing to free */
        return -1;
    }
    return 0;
}

json_t *results_json_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        /* jansson quotes the bad input (a newline after a backslash, say):
         * the error stays one line */
        for (char *c = je.text; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        snprintf(err, errlen, "%s: line %d column %d: not valid JSON (%s)", path, je.line,
                 je.column, je.text);
    }
    return root;
}

void results_file_free(struct results_file *rf)
{
    for (size_t i = 0; i < rf->nlabels; i++) {
        free(rf->labels[i].name);
        free(rf->labels[i].samples);
        free(rf->labels[i].sample_interval);
    }
    free(rf->labels);
    free(rf->intervals);
    for (size_t i = 0; i < rf->ndb_errors; i++) {
        free(rf->db_errors[i].component);
        free(rf->db_errors[i].query);
        free(rf->db_errors[i].message);
    }
    free(rf->db_errors);
    for (size_t i = 0; i < rf->nresources; i++) {
        free(rf->resources[i].component);
        free(rf->resources[i].label);
    }
    free(rf->resources);
    free(rf->instance);
    free(rf->recording_id);
    free(rf->plan);
    free(rf->error);
    results_placement_free(&rf->placement);
    results_counters_free(&rf->counters);
    memset(rf, 0, sizeof *rf);
}

void results_placement_free(struct results_placement_read *pl)
{
    free(pl->emulated_type);
    free(pl->client_host);
    free(pl->client_cpu_cgroup);
    free(pl->db_address);
    free(pl->db_transport);
    free(pl->db_where);
    free(pl->db_cpu_cgroup);
    memset(pl, 0, sizeof *pl);
    pl->client_in_type = pl->db_in_type = -1;
}
