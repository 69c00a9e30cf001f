/* regress_reader.c - reads one regress.json of `preplay regress`
 * (formats/REGRESS.md) into struct regress_file, for files from other
 * machines: a wrong type, a count or length past its REGRESS_MAX_* limit,
 * a number out of range or a flagged counter that contradicts itself is
 * an error naming the file and the key path; unknown keys are ignored.
 * Nothing is allocated from a count the file gives before that count is
 * checked against its limit, and nothing is computed from the numbers
 * beyond checking them. */
#include "regress_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results_reader.h"

#define RF_OOM(path) (snprintf(err, errlen, "%s: out of memory", path), -1)

/* An integer at key within [lo, hi]; -1 when absent or out of range. */
static int regress_file_int(const json_t *o, const char *key, long long lo, long long hi,
                            long long *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = (long long)json_integer_value(v);
    return 0;
}

/* A number at key in [lo, hi] (lo_open: lo excluded); null gives NAN when
 * nullable. -1 otherwise. */
static int regress_file_num(const json_t *o, const char *key, double lo, int lo_open, double hi,
                            int nullable, double *out)
{
    json_t *v = json_object_get(o, key);
    if (nullable && json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return -1;
    double x = json_number_value(v);
    if (!isfinite(x) || x > hi || x < lo || (lo_open && x == lo))
        return -1;
    *out = x;
    return 0;
}

/* A string of at most max bytes (no NUL inside) at key, copied; null
 * gives NULL when nullable. -1 when not, *oom set when out of memory. */
static int regress_file_str(const json_t *o, const char *key, size_t max, int nullable, char **out,
                            int *oom)
{
    json_t *v = json_object_get(o, key);
    if (nullable && (!v || json_is_null(v))) {
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return -1;
    if (!(*out = strdup(json_string_value(v))))
        return *oom = 1, -1;
    return 0;
}

/* One {path, instance, windows[, weight]} at where. */
static int regress_file_input(const json_t *o, struct regress_file_input *in, int has_weight,
                              int null_weight, const char *where, const char *path, char *err,
                              size_t errlen)
{
    int oom = 0;
    long long w;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "%s: %s: expected an object {path, instance, windows}", path, where);
        return -1;
    }
    if (regress_file_str(o, "path", REGRESS_MAX_PATH_BYTES, 0, &in->path, &oom) ||
        regress_file_str(o, "instance", REGRESS_MAX_PATH_BYTES, 1, &in->instance, &oom)) {
        if (oom)
            return RF_OOM(path);
        snprintf(err, errlen, "%s: %s.%s: expected a string of at most %u bytes", path, where,
                 in->path ? "instance" : "path", REGRESS_MAX_PATH_BYTES);
        return -1;
    }
    if (regress_file_int(o, "windows", 1, REGRESS_MAX_WINDOWS, &w)) {
        snprintf(err, errlen, "%s: %s.windows: expected an integer in [1, %u]", path, where,
                 REGRESS_MAX_WINDOWS);
        return -1;
    }
    in->windows = (size_t)w;
    in->weight = NAN;
    if (has_weight && regress_file_num(o, "weight", 0, 0, 1, null_weight, &in->weight)) {
        snprintf(err, errlen, "%s: %s.weight: expected %s", path, where,
                 null_weight ? "null (method single)" : "a weight in [0, 1]");
        return -1;
    }
    if (has_weight && null_weight && !isnan(in->weight)) {
        snprintf(err, errlen, "%s: %s.weight: expected null (method single)", path, where);
        return -1;
    }
    return 0;
}

/* "baselines" and "target". */
static int regress_file_inputs(const json_t *root, struct regress_file *rf, const char *path,
                               char *err, size_t errlen)
{
    json_t *b = json_object_get(root, "baselines");
    if (!json_is_array(b) || !json_array_size(b) || json_array_size(b) > REGRESS_MAX_BASELINES) {
        snprintf(err, errlen, "%s: baselines: expected an array of 1 to %u baselines", path,
                 REGRESS_MAX_BASELINES);
        return -1;
    }
    size_t n = json_array_size(b);
    if (!(rf->baselines = calloc(n, sizeof *rf->baselines)))
        return RF_OOM(path);
    for (size_t i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof where, "baselines[%zu]", i);
        rf->nbaselines++;
        if (regress_file_input(json_array_get(b, i), &rf->baselines[i], 1,
                               rf->method == REGRESS_FILE_SINGLE, where, path, err, errlen))
            return -1;
    }
    return regress_file_input(json_object_get(root, "target"), &rf->target, 0, 0, "target", path,
                              err, errlen);
}

/* One level object of counter name. */
static int regress_file_level_one(const json_t *o, struct regress_file *rf,
                                  struct regress_file_level *l, const char *path, char *err,
                                  size_t errlen)
{
    char where[REGRESS_MAX_NAME_BYTES + 16];
    snprintf(where, sizeof where, "levels.\"%s\"", l->counter);
    if (!json_is_object(o) || regress_file_num(o, "low", -HUGE_VAL, 0, HUGE_VAL, 1, &l->low) ||
        regress_file_num(o, "high", -HUGE_VAL, 0, HUGE_VAL, 1, &l->high) ||
        isnan(l->low) != isnan(l->high) || l->low > l->high) {
        snprintf(err, errlen, "%s: %s: expected {low, high}: numbers, low <= high, or both null",
                 path, where);
        return -1;
    }
    long long k = 0;
    if (rf->equal_width && regress_file_int(o, "bins", 1, REGRESS_MAX_BINS, &k)) {
        snprintf(err, errlen, "%s: %s.bins: expected an integer in [1, %d]", path, where,
                 REGRESS_MAX_BINS);
        return -1;
    }
    l->bins = (int)k;
    l->min = l->median = l->max = NAN;
    if (rf->version_minor < 1)
        return 0;
    if (regress_file_num(o, "min", 0, 0, HUGE_VAL, 1, &l->min) ||
        regress_file_num(o, "median", 0, 0, HUGE_VAL, 1, &l->median) ||
        regress_file_num(o, "max", 0, 0, HUGE_VAL, 1, &l->max) || isnan(l->min) != isnan(l->max) ||
        isnan(l->min) != isnan(l->median) || l->min > l->median || l->median > l->max) {
        snprintf(err, errlen,
                 "%s: %s: expected min <= median <= max, numbers >= 0, or all three null", path,
                 where);
        return -1;
    }
    return 0;
}

static int regress_file_levels(const json_t *root, struct regress_file *rf, const char *path,
                               char *err, size_t errlen)
{
    json_t *lv = json_object_get(root, "levels");
    if (!json_is_object(lv) || json_object_size(lv) > REGRESS_MAX_COUNTERS) {
        snprintf(err, errlen, "%s: levels: expected an object of at most %u counters", path,
                 REGRESS_MAX_COUNTERS);
        return -1;
    }
    if (!(rf->levels = calloc(json_object_size(lv) + 1, sizeof *rf->levels)))
        return RF_OOM(path);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)lv, name, v)
    {
        if (strlen(name) > REGRESS_MAX_NAME_BYTES) {
            snprintf(err, errlen, "%s: levels: a counter name of %zu bytes exceeds the limit %u",
                     path, strlen(name), REGRESS_MAX_NAME_BYTES);
            return -1;
        }
        struct regress_file_level *l = &rf->levels[rf->nlevels];
        if (!(l->counter = strdup(name)))
            return RF_OOM(path);
        rf->nlevels++;
        if (regress_file_level_one(v, rf, l, path, err, errlen))
            return -1;
    }
    return 0;
}

/* violating_windows and target_values of flag f at where. */
static int regress_file_flag_windows(const json_t *o, const struct regress_file *rf,
                                     struct regress_file_flag *f, const char *where,
                                     const char *path, char *err, size_t errlen)
{
    size_t nw = rf->target.windows, nv = f->windows_up + f->windows_down;
    json_t *vw = json_object_get(o, "violating_windows");
    if (!json_is_array(vw) || json_array_size(vw) != nv) {
        snprintf(err, errlen, "%s: %s.violating_windows: expected an array of %zu indexes", path,
                 where, nv);
        return -1;
    }
    if (!(f->violating = malloc((nv + 1) * sizeof *f->violating)))
        return RF_OOM(path);
    for (size_t i = 0; i < nv; i++) {
        json_t *x = json_array_get(vw, i);
        json_int_t lo = i ? (json_int_t)f->violating[i - 1] + 1 : 0;
        if (!json_is_integer(x) || json_integer_value(x) < lo ||
            json_integer_value(x) >= (json_int_t)nw) {
            snprintf(err, errlen,
                     "%s: %s.violating_windows[%zu]: expected an index in [%lld, %zu), increasing",
                     path, where, i, (long long)lo, nw);
            return -1;
        }
        f->violating[i] = (size_t)json_integer_value(x);
        f->nviolating++;
    }
    json_t *tv = json_object_get(o, "target_values");
    if (rf->version_minor < 1 && !tv)
        return 0;
    if (!json_is_array(tv) || json_array_size(tv) != nw) {
        snprintf(err, errlen,
                 "%s: %s.target_values: expected an array of %zu values (target.windows)", path,
                 where, nw);
        return -1;
    }
    if (!(f->target_values = malloc(nw * sizeof *f->target_values)))
        return RF_OOM(path);
    for (size_t i = 0; i < nw; i++) {
        json_t *x = json_array_get(tv, i);
        double v = json_is_null(x) ? NAN : json_number_value(x);
        if (!json_is_null(x) && !(json_is_number(x) && isfinite(v) && v >= 0)) {
            snprintf(err, errlen, "%s: %s.target_values[%zu]: expected a number >= 0 or null", path,
                     where, i);
            return -1;
        }
        f->target_values[i] = v;
    }
    f->nvalues = nw;
    return 0;
}

/* The counts and numbers of flag f, checked against each other. */
static int regress_file_flag_counts(const json_t *o, const struct regress_file *rf,
                                    struct regress_file_flag *f, const char *where,
                                    const char *path, char *err, size_t errlen)
{
    long long x, up, down;
    if (regress_file_int(o, "votes", 1, (long long)rf->nbaselines, &x)) {
        snprintf(err, errlen, "%s: %s.votes: expected an integer in [1, %zu] (the models)", path,
                 where, rf->nbaselines);
        return -1;
    }
    f->votes = (long)x;
    if (regress_file_num(o, "weight", 0, 0, (double)rf->nbaselines, 0, &f->weight)) {
        snprintf(err, errlen, "%s: %s.weight: expected a number in [0, %zu] (the models)", path,
                 where, rf->nbaselines);
        return -1;
    }
    if (regress_file_num(o, "shift_p", 0, 0, 1, 1, &f->shift_p)) {
        snprintf(err, errlen, "%s: %s.shift_p: expected a probability in [0, 1] or null", path,
                 where);
        return -1;
    }
    if (regress_file_int(o, "windows_up", 0, (long long)rf->target.windows, &up) ||
        regress_file_int(o, "windows_down", 0, (long long)rf->target.windows - up, &down)) {
        snprintf(err, errlen,
                 "%s: %s: windows_up and windows_down: expected integers summing to at most %zu "
                 "(target.windows)",
                 path, where, rf->target.windows);
        return -1;
    }
    f->windows_up = (size_t)up;
    f->windows_down = (size_t)down;
    const char *dir = json_string_value(json_object_get(o, "direction"));
    f->direction = up > down ? "up" : down > up ? "down" : "mixed";
    if (!dir || strcmp(dir, f->direction)) {
        snprintf(err, errlen, "%s: %s.direction: expected \"%s\" (windows up %lld, down %lld)",
                 path, where, f->direction, up, down);
        return -1;
    }
    double share = (double)(up + down) / (double)rf->target.windows;
    if (regress_file_num(o, "severity", 0, 0, 1, 0, &f->severity) ||
        fabs(f->severity - share) > REGRESS_ROUNDING) {
        snprintf(err, errlen,
                 "%s: %s.severity: expected %lld violating of %zu target windows (%.9g)", path,
                 where, up + down, rf->target.windows, share);
        return -1;
    }
    return 0;
}

static int regress_file_flags(const json_t *root, struct regress_file *rf, const char *path,
                              char *err, size_t errlen)
{
    json_t *fl = json_object_get(root, "flagged");
    if (!json_is_array(fl) || json_array_size(fl) > REGRESS_MAX_COUNTERS) {
        snprintf(err, errlen, "%s: flagged: expected an array of at most %u counters", path,
                 REGRESS_MAX_COUNTERS);
        return -1;
    }
    if (!(rf->flagged = calloc(json_array_size(fl) + 1, sizeof *rf->flagged)))
        return RF_OOM(path);
    for (size_t i = 0; i < json_array_size(fl); i++) {
        json_t *o = json_array_get(fl, i);
        struct regress_file_flag *f = &rf->flagged[i];
        char where[48];
        int oom = 0;
        snprintf(where, sizeof where, "flagged[%zu]", i);
        rf->nflagged++;
        if (!json_is_object(o) ||
            regress_file_str(o, "counter", REGRESS_MAX_NAME_BYTES, 0, &f->counter, &oom)) {
            if (oom)
                return RF_OOM(path);
            snprintf(err, errlen, "%s: %s.counter: expected a string of at most %u bytes", path,
                     where, REGRESS_MAX_NAME_BYTES);
            return -1;
        }
        if (!(f->level = regress_file_level(rf, f->counter))) {
            snprintf(err, errlen, "%s: %s.counter: \"%s\" has no levels", path, where, f->counter);
            return -1;
        }
        if (regress_file_flag_counts(o, rf, f, where, path, err, errlen) ||
            regress_file_flag_windows(o, rf, f, where, path, err, errlen))
            return -1;
        if (i && f->severity > rf->flagged[i - 1].severity) {
            snprintf(err, errlen,
                     "%s: %s.severity: %.9g above flagged[%zu]'s %.9g (expected by "
                     "severity, highest first)",
                     path, where, f->severity, i - 1, rf->flagged[i - 1].severity);
            return -1;
        }
    }
    return 0;
}

/* One {counter, level} item of a rule, its counter one with levels. */
static int regress_file_item(const json_t *o, const json_t *levels, struct regress_file_item *it,
                             const char *where, const char *path, char *err, size_t errlen)
{
    int oom = 0;
    if (!json_is_object(o) ||
        regress_file_str(o, "counter", REGRESS_MAX_NAME_BYTES, 0, &it->counter, &oom) ||
        regress_file_str(o, "level", REGRESS_MAX_LEVEL_BYTES, 0, &it->level, &oom)) {
        if (oom)
            return RF_OOM(path);
        snprintf(err, errlen,
                 "%s: %s: expected {counter, level}, strings of at most %u and %u bytes", path,
                 where, REGRESS_MAX_NAME_BYTES, REGRESS_MAX_LEVEL_BYTES);
        return -1;
    }
    if (!json_object_get(levels, it->counter)) {
        snprintf(err, errlen, "%s: %s.counter: \"%s\" has no levels", path, where, it->counter);
        return -1;
    }
    return 0;
}

/* model, premise, consequent of rule i. */
static int regress_file_rule_items(const json_t *o, const json_t *levels,
                                   const struct regress_file *rf, struct regress_file_rule *r,
                                   const char *where, const char *path, char *err, size_t errlen)
{
    long long m;
    if (!json_is_object(o) || regress_file_int(o, "model", 0, (long long)rf->nbaselines - 1, &m)) {
        snprintf(err, errlen, "%s: %s.model: expected an index below %zu (the baselines)", path,
                 where, rf->nbaselines);
        return -1;
    }
    r->model = (long)m;
    json_t *pr = json_object_get(o, "premise");
    if (!json_is_array(pr) || !json_array_size(pr) ||
        json_array_size(pr) > (size_t)(REGRESS_MAX_LEN - 1)) {
        snprintf(err, errlen, "%s: %s.premise: expected an array of 1 to %d items", path, where,
                 REGRESS_MAX_LEN - 1);
        return -1;
    }
    if (!(r->premise = calloc(json_array_size(pr), sizeof *r->premise)))
        return RF_OOM(path);
    char iw[80];
    for (size_t k = 0; k < json_array_size(pr); k++) {
        snprintf(iw, sizeof iw, "%s.premise[%zu]", where, k);
        r->npremise++;
        if (regress_file_item(json_array_get(pr, k), levels, &r->premise[k], iw, path, err, errlen))
            return -1;
    }
    snprintf(iw, sizeof iw, "%s.consequent", where);
    return regress_file_item(json_object_get(o, "consequent"), levels, &r->consequent, iw, path,
                             err, errlen);
}

/* The numbers of rule i: support, confidences, change, p, flagged. */
static int regress_file_rule_numbers(const json_t *o, const struct regress_file *rf,
                                     struct regress_file_rule *r, const char *where,
                                     const char *path, char *err, size_t errlen)
{
    static const char *const keys[5] = {"support", "baseline_confidence", "target_confidence",
                                        "change", "p"};
    double *outs[5] = {&r->support, &r->baseline_confidence, &r->target_confidence, &r->change,
                       &r->p};
    for (int k = 0; k < 5; k++)
        if (regress_file_num(o, keys[k], 0, k < 2, 1, k >= 2, outs[k])) {
            snprintf(err, errlen, "%s: %s.%s: expected a number in %s1]%s", path, where, keys[k],
                     k < 2 ? "(0, " : "[0, ", k >= 2 ? " or null" : "");
            return -1;
        }
    if (isnan(r->target_confidence) != isnan(r->change) ||
        isnan(r->target_confidence) != isnan(r->p)) {
        snprintf(err, errlen,
                 "%s: %s: target_confidence, change and p: expected all three null or none", path,
                 where);
        return -1;
    }
    json_t *fl = json_object_get(o, "flagged");
    r->flagged = json_is_true(fl);
    if (!json_is_boolean(fl) ||
        (r->flagged && !(r->change >= rf->min_change && r->p <= rf->alpha))) {
        snprintf(err, errlen, "%s: %s.flagged: expected %s", path, where,
                 json_is_boolean(fl) ? "false (change below min_change or p above alpha)"
                                     : "true or false");
        return -1;
    }
    return 0;
}

static int regress_file_rules(const json_t *root, struct regress_file *rf, const char *path,
                              char *err, size_t errlen)
{
    json_t *rules = json_object_get(root, "rules"), *levels = json_object_get(root, "levels");
    if (!json_is_array(rules) || json_array_size(rules) > REGRESS_MAX_RULES) {
        snprintf(err, errlen, "%s: rules: expected an array of at most %u rules", path,
                 REGRESS_MAX_RULES);
        return -1;
    }
    size_t n = json_array_size(rules);
    long long total;
    if (regress_file_int(root, "rules_total", (long long)n, (long long)REGRESS_MAX_RULES_TOTAL,
                         &total)) {
        snprintf(err, errlen, "%s: rules_total: expected an integer in [%zu (the rules), %llu]",
                 path, n, REGRESS_MAX_RULES_TOTAL);
        return -1;
    }
    rf->rules_total = (uint64_t)total;
    if (!(rf->rules = calloc(n + 1, sizeof *rf->rules)))
        return RF_OOM(path);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(rules, i);
        char where[40];
        snprintf(where, sizeof where, "rules[%zu]", i);
        rf->nrules++;
        if (regress_file_rule_items(o, levels, rf, &rf->rules[i], where, path, err, errlen) ||
            regress_file_rule_numbers(o, rf, &rf->rules[i], where, path, err, errlen))
            return -1;
    }
    return 0;
}

/* A string key that must be one of n words; *out its index. */
static int regress_file_word(const json_t *root, const char *key, const char *const *words, int n,
                             int *out, const char *path, char *err, size_t errlen)
{
    const char *s = json_string_value(json_object_get(root, key));
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, words[i])) {
            *out = i;
            return 0;
        }
    snprintf(err, errlen, "%s: %s: expected \"%s\"%s \"%s\"%s%s%s", path, key, words[0],
             n > 2 ? "," : " or", words[1], n > 2 ? " or \"" : "", n > 2 ? words[2] : "",
             n > 2 ? "\"" : "");
    return -1;
}

/* format, version, method, discretization and the thresholds. */
static int regress_file_head(const json_t *root, struct regress_file *rf, const char *path,
                             char *err, size_t errlen)
{
    static const char *const methods[3] = {"single", "bagging", "stacking"};
    static const char *const schemes[2] = {"3level", "ew"};
    long long x = 0;
    if (!regress_file_is_regress(root)) {
        snprintf(err, errlen, "%s: not a preplay regress file (no \"format\": \"%s\")", path,
                 REGRESS_FORMAT);
        return -1;
    }
    if (regress_file_int(root, "version", REGRESS_VERSION, REGRESS_VERSION, &x)) {
        snprintf(err, errlen, "%s: version: expected %d (the regress version this preplay reads)",
                 path, REGRESS_VERSION);
        return -1;
    }
    x = 0;
    if (json_object_get(root, "version_minor") &&
        regress_file_int(root, "version_minor", 0, 65535, &x)) {
        snprintf(err, errlen, "%s: version_minor: expected an integer 0-65535", path);
        return -1;
    }
    rf->version_minor = (int)x;
    int m, d;
    if (regress_file_word(root, "method", methods, 3, &m, path, err, errlen) ||
        regress_file_word(root, "discretization", schemes, 2, &d, path, err, errlen))
        return -1;
    rf->method = (enum regress_file_method)m;
    rf->equal_width = d;
    static const char *const keys[5] = {"min_support", "min_confidence", "min_change", "alpha",
                                        "window_s"};
    double *outs[5] = {&rf->min_support, &rf->min_confidence, &rf->min_change, &rf->alpha,
                       &rf->window_s};
    for (int k = 0; k < 5; k++)
        if (regress_file_num(root, keys[k], 0, 1, k < 4 ? 1 : 86400, 0, outs[k])) {
            snprintf(err, errlen, "%s: %s: expected a number in (0, %s]", path, keys[k],
                     k < 4 ? "1" : "86400");
            return -1;
        }
    if (regress_file_int(root, "max_len", 2, REGRESS_MAX_LEN, &x)) {
        snprintf(err, errlen, "%s: max_len: expected an integer in [2, %d]", path, REGRESS_MAX_LEN);
        return -1;
    }
    rf->max_len = (long)x;
    return 0;
}

int regress_file_read_json(const json_t *root, const char *path, struct regress_file *rf, char *err,
                           size_t errlen)
{
    memset(rf, 0, sizeof *rf);
    if (regress_file_head(root, rf, path, err, errlen) ||
        regress_file_inputs(root, rf, path, err, errlen) ||
        regress_file_levels(root, rf, path, err, errlen) ||
        regress_file_flags(root, rf, path, err, errlen) ||
        regress_file_rules(root, rf, path, err, errlen)) {
        regress_file_free(rf); /* a refused file leaves nothing to free */
        return -1;
    }
    return 0;
}

int regress_file_read(const char *path, struct regress_file *rf, char *err, size_t errlen)
{
    memset(rf, 0, sizeof *rf);
    json_t *root = results_json_load(path, err, errlen);
    if (!root)
        return -1;
    int rc = regress_file_read_json(root, path, rf, err, errlen);
    json_decref(root);
    return rc;
}

int regress_file_is_regress(const json_t *root)
{
    const char *f = json_string_value(json_object_get(root, "format"));
    return f && !strcmp(f, REGRESS_FORMAT);
}

const struct regress_file_level *regress_file_level(const struct regress_file *rf,
                                                    const char *counter)
{
    for (size_t i = 0; i < rf->nlevels; i++)
        if (!strcmp(rf->levels[i].counter, counter))
            return &rf->levels[i];
    return NULL;
}

const char *regress_file_method_name(enum regress_file_method m)
{
    return m == REGRESS_FILE_SINGLE ? "single" : m == REGRESS_FILE_BAGGING ? "bagging" : "stacking";
}

static void regress_file_input_free(struct regress_file_input *in)
{
    free(in->path);
    free(in->instance);
}

static void regress_file_item_free(struct regress_file_item *it)
{
    free(it->counter);
    free(it->level);
}

void regress_file_free(struct regress_file *rf)
{
    for (size_t i = 0; i < rf->nbaselines; i++)
        regress_file_input_free(&rf->baselines[i]);
    free(rf->baselines);
    regress_file_input_free(&rf->target);
    for (size_t i = 0; i < rf->nlevels; i++)
        free(rf->levels[i].counter);
    free(rf->levels);
    for (size_t i = 0; i < rf->nflagged; i++) {
        free(rf->flagged[i].counter);
        free(rf->flagged[i].violating);
        free(rf->flagged[i].target_values);
    }
    free(rf->flagged);
    for (size_t i = 0; i < rf->nrules; i++) {
        for (size_t k = 0; k < rf->rules[i].npremise; k++)
            regress_file_item_free(&rf->rules[i].premise[k]);
        free(rf->rules[i].premise);
        regress_file_item_free(&rf->rules[i].consequent);
    }
    free(rf->rules);
    memset(rf, 0, sizeof *rf);
}
