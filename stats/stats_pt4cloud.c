/* stats_pt4cloud.c - the PT4Cloud stop rule as a state machine fed one interval of
 * samples at a time (PT4Cloud §2 Fig. 2, §6.1 Fig. 7, §6.2).
 *
 * Standard method: d1 from S1, d2 from S = S1 u S2; stop when p >= p0, else
 * S1 <- S and run another interval. Short intervals: two intervals of the
 * current length; stable -> (optional) two validation intervals compared as
 * d3 (S3 u S4) against d2 (S1 u S2), else the interval is lengthened and the
 * round starts over without the old data (the paper assumes a failure to
 * stabilize means the interval was too short); at the cap the standard
 * method takes over. Several metrics at once: the overall samples and every
 * label with at least min_samples in d1 must be stable.
 *
 * It keeps copies of the samples it was fed (the reported distribution is
 * made of them) and never blocks, prints or reads clocks: the caller owns
 * time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

struct stats_series {
    char label[STATS_LABEL_LEN];
    double *values;
    size_t n, cap;
    size_t d1_end; /* samples [0, d1_end) make d1 */
    size_t d2_end; /* in validation: samples [0, d2_end) make d2 */
};

struct stats_machine {
    struct stats_config cfg;
    struct stats_series overall;
    struct stats_series *labels;
    size_t nlabels, labels_cap;
    double interval;
    int standard;   /* 1 once the standard method runs */
    int in_round;   /* intervals fed in this round */
    int validating; /* the round is in its validation part */
    int fed;        /* intervals fed in total */
    int stopped;
    int final_is_d2_end; /* stopped after validation: final = [0, d2_end) */
};

const char *stats_action_name(enum stats_action a)
{
    switch (a) {
    case STATS_CONTINUE:
        return "continue";
    case STATS_LENGTHEN:
        return "lengthen";
    case STATS_VALIDATE:
        return "validate";
    case STATS_STOP:
        return "stop";
    }
    return "?";
}

void stats_config_default(struct stats_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->p0 = 0.9;
    cfg->min_samples = 30;
    stats_kde_options_default(&cfg->kde);
    cfg->short_intervals = 0;
    cfg->interval = 7 * 86400.0;
    cfg->max_interval = 7 * 86400.0;
    cfg->lengthen_factor = 2.0;
    cfg->validate = 1;
    cfg->hourly_portion = 1.0;
}

struct stats_machine *stats_machine_new(const struct stats_config *cfg, char *err)
{
    if (!(cfg->p0 > 0 && cfg->p0 <= 1)) {
        snprintf(err, STATS_ERR_LEN, "objective probability p0 must be in (0, 1], got %g", cfg->p0);
        return NULL;
    }
    if (cfg->kde.strips < 2) {
        snprintf(err, STATS_ERR_LEN, "strips must be at least 2, got %d", cfg->kde.strips);
        return NULL;
    }
    if (cfg->short_intervals && (!(cfg->interval > 0) || !(cfg->max_interval >= cfg->interval) ||
                                 !(cfg->lengthen_factor > 1) || !isfinite(cfg->max_interval))) {
        snprintf(err, STATS_ERR_LEN,
                 "short intervals need 0 < interval <= max interval and a lengthen factor > 1");
        return NULL;
    }
    if (!(cfg->hourly_portion > 0 && cfg->hourly_portion <= 1)) {
        snprintf(err, STATS_ERR_LEN, "hourly portion must be in (0, 1], got %g",
                 cfg->hourly_portion);
        return NULL;
    }
    struct stats_machine *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, STATS_ERR_LEN, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->interval = cfg->interval;
    m->standard = !cfg->short_intervals || cfg->interval >= cfg->max_interval;
    strcpy(m->overall.label, "(overall)");
    return m;
}

void stats_machine_free(struct stats_machine *m)
{
    if (!m)
        return;
    free(m->overall.values);
    for (size_t i = 0; i < m->nlabels; i++)
        free(m->labels[i].values);
    free(m->labels);
    free(m);
}

double stats_machine_interval_length(const struct stats_machine *m)
{
    return m->interval;
}
int stats_machine_stopped(const struct stats_machine *m)
{
    return m->stopped;
}

int stats_machine_should_run(const struct stats_machine *m, double seconds)
{
    if (m->cfg.hourly_portion >= 1)
        return 1;
    double into_hour = fmod(seconds, 3600.0);
    if (into_hour < 0)
        into_hour += 3600.0;
    return into_hour < m->cfg.hourly_portion * 3600.0;
}

static int stats_check_values(const double *v, size_t n, const char *what, char *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0) {
            snprintf(err, STATS_ERR_LEN, "%s sample %zu is %g: durations must be finite and >= 0",
                     what, i, v[i]);
            return -1;
        }
    return 0;
}

static int stats_series_append(struct stats_series *s, const double *v, size_t n)
{
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : 1024;
        while (cap < s->n + n)
            cap *= 2;
        double *grown = realloc(s->values, sizeof(double) * cap);
        if (!grown)
            return -1;
        s->values = grown;
        s->cap = cap;
    }
    memcpy(s->values + s->n, v, sizeof(double) * n);
    s->n += n;
    return 0;
}

static struct stats_series *stats_find_label(struct stats_machine *m, const char *label, int create)
{
    for (size_t i = 0; i < m->nlabels; i++)
        if (!strncmp(m->labels[i].label, label, STATS_LABEL_LEN - 1))
            return &m->labels[i];
    if (!create)
        return NULL;
    if (m->nlabels == m->labels_cap) {
        size_t cap = m->labels_cap ? m->labels_cap * 2 : 8;
        struct stats_series *grown = realloc(m->labels, sizeof *grown * cap);
        if (!grown)
            return NULL;
        m->labels = grown;
        m->labels_cap = cap;
    }
    struct stats_series *s = &m->labels[m->nlabels++];
    memset(s, 0, sizeof *s);
    snprintf(s->label, sizeof s->label, "%s", label);
    return s;
}

static void stats_series_reset(struct stats_series *s)
{
    s->n = s->d1_end = s->d2_end = 0;
}

static void stats_for_each_series(struct stats_machine *m, void (*fn)(struct stats_series *))
{
    fn(&m->overall);
    for (size_t i = 0; i < m->nlabels; i++)
        fn(&m->labels[i]);
}

static void stats_mark_d1(struct stats_series *s)
{
    s->d1_end = s->n;
}
static void stats_mark_d2(struct stats_series *s)
{
    s->d2_end = s->n;
}

/* p of one metric: validation compares [d2_end, n) with [0, d2_end), else
 * [0, d1_end) with [0, n). Returns 0 judged, 1 not enough samples, -1 error. */
static int stats_judge(const struct stats_machine *m, const struct stats_series *s, int validation,
                       size_t min_samples, double *p, char *err)
{
    const double *a, *b;
    size_t na, nb;
    if (validation) {
        a = s->values + s->d2_end;
        na = s->n - s->d2_end;
        b = s->values;
        nb = s->d2_end;
    } else {
        a = s->values;
        na = s->d1_end;
        b = s->values;
        nb = s->n;
    }
    if (min_samples < 2)
        min_samples = 2;
    if (na < min_samples || nb < min_samples)
        return 1;
    struct stats_similarity sim;
    if (stats_similarity_compute(a, na, b, nb, &m->cfg.kde, &sim, err))
        return -1;
    *p = sim.p;
    stats_similarity_free(&sim);
    return 0;
}

/* Judge every metric; fills p, min_p, stable, labels_judged, held_open_by. */
static int stats_compare(struct stats_machine *m, int validation, struct stats_step *step,
                         char *err)
{
    step->compared = 1;
    step->validation = validation;
    double p;
    int r = stats_judge(m, &m->overall, validation, 2, &p, err);
    if (r < 0)
        return -1;
    step->p = r == 0 ? p : 0.0;
    step->min_p = step->p;
    const char *holder = step->p >= m->cfg.p0 ? NULL : m->overall.label;
    for (size_t i = 0; i < m->nlabels; i++) {
        r = stats_judge(m, &m->labels[i], validation, m->cfg.min_samples, &p, err);
        if (r < 0) {
            char inner[STATS_ERR_LEN];
            snprintf(inner, sizeof inner, "%s", err);
            snprintf(err, STATS_ERR_LEN, "label %.60s: %.180s", m->labels[i].label, inner);
            return -1;
        }
        if (r == 1)
            continue;
        step->labels_judged++;
        if (p < step->min_p) {
            step->min_p = p;
            if (p < m->cfg.p0)
                holder = m->labels[i].label;
        }
    }
    step->stable = step->min_p >= m->cfg.p0;
    snprintf(step->held_open_by, sizeof step->held_open_by, "%s", holder ? holder : "");
    return 0;
}

static void stats_lengthen(struct stats_machine *m)
{
    m->interval *= m->cfg.lengthen_factor;
    if (m->interval >= m->cfg.max_interval) {
        m->interval = m->cfg.max_interval;
        m->standard = 1;
    }
    stats_for_each_series(m, stats_series_reset);
    m->in_round = 0;
    m->validating = 0;
}

int stats_machine_feed(struct stats_machine *m, const double *all, size_t n_all,
                       const struct stats_label_samples *labels, size_t nlabels,
                       struct stats_step *step, char *err)
{
    memset(step, 0, sizeof *step);
    if (m->stopped) {
        snprintf(err, STATS_ERR_LEN, "the test already stopped after interval %d", m->fed);
        return -1;
    }
    if (n_all == 0) {
        snprintf(err, STATS_ERR_LEN, "interval %d has no samples", m->fed + 1);
        return -1;
    }
    if (stats_check_values(all, n_all, "overall", err))
        return -1;
    for (size_t i = 0; i < nlabels; i++) {
        if (!labels[i].label || !labels[i].label[0]) {
            snprintf(err, STATS_ERR_LEN, "label %zu has no name", i);
            return -1;
        }
        if (stats_check_values(labels[i].values, labels[i].n, labels[i].label, err))
            return -1;
    }
    if (stats_series_append(&m->overall, all, n_all))
        goto oom;
    for (size_t i = 0; i < nlabels; i++) {
        struct stats_series *s = stats_find_label(m, labels[i].label, 1);
        if (!s || stats_series_append(s, labels[i].values, labels[i].n))
            goto oom;
    }
    m->fed++;
    m->in_round++;
    step->interval = m->fed;
    step->interval_length = m->interval;
    step->p = step->min_p = NAN;

    if (m->standard) {
        if (m->in_round >= 2) {
            if (stats_compare(m, 0, step, err))
                return -1;
        }
        if (step->compared && step->stable) {
            step->action = STATS_STOP;
            m->stopped = 1;
        } else {
            step->action = STATS_CONTINUE;
            stats_for_each_series(m, stats_mark_d1);
        }
    } else if (!m->validating) {
        if (m->in_round == 1) {
            stats_for_each_series(m, stats_mark_d1);
            step->action = STATS_CONTINUE;
        } else {
            if (stats_compare(m, 0, step, err))
                return -1;
            if (!step->stable) {
                step->action = STATS_LENGTHEN;
                stats_lengthen(m);
            } else if (m->cfg.validate) {
                step->action = STATS_VALIDATE;
                m->validating = 1;
                stats_for_each_series(m, stats_mark_d2);
            } else {
                step->action = STATS_STOP;
                m->stopped = 1;
            }
        }
    } else {
        if (m->in_round == 3) {
            step->action = STATS_CONTINUE;
        } else {
            if (stats_compare(m, 1, step, err))
                return -1;
            if (step->stable) {
                step->action = STATS_STOP;
                m->stopped = 1;
                m->final_is_d2_end = 1;
            } else {
                step->action = STATS_LENGTHEN;
                stats_lengthen(m);
            }
        }
    }
    step->next_interval_length = m->interval;
    return 0;
oom:
    snprintf(err, STATS_ERR_LEN, "out of memory storing interval %d", m->fed + 1);
    return -1;
}

int stats_machine_final_samples(const struct stats_machine *m, const char *label,
                                const double **values, size_t *n)
{
    const struct stats_series *s = &m->overall;
    if (label) {
        s = stats_find_label((struct stats_machine *)m, label, 0);
        if (!s)
            return -1;
    }
    *values = s->values;
    *n = m->final_is_d2_end ? s->d2_end : s->n;
    return 0;
}

int stats_machine_reference_samples(const struct stats_machine *m, const char *label,
                                    const double **values, size_t *n)
{
    const struct stats_series *s = &m->overall;
    if (label) {
        s = stats_find_label((struct stats_machine *)m, label, 0);
        if (!s)
            return -1;
    }
    if (m->final_is_d2_end) {
        *values = s->values + s->d2_end;
        *n = s->n - s->d2_end;
    } else {
        *values = s->values;
        *n = s->d1_end;
    }
    return 0;
}
